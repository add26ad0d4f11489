// LINK: ha_logic
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for ha/doc*.c: the cluster configuration's validation (key
 * paths of every kind of error, isergwd's validator on every node), the
 * canonical text and its digest, the runtime carried over a new
 * configuration, derived generations, rendering, storage.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "doc.h"
#include "config/config.h"

/* ------------------------------------------------------------ fixtures */

#define PORTAL(url, rel) "{\"url\":\"" url "\",\"rel_port_id\":" #rel "}"
#define NODE(name, tpg, portals) \
	"{\"name\":\"" name "\",\"tpg_id\":" #tpg ",\"portals\":[" portals "]}"
#define NODES3 "[" \
	NODE("n1", 1, PORTAL("tcp://10.0.0.1:3260", 1) "," PORTAL("iser://10.1.0.1:3260", 4)) "," \
	NODE("n2", 2, PORTAL("tcp://10.0.0.2:3260", 2)) "," \
	NODE("n3", 3, PORTAL("tcp://10.0.0.3:3260", 3)) "]"
#define DGS3 "[{\"name\":\"dg1\",\"preferred_owner\":\"n1\",\"failback\":\"immediate\"," \
	"\"non_owner_state\":\"active/non-optimized\"}," \
	"{\"name\":\"dg2\",\"preferred_owner\":\"n2\",\"failback\":\"manual\"," \
	"\"non_owner_state\":\"standby\"},{\"name\":\"default\",\"preferred_owner\":\"\"}]"
#define LUN(n, dg) "{\"lun\":" #n ",\"path\":\"/dev/mapper/shared-" #n "\"" dg "}"
#define TARGETS "[{\"iqn\":\"iqn.2026-11.org.example:cluster\",\"luns\":[" \
	LUN(0, ",\"device_group\":\"dg1\"") "," LUN(1, ",\"device_group\":\"dg2\"") "," \
	LUN(2, "") "]}]"
#define CHAP "{\"user\":\"disc\",\"secret\":\"discoverysecret1\"}"
#define GATEWAY "{\"log_level\":\"info\",\"nop_interval_s\":7,\"nop_timeout_s\":31," \
	"\"login_timeout_s\":16,\"alua_request_timeout_ms\":9000,\"reactors\":2,\"tcp_splice\":false}"

static const char full_config[] =
	"{\n"
	"  \"nodes\": " NODES3 ",\n"
	"  \"device_groups\": " DGS3 ",\n"
	"  \"targets\": " TARGETS ",\n"
	"  \"discovery_chap\": " CHAP ",\n"
	"  \"gateway\": " GATEWAY "\n"
	"}\n";

/* The same configuration, keys in another order, other whitespace. */
static const char full_config_reordered[] =
	"{\"gateway\":{\"tcp_splice\":false,\"reactors\":2,\"alua_request_timeout_ms\":9000,\"login_timeout_s\":16,"
	"\"nop_timeout_s\":31,\"nop_interval_s\":7,\"log_level\":\"info\"},"
	"\"discovery_chap\":{\"secret\":\"discoverysecret1\",\"user\":\"disc\"},"
	"\"targets\":[{\"luns\":[{\"device_group\":\"dg1\",\"path\":\"/dev/mapper/shared-0\",\"lun\":0},"
	"{\"device_group\":\"dg2\",\"path\":\"/dev/mapper/shared-1\",\"lun\":1},"
	"{\"path\":\"/dev/mapper/shared-2\",\"lun\":2}],\"iqn\":\"iqn.2026-11.org.example:cluster\"}],"
	"\"device_groups\":[{\"non_owner_state\":\"active/non-optimized\",\"failback\":\"immediate\","
	"\"preferred_owner\":\"n1\",\"name\":\"dg1\"},"
	"{\"non_owner_state\":\"standby\",\"failback\":\"manual\",\"preferred_owner\":\"n2\","
	"\"name\":\"dg2\"},{\"preferred_owner\":\"\",\"name\":\"default\"}],"
	"   \"nodes\" : [ {\"portals\":[{\"rel_port_id\":1,\"url\":\"tcp://10.0.0.1:3260\"},"
	"{\"rel_port_id\":4,\"url\":\"iser://10.1.0.1:3260\"}],\"tpg_id\":1,\"name\":\"n1\"},"
	"{\"tpg_id\":2,\"name\":\"n2\",\"portals\":[{\"url\":\"tcp://10.0.0.2:3260\",\"rel_port_id\":2}]},"
	"{\"portals\":[{\"url\":\"tcp://10.0.0.3:3260\",\"rel_port_id\":3}],\"name\":\"n3\",\"tpg_id\":3}]}";

/* A smaller one for the error cases: two nodes, two device groups, two LUNs. */
#define NODES2 "[" NODE("n1", 1, PORTAL("tcp://10.0.0.1", 1)) "," \
	NODE("n2", 2, PORTAL("tcp://10.0.0.2", 2)) "]"
#define DGS2 "[{\"name\":\"dg1\",\"preferred_owner\":\"n1\"},{\"name\":\"dg2\"}]"
#define TGT2(lun1) "[{\"iqn\":\"iqn.2026-11.org.example:t\",\"luns\":[" \
	"{\"path\":\"/dev/a\",\"device_group\":\"dg1\"}," lun1 "]}]"
#define LUN1 "{\"lun\":1,\"path\":\"/dev/b\",\"device_group\":\"dg2\"}"
#define CFG(nodes, dgs, targets, extra) \
	"{\"nodes\":" nodes ",\"device_groups\":" dgs ",\"targets\":" targets extra "}"
#define GOOD2 CFG(NODES2, DGS2, TGT2(LUN1), "")

static struct ha_doc *doc_from(const char *config)
{
	struct ha_doc *e = NULL, *d = NULL;
	char err[512] = "";
	int rc;

	assert_int_equal(ha_doc_empty(&e), 0);
	rc = ha_doc_with_config(e, config, &d, err, sizeof(err));
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, 0);
	assert_non_null(d);
	ha_doc_free(e);
	return d;
}

static void sha256(const char *s, size_t n, uint8_t out[HA_DIGEST_LEN])
{
	assert_int_equal(EVP_Digest(s, n, out, NULL, EVP_sha256(), NULL), 1);
}

/* ------------------------------------------------------------- tests */

static void test_empty(void **state)
{
	struct ha_doc *d = NULL;
	uint8_t dig[HA_DIGEST_LEN];
	char *s;

	(void)state;
	assert_int_equal(ha_doc_empty(&d), 0);
	assert_int_equal(d->generation, 0);
	assert_int_equal(d->nnodes, 0);
	assert_int_equal(d->ndgs, 0);
	assert_string_equal(d->text, "{\"config\":{},\"generation\":0,\"runtime\":{\"drained\":[],\"live\":[],\"moving\":{},\"owners\":{}}}");
	assert_int_equal(d->text_len, strlen(d->text));
	sha256(d->text, d->text_len, dig);
	assert_memory_equal(dig, d->digest, HA_DIGEST_LEN);
	s = ha_doc_config_json(d);
	assert_string_equal(s, "{}");
	free(s);
	s = ha_doc_runtime_json(d);
	assert_string_equal(s, "{\"drained\":[],\"live\":[],\"moving\":{},\"owners\":{}}");
	free(s);
	assert_int_equal(ha_doc_find_node(d, "n1"), -1);
	assert_int_equal(ha_doc_find_dg(d, "dg1"), -1);
	ha_doc_free(d);
}

static void test_full_config(void **state)
{
	struct ha_doc *d;
	uint8_t dig[HA_DIGEST_LEN];
	char err[512] = "";
	int rc;

	(void)state;
	rc = ha_config_check(full_config, err, sizeof(err));
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, 0);

	d = doc_from(full_config);
	assert_int_equal(d->generation, 1);
	assert_int_equal(d->nnodes, 3);
	assert_string_equal(d->nodes[0].name, "n1");
	assert_int_equal(d->nodes[0].tpg_id, 1);
	assert_int_equal(d->nodes[0].nportals, 2);
	assert_string_equal(d->nodes[0].portals[0].url, "tcp://10.0.0.1:3260");
	assert_int_equal(d->nodes[0].portals[0].rel_port_id, 1);
	assert_string_equal(d->nodes[0].portals[1].url, "iser://10.1.0.1:3260");
	assert_int_equal(d->nodes[0].portals[1].rel_port_id, 4);
	assert_string_equal(d->nodes[2].name, "n3");
	assert_int_equal(d->nodes[2].tpg_id, 3);
	assert_int_equal(d->nodes[2].portals[0].rel_port_id, 3);

	assert_int_equal(d->ndgs, 3);
	assert_string_equal(d->dgs[0].name, "dg1");
	assert_int_equal(d->dgs[0].preferred, 0);
	assert_int_equal(d->dgs[0].failback, HA_FAILBACK_IMMEDIATE);
	assert_int_equal(d->dgs[0].non_owner_state, 1);
	assert_int_equal(d->dgs[1].preferred, 1);
	assert_int_equal(d->dgs[1].failback, HA_FAILBACK_MANUAL);
	assert_int_equal(d->dgs[1].non_owner_state, 2);
	assert_string_equal(d->dgs[2].name, "default");
	assert_int_equal(d->dgs[2].preferred, -1);
	assert_int_equal(d->dgs[2].failback, HA_FAILBACK_IMMEDIATE);
	assert_int_equal(d->dgs[2].non_owner_state, 1);
	for (size_t g = 0; g < d->ndgs; g++)
		assert_int_equal(d->owner[g], -1);
	for (size_t k = 0; k < d->nnodes; k++)
		assert_false(d->drained[k]);

	assert_int_equal(ha_doc_find_node(d, "n2"), 1);
	assert_int_equal(ha_doc_find_node(d, "n4"), -1);
	assert_int_equal(ha_doc_find_dg(d, "default"), 2);
	assert_string_equal(ha_failback_name(d->dgs[1].failback), "manual");
	assert_string_equal(ha_non_owner_state_name(3), "unavailable");
	assert_null(ha_non_owner_state_name(0));

	/* no whitespace anywhere, keys sorted, the document's keys too */
	{
		static const char start[] = "{\"config\":{\"device_groups\":[{\"failback\":\"immediate\","
					    "\"name\":\"dg1\",";

		assert_int_equal(strncmp(d->text, start, strlen(start)), 0);
	}
	assert_null(strchr(d->text, '\n'));
	assert_null(strstr(d->text, "\": "));
	assert_non_null(strstr(d->text, "},\"generation\":1,\"runtime\":{\"drained\":[],\"live\":[],\"moving\":{},\"owners\":{}}}"));
	sha256(d->text, d->text_len, dig);
	assert_memory_equal(dig, d->digest, HA_DIGEST_LEN);
	ha_doc_free(d);
}

