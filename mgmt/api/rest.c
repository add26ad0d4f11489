/* SPDX-License-Identifier: Apache-2.0 */
/* The REST resources of isergw-api, the pure half (rest.h, docs/api.md). */
#include "rest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/names.h"

static int fail(struct rest_err *e, int rc, unsigned int code, const char *field,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail(struct rest_err *e, int rc, unsigned int code, const char *field,
		const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	e->retry_after_s = 0;
	snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(e->detail, sizeof(e->detail), fmt, ap);
	va_end(ap);
	return rc;
}

/* ------------------------------------------------------------ routing */

#define M_GET "GET, HEAD"

/* A path pattern: literal segments, "{}" a name, "{#}" a LUN number. */
struct route {
	const char *pattern;
	const char *allow;
	enum rest_op get, post, put, patch, del;
};

static const struct route route_table[] = {
	{ "openapi.json", M_GET, REST_OPENAPI, 0, 0, 0, 0 },
	{ "cluster", M_GET, REST_CLUSTER_GET, 0, 0, 0, 0 },
	{ "nodes", M_GET, REST_NODES_LIST, 0, 0, 0, 0 },
	{ "nodes/{}", M_GET ", PATCH", REST_NODE_GET, 0, 0, REST_NODE_PATCH, 0 },
	{ "device-groups", M_GET, REST_DGS_LIST, 0, 0, 0, 0 },
	{ "device-groups/{}", M_GET ", PATCH", REST_DG_GET, 0, 0, REST_DG_PATCH, 0 },
	{ "targets", M_GET ", POST", REST_TARGETS_LIST, REST_TARGET_POST, 0, 0, 0 },
	{ "targets/{}", M_GET ", PATCH, DELETE", REST_TARGET_GET, 0, 0, REST_TARGET_PATCH,
	  REST_TARGET_DELETE },
	{ "targets/{}/acls", M_GET ", POST", REST_ACLS_LIST, REST_ACL_POST, 0, 0, 0 },
	{ "targets/{}/acls/{}", M_GET ", PATCH, DELETE", REST_ACL_GET, 0, 0, REST_ACL_PATCH,
	  REST_ACL_DELETE },
	{ "targets/{}/luns", M_GET ", POST", REST_LUNS_LIST, REST_LUN_POST, 0, 0, 0 },
	{ "targets/{}/luns/{#}", M_GET ", PATCH, DELETE", REST_LUN_GET, 0, 0, REST_LUN_PATCH,
	  REST_LUN_DELETE },
	{ "config", M_GET ", PUT", REST_CONFIG_GET, 0, REST_CONFIG_PUT, 0, 0 },
	{ "operations/{}", M_GET, REST_OPERATION_GET, 0, 0, 0, 0 },
	{ "discovery-chap", M_GET ", PUT, DELETE", REST_DISCOVERY_CHAP_GET, 0,
	  REST_DISCOVERY_CHAP_PUT, 0, REST_DISCOVERY_CHAP_DELETE },
	{ "nodes/{}/portals", M_GET ", POST", REST_PORTALS_LIST, REST_PORTAL_POST, 0, 0, 0 },
	{ "nodes/{}/portals/{n}", M_GET ", PATCH, DELETE", REST_PORTAL_GET, 0, 0, REST_PORTAL_PATCH,
	  REST_PORTAL_DELETE },
	{ "port-groups", M_GET, REST_PORT_GROUPS_LIST, 0, 0, 0, 0 },
	{ "sessions", M_GET, REST_SESSIONS_LIST, 0, 0, 0, 0 },
	{ "sessions/{n}", M_GET ", DELETE", REST_SESSION_GET, 0, 0, 0, REST_SESSION_DELETE },
};

static const char *const op_names[REST_OP_N] = {
	[REST_NONE] = "none",
	[REST_OPENAPI] = "get openapi",
	[REST_CLUSTER_GET] = "get cluster",
	[REST_NODES_LIST] = "list nodes",
	[REST_NODE_GET] = "get node",
	[REST_NODE_PATCH] = "patch node",
	[REST_DGS_LIST] = "list device groups",
	[REST_DG_GET] = "get device group",
	[REST_DG_PATCH] = "patch device group",
	[REST_TARGETS_LIST] = "list targets",
	[REST_TARGET_POST] = "create target",
	[REST_TARGET_GET] = "get target",
	[REST_TARGET_DELETE] = "delete target",
	[REST_LUNS_LIST] = "list luns",
	[REST_LUN_POST] = "create lun",
	[REST_LUN_GET] = "get lun",
	[REST_LUN_PATCH] = "patch lun",
	[REST_LUN_DELETE] = "delete lun",
	[REST_CONFIG_GET] = "export config",
	[REST_CONFIG_PUT] = "import config",
	[REST_OPERATION_GET] = "get operation",
	[REST_TARGET_PATCH] = "patch target",
	[REST_ACLS_LIST] = "list acls",
	[REST_ACL_POST] = "create acl",
	[REST_ACL_GET] = "get acl",
	[REST_ACL_PATCH] = "patch acl",
	[REST_ACL_DELETE] = "delete acl",
	[REST_DISCOVERY_CHAP_GET] = "get discovery chap",
	[REST_DISCOVERY_CHAP_PUT] = "set discovery chap",
	[REST_DISCOVERY_CHAP_DELETE] = "delete discovery chap",
	[REST_PORTALS_LIST] = "list portals",
	[REST_PORTAL_POST] = "create portal",
	[REST_PORTAL_GET] = "get portal",
	[REST_PORTAL_PATCH] = "patch portal",
	[REST_PORTAL_DELETE] = "delete portal",
	[REST_PORT_GROUPS_LIST] = "list port groups",
	[REST_SESSIONS_LIST] = "list sessions",
	[REST_SESSION_GET] = "get session",
	[REST_SESSION_DELETE] = "logout session",
};

int rest_route_at(size_t i, const char **pattern, const char **allow)
{
	if (i >= sizeof(route_table) / sizeof(route_table[0]))
		return -ENOENT;
	*pattern = route_table[i].pattern;
	*allow = route_table[i].allow;
	return 0;
}

const char *rest_op_name(enum rest_op op)
{
	return (unsigned int)op < REST_OP_N ? op_names[op] : "?";
}

bool rest_op_has_body(enum rest_op op)
{
	return op == REST_NODE_PATCH || op == REST_DG_PATCH || op == REST_TARGET_POST ||
	       op == REST_LUN_POST || op == REST_LUN_PATCH || op == REST_CONFIG_PUT ||
	       op == REST_TARGET_PATCH || op == REST_ACL_POST || op == REST_ACL_PATCH ||
	       op == REST_DISCOVERY_CHAP_PUT || op == REST_PORTAL_POST || op == REST_PORTAL_PATCH;
}

bool rest_op_writes(enum rest_op op)
{
	return rest_op_has_body(op) || op == REST_TARGET_DELETE || op == REST_LUN_DELETE ||
	       op == REST_ACL_DELETE || op == REST_DISCOVERY_CHAP_DELETE ||
	       op == REST_PORTAL_DELETE;
}

bool rest_op_local(enum rest_op op)
{
	return op == REST_SESSIONS_LIST || op == REST_SESSION_GET || op == REST_SESSION_DELETE;
}

/* LUN numbers in a path: decimal, no sign, no leading zeros, 0..REST_LUN_MAX */
static int parse_lun(const char *s, size_t n, uint32_t *lun)
{
	uint32_t v = 0;

	if (!n || n > 5 || (n > 1 && s[0] == '0'))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v > REST_LUN_MAX)
		return -EINVAL;
	*lun = v;
	return 0;
}

/* a number 1..65535 in a path: decimal, no sign, no leading zeros */
static int parse_num(const char *s, size_t n, uint32_t *out)
{
	uint32_t v = 0;

	if (!n || n > 5 || s[0] == '0')
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*out = v;
	return 0;
}

