/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The LU state carried by the agents (docs/ha.md, "The LU state"): per LU
 * (NAA) a version and the state blob (a packed isergw.ctl.LuState the
 * agents store and forward, never interpret). Decided on the agreed message
 * stream, alike on every member:
 *
 *   view change            -> not synchronised: every LuPropose delivered
 *                             is refused (-EAGAIN) by every member
 *   each Sync of the view  -> its table merged (per LU the highest version,
 *                             then the greater blob); the last one -> synchronised
 *   LuPropose (synced)     -> base == our version: version + 1, pushed to
 *                             isergwd; otherwise refused (-ESTALE, or out of
 *                             order when the base is ahead of ours)
 *   LuApplied              -> the origin crosses the member off; none left
 *                             (members that left the view are dropped) ->
 *                             its isergwd's command completes
 *
 * A member's table before a view's barrier is the same as every old
 * member's (they refused proposals from the view change on and sent their
 * Sync at it), so the merge gives every member the same table.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isergw_ctl.pb-c.h"
#include "sm.h"
#include "common/log.h"

#define COMP "ha-lu"

static void naa_hex(const uint8_t naa[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", naa[i]);
}

static struct ha_lu *lu_find(struct ha_lus *l, const uint8_t naa[16])
{
	for (size_t i = 0; i < l->n; i++)
		if (memcmp(l->v[i].naa, naa, 16) == 0)
			return &l->v[i];
	return NULL;
}

const struct ha_lu *ha_sm_lu_find(const struct ha_sm *sm, const uint8_t naa[16])
{
	return lu_find((struct ha_lus *)(uintptr_t)&sm->lus, naa);
}

/* Sets LU naa to (version, state); 0 or -ENOMEM/-ENOSPC. */
static int lu_set(struct ha_lus *l, const uint8_t naa[16], uint64_t version, const uint8_t *state,
		  size_t len)
{
	struct ha_lu *e = lu_find(l, naa);
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, state, len);
	if (!e) {
		if (l->n == HA_LU_MAX) {
			free(copy);
			return -ENOSPC;
		}
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 16;
			struct ha_lu *v = realloc(l->v, cap * sizeof(*v));

			if (!v) {
				free(copy);
				return -ENOMEM;
			}
			l->v = v;
			l->cap = cap;
		}
		e = &l->v[l->n++];
		memset(e, 0, sizeof(*e));
		memcpy(e->naa, naa, 16);
	}
	free(e->state);
	e->state = copy;
	e->len = len;
	e->version = version;
	return 0;
}

void ha_sm_lu_load(struct ha_sm *sm, struct ha_lu *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (lu_set(&sm->lus, v[i].naa, v[i].version, v[i].state, v[i].len))
			GW_ERR(COMP, "out of memory loading the LU table");
		else
			lu_find(&sm->lus, v[i].naa)->handed = v[i].handed;
		free(v[i].state);
	}
	free(v);
}

void ha_sm_lu_fini(struct ha_sm *sm)
{
	for (size_t i = 0; i < sm->lus.n; i++)
		free(sm->lus.v[i].state);
	free(sm->lus.v);
	free(sm->lus.locks);
	free(sm->lus.parked);
	memset(&sm->lus, 0, sizeof(sm->lus));
}

static void lu_done(struct ha_sm *sm, uint64_t id, int status, const char *why)
{
	if (sm->ops->lu_done)
		sm->ops->lu_done(sm->ctx, id, status, why);
}


/* ------------------------------------------------------------ parked UAs */

/*
 * Unit attentions for the nexuses through a node that is away (docs/ha.md,
 * "Unit attentions for nodes that are away"). A change applied while a
 * node's agent is not in the view raises its per-nexus UAs (PREEMPT,
 * CLEAR, RELEASE of a registrant's reservation...) for nexuses nobody
 * serves: every member parks them, alike (delivery order, the agreed
 * document and view), sends them in its Sync, and drops them once their
 * node is back in the view; that node takes them (union of the Syncs) and
 * hands them to its isergwd, which queues them on the (detached) nexuses
 * before it serves. An LU's `handed` version keeps a copy that comes back
 * late (a member that was cut off) from being handed twice. Events for
 * every nexus (resets, mode changes) are not parked: a node that was away
 * lost its nexuses, and the host logs in anew.
 */

static bool node_away(const struct ha_sm *sm, const char *name)
{
	const struct ha_member *m = ha_sm_member_by_name(sm, name);

	return !m || !m->in_view || m->foreign;
}

