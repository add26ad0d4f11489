/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data plane's health in the state machine (docs/ha.md, "Data plane
 * health"). Each agent judges its own isergwd with its own clock: not
 * serving (no connection, or no generation taken) for the grace makes the
 * node unhealthy, serving again for the grace healthy again; a device group
 * with a LUN that serves no I/O here is failed at once and served again once
 * all its LUNs have served for the grace. It multicasts the verdicts
 * (DataPlane) when they change and in its Sync; every member keeps what each
 * node said, and the leader places device groups by it (ha_sm_dp_tier), so
 * every member decides alike from the same delivered messages.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "common/log.h"

#define COMP "ha"

const char *ha_dp_state_name(const struct ha_dp *dp)
{
	if (!dp->known)
		return "unknown";
	if (dp->healthy)
		return dp->serving ? "healthy" : "down";
	return dp->serving ? "recovering" : "failed";
}

bool ha_dp_dg_failed(const struct ha_dp *dp, const char *dg)
{
	for (size_t i = 0; dp->known && i < dp->nfailed; i++)
		if (!strcmp(dp->failed[i], dg))
			return true;
	return false;
}

static void dp_clear(struct ha_dp *dp)
{
	free(dp->failed);
	free(dp->luns);
	memset(dp, 0, sizeof(*dp));
}

uint64_t ha_sm_dp_grace(const struct ha_sm *sm)
{
	return sm->doc && sm->doc->dataplane_grace_ms ? sm->doc->dataplane_grace_ms : sm->lease_ms;
}

/* ------------------------------------------------------------ this node */

static void fault_from_pb(const Isergw__Ha__LunFault *p, struct ha_lun_fault *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->target, sizeof(f->target), "%s", p->target);
	f->lun = p->lun;
	snprintf(f->dg, sizeof(f->dg), "%s", p->device_group);
	snprintf(f->state, sizeof(f->state), "%s", p->state);
	snprintf(f->reason, sizeof(f->reason), "%s", p->reason);
}

void ha_lun_fault_to_pb(const struct ha_lun_fault *f, Isergw__Ha__LunFault *p)
{
	isergw__ha__lun_fault__init(p);
	p->target = (char *)(uintptr_t)f->target;
	p->lun = f->lun;
	p->device_group = (char *)(uintptr_t)f->dg;
	p->state = (char *)(uintptr_t)f->state;
	p->reason = (char *)(uintptr_t)f->reason;
}

static struct ha_dp_dg *dg_find(struct ha_sm *sm, const char *name)
{
	for (size_t i = 0; i < sm->ndp_dgs; i++)
		if (!strcmp(sm->dp_dgs[i].name, name))
			return &sm->dp_dgs[i];
	return NULL;
}

/* sm->dp.failed from sm->dp_dgs. */
static void dp_failed_rebuild(struct ha_sm *sm)
{
	char (*f)[HA_NAME_MAX] = calloc(sm->ndp_dgs + 1, sizeof(*f));

	if (!f)
		return;
	for (size_t i = 0; i < sm->ndp_dgs; i++)
		memcpy(f[i], sm->dp_dgs[i].name, HA_NAME_MAX);
	free(sm->dp.failed);
	sm->dp.failed = f;
	sm->dp.nfailed = sm->ndp_dgs;
	sm->dp_dirty = true;
}

static bool faults_name(const struct ha_lun_fault *faults, size_t n, const char *dg)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(faults[i].dg, dg))
			return true;
	return false;
}

