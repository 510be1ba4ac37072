#!/usr/bin/env python3
"""flow_oracle.py -- which slice each flow endpoint of a Chrome trace binds
to, computed from the trace file alone, against our store's flow table.
Prints TAP.

For every trace in tests/data/traces and in the shared trace folder
($NEX_SHARED_TRACES_EXTRA, else ../shared/traces or ../../shared/traces
beside the source tree; a TAP skip line when none is there), and a 1 MB
trace of bench/kineto_gen.py (Kineto's file order), it ingests the
file with our server and compares, flow by flow, the set of slices each
flow id reaches in the store with the set this script derives.  Every
disagreement is counted exactly; the first ones are printed.
(DevTools is no oracle here: its FlowsHandler binds only endpoints whose
ts, pid, tid and cat match an event exactly.)

The rules (doc/api.md, "Chrome traces"), restated independently:
  * slices of a thread: X, B/E paired per (pid, tid), instants i/I/R (zero
    length); async events are on their own tracks and take no flows;
  * a thread's slices in nesting order: by start, longer first on equal
    starts, then file order (a B/E pair at its B); a slice is inside the
    one before it that contains it: p.ts <= c.ts, c.end <= p.end and
    c.ts < p.end (a zero-length slice contains nothing);
  * a slice encloses ts when s.ts <= ts < s.end, or ts == s.ts for a zero
    length one;
  * s and t bind to the deepest slice enclosing ts on their thread (the
    last in nesting order of the deepest ones); f binds to the first slice
    in nesting order starting at or after ts on its thread, or, with
    bp:"e", as s does;
  * v2: an X or B event with bind_id (or id) and flow_in / flow_out is
    itself the endpoint; numeric v2 ids and args.flow_id numbers name the
    same flow;
  * v1 flows are identified by (cat, id): id, id2.global or id2.local
    (local ids are scoped by pid), with the event's scope;
  * an endpoint no slice takes binds to nothing.
Slices are matched between the file and the store by (pid, tid, ts, dur,
name), ts and dur in exact ns (Decimal; baseTimeNanoseconds added).
"""
import decimal
import gzip
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from bisect import bisect_right, bisect_left
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "unit"))
from oracle_store import Tap, chrome_ids, ingest, paths  # noqa: E402
# the identity of a flow event: id, id2.global or id2.local, and scope
from chrome_counts import event_id  # noqa: E402

SHOW = 12
tap = Tap()


def text(v):
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, decimal.Decimal):
        return str(v)
    return json.dumps(v)


def ns(v, scale=3):
    """A ts/dur (number or numeric string) times 10^scale, rounded half away
    from zero, or None."""
    if isinstance(v, bool) or v is None:
        return None
    try:
        d = decimal.Decimal(v) if not isinstance(v, decimal.Decimal) else v
    except (decimal.InvalidOperation, ValueError, TypeError):
        return None
    if not d.is_finite():
        return None
    return int((d.scaleb(scale)).quantize(decimal.Decimal(1),
                                          rounding=decimal.ROUND_HALF_UP))