/* Keeps p (once: a repeat only raises its version). 1: the table changed, 0: not, or -ENOMEM. */
static int park(struct ha_lus *l, const struct ha_lu_parked *p)
{
	struct ha_lu_parked *e;

	for (size_t i = 0; i < l->nparked; i++) {
		e = &l->parked[i];
		if (e->rel_port == p->rel_port && e->asc == p->asc && !memcmp(e->naa, p->naa, 16) &&
		    !strcmp(e->node, p->node) && !strcmp(e->iport, p->iport)) {
			if (p->version <= e->version)
				return 0;
			e->version = p->version;
			return 1;
		}
	}
	if (l->nparked == HA_PARKED_MAX) {
		/* bounded: the oldest goes (every member drops the same one) */
		memmove(&l->parked[0], &l->parked[1], (l->nparked - 1) * sizeof(l->parked[0]));
		l->nparked--;
		if (!l->parked_dropped++)
			GW_WARN(COMP, "more than %u unit attentions parked for nodes that are away: "
				"the oldest are dropped", HA_PARKED_MAX);
	}
	if (l->nparked == l->capparked) {
		size_t cap = l->capparked ? l->capparked * 2 : 16;
		struct ha_lu_parked *v = realloc(l->parked, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->parked = v;
		l->capparked = cap;
	}
	l->parked[l->nparked++] = *p;
	return 1;
}

void ha_lu_parked_to_pb(const struct ha_lu_parked *e, Isergw__Ha__LuParked *out)
{
	isergw__ha__lu_parked__init(out);
	out->naa.data = (uint8_t *)(uintptr_t)e->naa;
	out->naa.len = 16;
	out->version = e->version;
	out->node = (char *)(uintptr_t)e->node;
	out->iport = (char *)(uintptr_t)e->iport;
	out->rel_port = e->rel_port;
	out->asc = e->asc;
}

int ha_lu_parked_from_pb(const Isergw__Ha__LuParked *p, struct ha_lu_parked *out)
{
	if (p->naa.len != 16 || !p->version || !p->node[0] || strlen(p->node) >= HA_NAME_MAX ||
	    !p->iport[0] || strlen(p->iport) >= sizeof(out->iport) || !p->rel_port ||
	    p->rel_port > 0xffff || p->asc > 0xffff)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	memcpy(out->naa, p->naa.data, 16);
	out->version = p->version;
	snprintf(out->node, sizeof(out->node), "%s", p->node);
	snprintf(out->iport, sizeof(out->iport), "%s", p->iport);
	out->rel_port = (uint16_t)p->rel_port;
	out->asc = (uint16_t)p->asc;
	return 0;
}

#define EV_UA_NEXUS 2u          /* isergw.ctl.LuEvent kinds and flags (isergwd's) */
#define EVF_ALL_PORTS 2u

/*
 * Parks the per-nexus events of version `version` of LU naa for the nodes
 * that are away (mine: for this node only). The number parked.
 */
static size_t park_events(struct ha_sm *sm, const uint8_t naa[16], uint64_t version,
			  const uint8_t *events, size_t evlen, bool mine)
{
	const struct ha_doc *d = sm->doc;
	Isergw__Ctl__LuStateApply *ev;
	size_t n = 0;

	if (!evlen || !d)
		return 0;
	ev = isergw__ctl__lu_state_apply__unpack(NULL, evlen, events);
	if (!ev)
		return 0;       /* isergwd refuses it too; the origin logged it */
	for (size_t k = 0; k < d->nnodes; k++) {
		const struct ha_node *nd = &d->nodes[k];

		if (mine ? strcmp(nd->name, sm->name) != 0 : !node_away(sm, nd->name))
			continue;
		for (size_t j = 0; j < ev->n_events; j++) {
			const Isergw__Ctl__LuEvent *e = ev->events[j];
			struct ha_lu_parked pk = { .version = version };

			/* only what a Sync may carry (ha_lu_parked_from_pb): one that the
			 * codec refuses would make every Sync of this member refused */
			if (e->kind != EV_UA_NEXUS || e->asc > 0xffff || !e->iport[0] ||
			    strlen(e->iport) >= sizeof(pk.iport))
				continue;
			memcpy(pk.naa, naa, 16);
			snprintf(pk.node, sizeof(pk.node), "%s", nd->name);
			snprintf(pk.iport, sizeof(pk.iport), "%s", e->iport);
			pk.asc = (uint16_t)e->asc;
			for (size_t i = 0; i < nd->nportals; i++) {
				pk.rel_port = nd->portals[i].rel_port_id;
				if (!(e->flags & EVF_ALL_PORTS) && pk.rel_port != e->rel_port)
					continue;
				if (park(&sm->lus, &pk) >= 0)
					n++;
			}
		}
	}
	isergw__ctl__lu_state_apply__free_unpacked(ev, NULL);
	return n;
}

void ha_sm_lu_park_own(struct ha_sm *sm, const uint8_t naa[16], uint64_t version,
		       const uint8_t *events, size_t evlen)
{
	size_t n = park_events(sm, naa, version, events, evlen, true);
	char hex[33];

	if (!n)
		return;
	naa_hex(naa, hex);
	GW_NOTICE(COMP, "LU %s: %zu unit attention(s) of version %" PRIu64 " kept for this node's "
		  "isergwd, which is not here", hex, n, version);
	if (sm->ops->lu_store)
		sm->ops->lu_store(sm->ctx);
}

void ha_sm_lu_load_parked(struct ha_sm *sm, const struct ha_lu_parked *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (park(&sm->lus, &p[i]) < 0)
			GW_ERR(COMP, "out of memory loading the parked unit attentions");
}

size_t ha_sm_lu_parked_mine(const struct ha_sm *sm)
{
	size_t n = 0;

	for (size_t i = 0; i < sm->lus.nparked; i++)
		n += !strcmp(sm->lus.parked[i].node, sm->name);
	return n;
}

size_t ha_sm_lu_parked_for(const struct ha_sm *sm, size_t lu, struct ha_lu_parked *out,
			   size_t max)
{
	const struct ha_lus *l = &sm->lus;
	size_t n = 0;

	for (size_t i = 0; i < l->nparked && n < max; i++) {
		const struct ha_lu_parked *p = &l->parked[i];

		if (!memcmp(p->naa, l->v[lu].naa, 16) && !strcmp(p->node, sm->name))
			out[n++] = *p;
	}
	return n;
}

void ha_sm_lu_parked_taken(struct ha_sm *sm, const uint8_t naa[16], uint64_t upto)
{
	struct ha_lus *l = &sm->lus;
	struct ha_lu *e = lu_find(l, naa);
	size_t k = 0;

	for (size_t i = 0; i < l->nparked; i++) {
		const struct ha_lu_parked *p = &l->parked[i];

		if (!memcmp(p->naa, naa, 16) && !strcmp(p->node, sm->name) && p->version <= upto)
			continue;
		l->parked[k++] = *p;
	}
	l->nparked = k;
	if (e && upto > e->handed)
		e->handed = upto;
	if (sm->ops->lu_store)
		sm->ops->lu_store(sm->ctx);
}

/* At the end of a view's barrier: parked UAs of nodes back in the view go. */
static void parked_settle(struct ha_sm *sm)
{
	struct ha_lus *l = &sm->lus;
	size_t k = 0, dropped = 0;

	for (size_t i = 0; i < l->nparked; i++) {
		const struct ha_lu_parked *p = &l->parked[i];
		bool known = false;

		for (size_t j = 0; sm->doc && j < sm->doc->nnodes && !known; j++)
			known = !strcmp(sm->doc->nodes[j].name, p->node);
		if (strcmp(p->node, sm->name) && (!known || !node_away(sm, p->node))) {
			dropped++;
			continue;       /* its node took it (or it is no node of the cluster) */
		}
		l->parked[k++] = *p;
	}
	l->nparked = k;
	if (dropped)
		GW_INFO(COMP, "%zu parked unit attention(s) went to nodes back in the group", dropped);
}

/*
 * A Sync's repeated field of n messages of size bytes: the table of pointers
 * to them, the messages zeroed in one block at table[0] (as
 * ha_sm_lu_free_sync frees them); NULL when out of memory, logged naming
 * what the Sync then carries none of.
 */
static void **sync_table(size_t n, size_t size, const char *what)
{
	void **t = calloc(n, sizeof(*t));
	char *m = calloc(n, size);

	if (!t || !m) {
		GW_ERR(COMP, "out of memory: the Sync carries no %s", what);
		free(t);
		free(m);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		t[i] = m + i * size;
	return t;
}

static void fill_parked(struct ha_sm *sm, Isergw__Ha__Sync *s)
{
	struct ha_lus *l = &sm->lus;
	Isergw__Ha__LuParked **pp;

	s->lu_parked = NULL;
	s->n_lu_parked = 0;
	if (!l->nparked)
		return;
	pp = (Isergw__Ha__LuParked **)sync_table(l->nparked, sizeof(**pp),
						 "parked unit attention");
	if (!pp)
		return;
	for (size_t i = 0; i < l->nparked; i++)
		ha_lu_parked_to_pb(&l->parked[i], pp[i]);
	s->lu_parked = pp;
	s->n_lu_parked = l->nparked;
}

/*
 * A Sync's parked UAs, added to ours (the number that changed the table).
 * The codec refused a Sync with a malformed one (ha_lu_parked_from_pb).
 */
static size_t merge_parked(struct ha_sm *sm, const Isergw__Ha__Sync *s)
{
	struct ha_lus *l = &sm->lus;
	size_t changed = 0;

	for (size_t i = 0; i < s->n_lu_parked; i++) {
		struct ha_lu_parked pk;
		const struct ha_lu *lu;
		int rc;

		if (ha_lu_parked_from_pb(s->lu_parked[i], &pk))
			continue;
		lu = lu_find(l, pk.naa);
		if (!strcmp(pk.node, sm->name) && lu && pk.version <= lu->handed)
			continue;       /* taken already (a late copy) */
		rc = park(l, &pk);
		if (rc < 0)
			GW_ERR(COMP, "out of memory keeping a parked unit attention");
		else
			changed += (size_t)rc;
	}
	return changed;
}

/* ------------------------------------------------------------ proposals */

int ha_sm_lu_propose(struct ha_sm *sm, uint64_t proposal_id, const uint8_t naa[16],
		     uint64_t base_version, const uint8_t *state, size_t len,
		     const uint8_t *events, size_t evlen, char *err, size_t errlen)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__LuPropose p = ISERGW__HA__LU_PROPOSE__INIT;
	char why[160];
	int rc;

	if (!ha_sm_can_change(sm, why, sizeof(why))) {
		snprintf(err, errlen, "%s", why);
		return sm->quorate ? -EAGAIN : -ENOLCK;
	}
	if (!sm->lus.synced) {
		snprintf(err, errlen, "the LU states of this membership are not merged yet");
		return -EAGAIN;
	}
	if (sm->proto < HA_PROTO_LU) {
		snprintf(err, errlen, "the group speaks protocol %u: an agent older than %u carries "
			 "no LU state", sm->proto, HA_PROTO_LU);
		return -EPROTONOSUPPORT;
	}
	p.origin = sm->nodeid;
	p.proposal_id = proposal_id;
	p.naa.data = (uint8_t *)(uintptr_t)naa;
	p.naa.len = 16;
	p.base_version = base_version;
	p.state.data = (uint8_t *)(uintptr_t)state;
	p.state.len = len;
	p.events.data = (uint8_t *)(uintptr_t)events;
	p.events.len = evlen;
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_LU_PROPOSE;
	m.lu_propose = &p;
	rc = ha_sm_send(sm, &m);
	if (rc) {
		snprintf(err, errlen, "cannot multicast: %s", strerror(-rc));
		return rc;
	}
	sm->lus.proposed++;
	return 0;
}

static void wait_check(struct ha_sm *sm, size_t i)
{
	struct ha_lus *l = &sm->lus;
	struct ha_lu_wait *w = &l->waits[i];

	if (w->nneed)
		return;
	lu_done(sm, w->proposal_id, 0, NULL);
	l->waits[i] = l->waits[--l->nwaits];
}

static void on_propose(struct ha_sm *sm, uint32_t from, const Isergw__Ha__LuPropose *p)
{
	struct ha_lus *l = &sm->lus;
	const struct ha_lu *cur = lu_find(l, p->naa.data);
	uint64_t have = cur ? cur->version : 0;
	bool own = p->origin == sm->nodeid;
	char hex[33];
	int rc;

	naa_hex(p->naa.data, hex);
	if (p->origin != from) {
		GW_WARN(COMP, "LU %s: proposal from node %u claims origin %u: refused", hex, from,
			p->origin);
		return;
	}
	if (sm->phase != HA_PHASE_SYNCED || !l->synced) {
		GW_INFO(COMP, "LU %s: proposal %" PRIu64 " of node %u arrived while the membership's "
			"barrier runs: refused", hex, p->proposal_id, from);
		l->refused++;
		if (own)
			lu_done(sm, p->proposal_id, -EAGAIN, "the membership changed");
		return;
	}
	if (p->base_version != have) {
		if (p->base_version > have)
			GW_WARN(COMP, "LU %s: proposal %" PRIu64 " of node %u is out of order (base "
				"version %" PRIu64 ", this node holds %" PRIu64 "%s): refused", hex,
				p->proposal_id, from, p->base_version, have,
				cur ? "" : ": an LU it does not know");
		else
			GW_DEBUG(COMP, "LU %s: proposal %" PRIu64 " of node %u on version %" PRIu64
				 ", now %" PRIu64 ": stale", hex, p->proposal_id, from,
				 p->base_version, have);
		l->stale++;
		if (own)
			lu_done(sm, p->proposal_id, -ESTALE, "another change came first");
		return;
	}
	rc = lu_set(l, p->naa.data, have + 1, p->state.data, p->state.len);
	if (rc) {
		/* every member has the same limit: they all refuse it alike */
		GW_ERR(COMP, "LU %s: cannot keep version %" PRIu64 ": %s", hex, have + 1,
		       strerror(-rc));
		if (own)
			lu_done(sm, p->proposal_id, rc, "the agents' LU table is full");
		return;
	}
	l->accepted++;
	GW_INFO(COMP, "LU %s: version %" PRIu64 " (proposal %" PRIu64 " of node %u)", hex, have + 1,
		p->proposal_id, from);
	{
		size_t np = park_events(sm, p->naa.data, have + 1, p->events.data, p->events.len,
					false);

		if (np)
			GW_NOTICE(COMP, "LU %s: %zu unit attention(s) of version %" PRIu64 " parked for "
				  "nodes that are away", hex, np, have + 1);
	}
	if (sm->ops->lu_store)
		sm->ops->lu_store(sm->ctx);
	if (own) {
		struct ha_lu_wait *w;

		if (l->nwaits == HA_LU_WAITS_MAX) {
			GW_ERR(COMP, "LU %s: %u proposals waiting: this one completes without waiting "
			       "for the others' Applied", hex, HA_LU_WAITS_MAX);
		} else {
			w = &l->waits[l->nwaits++];
			memset(w, 0, sizeof(*w));
			w->proposal_id = p->proposal_id;
			memcpy(w->naa, p->naa.data, 16);
			w->version = have + 1;
			for (size_t i = 0; i < sm->nview; i++) {
				const struct ha_member *mb = ha_sm_member(sm, sm->view[i]);

				if (mb && !mb->foreign)
					w->need[w->nneed++] = sm->view[i];
			}
		}
	}
	if (sm->ops->lu_apply)
		sm->ops->lu_apply(sm->ctx, p->naa.data, have + 1, p->state.data, p->state.len,
				  p->events.data, p->events.len, p->origin, p->proposal_id);
	else
		ha_sm_lu_gw_applied(sm, p->origin, p->proposal_id, p->naa.data, have + 1, 0);
}

void ha_sm_lu_gw_applied(struct ha_sm *sm, uint32_t origin, uint64_t proposal_id,
			 const uint8_t naa[16], uint64_t version, int status)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__LuApplied a = ISERGW__HA__LU_APPLIED__INIT;

	if (!origin)
		return;         /* adopted at a barrier: nobody waits */
	a.origin = origin;
	a.proposal_id = proposal_id;
	a.naa.data = (uint8_t *)(uintptr_t)naa;
	a.naa.len = 16;
	a.version = version;
	a.status = status;
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_LU_APPLIED;
	m.lu_applied = &a;
	if (ha_sm_send(sm, &m) && origin == sm->nodeid) {
		/* our own: cross ourselves off here */
		for (size_t i = 0; i < sm->lus.nwaits; i++) {
			struct ha_lu_wait *w = &sm->lus.waits[i];

			if (w->proposal_id != proposal_id)
				continue;
			for (size_t k = 0; k < w->nneed; k++)
				if (w->need[k] == sm->nodeid)
					w->need[k] = w->need[--w->nneed];
			wait_check(sm, i);
			break;
		}
	}
}

