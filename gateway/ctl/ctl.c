/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control socket server (ctl/ctl.h, docs/control.md).
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
 *
 * Events: SET TARGET PORT GROUPS under the external ALUA policy reaches
 * ctl_alua_request() on the command's reactor, which copies it to the
 * control thread by message (nothing else on the data path); the control
 * thread pushes it to every subscriber, or tells the SCSI layer at once that
 * nobody took it.
 */
#include "ctl/ctl.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/iscsi.h"
#include "ctl_wire.h"
#include "util/fsutil.h"
#include "util/log.h"

#define COMP "ctl"
#define CTL_MAX_CLIENTS 32u
#define CTL_ALUA_KNOWN_MAX 256u       /* groups listed per device group */

struct gw_ctl;

/* A frame waiting to be written to a client. */
struct ctl_txframe {
	struct list_head link;          /* ctl_client.txq */
	uint8_t *buf;
	size_t len;
	bool event;
};

struct ctl_client {
	struct gw_ctl *ctl;
	int fd;
	struct reactor_fd h;
	struct ctl_frame_rx rx;
	struct list_head txq;           /* struct ctl_txframe; the first is being written */
	size_t tx_off;                  /* bytes of the first written */
	unsigned int nevents;           /* event frames in txq */
	bool reply_queued;              /* a reply is in txq */
	bool busy;                      /* a request is in service */
	bool close_after_tx;            /* close once the reply is written */
	bool dead;                      /* socket closed; freed when no longer busy */
	bool subscribed;                /* receives events */
	uint64_t dropped;               /* events dropped since the last one queued */
	char name[64];                  /* "pid N uid N" */
	struct list_head link;          /* ctl->clients */
	struct reactor_deferred free_work;
};

/* One ALUA request, normalised (groups sorted) for the same-epoch comparison. */
struct alua_set {
	char dg[CTL_DG_NAME_MAX + 1];
	size_t n;
	struct scsi_alua_update u[CTL_ALUA_MAX_GROUPS];
	uint32_t transition_ms;
};

struct gw_ctl {
	struct gw *gw;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int (*load)(void *arg, const char *json, struct gw_config **out, char *err, size_t errlen);
	void *load_arg;
	struct reactor *r;
	pthread_t thread;
	pthread_mutex_t reload_lock;    /* gw_reload from here or from SIGHUP */
	atomic_uint inflight;           /* requests out on the reactors, events on their way here */
	atomic_uint nsubscribers;       /* clients subscribed to events */
	uint64_t start_ms;
	int lfd;
	struct reactor_fd lh;
	/* ---- control thread only ---- */
	struct list_head clients;
	size_t nclients;
	uint64_t epoch;                 /* newest accepted */
	uint64_t config_epoch;
	json_object *config_doc;        /* the document applied at config_epoch */
	uint64_t alua_epoch;
	struct alua_set alua_last;      /* the request accepted at alua_epoch */
	/* an ALUA transition in progress */
	struct reactor_timer transition_timer;
	struct ctl_client *transition_client;
	struct alua_set transition_final;
	uint64_t event_seq;             /* of the last event */
};

/* ------------------------------------------------------------ small helpers */

/* Allocations of one reply, freed together once it is packed. */
struct arena {
	void **p;
	size_t n, cap;
	bool failed;
};

static void *arena_alloc(struct arena *a, size_t size)
{
	void *m;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 32;
		void **np = realloc(a->p, cap * sizeof(*np));

		if (!np) {
			a->failed = true;
			return NULL;
		}
		a->p = np;
		a->cap = cap;
	}
	m = calloc(1, size ? size : 1);
	if (!m) {
		a->failed = true;
		return NULL;
	}
	a->p[a->n++] = m;
	return m;
}

static char *arena_strdup(struct arena *a, const char *s)
{
	size_t len = strlen(s);
	char *d = arena_alloc(a, len + 1);

	if (d)
		memcpy(d, s, len + 1);
	return d ? d : ctl_str("");
}

static void arena_free(struct arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->p[i]);
	free(a->p);
	memset(a, 0, sizeof(*a));
}

static int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

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

static void client_send(struct ctl_client *c, CtlReply *rep)
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
static bool client_push_event(struct ctl_client *c, Isergw__Ctl__Event *ev)
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

static void client_reply_err(struct ctl_client *c, int status, const char *why)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;

	rep.status = status;
	rep.error = ctl_str(why);
	client_send(c, &rep);
}

