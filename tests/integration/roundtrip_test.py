"""roundtrip_test.py -- every public trace (tests/data/traces, and
../shared/traces when present) exported as Perfetto JSON and ingested
again gives the same slices (name, time, duration, args), each on the
same lane, the same flows (count and endpoints) and the same process and
thread names, labels and sort indexes (compared with SQL over both
stores).  Exported as a Perfetto protobuf trace (pftrace) and ingested
again: the same slices and flows; a track's slices nest on its thread
track as its lanes nest them, but for those that overlap a slice without
nesting in it (Perfetto's tracks only nest), which go to one overflow
track per lane: the overflow tracks are counted by a walk of this test's
own over the first store, and a trace without them comes back whole,
lanes and names included."""
import collections
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nextest import SRC, SERVER, check, main  # noqa: E402

# A slice: its track's process and thread (names; numbers unless they were
# text), then the slice itself.
SLICES = """
SELECT p.name, p.labels, p.sort_index, CASE p.named WHEN 1 THEN NULL ELSE t.pid END,
       h.name, h.sort_index, CASE h.named WHEN 1 THEN NULL ELSE t.tid END,
       n.s, s.ts, s.dur, s.args, s.lane
FROM slice s JOIN track t ON t.id = s.track JOIN str n ON n.id = s.name
LEFT JOIN process p ON p.instance_id = t.instance_id AND p.pid = t.pid
LEFT JOIN thread h ON h.instance_id = t.instance_id AND h.pid = t.pid AND h.tid = t.tid
WHERE t.kind = 'slices'"""

# A flow: the sorted list of its endpoints (name @ ts on thread).
FLOWS = """
SELECT group_concat(e, ' ') FROM (
  SELECT f.flow_id AS id, n.s || '@' || f.ts || ' on ' || coalesce(h.name, '') AS e
  FROM flow f JOIN slice s ON s.track = f.track AND s.lane = f.lane
       AND s.ts = f.ts AND s.id = f.id JOIN str n ON n.id = s.name
  JOIN track t ON t.id = f.track LEFT JOIN thread h ON h.instance_id =
       t.instance_id AND h.pid = t.pid AND h.tid = t.tid
  ORDER BY f.flow_id, f.ts, n.s, h.name) GROUP BY id"""

# Slices overlapping an earlier slice of their lane (none may).
OVERLAPS = """
SELECT count(*) FROM (SELECT ts, lag(ts + max(dur, 1)) OVER
  (PARTITION BY track, lane ORDER BY ts, id) AS prev_end FROM slice)
WHERE prev_end > ts"""


# A slice track's slices in the order the pftrace export walks them.
WALK = """
SELECT s.track, s.ts, s.dur, s.lane FROM slice s JOIN track t ON t.id = s.track
WHERE t.kind = 'slices' AND t.domain = 'system' ORDER BY s.track, s.ts, s.lane"""

# Slices without their lane and track: what any export keeps.
BARE = "SELECT n.s, s.ts, s.dur, s.args FROM slice s JOIN str n ON n.id = s.name"

# Slices with their lane and their process and thread names: what the
# pftrace export keeps of a track whose slices all nest (it writes no
# process labels, and numbers only as thread and process ids).
NAMED = """
SELECT p.name, h.name, n.s, s.ts, s.dur, s.args, s.lane
FROM slice s JOIN track t ON t.id = s.track JOIN str n ON n.id = s.name
LEFT JOIN process p ON p.instance_id = t.instance_id AND p.pid = t.pid
LEFT JOIN thread h ON h.instance_id = t.instance_id AND h.pid = t.pid AND h.tid = t.tid
WHERE t.kind = 'slices'"""


def number(v):
    """v with every integral float an int: JSON has one number type, and a
    double annotation of 2.0 comes back spelled 2."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [number(x) for x in v]
    if isinstance(v, dict):
        return {k: number(x) for k, x in v.items()}
    return v


def parsed(counter, at):
    """counter with the JSON text at index `at` of each row parsed (args
    written as debug annotations come back with the same values, not the
    same text: spacing, number spelling)."""
    out = collections.Counter()
    for k, n in counter.items():
        v = (json.dumps(number(json.loads(k[at])), sort_keys=True)
             if k[at] else None)
        out[k[:at] + (v,) + k[at + 1:]] += n
    return out


def overflow_tracks(db):
    """The (track, lane) pairs whose slices overlap the innermost slice open
    on their track without nesting in it, walking each track in (ts, lane)
    order with a stack of open ends."""
    pairs, cur, stack = set(), None, []
    for track, ts, dur, lane in sqlite3.connect(db).execute(WALK):
        if track != cur:
            cur, stack = track, []
        while stack and stack[-1] <= ts:
            stack.pop()
        if not stack or stack[-1] >= ts + dur:
            stack.append(ts + dur)
        else:
            pairs.add((track, lane))
    return pairs


def slice_tracks(db):
    return sqlite3.connect(db).execute(
        "SELECT count(*) FROM track WHERE kind = 'slices'").fetchone()[0]


def export_again(tmp, b, src, a_db, fmt, name):
    """Exports the store a_db of src as fmt to a file `name` alone in a
    directory, ingests that directory; returns the new store's path."""
    out = os.path.join(tmp, "%s.%s" % (b, fmt))
    os.mkdir(out)
    db = out + ".db"
    subprocess.run([SERVER, "--dir", src, "--db", a_db, "--quiet",
                    "--output-format", fmt, "--output-file",
                    os.path.join(out, name)], stderr=subprocess.DEVNULL)
    subprocess.run([SERVER, "--dir", out, "--db", db, "--quiet",
                    "--ingest-only"], stderr=subprocess.DEVNULL)
    return db


