#!/bin/bash
# chrome_test.sh -- every public trace in ../shared/traces ingests with the
# exact counts that tests/unit/chrome_counts.py derives independently (with
# Python's json module); the hand-made edge cases ingest without a crash; a
# directory of Chrome traces only opens as one process group per file.
. "$NEX_SRCDIR/tests/integration/lib.sh"
tap_tmpdir
TRACES="${NEX_SHARED_TRACES:-$NEX_SRCDIR/../shared/traces}"
COUNTS="$NEX_SRCDIR/tests/unit/chrome_counts.py"
n=0
for f in "$TRACES"/*.json "$TRACES"/*.json.gz; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  b=$(basename "$f")
  d="$T_TMP/$b.d"
  mkdir "$d"
  cp "$f" "$d/"
  "$SERVER" --dir "$d" --db "$T_TMP/$b.db" --ingest-only --quiet 2>/dev/null
  rc=$?
  ok $([ $rc -le 1 ]; echo $?) "$b ingests (exit $rc)"
  eval "$(python3 "$COUNTS" "$f" | sed 's/^\([a-z_]*\) \(.*\)$/want_\1=\2/')"
  q() { sqlite3 "$T_TMP/$b.db" "$1"; }
  inst="json_extract(extra_attributes_json, '$.instant')"
  is "$(q "SELECT count(*) FROM SystemProfileEvents WHERE $inst IS NULL")" \
    "$((want_slices + want_incomplete))" "$b: slices (complete + incomplete)"
  is "$(q "SELECT count(*) FROM SystemProfileEvents WHERE $inst = 1")" \
    "$want_instants" "$b: instants"
  is "$(q "SELECT count(*) FROM SystemProfileEvents WHERE json_extract(extra_attributes_json, '$.incomplete') = 1")" \
    "$want_incomplete" "$b: incomplete slices"
  is "$(q "SELECT count(*) FROM counter")" "$want_counters" "$b: counter samples"
  is "$(q "SELECT value FROM store_info WHERE key = 'chrome_flow_endpoints'")" \
    "$((want_flow_s + want_flow_t + want_flow_f))" "$b: flow endpoints"
  unbound=$(q "SELECT count(*) FROM Warning WHERE message LIKE 'flow endpoint%'")
  rows=$(q "SELECT count(*) FROM flow")
  ok $([ $((rows + unbound)) -le $((want_flow_s + want_flow_t + want_flow_f)) ] &&
    [ "$rows" -ge $(((want_flow_s + want_flow_t + want_flow_f - unbound) / 2)) ]; echo $?) \
    "$b: $rows flow bindings, $unbound endpoints without a slice"
  is "$(q "SELECT count(*) FROM process")" "$want_processes" "$b: processes"
  is "$(q "SELECT count(*) FROM (SELECT pid, tid FROM track WHERE source = 'framework' UNION SELECT pid, tid FROM thread) x
           WHERE NOT EXISTS (SELECT 1 FROM thread h WHERE h.pid = x.pid AND h.tid = x.tid AND h.name LIKE 'async:%')")" \
    "$want_threads" "$b: threads"
  is "$(q "SELECT count(*) FROM Warning WHERE message NOT LIKE 'flow endpoint%'")" \
    "$want_skipped" "$b: every skipped record is one Warning"
done
ok $([ $n -eq 6 ]; echo $?) "the six shared traces were found in $TRACES"

# A directory of Chrome traces only: one group per file, by rank or name.
mkdir -p "$T_TMP/ranks/sub"
cp "$TRACES/hta_nccl_data.json.gz" "$T_TMP/ranks/"
cp "$TRACES/tl_h100_qwen.json.gz" "$T_TMP/ranks/sub/"
"$SERVER" --dir "$T_TMP/ranks" --db "$T_TMP/ranks.db" --ingest-only --quiet
is "$(sqlite3 "$T_TMP/ranks.db" "SELECT group_concat(DISTINCT instance_id) FROM (SELECT instance_id FROM process ORDER BY 1)")" \
  "rank 0,tl_h100_qwen.json.gz" "one process group per file: rank 0 (distributedInfo) and the file name"

# Hand-made edge cases: every one ingests, nothing crashes.
for f in "$NEX_SRCDIR"/tests/data/chrome/*.json; do
  d="$T_TMP/edge-$(basename "$f").d"
  mkdir "$d"
  cp "$f" "$d/"
  "$SERVER" --dir "$d" --db "$d.db" --ingest-only --quiet 2>/dev/null
  rc=$?
  ok $([ $rc -le 1 ]; echo $?) "$(basename "$f") ingests (exit $rc)"
done
tap_done
