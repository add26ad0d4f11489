// LINK: isergwctl_rest_lib isergwctl_util PkgConfig::JSONC
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure half of isergwctl's REST commands (mgmt/isergwctl_rest.c):
 * arguments into requests (method, path, body, If-Match, --wait), usage
 * errors before anything is sent, KEY=VALUE into a JSON merge patch with
 * types, problem documents into the line printed, HTTP statuses into exit
 * statuses, and the tables.
 */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "isergwctl.h"

#define MAX_ARGS 24

/* Parse a NULL-terminated list of words: the return value, *r filled. */
static int parse(struct isergwctl_rest_req *r, char *err, size_t errlen, ...)
{
	char *argv[MAX_ARGS];
	int argc = 0;
	va_list ap;

	va_start(ap, errlen);
	for (char *s; (s = va_arg(ap, char *)) && argc < MAX_ARGS;)
		argv[argc++] = s;
	va_end(ap);
	return isergwctl_rest_parse(argc, argv, r, err, errlen);
}

static char *body_text(const struct isergwctl_rest_req *r)
{
	return r->body ? strdup(json_object_to_json_string_ext(r->body, JSON_C_TO_STRING_PLAIN |
								       JSON_C_TO_STRING_NOSLASHESCAPE))
		       : NULL;
}

static void expect_req(const char *method, const char *path, const char *body, int view, ...)
{
	struct isergwctl_rest_req r;
	char err[256] = "", *argv[MAX_ARGS], *text;
	int argc = 0;
	va_list ap;

	va_start(ap, view);
	for (char *s; (s = va_arg(ap, char *)) && argc < MAX_ARGS;)
		argv[argc++] = s;
	va_end(ap);
	if (isergwctl_rest_parse(argc, argv, &r, err, sizeof(err)))
		fail_msg("%s %s: %s", argv[0], argv[1], err);
	assert_string_equal(r.method, method);
	assert_string_equal(r.path, path);
	assert_int_equal(r.view, view);
	text = body_text(&r);
	if (body)
		assert_string_equal(text ? text : "(none)", body);
	else
		assert_null(text);
	free(text);
	isergwctl_rest_req_free(&r);
}

