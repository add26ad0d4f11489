/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HA agent's state machine: see sm.h for the shape and docs/ha.md for
 * the protocol. Everything that changes the document happens on delivery of
 * a group message, in agreed order, the same way on every member.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "sm.h"
#include "common/log.h"

#define COMP "ha"
#define HA_LEASE_MARGIN_MS 100u          /* on top of a lost node's lease and one heartbeat */
#define HA_INFLIGHT_RETRY_MS 5000u

/* SPC-4 codes (scsi.h is the data plane's; the agent only needs the values) */
#define ALUA_AO 0x0
#define ALUA_UNAVAILABLE 0x3
#define ALUA_TRANSITIONING 0xf

static void copy_name(char dst[HA_NAME_MAX], const char *src)
{
	snprintf(dst, HA_NAME_MAX, "%s", src ? src : "");
}

/* ------------------------------------------------------------ members */

struct ha_member *ha_sm_member(struct ha_sm *sm, uint32_t nodeid)
{
	for (size_t i = 0; i < HA_MAX_MEMBERS; i++)
		if (sm->m[i].used && sm->m[i].nodeid == nodeid)
			return &sm->m[i];
	return NULL;
}

static struct ha_member *member_get(struct ha_sm *sm, uint32_t nodeid)
{
	struct ha_member *m = ha_sm_member(sm, nodeid);

	if (m)
		return m;
	for (size_t i = 0; i < HA_MAX_MEMBERS; i++) {
		if (!sm->m[i].used) {
			m = &sm->m[i];
			memset(m, 0, sizeof(*m));
			m->used = true;
			m->nodeid = nodeid;
			m->lease_ms = sm->lease_ms;
			return m;
		}
	}
	return NULL;
}

const struct ha_member *ha_sm_member_by_name(const struct ha_sm *sm, const char *name)
{
	for (size_t i = 0; i < HA_MAX_MEMBERS; i++)
		if (sm->m[i].used && sm->m[i].name[0] && !strcmp(sm->m[i].name, name))
			return &sm->m[i];
	return NULL;
}

int ha_sm_node_of(const struct ha_sm *sm, uint32_t nodeid)
{
	for (size_t i = 0; i < HA_MAX_MEMBERS; i++)
		if (sm->m[i].used && sm->m[i].nodeid == nodeid)
			return sm->m[i].name[0] ? ha_doc_find_node(sm->doc, sm->m[i].name) : -1;
	return -1;
}

static bool in_view(const struct ha_sm *sm, uint32_t nodeid)
{
	for (size_t i = 0; i < sm->nview; i++)
		if (sm->view[i] == nodeid)
			return true;
	return false;
}

/* Node n of the document has its agent in the (synchronised) view. */
static bool node_in_view(const struct ha_sm *sm, int n)
{
	const struct ha_member *m;

	if (n < 0 || (size_t)n >= sm->doc->nnodes)
		return false;
	m = ha_sm_member_by_name(sm, sm->doc->nodes[n].name);
	return m && m->in_view && !m->foreign;
}

/*
 * Member m's node holds generation gen (its Applied came), or it has no
 * isergwd whose lease could still run (gw_down): nothing to wait for.
 */
static bool member_holds(const struct ha_member *m, uint64_t gen)
{
	return m->applied_gen >= gen || m->gw_down;
}

/* Node n's agent is in the view and its node holds generation gen. */
static bool node_holds(const struct ha_sm *sm, int n, uint64_t gen)
{
	return node_in_view(sm, n) &&
	       member_holds(ha_sm_member_by_name(sm, sm->doc->nodes[n].name), gen);
}

/* The members of our cluster are a majority of the view (foreign agents aside). */
static bool majority_agrees(const struct ha_sm *sm)
{
	size_t n = 0;

	for (size_t i = 0; i < sm->nview; i++) {
		const struct ha_member *m = ha_sm_member((struct ha_sm *)(uintptr_t)sm, sm->view[i]);

		if (m && !m->foreign)
			n++;
	}
	return 2 * n > sm->nview;
}

void ha_sm_set_name(struct ha_sm *sm, uint32_t nodeid, const char *name)
{
	struct ha_member *m = member_get(sm, nodeid);

	if (m && name && name[0])
		copy_name(m->name, name);
}

bool ha_sm_is_leader(const struct ha_sm *sm)
{
	return sm->phase == HA_PHASE_SYNCED && sm->nview && sm->view[0] == sm->nodeid;
}

const char *ha_sm_phase_name(const struct ha_sm *sm)
{
	if (sm->phase == HA_PHASE_START)
		return "joining";
	if (sm->stale)
		return "stale";
	if (!sm->quorate)
		return sm->phase == HA_PHASE_SYNCED ? "inquorate" : "inquorate-syncing";
	if (sm->phase == HA_PHASE_SYNCING)
		return "syncing";
	if (sm->q_ring_seq != sm->ring_seq)
		return "waiting-quorum-ring";
	return "synced";
}

bool ha_sm_can_change(const struct ha_sm *sm, char *why, size_t whylen)
{
	if (!sm->quorate) {
		gw_errf(why, whylen, -ENOLCK, "the cluster has no quorum here (%u of %u expected votes)",
		     sm->total_votes, sm->expected_votes);
		return false;
	}
	if (sm->phase != HA_PHASE_SYNCED || sm->stale) {
		gw_errf(why, whylen, -EAGAIN, "this node is %s: try again once it is synchronised",
		     ha_sm_phase_name(sm));
		return false;
	}
	if (sm->q_ring_seq != sm->ring_seq) {
		gw_errf(why, whylen, -EAGAIN, "the quorum and the group are in different rings: try again");
		return false;
	}
	if (!majority_agrees(sm)) {
		gw_errf(why, whylen, -ENOLCK, "agents of another cluster name are half the group or more");
		return false;
	}
	return true;
}

bool ha_sm_all_applied(const struct ha_sm *sm, uint64_t gen, char pending[][HA_NAME_MAX],
		       size_t *npending, size_t max)
{
	bool all = true;

	if (npending)
		*npending = 0;
	/* live: the nodes of the configuration whose agents are in the group */
	for (size_t i = 0; i < sm->doc->nnodes; i++) {
		const struct ha_member *m = ha_sm_member_by_name(sm, sm->doc->nodes[i].name);

		if (!m || !m->in_view || m->foreign)
			continue;
		/* a node without isergwd whose lease is over serves nothing: no need to wait */
		if (member_holds(m, gen))
			continue;
		all = false;
		if (pending && npending && *npending < max)
			copy_name(pending[(*npending)++], sm->doc->nodes[i].name);
	}
	return all;
}

/* ------------------------------------------------------------ sending */

int ha_sm_send(struct ha_sm *sm, HaMsg *m)
{
	int rc;

	m->version = sm->proto;
	m->cluster = sm->cluster;
	rc = sm->ops->send(sm->ctx, m);
	if (rc)
		GW_WARN(COMP, "cannot multicast a %s message: %s", ha_msg_kind(m), strerror(-rc));
	return rc;
}

static void send_sync(struct ha_sm *sm)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Sync s = ISERGW__HA__SYNC__INIT;
	Isergw__Ha__DataPlane dp;

	s.ring_seq = sm->ring_seq;
	s.ring_node = sm->ring_node;
	s.generation = sm->doc->generation;
	if (sm->doc->generation) {
		s.digest.data = sm->doc->digest;
		s.digest.len = HA_DIGEST_LEN;
	}
	s.protocol_min = HA_PROTO_MIN;
	s.protocol_max = sm->proto_max;
	s.node_name = sm->name;
	s.lease_ms = sm->lease_ms;
	s.members = sm->view;
	s.n_members = sm->nview;
	ha_sm_lu_fill_sync(sm, &s);
	if (sm->proto_max >= HA_PROTO_DP && !ha_sm_dp_fill(sm, &dp)) {
		s.dataplane = &dp;
		sm->dp_dirty = false;
	}
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_SYNC;
	m.sync = &s;
	/* a Sync is understood by every version: it is what negotiates them */
	sm->proto = HA_PROTO_MIN;
	ha_sm_send(sm, &m);
	ha_sm_lu_free_sync(&s);
	if (s.dataplane)
		ha_sm_dp_free_pb(&dp);
}

static void send_applied(struct ha_sm *sm, uint64_t gen, int status, const char *err)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Applied a = ISERGW__HA__APPLIED__INIT;

	a.generation = gen;
	a.status = status;
	a.error = (char *)(uintptr_t)(err ? err : "");
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_APPLIED;
	m.applied = &a;
	ha_sm_send(sm, &m);
}

