#!/usr/bin/env python3
"""perfetto_json_test.py -- Perfetto's own expectations for its JSON
importer, against our store.  Prints TAP.

Each tests/data/perfetto-json/<name>.json is a trace of one of Perfetto's
diff tests (README.md there names them); <name>.expect.json holds the rows
Perfetto expects, in our store's terms (ns, depth = lane on the thread's
track, a flow as the set of its slices' names, incomplete for Perfetto's
dur -1):
  slices     every slice on a thread track (async tracks aside): pid, tid
             as the trace wrote them ("*": Perfetto's test does not say),
             name, ts, dur (null when incomplete), depth (when given)
  flows      each flow's slice names
  counters   series label, ts, value
  async      slices expected on async tracks (name, args keys in order,
             incomplete)
  threads, processes   names from metadata
  deliberate rows where our rule differs from Perfetto's on purpose: the
             expected rows above are then ours, and the test says why.
Every disagreement is listed.
"""
import json
import math
import os
import sqlite3
import sys
import tempfile
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_store import Tap, chrome_ids, ingest, paths  # noqa: E402

tap = Tap()


def store_rows(db):
    """(thread slices, async slices, flows, counters, threads, processes)."""
    con = sqlite3.connect(db)
    ids = chrome_ids(con)
    tname = {(p, t): n for p, t, n in con.execute(
        "SELECT pid, tid, name FROM thread")}
    slices, asyncs = [], []
    for pid, tid, lane, ts, dur, name, args in con.execute(
            "SELECT t.pid, t.tid, s.lane, s.ts, s.dur, n.s, s.args FROM slice s "
            "JOIN track t ON t.id = s.track JOIN str n ON n.id = s.name "
            "WHERE t.source = 'framework' ORDER BY s.ts, s.lane"):
        a = json.loads(args) if args else {}
        incomplete = a.get("incomplete") == 1
        if (tname.get((pid, tid)) or "").startswith("async:"):
            keys = [k for k in a if k not in ("cat", "incomplete", "instant")]
            asyncs.append({"name": name, "args": keys, "incomplete": incomplete})
            continue
        p, t = ids(pid, tid)
        slices.append({"pid": p, "tid": t, "name": name, "ts": ts,
                       "dur": None if incomplete else dur, "depth": lane,
                       "incomplete": incomplete})
    flows = {}
    for fid, name in con.execute(
            "SELECT f.flow_id, n.s FROM flow f JOIN slice s ON s.track = f.track "
            "AND s.lane = f.lane AND s.ts = f.ts AND s.id = f.id "
            "JOIN str n ON n.id = s.name"):
        flows.setdefault(fid, []).append(name)
    counters = [{"name": label, "ts": ts, "value": v} for label, ts, v in con.execute(
        "SELECT t.label, c.ts, c.value FROM counter c JOIN track t ON t.id = c.track "
        "WHERE t.source = 'chrome_counter' ORDER BY t.label, c.ts")]
    threads = {(str(p), str(t)): n for (p, t), n in tname.items()}
    procs = {str(p): n for p, n in con.execute("SELECT pid, name FROM process")}
    con.close()
    return slices, asyncs, flows, counters, threads, procs


def slice_key(r, want):
    """r's fields that `want` (an expected row) names, "*" fields aside."""
    k = []
    for f in ("pid", "tid", "name", "ts", "dur", "depth", "incomplete"):
        if f in want and want[f] != "*":
            k.append((f, r.get(f, False) if f == "incomplete" else r[f]))
    return tuple(k)


def show(r):
    return ", ".join("%s %s" % (k, r[k]) for k in
                     ("pid", "tid", "name", "ts", "dur", "depth", "incomplete")
                     if k in r)


