// LINK: api_haclient
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's client of the HA agent's socket (mgmt/api/haclient.c) against
 * a fake agent: a thread listening on a unix socket in a temporary directory
 * that answers each request (a 4-byte big-endian length and an ApiRequest)
 * with a ClusterStatus 30 ms after it arrived, counting the connections open
 * at once. 64 calls at once must all succeed while the client never holds
 * more than 8 connections (the agent serves 32 clients in all and refuses
 * the others: isergw-api under 64 concurrent HTTP requests once opened 64).
 * Also: a call that cannot get a connection before its deadline ends
 * -ETIMEDOUT, and an agent that is not there -ENOENT; the status kept
 * (--status-cache-ms) is given again, dropped by a change.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "api.h"
#include "isergw_ha.pb-c.h"

#define NCALLS 64
#define MAX_FDS 128

struct fake_conn {
	int fd;
	uint8_t buf[4096];
	size_t len;
	uint64_t got_ms;                /* when the whole request was in (0: not yet) */
};

struct fake {
	char dir[64], path[96];
	int lfd, stop_pipe[2];
	pthread_t thr;
	uint32_t delay_ms;
	pthread_mutex_t mu;
	unsigned int open, max_open, answered;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void answer(struct fake_conn *c)
{
	Isergw__Ha__ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__ClusterStatus st = ISERGW__HA__CLUSTER_STATUS__INIT;
	uint8_t out[512];
	size_t n;
	uint32_t be;

	st.generation = 42;
	st.quorate = true;
	rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS;
	rep.cluster_status = &st;
	n = isergw__ha__api_reply__get_packed_size(&rep);
	assert_true(n + 4 <= sizeof(out));
	be = htonl((uint32_t)n);
	memcpy(out, &be, 4);
	isergw__ha__api_reply__pack(&rep, out + 4);
	assert_int_equal(write(c->fd, out, n + 4), (ssize_t)(n + 4));
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	struct fake_conn conns[MAX_FDS];
	size_t nc = 0;

	for (;;) {
		struct pollfd p[MAX_FDS + 2];
		uint64_t now = now_ms();

		p[0] = (struct pollfd){ .fd = f->stop_pipe[0], .events = POLLIN };
		p[1] = (struct pollfd){ .fd = f->lfd, .events = POLLIN };
		for (size_t i = 0; i < nc; i++)
			p[i + 2] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN };
		if (poll(p, nc + 2, 5) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if ((p[1].revents & POLLIN) && nc < MAX_FDS) {
			int fd = accept(f->lfd, NULL, NULL);

			if (fd >= 0) {
				conns[nc++] = (struct fake_conn){ .fd = fd };
				pthread_mutex_lock(&f->mu);
				if (++f->open > f->max_open)
					f->max_open = f->open;
				pthread_mutex_unlock(&f->mu);
			}
		}
		for (size_t i = 0; i < nc; i++) {
			struct fake_conn *c = &conns[i];
			bool done = false;

			if (c->got_ms && (p[i + 2].revents & (POLLIN | POLLHUP))) {
				uint8_t scratch[64];

				/* the client hung up before the answer (its deadline) */
				if (read(c->fd, scratch, sizeof(scratch)) <= 0)
					done = true;
			} else if (p[i + 2].revents & (POLLIN | POLLHUP)) {
				ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);

				if (r <= 0) {
					done = true;
				} else {
					uint32_t be;

					c->len += (size_t)r;
					memcpy(&be, c->buf, 4);
					if (c->len >= 4 && c->len >= 4 + ntohl(be))
						c->got_ms = now;
				}
			}
			if (!done && c->got_ms && now - c->got_ms >= f->delay_ms) {
				/* counted first: a caller that has its answer sees it counted */
				pthread_mutex_lock(&f->mu);
				f->answered++;
				pthread_mutex_unlock(&f->mu);
				answer(c);
				done = true;
			}
			if (done) {
				close(c->fd);
				pthread_mutex_lock(&f->mu);
				f->open--;
				pthread_mutex_unlock(&f->mu);
				conns[i--] = conns[--nc];
			}
		}
	}
	for (size_t i = 0; i < nc; i++)
		close(conns[i].fd);
	return NULL;
}

static void fake_start(struct fake *f, uint32_t delay_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_haclient_XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/ha.sock", f->dir);
	f->delay_ms = delay_ms;
	pthread_mutex_init(&f->mu, NULL);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 128), 0);
	assert_int_equal(pipe(f->stop_pipe), 0);
	assert_int_equal(pthread_create(&f->thr, NULL, fake_main, f), 0);
}

static void fake_stop(struct fake *f)
{
	assert_int_equal(write(f->stop_pipe[1], "x", 1), 1);
	pthread_join(f->thr, NULL);
	close(f->stop_pipe[0]);
	close(f->stop_pipe[1]);
	close(f->lfd);
	unlink(f->path);
	rmdir(f->dir);
	pthread_mutex_destroy(&f->mu);
}

/* ---- the calls */

struct results {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned int done, ok, timed_out, other;
	int last_rc;
};