static void send_heartbeat(struct ha_sm *sm, uint64_t now)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Heartbeat h = ISERGW__HA__HEARTBEAT__INIT;

	h.seq = ++sm->hb_seq;
	h.applied_generation = sm->gw_applied_any ? sm->told_gen : 0;
	sm->hb_sent_ms[h.seq % HA_HB_RING] = now;
	sm->hb_last_ms = now;
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_HEARTBEAT;
	m.heartbeat = &h;
	ha_sm_send(sm, &m);
}

/* ------------------------------------------------------------ the document */

static void req_finish(struct ha_sm *sm, size_t i, int status, const char *err, uint64_t gen)
{
	uint64_t id = sm->reqs[i].id;

	sm->reqs[i] = sm->reqs[--sm->nreqs];
	sm->ops->change_done(sm->ctx, id, status, err, gen);
}

static struct ha_sm_req *req_find(struct ha_sm *sm, uint64_t id, size_t *idx)
{
	for (size_t i = 0; i < sm->nreqs; i++)
		if (sm->reqs[i].id == id) {
			if (idx)
				*idx = i;
			return &sm->reqs[i];
		}
	return NULL;
}

/* Requests whose effect shows in the document now: answer them. */
static void reqs_check(struct ha_sm *sm)
{
	const struct ha_doc *d = sm->doc;

	for (size_t i = 0; i < sm->nreqs;) {
		struct ha_sm_req *r = &sm->reqs[i];
		bool done = false;
		int n, g;

		if (!r->sent_applied) {
			i++;
			continue;
		}
		switch (r->kind) {
		case HA_REQ_CONFIG:
		case HA_REQ_UNDRAIN:
			done = true;
			break;
		case HA_REQ_MOVE:
			g = ha_doc_find_dg(d, r->dg);
			n = ha_doc_find_node(d, r->node);
			if (g < 0 || n < 0) {
				req_finish(sm, i, -ENOENT, "the device group or the node is gone", 0);
				continue;
			}
			done = d->owner[g] == n;
			break;
		case HA_REQ_DRAIN:
			n = ha_doc_find_node(d, r->node);
			done = true;
			for (size_t k = 0; n >= 0 && k < d->ndgs; k++)
				if (d->owner[k] == n || (d->moving_from[k] == n && !r->orphans))
					done = false;
			break;
		}
		if (done) {
			req_finish(sm, i, 0, NULL, d->generation);
			continue;
		}
		i++;
	}
}

static const char *owner_name(const struct ha_doc *d, int n)
{
	return n >= 0 ? d->nodes[n].name : "";
}

/*
 * Count a device group that changed hands from old to d, one generation
 * apart: its owner left it for a planned move (Transitioning first, or the
 * owner still live), or it was lost (the owner not live any more).
 */
static void count_move(struct ha_sm *sm, const struct ha_doc *old, int og,
		       const struct ha_doc *d, int g)
{
	const char *was = owner_name(old, old->owner[og]);
	int n;

	if (!was[0] || !strcmp(was, owner_name(d, d->owner[g])))
		return;
	n = ha_doc_find_node(d, was);
	if (!strcmp(was, owner_name(d, d->moving_from[g])) || (n >= 0 && d->live[n]))
		sm->planned_moves++;
	else
		sm->failovers++;
}

/*
 * When each device group of d last changed hands here (its owner or the
 * node it moves from differs from old's, and it had one): host SET TARGET
 * PORT GROUPS wait until a group has settled (ha_sm_submit_host_move).
 * Carried over by name; without memory the times are forgotten (0).
 */
static void track_moves(struct ha_sm *sm, const struct ha_doc *old, const struct ha_doc *d,
			uint64_t now)
{
	uint64_t *t = calloc(d->ndgs + 1, sizeof(*t));

	for (size_t g = 0; t && g < d->ndgs; g++) {
		int og = old ? ha_doc_find_dg(old, d->dgs[g].name) : -1;

		if (og < 0)
			continue;
		if (d->generation == old->generation + 1)
			count_move(sm, old, og, d, (int)g);
		t[g] = sm->dg_moved_ms ? sm->dg_moved_ms[og] : 0;
		if ((old->owner[og] >= 0 || old->moving_from[og] >= 0) &&
		    (strcmp(owner_name(old, old->owner[og]), owner_name(d, d->owner[g])) ||
		     strcmp(owner_name(old, old->moving_from[og]), owner_name(d, d->moving_from[g]))))
			t[g] = now;
	}
	free(sm->dg_moved_ms);
	sm->dg_moved_ms = t;
}

/* Make d the document (taken); store and push it. */
static void doc_set(struct ha_sm *sm, struct ha_doc *d, uint64_t now)
{
	/* the leader's targets stay: a configuration change reruns the placement */
	track_moves(sm, sm->doc, d, now);
	ha_doc_free(sm->doc);
	sm->doc = d;
	sm->ops->doc_changed(sm->ctx, d, ++sm->doc_seq);
	reqs_check(sm);
}

/* ------------------------------------------------------------ the sync barrier */

static bool sync_better(uint64_t g1, const uint8_t *d1, uint64_t g2, const uint8_t *d2)
{
	if (g1 != g2)
		return g1 > g2;
	return memcmp(d1, d2, HA_DIGEST_LEN) > 0;
}

/* The winner of a complete barrier: its member (lowest nodeid holding it). */
static const struct ha_member *sync_winner(struct ha_sm *sm)
{
	const struct ha_member *w = NULL;

	for (size_t i = 0; i < sm->nview; i++) {
		const struct ha_member *m = ha_sm_member(sm, sm->view[i]);

		if (m && m->foreign)
			continue;
		if (!m || !m->sync_rcvd)
			return NULL;
		if (!w || sync_better(m->sync_gen, m->sync_digest, w->sync_gen, w->sync_digest))
			w = m;
	}
	return w;
}

static void lease_check(struct ha_sm *sm, uint64_t seq, uint64_t now);
static bool lease_over(const struct ha_sm *sm, int n, uint64_t now, uint64_t *until);

static void sync_done(struct ha_sm *sm, uint64_t now)
{
	uint32_t proto = sm->proto_max;

	for (size_t i = 0; i < sm->nview; i++) {
		const struct ha_member *m = ha_sm_member(sm, sm->view[i]);

		if (m && !m->foreign && m->proto_max < proto)
			proto = m->proto_max;
	}
	sm->proto = proto < HA_PROTO_MIN ? HA_PROTO_MIN : proto;
	sm->phase = HA_PHASE_SYNCED;
	sm->replace = true;
	sm->inflight_base = 0;
	GW_NOTICE(COMP, "synchronised: generation %" PRIu64 ", %zu agent(s) in the group, protocol %u",
		  sm->doc->generation, sm->nview, sm->proto);
	/*
	 * isergwd holding this generation already (a restarted agent, or a view
	 * change that changed nothing): renewed now from our last heartbeat that
	 * came back in this ring, not at the next one.
	 */
	if (sm->hb_back_seq && sm->hb_back_ring == sm->ring_seq)
		lease_check(sm, sm->hb_back_seq, now);
}

static void sync_check(struct ha_sm *sm, uint64_t now)
{
	const struct ha_member *w;
	bool same = true;

	if (sm->phase != HA_PHASE_SYNCING)
		return;
	w = sync_winner(sm);
	if (!w)
		return;
	for (size_t i = 0; i < sm->nview; i++) {
		const struct ha_member *m = ha_sm_member(sm, sm->view[i]);

		if (m->foreign)
			continue;
		if (m->sync_gen != w->sync_gen ||
		    memcmp(m->sync_digest, w->sync_digest, HA_DIGEST_LEN))
			same = false;
	}
	if (same) {
		sync_done(sm, now);
		return;
	}
	if (w->nodeid == sm->nodeid && !sm->state_sent) {
		HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
		Isergw__Ha__State st = ISERGW__HA__STATE__INIT;

		st.ring_seq = sm->ring_seq;
		st.generation = sm->doc->generation;
		st.doc_json = sm->doc->text;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_STATE;
		m.state = &st;
		sm->state_sent = true;
		GW_INFO(COMP, "sync: sending generation %" PRIu64 " to the members that differ",
			sm->doc->generation);
		ha_sm_send(sm, &m);
	}
}

