/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qd1_latency: the round trip of one command at a time, for
 * tests/bench/forward_vs_direct.sh (forwarded against direct, QD1).
 *
 *   qd1_latency [--seconds N] [--initiator IQN] URL
 *
 * One libiscsi session to URL (iscsi://HOST:PORT/IQN/LUN), then 4 KiB READ(16)
 * at random 4 KiB-aligned offsets, one at a time, for N seconds (default 5),
 * each timed from its submission to its completion. Prints
 *
 *   qd1 commands N p50 X p99 Y avg Z
 *
 * in microseconds. Exit 1 when a command fails or nothing could be measured.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define MAX_SAMPLES (4u << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "initiator", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	const char *initiator = "iqn.2026-11.org.isergw:bench-qd1";
	struct iscsi_context *ctx;
	struct iscsi_url *url;
	struct scsi_task *t;
	struct scsi_readcapacity16 *rc16;
	uint32_t *lat, bs, per;
	uint64_t blocks, slots, end, sum = 0;
	unsigned int seed = 1;
	size_t n = 0;
	int seconds = 5, o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's': seconds = (int)strtol(optarg, NULL, 10); break;
		case 'i': initiator = optarg; break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || seconds <= 0)
		goto usage;
	ctx = iscsi_create_context(initiator);
	if (!ctx)
		return 1;
	url = iscsi_parse_full_url(ctx, argv[optind]);
	if (!url) {
		fprintf(stderr, "qd1_latency: %s\n", iscsi_get_error(ctx));
		return 1;
	}
	iscsi_set_session_type(ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(ctx, ISCSI_HEADER_DIGEST_NONE);
	if (iscsi_full_connect_sync(ctx, url->portal, url->lun) != 0) {
		fprintf(stderr, "qd1_latency: login to %s: %s\n", argv[optind], iscsi_get_error(ctx));
		return 1;
	}
	t = iscsi_readcapacity16_sync(ctx, url->lun);
	rc16 = t && t->status == SCSI_STATUS_GOOD ? scsi_datain_unmarshall(t) : NULL;
	if (!rc16 || rc16->block_length == 0 || rc16->block_length > 4096 ||
	    4096 % rc16->block_length) {
		fprintf(stderr, "qd1_latency: READ CAPACITY(16) failed or odd block size\n");
		return 1;
	}
	bs = rc16->block_length;
	blocks = rc16->returned_lba + 1;
	scsi_free_scsi_task(t);
	per = 4096 / bs;
	slots = blocks / per;
	lat = malloc(MAX_SAMPLES * sizeof(*lat));
	if (!lat || slots == 0)
		return 1;
	srand(seed);
	end = now_ns() + (uint64_t)seconds * 1000000000u;
	while (n < MAX_SAMPLES) {
		uint64_t lba = ((uint64_t)rand() * 65536u + (uint64_t)rand()) % slots * per;
		uint64_t t0 = now_ns(), d;

		if (t0 >= end)
			break;
		t = iscsi_read16_sync(ctx, url->lun, lba, 4096, bs, 0, 0, 0, 0, 0);
		d = now_ns() - t0;
		if (!t || t->status != SCSI_STATUS_GOOD) {
			fprintf(stderr, "qd1_latency: READ(16) at LBA %llu failed: %s\n",
				(unsigned long long)lba, iscsi_get_error(ctx));
			return 1;
		}
		scsi_free_scsi_task(t);
		lat[n++] = (uint32_t)(d / 1000u);
		sum += d / 1000u;
	}
	iscsi_logout_sync(ctx);
	iscsi_destroy_url(url);
	iscsi_destroy_context(ctx);
	if (n == 0)
		return 1;
	qsort(lat, n, sizeof(*lat), cmp_u32);
	printf("qd1 commands %zu p50 %u p99 %u avg %llu\n", n, lat[n / 2], lat[n * 99 / 100],
	       (unsigned long long)(sum / n));
	free(lat);
	return 0;

usage:
	fprintf(stderr, "usage: qd1_latency [--seconds N] [--initiator IQN] URL\n");
	return 2;
}
