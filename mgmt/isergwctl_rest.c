/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl target | lun | node | device-group | config | api ...: the
 * operator's command line for the REST resources of isergw-api (/api/v1,
 * docs/api.md), with libcurl (docs/rest-cli.md). One HTTP request per command
 * (plus the polls of --wait), bounded by --timeout; TLS verified unless
 * --insecure says otherwise out loud; a bearer token read from a file that
 * only its owner may read, and never printed.
 *
 * The pure half (arguments into a request, KEY=VALUE into a merge patch, a
 * problem document into a message, an HTTP status into an exit status, the
 * tables) is declared in isergwctl.h and unit-tested by
 * tests/unit/test_isergwctl_rest.c; the rest talks to the server. libcurl's
 * CURLcode becomes a negative errno in one place, curl_rc().
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "isergwctl.h"

#define ANSWER_MAX    (16u << 20)   /* an answer body, bytes */
#define FILE_MAX      (1u << 20)    /* a --from-json or import file: isergw-api's body cap */
#define TOKEN_MAX     4096u
#define POLL_MS       500           /* --wait: between two reads of the operation */
#define NAME_MAX_LEN  255u          /* an IQN, node or device group name given */

/* ------------------------------------------------------------ usage */

void isergwctl_rest_usage(FILE *f)
{
	fprintf(f,
"Usage: isergwctl [--api URL] [--token-file F] [--cacert FILE] [--insecure]\n"
"                 [--json] [--timeout S] NOUN VERB [OPTIONS] [ARGS]\n"
"Talk to isergw-api's REST resources (/api/v1, docs/api.md, docs/rest-cli.md).\n"
"\n"
"Commands (the resource each one uses):\n"
"  target list                       GET    /api/v1/targets\n"
"  target show IQN                   GET    /api/v1/targets/IQN\n"
"  target create IQN [--alias A] [--from-json FILE]\n"
"                                    POST   /api/v1/targets\n"
"  target delete IQN                 DELETE /api/v1/targets/IQN\n"
"  lun list IQN                      GET    /api/v1/targets/IQN/luns\n"
"  lun show IQN LUN                  GET    /api/v1/targets/IQN/luns/LUN\n"
"  lun create IQN --path P [--size S] [--lun N] [--device-group DG]\n"
"             [--from-json FILE]     POST   /api/v1/targets/IQN/luns\n"
"  lun set IQN LUN KEY=VALUE...      PATCH  /api/v1/targets/IQN/luns/LUN\n"
"                                    (a JSON merge patch: VALUE a number, true,\n"
"                                    false, null (back to the default), a JSON\n"
"                                    object, array or \"quoted string\", else text)\n"
"  lun delete IQN LUN                DELETE /api/v1/targets/IQN/luns/LUN\n"
"  node list                         GET    /api/v1/nodes\n"
"  node show NAME                    GET    /api/v1/nodes/NAME\n"
"  node drain NAME [--force]         PATCH  /api/v1/nodes/NAME[?force=true] {\"drained\": true}\n"
"                                    (refused, 409, when no other node could own\n"
"                                    its device groups, unless --force)\n"
"  node undrain NAME                 PATCH  /api/v1/nodes/NAME {\"drained\": false}\n"
"  device-group list                 GET    /api/v1/device-groups\n"
"  device-group show NAME            GET    /api/v1/device-groups/NAME\n"
"  device-group move NAME NODE       PATCH  /api/v1/device-groups/NAME {\"owner\": NODE}\n"
"  target set IQN KEY=VALUE...       PATCH  /api/v1/targets/IQN (alias, chap, mutual_chap,\n"
"                                    limits: chap={\"user\":\"u\",\"secret\":\"s\"} or null)\n"
"  acl list IQN                      GET    /api/v1/targets/IQN/acls\n"
"  acl show IQN INITIATOR            GET    /api/v1/targets/IQN/acls/INITIATOR\n"
"  acl create IQN INITIATOR [--from-json FILE]\n"
"                                    POST   /api/v1/targets/IQN/acls (FILE: its chap)\n"
"  acl set IQN INITIATOR KEY=VALUE...\n"
"                                    PATCH  /api/v1/targets/IQN/acls/INITIATOR\n"
"  acl delete IQN INITIATOR          DELETE /api/v1/targets/IQN/acls/INITIATOR\n"
"  discovery-chap show               GET    /api/v1/discovery-chap\n"
"  discovery-chap set FILE           PUT    /api/v1/discovery-chap ({\"user\", \"secret\"})\n"
"  discovery-chap delete             DELETE /api/v1/discovery-chap\n"
"  portal list NODE                  GET    /api/v1/nodes/NODE/portals\n"
"  portal show NODE ID               GET    /api/v1/nodes/NODE/portals/ID\n"
"  portal create NODE URL [--rel-port-id ID]\n"
"                                    POST   /api/v1/nodes/NODE/portals\n"
"  portal set NODE ID url=URL        PATCH  /api/v1/nodes/NODE/portals/ID\n"
"  portal delete NODE ID             DELETE /api/v1/nodes/NODE/portals/ID\n"
"  port-group list                   GET    /api/v1/port-groups\n"
"  session list                      GET    /api/v1/sessions (the answering node's)\n"
"  session show TSIH                 GET    /api/v1/sessions/TSIH\n"
"  session logout TSIH [--grace S]   DELETE /api/v1/sessions/TSIH[?grace_s=S]\n"
"  config export                     GET    /api/v1/config (JSON on stdout)\n"
"  config import FILE                PUT    /api/v1/config (FILE '-': stdin)\n"
"  api status                        GET    /api/v1/cluster\n"
"\n"
"Options (before NOUN):\n"
"  --api URL         isergw-api (default $ISERGW_API, then " ISERGWCTL_API_DEFAULT ")\n"
"  --token-file F    the bearer token, on F's first line (default\n"
"                    $ISERGW_TOKEN_FILE, then " ISERGWCTL_TOKEN_DEFAULT " if it exists);\n"
"                    F must not be readable by group or others\n"
"  --cacert FILE     verify the server's TLS certificate against this CA\n"
"  --insecure        do not verify the server's certificate (warns each time)\n"
"  --timeout S       the whole command, --wait included (default 30)\n"
"Options (after NOUN, any command):\n"
"  --json            the server's JSON, pretty-printed, instead of tables\n"
"  --if-match ETAG   a write only if the cluster is still at ETAG (\"gN\", from\n"
"                    a write's answer or 'api status': generation N)\n"
"  --wait            a write answered 202 (made, not yet applied by every live\n"
"                    node): poll its operation until done or --timeout\n"
"\n"
"Exit status: 0 done; 1 refused by the server (400, 404, 409, 412, 422, other\n"
"4xx: the reason printed); 2 usage error; 3 cannot connect, TLS failure, no\n"
"answer in time (also 504), a garbled answer or a server error (5xx); 4 not\n"
"authorized (401, 403, or an unusable token file); 5 the cluster cannot take\n"
"it now (503, Retry-After shown); 6 accepted (202) but not finished when\n"
"--wait ran out.\n");
}

/* "isergwctl: MESSAGE" and the hint on stderr; ISERGWCTL_EXIT_USAGE. */
#define usage_err(...) isergwctl_usage_err(NULL, __VA_ARGS__)

/* ------------------------------------------------------------ pure: exit status */

int isergwctl_rest_exit(long status)
{
	if (status >= 200 && status < 300)
		return ISERGWCTL_EXIT_OK;
	if (status == 401 || status == 403)
		return ISERGWCTL_EXIT_AUTH;
	if (status >= 400 && status < 500)
		return ISERGWCTL_EXIT_REFUSED;
	if (status == 503)
		return ISERGWCTL_EXIT_UNAVAILABLE;
	/* 504, 500, any other 5xx, 1xx, 3xx: no usable answer */
	return ISERGWCTL_EXIT_CONNECT;
}

/* ------------------------------------------------------------ pure: merge patch */

/*
 * One JSON value filling s[0..len) exactly, s[len] being '\0' (which ends a
 * number at the end): json-c in strict mode (no single quotes, no NaN, no
 * leading zeros, no trailing commas). NULL when it is not that.
 */
