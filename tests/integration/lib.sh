# lib.sh -- helpers for the TAP script tests (sourced).
# Needs NEX_BUILDDIR and NEX_SRCDIR (set by make check).
set -u
: "${NEX_BUILDDIR:?set by make check}" "${NEX_SRCDIR:?set by make check}"
SERVER="$NEX_BUILDDIR/server/neuron-explorer-server"
SYNTH="$NEX_BUILDDIR/tools/neuron-explorer-synth"
# the server finds the page in the source tree, not in an install
export NEX_WEB_ROOT="$NEX_SRCDIR/web"
T_N=0
T_FAILED=0
# The sqlite3 shell with the store's virtual table `slice` (nexstore.so),
# which slice and the views over it need; Python scripts run from here
# find it through NEX_BUILDDIR (tests/integration/nexdb.py).
sqlite3() { command sqlite3 -cmd ".load $NEX_BUILDDIR/nexstore" "$@"; }
export PYTHONPATH="$NEX_SRCDIR/tests/integration${PYTHONPATH:+:$PYTHONPATH}"

# A fresh scratch folder removed at exit.
tap_tmpdir() {
  T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/nex-test.XXXXXX")
  trap 'rm -rf "$T_TMP"' EXIT
}

ok() { # ok CONDITION-EXIT-STATUS DESCRIPTION
  T_N=$((T_N + 1))
  if [ "$1" -eq 0 ]; then
    echo "ok $T_N - $2"
  else
    echo "not ok $T_N - $2"
    T_FAILED=$((T_FAILED + 1))
  fi
}

# is ACTUAL EXPECTED DESCRIPTION
is() {
  T_N=$((T_N + 1))
  if [ "$1" = "$2" ]; then
    echo "ok $T_N - $3"
  else
    echo "not ok $T_N - $3"
    echo "#   got:      '$1'"
    echo "#   expected: '$2'"
    T_FAILED=$((T_FAILED + 1))
  fi
}

# tap_check_store DB MANIFEST: compares the store DB with the generator's
# MANIFEST (check_store.py) and prints its TAP lines as ours, then one line
# that fails when check_store.py did not run to the end (an exception, a
# missing file: the checks after it never ran), with its stderr.
tap_check_store() {
  local rc
  python3 "$NEX_SRCDIR/tests/integration/check_store.py" "$1" "$2" \
    > "$T_TMP/check.tap" 2> "$T_TMP/check.err"
  rc=$?
  while IFS= read -r line; do
    case "$line" in
    "ok "*) ok 0 "${line#ok }" ;;
    "not ok "*) ok 1 "${line#not ok }" ;;
    *) echo "$line" ;;
    esac
  done < "$T_TMP/check.tap"
  ok "$rc" "check_store.py ran every check (exit status $rc)"
  [ "$rc" -eq 0 ] || sed 's/^/#   /' "$T_TMP/check.err"
}

tap_done() {
  echo "1..$T_N"
  [ "$T_FAILED" -eq 0 ]
}
