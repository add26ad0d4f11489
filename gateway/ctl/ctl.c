/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control socket server (ctl/ctl.h, docs/control.md); the operations
 * themselves are in ctl_ops*.c (ctl_priv.h).
 *
 * One control thread runs a reactor of its own (not one of gw->reactors): it
 * accepts clients, reads length-prefixed frames, answers each request in
 * order. A client has at most one request in service; while it is served
 * asynchronously (answers gathered from the reactors, an ALUA transition
 * waiting for its timer) or its reply is not yet written, the client's
 * socket is not read. Frames to a client go through its queue (txq): the
 * reply, and for a subscribed client the events pushed to it, at most
 * CTL_EVENT_QUEUE_MAX of them (more are dropped and counted). Everything in
 * struct gw_ctl below the "control thread only" line is touched by that
 * thread alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl_priv.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/notify.h"

#define CTL_MAX_CLIENTS 32u

/* A frame waiting to be written to a client. */
struct ctl_txframe {
	struct list_head link;          /* ctl_client.txq */
	uint8_t *buf;
	size_t len;
	bool event;
};

/* ------------------------------------------------------------ clients */

static void client_events(struct ctl_client *c);

static void client_free_now(void *arg)
{
	struct ctl_client *c = arg;

	ctl_frame_rx_reset(&c->rx);
	while (!list_empty(&c->txq)) {
		struct ctl_txframe *f = list_first_entry(&c->txq, struct ctl_txframe, link);

		list_del(&f->link);
		free(f->buf);
		free(f);
	}
	free(c);
}

static void client_close(struct ctl_client *c)
{
	struct gw_ctl *ctl = c->ctl;

	if (c->dead)
		return;
	c->dead = true;
	reactor_del_fd(ctl->r, &c->h);
	close(c->fd);
	c->fd = -1;
	list_del(&c->link);
	ctl->nclients--;
	if (c->subscribed) {
		atomic_fetch_sub(&ctl->nsubscribers, 1);
		GW_NOTICE(COMP, "%s: no longer subscribed to events", c->name);
	}
	if (!c->busy)
		reactor_defer(ctl->r, &c->free_work);
}

/* Write what the socket takes, frame after frame; 0, or -errno (the client is closed then). */
static int client_flush(struct ctl_client *c)
{
	while (!c->dead && !list_empty(&c->txq)) {
		struct ctl_txframe *f = list_first_entry(&c->txq, struct ctl_txframe, link);
		bool reply = !f->event;

		while (c->tx_off < f->len) {
			ssize_t n = send(c->fd, f->buf + c->tx_off, f->len - c->tx_off, MSG_NOSIGNAL);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return 0;
			if (n < 0) {
				GW_INFO(COMP, "%s: %s not delivered: %s", c->name,
					reply ? "reply" : "event", strerror(errno));
				client_close(c);
				return -EPIPE;
			}
			c->tx_off += (size_t)n;
		}
		list_del(&f->link);
		free(f->buf);
		free(f);
		c->tx_off = 0;
		if (!reply) {
			c->nevents--;
			continue;
		}
		c->reply_queued = false;
		if (c->close_after_tx)
			client_close(c);
	}
	return 0;
}

/* Queue a packed frame (buf is the queue's then); -ENOMEM. */
static int client_queue(struct ctl_client *c, uint8_t *buf, size_t len, bool event)
{
	struct ctl_txframe *f = malloc(sizeof(*f));

	if (!f) {
		free(buf);
		return -ENOMEM;
	}
	f->buf = buf;
	f->len = len;
	f->event = event;
	list_add_tail(&f->link, &c->txq);
	if (event)
		c->nevents++;
	else
		c->reply_queued = true;
	return 0;
}

void ctl_client_send(struct ctl_client *c, CtlReply *rep)
{
	uint8_t *buf;
	size_t len;
	int rc;

	if (c->dead)
		return;
	rc = ctl_frame_pack(&rep->base, &buf, &len);
	if (rc) {
		/* too big or no memory: say so in a reply that fits */
		CtlReply small = ISERGW__CTL__REPLY__INIT;
		char why[96];

		snprintf(why, sizeof(why), "reply could not be built: %s", strerror(-rc));
		small.status = rc;
		small.error = why;
		GW_WARN(COMP, "%s: %s", c->name, why);
		if (ctl_frame_pack(&small.base, &buf, &len)) {
			client_close(c);
			return;
		}
	}
	if (client_queue(c, buf, len, false)) {
		GW_WARN(COMP, "%s: out of memory queueing a reply: closing", c->name);
		client_close(c);
		return;
	}
	if (client_flush(c) == 0 && !c->dead)
		client_events(c);
}

