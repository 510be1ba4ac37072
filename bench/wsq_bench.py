#!/usr/bin/env python3
"""wsq_bench.py -- window queries over one WebSocket against the same
session over REST, in the same run (issue 7; bench/README.md, "WebSocket
queries").

Plays a scripted pan/zoom session of --requests window requests (the
--tracks busiest slice tracks, --px pixels wide) against a running store,
twice per transport:

  sequential  one request at a time: the next is sent when the previous one
              is fully answered.  Times from request to first answer (the
              coarse frame on the socket) and to the final answer.  REST,
              the socket and the socket with uncompressed frames take
              turns view by view, so they see the same machine load; CPU
              is the server's (user + system) during each one's requests.
  paced       gestures of 10 requests, one every --pace-ms (a drag or a
              wheel burst); the view moved, so each request supersedes the
              one before (socket: "replace" in group "view"; REST: like a
              browser's AbortController, the request not yet sent is
              dropped and the one in flight aborted).  After each gesture
              the client waits for the answer of its last view: that wait
              (first picture, final picture) is what the user sees.  REST
              and the socket take turns gesture by gesture.

Bytes are the bytes the client read: HTTP headers and bodies (the REST
server does not compress), WebSocket frames (compressed by the query
workers by default; once more with "deflate": false).

  bench/wsq_bench.py --build BUILD --dir PROFILE --db STORE
      [--requests 500] [--tracks 50] [--px 1920] [--pace-ms 40]
"""
import argparse
import http.client
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from wsq_client import WsqClient  # noqa: E402


def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ session

def session(t0, t1, n, seed):
    """n windows of a pan/zoom session, in gestures of 10 steps: from the
    whole profile, zoom in (x0.8 per step, around a random point) down to
    about 1 ms, then back out, a pan (10% per step, left or right) after
    every zoom gesture; again until n.  Every zoom level gets the same
    number of requests."""
    rng = random.Random(seed)
    a, b = t0, t1
    out = []
    zoom_in = True
    while len(out) < n:
        for g in ("zoom", "pan"):
            if g == "zoom":
                if zoom_in and b - a < 2_000_000:
                    zoom_in = False
                elif not zoom_in and b - a >= (t1 - t0) * 0.9:
                    zoom_in = True
                f = 0.8 if zoom_in else 1.25
                focus = rng.random()
            else:
                step = 0.1 if rng.random() < 0.5 else -0.1
            for _ in range(10):
                w = b - a
                if g == "zoom":
                    at = a + w * focus
                    a, b = int(at - (at - a) * f), int(at + (b - at) * f)
                else:
                    d = int(w * step)
                    a, b = a + d, b + d
                w = min(b - a, t1 - t0)
                if a < t0:
                    a, b = t0, t0 + w
                if b > t1:
                    a, b = t1 - w, t1
                out.append((a, b))
    return out[:n]


# ------------------------------------------------------------------ REST

