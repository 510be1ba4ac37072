#!/bin/sh
# roundtrip_test.sh -- export -> ingest again -> same store; see roundtrip_test.py.
exec python3 "$NEX_SRCDIR/tests/integration/roundtrip_test.py"
