#!/usr/bin/env python3
"""colstore_bench.py -- the store with slices in packed column blocks
(doc/storage.md) against the one-row-per-slice store of another build, in
the same run on the same generated profile:

  - ingest speed: system trace alone, device profiles alone, both (best of
    --runs, the two builds alternated), and the raw one-row-per-event
    SQLite insert rate of the same number of rows (bench/sqlite_baseline);
  - store bytes per table (SQLite's dbstat) and per event;
  - five typical SQL queries (the kind POST /db/{name}/_search runs): the
    median of 5 runs each;
  - the viewport benchmark (bench/viewport, warm page cache): p50/p99 over
    all zoom levels.

  bench/colstore_bench.py --build BUILD --baseline ROW_STORE_BUILD
      [--events 2000000] [--device-instructions 100000] [--runs 2]
      [--work /tmp/nex-colstore-bench]

BUILD must have nexstore.so (the virtual table `slice`); the baseline's
stores have a plain `slice` table, which the same connection reads too.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "integration"))
import nexdb  # noqa: E402
import sqlite3  # noqa: E402

QUERIES = [
    ("count by name in a 1% window",
     "SELECT name, count(*) FROM SystemProfileEvents WHERE start_ts >= :lo "
     "AND start_ts < :hi GROUP BY name ORDER BY name"),
    ("top 20 longest events",
     "SELECT id, name, duration_ns FROM SystemProfileEvents "
     "ORDER BY duration_ns DESC, id LIMIT 20"),
    ("instructions joined to DeviceProfileList",
     "SELECT d.id, d.model_name, count(*), sum(i.duration_ns) FROM "
     "Instruction i JOIN DeviceProfileList d ON d.id = i.device_profile_id "
     "GROUP BY d.id ORDER BY d.id"),
    ("one opcode in a 1% device window",
     "SELECT count(*), sum(duration_ns) FROM Instruction WHERE opcode = :op "
     "AND start_ts >= :dlo AND start_ts < :dhi"),
    ("full scan of slice",
     "SELECT count(*), sum(dur), sum(length(args)) FROM slice"),
]


def run(cmd):
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


def ingest(build, prof, db, *flags):
    for f in (db, db + ".tmp"):
        if os.path.exists(f):
            os.remove(f)
    return run([os.path.join(build, "server/neuron-explorer-server"), "--dir",
                prof, "--db", db, "--ingest-only", "--quiet", "--no-watch"]
               + list(flags))


def table_bytes(db):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    rows = c.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name "
                     "ORDER BY 2 DESC").fetchall()
    slices = c.execute("SELECT sum(event_count) FROM track WHERE kind = "
                       "'slices'").fetchone()[0]
    samples = c.execute("SELECT count(*) FROM counter").fetchone()[0]
    return dict(rows), slices, samples


def query_params(db):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    lo, hi = c.execute("SELECT min(first_ts), max(last_ts) FROM track WHERE "
                       "domain = 'system' AND kind = 'slices'").fetchone()
    dlo, dhi = c.execute("SELECT min(first_ts), max(last_ts) FROM track "
                         "WHERE domain = 'device' AND source = 'engine'"
                         ).fetchone()
    op = c.execute("SELECT n.s FROM name_stat s JOIN track t ON t.id = "
                   "s.track JOIN str n ON n.id = s.name WHERE t.source = "
                   "'engine' ORDER BY s.count DESC LIMIT 1").fetchone()[0]
    mid, dmid = (lo + hi) // 2, (dlo + dhi) // 2
    return {"lo": mid, "hi": mid + (hi - lo) // 100, "op": op,
            "dlo": dmid, "dhi": dmid + (dhi - dlo) // 100}


def time_queries(db, params):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    out = []
    for _, q in QUERIES:
        times, answer = [], None
        for _ in range(5):
            t0 = time.monotonic()
            answer = c.execute(q, params).fetchall()
            times.append(time.monotonic() - t0)
        out.append((statistics.median(times), answer))
    return out


def viewport(build, server_build, db, prof):
    port = 30000 + os.getpid() % 20000
    srv = subprocess.Popen(
        [os.path.join(server_build, "server/neuron-explorer-server"), "--dir",
         prof, "--db", db, "--port", str(port), "--no-watch", "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                import http.client
                h = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                h.request("GET", "/api/v1/health",
                          headers={"Host": "localhost:%d" % port})
                if b'"ready"' in h.getresponse().read():
                    break
            except OSError:
                pass
            time.sleep(0.1)
        out = subprocess.run(
            [os.path.join(build, "bench/viewport"), "--port", str(port),
             "--db", db, "--tracks", "50", "--windows", "10", "--clients",
             "4", "--seconds", "5"], capture_output=True, text=True).stdout
        m = re.search(r"all zoom levels: .*", out)
        return m.group(0) if m else out[-300:]
    finally:
        srv.terminate()
        srv.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--device-instructions", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--work", default="/tmp/nex-colstore-bench")
    ap.add_argument("--reads-only", action="store_true",
                    help="no ingest: time the reads of the stores a "
                    "previous run left in --work")
    a = ap.parse_args()
    nexdb.register(a.build)
    os.makedirs(a.work, exist_ok=True)
    prof = os.path.join(a.work, "profile-%d" % a.events)
    man = prof + ".json"
    if not os.path.exists(man):
        shutil.rmtree(prof, ignore_errors=True)
        run([os.path.join(a.build, "tools/neuron-explorer-synth"), "--out",
             prof, "--seed", "3", "--instances", "1", "--processes", "4",
             "--cores", "4", "--target-events", str(a.events),
             "--device-profile", "model", "--device-instructions",
             str(a.device_instructions), "--manifest", man])
    m = json.load(open(man))
    sys_n = m["tables"]["SystemProfileEvents"]
    inst_n = m["tables"]["Instruction"]
    builds = {"blocks": a.build, "rows": a.baseline}
    if not a.reads_only:
        ingest_all(a, builds, prof, sys_n, inst_n, m)
    reads(a, builds, prof)


def ingest_all(a, builds, prof, sys_n, inst_n, m):
    best = {}
    for r in range(a.runs):
        order = list(builds.items()) if r % 2 == 0 else list(builds.items())[::-1]
        for name, b in order:
            db = os.path.join(a.work, name + ".db")
            for kind, flags in (("system", ["--ignore-device-profile"]),
                                ("device", ["--ignore-system-profile"]),
                                ("full", [])):
                s = ingest(b, prof, db, *flags)
                k = (name, kind)
                best[k] = min(best.get(k, s), s)
    print("profile: %d system events, %d instructions, %d DMA packets "
          "(machine shared with other jobs)" %
          (sys_n, inst_n, m["tables"]["DmaPacket"]))
    for name in builds:
        print("%-6s system %.2f M events/s, device %.2f M instructions/s, "
              "full %.2f s" % (name, sys_n / best[(name, "system")] / 1e6,
                               inst_n / best[(name, "device")] / 1e6,
                               best[(name, "full")]))
    out = subprocess.run([os.path.join(a.build, "bench/sqlite_baseline"),
                          str(sys_n), os.path.join(a.work, "base.db")],
                         check=True, capture_output=True, text=True).stdout
    os.remove(os.path.join(a.work, "base.db"))
    print("raw SQLite insert of %d slice rows: %.2f M rows/s" %
          (sys_n, float(out.split("rows_per_s=")[1]) / 1e6))
    sizes = {}
    for name in builds:
        db = os.path.join(a.work, name + ".db")
        tb, slices, samples = table_bytes(db)
        sizes[name] = os.path.getsize(db)
        # (layout 16) the args sets' templates count with the slices
        sl = (tb.get("slice_block", tb.get("slice", 0)) +
              tb.get("slice_block_key", 0) + tb.get("slice_args", 0) +
              tb.get("arg_set", 0))
        # a table, or (layouts 14 and 15) its blocks and their key
        cn, fl = (tb.get(t, 0) + tb.get(t + "_block", 0) +
                  tb.get(t + "_block_key", 0) for t in ("counter", "flow"))
        print("%-6s store %.1f MB: slices %.1f B/slice (%d slices), "
              "counter %.1f B/sample, slice_lod %.1f MB, flow %.1f MB, "
              "inst_dep %.1f MB" %
              (name, sizes[name] / 1e6, sl / slices, slices,
               cn / max(samples, 1), tb.get("slice_lod", 0) / 1e6, fl / 1e6,
               tb.get("inst_dep", 0) / 1e6))
    print("store size: blocks %.2fx the rows" % (sizes["blocks"] / sizes["rows"]))


def reads(a, builds, prof):
    params = query_params(os.path.join(a.work, "blocks.db"))
    got = {n: time_queries(os.path.join(a.work, n + ".db"), params)
           for n in builds}
    for i, (label, _) in enumerate(QUERIES):
        tb, ab = got["blocks"][i]
        tr, ar = got["rows"][i]
        print("SQL %-42s blocks %8.1f ms, rows %8.1f ms (%.2fx)%s" %
              (label, tb * 1e3, tr * 1e3, tb / tr,
               "" if ab == ar else "  ANSWERS DIFFER"))
    for name, b in builds.items():
        print("viewport %-6s %s" % (name, viewport(
            a.build, b, os.path.join(a.work, name + ".db"), prof)))


if __name__ == "__main__":
    main()
