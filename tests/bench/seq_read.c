/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seq_read: sequential reads at a fixed queue depth into buffers allocated
 * once, for tests/bench/tcp_vs_tgt.sh (1 MiB reads against raw TCP).
 *
 *   seq_read [--seconds N] [--size BYTES] [--depth N] [--initiator IQN] URL
 *
 * One libiscsi session to URL (iscsi://HOST:PORT/IQN/LUN), then READ(16) of
 * BYTES (default 1 MiB) at consecutive offsets, wrapping at the end of the
 * LUN, N (default 8) in flight, for the given seconds (default 20). Each
 * slot owns one buffer, handed to libiscsi as the command's iovec, so the
 * Data-In is received straight into it: one copy from the socket, as
 * iperf3's receiver does. iscsi-perf instead lets libiscsi allocate each
 * command's buffer and append every Data-In segment to it, which costs the
 * client about twice the CPU per byte and, on a machine whose two cores the
 * client shares with the target, bounds what the target can show. Prints
 *
 *   seq_read commands N bytes B seconds S MiB/s M cpu_ms_per_GiB C
 *
 * where C is this process's user+system CPU per GiB received. Exit 1 when a
 * command fails or nothing completes.
 */
#include <getopt.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_login.h"

#define MAX_DEPTH 64

struct slot {
	struct iscsi_context *ctx;
	struct scsi_iovec iov;
	int index;
};

static struct {
	int lun;
	uint32_t bs;
	uint64_t blocks, next_lba, end_ns;
	uint32_t size;
	uint64_t done_cmds, done_bytes;
	int in_flight, failed, stopping;
} g;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static void done_cb(struct iscsi_context *ctx, int status, void *command_data, void *private_data);

static int issue(struct slot *s)
{
	uint32_t per = g.size / g.bs;
	struct scsi_task *t;

	if (g.next_lba + per > g.blocks)
		g.next_lba = 0;
	t = iscsi_read16_iov_task(s->ctx, g.lun, g.next_lba, g.size, g.bs, 0, 0, 0, 0, 0,
				  done_cb, s, &s->iov, 1);
	if (!t) {
		fprintf(stderr, "seq_read: cannot queue READ(16): %s\n", iscsi_get_error(s->ctx));
		return -1;
	}
	g.next_lba += per;
	g.in_flight++;
	return 0;
}

static void done_cb(struct iscsi_context *ctx, int status, void *command_data, void *private_data)
{
	struct scsi_task *t = command_data;
	struct slot *s = private_data;

	(void)ctx;
	g.in_flight--;
	if (status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "seq_read: READ(16) failed: %s\n", iscsi_get_error(s->ctx));
		g.failed = 1;
	} else {
		g.done_cmds++;
		g.done_bytes += g.size;
	}
	scsi_free_scsi_task(t);
	if (!g.failed && !g.stopping && now_ns() < g.end_ns && issue(s) != 0)
		g.failed = 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "size", required_argument, NULL, 'b' },
		{ "depth", required_argument, NULL, 'd' },
		{ "initiator", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *initiator = "iqn.2026-11.org.isergw:bench-seq";
	struct slot slots[MAX_DEPTH];
	struct bench_lun b;
	struct iscsi_context *ctx;
	uint64_t t0, c0, wall, cpu;
	long size = 1 << 20;
	int seconds = 20, depth = 8, o, i;

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 's': seconds = (int)strtol(optarg, NULL, 10); break;
		case 'b': size = strtol(optarg, NULL, 10); break;
		case 'd': depth = (int)strtol(optarg, NULL, 10); break;
		case 'i': initiator = optarg; break;
		case 'h':
			printf("usage: seq_read [--seconds N] [--size BYTES] [--depth N] "
			       "[--initiator IQN] URL\n");
			return 0;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || seconds <= 0 || depth <= 0 || depth > MAX_DEPTH ||
	    size <= 0 || size > (16l << 20))
		goto usage;
	if (bench_login("seq_read", initiator, argv[optind], &b))
		return 1;
	if (size % b.block_size) {
		fprintf(stderr, "seq_read: --size is not a multiple of the block size %u\n",
			b.block_size);
		bench_logout(&b);
		return 1;
	}
	ctx = b.ctx;
	g.lun = b.lun;
	g.bs = b.block_size;
	g.blocks = b.blocks;
	g.size = (uint32_t)size;
	if (g.blocks < (uint64_t)(size / g.bs)) {
		fprintf(stderr, "seq_read: the LUN is smaller than one read\n");
		return 1;
	}
	for (i = 0; i < depth; i++) {
		slots[i].ctx = ctx;
		slots[i].index = i;
		slots[i].iov.iov_len = (size_t)size;
		/* aligned_alloc wants a multiple of the alignment */
		slots[i].iov.iov_base = aligned_alloc(4096, ((size_t)size + 4095) & ~(size_t)4095);
		if (!slots[i].iov.iov_base)
			return 1;
		/* fault the pages in now, not in the measured run */
		memset(slots[i].iov.iov_base, 0, (size_t)size);
	}
	t0 = now_ns();
	c0 = cpu_ns();
	g.end_ns = t0 + (uint64_t)seconds * 1000000000u;
	for (i = 0; i < depth; i++)
		if (issue(&slots[i]) != 0)
			return 1;
	while (g.in_flight > 0) {
		struct pollfd pfd = { .fd = iscsi_get_fd(ctx), .events = (short)iscsi_which_events(ctx) };

		if (poll(&pfd, 1, 1000) < 0)
			continue;
		if (iscsi_service(ctx, pfd.revents) < 0) {
			fprintf(stderr, "seq_read: %s\n", iscsi_get_error(ctx));
			return 1;
		}
		if (g.failed)
			g.stopping = 1;
	}
	wall = now_ns() - t0;
	cpu = cpu_ns() - c0;
	bench_logout(&b);
	for (i = 0; i < depth; i++)
		free(slots[i].iov.iov_base);
	if (g.failed || g.done_bytes == 0)
		return 1;
	printf("seq_read commands %llu bytes %llu seconds %.2f MiB/s %.0f cpu_ms_per_GiB %.0f\n",
	       (unsigned long long)g.done_cmds, (unsigned long long)g.done_bytes, wall / 1e9,
	       g.done_bytes / 1048576.0 / (wall / 1e9), cpu / 1e6 / (g.done_bytes / 1073741824.0));
	return 0;

usage:
	fprintf(stderr, "usage: seq_read [--seconds N] [--size BYTES] [--depth N] [--initiator IQN] "
			"URL\n");
	return 2;
}
