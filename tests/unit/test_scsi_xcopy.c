// LINK: gw_scsi gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Third-party copy: EXTENDED COPY (LID1) block to block within an LU and
 * between two LUs of the nexus, parameter list validation, RECEIVE COPY
 * RESULTS (COPY STATUS, OPERATING PARAMETERS), VPD 8Fh.
 */
#include "test_scsi_harness.h"

#define MB (1024ull * 1024)

struct xctx {
	struct tctx x;                  /* LU 0 */
	struct membdev *mem1;           /* LU 1 */
	struct scsi_lu *lu1;
};

static int setup(void **state)
{
	struct xctx *c = calloc(1, sizeof(*c));
	struct scsi_lu_params p = default_params();

	tctx_setup(&c->x, 8 * MB, 512, &p);
	c->mem1 = mem_create(4 * MB, 512);
	p.lun = 1;
	p.naa[15] ^= 0xff;
	assert_int_equal(scsi_lu_create(&p, &c->mem1->b, &c->lu1), 0);
	c->x.luns[1] = c->lu1;
	c->x.a.nluns = 2;
	c->x.b.nluns = 2;
	scsi_lu_itn_add(c->lu1, &c->x.a);
	drain_ua(&c->x, &c->x.a);
	drain_ua(&c->x, &c->x.b);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct xctx *c = *state;

	scsi_lu_itn_remove(c->lu1, &c->x.a);
	scsi_lu_destroy(c->lu1);
	mem_destroy(c->mem1);
	tctx_teardown(&c->x);
	free(c);
	return 0;
}

/* Runs a command to completion on both bdevs. */
static uint8_t run(struct xctx *c, const uint8_t *cdb, void *buf, uint32_t len)
{
	struct tctx *x = &c->x;

	tcmd_init(&x->t, &x->a, x->lu, cdb, 16, buf, len);
	scsi_cmd_submit(&x->t.c);
	while (c->x.mem->qn || c->mem1->qn) {
		mem_run_one(c->x.mem);
		mem_run_one(c->mem1);
	}
	assert_int_equal(x->t.ndone, 1);
	return x->t.c.status;
}

static void xcopy_cdb(uint8_t *cdb, uint32_t plen)
{
	memset(cdb, 0, 16);
	cdb[0] = 0x83;
	cdb[10] = (uint8_t)(plen >> 24);
	cdb[11] = (uint8_t)(plen >> 16);
	cdb[12] = (uint8_t)(plen >> 8);
	cdb[13] = (uint8_t)plen;
}

static void rcr_cdb(uint8_t *cdb, uint8_t sa, uint8_t list_id, uint32_t alloc)
{
	memset(cdb, 0, 16);
	cdb[0] = 0x84;
	cdb[1] = sa;
	cdb[2] = list_id;
	cdb[10] = (uint8_t)(alloc >> 24);
	cdb[11] = (uint8_t)(alloc >> 16);
	cdb[12] = (uint8_t)(alloc >> 8);
	cdb[13] = (uint8_t)alloc;
}

static void hdr(uint8_t *p, uint8_t list_id, uint8_t usage, uint16_t cscd_len, uint32_t seg_len)
{
	memset(p, 0, 16);
	p[0] = list_id;
	p[1] = (uint8_t)(usage << 3);
	p[2] = (uint8_t)(cscd_len >> 8);
	p[3] = (uint8_t)cscd_len;
	p[8] = (uint8_t)(seg_len >> 24);
	p[9] = (uint8_t)(seg_len >> 16);
	p[10] = (uint8_t)(seg_len >> 8);
	p[11] = (uint8_t)seg_len;
}

/* Identification CSCD descriptor naming an LU by its NAA designator. */
static void cscd(uint8_t *d, const struct scsi_lu *lu, uint32_t bs)
{
	memset(d, 0, 32);
	d[0] = 0xe4;
	d[4] = 0x01;                    /* binary */
	d[5] = 0x03;                    /* LU, NAA */
	d[7] = 16;
	memcpy(&d[8], scsi_lu_get_params(lu)->naa, 16);
	d[29] = (uint8_t)(bs >> 16);
	d[30] = (uint8_t)(bs >> 8);
	d[31] = (uint8_t)bs;
}