/* path (below the prefix) against one pattern */
static bool match(const char *pat, const char *path, struct rest_match *m)
{
	unsigned int names = 0;

	while (*pat) {
		const char *pend = strchr(pat, '/'), *send = strchr(path, '/');
		size_t pl = pend ? (size_t)(pend - pat) : strlen(pat);
		size_t sl = send ? (size_t)(send - path) : strlen(path);

		if (!sl)
			return false;
		if (pl == 2 && !memcmp(pat, "{}", 2)) {
			char *to = names++ ? m->sub : m->name;

			if (sl > REST_NAME_MAX)
				return false;
			memcpy(to, path, sl);
			to[sl] = '\0';
		} else if (pl == 3 && !memcmp(pat, "{#}", 3)) {
			if (parse_lun(path, sl, &m->lun))
				return false;
		} else if (pl == 3 && !memcmp(pat, "{n}", 3)) {
			if (parse_num(path, sl, &m->num))
				return false;
		} else if (pl != sl || memcmp(pat, path, sl)) {
			return false;
		}
		pat += pl;
		path += sl;
		if (!*pat)
			break;
		if (*path != '/')
			return false;
		pat++;
		path++;
	}
	return !*path;
}

int rest_route(const char *method, const char *path, struct rest_match *m)
{
	size_t pl = strlen(REST_PREFIX);

	memset(m, 0, sizeof(*m));
	if (strncmp(path, REST_PREFIX "/", pl + 1))
		return -ENOENT;
	path += pl + 1;
	for (size_t i = 0; i < sizeof(route_table) / sizeof(route_table[0]); i++) {
		const struct route *r = &route_table[i];
		enum rest_op op = REST_NONE;

		memset(m, 0, sizeof(*m));
		if (!match(r->pattern, path, m))
			continue;
		m->allow = r->allow;
		if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
			op = r->get;
		else if (!strcmp(method, "POST"))
			op = r->post;
		else if (!strcmp(method, "PUT"))
			op = r->put;
		else if (!strcmp(method, "PATCH"))
			op = r->patch;
		else if (!strcmp(method, "DELETE"))
			op = r->del;
		if (op == REST_NONE)
			return -EOPNOTSUPP;
		m->op = op;
		return 0;
	}
	memset(m, 0, sizeof(*m));
	return -ENOENT;
}

/* ------------------------------------------------------------ ETags */

void rest_etag(uint64_t generation, char *buf, size_t len)
{
	snprintf(buf, len, "\"g%" PRIu64 "\"", generation);
}

