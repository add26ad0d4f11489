// LINK: ha_core api_logic isergw_config isergw_common isergw_proto PkgConfig::JSONC
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/names.c: every kind of name, valid and not
 * (non-UTF-8, overlong forms, surrogates, NUL, control characters, length
 * limits, what RFC 3722 prohibits), and that every entry point refuses the
 * same names with the same words, with one table run through each one's
 * check: gw_name_check itself, isergwd's configuration parser
 * (gw_config_load_string), the REST layer (rest_parse_body and the target,
 * ACL and LUN creations), the HA agent's document check (ha_doc_with_config)
 * and its group-message codec (a LUN change's target, ha_msg_decode).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "doc.h"
#include "rest.h"
#include "sm.h"
#include "config/config.h"
#include "config/names.h"

struct name_case {
	enum gw_name_kind kind;
	const char *s;
	size_t len;             /* 0: strlen(s) */
	const char *why;        /* NULL: valid; else the reason every entry point gives */
	bool own_words;         /* empty, or past the field's buffer: each parser words it */
};

#define L(s) s, sizeof(s) - 1
#define IQN_PRE "iqn.2026-11.org.example:"
/* 223 and 224 bytes */
#define X50 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
#define IQN223 IQN_PRE X50 X50 X50 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
#define IQN224 IQN223 "x"
#define A255 X50 X50 X50 X50 X50 "xxxxx"

static const struct name_case cases[] = {
	/* iSCSI names: valid */
	{ GW_NAME_ISCSI, L(IQN_PRE "t"), NULL, false },
	{ GW_NAME_ISCSI, L("iqn.2026-11.org.example"), NULL, false },
	{ GW_NAME_ISCSI, L(IQN_PRE "disk-\xc3\xa9t\xc3\xa9"), NULL, false },          /* é */
	{ GW_NAME_ISCSI, L(IQN_PRE "\xe6\x97\xa5\xe6\x9c\xac"), NULL, false },      /* 日本 */
	{ GW_NAME_ISCSI, L(IQN_PRE "\xf0\x9f\x92\xbe"), NULL, false },              /* U+1F4BE */
	{ GW_NAME_ISCSI, L(IQN_PRE "a.b-c:d"), NULL, false },
	{ GW_NAME_ISCSI, L("eui.02004567A425678D"), NULL, false },
	{ GW_NAME_ISCSI, L("naa.52004567BA64678D"), NULL, false },
	{ GW_NAME_ISCSI, L("naa.62004567ba64678d0123456789abcdef"), NULL, false },
	{ GW_NAME_ISCSI, L(IQN223), NULL, false },
	/* iSCSI names: not */
	{ GW_NAME_ISCSI, L(""), "empty", true },          /* the parser: "must not be empty" */
	{ GW_NAME_ISCSI, L(IQN224), "longer than 223 bytes", true },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xff\xfe"), "not valid UTF-8 (byte 24)", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xc0\xaf"), "not valid UTF-8 (byte 24)", false }, /* overlong '/' */
	{ GW_NAME_ISCSI, L(IQN_PRE "\xe0\x80\xaf"), "not valid UTF-8 (byte 24)", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xf0\x80\x80\xaf"), "not valid UTF-8 (byte 24)", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xed\xa0\x80"), "not valid UTF-8 (byte 24)", false }, /* U+D800 */
	{ GW_NAME_ISCSI, L(IQN_PRE "\xed\xbf\xbf"), "not valid UTF-8 (byte 24)", false }, /* U+DFFF */
	{ GW_NAME_ISCSI, L(IQN_PRE "\xf4\x90\x80\x80"), "not valid UTF-8 (byte 24)", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "a\xc3"), "not valid UTF-8 (byte 25)", false },  /* truncated */
	{ GW_NAME_ISCSI, L(IQN_PRE "\xa9"), "not valid UTF-8 (byte 24)", false },   /* continuation */
	{ GW_NAME_ISCSI, L(IQN_PRE "a\0b"), "contains a NUL character", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "a\x01"), "allowed characters are a-z 0-9 - . :", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "a\tb"), "allowed characters are a-z 0-9 - . :", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "a b"), "allowed characters are a-z 0-9 - . :", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "a_b"), "allowed characters are a-z 0-9 - . :", false },
	{ GW_NAME_ISCSI, L("iqn.2026-11.org.Example:a"), "must be lowercase", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xc2\x85"), "U+0085 is not allowed in an iSCSI name", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "a\xc2\xa0" "b"), "U+00A0 is not allowed", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xe2\x80\x8b"), "U+200B is not allowed", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xe2\x80\xae"), "U+202E is not allowed", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xef\xbb\xbf"), "U+FEFF is not allowed", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xee\x80\x80"), "U+E000 is not allowed", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xef\xbf\xbe"), "U+FFFE is not allowed", false },
	{ GW_NAME_ISCSI, L(IQN_PRE "\xf3\xa0\x80\x81"), "U+E0001 is not allowed", false },
	{ GW_NAME_ISCSI, L("IQN.2026-11.org.example:a"), "must start with iqn., eui. or naa.", false },
	{ GW_NAME_ISCSI, L("disk1"), "must start with iqn., eui. or naa.", false },
	{ GW_NAME_ISCSI, L("iqn.2026-13.org.example"), "month of the iqn. date must be 01..12", false },
	{ GW_NAME_ISCSI, L("iqn.26-11.org.example"), "iqn. must be followed by a date", false },
	{ GW_NAME_ISCSI, L("iqn.2026-11.:ab"), "needs a reversed domain name", false },
	{ GW_NAME_ISCSI, L("eui.1234"), "eui. names have exactly 16 hex digits", false },
	{ GW_NAME_ISCSI, L("eui.02004567A425678G"), "eui. names have exactly 16 hex digits", false },
	{ GW_NAME_ISCSI, L("naa.52004567BA64678D00"), "naa. names have 16 or 32 hex digits", false },
	/* aliases */
	{ GW_NAME_ALIAS, L(""), NULL, false },
	{ GW_NAME_ALIAS, L("Datenbank \xc3\xa4\xc3\xb6\xc3\xbc \"prod\" / \\"), NULL, false },
	{ GW_NAME_ALIAS, L(A255), NULL, false },
	{ GW_NAME_ALIAS, L(A255 "x"), "longer than 255 bytes", true },
	{ GW_NAME_ALIAS, L("a\nb"), "control character U+000A at byte 1", false },
	{ GW_NAME_ALIAS, L("a\x7f"), "control character U+007F at byte 1", false },
	{ GW_NAME_ALIAS, L("a\xc2\x9b"), "control character U+009B at byte 1", false },
	{ GW_NAME_ALIAS, L("db\xff"), "not valid UTF-8 (byte 2)", false },
	{ GW_NAME_ALIAS, L("db\xed\xb0\x80"), "not valid UTF-8 (byte 2)", false },
	{ GW_NAME_ALIAS, L("d\0b"), "contains a NUL character", false },
	/* paths */
	{ GW_NAME_PATH, L("/srv/disk \xc3\xa9.img"), NULL, false },
	{ GW_NAME_PATH, L("/dev/sdb"), NULL, false },
	{ GW_NAME_PATH, L("/srv/a\nb.img"), "control character U+000A at byte 6", false },
	{ GW_NAME_PATH, L("/srv/\xc3\x28.img"), "not valid UTF-8 (byte 5)", false },
	{ GW_NAME_PATH, L("/srv/a\0b"), "contains a NUL character", false },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* s as the text of a JSON string, quotes included; bytes >= 0x80 as they are */