/* Push an event to a subscriber; false when its queue is full (dropped) or it is gone. */
bool ctl_client_push_event(struct ctl_client *c, Isergw__Ctl__Event *ev)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	uint8_t *buf;
	size_t len;

	if (c->dead || !c->subscribed)
		return false;
	if (c->nevents >= CTL_EVENT_QUEUE_MAX) {
		/* a slow or stuck subscriber: never wait for it */
		if (c->dropped++ == 0)
			GW_WARN(COMP, "%s: %u events not yet read: dropping event %llu and the next ones "
				"until it catches up", c->name, c->nevents, (unsigned long long)ev->seq);
		return false;
	}
	ev->dropped = c->dropped;
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_EVENT;
	rep.event = ev;
	if (ctl_frame_pack(&rep.base, &buf, &len) || client_queue(c, buf, len, true)) {
		GW_WARN(COMP, "%s: out of memory: event %llu dropped", c->name,
			(unsigned long long)ev->seq);
		c->dropped++;
		return false;
	}
	if (c->dropped)
		GW_NOTICE(COMP, "%s: events flow again after %llu dropped", c->name,
			  (unsigned long long)c->dropped);
	c->dropped = 0;
	if (client_flush(c) == 0 && !c->dead)
		client_events(c);
	return !c->dead;
}

/* On the control reactor: number ev as the next event and push it to every subscriber. */
unsigned int ctl_publish(struct gw_ctl *ctl, Isergw__Ctl__Event *ev)
{
	struct list_head *pos, *n;
	unsigned int delivered = 0;

	ev->seq = ++ctl->event_seq;
	list_for_each_safe(pos, n, &ctl->clients) {
		struct ctl_client *c = list_entry(pos, struct ctl_client, link);

		delivered += ctl_client_push_event(c, ev);
	}
	return delivered;
}

/*
 * From any thread: fn(m) runs on the control reactor and drops ctl->inflight
 * when done. -ENOMEM (m freed) when the message cannot be sent.
 */
int ctl_post(struct gw_ctl *ctl, reactor_fn fn, void *m)
{
	atomic_fetch_add(&ctl->inflight, 1);
	if (reactor_send_msg(ctl->r, fn, m)) {
		atomic_fetch_sub(&ctl->inflight, 1);
		free(m);
		return -ENOMEM;
	}
	return 0;
}

void ctl_reply_err(struct ctl_client *c, int status, const char *why)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;

	rep.status = status;
	rep.error = ctl_str(why);
	ctl_client_send(c, &rep);
}

/* Finish an asynchronous request: reply (unless the client went away). */
void ctl_client_done(struct ctl_client *c, CtlReply *rep)
{
	c->busy = false;
	if (c->dead) {
		reactor_defer(c->ctl->r, &c->free_work);
		return;
	}
	ctl_client_send(c, rep);
}

static void handle_frame(struct ctl_client *c);

static void client_read(struct ctl_client *c)
{
	char why[160];
	int rc;

	while (!c->dead && !c->busy && !c->reply_queued) {
		rc = ctl_frame_rx_read(&c->rx, c->fd, CTL_FRAME_MAX);
		if (rc == 0)
			return;
		if (rc == 1) {
			handle_frame(c);
			ctl_frame_rx_reset(&c->rx);
			continue;
		}
		switch (rc) {
		case -ENOTCONN:
			GW_DEBUG(COMP, "%s: disconnected", c->name);
			client_close(c);
			return;
		case -EPIPE:
			snprintf(why, sizeof(why), "truncated frame: the connection ended after %u of "
				 "%u bytes", c->rx.hdr_have < CTL_FRAME_HDR ? c->rx.hdr_have
									    : CTL_FRAME_HDR + c->rx.have,
				 c->rx.hdr_have < CTL_FRAME_HDR ? CTL_FRAME_HDR
								: CTL_FRAME_HDR + c->rx.len);
			break;
		case -EMSGSIZE:
			snprintf(why, sizeof(why), "frame of %u bytes exceeds the maximum of %u bytes",
				 c->rx.len, CTL_FRAME_MAX);
			break;
		default:
			GW_WARN(COMP, "%s: read: %s", c->name, strerror(-rc));
			client_close(c);
			return;
		}
		/* the stream is out of step: answer (a half-closed peer still reads) and close */
		GW_WARN(COMP, "%s: %s: closing", c->name, why);
		ctl_frame_rx_reset(&c->rx);
		c->close_after_tx = true;
		ctl_reply_err(c, rc, why);
		return;
	}
}

