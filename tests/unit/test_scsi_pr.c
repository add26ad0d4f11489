// LINK: gw_scsi gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reservations: SCSI-2 RESERVE/RELEASE, persistent reservations (every
 * type, the access table, ownership, PREEMPT/CLEAR and their unit
 * attentions, parameter checks) and persistence across LU re-creation.
 */
#include <sys/stat.h>

#include "test_scsi_harness.h"

#define MB (1024ull * 1024)

static int setup(void **state)
{
	struct tctx *x = malloc(sizeof(*x));
	struct scsi_lu_params p = default_params();

	tctx_setup(x, 4 * MB, 512, &p);
	drain_ua(x, &x->a);
	drain_ua(x, &x->b);
	*state = x;
	return 0;
}

/* ------------------------------------------------------------- helpers */

static uint8_t mode_sense(struct tctx *x, const struct scsi_itn *itn)
{
	uint8_t c[16] = { 0x1a, 0, 0x3f, 0, 255 }, buf[256];

	return run_cdb(x, itn, c, 6, buf, sizeof(buf));
}

static uint8_t simple(struct tctx *x, const struct scsi_itn *itn, uint8_t op)
{
	uint8_t c[16] = { op };

	return run_cdb(x, itn, c, op < 0x20 ? 6 : 10, NULL, 0);
}

static uint8_t prout(struct tctx *x, const struct scsi_itn *itn, uint8_t sa, uint8_t type,
		     uint64_t rk, uint64_t sark, uint8_t flags)
{
	uint8_t c[16] = { 0x5f, sa, type, 0, 0, 0, 0, 0, 24 }, p[24];
	int i;

	memset(p, 0, sizeof(p));
	for (i = 0; i < 8; i++) {
		p[i] = (uint8_t)(rk >> (56 - 8 * i));
		p[8 + i] = (uint8_t)(sark >> (56 - 8 * i));
	}
	p[20] = flags;
	return run_cdb(x, itn, c, 10, p, sizeof(p));
}

static uint8_t prin(struct tctx *x, const struct scsi_itn *itn, uint8_t sa, uint8_t *buf,
		    uint16_t alloc)
{
	uint8_t c[16] = { 0x5e, sa, 0, 0, 0, 0, 0, (uint8_t)(alloc >> 8), (uint8_t)alloc };

	memset(buf, 0, alloc);
	return run_cdb(x, itn, c, 10, buf, alloc);
}

static uint32_t nkeys(struct tctx *x, uint32_t *gen)
{
	uint8_t buf[1024];

	assert_int_equal(prin(x, &x->a, 0, buf, sizeof(buf)), SCSI_STATUS_GOOD);
	if (gen)
		*gen = be32(buf);
	return be32(&buf[4]) / 8;
}

/* Returns the type, or 0 if not reserved; *key is the reported key. */
static uint8_t resv(struct tctx *x, uint64_t *key)
{
	uint8_t buf[64];

	assert_int_equal(prin(x, &x->a, 1, buf, sizeof(buf)), SCSI_STATUS_GOOD);
	if (be32(&buf[4]) == 0)
		return 0;
	assert_int_equal(be32(&buf[4]), 16);
	if (key)
		*key = be64(&buf[8]);
	return buf[21] & 0x0f;
}

#define C SCSI_STATUS_RESERVATION_CONFLICT
#define G SCSI_STATUS_GOOD

/* ----------------------------------------------------------------- SCSI-2 */

