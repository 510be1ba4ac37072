#!/bin/bash
# synth_test.sh -- neuron-explorer-synth: determinism, exact manifest counts
# (checked by an independent reader of the capture formats written here in
# Python, not by the C code), semantics of the generated profile, option
# errors, and the file names of the three device-profile modes.  Prints TAP.
set -u
SYNTH="${NEX_BUILDDIR:-.}/tools/neuron-explorer-synth"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { # check DESCRIPTION COMMAND...
  local d=$1
  shift
  if "$@" >"$T/out" 2>&1; then ok "$d"; else not_ok "$d"; sed 's/^/# /' "$T/out" | head -20; fi
}
echo "1..22"

# The independent reader: walks the varint framing and the protobuf wire
# format, checks the profile's invariants and compares every count with
# the manifest.  Usage: verify.py DIR MANIFEST DEVICE_INSTRUCTIONS
cat >"$T/verify.py" <<'EOF'
import decimal, gzip, hashlib, io, json, os, struct, sys, tarfile

out, manifest_path, dev_ins = sys.argv[1], sys.argv[2], int(sys.argv[3])
m = json.load(open(manifest_path))
errors = []
def err(msg):
    if len(errors) < 20:
        errors.append(msg)

def varint(b, i):
    x = s = 0
    while True:
        c = b[i]; i += 1
        x |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return x, i

def msg(b):
    """field number -> list of values (ints, bytes, or raw 8/4-byte)"""
    f, i = {}, 0
    while i < len(b):
        key, i = varint(b, i)
        no, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        elif wt == 1:
            v = b[i:i + 8]; i += 8
        elif wt == 5:
            v = b[i:i + 4]; i += 4
        else:
            raise ValueError("wire type %d" % wt)
        f.setdefault(no, []).append(v)
    return f

def sint(v):
    return v - (1 << 64) if v >= 1 << 63 else v

def get(f, no, default=0):
    return f[no][0] if no in f else default

def text(f, no):
    return get(f, no, b"").decode()

def packed(f, no):
    vals = []
    for b in f.get(no, []):
        i = 0
        while i < len(b):
            v, i = varint(b, i); vals.append(v)
    return vals

def records(path, magic):
    b = open(path, "rb").read()
    if b[:4] != magic.encode() or struct.unpack("<I", b[4:8])[0] != 1:
        err("%s: bad header" % path)
        return
    i = 8
    while i < len(b):
        n, i = varint(b, i)
        if i + n > len(b):
            err("%s: truncated record at %d" % (path, i)); return
        yield msg(b[i:i + n]); i += n

count = dict.fromkeys(["SystemProfileEvents", "SystemProfileHbmUsage",
    "CpuUsage", "HostMemUsage", "SystemProfileMetadata", "DeviceProfileList",
    "ExecutionInfo", "Instruction", "DmaPacket", "SemaphoreUpdate"], 0)
