/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Data integrity client (libiscsi, synchronous API).
 *
 *   integrity --url iscsi://HOST:PORT/IQN/LUN --mode write|verify
 *             [--seed N] [--region-mib N] [--offset-mib N] [--sync]
 *
 * write:  writes a seeded pattern over the region in extents of mixed sizes
 *         (4 KiB .. 1 MiB, every fourth one with FUA), reads each extent back
 *         at once, then re-reads the whole region in differently sized
 *         extents and compares byte for byte. With --sync, finishes with
 *         SYNCHRONIZE CACHE(16) over the LUN and prints "synced" only after
 *         it completed with GOOD status.
 * verify: only the final whole-region check, with the same seed (after a
 *         target restart or crash).
 *
 * The content of every logical block is a function of (seed, LBA) alone, and
 * each block starts with a small header (magic, seed, LBA), so a misplaced
 * block is reported with where it came from (the pattern: tests/common/blockpat.h). Prints
 * "integrity: blocks written W, verified V, mismatches M" and exits 1 on any
 * mismatch or SCSI error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "blockpat.h"

#define MAGIC 0x69736572677721ull /* "iserg w!" */
#define MAX_XFER (1024u * 1024u)
#define MIN_XFER (4096u)
#define MAX_REPORT 10

struct opts {
	const char *url;
	const char *initiator;
	bool write;
	bool sync;
	uint64_t seed;
	uint64_t region_mib;
	uint64_t offset_mib;
};

struct run {
	struct iscsi_context *iscsi;
	int lun;
	uint32_t bs;
	uint64_t nblocks;       /* LUN size in blocks */
	uint64_t first, count;  /* region in blocks */
	uint64_t written, verified, mismatches;
	unsigned char *buf, *expect;
};

static void fill(struct run *r, unsigned char *p, uint64_t seed, uint64_t lba, uint64_t n)
{
	const struct blockpat bp = { .magic = MAGIC, .seed = seed };

	blockpat_fill(&bp, p, r->bs, lba, n, 0);
}

/* Extent length in blocks for the next transfer: 4 KiB .. 1 MiB. */
static uint64_t pick_len(struct run *r, uint64_t *rng, uint64_t left)
{
	static const uint32_t sizes[] = { 4096, 8192, 12288, 16384, 65536, 131072,
					  262144, 524288, 1048576 };
	uint64_t x = splitmix64(rng);
	uint32_t bytes;
	if (x & 1)
		bytes = sizes[(x >> 8) % (sizeof(sizes) / sizeof(sizes[0]))];
	else /* any multiple of 4 KiB */
		bytes = (uint32_t)(((x >> 8) % (MAX_XFER / MIN_XFER)) + 1) * MIN_XFER;
	uint64_t n = bytes / r->bs;
	if (n == 0)
		n = 1;
	return n < left ? n : left;
}

static int check_task(struct run *r, struct scsi_task *t, const char *what, uint64_t lba, uint64_t n)
{
	if (t == NULL) {
		fprintf(stderr, "integrity: %s lba %" PRIu64 " +%" PRIu64 ": transport error: %s\n",
			what, lba, n, iscsi_get_error(r->iscsi));
		return -EIO;
	}
	if (t->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "integrity: %s lba %" PRIu64 " +%" PRIu64 ": status 0x%02x sense %s/%s (%s)\n",
			what, lba, n, t->status, scsi_sense_key_str(t->sense.key),
			scsi_sense_ascq_str(t->sense.ascq), iscsi_get_error(r->iscsi));
		scsi_free_scsi_task(t);
		return -EIO;
	}
	return 0;
}

static void report_mismatch(struct run *r, uint64_t lba, const unsigned char *got, uint64_t seed)
{
	const struct blockpat bp = { .magic = MAGIC, .seed = seed };
	struct blockpat_hdr h;

	r->mismatches++;
	if (r->mismatches > MAX_REPORT)
		return;
	if (blockpat_header(&bp, got, &h))
		fprintf(stderr, "integrity: mismatch at lba %" PRIu64 ": holds block of seed %" PRIu64
			" lba %" PRIu64 " (expected seed %" PRIu64 ")%s\n", lba, h.seed, h.lba, seed,
			h.seed == seed && h.lba == lba ? ", body differs" : "");
	else {
		bool zero = true;
		for (uint32_t i = 0; i < r->bs && zero; i++)
			zero = got[i] == 0;
		fprintf(stderr, "integrity: mismatch at lba %" PRIu64 ": %s\n", lba,
			zero ? "block is all zeros (never written or lost)" : "foreign content");
	}
}