static void on_sync(struct ha_sm *sm, struct ha_member *from, const Isergw__Ha__Sync *s,
		    uint64_t now)
{
	/* a Sync for another view (sent before a change we have seen since) */
	if (s->n_members != sm->nview || memcmp(s->members, sm->view, sm->nview * sizeof(uint32_t))) {
		GW_DEBUG(COMP, "sync from node %u for another view ignored", from->nodeid);
		return;
	}
	if (from->sync_rcvd) {
		/* harmless (the first one counts) and frequent on a busy ring: debug */
		GW_DEBUG(COMP, "a second sync from node %u for this view ignored", from->nodeid);
		return;
	}
	if (s->node_name[0])
		copy_name(from->name, s->node_name);
	from->proto_max = s->protocol_max;
	from->lease_ms = s->lease_ms ? s->lease_ms : sm->lease_ms;
	from->sync_rcvd = true;
	ha_sm_dp_deliver(sm, from, s->dataplane);
	from->sync_gen = s->generation;
	memset(from->sync_digest, 0, HA_DIGEST_LEN);
	if (s->digest.len == HA_DIGEST_LEN)
		memcpy(from->sync_digest, s->digest.data, HA_DIGEST_LEN);
	{
		bool last = true;

		for (size_t i = 0; i < sm->nview; i++) {
			const struct ha_member *m = ha_sm_member(sm, sm->view[i]);

			if (m && !m->foreign && !m->sync_rcvd)
				last = false;
		}
		ha_sm_lu_sync(sm, s, last);
	}
	sync_check(sm, now);
}

static bool announced(struct ha_sm *sm, uint64_t gen)
{
	for (size_t i = 0; i < sm->nview; i++) {
		const struct ha_member *m = ha_sm_member(sm, sm->view[i]);

		if (m && m->sync_rcvd && m->sync_gen == gen)
			return true;
	}
	return false;
}

static void on_state(struct ha_sm *sm, uint32_t nodeid, const Isergw__Ha__State *st, uint64_t now)
{
	const struct ha_member *w;
	struct ha_doc *d;
	char err[512];
	int rc;

	if (!announced(sm, st->generation)) {
		GW_WARN(COMP, "state from node %u ignored: generation %" PRIu64 " was announced by "
			"no member", nodeid, st->generation);
		return;
	}
	if (sm->phase != HA_PHASE_SYNCING)
		return; /* a State for a barrier we passed already */
	w = sync_winner(sm);
	if (!w || st->generation != w->sync_gen)
		return;
	if (sm->doc->generation == w->sync_gen &&
	    !memcmp(sm->doc->digest, w->sync_digest, HA_DIGEST_LEN)) {
		sync_done(sm, now);
		return;
	}
	rc = ha_doc_parse(st->doc_json, &d, err, sizeof(err));
	if (rc) {
		GW_ERR(COMP, "sync: the winning document (generation %" PRIu64 ") does not load "
		       "here: %s; this node stays unsynchronised", st->generation, err);
		return;
	}
	if (d->generation != w->sync_gen || memcmp(d->digest, w->sync_digest, HA_DIGEST_LEN)) {
		GW_ERR(COMP, "sync: the document received differs from the one announced "
		       "(generation %" PRIu64 "); ignored", d->generation);
		ha_doc_free(d);
		return;
	}
	GW_NOTICE(COMP, "sync: taking generation %" PRIu64 " (had %" PRIu64 ")", d->generation,
		  sm->doc->generation);
	doc_set(sm, d, now);
	sync_done(sm, now);
}

/* ------------------------------------------------------------ changes */

static void change_refused(struct ha_sm *sm, const Isergw__Ha__Change *c, int rc, const char *why)
{
	size_t i;

	GW_WARN(COMP, "change %" PRIu64 " of node %u refused: %s", c->request_id, c->origin, why);
	if (c->origin == sm->nodeid && req_find(sm, c->request_id, &i))
		req_finish(sm, i, rc, why, 0);
}

static int name_index(const struct ha_doc *d, const char *name, bool node)
{
	if (!name[0])
		return -1;
	return node ? ha_doc_find_node(d, name) : ha_doc_find_dg(d, name);
}

static int apply_placement(struct ha_sm *sm, const Isergw__Ha__Placement *p, struct ha_doc **out)
{
	const struct ha_doc *d = sm->doc;
	int *owner = calloc(d->ndgs + 1, sizeof(int));
	int *moving = calloc(d->ndgs + 1, sizeof(int));
	bool *live = calloc(d->nnodes + 1, sizeof(bool));
	int rc = -ENOMEM;

	if (!owner || !moving || !live)
		goto out;
	for (size_t i = 0; i < d->ndgs; i++) {
		owner[i] = d->owner[i];
		moving[i] = d->moving_from[i];
	}
	for (size_t i = 0; i < p->n_owners; i++) {
		int g = name_index(d, p->owners[i]->device_group, false);

		if (g < 0)
			continue;
		owner[g] = name_index(d, p->owners[i]->node, true);
		moving[g] = name_index(d, p->owners[i]->moving_from, true);
	}
	for (size_t i = 0; i < p->n_live; i++) {
		int n = name_index(d, p->live[i], true);

		if (n >= 0)
			live[n] = true;
	}
	rc = ha_doc_with_runtime(d, owner, moving, live, out);
out:
	free(owner);
	free(moving);
	free(live);
	return rc;
}

static void on_change(struct ha_sm *sm, const Isergw__Ha__Change *c, uint64_t now)
{
	struct ha_doc *d = NULL;
	char err[512] = "";
	size_t ri;
	int rc = 0, n;

	if (sm->phase != HA_PHASE_SYNCED) {
		change_refused(sm, c, -EAGAIN, "the membership changed while it was on its way");
		return;
	}
	if (c->kind_case == ISERGW__HA__CHANGE__KIND_MOVE) {
		/* a request to the leader: no document change by itself */
		int g = ha_doc_find_dg(sm->doc, c->move->device_group);

		n = ha_doc_find_node(sm->doc, c->move->node);
		if (g < 0 || n < 0) {
			change_refused(sm, c, -ENOENT, "no such device group or node");
			return;
		}
		if (ha_sm_is_leader(sm) && sm->nmoves < sizeof(sm->moves) / sizeof(sm->moves[0]))
			sm->moves[sm->nmoves++] = (struct ha_sm_move){ .dg = g, .node = n };
		if (c->origin == sm->nodeid && req_find(sm, c->request_id, &ri)) {
			sm->reqs[ri].sent_applied = true;
			reqs_check(sm);
		}
		return;
	}
	if (c->base_generation != sm->doc->generation) {
		snprintf(err, sizeof(err), "based on generation %" PRIu64 ", the cluster is at %" PRIu64,
			 c->base_generation, sm->doc->generation);
		change_refused(sm, c, -ESTALE, err);
		return;
	}
	switch (c->kind_case) {
	case ISERGW__HA__CHANGE__KIND_CONFIG_JSON:
		rc = ha_doc_with_config(sm->doc, c->config_json, &d, err, sizeof(err));
		sm->replace = true;
		break;
	case ISERGW__HA__CHANGE__KIND_LUN:
		/* the configuration's placement inputs (nodes, device groups) stay as they are */
		rc = ha_doc_with_lun(sm->doc, c->lun->target, c->lun->lun, c->lun->lun_json, &d, err,
				     sizeof(err));
		break;
	case ISERGW__HA__CHANGE__KIND_DRAIN:
		n = ha_doc_find_node(sm->doc, c->drain->node);
		if (n < 0) {
			rc = -ENOENT;
			snprintf(err, sizeof(err), "no node '%s' in the configuration", c->drain->node);
			break;
		}
		rc = ha_doc_with_drain(sm->doc, n, c->drain->drained, &d);
		sm->replace = true;
		break;
	case ISERGW__HA__CHANGE__KIND_TOKEN:
		rc = ha_doc_with_token(sm->doc, c->token->name, c->token->role, c->token->hash,
				       c->token->created, &d, err, sizeof(err));
		break;
	case ISERGW__HA__CHANGE__KIND_PLACEMENT:
		rc = apply_placement(sm, c->placement, &d);
		if (sm->inflight_base == c->base_generation)
			sm->inflight_base = 0;
		break;
	default:
		rc = -EINVAL;
		snprintf(err, sizeof(err), "unknown change");
		break;
	}
	if (rc) {
		if (!err[0])
			snprintf(err, sizeof(err), "%s", strerror(-rc));
		change_refused(sm, c, rc, err);
		return;
	}
	GW_NOTICE(COMP, "generation %" PRIu64 ": %s from node %u", d->generation,
		  c->kind_case == ISERGW__HA__CHANGE__KIND_CONFIG_JSON ? "new configuration" :
		  c->kind_case == ISERGW__HA__CHANGE__KIND_LUN ?
		  (c->lun->lun_json[0] ? "LUN added" : "LUN removed") :
		  c->kind_case == ISERGW__HA__CHANGE__KIND_DRAIN ?
		  (c->drain->drained ? "node drained" : "node undrained") :
		  c->kind_case == ISERGW__HA__CHANGE__KIND_TOKEN ?
		  (c->token->role[0] ? "API token added" : "API token revoked") : "placement",
		  c->origin);
	if (c->origin == sm->nodeid && req_find(sm, c->request_id, &ri))
		sm->reqs[ri].sent_applied = true;
	doc_set(sm, d, now);
}

/* ------------------------------------------------------------ lease */

