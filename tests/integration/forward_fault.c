/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fault client for a forwarded LUN (libiscsi, synchronous API): writes and
 * verifies a random pattern through the gateway while the test kills and
 * restarts the backend.
 *
 *   forward_fault --url iscsi://HOST:PORT/IQN/LUN --seconds N [--region-mib N]
 *                 [--seed N] [--mark FILE] [--max-kib N]
 *   forward_fault --url URL --probe tur|read|readcap|bigread|write|watch|
 *                                   reserve|clear|standby|unavailable|active
 *
 * Phase 1 (writes, N/2 s): random extents (4 KiB .. --max-kib, every fourth
 * with FUA) each written with a new generation number, and one time in four
 * a COMPARE AND WRITE of 1..8 blocks of a 64-block area after the region
 * (its compare data the area's current generation: it must never
 * miscompare, so an interrupted one is neither lost nor applied twice);
 * every block's content
 * is a function of (seed, LBA, generation). Phase 2 (reads, N/2 s): random
 * extents read and compared with the last generation written. Then the whole
 * region is read and compared. A command that fails is counted as a
 * host-visible error and issued again (as a host would), so that the final
 * check can tell lost writes from failed ones. --mark FILE: the phase name
 * is written there when a phase starts (the script times its kills by it).
 *
 * Prints "forward_fault: commands N, verified V blocks, host-visible errors E,
 * lost or corrupt blocks L" and exits 1 if L > 0 or the LUN went away.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define BS_MAX 4096u
static uint32_t g_max_blocks;   /* --max-kib (default 256 KiB) in blocks */

