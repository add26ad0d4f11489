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

		luns = isergwctl_json_member(o, "luns", json_type_array);
		chap = isergwctl_json_member(o, "chap", json_type_object);
		acls = isergwctl_json_member(o, "acls", json_type_array);
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
	isergwctl_table_init(&t, 4 + ncols);
	isergwctl_table_cell(&t, "DEVICE GROUP");
	isergwctl_table_cell(&t, "OWNER");
	isergwctl_table_cell(&t, "PREFERRED");
	isergwctl_table_cell(&t, "FAILBACK");
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
	json_object *members = isergwctl_json_member(doc, "members", json_type_array);

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

		chap = isergwctl_json_member(o, "chap", json_type_object);
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

		cs = isergwctl_json_member(o, "connections", json_type_array);
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
		arr = isergwctl_json_member(doc, "luns", json_type_array);
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
		arr = isergwctl_json_member(doc, "connections", json_type_array);
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
