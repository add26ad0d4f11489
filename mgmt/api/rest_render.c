/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The REST resources rendered from the HA agent's answers (rest.h, docs/api.md):
 * the cluster, its nodes and their data planes, device groups, operations,
 * a LUN's state on the nodes, the sessions.
 */
#include "rest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/names.h"
#include "rest_priv.h"

/* ------------------------------------------------------------ from the agent */

void rest_add_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}

void rest_add_u64(json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v));
}

static void add_bool(json_object *o, const char *k, bool v)
{
	json_object_object_add(o, k, json_object_new_boolean(v));
}

static json_object *lun_fault(const Isergw__Ha__LunFault *f)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	rest_add_str(o, "target", f->target);
	rest_add_u64(o, "lun", f->lun);
	rest_add_str(o, "device_group", f->device_group);
	rest_add_str(o, "state", f->state);
	rest_add_str(o, "reason", f->reason);
	return o;
}

/* A node's data plane as its agent reported it (docs/api.md, Nodes). */
static json_object *dataplane(const Isergw__Ha__MemberStatus *m)
{
	json_object *o = json_object_new_object(), *g = json_object_new_array(),
		    *l = json_object_new_array();

	if (!o || !g || !l) {
		json_object_put(o);
		json_object_put(g);
		json_object_put(l);
		return NULL;
	}
	rest_add_str(o, "state", m->dataplane[0] ? m->dataplane : "unknown");
	rest_add_u64(o, "luns_online", m->luns_online);
	rest_add_u64(o, "luns_failed", m->luns_failed);
	for (size_t i = 0; i < m->n_failed_groups; i++)
		json_object_array_add(g, json_object_new_string(m->failed_groups[i]));
	for (size_t i = 0; i < m->n_luns; i++)
		json_object_array_add(l, lun_fault(m->luns[i]));
	json_object_object_add(o, "failed_device_groups", g);
	json_object_object_add(o, "failed_luns", l);
	return o;
}

static json_object *member(const Isergw__Ha__MemberStatus *m)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	rest_add_str(o, "name", m->name);
	rest_add_u64(o, "nodeid", m->nodeid);
	rest_add_u64(o, "tpg_id", m->tpg_id);
	add_bool(o, "corosync_member", m->corosync_member);
	add_bool(o, "agent", m->agent);
	add_bool(o, "synced", m->synced);
	add_bool(o, "drained", m->drained);
	rest_add_u64(o, "applied_generation", m->applied_generation);
	rest_add_u64(o, "last_heard_ms", m->last_heard_ms);
	json_object_object_add(o, "dataplane", dataplane(m));
	return o;
}

/* Node m's word on LUN lun of target iqn: its state, and why when it does not serve. */
static const char *lun_state_on(const Isergw__Ha__MemberStatus *m, const char *iqn, uint32_t lun,
				const char **why)
{
	*why = "";
	if (!m->agent || !m->synced) {
		*why = "its agent is not in the cluster";
		return "unknown";
	}
	if (!strcmp(m->dataplane, "down") || !strcmp(m->dataplane, "failed")) {
		*why = "its isergwd does not serve";
		return "failed";
	}
	if (!m->dataplane[0] || !strcmp(m->dataplane, "unknown")) {
		*why = "the node does not report its LUNs (an older agent)";
		return "unknown";
	}
	for (size_t i = 0; i < m->n_luns; i++)
		if (m->luns[i]->lun == lun && !strcmp(m->luns[i]->target, iqn)) {
			*why = m->luns[i]->reason;
			return m->luns[i]->state;
		}
	if (m->luns_failed > m->n_luns) {
		*why = "more LUNs rest_fail on the node than it reports one by one";
		return "unknown";
	}
	return "online";
}