static json_object *parse_strict(const char *s, size_t len)
{
	struct json_tokener *tok;
	json_object *o;

	if (len > INT32_MAX - 1 || s[len] != '\0' || !(tok = json_tokener_new()))
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, s, (int)len + 1);
	if (o && (json_tokener_get_error(tok) != json_tokener_success ||
		  json_tokener_get_parse_end(tok) < len)) {
		json_object_put(o);
		o = NULL;
	}
	/* "null" parses to NULL with success: the caller tells it apart */
	json_tokener_free(tok);
	return o;
}

/* The JSON value of VALUE in KEY=VALUE; *out NULL for null. 0 or -ENOMEM. */
static int kv_value(const char *v, json_object **out)
{
	size_t len = strlen(v);
	json_object *o;

	*out = NULL;
	if (strcmp(v, "null") == 0)
		return 0;
	if (len && (strchr("-0123456789{[\"", v[0]) || strcmp(v, "true") == 0 ||
		    strcmp(v, "false") == 0)) {
		o = parse_strict(v, len);
		if (o) {
			*out = o;
			return 0;
		}
	}
	*out = json_object_new_string(v);
	return *out ? 0 : -ENOMEM;
}

int isergwctl_merge_patch_add(struct json_object *patch, const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');
	char key[NAME_MAX_LEN + 1];
	size_t klen;
	json_object *v;

	if (!eq) {
		snprintf(err, errlen, "'%s' is not KEY=VALUE", kv);
		return -EINVAL;
	}
	klen = (size_t)(eq - kv);
	if (klen == 0 || klen > NAME_MAX_LEN) {
		snprintf(err, errlen, "'%s': the key must have 1..%u characters", kv, NAME_MAX_LEN);
		return -EINVAL;
	}
	memcpy(key, kv, klen);
	key[klen] = '\0';
	for (size_t i = 0; i < klen; i++) {
		if (!((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= 'A' && key[i] <= 'Z') ||
		      (key[i] >= '0' && key[i] <= '9') || key[i] == '_' || key[i] == '-')) {
			snprintf(err, errlen, "'%s': a key of letters, digits, '_' and '-' only", key);
			return -EINVAL;
		}
	}
	if (json_object_object_get_ex(patch, key, NULL)) {
		snprintf(err, errlen, "'%s' given twice", key);
		return -EINVAL;
	}
	if (kv_value(eq + 1, &v) || json_object_object_add(patch, key, v)) {
		json_object_put(v);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------ pure: the URL */

bool isergwctl_url_private(const char *url)
{
	static const char *const loopback[] = { "http://127.0.0.1", "http://localhost", "http://[::1]" };

	if (strncmp(url, "https://", 8) == 0)
		return true;
	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		size_t n = strlen(loopback[i]);

		if (strncmp(url, loopback[i], n) == 0 && strchr(":/", url[n]))
			return true;
	}
	return false;
}

/* ------------------------------------------------------------ pure: problem documents */

char *isergwctl_problem_message(long status, const char *body, size_t len, const char *retry_after)
{
	json_object *doc = body && len ? parse_strict(body, len) : NULL;
	json_object *v;
	const char *title = NULL, *detail = NULL, *field = NULL;
	char *msg = NULL;
	char ra[64] = "";

	if (doc && json_object_is_type(doc, json_type_object)) {
		if (json_object_object_get_ex(doc, "title", &v) && json_object_is_type(v, json_type_string))
			title = json_object_get_string(v);
		if (json_object_object_get_ex(doc, "detail", &v) && json_object_is_type(v, json_type_string))
			detail = json_object_get_string(v);
		if (json_object_object_get_ex(doc, "field", &v) && json_object_is_type(v, json_type_string))
			field = json_object_get_string(v);
	}
	if (retry_after && retry_after[0])
		snprintf(ra, sizeof(ra), " (retry after %.20s s)", retry_after);
	if (asprintf(&msg, "%ld %s: %s%s%s%s", status, title ? title : "",
		     detail ? detail : "the answer carries no problem document",
		     field ? " (field: " : "", field ? field : "", field ? ")" : "") < 0)
		msg = NULL;
	if (msg && ra[0]) {
		char *m2;

		if (asprintf(&m2, "%s%s", msg, ra) < 0)
			m2 = NULL;
		free(msg);
		msg = m2;
	}
	json_object_put(doc);
	return msg;
}

/* ------------------------------------------------------------ pure: arguments into a request */

enum {
	OPT_IF_MATCH = 1u << 0,
	OPT_WAIT = 1u << 1,
	OPT_ALIAS = 1u << 2,
	OPT_FROM_JSON = 1u << 3,
	OPT_PATH = 1u << 4,
	OPT_SIZE = 1u << 5,
	OPT_LUN = 1u << 6,
	OPT_DG = 1u << 7,
	OPT_REL = 1u << 8,
	OPT_GRACE = 1u << 9,
	OPT_FORCE = 1u << 10,
};
static const char *const opt_names[] = {
	"--if-match", "--wait", "--alias", "--from-json", "--path", "--size", "--lun", "--device-group",
	"--rel-port-id", "--grace", "--force",
};
#define WRITE_OPTS (OPT_IF_MATCH | OPT_WAIT)

struct rest_cmd {
	const char *noun, *verb;
	size_t nargs;           /* operands after the two words */
	bool more;              /* and more (KEY=VALUE...) */
	const char *operands;   /* for the usage error */
	unsigned int opts;
	const char *method;
	enum isergwctl_view view;
};

static const struct rest_cmd cmds[] = {
	{ "target", "list", 0, false, "", 0, "GET", ISERGWCTL_VIEW_TARGETS },
	{ "target", "show", 1, false, "IQN", 0, "GET", ISERGWCTL_VIEW_TARGET },
	{ "target", "create", 1, false, "IQN", WRITE_OPTS | OPT_ALIAS | OPT_FROM_JSON, "POST",
	  ISERGWCTL_VIEW_CHANGE },
	{ "target", "delete", 1, false, "IQN", WRITE_OPTS, "DELETE", ISERGWCTL_VIEW_CHANGE },
	{ "lun", "list", 1, false, "IQN", 0, "GET", ISERGWCTL_VIEW_LUNS },
	{ "lun", "show", 2, false, "IQN LUN", 0, "GET", ISERGWCTL_VIEW_LUN },
	{ "lun", "create", 1, false, "IQN",
	  WRITE_OPTS | OPT_FROM_JSON | OPT_PATH | OPT_SIZE | OPT_LUN | OPT_DG, "POST",
	  ISERGWCTL_VIEW_CHANGE },
	{ "lun", "set", 3, true, "IQN LUN KEY=VALUE...", WRITE_OPTS, "PATCH", ISERGWCTL_VIEW_CHANGE },
	{ "lun", "delete", 2, false, "IQN LUN", WRITE_OPTS, "DELETE", ISERGWCTL_VIEW_CHANGE },
	{ "node", "list", 0, false, "", 0, "GET", ISERGWCTL_VIEW_NODES },
	{ "node", "show", 1, false, "NAME", 0, "GET", ISERGWCTL_VIEW_NODE },
	{ "node", "drain", 1, false, "NAME", WRITE_OPTS | OPT_FORCE, "PATCH", ISERGWCTL_VIEW_CHANGE },
	{ "node", "undrain", 1, false, "NAME", WRITE_OPTS, "PATCH", ISERGWCTL_VIEW_CHANGE },
	{ "device-group", "list", 0, false, "", 0, "GET", ISERGWCTL_VIEW_DGS },
	{ "device-group", "show", 1, false, "NAME", 0, "GET", ISERGWCTL_VIEW_DG },
	{ "device-group", "move", 2, false, "NAME NODE", WRITE_OPTS, "PATCH", ISERGWCTL_VIEW_CHANGE },
	{ "config", "export", 0, false, "", 0, "GET", ISERGWCTL_VIEW_CONFIG },
	{ "config", "import", 1, false, "FILE", WRITE_OPTS, "PUT", ISERGWCTL_VIEW_CHANGE },
	{ "api", "status", 0, false, "", 0, "GET", ISERGWCTL_VIEW_CLUSTER },
	{ "target", "set", 2, true, "IQN KEY=VALUE...", WRITE_OPTS, "PATCH", ISERGWCTL_VIEW_CHANGE },
	{ "acl", "list", 1, false, "IQN", 0, "GET", ISERGWCTL_VIEW_ACLS },
	{ "acl", "show", 2, false, "IQN INITIATOR", 0, "GET", ISERGWCTL_VIEW_OBJECT },
	{ "acl", "create", 2, false, "IQN INITIATOR", WRITE_OPTS | OPT_FROM_JSON, "POST",
	  ISERGWCTL_VIEW_CHANGE },
	{ "acl", "set", 3, true, "IQN INITIATOR KEY=VALUE...", WRITE_OPTS, "PATCH",
	  ISERGWCTL_VIEW_CHANGE },
	{ "acl", "delete", 2, false, "IQN INITIATOR", WRITE_OPTS, "DELETE", ISERGWCTL_VIEW_CHANGE },
	{ "discovery-chap", "show", 0, false, "", 0, "GET", ISERGWCTL_VIEW_OBJECT },
	{ "discovery-chap", "set", 1, false, "FILE", WRITE_OPTS, "PUT", ISERGWCTL_VIEW_CHANGE },
	{ "discovery-chap", "delete", 0, false, "", WRITE_OPTS, "DELETE", ISERGWCTL_VIEW_CHANGE },
	{ "portal", "list", 1, false, "NODE", 0, "GET", ISERGWCTL_VIEW_PORTALS },
	{ "portal", "show", 2, false, "NODE ID", 0, "GET", ISERGWCTL_VIEW_OBJECT },
	{ "portal", "create", 2, false, "NODE URL", WRITE_OPTS | OPT_REL, "POST",
	  ISERGWCTL_VIEW_CHANGE },
	{ "portal", "set", 3, true, "NODE ID KEY=VALUE...", WRITE_OPTS, "PATCH",
	  ISERGWCTL_VIEW_CHANGE },
	{ "portal", "delete", 2, false, "NODE ID", WRITE_OPTS, "DELETE", ISERGWCTL_VIEW_CHANGE },
	{ "port-group", "list", 0, false, "", 0, "GET", ISERGWCTL_VIEW_PORT_GROUPS },
	{ "session", "list", 0, false, "", 0, "GET", ISERGWCTL_VIEW_SESSIONS },
	{ "session", "show", 1, false, "TSIH", 0, "GET", ISERGWCTL_VIEW_SESSION },
	{ "session", "logout", 1, false, "TSIH", OPT_GRACE, "DELETE", ISERGWCTL_VIEW_CHANGE },
};

bool isergwctl_rest_noun(const char *word)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(cmds[i].noun, word) == 0)
			return true;
	return false;
}

