"""Starts unmask-server on 127.0.0.1 with a free port, for the tests, and talks HTTP to it. The
timeouts are generous: the tests also run against a sanitizer build at -O0."""
import atexit
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

SERVER = os.environ.get("UNMASK_SERVER", "")
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(SOURCE_DIR, "models", "toolcall-llada-3m")
# Every scratch folder of a test run (configurations, logs, keys, certificates) lives here and
# goes when the run ends.
SCRATCH = tempfile.mkdtemp(prefix="unmask-server-tests-")
atexit.register(shutil.rmtree, SCRATCH, True)


def self_signed_certificate():
    """A throwaway certificate and key for 127.0.0.1 (openssl), as (certificate, key) paths."""
    scratch = tempfile.mkdtemp(prefix="tls-", dir=SCRATCH)
    cert, key = os.path.join(scratch, "cert.pem"), os.path.join(scratch, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    return cert, key


def closed_by_peer(sockets, within=2):
    """True when the other end has closed every socket (each read sees the end within `within` s)."""
    for s in sockets:
        s.settimeout(within)
        try:
            if s.recv(1) != b"":
                return False
        except socket.timeout:
            return False
        except OSError:
            pass
    return True


class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


class ServerProcess:
    """unmask-server with a configuration file written from `server` and `service` keys."""

    def __init__(self, args=(), server=None, service=None, env=None, wait_ready=True, tls=None):
        self.dir = tempfile.mkdtemp(prefix="server-", dir=SCRATCH)
        self.log_path = os.path.join(self.dir, "server.log")
        config = {"model": {"weights_path": MODEL}, "service": service or {}, "server": dict(server or {})}
        config["server"].setdefault("log_file", self.log_path)
        if tls:
            config["server"]["tls_certificate"], config["server"]["tls_private_key"] = tls
        self.tls = tls
        self.config_path = os.path.join(self.dir, "service.json")
        with open(self.config_path, "w") as f:
            json.dump(config, f)
        self.process = subprocess.Popen(
            [SERVER, "--config", self.config_path, "--port", "0", "--threads", "2", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **(env or {})})
        line = self._read_line(30)
        if "listening on" not in line:
            self.process.kill()
            error = self.process.stderr.read()
            self.process.wait()
            self.process.stdout.close()
            self.process.stderr.close()
            raise RuntimeError("the server did not start: " + line + error)
        self.port = int(line.rsplit(":", 1)[1])
        if wait_ready:
            self.wait_ready()

    def _read_line(self, timeout):
        result = []
        reader = threading.Thread(target=lambda: result.append(self.process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        return result[0] if result else ""

    def connection(self, timeout=300):
        if self.tls:
            context = ssl.create_default_context(cafile=self.tls[0])
            context.check_hostname = False
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=context)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=300):
        connection = self.connection(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return Response(response.status, dict(response.getheaders()), response.read())
        finally:
            connection.close()

    def post(self, path, body, headers=None, timeout=300):
        return self.request("POST", path, body, {"Content-Type": "application/json", **(headers or {})}, timeout)

    def metric(self, name):
        """The value of a metric line that starts with `name` (labels included)."""
        for line in self.request("GET", "/metrics").body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def wait_ready(self, timeout=300):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.request("GET", "/readyz").status == 200:
                return
            time.sleep(0.05)
        raise RuntimeError("the server did not turn ready")

    def raw(self, data, read_timeout=5):
        """Sends bytes on a fresh connection and returns what comes back until the server closes it."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=read_timeout) as s:
            s.sendall(data)
            chunks = []
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
            except socket.timeout:
                pass
            return b"".join(chunks)

    def stop(self, sig=signal.SIGTERM, timeout=300):
        """Signals the server and returns its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.process.stdout.close()
            self.process.stderr.close()

    def log(self):
        with open(self.log_path) as f:
            return f.read()


def sse_events(body):
    """The data payloads of a text/event-stream body, checking its framing."""
    text = body.decode()
    assert text.endswith("\n\n"), "events end with a blank line"
    events = []
    for block in text.split("\n\n")[:-1]:
        assert block.startswith("data: "), "every event is a data line: %r" % block
        events.append(block[len("data: "):])
    return events
