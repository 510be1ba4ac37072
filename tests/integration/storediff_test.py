#!/usr/bin/env python3
"""storediff_test.py -- the REST and WebSocket answers of two fixed profiles
(a generated Neuron profile, seed 11, and the Kineto trace
tests/data/traces/tl_h100_qwen.json.gz) compared byte for byte with the
answers recorded in tests/data/storediff/answers.json.  The answers were
recorded with the one-row-per-slice store, so a store layout that changes
any answer fails here.  The store generation (random per ingest) and the
temporary directory are masked before hashing.

    storediff_test.py            compare (make check)
    storediff_test.py --record   rewrite answers.json from this build
"""
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nextest import SRC, SYNTH, Client, Server, check, main  # noqa: E402
from wsq_client import WsqClient  # noqa: E402

ANSWERS = os.path.join(SRC, "tests", "data", "storediff", "answers.json")
KEEP_WHOLE = 3  # answers kept in full per profile, to show a difference


def masked(data, gen, tmp):
    return data.replace(gen.encode(), b"GEN").replace(tmp.encode(), b"TMP")


def sql(c, query):
    body = json.dumps({"type": "databaseExplorerQuery", "query": query})
    return c.req("POST", "/api/v1/db/system/_search", body=body.encode(),
                 headers={"Content-Type": "application/json"})


