#!/usr/bin/env python3
"""hostile_test.py -- hostile requests against a running server (prints TAP).

Every parameter of doc/api.md fed garbage, huge, negative, overflowing,
empty, NaN, unicode and repeated values must get a 4xx with a JSON
{"error", "detail"} body (or a normal answer where the value is in fact
valid), never a 5xx, never a dropped connection; after each batch the
server must still answer /health.  Then path traversal (raw sockets: no
client normalises the path), the SQL endpoint's guards, Host and Origin
checks, oversized headers and bodies, protocol junk, and floods of
connections past the connection budget.  At the end the
store is unchanged, SIGTERM stops the server cleanly and its stderr holds
no sanitizer report.  Needs NEX_BUILDDIR and NEX_SRCDIR (set by make check).
"""
import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse

import nextest
from nextest import SRC, SYNTH, check, main

SECRETS = (b"root:x:0", b"TOPSECRET")


# ------------------------------------------------------------------ HTTP

class Answer:
    def __init__(self, status, headers, body, error=None):
        self.status, self.headers, self.body, self.error = (status, headers,
                                                            body, error)

    def __repr__(self):
        if self.error:
            return "<%s>" % self.error
        return "%s %r" % (self.status, self.body[:160])


def parse_answer(data):
    """Status, headers and body of the first HTTP answer in data."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        return Answer(None, {}, data, "no HTTP answer: %r" % data[:60])
    headers = {}
    for l in lines[1:]:
        k, _, v = l.partition(b":")
        headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        out, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            try:
                n = int(size.split(b";")[0], 16)
            except ValueError:
                break
            if n == 0:
                break
            out += rest[:n]
            rest = rest[n + 2:]
        body = out
    elif "content-length" in headers:
        body = body[:int(headers["content-length"])]
    return Answer(int(parts[1]), headers, body)


def raw(port, data, timeout=10, shut=False):
    """Sends raw bytes on a new connection (the request should say
    Connection: close), returns the parsed answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        if not out:
            return Answer(None, {}, b"", "timeout")
    except OSError as e:
        if not out:
            return Answer(None, {}, b"", "socket error: %s" % e)
    finally:
        s.close()
    if not out:
        return Answer(None, {}, b"", "closed without an answer")
    return parse_answer(out)


