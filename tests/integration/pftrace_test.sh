#!/bin/bash
# pftrace_test.sh -- --output-format pftrace and GET /api/v1/export?format=
# pftrace write a Perfetto protobuf trace that protoc decodes as a Trace and
# that re-ingests (as a directory's *.pftrace) to the same slices (names,
# ts, dur), flows (the events they link) and counter samples, for a
# generated Neuron profile and for Chrome traces.
. "$NEX_SRCDIR/tests/integration/lib.sh"
tap_tmpdir
PROTO="$NEX_SRCDIR/proto"

evq="SELECT name || ' ' || start_ts || ' ' || duration_ns FROM SystemProfileEvents ORDER BY 1"
flowq="SELECT group_concat(e.name || '@' || e.start_ts, ',') FROM
   (SELECT f.flow_id, f.track, f.lane, f.ts FROM flow f ORDER BY f.flow_id, f.ts) f
   JOIN SystemProfileEvents e ON e.track = f.track AND e.lane = f.lane AND e.start_ts = f.ts
   GROUP BY f.flow_id ORDER BY 1"
cq="SELECT c.ts || '=' || c.value FROM counter c JOIN track t ON t.id = c.track
    WHERE t.domain = 'system' ORDER BY 1"

# roundtrip NAME DIR: export DIR's store as pftrace, decode it, re-ingest
# it and compare.
roundtrip() {
  local n=$1 dir=$2
  mkdir -p "$T_TMP/$n.rt"
  "$SERVER" --dir "$dir" --db "$T_TMP/$n.a.db" --quiet --output-format pftrace \
    --output-file "$T_TMP/$n.rt/export.pftrace" 2>/dev/null
  is "$?" 0 "$n: --output-format pftrace exits 0"
  protoc --decode=perfetto.protos.Trace -I "$PROTO" "$PROTO/perfetto_trace.proto" \
    < "$T_TMP/$n.rt/export.pftrace" > "$T_TMP/$n.txt"
  ok $? "$n: protoc decodes the file as a perfetto.protos.Trace"
  is "$(grep -c '^packet {' "$T_TMP/$n.txt")" \
    "$(grep -c '^  trusted_packet_sequence_id: 1$' "$T_TMP/$n.txt")" \
    "$n: every packet is on sequence 1"
  is "$(grep -m1 'sequence_flags' "$T_TMP/$n.txt")" "  sequence_flags: 1" \
    "$n: the first packet clears the incremental state"
  "$SERVER" --dir "$T_TMP/$n.rt" --db "$T_TMP/$n.b.db" --ingest-only --quiet
  is "$?" 0 "$n: the export ingests without a warning"
  for w in a b; do
    sqlite3 "$T_TMP/$n.$w.db" "$evq" > "$T_TMP/$n.$w.events"
    sqlite3 "$T_TMP/$n.$w.db" "$flowq" > "$T_TMP/$n.$w.flows"
    sqlite3 "$T_TMP/$n.$w.db" "$cq" > "$T_TMP/$n.$w.counters"
  done
  cmp -s "$T_TMP/$n.a.events" "$T_TMP/$n.b.events"
  ok $? "$n: the same $(wc -l < "$T_TMP/$n.a.events") slices (name, ts, dur)"
  cmp -s "$T_TMP/$n.a.flows" "$T_TMP/$n.b.flows"
  ok $? "$n: the same $(wc -l < "$T_TMP/$n.a.flows") flows linking the same events"
  cmp -s "$T_TMP/$n.a.counters" "$T_TMP/$n.b.counters"
  ok $? "$n: the same $(wc -l < "$T_TMP/$n.a.counters") counter samples (ts, value)"
}

P="$T_TMP/profile"
"$SYNTH" --out "$P" --seed 5 --instances 1 --processes 2 --cores 2 --steps 6 \
  2>/dev/null
ok $? "generator writes a profile"
roundtrip synth "$P"
is "$(sqlite3 "$T_TMP/synth.a.db" "SELECT count(*) > 100, count(DISTINCT name) > 5
      FROM SystemProfileEvents")" "1|1" "synth: slices of several names"
is "$(wc -l < "$T_TMP/synth.a.flows")" "$(sqlite3 "$T_TMP/synth.a.db" \
   "SELECT count(DISTINCT flow_id) FROM flow")" "synth: every flow compared"
