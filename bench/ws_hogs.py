#!/usr/bin/env python3
"""ws_hogs.py -- WebSocket clients that ask and never read, against a
running neuron-explorer-server: the server's memory while they wait and
after they leave (doc/reliability.md, "WebSocket memory").

    bench/ws_hogs.py PORT SERVER_PID [CLIENTS [REQUESTS]]

Each of CLIENTS (50) connections, with a 4 KiB receive buffer, sends
REQUESTS (64) `slices` windows over every slice track at 10,000 px (the
whole profile, then halves of it down to 1/32) and reads nothing.  A
reading client asks for "stats" every 0.5 s until no query runs (or the
server closed the silent clients: it does after 60 s of unanswered pings),
printing the server's RSS, VmHWM and unread answers; then the clients
close and it prints the RSS once more (anonymous and file-backed: the
store is memory-mapped).
"""
import http.client
import json
import os
import socket
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "integration"))
from wsq_client import WsqClient  # noqa: E402


def status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) // 1024
    return 0


def memory(pid):
    return "RSS %d MiB (anon %d, file %d), VmHWM %d MiB" % (
        status(pid, "VmRSS:"), status(pid, "RssAnon:"),
        status(pid, "RssFile:"), status(pid, "VmHWM:"))


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path, headers={"Host": "localhost:%d" % port})
    return json.loads(c.getresponse().read())


def main():
    port, pid = int(sys.argv[1]), int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    per = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    prof = get(port, "/api/v1/profile")
    tracks = get(port, "/api/v1/tracks")
    ids = [b["id"] for t in tracks["tracks"] if t["kind"] == "slices"
           for b in t["base"]][:200]
    t0, t1 = int(prof["start"]), int(prof["end"])
    print("%d slice tracks; before: %s" % (len(ids), memory(pid)))
    watch = WsqClient(port)

    def stats(i):
        watch.send({"type": "stats", "id": i})
        while True:
            _, m = watch.recv()
            if m.get("type") == "stats" and m.get("id") == i:
                return m

    hogs = []
    for _ in range(n):
        c = WsqClient(port)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.settimeout(2)
        try:
            for i in range(per):
                c.send({"type": "slices", "id": i, "tracks": ids,
                        "start": t0, "end": t0 + ((t1 - t0) >> (i % 6)),
                        "px": 10000})
        except OSError:
            pass
        hogs.append(c)
    t, rid = time.time(), 1
    while True:
        st = stats(rid)
        rid += 1
        if rid % 10 == 0 or st["running"] == 0:
            print("%5.1f s: %s; unread answers %d MiB, dropped %d, "
                  "running %d" % (time.time() - t, memory(pid),
                                  st.get("waiting_bytes", 0) >> 20,
                                  st.get("dropped", 0), st["running"]))
        if st["running"] == 0 or time.time() - t > 300:
            break
        time.sleep(0.5)
    for c in hogs:
        c.sock.close()
    time.sleep(1)
    stats(rid)  # the server has seen them go
    time.sleep(2)
    print("after they left: %s" % memory(pid))
    return 0


if __name__ == "__main__":
    sys.exit(main())
