#!/bin/sh
# storediff_test.sh -- answers of the store compared with the recorded ones; see storediff_test.py.
exec python3 "$NEX_SRCDIR/tests/integration/storediff_test.py"
