#!/bin/bash
# export_test.sh -- --output-format writes Perfetto-readable Chrome JSON and
# summaries; re-ingesting the perfetto export gives the same events, times
# and flows.
. "$NEX_SRCDIR/tests/integration/lib.sh"
tap_tmpdir
P="$T_TMP/profile"
"$SYNTH" --out "$P" --seed 11 --instances 1 --processes 2 --cores 2 --steps 10 \
  --device-profile model --device-instructions 200 2>/dev/null
ok $? "generator writes a profile"
mkdir "$T_TMP/rt"
"$SERVER" --dir "$P" --db "$T_TMP/a.db" --quiet --output-format perfetto \
  --output-file "$T_TMP/rt/export.json"
is "$?" 0 "--output-format perfetto exits 0"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d['traceEvents'], list)" \
  "$T_TMP/rt/export.json"
ok $? "the export is valid JSON with traceEvents"
names=$(python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
print(sorted({e['args']['name'] for e in d['traceEvents'] if e['ph']=='M' and e['name']=='process_name'}))" "$T_TMP/rt/export.json")
want=$(sqlite3 "$T_TMP/a.db" "SELECT instance_id || '-pid' || pid FROM process ORDER BY 1" |
  python3 -c "import sys; print(sorted(l.strip() for l in sys.stdin))")
is "$names" "$want" "processes are named <instance>-pid<pid>"
python3 -c "
import json,re,sys
d=json.load(open(sys.argv[1]))
rows={e['args']['name'] for e in d['traceEvents'] if e['ph']=='M' and e['name']=='thread_name'}
bad=[r for r in rows if not re.fullmatch(r'(gid\d+-)?(nc\d+-)?tid\d+-(neuron_rt|neuron_hw)|Thread \d+', r)]
sys.exit(1 if bad or not rows else 0)" "$T_TMP/rt/export.json"
ok $? "rows are named gid<worker>-nc<nc>-tid<tid>-<source> (framework: Thread <tid>)"

"$SERVER" --dir "$T_TMP/rt" --db "$T_TMP/b.db" --ingest-only --quiet
is "$?" 0 "the export ingests without a warning"
q="SELECT name || ' ' || start_ts || ' ' || duration_ns FROM SystemProfileEvents ORDER BY 1"
sqlite3 "$T_TMP/a.db" "$q" > "$T_TMP/a.events"
sqlite3 "$T_TMP/b.db" "$q" > "$T_TMP/b.events"
cmp -s "$T_TMP/a.events" "$T_TMP/b.events"
ok $? "round trip: the same $(wc -l < "$T_TMP/a.events") events with the same start and duration (ns)"
# a flow: its endpoints in time order (the ids of a Perfetto export's
# flows are new ones: compare what they link)
flowq="SELECT group_concat(e.name || '@' || e.start_ts, ',') FROM
   (SELECT f.flow_id, f.track, f.lane, f.ts FROM flow f ORDER BY f.flow_id, f.ts) f
   JOIN SystemProfileEvents e ON e.track = f.track AND e.lane = f.lane AND e.start_ts = f.ts
   GROUP BY f.flow_id ORDER BY 1"
sqlite3 "$T_TMP/a.db" "$flowq" > "$T_TMP/a.flows"
sqlite3 "$T_TMP/b.db" "$flowq" > "$T_TMP/b.flows"
cmp -s "$T_TMP/a.flows" "$T_TMP/b.flows"
ok $? "round trip: the same $(wc -l < "$T_TMP/a.flows") flows linking the same events"

# Our JSON (the vendor's system_profile.json shape) round-trips too.
mkdir "$T_TMP/js"
"$SERVER" --dir "$P" --db "$T_TMP/a.db" --quiet --output-format json \
  --output-file "$T_TMP/js/system_profile.json"
is "$?" 0 "--output-format json exits 0"
"$SERVER" --dir "$T_TMP/js" --db "$T_TMP/c.db" --ingest-only --quiet
is "$?" 0 "the json export ingests without a warning"
q="SELECT name || ' ' || start_ts || ' ' || duration_ns || ' ' || trace_event_source || ' ' ||
   instance_id || ' ' || process_id || ' ' || coalesce(thread_id, '') || ' ' ||
   coalesce(nc_idx, '') || ' ' || coalesce(worker_gid, '') FROM SystemProfileEvents ORDER BY 1"
sqlite3 "$T_TMP/a.db" "$q" > "$T_TMP/a.full"
sqlite3 "$T_TMP/c.db" "$q" > "$T_TMP/c.full"
cmp -s "$T_TMP/a.full" "$T_TMP/c.full"
ok $? "json round trip: the same events with source, instance, process, thread, NC and worker"
sqlite3 "$T_TMP/c.db" "$flowq" > "$T_TMP/c.flows"
cmp -s "$T_TMP/a.flows" "$T_TMP/c.flows"
ok $? "json round trip: the same flows"

"$SERVER" --dir "$P" --db "$T_TMP/a.db" --quiet --output-format summary-json \
  --output-file "$T_TMP/s.json"
got=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['instances'], d['processes'], len(d['device_profiles']))" "$T_TMP/s.json")
is "$got" "1 2 4" "summary-json: instances, processes, device profiles"
"$SERVER" --dir "$P" --db "$T_TMP/a.db" --quiet --output-format summary-text > "$T_TMP/s.txt"
grep -q "^System Profile Summary" "$T_TMP/s.txt"
ok $? "summary-text starts with its title"
"$SERVER" --dir "$P" --db "$T_TMP/a.db" --quiet --output-format csv > "$T_TMP/e.csv"
is "$(($(wc -l < "$T_TMP/e.csv") - 1))" "$(wc -l < "$T_TMP/a.events")" "csv has one row per event"
"$SERVER" --dir "$P" --db "$T_TMP/a.db" --quiet --output-format pdf 2>"$T_TMP/err"
is "$?" 2 "an unknown format exits 2"
grep -q "pdf" "$T_TMP/err"
ok $? "naming the format"
tap_done
