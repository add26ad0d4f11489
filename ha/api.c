/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's local API (proto/isergw_ha.proto, ApiRequest/ApiReply), on the
 * IPC endpoint of common/ipc.h (a root-only unix socket, the control socket's
 * framing) on the agent's reactor. A change is
 * answered once every live member of the cluster has applied it to its
 * isergwd, or when the wait ends (the reply then names the nodes that have
 * not). Clients are served one request at a time each, several at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "auth.h"
#include "common/ipc.h"
#include "common/log.h"

#define COMP "ha-api"
#define API_CLIENTS_MAX 32u
#define API_TIMEOUT_MAX_MS 600000u

typedef Isergw__Ha__ApiRequest ApiRequest;
typedef Isergw__Ha__ApiReply ApiReply;

enum api_wait { W_NONE = 0, W_CHANGE, W_APPLIED };

/* A client: the private area of its IPC connection (common/ipc.h, conn_of). */
struct api_client {
	enum api_wait wait;
	uint64_t req_id;
	uint64_t gen;
	uint64_t deadline_ms;
	uint32_t timeout_ms;
	uint32_t lun;                   /* ChangeLun: the LUN added or removed */
	char token[API_TOKEN_STR_MAX];  /* ChangeToken: the new token ("" none), until answered */
};

struct ha_api {
	struct ha_agent *a;
	struct gw_ipc_server *srv;      /* the socket and its clients */
};

/* The client of an entry of api->srv->conns. */
static struct api_client *client_of(struct list_head *pos)
{
	return gw_ipc_conn_priv(list_entry(pos, struct gw_ipc_conn, link));
}

/* Its IPC connection, its name ("api client pid N uid N") and its API. */
static struct gw_ipc_conn *conn_of(struct api_client *c)
{
	return gw_ipc_priv_conn(c);
}

static const char *name_of(struct api_client *c)
{
	return conn_of(c)->name;
}

static struct ha_api *api_of(struct api_client *c)
{
	return gw_ipc_server_arg(conn_of(c)->srv);
}

/* ------------------------------------------------------------ clients */

static void reply(struct api_client *c, ApiReply *rep)
{
	uint8_t *buf;
	size_t len;
	int rc;

	c->wait = W_NONE;
	rc = ctl_frame_pack(&rep->base, &buf, &len);
	if (rc) {
		ApiReply err = ISERGW__HA__API_REPLY__INIT;

		err.status = rc;
		err.error = (char *)(uintptr_t)"the reply does not fit in a frame";
		if (ctl_frame_pack(&err.base, &buf, &len)) {
			gw_ipc_conn_close(conn_of(c));
			return;
		}
	}
	gw_ipc_reply(conn_of(c), buf, len);
}

