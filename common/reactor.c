/* SPDX-License-Identifier: Apache-2.0 */
#include "common/reactor.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/rawsys.h"

#define REACTOR_MAX_EVENTS 128

struct reactor_msg {
	reactor_fn fn;
	void *arg;
	struct list_head link;
};

struct reactor {
	unsigned int index;
	int epfd;
	struct reactor_bell msg_bell;
	atomic_bool stop;
	pthread_mutex_t msg_lock;
	struct list_head msgs;     /* struct reactor_msg, oldest first */
	struct list_head timers;   /* sorted by deadline */
	struct list_head deferred;
	uint64_t now_us;           /* CLOCK_MONOTONIC when this round's events came */
};

static _Thread_local struct reactor *tl_reactor;

static uint64_t clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t gw_now_ms(void)
{
	return clock_us() / 1000u;
}

uint64_t reactor_now_us(void)
{
	const struct reactor *r = tl_reactor;

	return r ? r->now_us : clock_us();
}

struct reactor *reactor_self(void)
{
	return tl_reactor;
}

unsigned int reactor_index(const struct reactor *r)
{
	return r->index;
}

/* The messages sent before the bell was read, in the order sent. */
static void reactor_run_msgs(void *arg)
{
	struct reactor *r = arg;
	struct list_head batch;

	list_init(&batch);
	pthread_mutex_lock(&r->msg_lock);
	list_splice_tail_init(&r->msgs, &batch);
	pthread_mutex_unlock(&r->msg_lock);
	while (!list_empty(&batch)) {
		struct reactor_msg *m = list_first_entry(&batch, struct reactor_msg, link);

		list_del(&m->link);
		m->fn(m->arg);
		free(m);
	}
}

int reactor_create(unsigned int index, struct reactor **out)
{
	struct reactor *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	r->index = index;
	r->now_us = clock_us();
	list_init(&r->timers);
	list_init(&r->deferred);
	list_init(&r->msgs);
	pthread_mutex_init(&r->msg_lock, NULL);
	r->msg_bell.h.fd = -1;
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	rc = r->epfd < 0 ? -errno : reactor_bell_open(r, &r->msg_bell, reactor_run_msgs, r);
	if (rc) {
		reactor_destroy(r);     /* takes what was made */
		return rc;
	}
	*out = r;
	return 0;
}

void reactor_destroy(struct reactor *r)
{
	if (!r)
		return;
	while (!list_empty(&r->msgs)) {
		struct reactor_msg *m = list_first_entry(&r->msgs, struct reactor_msg, link);

		list_del(&m->link);
		free(m);
	}
	reactor_bell_close(&r->msg_bell);
	if (r->epfd >= 0)
		close(r->epfd);
	pthread_mutex_destroy(&r->msg_lock);
	free(r);
}

void reactor_stop(struct reactor *r)
{
	int rc;

	atomic_store(&r->stop, true);
	rc = reactor_bell_ring(&r->msg_bell);
	if (rc)
		GW_WARN("reactor", "reactor %u: wake-up failed: %s", r->index, strerror(-rc));
}

int reactor_add_fd(struct reactor *r, struct reactor_fd *h, int fd, uint32_t events,
		   reactor_fd_cb cb, void *arg)
{
	struct epoll_event ev = { .events = events, .data.ptr = h };

	h->fd = fd;
	h->events = events;
	h->cb = cb;
	h->arg = arg;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	return 0;
}

int reactor_mod_fd(struct reactor *r, struct reactor_fd *h, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = h };

	if (h->events == events)
		return 0;
	if (epoll_ctl(r->epfd, EPOLL_CTL_MOD, h->fd, &ev) < 0)
		return -errno;
	h->events = events;
	return 0;
}

static void accept_resume(void *arg)
{
	struct reactor_accept_guard *g = arg;

	if (reactor_mod_fd(g->r, g->h, EPOLLIN)) {
		reactor_timer_arm(g->r, &g->timer, REACTOR_ACCEPT_PAUSE_MS);
		return;
	}
	/*
	 * Watched again, and accept() tried now: the backlog may have emptied
	 * during the pause (connections gone before they were accepted), and then
	 * no event would come to find that out and end the episode until the
	 * next connection.
	 */
	g->h->cb(g->h->arg, EPOLLIN);
}