static int read_compare(struct run *r, uint64_t seed, uint64_t lba, uint64_t n)
{
	uint32_t len = (uint32_t)(n * r->bs);
	struct scsi_task *t = iscsi_read16_sync(r->iscsi, r->lun, lba, len, (int)r->bs, 0, 0, 0, 0, 0);
	int rc = check_task(r, t, "READ(16)", lba, n);
	if (rc)
		return rc;
	if (t->datain.size != (int)len) {
		fprintf(stderr, "integrity: READ(16) lba %" PRIu64 ": %d bytes returned, %u expected\n",
			lba, t->datain.size, len);
		scsi_free_scsi_task(t);
		return -EIO;
	}
	fill(r, r->expect, seed, lba, n);
	for (uint64_t i = 0; i < n; i++) {
		const unsigned char *got = t->datain.data + i * r->bs;
		if (memcmp(got, r->expect + i * r->bs, r->bs) != 0)
			report_mismatch(r, lba + i, got, seed);
		else
			r->verified++;
	}
	scsi_free_scsi_task(t);
	return 0;
}

static int do_write(struct run *r, uint64_t seed)
{
	uint64_t rng = seed * 31 + 7, lba = r->first, end = r->first + r->count, i = 0;
	while (lba < end) {
		uint64_t n = pick_len(r, &rng, end - lba);
		int fua = (i++ % 4) == 3;
		fill(r, r->buf, seed, lba, n);
		struct scsi_task *t = iscsi_write16_sync(r->iscsi, r->lun, lba, r->buf,
							 (uint32_t)(n * r->bs), (int)r->bs,
							 0, 0, fua, 0, 0);
		int rc = check_task(r, t, fua ? "WRITE(16) FUA" : "WRITE(16)", lba, n);
		if (rc)
			return rc;
		scsi_free_scsi_task(t);
		r->written += n;
		/* read it back at once: catches a wrong offset before it spreads */
		rc = read_compare(r, seed, lba, n);
		if (rc)
			return rc;
		lba += n;
	}
	return 0;
}

static int do_verify(struct run *r, uint64_t seed)
{
	/* a different extent sequence than the writes used, crossing their edges */
	uint64_t rng = seed * 17 + 3, lba = r->first, end = r->first + r->count;
	while (lba < end) {
		uint64_t n = pick_len(r, &rng, end - lba);
		int rc = read_compare(r, seed, lba, n);
		if (rc)
			return rc;
		lba += n;
	}
	return 0;
}

static int do_sync(struct run *r)
{
	struct scsi_task *t = iscsi_synchronizecache16_sync(r->iscsi, r->lun, 0, 0, 0, 0);
	int rc = check_task(r, t, "SYNCHRONIZE CACHE(16)", 0, 0);
	if (rc)
		return rc;
	scsi_free_scsi_task(t);
	return 0;
}