static uint64_t g_seed = 1;
static uint32_t g_bs;
static uint64_t g_commands, g_errors, g_verified, g_bad;
static uint16_t *g_gen;         /* generation per block of the region, 0 = never written */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fill_block(uint8_t *p, uint64_t lba, uint16_t gen)
{
	uint64_t s = mix(g_seed ^ (lba << 16) ^ gen);

	for (uint32_t i = 0; i < g_bs; i += 8) {
		s = mix(s);
		memcpy(p + i, &s, 8);
	}
	memcpy(p, &lba, 8);
	memcpy(p + 8, &gen, 2);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void mark(const char *file, const char *phase)
{
	FILE *f;

	if (!file)
		return;
	f = fopen(file, "w");
	if (f) {
		fprintf(f, "%s\n", phase);
		fclose(f);
	}
}

/* One command, retried until GOOD (each failure is a host-visible error). */
static bool do_io(struct iscsi_context *iscsi, int lun, bool write, uint64_t lba, uint32_t n,
		  uint8_t *buf, bool fua)
{
	for (int tries = 0; tries < 1000; tries++) {
		struct scsi_task *t;
		bool ok;

		g_commands++;
		if (write)
			t = iscsi_write16_sync(iscsi, lun, lba, buf, n * g_bs, (int)g_bs, 0, 0, fua,
					       0, 0);
		else
			t = iscsi_read16_sync(iscsi, lun, lba, n * g_bs, (int)g_bs, 0, 0, 0, 0, 0);
		ok = t && t->status == SCSI_STATUS_GOOD;
		if (ok && !write)
			memcpy(buf, t->datain.data, (size_t)n * g_bs);
		if (!ok) {
			g_errors++;
			if (g_errors <= 10)
				fprintf(stderr, "forward_fault: %s LBA %" PRIu64 " x%u failed: %s%s\n",
					write ? "write" : "read", lba, n,
					t ? "" : iscsi_get_error(iscsi),
					t ? scsi_sense_ascq_str(t->sense.ascq) : "");
		}
		if (t)
			scsi_free_scsi_task(t);
		if (ok)
			return true;
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return false;
}

/*
 * COMPARE AND WRITE of n blocks of the CAW area (generation cgen[i] on disk
 * → generation `to`), retried like do_io. A MISCOMPARE on the first try
 * means the gateway applied it twice or lost a previous one: counted as
 * corrupt. After a failed try it may have been applied already: then the
 * blocks must hold `to`.
 */
#define CAW_AREA 64u
static uint64_t g_caws;

static void do_caw(struct iscsi_context *iscsi, int lun, uint64_t lba, uint32_t n, uint16_t *cgen,
		   uint16_t to, uint8_t *buf)
{
	for (uint32_t i = 0; i < n; i++) {
		fill_block(buf + (size_t)i * g_bs, lba + i, cgen[i]);
		fill_block(buf + (size_t)(n + i) * g_bs, lba + i, to);
	}
	for (int tries = 0; tries < 1000; tries++) {
		struct scsi_task *t;
		struct timespec ts = { 0, 200 * 1000 * 1000 };

		g_commands++;
		t = iscsi_compareandwrite_sync(iscsi, lun, lba, buf, 2 * n * g_bs, (int)g_bs, 0, 0, 0,
					       0, 0);
		if (t && t->status == SCSI_STATUS_GOOD) {
			scsi_free_scsi_task(t);
			for (uint32_t i = 0; i < n; i++)
				cgen[i] = to;
			g_caws++;
			return;
		}
		if (t && t->status == SCSI_STATUS_CHECK_CONDITION &&
		    t->sense.key == SCSI_SENSE_MISCOMPARE) {
			scsi_free_scsi_task(t);
			if (tries == 0) {
				g_bad++;
				fprintf(stderr, "forward_fault: COMPARE AND WRITE LBA %" PRIu64 " x%u: "
					"MISCOMPARE on the first try\n", lba, n);
				return;
			}
			/* an earlier try may have been applied: it is if the blocks hold `to` */
			for (uint32_t i = 0; i < n; i++)
				cgen[i] = to;
			return;
		}
		g_errors++;
		if (g_errors <= 10)
			fprintf(stderr, "forward_fault: COMPARE AND WRITE LBA %" PRIu64 " x%u failed: %s\n",
				lba, n, t ? scsi_sense_ascq_str(t->sense.ascq) : iscsi_get_error(iscsi));
		if (t)
			scsi_free_scsi_task(t);
		nanosleep(&ts, NULL);
	}
}

static void check(const uint8_t *buf, uint64_t first, uint64_t lba, uint32_t n)
{
	uint8_t want[BS_MAX];

	for (uint32_t i = 0; i < n; i++) {
		uint16_t gen = g_gen[lba - first + i];

		if (!gen)
			continue;
		fill_block(want, lba + i, gen);
		if (memcmp(want, buf + (size_t)i * g_bs, g_bs) != 0) {
			g_bad++;
			if (g_bad <= 10)
				fprintf(stderr, "forward_fault: LBA %" PRIu64 ": not generation %u\n",
					lba + i, gen);
		} else {
			g_verified++;
		}
	}
}

/*
 * --probe reserve: register key 0x1234 (ignoring any existing key) and take
 * a WRITE EXCLUSIVE persistent reservation; --probe clear: register 0x5678
 * and CLEAR every registration and reservation. Returns the last task.
 */
static struct scsi_task *pr_out(struct iscsi_context *iscsi, int lun, bool reserve)
{
	struct scsi_persistent_reserve_out_basic b = { 0 };
	struct scsi_task *t;

	b.service_action_reservation_key = reserve ? 0x1234 : 0x5678;
	t = iscsi_persistent_reserve_out_sync(iscsi, lun,
		SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY, 0, 0, &b);
	if (!t || t->status != SCSI_STATUS_GOOD)
		return t;
	scsi_free_scsi_task(t);
	memset(&b, 0, sizeof(b));
	b.reservation_key = reserve ? 0x1234 : 0x5678;
	return iscsi_persistent_reserve_out_sync(iscsi, lun,
		reserve ? SCSI_PERSISTENT_RESERVE_RESERVE : SCSI_PERSISTENT_RESERVE_CLEAR, 0,
		reserve ? SCSI_PERSISTENT_RESERVE_TYPE_WRITE_EXCLUSIVE : 0, &b);
}

/* --probe standby|unavailable|active: SET TARGET PORT GROUPS for group 1. */
static struct scsi_task *stpg(struct iscsi_context *iscsi, int lun, uint8_t state)
{
	static uint8_t param[8];
	uint8_t cdb[12] = { 0xa4, 0x0a, 0, 0, 0, 0, 0, 0, 0, sizeof(param), 0, 0 };
	struct iscsi_data d = { .size = sizeof(param), .data = param };
	struct scsi_task *t = scsi_create_task(sizeof(cdb), cdb, SCSI_XFER_WRITE, sizeof(param));

	if (!t)
		return NULL;
	memset(param, 0, sizeof(param));
	param[4] = state;
	param[7] = 1;           /* target port group 1 */
	return iscsi_scsi_command_sync(iscsi, lun, t, &d);
}

/* "GOOD", "RESERVATION_CONFLICT" or "KEY ASC/ASCQ ascq-name" */
static void print_status(const struct scsi_task *t)
{
	if (t->status == SCSI_STATUS_GOOD)
		printf("GOOD\n");
	else if (t->status == SCSI_STATUS_CHECK_CONDITION)
		printf("%s %02x/%02x %s\n", scsi_sense_key_str(t->sense.key), t->sense.ascq >> 8,
		       t->sense.ascq & 0xff, scsi_sense_ascq_str(t->sense.ascq));
	else if (t->status == SCSI_STATUS_RESERVATION_CONFLICT)
		printf("RESERVATION_CONFLICT\n");
	else
		printf("STATUS 0x%x\n", t->status);
}

/*
 * --probe watch: one session that stays logged in across a change of the
 * LUN. TEST UNIT READY until it is not a unit attention, prints that answer
 * and writes "ready" to --mark; then TEST UNIT READY every 200 ms, printing
 * every answer that differs from the previous one, until GOOD (at most
 * 600 tries: a guard against a hang, not a timing check); then READ
 * CAPACITY(16) ("capacity N blocks of B") and a READ(16) of LBA 0.
 */
static int watch(struct iscsi_context *iscsi, struct iscsi_url *iu, const char *markf)
{
	char last[128] = "", cur[128];
	struct scsi_task *t;
	int good = 0;

	for (int i = 0; i < 10; i++) {
		t = iscsi_testunitready_sync(iscsi, iu->lun);
		if (!t)
			return 1;
		if (!(t->status == SCSI_STATUS_CHECK_CONDITION &&
		      t->sense.key == SCSI_SENSE_UNIT_ATTENTION)) {
			print_status(t);
			scsi_free_scsi_task(t);
			break;
		}
		scsi_free_scsi_task(t);
	}
	fflush(stdout);
	mark(markf, "ready");
	for (int i = 0; i < 600 && !good; i++) {
		struct timespec ts = { 0, 200 * 1000 * 1000 };

		t = iscsi_testunitready_sync(iscsi, iu->lun);
		if (!t) {
			printf("ERROR %s\n", iscsi_get_error(iscsi));
			return 1;
		}
		good = t->status == SCSI_STATUS_GOOD;
		snprintf(cur, sizeof(cur), "%d/%d/%04x", t->status, t->sense.key, t->sense.ascq);
		if (strcmp(cur, last) != 0) {
			print_status(t);
			fflush(stdout);
			snprintf(last, sizeof(last), "%s", cur);
		}
		scsi_free_scsi_task(t);
		if (!good)
			nanosleep(&ts, NULL);
	}
	t = iscsi_readcapacity16_sync(iscsi, iu->lun);
	if (t && t->status == SCSI_STATUS_GOOD) {
		struct scsi_readcapacity16 *rc = scsi_datain_unmarshall(t);

		printf("capacity %" PRIu64 " blocks of %u\n", rc ? rc->returned_lba + 1 : 0,
		       rc ? rc->block_length : 0);
	} else if (t) {
		printf("READ CAPACITY: ");
		print_status(t);
	}
	if (t)
		scsi_free_scsi_task(t);
	t = iscsi_read16_sync(iscsi, iu->lun, 0, 512, 512, 0, 0, 0, 0, 0);
	printf("READ: ");
	if (t)
		print_status(t);
	else
		printf("ERROR %s\n", iscsi_get_error(iscsi));
	if (t)
		scsi_free_scsi_task(t);
	iscsi_logout_sync(iscsi);
	iscsi_destroy_url(iu);
	iscsi_destroy_context(iscsi);
	return good ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "seconds", required_argument, NULL, 's' },
		{ "region-mib", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "mark", required_argument, NULL, 'm' },
		{ "probe", required_argument, NULL, 'p' },
		{ "max-kib", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	const char *url = NULL, *markf = NULL, *probe = NULL;
	double secs = 20, t0;
	uint64_t region_mib = 32, first = 0, count, nblocks, max_kib = 256;
	unsigned int nsizes = 0;
	uint16_t caw_gen[CAW_AREA];
	bool caw_ok;
	struct iscsi_context *iscsi;
	struct iscsi_url *iu;
	struct scsi_task *t;
	uint8_t *buf;
	uint16_t gen = 0;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'u': url = optarg; break;
		case 's': secs = strtod(optarg, NULL); break;
		case 'r': region_mib = strtoull(optarg, NULL, 10); break;
		case 'S': g_seed = strtoull(optarg, NULL, 10); break;
		case 'm': markf = optarg; break;
		case 'p': probe = optarg; break;
		case 'k': max_kib = strtoull(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (!url) {
		fprintf(stderr, "usage: forward_fault --url URL [--seconds N]\n");
		return 2;
	}
	iscsi = iscsi_create_context("iqn.2026-11.org.isergw:forward-fault");
	iu = iscsi ? iscsi_parse_full_url(iscsi, url) : NULL;
	if (!iu) {
		fprintf(stderr, "forward_fault: bad URL %s\n", url);
		return 2;
	}
	iscsi_set_targetname(iscsi, iu->target);
	iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(iscsi, ISCSI_HEADER_DIGEST_NONE);
	/* a probe logs in without full_connect's TEST UNIT READY (the LUN may be not ready) */
	if (probe ? (iscsi_connect_sync(iscsi, iu->portal) != 0 || iscsi_login_sync(iscsi) != 0)
		  : iscsi_full_connect_sync(iscsi, iu->portal, iu->lun) != 0) {
		fprintf(stderr, "forward_fault: login failed: %s\n", iscsi_get_error(iscsi));
		return 1;
	}
	if (probe && strcmp(probe, "watch") == 0)
		return watch(iscsi, iu, markf);
	if (probe) {
		/* one TEST UNIT READY, READ CAPACITY(16) or READ(16) of LBA 0; prints GOOD or the sense */
		for (int i = 0; i < 4; i++) {
			if (strcmp(probe, "readcap") == 0) {
				t = iscsi_readcapacity16_sync(iscsi, iu->lun);
				if (t && t->status == SCSI_STATUS_GOOD) {
					struct scsi_readcapacity16 *rc = scsi_datain_unmarshall(t);

					printf("GOOD %" PRIu64 " blocks of %u\n",
					       rc ? rc->returned_lba + 1 : 0, rc ? rc->block_length : 0);
					scsi_free_scsi_task(t);
					iscsi_destroy_url(iu);
					iscsi_destroy_context(iscsi);
					return 0;
				}
			} else if (strcmp(probe, "reserve") == 0 || strcmp(probe, "clear") == 0) {
				t = pr_out(iscsi, iu->lun, strcmp(probe, "reserve") == 0);
			} else if (strcmp(probe, "standby") == 0 || strcmp(probe, "unavailable") == 0 ||
				   strcmp(probe, "active") == 0) {
				t = stpg(iscsi, iu->lun, probe[0] == 's' ? 2 : probe[0] == 'u' ? 3 : 0);
			} else if (strcmp(probe, "bigread") == 0) {
				/* 8 MiB in one command */
				t = iscsi_read16_sync(iscsi, iu->lun, 0, 8u << 20, 512, 0, 0, 0, 0, 0);
			} else if (strcmp(probe, "write") == 0) {
				static uint8_t blk[512];

				t = iscsi_write16_sync(iscsi, iu->lun, 0, blk, 512, 512, 0, 0, 0, 0, 0);
			} else {
				t = strcmp(probe, "tur") == 0 ? iscsi_testunitready_sync(iscsi, iu->lun)
					: iscsi_read16_sync(iscsi, iu->lun, 0, 512, 512, 0, 0, 0, 0, 0);
			}
			if (!t) {
				printf("ERROR %s\n", iscsi_get_error(iscsi));
				return 1;
			}
			if (t->status == SCSI_STATUS_CHECK_CONDITION &&
			    t->sense.key == SCSI_SENSE_UNIT_ATTENTION) {
				scsi_free_scsi_task(t);
				continue;
			}
			break;
		}
		if (t->status == SCSI_STATUS_GOOD)
			printf("GOOD\n");
		else
			print_status(t);
		scsi_free_scsi_task(t);
		iscsi_destroy_url(iu);
		iscsi_destroy_context(iscsi);
		return 0;
	}
	t = iscsi_readcapacity16_sync(iscsi, iu->lun);
	if (!t || t->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "forward_fault: READ CAPACITY failed\n");
		return 1;
	}
	{
		struct scsi_readcapacity16 *rc = scsi_datain_unmarshall(t);

		g_bs = rc->block_length;
		nblocks = rc->returned_lba + 1;
	}
	scsi_free_scsi_task(t);
	if (g_bs > BS_MAX || g_bs < 512) {
		fprintf(stderr, "forward_fault: block size %u unsupported\n", g_bs);
		return 1;
	}
	count = region_mib * 1024 * 1024 / g_bs;
	if (count > nblocks)
		count = nblocks;
	g_max_blocks = (uint32_t)(max_kib * 1024 / g_bs);
	if (g_max_blocks < 8)
		g_max_blocks = 8;
	while ((8u << nsizes) <= g_max_blocks)
		nsizes++;       /* extents of 8 << 0 .. 8 << (nsizes - 1) blocks */
	g_gen = calloc(count, sizeof(*g_gen));
	buf = malloc((size_t)(g_max_blocks > 2 * CAW_AREA ? g_max_blocks : 2 * CAW_AREA) * g_bs);
	if (!g_gen || !buf)
		return 1;
	srand((unsigned int)g_seed);

	/* the CAW area after the region, every block at generation 1 first */
	caw_ok = count + CAW_AREA <= nblocks;
	if (caw_ok) {
		for (uint32_t i = 0; i < CAW_AREA; i++) {
			fill_block(buf + (size_t)i * g_bs, count + i, 1);
			caw_gen[i] = 1;
		}
		if (!do_io(iscsi, iu->lun, true, count, CAW_AREA, buf, false))
			goto lost_lun;
	}
	mark(markf, "write");
	t0 = now_s();
	while (now_s() - t0 < secs / 2) {
		uint32_t n = 8u << (rand() % (int)nsizes);  /* 8 .. max-kib */
		uint64_t lba;

		if (caw_ok && rand() % 4 == 0) {
			uint32_t cn = 1u << (rand() % 4);       /* 1 .. 8 blocks */
			uint32_t at = (uint32_t)rand() % (CAW_AREA - cn + 1);

			gen = (uint16_t)(gen % 65000 + 1);
			do_caw(iscsi, iu->lun, count + at, cn, &caw_gen[at], gen, buf);
			continue;
		}

		if (n > count)
			n = (uint32_t)count;
		lba = first + (uint64_t)rand() % (count - n + 1);
		gen = (uint16_t)(gen % 65000 + 1);
		for (uint32_t i = 0; i < n; i++)
			fill_block(buf + (size_t)i * g_bs, lba + i, gen);
		if (!do_io(iscsi, iu->lun, true, lba, n, buf, rand() % 4 == 0))
			goto lost_lun;
		for (uint32_t i = 0; i < n; i++)
			g_gen[lba - first + i] = gen;
	}
	mark(markf, "read");
	t0 = now_s();
	while (now_s() - t0 < secs / 2) {
		uint32_t n = 8u << (rand() % (int)nsizes);
		uint64_t lba;

		if (n > count)
			n = (uint32_t)count;
		lba = first + (uint64_t)rand() % (count - n + 1);
		if (!do_io(iscsi, iu->lun, false, lba, n, buf, false))
			goto lost_lun;
		check(buf, first, lba, n);
	}
	mark(markf, "verify");
	for (uint64_t lba = first; lba < first + count; lba += g_max_blocks) {
		uint32_t n = (uint32_t)(first + count - lba < g_max_blocks ? first + count - lba
									   : g_max_blocks);

		if (!do_io(iscsi, iu->lun, false, lba, n, buf, false))
			goto lost_lun;
		check(buf, first, lba, n);
	}
	if (caw_ok) {
		if (!do_io(iscsi, iu->lun, false, count, CAW_AREA, buf, false))
			goto lost_lun;
		for (uint32_t i = 0; i < CAW_AREA; i++) {
			uint8_t want[BS_MAX];

			fill_block(want, count + i, caw_gen[i]);
			if (memcmp(want, buf + (size_t)i * g_bs, g_bs) != 0) {
				g_bad++;
				fprintf(stderr, "forward_fault: CAW area LBA %" PRIu64
					": not generation %u\n", count + i, caw_gen[i]);
			} else {
				g_verified++;
			}
		}
	}
	mark(markf, "done");
	printf("forward_fault: commands %" PRIu64 ", verified %" PRIu64 " blocks, compare-and-writes "
	       "%" PRIu64 ", host-visible errors %" PRIu64 ", lost or corrupt blocks %" PRIu64 "\n",
	       g_commands, g_verified, g_caws, g_errors, g_bad);
	iscsi_logout_sync(iscsi);
	iscsi_destroy_url(iu);
	iscsi_destroy_context(iscsi);
	free(buf);
	free(g_gen);
	return g_bad ? 1 : 0;

lost_lun:
	printf("forward_fault: commands %" PRIu64 ", verified %" PRIu64 " blocks, host-visible "
	       "errors %" PRIu64 ", lost or corrupt blocks %" PRIu64 " (gave up: LUN unusable)\n",
	       g_commands, g_verified, g_errors, g_bad);
	return 1;
}