class RestConn:
    """One keep-alive HTTP connection; counts the bytes it reads."""

    def __init__(self, port):
        self.port = port
        self.sock = None
        self.bytes = 0

    def get(self, path):
        if not self.sock:
            self.sock = socket.create_connection(("127.0.0.1", self.port))
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.buf = b""
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: localhost:%d\r\n\r\n" %
                           (path, self.port)).encode())
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        while len(self.buf) < n:
            self._more()
        body, self.buf = self.buf[:n], self.buf[n:]
        self.bytes += len(head) + 4 + n
        return int(head.split(b" ", 2)[1]), body

    def _more(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError("closed")
        self.buf += chunk

    def abort(self):
        if self.sock:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def reset(self):
        if self.sock:
            self.sock.close()
        self.sock = None


def slices_path(tracks, a, b, px):
    return "/api/v1/slices?tracks=%s&start=%d&end=%d&px=%d" % (
        ",".join(tracks), a, b, px)


class RestSequential:
    """One keep-alive connection, one request at a time."""

    def __init__(self, port, tracks, px):
        self.c, self.tracks, self.px = RestConn(port), tracks, px

    def run(self, i, a, b):
        """Returns (first, final) seconds."""
        t = time.monotonic()
        st, _ = self.c.get(slices_path(self.tracks, a, b, self.px))
        if st != 200:
            raise RuntimeError("REST status %d" % st)
        d = time.monotonic() - t
        return d, d

    def close(self):
        self.c.reset()
        return self.c.bytes


class RestPaced:
    """Up to 6 connections, like a browser; a new view drops the request
    not yet sent and aborts the ones in flight."""

    def __init__(self, port, tracks, px, conns=6):
        self.tracks, self.px = tracks, px
        self.cv = threading.Condition()
        self.want = None  # (seq, a, b, t_issued) not yet sent
        self.inflight = {}  # RestConn -> seq
        self.done = {}  # seq -> time answered
        self.stop = False
        self.aborted = set()  # connections shut down: reconnect them
        self.conns = [RestConn(port) for _ in range(conns)]
        self.threads = [threading.Thread(target=self.worker, args=(c,),
                                         daemon=True) for c in self.conns]
        for t in self.threads:
            t.start()

    def issue(self, seq, a, b):
        with self.cv:
            self.want = (seq, a, b)
            for c in self.inflight:
                c.abort()
                self.aborted.add(c)
            self.cv.notify_all()

    def worker(self, c):
        while True:
            with self.cv:
                while not self.stop and not self.want:
                    self.cv.wait()
                if self.stop:
                    return
                seq, a, b = self.want
                self.want = None
                self.inflight[c] = seq
            try:
                st, _ = c.get(slices_path(self.tracks, a, b, self.px))
                ok = st == 200
            except OSError:
                ok = False
            except EOFError:
                ok = False
            with self.cv:
                del self.inflight[c]
                if ok:
                    self.done[seq] = time.monotonic()
                if not ok or c in self.aborted:
                    self.aborted.discard(c)
                    c.reset()
                self.cv.notify_all()

    def wait(self, seq, timeout=300):
        with self.cv:
            if not self.cv.wait_for(lambda: seq in self.done, timeout):
                raise RuntimeError("REST request %d: no answer" % seq)
            return self.done[seq]

    def close(self):
        with self.cv:
            self.stop = True
            self.cv.notify_all()
        for t in self.threads:
            t.join()
        for c in self.conns:
            c.reset()
        return sum(c.bytes for c in self.conns)


def rest_gesture(p, views, g, pace):
    """Plays views[g:g+10] on a RestPaced; returns (first, final, number of
    the earlier views answered)."""
    issued = {}
    for i, (a, b) in enumerate(views[g:g + 10]):
        issued[g + i] = time.monotonic()
        p.issue(g + i, a, b)
        if i < 9:
            time.sleep(pace)
    last = g + len(issued) - 1
    d = p.wait(last) - issued[last]
    return d, d, sum(1 for s in issued if s != last and s in p.done)


# ------------------------------------------------------------------ socket

class WsSession:
    """One socket; a reader thread timestamps every answer."""

    def __init__(self, port):
        self.c = WsqClient(port, timeout=300)
        self.cv = threading.Condition()
        self.first, self.final = {}, {}
        self.errors = []
        self.c.recv()  # hello
        self.thread = threading.Thread(target=self.reader, daemon=True)
        self.thread.start()

    def reader(self):
        """Reads whole messages; of a frame only the header (id, flags), as
        the REST client reads bodies without parsing them."""
        try:
            while True:
                op, data = self.c.recv_raw()
                now = time.monotonic()
                with self.cv:
                    if op == 0x1:
                        m = json.loads(data)
                        if m.get("type") == "result":
                            self.errors.append(m)
                            self.final[m["id"]] = now
                        elif m.get("type") == "stats":
                            self.final[m["id"]] = m
                    else:
                        (rid,) = struct.unpack_from("<I", data, 4)
                        flags = data[9]
                        self.first.setdefault(rid, now)
                        if flags & 1:
                            self.final[rid] = now
                    self.cv.notify_all()
        except (EOFError, OSError):
            pass

    def send(self, obj):
        self.c.send(obj)

    def wait(self, rid, timeout=300):
        with self.cv:
            if not self.cv.wait_for(lambda: rid in self.final, timeout):
                raise RuntimeError("socket request %d: no answer" % rid)
            return self.final[rid]

    def close(self):
        self.c.close()
        self.thread.join()
        return self.c.wire


def ws_request(rid, tracks, a, b, px, **kw):
    m = {"type": "slices", "id": rid, "tracks": tracks, "start": str(a),
         "end": str(b), "px": px}
    m.update(kw)
    return m


class WsSequential:
    """One socket, one request at a time; `deflate`: compressed frames."""

    def __init__(self, port, tracks, px, deflate=True):
        self.s, self.tracks, self.px = WsSession(port), tracks, px
        self.deflate = deflate

    def run(self, i, a, b):
        rid = i
        t = time.monotonic()
        self.s.send(ws_request(rid, self.tracks, a, b, self.px,
                               deflate=self.deflate))
        tf = self.s.wait(rid)
        return self.s.first.get(rid, tf) - t, tf - t

    def close(self):
        if self.s.errors:
            raise RuntimeError("socket errors: %s" % self.s.errors[:3])
        return self.s.close()


def ws_gesture(s, tracks, views, g, px, pace):
    """Plays views[g:g+10] on a WsSession, each replacing the one before;
    returns (first, final, number of the earlier views drawn)."""
    issued = {}
    for i, (a, b) in enumerate(views[g:g + 10]):
        rid = 10 ** 6 + g + i
        issued[rid] = time.monotonic()
        s.send(ws_request(rid, tracks, a, b, px, group="view", replace=True))
        if i < 9:
            time.sleep(pace)
    last = max(issued)
    tf = s.wait(last)
    return (s.first.get(last, tf) - issued[last], tf - issued[last],
            sum(1 for r in issued if r != last and r in s.first))


# ------------------------------------------------------------------ main

def wait_ready(port, proc):
    while proc.poll() is None:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/api/v1/health",
                      headers={"Host": "localhost:%d" % port})
            if json.loads(c.getresponse().read())["state"] == "ready":
                return True
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    return False