static void jstr(char *out, size_t outlen, const char *s, size_t len)
{
	size_t o = 0;

	out[o++] = '"';
	for (size_t i = 0; i < len && o + 8 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20)
			o += (size_t)snprintf(out + o, outlen - o, "\\u%04x", c);
		else if (c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, outlen - o, "\\%c", c);
		else
			out[o++] = (char)c;
	}
	out[o++] = '"';
	out[o] = '\0';
}

/* The key path each entry point names for a case, under targets[0] where needed. */
static const char *field_of(enum gw_name_kind k)
{
	return k == GW_NAME_ISCSI ? "iqn" : k == GW_NAME_ALIAS ? "alias" : "luns[0].path";
}

/* A target with the case's name where its kind goes (the other names valid). */
static void target_json(char *out, size_t outlen, const struct name_case *c, bool dg)
{
	char v[1024];
	const char *lun_dg = dg ? ",\"device_group\":\"dg1\"" : "";

	jstr(v, sizeof(v), c->s, c->len);
	if (c->kind == GW_NAME_ISCSI)
		snprintf(out, outlen, "{\"iqn\":%s,\"luns\":[{\"path\":\"/dev/a\"%s}]}", v, lun_dg);
	else if (c->kind == GW_NAME_ALIAS)
		snprintf(out, outlen, "{\"iqn\":\"" IQN_PRE "t\",\"alias\":%s,\"luns\":[{\"path\":"
			 "\"/dev/a\"%s}]}", v, lun_dg);
	else
		snprintf(out, outlen, "{\"iqn\":\"" IQN_PRE "t\",\"luns\":[{\"path\":%s%s}]}", v,
			 lun_dg);
}