/*
 * The map this node would be leased on names as owner (or as the owner a
 * planned move is leaving) a node that is not in the group. The leader hands
 * that node's groups to others once its lease has certainly run out, and the
 * members apply that placement one after the other: a lease given on the old
 * map past that moment would let this isergwd report the lost node's group
 * Active/Optimized while a member that applied the placement already reports
 * its own. So the lease ends HA_LEASE_MARGIN_MS before the leader may move
 * (the margin covers the members hearing the lost node last at slightly
 * different times), and none is given once that moment has passed: the
 * placement is on its way and renews it when applied. Returns that end, or
 * 0 when the map names no lost node.
 */
static uint64_t lost_owner_cap(const struct ha_sm *sm, uint64_t now)
{
	const struct ha_doc *d = sm->doc;
	uint64_t cap = 0;

	for (size_t g = 0; g < d->ndgs; g++) {
		int who[2] = { d->owner[g], d->moving_from[g] };

		for (int i = 0; i < 2; i++) {
			uint64_t end = 0;

			if (who[i] < 0 || node_in_view(sm, who[i]))
				continue;
			if (lease_over(sm, who[i], now, &end))
				return now; /* the move may be under way already */
			end = end > HA_LEASE_MARGIN_MS ? end - HA_LEASE_MARGIN_MS : 0;
			if (!cap || end < cap)
				cap = end;
		}
	}
	return cap;
}

static void lease_check(struct ha_sm *sm, uint64_t seq, uint64_t now)
{
	uint64_t sent = sm->hb_sent_ms[seq % HA_HB_RING], expires, cap;

	if (seq + HA_HB_RING <= sm->hb_seq || !sent)
		return; /* too old to know when it left */
	if (sm->phase != HA_PHASE_SYNCED || !sm->quorate || sm->q_ring_seq != sm->ring_seq)
		return;
	if (!sm->gw_applied_any || sm->gw_applied_gen != sm->doc->generation)
		return; /* isergwd does not hold the current states yet */
	if (!majority_agrees(sm))
		return;
	expires = sent + sm->lease_ms;
	cap = lost_owner_cap(sm, now);
	if (cap && cap < expires)
		expires = cap;
	if (expires <= now)
		return;
	if (!sm->lease_given)
		GW_NOTICE(COMP, "isergwd's lease renewed, the first time since the agent started "
			  "(%" PRIu64 " ms ago): valid for %" PRIu64 " ms", now - sm->start_ms,
			  expires - now);
	else if (sm->lease_expires_ms <= now)
		GW_NOTICE(COMP, "isergwd's lease renewed %" PRIu64 " ms after the last one ran out: "
			  "valid for %" PRIu64 " ms", now - sm->lease_expires_ms, expires - now);
	sm->lease_given = true;
	sm->lease_expires_ms = expires;
	sm->stepped_down = false;
	sm->ops->lease(sm->ctx, expires);
}

/* ------------------------------------------------------------ the leader */

static bool lease_over(const struct ha_sm *sm, int n, uint64_t now, uint64_t *until)
{
	const struct ha_member *m = ha_sm_member_by_name(sm, sm->doc->nodes[n].name);
	uint64_t heard = m && m->last_heard_ms ? m->last_heard_ms : sm->start_ms;

	/* what it may have renewed while this node was out of the quorate group, unheard */
	if (heard < sm->blind_ms)
		heard = sm->blind_ms;
	uint64_t lease = m && m->lease_ms > sm->lease_ms ? m->lease_ms : sm->lease_ms;
	uint64_t end = heard + lease + sm->heartbeat_ms + HA_LEASE_MARGIN_MS;

	if (now >= end || (m && m->fenced))
		return true;
	if (until && (!*until || end < *until))
		*until = end;
	return false;
}

static void add_owner(Isergw__Ha__DgOwner *o, const struct ha_doc *d, int g, int owner, int moving)
{
	isergw__ha__dg_owner__init(o);
	o->device_group = (char *)(uintptr_t)d->dgs[g].name;
	o->node = (char *)(uintptr_t)(owner >= 0 ? d->nodes[owner].name : "");
	o->moving_from = (char *)(uintptr_t)(moving >= 0 ? d->nodes[moving].name : "");
}

/*
 * Per device group g, the nodes eligible for it (elig[g * nnodes + n]): of
 * the nodes in the group and not drained (base), the ones that serve g best
 * (ha_sm_dp_tier): where its LUNs serve; failing that, where the data plane
 * serves; failing that, any (a group keeps an owner while there is a node).
 */
static void dp_eligible(const struct ha_sm *sm, const bool *base, bool *elig)
{
	const struct ha_doc *d = sm->doc;

	for (size_t g = 0; g < d->ndgs; g++) {
		int tier[HA_NODES_MAX], best = 3;

		for (size_t n = 0; n < d->nnodes; n++) {
			tier[n] = ha_sm_dp_tier(sm, (int)n, (int)g, base[n]);
			if (tier[n] < best)
				best = tier[n];
		}
		for (size_t n = 0; n < d->nnodes; n++)
			elig[g * d->nnodes + n] = best < 3 && tier[n] == best;
	}
}

/*
 * The data plane's health changed who may own device group g: its planned
 * owner may no longer (the group moves to the best node left), or its
 * preferred owner, failback immediate, may again (failback). A group moved
 * by hand to a node that is still eligible stays where it is.
 */
static bool dp_moves(const struct ha_sm *sm, const bool *elig, int g)
{
	const struct ha_doc *d = sm->doc;
	int t = sm->target[g], p = d->dgs[g].preferred;
	size_t row = (size_t)g * d->nnodes;

	if (t < 0 || !elig[row + t])
		return true;
	return p >= 0 && d->dgs[g].failback == HA_FAILBACK_IMMEDIATE && elig[row + p] &&
	       !sm->dp_elig[row + p];
}

/*
 * Every live node whose agent is not in the group (live[]: its isergwd may
 * still serve on its lease) took generation gen. ha_sm_all_applied covers
 * the agents in the group only; an isergwd whose agent left before it took
 * a planned move's Transitioning generation reports the old map until its
 * lease ends.
 */
static bool live_away_hold(const struct ha_sm *sm, const bool *live, uint64_t gen)
{
	for (size_t n = 0; n < sm->doc->nnodes; n++) {
		const struct ha_member *m;

		if (!live[n] || node_in_view(sm, (int)n))
			continue;
		m = ha_sm_member_by_name(sm, sm->doc->nodes[n].name);
		if (!m || !member_holds(m, gen))
			return false;
	}
	return true;
}