static void test_requests(void **state)
{
	(void)state;
	expect_req("GET", "/api/v1/targets", NULL, ISERGWCTL_VIEW_TARGETS, "target", "list", NULL);
	expect_req("GET", "/api/v1/targets/iqn.2026-11.org.example:db", NULL, ISERGWCTL_VIEW_TARGET,
		   "target", "show", "iqn.2026-11.org.example:db", NULL);
	expect_req("POST", "/api/v1/targets", "{\"iqn\":\"iqn.2026-11.x:a\",\"alias\":\"db\"}",
		   ISERGWCTL_VIEW_CHANGE, "target", "create", "iqn.2026-11.x:a", "--alias", "db", NULL);
	expect_req("DELETE", "/api/v1/targets/iqn.2026-11.x:a", NULL, ISERGWCTL_VIEW_CHANGE, "target",
		   "delete", "iqn.2026-11.x:a", NULL);
	expect_req("GET", "/api/v1/targets/iqn.2026-11.x:a/luns", NULL, ISERGWCTL_VIEW_LUNS, "lun", "list",
		   "iqn.2026-11.x:a", NULL);
	expect_req("GET", "/api/v1/targets/iqn.2026-11.x:a/luns/7", NULL, ISERGWCTL_VIEW_LUN, "lun", "show",
		   "iqn.2026-11.x:a", "7", NULL);
	expect_req("POST", "/api/v1/targets/iqn.2026-11.x:a/luns",
		   "{\"path\":\"/srv/a.img\",\"size\":\"10G\",\"lun\":3,\"device_group\":\"dg1\"}",
		   ISERGWCTL_VIEW_CHANGE, "lun", "create", "iqn.2026-11.x:a", "--path", "/srv/a.img",
		   "--size", "10G", "--lun", "3", "--device-group", "dg1", NULL);
	/* a size in bytes is a number; options before the operands too */
	expect_req("POST", "/api/v1/targets/iqn.2026-11.x:a/luns", "{\"path\":\"/b\",\"size\":4096}",
		   ISERGWCTL_VIEW_CHANGE, "lun", "--size", "4096", "create", "--path", "/b",
		   "iqn.2026-11.x:a", NULL);
	expect_req("PATCH", "/api/v1/targets/iqn.2026-11.x:a/luns/0",
		   "{\"product\":\"db disk\",\"write_cache\":null,\"readonly\":true}", ISERGWCTL_VIEW_CHANGE,
		   "lun", "set", "iqn.2026-11.x:a", "0", "product=db disk", "write_cache=null",
		   "readonly=true", NULL);
	expect_req("DELETE", "/api/v1/targets/iqn.2026-11.x:a/luns/0", NULL, ISERGWCTL_VIEW_CHANGE, "lun",
		   "delete", "iqn.2026-11.x:a", "0", NULL);
	expect_req("GET", "/api/v1/nodes", NULL, ISERGWCTL_VIEW_NODES, "node", "list", NULL);
	expect_req("GET", "/api/v1/nodes/n2", NULL, ISERGWCTL_VIEW_NODE, "node", "show", "n2", NULL);
	expect_req("PATCH", "/api/v1/nodes/n2", "{\"drained\":true}", ISERGWCTL_VIEW_CHANGE, "node",
		   "drain", "n2", NULL);
	expect_req("PATCH", "/api/v1/nodes/n2", "{\"drained\":false}", ISERGWCTL_VIEW_CHANGE, "node",
		   "undrain", "n2", NULL);
	expect_req("GET", "/api/v1/device-groups", NULL, ISERGWCTL_VIEW_DGS, "device-group", "list", NULL);
	expect_req("GET", "/api/v1/device-groups/dg1", NULL, ISERGWCTL_VIEW_DG, "device-group", "show",
		   "dg1", NULL);
	expect_req("PATCH", "/api/v1/device-groups/dg1", "{\"owner\":\"n3\"}", ISERGWCTL_VIEW_CHANGE,
		   "device-group", "move", "dg1", "n3", NULL);
	expect_req("GET", "/api/v1/config", NULL, ISERGWCTL_VIEW_CONFIG, "config", "export", NULL);
	expect_req("GET", "/api/v1/cluster", NULL, ISERGWCTL_VIEW_CLUSTER, "api", "status", NULL);
	/* a name with characters that are not plain in a path is percent-encoded */
	expect_req("GET", "/api/v1/nodes/a%2Fb%25c", NULL, ISERGWCTL_VIEW_NODE, "node", "show", "a/b%c",
		   NULL);
}

static void test_write_options(void **state)
{
	struct isergwctl_rest_req r;
	char err[256];

	(void)state;
	assert_int_equal(parse(&r, err, sizeof(err), "node", "drain", "n1", "--if-match", "\"g42\"",
			       "--wait", "--json", NULL), 0);
	assert_string_equal(r.if_match, "\"g42\"");
	assert_true(r.wait);
	assert_true(r.json);
	assert_string_equal(r.path, "/api/v1/nodes/n1");
	isergwctl_rest_req_free(&r);
	/* a drain that would leave groups without an owner, forced */
	assert_int_equal(parse(&r, err, sizeof(err), "node", "drain", "n1", "--force", NULL), 0);
	assert_string_equal(r.path, "/api/v1/nodes/n1?force=true");
	isergwctl_rest_req_free(&r);
	assert_int_equal(parse(&r, err, sizeof(err), "target", "list", NULL), 0);
	assert_string_equal(r.if_match, "");
	assert_false(r.wait);
	assert_false(r.json);
	isergwctl_rest_req_free(&r);
	assert_int_equal(parse(&r, err, sizeof(err), "target", "--help", NULL), 0);
	assert_true(r.help);
	assert_int_equal(parse(&r, err, sizeof(err), "lun", "help", NULL), 0);
	assert_true(r.help);
}