void isergwctl_rest_req_free(struct isergwctl_rest_req *r)
{
	json_object_put(r->body);
	r->body = NULL;
}

/* A path segment: percent-encoded but for RFC 3986's unreserved characters and ':' and '@'. */
static int path_add(struct isergwctl_rest_req *r, const char *seg, char *err, size_t errlen)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(r->path);

	if (n + 1 >= sizeof(r->path))
		goto too_long;
	r->path[n++] = '/';
	for (const unsigned char *p = (const unsigned char *)seg; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9') || strchr("-._~:@", *p);

		if (n + (plain ? 1 : 3) >= sizeof(r->path))
			goto too_long;
		if (plain) {
			r->path[n++] = (char)*p;
		} else {
			r->path[n++] = '%';
			r->path[n++] = hex[*p >> 4];
			r->path[n++] = hex[*p & 15];
		}
	}
	r->path[n] = '\0';
	return 0;
too_long:
	snprintf(err, errlen, "the request path would exceed %zu bytes", sizeof(r->path) - 1);
	return -ENAMETOOLONG;
}

/* A name operand: printable ASCII, no blank, 1..NAME_MAX_LEN bytes. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > NAME_MAX_LEN)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s >= 0x7f)
			return false;
	return true;
}

/* A JSON object from a file (FILE '-': stdin), at most FILE_MAX bytes. 0 or -errno (err set). */
static int read_json_file(const char *path, json_object **out, char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
	char *buf;
	size_t len = 0, n;
	int rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return rc;
	}
	buf = malloc(FILE_MAX + 1);
	if (!buf) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out_close;
	}
	while ((n = fread(buf + len, 1, FILE_MAX + 1 - len, f)) > 0 && len + n <= FILE_MAX)
		len += n;
	if (n > 0 || ferror(f)) {
		rc = n > 0 ? -EFBIG : -EIO;
		if (n > 0)
			snprintf(err, errlen, "%s: larger than %u bytes", path, FILE_MAX);
		else
			snprintf(err, errlen, "%s: read error", path);
		goto out_free;
	}
	buf[len] = '\0';
	*out = parse_strict(buf, len);
	if (!*out || !json_object_is_type(*out, json_type_object)) {
		json_object_put(*out);
		*out = NULL;
		rc = -EINVAL;
		snprintf(err, errlen, "%s: not a JSON object", path);
	}
out_free:
	free(buf);
out_close:
	if (f != stdin)
		fclose(f);
	return rc;
}

