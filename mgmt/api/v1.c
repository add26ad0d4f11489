/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The /api/v1 operations of isergw-api (docs/api.md): each one a job, a short
 * chain of calls to the local HA agent (haclient.c) run on the HA client's
 * thread, ending in one answer handed back to the HTTP side (http.c), which
 * resumes the suspended connection with it.
 *
 *   reads of the cluster, nodes, device groups, operations: GetClusterStatus
 *   reads of targets, LUNs, the configuration: GetClusterStatus, and the
 *     answer kept for that route from that document (generation and
 *     digest, cache.h) when there is one; otherwise GetConfig, the answer
 *     rendered and kept. An unchanged cluster costs one small status call
 *     per read, not the whole configuration fetched, parsed and rendered
 *     (hundreds of KiB with thousands of LUNs)
 *   writes of targets, LUNs, the configuration: GetConfig, the change made
 *     to the configuration read (rest.c), ApplyClusterConfig with
 *     base_generation = the generation read; If-Match must name that
 *     generation (412 otherwise, and the agent refuses a base that moved on
 *     meanwhile: 412 too). Without If-Match a base that moved on is read
 *     again and the change made again, up to STALE_RETRIES times (then
 *     409): writers never lose each other's updates
 *   POST and DELETE of a LUN: the agent's ChangeLun alone (no GetConfig:
 *     the agent adds or removes that LUN, checked as a whole configuration
 *     would be, and sends the cluster that change, not the configuration);
 *     If-Match is its base_generation, a base that moved on is tried again
 *     as above; a target whose LUNs are numbered by their place (no "lun")
 *     goes the way of the other writes
 *   PATCH of a node or a device group: (GetClusterStatus for If-Match),
 *     Drain or Move, then GetClusterStatus for the answer
 * A change every live member has not applied within --change-wait-ms is
 * answered 202 with the operation "gN" (GET /api/v1/operations/gN).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "problem.h"
#include "common/fsutil.h"
#include "common/log.h"

#define COMP "v1"
#define STALE_RETRIES 5

enum step { S_STATUS, S_PRECHECK, S_CACHE, S_CONFIG, S_APPLY, S_CHANGE, S_LUN };

struct job {
	struct api *a;
	struct rest_match m;
	json_object *body;
	json_object *cfg;               /* the configuration as sent, for the answer */
	bool if_match;
	uint64_t gen;                   /* If-Match's (0: "*") */
	unsigned int retries;
	enum step step;
	char owner[REST_NAME_MAX + 1];  /* DG PATCH */
	bool drained;                   /* node PATCH */
	char iqn[REST_NAME_MAX + 1];    /* of a target created, the initiator of an ACL created */
	uint32_t lun;                   /* of a LUN created, the rel_port_id of a portal created */
	bool cacheable;                 /* a configuration read: its 200 answer is kept */
	uint64_t doc_gen;               /* the document the agent named for it (S_CACHE) */
	json_object *lun_status;        /* a LUN read: its state on the nodes (S_CACHE) */
	char doc_digest[API_CACHE_DIGEST_MAX];
	api_v1_done done;
	void *arg;
};

void api_answer_free(struct api_answer *ans)
{
	free(ans->body);
	ans->body = NULL;
}

void api_answer_problem(struct api_answer *ans, const struct rest_err *e)
{
	memset(ans, 0, sizeof(*ans));
	ans->code = e->code;
	ans->type = API_PROBLEM_TYPE;
	ans->retry_after_s = e->retry_after_s;
	ans->body = api_problem_json_field(e->code, MHD_get_reason_phrase_for(e->code), e->detail,
					   e->field, &ans->len);
}

static void answer_json(struct api_answer *ans, unsigned int code, json_object *o)
{
	const char *s;

	memset(ans, 0, sizeof(*ans));
	if (!o) {
		struct rest_err e = { .code = 500 };

		snprintf(e.detail, sizeof(e.detail), "out of memory");
		api_answer_problem(ans, &e);
		return;
	}
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	ans->code = code;
	ans->type = "application/json";
	ans->len = strlen(s) + 1;
	ans->body = malloc(ans->len + 1);
	if (ans->body) {
		memcpy(ans->body, s, ans->len - 1);
		ans->body[ans->len - 1] = '\n';
		ans->body[ans->len] = '\0';
	}
	json_object_put(o);
}

static void job_free(struct job *j)
{
	json_object_put(j->body);
	json_object_put(j->cfg);
	json_object_put(j->lun_status);
	free(j);
}

static void finish(struct job *j, struct api_answer *ans)
{
	j->done(j->arg, ans);
	job_free(j);
}

static void finish_err(struct job *j, const struct rest_err *e)
{
	struct api_answer ans;

	if (e->code >= 500)
		GW_WARN(COMP, "%s: %u %s", rest_op_name(j->m.op), e->code, e->detail);
	else
		GW_INFO(COMP, "%s: %u %s", rest_op_name(j->m.op), e->code, e->detail);
	api_answer_problem(&ans, e);
	finish(j, &ans);
}

static void finish_code(struct job *j, unsigned int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void finish_code(struct job *j, unsigned int code, const char *fmt, ...)
{
	struct rest_err e = { .code = code };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e.detail, sizeof(e.detail), fmt, ap);
	va_end(ap);
	finish_err(j, &e);
}

static void fail_call(struct job *j, int rc);
static int get_config(struct job *j);

/* the cache's key of a read: its route and the names in it (never truncated) */
_Static_assert(API_CACHE_KEY_MAX > 2 * REST_NAME_MAX + 64, "a cache key holds two names");

static void cache_key(const struct job *j, char *buf, size_t len)
{
	snprintf(buf, len, "%s\n%s\n%s\n%u\n%u", rest_op_name(j->m.op), j->m.name, j->m.sub,
		 j->m.lun, j->m.num);
}

