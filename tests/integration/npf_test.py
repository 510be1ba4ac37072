#!/usr/bin/env python3
"""npf_test.py -- a profile written as the Neuron tools' Perfetto export
(neuron-explorer-synth --format pftrace: system_profile.pftrace and one
device_profile_model_*.pftrace per device trace, nothing else; the
framework's events on "Thread <tid>" rows of the system export) opens as the
native profile of the same seed (its trace.json beside) does (prints TAP); exports with odd content store what they can and say
what they lost in Warning rows.

Both are generated, served by two servers, and compared over HTTP: the
tracks of every grouping mode, the profile, the details (attributes, flows,
upstream and downstream) of every runtime and hardware event, the summary,
the drill-down of every nc_exec_running and the device profiles (their
tracks, executions and summaries); the table counts are checked against the
generator's manifest.  Needs NEX_BUILDDIR and NEX_SRCDIR (set by make
check).
"""
import json
import os
import re
import sqlite3
import subprocess
import sys

import shutil

from nextest import SERVER, SRC, SYNTH, Client, Server, check, main

OPTS = ["--seed", "13", "--instances", "2", "--processes", "2", "--cores",
        "2", "--steps", "6", "--device-profile", "model",
        "--device-instructions", "400"]
MODES = ["default", "cpu_device", "neuroncore", "thread", "process",
         "instance"]


def generate(tmp, name, extra):
    out = os.path.join(tmp, name)
    man = os.path.join(tmp, name + ".json")
    r = subprocess.run([SYNTH, "--out", out, "--manifest", man] + OPTS + extra,
                       capture_output=True)
    check(r.returncode == 0, "generator writes the %s profile" % name,
          r.stderr)
    return out, man


def tracks(c, mode):
    """The tracks of a grouping mode without their ids."""
    t = c.json("/api/v1/tracks?grouping=" + mode)["tracks"]
    return [(x["name"], x["kind"], x["source"], x.get("lanes"),
             x.get("event_count"), x.get("series")) for x in t]


def fw_threads(tracks):
    """Tracks with each framework thread's name as the export gives it: the
    vendor's rows are "Thread <tid>", so the thread names of trace.json
    ("MainThread 1072353") are not in it and the track reads "TID:<tid>".
    Returns the tracks and how many were renamed."""
    out, n = [], 0
    for t in tracks:
        name = re.sub(r"/framework/[^/]+ (\d+)$", r"/framework/TID:\1",
                      t[0]) if t[2] == "framework" else t[0]
        n += name != t[0]
        out.append((name,) + t[1:])
    return out, n


def synthetic(u):
    """The details u without their id when the store made it up (2^62 and
    above: events without one, as framework events, numbered in the order
    the files were read)."""
    return {k: v for k, v in u.items()
            if not (k == "id" and int(v) >= 1 << 62)}


def strip(ev):
    """An event's details without what names a store row (keys, track and
    device profile ids, which follow the order files were read in; ids the
    store made up)."""
    ev = synthetic(ev)
    for k in ("key", "track", "device_profile", "device_profile_id"):
        ev.pop(k, None)
    for side in ("upstream", "downstream"):
        ev[side] = [synthetic({k: v for k, v in u.items()
                               if k not in ("key", "track")})
                    for u in ev.get(side, [])]
    return ev


def events(c, q):
    """Every event a search finds, in start order (system domain)."""
    out, off = [], 0
    while True:
        r = c.json("/api/v1/search?domain=system&limit=500&offset=%d"
                   "&q=name~%%5E%s%%24" % (off, q.replace(":", ".")))
        out += r["items"]
        off += len(r["items"])
        if not r["items"] or off >= r["total"]:
            return out


def profiles(c):
    """The device profiles by (instance, process, NeuronCore)."""
    items = c.json("/api/v1/device-profiles?per_page=500")["items"]
    return {(p["instance_id"], p["process_id"], p["nc_id"]): p for p in items}


def dp_core(p):
    return {k: v for k, v in p.items() if k not in ("id", "name", "ntff_file",
                                                     "neff_file")}


