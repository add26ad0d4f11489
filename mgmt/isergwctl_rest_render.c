/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl's REST commands, the pure half that shows an answer
 * (isergwctl_rest_render(): a table or KEY VALUE lines per view, the
 * configuration as JSON). Unit-tested by tests/unit/test_isergwctl_rest.c.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isergwctl.h"

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

json_object *isergwctl_json_member(json_object *o, const char *key, json_type type)
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
	*items = isergwctl_json_member(doc, "items", json_type_array);
	return *items ? objects(*items) : -EBADMSG;
}

/* How a column's cell is made of an item. */
enum col_how {
	COL_MEMBER,     /* the member key (cell()) */
	COL_COUNT,      /* the length of the array key (0 when absent) */
	COL_IN,         /* the member sub of the object key; 'absent' when there is no such object */
};

struct column {
	const char *head;
	enum col_how how;
	const char *key, *sub, *absent;
};

#define COL(head, key)                { head, COL_MEMBER, key, NULL, NULL }
#define COL_N(head, key)              { head, COL_COUNT, key, NULL, NULL }
#define COL_IN(head, key, sub, absent) { head, COL_IN, key, sub, absent }

/* A table of items, a row each, and what it says when there are none. */
struct table_spec {
	const char *none;
	size_t ncols;
	const struct column *cols;
};

#define TABLE(none, ...) { none, sizeof((const struct column[]){ __VA_ARGS__ }) / \
			   sizeof(struct column), (const struct column[]){ __VA_ARGS__ } }

static const struct table_spec targets_spec = TABLE("no targets",
	COL("TARGET", "iqn"), COL("ALIAS", "alias"), COL_N("LUNS", "luns"),
	COL_IN("CHAP", "chap", "user", "-"), COL_N("ACLS", "acls"));

static const struct table_spec luns_spec = TABLE("no LUNs",
	COL("LUN", "lun"), COL("SIZE", "size"), COL("DEVICE GROUP", "device_group"),
	COL("READONLY", "readonly"), COL("PRODUCT", "product"), COL("PATH", "path"));

static const struct table_spec nodes_spec = TABLE("no nodes",
	COL("NODE", "name"), COL("ID", "nodeid"), COL("TPG", "tpg_id"),
	COL("COROSYNC", "corosync_member"), COL("AGENT", "agent"), COL("SYNCED", "synced"),
	COL("DRAINED", "drained"), COL("APPLIED GEN", "applied_generation"),
	COL("HEARD (ms ago)", "last_heard_ms"), COL_IN("DATA PLANE", "dataplane", "state", "-"));

static const struct table_spec acls_spec = TABLE("no ACLs (any initiator may log in)",
	COL("INITIATOR", "initiator"), COL_IN("CHAP USER", "chap", "user", "(the target's)"));

static const struct table_spec sessions_spec = TABLE("no sessions",
	COL("TSIH", "tsih"), COL("NODE", "node"), COL("TYPE", "type"),
	COL("TRANSPORT", "transport"), COL("INITIATOR", "initiator"), COL("TARGET", "target"),
	COL("PORTAL", "portal"), COL_N("CONNECTIONS", "connections"));

static const struct table_spec portals_spec = TABLE("no portals",
	COL("REL PORT ID", "rel_port_id"), COL("URL", "url"));

static const struct table_spec port_groups_spec = TABLE("no port groups",
	COL("TPG ID", "tpg_id"), COL("NODE", "node"), COL("REL PORT IDS", "rel_port_ids"));

static const struct table_spec connections_spec = TABLE("no connections",
	COL("CID", "cid"), COL("STATE", "state"), COL("PEER", "peer"), COL("LOCAL", "local"),
	COL("LOGIN TIME", "login_time"));

static void column_cell(struct isergwctl_table *t, json_object *o, const struct column *c)
{
	json_object *v;

	switch (c->how) {
	case COL_MEMBER:
		cell(t, o, c->key);
		break;
	case COL_COUNT:
		v = isergwctl_json_member(o, c->key, json_type_array);
		isergwctl_table_cell(t, "%zu", v ? json_object_array_length(v) : 0);
		break;
	case COL_IN:
		v = isergwctl_json_member(o, c->key, json_type_object);
		if (v)
			cell(t, v, c->sub);
		else
			isergwctl_table_cell(t, "%s", c->absent);
		break;
	}
}