static void finish_json(struct job *j, unsigned int code, json_object *o, uint64_t gen)
{
	struct api_answer ans;
	char key[API_CACHE_KEY_MAX];

	answer_json(&ans, code, o);
	if (gen && code < 300)
		rest_etag(gen, ans.etag, sizeof(ans.etag));
	/* rendered from the document the status named (not one that came after it) */
	if (j->cacheable && code == 200 && gen && gen == j->doc_gen && ans.body) {
		cache_key(j, key, sizeof(key));
		api_cache_put(&j->a->cache, gen, j->doc_digest, key, ans.body, ans.len);
	}
	finish(j, &ans);
}

/*
 * A configuration read, the agent naming its document (generation, digest):
 * the answer kept from that document, or the configuration asked for
 */
static void cache_lookup(struct job *j, uint64_t gen, const char *digest)
{
	struct api_answer ans = { .code = 200, .type = "application/json" };
	char key[API_CACHE_KEY_MAX];

	j->doc_gen = gen;
	snprintf(j->doc_digest, sizeof(j->doc_digest), "%s", digest ? digest : "");
	cache_key(j, key, sizeof(key));
	if (!j->cacheable || !api_cache_get(&j->a->cache, gen, j->doc_digest, key, &ans.body,
					    &ans.len)) {
		fail_call(j, get_config(j));
		return;
	}
	rest_etag(gen, ans.etag, sizeof(ans.etag));
	finish(j, &ans);
}

/* 202: the change is made, not every live member has applied it yet */
static void finish_accepted(struct job *j, const Isergw__Ha__ChangeResult *cr)
{
	struct api_answer ans;

	answer_json(&ans, 202, rest_operation_new(cr->generation, cr->applied, cr->n_applied,
						  cr->pending, cr->n_pending));
	snprintf(ans.location, sizeof(ans.location), REST_PREFIX "/operations/g%" PRIu64,
		 cr->generation);
	GW_NOTICE(COMP, "%s: generation %" PRIu64 " made, %zu live node(s) not there yet: 202",
		  rest_op_name(j->m.op), cr->generation, cr->n_pending);
	finish(j, &ans);
}

/* ------------------------------------------------------------ calls */

static void on_reply(void *arg, int rc, Isergw__Ha__ApiReply *rep, const char *why);

/*
 * 0: on_reply will be called; else it will not (the caller answers: from a
 * reply's callback with fail_call, from api_v1_start by returning it).
 */
static int call(struct job *j, enum step step, Isergw__Ha__ApiRequest *req, uint32_t timeout_ms)
{
	j->step = step;
	return api_ha_call(j->a->ha, req, timeout_ms, on_reply, j);
}

static void fail_call(struct job *j, int rc)
{
	struct rest_err e;

	if (!rc)
		return;
	rest_agent_unreachable(rc, strerror(-rc), &e);
	finish_err(j, &e);
}

static int get_status(struct job *j, enum step step)
{
	Isergw__Ha__ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__GetClusterStatus gs = ISERGW__HA__GET_CLUSTER_STATUS__INIT;

	req.op_case = ISERGW__HA__API_REQUEST__OP_GET_STATUS;
	req.get_status = &gs;
	if (step == S_PRECHECK) {
		/* If-Match is checked against what the agent holds now */
		j->step = step;
		return api_ha_call_ex(j->a->ha, &req, j->a->opts.ha_timeout_ms, true, on_reply, j);
	}
	return call(j, step, &req, j->a->opts.ha_timeout_ms);
}

static int get_config(struct job *j)
{
	Isergw__Ha__ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__GetConfig gc = ISERGW__HA__GET_CONFIG__INIT;

	req.op_case = ISERGW__HA__API_REQUEST__OP_GET_CONFIG;
	req.get_config = &gc;
	return call(j, S_CONFIG, &req, j->a->opts.ha_timeout_ms);
}

static uint32_t change_timeout(const struct job *j)
{
	return j->a->opts.change_wait_ms + j->a->opts.ha_timeout_ms;
}

static int change(struct job *j)
{
	Isergw__Ha__ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__Drain dr = ISERGW__HA__DRAIN__INIT;
	Isergw__Ha__Move mv = ISERGW__HA__MOVE__INIT;

	if (j->m.op == REST_NODE_PATCH) {
		dr.node = j->m.name;
		dr.undrain = !j->drained;
		dr.force = j->m.force;
		dr.timeout_ms = j->a->opts.change_wait_ms;
		req.op_case = ISERGW__HA__API_REQUEST__OP_DRAIN;
		req.drain = &dr;
	} else {
		mv.device_group = j->m.name;
		mv.node = j->owner;
		mv.timeout_ms = j->a->opts.change_wait_ms;
		req.op_case = ISERGW__HA__API_REQUEST__OP_MOVE;
		req.move = &mv;
	}
	return call(j, S_CHANGE, &req, change_timeout(j));
}

static int change_lun(struct job *j)
{
	Isergw__Ha__ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__ChangeLun cl = ISERGW__HA__CHANGE_LUN__INIT;
	struct rest_err e;
	bool has_lun = true;
	uint32_t lun = j->m.lun;

	if (j->m.op == REST_LUN_POST && rest_lun_body(j->body, &has_lun, &lun, &e))
		return -EINVAL; /* api_v1_check answered it already */
	cl.target = j->m.name;
	cl.has_lun = has_lun;
	cl.lun = lun;
	cl.lun_json = (char *)(uintptr_t)(j->m.op == REST_LUN_POST ?
		json_object_to_json_string_ext(j->body, JSON_C_TO_STRING_PLAIN |
					       JSON_C_TO_STRING_NOSLASHESCAPE) : "");
	cl.base_generation = j->if_match ? j->gen : 0;
	cl.timeout_ms = j->a->opts.change_wait_ms;
	req.op_case = ISERGW__HA__API_REQUEST__OP_CHANGE_LUN;
	req.change_lun = &cl;
	return call(j, S_LUN, &req, change_timeout(j));
}

/* ------------------------------------------------------------ answers */

