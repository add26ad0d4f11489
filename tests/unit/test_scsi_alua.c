// LINK: gw_scsi gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ALUA: INQUIRY TPGS, REPORT TARGET PORT GROUPS (both formats, truncation),
 * SET TARGET PORT GROUPS (parsing, errors, atomicity), the unit attention
 * ASYMMETRIC ACCESS STATE CHANGED on every nexus, the per-state command
 * filter, device groups (per-LU-set states, configured owners) and the
 * cluster port map (other nodes' ports, replaced on reconfiguration);
 * INQUIRY MULTIP; the ALUA lease on a fake monotonic clock (its pure phase
 * functions, then none -> valid -> expired -> stepped-down -> valid, step
 * down, states set underneath, the command path refusing at once when the
 * clock passes the expiry before any sync); several device groups at once
 * (scsi_alua_set_map: all checked before any changes); an LU whose backend
 * awaits this node's reservation key reports and enforces Transitioning for
 * this node's groups instead of an active state.
 */
#include "test_scsi_harness.h"

#define MB (1024ull * 1024)

/* Port 3 shares group 2 with test_port2. */
static struct scsi_port test_port3 = { 3, 2, "iqn.2026-01.org.example:tgt,t,0x0003" };

struct actx {
	struct tctx x;
	struct scsi_itn c;              /* through test_port2 (group 2) */
};

static int setup(void **state)
{
	struct actx *a = malloc(sizeof(*a));
	struct scsi_lu_params p = default_params();

	scsi_alua_reset();
	tctx_setup(&a->x, 16 * MB, 512, &p);    /* a and b through test_port1 (group 1) */
	itn_init(&a->c, 3, "iqn.2026-01.org.example:host-c", "400001370002", &test_port2,
		 a->x.luns, 1);
	scsi_lu_itn_add(a->x.lu, &a->c);
	assert_int_equal(scsi_alua_register_port(&test_port3), 0);
	*state = a;
	return 0;
}

static int teardown(void **state)
{
	struct actx *a = *state;

	scsi_lu_itn_remove(a->x.lu, &a->c);
	tctx_teardown(&a->x);
	scsi_alua_reset();
	free(a);
	return 0;
}

static void rtpg_cdb(uint8_t *c, uint8_t fmt, uint32_t alloc)
{
	memset(c, 0, 16);
	c[0] = 0xa3;
	c[1] = (uint8_t)(fmt << 5 | 0x0a);
	c[6] = (uint8_t)(alloc >> 24);
	c[7] = (uint8_t)(alloc >> 16);
	c[8] = (uint8_t)(alloc >> 8);
	c[9] = (uint8_t)alloc;
}

/* Runs RTPG (allowed in every state, reports UAs) until GOOD; returns the UAs seen. */
static int drain(struct tctx *x, const struct scsi_itn *itn, uint16_t expect_asc)
{
	uint8_t c[16], buf[512];
	int n = 0;

	rtpg_cdb(c, 0, sizeof(buf));
	while (run_cdb(x, itn, c, 12, buf, sizeof(buf)) != SCSI_STATUS_GOOD) {
		assert_int_equal(sense_key(x), SCSI_SK_UNIT_ATTENTION);
		if (expect_asc)
			assert_int_equal(sense_asc(x), expect_asc);
		n++;
		assert_true(n < 32);
	}
	return n;
}

static void set_state(uint16_t tpg, uint8_t st, bool pref)
{
	struct scsi_alua_update u = { tpg, st, pref };

	assert_int_equal(scsi_alua_set_states(NULL, &u, 1), 0);
}

/* Sends SET TARGET PORT GROUPS with the given parameter list. */
static uint8_t stpg(struct tctx *x, const struct scsi_itn *itn, const uint8_t *pl, uint32_t plen,
		    uint32_t buf_len)
{
	uint8_t c[16] = { 0xa4, 0x0a };
	uint8_t buf[256];

	memset(buf, 0, sizeof(buf));
	memcpy(buf, pl, plen < sizeof(buf) ? plen : sizeof(buf));
	c[6] = (uint8_t)(plen >> 24);
	c[7] = (uint8_t)(plen >> 16);
	c[8] = (uint8_t)(plen >> 8);
	c[9] = (uint8_t)plen;
	tcmd_init(&x->t, itn, x->lu, c, 12, buf, buf_len);
	x->t.c.data_out = true;
	scsi_cmd_submit(&x->t.c);
	mem_run(x->mem);
	assert_int_equal(x->t.ndone, 1);
	return x->t.c.status;
}

static uint16_t sense_field(const struct tctx *x)
{
	assert_true(x->t.c.sense[15] & 0x80);
	return be16(&x->t.c.sense[16]);
}

/* ---------------------------------------------------------------- INQUIRY */

static void test_inquiry_tpgs(void **state)
{
	struct actx *a = *state;
	uint8_t c[16] = { 0x12, 0, 0, 0, 96 }, buf[96];

	run_cdb(&a->x, &a->x.a, c, 6, buf, sizeof(buf));
	assert_good(&a->x);
	assert_int_equal(buf[5] & 0x30, 0x30);  /* TPGS 11b: implicit and explicit */
}

/* MULTIP (byte 6 bit 4): the LU has several target ports when the port map does. */
static void test_inquiry_multip(void **state)
{
	struct actx *a = *state;
	uint8_t c[16] = { 0x12, 0, 0, 0, 96 }, buf[96];
	const struct scsi_alua_port one[] = { { 1, 1, true } };
	const struct scsi_alua_port two[] = { { 1, 1, true }, { 2, 1, false } };

	/* ports 1, 2 and 3 are known */
	run_cdb(&a->x, &a->x.a, c, 6, buf, sizeof(buf));
	assert_good(&a->x);
	assert_int_equal(buf[6] & 0x10, 0x10);
	/* a port map of one port: single-port LU */
	assert_int_equal(scsi_alua_set_ports(one, 1), 0);
	run_cdb(&a->x, &a->x.a, c, 6, buf, sizeof(buf));
	assert_good(&a->x);
	assert_int_equal(buf[6] & 0x10, 0);
	/* another node's port, in the same group: multi-port again */
	assert_int_equal(scsi_alua_set_ports(two, 2), 0);
	run_cdb(&a->x, &a->x.a, c, 6, buf, sizeof(buf));
	assert_good(&a->x);
	assert_int_equal(buf[6] & 0x10, 0x10);
	assert_int_equal(buf[5] & 0x30, 0x30);  /* TPGS unchanged */
}

/* ------------------------------------------------------------------- RTPG */

static void test_rtpg(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	uint8_t c[16], buf[256];
	const uint8_t *d;

	drain(x, &x->a, 0);
	/* length-only format: group 1 {1}, group 2 {2, 3} */
	rtpg_cdb(c, 0, sizeof(buf));
	memset(buf, 0xaa, sizeof(buf));
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 4 + 12 + 16);
	assert_int_equal(be32(buf), 28);
	d = &buf[4];
	assert_int_equal(d[0], 0x00);           /* not preferred, Active/Optimized */
	assert_int_equal(d[1], 0xcf);           /* T O U S AN AO supported */
	assert_int_equal(be16(&d[2]), 1);
	assert_int_equal(d[5], 0);              /* status: none */
	assert_int_equal(d[7], 1);
	assert_int_equal(be16(&d[8]), 0);
	assert_int_equal(be16(&d[10]), 1);
	d = &buf[16];
	assert_int_equal(be16(&d[2]), 2);
	assert_int_equal(d[7], 2);
	assert_int_equal(be16(&d[10]), 2);
	assert_int_equal(be16(&d[14]), 3);

	/* extended format: 4 more header bytes with IMPLICIT TRANSITION TIME */
	set_state(2, SCSI_ALUA_ACTIVE_NON_OPTIMIZED, true);
	drain(x, &x->a, 0x2a06);
	rtpg_cdb(c, 1, sizeof(buf));
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 8 + 12 + 16);
	assert_int_equal(be32(buf), 32);
	assert_int_equal(buf[4], 0x10);         /* FORMAT TYPE 001b */
	assert_true(buf[5] > 0);
	d = &buf[8 + 12];
	assert_int_equal(be16(&d[2]), 2);
	assert_int_equal(d[0], 0x81);           /* PREF, Active/Non-optimized */
	assert_int_equal(d[5], 0x02);           /* altered by implicit change */

	/* allocation length truncates, the length field does not */
	rtpg_cdb(c, 0, 10);
	memset(buf, 0, sizeof(buf));
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 10);
	assert_int_equal(be32(buf), 28);
	assert_int_equal(buf[10], 0);           /* not written past the allocation length */
	rtpg_cdb(c, 0, 2);
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 2);

	/* reserved formats */
	rtpg_cdb(c, 2, sizeof(buf));
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	assert_int_equal(sense_field(x), 1);

	/* a group set by the API but without ports here is not reported */
	set_state(7, SCSI_ALUA_STANDBY, false);
	drain(x, &x->a, 0x2a06);
	rtpg_cdb(c, 0, sizeof(buf));
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(be32(buf), 28);
}

