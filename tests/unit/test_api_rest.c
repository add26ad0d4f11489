// LINK: api_logic isergw_proto PkgConfig::JSONC
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's REST resources, the pure half (mgmt/api/rest.c): routing
 * (operations, path parameters, 404 and 405 with Allow), the route table and
 * mgmt/openapi.json naming the same paths and methods, ETags and If-Match,
 * request bodies (broken JSON with line and column, not an object), the
 * cluster status as resources and operations, target and LUN writes on a
 * configuration (unknown fields, wrong types and missing fields refused
 * naming the field, duplicates, LUN numbers kept), secrets never shown and
 * kept through an export and import, the agent's refusals as HTTP statuses
 * with its key paths as fields of the request body.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rest.h"
#include "config/schema.h"

static json_object *J(const char *s)
{
	json_object *o = json_tokener_parse(s);

	assert_non_null(o);
	return o;
}

static void assert_json(json_object *o, const char *want)
{
	json_object *w = J(want);

	if (!json_object_equal(o, w))
		fail_msg("got %s\nwant %s", json_object_to_json_string(o), want);
	json_object_put(w);
}

/* ------------------------------------------------------------ routing */

static void route_ok(const char *method, const char *path, enum rest_op op, const char *name,
		     uint32_t lun)
{
	struct rest_match m;

	assert_int_equal(rest_route(method, path, &m), 0);
	assert_int_equal(m.op, op);
	assert_string_equal(m.name, name);
	assert_int_equal(m.lun, lun);
}

static void test_routing(void **state)
{
	struct rest_match m;

	(void)state;
	route_ok("GET", "/api/v1/cluster", REST_CLUSTER_GET, "", 0);
	route_ok("HEAD", "/api/v1/cluster", REST_CLUSTER_GET, "", 0);
	route_ok("GET", "/api/v1/openapi.json", REST_OPENAPI, "", 0);
	route_ok("GET", "/api/v1/nodes", REST_NODES_LIST, "", 0);
	route_ok("PATCH", "/api/v1/nodes/n1", REST_NODE_PATCH, "n1", 0);
	route_ok("GET", "/api/v1/device-groups/dg1", REST_DG_GET, "dg1", 0);
	route_ok("PATCH", "/api/v1/device-groups/dg1", REST_DG_PATCH, "dg1", 0);
	route_ok("POST", "/api/v1/targets", REST_TARGET_POST, "", 0);
	route_ok("DELETE", "/api/v1/targets/iqn.2026-11.org.x:t1", REST_TARGET_DELETE,
		 "iqn.2026-11.org.x:t1", 0);
	route_ok("POST", "/api/v1/targets/iqn.2026-11.org.x:t1/luns", REST_LUN_POST,
		 "iqn.2026-11.org.x:t1", 0);
	route_ok("GET", "/api/v1/targets/iqn.2026-11.org.x:t1/luns/16383", REST_LUN_GET,
		 "iqn.2026-11.org.x:t1", 16383);
	route_ok("PATCH", "/api/v1/targets/t/luns/0", REST_LUN_PATCH, "t", 0);
	route_ok("DELETE", "/api/v1/targets/t/luns/7", REST_LUN_DELETE, "t", 7);
	route_ok("PUT", "/api/v1/config", REST_CONFIG_PUT, "", 0);
	route_ok("GET", "/api/v1/operations/g42", REST_OPERATION_GET, "g42", 0);
	route_ok("PATCH", "/api/v1/targets/t", REST_TARGET_PATCH, "t", 0);
	route_ok("GET", "/api/v1/targets/t/acls", REST_ACLS_LIST, "t", 0);
	route_ok("POST", "/api/v1/targets/t/acls", REST_ACL_POST, "t", 0);
	route_ok("GET", "/api/v1/discovery-chap", REST_DISCOVERY_CHAP_GET, "", 0);
	route_ok("PUT", "/api/v1/discovery-chap", REST_DISCOVERY_CHAP_PUT, "", 0);
	route_ok("DELETE", "/api/v1/discovery-chap", REST_DISCOVERY_CHAP_DELETE, "", 0);
	route_ok("GET", "/api/v1/nodes/n1/portals", REST_PORTALS_LIST, "n1", 0);
	route_ok("POST", "/api/v1/nodes/n1/portals", REST_PORTAL_POST, "n1", 0);
	route_ok("GET", "/api/v1/port-groups", REST_PORT_GROUPS_LIST, "", 0);
	route_ok("GET", "/api/v1/sessions", REST_SESSIONS_LIST, "", 0);
	{
		/* two names, a number */
		assert_int_equal(rest_route("DELETE", "/api/v1/targets/iqn.2026-11.t:x:t/acls/iqn.2026-11.t:y:h", &m), 0);
		assert_int_equal(m.op, REST_ACL_DELETE);
		assert_string_equal(m.name, "iqn.2026-11.t:x:t");
		assert_string_equal(m.sub, "iqn.2026-11.t:y:h");
		assert_int_equal(rest_route("PATCH", "/api/v1/nodes/n2/portals/65535", &m), 0);
		assert_int_equal(m.op, REST_PORTAL_PATCH);
		assert_string_equal(m.name, "n2");
		assert_int_equal(m.num, 65535);
		assert_int_equal(rest_route("DELETE", "/api/v1/sessions/7", &m), 0);
		assert_int_equal(m.op, REST_SESSION_DELETE);
		assert_int_equal(m.num, 7);
		assert_string_equal(m.sub, "");
		assert_true(rest_op_local(REST_SESSION_DELETE));
		assert_false(rest_op_writes(REST_SESSION_DELETE));
		assert_true(rest_op_writes(REST_ACL_DELETE));
		assert_true(rest_op_has_body(REST_TARGET_PATCH));
		assert_true(rest_op_has_body(REST_DISCOVERY_CHAP_PUT));
		assert_false(rest_op_has_body(REST_PORTAL_DELETE));
		assert_int_equal(rest_route("POST", "/api/v1/sessions", &m), -EOPNOTSUPP);
		assert_string_equal(m.allow, "GET, HEAD");
	}

	/* a path that exists, not with this method: 405 with the path's methods */
	assert_int_equal(rest_route("DELETE", "/api/v1/cluster", &m), -EOPNOTSUPP);
	assert_string_equal(m.allow, "GET, HEAD");
	assert_int_equal(rest_route("PUT", "/api/v1/targets/t/luns/1", &m), -EOPNOTSUPP);
	assert_string_equal(m.allow, "GET, HEAD, PATCH, DELETE");
	assert_int_equal(rest_route("OPTIONS", "/api/v1/targets", &m), -EOPNOTSUPP);
	assert_string_equal(m.allow, "GET, HEAD, POST");

	/* no resource */
	static const char *const none[] = {
		"/api/v1", "/api/v1/", "/api/v1/targets/", "/api/v1/targets//luns",
		"/api/v1/targets/t/luns/16384", "/api/v1/targets/t/luns/007",
		"/api/v1/targets/t/luns/-1", "/api/v1/targets/t/luns/1x", "/api/v1/targets/t/luns/",
		"/api/v1/targets/t/extra", "/api/v1/clusters", "/api/v2/cluster", "/api/v1/cluster/",
		"/metrics", "/api/v1/nodes/a/b", "/api/v1/sessions/0", "/api/v1/sessions/65536",
		"/api/v1/sessions/01", "/api/v1/nodes/n1/portals/0", "/api/v1/targets/t/acls/",
		"/api/v1/targets/t/acls/i/x", "/api/v1/port-groups/1",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		if (rest_route("GET", none[i], &m) != -ENOENT)
			fail_msg("%s is routed", none[i]);
		assert_int_equal(m.op, REST_NONE);
	}
	/* a name above 255 bytes is no resource */
	char longp[400];

	snprintf(longp, sizeof(longp), "/api/v1/targets/%0300d", 1);
	assert_int_equal(rest_route("GET", longp, &m), -ENOENT);

	assert_true(rest_op_has_body(REST_LUN_PATCH));
	assert_false(rest_op_has_body(REST_LUN_DELETE));
	assert_true(rest_op_writes(REST_LUN_DELETE));
	assert_false(rest_op_writes(REST_LUN_GET));
	assert_string_equal(rest_op_name(REST_TARGET_POST), "create target");
}

/* ------------------------------------------------------------ OpenAPI */

static json_object *openapi(void)
{
	char path[1024];
	json_object *o;

	/*
	 * From the source tree's root (tests/CMakeLists.txt), not from __FILE__:
	 * a build with -ffile-prefix-map (the Debian packages') makes that relative
	 */
	snprintf(path, sizeof(path), "%s/mgmt/openapi.json", ISERGW_SOURCE_DIR);
	o = json_object_from_file(path);
	if (!o)
		fail_msg("cannot read %s: %s", path, json_util_get_last_err());
	return o;
}