def compare_device(cn, cp):
    pn, pp = profiles(cn), profiles(cp)
    check(sorted(pn) == sorted(pp) and len(pn) == 8,
          "the same 8 device profiles by instance, process and core",
          (sorted(pn), sorted(pp)))
    same_rows = same_tracks = same_summary = True
    for k in sorted(set(pn) & set(pp)):
        a = cn.json("/api/v1/device-profiles/" + pn[k]["id"])
        b = cp.json("/api/v1/device-profiles/" + pp[k]["id"])
        same_rows &= dp_core(pn[k]) == dp_core(pp[k])
        for d in (a, b):
            for x in d["executions"]:
                x.pop("device_profile_id", None)
        for d in (a, b):
            d["summary"].pop("id", None)
            d["summary"].pop("name", None)
        same_summary &= all(a.get(f) == b.get(f) for f in (
            "start", "end", "time_offset_ns", "executions", "summary"))
        ta = cn.json("/api/v1/device-profiles/%s/tracks" % pn[k]["id"])
        tb = cp.json("/api/v1/device-profiles/%s/tracks" % pp[k]["id"])
        key = lambda t: [(x["name"], x["kind"], x.get("lanes"),
                          x.get("event_count")) for x in t["tracks"]]
        same_tracks &= key(ta) == key(tb) and len(ta["tracks"]) > 5
    check(same_rows, "device profile rows equal (model, counts, times, FLOPs)")
    check(same_summary, "executions, time offsets and utilizations equal")
    check(same_tracks, "device tracks (engines, DMA queues, counters) equal")


def compare_events(cn, cp, m, framework):
    names = ["nrt_load", "nrt_execute", "nc_exec_running",
             "timestamp_sync_point", "cc_running", "nrt_tensor_write",
             "dmem_buf_copyin"] + (["aten::matmul", "aten::linear",
                                    "aten::t"] if framework else [])
    for name in names:
        a, b = events(cn, name), events(cp, name)
        want = m["events"].get(name, 0)
        order = lambda d: (d["start_ts"], d["trace_event_source"],
                           d.get("id", ""), d["duration_ns"])
        da = sorted((strip(cn.json("/api/v1/events/" + e["key"])) for e in a),
                    key=order)
        db = sorted((strip(cp.json("/api/v1/events/" + e["key"])) for e in b),
                    key=order)
        own = lambda d: [x for x in d if x["trace_event_source"] in
                         ("neuron_rt", "neuron_hw", "framework")]  # not the
        # transfer copies
        check(len(own(da)) == len(own(db)) == want and want > 0 and
              len(da) == len(db), "%d %s events in both" % (want, name),
              (len(da), len(db)))
        bad = [(x, y) for x, y in zip(da, db) if x != y]
        check(not bad, "the details of every %s equal (attributes, flows, "
              "upstream, downstream)" % name, bad[:1])
        if name != "nc_exec_running":
            continue
        flows = sum(len(x.get("flow_ids", [])) for x in db)
        up = sum(len(x["upstream"]) for x in db)
        check(flows == want and up == want * (2 if framework else 1),
              "each nc_exec_running has its flow from nrt_execute%s"
              % (" and the framework" if framework else ""), (flows, up))
        drill_a = [cn.get("/api/v1/events/%s/device-profile" % e["key"])
                   for e in a]
        drill_b = [cp.get("/api/v1/events/%s/device-profile" % e["key"])
                   for e in b]
        ok = sum(1 for st, _, _ in drill_b if st == 200)
        same = True
        for (sa, _, ba), (sb, _, bb) in zip(drill_a, drill_b):
            ja, jb = json.loads(ba), json.loads(bb)
            if sa == 200 and sb == 200:
                ja["device_profile"] = dp_core(ja["device_profile"])
                jb["device_profile"] = dp_core(jb["device_profile"])
            same &= sa == sb and ja == jb
        check(same and ok == want,
              "the drill-down of every nc_exec_running answers the same "
              "(%d open a device profile)" % ok, ok)


def ingest_fixture(tmp, name):
    """Ingests tests/data/npf/<name>/*.pftrace alone; returns the store
    (or None) and the exit status."""
    d = os.path.join(tmp, name)
    os.mkdir(d)
    src = os.path.join(SRC, "tests", "data", "npf", name)
    for f in os.listdir(src):
        if f.endswith(".pftrace"):
            shutil.copy(os.path.join(src, f), d)
    store = os.path.join(tmp, name + ".db")
    r = subprocess.run([SERVER, "--dir", d, "--db", store, "--ingest-only",
                        "--quiet"], capture_output=True)
    return sqlite3.connect(store), r.returncode


