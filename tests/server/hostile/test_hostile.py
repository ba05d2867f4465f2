"""Hostile clients against unmask-server, from outside, on loopback: each case states what such a
client does and what the server must answer. CI runs it against the release build and under
AddressSanitizer (ctest server.hostile). The server runs with small bounds (2 concurrent
requests, 4 queued, short deadlines) so that every attack passes a bound quickly."""
import json
import os
import signal
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from server_process import ServerProcess, closed_by_peer, self_signed_certificate, sse_events  # noqa: E402

SERVICE = {"max_concurrent_requests": 2, "max_queued_requests": 4}
BOUNDS = {"header_timeout_seconds": 2, "body_timeout_seconds": 2, "keep_alive_timeout_seconds": 2,
          "write_timeout_seconds": 5, "max_connections_per_address": 48, "max_header_bytes": 8192,
          "max_body_bytes": 65536}
COMPLETION = json.dumps({"prompt": "<|user|>Set a timer for 3 minutes.<|assistant|>", "max_tokens": 16}).encode()


def post(path, body, extra=b""):
    return (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
            str(len(body)).encode() + b"\r\n" + extra + b"\r\n" + body)


def responses(data):
    """The status codes of the HTTP/1.1 responses in `data`, in order (bodies by Content-Length)."""
    statuses = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        statuses.append(int(lines[0].split()[1]))
        length = next((int(l.split(b":")[1]) for l in lines[1:] if l.lower().startswith(b"content-length:")), 0)
        data = rest[length:]
    return statuses


def metrics(server):
    """Every sample of one scrape of /metrics, by its name and labels (the scrape counts itself as
    a 200 once it has been written, so in the next scrape)."""
    samples = {}
    for line in server.request("GET", "/metrics", timeout=10).body.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def metric(server, name):
    return metrics(server).get(name, 0.0)


def timed(action):
    started = time.time()
    result = action()
    return result, time.time() - started


class Trickler:
    """`count` connections that send a request's headers one byte a second (slowloris). While
    `reconnect` is set, a connection the server closes is opened again, as the attack does."""

    def __init__(self, port, count, reconnect=True):
        self.port = port
        self.sockets = [self._connect() for _ in range(count)]
        self.reconnect = threading.Event()
        if reconnect:
            self.reconnect.set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._trickle, daemon=True)
        self.thread.start()

    def _connect(self):
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def _trickle(self):
        text = b"POST /v1/completions HTTP/1.1\r\nHost: slow\r\nX-Pad: " + b"a" * 1000
        sent = [0] * len(self.sockets)
        while not self.stop.wait(1.0):
            for i, s in enumerate(self.sockets):
                try:
                    s.send(text[sent[i]:sent[i] + 1])
                    sent[i] += 1
                except OSError:
                    if self.reconnect.is_set():
                        s.close()
                        try:
                            self.sockets[i], sent[i] = self._connect(), 0
                        except OSError:
                            pass

    def closed_by_server(self):
        closed = 0
        for s in self.sockets:
            s.settimeout(0.2)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except socket.timeout:
                pass
            except OSError:
                closed += 1
        return closed

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.sockets:
            s.close()