def load(path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    base = 0
    if isinstance(doc, dict):
        events = doc.get("traceEvents", [])
        b = ns(doc.get("baseTimeNanoseconds"), 0)
        base = b or 0
    else:
        events = doc
    return events, base


def flow_key(v2id):
    """Numeric v2 ids and args.flow_id numbers are one name space."""
    try:
        return ("n", int(v2id))
    except (TypeError, ValueError):
        return ("v2", v2id)


class Slice:
    __slots__ = ("pid", "tid", "ts", "dur", "name", "at", "parent", "depth")

    def __init__(self, pid, tid, ts, dur, name, at):
        self.pid, self.tid, self.ts, self.dur = pid, tid, ts, dur
        self.name, self.at = name, at
        self.parent, self.depth = None, 0

    def key(self):
        return (self.pid, self.tid, self.ts, self.dur, self.name)

    def end(self):
        return self.ts + self.dur

    def encloses(self, t):
        return self.ts <= t < self.end() or (self.dur == 0 and t == self.ts)

    def contains(self, c):
        return self.ts <= c.ts and c.end() <= self.end() and c.ts < self.end()


def expected_flows(events, base):
    """flow key -> set of slice keys; and the count of unbound endpoints."""
    threads = defaultdict(list)
    stacks = defaultdict(list)
    ends = []      # (flow key, phase, pid, tid, ts, enclosing, at)
    own = []       # (flow key, Slice): v2 and args.flow_id endpoints
    ts_max = None
    for at, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        e = {k: v for k, v in e.items() if v is not None}
        ph = e.get("ph")
        if not isinstance(ph, str) or ph == "M":
            continue
        ts = ns(e.get("ts"))
        if ts is None:
            continue
        ts += base
        dur = 0
        if ph == "X":
            d = ns(e.get("dur"))
            dur = d if d is not None and d >= 0 else 0
        if ts_max is None or ts + dur > ts_max:
            ts_max = ts + dur
        pid, tid, name = text(e.get("pid")), text(e.get("tid")), text(e.get("name"))
        sl = None
        if ph in "XiIR":
            sl = Slice(pid, tid, ts, dur, name, at)
            threads[(pid, tid)].append(sl)
        elif ph == "B":
            sl = Slice(pid, tid, ts, None, name, at)
            stacks[(pid, tid)].append(sl)
            threads[(pid, tid)].append(sl)
        elif ph == "E":
            st = stacks.get((pid, tid))
            if st:
                b = st.pop()
                b.dur = ts - b.ts
        elif ph in "stf":
            ident = event_id(e)
            if ident is None:
                continue
            ends.append((("v1", text(e.get("cat")), ident), ph, pid, tid, ts,
                         ph != "f" or e.get("bp") == "e", at))
        if sl is not None and ph in "XB":
            fin, fout = e.get("flow_in") is True, e.get("flow_out") is True
            bid = e.get("bind_id", e.get("id"))
            if (fin or fout) and bid is not None:
                own.append((flow_key(text(bid)), sl))
            args = e.get("args")
            fids = args.get("flow_id") if isinstance(args, dict) else None
            if fids is not None:
                for fid in fids if isinstance(fids, list) else [fids]:
                    k = flow_key(text(fid))
                    if k[0] == "n":
                        own.append((k, sl))
    for st in stacks.values():
        for b in st:
            b.dur = ts_max - b.ts
    # nesting order and depth per thread
    order = {}
    for k, sl in threads.items():
        sl.sort(key=lambda s: (s.ts, -s.dur, s.at))
        stack = []
        for s in sl:
            while stack and not stack[-1].contains(s):
                stack.pop()
            s.parent = stack[-1] if stack else None
            s.depth = len(stack)
            stack.append(s)
        order[k] = (sl, [s.ts for s in sl])
    flows = defaultdict(set)
    endpoints = defaultdict(list)  # flow key -> [(phase, at, slice key)]
    unbound = []
    for key, ph, pid, tid, t, enclosing, at in ends:
        sl, starts = order.get((pid, tid), ([], []))
        got = None
        if enclosing:
            # the last slice in nesting order starting at or before t, or
            # the innermost of its containers that encloses t (properly
            # nested, no other slice can)
            i = bisect_right(starts, t) - 1
            got = sl[i] if i >= 0 else None
            while got is not None and not got.encloses(t):
                got = got.parent
        else:
            i = bisect_left(starts, t)
            got = sl[i] if i < len(sl) else None
        if got is None:
            unbound.append((key, ph, pid, tid, t, at))
            continue
        flows[key].add(got.key())
        endpoints[key].append((ph, at, got.key()))
    for key, s in own:
        flows[key].add(s.key())
        endpoints[key].append(("v2", s.at, s.key()))
    return flows, endpoints, unbound


def store_flows(db):
    con = sqlite3.connect(db)
    ids = chrome_ids(con)
    flows = defaultdict(set)
    for fid, pid, tid, ts, dur, name in con.execute(
            "SELECT f.flow_id, t.pid, t.tid, s.ts, s.dur, n.s FROM flow f "
            "JOIN slice s ON s.track = f.track AND s.lane = f.lane "
            "AND s.ts = f.ts AND s.id = f.id "
            "JOIN track t ON t.id = f.track JOIN str n ON n.id = s.name"):
        flows[fid].add(ids(pid, tid) + (ts, dur, name))
    rows = con.execute("SELECT count(*) FROM flow").fetchone()[0]
    con.close()
    return flows, rows


def show(k):
    return " | ".join(str(x) for x in k)


def check(path, tmp, server):
    b = os.path.basename(path)
    rc, db = ingest(server, path, tmp)
    tap.ok(rc in (0, 1), "%s: ingests (exit %d)" % (b, rc))
    events, base = load(path)
    want, endpoints, unbound = expected_flows(events, base)
    got, rows = store_flows(db)
    by_slice = defaultdict(set)
    for fid, sl in got.items():
        for k in sl:
            by_slice[k].add(fid)
    bad, matched = [], set()
    for key, sl in want.items():
        cands = defaultdict(int)  # the store's flows not matched yet
        for k in sl:
            for fid in by_slice.get(k, ()):
                if fid not in matched:
                    cands[fid] += 1
        # the store's flow sharing most slices with ours (ties: equal size)
        best = max(cands, key=lambda f: (cands[f], -abs(len(got[f]) - len(sl))),
                   default=None)
        if best is not None and got[best] == sl:
            matched.add(best)
            continue
        bad.append((key, sl, got.get(best, set())))
        if best is not None:
            matched.add(best)
    extra = [f for f in got if f not in matched]
    n_ends = sum(len(v) for v in endpoints.values())
    print("# %s: %d endpoints, %d bound into %d flows (%d unbound); store: "
          "%d flows, %d flow rows" % (b, n_ends + len(unbound), n_ends,
                                       len(want), len(unbound), len(got), rows))
    lines = []
    for key, sl, st in bad[:SHOW]:
        lines.append("flow %s:" % (key,))
        for ph, at, k in sorted(endpoints[key], key=lambda x: x[1]):
            lines.append("    %s event #%d -> %s%s" % (
                ph, at, show(k), "" if k in st else "   <- not in the store's"))
        for k in sorted(st - sl, key=str):
            lines.append("    the store's flow also has %s" % show(k))
        if not st:
            lines.append("    the store has none of these slices in a flow")
    wrong = sum(1 for key, sl, st in bad for _, _, k in endpoints[key]
                if k not in st)
    tap.ok(not bad, "%s: each of %d flows reaches the slices the rules give "
           "(%d disagree; %d endpoints bound elsewhere)" % (
               b, len(want), len(bad), wrong), lines)
    tap.ok(not extra, "%s: the store has no other flow (%d others)" % (b, len(extra)),
           ["flow_id %d: %s" % (f, "; ".join(show(k) for k in sorted(got[f], key=str)))
            for f in extra[:SHOW]])
    return len(bad) + len(extra)


def main():
    src, server = paths()
    extra = os.environ.get("NEX_SHARED_TRACES_EXTRA")
    cand = [extra] if extra else [os.path.join(src, "..", "shared", "traces"),
                                  os.path.join(src, "..", "..", "shared", "traces")]
    shared = next((c for c in cand if os.path.isdir(c)), None)
    files = {}
    for d in [os.path.join(src, "tests", "data", "traces")] + ([shared] if shared else []):
        for f in sorted(os.listdir(d)):
            if (f.endswith(".json") or f.endswith(".json.gz")) and f not in files:
                files[f] = os.path.join(d, f)
    summary = []
    with tempfile.TemporaryDirectory(prefix="nex-flow-") as tmp:
        # a 1 MB trace of bench/kineto_gen.py: Kineto's file order
        gen = os.path.join(tmp, "gen", "kineto_gen.json")
        subprocess.run([sys.executable, os.path.join(src, "bench", "kineto_gen.py"),
                        "--out", gen, "--size", "1M", "--manifest",
                        os.path.join(tmp, "gen.manifest")],
                       stdout=subprocess.DEVNULL, check=True)
        files["kineto_gen.json"] = gen
        for f in files.values():
            summary.append("%s %d" % (os.path.basename(f), check(f, tmp, server)))
    if not shared:
        tap.skip("no shared traces (%s)" % ", ".join(cand))
    print("# disagreements per trace: " + ", ".join(summary))
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
