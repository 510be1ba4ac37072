#!/bin/sh
# wsq_test.sh -- queries over the WebSocket end to end; see wsq_test.py.
exec python3 "$NEX_SRCDIR/tests/integration/wsq_test.py"
