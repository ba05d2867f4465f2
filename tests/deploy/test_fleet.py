"""A fleet of unmask-server replicas behind HAProxy, as deploy/local-fleet.sh starts it, under a
steady load of chat requests: a rolling restart fails no request, a replica killed with SIGKILL
costs only the requests it was running and is routed around, and a rollout to a model that does not
load is rolled back while the fleet keeps serving. Each test prints the figures bench/RESULTS.md
reports (requests, statuses, P50/P99 latency during the change and in steady state).

Needs haproxy and curl (scripts/install-deps.sh installs them) and $UNMASK_SERVER."""
import http.client
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FLEET = os.path.join(ROOT, "deploy", "local-fleet.sh")
ROLLING = os.path.join(ROOT, "deploy", "rolling-restart.sh")
PORT = int(os.environ.get("UNMASK_FLEET_PORT", "18300"))
PROMPTS = ["Set a timer for 5 minutes for the tea.", "Convert 120 EUR to USD.",
           "What's the weather in Lisbon on May 14?", "Email ana@example.com about the budget."]


class Load:
    """`clients` threads, each sending chat requests through HAProxy one after another until stop().
    Records (start, end, status, well_formed, detail) per request."""

    def __init__(self, clients=4):
        self.records, self.lock, self.running = [], threading.Lock(), True
        self.threads = [threading.Thread(target=self.client, args=(i,)) for i in range(clients)]
        for t in self.threads:
            t.start()

    def client(self, index):
        n = 0
        while self.running:
            body = json.dumps({"messages": [{"role": "user", "content": PROMPTS[(index + n) % len(PROMPTS)]}],
                               "max_tokens": 16})
            n += 1
            start = time.time()
            status, well_formed, detail = 0, False, ""
            try:
                c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
                c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
                r = c.getresponse()
                status, payload = r.status, r.read()
                c.close()
                if status == 200:
                    answer = json.loads(payload)
                    well_formed = answer["object"] == "chat.completion" and bool(answer["choices"][0]["message"]["content"])
                elif status == 429:
                    well_formed = r.getheader("Retry-After") is not None
                detail = payload[:200].decode(errors="replace")
            except Exception as e:  # a reset or a timeout: no answer at all
                detail = repr(e)
            with self.lock:
                self.records.append((start, time.time(), status, well_formed, detail))

    def stop(self):
        self.running = False
        for t in self.threads:
            t.join()
        return self.records


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def report(name, records, changing=None):
    """Prints the figures of `records`: those that started inside the (start, end) window
    `changing` and the rest (steady state); all of them as one line without a window."""
    if changing is None:
        groups = (("all", records),)
    else:
        inside = [r for r in records if changing[0] <= r[0] <= changing[1]]
        outside = [r for r in records if not changing[0] <= r[0] <= changing[1]]
        groups = (("during the change", inside), ("steady state", outside))
    for label, rows in groups:
        statuses = {}
        for r in rows:
            statuses[r[2]] = statuses.get(r[2], 0) + 1
        latencies = [r[1] - r[0] for r in rows if r[2] == 200]
        print("%s, %s: %d requests, statuses %s, P50 %.0f ms, P99 %.0f ms" % (
            name, label, len(rows), dict(sorted(statuses.items())), 1000 * percentile(latencies, 0.5),
            1000 * percentile(latencies, 0.99)), flush=True)


class FleetCase(unittest.TestCase):
    """Starts a fleet (start_options()) before each test and stops it after."""

    def start_options(self):
        return ["--replicas", "3"]

    def setUp(self):
        for tool in ("haproxy", "curl"):
            self.assertIsNotNone(shutil.which(tool), tool + " is needed (scripts/install-deps.sh installs it)")
        self.state = tempfile.mkdtemp(prefix="unmask-fleet-")
        self.addCleanup(shutil.rmtree, self.state, True)
        self.addCleanup(subprocess.run, [FLEET, "stop", "--state-dir", self.state], capture_output=True, timeout=120)
        self.run_script(FLEET, "start", "--port", str(PORT), "--server", os.environ["UNMASK_SERVER"],
                        "--state-dir", self.state, *self.start_options())

    def run_script(self, *args, expect=0):
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=600)
        self.assertEqual(done.returncode, expect, done.stdout + done.stderr)
        return done.stdout

    def answered_by_replicas(self):
        """Chat completions the replicas' access logs report answered 200 (logs survive restarts)."""
        total = 0
        for name in os.listdir(self.state):
            if name.startswith("replica-") and name.endswith(".log"):
                with open(os.path.join(self.state, name)) as f:
                    total += sum(1 for line in f if 'path="/v1/chat/completions" status=200' in line)
        return total

    def assert_all_answered(self, records):
        self.assertGreater(len(records), 0)
        for start, end, status, well_formed, detail in records:
            self.assertIn(status, (200, 429), detail)  # 429: backpressure, allowed and counted
            self.assertTrue(well_formed, detail)