static void test_canonical(void **state)
{
	struct ha_doc *a, *b;
	char *ca, *cb, hexa[65], hexb[65];
	char err[256];

	(void)state;
	a = doc_from(full_config);
	b = doc_from(full_config_reordered);
	assert_string_equal(a->text, b->text);
	assert_memory_equal(a->digest, b->digest, HA_DIGEST_LEN);
	ha_digest_hex(a->digest, hexa);
	ha_digest_hex(b->digest, hexb);
	assert_int_equal(strlen(hexa), 64);
	assert_string_equal(hexa, hexb);
	assert_int_equal(strspn(hexa, "0123456789abcdef"), 64);
	ca = ha_doc_config_json(a);
	cb = ha_doc_config_json(b);
	assert_string_equal(ca, cb);
	/* the configuration's text is the one inside the document */
	assert_int_equal(strncmp(a->text, "{\"config\":", 10), 0);
	assert_int_equal(strncmp(a->text + 10, ca, strlen(ca)), 0);
	assert_int_equal(ha_doc_config_equal(a, full_config_reordered, err, sizeof(err)), 1);
	assert_int_equal(ha_doc_config_equal(a, GOOD2, err, sizeof(err)), 0);
	assert_int_equal(ha_doc_config_equal(a, "{", err, sizeof(err)), -EINVAL);
	free(ca);
	free(cb);
	ha_doc_free(a);
	ha_doc_free(b);

	/* exact text of a small configuration; strings escaped as JSON needs, UTF-8 raw */
	a = doc_from("{ \"targets\": [ { \"luns\": [ {\"path\": \"/dev/a\", \"device_group\": \"g\"} ],"
		     "  \"alias\": \"a \\\"q\\\" \\\\ \\u00e9 \\/\", \"iqn\": \"iqn.2026-11.org.example:t\","
		     "  \"chap\": { \"user\": \"u\\n\", \"secret\": \"0123456789abcdef\" } } ],"
		     "  \"device_groups\": [ { \"name\": \"g\" } ],"
		     "  \"nodes\": [ { \"tpg_id\": 9, \"name\": \"a.b_c-1\","
		     "    \"portals\": [ { \"url\": \"tcp://127.0.0.1:3260\", \"rel_port_id\": 65535 } ] } ] }");
	ca = ha_doc_config_json(a);
	assert_string_equal(ca,
		"{\"device_groups\":[{\"name\":\"g\"}],"
		"\"nodes\":[{\"name\":\"a.b_c-1\",\"portals\":[{\"rel_port_id\":65535,"
		"\"url\":\"tcp://127.0.0.1:3260\"}],\"tpg_id\":9}],"
		"\"targets\":[{\"alias\":\"a \\\"q\\\" \\\\ \xc3\xa9 /\","
		"\"chap\":{\"secret\":\"0123456789abcdef\",\"user\":\"u\\n\"},\"iqn\":\"iqn.2026-11.org.example:t\",\"luns\":[{\"device_group\":\"g\",\"path\":\"/dev/a\"}]}]}");
	free(ca);
	ha_doc_free(a);
}

static void test_digest_changes(void **state)
{
	struct ha_doc *a, *b, *c;
	int owner[3] = { -1, -1, -1 };
	char err[256];

	(void)state;
	a = doc_from(full_config);
	/* the same owners: only the generation differs */
	assert_int_equal(ha_doc_with_owners(a, owner, &b), 0);
	assert_int_equal(b->generation, 2);
	assert_memory_not_equal(a->digest, b->digest, HA_DIGEST_LEN);
	/* an owner */
	owner[1] = 2;
	assert_int_equal(ha_doc_with_owners(b, owner, &c), 0);
	assert_int_equal(c->generation, 3);
	assert_memory_not_equal(b->digest, c->digest, HA_DIGEST_LEN);
	ha_doc_free(c);
	/* a drain */
	assert_int_equal(ha_doc_with_drain(a, 1, true, &c), 0);
	assert_memory_not_equal(b->digest, c->digest, HA_DIGEST_LEN);
	assert_int_equal(c->generation, b->generation);
	ha_doc_free(c);
	/* one character of the configuration */
	{
		char *cfg = strdup(full_config);
		char *p = strstr(cfg, "shared-2");

		p[7] = '3';
		assert_int_equal(ha_doc_with_config(a, cfg, &c, err, sizeof(err)), 0);
		assert_int_equal(c->generation, 2);
		assert_memory_not_equal(b->digest, c->digest, HA_DIGEST_LEN);
		assert_memory_not_equal(a->digest, c->digest, HA_DIGEST_LEN);
		free(cfg);
		ha_doc_free(c);
	}
	/* the same configuration again: the same text but the generation */
	assert_int_equal(ha_doc_with_config(a, full_config_reordered, &c, err, sizeof(err)), 0);
	assert_memory_not_equal(a->digest, c->digest, HA_DIGEST_LEN);
	assert_memory_equal(b->digest, c->digest, HA_DIGEST_LEN); /* both generation 2, none owned */
	ha_doc_free(c);
	ha_doc_free(b);
	ha_doc_free(a);
}

struct bad_case {
	const char *json;
	const char *expect;     /* the start of the message */
};

static void check_bad(const struct bad_case *bad, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char err[512] = "";
		int rc = ha_config_check(bad[i].json, err, sizeof(err));

		if (rc != -EINVAL || strncmp(err, bad[i].expect, strlen(bad[i].expect)) != 0) {
			print_error("case %zu: rc %d\n  got:    %s\n  expect: %s...\n", i, rc, err,
				    bad[i].expect);
			fail();
		}
	}
}

static void test_errors(void **state)
{
	static const struct bad_case bad[] = {
		/* syntax, shape */
		{ "{\"nodes\": [", "config: line 1 column 12: unexpected end of input" },
		{ "{} {}", "config: line 1 column 4: trailing data" },
		{ "[]", "config: expected an object, got array" },
		{ "{}", "nodes: missing" },
		{ "{\"nodes\":[]}", "nodes: 0 elements (1..32)" },
		/* unknown keys at several depths */
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"colour\":1"), "colour: unknown key" },
		{ CFG("[{\"name\":\"n1\",\"tpg_id\":1,\"colour\":1}]", "[]", "[]", ""),
		  "nodes[0].colour: unknown key" },
		{ CFG("[" NODE("n1", 1, "{\"url\":\"tcp://a\",\"rel_port_id\":1,\"tpgt\":1}") "]",
		      "[]", "[]", ""), "nodes[0].portals[0].tpgt: unknown key" },
		{ CFG(NODES2, "[{\"name\":\"dg1\"},{\"name\":\"dg2\",\"owner\":\"n1\"}]", "[]", ""),
		  "device_groups[1].owner: unknown key" },
		{ CFG(NODES2, DGS2, "[]", ",\"gateway\":{\"state_dir\":\"/x\"}"),
		  "gateway.state_dir: unknown key" },
		{ CFG(NODES2, DGS2, TGT2("{\"lun\":1,\"path\":\"/dev/b\",\"device_group\":\"dg2\",\"colour\":1}"), ""),
		  "nodes[0] (n1): targets[0].luns[1].colour: unknown key" },
		{ CFG(NODES2, DGS2, "[{\"iqn\":\"iqn.2026-11.org.example:t\",\"colour\":1}]", ""),
		  "nodes[0] (n1): targets[0].colour: unknown key" },
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"discovery_chap\":{\"user\":\"u\",\"secret\":\"s12345678901\",\"x\":1}"),
		  "nodes[0] (n1): discovery_chap.x: unknown key" },
		/* types */
		{ "{\"nodes\":{}}", "nodes: expected an array, got object" },
		{ "{\"nodes\":[1]}", "nodes[0]: expected an object, got int" },
		{ CFG("[{\"name\":1,\"tpg_id\":1}]", "[]", "[]", ""), "nodes[0].name: expected a string, got int" },
		{ CFG("[{\"name\":\"n1\",\"tpg_id\":\"1\"}]", "[]", "[]", ""),
		  "nodes[0].tpg_id: expected an integer, got string" },
		{ CFG("[{\"name\":\"n1\",\"tpg_id\":1.5}]", "[]", "[]", ""),
		  "nodes[0].tpg_id: expected an integer, got double" },
		{ CFG("[{\"name\":\"n1\",\"tpg_id\":1,\"portals\":{}}]", "[]", "[]", ""),
		  "nodes[0].portals: expected an array, got object" },
		{ CFG(NODES2, "[{\"name\":\"dg1\",\"preferred_owner\":null}]", "[]", ""),
		  "device_groups[0].preferred_owner: expected a string, got null" },
		{ CFG(NODES2, "[{\"name\":\"dg1\",\"failback\":\"sometimes\"}]", "[]", ""),
		  "device_groups[0].failback: 'sometimes' is not one of immediate, manual" },
		{ CFG(NODES2, "[{\"name\":\"dg1\",\"non_owner_state\":\"offline\"}]", "[]", ""),
		  "device_groups[0].non_owner_state: 'offline' is not one of" },
		{ CFG(NODES2, DGS2, "{}", ""), "targets: expected an array, got object" },
		{ CFG(NODES2, DGS2, "[{\"iqn\":\"iqn.2026-11.org.example:t\",\"luns\":[1]}]", ""),
		  "targets[0].luns[0]: expected an object, got int" },
		{ CFG(NODES2, DGS2, TGT2("{\"path\":\"/dev/b\",\"device_group\":2}"), ""),
		  "targets[0].luns[1].device_group: expected a string, got int" },
		{ CFG(NODES2, DGS2, "[]", ",\"gateway\":{\"nop_interval_s\":\"5\"}"),
		  "gateway.nop_interval_s: expected an integer, got string" },
		{ CFG(NODES2, DGS2, "[]", ",\"gateway\":{\"tcp_splice\":\"yes\"}"),
		  "gateway.tcp_splice: expected true or false, got string" },
		{ CFG(NODES2, DGS2, "[]", ",\"gateway\":{\"log_level\":\"loud\"}"),
		  "gateway.log_level: 'loud' is not one of err, warn, notice, info, debug" },
		{ CFG(NODES2, DGS2, "[]", ",\"gateway\":[]"), "gateway: expected an object, got array" },
		{ CFG(NODES2, DGS2, "[]", ",\"discovery_chap\":\"x\""),
		  "discovery_chap: expected an object, got string" },
		/* ranges, names */
		{ CFG("[{\"name\":\"n1\",\"tpg_id\":0}]", "[]", "[]", ""), "nodes[0].tpg_id: 0 out of range (1..65535)" },
		{ CFG("[{\"name\":\"n1\",\"tpg_id\":65536}]", "[]", "[]", ""),
		  "nodes[0].tpg_id: 65536 out of range (1..65535)" },
		{ CFG("[" NODE("n1", 1, PORTAL("tcp://a", 0)) "]", "[]", "[]", ""),
		  "nodes[0].portals[0].rel_port_id: 0 out of range (1..65535)" },
		{ CFG("[" NODE("n1", 1, "{\"url\":\"tcp://a\"}") "]", "[]", "[]", ""),
		  "nodes[0].portals[0].rel_port_id: missing" },
		{ CFG("[{\"name\":\"n1\"}]", "[]", "[]", ""), "nodes[0].tpg_id: missing" },
		{ CFG("[{\"tpg_id\":1}]", "[]", "[]", ""), "nodes[0].name: missing" },
		{ CFG("[{\"name\":\"\",\"tpg_id\":1}]", "[]", "[]", ""), "nodes[0].name: must not be empty" },
		{ CFG("[{\"name\":\"n 1\",\"tpg_id\":1}]", "[]", "[]", ""),
		  "nodes[0].name: 'n 1': a node name has only A-Z a-z 0-9 . _ -" },
		{ CFG("[{\"name\":\"n1234567890123456789012345678901234567890123456789012345678901234\","
		      "\"tpg_id\":1}]", "[]", "[]", ""), "nodes[0].name: too long (65 bytes, max 63)" },
		{ CFG("[" NODE("n1", 1, PORTAL("udp://a", 1)) "]", "[]", "[]", ""),
		  "nodes[0].portals[0].url: 'udp://a' is not a portal" },
		{ CFG(NODES2, "[{\"name\":\"\"}]", "[]", ""),
		  "device_groups[0].name: 1..63 printable ASCII characters" },
		{ CFG(NODES2, DGS2, "[]", ",\"gateway\":{\"alua_request_timeout_ms\":99}"),
		  "gateway.alua_request_timeout_ms: 99 out of range (100..600000)" },
		{ CFG(NODES2, DGS2, "[]", ",\"gateway\":{\"reactors\":-1}"),
		  "gateway.reactors: -1 out of range (0..1024)" },
		{ CFG(NODES2, DGS2, "[]", ",\"gateway\":{\"alua_lease_unavailable_ms\":600001}"),
		  "gateway.alua_lease_unavailable_ms: 600001 out of range (0..600000)" },
		/* duplicates */
		{ CFG("[{\"name\":\"n1\",\"tpg_id\":1},{\"name\":\"n1\",\"tpg_id\":2}]", "[]", "[]", ""),
		  "nodes[1].name: 'n1' already used by nodes[0]" },
		{ CFG("[{\"name\":\"n1\",\"tpg_id\":1},{\"name\":\"n2\",\"tpg_id\":1}]", "[]", "[]", ""),
		  "nodes[1].tpg_id: 1 already used by nodes[0]" },
		{ CFG("[" NODE("n1", 1, PORTAL("tcp://a", 1)) "," NODE("n2", 2, PORTAL("tcp://b", 7) ","
		      PORTAL("tcp://c", 1)) "]", "[]", "[]", ""),
		  "nodes[1].portals[1].rel_port_id: 1 already used by nodes[0].portals[0]" },
		{ CFG("[" NODE("n1", 1, PORTAL("tcp://a", 5) "," PORTAL("tcp://b", 5)) "]", "[]", "[]", ""),
		  "nodes[0].portals[1].rel_port_id: 5 already used by nodes[0].portals[0]" },
		{ CFG(NODES2, "[{\"name\":\"dg1\"},{\"name\":\"dg1\"}]", "[]", ""),
		  "device_groups[1].name: 'dg1' already used by device_groups[0]" },
		/* cross references */
		{ CFG(NODES2, "[{\"name\":\"dg1\",\"preferred_owner\":\"n9\"}]", "[]", ""),
		  "device_groups[0].preferred_owner: 'n9' is not a node of the cluster" },
		{ CFG(NODES2, DGS2, TGT2("{\"lun\":1,\"path\":\"/dev/b\",\"device_group\":\"x\"}"), ""),
		  "targets[0].luns[1].device_group: 'x' is not a device group of the cluster" },
		{ CFG(NODES2, DGS2, TGT2("{\"lun\":1,\"path\":\"/dev/b\"}"), ""),
		  "targets[0].luns[1].device_group: 'default' is not a device group of the cluster" },
		/* isergwd's own validator, the node named */
		{ CFG(NODES2, DGS2, TGT2("{\"lun\":1,\"path\":\"/dev/b\",\"device_group\":\"dg2\",\"block_size\":1000}"), ""),
		  "nodes[0] (n1): targets[0].luns[1].block_size: 1000 is not 512 or 4096" },
		{ CFG(NODES2, DGS2, "[{\"iqn\":\"iqn.2026-11.org.example:t\",\"queue_depth\":1.5}]", ""),
		  "targets[0].queue_depth: expected an integer, got double" },
		{ CFG(NODES2, DGS2, "[{\"iqn\":\"IQN.x\"}]", ""),
		  "targets[0].iqn: \"IQN.x\" is not a valid iSCSI name: must start with iqn., eui. or naa." },
		{ CFG(NODES2, DGS2, TGT2("{\"lun\":0,\"path\":\"/dev/b\",\"device_group\":\"dg2\"}"), ""),
		  "nodes[0] (n1): targets[0].luns[1].lun: 0 already used by luns[0]" },
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"discovery_chap\":{\"user\":\"u\"}"),
		  "nodes[0] (n1): discovery_chap: user and secret must both be set or both be empty" },
		{ CFG("[" NODE("n1", 1, PORTAL("tcp://10.0.0.1", 1)) "," NODE("n2", 2, PORTAL("tcp://10.0.0.2", 2) ","
		      PORTAL("tcp://10.0.0.2:3260", 3)) "]", DGS2, TGT2(LUN1), ""),
		  "nodes[1] (n2): nodes[1].portals[1].url: same address as portals[0]" },
	};

	(void)state;
	check_bad(bad, sizeof(bad) / sizeof(bad[0]));
}

