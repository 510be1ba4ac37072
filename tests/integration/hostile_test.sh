#!/bin/sh
# hostile_test.sh -- hostile requests against the server; see hostile_test.py.
exec python3 "$NEX_SRCDIR/tests/integration/hostile_test.py"