names, sources, flows, ids = {}, {"neuron_rt": 0, "neuron_hw": 0, "framework": 0}, set(), set()
HW = {"nc_exec_running", "cc_running", "cc_exec_barrier"}
first = last = None
seen_last = 0
profiles = []
total_deps = [0]
for p in m["processes"]:
    d = os.path.join(out, p["dir"])
    ti = list(records(os.path.join(d, "trace_info.pb"), "NXTI"))
    if len(ti) != 1:
        err("%s: %d TraceInfo records" % (d, len(ti))); continue
    ti = ti[0]
    count["SystemProfileMetadata"] += 1
    files = sorted(x.decode() for x in ti.get(9, []))
    if files != sorted(x for x in os.listdir(d) if x != "trace_info.pb"):
        err("%s: trace_info files %s" % (d, files))
    if text(ti, 1) != p["instance_id"] or get(ti, 2) != p["pid"]:
        err("%s: trace_info instance/pid" % d)
    t0, t1 = get(ti, 3), get(ti, 4)
    first = t0 if first is None else min(first, t0)
    last = t1 if last is None else max(last, t1)

    # ntrace.pb: completion order, clock mapping, nesting, flows
    sync, hwspan, execdur, stored, prev_done = {}, {}, {}, 0, 0
    rt_flow = {}
    for r in records(os.path.join(d, "ntrace.pb"), "NXTR"):
        if 2 in r:
            h = msg(r[2][0])
            count["SystemProfileHbmUsage"] += 1
            if get(h, 4) != sum(get(h, k) for k in range(5, 27)):
                err("hbm total != sum of categories")
            done = get(h, 1)
        else:
            e = msg(r[1][0])
            stored += 1
            count["SystemProfileEvents"] += 1
            name, src = text(e, 2), get(e, 5)
            names[name] = names.get(name, 0) + 1
            sources["neuron_hw" if src == 2 else "neuron_rt"] += 1
            if src not in (1, 2):
                err("event %s without explicit source" % name)
            i = get(e, 1)
            if i <= 2**53 or i in ids:
                err("id %d not unique or below 2^53" % i)
            ids.add(i)
            ts, dur = sint(get(e, 3)), get(e, 4)
            nc, xid = sint(get(e, 7)), get(e, 10)
            for fl in packed(e, 13):
                flows.add(fl)
            if name == "timestamp_sync_point":
                sync[(nc, xid)] = (get(e, 17), get(e, 18))
                if dur != 0 or get(e, 17) != ts:
                    err("sync point shape")
            if name in HW:
                if (nc, xid) not in sync:
                    err("%s before its sync point" % name); continue
                c, dv = sync[(nc, xid)]
                ts = c + (ts - dv)
                hwspan.setdefault((nc, xid), {})[name] = (ts, ts + dur, packed(e, 13))
                if name == "nc_exec_running":
                    execdur[(nc, xid)] = dur
            if name == "nrt_execute":
                hw = hwspan.get((nc, xid), {})
                x = hw.get("nc_exec_running")
                if not x or not (ts <= x[0] and x[1] <= ts + dur) or x[2] != packed(e, 13):
                    err("nrt_execute nc %d exec %d does not wrap its execution" % (nc, xid))
                for k in ("cc_running", "cc_exec_barrier"):
                    if k in hw and not (x[0] <= hw[k][0] and hw[k][1] <= x[1]):
                        err("%s outside its execution" % k)
                rt_flow.update({fl: nc for fl in packed(e, 13)})
            done = ts + dur
        if done < prev_done:
            err("%s: record out of completion order (%d < %d)" % (d, done, prev_done))
        prev_done = done
        seen_last = max(seen_last, done)
    if stored != get(ti, 7):
        err("%s: stored_events %d != %d" % (d, get(ti, 7), stored))
    count["CpuUsage"] += sum(1 for _ in records(os.path.join(d, "cpu_util.pb"), "NXCU"))
    count["HostMemUsage"] += sum(1 for _ in records(os.path.join(d, "host_mem.pb"), "NXHM"))

    tj = os.path.join(d, "trace.json")
    if os.path.exists(tj):
        fw_flows = set()
        for ev in json.load(open(tj), parse_float=decimal.Decimal)["traceEvents"]:
            if ev["ph"] != "X":
                continue
            ts, dur = ev["ts"] * 1000, ev["dur"] * 1000
            if ts != int(ts) or dur != int(dur) or ts < t0:
                err("framework ts/dur not exact ns")
            seen_last = max(seen_last, int(ts + dur))
            count["SystemProfileEvents"] += 1
            sources["framework"] += 1
            names[ev["name"]] = names.get(ev["name"], 0) + 1
            if ev["pid"] != p["pid"] or ev["tid"] != p["pid"]:
                err("framework event off the main thread")
            for fl in ev.get("args", {}).get("flow_id", []):
                fw_flows.add(int(fl))
        if fw_flows != set(rt_flow):
            err("%s: framework flows do not match nrt_execute flows" % d)

    for f in sorted(os.listdir(d)):
        path = os.path.join(d, f)
        if f.endswith(".neff"):
            b = open(path, "rb").read()
            pv, hs, ds = struct.unpack("<QQQ", b[:24])
            if hs != 1024 or ds != len(b) - 1024 or pv != 1:
                err("%s: NEFF header" % f)
            if b[172:204] != hashlib.sha256(b[1024:]).digest():
                err("%s: NEFF hash is not the payload's SHA-256" % f)
            tf = tarfile.open(fileobj=io.BytesIO(gzip.decompress(b[1024:])))
            json.load(tf.extractfile("info.json"))
            if b[268:268 + 6] != b"model_":
                err("%s: NEFF name" % f)
        if not f.endswith(".ntff"):
            continue
        count["DeviceProfileList"] += 1
        rs = records(path, "NTFF")
        h = msg(next(rs)[1][0])
        nc, origin = get(h, 2), sint(get(h, 10))
        n_exec = n_ins = n_deps = 0
        cur, prev_t, tm_end, overlap, seen = None, None, {}, {}, set()
        for r in rs:
            kind = next(iter(r))
            body = msg(r[kind][0])
            if kind == 5:
                count["ExecutionInfo"] += 1; n_exec += 1
                s, e_, xid = sint(get(body, 3)), sint(get(body, 4)), get(body, 7)
                if e_ - s != execdur.get((nc, xid)):
                    err("%s: execution %d length %d != nc_exec_running %s" % (f, xid, e_ - s, execdur.get((nc, xid))))
                if get(body, 2).decode() not in os.listdir(d):
                    err("%s: neff_name %s missing" % (f, get(body, 2)))
                cur, prev_t, tm_end, seen = (s, e_), None, {}, set()
                continue
            t = sint(get(body, 1))
            dur = get(body, 2) if kind in (2, 3, 6) else 0
            if cur is None or t < cur[0] or t + dur > cur[1]:
                err("%s: record outside its execution" % f)
            if prev_t is not None and t < prev_t:
                err("%s: records not in time order" % f)
            prev_t = t
            if kind == 2:
                count["Instruction"] += 1; n_ins += 1
                track = text(body, 4)
                if t < tm_end.get(track, -1):
                    overlap[track] = overlap.get(track, 0) + 1
                tm_end[track] = max(tm_end.get(track, -1), t + dur)
                if get(body, 7) <= 2**53:
                    err("instruction id below 2^53")
                deps = packed(body, 15)
                if not seen.issuperset(deps):
                    err("%s: a dependency is not an earlier instruction of the execution" % f)
                n_deps += len(deps); total_deps[0] += len(deps)
                seen.add(get(body, 7))
            elif kind == 3:
                count["DmaPacket"] += 1
            elif kind == 4:
                count["SemaphoreUpdate"] += 1
        if n_ins != n_exec * dev_ins:
            err("%s: %d instructions for %d executions" % (f, n_ins, n_exec))
        if dev_ins >= 1000 and (not overlap.get("TensorMatrix") or set(overlap) != {"TensorMatrix"}):
            err("%s: overlaps %s (want some on TensorMatrix only)" % (f, overlap))
        if n_ins >= 100 and not n_ins < n_deps < 2 * n_ins:
            err("%s: %d dependencies for %d instructions" % (f, n_deps, n_ins))
        profiles.append({"file": os.path.relpath(path, out), "nc": nc,
                         "executions": n_exec, "instructions": n_ins,
                         "inst_deps": n_deps})