static void client_events(struct ctl_client *c)
{
	uint32_t ev = 0;

	if (c->dead)
		return;
	if (!list_empty(&c->txq))
		ev |= EPOLLOUT;
	if (!c->busy && !c->reply_queued)
		ev |= EPOLLIN;
	if (reactor_mod_fd(c->ctl->r, &c->h, ev))
		client_close(c);
}

static void client_cb(void *arg, uint32_t events)
{
	struct ctl_client *c = arg;

	if (c->dead)
		return;
	if (c->busy && (events & (EPOLLERR | EPOLLHUP))) {
		/* gone while its request is in service: reported at every wait, so close now */
		GW_DEBUG(COMP, "%s: disconnected before its answer", c->name);
		client_close(c);
		return;
	}
	if (!list_empty(&c->txq) && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		if (client_flush(c) || c->dead)
			return;
	}
	if (!c->reply_queued && !c->busy && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		client_read(c);
	client_events(c);
}

int ctl_client_add(struct gw_ctl *ctl, int fd, const struct ucred *cred)
{
	struct ctl_client *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->ctl = ctl;
	c->fd = fd;
	list_init(&c->txq);
	snprintf(c->name, sizeof(c->name), "control client pid %d uid %u", (int)cred->pid,
		 (unsigned int)cred->uid);
	ctl_frame_rx_init(&c->rx);
	list_init(&c->link);
	reactor_deferred_init(&c->free_work, client_free_now, c);
	rc = reactor_add_fd(ctl->r, &c->h, fd, EPOLLIN, client_cb, c);
	if (rc) {
		free(c);
		return rc;
	}
	list_add_tail(&c->link, &ctl->clients);
	ctl->nclients++;
	if (cred->uid != 0 && cred->uid != geteuid()) {
		char why[96];

		snprintf(why, sizeof(why), "permission denied: uid %u may not use the control socket",
			 (unsigned int)cred->uid);
		GW_WARN(COMP, "%s: %s", c->name, why);
		c->close_after_tx = true;
		ctl_reply_err(c, -EACCES, why);
		return 0;
	}
	if (ctl->nclients > CTL_MAX_CLIENTS) {
		GW_WARN(COMP, "%s: refused: already %u clients", c->name, CTL_MAX_CLIENTS);
		c->close_after_tx = true;
		ctl_reply_err(c, -EBUSY, "too many control clients");
		return 0;
	}
	GW_DEBUG(COMP, "%s: connected", c->name);
	return 0;
}

static void accept_cb(void *arg, uint32_t events)
{
	struct gw_ctl *ctl = arg;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd;

	(void)events;
	fd = accept4(ctl->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR)
			GW_WARN(COMP, "accept on %s: %s", ctl->path, strerror(errno));
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		GW_WARN(COMP, "client without peer credentials (%s): refused", strerror(errno));
		close(fd);
		return;
	}
	if (ctl_client_add(ctl, fd, &cred))
		close(fd);
}

/* ------------------------------------------------------------ requests */

void ctl_reply_refused(struct ctl_client *c, const CtlRequest *req, int rc, const char *why)
{
	GW_WARN(COMP, "%s: %s refused: %s", c->name, req ? ctl_op_name(req) : "request", why);
	ctl_reply_err(c, rc, why);
}

