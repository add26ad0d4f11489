/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HA agent's local socket (proto/isergw_ha.proto, ApiRequest/ApiReply),
 * as isergw-api uses it: asynchronously, so that no HTTP thread ever waits
 * for the cluster.
 *
 * Why this shape: a change is answered by the agent only once every live
 * member applied it (up to --change-wait-ms, seconds), and libmicrohttpd's
 * threads are few (--threads, default 2). Were a handler to wait on the
 * socket, two slow writes would stall every probe and scrape of the node.
 * So a handler suspends its connection (MHD_suspend_connection) and hands
 * the request to this client, which runs one thread of its own with a
 * reactor (common/reactor: epoll, timers, a message queue) and the client
 * side of common/ipc.h (connect, frames). Requests arrive by
 * reactor_send_msg from any thread; each opens its own non-blocking
 * connection to the agent (the agent answers one request at a time
 * per connection, and serves up to 32 connections: at most HA_CONNS_MAX of
 * them are this client's, the other calls wait in order for one to end),
 * sends one frame, reads one frame, closes; a timer bounds the whole call,
 * its wait for a connection included. The completion callback
 * runs on this thread; the HTTP side resumes its connection from there
 * (MHD_resume_connection is thread-safe). A callback may start the next call
 * of a chain (read the configuration, then apply a changed one).
 *
 * The agent's status (GetClusterStatus) is what every read asks first (the
 * cache of rendered reads is keyed by the document it names): a status the
 * agent gave within --status-cache-ms is answered again from here, on this
 * thread, without a connection. Any other call but GetConfig (a change)
 * drops it when it ends, so a read after a write through this API sees the
 * write; a change made through another node shows here within the window.
 *
 * The cluster's API tokens (docs/api.md, Cluster tokens) are asked for
 * every --token-poll-ms with GetTokens, one call at a time, on this thread
 * (api_ha_poll_tokens): a token added or revoked on any node counts here
 * within that period and one round trip.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "ctl_wire.h"
#include "common/ipc.h"
#include "common/list.h"
#include "common/log.h"
#include "common/reactor.h"

#define COMP "haclient"
#define CONNECT_RETRY_MS 20u    /* the agent's listen backlog was full */
/*
 * Connections to the agent open at once. The agent serves 32 clients in all
 * (isergwctl and the others need some), and refuses the rest: 64 HTTP
 * requests at once once made isergw-api open 64 and get thousands refused.
 */
#define HA_CONNS_MAX 8u

struct api_ha {
	struct reactor *r;
	pthread_t thr;
	char path[API_PATH_MAX];
	pthread_mutex_t lock;
	bool closing;                   /* under lock: no new calls */
	struct list_head calls;         /* in flight, this thread only */
	struct list_head waiting;       /* of those, waiting for a connection, in order */
	unsigned int nconns;            /* calls holding a connection (<= HA_CONNS_MAX) */
	bool starting;                  /* in start_waiting (a call may end inside it) */
	/* the last status (this thread only) */
	_Atomic uint32_t status_ms;     /* how long it is answered again (0: never); any thread sets it */
	uint8_t *st_buf;                /* the packed ApiReply, NULL: none */
	size_t st_len;
	uint64_t st_at;                 /* monotonic ms */
	/* the cluster's tokens asked for every poll_ms (api_ha_poll_tokens; this thread only) */
	struct reactor_timer poll;
	uint32_t poll_ms;
	api_ha_cb poll_cb;
	void *poll_arg;
};

struct ha_call {
	struct api_ha *h;
	int fd;
	struct reactor_fd fdh;
	bool fd_added;
	struct reactor_timer deadline;
	struct reactor_timer retry;
	uint64_t deadline_ms;
	uint32_t timeout_ms;
	uint8_t *tx;
	size_t txlen, txoff;
	struct ctl_frame_rx rx;
	api_ha_cb cb;
	void *arg;
	struct list_head link;
	struct list_head wlink;         /* in h->waiting */
	bool waits;                     /* in h->waiting, no connection yet */
	int op;                         /* the request's op_case */
	bool fresh;                     /* not from the kept status */
};