static void test_rsoc_lists_alua(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	uint8_t c[16] = { 0xa3, 0x0c, 0x02, 0xa3, 0x00, 0x0a, 0, 0, 0, 64 }, buf[64];

	drain(x, &x->a, 0);
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(buf[1] & 0x07, 0x03);  /* supported, as in the standard */
	assert_int_equal(be16(&buf[2]), 12);
	assert_int_equal(buf[4], 0xa3);
	assert_int_equal(buf[5], 0xea);         /* PARAMETER DATA FORMAT + SA */
	c[3] = 0xa4;
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(buf[1] & 0x07, 0x03);
	assert_int_equal(buf[4], 0xa4);
	assert_int_equal(buf[5], 0x0a);
}

/* ------------------------------------------------------------------- STPG */

static void test_stpg(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	uint8_t pl[64] = { 0 }, st;
	bool pref;

	drain(x, &x->a, 0);
	drain(x, &x->b, 0);
	drain(x, &a->c, 0);

	/* group 2 to standby, group 1 to non-optimized */
	pl[4] = SCSI_ALUA_STANDBY;
	pl[7] = 2;
	pl[8] = SCSI_ALUA_ACTIVE_NON_OPTIMIZED;
	pl[11] = 1;
	assert_int_equal(stpg(x, &x->a, pl, 12, 12), SCSI_STATUS_GOOD);
	assert_int_equal(scsi_alua_get_state(NULL, 2, &st, &pref), 0);
	assert_int_equal(st, SCSI_ALUA_STANDBY);
	assert_false(pref);
	assert_int_equal(scsi_alua_get_state(NULL, 1, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_NON_OPTIMIZED);
	/* not to the nexus that asked; to every other one */
	assert_int_equal(drain(x, &x->a, 0), 0);
	assert_int_equal(drain(x, &x->b, 0x2a06), 1);
	assert_int_equal(drain(x, &a->c, 0x2a06), 1);
	{
		uint8_t c[16], buf[64];

		rtpg_cdb(c, 0, sizeof(buf));
		run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
		assert_good(x);
		assert_int_equal(buf[4] & 0x0f, SCSI_ALUA_ACTIVE_NON_OPTIMIZED);
		assert_int_equal(buf[4 + 5], 0x01);     /* altered by SET TARGET PORT GROUPS */
		assert_int_equal(buf[16] & 0x0f, SCSI_ALUA_STANDBY);
	}
	/* same states again: no unit attention */
	assert_int_equal(stpg(x, &x->a, pl, 12, 12), SCSI_STATUS_GOOD);
	assert_int_equal(drain(x, &x->b, 0), 0);

	/* STPG keeps PREF */
	set_state(2, SCSI_ALUA_STANDBY, true);
	assert_int_equal(drain(x, &x->a, 0x2a06), 1);   /* an API change reaches every nexus */
	pl[4] = SCSI_ALUA_ACTIVE_OPTIMIZED;
	assert_int_equal(stpg(x, &x->a, pl, 8, 8), SCSI_STATUS_GOOD);
	assert_int_equal(scsi_alua_get_state(NULL, 2, &st, &pref), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_true(pref);

	/* zero length: nothing; header only: nothing */
	assert_int_equal(stpg(x, &x->a, pl, 0, 0), SCSI_STATUS_GOOD);
	assert_int_equal(stpg(x, &x->a, pl, 4, 4), SCSI_STATUS_GOOD);
}

static void test_stpg_errors(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	uint8_t pl[64] = { 0 }, st;
	static const uint8_t bad_states[] = { 0x4, 0x5, 0xe, 0xf };
	size_t i;

	drain(x, &x->a, 0);
	/* truncated descriptor, too short, longer than the data sent */
	pl[4] = SCSI_ALUA_STANDBY;
	pl[7] = 2;
	stpg(x, &x->a, pl, 6, 6);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x1a00);
	stpg(x, &x->a, pl, 2, 2);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x1a00);
	stpg(x, &x->a, pl, 8, 4);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x1a00);

	/* unsupported or not settable states */
	for (i = 0; i < sizeof(bad_states); i++) {
		pl[4] = bad_states[i];
		stpg(x, &x->a, pl, 8, 8);
		assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
		assert_int_equal(sense_field(x), 4);
	}
	/* unknown group: pointer at its id; nothing applied (the first one is fine) */
	pl[4] = SCSI_ALUA_STANDBY;
	pl[7] = 2;
	pl[8] = SCSI_ALUA_STANDBY;
	pl[11] = 9;
	stpg(x, &x->a, pl, 12, 12);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
	assert_int_equal(sense_field(x), 10);
	assert_int_equal(scsi_alua_get_state(NULL, 2, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	/* same group twice */
	pl[11] = 2;
	stpg(x, &x->a, pl, 12, 12);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
	assert_int_equal(sense_field(x), 10);
	/* a group known to the API only (no port) is unknown to STPG */
	set_state(7, SCSI_ALUA_ACTIVE_OPTIMIZED, false);
	pl[7] = 7;
	stpg(x, &x->a, pl, 8, 8);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
	assert_int_equal(drain(x, &x->b, 0), 0);        /* nothing changed, nothing reported */

	/* a reserved SERVICE ACTION of MAINTENANCE OUT */
	{
		uint8_t c[16] = { 0xa4, 0x0b };

		run_cdb(x, &x->a, c, 12, NULL, 0);
		assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	}
}

/* ------------------------------------------------------ API and the UAs */

static void test_api_and_ua_every_nexus(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	struct scsi_lu_params p = default_params();
	struct scsi_lu *lu2;
	struct membdev *m2 = mem_create(MB, 512);
	struct scsi_alua_update u[2] = {
		{ 1, SCSI_ALUA_STANDBY, false }, { 2, SCSI_ALUA_ACTIVE_OPTIMIZED, true },
	};
	struct scsi_alua_update bad = { 1, 0x7, false };
	struct tctx y;
	uint8_t st;
	bool pref;

	p.lun = 1;
	assert_int_equal(scsi_lu_create(&p, &m2->b, &lu2), 0);
	scsi_lu_itn_add(lu2, &x->a);
	scsi_lu_itn_add(lu2, &a->c);
	memset(&y, 0, sizeof(y));
	y.mem = m2;
	y.lu = lu2;

	drain(x, &x->a, 0);
	drain(x, &x->b, 0);
	drain(x, &a->c, 0);
	drain(&y, &x->a, 0);
	drain(&y, &a->c, 0);

	assert_int_equal(scsi_alua_get_state(NULL, 1, &st, &pref), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_int_equal(scsi_alua_get_state(NULL, 99, &st, &pref), -ENOENT);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_int_equal(scsi_alua_set_states(NULL, &bad, 1), -EINVAL);
	assert_int_equal(scsi_alua_set_states(NULL, u, 2), 0);
	assert_int_equal(scsi_alua_get_state(NULL, 1, &st, &pref), 0);
	assert_int_equal(st, SCSI_ALUA_STANDBY);
	assert_int_equal(scsi_alua_get_state(NULL, 2, &st, &pref), 0);
	assert_true(pref);

	/* every nexus of every LU, once */
	assert_int_equal(drain(x, &x->a, 0x2a06), 1);
	assert_int_equal(drain(x, &x->b, 0x2a06), 1);
	assert_int_equal(drain(x, &a->c, 0x2a06), 1);
	assert_int_equal(drain(&y, &x->a, 0x2a06), 1);
	assert_int_equal(drain(&y, &a->c, 0x2a06), 1);

	/* all or nothing: an invalid entry leaves the valid one unapplied */
	{
		struct scsi_alua_update mix[2] = { { 1, SCSI_ALUA_ACTIVE_OPTIMIZED, false },
						   { 2, 0x9, false } };

		assert_int_equal(scsi_alua_set_states(NULL, mix, 2), -EINVAL);
		assert_int_equal(scsi_alua_get_state(NULL, 1, &st, NULL), 0);
		assert_int_equal(st, SCSI_ALUA_STANDBY);
	}
	assert_int_equal(scsi_alua_set_states(NULL, NULL, 0), 0);

	/* a port moving to another group leaves the first one */
	{
		struct scsi_port moved = test_port3;

		moved.tpg_id = 1;
		assert_int_equal(scsi_alua_register_port(&moved), 0);
		assert_int_equal(scsi_alua_register_port(&moved), 0);  /* idempotent */
	}
	{
		uint8_t c[16], buf[128];

		rtpg_cdb(c, 0, sizeof(buf));
		run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
		assert_good(x);
		assert_int_equal(be32(buf), 28);
		assert_int_equal(buf[4 + 7], 2);        /* group 1: ports 1 and 3 */
		assert_int_equal(be16(&buf[4 + 14]), 3);
		assert_int_equal(buf[20 + 7], 1);       /* group 2: port 2 */
	}

	scsi_lu_itn_remove(lu2, &x->a);
	scsi_lu_itn_remove(lu2, &a->c);
	scsi_lu_destroy(lu2);
	mem_destroy(m2);
}

/* ------------------------------------------------------------ the filter */

#define A_SB 0x1
#define A_UN 0x2
#define A_TR 0x4
#define A_ALL (A_SB | A_UN | A_TR)

static const struct {
	uint8_t cdb[16];
	uint8_t cdb_len;
	uint8_t ok;             /* restricted states in which it runs */
	const char *name;
} filter_cmds[] = {
	{ { 0x00 }, 6, 0, "TEST UNIT READY" },
	{ { 0x03, 0, 0, 0, 18 }, 6, A_ALL, "REQUEST SENSE" },
	{ { 0x12, 0, 0, 0, 96 }, 6, A_ALL, "INQUIRY" },
	{ { 0xa0, 0, 0, 0, 0, 0, 0, 0, 1, 0 }, 12, A_ALL, "REPORT LUNS" },
	{ { 0xa3, 0x0a, 0, 0, 0, 0, 0, 0, 1, 0 }, 12, A_ALL, "REPORT TARGET PORT GROUPS" },
	{ { 0xa3, 0x0c, 0, 0, 0, 0, 0, 0, 1, 0 }, 12, A_ALL, "REPORT SUPPORTED OPCODES" },
	{ { 0xa3, 0x0d, 0, 0, 0, 0, 0, 0, 0, 16 }, 12, A_ALL, "REPORT SUPPORTED TMF" },
	{ { 0xa4, 0x0a }, 12, A_SB | A_UN, "SET TARGET PORT GROUPS" },
	{ { 0x1a, 0x08, 0x3f, 0, 255 }, 6, A_SB, "MODE SENSE(6)" },
	{ { 0x5a, 0x08, 0x3f, 0, 0, 0, 0, 1, 0 }, 10, A_SB, "MODE SENSE(10)" },
	{ { 0x15, 0x10 }, 6, A_SB, "MODE SELECT(6)" },
	{ { 0x5e, 0x00, 0, 0, 0, 0, 0, 1, 0 }, 10, A_SB, "PERSISTENT RESERVE IN" },
	{ { 0x5f, 0x00, 0 }, 10, A_SB, "PERSISTENT RESERVE OUT" },
	{ { 0x25 }, 10, 0, "READ CAPACITY(10)" },
	{ { 0x28, 0, 0, 0, 0, 0, 0, 0, 1 }, 10, 0, "READ(10)" },
	{ { 0x2a, 0, 0, 0, 0, 0, 0, 0, 1 }, 10, 0, "WRITE(10)" },
	{ { 0x35 }, 10, 0, "SYNCHRONIZE CACHE(10)" },
	{ { 0x16 }, 6, 0, "RESERVE(6)" },
	{ { 0xc5 }, 16, 0, "unsupported opcode" },
};

static const struct {
	uint8_t state;
	uint8_t bit;            /* A_* or 0 for active states */
	uint16_t asc;
} filter_states[] = {
	{ SCSI_ALUA_ACTIVE_OPTIMIZED, 0, 0 },
	{ SCSI_ALUA_ACTIVE_NON_OPTIMIZED, 0, 0 },
	{ SCSI_ALUA_STANDBY, A_SB, 0x040b },
	{ SCSI_ALUA_UNAVAILABLE, A_UN, 0x040c },
	{ SCSI_ALUA_OFFLINE, A_UN, 0x0412 },
	{ SCSI_ALUA_TRANSITIONING, A_TR, 0x040a },
};

static void test_filter(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	uint8_t buf[4096];
	size_t s, i;

	for (s = 0; s < sizeof(filter_states) / sizeof(filter_states[0]); s++) {
		set_state(1, filter_states[s].state, false);
		drain(x, &x->a, 0);
		drain(x, &a->c, 0);
		for (i = 0; i < sizeof(filter_cmds) / sizeof(filter_cmds[0]); i++) {
			bool runs = !filter_states[s].bit || (filter_cmds[i].ok & filter_states[s].bit);

			memset(buf, 0, sizeof(buf));
			tcmd_init(&x->t, &x->a, x->lu, filter_cmds[i].cdb, 16, buf, 512);
			x->t.c.data_in = true;
			scsi_cmd_submit(&x->t.c);
			mem_run(x->mem);
			assert_int_equal(x->t.ndone, 1);
			if (!runs) {
				if (x->t.c.status != SCSI_STATUS_CHECK_CONDITION ||
				    sense_key(x) != SCSI_SK_NOT_READY ||
				    sense_asc(x) != filter_states[s].asc)
					fail_msg("state %#x: %s not refused with 02/%04x",
						 filter_states[s].state, filter_cmds[i].name,
						 filter_states[s].asc);
			} else if (x->t.c.status == SCSI_STATUS_CHECK_CONDITION &&
				   sense_key(x) == SCSI_SK_NOT_READY) {
				fail_msg("state %#x: %s refused with 02/%04x", filter_states[s].state,
					 filter_cmds[i].name, sense_asc(x));
			}
			/* undo RESERVE(6) */
			if (filter_cmds[i].cdb[0] == 0x16 && x->t.c.status == SCSI_STATUS_GOOD) {
				uint8_t rel[16] = { 0x17 };

				run_cdb(x, &x->a, rel, 6, NULL, 0);
				assert_good(x);
			}
			/* the nexus through the other group is never filtered */
			if (filter_cmds[i].cdb[0] == 0x28) {
				run_cdb(x, &a->c, filter_cmds[i].cdb, 10, buf, 512);
				assert_good(x);
			}
		}
	}
}

/* The UA comes before the filter: a standby port still reports it. */
static void test_ua_before_filter(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	uint8_t tur[16] = { 0 };

	drain(x, &x->a, 0);
	set_state(1, SCSI_ALUA_STANDBY, false);
	run_cdb(x, &x->a, tur, 6, NULL, 0);
	assert_sense(x, SCSI_SK_UNIT_ATTENTION, 0x2a06);
	run_cdb(x, &x->a, tur, 6, NULL, 0);
	assert_sense(x, SCSI_SK_NOT_READY, 0x040b);
	set_state(1, SCSI_ALUA_ACTIVE_OPTIMIZED, false);
	run_cdb(x, &x->a, tur, 6, NULL, 0);
	assert_sense(x, SCSI_SK_UNIT_ATTENTION, 0x2a06);
	run_cdb(x, &x->a, tur, 6, NULL, 0);
	assert_good(x);
}

/* ---------------------------------------------------------- device groups */

/* A second LU, in device group dg, with nexuses a (port 1) and c (port 2). */
static struct tctx dg_lu(struct actx *a, const char *dg)
{
	struct scsi_lu_params p = default_params();
	struct tctx y;

	memset(&y, 0, sizeof(y));
	p.lun = 1;
	p.naa[15] ^= 0x01;
	snprintf(p.alua_dg, sizeof(p.alua_dg), "%s", dg);
	y.mem = mem_create(MB, 512);
	assert_int_equal(scsi_lu_create(&p, &y.mem->b, &y.lu), 0);
	scsi_lu_itn_add(y.lu, &a->x.a);
	scsi_lu_itn_add(y.lu, &a->c);
	return y;
}

static void dg_lu_free(struct actx *a, struct tctx *y)
{
	scsi_lu_itn_remove(y->lu, &a->x.a);
	scsi_lu_itn_remove(y->lu, &a->c);
	scsi_lu_destroy(y->lu);
	mem_destroy(y->mem);
}

static void test_device_groups(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	struct tctx y = dg_lu(a, "dg2");
	struct scsi_alua_update out[8];
	uint8_t c[16], buf[256], tur[16] = { 0 }, st;
	size_t n;
	bool pref;

	drain(x, &x->a, 0);
	drain(x, &a->c, 0);
	drain(&y, &x->a, 0);
	drain(&y, &a->c, 0);

	/* dg2 owned by group 2, the others standby: only dg2's nexuses hear of it */
	assert_int_equal(scsi_alua_dg_configure("dg2", 2, SCSI_ALUA_STANDBY), 0);
	assert_int_equal(drain(&y, &x->a, 0x2a06), 1);
	assert_int_equal(drain(&y, &a->c, 0x2a06), 1);
	assert_int_equal(drain(x, &x->a, 0), 0);
	assert_int_equal(drain(x, &a->c, 0), 0);
	/* the same port (group 1) is standby for dg2's LU, optimized for the default's */
	run_cdb(&y, &x->a, tur, 6, NULL, 0);
	assert_sense(&y, SCSI_SK_NOT_READY, 0x040b);
	run_cdb(x, &x->a, tur, 6, NULL, 0);
	assert_good(x);
	run_cdb(&y, &a->c, tur, 6, NULL, 0);
	assert_good(&y);
	/* RTPG through either port reports the LU's device group */
	rtpg_cdb(c, 0, sizeof(buf));
	run_cdb(&y, &x->a, c, 12, buf, sizeof(buf));
	assert_good(&y);
	assert_int_equal(buf[4], SCSI_ALUA_STANDBY);            /* group 1 */
	assert_int_equal(be16(&buf[4 + 2]), 1);
	assert_int_equal(buf[16], 0x80 | SCSI_ALUA_ACTIVE_OPTIMIZED);  /* group 2, PREF */
	assert_int_equal(be16(&buf[16 + 2]), 2);
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(buf[4], SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_int_equal(buf[16], SCSI_ALUA_ACTIVE_OPTIMIZED);

	/* explicit states of one device group */
	{
		struct scsi_alua_update u = { 1, SCSI_ALUA_ACTIVE_NON_OPTIMIZED, false };

		assert_int_equal(scsi_alua_set_states("dg2", &u, 1), 0);
	}
	assert_int_equal(drain(&y, &x->a, 0x2a06), 1);
	assert_int_equal(drain(x, &x->a, 0), 0);
	run_cdb(&y, &x->a, tur, 6, NULL, 0);
	assert_good(&y);
	assert_int_equal(scsi_alua_get_states("dg2", out, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(out[0].tpg_id, 1);
	assert_int_equal(out[0].state, SCSI_ALUA_ACTIVE_NON_OPTIMIZED);
	assert_int_equal(out[1].tpg_id, 2);
	assert_int_equal(out[1].state, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_true(out[1].pref);
	assert_int_equal(scsi_alua_get_states("dg2", out, 1, &n), 0);
	assert_int_equal(n, 2);                 /* how many there are, one written */
	assert_int_equal(scsi_alua_get_states(NULL, out, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(out[0].state, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_false(out[0].pref);
	assert_int_equal(scsi_alua_get_states("nope", out, 8, &n), -ENOENT);
	assert_int_equal(scsi_alua_get_state("dg2", 2, &st, &pref), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_true(pref);
	assert_int_equal(scsi_alua_get_state("nope", 2, &st, &pref), -ENOENT);
	assert_int_equal(scsi_alua_dg_configure("dg2", 2, 0x7), -EINVAL);

	/* SET TARGET PORT GROUPS through dg2's LU changes dg2 only */
	{
		uint8_t pl[8] = { 0, 0, 0, 0, SCSI_ALUA_STANDBY, 0, 0, 2 };

		assert_int_equal(stpg(&y, &x->a, pl, sizeof(pl), sizeof(pl)), SCSI_STATUS_GOOD);
	}
	assert_int_equal(drain(&y, &x->a, 0), 0);       /* not the sender */
	assert_int_equal(drain(&y, &a->c, 0x2a06), 1);
	assert_int_equal(drain(x, &a->c, 0), 0);
	assert_int_equal(scsi_alua_get_state("dg2", 2, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_STANDBY);
	assert_int_equal(scsi_alua_get_state(NULL, 2, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	dg_lu_free(a, &y);
}

/* A reload moves an LU to another device group: its states are that group's, its nexuses told. */
static void test_lu_moves_device_group(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	uint8_t tur[16] = { 0 };

	assert_int_equal(scsi_alua_dg_configure("dg3", 2, SCSI_ALUA_STANDBY), 0);
	drain(x, &x->a, 0);
	drain(x, &a->c, 0);
	run_cdb(x, &x->a, tur, 6, NULL, 0);
	assert_good(x);
	assert_int_equal(scsi_lu_set_device_group(x->lu, "dg3"), 0);
	assert_int_equal(drain(x, &x->a, 0x2a06), 1);
	assert_int_equal(drain(x, &a->c, 0x2a06), 1);
	run_cdb(x, &x->a, tur, 6, NULL, 0);             /* group 1 is Standby in dg3 */
	assert_sense(x, SCSI_SK_NOT_READY, 0x040b);
	run_cdb(x, &a->c, tur, 6, NULL, 0);
	assert_good(x);
	/* the same group again: nothing to tell */
	assert_int_equal(scsi_lu_set_device_group(x->lu, "dg3"), 0);
	assert_int_equal(drain(x, &x->a, 0), 0);
	/* back to the default one ("" names it) */
	assert_int_equal(scsi_lu_set_device_group(x->lu, ""), 0);
	assert_int_equal(drain(x, &x->a, 0x2a06), 1);
	run_cdb(x, &x->a, tur, 6, NULL, 0);
	assert_good(x);
}

static void test_port_map(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	uint8_t c[16], buf[256];
	const struct scsi_alua_port map[] = {
		{ 1, 1, true }, { 2, 2, true }, { 3, 2, true }, { 7, 3, false }, { 5, 3, false },
	};
	const struct scsi_alua_port fewer[] = { { 1, 1, true }, { 2, 2, true } };
	const struct scsi_alua_port twice[] = { { 1, 1, true }, { 1, 2, true } };

	drain(x, &x->a, 0);
	/* the other nodes' ports are reported too, groups in id order */
	assert_int_equal(scsi_alua_set_ports(map, 5), 0);
	rtpg_cdb(c, 0, sizeof(buf));
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(be32(buf), 12 + 16 + 16);
	assert_int_equal(be16(&buf[4 + 12 + 16 + 2]), 3);
	assert_int_equal(buf[4 + 12 + 16 + 7], 2);
	assert_int_equal(be16(&buf[4 + 12 + 16 + 10]), 7);
	assert_int_equal(be16(&buf[4 + 12 + 16 + 14]), 5);
	/* SET TARGET PORT GROUPS may address a group of another node */
	{
		uint8_t pl[8] = { 0, 0, 0, 0, SCSI_ALUA_STANDBY, 0, 0, 3 };

		assert_int_equal(stpg(x, &x->a, pl, sizeof(pl), sizeof(pl)), SCSI_STATUS_GOOD);
	}
	/* a reconfiguration without port 3 and group 3 forgets them */
	assert_int_equal(scsi_alua_set_ports(fewer, 2), 0);
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(be32(buf), 12 + 12);
	assert_int_equal(be16(&buf[4 + 2]), 1);
	assert_int_equal(be16(&buf[16 + 2]), 2);
	assert_int_equal(buf[16 + 7], 1);
	{
		uint8_t pl[8] = { 0, 0, 0, 0, SCSI_ALUA_STANDBY, 0, 0, 3 };

		assert_int_equal(stpg(x, &x->a, pl, sizeof(pl), sizeof(pl)),
				 SCSI_STATUS_CHECK_CONDITION);
	}
	/* a relative port is in one group only */
	assert_int_equal(scsi_alua_set_ports(twice, 2), -EINVAL);
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(be32(buf), 12 + 12);
}

/* ------------------------------------------------------------- the lease */

static uint64_t fake_ms;

static uint64_t fake_clock(void)
{
	return fake_ms;
}

/* The pure functions: phases, overrides, the next change, since when without a lease. */
static void test_lease_phases(void **state)
{
	struct scsi_lease l = { .enforced = false, .expires_ms = 5000, .unavailable_ms = 2000 };

	(void)state;
	assert_int_equal(scsi_lease_phase(&l, 1000), SCSI_LEASE_OFF);
	assert_int_equal(scsi_lease_next_change(&l, 1000), 0);
	assert_int_equal(scsi_lease_lost_since(&l, 1000), 0);
	l.enforced = true;
	assert_int_equal(scsi_lease_phase(&l, 0), SCSI_LEASE_VALID);
	assert_int_equal(scsi_lease_phase(&l, 4999), SCSI_LEASE_VALID);
	assert_int_equal(scsi_lease_next_change(&l, 4999), 5000);
	assert_int_equal(scsi_lease_lost_since(&l, 4999), 0);
	assert_int_equal(scsi_lease_phase(&l, 5000), SCSI_LEASE_EXPIRED);
	assert_int_equal(scsi_lease_phase(&l, 6999), SCSI_LEASE_EXPIRED);
	assert_int_equal(scsi_lease_next_change(&l, 5000), 7000);
	assert_int_equal(scsi_lease_lost_since(&l, 6000), 5000);
	assert_int_equal(scsi_lease_phase(&l, 7000), SCSI_LEASE_STEPPED_DOWN);
	assert_int_equal(scsi_lease_phase(&l, UINT64_MAX), SCSI_LEASE_STEPPED_DOWN);
	assert_int_equal(scsi_lease_next_change(&l, 7000), 0);
	/* without a Transitioning phase */
	l.unavailable_ms = 0;
	assert_int_equal(scsi_lease_phase(&l, 5000), SCSI_LEASE_STEPPED_DOWN);
	assert_int_equal(scsi_lease_next_change(&l, 4000), 5000);
	/* none given yet, and dropped */
	l.expires_ms = 0;
	l.lost_ms = 300;
	assert_int_equal(scsi_lease_phase(&l, 0), SCSI_LEASE_NONE);
	assert_int_equal(scsi_lease_next_change(&l, 0), 0);
	assert_int_equal(scsi_lease_lost_since(&l, 900), 300);
	l.stepped_down = true;
	assert_int_equal(scsi_lease_phase(&l, 0), SCSI_LEASE_STEPPED_DOWN);

	assert_int_equal(scsi_lease_override(SCSI_LEASE_OFF), SCSI_LEASE_NO_OVERRIDE);
	assert_int_equal(scsi_lease_override(SCSI_LEASE_VALID), SCSI_LEASE_NO_OVERRIDE);
	assert_int_equal(scsi_lease_override(SCSI_LEASE_NONE), SCSI_ALUA_UNAVAILABLE);
	assert_int_equal(scsi_lease_override(SCSI_LEASE_EXPIRED), SCSI_ALUA_TRANSITIONING);
	assert_int_equal(scsi_lease_override(SCSI_LEASE_STEPPED_DOWN), SCSI_ALUA_UNAVAILABLE);
	assert_string_equal(scsi_lease_phase_name(SCSI_LEASE_OFF), "off");
	assert_string_equal(scsi_lease_phase_name(SCSI_LEASE_NONE), "none");
	assert_string_equal(scsi_lease_phase_name(SCSI_LEASE_VALID), "valid");
	assert_string_equal(scsi_lease_phase_name(SCSI_LEASE_EXPIRED), "expired");
	assert_string_equal(scsi_lease_phase_name(SCSI_LEASE_STEPPED_DOWN), "stepped-down");
}

/* RTPG through itn: the state and PREF of group 1 and of group 2. */
static void rtpg_two(struct tctx *x, const struct scsi_itn *itn, uint8_t *s1, uint8_t *s2)
{
	uint8_t c[16], buf[256];

	rtpg_cdb(c, 0, sizeof(buf));
	run_cdb(x, itn, c, 12, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(be16(&buf[4 + 2]), 1);
	assert_int_equal(be16(&buf[16 + 2]), 2);
	*s1 = buf[4];
	*s2 = buf[16];
}

static void read_expect(struct tctx *x, const struct scsi_itn *itn, uint16_t asc)
{
	uint8_t c[16], buf[512];

	cdb10(c, 0x28, 0, 0, 1);
	run_cdb(x, itn, c, 10, buf, sizeof(buf));
	if (asc)
		assert_sense(x, SCSI_SK_NOT_READY, asc);
	else
		assert_good(x);
}

/* Every nexus of the test has exactly n unit attentions 2A/06 pending. */
static void ua_all(struct actx *a, int n)
{
	assert_int_equal(drain(&a->x, &a->x.a, 0x2a06), n);
	assert_int_equal(drain(&a->x, &a->x.b, 0x2a06), n);
	assert_int_equal(drain(&a->x, &a->c, 0x2a06), n);
}

static void test_lease(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	uint8_t s1, s2, inq[16] = { 0x12, 0, 0, 0, 96 }, buf[96];
	enum scsi_lease_phase before;
	struct scsi_lease l;

	scsi_alua_lease_set_clock(fake_clock);
	fake_ms = 1000;
	ua_all(a, 0);
	set_state(2, SCSI_ALUA_STANDBY, false);
	ua_all(a, 1);
	assert_int_equal(scsi_alua_lease_renew(5000), -EOPNOTSUPP);    /* not enforced */
	assert_int_equal(scsi_alua_lease_step_down(), -EOPNOTSUPP);

	/* enforced, none given: every group Unavailable, PREF off */
	scsi_alua_lease_configure(true, 500);
	ua_all(a, 1);
	scsi_alua_lease_get(&l);
	assert_int_equal(scsi_lease_phase(&l, fake_ms), SCSI_LEASE_NONE);
	assert_int_equal(l.lost_ms, 1000);
	rtpg_two(x, &x->a, &s1, &s2);
	assert_int_equal(s1, SCSI_ALUA_UNAVAILABLE);
	assert_int_equal(s2, SCSI_ALUA_UNAVAILABLE);
	read_expect(x, &x->a, 0x040c);
	read_expect(x, &a->c, 0x040c);
	run_cdb(x, &x->a, inq, 6, buf, sizeof(buf));           /* INQUIRY is never refused */
	assert_good(x);
	/* a state set underneath changes nothing the hosts see: no unit attention */
	set_state(1, SCSI_ALUA_ACTIVE_NON_OPTIMIZED, true);
	ua_all(a, 0);
	rtpg_two(x, &x->a, &s1, &s2);
	assert_int_equal(s1, SCSI_ALUA_UNAVAILABLE);

	/* granted: the states underneath, as they were set */
	assert_int_equal(scsi_alua_lease_renew(2000), 0);
	ua_all(a, 1);
	rtpg_two(x, &x->a, &s1, &s2);
	assert_int_equal(s1, 0x80 | SCSI_ALUA_ACTIVE_NON_OPTIMIZED);
	assert_int_equal(s2, SCSI_ALUA_STANDBY);
	read_expect(x, &x->a, 0);
	read_expect(x, &a->c, 0x040b);                          /* standby, its own state */
	assert_int_equal(scsi_alua_lease_sync(&before), SCSI_LEASE_VALID);
	assert_int_equal(before, SCSI_LEASE_VALID);
	ua_all(a, 0);

	/*
	 * The clock passes the expiry with nobody syncing (a frozen node, thawed):
	 * the command path refuses at once, Transitioning.
	 */
	fake_ms = 2000;
	read_expect(x, &x->a, 0x040a);
	rtpg_two(x, &x->a, &s1, &s2);
	assert_int_equal(s1, SCSI_ALUA_TRANSITIONING);
	assert_int_equal(s2, SCSI_ALUA_TRANSITIONING);
	/* the sync (the control thread's timer) tells the hosts */
	assert_int_equal(scsi_alua_lease_sync(&before), SCSI_LEASE_EXPIRED);
	assert_int_equal(before, SCSI_LEASE_VALID);
	ua_all(a, 1);
	assert_int_equal(scsi_alua_lease_sync(&before), SCSI_LEASE_EXPIRED);    /* once */
	ua_all(a, 0);
	fake_ms = 2499;
	read_expect(x, &a->c, 0x040a);
	/* after alua_lease_unavailable_ms: stepped down, Unavailable */
	fake_ms = 2500;
	read_expect(x, &x->a, 0x040c);
	assert_int_equal(scsi_alua_lease_sync(&before), SCSI_LEASE_STEPPED_DOWN);
	assert_int_equal(before, SCSI_LEASE_EXPIRED);
	ua_all(a, 1);
	scsi_alua_lease_get(&l);
	assert_int_equal(scsi_lease_lost_since(&l, fake_ms), 2000);

	/* renewed: valid again, the states as they were */
	assert_int_equal(scsi_alua_lease_renew(0), -EINVAL);
	assert_int_equal(scsi_alua_lease_renew(9000), 0);
	ua_all(a, 1);
	rtpg_two(x, &x->a, &s1, &s2);
	assert_int_equal(s1, 0x80 | SCSI_ALUA_ACTIVE_NON_OPTIMIZED);
	assert_int_equal(s2, SCSI_ALUA_STANDBY);
	read_expect(x, &x->a, 0);
	/* a renewal sets the expiry exactly, shorter too */
	assert_int_equal(scsi_alua_lease_renew(3000), 0);
	ua_all(a, 0);
	scsi_alua_lease_get(&l);
	assert_int_equal(l.expires_ms, 3000);
	/* a state change while valid: 2A/06 as usual */
	set_state(2, SCSI_ALUA_ACTIVE_OPTIMIZED, false);
	ua_all(a, 1);
	read_expect(x, &a->c, 0);

	/* step down (quorum lost): Unavailable at once */
	assert_int_equal(scsi_alua_lease_step_down(), 0);
	ua_all(a, 1);
	read_expect(x, &x->a, 0x040c);
	scsi_alua_lease_get(&l);
	assert_int_equal(scsi_lease_phase(&l, fake_ms), SCSI_LEASE_STEPPED_DOWN);
	assert_int_equal(l.expires_ms, 0);
	assert_int_equal(scsi_lease_lost_since(&l, fake_ms), 2500);
	/* a step down while stepped down, and an unchanged configuration: nothing new */
	assert_int_equal(scsi_alua_lease_step_down(), 0);
	scsi_alua_lease_configure(true, 500);
	ua_all(a, 0);
	/* Transitioning and Unavailable are the same for every group: no UA between them is missed */
	assert_int_equal(scsi_alua_lease_renew(4000), 0);
	ua_all(a, 1);
	fake_ms = 4600;                 /* past the expiry and past unavailable_ms at once */
	assert_int_equal(scsi_alua_lease_sync(&before), SCSI_LEASE_STEPPED_DOWN);
	assert_int_equal(before, SCSI_LEASE_VALID);
	ua_all(a, 1);

	/* no longer enforced: the states as they are */
	scsi_alua_lease_configure(false, 500);
	ua_all(a, 1);
	read_expect(x, &x->a, 0);
	scsi_alua_lease_get(&l);
	assert_int_equal(scsi_lease_phase(&l, fake_ms), SCSI_LEASE_OFF);
	/* enforced again: none, whatever was given before */
	scsi_alua_lease_configure(true, 0);
	ua_all(a, 1);
	scsi_alua_lease_get(&l);
	assert_int_equal(scsi_lease_phase(&l, fake_ms), SCSI_LEASE_NONE);
	assert_int_equal(scsi_alua_lease_renew(fake_ms + 1), 0);
	ua_all(a, 1);
	fake_ms++;                      /* unavailable_ms 0: stepped down straight away */
	read_expect(x, &x->a, 0x040c);
	scsi_alua_lease_set_clock(NULL);
}

/* Several device groups at once: all checked before any changes. */
static void test_set_map(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	struct tctx y = dg_lu(a, "dg2");
	const struct scsi_alua_update sb1[] = { { 1, SCSI_ALUA_STANDBY, false } };
	const struct scsi_alua_update ao2[] = { { 2, SCSI_ALUA_ACTIVE_OPTIMIZED, true },
						{ 1, SCSI_ALUA_UNAVAILABLE, false } };
	const struct scsi_alua_update bad_state[] = { { 1, 0x9, false } };
	struct scsi_alua_dg_update m[3] = {
		{ NULL, sb1, 1 }, { "dg2", ao2, 2 }, { "nope", sb1, 1 },
	};
	size_t bad = 99;
	uint8_t st;
	bool pref;

	assert_int_equal(scsi_alua_dg_configure("dg2", 0, SCSI_ALUA_ACTIVE_NON_OPTIMIZED), 0);
	drain(x, &x->a, 0);
	drain(x, &a->c, 0);
	drain(&y, &x->a, 0);
	drain(&y, &a->c, 0);
	/* an unknown device group: nothing applied, its index said */
	assert_int_equal(scsi_alua_set_map(m, 3, &bad), -ENOENT);
	assert_int_equal(bad, 2);
	assert_int_equal(scsi_alua_get_state(NULL, 1, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_int_equal(scsi_alua_get_state("dg2", 2, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_int_equal(scsi_alua_get_state("dg2", 1, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_int_equal(drain(x, &x->a, 0), 0);
	assert_int_equal(drain(&y, &x->a, 0), 0);
	/* an invalid state anywhere, the same device group twice ("" is "default") */
	m[2] = (struct scsi_alua_dg_update){ "dg2", bad_state, 1 };
	assert_int_equal(scsi_alua_set_map(m, 3, &bad), -EINVAL);
	assert_int_equal(bad, 2);
	m[2] = (struct scsi_alua_dg_update){ "default", sb1, 1 };
	assert_int_equal(scsi_alua_set_map(m, 3, &bad), -EINVAL);
	assert_int_equal(bad, 2);
	assert_int_equal(scsi_alua_get_state(NULL, 1, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_int_equal(drain(x, &x->a, 0), 0);
	/* both device groups at once, each LU's nexuses told once */
	assert_int_equal(scsi_alua_set_map(m, 2, &bad), 0);
	assert_int_equal(scsi_alua_get_state(NULL, 1, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_STANDBY);
	assert_int_equal(scsi_alua_get_state("dg2", 2, &st, &pref), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_true(pref);
	assert_int_equal(scsi_alua_get_state("dg2", 1, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_UNAVAILABLE);
	assert_int_equal(drain(x, &x->a, 0x2a06), 1);
	assert_int_equal(drain(x, &a->c, 0x2a06), 1);
	assert_int_equal(drain(&y, &x->a, 0x2a06), 1);
	assert_int_equal(drain(&y, &a->c, 0x2a06), 1);
	/* the same again: nothing changes, nobody is told */
	assert_int_equal(scsi_alua_set_map(m, 2, &bad), 0);
	assert_int_equal(drain(x, &x->a, 0), 0);
	assert_int_equal(drain(&y, &a->c, 0), 0);
	/* one device group changing: only its LU's nexuses */
	m[0] = (struct scsi_alua_dg_update){ "", ao2, 1 };
	assert_int_equal(scsi_alua_set_map(m, 2, &bad), 0);
	assert_int_equal(drain(x, &x->a, 0x2a06), 1);
	assert_int_equal(drain(&y, &x->a, 0), 0);
	assert_int_equal(scsi_alua_set_map(NULL, 0, &bad), 0);
	dg_lu_free(a, &y);
}

/*
 * As many device groups as a configuration may name (256, as the cluster's
 * and SetAluaMap's limit) beside "default", and one map that sets them all.
 */
static void test_set_map_256(void **state)
{
	static char names[256][16];
	static struct scsi_alua_dg_update m[256];
	const struct scsi_alua_update sb1[] = { { 1, SCSI_ALUA_STANDBY, false } };
	size_t bad = 99;
	uint8_t st;

	(void)state;
	assert_int_equal(scsi_alua_dg_configure(SCSI_ALUA_DG_DEFAULT, 0,
						SCSI_ALUA_ACTIVE_NON_OPTIMIZED), 0);
	for (size_t i = 0; i < 256; i++) {
		snprintf(names[i], sizeof(names[i]), "dg%zu", i + 1);
		assert_int_equal(scsi_alua_dg_configure(names[i], 1, SCSI_ALUA_ACTIVE_NON_OPTIMIZED), 0);
		m[i] = (struct scsi_alua_dg_update){ names[i], sb1, 1 };
	}
	assert_int_equal(scsi_alua_dg_configure("dg257", 1, SCSI_ALUA_ACTIVE_NON_OPTIMIZED), -ENOSPC);
	assert_int_equal(scsi_alua_set_map(m, 256, &bad), 0);
	assert_int_equal(scsi_alua_get_state("dg256", 1, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_STANDBY);
}

/* ------------------------------------------------- backend registration */

static bool gate_on;

static bool fake_awaits_registration(struct bdev *b)
{
	(void)b;
	return gate_on;
}

/* The state RTPG through x->a reports for group tpg (low nibble), 0xff if absent. */
static uint8_t rtpg_state(struct tctx *x, uint16_t tpg)
{
	uint8_t c[16], buf[256];
	uint32_t len, off = 4;

	rtpg_cdb(c, 0, sizeof(buf));
	run_cdb(x, &x->a, c, 12, buf, sizeof(buf));
	assert_good(x);
	len = 4 + be32(buf);
	while (off + 8 <= len) {
		if (be16(&buf[off + 2]) == tpg)
			return buf[off] & 0x0f;
		off += 8 + 4u * buf[off + 7];
	}
	return 0xff;
}

static void test_backend_awaits_registration(void **state)
{
	struct actx *a = *state;
	struct tctx *x = &a->x;
	struct bdev_ops ops = *x->mem->b.ops;
	const struct bdev_ops *saved = x->mem->b.ops;
	uint8_t rd[16] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0 }, wr[16] = { 0x2a };
	uint8_t inq[16] = { 0x12, 0, 0, 0, 96, 0 }, buf[512];

	/* the pure rule: only the active states turn Transitioning */
	assert_int_equal(scsi_alua_gated_state(SCSI_ALUA_ACTIVE_OPTIMIZED, true), SCSI_ALUA_TRANSITIONING);
	assert_int_equal(scsi_alua_gated_state(SCSI_ALUA_ACTIVE_NON_OPTIMIZED, true),
			 SCSI_ALUA_TRANSITIONING);
	assert_int_equal(scsi_alua_gated_state(SCSI_ALUA_STANDBY, true), SCSI_ALUA_STANDBY);
	assert_int_equal(scsi_alua_gated_state(SCSI_ALUA_UNAVAILABLE, true), SCSI_ALUA_UNAVAILABLE);
	assert_int_equal(scsi_alua_gated_state(SCSI_ALUA_ACTIVE_OPTIMIZED, false),
			 SCSI_ALUA_ACTIVE_OPTIMIZED);

	ops.awaits_registration = fake_awaits_registration;
	x->mem->b.ops = &ops;
	wr[8] = 1;
	drain(x, &x->a, 0);
	gate_on = false;
	run_cdb(x, &x->a, rd, 10, buf, 512);
	assert_good(x);
	assert_int_equal(rtpg_state(x, 1), SCSI_ALUA_ACTIVE_OPTIMIZED);

	/* the key is not registered again yet: this node's groups are Transitioning */
	gate_on = true;
	tcmd_init(&x->t, &x->a, x->lu, wr, 10, buf, 512);
	x->t.c.data_out = true;
	scsi_cmd_submit(&x->t.c);
	mem_run(x->mem);
	assert_sense(x, SCSI_SK_NOT_READY, 0x040a);
	run_cdb(x, &x->a, rd, 10, buf, 512);
	assert_sense(x, SCSI_SK_NOT_READY, 0x040a);
	run_cdb(x, &a->c, rd, 10, buf, 512);   /* through group 2, Active/Optimized too */
	assert_sense(x, SCSI_SK_NOT_READY, 0x040a);
	run_cdb(x, &x->a, inq, 6, buf, 96);
	assert_good(x);
	assert_int_equal(rtpg_state(x, 1), SCSI_ALUA_TRANSITIONING);
	assert_int_equal(rtpg_state(x, 2), SCSI_ALUA_TRANSITIONING);

	/* a state that serves nothing is reported and enforced as it is */
	set_state(1, SCSI_ALUA_STANDBY, false);
	drain(x, &x->a, 0x2a06);
	run_cdb(x, &x->a, rd, 10, buf, 512);
	assert_sense(x, SCSI_SK_NOT_READY, 0x040b);
	assert_int_equal(rtpg_state(x, 1), SCSI_ALUA_STANDBY);

	/* registered again: the states apply as they are */
	set_state(1, SCSI_ALUA_ACTIVE_OPTIMIZED, true);
	drain(x, &x->a, 0x2a06);
	gate_on = false;
	run_cdb(x, &x->a, rd, 10, buf, 512);
	assert_good(x);
	assert_int_equal(rtpg_state(x, 1), SCSI_ALUA_ACTIVE_OPTIMIZED);
	x->mem->b.ops = saved;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_inquiry_tpgs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rtpg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rsoc_lists_alua, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stpg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stpg_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_api_and_ua_every_nexus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ua_before_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_groups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_port_map, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lu_moves_device_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inquiry_multip, setup, teardown),
		cmocka_unit_test(test_lease_phases),
		cmocka_unit_test_setup_teardown(test_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_map, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_map_256, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_awaits_registration, setup, teardown),
	};

	gw_log_set_level(GW_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
