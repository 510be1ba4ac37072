"""oracle_store.py -- what the Python oracles share: TAP lines, ingesting one
trace file into a store of its own, and the Chrome pid/tid text of a
store's track (so that rows can be matched with the file's events)."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import nexdb  # noqa: F401,E402 (connections read the store's slice table)



class Tap:
    """TAP lines: ok/not ok (a failure with its comment lines), a plan at
    the end."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, lines=()):
        self.n += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.n, name))
        if not cond:
            self.failed += 1
            for line in lines:
                print("#   " + line)

    def skip(self, why):
        self.n += 1
        print("ok %d # SKIP %s" % (self.n, why))

    def done(self):
        print("1..%d" % self.n)
        return 1 if self.failed else 0


def paths():
    """(source dir, server binary) from the make check environment."""
    src = os.environ.get("NEX_SRCDIR") or os.path.abspath(
        os.path.join(os.path.dirname(__file__), "..", ".."))
    build = os.environ.get("NEX_BUILDDIR") or os.getcwd()
    return src, os.path.join(build, "server", "neuron-explorer-server")


def ingest(server, path, tmp):
    """Ingests the trace at path alone (copied into a folder of its own
    under tmp); returns (exit status, store path)."""
    b = os.path.basename(path)
    d = os.path.join(tmp, b + ".d")
    os.mkdir(d)
    shutil.copyfile(path, os.path.join(d, b))
    db = os.path.join(tmp, b + ".db")
    rc = subprocess.run([server, "--dir", d, "--db", db, "--ingest-only",
                         "--quiet"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode
    return rc, db


def chrome_ids(con):
    """A function (pid, tid) -> (pid text, tid text) as the trace wrote
    them: numbers as themselves, names (pids/tids that were text) from the
    process and thread tables."""
    pname = dict(con.execute("SELECT pid, name FROM process WHERE named"))
    tname = {(p, t): n for p, t, n in con.execute(
        "SELECT pid, tid, name FROM thread WHERE named")}

    def ids(pid, tid):
        return pname.get(pid, str(pid)), tname.get((pid, tid), str(tid))
    return ids
