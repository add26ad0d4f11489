/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HA agent's state machine: see sm.h for the shape and docs/ha.md for
 * the protocol. Everything that changes the document happens on delivery of
 * a group message, in agreed order, the same way on every member.
 *
 * This file: the members, sending, the document and its requests, the
 * changes delivered, and the inputs (membership, quorum, delivery, clock,
 * isergwd). The sync barrier is sm_barrier.c; the lease, the leader and
 * fencing sm_leader.c; the local API sm_submit.c; the LU state sm_lu.c; the
 * data plane's health sm_dp.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "common/log.h"

#define COMP "ha"

void ha_sm_copy_name(char dst[HA_NAME_MAX], const char *src)
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

bool ha_sm_in_view(const struct ha_sm *sm, uint32_t nodeid)
{
	for (size_t i = 0; i < sm->nview; i++)
		if (sm->view[i] == nodeid)
			return true;
	return false;
}

/* Node n of the document has its agent in the (synchronised) view. */
bool ha_sm_node_in_view(const struct ha_sm *sm, int n)
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
bool ha_sm_member_holds(const struct ha_member *m, uint64_t gen)
{
	return m->applied_gen >= gen || m->gw_down;
}

/* Node n's agent is in the view and its node holds generation gen. */
bool ha_sm_node_holds(const struct ha_sm *sm, int n, uint64_t gen)
{
	return ha_sm_node_in_view(sm, n) &&
	       ha_sm_member_holds(ha_sm_member_by_name(sm, sm->doc->nodes[n].name), gen);
}

/* The members of our cluster are a majority of the view (foreign agents aside). */
bool ha_sm_majority_agrees(const struct ha_sm *sm)
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
		ha_sm_copy_name(m->name, name);
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
	if (!ha_sm_majority_agrees(sm)) {
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
		if (ha_sm_member_holds(m, gen))
			continue;
		all = false;
		if (pending && npending && *npending < max)
			ha_sm_copy_name(pending[(*npending)++], sm->doc->nodes[i].name);
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

struct ha_sm_req *ha_sm_req_find(struct ha_sm *sm, uint64_t id, size_t *idx)
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
void ha_sm_doc_set(struct ha_sm *sm, struct ha_doc *d, uint64_t now)
{
	/* the leader's targets stay: a configuration change reruns the placement */
	track_moves(sm, sm->doc, d, now);
	ha_doc_free(sm->doc);
	sm->doc = d;
	sm->ops->doc_changed(sm->ctx, d, ++sm->doc_seq);
	reqs_check(sm);
}

/* ------------------------------------------------------------ changes */

static void change_refused(struct ha_sm *sm, const Isergw__Ha__Change *c, int rc, const char *why)
{
	size_t i;

	GW_WARN(COMP, "change %" PRIu64 " of node %u refused: %s", c->request_id, c->origin, why);
	if (c->origin == sm->nodeid && ha_sm_req_find(sm, c->request_id, &i))
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
		if (c->origin == sm->nodeid && ha_sm_req_find(sm, c->request_id, &ri)) {
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
	if (c->origin == sm->nodeid && ha_sm_req_find(sm, c->request_id, &ri))
		sm->reqs[ri].sent_applied = true;
	ha_sm_doc_set(sm, d, now);
}

/* ------------------------------------------------------------ inputs */

int ha_sm_init(struct ha_sm *sm, const struct ha_sm_params *p, const struct ha_sm_ops *ops,
	       void *ctx, struct ha_doc *doc, uint64_t now)
{
	memset(sm, 0, sizeof(*sm));
	sm->ops = ops;
	sm->ctx = ctx;
	sm->nodeid = p->nodeid;
	ha_sm_copy_name(sm->name, p->name);
	ha_sm_copy_name(sm->cluster, p->cluster);
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
	ha_sm_leader_reconcile(sm, now);
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
	ha_sm_leader_reconcile(sm, now);
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
		from = ha_sm_in_view(sm, nodeid) ? member_get(sm, nodeid) : NULL;
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
			ha_sm_sync_check(sm, now);
			ha_sm_leader_reconcile(sm, now);
		}
		goto out;
	}
	from = member_get(sm, nodeid);
	if (!from)
		goto out;
	if (!ha_sm_in_view(sm, nodeid) && m->body_case != ISERGW__HA__GROUP_MSG__BODY_SYNC) {
		GW_DEBUG(COMP, "%s from node %u, not in the view, ignored", ha_msg_kind(m), nodeid);
		goto out;
	}
	from->last_heard_ms = now;
	from->fenced = false;
	switch (m->body_case) {
	case ISERGW__HA__GROUP_MSG__BODY_SYNC:
		ha_sm_on_sync(sm, from, m->sync, now);
		break;
	case ISERGW__HA__GROUP_MSG__BODY_STATE:
		ha_sm_on_state(sm, nodeid, m->state, now);
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
		ha_sm_on_fenced(sm, nodeid, m->fenced->node);
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
			ha_sm_lease_check(sm, m->heartbeat->seq, now);
		}
		break;
	default:
		break;
	}
	ha_sm_leader_reconcile(sm, now);
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
	ha_sm_leader_reconcile(sm, now);
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
			ha_sm_lease_check(sm, sm->hb_back_seq, now);
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