def compare_slices(b, want, got):
    """Pairs each expected row with a stored one equal in the fields it
    names; returns the lines of the unpaired ones."""
    left = list(got)
    lines = []
    for w in want:
        k = slice_key(w, w)
        i = next((i for i, g in enumerate(left) if slice_key(g, w) == k), None)
        if i is None:
            near = [g for g in left if g["name"] == w["name"]]
            lines.append("expected: %s" % show(w))
            lines.extend("   store: %s" % show(g) for g in near)
            if not near:
                lines.append("   store: no slice named %s on a thread track" % w["name"])
        else:
            left.pop(i)
    lines.extend("unexpected in the store: %s" % show(g) for g in left)
    return lines


def check(src, server, tmp, name):
    d = os.path.join(src, "tests", "data", "perfetto-json")
    exp = json.load(open(os.path.join(d, name + ".expect.json")))
    rc, db = ingest(server, os.path.join(d, name + ".json"), tmp)
    tap.ok(rc in (0, 1), "%s: ingests (exit %d)" % (name, rc))
    print("# %s: %s" % (name, exp["source"]))
    print("#   Perfetto expects: %s" % exp["perfetto"])
    for dv in exp.get("deliberate", []):
        print("#   differs on purpose, %s: Perfetto: %s; ours: %s (%s)" % (
            dv["row"], dv["perfetto"], dv["ours"], dv["why"]))
    slices, asyncs, flows, counters, threads, procs = store_rows(db)
    if "slices" in exp:
        lines = compare_slices(name, exp["slices"], slices)
        tap.ok(not lines, "%s: the %d thread slices (names, ts, dur, depth)" % (
            name, len(exp["slices"])), lines)
    if "flows" in exp:
        want = Counter(tuple(sorted(f)) for f in exp["flows"])
        got = Counter(tuple(sorted(f)) for f in flows.values())
        tap.ok(want == got, "%s: %d flows link the expected slices" % (
            name, len(exp["flows"])),
            ["expected: %s" % sorted(want.elements()),
             "   store: %s" % sorted(got.elements())])
    if "counters" in exp:
        lines = []
        for w in exp["counters"]:
            g = [c for c in counters if c["name"] == w["name"] and c["ts"] == w["ts"]]
            if len(g) != 1 or not math.isclose(g[0]["value"], w["value"]):
                lines.append("expected %s at %d = %s; store: %s" % (
                    w["name"], w["ts"], w["value"], [c["value"] for c in g] or "none"))
        extra = [c for c in counters if c["name"] not in
                 {w["name"] for w in exp["counters"]}]
        lines.extend("unexpected counter %s at %d = %s" % (c["name"], c["ts"], c["value"])
                     for c in extra)
        tap.ok(not lines, "%s: %d counter samples" % (name, len(exp["counters"])), lines)
    if "async" in exp:
        lines = []
        for w in exp["async"]:
            g = [a for a in asyncs if a["name"] == w["name"]]
            if len(g) != 1 or any(g[0][k] != w[k] for k in w if k != "name"):
                lines.append("expected async %s; store: %s" % (w, g or "none"))
        tap.ok(not lines, "%s: %d async slices" % (name, len(exp["async"])), lines)
    for w in exp.get("threads", []):
        got = threads.get((w["pid"], w["tid"]))
        tap.ok(got == w["name"], "%s: thread %s/%s is named %s" % (
            name, w["pid"], w["tid"], w["name"]), ["store: %r" % got])
    for w in exp.get("processes", []):
        got = procs.get(w["pid"])
        tap.ok(got == w["name"], "%s: process %s is named %s" % (
            name, w["pid"], w["name"]), ["store: %r" % got])


def main():
    src, server = paths()
    d = os.path.join(src, "tests", "data", "perfetto-json")
    names = sorted(f[:-len(".expect.json")] for f in os.listdir(d)
                   if f.endswith(".expect.json"))
    with tempfile.TemporaryDirectory(prefix="nex-perfetto-") as tmp:
        for name in names:
            check(src, server, tmp, name)
    tap.ok(len(names) == 13, "the 13 fixtures were found (%d)" % len(names))
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
