#!/bin/bash
# tail_test.sh -- bad input is bounded: a file keeps at most 1,000 Warning
# rows (with their offsets) and one summary row counting the rest, and a
# 32 MiB zero-filled or garbage tail on a file of every format (Chrome JSON,
# the runtime's JSON dump, the vendor's JSON export, Perfetto, NTFF,
# ntrace.pb) ends that file's read with a few Warning rows; the records
# before the tail are kept.  A 2 GiB sparse tail is not read at all.
. "$NEX_SRCDIR/tests/integration/lib.sh"
tap_tmpdir
D="$NEX_SRCDIR/tests/data"

# 1,500 counter events without a number: 1,000 rows, then one summary.
W="$T_TMP/warn"
mkdir "$W"
python3 - "$W/trace.json" <<'EOF'
import sys
ev = ['{"ph":"X","name":"ok","pid":1,"tid":1,"ts":1,"dur":1}']
ev += ['{"ph":"C","name":"c%d","pid":1,"ts":%d,"args":{"v":"x"}}' % (i, i)
       for i in range(1500)]
open(sys.argv[1], "w").write("[\n" + ",\n".join(ev) + "\n]\n")
EOF
"$SERVER" --dir "$W" --db "$T_TMP/warn.db" --ingest-only --quiet 2>/dev/null
is "$?" 1 "a trace with skipped events: --ingest-only exits 1"
q() { sqlite3 "$1" "$2"; }
is "$(q "$T_TMP/warn.db" "SELECT count(*) || ' ' || count(DISTINCT offset) FROM Warning WHERE file = 'trace.json' AND message LIKE 'counter event%'")" \
  "1000 1000" "the first 1,000 warnings of the file are rows with their own offsets"
first=$(grep -bo '"name":"c1000"' "$W/trace.json" | cut -d: -f1)
is "$(q "$T_TMP/warn.db" "SELECT category || '|' || (offset <= $first AND offset > $first - 40) || '|' || message FROM Warning WHERE file = 'trace.json' AND message NOT LIKE 'counter event%'")" \
  "Corrupt Data|1|500 more warnings of this file from this offset on, not recorded (the first 1000 of a file are)" \
  "one summary row counts the other 500 at the offset of the first left out"
is "$(q "$T_TMP/warn.db" "SELECT count(*) FROM SystemProfileEvents WHERE name = 'ok'")" 1 \
  "the good event is kept"

# One folder per format, its file cut at 2/3 and followed by 32 MiB of zeros
# or of (seeded) random bytes.
python3 -c 'import random,sys; sys.stdout.buffer.write(random.Random(16).randbytes(32 << 20))' \
  > "$T_TMP/garbage"
"$SYNTH" --out "$T_TMP/native" --seed 3 --processes 1 --steps 3 \
  --device-profile model --device-instructions 400 2>/dev/null
"$SYNTH" --out "$T_TMP/dump" --seed 3 --processes 1 --steps 3 \
  --device-profile none --format systrace-json 2>/dev/null
# tail FOLDER FILE KIND: cuts FILE (relative to FOLDER) at 2/3 and appends.
tail32() {
  local f="$1/$2" n
  n=$(stat -c %s "$f")
  truncate -s $((n * 2 / 3)) "$f"
  if [ "$3" = zero ]; then truncate -s +32M "$f"; else cat "$T_TMP/garbage" >> "$f"; fi
}
# case NAME FILE KIND EXPECTED-ROWS ROW-WHERE: EXPECTED-ROWS Warning rows
# for FILE, and at least one event or instruction kept.
check() {
  local name=$1 file=$2 kind=$3 rows=$4 db="$T_TMP/$1-$3.db" t0 t1
  t0=$(date +%s%N)
  "$SERVER" --dir "$T_TMP/$name-$kind" --db "$db" --ingest-only --quiet 2>/dev/null
  is "$?" 1 "$name, $kind tail: --ingest-only exits 1"
  t1=$(date +%s%N)
  echo "# $name, $kind tail: $(((t1 - t0) / 1000000)) ms"
  is "$(q "$db" "SELECT count(*) FROM Warning WHERE file = '$file'")" "$rows" \
    "$name, $kind tail: $rows Warning rows for $file"
  ok "$([ "$(q "$db" "SELECT (SELECT count(*) FROM SystemProfileEvents) + (SELECT count(*) FROM Instruction)")" -gt 0 ]; echo $?)" \
    "$name, $kind tail: the records before the tail are kept"
}
for kind in zero garbage; do
  mkdir "$T_TMP/chrome-$kind" "$T_TMP/vjson-$kind" "$T_TMP/perfetto-$kind"
  cp "$D/chrome/basic.json" "$T_TMP/chrome-$kind/trace.json"
  tail32 "$T_TMP/chrome-$kind" trace.json $kind
  cp "$D/vjson/system_profile.json" "$T_TMP/vjson-$kind/"
  tail32 "$T_TMP/vjson-$kind" system_profile.json $kind
  cp "$D/perfetto/track_event_tracks.pftrace" "$T_TMP/perfetto-$kind/t.pftrace"
  tail32 "$T_TMP/perfetto-$kind" t.pftrace $kind
  cp -r "$T_TMP/dump" "$T_TMP/nrtjson-$kind"
  dump=$(cd "$T_TMP/dump" && ls */ntrace_events.json)
  tail32 "$T_TMP/nrtjson-$kind" "$dump" $kind
  cp -r "$T_TMP/native" "$T_TMP/ntff-$kind"
  ntff=$(cd "$T_TMP/native" && ls */*vnc_0.ntff)
  tail32 "$T_TMP/ntff-$kind" "$ntff" $kind
  cp -r "$T_TMP/native" "$T_TMP/ntrace-$kind"
  ntrace=$(cd "$T_TMP/native" && ls */ntrace.pb)
  tail32 "$T_TMP/ntrace-$kind" "$ntrace" $kind
