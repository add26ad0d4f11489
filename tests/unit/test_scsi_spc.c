// LINK: gw_scsi gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SPC side of the SCSI layer: sense format, dispatch, INQUIRY/VPD, READ
 * CAPACITY, REPORT LUNS, REQUEST SENSE, MODE SENSE/SELECT, REPORT SUPPORTED
 * OPERATION CODES, and unit attention rules.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "test_scsi_harness.h"

#define MB (1024ull * 1024)

static int setup512(void **state)
{
	struct tctx *x = malloc(sizeof(*x));
	struct scsi_lu_params p = default_params();

	tctx_setup(x, 64 * MB, 512, &p);
	*state = x;
	return 0;
}

static int setup4k(void **state)
{
	struct tctx *x = malloc(sizeof(*x));
	struct scsi_lu_params p = default_params();

	tctx_setup(x, 64 * MB, 4096, &p);
	*state = x;
	return 0;
}

/* ------------------------------------------------------------ sense format */

static void test_sense_builders(void **state)
{
	struct scsi_cmd c;

	(void)state;
	memset(&c, 0, sizeof(c));
	scsi_cmd_set_sense(&c, SCSI_SK_ILLEGAL_REQUEST, 0x20, 0x00);
	assert_int_equal(c.status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(c.sense_len, 18);
	assert_int_equal(c.sense[0], 0x70);
	assert_int_equal(c.sense[2], 0x05);
	assert_int_equal(c.sense[7], 10);
	assert_int_equal(c.sense[12], 0x20);
	assert_int_equal(c.sense[13], 0x00);
	assert_int_equal(c.sense[15], 0);

	scsi_cmd_set_sense_info(&c, SCSI_SK_MISCOMPARE, 0x1d, 0x00, 0x01020304);
	assert_int_equal(c.sense[0], 0xf0);     /* VALID */
	assert_int_equal(c.sense[2], 0x0e);
	assert_int_equal(be32(&c.sense[3]), 0x01020304);
	assert_int_equal(c.sense[12], 0x1d);

	scsi_cmd_set_sense_field(&c, SCSI_SK_ILLEGAL_REQUEST, 0x24, 0x00, true, 2, 5);
	assert_int_equal(c.sense[0], 0x70);
	assert_int_equal(c.sense[15], 0x80 | 0x40 | 0x08 | 5);
	assert_int_equal(be16(&c.sense[16]), 2);

	scsi_cmd_set_sense_field(&c, SCSI_SK_ILLEGAL_REQUEST, 0x26, 0x00, false, 300, -1);
	assert_int_equal(c.sense[15], 0x80);
	assert_int_equal(be16(&c.sense[16]), 300);
}

/* --------------------------------------------------------------- dispatch */

static void test_unknown_opcode(void **state)
{
	struct tctx *x = *state;
	uint8_t c[16] = { 0xc5 };

	run_cdb(x, &x->a, c, 6, NULL, 0);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2000);

	/* known opcode, unknown service action: INVALID FIELD IN CDB at byte 1 */
	memset(c, 0, sizeof(c));
	c[0] = 0x9e;
	c[1] = 0x1f;
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	assert_int_equal(x->t.c.sense[15] & 0xc0, 0xc0);
	assert_int_equal(be16(&x->t.c.sense[16]), 1);

	/* NACA in the control byte is not supported */
	memset(c, 0, sizeof(c));
	c[5] = 0x04;
	run_cdb(x, &x->a, c, 6, NULL, 0);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
}

static void test_no_lu(void **state)
{
	struct tctx *x = *state;
	uint8_t c[16] = { 0 }, buf[256];

	/* TEST UNIT READY to a LUN without an LU */
	tcmd_init(&x->t, &x->a, NULL, c, 6, NULL, 0);
	scsi_cmd_submit(&x->t.c);
	assert_int_equal(x->t.ndone, 1);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2500);

	/* INQUIRY answers qualifier 3 / type 1fh */
	c[0] = 0x12;
	c[4] = 96;
	tcmd_init(&x->t, &x->a, NULL, c, 6, buf, sizeof(buf));
	scsi_cmd_submit(&x->t.c);
	assert_good(x);
	assert_int_equal(buf[0], 0x7f);

	/* REQUEST SENSE returns LOGICAL UNIT NOT SUPPORTED as data */
	memset(c, 0, sizeof(c));
	c[0] = 0x03;
	c[4] = 18;
	tcmd_init(&x->t, &x->a, NULL, c, 6, buf, sizeof(buf));
	scsi_cmd_submit(&x->t.c);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 18);
	assert_int_equal(buf[2], 0x05);
	assert_int_equal(buf[12], 0x25);

	/* REPORT LUNS works */
	memset(c, 0, sizeof(c));
	c[0] = 0xa0;
	c[9] = 64;
	tcmd_init(&x->t, &x->a, NULL, c, 12, buf, sizeof(buf));
	scsi_cmd_submit(&x->t.c);
	assert_good(x);
	assert_int_equal(be32(buf), 8);

	/* READ(10) does not */
	cdb10(c, 0x28, 0, 0, 1);
	tcmd_init(&x->t, &x->a, NULL, c, 10, buf, sizeof(buf));
	scsi_cmd_submit(&x->t.c);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2500);
}

