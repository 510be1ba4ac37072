#!/usr/bin/env python3
"""wsq_test.py -- queries over the WebSocket end to end (prints TAP).

Generates a profile, starts neuron-explorer-server and checks, with the
client of wsq_client.py: request ids, coarse-then-final order, the binary
window frames decoded against the REST answers for the same windows, names
sent once per connection, search/event/device-profile against REST,
errors, cancel by id and by group replacement (a cancelled request gets no
answer and its query stops), many concurrent clients, and a client that
stops reading (the server bounds what it keeps and serves the others).
Needs NEX_BUILDDIR and NEX_SRCDIR (set by make check).
"""
import http.client
import json
import math
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.environ["NEX_BUILDDIR"]
SRC = os.environ["NEX_SRCDIR"]
SERVER = os.path.join(BUILD, "server", "neuron-explorer-server")
SYNTH = os.path.join(BUILD, "tools", "neuron-explorer-synth")
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from wsq_client import WsqClient, frame_rows, rest_rows  # noqa: E402
import nextest  # noqa: E402
from nextest import check, free_port  # noqa: E402


def note(text):
    print("# " + text)
    sys.stdout.flush()


class Rest:
    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get(self, path):
        self.conn.request("GET", path,
                          headers={"Host": "localhost:%d" % self.port})
        r = self.conn.getresponse()
        return r.status, json.loads(r.read())


def window_path(kind, tracks, start, end, px):
    return "/api/v1/%s?tracks=%s&start=%d&end=%d&px=%d" % (
        kind, ",".join(tracks), start, end, px)


def same_doubles(a, b):
    """REST writes doubles with 15 significant digits, null for NaN."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is None or y is None:
            if not ((x is None or math.isnan(x)) and
                    (y is None or math.isnan(y))):
                return False
        elif x != y and abs(x - y) > 1e-13 * max(abs(x), abs(y)):
            return False
    return True


def same_rows(frame, rest, kind, names, rest_names):
    """Compares a decoded frame with the REST answer: every row, names by
    their text.  Returns "" or a description of the first difference."""
    got, want = frame_rows(frame), rest_rows(rest, kind)
    if len(got) != len(want):
        return "%d tracks, REST %d" % (len(got), len(want))
    for g, w in zip(got, want):
        if g["track"] != w["track"]:
            return "track %s, REST %s" % (g["track"], w["track"])
        groups = "lanes" if kind == "slices" else "series"
        if kind == "slices" and g["level"] != w["level"]:
            return "track %s level %d, REST %d" % (g["track"], g["level"],
                                                   w["level"])
        if kind == "counters" and g["source"] != w["source"]:
            return "track %s source" % g["track"]
        if len(g[groups]) != len(w[groups]):
            return "track %s: %d %s, REST %d" % (
                g["track"], len(g[groups]), groups, len(w[groups]))
        for a, b in zip(g[groups], w[groups]):
            for k in b:
                if k in ("min", "max", "last"):
                    ok = same_doubles(a[k], b[k])
                elif k in ("name", "grp"):
                    ok = [names.get(v, "?") if v else "" for v in a[k]] == \
                        [rest_names.get(str(v), "?") if v else "" for v in b[k]]
                else:
                    ok = a[k] == b[k]
                if not ok:
                    return "track %s %s %s: field %s differs" % (
                        g["track"], groups, a.get("lane", a.get("series")), k)
    return ""


class Conn(WsqClient):
    """A client that sorts what it reads: text messages by type, answers by
    request id, in arrival order."""

    def __init__(self, port, **kw):
        super().__init__(port, **kw)
        self.log = []  # (kind, msg) of every answer, in order
        kind, msg = self.recv()
        self.hello = msg if kind == "text" else None

    def read(self):
        kind, msg = self.recv()
        self.log.append((kind, msg))
        return kind, msg

    def answers(self, rid):
        return [(k, m) for k, m in self.log if m.get("id") == rid]

    def until_final(self, rid, limit=100000):
        """Reads until request rid's last answer; returns its answers."""
        for _ in range(limit):
            kind, msg = self.read()
            if msg.get("id") == rid and (kind == "text" or msg["final"]):
                if kind == "text" and msg.get("type") == "stats":
                    continue
                return self.answers(rid)
        raise AssertionError("no final answer for %d" % rid)

    def stats(self, rid):
        self.send({"type": "stats", "id": rid})
        for _ in range(100000):
            kind, msg = self.read()
            if kind == "text" and msg.get("type") == "stats" and \
                    msg["id"] == rid:
                return msg
        raise AssertionError("no stats answer")

    def wait_idle(self, rid0):
        """Asks for stats until no job is queued or running; returns them."""
        rid = rid0
        while True:
            st = self.stats(rid)
            if st["queued"] == 0 and st["running"] == 0 and \
                    st["connection"]["jobs"] == 0:
                return st
            rid += 1


