// LINK: isergw_config isergw_common PkgConfig::JSONC
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit test holding mgmt/openapi.json to the configuration's field tables
 * (config/schema.h), the ones isergwd parses with and the REST layer checks
 * bodies against: every field of a table is a property of its OpenAPI
 * schema with the same type (a sub-table's object the same schema), the
 * same range and words where OpenAPI states them, the same required keys,
 * and every property OpenAPI lists (but the read-only ones) is a field of
 * the table. The merge-patch schemas hold the same keys (but those a patch
 * changes elsewhere), each also null.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "config/schema.h"

/* An OpenAPI schema and the table it describes. */
struct map {
	const char *schema;
	const struct gw_ftable *t;
	bool patch;                     /* a merge patch: every key also null, none required */
	const char *const *not_in;      /* table keys the schema leaves out (NULL-terminated) */
	const char *const *no_null;     /* a patch's keys that cannot be removed but required ones */
};

/* A schema, its merge patch's (or NULL) and the table both describe. */
struct pair {
	const char *schema, *patch;
	const struct gw_ftable *t;
	const char *const *not_in, *const *no_null;     /* the patch's */
};

static const char *const target_patch_not_in[] = { "luns", "acls", NULL };
static const char *const portal_patch_no_null[] = { "rel_port_id", NULL };

static const struct pair pairs[] = {
	{ "Config", NULL, &gw_schema_cluster, NULL, NULL },
	{ "Lun", "LunPatch", &gw_schema_lun, NULL, NULL },
	{ "Target", "TargetPatch", &gw_schema_target, target_patch_not_in, NULL },
	{ "Acl", "AclPatch", &gw_schema_acl, NULL, NULL },
	{ "Chap", "ChapPatch", &gw_schema_chap, NULL, NULL },
	{ "DiscoveryChap", NULL, &gw_schema_chap, NULL, NULL },
	{ "Portal", "PortalPatch", &gw_schema_node_portal, NULL, portal_patch_no_null },
};

static struct json_object *schemas;

static int setup(void **state)
{
	char path[4096];
	struct json_object *doc, *comp;

	(void)state;
	snprintf(path, sizeof(path), "%s/mgmt/openapi.json", ISERGW_SOURCE_DIR);
	doc = json_object_from_file(path);
	if (!doc || !json_object_object_get_ex(doc, "components", &comp) ||
	    !json_object_object_get_ex(comp, "schemas", &schemas))
		return -1;
	json_object_get(schemas);
	json_object_put(doc);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	json_object_put(schemas);
	return 0;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static bool listed(const char *const *keys, const char *key)
{
	for (; keys && *keys; keys++)
		if (!strcmp(*keys, key))
			return true;
	return false;
}

/* The table a "$ref" names, in a schema (patch or not) like m. */
static const struct gw_ftable *ref_table(struct json_object *p)
{
	const char *ref = str(p, "$ref"), *name;

	if (!ref || strncmp(ref, "#/components/schemas/", 21))
		return NULL;
	name = ref + 21;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (!strcmp(pairs[i].schema, name) || (pairs[i].patch && !strcmp(pairs[i].patch, name)))
			return pairs[i].t;
	return NULL;
}

/* p without its null alternative: {"oneOf": [X, {"type": "null"}]} -> X. */
static struct json_object *non_null(struct json_object *p, bool *nullable)
{
	struct json_object *one = get(p, "oneOf"), *keep = NULL;

	*nullable = false;
	if (!one || json_object_array_length(one) != 2)
		return p;
	for (size_t i = 0; i < 2; i++) {
		struct json_object *alt = json_object_array_get_idx(one, i);
		const char *t = str(alt, "type");

		if (t && !strcmp(t, "null"))
			*nullable = true;
		else
			keep = alt;
	}
	return *nullable ? keep : p;
}

static void check_int(const char *where, const struct gw_field *f, struct json_object *p)
{
	struct json_object *lo = get(p, "minimum"), *hi = get(p, "maximum"), *en = get(p, "enum");

	if (lo && (uint64_t)json_object_get_int64(lo) != f->min)
		fail_msg("%s: minimum %s, the table says %llu", where, json_object_get_string(lo),
			 (unsigned long long)f->min);
	if (hi && (uint64_t)json_object_get_int64(hi) != f->max)
		fail_msg("%s: maximum %s, the table says %llu", where, json_object_get_string(hi),
			 (unsigned long long)f->max);
	for (size_t i = 0; en && i < json_object_array_length(en); i++) {
		int64_t x = json_object_get_int64(json_object_array_get_idx(en, i));

		if (x < 0 || (uint64_t)x < f->min || (uint64_t)x > f->max)
			fail_msg("%s: enum value %lld outside the table's %llu..%llu", where,
				 (long long)x, (unsigned long long)f->min, (unsigned long long)f->max);
	}
}

static void check_words(const char *where, const struct gw_field *f, struct json_object *p)
{
	struct json_object *en = get(p, "enum");
	size_t n = 0;

	if (!en)
		return;
	if (!f->words)
		fail_msg("%s: an enum in OpenAPI, none in the table", where);
	for (const char *const *w = f->words; *w; w++, n++) {
		size_t i;

		for (i = 0; i < json_object_array_length(en); i++)
			if (!strcmp(json_object_get_string(json_object_array_get_idx(en, i)), *w))
				break;
		if (i == json_object_array_length(en))
			fail_msg("%s: \"%s\" is a word of the table, not of OpenAPI's enum", where, *w);
	}
	if (n != json_object_array_length(en))
		fail_msg("%s: OpenAPI's enum has %zu words, the table %zu", where,
			 json_object_array_length(en), n);
}

/* The property p (the null alternative of a patch taken off) holds field f. */
static void check_type(const char *where, const struct gw_field *f, struct json_object *p)
{
	const char *t = str(p, "type");
	struct json_object *one = get(p, "oneOf"), *items;

	switch (f->type) {
	case GW_FT_STRING:
		if (!t || strcmp(t, "string"))
			fail_msg("%s: the table says a string, OpenAPI %s", where, t ? t : "no type");
		check_words(where, f, p);
		return;
	case GW_FT_INTEGER:
		if (!t || strcmp(t, "integer"))
			fail_msg("%s: the table says an integer, OpenAPI %s", where, t ? t : "no type");
		check_int(where, f, p);
		return;
	case GW_FT_BOOLEAN:
		if (!t || strcmp(t, "boolean"))
			fail_msg("%s: the table says a boolean, OpenAPI %s", where, t ? t : "no type");
		return;
	case GW_FT_SIZE: {
		/* an integer (0 up) or a string */
		struct json_object *a, *b;

		if (!one || json_object_array_length(one) != 2)
			fail_msg("%s: the table says an integer or a size string, OpenAPI not", where);
		a = json_object_array_get_idx(one, 0);
		b = json_object_array_get_idx(one, 1);
		if (!str(a, "type") || strcmp(str(a, "type"), "integer") || !str(b, "type") ||
		    strcmp(str(b, "type"), "string"))
			fail_msg("%s: the table says an integer or a size string, OpenAPI not", where);
		if (!get(a, "minimum") || json_object_get_int64(get(a, "minimum")) != 0)
			fail_msg("%s: a size is at least 0", where);
		return;
	}
	case GW_FT_OBJECT:
		/* a schema of OpenAPI's own is the table's; "an object" is any */
		if (get(p, "$ref") ? ref_table(p) != f->sub : !t || strcmp(t, "object"))
			fail_msg("%s: the table says an object of another schema than OpenAPI's", where);
		return;
	case GW_FT_ARRAY:
		items = get(p, "items");
		if (!t || strcmp(t, "array") || !items)
			fail_msg("%s: the table says an array, OpenAPI %s", where, t ? t : "no type");
		if (f->sub && (get(items, "$ref") ? ref_table(items) != f->sub :
			       !str(items, "type") || strcmp(str(items, "type"), "object")))
			fail_msg("%s: an array of another schema than the table's", where);
		return;
	}
	fail_msg("%s: a field of no type", where);
}

static void check_map(const struct map *m)
{
	struct json_object *s = get(schemas, m->schema), *props = get(s, "properties");
	struct json_object *req = get(s, "required");
	char where[128];
	size_t nreq = 0;

	if (!s || !props)
		fail_msg("%s: no such schema in mgmt/openapi.json", m->schema);
	/* every field of the table, in the schema */
	for (size_t i = 0; i < m->t->n; i++) {
		const struct gw_field *f = &m->t->f[i];
		struct json_object *p = get(props, f->key), *v;
		bool nullable;

		snprintf(where, sizeof(where), "%s.%s", m->schema, f->key);
		if (listed(m->not_in, f->key)) {
			if (p)
				fail_msg("%s: listed as left out, yet there", where);
			continue;
		}
		if (!p)
			fail_msg("%s: a field of the table, not in mgmt/openapi.json", where);
		v = non_null(p, &nullable);
		if (m->patch && nullable != !(f->required || listed(m->no_null, f->key)))
			fail_msg("%s: a merge patch %s remove it (null)", where,
				 nullable ? "cannot" : "may");
		check_type(where, f, v);
		if (f->required && !m->patch) {
			size_t k;

			for (k = 0; req && k < json_object_array_length(req); k++)
				if (!strcmp(json_object_get_string(json_object_array_get_idx(req, k)),
					    f->key))
					break;
			if (!req || k == json_object_array_length(req))
				fail_msg("%s: required by the table, not by OpenAPI", where);
			nreq++;
		}
	}
	if (!m->patch && req && json_object_array_length(req) != nreq)
		fail_msg("%s: OpenAPI requires %zu keys, the table %zu", m->schema,
			 json_object_array_length(req), nreq);
	/* every property of the schema (but the read-only ones), in the table */
	json_object_object_foreach(props, key, p) {
		struct json_object *ro = get(p, "readOnly");

		if (ro && json_object_get_boolean(ro))
			continue;
		if (!gw_field_find(m->t, key, strlen(key)))
			fail_msg("%s.%s: in mgmt/openapi.json, not a field of the table", m->schema, key);
	}
}

static void test_openapi(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const struct pair *p = &pairs[i];
		struct map m = { p->schema, p->t, false, NULL, NULL };

		check_map(&m);
		if (!p->patch)
			continue;
		m = (struct map){ p->patch, p->t, true, p->not_in, p->no_null };
		check_map(&m);
	}
}

/* Each table's fields: a key, a doc, names only on strings, words only on strings. */
static void check_table(const char *name, const struct gw_ftable *t)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct gw_field *f = &t->f[i];

		if (!f->key || !f->key[0] || !f->doc || !f->doc[0])
			fail_msg("%s[%zu]: no key or no doc", name, i);
		if ((f->is_name || f->words) && f->type != GW_FT_STRING)
			fail_msg("%s.%s: a name or words, not a string", name, f->key);
		if (f->sub && f->type != GW_FT_OBJECT && f->type != GW_FT_ARRAY)
			fail_msg("%s.%s: a table for neither an object nor an array", name, f->key);
		if (gw_field_find(t, f->key, strlen(f->key)) != f)
			fail_msg("%s.%s: twice", name, f->key);
		if (f->sub)
			check_table(f->key, f->sub);
	}
}

static void test_tables(void **state)
{
	(void)state;
	check_table("config", &gw_schema_config);
	check_table("cluster", &gw_schema_cluster);
	assert_null(gw_field_find(&gw_schema_lun, "colour", 6));
	assert_non_null(gw_field_find(&gw_schema_lun, "pathX", 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_openapi),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