/* "targets/{}/luns/{#}" -> "/targets/{iqn}/luns/{lun}", as the document spells them */
static void oa_path(const char *pattern, char *out, size_t len)
{
	static const struct {
		const char *from, *to;
	} names[] = {
		{ "nodes/{}", "nodes/{name}" }, { "device-groups/{}", "device-groups/{name}" },
		{ "targets/{}", "targets/{iqn}" }, { "luns/{#}", "luns/{lun}" },
		{ "operations/{}", "operations/{id}" }, { "acls/{}", "acls/{initiator}" },
		{ "portals/{n}", "portals/{rel_port_id}" }, { "sessions/{n}", "sessions/{tsih}" },
	};
	char buf[256];

	snprintf(buf, sizeof(buf), "/%s", pattern);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = strstr(buf, names[i].from);

		if (p) {
			char rest[256];

			snprintf(rest, sizeof(rest), "%s", p + strlen(names[i].from));
			snprintf(p, sizeof(buf) - (size_t)(p - buf), "%s%s", names[i].to, rest);
		}
	}
	snprintf(out, len, "%s", buf);
}

/* the document's path with sample values, below /api/v1 */
static void sample(const char *oapath, char *out, size_t len)
{
	size_t o = (size_t)snprintf(out, len, "%s", REST_PREFIX);

	for (const char *p = oapath; *p && o + 1 < len; p++) {
		if (*p == '{') {
			const char *end = strchr(p, '}');

			o += (size_t)snprintf(out + o, len - o, "%s",
					      !strncmp(p, "{lun}", 5) || !strncmp(p, "{tsih}", 6) ||
					      !strncmp(p, "{rel_port_id}", 13) ? "3" : "x1");
			p = end;
		} else {
			out[o++] = *p;
			out[o] = '\0';
		}
	}
}

static void test_openapi_matches_routes(void **state)
{
	static const char *const methods[] = { "get", "post", "put", "patch", "delete" };
	json_object *doc = openapi(), *paths, *v;
	size_t nroutes = 0;
	const char *pat, *allow;

	(void)state;
	assert_true(json_object_object_get_ex(doc, "openapi", &v));
	assert_string_equal(json_object_get_string(v), "3.1.0");
	assert_true(json_object_object_get_ex(doc, "paths", &paths));

	/* every route of the table is in the document with exactly its methods */
	for (size_t i = 0; !rest_route_at(i, &pat, &allow); i++, nroutes++) {
		char p[256];
		json_object *item;

		oa_path(pat, p, sizeof(p));
		if (!json_object_object_get_ex(paths, p, &item))
			fail_msg("%s is not in mgmt/openapi.json", p);
		for (size_t m = 0; m < 5; m++) {
			char up[8];
			bool in_doc = json_object_object_get_ex(item, methods[m], NULL);

			for (size_t k = 0; k <= strlen(methods[m]); k++)
				up[k] = (char)(methods[m][k] >= 'a' ? methods[m][k] - 32 : methods[m][k]);
			if (in_doc != (strstr(allow, up) != NULL))
				fail_msg("%s %s: the document says %d, the routes %s", up, p, in_doc,
					 allow);
		}
	}
	/* and every path of the document is routed, with every method it lists */
	assert_int_equal(json_object_object_length(paths), nroutes);
	json_object_object_foreach(paths, key, item) {
		char url[256];

		sample(key, url, sizeof(url));
		for (size_t m = 0; m < 5; m++) {
			struct rest_match mt;
			char up[8];

			if (!json_object_object_get_ex(item, methods[m], NULL))
				continue;
			for (size_t k = 0; k <= strlen(methods[m]); k++)
				up[k] = (char)(methods[m][k] >= 'a' ? methods[m][k] - 32 : methods[m][k]);
			if (rest_route(up, url, &mt))
				fail_msg("%s %s (from the document's %s) is not routed", up, url, key);
		}
	}
	/* every schema of an object refuses unknown members */
	assert_true(json_object_object_get_ex(doc, "components", &v));
	assert_true(json_object_object_get_ex(v, "schemas", &v));
	json_object_object_foreach(v, name, schema) {
		json_object *t, *ap;

		if (!json_object_object_get_ex(schema, "type", &t) ||
		    strcmp(json_object_get_string(t), "object"))
			continue;
		if (!json_object_object_get_ex(schema, "additionalProperties", &ap) ||
		    json_object_get_boolean(ap))
			fail_msg("schema %s allows unknown members", name);
	}
	json_object_put(doc);
}

/* ------------------------------------------------------------ ETags */