def cmp(what, got, want):
    if got != want:
        err("%s: read %s, manifest says %s" % (what, got, want))
cmp("tables", count, m["tables"])
cmp("events", names, m["events"])
cmp("sources", sources, m["sources"])
cmp("flows", len(flows), m["flows"])
cmp("inst_deps", total_deps[0], m["inst_deps"])
cmp("device_profiles", sorted(profiles, key=lambda x: x["file"]),
    sorted(m["device_profiles"], key=lambda x: x["file"]))
cmp("first_ts", str(first), m["first_ts"])
cmp("last_ts", str(last), m["last_ts"])
cmp("last event end", seen_last, last)
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
EOF

gen() { "$SYNTH" "$@" 2>>"$T/stderr"; }

# 1-4: default run, determinism, seed sensitivity
gen --out "$T/a" --manifest "$T/a.json"
check "default run writes a profile and a manifest" test -s "$T/a.json"
gen --out "$T/b" --manifest "$T/b.json"
check "same seed gives byte-identical output" diff -r "$T/a" "$T/b"
check "same seed gives the same manifest" cmp "$T/a.json" "$T/b.json"
gen --out "$T/c" --seed 2 --manifest "$T/c.json"
content() { (cd "$1" && find . -type f | sort | xargs cat | sha256sum); }
check "a different seed gives different output" test "$(content "$T/a")" != "$(content "$T/c")"