/* Finish an asynchronous request: reply (unless the client went away). */
static void client_done(struct ctl_client *c, CtlReply *rep)
{
	c->busy = false;
	if (c->dead) {
		reactor_defer(c->ctl->r, &c->free_work);
		return;
	}
	client_send(c, rep);
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
		client_reply_err(c, rc, why);
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

static void accept_cb(void *arg, uint32_t events)
{
	struct gw_ctl *ctl = arg;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct ctl_client *c;
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
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->ctl = ctl;
	c->fd = fd;
	list_init(&c->txq);
	snprintf(c->name, sizeof(c->name), "control client pid %d uid %u", (int)cred.pid,
		 (unsigned int)cred.uid);
	ctl_frame_rx_init(&c->rx);
	list_init(&c->link);
	reactor_deferred_init(&c->free_work, client_free_now, c);
	if (reactor_add_fd(ctl->r, &c->h, fd, EPOLLIN, client_cb, c)) {
		close(fd);
		free(c);
		return;
	}
	list_add_tail(&c->link, &ctl->clients);
	ctl->nclients++;
	if (cred.uid != 0 && cred.uid != geteuid()) {
		char why[96];

		snprintf(why, sizeof(why), "permission denied: uid %u may not use the control socket",
			 (unsigned int)cred.uid);
		GW_WARN(COMP, "%s: %s", c->name, why);
		c->close_after_tx = true;
		client_reply_err(c, -EACCES, why);
		return;
	}
	if (ctl->nclients > CTL_MAX_CLIENTS) {
		GW_WARN(COMP, "%s: refused: already %u clients", c->name, CTL_MAX_CLIENTS);
		c->close_after_tx = true;
		client_reply_err(c, -EBUSY, "too many control clients");
		return;
	}
	GW_DEBUG(COMP, "%s: connected", c->name);
}

/* ------------------------------------------------------------ requests */

static void reply_refused(struct ctl_client *c, const CtlRequest *req, int rc, const char *why)
{
	GW_WARN(COMP, "%s: %s refused: %s", c->name, req ? ctl_op_name(req) : "request", why);
	client_reply_err(c, rc, why);
}

static void op_get_status(struct ctl_client *c)
{
	struct gw_ctl *ctl = c->ctl;
	struct gw *gw = ctl->gw;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__StatusInfo si = ISERGW__CTL__STATUS_INFO__INIT;

	si.version = ctl_str(ISERGW_VERSION);
	si.pid = (uint32_t)getpid();
	si.epoch = ctl->epoch;
	si.config_epoch = ctl->config_epoch;
	si.alua_epoch = ctl->alua_epoch;
	si.uptime_ms = gw_now_ms() - ctl->start_ms;
	si.sessions = (uint32_t)atomic_load(&gw->stats.sessions);
	si.connections = (uint32_t)atomic_load(&gw->stats.connections);
	si.reactors = gw->nreactors;
	pthread_mutex_lock(&gw->sess_lock);
	si.targets = (uint32_t)gw->ntargets;
	si.portals = (uint32_t)gw->nportals;
	pthread_mutex_unlock(&gw->sess_lock);
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_STATUS_INFO;
	rep.status_info = &si;
	client_send(c, &rep);
}

static void op_apply_config(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__ApplyConfig *a = req->apply_config;
	struct gw_ctl *ctl = c->ctl;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__ApplyResult res = ISERGW__CTL__APPLY_RESULT__INIT;
	enum json_tokener_error jerr = json_tokener_success;
	struct gw_config *cfg = NULL;
	json_object *doc;
	char why[600];
	int rc;

	if (a->epoch < ctl->epoch) {
		snprintf(why, sizeof(why), "epoch %llu is older than the current epoch %llu",
			 (unsigned long long)a->epoch, (unsigned long long)ctl->epoch);
		reply_refused(c, req, -ESTALE, why);
		return;
	}
	doc = json_tokener_parse_verbose(a->config_json, &jerr);
	if (!doc) {
		snprintf(why, sizeof(why), "configuration: not a JSON document: %s",
			 json_tokener_error_desc(jerr));
		reply_refused(c, req, -EINVAL, why);
		return;
	}
	res.epoch = a->epoch;
	if (a->epoch == ctl->config_epoch) {
		bool same = json_object_equal(doc, ctl->config_doc);

		json_object_put(doc);
		if (!same) {
			snprintf(why, sizeof(why), "epoch %llu was already applied with a different "
				 "configuration", (unsigned long long)a->epoch);
			reply_refused(c, req, -EEXIST, why);
			return;
		}
		GW_INFO(COMP, "%s: configuration of epoch %llu already applied", c->name,
			(unsigned long long)a->epoch);
		res.changed = false;
		goto reply;
	}
	why[0] = '\0';
	rc = ctl->load(ctl->load_arg, a->config_json, &cfg, why, sizeof(why));
	if (rc) {
		json_object_put(doc);
		if (!why[0])
			snprintf(why, sizeof(why), "configuration: %s", strerror(-rc));
		reply_refused(c, req, rc, why);
		return;
	}
	GW_NOTICE(COMP, "%s: applying the configuration of epoch %llu", c->name,
		  (unsigned long long)a->epoch);
	rc = gw_ctl_reload(ctl, ctl->gw, cfg);
	if (rc) {
		json_object_put(doc);
		snprintf(why, sizeof(why), "reload failed: %s", strerror(-rc));
		reply_refused(c, req, rc, why);
		return;
	}
	json_object_put(ctl->config_doc);
	ctl->config_doc = doc;
	ctl->config_epoch = a->epoch;
	ctl->epoch = a->epoch;
	res.changed = true;
reply:
	pthread_mutex_lock(&ctl->gw->sess_lock);
	res.targets = (uint32_t)ctl->gw->ntargets;
	res.portals = (uint32_t)ctl->gw->nportals;
	pthread_mutex_unlock(&ctl->gw->sess_lock);
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_APPLY;
	rep.apply = &res;
	client_send(c, &rep);
}

/* ---- ALUA */

/*
 * The one place that changes ALUA states: all groups of one device group at
 * once (an empty name is the default device group).
 */
static int alua_apply(const struct alua_set *s, bool transitioning, char *err, size_t errlen)
{
	struct scsi_alua_update u[CTL_ALUA_MAX_GROUPS];
	int rc;

	/* device groups come from the configuration: a name nobody configured is a mistake */
	if (s->dg[0] && scsi_alua_get_states(s->dg, NULL, 0, NULL) == -ENOENT)
		return errf(err, errlen, -ENOENT, "device group '%s' does not exist", s->dg);
	memcpy(u, s->u, s->n * sizeof(u[0]));
	for (size_t i = 0; transitioning && i < s->n; i++)
		u[i].state = SCSI_ALUA_TRANSITIONING;
	rc = scsi_alua_set_states(s->dg, u, s->n);
	if (rc == -ENOSPC)
		return errf(err, errlen, rc, "the ALUA table is full");
	if (rc)
		return errf(err, errlen, rc, "ALUA states not set: %s", strerror(-rc));
	return 0;
}

static int cmp_update(const void *a, const void *b)
{
	const struct scsi_alua_update *x = a, *y = b;

	return (int)x->tpg_id - (int)y->tpg_id;
}

static bool alua_set_equal(const struct alua_set *a, const struct alua_set *b)
{
	if (strcmp(a->dg, b->dg) || a->n != b->n || a->transition_ms != b->transition_ms)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->u[i].tpg_id != b->u[i].tpg_id || a->u[i].state != b->u[i].state ||
		    a->u[i].pref != b->u[i].pref)
			return false;
	return true;
}

