/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The state machine's sync barrier (docs/ha.md, "The state machine"): after
 * every membership change each member multicasts its Sync (generation and
 * digest); once every member of the view has, the best document wins (the
 * highest generation, then the highest digest), its holder sends it (State)
 * to the members that differ, and the group is synchronised.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "common/log.h"

#define COMP "ha"

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
		ha_sm_lease_check(sm, sm->hb_back_seq, now);
}

void ha_sm_sync_check(struct ha_sm *sm, uint64_t now)
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

void ha_sm_on_sync(struct ha_sm *sm, struct ha_member *from, const Isergw__Ha__Sync *s,
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
		ha_sm_copy_name(from->name, s->node_name);
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
	ha_sm_sync_check(sm, now);
}

bool ha_sm_announced(struct ha_sm *sm, uint64_t gen)
{
	for (size_t i = 0; i < sm->nview; i++) {
		const struct ha_member *m = ha_sm_member(sm, sm->view[i]);

		if (m && m->sync_rcvd && m->sync_gen == gen)
			return true;
	}
	return false;
}

void ha_sm_on_state(struct ha_sm *sm, uint32_t nodeid, const Isergw__Ha__State *st,
		    uint64_t now)
{
	const struct ha_member *w;
	struct ha_doc *d;
	char err[512];
	int rc;

	if (!ha_sm_announced(sm, st->generation)) {
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
	ha_sm_doc_set(sm, d, now);
	sync_done(sm, now);
}