static int connect_lun(struct run *r, const struct opts *o)
{
	r->iscsi = iscsi_create_context(o->initiator);
	if (r->iscsi == NULL) {
		fprintf(stderr, "integrity: cannot create iscsi context\n");
		return -ENOMEM;
	}
	struct iscsi_url *u = iscsi_parse_full_url(r->iscsi, o->url);
	if (u == NULL) {
		fprintf(stderr, "integrity: bad url %s: %s\n", o->url, iscsi_get_error(r->iscsi));
		return -EINVAL;
	}
	iscsi_set_session_type(r->iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(r->iscsi, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	iscsi_set_targetname(r->iscsi, u->target);
	iscsi_set_timeout(r->iscsi, 60);
	r->lun = u->lun;
	int rc = iscsi_full_connect_sync(r->iscsi, u->portal, u->lun);
	if (rc) {
		fprintf(stderr, "integrity: login to %s failed: %s\n", o->url, iscsi_get_error(r->iscsi));
		iscsi_destroy_url(u);
		return -ECONNREFUSED;
	}
	iscsi_destroy_url(u);

	struct scsi_task *t = iscsi_readcapacity16_sync(r->iscsi, r->lun);
	rc = check_task(r, t, "READ CAPACITY(16)", 0, 0);
	if (rc)
		return rc;
	struct scsi_readcapacity16 *rc16 = scsi_datain_unmarshall(t);
	if (rc16 == NULL || rc16->block_length < 512 || rc16->block_length > MIN_XFER) {
		fprintf(stderr, "integrity: unusable READ CAPACITY(16) answer\n");
		scsi_free_scsi_task(t);
		return -EIO;
	}
	r->bs = rc16->block_length;
	r->nblocks = rc16->returned_lba + 1;
	scsi_free_scsi_task(t);

	r->first = o->offset_mib * 1024 * 1024 / r->bs;
	r->count = o->region_mib * 1024 * 1024 / r->bs;
	if (r->first + r->count > r->nblocks) {
		fprintf(stderr, "integrity: region %" PRIu64 "+%" PRIu64 " MiB beyond the LUN (%" PRIu64
			" blocks of %u)\n", o->offset_mib, o->region_mib, r->nblocks, r->bs);
		return -ERANGE;
	}
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end != '\0' || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: integrity --url iscsi://HOST:PORT/IQN/LUN --mode write|verify "
		"[--seed N] [--region-mib N] [--offset-mib N] [--sync] [--initiator IQN]\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "mode", required_argument, NULL, 'm' },
		{ "seed", required_argument, NULL, 's' },
		{ "region-mib", required_argument, NULL, 'r' },
		{ "offset-mib", required_argument, NULL, 'o' },
		{ "initiator", required_argument, NULL, 'i' },
		{ "sync", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .initiator = "iqn.2026-11.org.isergw:integrity", .seed = 1,
			  .region_mib = 64 };
	const char *mode = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "u:m:s:r:o:i:Sh", lopts, NULL)) != -1) {
		switch (c) {
		case 'u': o.url = optarg; break;
		case 'm': mode = optarg; break;
		case 'i': o.initiator = optarg; break;
		case 'S': o.sync = true; break;
		case 's':
		case 'r':
		case 'o':
			if (parse_u64(optarg, c == 's' ? &o.seed : c == 'r' ? &o.region_mib : &o.offset_mib)) {
				fprintf(stderr, "integrity: bad number '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (o.url == NULL || mode == NULL || optind != argc || o.region_mib == 0) {
		usage();
		return 2;
	}
	if (strcmp(mode, "write") == 0)
		o.write = true;
	else if (strcmp(mode, "verify") != 0) {
		usage();
		return 2;
	}

	struct run r = { 0 };
	int rc = connect_lun(&r, &o);
	if (rc == 0) {
		r.buf = malloc(MAX_XFER);
		r.expect = malloc(MAX_XFER);
		if (r.buf == NULL || r.expect == NULL)
			rc = -ENOMEM;
	}
	if (rc == 0 && o.write)
		rc = do_write(&r, o.seed);
	if (rc == 0 && o.write && o.sync) {
		rc = do_sync(&r);
		if (rc == 0) {
			printf("synced\n");
			fflush(stdout);
		}
	}
	if (rc == 0) {
		uint64_t before = r.verified;
		rc = do_verify(&r, o.seed);
		if (o.write)
			r.verified -= before; /* report the whole-region pass, not the read-backs */
	}
	printf("integrity: %s seed %" PRIu64 ", region %" PRIu64 " MiB at %" PRIu64
	       " MiB, block %u: blocks written %" PRIu64 ", verified %" PRIu64 ", mismatches %" PRIu64 "\n",
	       mode, o.seed, o.region_mib, o.offset_mib, r.bs, r.written, r.verified, r.mismatches);
	if (r.iscsi != NULL) {
		if (rc == 0)
			iscsi_logout_sync(r.iscsi);
		iscsi_destroy_context(r.iscsi);
	}
	free(r.buf);
	free(r.expect);
	if (rc == 0 && r.mismatches == 0 && r.verified == r.count)
		return 0;
	if (rc == 0 && r.mismatches == 0)
		fprintf(stderr, "integrity: verified %" PRIu64 " of %" PRIu64 " blocks\n", r.verified, r.count);
	return 1;
}
