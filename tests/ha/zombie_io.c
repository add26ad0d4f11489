/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client of ha.zombie-fence (tests/ha/zombie_fence.sh): writes a region
 * of one LU with a one-byte tag, many commands at once, and reads it back.
 * libiscsi's asynchronous API; every wait bounded.
 *
 *   zombie_io --write TAG [--mib N] [--chunk-kib K] [--depth D]
 *             [--hold] [--timeout-s S] [--initiator NAME] URL
 *
 *   Writes blocks [0, N MiB) (default 16 MiB) as WRITE(16)s of K KiB
 *   (default 512), D at a time (default 32); every byte of a block is TAG
 *   except its first 8, which hold its LBA. --hold: all commands are issued
 *   at once and nothing is expected to complete (the gateway's backend is
 *   stopped): once libiscsi has sent every PDU it prints "all sent" and
 *   waits until killed. Otherwise a command answered NOT READY, UNIT
 *   ATTENTION, BUSY or with a transport error is sent again 100 ms later
 *   (re-logging in after a transport error) until S seconds (default 60)
 *   passed; it prints "written N commands, retries R" and exits 0 when
 *   every command ended GOOD.
 *
 *   zombie_io --check TAG [--mib N] [--initiator NAME] URL
 *
 *   Reads the region and prints "checked B blocks, tag TAG in G, stale S,
 *   other O" (S: blocks holding --stale's tag, default 0x0d; O: anything
 *   else, e.g. a block whose LBA stamp is wrong). Exit 0 when all B blocks
 *   hold TAG, 1 otherwise.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "iscsi_wait.h"

#define MAX_CMDS 4096

struct cmd {
	uint64_t lba;
	uint32_t nblocks;
	bool busy, done;
	uint64_t not_before_ms;
};

static struct iscsi_context *ctx;
static const char *initiator = "iqn.2026-11.org.isergw:zombie-host";
static struct {
	char portal[300], target[256];
	int lun;
} u, *url = &u;
static uint32_t bs = 512;
static uint8_t *buf;
static struct cmd cmds[MAX_CMDS];
static unsigned int ncmds, ndone, nbusy, retries, nfailed;
static bool conn_broken, hold;

static void die(const char *what)
{
	fprintf(stderr, "zombie_io: %s: %s\n", what, ctx ? iscsi_get_error(ctx) : "");
	exit(2);
}