static void on_applied(struct ha_sm *sm, uint32_t from, const Isergw__Ha__LuApplied *a)
{
	struct ha_lus *l = &sm->lus;
	char hex[33];

	if (a->origin != sm->nodeid)
		return;
	naa_hex(a->naa.data, hex);
	for (size_t i = 0; i < l->nwaits; i++) {
		struct ha_lu_wait *w = &l->waits[i];

		if (w->proposal_id != a->proposal_id)
			continue;
		if (memcmp(w->naa, a->naa.data, 16) || w->version != a->version) {
			GW_WARN(COMP, "LU %s: Applied of node %u for proposal %" PRIu64 " names another "
				"LU or version (%" PRIu64 ", expected %" PRIu64 "): refused", hex, from,
				a->proposal_id, a->version, w->version);
			return;
		}
		if (a->status && a->status != -ENOENT && a->status != -ENOTCONN)
			GW_WARN(COMP, "LU %s: node %u's isergwd did not take version %" PRIu64 ": %s "
				"(the agent holds it)", hex, from, a->version, strerror(-a->status));
		for (size_t k = 0; k < w->nneed; k++) {
			if (w->need[k] == from) {
				w->need[k] = w->need[--w->nneed];
				break;
			}
		}
		wait_check(sm, i);
		return;
	}
	GW_WARN(COMP, "LU %s: Applied of node %u for proposal %" PRIu64 " that waits for nothing: "
		"refused", hex, from, a->proposal_id);
}

