#!/usr/bin/env python3
"""Counts what a Chrome Trace Event Format file should decode to.

Usage: chrome_counts.py TRACE(.json|.json.gz)

An independent oracle for tests/unit/test_fmt_chrome.c: it loads the whole
trace with Python's json module and applies the decoding rules of
server/fmt_chrome.h (restated below from the Trace Event Format), then
prints one "key value" line per count:

  events      elements of the event array
  skipped     elements that yield no record (see rules)
  slices      complete slices that are not instants
  instants    instants (i, I, R, n, T, p)
  incomplete  begins (B, b, S) never ended
  async       slices and instants on async tracks (b/e/n, S/T/p/F)
  counters    counter samples
  flow_s, flow_t, flow_f   flow endpoints by phase (v1 events and v2
              bind_id/flow_in/flow_out on X and B events)
  meta        metadata records
  processes   distinct pids over all records
  threads     distinct (pid, tid) over thread records: non-async slices,
              flows and thread_* metadata

Rules: a JSON null counts as an absent field.  Elements that are not
objects, empty objects and events without a one-character ph are skipped.
Phases D, N, O and any phase not listed here are skipped.  M events yield a
record for process_name/process_labels/process_sort_index (args.name,
args.labels, args.sort_index) and thread_name/thread_sort_index when the arg
is present, else are skipped.  Every other event needs a numeric ts (number
or numeric string), else it is skipped.  B/E nest per (pid, tid): E ends the
innermost open B, an E with nothing open is skipped.  b/e and S/F pair per
(class, cat, id): an end closes the innermost open begin with the same name
(the innermost one when it has no name), an end with no such begin is
skipped; n, T and p are instants on the async track.  Async and flow events
need an id (id, id2.global or id2.local), else they are skipped.  A C event
yields one sample per finite numeric args value and is skipped when it has
none.
"""
import gzip
import json
import math
import re
import sys

NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
META = {
    "process_name": ("name", False),
    "process_labels": ("labels", False),
    "process_sort_index": ("sort_index", False),
    "thread_name": ("name", True),
    "thread_sort_index": ("sort_index", True),
}


def text(v):
    """A pid, tid or id as the decoder writes it."""
    if v is None:
        return ""
    return v if isinstance(v, str) else json.dumps(v)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def has_ts(e):
    ts = e.get("ts")
    if is_num(ts):
        return True
    return isinstance(ts, str) and NUMBER.match(ts) is not None


def event_id(e):
    """The identity of an async or flow event, or None."""
    i = e.get("id")
    if i is not None and not isinstance(i, (dict, list)):
        v = text(i)
    else:
        id2 = e.get("id2")
        if not isinstance(id2, dict):
            return None
        if id2.get("global") is not None:
            v = text(id2["global"])
        elif id2.get("local") is not None:
            v = "local:%s:%s" % (text(e.get("pid")), text(id2["local"]))
        else:
            return None
    scope = e.get("scope")
    return v if scope is None else "%s:%s" % (text(scope), v)


def count(events):
    c = dict.fromkeys(
        "events skipped slices instants incomplete async counters "
        "flow_s flow_t flow_f meta".split(), 0)
    procs, threads = set(), set()
    stacks = {}   # (pid, tid) -> [begin pid]
    opened = {}   # (class, cat, id) -> [(name, pid)]
    c["events"] = len(events)

    def thread_record(pid, tid):
        procs.add(pid)
        threads.add((pid, tid))

    for e in events:
        if not isinstance(e, dict) or not e:
            c["skipped"] += 1
            continue
        e = {k: v for k, v in e.items() if v is not None}
        ph = e.get("ph")
        if not isinstance(ph, str) or len(ph) != 1 or \
                ph not in "XBEiIRCMbenSTpFstf":
            c["skipped"] += 1
            continue
        pid, tid = text(e.get("pid")), text(e.get("tid"))
        if ph == "M":
            kind = META.get(e.get("name"))
            args = e.get("args")
            if kind is None or not isinstance(args, dict) or \
                    args.get(kind[0]) is None or \
                    isinstance(args.get(kind[0]), bool):
                c["skipped"] += 1
                continue
            c["meta"] += 1
            if kind[1]:
                thread_record(pid, tid)
            else:
                procs.add(pid)
            continue
        if not has_ts(e):
            c["skipped"] += 1
            continue
        if ph in "XB" and (e.get("flow_in") is True or
                           e.get("flow_out") is True) and \
                (e.get("bind_id") is not None or e.get("id") is not None):
            both = e.get("flow_in") is True and e.get("flow_out") is True
            c["flow_t" if both else
              "flow_s" if e.get("flow_out") is True else "flow_f"] += 1
        if ph == "X":
            c["slices"] += 1
            thread_record(pid, tid)
        elif ph == "B":
            stacks.setdefault((pid, tid), []).append(pid)
        elif ph == "E":
            st = stacks.get((pid, tid))
            if not st:
                c["skipped"] += 1
                continue
            thread_record(st.pop(), tid)
            c["slices"] += 1
        elif ph in "iIR":
            c["instants"] += 1
            thread_record(pid, tid)
        elif ph == "C":
            args = e.get("args")
            n = 0
            if isinstance(args, dict):
                n = sum(1 for v in args.values()
                        if is_num(v) and math.isfinite(v))
            if n == 0:
                c["skipped"] += 1
            else:
                c["counters"] += n
                procs.add(pid)
        elif ph in "stf":
            if event_id(e) is None:
                c["skipped"] += 1
                continue
            c["flow_" + ph] += 1
            thread_record(pid, tid)
        else:
            ident = event_id(e)
            if ident is None:
                c["skipped"] += 1
                continue
            key = ("b" if ph in "ben" else "S", text(e.get("cat")), ident)
            name = e.get("name")
            if ph in "nTp":
                c["instants"] += 1
                c["async"] += 1
                procs.add(pid)
            elif ph in "bS":
                opened.setdefault(key, []).append((text(name), pid))
            else:
                st = opened.get(key, [])
                i = len(st)
                while i > 0 and name is not None and st[i - 1][0] != text(name):
                    i -= 1
                if i == 0:
                    c["skipped"] += 1
                    continue
                _, bpid = st.pop(i - 1)
                c["slices"] += 1
                c["async"] += 1
                procs.add(bpid)
    for (pid, tid), st in stacks.items():
        for bpid in st:
            c["incomplete"] += 1
            thread_record(bpid, tid)
    for st in opened.values():
        for _, bpid in st:
            c["incomplete"] += 1
            c["async"] += 1
            procs.add(bpid)
    c["processes"] = len(procs)
    c["threads"] = len(threads)
    return c


def main():
    path = sys.argv[1]
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        doc = json.load(f)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    for k, v in count(events).items():
        print(k, v)


if __name__ == "__main__":
    main()