/* ---------------------------------------------------------------- INQUIRY */

static void test_inquiry_standard(void **state)
{
	struct tctx *x = *state;
	uint8_t c[16] = { 0x12, 0, 0, 0x01, 0x04 }, buf[512];

	memset(buf, 0xaa, sizeof(buf));
	run_cdb(x, &x->a, c, 6, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 96);
	assert_int_equal(buf[0], 0x00);
	assert_int_equal(buf[2], 0x06);
	assert_int_equal(buf[3], 0x12);         /* HISUP, format 2 */
	assert_int_equal(buf[4], 91);
	assert_int_equal(buf[5] & 0x30, 0x30);  /* TPGS 3: implicit and explicit ALUA */
	assert_int_equal(buf[7], 0x02);         /* CMDQUE */
	assert_memory_equal(&buf[8], "ISERGW  ", 8);
	assert_memory_equal(&buf[16], "Test Disk       ", 16);
	assert_memory_equal(&buf[32], "0001", 4);
	assert_int_equal(be16(&buf[58]), 0x00a0);
	assert_int_equal(be16(&buf[64]), 0x04c0);
	assert_int_equal(buf[96], 0xaa);        /* nothing written past the data */

	/* truncation to the allocation length */
	c[3] = 0;
	c[4] = 36;
	memset(buf, 0xaa, sizeof(buf));
	run_cdb(x, &x->a, c, 6, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 36);
	assert_int_equal(buf[36], 0xaa);

	/* allocation length larger than the buffer: write at most buf_len */
	c[4] = 200;
	memset(buf, 0xaa, sizeof(buf));
	run_cdb(x, &x->a, c, 6, buf, 10);
	assert_int_equal(x->t.c.xfer_len, 96);
	assert_int_equal(buf[10], 0xaa);

	/* allocation length 0 */
	c[4] = 0;
	run_cdb(x, &x->a, c, 6, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 0);

	/* EVPD = 0 with a page code is an error */
	c[2] = 0x80;
	c[4] = 255;
	run_cdb(x, &x->a, c, 6, buf, sizeof(buf));
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
}

static uint32_t inquiry_vpd(struct tctx *x, uint8_t page, uint8_t *buf, uint16_t alloc)
{
	uint8_t c[16] = { 0x12, 0x01, page, (uint8_t)(alloc >> 8), (uint8_t)alloc };

	memset(buf, 0, alloc);
	run_cdb(x, &x->a, c, 6, buf, alloc);
	assert_good(x);
	return x->t.c.xfer_len;
}

static void test_inquiry_vpd(void **state)
{
	struct tctx *x = *state;
	uint8_t buf[512], c[16] = { 0x12, 0x01, 0x99, 0, 255 };
	uint32_t n, off;
	int found_naa = 0, found_name = 0, found_rel = 0, found_tpg = 0, found_t10 = 0;

	n = inquiry_vpd(x, 0x00, buf, 255);
	assert_int_equal(n, 11);
	assert_int_equal(buf[1], 0x00);
	assert_int_equal(be16(&buf[2]), 7);
	assert_memory_equal(&buf[4], "\x00\x80\x83\x8f\xb0\xb1\xb2", 7);

	n = inquiry_vpd(x, 0x80, buf, 255);
	assert_int_equal(buf[1], 0x80);
	assert_int_equal(be16(&buf[2]), strlen("SN-0123456789"));
	assert_memory_equal(&buf[4], "SN-0123456789", 13);

	n = inquiry_vpd(x, 0x83, buf, 512);
	assert_int_equal(buf[1], 0x83);
	assert_int_equal(be16(&buf[2]) + 4, n);
	for (off = 4; off < n; off += 4 + buf[off + 3]) {
		uint8_t type = buf[off + 1] & 0x0f, assoc = (buf[off + 1] >> 4) & 3;

		if (type == 3) {
			found_naa++;
			assert_int_equal(assoc, 0);
			assert_int_equal(buf[off + 3], 16);
			assert_int_equal(buf[off + 4], 0x60);
		} else if (type == 1) {
			found_t10++;
			assert_memory_equal(&buf[off + 4], "ISERGW  ", 8);
		} else if (type == 8) {
			found_name++;
			assert_int_equal(assoc, 1);
			assert_int_equal(buf[off + 3] % 4, 0);
			assert_string_equal((char *)&buf[off + 4], test_port1.name);
		} else if (type == 4) {
			found_rel++;
			assert_int_equal(be16(&buf[off + 6]), 1);
		} else if (type == 5) {
			found_tpg++;
			assert_int_equal(be16(&buf[off + 6]), 1);
		}
	}
	assert_int_equal(off, n);
	assert_int_equal(found_naa, 1);
	assert_int_equal(found_t10, 1);
	assert_int_equal(found_name, 1);
	assert_int_equal(found_rel, 1);
	assert_int_equal(found_tpg, 1);

	n = inquiry_vpd(x, 0xb0, buf, 64);
	assert_int_equal(n, 64);
	assert_int_equal(buf[3], 0x3c);
	assert_int_equal(buf[4] & 1, 1);        /* WSNZ */
	assert_true(buf[5] > 0);                /* MAXIMUM COMPARE AND WRITE LENGTH */
	assert_true(be32(&buf[8]) > 0);
	assert_true(be32(&buf[20]) > 0 && be32(&buf[20]) <= 1024 * 1024);
	assert_true(be32(&buf[24]) >= 256);
	assert_true(be64(&buf[36]) >= 65536);
	/* WRITE ATOMIC(16): 1 MiB, no alignment or granularity restriction */
	assert_int_equal(be32(&buf[44]), (1024 * 1024) / x->mem->b.info.block_size);
	assert_true(be32(&buf[44]) <= be32(&buf[8]));
	assert_int_equal(be32(&buf[48]), 1);
	assert_int_equal(be32(&buf[52]), 1);
	assert_int_equal(be32(&buf[56]), 0);
	assert_int_equal(be32(&buf[60]), 0);

	n = inquiry_vpd(x, 0xb1, buf, 255);
	assert_int_equal(be16(&buf[4]), 1);     /* non-rotational */

	n = inquiry_vpd(x, 0xb2, buf, 255);
	assert_int_equal(n, 8);
	assert_int_equal(buf[5], 0xe4);         /* LBPU LBPWS LBPWS10 LBPRZ */
	assert_int_equal(buf[6] & 7, 2);        /* thin */

	/* truncation: page length field still says the full length */
	n = inquiry_vpd(x, 0xb0, buf, 8);
	assert_int_equal(n, 8);
	assert_int_equal(buf[3], 0x3c);

	run_cdb(x, &x->a, c, 6, buf, sizeof(buf));
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
}

