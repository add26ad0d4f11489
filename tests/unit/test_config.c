// LINK: isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for util/config.c: parsing, key-path errors, validation, derived
 * defaults; the TPGT of a portal (its rel_port_id by default, one per relative
 * port); the ALUA lease keys and the configurations without portals or
 * targets they allow; the key of a backing store and the refusal of two LUNs
 * naming one store.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include <cmocka.h>

#include "config/config.h"

static const char full_config[] =
	"{\n"
	"  \"reactors\": 4, \"log_level\": \"info\", \"state_dir\": \"/tmp/isergw-state\",\n"
	"  \"ctl_socket\": \"/tmp/isergw.sock\",\n"
	"  \"nop_interval_s\": 10, \"nop_timeout_s\": 60, \"login_timeout_s\": 20,\n"
	"  \"tcp_splice\": false,\n"
	"  \"discovery_chap\": {\"user\": \"disc\", \"secret\": \"discoverysecret1\"},\n"
	"  \"portals\": [\n"
	"    {\"url\": \"tcp://0.0.0.0:3260\", \"tpgt\": 2, \"tpg_id\": 7},\n"
	"    {\"url\": \"iser://[fe80::1]:3261\", \"rel_port_id\": 9}\n"
	"  ],\n"
	"  \"targets\": [\n"
	"    {\"iqn\": \"iqn.2026-11.org.example:disk1\", \"alias\": \"first disk\",\n"
	"     \"chap\": {\"user\": \"u\", \"secret\": \"initiatorsecret\"},\n"
	"     \"mutual_chap\": {\"user\": \"t\", \"secret\": \"targetsecret12\"},\n"
	"     \"acls\": [ {\"initiator\": \"iqn.1994-05.com.redhat:client1\"},\n"
	"                {\"initiator\": \"iqn.1991-05.com.microsoft:win\",\n"
	"                 \"chap\": {\"user\": \"w\", \"secret\": \"windowssecret1\"}} ],\n"
	"     \"max_recv_dsl\": 131072, \"max_burst\": 1048576, \"first_burst\": 65536,\n"
	"     \"max_outstanding_r2t\": 4, \"initial_r2t\": true, \"immediate_data\": false,\n"
	"     \"queue_depth\": 64,\n"
	"     \"luns\": [\n"
	"       {\"lun\": 0, \"path\": \"/var/lib/isergw/disk1.img\", \"size\": \"1G\",\n"
	"        \"block_size\": 512, \"serial\": \"SER123\",\n"
	"        \"naa\": \"60014050123456789abcdef012345678\", \"readonly\": false,\n"
	"        \"write_cache\": false, \"thin\": false, \"vendor\": \"ACME\", \"product\": \"Disk\"},\n"
	"       {\"lun\": 3, \"path\": \"/dev/sdb\", \"size\": 8192, \"block_size\": 4096,\n"
	"        \"readonly\": true}\n"
	"     ]},\n"
	"    {\"iqn\": \"eui.02004567A425678D\"}\n"
	"  ]\n"
	"}\n";

static void test_full_config(void **state)
{
	struct gw_config *c = NULL;
	char err[256];
	int rc;

	(void)state;
	rc = gw_config_load_string(full_config, &c, err, sizeof(err));
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, 0);
	assert_non_null(c);

	assert_int_equal(c->reactors, 4);
	assert_string_equal(c->log_level, "info");
	assert_string_equal(c->state_dir, "/tmp/isergw-state");
	assert_string_equal(c->ctl_socket, "/tmp/isergw.sock");
	assert_int_equal(c->nop_interval_s, 10);
	assert_int_equal(c->nop_timeout_s, 60);
	assert_int_equal(c->login_timeout_s, 20);
	assert_false(c->tcp_splice);
	assert_string_equal(c->discovery_chap.user, "disc");
	assert_string_equal(c->discovery_chap.secret, "discoverysecret1");

	assert_int_equal(c->nportals, 2);
	assert_int_equal(c->portals[0].transport, GW_TRANSPORT_TCP);
	assert_string_equal(c->portals[0].addr, "0.0.0.0");
	assert_int_equal(c->portals[0].port, 3260);
	assert_int_equal(c->portals[0].tpgt, 2);
	assert_int_equal(c->portals[0].rel_port_id, 1);
	assert_int_equal(c->portals[0].tpg_id, 7);
	assert_int_equal(c->portals[1].transport, GW_TRANSPORT_ISER);
	assert_string_equal(c->portals[1].addr, "fe80::1");
	assert_int_equal(c->portals[1].port, 3261);
	assert_int_equal(c->portals[1].tpgt, 9);          /* its rel_port_id */
	assert_int_equal(c->portals[1].rel_port_id, 9);
	assert_int_equal(c->portals[1].tpg_id, 1);

	assert_int_equal(c->ntargets, 2);
	struct gw_target_cfg *t = &c->targets[0];

	assert_string_equal(t->iqn, "iqn.2026-11.org.example:disk1");
	assert_string_equal(t->alias, "first disk");
	assert_string_equal(t->chap.user, "u");
	assert_string_equal(t->chap.secret, "initiatorsecret");
	assert_string_equal(t->mutual_chap.user, "t");
	assert_int_equal(t->nacls, 2);
	assert_string_equal(t->acls[0].initiator, "iqn.1994-05.com.redhat:client1");
	assert_string_equal(t->acls[0].chap.user, "");
	assert_string_equal(t->acls[1].chap.secret, "windowssecret1");
	assert_int_equal(t->max_recv_dsl, 131072);
	assert_int_equal(t->max_burst, 1048576);
	assert_int_equal(t->first_burst, 65536);
	assert_int_equal(t->max_outstanding_r2t, 4);
	assert_true(t->initial_r2t);
	assert_false(t->immediate_data);
	assert_int_equal(t->queue_depth, 64);

	assert_int_equal(t->nluns, 2);
	struct gw_lun_cfg *l = &t->luns[0];

	assert_int_equal(l->lun, 0);
	assert_string_equal(l->path, "/var/lib/isergw/disk1.img");
	assert_int_equal(l->size, 1ull << 30);
	assert_int_equal(l->block_size, 512);
	assert_string_equal(l->serial, "SER123");
	assert_true(l->naa_set);
	static const uint8_t naa[16] = { 0x60, 0x01, 0x40, 0x50, 0x12, 0x34, 0x56, 0x78,
					 0x9a, 0xbc, 0xde, 0xf0, 0x12, 0x34, 0x56, 0x78 };
	assert_memory_equal(l->naa, naa, 16);
	assert_false(l->readonly);
	assert_false(l->write_cache);
	assert_false(l->thin);
	assert_string_equal(l->vendor, "ACME");
	assert_string_equal(l->product, "Disk");

	l = &t->luns[1];
	assert_int_equal(l->lun, 3);
	assert_int_equal(l->size, 8192);
	assert_int_equal(l->block_size, 4096);
	assert_true(l->readonly);
	assert_true(l->write_cache);
	assert_true(l->thin);
	assert_string_equal(l->vendor, "ISERGW");
	assert_string_equal(l->product, "isergw disk");
	assert_int_equal(strlen(l->serial), 16); /* derived */

	t = &c->targets[1];
	assert_string_equal(t->iqn, "eui.02004567A425678D");
	assert_int_equal(t->nluns, 0);
	assert_int_equal(t->max_recv_dsl, 262144);
	assert_int_equal(t->max_burst, 16776192);
	assert_int_equal(t->first_burst, 262144);
	assert_int_equal(t->max_outstanding_r2t, 1);
	assert_false(t->initial_r2t);
	assert_true(t->immediate_data);
	assert_int_equal(t->queue_depth, 128);
	gw_config_free(c);
}

