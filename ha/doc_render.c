/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A node's isergwd configuration rendered from the cluster document (doc.h,
 * docs/ha.md): the gateway keys, the lease, the fencing keys, the node's and
 * the floating portals, every node's port group, the device groups with
 * their owners, the targets; and how a generation goes to isergwd
 * (ha_doc_push_kind).
 */
#include "doc_priv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "common/log.h"

/* The text of a negative errno (thread-safe). */
static const char *errstr(int rc, char *buf, size_t len)
{
	return strerror_r(-rc, buf, len);
}

/* ----------------------------------------------------------- rendering */

unsigned int ha_doc_owner_tpg(const struct ha_doc *d, size_t g)
{
	int o = d->owner[g];

	if (o < 0 || (size_t)o >= d->nnodes || d->nodes[o].nportals == 0)
		return 0;
	return d->nodes[o].tpg_id;
}

/*
 * Fencing at the backend (docs/ha.md, "Fencing at the backend"): unless the
 * gateway section says "backend_fencing": "none", a live node gets its own
 * reservation key (from its tpg_id) and the keys of the nodes that are not
 * live, which its isergwd preempts on every iscsi:// LUN before it answers.
 * A node that is not live gets neither: it registers nothing and fences
 * nobody (its isergwd would have no registered key to preempt with).
 */
bool ha_doc_backend_fencing(const struct ha_doc *d)
{
	return !(d->gateway_members && strstr(d->gateway_members, "\"backend_fencing\":\"none\""));
}

size_t ha_doc_fence_keys(const struct ha_doc *d, size_t k, uint64_t *out)
{
	size_t nk = 0;

	if (!ha_doc_backend_fencing(d) || !d->live || k >= d->nnodes || !d->live[k])
		return 0;
	for (size_t n = 0; n < d->nnodes; n++)
		if (n != k && !d->live[n])
			out[nk++] = gw_backend_pr_key(d->nodes[n].tpg_id);
	return nk;
}

static void put_fence_keys(struct ha_sbuf *b, const struct ha_doc *d, size_t k)
{
	uint64_t keys[HA_NODES_MAX];
	size_t nk = ha_doc_fence_keys(d, k, keys);

	if (!ha_doc_backend_fencing(d) || !d->live || !d->live[k])
		return;
	ha_sb_printf(b, "\"backend_pr_key\":\"0x%016llx\",\"backend_pr_fence\":[",
		     (unsigned long long)gw_backend_pr_key(d->nodes[k].tpg_id));
	for (size_t i = 0; i < nk; i++)
		ha_sb_printf(b, "%s\"0x%016llx\"", i ? "," : "", (unsigned long long)keys[i]);
	ha_sb_puts(b, "],");
}