static void test_vpd_not_thin(void **state)
{
	struct tctx y;
	struct scsi_lu_params p = default_params();
	uint8_t buf[256], c[16];

	(void)state;
	p.thin = false;
	tctx_setup(&y, 4 * MB, 512, &p);
	inquiry_vpd(&y, 0xb2, buf, 255);
	assert_int_equal(buf[5], 0);
	inquiry_vpd(&y, 0xb0, buf, 64);
	assert_int_equal(be32(&buf[20]), 0);
	assert_int_equal(be32(&buf[24]), 0);
	/* UNMAP is not supported at all */
	cdb10(c, 0x42, 0, 0, 0);
	run_cdb(&y, &y.a, c, 10, NULL, 0);
	assert_sense(&y, SCSI_SK_ILLEGAL_REQUEST, 0x2000);
	/* READ CAPACITY(16): LBPME clear */
	cdb16(c, 0x9e, 0x10, 0, 32);
	run_cdb(&y, &y.a, c, 16, buf, 32);
	assert_int_equal(buf[14] & 0xc0, 0);
	tctx_teardown(&y);
}

/* ---------------------------------------------------------- READ CAPACITY */

static void test_read_capacity(void **state)
{
	struct tctx *x = *state;
	uint8_t c[16], buf[64];
	uint32_t bs = x->mem->b.info.block_size;
	uint64_t nb = x->mem->b.info.size_bytes / bs;

	cdb10(c, 0x25, 0, 0, 0);
	run_cdb(x, &x->a, c, 10, buf, 8);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 8);
	assert_int_equal(be32(buf), nb - 1);
	assert_int_equal(be32(&buf[4]), bs);

	/* LBA without PMI is invalid */
	cdb10(c, 0x25, 0, 5, 0);
	run_cdb(x, &x->a, c, 10, buf, 8);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);

	cdb16(c, 0x9e, 0x10, 0, 32);
	memset(buf, 0xee, sizeof(buf));
	run_cdb(x, &x->a, c, 16, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 32);
	assert_int_equal(be64(buf), nb - 1);
	assert_int_equal(be32(&buf[8]), bs);
	assert_int_equal(buf[14] & 0xc0, 0xc0); /* LBPME, LBPRZ */

	/* allocation length 15 */
	cdb16(c, 0x9e, 0x10, 0, 15);
	run_cdb(x, &x->a, c, 16, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 15);
}

static void test_read_capacity_huge(void **state)
{
	struct membdev *m = mem_create(4096, 512);
	struct tctx y;
	struct scsi_lu_params p = default_params();
	uint8_t c[16], buf[32];

	(void)state;
	memset(&y, 0, sizeof(y));
	/* pretend the device is 4 TiB of 512-byte blocks (no I/O is issued) */
	m->b.info.size_bytes = 4ull << 40;
	y.mem = m;
	assert_int_equal(scsi_lu_create(&p, &m->b, &y.lu), 0);
	itn_init(&y.a, 1, "iqn.x:a", "400000000001", &test_port1, NULL, 0);
	cdb10(c, 0x25, 0, 0, 0);
	run_cdb(&y, &y.a, c, 10, buf, 8);
	assert_int_equal(be32(buf), 0xffffffffu);
	cdb16(c, 0x9e, 0x10, 0, 32);
	run_cdb(&y, &y.a, c, 16, buf, 32);
	assert_int_equal(be64(buf), (4ull << 40) / 512 - 1);
	scsi_lu_destroy(y.lu);
	mem_destroy(m);
}

