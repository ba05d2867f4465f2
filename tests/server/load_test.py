"""A bounded load test of unmask-server on loopback: a fixed number of chat requests from several
concurrent clients (backing off 50 ms after a refusal)
against a server whose queue is smaller than the load, so some are refused.
Every request must get exactly one well-formed answer, 200 or 429, and the engine's counters
must agree; prints latency percentiles and throughput.

usage: UNMASK_SERVER=BIN python3 load_test.py [--requests N] [--clients C] [--concurrent R] [--queued Q]
                                             [--extra JSON]"""
import argparse
import json
import os
import sys
import threading
import time

from server_process import ServerProcess

HELDOUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "data", "tool_calls_heldout.jsonl")


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--concurrent", type=int, default=4)
    parser.add_argument("--queued", type=int, default=2)
    parser.add_argument("--extra", default="{}", help="more request fields as JSON, e.g. '{\"threshold\": 0.9}'")
    args = parser.parse_args()
    extra = json.loads(args.extra)
    with open(HELDOUT) as f:
        prompts = [json.loads(line)["prompt"] for line in f]

    server = ServerProcess(service={"max_concurrent_requests": args.concurrent, "max_queued_requests": args.queued})
    next_index, lock = [0], threading.Lock()
    results = []  # (index, status, seconds, problem)

    def client():
        while True:
            with lock:
                index = next_index[0]
                if index >= args.requests:
                    return
                next_index[0] += 1
            started = time.perf_counter()
            problem = None
            try:
                r = server.post("/v1/chat/completions", {
                    "messages": [{"role": "user", "content": prompts[index % len(prompts)]}],
                    "max_tokens": 128, "seed": index, **extra})
                body = r.json()
                if r.status == 200:
                    content = body["choices"][0]["message"]["content"]
                    if not isinstance(content, str) or body["choices"][0]["finish_reason"] not in ("stop", "length"):
                        problem = "malformed 200: %r" % body
                elif r.status == 429:
                    if "error" not in body or "Retry-After" not in r.headers:
                        problem = "malformed 429: %r" % body
                else:
                    problem = "status %d: %r" % (r.status, body)
                status = r.status
            except Exception as e:  # a lost or broken response
                status, problem = None, repr(e)
            with lock:
                results.append((index, status, time.perf_counter() - started, problem))
            if status == 429:
                time.sleep(0.05)  # a short back-off (a real client would honour Retry-After)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    finished = {reason: server.metric('unmask_request_success_total{finished_reason="%s"}' % reason)
                for reason in ("length", "eos", "cancelled", "timeout", "error")}
    rejected = server.metric("unmask_request_rejected_total")
    exit_status = server.stop()

    ok = [seconds for _, status, seconds, _ in results if status == 200]
    refused = sum(1 for _, status, _, _ in results if status == 429)
    problems = [(i, p) for i, _, _, p in results if p]
    print("requests %d from %d clients (engine: %d running, %d queued): %d ok, %d refused (429), %d problems"
          % (args.requests, args.clients, args.concurrent, args.queued, len(ok), refused, len(problems)))
    print("latency of answered requests: P50 %.3f s, P95 %.3f s, P99 %.3f s; throughput %.1f answers/s over %.1f s"
          % (percentile(ok, 50), percentile(ok, 95), percentile(ok, 99), len(ok) / elapsed, elapsed))
    failures = []
    if sorted(i for i, _, _, _ in results) != list(range(args.requests)):
        failures.append("not every request got exactly one response")
    failures += ["request %d: %s" % p for p in problems[:10]]
    if finished["length"] + finished["eos"] != len(ok) or any(finished[r] for r in ("cancelled", "timeout", "error")):
        failures.append("the engine's outcomes %r do not match %d answers" % (finished, len(ok)))
    if rejected != refused:
        failures.append("the engine rejected %s, clients saw %d refusals" % (rejected, refused))
    if exit_status != 0:
        failures.append("the server exited with %d" % exit_status)
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