static void status_done(struct job *j, const Isergw__Ha__ClusterStatus *st)
{
	json_object *o = NULL;
	int rc;

	switch (j->m.op) {
	case REST_CLUSTER_GET:
		finish_json(j, 200, rest_cluster(st), st->generation);
		return;
	case REST_NODES_LIST:
		finish_json(j, 200, rest_nodes(st), st->generation);
		return;
	case REST_DGS_LIST:
		finish_json(j, 200, rest_dgs(st), st->generation);
		return;
	case REST_NODE_GET:
	case REST_NODE_PATCH:
	case REST_DG_GET:
	case REST_DG_PATCH: {
		bool node = j->m.op == REST_NODE_GET || j->m.op == REST_NODE_PATCH;

		o = node ? rest_node(st, j->m.name) : rest_dg(st, j->m.name);
		if (!o) {
			finish_code(j, 404, "no %s %s", node ? "node" : "device group", j->m.name);
			return;
		}
		finish_json(j, 200, o, st->generation);
		return;
	}
	case REST_OPERATION_GET:
		rc = rest_operation(st, j->m.name, &o);
		if (rc == -ENOMEM)
			finish_json(j, 500, NULL, 0);
		else if (rc)
			finish_code(j, 404, "no operation %s (operations are gN, N a generation "
				    "the cluster has made)", j->m.name);
		else
			finish_json(j, 200, o, 0);
		return;
	default:
		finish_code(j, 500, "%s: not a status operation", rest_op_name(j->m.op));
		return;
	}
}

static bool precondition_failed(struct job *j, uint64_t gen)
{
	char now[32], want[32];
	struct rest_err e = { .code = 412 };

	if (!j->if_match || !j->gen || j->gen == gen)
		return false;
	rest_etag(gen, now, sizeof(now));
	rest_etag(j->gen, want, sizeof(want));
	snprintf(e.detail, sizeof(e.detail), "If-Match: the cluster is at %s, not %s: read it "
		 "again", now, want);
	finish_err(j, &e);
	return true;
}