static void test_etag_if_match(void **state)
{
	char buf[32];
	uint64_t g = 99;

	(void)state;
	rest_etag(42, buf, sizeof(buf));
	assert_string_equal(buf, "\"g42\"");
	assert_int_equal(rest_if_match("\"g42\"", &g), 0);
	assert_int_equal(g, 42);
	assert_int_equal(rest_if_match("  \"g18446744073709551615\"\t", &g), 0);
	assert_true(g == UINT64_MAX);
	assert_int_equal(rest_if_match("*", &g), 0);
	assert_int_equal(g, 0);

	static const char *const bad[] = {
		"W/\"g42\"", "\"g42\", \"g43\"", "g42", "\"42\"", "\"g0\"", "\"g042\"", "\"g\"",
		"\"g4x\"", "\"g18446744073709551616\"", "\"g99999999999999999999\"", "", "**",
		"\"G42\"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (rest_if_match(bad[i], &g) != -EINVAL)
			fail_msg("If-Match: %s is accepted", bad[i]);
}

/* ------------------------------------------------------------ bodies */

static void test_body(void **state)
{
	struct rest_err e;
	json_object *o;
	const char *broken = "{\"iqn\": \"x\",\n  \"luns\": [}";

	(void)state;
	assert_int_equal(rest_parse_body(broken, strlen(broken), &o, &e), -EBADMSG);
	assert_int_equal(e.code, 400);
	assert_null(o);
	assert_non_null(strstr(e.detail, "line 2 column"));

	assert_int_equal(rest_parse_body("{\"a\":", 5, &o, &e), -EBADMSG);
	assert_int_equal(e.code, 400);
	assert_non_null(strstr(e.detail, "unexpected end"));
	assert_int_equal(rest_parse_body("", 0, &o, &e), -EBADMSG);
	assert_int_equal(e.code, 400);
	assert_int_equal(rest_parse_body("{} x", 4, &o, &e), -EBADMSG);
	assert_int_equal(e.code, 400);
	assert_int_equal(rest_parse_body("[1]", 3, &o, &e), -EINVAL);
	assert_int_equal(e.code, 422);
	assert_int_equal(rest_parse_body("{\"a\": 1}\n", 9, &o, &e), 0);
	assert_json(o, "{\"a\": 1}");
	json_object_put(o);
	assert_int_equal(rest_parse_body("{}", REST_BODY_MAX + 1, &o, &e), -EMSGSIZE);
	assert_int_equal(e.code, 413);
}

/* ------------------------------------------------------------ the cluster */

static void test_cluster_resources(void **state)
{
	Isergw__Ha__MemberStatus m[3] = { ISERGW__HA__MEMBER_STATUS__INIT,
					   ISERGW__HA__MEMBER_STATUS__INIT,
					   ISERGW__HA__MEMBER_STATUS__INIT };
	Isergw__Ha__MemberStatus *mp[3] = { &m[0], &m[1], &m[2] };
	Isergw__Ha__GroupNodeState ns[2] = { ISERGW__HA__GROUP_NODE_STATE__INIT,
					     ISERGW__HA__GROUP_NODE_STATE__INIT };
	Isergw__Ha__GroupNodeState *nsp[2] = { &ns[0], &ns[1] };
	Isergw__Ha__DeviceGroupStatus dg = ISERGW__HA__DEVICE_GROUP_STATUS__INIT;
	Isergw__Ha__DeviceGroupStatus *dgp[1] = { &dg };
	Isergw__Ha__ClusterStatus st = ISERGW__HA__CLUSTER_STATUS__INIT;
	Isergw__Ha__LunFault lf = ISERGW__HA__LUN_FAULT__INIT;
	Isergw__Ha__LunFault *lfp[1] = { &lf };
	char *fg[1] = { (char *)(uintptr_t)"dg1" };
	json_object *o;

	(void)state;
	lf.target = "iqn.2026-11.org.x:t"; lf.lun = 3; lf.device_group = "dg1"; lf.state = "failed";
	lf.reason = "/srv/x.img: cannot open: No such file or directory";
	m[0].dataplane = "healthy"; m[0].luns_online = 4;
	m[1].dataplane = "healthy"; m[1].luns_online = 3; m[1].luns_failed = 1;
	m[1].failed_groups = fg; m[1].n_failed_groups = 1; m[1].luns = lfp; m[1].n_luns = 1;
	m[0].name = "n1"; m[0].nodeid = 1; m[0].tpg_id = 1; m[0].agent = true; m[0].synced = true;
	m[0].corosync_member = true; m[0].applied_generation = 7; m[0].last_heard_ms = 12;
	m[1].name = "n2"; m[1].nodeid = 2; m[1].tpg_id = 2; m[1].agent = true; m[1].synced = true;
	m[1].corosync_member = true; m[1].applied_generation = 6; m[1].drained = true;
	m[2].name = "n3"; m[2].nodeid = 3; m[2].tpg_id = 3;   /* down */
	ns[0].node = "n1"; ns[0].tpg_id = 1; ns[0].state = "ao"; ns[0].pref = true;
	ns[1].node = "n2"; ns[1].tpg_id = 2; ns[1].state = "ano";
	dg.name = "dg1"; dg.owner = "n1"; dg.preferred_owner = "n1"; dg.failback = "immediate";
	dg.states = nsp; dg.n_states = 2;
	st.cluster_name = "c"; st.node_name = "n1"; st.nodeid = 1; st.quorate = true;
	st.phase = "synced"; st.generation = 7; st.digest = "ab"; st.protocol = 1;
	st.expected_votes = 3; st.total_votes = 2; st.isergwd_connected = true;
	st.isergwd_epoch = 7; st.lease_remaining_ms = 900;
	st.members = mp; st.n_members = 3; st.device_groups = dgp; st.n_device_groups = 1;

	o = rest_cluster(&st);
	assert_json(o, "{\"name\":\"c\",\"node\":\"n1\",\"nodeid\":1,\"quorate\":true,"
		    "\"phase\":\"synced\",\"generation\":7,\"digest\":\"ab\",\"protocol\":1,"
		    "\"expected_votes\":3,\"total_votes\":2,\"isergwd_connected\":true,"
		    "\"isergwd_epoch\":7,\"lease_remaining_ms\":900,\"members\":["
		    "{\"name\":\"n1\",\"nodeid\":1,\"tpg_id\":1,\"corosync_member\":true,\"agent\":true,"
		    "\"synced\":true,\"drained\":false,\"applied_generation\":7,\"last_heard_ms\":12,"
		    "\"dataplane\":{\"state\":\"healthy\",\"luns_online\":4,\"luns_failed\":0,"
		    "\"failed_device_groups\":[],\"failed_luns\":[]}},"
		    "{\"name\":\"n2\",\"nodeid\":2,\"tpg_id\":2,\"corosync_member\":true,\"agent\":true,"
		    "\"synced\":true,\"drained\":true,\"applied_generation\":6,\"last_heard_ms\":0,"
		    "\"dataplane\":{\"state\":\"healthy\",\"luns_online\":3,\"luns_failed\":1,"
		    "\"failed_device_groups\":[\"dg1\"],\"failed_luns\":[{\"target\":"
		    "\"iqn.2026-11.org.x:t\",\"lun\":3,\"device_group\":\"dg1\",\"state\":\"failed\","
		    "\"reason\":\"/srv/x.img: cannot open: No such file or directory\"}]}},"
		    "{\"name\":\"n3\",\"nodeid\":3,\"tpg_id\":3,\"corosync_member\":false,\"agent\":false,"
		    "\"synced\":false,\"drained\":false,\"applied_generation\":0,\"last_heard_ms\":0,"
		    "\"dataplane\":{\"state\":\"unknown\",\"luns_online\":0,\"luns_failed\":0,"
		    "\"failed_device_groups\":[],\"failed_luns\":[]}}]}");
	json_object_put(o);

	/* a LUN's state on each node: failed on n2 with the reason, unknown on n3 (away) */
	o = rest_lun_status(&st, "iqn.2026-11.org.x:t", 3);
	assert_json(o, "{\"state\":\"degraded\",\"nodes\":["
		    "{\"node\":\"n1\",\"state\":\"online\"},"
		    "{\"node\":\"n2\",\"state\":\"failed\",\"reason\":"
		    "\"/srv/x.img: cannot open: No such file or directory\"},"
		    "{\"node\":\"n3\",\"state\":\"unknown\",\"reason\":\"its agent is not in the cluster\"}],"
		    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":"
		    "\"FailedOnSomeNodes\",\"message\":\"n2: /srv/x.img: cannot open: No such file or "
		    "directory\"}]}");
	json_object_put(o);
	o = rest_lun_status(&st, "iqn.2026-11.org.x:t", 2);
	assert_string_equal(json_object_get_string(json_object_object_get(o, "state")), "online");
	json_object_put(o);

	o = rest_nodes(&st);
	assert_int_equal(json_object_array_length(json_object_object_get(o, "items")), 3);
	json_object_put(o);
	o = rest_node(&st, "n2");
	assert_true(json_object_get_boolean(json_object_object_get(o, "drained")));
	json_object_put(o);
	assert_null(rest_node(&st, "n9"));

	o = rest_dg(&st, "dg1");
	assert_json(o, "{\"name\":\"dg1\",\"owner\":\"n1\",\"preferred_owner\":\"n1\","
		    "\"failback\":\"immediate\",\"states\":["
		    "{\"node\":\"n1\",\"tpg_id\":1,\"state\":\"ao\",\"preferred\":true},"
		    "{\"node\":\"n2\",\"tpg_id\":2,\"state\":\"ano\",\"preferred\":false}]}");
	json_object_put(o);
	assert_null(rest_dg(&st, "dg9"));
	o = rest_dgs(&st);
	assert_int_equal(json_object_array_length(json_object_object_get(o, "items")), 1);
	json_object_put(o);

	/* operations: live (synced) members that hold the generation, and not */
	assert_int_equal(rest_operation(&st, "g7", &o), 0);
	assert_json(o, "{\"id\":\"g7\",\"generation\":7,\"done\":false,\"applied\":[\"n1\"],"
		    "\"pending\":[\"n2\"]}");
	json_object_put(o);
	assert_int_equal(rest_operation(&st, "g6", &o), 0);
	assert_json(o, "{\"id\":\"g6\",\"generation\":6,\"done\":true,\"applied\":[\"n1\",\"n2\"],"
		    "\"pending\":[]}");
	json_object_put(o);
	assert_int_equal(rest_operation(&st, "g8", &o), -ENOENT);
	assert_int_equal(rest_operation(&st, "7", &o), -EINVAL);
	assert_int_equal(rest_operation(&st, "g0", &o), -EINVAL);
	assert_int_equal(rest_operation(&st, "g07", &o), -EINVAL);
}

/* ------------------------------------------------------------ writes */

#define CFG "{\"nodes\":[{\"name\":\"n1\",\"tpg_id\":1}],\"targets\":[" \
	"{\"iqn\":\"iqn.2026-11.t:a\",\"luns\":[{\"path\":\"/a0\"},{\"path\":\"/a1\"},{\"path\":\"/a2\"}]}]}"

static void refused(int rc, const struct rest_err *e, int want_rc, unsigned int code,
		    const char *field)
{
	if (rc != want_rc || e->code != code || strcmp(e->field, field))
		fail_msg("got %d %u field '%s' (%s), want %d %u field '%s'", rc, e->code, e->field,
			 e->detail, want_rc, code, field);
}

static void test_target_create(void **state)
{
	static const struct {
		const char *body, *field;
	} bad[] = {
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"colour\":\"red\"}", "colour" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"luns\":[{\"path\":\"/x\",\"size_mb\":4}]}", "luns[0].size_mb" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"luns\":[{\"path\":\"/x\"},{\"lun\":\"1\",\"path\":\"/y\"}]}",
		  "luns[1].lun" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"luns\":[{\"size\":\"4M\"}]}", "luns[0].path" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"luns\":[7]}", "luns[0]" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"luns\":{}}", "luns" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"chap\":{\"user\":\"u\",\"password\":\"p\"}}", "chap.password" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"acls\":[{\"initiator\":\"iqn.2026-11.t:i\",\"chap\":{\"user\":1}}]}",
		  "acls[0].chap.user" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"acls\":[{}]}", "acls[0].initiator" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"queue_depth\":\"64\"}", "queue_depth" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"queue_depth\":6.5}", "queue_depth" },
		{ "{\"iqn\":\"iqn.2026-11.t:b\",\"initial_r2t\":null}", "initial_r2t" },
		{ "{\"iqn\":7}", "iqn" },
		{ "{\"alias\":\"x\"}", "iqn" },
	};
	json_object *cfg = J(CFG), *body;
	struct rest_err e;
	char iqn[64];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		body = J(bad[i].body);
		refused(rest_target_create(cfg, body, iqn, sizeof(iqn), &e), &e, -EINVAL, 422,
			bad[i].field);
		assert_non_null(strstr(e.detail, bad[i].field));
		json_object_put(body);
	}
	assert_json(cfg, CFG);          /* nothing refused changed it */

	body = J("{\"iqn\":\"iqn.2026-11.t:a\"}");
	refused(rest_target_create(cfg, body, iqn, sizeof(iqn), &e), &e, -EEXIST, 409, "iqn");
	json_object_put(body);

	body = J("{\"iqn\":\"iqn.2026-11.t:b\",\"chap\":{\"user\":\"u\",\"secret\":\"s3cret-123456\"},"
		 "\"luns\":[{\"path\":\"/b0\",\"size\":\"1G\",\"readonly\":true}]}");
	assert_int_equal(rest_target_create(cfg, body, iqn, sizeof(iqn), &e), 0);
	assert_string_equal(iqn, "iqn.2026-11.t:b");
	json_object_put(body);
	body = rest_target(cfg, "iqn.2026-11.t:b");
	assert_json(body, "{\"iqn\":\"iqn.2026-11.t:b\",\"chap\":{\"user\":\"u\"},"
		    "\"luns\":[{\"path\":\"/b0\",\"size\":\"1G\",\"readonly\":true}]}");
	json_object_put(body);
	body = rest_targets(cfg);
	assert_int_equal(json_object_array_length(json_object_object_get(body, "items")), 2);
	json_object_put(body);
	assert_null(rest_target(cfg, "iqn.2026-11.t:c"));

	refused(rest_target_delete(cfg, "iqn.2026-11.t:c", &e), &e, -ENOENT, 404, "");
	assert_int_equal(rest_target_delete(cfg, "iqn.2026-11.t:b", &e), 0);
	assert_json(cfg, CFG);
	json_object_put(cfg);
}