/* ------------------------------------------------------------ LBA locks */

static bool overlaps(const struct ha_lbalock *a, const struct ha_lbalock *b)
{
	return !memcmp(a->naa, b->naa, 16) && a->lba < b->lba + b->blocks &&
	       b->lba < a->lba + a->blocks;
}

/* Grants, in order, every queued lock that no earlier one overlaps. */
static void locks_grant(struct ha_sm *sm)
{
	struct ha_lus *l = &sm->lus;

	for (size_t i = 0; i < l->nlocks; i++) {
		struct ha_lbalock *k = &l->locks[i];
		bool free_range = true;

		if (k->granted)
			continue;
		for (size_t j = 0; j < i && free_range; j++)
			free_range = !overlaps(&l->locks[j], k);
		if (!free_range)
			continue;
		k->granted = true;
		l->granted_total++;
		if (k->origin == sm->nodeid)
			lu_done(sm, k->id, 0, NULL);
	}
}

static int lock_add(struct ha_lus *l, uint32_t origin, uint64_t id, const uint8_t naa[16],
		    uint64_t lba, uint32_t blocks, bool granted)
{
	struct ha_lbalock *k;

	if (l->nlocks == HA_LOCKS_MAX)
		return -ENOSPC;
	if (l->nlocks == l->caplocks) {
		size_t cap = l->caplocks ? l->caplocks * 2 : 64;
		struct ha_lbalock *v = realloc(l->locks, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->locks = v;
		l->caplocks = cap;
	}
	k = &l->locks[l->nlocks++];
	k->origin = origin;
	k->id = id;
	memcpy(k->naa, naa, 16);
	k->lba = lba;
	k->blocks = blocks;
	k->granted = granted;
	return 0;
}

static void lock_del(struct ha_lus *l, size_t i)
{
	memmove(&l->locks[i], &l->locks[i + 1], (l->nlocks - i - 1) * sizeof(l->locks[0]));
	l->nlocks--;
}

int ha_sm_lu_lock(struct ha_sm *sm, uint64_t lock_id, const uint8_t naa[16], uint64_t lba,
		  uint32_t blocks, bool release, char *err, size_t errlen)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__LuLock k = ISERGW__HA__LU_LOCK__INIT;
	Isergw__Ha__LuUnlock u = ISERGW__HA__LU_UNLOCK__INIT;
	char why[160];
	int rc;

	if (sm->proto < HA_PROTO_LU) {
		snprintf(err, errlen, "the group speaks protocol %u: no cluster-wide locks",
			 sm->proto);
		return -EPROTONOSUPPORT;
	}
	if (release) {
		u.origin = sm->nodeid;
		u.lock_id = lock_id;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_LU_UNLOCK;
		m.lu_unlock = &u;
	} else {
		if (!ha_sm_can_change(sm, why, sizeof(why))) {
			snprintf(err, errlen, "%s", why);
			return sm->quorate ? -EAGAIN : -ENOLCK;
		}
		if (!sm->lus.synced) {
			snprintf(err, errlen, "the locks of this membership are not merged yet");
			return -EAGAIN;
		}
		if (!blocks) {
			snprintf(err, errlen, "a lock of 0 blocks");
			return -EINVAL;
		}
		k.origin = sm->nodeid;
		k.lock_id = lock_id;
		k.naa.data = (uint8_t *)(uintptr_t)naa;
		k.naa.len = 16;
		k.lba = lba;
		k.blocks = blocks;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_LU_LOCK;
		m.lu_lock = &k;
	}
	rc = ha_sm_send(sm, &m);
	if (rc)
		snprintf(err, errlen, "cannot multicast: %s", strerror(-rc));
	return rc;
}