def get(port, target, headers=None, method="GET", body=None, timeout=30):
    """One request on a fresh http.client connection (target already
    percent-encoded)."""
    h = {"Host": "localhost:%d" % port}
    h.update(headers or {})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, target, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        return Answer(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    except (OSError, http.client.HTTPException) as e:
        return Answer(None, {}, b"", "%s: %s" % (type(e).__name__, e))
    finally:
        c.close()


def json_error(a):
    """Whether a is a 4xx with a JSON {"error": str, "detail": str} body."""
    if a.status is None or not 400 <= a.status < 500:
        return False
    try:
        d = json.loads(a.body)
    except ValueError:
        return False
    return (isinstance(d, dict) and isinstance(d.get("error"), str) and
            isinstance(d.get("detail"), str) and d["error"] and d["detail"])


def json_ok(a):
    if a.status != 200:
        return False
    try:
        json.loads(a.body)
        return True
    except ValueError:
        return False


# ------------------------------------------------------------------ server

class Server(nextest.Server):
    def alive(self, what):
        t0 = time.time()
        state = self.health()
        return check(self.proc.poll() is None and state == "ready" and
                     time.time() - t0 < 5,
                     "after %s the server is alive and answers /health" % what,
                     "exit status %s, state %s" % (self.proc.poll(), state))


# ------------------------------------------------------------------ values

INT_BAD = ["", "abc", "1.5", "NaN", "nan", "inf", "-inf", "Infinity", "1e3",
           "0x10", "99999999999999999999", "-99999999999999999999",
           "9223372036854775808", "-9223372036854775809", "9" * 5000,
           "\u00e9", "\uff11", "1,2", "--1", "1 2", "1-", "\U0001f600",
           "\x01", "'; DROP TABLE slice; --"]
ENUM_BAD = ["x", "\u00e9", "default;drop", "A" * 5000, "\xff", "null",
            "\x01", "../../etc/passwd"]
TEXT_ODD = ["%", "_", "'", "\"", "\\", "%_%", "\u00e9", "\u202e", "\U0001f600",
            "NULL", "*", "[a-", "'; DROP TABLE slice; --", "\x01", " "]


def q(params):
    """A query string from [(key, value), ...], every byte percent-encoded
    as a browser would (values may hold any unicode)."""
    return "&".join("%s=%s" % (k, urllib.parse.quote(v, safe=""))
                    for k, v in params)


# Request lines and headers over MHD's per-connection memory (48 KiB) are
# refused by libmicrohttpd itself, with its own HTML body.
MHD_LIMIT = 32 * 1024


def batch(srv, what, cases):
    """cases: [(target, expect)], expect 'err' (4xx JSON) or 'any' (4xx JSON
    or 200 JSON); targets over MHD_LIMIT may also get a bare 414.  One TAP
    line for the batch."""
    bad = []
    for target, expect in cases:
        a = get(srv.port, target)
        good = json_error(a) if expect == "err" else (json_error(a) or
                                                       json_ok(a))
        good = good or len(target) > MHD_LIMIT and a.status == 414
        if not good:
            bad.append("%s -> %r" % (target[:100], a))
    check(not bad, "%s: %d requests, each a 4xx with a JSON error%s" %
          (what, len(cases), "" if all(e == "err" for _, e in cases)
           else " or a JSON answer"), "\n".join(bad))


def param_cases(path, base, key, bad, any_values=()):
    """Cases replacing (or adding) parameter key in the base parameters."""
    out = []
    for v in bad:
        out.append((path + "?" + q([(k, x) for k, x in base if k != key] +
                                   [(key, v)]), "err"))
    for v in any_values:
        out.append((path + "?" + q([(k, x) for k, x in base if k != key] +
                                   [(key, v)]), "any"))
    return out


def check_parameters(srv, ids):
    track, start, end = ids["track"], ids["start"], ids["end"]
    win = [("tracks", track), ("start", start), ("end", end), ("px", "100")]
    edge_windows = [("-9223372036854775808", "9223372036854775807"),
                    ("9223372036854775806", "9223372036854775807"),
                    ("-9223372036854775808", "-9223372036854775807"),
                    ("-1", "0"), ("0", "1"), (start, str(int(start) + 1))]
    for path in ("/api/v1/slices", "/api/v1/counters"):
        t = ids["counter"] if path.endswith("counters") else track
        base = [("tracks", t), ("start", start), ("end", end), ("px", "100")]
        for key in ("start", "end", "px"):
            batch(srv, "%s '%s'" % (path, key),
                  param_cases(path, base, key, INT_BAD))
        batch(srv, "%s 'px' out of range" % path,
              param_cases(path, base, "px", ["0", "-1", "10001",
                                             "2147483648", "-2147483649"]))
        batch(srv, "%s 'tracks'" % path, param_cases(
            path, base, "tracks",
            [v for v in INT_BAD[1:] if v != "1,2"] +
            [",", "1,", ",1", "1,,2", "1;2", "-", ",".join(
                ["1"] * 201), ",".join([t] * 5000)],
            ["-1", "0", "987654321", "%s,%s" % (t, t), " " + t]))
        batch(srv, "%s extreme windows at 1 and 10000 px" % path,
              [(path + "?" + q([("tracks", t), ("start", s), ("end", e),
                                ("px", px)]), "any")
               for s, e in edge_windows for px in ("1", "10000")] +
              [(path + "?" + q([("tracks", t), ("start", e), ("end", s),
                                ("px", "10")]), "err")
               for s, e in edge_windows])
        batch(srv, "%s missing parameters" % path,
              [(path + "?" + q([p for p in base if p[0] != k]), "err")
               for k in ("tracks", "start", "end", "px")] +
              [(path, "err"), (path + "?", "err"), (path + "?&&&=&=x", "err")])
        batch(srv, "%s repeated parameters" % path,
              [(path + "?" + q(base + [("px", "abc")]), "any"),
               (path + "?" + q([("px", "abc")] + base), "err"),
               (path + "?" + q(base + [("start", "x"), ("start", "y")]), "any"),
               (path + "?" + q([(k, "zz") for k, _ in base] * 2), "err"),
               (path + "?" + q(base * 50), "any")])

    batch(srv, "/api/v1/tracks 'grouping'",
          param_cases("/api/v1/tracks", [], "grouping", ENUM_BAD,
                      ["", "default", "instance"]))
    base = [("q", "nrt"), ("page", "1"), ("per_page", "5")]
    for key in ("start", "end", "page", "per_page", "profile"):
        batch(srv, "/api/v1/search '%s'" % key,
              param_cases("/api/v1/search", base, key, INT_BAD))
    batch(srv, "/api/v1/search ranges",
          param_cases("/api/v1/search", base, "page",
                      ["0", "-1", "1000001"]) +
          param_cases("/api/v1/search", base, "per_page",
                      ["0", "-1", "501"]) +
          param_cases("/api/v1/search", base, "profile", ["-1"]) +
          [("/api/v1/search?" + q(base + [("start", "10"), ("end", "5")]),
            "err"),
           ("/api/v1/search?" + q(base + [("profile", "1")]), "err"),
           ("/api/v1/search?" + q(base + [("domain", "device"),
                                          ("profile", "987654321")]), "any"),
           ("/api/v1/search?" + q(base + [("page", "1000000")]), "any")])
    batch(srv, "/api/v1/search 'q'",
          param_cases("/api/v1/search", base, "q",
                      ["", "a" * 257, "\u00e9" * 129, "x" * 100000],
                      TEXT_ODD + ["a" * 256, "\u00e9" * 128]))
    batch(srv, "/api/v1/search 'domain'",
          param_cases("/api/v1/search", base, "domain", ENUM_BAD + [""],
                      ["system", "device"]))
    batch(srv, "/api/v1/search without 'q'",
          [("/api/v1/search", "err"), ("/api/v1/search?page=1", "err")])

    base = [("page", "1"), ("per_page", "2")]
    for key in ("page", "per_page"):
        batch(srv, "/api/v1/device-profiles '%s'" % key,
              param_cases("/api/v1/device-profiles", base, key,
                          INT_BAD + ["0", "-1"] +
                          (["501"] if key == "per_page" else ["1000001"])))
    batch(srv, "/api/v1/device-profiles 'filter'",
          param_cases("/api/v1/device-profiles", base, "filter",
                      ["x" * 257, "\u00e9" * 200], TEXT_ODD + ["x" * 256]))

    base = [("tracks", track), ("start", start), ("end", end)]
    for key in ("start", "end"):
        batch(srv, "/api/v1/range-summary '%s'" % key,
              param_cases("/api/v1/range-summary", base, key, INT_BAD))
    batch(srv, "/api/v1/range-summary 'tracks'",
          param_cases("/api/v1/range-summary", base, "tracks",
                      [v for v in INT_BAD[1:] if v != "1,2"] +
                      [",", "1,,2", ",".join(["1"] * 201)],
                      ["-1", "987654321", "%s,%s" % (track, track)]) +
          [("/api/v1/range-summary?" + q([("tracks", track),
                                           ("start", s), ("end", e)]), "any")
           for s, e in edge_windows])

    base = [("format", "csv"), ("start", start), ("end", str(int(start) + 1))]
    batch(srv, "/api/v1/export 'format'",
          param_cases("/api/v1/export", base, "format", ENUM_BAD + [""]))
    for key in ("start", "end"):
        batch(srv, "/api/v1/export '%s'" % key,
              param_cases("/api/v1/export", base, key, INT_BAD))
    bad = []
    for fmt in ("csv", "perfetto", "summary-json", "summary-text"):
        for s, e in edge_windows:
            a = get(srv.port, "/api/v1/export?" + q(
                [("format", fmt), ("start", s), ("end", e)]))
            if a.status != 200 and not json_error(a):
                bad.append("%s %s..%s -> %r" % (fmt, s, e, a))
    check(not bad, "/api/v1/export: every format over %d extreme windows "
          "answers 200 or a JSON 4xx" % len(edge_windows), "\n".join(bad))

    keys = ["", "1", "1:2", "1:2:3:4", "a:b:c", "-1:-1:-1", ":::",
            "99999999999999999999:0:0", "1:0:99999999999999999999",
            "1:99999999999999999999:0", "%s:0:0" % track, "1:0:NaN",
            "\u00e9:\u00e9:\u00e9", "1:2:3" + "9" * 300, "x" * 1000,
            "%s:0:%s" % (track, "1e3"), "..", "%2e%2e", "0:0:0"]
    cases = []
    for k in keys:
        enc = urllib.parse.quote(k, safe=":")
        cases.append(("/api/v1/events/" + enc, "err"))
        cases.append(("/api/v1/events/%s/device-profile" % enc, "err"))
    cases.append(("/api/v1/events/" + ids["key"], "any"))
    cases.append(("/api/v1/events/%s/device-profile" % ids["key"], "any"))
    cases.append(("/api/v1/events/%s/x" % ids["key"], "err"))
    batch(srv, "/api/v1/events/{key}", cases)
    cases = []
    for d in ["x", "-1", "0", "1.5", "99999999999999999999", "987654321",
              "\u00e9", "1e3", "0x1", "9" * 400, "%01", ""]:
        enc = urllib.parse.quote(d, safe="%")
        cases.append(("/api/v1/device-profiles/%s/tracks" % enc, "err"))
        if d:
            cases.append(("/api/v1/device-profiles/" + enc, "err"))
    cases.append(("/api/v1/device-profiles/%s" % ids["profile"], "any"))
    batch(srv, "/api/v1/device-profiles/{id}", cases)
    batch(srv, "unknown API paths", [(p, "err") for p in (
        "/api/v1/", "/api/v1", "/api/", "/api/v2/health", "/api/v1/health/x",
        "/api/v1/slices/1", "/api/v1/" + "a/" * 100, "/api/v1/%00",
        "/api/v1/" + "x" * 5000, "/api/v1/events", "/api/v1/db/system",
        "/api/v1/db//_search", "/api/v1/HEALTH")])


# ------------------------------------------------------------------ methods

def check_methods(srv):
    bad = []
    for method in ("PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "FOO",
                   "POST"):
        for path in ("/api/v1/health", "/api/v1/slices", "/"):
            a = get(srv.port, path, method=method, body=b"x")
            want = 405 if path.startswith("/api") else (405, 404, 501)
            if (a.status is None or a.status >= 500 and a.status != 501 or
                    path.startswith("/api") and not json_error(a)):
                bad.append("%s %s -> %r" % (method, path, a))
    for method in ("GET", "PUT", "DELETE"):
        a = get(srv.port, "/api/v1/db/system/_search", method=method)
        if a.status != 405 or not json_error(a):
            bad.append("%s _search -> %r" % (method, a))
    check(not bad, "wrong methods get 405 (API: with a JSON error), never a "
          "5xx", "\n".join(bad))


# ------------------------------------------------------------------ paths

def check_paths(srv):
    p = srv.port
    targets = [
        "/../../../../etc/passwd", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/..%2f..%2f..%2fetc%2fpasswd",
        "/js/../../../../etc/passwd", "/js/..%2f..%2f..%2f..%2fetc%2fpasswd",
        "//etc/passwd", "/etc/passwd", "/%2fetc%2fpasswd", "///etc/passwd",
        "/.%2e/.%2e/.%2e/etc/passwd", "/%2E%2E/%2E%2E/etc/passwd",
        "/..;/..;/etc/passwd", "/%252e%252e/%252e%252e/etc/passwd",
        "/..\\..\\..\\etc\\passwd", "/%5c..%5c..%5cetc%5cpasswd",
        "/..%5c..%5c..%5cetc%5cpasswd", "/index.html%00.js", "/%00",
        "/..%00/..%00/etc/passwd", "/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd",
        "/%e0%80%ae%e0%80%ae/etc/passwd", "/../secret.txt",
        "/%2e%2e/secret.txt", "/..%2fsecret.txt", "/../web2/secret.txt",
        "/%2e%2e/web2/secret.txt", "/leak/passwd", "/passwd.txt",
        "/outside.txt", "/leak/", "/proc/self/environ",
        "/../../../../proc/self/environ", "/" + "../" * 200 + "etc/passwd",
        "/" + "a/" * 3000 + "x", "/js/" + "%2e%2e%2f" * 50 + "etc/passwd",
        "/.", "/./index.html/..", "/index.html/.", "/js/.."]
    bad, served = [], []
    for t in targets:
        for form in ("GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: "
                     "close\r\n\r\n", "GET %s HTTP/1.0\r\nHost: localhost\r\n"
                     "\r\n"):
            a = raw(p, (form % t).encode("latin-1"))
            if any(s in a.body for s in SECRETS):
                bad.append("%s -> a file outside the web root: %r" % (t[:80], a))
            elif a.status is None or a.status >= 500:
                bad.append("%s -> %r" % (t[:80], a))
            elif a.status == 200:
                served.append(t)
    for t in ("http://localhost/../../etc/passwd",
              "http://localhost/%2e%2e/%2e%2e/etc/passwd", "*", "etc/passwd",
              "../etc/passwd", "file:///etc/passwd"):
        a = raw(p, ("GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: "
                    "close\r\n\r\n" % t).encode())
        if any(s in a.body for s in SECRETS) or a.status is None or \
                a.status >= 500:
            bad.append("%s -> %r" % (t, a))
    # a NUL byte inside the request line
    a = raw(p, b"GET /index.html\x00/../../etc/passwd HTTP/1.1\r\nHost: "
            b"localhost\r\nConnection: close\r\n\r\n")
    if any(s in a.body for s in SECRETS) or (a.status or 500) >= 500:
        bad.append("NUL in the request line -> %r" % a)
    check(not bad, "%d traversal paths (absolute, encoded, double-encoded, "
          "overlong UTF-8, backslash, NUL, symlinks out of the web root) "
          "never serve a file outside web/ nor a 5xx" % (len(targets) + 7),
          "\n".join(bad))
    # Only real files inside the web root may be answered with 200: its
    # index through dot segments that stay in it, and through a %00 that
    # ends the decoded path (MHD hands over a C string) -- harmless, for the
    # content type comes from the real file's name.
    odd = [t for t in served if t not in (
        "/.", "/./index.html/..", "/js/..", "/index.html/.",
        "/index.html%00.js", "/%00")]
    check(not odd, "no traversal path is answered 200", "\n".join(odd))
    a = get(p, "/index.html")
    check(a.status == 200 and b"<html" in a.body.lower(),
          "the web root's own files are still served", a)
    srv.alive("the traversal attempts")


def check_redirect_fifo_framing(srv):
    """Faults of issue #16: a protocol-relative redirect, a FIFO in the web
    root, and request framing (Host, Content-Length, Transfer-Encoding)."""
    p = srv.port
    for t in ("//js", "///js"):
        a = raw(p, b"GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: "
                b"close\r\n\r\n" % t.encode())
        loc = a.headers.get("location", "")
        check(a.status == 301 and loc.startswith("/") and
              not loc.startswith("//"), "GET %s redirects to a path on this "
              "host, never to a Location starting with //" % t, (a, loc))
    a = raw(p, b"GET /fifo.js HTTP/1.1\r\nHost: localhost\r\nConnection: "
            b"close\r\n\r\n", timeout=10)
    check(a.status == 404, "a FIFO in the web root is refused at once (404)",
          a)
    cases = [
        (b"GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nHost: evil.com"
         b"\r\nConnection: close\r\n\r\n", 400, "two Host headers"),
        (b"POST /api/v1/sql HTTP/1.1\r\nHost: localhost\r\nContent-Length: "
         b"5\r\nContent-Length: 7\r\nConnection: close\r\n\r\n12345", 400,
         "two different Content-Length headers"),
        (b"POST /api/v1/sql HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding"
         b": gzip\r\nConnection: close\r\n\r\nxxxx", 501,
         "Transfer-Encoding: gzip")]
    for req, status, what in cases:
        a = raw(p, req, timeout=20)
        try:
            err = json.loads(a.body).get("error")
        except ValueError:
            err = None
        check(a.status == status and err, "%s: %d with a JSON error, not "
              "held until the timeout" % (what, status), a)
    srv.alive("the framing faults")


# ------------------------------------------------------------------ SQL

def sql(p, body, timeout=30):
    if not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    return get(p, "/api/v1/db/system/_search", method="POST", body=body,
               headers={"Content-Type": "application/json"}, timeout=timeout)


def dbq(text):
    return {"type": "databaseExplorerQuery", "query": text}


def check_sql(srv, tmp):
    p = srv.port
    canary = os.path.join(tmp, "canary.db")
    writes = [
        "INSERT INTO str VALUES (99999999, 'x')", "UPDATE slice SET dur = 0",
        "DELETE FROM slice", "REPLACE INTO str VALUES (1, 'x')",
        "CREATE TABLE t(a)", "CREATE INDEX i ON slice(dur)",
        "CREATE VIEW v AS SELECT 1", "CREATE TEMP TABLE t(a)",
        "CREATE TRIGGER tr AFTER INSERT ON str BEGIN SELECT 1; END",
        "DROP TABLE slice", "DROP VIEW SystemProfileEvents",
        "ALTER TABLE slice ADD COLUMN x", "ATTACH DATABASE '%s' AS x" % canary,
        "ATTACH 'file:%s?mode=rwc' AS x" % canary, "DETACH DATABASE main",
        "PRAGMA writable_schema=1", "PRAGMA query_only=0",
        "pragma journal_mode=WAL", "/* c */ PRAGMA table_info(slice)",
        "  PRAGMA user_version=7", "VACUUM", "VACUUM INTO '%s'" % canary,
        "REINDEX", "ANALYZE", "BEGIN", "COMMIT", "SAVEPOINT a",
        "SELECT load_extension('libm.so.6')",
        "SELECT load_extension('/nonexistent.so', 'x')",
        "WITH x AS (SELECT 1) DELETE FROM slice",
        "WITH x AS (SELECT 1) INSERT INTO str SELECT 99999999, 'x' FROM x",
        "WITH x AS (SELECT 1) UPDATE slice SET dur = 1"]
    bad = []
    for w in writes:
        a = sql(p, dbq(w))
        if not json_error(a):
            bad.append("%s -> %r" % (w, a))
    check(not bad, "the SQL endpoint refuses %d writes, ATTACH, PRAGMA, "
          "VACUUM INTO and load_extension with a JSON 4xx" % len(writes),
          "\n".join(bad))
    check(not os.path.exists(canary), "no file was created by ATTACH or "
          "VACUUM INTO")
    multi = ["SELECT 1; SELECT 2", "SELECT 1;DELETE FROM slice",
             "SELECT 1; PRAGMA writable_schema=1", "SELECT 1;;SELECT 2",
             "SELECT 1; ATTACH '%s' AS x" % canary,
             "SELECT 1 /* ; */; SELECT 2 -- x"]
    bad = [m for m in multi if not (json_error(sql(p, dbq(m))))]
    check(not bad, "the SQL endpoint refuses %d multi-statement texts" %
          len(multi), bad)
    malformed = [b"", b"x", b"[]", b"{}", b"null", b"1", b'"s"',
                 b'{"type":1}', b'{"type":null}', b'{"type":"nope"}',
                 b'{"type":"databaseExplorerQuery"}',
                 b'{"type":"databaseExplorerQuery","query":1}',
                 b'{"type":"databaseExplorerQuery","query":null}',
                 b'{"type":"databaseExplorerQuery","query":["SELECT 1"]}',
                 b'{"type":"databaseExplorerQuery","query":""}',
                 b'{"type":"databaseExplorerQuery","query":"   "}',
                 b'{"type":"databaseExplorerQuery","query":"-- only"}',
                 b'{"type":"databaseExplorerQuery","query":";"}',
                 b'{"type":"databaseExplorerQuery","query":"SELEKT"}',
                 b'{"type":"databaseExplorerQuery","query":"SELECT 1\\u0000; '
                 b'DELETE FROM slice"}',
                 b'{"type":"databaseExplorerQuery","query":"SELECT \xff\xfe"}',
                 b'{"type":"databaseExplorerQuery","query":"SELECT 1"',
                 b"[" * 100000 + b"]" * 100000,
                 b'{"a":' * 5000 + b"1" + b"}" * 5000,
                 b'{"type":"databaseExplorerQuery","query":"SELECT ' +
                 b"1+" * 200000 + b'1"}',
                 b'{"type":"databaseExplorerQuery","query":"SELECT * FROM '
                 b'nothere"}',
                 b'{"type":"databaseExplorerQuery","query":"SELECT ?1"}']
    bad = []
    for body in malformed:
        a = sql(p, body)
        ok_any = body.endswith(b'?1"}')  # an unbound parameter is NULL
        if not (json_error(a) or ok_any and json_ok(a)):
            bad.append("%r -> %r" % (body[:80], a))
    check(not bad, "%d malformed bodies and queries get a JSON 4xx" %
          len(malformed), "\n".join(bad))

    # runaway queries stop within the 5 s limit; others are served meanwhile
    slow = ["SELECT count(*) FROM slice a, slice b, slice c",
            "SELECT a.ts FROM slice a, slice b, slice c ORDER BY a.ts + "
            "b.dur + c.dur DESC LIMIT 1",
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
            "WHERE x < 1000000000000) SELECT count(*) FROM c"]
    for text in slow:
        res = {}

        def run():
            t0 = time.time()
            res["a"] = sql(p, dbq(text), timeout=60)
            res["t"] = time.time() - t0
        th = threading.Thread(target=run)
        th.start()
        time.sleep(0.3)
        t0 = time.time()
        h = srv.health()
        lag = time.time() - t0
        th.join(60)
        a, took = res.get("a"), res.get("t", 99)
        check(a is not None and json_error(a) and took < 8 and
              h == "ready" and lag < 1,
              "%s... is stopped (%s) after %.1f s (limit 5 s); /health "
              "answered in %.0f ms meanwhile" % (
                  text[:40], a and json.loads(a.body).get("error")
                  if a and json_error(a) else "?", took, lag * 1000),
              "%r %r" % (a, h))
    a = sql(p, dbq("SELECT randomblob(1000000000)"))
    check(a.status == 200 and json.loads(a.body) == {
        "columns": ["randomblob(1000000000)"], "rows": [], "truncated": True,
        "reason": "a value is larger than 16777216 bytes, the most one value "
        "may hold when a row has 1 column (64 MiB of answer): the first 0 "
        "rows are shown"}, "a 1 GB value is not built: no rows, truncated "
          "with a reason", a)
    t0 = time.time()
    a = sql(p, dbq("SELECT printf('%.*c', 10000000, 'x') FROM slice"),
            timeout=60)
    d = json.loads(a.body) if a.status == 200 else {}
    check(a.status == 200 and d.get("truncated") is True and
          len(a.body) < 100 * 1024 * 1024,
          "an answer of 10 MB rows stops near 64 MiB, marked truncated "
          "(%d rows, %.0f MB)" % (len(d.get("rows", [])), len(a.body) / 1e6),
          a)
    a = sql(p, dbq("SELECT name, ts FROM slice JOIN str ON str.id = "
                   "slice.name LIMIT 3"))
    check(json_ok(a) and len(json.loads(a.body)["rows"]) == 3,
          "a plain SELECT still works after all that")
    srv.alive("the SQL batch")


# Under AddressSanitizer (tools/bootstrap.sh's second pass) the server is
# several times slower and its memory carries shadow and quarantine: the
# 5 s deadline may then end a budget-sized answer first, and the memory
# bound doubles.
SANITIZED = "ASAN_OPTIONS" in os.environ


def rss_kb(srv):
    """The server's peak resident memory so far (VmHWM), in KiB."""
    with open("/proc/%d/status" % srv.proc.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def check_sql_limits(srv):
    """The answer's budget counts the JSON sent, the deadline covers the
    query and its answer, memory stays bounded."""
    p = srv.port
    budget = 64 * 1024 * 1024
    # blobs double as hex: 6 MB of JSON per row of 3 MB, 11 rows in 64 MiB
    # (counted raw, all 20 went out: 120 MB); escaped text: test_query.c
    a = sql(p, dbq("SELECT zeroblob(3000000) FROM slice LIMIT 20"),
            timeout=60)
    d = json.loads(a.body) if a.status == 200 else {}
    n = len(d.get("rows", []))
    by_deadline = SANITIZED and n <= 11 and d.get("reason") == (
        "the query and its answer took longer than 5000 ms: the first %d "
        "rows are shown" % n)
    check(a.status == 200 and d.get("truncated") is True and
          len(a.body) <= budget and (by_deadline or (
              n == 11 and d.get("reason") == "the answer would be larger "
              "than 64 MiB of JSON: the first 11 rows are shown")),
          "rows of 3 MB blobs stop at 64 MiB of JSON (11 rows, %.1f MB), "
          "truncated with a reason" % (len(a.body) / 1e6),
          "%s %r" % (a.status, {k: v for k, v in d.items() if k != "rows"}))
    # a wide row: one value may hold only its share of the budget
    a = sql(p, dbq("SELECT " + ", ".join(["zeroblob(16000000)"] * 8)),
            timeout=60)
    check(a.status == 200 and json.loads(a.body) == {
        "columns": ["zeroblob(16000000)"] * 8, "rows": [], "truncated": True,
        "reason": "a value is larger than 4194304 bytes, the most one value "
        "may hold when a row has 8 columns (64 MiB of answer): the first 0 "
        "rows are shown"}, "8 columns of 16 MB blobs stop before they are "
          "made, truncated with a reason", a)
    # 1,999 numeric columns: stopped by the budget or the deadline
    a = sql(p, dbq("SELECT " + ", ".join("a.ts * %d + 0.5" % i
                                         for i in range(1999)) +
                   " FROM slice a, slice b LIMIT 10000"), timeout=60)
    d = json.loads(a.body) if a.status == 200 else {}
    check(a.status == 200 and d.get("truncated") is True and
          len(a.body) <= budget and
          d.get("reason", "").endswith("rows are shown") and
          len(d["rows"]) < 10000 and
          all(len(r) == 1999 for r in d["rows"]),
          "1,999 numeric columns x 10,000 rows stop at the budget or the "
          "deadline (%d whole rows, %.1f MB)" % (len(d.get("rows", [])),
                                                len(a.body) / 1e6),
          "%s %r" % (a.status, d.get("reason")))
    # rows found before the deadline are answered, marked truncated
    a = sql(p, dbq("SELECT 1 UNION ALL SELECT count(*) FROM slice a, slice "
                   "b, slice c, slice d"), timeout=60)
    d = json.loads(a.body) if a.status == 200 else {}
    check(a.status == 200 and d.get("rows") == [[1]] and
          d.get("truncated") is True and d.get("reason") ==
          "the query ran longer than 5000 ms and was stopped: the first 1 "
          "rows are shown",
          "a query stopped by the deadline after its first row answers that "
          "row, truncated with a reason", a)
    kb = rss_kb(srv)
    # The bound is the plain build's (97 MB measured on 2026-11-28).  Under
    # AddressSanitizer freed memory stays in its quarantine (256 MB) and the
    # answer buffers' reallocations all stay mapped: 834-836 MB there,
    # before and after that day's changes; 1 GB still catches a leak.
    limit = 1024 if SANITIZED else 400
    check(0 < kb < limit * 1024, "the server's peak RSS stayed under %d MB "
          "through the SQL limits (%d MB)" % (limit, kb // 1024), kb)
    # refusals name the statement; pragma functions are reads
    a = sql(p, dbq("DROP TABLE slice"))
    check(a.status == 403 and json.loads(a.body)["detail"] ==
          "DROP is not allowed: the SQL endpoint runs one read-only SELECT",
          "DROP is refused as DROP", a)
    a = sql(p, dbq("SELECT name FROM pragma_table_info('slice') ORDER BY "
                   "cid"))
    check(a.status == 200 and json.loads(a.body)["rows"] == [
        ["track"], ["lane"], ["ts"], ["id"], ["dur"], ["name"], ["grp"],
        ["args"], ["flows"]], "pragma_table_info('slice') lists the 9 columns",
        a)
    srv.alive("the SQL limits")


def check_post_origin(srv):
    """Only the server's own pages (and tools that send no Origin) may
    POST, and only JSON: a cross-site form or text/plain POST is what any
    web page can send."""
    p = srv.port
    own = "http://localhost:%d" % p
    body = json.dumps(dbq("SELECT 1"))
    cases = [
        ({"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
        ({}, 415, "unsupported_media_type"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415,
         "unsupported_media_type"),
        ({"Content-Type": "application/jsonx"}, 415,
         "unsupported_media_type"),
        ({"Content-Type": "text/plain", "Origin": "http://evil.com"}, 403,
         "cross_site"),
        ({"Content-Type": "application/json", "Origin": "http://evil.com"},
         403, "cross_site"),
        ({"Content-Type": "application/json", "Origin": "null"}, 403,
         "cross_site"),
        ({"Content-Type": "application/json",
          "Origin": "http://localhost:%d" % (p + 1)}, 403, "cross_site"),
        ({"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"},
         403, "cross_site"),
        ({"Content-Type": "application/json", "Sec-Fetch-Site": "same-site",
          "Origin": own}, 403, "cross_site"),
        ({"Content-Type": "application/json"}, 200, None),
        ({"Content-Type": "application/json; charset=utf-8", "Origin": own,
          "Sec-Fetch-Site": "same-origin"}, 200, None),
        ({"Content-Type": "application/json", "Sec-Fetch-Site": "none"}, 200,
         None)]
    bad = []
    for headers, status, code in cases:
        a = get(p, "/api/v1/db/system/_search", method="POST", body=body,
                headers=headers)
        d = json.loads(a.body) if a.body[:1] == b"{" else {}
        if a.status != status or (code and (d.get("error") != code or
                                            not d.get("detail"))) or (
                not code and d.get("rows") != [[1]]):
            bad.append("%r -> %r" % (headers, a))
    check(not bad, "POSTs: %d cross-site or non-JSON ones refused (403 "
          "cross_site, 415), same-origin and Origin-less JSON ones served" %
          len(cases), "\n".join(bad))


def check_busy(tmp):
    """Exports to clients that do not read hold no pooled connection: with
    a profile whose export outgrows the socket buffers, 4 of them (the
    pool's size) once left /search waiting for ever."""
    tmp = os.path.join(tmp, "big")  # its own server.err
    os.mkdir(tmp)
    prof = os.path.join(tmp, "profile")
    r = subprocess.run([SYNTH, "--out", prof, "--seed", "9", "--instances",
                        "1", "--processes", "1", "--cores", "2", "--steps",
                        "1000"], capture_output=True)
    srv = Server(tmp, prof, os.path.join(tmp, "store.db"), None,
                 ["--no-watch"])
    try:
        if not check(r.returncode == 0 and srv.wait_ready() == "ready",
                     "a second server with a bigger profile becomes ready"):
            return
        p = srv.port
        socks, heads = [], 0
        try:
            for _ in range(4):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.settimeout(10)
                s.connect(("127.0.0.1", p))
                s.sendall(b"GET /api/v1/export?format=perfetto HTTP/1.1\r\n"
                          b"Host: localhost\r\n\r\n")
                socks.append(s)
            for s in socks:  # every export has started: its head is here
                try:
                    heads += s.recv(64).startswith(b"HTTP/1.1 200")
                except OSError:
                    pass
            a = get(p, "/api/v1/search?" + q([("q", "a")]), timeout=15)
            b = sql(p, dbq("SELECT count(*) FROM slice"), timeout=15)
        finally:
            for s in socks:
                s.close()
        check(heads == 4 and json_ok(a) and json_ok(b), "/search and the "
              "SQL endpoint answer while 4 exports wait for clients that do "
              "not read", "%d heads, %r %r" % (heads, a, b))
        srv.alive("the stalled exports")
    finally:
        check(srv.stop(20) == 0, "the second server stops cleanly")
        err = open(srv.err_path, errors="replace").read()
        check("Sanitizer" not in err and "runtime error" not in err,
              "no sanitizer report from the second server", err[-2000:])


# ------------------------------------------------------------------ Host

def upgrade(p, host, origin, proto="nex.v1"):
    key = base64.b64encode(os.urandom(16)).decode()
    req = ("GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
           "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n" %
           (host, key, proto))
    if origin is not None:
        req += "Origin: %s\r\n" % origin
    s = socket.create_connection(("127.0.0.1", p), timeout=5)
    try:
        s.sendall((req + "\r\n").encode("latin-1"))
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        data = b""
    finally:
        s.close()
    return data.split(b"\r\n")[0]


def check_hosts(srv):
    p = srv.port
    hosts = ["evil.com", "evil.com:%d" % p, "", "localhost.evil.com",
             "localhost:abc", "localhost:", "localhost:%d:1" % p, "[::1",
             "[::2]:%d" % p, "127.0.0.1.nip.io", "127.0.0.2", "0x7f.0.0.1",
             "2130706433", "127.1", "0.0.0.0:%d" % p, "localhost%00.evil.com",
             "local\u0127host", "localhost\t", "x" * 5000, "evil.com, localhost"]
    bad = []
    for h in hosts:
        for path in ("/api/v1/health", "/index.html"):
            a = raw(p, ("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close"
                        "\r\n\r\n" % (path, h)).encode("utf-8"))
            if a.status != 403 or not json_error(a):
                bad.append("Host %r %s -> %r" % (h[:40], path, a))
    for req in (b"GET /api/v1/health HTTP/1.0\r\n\r\n",
                b"GET /api/v1/health HTTP/1.1\r\nConnection: close\r\n\r\n"):
        a = raw(p, req)
        if a.status != 403 or not json_error(a):
            bad.append("%r -> %r" % (req[:60], a))
    # two Host headers: 400 (see check_redirect_fifo_framing)
    a = raw(p, b"GET /api/v1/health HTTP/1.1\r\nHost: evil.com\r\nHost: "
            b"localhost\r\nConnection: close\r\n\r\n")
    if a.status != 400 or not json_error(a):
        bad.append("two Host headers -> %r" % a)
    check(not bad, "%d foreign, malformed, repeated or missing Host headers "
          "get 403 (400 when repeated) with a JSON error, API and static "
          "alike" % (2 * len(hosts) + 3),
          "\n".join(bad))
    host = "localhost:%d" % p
    ok_line = upgrade(p, host, "http://" + host)
    check(ok_line.startswith(b"HTTP/1.1 101"), "a WebSocket upgrade with a "
          "matching Origin is accepted (the control case)", ok_line)
    bad = []
    for h, o in ((host, "http://evil.com"), (host, "null"), (host, ""),
                 (host, None), (host, "http://localhost.evil.com:%d" % p),
                 (host, "http://%s.evil.com" % host), (host, "file://"),
                 (host, "ws://" + host), (host, "http://" + host + "/x"),
                 (host, "http://localhost:%d" % (p + 1)),
                 ("evil.com", "http://evil.com"),
                 ("evil.com:%d" % p, "http://evil.com:%d" % p),
                 (host, "http://127.0.0.1:%d" % p)):
        line = upgrade(p, h, o)
        if line.startswith(b"HTTP/1.1 101"):
            bad.append("Host %r Origin %r -> %r" % (h, o, line))
    check(not bad, "WebSocket upgrades whose Origin does not match Host (or "
          "whose Host is foreign) are refused", "\n".join(bad))
    srv.alive("the Host and Origin checks")


# ------------------------------------------------------------------ sizes

def check_sizes(srv):
    p = srv.port
    h = "GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
    cases = [("one 17 KiB header", h + "X-Big: " + "x" * 17000 + "\r\n\r\n",
              (431,)),
             ("300 headers of 60 bytes", h + "".join(
                 "X-%d: %s\r\n" % (i, "y" * 54) for i in range(300)) + "\r\n",
              (431,)),
             ("one 40 KiB header", h + "X-Big: " + "x" * 40000 + "\r\n\r\n",
              (431,)),
             ("one 1 MiB header", h + "X-Big: " + "x" * (1 << 20) + "\r\n\r\n",
              (431, 413, 414, 400)),
             ("a 20 KiB URL", "GET /api/v1/search?q=" + "a" * 20000 +
              " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
              (414, 431, 400)),
             ("a 1 MiB URL", "GET /" + "a" * (1 << 20) +
              " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
              (414, 431, 400))]
    for what, req, want in cases:
        a = raw(p, req.encode())
        ours = want == (431,)  # under MHD's 48 KiB: our JSON answer
        check(a.status in want and (not ours or json_error(a)),
              "%s is refused with %s%s" % (what, "/".join(map(str, want)),
                                           " and a JSON error" if ours else ""),
              a)
    post = ("POST /api/v1/db/system/_search HTTP/1.1\r\nHost: localhost\r\n"
            "Connection: close\r\nContent-Type: application/json\r\n")
    big = b"x" * (2 << 20)
    for what, req in (
            # The server answers as soon as the headers announce too much
            # and closes: a client still sending the body could see the
            # connection reset before it reads the answer, so only the
            # headers are sent, then the answer is read.
            ("a 2 MiB body (announced)", post.encode() +
             b"Content-Length: %d\r\n\r\n" % len(big)),
            ("a 1 MiB + 1 byte body (announced)", post.encode() +
             b"Content-Length: %d\r\n\r\n" % ((1 << 20) + 1)),
            ("a 2 MiB chunked body", post.encode() +
             b"Transfer-Encoding: chunked\r\n\r\n" +
             b"".join(b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
                      for _ in range(32)) + b"0\r\n\r\n"),
            ("a Content-Length of 2^64 + 1", post.encode() +
             b"Content-Length: 18446744073709551617\r\n\r\nxx"),
            ("a Content-Length of 10^20", post.encode() +
             b"Content-Length: 99999999999999999999\r\n\r\nxx"),
            ("a 2 MiB Content-Length with 10 bytes sent", post.encode() +
             b"Content-Length: 2097152\r\n\r\n0123456789")):
        a = raw(p, req, shut=what.endswith("sent"))
        check(a.status in (413, 400), "%s is refused (413 or 400)" % what, a)
    srv.alive("the oversized requests")


# ------------------------------------------------------------------ junk

def check_junk(srv):
    p = srv.port
    junk = [
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(200),
        os.urandom(65536), b"\r\n" * 5000, b"GET\r\n\r\n", b"GET /\r\n\r\n",
        b"GET / HTTP/9.9\r\nHost: localhost\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: localhost\r\nNoColonHere\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: localhost\r\n: empty\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: localhost\r\nX: a\r\n b\r\n\r\n",
        b"\x00" * 1000, b"GET /ws HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Version: 99\r\n\r\n",
        b"GET /ws?" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",
        b"POST /api/v1/db/system/_search HTTP/1.1\r\nHost: localhost\r\n"
        b"Transfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n",
        b"POST /api/v1/db/system/_search HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /api/v1/db/system/_search HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Length: -1\r\n\r\n",
        b"POST /api/v1/db/system/_search HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Length: 5\r\nContent-Length: 7\r\n\r\n12345",
        b"GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Length: 100000\r\n\r\n" + b"x" * 100000]
    bad = []
    for j in junk:
        a = raw(p, j, timeout=15, shut=True)
        if a.status is not None and a.status >= 500 and a.status not in (
                501, 505):
            bad.append("%r -> %r" % (j[:40], a))
    check(not bad, "%d kinds of protocol junk (TLS hello, random bytes, bad "
          "versions, bad chunks, smuggling headers, bad WebSocket "
          "handshakes) get a 4xx or a closed connection" % len(junk),
          "\n".join(bad))
    # 50 pipelined requests on one connection: 50 answers in order
    reqs = b"".join(b"GET /api/v1/health?i=%d HTTP/1.1\r\nHost: localhost\r\n"
                    b"\r\n" % i for i in range(49)) + \
        b"GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: " \
        b"close\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", p), timeout=10)
    s.sendall(reqs)
    out = b""
    try:
        while True:
            c = s.recv(1 << 16)
            if not c:
                break
            out += c
    except socket.timeout:
        pass
    s.close()
    check(out.count(b"HTTP/1.1 200") == 50, "50 pipelined requests get 50 "
          "answers", out.count(b"HTTP/1.1 200"))
    # many connections at once, most of them silent
    socks = []
    try:
        for _ in range(300):
            socks.append(socket.create_connection(("127.0.0.1", p)))
        t0 = time.time()
        h = srv.health()
        lag = time.time() - t0
    finally:
        for s in socks:
            s.close()
    check(h == "ready" and lag < 1, "300 idle connections do not delay "
          "/health (%.0f ms)" % (lag * 1000))
    srv.alive("the protocol junk")


# ------------------------------------------------------------------ budget

BUDGET = 384  # NET_MAX_CONNS in server/serve/net.c


def still_open(socks):
    """How many of the sockets the server has not closed."""
    n = 0
    for s in socks:
        s.setblocking(False)
        try:
            n += s.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            n += 1
        except OSError:
            pass
    return n


def wait_for(cond, seconds=20):
    """Polls cond() until it is true or seconds pass; returns its value."""
    end = time.time() + seconds
    v = cond()
    while not v and time.time() < end:
        time.sleep(0.05)
        v = cond()
    return v


def check_budget(srv):
    """The connection budget: floods of connections that never finish their
    headers, or hold a request open, neither stop REST nor lock the page's
    WebSocket out (libmicrohttpd 0.9.75 stops for good past its limit of
    512 connections when it turns one away)."""
    p = srv.port
    slow = []
    try:
        for _ in range(650):
            s = socket.create_connection(("127.0.0.1", p), timeout=5)
            s.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Sl")
            slow.append(s)
        answers = [get(p, "/api/v1/health", timeout=10) for _ in range(20)]
        ok = [a.status for a in answers].count(200)
        check(ok == 20, "650 slow-header connections held: 20 of 20 /health "
              "requests answered 200", [a for a in answers if a.status != 200])
        line = upgrade(p, "localhost:%d" % p, "http://localhost:%d" % p)
        check(line.startswith(b"HTTP/1.1 101"), "and a WebSocket upgrade "
              "succeeds", line)
        n = wait_for(lambda: still_open(slow) <= BUDGET)
        check(n, "the server holds at most %d of them (the longest waiting "
              "are closed)" % BUDGET, still_open(slow))
    finally:
        for s in slow:
            s.close()
    # requests in progress are not evicted: past the budget, 503.  Each
    # upload waits for its "100 Continue": its request has started.
    busy = []
    try:
        for _ in range(BUDGET):
            s = socket.create_connection(("127.0.0.1", p), timeout=10)
            busy.append(s)
            s.sendall(b"POST /api/v1/sql HTTP/1.1\r\nHost: localhost\r\n"
                      b"Content-Type: application/json\r\nExpect: 100-continue"
                      b"\r\nContent-Length: 1000\r\n\r\n")
            if not s.recv(64).startswith(b"HTTP/1.1 100"):
                break
        a = raw(p, b"GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\n"
                   b"Connection: close\r\n\r\n")
        try:
            err = json.loads(a.body).get("error")
        except ValueError:
            err = None
        check(len(busy) == BUDGET and a.status == 503 and
              a.headers.get("retry-after") == "1" and err == "busy",
              "%d requests in progress: a new connection gets 503 with "
              "Retry-After and a JSON error" % BUDGET, (len(busy), a))
    finally:
        for s in busy:
            s.close()
    check(wait_for(lambda: srv.health() == "ready"), "once they close, "
          "/health answers again")
    srv.alive("the connection floods")


# ------------------------------------------------------------------ main

def ids_of(store):
    db = sqlite3.connect("file:%s?mode=ro" % store, uri=True)
    track, lane, ts = db.execute(
        "SELECT s.track, s.lane, s.ts FROM slice s JOIN track t ON t.id = "
        "s.track WHERE t.domain = 'system' ORDER BY s.dur DESC LIMIT 1"
    ).fetchone()
    first, last = db.execute("SELECT min(first_ts), max(last_ts) FROM track "
                             "WHERE domain = 'system'").fetchone()
    counter = db.execute("SELECT id FROM track WHERE kind = 'counter' "
                         "LIMIT 1").fetchone()[0]
    profile = db.execute("SELECT min(id) FROM DeviceProfileList").fetchone()[0]
    db.close()
    return {"track": str(track), "key": "%d:%d:%d" % (track, lane, ts),
            "start": str(first), "end": str(last + 1), "counter": str(counter),
            "profile": str(profile)}


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run(tmp):
    prof = os.path.join(tmp, "profile")
    r = subprocess.run([SYNTH, "--out", prof, "--seed", "9", "--instances",
                        "1", "--processes", "1", "--cores", "2", "--steps",
                        "200", "--device-profile", "model",
                        "--device-instructions", "300"], capture_output=True)
    if not check(r.returncode == 0, "generator writes a profile", r.stderr):
        return None
    # a web root with symlinks that lead out of it, and files beside it
    web = os.path.join(tmp, "web")
    shutil.copytree(os.path.join(SRC, "web"), web)
    os.symlink("/etc", os.path.join(web, "leak"))
    os.symlink("/etc/passwd", os.path.join(web, "passwd.txt"))
    with open(os.path.join(tmp, "secret.txt"), "w") as f:
        f.write("TOPSECRET outside the web root\n")
    os.symlink(os.path.join(tmp, "secret.txt"), os.path.join(web, "outside.txt"))
    os.mkdir(os.path.join(tmp, "web2"))
    with open(os.path.join(tmp, "web2", "secret.txt"), "w") as f:
        f.write("TOPSECRET in a sibling folder\n")
    os.mkfifo(os.path.join(web, "fifo.js"))
    store = os.path.join(tmp, "store.db")
    srv = Server(tmp, prof, store, web, ["--no-watch"])
    if not check(srv.wait_ready() == "ready", "the server becomes ready"):
        return srv
    before = digest(store)
    ids = ids_of(store)
    check_parameters(srv, ids)
    srv.alive("the parameter batches")
    check_methods(srv)
    check_paths(srv)
    check_redirect_fifo_framing(srv)
    check_sql(srv, tmp)
    check_sql_limits(srv)
    check_post_origin(srv)
    check_busy(tmp)
    check_hosts(srv)
    check_sizes(srv)
    check_junk(srv)
    check_budget(srv)
    check(digest(store) == before, "the store file is byte for byte unchanged")
    rc = srv.stop(20)
    check(rc == 0, "SIGTERM still stops the server cleanly", rc)
    err = open(srv.err_path, errors="replace").read()
    reports = [l for l in err.splitlines() if "Sanitizer" in l or
               "runtime error" in l or "fatal" in l.lower()]
    check(not reports, "no sanitizer report or fatal error on the server's "
          "stderr", "\n".join(reports[:20]))
    return srv


if __name__ == "__main__":
    sys.exit(main("nex-hostile-test.", run))