/*
 * The AluaStates payload: every group the device group knows (the port map,
 * the local portals' groups and every group with an explicit state), from
 * the SCSI layer's own table.
 */
static Isergw__Ctl__AluaStates *alua_states_build(struct gw_ctl *ctl, struct arena *a,
						  const char *dg)
{
	Isergw__Ctl__AluaStates *st = arena_alloc(a, sizeof(*st));
	struct scsi_alua_update u[CTL_ALUA_KNOWN_MAX];
	size_t n = 0;

	if (!st)
		return NULL;
	isergw__ctl__alua_states__init(st);
	if (scsi_alua_get_states(dg, u, CTL_ALUA_KNOWN_MAX, &n))
		n = 0;
	if (n > CTL_ALUA_KNOWN_MAX)
		n = CTL_ALUA_KNOWN_MAX;
	st->epoch = ctl->alua_epoch;
	st->device_group = arena_strdup(a, dg);
	st->transition_pending = ctl->transition_timer.armed;
	st->groups = arena_alloc(a, (n ? n : 1) * sizeof(*st->groups));
	if (!st->groups)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		Isergw__Ctl__AluaGroupState *g = arena_alloc(a, sizeof(*g));

		if (!g)
			return NULL;
		isergw__ctl__alua_group_state__init(g);
		g->tpg_id = u[i].tpg_id;
		g->state = (Isergw__Ctl__AluaState)u[i].state;
		g->pref = u[i].pref;
		st->groups[st->n_groups++] = g;
	}
	return st;
}

static void alua_reply(struct ctl_client *c, const char *dg, bool async)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	struct arena a = { 0 };

	rep.alua = alua_states_build(c->ctl, &a, dg);
	if (rep.alua) {
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_ALUA;
	} else {
		rep.status = -ENOMEM;
		rep.error = ctl_str("out of memory");
	}
	if (async)
		client_done(c, &rep);
	else
		client_send(c, &rep);
	arena_free(&a);
}

static void transition_cancel(struct gw_ctl *ctl, uint64_t by_epoch)
{
	struct ctl_client *c = ctl->transition_client;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	char why[96];

	if (!ctl->transition_timer.armed)
		return;
	reactor_timer_cancel(ctl->r, &ctl->transition_timer);
	ctl->transition_client = NULL;
	GW_NOTICE(COMP, "ALUA transition superseded by epoch %llu", (unsigned long long)by_epoch);
	snprintf(why, sizeof(why), "superseded by epoch %llu before the transition ended",
		 (unsigned long long)by_epoch);
	rep.status = -ECANCELED;
	rep.error = why;
	if (c)
		client_done(c, &rep);
}

static void transition_end(void *arg)
{
	struct gw_ctl *ctl = arg;
	struct ctl_client *c = ctl->transition_client;
	char why[160];
	int rc;

	ctl->transition_client = NULL;
	rc = alua_apply(&ctl->transition_final, false, why, sizeof(why));
	if (rc) {
		CtlReply rep = ISERGW__CTL__REPLY__INIT;

		GW_ERR(COMP, "ALUA transition of epoch %llu: final states not set: %s",
		       (unsigned long long)ctl->alua_epoch, why);
		rep.status = rc;
		rep.error = why;
		if (c)
			client_done(c, &rep);
		return;
	}
	GW_NOTICE(COMP, "ALUA transition of epoch %llu done", (unsigned long long)ctl->alua_epoch);
	if (c)
		alua_reply(c, ctl->transition_final.dg, true);
}

static void op_set_alua(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__SetAluaStates *s = req->set_alua_states;
	struct gw_ctl *ctl = c->ctl;
	struct alua_set set;
	char why[200], line[512];
	size_t off = 0;
	int rc;

	memset(&set, 0, sizeof(set));
	snprintf(set.dg, sizeof(set.dg), "%s", s->device_group);
	set.n = s->n_groups;
	set.transition_ms = s->transition_ms;
	for (size_t i = 0; i < s->n_groups; i++) {
		set.u[i].tpg_id = (uint16_t)s->groups[i]->tpg_id;
		set.u[i].state = (uint8_t)s->groups[i]->state;
		set.u[i].pref = s->groups[i]->pref;
	}
	qsort(set.u, set.n, sizeof(set.u[0]), cmp_update);
	if (s->epoch < ctl->epoch) {
		snprintf(why, sizeof(why), "epoch %llu is older than the current epoch %llu",
			 (unsigned long long)s->epoch, (unsigned long long)ctl->epoch);
		reply_refused(c, req, -ESTALE, why);
		return;
	}
	if (s->epoch == ctl->alua_epoch) {
		if (!alua_set_equal(&set, &ctl->alua_last)) {
			snprintf(why, sizeof(why), "epoch %llu was already used for different ALUA "
				 "states", (unsigned long long)s->epoch);
			reply_refused(c, req, -EEXIST, why);
			return;
		}
		alua_reply(c, set.dg, false);
		return;
	}
	rc = alua_apply(&set, set.transition_ms > 0, why, sizeof(why));
	if (rc) {
		reply_refused(c, req, rc, why);
		return;
	}
	transition_cancel(ctl, s->epoch);
	ctl->epoch = s->epoch;
	ctl->alua_epoch = s->epoch;
	ctl->alua_last = set;
	for (size_t i = 0; i < set.n && off < sizeof(line) - 40; i++)
		off += (size_t)snprintf(line + off, sizeof(line) - off, " %u=%s%s", set.u[i].tpg_id,
					ctl_alua_state_name(set.u[i].state),
					set.u[i].pref ? ",pref" : "");
	GW_NOTICE(COMP, "%s: ALUA epoch %llu%s%s:%s%s", c->name, (unsigned long long)s->epoch,
		  set.dg[0] ? " device group " : "", set.dg, line,
		  set.transition_ms ? " (transitioning first)" : "");
	if (!set.transition_ms) {
		alua_reply(c, set.dg, false);
		return;
	}
	ctl->transition_final = set;
	ctl->transition_client = c;
	c->busy = true;
	reactor_timer_arm(ctl->r, &ctl->transition_timer, set.transition_ms);
}