/* An object of table t with every field set to a value of its type (config/schema.h). */
static json_object *every_field(const struct gw_ftable *t)
{
	json_object *o = json_object_new_object();

	for (size_t i = 0; i < t->n; i++) {
		const struct gw_field *f = &t->f[i];
		json_object *v = NULL;

		switch (f->type) {
		case GW_FT_STRING:
			v = json_object_new_string(f->words ? f->words[0] : !f->is_name ? "s" :
						   f->name == GW_NAME_ISCSI ? "iqn.2026-11.t:every" :
						   f->name == GW_NAME_PATH ? "/tmp/every" : "every");
			break;
		case GW_FT_INTEGER:
			v = json_object_new_int64((int64_t)f->min);
			break;
		case GW_FT_BOOLEAN:
			v = json_object_new_boolean(true);
			break;
		case GW_FT_SIZE:
			v = json_object_new_int64(4096);
			break;
		case GW_FT_OBJECT:
			v = every_field(f->sub);
			break;
		case GW_FT_ARRAY:
			v = json_object_new_array();
			if (f->sub)
				json_object_array_add(v, every_field(f->sub));
			break;
		}
		json_object_object_add(o, f->key, v);
	}
	return o;
}

/* REST takes every field isergwd's tables have: a new one needs no change in mgmt/api. */
static void test_every_field(void **state)
{
	json_object *cfg = J(CFG), *body;
	struct rest_err e;
	char iqn[64];
	uint32_t lun;

	(void)state;
	body = every_field(&gw_schema_target);
	if (rest_target_create(cfg, body, iqn, sizeof(iqn), &e))
		fail_msg("a target with every field: %s", e.detail);
	json_object_put(body);
	body = every_field(&gw_schema_lun);
	json_object_object_add(body, "lun", json_object_new_int64(9));
	if (rest_lun_create(cfg, "iqn.2026-11.t:a", body, &lun, &e))
		fail_msg("a LUN with every field: %s", e.detail);
	json_object_put(body);
	json_object_put(cfg);
}

static void test_luns(void **state)
{
	json_object *cfg = J(CFG), *body, *o;
	struct rest_err e;
	uint32_t lun = 99;

	(void)state;
	/* LUNs without "lun" are numbered by their index; the list says so */
	o = rest_luns(cfg, "iqn.2026-11.t:a");
	assert_json(o, "{\"items\":[{\"path\":\"/a0\",\"lun\":0},{\"path\":\"/a1\",\"lun\":1},"
		    "{\"path\":\"/a2\",\"lun\":2}]}");
	json_object_put(o);
	assert_null(rest_luns(cfg, "iqn.2026-11.t:x"));

	/* deleting LUN 1 keeps LUN 2's number */
	assert_int_equal(rest_lun_delete(cfg, "iqn.2026-11.t:a", 1, &e), 0);
	refused(rest_lun_delete(cfg, "iqn.2026-11.t:a", 1, &e), &e, -ENOENT, 404, "");
	o = rest_lun(cfg, "iqn.2026-11.t:a", 2);
	assert_json(o, "{\"path\":\"/a2\",\"lun\":2}");
	json_object_put(o);

	/* a new LUN gets the lowest free number (1), every number written down */
	body = J("{\"path\":\"/n\",\"size\":4194304}");
	assert_int_equal(rest_lun_create(cfg, "iqn.2026-11.t:a", body, &lun, &e), 0);
	assert_int_equal(lun, 1);
	json_object_put(body);
	assert_json(json_object_object_get(json_object_array_get_idx(
			    json_object_object_get(cfg, "targets"), 0), "luns"),
		    "[{\"path\":\"/a0\",\"lun\":0},{\"path\":\"/a2\",\"lun\":2},"
		    "{\"path\":\"/n\",\"size\":4194304,\"lun\":1}]");

	body = J("{\"lun\":2,\"path\":\"/d\"}");
	refused(rest_lun_create(cfg, "iqn.2026-11.t:a", body, &lun, &e), &e, -EEXIST, 409, "lun");
	json_object_put(body);
	body = J("{\"lun\":16384,\"path\":\"/d\"}");
	refused(rest_lun_create(cfg, "iqn.2026-11.t:a", body, &lun, &e), &e, -EINVAL, 422, "lun");
	json_object_put(body);
	body = J("{\"path\":\"/d\",\"colour\":\"red\"}");
	refused(rest_lun_create(cfg, "iqn.2026-11.t:a", body, &lun, &e), &e, -EINVAL, 422, "colour");
	json_object_put(body);
	body = J("{\"path\":\"/d\"}");
	refused(rest_lun_create(cfg, "iqn.2026-11.t:x", body, &lun, &e), &e, -ENOENT, 404, "");
	json_object_put(body);
	body = J("{\"lun\":9,\"path\":\"/d\"}");
	assert_int_equal(rest_lun_create(cfg, "iqn.2026-11.t:a", body, &lun, &e), 0);
	assert_int_equal(lun, 9);
	json_object_put(body);

	/* merge patch: set, remove with null; the number, unknown fields, a required one */
	body = J("{\"product\":\"p\",\"readonly\":true}");
	assert_int_equal(rest_lun_patch(cfg, "iqn.2026-11.t:a", 9, body, &e), 0);
	json_object_put(body);
	body = J("{\"readonly\":null,\"lun\":9}");
	assert_int_equal(rest_lun_patch(cfg, "iqn.2026-11.t:a", 9, body, &e), 0);
	json_object_put(body);
	o = rest_lun(cfg, "iqn.2026-11.t:a", 9);
	assert_json(o, "{\"lun\":9,\"path\":\"/d\",\"product\":\"p\"}");
	json_object_put(o);
	body = J("{\"lun\":10}");
	refused(rest_lun_patch(cfg, "iqn.2026-11.t:a", 9, body, &e), &e, -EINVAL, 422, "lun");
	json_object_put(body);
	body = J("{\"path\":null}");
	refused(rest_lun_patch(cfg, "iqn.2026-11.t:a", 9, body, &e), &e, -EINVAL, 422, "path");
	json_object_put(body);
	body = J("{\"thin\":\"no\"}");
	refused(rest_lun_patch(cfg, "iqn.2026-11.t:a", 9, body, &e), &e, -EINVAL, 422, "thin");
	json_object_put(body);
	body = J("{\"speed\":1}");
	refused(rest_lun_patch(cfg, "iqn.2026-11.t:a", 9, body, &e), &e, -EINVAL, 422, "speed");
	json_object_put(body);
	body = J("{\"thin\":false}");
	refused(rest_lun_patch(cfg, "iqn.2026-11.t:a", 8, body, &e), &e, -ENOENT, 404, "");
	json_object_put(body);
	o = rest_lun(cfg, "iqn.2026-11.t:a", 9);          /* the refusals changed nothing */
	assert_json(o, "{\"lun\":9,\"path\":\"/d\",\"product\":\"p\"}");
	json_object_put(o);
	assert_null(rest_lun(cfg, "iqn.2026-11.t:a", 8));
	json_object_put(cfg);
}