static void seg(uint8_t *d, uint16_t src, uint16_t dst, uint16_t n, uint64_t slba, uint64_t dlba)
{
	int i;

	memset(d, 0, 28);
	d[0] = 0x02;
	d[3] = 0x18;
	d[4] = (uint8_t)(src >> 8); d[5] = (uint8_t)src;
	d[6] = (uint8_t)(dst >> 8); d[7] = (uint8_t)dst;
	d[10] = (uint8_t)(n >> 8); d[11] = (uint8_t)n;
	for (i = 0; i < 8; i++) {
		d[12 + i] = (uint8_t)(slba >> (56 - 8 * i));
		d[20 + i] = (uint8_t)(dlba >> (56 - 8 * i));
	}
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 13);
}

static void test_copy_within_and_across(void **state)
{
	struct xctx *c = *state;
	uint8_t cdb[16], p[16 + 64 + 3 * 28];
	size_t big = 3000 * 512;                /* more than one 1 MiB chunk */

	fill(c->x.mem->data, big, 1);
	hdr(p, 7, 0, 64, 3 * 28);
	cscd(&p[16], c->x.lu, 512);
	cscd(&p[48], c->lu1, 512);
	seg(&p[80], 0, 0, 3000, 0, 10000);      /* LU 0 -> LU 0 */
	seg(&p[108], 0, 1, 16, 5, 100);         /* LU 0 -> LU 1 */
	seg(&p[136], 1, 0, 0, 0, 0);            /* zero blocks: nothing */
	xcopy_cdb(cdb, sizeof(p));
	assert_int_equal(run(c, cdb, p, sizeof(p)), SCSI_STATUS_GOOD);
	assert_memory_equal(c->x.mem->data + 10000 * 512, c->x.mem->data, big);
	assert_memory_equal(c->mem1->data + 100 * 512, c->x.mem->data + 5 * 512, 16 * 512);
	assert_int_equal(c->mem1->data[99 * 512 + 511], 0);

	/* COPY STATUS: done, 3 segments, bytes; reported once */
	uint8_t d[64];

	rcr_cdb(cdb, 0x00, 7, sizeof(d));
	assert_int_equal(run(c, cdb, d, sizeof(d)), SCSI_STATUS_GOOD);
	assert_int_equal(c->x.t.c.xfer_len, 12);
	assert_int_equal(be32(&d[0]), 8);
	assert_int_equal(d[4], 0x01);
	assert_int_equal(be16(&d[5]), 3);
	assert_int_equal(d[7], 0);
	assert_int_equal(be32(&d[8]), (3000 + 16) * 512);
	assert_int_equal(run(c, cdb, d, sizeof(d)), SCSI_STATUS_CHECK_CONDITION);
	assert_sense(&c->x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);

	/* LIST ID USAGE 11b: not kept; a non-zero list ID is invalid */
	hdr(p, 0, 3, 64, 28);
	xcopy_cdb(cdb, 16 + 64 + 28);
	assert_int_equal(run(c, cdb, p, 16 + 64 + 28), SCSI_STATUS_GOOD);
	rcr_cdb(cdb, 0x00, 0, sizeof(d));
	assert_int_equal(run(c, cdb, d, sizeof(d)), SCSI_STATUS_CHECK_CONDITION);
	hdr(p, 9, 3, 64, 28);
	xcopy_cdb(cdb, 16 + 64 + 28);
	assert_int_equal(run(c, cdb, p, 16 + 64 + 28), SCSI_STATUS_CHECK_CONDITION);
	assert_sense(&c->x, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
}

static void expect(struct xctx *c, uint8_t *p, uint32_t plen, uint8_t key, uint16_t asc)
{
	uint8_t cdb[16];

	xcopy_cdb(cdb, plen);
	assert_int_equal(run(c, cdb, p, plen), SCSI_STATUS_CHECK_CONDITION);
	assert_sense(&c->x, key, asc);
}

static void test_param_errors(void **state)
{
	struct xctx *c = *state;
	uint8_t cdb[16], p[1024];
	uint32_t i;

	/* length 0: nothing to do */
	xcopy_cdb(cdb, 0);
	assert_int_equal(run(c, cdb, NULL, 0), SCSI_STATUS_GOOD);
	/* header truncated, descriptors truncated */
	hdr(p, 1, 0, 32, 28);
	cscd(&p[16], c->x.lu, 512);
	seg(&p[48], 0, 0, 8, 0, 100);
	expect(c, p, 8, SCSI_SK_ILLEGAL_REQUEST, 0x1a00);
	expect(c, p, 16 + 32 - 1, SCSI_SK_ILLEGAL_REQUEST, 0x1a00);
	expect(c, p, 16 + 32 + 28 - 1, SCSI_SK_ILLEGAL_REQUEST, 0x1a00);
	/* too many CSCD / segment descriptors (limits from OPERATING PARAMETERS) */
	hdr(p, 1, 0, 32 * 9, 28);
	for (i = 0; i < 9; i++)
		cscd(&p[16 + 32 * i], c->x.lu, 512);
	seg(&p[16 + 32 * 9], 0, 0, 8, 0, 100);
	expect(c, p, 16 + 32 * 9 + 28, SCSI_SK_ILLEGAL_REQUEST, 0x2606);
	hdr(p, 1, 0, 32, 28 * 17);
	cscd(&p[16], c->x.lu, 512);
	for (i = 0; i < 17; i++)
		seg(&p[48 + 28 * i], 0, 0, 8, 0, 100);
	expect(c, p, 48 + 28 * 17, SCSI_SK_ILLEGAL_REQUEST, 0x2608);
	/* unsupported descriptor types */
	hdr(p, 1, 0, 32, 28);
	cscd(&p[16], c->x.lu, 512);
	p[16] = 0xe0;
	seg(&p[48], 0, 0, 8, 0, 100);
	expect(c, p, 76, SCSI_SK_ILLEGAL_REQUEST, 0x2607);
	cscd(&p[16], c->x.lu, 512);
	p[48] = 0x03;
	expect(c, p, 76, SCSI_SK_ILLEGAL_REQUEST, 0x2609);
	/* CSCD naming an LU this nexus does not see; index outside the list */
	seg(&p[48], 0, 0, 8, 0, 100);
	p[16 + 8 + 3] ^= 0x55;
	expect(c, p, 76, 0x0a, 0x0d02);
	cscd(&p[16], c->x.lu, 512);
	seg(&p[48], 0, 1, 8, 0, 100);
	expect(c, p, 76, 0x0a, 0x0d02);
	/* beyond the end of the destination: nothing copied */
	memset(c->x.mem->data, 0x77, 512);
	seg(&p[48], 0, 0, 8, 0, 16384 - 1);
	expect(c, p, 76, 0x0a, 0x0000);
	assert_int_equal(c->x.mem->data[(16384 - 1) * 512], 0);
	/* block length in the CSCD must be the LU's */
	cscd(&p[16], c->x.lu, 4096);
	seg(&p[48], 0, 0, 8, 0, 100);
	expect(c, p, 76, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
	/* inline data and LIST ID USAGE 01b are not supported */
	cscd(&p[16], c->x.lu, 512);
	p[15] = 4;
	expect(c, p, 80, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
	hdr(p, 1, 1, 32, 28);
	expect(c, p, 76, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
	/* EXTENDED COPY(LID4) is not implemented */
	xcopy_cdb(cdb, 76);
	cdb[1] = 0x01;
	assert_int_equal(run(c, cdb, p, 76), SCSI_STATUS_CHECK_CONDITION);
	assert_sense(&c->x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	/* COPY STATUS of a list ID nobody used */
	rcr_cdb(cdb, 0x00, 42, 64);
	assert_int_equal(run(c, cdb, p, 64), SCSI_STATUS_CHECK_CONDITION);
	assert_sense(&c->x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	assert_int_equal(c->x.t.c.sense[15] & 0x40, 0x40);
}

static void test_io_error(void **state)
{
	struct xctx *c = *state;
	uint8_t cdb[16], p[16 + 64 + 28], d[16];

	hdr(p, 3, 0, 64, 28);
	cscd(&p[16], c->x.lu, 512);
	cscd(&p[48], c->lu1, 512);
	seg(&p[80], 0, 1, 8, 0, 0);
	c->mem1->fail_err = -EIO;
	c->mem1->fail_op = BDEV_OP_WRITE;
	expect(c, p, sizeof(p), 0x0a, 0x0d01);
	assert_int_equal(be32(&c->x.t.c.sense[8]), 0);  /* segment 0 failed */
	rcr_cdb(cdb, 0x00, 3, sizeof(d));
	assert_int_equal(run(c, cdb, d, sizeof(d)), SCSI_STATUS_GOOD);
	assert_int_equal(d[4], 0x02);                   /* completed with errors */
	assert_int_equal(be16(&d[5]), 0);
}

static void test_op_params_and_vpd(void **state)
{
	struct xctx *c = *state;
	uint8_t cdb[16], d[1024];
	uint32_t off, n;
	int seen_cmds = 0, seen_gco = 0;

	rcr_cdb(cdb, 0x03, 0, sizeof(d));
	assert_int_equal(run(c, cdb, d, sizeof(d)), SCSI_STATUS_GOOD);
	assert_true(be32(&d[0]) >= 40);
	assert_int_equal(be32(&d[0]) + 4, c->x.t.c.xfer_len);
	assert_int_equal(d[4] & 1, 1);                  /* SNLID */
	assert_int_equal(be16(&d[8]), 8);               /* CSCD descriptors */
	assert_int_equal(be16(&d[10]), 16);             /* segment descriptors */
	assert_int_equal(be32(&d[12]), 1024);
	assert_int_equal(d[37], 9);                     /* 512-byte granularity */
	assert_int_equal(d[43], 2);
	assert_memory_equal(&d[44], "\x02\xe4", 2);

	/* standard INQUIRY: 3PC */
	memset(cdb, 0, 16);
	cdb[0] = 0x12;
	cdb[4] = 96;
	assert_int_equal(run(c, cdb, d, 96), SCSI_STATUS_GOOD);
	assert_int_equal(d[5] & 0x08, 0x08);

	/* VPD 8Fh: descriptors of 4-byte multiples, supported commands first */
	cdb[1] = 0x01;
	cdb[2] = 0x8f;
	cdb[3] = 0x04;
	cdb[4] = 0x00;
	assert_int_equal(run(c, cdb, d, 1024), SCSI_STATUS_GOOD);
	n = c->x.t.c.xfer_len;
	assert_int_equal(d[1], 0x8f);
	assert_int_equal(be16(&d[2]) + 4, n);
	for (off = 4; off < n; off += 4 + be16(&d[off + 2])) {
		uint16_t type = be16(&d[off]);

		assert_int_equal(be16(&d[off + 2]) % 4, 0);
		if (type == 0x0001) {
			seen_cmds++;
			assert_int_equal(d[off + 4], 7);
			assert_memory_equal(&d[off + 5], "\x83\x01\x00\x84\x02\x00\x03", 7);
		} else if (type == 0x8001) {
			seen_gco++;
			assert_int_equal(be16(&d[off + 2]), 0x20);
		}
	}
	assert_int_equal(off, n);
	assert_int_equal(seen_cmds, 1);
	assert_int_equal(seen_gco, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_copy_within_and_across, setup, teardown),
		cmocka_unit_test_setup_teardown(test_param_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_io_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_op_params_and_vpd, setup, teardown),
	};

	gw_log_set_level(GW_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