static void on_lock(struct ha_sm *sm, uint32_t from, const Isergw__Ha__LuLock *k)
{
	struct ha_lus *l = &sm->lus;
	bool own = k->origin == sm->nodeid;
	char hex[33];
	int rc;

	naa_hex(k->naa.data, hex);
	if (k->origin != from) {
		GW_WARN(COMP, "LU %s: lock from node %u claims origin %u: refused", hex, from,
			k->origin);
		return;
	}
	if (sm->phase != HA_PHASE_SYNCED || !l->synced) {
		GW_INFO(COMP, "LU %s: lock %" PRIu64 " of node %u arrived while the membership's "
			"barrier runs: refused", hex, k->lock_id, from);
		if (own)
			lu_done(sm, k->lock_id, -EAGAIN, "the membership changed");
		return;
	}
	for (size_t i = 0; i < l->nlocks; i++) {
		if (l->locks[i].origin == from && l->locks[i].id == k->lock_id) {
			GW_WARN(COMP, "LU %s: lock %" PRIu64 " of node %u asked twice: refused", hex,
				k->lock_id, from);
			return;
		}
	}
	rc = lock_add(l, from, k->lock_id, k->naa.data, k->lba, k->blocks, false);
	if (rc) {
		GW_ERR(COMP, "LU %s: lock %" PRIu64 " of node %u: %s: refused", hex, k->lock_id, from,
		       strerror(-rc));
		if (own)
			lu_done(sm, k->lock_id, rc, "too many locks");
		return;
	}
	locks_grant(sm);
}

