// LINK: isergw_gw
// SOURCES: ../common/fake_dm.c ../common/fake_gw.c ../common/fake_ini.c
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the SCSI tasks of core/task.c as an initiator sees them:
 * the real core and SCSI layer on two memory LUs, with only the datamover
 * (tests/common/fake_dm.c) and the gateway around the core
 * (tests/common/fake_gw.c: one reactor polled by the test, backstore I/O
 * held when a test says) faked. (The task attribute scheduler has its own
 * test, test_task_attr, with task.c alone.)
 *
 * The CmdSN window (RFC 7143 4.2.2.1): commands in order, out of order (held
 * until the gap is filled, then run in CmdSN order), duplicates and commands
 * beyond MaxCmdSN ignored without a word, immediate commands run at once
 * without advancing ExpCmdSN. ABORT TASK and LOGICAL UNIT RESET on tasks in
 * the backstore: the aborted tasks are never answered, the others are, the
 * TMF Response comes once the backstore let the aborted I/O go. Writes:
 * R2Ts by FirstBurstLength (unsolicited data), MaxBurstLength and
 * MaxOutstandingR2T, InitialR2T; what was written reads back; a Data-Out
 * out of sequence ends its command with ABORTED COMMAND.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_ini.h"

#define BLOCK 512u

static uint8_t pattern[1u << 20];

static const struct iscsi_scsi_rsp *rsp_of(const struct fake_ini *ini, int i)
{
	assert_true(i >= 0);
	return (const struct iscsi_scsi_rsp *)&ini->rx[i].bhs;
}

/* sense key / ASC / ASCQ of a SCSI Response (data: 2 bytes of length, then the sense) */
static uint32_t sense_of(const struct fake_ini *ini, int i)
{
	const uint8_t *s = ini->rx[i].data;

	if (ini->rx[i].dlen < 2 + 14)
		return 0;
	return (uint32_t)(s[2 + 2] & 0x0f) << 16 | (uint32_t)s[2 + 12] << 8 | s[2 + 13];
}

static void tur(struct fake_ini *ini, uint32_t itt, uint32_t cmd_sn, bool immediate, uint64_t lun)
{
	static const uint8_t cdb[16] = { 0 };
	struct iscsi_bhs bhs;

	fake_ini_scsi_cmd(&bhs, itt, cmd_sn, immediate, lun, cdb, 6, ISCSI_FLAG_FINAL, 0, 0);
	fake_ini_send(ini, &bhs, NULL, 0);
}

/* Log in and take the power-on unit attention of both LUs. */
static void login_ready(struct fake_ini *ini, const struct fake_ini_opts *o)
{
	fake_ini_gw();
	fake_ini_login(ini, o);
	for (uint64_t lun = 0; lun < FAKE_GW_LUNS; lun++) {
		for (int k = 0;; k++) {
			int i;

			assert_true(k < 4);
			tur(ini, 0x900 + (uint32_t)k, fake_ini_cmd_sn(ini, false), false, lun);
			i = fake_ini_find(ini, 0, ISCSI_OP_SCSI_RSP, 0x900 + (uint32_t)k);
			if (rsp_of(ini, i)->status == SCSI_STATUS_GOOD)
				break;
		}
		fake_ini_clear(ini);
	}
}

static uint32_t exp_cmd_sn_of(const struct fake_ini *ini, int i)
{
	return be32toh(rsp_of(ini, i)->exp_cmd_sn);
}

static void test_cmdsn_in_order(void **state)
{
	struct fake_ini ini;
	uint32_t sn;

	(void)state;
	login_ready(&ini, NULL);
	sn = ini.cmd_sn;
	for (uint32_t k = 0; k < 3; k++)
		tur(&ini, 0x10 + k, fake_ini_cmd_sn(&ini, false), false, 0);
	assert_int_equal(ini.nrx, 3);
	for (uint32_t k = 0; k < 3; k++) {
		assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x10 + k), (int)k);
		assert_int_equal(exp_cmd_sn_of(&ini, (int)k), sn + k + 1);
	}
	fake_ini_logout_free(&ini);
}