static void test_node_dg_patch(void **state)
{
	struct rest_err e;
	json_object *b;
	bool d = false;
	char owner[64];

	(void)state;
	b = J("{\"drained\":true}");
	assert_int_equal(rest_node_patch(b, &d, &e), 0);
	assert_true(d);
	json_object_put(b);
	b = J("{\"drained\":\"yes\"}");
	refused(rest_node_patch(b, &d, &e), &e, -EINVAL, 422, "drained");
	assert_string_equal(e.detail, "drained: expected a boolean, got string");
	json_object_put(b);
	b = J("{\"drained\":false,\"name\":\"n2\"}");
	refused(rest_node_patch(b, &d, &e), &e, -EINVAL, 422, "name");
	assert_string_equal(e.detail, "name: unknown field (only drained can change)");
	json_object_put(b);
	/* ?force= of a drain */
	assert_int_equal(rest_force_param(NULL, &d, &e), 0);
	assert_false(d);
	assert_int_equal(rest_force_param("true", &d, &e), 0);
	assert_true(d);
	assert_int_equal(rest_force_param("false", &d, &e), 0);
	assert_false(d);
	refused(rest_force_param("yes", &d, &e), &e, -EINVAL, 422, "force");
	refused(rest_force_param("\xff", &d, &e), &e, -EINVAL, 422, "force");
	assert_null(strchr(e.detail, '\xff'));
	b = J("{}");
	refused(rest_node_patch(b, &d, &e), &e, -EINVAL, 422, "drained");
	assert_string_equal(e.detail, "drained: required");
	refused(rest_dg_patch(b, owner, sizeof(owner), &e), &e, -EINVAL, 422, "owner");
	assert_string_equal(e.detail, "owner: required");
	json_object_put(b);
	b = J("{\"owner\":7}");
	refused(rest_dg_patch(b, owner, sizeof(owner), &e), &e, -EINVAL, 422, "owner");
	assert_string_equal(e.detail, "owner: expected a string, got int");
	json_object_put(b);
	b = J("{\"owner\":\"n2\",\"x\":1}");
	refused(rest_dg_patch(b, owner, sizeof(owner), &e), &e, -EINVAL, 422, "x");
	assert_string_equal(e.detail, "x: unknown field (only owner can change)");
	json_object_put(b);
	b = J("{\"owner\":\"n2\"}");
	assert_int_equal(rest_dg_patch(b, owner, sizeof(owner), &e), 0);
	assert_string_equal(owner, "n2");
	json_object_put(b);
	b = J("{\"owner\":\"\"}");
	refused(rest_dg_patch(b, owner, sizeof(owner), &e), &e, -EINVAL, 422, "owner");
	json_object_put(b);
	b = J("{\"owner\":null}");
	refused(rest_dg_patch(b, owner, sizeof(owner), &e), &e, -EINVAL, 422, "owner");
	json_object_put(b);
}

/* ------------------------------------------------------------ secrets */

#define SECRETS "{\"discovery_chap\":{\"user\":\"d\",\"secret\":\"dsecret\"},\"targets\":[" \
	"{\"iqn\":\"iqn.2026-11.t:a\",\"chap\":{\"user\":\"u\",\"secret\":\"usecret\"}," \
	"\"mutual_chap\":{\"user\":\"m\",\"secret\":\"msecret\"}," \
	"\"acls\":[{\"initiator\":\"i1\",\"chap\":{\"user\":\"iu\",\"secret\":\"isecret\"}}]," \
	"\"luns\":[{\"lun\":3,\"path\":\"iscsi://bu%bsecret@10.0.0.1:3260/iqn.2026-11.t:be/1\"}," \
	"{\"lun\":4,\"path\":\"iscsi://10.0.0.1/iqn.2026-11.t:be/2\"},{\"lun\":5,\"path\":\"/f%x@y\"}]}]}"

static void test_secrets(void **state)
{
	json_object *cur = J(SECRETS), *red, *o;
	const char *s;

	(void)state;
	red = rest_redact(cur);
	s = json_object_to_json_string(red);
	assert_null(strstr(s, "secret\""));
	assert_null(strstr(s, "bsecret"));
	assert_json(red, "{\"discovery_chap\":{\"user\":\"d\"},\"targets\":["
		    "{\"iqn\":\"iqn.2026-11.t:a\",\"chap\":{\"user\":\"u\"},\"mutual_chap\":{\"user\":\"m\"},"
		    "\"acls\":[{\"initiator\":\"i1\",\"chap\":{\"user\":\"iu\"}}],"
		    "\"luns\":[{\"lun\":3,\"path\":\"iscsi://bu@10.0.0.1:3260/iqn.2026-11.t:be/1\"},"
		    "{\"lun\":4,\"path\":\"iscsi://10.0.0.1/iqn.2026-11.t:be/2\"},{\"lun\":5,\"path\":\"/f%x@y\"}]}]}");
	o = J(SECRETS);
	assert_true(json_object_equal(cur, o)); /* the original keeps its secrets */
	json_object_put(o);
	o = rest_target(cur, "iqn.2026-11.t:a");
	assert_null(strstr(json_object_to_json_string(o), "secret\""));
	json_object_put(o);
	o = rest_lun(cur, "iqn.2026-11.t:a", 3);
	assert_json(o, "{\"lun\":3,\"path\":\"iscsi://bu@10.0.0.1:3260/iqn.2026-11.t:be/1\"}");
	json_object_put(o);

	/* the export imported again is the configuration, secrets and all */
	rest_keep_secrets(cur, red);
	assert_true(json_object_equal(cur, red));
	json_object_put(red);

	/* a secret is kept only for the same user; one given is taken */
	red = J("{\"discovery_chap\":{\"user\":\"other\"},\"targets\":[{\"iqn\":\"iqn.2026-11.t:a\","
		"\"chap\":{\"user\":\"u\",\"secret\":\"new-secret\"},"
		"\"luns\":[{\"lun\":3,\"path\":\"iscsi://bu@10.0.0.2/iqn.2026-11.t:be/1\"}]}]}");
	rest_keep_secrets(cur, red);
	assert_json(red, "{\"discovery_chap\":{\"user\":\"other\"},\"targets\":[{\"iqn\":\"iqn.2026-11.t:a\","
		    "\"chap\":{\"user\":\"u\",\"secret\":\"new-secret\"},"
		    "\"luns\":[{\"lun\":3,\"path\":\"iscsi://bu@10.0.0.2/iqn.2026-11.t:be/1\"}]}]}");
	json_object_put(red);
	json_object_put(cur);
}

/* ------------------------------------------------------------ the agent's refusals */

