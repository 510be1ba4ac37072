#!/bin/bash
# nrtjson_test.sh -- a generated profile whose runtime events are written as
# the runtime's own JSON event dump (--format systrace-json) ingests into
# the same runtime and hardware events, HBM samples and tables as the
# native profile of the same seed, matching the generator's manifest;
# a standalone gzipped dump is recognised by its content; a cut dump keeps
# its records, with one Warning for its unpaired starts.
. "$NEX_SRCDIR/tests/integration/lib.sh"
tap_tmpdir
N="$T_TMP/native" J="$T_TMP/json"
opts="--seed 11 --instances 1 --processes 2 --cores 3 --steps 9 --device-profile none"
"$SYNTH" --out "$N" $opts --manifest "$T_TMP/native.json" 2>/dev/null
ok $? "generator writes the native profile"
"$SYNTH" --out "$J" $opts --format systrace-json \
  --manifest "$T_TMP/json.json" 2>/dev/null
ok $? "generator writes the profile as runtime JSON dumps"
is "$(find "$J" -name ntrace.pb | wc -l)" 0 "no ntrace.pb in the dumped profile"
is "$(find "$J" -name ntrace_events.json | wc -l)" 2 "one dump per process"
cmp -s "$T_TMP/native.json" "$T_TMP/json.json"
ok $? "both formats have the same manifest"

"$SERVER" --dir "$N" --db "$T_TMP/n.db" --ingest-only --quiet 2>/dev/null
"$SERVER" --dir "$J" --db "$T_TMP/j.db" --ingest-only --quiet 2>"$T_TMP/err"
is "$?" 0 "--ingest-only exits 0 on the dumped profile"
is "$(cat "$T_TMP/err")" "" "nothing on stderr"

# Counts of the manifest: event names, sources, tables (flows excepted:
# the dump has no flow ids).
python3 - "$T_TMP/j.db" "$T_TMP/json.json" > "$T_TMP/check.tap" <<'PY'
import json, sqlite3, sys
import nexdb  # noqa: F401 (reads slice and its views)
db = sqlite3.connect(sys.argv[1]); m = json.load(open(sys.argv[2]))
def one(sql): return db.execute(sql).fetchone()[0]
for t, want in sorted(m["tables"].items()):
    got = one(f"SELECT count(*) FROM {t}")
    print(("ok " if got == want else "not ok ") + f"{t} has {want} rows (got {got})")
got = dict(db.execute("SELECT name, count(*) FROM SystemProfileEvents GROUP BY name"))
print(("ok " if got == m["events"] else "not ok ") + "every event name has its exact count")
got = dict(db.execute("SELECT trace_event_source, count(*) FROM SystemProfileEvents GROUP BY 1"))
print(("ok " if got == m["sources"] else "not ok ") + f"every event source has its exact count {got}")
got = sorted(db.execute("SELECT instance_id, pid FROM process"))
want = sorted((p["instance_id"], p["pid"]) for p in m["processes"])
print(("ok " if got == want else "not ok ") + "processes")
PY
while IFS= read -r line; do
  case "$line" in
  "ok "*) ok 0 "${line#ok }" ;;
  *) ok 1 "${line#not ok }" ;;
  esac
done < "$T_TMP/check.tap"

# The very same events: ids, names, sources, times (hardware ones mapped
# from the device clock), processes, threads and cores.
q="SELECT id, name, trace_event_source, start_ts, duration_ns, instance_id,
   process_id, thread_id, nc_idx, pcore_idx, worker_gid
   FROM SystemProfileEvents WHERE trace_event_source <> 'framework' ORDER BY id"
sqlite3 "$T_TMP/n.db" "$q" > "$T_TMP/n.txt"
sqlite3 "$T_TMP/j.db" "$q" > "$T_TMP/j.txt"
cmp -s "$T_TMP/n.txt" "$T_TMP/j.txt"
ok $? "runtime and hardware events equal the native profile's ($(wc -l < "$T_TMP/j.txt"))"
q="SELECT timestamp, device_idx, hbm_idx, total_bytes, tensors_bytes
   FROM SystemProfileHbmUsage ORDER BY 1, 2, 3"
