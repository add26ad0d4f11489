#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fuzz_rest's inputs against a running isergw-api, over real HTTP connections.

The in-process target (fuzz_rest.c) hands each request to the HTTP server's
handler with libmicrohttpd's parsing and the HA agent faked. This plays the
same inputs, a grown corpus too, from outside: each input's requests go, one
after another, on one keep-alive TCP connection (a new one when the server
closed it) to an isergw-api that runs standalone (--config FILE) beside a
real isergwd, so that the writes the inputs make are checked by isergwd's
validator and applied by it as reloads. Every request must be answered with
a well-formed HTTP response within --answer-s seconds.

How an input becomes bytes: a request is METHOD PATH[?QUERY], header lines,
an empty line, the body (fuzz_rest.c's format, requests separated by a line
"%%"). The path's bytes that cannot stand in a request line (controls,
space, DEL, non-ASCII) are sent percent-encoded, which the server decodes
back, as the in-process target decodes them. Header lines without a colon
and "@agent" lines (the fake agent's faults) are left out; so are
Content-Length, Transfer-Encoding, Host and Connection, which this script
sets (the body's length; keep-alive). --rewrite FROM=TO replaces bytes of
every input before that (the LUN paths of the seeds, kept in the scratch
directory).

After every input: both daemons alive, GET /healthz 200, and PUT
/api/v1/config with the first configuration 200, so that the next input
starts from it as the in-process target's do (and a write still works).
The script stops at the first input after which that fails, naming it.

  live_rest.py --addr A --port P --token T --config FILE [--pid PID]...
               [--answer-s S] [--seconds N] [--limit N] [--rewrite FROM=TO]...
               DIR_OR_FILE...
"""
import argparse
import json
import re
import socket
import sys
import time

import live_pdu as lp

REQS_MAX = 12   # fuzz_rest.c: the requests of one input
FAKE_GEN = 7    # fake_api.c: the agent document's generation when an execution starts
WRITES = {b"POST", b"PUT", b"PATCH", b"DELETE"}
ETAG = re.compile(rb'"g([0-9]+)"')
DROPPED = {b"content-length", b"transfer-encoding", b"host", b"connection"}
PLAIN = set(range(0x21, 0x7F))
TCHAR = PLAIN - set(b'"(),/:;<=>?@[\\]{}')     # RFC 9110 token characters


class Hang(Exception):
    pass


def c_str(b):
    """the bytes as far as a C string of them goes (fuzz_rest.c parses with strchr)"""
    i = b.find(b"\0")
    return b if i < 0 else b[:i]


def one_cr(line):
    return line[:-1] if line.endswith(b"\r") else line


def requests_of(data):
    """fuzz_rest.c's split and parse: [(method, target, [(name, value)], body)]"""
    out = []
    rest = data
    n = 0
    # every segment counts towards REQS_MAX, parsed or not, as in fuzz_rest.c
    while rest and n < REQS_MAX:
        n += 1
        i = rest.find(b"\n%%\n")
        one, rest = (rest, b"") if i < 0 else (rest[:i], rest[i + 4:])
        lines = one.split(b"\n")
        first = c_str(one_cr(lines[0]))
        sp = first.find(b" ")
        if not first or sp < 0:
            continue
        method, target = first[:sp], first[sp + 1:]
        hdrs = []
        k = 1
        blank = False
        while k < len(lines):
            line = one_cr(lines[k])
            k += 1
            if not line:
                blank = True
                break
            if line.startswith(b"@agent "):
                continue
            line = c_str(line)
            c = line.find(b":")
            if c < 0:
                continue
            # a leading space or tab would fold the line into the one before
            name, value = line[:c].lstrip(b" \t"), line[c + 1:].lstrip(b" \t")
            if name.strip().lower() in DROPPED:
                continue
            hdrs.append((name, value))
        # the body: what follows the empty line (all of it, as fuzz_rest.c takes it)
        body = b"\n".join(lines[k:]) if blank else b""
        out.append((method, target, hdrs, body))
    return out


def encode_target(t):
    return b"".join(bytes([c]) if c in PLAIN else b"%%%02X" % c for c in t)


def request_bytes(host, method, target, hdrs, body):
    r = [method + b" " + (encode_target(target) or b"/") + b" HTTP/1.1", b"Host: " + host]
    for name, value in hdrs:
        # a CR inside a line would end it here, not in-process
        r.append(name.replace(b"\r", b" ") + b": " + value.replace(b"\r", b" "))
    if body or method in (b"POST", b"PUT", b"PATCH"):
        r.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(r) + b"\r\n\r\n" + body


class Conn:
    def __init__(self, addr, port, answer_s):
        self.addr, self.port, self.answer_s = addr, port, answer_s
        self.s = None
        self.buf = b""

    def close(self):
        if self.s:
            self.s.close()
        self.s = None
        self.buf = b""

    def _recv(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Hang("no complete answer within %.0f s" % self.answer_s)
        self.s.settimeout(left)
        try:
            b = self.s.recv(65536)
        except socket.timeout:
            raise Hang("no complete answer within %.0f s" % self.answer_s) from None
        except OSError:
            b = b""
        return b

    def _until(self, mark, deadline):
        while mark not in self.buf:
            b = self._recv(deadline)
            if not b:
                return None
            self.buf += b
        i = self.buf.index(mark)
        head, self.buf = self.buf[:i], self.buf[i + len(mark):]
        return head

    def _take(self, n, deadline):
        while len(self.buf) < n:
            b = self._recv(deadline)
            if not b:
                return None
            self.buf += b
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def exchange(self, req, head_only=False):
        """(status, headers, body) of one request; None: the server closed without an answer.
        A connection kept from an earlier request that turns out closed is opened again once."""
        for attempt in (0, 1):
            reused = self.s is not None
            if self.s is None:
                self.s = socket.create_connection((self.addr, self.port), timeout=self.answer_s)
            try:
                self.s.sendall(req)
            except OSError:
                pass    # the server may answer and close before reading all of it
            try:
                r = self._answer(head_only)
            except (ValueError, IndexError) as e:
                raise Hang("a malformed answer: %s" % e) from None
            if r is not None or not reused or attempt:
                return r

    def _answer(self, head_only):
        deadline = time.monotonic() + self.answer_s
        while True:
            head = self._until(b"\r\n\r\n", deadline)
            if head is None:
                self.close()
                return None
            lines = head.split(b"\r\n")
            parts = lines[0].split(b" ", 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
                raise Hang("not an HTTP status line: %r" % lines[0][:80])
            status = int(parts[1])
            # 100 Continue and the like come before the answer
            if not 100 <= status < 200 or status == 101:
                break
        h = {}
        for line in lines[1:]:
            n, _, v = line.partition(b":")
            h[n.strip().lower()] = v.strip()
        body = b""
        if head_only or status in (204, 304) or 100 <= status < 200:
            pass
        elif h.get(b"transfer-encoding", b"").lower() == b"chunked":
            while True:
                size = self._until(b"\r\n", deadline)
                if size is None:
                    raise Hang("a chunked answer cut short")
                n = int(size.split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    # the trailer, up to its empty line
                    while self._until(b"\r\n", deadline):
                        pass
                    break
                got = self._take(n, deadline)
                if got is None or self._until(b"\r\n", deadline) != b"":
                    raise Hang("a chunked answer cut short")
                body += got
        elif b"content-length" in h:
            got = self._take(int(h[b"content-length"]), deadline)
            if got is None:
                raise Hang("an answer shorter than its Content-Length")
            body = got
        else:
            while True:
                b = self._recv(deadline)
                if not b:
                    break
                self.buf += b
            body, self.buf = self.buf, b""
            h[b"connection"] = b"close"
        if h.get(b"connection", b"").lower() == b"close":
            self.close()
        return status, h, body


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--token", required=True, help="an admin token, for the checks after each input")
    ap.add_argument("--config", required=True, help="the first configuration (JSON)")
    ap.add_argument("--pid", type=int, action="append", default=[])
    ap.add_argument("--answer-s", type=float, default=15.0)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--rewrite", action="append", default=[])
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    rewrites = lp.rewrites(ap, a.rewrite)
    with open(a.config, "rb") as f:
        first = f.read()
    json.loads(first)
    host = ("%s:%d" % (a.addr, a.port)).encode()
    auth = [(b"Authorization", b"Bearer " + a.token.encode())]
    reset = request_bytes(host, b"PUT", b"/api/v1/config",
                          auth + [(b"Content-Type", b"application/json")], first)
    health = request_bytes(host, b"GET", b"/healthz", [], b"")
    get_config = request_bytes(host, b"GET", b"/api/v1/config", auth, b"")
    codes = {}
    n_req = n_closed = 0
    run = lp.Inputs("live_rest", a.paths, a.limit, a.seconds, rewrites)
    for path, data in run:
        c = Conn(a.addr, a.port, a.answer_s)
        why = None
        try:
            # If-Match: the fake agent's generations ("g7", then one more a write)
            # stand for the ETags the file had then (a digest of it, standalone)
            r = c.exchange(get_config)
            etags = {FAKE_GEN: r[1][b"etag"]} if r and r[0] == 200 and b"etag" in r[1] else {}
            gen = FAKE_GEN
            for method, target, hdrs, body in requests_of(data):
                hdrs = [(n, ETAG.sub(lambda m: etags.get(int(m.group(1)), m.group(0)), v))
                        if n.strip().lower() == b"if-match" else (n, v) for n, v in hdrs]
                req = request_bytes(host, method, target, hdrs, body)
                r = c.exchange(req, head_only=(method == b"HEAD"))
                n_req += 1
                if r is None:
                    # libmicrohttpd closes on a request line whose method is no token
                    token = method and all(ch in TCHAR for ch in method)
                    n_closed += 1 if token else 0
                    key = "closed" if token else "closed (method not a token)"
                    codes[key] = codes.get(key, 0) + 1
                    continue
                codes[r[0]] = codes.get(r[0], 0) + 1
                if 200 <= r[0] < 300 and method in WRITES:
                    gen += 1
                    if b"etag" in r[1]:
                        etags[gen] = r[1][b"etag"]
            c.close()
            gone = [p for p in a.pid if not lp.alive(p)]
            why = "process %d is gone" % gone[0] if gone else None
            if not why:
                r = Conn(a.addr, a.port, a.answer_s).exchange(health)
                if not r or r[0] != 200:
                    why = "GET /healthz: %s" % (r[0] if r else "no answer")
            if not why:
                r = Conn(a.addr, a.port, a.answer_s).exchange(reset)
                if not r or r[0] != 200:
                    why = "PUT /api/v1/config of the first configuration: %s %s" % (
                        r[0] if r else "no answer", r[2][:300].decode("utf-8", "replace") if r else "")
        except Hang as e:
            why = str(e)
        except OSError as e:
            why = "the connection: %s" % e
        finally:
            c.close()
        # a daemon gone says more than what the connection saw of it
        gone = [p for p in a.pid if not lp.alive(p)]
        if gone and why and not why.startswith("process"):
            why = "process %d is gone (%s)" % (gone[0], why)
        if why:
            return run.failed(path, why)
    n_in, dt = run.n, run.elapsed()
    summary = ", ".join("%s %d" % (k, v) for k, v in sorted(codes.items(), key=lambda kv: str(kv[0])))
    print("live_rest: %d inputs, %d requests in %.1f s (answers: %s); %d with a method that is a "
          "token closed without an answer; the daemons alive and the first configuration taken "
          "again after each" %
          (n_in, n_req, dt, summary or "none", n_closed))
    if n_in == 0:
        print("live_rest: FAILED: no input")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