static void test_from_json(void **state)
{
	char path[] = "/tmp/test_isergwctl_rest.XXXXXX", err[256];
	struct isergwctl_rest_req r;
	char *text;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("{\"chap\": {\"user\": \"u\", \"secret\": \"s-123456789012\"}, \"queue_depth\": 64}\n", f);
	fclose(f);
	/* the IQN operand is added; --alias too */
	assert_int_equal(parse(&r, err, sizeof(err), "target", "create", "iqn.2026-11.x:a", "--from-json",
			       path, "--alias", "A", NULL), 0);
	text = body_text(&r);
	assert_string_equal(text, "{\"chap\":{\"user\":\"u\",\"secret\":\"s-123456789012\"},"
				  "\"queue_depth\":64,\"iqn\":\"iqn.2026-11.x:a\",\"alias\":\"A\"}");
	free(text);
	isergwctl_rest_req_free(&r);
	/* config import: the file as the body of PUT /api/v1/config */
	assert_int_equal(parse(&r, err, sizeof(err), "config", "import", path, NULL), 0);
	assert_string_equal(r.method, "PUT");
	assert_string_equal(r.path, "/api/v1/config");
	assert_non_null(r.body);
	isergwctl_rest_req_free(&r);
	/* lun create --from-json without a path in it nor --path */
	assert_int_equal(parse(&r, err, sizeof(err), "lun", "create", "iqn.2026-11.x:a", "--from-json",
			       path, NULL), -EINVAL);
	assert_non_null(strstr(err, "--path"));
	/* a file whose iqn differs from the operand */
	f = fopen(path, "w");
	fputs("{\"iqn\": \"iqn.2026-11.x:other\"}", f);
	fclose(f);
	assert_int_equal(parse(&r, err, sizeof(err), "target", "create", "iqn.2026-11.x:a", "--from-json",
			       path, NULL), -EINVAL);
	/* not JSON, not an object */
	f = fopen(path, "w");
	fputs("[1, 2]", f);
	fclose(f);
	assert_int_equal(parse(&r, err, sizeof(err), "config", "import", path, NULL), -EINVAL);
	assert_non_null(strstr(err, "not a JSON object"));
	f = fopen(path, "w");
	fputs("{\"a\": ", f);
	fclose(f);
	assert_int_equal(parse(&r, err, sizeof(err), "config", "import", path, NULL), -EINVAL);
	unlink(path);
	assert_true(parse(&r, err, sizeof(err), "config", "import", path, NULL) < 0);
	assert_non_null(strstr(err, "cannot open"));
}

static void expect_usage(const char *want, ...)
{
	struct isergwctl_rest_req r;
	char err[256] = "", *argv[MAX_ARGS];
	int argc = 0;
	va_list ap;

	va_start(ap, want);
	for (char *s; (s = va_arg(ap, char *)) && argc < MAX_ARGS;)
		argv[argc++] = s;
	va_end(ap);
	assert_int_equal(isergwctl_rest_parse(argc, argv, &r, err, sizeof(err)), -EINVAL);
	if (!strstr(err, want))
		fail_msg("'%s' does not say '%s'", err, want);
	assert_null(r.body);
}

static void test_usage_errors(void **state)
{
	(void)state;
	expect_usage("needs a verb", "target", NULL);
	expect_usage("unknown verb 'frob'", "target", "frob", NULL);
	expect_usage("target show needs IQN", "target", "show", NULL);
	expect_usage("unexpected 'extra'", "target", "show", "iqn.x", "extra", NULL);
	expect_usage("lun set needs IQN LUN KEY=VALUE...", "lun", "set", "iqn.x", "0", NULL);
	expect_usage("LUN wants a number", "lun", "show", "iqn.x", "zero", NULL);
	expect_usage("LUN wants a number", "lun", "delete", "iqn.x", "16384", NULL);
	expect_usage("--lun wants a number", "lun", "create", "iqn.x", "--path", "/a", "--lun", "-1", NULL);
	expect_usage("target list does not take --wait", "target", "list", "--wait", NULL);
	expect_usage("node drain does not take --alias", "node", "drain", "n1", "--alias", "x", NULL);
	expect_usage("node undrain does not take --force", "node", "undrain", "n1", "--force", NULL);
	expect_usage("target create does not take --path", "target", "create", "iqn.x", "--path", "/a",
		     NULL);
	expect_usage("unknown option '--colour'", "node", "list", "--colour", NULL);
	expect_usage("--if-match needs a value", "node", "drain", "n1", "--if-match", NULL);
	expect_usage("--if-match wants an entity tag", "node", "drain", "n1", "--if-match", "a b", NULL);
	expect_usage("is not a name", "node", "show", "a b", NULL);
	expect_usage("is not a name", "node", "show", "", NULL);
	expect_usage("is not KEY=VALUE", "lun", "set", "iqn.x", "0", "product", NULL);
	expect_usage("given twice", "lun", "set", "iqn.x", "0", "a=1", "a=2", NULL);
	expect_usage("device-group move needs NAME NODE", "device-group", "move", "dg1", NULL);
}