def check_fixtures(tmp):
    db, rc = ingest_fixture(tmp, "hostile")
    q = lambda sql: db.execute(sql).fetchall()
    check(rc == 0, "odd debug arguments do not stop the ingest", rc)
    check(q("SELECT name, instance_id, process_id, thread_id, nc_idx, "
            "trace_event_source FROM SystemProfileEvents ORDER BY start_ts")
          == [("nrt_execute", "i-0abc", 77, 78, 1, "neuron_rt"),
              ("nc_exec_running", "i-0abc", 77, 78, 1, "neuron_hw"),
              ("timestamp_sync_point", "i-0abc", 77, 78, 1, "neuron_rt"),
              ("beyond int64", "i-0abc", 77, 78, 1, "neuron_rt")],
          "every slice is stored, its process and core from the names")
    check(q("SELECT extra_attributes_json FROM SystemProfileEvents WHERE "
            "name = 'nrt_execute'") == [('{"model_id":"18446744073709551615"}',)],
          "a model_id beyond int64 given as text is kept exactly")
    check(q("SELECT extra_attributes_json FROM SystemProfileEvents WHERE "
            "name = 'beyond int64'") == [('{"size":"18446744073709551615"}',)],
          "a uint64 beyond int64 fills its field exactly")
    check(q("SELECT message FROM Warning ORDER BY id") == [
        ("6 debug annotations had a value their field (id, lnc_idx, "
         "exec_id...) cannot hold: left out",),
        ("a Perfetto export does not carry the capture's trace_info: the "
         "SystemProfileMetadata rows of its 1 processes have no first/last "
         "timestamps, NTFF version or HBM capacity",)],
          "one Warning per kind of loss", q("SELECT message FROM Warning"))
    check(q("SELECT count(*) FROM SystemProfileHbmUsage") == [(1,)] and
          q("SELECT count(*) FROM counter c JOIN track t ON t.id = c.track "
            "WHERE t.source = 'chrome_counter'") == [(2,)],
          "an HBM sample; unknown counters kept as generic ones")
    db.close()
    db, rc = ingest_fixture(tmp, "alone")
    q = lambda sql: db.execute(sql).fetchall()
    check(rc == 0 and q("SELECT instance_id, process_id, nc_id, "
                        "instruction_count, dma_count FROM DeviceProfileList")
          == [("device_profile_model_42", 0, -1, 1, 1)],
          "a device export alone is a device profile named after its file")
    check(q("SELECT s.id, n.s, json_extract(args, '$.inst_dep_ids') FROM slice "
            "s JOIN str n ON n.id = s.name WHERE s.id < 0") ==
          [(-7, "MATMUL", "[-7,3]")],
          "its instruction keeps the vendor's signed id and dependencies")
    check(q("SELECT count(*) FROM Warning WHERE category = 'Missing Data'")
          == [(2,)], "two Warnings: no system export, no NTFF header")
    db.close()