static void test_reserve6(void **state)
{
	struct tctx *x = *state;

	assert_int_equal(simple(x, &x->a, 0x16), G);
	assert_int_equal(simple(x, &x->a, 0x16), G);    /* re-reserve by the holder */
	assert_int_equal(simple(x, &x->b, 0x16), C);
	assert_int_equal(simple(x, &x->b, 0x56), C);
	assert_int_equal(simple(x, &x->b, 0x17), G);    /* RELEASE by another: no-op */
	assert_int_equal(mode_sense(x, &x->a), G);
	assert_int_equal(mode_sense(x, &x->b), C);
	assert_int_equal(run_read1(x, &x->b), C);
	assert_int_equal(run_write1(x, &x->b), C);
	assert_int_equal(run_tur(x, &x->b), C);
	assert_int_equal(simple(x, &x->b, 0x12), G);    /* INQUIRY allowed */
	assert_int_equal(simple(x, &x->b, 0x25), G);    /* READ CAPACITY allowed */
	assert_int_equal(run_read1(x, &x->a), G);
	assert_int_equal(run_write1(x, &x->a), G);
	assert_int_equal(simple(x, &x->a, 0x57), G);    /* RELEASE(10) by the holder */
	assert_int_equal(simple(x, &x->b, 0x16), G);
	assert_int_equal(run_read1(x, &x->a), C);
	assert_int_equal(simple(x, &x->b, 0x17), G);
	assert_int_equal(run_read1(x, &x->a), G);
}

static void test_reserve6_released_by_reset_and_loss(void **state)
{
	struct tctx *x = *state;

	assert_int_equal(simple(x, &x->a, 0x16), G);
	scsi_lu_reset(x->lu, &x->a, SCSI_RESET_LU);
	drain_ua(x, &x->a);
	drain_ua(x, &x->b);
	assert_int_equal(simple(x, &x->b, 0x16), G);

	/* I_T nexus loss of the holder releases it */
	scsi_lu_itn_remove(x->lu, &x->b);
	assert_int_equal(simple(x, &x->a, 0x16), G);
	scsi_lu_itn_add(x->lu, &x->b);
	assert_int_equal(simple(x, &x->b, 0x16), C);
	assert_int_equal(simple(x, &x->a, 0x17), G);
}

static void test_reserve6_vs_pr(void **state)
{
	struct tctx *x = *state;

	/* registrations make RESERVE/RELEASE conflict */
	assert_int_equal(prout(x, &x->a, 0x06, 0, 0, 0x1111, 0), G);
	assert_int_equal(simple(x, &x->b, 0x16), C);
	assert_int_equal(simple(x, &x->a, 0x16), C);
	assert_int_equal(simple(x, &x->a, 0x17), C);
	assert_int_equal(prout(x, &x->a, 0x00, 0, 0x1111, 0, 0), G);
	assert_int_equal(simple(x, &x->a, 0x16), G);
	/* a SCSI-2 reservation makes another nexus' PR commands conflict */
	assert_int_equal(prout(x, &x->b, 0x06, 0, 0, 0x2222, 0), C);
	{
		uint8_t buf[64];

		assert_int_equal(prin(x, &x->b, 0, buf, 64), C);
	}
	assert_int_equal(simple(x, &x->a, 0x17), G);
}

/* --------------------------------------------------------- PR basic flows */

static void test_pr_register_read_keys(void **state)
{
	struct tctx *x = *state;
	uint32_t gen0, gen;
	uint8_t buf[1024];

	assert_int_equal(nkeys(x, &gen0), 0);
	/* REGISTER with a non-zero reservation key from an unregistered nexus */
	assert_int_equal(prout(x, &x->a, 0x00, 0, 0x99, 0xaaaa, 0), C);
	/* unregistering an unregistered nexus is a no-op */
	assert_int_equal(prout(x, &x->a, 0x00, 0, 0, 0, 0), G);
	assert_int_equal(nkeys(x, &gen), 0);
	assert_int_equal(gen, gen0);

	assert_int_equal(prout(x, &x->a, 0x00, 0, 0, 0xaaaa, 0), G);
	assert_int_equal(prout(x, &x->b, 0x06, 0, 0, 0xbbbb, 0), G);
	assert_int_equal(nkeys(x, &gen), 2);
	assert_int_equal(gen, gen0 + 2);
	assert_int_equal(prin(x, &x->b, 0, buf, sizeof(buf)), G);
	assert_int_equal(be64(&buf[8]), 0xaaaa);
	assert_int_equal(be64(&buf[16]), 0xbbbb);
	/* truncated READ KEYS keeps the full ADDITIONAL LENGTH */
	assert_int_equal(prin(x, &x->b, 0, buf, 12), G);
	assert_int_equal(x->t.c.xfer_len, 12);
	assert_int_equal(be32(&buf[4]), 16);

	/* wrong key: conflict; right key: change it */
	assert_int_equal(prout(x, &x->a, 0x00, 0, 0x1234, 0xcccc, 0), C);
	assert_int_equal(prout(x, &x->a, 0x00, 0, 0xaaaa, 0xcccc, 0), G);
	/* REGISTER AND IGNORE EXISTING KEY ignores the reservation key */
	assert_int_equal(prout(x, &x->a, 0x06, 0, 0x5555, 0xdddd, 0), G);
	assert_int_equal(prin(x, &x->a, 0, buf, sizeof(buf)), G);
	assert_int_equal(be64(&buf[8]), 0xdddd);
	/* registrations alone do not restrict access */
	assert_int_equal(run_write1(x, &x->b), G);
	/* unregister both */
	assert_int_equal(prout(x, &x->a, 0x00, 0, 0xdddd, 0, 0), G);
	assert_int_equal(prout(x, &x->b, 0x00, 0, 0xbbbb, 0, 0), G);
	assert_int_equal(nkeys(x, NULL), 0);
}