def line(name, r):
    ms = lambda v: v * 1000  # noqa: E731
    print("%-20s %9.1f %9.1f %9.1f %9.1f %10.1f %s" % (
        name, ms(pct(r["first"], 50)), ms(pct(r["first"], 99)),
        ms(pct(r["final"], 50)), ms(pct(r["final"], 99)),
        r["bytes"] / 1048576,
        "%8.2f" % r["cpu"] if "cpu" in r else "%8s" % "-"))


def sequential(port, ids, views, px, pid):
    """The three transports take turns, view by view (the order rotates),
    so that all see the same machine load."""
    clients = [("REST", RestSequential(port, ids, px)),
               ("socket", WsSequential(port, ids, px)),
               ("  uncompressed", WsSequential(port, ids, px, False))]
    res = {n: {"first": [], "final": [], "cpu": 0.0} for n, _ in clients}
    for i, (a, b) in enumerate(views):
        for k in range(len(clients)):
            name, c = clients[(i + k) % len(clients)]
            c0 = cpu_s(pid)
            first, final = c.run(i, a, b)
            res[name]["cpu"] += cpu_s(pid) - c0
            res[name]["first"].append(first)
            res[name]["final"].append(final)
    for name, c in clients:
        res[name]["bytes"] = c.close()
    return res