static void on_unlock(struct ha_sm *sm, uint32_t from, const Isergw__Ha__LuUnlock *u)
{
	struct ha_lus *l = &sm->lus;

	if (u->origin != from) {
		GW_WARN(COMP, "unlock from node %u claims origin %u: refused", from, u->origin);
		return;
	}
	for (size_t i = 0; i < l->nlocks; i++) {
		if (l->locks[i].origin == from && l->locks[i].id == u->lock_id) {
			lock_del(l, i);
			locks_grant(sm);
			return;
		}
	}
	/* a lock refused, or granted in a Sync still to come (joiner): remembered */
	if (!l->synced && l->nreleased < sizeof(l->released) / sizeof(l->released[0])) {
		l->released[l->nreleased].origin = from;
		l->released[l->nreleased].id = u->lock_id;
		l->nreleased++;
	}
	GW_DEBUG(COMP, "unlock of lock %" PRIu64 " of node %u that is not held", u->lock_id, from);
}

void ha_sm_lu_deliver(struct ha_sm *sm, uint32_t from, const HaMsg *m)
{
	if (m->body_case == ISERGW__HA__GROUP_MSG__BODY_LU_PROPOSE)
		on_propose(sm, from, m->lu_propose);
	else if (m->body_case == ISERGW__HA__GROUP_MSG__BODY_LU_APPLIED)
		on_applied(sm, from, m->lu_applied);
	else if (m->body_case == ISERGW__HA__GROUP_MSG__BODY_LU_LOCK)
		on_lock(sm, from, m->lu_lock);
	else if (m->body_case == ISERGW__HA__GROUP_MSG__BODY_LU_UNLOCK)
		on_unlock(sm, from, m->lu_unlock);
}

