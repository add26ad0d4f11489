#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Seeds of fuzz_login and fuzz_chap (tests/fuzz/corpus/fuzz_login/ and
fuzz_chap/), in their record formats (see tests/fuzz/fuzz_login.c and
fuzz_chap.c): the logins and text exchanges that libiscsi (iscsi-ls,
iscsi-inq, the conformance suite) and the Linux initiator (open-iscsi, iSER)
send, key for key, as tests/integration drives them, and their CHAP
exchanges.

    tests/fuzz/gen_login_seeds.py        # writes both corpus directories
"""
import os
import struct
import sys

LOGIN, TEXT, CHAP, RAW, CLOSE = 0, 1, 2, 3, 4


def T(nsg):
    return 0x80 | nsg


def fl(csg, nsg=None, cont=False):
    f = csg << 2
    if nsg is not None:
        f |= 0x80 | nsg
    if cont:
        f |= 0x40
    return f


def text(*kv):
    return b"".join(k.encode() + b"\0" for k in kv)


def rec(op, flags, payload=b""):
    return struct.pack(">BBH", op, flags, len(payload)) + payload


OPEN_ISCSI_OP = (
    "HeaderDigest=None", "DataDigest=None", "DefaultTime2Wait=2", "DefaultTime2Retain=0",
    "IFMarker=No", "OFMarker=No", "ErrorRecoveryLevel=0", "InitialR2T=No",
    "ImmediateData=Yes", "MaxBurstLength=16776192", "FirstBurstLength=262144",
    "MaxOutstandingR2T=1", "MaxConnections=1", "DataPDUInOrder=Yes",
    "DataSequenceInOrder=Yes", "MaxRecvDataSegmentLength=262144")
LIBISCSI_OP = (
    "HeaderDigest=None,CRC32C", "DataDigest=None,CRC32C", "InitialR2T=Yes",
    "ImmediateData=Yes", "MaxBurstLength=262144", "FirstBurstLength=262144",
    "MaxRecvDataSegmentLength=262144", "DataPDUInOrder=Yes", "DataSequenceInOrder=Yes",
    "DefaultTime2Wait=2", "DefaultTime2Retain=0", "ErrorRecoveryLevel=0",
    "MaxConnections=1", "MaxOutstandingR2T=1")
I1 = "InitiatorName=iqn.1994-05.com.redhat:client1"
I2 = "InitiatorName=iqn.1994-05.com.redhat:client2"
LIBI = "InitiatorName=iqn.2007-10.com.github:sahlberg:libiscsi:iscsi-test"
CHAPT = "TargetName=iqn.2026-01.org.isergw:chap"
OPENT = "TargetName=iqn.2026-01.org.isergw:open"
ACLT = "TargetName=iqn.2026-01.org.isergw:acl"

seeds = {
    # iscsi-ls: discovery, no authentication, SendTargets=All
    "libiscsi-discovery": bytes([0]) +
        rec(LOGIN, fl(0, 1), text(LIBI, "SessionType=Discovery", "AuthMethod=None")) +
        rec(LOGIN, fl(1, 3), text("HeaderDigest=None,CRC32C", "DataDigest=None,CRC32C",
                                  "MaxRecvDataSegmentLength=262144")) +
        rec(TEXT, 0x80, text("SendTargets=All")),
    # iscsi-inq: a normal session straight from the security stage
    "libiscsi-normal": bytes([0]) +
        rec(LOGIN, fl(0, 1), text(LIBI, "InitiatorAlias=iscsi-test", OPENT,
                                  "SessionType=Normal", "AuthMethod=None")) +
        rec(LOGIN, fl(1, 3), text(*LIBISCSI_OP)) +
        rec(TEXT, 0x80, text("SendTargets=iqn.2026-01.org.isergw:open")),
    # open-iscsi to the ACL target, operational stage first
    "open-iscsi-acl": bytes([4]) +
        rec(LOGIN, fl(1, 3), text(I1, "InitiatorAlias=client1", ACLT, "SessionType=Normal",
                                  *OPEN_ISCSI_OP)),
    # open-iscsi with one-way CHAP (CHAP_A=5), the answer computed by the target
    "open-iscsi-chap": bytes([0x10]) +
        rec(LOGIN, 0, text(I1, "InitiatorAlias=client1", CHAPT, "SessionType=Normal",
                           "AuthMethod=CHAP,None")) +
        rec(LOGIN, 0, text("CHAP_A=5")) +
        rec(CHAP, 0x20) +
        rec(LOGIN, fl(1, 3), text(*OPEN_ISCSI_OP)),
    # mutual CHAP, SHA-256 first, base64 values
    "open-iscsi-mutual-chap": bytes([0x20]) +
        rec(LOGIN, 0, text(I1, CHAPT, "AuthMethod=CHAP")) +
        rec(LOGIN, 0, text("CHAP_A=7,5")) +
        rec(CHAP, 0x20 | 0x08 | 0x04, bytes([0x42]) + bytes(range(16))) +
        rec(LOGIN, fl(1, 3), text(*OPEN_ISCSI_OP)),
    # per-initiator CHAP of the ACL, a text renegotiation after login
    "acl-chap": bytes([0x30]) +
        rec(LOGIN, 0, text(I2, ACLT, "AuthMethod=CHAP")) +
        rec(LOGIN, 0, text("CHAP_A=5")) +
        rec(CHAP, 0x01 | 0x40) +
        rec(LOGIN, fl(1, 3), text("HeaderDigest=CRC32C", "DataDigest=CRC32C")) +
        rec(TEXT, 0x80, text("MaxRecvDataSegmentLength=8192", "X-com.example.Unknown=1")),
    # discovery CHAP (second configuration)
    "discovery-chap": bytes([0x41]) +
        rec(LOGIN, 0, text(I1, "SessionType=Discovery", "AuthMethod=CHAP,None")) +
        rec(LOGIN, 0, text("CHAP_A=5")) +
        rec(CHAP, 0x02 | 0x40) +
        rec(LOGIN, fl(1, 3), text("MaxRecvDataSegmentLength=512")) +
        rec(TEXT, 0x80, text("SendTargets=All")) +
        rec(TEXT, 0x81, b""),
    # the Linux iSER initiator (ib_iser) on an iSER portal
    "linux-iser": bytes([0x02]) +
        rec(LOGIN, fl(0, 1), text(I1, OPENT, "SessionType=Normal", "AuthMethod=None")) +
        rec(LOGIN, fl(1, 3), text("HeaderDigest=None", "DataDigest=None", "RDMAExtensions=Yes",
                                  "InitiatorRecvDataSegmentLength=262144",
                                  "TargetRecvDataSegmentLength=8192",
                                  "MaxOutstandingUnexpectedPDUs=0", "InitialR2T=Yes",
                                  "ImmediateData=Yes", "MaxBurstLength=16776192",
                                  "FirstBurstLength=262144", "MaxRecvDataSegmentLength=262144")),
    # libiscsi over iSER: no iSER keys, the target proposes RDMAExtensions
    "libiscsi-iser": bytes([0x06]) +
        rec(LOGIN, fl(0, 1), text(LIBI, OPENT, "AuthMethod=None")) +
        rec(LOGIN, fl(1, 3), text(*LIBISCSI_OP)) +
        rec(LOGIN, fl(1, 3), text("RDMAExtensions=Yes")),
    # a login text split over C=1 PDUs
    "continue": bytes([0]) +
        rec(LOGIN, fl(0, cont=True), text(I1)[:20]) +
        rec(LOGIN, fl(0, 1), text(I1)[20:] + text(OPENT, "AuthMethod=None")) +
        rec(LOGIN, fl(1, 3), text(*OPEN_ISCSI_OP)) +
        rec(TEXT, 0x40, text("SendTargets=All")[:5]) +
        rec(TEXT, 0x81, text("SendTargets=All")[5:]),
    # a raw Login Request BHS, then reinstatement with TSIH != 0
    "raw-bhs": bytes([0]) +
        rec(RAW, 0, struct.pack(">BBBBB3s6sHIHHII16s", 0x43, 0x87, 0, 0, 0,
                                len(text(I1, OPENT)).to_bytes(3, "big"),
                                bytes([0x80, 0x12, 0x34, 0x56, 0, 1]), 0, 0x1234, 1, 0,
                                77, 1, bytes(16)) + text(I1, OPENT)) +
        rec(CLOSE, 0) +
        rec(LOGIN | 0x10, fl(1, 3), text(I1, OPENT)),
    # the target proposes what it cannot live with (InitialR2T, ImmediateData, bursts):
    # the initiator answers, and once more with values the target must refuse
    "target-proposes": bytes([0]) +
        rec(LOGIN, fl(1, 3), text(I1, OPENT, "HeaderDigest=None")) +
        rec(LOGIN, fl(1, 3), text("InitialR2T=Yes", "ImmediateData=No", "MaxBurstLength=65536",
                                  "FirstBurstLength=65536", "MaxOutstandingR2T=4")) +
        rec(CLOSE, 0) +
        rec(LOGIN, fl(1, 3), text(I1, OPENT)) +
        rec(LOGIN, fl(1, 3), text("InitialR2T=No", "ImmediateData=Reject",
                                  "MaxBurstLength=Irrelevant")),
    # a login answer longer than one PDU (8 KiB): fetched with empty requests, C=1 answers
    "long-answer": bytes([0]) +
        rec(LOGIN, fl(1, 3), text(I1, OPENT, *("X-org.isergw.fuzz-%02d-%s=1" % (i, "k" * 36)
                                               for i in range(120)))) +
        rec(LOGIN, fl(1, 3)) +
        rec(LOGIN, fl(1, 3), text("ImmediateData=No", "MaxBurstLength=65536")) +
        rec(TEXT, 0x80, text("SendTargets=All", *("X-org.isergw.t%03d-%s=v" % (i, "k" * 44)
                                                    for i in range(120)))) +
        rec(TEXT, 0x81) + rec(TEXT, 0x81) +
        rec(TEXT, 0x80, text("MaxRecvDataSegmentLength=512", "SendTargets=All")) +
        rec(TEXT, 0x81) + rec(TEXT, 0x83, text("SendTargets=All")),
    # a TargetName with a newline and what would look like a log line after it, refused
    # as an unknown target: the log line that names it stays one line (live.sh --kind
    # login checks every line of the daemon's log); an InitiatorName with a control
    # character is refused before it is named
    "name-newline": bytes([0]) +
        rec(LOGIN, fl(0, 1), text(I1, "SessionType=Normal",
                                  "TargetName=iqn.2026-01.org.isergw:none\n"
                                  "2026-11-28T00:00:00.000Z err    gateway: forged",
                                  "AuthMethod=None")) +
        rec(CLOSE, 0) +
        rec(LOGIN, fl(0, 1), text(I1 + "\x1b[2J", "SessionType=Normal", OPENT,
                                  "AuthMethod=None")),
}



def chap_seed(mode, cuser, csecret, muser, msecret, *recs):
    def fld(b):
        return bytes([len(b)]) + b
    return bytes([mode]) + fld(cuser) + fld(csecret) + fld(muser) + fld(msecret) + b"".join(recs)


def crec(op, flags, payload=b""):
    return struct.pack(">BBH", op, flags, len(payload)) + payload


CH_A, CH_RAW, CH_ANSWER, CH_INIT, CH_CODEC = 0, 1, 2, 3, 4
chap_seeds = {
    # open-iscsi / libiscsi / Windows: CHAP_A=5, one-way, hex
    "md5-one-way": chap_seed(1, b"iuser", b"initiator-secret", b"", b"",
                             crec(CH_A, 0, b"5"), crec(CH_ANSWER, 0)),
    # newer open-iscsi: SHA-256 offered first, mutual CHAP, base64 values
    "sha256-mutual": chap_seed(3, b"iuser", b"initiator-secret", b"tuser", b"target-secret-2",
                               crec(CH_A, 0, b"7,5"),
                               crec(CH_ANSWER, 0x10 | 0x40 | 2, bytes([0x42]) + bytes(range(32)))),
    "mutual-hex-id": chap_seed(3, b"u", b"x", b"t" * 255, b"s" * 255,
                               crec(CH_A, 0, b"0x5,6,7"),
                               crec(CH_ANSWER, 0x10 | 0x20 | 1, bytes([0xff]) + bytes(range(1, 17)))),
    "mutual-empty-id": chap_seed(3, b"iuser", b"initiator-secret", b"tuser", b"target-secret-2",
                                 crec(CH_A, 0, b"5"), crec(CH_ANSWER, 0x10)),
    "reflection": chap_seed(3, b"iuser", b"initiator-secret", b"tuser", b"target-secret-2",
                            crec(CH_A, 0, b"5"), crec(CH_ANSWER, 0x90, bytes([1]))),
    "wrong-answers": chap_seed(1, b"iuser", b"initiator-secret", b"", b"",
                               crec(CH_A, 0, b"5"), crec(CH_ANSWER, 4),
                               crec(CH_INIT, 0), crec(CH_A, 0, b"7"), crec(CH_ANSWER, 8),
                               crec(CH_INIT, 0), crec(CH_ANSWER, 0)),
    "raw-response": chap_seed(1, b"iuser", b"initiator-secret", b"", b"",
                              crec(CH_A, 0, b"1,2,5"),
                              crec(CH_RAW, 0x0c, b"iuser\0" + b"0x" + b"00" * 16 + b"\0")),
    "no-credentials": chap_seed(0, b"", b"", b"", b"",
                                crec(CH_A, 0, b"5"), crec(CH_ANSWER, 0)),
    "codecs": chap_seed(0, b"", b"", b"", b"",
                        crec(CH_CODEC, 255, b"0x0123abcd"), crec(CH_CODEC, 255, b"0bAQIDBA=="),
                        crec(CH_CODEC, 255, b"18446744073709551615"),
                        crec(CH_CODEC, 3, b"0B//8="), crec(CH_CODEC, 255, b"0X" + b"f" * 2048)),
    "small-buffer": chap_seed(7, b"iuser", b"initiator-secret", b"tuser" * 40, b"target-secret-2",
                              crec(CH_A, 0, b"7"),
                              crec(CH_ANSWER, 0x10, bytes([7]) + bytes(range(16)))),
}

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
for target, table in (("fuzz_login", seeds), ("fuzz_chap", chap_seeds)):
    out = os.path.join(root, target)
    os.makedirs(out, exist_ok=True)
    for name, data in table.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