/* ------------------------------------------------------------ REPORT LUNS */

static void test_report_luns(void **state)
{
	struct tctx *x = *state;
	struct scsi_lu *luns[300];
	struct scsi_itn itn;
	uint8_t c[16] = { 0xa0 }, buf[4096];

	memset(luns, 0, sizeof(luns));
	luns[0] = x->lu;
	luns[7] = x->lu;
	luns[299] = x->lu;
	itn_init(&itn, 9, "iqn.x:r", "400000000009", &test_port1, luns, 300);
	c[8] = 0x10;                            /* allocation length 4096 */
	tcmd_init(&x->t, &itn, x->lu, c, 12, buf, sizeof(buf));
	scsi_cmd_submit(&x->t.c);
	mem_run(x->mem);
	assert_good(x);
	assert_int_equal(be32(buf), 24);
	assert_int_equal(x->t.c.xfer_len, 32);
	assert_memory_equal(&buf[8], "\0\0\0\0\0\0\0\0", 8);
	assert_int_equal(buf[16], 0);
	assert_int_equal(buf[17], 7);
	assert_int_equal(buf[24], 0x40 | (299 >> 8));  /* flat space */
	assert_int_equal(buf[25], 299 & 0xff);

	/* well-known LUNs only: empty */
	c[2] = 1;
	tcmd_init(&x->t, &itn, x->lu, c, 12, buf, sizeof(buf));
	scsi_cmd_submit(&x->t.c);
	assert_good(x);
	assert_int_equal(be32(buf), 0);

	/* bad SELECT REPORT, allocation length < 16 */
	c[2] = 3;
	tcmd_init(&x->t, &itn, x->lu, c, 12, buf, sizeof(buf));
	scsi_cmd_submit(&x->t.c);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	c[2] = 0;
	c[8] = 0;
	c[9] = 8;
	tcmd_init(&x->t, &itn, x->lu, c, 12, buf, sizeof(buf));
	scsi_cmd_submit(&x->t.c);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
}

/*
 * A reload adds and removes LUNs of the map a nexus sees (release stores into
 * the target's array, under a lock the SCSI layer does not take) while
 * REPORT LUNS walks it on a reactor: each answer is a consistent list, LUN 0
 * (never removed) once, no LUN twice, within the buffer. Before the walk read
 * the map with acquire loads and kept to the LUNs it had counted, the TSan
 * tree reported the race, and a LUN added between its two passes wrote past
 * the answer's buffer (a LUN removed left zero entries: LUN 0 again).
 */
static atomic_int flipping;             /* 1: the "reload" thread runs */

struct flip_arg {
	struct scsi_lu **luns;
	struct scsi_lu *lu;
};

