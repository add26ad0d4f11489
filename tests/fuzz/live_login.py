#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fuzz_login's inputs against a running isergwd, over real TCP connections.

fuzz_login.c drives core/login.c and text.c directly, with conn.c's part
played by the harness. This plays the same inputs from outside, through
conn.c's login phase and real sockets, against the first of its two
configurations (live.sh writes it: a target with CHAP and mutual CHAP, one
open, one behind an ACL with per-initiator CHAP). Per record:
  0  a Login Request (flags, text and the BHS toggles as fuzz_login reads
     them); its answer read, CHAP challenges and digests noted
  1  a Text Request in full feature phase (before it: the connection closes,
     as conn.c drops it), with CmdSN counted so that it is not ignored
  2  the initiator's CHAP answer to the last challenge (whose secret, hex or
     base64, mutual CHAP, a flipped bit, T to the next stage)
  3  a raw PDU: its BHS and data as the input has them
  4  the connection closes; the next record opens a new one
The answers are read and dropped (fuzz_login checks them; here the target
must only stay up and answer). Only the mode byte's configuration and portal
bits are not used: one TCP portal, configuration 0.

After every input the daemon must be alive and answer a new login to the
open target within --answer-s seconds.

  live_login.py --addr A --port P [--pid PID] [--answer-s S] [--seconds N]
                [--limit N] DIR_OR_FILE...
