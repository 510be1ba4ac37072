#!/usr/bin/env python3
"""annot_test.py -- annotations over real HTTP (prints TAP): the file beside
the store, created on the first write; flags, notes on events and named
areas answered exactly; the limits and bad bodies refused with clear
errors; cross-site and non-JSON writes refused (403, 415) and nothing
written; PATCH and DELETE; and a re-ingest that renumbers the tracks (a
process folder removed under a running server) keeping every annotation,
the note's event key resolved to the same event in the new store.
Needs NEX_BUILDDIR and NEX_SRCDIR (set by make check).
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import traceback

from nextest import SYNTH, Client, Server, check, main

WS_CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "ws_client.py")
API = "/api/v1/annotations"


def send(c, method, path, body, headers=None):
    """method path with a JSON body (same-origin headers unless given):
    (status, parsed answer)."""
    h = {"Content-Type": "application/json", "Origin": "http://localhost:%d" %
         c.port, "Sec-Fetch-Site": "same-origin"}
    if headers is not None:
        h = headers
    data = body if isinstance(body, (bytes, str)) or body is None \
        else json.dumps(body)
    st, _, out = c.req(method, path, body=data, headers=h)
    return st, json.loads(out)


def event_of(db, where):
    """(key, track, ts, end, name) of the first event (by track, lane, ts)
    on a track matching `where`, lane > 0 preferred."""
    r = db.execute(
        "SELECT s.track, s.lane, s.ts, s.dur, n.s FROM slice s JOIN track t "
        "ON t.id = s.track JOIN str n ON n.id = s.name WHERE " + where +
        " ORDER BY s.lane > 0 DESC, s.track, s.lane, s.ts LIMIT 1").fetchone()
    return ("%d:%d:%d" % (r[0], r[1], r[2]), r[0], r[2], r[2] + r[3], r[4])


def track_path(db, track):
    return db.execute(
        "SELECT kind||'/'||domain||'/'||source||'/'||instance_id||'/'||"
        "ifnull(pid,'')||'/'||ifnull(tid,'')||'/'||ifnull(nc_idx,'')||'/'||"
        "ifnull(pcore_idx,'')||'/'||ifnull(worker_gid,'')||'/'||"
        "ifnull(stream_id,'')||'/'||ifnull(device_idx,'')||'/'||"
        "ifnull(hbm_idx,'')||'/'||ifnull(cpu_id,'')||'/'||"
        "ifnull(device_profile_id,'')||'/'||ifnull(label,'') FROM track "
        "WHERE id = ?", (track,)).fetchone()[0]


def run(tmp):
    prof = os.path.join(tmp, "profile")
    r = subprocess.run([SYNTH, "--out", prof, "--seed", "3", "--instances", "1",
                        "--processes", "2", "--cores", "1", "--steps", "3"],
                       capture_output=True)
    if not check(r.returncode == 0, "generator writes a profile", r.stderr):
        return None
    store = os.path.join(tmp, "store.db")
    notes = store + ".notes.sqlite"
    server = Server(tmp, prof, store)
    if not check(server.wait_ready() == "ready", "the server becomes ready"):
        return server
    try:
        exercise(server, prof, notes, store)
    except Exception:  # an unexpected answer: a failed check, not a hang
        check(False, "the checks ran to the end", traceback.format_exc())
    return server


def exercise(server, prof, notes, store):
    """Everything against the running server."""
    c = Client(server.port)
    c.port = server.port
    db = sqlite3.connect("file:%s?mode=ro" % store, uri=True)

    check(c.json(API) == {"file": notes, "annotations": []},
          "no annotations at first, the file named")
    check(not os.path.exists(notes), "reading creates no file")

    # The process whose tracks come first is removed later: pick the event
    # on a track of the other one, so that its track id changes.
    first_pid = db.execute("SELECT pid FROM track WHERE pid IS NOT NULL "
                           "ORDER BY id LIMIT 1").fetchone()[0]
    key, track, ts, end, name = event_of(
        db, "t.source = 'neuron_rt' AND t.pid != %d" % first_pid)
    path = track_path(db, track)

    st, flag = send(c, "POST", API, {"kind": "flag", "ts": "1000",
                                     "text": "start", "color": "#ff0000"})
    check(st == 201 and flag == {
        "id": "1", "kind": "flag", "ts": "1000", "end": "1000", "track": None,
        "track_path": None, "event": None, "event_name": None, "text": "start",
        "color": "#ff0000"}, "POST a flag: 201 and the flag", (st, flag))
    check(os.path.exists(notes), "the first write creates the file")
    st, note = send(c, "POST", API, {"kind": "note", "event": key,
                                     "text": "why so slow?"})
    want_note = {"id": "2", "kind": "note", "ts": str(ts), "end": str(end),
                 "track": str(track), "track_path": path, "event": key,
                 "event_name": name, "text": "why so slow?", "color": None}
    check(st == 201 and note == want_note,
          "POST a note on an event: its times, track and name from the store",
          (st, note, want_note))
    st, area = send(c, "POST", API, {"kind": "area", "ts": ts, "end": end + 5,
                                     "track": str(track), "text": "step 1"})
    want_area = {"id": "3", "kind": "area", "ts": str(ts), "end": str(end + 5),
                 "track": str(track), "track_path": path, "event": None,
                 "event_name": None, "text": "step 1", "color": None}
    check(st == 201 and area == want_area, "POST a named area", (st, area))

    bad = [
        ({"kind": "flag", "ts": 1, "text": "x" * 4097}, 400,
         "'text' is longer than 4096 bytes"),
        ({"kind": "pin", "ts": 1}, 400, "'kind' must be flag, note or area"),
        ({"kind": "area", "ts": 10, "end": 10}, 400,
         "an area needs 'end' after 'ts'"),
        ({"kind": "flag"}, 400, "field 'ts' (or 'event') is required"),
        ({"ts": 5}, 400, "field 'kind' is required: flag, note or area"),
        ({"kind": "flag", "ts": "12x"}, 400,
         "field 'ts' must be an integer or a string of digits"),
        ({"kind": "flag", "ts": 1, "when": 2}, 400,
         "unknown field 'when': kind, ts, end, event, track, text and color "
         "are"),
        ({"kind": "note", "event": "%d:0:1" % track}, 400,
         "field 'event': no event with key %d:0:1" % track),
        ({"kind": "note", "event": "nope"}, 400,
         "field 'event' must be an event key \"<track>:<lane>:<ts>\" or null"),
        ({"kind": "area", "ts": 1, "end": 2, "track": "999999"}, 400,
         "field 'track': no track with id 999999"),
        ("[1]", 400, "the body must be a JSON object"),
        ("{", 400, None),
    ]
    for body, status, detail in bad:
        st, out = send(c, "POST", API, body)
        check(st == status and out.get("error") in ("bad_parameter",
                                                    "bad_request") and
              (detail is None or out.get("detail") == detail),
              "refused: %s" % (detail or "a body that is not JSON"), (st, out))
    own = "http://localhost:%d" % server.port
    refused = [
        ({"Content-Type": "application/json", "Origin": "http://evil.com"},
         403, "cross_site"),
        ({"Content-Type": "application/json", "Origin": own,
          "Sec-Fetch-Site": "cross-site"}, 403, "cross_site"),
        ({"Content-Type": "text/plain", "Origin": own}, 415,
         "unsupported_media_type"),
        ({"Origin": own}, 415, "unsupported_media_type"),
    ]
    for h, status, code in refused:
        for method, url in (("POST", API), ("PATCH", API + "/1"),
                            ("DELETE", API + "/1")):
            st, out = send(c, method, url, {"kind": "flag", "ts": 7}, h)
            check(st == status and out["error"] == code,
                  "%s %s refused with %d" % (method, h, status), (st, out))
    st, out = send(c, "PUT", API + "/1", {"text": "x"})
    check(st == 405 and out["error"] == "method_not_allowed",
          "PUT is not allowed", (st, out))
    got = c.json(API)["annotations"]
    check([a["id"] for a in got] == ["1", "2", "3"],
          "nothing refused was written; listed by ts", got)

    st, out = send(c, "PATCH", API + "/3", {"text": "warm-up",
                                            "color": "#00ff00"})
    want_area.update(text="warm-up", color="#00ff00")
    check(st == 200 and out == want_area, "PATCH renames an area", (st, out))
    st, out = send(c, "DELETE", API + "/1", None)
    check(st == 200 and out == {"deleted": "1"}, "DELETE a flag", (st, out))
    st, out = send(c, "DELETE", API + "/1", None)
    check(st == 404 and out["detail"] == "no annotation with id 1",
          "DELETE it again: 404", (st, out))
    st, out = send(c, "PATCH", API + "/x", {"text": "x"})
    check(st == 404, "PATCH of a bad id: 404", (st, out))

    # Re-ingest: remove the process folder whose tracks come first.
    gone = [d for d in os.listdir(prof) if d.endswith("_pid_%d" % first_pid)]
    ws = subprocess.Popen([sys.executable, WS_CLIENT, str(server.port),
                           "--timeout", "90", "--messages", "10000", "--until",
                           "ready"], stdout=subprocess.PIPE, text=True)
    hello = [ws.stdout.readline(), ws.stdout.readline()]
    check(hello[0].strip() == "status 101" and '"hello"' in hello[1],
          "a WebSocket watches the re-ingest", hello)
    check(len(gone) == 1, "the first process has a folder", gone)
    shutil.rmtree(os.path.join(prof, gone[0]))
    types = [json.loads(l)["type"] for l in ws.communicate(timeout=120)[0]
             .splitlines()]
    check(types[:1] == ["new-data"] and types[-1:] == ["ready"],
          "the removal re-ingests", types)
    db.close()
    db = sqlite3.connect("file:%s?mode=ro" % store, uri=True)
    new_track = [t for (t,) in db.execute("SELECT id FROM track").fetchall()
                 if track_path(db, t) == path]
    got = c.json(API)["annotations"]
    check(len(new_track) == 1 and new_track[0] != track,
          "the re-ingest renumbered the note's track", (track, new_track))
    nt = new_track[0] if new_track else -1
    new_key = "%d:%s" % (nt, key.split(":", 1)[1])
    want_note.update(track=str(nt), event=new_key)
    want_area.update(track=str(nt))
    check(got == [want_note, want_area],
          "the annotations survive the re-ingest, their track and event "
          "keys resolved in the new store", (got, [want_note, want_area]))
    ev = c.json("/api/v1/events/" + new_key)
    check(ev.get("name") == name and ev.get("start_ts") == str(ts),
          "the note's new key opens the same event", ev)
    db.close()
    rc = server.stop(10)
    check(rc == 0, "SIGTERM stops the server cleanly",
          (rc, open(server.err_path).read()[-2000:]))


if __name__ == "__main__":
    sys.exit(main("nex-annot-test.", run))