static void put_render(struct ha_sbuf *b, const struct ha_doc *d, size_t k,
		       const struct ha_render_opts *o)
{
	const struct ha_node *self = &d->nodes[k];
	bool first = true;

	ha_sb_puts(b, "{");
	if (d->gateway_members && d->gateway_members[0]) {
		ha_sb_puts(b, d->gateway_members);
		ha_sb_puts(b, ",");
	}
	/* the canonical text quotes each key once: an operator's own setting wins */
	if (o && o->lease_unavailable_ms &&
	    !(d->gateway_members && strstr(d->gateway_members, "\"alua_lease_unavailable_ms\"")))
		ha_sb_printf(b, "\"alua_lease_unavailable_ms\":%u,", o->lease_unavailable_ms);
	if (HA_RENDER_LEASE)
		ha_sb_puts(b, "\"alua_lease\":true,");
	/* the LU state is the agents' to carry, unless the operator says otherwise */
	if (!(d->gateway_members && strstr(d->gateway_members, "\"lu_state\"")))
		ha_sb_puts(b, "\"lu_state\":\"cluster\",");
	put_fence_keys(b, d, k);
	ha_sb_puts(b, "\"alua_policy\":\"external\",\"portals\":[");
	for (size_t i = 0; i < self->nportals; i++) {
		const struct ha_portal *p = &self->portals[i];

		ha_sb_puts(b, i ? ",{\"url\":" : "{\"url\":");
		ha_sb_put_jstr(b, p->url, strlen(p->url));
		ha_sb_printf(b, ",\"rel_port_id\":%u,\"tpgt\":%u,\"tpg_id\":%u}", p->rel_port_id,
			     p->rel_port_id, self->tpg_id);
	}
	/* the floating portals, on every node: served where the address is */
	for (size_t i = 0; i < d->nfloating; i++) {
		const struct ha_floating *f = &d->floating[i];

		ha_sb_puts(b, i || self->nportals ? ",{\"url\":" : "{\"url\":");
		ha_sb_put_jstr(b, f->url, strlen(f->url));
		ha_sb_printf(b, ",\"rel_port_id\":%u,\"tpgt\":%u,\"tpg_id\":%u}", f->rel_port_id,
			     f->rel_port_id, f->tpg_id);
	}
	ha_sb_puts(b, "],\"port_groups\":[");
	for (size_t n = 0; n < d->nnodes; n++) {
		const struct ha_node *node = &d->nodes[n];

		if (!node->nportals)
			continue;
		ha_sb_printf(b, "%s{\"tpg_id\":%u,\"rel_port_ids\":[", first ? "" : ",", node->tpg_id);
		first = false;
		for (size_t i = 0; i < node->nportals; i++)
			ha_sb_printf(b, "%s%u", i ? "," : "", node->portals[i].rel_port_id);
		ha_sb_puts(b, "]}");
	}
	{
		uint16_t tpgs[HA_FLOATING_MAX];
		size_t nt = ha_doc_floating_tpgs(d, tpgs);

		for (size_t t = 0; t < nt; t++) {
			bool any = false;

			ha_sb_printf(b, "%s{\"tpg_id\":%u,\"rel_port_ids\":[", first ? "" : ",", tpgs[t]);
			first = false;
			for (size_t i = 0; i < d->nfloating; i++) {
				if (d->floating[i].tpg_id != tpgs[t])
					continue;
				ha_sb_printf(b, "%s%u", any ? "," : "", d->floating[i].rel_port_id);
				any = true;
			}
			ha_sb_puts(b, "]}");
		}
	}
	ha_sb_puts(b, "],\"device_groups\":[");
	for (size_t g = 0; g < d->ndgs; g++) {
		const struct ha_dg *dg = &d->dgs[g];
		const char *state = ha_non_owner_state_name(dg->non_owner_state);

		ha_sb_puts(b, g ? ",{\"name\":" : "{\"name\":");
		ha_sb_put_jstr(b, dg->name, strlen(dg->name));
		ha_sb_printf(b, ",\"owner_tpg_id\":%u,\"non_owner_state\":\"%s\"}", ha_doc_owner_tpg(d, g),
			     state ? state : "active/non-optimized");
	}
	ha_sb_puts(b, "],\"targets\":");
	ha_sb_puts(b, d->targets_text ? d->targets_text : "[]");
	if (d->chap_text) {
		ha_sb_puts(b, ",\"discovery_chap\":");
		ha_sb_puts(b, d->chap_text);
	}
	ha_sb_puts(b, "}");
}

size_t ha_doc_floating_tpgs(const struct ha_doc *d, uint16_t out[HA_FLOATING_MAX])
{
	size_t n = 0;

	for (size_t i = 0; i < d->nfloating && n < HA_FLOATING_MAX; i++) {
		bool seen = false;

		for (size_t t = 0; t < n; t++)
			seen |= out[t] == d->floating[i].tpg_id;
		if (!seen)
			out[n++] = d->floating[i].tpg_id;
	}
	return n;
}

enum ha_push ha_doc_push_kind(const struct ha_doc *d, int node, uint64_t held)
{
	if (!d || !held || d->generation != held + 1)
		return HA_PUSH_CONFIG;
	if (d->delta_target)
		return HA_PUSH_LUN;
	/* a map of no device group is no request: the configuration then */
	if (!d->delta_placement || !d->ndgs)
		return HA_PUSH_CONFIG;
	if (!d->delta_live)
		return HA_PUSH_PLACEMENT;
	/* the node's own key comes or goes: only the whole configuration has it */
	if (node < 0 || node >= HA_NODES_MAX || (d->delta_live & (1u << node)))
		return HA_PUSH_CONFIG;
	return HA_PUSH_PLACEMENT_FENCE;
}

char *ha_doc_render_node(const struct ha_doc *d, int node, char *err, size_t errlen)
{
	return ha_doc_render_node_opts(d, node, NULL, err, errlen);
}

char *ha_doc_render_node_opts(const struct ha_doc *d, int node, const struct ha_render_opts *o,
			      char *err, size_t errlen)
{
	struct ha_sbuf b;
	char ebuf[64];
	char *s;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!d || node < 0 || (size_t)node >= d->nnodes) {
		gw_errf(err, errlen, -EINVAL, "node %d: not a node of the cluster", node);
		return NULL;
	}
	ha_sb_init(&b);
	put_render(&b, d, (size_t)node, o);
	s = ha_sb_take(&b, NULL, &rc);
	if (!s)
		gw_errf(err, errlen, rc, "nodes[%d] (%s): rendering failed: %s", node,
			   d->nodes[node].name, errstr(rc, ebuf, sizeof(ebuf)));
	return s;
}
