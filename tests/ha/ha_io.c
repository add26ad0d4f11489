/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HA tests' client (libiscsi, asynchronous API driven one command at a
 * time, every wait bounded by a deadline of our own). Three modes:
 *
 * I/O (default): a multipath initiator writing and verifying one LU.
 *
 *   ha_io [--seed N] [--region-mib N] [--offset-mib N] [--seconds N]
 *         [--timeout-s N] [--limit-s N] [--pause-ms N] [--initiator NAME]
 *         [--follow-ao MS] URL [URL...]
 *
 *   The URLs (iscsi://[USER%SECRET@]HOST:PORT/IQN/LUN: with CHAP when a
 *   user is given) are paths to the same LU through different nodes. It writes extents of 1..64 KiB at random places in the
 *   region, each a new "write number", and reads each back at once. Every
 *   logical block holds a header (magic, seed, LBA, write number) and a
 *   pattern that is a function of those (tests/common/blockpat.h), so a
 *   block that holds an older write than the last acknowledged one (a lost
 *   write, or a stale one landing late) is found and said. A command that ends in NOT READY (any
 *   ASC), UNIT ATTENTION, ABORTED COMMAND, BUSY, a transport error or no
 *   answer within --timeout-s (default 3) is sent again on the next path, as
 *   dm-multipath would; a path that failed on the transport is left alone
 *   for 5 s unless every path is; after a failure on every path it waits
 *   100 ms. It gives up on one command after --limit-s (default 180).
 *   At the end (--seconds, or SIGTERM / SIGINT) it reads the whole region
 *   through a working path and checks every block ever acknowledged:
 *     ha_io: writes W, verified V, mismatches M, longest stall S s, retries R,
 *            logins L
 *   (W write commands acknowledged, V blocks checked at the end, S the
 *   longest time between two completed commands, R commands sent again,
 *   L sessions opened: more than one per path is a session lost.) Every stall over 1 s is
 *   logged on stderr when it ends, with the reasons of its retries. Exit 1
 *   on a mismatch or a command that could not be completed.
 *
 *   --follow-ao MS: a host on dm-multipath with the ALUA handler instead.
 *   At most every MS ms, and after every answer that is not GOOD, it asks
 *   each path for its own target port group's state (REPORT TARGET PORT
 *   GROUPS through that path, the group from VPD 83h) and sends every
 *   command down the path that says Active/Optimized (else
 *   Active/Non-optimized, else any). NOT READY 04/0A (ALUA transitioning)
 *   and unit attentions are retried and counted apart; every other answer
 *   (another NOT READY, RESERVATION CONFLICT, a transport error, ...) is a
 *   failed command, counted, logged ("ha_io: failed ...") and retried.
 *   SIGUSR1 starts a watched stretch, SIGUSR2 ends it; at the end:
 *     ha_io: watched: writes W, failed writes F, not ready other than
 *       transitioning N, transitioning T, unit attentions U
 *     ha_io: writes per path: P0 P1 ...
 *
 * Sampler: REPORT TARGET PORT GROUPS through one node, every MS ms.
 *
 *   ha_io --sample-ms MS --luns L[,L...] [--label NAME] URL
 *
 *   For each LUN, one line per sample on stdout:
 *     NAME T_SEND T_RECV LUN ok OWN_TPG TPG=STATE[p] ...
 *     NAME T_SEND T_RECV LUN err REASON
 *   (times: CLOCK_REALTIME in microseconds; OWN_TPG the target port group
 *   of the port the session is on, from VPD 83h; STATE the SPC code, 0
 *   Active/Optimized, 1 Active/Non-optimized, 2 Standby, 3 Unavailable,
 *   14 Offline, 15 Transitioning; "p": PREF.) Commands time out after 1 s.
 *   Runs until SIGTERM.
 *
 * One write: WRITE(16) of one block at LBA through URL (after clearing unit
 * attentions), its outcome on stdout: "write good", "write sense K/AA/QQ"
 * (hex), "write status 0xSS" or "write transport error".
 *
 *   ha_io --write-once LBA URL
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "blockpat.h"
#include "scsi_pages.h"

#define MAGIC 0x6f695f6168ull /* "ha_io" */
#define MAX_PATHS 8
#define MAX_LUNS 16
#define MAX_EXTENT (64u * 1024u)
#define VERIFY_CHUNK (256u * 1024u)
#define MAX_REPORT 20
#define PATH_HOLD_S 5.0
#define STALL_LOG_S 1.0

enum op { OP_WRITE, OP_READ, OP_RC16, OP_RTPG, OP_VPD83 };

/* outcome of one command on one path */
enum res { RES_OK, RES_RETRY, RES_TRANSPORT, RES_FATAL };

struct path {
	char url[512];
	char portal[300];
	char target[256];
	char user[256];                 /* CHAP, from the URL's user%secret@ */
	char secret[256];
	int lun;
	struct iscsi_context *iscsi;
	int conn_done, conn_status; /* connect and login callbacks: live as long as the path */
	double hold_until;          /* monotonic seconds: left alone until then */
	unsigned logins;            /* sessions opened on this path */
	int own_tpg;                /* sampler, --follow-ao: from VPD 83h, -1 unknown */
	int own_state;              /* --follow-ao: its own group's state, -1 unknown */
	uint64_t writes;            /* write commands completed GOOD through it */
};