static void op_get_alua(struct ctl_client *c, const CtlRequest *req)
{
	const char *dg = req->get_alua_states->device_group;
	char why[160];

	/* as for SetAluaStates: a device group of the configuration, or the default one */
	if (dg[0] && scsi_alua_get_states(dg, NULL, 0, NULL) == -ENOENT) {
		snprintf(why, sizeof(why), "device group '%s' does not exist", dg);
		reply_refused(c, req, -ENOENT, why);
		return;
	}
	alua_reply(c, dg, false);
}

/* ---- events */

static void op_subscribe(struct ctl_client *c)
{
	struct gw_ctl *ctl = c->ctl;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__Subscribed sub = ISERGW__CTL__SUBSCRIBED__INIT;
	uint32_t timeout_ms;
	enum scsi_alua_policy pol = scsi_alua_get_policy(&timeout_ms);

	if (!c->subscribed) {
		c->subscribed = true;
		atomic_fetch_add(&ctl->nsubscribers, 1);
		GW_NOTICE(COMP, "%s: subscribed to events (ALUA policy %s)", c->name,
			  pol == SCSI_ALUA_POLICY_EXTERNAL ? "external" : "local");
	}
	sub.alua_policy = ctl_str(pol == SCSI_ALUA_POLICY_EXTERNAL ? "external" : "local");
	sub.alua_request_timeout_ms = timeout_ms;
	sub.subscribers = atomic_load(&ctl->nsubscribers);
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_SUBSCRIBED;
	rep.subscribed = &sub;
	client_send(c, &rep);
}

static void op_alua_request_done(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__AluaRequestDone *d = req->alua_request_done;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	char why[160];
	int rc;

	rc = scsi_alua_request_done(d->request_id, d->status);
	if (rc == -ENOENT) {
		snprintf(why, sizeof(why), "no SET TARGET PORT GROUPS request %llu is waiting "
			 "(already answered, timed out or aborted)", (unsigned long long)d->request_id);
		reply_refused(c, req, rc, why);
		return;
	}
	if (rc && rc != -EALREADY) {
		snprintf(why, sizeof(why), "request %llu: %s", (unsigned long long)d->request_id,
			 strerror(-rc));
		reply_refused(c, req, rc, why);
		return;
	}
	GW_NOTICE(COMP, "%s: ALUA request %llu answered %s%s%s%s", c->name,
		  (unsigned long long)d->request_id, d->status ? strerror(-d->status) : "done",
		  d->reason[0] ? " (" : "", d->reason, d->reason[0] ? ")" : "");
	if (rc == -EALREADY)
		GW_INFO(COMP, "ALUA request %llu was already decided (its states were set)",
			(unsigned long long)d->request_id);
	client_send(c, &rep);
}

/* A SET TARGET PORT GROUPS copied here from its reactor. */
struct alua_event_msg {
	struct gw_ctl *ctl;
	struct scsi_alua_request req;
};

static void alua_event_run(void *arg)
{
	struct alua_event_msg *m = arg;
	struct gw_ctl *ctl = m->ctl;
	const struct scsi_alua_request *r = &m->req;
	Isergw__Ctl__AluaGroupState gs[SCSI_ALUA_REQUEST_GROUPS_MAX];
	Isergw__Ctl__AluaGroupState *gp[SCSI_ALUA_REQUEST_GROUPS_MAX];
	Isergw__Ctl__AluaChangeRequest a = ISERGW__CTL__ALUA_CHANGE_REQUEST__INIT;
	Isergw__Ctl__Event ev = ISERGW__CTL__EVENT__INIT;
	struct list_head *pos, *n;
	unsigned int delivered = 0;

	a.request_id = r->id;
	a.device_group = ctl_str(r->dg);
	a.initiator_port = ctl_str(r->initiator_port);
	a.rel_port_id = r->rel_port_id;
	a.tpg_id = r->tpg_id;
	a.lun = r->lun;
	a.timeout_ms = r->timeout_ms;
	for (size_t i = 0; i < r->n && i < SCSI_ALUA_REQUEST_GROUPS_MAX; i++) {
		isergw__ctl__alua_group_state__init(&gs[i]);
		gs[i].tpg_id = r->u[i].tpg_id;
		gs[i].state = (Isergw__Ctl__AluaState)r->u[i].state;
		gp[i] = &gs[i];
		a.n_groups++;
	}
	a.groups = gp;
	ev.seq = ++ctl->event_seq;
	ev.kind_case = ISERGW__CTL__EVENT__KIND_ALUA_CHANGE_REQUEST;
	ev.alua_change_request = &a;
	list_for_each_safe(pos, n, &ctl->clients) {
		struct ctl_client *c = list_entry(pos, struct ctl_client, link);

		delivered += client_push_event(c, &ev);
	}
	if (delivered) {
		GW_INFO(COMP, "ALUA request %llu (device group %s) sent to %u subscriber(s) as event "
			"%llu", (unsigned long long)r->id, r->dg, delivered,
			(unsigned long long)ev.seq);
	} else {
		GW_WARN(COMP, "ALUA request %llu (device group %s): no subscriber took it",
			(unsigned long long)r->id, r->dg);
		(void)scsi_alua_request_done(r->id, -ENOTCONN);
	}
	free(m);
	atomic_fetch_sub(&ctl->inflight, 1);
}