json_object *rest_lun_status(const Isergw__Ha__ClusterStatus *st, const char *iqn, uint32_t lun)
{
	json_object *o = json_object_new_object(), *nodes = json_object_new_array(),
		    *conds = json_object_new_array(), *ready = json_object_new_object();
	size_t online = 0, bad = 0, known = 0;
	char msg[1024] = "";
	size_t used = 0;

	if (!o || !nodes || !conds || !ready) {
		json_object_put(o);
		json_object_put(nodes);
		json_object_put(conds);
		json_object_put(ready);
		return NULL;
	}
	for (size_t i = 0; i < st->n_members; i++) {
		const Isergw__Ha__MemberStatus *m = st->members[i];
		json_object *n = json_object_new_object();
		const char *why, *state = lun_state_on(m, iqn, lun, &why);

		if (!n)
			continue;
		rest_add_str(n, "node", m->name);
		rest_add_str(n, "state", state);
		if (why[0])
			rest_add_str(n, "reason", why);
		json_object_array_add(nodes, n);
		if (strcmp(state, "unknown"))
			known++;
		if (!strcmp(state, "online")) {
			online++;
		} else if (strcmp(state, "unknown")) {
			bad++;
			if (used < sizeof(msg))
				used += (size_t)snprintf(msg + used, sizeof(msg) - used, "%s%s: %s",
							 used ? "; " : "", m->name, why);
		}
	}
	/* online: every node that reports serves it; failed: none does; degraded: some do */
	rest_add_str(o, "state", !known ? "unknown" : !bad ? "online" : online ? "degraded" : "failed");
	json_object_object_add(o, "nodes", nodes);
	rest_add_str(ready, "type", "Ready");
	rest_add_str(ready, "status", !known ? "Unknown" : online ? "True" : "False");
	rest_add_str(ready, "reason", !known ? "NotReported" : !bad ? "Online" :
		online ? "FailedOnSomeNodes" : "FailedOnAllNodes");
	rest_add_str(ready, "message", bad ? msg : !known ? "no node reports its LUNs" :
		"served by every node that reports");
	json_object_array_add(conds, ready);
	json_object_object_add(o, "conditions", conds);
	return o;
}

json_object *rest_cluster(const Isergw__Ha__ClusterStatus *st)
{
	json_object *o = json_object_new_object(), *ms = json_object_new_array();

	if (!o || !ms) {
		json_object_put(o);
		json_object_put(ms);
		return NULL;
	}
	rest_add_str(o, "name", st->cluster_name);
	rest_add_str(o, "node", st->node_name);
	rest_add_u64(o, "nodeid", st->nodeid);
	add_bool(o, "quorate", st->quorate);
	rest_add_str(o, "phase", st->phase);
	rest_add_u64(o, "generation", st->generation);
	rest_add_str(o, "digest", st->digest);
	rest_add_u64(o, "protocol", st->protocol);
	rest_add_u64(o, "expected_votes", st->expected_votes);
	rest_add_u64(o, "total_votes", st->total_votes);
	add_bool(o, "isergwd_connected", st->isergwd_connected);
	rest_add_u64(o, "isergwd_epoch", st->isergwd_epoch);
	rest_add_u64(o, "lease_remaining_ms", st->lease_remaining_ms);
	for (size_t i = 0; i < st->n_members; i++)
		json_object_array_add(ms, member(st->members[i]));
	json_object_object_add(o, "members", ms);
	return o;
}

json_object *rest_list_of(json_object *items)
{
	json_object *o;

	if (!items)
		return NULL;
	o = json_object_new_object();
	if (!o) {
		json_object_put(items);
		return NULL;
	}
	json_object_object_add(o, "items", items);
	return o;
}

json_object *rest_nodes(const Isergw__Ha__ClusterStatus *st)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < st->n_members; i++)
		json_object_array_add(a, member(st->members[i]));
	return rest_list_of(a);
}

json_object *rest_node(const Isergw__Ha__ClusterStatus *st, const char *name)
{
	for (size_t i = 0; i < st->n_members; i++)
		if (!strcmp(st->members[i]->name, name))
			return member(st->members[i]);
	return NULL;
}

static json_object *dg(const Isergw__Ha__DeviceGroupStatus *d)
{
	json_object *o = json_object_new_object(), *s = json_object_new_array();

	if (!o || !s) {
		json_object_put(o);
		json_object_put(s);
		return NULL;
	}
	rest_add_str(o, "name", d->name);
	rest_add_str(o, "owner", d->owner);
	rest_add_str(o, "preferred_owner", d->preferred_owner);
	rest_add_str(o, "failback", d->failback);
	for (size_t i = 0; i < d->n_states; i++) {
		json_object *n = json_object_new_object();

		if (!n)
			continue;
		rest_add_str(n, "node", d->states[i]->node);
		rest_add_u64(n, "tpg_id", d->states[i]->tpg_id);
		rest_add_str(n, "state", d->states[i]->state);
		add_bool(n, "preferred", d->states[i]->pref);
		json_object_array_add(s, n);
	}
	json_object_object_add(o, "states", s);
	return o;
}

