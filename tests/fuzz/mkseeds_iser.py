#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Seed corpus of fuzz_iser (tests/fuzz/corpus/fuzz_iser/): the input format of
tests/fuzz/fuzz_iser.c around the Sends an iSER initiator makes in full
feature phase, laid out as RFC 7145 section 9 and dm/iser_spec.h say, with
the STags and virtual addresses Linux ib_iser and libiscsi's iSER
initiator put in them: READs with a read STag, WRITEs with immediate data
and a write STag (the rest fetched by RDMA Read), libiscsi's writes whose
data stays in its buffer (a short Send, Data-Out without data), NOP-Out,
Text, task management, Logout, an iSER Hello, failed and held completions,
the CM's ESTABLISHED before and after the login.

    tests/fuzz/mkseeds_iser.py [DIR]     (default: the corpus directory)
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mkseeds_pdu import INQ, RC16, REPORT_LUNS, TUR, BLOCK, cdb10, lun  # noqa: E402

FIX, NO_DATA, AUTO_CMDSN = 0x01, 0x02, 0x04
RSVD = 0xFFFFFFFF
WSV, RSV = 0x08, 0x04


def iser(flags=0, wstag=0, wva=0, rstag=0, rva=0):
    return struct.pack(">B3xIQIQ", 0x10 | flags, wstag, wva, rstag, rva)


def bhs(op, flags, dsl=0, ahs=0, lunf=b"\0" * 8, itt=0, w20=0, w24=0, w28=0, rest=b""):
    h = struct.pack(">BBH", op, flags, 0) + struct.pack(">B", ahs) + dsl.to_bytes(3, "big")
    h += lunf + struct.pack(">IIII", itt, w20, w24, w28) + rest
    return h.ljust(48, b"\0")


def send(ih, h, data=b"", k=FIX | AUTO_CMDSN):
    return bytes([k]) + ih + h + data


def scsi(itt, cdb, edtl, r=False, w=False, data=b"", lunn=0, ih=None, final=True, k=None,
         dsl=None):
    flags = (0x80 if final else 0) | (0x40 if r else 0) | (0x20 if w else 0) | 1
    if ih is None:
        ih = iser(RSV, rstag=0x1000 + itt, rva=0x7F0000000000) if r else \
            iser(WSV, wstag=0x2000 + itt, wva=0x7F1000000000 + len(data)) if w else iser()
    h = bhs(0x01, flags, len(data) if dsl is None else dsl, 0, lun(lunn), itt, edtl, 0, 0,
            cdb.ljust(16, b"\0"))
    return send(ih, h, data, FIX | AUTO_CMDSN if k is None else k)


def data_out(itt, off, data, sn=0, final=True, k=FIX):
    h = bhs(0x05, 0x80 if final else 0, len(data), 0, lun(0), itt, RSVD, 0, 0,
            struct.pack(">III", 0, sn, off))
    return send(iser(), h, data, k)


def nop(itt, data=b""):
    return send(iser(), bhs(0x40, 0x80, len(data), 0, b"\0" * 8, itt, RSVD), data)


def text(itt, kv):
    data = b"".join(x.encode() + b"\0" for x in kv)
    return send(iser(), bhs(0x04, 0x80, len(data), 0, b"\0" * 8, itt, RSVD), data)


def tmf(itt, func, lunn=0, ref=RSVD, refsn=0):
    return send(iser(), bhs(0x42, 0x80 | func, 0, 0, lun(lunn), itt, ref, 0, 0,
                            struct.pack(">I", refsn)))


def logout(itt):
    return send(iser(), bhs(0x46, 0x80, 0, 0, b"\0" * 8, itt, 1 << 16))


REMOTE = b"\xc1\x10" + bytes(range(0x30, 0x40))
HOLD_SQ, RELEASE_SQ, ESTABLISHED, DISCONNECT = b"\xc2", b"\xc3", b"\xc5", b"\xc6"
HOLD_IO, LET_IO, RUN_IO = b"\xc7", b"\xc8", b"\xc9"


def fail_next(status):
    return b"\xc4" + bytes([status])


