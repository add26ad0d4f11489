#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of fuzz_scsi (tests/fuzz/corpus/fuzz_scsi/).

Each seed is two setup bytes and a sequence of records in the format
tests/fuzz/fuzz_scsi.c describes, made of the CDBs and parameter lists that
Linux (sd's probe, scsi_dh_alua) and libiscsi's iscsi-test-cu send, laid out
byte for byte as SPC-4 and SBC-3 define them.

    tests/fuzz/scsi_seeds.py [DIR]
"""
import os
import struct
import sys

# The LUs of fuzz_scsi.c: NAA designator of LU l is 60 then 0x10*l + 1..15.
def naa(l):
    return bytes([0x60] + [0x10 * l + i for i in range(1, 16)])


def be16(v):
    return struct.pack(">H", v)


def be32(v):
    return struct.pack(">I", v)


def be64(v):
    return struct.pack(">Q", v)


def cmd(cdb, edtl=0, nexus=0, lun=0, data=None, inflight=False, attr=1):
    """A SCSI command record: R when no data-out is given, W with it."""
    cdb = bytes(cdb)
    w = data is not None
    if w and edtl == 0:
        edtl = len(data)
    b0 = (0x40 if inflight else 0) | (lun << 3) | nexus
    flags = (0 if w else 1) | (2 if w else 0) | (attr << 2)
    rec = bytes([b0, flags, len(cdb)]) + cdb + be16(edtl)
    if w:
        rec += be16(len(data)) + bytes(data)
    return rec


EV = {n: i for i, n in enumerate(
    "LU_RESET TARGET_RESET CLEAR_TASK_SET ABORT_TASK_SET ABORT_TASK LOGOUT ALUA_SET "
    "ALUA_CONFIGURE ALUA_ANSWER POLICY LEASE MOVE_DG AWAITS OFFLINE CL_ANSWER CL_PEER "
    "CL_LOCK GROW ALUA_MAP PORTS POLL".split())}


def event(name, a=0, b=0, extra=b""):
    return bytes([0x80 | EV[name], a, b]) + bytes(extra)


def io(kind, a=0):
    return bytes([0xc0 | {"complete": 0, "fail": 1, "refuse": 2, "pump": 3}[kind], a])


def ev_arg(nexus=0, lun=0):
    return nexus | lun << 3


# ------------------------------------------------------------------ CDBs

def tur():
    return [0x00, 0, 0, 0, 0, 0]


def inquiry(alloc, evpd=False, page=0):
    return [0x12, 1 if evpd else 0, page, alloc >> 8, alloc & 0xff, 0]


def report_luns(alloc, sel=0):
    return [0xa0, 0, sel, 0, 0, 0] + list(be32(alloc)) + [0, 0]


def rc10():
    return [0x25] + [0] * 9


def rc16(alloc=32):
    return [0x9e, 0x10] + [0] * 8 + list(be32(alloc)) + [0, 0]


def rw10(op, lba, n, b1=0):
    return [op, b1] + list(be32(lba)) + [0] + list(be16(n)) + [0]


def rw12(op, lba, n, b1=0):
    return [op, b1] + list(be32(lba)) + list(be32(n)) + [0, 0]


def rw16(op, lba, n, b1=0):
    return [op, b1] + list(be64(lba)) + list(be32(n)) + [0, 0]


def rw6(op, lba, n):
    return [op, (lba >> 16) & 0x1f, (lba >> 8) & 0xff, lba & 0xff, n & 0xff, 0]


def mode_sense6(page, alloc, pc=0, dbd=False, sub=0):
    return [0x1a, 0x08 if dbd else 0, pc << 6 | page, sub, alloc, 0]


def mode_sense10(page, alloc, pc=0, dbd=False, llbaa=False):
    return [0x5a, (0x08 if dbd else 0) | (0x10 if llbaa else 0), pc << 6 | page, 0, 0, 0, 0,
            alloc >> 8, alloc & 0xff, 0]


def mode_select6(plen, pf=True):
    return [0x15, 0x10 if pf else 0, 0, 0, plen, 0]


def mode_select10(plen):
    return [0x55, 0x10, 0, 0, 0, 0, 0, plen >> 8, plen & 0xff, 0]


def rsoc(opt=0, op=0, sa=0, alloc=4096, rctd=False):
    return [0xa3, 0x0c, (0x80 if rctd else 0) | opt, op] + list(be16(sa)) + list(be32(alloc)) + [0, 0]


def rstmf(alloc=16, repd=True):
    return [0xa3, 0x0d, 0x80 if repd else 0, 0, 0, 0] + list(be32(alloc)) + [0, 0]


def rtpg(alloc=0x200, ext=True):
    return [0xa3, 0x0a | (0x20 if ext else 0), 0, 0, 0, 0] + list(be32(alloc)) + [0, 0]


def stpg(plen):
    return [0xa4, 0x0a, 0, 0, 0, 0] + list(be32(plen)) + [0, 0]


def pr_in(sa, alloc=0x2000):
    return [0x5e, sa, 0, 0, 0, 0, 0, alloc >> 8, alloc & 0xff, 0]


def pr_out(sa, typ=0, plen=24, scope=0):
    return [0x5f, sa, scope << 4 | typ, 0, 0] + list(be32(plen)) + [0]


def pr_params(rk=0, sark=0, aptpl=False, all_tg_pt=False, spec_i_pt=False, extra=b""):
    f = (1 if aptpl else 0) | (4 if all_tg_pt else 0) | (8 if spec_i_pt else 0)
    return be64(rk) + be64(sark) + be32(0) + bytes([f, 0, 0, 0]) + extra


def transport_id(iport):
    """iSCSI TransportID, format 01b (initiator port name): SPC-4 7.6.4.6."""
    b = iport.encode() + b"\0"
    b += b"\0" * (-len(b) % 4)
    return bytes([0x40 | 0x05, 0]) + be16(len(b)) + b


def caw(lba, n):
    return [0x89, 0] + list(be64(lba)) + [0, 0, 0, n, 0, 0]


def write_same10(lba, n, b1=0):
    return [0x41, b1] + list(be32(lba)) + [0] + list(be16(n)) + [0]


def write_same16(lba, n, b1=0):
    return [0x93, b1] + list(be64(lba)) + list(be32(n)) + [0, 0]


def unmap(plen, anchor=False):
    return [0x42, 1 if anchor else 0, 0, 0, 0, 0, 0, plen >> 8, plen & 0xff, 0]


def unmap_params(descs):
    bd = b"".join(be64(lba) + be32(n) + be32(0) for lba, n in descs)
    return be16(6 + len(bd)) + be16(len(bd)) + be32(0) + bd


def get_lba_status(lba, alloc=24):
    return [0x9e, 0x12] + list(be64(lba)) + list(be32(alloc)) + [0, 0]


def sync_cache10(lba=0, n=0, immed=False):
    return [0x35, 2 if immed else 0] + list(be32(lba)) + [0] + list(be16(n)) + [0]


def sync_cache16(lba=0, n=0):
    return [0x91, 0] + list(be64(lba)) + list(be32(n)) + [0, 0]


def verify16(lba, n, bytchk=0):
    return [0x8f, bytchk << 1] + list(be64(lba)) + list(be32(n)) + [0, 0]


def xcopy(plen):
    return [0x83, 0x00] + [0] * 8 + list(be32(plen)) + [0, 0]


def rcr(sa, list_id=0, alloc=0x400):
    return [0x84, sa, list_id] + [0] * 7 + list(be32(alloc)) + [0, 0]


def cscd_e4(l, bs=512):
    """Identification CSCD descriptor naming LU l by its NAA (SPC-4 6.4.5.1)."""
    return (bytes([0xe4, 0x00, 0x00, 0x00, 0x01, 0x03, 0x00, 0x10]) + naa(l) +
            bytes([0, 0, 0, 0, 0]) + struct.pack(">I", bs)[1:])


def seg_b2b(src, dst, nblocks, src_lba, dst_lba, dc=False):
    return (bytes([0x02, 0x02 if dc else 0]) + be16(0x18) + be16(src) + be16(dst) +
            be16(0) + be16(nblocks) + be64(src_lba) + be64(dst_lba))


def xcopy_params(cscds, segs, list_id=1, usage=0):
    c = b"".join(cscds)
    s = b"".join(segs)
    return (bytes([list_id, usage << 3]) + be16(len(c)) + be32(0) + be32(len(s)) + be32(0) +
            c + s)


def pattern(n, seed):
    return bytes((seed + i * 7) & 0xff for i in range(n))


# ----------------------------------------------------------------- seeds

def seeds():
    s = {}
    # Linux sd/scsi_scan probing a new LU (scsi_probe_lun, sd_revalidate_disk)
    s["linux-sd-probe"] = bytes([0x00, 0]) + b"".join([
        cmd(inquiry(36)), cmd(tur()), cmd(tur()),
        cmd(report_luns(4104), nexus=0, lun=0),
        cmd(inquiry(255, True, 0x00)), cmd(inquiry(255, True, 0x83)),
        cmd(inquiry(255, True, 0x80)), cmd(rc16(32), 32), cmd(rc10(), 8),
        cmd(mode_sense6(0x3f, 4), 4), cmd(mode_sense6(0x3f, 192), 192),
        cmd(mode_sense6(0x08, 20, dbd=True), 20), cmd(mode_sense6(0x0a, 32, dbd=True), 32),
        cmd(inquiry(64, True, 0xb0)), cmd(inquiry(64, True, 0xb1)),
        cmd(inquiry(8, True, 0xb2)), cmd(inquiry(64, True, 0x8f)),
        cmd(rsoc(1, 0x93, 0, 512), 512), cmd(rsoc(1, 0x42, 0, 512), 512),
        cmd(rsoc(2, 0x9e, 0x12, 512), 512), cmd(rsoc(0, alloc=4096, rctd=True), 4096),
        cmd(rstmf(16), 16), cmd(rw10(0x28, 0, 8), 4096), cmd(rw16(0x88, 56, 8), 4096),
        cmd(get_lba_status(0, 24), 24),
    ])
    # the same on the 4096-byte LU, READ CAPACITY(10) with PMI, MODE SENSE(10) LLBAA
    s["linux-sd-probe-4k"] = bytes([0x00, 0]) + b"".join([
        cmd(inquiry(96), 96, lun=2), cmd(rc16(32), 32, lun=2),
        cmd([0x25, 0, 0, 0, 0, 4, 0, 0, 1, 0], 8, lun=2),
        cmd(mode_sense10(0x3f, 0x1000, llbaa=True), 0x1000, lun=2),
        cmd(mode_sense10(0x3f, 0x1000, pc=1), 0x1000, lun=2),
        cmd(mode_sense10(0x3f, 0x1000, pc=2, dbd=True), 0x1000, lun=2),
        cmd(rw10(0x28, 0, 4), 16384, lun=2), cmd(rw10(0x28, 0, 16), 65535, lun=2),
        cmd(rw16(0x8a, 2, 2), data=pattern(8192, 3), lun=2),
        cmd(rw12(0xa8, 2, 2), 8192, lun=2),
        cmd(inquiry(64, True, 0xb0), 64, lun=2),
    ])
    # LUNs with no LU behind them
    s["no-lu"] = bytes([0x00, 0]) + b"".join([
        cmd(inquiry(96), 96, lun=3), cmd(inquiry(255, True, 0), 255, lun=3),
        cmd(report_luns(4096), 4096, lun=3), cmd([0x03, 0, 0, 0, 18, 0], 18, lun=3),
        cmd(tur(), 0, lun=3), cmd(rw10(0x28, 0, 1), 512, lun=5),
    ])
    # scsi_dh_alua: RTPG (extended header), STPG to Active/Optimized, then again through port 2
    stpg_p = be32(0) + bytes([0x00, 0]) + be16(1)
    stpg_p2 = be32(0) + bytes([0x00, 0]) + be16(2) + bytes([0x02, 0]) + be16(1)
    s["alua-local"] = bytes([0x18, 0]) + b"".join([
        cmd(inquiry(255, True, 0x83), 255), cmd(rtpg(), 0x200), cmd(rtpg(ext=False), 0x200),
        cmd(stpg(len(stpg_p)), data=stpg_p, nexus=1), cmd(tur(), nexus=0),
        cmd(rtpg(), 0x200, nexus=0), cmd(stpg(len(stpg_p2)), data=stpg_p2, nexus=1),
        cmd(rw10(0x28, 0, 1), 512, nexus=0), cmd(rw10(0x28, 0, 1), 512, nexus=1),
        cmd(rtpg(), 0x200, nexus=2, lun=2),
    ])
    # the HA agent owns the policy: the STPG waits for the answer, then for the states
    s["alua-external"] = bytes([0x03, 0]) + b"".join([
        cmd(stpg(len(stpg_p2)), data=stpg_p2, nexus=1),
        event("ALUA_ANSWER", 0, 0x10), cmd(stpg(len(stpg_p)), data=stpg_p, nexus=3),
        event("ALUA_SET", 0, 0x01, b"\x20"), cmd(rtpg(), 0x200, nexus=3),
        cmd(stpg(len(stpg_p2)), data=stpg_p2, nexus=1), event("ALUA_ANSWER", 2, 0x00),
        cmd(stpg(len(stpg_p2)), data=stpg_p2, nexus=5),
        event("ALUA_SET", 0, 0x02, b"\x22\x40"), cmd(tur(), nexus=5),
        event("POLICY", 0, 0), cmd(stpg(len(stpg_p)), data=stpg_p, nexus=5),
    ])
    # a lease that is given, runs out and is renewed; the awaited registration
    s["alua-lease"] = bytes([0x04, 0]) + b"".join([
        cmd(tur()), cmd(rtpg(), 0x200), event("LEASE", 1, 100), cmd(tur()),
        cmd(rw10(0x28, 0, 1), 512), event("LEASE", 3, 250), cmd(rw10(0x28, 0, 1), 512),
        event("LEASE", 3, 250), cmd(rtpg(), 0x200), event("LEASE", 1, 200),
        event("AWAITS", 0, 1), cmd(rtpg(), 0x200), cmd(rw10(0x2a, 0, 1), data=pattern(512, 1)),
        event("LEASE", 2, 0), cmd(tur()), event("LEASE", 0, 0), cmd(tur()),
    ])
    # device groups: the default's owner, another group, an LU moved between them
    s["alua-dg"] = bytes([0x28, 0]) + b"".join([
        cmd(rtpg(), 0x200, nexus=1), cmd(rw10(0x28, 0, 1), 512, nexus=1),
        event("ALUA_CONFIGURE", 0x20, 0x02 | 2 << 2), cmd(rtpg(), 0x200, lun=2),
        event("MOVE_DG", ev_arg(0, 0), 1), cmd(tur(), nexus=0), cmd(tur(), nexus=1),
        cmd(rtpg(), 0x200, nexus=1), event("ALUA_SET", 0, 0x05, b"\x2e"),
        cmd(rw10(0x28, 0, 1), 512, nexus=1),
    ])
    # libiscsi prout_register / reserve / preempt / clear, three hosts
    k = [0, 0xbbbb0000000000aa, 0xcccc0000000000bb, 0xdddd0000000000cc]
    s["pr-register-reserve"] = bytes([0x00, 0]) + b"".join([
        cmd(pr_in(0), 0x2000), cmd(pr_in(2), 8),
        cmd(pr_out(0), data=pr_params(0, k[1]), nexus=0),
        cmd(pr_out(0), data=pr_params(0, k[2]), nexus=2),
        cmd(pr_out(6), data=pr_params(0, k[3], all_tg_pt=True), nexus=4),
        cmd(pr_out(1, 1), data=pr_params(k[1]), nexus=0),
        cmd(rw10(0x2a, 0, 1), data=pattern(512, 2), nexus=2),
        cmd(rw10(0x28, 0, 1), 512, nexus=2), cmd(pr_in(1), 0x2000, nexus=2),
        cmd(pr_in(3), 0x2000, nexus=2),
        cmd(pr_out(4, 3), data=pr_params(k[2], k[1]), nexus=2),
        cmd(tur(), nexus=0), cmd(rw10(0x28, 0, 1), 512, nexus=0),
        cmd(pr_out(2, 3), data=pr_params(k[2]), nexus=2),
        cmd(pr_out(1, 7), data=pr_params(k[3]), nexus=5),
        cmd(pr_in(1), 0x2000, nexus=1),
        cmd(pr_out(3), data=pr_params(k[3]), nexus=4),
        cmd(tur(), nexus=2), cmd(pr_in(0), 0x2000, nexus=2),
    ])
    # PREEMPT AND ABORT with commands in flight through the preempted nexus
    s["pr-preempt-abort"] = bytes([0x00, 0]) + b"".join([
        cmd(pr_out(0), data=pr_params(0, k[1]), nexus=0),
        cmd(pr_out(0), data=pr_params(0, k[2]), nexus=3),
        cmd(pr_out(1, 5), data=pr_params(k[1]), nexus=0),
        cmd(rw10(0x2a, 4, 4), data=pattern(2048, 5), nexus=0, inflight=True),
        cmd(rw10(0x28, 4, 4), 2048, nexus=0, inflight=True),
        cmd(pr_out(5, 6), data=pr_params(k[2], k[1]), nexus=3),
        io("pump"), cmd(tur(), nexus=0), cmd(pr_in(3), 0x2000, nexus=0),
        cmd(pr_out(0), data=pr_params(0, 0), nexus=3),
    ])
    # REGISTER AND MOVE and SPEC_I_PT with transport IDs (not supported: refused)
    tid = transport_id("iqn.2004-10.com.ubuntu:01:host-b,i,0x400001370000")
    s["pr-move-transport-id"] = bytes([0x00, 0]) + b"".join([
        cmd(pr_out(0), data=pr_params(0, k[1]), nexus=0),
        cmd(pr_out(1, 1), data=pr_params(k[1]), nexus=0),
        cmd(pr_out(7, 1, 24 + 4 + len(tid)),
            data=be64(k[1]) + be64(k[2]) + bytes([0, 0, 0, 0]) + be16(2) + be32(len(tid)) + tid),
        cmd(pr_out(0, 0, 24 + 4 + len(tid)),
            data=pr_params(0, k[2], spec_i_pt=True, extra=be32(len(tid)) + tid), nexus=2),
        cmd(pr_in(3), 0x2000),
        cmd(pr_out(0), data=pr_params(k[1], k[1], aptpl=True)),
        cmd(pr_in(2), 8),
    ])
    # SCSI-2 RESERVE/RELEASE, then a logout, a LU reset, a target reset
    s["reserve6-reset-logout"] = bytes([0x00, 0]) + b"".join([
        cmd([0x16, 0, 0, 0, 0, 0], nexus=0), cmd(rw10(0x28, 0, 1), 512, nexus=1),
        cmd(inquiry(36), 36, nexus=1), cmd(rc10(), 8, nexus=1),
        event("LOGOUT", ev_arg(0)), cmd(rw10(0x28, 0, 1), 512, nexus=1),
        cmd([0x56, 0, 0, 0, 0, 0, 0, 0, 0, 0], nexus=2), event("LU_RESET", ev_arg(2, 0)),
        cmd(tur(), nexus=2), cmd(tur(), nexus=2), cmd([0x57, 0] + [0] * 8, nexus=2),
        cmd([0x16, 0, 0, 0, 0, 0], nexus=4, lun=2), event("TARGET_RESET", ev_arg(4), 1),
        cmd([0x03, 0, 0, 0, 18, 0], 18, nexus=4), cmd(mode_sense6(0x08, 0xff), 0xff, nexus=4),
        event("CLEAR_TASK_SET", ev_arg(4, 1)), cmd(tur(), nexus=0, lun=1),
    ])
    # COMPARE AND WRITE (libiscsi compareandwrite_simple, _miscompare)
    blk = pattern(512, 9)
    s["caw"] = bytes([0x00, 0]) + b"".join([
        cmd(rw10(0x2a, 10, 1), data=blk), cmd(caw(10, 1), data=blk + pattern(512, 77)),
        cmd(caw(10, 1), data=blk + pattern(512, 1)), cmd(rw10(0x28, 10, 1), 512),
        cmd(caw(63, 1), data=bytes(1024)), cmd(caw(0, 0)), cmd(caw(0, 2), data=bytes(1024)),
        cmd(caw(2, 1), data=bytes(8192), lun=2),
    ])
    # WRITE SAME 10/16, UNMAP bit, ANCHOR, NDOB; UNMAP; GET LBA STATUS (libiscsi writesame*, unmap*)
    s["write-same-unmap"] = bytes([0x00, 0]) + b"".join([
        cmd(write_same16(0, 64), data=pattern(512, 4)),
        cmd(get_lba_status(0, 0x1000), 0x1000),
        cmd(write_same16(8, 8, 0x08), data=bytes(512)),
        cmd(write_same10(16, 8, 0x08), data=bytes(512)),
        cmd(write_same16(24, 8, 0x01)), cmd(write_same16(24, 8, 0x18), data=bytes(512)),
        cmd(write_same10(32, 4), data=bytes(512)), cmd(write_same10(0, 0), data=bytes(512)),
        cmd(unmap(8 + 32), data=unmap_params([(40, 4), (50, 2)])),
        cmd(unmap(8 + 16, anchor=True), data=unmap_params([(0, 1)])),
        cmd(unmap(8 + 16), data=unmap_params([(63, 2)])),
        cmd(get_lba_status(0, 0x1000), 0x1000), cmd(get_lba_status(40, 24), 24),
        cmd(write_same16(1, 3), data=pattern(4096, 8), lun=2),
        cmd(get_lba_status(0, 0x200), 0x200, lun=2),
    ])
    # EXTENDED COPY between LU 0 and LU 1 (libiscsi extendedcopy_simple), RECEIVE COPY RESULTS
    xp = xcopy_params([cscd_e4(0), cscd_e4(1)], [seg_b2b(0, 1, 8, 0, 16), seg_b2b(1, 0, 4, 16, 32)])
    xp_bad = xcopy_params([cscd_e4(0), cscd_e4(2, 4096)], [seg_b2b(0, 1, 1, 0, 0)], list_id=2)
    s["xcopy"] = bytes([0x00, 0]) + b"".join([
        cmd(rw10(0x2a, 0, 8), data=pattern(4096, 6)),
        cmd(rcr(3), 0x400), cmd(xcopy(len(xp)), data=xp), cmd(rcr(0, 1), 0x400),
        cmd(rw10(0x28, 16, 8), 4096, lun=1), cmd(xcopy(len(xp_bad)), data=xp_bad),
        cmd(rcr(0, 2), 0x400), cmd(inquiry(0x200, True, 0x8f), 0x200),
        cmd(xcopy(len(xp)), data=xp, nexus=1, lun=1),
    ])
    # EXTENDED COPY racing writes and a reservation on the destination
    s["xcopy-inflight"] = bytes([0x00, 0]) + b"".join([
        cmd(xcopy(len(xp)), data=xp, inflight=True),
        cmd(rw10(0x2a, 16, 8), data=pattern(4096, 1), lun=1, inflight=True),
        io("complete", 4 | 1), io("complete", 0), io("pump"),
        cmd(pr_out(0), data=pr_params(0, 7), nexus=2, lun=1),
        cmd(pr_out(1, 3), data=pr_params(7), nexus=2, lun=1),
        cmd(xcopy(len(xp)), data=xp), cmd(rcr(0, 1), 0x400),
    ])
    # MODE SELECT(6)/(10): WCE off, SWP on (writes refused), back; UAs to the other nexuses
    cache = bytes([0x08, 0x12, 0x00]) + bytes(17)
    control = bytes([0x0a, 0x0a, 0x20, 0x10, 0x08, 0, 0, 0, 0xff, 0xff, 0, 0])
    ms6 = bytes([0, 0, 0, 8]) + bytes([0, 0, 0, 0x40, 0, 0, 0x02, 0]) + cache
    ms10 = bytes([0, 0, 0, 0, 0, 0, 0, 0]) + control
    s["mode-select"] = bytes([0x00, 0]) + b"".join([
        cmd(mode_sense6(0x3f, 0xff, pc=1), 0xff),
        cmd(mode_select6(len(ms6)), data=ms6), cmd(tur(), nexus=1),
        cmd([0x03, 0, 0, 0, 18, 0], 18, nexus=1), cmd(mode_sense6(0x08, 0xff), 0xff, nexus=1),
        cmd(mode_select10(len(ms10)), data=ms10, nexus=2),
        cmd(rw10(0x2a, 0, 1), data=bytes(512)), cmd(tur()), cmd(rw10(0x2a, 0, 1), data=bytes(512)),
        cmd(mode_sense10(0x0a, 0x100), 0x100),
        cmd(mode_select10(len(ms10)), data=ms10[:12] + bytes([0]) + ms10[13:]),
        cmd(mode_select6(len(ms6)), data=ms6[:4 + 8 + 2] + bytes([0x04]) + ms6[15:]),
        cmd(mode_sense6(0x1c, 0xff), 0xff), cmd(mode_sense6(0x3f, 0xff, pc=3), 0xff),
    ])
    # overlapping I/O: writes, a COMPARE AND WRITE, WRITE ATOMIC, reads, completed out of order
    s["overlap"] = bytes([0x00, 0]) + b"".join([
        cmd(rw10(0x2a, 0, 4), data=pattern(2048, 1), inflight=True),
        cmd(caw(1, 1), data=bytes(1024), inflight=True, nexus=1),
        cmd(rw10(0x28, 0, 4), 2048, inflight=True, nexus=2),
        cmd([0x9c, 0] + list(be64(2)) + [0, 0, 0, 2, 0, 0], data=pattern(1024, 2),
            inflight=True, nexus=3),
        cmd(rw16(0x8b, 0, 1), data=pattern(512, 3), inflight=True, nexus=4),
        cmd(rw10(0x28, 2, 2), 1024, inflight=True, nexus=5),
        io("complete", 4 * 1), io("complete", 0), event("ABORT_TASK", 0, 1),
        io("complete", 0), io("pump"), cmd(rw10(0x28, 0, 4), 2048),
    ])
    # backstore errors: EIO, ENOSPC, a backend's CHECK CONDITION and BUSY, a refused submission
    s["io-errors"] = bytes([0x00, 0]) + b"".join([
        io("fail", 0 << 2), cmd(rw10(0x28, 0, 1), 512),
        io("fail", 1 << 2), cmd(rw10(0x2a, 0, 1), data=bytes(512)),
        io("fail", 3 << 2), cmd(rw10(0x28, 0, 1), 512),
        io("fail", 3 << 2 | 1 << 5), cmd(rw10(0x28, 0, 1), 512),
        io("fail", 2 << 2), cmd(sync_cache10()), io("refuse", 0), cmd(rw16(0x88, 0, 1), 512),
        io("fail", 4 << 2), cmd(write_same16(0, 4), data=bytes(512)),
        io("fail", 0), cmd(xcopy(len(xp)), data=xp), io("fail", 2), cmd(caw(0, 1), data=bytes(1024)),
        event("OFFLINE", 0, 1), cmd(tur()), event("OFFLINE", 0, 0), cmd(tur()),
    ])
    # the rest of SBC: READ/WRITE(6)/(12), WRITE AND VERIFY, VERIFY with BYTCHK, SYNCHRONIZE
    # CACHE, PRE-FETCH, START STOP, PREVENT ALLOW, READ DEFECT DATA, LOG SENSE (not supported)
    s["sbc-misc"] = bytes([0x00, 0]) + b"".join([
        cmd(rw6(0x0a, 1, 2), data=pattern(1024, 3)), cmd(rw6(0x08, 1, 2), 1024),
        cmd(rw6(0x08, 0, 0), 0x8000), cmd(rw12(0xaa, 3, 1), data=pattern(512, 4)),
        cmd(rw10(0x2e, 3, 1, 0x02), data=pattern(512, 4)),
        cmd(verify16(3, 1, 1), data=pattern(512, 4)), cmd(verify16(3, 1, 1), data=bytes(512)),
        cmd(verify16(0, 4, 3), data=bytes(512)), cmd([0x2f, 0, 0, 0, 0, 0, 0, 0, 8, 0]),
        cmd(sync_cache10(0, 0, True)), cmd(sync_cache16(60, 8)),
        cmd([0x34, 0, 0, 0, 0, 0, 0, 0, 1, 0]), cmd([0x90, 0] + [0] * 14),
        cmd([0x1b, 0, 0, 0, 1, 0]), cmd([0x1b, 0, 0, 0, 2, 0]), cmd([0x1e, 0, 0, 0, 1, 0]),
        cmd([0x37, 0, 0x1d, 0, 0, 0, 0, 0, 4, 0], 4), cmd([0xb7, 0x1d, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0], 8),
        cmd([0x4d, 0, 0x40, 0, 0, 0, 0, 0x10, 0, 0], 0x1000),
        cmd(rw10(0x28, 60, 8), 4096), cmd(rw16(0x88, 1 << 40, 1), 512),
        cmd([0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0x04], 512), cmd(rw12(0xa8, 0, 9), 0x9000, lun=2),
    ])
    # unit attentions from every side, REQUEST SENSE consuming them
    s["unit-attentions"] = bytes([0x00, 0]) + b"".join([
        event("LU_RESET", ev_arg(0, 0)), event("ALUA_SET", 0, 0x01, b"\x21"),
        cmd(mode_select6(len(ms6)), data=ms6, nexus=3),
        cmd([0x03, 0, 0, 0, 18, 0], 18, nexus=0), cmd([0x03, 0, 0, 0, 18, 0], 18, nexus=0),
        cmd([0x03, 0, 0, 0, 252, 0], 252, nexus=0), cmd(inquiry(36), 36, nexus=1),
        cmd(report_luns(16), 16, nexus=1), cmd(tur(), nexus=1), cmd(tur(), nexus=1),
        cmd(tur(), nexus=1), cmd([0x03, 1, 0, 0, 18, 0], 18, nexus=2),
        event("LOGOUT", ev_arg(5)), cmd(tur(), nexus=5),
    ])
    # an extended CDB (AHS): 32 bytes, and CDBs shorter than their opcode's
    s["cdb-lengths"] = bytes([0x00, 0]) + b"".join([
        cmd([0x7f, 0, 0, 0, 0, 0, 0, 0x18, 0x00, 0x09] + [0] * 22, 512),
        cmd([0x88, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0] + [0] * 16, 512),
        cmd([0x12, 0, 0, 0, 0xff, 0x01], 255), cmd([0x12, 0, 0, 0, 0xff, 0x04], 255),
    ])
    # LU 0 and LU 1 in the cluster store: the agent applies, overtakes, refuses
    s["cluster-pr"] = bytes([0x00, 0x07]) + b"".join([
        cmd(pr_out(0), data=pr_params(0, k[1]), nexus=0), event("CL_ANSWER", 0, 0),
        cmd(pr_out(0), data=pr_params(0, k[2]), nexus=3), event("CL_ANSWER", 0, 1),
        event("CL_ANSWER", 0, 0), cmd(pr_out(1, 1), data=pr_params(k[1]), nexus=0),
        event("CL_ANSWER", 0, 0), cmd(rw10(0x2a, 0, 1), data=bytes(512), nexus=3),
        cmd(pr_out(5, 3), data=pr_params(k[2], k[1]), nexus=3), event("CL_ANSWER", 0, 3),
        cmd(tur(), nexus=0), cmd([0x16, 0, 0, 0, 0, 0], nexus=1, lun=1),
        event("CL_ANSWER", 0, 2), cmd(mode_select6(len(ms6)), data=ms6, nexus=2),
        event("CL_ANSWER", 0, 0), event("LU_RESET", ev_arg(0, 0)), event("CL_ANSWER", 0, 0),
        cmd(caw(1, 1), data=bytes(1024), nexus=4), event("CL_LOCK", 0, 0),
        cmd([0x9c, 0] + list(be64(2)) + [0, 0, 0, 1, 0, 0], data=bytes(512)),
        event("CL_LOCK", 1, 1), event("LOGOUT", ev_arg(0)), event("CL_ANSWER", 0, 0),
    ])
    # another node's changes: registrations and a reservation, unit attentions, aborts
    s["cluster-peer"] = bytes([0x00, 0x03]) + b"".join([
        event("CL_PEER", ev_arg(0, 0), 0x42 | 2 << 3,
              bytes([0x00, 0x12, 0x34, 0x56, 0x09, 0x77, 0x77, 0x01, 0x01, 0x03, 0x00, 0x00, 0x05,
                     0x04, 0x2a, 0x03, 0x15, 0x29, 0x00])),
        cmd(tur(), nexus=0), cmd(pr_in(3), 0x2000, nexus=0), cmd(rw10(0x2a, 0, 1), data=bytes(512), nexus=2),
        cmd([0x16, 0, 0, 0, 0, 0], nexus=2), event("CL_ANSWER", 0, 0), cmd(tur(), nexus=4),
        event("CL_PEER", ev_arg(0, 1), 0x00), event("CL_PEER", ev_arg(0, 2), 0x01),
    ])
    # LU 2's backend unreachable at start (NOT READY, no geometry), then found; LU 0 grows
    s["capacity-changes"] = bytes([0x00, 0x08]) + b"".join([
        cmd(inquiry(96), 96, lun=2), cmd(tur(), lun=2), cmd(rc16(32), 32, lun=2),
        cmd(rw10(0x28, 0, 1), 4096, lun=2), cmd(pr_in(0), 0x100, lun=2),
        event("GROW", ev_arg(0, 2), 1 | 15 << 1), cmd(tur(), lun=2), cmd(tur(), lun=2),
        cmd(rc16(32), 32, lun=2), cmd(rw16(0x88, 15, 1), 4096, lun=2),
        event("GROW", ev_arg(0, 0), 8 << 1), cmd(rc10(), 8), cmd(tur()), cmd(rc10(), 8),
        cmd(rw16(0x88, 70, 2), 1024), cmd(get_lba_status(60, 0x100), 0x100),
    ])
    # every PERSISTENT RESERVE OUT path of libiscsi's prout_* and prin_* tests
    s["pr-lifecycle"] = bytes([0x00, 0x00]) + b"".join([
        cmd(pr_out(0), data=pr_params(0, k[1]), nexus=0),
        cmd(pr_out(0), data=pr_params(0, k[2]), nexus=2),
        cmd(pr_out(0), data=pr_params(0, k[3]), nexus=5),
        cmd(pr_out(1, 6), data=pr_params(k[1]), nexus=0),
        cmd(rw10(0x28, 0, 1), 512, nexus=4), cmd(rw10(0x28, 0, 1), 512, nexus=2),
        cmd([0x1b, 0, 0, 0, 1, 0], nexus=4), cmd([0x1e, 0, 0, 0, 0, 0], nexus=4),
        cmd(pr_out(2, 6), data=pr_params(k[1]), nexus=0), cmd(tur(), nexus=2),
        cmd(pr_out(0), data=pr_params(k[2], 0), nexus=2), cmd(pr_in(0), 0x100, nexus=2),
        cmd(pr_out(1, 8), data=pr_params(k[1]), nexus=0),
        cmd(rw10(0x28, 0, 1), 512, nexus=5), cmd(rw10(0x28, 0, 1), 512, nexus=3),
        cmd(pr_out(4, 8), data=pr_params(k[3], 0), nexus=5), cmd(tur(), nexus=0),
        cmd(pr_out(4, 1), data=pr_params(k[3], k[3]), nexus=5),
        cmd(pr_out(2, 1), data=pr_params(k[3]), nexus=5),
        cmd(pr_out(0), data=pr_params(k[3], 0), nexus=5),
        cmd([0x16, 0, 0, 0, 0, 0], nexus=1), cmd([0x57] + [0] * 9, nexus=1),
        cmd([0x16, 0, 0, 0, 0, 0], nexus=1), cmd([0x17, 0, 0, 0, 0, 0], nexus=1),
        cmd(pr_out(0), data=pr_params(0, k[2]), nexus=1),
        cmd(pr_out(0), data=pr_params(0, k[2]), nexus=1),
        cmd(pr_out(6), data=pr_params(0, k[1], aptpl=True), nexus=1),
        cmd(pr_out(5, 5), data=pr_params(k[1], 0), nexus=1),
        cmd(pr_out(9), data=pr_params(k[1])), cmd(pr_in(4), 0x100),
    ])
    # copy statuses: the same list ID twice in flight, 17 list IDs, a segment of 0 blocks
    xz = xcopy_params([cscd_e4(0), cscd_e4(1)], [seg_b2b(0, 1, 0, 0, 0), seg_b2b(0, 1, 1, 0, 1)],
                      list_id=3)
    recs = [cmd(xcopy(len(xp)), data=xp, inflight=True), cmd(xcopy(len(xp)), data=xp),
            io("pump"), cmd(xcopy(len(xz)), data=xz)]
    for i in range(17):
        xi = xcopy_params([cscd_e4(0)], [seg_b2b(0, 0, 1, 1, 2)], list_id=0x10 + i)
        recs.append(cmd(xcopy(len(xi)), data=xi, inflight=i > 14))
    recs += [cmd(rcr(0, 0x10), 0x400), io("pump"), cmd(rcr(0, 0x1f), 0x400),
             io("fail", 0), cmd(xcopy(len(xz)), data=xz, inflight=True), io("complete", 0),
             io("fail", 0), io("pump"), cmd(rcr(0, 3), 0x400)]
    s["xcopy-statuses"] = bytes([0x00, 0x00]) + b"".join(recs)
    # the HA agent's map of device groups, and a reload that moves ports between groups
    s["alua-map-ports"] = bytes([0x18, 0x00]) + b"".join([
        event("ALUA_MAP", 3 | 1 << 2, 0 | 1 << 2 | 2 << 4, b"\x21\x40\x02\x20"),
        cmd(rtpg(), 0x200), cmd(rtpg(), 0x200, lun=2), cmd(tur(), nexus=1),
        event("ALUA_MAP", 2, 0 | 3 << 2, b"\x20\x20"),
        event("PORTS", 0 | 0 << 2 | 2 << 4, 0x07), cmd(rtpg(), 0x200), cmd(inquiry(96), 96),
        cmd(tur(), nexus=1), event("PORTS", 0, 0x01), cmd(inquiry(96), 96), cmd(rtpg(), 0x200),
        cmd(stpg(8), data=be32(0) + bytes([0x01, 0]) + be16(2), nexus=1),
    ])
    return s


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "fuzz_scsi")
    os.makedirs(out, exist_ok=True)
    for name, data in seeds().items():
        assert len(data) < 65536, name
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