/* ------------------------------------------------------------ membership */

void ha_sm_lu_view(struct ha_sm *sm)
{
	struct ha_lus *l = &sm->lus;

	l->synced = false;
	l->nreleased = 0;
	/* locks: the granted ones of members still here stay; queued ones are refused */
	for (size_t i = l->nlocks; i-- > 0;) {
		struct ha_lbalock *k = &l->locks[i];
		const struct ha_member *mb = ha_sm_member(sm, k->origin);
		bool here = mb && mb->in_view;

		if (here && k->granted)
			continue;
		if (!k->granted && k->origin == sm->nodeid)
			lu_done(sm, k->id, -EAGAIN, "the membership changed");
		lock_del(l, i);
	}
	/* members that left answer nothing any more */
	for (size_t i = l->nwaits; i-- > 0;) {
		struct ha_lu_wait *w = &l->waits[i];

		for (size_t k = w->nneed; k-- > 0;) {
			const struct ha_member *mb = ha_sm_member(sm, w->need[k]);

			if (!mb || !mb->in_view)
				w->need[k] = w->need[--w->nneed];
		}
		wait_check(sm, i);
	}
}

static void fill_locks(struct ha_sm *sm, Isergw__Ha__Sync *s)
{
	struct ha_lus *l = &sm->lus;
	Isergw__Ha__LuLock **kp;
	size_t n = 0;

	s->lu_locks = NULL;
	s->n_lu_locks = 0;
	for (size_t i = 0; i < l->nlocks; i++)
		n += l->locks[i].origin == sm->nodeid && l->locks[i].granted;
	if (!n)
		return;
	kp = (Isergw__Ha__LuLock **)sync_table(n, sizeof(**kp), "lock");
	if (!kp)
		return;
	n = 0;
	for (size_t i = 0; i < l->nlocks; i++) {
		const struct ha_lbalock *e = &l->locks[i];
		Isergw__Ha__LuLock *k;

		if (e->origin != sm->nodeid || !e->granted)
			continue;
		k = kp[n++];
		isergw__ha__lu_lock__init(k);
		k->origin = e->origin;
		k->lock_id = e->id;
		k->naa.data = (uint8_t *)(uintptr_t)e->naa;
		k->naa.len = 16;
		k->lba = e->lba;
		k->blocks = e->blocks;
	}
	s->lu_locks = kp;
	s->n_lu_locks = n;
}