# byte 0: RDMA Reads allowed 4 (0x40), InitiatorRecvDataSegmentLength declared (0x08)
# byte 1: the target's MaxRecvDataSegmentLength 8192 (0x01)
READS4 = bytes([0x48, 0x01])

seeds = {
    "inquiry-read-stag": READS4 + scsi(1, INQ, 36, r=True),
    "discovery-luns": READS4 + scsi(1, TUR, 0) + scsi(2, RC16, 32, r=True)
    + scsi(3, REPORT_LUNS, 256, r=True),
    "read10-both-luns": READS4 + scsi(1, cdb10(0x28, 0, 8), 4096, r=True)
    + scsi(2, cdb10(0x28, 0, 1), 4096, r=True, lunn=1),
    "write-immediate-rdma-read": READS4 + REMOTE
    + scsi(1, cdb10(0x2A, 0, 8), 4096, w=True, data=BLOCK)
    + scsi(2, cdb10(0x28, 0, 8), 4096, r=True),
    "write-all-rdma-read": READS4 + REMOTE + scsi(1, cdb10(0x2A, 8, 16), 8192, w=True),
    "libiscsi-write-by-reference": READS4 + REMOTE
    + scsi(1, cdb10(0x2A, 0, 4), 2048, w=True, data=b"", dsl=512, final=False,
           ih=iser(WSV, wstag=0x2001, wva=0x7F1000000000))
    + data_out(1, 512, b"", 0, k=FIX | NO_DATA),
    "linux-ib_iser-128": bytes([0x40, 0x01]) + scsi(1, INQ, 255, r=True) + nop(2, b"x" * 200),
    "nop-text-logout": READS4 + nop(0x10, b"ping") + text(0x11, ["SendTargets=All"])
    + logout(0x12),
    "hello": READS4 + send(struct.pack(">B3xIQIQ", 0x20, 0, 0, 0, 0), bytes(48), k=0),
    "abort-held-read": bytes([0xC8, 0x01]) + scsi(1, cdb10(0x28, 0, 1), 512, r=True)
    + tmf(2, 1, 0, ref=1, refsn=1) + RUN_IO,
    "read-write-failed": READS4 + fail_next(10) + scsi(1, cdb10(0x28, 0, 1), 512, r=True)
    + fail_next(5) + scsi(2, cdb10(0x2A, 0, 1), 512, w=True),
    "held-sends": READS4 + HOLD_SQ + scsi(1, INQ, 36, r=True) + nop(2) + RELEASE_SQ
    + scsi(3, TUR, 0),
    "established-first": bytes([0x4C, 0x01]) + ESTABLISHED + scsi(1, TUR, 0) + ESTABLISHED,
    "no-reads-allowed": bytes([0x08, 0x01]) + scsi(1, cdb10(0x2A, 0, 2), 1024, w=True),
    "read-no-stag": READS4 + scsi(1, INQ, 36, r=True, ih=iser()),
    "unexpected-pdus": bytes([0x48, 0x41]) + HOLD_IO + scsi(1, cdb10(0x28, 0, 1), 512, r=True)
    + scsi(2, cdb10(0x28, 1, 1), 512, r=True) + scsi(3, cdb10(0x28, 2, 1), 512, r=True)
    + LET_IO,
    "pool-exhausted": READS4 + HOLD_IO + scsi(1, cdb10(0x28, 0, 1), 64 << 20, r=True)
    + scsi(2, cdb10(0x28, 1, 1), 64 << 20, r=True) + scsi(3, cdb10(0x2A, 0, 1), 512, w=True)
    + tmf(4, 1, 0, ref=3, refsn=3) + LET_IO,
    "lu-reset-during-read": READS4 + REMOTE + HOLD_SQ + scsi(1, cdb10(0x2A, 0, 8), 4096, w=True)
    + scsi(2, cdb10(0x2A, 8, 8), 4096, w=True, lunn=0) + tmf(3, 5, 0) + RELEASE_SQ
    + scsi(4, cdb10(0x28, 0, 8), 4096, r=True),
    "disconnect-mid-write": READS4 + HOLD_SQ + REMOTE
    + scsi(1, cdb10(0x2A, 0, 8), 4096, w=True) + DISCONNECT,
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_iser")
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
