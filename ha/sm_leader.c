/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The state machine's leases, leader and fencing (docs/ha.md): the lease
 * this node's isergwd gets on each of its heartbeats that comes back, the
 * leader's reconciliation (placement of the device groups after every
 * barrier, drain, data plane change and move, planned moves in two steps,
 * lost owners' groups promoted once their lease has run out), a node the
 * fencer confirmed fenced, and the ALUA map a document gives each device
 * group.
 */
#include <errno.h>
#include <inttypes.h>
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

			if (who[i] < 0 || ha_sm_node_in_view(sm, who[i]))
				continue;
			if (ha_sm_lease_over(sm, who[i], now, &end))
				return now; /* the move may be under way already */
			end = end > HA_LEASE_MARGIN_MS ? end - HA_LEASE_MARGIN_MS : 0;
			if (!cap || end < cap)
				cap = end;
		}
	}
	return cap;
}

void ha_sm_lease_check(struct ha_sm *sm, uint64_t seq, uint64_t now)
{
	uint64_t sent = sm->hb_sent_ms[seq % HA_HB_RING], expires, cap;

	if (seq + HA_HB_RING <= sm->hb_seq || !sent)
		return; /* too old to know when it left */
	if (sm->phase != HA_PHASE_SYNCED || !sm->quorate || sm->q_ring_seq != sm->ring_seq)
		return;
	if (!sm->gw_applied_any || sm->gw_applied_gen != sm->doc->generation)
		return; /* isergwd does not hold the current states yet */
	if (!ha_sm_majority_agrees(sm))
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

bool ha_sm_lease_over(const struct ha_sm *sm, int n, uint64_t now, uint64_t *until)
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

		if (!live[n] || ha_sm_node_in_view(sm, (int)n))
			continue;
		m = ha_sm_member_by_name(sm, sm->doc->nodes[n].name);
		if (!m || !ha_sm_member_holds(m, gen))
			return false;
	}
	return true;
}

void ha_sm_leader_reconcile(struct ha_sm *sm, uint64_t now)
{
	const struct ha_doc *d = sm->doc;
	size_t nd = d->ndgs, nn = d->nnodes;
	bool *live = NULL, *base = NULL, *elig = NULL, changed = false, all_applied, dp_changed, full;
	size_t nchanged = 0;
	int *owner = NULL, *moving = NULL;
	Isergw__Ha__DgOwner *own = NULL, **ownp = NULL;
	char **livep = NULL;
	uint64_t hold = 0;

	if (!ha_sm_is_leader(sm) || !sm->quorate || sm->q_ring_seq != sm->ring_seq || !nn ||
	    !ha_sm_majority_agrees(sm))
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
		bool in = ha_sm_node_in_view(sm, (int)n);

		/*
		 * A live node whose agent left the group (restarting, or its
		 * node lost) may still be serving until its lease is over: it
		 * stays live (nothing changes for hosts) until then.
		 */
		live[n] = in || (d->live[n] && !ha_sm_lease_over(sm, (int)n, now, &hold));
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
			    !ha_sm_lease_over(sm, d->owner[g], now, &sm->hold_until_ms))
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
		} else if (cur >= 0 && ha_sm_node_in_view(sm, cur)) {
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
			if (tgt < 0 || ha_sm_node_holds(sm, tgt, d->generation)) {
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
		if (owner[g] != d->owner[g] || moving[g] != d->moving_from[g]) {
			changed = true;
			nchanged++;
		}
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
			/* the decision's time: where a failover's gateway-side part starts */
			GW_INFO(COMP, "placement on generation %" PRIu64 " sent: %zu device group(s) "
				"change, %zu node(s) live", d->generation, nchanged, p.n_live);
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

void ha_sm_on_fenced(struct ha_sm *sm, uint32_t from, const char *node)
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
