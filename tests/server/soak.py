"""A soak test of unmask-server: a fixed number of requests of every kind a deployment sees
(answers, streams read to the end, streams and answers abandoned by their clients, requests past
their deadline, malformed requests, failed authentications from another address, probes) from
several clients at once, with the server's resident memory, open descriptors and threads sampled
as it goes. After a warm-up (the first fifth), nothing may grow beyond the stated bounds:

  threads       exactly as after the warm-up (every pool is fixed);
  descriptors   at most 4 more than after the warm-up, once the clients are gone;
  resident set  at most 10% + 16 MiB more than after the warm-up.

CI runs a short version (ctest server.soak); bench/RESULTS.md records a long one (--minutes 30).

usage: UNMASK_SERVER=BIN python3 soak.py [--requests N | --minutes M] [--clients C]"""
import argparse
import json
import os
import socket
import sys
import threading
import time

from server_process import ServerProcess

KEY = "sk-soak"
PROMPT = "<|user|>Set a timer for 3 minutes.<|assistant|>"


def sample(pid):
    with open("/proc/%d/status" % pid) as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return {"rss_kib": int(fields["VmRSS"].split()[0]), "threads": int(fields["Threads"]),
            "fds": len(os.listdir("/proc/%d/fd" % pid))}


def raw_request(port, data, read=True, source=None, timeout=30):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                  source_address=(source, 0) if source else None) as s:
        s.sendall(data)
        if not read:
            return b""
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += chunk


def post_bytes(body, key=KEY, close=True):
    body = json.dumps(body).encode()
    return (b"POST /v1/completions HTTP/1.1\r\nHost: soak\r\nAuthorization: Bearer " + key.encode() +
            b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n" +
            (b"Connection: close\r\n" if close else b"") + b"\r\n" + body)


def status_of(data):
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0


# One request of each kind; returns (kind, the status seen or 0 for an abandoned one, problem or None).
def answer(port):
    got = raw_request(port, post_bytes({"prompt": PROMPT, "max_tokens": 16}))
    return status_of(got), None if status_of(got) in (200, 429) else "answer: %r" % got[:80]


def stream_to_end(port):
    got = raw_request(port, post_bytes({"prompt": PROMPT, "max_tokens": 24, "stream": True}))
    ok = status_of(got) == 429 or (status_of(got) == 200 and got.rstrip().endswith(b"0"))
    return status_of(got), None if ok else "stream: %r" % got[-80:]


def stream_abandoned(port):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(post_bytes({"prompt": "x", "max_tokens": 256, "steps": 256, "logits_eos_inf": True, "stream": True}))
        s.recv(200)  # the head, then gone
    return 0, None


def answer_abandoned(port):
    raw_request(port, post_bytes({"prompt": "x", "max_tokens": 256, "steps": 256, "logits_eos_inf": True}), read=False)
    return 0, None


def past_deadline(port):
    got = raw_request(port, post_bytes({"prompt": "x", "max_tokens": 512, "steps": 512, "logits_eos_inf": True,
                                             "timeout_seconds": 0.05}))
    return status_of(got), None if status_of(got) in (504, 429) else "deadline: %r" % got[:80]


def malformed(port):
    got = raw_request(port, b"POST /v1/completions HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc")
    bad_json = raw_request(port, post_bytes({"prompt": "x", "max_tokenz": 4}))
    ok = status_of(got) == 400 and status_of(bad_json) == 400
    return 400, None if ok else "malformed: %r %r" % (got[:40], bad_json[:40])


def failed_auth(port):
    got = raw_request(port, post_bytes({"prompt": "x"}, key="sk-wrong"), source="127.0.0.3")
    return status_of(got), None if status_of(got) in (401, 429) else "auth: %r" % got[:80]


def probe(port):
    got = raw_request(port, b"GET /metrics HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n")
    return status_of(got), None if status_of(got) == 200 else "probe: %r" % got[:80]


KINDS = [answer, stream_to_end, stream_abandoned, answer_abandoned, past_deadline, malformed, failed_auth, probe]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=800)
    parser.add_argument("--minutes", type=float, default=0, help="run for this long instead of --requests")
    parser.add_argument("--clients", type=int, default=6)
    args = parser.parse_args()

    server = ServerProcess(service={"max_concurrent_requests": 4, "max_queued_requests": 8},
                           server={"api_keys_env": "SOAK_KEYS", "keep_alive_timeout_seconds": 2},
                           env={"SOAK_KEYS": KEY})
    pid = server.process.pid
    lock = threading.Lock()
    state = {"next": 0, "problems": [], "statuses": {}}
    deadline = time.time() + args.minutes * 60 if args.minutes else None
    total = None if deadline else args.requests

    def more():
        with lock:
            if (total is not None and state["next"] >= total) or (deadline and time.time() > deadline):
                return None
            state["next"] += 1
            return state["next"] - 1

    def client():
        while (index := more()) is not None:
            kind = KINDS[index % len(KINDS)]
            try:
                status, problem = kind(server.port)
            except OSError as e:
                status, problem = -1, "%s: %s" % (kind.__name__, e)
            with lock:
                state["statuses"][status] = state["statuses"].get(status, 0) + 1
                if problem:
                    state["problems"].append(problem)

    samples = []
    started = time.time()
    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for t in threads:
        t.start()
    warm = None
    while any(t.is_alive() for t in threads):
        time.sleep(1)
        s = {**sample(pid), "t": round(time.time() - started, 1), "requests": state["next"]}
        samples.append(s)
        progress = (state["next"] / total) if total else (time.time() - started) / (args.minutes * 60)
        if warm is None and progress >= 0.2:
            warm = s
    for t in threads:
        t.join()
    # Idle: abandoned requests cancelled, kept-alive connections closed by their deadline.
    time.sleep(3)
    final = sample(pid)
    warm = warm or samples[0]
    elapsed = time.time() - started
    status = server.stop()

    peak_rss = max(s["rss_kib"] for s in samples)
    # The resident set at each tenth of the run, to tell a plateau from a slope.
    tenths = [samples[min(len(samples) - 1, len(samples) * k // 10)]["rss_kib"] for k in range(1, 11)]
    summary = {"requests": state["next"], "seconds": round(elapsed, 1), "statuses": state["statuses"],
               "warm": warm, "final": final, "peak_rss_kib": peak_rss, "rss_kib_by_tenth": tenths,
               "samples": len(samples)}
    print(json.dumps(summary))
    failures = list(state["problems"][:10])
    if status != 0:
        failures.append("the server exited with %d" % status)
    if final["threads"] != warm["threads"]:
        failures.append("threads grew: %d after warm-up, %d at the end" % (warm["threads"], final["threads"]))
    if final["fds"] > warm["fds"] + 4:
        failures.append("descriptors grew: %d after warm-up, %d at the end" % (warm["fds"], final["fds"]))
    if final["rss_kib"] > warm["rss_kib"] * 1.10 + 16 * 1024:
        failures.append("resident memory grew: %d KiB after warm-up, %d KiB at the end" % (warm["rss_kib"], final["rss_kib"]))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
