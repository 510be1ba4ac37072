"""nexdb.py -- lets Python's sqlite3 read a store's `slice` table and the
views over it (SystemProfileEvents, Instruction, DmaPacket ...): importing
it registers the extension nexstore.so of the build ($NEX_BUILDDIR, or the
directory given to register()) as an automatic extension of the process's
SQLite library, so every connection opened afterwards has the module.
(Python's sqlite3 may be built without enable_load_extension(); the
automatic extension works whenever it uses the system's libsqlite3.)

    import nexdb                       # with NEX_BUILDDIR set
    db = sqlite3.connect(store)        # reads slice
"""
import ctypes
import ctypes.util
import os
import sqlite3  # noqa: F401 (loads the SQLite library the module uses)

_done = []


def register(builddir=None):
    """Registers nexstore.so of builddir (default $NEX_BUILDDIR) once per
    process.  Returns its path."""
    if _done:
        return _done[0]
    so = os.path.join(builddir or os.environ["NEX_BUILDDIR"], "nexstore.so")
    ext = ctypes.CDLL(so)
    lib = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
    lib.sqlite3_auto_extension.argtypes = [ctypes.c_void_p]
    rc = lib.sqlite3_auto_extension(
        ctypes.cast(ext.sqlite3_nexstore_init, ctypes.c_void_p))
    if rc != 0:
        raise OSError("sqlite3_auto_extension(%s) failed: %d" % (so, rc))
    _done.append(so)
    return so


# a build of the one-row-per-slice store has none (and needs none)
if os.path.exists(os.path.join(os.environ.get("NEX_BUILDDIR", "/nonexistent"),
                               "nexstore.so")):
    register()