static void test_minimal_defaults(void **state)
{
	struct gw_config *c = NULL;
	char err[256];

	(void)state;
	assert_int_equal(gw_config_load_string(
				 "{\"portals\":[{\"url\":\"tcp://127.0.0.1\"}],"
				 "\"targets\":[{\"iqn\":\"iqn.2026-11.org.example:a\","
				 "\"luns\":[{\"path\":\"/tmp/a.img\"}]}]}",
				 &c, err, sizeof(err)),
			 0);
	assert_int_equal(c->reactors, 0);
	assert_string_equal(c->log_level, "notice");
	assert_string_equal(c->state_dir, "/var/lib/isergw");
	assert_string_equal(c->ctl_socket, "/run/isergw/isergwd.sock");
	assert_int_equal(c->nop_interval_s, 5);
	assert_int_equal(c->nop_timeout_s, 30);
	assert_int_equal(c->login_timeout_s, 15);
	assert_true(c->tcp_splice);
	assert_int_equal(c->portals[0].port, 3260);
	assert_int_equal(c->portals[0].rel_port_id, 1);
	assert_int_equal(c->portals[0].tpgt, 1);
	assert_int_equal(c->portals[0].tpg_id, 1);
	assert_int_equal(c->targets[0].luns[0].lun, 0);
	assert_int_equal(c->targets[0].luns[0].size, 0);
	assert_int_equal(c->targets[0].luns[0].block_size, 512);
	assert_true(c->targets[0].luns[0].naa_set);
	assert_int_equal(c->targets[0].luns[0].naa[0] >> 4, 6);
	gw_config_free(c);
}

/* ---- error classes: each must fail with -EINVAL and name the key path ---- */

#define PORTAL "\"portals\":[{\"url\":\"tcp://127.0.0.1\"}]"
#define IQN    "\"iqn\":\"iqn.2026-11.org.example:a\""
#define LUN0   "{\"path\":\"/tmp/a.img\"}"
/* one target with the given extra keys and luns */
#define CFG_T(extra, luns) "{" PORTAL ",\"targets\":[{" IQN extra ",\"luns\":[" luns "]}]}"
#define CFG_L(lunkeys) CFG_T("", "{\"path\":\"/tmp/a.img\"" lunkeys "}")

struct err_case {
	const char *json;
	const char *expect; /* the message must start with this */
};

/* Every case refused -EINVAL with a message starting with its expect, nothing loaded. */
static void expect_refused(const struct err_case *bad, size_t n)
{
	char err[512];

	for (size_t i = 0; i < n; i++) {
		struct gw_config *c = NULL;
		int rc;

		err[0] = '\0';
		rc = gw_config_load_string(bad[i].json, &c, err, sizeof(err));
		if (rc != -EINVAL || strncmp(err, bad[i].expect, strlen(bad[i].expect)) != 0) {
			print_error("case %zu: rc %d\n  got:    %s\n  expect: %s...\n", i, rc, err,
				    bad[i].expect);
			fail();
		}
		assert_null(c);
	}
}

static const struct err_case err_cases[] = {
	/* unknown keys */
	{ "{\"portalz\":[]}", "portalz: unknown key" },
	{ CFG_T("", LUN0 ",{\"path\":\"/tmp/b.img\",\"lun\":1,\"colour\":\"red\"}"),
	  "targets[0].luns[1].colour: unknown key" },
	{ CFG_T(",\"chap\":{\"usr\":\"x\"}", LUN0), "targets[0].chap.usr: unknown key" },
	{ "{\"portals\":[{\"url\":\"tcp://127.0.0.1\",\"port\":1}]}", "portals[0].port: unknown key" },
	/* wrong types */
	{ "{\"reactors\":\"4\"}", "reactors: expected an integer, got string" },
	{ "{\"reactors\":1.5}", "reactors: expected an integer, got double" },
	{ CFG_L(",\"readonly\":1"), "targets[0].luns[0].readonly: expected true or false" },
	{ CFG_T(",\"alias\":5", LUN0), "targets[0].alias: expected a string, got int" },
	{ "{" PORTAL ",\"targets\":[{" IQN ",\"luns\":{}}]}", "targets[0].luns: expected an array, got object" },
	{ "{\"portals\":[\"tcp://x\"]}", "portals[0]: expected an object, got string" },
	{ "[1,2]", "config: expected an object, got array" },
	{ CFG_L(",\"size\":true"), "targets[0].luns[0].size: expected an integer or a size string" },
	{ CFG_T(",\"chap\":null", LUN0), "targets[0].chap: expected an object, got null" },
	/* out of range */
	{ "{\"nop_timeout_s\":0}", "nop_timeout_s: 0 out of range (1..3600)" },
	{ "{\"reactors\":-1}", "reactors: -1 out of range" },
	{ "{\"reactors\":100000}", "reactors: 100000 out of range" },
	{ CFG_T(",\"max_recv_dsl\":100", LUN0), "targets[0].max_recv_dsl: 100 out of range (512..16777215)" },
	{ CFG_T(",\"max_recv_dsl\":16777216", LUN0), "targets[0].max_recv_dsl: 16777216 out of range" },
	{ CFG_T(",\"queue_depth\":0", LUN0), "targets[0].queue_depth: 0 out of range" },
	{ CFG_T(",\"max_burst\":1024,\"first_burst\":2048", LUN0),
	  "targets[0].first_burst: 2048 must be in 512..max_burst (1024)" },
	{ CFG_L(",\"lun\":16384"), "targets[0].luns[0].lun: 16384 out of range (0..16383)" },
	{ CFG_L(",\"block_size\":1024"), "targets[0].luns[0].block_size: 1024 is not 512 or 4096" },
	{ CFG_L(",\"size\":1000"), "targets[0].luns[0].size: 1000 is not a multiple of block_size 512" },
	{ CFG_L(",\"size\":\"1X\""), "targets[0].luns[0].size: \"1X\" is not a size" },
	{ CFG_L(",\"size\":-512"), "targets[0].luns[0].size: must not be negative" },
	{ CFG_L(",\"size\":\"99999999999T\""), "targets[0].luns[0].size: \"99999999999T\" is too large" },
	{ CFG_L(",\"vendor\":\"TOOLONGVENDOR\""), "targets[0].luns[0].vendor: too long (13 bytes, max 8)" },
	{ CFG_L(",\"naa\":\"5001405\""), "targets[0].luns[0].naa: \"5001405\" is not an NAA type 6" },
	{ CFG_L(",\"serial\":\"\""), "targets[0].luns[0].serial: must not be empty" },
	{ CFG_L(",\"serial\":\"a\\tb\""), "targets[0].luns[0].serial: printable ASCII only" },
	{ "{\"log_level\":\"verbose\"}", "log_level: \"verbose\" is not one of" },
	{ "{\"portals\":[{\"url\":\"tcp://127.0.0.1\",\"rel_port_id\":0}]}",
	  "portals[0].rel_port_id: 0 out of range (1..65535)" },
	{ "{\"ctl_socket\":\"/" "0123456789012345678901234567890123456789"
	  "0123456789012345678901234567890123456789" "0123456789012345678901234567890123456789\","
	  PORTAL ",\"targets\":[{" IQN "}]}",
	  "ctl_socket: must be 1..107 bytes" },
	/* missing required keys */
	{ "{\"portals\":[{\"tpgt\":1}]}", "portals[0].url: missing" },
	{ "{" PORTAL ",\"targets\":[{\"alias\":\"x\"}]}", "targets[0].iqn: missing" },
	{ CFG_T("", "{\"lun\":0}"), "targets[0].luns[0].path: missing" },
	{ CFG_T(",\"acls\":[{\"chap\":{}}]", LUN0), "targets[0].acls[0].initiator: missing" },
	{ "{\"targets\":[{" IQN "}]}",
	  "portals: at least one portal is required (unless alua_lease is true)" },
	{ "{" PORTAL "}", "targets: at least one target is required (unless alua_lease is true)" },
	{ "{" PORTAL ",\"targets\":[]}", "targets: at least one target is required" },
	{ "{\"alua_lease\":false,\"targets\":[{" IQN "}]}", "portals: at least one portal" },
	/* portal URLs */
	{ "{\"portals\":[{\"url\":\"http://1.2.3.4\"}]}", "portals[0].url: \"http://1.2.3.4\" is not a portal" },
	{ "{\"portals\":[{\"url\":\"tcp://1.2.3.4:0\"}]}", "portals[0].url: \"tcp://1.2.3.4:0\" is not a portal" },
	/* names */
	{ "{" PORTAL ",\"targets\":[{\"iqn\":\"iqn.2026-11.org.Example:a\"}]}",
	  "targets[0].iqn: \"iqn.2026-11.org.Example:a\" is not a valid iSCSI name: must be lowercase" },
	{ "{" PORTAL ",\"targets\":[{\"iqn\":\"iqn.2026-13.org.example\"}]}",
	  "targets[0].iqn: \"iqn.2026-13.org.example\" is not a valid iSCSI name: month" },
	{ "{" PORTAL ",\"targets\":[{\"iqn\":\"disk1\"}]}",
	  "targets[0].iqn: \"disk1\" is not a valid iSCSI name: must start with iqn., eui. or naa." },
	{ "{" PORTAL ",\"targets\":[{\"iqn\":\"eui.1234\"}]}", "targets[0].iqn: \"eui.1234\" is not a valid" },
	{ "{" PORTAL ",\"targets\":[{\"iqn\":\"iqn.2026-11.org.example:a b\"}]}",
	  "targets[0].iqn: \"iqn.2026-11.org.example:a b\" is not a valid iSCSI name: allowed characters" },
	{ CFG_T(",\"acls\":[{\"initiator\":\"IQN.1994-05.com.x\"}]", LUN0),
	  "targets[0].acls[0].initiator: \"IQN.1994-05.com.x\" is not a valid iSCSI name" },
	/* duplicates */
	{ "{" PORTAL ",\"targets\":[{" IQN "},{\"iqn\":\"iqn.2026-11.org.example:b\"},{" IQN "}]}",
	  "targets[2].iqn: \"iqn.2026-11.org.example:a\" already used by targets[0]" },
	{ CFG_T("", LUN0 ",{\"path\":\"/tmp/b.img\",\"lun\":2},{\"path\":\"/tmp/c.img\",\"lun\":2}"),
	  "targets[0].luns[2].lun: 2 already used by luns[1]" },
	{ CFG_T("", LUN0 ",{\"path\":\"/tmp/b.img\"}"), "targets[0].luns[1].lun: 1 " }, /* implicit lun = index: fine */
	{ "{\"portals\":[{\"url\":\"tcp://1.2.3.4\"},{\"url\":\"tcp://1.2.3.5\",\"rel_port_id\":1}],"
	  "\"targets\":[{" IQN "}]}",
	  "portals[1].rel_port_id: 1 already used by portals[0]" },
	{ "{\"portals\":[{\"url\":\"tcp://1.2.3.4\"},{\"url\":\"tcp://1.2.3.4:3260\"}],"
	  "\"targets\":[{" IQN "}]}",
	  "portals[1].url: same address as portals[0]" },
	{ CFG_T(",\"acls\":[{\"initiator\":\"iqn.2000-01.x:y\"},{\"initiator\":\"iqn.2000-01.x:y\"}]", LUN0),
	  "targets[0].acls[1].initiator: \"iqn.2000-01.x:y\" already used by acls[0]" },
	/* CHAP */
	{ CFG_T(",\"chap\":{\"user\":\"u\"}", LUN0),
	  "targets[0].chap: user and secret must both be set or both be empty" },
	{ CFG_T(",\"chap\":{\"secret\":\"abcdefghijklmnop\"}", LUN0),
	  "targets[0].chap: user and secret must both be set" },
	{ "{\"discovery_chap\":{\"user\":\"d\"}," PORTAL ",\"targets\":[{" IQN "}]}",
	  "discovery_chap: user and secret must both be set" },
	{ CFG_T(",\"acls\":[{\"initiator\":\"iqn.2000-01.x:y\",\"chap\":{\"user\":\"a\"}}]", LUN0),
	  "targets[0].acls[0].chap: user and secret must both be set" },
	{ CFG_T(",\"mutual_chap\":{\"user\":\"t\",\"secret\":\"abcdefghijklmnop\"}", LUN0),
	  "targets[0].mutual_chap: needs chap as well" },
	{ CFG_T(",\"chap\":{\"user\":\"u\",\"secret\":\"abcdefghijklmnop\"},"
		"\"mutual_chap\":{\"user\":\"t\",\"secret\":\"abcdefghijklmnop\"}", LUN0),
	  "targets[0].mutual_chap.secret: must differ from chap.secret" },
	/* JSON syntax */
	{ "{\n  \"reactors\": 1,\n  \"log_level\" \"x\"\n}", "line 3 column" },
	{ "{\"reactors\": 1", "line 1 column 15: unexpected end of input" },
	{ "{\"reactors\": 1} x", "line 1 column 17: trailing data" },
	{ "", "line 1 column 1: unexpected end of input" },
};