static void test_limits(void **state)
{
	char *big = malloc(HA_DOC_MAX + 64);
	char err[256];
	size_t len;

	(void)state;
	/* 33 nodes */
	len = (size_t)snprintf(big, HA_DOC_MAX, "{\"nodes\":[");
	for (int i = 0; i < 33; i++)
		len += (size_t)snprintf(big + len, HA_DOC_MAX - len, "%s{\"name\":\"n%d\",\"tpg_id\":%d}",
					i ? "," : "", i, i + 1);
	snprintf(big + len, HA_DOC_MAX - len, "]}");
	assert_int_equal(ha_config_check(big, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "nodes: 33 elements (1..32)");

	/* 17 portals on a node */
	len = (size_t)snprintf(big, HA_DOC_MAX, "{\"nodes\":[{\"name\":\"n\",\"tpg_id\":1,\"portals\":[");
	for (int i = 0; i < 17; i++)
		len += (size_t)snprintf(big + len, HA_DOC_MAX - len,
					"%s{\"url\":\"tcp://10.0.0.%d\",\"rel_port_id\":%d}", i ? "," : "",
					i + 1, i + 1);
	snprintf(big + len, HA_DOC_MAX - len, "]}]}");
	assert_int_equal(ha_config_check(big, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "nodes[0].portals: 17 elements (0..16)");

	/* 257 device groups */
	len = (size_t)snprintf(big, HA_DOC_MAX, "{\"nodes\":" NODES2 ",\"device_groups\":[");
	for (int i = 0; i < 257; i++)
		len += (size_t)snprintf(big + len, HA_DOC_MAX - len, "%s{\"name\":\"g%d\"}", i ? "," : "", i);
	snprintf(big + len, HA_DOC_MAX - len, "]}");
	assert_int_equal(ha_config_check(big, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "device_groups: 257 elements (0..256)");

	/* more than 1 MiB of text */
	memset(big, ' ', HA_DOC_MAX + 1);
	memcpy(big, GOOD2, strlen(GOOD2));
	big[HA_DOC_MAX + 1] = '\0';
	assert_int_equal(ha_config_check(big, err, sizeof(err)), -EMSGSIZE);
	big[HA_DOC_MAX] = '\0';
	assert_int_equal(ha_config_check(big, err, sizeof(err)), 0);
	free(big);
}

static void test_with_config_runtime(void **state)
{
	static const char next[] = CFG(
		"[" NODE("n3", 3, PORTAL("tcp://10.0.0.3", 3)) "," NODE("n1", 1, PORTAL("tcp://10.0.0.1", 1))
		"," NODE("n4", 4, PORTAL("tcp://10.0.0.4", 4)) "]",
		"[{\"name\":\"dg2\"},{\"name\":\"default\"},{\"name\":\"dg5\",\"preferred_owner\":\"n4\"}]",
		"[{\"iqn\":\"iqn.2026-11.org.example:t\",\"luns\":[{\"path\":\"/dev/a\",\"device_group\":\"dg5\"}]}]",
		"");
	struct ha_doc *a, *b, *c, *d;
	int owner[3] = { 0, 1, 2 };     /* dg1 -> n1, dg2 -> n2, default -> n3 */
	char err[512] = "";
	char *rt;
	int rc;

	(void)state;
	a = doc_from(full_config);
	assert_int_equal(ha_doc_with_owners(a, owner, &b), 0);
	assert_int_equal(ha_doc_with_drain(b, 1, true, &c), 0);
	ha_doc_free(b);
	assert_int_equal(ha_doc_with_drain(c, 2, true, &b), 0);
	ha_doc_free(c);
	assert_int_equal(b->generation, 4);
	rt = ha_doc_runtime_json(b);
	assert_string_equal(rt, "{\"drained\":[\"n2\",\"n3\"],\"live\":[],\"moving\":{},\"owners\":{\"default\":\"n3\",\"dg1\":\"n1\","
			    "\"dg2\":\"n2\"}}");
	free(rt);

	rc = ha_doc_with_config(b, next, &d, err, sizeof(err));
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, 0);
	assert_int_equal(d->generation, 5);
	assert_int_equal(d->nnodes, 3);
	assert_int_equal(d->ndgs, 3);
	/* dg1 is gone; dg2's owner n2 is gone: none; default keeps n3 (index 0 now); dg5 none */
	assert_int_equal(d->owner[ha_doc_find_dg(d, "dg2")], -1);
	assert_int_equal(d->owner[ha_doc_find_dg(d, "default")], 0);
	assert_int_equal(d->owner[ha_doc_find_dg(d, "dg5")], -1);
	assert_int_equal(d->dgs[2].preferred, 2);
	/* n2 (drained) is gone, n3 stays drained, n1 and n4 are not */
	assert_true(d->drained[ha_doc_find_node(d, "n3")]);
	assert_false(d->drained[ha_doc_find_node(d, "n1")]);
	assert_false(d->drained[ha_doc_find_node(d, "n4")]);
	rt = ha_doc_runtime_json(d);
	assert_string_equal(rt, "{\"drained\":[\"n3\"],\"live\":[],\"moving\":{},\"owners\":{\"default\":\"n3\"}}");
	free(rt);
	/* b is unchanged */
	assert_int_equal(b->generation, 4);
	assert_int_equal(b->owner[1], 1);

	/* a refused configuration leaves nothing */
	assert_int_equal(ha_doc_with_config(b, "{\"nodes\":[]}", &c, err, sizeof(err)), -EINVAL);
	assert_null(c);
	assert_string_equal(err, "nodes: 0 elements (1..32)");
	ha_doc_free(d);
	ha_doc_free(b);
	ha_doc_free(a);
}

/* The leader's whole runtime map: owners, moves in progress, the live set; parsed back alike. */
static void test_with_runtime(void **state)
{
	struct ha_doc *a, *b = NULL, *c = NULL;
	int owner[3] = { -1, 1, 0 }, moving[3] = { 2, -1, -1 }, bad[3] = { 5, -1, -1 };
	bool live[3] = { true, false, true };
	char err[256];

	(void)state;
	a = doc_from(full_config);
	assert_int_equal(ha_doc_with_runtime(a, owner, moving, live, &b), 0);
	assert_int_equal(b->generation, a->generation + 1);
	assert_int_equal(b->moving_from[0], 2);
	assert_true(b->live[0] && !b->live[1] && b->live[2]);
	assert_non_null(strstr(b->text, "\"live\":[\"n1\",\"n3\"],\"moving\":{\"dg1\":\"n3\"}"));
	assert_int_equal(ha_doc_parse(b->text, &c, err, sizeof(err)), 0);
	assert_memory_equal(c->digest, b->digest, HA_DIGEST_LEN);
	assert_int_equal(c->moving_from[0], 2);
	assert_true(c->live[2] && !c->live[1]);
	ha_doc_free(c);
	/* a new configuration keeps the live set and the moves of the nodes and groups it keeps */
	assert_int_equal(ha_doc_with_config(b, full_config, &c, err, sizeof(err)), 0);
	assert_int_equal(c->moving_from[0], 2);
	assert_true(c->live[0] && c->live[2]);
	ha_doc_free(c);
	assert_int_equal(ha_doc_with_runtime(a, bad, moving, live, &c), -EINVAL);
	assert_int_equal(ha_doc_with_runtime(a, owner, bad, live, &c), -EINVAL);
	assert_null(c);
	/* a runtime naming an unknown node is refused with its path */
	assert_int_equal(ha_doc_parse("{\"generation\":1,\"config\":{},\"runtime\":{\"live\":[\"x\"]}}",
				      &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "runtime.live[0]"));
	ha_doc_free(b);
	ha_doc_free(a);
}

static void test_with_owners_drain(void **state)
{
	struct ha_doc *a, *b = NULL;
	int owner[3] = { 2, -1, 0 }, bad[3] = { 3, -1, -1 }, bad2[3] = { -2, -1, -1 };
	uint8_t dig[HA_DIGEST_LEN];
	char *before;

	(void)state;
	a = doc_from(full_config);
	before = strdup(a->text);
	assert_int_equal(ha_doc_with_owners(a, owner, &b), 0);
	assert_int_equal(b->generation, a->generation + 1);
	assert_int_equal(b->owner[0], 2);
	assert_int_equal(b->owner[1], -1);
	assert_int_equal(b->owner[2], 0);
	assert_int_equal(a->owner[0], -1);
	assert_string_equal(a->text, before);
	assert_non_null(strstr(b->text, "\"owners\":{\"default\":\"n1\",\"dg1\":\"n3\"}"));
	sha256(b->text, b->text_len, dig);
	assert_memory_equal(dig, b->digest, HA_DIGEST_LEN);
	ha_doc_free(b);

	assert_int_equal(ha_doc_with_owners(a, bad, &b), -EINVAL);
	assert_null(b);
	assert_int_equal(ha_doc_with_owners(a, bad2, &b), -EINVAL);
	assert_int_equal(ha_doc_with_drain(a, 3, true, &b), -EINVAL);
	assert_int_equal(ha_doc_with_drain(a, -1, true, &b), -EINVAL);
	assert_null(b);

	assert_int_equal(ha_doc_with_drain(a, 0, true, &b), 0);
	assert_int_equal(b->generation, 2);
	assert_true(b->drained[0]);
	assert_false(a->drained[0]);
	{
		struct ha_doc *c;

		/* undrain; unchanged states still make a generation */
		assert_int_equal(ha_doc_with_drain(b, 0, false, &c), 0);
		assert_int_equal(c->generation, 3);
		assert_false(c->drained[0]);
		assert_non_null(strstr(c->text, "\"drained\":[]"));
		ha_doc_free(c);
	}
	ha_doc_free(b);
	free(before);
	ha_doc_free(a);
}

static const struct gw_port_group_cfg *find_pg(const struct gw_config *c, uint16_t tpg)
{
	for (size_t i = 0; i < c->nport_groups; i++)
		if (c->port_groups[i].tpg_id == tpg)
			return &c->port_groups[i];
	return NULL;
}

/* isergwd's configuration of node k as it loads it (fails the test if it does not). */
static struct gw_config *load_rendered(const struct ha_doc *d, int k)
{
	struct gw_config *c = NULL;
	char err[512] = "";
	char *text = ha_doc_render_node(d, k, err, sizeof(err));

	assert_non_null(text);
	if (gw_config_load_string(text, &c, err, sizeof(err)))
		fail_msg("%s\n%s", err, text);
	free(text);
	return c;
}

/* Backend fencing: a live node's own key and the keys of the nodes not live. */
static void test_render_fence_keys(void **state)
{
	static const char on[] = CFG(NODES3, DGS3, TARGETS, "");
	static const char off[] = CFG(NODES3, DGS3, TARGETS,
				      ",\"gateway\":{\"backend_fencing\":\"none\"}");
	static const char bad[] = CFG(NODES3, DGS3, TARGETS,
				      ",\"gateway\":{\"backend_fencing\":\"off\"}");
	int owner[3] = { 1, 1, 2 }, moving[3] = { -1, -1, -1 };
	bool all[3] = { true, true, true }, lost1[3] = { false, true, true };
	struct ha_doc *a, *b, *x = NULL;
	struct gw_config *c;
	char err[512] = "";

	(void)state;
	a = doc_from(on);
	assert_true(ha_doc_backend_fencing(a));
	/* nobody live yet (a new cluster before its first placement): no keys at all */
	for (int k = 0; k < 3; k++) {
		c = load_rendered(a, k);
		assert_true(c->backend_fencing);
		assert_true(c->backend_pr_key == 0);
		assert_int_equal(c->nbackend_pr_fence, 0);
		gw_config_free(c);
	}
	/* everybody live: each its own key (from its tpg_id), nobody to fence */
	assert_int_equal(ha_doc_with_runtime(a, owner, moving, all, &b), 0);
	for (int k = 0; k < 3; k++) {
		c = load_rendered(b, k);
		assert_true(c->backend_pr_key == gw_backend_pr_key(b->nodes[k].tpg_id));
		assert_int_equal(c->nbackend_pr_fence, 0);
		gw_config_free(c);
	}
	ha_doc_free(b);
	/* n1 lost: n2 and n3 fence n1's key; n1 itself gets no key and fences nobody */
	assert_int_equal(ha_doc_with_runtime(a, owner, moving, lost1, &b), 0);
	c = load_rendered(b, 0);
	assert_true(c->backend_pr_key == 0);
	assert_int_equal(c->nbackend_pr_fence, 0);
	gw_config_free(c);
	for (int k = 1; k < 3; k++) {
		c = load_rendered(b, k);
		assert_true(c->backend_pr_key == gw_backend_pr_key(b->nodes[k].tpg_id));
		assert_int_equal(c->nbackend_pr_fence, 1);
		assert_true(c->backend_pr_fence[0] == gw_backend_pr_key(b->nodes[0].tpg_id));
		assert_true(c->backend_pr_fence[0] == 0x6973677700000000ull + b->nodes[0].tpg_id);
		gw_config_free(c);
	}
	ha_doc_free(b);
	ha_doc_free(a);
	/* "none": no key, no fence list, and isergwd is told so too */
	a = doc_from(off);
	assert_false(ha_doc_backend_fencing(a));
	assert_int_equal(ha_doc_with_runtime(a, owner, moving, lost1, &b), 0);
	for (int k = 0; k < 3; k++) {
		c = load_rendered(b, k);
		assert_false(c->backend_fencing);
		assert_true(c->backend_pr_key == 0);
		assert_int_equal(c->nbackend_pr_fence, 0);
		gw_config_free(c);
	}
	ha_doc_free(b);
	ha_doc_free(a);
	/* any other value is refused with its path */
	assert_int_equal(ha_doc_empty(&a), 0);
	assert_int_equal(ha_doc_with_config(a, bad, &x, err, sizeof(err)), -EINVAL);
	assert_null(x);
	assert_non_null(strstr(err, "gateway.backend_fencing: 'off' is not one of reservation, none"));
	ha_doc_free(a);
}

static void test_render(void **state)
{
	struct ha_doc *a, *b;
	int owner[3] = { 1, -1, 0 };    /* dg1 -> n2, dg2 none, default -> n1 */
	struct gw_config *c = NULL;
	const struct gw_port_group_cfg *pg;
	char err[512] = "";
	char *text;
	int rc;

	(void)state;
	a = doc_from(full_config);
	assert_int_equal(ha_doc_with_owners(a, owner, &b), 0);

	text = ha_doc_render_node(b, 0, err, sizeof(err));
	assert_non_null(text);
	assert_non_null(strstr(text, "\"alua_policy\":\"external\""));
	rc = gw_config_load_string(text, &c, err, sizeof(err));
	if (rc)
		print_error("%s\n%s\n", err, text);
	assert_int_equal(rc, 0);
	free(text);

	/* the node's portals, tpgt = rel_port_id, its tpg_id */
	assert_int_equal(c->nportals, 2);
	assert_int_equal(c->portals[0].transport, GW_TRANSPORT_TCP);
	assert_string_equal(c->portals[0].addr, "10.0.0.1");
	assert_int_equal(c->portals[0].rel_port_id, 1);
	assert_int_equal(c->portals[0].tpgt, 1);
	assert_int_equal(c->portals[0].tpg_id, 1);
	assert_int_equal(c->portals[1].transport, GW_TRANSPORT_ISER);
	assert_int_equal(c->portals[1].rel_port_id, 4);
	assert_int_equal(c->portals[1].tpgt, 4);
	assert_int_equal(c->portals[1].tpg_id, 1);
	/* every node's port group */
	assert_int_equal(c->nport_groups, 3);
	pg = find_pg(c, 1);
	assert_non_null(pg);
	assert_int_equal(pg->nrel_port_ids, 2);
	assert_int_equal(pg->rel_port_ids[0], 1);
	assert_int_equal(pg->rel_port_ids[1], 4);
	pg = find_pg(c, 2);
	assert_non_null(pg);
	assert_int_equal(pg->nrel_port_ids, 1);
	assert_int_equal(pg->rel_port_ids[0], 2);
	pg = find_pg(c, 3);
	assert_non_null(pg);
	assert_int_equal(pg->rel_port_ids[0], 3);
	/* device groups with their owners' tpg ids */
	assert_int_equal(c->ndevice_groups, 3);
	assert_string_equal(c->device_groups[0].name, "dg1");
	assert_int_equal(c->device_groups[0].owner_tpg_id, 2);
	assert_int_equal(c->device_groups[0].non_owner_state, 1);
	assert_string_equal(c->device_groups[1].name, "dg2");
	assert_int_equal(c->device_groups[1].owner_tpg_id, 0);
	assert_int_equal(c->device_groups[1].non_owner_state, 2);
	assert_int_equal(c->device_groups[2].owner_tpg_id, 1);
	/* the rest */
	assert_true(c->alua_policy_external);
	assert_int_equal(c->ntargets, 1);
	assert_string_equal(c->targets[0].iqn, "iqn.2026-11.org.example:cluster");
	assert_int_equal(c->targets[0].nluns, 3);
	assert_string_equal(c->targets[0].luns[1].device_group, "dg2");
	assert_string_equal(c->discovery_chap.user, "disc");
	assert_string_equal(c->log_level, "info");
	assert_int_equal(c->nop_interval_s, 7);
	assert_int_equal(c->nop_timeout_s, 31);
	assert_int_equal(c->login_timeout_s, 16);
	assert_int_equal(c->alua_request_timeout_ms, 9000);
	assert_int_equal(c->reactors, 2);
	assert_false(c->tcp_splice);
	gw_config_free(c);

	/* node 2: its own portal only, the same port groups */
	text = ha_doc_render_node(b, 2, err, sizeof(err));
	assert_int_equal(gw_config_load_string(text, &c, err, sizeof(err)), 0);
	assert_int_equal(c->nportals, 1);
	assert_int_equal(c->portals[0].rel_port_id, 3);
	assert_int_equal(c->portals[0].tpgt, 3);
	assert_int_equal(c->portals[0].tpg_id, 3);
	assert_int_equal(c->nport_groups, 3);
	assert_string_equal(c->discovery_chap.user, "disc");
	gw_config_free(c);
	free(text);

	assert_null(ha_doc_render_node(b, 3, err, sizeof(err)));
	assert_string_equal(err, "node 3: not a node of the cluster");
	assert_null(ha_doc_render_node(b, -1, err, sizeof(err)));

	/* without gateway keys and discovery_chap */
	ha_doc_free(b);
	ha_doc_free(a);
	a = doc_from(GOOD2);
	text = ha_doc_render_node(a, 1, err, sizeof(err));
	assert_int_equal(gw_config_load_string(text, &c, err, sizeof(err)), 0);
	assert_int_equal(c->nop_interval_s, 5);
	assert_string_equal(c->discovery_chap.user, "");
	assert_int_equal(c->portals[0].rel_port_id, 2);
	gw_config_free(c);
	free(text);
	ha_doc_free(a);
}

/* dataplane_grace_ms: checked, kept through derived documents, not rendered for isergwd. */
static void test_dataplane_grace(void **state)
{
	static const struct bad_case bad[] = {
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"dataplane_grace_ms\":5"),
		  "dataplane_grace_ms: 5 out of range (200..600000)" },
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"dataplane_grace_ms\":\"1s\""),
		  "dataplane_grace_ms: expected an integer, got string" },
	};
	struct ha_doc *d, *e;
	char err[512] = "";
	char *text;

	(void)state;
	check_bad(bad, sizeof(bad) / sizeof(bad[0]));
	d = doc_from(CFG(NODES2, DGS2, TGT2(LUN1), ",\"dataplane_grace_ms\":3000"));
	assert_int_equal(d->dataplane_grace_ms, 3000);
	assert_int_equal(ha_doc_with_drain(d, 1, true, &e), 0);
	assert_int_equal(e->dataplane_grace_ms, 3000);
	text = ha_doc_render_node(e, 0, err, sizeof(err));
	assert_non_null(text);
	assert_null(strstr(text, "dataplane_grace_ms"));
	free(text);
	ha_doc_free(e);
	ha_doc_free(d);
	d = doc_from(CFG(NODES2, DGS2, TGT2(LUN1), ""));
	assert_int_equal(d->dataplane_grace_ms, 0);
	ha_doc_free(d);
}