/* KEY=VALUE one at a time into a patch: the patch as compact JSON. */
static void expect_patch(const char *kv, const char *want)
{
	json_object *p = json_object_new_object();
	char err[256];

	assert_int_equal(isergwctl_merge_patch_add(p, kv, err, sizeof(err)), 0);
	assert_string_equal(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE), want);
	json_object_put(p);
}

static void test_merge_patch(void **state)
{
	json_object *p;
	char err[256];

	(void)state;
	expect_patch("queue_depth=64", "{\"queue_depth\":64}");
	expect_patch("n=-3", "{\"n\":-3}");
	expect_patch("x=1.5", "{\"x\":1.5}");
	expect_patch("readonly=true", "{\"readonly\":true}");
	expect_patch("thin=false", "{\"thin\":false}");
	expect_patch("write_cache=null", "{\"write_cache\":null}");
	expect_patch("product=db disk", "{\"product\":\"db disk\"}");
	expect_patch("size=10G", "{\"size\":\"10G\"}");
	expect_patch("serial=\"0042\"", "{\"serial\":\"0042\"}");  /* quoted: text */
	expect_patch("serial=0042", "{\"serial\":\"0042\"}");      /* no JSON number: text */
	expect_patch("naa=6001405abc", "{\"naa\":\"6001405abc\"}");
	expect_patch("product=", "{\"product\":\"\"}");
	expect_patch("path=/srv/a=b.img", "{\"path\":\"/srv/a=b.img\"}");
	expect_patch("t=True", "{\"t\":\"True\"}");
	expect_patch("chap={\"user\":\"u\"}", "{\"chap\":{\"user\":\"u\"}}");
	expect_patch("acls=[]", "{\"acls\":[]}");
	expect_patch("x=[1,", "{\"x\":\"[1,\"}");                   /* not JSON: text */

	p = json_object_new_object();
	assert_int_equal(isergwctl_merge_patch_add(p, "=1", err, sizeof(err)), -EINVAL);
	assert_int_equal(isergwctl_merge_patch_add(p, "a.b=1", err, sizeof(err)), -EINVAL);
	assert_int_equal(isergwctl_merge_patch_add(p, "noequals", err, sizeof(err)), -EINVAL);
	assert_int_equal(isergwctl_merge_patch_add(p, "a=1", err, sizeof(err)), 0);
	assert_int_equal(isergwctl_merge_patch_add(p, "a=2", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "twice"));
	json_object_put(p);
}

static void expect_message(long status, const char *body, const char *ra, const char *want)
{
	char *m = isergwctl_problem_message(status, body, body ? strlen(body) : 0, ra);

	assert_non_null(m);
	assert_string_equal(m, want);
	free(m);
}

static void test_problem_message(void **state)
{
	(void)state;
	expect_message(404, "{\"type\":\"about:blank\",\"title\":\"Not Found\",\"status\":404,"
			    "\"detail\":\"no target iqn.x:none\"}", "",
		       "404 Not Found: no target iqn.x:none");
	expect_message(422, "{\"type\":\"about:blank\",\"title\":\"Unprocessable Content\",\"status\":422,"
			    "\"detail\":\"colour: unknown field\",\"field\":\"colour\"}", NULL,
		       "422 Unprocessable Content: colour: unknown field (field: colour)");
	expect_message(503, "{\"title\":\"Service Unavailable\",\"detail\":\"no quorum\"}", "5",
		       "503 Service Unavailable: no quorum (retry after 5 s)");
	expect_message(502, "<html>bad gateway</html>", NULL,
		       "502 : the answer carries no problem document");
	expect_message(500, NULL, NULL, "500 : the answer carries no problem document");
	/* members of the wrong type are ignored */
	expect_message(409, "{\"title\":1,\"detail\":[\"x\"]}", NULL,
		       "409 : the answer carries no problem document");
}