static void leader_reconcile(struct ha_sm *sm, uint64_t now)
{
	const struct ha_doc *d = sm->doc;
	size_t nd = d->ndgs, nn = d->nnodes;
	bool *live = NULL, *base = NULL, *elig = NULL, changed = false, all_applied, dp_changed, full;
	int *owner = NULL, *moving = NULL;
	Isergw__Ha__DgOwner *own = NULL, **ownp = NULL;
	char **livep = NULL;
	uint64_t hold = 0;

	if (!ha_sm_is_leader(sm) || !sm->quorate || sm->q_ring_seq != sm->ring_seq || !nn ||
	    !majority_agrees(sm))
		return;
	if (sm->inflight_base) {
		if (d->generation == sm->inflight_base && now - sm->inflight_ms < HA_INFLIGHT_RETRY_MS)
			return; /* ours is on its way */
		sm->inflight_base = 0;
	}
	live = calloc(nn, sizeof(*live));
	base = calloc(nn, sizeof(*base));
	elig = calloc(nn * (nd + 1), sizeof(*elig));
	owner = calloc(nd + 1, sizeof(*owner));
	moving = calloc(nd + 1, sizeof(*moving));
	own = calloc(nd + 1, sizeof(*own));
	ownp = calloc(nd + 1, sizeof(*ownp));
	livep = calloc(nn, sizeof(*livep));
	if (!live || !base || !elig || !owner || !moving || !own || !ownp || !livep)
		goto out;
	for (size_t n = 0; n < nn; n++) {
		bool in = node_in_view(sm, (int)n);

		/*
		 * A live node whose agent left the group (restarting, or its
		 * node lost) may still be serving until its lease is over: it
		 * stays live (nothing changes for hosts) until then.
		 */
		live[n] = in || (d->live[n] && !lease_over(sm, (int)n, now, &hold));
		base[n] = in && !d->drained[n];
		if (live[n] != d->live[n])
			changed = true;
	}
	dp_eligible(sm, base, elig);
	if (!sm->target || sm->ntarget != nd) {
		free(sm->target);
		sm->target = calloc(nd + 1, sizeof(int));
		if (!sm->target)
			goto out;
		sm->ntarget = nd;
		sm->replace = true;
	}
	dp_changed = sm->dp_elig && sm->dp_elig_n == nd * nn &&
		     memcmp(sm->dp_elig, elig, nd * nn * sizeof(*elig));
	/* every group placed again, or (the data plane changed) those it concerns */
	full = sm->replace || (sm->hold_until_ms && now >= sm->hold_until_ms);
	if (full || dp_changed) {
		int *cur = calloc(nd + 1, sizeof(int)), *placed = calloc(nd + 1, sizeof(int));

		if (!cur || !placed) {
			free(cur);
			free(placed);
			goto out;
		}
		/* a group being moved counts as its old owner's until the move ends */
		for (size_t g = 0; g < nd; g++)
			cur[g] = d->owner[g] >= 0 ? d->owner[g] : d->moving_from[g];
		ha_place_each(d, elig, cur, placed);
		sm->hold_until_ms = 0;
		/* a lost owner keeps its groups until its lease has certainly run out */
		for (size_t g = 0; g < nd; g++)
			if (d->owner[g] >= 0 && !live[d->owner[g]] &&
			    !lease_over(sm, d->owner[g], now, &sm->hold_until_ms))
				placed[g] = d->owner[g];
		for (size_t g = 0; g < nd; g++)
			if (full || dp_moves(sm, elig, (int)g))
				sm->target[g] = placed[g];
		free(cur);
		free(placed);
		sm->replace = false;
	}
	if (!sm->dp_elig || sm->dp_elig_n != nd * nn) {
		free(sm->dp_elig);
		sm->dp_elig = malloc(nd * nn * sizeof(*elig) + 1);
		sm->dp_elig_n = sm->dp_elig ? nd * nn : 0;
	}
	if (sm->dp_elig)
		memcpy(sm->dp_elig, elig, nd * nn * sizeof(*elig));
	for (size_t i = 0; i < sm->nmoves; i++)
		if ((size_t)sm->moves[i].dg < nd && base[sm->moves[i].node])
			sm->target[sm->moves[i].dg] = sm->moves[i].node;
	sm->nmoves = 0;

	all_applied = ha_sm_all_applied(sm, d->generation, NULL, NULL, 0) &&
		      live_away_hold(sm, live, d->generation);
	for (size_t g = 0; g < nd; g++) {
		int cur = d->owner[g], tgt = sm->target[g];

		owner[g] = cur;
		moving[g] = d->moving_from[g];
		if (cur == tgt) {
			if (cur >= 0 && moving[g] >= 0)
				moving[g] = -1;
		} else if (cur >= 0 && node_in_view(sm, cur)) {
			/*
			 * planned (its agent can apply it): the old owner goes
			 * Transitioning first, but only once the new owner's
			 * isergwd holds the current generation. A node back from
			 * the dead is made live in one generation and loads its
			 * LUNs for it (a second under an emulated CPU); moving
			 * before that would leave the group Transitioning, and
			 * the hosts retrying, all that time. Until then the old
			 * owner serves on; its Applied calls this again.
			 */
			if (tgt < 0 || node_holds(sm, tgt, d->generation)) {
				owner[g] = -1;
				moving[g] = cur;
			}
		} else if (cur >= 0) {
			/* lost: its group moves once its lease is certainly over */
			if (!live[cur]) {
				owner[g] = tgt;
				moving[g] = -1;
			}
		} else if (tgt >= 0 && all_applied) {
			owner[g] = tgt;
			moving[g] = -1;
		}
		if (moving[g] >= 0 && !live[moving[g]])
			moving[g] = -1;
		if (owner[g] != d->owner[g] || moving[g] != d->moving_from[g])
			changed = true;
	}
	if (hold && (!sm->hold_until_ms || hold < sm->hold_until_ms))
		sm->hold_until_ms = hold;
	if (changed) {
		HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
		Isergw__Ha__Change c = ISERGW__HA__CHANGE__INIT;
		Isergw__Ha__Placement p = ISERGW__HA__PLACEMENT__INIT;

		for (size_t g = 0; g < nd; g++) {
			add_owner(&own[g], d, (int)g, owner[g], moving[g]);
			ownp[g] = &own[g];
		}
		for (size_t n = 0; n < nn; n++)
			if (live[n])
				livep[p.n_live++] = (char *)(uintptr_t)d->nodes[n].name;
		p.owners = ownp;
		p.n_owners = nd;
		p.live = livep;
		c.origin = sm->nodeid;
		c.base_generation = d->generation;
		c.kind_case = ISERGW__HA__CHANGE__KIND_PLACEMENT;
		c.placement = &p;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_CHANGE;
		m.change = &c;
		if (!ha_sm_send(sm, &m)) {
			sm->inflight_base = d->generation;
			sm->inflight_ms = now;
		}
	}
out:
	free(live);
	free(base);
	free(elig);
	free(owner);
	free(moving);
	free(own);
	free(ownp);
	free(livep);
}

/* ------------------------------------------------------------ fencing */

/*
 * Why a Fenced for node cannot be taken (NULL: it can): a node in the
 * corosync membership or with its agent in the group is not dead, whatever
 * the message says (a stale one, from before the node came back).
 */
static const char *fenced_refusal(const struct ha_sm *sm, const char *node,
				  const struct ha_member **mp)
{
	const struct ha_member *m = ha_sm_member_by_name(sm, node);

	*mp = m;
	if (ha_doc_find_node(sm->doc, node) < 0)
		return "it is not a node of the cluster configuration";
	if (!m)
		return "corosync names no node so";
	if (m->in_view)
		return "its agent is in the group";
	if (m->in_ring)
		return "it is in the corosync membership";
	return NULL;
}

static void on_fenced(struct ha_sm *sm, uint32_t from, const char *node)
{
	const struct ha_member *cm;
	const char *why = fenced_refusal(sm, node, &cm);

	if (why) {
		GW_WARN(COMP, "node %u says node '%s' was fenced: ignored, %s", from, node, why);
		return;
	}
	if (cm->fenced)
		return;
	((struct ha_member *)(uintptr_t)cm)->fenced = true;
	GW_NOTICE(COMP, "node '%s' was fenced (told by node %u): its device groups need not "
		  "wait for its lease", node, from);
	sm->replace = true;
}

int ha_sm_submit_fenced(struct ha_sm *sm, const char *node, char *err, size_t errlen)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Fenced f = ISERGW__HA__FENCED__INIT;
	const struct ha_member *cm;
	const char *why;

	if (!ha_sm_can_change(sm, err, errlen))
		return sm->quorate ? -EAGAIN : -ENOLCK;
	if (sm->proto < 2)
		return gw_errf(err, errlen, -EPROTONOSUPPORT, "the cluster speaks protocol %u "
			    "(an agent older than this one is in the group): the fence is not "
			    "announced, node '%s''s device groups wait for its lease", sm->proto, node);
	why = fenced_refusal(sm, node, &cm);
	if (why)
		return gw_errf(err, errlen, ha_doc_find_node(sm->doc, node) < 0 || !cm ? -ENOENT : -EBUSY,
			    "node '%s': %s", node, why);
	f.node = (char *)(uintptr_t)node;
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_FENCED;
	m.fenced = &f;
	return ha_sm_send(sm, &m);
}

/* ------------------------------------------------------------ inputs */

int ha_sm_init(struct ha_sm *sm, const struct ha_sm_params *p, const struct ha_sm_ops *ops,
	       void *ctx, struct ha_doc *doc, uint64_t now)
{
	memset(sm, 0, sizeof(*sm));
	sm->ops = ops;
	sm->ctx = ctx;
	sm->nodeid = p->nodeid;
	copy_name(sm->name, p->name);
	copy_name(sm->cluster, p->cluster);
	sm->lease_ms = p->lease_ms;
	sm->heartbeat_ms = p->heartbeat_ms;
	sm->proto_max = p->proto_max && p->proto_max < HA_PROTO_MAX ? p->proto_max : HA_PROTO_MAX;
	if (sm->proto_max < HA_PROTO_MIN)
		sm->proto_max = HA_PROTO_MIN;
	sm->start_ms = now;
	sm->doc = doc;
	sm->proto = HA_PROTO_MIN;
	sm->next_request = 1;
	/* no isergwd yet; one may still hold a lease of a previous agent's for up to a lease */
	sm->gw_lost = true;
	sm->lease_expires_ms = now + p->lease_ms;
	ha_sm_set_name(sm, p->nodeid, p->name);
	ha_sm_dp_init(sm, now);
	return 0;
}

void ha_sm_fini(struct ha_sm *sm)
{
	while (sm->nreqs)
		req_finish(sm, sm->nreqs - 1, -ESHUTDOWN, "the agent is stopping", 0);
	ha_doc_free(sm->doc);
	sm->doc = NULL;
	free(sm->target);
	sm->target = NULL;
	free(sm->dp_elig);
	sm->dp_elig = NULL;
	free(sm->dg_moved_ms);
	sm->dg_moved_ms = NULL;
	ha_sm_lu_fini(sm);
	ha_sm_dp_fini(sm);
}

