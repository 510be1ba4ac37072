"""names_test.py -- Chrome traces drawn with their own names: track names
from process_name / process_labels / thread_name (as Perfetto shows them,
no "framework" layer for a directory of Chrome traces only), sorted by the
sort indexes; text pids as names with small synthetic numbers; two files of
one rank kept apart with a Warning; event attributes with the numbers the
trace wrote."""
import json
import os
import re
import shutil
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nextest import SRC, SERVER, Client, Server, check, main  # noqa: E402
import subprocess  # noqa: E402

CHROME = os.path.join(SRC, "tests", "data", "chrome")


def names(c, mode):
    d = c.json("/api/v1/tracks?grouping=" + mode)
    return [(t["name"], t["event_count"]) for t in d["tracks"]]


def run(tmp):
    prof = os.path.join(tmp, "names")
    os.mkdir(prof)
    shutil.copy(os.path.join(CHROME, "names.json"), prof)
    server = Server(tmp, prof, os.path.join(tmp, "names.db"), args=["--no-watch"])
    try:
        check_server(tmp, server)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    check_files(tmp, prof)
    return None


def check_server(tmp, server):
    """The names, ids and attributes the server answers."""
    if not check(server.wait_ready() == "ready", "the server becomes ready"):
        return
    c = Client(server.port)
    got = names(c, "default")
    want = [("names.json/python3 0 (GPU 0)/stream 7", 1),
            ("names.json/python3 100 (CPU)/mem used", 1),
            ("names.json/python3 100 (CPU)/worker\u22151 101", 1),
            ("names.json/python3 100 (CPU)/thread 100 (python3)", 1),
            ("names.json/Process 5/Thread 9", 1),
            ("names.json/Spans/PyTorch Profiler", 1)]
    p = c.json("/api/v1/profile")
    logged = re.findall(r"ingested .*: (\d+) events", open(server.err_path).read())
    check(p["event_count"] == 6 and logged == ["6"], "profile event_count and "
          "the ingest log both count the 5 slices and the counter sample",
          (p["event_count"], logged))
    check(got == want, "default: process_name <pid> (process_labels) / "
          "thread_name, no framework layer, in sort index order", got)
    got = names(c, "process")
    want = [("names.json/python3 0 (GPU 0)", 1),
            ("names.json/python3 100 (CPU)", 2),
            ("names.json/python3 100 (CPU)/mem used", 1),
            ("names.json/Process 5", 1), ("names.json/Spans", 1)]
    check(got == want, "process: one track per process, named", got)
    check(names(c, "thread") == names(c, "default")
          and names(c, "cpu_device") == names(c, "default"),
          "thread and cpu_device name Chrome tracks as default does")
    db = sqlite3.connect(os.path.join(tmp, "names.db"))
    got = db.execute("SELECT pid, name, named FROM process WHERE named = 1"
                     ).fetchall() + db.execute(
        "SELECT tid, name, named FROM thread WHERE named = 1").fetchall()
    check(got == [(-1, "Spans", 1), (-2, "PyTorch Profiler", 1)],
          "text pid and tid: small synthetic numbers, the text as the name",
          got)
    key = "%d:%d:%d" % db.execute(
        "SELECT track, lane, ts FROM slice JOIN str ON str.id = slice.name "
        "WHERE str.s = 'step'").fetchone()
    db.close()
    st, _, body = c.get("/api/v1/events/" + key)
    text = body.decode()
    check(st == 200 and text.endswith(
        '"attributes":{"cat":"user_annotation","x": 189.62962, "big": '
        '"12345678901234567890", "e": 1.50e3, "neg": -0.0, "s": "t"}}'),
        "event attributes keep the numbers as the trace wrote them", text[-160:])
    server.stop(10)


def check_files(tmp, prof):
    """The Perfetto export of the trace, and two files of one rank."""
    # The Perfetto export: the trace's own names, categories and numbers.
    out = os.path.join(tmp, "export.json")
    subprocess.run([SERVER, "--dir", prof, "--db", os.path.join(tmp, "names.db"),
                    "--quiet", "--output-format", "perfetto", "--output-file",
                    out], stderr=subprocess.DEVNULL)
    text = open(out).read()
    ev = json.loads(text)["traceEvents"]
    meta = sorted((e["name"], e["pid"], e["tid"], list(e["args"].values())[0])
                  for e in ev if e["ph"] == "M" and e["pid"] == 0)
    check(meta == [("process_labels", 0, 7, "GPU 0"),
                   ("process_name", 0, 7, "python3"),
                   ("process_sort_index", 0, 7, 1),
                   ("thread_name", 0, 7, "stream 7 ")],
          "export: process and thread names, labels, sort indexes as M events",
          meta)
    step = [e for e in ev if e.get("name") == "step"]
    check(len(step) == 1 and step[0]["cat"] == "user_annotation" and
          "cat" not in step[0]["args"] and
          '"args":{"x": 189.62962, "big": 12345678901234567890, "e": 1.50e3'
          in text, "export: the event's own category, args as the trace "
          "wrote them", step)
    check(sorted({(e["pid"], e["tid"]) for e in ev if e["ph"] == "X"},
                 key=str) == sorted([(0, 7), (100, 100), (100, 101), (5, 9),
                                     ("Spans", "PyTorch Profiler")], key=str),
          "export: the trace's own pids and tids (text ones as text)")

    # Two files claiming one rank: two groups and one Warning.
    ranks = os.path.join(tmp, "ranks")
    for sub in ("a", "b"):
        os.makedirs(os.path.join(ranks, sub))
        shutil.copy(os.path.join(CHROME, "object.json"), os.path.join(ranks, sub))
    store = os.path.join(tmp, "ranks.db")
    subprocess.run([SERVER, "--dir", ranks, "--db", store, "--ingest-only",
                    "--quiet"], stderr=subprocess.DEVNULL)
    db = sqlite3.connect(store)
    got = [r[0] for r in db.execute(
        "SELECT DISTINCT instance_id FROM track ORDER BY 1")]
    check(got == ["rank 5", "rank 5 (2)"], "two files of rank 5 are two groups",
          got)
    got = db.execute("SELECT file, message FROM Warning WHERE message LIKE "
                     "'%also claimed%'").fetchall()
    check(got == [("b/object.json", "rank 5 is also claimed by a/object.json: "
                   "read as a group of its own, 'rank 5 (2)'")],
          "one Warning names both files", got)
    db.close()


if __name__ == "__main__":
    sys.exit(main("nex-names-", run))