/* CmdSN n+2, then n+1: held; then n: all three run, in CmdSN order. */
static void test_cmdsn_out_of_order(void **state)
{
	struct fake_ini ini;
	uint32_t sn;

	(void)state;
	login_ready(&ini, NULL);
	sn = ini.cmd_sn;
	tur(&ini, 0x22, sn + 2, false, 0);
	tur(&ini, 0x21, sn + 1, false, 0);
	assert_int_equal(ini.nrx, 0);
	tur(&ini, 0x20, sn, false, 0);
	assert_int_equal(ini.nrx, 3);
	for (uint32_t k = 0; k < 3; k++)
		assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x20 + k), (int)k);
	assert_int_equal(exp_cmd_sn_of(&ini, 2), sn + 3);
	fake_ini_logout_free(&ini);
}

/* A CmdSN already used (a duplicate) is ignored: no answer, no Reject, ExpCmdSN stays. */
static void test_cmdsn_duplicate(void **state)
{
	struct fake_ini ini;
	uint32_t sn;

	(void)state;
	login_ready(&ini, NULL);
	sn = ini.cmd_sn;
	tur(&ini, 0x30, fake_ini_cmd_sn(&ini, false), false, 0);
	assert_int_equal(ini.nrx, 1);
	tur(&ini, 0x31, sn, false, 0);
	assert_int_equal(ini.nrx, 1);
	tur(&ini, 0x32, fake_ini_cmd_sn(&ini, false), false, 0);
	assert_int_equal(ini.nrx, 2);
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x32), 1);
	assert_int_equal(exp_cmd_sn_of(&ini, 1), sn + 2);
	fake_ini_logout_free(&ini);
}

/*
 * Queue depth 4: MaxCmdSN is ExpCmdSN + 3. A command at MaxCmdSN + 1 is
 * ignored (never run, not even once the commands before it came); one at
 * MaxCmdSN waits for the gap and runs.
 */
static void test_cmdsn_outside_window(void **state)
{
	struct fake_ini_opts o = { .queue_depth = 4 };
	struct fake_ini ini;
	uint32_t sn, exp, max;

	(void)state;
	login_ready(&ini, &o);
	sn = ini.cmd_sn;
	fake_ini_window(&ini, &exp, &max);
	assert_int_equal(exp, sn);
	assert_int_equal(max, sn + 3);

	tur(&ini, 0x44, sn + 4, false, 0);      /* beyond MaxCmdSN */
	tur(&ini, 0x43, sn + 3, false, 0);      /* at MaxCmdSN: waits */
	assert_int_equal(ini.nrx, 0);
	for (uint32_t k = 0; k < 3; k++)
		tur(&ini, 0x50 + k, sn + k, false, 0);
	assert_int_equal(ini.nrx, 4);
	assert_true(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x43) >= 0);
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x44), -1);
	/* the window moved: sn + 4 is in it now, and was never kept */
	tur(&ini, 0x45, sn + 4, false, 0);
	assert_int_equal(ini.nrx, 5);
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x45), 4);
	assert_int_equal(exp_cmd_sn_of(&ini, 4), sn + 5);
	fake_ini_logout_free(&ini);
}

/*
 * Immediate commands run when they come, also ahead of a CmdSN gap, and do
 * not advance ExpCmdSN; a non-immediate one with the same CmdSN then does.
 */
static void test_immediate(void **state)
{
	struct fake_ini ini;
	uint32_t sn;
	int i;

	(void)state;
	login_ready(&ini, NULL);
	sn = ini.cmd_sn;
	tur(&ini, 0x61, sn + 1, false, 0);      /* waits for sn */
	tur(&ini, 0x60, sn, true, 0);           /* immediate: at once */
	assert_int_equal(ini.nrx, 1);
	i = fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x60);
	assert_int_equal(i, 0);
	assert_int_equal(exp_cmd_sn_of(&ini, i), sn);
	tur(&ini, 0x62, sn, false, 0);          /* fills the gap */
	assert_int_equal(ini.nrx, 3);
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x62), 1);
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x61), 2);
	assert_int_equal(exp_cmd_sn_of(&ini, 2), sn + 2);
	fake_ini_logout_free(&ini);
}

static void read10(struct fake_ini *ini, uint32_t itt, uint64_t lun, uint32_t lba, uint16_t n)
{
	struct iscsi_bhs bhs;
	uint8_t cdb[16];

	fake_ini_rw10(cdb, false, lba, n);
	fake_ini_scsi_cmd(&bhs, itt, fake_ini_cmd_sn(ini, false), false, lun, cdb, 10,
			  ISCSI_FLAG_FINAL | ISCSI_CMD_READ, (uint32_t)n * BLOCK, 0);
	fake_ini_send(ini, &bhs, NULL, 0);
}

