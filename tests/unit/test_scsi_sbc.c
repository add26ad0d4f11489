// LINK: gw_scsi gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SBC side of the SCSI layer through an asynchronous in-memory bdev: READ/
 * WRITE in every CDB size, VERIFY, WRITE SAME, UNMAP, COMPARE AND WRITE and
 * its serialization, SYNCHRONIZE CACHE, PRE-FETCH, GET LBA STATUS, errors.
 */
#include "test_scsi_harness.h"
#include "scsi/scsi_bdev_ext.h"

#define MB (1024ull * 1024)

/* ---- GET LBA STATUS hook: a hole at blocks [hole_lo, hole_hi) ---- */
static bool hook_on;
static uint64_t hole_lo, hole_hi;  /* bytes */

int bdev_get_alloc_status(struct bdev *b, uint64_t offset, uint64_t len, bool *mapped,
			  uint64_t *run_len)
{
	uint64_t end = offset + len;

	(void)b;
	if (!hook_on)
		return -EOPNOTSUPP;
	if (offset >= hole_lo && offset < hole_hi) {
		*mapped = false;
		*run_len = (hole_hi < end ? hole_hi : end) - offset;
	} else {
		*mapped = true;
		*run_len = (offset < hole_lo && hole_lo < end ? hole_lo : end) - offset;
	}
	return 0;
}

static int setup_bs(void **state, uint32_t bs, bool thin)
{
	struct tctx *x = malloc(sizeof(*x));
	struct scsi_lu_params p = default_params();

	p.thin = thin;
	tctx_setup(x, 16 * MB, bs, &p);
	drain_ua(x, &x->a);
	drain_ua(x, &x->b);
	*state = x;
	return 0;
}

static int setup512(void **state) { return setup_bs(state, 512, true); }
static int setup4k(void **state) { return setup_bs(state, 4096, true); }
static int setup_thick(void **state) { return setup_bs(state, 512, false); }

static uint32_t BS(const struct tctx *x) { return x->mem->b.info.block_size; }
static uint64_t NB(const struct tctx *x) { return x->mem->b.info.size_bytes / BS(x); }

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* -------------------------------------------------------- READ / WRITE */

static void rw(struct tctx *x, int size, bool write, uint64_t lba, uint32_t n, void *buf,
	       uint32_t len)
{
	uint8_t c[16];

	switch (size) {
	case 6:
		memset(c, 0, sizeof(c));
		c[0] = write ? 0x0a : 0x08;
		c[1] = (uint8_t)(lba >> 16) & 0x1f;
		c[2] = (uint8_t)(lba >> 8);
		c[3] = (uint8_t)lba;
		c[4] = (uint8_t)n;
		break;
	case 10:
		cdb10(c, write ? 0x2a : 0x28, 0, (uint32_t)lba, (uint16_t)n);
		break;
	case 12:
		cdb12(c, write ? 0xaa : 0xa8, 0, (uint32_t)lba, n);
		break;
	default:
		cdb16(c, write ? 0x8a : 0x88, 0, lba, n);
		break;
	}
	run_cdb(x, &x->a, c, (size_t)size, buf, len);
}

static void test_rw_all_sizes(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	static const int sizes[] = { 6, 10, 12, 16 };
	uint8_t *w = malloc(8 * bs), *r = malloc(8 * bs);
	size_t i;

	for (i = 0; i < 4; i++) {
		uint64_t lba = 100 + 10 * i;

		fill(w, 8 * bs, (uint8_t)i);
		rw(x, sizes[i], true, lba, 8, w, 8 * bs);
		assert_good(x);
		assert_int_equal(x->t.c.xfer_len, 8 * bs);
		/* landed exactly at lba */
		assert_memory_equal(x->mem->data + lba * bs, w, 8 * bs);
		memset(r, 0, 8 * bs);
		rw(x, sizes[i], false, lba, 8, r, 8 * bs);
		assert_good(x);
		assert_int_equal(x->t.c.xfer_len, 8 * bs);
		assert_memory_equal(r, w, 8 * bs);
	}
	/* 16-byte CDB with a 64-bit LBA beyond 2^32 is out of range */
	rw(x, 16, false, 1ull << 33, 1, r, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	free(w);
	free(r);
}

static void test_read6_zero_means_256(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t *r = malloc(256 * bs), c[16] = { 0x08, 0, 0, 0, 0 };

	fill(x->mem->data, 256 * bs, 3);
	run_cdb(x, &x->a, c, 6, r, 256 * bs);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 256 * bs);
	assert_memory_equal(r, x->mem->data, 256 * bs);
	free(r);
}