/*
 * err says the case's reason at path: "PATH: not valid UTF-8 ..." from the
 * check of every string, or "PATH: <gw_name_check's message>".
 */
static void said(const struct name_case *c, size_t i, const char *where, const char *path,
		 const char *err)
{
	char msg[512], want[700], why[96];

	if (c->own_words)
		return;
	assert_int_equal(gw_name_check(c->kind, c->s, c->len, msg, sizeof(msg)), -EINVAL);
	if (!strncmp(c->why, "not valid UTF-8", 15) || !strcmp(c->why, "contains a NUL character")) {
		/* the reason of the whole string, as gw_name_check words it too */
		snprintf(why, sizeof(why), "%s", strstr(msg, c->why));
		snprintf(want, sizeof(want), "%s: %s", path, why);
	} else {
		snprintf(want, sizeof(want), "%s: %s", path, msg);
	}
	if (!strstr(err, want))
		fail_msg("case %zu, %s: got \"%s\", want \"%s\"", i, where, err, want);
}

static void test_kinds(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++) {
		const struct name_case *c = &cases[i];
		char msg[512] = "";
		int rc = gw_name_check(c->kind, c->s, c->len, msg, sizeof(msg));

		if (!c->why) {
			if (rc)
				fail_msg("case %zu: refused: %s", i, msg);
			continue;
		}
		if (rc != -EINVAL || !strstr(msg, c->why))
			fail_msg("case %zu: rc %d \"%s\", want \"%s\"", i, rc, msg, c->why);
		/* the name is shown only where it is printable UTF-8 */
		assert_true(gw_utf8_valid(msg, strlen(msg), NULL));
		for (const char *p = msg; *p; p++)
			assert_true((unsigned char)*p >= 0x20);
	}
}

