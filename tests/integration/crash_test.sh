#!/bin/bash
# crash_test.sh -- crash safety of the store.  kill -9 at several moments of
# an ingest never leaves a store that a reader would open (only <db>.tmp),
# and the next start builds a complete store equal to the generator's
# manifest; the same in serving mode.  A read-only --dir ingests untouched;
# an unusable --db location, a full disk and a file-size limit fail with
# exit 3, one clear line and nothing left behind.  SIGTERM/SIGINT during
# an ingest (serving or --ingest-only) exits 5 and leaves no <db>.tmp.
. "$NEX_SRCDIR/tests/integration/lib.sh"
tap_tmpdir
P="$T_TMP/profile"
"$SYNTH" --out "$P" --seed 13 --target-events 1200000 \
  --manifest "$T_TMP/manifest.json" 2>/dev/null
ok $? "generator writes a profile of 1.2M events"

# A digest of every timeline row, to compare two stores of one profile.
digest() { # digest DB
  sqlite3 "$1" "SELECT (SELECT count(*) || ':' || sum(ts % 1000003) || ':' ||
      sum(dur % 1000003) || ':' || sum(lane) FROM slice) || '/' ||
    (SELECT count(*) || ':' || sum(ts % 1000003) FROM counter) || '/' ||
    (SELECT count(*) FROM slice_lod) || '/' || (SELECT count(*) FROM flow) ||
    '/' || (SELECT count(*) FROM str) || '/' || (SELECT count(*) FROM track)"
}

size_of() { stat -c %s "$1" 2>/dev/null || echo -1; }

# wait_until SECONDS PID COMMAND...: polls COMMAND every 10 ms.  Returns 0
# when it succeeds, 1 on timeout, 2 if PID ended first.
wait_until() {
  local end=$((SECONDS + $1)) pid=$2
  shift 2
  until "$@"; do
    kill -0 "$pid" 2>/dev/null || return 2
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 0.01
  done
}
tmp_over() { [ "$(size_of "$DB.tmp")" -gt "$1" ]; }

# ---------------------------------------------------------------- kill -9
# The reference: an uninterrupted ingest.
"$SERVER" --dir "$P" --db "$T_TMP/ref.db" --ingest-only --quiet
is "$?" 0 "an uninterrupted ingest exits 0"
REF_SIZE=$(size_of "$T_TMP/ref.db")
REF_DIGEST=$(digest "$T_TMP/ref.db")

# Each start finds the .tmp of the killed one before it; the store is
# written at the end (cache spill, then COMMIT, indexes, ANALYZE), so the
# .tmp size says how far the ingest got.
DB="$T_TMP/crash.db"
MB=$((1024 * 1024))
# The points rise: a start that finds a .tmp already past its point
# (left by the kill before) would be killed before it made its own.
for at in 0 $MB $((REF_SIZE / 8)) $((REF_SIZE / 4)) $((REF_SIZE / 2)) \
  $((REF_SIZE * 9 / 10)); do
  # the .tmp the kill before left, when past this point (its ingest
  # outran the poll), would be taken for this start's: wait for the new
  # one to pass it (a kill between removing it and making its own would
  # leave none)
  left=$(size_of "$DB.tmp")
  "$SERVER" --dir "$P" --db "$DB" --ingest-only --quiet &
  pid=$!
  wait_until 300 $pid tmp_over "$((left > at ? left : at))"
  waited=$?
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  what="killed when crash.db.tmp passed $((at / MB)) MiB"
  [ "$at" = 0 ] && what="killed as soon as crash.db.tmp appeared"
  is "$waited" 0 "$what: the ingest was still running"
  [ ! -e "$DB" ]
  ok $? "$what: no store under its final name"
  [ -e "$DB.tmp" ]
  ok $? "$what: only the temporary file is left"
done
"$SERVER" --dir "$P" --db "$DB" --ingest-only --quiet
is "$?" 0 "the restart after six kills exits 0"
[ ! -e "$DB.tmp" ]
ok $? "the restart replaced the stale temporary file"
tap_check_store "$DB" "$T_TMP/manifest.json"
is "$(digest "$DB")" "$REF_DIGEST" "the restart's store has every row of the uninterrupted one"
is "$(sqlite3 "$DB" "SELECT value FROM store_info WHERE key='state'")" complete \
  "the store says it is complete"