static void tmf(struct fake_ini *ini, uint32_t itt, uint8_t func, uint64_t lun, uint32_t ref_itt,
		uint32_t ref_cmd_sn)
{
	struct iscsi_tmf_req req;

	memset(&req, 0, sizeof(req));
	req.opcode = ISCSI_OP_TASK_MGMT_REQ | ISCSI_OP_IMMEDIATE;
	req.function = 0x80 | func;
	iscsi_lun_encode(lun, req.lun);
	req.itt = htobe32(itt);
	req.ref_task_tag = htobe32(ref_itt);
	req.cmd_sn = htobe32(fake_ini_cmd_sn(ini, true));
	req.ref_cmd_sn = htobe32(ref_cmd_sn);
	fake_ini_send(ini, (struct iscsi_bhs *)&req, NULL, 0);
}

/* Whether the target sent anything about task itt (Data-In or SCSI Response). */
static bool answered(const struct fake_ini *ini, uint32_t itt)
{
	return fake_ini_find(ini, 0, ISCSI_OP_SCSI_RSP, itt) >= 0 ||
	       fake_ini_find(ini, 0, ISCSI_OP_DATA_IN, itt) >= 0;
}

/* The SCSI status of task itt: its SCSI Response's, or its last Data-In's (S bit); -1: none. */
static int status_of(const struct fake_ini *ini, uint32_t itt)
{
	int i = fake_ini_find(ini, 0, ISCSI_OP_SCSI_RSP, itt);

	if (i >= 0)
		return rsp_of(ini, i)->status;
	for (i = 0; (i = fake_ini_find(ini, (size_t)i, ISCSI_OP_DATA_IN, itt)) >= 0; i++) {
		const struct iscsi_data_in *d = (const struct iscsi_data_in *)&ini->rx[i].bhs;

		if (d->flags & ISCSI_DATAIN_STATUS)
			return d->status;
	}
	return -1;
}

static uint8_t tmf_response(const struct fake_ini *ini, uint32_t itt)
{
	int i = fake_ini_find(ini, 0, ISCSI_OP_TASK_MGMT_RSP, itt);

	assert_true(i >= 0);
	return ((const struct iscsi_tmf_rsp *)&ini->rx[i].bhs)->response;
}

static void test_abort_task(void **state)
{
	struct fake_ini ini;
	uint32_t sn;

	(void)state;
	login_ready(&ini, NULL);
	fake_gw_hold_io(ini.g, true);
	sn = ini.cmd_sn;
	read10(&ini, 0x70, 0, 0, 8);
	read10(&ini, 0x71, 0, 8, 8);
	assert_int_equal(ini.nrx, 0);
	tmf(&ini, 0x7a, ISCSI_TMF_ABORT_TASK, 0, 0x70, sn);
	/* the answer waits for the backstore to let the aborted READ go */
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_TASK_MGMT_RSP, 0x7a), -1);
	fake_gw_hold_io(ini.g, false);
	fake_gw_poll(ini.g);
	assert_int_equal(tmf_response(&ini, 0x7a), ISCSI_TMF_RSP_COMPLETE);
	assert_false(answered(&ini, 0x70));
	assert_int_equal(status_of(&ini, 0x71), SCSI_STATUS_GOOD);
	fake_ini_clear(&ini);

	/* a task that completed, and one that never was: TASK DOES NOT EXIST */
	tmf(&ini, 0x7b, ISCSI_TMF_ABORT_TASK, 0, 0x71, sn + 1);
	assert_int_equal(tmf_response(&ini, 0x7b), ISCSI_TMF_RSP_NO_TASK);
	tmf(&ini, 0x7c, ISCSI_TMF_ABORT_TASK, 0, 0x12345, sn - 1);
	assert_int_equal(tmf_response(&ini, 0x7c), ISCSI_TMF_RSP_NO_TASK);
	/* the session goes on */
	read10(&ini, 0x72, 0, 0, 1);
	assert_int_equal(status_of(&ini, 0x72), SCSI_STATUS_GOOD);
	fake_ini_logout_free(&ini);
}

