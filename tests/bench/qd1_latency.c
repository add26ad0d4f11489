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

#include "bench_login.h"

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
	struct bench_lun b;
	struct iscsi_context *ctx;
	struct scsi_task *t;
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
	if (bench_login("qd1_latency", initiator, argv[optind], &b))
		return 1;
	if (b.block_size > 4096 || 4096 % b.block_size) {
		fprintf(stderr, "qd1_latency: block size %u does not divide 4096\n", b.block_size);
		return 1;
	}
	ctx = b.ctx;
	bs = b.block_size;
	blocks = b.blocks;
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
		t = iscsi_read16_sync(ctx, b.lun, lba, 4096, bs, 0, 0, 0, 0, 0);
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
	bench_logout(&b);
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