void reactor_accept_guard_init(struct reactor_accept_guard *g, struct reactor *r,
			       struct reactor_fd *h, const char *what)
{
	memset(g, 0, sizeof(*g));
	g->r = r;
	g->h = h;
	snprintf(g->what, sizeof(g->what), "%s", what);
	reactor_timer_init(&g->timer, accept_resume, g);
}

bool reactor_accept_failed(struct reactor_accept_guard *g, int err)
{
	uint64_t now = gw_now_ms();

	if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
		return false;
	if (!g->failing) {
		g->failing = true;
		g->since_ms = g->logged_ms = now;
		g->retries = 0;
		GW_WARN("reactor", "%s: %s: new connections wait in the backlog; trying again "
			"every %u ms (%s)", g->what, strerror(err), REACTOR_ACCEPT_PAUSE_MS,
			err == EMFILE ? "the process's descriptor limit: LimitNOFILE= of its "
			"unit, or a client holding many connections" :
			err == ENFILE ? "the system's descriptor limit, fs.file-max" : "memory");
	} else if (now - g->logged_ms >= 60000) {
		g->logged_ms = now;
		GW_WARN("reactor", "%s: still %s after %" PRIu64 " s (%" PRIu64 " tries)", g->what,
			strerror(err), (now - g->since_ms) / 1000, g->retries);
	}
	g->retries++;
	reactor_mod_fd(g->r, g->h, 0);
	reactor_timer_arm(g->r, &g->timer, REACTOR_ACCEPT_PAUSE_MS);
	return true;
}

void reactor_accept_idle(struct reactor_accept_guard *g)
{
	if (!g->failing)
		return;
	g->failing = false;
	GW_NOTICE("reactor", "%s: the backlog is empty again after %" PRIu64 " ms (%" PRIu64
		  " pauses)", g->what, gw_now_ms() - g->since_ms, g->retries);
}

void reactor_accept_guard_fini(struct reactor_accept_guard *g)
{
	if (g->r)
		reactor_timer_cancel(g->r, &g->timer);
}

void reactor_del_fd(struct reactor *r, struct reactor_fd *h)
{
	if (h->fd >= 0)
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, h->fd, NULL);
	h->cb = NULL;
}

static void reactor_bell_cb(void *arg, uint32_t events)
{
	struct reactor_bell *b = arg;
	uint64_t count;

	(void)events;
	/* read first: a ring after this read wakes the loop again */
	if (read(b->h.fd, &count, sizeof(count)) < 0) {
		if (errno == EAGAIN)
			return;         /* nobody rang: the last read took it */
		GW_WARN("reactor", "reactor %u: eventfd read: %s", b->r->index, strerror(errno));
	}
	b->cb(b->arg);
}

int reactor_bell_open(struct reactor *r, struct reactor_bell *b, reactor_fn cb, void *arg)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int rc;

	b->r = r;
	b->cb = cb;
	b->arg = arg;
	b->h.fd = -1;
	if (fd < 0)
		return -errno;
	rc = reactor_add_fd(r, &b->h, fd, EPOLLIN, reactor_bell_cb, b);
	if (rc) {
		close(fd);
		b->h.fd = -1;
	}
	return rc;
}

