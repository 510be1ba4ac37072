#!/usr/bin/env python3
"""ws_client.py -- a minimal WebSocket client (standard library only) for
the integration tests.

    ws_client.py PORT [--host H] [--origin O|--no-origin] [--protocol P]
                 [--messages N] [--timeout S] [--until TYPE]

Connects to 127.0.0.1:PORT, sends the upgrade for /ws and prints one line
"status <code>" (the HTTP status of the answer, or "status closed" when the
server closed the connection without one), then each received text message
on its own line, until N messages were read, a message of type TYPE
arrived, or S seconds passed.  Exit status 0 unless the socket failed.
"""
import argparse
import base64
import json
import os
import socket
import struct
import sys
import time


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def read_frame(sock):
    """Returns (opcode, payload) of one unfragmented frame."""
    b0, b1 = recv_exact(sock, 2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", recv_exact(sock, 2))[0]
    elif n == 127:
        n = struct.unpack("!Q", recv_exact(sock, 8))[0]
    mask = recv_exact(sock, 4) if b1 & 0x80 else None
    data = recv_exact(sock, n)
    if mask:
        data = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
    return b0 & 0x0F, data


def send_frame(sock, opcode, payload):
    mask = os.urandom(4)
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    sock.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--host")
    ap.add_argument("--origin")
    ap.add_argument("--no-origin", action="store_true")
    ap.add_argument("--protocol", default="nex.v1")
    ap.add_argument("--messages", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--until")
    a = ap.parse_args()
    host = a.host or "localhost:%d" % a.port
    origin = a.origin or "http://" + host
    key = base64.b64encode(os.urandom(16)).decode()
    req = ["GET /ws HTTP/1.1", "Host: " + host, "Upgrade: websocket",
           "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
           "Sec-WebSocket-Version: 13"]
    if not a.no_origin:
        req.append("Origin: " + origin)
    if a.protocol:
        req.append("Sec-WebSocket-Protocol: " + a.protocol)
    sock = socket.create_connection(("127.0.0.1", a.port), timeout=a.timeout)
    sock.sendall(("\r\n".join(req) + "\r\n\r\n").encode())
    head = b""
    try:
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(1)
            if not chunk:
                break
            head += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    if not head:
        print("status closed")
        return 0
    status = head.split(b" ", 2)[1].decode()
    print("status " + status)
    if status != "101":
        return 0
    deadline = time.time() + a.timeout
    got = 0
    try:
        while got < a.messages and time.time() < deadline:
            sock.settimeout(max(0.01, deadline - time.time()))
            op, data = read_frame(sock)
            if op == 0x9:  # ping
                send_frame(sock, 0xA, data)
                continue
            if op == 0x8:
                break
            if op == 0x1:
                print(data.decode())
                got += 1
                if a.until and json.loads(data).get("type") == a.until:
                    break
    except (socket.timeout, EOFError):
        pass
    send_frame(sock, 0x8, struct.pack("!H", 1000))
    sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