[ "$(wc -l < "$T_TMP/synth.a.counters")" -gt 1000 ]
ok $? "synth: counters compared"
# what the tracks say (instance, pid, NeuronCore, physical core, worker) and
# the HBM rows, whose series are paired by time
tq="SELECT DISTINCT source, instance_id, pid, tid, nc_idx, pcore_idx, worker_gid
    FROM track WHERE domain = 'system' AND kind = 'slices' ORDER BY 1, 2, 3, 4, 5"
hq="SELECT * FROM SystemProfileHbmUsage ORDER BY 1"
for q in tq hq; do
  for w in a b; do sqlite3 "$T_TMP/synth.$w.db" "${!q}" > "$T_TMP/synth.$w.$q"; done
done
cmp -s "$T_TMP/synth.a.tq" "$T_TMP/synth.b.tq" &&
  grep -q '|[0-9][0-9]*|[0-9]*$' "$T_TMP/synth.a.tq"
ok $? "synth: the same $(wc -l < "$T_TMP/synth.a.tq") event tracks (instance, pid, tid, nc, pcore, worker)"
cmp -s "$T_TMP/synth.a.hq" "$T_TMP/synth.b.hq" && [ -s "$T_TMP/synth.a.hq" ]
ok $? "synth: the same $(wc -l < "$T_TMP/synth.a.hq") SystemProfileHbmUsage rows"
grep -q 'process_name: "i-[0-9a-f]*-pid[0-9]*"' "$T_TMP/synth.txt"
ok $? "synth: processes named <instance>-pid<pid> as in the JSON export"
grep -q 'thread_name: "\(gid[0-9]*-\)\?\(nc[0-9]*-\)\?tid[0-9]*-neuron_hw"' "$T_TMP/synth.txt"
ok $? "synth: rows named gid<worker>-nc<nc>-tid<tid>-<source>"
grep -q 'event_names {' "$T_TMP/synth.txt" &&
  ! grep -q '^    name: ' <(sed -n '/track_event {/,/^  }/p' "$T_TMP/synth.txt")
ok $? "synth: event names are interned, never inline"

# nesting CHECK FILE: walks the slices of protoc's decoding FILE track by
# track as Perfetto does (a stack per track_uuid: an END closes the
# innermost open slice); prints "ok <deepest stack> <slices>" when every
# END comes at or after the start of the slice it closes and the ends of
# the slices it holds, and every track is closed at the end.
nesting() {
  python3 - "$1" <<'PY'
import re, sys
stacks, deepest, slices, bad = {}, 0, 0, []
for pk in open(sys.argv[1]).read().split("\npacket {")[1:]:
    m = re.search(r"\n  track_event \{(.*?)\n  \}", pk, re.S)
    if not m or "TYPE_SLICE" not in m.group(1):
        continue
    ts = int(re.search(r"\n  timestamp: (\d+)", pk).group(1))
    uuid = re.search(r"track_uuid: (\d+)", m.group(1)).group(1)
    st = stacks.setdefault(uuid, [])
    if "TYPE_SLICE_BEGIN" in m.group(1):
        if st and ts < st[-1][0]:
            bad.append("begin before its parent at %d" % ts)
        st.append([ts, ts])
        deepest = max(deepest, len(st))
        slices += 1
    elif not st:
        bad.append("end without a slice at %d" % ts)
    else:
        begin, inner = st.pop()
        if ts < begin or ts < inner:
            bad.append("end at %d before %d" % (ts, max(begin, inner)))
        if st:
            st[-1][1] = max(st[-1][1], ts)
bad += ["track %s left open" % u for u, st in stacks.items() if st]
print("ok %d %d" % (deepest, slices) if not bad else bad[:3])
PY
}

C="$T_TMP/chrome"
mkdir -p "$C"
cp "$NEX_SHARED_TRACES/catapult_flow.json" "$NEX_SHARED_TRACES/catapult_x_event_trace.json" "$C/"
roundtrip chrome "$C"
[ "$(wc -l < "$T_TMP/chrome.a.flows")" -gt 50 ] &&
  [ "$(wc -l < "$T_TMP/chrome.a.counters")" -gt 10 ]