int reactor_bell_ring(struct reactor_bell *b)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is full, so the loop is woken anyway */
	if (write(b->h.fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

void reactor_bell_close(struct reactor_bell *b)
{
	if (b->h.fd < 0)
		return;
	reactor_del_fd(b->r, &b->h);
	close(b->h.fd);
	b->h.fd = -1;
}

void reactor_timer_init(struct reactor_timer *t, reactor_fn cb, void *arg)
{
	memset(t, 0, sizeof(*t));
	t->cb = cb;
	t->arg = arg;
	list_init(&t->link);
}

void reactor_timer_cancel(struct reactor *r, struct reactor_timer *t)
{
	(void)r;
	if (t->armed) {
		list_del(&t->link);
		t->armed = false;
	}
}

void reactor_timer_arm(struct reactor *r, struct reactor_timer *t, uint64_t delay_ms)
{
	struct list_head *pos;

	reactor_timer_cancel(r, t);
	t->deadline_ms = gw_now_ms() + delay_ms;
	t->armed = true;
	/* walk from the tail: new timers tend to be the latest */
	for (pos = r->timers.prev; pos != &r->timers; pos = pos->prev) {
		struct reactor_timer *o = list_entry(pos, struct reactor_timer, link);

		if (o->deadline_ms <= t->deadline_ms)
			break;
	}
	list_add(&t->link, pos);
}

void reactor_deferred_init(struct reactor_deferred *d, reactor_fn cb, void *arg)
{
	d->cb = cb;
	d->arg = arg;
	d->pending = false;
	list_init(&d->link);
}

void reactor_defer(struct reactor *r, struct reactor_deferred *d)
{
	if (d->pending)
		return;
	d->pending = true;
	list_add_tail(&d->link, &r->deferred);
}

void reactor_deferred_cancel(struct reactor *r, struct reactor_deferred *d)
{
	(void)r;
	if (d->pending) {
		list_del(&d->link);
		d->pending = false;
	}
}

int reactor_send_msg(struct reactor *r, reactor_fn fn, void *arg)
{
	struct reactor_msg *m = malloc(sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->fn = fn;
	m->arg = arg;
	pthread_mutex_lock(&r->msg_lock);
	list_add_tail(&m->link, &r->msgs);
	pthread_mutex_unlock(&r->msg_lock);
	return reactor_bell_ring(&r->msg_bell);
}

/* Returns how many calls ran. */
static int reactor_run_deferred(struct reactor *r)
{
	int n = 0;

	/* callbacks may defer again: those run in the next round of this loop */
	while (!list_empty(&r->deferred)) {
		struct reactor_deferred *d =
			list_first_entry(&r->deferred, struct reactor_deferred, link);

		list_del(&d->link);
		d->pending = false;
		d->cb(d->arg);
		n++;
	}
	return n;
}

static int reactor_next_timeout(struct reactor *r)
{
	struct reactor_timer *t;
	uint64_t now;

	if (!list_empty(&r->deferred))
		return 0;
	if (list_empty(&r->timers))
		return 1000;
	t = list_first_entry(&r->timers, struct reactor_timer, link);
	/*
	 * The time of the round that just ended, older than the clock by that
	 * round's work (handlers do not block: microseconds): a timer fires that
	 * much late, never early, for the price of no clock read here.
	 */
	now = r->now_us / 1000u;
	if (t->deadline_ms <= now)
		return 0;
	return t->deadline_ms - now > 1000 ? 1000 : (int)(t->deadline_ms - now);
}

static void reactor_run_timers(struct reactor *r)
{
	uint64_t now = r->now_us / 1000u;

	while (!list_empty(&r->timers)) {
		struct reactor_timer *t = list_first_entry(&r->timers, struct reactor_timer, link);

		if (t->deadline_ms > now)
			break;
		list_del(&t->link);
		t->armed = false;
		t->cb(t->arg);
	}
}

/*
 * One round: wait up to timeout_ms for events, handle them, the deferred
 * calls and (with timers) the timers due. Returns the events handled plus
 * the deferred calls run, or -errno.
 */
static int reactor_round(struct reactor *r, int timeout_ms, bool timers)
{
	struct epoll_event evs[REACTOR_MAX_EVENTS];
	int n = gw_sys_epoll_wait(r->epfd, evs, REACTOR_MAX_EVENTS, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	/* the one clock read of a round: timers, and what reactor_now_us gives */
	r->now_us = clock_us();
	for (int i = 0; i < n; i++) {
		struct reactor_fd *h = evs[i].data.ptr;

		if (h->cb)
			h->cb(h->arg, evs[i].events);
	}
	n += reactor_run_deferred(r);
	if (timers) {
		reactor_run_timers(r);
		n += reactor_run_deferred(r);
	}
	return n;
}

int reactor_run(struct reactor *r)
{
	tl_reactor = r;
	r->now_us = clock_us();   /* not the time reactor_create read: start-up came between */
	while (!atomic_load(&r->stop)) {
		int rc = reactor_round(r, reactor_next_timeout(r), true);

		if (rc < 0) {
			GW_ERR("reactor", "reactor %u: epoll_wait: %s", r->index, strerror(-rc));
			tl_reactor = NULL;
			return rc;
		}
	}
	tl_reactor = NULL;
	return 0;
}

int reactor_poll(struct reactor *r)
{
	struct reactor *prev = tl_reactor;
	int rc;

	tl_reactor = r;
	rc = reactor_round(r, 0, false);
	tl_reactor = prev;
	return rc;
}