static void test_pr_param_checks(void **state)
{
	struct tctx *x = *state;
	uint8_t c[16] = { 0x5f, 0x00, 0, 0, 0, 0, 0, 0, 20 }, p[32] = { 0 }, buf[64];
	int sa;

	/* parameter list length must be 24 */
	run_cdb(x, &x->a, c, 10, p, 20);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x1a00);
	c[8] = 28;
	run_cdb(x, &x->a, c, 10, p, 28);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x1a00);
	/* SPEC_I_PT unsupported */
	assert_int_equal(prout(x, &x->a, 0x00, 0, 0, 1, 0x08), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_asc(x), 0x2600);
	/* ALL_TG_PT only with REGISTER */
	assert_int_equal(prout(x, &x->a, 0x00, 0, 0, 0x77, 0x04), G);
	assert_int_equal(prout(x, &x->a, 0x01, 0x01, 0x77, 0, 0x04), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_asc(x), 0x2600);
	/* bad type / scope */
	assert_int_equal(prout(x, &x->a, 0x01, 0x02, 0x77, 0, 0), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_asc(x), 0x2400);
	assert_int_equal(prout(x, &x->a, 0x01, 0x11, 0x77, 0, 0), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_asc(x), 0x2400);
	/* REGISTER AND MOVE rejected; unknown PROUT service action */
	assert_int_equal(prout(x, &x->a, 0x07, 0x01, 0x77, 0x88, 0), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_asc(x), 0x2400);
	/* PRIN service action range: 0..3 work, 4..1f fail with INVALID FIELD */
	for (sa = 0; sa < 0x20; sa++) {
		uint8_t st = prin(x, &x->a, (uint8_t)sa, buf, sizeof(buf));

		if (sa < 4) {
			assert_int_equal(st, G);
		} else {
			assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
			assert_int_equal(be16(&x->t.c.sense[16]), 1);
		}
	}
	/* registered through ALL_TG_PT: seen on another target port */
	{
		struct scsi_itn other = x->a;

		other.port = &test_port2;
		assert_int_equal(prout(x, &other, 0x00, 0, 0x77, 0, 0), G);
	}
	assert_int_equal(nkeys(x, NULL), 0);
}