static void status_drop(struct api_ha *h)
{
	free(h->st_buf);
	h->st_buf = NULL;
	h->st_len = 0;
}

/* Whether a request changes nothing (a read). */
static bool op_is_read(int op)
{
	return op == ISERGW__HA__API_REQUEST__OP_GET_STATUS ||
	       op == ISERGW__HA__API_REQUEST__OP_GET_CONFIG ||
	       op == ISERGW__HA__API_REQUEST__OP_GET_TOKENS;
}

/* A call ended with rep: the status kept, or dropped by a change. */
static void status_note(struct api_ha *h, int op, const Isergw__Ha__ApiReply *rep)
{
	if (op == ISERGW__HA__API_REQUEST__OP_GET_CONFIG ||
	    op == ISERGW__HA__API_REQUEST__OP_GET_TOKENS)
		return;
	if (op != ISERGW__HA__API_REQUEST__OP_GET_STATUS) {
		status_drop(h);
		return;
	}
	if (!atomic_load_explicit(&h->status_ms, memory_order_relaxed) || !rep || rep->status ||
	    rep->payload_case != ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS)
		return;
	status_drop(h);
	h->st_len = isergw__ha__api_reply__get_packed_size(rep);
	h->st_buf = malloc(h->st_len ? h->st_len : 1);
	if (!h->st_buf)
		return;
	isergw__ha__api_reply__pack(rep, h->st_buf);
	h->st_at = gw_now_ms();
}

/* The kept status, unpacked anew for one more caller (NULL: none, or too old). */
static Isergw__Ha__ApiReply *status_kept(struct api_ha *h)
{
	if (!h->st_buf ||
	    gw_now_ms() - h->st_at >= atomic_load_explicit(&h->status_ms, memory_order_relaxed))
		return NULL;
	return isergw__ha__api_reply__unpack(NULL, h->st_len, h->st_buf);
}

static void call_connect(void *arg);

/* Calls waiting for a connection get the ones free, in order. */
static void start_waiting(struct api_ha *h)
{
	if (h->starting)
		return; /* the loop below goes on */
	h->starting = true;
	while (h->nconns < HA_CONNS_MAX && !list_empty(&h->waiting)) {
		struct ha_call *k = list_first_entry(&h->waiting, struct ha_call, wlink);

		list_del(&k->wlink);
		k->waits = false;
		h->nconns++;
		call_connect(k); /* may end the call at once (it gives its connection back) */
	}
	h->starting = false;
}

static void call_finish(struct ha_call *k, int rc, Isergw__Ha__ApiReply *rep, const char *why)
{
	struct api_ha *h = k->h;

	reactor_timer_cancel(h->r, &k->deadline);
	reactor_timer_cancel(h->r, &k->retry);
	if (k->fd_added)
		reactor_del_fd(h->r, &k->fdh);
	if (k->fd >= 0)
		close(k->fd);
	list_del(&k->link);
	if (k->waits)
		list_del(&k->wlink);
	else
		h->nconns--;
	ctl_frame_rx_reset(&k->rx);
	free(k->tx);
	if (!rc)
		status_note(h, k->op, rep);
	else if (!op_is_read(k->op))
		status_drop(h);         /* a change that may have been made */
	k->cb(k->arg, rc, rep, why);
	if (rep)
		isergw__ha__api_reply__free_unpacked(rep, NULL);
	free(k);
	start_waiting(h);
}

static void call_fail(struct ha_call *k, int rc, const char *what)
{
	char why[API_PATH_MAX + 160];

	snprintf(why, sizeof(why), "%s %s: %s", what, k->h->path, strerror(-rc));
	call_finish(k, rc, NULL, why);
}

static void call_read(struct ha_call *k)
{
	Isergw__Ha__ApiReply *rep;
	int rc = ctl_frame_rx_read(&k->rx, k->fd, CTL_FRAME_MAX);

	if (rc == 0)
		return;
	if (rc < 0) {
		call_fail(k, rc == -ENOTCONN ? -EPIPE : rc, "reading the answer on");
		return;
	}
	rep = isergw__ha__api_reply__unpack(NULL, k->rx.len, k->rx.body);
	if (!rep) {
		call_fail(k, -EBADMSG, "an answer that is no ApiReply on");
		return;
	}
	call_finish(k, 0, rep, "");
}