void ha_sm_ring(struct ha_sm *sm, uint64_t ring_seq, uint32_t ring_node, const uint32_t *nodes,
		size_t n, uint64_t now)
{
	sm->ring_seq = ring_seq;
	sm->ring_node = ring_node;
	for (size_t i = 0; i < HA_MAX_MEMBERS; i++)
		if (sm->m[i].used)
			sm->m[i].in_ring = false;
	for (size_t i = 0; i < n; i++) {
		struct ha_member *m = member_get(sm, nodes[i]);

		if (m)
			m->in_ring = true;
	}
	GW_INFO(COMP, "corosync ring %" PRIu64 "/%u: %zu node(s)", ring_seq, ring_node, n);
	leader_reconcile(sm, now);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void ha_sm_view(struct ha_sm *sm, const uint32_t *members, size_t n, uint64_t now)
{
	/* a member of the quorate group until now heard every lease renewed in it */
	bool was_in = sm->phase == HA_PHASE_SYNCED && sm->quorate;
	bool self = false;
	size_t i;

	if (!was_in)
		sm->blind_ms = now;

	if (n > HA_MAX_MEMBERS) {
		GW_ERR(COMP, "%zu agents in the group: only %u are supported", n, HA_MAX_MEMBERS);
		n = HA_MAX_MEMBERS;
	}
	if (n)
		memcpy(sm->view, members, n * sizeof(uint32_t));
	sm->nview = n;
	qsort(sm->view, n, sizeof(uint32_t), cmp_u32);
	for (i = 0; i < HA_MAX_MEMBERS; i++) {
		sm->m[i].in_view = false;
		sm->m[i].sync_rcvd = false;
		sm->m[i].foreign = false;
	}
	for (i = 0; i < n; i++) {
		struct ha_member *m = member_get(sm, sm->view[i]);

		if (m) {
			m->in_view = true;
			m->fenced = false;
			if (!m->last_heard_ms)
				m->last_heard_ms = now;
		}
		if (sm->view[i] == sm->nodeid)
			self = true;
	}
	sm->state_sent = false;
	sm->nmoves = 0;
	sm->gw_down_sent = false;
	ha_sm_lu_view(sm);
	/* requests on their way may be lost with the old view: they end with it */
	for (i = sm->nreqs; i-- > 0;)
		if (!sm->reqs[i].sent_applied)
			req_finish(sm, i, -EAGAIN, "the membership changed while it was on its way", 0);
	if (!self) {
		sm->phase = HA_PHASE_START;
		return;
	}
	sm->phase = HA_PHASE_SYNCING;
	GW_NOTICE(COMP, "group view: %zu agent(s); sync barrier started", n);
	send_sync(sm);
}

void ha_sm_quorum(struct ha_sm *sm, bool quorate, uint64_t ring_seq, uint32_t ring_node,
		  uint32_t expected_votes, uint32_t total_votes, uint64_t now)
{
	bool was = sm->quorate;

	sm->quorate = quorate;
	sm->q_ring_seq = ring_seq;
	sm->q_ring_node = ring_node;
	sm->expected_votes = expected_votes;
	sm->total_votes = total_votes;
	if (was != quorate)
		GW_NOTICE(COMP, "quorum %s (ring %" PRIu64 "/%u, %u of %u expected votes)",
			  quorate ? "gained" : "LOST", ring_seq, ring_node, total_votes,
			  expected_votes);
	if (!quorate && !sm->stepped_down) {
		sm->stepped_down = true;
		sm->ops->step_down(sm->ctx, "this node lost quorum");
	}
	leader_reconcile(sm, now);
}

void ha_sm_deliver(struct ha_sm *sm, uint32_t nodeid, const uint8_t *buf, size_t len,
		   uint64_t now)
{
	struct ha_member *from;
	char err[256];
	HaMsg *m;
	int rc;

	ha_sm_clock(sm, now);
	rc = ha_msg_decode(buf, len, &m, err, sizeof(err));
	if (rc) {
		sm->rejected_msgs++;
		GW_WARN(COMP, "group message from node %u ignored: %s", nodeid, err);
		return;
	}
	if (strcmp(m->cluster, sm->cluster)) {
		sm->rejected_msgs++;
		from = in_view(sm, nodeid) ? member_get(sm, nodeid) : NULL;
		if (from && from->foreign)
			GW_DEBUG(COMP, "group message from node %u (cluster '%s') ignored", nodeid,
				 m->cluster);
		else
			GW_WARN(COMP, "group message from node %u ignored: it is of cluster '%s', "
				"this node is of '%s'", nodeid, m->cluster, sm->cluster);
		if (from && !from->foreign) {
			from->foreign = true;
			GW_ERR(COMP, "the agent of node %u is of cluster '%s': left out of the group "
			       "until it leaves", nodeid, m->cluster);
			sync_check(sm, now);
			leader_reconcile(sm, now);
		}
		goto out;
	}
	from = member_get(sm, nodeid);
	if (!from)
		goto out;
	if (!in_view(sm, nodeid) && m->body_case != ISERGW__HA__GROUP_MSG__BODY_SYNC) {
		GW_DEBUG(COMP, "%s from node %u, not in the view, ignored", ha_msg_kind(m), nodeid);
		goto out;
	}
	from->last_heard_ms = now;
	from->fenced = false;
	switch (m->body_case) {
	case ISERGW__HA__GROUP_MSG__BODY_SYNC:
		on_sync(sm, from, m->sync, now);
		break;
	case ISERGW__HA__GROUP_MSG__BODY_STATE:
		on_state(sm, nodeid, m->state, now);
		break;
	case ISERGW__HA__GROUP_MSG__BODY_CHANGE:
		if (m->change->origin != nodeid) {
			GW_WARN(COMP, "change from node %u claims origin %u: ignored", nodeid,
				m->change->origin);
			break;
		}
		on_change(sm, m->change, now);
		break;
	case ISERGW__HA__GROUP_MSG__BODY_APPLIED:
		if (m->applied->status == -ENOTCONN) {
			GW_WARN(COMP, "node %u (%s) has no isergwd and its lease there is over: "
				"not waited for", nodeid, from->name);
			from->gw_down = true;
			sm->ops->applied(sm->ctx);
		} else if (m->applied->status) {
			GW_WARN(COMP, "node %u (%s): isergwd refused generation %" PRIu64 ": %s",
				nodeid, from->name, m->applied->generation, m->applied->error);
		} else {
			from->gw_down = false;
			if (m->applied->generation > from->applied_gen)
				from->applied_gen = m->applied->generation;
			sm->ops->applied(sm->ctx);
		}
		break;
	case ISERGW__HA__GROUP_MSG__BODY_FENCED:
		on_fenced(sm, nodeid, m->fenced->node);
		break;
	case ISERGW__HA__GROUP_MSG__BODY_DATAPLANE:
		ha_sm_dp_deliver(sm, from, m->dataplane);
		break;
	case ISERGW__HA__GROUP_MSG__BODY_LU_PROPOSE:
	case ISERGW__HA__GROUP_MSG__BODY_LU_APPLIED:
	case ISERGW__HA__GROUP_MSG__BODY_LU_LOCK:
	case ISERGW__HA__GROUP_MSG__BODY_LU_UNLOCK:
		ha_sm_lu_deliver(sm, nodeid, m);
		break;
	case ISERGW__HA__GROUP_MSG__BODY_HEARTBEAT:
		if (m->heartbeat->applied_generation > from->applied_gen) {
			from->applied_gen = m->heartbeat->applied_generation;
			sm->ops->applied(sm->ctx);
		}
		if (nodeid == sm->nodeid) {
			if (sm->stale && m->heartbeat->seq >= sm->stale_hb_seq) {
				sm->stale = false;
				GW_NOTICE(COMP, "heard the group again: the view is current");
			}
			sm->hb_back_seq = m->heartbeat->seq;
			sm->hb_back_ring = sm->ring_seq;
			lease_check(sm, m->heartbeat->seq, now);
		}
		break;
	default:
		break;
	}
	leader_reconcile(sm, now);
out:
	ha_msg_free(m);
}

void ha_sm_clock(struct ha_sm *sm, uint64_t now)
{
	uint64_t gap = sm->lease_ms / 2 > 3 * sm->heartbeat_ms ? sm->lease_ms / 2 :
		       3 * sm->heartbeat_ms;
	uint64_t last = sm->clock_last_ms;

	sm->clock_last_ms = now;
	if (!last || now <= last + gap || sm->phase == HA_PHASE_START)
		return;
	if (!sm->stale)
		GW_NOTICE(COMP, "the agent did not run for %" PRIu64 " ms (the node frozen or the "
			  "process stopped): its view of the group is stale until it hears the "
			  "group again", now - last);
	sm->stale = true;
	sm->stale_hb_seq = sm->hb_seq + 1;      /* the next one sent from now */
}

void ha_sm_tick(struct ha_sm *sm, uint64_t now)
{
	ha_sm_clock(sm, now);
	if (sm->phase != HA_PHASE_START && now - sm->hb_last_ms >= sm->heartbeat_ms)
		send_heartbeat(sm, now);
	/* without isergwd, once the lease it was given is over, nobody need wait for us */
	if (sm->gw_lost && !sm->gw_down_sent && sm->phase == HA_PHASE_SYNCED &&
	    now >= sm->lease_expires_ms) {
		sm->gw_down_sent = true;
		send_applied(sm, sm->doc->generation, -ENOTCONN, "no isergwd");
	}
	ha_sm_dp_tick(sm, now);
	leader_reconcile(sm, now);
}

/*
 * isergwd's answers go to the group once the document is durable here, in
 * the order they came: Applied{gen} tells the others that this node both
 * serves gen and will come back with it after a crash.
 */
static void applied_flush(struct ha_sm *sm)
{
	while (sm->napplied) {
		struct ha_sm_applied *q = &sm->applied_q[sm->applied_head];

		if (q->need_seq > sm->stored_seq)
			return;
		sm->applied_head = (sm->applied_head + 1) % HA_SM_APPLIED_MAX;
		sm->napplied--;
		if (!q->status && q->gen > sm->told_gen)
			sm->told_gen = q->gen;
		if (sm->phase != HA_PHASE_START)
			send_applied(sm, q->gen, q->status, q->status ? q->err : NULL);
	}
}

void ha_sm_gw_applied(struct ha_sm *sm, uint64_t gen, int status, const char *err, uint64_t now)
{
	struct ha_sm_applied *q;

	if (!status) {
		/* the lease needs isergwd to hold the states, not the disk to hold them */
		sm->gw_applied_gen = gen;
		sm->gw_applied_any = true;
		sm->gw_lost = false;
		sm->gw_down_sent = false;
		/*
		 * A restarted isergwd serves again at once, not at the next heartbeat
		 * to come back: the last one that came back in this ring renews it
		 * (the lease still ends lease_ms after that one was sent).
		 */
		if (sm->hb_back_seq && sm->hb_back_ring == sm->ring_seq)
			lease_check(sm, sm->hb_back_seq, now);
	}
	if (sm->napplied) {
		q = &sm->applied_q[(sm->applied_head + sm->napplied - 1) % HA_SM_APPLIED_MAX];
		if (q->gen == gen && q->status == status && q->need_seq == sm->doc_seq)
			return; /* the same answer again (isergwd reconnected): once is enough */
	}
	if (sm->napplied == HA_SM_APPLIED_MAX) {
		/* the oldest one: a newer one of the queue covers it for the others */
		sm->applied_head = (sm->applied_head + 1) % HA_SM_APPLIED_MAX;
		sm->napplied--;
	}
	q = &sm->applied_q[(sm->applied_head + sm->napplied++) % HA_SM_APPLIED_MAX];
	q->gen = gen;
	q->need_seq = sm->doc_seq;
	q->status = status;
	snprintf(q->err, sizeof(q->err), "%s", err ? err : "");
	applied_flush(sm);
}

void ha_sm_gw_lost(struct ha_sm *sm)
{
	/* the lease it holds (lease_expires_ms) still runs: it may be serving until then */
	sm->gw_applied_any = false;
	sm->gw_applied_gen = 0;
	sm->gw_lost = true;
	sm->gw_down_sent = false;
	/* what it took is gone with it: nothing left to tell */
	sm->napplied = 0;
	sm->told_gen = 0;
}

void ha_sm_doc_stored(struct ha_sm *sm, uint64_t seq)
{
	if (seq <= sm->stored_seq)
		return;
	sm->stored_seq = seq;
	applied_flush(sm);
}

/* ------------------------------------------------------------ local API */

static int64_t submit(struct ha_sm *sm, Isergw__Ha__Change *c, enum ha_req_kind kind,
		      const char *dg, const char *node, char *err, size_t errlen)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	struct ha_sm_req *r;
	int rc;

	if (sm->nreqs >= HA_SM_REQS_MAX)
		return gw_errf(err, errlen, -EBUSY, "too many changes in progress (%u)", HA_SM_REQS_MAX);
	c->origin = sm->nodeid;
	c->request_id = sm->next_request++;
	c->base_generation = c->base_generation ? c->base_generation : sm->doc->generation;
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_CHANGE;
	m.change = c;
	rc = ha_sm_send(sm, &m);
	if (rc)
		return gw_errf(err, errlen, rc, "cannot multicast the change: %s", strerror(-rc));
	r = &sm->reqs[sm->nreqs++];
	memset(r, 0, sizeof(*r));
	r->id = c->request_id;
	r->kind = kind;
	copy_name(r->dg, dg);
	copy_name(r->node, node);
	return (int64_t)r->id;
}

