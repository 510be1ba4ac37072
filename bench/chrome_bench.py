#!/usr/bin/env python3
"""chrome_bench.py -- Chrome trace ingest speed and memory (issue 5).

Generates a Kineto-like trace of --size bytes (bench/kineto_gen.py: GPU
kernels, CPU ops, flows), then, on the same file in the same run, measures

  ingest          neuron-explorer-server --dir D --db F --ingest-only --quiet
                  (D holds only the trace: full ingest into SQLite)
  decoder         bench/chrome_decode: fmt_chrome_read alone, counting
  python json     json.load of the file (python3 stdlib)
  trace_engine    the Chrome DevTools trace engine (bench/trace_engine_baseline
                  .mjs): whole-file load as its analyze-trace.mjs does, and
                  when that fails, the Performance panel's chunked loader

and prints wall time, MB/s of input, events/s and peak RSS of each process
(getrusage of that child via wait4), the best of --runs runs, in one table
with the speed ratios, then the targets: ingest >= 150 MB/s, peak RSS
<= 256 MiB, >= 3x the faster baseline.

  bench/chrome_bench.py --build BUILD_DIR [--size 1G] [--runs 2]
      [--data /work/bench-data] [--seed 1] [--timeout 1800]
      [--node-heap-mb 16384] [--no-baselines] [--no-flows]
      [--ingest-baseline OTHER_BUILD_DIR]

--ingest-baseline also measures the ingest of another build (an earlier
commit) on the same file in the same run, right after ours in each round,
so that a change is judged against the same machine load.

A run killed after --timeout seconds is reported as such and not repeated.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_MBPS = 150.0
TARGET_RSS_MIB = 256.0
TARGET_RATIO = 3.0


def busy_seconds():
    """CPU seconds all processes have used since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf(
        "SC_CLK_TCK")


