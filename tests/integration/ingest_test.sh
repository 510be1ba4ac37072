#!/bin/bash
# ingest_test.sh -- a generated profile ingests into a store that matches
# the generator's manifest exactly; bad input is reported, never fatal.
. "$NEX_SRCDIR/tests/integration/lib.sh"
tap_tmpdir
P="$T_TMP/profile"
"$SYNTH" --out "$P" --seed 7 --instances 2 --processes 2 --cores 2 --steps 12 \
  --device-profile model --device-instructions 400 \
  --manifest "$T_TMP/manifest.json" 2>/dev/null
ok $? "generator writes a profile"

"$SERVER" --dir "$P" --db "$T_TMP/store.db" --ingest-only --quiet 2>"$T_TMP/err"
is "$?" 0 "--ingest-only exits 0 on a clean profile"
is "$(cat "$T_TMP/err")" "" "nothing on stderr for a clean profile"

# Every count of the manifest, computed from the store by SQL.
tap_check_store "$T_TMP/store.db" "$T_TMP/manifest.json"

# An unchanged directory reopens its store at once.
"$SERVER" --dir "$P" --db "$T_TMP/store.db" --ingest-only 2>"$T_TMP/err2"
grep -q "reopened" "$T_TMP/err2"
ok $? "an unchanged directory reuses its store"

# --verbose: the ingest's phases and their times, as debug lines.
"$SERVER" --dir "$P" --db "$T_TMP/verbose.db" --ingest-only --verbose \
  2>"$T_TMP/errv"
is "$?" 0 "--verbose ingests as usual"
grep -Eq "debug: ingest: read [0-9.]+ s, tracks [0-9.]+ s, derived [0-9.]+ s" "$T_TMP/errv"
ok $? "--verbose prints the ingest's phase times"
grep -q "debug:" "$T_TMP/err2"
is "$?" 1 "without it, no debug line"
"$SERVER" --dir "$P" --db "$T_TMP/qv.db" --ingest-only --quiet --verbose \
  2>"$T_TMP/errqv"
is "$?" 2 "--quiet with --verbose is a usage error"
grep -q "contradict" "$T_TMP/errqv"
ok $? "which says so"

# Filters.
"$SERVER" --dir "$P" --db "$T_TMP/hw.db" --ingest-only --quiet \
  --system-trace-filter-event-type hardware
hw=$(python3 -c "import json;print(json.load(open('$T_TMP/manifest.json'))['sources']['neuron_hw'])")
got=$(sqlite3 "$T_TMP/hw.db" "SELECT count(*) FROM SystemProfileEvents WHERE trace_event_source <> 'framework'")
is "$got" "$hw" "event-type filter 'hardware' keeps exactly the hardware events"
got=$(sqlite3 "$T_TMP/hw.db" "SELECT count(*) FROM SystemProfileEvents WHERE trace_event_source = 'neuron_rt'")
is "$got" "0" "no runtime event passes the hardware filter"
"$SERVER" --dir "$P" --db "$T_TMP/nc.db" --ingest-only --quiet \
  --system-trace-filter-neuron-core 1
got=$(sqlite3 "$T_TMP/nc.db" "SELECT count(*) FROM SystemProfileEvents WHERE nc_idx IS NOT NULL AND nc_idx <> 1")
is "$got" "0" "NeuronCore filter keeps only NC 1"
# An instance filter: the first instance's two processes are read, the
# second's left out; the events kept are the same, clock alignment and
# all, as without the filter.
first=$(sqlite3 "$T_TMP/store.db" "SELECT min(instance_id) FROM SystemProfileEvents")
"$SERVER" --dir "$P" --db "$T_TMP/inst.db" --ingest-only --quiet \
  --system-trace-filter-instance-id "$first"
is "$?" 0 "an instance filter ingests as usual"
ev="SELECT count(*) || ' ' || sum(start_ts % 1000003) || ' ' || sum(duration_ns) || ' ' || count(DISTINCT process_id) FROM SystemProfileEvents WHERE trace_event_source = 'neuron_hw' AND instance_id = '$first'"
want=$(sqlite3 "$T_TMP/store.db" "$ev")
is "$(sqlite3 "$T_TMP/inst.db" "$ev")" "$want" "the kept instance's hardware events are aligned as without the filter"
is "${want##* }" 2 "which come from its two processes"
"$SERVER" --dir "$P" --db "$T_TMP/bad.db" --ingest-only --quiet \
  --system-trace-filter-neuron-core 3-1 2>"$T_TMP/err3"
