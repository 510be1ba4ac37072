#!/usr/bin/env python3
"""server_test.py -- the one-port server end to end (prints TAP).

Generates a profile with neuron-explorer-synth, starts
neuron-explorer-server on a free port and checks every endpoint of
doc/api.md against the generator's manifest and against the store read
independently with sqlite3; then keep-alive, the WebSocket on the same port,
and every refusal.  Needs NEX_BUILDDIR and NEX_SRCDIR (set by make check).
"""
import collections
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse

from nextest import SRC, SYNTH, Client, Server, check, main

WS_CLIENT = os.path.join(SRC, "tests", "integration", "ws_client.py")


def raw_request(port, data, timeout=5):
    """Sends raw bytes, returns the raw answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        pass
    s.close()
    return out


def ws(port, *args, timeout=5):
    r = subprocess.run([sys.executable, WS_CLIENT, str(port), "--timeout",
                        str(timeout)] + list(args), capture_output=True,
                       text=True, timeout=timeout + 30)
    lines = r.stdout.splitlines()
    status = lines[0].split(" ", 1)[1] if lines else "none"
    return status, [json.loads(l) for l in lines[1:]]


# ------------------------------------------------------------------ names
# An independent reading of the naming rules of doc/api.md.

def nm(v):
    return "?" if v is None else str(v)


def event_name(t, mode, hw_tid, tnames):
    inst, pid, tid, nc = t["instance_id"], t["pid"], t["tid"], t["nc_idx"]
    src = t["source"]
    if mode == "instance":
        return inst
    if mode == "process":
        return "%s/PID:%s" % (inst, nm(pid))
    if mode == "neuroncore":
        if nc is not None:
            return "%s/NC:%d" % (inst, nc)
        return "%s/PID:%s/TID:%s" % (inst, nm(pid), nm(tid))
    if mode == "thread":
        if src == "neuron_hw" and tid is None:
            tid = hw_tid.get((inst, pid, nc))
        return "%s/PID:%s/TID:%s" % (inst, nm(pid), nm(tid))
    if mode == "cpu_device":
        if src == "neuron_hw":
            return "%s/PID:%s/Worker:%s/neuron_hw" % (inst, nm(pid),
                                                      nm(t["worker_gid"]))
        return "%s/PID:%s/TID:%s/%s" % (inst, nm(pid), nm(tid), src)
    base = "%s/PID:%s/%s" % (inst, nm(pid), src)
    if src == "neuron_hw":
        pc = t["pcore_idx"] if t["pcore_idx"] is not None else nc
        return "%s/NC%d:%d" % (base, nc, pc)
    if src == "neuron_rt" and nc is not None:
        return "%s/NC:%d" % (base, nc)
    if src != "neuron_rt" and t["stream_id"] is not None:
        return "%s/Stream:%d" % (base, t["stream_id"])
    if src != "neuron_rt" and (inst, pid, tid) in tnames:
        # a Chrome thread_name (the generator's do not hold the tid)
        return "%s/%s %s" % (base, tnames[(inst, pid, tid)], nm(tid))
    return "%s/TID:%s" % (base, nm(tid))


def extra_name(t):
    inst, src = t["instance_id"], t["source"]
    if src == "neuron_hbm_usage":
        return "%s/ND:%d/HBM:%d/neuron_hbm_usage" % (inst, t["device_idx"],
                                                     t["hbm_idx"])
    if src.endswith("_transfers"):
        return "%s/NC:%d/%s" % (inst, t["nc_idx"], src)
    if src.endswith("_bandwidth"):
        return "%s/NC:%d/%s/transfer_bandwidth" % (inst, t["nc_idx"],
                                                   src[:-len("_bandwidth")])
    if src == "host_mem":
        return inst + "/host_memory_usage"
    if src == "host_cpu_util":
        return "%s/CPU:%s/host_cpu_util" % (inst, t["cpu_id"])
    return None


def expected_tracks(db, mode):
    rows = [dict(r) for r in db.execute(
        "SELECT * FROM track WHERE domain = 'system'")]
    hw_tid = {}
    for inst, pid, nc, tid in db.execute(
            """SELECT t.instance_id, t.pid, t.nc_idx, t.tid FROM track t
               JOIN name_stat ns ON ns.track = t.id JOIN str ON str.id = ns.name
               WHERE str.s = 'nrt_execute' AND t.source = 'neuron_rt'
               ORDER BY ns.count"""):
        hw_tid[(inst, pid, nc)] = tid
    tnames = {(i, p, t): n for i, p, t, n in db.execute(
        "SELECT instance_id, pid, tid, name FROM thread WHERE name IS NOT NULL")}
    out = {}
    for t in rows:
        name = extra_name(t)
        if name is None:
            name = event_name(t, mode, hw_tid, tnames)
        out.setdefault(name, set()).add(str(t["id"]))
    return out


# ------------------------------------------------------------------ main

def run(tmp):
    prof = os.path.join(tmp, "profile")
    man_path = os.path.join(tmp, "manifest.json")
    r = subprocess.run([SYNTH, "--out", prof, "--seed", "5", "--instances", "1",
                        "--processes", "2", "--cores", "2", "--steps", "8",
                        "--device-profile", "model", "--device-instructions",
                        "1500", "--manifest", man_path],
                       capture_output=True)
    if not check(r.returncode == 0, "generator writes a profile", r.stderr):
        return None
    m = json.load(open(man_path))
    store = os.path.join(tmp, "store.db")
    server = Server(tmp, prof, store)
    port = server.port

    # The WebSocket connects while the store may still be loading.
    early = subprocess.Popen([sys.executable, WS_CLIENT, str(port), "--timeout",
                              "60", "--messages", "10000", "--until", "ready"],
                             stdout=subprocess.PIPE, text=True)
    state = server.wait_ready()
    if not check(state == "ready", "the server becomes ready", state):
        return server
    out = early.communicate(timeout=90)[0].splitlines()
    msgs = [json.loads(l) for l in out[1:]] if out and out[0] != "status closed" else []
    check(out[:1] == ["status 101"] and msgs and msgs[0]["type"] == "hello",
          "a WebSocket on the same port gets hello first", out[:3])
    if msgs and msgs[0].get("state") == "loading":
        check(msgs[-1]["type"] == "ready", "a page that connected while "
              "loading is told ready", msgs[-1])
        check(msgs[-1].get("event_count", 0) > 0, "ready carries the event count",
              msgs[-1])
    else:
        check(len(msgs) == 1, "a page connecting after the load gets only hello",
              msgs)
        check(msgs[:1] and msgs[0].get("state") == "ready",
              "a page connecting after the load is told ready in hello",
              msgs[:1])

    db = sqlite3.connect("file:%s?mode=ro" % store, uri=True)
    db.row_factory = sqlite3.Row
    c = Client(port)
    check_basics(c, m, db, server.err_path)
    check_tracks(c, db)
    check_windows(c, db)
    check_counters(c, db)
    check_events(c, db)
    check_search(c, m, db)
    check_summary(c, m, db)
    check_range(c, m, db)
    check_sql(c, m, db)
    check_export(c, m, db)
    check_http(c, port)
    check_ws(port, prof)
    db.close()

    rc = server.stop(10)
    check(rc == 0, "SIGTERM stops the server cleanly", rc)
    return server


def check_basics(c, m, db, err_path):
    h = c.json("/api/v1/health")
    check(h == {"status": "ok", "state": "ready", "version": h["version"]},
          "health says ok/ready", h)
    p = c.json("/api/v1/profile")
    check(p["instances"] == sorted(m["instances"]), "profile lists the instances",
          p["instances"])
    got = sorted((x["instance_id"], x["pid"]) for x in p["processes"])
    want = sorted((x["instance_id"], x["pid"]) for x in m["processes"])
    check(got == want, "profile lists the processes", got)
    check(p["device_profiles"] == len(m["device_profiles"]),
          "profile counts the device profiles", p["device_profiles"])
    check(p["start"] == m["first_ts"] and p["end"] == m["last_ts"],
          "profile start/end are the first and last timestamps (strings)",
          (p["start"], p["end"]))
    stored = db.execute("SELECT (SELECT count(*) FROM slice) + (SELECT count(*) "
                        "FROM counter WHERE series = 0)").fetchone()[0]
    check(p["event_count"] == stored, "profile event_count counts every stored "
          "slice and counter sample", (p["event_count"], stored))
    logged = re.findall(r"ingested .*: (\d+) events", open(err_path).read())
    check(logged == [str(p["event_count"])],
          "profile event_count equals the ingest log's count", (logged, p["event_count"]))
    check(len(p["metadata"]) == m["tables"]["SystemProfileMetadata"],
          "profile carries the SystemProfileMetadata rows", len(p["metadata"]))


def check_tracks(c, db):
    for mode in ["default", "cpu_device", "neuroncore", "thread", "process",
                 "instance"]:
        d = c.json("/api/v1/tracks?grouping=" + mode)
        got = {t["name"]: {b["id"] for b in t["base"]} for t in d["tracks"]}
        want = expected_tracks(db, mode)
        check(got == want and len(got) == len(d["tracks"]),
              "grouping %s: every track has its documented name and bases" % mode,
              "missing %s\nextra %s" % (sorted(set(want) - set(got))[:5],
                                        sorted(set(got) - set(want))[:5]))
        ids = [t["id"] for t in d["tracks"]]
        check(all(i == mode + ":" + t["name"] for i, t in zip(ids, d["tracks"])),
              "grouping %s: display ids are mode:name" % mode)
        events = sum(t["event_count"] for t in d["tracks"]
                     if t["source"] not in ("neuron_hbm_usage",) and t["kind"] == "slices"
                     and not t["name"].endswith("_transfers"))
        want_n = db.execute("SELECT count(*) FROM SystemProfileEvents").fetchone()[0]
        check(events == want_n, "grouping %s: event tracks hold every system "
              "event once" % mode, "%d vs %d" % (events, want_n))
        kinds = [t["kind"] == "counter" and t["source"] in ("host_mem",
                                                             "host_cpu_util")
                 for t in d["tracks"]]
        hidden = [bool(t.get("hidden_by_default")) for t in d["tracks"]]
        check(kinds == hidden, "grouping %s: host memory and CPU tracks are "
              "hidden by default" % mode)
    d = c.json("/api/v1/tracks")
    check(d["grouping"] == "default", "grouping defaults to default")
    names = [t["name"] for t in d["tracks"]]
    first_extra = next(i for i, t in enumerate(d["tracks"])
                       if t["source"] == "neuron_hbm_usage")
    check(all(t["kind"] == "slices" and t["source"] in
              ("framework", "neuron_rt", "neuron_hw") for t in d["tracks"][:first_extra]),
          "event tracks come before the extra tracks", names[:first_extra + 1])
    hbm = [t for t in d["tracks"] if t["source"] == "neuron_hbm_usage"]
    check(all(len(t["series"]) == 23 and t["series"][0] == "total_bytes" for t in hbm),
          "HBM tracks carry 23 series", [len(t["series"]) for t in hbm])
    # device profile tracks
    dp = db.execute("SELECT id FROM DeviceProfileList ORDER BY id").fetchone()[0]
    d = c.json("/api/v1/device-profiles/%d/tracks" % dp)
    names = [t["name"] for t in d["tracks"]]
    labels = [r[0] for r in db.execute(
        "SELECT DISTINCT label FROM track WHERE device_profile_id = ? AND "
        "source = 'engine'", (dp,))]
    check(set(labels) <= set(names), "device tracks are named by engine", names)
    check(any(n.startswith("DMA/") for n in names) and
          any(n.startswith("Semaphore/") for n in names),
          "DMA queues and semaphores are named DMA/<queue>, Semaphore/<id>", names)
    total = sum(t["event_count"] for t in d["tracks"] if t["kind"] == "slices")
    want = db.execute("SELECT sum(event_count) FROM track WHERE device_profile_id = ? "
                      "AND kind = 'slices'", (dp,)).fetchone()[0]
    check(total == want, "device tracks hold every device event of the profile",
          "%d vs %d" % (total, want))


def window_events(db, track, lane, start, end):
    return [(r[0], r[1], r[2]) for r in db.execute(
        "SELECT ts, dur, name FROM slice WHERE track = ? AND lane = ? AND ts < ? "
        "AND (ts >= ? OR ts + dur > ?) ORDER BY ts", (track, lane, end, start, start))]


def slices(c, tracks, start, end, px):
    return c.json("/api/v1/slices?tracks=%s&start=%d&end=%d&px=%d" % (
        ",".join(str(t) for t in tracks), start, end, px))


def check_windows(c, db):
    first, last = db.execute("SELECT min(first_ts), max(last_ts) FROM track "
                             "WHERE domain = 'system'").fetchone()
    sys_tracks = [r[0] for r in db.execute(
        "SELECT id FROM track WHERE domain = 'system' AND kind = 'slices' ORDER BY id")]
    d = slices(c, sys_tracks, first, last + 1, 2000)
    check(d["base"] == str(first) and d["px"] == 2000 and
          d["resolution_ns"] == (last + 1 - first) // 2000,
          "slices answer carries base, px and resolution", {k: d[k] for k in
                                                            ("base", "px", "resolution_ns")})
    counts = {int(t["track"]): sum(sum(l["count"]) for l in t["lanes"]) for t in d["tracks"]}
    want = {r[0]: r[1] for r in db.execute(
        "SELECT id, event_count FROM track WHERE domain = 'system' AND kind = 'slices'")}
    check(counts == want, "a whole-profile window accounts for every system "
          "event exactly once", {k: (counts.get(k), want[k]) for k in want
                                 if counts.get(k) != want[k]})
    names = set(d["names"])
    used = {str(x) for t in d["tracks"] for l in t["lanes"] for x in l["name"] + l["grp"] if x}
    check(used <= names, "every name id of the answer is resolved in names")

    # a narrow window answered raw equals the events overlapping it
    t, lane, ts = db.execute(
        "SELECT track, lane, ts FROM slice s JOIN track t ON t.id = s.track "
        "WHERE t.source = 'neuron_rt' ORDER BY s.dur DESC LIMIT 1").fetchone()
    start, end = ts + 1000, ts + 3000000
    d = slices(c, [t], start, end, 1000)
    tr = d["tracks"][0]
    got = [(start + a, b, n) for l in tr["lanes"] if l["lane"] == lane
           for a, b, n in zip(l["ts"], l["dur"], l["name"])]
    want = window_events(db, t, lane, start, end)
    check(tr["level"] == -1 and got == want,
          "a zoomed-in window returns exactly the raw events, including the one "
          "straddling its start", "got %s\nwant %s" % (got[:4], want[:4]))
    check(got and got[0][0] < start, "the straddling event starts before the window")

    # device tracks: LOD levels keep the answer bounded by pixels
    row = db.execute(
        "SELECT t.id, t.lod_min_level, t.event_count, d.first_ts, d.last_ts "
        "FROM track t JOIN DeviceProfileList d ON d.id = t.device_profile_id "
        "WHERE t.source = 'engine' AND t.lod_min_level IS NOT NULL "
        "ORDER BY t.event_count DESC LIMIT 1").fetchone()
    if not check(row is not None, "some device track has LOD levels"):
        return
    tid, lod_min, count, dfirst, dlast = row
    span = dlast + 1 - dfirst
    for px in (10, 100, 2000):
        d = slices(c, [tid], dfirst, dlast + 1, px)
        tr = d["tracks"][0]
        total = sum(sum(l["count"]) for l in tr["lanes"])
        rows = max(len(l["ts"]) for l in tr["lanes"])
        r_ns = span // px
        level = -1
        while level < 20 and 2 * r_ns >= 64 << (2 * (level + 1)):
            level += 1
        bound = 2 * px + 2 if tr["level"] >= 0 else 4 * px
        check(total == count and rows <= bound,
              "device window at %d px: every event counted once, at most one "
              "LOD row per half pixel or 4 raw rows (level %d)" % (px, tr["level"]),
              "total %d of %d, %d rows" % (total, count, rows))
        if level >= lod_min:
            check(tr["level"] == level, "at %d px the level is the largest with "
                  "64*4^L <= 2 * resolution" % px, (tr["level"], level))
        elif count > 4 * px:
            check(tr["level"] == lod_min, "at %d px a lane over 4*px raw events "
                  "answers from the finest LOD level" % px, (tr["level"], lod_min))
        else:
            check(tr["level"] == -1, "at %d px a small track is answered raw" % px,
                  tr["level"])
    # LOD rows cover their events: [ts, ts+dur) spans every merged event
    d = slices(c, [tid], dfirst, dlast + 1, 10)
    ok = True
    for l in d["tracks"][0]["lanes"]:
        for a, b, k in zip(l["ts"], l["dur"], l["count"]):
            s, e = dfirst + a, dfirst + a + b
            n = db.execute("SELECT count(*) FROM slice WHERE track = ? AND lane = ? "
                           "AND ts >= ? AND ts + dur <= ?", (tid, l["lane"], s, e)).fetchone()[0]
            ok = ok and n >= k
    check(ok, "each merged rectangle covers the events it stands for")


def check_counters(c, db):
    first, last = db.execute("SELECT min(first_ts), max(last_ts) FROM track "
                             "WHERE domain = 'system'").fetchone()
    hbm = [r[0] for r in db.execute(
        "SELECT id FROM track WHERE source = 'neuron_hbm_usage' ORDER BY id")]
    d = c.json("/api/v1/counters?tracks=%s&start=%d&end=%d&px=2000" % (
        ",".join(map(str, hbm)), first, last + 1))
    ok = True
    for t in d["tracks"]:
        want = db.execute("SELECT count(*) FROM counter WHERE track = ? AND series = 0",
                          (int(t["track"]),)).fetchone()[0]
        s0 = t["series"][0]
        ok = ok and len(t["series"]) == 23 and sum(s0["count"]) == want
    check(ok, "HBM counters over the whole profile: 23 series, every sample counted")
    t = hbm[0]
    ts = [r[0] for r in db.execute("SELECT ts FROM counter WHERE track = ? AND series = 0 "
                                   "ORDER BY ts", (t,))]
    start, end = ts[len(ts) // 2] + 1, ts[len(ts) // 2 + 3] + 1
    d = c.json("/api/v1/counters?tracks=%d&start=%d&end=%d&px=1000" % (t, start, end))
    s0 = d["tracks"][0]["series"][0]
    got = [start + x for x in s0["ts"]]
    check(got == ts[len(ts) // 2: len(ts) // 2 + 4],
          "a zoomed-in counter window starts with the last sample before it", got)
    st, _, body = c.get("/api/v1/counters?tracks=%d&start=%d&end=%d&px=10" % (
        db.execute("SELECT id FROM track WHERE kind='slices' LIMIT 1").fetchone()[0],
        start, end))
    check(st == 400 and b"'tracks'" in body, "counters refuse a slice track (400)", body)


def check_events(c, db):
    t, lane, ts, args = db.execute(
        "SELECT s.track, s.lane, s.ts, s.args FROM slice s JOIN track t ON t.id = s.track "
        "JOIN str ON str.id = s.name WHERE str.s = 'nc_exec_running' ORDER BY s.ts "
        "LIMIT 1").fetchone()
    key = "%d:%d:%d" % (t, lane, ts)
    e = c.json("/api/v1/events/" + key)
    check(e["key"] == key and e["name"] == "nc_exec_running" and
          e["trace_event_source"] == "neuron_hw" and isinstance(e["id"], str),
          "event details name the event (ids as strings)", {k: e.get(k) for k in
                                                          ("key", "name", "id")})
    flows = [str(r[0]) for r in db.execute(
        "SELECT flow_id FROM flow WHERE track = ? AND lane = ? AND ts = ? ORDER BY flow_id",
        (t, lane, ts))]
    check(e["flow_ids"] == flows, "event lists its flow ids", e["flow_ids"])
    chain = db.execute(
        "SELECT count(*) FROM flow f WHERE f.flow_id IN (SELECT flow_id FROM flow "
        "WHERE track = ? AND lane = ? AND ts = ?)", (t, lane, ts)).fetchone()[0]
    up = [u["trace_event_source"] for u in e["upstream"]]
    check(len(e["upstream"]) + len(e["downstream"]) == chain - 1 and
          "neuron_rt" in up and up == sorted(up, key=["framework", "neuron_rt",
                                                      "neuron_hw"].index),
          "upstream holds the framework and runtime events of the chain, in order",
          up)
    a = json.loads(args)
    dp = db.execute(
        "SELECT d.id, x.execution_start_ts, x.execution_end_ts, x.execution_index "
        "FROM DeviceProfileList d JOIN track t ON t.instance_id = d.instance_id AND "
        "t.pid = d.process_id AND t.nc_idx = d.nc_id JOIN ExecutionInfo x ON "
        "x.device_profile_id = d.id AND x.exec_id = ? WHERE t.id = ? AND d.model_id = ?",
        (a["exec_id"], t, str(a["model_id"]))).fetchone()
    check(dp is not None and e["device_profile"] and e["device_profile"]["id"] == str(dp[0]),
          "the hardware event names its device profile", e.get("device_profile"))
    d = c.json("/api/v1/events/%s/device-profile" % key)
    check(dp is not None and d["device_profile"]["id"] == str(dp[0]) and
          d["start"] == str(dp[1]) and d["end"] == str(dp[2]) and
          d["execution_index"] == dp[3],
          "drill-down gives the profile and the execution's device window",
          {k: d.get(k) for k in ("start", "end", "execution_index")})
    fw = db.execute("SELECT s.track, s.lane, s.ts FROM slice s JOIN track t ON "
                    "t.id = s.track WHERE t.source = 'framework' AND s.track NOT IN "
                    "(SELECT track FROM flow) LIMIT 1").fetchone()
    if fw:
        st, _, body = c.get("/api/v1/events/%d:%d:%d/device-profile" % fw)
        check(st == 404 and json.loads(body)["error"] == "no_device_profile",
              "a framework event has no device profile (404 no_device_profile)", body)
    for bad, status in (("1:2", 400), ("a:b:c", 400), ("%d:%d:%d" % (t, lane, ts + 1), 404),
                        ("999999:0:0", 404)):
        st, _, body = c.get("/api/v1/events/" + bad)
        check(st == status and "detail" in json.loads(body),
              "event key %s answers %d with a detail" % (bad, status), body)


def check_search(c, m, db):
    want = m["events"]["nrt_execute"]
    d = c.json("/api/v1/search?q=NRT_EXECUTE&per_page=7")
    check(d["total"] == want, "search total is the manifest count (case-insensitive)",
          d["total"])
    keys, starts = [], []
    page = 1
    while True:
        d = c.json("/api/v1/search?q=nrt_execute&per_page=7&page=%d" % page)
        if not d["items"]:
            break
        keys += [i["key"] for i in d["items"]]
        starts += [int(i["start_ts"]) for i in d["items"]]
        page += 1
    check(len(keys) == want and len(set(keys)) == want and starts == sorted(starts),
          "paging through search gives every event once, ordered by start",
          (len(keys), len(set(keys))))
    lo, hi = db.execute("SELECT min(start_ts), max(start_ts) FROM SystemProfileEvents "
                        "WHERE name = 'nrt_execute'").fetchone()
    mid = (lo + hi) // 2
    n = db.execute("SELECT count(*) FROM SystemProfileEvents WHERE lower(name) LIKE "
                   "'%exec%' AND start_ts >= ? AND start_ts < ?", (lo, mid)).fetchone()[0]
    d = c.json("/api/v1/search?q=exec&start=%d&end=%d&per_page=500" % (lo, mid))
    check(d["total"] == n and len(d["items"]) == n,
          "search within a window counts the events starting in it", (d["total"], n))
    d = c.json("/api/v1/search?q=MATMUL&domain=device&per_page=1")
    n = db.execute("SELECT count(*) FROM Instruction WHERE opcode LIKE '%matmul%'").fetchone()[0]
    check(d["total"] == n, "device search finds instructions", (d["total"], n))
    check_search_terms(c, db)


def check_search_terms(c, db):
    """Attribute terms, regex, duration bounds and per-track counts, each
    cross-checked against SQL over the store."""
    base = ("SELECT s.track, count(*) FROM slice s JOIN str ON str.id = s.name "
            "JOIN track t ON t.id = s.track WHERE t.domain = 'system' AND "
            "t.kind = 'slices' AND ")
    cases = (
        ("nrt dur>=1us", "instr(lower(str.s), 'nrt') AND s.dur >= 1000"),
        ("dur<10us", "s.dur < 10000"),
        ("nrt type:2", "instr(lower(str.s), 'nrt') AND "
         "CAST(json_extract(s.args, '$.type') AS TEXT) = '2'"),
    )
    for q, where in cases:
        rows = db.execute(base + where + " GROUP BY s.track ORDER BY s.track").fetchall()
        want = sum(n for _, n in rows)
        d = c.json("/api/v1/search?q=%s&limit=3" % urllib.parse.quote(q))
        got = sorted((int(t["track"]), t["count"]) for t in d["tracks"])
        check(want > 0 and d["total"] == want and got == [tuple(r) for r in rows],
              "search %r: total and per-track counts equal SQL" % q,
              (d["total"], want))
    names = [r[0] for r in db.execute(
        "SELECT DISTINCT str.s FROM slice s JOIN str ON str.id = s.name JOIN track t "
        "ON t.id = s.track WHERE t.domain = 'system'")]
    want_names = [n for n in names if re.search("^nrt_.*te$", n, re.I)]
    want = db.execute(base + "str.s IN (%s)" % ",".join("?" * len(want_names)),
                      want_names).fetchall()
    d = c.json("/api/v1/search?q=%s&limit=500" % urllib.parse.quote("name~^nrt_.*te$"))
    check(want_names and d["total"] == sum(n for _, n in want) and
          all(re.search("^nrt_.*te$", i["name"], re.I) for i in d["items"]),
          "search name~regex matches the names the regex matches", d["total"])
    all_hits = c.json("/api/v1/search?q=nrt&limit=6")["items"]
    d = c.json("/api/v1/search?q=nrt&limit=3&offset=3")
    check([i["key"] for i in d["items"]] == [i["key"] for i in all_hits[3:]],
          "search offset/limit pages the same ordered hits", d["items"])
    for q in ("dur>2xs", "pid:abc", "name~(", "dur=>1ms"):
        st, _, body = c.get("/api/v1/search?q=" + urllib.parse.quote(q))
        b = json.loads(body)
        check(st == 400 and b["error"] == "bad_parameter" and q in b["detail"],
              "search %r answers 400 naming the term" % q, body)


def union(intervals):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


ENGINE_KEYS = {"Tensor": "tensor", "TensorMatrix": "tensor_matrix",
               "Vector": "vector", "Scalar": "scalar", "GpSimd": "gpsimd",
               "Sync": "sync"}


def check_summary(c, m, db):
    s = c.json("/api/v1/summary")
    check(s["instances"] == len(m["instances"]) and
          s["processes"] == len(m["processes"]) and
          len(s["device_profiles"]) == len(m["device_profiles"]),
          "summary counts instances, processes and device profiles",
          {k: s[k] for k in ("instances", "processes")})
    check(int(s["system_profile_time_ns"]) == int(m["last_ts"]) - int(m["first_ts"]),
          "summary system profile time is last - first", s["system_profile_time_ns"])
    ok_engines, ok_mfu, ok_calls = True, True, True
    for p in s["device_profiles"]:
        pid = int(p["id"])
        for label, key in ENGINE_KEYS.items():
            iv = [(r[0], r[1]) for r in db.execute(
                "SELECT start_ts, end_ts FROM Instruction WHERE device_profile_id = ? "
                "AND timeline_track = ?", (pid, label))]
            if iv:
                got = int(p["engines"][key]["active_ns"])
                ok_engines = ok_engines and got == union(iv)
        # from the instructions themselves, not the profile's totals
        row = db.execute("SELECT peak_flops * (last_ts - first_ts) / 1e9, "
                         "(SELECT total(raw_flops) FROM Instruction i WHERE "
                         "i.device_profile_id = d.id), (SELECT total(raw_flops) FROM "
                         "Instruction i WHERE i.device_profile_id = d.id AND opcode = "
                         "'TRANSPOSE') FROM DeviceProfileList d WHERE id = ?",
                         (pid,)).fetchone()
        want_hfu = 100 * row[1] / row[0]
        want_mfu = 100 * (row[1] - row[2]) / row[0]
        ok_mfu = (ok_mfu and row[2] > 0 and
                  abs(p["mfu_percent"] - want_mfu) < 1e-9 * want_mfu and
                  abs(p["hfu_percent"] - want_hfu) < 1e-9 * want_hfu)
        calls = db.execute("SELECT count(*) FROM ExecutionInfo WHERE device_profile_id = ?",
                           (pid,)).fetchone()[0]
        ok_calls = ok_calls and p["calls"] == calls
    check(ok_engines, "engine active time is the union of its instructions")
    check(ok_mfu, "HFU = FLOPs / (peak_flops * duration), MFU the same "
          "without the transposes' FLOPs")
    check(ok_calls, "calls count the executions")
    names = [h["name"] for h in s["hbm"]]
    check(len(names) == db.execute("SELECT count(*) FROM track WHERE source = "
                                   "'neuron_hbm_usage'").fetchone()[0] and
          all(n.endswith("/neuron_hbm_usage") for n in names),
          "summary lists the HBM tracks by name", names[:2])
    d = c.json("/api/v1/device-profiles?filter=NC_1&per_page=1&page=2")
    n = sum(1 for x in m["device_profiles"] if x["nc"] == 1)
    check(d["total"] == n and len(d["items"]) == min(1, max(0, n - 1)),
          "device profiles filter (case-insensitive) and page", (d["total"], len(d["items"])))
    one = c.json("/api/v1/device-profiles/%s" % s["device_profiles"][0]["id"])
    check(len(one["executions"]) == s["device_profiles"][0]["calls"] and
          one["metadata"] and one["summary"]["id"] == one["id"],
          "a device profile carries its executions, metadata and summary")


def check_range(c, m, db):
    first, last = db.execute("SELECT min(first_ts), max(last_ts) FROM track "
                             "WHERE domain = 'system'").fetchone()
    fw = [r[0] for r in db.execute("SELECT id FROM track WHERE source = 'framework'")]
    d = c.json("/api/v1/range-summary?tracks=%s&start=%d&end=%d" % (
        ",".join(map(str, fw)), first, last + 1))
    got = {r["name"]: r["count"] for r in d["rows"]}
    # the framework trace's names: ops, step annotations, python frames
    want = {k: v for k, v in m["events"].items()
            if k.startswith(("aten::", "ProfilerStep", "torch/", "<built-in"))}
    check(got == want, "range summary over the framework tracks counts every "
          "framework event", {k: (got.get(k), want.get(k)) for k in set(got) | set(want)
                              if got.get(k) != want.get(k)})
    tot = {r["name"]: int(r["total_ns"]) for r in d["rows"]}
    want_t = dict(db.execute("SELECT name, sum(duration_ns) FROM SystemProfileEvents "
                             "WHERE trace_event_source = 'framework' GROUP BY name"))
    check(tot == want_t, "range summary totals are the summed durations")
    ok = all(0 <= int(r["self_ns"]) <= int(r["total_ns"]) for r in d["rows"])
    step = [r for r in d["rows"] if r["name"].startswith("ProfilerStep")]
    check(ok and step and all(int(r["self_ns"]) < int(r["total_ns"]) for r in step),
          "self time excludes the nested events")


def sql(c, body):
    st, _, data = c.req("POST", "/api/v1/db/system/_search", body=json.dumps(body),
                        headers={"Content-Type": "application/json"})
    return st, json.loads(data)


def check_sql(c, m, db):
    st, d = sql(c, {"type": "databaseExplorerQuery",
                    "query": "SELECT count(*) AS n FROM SystemProfileEvents"})
    check(st == 200 and d["columns"] == ["n"] and
          d["rows"] == [[m["tables"]["SystemProfileEvents"]]] and not d["truncated"],
          "the SQL endpoint answers a SELECT", d)
    st, d = sql(c, {"type": "databaseExplorerQuery",
                    "query": "SELECT a.ts FROM slice a JOIN slice b LIMIT 20000"})
    check(st == 200 and len(d["rows"]) == 10000 and d["truncated"],
          "the SQL endpoint stops at 10,000 rows", (st, len(d.get("rows", []))))
    for q, what in (("DELETE FROM slice", "DELETE"),
                    ("INSERT INTO str VALUES (999999, 'x')", "INSERT"),
                    ("ATTACH DATABASE '/tmp/x.db' AS x", "ATTACH"),
                    ("PRAGMA writable_schema=1", "PRAGMA"),
                    ("SELECT load_extension('/tmp/x.so')", "load_extension"),
                    ("CREATE TABLE x(a)", "CREATE")):
        st, d = sql(c, {"type": "databaseExplorerQuery", "query": q})
        check(st == 403 and d["error"] == "refused", "the SQL endpoint refuses %s" % what,
              (st, d))
    st, d = sql(c, {"type": "databaseExplorerQuery", "query": "SELECT 1; SELECT 2"})
    check(st == 400 and "one statement" in d["detail"],
          "the SQL endpoint refuses a second statement", d)
    st, d = sql(c, {"type": "databaseExplorerQuery", "query": "SELEKT"})
    check(st == 400 and d["error"] == "sql_error", "a syntax error is a 400", d)
    st, d = sql(c, {"type": "databaseExplorerQuery",
                    "query": "SELECT count(*) FROM slice a, slice b, slice c"})
    check(st == 400 and d["error"] == "sql_timeout", "a runaway query stops after 5 s", d)
    st, d = sql(c, {"type": "tableSchema"})
    tables = {t["name"]: t for t in d.get("tables", [])}
    check(st == 200 and "SystemProfileEvents" in tables and
          tables["SystemProfileEvents"]["type"] == "view" and
          "start_ts" in [x["name"] for x in tables["SystemProfileEvents"]["columns"]],
          "tableSchema lists tables and views with columns")
    st, d = sql(c, {"type": "listDbFiles"})
    check(st == 200 and d["files"][0]["size"] > 0, "listDbFiles names the store", d)
    st, d = sql(c, {"type": "bogus"})
    check(st == 400 and "'type'" in d["detail"], "an unknown type is a 400 naming 'type'")
    # The server answers from the Content-Length header and closes at once,
    # so send the headers only: a client still sending the body could see
    # the connection reset before it reads the answer.
    ans = raw_request(c.port, b"POST /api/v1/db/system/_search HTTP/1.1\r\n"
                      b"Host: localhost\r\nContent-Length: 1048577\r\n\r\n")
    check(ans.startswith(b"HTTP/1.1 413"), "a body over 1 MiB is refused (413)",
          ans[:40])


def check_export(c, m, db):
    n = m["tables"]["SystemProfileEvents"]
    st, r, data = c.get("/api/v1/export?format=csv")
    lines = data.decode().splitlines()
    check(st == 200 and r.getheader("Content-Type").startswith("text/csv") and
          len(lines) == n + 1 and lines[0].startswith("id,name,start_ts"),
          "csv export: a header and one row per event", (st, len(lines)))
    st, r, data = c.get("/api/v1/export?format=perfetto")
    d = json.loads(data)
    xs = [e for e in d["traceEvents"] if e["ph"] == "X"]
    # endpoints: v2 (bind_id on the event) or v1 flow events; starts: s
    # or flow_out without flow_in
    fs = collections.Counter(e["ph"] for e in d["traceEvents"] if e["ph"] in "stf")
    v2 = [e for e in xs if "bind_id" in e]
    starts = fs["s"] + sum(1 for e in v2 if not e.get("flow_in"))
    ends = db.execute("SELECT count(*), count(DISTINCT flow_id) FROM flow").fetchone()
    check(len(xs) == n and sum(fs.values()) + len(v2) == ends[0] and
          starts == ends[1], "perfetto export: every event, every flow "
          "endpoint, one start per flow", (len(xs), fs, len(v2), ends))
    procs = {e["args"]["name"] for e in d["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    want = {"%s-pid%d" % (p["instance_id"], p["pid"]) for p in m["processes"]}
    check(procs == want, "perfetto processes are <instance>-pid<pid>", procs)
    st, _, data = c.get("/api/v1/export?format=summary-json")
    check(st == 200 and len(json.loads(data)["device_profiles"]) ==
          len(m["device_profiles"]), "summary-json export")
    st, _, data = c.get("/api/v1/export?format=summary-text")
    check(st == 200 and data.count(b"Device profile ") == len(m["device_profiles"]),
          "summary-text export lists every device profile")
    st, _, data = c.get("/api/v1/export?format=xml")
    check(st == 400 and b"'format'" in data, "an unknown export format is a 400")


def check_http(c, port):
    # keep-alive: one connection answers many requests
    c2 = Client(port)
    c2.get("/api/v1/health")
    sock = c2.conn.sock
    st, r, _ = c2.get("/api/v1/tracks")
    check(sock is not None and c2.conn.sock is sock and st == 200,
          "keep-alive: two requests on one connection")
    st, r, data = c2.get("/")
    etag = r.getheader("ETag")
    check(st == 200 and r.getheader("Content-Type").startswith("text/html") and etag,
          "the page is served with a content type and an ETag")
    st, _, _ = c2.get("/", headers={"If-None-Match": etag})
    check(st == 304, "a matching If-None-Match gets 304")
    check(c2.conn.sock is sock, "static files keep the connection alive too")
    st, r, _ = c2.get("/style.css")
    check(st == 200 and r.getheader("Content-Type").startswith("text/css"), "css type")
    # refusals
    for host in ("evil.com", "evil.com:%d" % port, "localhost.evil.com",
                 "127.0.0.2:%d" % port):
        st, _, data = c.get("/api/v1/health", headers={"Host": host})
        check(st == 403 and json.loads(data)["error"], "Host %s is refused (403)" % host)
    st, _, _ = c.get("/", headers={"Host": "evil.com"})
    check(st == 403, "static files check Host too")
    for h in ("127.0.0.1:%d" % port, "[::1]:%d" % port, "LOCALHOST"):
        st, _, _ = c.get("/api/v1/health", headers={"Host": h})
        check(st == 200, "Host %s is accepted" % h)
    for path in ("/../../../../etc/passwd", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
                 "/js/..%2f..%2f..%2f..%2fetc%2fpasswd", "//etc/passwd",
                 "/..\\..\\etc\\passwd", "/%2fetc%2fpasswd"):
        data = raw_request(port, ("GET %s HTTP/1.1\r\nHost: localhost\r\n"
                                  "Connection: close\r\n\r\n" % path).encode())
        check(data.startswith(b"HTTP/1.1 404") and b"root:" not in data,
              "path %s is refused (404)" % path, data[:80])
    bad = [("/api/v1/slices?tracks=1&start=10&end=5&px=10", "'end'"),
           ("/api/v1/slices?tracks=1&start=0&end=5&px=0", "'px'"),
           ("/api/v1/slices?tracks=1&start=0&end=5&px=10001", "'px'"),
           ("/api/v1/slices?tracks=1&start=x&end=5&px=10", "'start'"),
           ("/api/v1/slices?tracks=1,,2&start=0&end=5&px=10", "'tracks'"),
           ("/api/v1/slices?start=0&end=5&px=10", "'tracks'"),
           ("/api/v1/slices?tracks=%s&start=0&end=5&px=10" % ",".join(["1"] * 201),
            "'tracks'"),
           ("/api/v1/counters?tracks=1&start=0&end=5", "'px'"),
           ("/api/v1/slices?tracks=1&start=-9223372036854775808"
            "&end=9223372036854775807&px=10", "'start'/'end'"),
           ("/api/v1/tracks?grouping=worker", "'grouping'"),
           ("/api/v1/search?q=", "'q'"),
           ("/api/v1/search?q=" + "a" * 257, "'q'"),
           ("/api/v1/search?q=a&domain=gpu", "'domain'"),
           ("/api/v1/search?q=a&page=0", "'page'"),
           ("/api/v1/device-profiles?per_page=501", "'per_page'"),
           ("/api/v1/range-summary?tracks=1", "'start'"),
           ("/api/v1/export", "'format'")]
    for path, param in bad:
        st, _, data = c.get(path)
        d = json.loads(data)
        check(st == 400 and param in d["detail"] and d["error"],
              "%s -> 400 naming %s" % (path[:60], param), (st, d))
    for path in ("/api/v1/slices?tracks=987654&start=0&end=5&px=10",
                 "/api/v1/device-profiles/987654", "/api/v1/device-profiles/987654/tracks",
                 "/api/v1/nothing", "/nothing.js"):
        st, _, data = c.get(path)
        check(st == 404 and json.loads(data)["detail"], "%s -> 404" % path)
    st, r, _ = c.req("POST", "/api/v1/tracks", body=b"{}")
    check(st == 405 and "GET" in r.getheader("Allow", ""), "POST on a GET endpoint -> 405")
    st, r, _ = c.req("DELETE", "/index.html")
    check(st == 405, "DELETE on a file -> 405")
    st, _, _ = c.get("/api/v1/health", headers={"X-Big": "x" * 17000})
    check(st == 431, "headers over 16 KiB are refused (431)", st)
    # a silent client and a half-sent request line block nobody
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    half = socket.create_connection(("127.0.0.1", port))
    half.sendall(b"GET /w")
    t0 = time.time()
    st, _, _ = Client(port).get("/api/v1/health")
    check(st == 200 and time.time() - t0 < 1.0,
          "20 silent clients and a half-sent request line do not delay others")
    half.sendall(b"s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    half.settimeout(5)
    check(half.recv(12).startswith(b"HTTP/1.1"), "the half-sent request is answered "
          "once complete")
    half.close()
    silent[0].settimeout(15)
    t0 = time.time()
    try:
        closed = silent[0].recv(1) == b""
    except socket.timeout:
        closed = False
    check(closed and time.time() - t0 < 12, "a silent client is dropped after its deadline")
    for s in silent:
        s.close()


def check_ws(port, prof):
    st, msgs = ws(port, "--messages", "1")
    c = Client(port)
    gen0 = c.json("/api/v1/profile").get("generation", "")
    check(re.fullmatch(r"[0-9a-f]{16}", gen0) is not None,
          "/profile carries the store generation (16 hex digits)", gen0)
    check(st == "101" and msgs and msgs[0] == {"type": "hello", "state": "ready",
                                               "version": msgs[0].get("version"),
                                               "generation": gen0},
          "WebSocket nex.v1 on the same port: 101 and hello with the generation",
          (st, msgs))
    st, _ = ws(port, "--origin", "http://evil.com")
    check(st != "101", "an upgrade whose Origin does not match Host is refused", st)
    st, _ = ws(port, "--origin", "http://localhost:1")
    check(st != "101", "an Origin with another port is refused", st)
    st, _ = ws(port, "--no-origin")
    check(st != "101", "an upgrade without Origin is refused", st)
    st, _ = ws(port, "--host", "evil.com", "--origin", "http://evil.com")
    check(st != "101", "an upgrade with a foreign Host is refused", st)
    st, _ = ws(port, "--protocol", "")
    check(st != "101", "an upgrade without subprotocol nex.v1 is refused", st)
    # new data: a changed capture file re-ingests and tells open pages
    p = subprocess.Popen([sys.executable, WS_CLIENT, str(port), "--timeout", "60",
                          "--messages", "10000", "--until", "ready"],
                         stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    for root, _, files in os.walk(prof):
        if "trace.json" in files:
            # a blank line after the JSON: a new size, so a new store
            with open(os.path.join(root, "trace.json"), "a") as f:
                f.write("\n")
            break
    out = p.communicate(timeout=90)[0].splitlines()
    types = [json.loads(l)["type"] for l in out[1:]]
    check(types[:2] == ["hello", "new-data"] and types[-1] == "ready",
          "a changed file gives new-data ... ready to open pages", types)
    check(len([t for t in types if t == "progress"]) <= 100,
          "progress messages are rate-limited")
    check_generation(c, gen0, json.loads(out[-1]))


def check_generation(c, gen0, ready):
    """After the re-ingest: requests naming the old store get 409 stale."""
    gen1 = ready.get("generation", "")
    check(re.fullmatch(r"[0-9a-f]{16}", gen1) is not None and gen1 != gen0,
          "the re-ingest's ready message carries a new generation", (gen0, gen1))
    check(c.json("/api/v1/profile").get("generation") == gen1,
          "/profile names the new generation")
    tracks = c.json("/api/v1/tracks?gen=" + gen1)
    check(tracks.get("generation") == gen1, "/tracks names the new generation")
    tid = next(t["base"][0]["id"] for t in tracks["tracks"] if t["kind"] == "slices")
    win = "/api/v1/slices?tracks=%s&start=0&end=9223372036854775807&px=100" % tid
    for path in [win, "/api/v1/tracks", "/api/v1/search?q=nrt",
                 "/api/v1/summary", "/api/v1/device-profiles"]:
        sep = "&" if "?" in path else "?"
        st, _, body = c.get(path + sep + "gen=" + gen0)
        b = json.loads(body)
        check(st == 409 and b.get("error") == "stale" and b.get("generation") == gen1
              and gen0 in b.get("detail", ""),
              "%s with the old gen: 409 stale naming the new generation" %
              path.split("?")[0], (st, body[:200]))
        st, _, body = c.get(path + sep + "gen=" + gen1)
        check(st == 200, "%s with the new gen: 200" % path.split("?")[0],
              (st, body[:200]))
    st, _, _ = c.get(win)
    check(st == 200, "a request without gen is answered as before", st)


if __name__ == "__main__":
    sys.exit(main("nex-server-test.", run))