static void test_refusals(void **state)
{
	struct rest_err e;
	json_object *cfg = J(CFG);
	char prefix[64];

	(void)state;
	rest_agent_refusal(-ENOLCK, "the cluster has no quorum here (1 of 3 expected votes)", "", &e);
	assert_int_equal(e.code, 503);
	assert_true(e.retry_after_s > 0);
	rest_agent_refusal(-EAGAIN, "this node is syncing", "", &e);
	assert_int_equal(e.code, 503);
	assert_true(e.retry_after_s > 0);
	rest_agent_refusal(-ESTALE, "the cluster is at generation 9, not 8", "", &e);
	assert_int_equal(e.code, 412);
	assert_int_equal(e.retry_after_s, 0);

	/* isergwd's validator, through the agent: the path below the written LUN */
	assert_int_equal(rest_write_prefix(cfg, REST_LUN_PATCH, "iqn.2026-11.t:a", 2, prefix,
					   sizeof(prefix)), 0);
	assert_string_equal(prefix, "targets[0].luns[2]");
	rest_agent_refusal(-EINVAL, "nodes[0] (n1): targets[0].luns[2].block_size: 1000 is not "
			   "512 or 4096", prefix, &e);
	assert_int_equal(e.code, 422);
	assert_string_equal(e.field, "block_size");
	assert_non_null(strstr(e.detail, "1000 is not 512 or 4096"));
	rest_agent_refusal(-EINVAL, "targets[0].luns[2].device_group: 'x' is not a device group "
			   "of the cluster", prefix, &e);
	assert_string_equal(e.field, "device_group");
	rest_agent_refusal(-EINVAL, "targets[0].luns[2]: lun 2 used twice", prefix, &e);
	assert_string_equal(e.field, "");
	/* outside the object written: the whole path; luns[20] is not luns[2] */
	rest_agent_refusal(-EINVAL, "targets[0].luns[20].size: too big", prefix, &e);
	assert_string_equal(e.field, "targets[0].luns[20].size");
	assert_int_equal(rest_write_prefix(cfg, REST_TARGET_POST, "iqn.2026-11.t:a", 0, prefix,
					   sizeof(prefix)), 0);
	assert_string_equal(prefix, "targets[0]");
	rest_agent_refusal(-EINVAL, "targets[0].luns[1].size: 3 is not a multiple of 512", prefix,
			   &e);
	assert_string_equal(e.field, "luns[1].size");
	/* an import: the key path is the body's */
	rest_agent_refusal(-EINVAL, "nodes[1].portals[0].rel_port_id: 1 already used by "
			   "nodes[0].portals[0]", "", &e);
	assert_string_equal(e.field, "nodes[1].portals[0].rel_port_id");
	rest_agent_refusal(-EINVAL, "config: line 3 column 7: unexpected character", "", &e);
	assert_string_equal(e.field, "config");
	rest_agent_refusal(-EINVAL, "no key path here", "", &e);
	assert_string_equal(e.field, "");
	assert_int_equal(rest_write_prefix(cfg, REST_LUN_PATCH, "iqn.2026-11.t:a", 7, prefix,
					   sizeof(prefix)), -ENOENT);

	rest_agent_refusal(-ENOENT, "no node 'n9' in the cluster configuration", "", &e);
	assert_int_equal(e.code, 404);
	rest_agent_refusal(-EHOSTDOWN, "node 'n3' is not serving", "", &e);
	assert_int_equal(e.code, 409);
	rest_agent_refusal(-EPERM, "node 'n3' is drained", "", &e);
	assert_int_equal(e.code, 409);
	rest_agent_refusal(-ETIMEDOUT, "the change was not applied within 5000 ms", "", &e);
	assert_int_equal(e.code, 504);
	rest_agent_refusal(-EMSGSIZE, "too big", "", &e);
	assert_int_equal(e.code, 413);
	rest_agent_refusal(-EIO, "", "", &e);
	assert_int_equal(e.code, 500);
	assert_non_null(strstr(e.detail, strerror(EIO)));
	/* a status that is no negative errno (fuzz_rest: INT32_MIN was negated) */
	rest_agent_refusal(INT32_MIN, "", "", &e);
	assert_int_equal(e.code, 500);
	assert_non_null(strstr(e.detail, strerror(EPROTO)));
	rest_agent_refusal(7, "", "", &e);
	assert_int_equal(e.code, 500);
	assert_int_equal(rest_peer_errno(INT32_MIN), -EPROTO);
	assert_int_equal(rest_peer_errno(0), -EPROTO);
	assert_int_equal(rest_peer_errno(-4096), -EPROTO);
	assert_int_equal(rest_peer_errno(-ENOENT), -ENOENT);

	rest_agent_unreachable(-ECONNREFUSED, "cannot connect to /run/isergw/ha.sock", &e);
	assert_int_equal(e.code, 503);
	assert_int_equal(e.retry_after_s, 0);
	rest_agent_unreachable(-ETIMEDOUT, "no answer", &e);
	assert_int_equal(e.code, 504);
	json_object_put(cfg);
}

/* A LUN POST or DELETE through the agent's ChangeLun: the body alone, the answer, the refusal's field. */
static void test_lun_change(void **state)
{
	struct rest_err e;
	json_object *b = J("{\"path\":\"/srv/a.img\",\"size\":\"1G\"}"), *cfg, *l;
	char prefix[64];
	bool has;
	uint32_t lun = 9;

	(void)state;
	assert_int_equal(rest_lun_body(b, &has, &lun, &e), 0);
	assert_false(has);
	cfg = rest_lun_made("iqn.2026-11.t:a", b, 4);
	l = rest_lun(cfg, "iqn.2026-11.t:a", 4);
	assert_non_null(l);
	assert_string_equal(json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN),
			    "{\"path\":\"\\/srv\\/a.img\",\"size\":\"1G\",\"lun\":4}");
	json_object_put(l);
	json_object_put(cfg);
	json_object_put(b);
	b = J("{\"lun\":3,\"path\":\"/a\"}");
	assert_int_equal(rest_lun_body(b, &has, &lun, &e), 0);
	assert_true(has);
	assert_int_equal(lun, 3);
	json_object_put(b);
	b = J("{\"lun\":99999,\"path\":\"/a\"}");
	assert_int_equal(rest_lun_body(b, &has, &lun, &e), -EINVAL);
	assert_int_equal(e.code, 422);
	assert_string_equal(e.field, "lun");
	json_object_put(b);
	/*
	 * Numbers past what json-c holds are told as sent, not as the
	 * saturated 9223372036854775807 (2^63 reads as 2^63: a uint64)
	 */
	b = J("{\"lun\":9223372036854775808,\"path\":\"/a\"}");
	assert_int_equal(rest_lun_body(b, &has, &lun, &e), -EINVAL);
	assert_string_equal(e.field, "lun");
	assert_string_equal(e.detail, "lun: 9223372036854775808 is out of range (0..16383)");
	json_object_put(b);
	b = J("{\"lun\":18446744073709551616,\"path\":\"/a\"}");
	assert_int_not_equal(rest_lun_body(b, &has, &lun, &e), 0);
	assert_int_equal(e.code, 422);
	assert_string_equal(e.field, "lun");
	assert_string_equal(e.detail, "lun: 18446744073709551615 or more is out of range (not a "
			    "64-bit integer)");
	json_object_put(b);
	b = J("{\"lun\":-9223372036854775809,\"path\":\"/a\"}");
	assert_int_not_equal(rest_lun_body(b, &has, &lun, &e), 0);
	assert_string_equal(e.field, "lun");
	assert_non_null(strstr(e.detail, "-9223372036854775808 or less"));
	json_object_put(b);
	b = J("{\"path\":\"/a\",\"size\":99999999999999999999999}");
	assert_int_not_equal(rest_lun_body(b, &has, &lun, &e), 0);
	assert_string_equal(e.field, "size");
	json_object_put(b);
	b = J("{\"path\":\"/a\",\"colour\":\"red\"}");
	assert_int_equal(rest_lun_body(b, &has, &lun, &e), -EINVAL);
	assert_string_equal(e.field, "colour");
	json_object_put(b);

	rest_lun_error_prefix("targets[2].luns[17].block_size: 1000 is not 512 or 4096", prefix,
			      sizeof(prefix));
	assert_string_equal(prefix, "targets[2].luns[17]");
	rest_agent_refusal(-EINVAL, "targets[2].luns[17].block_size: 1000 is not 512 or 4096",
			   prefix, &e);
	assert_int_equal(e.code, 422);
	assert_string_equal(e.field, "block_size");
	rest_lun_error_prefix("targets[0].luns[3]: expected an object, got array", prefix,
			      sizeof(prefix));
	assert_string_equal(prefix, "targets[0].luns[3]");
	rest_lun_error_prefix("no target iqn.2026-11.t:x", prefix, sizeof(prefix));
	assert_string_equal(prefix, "");
	rest_lun_error_prefix("lun: line 1 column 9: unexpected character", prefix, sizeof(prefix));
	assert_string_equal(prefix, "");
}