static int set_member(json_object *o, const char *key, json_object *v)
{
	if (!v || json_object_object_add(o, key, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

/* The request of a command whose operands and options are known to fit it. */
static int build(const struct rest_cmd *c, char **ops, size_t nops, const struct isergwctl_rest_args *a,
		 struct isergwctl_rest_req *r, char *err, size_t errlen)
{
	const char *v = c->verb;
	json_object *b = NULL;
	uint32_t lun;
	int rc = 0;

	snprintf(r->path, sizeof(r->path), "/api/v1");
	r->method = c->method;
	r->view = c->view;
	snprintf(r->what, sizeof(r->what), "%s %.280s", c->noun, nops ? ops[0] : "");
	if (strcmp(c->noun, "lun") == 0 && strcmp(v, "create") == 0)
		snprintf(r->what, sizeof(r->what), "a LUN of %.280s", ops[0]);
	if (strcmp(c->noun, "lun") == 0 && nops > 1 && strcmp(v, "create") != 0) {
		if (isergwctl_parse_u32(ops[1], 16383, &lun)) {
			snprintf(err, errlen, "lun %s: LUN wants a number 0..16383, not '%s'", v, ops[1]);
			return -EINVAL;
		}
		snprintf(r->what, sizeof(r->what), "LUN %u of %.200s", lun, ops[0]);
	}
	if (strcmp(c->noun, "target") == 0) {
		rc = path_add(r, "targets", err, errlen);
		if (!rc && nops && strcmp(v, "create") != 0)
			rc = path_add(r, ops[0], err, errlen);
	} else if (strcmp(c->noun, "lun") == 0) {
		rc = path_add(r, "targets", err, errlen);
		if (!rc)
			rc = path_add(r, ops[0], err, errlen);
		if (!rc)
			rc = path_add(r, "luns", err, errlen);
		if (!rc && nops > 1)
			rc = path_add(r, ops[1], err, errlen);
	} else if (strcmp(c->noun, "node") == 0) {
		rc = path_add(r, "nodes", err, errlen);
		if (!rc && nops)
			rc = path_add(r, ops[0], err, errlen);
		if (!rc && a->force)
			snprintf(r->path + strlen(r->path), sizeof(r->path) - strlen(r->path),
				 "?force=true");
	} else if (strcmp(c->noun, "device-group") == 0) {
		rc = path_add(r, "device-groups", err, errlen);
		if (!rc && nops)
			rc = path_add(r, ops[0], err, errlen);
	} else if (strcmp(c->noun, "acl") == 0) {
		rc = path_add(r, "targets", err, errlen);
		if (!rc)
			rc = path_add(r, ops[0], err, errlen);
		if (!rc)
			rc = path_add(r, "acls", err, errlen);
		if (!rc && nops > 1 && strcmp(v, "create") != 0)
			rc = path_add(r, ops[1], err, errlen);
		if (nops > 1)
			snprintf(r->what, sizeof(r->what), "the ACL of %.120s in %.120s", ops[1], ops[0]);
	} else if (strcmp(c->noun, "discovery-chap") == 0) {
		rc = path_add(r, "discovery-chap", err, errlen);
		snprintf(r->what, sizeof(r->what), "discovery CHAP");
	} else if (strcmp(c->noun, "portal") == 0) {
		uint32_t id;

		rc = path_add(r, "nodes", err, errlen);
		if (!rc)
			rc = path_add(r, ops[0], err, errlen);
		if (!rc)
			rc = path_add(r, "portals", err, errlen);
		if (!rc && nops > 1 && strcmp(v, "create") != 0) {
			if (isergwctl_parse_u32(ops[1], 65535, &id) || id == 0) {
				snprintf(err, errlen, "portal %s: ID wants a rel_port_id 1..65535, not '%s'",
					 v, ops[1]);
				return -EINVAL;
			}
			rc = path_add(r, ops[1], err, errlen);
			snprintf(r->what, sizeof(r->what), "portal %u of %.200s", id, ops[0]);
		}
	} else if (strcmp(c->noun, "port-group") == 0) {
		rc = path_add(r, "port-groups", err, errlen);
	} else if (strcmp(c->noun, "session") == 0) {
		uint32_t tsih;

		rc = path_add(r, "sessions", err, errlen);
		if (!rc && nops) {
			if (isergwctl_parse_u32(ops[0], 65535, &tsih) || tsih == 0) {
				snprintf(err, errlen, "session %s: TSIH wants a number 1..65535, not '%s'",
					 v, ops[0]);
				return -EINVAL;
			}
			rc = path_add(r, ops[0], err, errlen);
			snprintf(r->what, sizeof(r->what), "session %u", tsih);
			if (!rc && a->grace) {
				uint32_t g;

				if (isergwctl_parse_u32(a->grace, 3600, &g)) {
					snprintf(err, errlen, "--grace wants 0..3600 seconds, not '%s'",
						 a->grace);
					return -EINVAL;
				}
				snprintf(r->path + strlen(r->path), sizeof(r->path) - strlen(r->path),
					 "?grace_s=%u", g);
			}
		}
	} else if (strcmp(c->noun, "config") == 0) {
		rc = path_add(r, "config", err, errlen);
		snprintf(r->what, sizeof(r->what), "the cluster configuration");
	} else {
		rc = path_add(r, "cluster", err, errlen);
	}
	if (rc)
		return rc;

	/* the bodies */
	if (strcmp(v, "create") == 0 || strcmp(v, "import") == 0 ||
	    (strcmp(c->noun, "discovery-chap") == 0 && strcmp(v, "set") == 0)) {
		const char *file = strcmp(v, "create") != 0 ? ops[0] : a->from_json;

		if (file && (rc = read_json_file(file, &b, err, errlen)))
			return rc;
		if (!b && !(b = json_object_new_object()))
			goto nomem;
	}
	if (strcmp(c->noun, "target") == 0 && strcmp(v, "create") == 0) {
		json_object *iqn;

		if (json_object_object_get_ex(b, "iqn", &iqn) &&
		    (!json_object_is_type(iqn, json_type_string) ||
		     strcmp(json_object_get_string(iqn), ops[0]) != 0)) {
			snprintf(err, errlen, "%s: its \"iqn\" is not %s", a->from_json, ops[0]);
			rc = -EINVAL;
			goto err_put;
		}
		if (set_member(b, "iqn", json_object_new_string(ops[0])) ||
		    (a->alias && set_member(b, "alias", json_object_new_string(a->alias))))
			goto nomem;
	} else if (strcmp(c->noun, "lun") == 0 && strcmp(v, "create") == 0) {
		if (a->path && set_member(b, "path", json_object_new_string(a->path)))
			goto nomem;
		if (a->size) {
			uint64_t n;
			json_object *s = isergwctl_parse_u64(a->size, &n) == 0 && n <= INT64_MAX
					 ? json_object_new_int64((int64_t)n)
					 : json_object_new_string(a->size);

			if (set_member(b, "size", s))
				goto nomem;
		}
		if (a->lun && set_member(b, "lun", json_object_new_int64(a->lun_n)))
			goto nomem;
		if (a->device_group && set_member(b, "device_group", json_object_new_string(a->device_group)))
			goto nomem;
		if (!json_object_object_get_ex(b, "path", NULL)) {
			snprintf(err, errlen, "lun create needs --path (or a \"path\" in --from-json)");
			rc = -EINVAL;
			goto err_put;
		}
	} else if (strcmp(c->noun, "acl") == 0 && strcmp(v, "create") == 0) {
		if (set_member(b, "initiator", json_object_new_string(ops[1])))
			goto nomem;
	} else if (strcmp(c->noun, "portal") == 0 && strcmp(v, "create") == 0) {
		if (set_member(b, "url", json_object_new_string(ops[1])) ||
		    (a->rel && set_member(b, "rel_port_id", json_object_new_int64(a->rel_n))))
			goto nomem;
	} else if (strcmp(c->noun, "discovery-chap") == 0) {
		/* the file's object as it is */
	} else if (strcmp(v, "set") == 0) {
		if (!(b = json_object_new_object()))
			goto nomem;
		for (size_t i = strcmp(c->noun, "target") == 0 ? 1 : 2; i < nops; i++)
			if ((rc = isergwctl_merge_patch_add(b, ops[i], err, errlen)))
				goto err_put;
	} else if (strcmp(v, "drain") == 0 || strcmp(v, "undrain") == 0) {
		if (!(b = json_object_new_object()) ||
		    set_member(b, "drained", json_object_new_boolean(strcmp(v, "drain") == 0)))
			goto nomem;
	} else if (strcmp(v, "move") == 0) {
		if (!(b = json_object_new_object()) ||
		    set_member(b, "owner", json_object_new_string(ops[1])))
			goto nomem;
	}
	r->body = b;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	rc = -ENOMEM;
err_put:
	json_object_put(b);
	return rc;
}

int isergwctl_rest_parse(int argc, char **argv, struct isergwctl_rest_req *r, char *err, size_t errlen)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "if-match", required_argument, NULL, 'm' },
		{ "wait", no_argument, NULL, 'w' },
		{ "alias", required_argument, NULL, 'a' },
		{ "from-json", required_argument, NULL, 'f' },
		{ "path", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 'z' },
		{ "lun", required_argument, NULL, 'l' },
		{ "device-group", required_argument, NULL, 'd' },
		{ "rel-port-id", required_argument, NULL, 'r' },
		{ "grace", required_argument, NULL, 'g' },
		{ "force", no_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	struct isergwctl_rest_args a = { 0 };
	char *pos[64];
	size_t npos = 0, words = 2;
	unsigned int given = 0;
	const struct rest_cmd *cmd = NULL;
	int opt;

	memset(r, 0, sizeof(*r));
	if (argc < 1) {
		snprintf(err, errlen, "a command is missing");
		return -EINVAL;
	}
	pos[npos++] = argv[0];          /* the noun: getopt skips argv[0] */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "-:h", opts, NULL)) != -1) {
		switch (opt) {
		case 1:
			if (npos == sizeof(pos) / sizeof(pos[0])) {
				snprintf(err, errlen, "too many operands ('%s')", optarg);
				return -EINVAL;
			}
			pos[npos++] = optarg;
			break;
		case 'j':
			r->json = true;
			break;
		case 'h':
			r->help = true;
			break;
		case 'm':
			if (!optarg[0] || strlen(optarg) >= sizeof(r->if_match) || !name_ok(optarg)) {
				snprintf(err, errlen, "--if-match wants an entity tag (\"gN\" or *), not '%s'",
					 optarg);
				return -EINVAL;
			}
			snprintf(r->if_match, sizeof(r->if_match), "%s", optarg);
			given |= OPT_IF_MATCH;
			break;
		case 'w':
			r->wait = true;
			given |= OPT_WAIT;
			break;
		case 'a':
			a.alias = optarg;
			given |= OPT_ALIAS;
			break;
		case 'f':
			a.from_json = optarg;
			given |= OPT_FROM_JSON;
			break;
		case 'p':
			a.path = optarg;
			given |= OPT_PATH;
			break;
		case 'z':
			if (!optarg[0]) {
				snprintf(err, errlen, "--size wants bytes or a size with K, M, G, T");
				return -EINVAL;
			}
			a.size = optarg;
			given |= OPT_SIZE;
			break;
		case 'l':
			if (isergwctl_parse_u32(optarg, 16383, &a.lun_n)) {
				snprintf(err, errlen, "--lun wants a number 0..16383, not '%s'", optarg);
				return -EINVAL;
			}
			a.lun = true;
			given |= OPT_LUN;
			break;
		case 'r':
			if (isergwctl_parse_u32(optarg, 65535, &a.rel_n) || a.rel_n == 0) {
				snprintf(err, errlen, "--rel-port-id wants a number 1..65535, not '%s'",
					 optarg);
				return -EINVAL;
			}
			a.rel = true;
			given |= OPT_REL;
			break;
		case 'g':
			a.grace = optarg;
			given |= OPT_GRACE;
			break;
		case 'F':
			a.force = true;
			given |= OPT_FORCE;
			break;
		case 'd':
			if (!name_ok(optarg)) {
				snprintf(err, errlen, "--device-group wants a name, not '%s'", optarg);
				return -EINVAL;
			}
			a.device_group = optarg;
			given |= OPT_DG;
			break;
		case ':':
			snprintf(err, errlen, "%s needs a value", argv[optind - 1]);
			return -EINVAL;
		default:
			if (optopt)
				snprintf(err, errlen, "unknown option '-%c'", optopt);
			else
				snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
			return -EINVAL;
		}
	}
	for (; optind < argc; optind++) {       /* after "--" */
		if (npos == sizeof(pos) / sizeof(pos[0])) {
			snprintf(err, errlen, "too many operands");
			return -EINVAL;
		}
		pos[npos++] = argv[optind];
	}
	if (r->help || (npos > 1 && strcmp(pos[1], "help") == 0)) {
		r->help = true;
		return 0;
	}
	if (npos == 0) {
		snprintf(err, errlen, "a command is missing");
		return -EINVAL;
	}
	if (npos < 2) {
		snprintf(err, errlen, "%s needs a verb", pos[0]);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !cmd; i++)
		if (strcmp(cmds[i].noun, pos[0]) == 0 && strcmp(cmds[i].verb, pos[1]) == 0)
			cmd = &cmds[i];
	if (!cmd) {
		snprintf(err, errlen, "%s: unknown verb '%s'", pos[0], pos[1]);
		return -EINVAL;
	}
	if (npos < words + cmd->nargs) {
		snprintf(err, errlen, "%s %s needs %s", cmd->noun, cmd->verb, cmd->operands);
		return -EINVAL;
	}
	if (npos > words + cmd->nargs && !cmd->more) {
		snprintf(err, errlen, "%s %s: unexpected '%s'", cmd->noun, cmd->verb, pos[words + cmd->nargs]);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(opt_names) / sizeof(opt_names[0]); i++)
		if (given & ~cmd->opts & (1u << i)) {
			snprintf(err, errlen, "%s %s does not take %s", cmd->noun, cmd->verb, opt_names[i]);
			return -EINVAL;
		}
	/* names: every operand but a file and KEY=VALUEs */
	for (size_t i = words; i < npos; i++) {
		bool name = strcmp(cmd->noun, "config") != 0 && !(cmd->more && i >= words + 2);

		if (name && !name_ok(pos[i])) {
			snprintf(err, errlen, "%s %s: '%s' is not a name (printable, no blank, 1..%u bytes)",
				 cmd->noun, cmd->verb, pos[i], NAME_MAX_LEN);
			return -EINVAL;
		}
	}
	return build(cmd, pos + words, npos - words, &a, r, err, errlen);
}