def pftrace_leg(tmp, b, src, a_db, fa):
    """The pftrace export of src (whose store is a_db, flows fa) ingested
    again."""
    d_db = export_again(tmp, b, src, a_db, "pftrace", "trace.pftrace")
    if not check(os.path.exists(d_db), "%s: pftrace exported and ingested "
                 "again" % b):
        return
    ba, bd = parsed(rows(a_db, BARE), 3), parsed(rows(d_db, BARE), 3)
    check(ba == bd, "%s: pftrace: the same %d slices (name, ts, dur, args)"
          % (b, sum(ba.values())), diff(ba, bd))
    over = overflow_tracks(a_db)
    na, nd = slice_tracks(a_db), slice_tracks(d_db)
    check(nd == na + len(over), "%s: pftrace: %d slice tracks = %d + %d "
          "overflow tracks" % (b, nd, na, len(over)), (na, nd, sorted(over)))
    if not over:
        na, nd = parsed(rows(a_db, NAMED), 5), parsed(rows(d_db, NAMED), 5)
        check(na == nd, "%s: pftrace: all %d slices on the same lane, "
              "process and thread" % (b, sum(na.values())), diff(na, nd))
    fd = rows(d_db, FLOWS.replace("coalesce(h.name, '')", "''"))
    check(fa == fd, "%s: pftrace: the same %d flows linking the same "
          "slices" % (b, sum(fa.values())), diff(fa, fd))
    w = sqlite3.connect(d_db).execute("SELECT count(*) FROM Warning").fetchone()[0]
    check(w == 0, "%s: the pftrace export ingests without a warning" % b, w)


def rows(db, sql):
    c = sqlite3.connect(db)
    r = collections.Counter(tuple(x) for x in c.execute(sql))
    c.close()
    return r


def diff(a, b):
    return "only before: %s\nonly after: %s" % (
        list((a - b).items())[:3], list((b - a).items())[:3])


def run(tmp):
    dirs = [os.path.join(SRC, "tests", "data", "traces")]
    shared = os.path.normpath(os.path.join(SRC, "..", "shared", "traces"))
    if os.path.isdir(shared):
        dirs.append(shared)
    else:
        print("# %s absent: the shipped traces only" % shared)
    seen = set()
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(d, "*.json*"))):
            b = os.path.basename(f)
            if b in seen:
                continue
            seen.add(b)
            src = os.path.join(tmp, b + ".d")
            out = os.path.join(tmp, b + ".x")
            os.mkdir(src)
            os.mkdir(out)
            shutil.copy(f, src)
            a_db, b_db = os.path.join(tmp, b + ".a.db"), os.path.join(tmp, b + ".b.db")
            r = subprocess.run([SERVER, "--dir", src, "--db", a_db, "--quiet",
                                "--output-format", "perfetto", "--output-file",
                                os.path.join(out, "export.json")],
                               stderr=subprocess.DEVNULL)
            subprocess.run([SERVER, "--dir", out, "--db", b_db, "--quiet",
                            "--ingest-only"], stderr=subprocess.DEVNULL)
            if not check(r.returncode == 0 and os.path.exists(b_db),
                         "%s: exported and ingested again" % b):
                continue
            sa, sb = rows(a_db, SLICES), rows(b_db, SLICES)
            strip = lambda c: collections.Counter(  # noqa: E731
                {k[:-1]: 0 for k in c}) + collections.Counter(
                    k[:-1] for k in c.elements())
            check(strip(sa) == strip(sb), "%s: the same %d slices (name, ts, "
                  "dur, args, process and thread)" % (b, sum(sa.values())),
                  diff(strip(sa), strip(sb)))
            # Lanes are nesting depths: the same slice (track, ts, dur,
            # name) sits on the same lane in both stores, whatever order
            # the export wrote the events in.
            moved = sum((sa - sb).values())
            check(sa == sb, "%s: all %d slices on the same lane after the "
                  "round trip" % (b, sum(sa.values())),
                  "%d slices in another lane\n%s" % (moved, diff(sa, sb)))
            ov = [sqlite3.connect(x).execute(OVERLAPS).fetchone()[0]
                  for x in (a_db, b_db)]
            check(ov == [0, 0], "%s: no slice overlaps another of its lane in "
                  "either store" % b, ov)
            fa, fb = rows(a_db, FLOWS), rows(b_db, FLOWS)
            na = sqlite3.connect(a_db).execute("SELECT count(*) FROM flow").fetchone()[0]
            nb = sqlite3.connect(b_db).execute("SELECT count(*) FROM flow").fetchone()[0]
            check(na == nb and fa == fb, "%s: the same %d flow rows, %d flows "
                  "linking the same slices" % (b, na, sum(fa.values())),
                  "%d -> %d rows\n%s" % (na, nb, diff(fa, fb)))
            w = sqlite3.connect(b_db).execute(
                "SELECT count(*) FROM Warning").fetchone()[0]
            check(w == 0, "%s: the export ingests without a warning" % b, w)
            pftrace_leg(tmp, b, src, a_db,
                        rows(a_db, FLOWS.replace("coalesce(h.name, '')", "''")))
            # The vendor JSON shape: the same events and flows (it has no
            # process or thread names).
            c_db = export_again(tmp, b, src, a_db, "json",
                                "system_profile.json")
            ev = "SELECT name, start_ts, duration_ns FROM SystemProfileEvents"
            fl = FLOWS.replace("coalesce(h.name, '')", "''")
            ea, ec = rows(a_db, ev), rows(c_db, ev)
            check(ea == ec and rows(a_db, fl) == rows(c_db, fl),
                  "%s: json export: the same events and flows" % b,
                  diff(ea, ec))
    check(len(seen) >= 6, "%d traces compared" % len(seen))
    return None


if __name__ == "__main__":
    sys.exit(main("nex-roundtrip-", run))
