#!/usr/bin/env python3
"""deps_bench.py -- what looking up instruction dependencies costs: the
statements of server/query/query_device.c (an instruction's dependencies,
its dependents, the arrows of a window) timed on one or more stores of
the same device profiles, each read with the extension of its own build
(a child process per store: SQLite takes one nexstore.so per process).

    bench/deps_bench.py STORE:BUILDDIR [STORE:BUILDDIR ...]

The instructions (2,000 with dependencies) and the windows (4 per device
profile, a fiftieth of it each) are drawn with seed 1 from the first
store, so every store answers the same questions.  A store of layout 16
or older has no inst_dep_rev: its dependents are read from inst_dep (and
its index by dependency), as that layout's server did.
"""
import json
import os
import random
import sqlite3
import subprocess
import sys
import time

DEPS = ("SELECT d.dep_id, d.dep_track, d.dep_lane, d.dep_ts, x.dur, "
        "(SELECT s FROM str WHERE id = x.name), t.label FROM inst_dep d "
        "LEFT JOIN slice x ON x.track = d.dep_track AND x.lane = d.dep_lane "
        "AND x.ts = d.dep_ts AND x.id = d.dep_id LEFT JOIN track t ON t.id = "
        "d.dep_track WHERE d.track = ?1 AND d.ts = ?3 AND d.lane = ?2 AND "
        "d.id = ?4 ORDER BY d.seq")
DEPENDENTS = ("SELECT d.id, d.track, d.lane, d.ts, x.dur, (SELECT s FROM str "
              "WHERE id = x.name), t.label FROM {rev} d JOIN slice x ON "
              "x.track = d.track AND x.lane = d.lane AND x.ts = d.ts AND "
              "x.id = d.id JOIN track t ON t.id = d.track WHERE d.dep_track = "
              "?1 AND d.dep_ts = ?3 AND d.dep_lane = ?2 AND d.dep_id = ?4 "
              "ORDER BY d.ts, d.track, d.lane LIMIT 1000")
COLS = ("SELECT d.dep_track, d.dep_lane, d.dep_ts, d.dep_ts + x.dur, "
        "d.dep_id, d.track, d.lane, d.ts, d.id FROM {t} d JOIN slice x ON "
        "x.track = d.dep_track AND x.lane = d.dep_lane AND x.ts = d.dep_ts "
        "AND x.id = d.dep_id WHERE ")
ENGINES = (" IN (SELECT id FROM track WHERE device_profile_id = ?1 AND "
           "source = 'engine')")
ARROWS = (COLS.format(t="inst_dep") + "d.track" + ENGINES +
          " AND d.ts >= ?2 AND d.ts < ?3 AND d.dep_track IS NOT NULL "
          "UNION ALL " + COLS.format(t="{rev}") + "d.dep_track" + ENGINES +
          " AND d.dep_ts >= ?2 AND d.dep_ts < ?3 AND (d.ts < ?2 OR d.ts >= "
          "?3) LIMIT ?4")


def questions(store):
    db = sqlite3.connect(store)
    random.seed(1)
    keys = db.execute("SELECT track, lane, ts, id FROM inst_dep WHERE "
                      "dep_track IS NOT NULL").fetchall()
    keys = random.sample(keys, min(2000, len(keys)))
    wins = []
    for p, a, b in db.execute("SELECT id, first_ts, last_ts FROM "
                              "DeviceProfileList WHERE first_ts >= 0"):
        for _ in range(4):
            s = a + (b - a) * random.random()
            wins.append((p, int(s), int(s + (b - a) / 50), 5000))
    return keys, wins


def register(build):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests",
                                    "integration"))
    import nexdb
    nexdb.register(build)


def child(store, build, qfile):
    register(build)
    keys, wins = json.load(open(qfile))
    db = sqlite3.connect(store)
    has_rev = db.execute("SELECT count(*) FROM sqlite_schema WHERE name = "
                         "'inst_dep_rev'").fetchone()[0]
    rev = "inst_dep_rev" if has_rev else "inst_dep"
    out = {}
    for rnd in range(2):  # the second round is reported: pages cached
        for name, sql, args in (("dependencies", DEPS, keys),
                                ("dependents", DEPENDENTS.format(rev=rev),
                                 keys),
                                ("arrows", ARROWS.format(rev=rev), wins)):
            t, rows = time.perf_counter(), 0
            for a in args:
                rows += len(db.execute(sql, a).fetchall())
            out[name] = (1e3 * (time.perf_counter() - t) / len(args), rows)
    print(json.dumps(out))


def ask(store, build, qfile):
    register(build)
    json.dump(questions(store), open(qfile, "w"))


def run(mode, store, build, qfile):
    return subprocess.run([sys.executable, os.path.abspath(__file__), mode,
                           store, build, qfile], check=True,
                          capture_output=True, text=True).stdout


def main():
    if len(sys.argv) == 5 and sys.argv[1] in ("--child", "--ask"):
        return (child if sys.argv[1] == "--child" else ask)(*sys.argv[2:])
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pairs = [a.rsplit(":", 1) for a in sys.argv[1:]]
    qfile = "/tmp/deps_bench.%d.json" % os.getpid()
    run("--ask", pairs[0][0], pairs[0][1], qfile)
    keys, wins = json.load(open(qfile))
    print("%d instructions, %d windows" % (len(keys), len(wins)))
    for store, build in pairs:
        res = json.loads(run("--child", store, build, qfile))
        print("%s: %s" % (store, ", ".join(
            "%s %.3f ms (%d rows)" % (k, v[0], v[1]) for k, v in res.items())))
    os.unlink(qfile)


if __name__ == "__main__":
    main()