/* On the command's reactor, under the SCSI layer's ALUA lock: copy and go. */
static int ctl_alua_request(const struct scsi_alua_request *req, void *arg)
{
	struct gw_ctl *ctl = arg;
	struct alua_event_msg *m;

	if (atomic_load(&ctl->nsubscribers) == 0)
		return -ENOTCONN;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->ctl = ctl;
	m->req = *req;
	atomic_fetch_add(&ctl->inflight, 1);
	if (reactor_send_msg(ctl->r, alua_event_run, m)) {
		atomic_fetch_sub(&ctl->inflight, 1);
		free(m);
		return -ENOMEM;
	}
	return 0;
}

/* ---- requests answered by the reactors */

/*
 * A request out on the reactors: `left` counts the messages still to run
 * (plus one for the sender); the last one sends `finish` back to the
 * control thread.
 */
struct gather {
	struct gw_ctl *ctl;
	struct ctl_client *client;
	atomic_uint left;
	void (*finish)(struct gather *g);
	size_t n;                       /* slots */
	void *slots;
	/* logout */
	bool immediate;
	uint16_t grace_s;
};

struct gather_msg {
	struct gather *g;
	size_t idx;
	struct iscsi_conn *conn;        /* referenced */
};

static void gather_finish(void *arg)
{
	struct gather *g = arg;
	struct gw_ctl *ctl = g->ctl;

	g->finish(g);
	free(g->slots);
	free(g);
	atomic_fetch_sub(&ctl->inflight, 1);
}

static void gather_step(struct gather *g)
{
	if (atomic_fetch_sub(&g->left, 1) == 1 &&
	    reactor_send_msg(g->ctl->r, gather_finish, g))
		GW_ERR(COMP, "out of memory: a control request stays unanswered");
}

static struct gather *gather_new(struct ctl_client *c, void (*finish)(struct gather *),
				 size_t n, size_t slot_size)
{
	struct gather *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->slots = calloc(n ? n : 1, slot_size);
	if (!g->slots) {
		free(g);
		return NULL;
	}
	g->ctl = c->ctl;
	g->client = c;
	g->finish = finish;
	g->n = n;
	atomic_init(&g->left, 1);
	atomic_fetch_add(&c->ctl->inflight, 1);
	c->busy = true;
	return g;
}

/* Send fn to the reactor of session s's connection (caller holds sess_lock). */
static void gather_send_conn(struct gather *g, struct iscsi_session *s, size_t idx,
			     reactor_fn fn)
{
	struct gather_msg *m = malloc(sizeof(*m));

	if (!m)
		return;
	m->g = g;
	m->idx = idx;
	m->conn = s->conn;
	iscsi_conn_get(s->conn);
	atomic_fetch_add(&g->left, 1);
	if (reactor_send_msg(s->reactor, fn, m)) {
		iscsi_conn_put(s->conn);
		atomic_fetch_sub(&g->left, 1);
		free(m);
	}
}

static void gather_fail(struct ctl_client *c, const CtlRequest *req)
{
	reply_refused(c, req, -ENOMEM, "out of memory");
}

static void fill_iostats(struct arena *a, Isergw__Ctl__IoStats *o, const struct gw_io_counters *s)
{
	uint64_t *lr = arena_alloc(a, sizeof(s->lat_read)), *lw = arena_alloc(a, sizeof(s->lat_write));

	isergw__ctl__io_stats__init(o);
	o->cmds_read = s->cmds[GW_IO_READ];
	o->cmds_write = s->cmds[GW_IO_WRITE];
	o->cmds_other = s->cmds[GW_IO_OTHER];
	o->bytes_read = s->bytes_read;
	o->bytes_written = s->bytes_written;
	o->check_condition = s->check_condition;
	o->busy = s->busy;
	o->reservation_conflict = s->reservation_conflict;
	o->aborted = s->aborted;
	if (lr && lw) {
		memcpy(lr, s->lat_read, sizeof(s->lat_read));
		memcpy(lw, s->lat_write, sizeof(s->lat_write));
		o->lat_read_us = lr;
		o->n_lat_read_us = GW_LAT_BUCKETS;
		o->lat_write_us = lw;
		o->n_lat_write_us = GW_LAT_BUCKETS;
	}
}

/* ListSessions */

struct sess_snap {
	bool valid, answered;
	char target[GW_NAME_MAX];
	char initiator[GW_NAME_MAX];
	uint8_t isid[6];
	uint16_t tsih;
	bool discovery;
	char portal[96];
	char transport[8];
	uint16_t cid;
	char peer[80], local[80];
	enum iscsi_conn_state state;
	uint64_t login_time;
	struct gw_io_counters stats;
};

static void sess_snap_run(void *arg)
{
	struct gather_msg *m = arg;
	struct sess_snap *s = (struct sess_snap *)m->g->slots + m->idx;
	struct iscsi_conn *c = m->conn;

	s->answered = true;
	s->cid = c->cid;
	snprintf(s->peer, sizeof(s->peer), "%s", c->peer);
	snprintf(s->local, sizeof(s->local), "%s", c->local);
	snprintf(s->portal, sizeof(s->portal), "%s:%u", c->portal->cfg->addr, c->portal->cfg->port);
	snprintf(s->transport, sizeof(s->transport), "%s", c->dm->name);
	s->state = c->state;
	s->login_time = c->login_time;
	if (c->sess)
		s->stats = c->sess->stats;
	iscsi_conn_put(c);
	gather_step(m->g);
	free(m);
}

static const char *conn_state_name(enum iscsi_conn_state s)
{
	switch (s) {
	case CONN_STATE_LOGIN: return "login";
	case CONN_STATE_FFP: return "full-feature";
	case CONN_STATE_LOGGED_OUT: return "logged-out";
	case CONN_STATE_CLOSING: return "closing";
	}
	return "?";
}