/* A change may be submitted now, on top of generation base_gen (0: any). */
static int change_check(struct ha_sm *sm, uint64_t base_gen, char *err, size_t errlen)
{
	if (!ha_sm_can_change(sm, err, errlen))
		return sm->quorate ? -EAGAIN : -ENOLCK;
	if (base_gen && base_gen != sm->doc->generation)
		return gw_errf(err, errlen, -ESTALE, "the cluster is at generation %" PRIu64
			    ", not %" PRIu64, sm->doc->generation, base_gen);
	return 0;
}

int64_t ha_sm_submit_config(struct ha_sm *sm, const char *config_json, uint64_t base_gen,
			    char *err, size_t errlen)
{
	Isergw__Ha__Change c = ISERGW__HA__CHANGE__INIT;
	int rc;

	rc = change_check(sm, base_gen, err, errlen);
	if (rc)
		return rc;
	rc = ha_config_check(config_json, err, errlen);
	if (rc)
		return rc;
	if (ha_doc_config_equal(sm->doc, config_json, err, errlen) == 1)
		return gw_errf(err, errlen, -EALREADY, "the configuration is the cluster's already "
			    "(generation %" PRIu64 ")", sm->doc->generation);
	c.base_generation = sm->doc->generation;
	c.kind_case = ISERGW__HA__CHANGE__KIND_CONFIG_JSON;
	c.config_json = (char *)(uintptr_t)config_json;
	return submit(sm, &c, HA_REQ_CONFIG, "", "", err, errlen);
}

int64_t ha_sm_submit_lun(struct ha_sm *sm, const char *iqn, bool has_lun, uint32_t *lun,
			 const char *lun_json, uint64_t base_gen, char *err, size_t errlen)
{
	Isergw__Ha__Change c = ISERGW__HA__CHANGE__INIT;
	Isergw__Ha__LunChange lc = ISERGW__HA__LUN_CHANGE__INIT;
	bool add = lun_json && lun_json[0];
	struct ha_doc *d = NULL;
	char *cfg;
	int64_t id;
	int rc;

	rc = change_check(sm, base_gen, err, errlen);
	if (rc)
		return rc;
	if (add && !has_lun) {
		rc = ha_doc_lun_free(sm->doc, iqn, lun, err, errlen);
		if (rc)
			return rc;
	}
	/* checked here as every member checks it on delivery: a refused one never leaves */
	if (sm->proto >= 3) {
		char *canon = NULL;

		rc = ha_doc_lun_check(sm->doc, iqn, *lun, add ? lun_json : NULL, &canon, err, errlen);
		if (!rc) {
			lc.target = (char *)(uintptr_t)iqn;
			lc.lun = *lun;
			lc.lun_json = canon ? canon : (char *)(uintptr_t)"";
			c.base_generation = sm->doc->generation;
			c.kind_case = ISERGW__HA__CHANGE__KIND_LUN;
			c.lun = &lc;
			id = submit(sm, &c, HA_REQ_CONFIG, "", "", err, errlen);
			free(canon);
			return id;
		}
		if (rc != -EOPNOTSUPP)
			return rc;
	}
	/* the whole configuration it makes: an older group, or LUNs numbered by their place */
	rc = ha_doc_with_lun(sm->doc, iqn, *lun, add ? lun_json : NULL, &d, err, errlen);
	if (rc == -EOPNOTSUPP)
		return gw_errf(err, errlen, rc, "target %s has LUNs numbered by their place: change "
			    "the whole configuration", iqn);
	if (rc)
		return rc;
	cfg = ha_doc_config_json(d);
	ha_doc_free(d);
	if (!cfg)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	id = ha_sm_submit_config(sm, cfg, base_gen, err, errlen);
	free(cfg);
	return id;
}

/*
 * The device groups that have an owner now and would have none with node n
 * drained (no other node eligible, as placement sees it), their names into
 * list ("dg1, dg2", cut short when it does not fit). Returns how many, or
 * -ENOMEM, -EINVAL (placement refused its inputs).
 */