done
check chrome trace.json zero 4
check chrome trace.json garbage 1001
check vjson system_profile.json zero 5
check vjson system_profile.json garbage 966
check perfetto t.pftrace zero 1
check perfetto t.pftrace garbage 1
check nrtjson "$dump" zero 3
check nrtjson "$dump" garbage 965
check ntff "$ntff" zero 2
check ntff "$ntff" garbage 4
check ntrace "$ntrace" zero 2
check ntrace "$ntrace" garbage 11

# A 2 GiB sparse tail (a hole: no disk used) on ntrace.pb and on an NTFF:
# the hole is not read (it took 8 s of CPU per file at memory speed).
S2="$T_TMP/sparse"
cp -r "$T_TMP/native" "$S2"
for f in "$ntrace" "$ntff"; do truncate -s 2G "$S2/$f"; done
/usr/bin/time -o "$T_TMP/cpu" -f "%U %S" "$SERVER" --dir "$S2" \
  --db "$T_TMP/sparse.db" --ingest-only --quiet 2>/dev/null
cpu=$(tail -1 "$T_TMP/cpu")
echo "# 2 GiB sparse tails: user/sys CPU seconds $cpu"
is "$(q "$T_TMP/sparse.db" "SELECT count(*) FROM Warning WHERE file IN ('$ntrace', '$ntff')")" 2 \
  "2 GiB sparse tails: one Warning row per file"
ok "$(awk -v c="$cpu" 'BEGIN { n = split(c, t, " "); exit !(n == 2 && t[1] + t[2] < 2) }'; echo $?)" \
  "2 GiB sparse tails: the holes are not read (under 2 s of CPU: $cpu)"

# The JSON readers (Chrome, vendor export, runtime dump) with a 2 GiB
# sparse tail: each stops at the end of the file's data and says how many
# bytes it did not read -- all of the hole (they used to scan it at memory
# speed, 7.5 to 9.7 s each).
J2="$T_TMP/sparse-json"
mkdir -p "$J2/c" "$J2/v"
cp "$D/chrome/basic.json" "$J2/c/trace.json"
cp "$D/vjson/system_profile.json" "$J2/v/"
cp -r "$T_TMP/dump" "$J2/n"
for f in "$J2/c/trace.json" "$J2/v/system_profile.json" "$J2/n/$dump"; do
  truncate -s +2G "$f"
done
for d in c/trace.json v/system_profile.json "n/$dump"; do
  f="$J2/$d"
  d=${d%%/*}
  "$SERVER" --dir "$J2/$d" --db "$J2/$d.db" --ingest-only --quiet 2>/dev/null
  row=$(q "$J2/$d.db" "SELECT offset || ' ' || message FROM Warning WHERE message LIKE '%hole%'")
  size=$(stat -c %s "$f")
  off=${row%% *}
  left=$(echo "$row" | sed -n 's/.*the last \([0-9]*\) bytes.*/\1/p')
  echo "# 2 GiB sparse JSON tail ($d): $row"
  is "$((off + left))" "$size" \
    "2 GiB sparse JSON tail ($d): one Warning row; the reader stopped at offset $off, before the hole, and read none of its $left bytes"
done

# 32 MiB of zeros written (no hole) after a vendor JSON export cut at 2/3:
# the read ends at the first run of NUL bytes, with one row naming its
# offset.
mkdir "$T_TMP/nul"
cp "$D/vjson/system_profile.json" "$T_TMP/nul/"
n=$(stat -c %s "$T_TMP/nul/system_profile.json")
truncate -s $((n * 2 / 3)) "$T_TMP/nul/system_profile.json"
head -c 32M /dev/zero >> "$T_TMP/nul/system_profile.json"
"$SERVER" --dir "$T_TMP/nul" --db "$T_TMP/nul.db" --ingest-only --quiet 2>/dev/null
is "$(q "$T_TMP/nul.db" "SELECT offset || ': ' || message FROM Warning WHERE message LIKE 'NUL%'")" \
  "$((n * 2 / 3)): NUL bytes from offset $((n * 2 / 3)) on: not JSON, the rest of the file is not read" \
  "32 MiB of written zeros: the read ends at the first NUL run, one row with its offset"
tap_done