void ha_sm_gw_luns(struct ha_sm *sm, uint32_t online, uint32_t failed,
		   const struct ha_lun_fault *faults, size_t n, uint64_t now)
{
	size_t keep = n < HA_DP_LUNS_MAX ? n : HA_DP_LUNS_MAX;
	bool dgs_changed = false;

	for (size_t i = 0; i < n; i++) {
		struct ha_dp_dg *g, *ng;

		if (!faults[i].dg[0])
			continue;
		g = dg_find(sm, faults[i].dg);
		if (g) {
			if (g->ok_since)
				GW_WARN(COMP, "device group %s: a LUN serves no I/O here again "
					"(target %s LUN %u: %s)", g->name, faults[i].target,
					faults[i].lun, faults[i].reason);
			dgs_changed |= g->ok_since != 0;
			g->ok_since = 0;
			continue;
		}
		ng = realloc(sm->dp_dgs, (sm->ndp_dgs + 1) * sizeof(*ng));
		if (!ng)
			continue;
		sm->dp_dgs = ng;
		g = &sm->dp_dgs[sm->ndp_dgs++];
		memset(g, 0, sizeof(*g));
		snprintf(g->name, sizeof(g->name), "%s", faults[i].dg);
		GW_WARN(COMP, "device group %s: a LUN serves no I/O here (target %s LUN %u: %s): "
			"the group goes to a node where its LUNs serve, if there is one", g->name,
			faults[i].target, faults[i].lun, faults[i].reason);
		dgs_changed = true;
	}
	for (size_t i = 0; i < sm->ndp_dgs; i++) {
		struct ha_dp_dg *g = &sm->dp_dgs[i];

		if (!g->ok_since && !faults_name(faults, n, g->name) && failed <= n) {
			g->ok_since = now ? now : 1;
			GW_NOTICE(COMP, "device group %s: every LUN serves here again (this node may "
				  "own it again in %" PRIu64 " ms)", g->name, ha_sm_dp_grace(sm));
		}
	}
	if (dgs_changed)
		dp_failed_rebuild(sm);
	if (online != sm->dp.luns_online || failed != sm->dp.luns_failed || keep != sm->dp.nluns ||
	    (keep && memcmp(faults, sm->dp.luns, keep * sizeof(*faults)))) {
		struct ha_lun_fault *l = calloc(keep + 1, sizeof(*l));

		if (!l)
			return;
		if (keep)
			memcpy(l, faults, keep * sizeof(*l));
		free(sm->dp.luns);
		sm->dp.luns = l;
		sm->dp.nluns = keep;
		sm->dp.luns_online = online;
		sm->dp.luns_failed = failed;
		sm->dp_dirty = true;
	}
}

static void send_dataplane(struct ha_sm *sm)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__DataPlane dp;

	if (ha_sm_dp_fill(sm, &dp))
		return;
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_DATAPLANE;
	m.dataplane = &dp;
	if (!ha_sm_send(sm, &m))
		sm->dp_dirty = false;
	ha_sm_dp_free_pb(&dp);
}

/*
 * isergwd serves: it holds a generation. Before the cluster has a
 * configuration, or while this node is not in it, there is nothing to hold
 * (the agent pushes nothing) and nothing to judge.
 */
static bool dp_serving(const struct ha_sm *sm)
{
	if (!sm->doc->generation || ha_doc_find_node(sm->doc, sm->name) < 0)
		return true;
	return !sm->gw_lost && sm->gw_applied_any;
}

void ha_sm_dp_tick(struct ha_sm *sm, uint64_t now)
{
	bool serving = dp_serving(sm);
	uint64_t grace = ha_sm_dp_grace(sm);
	size_t before = sm->ndp_dgs;

	if (serving != sm->dp.serving) {
		sm->dp.serving = serving;
		sm->dp_since_ms = now;
		sm->dp_dirty = true;
	}
	if (sm->dp.healthy && !serving && now - sm->dp_since_ms >= grace) {
		sm->dp.healthy = false;
		sm->dp_dirty = true;
		GW_WARN(COMP, "isergwd has not served for %" PRIu64 " ms: this node gives up the "
			"device groups another node can serve", now - sm->dp_since_ms);
	} else if (!sm->dp.healthy && serving && now - sm->dp_since_ms >= grace) {
		sm->dp.healthy = true;
		sm->dp_dirty = true;
		GW_NOTICE(COMP, "isergwd has served again for %" PRIu64 " ms: this node may own "
			  "device groups again", now - sm->dp_since_ms);
	}
	if (!serving) {
		/* its LUNs are unknown while it does not serve: the node's verdict covers them */
		for (size_t i = 0; i < sm->ndp_dgs; i++)
			sm->dp_dgs[i].ok_since = 0;
	}
	for (size_t i = 0; i < sm->ndp_dgs;) {
		if (sm->dp_dgs[i].ok_since && now - sm->dp_dgs[i].ok_since >= grace)
			sm->dp_dgs[i] = sm->dp_dgs[--sm->ndp_dgs];
		else
			i++;
	}
	if (sm->ndp_dgs != before)
		dp_failed_rebuild(sm);
	if (sm->dp_dirty && sm->phase == HA_PHASE_SYNCED && sm->proto >= HA_PROTO_DP)
		send_dataplane(sm);
}

void ha_sm_dp_init(struct ha_sm *sm, uint64_t now)
{
	/* healthy until isergwd has not served for the grace since the agent started */
	sm->dp.known = true;
	sm->dp.healthy = true;
	sm->dp_since_ms = now;
}