void ha_sm_lu_fill_sync(struct ha_sm *sm, Isergw__Ha__Sync *s)
{
	struct ha_lus *l = &sm->lus;
	Isergw__Ha__LuBlob **bp;

	fill_locks(sm, s);
	fill_parked(sm, s);
	s->lu_states = NULL;
	s->n_lu_states = 0;
	if (!l->n)
		return;
	bp = (Isergw__Ha__LuBlob **)sync_table(l->n, sizeof(**bp), "LU state");
	if (!bp)
		return;
	for (size_t i = 0; i < l->n; i++) {
		Isergw__Ha__LuBlob *b = bp[i];

		isergw__ha__lu_blob__init(b);
		b->naa.data = l->v[i].naa;
		b->naa.len = 16;
		b->version = l->v[i].version;
		b->state.data = l->v[i].state;
		b->state.len = l->v[i].len;
	}
	s->lu_states = bp;
	s->n_lu_states = l->n;
}

void ha_sm_lu_free_sync(Isergw__Ha__Sync *s)
{
	if (s->n_lu_locks)
		free(s->lu_locks[0]);
	free(s->lu_locks);
	s->lu_locks = NULL;
	s->n_lu_locks = 0;
	if (s->n_lu_parked)
		free(s->lu_parked[0]);
	free(s->lu_parked);
	s->lu_parked = NULL;
	s->n_lu_parked = 0;
	if (s->n_lu_states)
		free(s->lu_states[0]);
	free(s->lu_states);
	s->lu_states = NULL;
	s->n_lu_states = 0;
}

static bool blob_wins(const Isergw__Ha__LuBlob *b, const struct ha_lu *cur)
{
	size_t n;
	int c;

	if (!cur || b->version > cur->version)
		return true;
	if (b->version < cur->version)
		return false;
	n = b->state.len < cur->len ? b->state.len : cur->len;
	c = memcmp(b->state.data, cur->state, n);
	return c > 0 || (c == 0 && b->state.len > cur->len);
}

void ha_sm_lu_sync(struct ha_sm *sm, const Isergw__Ha__Sync *s, bool last)
{
	struct ha_lus *l = &sm->lus;
	size_t adopted = 0, parked;

	for (size_t i = 0; i < s->n_lu_states; i++) {
		const Isergw__Ha__LuBlob *b = s->lu_states[i];
		const struct ha_lu *cur = lu_find(l, b->naa.data);

		if (!blob_wins(b, cur))
			continue;
		if (lu_set(l, b->naa.data, b->version, b->state.data, b->state.len)) {
			GW_ERR(COMP, "out of memory adopting an LU state");
			continue;
		}
		adopted++;
		if (sm->ops->lu_apply)
			sm->ops->lu_apply(sm->ctx, b->naa.data, b->version, b->state.data,
					  b->state.len, NULL, 0, 0, 0);
	}
	/* the sender's granted locks (a joiner learns them here; the others hold them) */
	for (size_t i = 0; !l->synced && i < s->n_lu_locks; i++) {
		const Isergw__Ha__LuLock *k = s->lu_locks[i];
		bool have = false;

		for (size_t j = 0; j < l->nlocks && !have; j++)
			have = l->locks[j].origin == k->origin && l->locks[j].id == k->lock_id;
		for (size_t j = 0; j < l->nreleased && !have; j++)
			have = l->released[j].origin == k->origin && l->released[j].id == k->lock_id;
		if (!have && lock_add(l, k->origin, k->lock_id, k->naa.data, k->lba, k->blocks, true))
			GW_ERR(COMP, "cannot keep a lock of node %u from its Sync", k->origin);
	}
	parked = merge_parked(sm, s);
	if (adopted)
		GW_NOTICE(COMP, "sync: %zu LU state(s) adopted from node %s", adopted, s->node_name);
	if ((adopted || parked) && sm->ops->lu_store)
		sm->ops->lu_store(sm->ctx);
	if (last && !l->synced) {
		size_t mine;

		l->synced = true;
		parked_settle(sm);
		mine = ha_sm_lu_parked_mine(sm);
		GW_INFO(COMP, "LU states of this membership merged: %zu LU(s), %zu unit attention(s) "
			"parked for nodes away, %zu for this node", l->n, l->nparked - mine, mine);
		if (sm->ops->lu_store)
			sm->ops->lu_store(sm->ctx);
		if (mine && sm->ops->lu_handover)
			sm->ops->lu_handover(sm->ctx);
	}
}

void ha_sm_lu_gw_lost(struct ha_sm *sm)
{
	/* the isergwd that asked is gone: a new one numbers its proposals from 1 again */
	if (sm->lus.nwaits)
		GW_NOTICE(COMP, "isergwd gone: %zu proposal(s) of it no longer answered",
			  sm->lus.nwaits);
	sm->lus.nwaits = 0;
}