static void test_pr_capabilities_full_status(void **state)
{
	struct tctx *x = *state;
	uint8_t buf[1024];
	uint32_t off, n;

	assert_int_equal(prin(x, &x->a, 2, buf, sizeof(buf)), G);
	assert_int_equal(x->t.c.xfer_len, 8);
	assert_int_equal(be16(buf), 8);
	assert_int_equal(buf[2] & 0x08, 0);             /* SIP_C */
	assert_int_equal(buf[2] & 0x05, 0x05);          /* ATP_C, PTPL_C */
	assert_int_equal(buf[3] & 0x80, 0x80);          /* TMV */
	assert_true(((buf[3] >> 4) & 7) <= 5);
	assert_int_equal(be16(&buf[4]), 0xeA01);        /* all six types */

	assert_int_equal(prout(x, &x->a, 0x00, 0, 0, 0x10, 0x01), G);   /* APTPL */
	assert_int_equal(prout(x, &x->b, 0x00, 0, 0, 0x20, 0), G);
	assert_int_equal(prout(x, &x->a, 0x01, 0x05, 0x10, 0, 0), G);
	assert_int_equal(prin(x, &x->a, 2, buf, sizeof(buf)), G);
	assert_int_equal(buf[3] & 0x01, 0);             /* last REGISTER had APTPL=0 */

	assert_int_equal(prin(x, &x->a, 3, buf, sizeof(buf)), G);
	n = be32(&buf[4]);
	off = 8;
	while (off < 8 + n) {
		uint64_t key = be64(&buf[off]);
		uint32_t tl = be32(&buf[off + 20]);

		assert_int_equal(be16(&buf[off + 18]), 1);
		assert_int_equal(buf[off + 24], 0x45);
		assert_int_equal(be16(&buf[off + 26]) + 4, tl);
		if (key == 0x10) {
			assert_int_equal(buf[off + 12] & 1, 1);
			assert_int_equal(buf[off + 13], 0x05);
			assert_string_equal((char *)&buf[off + 28], x->a.initiator_port);
		} else {
			assert_int_equal(key, 0x20);
			assert_int_equal(buf[off + 12] & 1, 0);
			assert_string_equal((char *)&buf[off + 28], x->b.initiator_port);
		}
		off += 24 + tl;
	}
	assert_int_equal(off, 8 + n);
	assert_int_equal(prout(x, &x->a, 0x03, 0, 0x10, 0, 0), G);      /* CLEAR */
	drain_ua(x, &x->b);
}

/* ---------------------------------------------- access and ownership tables */

struct access_row {
	uint8_t type;
	bool reg_read, reg_write, unreg_read, unreg_write;
};

static void test_pr_access(void **state)
{
	static const struct access_row rows[] = {
		{ 0x3, false, false, false, false },    /* Exclusive Access */
		{ 0x1, true, false, true, false },      /* Write Exclusive */
		{ 0x6, true, true, false, false },      /* EA - Registrants Only */
		{ 0x5, true, true, true, false },       /* WE - Registrants Only */
		{ 0x8, true, true, false, false },      /* EA - All Registrants */
		{ 0x7, true, true, true, false },       /* WE - All Registrants */
	};
	struct tctx *x = *state;
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct access_row *r = &rows[i];
		bool ar = r->type == 0x7 || r->type == 0x8;
		uint64_t key = 0;

		assert_int_equal(prout(x, &x->a, 0x06, 0, 0, 0xa1, 0), G);
		assert_int_equal(prout(x, &x->b, 0x06, 0, 0, 0xb2, 0), G);
		assert_int_equal(prout(x, &x->a, 0x01, r->type, 0xa1, 0, 0), G);
		assert_int_equal(resv(x, &key), r->type);
		assert_int_equal(key, ar ? 0 : 0xa1);
		/* holder: everything */
		assert_int_equal(run_read1(x, &x->a), G);
		assert_int_equal(run_write1(x, &x->a), G);
		/* registered other nexus */
		assert_int_equal(run_read1(x, &x->b), r->reg_read ? G : C);
		assert_int_equal(run_write1(x, &x->b), r->reg_write ? G : C);
		/* always allowed commands */
		assert_int_equal(simple(x, &x->b, 0x12), G);
		assert_int_equal(simple(x, &x->b, 0x25), G);
		assert_int_equal(run_tur(x, &x->b), G);
		/* reserving another type while reserved: conflict */
		assert_int_equal(prout(x, &x->b, 0x01, r->type == 1 ? 3 : 1, 0xb2, 0, 0), C);
		/* unregistered other nexus */
		assert_int_equal(prout(x, &x->b, 0x00, 0, 0xb2, 0, 0), G);
		assert_int_equal(run_read1(x, &x->b), r->unreg_read ? G : C);
		assert_int_equal(run_write1(x, &x->b), r->unreg_write ? G : C);
		assert_int_equal(mode_sense(x, &x->b), C);
		/* a non-registrant cannot reserve or release */
		assert_int_equal(prout(x, &x->b, 0x01, r->type, 0, 0, 0), C);
		/* release with the wrong type */
		assert_int_equal(prout(x, &x->a, 0x02, r->type == 1 ? 3 : 1, 0xa1, 0, 0),
				 SCSI_STATUS_CHECK_CONDITION);
		assert_int_equal(sense_asc(x), 0x2604);
		assert_int_equal(prout(x, &x->a, 0x02, r->type, 0xa1, 0, 0), G);
		assert_int_equal(resv(x, NULL), 0);
		assert_int_equal(run_write1(x, &x->b), G);
		assert_int_equal(prout(x, &x->a, 0x00, 0, 0xa1, 0, 0), G);
		drain_ua(x, &x->a);
		drain_ua(x, &x->b);
	}
}