/* Floating portals: on every node, in a target port group of their own. */
#define FLOAT(url, rel, tpg) "{\"url\":\"" url "\",\"rel_port_id\":" #rel ",\"tpg_id\":" #tpg "}"

static void test_render_floating(void **state)
{
	static const struct bad_case bad[] = {
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"floating_portals\":[" FLOAT("tcp://10.0.9.1", 1, 9) "]"),
		  "floating_portals[0].rel_port_id: 1 already used by nodes[0].portals[0]" },
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"floating_portals\":[" FLOAT("tcp://10.0.9.1", 7, 2) "]"),
		  "floating_portals[0].tpg_id: 2 is the target port group of nodes[1]: a floating portal "
		  "needs a group of its own" },
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"floating_portals\":[" FLOAT("tcp://10.0.9.1", 7, 9) ","
		      FLOAT("tcp://10.0.9.2", 7, 9) "]"),
		  "floating_portals[1].rel_port_id: 7 already used by floating_portals[0]" },
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"floating_portals\":[{\"url\":\"tcp://10.0.9.1\",\"rel_port_id\":7}]"),
		  "floating_portals[0].tpg_id: missing" },
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"floating_portals\":[{\"url\":\"x:y:z:1\",\"rel_port_id\":7,\"tpg_id\":9}]"),
		  "floating_portals[0].url: 'x:y:z:1' is not a portal (tcp://ADDR[:PORT] or iser://ADDR[:PORT])" },
		{ CFG(NODES2, DGS2, TGT2(LUN1), ",\"floating_portals\":[{\"url\":\"tcp://10.0.9.1\",\"rel_port_id\":7,\"tpg_id\":9,\"tpgt\":3}]"),
		  "floating_portals[0].tpgt: unknown key" },
	};
	struct ha_doc *d;
	struct gw_config *c = NULL;
	const struct gw_port_group_cfg *pg;
	uint16_t tpgs[HA_FLOATING_MAX];
	char err[512] = "";
	char *text;

	(void)state;
	check_bad(bad, sizeof(bad) / sizeof(bad[0]));
	d = doc_from(CFG(NODES2, DGS2, TGT2(LUN1), ",\"floating_portals\":["
			 FLOAT("tcp://10.0.9.1", 7, 9) "," FLOAT("iser://10.0.9.1", 8, 9) ","
			 FLOAT("tcp://10.0.9.2", 10, 11) "]"));
	assert_int_equal(d->nfloating, 3);
	assert_int_equal(ha_doc_floating_tpgs(d, tpgs), 2);
	assert_int_equal(tpgs[0], 9);
	assert_int_equal(tpgs[1], 11);
	for (int n = 0; n < 2; n++) {
		text = ha_doc_render_node(d, n, err, sizeof(err));
		assert_non_null(text);
		assert_int_equal(gw_config_load_string(text, &c, err, sizeof(err)), 0);
		free(text);
		/* the node's own portal, then the floating ones with their own ids and group */
		assert_int_equal(c->nportals, 4);
		assert_int_equal(c->portals[0].rel_port_id, n + 1);
		assert_int_equal(c->portals[1].rel_port_id, 7);
		assert_int_equal(c->portals[1].tpgt, 7);
		assert_int_equal(c->portals[1].tpg_id, 9);
		assert_string_equal(c->portals[1].addr, "10.0.9.1");
		assert_int_equal(c->portals[2].transport, GW_TRANSPORT_ISER);
		assert_int_equal(c->portals[2].tpg_id, 9);
		assert_int_equal(c->portals[3].tpg_id, 11);
		assert_int_equal(c->nport_groups, 4);
		pg = find_pg(c, 9);
		assert_non_null(pg);
		assert_int_equal(pg->nrel_port_ids, 2);
		assert_int_equal(pg->rel_port_ids[0], 7);
		assert_int_equal(pg->rel_port_ids[1], 8);
		pg = find_pg(c, 11);
		assert_non_null(pg);
		assert_int_equal(pg->rel_port_ids[0], 10);
		gw_config_free(c);
		c = NULL;
	}
	ha_doc_free(d);
}