ok $? "chrome: flows and counters compared"
grep -q 'debug_annotations {' "$T_TMP/chrome.txt"
ok $? "chrome: args as debug annotations"
grep -q 'debug_annotation_names {' "$T_TMP/chrome.txt" &&
  ! grep -q '^      name: ' <(sed -n '/debug_annotations {/,/^    }/p' "$T_TMP/chrome.txt")
ok $? "chrome: annotation names are interned, never inline"
# the slices nest per track as Perfetto reads them, several deep: the
# thread track holds a track's nested slices, not one track per lane
read -r verdict depth n < <(nesting "$T_TMP/chrome.txt")
is "$verdict $n" "ok $(wc -l < "$T_TMP/chrome.a.events")" \
  "chrome: every track's BEGIN/END packets nest, all slices counted"
[ "${depth:-0}" -ge 3 ]
ok $? "chrome: slices nest on one track ($depth deep)"
read -r verdict depth n < <(nesting "$T_TMP/synth.txt")
is "$verdict $n" "ok $(wc -l < "$T_TMP/synth.a.events")" \
  "synth: every track's BEGIN/END packets nest, all slices counted"

# a track of 81 lanes (past the export's per-lane statements: one sorting
# statement walks it): 80 slices a step apart that overlap without nesting,
# each holding a child.  Perfetto's tracks only nest, so stairs 1 to 79 go
# to an overflow track each; the children nest under stair 0, open
# throughout, on the thread track.
W="$T_TMP/wide"
mkdir -p "$W/in" "$W/pf"
python3 -c '
import json
ev = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "wide"}}]
for i in range(80):
    ev.append({"ph": "X", "name": "stair%d" % i, "pid": 1, "tid": 1, "ts": i * 10, "dur": 1000})
    ev.append({"ph": "X", "name": "child%d" % i, "pid": 1, "tid": 1, "ts": i * 10 + 1, "dur": 5})
print(json.dumps({"traceEvents": ev}))' > "$W/in/wide.json"
"$SERVER" --dir "$W/in" --db "$W/a.db" --quiet --output-format pftrace \
  --output-file "$W/pf/wide.pftrace" 2>/dev/null &&
  "$SERVER" --dir "$W/pf" --db "$W/b.db" --quiet --ingest-only 2>/dev/null
ok $? "wide: exported and ingested again"
is "$(sqlite3 "$W/a.db" "SELECT count(*), max(lanes) FROM track WHERE kind = 'slices'")" \
  "1|81" "wide: one track of 81 lanes"
protoc --decode=perfetto.protos.Trace -I "$PROTO" "$PROTO/perfetto_trace.proto" \
  < "$W/pf/wide.pftrace" > "$W/wide.txt"
is "$(nesting "$W/wide.txt")" "ok 2 160" \
  "wide: 160 slices nest per track, 2 deep (the children under stair 0)"
is "$(sqlite3 "$W/b.db" "SELECT count(*) FROM track WHERE kind = 'slices'")" 80 \
  "wide: the thread track and 79 overflow tracks"
for w in a b; do sqlite3 "$W/$w.db" "$evq" > "$W/$w.events"; done
cmp -s "$W/a.events" "$W/b.events"
ok $? "wide: the same $(wc -l < "$W/a.events") slices (name, ts, dur)"

# the same bytes over HTTP (the server opens the store just written)
"$SERVER" --dir "$C" --db "$T_TMP/chrome.a.db" --port 0 --no-watch \
  2>"$T_TMP/serve.err" &
pid=$!
health() {
  port=$(sed -n 's|.*serving on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$T_TMP/serve.err" | head -1)
  [ -n "$port" ] && curl -s -H "Host: localhost" "http://127.0.0.1:$port/api/v1/health" |
    grep -q '"state":"ready"'
}
for _ in $(seq 3000); do
  health && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.01
done
curl -s -H "Host: localhost" -o "$T_TMP/h.pftrace" -D "$T_TMP/h.head" \
  "http://127.0.0.1:$port/api/v1/export?format=pftrace"
kill -TERM $pid
wait $pid 2>/dev/null
grep -qi '^content-type: application/octet-stream' "$T_TMP/h.head"
ok $? "HTTP: application/octet-stream"
cmp -s "$T_TMP/h.pftrace" "$T_TMP/chrome.rt/export.pftrace"
ok $? "HTTP: the same bytes as --output-format pftrace"
tap_done