is "$?" 2 "a malformed filter exits 2"
grep -q "3-1" "$T_TMP/err3"
ok $? "the error names the bad item"

# Missing --dir: one line, exit 2.
"$SERVER" --dir "$T_TMP/nope" --ingest-only 2>"$T_TMP/err4"
is "$?" 2 "a missing --dir exits 2"
is "$(wc -l < "$T_TMP/err4")" 1 "with a one-line error"

# Bad input: a truncated ntrace.pb, a garbage cpu_util.pb, an empty NTFF and
# a folder without trace_info.pb.
B="$T_TMP/bad"
cp -r "$P" "$B"
nt=$(find "$B" -name ntrace.pb | sort | head -1)
size=$(stat -c %s "$nt")
truncate -s $((size / 2)) "$nt"
cu=$(find "$B" -name cpu_util.pb | sort | head -1)
printf 'garbage that is not a capture file' > "$cu"
nf=$(find "$B" -name '*.ntff' | sort | head -1)
: > "$nf"
ti=$(find "$B" -name trace_info.pb | sort | tail -1)
rm "$ti"
nometa=$(dirname "${ti#$B/}")
"$SERVER" --dir "$B" --db "$T_TMP/badstore.db" --ingest-only 2>"$T_TMP/err5"
is "$?" 1 "--ingest-only exits 1 when something was skipped"
grep -q "${nt#$B/}:[0-9]*: file truncated" "$T_TMP/err5"
ok $? "the truncated file is named with its byte offset on stderr"
got=$(sqlite3 "$T_TMP/badstore.db" "SELECT count(*) FROM Warning WHERE file = '${nt#$B/}' AND offset > 0")
is "$got" 1 "a Warning row names the truncated file and offset"
got=$(sqlite3 "$T_TMP/badstore.db" "SELECT count(*) FROM Warning WHERE file = '${cu#$B/}'")
is "$got" 1 "the garbage cpu_util.pb is one Warning row"
got=$(sqlite3 "$T_TMP/badstore.db" "SELECT count(*) FROM Warning WHERE message = 'No metadata found for system profile: $nometa'")
is "$got" 1 "a folder without trace_info.pb gets the documented message"
got=$(sqlite3 "$T_TMP/badstore.db" "SELECT count(*) FROM Warning WHERE file = '${nf#$B/}' AND message LIKE 'empty device trace%'")
is "$got" 1 "an empty NTFF is noted, not fatal"
got=$(sqlite3 "$T_TMP/badstore.db" "SELECT count(*) FROM Instruction")
ok $([ "$got" -gt 0 ]; echo $?) "the other device traces still ingest ($got instructions)"
got=$(sqlite3 "$T_TMP/badstore.db" "SELECT count(*) FROM SystemProfileEvents WHERE trace_event_source='neuron_rt'")
ok $([ "$got" -gt 0 ]; echo $?) "the other system traces still ingest ($got runtime events)"
ls "$T_TMP"/badstore.db.tmp >/dev/null 2>&1
ok $((! $?)) "no temporary store is left behind"
# A zero-filled tail (preallocated or sparse): one Warning, not one per byte.
Z="$T_TMP/zerotail"
cp -r "$P" "$Z"
nt=$(find "$Z" -name ntrace.pb | sort | head -1)
size=$(stat -c %s "$nt")
truncate -s 32M "$nt"
"$SERVER" --dir "$Z" --db "$T_TMP/zerotail.db" --ingest-only --quiet 2>/dev/null
is "$?" 1 "a zero-filled tail makes --ingest-only exit 1"
got=$(sqlite3 "$T_TMP/zerotail.db" "SELECT count(*) || ' ' || min(offset) FROM Warning WHERE file = '${nt#$Z/}'")
is "$got" "1 $size" "32 MiB of zeros after the records are one Warning at their start"
tap_done