static void test_lun_reset(void **state)
{
	struct fake_ini ini;
	int i;

	(void)state;
	login_ready(&ini, NULL);
	fake_gw_hold_io(ini.g, true);
	read10(&ini, 0x80, 0, 0, 8);
	read10(&ini, 0x81, 0, 8, 8);
	read10(&ini, 0x82, 1, 0, 1);
	tmf(&ini, 0x8a, ISCSI_TMF_LOGICAL_UNIT_RESET, 0, 0, 0);
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_TASK_MGMT_RSP, 0x8a), -1);
	fake_gw_hold_io(ini.g, false);
	fake_gw_poll(ini.g);
	assert_int_equal(tmf_response(&ini, 0x8a), ISCSI_TMF_RSP_COMPLETE);
	assert_false(answered(&ini, 0x80));
	assert_false(answered(&ini, 0x81));
	assert_int_equal(status_of(&ini, 0x82), SCSI_STATUS_GOOD);
	assert_int_equal(ini.c->ntasks, 0);
	fake_ini_clear(&ini);
	/* the next command on LUN 0 learns of the reset: 6/29/03 */
	read10(&ini, 0x83, 0, 0, 1);
	i = fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x83);
	assert_int_equal(rsp_of(&ini, i)->status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_of(&ini, i), 0x062903);
	/* a LUN that does not exist */
	tmf(&ini, 0x8b, ISCSI_TMF_LOGICAL_UNIT_RESET, 7, 0, 0);
	assert_int_equal(tmf_response(&ini, 0x8b), ISCSI_TMF_RSP_NO_LUN);
	fake_ini_logout_free(&ini);
}

/* The R2Ts the target sent for itt since index from, in order. */
static int next_r2t(const struct fake_ini *ini, size_t from, uint32_t itt,
		    const struct iscsi_r2t **r)
{
	int i = fake_ini_find(ini, from, ISCSI_OP_R2T, itt);

	*r = i >= 0 ? (const struct iscsi_r2t *)&ini->rx[i].bhs : NULL;
	return i;
}

/* Answer an R2T with Data-Out PDUs of at most seg bytes from pattern. */
static void answer_r2t(struct fake_ini *ini, uint32_t itt, const struct iscsi_r2t *r, uint32_t seg)
{
	uint32_t off = be32toh(r->buffer_offset), len = be32toh(r->desired_len);
	uint32_t ttt = be32toh(r->ttt), sn = 0;

	for (uint32_t done = 0; done < len; sn++) {
		uint32_t n = len - done < seg ? len - done : seg;
		struct iscsi_bhs bhs;

		fake_ini_data_out(&bhs, itt, ttt, sn, off + done, n, done + n == len);
		fake_ini_send(ini, &bhs, pattern + off + done, n);
		done += n;
	}
}

/* READ back n blocks at lba of LUN 0: must be pattern[0..). */
static void read_back(struct fake_ini *ini, uint32_t itt, uint32_t lba, uint16_t n)
{
	uint32_t got = 0;
	int i;

	fake_ini_clear(ini);
	read10(ini, itt, 0, lba, n);
	for (i = 0; (i = fake_ini_find(ini, (size_t)i, ISCSI_OP_DATA_IN, itt)) >= 0; i++) {
		const struct iscsi_data_in *d = (const struct iscsi_data_in *)&ini->rx[i].bhs;

		assert_memory_equal(ini->rx[i].data, pattern + be32toh(d->buffer_offset),
				    ini->rx[i].dlen);
		got += ini->rx[i].dlen;
	}
	assert_int_equal(got, (uint32_t)n * BLOCK);
}

/*
 * FirstBurstLength 4096, MaxBurstLength 8192, MaxOutstandingR2T 1, InitialR2T
 * No: a WRITE of 32 KiB with 2 KiB immediate gets 2 KiB more unsolicited
 * (up to FirstBurstLength), then R2Ts for 8192, 8192, 8192 and 4096 bytes, one
 * at a time, R2TSN 0..3; Data-Out in 1 KiB pieces.
 */