/* o, or 404 "no WHAT" when it is NULL */
static void config_found(struct job *j, json_object *o, uint64_t gen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void config_found(struct job *j, json_object *o, uint64_t gen, const char *fmt, ...)
{
	char what[2 * REST_NAME_MAX + 64];
	va_list ap;

	if (o) {
		finish_json(j, 200, o, gen);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	finish_code(j, 404, "no %s", what);
}

static void config_read(struct job *j, json_object *cfg, uint64_t gen)
{
	switch (j->m.op) {
	case REST_CONFIG_GET:
		finish_json(j, 200, rest_redact(cfg), gen);
		return;
	case REST_TARGETS_LIST:
		finish_json(j, 200, rest_targets(cfg), gen);
		return;
	case REST_TARGET_GET: {
		json_object *t = rest_target(cfg, j->m.name);

		if (!t)
			finish_code(j, 404, "no target %s", j->m.name);
		else
			finish_json(j, 200, t, gen);
		return;
	}
	case REST_LUNS_LIST: {
		json_object *l = rest_luns(cfg, j->m.name);

		if (!l)
			finish_code(j, 404, "no target %s", j->m.name);
		else
			finish_json(j, 200, l, gen);
		return;
	}
	case REST_ACLS_LIST:
		config_found(j, rest_acls(cfg, j->m.name), gen, "target %s", j->m.name);
		return;
	case REST_ACL_GET:
		config_found(j, rest_acl(cfg, j->m.name, j->m.sub), gen, "ACL for %s in %s",
			     j->m.sub, j->m.name);
		return;
	case REST_DISCOVERY_CHAP_GET:
		finish_json(j, 200, rest_discovery_chap(cfg), gen);
		return;
	case REST_PORTALS_LIST:
		config_found(j, rest_portals(cfg, j->m.name), gen, "node %s in the configuration",
			     j->m.name);
		return;
	case REST_PORTAL_GET:
		config_found(j, rest_portal(cfg, j->m.name, j->m.num), gen, "portal %u on node %s",
			     j->m.num, j->m.name);
		return;
	case REST_PORT_GROUPS_LIST:
		finish_json(j, 200, rest_port_groups(cfg), gen);
		return;
	case REST_LUN_GET: {
		json_object *l = rest_lun(cfg, j->m.name, j->m.lun);
		char what[REST_NAME_MAX + 32];

		snprintf(what, sizeof(what), "%u in %s", j->m.lun, j->m.name);
		if (!l) {
			finish_code(j, 404, "no LUN %s", what);
			return;
		}
		if (j->lun_status)
			json_object_object_add(l, "status", json_object_get(j->lun_status));
		finish_json(j, 200, l, gen);
		return;
	}
	default:
		finish_code(j, 500, "%s: not a configuration read", rest_op_name(j->m.op));
		return;
	}
}

/* The write made to cfg (in place); 0 or -errno with e. */
static int config_write(struct job *j, json_object **cfg, struct rest_err *e)
{
	json_object *next = NULL;

	switch (j->m.op) {
	case REST_TARGET_POST:
		return rest_target_create(*cfg, j->body, j->iqn, sizeof(j->iqn), e);
	case REST_TARGET_DELETE:
		return rest_target_delete(*cfg, j->m.name, e);
	case REST_LUN_POST:
		return rest_lun_create(*cfg, j->m.name, j->body, &j->lun, e);
	case REST_LUN_PATCH:
		return rest_lun_patch(*cfg, j->m.name, j->m.lun, j->body, e);
	case REST_LUN_DELETE:
		return rest_lun_delete(*cfg, j->m.name, j->m.lun, e);
	case REST_TARGET_PATCH:
		return rest_target_patch(*cfg, j->m.name, j->body, e);
	case REST_ACL_POST:
		return rest_acl_create(*cfg, j->m.name, j->body, j->iqn, sizeof(j->iqn), e);
	case REST_ACL_PATCH:
		return rest_acl_patch(*cfg, j->m.name, j->m.sub, j->body, e);
	case REST_ACL_DELETE:
		return rest_acl_delete(*cfg, j->m.name, j->m.sub, e);
	case REST_DISCOVERY_CHAP_PUT:
		return rest_discovery_chap_put(*cfg, j->body, e);
	case REST_DISCOVERY_CHAP_DELETE:
		return rest_discovery_chap_delete(*cfg, e);
	case REST_PORTAL_POST:
		return rest_portal_create(*cfg, j->m.name, j->body, &j->lun, e);
	case REST_PORTAL_PATCH:
		return rest_portal_patch(*cfg, j->m.name, j->m.num, j->body, e);
	case REST_PORTAL_DELETE:
		return rest_portal_delete(*cfg, j->m.name, j->m.num, e);
	case REST_CONFIG_PUT:
		if (json_object_deep_copy(j->body, &next, NULL)) {
			e->code = 500;
			snprintf(e->detail, sizeof(e->detail), "out of memory");
			return -ENOMEM;
		}
		rest_keep_secrets(*cfg, next);
		json_object_put(*cfg);
		*cfg = next;
		return 0;
	default:
		e->code = 500;
		snprintf(e->detail, sizeof(e->detail), "not a write");
		return -EINVAL;
	}
}

static void config_done(struct job *j, const Isergw__Ha__ConfigDoc *cd)
{
	Isergw__Ha__ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__ApplyClusterConfig ac = ISERGW__HA__APPLY_CLUSTER_CONFIG__INIT;
	struct rest_err e = { .code = 0 };
	json_object *cfg;

	if (rest_config_parse(cd->config_json, &cfg)) {
		finish_code(j, 500, "%s", "the agent's configuration is not a JSON object");
		return;
	}
	if (!rest_op_writes(j->m.op)) {
		config_read(j, cfg, cd->generation);
		json_object_put(cfg);
		return;
	}
	if (precondition_failed(j, cd->generation)) {
		json_object_put(cfg);
		return;
	}
	if (config_write(j, &cfg, &e)) {
		json_object_put(cfg);
		finish_err(j, &e);
		return;
	}
	json_object_put(j->cfg);
	j->cfg = cfg;
	ac.config_json = (char *)(uintptr_t)json_object_to_json_string_ext(cfg,
				JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	ac.base_generation = cd->generation;
	ac.timeout_ms = j->a->opts.change_wait_ms;
	req.op_case = ISERGW__HA__API_REQUEST__OP_APPLY_CONFIG;
	req.apply_config = &ac;
	GW_INFO(COMP, "%s: applying a configuration on generation %" PRIu64,
		rest_op_name(j->m.op), cd->generation);
	fail_call(j, call(j, S_APPLY, &req, change_timeout(j)));
}

static void applied(struct job *j, const Isergw__Ha__ChangeResult *cr)
{
	struct api_answer ans;
	uint64_t gen = cr->generation;

	switch (j->m.op) {
	case REST_TARGET_POST:
		answer_json(&ans, 201, rest_target(j->cfg, j->iqn));
		snprintf(ans.location, sizeof(ans.location), REST_PREFIX "/targets/%s", j->iqn);
		break;
	case REST_LUN_POST:
		answer_json(&ans, 201, rest_lun(j->cfg, j->m.name, j->lun));
		snprintf(ans.location, sizeof(ans.location), REST_PREFIX "/targets/%s/luns/%u",
			 j->m.name, j->lun);
		break;
	case REST_LUN_PATCH:
		answer_json(&ans, 200, rest_lun(j->cfg, j->m.name, j->m.lun));
		break;
	case REST_CONFIG_PUT:
		answer_json(&ans, 200, rest_redact(j->cfg));
		break;
	case REST_TARGET_PATCH:
		answer_json(&ans, 200, rest_target(j->cfg, j->m.name));
		break;
	case REST_ACL_POST:
		answer_json(&ans, 201, rest_acl(j->cfg, j->m.name, j->iqn));
		snprintf(ans.location, sizeof(ans.location), REST_PREFIX "/targets/%s/acls/%s",
			 j->m.name, j->iqn);
		break;
	case REST_ACL_PATCH:
		answer_json(&ans, 200, rest_acl(j->cfg, j->m.name, j->m.sub));
		break;
	case REST_DISCOVERY_CHAP_PUT:
		answer_json(&ans, 200, rest_discovery_chap(j->cfg));
		break;
	case REST_PORTAL_POST:
		answer_json(&ans, 201, rest_portal(j->cfg, j->m.name, j->lun));
		snprintf(ans.location, sizeof(ans.location), REST_PREFIX "/nodes/%s/portals/%u",
			 j->m.name, j->lun);
		break;
	case REST_PORTAL_PATCH:
		answer_json(&ans, 200, rest_portal(j->cfg, j->m.name, j->m.num));
		break;
	default:
		memset(&ans, 0, sizeof(ans));
		ans.code = 204;
		break;
	}
	rest_etag(gen, ans.etag, sizeof(ans.etag));
	GW_NOTICE(COMP, "%s: generation %" PRIu64 "%s applied by every live node",
		  rest_op_name(j->m.op), gen, cr->changed ? "" : " (unchanged)");
	finish(j, &ans);
}

static void lun_changed(struct job *j, const Isergw__Ha__ChangeResult *cr)
{
	struct api_answer ans;

	if (j->m.op == REST_LUN_DELETE) {
		memset(&ans, 0, sizeof(ans));
		ans.code = 204;
	} else {
		j->lun = cr->lun;
		json_object_put(j->cfg);
		j->cfg = rest_lun_made(j->m.name, j->body, j->lun);
		answer_json(&ans, 201, j->cfg ? rest_lun(j->cfg, j->m.name, j->lun) : NULL);
		snprintf(ans.location, sizeof(ans.location), REST_PREFIX "/targets/%s/luns/%u",
			 j->m.name, j->lun);
	}
	rest_etag(cr->generation, ans.etag, sizeof(ans.etag));
	GW_INFO(COMP, "%s: generation %" PRIu64 " applied by every live node",
		rest_op_name(j->m.op), cr->generation);
	finish(j, &ans);
}

/* The agent refused a LUN change: told as the body's fields. */
static void lun_refused(struct job *j, const Isergw__Ha__ApiReply *rep)
{
	struct rest_err e = { .code = 0 };
	char prefix[64];

	rest_lun_error_prefix(rep->error, prefix, sizeof(prefix));
	rest_agent_refusal(rep->status, rep->error, prefix, &e);
	if (rep->status == -EEXIST && j->m.op == REST_LUN_POST)
		snprintf(e.field, sizeof(e.field), "lun");
	if (rep->status == -ENOSPC) {
		e.code = 409;
		snprintf(e.field, sizeof(e.field), "lun");
	}
	if (rep->status == -ESTALE && !j->if_match) {
		e.code = 409;
		snprintf(e.detail, sizeof(e.detail), "the cluster changed %u times while this "
			 "write was made (%s): try again", j->retries + 1, rep->error);
	}
	finish_err(j, &e);
}

/* where the write landed in the configuration sent (rest_write_prefix_sub) */
static void write_prefix(struct job *j, char *buf, size_t len)
{
	switch (j->m.op) {
	case REST_ACL_POST:
		rest_write_prefix_sub(j->cfg, j->m.op, j->m.name, j->iqn, 0, buf, len);
		return;
	case REST_ACL_PATCH:
		rest_write_prefix_sub(j->cfg, j->m.op, j->m.name, j->m.sub, 0, buf, len);
		return;
	case REST_PORTAL_POST:
	case REST_PORTAL_PATCH:
		rest_write_prefix_sub(j->cfg, j->m.op, j->m.name, NULL,
				      j->m.op == REST_PORTAL_POST ? j->lun : j->m.num, buf, len);
		return;
	default:
		rest_write_prefix(j->cfg, j->m.op, j->m.op == REST_TARGET_POST ? j->iqn :
				  j->m.name, j->m.op == REST_LUN_POST ? j->lun : j->m.lun, buf, len);
		return;
	}
}

static void on_reply(void *arg, int rc, Isergw__Ha__ApiReply *rep, const char *why)
{
	struct job *j = arg;
	struct rest_err e = { .code = 0 };
	char prefix[96] = "";

	if (rc) {
		rest_agent_unreachable(rc, why, &e);
		if (rc == -ETIMEDOUT && (j->step == S_APPLY || j->step == S_CHANGE || j->step == S_LUN))
			snprintf(e.detail + strlen(e.detail), sizeof(e.detail) - strlen(e.detail),
				 " (the change may still be made: see GET /api/v1/cluster)");
		finish_err(j, &e);
		return;
	}
	/* a change not applied everywhere within the wait: made all the same */
	if (rep->status == -ETIMEDOUT && rep->payload_case == ISERGW__HA__API_REPLY__PAYLOAD_CHANGE &&
	    (j->step == S_APPLY || j->step == S_CHANGE || j->step == S_LUN)) {
		finish_accepted(j, rep->change);
		return;
	}
	if (j->step == S_LUN && rep->status == -ESTALE && !j->if_match &&
	    j->retries < STALE_RETRIES) {
		j->retries++;
		GW_INFO(COMP, "%s: the cluster moved on meanwhile (%s): again",
			rest_op_name(j->m.op), rep->error);
		fail_call(j, change_lun(j));
		return;
	}
	if (j->step == S_LUN && rep->status == -EOPNOTSUPP) {
		/* the target has LUNs numbered by their place: the whole configuration, then */
		GW_INFO(COMP, "%s: %s: read, change and apply the configuration",
			rest_op_name(j->m.op), rep->error);
		fail_call(j, get_config(j));
		return;
	}
	if (j->step == S_LUN && rep->status) {
		lun_refused(j, rep);
		return;
	}
	if (rep->status == -ESTALE && j->step == S_APPLY && !j->if_match &&
	    j->retries < STALE_RETRIES) {
		j->retries++;
		GW_INFO(COMP, "%s: the cluster moved on meanwhile (%s): read again",
			rest_op_name(j->m.op), rep->error);
		fail_call(j, get_config(j));
		return;
	}
	if (rep->status) {
		if (j->step == S_APPLY)
			write_prefix(j, prefix, sizeof(prefix));
		rest_agent_refusal(rep->status, rep->error, prefix, &e);
		/* no If-Match, and overtaken every time: a conflict, not a failed precondition */
		if (rep->status == -ESTALE && !j->if_match) {
			e.code = 409;
			snprintf(e.detail, sizeof(e.detail), "the cluster changed %u times while this "
				 "write was made (%s): try again", j->retries + 1, rep->error);
		}
		/* a Move naming a node that does not exist: the body's fault */
		if (j->step == S_CHANGE && rep->status == -ENOENT && j->m.op == REST_DG_PATCH &&
		    strncmp(rep->error, "no device group", 15)) {
			e.code = 422;
			snprintf(e.field, sizeof(e.field), "owner");
		}
		finish_err(j, &e);
		return;
	}
	switch (j->step) {
	case S_STATUS:
	case S_PRECHECK:
		if (rep->payload_case != ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS)
			break;
		if (j->step == S_STATUS) {
			status_done(j, rep->cluster_status);
		} else if (!precondition_failed(j, rep->cluster_status->generation)) {
			fail_call(j, change(j));
		}
		return;
	case S_CACHE:
		if (rep->payload_case != ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS)
			break;
		if (j->m.op == REST_LUN_GET)
			j->lun_status = rest_lun_status(rep->cluster_status, j->m.name, j->m.lun);
		cache_lookup(j, rep->cluster_status->generation, rep->cluster_status->digest);
		return;
	case S_CONFIG:
		if (rep->payload_case != ISERGW__HA__API_REPLY__PAYLOAD_CONFIG)
			break;
		config_done(j, rep->config);
		return;
	case S_APPLY:
		if (rep->payload_case != ISERGW__HA__API_REPLY__PAYLOAD_CHANGE)
			break;
		applied(j, rep->change);
		return;
	case S_LUN:
		if (rep->payload_case != ISERGW__HA__API_REPLY__PAYLOAD_CHANGE)
			break;
		lun_changed(j, rep->change);
		return;
	case S_CHANGE:
		/* made and applied by every live member: the answer is the object now */
		fail_call(j, get_status(j, S_STATUS));
		return;
	}
	finish_code(j, 500, "%s", "the agent's answer has no payload of the kind asked");
}

/* ------------------------------------------------------------ sessions */

static void local_err(struct api_answer *ans, unsigned int code, const char *field,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void local_err(struct api_answer *ans, unsigned int code, const char *field,
		      const char *fmt, ...)
{
	struct rest_err e = { .code = code };
	va_list ap;

	snprintf(e.field, sizeof(e.field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(e.detail, sizeof(e.detail), fmt, ap);
	va_end(ap);
	api_answer_problem(ans, &e);
}

/* isergwd's refusal or silence as HTTP */
static void local_failed(struct api_answer *ans, int rc, const CtlReply *rep, const char *err)
{
	if (rep && rep->status == -ENOENT)
		local_err(ans, 404, NULL, "%s", rep->error && rep->error[0] ? rep->error :
			  "no such session");
	else if (rep)
		local_err(ans, 500, NULL, "isergwd refused: %s", rep->error && rep->error[0] ?
			  rep->error : strerror(-rest_peer_errno(rep->status)));
	else if (rc == -ETIMEDOUT)
		local_err(ans, 504, NULL, "isergwd: %s", err);
	else
		local_err(ans, 503, NULL, "isergwd cannot be reached: %s", err);
}

void api_v1_local(struct api *a, const struct rest_match *m, const char *grace,
		  struct api_answer *ans)
{
	CtlRequest req;
	CtlReply *rep = NULL;
	Isergw__Ctl__ListSessions ls = ISERGW__CTL__LIST_SESSIONS__INIT;
	Isergw__Ctl__Logout lo = ISERGW__CTL__LOGOUT__INIT;
	char err[256] = "", node[256] = "";
	int rc;

	isergw__ctl__request__init(&req);
	if (gethostname(node, sizeof(node) - 1))
		node[0] = '\0';
	if (m->op == REST_SESSION_DELETE) {
		lo.who_case = ISERGW__CTL__LOGOUT__WHO_TSIH;
		lo.tsih = m->num;
		lo.immediate = !grace;
		if (grace) {
			char *end;
			unsigned long g;

			errno = 0;
			g = strtoul(grace, &end, 10);
			if (errno || end == grace || *end || grace[0] == '-' || g > 3600) {
				local_err(ans, 422, "grace_s", "grace_s: %.32s is not 0..3600 seconds",
					  grace);
				return;
			}
			lo.grace_s = (uint32_t)g;
		}
		req.op_case = ISERGW__CTL__REQUEST__OP_LOGOUT;
		req.logout = &lo;
	} else {
		req.op_case = ISERGW__CTL__REQUEST__OP_LIST_SESSIONS;
		req.list_sessions = &ls;
	}
	rc = api_gw_call(a->opts.gw_socket, (int)a->opts.gw_timeout_ms, &req, &rep, err,
			 sizeof(err));
	if (rc || rep->status) {
		local_failed(ans, rc, rc ? NULL : rep, err);
		goto out;
	}
	switch (m->op) {
	case REST_SESSIONS_LIST:
		answer_json(ans, 200, rest_sessions(rep->payload_case ==
				 ISERGW__CTL__REPLY__PAYLOAD_SESSIONS ? rep->sessions : NULL, node));
		break;
	case REST_SESSION_GET: {
		json_object *o = rest_session(rep->payload_case == ISERGW__CTL__REPLY__PAYLOAD_SESSIONS ?
					      rep->sessions : NULL, node, m->num);

		if (o)
			answer_json(ans, 200, o);
		else
			local_err(ans, 404, NULL, "no session with TSIH %u on this node", m->num);
		break;
	}
	default:
		GW_NOTICE(COMP, "session %u: %s", m->num, grace ? "asked to log out" : "dropped");
		memset(ans, 0, sizeof(*ans));
		ans->code = 204;
		break;
	}
out:
	if (rep)
		ctl_reply_free(rep);
}

/* ------------------------------------------------------------ standalone */

/*
 * Without an HA agent (--config FILE): the configuration is isergwd's own
 * file, the durable copy. A read parses it; a write is a read-modify-write
 * of it under one lock (the writers of this process one at a time): the
 * change made to what was read, the result sent to isergwd (ApplyConfig, so
 * that its validator has the last word and the running daemon takes it as
 * a reload), then the file replaced atomically. The ETag "gN" is a digest of
 * the file's bytes (FNV-1a 64), not a counter: it changes with every change,
 * whoever made it (an editor, another isergw-api), and survives restarts.
 */
#define SA_FILE_MAX (16u << 20)

static pthread_mutex_t sa_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t sa_digest(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

static int sa_read(const char *path, char **text, size_t *len)
{
	struct stat st;
	char *b;
	ssize_t n;
	size_t got = 0;
	int fd = gw_open_regular(path, O_RDONLY, &st);

	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > SA_FILE_MAX) {
		close(fd);
		return -EFBIG;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size && (n = read(fd, b + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	b[got] = '\0';
	*text = b;
	*len = got;
	return 0;
}

/* path replaced by text (api_write_file), keeping its mode */
static int sa_write(const char *path, const char *text, size_t len)
{
	struct stat st;

	return api_write_file(path, text, len, stat(path, &st) == 0 ? st.st_mode & 0777 : 0600,
			      NULL, 0);
}

/* isergwd takes text (ApplyConfig on the epoch after its newest): 0, or e filled */
static int sa_apply(struct job *j, const char *text, struct rest_err *e)
{
	CtlRequest req;
	CtlReply *rep = NULL;
	Isergw__Ctl__GetStatus gs = ISERGW__CTL__GET_STATUS__INIT;
	Isergw__Ctl__ApplyConfig ac = ISERGW__CTL__APPLY_CONFIG__INIT;
	char err[256] = "", prefix[96] = "";
	int rc;

	isergw__ctl__request__init(&req);
	req.op_case = ISERGW__CTL__REQUEST__OP_GET_STATUS;
	req.get_status = &gs;
	rc = api_gw_call(j->a->opts.gw_socket, (int)j->a->opts.gw_timeout_ms, &req, &rep, err,
			 sizeof(err));
	if (!rc && (rep->status || rep->payload_case != ISERGW__CTL__REPLY__PAYLOAD_STATUS_INFO))
		rc = rep->status ? rep->status : -EBADMSG;
	if (rc) {
		e->code = rc == -ETIMEDOUT ? 504 : 503;
		e->field[0] = '\0';
		snprintf(e->detail, sizeof(e->detail), "isergwd: %s", err[0] ? err : strerror(-rc));
		goto out;
	}
	ac.epoch = rep->status_info->epoch + 1;
	ac.config_json = (char *)(uintptr_t)text;
	ctl_reply_free(rep);
	rep = NULL;
	isergw__ctl__request__init(&req);
	req.op_case = ISERGW__CTL__REQUEST__OP_APPLY_CONFIG;
	req.apply_config = &ac;
	rc = api_gw_call(j->a->opts.gw_socket, (int)j->a->opts.gw_timeout_ms, &req, &rep, err,
			 sizeof(err));
	if (rc) {
		e->code = rc == -ETIMEDOUT ? 504 : 503;
		e->field[0] = '\0';
		snprintf(e->detail, sizeof(e->detail), "isergwd: %s (the file is unchanged)", err);
		goto out;
	}
	if (rep->status == -ESTALE) {
		/* another client applied a newer epoch between the two calls */
		rc = rep->status;
		e->code = 503;
		e->retry_after_s = 1;
		e->field[0] = '\0';
		snprintf(e->detail, sizeof(e->detail), "isergwd took another configuration meanwhile "
			 "(%s): the file is unchanged, try again", rep->error);
	} else if (rep->status) {
		const char *why = rep->error ? rep->error : "";

		rc = rep->status;
		/* isergwd's validator names the key after this: the field */
		if (!strncmp(why, "invalid configuration: ", 23))
			why += 23;
		write_prefix(j, prefix, sizeof(prefix));
		rest_agent_refusal(rc, why, prefix, e);
	}
out:
	if (rep)
		ctl_reply_free(rep);
	return rc;
}

/*
 * The configuration's directory locked (flock) against other isergw-api
 * processes writing a file there, for at most timeout_ms: its fd, or -errno.
 */
static int sa_dir_lock(const char *path, uint32_t timeout_ms)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int fd;

	snprintf(dir, sizeof(dir), "%.*s", slash && slash != path ? (int)(slash - path) : 1, path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (uint32_t waited = 0; flock(fd, LOCK_EX | LOCK_NB); waited += 10) {
		if (errno != EWOULDBLOCK || waited >= timeout_ms) {
			int rc = errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;

			close(fd);
			return rc;
		}
		usleep(10000);
	}
	return fd;
}

static bool sa_cluster_only(enum rest_op op)
{
	switch (op) {
	case REST_CLUSTER_GET:
	case REST_NODES_LIST:
	case REST_NODE_GET:
	case REST_NODE_PATCH:
	case REST_DGS_LIST:
	case REST_DG_GET:
	case REST_DG_PATCH:
	case REST_OPERATION_GET:
	case REST_PORTALS_LIST:
	case REST_PORTAL_POST:
	case REST_PORTAL_GET:
	case REST_PORTAL_PATCH:
	case REST_PORTAL_DELETE:
	case REST_PORT_GROUPS_LIST:
		return true;
	default:
		return false;
	}
}

/*
 * A LUN's status from the local isergwd (standalone: the only node, named
 * after the host); NULL when isergwd does not answer.
 */
static json_object *sa_lun_status(struct job *j)
{
	Isergw__Ctl__GetStatus gs = ISERGW__CTL__GET_STATUS__INIT;
	Isergw__Ha__ClusterStatus st = ISERGW__HA__CLUSTER_STATUS__INIT;
	Isergw__Ha__MemberStatus m = ISERGW__HA__MEMBER_STATUS__INIT, *mp = &m;
	Isergw__Ha__LunFault *f = NULL, **fp = NULL;
	const Isergw__Ctl__StatusInfo *si;
	json_object *o = NULL;
	CtlReply *rep = NULL;
	char err[256], host[HOST_NAME_MAX + 1] = "";
	CtlRequest req;

	isergw__ctl__request__init(&req);
	req.op_case = ISERGW__CTL__REQUEST__OP_GET_STATUS;
	req.get_status = &gs;
	if (api_gw_call(j->a->opts.gw_socket, (int)j->a->opts.gw_timeout_ms, &req, &rep, err,
			sizeof(err)) || rep->status ||
	    rep->payload_case != ISERGW__CTL__REPLY__PAYLOAD_STATUS_INFO)
		goto out;
	si = rep->status_info;
	f = calloc(si->n_lun_faults + 1, sizeof(*f));
	fp = calloc(si->n_lun_faults + 1, sizeof(*fp));
	if (!f || !fp)
		goto out;
	for (size_t i = 0; i < si->n_lun_faults; i++) {
		isergw__ha__lun_fault__init(&f[i]);
		f[i].target = si->lun_faults[i]->target;
		f[i].lun = si->lun_faults[i]->lun;
		f[i].device_group = si->lun_faults[i]->device_group;
		f[i].state = si->lun_faults[i]->state;
		f[i].reason = si->lun_faults[i]->reason;
		fp[i] = &f[i];
	}
	gethostname(host, sizeof(host) - 1);
	m.name = host;
	m.agent = m.synced = true;
	m.dataplane = (char *)(uintptr_t)"healthy";
	m.luns_online = si->luns_online;
	m.luns_failed = si->lun_faults_total;
	m.luns = fp;
	m.n_luns = si->n_lun_faults;
	st.members = &mp;
	st.n_members = 1;
	o = rest_lun_status(&st, j->m.name, j->m.lun);
out:
	free(f);
	free(fp);
	if (rep)
		ctl_reply_free(rep);
	return o;
}

static void sa_unlock(int lockfd)
{
	close(lockfd);          /* drops the flock */
	pthread_mutex_unlock(&sa_lock);
}

static void sa_run(struct job *j)
{
	const char *path = j->a->opts.config_file;
	Isergw__Ha__ChangeResult cr = ISERGW__HA__CHANGE_RESULT__INIT;
	struct rest_err e = { .code = 0 };
	json_object *cfg = NULL;
	char *text = NULL, *next;
	const char *str;
	size_t len = 0;
	uint64_t gen;
	int rc, lockfd;

	if (sa_cluster_only(j->m.op)) {
		finish_code(j, 404, "%s: there is no cluster here (isergw-api --config: standalone); "
			    "the portals are in the configuration (%s/config)", rest_op_name(j->m.op),
			    REST_PREFIX);
		return;
	}
	pthread_mutex_lock(&sa_lock);
	lockfd = sa_dir_lock(path, j->a->opts.gw_timeout_ms);
	if (lockfd < 0) {
		pthread_mutex_unlock(&sa_lock);
		finish_code(j, 503, "cannot lock the directory of %s: %s", path, strerror(-lockfd));
		return;
	}
	rc = sa_read(path, &text, &len);
	if (rc) {
		sa_unlock(lockfd);
		finish_code(j, 503, "cannot read the configuration %s: %s", path,
			    rc == -GW_ENOTREG ? "not a regular file" : strerror(-rc));
		return;
	}
	gen = sa_digest(text, len);
	if (rest_config_parse(text, &cfg)) {
		sa_unlock(lockfd);
		free(text);
		finish_code(j, 500, "the configuration %s is not a JSON object", path);
		return;
	}
	free(text);
	if (!rest_op_writes(j->m.op)) {
		sa_unlock(lockfd);
		if (j->m.op == REST_LUN_GET)
			j->lun_status = sa_lun_status(j);
		config_read(j, cfg, gen);
		json_object_put(cfg);
		return;
	}
	if (precondition_failed(j, gen)) {
		sa_unlock(lockfd);
		json_object_put(cfg);
		return;
	}
	if (config_write(j, &cfg, &e)) {
		sa_unlock(lockfd);
		json_object_put(cfg);
		finish_err(j, &e);
		return;
	}
	json_object_put(j->cfg);
	j->cfg = cfg;
	str = json_object_to_json_string_ext(cfg, JSON_C_TO_STRING_PRETTY |
					     JSON_C_TO_STRING_SPACED |
					     JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(str);
	next = malloc(len + 2);
	if (!next) {
		sa_unlock(lockfd);
		finish_code(j, 500, "out of memory");
		return;
	}
	memcpy(next, str, len);
	next[len++] = '\n';
	next[len] = '\0';
	if (sa_apply(j, next, &e)) {
		sa_unlock(lockfd);
		free(next);
		finish_err(j, &e);
		return;
	}
	rc = sa_write(path, next, len);
	if (rc) {
		sa_unlock(lockfd);
		free(next);
		GW_ERR(COMP, "%s: isergwd runs the new configuration but %s could not be replaced: "
		       "%s", rest_op_name(j->m.op), path, strerror(-rc));
		finish_code(j, 500, "isergwd runs the new configuration but %s could not be "
			    "replaced: %s", path, strerror(-rc));
		return;
	}
	sa_unlock(lockfd);
	cr.generation = sa_digest(next, len);
	free(next);
	cr.changed = true;
	applied(j, &cr);
}

/* ------------------------------------------------------------ start */

int api_v1_check(const struct rest_match *m, json_object *body, struct rest_err *e)
{
	char owner[REST_NAME_MAX + 1];
	bool drained;

	if (m->op == REST_NODE_PATCH)
		return rest_node_patch(body, &drained, e);
	if (m->op == REST_DG_PATCH)
		return rest_dg_patch(body, owner, sizeof(owner), e);
	if (m->op == REST_LUN_POST) {
		bool has_lun;
		uint32_t lun;

		return rest_lun_body(body, &has_lun, &lun, e);
	}
	return 0;
}

int api_v1_start(struct api *a, const struct rest_match *m, json_object *body, bool if_match,
		 uint64_t gen, api_v1_done done, void *arg)
{
	struct job *j = calloc(1, sizeof(*j));
	struct rest_err e;
	int rc;

	if (!j) {
		json_object_put(body);
		return -ENOMEM;
	}
	j->a = a;
	j->m = *m;
	j->body = body;
	j->if_match = if_match;
	j->gen = gen;
	j->done = done;
	j->arg = arg;
	if (a->opts.config_file[0]) {
		/* on this thread: a local file and the local isergwd, both bounded */
		sa_run(j);
		return 0;
	}
	if (!a->ha) {
		job_free(j);
		return -ENOTCONN;
	}
	switch (m->op) {
	case REST_CLUSTER_GET:
	case REST_NODES_LIST:
	case REST_NODE_GET:
	case REST_DGS_LIST:
	case REST_DG_GET:
	case REST_OPERATION_GET:
		rc = get_status(j, S_STATUS);
		break;
	case REST_NODE_PATCH:
	case REST_DG_PATCH:
		if ((m->op == REST_NODE_PATCH && rest_node_patch(body, &j->drained, &e)) ||
		    (m->op == REST_DG_PATCH && rest_dg_patch(body, j->owner, sizeof(j->owner), &e))) {
			job_free(j);
			return -EINVAL;
		}
		rc = if_match && gen ? get_status(j, S_PRECHECK) : change(j);
		break;
	case REST_LUN_POST:
	case REST_LUN_DELETE:
		rc = change_lun(j);
		break;
	default:
		/* a LUN's answer carries its state on the nodes, which is not the document's */
		j->cacheable = !rest_op_writes(m->op) && m->op != REST_LUN_GET;
		rc = j->cacheable || m->op == REST_LUN_GET ? get_status(j, S_CACHE) : get_config(j);
		break;
	}
	if (rc)
		job_free(j);
	return rc;
}
