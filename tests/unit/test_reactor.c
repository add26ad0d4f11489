// LINK: isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reactor's doorbell and message queue (common/reactor.c), driven by
 * hand with reactor_poll: rings made before the loop looks count once, a
 * ring from another thread runs the callback on the loop, a bell not rung
 * runs nothing, a closed bell is off the loop (and closing twice is
 * harmless); messages run in the order sent, one sent by a message runs in
 * the next round, and messages never run are freed by reactor_destroy.
 * The accept guard ends an episode out of descriptors when the backlog is
 * empty at its retry, even when no connection is left to wake the socket.
 * Also list_splice_tail_init (common/list.h).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/list.h"
#include "common/reactor.h"

struct fx {
	struct reactor *r;
	struct reactor_bell bell;
	unsigned int calls;
	int order[8];
	unsigned int norder;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(reactor_create(0, &f->r), 0);
	f->bell.h.fd = -1;              /* closed until a test opens it */
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	reactor_bell_close(&f->bell);
	reactor_destroy(f->r);
	free(f);
	return 0;
}

/* Run the loop until nothing is ready. */
static void drain(struct reactor *r)
{
	int rc;

	while ((rc = reactor_poll(r)) > 0)
		;
	assert_int_equal(rc, 0);
}

static void count_cb(void *arg)
{
	struct fx *f = arg;

	f->calls++;
}

static void test_bell_coalesces(void **state)
{
	struct fx *f = *state;

	assert_int_equal(reactor_bell_open(f->r, &f->bell, count_cb, f), 0);
	drain(f->r);
	assert_int_equal(f->calls, 0);          /* not rung: nothing runs */
	for (int i = 0; i < 3; i++)
		assert_int_equal(reactor_bell_ring(&f->bell), 0);
	drain(f->r);
	assert_int_equal(f->calls, 1);          /* three rings before the loop looked: once */
	assert_int_equal(reactor_bell_ring(&f->bell), 0);
	drain(f->r);
	assert_int_equal(f->calls, 2);
}

static void *ring_thread(void *arg)
{
	struct reactor_bell *b = arg;

	return (void *)(intptr_t)reactor_bell_ring(b);
}

static void test_bell_other_thread(void **state)
{
	struct fx *f = *state;
	pthread_t t;
	void *ret;

	assert_int_equal(reactor_bell_open(f->r, &f->bell, count_cb, f), 0);
	assert_int_equal(pthread_create(&t, NULL, ring_thread, &f->bell), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_int_equal((intptr_t)ret, 0);
	drain(f->r);
	assert_int_equal(f->calls, 1);
}

static void test_bell_closed(void **state)
{
	struct fx *f = *state;

	assert_int_equal(reactor_bell_open(f->r, &f->bell, count_cb, f), 0);
	assert_int_equal(reactor_bell_ring(&f->bell), 0);
	reactor_bell_close(&f->bell);
	assert_int_equal(f->bell.h.fd, -1);
	drain(f->r);
	assert_int_equal(f->calls, 0);          /* off the loop: the ring is gone with it */
	reactor_bell_close(&f->bell);           /* again: nothing */
}

static struct fx *g_fx;

static void note(void *arg)
{
	g_fx->order[g_fx->norder++] = (int)(intptr_t)arg;
}

static void note_and_send(void *arg)
{
	note(arg);
	assert_int_equal(reactor_send_msg(g_fx->r, note, (void *)(intptr_t)9), 0);
}

static void test_msgs_in_order(void **state)
{
	struct fx *f = *state;

	g_fx = f;
	assert_int_equal(reactor_send_msg(f->r, note, (void *)(intptr_t)1), 0);
	assert_int_equal(reactor_send_msg(f->r, note_and_send, (void *)(intptr_t)2), 0);
	assert_int_equal(reactor_send_msg(f->r, note, (void *)(intptr_t)3), 0);
	assert_int_equal(reactor_poll(f->r), 1);
	/* the one sent by a message waits for the next round */
	assert_int_equal(f->norder, 3);
	assert_int_equal(f->order[0], 1);
	assert_int_equal(f->order[1], 2);
	assert_int_equal(f->order[2], 3);
	drain(f->r);
	assert_int_equal(f->norder, 4);
	assert_int_equal(f->order[3], 9);
	/* never run: freed with the reactor (the sanitizer tree sees a leak otherwise) */
	assert_int_equal(reactor_send_msg(f->r, note, (void *)(intptr_t)5), 0);
}

struct item {
	int v;
	struct list_head link;
};

static void test_list_splice(void **state)
{
	struct item it[5];
	struct list_head a, b, *pos;
	int want[] = { 3, 4, 0, 1, 2 }, i = 0;

	(void)state;
	list_init(&a);
	list_init(&b);
	list_splice_tail_init(&a, &b);          /* empty into empty */
	assert_true(list_empty(&a) && list_empty(&b));
	for (int k = 0; k < 5; k++) {
		it[k].v = k;
		list_add_tail(&it[k].link, k < 3 ? &a : &b);
	}
	list_splice_tail_init(&a, &b);
	assert_true(list_empty(&a));
	list_for_each(pos, &b)
		assert_int_equal(list_entry(pos, struct item, link)->v, want[i++]);
	assert_int_equal(i, 5);
	/* and backwards: the prev links agree */
	for (pos = b.prev; pos != &b; pos = pos->prev)
		assert_int_equal(list_entry(pos, struct item, link)->v, want[--i]);
	assert_int_equal(i, 0);
}

/* A listening socket served as tcp.c and ipc.c serve theirs, with the accept guard. */
struct lsn {
	struct reactor_fd h;
	struct reactor_accept_guard g;
	int fd;
	unsigned int accepted;
	int fail_with;                  /* an errno the next accept "fails" with, 0: none */
};

static void lsn_accept(void *arg, uint32_t events)
{
	struct lsn *l = arg;

	(void)events;
	for (;;) {
		int fd, err;

		if (l->fail_with) {
			err = l->fail_with;
			l->fail_with = 0;
		} else if ((fd = accept(l->fd, NULL, NULL)) >= 0) {
			close(fd);
			l->accepted++;
			continue;
		} else {
			err = errno;
		}
		if (err == EAGAIN || err == EWOULDBLOCK)
			reactor_accept_idle(&l->g);
		else
			assert_true(reactor_accept_failed(&l->g, err));
		return;
	}
}

static int lsn_connect(const struct lsn *l)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int c = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(c >= 0);
	assert_int_equal(getsockname(l->fd, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, alen), 0);
	return c;
}

