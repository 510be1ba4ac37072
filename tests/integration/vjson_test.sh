#!/bin/bash
# vjson_test.sh -- the vendor tool's JSON exports (system_profile.json and a
# device JSON) ingest into the same tables as the capture files; every
# unusable record is a Warning naming file and offset.
. "$NEX_SRCDIR/tests/integration/lib.sh"
tap_tmpdir
D="$T_TMP/export"
mkdir "$D"
cp "$NEX_SRCDIR"/tests/data/vjson/*.json "$D/"
"$SERVER" --dir "$D" --db "$T_TMP/v.db" --ingest-only --quiet 2>/dev/null
is "$?" 1 "exit 1: the exports hold records that were skipped"
q() { sqlite3 "$T_TMP/v.db" "$1"; }
is "$(q "SELECT count(*) FROM SystemProfileEvents")" 7 "system events"
is "$(q "SELECT group_concat(n, ',') FROM (SELECT name || ':' || trace_event_source AS n FROM SystemProfileEvents ORDER BY start_ts, name)")" \
  "after_bad:neuron_rt,odd:neuron_rt,nrt_execute:neuron_rt,fw:framework,nrt_tensor_write:neuron_rt,PjitFunction(matmul_allgather):framework,nc_exec_running:neuron_hw" \
  "event names and sources"
is "$(q "SELECT start_ts || ' ' || duration_ns FROM SystemProfileEvents WHERE name = 'nrt_tensor_write'")" \
  "1729888371056597613 27094" "timestamps are exact ns"
is "$(q "SELECT instance_id || ' ' || process_id FROM SystemProfileEvents WHERE name = 'nrt_tensor_write'")" \
  "i-0f207fb2a99bd2d08 1627711" "events keep their instance and process"
is "$(q "SELECT count(*) FROM CpuUsage")" 2 "cpu_util samples"
is "$(q "SELECT count(*) FROM HostMemUsage")" 1 "mem_usage samples"
is "$(q "SELECT total_bytes || ' ' || weights_bytes FROM SystemProfileHbmUsage")" \
  "1073741824 536870912" "HBM usage with its categories"
is "$(q "SELECT count(*) FROM SystemProfileMetadata")" 1 "system_profile_metadata"
is "$(q "SELECT device_profile_name || ' ' || instruction_count || ' ' || dma_count FROM DeviceProfileList")" \
  "device_profile_model_1 2 1" "the device JSON is a device profile"
is "$(q "SELECT opcode || ' ' || timeline_track || ' ' || start_ts FROM Instruction ORDER BY start_ts LIMIT 1")" \
  "MATMUL TensorMatrix 10261883214" "instructions on their engine rows"
is "$(q "SELECT inst_dep_ids FROM Instruction ORDER BY start_ts")" \
  "[10463,61990]
[-4611686018427387904]" "inst_dep_ids as the export wrote them (an id list or a string of one, signed 64-bit)"
is "$(q "SELECT group_concat(d.seq || ':' || d.dep_id || ':' || coalesce(d.dep_ts, 'none'), ' ') FROM (SELECT * FROM inst_dep ORDER BY ts, seq) d")" \
  "0:10463:none 1:61990:none 0:-4611686018427387904:10261883214" \
  "dependencies: the ones the export holds found (the MATMUL), the others kept unresolved"
is "$(q "SELECT count(*) FROM inst_dep d JOIN Instruction i ON i.start_ts = d.dep_ts AND i.id = d.dep_id WHERE i.opcode = 'MATMUL'")" 1 \
  "the dependency is the instruction with that signed id"
is "$(q "SELECT count(*) FROM Warning WHERE file = 'system_profile.json' AND offset > 0")" 8 \
  "every unusable record of system_profile.json is a Warning with its offset"
is "$(q "SELECT count(*) FROM flow")" "$(q "SELECT sum(json_array_length(flow_id)) FROM SystemProfileEvents")" \
  "every flow id of the events is a flow"
tap_done