class Hostile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(service=SERVICE, server=BOUNDS)

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0

    def assert_served_quickly(self, what):
        health, seconds = timed(lambda: self.server.request("GET", "/healthz", timeout=5))
        self.assertEqual(health.status, 200, what)
        self.assertLess(seconds, 1.0, what + ": /healthz answered at once")
        answer, seconds = timed(lambda: self.server.post("/v1/completions", json.loads(COMPLETION), timeout=30))
        self.assertEqual(answer.status, 200, what)
        self.assertLess(seconds, 10.0, what + ": a completion is served")

    def test_slowloris_neither_starves_the_server_nor_stays(self):
        # More slow connections than the worker pool (2 + 4 + 16 = 22) has threads, reopened as the
        # server closes them, for 5 s: the server answers at once throughout.
        timeouts = metric(self.server, "unmask_server_connection_timeouts_total")
        slow = Trickler(self.server.port, 40)
        try:
            for second in range(5):
                time.sleep(1.0)
                self.assert_served_quickly("second %d of a slowloris attack" % second)
            # Without reconnecting, each slow connection is closed at its header deadline (2 s),
            # however it trickles.
            slow.reconnect.clear()
            deadline = time.time() + 10
            while slow.closed_by_server() < 40 and time.time() < deadline:
                time.sleep(0.2)
            self.assertEqual(slow.closed_by_server(), 40)
        finally:
            slow.close()
        self.assertGreaterEqual(metric(self.server, "unmask_server_connection_timeouts_total"), timeouts + 40)

    def test_idle_connections_are_closed_and_bounded_per_address(self):
        idle = [socket.create_connection(("127.0.0.1", self.server.port), timeout=5) for _ in range(48)]
        try:
            time.sleep(0.3)
            # The 49th from this address is closed at once; the server still answers other addresses.
            extra = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
            self.assertEqual(extra.recv(1), b"")
            extra.close()
            other = socket.create_connection(("127.0.0.1", self.server.port), timeout=5,
                                             source_address=("127.0.0.2", 0))
            other.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            self.assertTrue(other.recv(100).startswith(b"HTTP/1.1 200"))
            other.close()
            # Connections that never send are closed at the header deadline.
            time.sleep(2.5)
            self.assertTrue(closed_by_peer(idle))
        finally:
            for s in idle:
                s.close()
        self.assertGreater(metric(self.server, "unmask_server_connections_refused_total"), 0)

    def test_pipelined_requests_are_answered_in_order(self):
        data = (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + post(b"/v1/completions", COMPLETION) +
                b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n" + b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = self.server.raw(data, read_timeout=30)
        self.assertEqual(responses(got), [200, 200, 404, 200])
        self.assertIn(b'"status":"alive"', got.split(b"\r\n\r\n")[1])

    def test_connection_close_is_honoured(self):
        data = (b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" + b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        got = self.server.raw(data)
        self.assertEqual(responses(got), [200])
        self.assertIn(b"Connection: close", got)
        # An error of the front says Connection: close and means it: what follows is not served.
        got = self.server.raw(b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n" +
                              b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(responses(got), [400])
        self.assertIn(b"Connection: close", got)
        # HTTP/1.0 without keep-alive closes too.
        got = self.server.raw(b"GET /healthz HTTP/1.0\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n")
        self.assertEqual(responses(got), [200])

    def test_head_has_no_body_and_http10_streams_have_no_chunks(self):
        # HEAD's answer has GET's head and no body, so the next pipelined response is read intact.
        got = self.server.raw(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
        head, _, rest = got.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), got[:60])
        self.assertIn(b"Content-Length: 18", head)
        self.assertTrue(rest.startswith(b"HTTP/1.1 200"), rest[:60])
        # An HTTP/1.0 client cannot read chunks: its stream is the bare events, ended by the close.
        body = json.dumps({"prompt": "<|user|>Set a timer for 3 minutes.<|assistant|>", "max_tokens": 24,
                           "stream": True}).encode()
        got = self.server.raw(b"POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " +
                              str(len(body)).encode() + b"\r\n\r\n" + body, read_timeout=30)
        head, _, events = got.partition(b"\r\n\r\n")
        self.assertNotIn(b"Transfer-Encoding", head)
        self.assertIn(b"Connection: close", head)
        self.assertEqual(sse_events(events)[-1], "[DONE]")

    def test_half_closed_client_is_served_or_counted_as_gone(self):
        ok, gone = 'unmask_server_http_responses_total{code="200"}', "unmask_server_client_disconnects_total"
        bodies = {"short": COMPLETION,
                  "long": json.dumps({"prompt": "x", "max_tokens": 128, "steps": 128, "logits_eos_inf": True}).encode(),
                  "stream": json.dumps({"prompt": "x", "max_tokens": 64, "logits_eos_inf": True, "stream": True}).encode()}
        for name, body in bodies.items():
            with self.subTest(request=name):
                before = metrics(self.server)
                with socket.create_connection(("127.0.0.1", self.server.port), timeout=30) as s:
                    s.sendall(post(b"/v1/completions", body))
                    s.shutdown(socket.SHUT_WR)
                    got = b""
                    while chunk := s.recv(65536):
                        got += chunk
                time.sleep(0.3)
                after = metrics(self.server)
                log = [line for line in self.server.log().splitlines() if 'path="/v1/completions"' in line][-1]
                # Served whole (a stream: to its last chunk), or not: a stream's head and first
                # events may have gone out before the close was seen, and yet it was not served.
                whole = got.startswith(b"HTTP/1.1 200") and (name != "stream" or got.endswith(b"\r\n0\r\n\r\n"))
                if whole:  # its 200 was counted (beside the first scrape's) and logged
                    self.assertEqual(after[ok], before[ok] + 2)
                    self.assertIn("status=200", log)
                else:  # a disconnect, and no 200 counted or logged for it
                    self.assertEqual(after[ok], before[ok] + 1)
                    self.assertEqual(after.get(gone, 0), before.get(gone, 0) + 1)
                    self.assertIn("status=499 outcome=disconnected", log)

    def test_invalid_or_conflicting_lengths_are_refused_at_once(self):
        cases = [b"Content-Length: 5\r\nContent-Length: 7\r\n", b"Content-Length: -5\r\n",
                 b"Content-Length: 18446744073709551617\r\n", b"Content-Length: 5x\r\n",
                 b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"]
        for header in cases:
            with self.subTest(header=header):
                got, seconds = timed(lambda: self.server.raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + header +
                                                             b"\r\n{}", read_timeout=5))
                self.assertTrue(got.startswith(b"HTTP/1.1 400 "), got[:60])
                self.assertIn(b"Connection: close", got)
                self.assertLess(seconds, 1.0, "answered at once, not at a read timeout")

    def test_oversized_and_malformed_requests(self):
        cases = [
            (b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 10000 + b"\r\n\r\n", 431),
            (post(b"/v1/completions", b"x" * 70000), 413),
            (b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
            (b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + b"f" * 40 + b"\r\n", 400),
            (b"GET /healthz HTTP/1.1\r\nBad Header\r\n\r\n", 400),
            (b"GET /healthz HTTP/9.9\r\n\r\n", 400),
            (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 64 + b"\r\n\r\n", 400),
            (post(b"/v1/completions", b"[" * 60000), 400),  # nested deeper than 64 levels
            (post(b"/v1/completions", b'{"prompt": "\xff\xfe\xc3(", "max_tokens": 4}'), 400),  # not UTF-8: not JSON
            (b"POST /v1/completions HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd", 415),
            (b"DELETE /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405),
        ]
        for request, status in cases:
            with self.subTest(request=request[:60]):
                got = self.server.raw(request, read_timeout=10)
                self.assertTrue(got.startswith(b"HTTP/1.1 %d " % status), got[:80])
        # Chunked with extensions and trailers, as RFC 9112 7.1 allows, is read.
        body = json.dumps({"prompt": "x", "max_tokens": 4}).encode()
        got = self.server.raw(b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                              b"%x;ext=1\r\n" % len(body) + body + b"\r\n0\r\nX-Trailer: t\r\n\r\n", read_timeout=30)
        self.assertTrue(got.startswith(b"HTTP/1.1 200 "), got[:80])
        self.assert_served_quickly("after malformed requests")

    def test_nothing_a_client_sends_reaches_a_response_header(self):
        body = json.dumps({"prompt": "x\r\nX-Injected: 1", "max_tokens": 4, "stop": ["\r\nX-Injected: 2"],
                           "user": "u\r\nX-Injected: 3"}).encode()
        got = self.server.raw(post(b"/v1/completions", body, b"X-Request-Id: \r\nConnection: close\r\n"), read_timeout=30)
        head = got.split(b"\r\n\r\n")[0]
        self.assertNotIn(b"X-Injected", head)
        self.assertTrue(got.startswith(b"HTTP/1.1 "))

    def test_streams_that_end_are_counted_by_how_they_ended(self):
        label = 'unmask_request_success_total{finished_reason="%s"}'
        before = {r: metric(self.server, label % r) for r in ("eos", "length", "cancelled")}
        # A stop string ends this stream early (the engine is told to stop, not cancelled).
        body = {"prompt": "<|user|>What's the weather in Quito?<|assistant|>", "stream": True, "stop": "\"city\""}
        events = sse_events(self.server.post("/v1/completions", body, timeout=60).body)
        self.assertEqual(events[-1], "[DONE]")
        self.assertEqual(json.loads(events[-2])["choices"][0]["finish_reason"], "stop")
        time.sleep(0.2)
        after = {r: metric(self.server, label % r) for r in ("eos", "length", "cancelled")}
        self.assertEqual(after["cancelled"], before["cancelled"], "a stream that ended is not a cancel")
        self.assertEqual(after["eos"] + after["length"], before["eos"] + before["length"] + 1)


class HostileShutdown(unittest.TestCase):
    def test_exit_is_bounded_by_the_drain_timeout_whatever_clients_do(self):
        server = ServerProcess(service=SERVICE, server={**BOUNDS, "drain_timeout_seconds": 3, "header_timeout_seconds": 60,
                                                        "keep_alive_timeout_seconds": 60})
        slow = Trickler(server.port, 30, reconnect=False)
        # A client that reads nothing of a long stream, and one holding an idle keep-alive.
        reader = socket.create_connection(("127.0.0.1", server.port))
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        long_stream = json.dumps({"prompt": "x", "max_tokens": 512, "steps": 512, "stream": True,
                                  "logits_eos_inf": True}).encode()
        reader.sendall(post(b"/v1/completions", long_stream))
        idle = socket.create_connection(("127.0.0.1", server.port))
        idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            time.sleep(1.0)
            started = time.time()
            server.process.send_signal(signal.SIGTERM)
            status = server.process.wait(30)
            self.assertEqual(status, 0)
            self.assertLess(time.time() - started, 3 + 3, "exit within the drain timeout and a margin")
        finally:
            slow.close()
            reader.close()
            idle.close()
            server.stop()


class HostileTls(unittest.TestCase):
    def test_connections_that_never_handshake_do_not_stall_tls(self):
        server = ServerProcess(service=SERVICE, server=BOUNDS, tls=self_signed_certificate())
        silent = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(40)]
        try:
            time.sleep(0.3)
            health, seconds = timed(lambda: server.request("GET", "/healthz", timeout=5))
            self.assertEqual(health.status, 200)
            self.assertLess(seconds, 1.0, "a TLS client is served while 40 others never handshake")
            # The handshake deadline (the header deadline, 2 s) closes the silent ones.
            time.sleep(2.5)
            self.assertTrue(closed_by_peer(silent))
        finally:
            for s in silent:
                s.close()
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
