/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Control operations answered by the reactors (ctl_priv.h): ListSessions,
 * GetCounters, Logout. Each sends a message to the reactors that hold what
 * it needs and replies once the last of them has answered.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_priv.h"
#include "util/log.h"

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
	*m = (struct gather_msg){ .g = g, .idx = idx, .conn = s->conn };
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
	ctl_reply_refused(c, req, -ENOMEM, "out of memory");
}

/* The IoStats message of s, in a; NULL when out of memory (a->failed tells it too). */
static Isergw__Ctl__IoStats *iostats_new(struct arena *a, const struct gw_io_counters *s)
{
	Isergw__Ctl__IoStats *o = ctl_arena_alloc(a, sizeof(*o));
	uint64_t *lr = ctl_arena_alloc(a, sizeof(s->lat_read));
	uint64_t *lw = ctl_arena_alloc(a, sizeof(s->lat_write));

	if (!o)
		return NULL;
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
	return o;
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

	sl = ctl_arena_alloc(&a, sizeof(*sl));
	if (sl) {
		isergw__ctl__session_list__init(sl);
		sl->sessions = ctl_arena_alloc(&a, (g->n ? g->n : 1) * sizeof(*sl->sessions));
	}
	for (size_t i = 0; sl && sl->sessions && i < g->n; i++) {
		const struct sess_snap *s = &snap[i];
		Isergw__Ctl__Session *o;
		Isergw__Ctl__Connection *cn;
		char isid[16];

		if (!s->valid || !s->answered)
			continue;
		o = ctl_arena_alloc(&a, sizeof(*o));
		cn = ctl_arena_alloc(&a, sizeof(*cn));
		if (!o || !cn)
			break;
		isergw__ctl__session__init(o);
		isergw__ctl__connection__init(cn);
		snprintf(isid, sizeof(isid), "%02x%02x%02x%02x%02x%02x", s->isid[0], s->isid[1],
			 s->isid[2], s->isid[3], s->isid[4], s->isid[5]);
		o->target = ctl_arena_strdup(&a, s->target);
		o->initiator = ctl_arena_strdup(&a, s->initiator);
		o->isid = ctl_arena_strdup(&a, isid);
		o->tsih = s->tsih;
		o->portal = ctl_arena_strdup(&a, s->portal);
		o->transport = ctl_arena_strdup(&a, s->transport);
		o->type = ctl_str((s->discovery ? "discovery" : "normal"));
		cn->cid = s->cid;
		cn->peer = ctl_arena_strdup(&a, s->peer);
		cn->local = ctl_arena_strdup(&a, s->local);
		cn->state = ctl_str(conn_state_name(s->state));
		cn->login_time = s->login_time;
		o->connections = ctl_arena_alloc(&a, sizeof(*o->connections));
		o->stats = iostats_new(&a, &s->stats);
		if (!o->connections || !o->stats)
			break;
		o->connections[0] = cn;
		o->n_connections = 1;
		sl->sessions[sl->n_sessions++] = o;
	}
	if (a.failed || !sl) {
		rep.status = -ENOMEM;
		rep.error = ctl_str("out of memory");
	} else {
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_SESSIONS;
		rep.sessions = sl;
	}
	ctl_client_done(g->client, &rep);
	ctl_arena_free(&a);
}

void ctl_op_list_sessions(struct ctl_client *c, const CtlRequest *req)
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

	co = ctl_arena_alloc(&a, sizeof(*co));
	if (!co)
		goto out_nomem;
	isergw__ctl__counters__init(co);
	co->luns = ctl_arena_alloc(&a, (nl ? nl : 1) * sizeof(*co->luns));
	co->ports = ctl_arena_alloc(&a, (np ? np : 1) * sizeof(*co->ports));
	if (!co->luns || !co->ports)
		goto out_nomem;
	for (size_t i = 0; i < nl; i++) {
		Isergw__Ctl__LunCounters *l = ctl_arena_alloc(&a, sizeof(*l));

		if (!l)
			goto out_nomem;
		isergw__ctl__lun_counters__init(l);
		l->target = ctl_arena_strdup(&a, luns[i].target);
		l->lun = luns[i].lun;
		l->stats = iostats_new(&a, &luns[i].c);
		co->luns[co->n_luns++] = l;
	}
	for (size_t i = 0; i < np; i++) {
		Isergw__Ctl__PortCounters *p = ctl_arena_alloc(&a, sizeof(*p));

		if (!p)
			goto out_nomem;
		isergw__ctl__port_counters__init(p);
		p->rel_port_id = ports[i].rel;
		p->tpg_id = ports[i].tpg;
		p->stats = iostats_new(&a, &ports[i].c);
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
	ctl_client_done(g->client, &rep);
	ctl_arena_free(&a);
	free(luns);
	free(ports);
	for (size_t i = 0; i < g->n; i++)
		free(slots[i].s);
}

void ctl_op_get_counters(struct ctl_client *c, const CtlRequest *req)
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
	ctl_client_done(g->client, &rep);
}

static bool logout_match(const Isergw__Ctl__Logout *l, const struct iscsi_session *s)
{
	if (l->who_case == ISERGW__CTL__LOGOUT__WHO_TSIH)
		return s->tsih == l->tsih;
	return strcmp(s->initiator, l->initiator) == 0;
}

void ctl_op_logout(struct ctl_client *c, const CtlRequest *req)
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
		ctl_reply_refused(c, req, -ENOENT, why);
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