int ha_sm_dp_fill(const struct ha_sm *sm, Isergw__Ha__DataPlane *out)
{
	isergw__ha__data_plane__init(out);
	out->serving = sm->dp.serving;
	out->healthy = sm->dp.healthy;
	out->luns_online = sm->dp.luns_online;
	out->luns_failed = sm->dp.luns_failed;
	out->failed_groups = calloc(sm->dp.nfailed + 1, sizeof(char *));
	out->luns = calloc(sm->dp.nluns + 1, sizeof(*out->luns));
	if (!out->failed_groups || !out->luns) {
		ha_sm_dp_free_pb(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < sm->dp.nfailed; i++)
		out->failed_groups[out->n_failed_groups++] = (char *)(uintptr_t)sm->dp.failed[i];
	for (size_t i = 0; i < sm->dp.nluns; i++) {
		const struct ha_lun_fault *f = &sm->dp.luns[i];
		Isergw__Ha__LunFault *p = malloc(sizeof(*p));

		if (!p) {
			ha_sm_dp_free_pb(out);
			return -ENOMEM;
		}
		ha_lun_fault_to_pb(f, p);
		out->luns[out->n_luns++] = p;
	}
	return 0;
}

void ha_sm_dp_free_pb(Isergw__Ha__DataPlane *dp)
{
	for (size_t i = 0; dp->luns && i < dp->n_luns; i++)
		free(dp->luns[i]);
	free(dp->luns);
	free(dp->failed_groups);
	dp->luns = NULL;
	dp->failed_groups = NULL;
	dp->n_luns = dp->n_failed_groups = 0;
}

/* ------------------------------------------------------------ every node, as delivered */

static bool same_groups(const struct ha_dp *a, const struct ha_dp *b)
{
	if (a->nfailed != b->nfailed)
		return false;
	for (size_t i = 0; i < a->nfailed; i++)
		if (!ha_dp_dg_failed(b, a->failed[i]))
			return false;
	return true;
}

void ha_sm_dp_deliver(struct ha_sm *sm, struct ha_member *from, const Isergw__Ha__DataPlane *p)
{
	struct ha_dp dp = { .known = p != NULL };

	if (p) {
		dp.serving = p->serving;
		dp.healthy = p->healthy;
		dp.luns_online = p->luns_online;
		dp.luns_failed = p->luns_failed;
		dp.failed = calloc(p->n_failed_groups + 1, sizeof(*dp.failed));
		dp.luns = calloc(p->n_luns + 1, sizeof(*dp.luns));
		if (!dp.failed || !dp.luns) {
			dp_clear(&dp);
			return;
		}
		for (size_t i = 0; i < p->n_failed_groups; i++)
			snprintf(dp.failed[dp.nfailed++], HA_NAME_MAX, "%s", p->failed_groups[i]);
		for (size_t i = 0; i < p->n_luns; i++)
			fault_from_pb(p->luns[i], &dp.luns[dp.nluns++]);
	}
	if (dp.known && from->dp.known && dp.healthy != from->dp.healthy)
		GW_NOTICE(COMP, "node %u (%s): data plane %s", from->nodeid, from->name,
			  dp.healthy ? "healthy again" : "failed: it keeps only the device groups "
			  "no other node can serve");
	if (dp.known && from->dp.known && !same_groups(&dp, &from->dp))
		GW_INFO(COMP, "node %u (%s): %zu device group(s) with a LUN that serves no I/O there",
			from->nodeid, from->name, dp.nfailed);
	/* the leader looks at who may own what again at its next reconcile (sm_leader.c) */
	dp_clear(&from->dp);
	from->dp = dp;
}

/*
 * How well node n of the document can serve device group g: 0 its LUNs of
 * g serve there, 1 its data plane serves but a LUN of g does not, 2 its data
 * plane failed, 3 not at all (agent not in the group, or drained). A node
 * that has not reported (an older agent) counts as 0.
 */
int ha_sm_dp_tier(const struct ha_sm *sm, int n, int g, bool base)
{
	const struct ha_member *m;

	if (!base)
		return 3;
	m = ha_sm_member_by_name(sm, sm->doc->nodes[n].name);
	if (!m || !m->dp.known)
		return 0;
	if (!m->dp.healthy)
		return 2;
	return ha_dp_dg_failed(&m->dp, sm->doc->dgs[g].name) ? 1 : 0;
}

void ha_sm_dp_fini(struct ha_sm *sm)
{
	dp_clear(&sm->dp);
	free(sm->dp_dgs);
	sm->dp_dgs = NULL;
	sm->ndp_dgs = 0;
	for (size_t i = 0; i < HA_MAX_MEMBERS; i++)
		dp_clear(&sm->m[i].dp);
}