static void test_zero_length_and_range(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t buf[4096];
	uint8_t c[16];

	rw(x, 10, false, 0, 0, NULL, 0);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 0);
	rw(x, 16, true, NB(x), 0, NULL, 0);     /* at the end, zero blocks: fine */
	assert_good(x);
	rw(x, 10, false, NB(x) + 1, 0, NULL, 0);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	rw(x, 10, false, NB(x) - 1, 2, buf, 2 * bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	rw(x, 16, false, UINT64_MAX, 1, buf, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	rw(x, 12, true, NB(x) - 1, 1, buf, bs);
	assert_good(x);
	rw(x, 10, true, 0xffffffffu, 1, buf, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	/* RDPROTECT / WRPROTECT without protection information */
	cdb10(c, 0x28, 0x20, 0, 1);
	run_cdb(x, &x->a, c, 10, buf, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	cdb16(c, 0x8a, 0xe0, 0, 1);
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
}

static void test_fua_and_wce(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t buf[4096] = { 1 }, c[16], sel[64], ms[64];

	cdb10(c, 0x2a, 0x18, 1, 1);             /* DPO + FUA */
	run_cdb(x, &x->a, c, 10, buf, bs);
	assert_good(x);
	assert_int_equal(x->mem->last_flags & BDEV_IO_FUA, BDEV_IO_FUA);
	cdb10(c, 0x2a, 0, 1, 1);
	run_cdb(x, &x->a, c, 10, buf, bs);
	assert_int_equal(x->mem->last_flags & BDEV_IO_FUA, 0);
	/* WRITE AND VERIFY writes through */
	cdb10(c, 0x2e, 0x02, 1, 1);
	run_cdb(x, &x->a, c, 10, buf, bs);
	assert_good(x);
	assert_int_equal(x->mem->last_flags & BDEV_IO_FUA, BDEV_IO_FUA);

	/* WCE off: every write is FUA */
	memset(c, 0, sizeof(c));
	c[0] = 0x1a;
	c[1] = 0x08;
	c[2] = 0x08;
	c[4] = 64;
	run_cdb(x, &x->a, c, 6, ms, 64);
	memset(sel, 0, sizeof(sel));
	memcpy(&sel[4], &ms[4], 20);
	sel[4 + 2] = 0;
	memset(c, 0, sizeof(c));
	c[0] = 0x15;
	c[1] = 0x10;
	c[4] = 24;
	run_cdb(x, &x->a, c, 6, sel, 24);
	assert_good(x);
	cdb10(c, 0x2a, 0, 1, 1);
	run_cdb(x, &x->a, c, 10, buf, bs);
	assert_int_equal(x->mem->last_flags & BDEV_IO_FUA, BDEV_IO_FUA);
}

static void test_short_buffers(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t *buf = calloc(1, 4 * bs);
	uint8_t c[16];

	fill(x->mem->data, 4 * bs, 9);
	/* read: EDTL smaller than the transfer; only buf_len bytes are written */
	memset(buf, 0xcc, 4 * bs);
	cdb10(c, 0x28, 0, 0, 4);
	run_cdb(x, &x->a, c, 10, buf, 200);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 4 * bs);
	assert_memory_equal(buf, x->mem->data, 200);
	assert_int_equal(buf[200], 0xcc);
	/* the whole LU asked for, 200 bytes taken: only the first block is read */
	memset(buf, 0xcc, 4 * bs);
	cdb16(c, 0x88, 0, 0, (uint32_t)NB(x));
	tcmd_init(&x->t, &x->a, x->lu, c, 16, buf, 200);
	x->t.c.data_in = true;
	scsi_cmd_submit(&x->t.c);
	assert_int_equal(x->mem->qn, 1);
	assert_int_equal(x->mem->q[0]->len, bs);
	mem_run(x->mem);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, NB(x) * bs);
	assert_memory_equal(buf, x->mem->data, 200);
	assert_int_equal(buf[200], 0xcc);
	/* whole blocks fit: read straight into the buffer */
	cdb16(c, 0x88, 0, 0, (uint32_t)NB(x));
	tcmd_init(&x->t, &x->a, x->lu, c, 16, buf, 2 * bs);
	x->t.c.data_in = true;
	scsi_cmd_submit(&x->t.c);
	assert_int_equal(x->mem->qn, 1);
	assert_int_equal(x->mem->q[0]->len, 2 * bs);
	mem_run(x->mem);
	assert_good(x);
	assert_memory_equal(buf, x->mem->data, 2 * bs);

	/* write: fewer data-out bytes than the CDB asks for (EDTL < transfer
	 * length): the whole blocks that arrived are written, nothing more */
	fill(x->mem->data, 4 * bs, 9);
	memset(buf, 0xab, 4 * bs);
	cdb10(c, 0x2a, 0, 0, 2);
	run_cdb(x, &x->a, c, 10, buf, bs);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 2 * bs);
	assert_memory_equal(x->mem->data, buf, bs);
	assert_int_not_equal(x->mem->data[bs], 0xab);
	/* less than one block of data: INVALID FIELD IN INFORMATION UNIT */
	cdb10(c, 0x2a, 0, 0, 2);
	run_cdb(x, &x->a, c, 10, buf, 200);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x0e03);
	assert_int_equal(x->t.c.xfer_len, 2 * bs);
	/* no data at all (EDTL 0): GOOD, nothing written, full overflow */
	cdb10(c, 0x2a, 0, 0, 1);
	run_cdb(x, &x->a, c, 10, NULL, 0);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, bs);
	/* more data than needed: fine, only the blocks are written */
	fill(buf, 4 * bs, 1);
	cdb10(c, 0x2a, 0, 0, 1);
	run_cdb(x, &x->a, c, 10, buf, 4 * bs);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, bs);
	assert_memory_equal(x->mem->data, buf, bs);
	free(buf);
}

static void test_readonly(void **state)
{
	struct tctx y;
	struct scsi_lu_params p = default_params();
	uint8_t buf[512] = { 0 }, c[16], ms[64];

	(void)state;
	p.readonly = true;
	tctx_setup(&y, 1 * MB, 512, &p);
	drain_ua(&y, &y.a);
	cdb10(c, 0x2a, 0, 0, 1);
	run_cdb(&y, &y.a, c, 10, buf, 512);
	assert_sense(&y, SCSI_SK_DATA_PROTECT, 0x2700);
	cdb16(c, 0x93, 0x08, 0, 1);             /* WRITE SAME(16) UNMAP, no data */
	run_cdb(&y, &y.a, c, 16, NULL, 0);
	assert_sense(&y, SCSI_SK_DATA_PROTECT, 0x2700);
	cdb10(c, 0x42, 0, 0, 24);
	run_cdb(&y, &y.a, c, 10, buf, 24);
	assert_sense(&y, SCSI_SK_DATA_PROTECT, 0x2700);
	cdb10(c, 0x28, 0, 0, 1);
	run_cdb(&y, &y.a, c, 10, buf, 512);
	assert_good(&y);
	memset(c, 0, sizeof(c));
	c[0] = 0x1a;
	c[2] = 0x3f;
	c[4] = 64;
	run_cdb(&y, &y.a, c, 6, ms, 64);
	assert_good(&y);
	assert_int_equal(ms[2] & 0x80, 0x80);
	tctx_teardown(&y);
}