/* ------------------------------------------------------------ pure: tables */

/* A member as a cell: text as it is ("" '-'), yes/no, numbers, '-' when absent, else compact JSON. */
static void cell(struct isergwctl_table *t, json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(o, key, &v) || !v) {
		isergwctl_table_cell(t, "-");
		return;
	}
	switch (json_object_get_type(v)) {
	case json_type_string:
		isergwctl_table_cell(t, "%s", json_object_get_string_len(v) ? json_object_get_string(v) : "-");
		break;
	case json_type_boolean:
		isergwctl_table_cell(t, "%s", json_object_get_boolean(v) ? "yes" : "no");
		break;
	default:
		isergwctl_table_cell(t, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
								   JSON_C_TO_STRING_NOSLASHESCAPE));
	}
}

static json_object *member(json_object *o, const char *key, json_type type)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
		return NULL;
	return v;
}

/* KEY VALUE lines of an object's members (nested ones as compact JSON), skipping 'skip'. */
static int kv_lines(FILE *f, json_object *o, const char *skip)
{
	struct isergwctl_table t;

	isergwctl_table_init(&t, 2);
	json_object_object_foreach(o, k, v) {
		(void)v;
		if (skip && strcmp(k, skip) == 0)
			continue;
		isergwctl_table_cell(&t, "%s", k);
		cell(&t, o, k);
	}
	return isergwctl_table_print(&t, f);
}

/* The array of objects a table is made of (checked whole before a table is started). */
static int objects(json_object *arr)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++)
		if (!json_object_is_type(json_object_array_get_idx(arr, i), json_type_object))
			return -EBADMSG;
	return 0;
}

static int items_of(json_object *doc, json_object **items)
{
	*items = member(doc, "items", json_type_array);
	return *items ? objects(*items) : -EBADMSG;
}

static int targets_table(FILE *f, json_object *items)
{
	struct isergwctl_table t;
	size_t n = json_object_array_length(items);

	if (n == 0) {
		fprintf(f, "no targets\n");
		return 0;
	}
	isergwctl_table_init(&t, 5);
	isergwctl_table_cell(&t, "TARGET");
	isergwctl_table_cell(&t, "ALIAS");
	isergwctl_table_cell(&t, "LUNS");
	isergwctl_table_cell(&t, "CHAP");
	isergwctl_table_cell(&t, "ACLS");
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(items, i), *luns, *chap, *acls;

		luns = member(o, "luns", json_type_array);
		chap = member(o, "chap", json_type_object);
		acls = member(o, "acls", json_type_array);
		cell(&t, o, "iqn");
		cell(&t, o, "alias");
		isergwctl_table_cell(&t, "%zu", luns ? json_object_array_length(luns) : 0);
		if (chap)
			cell(&t, chap, "user");
		else
			isergwctl_table_cell(&t, "-");
		isergwctl_table_cell(&t, "%zu", acls ? json_object_array_length(acls) : 0);
	}
	return isergwctl_table_print(&t, f);
}

static int luns_table(FILE *f, json_object *items)
{
	struct isergwctl_table t;
	size_t n = json_object_array_length(items);

	if (n == 0) {
		fprintf(f, "no LUNs\n");
		return 0;
	}
	isergwctl_table_init(&t, 6);
	isergwctl_table_cell(&t, "LUN");
	isergwctl_table_cell(&t, "SIZE");
	isergwctl_table_cell(&t, "DEVICE GROUP");
	isergwctl_table_cell(&t, "READONLY");
	isergwctl_table_cell(&t, "PRODUCT");
	isergwctl_table_cell(&t, "PATH");
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(items, i);

		cell(&t, o, "lun");
		cell(&t, o, "size");
		cell(&t, o, "device_group");
		cell(&t, o, "readonly");
		cell(&t, o, "product");
		cell(&t, o, "path");
	}
	return isergwctl_table_print(&t, f);
}

static int nodes_table(FILE *f, json_object *items)
{
	static const char *const keys[] = { "name", "nodeid", "tpg_id", "corosync_member", "agent",
					    "synced", "drained", "applied_generation", "last_heard_ms" };
	static const char *const heads[] = { "NODE", "ID", "TPG", "COROSYNC", "AGENT", "SYNCED",
					     "DRAINED", "APPLIED GEN", "HEARD (ms ago)", "DATA PLANE" };
	struct isergwctl_table t;
	size_t n = json_object_array_length(items);

	if (n == 0) {
		fprintf(f, "no nodes\n");
		return 0;
	}
	isergwctl_table_init(&t, sizeof(heads) / sizeof(heads[0]));
	for (size_t k = 0; k < sizeof(heads) / sizeof(heads[0]); k++)
		isergwctl_table_cell(&t, "%s", heads[k]);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(items, i), *dp = NULL;

		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			cell(&t, o, keys[k]);
		if (!json_object_object_get_ex(o, "dataplane", &dp) ||
		    !json_object_is_type(dp, json_type_object))
			isergwctl_table_cell(&t, "-");
		else
			cell(&t, dp, "state");
	}
	return isergwctl_table_print(&t, f);
}