json_object *rest_dgs(const Isergw__Ha__ClusterStatus *st)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < st->n_device_groups; i++)
		json_object_array_add(a, dg(st->device_groups[i]));
	return rest_list_of(a);
}

json_object *rest_dg(const Isergw__Ha__ClusterStatus *st, const char *name)
{
	for (size_t i = 0; i < st->n_device_groups; i++)
		if (!strcmp(st->device_groups[i]->name, name))
			return dg(st->device_groups[i]);
	return NULL;
}

json_object *rest_operation_new(uint64_t generation, char *const *applied, size_t napplied,
				char *const *pending, size_t npending)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array(),
		    *p = json_object_new_array();
	char id[32];

	if (!o || !a || !p) {
		json_object_put(o);
		json_object_put(a);
		json_object_put(p);
		return NULL;
	}
	snprintf(id, sizeof(id), "g%" PRIu64, generation);
	rest_add_str(o, "id", id);
	rest_add_u64(o, "generation", generation);
	add_bool(o, "done", npending == 0);
	for (size_t i = 0; i < napplied; i++)
		json_object_array_add(a, json_object_new_string(applied[i]));
	for (size_t i = 0; i < npending; i++)
		json_object_array_add(p, json_object_new_string(pending[i]));
	json_object_object_add(o, "applied", a);
	json_object_object_add(o, "pending", p);
	return o;
}

int rest_operation(const Isergw__Ha__ClusterStatus *st, const char *id, json_object **out)
{
	char tag[32];
	char *applied[64], *pending[64];
	size_t na = 0, np = 0;
	uint64_t gen;

	if (strlen(id) > 21 || id[0] != 'g')
		return -EINVAL;
	snprintf(tag, sizeof(tag), "\"%s\"", id);
	if (rest_if_match(tag, &gen) || !gen)
		return -EINVAL;
	if (gen > st->generation)
		return -ENOENT;
	/* live: the members whose agents are synchronised in the quorate ring */
	for (size_t i = 0; i < st->n_members; i++) {
		const Isergw__Ha__MemberStatus *m = st->members[i];

		if (!m->synced || !m->agent)
			continue;
		if (m->applied_generation >= gen && na < 64)
			applied[na++] = m->name;
		else if (m->applied_generation < gen && np < 64)
			pending[np++] = m->name;
	}
	*out = rest_operation_new(gen, applied, na, pending, np);
	return *out ? 0 : -ENOMEM;
}

/* ------------------------------------------------------------ sessions */

static json_object *session(const Isergw__Ctl__Session *s, const char *node)
{
	json_object *o = json_object_new_object(), *cs = json_object_new_array();

	if (!o || !cs) {
		json_object_put(o);
		json_object_put(cs);
		return NULL;
	}
	rest_add_u64(o, "tsih", s->tsih);
	rest_add_str(o, "node", node);
	rest_add_str(o, "type", s->type);
	rest_add_str(o, "target", s->target);
	rest_add_str(o, "initiator", s->initiator);
	rest_add_str(o, "isid", s->isid);
	rest_add_str(o, "portal", s->portal);
	rest_add_str(o, "transport", s->transport);
	for (size_t i = 0; i < s->n_connections; i++) {
		const Isergw__Ctl__Connection *c = s->connections[i];
		json_object *co = json_object_new_object();

		if (!co)
			continue;
		rest_add_u64(co, "cid", c->cid);
		rest_add_str(co, "peer", c->peer);
		rest_add_str(co, "local", c->local);
		rest_add_str(co, "state", c->state);
		rest_add_u64(co, "login_time", c->login_time);
		json_object_array_add(cs, co);
	}
	json_object_object_add(o, "connections", cs);
	if (s->stats) {
		rest_add_u64(o, "reads", s->stats->cmds_read);
		rest_add_u64(o, "writes", s->stats->cmds_write);
		rest_add_u64(o, "bytes_read", s->stats->bytes_read);
		rest_add_u64(o, "bytes_written", s->stats->bytes_written);
	}
	return o;
}

json_object *rest_sessions(const Isergw__Ctl__SessionList *sl, const char *node)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; a && sl && i < sl->n_sessions; i++)
		json_object_array_add(a, session(sl->sessions[i], node));
	return rest_list_of(a);
}

json_object *rest_session(const Isergw__Ctl__SessionList *sl, const char *node, uint32_t tsih)
{
	for (size_t i = 0; sl && i < sl->n_sessions; i++)
		if (sl->sessions[i]->tsih == tsih)
			return session(sl->sessions[i], node);
	return NULL;
}