static void test_parse(void **state)
{
	struct ha_doc *a, *b, *e;
	int owner[3] = { 0, 1, -1 };
	char err[512] = "";
	char *text;
	int rc;

	(void)state;
	/* the empty document */
	assert_int_equal(ha_doc_empty(&e), 0);
	assert_int_equal(ha_doc_parse(e->text, &b, err, sizeof(err)), 0);
	assert_string_equal(b->text, e->text);
	ha_doc_free(b);

	/* a document round trip */
	a = doc_from(full_config);
	assert_int_equal(ha_doc_with_owners(a, owner, &b), 0);
	ha_doc_free(a);
	assert_int_equal(ha_doc_with_drain(b, 2, true, &a), 0);
	ha_doc_free(b);
	rc = ha_doc_parse(a->text, &b, err, sizeof(err));
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, 0);
	assert_string_equal(a->text, b->text);
	assert_memory_equal(a->digest, b->digest, HA_DIGEST_LEN);
	assert_int_equal(b->generation, 3);
	assert_int_equal(b->owner[0], 0);
	assert_int_equal(b->owner[1], 1);
	assert_int_equal(b->owner[2], -1);
	assert_true(b->drained[2]);
	assert_false(b->drained[0]);
	ha_doc_free(b);

	/* not canonical: the canonical text comes out */
	{
		size_t n = strlen(full_config_reordered) + 256;

		text = malloc(n);
		snprintf(text, n, "{ \"runtime\": { \"owners\": { \"dg2\": \"n2\", \"default\": \"\","
			 " \"dg1\": \"n1\" }, \"drained\": [ \"n3\" ] },\n \"generation\": 3, \"config\": %s }",
			 full_config_reordered);
		rc = ha_doc_parse(text, &b, err, sizeof(err));
		if (rc)
			print_error("%s\n", err);
		assert_int_equal(rc, 0);
		assert_string_equal(a->text, b->text);
		assert_memory_equal(a->digest, b->digest, HA_DIGEST_LEN);
		ha_doc_free(b);
		free(text);
	}
	ha_doc_free(a);
	ha_doc_free(e);
}