static void test_exit_status(void **state)
{
	static const struct {
		long status;
		int exit;
	} map[] = {
		{ 200, ISERGWCTL_EXIT_OK },          { 201, ISERGWCTL_EXIT_OK },
		{ 202, ISERGWCTL_EXIT_OK },          { 204, ISERGWCTL_EXIT_OK },
		{ 400, ISERGWCTL_EXIT_REFUSED },     { 404, ISERGWCTL_EXIT_REFUSED },
		{ 405, ISERGWCTL_EXIT_REFUSED },     { 409, ISERGWCTL_EXIT_REFUSED },
		{ 412, ISERGWCTL_EXIT_REFUSED },     { 413, ISERGWCTL_EXIT_REFUSED },
		{ 422, ISERGWCTL_EXIT_REFUSED },     { 401, ISERGWCTL_EXIT_AUTH },
		{ 403, ISERGWCTL_EXIT_AUTH },        { 503, ISERGWCTL_EXIT_UNAVAILABLE },
		{ 500, ISERGWCTL_EXIT_CONNECT },     { 504, ISERGWCTL_EXIT_CONNECT },
		{ 302, ISERGWCTL_EXIT_CONNECT },     { 100, ISERGWCTL_EXIT_CONNECT },
		{ 0, ISERGWCTL_EXIT_CONNECT },
	};

	(void)state;
	assert_int_equal(ISERGWCTL_EXIT_OK, 0);
	assert_int_equal(ISERGWCTL_EXIT_REFUSED, 1);
	assert_int_equal(ISERGWCTL_EXIT_USAGE, 2);
	assert_int_equal(ISERGWCTL_EXIT_CONNECT, 3);
	assert_int_equal(ISERGWCTL_EXIT_AUTH, 4);
	assert_int_equal(ISERGWCTL_EXIT_UNAVAILABLE, 5);
	assert_int_equal(ISERGWCTL_EXIT_PENDING, 6);
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (isergwctl_rest_exit(map[i].status) != map[i].exit)
			fail_msg("HTTP %ld: exit %d, not %d", map[i].status,
				 isergwctl_rest_exit(map[i].status), map[i].exit);
}

/* doc (JSON text) rendered as view: what was printed (malloc'd), rc in *rc. */
static char *render(int view, const char *doc, int *rc)
{
	json_object *o = json_tokener_parse(doc);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(o);
	assert_non_null(f);
	*rc = isergwctl_rest_render(f, view, o);
	fclose(f);
	json_object_put(o);
	return out;
}

static void expect_render(int view, const char *doc, const char *want)
{
	int rc;
	char *out = render(view, doc, &rc);

	assert_int_equal(rc, 0);
	assert_string_equal(out, want);
	free(out);
}