/* An ALUA state as the device group table shows it ('*': the PREF bit). */
static const char *state_abbrev(const char *s)
{
	if (strcmp(s, "unavailable") == 0)
		return "unavail";
	if (strcmp(s, "transitioning") == 0)
		return "trans";
	return s[0] ? s : "?";
}

/* One row per device group, one column per node (in order of appearance) with its state. */
static int groups_table(FILE *f, json_object *items)
{
	const char *cols[ISERGWCTL_TABLE_COLS_MAX - 4];
	size_t ncols = 0, n = json_object_array_length(items);
	struct isergwctl_table t;

	if (n == 0) {
		fprintf(f, "no device groups\n");
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(items, i), *states;

		if (!json_object_is_type(o, json_type_object))
			return -EBADMSG;
		states = member(o, "states", json_type_array);
		for (size_t k = 0; states && k < json_object_array_length(states); k++) {
			json_object *node = member(json_object_array_get_idx(states, k), "node",
						   json_type_string);
			bool seen = false;

			if (!node)
				return -EBADMSG;
			for (size_t c = 0; c < ncols && !seen; c++)
				seen = strcmp(cols[c], json_object_get_string(node)) == 0;
			if (!seen && ncols == sizeof(cols) / sizeof(cols[0]))
				return -E2BIG;
			if (!seen)
				cols[ncols++] = json_object_get_string(node);
		}
	}
	isergwctl_table_init(&t, 4 + ncols);
	isergwctl_table_cell(&t, "DEVICE GROUP");
	isergwctl_table_cell(&t, "OWNER");
	isergwctl_table_cell(&t, "PREFERRED");
	isergwctl_table_cell(&t, "FAILBACK");
	for (size_t c = 0; c < ncols; c++)
		isergwctl_table_cell(&t, "%s", cols[c]);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(items, i);
		json_object *states = member(o, "states", json_type_array);

		cell(&t, o, "name");
		cell(&t, o, "owner");
		cell(&t, o, "preferred_owner");
		cell(&t, o, "failback");
		for (size_t c = 0; c < ncols; c++) {
			json_object *st = NULL, *s, *pref;

			for (size_t k = 0; states && k < json_object_array_length(states) && !st; k++) {
				json_object *e = json_object_array_get_idx(states, k);
				json_object *node = member(e, "node", json_type_string);

				if (node && strcmp(json_object_get_string(node), cols[c]) == 0)
					st = e;
			}
			s = st ? member(st, "state", json_type_string) : NULL;
			pref = st ? member(st, "preferred", json_type_boolean) : NULL;
			if (s)
				isergwctl_table_cell(&t, "%s%s", state_abbrev(json_object_get_string(s)),
					   pref && json_object_get_boolean(pref) ? "*" : "");
			else
				isergwctl_table_cell(&t, "-");
		}
	}
	return isergwctl_table_print(&t, f);
}

static int cluster_view(FILE *f, json_object *doc)
{
	json_object *members = member(doc, "members", json_type_array);

	if (!members || objects(members))
		return -EBADMSG;
	if (kv_lines(f, doc, "members"))
		return -ENOMEM;
	fprintf(f, "\n");
	return nodes_table(f, members);
}

/* A table of the items' keys (headers in upper case, '_' as ' '); "none" when empty. */
static int keys_table(FILE *f, json_object *items, const char *const *keys, size_t nkeys,
		      const char *none)
{
	struct isergwctl_table t;
	size_t n = json_object_array_length(items);

	if (n == 0) {
		fprintf(f, "%s\n", none);
		return 0;
	}
	isergwctl_table_init(&t, nkeys);
	for (size_t k = 0; k < nkeys; k++) {
		char h[64];
		size_t i;

		for (i = 0; keys[k][i] && i < sizeof(h) - 1; i++)
			h[i] = keys[k][i] == '_' ? ' ' : (char)(keys[k][i] >= 'a' && keys[k][i] <= 'z' ?
							       keys[k][i] - 32 : keys[k][i]);
		h[i] = '\0';
		isergwctl_table_cell(&t, "%s", h);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < nkeys; k++)
			cell(&t, json_object_array_get_idx(items, i), keys[k]);
	return isergwctl_table_print(&t, f);
}

static int acls_table(FILE *f, json_object *items)
{
	struct isergwctl_table t;
	size_t n = json_object_array_length(items);

	if (n == 0) {
		fprintf(f, "no ACLs (any initiator may log in)\n");
		return 0;
	}
	isergwctl_table_init(&t, 2);
	isergwctl_table_cell(&t, "INITIATOR");
	isergwctl_table_cell(&t, "CHAP USER");
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(items, i), *chap;

		chap = member(o, "chap", json_type_object);
		cell(&t, o, "initiator");
		if (chap)
			cell(&t, chap, "user");
		else
			isergwctl_table_cell(&t, "(the target's)");
	}
	return isergwctl_table_print(&t, f);
}

static int sessions_table(FILE *f, json_object *items)
{
	struct isergwctl_table t;
	size_t n = json_object_array_length(items);

	if (n == 0) {
		fprintf(f, "no sessions\n");
		return 0;
	}
	isergwctl_table_init(&t, 8);
	isergwctl_table_cell(&t, "TSIH");
	isergwctl_table_cell(&t, "NODE");
	isergwctl_table_cell(&t, "TYPE");
	isergwctl_table_cell(&t, "TRANSPORT");
	isergwctl_table_cell(&t, "INITIATOR");
	isergwctl_table_cell(&t, "TARGET");
	isergwctl_table_cell(&t, "PORTAL");
	isergwctl_table_cell(&t, "CONNECTIONS");
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(items, i), *cs;

		cs = member(o, "connections", json_type_array);
		cell(&t, o, "tsih");
		cell(&t, o, "node");
		cell(&t, o, "type");
		cell(&t, o, "transport");
		cell(&t, o, "initiator");
		cell(&t, o, "target");
		cell(&t, o, "portal");
		isergwctl_table_cell(&t, "%zu", cs ? json_object_array_length(cs) : 0);
	}
	return isergwctl_table_print(&t, f);
}

int isergwctl_rest_render(FILE *f, enum isergwctl_view view, struct json_object *doc)
{
	json_object *items, *arr;
	int rc;

	if (!json_object_is_type(doc, json_type_object))
		return -EBADMSG;
	switch (view) {
	case ISERGWCTL_VIEW_TARGETS:
		return items_of(doc, &items) ?: targets_table(f, items);
	case ISERGWCTL_VIEW_LUNS:
		return items_of(doc, &items) ?: luns_table(f, items);
	case ISERGWCTL_VIEW_NODES:
		return items_of(doc, &items) ?: nodes_table(f, items);
	case ISERGWCTL_VIEW_DGS:
		return items_of(doc, &items) ?: groups_table(f, items);
	case ISERGWCTL_VIEW_TARGET:
		if ((rc = kv_lines(f, doc, "luns")))
			return rc;
		arr = member(doc, "luns", json_type_array);
		if (!arr)
			return 0;
		if (objects(arr))
			return -EBADMSG;
		fprintf(f, "\n");
		return luns_table(f, arr);
	case ISERGWCTL_VIEW_DG:
		if ((rc = kv_lines(f, doc, "states")))
			return rc;
		fprintf(f, "\n");
		if (!(arr = json_object_new_array()))
			return -ENOMEM;
		json_object_array_add(arr, json_object_get(doc));
		rc = groups_table(f, arr);
		json_object_put(arr);
		return rc;
	case ISERGWCTL_VIEW_CLUSTER:
		return cluster_view(f, doc);
	case ISERGWCTL_VIEW_ACLS:
		return items_of(doc, &items) ?: acls_table(f, items);
	case ISERGWCTL_VIEW_PORTALS: {
		static const char *const keys[] = { "rel_port_id", "url" };

		return items_of(doc, &items) ?: keys_table(f, items, keys, 2, "no portals");
	}
	case ISERGWCTL_VIEW_PORT_GROUPS: {
		static const char *const keys[] = { "tpg_id", "node", "rel_port_ids" };

		return items_of(doc, &items) ?: keys_table(f, items, keys, 3, "no port groups");
	}
	case ISERGWCTL_VIEW_SESSIONS:
		return items_of(doc, &items) ?: sessions_table(f, items);
	case ISERGWCTL_VIEW_SESSION:
		if ((rc = kv_lines(f, doc, "connections")))
			return rc;
		arr = member(doc, "connections", json_type_array);
		if (!arr || objects(arr))
			return arr ? -EBADMSG : 0;
		fprintf(f, "\n");
		{
			static const char *const keys[] = { "cid", "state", "peer", "local",
							    "login_time" };

			return keys_table(f, arr, keys, 5, "no connections");
		}
	case ISERGWCTL_VIEW_CONFIG:
		fprintf(f, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
								  JSON_C_TO_STRING_NOSLASHESCAPE));
		return 0;
	case ISERGWCTL_VIEW_LUN:
	case ISERGWCTL_VIEW_NODE:
	default:
		return kv_lines(f, doc, NULL);
	}
}

