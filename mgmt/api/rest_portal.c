/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The REST portals and port groups (rest.h, docs/api.md): a node's portals
 * in the cluster configuration, read, created, patched and deleted, and the
 * target port groups they make.
 */
#include "rest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/names.h"
#include "rest_priv.h"

/* ------------------------------------------------------------ portals, port groups */

static int64_t int_of(json_object *o, const char *key, int64_t dflt)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return dflt;
	return json_object_get_int64(v);
}

json_object *rest_find_portal(json_object *node, uint32_t rel, size_t *idx)
{
	json_object *a = rest_arr_of(node, "portals");

	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *p = json_object_array_get_idx(a, i);

		if (int_of(p, "rel_port_id", -1) == (int64_t)rel) {
			if (idx)
				*idx = i;
			return p;
		}
	}
	return NULL;
}

/* the node (and its portal) that has rel_port_id rel anywhere in the cluster */
static const char *rel_owner(json_object *cfg, uint32_t rel)
{
	json_object *ns = rest_arr_of(cfg, "nodes");

	for (size_t i = 0; ns && i < json_object_array_length(ns); i++) {
		json_object *n = json_object_array_get_idx(ns, i);

		if (rest_find_portal(n, rel, NULL))
			return rest_str_of(n, "name") ? rest_str_of(n, "name") : "?";
	}
	return NULL;
}

json_object *rest_portals(json_object *cfg, const char *node)
{
	json_object *n = rest_find_by(rest_arr_of(cfg, "nodes"), "name", node, NULL), *a;

	if (!n)
		return NULL;
	a = rest_arr_of(n, "portals");
	return rest_list_of(a ? rest_redact(a) : json_object_new_array());
}

json_object *rest_portal(json_object *cfg, const char *node, uint32_t rel)
{
	json_object *n = rest_find_by(rest_arr_of(cfg, "nodes"), "name", node, NULL);
	json_object *p = n ? rest_find_portal(n, rel, NULL) : NULL;

	return p ? rest_redact(p) : NULL;
}

static json_object *node_or_404(json_object *cfg, const char *node, struct rest_err *e)
{
	json_object *n = rest_find_by(rest_arr_of(cfg, "nodes"), "name", node, NULL);

	if (!n)
		rest_fail(e, -ENOENT, 404, NULL, "no node %s in the configuration", node);
	return n;
}

int rest_portal_create(json_object *cfg, const char *node, json_object *body, uint32_t *rel,
		       struct rest_err *e)
{
	json_object *n = node_or_404(cfg, node, e), *a, *copy = NULL, *v;
	const char *who;
	uint32_t r = 1;
	int rc;

	if (!n)
		return -ENOENT;
	rc = rest_check_obj(body, &gw_schema_node_portal, "", e);
	if (rc)
		return rc;
	if (json_object_object_get_ex(body, "rel_port_id", &v)) {
		int64_t want = json_object_get_int64(v);
		char nb[48];

		if (want < 1 || want > 65535)
			return rest_fail(e, -EINVAL, 422, "rel_port_id", "rel_port_id: %s is out of range "
				    "(1..65535)", rest_int_text(v, nb, sizeof(nb)));
		r = (uint32_t)want;
		who = rel_owner(cfg, r);
		if (who)
			return rest_fail(e, -EEXIST, 409, "rel_port_id", "rel_port_id: %u is a portal of "
				    "node %s already (unique in the cluster)", r, who);
	} else {
		while (r <= 65535 && rel_owner(cfg, r))
			r++;
		if (r > 65535)
			return rest_fail(e, -ENOSPC, 409, "rel_port_id", "rel_port_id: none is free");
	}
	a = rest_arr_make(n, "portals");
	if (!a || json_object_deep_copy(body, &copy, NULL))
		return rest_fail(e, -ENOMEM, 500, NULL, "out of memory");
	json_object_object_add(copy, "rel_port_id", json_object_new_int64(r));
	if (json_object_array_add(a, copy)) {
		json_object_put(copy);
		return rest_fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	*rel = r;
	return 0;
}

static json_object *portal_or_404(json_object *cfg, const char *node, uint32_t rel,
				  json_object **n, size_t *idx, struct rest_err *e)
{
	json_object *p;

	*n = node_or_404(cfg, node, e);
	if (!*n)
		return NULL;
	p = rest_find_portal(*n, rel, idx);
	if (!p)
		rest_fail(e, -ENOENT, 404, NULL, "no portal %u on node %s", rel, node);
	return p;
}

int rest_portal_patch(json_object *cfg, const char *node, uint32_t rel, json_object *patch,
		      struct rest_err *e)
{
	json_object *n, *p;
	size_t idx;

	p = portal_or_404(cfg, node, rel, &n, &idx, e);
	if (!p)
		return -ENOENT;
	json_object_object_foreach(patch, key, v) {
		if (!strcmp(key, "rel_port_id")) {
			if (!(json_object_is_type(v, json_type_int) &&
			      json_object_get_int64(v) == (int64_t)rel))
				return rest_fail(e, -EINVAL, 422, key, "rel_port_id: the id of a portal "
					    "cannot change (delete it and create another)");
		} else if (strcmp(key, "url")) {
			return rest_fail(e, -EINVAL, 422, key, "%s: unknown field", key);
		} else if (!v) {
			return rest_fail(e, -EINVAL, 422, key, "url: required (it cannot be removed)");
		}
	}
	return rest_patch_put(rest_arr_of(n, "portals"), idx, p, patch, &gw_schema_node_portal, e);
}

int rest_portal_delete(json_object *cfg, const char *node, uint32_t rel, struct rest_err *e)
{
	json_object *n;
	size_t idx;

	if (!portal_or_404(cfg, node, rel, &n, &idx, e))
		return -ENOENT;
	json_object_array_del_idx(rest_arr_of(n, "portals"), idx, 1);
	return 0;
}

json_object *rest_port_groups(json_object *cfg)
{
	json_object *ns = rest_arr_of(cfg, "nodes"), *items = json_object_new_array();

	for (size_t i = 0; items && ns && i < json_object_array_length(ns); i++) {
		json_object *n = json_object_array_get_idx(ns, i), *ps = rest_arr_of(n, "portals");
		json_object *g, *ids;

		if (!ps || !json_object_array_length(ps))
			continue;
		g = json_object_new_object();
		ids = json_object_new_array();
		if (!g || !ids) {
			json_object_put(g);
			json_object_put(ids);
			continue;
		}
		rest_add_u64(g, "tpg_id", (uint64_t)int_of(n, "tpg_id", 0));
		rest_add_str(g, "node", rest_str_of(n, "name"));
		for (size_t k = 0; k < json_object_array_length(ps); k++)
			json_object_array_add(ids, json_object_new_int64(
				int_of(json_object_array_get_idx(ps, k), "rel_port_id", 0)));
		json_object_object_add(g, "rel_port_ids", ids);
		json_object_array_add(items, g);
	}
	return rest_list_of(items);
}