static void call_write(struct ha_call *k)
{
	int rc = gw_ipc_send_some(k->fd, k->tx, k->txlen, &k->txoff);

	if (rc < 0)
		call_fail(k, rc, "sending the request on");
	else if (rc > 0)
		reactor_mod_fd(k->h->r, &k->fdh, EPOLLIN);
}

static void call_io(void *arg, uint32_t events)
{
	struct ha_call *k = arg;

	if (k->txoff < k->txlen) {
		if (events & (EPOLLERR | EPOLLHUP)) {
			call_fail(k, -EPIPE, "the connection ended on");
			return;
		}
		call_write(k);
		return;
	}
	call_read(k);
}

static void call_connect(void *arg)
{
	struct ha_call *k = arg;
	int rc;

	rc = gw_ipc_connect_start(k->h->path, &k->fd);
	if (rc == -EAGAIN) {
		/* a full backlog: try again shortly, the deadline still runs */
		reactor_timer_arm(k->h->r, &k->retry, CONNECT_RETRY_MS);
		return;
	}
	if (rc && rc != -EINPROGRESS) {
		call_fail(k, rc, k->fd < 0 ? "socket() for" : "cannot connect to");
		return;
	}
	rc = reactor_add_fd(k->h->r, &k->fdh, k->fd, EPOLLOUT, call_io, k);
	if (rc) {
		call_fail(k, rc, "cannot watch the connection to");
		return;
	}
	k->fd_added = true;
}

static void call_timeout(void *arg)
{
	struct ha_call *k = arg;
	char why[API_PATH_MAX + 96];

	snprintf(why, sizeof(why), "no answer on %s within %u ms", k->h->path, k->timeout_ms);
	call_finish(k, -ETIMEDOUT, NULL, why);
}

/* on the client's thread: the call begins */
static void call_start(void *arg)
{
	struct ha_call *k = arg;
	struct api_ha *h = k->h;

	if (k->op == ISERGW__HA__API_REQUEST__OP_GET_STATUS && !k->fresh) {
		Isergw__Ha__ApiReply *rep = status_kept(h);

		if (rep) {
			free(k->tx);
			k->cb(k->arg, 0, rep, "");
			isergw__ha__api_reply__free_unpacked(rep, NULL);
			free(k);
			return;
		}
	}
	list_add_tail(&k->link, &h->calls);
	reactor_timer_init(&k->deadline, call_timeout, k);
	reactor_timer_init(&k->retry, call_connect, k);
	reactor_timer_arm(h->r, &k->deadline, k->timeout_ms);
	k->waits = true;
	list_add_tail(&k->wlink, &h->waiting);
	start_waiting(h);
}

int api_ha_call(struct api_ha *h, const Isergw__Ha__ApiRequest *req, uint32_t timeout_ms,
		api_ha_cb cb, void *arg)
{
	return api_ha_call_ex(h, req, timeout_ms, false, cb, arg);
}

int api_ha_call_ex(struct api_ha *h, const Isergw__Ha__ApiRequest *req, uint32_t timeout_ms,
		   bool fresh, api_ha_cb cb, void *arg)
{
	struct ha_call *k = calloc(1, sizeof(*k));
	bool closing;
	int rc;

	if (!k)
		return -ENOMEM;
	k->h = h;
	k->fd = -1;
	k->timeout_ms = timeout_ms;
	k->cb = cb;
	k->arg = arg;
	k->op = (int)req->op_case;
	k->fresh = fresh;
	ctl_frame_rx_init(&k->rx);
	list_init(&k->link);
	list_init(&k->wlink);
	rc = ctl_frame_pack(&req->base, &k->tx, &k->txlen);
	if (rc)
		goto err_free;
	pthread_mutex_lock(&h->lock);
	closing = h->closing;
	rc = closing ? -ESHUTDOWN : reactor_send_msg(h->r, call_start, k);
	pthread_mutex_unlock(&h->lock);
	if (rc)
		goto err_free;
	return 0;

err_free:
	free(k->tx);
	free(k);
	return rc;
}

