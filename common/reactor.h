/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One reactor per thread: an epoll loop with fd handlers, one-shot timers and
 * a cross-thread message queue. Nothing may block inside a handler. All
 * callbacks of a reactor run on its own thread; other threads talk to it only
 * through reactor_send_msg().
 */
#ifndef ISERGW_REACTOR_H
#define ISERGW_REACTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "common/list.h"

struct reactor;

typedef void (*reactor_fd_cb)(void *arg, uint32_t events);
typedef void (*reactor_fn)(void *arg);

/* Embedded in the owner's object; the reactor never allocates for fds. */
struct reactor_fd {
	int fd;
	uint32_t events;
	reactor_fd_cb cb;
	void *arg;
};

struct reactor_timer {
	uint64_t deadline_ms;   /* monotonic */
	reactor_fn cb;
	void *arg;
	bool armed;
	struct list_head link;
};

int reactor_create(unsigned int index, struct reactor **out);
void reactor_destroy(struct reactor *r);
/* Run the loop on the calling thread until reactor_stop(). */
int reactor_run(struct reactor *r);
/*
 * One round of the loop on the calling thread, without waiting: the events
 * ready now (messages included) and the deferred calls, as if on r's thread.
 * Timers are not run: a test or fuzz target that drives reactors by hand
 * fires them itself. Returns the events handled plus the deferred calls run
 * (0: nothing was ready), or -errno; call it again until it returns 0.
 */
int reactor_poll(struct reactor *r);
/* Thread-safe: asks the loop to return after the current iteration. */
void reactor_stop(struct reactor *r);
/* The reactor running on the calling thread, or NULL. */
struct reactor *reactor_self(void);
unsigned int reactor_index(const struct reactor *r);

int reactor_add_fd(struct reactor *r, struct reactor_fd *h, int fd, uint32_t events,
		   reactor_fd_cb cb, void *arg);
int reactor_mod_fd(struct reactor *r, struct reactor_fd *h, uint32_t events);
void reactor_del_fd(struct reactor *r, struct reactor_fd *h);

/* One-shot timers, millisecond resolution. Re-arming an armed timer moves it. */
void reactor_timer_init(struct reactor_timer *t, reactor_fn cb, void *arg);
void reactor_timer_arm(struct reactor *r, struct reactor_timer *t, uint64_t delay_ms);
void reactor_timer_cancel(struct reactor *r, struct reactor_timer *t);

/*
 * A listening socket whose accept() ran out of descriptors or memory
 * (EMFILE, ENFILE, ENOBUFS, ENOMEM). The connection stays in the backlog and
 * the socket stays readable, so the loop would call accept() again at once,
 * for ever, with a line each time. reactor_accept_failed stops watching the
 * socket for REACTOR_ACCEPT_PAUSE_MS and logs the first failure of the
 * episode at warn, then one line a minute while it lasts. The episode ends
 * when the backlog is empty again (accept() says EAGAIN: call
 * reactor_accept_idle), with a notice. The guard's owner thread only (the
 * socket's reactor).
 */
#define REACTOR_ACCEPT_PAUSE_MS 250u
struct reactor_accept_guard {
	struct reactor *r;
	struct reactor_fd *h;           /* the listening socket, watched for EPOLLIN */
	struct reactor_timer timer;
	char what[128];                 /* "accept on tcp://10.0.0.1:3260" */
	uint64_t since_ms, logged_ms;   /* the episode's first failure, its last line */
	uint64_t retries;               /* pauses in the episode */
	bool failing;
};
void reactor_accept_guard_init(struct reactor_accept_guard *g, struct reactor *r,
			       struct reactor_fd *h, const char *what);
/* accept() failed with err (an errno): true when the guard paused the socket for it. */
bool reactor_accept_failed(struct reactor_accept_guard *g, int err);
/* accept() found the backlog empty (EAGAIN). */
void reactor_accept_idle(struct reactor_accept_guard *g);
/* Before the socket is closed: the pause's timer cancelled. */
void reactor_accept_guard_fini(struct reactor_accept_guard *g);

/*
 * Deferred call: runs once on this reactor after the current batch of events
 * (used to batch socket writes and ring submissions). Deferring an already
 * pending item is a no-op. Owner thread only.
 */
struct reactor_deferred {
	reactor_fn cb;
	void *arg;
	bool pending;
	struct list_head link;
};
void reactor_deferred_init(struct reactor_deferred *d, reactor_fn cb, void *arg);
void reactor_defer(struct reactor *r, struct reactor_deferred *d);
void reactor_deferred_cancel(struct reactor *r, struct reactor_deferred *d);

/*
 * A doorbell: an eventfd in r's epoll set. Any thread rings it; cb(arg) then
 * runs on r's thread, once for all the rings made before it runs (the
 * count is read, then cb called). For a thread that hands results to a
 * reactor by its own queue; reactor_send_msg is one of those.
 */
struct reactor_bell {
	struct reactor *r;
	struct reactor_fd h;    /* h.fd: the eventfd, -1 while closed */
	reactor_fn cb;
	void *arg;
};
/* 0, or -errno with the bell closed. */
int reactor_bell_open(struct reactor *r, struct reactor_bell *b, reactor_fn cb, void *arg);
/* Any thread: 0, or -errno (a counter already full rings anyway: 0). */
int reactor_bell_ring(struct reactor_bell *b);
/* Off the epoll set and closed; nothing on a bell closed already. */
void reactor_bell_close(struct reactor_bell *b);

/* Run fn(arg) on reactor r's thread (any caller thread). Returns 0 or -ENOMEM. */
int reactor_send_msg(struct reactor *r, reactor_fn fn, void *arg);

uint64_t gw_now_ms(void);
/*
 * CLOCK_MONOTONIC in microseconds as the calling reactor's round read it
 * when its events came (one read a round, not one a caller), or the clock
 * itself off a reactor thread. For timestamps on the I/O path (a command's
 * arrival and completion), where the round's start is close enough.
 */
uint64_t reactor_now_us(void);

#endif
