#!/usr/bin/env python3
"""check_store.py STORE MANIFEST -- compares a store with the generator's
manifest and checks the store's invariants; prints TAP lines (no plan)."""
import json
import sqlite3
import sys

import nexdb  # noqa: F401 (reads slice; on PYTHONPATH from lib.sh)

# read-only: a missing store is an error, not a new empty file
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
m = json.load(open(sys.argv[2]))
n = 0


def check(cond, what, detail=""):
    global n
    n += 1
    print(("ok " if cond else "not ok ") + what)
    if not cond and detail:
        print("#   " + detail)


def one(sql, *args):
    return db.execute(sql, args).fetchone()[0]


for table, want in sorted(m["tables"].items()):
    got = one(f"SELECT count(*) FROM {table}")
    check(got == want, f"{table} has {want} rows", f"got {got}")

got = dict(db.execute("SELECT name, count(*) FROM SystemProfileEvents GROUP BY name"))
check(got == m["events"], "every event name has its exact count",
      f"diff: { {k: (got.get(k), m['events'].get(k)) for k in set(got) | set(m['events']) if got.get(k) != m['events'].get(k)} }")
got = dict(db.execute("SELECT trace_event_source, count(*) FROM SystemProfileEvents GROUP BY 1"))
check(got == m["sources"], "every event source has its exact count", f"got {got}")

got = sorted(r[0] for r in db.execute("SELECT DISTINCT instance_id FROM process"))
check(got == sorted(m["instances"]), "instances", f"got {got}")
got = sorted((r[0], r[1]) for r in db.execute("SELECT instance_id, pid FROM process"))
want = sorted((p["instance_id"], p["pid"]) for p in m["processes"])
check(got == want, "processes", f"got {got} want {want}")

got = one("SELECT count(DISTINCT flow_id) FROM flow")
check(got == m["flows"], f"{m['flows']} distinct flow ids", f"got {got}")
# each flow chains framework -> neuron_rt -> neuron_hw
bad = one("""SELECT count(*) FROM (SELECT f.flow_id,
            sum(t.source='framework') fw, sum(t.source='neuron_rt') rt,
            sum(t.source='neuron_hw') hw
          FROM flow f JOIN track t ON t.id = f.track GROUP BY f.flow_id)
          WHERE rt < 1 OR hw < 1""")
check(bad == 0, "every flow links runtime and hardware events", f"{bad} flows do not")

# Lanes: no two slices of one (track, lane) overlap.
bad = one("""SELECT count(*) FROM (SELECT ts, dur, lag(ts + max(dur, 1)) OVER
            (PARTITION BY track, lane ORDER BY ts) AS prev_end FROM slice)
          WHERE prev_end > ts""")
check(bad == 0, "no overlapping slices within a lane", f"{bad} overlaps")
got = one("SELECT sum(event_count) FROM track WHERE kind = 'slices'")
check(got == one("SELECT count(*) FROM slice"), "track event counts add up")

# Clock alignment: each nc_exec_running lies inside the nrt_execute of its flow.
bad = one("""SELECT count(*) FROM SystemProfileEvents hw
           JOIN flow fh ON fh.track = hw.track AND fh.lane = hw.lane AND fh.ts = hw.start_ts
           JOIN flow fr ON fr.flow_id = fh.flow_id
           JOIN SystemProfileEvents rt ON rt.track = fr.track AND rt.lane = fr.lane AND rt.start_ts = fr.ts
           WHERE hw.name = 'nc_exec_running' AND rt.name = 'nrt_execute'
             AND (hw.start_ts < rt.start_ts OR hw.end_ts > rt.end_ts)""")
total = one("SELECT count(*) FROM SystemProfileEvents WHERE name='nc_exec_running'")
check(total > 0 and bad == 0,
      f"all {total} nc_exec_running lie inside their nrt_execute (hardware clock aligned)",
      f"{bad} outside")

# LOD: at every stored level, the counts of a lane add up to its events.
bad = one("""SELECT count(*) FROM (SELECT l.track, l.level, l.lane, sum(l.count) c,
            (SELECT count(*) FROM slice s WHERE s.track = l.track AND s.lane = l.lane) e
          FROM slice_lod l GROUP BY l.track, l.level, l.lane) WHERE c <> e""")
check(bad == 0, "LOD counts add up to the events at every level", f"{bad} mismatches")
lod = one("SELECT count(*) FROM slice_lod")
ev = one("SELECT count(*) FROM slice")
check(lod < ev, f"LOD rows ({lod}) stay fewer than events ({ev})")
bad = one("""SELECT count(*) FROM track WHERE lod_min_level IS NOT NULL AND
           (SELECT min(level) FROM slice_lod WHERE track = track.id) <> lod_min_level""")
check(bad == 0, "each track's finest LOD level is stored")

# Device profiles: each is matched to its system execution.
got = one("SELECT count(*) FROM DeviceProfileList WHERE time_offset_ns IS NULL")
check(got == 0, "every device profile knows its offset to the system clock", f"{got} do not")
got = sorted((d["file"], d["instructions"]) for d in m["device_profiles"])
have = sorted(db.execute("SELECT ntff_file, instruction_count FROM DeviceProfileList"))
check(got == have, "device profiles with their instruction counts", f"got {have}")
# Instruction dependencies: every entry of inst_dep_ids is a row, found
# in its own device profile, starting no later than its dependent.
if "inst_deps" in m:
    got = sorted((d["file"], d["inst_deps"]) for d in m["device_profiles"])
    have = sorted(db.execute("""SELECT p.ntff_file, (SELECT count(*) FROM inst_dep d
                                JOIN track t ON t.id = d.track WHERE t.device_profile_id = p.id)
                              FROM DeviceProfileList p"""))
    check(got == have, f"{m['inst_deps']} instruction dependencies, each profile its own", f"got {have}")
    got = one("SELECT coalesce(sum(json_array_length(inst_dep_ids)), 0) FROM Instruction")
    check(got == m["inst_deps"], "the Instruction view's inst_dep_ids hold them all", f"got {got}")
    bad = one("""SELECT count(*) FROM inst_dep d JOIN track t ON t.id = d.track
               WHERE d.dep_track IS NULL OR d.dep_ts > d.ts OR NOT EXISTS (
                 SELECT 1 FROM slice s JOIN track u ON u.id = s.track
                 WHERE s.track = d.dep_track AND s.lane = d.dep_lane AND s.ts = d.dep_ts
                   AND s.id = d.dep_id AND u.source = 'engine'
                   AND u.device_profile_id = t.device_profile_id)""")
    check(bad == 0, "every dependency is an earlier instruction of its profile, found", f"{bad} are not")
check(one("SELECT count(*) FROM Warning") == 0, "no warnings on a clean profile",
      str(db.execute("SELECT * FROM Warning LIMIT 3").fetchall()))
first = one("SELECT min(start_ts) FROM SystemProfileEvents")
check(str(first) == m["first_ts"], "first event time", f"{first} vs {m['first_ts']}")
