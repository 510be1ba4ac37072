#!/usr/bin/env python3
"""load_test.py -- 600 hostile and heavy connections of six kinds at once
(bench/load --crowd: slow headers, silent, keep-alive REST, WebSocket
non-readers, slow export readers, SQL hogs) while a page-like client asks
its window queries over REST and the WebSocket: it must get every answer.
The latency and memory targets are bench/load's (bench/README.md, "Load"):
they depend on the machine, so this test only prints them.

Also: libmicrohttpd never refuses a connection itself (libmicrohttpd 0.9.75
then stops serving HTTP for good), the server answers /health afterwards,
and it exits 0 on SIGTERM."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nextest import BUILD, SYNTH, Server, check, main  # noqa: E402

LOAD = os.path.join(BUILD, "bench", "load")
CROWD = 600
SECONDS = 4


def run(tmp):
    prof = os.path.join(tmp, "profile")
    r = subprocess.run([SYNTH, "--out", prof, "--seed", "5", "--instances",
                        "1", "--processes", "1", "--cores", "2", "--steps",
                        "400"], capture_output=True)
    srv = Server(tmp, prof, os.path.join(tmp, "store.db"), None,
                 ["--no-watch"])
    if not check(r.returncode == 0 and srv.wait_ready() == "ready",
                 "the server becomes ready", r.stderr):
        return srv
    try:  # 600 connections and the measuring client's: raise the limit
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    except (ImportError, ValueError, OSError):
        pass
    p = subprocess.run([LOAD, "--port", str(srv.port), "--crowd", str(CROWD),
                        "--seconds", str(SECONDS), "--pid",
                        str(srv.proc.pid)],
                       capture_output=True, text=True, timeout=300)
    for line in p.stdout.splitlines():
        print("# " + line)
    check(p.returncode == 0,
          "the measuring client got every answer with %d hostile "
          "connections (exit status %d)" % (CROWD, p.returncode),
          p.stdout[-1500:] + p.stderr[-800:])
    got = dict(re.findall(r"^crowd\s+(REST /slices|WS slices)\s+(\d+) answers",
                          p.stdout, re.M))
    check(int(got.get("REST /slices", 0)) > 0 and
          int(got.get("WS slices", 0)) > 0,
          "it got REST and WebSocket answers while the crowd was connected",
          got)
    kinds = dict((m[0].strip(), int(m[1])) for m in re.findall(
        r"^  (\S.{15})\s+(\d+)", p.stdout, re.M))
    check(len(kinds) == 6 and all(v > 0 for v in kinds.values()),
          "every kind of the crowd connected", kinds)
    check(srv.health() == "ready", "/health answers after the crowd left")
    err = open(srv.err_path).read()
    check("limit of 512 HTTP connections" not in err,
          "libmicrohttpd never refused a connection at its own limit",
          err[-800:])
    check(srv.stop(20) == 0, "SIGTERM: exit 0")
    return srv


if __name__ == "__main__":
    sys.exit(main("nex-load-", run))