static void connect_ctx(uint64_t deadline)
{
	struct iscsi_wait w = { 0 };

	if (ctx)
		iscsi_destroy_context(ctx);
	ctx = iscsi_create_context(initiator);
	if (ctx)
		iscsi_set_timeout(ctx, hold ? 0 : 5);
	if (!ctx)
		die("context");
	iscsi_set_targetname(ctx, url->target);
	iscsi_set_session_type(ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(ctx, ISCSI_HEADER_DIGEST_NONE);
	iscsi_set_noautoreconnect(ctx, 1);
	if (iscsi_full_connect_async(ctx, url->portal, url->lun, iscsi_wait_cb, &w) ||
	    iscsi_wait_until(ctx, &w.done, deadline) || w.status != SCSI_STATUS_GOOD)
		die("login");
	/* clear unit attentions (power on, capacity) with TEST UNIT READY */
	for (int i = 0; i < 20; i++) {
		struct iscsi_wait t = { 0 };
		int st;

		if (!iscsi_testunitready_task(ctx, url->lun, iscsi_wait_cb, &t) ||
		    iscsi_wait_until(ctx, &t.done, deadline))
			die("test unit ready");
		st = t.status;
		if (t.task)
			scsi_free_scsi_task(t.task);
		if (st == SCSI_STATUS_GOOD)
			break;
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	conn_broken = false;
}

static void write_cb(struct iscsi_context *c, int status, void *data, void *priv)
{
	struct cmd *k = priv;
	struct scsi_task *t = data;
	bool again;

	(void)c;
	k->busy = false;
	nbusy--;
	again = status == SCSI_STATUS_BUSY || status == SCSI_STATUS_TASK_SET_FULL ||
		status < 0 || status == SCSI_STATUS_CANCELLED || status == SCSI_STATUS_ERROR ||
		status == SCSI_STATUS_TIMEOUT ||
		(status == SCSI_STATUS_CHECK_CONDITION &&
		 (t->sense.key == SCSI_SENSE_NOT_READY || t->sense.key == SCSI_SENSE_UNIT_ATTENTION));
	if (status == SCSI_STATUS_GOOD) {
		k->done = true;
		ndone++;
	} else if (again) {
		retries++;
		k->not_before_ms = iscsi_now_ms() + 100;
		if (status < 0 || status == SCSI_STATUS_ERROR || status == SCSI_STATUS_CANCELLED)
			conn_broken = true;
	} else {
		fprintf(stderr, "zombie_io: write at LBA %" PRIu64 ": status 0x%x sense %x/%04x\n",
			k->lba, status, t ? t->sense.key : 0, t ? t->sense.ascq : 0);
		k->done = true;
		nfailed++;
		ndone++;
	}
	if (t)
		scsi_free_scsi_task(t);
}

static int issue(struct cmd *k)
{
	uint8_t *data = buf + k->lba * bs;
	struct scsi_task *t = iscsi_write16_task(ctx, url->lun, k->lba, data, k->nblocks * bs, bs,
						 0, 0, 0, 0, 0, write_cb, k);

	if (!t)
		return -ENOMEM;
	k->busy = true;
	nbusy++;
	return 0;
}

static void fill(uint8_t tag, uint64_t nblocks)
{
	memset(buf, tag, nblocks * bs);
	for (uint64_t lba = 0; lba < nblocks; lba++)
		memcpy(buf + lba * bs, &lba, sizeof(lba));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "write", required_argument, NULL, 'w' }, { "check", required_argument, NULL, 'c' },
		{ "mib", required_argument, NULL, 'm' }, { "chunk-kib", required_argument, NULL, 'k' },
		{ "depth", required_argument, NULL, 'd' }, { "hold", no_argument, NULL, 'H' },
		{ "timeout-s", required_argument, NULL, 't' },
		{ "initiator", required_argument, NULL, 'i' },
		{ "stale", required_argument, NULL, 's' }, { NULL, 0, NULL, 0 },
	};
	unsigned long mib = 16, chunk_kib = 512, depth = 32, timeout_s = 60;
	int tag = -1, stale = 0x0d, o;
	bool check = false;
	uint64_t nblocks, deadline;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'w': tag = (int)strtol(optarg, NULL, 0); break;
		case 'c': tag = (int)strtol(optarg, NULL, 0); check = true; break;
		case 'm': mib = strtoul(optarg, NULL, 0); break;
		case 'k': chunk_kib = strtoul(optarg, NULL, 0); break;
		case 'd': depth = strtoul(optarg, NULL, 0); break;
		case 'H': hold = true; break;
		case 't': timeout_s = strtoul(optarg, NULL, 0); break;
		case 'i': initiator = optarg; break;
		case 's': stale = (int)strtol(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (optind + 1 != argc || tag < 0 || tag > 255 || !mib || !chunk_kib || !depth) {
		fprintf(stderr, "usage: zombie_io --write TAG|--check TAG [options] URL\n");
		return 2;
	}
	ctx = iscsi_create_context(initiator);
	{
		struct iscsi_url *pu = ctx ? iscsi_parse_full_url(ctx, argv[optind]) : NULL;

		if (!pu)
			die("URL");
		snprintf(u.portal, sizeof(u.portal), "%s", pu->portal);
		snprintf(u.target, sizeof(u.target), "%s", pu->target);
		u.lun = pu->lun;
		iscsi_destroy_url(pu);
	}
	deadline = iscsi_now_ms() + timeout_s * 1000u;
	connect_ctx(deadline);
	nblocks = (uint64_t)mib << 20 >> 9;
	buf = malloc(nblocks * bs);
	if (!buf)
		die("memory");
	if (check) {
		uint64_t good = 0, nstale = 0, other = 0;

		for (uint64_t lba = 0; lba < nblocks; lba += 512) {
			struct iscsi_wait w = { 0 };

			if (!iscsi_read16_task(ctx, url->lun, lba, 512 * bs, bs, 0, 0, 0, 0, 0, iscsi_wait_cb,
					       &w) || iscsi_wait_until(ctx, &w.done, deadline) ||
			    w.status != SCSI_STATUS_GOOD)
				die("read");
			for (uint64_t b = 0; b < 512; b++) {
				const uint8_t *p = w.task->datain.data + b * bs;
				uint64_t stamp;
				bool all = true;

				memcpy(&stamp, p, sizeof(stamp));
				for (uint32_t i = 8; i < bs && all; i++)
					all = p[i] == p[8];
				if (stamp == lba + b && all && p[8] == tag)
					good++;
				else if (stamp == lba + b && all && p[8] == stale)
					nstale++;
				else
					other++;
			}
			scsi_free_scsi_task(w.task);
		}
		printf("checked %" PRIu64 " blocks, tag 0x%02x in %" PRIu64 ", stale %" PRIu64
		       ", other %" PRIu64 "\n", nblocks, tag, good, nstale, other);
		return good == nblocks ? 0 : 1;
	}
	fill((uint8_t)tag, nblocks);
	for (uint64_t lba = 0; lba < nblocks && ncmds < MAX_CMDS; ncmds++) {
		uint64_t n = (uint64_t)chunk_kib * 1024u / bs;

		if (n > nblocks - lba)
			n = nblocks - lba;
		cmds[ncmds] = (struct cmd){ .lba = lba, .nblocks = (uint32_t)n };
		lba += n;
	}
	if (hold) {
		bool never = false;

		for (unsigned int i = 0; i < ncmds; i++)
			if (issue(&cmds[i]))
				die("write");
		/* every PDU out of libiscsi (the gateway took all the data), then wait */
		while (iscsi_out_queue_length(ctx) > 0 && iscsi_now_ms() < deadline) {
			struct pollfd p = { .fd = iscsi_get_fd(ctx),
					    .events = (short)iscsi_which_events(ctx) };

			if (poll(&p, 1, 100) < 0 && errno != EINTR)
				die("poll");
			if (iscsi_service(ctx, p.revents) < 0)
				die("service");
		}
		printf("all sent: %u commands of %lu KiB, %u completed\n", ncmds, chunk_kib, ndone);
		fflush(stdout);
		iscsi_wait_until(ctx, &never, deadline);
		return 0;
	}
	while (ndone < ncmds) {
		struct pollfd p;
		uint64_t now = iscsi_now_ms();

		if (now >= deadline) {
			fprintf(stderr, "zombie_io: %u of %u writes not done in %lu s\n", ncmds - ndone,
				ncmds, timeout_s);
			return 1;
		}
		if (conn_broken && nbusy == 0)
			connect_ctx(deadline);
		for (unsigned int i = 0; i < ncmds && nbusy < depth && !conn_broken; i++)
			if (!cmds[i].done && !cmds[i].busy && cmds[i].not_before_ms <= now &&
			    issue(&cmds[i]))
				conn_broken = true;
		p = (struct pollfd){ .fd = iscsi_get_fd(ctx), .events = (short)iscsi_which_events(ctx) };
		if (poll(&p, 1, 50) < 0 && errno != EINTR)
			die("poll");
		if (iscsi_service(ctx, p.revents) < 0) {
			/* a dropped connection: its commands come back cancelled */
			conn_broken = true;
			iscsi_destroy_context(ctx);
			ctx = NULL;
			for (unsigned int i = 0; i < ncmds; i++)
				if (cmds[i].busy) {
					cmds[i].busy = false;
					nbusy--;
					retries++;
				}
			connect_ctx(deadline);
		}
	}
	printf("written %u commands, retries %u, failed %u\n", ncmds, retries, nfailed);
	return nfailed ? 1 : 0;
}