static void test_pr_ownership(void **state)
{
	static const uint8_t types[] = { 0x3, 0x1, 0x6, 0x5, 0x8, 0x7 };
	struct tctx *x = *state;
	size_t i;

	for (i = 0; i < sizeof(types); i++) {
		uint8_t t = types[i];
		bool ar = t == 0x7 || t == 0x8;
		bool ro = t == 0x5 || t == 0x6;

		assert_int_equal(prout(x, &x->a, 0x06, 0, 0, 0x51, 0), G);
		assert_int_equal(prout(x, &x->b, 0x06, 0, 0, 0x52, 0), G);
		assert_int_equal(prout(x, &x->a, 0x01, t, 0x51, 0, 0), G);
		/* the holder unregisters */
		assert_int_equal(prout(x, &x->a, 0x00, 0, 0x51, 0, 0), G);
		if (ar) {
			uint64_t key = 1;

			assert_int_equal(resv(x, &key), t);
			assert_int_equal(key, 0);
			assert_int_equal(prout(x, &x->b, 0x02, t, 0x52, 0, 0), G);
			assert_int_equal(drain_ua(x, &x->b), 0);
		} else {
			assert_int_equal(resv(x, NULL), 0);
			/* RO types tell the remaining registrants */
			assert_int_equal(drain_ua(x, &x->b), ro ? 1 : 0);
		}
		assert_int_equal(prout(x, &x->b, 0x00, 0, 0x52, 0, 0), G);
		drain_ua(x, &x->a);
	}
	/* all-registrants: the reservation goes with the last registrant */
	assert_int_equal(prout(x, &x->a, 0x06, 0, 0, 0x51, 0), G);
	assert_int_equal(prout(x, &x->b, 0x06, 0, 0, 0x52, 0), G);
	assert_int_equal(prout(x, &x->b, 0x01, 0x8, 0x52, 0, 0), G);
	assert_int_equal(prout(x, &x->a, 0x00, 0, 0x51, 0, 0), G);
	assert_int_equal(resv(x, NULL), 0x8);
	assert_int_equal(prout(x, &x->b, 0x00, 0, 0x52, 0, 0), G);
	assert_int_equal(resv(x, NULL), 0);
}

/* ------------------------------------------------------- PREEMPT / CLEAR */