# 5-6: independent reader vs manifest
check "reader counts match the manifest (model mode)" python3 "$T/verify.py" "$T/a" "$T/a.json" 2000
check "model mode: one NTFF per core named <hash>_instid_0_vnc_<n>.ntff" \
  bash -c "test \$(find '$T/a' -name '*_instid_0_vnc_[01].ntff' | wc -l) = 4 && test \$(find '$T/a' -name 'neff_*.neff' | wc -l) = 4 && test \$(ls -d '$T'/a/i-*_pid_* | grep -Ec '/i-[0-9a-f]{17}_pid_[0-9]{6,7}\$') = 2"

# 7-9: session mode
gen --out "$T/s" --device-profile session --steps 9 --cores 3 --instances 2 \
  --processes 1 --device-instructions 1200 --manifest "$T/s.json"
check "session mode: <inst>_pid_<pid>/<timestamp>/profile_nc_<n>_session_0.ntff" \
  bash -c "test \$(find '$T/s' -regextype posix-extended -regex '.*/i-[0-9a-f]{17}_pid_[0-9]+/20251218T1535(5[7-9])/profile_nc_[012]_session_0\.ntff' | wc -l) = 6"
check "reader counts match the manifest (session mode)" python3 "$T/verify.py" "$T/s" "$T/s.json" 1200
check "session NTFFs hold every execution" \
  python3 -c "import json,sys; m=json.load(open('$T/s.json')); sys.exit(not all(p['executions']==9 for p in m['device_profiles']) or len(m['device_profiles'])!=6)"

# 10-12: none mode, no framework
gen --out "$T/n" --device-profile none --no-framework --steps 7 --manifest "$T/n.json"
check "none mode writes no NEFF or NTFF" bash -c "test -z \"\$(find '$T/n' -name '*.ntff' -o -name '*.neff' -o -name trace.json)\""
check "none mode still writes the system files" \
  bash -c "test \$(find '$T/n' -name trace_info.pb -o -name ntrace.pb -o -name cpu_util.pb -o -name host_mem.pb | wc -l) = 8"
check "reader counts match the manifest (none, no framework)" python3 "$T/verify.py" "$T/n" "$T/n.json" 2000

# 13: --target-events within 1%
gen --out "$T/t" --target-events 100000 --device-profile none --manifest "$T/t.json"
check "--target-events 100000 lands within 1%" \
  python3 -c "import json,sys; v=json.load(open('$T/t.json'))['tables']['SystemProfileEvents']; sys.exit(abs(v-100000) > 1000)"
check "reader counts match the manifest (target events)" python3 "$T/verify.py" "$T/t" "$T/t.json" 2000

# 15-22: bad options exit 2 with a message naming the option
bad() { # bad DESCRIPTION ARGS...
  local d=$1
  shift
  "$SYNTH" "$@" >/dev/null 2>"$T/err"
  local rc=$?
  if [ $rc = 2 ] && [ -s "$T/err" ]; then ok "$d"; else not_ok "$d (exit $rc)"; fi
}
bad "missing --out exits 2" --steps 3
bad "--cores 0 exits 2" --out "$T/x1" --cores 0
bad "--steps abc exits 2" --out "$T/x2" --steps abc
bad "--device-profile bogus exits 2" --out "$T/x3" --device-profile bogus
bad "unknown option exits 2" --out "$T/x4" --bogus
bad "--steps with --target-events exits 2" --out "$T/x5" --steps 3 --target-events 1000
bad "unreachable --target-events exits 2" --out "$T/x6" --target-events 5
bad "non-empty --out exits 2" --out "$T/a"

exit $((fails > 0))
