"""unmask-server end to end: every endpoint and error status, streaming, auth, rate limits, body
limits, timeouts, readiness while loading and draining, client disconnects, malformed HTTP and
JSON, TLS and log rotation, against the bundled model. usage: UNMASK_SERVER=BIN python3 -m unittest"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from server_process import MODEL, SCRATCH, SERVER, SOURCE_DIR, ServerProcess, self_signed_certificate, sse_events

HELDOUT = os.path.join(SOURCE_DIR, "bench", "data", "tool_calls_heldout.jsonl")
# A request that lasts: no EOS (logits_eos_inf), so every block is decoded (the prompt's 28 tokens
# leave 4 positions of their last block, then 32 blocks of 16).
LONG = {"prompt": "<|user|>Set a timer for 3 minutes.<|assistant|>", "max_tokens": 512, "steps": 512,
        "logits_eos_inf": True}


def eventually(condition, what, timeout=30):
    """Polls until condition() is true; fails the test after `timeout` seconds."""
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise AssertionError("timed out waiting for: " + what)
        time.sleep(0.02)


def access_line(server, request_id):
    """The access log line of a request, once written."""
    def find():
        return [l for l in server.log().splitlines() if " access id=%s " % request_id in l]
    eventually(lambda: find(), "the access line of " + request_id)
    return find()[0]


def lasting(server, seconds):
    """LONG with as many steps (a multiple of its 32 blocks, at most its 512) as take about
    `seconds` on this server: the tests that need a request to outlast a few actions run against
    Release and -O0 sanitizer builds."""
    started = time.time()
    probe = server.post("/v1/completions", {**LONG, "steps": 32})
    per_step = (time.time() - started) / probe.json()["unmask"]["steps"]
    steps = max(32, min(512, int(seconds / per_step) // 32 * 32))
    return {**LONG, "steps": steps}


def one_running_one_queued(server, body):
    """Sends two requests of `body` to a server that runs one at a time and returns once the first
    runs and the second waits: the threads (to join) and the dict their responses go to."""
    results, threads = {}, {}
    def client(name):
        results[name] = server.post("/v1/completions", body)
    for name, metric in (("running", "unmask_num_requests_running"), ("queued", "unmask_num_requests_waiting")):
        threads[name] = threading.Thread(target=client, args=(name,))
        threads[name].start()
        eventually(lambda: server.metric(metric) == 1, "a %s request" % name)
    return results, threads.values()


def heldout(count):
    with open(HELDOUT) as f:
        rows = [json.loads(line) for line in f]
    return rows[:count]


class Endpoints(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(server={"log_prompts": True})

    @classmethod
    def tearDownClass(cls):
        # SIGINT shuts down like SIGTERM.
        assert cls.server.stop(signal.SIGINT) == 0

    def test_health_and_models(self):
        self.assertEqual(self.server.request("GET", "/healthz").status, 200)
        ready = self.server.request("GET", "/readyz")
        self.assertEqual((ready.status, ready.json()["status"]), (200, "ready"))
        # Start-up wrote the loading progress to the log, a line per tenth of the bytes.
        self.assertRegex(self.server.log(), r"info server: loading: 100% [0-9.]+ MiB of [0-9.]+ MiB")
        models = self.server.request("GET", "/v1/models").json()
        self.assertEqual(models["object"], "list")
        self.assertEqual([m["id"] for m in models["data"]], ["toolcall-llada-3m"])
        # Which files this replica serves, for an operator watching a rollout.
        identity = models["data"][0]["unmask"]
        self.assertTrue(identity["path"].endswith("toolcall-llada-3m"), identity)
        self.assertRegex(identity["fingerprint"], r"^sha256sums:[0-9a-f]{64}$")
        self.assertEqual(identity["precision"], "bf16")
        metrics = self.server.request("GET", "/metrics").body.decode()
        self.assertIn('unmask_server_model_info{model="toolcall-llada-3m",path="%s",fingerprint="%s",precision="bf16"} 1'
                      % (identity["path"], identity["fingerprint"]), metrics)

    def test_chat_completion_answers_held_out_requests(self):
        rows = heldout(8)
        correct = 0
        for row in rows:
            r = self.server.post("/v1/chat/completions", {
                "model": "toolcall-llada-3m", "messages": [{"role": "user", "content": row["prompt"]}]})
            self.assertEqual(r.status, 200, r.body)
            body = r.json()
            self.assertEqual(body["object"], "chat.completion")
            self.assertTrue(body["id"].startswith("chatcmpl-"))
            self.assertEqual(r.headers["X-Request-Id"], body["id"])
            choice = body["choices"][0]
            self.assertEqual(choice["message"]["role"], "assistant")
            self.assertEqual(choice["finish_reason"], "stop")  # the answer ends with EOS
            # Blocks of 16 positions, one per step, until the block that holds EOS.
            self.assertLess(body["unmask"]["steps"], 128)
            self.assertEqual(body["unmask"]["forwards"], body["unmask"]["steps"])
            self.assertGreater(body["usage"]["prompt_tokens"], 0)
            self.assertEqual(body["usage"]["total_tokens"],
                             body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"])
            correct += choice["message"]["content"] == row["answer"]
        self.assertGreaterEqual(correct, 7, "the bundled model answers held-out requests")

    def test_completion_and_parameters(self):
        prompt = "<|user|>Set a timer for 3 minutes for the tea.<|assistant|>"
        r = self.server.post("/v1/completions", {"prompt": prompt, "max_tokens": 128, "steps": 64, "block_length": 16,
                                                 "policy": "low_confidence", "cache_mode": "dual", "seed": 3})
        self.assertEqual(r.status, 200, r.body)
        body = r.json()
        self.assertEqual(body["object"], "text_completion")
        self.assertEqual(json.loads(body["choices"][0]["text"])["name"], "set_timer")
        self.assertLess(body["unmask"]["steps"], 64)  # ends with the block that holds EOS
        # A stop string cuts the text before it; max_tokens bounds the generation ("length").
        r = self.server.post("/v1/completions", {"prompt": prompt, "stop": ["\"arguments\""]})
        self.assertEqual(r.json()["choices"][0], {"index": 0, "text": "{\"name\": \"set_timer\", ",
                                                  "finish_reason": "stop", "logprobs": None})
        r = self.server.post("/v1/completions", {"prompt": prompt, "max_tokens": 8})
        self.assertEqual(r.json()["choices"][0]["finish_reason"], "length")
        self.assertEqual(r.json()["usage"]["completion_tokens"], 8)
        # Token ids as the prompt; threshold decoding takes fewer steps.
        ids = self.server.post("/v1/completions", {"prompt": [256], "max_tokens": 16})
        self.assertEqual(ids.status, 200, ids.body)
        full = self.server.post("/v1/completions", {"prompt": prompt})
        fast = self.server.post("/v1/completions", {"prompt": prompt, "threshold": 0.9})
        self.assertLess(fast.json()["unmask"]["steps"] * 4, full.json()["unmask"]["steps"])
        # logits_eos_inf: no EOS, so the answer runs to max_tokens.
        endless = self.server.post("/v1/completions", {"prompt": prompt, "max_tokens": 48, "logits_eos_inf": True})
        self.assertEqual(endless.status, 200, endless.body)
        self.assertEqual(endless.json()["choices"][0]["finish_reason"], "length")
        self.assertEqual(endless.json()["usage"]["completion_tokens"], 48)

    def test_streaming_matches_the_whole_answer(self):
        for endpoint, body in [
            ("/v1/completions", {"prompt": "<|user|>Weather forecast for Quito, December 3<|assistant|>"}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Weather forecast for Quito, December 3"}]}),
        ]:
            body.update({"max_tokens": 128})
            whole = self.server.post(endpoint, body).json()
            r = self.server.post(endpoint, {**body, "stream": True, "stream_options": {"include_usage": True}})
            self.assertEqual(r.status, 200)
            self.assertTrue(r.headers["Content-Type"].startswith("text/event-stream"))
            events = sse_events(r.body)
            self.assertEqual(events[-1], "[DONE]")
            chunks = [json.loads(e) for e in events[:-1]]
            usage = chunks.pop()
            self.assertEqual(usage["choices"], [])
            self.assertEqual(usage["usage"]["prompt_tokens"], whole["usage"]["prompt_tokens"])
            self.assertTrue(all(c["id"] == chunks[0]["id"] for c in chunks))
            if endpoint == "/v1/completions":
                self.assertEqual({c["object"] for c in chunks}, {"text_completion"})
                text = "".join(c["choices"][0]["text"] for c in chunks)
                expected = whole["choices"][0]["text"]
            else:
                self.assertEqual({c["object"] for c in chunks}, {"chat.completion.chunk"})
                self.assertEqual(chunks[0]["choices"][0]["delta"], {"role": "assistant"})
                text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
                expected = whole["choices"][0]["message"]["content"]
            self.assertEqual(text, expected)
            # One chunk per committed block that added text, then the finish.
            self.assertGreaterEqual(len(chunks), 3)
            self.assertEqual([c["choices"][0]["finish_reason"] for c in chunks][-1], "stop")
            self.assertTrue(all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1]))
        # A stop string ends the stream early (the request is cancelled), its text never sent.
        body = {"prompt": "<|user|>Weather forecast for Quito, December 3<|assistant|>", "stream": True,
                "stop": "\"date\""}
        chunks = [json.loads(e) for e in sse_events(self.server.post("/v1/completions", body).body)[:-1]]
        text = "".join(c["choices"][0]["text"] for c in chunks)
        self.assertEqual(text, '{"name": "get_weather", "arguments": {"city": "Quito", ')
        self.assertEqual(chunks[-1]["choices"][0]["finish_reason"], "stop")

    def test_sampling_seeds(self):
        body = {"prompt": "<|user|>Hello<|assistant|>", "max_tokens": 24, "temperature": 5.0, "policy": "random"}
        same = [self.server.post("/v1/completions", {**body, "seed": 11}).json()["choices"][0]["text"] for _ in range(2)]
        self.assertEqual(same[0], same[1], "a seed reproduces")
        unseeded = {self.server.post("/v1/completions", body).json()["choices"][0]["text"] for _ in range(3)}
        self.assertGreater(len(unseeded), 1, "without a seed each request samples anew")

    def test_keep_alive_connection_survives_refusals(self):
        connection = self.server.connection()
        try:
            for body, status in [({"prompt": "x", "max_tokenz": 1}, 400), ({"prompt": "x", "model": "m2"}, 404),
                                 ({"prompt": "<|user|>Set a timer for 3 minutes.<|assistant|>", "max_tokens": 16}, 200)]:
                connection.request("POST", "/v1/completions", body=json.dumps(body),
                                   headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                self.assertEqual(response.status, status)
                json.loads(response.read())
        finally:
            connection.close()

    def test_invalid_requests_name_the_field(self):
        cases = [
            ("/v1/completions", "{not json", 400, None),
            ("/v1/completions", "[1, 2]", 400, None),
            ("/v1/completions", {"prompt": "x", "max_tokenz": 4}, 400, "max_tokenz"),
            ("/v1/completions", {"max_tokens": 4}, 400, "prompt"),
            ("/v1/completions", {"prompt": "x", "max_tokens": "4"}, 400, "max_tokens"),
            ("/v1/completions", {"prompt": "x", "max_tokens": 0}, 400, "max_tokens"),
            ("/v1/completions", {"prompt": "x", "temperature": -1}, 400, "temperature"),
            ("/v1/completions", {"prompt": "x", "top_p": 0}, 400, "top_p"),
            ("/v1/completions", {"prompt": "x", "n": 2}, 400, "n"),
            ("/v1/completions", {"prompt": "x", "stop": ""}, 400, "stop"),
            ("/v1/completions", {"prompt": "x", "policy": "fastest"}, 400, "policy"),
            ("/v1/completions", {"prompt": "x", "cache_mode": "triple"}, 400, "cache_mode"),
            ("/v1/completions", {"prompt": "x", "cache_precision": "fp16"}, 400, "cache_precision"),
            ("/v1/completions", {"prompt": ["a", "b"]}, 400, "prompt"),
            ("/v1/completions", {"prompt": [-5]}, 400, "prompt"),
            ("/v1/completions", {"prompt": "x", "stream": "yes"}, 400, "stream"),
            ("/v1/chat/completions", {"messages": []}, 400, "messages"),
            ("/v1/chat/completions", {"messages": [{"role": "assistant", "content": "hi"}]}, 400, "messages"),
            # The bundled model's chat template has no system role: its refusal is the answer.
            ("/v1/chat/completions", {"messages": [{"role": "system", "content": "be brief"},
                                                   {"role": "user", "content": "hi"}]}, 400, "messages"),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400,
             "messages[0].content"),
            ("/v1/completions", {"prompt": "x", "model": "gpt-4"}, 404, "model"),
        ]
        for endpoint, body, status, param in cases:
            with self.subTest(body=body):
                r = self.server.post(endpoint, body)
                self.assertEqual(r.status, status, r.body)
                error = r.json()["error"]
                self.assertEqual(error["param"], param)
                self.assertEqual(error["type"], "invalid_request_error")
                self.assertTrue(error["message"])
        # Beyond the model's length: the library's TOO_LONG.
        r = self.server.post("/v1/completions", {"prompt": "x", "max_tokens": 100000})
        self.assertEqual((r.status, r.json()["error"]["code"]), (400, "context_length_exceeded"))
        # Decoding parameters the library refuses come back with its message.
        r = self.server.post("/v1/completions", {"prompt": "x", "max_tokens": 48, "block_length": 7})
        self.assertEqual(r.status, 400)
        self.assertIn("block_length", r.json()["error"]["message"])
        r = self.server.request("GET", "/v2/nothing")
        self.assertEqual((r.status, r.json()["error"]["code"]), (404, "not_found"))

    def test_timeout_is_504(self):
        r = self.server.post("/v1/completions", {**LONG, "timeout_seconds": 0.05})
        self.assertEqual((r.status, r.json()["error"]["code"]), (504, "timeout"))
        self.assertIn("status=504 outcome=timeout", access_line(self.server, r.headers["X-Request-Id"]))
        streamed = self.server.post("/v1/completions", {**LONG, "timeout_seconds": 0.05, "stream": True})
        events = sse_events(streamed.body)
        self.assertEqual(json.loads(events[-2])["error"]["code"], "timeout")
        self.assertEqual(events[-1], "[DONE]")
        # The stream's status line said 200 before the deadline passed: its access line tells.
        self.assertIn("status=200 outcome=timeout", access_line(self.server, streamed.headers["X-Request-Id"]))

    def test_client_disconnect_cancels_its_request(self):
        for stream in (False, True):
            with self.subTest(stream=stream):
                before = self.server.metric('unmask_request_success_total{finished_reason="cancelled"}')
                body = json.dumps({**LONG, "stream": stream}).encode()
                s = socket.create_connection(("127.0.0.1", self.server.port))
                s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(body) + body)
                time.sleep(0.3)
                s.close()
                started = time.time()
                while self.server.metric('unmask_request_success_total{finished_reason="cancelled"}') == before:
                    self.assertLess(time.time() - started, 10, "the request is cancelled when its client goes")
                    time.sleep(0.05)
        self.assertGreaterEqual(self.server.metric("unmask_server_client_disconnects_total"), 2)
        eventually(lambda: self.server.log().count("outcome=disconnected") >= 2, "access lines of the disconnects")

    def test_metrics_and_access_log(self):
        self.server.post("/v1/completions", {"prompt": "<|user|>Set a timer for 9 minutes.<|assistant|>", "max_tokens": 16})
        text = self.server.request("GET", "/metrics").body.decode()
        for name in ("unmask_num_requests_running", "unmask_request_success_total", "unmask_e2e_request_latency_seconds",
                     "unmask_server_http_responses_total{code=\"200\"}", "unmask_server_ready 1"):
            self.assertIn(name, text)
        # Names, types, help and label syntax as Prometheus' own linter wants them (Debian's
        # prometheus package; scripts/install-deps.sh installs it).
        lint = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
        self.assertEqual(lint.returncode, 0, lint.stdout.decode() + lint.stderr.decode())
        eventually(lambda: "9 minutes" in self.server.log(), "the access line")
        log = self.server.log()
        line = [l for l in log.splitlines() if "access" in l and "9 minutes" in l]
        self.assertEqual(len(line), 1, "one access line with the prompt (log_prompts is on)")
        for field in ("id=cmpl-", "status=200 outcome=length", "latency_ms=", "prompt_tokens=", "completion_tokens=16",
                      "steps=20 forwards=20"):  # the prompt's last block (4 positions), then one of 16
            self.assertIn(field, line[0])
        self.assertIn("engine ready", log, "the library's log goes to the same file")


class Gateway(unittest.TestCase):
    def test_api_keys(self):
        keys = os.path.join(SCRATCH, "keys.txt")
        with open(keys, "w") as f:
            f.write("# team keys\nbatch:sk-file-secret\n")
        server = ServerProcess(server={"api_keys_env": "TEST_UNMASK_KEYS", "api_key_file": keys},
                               env={"TEST_UNMASK_KEYS": "agent:sk-env-secret, sk-anonymous"})
        try:
            body = {"prompt": "<|user|>Set a timer for 3 minutes.<|assistant|>", "max_tokens": 16}
            missing = server.post("/v1/completions", body)
            self.assertEqual((missing.status, missing.json()["error"]["type"]), (401, "authentication_error"))
            self.assertEqual(missing.headers["WWW-Authenticate"], "Bearer")
            wrong = server.post("/v1/completions", body, {"Authorization": "Bearer sk-env-secreT"})
            self.assertEqual(wrong.status, 401)
            self.assertEqual(server.request("GET", "/v1/models").status, 401)
            for key in ("sk-env-secret", "sk-anonymous", "sk-file-secret"):
                ok = server.post("/v1/completions", body, {"Authorization": "Bearer " + key})
                self.assertEqual(ok.status, 200, key)
            # Health, readiness and metrics stay open for probes and scrapers.
            self.assertEqual(server.request("GET", "/readyz").status, 200)
            self.assertEqual(server.request("GET", "/metrics").status, 200)
        finally:
            self.assertEqual(server.stop(), 0)
            os.unlink(keys)
        log = server.log()
        self.assertIn("key=agent", log)
        self.assertIn("key=batch", log)
        self.assertIn("key=key-2", log)
        self.assertNotIn("secret", log, "keys are never logged")

    def test_failed_authentications_are_limited_per_address(self):
        server = ServerProcess(server={"api_keys_env": "TEST_UNMASK_KEYS", "max_auth_failures_per_minute": 3},
                               env={"TEST_UNMASK_KEYS": "sk-right"})
        try:
            guesses = [server.request("GET", "/v1/models", headers={"Authorization": "Bearer sk-guess%d" % i}).status
                       for i in range(3)]
            self.assertEqual(guesses, [401, 401, 401])
            # The fourth guess is refused before its key is compared, and so is the right key from
            # the same address until a failure has expired (one every 20 s at 3 a minute).
            for key in ("sk-guess3", "sk-right"):
                refused = server.request("GET", "/v1/models", headers={"Authorization": "Bearer " + key})
                self.assertEqual(refused.status, 429, key)
                self.assertEqual(refused.json()["error"]["code"], "too_many_auth_failures")
                self.assertGreater(int(refused.headers["Retry-After"]), 0)
            # Probes need no key and are never refused.
            self.assertEqual(server.request("GET", "/readyz").status, 200)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_missing_key_variable_is_a_clear_startup_error(self):
        with self.assertRaisesRegex(RuntimeError, "UNMASK_TEST_UNSET is not set"):
            ServerProcess(server={"api_keys_env": "UNMASK_TEST_UNSET"})

    def test_rate_limit_per_key(self):
        server = ServerProcess(server={"api_keys_env": "TEST_UNMASK_KEYS", "rate_limit_per_second": 0.1,
                                       "rate_limit_burst": 2},
                               env={"TEST_UNMASK_KEYS": "a:key-a,b:key-b"})
        try:
            a, b = {"Authorization": "Bearer key-a"}, {"Authorization": "Bearer key-b"}
            statuses = [server.request("GET", "/v1/models", headers=a).status for _ in range(3)]
            self.assertEqual(statuses, [200, 200, 429])
            limited = server.request("GET", "/v1/models", headers=a)
            self.assertEqual((limited.status, limited.json()["error"]["code"]), (429, "rate_limit_exceeded"))
            self.assertGreaterEqual(int(limited.headers["Retry-After"]), 1)
            self.assertEqual(server.request("GET", "/v1/models", headers=b).status, 200, "each key has its own bucket")
        finally:
            self.assertEqual(server.stop(), 0)

    def test_body_limit(self):
        server = ServerProcess(server={"max_body_bytes": 1024})
        try:
            r = server.post("/v1/completions", {"prompt": "x" * 2000})
            self.assertEqual((r.status, r.json()["error"]["code"]), (413, "body_too_large"))
            self.assertEqual(server.post("/v1/completions", {"prompt": "x", "max_tokens": 4}).status, 200)
            # Chunked bodies are bounded by the same limit, as they arrive: a chunk that would pass it
            # is refused at its size line, and the connection closed.
            chunked = server.raw(b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 b"10000\r\n" + b"x" * 4096)
            self.assertTrue(chunked.startswith(b"HTTP/1.1 413 "), chunked[:60])
            self.assertIn(b"Connection: close", chunked)
            small = json.dumps({"prompt": "x", "max_tokens": 4}).encode()
            accepted = server.raw(b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                                  b"%x\r\n" % len(small) + small + b"\r\n0\r\n\r\n")
            self.assertTrue(accepted.startswith(b"HTTP/1.1 200 "), accepted[:60])
            # Without a length or chunks a request has no body (RFC 9112 6.3): what follows is the
            # next request, here not one.
            lengthless = server.raw(b"POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{}")
            self.assertTrue(lengthless.startswith(b"HTTP/1.1 400 "), lengthless[:60])
            self.assertIn(b"not valid JSON", lengthless)
            gzipped = server.raw(b"POST /v1/completions HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd")
            self.assertTrue(gzipped.startswith(b"HTTP/1.1 415 "), gzipped[:60])
        finally:
            self.assertEqual(server.stop(), 0)

    def test_queue_full_is_429_and_every_request_gets_one_answer(self):
        server = ServerProcess(service={"max_concurrent_requests": 1, "max_queued_requests": 1})
        try:
            results = []
            body = lasting(server, 0.5)
            def client():
                results.append(server.post("/v1/completions", body))
            threads = [threading.Thread(target=client) for _ in range(5)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            statuses = sorted(r.status for r in results)
            self.assertEqual(len(statuses), 5)
            self.assertTrue(set(statuses) <= {200, 429}, statuses)
            self.assertIn(429, statuses)
            self.assertGreaterEqual(statuses.count(200), 2)
            rejected = [r for r in results if r.status == 429]
            self.assertEqual(rejected[0].json()["error"]["code"], "queue_full")
            self.assertEqual(rejected[0].headers["Retry-After"], "1")
        finally:
            self.assertEqual(server.stop(), 0)

    def test_readiness_while_loading_and_draining(self):
        server = ServerProcess(args=["--warmup", "8"], wait_ready=False,
                               service={"max_concurrent_requests": 1}, server={"drain_timeout_seconds": 300})
        try:
            loading = server.request("GET", "/readyz")
            self.assertEqual((loading.status, loading.json()["status"]), (503, "loading"))
            self.assertEqual(server.request("GET", "/healthz").status, 200, "alive while loading")
            early = server.post("/v1/completions", {"prompt": "x", "max_tokens": 4})
            self.assertEqual((early.status, early.json()["error"]["code"]), (503, "loading"))
            server.wait_ready()

            results, threads = one_running_one_queued(server, lasting(server, 2))
            server.process.send_signal(signal.SIGTERM)
            eventually(lambda: server.request("GET", "/readyz").status == 503, "readiness turning 503", 5)
            self.assertEqual(server.request("GET", "/readyz").json()["status"], "draining")
            refused = server.post("/v1/completions", {"prompt": "x", "max_tokens": 4})
            self.assertEqual(refused.status, 503)
            for thread in threads:
                thread.join()
            self.assertEqual(results["running"].status, 200, "running requests finish")
            self.assertEqual(results["queued"].status, 503, "queued requests are refused")
            self.assertEqual(server.process.wait(30), 0)
        finally:
            server.stop()


    def test_a_request_cut_off_by_the_drain_is_a_500_and_one_never_started_a_503(self):
        # A load balancer retries 503s on another replica (deploy/haproxy): only a request that
        # never started may get one. One cut off by the drain's deadline after it began is a 500.
        server = ServerProcess(service={"max_concurrent_requests": 1}, server={"drain_timeout_seconds": 1})
        try:
            results, threads = one_running_one_queued(server, lasting(server, 6))  # well past the drain's second
            server.process.send_signal(signal.SIGTERM)
            for thread in threads:
                thread.join()
            cut, refused = results["running"], results["queued"]
            self.assertEqual((cut.status, cut.json()["error"]["code"]), (500, "interrupted_by_shutdown"), cut.body)
            self.assertNotIn("Retry-After", cut.headers)
            self.assertEqual((refused.status, refused.json()["error"]["code"]), (503, "shutting_down"), refused.body)
            self.assertEqual(server.process.wait(30), 0)
        finally:
            server.stop()

    def test_signals_while_loading_and_twice(self):
        # A shutdown while loading is no failure; one while warming up stops the warm-up (1000
        # generations would take minutes) at its next generation.
        for phase in ("loading", "warming up"):
            with self.subTest(phase=phase):
                server = ServerProcess(args=["--warmup", "1000"], wait_ready=False)
                eventually(lambda: phase in server.log(), phase)
                server.process.send_signal(signal.SIGTERM)
                self.assertEqual(server.process.wait(30), 0)
                server.stop()
        # A second signal while draining exits at once.
        server = ServerProcess(server={"drain_timeout_seconds": 600})
        def client_request():
            try:
                server.post("/v1/completions", LONG)
            except OSError:
                pass  # the server is gone before it answers
        client = threading.Thread(target=client_request)
        client.start()
        eventually(lambda: server.metric("unmask_num_requests_running") == 1, "a running request")
        server.process.send_signal(signal.SIGTERM)
        eventually(lambda: "draining, then exiting" in server.log(), "the drain")
        started = time.time()
        self.assertEqual(server.stop(signal.SIGINT), 1)
        self.assertLess(time.time() - started, 10)
        client.join()

    def test_service_limits_bind_clients(self):
        server = ServerProcess(service={"request_timeout_seconds": 0.2})
        try:
            r = server.post("/v1/completions", {**LONG, "timeout_seconds": 1000})
            self.assertEqual(r.status, 504, "a client cannot extend the service's deadline")
        finally:
            self.assertEqual(server.stop(), 0)

    def test_a_model_without_tokenizer_answers_400(self):
        scratch = tempfile.mkdtemp(prefix="no-tokenizer-", dir=SCRATCH)
        for name in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(MODEL, name), scratch)
        server = ServerProcess(args=["-m", scratch])
        try:
            for stream in (False, True):
                r = server.post("/v1/completions", {"prompt": [256], "max_tokens": 4, "stream": stream})
                self.assertEqual((r.status, r.json()["error"]["code"]), (400, "no_tokenizer"))
        finally:
            self.assertEqual(server.stop(), 0)


class CommandLine(unittest.TestCase):
    def run_server(self, *args):
        return subprocess.run([SERVER, *args], capture_output=True, text=True, timeout=30)

    def test_help_lists_every_option(self):
        for flag in ("--help", "-h"):
            r = self.run_server(flag)
            self.assertEqual(r.returncode, 0)
            self.assertIn("usage: unmask-server [options]", r.stdout)
            for option in ("--config FILE", "-m, --model DIR", "--port N", "--log-rotation-mb MB"):
                self.assertIn(option, r.stdout)

    def test_bad_arguments_exit_2_with_one_line(self):
        for args, message in [(["--bogus"], "unknown option '--bogus'"),
                              (["--port", "abc"], "--port needs an integer, got 'abc'"),
                              (["--port", "70000"], "--port must be within 0..65535"),
                              (["--timeout", "-1"], "--timeout must be within 0..1e9"),
                              (["--max-queued"], "option '--max-queued' needs a value N"),
                              (["extra"], "unexpected argument 'extra'")]:
            with self.subTest(args=args):
                r = self.run_server(*args)
                self.assertEqual(r.returncode, 2)
                self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
                self.assertIn(message, r.stderr)


class Robustness(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess()

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0

    def test_malformed_http(self):
        bad = [
            b"GARBAGE\r\n\r\n",
            b"GET\r\n\r\n",
            b"GET / HTTP/9.9\r\n\r\n",
            b"POST /v1/completions HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
            b"POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
            b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n",
            b"POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"prompt\"",  # truncated body
            b"GET /healthz HTTP/1.1\r\nBad Header Without Colon\r\n\r\n",
            b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\n" + b"X: " + b"b" * 100000 + b"\r\n\r\n",
            b"\x00\xff\xfe\r\n\r\n",
        ]
        for data in bad:
            with self.subTest(data=data[:40]):
                reply = self.server.raw(data, read_timeout=2)
                if reply:  # an answer, if any, is an HTTP error (the connection may also just close)
                    status_line = reply.split(b"\r\n")[0]
                    self.assertRegex(status_line, rb"^HTTP/1\.1 [45][0-9][0-9] " if b"/healthz" not in data
                                     else rb"^HTTP/1\.1 [0-9]{3} ")
                self.assertEqual(self.server.request("GET", "/healthz").status, 200, "the server survives")

    def test_bad_json_bodies(self):
        deep = b"[" * 300000 + b"]" * 300000
        must_fail = [b"", b"null", b"\"text\"", b"{\"prompt\": 1e999}", deep, b"{\"prompt\": " + b"[" * 50000,
                     b"{\"a\":" * 10000, b"{\"prompt\": \"x\", \"max_tokens\": 99999999999999999999999}", bytes(range(256)),
                     b"{\"prompt\": \"x\", \"policy\": " + deep + b"}",
                     b"{\"prompt\": \"x\", \"cache_mode\": {\"a\": " + deep + b"}}",
                     b"{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": " + deep + b"}]}]}",
                     b"{\"messages\": [{\"role\": \"user\", \"content\": null}]}",
                     b"{\"prompt\": \"\\ud800\"}",  # a lone surrogate is not JSON
                     b"{\"messages\": [{\"role\": \"user\", \"content\": \"a\\u0000b\"}]}",
                     json.dumps({"prompt": "x", "seed": -1}).encode(),
                     json.dumps({"prompt": "x", "stream_options": {"include_usage": True, "other": 1}}).encode()]
        for body in must_fail:
            for endpoint in ("/v1/completions", "/v1/chat/completions"):
                with self.subTest(body=body[:40], endpoint=endpoint):
                    r = self.server.post(endpoint, body)
                    self.assertEqual(r.status, 400, r.body[:200])
                    self.assertIn("error", r.json())
        # Odd but valid text is generated from, never a crash.
        r = self.server.post("/v1/completions", {"prompt": "\u0000\ud7ff\U0001f600 \u202e", "max_tokens": 8})
        self.assertEqual(r.status, 200, r.body)


class TransportAndLogs(unittest.TestCase):
    def test_tls(self):
        server = ServerProcess(tls=self_signed_certificate())
        try:
            r = server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Set a timer for 3 minutes."}],
                                                     "max_tokens": 32})
            self.assertEqual(r.status, 200, r.body)
            self.assertIn("set_timer", r.json()["choices"][0]["message"]["content"])
            # Plain HTTP on the TLS port gets no answer.
            self.assertFalse(server.raw(b"GET /healthz HTTP/1.1\r\n\r\n", read_timeout=2).startswith(b"HTTP/1.1 200"))
        finally:
            self.assertEqual(server.stop(), 0)

    def test_log_rotation(self):
        server = ServerProcess(args=["--log-rotation-mb", "0.01"])
        try:
            for _ in range(120):
                server.request("GET", "/healthz")
        finally:
            self.assertEqual(server.stop(), 0)
        self.assertTrue(os.path.exists(server.log_path + ".1"), "the log moved to PATH.1 past 10 kB")
        self.assertLessEqual(os.path.getsize(server.log_path + ".1"), 10486 + 1024)


if __name__ == "__main__":
    unittest.main()