static void test_pr_preempt_clear(void **state)
{
	struct tctx *x = *state;
	struct scsi_itn c3;
	uint32_t gen0, gen;
	uint8_t buf[256];

	itn_init(&c3, 3, "iqn.2026-01.org.example:host-c", "400001370002", &test_port1,
		 x->luns, 1);
	scsi_lu_itn_add(x->lu, &c3);

	/* PREEMPT without a reservation removes registrations, not the sender's */
	assert_int_equal(prout(x, &x->a, 0x06, 0, 0, 0x77, 0), G);
	assert_int_equal(prout(x, &x->b, 0x06, 0, 0, 0x77, 0), G);
	assert_int_equal(prout(x, &c3, 0x06, 0, 0, 0x99, 0), G);
	assert_int_equal(nkeys(x, &gen0), 3);
	assert_int_equal(prout(x, &x->b, 0x04, 0x03, 0x77, 0x77, 0), G);
	/* A was preempted: REGISTRATIONS PREEMPTED, and it is no longer registered */
	assert_int_equal(run_tur(x, &x->a), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_asc(x), 0x2a05);
	assert_int_equal(nkeys(x, &gen), 2);
	assert_int_equal(gen, gen0 + 1);
	assert_int_equal(prout(x, &x->a, 0x01, 0x01, 0x77, 0, 0), C);
	/* preempting a key nobody has: conflict; zero key without reservation: invalid */
	assert_int_equal(prout(x, &x->b, 0x04, 0x03, 0x77, 0x1234, 0), C);
	assert_int_equal(prout(x, &x->b, 0x04, 0x03, 0x77, 0, 0), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_asc(x), 0x2600);

	/* PREEMPT the holder: C3 holds WE, B preempts and becomes holder of EA */
	assert_int_equal(prout(x, &c3, 0x01, 0x01, 0x99, 0, 0), G);
	assert_int_equal(prout(x, &x->b, 0x05, 0x03, 0x77, 0x99, 0), G);
	{
		uint64_t key = 0;

		assert_int_equal(resv(x, &key), 0x03);
		assert_int_equal(key, 0x77);
	}
	assert_int_equal(nkeys(x, NULL), 1);
	assert_int_equal(run_tur(x, &c3), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_asc(x), 0x2a05);
	assert_int_equal(run_read1(x, &c3), C);
	assert_int_equal(run_read1(x, &x->b), G);

	/* CLEAR: everything goes, other registrants get RESERVATIONS PREEMPTED */
	assert_int_equal(prout(x, &c3, 0x06, 0, 0, 0x99, 0), G);
	assert_int_equal(prout(x, &x->b, 0x03, 0, 0x77, 0, 0), G);
	assert_int_equal(nkeys(x, NULL), 0);
	assert_int_equal(resv(x, NULL), 0);
	assert_int_equal(run_tur(x, &c3), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_asc(x), 0x2a03);
	assert_int_equal(run_tur(x, &x->b), G);
	assert_int_equal(prin(x, &c3, 1, buf, sizeof(buf)), G);
	scsi_lu_itn_remove(x->lu, &c3);
	drain_ua(x, &x->a);
}

/* ------------------------------------------------------------ persistence */

static void test_pr_persistence(void **state)
{
	char dir[] = "/tmp/scsi-pr-XXXXXX", path[128];
	struct scsi_lu_params p = default_params();
	struct tctx y;
	struct scsi_itn c3;
	uint64_t key = 0;
	uint32_t gen0, gen;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/lun0.pr", dir);
	snprintf(p.pr_path, sizeof(p.pr_path), "%s", path);

	tctx_setup(&y, 1 * MB, 512, &p);
	drain_ua(&y, &y.a);
	assert_int_equal(prout(&y, &y.a, 0x00, 0, 0, 0xfeedface12345678ull, 0x01), G);
	assert_int_equal(prout(&y, &y.b, 0x00, 0, 0, 0x2222, 0x01), G);
	assert_int_equal(prout(&y, &y.a, 0x01, 0x05, 0xfeedface12345678ull, 0, 0), G);
	assert_int_equal(nkeys(&y, &gen0), 2);
	tctx_teardown(&y);

	/* a fresh LU on the same path sees the same state */
	tctx_setup(&y, 1 * MB, 512, &p);
	assert_int_equal(nkeys(&y, &gen), 2);
	assert_int_equal(gen, gen0);
	assert_int_equal(resv(&y, &key), 0x05);
	assert_int_equal(key, 0xfeedface12345678ull);
	/* and enforces it: a non-registrant cannot write, the holder can */
	itn_init(&c3, 3, "iqn.2026-01.org.example:host-c", "400001370002", &test_port1,
		 y.luns, 1);
	assert_int_equal(run_write1(&y, &c3), C);
	assert_int_equal(run_read1(&y, &c3), G);
	assert_int_equal(run_write1(&y, &y.a), G);
	assert_int_equal(run_write1(&y, &y.b), G);
	/* clear, recreate: empty */
	assert_int_equal(prout(&y, &y.b, 0x03, 0, 0x2222, 0, 0), G);
	tctx_teardown(&y);
	tctx_setup(&y, 1 * MB, 512, &p);
	assert_int_equal(nkeys(&y, NULL), 0);
	assert_int_equal(resv(&y, NULL), 0);
	tctx_teardown(&y);

	/* a corrupt file refuses the LU rather than dropping reservations */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("isergw-pr 1\nreservation 5 3\n", f);
	fclose(f);
	{
		struct membdev *m = mem_create(1 * MB, 512);
		struct scsi_lu *lu = NULL;

		assert_int_equal(scsi_lu_create(&p, &m->b, &lu), -EINVAL);
		mem_destroy(m);
	}
	unlink(path);
	rmdir(dir);
}

