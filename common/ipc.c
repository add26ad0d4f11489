/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local IPC endpoint (common/ipc.h): frames, the server's clients and
 * their queues, the client side's connect and blocking reads.
 */
#include "common/ipc.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"

#define COMP (s->p.comp)

/* ------------------------------------------------------------ frames */

void gw_frame_rx_init(struct gw_frame_rx *rx)
{
	memset(rx, 0, sizeof(*rx));
}

void gw_frame_rx_reset(struct gw_frame_rx *rx)
{
	free(rx->body);
	gw_frame_rx_init(rx);
}

static int rx_fill(int fd, uint8_t *dst, uint32_t want, uint32_t *have)
{
	while (*have < want) {
		ssize_t n = read(fd, dst + *have, want - *have);

		if (n > 0) {
			*have += (uint32_t)n;
			continue;
		}
		if (n == 0)
			return -ENOTCONN;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
	return 1;
}

int gw_frame_rx_read(struct gw_frame_rx *rx, int fd, uint32_t max)
{
	int rc;

	if (rx->hdr_have < GW_IPC_FRAME_HDR) {
		bool started = rx->hdr_have > 0;

		rc = rx_fill(fd, rx->hdr, GW_IPC_FRAME_HDR, &rx->hdr_have);
		if (rc == -ENOTCONN && (started || rx->hdr_have))
			return -EPIPE;
		if (rc <= 0)
			return rc;
		rx->len = (uint32_t)rx->hdr[0] << 24 | (uint32_t)rx->hdr[1] << 16 |
			  (uint32_t)rx->hdr[2] << 8 | rx->hdr[3];
		if (rx->len > max)
			return -EMSGSIZE;
		rx->have = 0;
		rx->body = malloc(rx->len ? rx->len : 1);
		if (!rx->body)
			return -ENOMEM;
	}
	if (rx->len > max)
		return -EMSGSIZE;
	rc = rx_fill(fd, rx->body, rx->len, &rx->have);
	if (rc == -ENOTCONN)
		return -EPIPE;
	return rc;
}

void gw_frame_hdr_put(uint8_t *hdr, uint32_t len)
{
	hdr[0] = (uint8_t)(len >> 24);
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
}

/* ------------------------------------------------------------ client side */

static int64_t mono_ms(void)
{
	return (int64_t)gw_now_ms();
}

int gw_ipc_connect_start(const char *path, int *fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (*fd < 0) {
		*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (*fd < 0)
			return -errno;
	}
	if (connect(*fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return 0;
}

int gw_ipc_connect(const char *path, int timeout_ms)
{
	int64_t deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int fd = -1, rc;

	for (;;) {
		int64_t left;

		rc = gw_ipc_connect_start(path, &fd);
		if (rc == 0)
			return fd;
		left = deadline - mono_ms();
		if (rc == -EAGAIN) {
			/*
			 * The listener's backlog is full. A unix socket is not
			 * connecting then (poll would call it writable all the
			 * same): try again every 10 ms until the deadline.
			 */
			if (left <= 0) {
				rc = -ETIMEDOUT;
				break;
			}
			poll(NULL, 0, left < 10 ? (int)left : 10);
			continue;
		}
		if (rc == -EINPROGRESS) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			int err = 0;
			socklen_t el = sizeof(err);

			rc = poll(&p, 1, left > 0 ? (int)left : 0);
			if (rc == 0)
				rc = -ETIMEDOUT;
			else if (rc < 0)
				rc = -errno;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
				return fd;
			else
				rc = err ? -err : -ECONNREFUSED;
		}
		break;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

int gw_ipc_send_some(int fd, const uint8_t *buf, size_t len, size_t *off)
{
	while (*off < len) {
		ssize_t n = send(fd, buf + *off, len - *off, MSG_NOSIGNAL);

		if (n > 0) {
			*off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return n < 0 ? -errno : -EPIPE;
	}
	return 1;
}

int gw_frame_recv(int fd, struct gw_frame_rx *rx, uint32_t max, int timeout_ms)
{
	int rc;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		rc = poll(&p, 1, timeout_ms > 0 ? timeout_ms : -1);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		if (rc == 0)
			return -ETIMEDOUT;
		rc = gw_frame_rx_read(rx, fd, max);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
}

/* ------------------------------------------------------------ server: clients */

/* A frame waiting to be written to a client. */
struct ipc_txframe {
	struct list_head link;          /* gw_ipc_conn.txq */
	uint8_t *buf;
	size_t len;
	bool pushed;
};

static void txframe_free(struct ipc_txframe *f)
{
	list_del(&f->link);
	free(f->buf);
	free(f);
}

static void conn_free(struct gw_ipc_conn *c)
{
	struct list_head *pos, *n;

	gw_frame_rx_reset(&c->rx);
	list_for_each_safe(pos, n, &c->txq)
		txframe_free(list_entry(pos, struct ipc_txframe, link));
	list_del(&c->link);
	free(c);
}

static void conn_free_now(void *arg)
{
	conn_free(arg);
}

void gw_ipc_conn_close(struct gw_ipc_conn *c)
{
	struct gw_ipc_server *s = c->srv;

	if (c->closed)
		return;
	c->closed = true;
	reactor_del_fd(s->p.r, &c->h);
	close(c->fd);
	c->fd = -1;
	list_del(&c->link);
	list_add_tail(&c->link, &s->closed);
	s->nconns--;
	if (s->p.ops->close)
		s->p.ops->close(c);
	if (!c->holds)
		reactor_defer(s->p.r, &c->free_work);
}

void gw_ipc_conn_hold(struct gw_ipc_conn *c)
{
	c->holds++;
}

void gw_ipc_conn_release(struct gw_ipc_conn *c)
{
	if (--c->holds == 0 && c->closed)
		reactor_defer(c->srv->p.r, &c->free_work);
}

/* What the client waits for from epoll now. */
static void conn_events(struct gw_ipc_conn *c)
{
	uint32_t ev = 0;

	if (c->closed)
		return;
	if (!list_empty(&c->txq))
		ev |= EPOLLOUT;
	if (!c->in_request && !c->reply_queued)
		ev |= EPOLLIN;
	if (reactor_mod_fd(c->srv->p.r, &c->h, ev))
		gw_ipc_conn_close(c);
}

/* Write what the socket takes, frame after frame; 0, or -EPIPE (the client is closed then). */
static int conn_flush(struct gw_ipc_conn *c)
{
	struct gw_ipc_server *s = c->srv;
	int rc;

	while (!c->closed && !list_empty(&c->txq)) {
		struct ipc_txframe *f = list_first_entry(&c->txq, struct ipc_txframe, link);
		bool pushed = f->pushed;

		rc = gw_ipc_send_some(c->fd, f->buf, f->len, &c->tx_off);
		if (rc == 0)
			return 0;
		if (rc < 0) {
			/* after a refusal already logged, the peer's going is no news */
			gw_log(c->close_after_tx ? GW_LOG_DEBUG : GW_LOG_WARN, COMP,
			       "%s: the %s could not be sent (%s): connection closed", c->name,
			       pushed ? "event" : "reply", strerror(-rc));
			gw_ipc_conn_close(c);
			return -EPIPE;
		}
		txframe_free(f);
		c->tx_off = 0;
		if (pushed) {
			c->npushed--;
			continue;
		}
		c->reply_queued = false;
		if (c->close_after_tx)
			gw_ipc_conn_close(c);
	}
	return 0;
}

/* Queue buf (the queue's from here); written as far as the socket takes it. */
static int conn_queue(struct gw_ipc_conn *c, uint8_t *buf, size_t len, bool pushed)
{
	struct ipc_txframe *f = malloc(sizeof(*f));

	if (!f) {
		free(buf);
		return -ENOMEM;
	}
	f->buf = buf;
	f->len = len;
	f->pushed = pushed;
	list_add_tail(&f->link, &c->txq);
	if (pushed)
		c->npushed++;
	else
		c->reply_queued = true;
	if (conn_flush(c) == 0)
		conn_events(c);
	return 0;
}

void gw_ipc_reply(struct gw_ipc_conn *c, uint8_t *buf, size_t len)
{
	struct gw_ipc_server *s = c->srv;

	if (c->closed) {
		free(buf);
		return;
	}
	c->in_request = false;
	if (conn_queue(c, buf, len, false)) {
		GW_WARN(COMP, "%s: out of memory queueing a reply: closing", c->name);
		gw_ipc_conn_close(c);
	}
}

void gw_ipc_close_after_reply(struct gw_ipc_conn *c)
{
	c->close_after_tx = true;
}

bool gw_ipc_push_room(const struct gw_ipc_conn *c)
{
	return !c->closed && c->npushed < c->srv->p.max_push;
}

int gw_ipc_push(struct gw_ipc_conn *c, uint8_t *buf, size_t len)
{
	if (c->closed) {
		free(buf);
		return -ENOTCONN;
	}
	if (!gw_ipc_push_room(c)) {
		free(buf);
		return -ENOBUFS;
	}
	return conn_queue(c, buf, len, true);
}

/* The stream is out of step (rc from gw_frame_rx_read): answer, then close. */
static void conn_bad_stream(struct gw_ipc_conn *c, int rc)
{
	struct gw_ipc_server *s = c->srv;
	char why[160];

	switch (rc) {
	case -ENOTCONN:
		GW_DEBUG(COMP, "%s: disconnected", c->name);
		gw_ipc_conn_close(c);
		return;
	case -EPIPE:
		snprintf(why, sizeof(why), "truncated frame: the connection ended inside it, after "
			 "%u of %u bytes", c->rx.hdr_have < GW_IPC_FRAME_HDR ? c->rx.hdr_have
			 : GW_IPC_FRAME_HDR + c->rx.have,
			 c->rx.hdr_have < GW_IPC_FRAME_HDR ? GW_IPC_FRAME_HDR
							   : GW_IPC_FRAME_HDR + c->rx.len);
		GW_WARN(COMP, "%s: %s: closing", c->name, why);
		break;
	case -EMSGSIZE:
		snprintf(why, sizeof(why), "frame of %u bytes exceeds the maximum of %u bytes",
			 c->rx.len, s->p.frame_max);
		GW_WARN(COMP, "%s: refused: %s: closing", c->name, why);
		break;
	default:
		GW_WARN(COMP, "%s: read: %s", c->name, strerror(-rc));
		gw_ipc_conn_close(c);
		return;
	}
	/* a half-closed peer still reads the answer */
	gw_frame_rx_reset(&c->rx);
	c->close_after_tx = true;
	c->in_request = true;
	s->p.ops->reply_error(c, rc, why);
}

/* Read and hand over requests, one at a time, while the client may be read. */
static void conn_read(struct gw_ipc_conn *c)
{
	struct gw_ipc_server *s = c->srv;
	int rc;

	while (!c->closed && !c->in_request && !c->reply_queued) {
		rc = gw_frame_rx_read(&c->rx, c->fd, s->p.frame_max);
		if (rc == 0)
			return;
		if (rc < 0) {
			conn_bad_stream(c, rc);
			return;
		}
		c->in_request = true;
		s->p.ops->frame(c, c->rx.body, c->rx.len);
		gw_frame_rx_reset(&c->rx);
	}
}

static void conn_cb(void *arg, uint32_t events)
{
	struct gw_ipc_conn *c = arg;

	if (c->closed)
		return;
	if (c->in_request && !c->reply_queued && (events & (EPOLLERR | EPOLLHUP))) {
		/* gone while its request is in service: reported at every wait, so close now */
		GW_DEBUG(c->srv->p.comp, "%s: disconnected before its answer", c->name);
		gw_ipc_conn_close(c);
		return;
	}
	if (!list_empty(&c->txq) && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		if (conn_flush(c) || c->closed)
			return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		conn_read(c);
	conn_events(c);
}

/* One more refused for too many clients: logged once a second at most, with the count. */
static void note_busy(struct gw_ipc_server *s, const struct ucred *cred)
{
	uint64_t now = gw_now_ms();

	s->refused++;
	if (s->refused_logged_ms && now - s->refused_logged_ms < 1000)
		return;
	GW_WARN(COMP, "%s pid %d uid %u refused: %u clients already (%" PRIu64 " refused since "
		"the last such line)", s->p.client, (int)cred->pid, (unsigned int)cred->uid,
		s->p.max_clients, s->refused);
	s->refused_logged_ms = now;
	s->refused = 0;
}

int gw_ipc_conn_add(struct gw_ipc_server *s, int fd, const struct ucred *cred)
{
	struct gw_ipc_conn *c;
	char why[128];
	int rc;

	if (s->nconns >= s->p.max_clients && !s->p.busy_why) {
		note_busy(s, cred);
		return -EBUSY;
	}
	c = calloc(1, sizeof(*c) + s->p.priv_size);
	if (!c)
		return -ENOMEM;
	c->srv = s;
	c->fd = fd;
	list_init(&c->txq);
	list_init(&c->link);
	gw_frame_rx_init(&c->rx);
	snprintf(c->name, sizeof(c->name), "%s pid %d uid %u", s->p.client, (int)cred->pid,
		 (unsigned int)cred->uid);
	reactor_deferred_init(&c->free_work, conn_free_now, c);
	if (s->p.ops->open) {
		rc = s->p.ops->open(c);
		if (rc)
			goto err_free;
	}
	rc = reactor_add_fd(s->p.r, &c->h, fd, EPOLLIN, conn_cb, c);
	if (rc)
		goto err_free;
	list_add_tail(&c->link, &s->conns);
	s->nconns++;
	if (cred->uid != 0 && cred->uid != geteuid()) {
		snprintf(why, sizeof(why), "permission denied: uid %u may not use the %s",
			 (unsigned int)cred->uid, s->p.what);
		GW_WARN(COMP, "%s: refused: %s", c->name, why);
	} else if (s->nconns > s->p.max_clients) {
		note_busy(s, cred);
		snprintf(why, sizeof(why), "%s", s->p.busy_why);
		rc = -EBUSY;
	} else {
		GW_DEBUG(COMP, "%s: connected", c->name);
		return 0;
	}
	c->close_after_tx = true;
	c->in_request = true;
	s->p.ops->reply_error(c, rc ? rc : -EACCES, why);
	return 0;

err_free:
	free(c);
	return rc;
}

/* The clients waiting, a few an event, until the backlog is empty (EAGAIN). */
static void accept_cb(void *arg, uint32_t events)
{
	struct gw_ipc_server *s = arg;

	(void)events;
	for (int i = 0; i < 16; i++) {
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			int err = errno;

			if (err == EAGAIN)
				reactor_accept_idle(&s->guard);
			else if (err != EINTR && !reactor_accept_failed(&s->guard, err))
				GW_WARN(COMP, "accept on %s: %s", s->path, strerror(err));
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			GW_WARN(COMP, "client without peer credentials (%s): refused",
				strerror(errno));
			close(fd);
			continue;
		}
		if (gw_ipc_conn_add(s, fd, &cred))
			close(fd);
	}
}

/* ------------------------------------------------------------ server: start, stop */

int gw_ipc_server_create(const struct gw_ipc_params *p, struct gw_ipc_server **out)
{
	struct gw_ipc_server *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->p = *p;
	s->lfd = -1;
	list_init(&s->conns);
	list_init(&s->closed);
	*out = s;
	return 0;
}

int gw_ipc_listen(struct gw_ipc_server *s, const char *path)
{
	char what[GW_IPC_PATH_MAX + 16];
	int rc;

	if (strlen(path) >= sizeof(s->path))
		return -ENAMETOOLONG;
	s->lfd = gw_unix_listen(path, s->p.comp, s->p.what, 16);
	if (s->lfd < 0)
		return s->lfd;
	snprintf(s->path, sizeof(s->path), "%s", path);
	rc = reactor_add_fd(s->p.r, &s->lh, s->lfd, EPOLLIN, accept_cb, s);
	if (rc) {
		unlink(s->path);
		close(s->lfd);
		s->lfd = -1;
		return rc;
	}
	snprintf(what, sizeof(what), "accept on %s", s->path);
	reactor_accept_guard_init(&s->guard, s->p.r, &s->lh, what);
	return 0;
}

int gw_ipc_server_start(const struct gw_ipc_params *p, const char *path,
			struct gw_ipc_server **out)
{
	struct gw_ipc_server *s;
	int rc;

	rc = gw_ipc_server_create(p, &s);
	if (rc)
		return rc;
	rc = gw_ipc_listen(s, path);
	if (rc) {
		gw_ipc_server_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}

void gw_ipc_unlisten(struct gw_ipc_server *s)
{
	if (s->lfd < 0)
		return;
	reactor_accept_guard_fini(&s->guard);
	reactor_del_fd(s->p.r, &s->lh);
	close(s->lfd);
	s->lfd = -1;
	unlink(s->path);
}

void gw_ipc_server_destroy(struct gw_ipc_server *s)
{
	if (!s)
		return;
	gw_ipc_unlisten(s);
	while (!list_empty(&s->conns)) {
		struct gw_ipc_conn *c = list_first_entry(&s->conns, struct gw_ipc_conn, link);

		gw_ipc_conn_close(c);
	}
	while (!list_empty(&s->closed)) {
		struct gw_ipc_conn *c = list_first_entry(&s->closed, struct gw_ipc_conn, link);

		reactor_deferred_cancel(s->p.r, &c->free_work);
		conn_free(c);
	}
	free(s);
}
