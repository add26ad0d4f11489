/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl's REST commands, the pure half that turns a command line into
 * an HTTP request (isergwctl_rest_parse(): the command table, the options,
 * the operands as percent-encoded path segments, the JSON body from the
 * options, a --from-json file or KEY=VALUE merge patches). Unit-tested by
 * tests/unit/test_isergwctl_rest.c; the talking is in isergwctl_rest.c.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "isergwctl.h"

#define FILE_MAX      (1u << 20)    /* a --from-json or import file: isergw-api's body cap */
#define NAME_MAX_LEN  255u          /* an IQN, node or device group name given */

/* ------------------------------------------------------------ pure: merge patch */

/*
 * One JSON value filling s[0..len) exactly, s[len] being '\0' (which ends a
 * number at the end): json-c in strict mode (no single quotes, no NaN, no
 * leading zeros, no trailing commas). NULL when it is not that.
 */
json_object *isergwctl_json_parse_strict(const char *s, size_t len)
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
		o = isergwctl_json_parse_strict(v, len);
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

	if (!eq)
		return gw_errf(err, errlen, -EINVAL, "'%s' is not KEY=VALUE", kv);
	klen = (size_t)(eq - kv);
	if (klen == 0 || klen > NAME_MAX_LEN)
		return gw_errf(err, errlen, -EINVAL, "'%s': the key must have 1..%u characters",
			       kv, NAME_MAX_LEN);
	memcpy(key, kv, klen);
	key[klen] = '\0';
	for (size_t i = 0; i < klen; i++) {
		if (!((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= 'A' && key[i] <= 'Z') ||
		      (key[i] >= '0' && key[i] <= '9') || key[i] == '_' || key[i] == '-'))
			return gw_errf(err, errlen, -EINVAL, "'%s': a key of letters, digits, '_' and '-' only",
				       key);
	}
	if (json_object_object_get_ex(patch, key, NULL))
		return gw_errf(err, errlen, -EINVAL, "'%s' given twice", key);
	if (kv_value(eq + 1, &v) || json_object_object_add(patch, key, v)) {
		json_object_put(v);
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
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
/* The options: --json and --help, then one per OPT_* bit, in the bits' order. */
#define OPT_FIRST 2
static const struct option rest_opts[] = {
	ISERGWCTL_OPT_JSON,
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
	ISERGWCTL_OPT_END,
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
	return gw_errf(err, errlen, -ENAMETOOLONG, "the request path would exceed %zu bytes",
		       sizeof(r->path) - 1);
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

	if (!f)
		return gw_errf(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
	buf = malloc(FILE_MAX + 1);
	if (!buf) {
		rc = gw_errf(err, errlen, -ENOMEM, "out of memory");
		goto out_close;
	}
	while ((n = fread(buf + len, 1, FILE_MAX + 1 - len, f)) > 0 && len + n <= FILE_MAX)
		len += n;
	if (n > 0 || ferror(f)) {
		rc = n > 0 ? gw_errf(err, errlen, -EFBIG, "%s: larger than %u bytes", path, FILE_MAX) :
			     gw_errf(err, errlen, -EIO, "%s: read error", path);
		goto out_free;
	}
	buf[len] = '\0';
	*out = isergwctl_json_parse_strict(buf, len);
	if (!*out || !json_object_is_type(*out, json_type_object)) {
		json_object_put(*out);
		*out = NULL;
		rc = gw_errf(err, errlen, -EINVAL, "%s: not a JSON object", path);
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
		if (isergwctl_parse_u32(ops[1], 16383, &lun))
			return gw_errf(err, errlen, -EINVAL, "lun %s: LUN wants a number 0..16383, not '%s'",
				       v, ops[1]);
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
			if (isergwctl_parse_u32(ops[1], 65535, &id) || id == 0)
				return gw_errf(err, errlen, -EINVAL, "portal %s: ID wants a rel_port_id 1..65535, not '%s'",
					       v, ops[1]);
			rc = path_add(r, ops[1], err, errlen);
			snprintf(r->what, sizeof(r->what), "portal %u of %.200s", id, ops[0]);
		}
	} else if (strcmp(c->noun, "port-group") == 0) {
		rc = path_add(r, "port-groups", err, errlen);
	} else if (strcmp(c->noun, "session") == 0) {
		uint32_t tsih;

		rc = path_add(r, "sessions", err, errlen);
		if (!rc && nops) {
			if (isergwctl_parse_u32(ops[0], 65535, &tsih) || tsih == 0)
				return gw_errf(err, errlen, -EINVAL, "session %s: TSIH wants a number 1..65535, not '%s'",
					       v, ops[0]);
			rc = path_add(r, ops[0], err, errlen);
			snprintf(r->what, sizeof(r->what), "session %u", tsih);
			if (!rc && a->grace) {
				uint32_t g;

				if (isergwctl_parse_u32(a->grace, 3600, &g))
					return gw_errf(err, errlen, -EINVAL, "--grace wants 0..3600 seconds, not '%s'",
						       a->grace);
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
			rc = gw_errf(err, errlen, -EINVAL, "%s: its \"iqn\" is not %s",
				     a->from_json, ops[0]);
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
			rc = gw_errf(err, errlen, -EINVAL, "lun create needs --path (or a \"path\" in --from-json)");
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
	rc = gw_errf(err, errlen, -ENOMEM, "out of memory");
err_put:
	json_object_put(b);
	return rc;
}

int isergwctl_rest_parse(int argc, char **argv, struct isergwctl_rest_req *r, char *err, size_t errlen)
{
	struct isergwctl_rest_args a = { 0 };
	char *pos[64], why[256];
	struct isergwctl_args args = { .opts = rest_opts, .first = OPT_FIRST, .pos = pos,
				       .max = sizeof(pos) / sizeof(pos[0]) };
	size_t npos, words = 2;
	const struct rest_cmd *cmd = NULL;
	const char *unwanted;
	int opt;

	memset(r, 0, sizeof(*r));
	if (argc < 1)
		return gw_errf(err, errlen, -EINVAL, "a command is missing");
	pos[args.npos++] = argv[0];     /* the noun: getopt skips argv[0] */
	optind = 0;
	while ((opt = isergwctl_args_next(&args, argc, argv)) != -1) {
		switch (opt) {
		case ISERGWCTL_ARGS_FULL:
			if (args.after_dashes)
				return gw_errf(err, errlen, -EINVAL, "too many operands");
			return gw_errf(err, errlen, -EINVAL, "too many operands ('%s')", args.extra);
		case 'm':
			if (!optarg[0] || strlen(optarg) >= sizeof(r->if_match) || !name_ok(optarg))
				return gw_errf(err, errlen, -EINVAL, "--if-match wants an entity tag (\"gN\" or *), not '%s'",
					       optarg);
			snprintf(r->if_match, sizeof(r->if_match), "%s", optarg);
			break;
		case 'w':
			r->wait = true;
			break;
		case 'a':
			a.alias = optarg;
			break;
		case 'f':
			a.from_json = optarg;
			break;
		case 'p':
			a.path = optarg;
			break;
		case 'z':
			if (!optarg[0])
				return gw_errf(err, errlen, -EINVAL, "--size wants bytes or a size with K, M, G, T");
			a.size = optarg;
			break;
		case 'l':
			if (isergwctl_parse_u32(optarg, 16383, &a.lun_n))
				return gw_errf(err, errlen, -EINVAL, "--lun wants a number 0..16383, not '%s'",
					       optarg);
			a.lun = true;
			break;
		case 'r':
			if (isergwctl_parse_u32(optarg, 65535, &a.rel_n) || a.rel_n == 0)
				return gw_errf(err, errlen, -EINVAL, "--rel-port-id wants a number 1..65535, not '%s'",
					       optarg);
			a.rel = true;
			break;
		case 'g':
			a.grace = optarg;
			break;
		case 'F':
			a.force = true;
			break;
		case 'd':
			if (!name_ok(optarg))
				return gw_errf(err, errlen, -EINVAL, "--device-group wants a name, not '%s'",
					       optarg);
			a.device_group = optarg;
			break;
		default:
			isergwctl_args_bad_opt(opt, argv, why, sizeof(why));
			return gw_errf(err, errlen, -EINVAL, "%s", why);
		}
	}
	npos = args.npos;
	r->json = args.json;
	r->help = args.help;
	if (r->help || (npos > 1 && strcmp(pos[1], "help") == 0)) {
		r->help = true;
		return 0;
	}
	if (npos == 0)
		return gw_errf(err, errlen, -EINVAL, "a command is missing");
	if (npos < 2)
		return gw_errf(err, errlen, -EINVAL, "%s needs a verb", pos[0]);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !cmd; i++)
		if (strcmp(cmds[i].noun, pos[0]) == 0 && strcmp(cmds[i].verb, pos[1]) == 0)
			cmd = &cmds[i];
	if (!cmd)
		return gw_errf(err, errlen, -EINVAL, "%s: unknown verb '%s'", pos[0], pos[1]);
	if (npos < words + cmd->nargs)
		return gw_errf(err, errlen, -EINVAL, "%s %s needs %s",
			       cmd->noun, cmd->verb, cmd->operands);
	if (npos > words + cmd->nargs && !cmd->more)
		return gw_errf(err, errlen, -EINVAL, "%s %s: unexpected '%s'",
			       cmd->noun, cmd->verb, pos[words + cmd->nargs]);
	unwanted = isergwctl_opt_unwanted(rest_opts, OPT_FIRST, args.given, cmd->opts);
	if (unwanted)
		return gw_errf(err, errlen, -EINVAL, "%s %s does not take --%s", cmd->noun, cmd->verb,
			       unwanted);
	/* names: every operand but a file and KEY=VALUEs */
	for (size_t i = words; i < npos; i++) {
		bool name = strcmp(cmd->noun, "config") != 0 && !(cmd->more && i >= words + 2);

		if (name && !name_ok(pos[i]))
			return gw_errf(err, errlen, -EINVAL, "%s %s: '%s' is not a name (printable, no blank, 1..%u bytes)",
				       cmd->noun, cmd->verb, pos[i], NAME_MAX_LEN);
	}
	return build(cmd, pos + words, npos - words, &a, r, err, errlen);
}