static void handle_frame(struct ctl_client *c)
{
	CtlRequest *req = NULL;
	char why[256];
	int rc;

	rc = ctl_request_decode(c->rx.body, c->rx.len, &req, why, sizeof(why));
	if (rc) {
		ctl_reply_refused(c, NULL, rc, why);
		return;
	}
	GW_DEBUG(COMP, "%s: %s", c->name, ctl_op_name(req));
	switch (req->op_case) {
	case ISERGW__CTL__REQUEST__OP_GET_STATUS:
		ctl_op_get_status(c);
		break;
	case ISERGW__CTL__REQUEST__OP_APPLY_CONFIG:
		ctl_op_apply_config(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_RELOAD_CONFIG:
		ctl_op_reload_config(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_CHANGE_LUN:
		ctl_op_change_lun(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES:
		ctl_op_set_alua(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_GET_ALUA_STATES:
		ctl_op_get_alua(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_LIST_SESSIONS:
		ctl_op_list_sessions(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_GET_COUNTERS:
		ctl_op_get_counters(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_LOGOUT:
		ctl_op_logout(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_SUBSCRIBE:
		ctl_op_subscribe(c);
		break;
	case ISERGW__CTL__REQUEST__OP_ALUA_REQUEST_DONE:
		ctl_op_alua_request_done(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_LU_STATE_APPLY:
		ctl_op_lu_state_apply(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_LU_STATE_DONE:
		ctl_op_lu_state_done(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_SET_ALUA_MAP:
		ctl_op_set_alua_map(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_RENEW_LEASE:
		ctl_op_renew_lease(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_STEP_DOWN:
		ctl_op_step_down(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_GET_LEASE:
		ctl_op_get_lease(c, req);
		break;
	default: /* ctl_request_decode lets only known operations through */
		ctl_reply_refused(c, req, -EOPNOTSUPP, "unknown operation");
		break;
	}
	ctl_request_free(req);
	if (!c->dead)
		client_events(c);
}

/* ------------------------------------------------------------ start, stop */

static void *ctl_thread(void *arg)
{
	reactor_run(arg);
	return NULL;
}

int ctl_create(struct gw *gw, const struct gw_ctl_params *p, struct gw_ctl **out)
{
	struct gw_ctl *ctl;
	struct timespec now;
	int rc;

	if (strlen(p->path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	ctl->gw = gw;
	ctl->load = p->load;
	ctl->load_file = p->load_file;
	ctl->config_path = p->config_path;
	ctl->load_arg = p->load_arg;
	ctl->lfd = -1;
	ctl->start_ms = gw_now_ms();
	clock_gettime(CLOCK_REALTIME, &now);
	ctl->start_unix_ms = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
	snprintf(ctl->path, sizeof(ctl->path), "%s", p->path);
	pthread_mutex_init(&ctl->reload_lock, NULL);
	list_init(&ctl->clients);
	reactor_timer_init(&ctl->transition_timer, ctl_alua_transition_end, ctl);
	reactor_timer_init(&ctl->lease_timer, ctl_lease_timer_fired, ctl);
	rc = reactor_create(gw->nreactors, &ctl->r);
	if (rc) {
		pthread_mutex_destroy(&ctl->reload_lock);
		free(ctl);
		return rc;
	}
	*out = ctl;
	return 0;
}

void ctl_destroy(struct gw_ctl *ctl)
{
	/* a client that went away during an ALUA transition is no longer listed */
	if (ctl->transition_client && ctl->transition_client->dead)
		client_free_now(ctl->transition_client);
	ctl->transition_client = NULL;
	while (!list_empty(&ctl->clients)) {
		struct ctl_client *c = list_first_entry(&ctl->clients, struct ctl_client, link);

		list_del(&c->link);
		close(c->fd);
		client_free_now(c);
	}
	reactor_destroy(ctl->r);
	json_object_put(ctl->config_doc);
	ctl_alua_free(ctl);
	pthread_mutex_destroy(&ctl->reload_lock);
	free(ctl);
}

int gw_ctl_start(struct gw *gw, const struct gw_ctl_params *p, struct gw_ctl **out)
{
	struct gw_ctl *ctl;
	int rc;

	rc = ctl_create(gw, p, &ctl);
	if (rc)
		return rc;
	ctl->lfd = gw_unix_listen(p->path, COMP, "control socket", 16);
	if (ctl->lfd < 0) {
		rc = ctl->lfd;
		goto err_destroy;
	}
	rc = reactor_add_fd(ctl->r, &ctl->lh, ctl->lfd, EPOLLIN, accept_cb, ctl);
	if (rc)
		goto err_unlink;
	/* the lease's timer, for a lease configured before any request (none yet: not armed) */
	ctl_lease_resync(ctl);
	rc = -pthread_create(&ctl->thread, NULL, ctl_thread, ctl->r);
	if (rc)
		goto err_unlink;
	/* SET TARGET PORT GROUPS under the external ALUA policy comes here */
	scsi_alua_set_request_handler(ctl_alua_request, ctl);
	/* and the LU state changes of the cluster store */
	scsi_cluster_set_handler(ctl_lu_propose, ctl);
	scsi_cluster_set_lock_handler(ctl_lu_lock, ctl);
	GW_NOTICE(COMP, "control socket %s", p->path);
	*out = ctl;
	return 0;

err_unlink:
	unlink(p->path);
	close(ctl->lfd);
err_destroy:
	ctl_destroy(ctl);
	return rc;
}

void gw_ctl_stop(struct gw_ctl *ctl)
{
	if (!ctl)
		return;
	/* no more events: from here SET TARGET PORT GROUPS finds nobody listening */
	scsi_alua_set_request_handler(NULL, NULL);
	scsi_cluster_set_handler(NULL, NULL);
	scsi_cluster_set_lock_handler(NULL, NULL);
	/* requests out on the reactors come back to the control thread first */
	for (unsigned int i = 0; i < 500 && atomic_load(&ctl->inflight); i++)
		usleep(10 * 1000);
	reactor_stop(ctl->r);
	pthread_join(ctl->thread, NULL);
	if (atomic_load(&ctl->inflight)) {
		/* a reactor still holds one: it will send it back here, so nothing is freed */
		GW_WARN(COMP, "%u control request(s) still on the reactors at shutdown: control "
			"state left allocated", atomic_load(&ctl->inflight));
		close(ctl->lfd);
		unlink(ctl->path);
		return;
	}
	/* the thread is gone: its objects are ours */
	close(ctl->lfd);
	unlink(ctl->path);
	GW_NOTICE(COMP, "control socket %s closed", ctl->path);
	ctl_destroy(ctl);
}

int gw_ctl_reload(struct gw_ctl *ctl, struct gw *gw, struct gw_config *cfg)
{
	int rc;

	if (!ctl)
		return gw_reload(gw, cfg);
	pthread_mutex_lock(&ctl->reload_lock);
	rc = gw_reload(gw, cfg);
	pthread_mutex_unlock(&ctl->reload_lock);
	/* alua_lease and alua_lease_unavailable_ms may have changed */
	ctl_lease_resync(ctl);
	return rc;
}

int gw_ctl_reload_file(struct gw_ctl *ctl, char *err, size_t errlen)
{
	struct gw_config *cfg = NULL;
	const char *path = ctl->config_path ? ctl->config_path : "the configuration";
	char why[600] = "";
	size_t inuse;
	int rc;

	err[0] = '\0';
	if (!ctl->load_file)
		return -EOPNOTSUPP;
	gw_notify_reloading();
	rc = ctl->load_file(ctl->load_arg, &cfg, why, sizeof(why));
	if (rc == -EOPNOTSUPP) {
		/* quick serve or managed: nothing to re-read, nothing wrong */
		GW_NOTICE(COMP, "reload: %s", why);
		snprintf(err, errlen, "%s", why);
		gw_notify_ready("nothing to reload: %s", why);
		return rc;
	}
	GW_NOTICE(COMP, "reload: re-reading %s", path);
	if (rc) {
		if (!why[0])
			snprintf(why, sizeof(why), "%s", strerror(-rc));
		/* the error itself, once; the reason names the file */
		GW_ERR(COMP, "reload failed: configuration kept as it was: %s", why);
		snprintf(err, errlen, "%s", why);
		gw_notify_ready("reload of %s failed: configuration kept", path);
		return rc;
	}
	rc = gw_ctl_reload(ctl, ctl->gw, cfg);
	if (rc) {
		/* what failed was logged by gw_reload at err */
		snprintf(err, errlen, "%s could not be applied: %s (configuration kept as it was)",
			 path, strerror(-rc));
		GW_WARN(COMP, "reload failed: %s", err);
		gw_notify_ready("reload of %s failed: configuration kept", path);
		return rc;
	}
	inuse = gw_portals_port_in_use(ctl->gw);
	if (inuse)
		gw_notify_ready("%s reloaded; degraded: %zu portal(s) not listening: address in use",
				path, inuse);
	else
		gw_notify_ready("%s reloaded", path);
	return 0;
}