/* ------------------------------------------------------------ talking */

struct answer {
	long status;
	char *body;
	size_t len;
	bool too_big;
	char etag[128];
	char location[512];
	char retry_after[32];
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n;
	char *b;

	if (a->len + len > ANSWER_MAX) {
		a->too_big = true;
		return 0;
	}
	b = realloc(a->body, a->len + len + 1);
	if (!b)
		return 0;
	memcpy(b + a->len, p, len);
	a->len += len;
	b[a->len] = '\0';
	a->body = b;
	return len;
}

/* "Name: value" into buf when the header is name; blanks and CRLF trimmed. */
static void header_value(const char *p, size_t len, const char *name, char *buf, size_t buflen)
{
	size_t nl = strlen(name), end;

	if (len <= nl || strncasecmp(p, name, nl) != 0 || p[nl] != ':')
		return;
	p += nl + 1;
	len -= nl + 1;
	while (len && (*p == ' ' || *p == '\t')) {
		p++;
		len--;
	}
	end = len;
	while (end && (p[end - 1] == '\r' || p[end - 1] == '\n' || p[end - 1] == ' '))
		end--;
	snprintf(buf, buflen, "%.*s", (int)end, p);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n;

	if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {     /* a new answer (after 100 Continue) */
		a->etag[0] = a->location[0] = a->retry_after[0] = '\0';
		return len;
	}
	header_value(p, len, "ETag", a->etag, sizeof(a->etag));
	header_value(p, len, "Location", a->location, sizeof(a->location));
	header_value(p, len, "Retry-After", a->retry_after, sizeof(a->retry_after));
	return len;
}

/* The one place a CURLcode becomes a negative errno. */
static int curl_rc(CURLcode c)
{
	switch (c) {
	case CURLE_OK:
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_SHUTDOWN_FAILED:
		return -EKEYREJECTED;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		return -ECONNRESET;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return -EINVAL;
	case CURLE_WRITE_ERROR:
		return -EFBIG;
	default:
		return -EPROTO;
	}
}

struct client {
	const struct isergwctl_rest_opts *o;
	const char *api;                 /* without a trailing '/' */
	char base[1024];
	char auth[TOKEN_MAX + 32];       /* "Authorization: Bearer ..." or "" */
	int64_t deadline;
};

static int left_ms(const struct client *cl)
{
	int64_t left = cl->deadline - isergwctl_now_ms();

	return left <= 0 ? 1 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/*
 * One request: the answer in *a (status, body, headers). 0, or the exit
 * status of a request that got no HTTP answer (reason printed).
 */
static int http(struct client *cl, const char *method, const char *path, json_object *body,
		const char *if_match, struct answer *a)
{
	char url[2048], errbuf[CURL_ERROR_SIZE] = "", im[160];
	struct curl_slist *h = NULL, *h2;
	const char *text = NULL;
	CURL *c;
	CURLcode cc;
	int rc, ret = ISERGWCTL_EXIT_OK;

	memset(a, 0, sizeof(*a));
	if ((size_t)snprintf(url, sizeof(url), "%s%s", cl->base, path) >= sizeof(url)) {
		fprintf(stderr, "isergwctl: the URL is too long\n");
		return ISERGWCTL_EXIT_USAGE;
	}
	c = curl_easy_init();
	if (!c) {
		fprintf(stderr, "isergwctl: cannot start libcurl\n");
		return ISERGWCTL_EXIT_CONNECT;
	}
#define H(s) do { if (!(h2 = curl_slist_append(h, (s)))) goto nomem; h = h2; } while (0)
	H("Accept: application/json, application/problem+json");
	if (cl->auth[0])
		H(cl->auth);
	if (if_match && if_match[0]) {
		snprintf(im, sizeof(im), "If-Match: %s", if_match);
		H(im);
	}
	if (body) {
		H("Content-Type: application/json");
		H("Expect:");
		text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
							    JSON_C_TO_STRING_NOSLASHESCAPE);
	}
#undef H
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left_ms(cl));
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "isergwctl");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	if (cl->o->cacert)
		curl_easy_setopt(c, CURLOPT_CAINFO, cl->o->cacert);
	if (cl->o->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (text) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
	}
	cc = curl_easy_perform(c);
	rc = curl_rc(cc);
	if (rc) {
		if (a->too_big)
			fprintf(stderr, "isergwctl: %s: an answer above %u bytes\n", cl->api, ANSWER_MAX);
		else
			fprintf(stderr, "isergwctl: %s %s: %s%s%s\n", method, url,
				rc == -ETIMEDOUT ? "no answer in time: " :
				rc == -EKEYREJECTED ? "TLS: " : "",
				errbuf[0] ? errbuf : curl_easy_strerror(cc),
				rc == -EKEYREJECTED && !cl->o->cacert ? " (--cacert FILE for a private CA)" : "");
		ret = ISERGWCTL_EXIT_CONNECT;
		free(a->body);
		a->body = NULL;
		a->len = 0;
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return ret;
nomem:
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	fprintf(stderr, "isergwctl: out of memory\n");
	return ISERGWCTL_EXIT_CONNECT;
}

/* The answer's body as JSON, or NULL with "a garbled answer" printed. */
static json_object *answer_json(const struct client *cl, const struct answer *a)
{
	json_object *doc = a->len ? parse_strict(a->body, a->len) : NULL;

	if (!doc || !json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		fprintf(stderr, "isergwctl: %s: a %ld answer that is not a JSON object\n", cl->api,
			a->status);
		return NULL;
	}
	return doc;
}

static int refused(const struct answer *a)
{
	char *msg = isergwctl_problem_message(a->status, a->body, a->len, a->retry_after);

	fprintf(stderr, "isergwctl: %s\n", msg ? msg : "out of memory");
	free(msg);
	return isergwctl_rest_exit(a->status);
}

/* "n1, n2" of a string array, into buf. */
static const char *names(json_object *arr, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; arr && i < json_object_array_length(arr) && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
				      json_object_get_string(json_object_array_get_idx(arr, i)));
	return buf[0] ? buf : "-";
}

/* A 202: print the operation; with --wait poll it. The exit status. */
static int accepted(struct client *cl, const struct isergwctl_rest_req *r, struct answer *a)
{
	json_object *op = answer_json(cl, a), *done, *id;
	char path[600], applied[1024], pending[1024];
	int rc;

	if (!op)
		return ISERGWCTL_EXIT_CONNECT;
	id = member(op, "id", json_type_string);
	if (!id || !member(op, "done", json_type_boolean)) {
		fprintf(stderr, "isergwctl: %s: a 202 answer without an operation\n", cl->api);
		json_object_put(op);
		return ISERGWCTL_EXIT_CONNECT;
	}
	if (!r->json)
		printf("%s: accepted, operation %s: applied by %s; pending on %s\n", r->what,
		       json_object_get_string(id), names(member(op, "applied", json_type_array), applied,
							 sizeof(applied)),
		       names(member(op, "pending", json_type_array), pending, sizeof(pending)));
	if (!r->wait) {
		if (r->json)
			isergwctl_print_json(op);
		else
			json_object_put(op);
		return ISERGWCTL_EXIT_OK;
	}
	snprintf(path, sizeof(path), "/api/v1/operations/%s", json_object_get_string(id));
	for (;;) {
		struct answer b;
		json_object *next;

		done = member(op, "done", json_type_boolean);
		if (done && json_object_get_boolean(done)) {
			if (r->json)
				isergwctl_print_json(op);
			else {
				printf("operation %s done: applied by %s\n", json_object_get_string(id),
				       names(member(op, "applied", json_type_array), applied, sizeof(applied)));
				json_object_put(op);
			}
			return ISERGWCTL_EXIT_OK;
		}
		if (cl->deadline - isergwctl_now_ms() <= POLL_MS)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = POLL_MS * 1000000L }, NULL);
		if ((rc = http(cl, "GET", path, NULL, NULL, &b)))
			break;
		if (b.status != 200) {
			json_object_put(op);
			rc = refused(&b);
			free(b.body);
			return rc;
		}
		next = answer_json(cl, &b);
		free(b.body);
		if (!next) {
			json_object_put(op);
			return ISERGWCTL_EXIT_CONNECT;
		}
		json_object_put(op);
		op = next;
		id = member(op, "id", json_type_string);
		if (!id) {
			json_object_put(op);
			return ISERGWCTL_EXIT_CONNECT;
		}
	}
	fprintf(stderr, "isergwctl: operation %s not done when --wait ran out: pending on %s\n",
		json_object_get_string(id),
		names(member(op, "pending", json_type_array), pending, sizeof(pending)));
	if (r->json)
		isergwctl_print_json(op);
	else
		json_object_put(op);
	return ISERGWCTL_EXIT_PENDING;
}