static void test_r2t_bursts(void **state)
{
	struct fake_ini_opts o = { .first_burst = 4096, .max_burst = 8192, .max_out_r2t = 1 };
	static const uint32_t want_off[] = { 4096, 12288, 20480, 28672 };
	static const uint32_t want_len[] = { 8192, 8192, 8192, 4096 };
	const struct iscsi_r2t *r;
	struct fake_ini ini;
	struct iscsi_bhs bhs;
	uint8_t cdb[16];
	size_t from = 0;
	int i;

	(void)state;
	login_ready(&ini, &o);
	fake_ini_rw10(cdb, true, 0, 64);
	fake_ini_scsi_cmd(&bhs, 0xa0, fake_ini_cmd_sn(&ini, false), false, 0, cdb, 10,
			  ISCSI_CMD_WRITE, 32768, 2048);
	fake_ini_send(&ini, &bhs, pattern, 2048);
	/* the first R2T starts past the unsolicited burst, at once */
	assert_int_equal(ini.nrx, 1);
	fake_ini_data_out(&bhs, 0xa0, 0xffffffffu, 0, 2048, 2048, true);
	fake_ini_send(&ini, &bhs, pattern + 2048, 2048);
	for (unsigned int k = 0; k < 4; k++) {
		i = next_r2t(&ini, from, 0xa0, &r);
		assert_true(i >= 0);
		assert_int_equal(be32toh(r->buffer_offset), want_off[k]);
		assert_int_equal(be32toh(r->desired_len), want_len[k]);
		assert_int_equal(be32toh(r->r2t_sn), k);
		/* MaxOutstandingR2T 1: no other one before this is answered */
		assert_int_equal(next_r2t(&ini, (size_t)i + 1, 0xa0, &r), -1);
		r = (const struct iscsi_r2t *)&ini.rx[i].bhs;
		from = ini.nrx;
		answer_r2t(&ini, 0xa0, r, 1024);
	}
	assert_int_equal(next_r2t(&ini, from, 0xa0, &r), -1);
	i = fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0xa0);
	assert_int_equal(rsp_of(&ini, i)->status, SCSI_STATUS_GOOD);
	read_back(&ini, 0xa1, 0, 64);
	fake_ini_logout_free(&ini);
}

/* MaxOutstandingR2T 2: two R2Ts out at once; the third when one is answered. */
static void test_r2t_outstanding(void **state)
{
	struct fake_ini_opts o = { .max_burst = 4096, .max_out_r2t = 2, .initial_r2t = true };
	const struct iscsi_r2t *r1, *r2, *r3;
	struct fake_ini ini;
	struct iscsi_bhs bhs;
	uint8_t cdb[16];
	int i1, i2, i3;

	(void)state;
	login_ready(&ini, &o);
	fake_ini_rw10(cdb, true, 0, 24);
	/* InitialR2T=Yes: immediate data still allowed, F set */
	fake_ini_scsi_cmd(&bhs, 0xb0, fake_ini_cmd_sn(&ini, false), false, 0, cdb, 10,
			  ISCSI_FLAG_FINAL | ISCSI_CMD_WRITE, 12288, 1024);
	fake_ini_send(&ini, &bhs, pattern, 1024);
	i1 = next_r2t(&ini, 0, 0xb0, &r1);
	i2 = next_r2t(&ini, (size_t)i1 + 1, 0xb0, &r2);
	assert_true(i1 >= 0 && i2 >= 0);
	assert_int_equal(next_r2t(&ini, (size_t)i2 + 1, 0xb0, &r3), -1);
	assert_int_equal(be32toh(r1->buffer_offset), 1024);
	assert_int_equal(be32toh(r1->desired_len), 4096);
	assert_int_equal(be32toh(r2->buffer_offset), 5120);
	assert_int_equal(be32toh(r2->desired_len), 4096);
	assert_int_not_equal(r1->ttt, r2->ttt);
	/* the second answered first: the third R2T comes */
	answer_r2t(&ini, 0xb0, (const struct iscsi_r2t *)&ini.rx[i2].bhs, 4096);
	i3 = next_r2t(&ini, (size_t)i2 + 1, 0xb0, &r3);
	assert_true(i3 >= 0);
	assert_int_equal(be32toh(r3->buffer_offset), 9216);
	assert_int_equal(be32toh(r3->desired_len), 3072);
	answer_r2t(&ini, 0xb0, (const struct iscsi_r2t *)&ini.rx[i3].bhs, 4096);
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0xb0), -1);
	answer_r2t(&ini, 0xb0, (const struct iscsi_r2t *)&ini.rx[i1].bhs, 4096);
	assert_int_equal(rsp_of(&ini, fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0xb0))->status,
			 SCSI_STATUS_GOOD);
	read_back(&ini, 0xb1, 0, 24);
	fake_ini_logout_free(&ini);
}