static void on_done(void *arg, int rc, Isergw__Ha__ApiReply *rep, const char *why)
{
	struct results *r = arg;

	(void)why;
	pthread_mutex_lock(&r->mu);
	r->done++;
	r->last_rc = rc;
	if (!rc && rep && rep->payload_case == ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS &&
	    rep->cluster_status->generation == 42)
		r->ok++;
	else if (rc == -ETIMEDOUT)
		r->timed_out++;
	else
		r->other++;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void call_many(struct api_ha *h, unsigned int n, uint32_t timeout_ms, struct results *r)
{
	Isergw__Ha__ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__GetClusterStatus gs = ISERGW__HA__GET_CLUSTER_STATUS__INIT;
	struct timespec until;

	req.op_case = ISERGW__HA__API_REQUEST__OP_GET_STATUS;
	req.get_status = &gs;
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(api_ha_call(h, &req, timeout_ms, on_done, r), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&r->mu);
	while (r->done < n)
		if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&r->mu);
	assert_int_equal(r->done, n);
}

/* One call of op (fresh: past the kept status), waited for. */
static void call_op(struct api_ha *h, int op, bool fresh, struct results *r)
{
	Isergw__Ha__ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__GetClusterStatus gs = ISERGW__HA__GET_CLUSTER_STATUS__INIT;
	Isergw__Ha__GetConfig gc = ISERGW__HA__GET_CONFIG__INIT;
	Isergw__Ha__ChangeLun cl = ISERGW__HA__CHANGE_LUN__INIT;
	unsigned int before = r->done;

	req.op_case = (Isergw__Ha__ApiRequest__OpCase)op;
	if (op == ISERGW__HA__API_REQUEST__OP_GET_STATUS)
		req.get_status = &gs;
	else if (op == ISERGW__HA__API_REQUEST__OP_GET_CONFIG)
		req.get_config = &gc;
	else
		req.change_lun = &cl;
	assert_int_equal(api_ha_call_ex(h, &req, 5000, fresh, on_done, r), 0);
	pthread_mutex_lock(&r->mu);
	while (r->done == before)
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
}

static unsigned int answered(struct fake *f)
{
	unsigned int n;

	pthread_mutex_lock(&f->mu);
	n = f->answered;
	pthread_mutex_unlock(&f->mu);
	return n;
}

/*
 * --status-cache-ms: a status the agent just gave is given again without a
 * call; a read of the configuration keeps it, a change drops it, a fresh
 * call (If-Match) goes to the agent.
 */
static void test_status_kept(void **state)
{
	struct fake f;
	struct api_ha *h;
	struct results r = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	const int st = ISERGW__HA__API_REQUEST__OP_GET_STATUS;

	(void)state;
	fake_start(&f, 0);
	assert_int_equal(api_ha_start(f.path, &h), 0);
	api_ha_set_status_cache(h, 60000);
	call_op(h, st, false, &r);
	assert_int_equal(answered(&f), 1);
	for (int i = 0; i < 10; i++)
		call_op(h, st, false, &r);
	assert_int_equal(answered(&f), 1);
	assert_int_equal(r.ok, 11);
	call_op(h, ISERGW__HA__API_REQUEST__OP_GET_CONFIG, false, &r);
	assert_int_equal(answered(&f), 2);
	call_op(h, st, false, &r);
	assert_int_equal(answered(&f), 2);
	call_op(h, st, true, &r);
	assert_int_equal(answered(&f), 3);
	call_op(h, ISERGW__HA__API_REQUEST__OP_CHANGE_LUN, false, &r);
	assert_int_equal(answered(&f), 4);
	call_op(h, st, false, &r);
	assert_int_equal(answered(&f), 5);
	call_op(h, st, false, &r);
	assert_int_equal(answered(&f), 5);
	assert_int_equal(r.other, 0);
	/* 0: every status is asked */
	api_ha_set_status_cache(h, 0);
	call_op(h, st, false, &r);
	call_op(h, st, false, &r);
	assert_int_equal(answered(&f), 7);
	api_ha_stop(h);
	api_ha_free(h);
	fake_stop(&f);
}

static void test_connections_bounded(void **state)
{
	struct fake f;
	struct api_ha *h;
	struct results r = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

	(void)state;
	fake_start(&f, 30);
	assert_int_equal(api_ha_start(f.path, &h), 0);
	call_many(h, NCALLS, 10000, &r);
	api_ha_stop(h);
	api_ha_free(h);
	fake_stop(&f);
	print_message("%u calls, %u answered, at most %u connections at once\n", r.done, r.ok,
		      f.max_open);
	assert_int_equal(r.ok, NCALLS);
	assert_int_equal(f.answered, NCALLS);
	assert_true(f.max_open >= 2);   /* the calls did run side by side */
	assert_true(f.max_open <= 8);
}

/* A call still waiting for a connection when its deadline comes ends -ETIMEDOUT. */
static void test_deadline_while_waiting(void **state)
{
	struct fake f;
	struct api_ha *h;
	struct results r = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

	(void)state;
	fake_start(&f, 400);    /* slower than the deadline below */
	assert_int_equal(api_ha_start(f.path, &h), 0);
	call_many(h, 16, 200, &r);
	api_ha_stop(h);
	api_ha_free(h);
	fake_stop(&f);
	assert_int_equal(r.timed_out, 16);
	/* (the fake sees a hang-up only at its next poll: its count of open connections lags) */
}

static void test_no_agent(void **state)
{
	struct api_ha *h;
	struct results r = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

	(void)state;
	assert_int_equal(api_ha_start("/tmp/test_haclient_no_such_dir/ha.sock", &h), 0);
	call_many(h, 20, 1000, &r);
	api_ha_stop(h);
	api_ha_free(h);
	assert_int_equal(r.other, 20);
	assert_int_equal(r.last_rc, -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connections_bounded),
		cmocka_unit_test(test_deadline_while_waiting),
		cmocka_unit_test(test_no_agent),
		cmocka_unit_test(test_status_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