int rest_if_match(const char *h, uint64_t *gen)
{
	const char *p;
	uint64_t v = 0;
	size_t n;

	while (*h == ' ' || *h == '\t')
		h++;
	n = strlen(h);
	while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		n--;
	if (n == 1 && h[0] == '*') {
		*gen = 0;
		return 0;
	}
	/* "gN": a quote, g, 1..20 digits without a leading zero, a quote */
	if (n < 4 || n > 23 || h[0] != '"' || h[1] != 'g' || h[n - 1] != '"' ||
	    (h[2] == '0' && n > 4))
		return -EINVAL;
	for (p = h + 2; p < h + n - 1; p++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (*p < '0' || *p > '9' || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (!v)
		return -EINVAL;
	*gen = v;
	return 0;
}

/* ------------------------------------------------------------ bodies */

int rest_parse_body(const char *body, size_t len, json_object **out, struct rest_err *e)
{
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	json_object *o;
	size_t end, line = 1, col = 1;
	char path[sizeof(e->field)], why[64];

	*out = NULL;
	if (len > REST_BODY_MAX)
		return fail(e, -EMSGSIZE, 413, NULL, "the body is larger than %u bytes",
			    REST_BODY_MAX);
	tok = json_tokener_new();
	if (!tok)
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	o = json_tokener_parse_ex(tok, body ? body : "", (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (o && jerr == json_tokener_success) {
		/* only white space may follow the value */
		for (size_t i = end; i < len; i++)
			if (!strchr(" \t\r\n", body[i])) {
				end = i;
				jerr = json_tokener_error_parse_unexpected;
				break;
			}
	}
	if (!o || jerr != json_tokener_success) {
		json_object_put(o);
		for (size_t i = 0; i < end && i < len; i++) {
			if (body[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		return fail(e, -EBADMSG, 400, NULL, "the body is not JSON: line %zu column %zu: %s",
			    line, col, !len ? "empty" : jerr == json_tokener_continue ?
			    "unexpected end of the body" : json_tokener_error_desc(jerr));
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return fail(e, -EINVAL, 422, "", "the body must be a JSON object");
	}
	/* what is stored is rendered again: every string UTF-8, no NUL */
	if (gw_json_strings_check(o, "", path, sizeof(path), why, sizeof(why))) {
		json_object_put(o);
		return fail(e, -EINVAL, 422, path, "%s: %s", path[0] ? path : "the body", why);
	}
	*out = o;
	return 0;
}

/* ------------------------------------------------------------ schemas */

/* T_IQN, T_ALIAS, T_PATH: strings that are names (util/names.h), checked as isergwd checks them */
enum ftype { T_STR, T_INT, T_BOOL, T_SIZE, T_CHAP, T_ACLS, T_LUNS, T_IQN, T_ALIAS, T_PATH };

struct fdef {
	const char *key;
	enum ftype t;
	bool required;
};

static const struct fdef chap_f[] = {
	{ "user", T_STR, false }, { "secret", T_STR, false }, { NULL, 0, false },
};
static const struct fdef acl_f[] = {
	{ "initiator", T_IQN, true }, { "chap", T_CHAP, false }, { NULL, 0, false },
};
static const struct fdef lun_f[] = {
	{ "lun", T_INT, false }, { "path", T_PATH, true }, { "size", T_SIZE, false },
	{ "block_size", T_INT, false }, { "serial", T_STR, false }, { "naa", T_STR, false },
	{ "readonly", T_BOOL, false }, { "write_cache", T_BOOL, false },
	{ "thin", T_BOOL, false }, { "vendor", T_STR, false }, { "product", T_STR, false },
	{ "max_transfer", T_SIZE, false }, { "backend_sessions", T_INT, false },
	{ "backend_hold_s", T_INT, false }, { "backend_timeout_s", T_INT, false },
	{ "backend_read_chunk", T_SIZE, false }, { "backend_initiator", T_IQN, false },
	{ "device_group", T_STR, false }, { NULL, 0, false },
};
static const struct fdef target_f[] = {
	{ "iqn", T_IQN, true }, { "alias", T_ALIAS, false }, { "chap", T_CHAP, false },
	{ "mutual_chap", T_CHAP, false }, { "acls", T_ACLS, false },
	{ "max_recv_dsl", T_INT, false }, { "max_burst", T_INT, false },
	{ "first_burst", T_INT, false }, { "max_outstanding_r2t", T_INT, false },
	{ "initial_r2t", T_BOOL, false }, { "immediate_data", T_BOOL, false },
	{ "queue_depth", T_INT, false }, { "luns", T_LUNS, false }, { NULL, 0, false },
};

static const char *tname(json_object *v)
{
	return v ? json_type_to_name(json_object_get_type(v)) : "null";
}

static void join(char *out, size_t len, const char *path, const char *key)
{
	snprintf(out, len, "%s%s%s", path, path[0] ? "." : "", key);
}

static int check_obj(json_object *o, const struct fdef *f, const char *path, struct rest_err *e);

static int check_arr(json_object *v, const struct fdef *f, const char *path, struct rest_err *e)
{
	char p[256];

	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *el = json_object_array_get_idx(v, i);
		int rc;

		snprintf(p, sizeof(p), "%s[%zu]", path, i);
		if (!json_object_is_type(el, json_type_object))
			return fail(e, -EINVAL, 422, p, "%s: expected an object, got %s", p,
				    tname(el));
		rc = check_obj(el, f, p, e);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * A JSON integer as it was sent. json-c keeps an int64 or a uint64 and
 * saturates past their ends without a word, so 2^64 reads as 2^64 - 1: at
 * the ends the text says "or more" / "or less".
 */
static const char *int_text(json_object *v, char *buf, size_t len)
{
	int64_t i = json_object_get_int64(v);
	uint64_t u;

	if (i == INT64_MIN) {
		snprintf(buf, len, "%" PRId64 " or less", i);
	} else if (i == INT64_MAX) {
		u = json_object_get_uint64(v);
		snprintf(buf, len, "%" PRIu64 "%s", u, u == UINT64_MAX ? " or more" : "");
	} else {
		snprintf(buf, len, "%" PRId64, i);
	}
	return buf;
}

/* Whether json-c saturated v: no field takes a number at either end of 64 bits. */
static bool int_saturated(json_object *v)
{
	int64_t i = json_object_get_int64(v);

	return i == INT64_MIN || (i == INT64_MAX && json_object_get_uint64(v) == UINT64_MAX);
}

static int check_field(json_object *v, const struct fdef *d, const char *p, struct rest_err *e)
{
	static const char *const want[] = {
		[T_STR] = "a string", [T_INT] = "an integer", [T_BOOL] = "a boolean",
		[T_SIZE] = "an integer or a string", [T_CHAP] = "an object",
		[T_ACLS] = "an array", [T_LUNS] = "an array", [T_IQN] = "a string",
		[T_ALIAS] = "a string", [T_PATH] = "a string",
	};
	static const enum gw_name_kind kinds[] = {
		[T_IQN] = GW_NAME_ISCSI, [T_ALIAS] = GW_NAME_ALIAS, [T_PATH] = GW_NAME_PATH,
	};
	char msg[384];
	bool ok;

	switch (d->t) {
	case T_STR:
	case T_IQN:
	case T_ALIAS:
	case T_PATH:
		ok = json_object_is_type(v, json_type_string);
		break;
	case T_INT:
		ok = json_object_is_type(v, json_type_int);
		break;
	case T_BOOL:
		ok = json_object_is_type(v, json_type_boolean);
		break;
	case T_SIZE:
		ok = json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_string);
		break;
	case T_CHAP:
		ok = json_object_is_type(v, json_type_object);
		break;
	default:
		ok = json_object_is_type(v, json_type_array);
		break;
	}
	if (!ok)
		return fail(e, -EINVAL, 422, p, "%s: expected %s, got %s", p, want[d->t], tname(v));
	if (json_object_is_type(v, json_type_int) && int_saturated(v)) {
		char n[48];

		return fail(e, -ERANGE, 422, p, "%s: %s is out of range (not a 64-bit integer)", p,
			    int_text(v, n, sizeof(n)));
	}
	if ((d->t == T_IQN || d->t == T_ALIAS || d->t == T_PATH) &&
	    gw_name_check(kinds[d->t], json_object_get_string(v),
			  (size_t)json_object_get_string_len(v), msg, sizeof(msg)))
		return fail(e, -EINVAL, 422, p, "%s: %s", p, msg);
	if (d->t == T_CHAP)
		return check_obj(v, chap_f, p, e);
	if (d->t == T_ACLS)
		return check_arr(v, acl_f, p, e);
	if (d->t == T_LUNS)
		return check_arr(v, lun_f, p, e);
	return 0;
}

/* Unknown keys, wrong types and missing required keys, naming the field. */
static int check_obj(json_object *o, const struct fdef *f, const char *path, struct rest_err *e)
{
	char p[256];

	json_object_object_foreach(o, key, v) {
		const struct fdef *d;
		int rc;

		for (d = f; d->key && strcmp(d->key, key); d++)
			;
		join(p, sizeof(p), path, key);
		if (!d->key)
			return fail(e, -EINVAL, 422, p, "%s: unknown field", p);
		rc = check_field(v, d, p, e);
		if (rc)
			return rc;
	}
	for (const struct fdef *d = f; d->key; d++) {
		if (d->required && !json_object_object_get_ex(o, d->key, NULL)) {
			join(p, sizeof(p), path, d->key);
			return fail(e, -EINVAL, 422, p, "%s: required", p);
		}
	}
	return 0;
}

/* ------------------------------------------------------------ from the agent */

static void add_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}

static void add_u64(json_object *o, const char *k, uint64_t v)
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
	add_str(o, "target", f->target);
	add_u64(o, "lun", f->lun);
	add_str(o, "device_group", f->device_group);
	add_str(o, "state", f->state);
	add_str(o, "reason", f->reason);
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
	add_str(o, "state", m->dataplane[0] ? m->dataplane : "unknown");
	add_u64(o, "luns_online", m->luns_online);
	add_u64(o, "luns_failed", m->luns_failed);
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
	add_str(o, "name", m->name);
	add_u64(o, "nodeid", m->nodeid);
	add_u64(o, "tpg_id", m->tpg_id);
	add_bool(o, "corosync_member", m->corosync_member);
	add_bool(o, "agent", m->agent);
	add_bool(o, "synced", m->synced);
	add_bool(o, "drained", m->drained);
	add_u64(o, "applied_generation", m->applied_generation);
	add_u64(o, "last_heard_ms", m->last_heard_ms);
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
		*why = "more LUNs fail on the node than it reports one by one";
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
		add_str(n, "node", m->name);
		add_str(n, "state", state);
		if (why[0])
			add_str(n, "reason", why);
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
	add_str(o, "state", !known ? "unknown" : !bad ? "online" : online ? "degraded" : "failed");
	json_object_object_add(o, "nodes", nodes);
	add_str(ready, "type", "Ready");
	add_str(ready, "status", !known ? "Unknown" : online ? "True" : "False");
	add_str(ready, "reason", !known ? "NotReported" : !bad ? "Online" :
		online ? "FailedOnSomeNodes" : "FailedOnAllNodes");
	add_str(ready, "message", bad ? msg : !known ? "no node reports its LUNs" :
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
	add_str(o, "name", st->cluster_name);
	add_str(o, "node", st->node_name);
	add_u64(o, "nodeid", st->nodeid);
	add_bool(o, "quorate", st->quorate);
	add_str(o, "phase", st->phase);
	add_u64(o, "generation", st->generation);
	add_str(o, "digest", st->digest);
	add_u64(o, "protocol", st->protocol);
	add_u64(o, "expected_votes", st->expected_votes);
	add_u64(o, "total_votes", st->total_votes);
	add_bool(o, "isergwd_connected", st->isergwd_connected);
	add_u64(o, "isergwd_epoch", st->isergwd_epoch);
	add_u64(o, "lease_remaining_ms", st->lease_remaining_ms);
	for (size_t i = 0; i < st->n_members; i++)
		json_object_array_add(ms, member(st->members[i]));
	json_object_object_add(o, "members", ms);
	return o;
}

static json_object *list_of(json_object *items)
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
	return list_of(a);
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
	add_str(o, "name", d->name);
	add_str(o, "owner", d->owner);
	add_str(o, "preferred_owner", d->preferred_owner);
	add_str(o, "failback", d->failback);
	for (size_t i = 0; i < d->n_states; i++) {
		json_object *n = json_object_new_object();

		if (!n)
			continue;
		add_str(n, "node", d->states[i]->node);
		add_u64(n, "tpg_id", d->states[i]->tpg_id);
		add_str(n, "state", d->states[i]->state);
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
	return list_of(a);
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
	add_str(o, "id", id);
	add_u64(o, "generation", generation);
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

/* ------------------------------------------------------------ configuration */

int rest_config_parse(const char *config_json, json_object **out)
{
	json_object *o = json_tokener_parse(config_json && config_json[0] ? config_json : "{}");

	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return -EBADMSG;
	}
	*out = o;
	return 0;
}

/* "iscsi://user%secret@host/..." -> "iscsi://user@host/..." (malloc'd), or NULL: nothing to cut */
static char *redact_url(const char *s)
{
	const char *auth = s + strlen("iscsi://"), *at, *pct, *slash;
	char *out;

	if (strncmp(s, "iscsi://", strlen("iscsi://")))
		return NULL;
	slash = strchr(auth, '/');
	at = strchr(auth, '@');
	if (!at || (slash && slash < at))
		return NULL;
	pct = memchr(auth, '%', (size_t)(at - auth));
	if (!pct)
		return NULL;
	out = malloc(strlen(s) + 1);
	if (!out)
		return NULL;
	memcpy(out, s, (size_t)(pct - s));
	strcpy(out + (pct - s), at);
	return out;
}

static void redact_in(json_object *o)
{
	if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			redact_in(json_object_array_get_idx(o, i));
		return;
	}
	if (!json_object_is_type(o, json_type_object))
		return;
	json_object_object_del(o, "secret");
	json_object_object_foreach(o, key, v) {
		if (!strcmp(key, "path") && json_object_is_type(v, json_type_string)) {
			char *r = redact_url(json_object_get_string(v));

			if (r) {
				json_object_set_string(v, r);
				free(r);
			}
		} else {
			redact_in(v);
		}
	}
}

json_object *rest_redact(json_object *o)
{
	json_object *c = NULL;

	if (!o || json_object_deep_copy(o, &c, NULL))
		return NULL;
	redact_in(c);
	return c;
}

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static json_object *arr_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}

static json_object *obj_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

/* the element of array a whose string key equals val, and its index */
static json_object *find_by(json_object *a, const char *key, const char *val, size_t *idx)
{
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *el = json_object_array_get_idx(a, i);
		const char *s = str_of(el, key);

		if (s && !strcmp(s, val)) {
			if (idx)
				*idx = i;
			return el;
		}
	}
	return NULL;
}

/* A LUN's number: its "lun", or its index in the array (isergwd's default). */
static int64_t lun_number(json_object *l, size_t idx)
{
	json_object *v;

	if (json_object_object_get_ex(l, "lun", &v) && json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	return (int64_t)idx;
}

static json_object *find_lun(json_object *t, uint32_t lun, size_t *idx)
{
	json_object *a = arr_of(t, "luns");

	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *el = json_object_array_get_idx(a, i);

		if (json_object_is_type(el, json_type_object) && lun_number(el, i) == (int64_t)lun) {
			if (idx)
				*idx = i;
			return el;
		}
	}
	return NULL;
}

static void keep_chap(json_object *cur, json_object *next, const char *key)
{
	json_object *c = obj_of(cur, key), *n = obj_of(next, key), *s;
	const char *cu, *nu;

	if (!c || !n || json_object_object_get_ex(n, "secret", NULL) ||
	    !json_object_object_get_ex(c, "secret", &s))
		return;
	cu = str_of(c, "user");
	nu = str_of(n, "user");
	if (!cu || !nu || strcmp(cu, nu))
		return;
	json_object_object_add(n, "secret", json_object_get(s));
}

void rest_keep_secrets(json_object *cur, json_object *next)
{
	json_object *nt = arr_of(next, "targets");

	keep_chap(cur, next, "discovery_chap");
	for (size_t i = 0; nt && i < json_object_array_length(nt); i++) {
		json_object *t = json_object_array_get_idx(nt, i), *ct, *na, *nl;
		const char *iqn = str_of(t, "iqn");

		if (!iqn || !(ct = find_by(arr_of(cur, "targets"), "iqn", iqn, NULL)))
			continue;
		keep_chap(ct, t, "chap");
		keep_chap(ct, t, "mutual_chap");
		na = arr_of(t, "acls");
		for (size_t k = 0; na && k < json_object_array_length(na); k++) {
			json_object *acl = json_object_array_get_idx(na, k);
			const char *ini = str_of(acl, "initiator");
			json_object *cacl = ini ? find_by(arr_of(ct, "acls"), "initiator", ini, NULL) :
					    NULL;

			if (cacl)
				keep_chap(cacl, acl, "chap");
		}
		nl = arr_of(t, "luns");
		for (size_t k = 0; nl && k < json_object_array_length(nl); k++) {
			json_object *l = json_object_array_get_idx(nl, k), *cl;
			const char *np, *cp;
			char *r;

			if (!json_object_is_type(l, json_type_object))
				continue;
			cl = find_lun(ct, (uint32_t)lun_number(l, k), NULL);
			np = str_of(l, "path");
			cp = str_of(cl, "path");
			if (!np || !cp || !(r = redact_url(cp)))
				continue;
			if (!strcmp(r, np))
				json_object_object_add(l, "path", json_object_new_string(cp));
			free(r);
		}
	}
}

json_object *rest_targets(json_object *cfg)
{
	json_object *a = arr_of(cfg, "targets");
	json_object *items = a ? rest_redact(a) : json_object_new_array();

	return list_of(items);
}

json_object *rest_target(json_object *cfg, const char *iqn)
{
	json_object *t = find_by(arr_of(cfg, "targets"), "iqn", iqn, NULL);

	return t ? rest_redact(t) : NULL;
}

json_object *rest_luns(json_object *cfg, const char *iqn)
{
	json_object *t = find_by(arr_of(cfg, "targets"), "iqn", iqn, NULL), *a, *items;

	if (!t)
		return NULL;
	a = arr_of(t, "luns");
	items = json_object_new_array();
	/* every LUN with its number, given or implied */
	for (size_t i = 0; items && a && i < json_object_array_length(a); i++) {
		json_object *l = rest_redact(json_object_array_get_idx(a, i));

		if (!l)
			continue;
		if (!json_object_object_get_ex(l, "lun", NULL))
			json_object_object_add(l, "lun", json_object_new_int64((int64_t)i));
		json_object_array_add(items, l);
	}
	return list_of(items);
}

json_object *rest_lun(json_object *cfg, const char *iqn, uint32_t lun)
{
	json_object *t = find_by(arr_of(cfg, "targets"), "iqn", iqn, NULL), *l;

	if (!t || !(l = find_lun(t, lun, NULL)))
		return NULL;
	l = rest_redact(l);
	if (l && !json_object_object_get_ex(l, "lun", NULL))
		json_object_object_add(l, "lun", json_object_new_int64((int64_t)lun));
	return l;
}

/* the array cfg[key], made when absent */
static json_object *arr_make(json_object *cfg, const char *key)
{
	json_object *a = arr_of(cfg, key);

	if (a)
		return a;
	a = json_object_new_array();
	if (a)
		json_object_object_add(cfg, key, a);
	return a;
}

int rest_target_create(json_object *cfg, json_object *body, char *iqn, size_t iqnlen,
		       struct rest_err *e)
{
	json_object *a, *copy = NULL;
	const char *name;
	int rc;

	rc = check_obj(body, target_f, "", e);
	if (rc)
		return rc;
	name = str_of(body, "iqn");
	if (find_by(arr_of(cfg, "targets"), "iqn", name, NULL))
		return fail(e, -EEXIST, 409, "iqn", "iqn: a target %s exists already", name);
	a = arr_make(cfg, "targets");
	if (!a || json_object_deep_copy(body, &copy, NULL) || json_object_array_add(a, copy)) {
		json_object_put(copy);
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	snprintf(iqn, iqnlen, "%s", name);
	return 0;
}

static json_object *target_or_404(json_object *cfg, const char *iqn, size_t *idx,
				  struct rest_err *e)
{
	json_object *t = find_by(arr_of(cfg, "targets"), "iqn", iqn, idx);

	if (!t)
		fail(e, -ENOENT, 404, NULL, "no target %s", iqn);
	return t;
}

int rest_target_delete(json_object *cfg, const char *iqn, struct rest_err *e)
{
	size_t idx;

	if (!target_or_404(cfg, iqn, &idx, e))
		return -ENOENT;
	json_object_array_del_idx(arr_of(cfg, "targets"), idx, 1);
	return 0;
}

int rest_lun_create(json_object *cfg, const char *iqn, json_object *body, uint32_t *lun,
		    struct rest_err *e)
{
	json_object *t = target_or_404(cfg, iqn, NULL, e), *a, *copy = NULL, *v;
	uint32_t n = 0;
	int rc;

	if (!t)
		return -ENOENT;
	rc = check_obj(body, lun_f, "", e);
	if (rc)
		return rc;
	if (json_object_object_get_ex(body, "lun", &v)) {
		int64_t want = json_object_get_int64(v);
		char nb[48];

		if (want < 0 || want > REST_LUN_MAX)
			return fail(e, -EINVAL, 422, "lun", "lun: %s is out of range (0..%u)",
				    int_text(v, nb, sizeof(nb)), REST_LUN_MAX);
		n = (uint32_t)want;
		if (find_lun(t, n, NULL))
			return fail(e, -EEXIST, 409, "lun", "lun: LUN %u of %s exists already", n,
				    iqn);
	} else {
		while (n <= REST_LUN_MAX && find_lun(t, n, NULL))
			n++;
		if (n > REST_LUN_MAX)
			return fail(e, -ENOSPC, 409, "lun", "lun: %s has no free LUN number", iqn);
	}
	/*
	 * The LUNs already there keep the numbers they had: one without "lun"
	 * (its index) gets it written down before the array changes.
	 */
	a = arr_make(t, "luns");
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *l = json_object_array_get_idx(a, i);

		if (json_object_is_type(l, json_type_object) &&
		    !json_object_object_get_ex(l, "lun", NULL))
			json_object_object_add(l, "lun", json_object_new_int64((int64_t)i));
	}
	if (!a || json_object_deep_copy(body, &copy, NULL))
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	json_object_object_add(copy, "lun", json_object_new_int64(n));
	if (json_object_array_add(a, copy)) {
		json_object_put(copy);
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	*lun = n;
	return 0;
}

/*
 * A LUN grows online (isergwd extends its file on the reload, hosts get
 * CAPACITY DATA HAS CHANGED) but never shrinks: data past the new end would
 * be lost under the hosts' file systems. 0 (size unset either side) counts
 * as no size.
 */
static int lun_no_shrink(json_object *cur, json_object *next, struct rest_err *e)
{
	json_object *cv, *nv;
	uint64_t cb, nb;

	if (!json_object_object_get_ex(cur, "size", &cv) ||
	    !json_object_object_get_ex(next, "size", &nv))
		return 0;
	if (rest_size_parse(nv, &nb))
		return fail(e, -EINVAL, 422, "size", "size: not a size (bytes, or a number with "
			    "K, M, G or T)");
	if (rest_size_parse(cv, &cb) || !nb || nb >= cb)
		return 0;
	return fail(e, -EINVAL, 422, "size", "size: %" PRIu64 " bytes is less than %" PRIu64
		    ": a LUN grows online but never shrinks", nb, cb);
}

int rest_lun_patch(json_object *cfg, const char *iqn, uint32_t lun, json_object *patch,
		   struct rest_err *e)
{
	json_object *t = target_or_404(cfg, iqn, NULL, e), *l, *merged = NULL;
	size_t idx;
	int rc;

	if (!t)
		return -ENOENT;
	l = find_lun(t, lun, &idx);
	if (!l)
		return fail(e, -ENOENT, 404, NULL, "no LUN %u in %s", lun, iqn);
	/* RFC 7396 on a copy; the copy replaces the LUN once it passes */
	if (json_object_deep_copy(l, &merged, NULL))
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	json_object_object_add(merged, "lun", json_object_new_int64(lun));
	json_object_object_foreach(patch, key, v) {
		if (!strcmp(key, "lun") && !(json_object_is_type(v, json_type_int) &&
					     json_object_get_int64(v) == (int64_t)lun)) {
			json_object_put(merged);
			return fail(e, -EINVAL, 422, "lun", "lun: the number of a LUN cannot change "
				    "(delete it and create another)");
		}
		if (!v) {
			json_object_object_del(merged, key);
		} else {
			json_object *c = NULL;

			if (json_object_deep_copy(v, &c, NULL)) {
				json_object_put(merged);
				return fail(e, -ENOMEM, 500, NULL, "out of memory");
			}
			json_object_object_add(merged, key, c);
		}
	}
	rc = check_obj(merged, lun_f, "", e);
	if (!rc)
		rc = lun_no_shrink(l, merged, e);
	if (rc) {
		json_object_put(merged);
		return rc;
	}
	json_object_array_put_idx(arr_of(t, "luns"), idx, merged);
	return 0;
}

int rest_lun_delete(json_object *cfg, const char *iqn, uint32_t lun, struct rest_err *e)
{
	json_object *t = target_or_404(cfg, iqn, NULL, e), *a;
	size_t idx;

	if (!t)
		return -ENOENT;
	if (!find_lun(t, lun, &idx))
		return fail(e, -ENOENT, 404, NULL, "no LUN %u in %s", lun, iqn);
	a = arr_of(t, "luns");
	/* the LUNs after it keep their numbers */
	for (size_t i = idx + 1; i < json_object_array_length(a); i++) {
		json_object *l = json_object_array_get_idx(a, i);

		if (json_object_is_type(l, json_type_object) &&
		    !json_object_object_get_ex(l, "lun", NULL))
			json_object_object_add(l, "lun", json_object_new_int64((int64_t)i));
	}
	json_object_array_del_idx(a, idx, 1);
	return 0;
}

static void key_path(const char *error, char *out, size_t len);

int rest_lun_body(json_object *body, bool *has_lun, uint32_t *lun, struct rest_err *e)
{
	json_object *v;
	int rc = check_obj(body, lun_f, "", e);

	if (rc)
		return rc;
	*has_lun = json_object_object_get_ex(body, "lun", &v);
	*lun = 0;
	if (*has_lun) {
		int64_t want = json_object_get_int64(v);
		char nb[48];

		if (want < 0 || want > REST_LUN_MAX)
			return fail(e, -EINVAL, 422, "lun", "lun: %s is out of range (0..%u)",
				    int_text(v, nb, sizeof(nb)), REST_LUN_MAX);
		*lun = (uint32_t)want;
	}
	return 0;
}

/* ------------------------------------------------------------ merge patches */

/*
 * RFC 7396 on target (in place): objects merge recursively, null removes, any
 * other value replaces. 0 or -ENOMEM.
 */
static int merge_patch(json_object *target, json_object *patch)
{
	json_object_object_foreach(patch, key, v) {
		json_object *cur, *c = NULL;

		if (!v) {
			json_object_object_del(target, key);
			continue;
		}
		if (json_object_is_type(v, json_type_object) &&
		    json_object_object_get_ex(target, key, &cur) &&
		    json_object_is_type(cur, json_type_object)) {
			if (merge_patch(cur, v))
				return -ENOMEM;
			continue;
		}
		if (json_object_is_type(v, json_type_object)) {
			/* a new object: its nulls drop out (RFC 7396 MergePatch({}, v)) */
			c = json_object_new_object();
			if (!c || merge_patch(c, v)) {
				json_object_put(c);
				return -ENOMEM;
			}
		} else if (json_object_deep_copy(v, &c, NULL)) {
			return -ENOMEM;
		}
		json_object_object_add(target, key, c);
	}
	return 0;
}

json_object *rest_lun_made(const char *iqn, json_object *body, uint32_t lun)
{
	json_object *cfg = json_object_new_object(), *targets = json_object_new_array();
	json_object *t = json_object_new_object(), *luns = json_object_new_array(), *l = NULL;

	if (!cfg || !targets || !t || !luns || json_object_deep_copy(body, &l, NULL))
		goto err;
	json_object_object_add(l, "lun", json_object_new_int64((int64_t)lun));
	json_object_array_add(luns, l);
	json_object_object_add(t, "iqn", json_object_new_string(iqn));
	json_object_object_add(t, "luns", luns);
	json_object_array_add(targets, t);
	json_object_object_add(cfg, "targets", targets);
	return cfg;
err:
	json_object_put(cfg);
	json_object_put(targets);
	json_object_put(t);
	json_object_put(luns);
	return NULL;
}

void rest_lun_error_prefix(const char *error, char *buf, size_t len)
{
	char path[256];
	const char *l, *end;

	buf[0] = '\0';
	key_path(error ? error : "", path, sizeof(path));
	if (strncmp(path, "targets[", 8) || !(l = strstr(path, "].luns[")) ||
	    !(end = strchr(l + 7, ']')) || (size_t)(end + 1 - path) >= len)
		return;
	memcpy(buf, path, (size_t)(end + 1 - path));
	buf[end + 1 - path] = '\0';
}

/* ------------------------------------------------------------ targets, ACLs */

int rest_target_patch(json_object *cfg, const char *iqn, json_object *patch, struct rest_err *e)
{
	json_object *t = target_or_404(cfg, iqn, NULL, e), *merged = NULL, *v;
	size_t idx;
	int rc;

	if (!t)
		return -ENOENT;
	find_by(arr_of(cfg, "targets"), "iqn", iqn, &idx);
	if (json_object_object_get_ex(patch, "iqn", &v) &&
	    !(json_object_is_type(v, json_type_string) && !strcmp(json_object_get_string(v), iqn)))
		return fail(e, -EINVAL, 422, "iqn", "iqn: the name of a target cannot change "
			    "(create another)");
	if (json_object_object_get_ex(patch, "luns", NULL))
		return fail(e, -EINVAL, 422, "luns", "luns: changed through %s/targets/%s/luns",
			    REST_PREFIX, iqn);
	if (json_object_object_get_ex(patch, "acls", NULL))
		return fail(e, -EINVAL, 422, "acls", "acls: changed through %s/targets/%s/acls",
			    REST_PREFIX, iqn);
	/* the types of the patch first: its nulls are not values of the target */
	json_object_object_foreach(patch, key, pv) {
		const struct fdef *d;
		char p[256];

		for (d = target_f; d->key && strcmp(d->key, key); d++)
			;
		snprintf(p, sizeof(p), "%s", key);
		if (!d->key)
			return fail(e, -EINVAL, 422, p, "%s: unknown field", p);
		if (pv && d->t == T_CHAP && json_object_is_type(pv, json_type_object)) {
			/* a CHAP object of a patch may name a null (remove) */
			json_object_object_foreach(pv, ck, cv) {
				char cp[256];

				snprintf(cp, sizeof(cp), "%s.%s", key, ck);
				if (strcmp(ck, "user") && strcmp(ck, "secret"))
					return fail(e, -EINVAL, 422, cp, "%s: unknown field", cp);
				if (cv && !json_object_is_type(cv, json_type_string))
					return fail(e, -EINVAL, 422, cp, "%s: expected a string, got "
						    "%s", cp, tname(cv));
			}
		} else if (pv && (rc = check_field(pv, d, p, e))) {
			return rc;
		}
	}
	if (json_object_deep_copy(t, &merged, NULL) || merge_patch(merged, patch)) {
		json_object_put(merged);
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	rc = check_obj(merged, target_f, "", e);
	if (rc) {
		json_object_put(merged);
		return rc;
	}
	json_object_array_put_idx(arr_of(cfg, "targets"), idx, merged);
	return 0;
}

json_object *rest_acls(json_object *cfg, const char *iqn)
{
	json_object *t = find_by(arr_of(cfg, "targets"), "iqn", iqn, NULL), *a;

	if (!t)
		return NULL;
	a = arr_of(t, "acls");
	return list_of(a ? rest_redact(a) : json_object_new_array());
}

json_object *rest_acl(json_object *cfg, const char *iqn, const char *initiator)
{
	json_object *t = find_by(arr_of(cfg, "targets"), "iqn", iqn, NULL);
	json_object *acl = t ? find_by(arr_of(t, "acls"), "initiator", initiator, NULL) : NULL;

	return acl ? rest_redact(acl) : NULL;
}

int rest_acl_create(json_object *cfg, const char *iqn, json_object *body, char *ini,
		    size_t inilen, struct rest_err *e)
{
	json_object *t = target_or_404(cfg, iqn, NULL, e), *a, *copy = NULL;
	const char *name;
	int rc;

	if (!t)
		return -ENOENT;
	rc = check_obj(body, acl_f, "", e);
	if (rc)
		return rc;
	name = str_of(body, "initiator");
	if (find_by(arr_of(t, "acls"), "initiator", name, NULL))
		return fail(e, -EEXIST, 409, "initiator", "initiator: %s has an ACL in %s already",
			    name, iqn);
	a = arr_make(t, "acls");
	if (!a || json_object_deep_copy(body, &copy, NULL) || json_object_array_add(a, copy)) {
		json_object_put(copy);
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	snprintf(ini, inilen, "%s", name);
	return 0;
}

static json_object *acl_or_404(json_object *cfg, const char *iqn, const char *initiator,
			       json_object **t, size_t *idx, struct rest_err *e)
{
	json_object *acl;

	*t = target_or_404(cfg, iqn, NULL, e);
	if (!*t)
		return NULL;
	acl = find_by(arr_of(*t, "acls"), "initiator", initiator, idx);
	if (!acl)
		fail(e, -ENOENT, 404, NULL, "no ACL for %s in %s", initiator, iqn);
	return acl;
}

int rest_acl_patch(json_object *cfg, const char *iqn, const char *initiator,
		   json_object *patch, struct rest_err *e)
{
	json_object *t, *acl = NULL, *merged = NULL, *v;
	size_t idx;
	int rc;

	acl = acl_or_404(cfg, iqn, initiator, &t, &idx, e);
	if (!acl)
		return -ENOENT;
	if (json_object_object_get_ex(patch, "initiator", &v) &&
	    !(json_object_is_type(v, json_type_string) &&
	      !strcmp(json_object_get_string(v), initiator)))
		return fail(e, -EINVAL, 422, "initiator", "initiator: the initiator of an ACL "
			    "cannot change (delete it and create another)");
	json_object_object_foreach(patch, key, pv) {
		if (strcmp(key, "initiator") && strcmp(key, "chap"))
			return fail(e, -EINVAL, 422, key, "%s: unknown field", key);
		if (pv && !strcmp(key, "chap") && !json_object_is_type(pv, json_type_object))
			return fail(e, -EINVAL, 422, key, "chap: expected an object, got %s",
				    tname(pv));
	}
	if (json_object_deep_copy(acl, &merged, NULL) || merge_patch(merged, patch)) {
		json_object_put(merged);
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	rc = check_obj(merged, acl_f, "", e);
	if (rc) {
		json_object_put(merged);
		return rc;
	}
	json_object_array_put_idx(arr_of(t, "acls"), idx, merged);
	return 0;
}

int rest_acl_delete(json_object *cfg, const char *iqn, const char *initiator,
		    struct rest_err *e)
{
	json_object *t;
	size_t idx;

	if (!acl_or_404(cfg, iqn, initiator, &t, &idx, e))
		return -ENOENT;
	json_object_array_del_idx(arr_of(t, "acls"), idx, 1);
	return 0;
}

/* ------------------------------------------------------------ discovery CHAP */

json_object *rest_discovery_chap(json_object *cfg)
{
	json_object *c = obj_of(cfg, "discovery_chap");

	return c ? rest_redact(c) : json_object_new_object();
}

int rest_discovery_chap_put(json_object *cfg, json_object *body, struct rest_err *e)
{
	json_object *cur = obj_of(cfg, "discovery_chap"), *copy = NULL, *s;
	const char *u = str_of(body, "user"), *cu = str_of(cur, "user");
	int rc;

	rc = check_obj(body, chap_f, "", e);
	if (rc)
		return rc;
	if (!u || !u[0])
		return fail(e, -EINVAL, 422, "user", "user: required (DELETE removes discovery "
			    "CHAP)");
	if (json_object_deep_copy(body, &copy, NULL))
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	/* the same user without a secret: the stored secret stays */
	if (!json_object_object_get_ex(copy, "secret", NULL)) {
		if (!cu || strcmp(cu, u) || !json_object_object_get_ex(cur, "secret", &s)) {
			json_object_put(copy);
			return fail(e, -EINVAL, 422, "secret", "secret: required for a new user");
		}
		json_object_object_add(copy, "secret", json_object_get(s));
	}
	json_object_object_add(cfg, "discovery_chap", copy);
	return 0;
}

int rest_discovery_chap_delete(json_object *cfg, struct rest_err *e)
{
	if (!obj_of(cfg, "discovery_chap"))
		return fail(e, -ENOENT, 404, NULL, "discovery CHAP is not set");
	json_object_object_del(cfg, "discovery_chap");
	return 0;
}

/* ------------------------------------------------------------ portals, port groups */

static const struct fdef portal_f[] = {
	{ "url", T_STR, true }, { "rel_port_id", T_INT, false }, { NULL, 0, false },
};

static int64_t int_of(json_object *o, const char *key, int64_t dflt)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return dflt;
	return json_object_get_int64(v);
}

static json_object *find_portal(json_object *node, uint32_t rel, size_t *idx)
{
	json_object *a = arr_of(node, "portals");

	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *p = json_object_array_get_idx(a, i);

		if (int_of(p, "rel_port_id", -1) == (int64_t)rel) {
			if (idx)
				*idx = i;
			return p;
		}
	}
	return NULL;
}

/* the node (and its portal) that has rel_port_id rel anywhere in the cluster */
static const char *rel_owner(json_object *cfg, uint32_t rel)
{
	json_object *ns = arr_of(cfg, "nodes");

	for (size_t i = 0; ns && i < json_object_array_length(ns); i++) {
		json_object *n = json_object_array_get_idx(ns, i);

		if (find_portal(n, rel, NULL))
			return str_of(n, "name") ? str_of(n, "name") : "?";
	}
	return NULL;
}

json_object *rest_portals(json_object *cfg, const char *node)
{
	json_object *n = find_by(arr_of(cfg, "nodes"), "name", node, NULL), *a;

	if (!n)
		return NULL;
	a = arr_of(n, "portals");
	return list_of(a ? rest_redact(a) : json_object_new_array());
}

json_object *rest_portal(json_object *cfg, const char *node, uint32_t rel)
{
	json_object *n = find_by(arr_of(cfg, "nodes"), "name", node, NULL);
	json_object *p = n ? find_portal(n, rel, NULL) : NULL;

	return p ? rest_redact(p) : NULL;
}

static json_object *node_or_404(json_object *cfg, const char *node, struct rest_err *e)
{
	json_object *n = find_by(arr_of(cfg, "nodes"), "name", node, NULL);

	if (!n)
		fail(e, -ENOENT, 404, NULL, "no node %s in the configuration", node);
	return n;
}

int rest_portal_create(json_object *cfg, const char *node, json_object *body, uint32_t *rel,
		       struct rest_err *e)
{
	json_object *n = node_or_404(cfg, node, e), *a, *copy = NULL, *v;
	const char *who;
	uint32_t r = 1;
	int rc;

	if (!n)
		return -ENOENT;
	rc = check_obj(body, portal_f, "", e);
	if (rc)
		return rc;
	if (json_object_object_get_ex(body, "rel_port_id", &v)) {
		int64_t want = json_object_get_int64(v);
		char nb[48];

		if (want < 1 || want > 65535)
			return fail(e, -EINVAL, 422, "rel_port_id", "rel_port_id: %s is out of range "
				    "(1..65535)", int_text(v, nb, sizeof(nb)));
		r = (uint32_t)want;
		who = rel_owner(cfg, r);
		if (who)
			return fail(e, -EEXIST, 409, "rel_port_id", "rel_port_id: %u is a portal of "
				    "node %s already (unique in the cluster)", r, who);
	} else {
		while (r <= 65535 && rel_owner(cfg, r))
			r++;
		if (r > 65535)
			return fail(e, -ENOSPC, 409, "rel_port_id", "rel_port_id: none is free");
	}
	a = arr_make(n, "portals");
	if (!a || json_object_deep_copy(body, &copy, NULL))
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	json_object_object_add(copy, "rel_port_id", json_object_new_int64(r));
	if (json_object_array_add(a, copy)) {
		json_object_put(copy);
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	*rel = r;
	return 0;
}

static json_object *portal_or_404(json_object *cfg, const char *node, uint32_t rel,
				  json_object **n, size_t *idx, struct rest_err *e)
{
	json_object *p;

	*n = node_or_404(cfg, node, e);
	if (!*n)
		return NULL;
	p = find_portal(*n, rel, idx);
	if (!p)
		fail(e, -ENOENT, 404, NULL, "no portal %u on node %s", rel, node);
	return p;
}

int rest_portal_patch(json_object *cfg, const char *node, uint32_t rel, json_object *patch,
		      struct rest_err *e)
{
	json_object *n, *p, *merged = NULL;
	size_t idx;
	int rc;

	p = portal_or_404(cfg, node, rel, &n, &idx, e);
	if (!p)
		return -ENOENT;
	json_object_object_foreach(patch, key, v) {
		if (!strcmp(key, "rel_port_id")) {
			if (!(json_object_is_type(v, json_type_int) &&
			      json_object_get_int64(v) == (int64_t)rel))
				return fail(e, -EINVAL, 422, key, "rel_port_id: the id of a portal "
					    "cannot change (delete it and create another)");
		} else if (strcmp(key, "url")) {
			return fail(e, -EINVAL, 422, key, "%s: unknown field", key);
		} else if (!v) {
			return fail(e, -EINVAL, 422, key, "url: required (it cannot be removed)");
		}
	}
	if (json_object_deep_copy(p, &merged, NULL) || merge_patch(merged, patch)) {
		json_object_put(merged);
		return fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	rc = check_obj(merged, portal_f, "", e);
	if (rc) {
		json_object_put(merged);
		return rc;
	}
	json_object_array_put_idx(arr_of(n, "portals"), idx, merged);
	return 0;
}

int rest_portal_delete(json_object *cfg, const char *node, uint32_t rel, struct rest_err *e)
{
	json_object *n;
	size_t idx;

	if (!portal_or_404(cfg, node, rel, &n, &idx, e))
		return -ENOENT;
	json_object_array_del_idx(arr_of(n, "portals"), idx, 1);
	return 0;
}

json_object *rest_port_groups(json_object *cfg)
{
	json_object *ns = arr_of(cfg, "nodes"), *items = json_object_new_array();

	for (size_t i = 0; items && ns && i < json_object_array_length(ns); i++) {
		json_object *n = json_object_array_get_idx(ns, i), *ps = arr_of(n, "portals");
		json_object *g, *ids;

		if (!ps || !json_object_array_length(ps))
			continue;
		g = json_object_new_object();
		ids = json_object_new_array();
		if (!g || !ids) {
			json_object_put(g);
			json_object_put(ids);
			continue;
		}
		add_u64(g, "tpg_id", (uint64_t)int_of(n, "tpg_id", 0));
		add_str(g, "node", str_of(n, "name"));
		for (size_t k = 0; k < json_object_array_length(ps); k++)
			json_object_array_add(ids, json_object_new_int64(
				int_of(json_object_array_get_idx(ps, k), "rel_port_id", 0)));
		json_object_object_add(g, "rel_port_ids", ids);
		json_object_array_add(items, g);
	}
	return list_of(items);
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
	add_u64(o, "tsih", s->tsih);
	add_str(o, "node", node);
	add_str(o, "type", s->type);
	add_str(o, "target", s->target);
	add_str(o, "initiator", s->initiator);
	add_str(o, "isid", s->isid);
	add_str(o, "portal", s->portal);
	add_str(o, "transport", s->transport);
	for (size_t i = 0; i < s->n_connections; i++) {
		const Isergw__Ctl__Connection *c = s->connections[i];
		json_object *co = json_object_new_object();

		if (!co)
			continue;
		add_u64(co, "cid", c->cid);
		add_str(co, "peer", c->peer);
		add_str(co, "local", c->local);
		add_str(co, "state", c->state);
		add_u64(co, "login_time", c->login_time);
		json_object_array_add(cs, co);
	}
	json_object_object_add(o, "connections", cs);
	if (s->stats) {
		add_u64(o, "reads", s->stats->cmds_read);
		add_u64(o, "writes", s->stats->cmds_write);
		add_u64(o, "bytes_read", s->stats->bytes_read);
		add_u64(o, "bytes_written", s->stats->bytes_written);
	}
	return o;
}

json_object *rest_sessions(const Isergw__Ctl__SessionList *sl, const char *node)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; a && sl && i < sl->n_sessions; i++)
		json_object_array_add(a, session(sl->sessions[i], node));
	return list_of(a);
}

json_object *rest_session(const Isergw__Ctl__SessionList *sl, const char *node, uint32_t tsih)
{
	for (size_t i = 0; sl && i < sl->n_sessions; i++)
		if (sl->sessions[i]->tsih == tsih)
			return session(sl->sessions[i], node);
	return NULL;
}

/* ------------------------------------------------------------ LUN sizes */

int rest_size_parse(json_object *v, uint64_t *bytes)
{
	const char *s;
	char *end;
	unsigned long long n;
	unsigned int shift = 0;

	if (json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);

		if (i < 0)
			return -EINVAL;
		*bytes = (uint64_t)i;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	s = json_object_get_string(v);
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1])
		return -EINVAL;
	if (shift && n > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = (uint64_t)n << shift;
	return 0;
}

int rest_node_patch(json_object *body, bool *drained, struct rest_err *e)
{
	bool have = false;

	json_object_object_foreach(body, key, v) {
		if (strcmp(key, "drained"))
			return fail(e, -EINVAL, 422, key, "%s: unknown field (only drained can "
				    "change)", key);
		if (!json_object_is_type(v, json_type_boolean))
			return fail(e, -EINVAL, 422, key, "drained: expected a boolean, got %s",
				    tname(v));
		*drained = json_object_get_boolean(v);
		have = true;
	}
	if (!have)
		return fail(e, -EINVAL, 422, "drained", "drained: required");
	return 0;
}

int rest_force_param(const char *v, bool *force, struct rest_err *e)
{
	*force = v && !strcmp(v, "true");
	if (!v || *force || !strcmp(v, "false"))
		return 0;
	return fail(e, -EINVAL, 422, "force", "force: %s is not true or false",
		    gw_utf8_valid(v, strnlen(v, 32), NULL) ? v : "the value");
}

int rest_dg_patch(json_object *body, char *owner, size_t len, struct rest_err *e)
{
	bool have = false;

	json_object_object_foreach(body, key, v) {
		if (strcmp(key, "owner"))
			return fail(e, -EINVAL, 422, key, "%s: unknown field (only owner can "
				    "change)", key);
		if (!json_object_is_type(v, json_type_string))
			return fail(e, -EINVAL, 422, key, "owner: expected a string, got %s",
				    tname(v));
		if (!json_object_get_string_len(v) || (size_t)json_object_get_string_len(v) >= len)
			return fail(e, -EINVAL, 422, key, "owner: a node name of 1..%zu bytes",
				    len - 1);
		snprintf(owner, len, "%s", json_object_get_string(v));
		have = true;
	}
	if (!have)
		return fail(e, -EINVAL, 422, "owner", "owner: required");
	return 0;
}

int rest_write_prefix(json_object *cfg, enum rest_op op, const char *iqn, uint32_t lun,
		      char *buf, size_t len)
{
	size_t ti, li;
	json_object *t;

	buf[0] = '\0';
	switch (op) {
	case REST_TARGET_POST:
		if (!find_by(arr_of(cfg, "targets"), "iqn", iqn, &ti))
			return -ENOENT;
		snprintf(buf, len, "targets[%zu]", ti);
		return 0;
	case REST_LUN_POST:
	case REST_LUN_PATCH:
		t = find_by(arr_of(cfg, "targets"), "iqn", iqn, &ti);
		if (!t || !find_lun(t, lun, &li))
			return -ENOENT;
		snprintf(buf, len, "targets[%zu].luns[%zu]", ti, li);
		return 0;
	case REST_TARGET_PATCH:
		if (!find_by(arr_of(cfg, "targets"), "iqn", iqn, &ti))
			return -ENOENT;
		snprintf(buf, len, "targets[%zu]", ti);
		return 0;
	case REST_DISCOVERY_CHAP_PUT:
		snprintf(buf, len, "discovery_chap");
		return 0;
	default:
		return 0;
	}
}

int rest_write_prefix_sub(json_object *cfg, enum rest_op op, const char *name, const char *sub,
			  uint32_t num, char *buf, size_t len)
{
	size_t ti, ai, ni, pi;
	json_object *o;

	buf[0] = '\0';
	switch (op) {
	case REST_ACL_POST:
	case REST_ACL_PATCH:
		o = find_by(arr_of(cfg, "targets"), "iqn", name, &ti);
		if (!o || !find_by(arr_of(o, "acls"), "initiator", sub, &ai))
			return -ENOENT;
		snprintf(buf, len, "targets[%zu].acls[%zu]", ti, ai);
		return 0;
	case REST_PORTAL_POST:
	case REST_PORTAL_PATCH:
		o = find_by(arr_of(cfg, "nodes"), "name", name, &ni);
		if (!o || !find_portal(o, num, &pi))
			return -ENOENT;
		snprintf(buf, len, "nodes[%zu].portals[%zu]", ni, pi);
		return 0;
	default:
		return rest_write_prefix(cfg, op, name, num, buf, len);
	}
}

/* ------------------------------------------------------------ the agent's refusals */

/* "nodes[K] (NAME): PATH: why" or "PATH: why" -> PATH, when it looks like one */
static void key_path(const char *error, char *out, size_t len)
{
	const char *p = error, *end;

	out[0] = '\0';
	if (!strncmp(p, "nodes[", 6)) {
		const char *q = strstr(p, "): ");

		if (q && q - p < 80 && strchr(p, ' ') && strchr(p, ' ') + 1 < q)
			p = q + 3;
	}
	end = strstr(p, ": ");
	if (!end || end == p || (size_t)(end - p) >= len)
		return;
	for (const char *c = p; c < end; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || strchr("._[]-", *c)))
			return;
	memcpy(out, p, (size_t)(end - p));
	out[end - p] = '\0';
}

int rest_peer_errno(int32_t status)
{
	return status < 0 && status >= -4095 ? status : -EPROTO;
}

void rest_agent_refusal(int status, const char *error, const char *prefix, struct rest_err *e)
{
	char path[256];
	size_t pl = prefix ? strlen(prefix) : 0;
	const char *field = "";

	status = rest_peer_errno(status);
	error = error && error[0] ? error : strerror(-status);
	switch (status) {
	case -ENOLCK:
		fail(e, status, 503, NULL, "no quorum: %s", error);
		e->retry_after_s = 5;
		return;
	case -EAGAIN:
		fail(e, status, 503, NULL, "the cluster is re-forming: %s", error);
		e->retry_after_s = 1;
		return;
	case -ESTALE:
		fail(e, status, 412, NULL, "%s", error);
		return;
	case -EINVAL:
	case -EBADMSG:
	case -ERANGE:
		key_path(error, path, sizeof(path));
		if (pl && !strncmp(path, prefix, pl) && (path[pl] == '.' || !path[pl]))
			field = path[pl] ? path + pl + 1 : "";
		else
			field = path;
		fail(e, status, 422, field, "%s", error);
		return;
	case -EMSGSIZE:
		fail(e, status, 413, NULL, "%s", error);
		return;
	case -ENOENT:
		fail(e, status, 404, NULL, "%s", error);
		return;
	case -EHOSTDOWN:
	case -EPERM:
	case -EBUSY:
	case -EEXIST:
		fail(e, status, 409, NULL, "%s", error);
		return;
	case -ETIMEDOUT:
		fail(e, status, 504, NULL, "%s", error);
		return;
	default:
		fail(e, status, 500, NULL, "the HA agent refused: %s", error);
		return;
	}
}

void rest_agent_unreachable(int rc, const char *why, struct rest_err *e)
{
	if (rc == -ETIMEDOUT)
		fail(e, rc, 504, NULL, "the HA agent did not answer in time: %s", why);
	else
		fail(e, rc, 503, NULL, "the HA agent cannot be reached: %s", why);
}