static void test_parse_errors(void **state)
{
#define DOC(gen, config, runtime) \
	"{\"generation\":" gen ",\"config\":" config ",\"runtime\":" runtime "}"
#define RT_OK "{\"owners\":{\"dg1\":\"n1\"},\"drained\":[\"n2\"]}"
	static const struct bad_case bad[] = {
		{ "", "document: line 1 column 1: unexpected end of input" },
		{ "[]", "document: expected an object, got array" },
		{ DOC("1", GOOD2, "{\"owners\":{\"dg1\":\"n9\"}}"),
		  "runtime.owners.dg1: 'n9' is not a node of the cluster" },
		{ DOC("1", GOOD2, "{\"owners\":{\"dgx\":\"n1\"}}"),
		  "runtime.owners.dgx: not a device group of the cluster" },
		{ DOC("1", GOOD2, "{\"owners\":{\"dg1\":1}}"), "runtime.owners.dg1: expected a string, got int" },
		{ DOC("1", GOOD2, "{\"owners\":[]}"), "runtime.owners: expected an object, got array" },
		{ DOC("1", GOOD2, "{\"drained\":[\"n9\"]}"), "runtime.drained[0]: 'n9' is not a node of the cluster" },
		{ DOC("1", GOOD2, "{\"drained\":[\"n2\",\"n2\"]}"), "runtime.drained[1]: 'n2' listed twice" },
		{ DOC("1", GOOD2, "{\"drained\":\"n2\"}"), "runtime.drained: expected an array, got string" },
		{ DOC("1", GOOD2, "{\"colour\":1}"), "runtime.colour: unknown key" },
		{ DOC("1", GOOD2, "[]"), "runtime: expected an object, got array" },
		{ DOC("-1", GOOD2, RT_OK), "generation: must not be negative" },
		{ DOC("\"1\"", GOOD2, RT_OK), "generation: expected an integer, got string" },
		{ "{\"config\":" GOOD2 ",\"runtime\":" RT_OK "}", "generation: missing" },
		{ "{\"generation\":1,\"runtime\":" RT_OK "}", "config: missing" },
		{ "{\"generation\":1,\"config\":{}}", "runtime: missing" },
		{ "{\"generation\":1,\"config\":{},\"runtime\":{},\"x\":1}", "x: unknown key" },
		{ DOC("1", "{\"nodes\":[]}", RT_OK), "config.nodes: 0 elements (1..32)" },
		{ DOC("1", "{\"device_groups\":[]}", RT_OK), "config.nodes: missing" },
		{ DOC("1", "[]", RT_OK), "config: expected an object, got array" },
		{ DOC("1", CFG(NODES2, DGS2, TGT2(LUN1), ",\"colour\":1"), RT_OK), "config.colour: unknown key" },
		{ DOC("1", CFG(NODES2, DGS2, TGT2("{\"lun\":1,\"path\":\"/dev/b\",\"device_group\":\"x\"}"), ""), RT_OK),
		  "config.targets[0].luns[1].device_group: 'x' is not a device group of the cluster" },
		{ DOC("1", CFG(NODES2, DGS2, TGT2("{\"lun\":1,\"path\":\"/dev/b\",\"device_group\":\"dg2\",\"block_size\":1000}"), ""), RT_OK),
		  "config.nodes[0] (n1): config.targets[0].luns[1].block_size: 1000 is not 512 or 4096" },
		{ DOC("1", "{}", RT_OK), "runtime.owners.dg1: not a device group of the cluster" },
	};
	struct ha_doc *d = NULL;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;

		err[0] = '\0';
		rc = ha_doc_parse(bad[i].json, &d, err, sizeof(err));
		if (rc != -EINVAL || strncmp(err, bad[i].expect, strlen(bad[i].expect)) != 0) {
			print_error("case %zu: rc %d\n  got:    %s\n  expect: %s...\n", i, rc, err,
				    bad[i].expect);
			fail();
		}
		assert_null(d);
	}
	/* the good one */
	assert_int_equal(ha_doc_parse(DOC("1", GOOD2, RT_OK), &d, err, sizeof(err)), 0);
	assert_int_equal(d->owner[0], 0);
	assert_true(d->drained[1]);
	ha_doc_free(d);
	assert_int_equal(ha_doc_parse(NULL, &d, err, sizeof(err)), -EINVAL);
}

#if HA_RENDER_LEASE
/* alua_lease_unavailable_ms as isergwd loads node's rendering with o. */
static uint32_t rendered_unavailable_ms(const struct ha_doc *d, int node,
					const struct ha_render_opts *o)
{
	struct gw_config *c = NULL;
	char err[512] = "";
	char *text = ha_doc_render_node_opts(d, node, o, err, sizeof(err));
	uint32_t ms;

	assert_non_null(text);
	if (gw_config_load_string(text, &c, err, sizeof(err)))
		fail_msg("%s\n%s", err, text);
	ms = c->alua_lease_unavailable_ms;
	gw_config_free(c);
	free(text);
	return ms;
}

/* What needs isergwd's lease support: nodes without portals, no targets. */
static void test_render_lease(void **state)
{
	static const char cfg[] = CFG(
		"[" NODE("n1", 1, PORTAL("tcp://10.0.0.1", 1)) "," NODE("n2", 2, PORTAL("tcp://10.0.0.2", 2))
		",{\"name\":\"w3\",\"tpg_id\":3}]",
		"[{\"name\":\"dg1\",\"preferred_owner\":\"w3\"},{\"name\":\"dg2\"}]", "[]",
		",\"gateway\":{\"alua_lease_unavailable_ms\":1500}");
	struct ha_doc *a, *b;
	int owner[2] = { 2, 1 };
	struct gw_config *c = NULL;
	char err[512] = "";
	char *text;
	int rc;

	(void)state;
	a = doc_from(cfg);
	assert_int_equal(ha_doc_with_owners(a, owner, &b), 0);
	text = ha_doc_render_node(b, 2, err, sizeof(err));
	assert_non_null(strstr(text, "\"alua_lease\":true"));
	rc = gw_config_load_string(text, &c, err, sizeof(err));
	if (rc)
		print_error("%s\n%s\n", err, text);
	assert_int_equal(rc, 0);
	assert_true(c->alua_lease);
	assert_int_equal(c->alua_lease_unavailable_ms, 1500);
	assert_int_equal(c->nportals, 0);
	assert_int_equal(c->ntargets, 0);
	assert_int_equal(c->nport_groups, 2);          /* w3 has no ports: no group */
	assert_int_equal(c->device_groups[0].owner_tpg_id, 0); /* owned by w3: none isergwd knows */
	assert_int_equal(c->device_groups[1].owner_tpg_id, 2);
	gw_config_free(c);
	free(text);
	/* the agent's own default (from corosync's timings) does not override it */
	assert_int_equal(rendered_unavailable_ms(b, 2, &(struct ha_render_opts){ 7600 }), 1500);
	ha_doc_free(b);
	ha_doc_free(a);
}

/* Without the operator's setting, the agent's default is what isergwd gets. */
static void test_render_unavailable_default(void **state)
{
	static const char cfg[] = CFG(NODES2, DGS2, "[]", "");
	const struct ha_render_opts o = { .lease_unavailable_ms = 7600 }, none = { 0 };
	struct ha_doc *a;
	char err[512] = "";
	char *text;

	(void)state;
	a = doc_from(cfg);
	assert_int_equal(rendered_unavailable_ms(a, 0, &o), 7600);
	/* nothing known: isergwd's default */
	text = ha_doc_render_node_opts(a, 0, &none, err, sizeof(err));
	assert_non_null(text);
	assert_null(strstr(text, "alua_lease_unavailable_ms"));
	free(text);
	ha_doc_free(a);
}
#endif

/* ------------------------------------------------------------- storage */

static char *tmpdir(void)
{
	char *dir = strdup("/tmp/test_ha_doc.XXXXXX");

	assert_non_null(mkdtemp(dir));
	return dir;
}

static void write_file(const char *dir, const char *name, const char *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void remove_dir(const char *dir)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, HA_DOC_FILE);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s.tmp", dir, HA_DOC_FILE);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s", dir, HA_JOURNAL_FILE);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

static void test_save_load(void **state)
{
	char *dir = tmpdir();
	struct ha_doc *a, *b, *c;
	int owner[3] = { 2, 1, 0 };
	char err[512], path[512];
	struct stat st;

	(void)state;
	assert_int_equal(ha_doc_load(dir, &b, err, sizeof(err)), -ENOENT);
	assert_null(b);

	a = doc_from(full_config);
	assert_int_equal(ha_doc_with_owners(a, owner, &c), 0);
	ha_doc_free(a);
	assert_int_equal(ha_doc_save(c, dir), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, HA_DOC_FILE);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal((size_t)st.st_size, c->text_len + 1);
	snprintf(path, sizeof(path), "%s/%s.tmp", dir, HA_DOC_FILE);
	assert_int_equal(access(path, F_OK), -1);

	assert_int_equal(ha_doc_load(dir, &b, err, sizeof(err)), 0);
	assert_int_equal(b->generation, 2);
	assert_string_equal(b->text, c->text);
	assert_memory_equal(b->digest, c->digest, HA_DIGEST_LEN);
	assert_int_equal(b->owner[0], 2);
	ha_doc_free(b);

	/* saved again over the old one */
	assert_int_equal(ha_doc_with_drain(c, 1, true, &a), 0);
	assert_int_equal(ha_doc_save(a, dir), 0);
	assert_int_equal(ha_doc_load(dir, &b, err, sizeof(err)), 0);
	assert_int_equal(b->generation, 3);
	assert_true(b->drained[1]);
	ha_doc_free(b);

	/* corrupt: truncated */
	write_file(dir, HA_DOC_FILE, a->text, a->text_len / 2);
	assert_int_equal(ha_doc_load(dir, &b, err, sizeof(err)), -EBADMSG);
	assert_null(b);
	assert_int_equal(strncmp(err, dir, strlen(dir)), 0);
	assert_non_null(strstr(err, "cluster.json: document: line 1 column"));

	/* corrupt: a bad runtime */
	{
		static const char bad_rt[] = DOC("7", GOOD2, "{\"owners\":{\"dg1\":\"n9\"}}");

		write_file(dir, HA_DOC_FILE, bad_rt, strlen(bad_rt));
		assert_int_equal(ha_doc_load(dir, &b, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, "runtime.owners.dg1: 'n9' is not a node of the cluster"));
	}

	/* a NUL byte */
	write_file(dir, HA_DOC_FILE, "{\"a\0\"}", 6);
	assert_int_equal(ha_doc_load(dir, &b, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "NUL"));

	/* over 1 MiB */
	{
		size_t n = HA_DOC_MAX + 2;
		char *big = malloc(n);

		memset(big, ' ', n);
		memcpy(big, a->text, a->text_len);
		write_file(dir, HA_DOC_FILE, big, n);
		assert_int_equal(ha_doc_load(dir, &b, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, "larger than 1048576 bytes"));
		/* the same text within 1 MiB (blanks after it) loads */
		write_file(dir, HA_DOC_FILE, big, HA_DOC_MAX);
		assert_int_equal(ha_doc_load(dir, &b, err, sizeof(err)), 0);
		assert_string_equal(b->text, a->text);
		ha_doc_free(b);
		/* and a text over 1 MiB is refused by the parser itself */
		big[n - 1] = '\0';
		assert_int_equal(ha_doc_parse(big, &b, err, sizeof(err)), -EMSGSIZE);
		free(big);
	}

	/* not a directory */
	assert_int_equal(ha_doc_save(a, "/nonexistent-dir/x"), -ENOENT);
	ha_doc_free(a);
	ha_doc_free(c);
	remove_dir(dir);
	free(dir);
}

/* ------------------------------------------------------------ one LUN at a time */

#define TQ "iqn.2026-11.org.example:cluster"

