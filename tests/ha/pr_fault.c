/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client of ha.pr-fault (tests/ha/pr_fault.sh): PERSISTENT RESERVE OUT
 * through several nodes at once, and the check afterwards. libiscsi's
 * asynchronous API; every wait bounded.
 *
 *   pr_fault --run SECONDS [--per-url N] --out FILE URL...
 *
 *   N sessions (default 2) through each URL (a node's portal), each its
 *   own initiator name (so its own I_T nexus and registration). Each
 *   session registers once, then sends REGISTER AND IGNORE EXISTING KEY
 *   with a new key (session number << 32 | sequence) as soon as the last
 *   one is answered, for SECONDS. A session whose connection breaks stops.
 *   FILE gets one line per session: "session S url U good G key K
 *   uncertain K1,K2,..." (K: the key of its last command that ended GOOD;
 *   the uncertain ones: keys sent after it that did not end GOOD, i.e.
 *   that may or may not be in force). Prints "pr-fault run: G good, N not
 *   good, B sessions broken".
 *
 *   pr_fault --check FILE URL...
 *
 *   READ KEYS through each URL: every URL must report the same
 *   PRgeneration and keys, and for each session of FILE exactly one key of
 *   its own is registered: its last GOOD one or one of its uncertain ones.
 *   Prints "pr-fault check: K keys, generation G, same through N nodes,
 *   S sessions as expected" and exits 0, or names each mismatch and exits 1.
 *
 *   pr_fault --latency N URL...
 *
 *   One session through each URL; N REGISTER AND IGNORE EXISTING KEY, one
 *   at a time, through the URLs in turn; prints "latency median X p99 Y"
 *   (ms). The sessions' registrations stay (logged out, not cleared).
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

#define MAX_SESS 64
#define MAX_UNC 64

struct sess {
	struct iscsi_context *ctx;
	struct iscsi_url *url;
	int idx, url_idx;
	bool broken, busy;
	uint64_t seq;
	uint64_t good_key;
	unsigned int good;
	uint64_t unc[MAX_UNC];
	unsigned int nunc;
	uint64_t sent_key;
	struct scsi_persistent_reserve_out_basic p;
};

static struct sess sess[MAX_SESS];
static int nsess;
static unsigned int total_good, total_bad;

static struct iscsi_context *login(const char *url_s, const char *iname, struct iscsi_url **out)
{
	struct iscsi_context *ctx = iscsi_create_context(iname);
	struct iscsi_url *url;
	struct iscsi_wait w = { 0 };

	if (!ctx)
		return NULL;
	url = iscsi_parse_full_url(ctx, url_s);
	if (!url) {
		fprintf(stderr, "pr_fault: bad URL %s: %s\n", url_s, iscsi_get_error(ctx));
		iscsi_destroy_context(ctx);
		return NULL;
	}
	iscsi_set_targetname(ctx, url->target);
	iscsi_set_session_type(ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(ctx, ISCSI_HEADER_DIGEST_NONE);
	iscsi_set_noautoreconnect(ctx, 1);
	iscsi_set_timeout(ctx, 15);
	if (iscsi_full_connect_async(ctx, url->portal, url->lun, iscsi_wait_cb, &w) ||
	    iscsi_wait_until(ctx, &w.done, iscsi_now_ms() + 10000) || w.status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "pr_fault: login to %s as %s failed: %s\n", url_s, iname,
			iscsi_get_error(ctx));
		iscsi_destroy_url(url);
		iscsi_destroy_context(ctx);
		return NULL;
	}
	/* unit attentions of the new nexus out of the way */
	for (int i = 0; i < 20; i++) {
		struct iscsi_wait t = { 0 };
		int st;

		if (!iscsi_testunitready_task(ctx, url->lun, iscsi_wait_cb, &t) ||
		    iscsi_wait_until(ctx, &t.done, iscsi_now_ms() + 10000))
			break;
		st = t.status;
		if (t.task)
			scsi_free_scsi_task(t.task);
		if (st == SCSI_STATUS_GOOD)
			break;
	}
	*out = url;
	return ctx;
}