static void test_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
		const struct err_case *ec = &err_cases[i];
		static char not_null;
		struct gw_config *c = (struct gw_config *)(void *)&not_null; /* must be reset to NULL */
		char err[512] = "";
		int rc = gw_config_load_string(ec->json, &c, err, sizeof(err));

		if (strncmp(ec->expect, "targets[0].luns[1].lun: 1 ", 26) == 0) {
			/* control case: two LUNs without "lun" get 0 and 1 */
			assert_int_equal(rc, 0);
			assert_int_equal(c->targets[0].luns[1].lun, 1);
			gw_config_free(c);
			continue;
		}
		if (rc != -EINVAL || strncmp(err, ec->expect, strlen(ec->expect)) != 0) {
			print_error("case %zu: rc %d\n  json:   %s\n  got:    %s\n  expect: %s...\n", i,
				    rc, ec->json, err, ec->expect);
			fail();
		}
		assert_null(c);
	}
}

static void test_secret_too_long(void **state)
{
	char json[1024], secret[300], err[256];
	struct gw_config *c;

	(void)state;
	memset(secret, 'x', sizeof(secret) - 1);
	secret[sizeof(secret) - 1] = '\0';
	snprintf(json, sizeof(json), CFG_T(",\"chap\":{\"user\":\"u\",\"secret\":\"%s\"}", LUN0),
		 secret);
	assert_int_equal(gw_config_load_string(json, &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "targets[0].chap.secret: too long (299 bytes, max 255)");

	/* 255 is fine */
	secret[255] = '\0';
	snprintf(json, sizeof(json), CFG_T(",\"chap\":{\"user\":\"u\",\"secret\":\"%s\"}", LUN0),
		 secret);
	assert_int_equal(gw_config_load_string(json, &c, err, sizeof(err)), 0);
	assert_int_equal(strlen(c->targets[0].chap.secret), 255);
	gw_config_free(c);

	/* short secrets only warn */
	assert_int_equal(gw_config_load_string(CFG_T(",\"chap\":{\"user\":\"u\",\"secret\":\"short\"}",
						     LUN0),
					       &c, err, sizeof(err)),
			 0);
	gw_config_free(c);
}

static void test_long_iqn(void **state)
{
	char json[1024], iqn[300], err[256];
	struct gw_config *c;

	(void)state;
	/* 223 bytes: valid */
	snprintf(iqn, sizeof(iqn), "iqn.2026-11.org.example:");
	memset(iqn + strlen(iqn), 'a', 223 - strlen(iqn));
	iqn[223] = '\0';
	snprintf(json, sizeof(json), "{" PORTAL ",\"targets\":[{\"iqn\":\"%s\"}]}", iqn);
	assert_int_equal(gw_config_load_string(json, &c, err, sizeof(err)), 0);
	gw_config_free(c);
	/* 224 bytes: too long */
	iqn[223] = 'a';
	iqn[224] = '\0';
	snprintf(json, sizeof(json), "{" PORTAL ",\"targets\":[{\"iqn\":\"%s\"}]}", iqn);
	assert_int_equal(gw_config_load_string(json, &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "targets[0].iqn: too long (224 bytes, max 223)");
}

static void test_valid_names(void **state)
{
	static const char *const good[] = {
		"iqn.2026-11.org.example",
		"iqn.2026-11.org.example:disk1",
		"iqn.1994-05.com.redhat:abc:def.ghi-1",
		"eui.02004567A425678D",
		"eui.02004567a425678d",
		"naa.52004567BA64678D",
		"naa.62004567BA64678D62004567BA64678D",
	};
	char json[512], err[256];
	struct gw_config *c;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(json, sizeof(json), "{" PORTAL ",\"targets\":[{\"iqn\":\"%s\"}]}", good[i]);
		if (gw_config_load_string(json, &c, err, sizeof(err))) {
			print_error("%s: %s\n", good[i], err);
			fail();
		}
		gw_config_free(c);
	}
}

static void test_validate_built_config(void **state)
{
	struct gw_config c;
	struct gw_portal_cfg portals[2];
	struct gw_target_cfg tgt;
	struct gw_lun_cfg luns[2];
	char err[256];

	(void)state;
	gw_config_defaults(&c);
	gw_target_defaults(&tgt);
	gw_lun_defaults(&luns[0]);
	gw_lun_defaults(&luns[1]);
	assert_int_equal(gw_portal_parse("tcp://127.0.0.1", &portals[0]), 0);
	assert_int_equal(gw_portal_parse("iser://127.0.0.1", &portals[1]), 0);
	snprintf(tgt.iqn, sizeof(tgt.iqn), "iqn.2026-11.org.example:qs");
	snprintf(luns[0].path, sizeof(luns[0].path), "/tmp/x");
	snprintf(luns[1].path, sizeof(luns[1].path), "/tmp/y");
	luns[1].lun = 1;
	tgt.luns = luns;
	tgt.nluns = 2;
	c.portals = portals;
	c.nportals = 2;
	c.targets = &tgt;
	c.ntargets = 1;
	/* rel_port_id 0 = "its index" before finalize: not a duplicate */
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), 0);
	gw_config_finalize(&c);
	assert_int_equal(portals[0].rel_port_id, 1);
	assert_int_equal(portals[1].rel_port_id, 2);
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), 0);

	luns[1].lun = 0;
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "targets[0].luns[1].lun: 0 already used by luns[0]");
	luns[1].lun = 1;
	tgt.first_burst = tgt.max_burst + 1;
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), -EINVAL);
	assert_true(strncmp(err, "targets[0].first_burst:", 23) == 0);
	tgt.first_burst = 262144;
	portals[1].rel_port_id = 1;
	assert_int_equal(gw_config_validate(&c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "portals[1].rel_port_id: 1 already used by portals[0]");
}