/* --follow-ao: what the answers were, all told and within the watched stretches */
struct tally {
	uint64_t writes, failed_writes, not_ready_other, transitioning, unit_attentions;
};

struct cmd {
	int done;
	int status;
};

struct io {
	const char *initiator;
	struct path paths[MAX_PATHS];
	int npaths, cur;
	double timeout_s, limit_s;
	uint32_t bs;
	uint64_t nblocks;
	struct blockpat pat; /* magic MAGIC, --seed, write numbers */
	uint64_t first, count;
	uint64_t *acked; /* per block of the region: write number acknowledged, 0 none */
	uint64_t writes, verified, mismatches, retries, reported;
	double last_done, longest_stall;
	unsigned stall_retries;
	char last_why[160];
	unsigned follow_ms;         /* --follow-ao: 0 off */
	double states_at;           /* when the paths' states were last read */
	struct tally all, watched;
};

static volatile sig_atomic_t stop_flag, watching;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		watching = 1;
	else if (sig == SIGUSR2)
		watching = 0;
	else
		stop_flag = 1;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop_flag)
		;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* ------------------------------------------------------------ one path */

static void conn_cb(struct iscsi_context *iscsi, int status, void *command_data, void *private_data)
{
	struct path *p = private_data;

	(void)iscsi;
	(void)command_data;
	p->conn_done = 1;
	p->conn_status = status;
}

static void cmd_cb(struct iscsi_context *iscsi, int status, void *command_data, void *private_data)
{
	struct cmd *c = private_data;

	(void)iscsi;
	(void)command_data;
	c->done = 1;
	c->status = status;
}

static int path_parse(struct path *p, const char *url, const char *initiator)
{
	struct iscsi_context *tmp = iscsi_create_context(initiator);
	struct iscsi_url *u;

	if (!tmp)
		return -ENOMEM;
	u = iscsi_parse_full_url(tmp, url);
	if (!u) {
		fprintf(stderr, "ha_io: bad url %s: %s\n", url, iscsi_get_error(tmp));
		iscsi_destroy_context(tmp);
		return -EINVAL;
	}
	snprintf(p->url, sizeof(p->url), "%s", url);
	snprintf(p->portal, sizeof(p->portal), "%s", u->portal);
	snprintf(p->target, sizeof(p->target), "%s", u->target);
	snprintf(p->user, sizeof(p->user), "%s", u->user);
	snprintf(p->secret, sizeof(p->secret), "%s", u->passwd);
	p->lun = u->lun;
	p->own_tpg = -1;
	p->own_state = -1;
	iscsi_destroy_url(u);
	iscsi_destroy_context(tmp);
	return 0;
}

static void path_close(struct path *p)
{
	if (p->iscsi) {
		iscsi_destroy_context(p->iscsi);
		p->iscsi = NULL;
	}
	p->own_tpg = -1;
	p->own_state = -1;
}

/* Serves p's connection until *done or the deadline: 0, -ETIMEDOUT or -EIO. */
static int pump(struct path *p, const int *done, double deadline)
{
	while (!*done) {
		double left = deadline - mono();
		struct pollfd pfd;
		int n, ms;

		if (left <= 0)
			return -ETIMEDOUT;
		ms = left > 0.1 ? 100 : (int)(left * 1000) + 1;
		pfd.fd = iscsi_get_fd(p->iscsi);
		pfd.events = (short)iscsi_which_events(p->iscsi);
		pfd.revents = 0;
		n = poll(&pfd, 1, ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -EIO;
		}
		if (iscsi_service(p->iscsi, n > 0 ? pfd.revents : 0) < 0)
			return -EIO;
	}
	return 0;
}

