#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Raw-socket clients of api_abuse.sh: connections that hold, half-close or
drop a request, from several source addresses, and a probe that must be
answered meanwhile.

  api_abuse.py --server ADDR:PORT --from A1,A2,... MODE [options]

MODE:
  halfclose N   N connections send part of a request and shut down their
                sending side (half-close); the probe must be answered, and
                the server must close every one of them (it saw the end).
  held N        N connections send part of a request and stay open, filling
                the connection table; the probe must be answered. With
                --token, the first of them is a client's keep-alive
                connection that made a request with the token: it is idle
                longest, yet it must still be served after the probe (the
                connections without a token go first). A probe from the
                first address, which holds 32 of them (the limit of one
                address), must be answered too.
  busy N PATH   N connections send a whole GET PATH (with --token) that the
                server cannot answer yet; the probe must be answered, and
                another GET PATH on a new connection gets 503.
  flood N       N connections opened and dropped (nothing sent, part of a
                request, reset), from --threads threads; then the probe.

The probe is GET /healthz on a new connection from ADDR itself; it must be
answered 200 within --probe-timeout seconds (default 10: a functional bound, not a
measure; a server these connections starve answers only once its idle timeout,
30 s, has closed them, and under ASan on a busy machine a served probe took over 1 s).
Its latency is printed. Exit 0 when every check held, 1 otherwise.
"""
import argparse
import socket
import struct
import sys
import threading
import time

PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "


def connect(server, src, timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(server)
    return s


def probe(server, timeout, src=None):
    """(status code or None, seconds, why)"""
    t0 = time.monotonic()
    try:
        s = connect(server, src or server[0], timeout)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while b"\r\n" not in data:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                raise socket.timeout("no answer")
            s.settimeout(left)
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
    except OSError as e:
        return None, time.monotonic() - t0, str(e) or type(e).__name__
    dt = time.monotonic() - t0
    try:
        return int(data.split(b" ", 2)[1]), dt, data[:40]
    except (IndexError, ValueError):
        return None, dt, "not HTTP: %r" % data[:40]


def check_probe(args, what, src=None):
    code, dt, why = probe(args.server, args.probe_timeout, src)
    print("%s: probe GET /healthz -> %s in %.1f ms" % (what, code, dt * 1000))
    if code != 200:
        print("FAILED: %s: the probe was not answered 200 within %.0f s (%s)"
              % (what, args.probe_timeout, why))
        return False
    return True


def open_many(args, n, payload, half):
    socks = []
    for i in range(n):
        s = connect(args.server, args.sources[i % len(args.sources)])
        if payload:
            s.sendall(payload)
        if half:
            s.shutdown(socket.SHUT_WR)
        socks.append(s)
    return socks


def closed_by_server(socks, within):
    """How many of socks the server closed (EOF or reset) within seconds."""
    deadline = time.monotonic() + within
    closed = set()
    while len(closed) < len(socks) and time.monotonic() < deadline:
        for i, s in enumerate(socks):
            if i in closed:
                continue
            s.settimeout(0.01)
            try:
                if s.recv(4096) == b"":
                    closed.add(i)
            except socket.timeout:
                pass
            except OSError:
                closed.add(i)
    return len(closed)


def mode_halfclose(args, n):
    socks = open_many(args, n, PARTIAL, True)
    ok = check_probe(args, "%d half-closed connections" % n)
    # the server saw each end: it closes them (well before the idle timeout)
    t0 = time.monotonic()
    done = closed_by_server(socks, args.close_within)
    print("half-closed: %d of %d closed by the server in %.1f s"
          % (done, n, time.monotonic() - t0))
    if done != n:
        print("FAILED: %d half-closed connections still open after %.0f s (CLOSE-WAIT)"
              % (n - done, args.close_within))
        ok = False
    for s in socks:
        s.close()
    return ok


def get(s, path, token):
    """GET path on the open connection s: the status code, or None."""
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
               % (path, token)).encode())
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                return None
            body += chunk
        return int(head.split(b" ", 2)[1])
    except OSError:
        return None


def mode_held(args, n):
    ok = True
    keep = None
    if args.token:
        keep = connect(args.server, args.server[0])
        code = get(keep, "/api/v1/targets", args.token)
        if code != 200:
            print("FAILED: the keep-alive client's first request: %s" % code)
            ok = False
        n -= 1
    socks = open_many(args, n, PARTIAL, False)
    time.sleep(0.2)     # every one accepted and read (not a bound: the probe waits)
    ok = check_probe(args, "%d held partial requests" % n) and ok
    ok = check_probe(args, "again") and ok
    # from an address with --max-connections-per-ip (32) held: its own make room
    ok = check_probe(args, "from %s, which holds 32" % args.sources[0], args.sources[0]) and ok
    if keep:
        code = get(keep, "/api/v1/targets", args.token)
        print("the keep-alive client with a token, idle longest: %s" % code)
        if code != 200:
            print("FAILED: the idle connection of a client with a token was closed "
                  "before those without one")
            ok = False
        keep.close()
    for s in socks:
        s.close()
    return ok


def mode_busy(args, n, path):
    req = ("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
           % (path, args.token)).encode()
    socks = open_many(args, n, req, False)
    time.sleep(0.3)
    ok = check_probe(args, "%d requests being answered" % n)
    # a request other than a probe, past the table: 503 on a probe's place
    s = connect(args.server, args.server[0])
    s.settimeout(args.probe_timeout)
    s.sendall(req)
    try:
        data = s.recv(4096)
    except OSError as e:
        data = str(e).encode()
    s.close()
    line = data.split(b"\r\n", 1)[0]
    print("%s past the table: %r" % (path, line))
    if not line.startswith(b"HTTP/1.1 503"):
        print("FAILED: expected 503 on a place kept for the probes, got %r" % data[:200])
        ok = False
    elif b"kept for /healthz and /readyz" not in data:
        print("FAILED: the 503 does not say why: %r" % data[:400])
        ok = False
    for s in socks:
        s.close()
    return ok


def mode_flood(args, n):
    counts = {"done": 0, "failed": 0}
    lock = threading.Lock()

    def worker(k):
        for i in range(k, n, args.threads):
            try:
                s = connect(args.server, args.sources[i % len(args.sources)], 1.0)
                if i % 3 == 1:
                    s.sendall(PARTIAL)
                elif i % 3 == 2:     # a reset instead of a FIN
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
                r = "done"
            except OSError:
                r = "failed"
            with lock:
                counts[r] += 1

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(args.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("flood: %d connections opened and dropped in %.1f s (%d connects failed or "
          "timed out)" % (counts["done"], time.monotonic() - t0, counts["failed"]))
    return check_probe(args, "after %d dropped connections" % n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--from", dest="sources", required=True)
    ap.add_argument("--token", default="")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--probe-timeout", type=float, default=10.0)
    ap.add_argument("--close-within", type=float, default=5.0)
    ap.add_argument("mode")
    ap.add_argument("n", type=int)
    ap.add_argument("path", nargs="?")
    args = ap.parse_args()
    host, port = args.server.rsplit(":", 1)
    args.server = (host, int(port))
    args.sources = args.sources.split(",")
    if args.mode == "halfclose":
        ok = mode_halfclose(args, args.n)
    elif args.mode == "held":
        ok = mode_held(args, args.n)
    elif args.mode == "busy":
        ok = mode_busy(args, args.n, args.path)
    elif args.mode == "flood":
        ok = mode_flood(args, args.n)
    else:
        ap.error("unknown mode " + args.mode)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