static void *flip_luns(void *arg)
{
	struct flip_arg *f = arg;

	atomic_store_explicit(&flipping, 1, memory_order_relaxed);
	for (uint32_t k = 0; atomic_load_explicit(&flipping, memory_order_relaxed) == 1; k++) {
		uint32_t i = 1 + k % 299;

		__atomic_store_n(&f->luns[i], f->luns[i] ? NULL : f->lu, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void test_report_luns_during_reload(void **state)
{
	struct tctx *x = *state;
	struct scsi_lu *luns[300];
	struct flip_arg f = { .luns = luns, .lu = x->lu };
	struct scsi_itn itn;
	uint8_t c[16] = { 0xa0 }, buf[8 + 8 * 300];
	pthread_t t;

	memset(luns, 0, sizeof(luns));
	luns[0] = x->lu;
	itn_init(&itn, 9, "iqn.x:r", "400000000009", &test_port1, luns, 300);
	c[8] = (uint8_t)(sizeof(buf) >> 8);     /* allocation length */
	c[9] = (uint8_t)sizeof(buf);
	atomic_store(&flipping, 0);
	assert_int_equal(pthread_create(&t, NULL, flip_luns, &f), 0);
	while (atomic_load_explicit(&flipping, memory_order_relaxed) != 1)
		usleep(100);
	for (int round = 0; round < 2000; round++) {
		bool seen[300] = { false };
		uint32_t n;

		memset(buf, 0xee, sizeof(buf));
		tcmd_init(&x->t, &itn, x->lu, c, 12, buf, sizeof(buf));
		scsi_cmd_submit(&x->t.c);
		mem_run(x->mem);
		assert_good(x);
		n = be32(buf) / 8;
		assert_true(n >= 1 && n <= 300);
		assert_int_equal(x->t.c.xfer_len, 8 + 8 * n);
		for (uint32_t e = 0; e < n; e++) {
			const uint8_t *d = &buf[8 + 8 * e];
			uint32_t lun = (uint32_t)(d[0] & 0x3f) << 8 | d[1];

			assert_true(lun < 300);
			assert_false(seen[lun]);
			seen[lun] = true;
		}
		assert_true(seen[0]);
	}
	atomic_store_explicit(&flipping, 2, memory_order_relaxed);
	assert_int_equal(pthread_join(t, NULL), 0);
}

/* -------------------------------------------------------------- MODE pages */

static uint32_t mode_sense6(struct tctx *x, const struct scsi_itn *itn, uint8_t dbd_pc_page,
			    uint8_t page_pc, uint8_t *buf, uint8_t alloc)
{
	uint8_t c[16] = { 0x1a, dbd_pc_page, page_pc, 0, alloc };

	run_cdb(x, itn, c, 6, buf, alloc);
	return x->t.c.xfer_len;
}

/* Finds page `code` in MODE SENSE(6) data. */
static const uint8_t *find_page6(const uint8_t *d, uint32_t len, uint8_t code)
{
	uint32_t off = 4 + d[3];

	while (off + 2 <= len) {
		if ((d[off] & 0x3f) == code)
			return &d[off];
		off += 2 + d[off + 1];
	}
	return NULL;
}

static void test_mode_sense(void **state)
{
	struct tctx *x = *state;
	uint8_t buf[256], c[16];
	const uint8_t *pg;
	uint32_t n;

	n = mode_sense6(x, &x->a, 0, 0x3f, buf, 255);
	assert_good(x);
	assert_int_equal(buf[0] + 1, n);
	assert_int_equal(buf[2], 0x10);         /* DPOFUA, not write protected */
	assert_int_equal(buf[3], 8);            /* one block descriptor */
	assert_int_equal(be32(&buf[4]), x->mem->b.info.size_bytes / x->mem->b.info.block_size);
	assert_int_equal((uint32_t)buf[9] << 16 | be16(&buf[10]), x->mem->b.info.block_size);
	pg = find_page6(buf, n, 0x08);
	assert_non_null(pg);
	assert_int_equal(pg[1], 0x12);
	assert_int_equal(pg[2] & 0x04, 0x04);   /* WCE from params */
	pg = find_page6(buf, n, 0x0a);
	assert_non_null(pg);
	assert_int_equal(pg[2] >> 5, 1);        /* TST: a task set per I_T nexus */
	assert_non_null(find_page6(buf, n, 0x1c));

	/* DBD, changeable values */
	n = mode_sense6(x, &x->a, 0x08, 0x40 | 0x08, buf, 255);
	assert_good(x);
	assert_int_equal(buf[3], 0);
	assert_int_equal(n, 4 + 20);
	assert_int_equal(buf[4 + 2], 0x04);

	/* truncation without residual overflow */
	n = mode_sense6(x, &x->a, 0, 0x3f, buf, 4);
	assert_int_equal(n, 4);

	/* saved values are not supported; unknown page is invalid */
	mode_sense6(x, &x->a, 0, 0xc0 | 0x08, buf, 255);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x3900);
	mode_sense6(x, &x->a, 0, 0x19, buf, 255);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);

	/* MODE SENSE(10) with LLBAA */
	memset(c, 0, sizeof(c));
	c[0] = 0x5a;
	c[1] = 0x10;
	c[2] = 0x08;
	c[8] = 255;
	run_cdb(x, &x->a, c, 10, buf, 255);
	assert_good(x);
	assert_int_equal(be16(buf) + 2, x->t.c.xfer_len);
	assert_int_equal(buf[4] & 1, 1);
	assert_int_equal(be16(&buf[6]), 16);
	assert_int_equal(be64(&buf[8]), x->mem->b.info.size_bytes / x->mem->b.info.block_size);
	assert_int_equal(be32(&buf[20]), x->mem->b.info.block_size);
	assert_int_equal(buf[24], 0x08);
}

static void test_mode_select_ua(void **state)
{
	struct tctx *x = *state;
	uint8_t buf[256], sel[64], c[16];
	const uint8_t *pg;
	uint32_t n;

	drain_ua(x, &x->a);
	drain_ua(x, &x->b);

	/* read current caching page, clear WCE, write it back */
	n = mode_sense6(x, &x->a, 0x08, 0x08, buf, 255);
	assert_good(x);
	memset(sel, 0, sizeof(sel));
	memcpy(&sel[4], &buf[4], n - 4);
	sel[4] &= 0x7f;                         /* PS is reserved in MODE SELECT */
	sel[4 + 2] &= (uint8_t)~0x04;
	memset(c, 0, sizeof(c));
	c[0] = 0x15;
	c[1] = 0x10;
	c[4] = (uint8_t)n;
	run_cdb(x, &x->a, c, 6, sel, n);
	assert_good(x);

	/* the change is visible, and writes are now FUA */
	n = mode_sense6(x, &x->a, 0x08, 0x08, buf, 255);
	pg = find_page6(buf, n, 0x08);
	assert_int_equal(pg[2] & 0x04, 0);

	/* the other nexus gets MODE PARAMETERS CHANGED once, the issuer nothing */
	memset(c, 0, sizeof(c));
	run_cdb(x, &x->a, c, 6, NULL, 0);
	assert_good(x);
	run_cdb(x, &x->b, c, 6, NULL, 0);
	assert_sense(x, SCSI_SK_UNIT_ATTENTION, 0x2a01);
	run_cdb(x, &x->b, c, 6, NULL, 0);
	assert_good(x);

	/* changing a non-changeable field is rejected with a field pointer */
	sel[4 + 3] = 0x01;                      /* caching page byte 3 */
	c[0] = 0x15;
	c[1] = 0x10;
	c[4] = (uint8_t)n;
	run_cdb(x, &x->a, c, 6, sel, n);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
	assert_int_equal(be16(&x->t.c.sense[16]), 7);
	sel[4 + 3] = 0;

	/* truncated page: PARAMETER LIST LENGTH ERROR */
	c[4] = 10;
	run_cdb(x, &x->a, c, 6, sel, 10);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x1a00);

	/* SP is not supported */
	c[1] = 0x11;
	c[4] = (uint8_t)n;
	run_cdb(x, &x->a, c, 6, sel, n);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);

	/* SWP through MODE SELECT(10) makes the LU write protected */
	memset(c, 0, sizeof(c));
	c[0] = 0x5a;
	c[1] = 0x08;
	c[2] = 0x0a;
	c[8] = 255;
	run_cdb(x, &x->a, c, 10, buf, 255);
	assert_good(x);
	n = x->t.c.xfer_len;
	memset(sel, 0, sizeof(sel));
	memcpy(&sel[8], &buf[8], n - 8);
	sel[8 + 4] |= 0x08;
	memset(c, 0, sizeof(c));
	c[0] = 0x55;
	c[1] = 0x10;
	c[8] = (uint8_t)n;
	run_cdb(x, &x->a, c, 10, sel, n);
	assert_good(x);
	n = mode_sense6(x, &x->a, 0x08, 0x0a, buf, 255);
	assert_int_equal(buf[2] & 0x80, 0x80);  /* WP */
	cdb10(c, 0x2a, 0, 0, 1);
	run_cdb(x, &x->a, c, 10, sel, 64);
	assert_sense(x, SCSI_SK_DATA_PROTECT, 0x2702);
	/* a cold target reset restores the defaults */
	scsi_lu_reset(x->lu, &x->a, SCSI_RESET_TARGET_COLD);
	drain_ua(x, &x->a);
	n = mode_sense6(x, &x->a, 0x08, 0x0a, buf, 255);
	assert_int_equal(buf[2] & 0x80, 0);
}

