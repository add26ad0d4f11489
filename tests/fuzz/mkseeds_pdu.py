#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Seed corpus of fuzz_pdu (tests/fuzz/corpus/fuzz_pdu/): the input format of
tests/fuzz/fuzz_pdu.c around the PDUs an initiator sends in full feature
phase, laid out as RFC 7143 and core/iscsi_spec.h say and with the values
libiscsi's tools (iscsi-inq, iscsi-readcapacity16, iscsi-ls, iscsi-dd) and
our integration clients (tests/integration/badinput.c, taskattr.c) put in
them: INQUIRY, READ CAPACITY, REPORT LUNS, READ/WRITE with immediate,
unsolicited and solicited data, NOP-Out, Text SendTargets, task management,
task attributes, persistent reservations, UNMAP, COMPARE AND WRITE, a
32-byte CDB in an AHS, digests, split reads, Logout.

    tests/fuzz/mkseeds_pdu.py [DIR]     (default: the corpus directory)
"""
import os
import struct
import sys

AUTO_CMDSN = 0x04
RSVD = 0xFFFFFFFF


def lun(n):
    return struct.pack(">H6x", n)


def bhs(op, flags, dsl=0, ahs=0, lunf=b"\0" * 8, itt=0, w20=0, w24=0, w28=0, rest=b""):
    h = struct.pack(">BBH", op, flags, 0) + struct.pack(">B", ahs) + dsl.to_bytes(3, "big")
    h += lunf + struct.pack(">IIII", itt, w20, w24, w28) + rest
    return h.ljust(48, b"\0")


def pdu(h, data=b"", ahs=b"", k=AUTO_CMDSN):
    return bytes([k]) + h + ahs + data


def scsi(itt, cdb, edtl, r=False, w=False, data=b"", lunn=0, attr=1, final=True, imm=False,
         ahs=b""):
    flags = (0x80 if final else 0) | (0x40 if r else 0) | (0x20 if w else 0) | attr
    op = 0x01 | (0x40 if imm else 0)
    h = bhs(op, flags, len(data), len(ahs) // 4, lun(lunn), itt, edtl, 0, 0,
            cdb.ljust(16, b"\0"))
    return pdu(h, data, ahs)


def data_out(itt, ttt, off, data, sn=0, final=True, lunn=0):
    h = bhs(0x05, 0x80 if final else 0, len(data), 0, lun(lunn), itt, ttt, 0, 0,
            struct.pack(">III", 0, sn, off))
    return pdu(h, data, k=0)


def nop(itt, data=b""):
    return pdu(bhs(0x40, 0x80, len(data), 0, b"\0" * 8, itt, RSVD), data)


def text(itt, kv):
    data = b"".join(k.encode() + b"\0" for k in kv)
    return pdu(bhs(0x04, 0x80, len(data), 0, b"\0" * 8, itt, RSVD), data)


def tmf(itt, func, lunn=0, ref=RSVD, refsn=0):
    return pdu(bhs(0x42, 0x80 | func, 0, 0, lun(lunn), itt, ref, 0, 0,
                   struct.pack(">I", refsn)))


def logout(itt, reason=0):
    return pdu(bhs(0x46, 0x80 | reason, 0, 0, b"\0" * 8, itt, 1 << 16))


def deliver(n=0):
    return bytes([0xC0]) + struct.pack(">H", n)


HOLD, LET_GO, RUN_IO, HANGUP = b"\xc2", b"\xc3", b"\xc4", b"\xc5"
NEXUS2, REINSTATE = b"\xc6\x00", b"\xc6\x01"


def switch(i):
    return b"\xc7" + bytes([i])


def pr_out(itt, action, key, sakey=0, prtype=0, lunn=0):
    cdb = bytes([0x5F, action, prtype, 0, 0, 0, 0, 0, 24, 0])
    return scsi(itt, cdb, 24, w=True, data=struct.pack(">QQ8x", key, sakey), lunn=lunn)


def cdb10(op, lba, n, b1=0):
    return struct.pack(">BBIBHB", op, b1, lba, 0, n, 0)


def cdb16(op, lba, n, b1=0):
    return struct.pack(">BBQIBB", op, b1, lba, n, 0, 0)


INQ = bytes([0x12, 0, 0, 0, 36, 0])
INQ_VPD83 = bytes([0x12, 1, 0x83, 0, 255, 0])
TUR = bytes(6)
RC10 = bytes([0x25]) + bytes(9)
RC16 = bytes([0x9E, 0x10]) + bytes(8) + struct.pack(">I", 32) + bytes(2)
REPORT_LUNS = bytes([0xA0]) + bytes(5) + struct.pack(">I", 256) + bytes(2)
MODE_SENSE10 = bytes([0x5A, 0, 0x3F, 0, 0, 0, 0, 0x10, 0, 0])
BLOCK = bytes(range(256)) * 2

# byte 0: digests, ImmediateData, InitialR2T, target MRDSL, bursts; byte 1: R2Ts, hold, ...
DEFAULT = bytes([0x30, 0x10])

seeds = {
    "inquiry": DEFAULT + scsi(1, INQ, 36, r=True) + deliver(),
    "discovery-luns": DEFAULT + scsi(1, TUR, 0) + scsi(2, RC16, 32, r=True)
    + scsi(3, REPORT_LUNS, 256, r=True) + scsi(4, INQ_VPD83, 255, r=True)
    + scsi(5, MODE_SENSE10, 4096, r=True) + deliver(),
    "read10-both-luns": DEFAULT + scsi(1, cdb10(0x28, 0, 8), 4096, r=True)
    + scsi(2, cdb10(0x28, 2, 1), 4096, r=True, lunn=1) + deliver(),
    "write-immediate": DEFAULT + scsi(1, cdb10(0x2A, 4, 1), 512, w=True, data=BLOCK)
    + scsi(2, cdb10(0x28, 4, 1), 512, r=True) + deliver(),
    "write-unsolicited": DEFAULT
    + scsi(1, cdb10(0x2A, 0, 4), 2048, w=True, data=BLOCK, final=False)
    + data_out(1, RSVD, 512, BLOCK, 0, final=False) + data_out(1, RSVD, 1024, BLOCK * 2, 1)
    + deliver(),
    "write-r2t": bytes([0x38, 0x11]) + scsi(1, cdb10(0x2A, 0, 8), 4096, w=True)
    + deliver() + data_out(1, 1, 0, BLOCK * 4, 0, final=False) + data_out(1, 1, 2048, BLOCK * 4, 1)
    + deliver(),
    "nop-text-logout": DEFAULT + nop(0x10, b"ping") + text(0x11, ["SendTargets=All"])
    + text(0x12, ["MaxRecvDataSegmentLength=4096"]) + logout(0x13) + deliver(),
    "abort-held-read": bytes([0x30, 0x14]) + scsi(1, cdb10(0x28, 0, 1), 512, r=True)
    + deliver() + tmf(2, 1, 0, ref=1, refsn=1) + deliver() + RUN_IO,
    "resets-held": bytes([0x30, 0x14]) + scsi(1, cdb10(0x2A, 0, 1), 512, w=True, data=BLOCK)
    + scsi(2, cdb10(0x28, 0, 1), 4096, r=True, lunn=1) + deliver()
    + tmf(3, 5, 0) + tmf(4, 6, 1) + tmf(5, 2, 1) + deliver() + RUN_IO + tmf(6, 7)
    + deliver(),
    "task-attrs": bytes([0x30, 0x14]) + scsi(1, cdb10(0x28, 0, 1), 512, r=True, attr=1)
    + scsi(2, cdb10(0x28, 1, 1), 512, r=True, attr=2)
    + scsi(3, cdb10(0x28, 2, 1), 512, r=True, attr=3)
    + scsi(4, cdb10(0x28, 3, 1), 512, r=True, attr=4) + deliver() + LET_GO,
    "digests": bytes([0x33, 0x10]) + scsi(1, INQ, 36, r=True)
    + scsi(2, cdb10(0x2A, 0, 1), 512, w=True, data=BLOCK) + nop(3, b"abc") + deliver(),
    "digest-bad-data": bytes([0x3B, 0x10]) + scsi(1, cdb10(0x2A, 0, 2), 1024, w=True)
    + deliver() + pdu(bhs(0x05, 0x80, 1024, 0, lun(0), 1, 1, 0, 0, struct.pack(">III", 0, 0, 0)),
                      BLOCK * 2, k=0x02) + b"\xde\xad\xbe\xef" + deliver(),
    "split-reads": DEFAULT + scsi(1, INQ, 36, r=True) + scsi(2, RC10, 8, r=True)
    + deliver(1) + deliver(47) + deliver(13) + deliver(),
    "cdb32-ahs": DEFAULT
    + scsi(1, bytes([0x7F, 0, 0, 0, 0, 0, 0, 0x18, 0, 0x09]).ljust(16, b"\0"), 512, r=True,
           ahs=struct.pack(">HBB", 17, 1, 0) + bytes(16)) + deliver(),
    "pr-out-register-reserve": DEFAULT
    + scsi(1, bytes([0x5F, 0x00, 0, 0, 0, 0, 0, 0, 24, 0]), 24, w=True,
           data=bytes(8) + struct.pack(">Q", 0x1234) + bytes(8))
    + scsi(2, bytes([0x5F, 0x01, 0x03, 0, 0, 0, 0, 0, 24, 0]), 24, w=True,
           data=struct.pack(">Q", 0x1234) + bytes(16))
    + scsi(3, bytes([0x5E, 0x01, 0, 0, 0, 0, 0, 0x10, 0, 0]), 4096, r=True) + deliver(),
    "unmap-writesame-caw": DEFAULT
    + scsi(1, bytes([0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0]), 24, w=True,
           data=struct.pack(">HH4xQI4x", 22, 16, 0, 8))
    + scsi(2, cdb16(0x93, 8, 4), 512, w=True, data=BLOCK)
    + scsi(3, cdb16(0x89, 0, 0)[:13] + bytes([1, 0, 0]), 1024, w=True, data=bytes(512) + BLOCK)
    + deliver(),
    "window-gap": bytes([0x30, 0x70]) + scsi(1, INQ, 36, r=True)
    + pdu(bhs(0x01, 0xC1, 0, 0, lun(0), 2, 36, 3, 0, INQ.ljust(16, b"\0")), k=0)
    + scsi(3, INQ, 36, r=True) + deliver(),
    "reinstate-held-write": bytes([0x30, 0x14])
    + scsi(1, cdb10(0x2A, 0, 1), 512, w=True, data=BLOCK) + deliver() + REINSTATE
    + scsi(1, INQ, 36, r=True) + deliver() + RUN_IO,
    "two-nexus-preempt-abort": bytes([0x30, 0x10]) + pr_out(1, 0, 0, 0xA) + pr_out(2, 1, 0xA, 0, 3)
    + deliver() + HOLD + scsi(3, cdb10(0x28, 0, 1), 512, r=True) + deliver() + NEXUS2
    + pr_out(1, 0, 0, 0xB) + pr_out(2, 5, 0xB, 0xA, 3) + scsi(3, TUR, 0) + deliver() + LET_GO
    + switch(0) + scsi(4, TUR, 0),
    "two-nexus-clear-cold": bytes([0x30, 0x14]) + scsi(1, cdb10(0x28, 0, 1), 512, r=True)
    + deliver() + NEXUS2 + tmf(1, 6, 0) + deliver() + RUN_IO + tmf(2, 7) + deliver()
    + switch(0) + scsi(2, TUR, 0),
    "reserve6-two-nexus": DEFAULT + scsi(1, bytes([0x16, 0, 0, 0, 0, 0]), 0) + deliver()
    + NEXUS2 + scsi(1, cdb10(0x28, 0, 1), 512, r=True) + scsi(2, TUR, 0) + HANGUP + switch(0)
    + scsi(2, bytes([0x17, 0, 0, 0, 0, 0]), 0),
    "garbage-between": DEFAULT + scsi(1, TUR, 0) + b"\xc1\x05hello" + scsi(2, TUR, 0)
    + deliver(),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_pdu")
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