static void prout_cb(struct iscsi_context *c, int status, void *data, void *priv)
{
	struct sess *s = priv;
	struct scsi_task *t = data;

	(void)c;
	s->busy = false;
	if (status == SCSI_STATUS_GOOD) {
		s->good_key = s->sent_key;
		s->good++;
		s->nunc = 0;
		total_good++;
	} else {
		if (s->nunc < MAX_UNC)
			s->unc[s->nunc++] = s->sent_key;
		total_bad++;
		if (status < 0 || status == SCSI_STATUS_ERROR || status == SCSI_STATUS_CANCELLED ||
		    status == SCSI_STATUS_TIMEOUT)
			s->broken = true;
	}
	if (t)
		scsi_free_scsi_task(t);
}

static int send_next(struct sess *s)
{
	s->seq++;
	s->sent_key = (uint64_t)(s->idx + 1) << 32 | s->seq;
	memset(&s->p, 0, sizeof(s->p));
	s->p.service_action_reservation_key = s->sent_key;
	if (!iscsi_persistent_reserve_out_task(s->ctx, s->url->lun,
					       SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY,
					       0, 0, &s->p, prout_cb, s)) {
		s->broken = true;
		return -ENOMEM;
	}
	s->busy = true;
	return 0;
}

/* Serves s's connection until its command ends or the connection breaks; -errno of poll. */
static int serve_until_done(struct sess *s)
{
	while (s->busy && !s->broken) {
		struct pollfd p = { .fd = iscsi_get_fd(s->ctx),
				    .events = (short)iscsi_which_events(s->ctx) };

		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			return -errno;
		if (iscsi_service(s->ctx, p.revents) < 0)
			s->broken = true;
	}
	return 0;
}

static int do_run(int seconds, int per_url, const char *out, char **urls, int nurls)
{
	struct pollfd pfd[MAX_SESS];
	uint64_t end;
	unsigned int broken = 0;
	FILE *f;

	for (int u = 0; u < nurls; u++) {
		for (int k = 0; k < per_url && nsess < MAX_SESS; k++) {
			struct sess *s = &sess[nsess];
			char iname[128];

			snprintf(iname, sizeof(iname), "iqn.2026-11.org.isergw:prf-%d", nsess);
			s->idx = nsess;
			s->url_idx = u;
			s->ctx = login(urls[u], iname, &s->url);
			if (!s->ctx)
				return 2;
			nsess++;
		}
	}
	/* the first registration of each, synchronously: every session starts GOOD */
	for (int i = 0; i < nsess; i++) {
		struct sess *s = &sess[i];

		for (int tries = 0; tries < 50 && !s->good; tries++) {
			send_next(s);
			if (serve_until_done(s))
				return 2;
		}
		if (!s->good) {
			fprintf(stderr, "pr_fault: session %d never registered\n", i);
			return 2;
		}
	}
	printf("pr-fault run: %d sessions registered\n", nsess);
	fflush(stdout);
	end = iscsi_now_ms() + (uint64_t)seconds * 1000u;
	while (iscsi_now_ms() < end) {
		int n = 0;

		for (int i = 0; i < nsess; i++) {
			struct sess *s = &sess[i];

			if (!s->broken && !s->busy)
				send_next(s);
			pfd[i].fd = s->broken ? -1 : iscsi_get_fd(s->ctx);
			pfd[i].events = s->broken ? 0 : (short)iscsi_which_events(s->ctx);
			pfd[i].revents = 0;
			n += !s->broken;
		}
		if (!n)
			break;
		if (poll(pfd, (nfds_t)nsess, 50) < 0 && errno != EINTR)
			return 2;
		for (int i = 0; i < nsess; i++) {
			struct sess *s = &sess[i];

			if (s->broken)
				continue;
			if (iscsi_service(s->ctx, pfd[i].revents) < 0) {
				s->broken = true;
				if (s->busy) {
					/* never answered: may be in force or not */
					if (s->nunc < MAX_UNC)
						s->unc[s->nunc++] = s->sent_key;
					s->busy = false;
				}
			}
		}
	}
	/* answers still on their way: wait a little for them (bounded) */
	end = iscsi_now_ms() + 15000;
	for (;;) {
		int n = 0;

		for (int i = 0; i < nsess; i++) {
			struct sess *s = &sess[i];

			pfd[i].fd = s->broken || !s->busy ? -1 : iscsi_get_fd(s->ctx);
			pfd[i].events = pfd[i].fd < 0 ? 0 : (short)iscsi_which_events(s->ctx);
			pfd[i].revents = 0;
			n += pfd[i].fd >= 0;
		}
		if (!n || iscsi_now_ms() >= end)
			break;
		if (poll(pfd, (nfds_t)nsess, 50) < 0 && errno != EINTR)
			return 2;
		for (int i = 0; i < nsess; i++)
			if (pfd[i].fd >= 0 && iscsi_service(sess[i].ctx, pfd[i].revents) < 0)
				sess[i].broken = true;
	}
	f = fopen(out, "w");
	if (!f)
		return 2;
	for (int i = 0; i < nsess; i++) {
		struct sess *s = &sess[i];

		if (s->busy && s->nunc < MAX_UNC)
			s->unc[s->nunc++] = s->sent_key;
		broken += s->broken;
		fprintf(f, "session %d url %d good %u key %" PRIu64 " uncertain", i, s->url_idx,
			s->good, s->good_key);
		for (unsigned int k = 0; k < s->nunc; k++)
			fprintf(f, "%s%" PRIu64, k ? "," : " ", s->unc[k]);
		fprintf(f, "%s\n", s->nunc ? "" : " -");
	}
	fclose(f);
	printf("pr-fault run: %u good, %u not good, %u sessions broken\n", total_good, total_bad,
	       broken);
	return 0;
}

