/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the test_scsi_*.c programs: an in-memory bdev whose I/O
 * completes asynchronously (queued until mem_run() is called, as a reactor
 * would), two I_T nexuses, and helpers to run one CDB to completion.
 */
#ifndef TEST_SCSI_HARNESS_H
#define TEST_SCSI_HARNESS_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "scsi/scsi.h"
#include "common/log.h"

#define MEM_QMAX 4096

struct membdev {
	struct bdev b;
	uint8_t *data;
	struct bdev_io *q[MEM_QMAX];
	unsigned int qn;
	int fail_err;           /* next completed I/O fails with this (then 0) */
	int fail_op;            /* -1: any op */
	bool no_write_zeroes;
	unsigned int nwrites, nunmaps, nflush, nzeroes;
	uint32_t last_flags;
};

static int mem_submit(struct bdev *b, struct bdev_io *io)
{
	struct membdev *m = (struct membdev *)(void *)b;

	if (io->offset + io->len > b->info.size_bytes)
		return -EINVAL;
	if (io->op == BDEV_OP_WRITE_ZEROES && m->no_write_zeroes)
		return -EOPNOTSUPP;
	assert_true(m->qn < MEM_QMAX);
	m->q[m->qn++] = io;
	return 0;
}

static void mem_close(struct bdev *b)
{
	(void)b;
}

static const struct bdev_ops mem_ops = { .name = "mem", .submit = mem_submit, .close = mem_close };

static inline struct membdev *mem_create(uint64_t size, uint32_t bs)
{
	struct membdev *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	m->b.ops = &mem_ops;
	m->b.info.size_bytes = size;
	m->b.info.block_size = bs;
	m->b.info.unmap_supported = true;
	snprintf(m->b.name, sizeof(m->b.name), "mem%u", bs);
	m->data = calloc(1, size);
	assert_non_null(m->data);
	m->fail_op = -1;
	return m;
}

static inline void mem_destroy(struct membdev *m)
{
	free(m->data);
	free(m);
}

static inline void iov_copy(struct bdev_io *io, uint8_t *disk, bool to_disk)
{
	uint64_t done = 0;
	int i;

	for (i = 0; i < io->iovcnt; i++) {
		if (to_disk)
			memcpy(disk + done, io->iov[i].iov_base, io->iov[i].iov_len);
		else
			memcpy(io->iov[i].iov_base, disk + done, io->iov[i].iov_len);
		done += io->iov[i].iov_len;
	}
	assert_int_equal(done, io->len);
}

/* Completes the oldest queued I/O (its callback may queue more); false if none. */
static inline bool mem_run_one(struct membdev *m)
{
	struct bdev_io *io;

	if (!m->qn)
		return false;
	io = m->q[0];
	memmove(&m->q[0], &m->q[1], (m->qn - 1) * sizeof(m->q[0]));
	m->qn--;
	io->result = 0;
	if (m->fail_err && (m->fail_op < 0 || m->fail_op == (int)io->op)) {
		io->result = m->fail_err;
		m->fail_err = 0;
	} else {
		switch (io->op) {
		case BDEV_OP_READ:
			iov_copy(io, m->data + io->offset, false);
			break;
		case BDEV_OP_WRITE:
			iov_copy(io, m->data + io->offset, true);
			m->nwrites++;
			m->last_flags = io->flags;
			break;
		case BDEV_OP_FLUSH:
			m->nflush++;
			break;
		case BDEV_OP_UNMAP:
			memset(m->data + io->offset, 0, io->len);
			m->nunmaps++;
			break;
		case BDEV_OP_WRITE_ZEROES:
			memset(m->data + io->offset, 0, io->len);
			m->nzeroes++;
			break;
		}
	}
	io->cb(io);
	return true;
}

/* Completes every queued I/O, including those submitted by completions. */
static inline unsigned int mem_run(struct membdev *m)
{
	unsigned int total = 0;

	while (mem_run_one(m))
		total++;
	return total;
}

/* ----------------------------------------------------------- nexuses */

