#!/bin/sh
# names_test.sh -- Chrome traces drawn with their own names; see names_test.py.
exec python3 "$NEX_SRCDIR/tests/integration/names_test.py"