def paced(port, ids, views, px, pace):
    """REST and the socket take turns, gesture by gesture."""
    rest, ws = RestPaced(port, ids, px), WsSession(port)
    res = {n: {"first": [], "final": [], "drawn": 0} for n in ("REST", "socket")}
    for g in range(0, len(views), 10):
        order = [("REST", lambda: rest_gesture(rest, views, g, pace)),
                 ("socket", lambda: ws_gesture(ws, ids, views, g, px, pace))]
        for name, play in order[::-1] if g % 20 else order:
            first, final, drawn = play()
            res[name]["first"].append(first)
            res[name]["final"].append(final)
            res[name]["drawn"] += drawn
    ws.send({"type": "stats", "id": 1})
    res["socket"]["stats"] = ws.wait(1)
    if ws.errors:
        raise RuntimeError("socket errors: %s" % ws.errors[:3])
    res["REST"]["bytes"] = rest.close()
    res["socket"]["bytes"] = ws.close()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--tracks", type=int, default=50)
    ap.add_argument("--px", type=int, default=1920)
    ap.add_argument("--pace-ms", type=float, default=40)
    ap.add_argument("--port", type=int, default=3981)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    server = os.path.join(a.build, "server", "neuron-explorer-server")
    log = open(a.db + ".bench.log", "w")
    proc = subprocess.Popen([server, "--dir", a.dir, "--db", a.db, "--port",
                             str(a.port), "--no-watch"], stdout=log,
                            stderr=log)
    try:
        if not wait_ready(a.port, proc):
            sys.exit("the server did not become ready; see %s.bench.log" %
                     a.db)
        c = RestConn(a.port)
        _, body = c.get("/api/v1/profile")
        prof = json.loads(body)
        _, body = c.get("/api/v1/tracks")
        tracks = [t for t in json.loads(body)["tracks"]
                  if t["kind"] == "slices"]
        tracks.sort(key=lambda t: -t.get("event_count", 0))
        ids = []
        for t in tracks:
            ids += [b["id"] for b in t["base"]]
            if len(ids) >= a.tracks:
                break
        ids = ids[:a.tracks]
        c.reset()
        t0, t1 = int(prof["start"]), int(prof["end"])
        views = session(t0, t1, a.requests, a.seed)
        print("store %s: %d events, profile %.3f s; %d tracks, %d px, "
              "%d requests, pace %g ms" % (
                  a.db, prof.get("event_count", 0), (t1 - t0) / 1e9,
                  len(ids), a.px, len(views), a.pace_ms))
        print("%-20s %9s %9s %9s %9s %10s %8s" % (
            "", "first p50", "first p99", "final p50", "final p99",
            "MiB read", "cpu s"))
        # warm the page cache: one untimed pass over the first views
        warm = RestSequential(a.port, ids, a.px)
        for i, (x, y) in enumerate(views[:50]):
            warm.run(i, x, y)
        warm.close()
        print("sequential (one request at a time, transports taking turns):")
        seq = sequential(a.port, ids, views, a.px, proc.pid)
        for name, r in seq.items():
            line(name, r)
        print("sequential by window width, p50 first / final ms:")
        bands = [("< 100 ms", 0, 10 ** 8), ("100 ms - 10 s", 10 ** 8, 10 ** 10),
                 (">= 10 s", 10 ** 10, 1 << 62)]
        for label, lo, hi in bands:
            idx = [i for i, (x, y) in enumerate(views) if lo <= y - x < hi]
            cells = ["%s %.1f / %.1f" % (name.strip(),
                                         1000 * pct([r["first"][i] for i in idx], 50),
                                         1000 * pct([r["final"][i] for i in idx], 50))
                     for name, r in seq.items()]
            print("  %-14s (%3d views)  %s" % (label, len(idx), ";  ".join(cells)))
        print("paced (gestures of 10 views %g ms apart; the wait for the "
              "last view of each):" % a.pace_ms)
        res = paced(a.port, ids, views, a.px, a.pace_ms / 1000)
        for name, r in res.items():
            line(name, r)
        moving = len(views) - (len(views) + 9) // 10
        for name, r in res.items():
            print("%-20s %d of %d earlier views drawn while moving" % (
                name, r["drawn"], moving))
        st = res["socket"]["stats"]
        print("socket: %d requests cancelled (%d stopped in work, %d phases "
              "before they ran), cancel to stop: mean %.2f ms, max %.2f ms"
              % (st["cancelled"], st["interrupted"], st["skipped"],
                 st["cancel_mean_ms"], st["cancel_max_ms"]))
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
