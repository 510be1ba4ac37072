#!/bin/sh
# server_test.sh -- the one-port server end to end; see server_test.py.
exec python3 "$NEX_SRCDIR/tests/integration/server_test.py"