static void test_tables(void **state)
{
	int rc;
	char *out;

	(void)state;
	expect_render(ISERGWCTL_VIEW_TARGETS,
		      "{\"items\": [{\"iqn\": \"iqn.2026-11.x:db\", \"alias\": \"database\", \"chap\": "
		      "{\"user\": \"db\"}, \"luns\": [{\"lun\": 0}, {\"lun\": 1}]}, {\"iqn\": \"iqn.2026-11.x:b\", "
		      "\"luns\": [], \"acls\": [{\"initiator\": \"iqn.h\"}]}]}",
		      "TARGET            ALIAS     LUNS  CHAP  ACLS\n"
		      "iqn.2026-11.x:db  database  2     db    0\n"
		      "iqn.2026-11.x:b   -         0     -     1\n");
	expect_render(ISERGWCTL_VIEW_TARGETS, "{\"items\": []}", "no targets\n");
	expect_render(ISERGWCTL_VIEW_LUNS,
		      "{\"items\": [{\"lun\": 0, \"path\": \"/srv/a.img\", \"size\": \"32M\", \"device_group\": "
		      "\"dg1\", \"readonly\": false}, {\"lun\": 12, \"path\": \"/b\", \"size\": 4096, \"product\": "
		      "\"db disk\"}]}",
		      "LUN  SIZE  DEVICE GROUP  READONLY  PRODUCT  PATH\n"
		      "0    32M   dg1           no        -        /srv/a.img\n"
		      "12   4096  -             -         db disk  /b\n");
	expect_render(ISERGWCTL_VIEW_NODES,
		      "{\"items\": [{\"name\": \"n1\", \"nodeid\": 1, \"tpg_id\": 1, \"corosync_member\": true, "
		      "\"agent\": true, \"synced\": true, \"drained\": false, \"applied_generation\": 42, "
		      "\"last_heard_ms\": 120, \"dataplane\": {\"state\": \"failed\"}}]}",
		      "NODE  ID  TPG  COROSYNC  AGENT  SYNCED  DRAINED  APPLIED GEN  HEARD (ms ago)  "
		      "DATA PLANE\n"
		      "n1    1   1    yes       yes    yes     no       42           120             "
		      "failed\n");
	expect_render(ISERGWCTL_VIEW_DGS,
		      "{\"items\": [{\"name\": \"dg1\", \"owner\": \"n1\", \"preferred_owner\": \"n1\", "
		      "\"failback\": \"immediate\", \"states\": [{\"node\": \"n1\", \"tpg_id\": 1, \"state\": \"ao\", "
		      "\"preferred\": true}, {\"node\": \"n2\", \"tpg_id\": 2, \"state\": \"transitioning\", "
		      "\"preferred\": false}]}, {\"name\": \"dg2\", \"owner\": \"\", \"preferred_owner\": \"\", "
		      "\"failback\": \"manual\", \"states\": [{\"node\": \"n2\", \"state\": \"unavailable\"}]}]}",
		      "DEVICE GROUP  OWNER  PREFERRED  FAILBACK   n1   n2\n"
		      "dg1           n1     n1         immediate  ao*  trans\n"
		      "dg2           -      -          manual     -    unavail\n");
	expect_render(ISERGWCTL_VIEW_LUN, "{\"lun\": 3, \"path\": \"/a\", \"thin\": true, \"backend_sessions\": [1]}",
		      "lun               3\n"
		      "path              /a\n"
		      "thin              yes\n"
		      "backend_sessions  [1]\n");
	expect_render(ISERGWCTL_VIEW_TARGET,
		      "{\"iqn\": \"iqn.x:a\", \"luns\": [{\"lun\": 0, \"path\": \"/a\", \"size\": 1}]}",
		      "iqn  iqn.x:a\n"
		      "\n"
		      "LUN  SIZE  DEVICE GROUP  READONLY  PRODUCT  PATH\n"
		      "0    1     -             -         -        /a\n");
	expect_render(ISERGWCTL_VIEW_CLUSTER,
		      "{\"name\": \"c\", \"quorate\": true, \"generation\": 7, \"members\": [{\"name\": \"n1\"}]}",
		      "name        c\n"
		      "quorate     yes\n"
		      "generation  7\n"
		      "\n"
		      "NODE  ID  TPG  COROSYNC  AGENT  SYNCED  DRAINED  APPLIED GEN  HEARD (ms ago)  "
		      "DATA PLANE\n"
		      "n1    -   -    -         -      -       -        -            -               "
		      "-\n");
	expect_render(ISERGWCTL_VIEW_CONFIG, "{\"targets\": []}", "{\n  \"targets\":[\n  ]\n}\n");

	/* answers that do not fit their view */
	out = render(ISERGWCTL_VIEW_TARGETS, "{\"targets\": []}", &rc);
	assert_int_equal(rc, -EBADMSG);
	free(out);
	out = render(ISERGWCTL_VIEW_NODES, "{\"items\": [{\"name\": \"n1\"}, 1]}", &rc);
	assert_int_equal(rc, -EBADMSG);
	assert_string_equal(out, "");            /* nothing printed of it */
	free(out);
	out = render(ISERGWCTL_VIEW_TARGETS, "{\"items\": [{\"iqn\": \"a\"}, []]}", &rc);
	assert_int_equal(rc, -EBADMSG);
	free(out);
	out = render(ISERGWCTL_VIEW_LUNS, "{\"items\": [{\"lun\": 0}, \"x\"]}", &rc);
	assert_int_equal(rc, -EBADMSG);
	free(out);
	out = render(ISERGWCTL_VIEW_CLUSTER, "{\"name\": \"c\"}", &rc);
	assert_int_equal(rc, -EBADMSG);
	free(out);
	out = render(ISERGWCTL_VIEW_DGS, "{\"items\": [{\"name\": \"d\", \"states\": [{\"state\": \"ao\"}]}]}", &rc);
	assert_int_equal(rc, -EBADMSG);
	free(out);
	out = render(ISERGWCTL_VIEW_LUN, "[1]", &rc);
	assert_int_equal(rc, -EBADMSG);
	free(out);
}

static void test_url_private(void **state)
{
	(void)state;
	assert_true(isergwctl_url_private("https://gw1.example:8443"));
	assert_true(isergwctl_url_private("http://127.0.0.1:8080"));
	assert_true(isergwctl_url_private("http://127.0.0.1"));
	assert_true(isergwctl_url_private("http://localhost/"));
	assert_true(isergwctl_url_private("http://[::1]:8080"));
	assert_false(isergwctl_url_private("http://gw1.example:8080"));
	assert_false(isergwctl_url_private("http://127.0.0.10:8080"));
	assert_false(isergwctl_url_private("http://localhost.evil.example"));
}