/* ----------------------------------------------------- unit attentions */

static void test_ua_rules(void **state)
{
	struct tctx *x = *state;
	uint8_t c[16] = { 0 }, buf[256];

	drain_ua(x, &x->a);
	drain_ua(x, &x->b);

	scsi_lu_reset(x->lu, &x->b, SCSI_RESET_LU);
	scsi_lu_tasks_cleared(x->lu, &x->b);

	/* INQUIRY and REPORT LUNS do not report or consume a UA */
	c[0] = 0x12;
	c[4] = 36;
	run_cdb(x, &x->a, c, 6, buf, 36);
	assert_good(x);
	memset(c, 0, sizeof(c));
	c[0] = 0xa0;
	c[9] = 16;
	run_cdb(x, &x->a, c, 12, buf, 16);
	assert_good(x);

	/* oldest first: the reset, then COMMANDS CLEARED BY ANOTHER INITIATOR */
	memset(c, 0, sizeof(c));
	c[0] = 0x25;
	run_cdb(x, &x->a, c, 10, buf, 8);
	assert_sense(x, SCSI_SK_UNIT_ATTENTION, 0x2903);
	/* REQUEST SENSE returns (and clears) the next one as data */
	memset(c, 0, sizeof(c));
	c[0] = 0x03;
	c[4] = 18;
	run_cdb(x, &x->a, c, 6, buf, 18);
	assert_good(x);
	assert_int_equal(buf[2], SCSI_SK_UNIT_ATTENTION);
	assert_int_equal(buf[12], 0x2f);
	run_cdb(x, &x->a, c, 6, buf, 18);
	assert_good(x);
	assert_int_equal(buf[2], SCSI_SK_NO_SENSE);
	assert_int_equal(buf[12], 0);
	memset(c, 0, sizeof(c));
	run_cdb(x, &x->a, c, 6, NULL, 0);
	assert_good(x);

	/* the nexus that cleared the tasks only sees the reset */
	assert_int_equal(drain_ua(x, &x->b), 1);

	/* a UA is reported even for an unsupported opcode */
	scsi_lu_reset(x->lu, NULL, SCSI_RESET_TARGET_WARM);
	c[0] = 0xc5;
	run_cdb(x, &x->a, c, 6, NULL, 0);
	assert_sense(x, SCSI_SK_UNIT_ATTENTION, 0x2900);
	run_cdb(x, &x->a, c, 6, NULL, 0);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2000);
	drain_ua(x, &x->b);
}

