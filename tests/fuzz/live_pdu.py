#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fuzz_pdu's inputs against a running isergwd, over real TCP connections.

The in-process target (fuzz_pdu.c) drives the core with the datamover faked,
one reactor and memory LUNs. This plays the same inputs, the grown corpus
included, from outside: each input logs in over TCP as fuzz_pdu's does (the
session shape from its first two bytes), its records become bytes on real
sockets (PDUs with digests as negotiated and CmdSN filled in where the record
says, raw bytes, deliveries split where the input splits them, more
connections, reinstatement, hang-ups), and everything the target answers is
read and dropped. What the in-process target fakes is left out: holding and
releasing backstore I/O (0xc2-0xc4) are ignored.

After every input (and its sockets closed), and at the end, the daemon must
still be alive and a fresh login must reach full feature phase within
--answer-s seconds; the script stops at the first input after which it is not,
naming the input. The daemon's log is for the caller to check (sanitizer
reports, err lines): see tests/fuzz/live.sh.

  live_pdu.py --addr A --port P [--pid PID] [--answer-s S] [--seconds N]
              [--limit N] DIR_OR_FILE...

The target must be FAKE_GW_TARGET (iqn.2026-11.org.isergw:fuzz) with LUNs 0
and 1, open to any initiator, no CHAP.
"""
import argparse
import errno
import os
import select
import socket
import struct
import sys
import time

TARGET = "iqn.2026-11.org.isergw:fuzz"
INITIATOR = "iqn.2026-11.org.example:fuzz-host"
FIRST_CMDSN = 1
MAX_CONNS = 4
STREAM_MAX = 4 << 20
IRDSL = (512, 4096, 8192, 262144)
BURST = ((262144, 16776192), (512, 512), (4096, 16384), (65536, 65536))
HAS_CMDSN = {0x00, 0x01, 0x02, 0x03, 0x04, 0x06}

_T = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _T.append(_c)


def crc32c(data, crc=0xFFFFFFFF):
    t = _T
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def digest(*parts):
    crc = 0xFFFFFFFF
    for p in parts:
        crc = crc32c(p, crc)
    return struct.pack("<I", crc ^ 0xFFFFFFFF)


class Input:
    def __init__(self, data):
        self.d = data
        self.p = 0

    @property
    def left(self):
        return len(self.d) - self.p

    def take(self, n):
        b = self.d[self.p:self.p + n]
        self.p += len(b)
        return b + bytes(n - len(b))


class Conn:
    """One initiator connection: what it has not sent yet, and its CmdSN."""

    def __init__(self, sock, hd, dd, max_dsl):
        self.s = sock
        self.hd, self.dd, self.max_dsl = hd, dd, max_dsl
        self.cmd_sn = FIRST_CMDSN
        self.dead = False

    def drain(self):
        """Read and drop whatever the target sent; note its end."""
        while not self.dead:
            try:
                r, _, _ = select.select([self.s], [], [], 0)
                if not r:
                    return
                if not self.s.recv(1 << 20):
                    self.dead = True
            except OSError:
                self.dead = True

    def send(self, data, wait_s):
        if self.dead or not data:
            return
        view = memoryview(data)
        end = time.monotonic() + wait_s
        while view and not self.dead:
            self.drain()
            try:
                _, w, _ = select.select([], [self.s], [], 0.05)
                if w:
                    n = self.s.send(view)
                    view = view[n:]
            except OSError:
                self.dead = True
            if time.monotonic() > end:
                return   # the target reads no more of it: what the input does
        self.drain()

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def login_pdu(b0, b1, isid_no):
    keys = [
        "InitiatorName=" + INITIATOR, "SessionType=Normal", "TargetName=" + TARGET,
        "HeaderDigest=" + ("CRC32C" if b0 & 1 else "None"),
        "DataDigest=" + ("CRC32C" if b0 & 2 else "None"),
        "InitialR2T=No", "ImmediateData=Yes",
        "MaxRecvDataSegmentLength=%u" % IRDSL[(b1 >> 3) & 3],
        "FirstBurstLength=%u" % BURST[(b0 >> 6) & 3][0],
        "MaxBurstLength=%u" % BURST[(b0 >> 6) & 3][1],
        "MaxOutstandingR2T=16", "ErrorRecoveryLevel=0",
    ]
    data = b"".join(k.encode() + b"\0" for k in keys)
    isid = bytes([0x40, 0x00, 0x01, 0x37, 0x00, isid_no & 0xFF])
    bhs = struct.pack(">BBBBI6sHIHHII16x", 0x43, 0x80 | (1 << 2) | 3, 0, 0, len(data), isid, 0,
                      0x1000, 1, 0, FIRST_CMDSN, 0)
    assert len(bhs) == 48
    return bhs + data + bytes(-len(data) % 4)


def recv_pdu(s, hd, deadline):
    """One PDU's BHS and data (digests skipped), or None."""
    buf = b""
    need = 48

    def fill(n):
        nonlocal buf
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            s.settimeout(left)
            try:
                b = s.recv(n - len(buf))
            except OSError:
                return False
            if not b:
                return False
            buf += b
        return True

    if not fill(need):
        return None
    ahs = buf[4] * 4
    dsl = int.from_bytes(buf[5:8], "big")
    total = 48 + ahs + (4 if hd else 0) + dsl + (-dsl % 4)
    if not fill(total):
        return None
    return buf


