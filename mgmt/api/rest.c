/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The REST resources of isergw-api, the pure half (rest.h, docs/api.md): the
 * routes, ETags and If-Match, request bodies and parameters, and the
 * agent's refusals mapped to HTTP. The schemas are in rest_schema.c, what is
 * rendered from the agent's answers in rest_render.c, the configuration's
 * edits in rest_edit.c and rest_portal.c.
 */
#include "rest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/names.h"
#include "rest_priv.h"

int rest_fail(struct rest_err *e, int rc, unsigned int code, const char *field,
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
		return rest_fail(e, -EMSGSIZE, 413, NULL, "the body is larger than %u bytes",
			    REST_BODY_MAX);
	tok = json_tokener_new();
	if (!tok)
		return rest_fail(e, -ENOMEM, 500, NULL, "out of memory");
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
		return rest_fail(e, -EBADMSG, 400, NULL, "the body is not JSON: line %zu column %zu: %s",
			    line, col, !len ? "empty" : jerr == json_tokener_continue ?
			    "unexpected end of the body" : json_tokener_error_desc(jerr));
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return rest_fail(e, -EINVAL, 422, "", "the body must be a JSON object");
	}
	/* what is stored is rendered again: every string UTF-8, no NUL */
	if (gw_json_strings_check(o, "", path, sizeof(path), why, sizeof(why))) {
		json_object_put(o);
		return rest_fail(e, -EINVAL, 422, path, "%s: %s", path[0] ? path : "the body", why);
	}
	*out = o;
	return 0;
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

/* A body of one key, key, of JSON type t: its value in *v. */
static int one_key(json_object *body, const char *key, enum gw_ftype t, json_object **v,
		   struct rest_err *e)
{
	const struct gw_field f = { .key = key, .type = t };

	*v = NULL;
	json_object_object_foreach(body, k, val) {
		int rc;

		if (strcmp(k, key))
			return rest_fail(e, -EINVAL, 422, k, "%s: unknown field (only %s can change)",
					 k, key);
		rc = rest_check_field(val, &f, key, e);
		if (rc)
			return rc;
		*v = val;
	}
	if (!*v)
		return rest_fail(e, -EINVAL, 422, key, "%s: required", key);
	return 0;
}

int rest_node_patch(json_object *body, bool *drained, struct rest_err *e)
{
	json_object *v;
	int rc = one_key(body, "drained", GW_FT_BOOLEAN, &v, e);

	if (!rc)
		*drained = json_object_get_boolean(v);
	return rc;
}

int rest_force_param(const char *v, bool *force, struct rest_err *e)
{
	*force = v && !strcmp(v, "true");
	if (!v || *force || !strcmp(v, "false"))
		return 0;
	return rest_fail(e, -EINVAL, 422, "force", "force: %s is not true or false",
		    gw_utf8_valid(v, strnlen(v, 32), NULL) ? v : "the value");
}

int rest_dg_patch(json_object *body, char *owner, size_t len, struct rest_err *e)
{
	json_object *v;
	int rc = one_key(body, "owner", GW_FT_STRING, &v, e);

	if (rc)
		return rc;
	if (!json_object_get_string_len(v) || (size_t)json_object_get_string_len(v) >= len)
		return rest_fail(e, -EINVAL, 422, "owner", "owner: a node name of 1..%zu bytes",
				 len - 1);
	snprintf(owner, len, "%s", json_object_get_string(v));
	return 0;
}

int rest_write_prefix(json_object *cfg, enum rest_op op, const char *iqn, uint32_t lun,
		      char *buf, size_t len)
{
	return rest_write_prefix_sub(cfg, op, iqn, NULL, lun, buf, len);
}

int rest_write_prefix_sub(json_object *cfg, enum rest_op op, const char *name, const char *sub,
			  uint32_t num, char *buf, size_t len)
{
	const char *arr = "targets", *key = "iqn", *child = NULL;
	json_object *(*child_by_num)(json_object *o, uint32_t num, size_t *idx) = NULL;
	json_object *o;
	size_t oi, ci;

	buf[0] = '\0';
	switch (op) {
	case REST_TARGET_POST:
	case REST_TARGET_PATCH:
		break;
	case REST_LUN_POST:
	case REST_LUN_PATCH:
		child = "luns";
		child_by_num = rest_find_lun;
		break;
	case REST_ACL_POST:
	case REST_ACL_PATCH:
		child = "acls";
		break;
	case REST_PORTAL_POST:
	case REST_PORTAL_PATCH:
		arr = "nodes";
		key = "name";
		child = "portals";
		child_by_num = rest_find_portal;
		break;
	case REST_DISCOVERY_CHAP_PUT:
		snprintf(buf, len, "discovery_chap");
		return 0;
	default:
		return 0;
	}
	o = rest_find_by(rest_arr_of(cfg, arr), key, name, &oi);
	if (!o)
		return -ENOENT;
	if (!child) {
		snprintf(buf, len, "%s[%zu]", arr, oi);
		return 0;
	}
	if (!(child_by_num ? child_by_num(o, num, &ci) :
	      rest_find_by(rest_arr_of(o, child), "initiator", sub, &ci)))
		return -ENOENT;
	snprintf(buf, len, "%s[%zu].%s[%zu]", arr, oi, child, ci);
	return 0;
}

/* ------------------------------------------------------------ the agent's refusals */

/* "nodes[K] (NAME): PATH: why" or "PATH: why" -> PATH, when it looks like one */
void rest_key_path(const char *error, char *out, size_t len)
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

/* The agent's refusals as HTTP (but the body's errors, 422 with their field): errno, status. */
static const struct refusal {
	int err;
	unsigned int code;
	unsigned int retry_after_s;
	const char *what;               /* before the agent's reason */
} refusals[] = {
	{ -ENOLCK, 503, 5, "no quorum: " },
	{ -EAGAIN, 503, 1, "the cluster is re-forming: " },
	{ -ESTALE, 412, 0, "" },
	{ -EMSGSIZE, 413, 0, "" },
	{ -ENOENT, 404, 0, "" },
	{ -EHOSTDOWN, 409, 0, "" },
	{ -EPERM, 409, 0, "" },
	{ -EBUSY, 409, 0, "" },
	{ -EEXIST, 409, 0, "" },
	{ -ETIMEDOUT, 504, 0, "" },
};

void rest_agent_refusal(int status, const char *error, const char *prefix, struct rest_err *e)
{
	char path[256];
	size_t pl = prefix ? strlen(prefix) : 0;
	const char *field = "";

	status = rest_peer_errno(status);
	error = error && error[0] ? error : strerror(-status);
	if (status == -EINVAL || status == -EBADMSG || status == -ERANGE) {
		rest_key_path(error, path, sizeof(path));
		if (pl && !strncmp(path, prefix, pl) && (path[pl] == '.' || !path[pl]))
			field = path[pl] ? path + pl + 1 : "";
		else
			field = path;
		rest_fail(e, status, 422, field, "%s", error);
		return;
	}
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		if (refusals[i].err == status) {
			rest_fail(e, status, refusals[i].code, NULL, "%s%s", refusals[i].what, error);
			e->retry_after_s = refusals[i].retry_after_s;
			return;
		}
	}
	rest_fail(e, status, 500, NULL, "the HA agent refused: %s", error);
}

void rest_agent_unreachable(int rc, const char *why, struct rest_err *e)
{
	if (rc == -ETIMEDOUT)
		rest_fail(e, rc, 504, NULL, "the HA agent did not answer in time: %s", why);
	else
		rest_fail(e, rc, 503, NULL, "the HA agent cannot be reached: %s", why);
}