/* on the client's thread, after every call sent before it: end them all */
static void shutdown_msg(void *arg)
{
	struct api_ha *h = arg;

	h->starting = true; /* no call waiting for a connection gets one now */
	reactor_timer_cancel(h->r, &h->poll);
	while (!list_empty(&h->calls)) {
		struct ha_call *k = list_first_entry(&h->calls, struct ha_call, link);

		call_finish(k, -ECANCELED, NULL, "isergw-api is stopping");
	}
	reactor_stop(h->r);
}

static void *thread_main(void *arg)
{
	struct api_ha *h = arg;

	reactor_run(h->r);
	return NULL;
}

int api_ha_start(const char *path, struct api_ha **out)
{
	struct api_ha *h;
	int rc;

	if (strlen(path) >= GW_IPC_PATH_MAX)
		return -ENAMETOOLONG;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	snprintf(h->path, sizeof(h->path), "%s", path);
	list_init(&h->calls);
	list_init(&h->waiting);
	pthread_mutex_init(&h->lock, NULL);
	rc = reactor_create(0, &h->r);
	if (rc)
		goto err_free;
	rc = -pthread_create(&h->thr, NULL, thread_main, h);
	if (rc)
		goto err_reactor;
	*out = h;
	return 0;

err_reactor:
	reactor_destroy(h->r);
err_free:
	pthread_mutex_destroy(&h->lock);
	free(h);
	return rc;
}

void api_ha_stop(struct api_ha *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	if (h->closing) {
		pthread_mutex_unlock(&h->lock);
		return;
	}
	h->closing = true;
	/* queued behind every call already sent, so it finds them all */
	if (reactor_send_msg(h->r, shutdown_msg, h))
		reactor_stop(h->r);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thr, NULL);
}

/* ------------------------------------------------------------ token poll */

static void poll_fire(void *arg);

/* on the client's thread: one GetTokens answered; the next one poll_ms later */
static void poll_done(void *arg, int rc, Isergw__Ha__ApiReply *rep, const char *why)
{
	struct api_ha *h = arg;
	bool closing;

	h->poll_cb(h->poll_arg, rc, rep, why);
	pthread_mutex_lock(&h->lock);
	closing = h->closing;
	pthread_mutex_unlock(&h->lock);
	if (!closing)
		reactor_timer_arm(h->r, &h->poll, h->poll_ms);
}

static void poll_fire(void *arg)
{
	struct api_ha *h = arg;
	Isergw__Ha__ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__GetTokens gt = ISERGW__HA__GET_TOKENS__INIT;

	req.op_case = ISERGW__HA__API_REQUEST__OP_GET_TOKENS;
	req.get_tokens = &gt;
	/* the answer is due before the next poll would start: at most poll_ms, at least 100 ms */
	if (api_ha_call(h, &req, h->poll_ms > 100 ? h->poll_ms : 100, poll_done, h))
		reactor_timer_arm(h->r, &h->poll, h->poll_ms);   /* stopping, or no memory */
}

static void poll_start(void *arg)
{
	poll_fire(arg);
}

int api_ha_poll_tokens(struct api_ha *h, uint32_t period_ms, api_ha_cb cb, void *arg)
{
	int rc;

	if (!period_ms || !cb)
		return -EINVAL;
	h->poll_ms = period_ms;
	h->poll_cb = cb;
	h->poll_arg = arg;
	reactor_timer_init(&h->poll, poll_fire, h);
	pthread_mutex_lock(&h->lock);
	rc = h->closing ? -ESHUTDOWN : reactor_send_msg(h->r, poll_start, h);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

void api_ha_set_status_cache(struct api_ha *h, uint32_t ms)
{
	atomic_store_explicit(&h->status_ms, ms, memory_order_relaxed);
}

void api_ha_free(struct api_ha *h)
{
	if (!h)
		return;
	status_drop(h);
	reactor_destroy(h->r);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