sqlite3 "$T_TMP/n.db" "$q" > "$T_TMP/n.txt"
sqlite3 "$T_TMP/j.db" "$q" > "$T_TMP/j.txt"
cmp -s "$T_TMP/n.txt" "$T_TMP/j.txt"
ok $? "HBM totals over time equal the native profile's ($(wc -l < "$T_TMP/j.txt"))"
is "$(sqlite3 "$T_TMP/j.db" "SELECT count(*) FROM Warning")" 0 "no warnings"
is "$(sqlite3 "$T_TMP/j.db" "SELECT count(*) FROM SystemProfileEvents
  WHERE name = 'nc_exec_running' AND json_extract(extra_attributes_json,
  '$.nc_start_timestamp_ns') IS NOT NULL")" \
  "$(python3 -c "import json;print(json.load(open('$T_TMP/json.json'))['events']['nc_exec_running'])")" \
  "hardware events keep their device times"

# Alone, gzipped, under any name: recognised by content, one process named
# after the directory.
A="$T_TMP/alone"
mkdir "$A"
d=$(find "$J" -name ntrace_events.json | sort | head -1)
gzip -c "$d" > "$A/fetched.json.gz"
"$SERVER" --dir "$A" --db "$T_TMP/a.db" --ingest-only --quiet 2>/dev/null
is "$?" 0 "a standalone gzipped dump ingests"
want=$(sqlite3 "$T_TMP/j.db" "SELECT count(*) FROM SystemProfileEvents
  WHERE process_id = (SELECT process_id FROM SystemProfileEvents
  WHERE trace_event_source <> 'framework' ORDER BY id LIMIT 1)
  AND trace_event_source <> 'framework'")
is "$(sqlite3 "$T_TMP/a.db" "SELECT count(*) FROM SystemProfileEvents")" "$want" \
  "with all the events of its process"
is "$(sqlite3 "$T_TMP/a.db" "SELECT group_concat(instance_id || ':' || pid) FROM process")" \
  "alone:0" "as one process named after the directory"

# Cut inside the stop of the last nrt_execute: what was read stays; its
# start, left without a stop, is an incomplete event, reported in one
# Warning for the file.
C="$T_TMP/cut"
mkdir "$C"
at=$(python3 -c "import sys; d = open(sys.argv[1]).read()
print(d.rindex('{\"event_type\":\"nrt_execute\",\"phase\":\"stop\"') + 20)" "$d")
head -c "$at" "$d" > "$C/dump.json"
"$SERVER" --dir "$C" --db "$T_TMP/c.db" --ingest-only --quiet 2>/dev/null
is "$?" 1 "a cut dump exits 1 (a record was skipped)"
inc=$(sqlite3 "$T_TMP/c.db" "SELECT count(*) FROM SystemProfileEvents
  WHERE json_extract(extra_attributes_json, '$.incomplete') = 1")
is "$inc" 1 "the unpaired start is an incomplete event"
is "$(sqlite3 "$T_TMP/c.db" "SELECT count(*) FROM Warning WHERE file = 'dump.json'
  AND message LIKE '1 start records without their stop%'")" 1 \
  "one Warning names it"
stops=$(grep -o '"event_type":"[a-z_]*","phase":"stop"' "$C/dump.json" |
  grep -vc dma_mem)
syncs=$(grep -o '"event_type":"timestamp_sync"' "$C/dump.json" | wc -l)
is "$(sqlite3 "$T_TMP/c.db" "SELECT count(*) FROM SystemProfileEvents")" \
  "$((stops + syncs + 1))" \
  "every event completed before the cut stays, and the incomplete one"
tap_done