static void test_io_errors(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t buf[4096] = { 0 };

	x->mem->fail_err = -EIO;
	rw(x, 10, false, 0, 1, buf, bs);
	assert_sense(x, SCSI_SK_MEDIUM_ERROR, 0x1100);
	x->mem->fail_err = -EIO;
	rw(x, 10, true, 0, 1, buf, bs);
	assert_sense(x, SCSI_SK_MEDIUM_ERROR, 0x0c00);
	x->mem->fail_err = -ENOSPC;
	rw(x, 16, true, 0, 1, buf, bs);
	assert_sense(x, SCSI_SK_DATA_PROTECT, 0x2707);
	/* a refused submission (here: out of the bdev's range) is an error too */
	x->mem->b.info.size_bytes -= bs;
	rw(x, 10, true, NB(x), 1, buf, bs);
	x->mem->b.info.size_bytes += bs;
	assert_sense(x, SCSI_SK_MEDIUM_ERROR, 0x0c00);
	/* the gate was released: the next write works */
	rw(x, 10, true, 0, 1, buf, bs);
	assert_good(x);
}

/* ----------------------------------------------------------------- VERIFY */

static void test_verify(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t *buf = malloc(8 * bs), c[16];

	fill(x->mem->data + 10 * bs, 8 * bs, 5);
	memcpy(buf, x->mem->data + 10 * bs, 8 * bs);
	cdb10(c, 0x2f, 0x02, 10, 8);            /* BYTCHK=1 */
	run_cdb(x, &x->a, c, 10, buf, 8 * bs);
	assert_good(x);
	buf[3 * bs + 17] ^= 0x55;
	run_cdb(x, &x->a, c, 10, buf, 8 * bs);
	assert_sense(x, SCSI_SK_MISCOMPARE, 0x1d00);
	assert_int_equal(x->t.c.sense[0] & 0x80, 0x80);
	assert_int_equal(be32(&x->t.c.sense[3]), 3 * bs + 17);
	/* BYTCHK=0 only checks the range */
	cdb12(c, 0xaf, 0, 10, 8);
	run_cdb(x, &x->a, c, 12, NULL, 0);
	assert_good(x);
	cdb16(c, 0x8f, 0x02, NB(x) - 1, 2);
	run_cdb(x, &x->a, c, 16, buf, 2 * bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	cdb16(c, 0x8f, 0x20, 0, 1);             /* VRPROTECT */
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	/* BYTCHK=11b: one block compared against every block */
	memset(x->mem->data + 20 * bs, 0x3c, 4 * bs);
	memset(buf, 0x3c, bs);
	cdb16(c, 0x8f, 0x06, 20, 4);
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_good(x);
	/* the whole LU against one block: read 1 MiB at a time, not all at once */
	memset(x->mem->data, 0x3c, NB(x) * bs);
	cdb16(c, 0x8f, 0x06, 0, (uint32_t)NB(x));
	tcmd_init(&x->t, &x->a, x->lu, c, 16, buf, bs);
	scsi_cmd_submit(&x->t.c);
	assert_int_equal(x->mem->qn, 1);
	assert_int_equal(x->mem->q[0]->len, 1 * MB);
	mem_run(x->mem);
	assert_int_equal(x->t.ndone, 1);
	assert_good(x);
	/* a miscompare in the third chunk: its offset in the whole range */
	x->mem->data[2 * MB + 5 * bs + 7] = 0;
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_sense(x, SCSI_SK_MISCOMPARE, 0x1d00);
	assert_int_equal(be32(&x->t.c.sense[3]), 2 * MB + 5 * bs + 7);
	free(buf);
}

/* ------------------------------------------------------------- WRITE SAME */

static void test_write_same(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t *blk = malloc(bs), *exp = malloc(bs), c[16];
	uint32_t i, n = (uint32_t)(3 * MB / bs);  /* more than one bounce chunk */

	fill(blk, bs, 11);
	cdb16(c, 0x93, 0, 5, n);
	run_cdb(x, &x->a, c, 16, blk, bs);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, bs);
	for (i = 0; i < n; i++)
		assert_memory_equal(x->mem->data + (5 + i) * (uint64_t)bs, blk, bs);
	memset(exp, 0, bs);
	assert_memory_equal(x->mem->data + 4 * bs, exp, bs);
	assert_memory_equal(x->mem->data + (5 + n) * (uint64_t)bs, exp, bs);

	/* zero pattern uses WRITE ZEROES ... */
	memset(blk, 0, bs);
	cdb10(c, 0x41, 0, 5, 10);
	run_cdb(x, &x->a, c, 10, blk, bs);
	assert_good(x);
	assert_int_equal(x->mem->nzeroes, 1);
	assert_memory_equal(x->mem->data + 5 * bs, blk, bs);
	/* ... or falls back to writes */
	x->mem->no_write_zeroes = true;
	memset(x->mem->data + 5 * bs, 0xff, 10 * bs);
	run_cdb(x, &x->a, c, 10, blk, bs);
	assert_good(x);
	assert_memory_equal(x->mem->data + 14 * bs, blk, bs);

	/* UNMAP bit deallocates (reads back as zeroes: LBPRZ) */
	memset(x->mem->data + 5 * bs, 0xff, 10 * bs);
	fill(blk, bs, 1);
	cdb10(c, 0x41, 0x08, 5, 10);
	run_cdb(x, &x->a, c, 10, blk, bs);
	assert_good(x);
	assert_int_equal(x->mem->nunmaps, 1);
	assert_int_equal(x->mem->data[5 * bs], 0);
	/* ... also without data-out */
	cdb16(c, 0x93, 0x08, 5, 10);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_good(x);

	/* zero blocks: WSNZ=1, but the LBA is checked first */
	cdb10(c, 0x41, 0, 0, 0);
	run_cdb(x, &x->a, c, 10, blk, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	cdb10(c, 0x41, 0, (uint32_t)NB(x) + 1, 0);
	run_cdb(x, &x->a, c, 10, blk, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	cdb16(c, 0x93, 0, NB(x) - 1, 2);
	run_cdb(x, &x->a, c, 16, blk, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	/* data-out must be exactly one block */
	cdb10(c, 0x41, 0x08, 0, 1);
	run_cdb(x, &x->a, c, 10, blk, bs / 2);
	assert_int_equal(x->t.c.status, SCSI_STATUS_CHECK_CONDITION);
	run_cdb(x, &x->a, c, 10, exp, bs); /* exactly one block: ok */
	assert_good(x);
	{
		uint8_t *big = calloc(2, bs);

		run_cdb(x, &x->a, c, 10, big, 2 * bs);
		assert_int_equal(x->t.c.status, SCSI_STATUS_CHECK_CONDITION);
		free(big);
	}
	/* ANCHOR is not supported */
	cdb16(c, 0x93, 0x18, 0, 1);
	run_cdb(x, &x->a, c, 16, blk, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	cdb16(c, 0x93, 0x10, 0, 1);
	run_cdb(x, &x->a, c, 16, blk, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	/* NDOB writes zeroes without data */
	memset(x->mem->data, 0xff, bs);
	cdb16(c, 0x93, 0x01, 0, 1);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 0);
	assert_int_equal(x->mem->data[0], 0);
	free(blk);
	free(exp);
}

static void test_write_same_thick(void **state)
{
	struct tctx *x = *state;
	uint8_t blk[512] = { 0 }, c[16];

	/* UNMAP bit on a fully provisioned LU: invalid (LBPWS=0) */
	cdb10(c, 0x41, 0x08, 0, 1);
	run_cdb(x, &x->a, c, 10, blk, 512);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	cdb10(c, 0x41, 0, 0, 1);
	run_cdb(x, &x->a, c, 10, blk, 512);
	assert_good(x);
}

/* ------------------------------------------------------------------ UNMAP */

static uint32_t unmap_list(uint8_t *p, const uint64_t *lba, const uint32_t *n, unsigned int cnt)
{
	unsigned int i;

	memset(p, 0, 8 + 16 * cnt);
	p[0] = (uint8_t)((6 + 16 * cnt) >> 8);
	p[1] = (uint8_t)(6 + 16 * cnt);
	p[2] = (uint8_t)((16 * cnt) >> 8);
	p[3] = (uint8_t)(16 * cnt);
	for (i = 0; i < cnt; i++) {
		uint8_t *d = &p[8 + 16 * i];
		int k;

		for (k = 0; k < 8; k++)
			d[k] = (uint8_t)(lba[i] >> (56 - 8 * k));
		d[8] = (uint8_t)(n[i] >> 24);
		d[9] = (uint8_t)(n[i] >> 16);
		d[10] = (uint8_t)(n[i] >> 8);
		d[11] = (uint8_t)n[i];
	}
	return 8 + 16 * cnt;
}

static void test_unmap(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t p[8 + 16 * 300], c[16];
	uint64_t lba[300];
	uint32_t n[300], len;
	unsigned int i;

	memset(x->mem->data, 0xee, 64 * (size_t)bs);
	lba[0] = 2; n[0] = 3;
	lba[1] = 10; n[1] = 0;
	lba[2] = 20; n[2] = 1;
	len = unmap_list(p, lba, n, 3);
	cdb10(c, 0x42, 0, 0, (uint16_t)len);
	run_cdb(x, &x->a, c, 10, p, len);
	assert_good(x);
	assert_int_equal(x->mem->nunmaps, 2);
	assert_int_equal(x->mem->data[2 * bs], 0);
	assert_int_equal(x->mem->data[5 * bs - 1], 0);
	assert_int_equal(x->mem->data[5 * bs], 0xee);
	assert_int_equal(x->mem->data[20 * bs], 0);

	/* no parameter list: nothing to do */
	cdb10(c, 0x42, 0, 0, 0);
	run_cdb(x, &x->a, c, 10, NULL, 0);
	assert_good(x);
	/* empty descriptor list */
	len = unmap_list(p, lba, n, 0);
	cdb10(c, 0x42, 0, 0, (uint16_t)len);
	run_cdb(x, &x->a, c, 10, p, len);
	assert_good(x);
	/* 256 zero-length descriptors, one at the end of the LU */
	for (i = 0; i < 256; i++) {
		lba[i] = i / 2;
		n[i] = 0;
	}
	lba[255] = NB(x);
	len = unmap_list(p, lba, n, 256);
	cdb10(c, 0x42, 0, 0, (uint16_t)len);
	run_cdb(x, &x->a, c, 10, p, len);
	assert_good(x);

	/* parameter list shorter than the header */
	cdb10(c, 0x42, 0, 0, 4);
	run_cdb(x, &x->a, c, 10, p, 4);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x1a00);
	/* descriptor length beyond the parameter list */
	lba[0] = 0; n[0] = 1;
	len = unmap_list(p, lba, n, 2);
	cdb10(c, 0x42, 0, 0, 24);
	run_cdb(x, &x->a, c, 10, p, 24);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
	/* out of range descriptor: nothing is unmapped */
	memset(x->mem->data, 0xee, bs);
	lba[0] = 0; n[0] = 1;
	lba[1] = NB(x) - 1; n[1] = 2;
	len = unmap_list(p, lba, n, 2);
	cdb10(c, 0x42, 0, 0, (uint16_t)len);
	run_cdb(x, &x->a, c, 10, p, len);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	assert_int_equal(x->mem->data[0], 0xee);
	/* too many LBAs */
	lba[0] = 0; n[0] = 0x100001;
	len = unmap_list(p, lba, n, 1);
	cdb10(c, 0x42, 0, 0, (uint16_t)len);
	run_cdb(x, &x->a, c, 10, p, len);
	assert_true(x->t.c.status == SCSI_STATUS_CHECK_CONDITION);
	/* ANCHOR */
	lba[0] = 0; n[0] = 1;
	len = unmap_list(p, lba, n, 1);
	cdb10(c, 0x42, 0x01, 0, (uint16_t)len);
	run_cdb(x, &x->a, c, 10, p, len);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
}

/* ------------------------------------------------------ COMPARE AND WRITE */

static void caw_cdb(uint8_t *c, uint64_t lba, uint8_t n, uint8_t b1)
{
	cdb16(c, 0x89, b1, lba, 0);
	c[13] = n;
}

static void test_caw(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t *buf = malloc(2 * 4 * (size_t)bs), c[16];

	memset(x->mem->data + 8 * bs, 'A', 4 * (size_t)bs);
	memset(buf, 'A', 4 * (size_t)bs);
	memset(buf + 4 * bs, 'B', 4 * (size_t)bs);
	caw_cdb(c, 8, 4, 0);
	run_cdb(x, &x->a, c, 16, buf, 8 * bs);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 8 * bs);
	assert_int_equal(x->mem->data[8 * bs], 'B');
	assert_int_equal(x->mem->data[12 * bs - 1], 'B');

	/* miscompare: nothing written, INFORMATION = offset of first difference */
	memset(buf + 4 * bs, 'C', 4 * (size_t)bs);
	buf[4 * bs - 27] = 'X';                 /* buf still says 'A', disk is 'B' */
	run_cdb(x, &x->a, c, 16, buf, 8 * bs);
	assert_sense(x, SCSI_SK_MISCOMPARE, 0x1d00);
	assert_int_equal(be32(&x->t.c.sense[3]), 0);
	assert_int_equal(x->mem->data[8 * bs], 'B');
	memset(buf, 'B', 4 * (size_t)bs);
	buf[4 * bs - 27] = 'X';
	run_cdb(x, &x->a, c, 16, buf, 8 * bs);
	assert_sense(x, SCSI_SK_MISCOMPARE, 0x1d00);
	assert_int_equal(be32(&x->t.c.sense[3]), 4 * bs - 27);
	assert_int_equal(x->mem->data[8 * bs], 'B');

	/* wrong data-out sizes */
	caw_cdb(c, 8, 1, 0);
	run_cdb(x, &x->a, c, 16, buf, 4 * bs);
	assert_int_equal(x->t.c.status, SCSI_STATUS_CHECK_CONDITION);
	caw_cdb(c, 8, 3, 0);
	run_cdb(x, &x->a, c, 16, buf, 4 * bs);
	assert_int_equal(x->t.c.status, SCSI_STATUS_CHECK_CONDITION);
	/* 256 blocks encodes as 0: data present, so the length field is wrong */
	caw_cdb(c, 8, 0, 0);
	run_cdb(x, &x->a, c, 16, buf, 2 * bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	caw_cdb(c, 8, 0, 0);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_good(x);
	/* out of range */
	caw_cdb(c, NB(x) - 1, 2, 0);
	run_cdb(x, &x->a, c, 16, buf, 4 * bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	/* FUA honoured */
	memcpy(buf, x->mem->data + 8 * bs, bs);
	caw_cdb(c, 8, 1, 0x08);
	run_cdb(x, &x->a, c, 16, buf, 2 * bs);
	assert_good(x);
	assert_int_equal(x->mem->last_flags & BDEV_IO_FUA, BDEV_IO_FUA);
	free(buf);
}

/* COMPARE AND WRITE waits for earlier writes; later writes wait for it. */
static void test_caw_serialized(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	struct tcmd w1, caw, w2;
	uint8_t c[16], *d1 = malloc(bs), *dc = malloc(2 * (size_t)bs), *d2 = malloc(bs);

	memset(x->mem->data, 'A', bs);
	memset(d1, 'B', bs);                    /* w1: A -> B */
	memset(dc, 'B', bs);                    /* caw: expects B, writes C */
	memset(dc + bs, 'C', bs);
	memset(d2, 'D', bs);                    /* w2: C -> D */

	cdb10(c, 0x2a, 0, 0, 1);
	tcmd_init(&w1, &x->a, x->lu, c, 10, d1, bs);
	scsi_cmd_submit(&w1.c);
	caw_cdb(c, 0, 1, 0);
	tcmd_init(&caw, &x->b, x->lu, c, 16, dc, 2 * bs);
	scsi_cmd_submit(&caw.c);
	cdb10(c, 0x2a, 0, 0, 1);
	tcmd_init(&w2, &x->a, x->lu, c, 10, d2, bs);
	scsi_cmd_submit(&w2.c);

	/* only w1 reached the bdev */
	assert_int_equal(x->mem->qn, 1);
	mem_run(x->mem);
	assert_int_equal(w1.ndone, 1);
	assert_int_equal(caw.ndone, 1);
	assert_int_equal(w2.ndone, 1);
	assert_int_equal(w1.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(caw.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(w2.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(x->mem->data[0], 'D');

	/* two COMPARE AND WRITEs on the same data: the second one miscompares */
	memset(x->mem->data, 'A', bs);
	memset(dc, 'A', bs);
	memset(dc + bs, 'E', bs);
	caw_cdb(c, 0, 1, 0);
	tcmd_init(&w1, &x->a, x->lu, c, 16, dc, 2 * bs);
	tcmd_init(&w2, &x->b, x->lu, c, 16, dc, 2 * bs);
	scsi_cmd_submit(&w1.c);
	scsi_cmd_submit(&w2.c);
	assert_int_equal(x->mem->qn, 1);
	mem_run(x->mem);
	assert_int_equal(w1.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(w2.c.status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(w2.c.sense[2] & 0x0f, SCSI_SK_MISCOMPARE);
	free(d1);
	free(dc);
	free(d2);
}

/* ---------------------------------------------------------------- ORWRITE */

static void test_orwrite(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t *buf = malloc(4 * (size_t)bs), c[16];
	uint32_t i;

	memset(x->mem->data + 10 * bs, 0x0f, 4 * (size_t)bs);
	memset(buf, 0xa0, 4 * (size_t)bs);
	buf[5] = 0x05;
	cdb16(c, 0x8b, 0, 10, 4);
	run_cdb(x, &x->a, c, 16, buf, 4 * bs);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 4 * bs);
	for (i = 0; i < 4 * bs; i++)
		assert_int_equal(x->mem->data[10 * bs + i], i == 5 ? 0x0f : 0xaf);
	assert_int_equal(x->mem->data[14 * bs], 0);     /* nothing beyond */

	/* ORPROTECT: no protection information */
	for (i = 1; i < 8; i++) {
		cdb16(c, 0x8b, (uint8_t)(i << 5), 10, 1);
		run_cdb(x, &x->a, c, 16, buf, bs);
		assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
		assert_int_equal(x->t.c.sense[15], 0x80 | 0x40 | 0x08 | 7);
	}
	/* range, zero blocks */
	cdb16(c, 0x8b, 0, NB(x) - 1, 2);
	run_cdb(x, &x->a, c, 16, buf, 2 * bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	cdb16(c, 0x8b, 0, NB(x) + 1, 0);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	cdb16(c, 0x8b, 0, 0, 0);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_good(x);
	/* short data-out: the whole blocks that arrived; less than one: 0E/03 */
	memset(x->mem->data + 20 * bs, 0, 2 * (size_t)bs);
	cdb16(c, 0x8b, 0, 20, 2);
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_good(x);
	assert_int_equal(x->mem->data[20 * bs], 0xa0);
	assert_int_equal(x->mem->data[21 * bs], 0);
	run_cdb(x, &x->a, c, 16, buf, bs / 2);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x0e03);
	/* FUA honoured */
	cdb16(c, 0x8b, 0x08, 20, 1);
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_good(x);
	assert_int_equal(x->mem->last_flags & BDEV_IO_FUA, BDEV_IO_FUA);
	/* read error: nothing written, MEDIUM ERROR */
	x->mem->fail_err = -EIO;
	x->mem->fail_op = BDEV_OP_READ;
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_sense(x, SCSI_SK_MEDIUM_ERROR, 0x1100);
	x->mem->fail_op = -1;
	free(buf);
}

/* ORWRITE passes the gate like COMPARE AND WRITE: a write queued behind it
 * lands after the read-modify-write, not in the middle of it. */
static void test_orwrite_serialized(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	struct tcmd w1, orw, w2;
	uint8_t c[16], *d1 = malloc(bs), *dor = malloc(bs), *d2 = malloc(bs);

	memset(x->mem->data, 0x00, bs);
	memset(d1, 0x01, bs);
	memset(dor, 0x10, bs);
	memset(d2, 0x80, bs);
	cdb10(c, 0x2a, 0, 0, 1);
	tcmd_init(&w1, &x->a, x->lu, c, 10, d1, bs);
	scsi_cmd_submit(&w1.c);
	cdb16(c, 0x8b, 0, 0, 1);
	tcmd_init(&orw, &x->b, x->lu, c, 16, dor, bs);
	scsi_cmd_submit(&orw.c);
	cdb10(c, 0x2a, 0, 0, 1);
	tcmd_init(&w2, &x->a, x->lu, c, 10, d2, bs);
	scsi_cmd_submit(&w2.c);
	assert_int_equal(x->mem->qn, 1);        /* only w1 */
	mem_run_one(x->mem);                    /* w1 done: ORWRITE reads */
	assert_int_equal(x->mem->qn, 1);
	mem_run_one(x->mem);                    /* read done: ORWRITE writes, w2 still waits */
	assert_int_equal(x->mem->qn, 1);
	assert_int_equal(w2.ndone, 0);
	mem_run(x->mem);
	assert_int_equal(orw.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(w2.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(x->mem->data[0], 0x80);
	assert_int_equal(x->mem->nwrites >= 3, 1);
	free(d1);
	free(dor);
	free(d2);
}

/* ----------------------------------------------------------- WRITE ATOMIC */

static void wa_cdb(uint8_t *c, uint8_t b1, uint64_t lba, uint16_t n)
{
	cdb16(c, 0x9c, b1, lba, 0);
	c[12] = (uint8_t)(n >> 8);
	c[13] = (uint8_t)n;
}

static void test_write_atomic(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x), max = (1024 * 1024) / bs, i;
	uint8_t *buf = calloc(max + 1, bs), c[16];

	memset(buf, 0x5a, 3 * (size_t)bs);
	wa_cdb(c, 0, 7, 3);
	run_cdb(x, &x->a, c, 16, buf, 3 * bs);
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 3 * bs);
	assert_memory_equal(x->mem->data + 7 * bs, buf, 3 * (size_t)bs);
	/* the maximum, then one block more */
	wa_cdb(c, 0, 0, (uint16_t)max);
	run_cdb(x, &x->a, c, 16, buf, max * bs);
	assert_good(x);
	wa_cdb(c, 0, 0, (uint16_t)(max + 1));
	run_cdb(x, &x->a, c, 16, buf, (max + 1) * bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	assert_int_equal(be16(&x->t.c.sense[16]), 12);
	/* WRPROTECT, ATOMIC BOUNDARY */
	for (i = 1; i < 8; i++) {
		wa_cdb(c, (uint8_t)(i << 5), 0, 1);
		run_cdb(x, &x->a, c, 16, buf, bs);
		assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	}
	wa_cdb(c, 0, 0, 1);
	c[11] = 1;
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2400);
	assert_int_equal(be16(&x->t.c.sense[16]), 10);
	/* range and zero blocks */
	wa_cdb(c, 0, NB(x) - 1, 2);
	run_cdb(x, &x->a, c, 16, buf, 2 * bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	wa_cdb(c, 0, 0x8000000000000000ull, 1);
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	wa_cdb(c, 0, NB(x) + 1, 0);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	wa_cdb(c, 0, 0, 0);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_good(x);
	/* short data-out: all or nothing */
	memset(x->mem->data + 40 * bs, 0, 2 * (size_t)bs);
	wa_cdb(c, 0, 40, 2);
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x0e03);
	assert_int_equal(x->mem->data[40 * bs], 0);
	/* DPO+FUA accepted, FUA honoured */
	wa_cdb(c, 0x18, 40, 1);
	run_cdb(x, &x->a, c, 16, buf, bs);
	assert_good(x);
	assert_int_equal(x->mem->last_flags & BDEV_IO_FUA, BDEV_IO_FUA);
	free(buf);
}

static void test_write_atomic_readonly(void **state)
{
	struct tctx y;
	struct scsi_lu_params p = default_params();
	uint8_t c[16], buf[512] = { 0 };

	(void)state;
	p.readonly = true;
	tctx_setup(&y, 1 * MB, 512, &p);
	drain_ua(&y, &y.a);
	wa_cdb(c, 0, 0, 1);
	run_cdb(&y, &y.a, c, 16, buf, 512);
	assert_sense(&y, SCSI_SK_DATA_PROTECT, 0x2700);
	cdb16(c, 0x8b, 0, 0, 1);
	run_cdb(&y, &y.a, c, 16, buf, 512);
	assert_sense(&y, SCSI_SK_DATA_PROTECT, 0x2700);
	tctx_teardown(&y);
}

/*
 * No command observes a WRITE ATOMIC half done: it waits for the reads and
 * writes in flight before it, and reads or writes arriving while it waits or
 * runs start only after it completed.
 */
static void test_write_atomic_isolated(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	struct tcmd r1, wa, r2, w2, caw;
	uint8_t c[16], *rb1 = malloc(4 * (size_t)bs), *rb2 = malloc(4 * (size_t)bs);
	uint8_t *da = malloc(4 * (size_t)bs), *dw = malloc(bs), *dc = malloc(2 * (size_t)bs);

	memset(x->mem->data, 'A', 4 * (size_t)bs);
	memset(da, 'B', 4 * (size_t)bs);
	memset(dw, 'C', bs);
	cdb10(c, 0x28, 0, 0, 4);
	tcmd_init(&r1, &x->a, x->lu, c, 10, rb1, 4 * bs);
	scsi_cmd_submit(&r1.c);
	assert_int_equal(x->mem->qn, 1);        /* the read is in flight */
	wa_cdb(c, 0, 0, 4);
	tcmd_init(&wa, &x->b, x->lu, c, 16, da, 4 * bs);
	scsi_cmd_submit(&wa.c);
	cdb10(c, 0x28, 0, 0, 4);
	tcmd_init(&r2, &x->a, x->lu, c, 10, rb2, 4 * bs);
	scsi_cmd_submit(&r2.c);
	cdb10(c, 0x2a, 0, 3, 1);
	tcmd_init(&w2, &x->a, x->lu, c, 10, dw, bs);
	scsi_cmd_submit(&w2.c);
	assert_int_equal(x->mem->qn, 1);        /* the WRITE ATOMIC waits for r1 */

	mem_run_one(x->mem);                    /* r1 done: the WRITE ATOMIC starts alone */
	assert_int_equal(r1.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(rb1[0], 'A');
	assert_int_equal(x->mem->qn, 1);
	assert_int_equal(x->mem->q[0]->op, BDEV_OP_WRITE);
	assert_int_equal(r2.ndone + w2.ndone, 0);

	mem_run_one(x->mem);                    /* WRITE ATOMIC done: r2 and w2 go */
	assert_int_equal(wa.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(x->mem->qn, 2);
	mem_run(x->mem);
	assert_int_equal(r2.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(rb2[0], 'B');
	assert_int_equal(rb2[4 * bs - 1], 'B');
	assert_int_equal(w2.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(x->mem->data[3 * bs], 'C');

	/* a COMPARE AND WRITE admitted first delays it; reads behind it wait too */
	memcpy(dc, x->mem->data, bs);
	memset(dc + bs, 'D', bs);
	caw_cdb(c, 0, 1, 0);
	tcmd_init(&caw, &x->a, x->lu, c, 16, dc, 2 * bs);
	scsi_cmd_submit(&caw.c);
	wa_cdb(c, 0, 0, 4);
	tcmd_init(&wa, &x->b, x->lu, c, 16, da, 4 * bs);
	scsi_cmd_submit(&wa.c);
	cdb10(c, 0x28, 0, 0, 4);
	tcmd_init(&r2, &x->a, x->lu, c, 10, rb2, 4 * bs);
	scsi_cmd_submit(&r2.c);
	assert_int_equal(x->mem->qn, 1);        /* the COMPARE AND WRITE's read */
	mem_run(x->mem);
	assert_int_equal(caw.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(wa.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(r2.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(rb2[0], 'B');          /* after the WRITE ATOMIC */

	/* VERIFY is a read too */
	cdb10(c, 0x28, 0, 0, 1);
	tcmd_init(&r1, &x->a, x->lu, c, 10, rb1, bs);
	scsi_cmd_submit(&r1.c);
	wa_cdb(c, 0, 0, 1);
	memset(da, 'E', bs);
	tcmd_init(&wa, &x->b, x->lu, c, 16, da, bs);
	scsi_cmd_submit(&wa.c);
	cdb10(c, 0x2f, 0x02, 0, 1);
	tcmd_init(&r2, &x->a, x->lu, c, 10, da, bs);
	scsi_cmd_submit(&r2.c);
	assert_int_equal(x->mem->qn, 1);
	mem_run(x->mem);
	assert_int_equal(r2.c.status, SCSI_STATUS_GOOD);        /* compared 'E' with 'E' */
	free(rb1);
	free(rb2);
	free(da);
	free(dw);
	free(dc);
}

/* ---------------------------------------- SYNC CACHE, PRE-FETCH, LBA STATUS */

static void test_sync_prefetch(void **state)
{
	struct tctx *x = *state;
	uint8_t c[16];

	cdb10(c, 0x35, 0, 0, 0);
	run_cdb(x, &x->a, c, 10, NULL, 0);
	assert_good(x);
	assert_int_equal(x->mem->nflush, 1);
	cdb16(c, 0x91, 0x02, 0, 0);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_good(x);
	assert_int_equal(x->mem->nflush, 2);
	cdb16(c, 0x91, 0, NB(x), 1);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	x->mem->fail_err = -EIO;
	cdb10(c, 0x35, 0, 0, 0);
	run_cdb(x, &x->a, c, 10, NULL, 0);
	assert_sense(x, SCSI_SK_MEDIUM_ERROR, 0x0c00);

	cdb10(c, 0x34, 0x02, 0, 1);
	c[6] = 3;                               /* GROUP NUMBER */
	run_cdb(x, &x->a, c, 10, NULL, 0);
	assert_good(x);
	cdb16(c, 0x90, 0, NB(x) - 1, 1);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_good(x);
	cdb16(c, 0x90, 0, NB(x), 1);
	run_cdb(x, &x->a, c, 16, NULL, 0);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
}

/*
 * Without the W bit the initiator sent nothing: the buffer (another
 * command's data in the datamover's pool) is neither written nor read as a
 * parameter list.
 */
static void test_no_w_bit(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t c[16], buf[2 * 4096], out[4096];
	unsigned int writes = x->mem->nwrites;

	memset(buf, 0x5a, sizeof(buf));
	cdb10(c, 0x2a, 0, 3, 1);
	tcmd_init(&x->t, &x->a, x->lu, c, 10, buf, bs);
	x->t.c.data_in = true;
	x->t.c.data_out = false;
	scsi_cmd_submit(&x->t.c);
	mem_run(x->mem);
	assert_int_equal(x->t.ndone, 1);
	assert_good(x);                         /* nothing arrived: nothing written */
	assert_int_equal(x->t.c.xfer_len, bs);  /* the core reports the overflow */
	assert_int_equal(x->mem->nwrites, writes);
	cdb10(c, 0x28, 0, 3, 1);
	assert_int_equal(run_cdb(x, &x->a, c, 10, out, bs), SCSI_STATUS_GOOD);
	assert_int_equal(out[0], 0);

	/* COMPARE AND WRITE: the data-out must be there */
	cdb16(c, 0x89, 0, 3, 0);
	c[13] = 1;
	tcmd_init(&x->t, &x->a, x->lu, c, 16, buf, 2 * bs);
	x->t.c.data_out = false;
	scsi_cmd_submit(&x->t.c);
	mem_run(x->mem);
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x0e03);
	assert_int_equal(x->mem->nwrites, writes);
}

static void glbas_cdb(uint8_t *c, uint64_t lba, uint32_t alloc)
{
	cdb16(c, 0x9e, 0x12, lba, alloc);
}

static void test_get_lba_status(void **state)
{
	struct tctx *x = *state;
	uint32_t bs = BS(x);
	uint8_t c[16], buf[256];

	hook_on = false;
	glbas_cdb(c, 5, 24);
	run_cdb(x, &x->a, c, 16, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 24);
	assert_int_equal(be32(buf), 20);
	assert_int_equal(be64(&buf[8]), 5);
	assert_int_equal(be32(&buf[16]), NB(x) - 5);
	assert_int_equal(buf[20] & 0x0f, 0);    /* mapped */

	glbas_cdb(c, NB(x) - 1, 24);
	run_cdb(x, &x->a, c, 16, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(be32(&buf[16]), 1);
	/* an allocation length near 4 GiB still gets its descriptor (it wrapped to none) */
	glbas_cdb(c, 5, UINT32_MAX);
	run_cdb(x, &x->a, c, 16, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(x->t.c.xfer_len, 24);
	assert_int_equal(be32(buf), 20);
	assert_int_equal(be64(&buf[8]), 5);
	glbas_cdb(c, NB(x), 24);
	run_cdb(x, &x->a, c, 16, buf, sizeof(buf));
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);
	glbas_cdb(c, UINT64_MAX, 24);
	run_cdb(x, &x->a, c, 16, buf, sizeof(buf));
	assert_sense(x, SCSI_SK_ILLEGAL_REQUEST, 0x2100);

	/* with the backstore hook: mapped, hole, mapped */
	hook_on = true;
	hole_lo = 10ull * bs;
	hole_hi = 30ull * bs;
	glbas_cdb(c, 4, 200);
	run_cdb(x, &x->a, c, 16, buf, sizeof(buf));
	assert_good(x);
	assert_int_equal(be32(buf), 4 + 3 * 16);
	assert_int_equal(be64(&buf[8]), 4);
	assert_int_equal(be32(&buf[16]), 6);
	assert_int_equal(buf[20], 0);
	assert_int_equal(be64(&buf[24]), 10);
	assert_int_equal(be32(&buf[32]), 20);
	assert_int_equal(buf[36], 1);           /* deallocated */
	assert_int_equal(be64(&buf[40]), 30);
	assert_int_equal(be32(&buf[48]), NB(x) - 30);
	assert_int_equal(buf[52], 0);
	/* the first descriptor starts at the requested LBA */
	glbas_cdb(c, 15, 24);
	run_cdb(x, &x->a, c, 16, buf, sizeof(buf));
	assert_int_equal(be64(&buf[8]), 15);
	assert_int_equal(be32(&buf[16]), 15);
	assert_int_equal(buf[20], 1);
	hook_on = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rw_all_sizes, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_rw_all_sizes, setup4k, tctx_free),
		cmocka_unit_test_setup_teardown(test_read6_zero_means_256, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_read6_zero_means_256, setup4k, tctx_free),
		cmocka_unit_test_setup_teardown(test_zero_length_and_range, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_zero_length_and_range, setup4k, tctx_free),
		cmocka_unit_test_setup_teardown(test_fua_and_wce, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_short_buffers, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_short_buffers, setup4k, tctx_free),
		cmocka_unit_test(test_readonly),
		cmocka_unit_test_setup_teardown(test_io_errors, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_verify, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_verify, setup4k, tctx_free),
		cmocka_unit_test_setup_teardown(test_write_same, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_write_same, setup4k, tctx_free),
		cmocka_unit_test_setup_teardown(test_write_same_thick, setup_thick, tctx_free),
		cmocka_unit_test_setup_teardown(test_unmap, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_unmap, setup4k, tctx_free),
		cmocka_unit_test_setup_teardown(test_caw, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_caw, setup4k, tctx_free),
		cmocka_unit_test_setup_teardown(test_caw_serialized, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_orwrite, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_orwrite, setup4k, tctx_free),
		cmocka_unit_test_setup_teardown(test_orwrite_serialized, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_write_atomic, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_write_atomic, setup4k, tctx_free),
		cmocka_unit_test(test_write_atomic_readonly),
		cmocka_unit_test_setup_teardown(test_write_atomic_isolated, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_sync_prefetch, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_no_w_bit, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_get_lba_status, setup512, tctx_free),
		cmocka_unit_test_setup_teardown(test_get_lba_status, setup4k, tctx_free),
	};

	gw_log_set_level(GW_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