static void sessions_finish(struct gather *g)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__SessionList *sl;
	struct arena a = { 0 };
	struct sess_snap *snap = g->slots;

	sl = arena_alloc(&a, sizeof(*sl));
	if (sl) {
		isergw__ctl__session_list__init(sl);
		sl->sessions = arena_alloc(&a, (g->n ? g->n : 1) * sizeof(*sl->sessions));
	}
	for (size_t i = 0; sl && sl->sessions && i < g->n; i++) {
		const struct sess_snap *s = &snap[i];
		Isergw__Ctl__Session *o;
		Isergw__Ctl__Connection *cn;
		char isid[16];

		if (!s->valid || !s->answered)
			continue;
		o = arena_alloc(&a, sizeof(*o));
		cn = arena_alloc(&a, sizeof(*cn));
		if (!o || !cn)
			break;
		isergw__ctl__session__init(o);
		isergw__ctl__connection__init(cn);
		snprintf(isid, sizeof(isid), "%02x%02x%02x%02x%02x%02x", s->isid[0], s->isid[1],
			 s->isid[2], s->isid[3], s->isid[4], s->isid[5]);
		o->target = arena_strdup(&a, s->target);
		o->initiator = arena_strdup(&a, s->initiator);
		o->isid = arena_strdup(&a, isid);
		o->tsih = s->tsih;
		o->portal = arena_strdup(&a, s->portal);
		o->transport = arena_strdup(&a, s->transport);
		o->type = ctl_str((s->discovery ? "discovery" : "normal"));
		cn->cid = s->cid;
		cn->peer = arena_strdup(&a, s->peer);
		cn->local = arena_strdup(&a, s->local);
		cn->state = ctl_str(conn_state_name(s->state));
		cn->login_time = s->login_time;
		o->connections = arena_alloc(&a, sizeof(*o->connections));
		o->stats = arena_alloc(&a, sizeof(*o->stats));
		if (!o->connections || !o->stats)
			break;
		o->connections[0] = cn;
		o->n_connections = 1;
		fill_iostats(&a, o->stats, &s->stats);
		sl->sessions[sl->n_sessions++] = o;
	}
	if (a.failed || !sl) {
		rep.status = -ENOMEM;
		rep.error = ctl_str("out of memory");
	} else {
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_SESSIONS;
		rep.sessions = sl;
	}
	client_done(g->client, &rep);
	arena_free(&a);
}

static void op_list_sessions(struct ctl_client *c, const CtlRequest *req)
{
	struct gw *gw = c->ctl->gw;
	struct list_head *pos;
	struct gather *g;
	size_t n = 0, i = 0;

	pthread_mutex_lock(&gw->sess_lock);
	list_for_each(pos, &gw->sessions)
		n++;
	g = gather_new(c, sessions_finish, n, sizeof(struct sess_snap));
	if (!g) {
		pthread_mutex_unlock(&gw->sess_lock);
		gather_fail(c, req);
		return;
	}
	list_for_each(pos, &gw->sessions) {
		struct iscsi_session *s = list_entry(pos, struct iscsi_session, link);
		struct sess_snap *snap = (struct sess_snap *)g->slots + i;

		snap->valid = true;
		snprintf(snap->target, sizeof(snap->target), "%s",
			 s->target ? s->target->cfg->iqn : "");
		snprintf(snap->initiator, sizeof(snap->initiator), "%s", s->initiator);
		memcpy(snap->isid, s->isid, sizeof(snap->isid));
		snap->tsih = s->tsih;
		snap->discovery = s->type == ISCSI_SESSION_DISCOVERY;
		gather_send_conn(g, s, i, sess_snap_run);
		i++;
	}
	pthread_mutex_unlock(&gw->sess_lock);
	gather_step(g);
}

/* GetCounters */

struct ctr_slot {
	struct gw_ctr_sample *s;
	size_t n;
};

struct ctr_msg {
	struct gather *g;
	size_t idx;
};

static void counters_snap_run(void *arg)
{
	struct ctr_msg *m = arg;
	struct ctr_slot *slot = (struct ctr_slot *)m->g->slots + m->idx;

	if (gw_counters_snapshot(&slot->s, &slot->n))
		GW_WARN(COMP, "reactor %u: out of memory copying counters",
			reactor_index(reactor_self()));
	gather_step(m->g);
	free(m);
}

struct lun_acc {
	char target[GW_NAME_MAX];
	uint32_t lun;
	struct gw_io_counters c;
};

static int cmp_lun_acc(const void *a, const void *b)
{
	const struct lun_acc *x = a, *y = b;
	int r = strcmp(x->target, y->target);

	return r ? r : (x->lun > y->lun) - (x->lun < y->lun);
}

struct port_acc {
	uint16_t rel, tpg;
	struct gw_io_counters c;
};

static int cmp_port_acc(const void *a, const void *b)
{
	const struct port_acc *x = a, *y = b;

	if (x->rel != y->rel)
		return (int)x->rel - (int)y->rel;
	return (int)x->tpg - (int)y->tpg;
}

