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
#include "common/log.h"

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
	/* counters */
	bool lun_latency;
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

/*
 * The IoStats message of s, in a, with its latency buckets or without; NULL
 * when out of memory (a->failed tells it too).
 */
static Isergw__Ctl__IoStats *iostats_new(struct arena *a, const struct gw_io_counters *s,
					 bool latency)
{
	Isergw__Ctl__IoStats *o = ctl_arena_alloc(a, sizeof(*o));
	uint64_t *lr = latency ? ctl_arena_alloc(a, sizeof(s->lat_read)) : NULL;
	uint64_t *lw = latency ? ctl_arena_alloc(a, sizeof(s->lat_write)) : NULL;

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
	snprintf(s->portal, sizeof(s->portal), "%s:%u", gw_portal_cfg(c->portal)->addr,
		 gw_portal_cfg(c->portal)->port);
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
		o->stats = iostats_new(&a, &s->stats, true);
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

/* A LUN's sample of one reactor, with the target's name copied under sess_lock. */
struct lun_ref {
	char target[GW_NAME_MAX];
	uint32_t lun;
	const struct gw_io_counters *c;
};

static int cmp_lun_ref(const void *a, const void *b)
{
	const struct lun_ref *x = a, *y = b;
	int r = strcmp(x->target, y->target);

	return r ? r : (x->lun > y->lun) - (x->lun < y->lun);
}

/* A target port's or a device group's sum over the reactors (a few of them: a linear search). */
struct key_acc {
	uint32_t k1, k2;
	struct gw_io_counters c;
};

static struct key_acc *key_acc_get(struct key_acc *acc, size_t *n, uint32_t k1, uint32_t k2)
{
	size_t j;

	for (j = 0; j < *n; j++)
		if (acc[j].k1 == k1 && acc[j].k2 == k2)
			return &acc[j];
	acc[j].k1 = k1;
	acc[j].k2 = k2;
	(*n)++;
	return &acc[j];
}

static int cmp_key_acc(const void *a, const void *b)
{
	const struct key_acc *x = a, *y = b;

	if (x->k1 != y->k1)
		return (x->k1 > y->k1) - (x->k1 < y->k1);
	return (x->k2 > y->k2) - (x->k2 < y->k2);
}

/* The LUNs' samples sorted by (target, LUN), each LUN's summed into one LunCounters. */
static void counters_luns(struct arena *a, Isergw__Ctl__Counters *co, struct lun_ref *refs,
			  size_t nrefs, bool latency)
{
	qsort(refs, nrefs, sizeof(*refs), cmp_lun_ref);
	for (size_t i = 0; i < nrefs;) {
		Isergw__Ctl__LunCounters *l = ctl_arena_alloc(a, sizeof(*l));
		struct gw_io_counters sum = *refs[i].c;
		size_t j;

		for (j = i + 1; j < nrefs && !cmp_lun_ref(&refs[i], &refs[j]); j++)
			gw_counters_add(&sum, refs[j].c);
		if (!l)
			return;
		isergw__ctl__lun_counters__init(l);
		l->target = ctl_arena_strdup(a, refs[i].target);
		l->lun = refs[i].lun;
		l->stats = iostats_new(a, &sum, latency);
		co->luns[co->n_luns++] = l;
		i = j;
	}
}

/*
 * Runs on the control thread once every reactor has copied its table: the
 * LUNs sorted and summed (n log n: 10,000 LUNs on several reactors take
 * milliseconds), the ports and device groups summed.
 */
static void counters_finish(struct gather *g)
{
	struct ctr_slot *slots = g->slots;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__Counters *co;
	struct lun_ref *refs = NULL;
	struct key_acc *ports = NULL, *dgs = NULL;
	size_t total = 0, nl = 0, np = 0, nd = 0;
	struct arena a = { 0 };
	struct gw *gw = g->ctl->gw;

	for (size_t i = 0; i < g->n; i++)
		total += slots[i].n;
	refs = malloc((total ? total : 1) * sizeof(*refs));
	ports = calloc(total ? total : 1, sizeof(*ports));
	dgs = calloc(total ? total : 1, sizeof(*dgs));
	if (!refs || !ports || !dgs)
		goto out_nomem;
	/* targets outlive the daemon's reloads (retired, freed at exit): their names are safe to read */
	pthread_mutex_lock(&gw->sess_lock);
	for (size_t i = 0; i < g->n; i++) {
		for (size_t k = 0; k < slots[i].n; k++) {
			const struct gw_ctr_sample *s = &slots[i].s[k];

			if (s->kind == GW_CTR_LUN) {
				const char *iqn = ((const struct gw_target *)s->target)->cfg->iqn;

				snprintf(refs[nl].target, sizeof(refs[nl].target), "%s", iqn);
				refs[nl].lun = s->lun;
				refs[nl++].c = &s->c;
			} else if (s->kind == GW_CTR_PORT) {
				gw_counters_add(&key_acc_get(ports, &np, s->rel_port_id,
							     s->tpg_id)->c, &s->c);
			} else {
				gw_counters_add(&key_acc_get(dgs, &nd, s->lun, 0)->c, &s->c);
			}
		}
	}
	pthread_mutex_unlock(&gw->sess_lock);
	qsort(ports, np, sizeof(*ports), cmp_key_acc);
	qsort(dgs, nd, sizeof(*dgs), cmp_key_acc);

	co = ctl_arena_alloc(&a, sizeof(*co));
	if (!co)
		goto out_nomem;
	isergw__ctl__counters__init(co);
	co->luns = ctl_arena_alloc(&a, (nl ? nl : 1) * sizeof(*co->luns));
	co->ports = ctl_arena_alloc(&a, (np ? np : 1) * sizeof(*co->ports));
	co->groups = ctl_arena_alloc(&a, (nd ? nd : 1) * sizeof(*co->groups));
	if (!co->luns || !co->ports || !co->groups)
		goto out_nomem;
	counters_luns(&a, co, refs, nl, g->lun_latency);
	for (size_t i = 0; i < np; i++) {
		Isergw__Ctl__PortCounters *p = ctl_arena_alloc(&a, sizeof(*p));

		if (!p)
			goto out_nomem;
		isergw__ctl__port_counters__init(p);
		p->rel_port_id = ports[i].k1;
		p->tpg_id = ports[i].k2;
		p->stats = iostats_new(&a, &ports[i].c, true);
		co->ports[co->n_ports++] = p;
	}
	for (size_t i = 0; i < nd; i++) {
		Isergw__Ctl__GroupCounters *d = ctl_arena_alloc(&a, sizeof(*d));
		char name[SCSI_ALUA_DG_NAME_MAX];

		if (!d)
			goto out_nomem;
		/* gone only after scsi_alua_reset (tests): those counts are left out */
		if (scsi_alua_dg_name(dgs[i].k1, name, sizeof(name)))
			continue;
		isergw__ctl__group_counters__init(d);
		d->device_group = ctl_arena_strdup(&a, name);
		d->stats = iostats_new(&a, &dgs[i].c, true);
		co->groups[co->n_groups++] = d;
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
	free(refs);
	free(ports);
	free(dgs);
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
	g->lun_latency = req->get_counters->lun_latency;
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
