"""nextest.py -- what the Python integration tests share: TAP checks, the
programs under test, a free port, a keep-alive HTTP client, the server
started on a profile, and the main() that runs a test in a temporary
directory.  Needs NEX_BUILDDIR and NEX_SRCDIR (set by make check).
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import nexdb  # noqa: F401 (connections read the store's slice table)

BUILD = os.environ["NEX_BUILDDIR"]
SRC = os.environ["NEX_SRCDIR"]
SERVER = os.path.join(BUILD, "server", "neuron-explorer-server")
SYNTH = os.path.join(BUILD, "tools", "neuron-explorer-synth")

n_tests = 0
n_failed = 0


def check(cond, what, detail=""):
    """Prints one TAP line; on failure, up to 25 lines of detail.  Returns
    cond."""
    global n_tests, n_failed
    n_tests += 1
    print(("ok %d - " if cond else "not ok %d - ") % n_tests + what)
    if not cond:
        n_failed += 1
        if detail:
            for line in str(detail).splitlines()[:25]:
                print("#   " + line)
    sys.stdout.flush()
    return cond


def skip(what, why):
    """Prints one TAP skip line (counted as a test)."""
    global n_tests
    n_tests += 1
    print("ok %d - %s # SKIP %s" % (n_tests, what, why))
    sys.stdout.flush()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Client:
    """HTTP on one keep-alive connection, Host: localhost:PORT."""

    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def req(self, method, path, body=None, headers=None):
        h = {"Host": "localhost:%d" % self.port}
        h.update(headers or {})
        try:
            self.conn.request(method, path, body=body, headers=h)
            r = self.conn.getresponse()
            data = r.read()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                   timeout=30)
            raise
        if r.getheader("Connection", "").lower() == "close":
            self.conn.close()
        return r.status, r, data

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def json(self, path, status=200):
        st, _, data = self.get(path)
        if st != status:
            raise AssertionError("%s: status %d, body %s" % (path, st, data[:300]))
        return json.loads(data)


class Server:
    """neuron-explorer-server on a free port, serving `web` (default: the
    source tree's web/) with the extra options `args`; its stderr goes to
    err_path."""

    def __init__(self, tmp, prof, store, web=None, args=()):
        self.port = free_port()
        self.err_path = os.path.join(tmp, "server.err")
        self.proc = subprocess.Popen(
            [SERVER, "--dir", prof, "--db", store, "--port", str(self.port),
             "--web-root", web or os.path.join(SRC, "web")] + list(args),
            stdout=subprocess.DEVNULL, stderr=open(self.err_path, "w"))

    def health(self, timeout=5):
        """The state /api/v1/health reports, None when it does not answer."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request("GET", "/api/v1/health",
                      headers={"Host": "localhost:%d" % self.port})
            r = c.getresponse()
            body = r.read()
            return json.loads(body).get("state") if r.status == 200 else None
        except (OSError, ValueError, http.client.HTTPException):
            return None
        finally:
            c.close()

    def wait_ready(self, seconds=120):
        """Polls /health until the load ends: "ready", "failed", or
        "timeout" (also when the server exits)."""
        deadline = time.time() + seconds
        while time.time() < deadline and self.proc.poll() is None:
            state = self.health(2)
            if state in ("ready", "failed"):
                return state
            time.sleep(0.05)
        return "timeout"

    def stop(self, timeout):
        """Sends SIGTERM; returns the exit status, or "hung" after
        `timeout` seconds."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return "hung"


def main(prefix, run):
    """Runs run(tmp) in a new temporary directory; run returns the Server it
    started (or None), which is killed if still running.  Prints the TAP plan
    and returns the exit status."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    server = None
    try:
        server = run(tmp)
    finally:
        if server and server.proc.poll() is None:
            server.proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..%d" % n_tests)
    return 1 if n_failed else 0