static void test_utf8(void **state)
{
	size_t bad = 99;

	(void)state;
	assert_true(gw_utf8_valid(L("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), &bad));
	assert_true(gw_utf8_valid(L("\xef\xbf\xbf\xf4\x8f\xbf\xbf\xed\x9f\xbf\xee\x80\x80"), &bad));
	assert_false(gw_utf8_valid(L("ab\xc1\xbf"), &bad));
	assert_int_equal(bad, 2);
	assert_false(gw_utf8_valid(L("\xf5\x80\x80\x80"), &bad));
	assert_int_equal(bad, 0);
	assert_false(gw_utf8_valid(L("a\xe2\x82"), &bad));
	assert_int_equal(bad, 1);
	assert_false(gw_utf8_valid(L("a\xe2\x28\xa1"), &bad));
	assert_int_equal(bad, 1);
}

/* Every string of a document: the path of the first that is not UTF-8, member names too. */
static void test_json_strings(void **state)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array(),
		    *t = json_object_new_object();
	char path[256], why[64];

	(void)state;
	json_object_object_add(t, "iqn", json_object_new_string(IQN_PRE "t"));
	json_object_object_add(t, "alias", json_object_new_string_len("a\xff", 2));
	json_object_array_add(a, json_object_new_int(1));
	json_object_array_add(a, t);
	json_object_object_add(o, "targets", a);
	assert_int_equal(gw_json_strings_check(o, "", path, sizeof(path), why, sizeof(why)), -EINVAL);
	assert_string_equal(path, "targets[1].alias");
	assert_string_equal(why, "not valid UTF-8 (byte 1)");
	assert_int_equal(gw_json_strings_check(t, "x", path, sizeof(path), why, sizeof(why)), -EINVAL);
	assert_string_equal(path, "x.alias");
	json_object_object_add(t, "alias", json_object_new_string_len("a\0b", 3));
	assert_int_equal(gw_json_strings_check(o, "", path, sizeof(path), why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "contains a NUL character");
	json_object_object_add(t, "alias", json_object_new_string("ok \xc3\xa9"));
	assert_int_equal(gw_json_strings_check(o, "", path, sizeof(path), why, sizeof(why)), 0);
	json_object_object_add(t, "k\xfe", json_object_new_string("v"));
	assert_int_equal(gw_json_strings_check(o, "", path, sizeof(path), why, sizeof(why)), -EINVAL);
	assert_string_equal(path, "targets[1]");
	assert_string_equal(why, "not valid UTF-8 (byte 1) in a member name");
	json_object_put(o);
}

/* isergwd's configuration parser: the file, `isergwd --config`, a reload. */
static void test_config_parser(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++) {
		const struct name_case *c = &cases[i];
		char tgt[2048], json[4096], err[512] = "", path[64];
		struct gw_config *cfg = NULL;
		int rc;

		target_json(tgt, sizeof(tgt), c, false);
		snprintf(json, sizeof(json), "{\"portals\":[{\"url\":\"tcp://127.0.0.1\"}],"
			 "\"targets\":[%s]}", tgt);
		rc = gw_config_load_string(json, &cfg, err, sizeof(err));
		gw_config_free(cfg);
		if (!c->why) {
			if (rc)
				fail_msg("case %zu: config refused: %s", i, err);
			continue;
		}
		assert_int_equal(rc, -EINVAL);
		snprintf(path, sizeof(path), "targets[0].%s", field_of(c->kind));
		said(c, i, "config", path, err);
	}
}

/* The REST layer: the body (rest_parse_body), then the creation it is for. */
static void test_rest(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++) {
		const struct name_case *c = &cases[i];
		char body[2048], v[1024], name[REST_NAME_MAX + 1];
		const char *field;
		json_object *cfg = json_object_new_object(), *b = NULL;
		struct rest_err e = { 0 };
		uint32_t lun;
		int rc;

		jstr(v, sizeof(v), c->s, c->len);
		if (c->kind == GW_NAME_PATH) {
			/* POST .../targets/T/luns */
			json_object_put(cfg);
			cfg = json_tokener_parse("{\"targets\":[{\"iqn\":\"" IQN_PRE "t\"}]}");
			snprintf(body, sizeof(body), "{\"path\":%s}", v);
			field = "path";
		} else {
			target_json(body, sizeof(body), c, false);
			field = field_of(c->kind);
		}
		rc = rest_parse_body(body, strlen(body), &b, &e);
		if (!rc && c->kind == GW_NAME_PATH)
			rc = rest_lun_create(cfg, IQN_PRE "t", b, &lun, &e);
		else if (!rc)
			rc = rest_target_create(cfg, b, name, sizeof(name), &e);
		json_object_put(b);
		if (!c->why) {
			if (rc)
				fail_msg("case %zu: REST refused: %u %s", i, e.code, e.detail);
		} else {
			assert_int_equal(rc, -EINVAL);
			assert_int_equal(e.code, 422);
			if (!c->own_words)
				assert_string_equal(e.field, field);
			said(c, i, "REST", field, e.detail);
		}
		/* ACLs: the initiator is an iSCSI name */
		if (c->kind == GW_NAME_ISCSI) {
			json_object_put(cfg);
			cfg = json_tokener_parse("{\"targets\":[{\"iqn\":\"" IQN_PRE "t\"}]}");
			snprintf(body, sizeof(body), "{\"initiator\":%s}", v);
			b = NULL;
			rc = rest_parse_body(body, strlen(body), &b, &e);
			if (!rc)
				rc = rest_acl_create(cfg, IQN_PRE "t", b, name, sizeof(name), &e);
			json_object_put(b);
			if (!c->why && rc)
				fail_msg("case %zu: REST ACL refused: %s", i, e.detail);
			if (c->why) {
				assert_int_equal(e.code, 422);
				said(c, i, "REST ACL", "initiator", e.detail);
			}
		}
		json_object_put(cfg);
	}
}

/* The HA agent: a cluster configuration (`isergwctl cluster config apply`, PUT /config). */
static void test_agent_document(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++) {
		const struct name_case *c = &cases[i];
		char tgt[2048], json[4096], err[1024] = "", path[64];
		struct ha_doc *e = NULL, *d = NULL;
		int rc;

		target_json(tgt, sizeof(tgt), c, true);
		snprintf(json, sizeof(json), "{\"nodes\":[{\"name\":\"n1\",\"tpg_id\":1,\"portals\":"
			 "[{\"url\":\"tcp://10.0.0.1:3260\",\"rel_port_id\":1}]}],\"device_groups\":"
			 "[{\"name\":\"dg1\"}],\"targets\":[%s]}", tgt);
		assert_int_equal(ha_doc_empty(&e), 0);
		rc = ha_doc_with_config(e, json, &d, err, sizeof(err));
		ha_doc_free(e);
		ha_doc_free(d);
		if (!c->why) {
			if (rc)
				fail_msg("case %zu: agent refused: %s", i, err);
			continue;
		}
		assert_int_equal(rc, -EINVAL);
		snprintf(path, sizeof(path), "targets[0].%s", field_of(c->kind));
		said(c, i, "agent", path, err);
	}
}