"""
import base64
import hashlib
import socket
import struct
import sys
import time

import live_pdu as lp

OPEN_TARGET = "iqn.2026-01.org.isergw:open"
# configuration 0 of fuzz_login.c: (user, secret) of targets[0].chap,
# targets[2].acls[0].chap, discovery CHAP (none in configuration 0)
CREDS = (("iuser", "initiator-secret"), ("acluser", "acl-secret-1234"), ("", ""))
ISID = bytes([0x80, 0x12, 0x34, 0x56, 0x00, 0x01])


class Conn:
    def __init__(self, addr, port, wait_s):
        self.s = socket.create_connection((addr, port), timeout=wait_s)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.wait_s = wait_s
        self.isid = bytearray(ISID)
        self.tsih, self.cid, self.itt, self.cmd_sn, self.vmin = 0, 1, 0x1234, 77, 0
        self.ffp = self.closed = False
        self.hd = self.dd = False
        self.alg, self.chap_id, self.chal = 0, 0, b""
        self.ans = b""
        self.text_itt, self.last_ttt = 0, 0xFFFFFFFF

    def send(self, data):
        try:
            self.s.settimeout(self.wait_s)
            self.s.sendall(data)
        except OSError:
            self.closed = True

    def recv(self, wait):
        """One PDU (BHS + data, no digests) or None."""
        if self.closed:
            return None
        r = lp.recv_pdu(self.s, self.hd, time.monotonic() + wait)
        if r is None:
            self.closed = True
        return r

    def login_req(self, flags, data):
        bhs = struct.pack(">BBBBI6sHIHHII16x", 0x43, flags, 0, self.vmin, len(data),
                          bytes(self.isid), self.tsih, self.itt, self.cid, 0, self.cmd_sn, 1)
        self.send(bhs + data + bytes(-len(data) % 4))
        self.on_login_rsp(self.recv(self.wait_s))

    def on_login_rsp(self, r):
        if r is None:
            return
        if r[0] & 0x3F != 0x23 or r[36] != 0:
            self.closed = True        # a failed login: the target closes
            return
        self.ans += r[48:48 + int.from_bytes(r[5:8], "big")]
        if not r[1] & 0x40:            # C=0: the answer is whole
            kv = {}
            for k in self.ans.split(b"\0"):
                if b"=" in k:
                    a, b = k.split(b"=", 1)
                    kv[a] = b
            self.ans = b""
            if b"CHAP_A" in kv:
                try:
                    self.alg = int(kv[b"CHAP_A"])
                    self.chap_id = int(kv.get(b"CHAP_I", b"0"))
                    c = kv.get(b"CHAP_C", b"")
                    self.chal = bytes.fromhex(c[2:].decode()) if c[:2].lower() == b"0x" else b""
                except ValueError:
                    pass
            if kv.get(b"HeaderDigest") == b"CRC32C":
                self.hd = True
            if kv.get(b"DataDigest") == b"CRC32C":
                self.dd = True
        if r[1] & 0x80 and r[1] & 3 == 3:
            self.ffp = True
            self.text_itt = self.itt + 1

    def ffp_pdu(self, bhs, data):
        """A PDU in full feature phase, digests as negotiated; the answer read."""
        bhs = bytes(bhs)
        out = bhs + (lp.digest(bhs) if self.hd else b"")
        pad = bytes(-len(data) % 4)
        out += data + pad
        if self.dd and data:
            out += lp.digest(data, pad)
        self.send(out)
        r = self.recv(0.5)
        if r is not None and r[0] & 0x3F == 0x24:
            self.last_ttt = int.from_bytes(r[20:24], "big")

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass
        self.closed = True


def chap_answer(c, flags, d):
    user, secret = CREDS[flags & 3] if flags & 3 != 3 else (CREDS[0][0], "not-the-secret")
    h = hashlib.sha256 if c.alg == 7 else hashlib.md5
    dig = bytearray(h(bytes([c.chap_id]) + secret.encode() + c.chal).digest())
    if flags & 0x10:
        dig[0] ^= 1

    def enc(b):
        return ("0b" + base64.b64encode(bytes(b)).decode()) if flags & 4 else "0x" + bytes(b).hex()

    keys = ["CHAP_N=" + user, "CHAP_R=" + enc(dig)]
    if flags & 8 and len(d) >= 1:
        keys += ["CHAP_I=%u" % d[0], "CHAP_C=" + enc(d[1:513])]
    text = b"".join(k.encode() + b"\0" for k in keys)
    fl = (0x80 | 3) if flags & 0x40 else (0x80 | 1) if flags & 0x20 else 0
    # CSG: the security stage (0)
    c.login_req(fl, text)


def play(data, addr, port, wait_s):
    if not data:
        return None
    off = 1
    try:
        c = Conn(addr, port, wait_s)
    except OSError as e:
        return "connect: %s" % e
    try:
        while off + 4 <= len(data):
            op, flags = data[off], data[off + 1]
            n = min(int.from_bytes(data[off + 2:off + 4], "big"), len(data) - off - 4)
            d = data[off + 4:off + 4 + n]
            off += 4 + n
            if c.closed:
                c.close()
                try:
                    c = Conn(addr, port, wait_s)
                except OSError as e:
                    return "connect: %s" % e
            k = op & 7
            if k == 0:
                if op & 0x08:
                    c.isid[5] ^= 1
                if op & 0x10:
                    c.tsih ^= 1
                if op & 0x20:
                    c.cid ^= 1
                if op & 0x40:
                    c.itt ^= 1
                if op & 0x80:
                    c.vmin ^= 1
                if not c.ffp:
                    c.login_req(flags, d)
            elif k == 1:
                if not c.ffp:
                    c.close()
                    continue
                if flags & 2:
                    c.text_itt += 1
                bhs = struct.pack(">BBHI8sIIII16x", 0x04, flags & 0xC0, 0, len(d), bytes(8),
                                  c.text_itt, c.last_ttt if flags & 1 else 0xFFFFFFFF,
                                  c.cmd_sn, 0)
                c.cmd_sn = (c.cmd_sn + 1) & 0xFFFFFFFF
                c.ffp_pdu(bhs, d)
            elif k == 2:
                if not c.ffp:
                    chap_answer(c, flags, d)
            elif k == 3:
                if len(d) < 48:
                    continue
                bhs = d[:48]
                dsl = min(int.from_bytes(bhs[5:8], "big"), len(d) - 48)
                body = d[48:48 + dsl]
                if not c.ffp:
                    c.send(bhs + body + bytes(-dsl % 4))
                    c.on_login_rsp(c.recv(wait_s))
                else:
                    c.ffp_pdu(bhs, body)
            elif k == 4:
                c.close()
    finally:
        c.close()
    return None


def health(addr, port, wait_s):
    """A login to the open target, straight to full feature phase: None or why."""
    try:
        s = socket.create_connection((addr, port), timeout=wait_s)
    except OSError as e:
        return "connect: %s" % e
    try:
        keys = ["InitiatorName=iqn.2026-11.org.example:live-probe", "SessionType=Normal",
                "TargetName=" + OPEN_TARGET, "HeaderDigest=None", "DataDigest=None"]
        data = b"".join(k.encode() + b"\0" for k in keys)
        bhs = struct.pack(">BBBBI6sHIHHII16x", 0x43, 0x87, 0, 0, len(data),
                          bytes([0x40, 0, 0, 0, 0, 0x7F]), 0, 1, 1, 0, 1, 0)
        deadline = time.monotonic() + wait_s
        for _ in range(4):
            s.sendall(bhs + data + bytes(-len(data) % 4))
            r = lp.recv_pdu(s, False, deadline)
            if r is None:
                return "no Login Response within %.0f s" % wait_s
            if r[0] & 0x3F != 0x23 or r[36] != 0:
                return "login refused: class %d detail %d" % (r[36], r[37])
            if r[1] & 0x80 and r[1] & 3 == 3:
                return None
            # the target offered keys of its own: agree to those, ask again
            mine = {k.split("=")[0].encode() for k in keys}
            data = b"".join(k + b"\0" for k in r[48:48 + int.from_bytes(r[5:8], "big")].split(b"\0")
                            if b"=" in k and k.split(b"=")[0] not in mine)
            bhs = bhs[:5] + len(data).to_bytes(3, "big") + bhs[8:]
        return "no transit to full feature phase after 4 Login Requests"
    except OSError as e:
        return str(e)
    finally:
        s.close()


if __name__ == "__main__":
    # a record the target does not answer at once (it waits for more) costs a
    # short wait: 1 s per read, not --answer-s
    sys.exit(lp.replay("live_login", __doc__, play, health, play_wait_s=1.0))
