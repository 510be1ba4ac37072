#!/usr/bin/env python3
"""search_args_test.py -- attribute terms of /search (`key:value`) over a
store where some slices' args are not JSON (prints TAP).

A Chrome trace's args always reach the store as JSON (the decoder re-writes
them), but a capture file's attribute flagged as a number keeps its text
when strtod takes it whole, and "nan", "0x10" or "+1" are no JSON: such a
slice's args read `{"k":nan}`.  The store here is made by the server from a
Chrome trace, then two slices' args are changed by hand to texts that are
no JSON (the values of their argument set) and the server reopens the same
store (same profile, so it is not rebuilt).
Attribute terms skip the slices whose args are not JSON; every other term
still finds them; before, any attribute term answered 500 "malformed JSON".
Needs NEX_BUILDDIR and NEX_SRCDIR (set by make check).
"""
import json
import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nextest import Client, Server, check, main  # noqa: E402
import nexdb  # noqa: F401,E402 (reads slice)

US = 1000
# event index -> the text its args' "k" value is given by hand: the args of
# event 3 read {"k": "v1", "x", "n": 3}, those of event 4 {"k": "v1\", "n":
# 4}, neither JSON (event 4's args said "v0")
BAD = {3: b'v1", "x', 4: b'v1\\'}


def write_trace(prof):
    ev = [{"ph": "X", "name": "work", "pid": 1, "tid": 1, "ts": i * 10,
           "dur": 5, "args": {"k": "v%d" % (i % 2), "n": i}}
          for i in range(6)]
    ev.append({"ph": "X", "name": "odd", "pid": 1, "tid": 1, "ts": 100,
               "dur": 5, "args": [1, "two"]})
    with open(os.path.join(prof, "trace.json"), "w") as f:
        json.dump({"traceEvents": ev}, f)


def keys(c, q, **extra):
    """The keys /search answers for q (in order), its total and answer."""
    params = "&".join("%s=%s" % kv for kv in [("q", q)] + list(extra.items()))
    st, _, data = c.get("/api/v1/search?" + params.replace(" ", "+"))
    if not check(st == 200, "%s answers 200" % q, data[:200]):
        return None, None, {}
    r = json.loads(data)
    return [x["key"] for x in r["items"]], r["total"], r


def varint(b, i):
    """The zigzag varint at b[i]: (value, index after it)."""
    z = shift = 0
    while True:
        c = b[i]
        i += 1
        z |= (c & 0x7f) << shift
        shift += 7
        if c < 0x80:
            return (z >> 1) ^ -(z & 1), i


def rewrite_texts(db, new):
    """Gives the texts of the slice blocks' args new values by hand
    (doc/storage.md: a flags byte, then the args part as it is or, flag 2,
    its length and one zstd frame, read with the zstd tool; the part: the
    integers' length, the integers, then each text's length and bytes in
    row order).  new maps a text's index in its block to its bytes; the
    block is written back uncompressed.  Returns the blocks changed."""
    changed = 0
    rows = db.execute("SELECT block, args FROM slice_args")
    for block, blob in rows.fetchall():
        part = bytes(blob[1:])
        if blob[0] == 2:
            _, i = varint(blob, 1)
            part = subprocess.run(["zstd", "-d", "-c"], input=bytes(blob[i:]),
                                  stdout=subprocess.PIPE, check=True).stdout
        n, i = varint(part, 0)
        out = bytearray(part[:i + n])
        i += n
        k = 0
        while i < len(part):
            length, j = varint(part, i)
            text = new.get(k, part[j:j + length])
            out += bytes([2 * len(text)]) + text  # zigzag, under 64 bytes
            i = j + length
            k += 1
        if out == part:
            continue
        db.execute("UPDATE slice_args SET args = ? WHERE block = ?",
                   (b"\0" + bytes(out), block))
        changed += 1
    return changed


def serve(tmp, prof, store):
    s = Server(tmp, prof, store, args=["--no-watch"])
    check(s.wait_ready() == "ready", "the server becomes ready")
    return s


def run(tmp):
    prof = os.path.join(tmp, "profile")
    os.mkdir(prof)
    write_trace(prof)
    store = os.path.join(tmp, "store.db")
    s = serve(tmp, prof, store)
    c = Client(s.port)
    got, total, _ = keys(c, "k:v1")
    check(got == ["1:0:%d" % (i * 10 * US) for i in (1, 3, 5)] and total == 3,
          "k:v1 finds the three events whose args say so", got)
    rc = s.stop(20)
    check(rc == 0, "the server stops",
          "status %s; stderr: %s" % (rc, open(s.err_path).read()[-2000:]))

    db = sqlite3.connect(store)
    bad = db.execute("SELECT count(*) FROM slice WHERE NOT json_valid(args)")
    check(bad.fetchone()[0] == 0,
          "a Chrome trace's args reach the store as JSON (args [1,\"two\"] "
          "too)")
    check(rewrite_texts(db, BAD) == 1,
          "the block of the events is rewritten (one block, one text each)")
    db.commit()
    n = db.execute("SELECT count(*) FROM slice WHERE NOT json_valid(args)")
    check(n.fetchone()[0] == 2, "two slices' args are not JSON now")
    db.close()

    s = serve(tmp, prof, store)
    with open(s.err_path) as f:
        check("reopened" in f.read(), "the server reopens the changed store")
    c = Client(s.port)
    got, total, _ = keys(c, "k:v1")
    check(got == ["1:0:%d" % (i * 10 * US) for i in (1, 5)] and total == 2,
          "k:v1: 200, the event whose args are not JSON skipped", got)
    got, total, _ = keys(c, "work k:v0 n:2")
    check(got == ["1:0:%d" % (20 * US)] and total == 1,
          "name and two attribute terms combined", got)
    got, total, _ = keys(c, "work")
    check(total == 6, "a name term still finds all six, args or not", total)
    got, total, _ = keys(c, "work dur>=5us")
    check(total == 6, "a duration term too", total)
    got, total, r = keys(c, "k:v1", start="0", end=str(60 * US), buckets="3")
    check(total == 2 and r.get("tracks") == [
        {"track": "1", "count": 2, "buckets": [1, 0, 1]}],
        "the per-track histogram of k:v1 (buckets=3)", r.get("tracks"))
    got, total, _ = keys(c, "args:1")
    check(total == 0, "a key that no slice has finds nothing", total)
    st, _, body = c.get("/api/v1/search?q=k:v1+dur%3Exx")
    check(st == 400 and b"dur>xx" in body,
          "a malformed term of the query is a 400 naming it", body[:200])
    return s


if __name__ == "__main__":
    sys.exit(main("nex-search-args-", run))