static void counters_finish(struct gather *g)
{
	struct ctr_slot *slots = g->slots;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__Counters *co;
	struct lun_acc *luns = NULL;
	struct port_acc *ports = NULL;
	size_t total = 0, nl = 0, np = 0;
	struct arena a = { 0 };
	struct gw *gw = g->ctl->gw;

	for (size_t i = 0; i < g->n; i++)
		total += slots[i].n;
	luns = calloc(total ? total : 1, sizeof(*luns));
	ports = calloc(total ? total : 1, sizeof(*ports));
	if (!luns || !ports)
		goto out_nomem;
	/* targets outlive the daemon's reloads (retired, freed at exit): their names are safe to read */
	pthread_mutex_lock(&gw->sess_lock);
	for (size_t i = 0; i < g->n; i++) {
		for (size_t k = 0; k < slots[i].n; k++) {
			const struct gw_ctr_sample *s = &slots[i].s[k];
			size_t j;

			if (s->kind == GW_CTR_LUN) {
				const char *iqn = ((const struct gw_target *)s->target)->cfg->iqn;

				for (j = 0; j < nl; j++)
					if (luns[j].lun == s->lun && !strcmp(luns[j].target, iqn))
						break;
				if (j == nl) {
					snprintf(luns[j].target, sizeof(luns[j].target), "%s", iqn);
					luns[j].lun = s->lun;
					nl++;
				}
				gw_counters_add(&luns[j].c, &s->c);
			} else {
				for (j = 0; j < np; j++)
					if (ports[j].rel == s->rel_port_id && ports[j].tpg == s->tpg_id)
						break;
				if (j == np) {
					ports[j].rel = s->rel_port_id;
					ports[j].tpg = s->tpg_id;
					np++;
				}
				gw_counters_add(&ports[j].c, &s->c);
			}
		}
	}
	pthread_mutex_unlock(&gw->sess_lock);
	qsort(luns, nl, sizeof(*luns), cmp_lun_acc);
	qsort(ports, np, sizeof(*ports), cmp_port_acc);

	co = arena_alloc(&a, sizeof(*co));
	if (!co)
		goto out_nomem;
	isergw__ctl__counters__init(co);
	co->luns = arena_alloc(&a, (nl ? nl : 1) * sizeof(*co->luns));
	co->ports = arena_alloc(&a, (np ? np : 1) * sizeof(*co->ports));
	if (!co->luns || !co->ports)
		goto out_nomem;
	for (size_t i = 0; i < nl; i++) {
		Isergw__Ctl__LunCounters *l = arena_alloc(&a, sizeof(*l));
		Isergw__Ctl__IoStats *st = arena_alloc(&a, sizeof(*st));

		if (!l || !st)
			goto out_nomem;
		isergw__ctl__lun_counters__init(l);
		l->target = arena_strdup(&a, luns[i].target);
		l->lun = luns[i].lun;
		fill_iostats(&a, st, &luns[i].c);
		l->stats = st;
		co->luns[co->n_luns++] = l;
	}
	for (size_t i = 0; i < np; i++) {
		Isergw__Ctl__PortCounters *p = arena_alloc(&a, sizeof(*p));
		Isergw__Ctl__IoStats *st = arena_alloc(&a, sizeof(*st));

		if (!p || !st)
			goto out_nomem;
		isergw__ctl__port_counters__init(p);
		p->rel_port_id = ports[i].rel;
		p->tpg_id = ports[i].tpg;
		fill_iostats(&a, st, &ports[i].c);
		p->stats = st;
		co->ports[co->n_ports++] = p;
	}
	if (a.failed)
		goto out_nomem;
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_COUNTERS;
	rep.counters = co;
	goto out;

out_nomem:
	rep.status = -ENOMEM;
	rep.error = ctl_str("out of memory");
out:
	client_done(g->client, &rep);
	arena_free(&a);
	free(luns);
	free(ports);
	for (size_t i = 0; i < g->n; i++)
		free(slots[i].s);
}

static void op_get_counters(struct ctl_client *c, const CtlRequest *req)
{
	struct gw *gw = c->ctl->gw;
	struct gather *g = gather_new(c, counters_finish, gw->nreactors, sizeof(struct ctr_slot));

	if (!g) {
		gather_fail(c, req);
		return;
	}
	for (unsigned int i = 0; i < gw->nreactors; i++) {
		struct ctr_msg *m = malloc(sizeof(*m));

		if (!m)
			continue;
		m->g = g;
		m->idx = i;
		atomic_fetch_add(&g->left, 1);
		if (reactor_send_msg(gw->reactors[i], counters_snap_run, m)) {
			atomic_fetch_sub(&g->left, 1);
			free(m);
		}
	}
	gather_step(g);
}

/* Logout */

static void logout_run(void *arg)
{
	struct gather_msg *m = arg;

	if (m->g->immediate)
		iscsi_conn_drop(m->conn, "logout forced by the control socket");
	else
		iscsi_conn_force_logout(m->conn, m->g->grace_s);
	iscsi_conn_put(m->conn);
	gather_step(m->g);
	free(m);
}

static void logout_finish(struct gather *g)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__LogoutResult res = ISERGW__CTL__LOGOUT_RESULT__INIT;

	res.sessions = (uint32_t)g->n;
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_LOGOUT;
	rep.logout = &res;
	client_done(g->client, &rep);
}

static bool logout_match(const Isergw__Ctl__Logout *l, const struct iscsi_session *s)
{
	if (l->who_case == ISERGW__CTL__LOGOUT__WHO_TSIH)
		return s->tsih == l->tsih;
	return strcmp(s->initiator, l->initiator) == 0;
}

static void op_logout(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__Logout *l = req->logout;
	struct gw *gw = c->ctl->gw;
	struct list_head *pos;
	struct gather *g;
	size_t n = 0, i = 0;
	char why[300];

	pthread_mutex_lock(&gw->sess_lock);
	list_for_each(pos, &gw->sessions)
		n += logout_match(l, list_entry(pos, struct iscsi_session, link));
	if (n == 0) {
		pthread_mutex_unlock(&gw->sess_lock);
		if (l->who_case == ISERGW__CTL__LOGOUT__WHO_TSIH)
			snprintf(why, sizeof(why), "no session with TSIH %u", l->tsih);
		else
			snprintf(why, sizeof(why), "no session of initiator %s", l->initiator);
		reply_refused(c, req, -ENOENT, why);
		return;
	}
	g = gather_new(c, logout_finish, n, 1);
	if (!g) {
		pthread_mutex_unlock(&gw->sess_lock);
		gather_fail(c, req);
		return;
	}
	g->immediate = l->immediate;
	g->grace_s = (uint16_t)(l->grace_s ? l->grace_s : CTL_LOGOUT_GRACE_DEFAULT_S);
	list_for_each(pos, &gw->sessions) {
		struct iscsi_session *s = list_entry(pos, struct iscsi_session, link);

		if (!logout_match(l, s))
			continue;
		GW_NOTICE(COMP, "%s: %s session TSIH %u of %s", c->name,
			  l->immediate ? "dropping" : "asking to log out", s->tsih, s->initiator);
		gather_send_conn(g, s, i++, logout_run);
	}
	pthread_mutex_unlock(&gw->sess_lock);
	gather_step(g);
}