def connect_login(addr, port, b0, b1, isid_no, answer_s):
    """A connection in full feature phase, or (None, why)."""
    deadline = time.monotonic() + answer_s
    try:
        s = socket.create_connection((addr, port), timeout=answer_s)
    except OSError as e:
        return None, "connect: %s" % e
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        s.sendall(login_pdu(b0, b1, isid_no))
    except OSError as e:
        s.close()
        return None, "login send: %s" % e
    r = recv_pdu(s, False, deadline)
    if r is None:
        s.close()
        return None, "no Login Response within %.0f s" % answer_s
    if r[0] & 0x3F != 0x23 or r[36] != 0 or not r[1] & 0x80 or r[1] & 3 != 3:
        s.close()
        return None, "login refused: opcode %#x class %d detail %d" % (r[0], r[36], r[37])
    keys = r[48:48 + int.from_bytes(r[5:8], "big")].split(b"\0")
    kv = dict(k.split(b"=", 1) for k in keys if b"=" in k)
    hd = kv.get(b"HeaderDigest") == b"CRC32C"
    dd = kv.get(b"DataDigest") == b"CRC32C"
    max_dsl = int(kv.get(b"MaxRecvDataSegmentLength", b"8192"))
    s.setblocking(False)
    return Conn(s, hd, dd, max_dsl), None


def play(data, addr, port, answer_s):
    """One input; returns None, or why the target did not take the login."""
    inp = Input(data)
    b0 = inp.take(1)[0]
    b1 = inp.take(1)[0]
    conns = []
    c, why = connect_login(addr, port, b0, b1, 1, answer_s)
    if not c:
        return why
    conns.append(c)
    cur = 0
    stream = bytearray()
    try:
        while inp.left:
            cs = conns[cur]
            k = inp.take(1)[0]
            if k < 0xC0:
                bhs = bytearray(inp.take(48))
                if k & 4 and bhs[0] & 0x3F in HAS_CMDSN:
                    struct.pack_into(">I", bhs, 24, cs.cmd_sn)
                    if not bhs[0] & 0x40:
                        cs.cmd_sn = (cs.cmd_sn + 1) & 0xFFFFFFFF
                ahs = inp.take(bhs[4] * 4)
                if len(stream) < STREAM_MAX:
                    stream += bhs + ahs
                if cs.hd:
                    stream += inp.take(4) if k & 1 else digest(bytes(bhs), ahs)
                dsl = int.from_bytes(bhs[5:8], "big")
                if dsl > cs.max_dsl:
                    continue
                if dsl > inp.left:
                    stream += inp.d[inp.p:]
                    inp.p = len(inp.d)
                    continue
                d = inp.take(dsl)
                pad = bytes(-dsl % 4)
                if len(stream) < STREAM_MAX:
                    stream += d + pad
                if cs.dd and dsl:
                    stream += inp.take(4) if k & 2 else digest(d, pad)
            elif k == 0xC0:
                n = int.from_bytes(inp.take(2), "big")
                n = len(stream) if not n or n > len(stream) else n
                cs.send(bytes(stream[:n]), answer_s)
                del stream[:n]
            elif k == 0xC1:
                n = inp.take(1)[0]
                stream += inp.take(n)
            elif k == 0xC5:
                cs.send(bytes(stream), answer_s)
                stream.clear()
                try:
                    cs.s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                cs.drain()
            elif k == 0xC6:
                b = inp.take(1)[0]
                if len(conns) == MAX_CONNS:
                    continue
                cs.send(bytes(stream), answer_s)
                stream.clear()
                isid = 1 if b & 1 else len(conns) + 1
                c, why = connect_login(addr, port, b0, b1, isid, answer_s)
                if not c:
                    # a login the target refuses or does not answer now: as for
                    # the first one, the caller decides (it must answer later)
                    return "connection %d: %s" % (len(conns) + 1, why)
                conns.append(c)
                cur = len(conns) - 1
            elif k == 0xC7:
                b = inp.take(1)[0]
                cs.send(bytes(stream), answer_s)
                stream.clear()
                cur = b % len(conns)
        conns[cur].send(bytes(stream), answer_s)
    finally:
        for c in conns:
            c.drain()
            c.close()
    return None