/*
 * What the negotiated burst sizes forbid is rejected: immediate data beyond
 * FirstBurstLength, immediate data with ImmediateData=No; the CmdSN is used.
 */
static void test_burst_limits(void **state)
{
	struct fake_ini_opts o[2] = { { .first_burst = 4096 }, { .no_immediate_data = true } };
	uint32_t dlen[2] = { 8192, 512 };

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct fake_ini ini;
		struct iscsi_bhs bhs;
		uint8_t cdb[16];

		login_ready(&ini, &o[k]);
		fake_ini_rw10(cdb, true, 0, 16);
		fake_ini_scsi_cmd(&bhs, 0xc0, fake_ini_cmd_sn(&ini, false), false, 0, cdb, 10,
				  ISCSI_FLAG_FINAL | ISCSI_CMD_WRITE, 8192, dlen[k]);
		fake_ini_send(&ini, &bhs, pattern, dlen[k]);
		assert_int_equal(ini.nrx, 1);
		assert_int_equal(iscsi_bhs_opcode(&ini.rx[0].bhs), ISCSI_OP_REJECT);
		assert_int_equal(((struct iscsi_reject *)&ini.rx[0].bhs)->reason,
				 ISCSI_REJECT_PROTOCOL_ERROR);
		/* its CmdSN was consumed: the next one runs */
		tur(&ini, 0xc1, fake_ini_cmd_sn(&ini, false), false, 0);
		assert_true(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0xc1) >= 0);
		fake_ini_logout_free(&ini);
	}
}

/*
 * A WRITE of 4096 bytes at lba whose first Data-Out comes at the wrong
 * offset: ABORTED COMMAND 4B/05 at once. Returns its R2T.
 */
static const struct iscsi_r2t *write_bad_offset(struct fake_ini *ini, uint32_t itt, uint32_t lba)
{
	const struct iscsi_r2t *r;
	struct iscsi_bhs bhs;
	uint8_t cdb[16];
	int i;

	fake_ini_rw10(cdb, true, lba, 8);
	fake_ini_scsi_cmd(&bhs, itt, fake_ini_cmd_sn(ini, false), false, 0, cdb, 10,
			  ISCSI_FLAG_FINAL | ISCSI_CMD_WRITE, 4096, 0);
	fake_ini_send(ini, &bhs, NULL, 0);
	i = next_r2t(ini, 0, itt, &r);
	assert_true(i >= 0);
	assert_int_equal(be32toh(r->buffer_offset), 0);
	fake_ini_data_out(&bhs, itt, be32toh(r->ttt), 0, 512, 1024, false);
	fake_ini_send(ini, &bhs, pattern, 1024);
	i = fake_ini_find(ini, 0, ISCSI_OP_SCSI_RSP, itt);
	assert_int_equal(rsp_of(ini, i)->status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_of(ini, i), 0x0b4b05);
	return r;
}

/*
 * A Data-Out at the wrong offset: ABORTED COMMAND 4B/05 at once, nothing
 * written (the blocks read back as zeroes), the session goes on.
 */
static void test_data_out_bad_offset(void **state)
{
	struct fake_ini_opts o = { .initial_r2t = true, .no_immediate_data = true };
	const struct iscsi_r2t *r;
	struct fake_ini ini;
	struct iscsi_bhs bhs;
	int i;

	(void)state;
	login_ready(&ini, &o);
	r = write_bad_offset(&ini, 0xd0, 100);
	/* the rest of its data (the command is over: a Reject at most) */
	fake_ini_data_out(&bhs, 0xd0, be32toh(r->ttt), 1, 1536, 512, true);
	fake_ini_send(&ini, &bhs, pattern, 512);
	assert_false(fake_ini_closed(&ini));
	fake_ini_clear(&ini);
	read10(&ini, 0xd1, 0, 100, 8);
	assert_int_equal(status_of(&ini, 0xd1), SCSI_STATUS_GOOD);
	i = fake_ini_find(&ini, 0, ISCSI_OP_DATA_IN, 0xd1);
	assert_true(i >= 0);
	for (uint32_t k = 0; k < ini.rx[i].dlen; k++)
		assert_int_equal(ini.rx[i].data[k], 0);
	fake_ini_logout_free(&ini);
}