static void test_nouns(void **state)
{
	static const char *const rest[] = { "target", "lun", "node", "device-group", "config", "api" };
	/* isergwctl's control-socket commands and 'cluster' keep their meaning */
	static const char *const other[] = { "status", "apply", "alua", "lease", "sessions", "counters",
					     "logout", "watch", "cluster", "help", "targets" };

	(void)state;
	for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++)
		assert_true(isergwctl_rest_noun(rest[i]));
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		assert_false(isergwctl_rest_noun(other[i]));
}

/* the resources of ACLs, CHAP, portals, port groups and sessions */
static void test_requests_more(void **state)
{
	char path[64];
	FILE *f;

	(void)state;
	expect_req("PATCH", "/api/v1/targets/iqn.2026-11.x:a",
		   "{\"alias\":\"db\",\"mutual_chap\":null}", ISERGWCTL_VIEW_CHANGE, "target", "set",
		   "iqn.2026-11.x:a", "alias=db", "mutual_chap=null", NULL);
	expect_req("GET", "/api/v1/targets/iqn.2026-11.x:a/acls", NULL, ISERGWCTL_VIEW_ACLS, "acl",
		   "list", "iqn.2026-11.x:a", NULL);
	expect_req("GET", "/api/v1/targets/iqn.2026-11.x:a/acls/iqn.1994-05.com.redhat:h1", NULL,
		   ISERGWCTL_VIEW_OBJECT, "acl", "show", "iqn.2026-11.x:a",
		   "iqn.1994-05.com.redhat:h1", NULL);
	expect_req("POST", "/api/v1/targets/iqn.2026-11.x:a/acls",
		   "{\"initiator\":\"iqn.1994-05.com.redhat:h1\"}", ISERGWCTL_VIEW_CHANGE, "acl",
		   "create", "iqn.2026-11.x:a", "iqn.1994-05.com.redhat:h1", NULL);
	expect_req("PATCH", "/api/v1/targets/iqn.2026-11.x:a/acls/iqn.h", "{\"chap\":null}",
		   ISERGWCTL_VIEW_CHANGE, "acl", "set", "iqn.2026-11.x:a", "iqn.h", "chap=null", NULL);
	expect_req("DELETE", "/api/v1/targets/iqn.2026-11.x:a/acls/iqn.h", NULL, ISERGWCTL_VIEW_CHANGE,
		   "acl", "delete", "iqn.2026-11.x:a", "iqn.h", NULL);
	expect_req("GET", "/api/v1/discovery-chap", NULL, ISERGWCTL_VIEW_OBJECT, "discovery-chap",
		   "show", NULL);
	expect_req("DELETE", "/api/v1/discovery-chap", NULL, ISERGWCTL_VIEW_CHANGE, "discovery-chap",
		   "delete", NULL);
	expect_req("GET", "/api/v1/nodes/n1/portals", NULL, ISERGWCTL_VIEW_PORTALS, "portal", "list",
		   "n1", NULL);
	expect_req("GET", "/api/v1/nodes/n1/portals/4", NULL, ISERGWCTL_VIEW_OBJECT, "portal", "show",
		   "n1", "4", NULL);
	expect_req("POST", "/api/v1/nodes/n1/portals", "{\"url\":\"tcp://10.0.0.1:3261\"}",
		   ISERGWCTL_VIEW_CHANGE, "portal", "create", "n1", "tcp://10.0.0.1:3261", NULL);
	expect_req("POST", "/api/v1/nodes/n1/portals",
		   "{\"url\":\"iser://10.0.0.1\",\"rel_port_id\":9}", ISERGWCTL_VIEW_CHANGE, "portal",
		   "create", "n1", "iser://10.0.0.1", "--rel-port-id", "9", NULL);
	expect_req("PATCH", "/api/v1/nodes/n1/portals/4", "{\"url\":\"tcp://10.0.0.9\"}",
		   ISERGWCTL_VIEW_CHANGE, "portal", "set", "n1", "4", "url=tcp://10.0.0.9", NULL);
	expect_req("DELETE", "/api/v1/nodes/n1/portals/4", NULL, ISERGWCTL_VIEW_CHANGE, "portal",
		   "delete", "n1", "4", NULL);
	expect_req("GET", "/api/v1/port-groups", NULL, ISERGWCTL_VIEW_PORT_GROUPS, "port-group", "list",
		   NULL);
	expect_req("GET", "/api/v1/sessions", NULL, ISERGWCTL_VIEW_SESSIONS, "session", "list", NULL);
	expect_req("GET", "/api/v1/sessions/3", NULL, ISERGWCTL_VIEW_SESSION, "session", "show", "3",
		   NULL);
	expect_req("DELETE", "/api/v1/sessions/3", NULL, ISERGWCTL_VIEW_CHANGE, "session", "logout",
		   "3", NULL);
	expect_req("DELETE", "/api/v1/sessions/3?grace_s=5", NULL, ISERGWCTL_VIEW_CHANGE, "session",
		   "logout", "3", "--grace", "5", NULL);

	/* discovery-chap set FILE: the file's object */
	snprintf(path, sizeof(path), "/tmp/test_isergwctl_dchap_%d.json", (int)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"user\": \"d\", \"secret\": \"discovery-secret\"}\n", f);
	fclose(f);
	expect_req("PUT", "/api/v1/discovery-chap", "{\"user\":\"d\",\"secret\":\"discovery-secret\"}",
		   ISERGWCTL_VIEW_CHANGE, "discovery-chap", "set", path, NULL);
	unlink(path);

	expect_usage("TSIH wants a number", "session", "show", "0", NULL);
	expect_usage("TSIH wants a number", "session", "logout", "65536", NULL);
	expect_usage("--grace wants 0..3600", "session", "logout", "3", "--grace", "4000", NULL);
	expect_usage("session list does not take --grace", "session", "list", "--grace", "1", NULL);
	expect_usage("ID wants a rel_port_id", "portal", "show", "n1", "0", NULL);
	expect_usage("--rel-port-id wants a number", "portal", "create", "n1", "tcp://x",
		     "--rel-port-id", "70000", NULL);
	expect_usage("acl create needs IQN INITIATOR", "acl", "create", "iqn.x", NULL);
	expect_usage("target set needs IQN KEY=VALUE...", "target", "set", "iqn.x", NULL);

	expect_render(ISERGWCTL_VIEW_ACLS,
		      "{\"items\": [{\"initiator\": \"iqn.h1\", \"chap\": {\"user\": \"h1\"}}, "
		      "{\"initiator\": \"iqn.h2\"}]}",
		      "INITIATOR  CHAP USER\n"
		      "iqn.h1     h1\n"
		      "iqn.h2     (the target's)\n");
	expect_render(ISERGWCTL_VIEW_ACLS, "{\"items\": []}", "no ACLs (any initiator may log in)\n");
	expect_render(ISERGWCTL_VIEW_PORTALS,
		      "{\"items\": [{\"url\": \"tcp://10.0.0.1\", \"rel_port_id\": 1}]}",
		      "REL PORT ID  URL\n"
		      "1            tcp://10.0.0.1\n");
	expect_render(ISERGWCTL_VIEW_PORT_GROUPS,
		      "{\"items\": [{\"tpg_id\": 2, \"node\": \"n2\", \"rel_port_ids\": [2, 5]}]}",
		      "TPG ID  NODE  REL PORT IDS\n"
		      "2       n2    [2,5]\n");
	expect_render(ISERGWCTL_VIEW_SESSIONS,
		      "{\"items\": [{\"tsih\": 3, \"node\": \"gw1\", \"type\": \"normal\", \"transport\": "
		      "\"tcp\", \"initiator\": \"iqn.h\", \"target\": \"iqn.t\", \"portal\": \"10.0.0.1:3260\", "
		      "\"connections\": [{\"cid\": 0}], \"isid\": \"x\"}]}",
		      "TSIH  NODE  TYPE    TRANSPORT  INITIATOR  TARGET  PORTAL         CONNECTIONS\n"
		      "3     gw1   normal  tcp        iqn.h      iqn.t   10.0.0.1:3260  1\n");
	expect_render(ISERGWCTL_VIEW_SESSIONS, "{\"items\": []}", "no sessions\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_write_options),
		cmocka_unit_test(test_from_json),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_merge_patch),
		cmocka_unit_test(test_problem_message),
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_url_private),
		cmocka_unit_test(test_nouns),
		cmocka_unit_test(test_requests_more),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
