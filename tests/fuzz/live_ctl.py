#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fuzz_ctl's inputs against real isergwd processes, over their control socket.

The in-process target (fuzz_ctl.c) runs the control code on a socketpair
with the portals' sockets and the backing stores faked. This plays the same
inputs, a grown corpus too, from outside: for every input a real isergwd is
started from a configuration file (the managed one when the input's mode
byte says so: bit 0), the input's records are written to its control
socket as the in-process target writes them (bytes, frames, shutting the
writing side, closing and connecting again, ApplyConfig of JSON with the
record's epoch), and every frame the
daemon sends back must be a Reply whose status is 0 or a negative errno
(down to -4095) and that says why when it is not 0. After the input, a new
connection's GetStatus must be answered (status 0, a StatusInfo), and on
SIGTERM the daemon must exit 0 within --answer-s seconds. The script stops
at the first input after which that fails, naming it. The daemons' output
goes to --log, for the caller to check (sanitizer reports, err lines).

What cannot be played from outside: time passing is a real pause of at most
--pause-ms, so timers of seconds (an ALUA transition, the lease) do not fire,
and a lease's deadline is read against the real clock, not the input's; the
portals' listen faults (mode bits 3-4, record 2/3), the client of another uid
(bit 1) and ReloadConfig without a file (bit 2: there is always one here).

--rewrite FROM=TO replaces bytes of every input before it is played, and
only with bytes of the same length (the inputs hold protobuf frames whose
lengths must stay right): the seeds' LUN paths and portal address.

  live_ctl.py --daemon PATH --config FILE --managed-config FILE --socket PATH
              --log FILE [--run-as "WORDS"] [--answer-s S] [--pause-ms MS]
              [--seconds N] [--limit N] [--rewrite FROM=TO]... DIR_OR_FILE...
"""
import argparse
import os
import select
import signal
import socket
import subprocess
import sys
import time

import live_pdu as lp

FRAME_HDR = 4
REPLY_FRAME_MAX = 16 << 20
ERRNO_MAX = 4095


class Bad(Exception):
    pass


def varint(b, i):
    v = s = 0
    while True:
        if i >= len(b):
            raise Bad("a varint cut short")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i
        if s > 63:
            raise Bad("a varint too long")


def fields(b):
    """the top-level fields of a protobuf message: {number: [(wire type, value)]}"""
    out = {}
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise Bad("field number 0")
        if wt == 0:
            v, i = varint(b, i)
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            if i + n > len(b):
                raise Bad("a fixed-size field cut short")
            v, i = b[i:i + n], i + n
        elif wt == 2:
            n, i = varint(b, i)
            if i + n > len(b):
                raise Bad("a field longer than the message")
            v, i = b[i:i + n], i + n
        else:
            raise Bad("wire type %d" % wt)
        out.setdefault(num, []).append((wt, v))
    return out


def enc_varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        out.append(c | (0x80 if v else 0))
        if not v:
            return bytes(out)


def enc_field(num, payload):
    return enc_varint(num << 3 | 2) + enc_varint(len(payload)) + payload


def frame(body):
    return len(body).to_bytes(4, "big") + body


GET_STATUS = frame(enc_field(1, b""))


def apply_config(epoch, json_bytes):
    ac = enc_varint(1 << 3) + enc_varint(epoch) + enc_field(2, json_bytes)
    return frame(enc_field(2, ac))


def check_reply(body):
    """(status, fields) of a Reply (proto/isergw_ctl.proto); Bad if it is not one"""
    f = fields(body)
    for num, vals in f.items():
        want = 0 if num == 1 else 2 if num == 2 or 10 <= num <= 19 else None
        for wt, v in vals:
            if want is not None and wt != want:
                raise Bad("a Reply whose field %d has wire type %d" % (num, wt))
            if 10 <= num <= 19:
                fields(v)   # the payload: a message that parses
    status = 0
    if 1 in f:
        z = f[1][-1][1]
        status = (z >> 1) ^ -(z & 1)
    if status > 0 or status < -ERRNO_MAX:
        raise Bad("a Reply with status %d" % status)
    if status and not (2 in f and f[2][-1][1]):
        raise Bad("a Reply with status %d and no reason" % status)
    return status, f


class Client:
    def __init__(self, path, answer_s):
        self.path, self.answer_s = path, answer_s
        self.s = None
        self.inbuf = b""
        self.wr_shut = False
        self.replies = 0

    def connect(self):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(self.answer_s)
        self.s.connect(self.path)
        self.s.setblocking(False)
        self.inbuf = b""
        self.wr_shut = False

    def close(self):
        if self.s:
            self.s.close()
        self.s = None

    def drain(self, wait_s=0.0):
        """read what the daemon sent (waiting up to wait_s for the first bytes); check its frames"""
        if not self.s:
            return
        deadline = time.monotonic() + wait_s
        while True:
            left = max(0.0, deadline - time.monotonic())
            r, _, _ = select.select([self.s], [], [], left)
            if not r:
                break
            try:
                b = self.s.recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                b = b""
            if not b:
                self.close()
                break
            self.inbuf += b
            deadline = time.monotonic() + min(wait_s, 0.05)
        while len(self.inbuf) >= FRAME_HDR:
            n = int.from_bytes(self.inbuf[:4], "big")
            if n > REPLY_FRAME_MAX:
                raise Bad("a reply frame of %d bytes" % n)
            if len(self.inbuf) < FRAME_HDR + n:
                break
            check_reply(self.inbuf[FRAME_HDR:FRAME_HDR + n])
            self.replies += 1
            self.inbuf = self.inbuf[FRAME_HDR + n:]

    def write(self, data):
        stalls = 0
        while data and self.s and not self.wr_shut:
            try:
                n = self.s.send(data)
                data = data[n:]
                stalls = 0
                continue
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                return
            self.drain(0.05)
            stalls += 1
            if stalls > 40:
                return      # a daemon that does not read: the rest dropped, as in-process

    def call(self, req):
        """one request on a fresh blocking connection: (status, fields)"""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.answer_s)
        try:
            s.connect(self.path)
            s.sendall(req)
            buf = b""
            while True:
                if len(buf) >= FRAME_HDR:
                    n = int.from_bytes(buf[:4], "big")
                    if n > REPLY_FRAME_MAX:
                        raise Bad("a reply frame of %d bytes" % n)
                    if len(buf) >= FRAME_HDR + n:
                        return check_reply(buf[FRAME_HDR:FRAME_HDR + n])
                try:
                    b = s.recv(1 << 20)
                except socket.timeout:
                    raise Bad("no answer within %.0f s" % self.answer_s) from None
                if not b:
                    raise Bad("the connection closed without an answer")
                buf += b
        finally:
            s.close()


def records(data):
    off = 1
    while off + 3 <= len(data):
        op, n = data[off], data[off + 1] << 8 | data[off + 2]
        off += 3
        d = data[off:off + n]
        off += len(d)
        yield op, d


def play(c, data, pause_ms):
    c.connect()
    for op, d in records(data):
        kind = op & 3
        if kind == 0:
            c.write(d)
        elif kind == 1:
            c.write(len(d).to_bytes(4, "big"))
            c.write(d)
        elif kind == 2:
            sub = op >> 2
            if sub == 0:
                ms = int.from_bytes(d[:4], "big") if len(d) >= 4 else 1000
                time.sleep(min(ms, pause_ms) / 1000.0)
            elif sub == 1 and c.s and not c.wr_shut:
                try:
                    c.s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                c.wr_shut = True
            elif sub == 2:
                c.drain(0.05)
                c.close()
                c.connect()
        else:
            c.write(apply_config(op >> 2, d))
        c.drain(0.0)
    c.drain(0.2)
    c.close()


def wait_socket(path, proc, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return "isergwd exited with status %d at start" % proc.returncode
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return None
        except OSError:
            time.sleep(0.05)
        finally:
            s.close()
    return "the control socket %s did not open within %.0f s" % (path, limit)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--managed-config", required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--run-as", default="", help="words put before the daemon's command (split at spaces)")
    ap.add_argument("--answer-s", type=float, default=15.0)
    ap.add_argument("--pause-ms", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--rewrite", action="append", default=[])
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    rewrites = lp.rewrites(ap, a.rewrite, same_length=True)
    n_managed = replies = 0
    log = open(a.log, "ab")
    run = lp.Inputs("live_ctl", a.paths, a.limit, a.seconds, rewrites)
    for path, data in run:
        if not data:
            continue
        managed = bool(data[0] & 1)
        n_managed += managed
        try:
            os.unlink(a.socket)
        except OSError:
            pass
        proc = subprocess.Popen(a.run_as.split() + [a.daemon, "--config",
                                            a.managed_config if managed else a.config],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        why = None
        c = Client(a.socket, a.answer_s)
        try:
            why = wait_socket(a.socket, proc, a.answer_s)
            if not why:
                play(c, data, a.pause_ms)
                replies += c.replies
            if not why and proc.poll() is None:
                st, f = c.call(GET_STATUS)
                if st or 10 not in f:
                    why = "GetStatus: status %d, %s" % (st, "a StatusInfo" if 10 in f else "no StatusInfo")
        except Bad as e:
            why = str(e)
        except OSError as e:
            why = "the control socket: %s" % e
        except Exception as e:  # a bug of this script's: still name the input, stop the daemon
            why = "live_ctl.py: %r" % e
        finally:
            c.close()
            # exited before it was told to: a failure whatever it had answered
            if proc.poll() is not None:
                why = "isergwd exited with status %d before SIGTERM%s" % (
                    proc.returncode, " (%s)" % why if why else "")
            else:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(a.answer_s)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                    why = why or "isergwd did not stop within %.0f s of SIGTERM" % a.answer_s
                if proc.returncode != 0:
                    why = "isergwd exited with status %d%s" % (
                        proc.returncode, " (%s)" % why if why else " on SIGTERM")
        if why:
            return run.failed(path, why)
    n_in = run.n
    print("live_ctl: %d inputs (%d managed), %d replies checked in %.1f s; after each, GetStatus "
          "answered and isergwd stopped cleanly on SIGTERM" % (n_in, n_managed, replies,
                                                                run.elapsed()))
    if n_in == 0:
        print("live_ctl: FAILED: no input")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
