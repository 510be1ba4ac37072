#!/usr/bin/env python3
"""ingest_bench.py -- end-to-end ingest speed and memory (issue: foundation).

Generates a profile of --events system events (and model-mode device
profiles of --device-instructions instructions each), ingests it with
--ingest-only -- the system trace alone, the device profiles alone, both --
reopens it, and prints events/s, instructions/s, MB/s and peak RSS beside
the raw SQLite insert rate of the same number of rows measured in the same
run (bench/sqlite_baseline).

  bench/ingest_bench.py --build BUILD_DIR [--events 10000000] [--work DIR]
                        [--device-instructions 250000] [--device-baseline DIR]

--device-baseline: also ingests the device profiles with that build's
server (another version, same profile, alternated with this one, 3 runs
each) and prints both and their ratio.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time


def run(cmd, **kw):
    """Runs cmd; returns (seconds, peak RSS in MiB of that child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, **kw)
    secs = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the max over all waited children so far
    return secs, max(after, before) / 1024.0


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--work", default="/tmp/nex-bench")
    ap.add_argument("--device-instructions", type=int, default=250000)
    ap.add_argument("--device-baseline")
    a = ap.parse_args()
    synth = os.path.join(a.build, "tools/neuron-explorer-synth")
    server = os.path.join(a.build, "server/neuron-explorer-server")
    base = os.path.join(a.build, "bench/sqlite_baseline")
    os.makedirs(a.work, exist_ok=True)
    prof = os.path.join(a.work, f"profile-{a.events}")
    man = prof + ".json"
    if not os.path.exists(man):
        shutil.rmtree(prof, ignore_errors=True)
        gsecs, _ = run([synth, "--out", prof, "--seed", "3", "--instances", "1",
                        "--processes", "4", "--cores", "4", "--target-events",
                        str(a.events), "--device-profile", "model",
                        "--device-instructions", str(a.device_instructions),
                        "--manifest", man], stderr=subprocess.DEVNULL)
        print(f"generate: {gsecs:.1f} s")
    m = json.load(open(man))
    sys_events = m["tables"]["SystemProfileEvents"]
    dev_events = m["tables"]["Instruction"] + m["tables"]["DmaPacket"]
    size = du(prof)
    db = os.path.join(a.work, "store.db")
    for f in (db, db + ".tmp"):
        if os.path.exists(f):
            os.remove(f)
    secs, rss = run([server, "--dir", prof, "--db", db, "--ingest-only",
                     "--quiet", "--ignore-device-profile"])
    print(f"system ingest: {sys_events} events in {secs:.2f} s = "
          f"{sys_events / secs / 1e6:.2f} M events/s, "
          f"{du(prof) / secs / 1e6:.0f} MB/s of input, peak RSS {rss:.0f} MiB")
    os.remove(db)
    instructions = m["tables"]["Instruction"]
    secs, rss = run([server, "--dir", prof, "--db", db, "--ingest-only",
                     "--quiet", "--ignore-system-profile"])
    print(f"device ingest: {instructions} instructions + "
          f"{dev_events - instructions} DMA packets in {secs:.2f} s = "
          f"{instructions / secs / 1e6:.2f} M instructions/s, "
          f"{dev_events / secs / 1e6:.2f} M device records/s, "
          f"peak RSS {rss:.0f} MiB")
    os.remove(db)
    if a.device_baseline:
        other = os.path.join(a.device_baseline, "server/neuron-explorer-server")
        best = {}
        for _ in range(3):
            for name, srv in (("this build", server), ("baseline", other)):
                s, r = run([srv, "--dir", prof, "--db", db, "--ingest-only",
                            "--quiet", "--ignore-system-profile"])
                os.remove(db)
                best[name] = min(best.get(name, (s, r)), (s, r))
        for name, (s, r) in best.items():
            print(f"device ingest, {name} (best of 3, alternated): {s:.2f} s = "
                  f"{instructions / s / 1e6:.2f} M instructions/s, peak RSS "
                  f"{r:.0f} MiB")
        print(f"device ingest: this build takes "
              f"{best['this build'][0] / best['baseline'][0]:.2f}x the "
              f"baseline's time ({m.get('inst_deps', 0)} instruction "
              f"dependencies in the profile)")
    secs, rss = run([server, "--dir", prof, "--db", db, "--ingest-only",
                     "--quiet"])
    total = sys_events + dev_events
    print(f"full ingest (system + {dev_events} device records): "
          f"{total / secs / 1e6:.2f} M records/s, {size / secs / 1e6:.0f} MB/s, "
          f"peak RSS {rss:.0f} MiB, store {os.path.getsize(db) / 1e6:.0f} MB")
    rsecs, _ = run([server, "--dir", prof, "--db", db, "--ingest-only",
                    "--quiet"])
    print(f"reopen unchanged profile: {rsecs * 1000:.0f} ms")
    out = subprocess.run([base, str(sys_events), os.path.join(a.work, "base.db")],
                         check=True, capture_output=True, text=True).stdout
    rate = float(out.split("rows_per_s=")[1])
    print(f"baseline: raw SQLite insert of {sys_events} slice rows: "
          f"{rate / 1e6:.2f} M rows/s")
    os.remove(os.path.join(a.work, "base.db"))


if __name__ == "__main__":
    main()