/* The agent's group messages: a LUN change names its target as the target was checked. */
static void test_agent_codec(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++) {
		const struct name_case *c = &cases[i];
		HaMsg m = ISERGW__HA__GROUP_MSG__INIT, *out = NULL;
		Isergw__Ha__Change ch = ISERGW__HA__CHANGE__INIT;
		Isergw__Ha__LunChange lc = ISERGW__HA__LUN_CHANGE__INIT;
		char target[512], err[512] = "";
		uint8_t *buf;
		size_t len;
		int rc;

		/* a protobuf string ends at its NUL: those the other entry points cover */
		if (c->kind != GW_NAME_ISCSI || memchr(c->s, '\0', c->len))
			continue;
		memcpy(target, c->s, c->len);
		target[c->len] = '\0';
		m.version = HA_PROTO_MAX;
		m.cluster = (char *)(uintptr_t)"c";
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_CHANGE;
		m.change = &ch;
		ch.request_id = 1;
		ch.kind_case = ISERGW__HA__CHANGE__KIND_LUN;
		ch.lun = &lc;
		lc.target = target;
		lc.lun = 1;
		lc.lun_json = (char *)(uintptr_t)"";
		assert_int_equal(ha_msg_pack(&m, &buf, &len), 0);
		rc = ha_msg_decode(buf, len, &out, err, sizeof(err));
		free(buf);
		ha_msg_free(out);
		if (!c->why) {
			if (rc)
				fail_msg("case %zu: codec refused: %s", i, err);
			continue;
		}
		assert_int_equal(rc, -EINVAL);
		if (!c->own_words && !strstr(err, c->why))
			fail_msg("case %zu: codec said \"%s\", want \"%s\"", i, err, c->why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_json_strings),
		cmocka_unit_test(test_config_parser),
		cmocka_unit_test(test_rest),
		cmocka_unit_test(test_agent_document),
		cmocka_unit_test(test_agent_codec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
