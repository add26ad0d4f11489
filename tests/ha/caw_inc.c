/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client of ha.caw-atomic (tests/ha/caw_atomic.sh): an increment with
 * COMPARE AND WRITE on one block (its first 8 bytes a counter, the rest
 * zero).
 *
 *   caw_inc --good N [--lba L] [--initiator NAME] URL
 *
 *   Until N COMPARE AND WRITEs ended GOOD: read the block, COMPARE AND
 *   WRITE it from value v to v + 1; a MISCOMPARE (someone else was first)
 *   reads again; NOT READY, UNIT ATTENTION and BUSY are tried again. Prints
 *   "caw: good G miscompare M retried R" (exit 0), or exits 1 on any other
 *   answer or after 600 s.
 *
 *   caw_inc --zero | --read [--lba L] URL
 *
 *   Writes the block with counter 0 / prints "value V" (exit 0).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define BS 512

static struct iscsi_context *ctx;
static struct iscsi_url *url;

static void put_counter(uint8_t *b, uint64_t v)
{
	memset(b, 0, BS);
	memcpy(b, &v, sizeof(v));
}

static int read_block(uint64_t lba, uint8_t *out)
{
	for (int tries = 0; tries < 100; tries++) {
		struct scsi_task *t = iscsi_read16_sync(ctx, url->lun, lba, BS, BS, 0, 0, 0, 0, 0);
		int st = t ? t->status : -1;

		if (t && st == SCSI_STATUS_GOOD && t->datain.size >= BS) {
			memcpy(out, t->datain.data, BS);
			scsi_free_scsi_task(t);
			return 0;
		}
		if (t)
			scsi_free_scsi_task(t);
		if (st != SCSI_STATUS_CHECK_CONDITION && st != SCSI_STATUS_BUSY)
			return -EIO;
	}
	return -EIO;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "good", required_argument, NULL, 'g' },
		{ "lba", required_argument, NULL, 'l' },
		{ "initiator", required_argument, NULL, 'i' },
		{ "zero", no_argument, NULL, 'z' },
		{ "read", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *iname = "iqn.2026-11.org.isergw:caw";
	uint64_t lba = 0, want = 0, good = 0, miscompare = 0, retried = 0;
	bool zero = false, rd = false;
	uint8_t cur[BS], buf[2 * BS];
	time_t end = time(NULL) + 600;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'g': want = strtoull(optarg, NULL, 10); break;
		case 'l': lba = strtoull(optarg, NULL, 10); break;
		case 'i': iname = optarg; break;
		case 'z': zero = true; break;
		case 'r': rd = true; break;
		default: return 2;
		}
	}
	if (optind != argc - 1 || (!zero && !rd && !want)) {
		fprintf(stderr, "usage: caw_inc --good N | --zero | --read [--lba L] URL\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = iscsi_create_context(iname);
	url = ctx ? iscsi_parse_full_url(ctx, argv[optind]) : NULL;
	if (!url)
		return 2;
	iscsi_set_session_type(ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(ctx, ISCSI_HEADER_DIGEST_NONE);
	if (iscsi_full_connect_sync(ctx, url->portal, url->lun)) {
		fprintf(stderr, "caw_inc: login: %s\n", iscsi_get_error(ctx));
		return 2;
	}
	if (zero) {
		put_counter(buf, 0);
		for (int tries = 0; tries < 100; tries++) {
			struct scsi_task *t = iscsi_write16_sync(ctx, url->lun, lba, buf, BS, BS, 0, 0,
								 0, 0, 0);
			int st = t ? t->status : -1;

			if (t)
				scsi_free_scsi_task(t);
			if (st == SCSI_STATUS_GOOD) {
				printf("zeroed\n");
				return 0;
			}
		}
		return 1;
	}
	if (read_block(lba, cur))
		return 1;
	if (rd) {
		uint64_t v;

		memcpy(&v, cur, sizeof(v));
		printf("value %" PRIu64 "\n", v);
		return 0;
	}
	while (good < want) {
		struct scsi_task *t;
		uint64_t v;
		int st;

		if (time(NULL) > end) {
			fprintf(stderr, "caw_inc: out of time after %" PRIu64 " good\n", good);
			return 1;
		}
		memcpy(&v, cur, sizeof(v));
		memcpy(buf, cur, BS);
		put_counter(buf + BS, v + 1);
		t = iscsi_compareandwrite_sync(ctx, url->lun, lba, buf, 2 * BS, BS, 0, 0, 0, 0, 0);
		st = t ? t->status : -1;
		if (st == SCSI_STATUS_GOOD) {
			good++;
			put_counter(cur, v + 1);
		} else if (st == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_MISCOMPARE) {
			miscompare++;
			if (read_block(lba, cur)) {
				scsi_free_scsi_task(t);
				return 1;
			}
		} else if (st == SCSI_STATUS_BUSY ||
			   (st == SCSI_STATUS_CHECK_CONDITION &&
			    (t->sense.key == SCSI_SENSE_NOT_READY ||
			     t->sense.key == SCSI_SENSE_UNIT_ATTENTION))) {
			retried++;
			if (read_block(lba, cur)) {
				scsi_free_scsi_task(t);
				return 1;
			}
		} else {
			fprintf(stderr, "caw_inc: COMPARE AND WRITE: status 0x%x sense %x/%04x\n", st,
				t ? t->sense.key : 0, t ? t->sense.ascq : 0);
			if (t)
				scsi_free_scsi_task(t);
			return 1;
		}
		if (t)
			scsi_free_scsi_task(t);
	}
	printf("caw: good %" PRIu64 " miscompare %" PRIu64 " retried %" PRIu64 "\n", good,
	       miscompare, retried);
	iscsi_logout_sync(ctx);
	iscsi_destroy_context(ctx);
	return 0;
}