/* d with LUN lun changed (ha_doc_with_lun) is what the whole changed configuration makes. */
static void check_lun_change(const struct ha_doc *d, const char *iqn, uint32_t lun,
			     const char *lun_json, const char *whole_config)
{
	struct ha_doc *a = NULL, *b = NULL;
	char err[512] = "";
	int rc;

	rc = ha_doc_with_lun(d, iqn, lun, lun_json, &a, err, sizeof(err));
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, 0);
	assert_int_equal(ha_doc_with_config(d, whole_config, &b, err, sizeof(err)), 0);
	assert_int_equal(a->generation, d->generation + 1);
	assert_string_equal(a->text, b->text);
	assert_memory_equal(a->digest, b->digest, HA_DIGEST_LEN);
	assert_string_equal(a->delta_target, iqn);
	assert_int_equal(a->delta_lun, lun);
	if (lun_json && lun_json[0])
		assert_non_null(a->delta_lun_json);
	else
		assert_null(a->delta_lun_json);
	/* the runtime is carried over */
	assert_memory_equal(a->owner, d->owner, d->ndgs * sizeof(*d->owner));
	ha_doc_free(a);
	ha_doc_free(b);
}

#define CFG_LUNS(luns) "{\"nodes\":" NODES3 ",\"device_groups\":" DGS3 ",\"targets\":[{\"iqn\":\"" \
	TQ "\"" luns "},{\"iqn\":\"iqn.2026-11.org.example:z\"}]}"

static void test_with_lun(void **state)
{
	struct ha_doc *d = doc_from(CFG_LUNS(",\"luns\":[" LUN(0, ",\"device_group\":\"dg1\"") "]"));
	struct ha_doc *n = NULL, *e = doc_from(CFG_LUNS(""));
	char err[512], *canon = NULL;
	uint32_t lun = 77;

	(void)state;
	/* appended after LUN 0, keys in any order, "lun" optional */
	check_lun_change(d, TQ, 5, "{\"path\":\"/dev/x\",\"device_group\":\"dg2\"}",
			 CFG_LUNS(",\"luns\":[" LUN(0, ",\"device_group\":\"dg1\"") ","
				  "{\"lun\":5,\"device_group\":\"dg2\",\"path\":\"/dev/x\"}]"));
	/* a target without "luns" gets one, in its sorted place */
	check_lun_change(e, TQ, 0, "{\"lun\":0,\"path\":\"/dev/y\"}",
			 CFG_LUNS(",\"luns\":[{\"lun\":0,\"path\":\"/dev/y\"}]"));
	check_lun_change(e, "iqn.2026-11.org.example:z", 3, "{\"path\":\"/dev/y\",\"readonly\":true}",
			 "{\"nodes\":" NODES3 ",\"device_groups\":" DGS3 ",\"targets\":[{\"iqn\":\"" TQ
			 "\"},{\"iqn\":\"iqn.2026-11.org.example:z\",\"luns\":[{\"lun\":3,\"path\":"
			 "\"/dev/y\",\"readonly\":true}]}]}");
	/* removed: the only one, then one of two */
	check_lun_change(d, TQ, 0, NULL, CFG_LUNS(",\"luns\":[]"));
	assert_int_equal(ha_doc_with_lun(d, TQ, 1, "{\"path\":\"/dev/z\"}", &n, err, sizeof(err)), 0);
	check_lun_change(n, TQ, 0, "", CFG_LUNS(",\"luns\":[{\"lun\":1,\"path\":\"/dev/z\"}]"));
	check_lun_change(n, TQ, 1, "", CFG_LUNS(",\"luns\":[" LUN(0, ",\"device_group\":\"dg1\"") "]"));
	/* one after the other (the second from the index the first left), then back to a walk */
	{
		struct ha_doc *a = NULL, *b = NULL, *c = NULL;

		assert_int_equal(ha_doc_with_lun(e, "iqn.2026-11.org.example:z", 4,
						 "{\"path\":\"/dev/4\"}", &a, err, sizeof(err)), 0);
		assert_int_equal(ha_doc_with_lun(a, "iqn.2026-11.org.example:z", 4,
						 "{\"path\":\"/dev/4\"}", &b, err, sizeof(err)), -EEXIST);
		check_lun_change(a, "iqn.2026-11.org.example:z", 2, "{\"path\":\"/dev/2\"}",
				 "{\"nodes\":" NODES3 ",\"device_groups\":" DGS3 ",\"targets\":[{\"iqn\":\""
				 TQ "\"},{\"iqn\":\"iqn.2026-11.org.example:z\",\"luns\":[{\"lun\":4,"
				 "\"path\":\"/dev/4\"},{\"lun\":2,\"path\":\"/dev/2\"}]}]}");
		assert_int_equal(ha_doc_with_lun(a, "iqn.2026-11.org.example:z", 2,
						 "{\"path\":\"/dev/2\"}", &b, err, sizeof(err)), 0);
		assert_int_equal(ha_doc_with_lun(b, TQ, 9, "{\"path\":\"/dev/9\"}", &c, err,
						 sizeof(err)), 0);
		ha_doc_free(a);
		check_lun_change(c, "iqn.2026-11.org.example:z", 3, "{\"path\":\"/dev/3\"}",
				 "{\"nodes\":" NODES3 ",\"device_groups\":" DGS3 ",\"targets\":[{\"iqn\":\""
				 TQ "\",\"luns\":[{\"lun\":9,\"path\":\"/dev/9\"}]},{\"iqn\":\"iqn.2026-11."
				 "org.example:z\",\"luns\":[{\"lun\":4,\"path\":\"/dev/4\"},{\"lun\":2,"
				 "\"path\":\"/dev/2\"},{\"lun\":3,\"path\":\"/dev/3\"}]}]}");
		check_lun_change(c, TQ, 10, "{\"path\":\"/dev/10\"}",
				 "{\"nodes\":" NODES3 ",\"device_groups\":" DGS3 ",\"targets\":[{\"iqn\":\""
				 TQ "\",\"luns\":[{\"lun\":9,\"path\":\"/dev/9\"},{\"lun\":10,\"path\":"
				 "\"/dev/10\"}]},{\"iqn\":\"iqn.2026-11.org.example:z\",\"luns\":[{\"lun\":4,"
				 "\"path\":\"/dev/4\"},{\"lun\":2,\"path\":\"/dev/2\"}]}]}");
		ha_doc_free(b);
		ha_doc_free(c);
	}
	/* the lowest free number */
	assert_int_equal(ha_doc_lun_free(n, TQ, &lun, err, sizeof(err)), 0);
	assert_int_equal(lun, 2);
	assert_int_equal(ha_doc_lun_free(e, TQ, &lun, err, sizeof(err)), 0);
	assert_int_equal(lun, 0);
	assert_int_equal(ha_doc_lun_check(n, TQ, 2, "{\"path\":\"/dev/w\"}", &canon, err,
					  sizeof(err)), 0);
	assert_string_equal(canon, "{\"lun\":2,\"path\":\"/dev/w\"}");
	free(canon);
	ha_doc_free(n);
	ha_doc_free(e);
	ha_doc_free(d);
}