static int read_keys(const char *url_s, uint32_t *gen, uint64_t *keys, int *nkeys)
{
	struct iscsi_url *url;
	struct iscsi_context *ctx = login(url_s, "iqn.2026-11.org.isergw:prf-check", &url);
	struct scsi_persistent_reserve_in_read_keys *rk;
	struct iscsi_wait w = { 0 };
	int rc = -EIO;

	if (!ctx)
		return -EIO;
	for (int tries = 0; tries < 20; tries++) {
		memset(&w, 0, sizeof(w));
		if (!iscsi_persistent_reserve_in_task(ctx, url->lun, SCSI_PERSISTENT_RESERVE_READ_KEYS,
						      16384, iscsi_wait_cb, &w) ||
		    iscsi_wait_until(ctx, &w.done, iscsi_now_ms() + 10000))
			break;
		if (w.status == SCSI_STATUS_GOOD)
			break;
		if (w.task)
			scsi_free_scsi_task(w.task);
		w.task = NULL;
	}
	if (w.task && w.status == SCSI_STATUS_GOOD) {
		rk = scsi_datain_unmarshall(w.task);
		if (rk) {
			*gen = rk->prgeneration;
			*nkeys = rk->num_keys;
			for (int i = 0; i < rk->num_keys && i < 1024; i++)
				keys[i] = rk->keys[i];
			rc = 0;
		}
	}
	if (w.task)
		scsi_free_scsi_task(w.task);
	iscsi_logout_sync(ctx);
	iscsi_destroy_url(url);
	iscsi_destroy_context(ctx);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int do_check(const char *file, char **urls, int nurls)
{
	static uint64_t keys[8][1024];
	uint32_t gen[8];
	int nkeys[8], bad = 0, ok = 0;
	char line[8192];
	FILE *f;

	for (int u = 0; u < nurls && u < 8; u++) {
		if (read_keys(urls[u], &gen[u], keys[u], &nkeys[u])) {
			printf("pr-fault check: READ KEYS through %s failed\n", urls[u]);
			return 1;
		}
		qsort(keys[u], (size_t)nkeys[u], sizeof(uint64_t), cmp_u64);
		if (u && (gen[u] != gen[0] || nkeys[u] != nkeys[0] ||
			  memcmp(keys[u], keys[0], (size_t)nkeys[0] * sizeof(uint64_t)))) {
			printf("pr-fault check: MISMATCH: %s reports generation %u and %d keys, %s "
			       "generation %u and %d keys\n", urls[u], gen[u], nkeys[u], urls[0], gen[0],
			       nkeys[0]);
			bad++;
		}
	}
	f = fopen(file, "r");
	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		int s, url_idx, found = 0;
		unsigned int good;
		uint64_t key, mine = 0;
		char unc[8000] = "";
		bool allowed = false;

		if (sscanf(line, "session %d url %d good %u key %" SCNu64 " uncertain %7999s", &s,
			   &url_idx, &good, &key, unc) < 4)
			continue;
		for (int i = 0; i < nkeys[0]; i++) {
			if (keys[0][i] >> 32 == (uint64_t)(s + 1)) {
				found++;
				mine = keys[0][i];
			}
		}
		if (found != 1) {
			printf("pr-fault check: session %d (through URL %d) has %d keys registered\n", s,
			       url_idx, found);
			bad++;
			continue;
		}
		allowed = mine == key;
		for (char *p = unc; !allowed && *p && *p != '-';) {
			char *end;
			uint64_t k = strtoull(p, &end, 10);

			allowed = k == mine;
			p = *end == ',' ? end + 1 : end;
			if (end == p && *end != ',')
				break;
		}
		if (!allowed) {
			printf("pr-fault check: session %d (through URL %d): key %" PRIu64 " registered, "
			       "but its last GOOD command set %" PRIu64 " (uncertain: %s)\n", s, url_idx,
			       mine, key, unc);
			bad++;
			continue;
		}
		ok++;
	}
	fclose(f);
	printf("pr-fault check: %d keys, generation %u, %s through %d nodes, %d sessions as "
	       "expected%s\n", nkeys[0], gen[0], bad ? "checked" : "same", nurls, ok,
	       bad ? ": FAILED" : "");
	return bad ? 1 : 0;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int do_latency(int n, char **urls, int nurls)
{
	double *ms = calloc((size_t)n, sizeof(*ms));
	int done = 0;

	if (!ms)
		return 2;
	for (int u = 0; u < nurls && nsess < MAX_SESS; u++) {
		struct sess *s = &sess[nsess];
		char iname[128];

		snprintf(iname, sizeof(iname), "iqn.2026-11.org.isergw:prl-%d", nsess);
		s->idx = nsess;
		s->ctx = login(urls[u], iname, &s->url);
		if (!s->ctx)
			return 2;
		nsess++;
	}
	while (done < n) {
		struct sess *s = &sess[done % nsess];
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		send_next(s);
		if (serve_until_done(s))
			return 2;
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (s->broken) {
			fprintf(stderr, "pr_fault: session %d broke\n", s->idx);
			return 1;
		}
		ms[done++] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	}
	qsort(ms, (size_t)n, sizeof(*ms), cmp_dbl);
	printf("latency median %.2f p99 %.2f good %u not good %u\n", ms[n / 2],
	       ms[(size_t)((double)n * 0.99) < (size_t)n ? (size_t)((double)n * 0.99) : (size_t)n - 1],
	       total_good, total_bad);
	for (int i = 0; i < nsess; i++)
		iscsi_logout_sync(sess[i].ctx);
	free(ms);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "run", required_argument, NULL, 'r' },
		{ "check", required_argument, NULL, 'c' },
		{ "per-url", required_argument, NULL, 'n' },
		{ "out", required_argument, NULL, 'o' },
		{ "latency", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	int seconds = 0, per_url = 2, latency = 0, o;
	const char *check = NULL, *out = NULL;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r': seconds = (int)strtol(optarg, NULL, 10); break;
		case 'c': check = optarg; break;
		case 'n': per_url = (int)strtol(optarg, NULL, 10); break;
		case 'o': out = optarg; break;
		case 'L': latency = (int)strtol(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (optind < argc && latency > 0)
		return do_latency(latency, &argv[optind], argc - optind);
	if (optind >= argc || (!check && (!out || seconds <= 0)))  {
		fprintf(stderr, "usage: pr_fault --run S --out FILE URL... | --check FILE URL... | "
			"--latency N URL...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (check)
		return do_check(check, &argv[optind], argc - optind);
	return do_run(seconds, per_url, out, &argv[optind], argc - optind);
}