def compare(tmp, framework):
    """Generates the native profile and its export (with or without the
    framework's trace.json) and compares what the two servers answer."""
    tmp = os.path.join(tmp, "fw" if framework else "nofw")
    os.mkdir(tmp)
    extra = [] if framework else ["--no-framework"]
    nat, nman = generate(tmp, "native", extra)
    pft, pman = generate(tmp, "pftrace", extra + ["--format", "pftrace"])
    m = json.load(open(nman))
    check(open(nman).read() == open(pman).read(), "both have one manifest")
    files = sorted(os.listdir(pft))
    dev = [f for f in files if f.startswith("device_profile_model_") and
           f.endswith(".pftrace")]
    rest = [f for f in files if f not in dev and f != "system_profile.pftrace"]
    check(len(dev) == 8 and "system_profile.pftrace" in files and
          not rest, "the export is system_profile.pftrace and 8 device "
          "files only%s" % (" (the framework events inside)" if framework
                            else ""), files)
    for d in ("n", "p"):
        os.mkdir(os.path.join(tmp, d))
    sn = Server(os.path.join(tmp, "n"), nat, os.path.join(tmp, "n.db"))
    sp = Server(os.path.join(tmp, "p"), pft, os.path.join(tmp, "p.db"))
    if not (check(sn.wait_ready() == "ready", "the native profile opens") &
            check(sp.wait_ready() == "ready", "the Perfetto export opens")):
        sn.stop(10)
        return sp
    cn, cp = Client(sn.port), Client(sp.port)
    for mode in MODES:
        (a, renamed), b = fw_threads(tracks(cn, mode)), tracks(cp, mode)
        check(a == b and len(a) > 4, "the same %d tracks grouped by %s%s"
              % (len(a), mode, " (%d framework threads unnamed)" % renamed
                 if renamed else ""),
              [x for x in zip(a, b) if x[0] != x[1]][:2])
    pa, pb = cn.json("/api/v1/profile"), cp.json("/api/v1/profile")
    for f in ("start", "end", "instances", "event_count", "device_profiles"):
        check(pa[f] == pb[f], "profile %s equal" % f, (pa[f], pb[f]))
    check([(p["instance_id"], p["pid"]) for p in pa["processes"]] ==
          [(p["instance_id"], p["pid"]) for p in pb["processes"]],
          "the same processes")
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(tmp, "p.db"),
                         uri=True)
    for t, want in sorted(m["tables"].items()):
        got = db.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
        check(got == want, "%s has the manifest's %d rows" % (t, want), got)
    got = dict(db.execute("SELECT trace_event_source, count(*) FROM "
                          "SystemProfileEvents GROUP BY 1"))
    check(got == {k: v for k, v in m["sources"].items() if v},
          "every event source has its exact count", got)
    warn = db.execute("SELECT file, message FROM Warning").fetchall()
    check(len(warn) == 1 and warn[0][0] == "system_profile.pftrace" and
          "trace_info" in warn[0][1], "one Warning: the trace_info the "
          "export lacks", warn)
    db.close()
    compare_events(cn, cp, m, framework)
    sa, sb = cn.json("/api/v1/summary"), cp.json("/api/v1/summary")
    key = lambda s: (s["instances"], s["processes"],
                     s["system_profile_time_ns"], s["total_device_runtime_ns"],
                     sorted(json.dumps(dp_core(d), sort_keys=True)
                            for d in s["device_profiles"]),
                     [h["name"] for h in s["hbm"]])
    check(key(sa) == key(sb), "the summaries equal", (key(sa), key(sb)))
    compare_device(cn, cp)
    check(sn.stop(10) == 0, "the native server stops cleanly")
    check(sp.stop(10) == 0, "the export's server stops cleanly")
    return sp


def check_options(tmp):
    """--system-trace-filter-instance-id and --ignore-device-profile leave
    out of the export what they leave out of the native profile."""
    tmp = os.path.join(tmp, "opts")
    os.mkdir(tmp)
    nat, nman = generate(tmp, "native", ["--no-framework"])
    pft, _ = generate(tmp, "pftrace", ["--no-framework", "--format",
                                       "pftrace"])
    inst = json.load(open(nman))["instances"][1]
    tables = ["process", "SystemProfileEvents", "SystemProfileHbmUsage",
              "CpuUsage", "HostMemUsage", "SystemProfileMetadata",
              "DeviceProfileList", "Instruction"]
    for what, opt in (("the instance filter",
                       ["--system-trace-filter-instance-id", inst]),
                      ("--ignore-device-profile",
                       ["--ignore-device-profile"])):
        counts = []
        for name, d in (("n", nat), ("p", pft)):
            store = os.path.join(tmp, "%s%d.db" % (name, len(opt)))
            subprocess.run([SERVER, "--dir", d, "--db", store,
                            "--ingest-only", "--quiet"] + opt,
                           capture_output=True)
            db = sqlite3.connect(store)
            counts.append([db.execute("SELECT count(*) FROM " + t).fetchone()[0]
                           for t in tables])
            db.close()
        check(counts[0] == counts[1] and counts[0][0] > 0,
              "%s keeps the same rows in both" % what, counts)


def run(tmp):
    check_fixtures(tmp)
    check_options(tmp)
    server = compare(tmp, False)
    if server and server.proc.poll() is None:
        return server
    return compare(tmp, True)


if __name__ == "__main__":
    sys.exit(main("npf_test.", run))
