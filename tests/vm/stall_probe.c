// SPDX-License-Identifier: Apache-2.0
/*
 * stall_probe: how long a host's I/O stops while a cluster fails over.
 *
 *   stall_probe [--interval-ms 10] [--threshold-ms 50] [--span MIB] DEVICE
 *
 * Reads 4 KiB with O_DIRECT from DEVICE every --interval-ms (the next read is
 * issued at the next tick, or at once when a read took longer than a tick),
 * at offsets walking through the first --span MiB (default 16). Prints to
 * stdout, one line each, flushed at once (times: CLOCK_REALTIME, seconds
 * since the epoch with microseconds, to match a test script's clock):
 *
 *   stall START END SECONDS   no read completed between START and END (the
 *                             previous completion and this one) for longer
 *                             than --threshold-ms
 *   error TIME ERRNO TEXT     a read failed (the host saw an I/O error)
 *   tick TIME READS           once a second: reads completed so far, the
 *                             last one at TIME (a script waits for a tick
 *                             after an event before it reads the stalls)
 *   done READS ERRORS LONGEST on SIGTERM/SIGINT: the totals and the longest
 *                             gap between completions in seconds
 *
 * Exit status: 0 after SIGTERM/SIGINT when no read failed, 1 when one did,
 * 2 for a usage error or when DEVICE cannot be opened.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void print_time(int64_t ns)
{
	printf("%" PRId64 ".%06" PRId64, ns / 1000000000, ns % 1000000000 / 1000);
}

static int parse_ms(const char *s, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > 600000)
		return -EINVAL;
	*out = v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: stall_probe [--interval-ms MS] [--threshold-ms MS] [--span MIB] DEVICE\n"
		   "  reads 4 KiB (O_DIRECT) from DEVICE every MS (default 10) and prints every gap\n"
		   "  between completions longer than --threshold-ms (default 50), each read error,\n"
		   "  a tick line per second and, on SIGTERM/SIGINT, the totals.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "threshold-ms", required_argument, NULL, 't' },
		{ "span", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	long interval_ms = 10, threshold_ms = 50, span_mib = 16;
	int64_t last_done, next_issue, last_tick, longest = 0, realtime_off;
	uint64_t reads = 0, errors = 0, blocks, idx = 0;
	struct sigaction sa = { .sa_handler = on_signal };
	void *buf = NULL;
	int c, fd;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (parse_ms(optarg, &interval_ms) < 0)
				goto bad;
			break;
		case 't':
			if (parse_ms(optarg, &threshold_ms) < 0)
				goto bad;
			break;
		case 's':
			if (parse_ms(optarg, &span_mib) < 0)
				goto bad;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	fd = open(argv[optind], O_RDONLY | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "stall_probe: cannot open %s: %s\n", argv[optind], strerror(errno));
		return 2;
	}
	if (posix_memalign(&buf, BLOCK, BLOCK) != 0) {
		fprintf(stderr, "stall_probe: out of memory\n");
		close(fd);
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	blocks = (uint64_t)span_mib * 1024 * 1024 / BLOCK;
	/* gaps on the monotonic clock, printed on the real-time clock */
	realtime_off = now_ns(CLOCK_REALTIME) - now_ns(CLOCK_MONOTONIC);
	last_done = last_tick = next_issue = now_ns(CLOCK_MONOTONIC);
	while (!stop) {
		int64_t t = now_ns(CLOCK_MONOTONIC), gap;
		ssize_t n;

		if (t < next_issue) {
			struct timespec ts = { .tv_sec = (next_issue - t) / 1000000000,
					       .tv_nsec = (next_issue - t) % 1000000000 };

			nanosleep(&ts, NULL); /* EINTR: the loop looks at stop */
			continue;
		}
		n = pread(fd, buf, BLOCK, (off_t)(idx++ % blocks) * BLOCK);
		if (n < 0 && errno == EINTR)
			continue;
		t = now_ns(CLOCK_MONOTONIC);
		if (n != BLOCK) {
			int e = n < 0 ? errno : EIO;

			errors++;
			printf("error ");
			print_time(t + realtime_off);
			printf(" %d %s\n", e, n < 0 ? strerror(e) : "short read");
		} else {
			reads++;
			gap = t - last_done;
			if (gap > longest)
				longest = gap;
			if (gap > threshold_ms * 1000000) {
				printf("stall ");
				print_time(last_done + realtime_off);
				printf(" ");
				print_time(t + realtime_off);
				printf(" %.3f\n", gap / 1e9);
			}
			last_done = t;
		}
		if (t - last_tick >= 1000000000) {
			printf("tick ");
			print_time(last_done + realtime_off);
			printf(" %" PRIu64 "\n", reads);
			last_tick = t;
		}
		next_issue += interval_ms * 1000000;
		if (next_issue < t)
			next_issue = t;
	}
	printf("done %" PRIu64 " %" PRIu64 " %.3f\n", reads, errors, longest / 1e9);
	free(buf);
	close(fd);
	return errors ? 1 : 0;
bad:
	fprintf(stderr, "stall_probe: bad value for --%s: %s\n", opts[c == 'i' ? 0 : c == 't' ? 1 : 2].name,
		optarg);
	return 2;
}