/* ---- conversions ---- */

static void test_parse_size(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(gw_parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(gw_parse_size("1073741824", &v), 0);
	assert_int_equal(v, 1073741824ull);
	assert_int_equal(gw_parse_size("4K", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(gw_parse_size("512m", &v), 0);
	assert_int_equal(v, 512ull << 20);
	assert_int_equal(gw_parse_size("1G", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(gw_parse_size("2T", &v), 0);
	assert_int_equal(v, 2ull << 40);
	assert_int_equal(gw_parse_size("16777215T", &v), 0);
	assert_int_equal(v, 16777215ull << 40);
	assert_int_equal(gw_parse_size("16777216T", &v), -ERANGE);
	assert_int_equal(gw_parse_size("18446744073709551615", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	assert_int_equal(gw_parse_size("18446744073709551616", &v), -ERANGE);
	assert_int_equal(gw_parse_size("", &v), -EINVAL);
	assert_int_equal(gw_parse_size("G", &v), -EINVAL);
	assert_int_equal(gw_parse_size("1GB", &v), -EINVAL);
	assert_int_equal(gw_parse_size("1.5G", &v), -EINVAL);
	assert_int_equal(gw_parse_size("-1", &v), -EINVAL);
	assert_int_equal(gw_parse_size(" 1", &v), -EINVAL);
	assert_int_equal(gw_parse_size("1P", &v), -EINVAL);
	assert_int_equal(gw_parse_size("0x10", &v), -EINVAL);
}

static void test_parse_ints(void **state)
{
	uint64_t v64;
	uint32_t v32;

	(void)state;
	assert_int_equal(gw_parse_u64("007", &v64), 0);
	assert_int_equal(v64, 7);
	assert_int_equal(gw_parse_u64("18446744073709551615", &v64), 0);
	assert_int_equal(v64, UINT64_MAX);
	assert_int_equal(gw_parse_u64("18446744073709551616", &v64), -ERANGE);
	assert_int_equal(gw_parse_u64("99999999999999999999999", &v64), -ERANGE);
	assert_int_equal(gw_parse_u64("", &v64), -EINVAL);
	assert_int_equal(gw_parse_u64("+1", &v64), -EINVAL);
	assert_int_equal(gw_parse_u64("1 ", &v64), -EINVAL);
	assert_int_equal(gw_parse_u64(NULL, &v64), -EINVAL);
	assert_int_equal(gw_parse_u32("4294967295", &v32), 0);
	assert_int_equal(v32, UINT32_MAX);
	assert_int_equal(gw_parse_u32("4294967296", &v32), -ERANGE);
	assert_int_equal(gw_parse_u32("-0", &v32), -EINVAL);
	assert_int_equal(gw_parse_u32("12a", &v32), -EINVAL);
}

static void test_portal_parse(void **state)
{
	struct gw_portal_cfg p;

	(void)state;
	assert_int_equal(gw_portal_parse("tcp://0.0.0.0:3260", &p), 0);
	assert_int_equal(p.transport, GW_TRANSPORT_TCP);
	assert_string_equal(p.addr, "0.0.0.0");
	assert_int_equal(p.port, 3260);
	assert_int_equal(p.tpgt, 0);    /* its rel_port_id, once finalized */

	assert_int_equal(gw_portal_parse("iser://192.168.1.5", &p), 0);
	assert_int_equal(p.transport, GW_TRANSPORT_ISER);
	assert_string_equal(p.addr, "192.168.1.5");
	assert_int_equal(p.port, 3260);

	assert_int_equal(gw_portal_parse("[::1]:3261", &p), 0);
	assert_int_equal(p.transport, GW_TRANSPORT_TCP);
	assert_string_equal(p.addr, "::1");
	assert_int_equal(p.port, 3261);

	assert_int_equal(gw_portal_parse("iser://[fe80::1%eth0]:1", &p), 0);
	assert_string_equal(p.addr, "fe80::1%eth0");
	assert_int_equal(p.port, 1);

	assert_int_equal(gw_portal_parse("tcp://[::]", &p), 0);
	assert_string_equal(p.addr, "::");
	assert_int_equal(gw_portal_parse("::1", &p), 0);
	assert_string_equal(p.addr, "::1");
	assert_int_equal(p.port, 3260);

	assert_int_equal(gw_portal_parse("tcp://storage-1.example.com:3260", &p), 0);
	assert_string_equal(p.addr, "storage-1.example.com");
	assert_int_equal(gw_portal_parse("10.0.0.1:65535", &p), 0);
	assert_int_equal(p.port, 65535);

	static const char *const bad[] = {
		"", "tcp://", "iser://", "tcp://:3260", "tcp://1.2.3.4:", "tcp://1.2.3.4:0",
		"tcp://1.2.3.4:65536", "tcp://1.2.3.4:32a", "tcp://1.2.3.4:-1", "udp://1.2.3.4",
		"http://1.2.3.4:80", "tcp://[::1", "tcp://[::1]x", "tcp://[1.2.3.4]:3260",
		"tcp://[zz::1]:3260", "tcp://999.1.1.1", "tcp://a b", "tcp://host/path",
		"tcp://-host", "tcp://host..x", "tcp://1.2.3.4:3260:1", "tcp://[fe80::1%]:1",
		"TCP://1.2.3.4:3260x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (gw_portal_parse(bad[i], &p) != -EINVAL) {
			print_error("accepted \"%s\"\n", bad[i]);
			fail();
		}
	}
}

/* ---- derived serial / NAA ---- */

static struct gw_config *load_two_luns(const char *iqn, unsigned int lun_a, unsigned int lun_b)
{
	char json[512], err[256];
	struct gw_config *c = NULL;

	snprintf(json, sizeof(json),
		 "{" PORTAL ",\"targets\":[{\"iqn\":\"%s\",\"luns\":["
		 "{\"lun\":%u,\"path\":\"/a\"},{\"lun\":%u,\"path\":\"/b\"}]}]}",
		 iqn, lun_a, lun_b);
	assert_int_equal(gw_config_load_string(json, &c, err, sizeof(err)), 0);
	return c;
}

static void test_finalize_stable(void **state)
{
	struct gw_config *a, *b, *d;

	(void)state;
	a = load_two_luns("iqn.2026-11.org.example:disk1", 0, 1);
	b = load_two_luns("iqn.2026-11.org.example:disk1", 1, 0);
	d = load_two_luns("iqn.2026-11.org.example:disk2", 0, 1);

	struct gw_lun_cfg *a0 = &a->targets[0].luns[0], *a1 = &a->targets[0].luns[1];
	struct gw_lun_cfg *b0 = &b->targets[0].luns[1], *b1 = &b->targets[0].luns[0];
	struct gw_lun_cfg *d0 = &d->targets[0].luns[0];

	/* format */
	assert_int_equal(strlen(a0->serial), 16);
	for (size_t i = 0; i < 16; i++)
		assert_non_null(strchr("0123456789abcdef", a0->serial[i]));
	assert_true(a0->naa_set);
	assert_int_equal(a0->naa[0], 0x61); /* NAA 6 + first nibble of company ID 0x1A5E4A */
	assert_int_equal(a0->naa[1], 0xa5);
	assert_int_equal(a0->naa[2], 0xe4);
	assert_int_equal(a0->naa[3] >> 4, 0xa);
	/* same input -> same output, independent of position in the array */
	assert_string_equal(a0->serial, b0->serial);
	assert_memory_equal(a0->naa, b0->naa, 16);
	assert_string_equal(a1->serial, b1->serial);
	assert_memory_equal(a1->naa, b1->naa, 16);
	/* different lun or target -> different */
	assert_string_not_equal(a0->serial, a1->serial);
	assert_memory_not_equal(a0->naa, a1->naa, 16);
	assert_string_not_equal(a0->serial, d0->serial);
	assert_memory_not_equal(a0->naa, d0->naa, 16);
	/* finalize is idempotent */
	char serial[64];
	uint8_t naa[16];

	memcpy(serial, a0->serial, sizeof(serial));
	memcpy(naa, a0->naa, sizeof(naa));
	gw_config_finalize(a);
	assert_string_equal(serial, a0->serial);
	assert_memory_equal(naa, a0->naa, 16);

	/* known value: FNV-1a 64 of "iqn.2026-11.org.example:disk1\0" "0" */
	assert_string_equal(a0->serial, "207cd7a5f6018b64");

	gw_config_free(a);
	gw_config_free(b);
	gw_config_free(d);
}

static void test_load_file(void **state)
{
	char path[] = "/tmp/test_config_XXXXXX";
	struct gw_config *c = NULL;
	char err[512];
	const char *json = "{" PORTAL ",\"targets\":[{" IQN "}]}";
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	assert_int_equal(gw_config_load_file(path, &c, err, sizeof(err)), 0);
	assert_int_equal(c->ntargets, 1);
	gw_config_free(c);

	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"bogus\":1}", 11), 11);
	close(fd);
	assert_int_equal(gw_config_load_file(path, &c, err, sizeof(err)), -EINVAL);
	char expect[256];

	snprintf(expect, sizeof(expect), "%s: bogus: unknown key", path);
	assert_string_equal(err, expect);
	unlink(path);

	assert_int_equal(gw_config_load_file(path, &c, err, sizeof(err)), -ENOENT);
	assert_null(c);
	assert_int_equal(gw_config_load_file("/tmp", &c, err, sizeof(err)), -EINVAL);
}

/* shared_state_dir, port_groups, device_groups, luns[].device_group, alua_policy */
#define CL_PORTAL "\"portals\":[{\"url\":\"tcp://127.0.0.1\",\"rel_port_id\":1,\"tpg_id\":1}]"
#define CL_TARGET(lunx) ",\"targets\":[{\"iqn\":\"iqn.2026-11.org.example:c\"," \
	"\"luns\":[{\"path\":\"/tmp/x\"" lunx "}]}]}"

static void test_cluster_keys(void **state)
{
	static const char ok[] =
		"{\"shared_state_dir\":\"/shared/isergw\"," CL_PORTAL ","
		"\"port_groups\":[{\"tpg_id\":1,\"rel_port_ids\":[1,3]},"
		"                {\"tpg_id\":2,\"rel_port_ids\":[2]}],"
		"\"device_groups\":[{\"name\":\"dg1\",\"owner_tpg_id\":2,"
		"                   \"non_owner_state\":\"standby\"},{\"name\":\"dg2\"}],"
		"\"alua_policy\":\"external\",\"alua_request_timeout_ms\":2500"
		CL_TARGET(",\"device_group\":\"dg1\"");
	static const struct err_case bad[] = {
		{ "{" CL_PORTAL ",\"port_groups\":[{\"tpg_id\":1,\"rel_port_ids\":[1]},"
		  "{\"tpg_id\":1,\"rel_port_ids\":[2]}]" CL_TARGET(""),
		  "port_groups[1].tpg_id: 1 already used by port_groups[0]" },
		{ "{" CL_PORTAL ",\"port_groups\":[{\"tpg_id\":1,\"rel_port_ids\":[1]},"
		  "{\"tpg_id\":2,\"rel_port_ids\":[1]}]" CL_TARGET(""),
		  "port_groups[1].rel_port_ids: 1 is also in target port group 1" },
		{ "{" CL_PORTAL ",\"port_groups\":[{\"tpg_id\":1,\"rel_port_ids\":[]}]" CL_TARGET(""),
		  "port_groups[0].rel_port_ids: 0 ports" },
		{ "{" CL_PORTAL ",\"port_groups\":[{\"tpg_id\":1,\"rel_port_ids\":[0]}]" CL_TARGET(""),
		  "port_groups[0].rel_port_ids: [0]: 0 out of range" },
		{ "{" CL_PORTAL ",\"port_groups\":[{\"tpg_id\":1,\"rel_port_ids\":[\"1\"]}]" CL_TARGET(""),
		  "port_groups[0].rel_port_ids: [0]: expected an integer" },
		{ "{" CL_PORTAL ",\"port_groups\":[{\"tpg_id\":1}]" CL_TARGET(""),
		  "port_groups[0].rel_port_ids: missing" },
		{ "{" CL_PORTAL ",\"port_groups\":[{\"tpg_id\":2,\"rel_port_ids\":[2]}]" CL_TARGET(""),
		  "portals[0].rel_port_id: 1 is not listed in port_groups" },
		{ "{" CL_PORTAL ",\"port_groups\":[{\"tpg_id\":2,\"rel_port_ids\":[1]}]" CL_TARGET(""),
		  "portals[0].tpg_id: 1, but port_groups lists relative port 1 under target port group 2" },
		{ "{" CL_PORTAL ",\"device_groups\":[{\"name\":\"a\"},{\"name\":\"a\"}]" CL_TARGET(""),
		  "device_groups[1].name: \"a\" already used by device_groups[0]" },
		{ "{" CL_PORTAL ",\"device_groups\":[{\"owner_tpg_id\":1}]" CL_TARGET(""),
		  "device_groups[0].name: missing" },
		{ "{" CL_PORTAL ",\"device_groups\":[{\"name\":\"a\",\"owner_tpg_id\":9}]" CL_TARGET(""),
		  "device_groups[0].owner_tpg_id: 9 is neither in port_groups nor a portal's tpg_id" },
		{ "{" CL_PORTAL ",\"device_groups\":[{\"name\":\"a\",\"non_owner_state\":\"offline\"}]"
		  CL_TARGET(""), "device_groups[0].non_owner_state: \"offline\" is not one of" },
		{ "{" CL_PORTAL CL_TARGET(",\"device_group\":\"dg9\""),
		  "targets[0].luns[0].device_group: \"dg9\" is not in device_groups" },
		{ "{\"shared_state_dir\":7," CL_PORTAL CL_TARGET(""), "shared_state_dir: expected a string" },
		{ "{\"alua_policy\":\"agent\"," CL_PORTAL CL_TARGET(""),
		  "alua_policy: \"agent\" is not one of local, external" },
		{ "{\"alua_policy\":true," CL_PORTAL CL_TARGET(""), "alua_policy: expected a string" },
		{ "{\"alua_request_timeout_ms\":99," CL_PORTAL CL_TARGET(""),
		  "alua_request_timeout_ms: 99 out of range" },
		{ "{\"alua_request_timeout_ms\":600001," CL_PORTAL CL_TARGET(""),
		  "alua_request_timeout_ms: 600001 out of range" },
	};
	struct gw_config *c = NULL;
	char err[512] = "";

	(void)state;
	if (gw_config_load_string(ok, &c, err, sizeof(err)))
		print_error("%s\n", err);
	assert_non_null(c);
	assert_string_equal(c->shared_state_dir, "/shared/isergw");
	assert_int_equal(c->nport_groups, 2);
	assert_int_equal(c->port_groups[0].nrel_port_ids, 2);
	assert_int_equal(c->port_groups[0].rel_port_ids[1], 3);
	assert_int_equal(c->port_groups[1].tpg_id, 2);
	assert_int_equal(c->ndevice_groups, 2);
	assert_int_equal(c->device_groups[0].owner_tpg_id, 2);
	assert_int_equal(c->device_groups[0].non_owner_state, 2);
	assert_int_equal(c->device_groups[1].owner_tpg_id, 0);
	assert_int_equal(c->device_groups[1].non_owner_state, 1);
	assert_string_equal(c->targets[0].luns[0].device_group, "dg1");
	assert_true(c->alua_policy_external);
	assert_int_equal(c->alua_request_timeout_ms, 2500);
	gw_config_free(c);
	/* defaults: standalone, no map, the default device group */
	c = NULL;
	assert_int_equal(gw_config_load_string("{" CL_PORTAL CL_TARGET(""), &c, err, sizeof(err)), 0);
	assert_string_equal(c->shared_state_dir, "");
	assert_int_equal(c->nport_groups, 0);
	assert_int_equal(c->ndevice_groups, 0);
	assert_string_equal(c->targets[0].luns[0].device_group, "");
	assert_false(c->alua_policy_external);          /* local */
	assert_int_equal(c->alua_request_timeout_ms, 10000);
	gw_config_free(c);
	expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* TPGT: its relative port id by default; two relative ports never share one. */
static void test_tpgt(void **state)
{
	static const struct err_case bad[] = {
		{ "{\"portals\":[{\"url\":\"tcp://1.2.3.4\",\"tpgt\":5},"
		  "{\"url\":\"tcp://1.2.3.5\",\"tpgt\":5}],\"targets\":[{" IQN "}]}",
		  "portals[1].tpgt: 5 is already the TPGT of portals[0] (rel_port_id 1), but "
		  "portals[1].rel_port_id is 2: each relative port needs a TPGT of its own" },
		/* an explicit TPGT against another portal's default */
		{ "{\"portals\":[{\"url\":\"tcp://1.2.3.4\",\"tpgt\":2},"
		  "{\"url\":\"tcp://1.2.3.5\"}],\"targets\":[{" IQN "}]}",
		  "portals[1].tpgt: 2 (its rel_port_id) is already the TPGT of portals[0] (rel_port_id 1), "
		  "but portals[1].rel_port_id is 2" },
		{ "{\"portals\":[{\"url\":\"tcp://1.2.3.4\",\"tpgt\":0}],\"targets\":[{" IQN "}]}",
		  "portals[0].tpgt: 0 out of range (1..65535)" },
	};
	struct gw_config *c = NULL;
	struct gw_config b;
	struct gw_portal_cfg portals[2];
	char err[512] = "";

	(void)state;
	/* the TPGT follows the relative port id: two target ports, two names */
	assert_int_equal(gw_config_load_string(
				 "{\"portals\":[{\"url\":\"tcp://1.2.3.4\"},{\"url\":\"tcp://1.2.3.5\"},"
				 "{\"url\":\"iser://1.2.3.6\",\"rel_port_id\":7},"
				 "{\"url\":\"tcp://1.2.3.7\",\"rel_port_id\":9,\"tpgt\":3}],"
				 "\"targets\":[{" IQN "}]}", &c, err, sizeof(err)), 0);
	assert_int_equal(c->portals[0].tpgt, 1);
	assert_int_equal(c->portals[1].tpgt, 2);
	assert_int_equal(c->portals[2].tpgt, 7);
	assert_int_equal(c->portals[3].tpgt, 3);
	gw_config_free(c);
	expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
	/* a configuration built in code: tpgt 0 means the rel_port_id, before finalize too */
	gw_config_defaults(&b);
	gw_portal_defaults(&portals[0]);
	gw_portal_defaults(&portals[1]);
	assert_int_equal(gw_portal_parse("tcp://127.0.0.1", &portals[0]), 0);
	assert_int_equal(gw_portal_parse("tcp://127.0.0.2", &portals[1]), 0);
	b.portals = portals;
	b.nportals = 2;
	assert_int_equal(gw_config_validate(&b, err, sizeof(err)), 0);
	portals[0].tpgt = 2;            /* = portals[1]'s default */
	assert_int_equal(gw_config_validate(&b, err, sizeof(err)), -EINVAL);
	assert_true(strncmp(err, "portals[1].tpgt: 2 (its rel_port_id) is already the TPGT of "
			    "portals[0]", 60) == 0);
	portals[0].tpgt = 0;
	gw_config_finalize(&b);
	assert_int_equal(portals[0].tpgt, 1);
	assert_int_equal(portals[1].tpgt, 2);
	assert_int_equal(gw_config_validate(&b, err, sizeof(err)), 0);
	/* the same TPGT on the same relative port cannot happen: rel_port_ids are unique */
	portals[1].rel_port_id = 1;
	assert_int_equal(gw_config_validate(&b, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "portals[1].rel_port_id: 1 already used by portals[0]");
}

/* alua_lease and alua_lease_unavailable_ms; with the lease, no portal and no target is fine. */
static void test_lease_keys(void **state)
{
	static const struct err_case bad[] = {
		{ "{\"alua_lease\":1}", "alua_lease: expected true or false, got int" },
		{ "{\"alua_lease\":true,\"alua_lease_unavailable_ms\":600001}",
		  "alua_lease_unavailable_ms: 600001 out of range (0..600000)" },
		{ "{\"alua_lease\":true,\"alua_lease_unavailable_ms\":-1}",
		  "alua_lease_unavailable_ms: -1 out of range" },
		{ "{\"alua_lease\":true,\"alua_lease_unavailable_ms\":\"2s\"}",
		  "alua_lease_unavailable_ms: expected an integer" },
		{ "{\"alua_lease\":true,\"alua_lease_ms\":5}", "alua_lease_ms: unknown key" },
		/* the rest of the document is checked as usual */
		{ "{\"alua_lease\":true,\"targets\":[{\"iqn\":\"bad\"}]}", "targets[0].iqn: \"bad\"" },
	};
	struct gw_config *c = NULL;
	char err[512] = "";

	(void)state;
	assert_int_equal(gw_config_load_string("{" CL_PORTAL CL_TARGET(""), &c, err, sizeof(err)), 0);
	assert_false(c->alua_lease);
	assert_int_equal(c->alua_lease_unavailable_ms, 2000);
	gw_config_free(c);
	c = NULL;
	assert_int_equal(gw_config_load_string("{\"alua_lease\":true,\"alua_lease_unavailable_ms\":0,"
					       CL_PORTAL CL_TARGET(""), &c, err, sizeof(err)), 0);
	assert_true(c->alua_lease);
	assert_int_equal(c->alua_lease_unavailable_ms, 0);
	gw_config_free(c);
	/* a managed node's first document: nothing to serve yet */
	c = NULL;
	assert_int_equal(gw_config_load_string("{\"alua_lease\":true,\"alua_policy\":\"external\"}",
					       &c, err, sizeof(err)), 0);
	assert_int_equal(c->nportals, 0);
	assert_int_equal(c->ntargets, 0);
	assert_int_equal(c->alua_lease_unavailable_ms, 2000);
	gw_config_free(c);
	c = NULL;
	assert_int_equal(gw_config_load_string("{\"alua_lease\":true,\"portals\":[],\"targets\":[],"
					       "\"alua_lease_unavailable_ms\":600000}",
					       &c, err, sizeof(err)), 0);
	assert_int_equal(c->alua_lease_unavailable_ms, 600000);
	gw_config_free(c);
	/* portals without targets (and the other way round) */
	c = NULL;
	assert_int_equal(gw_config_load_string("{\"alua_lease\":true," CL_PORTAL "}", &c, err,
					       sizeof(err)), 0);
	assert_int_equal(c->nportals, 1);
	gw_config_free(c);
	expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* backend_fencing, backend_pr_key, backend_pr_fence and the key of a tpg_id. */
static void test_fence_keys(void **state)
{
	static const struct err_case bad[] = {
		{ "{\"alua_lease\":true,\"backend_fencing\":\"off\"}",
		  "backend_fencing: \"off\" is not one of reservation, none" },
		{ "{\"alua_lease\":true,\"backend_fencing\":false}",
		  "backend_fencing: expected a string, got boolean" },
		{ "{\"alua_lease\":true,\"backend_pr_key\":\"0x0\"}",
		  "backend_pr_key: \"0x0\" is not a reservation key" },
		{ "{\"alua_lease\":true,\"backend_pr_key\":\"6973677700000001\"}",
		  "backend_pr_key: \"6973677700000001\" is not a reservation key" },
		{ "{\"alua_lease\":true,\"backend_pr_key\":\"0x16973677700000001\"}",
		  "backend_pr_key: \"0x16973677700000001\" is not a reservation key" },
		{ "{\"alua_lease\":true,\"backend_pr_key\":\"0x69g3\"}",
		  "backend_pr_key: \"0x69g3\" is not a reservation key" },
		{ "{\"alua_lease\":true,\"backend_pr_key\":7}",
		  "backend_pr_key: expected a string, got int" },
		{ "{\"alua_lease\":true,\"backend_pr_fence\":\"0x1\"}",
		  "backend_pr_fence: expected an array, got string" },
		{ "{\"alua_lease\":true,\"backend_pr_fence\":[\"0x1\",\"x\"]}",
		  "backend_pr_fence[1]: \"x\" is not a reservation key" },
		{ "{\"alua_lease\":true,\"backend_pr_fence\":[\"0x1\",\"0x01\"]}",
		  "backend_pr_fence[1]: 0x0000000000000001 already listed at [0]" },
		{ "{\"alua_lease\":true,\"backend_pr_key\":\"0x6973677700000002\","
		  "\"backend_pr_fence\":[\"0x6973677700000002\"]}",
		  "backend_pr_fence[0]: 0x6973677700000002 is this node's own backend_pr_key" },
	};
	struct gw_config *c = NULL;
	char err[512] = "";
	uint64_t k = 0;

	(void)state;
	assert_true(gw_backend_pr_key(1) == 0x6973677700000001ull);
	assert_true(gw_backend_pr_key(65535) == 0x697367770000ffffull);
	assert_int_equal(gw_parse_pr_key("0X6973677700000003", &k), 0);
	assert_true(k == gw_backend_pr_key(3));
	assert_int_equal(gw_parse_pr_key("0xffffffffffffffff", &k), 0);
	assert_true(k == UINT64_MAX);
	assert_int_equal(gw_parse_pr_key("0x", &k), -EINVAL);
	assert_int_equal(gw_parse_pr_key(NULL, &k), -EINVAL);
	/* standalone: fencing on, but no key, so nothing is reserved */
	assert_int_equal(gw_config_load_string("{" CL_PORTAL CL_TARGET(""), &c, err, sizeof(err)), 0);
	assert_true(c->backend_fencing);
	assert_true(c->backend_pr_key == 0);
	assert_int_equal(c->nbackend_pr_fence, 0);
	gw_config_free(c);
	c = NULL;
	assert_int_equal(gw_config_load_string("{\"alua_lease\":true,\"backend_fencing\":\"none\","
					       "\"backend_pr_key\":\"0x6973677700000001\","
					       "\"backend_pr_fence\":[\"0x6973677700000002\","
					       "\"0x6973677700000003\"]}", &c, err, sizeof(err)), 0);
	assert_false(c->backend_fencing);
	assert_true(c->backend_pr_key == 0x6973677700000001ull);
	assert_int_equal(c->nbackend_pr_fence, 2);
	assert_true(c->backend_pr_fence[0] == gw_backend_pr_key(2));
	assert_true(c->backend_pr_fence[1] == gw_backend_pr_key(3));
	gw_config_free(c);
	c = NULL;
	assert_int_equal(gw_config_load_string("{\"alua_lease\":true,\"backend_pr_fence\":[]}",
					       &c, err, sizeof(err)), 0);
	assert_int_equal(c->nbackend_pr_fence, 0);
	gw_config_free(c);
	expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

static struct gw_config *fence_cfg(const char *fencing, const char *key, const char *list)
{
	struct gw_config *c = NULL;
	char json[512], err[512] = "";

	snprintf(json, sizeof(json), "{\"alua_lease\":true,\"backend_fencing\":\"%s\"%s%s%s"
		 ",\"backend_pr_fence\":[%s]}", fencing, key ? ",\"backend_pr_key\":\"" : "",
		 key ? key : "", key ? "\"" : "", list);
	if (gw_config_load_string(json, &c, err, sizeof(err)))
		fail_msg("%s\n%s", err, json);
	return c;
}

/* Which keys a new configuration newly asks to preempt. */
static void test_fence_new(void **state)
{
	struct gw_config *none = fence_cfg("reservation", "0x6973677700000001", ""),
			 *two = fence_cfg("reservation", "0x6973677700000001", "\"0x2\""),
			 *two3 = fence_cfg("reservation", "0x6973677700000001", "\"0x3\",\"0x2\""),
			 *off = fence_cfg("none", "0x6973677700000001", "\"0x2\",\"0x3\""),
			 *nokey = fence_cfg("reservation", NULL, "\"0x2\"");
	uint64_t k[GW_PR_FENCE_MAX];

	(void)state;
	assert_int_equal(gw_config_fence_new(NULL, two, k), 1);
	assert_true(k[0] == 2);
	assert_int_equal(gw_config_fence_new(none, two, k), 1);
	assert_int_equal(gw_config_fence_new(two, two, k), 0);     /* already fenced */
	assert_int_equal(gw_config_fence_new(two, two3, k), 1);
	assert_true(k[0] == 3);
	assert_int_equal(gw_config_fence_new(two3, two, k), 0);
	assert_int_equal(gw_config_fence_new(two, none, k), 0);
	/* switched off, or no key of its own (a node that is not live): nothing */
	assert_int_equal(gw_config_fence_new(none, off, k), 0);
	assert_int_equal(gw_config_fence_new(none, nokey, k), 0);
	/* switched on again: its whole list is new */
	assert_int_equal(gw_config_fence_new(off, two3, k), 2);
	assert_int_equal(gw_config_fence_new(nokey, two, k), 1);
	gw_config_free(none);
	gw_config_free(two);
	gw_config_free(two3);
	gw_config_free(off);
	gw_config_free(nokey);
}

/* One LUN object alone (isergwd's ChangeLun, the HA agent's check): fields, checks, defaults. */
static void test_lun_parse(void **state)
{
	struct gw_lun_cfg l, whole;
	struct gw_config *c = NULL;
	json_object *o;
	char err[256];

	(void)state;
	o = json_tokener_parse("{\"lun\":7,\"path\":\"/dev/x\",\"size\":\"1M\",\"device_group\":\"a\"}");
	assert_int_equal(gw_lun_parse(o, "iqn.2026-11.org.example:t", 2, 5, &l, err, sizeof(err)), 0);
	json_object_put(o);
	assert_int_equal(l.lun, 7);
	assert_string_equal(l.path, "/dev/x");
	assert_int_equal(l.size, 1u << 20);
	assert_int_equal(l.block_size, 512);
	assert_string_equal(l.device_group, "a");
	assert_true(l.naa_set);
	/* the same serial and NAA as the LUN in a whole configuration */
	assert_int_equal(gw_config_load_string("{\"portals\":[{\"url\":\"tcp://127.0.0.1\"}],"
			 "\"targets\":[{\"iqn\":\"iqn.2026-11.org.example:t\",\"luns\":[{\"lun\":7,"
			 "\"path\":\"/dev/x\"}]}]}", &c, err, sizeof(err)), 0);
	whole = c->targets[0].luns[0];
	assert_string_equal(l.serial, whole.serial);
	assert_memory_equal(l.naa, whole.naa, sizeof(l.naa));
	gw_config_free(c);

	o = json_tokener_parse("{\"path\":\"/dev/x\",\"block_size\":1000}");
	assert_int_equal(gw_lun_parse(o, "iqn.2026-11.org.example:t", 2, 5, &l, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "targets[2].luns[5].block_size: 1000 is not 512 or 4096");
	json_object_put(o);
	o = json_tokener_parse("{\"path\":\"/dev/x\",\"colour\":1}");
	assert_int_equal(gw_lun_parse(o, "iqn.2026-11.org.example:t", 0, 0, &l, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "targets[0].luns[0].colour: unknown key");
	json_object_put(o);
	o = json_tokener_parse("{\"size\":\"1M\"}");
	assert_int_equal(gw_lun_parse(o, "iqn.2026-11.org.example:t", 0, 3, &l, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "targets[0].luns[3].path: missing");
	json_object_put(o);
	o = json_tokener_parse("[1]");
	assert_int_equal(gw_lun_parse(o, "iqn.2026-11.org.example:t", 0, 3, &l, err, sizeof(err)),
			 -EINVAL);
	json_object_put(o);
	/* without "lun": its place */
	o = json_tokener_parse("{\"path\":\"/dev/y\"}");
	assert_int_equal(gw_lun_parse(o, "iqn.2026-11.org.example:t", 0, 3, &l, err, sizeof(err)), 0);
	assert_int_equal(l.lun, 3);
	json_object_put(o);
}


/* ---- one backing store, one LUN ---- */

static void test_store_key(void **state)
{
	static const char *const cases[][2] = {
		{ "/a/x.img", "/a/x.img" },
		{ "/a/../a/x.img", "/a/x.img" },
		{ "//a//x.img", "/a/x.img" },
		{ "/a/./x.img/", "/a/x.img" },
		{ "/../a/x.img", "/a/x.img" },
		{ "/a/b/c/../../x.img", "/a/x.img" },
		{ "/", "/" },
		{ "x.img", "x.img" },
		{ "./x.img", "x.img" },
		{ "a/../x.img", "x.img" },
		{ "../x.img", "../x.img" },
		{ "a/../../x.img", "../x.img" },
		{ "../a/..", ".." },
		{ ".", "." },
		{ "/dev/loop0", "/dev/loop0" },
		{ "iscsi://Host.Example/iqn.2003-01.org.X:t/0", "iscsi://host.example:3260/iqn.2003-01.org.x:t/0" },
		{ "iscsi://host.example:3260/iqn.2003-01.org.x:t/0", "iscsi://host.example:3260/iqn.2003-01.org.x:t/0" },
		{ "iscsi://u%se@cret@HOST.example:03260/iqn.2003-01.org.x:t/00/", "iscsi://host.example:3260/iqn.2003-01.org.x:t/0" },
		{ "iscsi://host.example//iqn.2003-01.org.x:t//1", "iscsi://host.example:3260/iqn.2003-01.org.x:t/1" },
		{ "iscsi://[FE80::1]:3261/iqn.2003-01.org.x:t/1", "iscsi://[fe80::1]:3261/iqn.2003-01.org.x:t/1" },
		{ "iscsi://[fe80::1]/iqn.2003-01.org.x:t/1", "iscsi://[fe80::1]:3260/iqn.2003-01.org.x:t/1" },
		{ "iscsi://10.0.0.1:3261/iqn.2003-01.org.x:t/1", "iscsi://10.0.0.1:3261/iqn.2003-01.org.x:t/1" },
	};
	char key[GW_STORE_KEY_MAX], small[8];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(gw_store_key(cases[i][0], key, sizeof(key)), 0);
		if (strcmp(key, cases[i][1])) {
			print_error("%s: got %s, expected %s\n", cases[i][0], key, cases[i][1]);
			fail();
		}
	}
	assert_int_equal(gw_store_key("/a/long/path.img", small, sizeof(small)), -ENAMETOOLONG);
	assert_int_equal(gw_store_key("iscsi://host/iqn.x:t/0", small, sizeof(small)),
			 -ENAMETOOLONG);
}

#define IQN_B "\"iqn\":\"iqn.2026-11.org.example:b\""
/* target a with LUNs la, target b with LUNs lb */
#define CFG_TT(la, lb) "{" PORTAL ",\"targets\":[{" IQN ",\"luns\":[" la "]},{" IQN_B \
		       ",\"luns\":[" lb "]}]}"
#define LP(path, n) "{\"path\":\"" path "\",\"lun\":" #n "}"

static void test_store_twice(void **state)
{
	static const struct err_case twice[] = {
		{ CFG_T("", LP("/tmp/x.img", 0) "," LP("/tmp/../tmp/x.img", 3)),
		  "targets[0].luns[1].path: LUN 3 of iqn.2026-11.org.example:a and LUN 0 of "
		  "iqn.2026-11.org.example:a name one backing store (/tmp/x.img): a store belongs "
		  "to one LUN" },
		{ CFG_TT(LP("/tmp/y.img", 1) "," LP("/tmp/x.img", 2), LP("/tmp/z.img", 0) ","
			 LP("//tmp/./x.img/", 7)),
		  "targets[1].luns[1].path: LUN 7 of iqn.2026-11.org.example:b and LUN 2 of "
		  "iqn.2026-11.org.example:a name one backing store (/tmp/x.img)" },
		/* the first LUN (in the file's order) whose store an earlier one has, against the first */
		{ CFG_TT(LP("/tmp/q.img", 0) "," LP("/tmp/p.img", 1) "," LP("/tmp/q.img", 2),
			 LP("/tmp/p.img", 0)),
		  "targets[0].luns[2].path: LUN 2 of iqn.2026-11.org.example:a and LUN 0 of "
		  "iqn.2026-11.org.example:a name one backing store (/tmp/q.img)" },
		{ CFG_TT(LP("iscsi://Backend.example/iqn.2003-01.org.t:disk/1", 0),
			 LP("iscsi://u%secretsecret@backend.example:3260/iqn.2003-01.org.t:disk/1/", 0)),
		  "targets[1].luns[0].path: LUN 0 of iqn.2026-11.org.example:b and LUN 0 of "
		  "iqn.2026-11.org.example:a name one backing store "
		  "(iscsi://backend.example:3260/iqn.2003-01.org.t:disk/1)" },
	};
	static const char *const fine[] = {
		/* other stores: other files, another LUN or port of one backend */
		CFG_TT(LP("/tmp/x.img", 0) "," LP("/tmp/x.img2", 1), LP("/tmp/a/x.img", 0)),
		CFG_TT(LP("iscsi://b.example/iqn.2003-01.org.t:disk/1", 0) ","
		       LP("iscsi://b.example/iqn.2003-01.org.t:disk/2", 1),
		       LP("iscsi://b.example:3261/iqn.2003-01.org.t:disk/1", 0)),
	};
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(twice) / sizeof(twice[0]); i++) {
		struct gw_config *c = NULL;
		int rc;

		/* a valid configuration otherwise (one made before the check still loads) */
		assert_int_equal(gw_config_load_string(twice[i].json, &c, err, sizeof(err)), 0);
		err[0] = '\0';
		rc = gw_config_check_stores(c, err, sizeof(err));
		if (rc != -EINVAL || strncmp(err, twice[i].expect, strlen(twice[i].expect)) != 0) {
			print_error("case %zu: rc %d\n  got:    %s\n  expect: %s...\n", i, rc, err,
				    twice[i].expect);
			fail();
		}
		gw_config_free(c);
	}
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		struct gw_config *c = NULL;

		if (gw_config_load_string(fine[i], &c, err, sizeof(err)) ||
		    gw_config_check_stores(c, err, sizeof(err))) {
			print_error("case %zu: %s\n", i, err);
			fail();
		}
		gw_config_free(c);
	}
}

/* Many LUNs: the check is not quadratic, and finds a pair among them. */
static void test_store_twice_many(void **state)
{
	enum { T = 8, L = 2000 };
	struct gw_config *c = calloc(1, sizeof(*c));
	char err[512];

	(void)state;
	assert_non_null(c);
	gw_config_defaults(c);
	c->alua_lease = true;
	c->targets = calloc(T, sizeof(*c->targets));
	assert_non_null(c->targets);
	c->ntargets = T;
	for (size_t t = 0; t < T; t++) {
		gw_target_defaults(&c->targets[t]);
		snprintf(c->targets[t].iqn, sizeof(c->targets[t].iqn), "iqn.2026-11.org.example:t%zu", t);
		c->targets[t].luns = calloc(L, sizeof(*c->targets[t].luns));
		assert_non_null(c->targets[t].luns);
		c->targets[t].nluns = L;
		for (size_t l = 0; l < L; l++) {
			struct gw_lun_cfg *lc = &c->targets[t].luns[l];

			gw_lun_defaults(lc);
			lc->lun = (uint32_t)l;
			snprintf(lc->path, sizeof(lc->path), "/srv/t%zu/l%zu.img", t, l);
		}
	}
	gw_config_finalize(c);
	assert_int_equal(gw_config_validate(c, err, sizeof(err)), 0);
	assert_int_equal(gw_config_check_stores(c, err, sizeof(err)), 0);
	snprintf(c->targets[T - 1].luns[L - 1].path, PATH_MAX, "/srv/t3/../t3/l17.img");
	assert_int_equal(gw_config_check_stores(c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "targets[7].luns[1999].path: LUN 1999 of "
			    "iqn.2026-11.org.example:t7 and LUN 17 of iqn.2026-11.org.example:t3 "
			    "name one backing store (/srv/t3/l17.img): a store belongs to one LUN");
	gw_config_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_lun_parse),
		cmocka_unit_test(test_minimal_defaults),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_secret_too_long),
		cmocka_unit_test(test_long_iqn),
		cmocka_unit_test(test_valid_names),
		cmocka_unit_test(test_validate_built_config),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_ints),
		cmocka_unit_test(test_portal_parse),
		cmocka_unit_test(test_finalize_stable),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_cluster_keys),
		cmocka_unit_test(test_tpgt),
		cmocka_unit_test(test_lease_keys),
		cmocka_unit_test(test_fence_keys),
		cmocka_unit_test(test_fence_new),
		cmocka_unit_test(test_store_key),
		cmocka_unit_test(test_store_twice),
		cmocka_unit_test(test_store_twice_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