static void test_with_lun_errors(void **state)
{
	struct ha_doc *d = doc_from(CFG_LUNS(",\"luns\":[" LUN(0, ",\"device_group\":\"dg1\"") "]"));
	struct ha_doc *p = doc_from(CFG_LUNS(",\"luns\":[{\"path\":\"/dev/a\"}]"));
	struct ha_doc *n = NULL;
	char err[512];

	(void)state;
	assert_int_equal(ha_doc_with_lun(d, "iqn.2026-11.org.example:none", 1, "{\"path\":\"/a\"}",
					 &n, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "no target iqn.2026-11.org.example:none");
	assert_int_equal(ha_doc_with_lun(d, TQ, 0, "{\"path\":\"/a\"}", &n, err, sizeof(err)),
			 -EEXIST);
	assert_string_equal(err, "targets[0].luns[0].lun: LUN 0 of " TQ " exists already");
	assert_int_equal(ha_doc_with_lun(d, TQ, 4, NULL, &n, err, sizeof(err)), -ENOENT);
	assert_int_equal(ha_doc_with_lun(d, TQ, 1, "{\"path\":\"/a\",\"block_size\":1000}", &n,
					 err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "targets[0].luns[1].block_size: 1000 is not 512 or 4096");
	assert_int_equal(ha_doc_with_lun(d, TQ, 1, "{\"path\":\"/a\",\"colour\":1}", &n, err,
					 sizeof(err)), -EINVAL);
	assert_string_equal(err, "targets[0].luns[1].colour: unknown key");
	assert_int_equal(ha_doc_with_lun(d, TQ, 1, "{\"path\":\"/a\",\"device_group\":\"x\"}", &n,
					 err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "targets[0].luns[1].device_group: 'x' is not a device group of "
			    "the cluster");
	assert_int_equal(ha_doc_with_lun(d, TQ, 1, "{\"lun\":2,\"path\":\"/a\"}", &n, err,
					 sizeof(err)), -EINVAL);
	assert_int_equal(ha_doc_with_lun(d, TQ, 1, "{\"path\": \"/a\", garbled", &n, err,
					 sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "lun: line 1 column"));
	assert_int_equal(ha_doc_with_lun(d, TQ, 1, "[1]", &n, err, sizeof(err)), -EINVAL);
	assert_int_equal(ha_doc_with_lun(d, TQ, 1, "{\"path\":\"/a\",\"size\":1.5}", &n, err,
					 sizeof(err)), -EINVAL);
	assert_int_equal(ha_doc_with_lun(d, TQ, 16384, "{\"path\":\"/a\"}", &n, err, sizeof(err)),
			 -EINVAL);
	/* numbered by place: the caller sends the whole configuration */
	assert_int_equal(ha_doc_with_lun(p, TQ, 5, "{\"path\":\"/b\"}", &n, err, sizeof(err)),
			 -EOPNOTSUPP);
	assert_null(n);
	ha_doc_free(p);
	ha_doc_free(d);
}

/* A LUN on the backing store of another one: refused naming both, however it comes. */
static void test_store_twice(void **state)
{
	struct ha_doc *d = doc_from(CFG_LUNS(",\"luns\":[" LUN(0, ",\"device_group\":\"dg1\"") "]"));
	struct ha_doc *a = NULL, *n = NULL;
	char err[512], *canon = NULL;

	(void)state;
	assert_int_equal(ha_doc_with_lun(d, TQ, 1, "{\"path\":\"/dev/mapper/../mapper/shared-0\"}",
					 &n, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "targets[0].luns[1].path: LUN 1 of " TQ " and LUN 0 of " TQ
			    " name one backing store (/dev/mapper/shared-0): a store belongs to one "
			    "LUN");
	assert_null(n);
	assert_int_equal(ha_doc_lun_check(d, "iqn.2026-11.org.example:z", 3,
					  "{\"path\":\"//dev/mapper/shared-0/\"}", &canon, err,
					  sizeof(err)), -EINVAL);
	assert_null(canon);
	assert_string_equal(err, "targets[1].luns[0].path: LUN 3 of iqn.2026-11.org.example:z and "
			    "LUN 0 of " TQ " name one backing store (/dev/mapper/shared-0): a store "
			    "belongs to one LUN");
	/* the second of two added one after the other (from the index the first left) */
	assert_int_equal(ha_doc_with_lun(d, "iqn.2026-11.org.example:z", 4,
					 "{\"path\":\"iscsi://u%secret@B.example/iqn.2003-01.org.t:d/1\"}",
					 &a, err, sizeof(err)), 0);
	assert_int_equal(ha_doc_with_lun(a, "iqn.2026-11.org.example:z", 5,
					 "{\"path\":\"iscsi://b.example:3260/iqn.2003-01.org.t:d/1\"}",
					 &n, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "targets[1].luns[1].path: LUN 5 of iqn.2026-11.org.example:z and "
			    "LUN 4 of iqn.2026-11.org.example:z name one backing store "
			    "(iscsi://b.example:3260/iqn.2003-01.org.t:d/1): a store belongs to one LUN");
	/* another LUN of the backend is another store */
	assert_int_equal(ha_doc_with_lun(a, "iqn.2026-11.org.example:z", 5,
					 "{\"path\":\"iscsi://b.example/iqn.2003-01.org.t:d/2\"}",
					 &n, err, sizeof(err)), 0);
	ha_doc_free(n);
	/* the whole configuration (isergwctl cluster config apply, REST writes) */
	n = NULL;
	assert_int_equal(ha_doc_with_config(d, CFG_LUNS(",\"luns\":[" LUN(0, "") ","
					    "{\"lun\":1,\"path\":\"/dev/mapper/./shared-0\"}]"), &n,
					    err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "targets[0].luns[1].path: LUN 1 of " TQ " and LUN 0 of " TQ
			       " name one backing store (/dev/mapper/shared-0)"));
	assert_null(n);
	/* a document made before the check (stored, or from the cluster) still loads */
	{
		struct ha_doc *old = NULL, *next = NULL;
		char *text, *at;

		assert_int_equal(ha_doc_with_lun(d, TQ, 1, "{\"path\":\"/dev/mapper/shared-X\"}",
						 &n, err, sizeof(err)), 0);
		text = strdup(n->text);
		assert_non_null(text);
		assert_non_null(at = strstr(text, "shared-X"));
		at[7] = '0';
		assert_int_equal(ha_doc_parse(text, &old, err, sizeof(err)), 0);
		/* a new configuration keeping them is refused */
		assert_int_equal(ha_doc_with_config(old, CFG_LUNS(",\"luns\":[" LUN(0, "") ","
						    "{\"lun\":1,\"path\":\"/dev/mapper/shared-0\"}]"), &next,
						    err, sizeof(err)), -EINVAL);
		assert_null(next);
		ha_doc_free(old);
		ha_doc_free(n);
		free(text);
	}
	ha_doc_free(a);
	ha_doc_free(d);
}

#define TORN "{\"generation\":2,\"lun\":{\"lun\":1,\"path\":\"/a\"},\"number\":1,\"target\":\"" \
	TQ "\"}\n{\"generation\":3,\"lu"

#define OLD_LINE "{\"generation\":2,\"lun\":null,\"number\":7,\"target\":\"x\"}\n"

static void test_journal(void **state)
{
	char *dir = tmpdir(), err[512], path[512], *line;
	struct ha_doc *d = doc_from(CFG_LUNS(",\"luns\":[" LUN(0, ",\"device_group\":\"dg1\"") "]"));
	struct ha_doc *a, *b, *c;

	(void)state;
	assert_null(ha_doc_journal_line(d));
	assert_int_equal(ha_doc_save(d, dir), 0);
	assert_int_equal(ha_doc_with_lun(d, TQ, 1, "{\"path\":\"/a\"}", &a, err, sizeof(err)), 0);
	assert_int_equal(ha_doc_with_lun(a, TQ, 0, NULL, &b, err, sizeof(err)), 0);
	line = ha_doc_journal_line(a);
	assert_string_equal(line, "{\"generation\":2,\"lun\":{\"lun\":1,\"path\":\"/a\"},\"number\":1,"
			    "\"target\":\"" TQ "\"}\n");
	assert_int_equal(ha_doc_journal_append(line, strlen(line), dir), 0);
	free(line);
	line = ha_doc_journal_line(b);
	assert_string_equal(line, "{\"generation\":3,\"lun\":null,\"number\":0,\"target\":\"" TQ
			    "\"}\n");
	assert_int_equal(ha_doc_journal_append(line, strlen(line), dir), 0);
	free(line);
	snprintf(path, sizeof(path), "%s/%s", dir, HA_JOURNAL_FILE);
	assert_int_equal(access(path, F_OK), 0);
	/* replayed on the stored document */
	assert_int_equal(ha_doc_load(dir, &c, err, sizeof(err)), 0);
	assert_int_equal(c->generation, 3);
	assert_string_equal(c->text, b->text);
	ha_doc_free(c);
	/* a torn last line stops the replay there */
	write_file(dir, HA_JOURNAL_FILE, TORN, strlen(TORN));
	assert_int_equal(ha_doc_load(dir, &c, err, sizeof(err)), 0);
	assert_int_equal(c->generation, 2);
	assert_string_equal(c->text, a->text);
	ha_doc_free(c);
	/* lines older than the document are skipped; the whole document removes the journal */
	assert_int_equal(ha_doc_save(b, dir), 0);
	assert_int_equal(access(path, F_OK), -1);
	write_file(dir, HA_JOURNAL_FILE, OLD_LINE, strlen(OLD_LINE));
	assert_int_equal(ha_doc_load(dir, &c, err, sizeof(err)), 0);
	assert_int_equal(c->generation, 3);
	ha_doc_free(c);
	ha_doc_free(a);
	ha_doc_free(b);
	ha_doc_free(d);
	remove_dir(dir);
	free(dir);
}

/* ------------------------------------------------------------ API tokens */

#define TOK_HASH "sha256:00112233445566778899aabbccddeeff:" \
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

/*
 * Tokens in the document: added and revoked by generation, kept across a new
 * configuration, read back from the text, checked when read; a document
 * without tokens keeps the text (and digest) it had before there were any.
 */
static void test_tokens(void **state)
{
	struct ha_doc *d = doc_from(GOOD2), *a = NULL, *b = NULL, *c = NULL, *p = NULL, *r = NULL;
	char err[512] = "", *cfg, *bad;
	struct ha_token *t;
	size_t n;

	(void)state;
	assert_int_equal(ha_doc_with_token(d, "prom", "read-only", TOK_HASH, 1700000000, &a, err,
					   sizeof(err)), 0);
	assert_int_equal(a->generation, d->generation + 1);
	assert_non_null(strstr(a->text, "{\"api_tokens\":{\"prom\":{\"created\":1700000000,"
			       "\"hash\":\"" TOK_HASH "\",\"role\":\"read-only\"}},\"config\":"));
	assert_int_equal(ha_doc_with_token(a, "ops", "admin", TOK_HASH, 1, &b, err, sizeof(err)), 0);
	assert_int_equal(ha_doc_tokens(b, &t, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(t[0].name, "ops");
	assert_string_equal(t[0].role, "admin");
	assert_string_equal(t[1].name, "prom");
	free(t);
	/* the text read back is the same document */
	assert_int_equal(ha_doc_parse(b->text, &p, err, sizeof(err)), 0);
	assert_string_equal(p->text, b->text);
	assert_true(ha_doc_has_token(p, "ops"));
	/* a new configuration keeps them */
	cfg = ha_doc_config_json(b);
	assert_int_equal(ha_doc_with_config(b, CFG(NODES2, DGS2, TGT2(LUN1), ",\"gateway\":"
			 "{\"log_level\":\"debug\"}"), &c, err, sizeof(err)), 0);
	assert_true(ha_doc_has_token(c, "ops") && ha_doc_has_token(c, "prom"));
	free(cfg);
	/* refused: the name taken, a revoke of none, bad fields */
	assert_int_equal(ha_doc_with_token(b, "ops", "admin", TOK_HASH, 1, &r, err, sizeof(err)),
			 -EEXIST);
	assert_int_equal(ha_doc_with_token(b, "none", NULL, NULL, 0, &r, err, sizeof(err)), -ENOENT);
	assert_int_equal(ha_doc_with_token(b, "x", "root", TOK_HASH, 1, &r, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(ha_doc_with_token(b, "x", "admin", "sha256:0:0", 1, &r, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(ha_doc_with_token(b, "x y", "admin", TOK_HASH, 1, &r, err, sizeof(err)),
			 -EINVAL);
	assert_null(r);
	/* both revoked: the text is the one without tokens, but for the generation */
	ha_doc_free(r);
	assert_int_equal(ha_doc_with_token(b, "ops", NULL, NULL, 0, &r, err, sizeof(err)), 0);
	ha_doc_free(p);
	assert_int_equal(ha_doc_with_token(r, "prom", "", NULL, 0, &p, err, sizeof(err)), 0);
	assert_null(strstr(p->text, "api_tokens"));
	assert_string_equal(strstr(p->text, "\"runtime\""), strstr(d->text, "\"runtime\""));
	/* a stored or sent document with bad tokens is refused, naming the key path */
	static const struct {
		const char *from, *to, *why;
	} bads[] = {
		{ "\"role\":\"read-only\"", "\"role\":\"root\"", "api_tokens.prom" },
		{ TOK_HASH, "sha256:00:11", "api_tokens.prom" },
		{ "\"created\":1700000000", "\"created\":-1", "api_tokens.prom" },
		{ "\"created\":1700000000", "\"created\":1,\"secret\":\"x\"", "secret" },
		{ "{\"prom\":", "{\"a b\":", "api_tokens.a b" },
	};
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const char *at = strstr(a->text, bads[i].from);
		struct ha_doc *x = NULL;
		size_t pre;

		assert_non_null(at);
		pre = (size_t)(at - a->text);
		bad = malloc(a->text_len + strlen(bads[i].to) + 1);
		assert_non_null(bad);
		memcpy(bad, a->text, pre);
		strcpy(bad + pre, bads[i].to);
		strcat(bad, at + strlen(bads[i].from));
		err[0] = '\0';
		assert_int_equal(ha_doc_parse(bad, &x, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bads[i].why))
			fail_msg("case %zu: %s", i, err);
		free(bad);
	}
	ha_doc_free(d);
	ha_doc_free(a);
	ha_doc_free(b);
	ha_doc_free(c);
	ha_doc_free(p);
	ha_doc_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_digest_changes),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_with_config_runtime),
		cmocka_unit_test(test_with_owners_drain),
		cmocka_unit_test(test_with_runtime),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_render_floating),
		cmocka_unit_test(test_dataplane_grace),
		cmocka_unit_test(test_render_fence_keys),
#if HA_RENDER_LEASE
		cmocka_unit_test(test_render_lease),
		cmocka_unit_test(test_render_unavailable_default),
#endif
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_save_load),
		cmocka_unit_test(test_with_lun),
		cmocka_unit_test(test_with_lun_errors),
		cmocka_unit_test(test_store_twice),
		cmocka_unit_test(test_journal),
		cmocka_unit_test(test_tokens),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