def inputs(paths):
    for p in paths:
        if os.path.isdir(p):
            for n in sorted(os.listdir(p)):
                f = os.path.join(p, n)
                if os.path.isfile(f) and not n.startswith("README"):
                    yield f
        elif os.path.isfile(p):
            yield p


def rewrites(ap, specs, same_length=False):
    """--rewrite FROM=TO arguments as (bytes, bytes) pairs; ap.error on a bad one"""
    out = []
    for r in specs:
        f, sep, t = r.partition("=")
        if not sep or not f or (same_length and len(f.encode()) != len(t.encode())):
            ap.error("--rewrite FROM=TO%s: %s" % (", both of the same length" if same_length else "", r))
        out.append((f.encode(), t.encode()))
    return out


def rewritten(data, pairs):
    for f, t in pairs:
        data = data.replace(f, t)
    return data


class Inputs:
    """The inputs of a replay (live_rest.py, live_ctl.py) as (path, bytes), rewritten, within
    --limit and --seconds, with a line every 500; failed() names the one played last."""

    def __init__(self, name, paths, limit=0, seconds=0, pairs=()):
        self.name, self.paths, self.limit, self.seconds, self.pairs = name, paths, limit, seconds, pairs
        self.n = 0
        self.t0 = time.monotonic()

    def __iter__(self):
        for path in inputs(self.paths):
            if (self.limit and self.n >= self.limit) or \
               (self.seconds and time.monotonic() - self.t0 >= self.seconds):
                return
            with open(path, "rb") as f:
                data = f.read()
            yield path, rewritten(data, self.pairs)
            self.n += 1
            if self.n % 500 == 0:
                print("%s: %d inputs, %.0f s" % (self.name, self.n, self.elapsed()), flush=True)

    def elapsed(self):
        return time.monotonic() - self.t0

    def failed(self, path, why):
        """the exit status after input path (being played) failed"""
        print("%s: after input %d (%s): %s" % (self.name, self.n + 1, path, why), file=sys.stderr)
        print("%s: FAILED" % self.name)
        return 1


def alive(pid):
    """the process is there and not a zombie (its parent, the shell, may not have reaped it yet)"""
    if not pid:
        return True
    try:
        os.kill(pid, 0)
    except OSError as e:
        if e.errno != errno.EPERM:
            return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def replay(name, doc, play, health, play_wait_s=None):
    """The command line of live_NAME.py: every input played by play(data,
    addr, port, wait_s), then health(addr, port, answer_s) must answer None.
    Exit status 0, or 1 at the first input after which the target is gone or
    does not answer."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, default=0, help="the daemon's pid: must stay alive")
    ap.add_argument("--answer-s", type=float, default=10,
                    help="a new login must be answered within this after every input")
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long (0: all)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many inputs (0: all)")
    ap.add_argument("paths", nargs="+", metavar="DIR_OR_FILE")
    a = ap.parse_args()

    t0 = time.monotonic()
    n = refused = 0
    slowest = (0.0, "")
    for f in inputs(a.paths):
        if (a.limit and n >= a.limit) or (a.seconds and time.monotonic() - t0 > a.seconds):
            break
        with open(f, "rb") as fh:
            data = fh.read()
        t = time.monotonic()
        if play(data, a.addr, a.port, play_wait_s or a.answer_s):
            refused += 1
        n += 1
        # the target must still be there and answer a new initiator
        if not alive(a.pid):
            print("%s: isergwd (pid %d) is gone after input %s" % (name, a.pid, f))
            return 1
        why = health(a.addr, a.port, a.answer_s)
        if why:
            print("%s: after input %s a new login fails: %s" % (name, f, why))
            return 1
        dt = time.monotonic() - t
        if dt > slowest[0]:
            slowest = (dt, os.path.basename(f))
        if n % 500 == 0:
            print("%s: %d inputs, %.0f s" % (name, n, time.monotonic() - t0), flush=True)
    el = time.monotonic() - t0
    print("%s: %d inputs in %.0f s (%.0f/s), %d with a connection the target refused or did "
          "not answer at once, the slowest %.2f s (%s); the target answered a new login after "
          "every one" % (name, n, el, n / el if el else 0, refused, slowest[0], slowest[1]))
    return 0


def health(addr, port, answer_s):
    c, why = connect_login(addr, port, 0, 0, 0x7F, answer_s)
    if c:
        c.close()
    return why


if __name__ == "__main__":
    sys.exit(replay("live_pdu", __doc__, play, health))
