#!/bin/bash
# perfetto_test.sh -- a directory of Perfetto traces (Perfetto's own
# TrackEvent diff tests, tests/data/perfetto/) opens with the tracks,
# slices, flows and counters trace_processor expects for them (SQL over the
# store; the known differences are named below); .perfetto-trace.gz is
# discovered too; a corrupt trace costs one Warning naming its offset and
# nothing else.
. "$NEX_SRCDIR/tests/integration/lib.sh"
tap_tmpdir
DATA="$NEX_SRCDIR/tests/data/perfetto"
D="$T_TMP/d"
mkdir -p "$D/sub"
for f in track_event_tracks track_event_counters flow_events_track_event \
  flow_events_proto_v1 incremental_counter_sequences; do
  cp "$DATA/$f.pftrace" "$D/"
done
gzip -c "$DATA/track_event_merged_debug_annotations.pftrace" \
  > "$D/sub/merged.perfetto-trace.gz"
head -c 700 "$DATA/track_event_counters.pftrace" > "$D/cut.pftrace"
"$SERVER" --dir "$D" --db "$T_TMP/p.db" --ingest-only --quiet 2>/dev/null
rc=$?
ok $([ $rc -le 1 ]; echo $?) "the directory ingests (exit $rc)"
q() { sqlite3 "$T_TMP/p.db" "$1"; }
ev="SELECT name || '@' || start_ts || '+' || duration_ns FROM SystemProfileEvents"

is "$(q "SELECT count(DISTINCT instance_id) FROM track")" 7 \
  "one process group per file"
# test_track_event_tracks_slices; differences: event2_on_p2 (a legacy
# process-scoped instant on track_uuid 0) stays on the default track.
tr="instance_id = 'track_event_tracks.pftrace'"
is "$(q "$ev WHERE $tr AND process_id = 5 AND thread_id = 1 ORDER BY start_ts" | tr '\n' ' ')" \
  "event1_on_t1@1000+0 event3_on_t1@6000+0 event1_on_t3@11000+0 " \
  "thread 5/1 (t1, and t3 reusing its tid)"
is "$(q "$ev WHERE $tr AND process_id = 5 AND thread_id = 4 ORDER BY start_ts" | tr '\n' ' ')" \
  "event1_on_t4@22000+0 event2_on_t4@32000+0 " \
  "thread 5/4 (t4, and an event moved there by tid_override)"
is "$(q "SELECT h.name, count(*) FROM SystemProfileEvents e JOIN thread h
         ON h.instance_id = e.instance_id AND h.pid = e.process_id AND h.tid = e.thread_id
         WHERE e.$tr AND e.thread_id > 100 GROUP BY 1 ORDER BY 1" | tr '\n' ' ')" \
  "Default Track|2 async|1 async2|1 event_and_track_async3|1 p1|1 p2|1 " \
  "process, async and default tracks: a named track each"
is "$(q "$ev WHERE $tr AND name = 'event1_on_async2'")" "event1_on_async2@5100+100" \
  "a slice begun on one sequence and ended on another"
is "$(q "SELECT group_concat(name, ',') FROM (SELECT name FROM process WHERE instance_id =
         'track_event_tracks.pftrace' AND name IS NOT NULL ORDER BY 1)")" "p2" \
  "process names (pid 5 reused: the last name)"
# test_track_event_counters_slices and _counters
tc="instance_id = 'track_event_counters.pftrace'"
is "$(q "$ev WHERE $tc ORDER BY start_ts, name" | tr '\n' ' ')" \
  "event1_on_t1@1000+100 event2_on_t1@2000+200 event3_on_t1@2000+200 event1_on_t3@4000+100 event4_on_t1@4000+0 float_counter_on_t1@4300+0 float_counter_on_t1@4500+0 " \
  "counters trace: slices"
cv="SELECT group_concat(ts || '=' || value, ' ') FROM (SELECT c.ts, c.value FROM counter c
    JOIN track t ON t.id = c.track WHERE t.source = 'chrome_counter' AND"
is "$(q "$cv t.$tc AND t.label = 'thread_time (ns)' ORDER BY c.ts, c.value)")" \
  "1000=1000000.0 1100=1010000.0 2000=2000000.0 2000=2010000.0 2200=2020000.0 2200=2030000.0 4000=2040000.0" \
  "incremental thread time counter of t1, in ns"