def start_server(prof, store, port, tmp):
    err = open(os.path.join(tmp, "server.err"), "w")
    return subprocess.Popen([SERVER, "--dir", prof, "--db", store, "--port",
                             str(port), "--web-root",
                             os.path.join(SRC, "web"), "--no-watch"],
                            stdout=err, stderr=err)


def wait_ready(port, proc, seconds=300):
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None:
        try:
            st, body = Rest(port).get("/api/v1/health")
            if body.get("state") in ("ready", "failed"):
                return body["state"]
        except (OSError, ValueError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    return "timeout"


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def check_memory_caps(prof, store, tmp, slices, t0, t1, frame_len):
    """The memory caps of unread answers (server/serve/wsq_out.h), made
    small through NEX_WSQ_CONN_BYTES and NEX_WSQ_TOTAL_BYTES: three clients
    that do not read get their oldest answers dropped, each dropped final
    answer becomes a 503 "dropped" error, the server's unread answers stay
    within the total cap plus one answer, a reading client is served
    meanwhile, and nothing is left once they close."""
    # a connection's cap of two and a half answers: the third one queued
    # passes it, so the oldest is dropped (at a whole number of answers the
    # connection would stall on reaching its cap and drop nothing)
    conn_cap, total_cap = 5 * frame_len // 2, 5 * frame_len
    port = free_port()
    env = dict(os.environ, NEX_WSQ_CONN_BYTES=str(conn_cap),
               NEX_WSQ_TOTAL_BYTES=str(total_cap))
    err = open(os.path.join(tmp, "server-caps.err"), "w")
    server = subprocess.Popen([SERVER, "--dir", prof, "--db", store, "--port",
                               str(port), "--web-root",
                               os.path.join(SRC, "web"), "--no-watch"],
                              stdout=err, stderr=err, env=env)
    try:
        if not check(wait_ready(port, server) == "ready",
                     "a server with small memory caps is ready"):
            return
        watch = Conn(port)
        st = watch.stats(1)
        check(st["waiting_cap"] == total_cap and
              st["connection"]["waiting_cap"] == conn_cap,
              "the caps come from the environment", st)
        # each hog asks for more than the kernel's socket buffers hold (up
        # to 4 MiB sent, a small window received) plus its cap: answers
        # must drop
        n = 16
        hogs = []
        for k in range(3):
            h = WsqClient(port, rcvbuf=4096)
            for i in range(n):
                h.send({"type": "slices", "id": i, "tracks": slices,
                        "start": t0, "end": t1, "px": 10000,
                        "progressive": False})
            hogs.append(h)
        # until every hog is stalled (none runs) and answers were dropped
        # (a generous deadline: the machine may be busy with other tests)
        rid, most, begin = 2, 0, time.time()
        while time.time() < begin + 240:
            st = watch.stats(rid)
            rid += 1
            most = max(most, st["waiting_bytes"])
            if st["running"] == 0 and st["dropped"] > 0:
                break
        note("the clients that do not read were stalled after %.1f s" %
             (time.time() - begin))
        check(most <= total_cap + frame_len, "unread answers of every "
              "connection stay within the total cap plus one answer "
              "(%d <= %d + %d)" % (most, total_cap, frame_len), st)
        watch.send({"type": "slices", "id": 100, "tracks": slices,
                    "start": t0, "end": t1, "px": 1000})
        fin = [m for _, m in watch.until_final(100) if m.get("final")]
        check(len(fin) == 1, "meanwhile a reading client is answered")
        outcomes = [{} for _ in hogs]

        def read_all(h, outcome):  # frames: id and flags only
            h.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
            try:
                while len(outcome) < n:
                    op, data = h.recv_raw()
                    if op == 0x2 and data[9] & 1:
                        i = struct.unpack_from("<I", data, 4)[0]
                        outcome.setdefault(i, []).append("answer")
                    elif op == 0x1:
                        m = json.loads(data)
                        if m.get("status") == 503 and \
                                m["data"].get("error") == "dropped":
                            outcome.setdefault(m["id"], []).append("dropped")
            except (OSError, EOFError) as ex:
                outcome["error"] = [repr(ex)]

        # they all read at once: one left waiting unread for a minute
        # would be closed (pings it cannot answer)
        readers = [threading.Thread(target=read_all, args=(h, o))
                   for h, o in zip(hogs, outcomes)]
        for t in readers:
            t.start()
        t_read = time.time()
        for t in readers:
            t.join(120)
        note("they read everything in %.1f s" % (time.time() - t_read))
        dropped, bad = 0, []
        for k, outcome in enumerate(outcomes):
            kinds = [outcome.get(i, []) for i in range(n)]
            gone = [i for i in range(n) if kinds[i] == ["dropped"]]
            dropped += len(gone)
            if "error" in outcome or any(len(x) != 1 for x in kinds):
                bad.append("client %d: %r" % (k, outcome))
        st = watch.stats(rid)
        check(not bad and dropped == st["dropped"] and dropped > 0,
              "each request of the clients that did not read has one "
              "outcome, its answer or a 503 dropped error (%d dropped)" %
              dropped, "\n".join(bad) or st)
        for h in hogs:
            h.close()
        st = watch.wait_idle(rid + 1)
        check(st["waiting_bytes"] == st["connection"]["waiting_bytes"],
              "once they closed, only the reading client's answers are "
              "counted", st)
        watch.close()
    finally:
        server.kill()
        server.wait()


def run(tmp):
    prof = os.path.join(tmp, "profile")
    r = subprocess.run([SYNTH, "--out", prof, "--seed", "11", "--instances",
                        "1", "--processes", "2", "--cores", "2",
                        "--target-events", "300000", "--device-profile",
                        "model", "--device-instructions", "300"],
                       capture_output=True)
    if not check(r.returncode == 0, "generator writes a profile", r.stderr):
        return None
    port = free_port()
    server = start_server(prof, os.path.join(tmp, "store.db"), port, tmp)
    if not check(wait_ready(port, server) == "ready", "server ready"):
        return server
    rest = Rest(port)
    _, profile = rest.get("/api/v1/profile")
    _, tracks = rest.get("/api/v1/tracks")
    t0, t1 = int(profile["start"]), int(profile["end"])
    slices = [b["id"] for t in tracks["tracks"] if t["kind"] == "slices"
              for b in t["base"]]
    counters = [b["id"] for t in tracks["tracks"] if t["kind"] == "counter"
                for b in t["base"]]
    span = t1 - t0

    c = Conn(port)
    check(c.hello and c.hello.get("type") == "hello" and
          c.hello.get("state") == "ready", "hello first on a new connection",
          c.hello)

    # -- progressive slices: coarse then final, both equal to REST ------
    # The two phases run side by side: when the final answer is ready
    # before the coarse one is sent, it replaces it (nothing stale is
    # sent; the server counts it as superseded).  So a request shows both
    # frames only when the coarse phase wins, as it does on an idle
    # machine; each try is a new connection (names go once per
    # connection, and the checks below need the first ones).
    for tries in range(1, 41):
        if tries > 1:
            c.close()
            c = Conn(port)
        c.send({"type": "slices", "id": 1, "tracks": slices, "start": str(t0),
                "end": str(t1), "px": 2000})
        got = c.until_final(1)
        kinds = [("coarse" if m["coarse"] else "final") for k, m in got
                 if k == "binary"]
        if kinds != ["final"]:
            break
    check(kinds == ["coarse", "final"] and got[-1][1]["final"] and
          not got[0][1]["final"] and all(m["id"] == 1 for _, m in got),
          "slices: a coarse frame, then the final one, both with the id "
          "(try %d)" % tries,
          [(k, m.get("coarse"), m.get("final")) for k, m in got])
    coarse, final = got[0][1], got[-1][1]
    _, ra = rest.get(window_path("slices", slices, t0, t1, 2000))
    diff = same_rows(final, ra, "slices", c.names, ra["names"])
    check(not diff and final["px"] == 2000 and
          final["resolution_ns"] == ra["resolution_ns"],
          "slices: the final frame has the REST answer's rows and names",
          diff)
    _, rc_ = rest.get(window_path("slices", slices, t0, t1, 2000 // 16))
    diff = same_rows(coarse, rc_, "slices", c.names, rc_["names"])
    check(not diff and coarse["px"] == 125 and
          coarse["resolution_ns"] == rc_["resolution_ns"],
          "slices: the coarse frame is the REST answer at px/16", diff)
    check(sum(len(l["abs_ts"]) for t in coarse["tracks"] for l in t["lanes"])
          < sum(len(l["abs_ts"]) for t in final["tracks"]
                for l in t["lanes"]), "slices: the coarse frame is smaller")
    check(len(coarse["new_names"]) > 0 and
          not set(final["new_names"]) & set(coarse["new_names"]),
          "names: the final frame does not repeat the coarse one's names")

    # -- the same window again: no names sent twice --------------------
    c.send({"type": "slices", "id": 2, "tracks": slices, "start": t0,
            "end": t1, "px": 2000})
    got = c.until_final(2)
    used = {v for t in got[-1][1]["tracks"] for l in t["lanes"]
            for v in l["name"] + l["grp"] if v}
    check(all(not m["new_names"] for _, m in got) and used <= set(c.names),
          "names: sent once per connection (none in a repeated answer)")

    # -- non-progressive, zoomed window, counters ---------------------
    w0, w1 = t0 + span // 3, t0 + span // 3 + span // 50
    c.send({"type": "slices", "id": 3, "tracks": slices, "start": w0,
            "end": w1, "px": 1500, "progressive": False})
    got = c.until_final(3)
    _, ra = rest.get(window_path("slices", slices, w0, w1, 1500))
    check(len(got) == 1 and got[0][1]["final"] and not got[0][1]["coarse"] and
          not same_rows(got[0][1], ra, "slices", c.names, ra["names"]),
          "slices, progressive false: one final frame equal to REST")
    c.send({"type": "slices", "id": 40, "tracks": slices, "start": w0,
            "end": w1, "px": 1500, "progressive": False, "deflate": False})
    raw = c.until_final(40)[-1][1]
    check(got[0][1]["deflated"] and not raw["deflated"] and
          raw["bytes"] > got[0][1]["bytes"] and
          not same_rows(raw, ra, "slices", c.names, ra["names"]),
          "deflate: frames are compressed unless asked not to, same rows "
          "(%d bytes, %d uncompressed)" % (got[0][1]["bytes"], raw["bytes"]))
    c.send({"type": "counters", "id": 4, "tracks": counters, "start": t0,
            "end": t1, "px": 1024})
    got = c.until_final(4)
    _, ra = rest.get(window_path("counters", counters, t0, t1, 1024))
    diff = same_rows(got[-1][1], ra, "counters", c.names, {})
    check(not diff and got[-1][1]["final"],
          "counters: the final frame has the REST answer's rows", diff)
    c.send({"type": "counters", "id": 5, "tracks": counters, "start": w0,
            "end": w1, "px": 300})
    got = c.until_final(5)
    _, ra = rest.get(window_path("counters", counters, w0, w1, 300))
    diff = same_rows(got[-1][1], ra, "counters", c.names, {})
    check(not diff, "counters: a zoomed window equal to REST", diff)

    # -- search, event, device-profile: the REST bodies ----------------
    c.send({"type": "search", "id": 6, "q": "nc_exec_running",
            "per_page": 5})
    got = c.until_final(6)
    _, ra = rest.get("/api/v1/search?q=nc_exec_running&per_page=5")
    check(got[-1][1]["status"] == 200 and got[-1][1]["data"] == ra and
          ra["total"] > 0, "search: the REST answer")
    key = ra["items"][0]["key"]
    c.send({"type": "event", "id": 7, "key": key})
    c.send({"type": "device-profile", "id": 8, "key": key})
    c.until_final(7)
    if not c.answers(8):
        c.until_final(8)
    _, ev = rest.get("/api/v1/events/" + key)
    st, dp = rest.get("/api/v1/events/%s/device-profile" % key)
    check(c.answers(7)[-1][1]["data"] == ev, "event: the REST answer")
    check(st == 200 and c.answers(8)[-1][1]["data"] == dp and
          c.answers(8)[-1][1]["status"] == 200,
          "device-profile: the REST drill-down answer")

    # -- errors --------------------------------------------------------
    c.send({"type": "slices", "id": 9, "tracks": slices, "start": t0,
            "end": t1, "px": 0})
    e = c.until_final(9)[-1][1]
    check(e["status"] == 400 and e["data"]["error"] == "bad_parameter" and
          "px" in e["data"]["detail"], "error: px out of range names 'px'", e)
    c.send({"type": "slices", "id": 10, "tracks": ["999999"], "start": t0,
            "end": t1, "px": 100})
    e = c.until_final(10)[-1][1]
    st, ra = rest.get(window_path("slices", ["999999"], t0, t1, 100))
    check(e["status"] == st == 404 and e["data"] == ra,
          "error: an unknown track as REST says it", e)
    c.send({"type": "slices", "id": 11, "tracks": counters[:1], "start": t0,
            "end": t1, "px": 100})
    e = c.until_final(11)[-1][1]
    check(e["status"] == 400 and "counter" in e["data"]["detail"],
          "error: a counter track asked as slices", e)
    c.send({"type": "event", "id": 12, "key": "1:0:5/x"})
    e = c.until_final(12)[-1][1]
    check(e["status"] == 400 and "key" in e["data"]["detail"],
          "error: a malformed event key", e)
    c.send_raw(0x1, b"{not json")
    k, e = c.read()
    check(k == "text" and e.get("id", 0) is None and e["status"] == 400,
          "error: malformed JSON answered with id null", e)
    c.send({"type": "slices", "tracks": slices})
    k, e = c.read()
    check(e.get("id", 0) is None and "'id'" in e["data"]["detail"],
          "error: a request without id", e)
    c.send({"type": "frobnicate", "id": 13})
    e = c.until_final(13)[-1][1]
    check(e["status"] == 400 and "frobnicate" in e["data"]["detail"],
          "error: an unknown type", e)
    c.send_raw(0x2, b"\x00\x01")
    k, e = c.read()
    check(e.get("id", 0) is None and "binary" in e["data"]["detail"],
          "error: a binary request", e)

    # a heavy request: every slice track ten times, fine resolution
    heavy = (slices * 11)[:200]

    def heavy_req(rid, **kw):
        m = {"type": "slices", "id": rid, "tracks": heavy, "start": t0,
             "end": t1, "px": 10000, "progressive": False}
        m.update(kw)
        return m

    c.send(heavy_req(20))
    c.send(heavy_req(20))
    c.until_final(20)  # the refusal
    e = c.until_final(20)  # the frame
    dup = [m for k, m in e if k == "text"]
    check(len(dup) == 1 and dup[0]["data"]["error"] == "duplicate_id" and
          len([m for k, m in e if k == "binary"]) == 1,
          "error: an id still in work is refused, the first answered",
          [(k, m.get("status")) for k, m in e])

    # -- cancel by id: the query stops, no answer ---------------------
    st0 = c.wait_idle(1000)
    c.send(heavy_req(21))
    rid = 1100
    while c.stats(rid)["running"] == 0:
        rid += 1
    c.send({"type": "cancel", "ids": [21]})
    st1 = c.wait_idle(1200)
    check(not c.answers(21), "cancel: no answer for a cancelled request")
    check(st1["cancelled"] - st0["cancelled"] == 1 and
          st1["interrupted"] - st0["interrupted"] == 1 and
          st1["answers"] == st0["answers"],
          "cancel: the running query was interrupted, not finished",
          (st0, st1))
    note("cancel latency (flag to query stopped): max %.3f ms, mean %.3f ms"
         % (st1["cancel_max_ms"], st1["cancel_mean_ms"]))

    # cancel right after the request
    c.send(heavy_req(22))
    c.send({"type": "cancel", "ids": [22]})
    st2 = c.wait_idle(1300)
    check(not c.answers(22) and st2["cancelled"] - st1["cancelled"] == 1 and
          (st2["interrupted"] - st1["interrupted"]) +
          (st2["skipped"] - st1["skipped"]) == 1,
          "cancel at once: no answer, the work skipped or stopped",
          (st1, st2))

    # -- replace: a new request of the group cancels the older ones ----
    c.send(heavy_req(30, group="view"))
    c.send(heavy_req(31, group="view"))
    c.send({"type": "slices", "id": 32, "tracks": slices, "start": w0,
            "end": w1, "px": 800, "group": "view", "replace": True})
    c.send({"type": "slices", "id": 33, "tracks": slices, "start": w0,
            "end": w1, "px": 800, "group": "other"})
    c.until_final(32)
    if not c.answers(33) or not c.answers(33)[-1][1].get("final"):
        c.until_final(33)
    st3 = c.wait_idle(1400)
    check(not c.answers(30) and not c.answers(31) and
          c.answers(32)[-1][1]["final"] and c.answers(33)[-1][1]["final"],
          "replace: the group's older requests get no answer, the others do")
    check(st3["cancelled"] - st2["cancelled"] == 2,
          "replace: two requests cancelled", (st2, st3))
    c.send(heavy_req(34, group="g2"))
    c.send({"type": "cancel", "group": "g2"})
    st4 = c.wait_idle(1500)
    check(not c.answers(34) and st4["cancelled"] - st3["cancelled"] == 1,
          "cancel by group: no answer")

    # -- ordering of many requests on one connection -------------------
    rng = random.Random(5)
    windows = []
    for i in range(24):
        a = t0 + rng.randrange(span)
        windows.append((a, a + rng.randrange(1000, span // 4), 256 + 64 * i))
    for i, (a, b, px) in enumerate(windows):
        c.send({"type": "slices", "id": 100 + i, "tracks": slices,
                "start": a, "end": b, "px": px})
    for i in range(24):
        if not any(m.get("final") for _, m in c.answers(100 + i)):
            c.until_final(100 + i)
    bad = []
    for i, (a, b, px) in enumerate(windows):
        got = c.answers(100 + i)
        flags = [(m["coarse"], m["final"]) for _, m in got]
        if flags not in ([(True, False), (False, True)], [(False, True)]):
            bad.append((100 + i, flags))
    check(not bad, "order: per request a coarse frame (or none) before "
          "exactly one final frame", bad)
    _, ra = rest.get(window_path("slices", slices, *windows[7]))
    fin = [m for _, m in c.answers(107) if m["final"]][0]
    check(not same_rows(fin, ra, "slices", c.names, ra["names"]),
          "order: a final frame among many equals REST")
    c.close()

    # -- many concurrent clients ---------------------------------------
    n_clients, per_client = 16, 8
    plan = []
    for i in range(n_clients * per_client):
        a = t0 + rng.randrange(span)
        kind = "counters" if i % 4 == 3 else "slices"
        plan.append((kind, a, a + rng.randrange(10000, span // 2),
                     rng.choice([300, 700, 1024, 2000])))
    expect = []
    for kind, a, b, px in plan:
        ids = counters if kind == "counters" else slices
        _, ra = rest.get(window_path(kind, ids, a, b, px))
        expect.append(ra)
    errors = []

    def client(k):
        try:
            cc = Conn(port)
            mine = range(k * per_client, (k + 1) * per_client)
            for i in mine:
                kind, a, b, px = plan[i]
                cc.send({"type": kind, "id": i, "start": a, "end": b,
                         "px": px, "tracks": counters if kind == "counters"
                         else slices})
            for i in mine:
                if not any(m.get("final") for _, m in cc.answers(i)):
                    cc.until_final(i)
            for i in mine:
                fin = [m for _, m in cc.answers(i) if m.get("final")]
                diff = "%d final frames" % len(fin) if len(fin) != 1 else \
                    same_rows(fin[0], expect[i], plan[i][0], cc.names,
                              expect[i].get("names", {}))
                if diff:
                    errors.append("client %d request %d: %s" % (k, i, diff))
            if len(cc.log) != len(mine) + sum(
                    1 for _, m in cc.log if m.get("coarse")):
                errors.append("client %d: unexpected messages" % k)
            cc.close()
        except Exception as ex:  # noqa: BLE001 -- reported as a failure
            errors.append("client %d: %r" % (k, ex))

    threads = [threading.Thread(target=client, args=(k,))
               for k in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    check(not errors and not any(t.is_alive() for t in threads),
          "%d concurrent clients: every answer has its id and the REST rows"
          % n_clients, "\n".join(errors[:10]))

    # the size of the answer the clients that stop reading ask for
    c = WsqClient(port)
    c.send({"type": "slices", "id": 1, "tracks": slices, "start": t0,
            "end": t1, "px": 10000, "progressive": False})
    op, data = c.recv_raw()
    while op != 0x2:
        op, data = c.recv_raw()
    frame_len = len(data)
    c.close()

    # -- a client that stops reading -----------------------------------
    watch = Conn(port)
    r0 = watch.stats(8000)["requests"]
    before = rss_kib(server.pid)
    slow = WsqClient(port)
    slow.settimeout(5)
    sent = 0
    try:
        for i in range(400):
            slow.send({"type": "slices", "id": 5000 + i, "tracks": slices,
                       "start": t0, "end": t1, "px": 10000})
            sent += 1
    except OSError:
        pass
    # wait until its work is parked: answers wait unread, nothing runs
    rid = 8001
    while True:
        st = watch.stats(rid)
        rid += 1
        if st["running"] == 0 and st["pauses"] >= 1:
            break
    taken = st["requests"] - r0
    peak = rss_kib(server.pid)
    t_start = time.time()
    ok = True
    for i in range(6):
        kind, a, b, px = plan[i]
        watch.send({"type": kind, "id": i, "start": a, "end": b, "px": px,
                    "tracks": counters if kind == "counters" else slices})
        fin = [m for _, m in watch.until_final(i) if m.get("final")]
        ok = ok and len(fin) == 1 and not same_rows(
            fin[0], expect[i], kind, watch.names, expect[i].get("names", {}))
    waited = time.time() - t_start
    check(ok, "a client that stops reading: another client is answered, "
          "right (%.2f s for 6 requests)" % waited)
    check(taken < sent, "a client that stops reading: the server stops "
          "reading it (%d of %d requests read)" % (taken, sent), st)
    # Under AddressSanitizer freed memory sits in its quarantine, so RSS
    # says nothing about the server's own bound there.
    asan = "ASAN_OPTIONS" in os.environ
    check(asan or peak - before < 200 * 1024,
          "a client that stops reading: memory bounded (RSS +%d MiB%s)" %
          ((peak - before) // 1024,
           "; the bound is not checked under AddressSanitizer" if asan else ""))
    slow.close()
    st = watch.wait_idle(9500)
    check(st["queued"] == 0 and server.poll() is None,
          "after it closes: its work is dropped, the server runs", st)
    watch.close()
    check_request_flood(port, server.pid, slices, t0, t1)
    check_memory_caps(prof, os.path.join(tmp, "store.db"), tmp, slices, t0,
                      t1, frame_len)
    check_stale_generation(tmp)
    return server


def check_request_flood(port, pid, slices, t0, t1):
    """A client sends 10,000 requests at once and reads nothing until it
    has sent them all: the server never holds more than WSQ_MAX_JOBS (64)
    of them in work -- it stops reading the connection instead (the
    "pauses" count), so the rest wait in the socket buffers -- and answers
    each exactly once.  Stats requests among them report the connection's
    jobs at the moment the server read them."""
    n, every = 10000, 250
    hog = Conn(port)
    hog.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    msgs = []
    for i in range(n):
        msgs.append({"type": "event", "id": i, "key": "%s:0:%d" %
                     (slices[i % len(slices)], t0 + i)})
        if i % every == every - 1:
            msgs.append({"type": "stats", "id": 100000 + i})
    frames = []
    for m in msgs:  # masked with zeros: the payload as is
        p = json.dumps(m).encode()
        head = bytes([0x81, 0x80 | len(p)]) if len(p) < 126 else \
            bytes([0x81, 0x80 | 126]) + struct.pack("!H", len(p))
        frames.append(head + b"\0\0\0\0" + p)
    wire = b"".join(frames)
    rss0 = rss_kib(pid)
    hog.settimeout(30)
    hog.sock.sendall(wire)
    rss1 = rss_kib(pid)
    other = Conn(port)
    other.send({"type": "slices", "id": 1, "tracks": slices[:2],
                "start": str(t0), "end": str(t1), "px": 500})
    k, m = other.until_final(1)[-1]
    check(k == "binary" and m["final"],
          "flood: another client is answered meanwhile", (k, m))
    other.close()
    results, stats = {}, []
    while len(results) < n or len(stats) < n // every:
        kind, m = hog.recv()
        if kind == "text" and m.get("type") == "stats":
            stats.append(m)
        elif kind == "text":
            results[m["id"]] = results.get(m["id"], 0) + 1
    hog.close()
    jobs = max(m["connection"]["jobs"] for m in stats)
    pauses = stats[-1]["pauses"] - stats[0]["pauses"]
    note("flood: %d requests sent at once; the connection's jobs at the "
         "stats requests: max %d; not read %d times; RSS %d -> %d KiB" %
         (n, jobs, pauses, rss0, rss1))
    check(len(results) == n and set(results.values()) == {1},
          "flood: each of the 10,000 requests answered exactly once",
          (len(results), set(results.values())))
    check(jobs <= 64 and pauses > 0,
          "flood: at most 64 requests in work on the connection, which was "
          "not read meanwhile", (jobs, pauses))
    check(rss1 - rss0 < 64 * 1024,
          "flood: the server's RSS grew less than 64 MiB", (rss0, rss1))


def check_stale_generation(tmp):
    """Window and lookup requests carry the store generation: after a real
    re-ingest (the watcher sees a changed capture file), a request made
    with the old generation gets a 409 stale answer naming the new one,
    never the rows of what its track ids mean now."""
    tmp = os.path.join(tmp, "gen")
    prof = os.path.join(tmp, "profile")
    os.makedirs(tmp)
    r = subprocess.run([SYNTH, "--out", prof, "--seed", "5", "--instances",
                        "1", "--processes", "1", "--cores", "2", "--steps",
                        "400"], capture_output=True)
    port = free_port()
    err = open(os.path.join(tmp, "server.err"), "w")
    server = subprocess.Popen([SERVER, "--dir", prof, "--db",
                               os.path.join(tmp, "store.db"), "--port",
                               str(port), "--web-root",
                               os.path.join(SRC, "web")],
                              stdout=err, stderr=err)
    try:
        if not check(r.returncode == 0 and
                     wait_ready(port, server) == "ready",
                     "gen: a server with the watcher is ready"):
            return
        _, tracks = Rest(port).get("/api/v1/tracks")
        tid = [b["id"] for t in tracks["tracks"] if t["kind"] == "slices"
               for b in t["base"]][0]
        c = Conn(port)
        gen0 = c.hello.get("generation")
        win = {"type": "slices", "tracks": [tid], "start": "0",
               "end": "9223372036854775807", "px": 1000}
        c.send(dict(win, id=1, gen=gen0))
        got = c.until_final(1)
        check(got[-1][0] == "binary" and got[-1][1]["final"],
              "gen: a window with the current generation is answered",
              got[-1])
        trace = next(os.path.join(d, "trace.json")
                     for d, _, fs in os.walk(prof) if "trace.json" in fs)
        with open(trace, "a") as f:  # a new size: the watcher re-ingests
            f.write("\n")
        gen1 = None
        for _ in range(100000):
            kind, msg = c.read()
            if kind == "text" and msg.get("type") == "ready":
                gen1 = msg.get("generation")
                break
        check(gen1 and gen1 != gen0,
              "gen: the re-ingest's ready message has a new generation",
              (gen0, gen1))
        rid = 10
        for kind, extra in [("slices", win),
                            ("search", {"type": "search", "q": "nrt"})]:
            rid += 1
            c.send(dict(extra, type=kind, id=rid, gen=gen0))
            k, m = c.until_final(rid)[-1]
            d = m.get("data") or {}
            check(k == "text" and m.get("status") == 409 and
                  d.get("error") == "stale" and
                  d.get("generation") == gen1 and gen0 in d.get("detail", ""),
                  "gen: %s with the old generation: 409 stale naming the "
                  "new one, no rows" % kind, (k, m))
            rid += 1
            c.send(dict(extra, type=kind, id=rid, gen=gen1))
            k, m = c.until_final(rid)[-1]
            check((k == "binary" and m["final"]) or
                  (k == "text" and m.get("status") == 200),
                  "gen: %s with the new generation is answered" % kind,
                  (k, m.get("status")))
        c.send(dict(win, id=99, gen=5))
        k, m = c.until_final(99)[-1]
        check(k == "text" and m.get("status") == 400 and
              "gen" in m["data"]["detail"],
              "gen: a generation that is not a string is a 400", m)
        c.close()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def main():
    tmp = tempfile.mkdtemp(prefix="nex-wsq-test.")
    server = None
    try:
        server = run(tmp)
    finally:
        if server and server.poll() is None:
            server.kill()
        if not nextest.n_failed:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("# kept %s" % tmp)
    print("1..%d" % nextest.n_tests)
    return 1 if nextest.n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