static struct scsi_port test_port1 __attribute__((unused)) = { 1, 1, "iqn.2026-01.org.example:tgt,t,0x0001" };
static struct scsi_port test_port2 __attribute__((unused)) = { 2, 2, "iqn.2026-01.org.example:tgt,t,0x0002" };

static inline void itn_init(struct scsi_itn *itn, uint64_t id, const char *iname,
			    const char *isid, const struct scsi_port *port,
			    struct scsi_lu *const *luns, uint32_t nluns)
{
	memset(itn, 0, sizeof(*itn));
	itn->id = id;
	snprintf(itn->initiator_name, sizeof(itn->initiator_name), "%s", iname);
	snprintf(itn->initiator_port, sizeof(itn->initiator_port), "%s,i,0x%s", iname, isid);
	itn->port = port;
	itn->luns = luns;
	itn->nluns = nluns;
}

/* ----------------------------------------------------------- commands */

struct tcmd {
	struct scsi_cmd c;
	int ndone;
};

static void tcmd_done(struct scsi_cmd *cmd)
{
	struct tcmd *t = (struct tcmd *)(void *)cmd;

	t->ndone++;
}

/* Prepares a command (not submitted). */
static inline void tcmd_init(struct tcmd *t, const struct scsi_itn *itn, struct scsi_lu *lu,
			     const uint8_t *cdb, size_t cdb_len, void *buf, uint32_t buf_len)
{
	memset(t, 0, sizeof(*t));
	t->c.itn = itn;
	t->c.lu = lu;
	memcpy(t->c.cdb, cdb, cdb_len);
	t->c.cdb_len = 16;
	if (cdb_len > 16)
		t->c.cdb_len = (uint8_t)cdb_len;
	t->c.buf = buf;
	t->c.buf_len = buf_len;
	/* the W bit of an initiator that sends what the buffer holds */
	t->c.data_out = buf && buf_len;
	t->c.done = tcmd_done;
	t->c.attr = SCSI_ATTR_SIMPLE;
}

struct tctx {
	struct membdev *mem;
	struct scsi_lu *lu;
	struct scsi_lu *luns[4];
	struct scsi_itn a, b;
	struct tcmd t;
};

/* Runs one CDB to completion and returns the status. */
static inline uint8_t run_cdb(struct tctx *x, const struct scsi_itn *itn, const uint8_t *cdb,
			      size_t cdb_len, void *buf, uint32_t buf_len)
{
	tcmd_init(&x->t, itn, x->lu, cdb, cdb_len, buf, buf_len);
	x->t.c.data_in = true;
	scsi_cmd_submit(&x->t.c);
	mem_run(x->mem);
	assert_int_equal(x->t.ndone, 1);
	return x->t.c.status;
}

static inline uint8_t sense_key(const struct tctx *x)
{
	return x->t.c.sense[2] & 0x0f;
}

static inline uint16_t sense_asc(const struct tctx *x)
{
	return (uint16_t)(x->t.c.sense[12] << 8 | x->t.c.sense[13]);
}

#define assert_sense(x, key, asc)                                               \
	do {                                                                    \
		assert_int_equal((x)->t.c.status, SCSI_STATUS_CHECK_CONDITION); \
		assert_int_equal(sense_key(x), (key));                          \
		assert_int_equal(sense_asc(x), (asc));                          \
	} while (0)

#define assert_good(x) assert_int_equal((x)->t.c.status, SCSI_STATUS_GOOD)

static inline struct scsi_lu_params default_params(void)
{
	struct scsi_lu_params p;
	unsigned int i;

	memset(&p, 0, sizeof(p));
	p.lun = 0;
	snprintf(p.vendor, sizeof(p.vendor), "ISERGW");
	snprintf(p.product, sizeof(p.product), "Test Disk");
	snprintf(p.revision, sizeof(p.revision), "0001");
	snprintf(p.serial, sizeof(p.serial), "SN-0123456789");
	p.naa[0] = 0x60;
	for (i = 1; i < 16; i++)
		p.naa[i] = (uint8_t)(0x11 * i);
	p.write_cache = true;
	p.thin = true;
	return p;
}

