#!/usr/bin/env python3
"""device_test.py -- the Device Trace Viewer's API: instruction dependencies
in an instruction's details and as the arrows of a window, and the FLOPs
utilization (prints TAP).

Generates a profile with neuron-explorer-synth, starts the server and checks
the answers against the generator's manifest and against the instructions'
own inst_dep_ids read from the store with sqlite3 and resolved here in
Python (not through the store's inst_dep table).  Needs NEX_BUILDDIR and
NEX_SRCDIR (set by make check).
"""
import json
import os
import sqlite3
import subprocess
import sys

from nextest import SYNTH, Client, Server, check, main


def instructions(db, profile):
    """key -> (id, ts, dur, opcode, label, deps) of a profile's instructions,
    and id -> key."""
    rows = db.execute(
        "SELECT s.track, s.lane, s.ts, s.id, s.dur, n.s, t.label, "
        "json_extract(s.args, '$.inst_dep_ids') FROM slice s JOIN track t ON "
        "t.id = s.track JOIN str n ON n.id = s.name WHERE t.source = 'engine' "
        "AND t.device_profile_id = ?", (profile,)).fetchall()
    ins, by_id = {}, {}
    for tr, lane, ts, i, dur, op, label, deps in rows:
        key = "%d:%d:%d" % (tr, lane, ts)
        ins[key] = (i, ts, dur, op, label, json.loads(deps) if deps else [])
        by_id.setdefault(i, key)
    return ins, by_id


def run(tmp):
    prof = os.path.join(tmp, "profile")
    man_path = os.path.join(tmp, "manifest.json")
    r = subprocess.run([SYNTH, "--out", prof, "--seed", "11", "--instances", "1",
                        "--processes", "1", "--cores", "2", "--steps", "4",
                        "--device-profile", "model", "--device-instructions",
                        "3000", "--manifest", man_path], capture_output=True)
    if not check(r.returncode == 0, "generator writes a profile", r.stderr):
        return None
    m = json.load(open(man_path))
    store = os.path.join(tmp, "store.db")
    server = Server(tmp, prof, store)
    if not check(server.wait_ready() == "ready", "the server becomes ready"):
        return server
    db = sqlite3.connect("file:%s?mode=ro" % store, uri=True)
    c = Client(server.port)
    profiles = [p["id"] for p in c.json("/api/v1/device-profiles")["items"]]
    check(len(profiles) == len(m["device_profiles"]) == 2, "two device profiles",
          profiles)
    total = 0
    for pid in profiles:
        ins, by_id = instructions(db, int(pid))
        total += sum(len(v[5]) for v in ins.values())
        check_details(c, pid, ins, by_id)
        check_arrows(c, pid, ins, by_id)
    check(total == m["inst_deps"], "the instructions hold the %d dependencies "
          "the generator wrote" % m["inst_deps"], total)
    check_errors(c, db, profiles[0])
    check_utilization(c, db, profiles)
    db.close()
    check(server.stop(10) == 0, "SIGTERM stops the server cleanly")
    return server


def end_json(ins, key, i):
    v = ins[key]
    return {"key": key, "id": str(i), "name": v[3], "label": v[4],
            "start_ts": str(v[1]), "duration_ns": str(v[2])}