/* The Data-In of task itt that carries its status, checked: GOOD, no residual, DataSN 0. */
static void assert_read_good(const struct fake_ini *ini, uint32_t itt)
{
	int i = fake_ini_find(ini, 0, ISCSI_OP_DATA_IN, itt);
	const struct iscsi_data_in *d;

	assert_true(i >= 0);
	d = (const struct iscsi_data_in *)&ini->rx[i].bhs;
	assert_int_equal(d->flags & (ISCSI_FLAG_FINAL | ISCSI_DATAIN_STATUS | ISCSI_RSP_UNDERFLOW |
				     ISCSI_RSP_OVERFLOW), ISCSI_FLAG_FINAL | ISCSI_DATAIN_STATUS);
	assert_int_equal(d->status, SCSI_STATUS_GOOD);
	assert_int_equal(be32toh(d->data_sn), 0);
	assert_int_equal(be32toh(d->residual), 0);
	assert_int_equal(fake_ini_find(ini, 0, ISCSI_OP_SCSI_RSP, itt), -1);
}

/*
 * Tasks are reused (the reactor's cache, not zeroed whole): a command after
 * one that failed its Data-Out, one that ended with sense data and one that
 * had R2Ts carries nothing of them: its status, sense, residual, DataSN,
 * R2TSN and R2T state are its own.
 */
static void test_task_reuse(void **state)
{
	struct fake_ini_opts o = { .initial_r2t = true, .no_immediate_data = true };
	const struct iscsi_r2t *r;
	struct fake_ini ini;
	struct iscsi_bhs bhs;
	uint8_t cdb[16];
	int i;

	(void)state;
	login_ready(&ini, &o);
	/* a WRITE whose Data-Out is out of sequence: ABORTED COMMAND */
	write_bad_offset(&ini, 0xe0, 200);
	fake_ini_clear(&ini);
	/* a READ past the end: CHECK CONDITION with sense data */
	read10(&ini, 0xe1, 0, 0xfffffff0u, 8);
	i = fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0xe1);
	assert_true(i >= 0);
	assert_int_equal(rsp_of(&ini, i)->status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_of(&ini, i), 0x052100);
	fake_ini_clear(&ini);
	/* a READ: GOOD in its Data-In, nothing of the sense before */
	read10(&ini, 0xe2, 0, 200, 8);
	assert_read_good(&ini, 0xe2);
	fake_ini_clear(&ini);
	/* a WRITE: R2TSN 0 for the whole of it, GOOD without sense */
	fake_ini_rw10(cdb, true, 200, 8);
	fake_ini_scsi_cmd(&bhs, 0xe3, fake_ini_cmd_sn(&ini, false), false, 0, cdb, 10,
			  ISCSI_FLAG_FINAL | ISCSI_CMD_WRITE, 4096, 0);
	fake_ini_send(&ini, &bhs, NULL, 0);
	assert_true(next_r2t(&ini, 0, 0xe3, &r) >= 0);
	assert_int_equal(be32toh(r->r2t_sn), 0);
	assert_int_equal(be32toh(r->buffer_offset), 0);
	assert_int_equal(be32toh(r->desired_len), 4096);
	answer_r2t(&ini, 0xe3, r, 4096);
	i = fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0xe3);
	assert_true(i >= 0);
	assert_int_equal(rsp_of(&ini, i)->status, SCSI_STATUS_GOOD);
	assert_int_equal(ini.rx[i].dlen, 0);
	assert_int_equal(rsp_of(&ini, i)->flags & (ISCSI_RSP_UNDERFLOW | ISCSI_RSP_OVERFLOW), 0);
	/* and what it wrote reads back */
	read_back(&ini, 0xe4, 200, 8);
	assert_read_good(&ini, 0xe4);
	fake_ini_logout_free(&ini);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmdsn_in_order),
		cmocka_unit_test(test_cmdsn_out_of_order),
		cmocka_unit_test(test_cmdsn_duplicate),
		cmocka_unit_test(test_cmdsn_outside_window),
		cmocka_unit_test(test_immediate),
		cmocka_unit_test(test_abort_task),
		cmocka_unit_test(test_lun_reset),
		cmocka_unit_test(test_r2t_bursts),
		cmocka_unit_test(test_r2t_outstanding),
		cmocka_unit_test(test_burst_limits),
		cmocka_unit_test(test_data_out_bad_offset),
		cmocka_unit_test(test_task_reuse),
	};

	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + (i >> 9));
	fake_ini_log_level();
	return cmocka_run_group_tests(tests, NULL, fake_ini_group_teardown);
}