static inline void tctx_setup(struct tctx *x, uint64_t size, uint32_t bs,
			      const struct scsi_lu_params *p)
{
	memset(x, 0, sizeof(*x));
	x->mem = mem_create(size, bs);
	assert_int_equal(scsi_lu_create(p, &x->mem->b, &x->lu), 0);
	x->luns[0] = x->lu;
	itn_init(&x->a, 1, "iqn.2026-01.org.example:host-a", "400001370000", &test_port1,
		 x->luns, 1);
	itn_init(&x->b, 2, "iqn.2026-01.org.example:host-b", "400001370001", &test_port1,
		 x->luns, 1);
	scsi_lu_itn_add(x->lu, &x->a);
	scsi_lu_itn_add(x->lu, &x->b);
}

static inline void tctx_teardown(struct tctx *x)
{
	scsi_lu_itn_remove(x->lu, &x->a);
	scsi_lu_itn_remove(x->lu, &x->b);
	scsi_lu_destroy(x->lu);
	mem_destroy(x->mem);
}

/* CDB builders. */
static inline void cdb10(uint8_t *c, uint8_t op, uint8_t b1, uint32_t lba, uint16_t n)
{
	memset(c, 0, 16);
	c[0] = op;
	c[1] = b1;
	c[2] = (uint8_t)(lba >> 24); c[3] = (uint8_t)(lba >> 16);
	c[4] = (uint8_t)(lba >> 8); c[5] = (uint8_t)lba;
	c[7] = (uint8_t)(n >> 8); c[8] = (uint8_t)n;
}

static inline void cdb12(uint8_t *c, uint8_t op, uint8_t b1, uint32_t lba, uint32_t n)
{
	memset(c, 0, 16);
	c[0] = op;
	c[1] = b1;
	c[2] = (uint8_t)(lba >> 24); c[3] = (uint8_t)(lba >> 16);
	c[4] = (uint8_t)(lba >> 8); c[5] = (uint8_t)lba;
	c[6] = (uint8_t)(n >> 24); c[7] = (uint8_t)(n >> 16);
	c[8] = (uint8_t)(n >> 8); c[9] = (uint8_t)n;
}

static inline void cdb16(uint8_t *c, uint8_t op, uint8_t b1, uint64_t lba, uint32_t n)
{
	int i;

	memset(c, 0, 16);
	c[0] = op;
	c[1] = b1;
	for (i = 0; i < 8; i++)
		c[2 + i] = (uint8_t)(lba >> (56 - 8 * i));
	c[10] = (uint8_t)(n >> 24); c[11] = (uint8_t)(n >> 16);
	c[12] = (uint8_t)(n >> 8); c[13] = (uint8_t)n;
}

static inline uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static inline uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* TEST UNIT READY until GOOD; returns the number of UAs consumed. */
static inline int drain_ua(struct tctx *x, const struct scsi_itn *itn)
{
	uint8_t c[16] = { 0 };
	int n = 0;

	while (run_cdb(x, itn, c, 6, NULL, 0) != SCSI_STATUS_GOOD) {
		assert_int_equal(sense_key(x), SCSI_SK_UNIT_ATTENTION);
		n++;
		assert_true(n < 32);
	}
	return n;
}

/* The status of TEST UNIT READY, of READ(10) / WRITE(10) of the first block (of 512 bytes). */
static inline uint8_t run_tur(struct tctx *x, const struct scsi_itn *itn)
{
	uint8_t c[16] = { 0 };

	return run_cdb(x, itn, c, 6, NULL, 0);
}

static inline uint8_t run_read1(struct tctx *x, const struct scsi_itn *itn)
{
	uint8_t c[16], buf[512];

	cdb10(c, 0x28, 0, 1, 1);
	return run_cdb(x, itn, c, 10, buf, sizeof(buf));
}

static inline uint8_t run_write1(struct tctx *x, const struct scsi_itn *itn)
{
	uint8_t c[16], buf[512] = { 0 };

	cdb10(c, 0x2a, 0, 1, 1);
	return run_cdb(x, itn, c, 10, buf, sizeof(buf));
}

/* A cmocka teardown for a state that is one malloc'd tctx. */
static inline int tctx_free(void **state)
{
	struct tctx *x = *state;

	tctx_teardown(x);
	free(x);
	return 0;
}

#endif