/* The items (objects) as the table s says; s->none when there are none. */
static int items_table(FILE *f, json_object *items, const struct table_spec *s)
{
	struct isergwctl_table t;
	size_t n = json_object_array_length(items);

	if (n == 0) {
		fprintf(f, "%s\n", s->none);
		return 0;
	}
	isergwctl_table_init(&t, s->ncols);
	for (size_t k = 0; k < s->ncols; k++)
		isergwctl_table_cell(&t, "%s", s->cols[k].head);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < s->ncols; k++)
			column_cell(&t, json_object_array_get_idx(items, i), &s->cols[k]);
	return isergwctl_table_print(&t, f);
}

/* One row per device group, one column per node (in order of appearance) with its state. */
static int groups_table(FILE *f, json_object *items)
{
	const char *cols[ISERGWCTL_TABLE_COLS_MAX - ISERGWCTL_DG_COLS];
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
		states = isergwctl_json_member(o, "states", json_type_array);
		for (size_t k = 0; states && k < json_object_array_length(states); k++) {
			json_object *node = isergwctl_json_member(json_object_array_get_idx(states, k), "node",
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
	isergwctl_dg_table_init(&t, ncols);
	for (size_t c = 0; c < ncols; c++)
		isergwctl_table_cell(&t, "%s", cols[c]);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(items, i);
		json_object *states = isergwctl_json_member(o, "states", json_type_array);

		cell(&t, o, "name");
		cell(&t, o, "owner");
		cell(&t, o, "preferred_owner");
		cell(&t, o, "failback");
		for (size_t c = 0; c < ncols; c++) {
			json_object *st = NULL, *s, *pref;

			for (size_t k = 0; states && k < json_object_array_length(states) && !st; k++) {
				json_object *e = json_object_array_get_idx(states, k);
				json_object *node = isergwctl_json_member(e, "node", json_type_string);

				if (node && strcmp(json_object_get_string(node), cols[c]) == 0)
					st = e;
			}
			s = st ? isergwctl_json_member(st, "state", json_type_string) : NULL;
			pref = st ? isergwctl_json_member(st, "preferred", json_type_boolean) : NULL;
			if (s)
				isergwctl_table_cell(&t, "%s%s", isergwctl_state_abbrev(json_object_get_string(s)),
					   pref && json_object_get_boolean(pref) ? "*" : "");
			else
				isergwctl_table_cell(&t, "-");
		}
	}
	return isergwctl_table_print(&t, f);
}

static int cluster_view(FILE *f, json_object *doc)
{
	json_object *members = isergwctl_json_member(doc, "members", json_type_array);

	if (!members || objects(members))
		return -EBADMSG;
	if (kv_lines(f, doc, "members"))
		return -ENOMEM;
	fprintf(f, "\n");
	return items_table(f, members, &nodes_spec);
}

/* KEY VALUE lines of doc but its array key, then that array as the table s (none: nothing). */
static int object_and_table(FILE *f, json_object *doc, const char *key, const struct table_spec *s)
{
	json_object *arr;
	int rc = kv_lines(f, doc, key);

	if (rc)
		return rc;
	arr = isergwctl_json_member(doc, key, json_type_array);
	if (!arr || objects(arr))
		return arr ? -EBADMSG : 0;
	fprintf(f, "\n");
	return items_table(f, arr, s);
}

/* The views that are a list of items, as a table each. */
static const struct table_spec *const list_specs[] = {
	[ISERGWCTL_VIEW_TARGETS] = &targets_spec,
	[ISERGWCTL_VIEW_LUNS] = &luns_spec,
	[ISERGWCTL_VIEW_NODES] = &nodes_spec,
	[ISERGWCTL_VIEW_ACLS] = &acls_spec,
	[ISERGWCTL_VIEW_PORTALS] = &portals_spec,
	[ISERGWCTL_VIEW_PORT_GROUPS] = &port_groups_spec,
	[ISERGWCTL_VIEW_SESSIONS] = &sessions_spec,
};

int isergwctl_rest_render(FILE *f, enum isergwctl_view view, struct json_object *doc)
{
	json_object *items, *arr;
	int rc;

	if (!json_object_is_type(doc, json_type_object))
		return -EBADMSG;
	if ((size_t)view < sizeof(list_specs) / sizeof(list_specs[0]) && list_specs[view])
		return items_of(doc, &items) ?: items_table(f, items, list_specs[view]);
	switch (view) {
	case ISERGWCTL_VIEW_DGS:
		return items_of(doc, &items) ?: groups_table(f, items);
	case ISERGWCTL_VIEW_TARGET:
		return object_and_table(f, doc, "luns", &luns_spec);
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
	case ISERGWCTL_VIEW_SESSION:
		return object_and_table(f, doc, "connections", &connections_spec);
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