def requests(c):
    """The (name, status, body) answers of one profile."""
    out = []

    def get(path):
        st, _, data = c.get(path)
        out.append((path, st, data))
        return data

    st, _, data = sql(c, "SELECT id, first_ts, last_ts FROM track WHERE "
                      "kind = 'slices' AND event_count > 0 ORDER BY "
                      "domain DESC, event_count DESC, id LIMIT 12")
    rows = [[int(v) for v in r] for r in json.loads(data)["rows"]]
    base = [str(r[0]) for r in rows]
    lo, hi = rows[0][1], rows[0][2]
    mid = (lo + hi) // 2
    narrow = (mid, mid + max((hi - lo) // 200, 1000))
    keys = []
    for (b, t0, t1) in rows:
        m = (t0 + t1) // 2
        for (a, z, px) in ((t0, t1, 2000), (m, m + (t1 - t0) // 100 + 1, 500)):
            data = get("/api/v1/slices?tracks=%s&start=%d&end=%d&px=%d"
                       % (b, a, z + 1, px))
            ans = json.loads(data)
            for t in ans.get("tracks", []):
                for ln in t["lanes"]:
                    if t["level"] == -1 and ln["ts"]:
                        keys.append("%s:%d:%d" % (t["track"], ln["lane"],
                                                  int(ans["base"]) + ln["ts"][0]))
    get("/api/v1/slices?tracks=%s&start=%d&end=%d&px=3000"
        % (",".join(base), lo, hi))
    for k in keys[:20]:
        get("/api/v1/events/" + k)
        get("/api/v1/events/%s/device-profile" % k)
    for q in ("a", "exec", "dur>1us", "name~^[a-n]", "mm"):
        get("/api/v1/search?q=%s&start=%d&end=%d&limit=50&buckets=20"
            % (q, lo, hi, ))
    get("/api/v1/summary")
    get("/api/v1/range-summary?tracks=%s&start=%d&end=%d"
        % (",".join(base), narrow[0], narrow[1]))
    for fmt in ("json", "csv", "summary-json", "summary-text", "perfetto"):
        get("/api/v1/export?format=%s&start=%d&end=%d"
            % (fmt, narrow[0] - (hi - lo) // 20, narrow[1]))
    for q in ("SELECT count(*), sum(duration_ns), min(start_ts), max(end_ts) "
              "FROM SystemProfileEvents",
              "SELECT * FROM SystemProfileEvents ORDER BY duration_ns DESC, id "
              "LIMIT 20",
              "SELECT opcode, count(*), sum(duration_ns) FROM Instruction "
              "GROUP BY opcode ORDER BY opcode",
              "SELECT * FROM DmaPacket ORDER BY start_ts, id LIMIT 30",
              "SELECT track, lane, ts, id, dur, name, grp, args FROM slice "
              "WHERE ts >= %d AND ts < %d ORDER BY track, lane, ts, id"
              % narrow,
              "SELECT count(*), sum(length(args)), sum(dur), sum(grp) "
              "FROM slice"):
        st, _, data = sql(c, q)
        out.append(("sql " + q, st, data))
    return out, base, (lo, hi)


def ws_answers(port, base, window):
    """The binary window frames of a WebSocket query per base track."""
    ws = WsqClient(port)
    out = []
    for i, b in enumerate(base):
        ws.send({"type": "slices", "id": i + 1, "tracks": [b],
                 "start": str(window[0]), "end": str(window[1]), "px": 1500,
                 "progressive": False, "deflate": False})
        while True:  # text messages (hello) are not answers
            op, data = ws.recv_raw()
            if op == 2 and struct.unpack_from("<I", data, 4)[0] == i + 1:
                break
        out.append(("ws slices %s" % b, 200, data))
    ws.close()
    return out


def profile_answers(tmp, name, prof):
    store = os.path.join(tmp, name + ".db")
    server = Server(tmp, prof, store)
    state = server.wait_ready()
    if not check(state == "ready", "%s: the server becomes ready" % name,
                 open(server.err_path).read()):
        return server, None
    c = Client(server.port)
    tracks = c.json("/api/v1/tracks")
    gen = tracks["generation"]
    out, base, window = requests(c)
    out += ws_answers(server.port, base, window)
    server.stop(30)
    return None, [(n, st, masked(d, gen, tmp)) for (n, st, d) in out]


def run(tmp):
    prof = os.path.join(tmp, "neuron")
    r = subprocess.run([SYNTH, "--out", prof, "--seed", "11", "--instances",
                        "1", "--processes", "2", "--cores", "2", "--steps",
                        "4", "--device-profile", "model",
                        "--device-instructions", "800"], capture_output=True)
    if not check(r.returncode == 0, "generator writes a profile", r.stderr):
        return None
    kineto = os.path.join(tmp, "kineto")
    os.mkdir(kineto)
    shutil.copy(os.path.join(SRC, "tests", "data", "traces",
                             "tl_h100_qwen.json.gz"), kineto)
    got = {}
    for name, p in (("neuron", prof), ("kineto", kineto)):
        server, ans = profile_answers(tmp, name, p)
        if ans is None:
            return server
        got[name] = ans
    if "--record" in sys.argv:
        rec = {}
        for name, ans in got.items():
            rec[name] = [{"q": n, "status": st,
                          "sha256": hashlib.sha256(d).hexdigest()}
                         for (n, st, d) in ans]
            small = [(a, d) for a, (_, _, d) in zip(rec[name], ans)
                     if 64 < len(d) < 2048 and not a["q"].startswith("ws")]
            for a, d in small[:KEEP_WHOLE]:
                a["body"] = d.decode()
        os.makedirs(os.path.dirname(ANSWERS), exist_ok=True)
        with open(ANSWERS, "w") as f:
            json.dump(rec, f, indent=0, sort_keys=True)
            f.write("\n")
        check(True, "answers recorded in %s" % ANSWERS)
        return None
    want = json.load(open(ANSWERS))
    for name, ans in got.items():
        rec = want[name]
        check(len(ans) == len(rec), "%s: %d answers, as recorded (%d)"
              % (name, len(ans), len(rec)))
        bad = [(a["q"], st, d[:300])
               for a, (n, st, d) in zip(rec, ans)
               if a["q"] != n or a["status"] != st
               or a["sha256"] != hashlib.sha256(d).hexdigest()]
        check(not bad, "%s: every answer byte for byte as recorded "
              "(%d differ)" % (name, len(bad)),
              "\n".join("%s -> %s %r" % b for b in bad[:8]))
        nonempty = sum(1 for (_, st, d) in ans if st == 200 and len(d) > 64)
        check(nonempty >= len(ans) // 2, "%s: most answers hold data (%d of "
              "%d)" % (name, nonempty, len(ans)))
    return None


if __name__ == "__main__":
    sys.exit(main("nex-storediff.", run))