static int drain_orphans(const struct ha_sm *sm, int n, char *list, size_t listlen)
{
	const struct ha_doc *d = sm->doc;
	size_t nd = d->ndgs, used = 0;
	bool *elig = calloc(d->nnodes + 1, sizeof(*elig));
	int *cur = calloc(nd + 1, sizeof(*cur)), *out = calloc(nd + 1, sizeof(*out));
	int count = 0;

	if (!elig || !cur || !out) {
		count = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < d->nnodes; k++)
		elig[k] = (int)k != n && node_in_view(sm, (int)k) && !d->drained[k];
	for (size_t g = 0; g < nd; g++)
		cur[g] = d->owner[g] >= 0 ? d->owner[g] : d->moving_from[g];
	if (ha_place(d, elig, cur, out) < 0) {
		count = -EINVAL;
		goto out;
	}
	list[0] = '\0';
	for (size_t g = 0; g < nd; g++) {
		if (cur[g] < 0 || out[g] >= 0)
			continue;
		if (used < listlen)
			used += (size_t)snprintf(list + used, listlen - used, "%s%s", count ? ", " : "",
						 d->dgs[g].name);
		count++;
	}
out:
	free(elig);
	free(cur);
	free(out);
	return count;
}

int64_t ha_sm_submit_drain(struct ha_sm *sm, const char *node, bool drained, bool force,
			   char *err, size_t errlen)
{
	Isergw__Ha__Change c = ISERGW__HA__CHANGE__INIT;
	Isergw__Ha__NodeDrain dr = ISERGW__HA__NODE_DRAIN__INIT;
	char orphans[512];
	int64_t id;
	int n, count;

	if (!ha_sm_can_change(sm, err, errlen))
		return sm->quorate ? -EAGAIN : -ENOLCK;
	n = ha_doc_find_node(sm->doc, node);
	if (n < 0)
		return gw_errf(err, errlen, -ENOENT, "no node '%s' in the cluster configuration", node);
	if (sm->doc->drained[n] == drained)
		return gw_errf(err, errlen, -EALREADY, "node '%s' is %s already", node,
			    drained ? "drained" : "not drained");
	count = drained ? drain_orphans(sm, n, orphans, sizeof(orphans)) : 0;
	if (count < 0)
		return gw_errf(err, errlen, count, "cannot work out where the device groups would go: %s",
			    strerror(-count));
	if (count && !force)
		return gw_errf(err, errlen, -EBUSY, "draining node '%s' would leave %s %s without an "
			    "owner (no other node can serve %s): force the drain (isergwctl --force, "
			    "REST ?force=true) to do it anyway",
			    node, count > 1 ? "device groups" : "device group", orphans,
			    count > 1 ? "them" : "it");
	dr.node = (char *)(uintptr_t)node;
	dr.drained = drained;
	c.base_generation = sm->doc->generation;
	c.kind_case = ISERGW__HA__CHANGE__KIND_DRAIN;
	c.drain = &dr;
	id = submit(sm, &c, drained ? HA_REQ_DRAIN : HA_REQ_UNDRAIN, "", node, err, errlen);
	if (id > 0 && count) {
		GW_WARN(COMP, "node %s drained by force: device group(s) %s left without an owner",
			node, orphans);
		req_find(sm, (uint64_t)id, NULL)->orphans = true;
	}
	return id;
}

int64_t ha_sm_submit_token(struct ha_sm *sm, const char *name, const char *role,
			   const char *hash, uint64_t created, char *err, size_t errlen)
{
	Isergw__Ha__Change c = ISERGW__HA__CHANGE__INIT;
	Isergw__Ha__TokenChange tc = ISERGW__HA__TOKEN_CHANGE__INIT;
	struct ha_doc *d = NULL;
	int rc;

	if (!ha_sm_can_change(sm, err, errlen))
		return sm->quorate ? -EAGAIN : -ENOLCK;
	if (sm->proto < HA_PROTO_TOKENS)
		return gw_errf(err, errlen, -EPROTONOSUPPORT, "the cluster speaks protocol %u: cluster "
			    "tokens need %u on every node (upgrade them)", sm->proto,
			    HA_PROTO_TOKENS);
	/* checked here as every member checks it on delivery: a refused one never leaves */
	rc = ha_doc_with_token(sm->doc, name, role, hash, created, &d, err, errlen);
	ha_doc_free(d);
	if (rc)
		return rc;
	tc.name = (char *)(uintptr_t)name;
	tc.role = (char *)(uintptr_t)(role ? role : "");
	tc.hash = (char *)(uintptr_t)(role && hash ? hash : "");
	tc.created = role ? created : 0;
	c.base_generation = sm->doc->generation;
	c.kind_case = ISERGW__HA__CHANGE__KIND_TOKEN;
	c.token = &tc;
	return submit(sm, &c, HA_REQ_CONFIG, "", "", err, errlen);
}

int64_t ha_sm_submit_move(struct ha_sm *sm, const char *dg, const char *node, char *err,
			  size_t errlen)
{
	Isergw__Ha__Change c = ISERGW__HA__CHANGE__INIT;
	Isergw__Ha__DgMove mv = ISERGW__HA__DG_MOVE__INIT;
	int g, n;

	if (!ha_sm_can_change(sm, err, errlen))
		return sm->quorate ? -EAGAIN : -ENOLCK;
	g = ha_doc_find_dg(sm->doc, dg);
	if (g < 0)
		return gw_errf(err, errlen, -ENOENT, "no device group '%s' in the cluster configuration",
			    dg);
	n = ha_doc_find_node(sm->doc, node);
	if (n < 0)
		return gw_errf(err, errlen, -ENOENT, "no node '%s' in the cluster configuration", node);
	if (sm->doc->owner[g] == n)
		return gw_errf(err, errlen, -EALREADY, "device group '%s' is owned by '%s' already",
			    dg, node);
	if (!node_in_view(sm, n) || !sm->doc->live[n])
		return gw_errf(err, errlen, -EHOSTDOWN, "node '%s' is not serving (not in the group "
			    "or not synchronised)", node);
	if (sm->doc->drained[n])
		return gw_errf(err, errlen, -EPERM, "node '%s' is drained", node);
	mv.device_group = (char *)(uintptr_t)dg;
	mv.node = (char *)(uintptr_t)node;
	c.base_generation = sm->doc->generation;
	c.kind_case = ISERGW__HA__CHANGE__KIND_MOVE;
	c.move = &mv;
	return submit(sm, &c, HA_REQ_MOVE, dg, node, err, errlen);
}

int64_t ha_sm_submit_host_move(struct ha_sm *sm, const char *dg, const char *node, uint64_t now,
			       char *err, size_t errlen)
{
	int g = ha_doc_find_dg(sm->doc, dg), n = ha_doc_find_node(sm->doc, node);
	uint64_t since;

	/* what is refused for good (unknown, drained, not serving) says so first */
	if (g < 0 || n < 0 || sm->doc->owner[g] == n || sm->doc->drained[n] ||
	    !node_in_view(sm, n) || !sm->doc->live[n])
		return ha_sm_submit_move(sm, dg, node, err, errlen);
	if (sm->doc->owner[g] < 0 && sm->doc->moving_from[g] >= 0)
		return gw_errf(err, errlen, -EAGAIN, "device group '%s' is moving from '%s'", dg,
			    sm->doc->nodes[sm->doc->moving_from[g]].name);
	since = sm->dg_moved_ms && sm->dg_moved_ms[g] ? now - sm->dg_moved_ms[g] : UINT64_MAX;
	if (since < HA_HOST_MOVE_SETTLE_MS)
		return gw_errf(err, errlen, -EAGAIN, "device group '%s' changed hands %" PRIu64 " ms ago "
			    "(a host's request waits until it has kept its owner for %u ms)", dg, since,
			    HA_HOST_MOVE_SETTLE_MS);
	return ha_sm_submit_move(sm, dg, node, err, errlen);
}

/* ------------------------------------------------------------ ALUA map */

void ha_alua_states(const struct ha_doc *d, int dg, struct ha_alua_entry *out)
{
	const struct ha_dg *g = &d->dgs[dg];

	for (size_t n = 0; n < d->nnodes; n++) {
		struct ha_alua_entry *e = &out[n];

		e->tpg_id = d->nodes[n].tpg_id;
		e->pref = false;
		if (!d->live[n])
			e->state = ALUA_UNAVAILABLE;
		else if (d->owner[dg] == (int)n) {
			e->state = ALUA_AO;
			e->pref = true;
		} else if (d->owner[dg] < 0 && d->moving_from[dg] == (int)n)
			e->state = ALUA_TRANSITIONING;
		else
			e->state = g->non_owner_state;
	}
}