static void reply_err(struct api_client *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void reply_err(struct api_client *c, int rc, const char *fmt, ...)
{
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	GW_WARN(COMP, "%s: refused: %s", name_of(c), why);
	rep.status = rc;
	rep.error = why;
	reply(c, &rep);
}

/* ------------------------------------------------------------ status */

/* A node's data plane as it reported it (pointing into dp: valid while the reply is built). */
static void dp_status(struct arena *ar, const struct ha_dp *dp, Isergw__Ha__MemberStatus *ms)
{
	static const struct ha_dp unknown;

	if (!dp)
		dp = &unknown;
	ms->dataplane = (char *)(uintptr_t)ha_dp_state_name(dp);
	ms->luns_online = dp->luns_online;
	ms->luns_failed = dp->luns_failed;
	ms->failed_groups = ctl_arena_alloc(ar, (dp->nfailed + 1) * sizeof(char *));
	ms->luns = ctl_arena_alloc(ar, (dp->nluns + 1) * sizeof(*ms->luns));
	if (!ms->failed_groups || !ms->luns)
		return;
	for (size_t i = 0; i < dp->nfailed; i++)
		ms->failed_groups[ms->n_failed_groups++] = (char *)(uintptr_t)dp->failed[i];
	for (size_t i = 0; i < dp->nluns; i++) {
		const struct ha_lun_fault *f = &dp->luns[i];
		Isergw__Ha__LunFault *p = ctl_arena_alloc(ar, sizeof(*p));

		if (!p)
			return;
		ha_lun_fault_to_pb(f, p);
		ms->luns[ms->n_luns++] = p;
	}
}

static void build_status(struct ha_agent *a, struct arena *ar, Isergw__Ha__ClusterStatus *st)
{
	struct ha_sm *sm = &a->sm;
	const struct ha_doc *d = sm->doc;
	uint64_t now = gw_now_ms();
	char hex[2 * HA_DIGEST_LEN + 1];
	size_t nm = 0;

	st->cluster_name = a->cluster_name;
	st->node_name = a->node_name;
	st->nodeid = a->nodeid;
	/* after a stall, what the agent knows may be old: not told as quorate */
	ha_sm_clock(sm, now);
	st->quorate = sm->quorate && !sm->stale;
	st->phase = (char *)(uintptr_t)ha_sm_phase_name(sm);
	st->generation = d->generation;
	ha_digest_hex(d->digest, hex);
	st->digest = ctl_arena_strdup(ar, d->generation ? hex : "");
	st->protocol = sm->proto;
	st->isergwd_connected = ha_gwlink_connected(a->gw);
	st->isergwd_epoch = ha_gwlink_epoch(a->gw);
	st->lease_remaining_ms = sm->lease_expires_ms > now ?
				 (uint32_t)(sm->lease_expires_ms - now) : 0;
	st->expected_votes = sm->expected_votes;
	st->total_votes = sm->total_votes;
	st->failovers = sm->failovers;
	st->planned_moves = sm->planned_moves;

	st->members = ctl_arena_alloc(ar, (d->nnodes + HA_MAX_MEMBERS + 1) * sizeof(*st->members));
	if (!st->members)
		return;
	/* the configuration's nodes first, then members it does not know */
	for (size_t i = 0; i < d->nnodes + HA_MAX_MEMBERS; i++) {
		const struct ha_member *m;
		Isergw__Ha__MemberStatus *ms;

		if (i < d->nnodes) {
			m = ha_sm_member_by_name(sm, d->nodes[i].name);
		} else {
			m = &sm->m[i - d->nnodes];
			if (!m->used || (m->name[0] && ha_doc_find_node(d, m->name) >= 0))
				continue;
		}
		ms = ctl_arena_alloc(ar, sizeof(*ms));
		if (!ms)
			return;
		isergw__ha__member_status__init(ms);
		if (i < d->nnodes) {
			ms->name = d->nodes[i].name;
			ms->tpg_id = d->nodes[i].tpg_id;
			ms->drained = d->drained[i];
			ms->synced = d->live[i];
		} else {
			ms->name = (char *)(uintptr_t)(m->name[0] ? m->name : "?");
		}
		if (m) {
			ms->nodeid = m->nodeid;
			ms->corosync_member = m->in_ring;
			ms->agent = m->in_view;
			if (i >= d->nnodes)
				ms->synced = m->in_view && sm->phase == HA_PHASE_SYNCED;
			ms->applied_generation = m->applied_gen;
			ms->last_heard_ms = m->last_heard_ms && now >= m->last_heard_ms ?
					    (uint32_t)(now - m->last_heard_ms) : 0;
		}
		/* this node's own until the group delivered it */
		dp_status(ar, m && (m->dp.known || m->nodeid != sm->nodeid) ? &m->dp :
			  m ? &sm->dp : NULL, ms);
		st->members[nm++] = ms;
	}
	st->n_members = nm;

	st->device_groups = ctl_arena_alloc(ar, (d->ndgs + 1) * sizeof(*st->device_groups));
	if (!st->device_groups)
		return;
	for (size_t g = 0; g < d->ndgs; g++) {
		Isergw__Ha__DeviceGroupStatus *ds = ctl_arena_alloc(ar, sizeof(*ds));
		struct ha_alua_entry *e = ctl_arena_alloc(ar, (d->nnodes + 1) * sizeof(*e));

		if (!ds || !e)
			return;
		isergw__ha__device_group_status__init(ds);
		ds->name = d->dgs[g].name;
		ds->owner = (char *)(uintptr_t)(d->owner[g] >= 0 ? d->nodes[d->owner[g]].name : "");
		ds->preferred_owner = (char *)(uintptr_t)(d->dgs[g].preferred >= 0 ?
				      d->nodes[d->dgs[g].preferred].name : "");
		ds->failback = (char *)(uintptr_t)(d->dgs[g].failback == HA_FAILBACK_MANUAL ?
						   "manual" : "immediate");
		ha_alua_states(d, (int)g, e);
		ds->states = ctl_arena_alloc(ar, (d->nnodes + 1) * sizeof(*ds->states));
		if (!ds->states)
			return;
		for (size_t n = 0; n < d->nnodes; n++) {
			Isergw__Ha__GroupNodeState *ns = ctl_arena_alloc(ar, sizeof(*ns));

			if (!ns)
				return;
			isergw__ha__group_node_state__init(ns);
			ns->node = d->nodes[n].name;
			ns->tpg_id = e[n].tpg_id;
			ns->state = (char *)(uintptr_t)ctl_alua_state_name(e[n].state);
			ns->pref = e[n].pref;
			ds->states[ds->n_states++] = ns;
		}
		st->device_groups[st->n_device_groups++] = ds;
	}
}

/* Answer rep, built in ar (out of memory when one of its allocations failed); frees ar. */
static void reply_arena(struct api_client *c, ApiReply *rep, struct arena *ar)
{
	if (ar->failed)
		reply_err(c, -ENOMEM, "out of memory");
	else
		reply(c, rep);
	ctl_arena_free(ar);
}

static void op_status(struct api_client *c)
{
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__ClusterStatus st = ISERGW__HA__CLUSTER_STATUS__INIT;
	struct arena ar = { 0 };

	build_status(api_of(c)->a, &ar, &st);
	rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS;
	rep.cluster_status = &st;
	reply_arena(c, &rep, &ar);
}

static void op_config(struct api_client *c)
{
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__ConfigDoc cd = ISERGW__HA__CONFIG_DOC__INIT;
	const struct ha_doc *d = api_of(c)->a->sm.doc;
	char *cfg = ha_doc_config_json(d), *rt = ha_doc_runtime_json(d);

	if (!cfg || !rt) {
		free(cfg);
		free(rt);
		reply_err(c, -ENOMEM, "out of memory");
		return;
	}
	cd.generation = d->generation;
	cd.config_json = cfg;
	cd.runtime_json = rt;
	rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CONFIG;
	rep.config = &cd;
	reply(c, &rep);
	free(cfg);
	free(rt);
}

/* The cluster's API tokens: hashes only (isergw-api polls this). */
static void op_tokens(struct api_client *c)
{
	const struct ha_doc *d = api_of(c)->a->sm.doc;
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__TokenList tl = ISERGW__HA__TOKEN_LIST__INIT;
	struct arena ar = { 0 };
	struct ha_token *t = NULL;
	size_t n = 0;

	if (ha_doc_tokens(d, &t, &n)) {
		reply_err(c, -ENOMEM, "out of memory");
		return;
	}
	tl.tokens = ctl_arena_alloc(&ar, (n + 1) * sizeof(*tl.tokens));
	for (size_t i = 0; i < n && !ar.failed; i++) {
		Isergw__Ha__ApiToken *tk = ctl_arena_alloc(&ar, sizeof(*tk));

		if (!tk)
			break;
		isergw__ha__api_token__init(tk);
		tk->name = t[i].name;
		tk->role = t[i].role;
		tk->hash = t[i].hash;
		tk->created = t[i].created;
		tl.tokens[i] = tk;
	}
	tl.generation = d->generation;
	tl.n_tokens = n;
	rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_TOKENS;
	rep.tokens = &tl;
	reply_arena(c, &rep, &ar);
	free(t);
}

/* ------------------------------------------------------------ changes */

static void change_reply(struct api_client *c, uint64_t gen, bool changed, bool timed_out)
{
	struct ha_agent *a = api_of(c)->a;
	const struct ha_doc *d = a->sm.doc;
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__ChangeResult cr = ISERGW__HA__CHANGE_RESULT__INIT;
	char pending[HA_MAX_MEMBERS][HA_NAME_MAX];
	char *applied[HA_MAX_MEMBERS], *pend[HA_MAX_MEMBERS], why[512];
	char token[API_TOKEN_STR_MAX];
	size_t np = 0, off = 0;

	ha_sm_all_applied(&a->sm, gen, pending, &np, HA_MAX_MEMBERS);
	for (size_t n = 0; n < d->nnodes && cr.n_applied < HA_MAX_MEMBERS; n++) {
		bool p = false;

		const struct ha_member *m = ha_sm_member_by_name(&a->sm, d->nodes[n].name);

		if (!m || !m->in_view)
			continue;
		for (size_t k = 0; k < np; k++)
			if (!strcmp(pending[k], d->nodes[n].name))
				p = true;
		if (!p)
			applied[cr.n_applied++] = d->nodes[n].name;
	}
	for (size_t k = 0; k < np; k++)
		pend[k] = pending[k];
	cr.generation = gen;
	cr.applied = applied;
	cr.pending = pend;
	cr.n_pending = np;
	cr.changed = changed;
	cr.lun = c->lun;
	/* the secret lives on only in the reply's frame (reply() may end c) */
	memcpy(token, c->token, sizeof(token));
	OPENSSL_cleanse(c->token, sizeof(c->token));
	cr.token = token;
	rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CHANGE;
	rep.change = &cr;
	if (timed_out && np) {
		off = (size_t)snprintf(why, sizeof(why), "generation %" PRIu64 " not applied within %u ms by:",
				       gen, c->timeout_ms);
		for (size_t k = 0; k < np && off < sizeof(why); k++)
			off += (size_t)snprintf(why + off, sizeof(why) - off, " %s", pending[k]);
		rep.status = -ETIMEDOUT;
		rep.error = why;
		GW_WARN(COMP, "%s: %s", name_of(c), why);
	} else {
		GW_NOTICE(COMP, "%s: generation %" PRIu64 " applied by every live node", name_of(c), gen);
	}
	reply(c, &rep);
	OPENSSL_cleanse(token, sizeof(token));
}

static void wait_change(struct api_client *c, int64_t id, uint32_t timeout_ms)
{
	c->wait = W_CHANGE;
	c->req_id = (uint64_t)id;
	c->timeout_ms = timeout_ms ? timeout_ms : api_of(c)->a->opts.change_timeout_ms;
	if (c->timeout_ms > API_TIMEOUT_MAX_MS)
		c->timeout_ms = API_TIMEOUT_MAX_MS;
	c->deadline_ms = gw_now_ms() + c->timeout_ms;
}

/*
 * An API token made here (its secret kept in c->token for the answer, only
 * its hash multicast) or revoked. The request id or a negative errno.
 */
static int64_t submit_token(struct api_client *c, const Isergw__Ha__ChangeToken *ct, char *err,
			    size_t errlen)
{
	struct ha_sm *sm = &api_of(c)->a->sm;
	char hash[API_TOKEN_HASH_STR_MAX];
	enum api_role role;
	int rc;

	if (!api_token_name_ok(ct->name)) {
		snprintf(err, errlen, "the token name is not 1..%u of A-Z a-z 0-9 . _ - "
			 "(starting with a letter or digit)", API_TOKEN_NAME_MAX);
		return -EINVAL;
	}
	if (ct->revoke) {
		GW_NOTICE(COMP, "%s: revoke API token %s", name_of(c), ct->name);
		return ha_sm_submit_token(sm, ct->name, NULL, NULL, 0, err, errlen);
	}
	if (api_role_parse(ct->role, &role)) {
		snprintf(err, errlen, "the role is neither admin nor read-only");
		return -EINVAL;
	}
	rc = api_token_make(ct->name, c->token, sizeof(c->token), hash, sizeof(hash));
	if (rc) {
		snprintf(err, errlen, "cannot make a token: %s", strerror(-rc));
		return rc;
	}
	GW_NOTICE(COMP, "%s: add API token %s (%s)", name_of(c), ct->name, api_role_name(role));
	return ha_sm_submit_token(sm, ct->name, api_role_name(role), hash, (uint64_t)time(NULL),
				  err, errlen);
}

static void op_change(struct api_client *c, const ApiRequest *req)
{
	struct ha_sm *sm = &api_of(c)->a->sm;
	char err[1024] = "";
	uint32_t timeout = 0;
	int64_t id;

	c->lun = 0;
	OPENSSL_cleanse(c->token, sizeof(c->token));
	switch (req->op_case) {
	case ISERGW__HA__API_REQUEST__OP_APPLY_CONFIG:
		GW_NOTICE(COMP, "%s: new cluster configuration (%zu bytes)", name_of(c),
			  strlen(req->apply_config->config_json));
		id = ha_sm_submit_config(sm, req->apply_config->config_json,
					 req->apply_config->base_generation, err, sizeof(err));
		timeout = req->apply_config->timeout_ms;
		break;
	case ISERGW__HA__API_REQUEST__OP_CHANGE_LUN: {
		const Isergw__Ha__ChangeLun *cl = req->change_lun;

		c->lun = cl->lun;
		GW_INFO(COMP, "%s: %s LUN %s%" PRIu32 " of %s", name_of(c),
			cl->lun_json[0] ? "add" : "remove", cl->has_lun ? "" : "(the lowest free) ",
			cl->has_lun ? cl->lun : 0, cl->target);
		id = ha_sm_submit_lun(sm, cl->target, cl->has_lun || !cl->lun_json[0], &c->lun,
				      cl->lun_json, cl->base_generation, err, sizeof(err));
		timeout = cl->timeout_ms;
		break;
	}
	case ISERGW__HA__API_REQUEST__OP_DRAIN:
		GW_NOTICE(COMP, "%s: %s node %s%s", name_of(c), req->drain->undrain ? "undrain" : "drain",
			  req->drain->node, req->drain->force ? " (forced)" : "");
		id = ha_sm_submit_drain(sm, req->drain->node, !req->drain->undrain, req->drain->force,
					err, sizeof(err));
		timeout = req->drain->timeout_ms;
		break;
	case ISERGW__HA__API_REQUEST__OP_MOVE:
		GW_NOTICE(COMP, "%s: move device group %s to node %s", name_of(c),
			  req->move->device_group, req->move->node);
		id = ha_sm_submit_move(sm, req->move->device_group, req->move->node, err,
				       sizeof(err));
		timeout = req->move->timeout_ms;
		break;
	case ISERGW__HA__API_REQUEST__OP_CHANGE_TOKEN:
		id = submit_token(c, req->change_token, err, sizeof(err));
		timeout = req->change_token->timeout_ms;
		break;
	default:
		id = -EOPNOTSUPP;
		break;
	}
	if (id == -EALREADY) {
		GW_NOTICE(COMP, "%s: nothing to change: %s", name_of(c), err);
		change_reply(c, sm->doc->generation, false, false);
		return;
	}
	if (id < 0) {
		OPENSSL_cleanse(c->token, sizeof(c->token));
		reply_err(c, (int)id, "%s", err[0] ? err : strerror((int)-id));
		return;
	}
	wait_change(c, id, timeout);
}

void ha_api_change_done(struct ha_api *api, uint64_t request_id, int status, const char *err,
			uint64_t gen)
{
	struct list_head *p, *n;

	if (!api)
		return;
	list_for_each_safe(p, n, &api->srv->conns) {
		struct api_client *c = client_of(p);

		if (c->wait != W_CHANGE || c->req_id != request_id)
			continue;
		if (status) {
			reply_err(c, status, "%s", err && err[0] ? err : strerror(-status));
			return;
		}
		c->wait = W_APPLIED;
		c->gen = gen;
		if (ha_sm_all_applied(&api->a->sm, gen, NULL, NULL, 0))
			change_reply(c, gen, true, false);
		return;
	}
}

void ha_api_applied(struct ha_api *api)
{
	struct list_head *p, *n;

	if (!api)
		return;
	list_for_each_safe(p, n, &api->srv->conns) {
		struct api_client *c = client_of(p);

		if (c->wait == W_APPLIED && ha_sm_all_applied(&api->a->sm, c->gen, NULL, NULL, 0))
			change_reply(c, c->gen, true, false);
	}
}

void ha_api_tick(struct ha_api *api, uint64_t now)
{
	struct list_head *p, *n;

	if (!api)
		return;
	list_for_each_safe(p, n, &api->srv->conns) {
		struct api_client *c = client_of(p);

		if (c->wait == W_NONE || now < c->deadline_ms)
			continue;
		if (c->wait == W_APPLIED) {
			change_reply(c, c->gen, true, true);
		} else {
			c->wait = W_NONE;
			reply_err(c, -ETIMEDOUT, "the change was not applied within %u ms "
				  "(is the cluster busy changing membership?)", c->timeout_ms);
		}
	}
}

/* The fencer confirmed a node fenced: announced to the group, answered at once. */
static void op_fenced(struct api_client *c, const ApiRequest *req)
{
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	char err[512] = "";
	int rc;

	GW_NOTICE(COMP, "%s: node %s fenced", name_of(c), req->node_fenced->node);
	rc = ha_sm_submit_fenced(&api_of(c)->a->sm, req->node_fenced->node, err, sizeof(err));
	if (rc) {
		GW_WARN(COMP, "%s: the fence of node %s not announced: %s", name_of(c),
			req->node_fenced->node, err[0] ? err : strerror(-rc));
		reply_err(c, rc, "%s", err[0] ? err : strerror(-rc));
		return;
	}
	reply(c, &rep);
}

/* ------------------------------------------------------------ requests */

static void handle(struct gw_ipc_conn *conn, const uint8_t *buf, uint32_t len)
{
	struct api_client *c = gw_ipc_conn_priv(conn);
	ApiRequest *req = isergw__ha__api_request__unpack(NULL, len, buf);

	if (!req) {
		reply_err(c, -EBADMSG, "malformed request: %u bytes that do not decode as an "
			  "ApiRequest", len);
		return;
	}
	switch (req->op_case) {
	case ISERGW__HA__API_REQUEST__OP_GET_STATUS:
		op_status(c);
		break;
	case ISERGW__HA__API_REQUEST__OP_GET_CONFIG:
		op_config(c);
		break;
	case ISERGW__HA__API_REQUEST__OP_APPLY_CONFIG:
	case ISERGW__HA__API_REQUEST__OP_CHANGE_LUN:
	case ISERGW__HA__API_REQUEST__OP_DRAIN:
	case ISERGW__HA__API_REQUEST__OP_MOVE:
	case ISERGW__HA__API_REQUEST__OP_CHANGE_TOKEN:
		op_change(c, req);
		break;
	case ISERGW__HA__API_REQUEST__OP_GET_TOKENS:
		op_tokens(c);
		break;
	case ISERGW__HA__API_REQUEST__OP_NODE_FENCED:
		op_fenced(c, req);
		break;
	case ISERGW__HA__API_REQUEST__OP__NOT_SET:
		reply_err(c, -EOPNOTSUPP, "no operation in the request");
		break;
	default:
		reply_err(c, -EOPNOTSUPP, "unknown operation (field %d)", (int)req->op_case);
		break;
	}
	isergw__ha__api_request__free_unpacked(req, NULL);
}

static void client_reply_error(struct gw_ipc_conn *conn, int status, const char *why)
{
	struct api_client *c = gw_ipc_conn_priv(conn);
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;

	rep.status = status;
	rep.error = (char *)(uintptr_t)why;
	reply(c, &rep);
}

static void client_close(struct gw_ipc_conn *conn)
{
	struct api_client *c = gw_ipc_conn_priv(conn);

	c->wait = W_NONE;
	OPENSSL_cleanse(c->token, sizeof(c->token));
}

static const struct gw_ipc_ops client_ops = {
	.frame = handle,
	.reply_error = client_reply_error,
	.close = client_close,
};

int ha_api_start(struct ha_agent *a, struct ha_api **out)
{
	struct gw_ipc_params sp = {
		.comp = COMP,
		.what = "agent's socket",
		.client = "api client",
		.r = a->r,
		.max_clients = API_CLIENTS_MAX,
		.busy_why = NULL,       /* closed at once: a client that keeps trying costs little */
		.max_push = 0,
		.frame_max = CTL_FRAME_MAX,
		.priv_size = sizeof(struct api_client),
		.ops = &client_ops,
	};
	const char *path = a->opts.socket;
	struct ha_api *api;
	int rc;

	api = calloc(1, sizeof(*api));
	if (!api)
		return -ENOMEM;
	api->a = a;
	sp.arg = api;
	rc = gw_ipc_server_start(&sp, path, &api->srv);
	if (rc) {
		free(api);
		return rc;
	}
	GW_NOTICE(COMP, "local API on %s", path);
	*out = api;
	return 0;
}

void ha_api_stop(struct ha_api *api)
{
	if (!api)
		return;
	gw_ipc_server_destroy(api->srv);
	free(api);
}