def check_details(c, pid, ins, by_id):
    # the instructions with the most dependencies and dependents, and a
    # spread of others
    dependents = {}
    for key, v in ins.items():
        for d in v[5]:
            dependents.setdefault(by_id[d], []).append(key)
    keys = sorted(ins)
    sample = keys[::max(1, len(keys) // 40)]
    sample += [max(ins, key=lambda k: len(ins[k][5])),
               max(dependents, key=lambda k: len(dependents[k]))]
    bad = []
    for key in sample:
        ev = c.json("/api/v1/events/%s" % key)
        want = [end_json(ins, by_id[d], d) for d in ins[key][5]]
        down = sorted(dependents.get(key, []),
                      key=lambda k: tuple(int(x) for x in (k.split(":")[2], k.split(":")[0], k.split(":")[1])))
        want_down = [end_json(ins, k, ins[k][0]) for k in down]
        if ev.get("dependencies") != want or ev.get("dependents") != want_down:
            bad.append((key, ev.get("dependencies"), want, ev.get("dependents"), want_down))
    check(not bad, "profile %s: an instruction's details list its dependencies "
          "(in inst_dep_ids order) and dependents with their keys, %d "
          "instructions" % (pid, len(sample)), bad[:1])
    most = max(len(ins[k][5]) for k in ins)
    check(most >= 2, "profile %s: some instruction waits on two or more" % pid, most)


def arrows_want(ins, by_id, start, end):
    want = set()
    for key, v in ins.items():
        for d in v[5]:
            dk = by_id[d]
            if start <= v[1] < end or start <= ins[dk][1] < end:
                want.add((dk, str(ins[dk][1] + ins[dk][2]), key, str(d), str(v[0])))
    return want


def check_arrows(c, pid, ins, by_id):
    ts = sorted(v[1] for v in ins.values())
    lo, hi = ts[0], ts[-1] + 1
    a = c.json("/api/v1/device-profiles/%s/dependencies?start=%d&end=%d&limit=100000"
               % (pid, lo, hi))
    got = [(x["from"], x["from_end"], x["to"], x["from_id"], x["to_id"]) for x in a["arrows"]]
    want = arrows_want(ins, by_id, lo, hi)
    check(sorted(got) == sorted(want) and not a["truncated"] and len(got) ==
          sum(len(v[5]) for v in ins.values()),
          "profile %s: the whole profile's arrows are every dependency, once "
          "(%d)" % (pid, len(want)), (len(got), len(want), a["truncated"]))
    # a narrow window: arrows with either end starting in it, once each
    s, e = ts[len(ts) // 2], ts[len(ts) // 2 + 40]
    a = c.json("/api/v1/device-profiles/%s/dependencies?start=%d&end=%d" % (pid, s, e))
    got = [(x["from"], x["from_end"], x["to"], x["from_id"], x["to_id"]) for x in a["arrows"]]
    want = arrows_want(ins, by_id, s, e)
    check(sorted(got) == sorted(want) and len(got) == len(set(got)) and
          not a["truncated"] and len(want) > 40,
          "profile %s: a window's arrows are those with an end starting in "
          "it (%d)" % (pid, len(want)), (len(got), len(want)))
    a = c.json("/api/v1/device-profiles/%s/dependencies?start=%d&end=%d&limit=7"
               % (pid, s, e))
    check(len(a["arrows"]) == 7 and a["truncated"] and
          set((x["from"], x["from_end"], x["to"], x["from_id"], x["to_id"])
              for x in a["arrows"]) <= want,
          "profile %s: limit=7 gives 7 of them, truncated" % pid, a)


def check_errors(c, db, pid):
    for path, st in (("/api/v1/device-profiles/987654/dependencies?start=0&end=9", 404),
                     ("/api/v1/device-profiles/%s/dependencies?end=9" % pid, 400),
                     ("/api/v1/device-profiles/%s/dependencies?start=9&end=9" % pid, 400),
                     ("/api/v1/device-profiles/%s/dependencies?start=0&end=9&limit=0" % pid, 400),
                     ("/api/v1/device-profiles/x/dependencies?start=0&end=9", 404)):
        code, _, data = c.get(path)
        check(code == st and json.loads(data).get("detail"),
              "%s -> %d with a detail" % (path[8:], st), (code, data[:200]))
    dma = db.execute("SELECT s.track || ':' || s.lane || ':' || s.ts FROM slice s "
                     "JOIN track t ON t.id = s.track WHERE t.source = 'dma' LIMIT 1"
                     ).fetchone()[0]
    ev = c.json("/api/v1/events/%s" % dma)
    check("dependencies" not in ev and "dependents" not in ev,
          "a DMA packet's details carry no instruction dependencies")


def check_utilization(c, db, profiles):
    s = {p["id"]: p for p in c.json("/api/v1/summary")["device_profiles"]}
    bad = []
    for pid in profiles:
        one = c.json("/api/v1/device-profiles/%s" % pid)["summary"]
        peak, dur = db.execute("SELECT peak_flops, last_ts - first_ts FROM "
                               "DeviceProfileList WHERE id = ?", (int(pid),)).fetchone()
        allf, tr = db.execute(
            "SELECT total(raw_flops), total(CASE opcode WHEN 'TRANSPOSE' THEN "
            "raw_flops END) FROM Instruction WHERE device_profile_id = ?",
            (int(pid),)).fetchone()
        hfu, mfu = 100 * allf / (peak * dur / 1e9), 100 * (allf - tr) / (peak * dur / 1e9)
        if not (tr > 0 and abs(one["hfu_percent"] - hfu) < 1e-9 * hfu and
                abs(one["mfu_percent"] - mfu) < 1e-9 * mfu and
                s[pid]["hfu_percent"] == one["hfu_percent"] and
                s[pid]["mfu_percent"] == one["mfu_percent"]):
            bad.append((pid, one["hfu_percent"], hfu, one["mfu_percent"], mfu))
    check(not bad, "HFU and MFU from the instructions' FLOPs (transposes count "
          "for HFU only), the same in the summary", bad)


if __name__ == "__main__":
    sys.exit(main("nex-device-test.", run))