# Serving mode: killed while the page would show the progress.
DB="$T_TMP/serve.db"
"$SERVER" --dir "$P" --db "$DB" --port 0 --no-watch 2>"$T_TMP/serve.err" &
pid=$!
# early in the ingest (an eighth of the store), so that it is still
# running after the health request
wait_until 300 $pid tmp_over $((REF_SIZE / 8))
is "$?" 0 "serving: the ingest is under way"
port=$(sed -n 's|.*serving on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$T_TMP/serve.err" | head -1)
state=$(curl -s -H "Host: localhost" "http://127.0.0.1:$port/api/v1/health" |
  python3 -c "import json,sys; print(json.load(sys.stdin)['state'])")
is "$state" loading "serving: /health says loading during the ingest"
kill -9 $pid
wait $pid 2>/dev/null
[ ! -e "$DB" ] && [ -e "$DB.tmp" ]
ok $? "serving: killed mid-ingest, only the temporary file is left"
"$SERVER" --dir "$P" --db "$DB" --port 0 --no-watch 2>"$T_TMP/serve2.err" &
pid=$!
port_known() { grep -q "serving on" "$T_TMP/serve2.err"; }
wait_until 60 $pid port_known
port=$(sed -n 's|.*serving on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$T_TMP/serve2.err" | head -1)
ready() {
  curl -s -H "Host: localhost" "http://127.0.0.1:$port/api/v1/health" |
    grep -q '"state":"ready"'
}
wait_until 300 $pid ready
is "$?" 0 "serving: the restarted server becomes ready"
got=$(curl -s -H "Host: localhost" "http://127.0.0.1:$port/api/v1/profile" |
  python3 -c "import json,sys; print(json.load(sys.stdin)['event_count'])")
want=$(sqlite3 "$T_TMP/ref.db" \
  "SELECT (SELECT count(*) FROM slice) + (SELECT count(*) FROM counter WHERE series = 0)")
is "$got" "$want" "serving: the restarted server serves every event"
kill -TERM $pid
wait $pid
is "$?" 0 "serving: SIGTERM stops it cleanly"
is "$(digest "$DB")" "$REF_DIGEST" "serving: the store equals the uninterrupted one"
rm -f "$T_TMP"/*.db

# ---------------------------------------------------------------- locations
# A small profile (a 4.8 MB store) for the rest.
S="$T_TMP/small"
"$SYNTH" --out "$S" --seed 3 --steps 40 2>/dev/null
snapshot() { (cd "$S" && find . -printf '%p %s %T@ %m\n' | sort); }
before=$(snapshot)

# One clear line, exit 3, nothing left: run_fail DB DESCRIPTION [WANT-IN-MESSAGE]
run_fail() {
  "$SERVER" --dir "$S" --db "$1" --ingest-only --quiet 2>"$T_TMP/err"
  is "$?" 3 "$2: exit 3"
  is "$(wc -l < "$T_TMP/err")" 1 "$2: one line on stderr"
  grep -q -- "${3:-$1}" "$T_TMP/err"
  ok $? "$2: the message says '${3:-$1}'"
  sed 's/^/#   /' "$T_TMP/err"
}
run_fail "$T_TMP/missing/s.db" "--db in a missing folder" "No such file or directory"
touch "$T_TMP/afile"
run_fail "$T_TMP/afile/s.db" "--db under a regular file" "Not a directory"
ls "$T_TMP"/afile* "$T_TMP/missing" >"$T_TMP/left" 2>/dev/null
is "$(cat "$T_TMP/left")" "$T_TMP/afile" "nothing created next to them"
mkdir "$T_TMP/adir"
run_fail "$T_TMP/adir" "--db naming a directory" "Is a directory"
[ ! -e "$T_TMP/adir.tmp" ] && [ -z "$(ls -A "$T_TMP/adir")" ]
ok $? "--db naming a directory: nothing created"

# A file-size limit: writes fail with EFBIG (SIGXFSZ ignored).
(
  trap '' XFSZ
  ulimit -f 1024
  exec "$SERVER" --dir "$S" --db "$T_TMP/big.db" --ingest-only --quiet
) 2>"$T_TMP/err"
is "$?" 3 "a 1 MiB file-size limit: exit 3"
is "$(wc -l < "$T_TMP/err")" 1 "a 1 MiB file-size limit: one line on stderr"
grep -q "File too large" "$T_TMP/err"
ok $? "a 1 MiB file-size limit: the message says 'File too large'"
sed 's/^/#   /' "$T_TMP/err"
ls "$T_TMP"/big.db* >/dev/null 2>&1
ok $((! $?)) "a 1 MiB file-size limit: no store and no temporary file left"

# Read-only file systems and a full disk: a private mount namespace (no
# root needed where user namespaces are enabled).
if unshare -rm true 2>/dev/null; then
  mkdir "$T_TMP/ro" "$T_TMP/full"
  cat > "$T_TMP/ns.sh" <<'EOF'
set -u
# the profile read-only, an empty read-only folder, a 1 MiB disk
mount --bind "$S" "$S" && mount -o remount,bind,ro "$S" &&
  mount -t tmpfs -o size=64k tmpfs "$T/ro" && mount -o remount,ro "$T/ro" &&
  mount -t tmpfs -o size=1m tmpfs "$T/full" || exit 99
touch "$S/probe" 2>/dev/null && exit 98
"$SERVER" --dir "$S" --db "$T/rodir.db" --ingest-only --quiet
echo "rodir $?"
"$SERVER" --dir "$S" --db "$T/ro/s.db" --ingest-only --quiet 2>"$T/ro.err"
echo "rodb $?"
"$SERVER" --dir "$S" --db "$T/full/s.db" --ingest-only --quiet 2>"$T/full.err"
echo "full $? $(ls -A "$T/full" | wc -l) $(ls -A "$T/ro" | wc -l)"
EOF
  T="$T_TMP" S="$S" SERVER="$SERVER" unshare -rm bash "$T_TMP/ns.sh" >"$T_TMP/ns.out" 2>&1
  rc=$?
  is "$rc" 0 "a private mount namespace with a read-only --dir and a 1 MiB tmpfs"
  sed 's/^/#   /' "$T_TMP/ns.out"
  grep -qx "rodir 0" "$T_TMP/ns.out"
  ok $? "a read-only --dir ingests (exit 0) with --db elsewhere"
  sqlite3 "$T_TMP/rodir.db" "SELECT count(*) FROM SystemProfileEvents" >/dev/null
  ok $? "and its store is readable"
  grep -qx "rodb 3" "$T_TMP/ns.out" && [ "$(wc -l < "$T_TMP/ro.err")" = 1 ] &&
    grep -q "Read-only file system" "$T_TMP/ro.err"
  ok $? "--db on a read-only file system: exit 3, one line saying 'Read-only file system'"
  sed 's/^/#   /' "$T_TMP/ro.err"
  grep -qx "full 3 0 0" "$T_TMP/ns.out" && [ "$(wc -l < "$T_TMP/full.err")" = 1 ] &&
    grep -q "disk is full" "$T_TMP/full.err"
  ok $? "a full disk: exit 3, one line saying 'disk is full', no file left on it"
  sed 's/^/#   /' "$T_TMP/full.err"
else
  for what in "a private mount namespace" "a read-only --dir ingests" \
    "its store is readable" "--db on a read-only file system" "a full disk"; do
    T_N=$((T_N + 1))
    echo "ok $T_N - $what # SKIP unshare -rm is not permitted here"
  done
fi
# Without the namespace (or as well): the server never writes under --dir.
"$SERVER" --dir "$S" --db "$T_TMP/elsewhere.db" --ingest-only --quiet
is "$?" 0 "--dir with --db elsewhere ingests"
is "$(snapshot)" "$before" "nothing under --dir was created or changed"

# ---------------------------------------------------------------- SIGTERM
# SIGTERM while serving, during the first ingest, once it has printed a
# progress line: exit 5 (interrupted) and no <db>.tmp left behind.
DB="$T_TMP/term.db"
"$SERVER" --dir "$P" --db "$DB" --port 0 --no-watch 2>"$T_TMP/term.err" &
pid=$!
progress() { grep -q "ingest: .* events" "$T_TMP/term.err"; }
wait_until 300 $pid progress
is "$?" 0 "the ingest prints a progress line"
kill -TERM $pid
wait $pid
is "$?" 5 "SIGTERM during the first ingest exits 5"
ok "$([ ! -e "$DB.tmp" ] && [ ! -e "$DB" ]; echo $?)" "no term.db.tmp and no term.db left"

# The same for --ingest-only (it used to die by the signal, 143, leaving
# <db>.tmp): once the temporary store has its schema, SIGTERM or SIGINT.
for sig in TERM INT; do
  DB="$T_TMP/only-$sig.db"
  "$SERVER" --dir "$P" --db "$DB" --ingest-only 2>"$T_TMP/only.err" &
  pid=$!
  wait_until 300 $pid tmp_over 0
  is "$?" 0 "--ingest-only: only-$sig.db.tmp appears"
  kill -$sig $pid
  wait $pid
  is "$?" 5 "--ingest-only: SIG$sig during the ingest exits 5"
  ok "$([ ! -e "$DB.tmp" ] && [ ! -e "$DB" ]; echo $?)" \
    "--ingest-only: no only-$sig.db.tmp and no only-$sig.db left"
  grep -q "interrupted during the ingest .*; no store was written" "$T_TMP/only.err"
  ok $? "--ingest-only: the log says the store was not written"
done
tap_done