class Fleet(FleetCase):
    def test_a_rolling_restart_under_load_fails_no_request(self):
        load = Load()
        time.sleep(3)
        began = time.time()
        out = self.run_script(ROLLING, "--state-dir", self.state)
        ended = time.time()
        time.sleep(2)
        records = load.stop()
        self.assertIn("every replica restarted", out)
        report("rolling restart", records, (began, ended))
        self.assert_all_answered(records)
        self.assertGreater(len([r for r in records if began <= r[0] <= ended]), 0, "requests during the restart")
        # Every answer the clients got came from exactly one replica's 200; the replicas also
        # answered the script's smoke request, one each.
        time.sleep(0.5)  # the access line follows the response
        self.assertEqual(self.answered_by_replicas(), sum(1 for r in records if r[2] == 200) + 3)

    def test_a_killed_replica_costs_only_its_running_requests(self):
        load = Load()
        time.sleep(3)
        with open(os.path.join(self.state, "replica-2.pid")) as f:
            pid = int(f.read())
        killed = time.time()
        os.kill(pid, signal.SIGKILL)
        time.sleep(5)
        records = load.stop()
        report("replica killed", records, (killed, killed + 1.5))
        failed = [r for r in records if r[2] != 200]
        for start, end, status, well_formed, detail in failed:
            # Only a request already running on that replica fails, and it fails with an answer
            # (HAProxy's 502), not a reset or a hang. (A request sent in the few milliseconds the
            # kernel takes to end a process of many threads still reached it alive.)
            self.assertLess(start, killed + 0.25, detail)
            self.assertGreater(end, killed, detail)
            self.assertEqual(status, 502, detail)
        self.assertLessEqual(len(failed), 4, "at most one request in flight per client")
        # Routed around within the health checks' 2 x 500 ms: later requests all succeed.
        self.assert_all_answered([r for r in records if r[0] > killed + 1.5])
        status = subprocess.run([FLEET, "status", "--state-dir", self.state], capture_output=True, text=True)
        self.assertRegex(status.stdout, r"replica-2 .* haproxy DOWN")

    def test_a_rollout_to_a_model_that_does_not_load_is_rolled_back(self):
        broken = os.path.join(self.state, "broken-model")
        os.makedirs(broken)
        with open(os.path.join(broken, "config.json"), "w") as f:
            f.write('{"model_type": "llada"}')
        load = Load()
        time.sleep(2)
        began = time.time()
        out = self.run_script(ROLLING, "--state-dir", self.state, "--model", broken, "--ready-timeout", "20", expect=1)
        ended = time.time()
        time.sleep(2)
        records = load.stop()
        report("rollout rolled back", records, (began, ended))
        self.assertIn("did not become ready", out)
        self.assertIn("replica-1: back on", out)
        self.assert_all_answered(records)
        status = self.run_script(FLEET, "status", "--state-dir", self.state)
        self.assertEqual(status.count("haproxy UP"), 3, status)
        self.assertNotIn("broken-model", status)


class Backpressure(FleetCase):
    """One replica that runs one request and queues one, behind an HAProxy that sends it up to 16
    at once: the replica's 429s reach the clients as they are, with Retry-After, and are not
    retried."""

    def start_options(self):
        config = os.path.join(self.state, "service.yaml")
        with open(config, "w") as f:
            f.write("service:\n  max_concurrent_requests: 1\n  max_queued_requests: 1\nmodel:\n  weights_path: %s\n"
                    % os.path.join(ROOT, "models", "toolcall-llada-3m"))
        return ["--replicas", "1", "--replica-connections", "16", "--config", config]

    def test_a_replicas_429_passes_through_with_retry_after(self):
        load = Load(clients=8)
        time.sleep(3)
        records = load.stop()
        report("backpressure", records)
        self.assert_all_answered(records)  # 200, or 429 with Retry-After
        refused = sum(1 for r in records if r[2] == 429)
        self.assertGreater(refused, 0, "eight clients against one running and one queued slot")
        time.sleep(0.5)
        with open(os.path.join(self.state, "replica-1.log")) as f:
            log = f.read()
        # Each 429 the clients got is one the replica sent: HAProxy retried none of them.
        self.assertEqual(log.count('path="/v1/chat/completions" status=429'), refused)


if __name__ == "__main__":
    unittest.main()