/* The guard's pause ends: its timer fires, as the loop fires it. */
static void fire(struct reactor *r, struct reactor_timer *t)
{
	assert_true(t->armed);
	reactor_timer_cancel(r, t);
	t->cb(t->arg);
}

/*
 * Out of descriptors, the guard pauses the socket and tries again when its
 * timer fires. If the backlog emptied meanwhile (connections gone before
 * they were accepted), no event comes; the retry must still look, find it
 * empty and end the episode (its notice), not wait for the next connection.
 */
static void test_accept_guard_backlog_gone(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct lsn l = { 0 };
	int c1, c2, x;

	l.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(l.fd >= 0);
	assert_int_equal(bind(l.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l.fd, 8), 0);
	assert_int_equal(reactor_add_fd(f->r, &l.h, l.fd, EPOLLIN, lsn_accept, &l), 0);
	reactor_accept_guard_init(&l.g, f->r, &l.h, "accept on a test socket");
	/* a connection, and accept() out of descriptors: paused */
	c1 = lsn_connect(&l);
	l.fail_with = EMFILE;
	drain(f->r);
	assert_true(l.g.failing);
	assert_int_equal(l.accepted, 0);
	/* the retry finds it: accepted, the backlog empty, the episode over */
	fire(f->r, &l.g.timer);
	drain(f->r);
	assert_int_equal(l.accepted, 1);
	assert_false(l.g.failing);
	/* again, but the connection leaves the backlog while the socket is paused */
	c2 = lsn_connect(&l);
	l.fail_with = EMFILE;
	drain(f->r);
	assert_true(l.g.failing);
	x = accept(l.fd, NULL, NULL);  /* taken away: the backlog is empty now */
	assert_true(x >= 0);
	fire(f->r, &l.g.timer);
	drain(f->r);
	assert_false(l.g.failing);
	assert_false(l.g.timer.armed);
	close(x);
	close(c1);
	close(c2);
	reactor_accept_guard_fini(&l.g);
	reactor_del_fd(f->r, &l.h);
	close(l.fd);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_bell_coalesces), T(test_bell_other_thread), T(test_bell_closed),
		T(test_msgs_in_order), T(test_list_splice), T(test_accept_guard_backlog_gone),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