def run(cmd, timeout, **kw):
    """Runs cmd in its own process group; returns a dict with rc, secs, rss
    (peak RSS of that child and its waited children, MiB), out, timed_out
    and others: how many cores other processes kept busy meanwhile."""
    busy0 = busy_seconds()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, start_new_session=True,
                         **kw)
    timed_out = []

    def kill():
        timed_out.append(True)
        os.killpg(p.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.start()
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    secs = time.monotonic() - t0
    timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    return {"rc": p.returncode, "secs": secs, "rss": ru.ru_maxrss / 1024.0,
            "out": out.decode(errors="replace"), "timed_out": bool(timed_out),
            "others": max(0.0, (busy_seconds() - busy0 - ru.ru_utime -
                                ru.ru_stime) / secs)}


def ensure_trace(a):
    name = f"kineto-{a.size}-seed{a.seed}" + ("-noflows" if a.no_flows else "")
    folder = os.path.join(a.data, name)
    trace = os.path.join(folder, "trace.json")
    man = os.path.join(a.data, name + ".manifest.json")
    if not (os.path.exists(trace) and os.path.exists(man)):
        os.makedirs(folder, exist_ok=True)
        t0 = time.monotonic()
        subprocess.run([sys.executable, os.path.join(HERE, "kineto_gen.py"),
                        "--out", trace, "--size", a.size, "--seed",
                        str(a.seed), "--manifest", man]
                       + (["--no-flows"] if a.no_flows else []), check=True,
                       stdout=subprocess.DEVNULL)
        print(f"generate: {time.monotonic() - t0:.1f} s")
    with open(man) as f:
        m = json.load(f)
    if m["bytes"] != os.path.getsize(trace):
        sys.exit(f"{trace}: size differs from {man}; delete both")
    return folder, trace, m


def warm(path):
    """Reads the file once so that every system starts from the page cache."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def measure_ingest(a, folder, build=None):
    server = os.path.join(build or a.build, "server/neuron-explorer-server")
    db = os.path.join(a.data, "chrome_bench.db")
    for f in (db, db + ".tmp", db + "-journal", db + ".tmp-journal"):
        if os.path.exists(f):
            os.remove(f)
    r = run([server, "--dir", folder, "--db", db, "--ingest-only", "--quiet"],
            a.timeout)
    r["note"] = f"store {os.path.getsize(db) / 1e6:.0f} MB" \
        if os.path.exists(db) else ""
    for f in (db, db + ".tmp"):
        if os.path.exists(f):
            os.remove(f)
    return r


def measure_decoder(a, trace):
    prog = os.path.join(a.build, "bench/chrome_decode")
    # always: make rebuilds it when the decoder changed (a binary left from
    # an earlier build would measure the earlier decoder)
    subprocess.run(["make", "-C", a.build, "-s", "bench/chrome_decode"],
                   check=True)
    r = run([prog, trace], a.timeout)
    if r["rc"] == 0:
        kv = dict(x.split("=") for x in r["out"].split())
        r["note"] = (f"{kv['slices']} slices, {kv['flows']} flow ends, "
                     f"{kv['counters']} samples")
    return r


def measure_python(a, trace):
    code = ("import json,sys\n"
            "with open(sys.argv[1], encoding='utf-8') as f:\n"
            "    d = json.load(f)\n"
            "print(len(d['traceEvents']))\n")
    r = run([sys.executable, "-c", code, trace], a.timeout)
    if r["rc"] == 0:
        r["note"] = f"{int(r['out'])} events"
    return r


def measure_engine(a, trace, mode):
    r = run(["node", f"--max-old-space-size={a.node_heap_mb}",
             os.path.join(HERE, "trace_engine_baseline.mjs"), trace, mode],
            a.timeout, stderr=subprocess.DEVNULL)
    lines = [x for x in r["out"].splitlines() if x.startswith("{")]
    res = json.loads(lines[-1]) if lines else {}
    r["engine"] = res
    if res.get("ok"):
        r["note"] = (f"{mode}: load {res['load_s']:.1f} s + engine "
                     f"{res['parse_s']:.1f} s")
    else:
        r["rc"] = r["rc"] or 1
        why = res.get("error") or ("killed after timeout" if r["timed_out"]
                                   else f"exit {r['rc']} (out of memory?)")
        r["note"] = f"{mode}: FAILED: {why}"
    return r


def best(runs):
    """The fastest successful run (peak RSS: the largest of all runs), or
    the last failed one."""
    ok = [r for r in runs if r["rc"] == 0 and not r["timed_out"]]
    if not ok:
        return runs[-1]
    b = dict(min(ok, key=lambda r: r["secs"]))
    b["rss"] = max(r["rss"] for r in ok)
    return b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--size", default="1G")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--data", default="/work/bench-data")
    ap.add_argument("--timeout", type=float, default=1800,
                    help="seconds per run before it is killed")
    ap.add_argument("--node-heap-mb", type=int, default=16384)
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--no-flows", action="store_true",
                    help="the same trace without its flow events (to see "
                    "what binding flows costs)")
    ap.add_argument("--ingest-baseline", metavar="BUILD",
                    help="also the ingest of this other build directory")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    os.makedirs(a.data, exist_ok=True)
    folder, trace, m = ensure_trace(a)
    size, events = m["bytes"], m["events"]
    print(f"trace: {trace}: {size / 1e6:.0f} MB, {events} events "
          f"({', '.join(f'{k} {v}' for k, v in m['by_phase'].items())}); "
          f"{os.cpu_count()} cores")
    warm(trace)

    systems = [("ingest (ours)", lambda: measure_ingest(a, folder)),
               ("decoder alone (ours)", lambda: measure_decoder(a, trace)),
               ("python json.load", lambda: measure_python(a, trace)),
               ("trace_engine whole-file",
                lambda: measure_engine(a, trace, "whole")),
               ("trace_engine chunked",
                lambda: measure_engine(a, trace, "stream"))]
    if a.no_baselines:
        systems = systems[:2]
    if a.ingest_baseline:
        other = os.path.abspath(a.ingest_baseline)
        systems.insert(1, ("ingest (baseline build)",
                           lambda: measure_ingest(a, folder, other)))
    results = {}
    for i in range(a.runs):
        for name, fn in systems:
            done = results.get(name, [])
            whole = results.get("trace_engine whole-file", [])
            # Killed once after --timeout: not again.  The chunked loader
            # runs only where the whole-file load fails; that failure is
            # deterministic (V8's string limit), so it is not repeated.
            if any(r["timed_out"] for r in done) or \
               (name == "trace_engine chunked" and whole[-1]["rc"] == 0) or \
               (name == "trace_engine whole-file" and done and done[-1]["rc"]):
                continue
            r = fn()
            results.setdefault(name, []).append(r)
            status = "ok" if r["rc"] == 0 else \
                ("TIMEOUT" if r["timed_out"] else f"rc={r['rc']}")
            print(f"run {i + 1}: {name}: {r['secs']:.2f} s, "
                  f"{r['rss']:.0f} MiB, others {r['others']:.2f} cores, "
                  f"{status} "
                  f"{r.get('note', '')}", flush=True)

    rows = {name: best(rs) for name, rs in results.items()}
    ours = rows["ingest (ours)"]
    ours_ok = ours["rc"] == 0 and not ours["timed_out"]
    hdr = (f"{'system':<26}{'wall s':>9}{'MB/s':>9}{'M ev/s':>9}"
           f"{'peak RSS MiB':>14}{'ingest speedup':>16}  notes")
    print()
    print(hdr)
    print("-" * len(hdr))
    for name, r in rows.items():
        ok = r["rc"] == 0 and not r["timed_out"]
        speed = (f"{r['secs'] / ours['secs']:.2f}x"
                 if ok and ours_ok and not name.endswith("(ours)") else "")
        if ok:
            print(f"{name:<26}{r['secs']:>9.2f}{size / r['secs'] / 1e6:>9.1f}"
                  f"{events / r['secs'] / 1e6:>9.3f}{r['rss']:>14.0f}"
                  f"{speed:>16}  {r.get('note', '')}")
        else:
            print(f"{name:<26}{'-':>9}{'-':>9}{'-':>9}{r['rss']:>14.0f}"
                  f"{'':>16}  {r.get('note', '')}"
                  f"{' timed out' if r['timed_out'] else ''}"
                  f" (after {r['secs']:.0f} s)")
    print()
    others = max(r["others"] for r in rows.values())
    if others > 0.25:
        print(f"note: machine busy: other processes kept up to {others:.2f} "
              f"of {os.cpu_count()} cores busy during a measured run; times "
              f"are pessimistic")
    if not ours_ok:
        print(f"targets: FAIL: the ingest "
              f"{'was killed after' if ours['timed_out'] else 'failed in'} "
              f"{ours['secs']:.0f} s (< {size / ours['secs'] / 1e6:.1f} MB/s)")
        return 1
    mbps = size / ours["secs"] / 1e6
    fast = [r["secs"] for n, r in rows.items()
            if n.startswith(("python", "trace_engine")) and r["rc"] == 0
            and not r["timed_out"]]
    checks = [(f"ingest >= {TARGET_MBPS:.0f} MB/s", mbps >= TARGET_MBPS,
               f"{mbps:.1f} MB/s"),
              (f"peak RSS <= {TARGET_RSS_MIB:.0f} MiB",
               ours["rss"] <= TARGET_RSS_MIB, f"{ours['rss']:.0f} MiB")]
    if fast:
        ratio = min(fast) / ours["secs"]
        checks.append((f">= {TARGET_RATIO:.0f}x the faster baseline",
                       ratio >= TARGET_RATIO, f"{ratio:.2f}x"))
    for what, ok, val in checks:
        print(f"target {what}: {'PASS' if ok else 'FAIL'} ({val})")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