/* A write answered 200, 201 or 204. */
static int changed(const struct client *cl, const struct isergwctl_rest_req *r, const struct answer *a)
{
	const char *verb = strcmp(r->method, "POST") == 0 ? "created" :
			   strcmp(r->method, "DELETE") == 0 ? "deleted" :
			   strcmp(r->method, "PUT") == 0 ? "imported" : "changed";
	json_object *doc;

	if (a->len) {
		if (!(doc = answer_json(cl, a)))
			return ISERGWCTL_EXIT_CONNECT;
		if (r->json) {
			isergwctl_print_json(doc);
			return ISERGWCTL_EXIT_OK;
		}
		json_object_put(doc);
	}
	if (!r->json) {
		printf("%s %s", r->what, verb);
		if (a->location[0] && strcmp(r->method, "POST") == 0)
			printf(" at %s", a->location);
		if (a->etag[0])
			printf(", ETag %s", a->etag);
		printf("\n");
	}
	return ISERGWCTL_EXIT_OK;
}

/* ------------------------------------------------------------ the token */

/*
 * The token of path (or of the defaults), as "Authorization: Bearer T" in
 * cl->auth, or nothing when no file is named and the default one does not
 * exist. 0, or the exit status (reason printed). The token is never printed.
 */
static int load_token(struct client *cl, const char *path)
{
	bool named = path != NULL;
	char buf[TOKEN_MAX + 2];
	struct stat st;
	size_t len;
	ssize_t n;
	int fd;

	if (!path)
		path = getenv("ISERGW_TOKEN_FILE");
	named = named || (path && path[0]);
	if (!path || !path[0])
		path = ISERGWCTL_TOKEN_DEFAULT;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (!named && errno == ENOENT)
			return 0;
		fprintf(stderr, "isergwctl: token file %s: %s\n", path, strerror(errno));
		return ISERGWCTL_EXIT_AUTH;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "isergwctl: token file %s: not a regular file\n", path);
		goto err_close;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		fprintf(stderr, "isergwctl: token file %s is open to group or others (mode %04o): "
			"refused; chmod 600 %s\n", path, (unsigned)(st.st_mode & 07777), path);
		goto err_close;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		fprintf(stderr, "isergwctl: token file %s: %s\n", path, strerror(errno));
		return ISERGWCTL_EXIT_AUTH;
	}
	buf[n] = '\0';
	len = strcspn(buf, "\r\n");
	if (len == 0 || len > TOKEN_MAX) {     /* read TOKEN_MAX + 1 bytes: too long is seen */
		fprintf(stderr, "isergwctl: token file %s: no token on its first line (1..%u characters)\n",
			path, TOKEN_MAX);
		explicit_bzero(buf, sizeof(buf));
		return ISERGWCTL_EXIT_AUTH;
	}
	for (size_t i = 0; i < len; i++) {
		if (buf[i] <= ' ' || buf[i] >= 0x7f) {
			fprintf(stderr, "isergwctl: token file %s: the token has a blank or a control "
				"character\n", path);
			explicit_bzero(buf, sizeof(buf));
			return ISERGWCTL_EXIT_AUTH;
		}
	}
	snprintf(cl->auth, sizeof(cl->auth), "Authorization: Bearer %.*s", (int)len, buf);
	explicit_bzero(buf, sizeof(buf));
	return 0;
err_close:
	close(fd);
	return ISERGWCTL_EXIT_AUTH;
}

/* ------------------------------------------------------------ entry */

int isergwctl_rest(int argc, char **argv, const struct isergwctl_rest_opts *o)
{
	struct isergwctl_rest_req r;
	struct client cl = { .o = o };
	struct answer a;
	json_object *doc;
	char err[512];
	size_t blen;
	int rc;

	if (isergwctl_rest_parse(argc, argv, &r, err, sizeof(err))) {
		fprintf(stderr, "isergwctl: %s\nTry 'isergwctl %s --help'.\n", err,
			argc > 0 ? argv[0] : "target");
		return ISERGWCTL_EXIT_USAGE;
	}
	r.json = r.json || o->json;
	if (r.help) {
		isergwctl_rest_usage(stdout);
		return ISERGWCTL_EXIT_OK;
	}
	cl.api = o->api ? o->api : getenv("ISERGW_API");
	if (!cl.api || !cl.api[0])
		cl.api = ISERGWCTL_API_DEFAULT;
	blen = strlen(cl.api);
	while (blen && cl.api[blen - 1] == '/')
		blen--;
	if ((strncmp(cl.api, "http://", 7) != 0 && strncmp(cl.api, "https://", 8) != 0) ||
	    blen >= sizeof(cl.base)) {
		isergwctl_rest_req_free(&r);
		return usage_err("--api wants an http:// or https:// URL, not '%s'", cl.api);
	}
	snprintf(cl.base, sizeof(cl.base), "%.*s", (int)blen, cl.api);
	if (o->insecure && strncmp(cl.api, "https://", 8) == 0)
		fprintf(stderr, "isergwctl: warning: --insecure: the certificate of %s is not verified; "
			"anyone on the path can read and change this request and its token\n", cl.api);
	if ((rc = load_token(&cl, o->token_file))) {
		isergwctl_rest_req_free(&r);
		return rc;
	}
	if (cl.auth[0] && !isergwctl_url_private(cl.base))
		fprintf(stderr, "isergwctl: warning: the token goes in clear text to %s (https:// "
			"keeps it private)\n", cl.base);
	cl.deadline = isergwctl_now_ms() + (o->timeout_ms > 0 ? o->timeout_ms : 30000);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "isergwctl: cannot start libcurl\n");
		rc = ISERGWCTL_EXIT_CONNECT;
		goto out;
	}
	rc = http(&cl, r.method, r.path, r.body, r.if_match, &a);
	if (rc)
		goto out_curl;
	if (a.status == 202 && strcmp(r.method, "GET") != 0) {
		rc = accepted(&cl, &r, &a);
	} else if (a.status < 200 || a.status >= 300) {
		rc = refused(&a);
	} else if (r.view == ISERGWCTL_VIEW_CHANGE) {
		rc = changed(&cl, &r, &a);
	} else if (!(doc = answer_json(&cl, &a))) {
		rc = ISERGWCTL_EXIT_CONNECT;
	} else if (r.json) {
		isergwctl_print_json(doc);
	} else {
		rc = isergwctl_rest_render(stdout, r.view, doc);
		if (rc)
			fprintf(stderr, "isergwctl: %s: %s\n", cl.api,
				rc == -ENOMEM ? "out of memory" : "an answer that does not fit its resource");
		rc = rc ? ISERGWCTL_EXIT_CONNECT : ISERGWCTL_EXIT_OK;
		json_object_put(doc);
	}
	free(a.body);
out_curl:
	curl_global_cleanup();
out:
	explicit_bzero(cl.auth, sizeof(cl.auth));
	isergwctl_rest_req_free(&r);
	return rc;
}