is "$(q "$cv t.$tc AND t.label = 'MySizeCounter (bytes)' ORDER BY c.ts)")" \
  "3000=1024.0 3100=2048.0 4000=1024.0 4500=4096.0" "MySizeCounter"
is "$(q "$cv t.$tc AND t.label = 'MyDoubleCounter' ORDER BY c.ts)")" \
  "4200=3.1415926 4300=0.5 4500=2.71828" "MyDoubleCounter"
is "$(q "$cv t.$tc AND t.tid = 4 ORDER BY t.label, c.ts)")" \
  "4000=20.0 4100=25.0 4000=10000.0 4100=15000.0" \
  "legacy thread instruction count and time of t4"
is "$(q "$cv t.instance_id = 'incremental_counter_sequences.pftrace' ORDER BY c.ts)")" \
  "100=100.0 150=50.0 200=110.0 250=55.0" "incremental counters per sequence"
# test_flow_events_track_event and test_flow_events_proto_v1: the pairs of
# slices following each other in a flow.
pairs() {
  q "WITH f AS (SELECT f.flow_id, n.s AS name, f.ts, f.track, f.lane FROM flow f
       JOIN track t ON t.id = f.track JOIN slice s ON s.track = f.track
       AND s.lane = f.lane AND s.ts = f.ts AND s.id = f.id JOIN str n ON n.id = s.name
       WHERE t.instance_id = '$1'),
     g AS (SELECT flow_id, name, lead(name) OVER (PARTITION BY flow_id
       ORDER BY ts, track, lane) AS nxt FROM f)
     SELECT name || ' -> ' || nxt FROM g WHERE nxt IS NOT NULL ORDER BY 1" | tr '\n' ';'
}
is "$(pairs flow_events_track_event.pftrace)" \
  "FlowSlice1Start -> FlowSlice1End;FlowSlice1Start2Start -> FlowSlice1End;FlowSlice1Start2Start -> FlowSlice2End;FlowSlice3Begin -> FlowSlice3End4Begin;FlowSlice3End4Begin -> FlowSlice4Step;FlowSlice4Step -> FlowSlice4Step2_FlowIdOnAsyncEndEvent;FlowSlice4Step2_FlowIdOnAsyncEndEvent -> FlowSlice4Step2_FlowIdOnEndEvent;FlowSlice4Step2_FlowIdOnEndEvent -> FlowSlice4End;" \
  "v2 flows (flow_ids, terminating_flow_ids, reuse after termination)"
is "$(pairs flow_events_proto_v1.pftrace)" \
  "FlowBeginSlice -> FlowEndSlice_1;FlowEndSlice_1 -> FlowStepSlice;FlowStepSlice -> FlowEndSlice_2;" \
  "v1 flow events bound to their slices"
# test_track_event_merged_debug_annotations_args, from a .perfetto-trace.gz
is "$(q "SELECT json_extract(extra_attributes_json, '$.debug1.key2'),
         json_extract(extra_attributes_json, '$.debug2.key3'),
         json_extract(extra_attributes_json, '$.debug3'), duration_ns
         FROM SystemProfileEvents WHERE instance_id = 'merged.perfetto-trace.gz'")" \
  '[20,21,22,23]|{"key31":31,"key32":32}|32|1000' \
  "merged debug annotations of a gzipped .perfetto-trace"
# the cut copy: what came before the cut, and one Warning naming the offset
is "$(q "SELECT count(*) FROM Warning WHERE file = 'cut.pftrace'")" 1 \
  "a cut trace: one warning"
is "$(q "SELECT count(*) FROM Warning WHERE file = 'cut.pftrace' AND message LIKE '%offset %truncated packet%'")" 1 \
  "... naming the offset of the cut packet"
is "$(q "SELECT count(*) FROM SystemProfileEvents WHERE instance_id = 'cut.pftrace'")" 6 \
  "... and the six slices before the cut packet"
is "$(q "SELECT count(*) FROM Warning WHERE file <> 'cut.pftrace'")" 0 \
  "no other warning"
tap_done
