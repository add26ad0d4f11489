/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The state machine's local API (sm.h, ha_sm_submit_*): a change checked
 * against the current document, multicast as a Change and remembered as a
 * request until its generation is applied everywhere (or refused); moves
 * and a host's SET TARGET PORT GROUPS go to the leader.
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
	ha_sm_copy_name(r->dg, dg);
	ha_sm_copy_name(r->node, node);
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
		elig[k] = (int)k != n && ha_sm_node_in_view(sm, (int)k) && !d->drained[k];
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
		ha_sm_req_find(sm, (uint64_t)id, NULL)->orphans = true;
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
	if (!ha_sm_node_in_view(sm, n) || !sm->doc->live[n])
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
	    !ha_sm_node_in_view(sm, n) || !sm->doc->live[n])
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