/* PREEMPT AND ABORT hands the preempted nexus to the core; PREEMPT does not. */
static char aborted_port[256];
static uint16_t aborted_rel;
static int aborted_calls;

static void abort_handler(struct scsi_lu *lu, const char *iport, uint16_t rel, void *arg)
{
	(void)lu;
	(void)arg;
	aborted_calls++;
	snprintf(aborted_port, sizeof(aborted_port), "%s", iport);
	aborted_rel = rel;
}

static void test_pr_preempt_and_abort_hook(void **state)
{
	struct tctx *x = *state;

	scsi_set_abort_nexus_handler(abort_handler, NULL);
	aborted_calls = 0;
	assert_int_equal(prout(x, &x->a, 0x00, 0, 0, 0xa1, 0), G);
	assert_int_equal(prout(x, &x->b, 0x00, 0, 0, 0xb2, 0), G);
	assert_int_equal(prout(x, &x->b, 0x01, 0x01, 0xb2, 0, 0), G);   /* b holds WE */
	/* plain PREEMPT: registrations go, no abort request */
	assert_int_equal(prout(x, &x->a, 0x04, 0x01, 0xa1, 0xb2, 0), G);
	assert_int_equal(aborted_calls, 0);
	/* b (after its REGISTRATIONS PREEMPTED unit attention) registers again;
	 * PREEMPT AND ABORT of b's key asks to abort b's tasks */
	drain_ua(x, &x->b);
	assert_int_equal(prout(x, &x->b, 0x00, 0, 0, 0xb3, 0), G);
	assert_int_equal(prout(x, &x->a, 0x05, 0x01, 0xa1, 0xb3, 0), G);
	assert_int_equal(aborted_calls, 1);
	assert_string_equal(aborted_port, x->b.initiator_port);
	assert_int_equal(aborted_rel, x->b.port->rel_port_id);
	/* a failed PREEMPT AND ABORT (wrong reservation key) aborts nothing */
	assert_int_equal(prout(x, &x->a, 0x05, 0x01, 0x999, 0xa1, 0), SCSI_STATUS_RESERVATION_CONFLICT);
	assert_int_equal(aborted_calls, 1);
	scsi_set_abort_nexus_handler(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reserve6, setup, tctx_free),
		cmocka_unit_test_setup_teardown(test_reserve6_released_by_reset_and_loss, setup,
						tctx_free),
		cmocka_unit_test_setup_teardown(test_reserve6_vs_pr, setup, tctx_free),
		cmocka_unit_test_setup_teardown(test_pr_register_read_keys, setup, tctx_free),
		cmocka_unit_test_setup_teardown(test_pr_param_checks, setup, tctx_free),
		cmocka_unit_test_setup_teardown(test_pr_capabilities_full_status, setup, tctx_free),
		cmocka_unit_test_setup_teardown(test_pr_access, setup, tctx_free),
		cmocka_unit_test_setup_teardown(test_pr_ownership, setup, tctx_free),
		cmocka_unit_test_setup_teardown(test_pr_preempt_clear, setup, tctx_free),
		cmocka_unit_test_setup_teardown(test_pr_preempt_and_abort_hook, setup, tctx_free),
		cmocka_unit_test(test_pr_persistence),
	};

	gw_log_set_level(GW_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
