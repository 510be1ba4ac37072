#!/bin/bash
# bootstrap.sh -- set up a fresh Debian 12 machine, build, and then either
# start the server on a generated demo profile or run every test.
#
#   tools/bootstrap.sh demo     install, build, generate the demo profile,
#                               serve it on http://localhost:3001
#   tools/bootstrap.sh test     install, build, run the whole test suite,
#                               end with "N passed, N failed"
#
# Environment: PORT (demo, default 3001), NEX_ASAN=1 (test: also run the
# unit and integration tests under AddressSanitizer/UBSan), NEX_WERROR=1
# (warnings are errors).  The browser test must run here (NEX_REQUIRE_E2E=1):
# this script installs Chromium and node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
mode=${1:-}
case "$mode" in demo | test) ;; *)
  echo "usage: $0 demo|test" >&2
  exit 2
  ;;
esac

packages="build-essential autoconf automake libtool pkg-config
  libmicrohttpd-dev libjansson-dev libsqlite3-dev sqlite3 libprotobuf-c-dev
  protobuf-c-compiler libwebsockets-dev zlib1g-dev libzstd-dev libcmocka-dev
  python3 curl"
[ "$mode" = test ] && packages="$packages chromium clang nodejs npm protobuf-compiler zstd"
missing=""
for p in $packages; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
# node from another source counts: only install Debian's if there is none.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=$(echo "$missing" | tr ' ' '\n' | grep -vx -e nodejs -e npm | tr '\n' ' ')
fi
if [ -n "${missing// /}" ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "bootstrap: installing:$missing" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi

build() { # build DIR [configure args...]
  local dir=$1
  shift
  [ -x configure ] || ./autogen.sh >/dev/null
  mkdir -p "$dir"
  (cd "$dir" && { [ -f Makefile ] || "$top/configure" -q "$@"; } &&
    make -j"$(nproc)" -s >/dev/null)
}
werror=""
[ "${NEX_WERROR:-${CI:-}}" != "" ] && werror=--enable-werror
build build $werror

if [ "$mode" = demo ]; then
  demo="$top/build/demo-profile"
  if [ ! -d "$demo" ]; then
    build/tools/neuron-explorer-synth --out "$demo" --seed 1 --instances 1 \
      --processes 2 --cores 4 --steps 200 --device-profile model
  fi
  exec build/server/neuron-explorer-server --dir "$demo" \
    --db "$top/build/demo.db" --port "${PORT:-3001}" --web-root "$top/web"
fi

# test
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --silent
logs="$top/build/test-logs"
rm -rf "$logs"
mkdir -p "$logs"
status=0
trs="build/tests/*/*.trs"
(cd build && NEX_REQUIRE_E2E=1 make -j2 check >"$logs/check.out" 2>&1) || status=1
grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP):' "$logs/check.out" || true
if [ "${NEX_ASAN:-${CI:-}}" != "" ]; then
  build build-asan --enable-asan
  # a sanitizer report exits 86, so no test mistakes it for an exit status
  (cd build-asan && NEX_SKIP_E2E=1 \
    ASAN_OPTIONS=detect_leaks=1:exitcode=86 \
    UBSAN_OPTIONS=print_stacktrace=1:exitcode=86 \
    make -j2 check >"$logs/check-asan.out" 2>&1) || status=1
  grep -E '^(FAIL|ERROR|XPASS):' "$logs/check-asan.out" | sed 's/^/asan /' || true
  trs="$trs build-asan/tests/*/*.trs"
fi
for f in build/tests/*/*.log build-asan/tests/*/*.log; do
  [ -f "$f" ] || continue
  if grep -qE '^(not ok|ERROR|# FAIL)' "$f" 2>/dev/null; then
    echo "---- $f"
    grep -E -B2 -A6 '^(not ok|Bail out)' "$f" | head -60 || true
  fi
done
# counted from the drivers' .trs files: with make -j2 the console lines of
# two tests can run together and a count of them would miss one
# shellcheck disable=SC2086
passed=$(cat $trs 2>/dev/null | grep -cE '^:test-result: (PASS|XFAIL)' || true)
# shellcheck disable=SC2086
failed=$(cat $trs 2>/dev/null | grep -cE '^:test-result: (FAIL|ERROR|XPASS)' || true)
echo "$passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