static void test_ua_survives_reconnect(void **state)
{
	struct tctx *x = *state;
	struct scsi_itn again;
	uint8_t c[16] = { 0 };

	drain_ua(x, &x->a);
	scsi_lu_reset(x->lu, NULL, SCSI_RESET_LU);
	/* nexus A goes away and comes back with the same initiator port */
	scsi_lu_itn_remove(x->lu, &x->a);
	again = x->a;
	again.id = 77;
	scsi_lu_itn_add(x->lu, &again);
	run_cdb(x, &again, c, 6, NULL, 0);
	assert_sense(x, SCSI_SK_UNIT_ATTENTION, 0x2903);
	run_cdb(x, &again, c, 6, NULL, 0);
	assert_good(x);
	/* same initiator port through another target port: a different nexus */
	again.port = &test_port2;
	run_cdb(x, &again, c, 6, NULL, 0);
	assert_good(x);
	drain_ua(x, &x->b);
}

/* ------------------------------------------ REPORT SUPPORTED OPERATION CODES */

static void test_rsoc(void **state)
{
	struct tctx *x = *state;
	uint8_t c[16], *buf = malloc(65536);
	uint32_t len, off, ndesc = 0;
	int saw_prin = 0, saw_write10 = 0;

	memset(c, 0, sizeof(c));
	c[0] = 0xa3;
	c[1] = 0x0c;
	c[8] = 0xff;
	c[9] = 0xff;
	run_cdb(x, &x->a, c, 12, buf, 65535);
	assert_good(x);
	len = be32(buf);
	assert_int_equal(len + 4, x->t.c.xfer_len);
	for (off = 4; off < len + 4; off += 8) {
		uint8_t *e = &buf[off];

		ndesc++;
		assert_int_equal(e[5] & 0x02, 0);       /* no CTDP without RCTD */
		if (!(e[5] & 1))
			assert_int_equal(be16(&e[2]), 0);
		if (e[0] == 0x5e)
			saw_prin++;
		if (e[0] == 0x2a)
			saw_write10++;
		/* CDB length follows the group code */
		switch (e[0] >> 5) {
		case 0: assert_int_equal(be16(&e[6]), 6); break;
		case 1: case 2: assert_int_equal(be16(&e[6]), 10); break;
		case 4: assert_int_equal(be16(&e[6]), 16); break;
		case 5: assert_int_equal(be16(&e[6]), 12); break;
		default: fail();
		}
	}
	assert_int_equal(saw_prin, 4);
	assert_int_equal(saw_write10, 1);
	assert_true(ndesc > 40);

	/* RCTD: every descriptor carries a 12-byte timeouts descriptor */
	c[2] = 0x80;
	run_cdb(x, &x->a, c, 12, buf, 65535);
	assert_good(x);
	len = be32(buf);
	assert_int_equal(len, ndesc * 20);
	for (off = 4; off < len + 4; off += 20) {
		assert_int_equal(buf[off + 5] & 0x02, 0x02);
		assert_int_equal(be16(&buf[off + 8]), 0x0a);
	}

	/* one command: WRITE(10) with its usage data (DPO/FUA) */
	c[2] = 0x01;
	c[3] = 0x2a;
	run_cdb(x, &x->a, c, 12, buf, 65535);
	assert_good(x);
	assert_int_equal(buf[1] & 0x07, 0x03);
	assert_int_equal(be16(&buf[2]), 10);
	assert_int_equal(buf[4], 0x2a);
	assert_int_equal(buf[5] & 0x18, 0x18);
	assert_int_equal(x->t.c.xfer_len, 14);

	/* option 1 on an opcode with service actions: invalid, pointer != 1 */
	c[3] = 0x5e;
	run_cdb(x, &x->a, c, 12, buf, 65535);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	assert_int_equal(be16(&x->t.c.sense[16]), 2);

	/* option 2: PRIN / READ RESERVATION */
	c[2] = 0x02;
	c[5] = 0x01;
	run_cdb(x, &x->a, c, 12, buf, 65535);
	assert_good(x);
	assert_int_equal(buf[1] & 0x07, 0x03);
	assert_int_equal(buf[4], 0x5e);
	assert_int_equal(buf[5], 0x01);
	/* option 2 on an opcode without service actions */
	c[3] = 0x28;
	c[5] = 0;
	run_cdb(x, &x->a, c, 12, buf, 65535);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	/* unsupported opcode: SUPPORT = 001b */
	c[2] = 0x01;
	c[3] = 0xc5;
	run_cdb(x, &x->a, c, 12, buf, 65535);
	assert_good(x);
	assert_int_equal(buf[1] & 0x07, 0x01);
	/* bad reporting option */
	c[2] = 0x07;
	run_cdb(x, &x->a, c, 12, buf, 65535);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);

	/* REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS */
	memset(c, 0, sizeof(c));
	c[0] = 0xa3;
	c[1] = 0x0d;
	c[9] = 16;
	run_cdb(x, &x->a, c, 12, buf, 16);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 4);
	assert_int_equal(buf[0] & 0x88, 0x88);  /* ABORT TASK, LU RESET */
	free(buf);
}