static void test_target_patch(void **state)
{
	json_object *cfg = J(CFG), *body, *o;
	struct rest_err e;

	(void)state;
	body = J("{\"alias\":\"db\",\"chap\":{\"user\":\"u\",\"secret\":\"s3cret-123456\"},"
		 "\"mutual_chap\":{\"user\":\"t\",\"secret\":\"m-s3cret-1234\"},\"queue_depth\":64}");
	assert_int_equal(rest_target_patch(cfg, "iqn.2026-11.t:a", body, &e), 0);
	json_object_put(body);
	/* a nested merge: the user changes, the secret stays; null removes */
	body = J("{\"chap\":{\"user\":\"u2\"},\"mutual_chap\":null,\"queue_depth\":null,"
		 "\"iqn\":\"iqn.2026-11.t:a\"}");
	assert_int_equal(rest_target_patch(cfg, "iqn.2026-11.t:a", body, &e), 0);
	json_object_put(body);
	o = json_object_array_get_idx(json_object_object_get(cfg, "targets"), 0);
	assert_json(json_object_object_get(o, "chap"), "{\"user\":\"u2\",\"secret\":\"s3cret-123456\"}");
	o = rest_target(cfg, "iqn.2026-11.t:a");
	assert_json(o, "{\"iqn\":\"iqn.2026-11.t:a\",\"alias\":\"db\",\"chap\":{\"user\":\"u2\"},"
		    "\"luns\":[{\"path\":\"/a0\"},{\"path\":\"/a1\"},{\"path\":\"/a2\"}]}");
	json_object_put(o);

	static const struct {
		const char *body, *field;
		int rc;
		unsigned int code;
	} bad[] = {
		{ "{\"iqn\":\"iqn.2026-11.t:b\"}", "iqn", -EINVAL, 422 },
		{ "{\"luns\":[]}", "luns", -EINVAL, 422 },
		{ "{\"acls\":[]}", "acls", -EINVAL, 422 },
		{ "{\"colour\":1}", "colour", -EINVAL, 422 },
		{ "{\"queue_depth\":\"1\"}", "queue_depth", -EINVAL, 422 },
		{ "{\"chap\":{\"pass\":\"x\"}}", "chap.pass", -EINVAL, 422 },
		{ "{\"chap\":{\"user\":1}}", "chap.user", -EINVAL, 422 },
		{ "{\"chap\":7}", "chap", -EINVAL, 422 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		body = J(bad[i].body);
		refused(rest_target_patch(cfg, "iqn.2026-11.t:a", body, &e), &e, bad[i].rc, bad[i].code,
			bad[i].field);
		json_object_put(body);
	}
	body = J("{\"alias\":\"x\"}");
	refused(rest_target_patch(cfg, "iqn.2026-11.t:x", body, &e), &e, -ENOENT, 404, "");
	json_object_put(body);
	json_object_put(cfg);
}

static void test_acls(void **state)
{
	json_object *cfg = J(CFG), *body, *o;
	struct rest_err e;
	char ini[REST_NAME_MAX + 1];
	char prefix[96];

	(void)state;
	o = rest_acls(cfg, "iqn.2026-11.t:a");
	assert_json(o, "{\"items\":[]}");
	json_object_put(o);
	assert_null(rest_acls(cfg, "iqn.2026-11.t:x"));

	body = J("{\"initiator\":\"iqn.2026-11.t:h1\",\"chap\":{\"user\":\"h1\",\"secret\":\"h1-s3cret-123\"}}");
	assert_int_equal(rest_acl_create(cfg, "iqn.2026-11.t:a", body, ini, sizeof(ini), &e), 0);
	assert_string_equal(ini, "iqn.2026-11.t:h1");
	refused(rest_acl_create(cfg, "iqn.2026-11.t:a", body, ini, sizeof(ini), &e), &e, -EEXIST, 409,
		"initiator");
	refused(rest_acl_create(cfg, "iqn.2026-11.t:x", body, ini, sizeof(ini), &e), &e, -ENOENT, 404, "");
	json_object_put(body);
	body = J("{\"initiator\":\"iqn.2026-11.t:h2\"}");
	assert_int_equal(rest_acl_create(cfg, "iqn.2026-11.t:a", body, ini, sizeof(ini), &e), 0);
	json_object_put(body);
	assert_int_equal(rest_write_prefix_sub(cfg, REST_ACL_POST, "iqn.2026-11.t:a", "iqn.2026-11.t:h2", 0, prefix,
					       sizeof(prefix)), 0);
	assert_string_equal(prefix, "targets[0].acls[1]");

	static const struct {
		const char *body, *field;
	} bad[] = {
		{ "{}", "initiator" }, { "{\"initiator\":1}", "initiator" },
		{ "{\"initiator\":\"iqn.2026-11.t:h3\",\"mutual\":{}}", "mutual" },
		{ "{\"initiator\":\"iqn.2026-11.t:h3\",\"chap\":{\"user\":\"u\",\"x\":1}}", "chap.x" },
		{ "{\"initiator\":\"\"}", "initiator" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		body = J(bad[i].body);
		refused(rest_acl_create(cfg, "iqn.2026-11.t:a", body, ini, sizeof(ini), &e), &e, -EINVAL, 422,
			bad[i].field);
		json_object_put(body);
	}

	/* secrets never shown */
	o = rest_acl(cfg, "iqn.2026-11.t:a", "iqn.2026-11.t:h1");
	assert_json(o, "{\"initiator\":\"iqn.2026-11.t:h1\",\"chap\":{\"user\":\"h1\"}}");
	json_object_put(o);
	assert_null(rest_acl(cfg, "iqn.2026-11.t:a", "iqn.2026-11.t:none"));

	/* patch: a new secret, the user kept; the initiator cannot change */
	body = J("{\"chap\":{\"secret\":\"new-s3cret-12\"}}");
	assert_int_equal(rest_acl_patch(cfg, "iqn.2026-11.t:a", "iqn.2026-11.t:h1", body, &e), 0);
	json_object_put(body);
	o = json_object_array_get_idx(json_object_object_get(json_object_array_get_idx(
		json_object_object_get(cfg, "targets"), 0), "acls"), 0);
	assert_json(o, "{\"initiator\":\"iqn.2026-11.t:h1\",\"chap\":{\"user\":\"h1\","
		    "\"secret\":\"new-s3cret-12\"}}");
	body = J("{\"initiator\":\"iqn.2026-11.t:h9\"}");
	refused(rest_acl_patch(cfg, "iqn.2026-11.t:a", "iqn.2026-11.t:h1", body, &e), &e, -EINVAL, 422, "initiator");
	json_object_put(body);
	body = J("{\"colour\":1}");
	refused(rest_acl_patch(cfg, "iqn.2026-11.t:a", "iqn.2026-11.t:h1", body, &e), &e, -EINVAL, 422, "colour");
	json_object_put(body);
	body = J("{\"chap\":null}");
	refused(rest_acl_patch(cfg, "iqn.2026-11.t:a", "iqn.2026-11.t:none", body, &e), &e, -ENOENT, 404, "");
	assert_int_equal(rest_acl_patch(cfg, "iqn.2026-11.t:a", "iqn.2026-11.t:h1", body, &e), 0);
	json_object_put(body);
	o = rest_acls(cfg, "iqn.2026-11.t:a");
	assert_json(o, "{\"items\":[{\"initiator\":\"iqn.2026-11.t:h1\"},{\"initiator\":\"iqn.2026-11.t:h2\"}]}");
	json_object_put(o);

	assert_int_equal(rest_acl_delete(cfg, "iqn.2026-11.t:a", "iqn.2026-11.t:h1", &e), 0);
	refused(rest_acl_delete(cfg, "iqn.2026-11.t:a", "iqn.2026-11.t:h1", &e), &e, -ENOENT, 404, "");
	refused(rest_acl_delete(cfg, "iqn.2026-11.t:x", "iqn.2026-11.t:h2", &e), &e, -ENOENT, 404, "");
	json_object_put(cfg);
}

static void test_discovery_chap(void **state)
{
	json_object *cfg = J(CFG), *body, *o;
	struct rest_err e;

	(void)state;
	o = rest_discovery_chap(cfg);
	assert_json(o, "{}");
	json_object_put(o);
	refused(rest_discovery_chap_delete(cfg, &e), &e, -ENOENT, 404, "");
	body = J("{\"user\":\"d\"}");
	refused(rest_discovery_chap_put(cfg, body, &e), &e, -EINVAL, 422, "secret");
	json_object_put(body);
	body = J("{\"secret\":\"d-s3cret-1234\"}");
	refused(rest_discovery_chap_put(cfg, body, &e), &e, -EINVAL, 422, "user");
	json_object_put(body);
	body = J("{\"user\":\"d\",\"secret\":\"d-s3cret-1234\",\"x\":1}");
	refused(rest_discovery_chap_put(cfg, body, &e), &e, -EINVAL, 422, "x");
	json_object_put(body);
	body = J("{\"user\":\"d\",\"secret\":\"d-s3cret-1234\"}");
	assert_int_equal(rest_discovery_chap_put(cfg, body, &e), 0);
	json_object_put(body);
	/* the same user without a secret keeps it */
	body = J("{\"user\":\"d\"}");
	assert_int_equal(rest_discovery_chap_put(cfg, body, &e), 0);
	json_object_put(body);
	assert_json(json_object_object_get(cfg, "discovery_chap"),
		    "{\"user\":\"d\",\"secret\":\"d-s3cret-1234\"}");
	o = rest_discovery_chap(cfg);
	assert_json(o, "{\"user\":\"d\"}");
	json_object_put(o);
	assert_int_equal(rest_discovery_chap_delete(cfg, &e), 0);
	assert_json(cfg, CFG);
	json_object_put(cfg);
}

static void test_portals(void **state)
{
	json_object *cfg = J("{\"nodes\":[{\"name\":\"n1\",\"tpg_id\":1,\"portals\":["
			     "{\"url\":\"tcp://10.0.0.1\",\"rel_port_id\":1}]},"
			     "{\"name\":\"n2\",\"tpg_id\":2}]}"), *body, *o;
	struct rest_err e;
	uint32_t rel = 0;
	char prefix[96];

	(void)state;
	assert_null(rest_portals(cfg, "n9"));
	o = rest_portals(cfg, "n2");
	assert_json(o, "{\"items\":[]}");
	json_object_put(o);
	o = rest_port_groups(cfg);
	assert_json(o, "{\"items\":[{\"tpg_id\":1,\"node\":\"n1\",\"rel_port_ids\":[1]}]}");
	json_object_put(o);

	/* the lowest rel_port_id free in the cluster */
	body = J("{\"url\":\"tcp://10.0.0.2\"}");
	assert_int_equal(rest_portal_create(cfg, "n2", body, &rel, &e), 0);
	assert_int_equal(rel, 2);
	refused(rest_portal_create(cfg, "n9", body, &rel, &e), &e, -ENOENT, 404, "");
	json_object_put(body);
	body = J("{\"url\":\"iser://10.0.0.2\",\"rel_port_id\":1}");
	refused(rest_portal_create(cfg, "n2", body, &rel, &e), &e, -EEXIST, 409, "rel_port_id");
	json_object_put(body);
	body = J("{\"url\":\"iser://10.0.0.2\",\"rel_port_id\":65536}");
	refused(rest_portal_create(cfg, "n2", body, &rel, &e), &e, -EINVAL, 422, "rel_port_id");
	json_object_put(body);
	body = J("{\"url\":\"iser://10.0.0.2\",\"tpgt\":3}");
	refused(rest_portal_create(cfg, "n2", body, &rel, &e), &e, -EINVAL, 422, "tpgt");
	json_object_put(body);
	body = J("{\"rel_port_id\":5}");
	refused(rest_portal_create(cfg, "n2", body, &rel, &e), &e, -EINVAL, 422, "url");
	json_object_put(body);
	body = J("{\"url\":\"iser://10.0.0.2\",\"rel_port_id\":7}");
	assert_int_equal(rest_portal_create(cfg, "n2", body, &rel, &e), 0);
	assert_int_equal(rel, 7);
	json_object_put(body);
	assert_int_equal(rest_write_prefix_sub(cfg, REST_PORTAL_POST, "n2", NULL, 7, prefix,
					       sizeof(prefix)), 0);
	assert_string_equal(prefix, "nodes[1].portals[1]");
	o = rest_port_groups(cfg);
	assert_json(o, "{\"items\":[{\"tpg_id\":1,\"node\":\"n1\",\"rel_port_ids\":[1]},"
		    "{\"tpg_id\":2,\"node\":\"n2\",\"rel_port_ids\":[2,7]}]}");
	json_object_put(o);

	body = J("{\"url\":\"tcp://10.0.0.3:3261\",\"rel_port_id\":7}");
	assert_int_equal(rest_portal_patch(cfg, "n2", 7, body, &e), 0);
	json_object_put(body);
	o = rest_portal(cfg, "n2", 7);
	assert_json(o, "{\"url\":\"tcp://10.0.0.3:3261\",\"rel_port_id\":7}");
	json_object_put(o);
	body = J("{\"rel_port_id\":8}");
	refused(rest_portal_patch(cfg, "n2", 7, body, &e), &e, -EINVAL, 422, "rel_port_id");
	json_object_put(body);
	body = J("{\"url\":null}");
	refused(rest_portal_patch(cfg, "n2", 7, body, &e), &e, -EINVAL, 422, "url");
	json_object_put(body);
	body = J("{\"url\":5}");
	refused(rest_portal_patch(cfg, "n2", 7, body, &e), &e, -EINVAL, 422, "url");
	refused(rest_portal_patch(cfg, "n2", 9, body, &e), &e, -ENOENT, 404, "");
	json_object_put(body);
	assert_null(rest_portal(cfg, "n2", 9));

	assert_int_equal(rest_portal_delete(cfg, "n2", 7, &e), 0);
	assert_int_equal(rest_portal_delete(cfg, "n2", 2, &e), 0);
	refused(rest_portal_delete(cfg, "n2", 2, &e), &e, -ENOENT, 404, "");
	assert_json(json_object_object_get(cfg, "nodes"),
		    "[{\"name\":\"n1\",\"tpg_id\":1,\"portals\":[{\"url\":\"tcp://10.0.0.1\","
		    "\"rel_port_id\":1}]},{\"name\":\"n2\",\"tpg_id\":2,\"portals\":[]}]");
	json_object_put(cfg);
}

static void test_lun_grow(void **state)
{
	json_object *cfg = J("{\"targets\":[{\"iqn\":\"iqn.2026-11.t:a\",\"luns\":[{\"lun\":0,"
			     "\"path\":\"/a0\",\"size\":\"1G\"}]}]}"), *body, *v;
	struct rest_err e;
	uint64_t b;

	(void)state;
	static const struct {
		const char *json;
		int rc;
		uint64_t bytes;
	} sizes[] = {
		{ "1073741824", 0, 1073741824ull }, { "\"1G\"", 0, 1ull << 30 },
		{ "\"512m\"", 0, 512ull << 20 }, { "\"2T\"", 0, 2ull << 40 }, { "\"4k\"", 0, 4096 },
		{ "\"7\"", 0, 7 }, { "\"1X\"", -EINVAL, 0 }, { "\"1GB\"", -EINVAL, 0 },
		{ "\"-1\"", -EINVAL, 0 }, { "-1", -EINVAL, 0 }, { "true", -EINVAL, 0 },
		{ "\"\"", -EINVAL, 0 }, { "\"99999999999T\"", -EINVAL, 0 },
	};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		v = J(sizes[i].json);
		b = 0;
		if (rest_size_parse(v, &b) != sizes[i].rc || b != sizes[i].bytes)
			fail_msg("%s: %" PRIu64, sizes[i].json, b);
		json_object_put(v);
	}

	/* growing is a change like another; shrinking is refused naming size */
	body = J("{\"size\":\"2G\"}");
	assert_int_equal(rest_lun_patch(cfg, "iqn.2026-11.t:a", 0, body, &e), 0);
	json_object_put(body);
	body = J("{\"size\":1073741824}");
	refused(rest_lun_patch(cfg, "iqn.2026-11.t:a", 0, body, &e), &e, -EINVAL, 422, "size");
	assert_non_null(strstr(e.detail, "never shrinks"));
	json_object_put(body);
	body = J("{\"size\":\"2g\"}");
	assert_int_equal(rest_lun_patch(cfg, "iqn.2026-11.t:a", 0, body, &e), 0);
	json_object_put(body);
	body = J("{\"size\":\"lots\"}");
	refused(rest_lun_patch(cfg, "iqn.2026-11.t:a", 0, body, &e), &e, -EINVAL, 422, "size");
	json_object_put(body);
	json_object_put(cfg);
}

static void test_sessions(void **state)
{
	Isergw__Ctl__SessionList sl = ISERGW__CTL__SESSION_LIST__INIT;
	Isergw__Ctl__Session s = ISERGW__CTL__SESSION__INIT, *ss[1] = { &s };
	Isergw__Ctl__Connection c = ISERGW__CTL__CONNECTION__INIT, *cs[1] = { &c };
	Isergw__Ctl__IoStats st = ISERGW__CTL__IO_STATS__INIT;
	json_object *o;

	(void)state;
	o = rest_sessions(&sl, "gw1");
	assert_json(o, "{\"items\":[]}");
	json_object_put(o);
	s.target = (char *)"iqn.2026-11.t:t";
	s.initiator = (char *)"iqn.2026-11.t:h";
	s.isid = (char *)"400001370000";
	s.tsih = 3;
	s.portal = (char *)"127.0.0.1:3260";
	s.transport = (char *)"tcp";
	s.type = (char *)"normal";
	s.n_connections = 1;
	s.connections = cs;
	s.stats = &st;
	st.cmds_read = 5;
	st.bytes_read = 20480;
	c.cid = 1;
	c.peer = (char *)"127.0.0.1:40000";
	c.local = (char *)"127.0.0.1:3260";
	c.state = (char *)"full-feature";
	c.login_time = 1700000000;
	sl.n_sessions = 1;
	sl.sessions = ss;
	o = rest_session(&sl, "gw1", 3);
	assert_json(o, "{\"tsih\":3,\"node\":\"gw1\",\"type\":\"normal\",\"target\":\"iqn.2026-11.t:t\","
		    "\"initiator\":\"iqn.2026-11.t:h\",\"isid\":\"400001370000\",\"portal\":\"127.0.0.1:3260\","
		    "\"transport\":\"tcp\",\"connections\":[{\"cid\":1,\"peer\":\"127.0.0.1:40000\","
		    "\"local\":\"127.0.0.1:3260\",\"state\":\"full-feature\",\"login_time\":1700000000}],"
		    "\"reads\":5,\"writes\":0,\"bytes_read\":20480,\"bytes_written\":0}");
	json_object_put(o);
	assert_null(rest_session(&sl, "gw1", 4));
	o = rest_sessions(&sl, "gw1");
	assert_int_equal(json_object_array_length(json_object_object_get(o, "items")), 1);
	json_object_put(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routing),
		cmocka_unit_test(test_lun_change),
		cmocka_unit_test(test_openapi_matches_routes),
		cmocka_unit_test(test_etag_if_match),
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_cluster_resources),
		cmocka_unit_test(test_target_create),
		cmocka_unit_test(test_luns),
		cmocka_unit_test(test_every_field),
		cmocka_unit_test(test_node_dg_patch),
		cmocka_unit_test(test_secrets),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_target_patch),
		cmocka_unit_test(test_acls),
		cmocka_unit_test(test_discovery_chap),
		cmocka_unit_test(test_portals),
		cmocka_unit_test(test_lun_grow),
		cmocka_unit_test(test_sessions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
