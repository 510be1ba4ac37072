#!/usr/bin/env python3
"""wsq_client.py -- a message-level WebSocket client for the queries over
/ws (doc/api.md, "Queries over /ws"), standard library only; used by
wsq_test.py and bench/wsq_bench.py.  Frames are written with ws_client.py;
this module adds whole messages (continuation frames) and the decoder of
the binary window frames.

    c = WsqClient(port)                 # connects, upgrades, reads nothing
    c.send({"type": "slices", "id": 1, ...})
    kind, msg = c.recv()                # ("text", dict) or ("binary", dict)
"""
import base64
import json
import os
import socket
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ws_client import recv_exact, send_frame  # noqa: E402


class WsqClient:
    def __init__(self, port, timeout=30, protocol="nex.v1", rcvbuf=0):
        """rcvbuf: the socket's receive buffer, set before it connects
        (the window is agreed then; later the kernel may keep growing it)."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.wire = 0  # bytes read from the socket, handshake included
        host = "localhost:%d" % port
        key = base64.b64encode(os.urandom(16)).decode()
        req = ["GET /ws HTTP/1.1", "Host: " + host, "Upgrade: websocket",
               "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
               "Sec-WebSocket-Version: 13", "Origin: http://" + host,
               "Sec-WebSocket-Protocol: " + protocol]
        self.sock.sendall(("\r\n".join(req) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise EOFError("closed during the upgrade")
            head += chunk
        self.wire += len(head)
        status = head.split(b" ", 2)[1]
        if status != b"101":
            raise OSError("upgrade refused: " + head.decode(errors="replace"))
        self.names = {}  # string id -> text, as sent on this connection

    def send(self, obj):
        send_frame(self.sock, 0x1, json.dumps(obj).encode())

    def send_raw(self, opcode, payload):
        send_frame(self.sock, opcode, payload)

    def _recv(self, n):
        b = recv_exact(self.sock, n)
        self.wire += n
        return b

    def _frame(self):
        b0, b1 = self._recv(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._recv(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._recv(8))[0]
        if b1 & 0x80:
            raise OSError("the server masked a frame")
        if b0 & 0x70:
            raise OSError("a frame with RSV bits: no extension was agreed")
        return b0 & 0x80, b0 & 0x0F, self._recv(n)

    def recv_raw(self):
        """One whole message: (opcode, payload bytes); pings answered."""
        parts, op0 = [], None
        while True:
            fin, op, data = self._frame()
            if op == 0x9:
                send_frame(self.sock, 0xA, data)
                continue
            if op == 0xA:
                continue
            if op == 0x8:
                raise EOFError("closed by the server")
            if op != 0:
                op0 = op
            parts.append(data)
            if fin:
                break
        return op0, b"".join(parts)

    def recv(self):
        """("text", dict) or ("binary", decoded frame dict)."""
        op, data = self.recv_raw()
        if op == 0x1:
            return "text", json.loads(data)
        return "binary", decode_frame(data, self.names)

    def settimeout(self, t):
        self.sock.settimeout(t)

    def close(self):
        try:
            send_frame(self.sock, 0x8, struct.pack("!H", 1000))
        except OSError:
            pass
        self.sock.close()


def _col(data, off, n):
    """An integer column (or doubles, width 8) at off: (values, next off)."""
    w, hw = struct.unpack_from("<BB", data, off)
    off += 8
    fmt = {1: "B", 2: "H", 4: "I", 8: "d"}[w]
    vals = list(struct.unpack_from("<%d%s" % (n, fmt), data, off))
    off = (off + n * w + 7) // 8 * 8
    if w == 8:
        return [v if v != int(v) else int(v) for v in vals], off
    if hw:
        hi = struct.unpack_from("<%d%s" % (n, {1: "B", 2: "H", 4: "I"}[hw]),
                                data, off)
        off = (off + n * hw + 7) // 8 * 8
        vals = [v + (h << 32) for v, h in zip(vals, hi)]
    return vals, off


def _doubles(data, off, n):
    w, _ = struct.unpack_from("<BB", data, off)
    if w != 8:
        raise ValueError("a double column of width %d" % w)
    vals = list(struct.unpack_from("<%dd" % n, data, off + 8))
    return vals, (off + 8 + 8 * n + 7) // 8 * 8


def decode_frame(data, names):
    """Decodes a binary window frame into the shape of the REST answer
    (absolute times as ints under "abs_ts", string ids for names),
    updating `names`."""
    if data[:4] != b"NXB2":
        raise ValueError("not a window frame")
    (fid,) = struct.unpack_from("<I", data, 4)
    kind, flags = struct.unpack_from("<BB", data, 8)
    (n_dict,) = struct.unpack_from("<I", data, 12)
    base, start, end, res = struct.unpack_from("<4q", data, 16)
    px, n_names, n_tracks, n_rows = struct.unpack_from("<4I", data, 48)
    off = 64
    new_names = {}
    for _ in range(n_names):
        nid, ln = struct.unpack_from("<II", data, off)
        off += 8
        text = data[off:off + ln].decode("utf-8", errors="replace")
        off += ln
        names[nid] = text
        new_names[nid] = text
    off = (off + 7) // 8 * 8
    compressed = len(data)
    if flags & 4:  # the body is raw deflate
        data = data[:off] + zlib.decompress(data[off:], -15)
    dictionary = list(struct.unpack_from("<%dI" % n_dict, data, off))
    off = (off + 4 * n_dict + 7) // 8 * 8
    tracks = []
    for _ in range(n_tracks):
        tid, level, n_groups, slen, _z = struct.unpack_from("<qiIII", data,
                                                             off)
        off += 24
        source = data[off:off + slen].decode()
        off = (off + slen + 7) // 8 * 8
        groups = []
        for _ in range(n_groups):
            if kind == 1:
                lane, n, fl, _z = struct.unpack_from("<4I", data, off)
                off += 16
                groups.append({"lane": lane, "n": n, "truncated": bool(fl & 1)})
            else:
                ser, lvl, n, fl, nl, ul = struct.unpack_from("<iiIIII", data,
                                                             off)
                off += 24
                name = data[off:off + nl].decode()
                unit = data[off + nl:off + nl + ul].decode()
                off = (off + nl + ul + 7) // 8 * 8
                groups.append({"series": ser, "level": lvl, "n": n,
                               "truncated": bool(fl & 1), "name": name,
                               "unit": unit})
        t = {"track": str(tid), "level": level, "groups": groups}
        if kind == 2:
            t["source"] = source
        tracks.append(t)
    ts, off = _col(data, off, n_rows)
    if kind == 1:
        dur, off = _col(data, off, n_rows)
        name, off = _col(data, off, n_rows)
        grp, off = _col(data, off, n_rows)
        name = [dictionary[v] for v in name]
        grp = [dictionary[v] for v in grp]
    else:
        mn, off = _doubles(data, off, n_rows)
        mx, off = _doubles(data, off, n_rows)
        last, off = _doubles(data, off, n_rows)
    count, off = _col(data, off, n_rows)
    if kind == 1:  # idle = dur - busy
        idle, off = _col(data, off, n_rows)
        busy = [d - i for d, i in zip(dur, idle)]
    if off != len(data):
        raise ValueError("frame of %d bytes, decoded %d" % (len(data), off))
    row = 0
    for t in tracks:
        for g in t.pop("groups"):
            n = g.pop("n")
            sl = slice(row, row + n)
            g["abs_ts"] = [base + v for v in ts[sl]]
            g["count"] = count[sl]
            if kind == 1:
                g["dur"] = dur[sl]
                g["name"] = name[sl]
                g["grp"] = grp[sl]
                g["busy"] = busy[sl]
                t.setdefault("lanes", []).append(g)
            else:
                g["min"], g["max"], g["last"] = mn[sl], mx[sl], last[sl]
                t.setdefault("series", []).append(g)
            row += n
        t.setdefault("lanes" if kind == 1 else "series", [])
    return {"id": fid, "kind": "slices" if kind == 1 else "counters",
            "final": bool(flags & 1), "coarse": bool(flags & 2),
            "base": base, "start": start, "end": end, "resolution_ns": res,
            "px": px, "new_names": new_names, "tracks": tracks,
            "dictionary": dictionary, "bytes": compressed,
            "deflated": bool(flags & 4)}


def rest_rows(answer, kind):
    """The REST JSON answer in the shape decode_frame() gives (names
    resolved by the caller)."""
    base = int(answer["base"])
    out = []
    for t in answer["tracks"]:
        o = {"track": t["track"]}
        if kind == "slices":
            o["level"] = t["level"]
            o["lanes"] = [{"lane": l["lane"],
                           "abs_ts": [base + v for v in l["ts"]],
                           "dur": l["dur"], "name": l["name"], "grp": l["grp"],
                           "count": l["count"], "busy": l["busy"],
                           "truncated": bool(l.get("truncated"))}
                          for l in t["lanes"]]
        else:
            o["source"] = t["source"]
            o["series"] = [{"series": s["series"], "level": s["level"],
                            "name": s["name"], "unit": s["unit"],
                            "abs_ts": [base + v for v in s["ts"]],
                            "min": s["min"], "max": s["max"],
                            "last": s["last"], "count": s["count"],
                            "truncated": bool(s.get("truncated"))}
                           for s in t["series"]]
        out.append(o)
    return out


def frame_rows(frame):
    """decode_frame()'s tracks in rest_rows()'s shape."""
    out = []
    for t in frame["tracks"]:
        o = {"track": t["track"]}
        if frame["kind"] == "slices":
            o["level"] = t["level"]
            o["lanes"] = t["lanes"]
        else:
            o["source"] = t["source"]
            o["series"] = t["series"]
        out.append(o)
    return out