/* ----------------------------------------------------------- CDB lengths */

static void test_all_opcodes_dispatch(void **state)
{
	/* Every supported opcode must run (GOOD or a defined CHECK CONDITION)
	 * with a zeroed CDB and no data, and never INVALID OPERATION CODE. */
	static const uint8_t ops[] = {
		0x00, 0x03, 0x08, 0x0a, 0x12, 0x15, 0x16, 0x17, 0x1a, 0x1b, 0x1e, 0x25, 0x28,
		0x2a, 0x2e, 0x2f, 0x34, 0x35, 0x37, 0x41, 0x42, 0x55, 0x56, 0x57, 0x5a, 0x88,
		0x89, 0x8a, 0x8e, 0x8f, 0x90, 0x91, 0x93, 0xa0, 0xa8, 0xaa, 0xae, 0xaf, 0xb7,
	};
	struct tctx *x = *state;
	uint8_t c[16], buf[4096];
	size_t i;

	drain_ua(x, &x->a);
	for (i = 0; i < sizeof(ops); i++) {
		memset(c, 0, sizeof(c));
		c[0] = ops[i];
		memset(buf, 0, sizeof(buf));
		run_cdb(x, &x->a, c, 16, buf, 0);
		if (x->t.c.status == SCSI_STATUS_CHECK_CONDITION)
			assert_int_not_equal(sense_asc(x), 0x2000);
		/* release what RESERVE took */
		if (ops[i] == 0x16 || ops[i] == 0x56) {
			c[0] = 0x17;
			run_cdb(x, &x->a, c, 6, NULL, 0);
		}
	}
}

/*
 * REPORT SUPPORTED OPERATION CODES with reporting options opt for op/sa,
 * into buf (len bytes); returns the SUPPORT field (opt 1, 2) or the list's length (opt 0).
 */
static uint32_t rsoc(struct tctx *x, uint8_t opt, uint8_t op, uint16_t sa, uint8_t *buf,
		     uint16_t len)
{
	uint8_t cdb[12] = { 0xa3, 0x0c, opt, op, (uint8_t)(sa >> 8), (uint8_t)sa, 0, 0,
			    (uint8_t)(len >> 8), (uint8_t)len, 0, 0 };

	memset(buf, 0, len);
	run_cdb(x, &x->a, cdb, sizeof(cdb), buf, len);
	assert_good(x);
	return opt ? buf[1] & 0x07u : be32(buf);
}

/*
 * Every (opcode, service action) REPORT SUPPORTED OPERATION CODES lists is
 * found again when asked for alone (the dispatch lookup: an index by opcode
 * into the table), with its own usage data; an unlisted service action of a
 * listed opcode and an unknown opcode are not supported.
 */
static void test_rsoc_every_command(void **state)
{
	struct tctx *x = *state;
	uint8_t *all = malloc(65535), one[64];
	uint32_t len;

	assert_non_null(all);
	len = rsoc(x, 0, 0, 0, all, 65535);
	for (uint32_t off = 4; off < len + 4; off += 8) {
		const uint8_t *e = &all[off];
		bool sa = e[5] & 0x01;

		assert_int_equal(rsoc(x, sa ? 2 : 1, e[0], be16(&e[2]), one, sizeof(one)), 0x03);
		assert_int_equal(be16(&one[2]), be16(&e[6]));  /* its CDB length */
		assert_int_equal(one[4], e[0]);                 /* its usage data */
		if (sa)
			assert_int_equal(one[5] & 0x1f, e[3]);
	}
	/* PERSISTENT RESERVE IN has no service action 0x1f; 0x02 is no command */
	assert_int_equal(rsoc(x, 2, 0x5e, 0x1f, one, sizeof(one)), 0x01);
	assert_int_equal(rsoc(x, 1, 0x02, 0, one, sizeof(one)), 0x01);
	free(all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sense_builders),
		cmocka_unit_test_setup_teardown(test_unknown_opcode, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_no_lu, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_inquiry_standard, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_inquiry_vpd, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_inquiry_vpd, setup4k, tctx_free),
		cmocka_unit_test(test_vpd_not_thin),
		cmocka_unit_test_setup_teardown(test_read_capacity, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_read_capacity, setup4k, tctx_free),
		cmocka_unit_test(test_read_capacity_huge),
		cmocka_unit_test_setup_teardown(test_report_luns, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_report_luns_during_reload, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_mode_sense, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_mode_sense, setup4k, tctx_free),
		cmocka_unit_test_setup_teardown(test_mode_select_ua, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_ua_rules, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_ua_survives_reconnect, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_rsoc, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_all_opcodes_dispatch, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_rsoc_every_command, setup512, tctx_free),
	};

	gw_log_set_level(GW_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