/* Connects and logs in (no TEST UNIT READY: the port may be in any state). */
static int path_open(struct path *p, const char *initiator, double timeout_s, char *why, size_t wl)
{
	double deadline = mono() + timeout_s;
	int rc;

	p->iscsi = iscsi_create_context(initiator);
	if (!p->iscsi) {
		snprintf(why, wl, "no iscsi context");
		return -ENOMEM;
	}
	iscsi_set_session_type(p->iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(p->iscsi, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	iscsi_set_targetname(p->iscsi, p->target);
	iscsi_set_noautoreconnect(p->iscsi, 1);
	iscsi_set_timeout(p->iscsi, (int)(timeout_s + 0.999));
	if (p->user[0] && iscsi_set_initiator_username_pwd(p->iscsi, p->user, p->secret) != 0) {
		snprintf(why, wl, "CHAP: %s", iscsi_get_error(p->iscsi));
		goto err_close;
	}
	p->conn_done = 0;
	if (iscsi_connect_async(p->iscsi, p->portal, conn_cb, p) != 0) {
		snprintf(why, wl, "connect: %s", iscsi_get_error(p->iscsi));
		goto err_close;
	}
	rc = pump(p, &p->conn_done, deadline);
	if (rc || p->conn_status != SCSI_STATUS_GOOD) {
		snprintf(why, wl, "connect: %s", rc == -ETIMEDOUT ? "timed out" : iscsi_get_error(p->iscsi));
		goto err_close;
	}
	p->conn_done = 0;
	if (iscsi_login_async(p->iscsi, conn_cb, p) != 0) {
		snprintf(why, wl, "login: %s", iscsi_get_error(p->iscsi));
		goto err_close;
	}
	rc = pump(p, &p->conn_done, deadline);
	if (rc || p->conn_status != SCSI_STATUS_GOOD) {
		snprintf(why, wl, "login: %s", rc == -ETIMEDOUT ? "timed out" : iscsi_get_error(p->iscsi));
		goto err_close;
	}
	p->logins++;
	return 0;

err_close:
	path_close(p);
	return -EIO;
}

/*
 * One command on path p (opened first when needed). On RES_OK *out is the
 * completed task, the caller frees it. A transport failure closes the path.
 */
static enum res execute(const char *initiator, struct path *p, double timeout_s, enum op op,
			uint64_t lba, uint32_t nb, uint32_t bs, unsigned char *data,
			struct scsi_task **out, char *why, size_t wl)
{
	struct cmd c = { 0 };
	struct scsi_task *t = NULL;
	int rc;

	*out = NULL;
	if (!p->iscsi && path_open(p, initiator, timeout_s, why, wl) != 0)
		return RES_TRANSPORT;
	switch (op) {
	case OP_WRITE:
		t = iscsi_write16_task(p->iscsi, p->lun, lba, data, nb * bs, (int)bs, 0, 0, 0, 0, 0,
				       cmd_cb, &c);
		break;
	case OP_READ:
		t = iscsi_read16_task(p->iscsi, p->lun, lba, nb * bs, (int)bs, 0, 0, 0, 0, 0, cmd_cb,
				      &c);
		break;
	case OP_RC16:
		t = iscsi_readcapacity16_task(p->iscsi, p->lun, cmd_cb, &c);
		break;
	case OP_RTPG:
	case OP_VPD83: {
		unsigned char rtpg[12] = { 0xa3, 0x0a | 0x20, 0, 0, 0, 0, 0, 0, 0x10, 0x00 };
		unsigned char inq[6] = { 0x12, 0x01, 0x83, 0x10, 0x00, 0 };

		if (op == OP_RTPG)
			t = scsi_create_task(sizeof(rtpg), rtpg, SCSI_XFER_READ, 4096);
		else
			t = scsi_create_task(sizeof(inq), inq, SCSI_XFER_READ, 4096);
		if (t && iscsi_scsi_command_async(p->iscsi, p->lun, t, cmd_cb, NULL, &c) != 0) {
			scsi_free_scsi_task(t);
			t = NULL;
		}
		break;
	}
	}
	if (!t) {
		snprintf(why, wl, "not sent: %s", iscsi_get_error(p->iscsi));
		path_close(p);
		return RES_TRANSPORT;
	}
	rc = pump(p, &c.done, mono() + timeout_s);
	if (rc) {
		snprintf(why, wl, "%s", rc == -ETIMEDOUT ? "no answer (timeout)" : iscsi_get_error(p->iscsi));
		if (!c.done)
			iscsi_scsi_cancel_task(p->iscsi, t);
		path_close(p);
		scsi_free_scsi_task(t);
		return RES_TRANSPORT;
	}
	if (c.status == SCSI_STATUS_GOOD) {
		*out = t;
		return RES_OK;
	}
	if (c.status == SCSI_STATUS_CHECK_CONDITION) {
		int key = t->sense.key, asc = (t->sense.ascq >> 8) & 0xff, ascq = t->sense.ascq & 0xff;
		enum res r = (key == SCSI_SENSE_NOT_READY || key == SCSI_SENSE_UNIT_ATTENTION ||
			      key == SCSI_SENSE_COMMAND_ABORTED) ? RES_RETRY : RES_FATAL;
		const char *text = scsi_sense_ascq_str(t->sense.ascq);

		snprintf(why, wl, "sense %x/%02x/%02x%s%s", key, asc, ascq, text ? " " : "",
			 text ? text : "");
		scsi_free_scsi_task(t);
		return r;
	}
	if (c.status == SCSI_STATUS_BUSY || c.status == SCSI_STATUS_TASK_SET_FULL) {
		snprintf(why, wl, "status 0x%02x", c.status);
		scsi_free_scsi_task(t);
		return RES_RETRY;
	}
	if (c.status == SCSI_STATUS_ERROR || c.status == SCSI_STATUS_CANCELLED ||
	    c.status == SCSI_STATUS_TIMEOUT) {
		snprintf(why, wl, "transport (status %d): %s", c.status, iscsi_get_error(p->iscsi));
		path_close(p);
		scsi_free_scsi_task(t);
		return RES_TRANSPORT;
	}
	snprintf(why, wl, "status 0x%02x", c.status);
	scsi_free_scsi_task(t);
	return RES_FATAL;
}

/* ------------------------------------------------------------ multipath I/O */

static struct path *pick(struct io *io)
{
	double now = mono();

	for (int i = 0; i < io->npaths; i++) {
		int k = (io->cur + i) % io->npaths;

		if (io->paths[k].hold_until <= now) {
			io->cur = k;
			return &io->paths[k];
		}
	}
	return &io->paths[io->cur]; /* every path held: try anyway */
}

static void completed(struct io *io)
{
	double now = mono(), gap = now - io->last_done;

	if (gap > io->longest_stall)
		io->longest_stall = gap;
	if (gap > STALL_LOG_S) {
		uint64_t t = real_us();

		fprintf(stderr,
			"ha_io: %" PRIu64 ".%06" PRIu64 " stall of %.3f s ended (path %s, %u retries, last: %s)\n",
			t / 1000000, t % 1000000, gap, io->paths[io->cur].url, io->stall_retries,
			io->last_why);
	}
	io->stall_retries = 0;
	io->last_done = now;
}

/* ------------------------------------------------------------ --follow-ao */

static int own_tpg(const struct scsi_task *t);

/* The state RTPG data gives group tpg, -1 when it is not listed. */
static int rtpg_state_of(const struct scsi_task *t, int tpg)
{
	const unsigned char *d = t->datain.data, *g;
	uint32_t n = rtpg_len(d, t->datain.size), off = 8;

	while (n && rtpg_next(d, n, &off, &g) > 0)
		if (be16(&g[2]) == tpg)
			return g[0] & 0x0f;
	return -1;
}

/* Asks every path not left alone for its own group's state (a path checker's pass). */
static void follow_refresh(struct io *io)
{
	double now = mono();

	for (int i = 0; i < io->npaths; i++) {
		struct path *p = &io->paths[i];
		struct scsi_task *t = NULL;
		char why[160];
		enum res r = RES_OK;

		if (p->hold_until > now) {
			p->own_state = -1;
			continue;
		}
		/* opened here with the commands' timeout: libiscsi keeps it for the connection */
		if (!p->iscsi && path_open(p, io->initiator, io->timeout_s, why, sizeof(why)) != 0) {
			p->own_state = -1;
			p->hold_until = mono() + PATH_HOLD_S;
			continue;
		}
		for (int tries = 0; p->own_tpg < 0 && tries < 3; tries++) {
			r = execute(io->initiator, p, 1.0, OP_VPD83, 0, 0, 512, NULL, &t, why, sizeof(why));
			if (r == RES_OK) {
				p->own_tpg = own_tpg(t);
				scsi_free_scsi_task(t);
			} else if (r != RES_RETRY) {
				break;
			}
		}
		if (r == RES_OK) {
			for (int tries = 0; tries < 3; tries++) {
				r = execute(io->initiator, p, 1.0, OP_RTPG, 0, 0, 512, NULL, &t, why,
					    sizeof(why));
				if (r != RES_RETRY || strncmp(why, "sense 6/", 8) != 0)
					break;
			}
		}
		p->own_state = -1;
		if (r == RES_OK) {
			p->own_state = rtpg_state_of(t, p->own_tpg);
			scsi_free_scsi_task(t);
		} else if (r == RES_TRANSPORT) {
			p->hold_until = mono() + PATH_HOLD_S;
		}
	}
	io->states_at = mono();
}

/* How much a path in this state is wanted: 0 best. */
static int follow_rank(int state)
{
	switch (state) {
	case 0: return 0;       /* Active/Optimized */
	case 1: return 1;       /* Active/Non-optimized */
	case -1: return 2;      /* not known */
	case 15: return 3;      /* Transitioning */
	default: return 4;      /* Standby, Unavailable, Offline */
	}
}

static struct path *follow_pick(struct io *io)
{
	double now = mono();
	int best = -1;

	if (now - io->states_at >= io->follow_ms / 1000.0)
		follow_refresh(io);
	for (int i = 0; i < io->npaths; i++) {
		struct path *p = &io->paths[i];

		if (p->hold_until > now)
			continue;
		if (best < 0 || follow_rank(p->own_state) < follow_rank(io->paths[best].own_state))
			best = i;
	}
	if (best >= 0)
		io->cur = best;
	return &io->paths[io->cur];
}

/* Counts an answer that was not GOOD; true when it is a failed command. */
static bool follow_count(struct io *io, enum op op, enum res r, const char *why,
			 const struct path *p, int state, uint64_t lba, uint32_t nb)
{
	bool tr = strncmp(why, "sense 2/04/0a", 13) == 0, ua = strncmp(why, "sense 6/", 8) == 0;
	bool nr = strncmp(why, "sense 2/", 8) == 0 && !tr;
	struct tally *ts[2] = { &io->all, watching ? &io->watched : NULL };
	uint64_t t = real_us();

	for (int i = 0; i < 2 && ts[i]; i++) {
		ts[i]->transitioning += tr;
		ts[i]->unit_attentions += ua;
		ts[i]->not_ready_other += nr;
		ts[i]->failed_writes += op == OP_WRITE && !tr && !ua;
	}
	if (tr || ua)
		return false;
	fprintf(stderr, "ha_io: %" PRIu64 ".%06" PRIu64 " failed%s: %s lba %" PRIu64 " +%u through %s"
		" (its group's state %d): %s%s\n", t / 1000000, t % 1000000,
		watching ? " (watched)" : "", op == OP_WRITE ? "WRITE" : op == OP_READ ? "READ" :
		"command", lba, nb, p->url, state, r == RES_TRANSPORT ? "transport: " : "",
		why);
	return true;
}

/* One command, on whichever path works. */
static int io_cmd(struct io *io, enum op op, uint64_t lba, uint32_t nb, unsigned char *data,
		  struct scsi_task **out)
{
	double limit = mono() + io->limit_s;
	int failed = 0;

	for (;;) {
		struct path *p = io->follow_ms ? follow_pick(io) : pick(io);
		int state = p->own_state;
		char why[160] = "";
		enum res r = execute(io->initiator, p, io->timeout_s, op, lba, nb, io->bs, data, out,
				     why, sizeof(why));

		if (r == RES_OK) {
			if (op == OP_WRITE) {
				p->writes++;
				io->all.writes++;
				io->watched.writes += watching;
			}
			completed(io);
			return 0;
		}
		if (io->follow_ms) {
			/* a host's multipath: read the states again, use the best path */
			follow_count(io, op, r, why, p, state, lba, nb);
			if (r == RES_FATAL && strcmp(why, "status 0x18") != 0) {
				fprintf(stderr, "ha_io: giving up on this answer\n");
				return -EIO;
			}
			if (r == RES_TRANSPORT)
				p->hold_until = mono() + PATH_HOLD_S;
			io->retries++;
			io->stall_retries++;
			snprintf(io->last_why, sizeof(io->last_why), "%s", why);
			if (strncmp(why, "sense 6/", 8) != 0)
				sleep_ms(10);
			io->states_at = 0;
			if (mono() > limit) {
				fprintf(stderr, "ha_io: no path completed a command within %.0f s\n",
					io->limit_s);
				return -ETIMEDOUT;
			}
			continue;
		}
		if (r == RES_FATAL) {
			fprintf(stderr, "ha_io: %s lba %" PRIu64 " +%u through %s: %s\n",
				op == OP_WRITE ? "WRITE" : op == OP_READ ? "READ" : "command", lba, nb,
				p->url, why);
			return -EIO;
		}
		io->retries++;
		io->stall_retries++;
		snprintf(io->last_why, sizeof(io->last_why), "%s", why);
		if (r == RES_TRANSPORT)
			p->hold_until = mono() + PATH_HOLD_S;
		io->cur = (io->cur + 1) % io->npaths;
		if (++failed % io->npaths == 0)
			sleep_ms(100);
		if (mono() > limit) {
			fprintf(stderr, "ha_io: %s lba %" PRIu64 " +%u: no path completed it within %.0f s (last: %s: %s)\n",
				op == OP_WRITE ? "WRITE" : op == OP_READ ? "READ" : "command", lba, nb,
				io->limit_s, p->url, why);
			return -ETIMEDOUT;
		}
	}
}

/* Compares n blocks read at lba with what was acknowledged there. */
static uint64_t check_blocks(struct io *io, const unsigned char *got, uint64_t lba, uint64_t n,
			     unsigned char *expect, const char *when)
{
	uint64_t bad = 0, checked = 0;
	struct blockpat_hdr h;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t b = lba + i, w = io->acked[b - io->first];
		const unsigned char *g = got + i * io->bs;

		if (w == 0)
			continue;
		checked++;
		blockpat_fill(&io->pat, expect, io->bs, b, 1, w);
		if (memcmp(g, expect, io->bs) == 0)
			continue;
		bad++;
		if (io->reported++ < MAX_REPORT) {
			if (blockpat_header(&io->pat, g, &h))
				fprintf(stderr,
					"ha_io: %s: lba %" PRIu64 ": expected write %" PRIu64
					", found seed %" PRIu64 " lba %" PRIu64 " write %" PRIu64 "%s\n",
					when, b, w, h.seed, h.lba, h.write,
					h.write == w ? " (content differs)" : "");
			else
				fprintf(stderr, "ha_io: %s: lba %" PRIu64 ": expected write %" PRIu64
					", found no header\n", when, b, w);
		}
	}
	io->mismatches += bad;
	if (strcmp(when, "final") == 0)
		io->verified += checked;
	return bad;
}

static int io_capacity(struct io *io)
{
	struct scsi_task *t;
	struct scsi_readcapacity16 *rc16;

	io->bs = 512; /* not used by READ CAPACITY */
	if (io_cmd(io, OP_RC16, 0, 0, NULL, &t))
		return -EIO;
	rc16 = scsi_datain_unmarshall(t);
	if (!rc16 || rc16->block_length < 512 || rc16->block_length > 4096) {
		fprintf(stderr, "ha_io: READ CAPACITY(16) data unusable\n");
		scsi_free_scsi_task(t);
		return -EIO;
	}
	io->bs = rc16->block_length;
	io->nblocks = rc16->returned_lba + 1;
	scsi_free_scsi_task(t);
	return 0;
}

static int io_final_verify(struct io *io, unsigned char *expect)
{
	uint32_t chunk = VERIFY_CHUNK / io->bs;

	for (uint64_t off = 0; off < io->count; off += chunk) {
		uint32_t n = (uint32_t)(io->count - off < chunk ? io->count - off : chunk);
		struct scsi_task *t;

		if (io_cmd(io, OP_READ, io->first + off, n, NULL, &t))
			return -EIO;
		if (t->datain.size != (int)(n * io->bs)) {
			fprintf(stderr, "ha_io: READ returned %d bytes, not %u\n", t->datain.size,
				n * io->bs);
			scsi_free_scsi_task(t);
			return -EIO;
		}
		check_blocks(io, t->datain.data, io->first + off, n, expect, "final");
		scsi_free_scsi_task(t);
	}
	return 0;
}

static int io_run(struct io *io, uint64_t region_mib, uint64_t offset_mib, uint64_t seconds,
		  unsigned pause_ms)
{
	unsigned char *buf = NULL, *expect = NULL;
	uint64_t rng = io->pat.seed ^ 0x5eed, w = 0;
	unsigned logins = 0;
	double end = seconds ? mono() + (double)seconds : 0;
	int rc = -EIO;

	io->last_done = mono();
	if (io_capacity(io))
		return -EIO;
	io->first = offset_mib * 1024 * 1024 / io->bs;
	io->count = region_mib * 1024 * 1024 / io->bs;
	if (io->count == 0 || io->first + io->count > io->nblocks) {
		fprintf(stderr, "ha_io: region %" PRIu64 " MiB at %" PRIu64 " MiB is not inside the LU (%" PRIu64 " blocks of %u)\n",
			region_mib, offset_mib, io->nblocks, io->bs);
		return -EINVAL;
	}
	io->acked = calloc(io->count, sizeof(*io->acked));
	buf = malloc(MAX_EXTENT);
	expect = malloc(io->bs);
	if (!io->acked || !buf || !expect) {
		fprintf(stderr, "ha_io: out of memory\n");
		goto out;
	}
	fprintf(stderr, "ha_io: %d path(s), %u-byte blocks, region %" PRIu64 "+%" PRIu64 " blocks, seed %" PRIu64 "\n",
		io->npaths, io->bs, io->first, io->count, io->pat.seed);
	while (!stop_flag && (!seconds || mono() < end)) {
		uint64_t x = splitmix64(&rng), max = MAX_EXTENT / io->bs;
		uint32_t nb = (uint32_t)(1 + (x & 0xffff) % max);
		uint64_t lba;
		struct scsi_task *t;

		if (nb > io->count)
			nb = (uint32_t)io->count;
		lba = io->first + (x >> 16) % (io->count - nb + 1);
		w++;
		blockpat_fill(&io->pat, buf, io->bs, lba, nb, w);
		if (io_cmd(io, OP_WRITE, lba, nb, buf, &t))
			goto out;
		scsi_free_scsi_task(t);
		for (uint32_t i = 0; i < nb; i++)
			io->acked[lba - io->first + i] = w;
		io->writes++;
		if (io_cmd(io, OP_READ, lba, nb, NULL, &t))
			goto out;
		if (t->datain.size != (int)(nb * io->bs)) {
			fprintf(stderr, "ha_io: READ returned %d bytes, not %u\n", t->datain.size,
				nb * io->bs);
			scsi_free_scsi_task(t);
			goto out;
		}
		check_blocks(io, t->datain.data, lba, nb, expect, "read-back");
		scsi_free_scsi_task(t);
		if (pause_ms)
			sleep_ms(pause_ms);
	}
	stop_flag = 0; /* the check below is not to be cut short */
	rc = io_final_verify(io, expect);
out:
	for (int i = 0; i < io->npaths; i++)
		logins += io->paths[i].logins;
	printf("ha_io: writes %" PRIu64 ", verified %" PRIu64 ", mismatches %" PRIu64
	       ", longest stall %.3f s, retries %" PRIu64 ", logins %u\n",
	       io->writes, io->verified, io->mismatches, io->longest_stall, io->retries, logins);
	if (io->follow_ms) {
		const struct tally *wt = &io->watched, *a = &io->all;

		printf("ha_io: watched: writes %" PRIu64 ", failed writes %" PRIu64 ", not ready other "
		       "than transitioning %" PRIu64 ", transitioning %" PRIu64 ", unit attentions %"
		       PRIu64 "\n", wt->writes, wt->failed_writes, wt->not_ready_other, wt->transitioning,
		       wt->unit_attentions);
		printf("ha_io: all: writes %" PRIu64 ", failed writes %" PRIu64 ", not ready other "
		       "than transitioning %" PRIu64 ", transitioning %" PRIu64 ", unit attentions %"
		       PRIu64 "\n", a->writes, a->failed_writes, a->not_ready_other, a->transitioning,
		       a->unit_attentions);
		printf("ha_io: writes per path:");
		for (int i = 0; i < io->npaths; i++)
			printf(" %" PRIu64, io->paths[i].writes);
		printf("\n");
	}
	fflush(stdout);
	free(io->acked);
	free(buf);
	free(expect);
	return rc;
}

/* ------------------------------------------------------------ sampler */

/* The target port group of the port the session is on (VPD 83h), -1 unknown. */
static int own_tpg(const struct scsi_task *t)
{
	const unsigned char *d = t->datain.data, *e;
	uint32_t n = vpd_page_len(d, t->datain.size), off = 4;

	while (vpd83_next(d, n, &off, &e) > 0)
		if (((e[1] >> 4) & 3) == 1 && (e[1] & 0x0f) == 5 && e[3] == 4)
			return be16(&e[6]);
	return -1;
}

/* RTPG data as "TPG=STATE[p] ..."; -1 when malformed. */
static int format_rtpg(const struct scsi_task *t, char *s, size_t sl)
{
	const unsigned char *d = t->datain.data, *g;
	uint32_t n = rtpg_len(d, t->datain.size), off = 8;
	size_t used = 0;
	int rc;

	if (n == 0)
		return -1;
	s[0] = 0;
	while ((rc = rtpg_next(d, n, &off, &g)) > 0) {
		int w = snprintf(s + used, sl - used, "%s%u=%u%s", used ? " " : "", be16(&g[2]),
				 g[0] & 0x0f, (g[0] & 0x80) ? "p" : "");

		if (w < 0 || (size_t)w >= sl - used)
			return -1;
		used += (size_t)w;
	}
	return rc < 0 ? -1 : 0;
}

static int sample_run(struct path *p, const char *initiator, const char *label, const int *luns,
		      int nluns, unsigned period_ms)
{
	double next = mono();

	while (!stop_flag) {
		for (int i = 0; i < nluns && !stop_flag; i++) {
			uint64_t t0 = real_us(), t1;
			char why[160] = "", states[1024];
			struct scsi_task *t = NULL;
			enum res r = RES_OK;

			p->lun = luns[i];
			if (p->own_tpg < 0 || !p->iscsi) {
				for (int tries = 0; tries < 4; tries++) {
					r = execute(initiator, p, 1.0, OP_VPD83, 0, 0, 512, NULL, &t, why,
						    sizeof(why));
					if (r != RES_RETRY)
						break;
				}
				if (r == RES_OK) {
					p->own_tpg = own_tpg(t);
					scsi_free_scsi_task(t);
					t = NULL;
				}
			}
			if (r == RES_OK) {
				/* a unit attention once, then the real answer */
				for (int tries = 0; tries < 3; tries++) {
					r = execute(initiator, p, 1.0, OP_RTPG, 0, 0, 512, NULL, &t, why,
						    sizeof(why));
					if (r != RES_RETRY || strncmp(why, "sense 6/", 8) != 0)
						break;
				}
			}
			t1 = real_us();
			if (r == RES_OK && format_rtpg(t, states, sizeof(states)) == 0) {
				printf("%s %" PRIu64 " %" PRIu64 " %d ok %d %s\n", label, t0, t1, luns[i],
				       p->own_tpg, states);
			} else {
				if (r == RES_OK)
					snprintf(why, sizeof(why), "malformed RTPG data");
				for (char *c = why; *c; c++)
					if (*c == ' ')
						*c = '_';
				printf("%s %" PRIu64 " %" PRIu64 " %d err %s\n", label, t0, t1, luns[i],
				       why);
			}
			fflush(stdout);
			if (t)
				scsi_free_scsi_task(t);
		}
		next += period_ms / 1000.0;
		if (next > mono())
			sleep_ms((unsigned)((next - mono()) * 1000));
		else
			next = mono();
	}
	path_close(p);
	return 0;
}

/* ------------------------------------------------------------ one write */

static int write_once(struct path *p, const char *initiator, uint64_t lba, double timeout_s)
{
	static const struct blockpat once_pat = { .magic = MAGIC, .seed = 0, .numbered = true };
	unsigned char buf[4096];
	struct scsi_task *t = NULL;
	char why[160] = "";
	enum res r = RES_TRANSPORT;
	uint32_t bs = 512;

	/* the block size, unit attentions cleared on the way */
	for (int tries = 0; tries < 8; tries++) {
		r = execute(initiator, p, timeout_s, OP_RC16, 0, 0, 512, NULL, &t, why, sizeof(why));
		if (r == RES_OK) {
			struct scsi_readcapacity16 *rc16 = scsi_datain_unmarshall(t);

			if (rc16 && rc16->block_length >= 512 && rc16->block_length <= sizeof(buf))
				bs = rc16->block_length;
			scsi_free_scsi_task(t);
			break;
		}
		if (r != RES_RETRY || strncmp(why, "sense 6/", 8) != 0)
			break;
	}
	if (r == RES_TRANSPORT) {
		printf("write transport error (%s)\n", why);
		path_close(p);
		return 0;
	}
	blockpat_fill(&once_pat, buf, bs, lba, 1, 0);
	for (int tries = 0; tries < 8; tries++) {
		struct cmd c = { 0 };
		int rc;

		t = iscsi_write16_task(p->iscsi, p->lun, lba, buf, bs, (int)bs, 0, 0, 0, 0, 0, cmd_cb,
				       &c);
		if (!t) {
			printf("write transport error (not sent)\n");
			break;
		}
		rc = pump(p, &c.done, mono() + timeout_s);
		if (rc) {
			if (!c.done)
				iscsi_scsi_cancel_task(p->iscsi, t);
			printf("write transport error (%s)\n", rc == -ETIMEDOUT ? "timeout" : "connection");
		} else if (c.status == SCSI_STATUS_CHECK_CONDITION &&
			   t->sense.key == SCSI_SENSE_UNIT_ATTENTION) {
			scsi_free_scsi_task(t);
			continue;
		} else if (c.status == SCSI_STATUS_GOOD) {
			printf("write good\n");
		} else if (c.status == SCSI_STATUS_CHECK_CONDITION) {
			printf("write sense %x/%02x/%02x\n", t->sense.key, (t->sense.ascq >> 8) & 0xff,
			       t->sense.ascq & 0xff);
		} else {
			printf("write status 0x%02x\n", c.status);
		}
		scsi_free_scsi_task(t);
		break;
	}
	path_close(p);
	return 0;
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
	fprintf(stderr,
		"usage: ha_io [--seed N] [--region-mib N] [--offset-mib N] [--seconds N] [--timeout-s N]\n"
		"             [--limit-s N] [--pause-ms N] [--initiator NAME] [--follow-ao MS]\n"
		"             URL [URL...]\n"
		"       ha_io --sample-ms MS --luns L[,L...] [--label NAME] URL\n"
		"       ha_io --write-once LBA URL\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "region-mib", required_argument, NULL, 'r' },
		{ "offset-mib", required_argument, NULL, 'o' },
		{ "seconds", required_argument, NULL, 'S' },
		{ "timeout-s", required_argument, NULL, 't' },
		{ "limit-s", required_argument, NULL, 'l' },
		{ "pause-ms", required_argument, NULL, 'p' },
		{ "initiator", required_argument, NULL, 'i' },
		{ "sample-ms", required_argument, NULL, 'm' },
		{ "luns", required_argument, NULL, 'L' },
		{ "label", required_argument, NULL, 'b' },
		{ "write-once", required_argument, NULL, 'w' },
		{ "follow-ao", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct io io;
	uint64_t region_mib = 16, offset_mib = 0, seconds = 0, timeout_s = 3, limit_s = 180;
	uint64_t pause_ms = 0, sample_ms = 0, wlba = 0, v;
	const char *label = "node";
	int luns[MAX_LUNS], nluns = 0, c, once = 0;
	struct sigaction sa;

	io.initiator = "iqn.2026-11.org.isergw:ha-io";
	io.pat.magic = MAGIC;
	io.pat.seed = 1;
	io.pat.numbered = true;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 's': bad = parse_u64(optarg, UINT64_MAX, &io.pat.seed); break;
		case 'r': bad = parse_u64(optarg, 1u << 20, &region_mib); break;
		case 'o': bad = parse_u64(optarg, 1u << 20, &offset_mib); break;
		case 'S': bad = parse_u64(optarg, 86400, &seconds); break;
		case 't': bad = parse_u64(optarg, 600, &timeout_s) || timeout_s == 0; break;
		case 'l': bad = parse_u64(optarg, 86400, &limit_s); break;
		case 'p': bad = parse_u64(optarg, 60000, &pause_ms); break;
		case 'i': io.initiator = optarg; break;
		case 'm': bad = parse_u64(optarg, 60000, &sample_ms) || sample_ms == 0; break;
		case 'b': label = optarg; break;
		case 'f': bad = parse_u64(optarg, 60000, &v) || v == 0; io.follow_ms = (unsigned)v; break;
		case 'w': bad = parse_u64(optarg, UINT64_MAX, &wlba); once = 1; break;
		case 'L': {
			char buf[256], *save = NULL;

			snprintf(buf, sizeof(buf), "%s", optarg);
			for (char *tok = strtok_r(buf, ",", &save); tok && !bad;
			     tok = strtok_r(NULL, ",", &save)) {
				bad = nluns == MAX_LUNS || parse_u64(tok, 16383, &v);
				if (!bad)
					luns[nluns++] = (int)v;
			}
			break;
		}
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
		if (bad) {
			fprintf(stderr, "ha_io: bad option value '%s'\n", optarg);
			usage();
			return 2;
		}
	}
	if (optind == argc || argc - optind > MAX_PATHS || ((sample_ms || once) && argc - optind != 1) ||
	    (sample_ms && nluns == 0)) {
		usage();
		return 2;
	}
	for (int i = optind; i < argc; i++)
		if (path_parse(&io.paths[io.npaths++], argv[i], io.initiator))
			return 2;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	io.timeout_s = (double)timeout_s;
	io.limit_s = (double)limit_s;
	if (sample_ms)
		return sample_run(&io.paths[0], io.initiator, label, luns, nluns, (unsigned)sample_ms);
	if (once)
		return write_once(&io.paths[0], io.initiator, wlba, io.timeout_s);
	if (io_run(&io, region_mib, offset_mib, seconds, (unsigned)pause_ms))
		return 1;
	return io.mismatches ? 1 : 0;
}