static void handle_frame(struct ctl_client *c)
{
	CtlRequest *req = NULL;
	char why[256];
	int rc;

	rc = ctl_request_decode(c->rx.body, c->rx.len, &req, why, sizeof(why));
	if (rc) {
		reply_refused(c, NULL, rc, why);
		return;
	}
	GW_DEBUG(COMP, "%s: %s", c->name, ctl_op_name(req));
	switch (req->op_case) {
	case ISERGW__CTL__REQUEST__OP_GET_STATUS:
		op_get_status(c);
		break;
	case ISERGW__CTL__REQUEST__OP_APPLY_CONFIG:
		op_apply_config(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES:
		op_set_alua(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_GET_ALUA_STATES:
		op_get_alua(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_LIST_SESSIONS:
		op_list_sessions(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_GET_COUNTERS:
		op_get_counters(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_LOGOUT:
		op_logout(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_SUBSCRIBE:
		op_subscribe(c);
		break;
	case ISERGW__CTL__REQUEST__OP_ALUA_REQUEST_DONE:
		op_alua_request_done(c, req);
		break;
	default: /* ctl_request_decode lets only known operations through */
		reply_refused(c, req, -EOPNOTSUPP, "unknown operation");
		break;
	}
	ctl_request_free(req);
	if (!c->dead)
		client_events(c);
}

/* ------------------------------------------------------------ start, stop */

/* A socket file left by a daemon that died is replaced; a live one is not. */
static int clear_stale(const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, rc;

	if (lstat(sa->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		GW_ERR(COMP, "%s exists and is not a socket: not replacing it", sa->sun_path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (rc == 0) {
		GW_ERR(COMP, "%s: another daemon is serving this control socket", sa->sun_path);
		return -EADDRINUSE;
	}
	GW_NOTICE(COMP, "replacing stale control socket %s", sa->sun_path);
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static void *ctl_thread(void *arg)
{
	reactor_run(arg);
	return NULL;
}

int gw_ctl_start(struct gw *gw, const struct gw_ctl_params *p, struct gw_ctl **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct gw_ctl *ctl;
	mode_t old_umask;
	int rc;

	if (strlen(p->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	ctl->gw = gw;
	ctl->load = p->load;
	ctl->load_arg = p->load_arg;
	ctl->lfd = -1;
	ctl->start_ms = gw_now_ms();
	snprintf(ctl->path, sizeof(ctl->path), "%s", p->path);
	memcpy(sa.sun_path, p->path, strlen(p->path) + 1);
	pthread_mutex_init(&ctl->reload_lock, NULL);
	list_init(&ctl->clients);
	reactor_timer_init(&ctl->transition_timer, transition_end, ctl);

	rc = gw_mkdir_parents(p->path);
	if (rc) {
		GW_ERR(COMP, "cannot create the directory of %s: %s", p->path, strerror(-rc));
		goto err_free;
	}
	rc = clear_stale(&sa);
	if (rc)
		goto err_free;
	ctl->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl->lfd < 0) {
		rc = -errno;
		goto err_free;
	}
	old_umask = umask(0177);
	rc = bind(ctl->lfd, (const struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old_umask);
	if (rc) {
		GW_ERR(COMP, "cannot bind %s: %s", p->path, strerror(-rc));
		goto err_close;
	}
	if (chmod(p->path, 0600) < 0 || listen(ctl->lfd, 16) < 0) {
		rc = -errno;
		GW_ERR(COMP, "cannot listen on %s: %s", p->path, strerror(-rc));
		goto err_unlink;
	}
	rc = reactor_create(gw->nreactors, &ctl->r);
	if (rc)
		goto err_unlink;
	rc = reactor_add_fd(ctl->r, &ctl->lh, ctl->lfd, EPOLLIN, accept_cb, ctl);
	if (rc)
		goto err_reactor;
	rc = -pthread_create(&ctl->thread, NULL, ctl_thread, ctl->r);
	if (rc)
		goto err_reactor;
	/* SET TARGET PORT GROUPS under the external ALUA policy comes here */
	scsi_alua_set_request_handler(ctl_alua_request, ctl);
	GW_NOTICE(COMP, "control socket %s", p->path);
	*out = ctl;
	return 0;

err_reactor:
	reactor_destroy(ctl->r);
err_unlink:
	unlink(p->path);
err_close:
	close(ctl->lfd);
err_free:
	pthread_mutex_destroy(&ctl->reload_lock);
	free(ctl);
	return rc;
}

void gw_ctl_stop(struct gw_ctl *ctl)
{
	if (!ctl)
		return;
	/* no more events: from here SET TARGET PORT GROUPS finds nobody listening */
	scsi_alua_set_request_handler(NULL, NULL);
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
	pthread_mutex_destroy(&ctl->reload_lock);
	GW_NOTICE(COMP, "control socket %s closed", ctl->path);
	free(ctl);
}

int gw_ctl_reload(struct gw_ctl *ctl, struct gw *gw, struct gw_config *cfg)
{
	int rc;

	if (!ctl)
		return gw_reload(gw, cfg);
	pthread_mutex_lock(&ctl->reload_lock);
	rc = gw_reload(gw, cfg);
	pthread_mutex_unlock(&ctl->reload_lock);
	return rc;
}
