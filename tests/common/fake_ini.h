/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An initiator for the unit tests of the iSCSI core (test_conn, test_task,
 * test_session): it logs in through the fake datamover (fake_dm.c) of a
 * gateway without threads (fake_gw.c), with the session shape the test asks
 * for, sends PDUs as bytes (digests as negotiated, or broken on purpose) and
 * records every PDU the target sends, in order, with its data.
 */
#ifndef ISERGW_FAKE_INI_H
#define ISERGW_FAKE_INI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_dm.h"
#include "fake_gw.h"

/* What the login asks for (zero: the default noted). */
struct fake_ini_opts {
	bool hd, dd;                    /* HeaderDigest, DataDigest CRC32C */
	bool no_immediate_data;         /* ImmediateData=No */
	bool initial_r2t;               /* InitialR2T=Yes */
	uint32_t first_burst;           /* 65536 */
	uint32_t max_burst;             /* 262144 */
	uint32_t max_out_r2t;           /* MaxOutstandingR2T, 1 */
	uint32_t target_mrdsl;          /* the target's MaxRecvDataSegmentLength, 65536 */
	uint32_t queue_depth;           /* the target's queue depth, 128 */
	uint8_t isid_no;                /* last byte of the ISID, 1 */
	uint16_t tsih;                  /* 0: a new session */
};

/* One PDU the target sent. */
struct fake_ini_rx {
	struct iscsi_bhs bhs;
	uint8_t *data;
	uint32_t dlen;
};

struct fake_ini {
	struct fake_gw *g;
	struct fake_dm *d;
	struct iscsi_conn *c;           /* the core's connection: NULL once it is closed */
	bool hd, dd;
	uint32_t cmd_sn;                /* the next CmdSN fake_ini_cmd_sn() gives */
	struct fake_ini_rx *rx;
	size_t nrx, caprx;
};

/*
 * The gateway the tests of a program share: made at the first call, reset
 * (fresh LUs) at each call, so call it with no connection alive; destroyed
 * by fake_ini_gw_destroy().
 */
struct fake_gw *fake_ini_gw(void);
void fake_ini_gw_destroy(void);
/* A cmocka group teardown doing fake_ini_gw_destroy(). */
int fake_ini_group_teardown(void **state);
/* For main(): only errors logged, everything with ISERGW_TEST_VERBOSE set. */
void fake_ini_log_level(void);
/* Log in (the gateway's target settings from o first); asserts full feature phase. */
void fake_ini_login(struct fake_ini *ini, const struct fake_ini_opts *o);
/*
 * The same, for a login that may fail: 0 in full feature phase, else the
 * Login Response's status class << 8 | status detail (ini->rx holds it;
 * free ini with fake_ini_logout_free either way).
 */
int fake_ini_login_try(struct fake_ini *ini, const struct fake_ini_opts *o);
/* The CmdSN for the next non-immediate command (counted) or immediate one (not). */
uint32_t fake_ini_cmd_sn(struct fake_ini *ini, bool immediate);
/*
 * The bytes of one PDU as sent on the wire into out (cap bytes): header
 * (bhs's DataSegmentLength and TotalAHSLength as given), AHS, header digest,
 * data, padding, data digest; bad_hd / bad_dd flip a bit of that digest.
 * Returns the length.
 */
size_t fake_ini_encode(const struct fake_ini *ini, const struct iscsi_bhs *bhs, const void *ahs,
		       const void *data, uint32_t dlen, bool bad_hd, bool bad_dd, uint8_t *out,
		       size_t cap);
/* Bytes to the target, then the reactor runs until nothing is ready. */
void fake_ini_feed(struct fake_ini *ini, const void *buf, size_t len);
/* A PDU (no AHS) to the target, then the reactor runs. */
void fake_ini_send(struct fake_ini *ini, const struct iscsi_bhs *bhs, const void *data,
		   uint32_t dlen);
/* The index of the first PDU from index `from` on with opcode op (and ITT itt unless
 * ~0u), or -1. */
int fake_ini_find(const struct fake_ini *ini, size_t from, uint8_t op, uint32_t itt);
/*
 * ExpCmdSN and MaxCmdSN as the target says them now: from the answer to an
 * immediate NOP-Out ping (ITT 0xfffe0000 + n), which is then forgotten.
 */
void fake_ini_window(struct fake_ini *ini, uint32_t *exp_cmd_sn, uint32_t *max_cmd_sn);
/* Forget what was received. */
void fake_ini_clear(struct fake_ini *ini);
/* Whether the target closed the connection (the core is done with it). */
bool fake_ini_closed(const struct fake_ini *ini);
/* The initiator hangs up (if still connected), the reactor runs; then frees all. */
void fake_ini_logout_free(struct fake_ini *ini);

/* Builders of initiator PDUs (CmdSN and ExpStatSN as given, LUN 0 unless lun). */
void fake_ini_scsi_cmd(struct iscsi_bhs *bhs, uint32_t itt, uint32_t cmd_sn, bool immediate,
		       uint64_t lun, const uint8_t *cdb, size_t cdb_len, uint8_t flags,
		       uint32_t edtl, uint32_t dlen);
void fake_ini_data_out(struct iscsi_bhs *bhs, uint32_t itt, uint32_t ttt, uint32_t data_sn,
		       uint32_t offset, uint32_t dlen, bool final);
void fake_ini_nop_out(struct iscsi_bhs *bhs, uint32_t itt, uint32_t cmd_sn, uint32_t dlen);
/* CDBs: READ(10) / WRITE(10) of n blocks at lba. */
void fake_ini_rw10(uint8_t cdb[16], bool write, uint32_t lba, uint16_t n);

#endif
