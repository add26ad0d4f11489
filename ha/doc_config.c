/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster configuration's structural checks (docs/ha-config.md): every
 * object against its known keys, types and ranges, names, uniqueness, the
 * cross references (preferred owners, the LUNs' device groups). What isergwd
 * itself validates inside the targets, discovery_chap and the gateway keys is
 * left to its own validator, which doc.c runs on every node's rendering
 * afterwards.
 */
#include "doc_priv.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "common/log.h"
#include "config/names.h"
#include "config/schema.h"

static const char *jtype(struct json_object *v)
{
	return json_type_to_name(json_object_get_type(v));
}

int ha_vcheck_keys(struct gw_vctx *c, struct json_object *obj, const char *const *keys,
		      size_t nkeys)
{
	if (!json_object_is_type(obj, json_type_object))
		return gw_verr(c, "expected an object, got %s", jtype(obj));
	json_object_object_foreach(obj, key, val) {
		size_t i;

		(void)val;
		for (i = 0; i < nkeys; i++)
			if (strcmp(keys[i], key) == 0)
				break;
		if (i == nkeys) {
			gw_vpath_key(c, key);
			return gw_verr(c, "unknown key");
		}
	}
	return 0;
}

int ha_vcheck_table(struct gw_vctx *c, struct json_object *obj, const struct gw_ftable *t)
{
	if (!json_object_is_type(obj, json_type_object))
		return gw_verr(c, "expected an object, got %s", jtype(obj));
	json_object_object_foreach(obj, key, val) {
		(void)val;
		if (!gw_field_find(t, key, strlen(key))) {
			gw_vpath_key(c, key);
			return gw_verr(c, "unknown key");
		}
	}
	return 0;
}

/* The string at key (NULL when absent and not required), without NUL bytes, < size bytes. */
static int get_str(struct gw_vctx *c, struct json_object *obj, const char *key, bool required,
		   size_t size, const char **out)
{
	struct json_object *v;
	size_t old, len;
	int rc = 0;

	*out = NULL;
	old = gw_vpath_key(c, key);
	if (!json_object_object_get_ex(obj, key, &v)) {
		if (required)
			rc = gw_verr(c, "missing");
		goto out_pop;
	}
	if (!json_object_is_type(v, json_type_string)) {
		rc = gw_verr(c, "expected a string, got %s", jtype(v));
		goto out_pop;
	}
	len = (size_t)json_object_get_string_len(v);
	*out = json_object_get_string(v);
	if (strlen(*out) != len)
		rc = gw_verr(c, "contains a NUL character");
	else if (len >= size)
		rc = gw_verr(c, "too long (%zu bytes, max %zu)", len, size - 1);
out_pop:
	if (!rc)
		gw_vpath_pop(c, old);
	return rc;
}

/* The integer at key in min..max (*out untouched when absent). */
static int get_uint(struct gw_vctx *c, struct json_object *obj, const char *key, bool required,
		    uint64_t min, uint64_t max, uint64_t *out)
{
	struct json_object *v;
	size_t old = gw_vpath_key(c, key);
	int64_t x;

	if (!json_object_object_get_ex(obj, key, &v)) {
		if (required)
			return gw_verr(c, "missing");
		gw_vpath_pop(c, old);
		return 0;
	}
	if (!json_object_is_type(v, json_type_int))
		return gw_verr(c, "expected an integer, got %s", jtype(v));
	x = json_object_get_int64(v);
	if (x < 0 || (uint64_t)x < min || (uint64_t)x > max)
		return gw_verr(c, "%s out of range (%llu..%llu)", json_object_get_string(v),
			       (unsigned long long)min, (unsigned long long)max);
	*out = (uint64_t)x;
	gw_vpath_pop(c, old);
	return 0;
}

/* The integer at key in the range its field of table t has (config/schema.h). */
static int get_field_uint(struct gw_vctx *c, struct json_object *obj, const struct gw_ftable *t,
			  const char *key, bool required, uint64_t *out)
{
	const struct gw_field *f = gw_field_find(t, key, strlen(key));

	return get_uint(c, obj, key, required, f->min, f->max, out);
}

/* The array at key (NULL when absent), with at most max elements. */
static int get_array(struct gw_vctx *c, struct json_object *obj, const char *key, bool required,
		     size_t min, size_t max, struct json_object **out)
{
	struct json_object *v;
	size_t old = gw_vpath_key(c, key), n;

	*out = NULL;
	if (!json_object_object_get_ex(obj, key, &v)) {
		if (required)
			return gw_verr(c, "missing");
		gw_vpath_pop(c, old);
		return 0;
	}
	if (!json_object_is_type(v, json_type_array))
		return gw_verr(c, "expected an array, got %s", jtype(v));
	n = json_object_array_length(v);
	if (n < min || n > max)
		return gw_verr(c, "%zu elements (%zu..%zu)", n, min, max);
	*out = v;
	gw_vpath_pop(c, old);
	return 0;
}

static bool node_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '_' || ch == '-';
}

static bool printable_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

static int copy_name(char dst[HA_NAME_MAX], const char *src)
{
	size_t n = strlen(src);

	if (n >= HA_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

/* ------------------------------------------------------------------- nodes */

static int parse_portal(struct gw_vctx *c, struct json_object *obj, struct ha_portal *p)
{
	struct gw_portal_cfg parsed;
	const char *url;
	uint64_t rel;
	int rc;

	rc = ha_vcheck_table(c, obj, &gw_schema_node_portal);
	if (rc)
		return rc;
	rc = get_str(c, obj, "url", true, sizeof(p->url), &url);
	if (rc)
		return rc;
	if (gw_portal_parse(url, &parsed)) {
		gw_vpath_key(c, "url");
		return gw_verr(c, "'%s' is not a portal (tcp://ADDR[:PORT] or iser://ADDR[:PORT])", url);
	}
	memcpy(p->url, url, strlen(url) + 1);
	rc = get_field_uint(c, obj, &gw_schema_node_portal, "rel_port_id", true, &rel);
	if (rc)
		return rc;
	p->rel_port_id = (uint16_t)rel;
	return 0;
}

/* rel_port_id of d's portal (k, i) is already used by an earlier portal: say which. */
static int rel_port_reused(struct gw_vctx *c, const struct ha_doc *d, size_t k, size_t i)
{
	uint16_t rel = d->nodes[k].portals[i].rel_port_id;

	for (size_t kk = 0; kk <= k; kk++) {
		const struct ha_node *n = &d->nodes[kk];

		for (size_t ii = 0; ii < n->nportals && (kk < k || ii < i); ii++) {
			if (n->portals[ii].rel_port_id == rel) {
				gw_vpath_key(c, "rel_port_id");
				return gw_verr(c, "%u already used by nodes[%zu].portals[%zu]", rel, kk, ii);
			}
		}
	}
	return 0;
}

typedef int (*parse_one_fn)(struct gw_vctx *c, struct json_object *obj, struct ha_doc *d,
			    size_t i);

/* one(c, element i, d, i) for the n elements of arr, the array at key (errors name key[i]). */
static int parse_each(struct gw_vctx *c, const char *key, struct json_object *arr, size_t n,
		      struct ha_doc *d, parse_one_fn one)
{
	size_t old = gw_vpath_key(c, key);
	int rc;

	for (size_t i = 0; i < n; i++) {
		size_t at = gw_vpath_index(c, i);

		rc = one(c, json_object_array_get_idx(arr, i), d, i);
		if (rc)
			return rc;
		gw_vpath_pop(c, at);
	}
	gw_vpath_pop(c, old);
	return 0;
}

static int parse_node(struct gw_vctx *c, struct json_object *obj, struct ha_doc *d, size_t k)
{
	struct ha_node *n = &d->nodes[k];
	struct json_object *portals;
	const char *name;
	uint64_t tpg;
	size_t old;
	int rc;

	rc = ha_vcheck_table(c, obj, &gw_schema_node);
	if (rc)
		return rc;
	rc = get_str(c, obj, "name", true, HA_NAME_MAX, &name);
	if (rc)
		return rc;
	old = gw_vpath_key(c, "name");
	if (!name[0])
		return gw_verr(c, "must not be empty");
	for (const char *p = name; *p; p++)
		if (!node_name_char(*p))
			return gw_verr(c, "'%s': a node name has only A-Z a-z 0-9 . _ -", name);
	for (size_t j = 0; j < k; j++)
		if (strcmp(d->nodes[j].name, name) == 0)
			return gw_verr(c, "'%s' already used by nodes[%zu]", name, j);
	gw_vpath_pop(c, old);
	(void)copy_name(n->name, name);

	rc = get_field_uint(c, obj, &gw_schema_node, "tpg_id", true, &tpg);
	if (rc)
		return rc;
	n->tpg_id = (uint16_t)tpg;
	for (size_t j = 0; j < k; j++) {
		if (d->nodes[j].tpg_id == n->tpg_id) {
			gw_vpath_key(c, "tpg_id");
			return gw_verr(c, "%u already used by nodes[%zu]", n->tpg_id, j);
		}
	}

	rc = get_array(c, obj, "portals", false, 0, HA_PORTALS_MAX, &portals);
	if (rc || !portals)
		return rc;
	n->nportals = json_object_array_length(portals);
	n->portals = calloc(n->nportals ? n->nportals : 1, sizeof(*n->portals));
	if (!n->portals)
		return gw_errf(c->err, c->errlen, -ENOMEM, "out of memory");
	old = gw_vpath_key(c, "portals");
	for (size_t i = 0; i < n->nportals; i++) {
		size_t at = gw_vpath_index(c, i);

		rc = parse_portal(c, json_object_array_get_idx(portals, i), &n->portals[i]);
		if (!rc)
			rc = rel_port_reused(c, d, k, i);
		if (rc)
			return rc;
		gw_vpath_pop(c, at);
	}
	gw_vpath_pop(c, old);
	return 0;
}

static int parse_nodes(struct gw_vctx *c, struct json_object *cfg, struct ha_doc *d)
{
	struct json_object *nodes;
	int rc;

	rc = get_array(c, cfg, "nodes", true, 1, HA_NODES_MAX, &nodes);
	if (rc)
		return rc;
	d->nnodes = json_object_array_length(nodes);
	d->nodes = calloc(d->nnodes, sizeof(*d->nodes));
	if (!d->nodes) {
		d->nnodes = 0;
		return gw_errf(c->err, c->errlen, -ENOMEM, "out of memory");
	}
	return parse_each(c, "nodes", nodes, d->nnodes, d, parse_node);
}

/* -------------------------------------------------------- floating portals */

static int parse_floating_one(struct gw_vctx *c, struct json_object *obj, struct ha_doc *d,
			      size_t i)
{
	struct ha_floating *f = &d->floating[i];
	struct ha_portal p;
	struct json_object *sub;
	uint64_t tpg;
	int rc;

	rc = ha_vcheck_table(c, obj, &gw_schema_floating_portal);
	if (rc)
		return rc;
	/* url and rel_port_id as a node's portal */
	sub = json_object_new_object();
	if (!sub)
		return gw_errf(c->err, c->errlen, -ENOMEM, "out of memory");
	json_object_object_foreach(obj, key, val) {
		if (strcmp(key, "tpg_id"))
			json_object_object_add(sub, key, json_object_get(val));
	}
	rc = parse_portal(c, sub, &p);
	json_object_put(sub);
	if (rc)
		return rc;
	memcpy(f->url, p.url, sizeof(f->url));
	f->rel_port_id = p.rel_port_id;
	for (size_t k = 0; k < d->nnodes; k++) {
		for (size_t j = 0; j < d->nodes[k].nportals; j++) {
			if (d->nodes[k].portals[j].rel_port_id == f->rel_port_id) {
				gw_vpath_key(c, "rel_port_id");
				return gw_verr(c, "%u already used by nodes[%zu].portals[%zu]",
					       f->rel_port_id, k, j);
			}
		}
	}
	for (size_t j = 0; j < i; j++) {
		if (d->floating[j].rel_port_id == f->rel_port_id) {
			gw_vpath_key(c, "rel_port_id");
			return gw_verr(c, "%u already used by floating_portals[%zu]", f->rel_port_id, j);
		}
		if (strcmp(d->floating[j].url, f->url) == 0) {
			gw_vpath_key(c, "url");
			return gw_verr(c, "'%s' already used by floating_portals[%zu]", f->url, j);
		}
	}
	rc = get_field_uint(c, obj, &gw_schema_floating_portal, "tpg_id", true, &tpg);
	if (rc)
		return rc;
	f->tpg_id = (uint16_t)tpg;
	for (size_t k = 0; k < d->nnodes; k++) {
		if (d->nodes[k].tpg_id == f->tpg_id) {
			gw_vpath_key(c, "tpg_id");
			return gw_verr(c, "%u is the target port group of nodes[%zu]: a floating portal "
				       "needs a group of its own", f->tpg_id, k);
		}
	}
	return 0;
}

static int parse_floating(struct gw_vctx *c, struct json_object *cfg, struct ha_doc *d)
{
	struct json_object *arr;
	int rc;

	rc = get_array(c, cfg, "floating_portals", false, 0, HA_FLOATING_MAX, &arr);
	if (rc || !arr)
		return rc;
	d->nfloating = json_object_array_length(arr);
	d->floating = calloc(d->nfloating ? d->nfloating : 1, sizeof(*d->floating));
	if (!d->floating) {
		d->nfloating = 0;
		return gw_errf(c->err, c->errlen, -ENOMEM, "out of memory");
	}
	return parse_each(c, "floating_portals", arr, d->nfloating, d, parse_floating_one);
}

/* ----------------------------------------------------------- device groups */

const char *ha_failback_name(enum ha_failback f)
{
	switch (f) {
	case HA_FAILBACK_IMMEDIATE: return "immediate";
	case HA_FAILBACK_MANUAL: return "manual";
	}
	return NULL;
}

const char *ha_non_owner_state_name(uint8_t state)
{
	switch (state) {
	case 1: return "active/non-optimized";
	case 2: return "standby";
	case 3: return "unavailable";
	default: return NULL;
	}
}

static int parse_dg(struct gw_vctx *c, struct json_object *obj, struct ha_doc *d, size_t g)
{
	struct ha_dg *dg = &d->dgs[g];
	const char *s;
	size_t old;
	int rc;

	rc = ha_vcheck_table(c, obj, &gw_schema_cluster_dg);
	if (rc)
		return rc;
	rc = get_str(c, obj, "name", true, HA_NAME_MAX, &s);
	if (rc)
		return rc;
	old = gw_vpath_key(c, "name");
	if (!s[0] || !printable_ascii(s))
		return gw_verr(c, "1..%d printable ASCII characters", HA_NAME_MAX - 1);
	for (size_t j = 0; j < g; j++)
		if (strcmp(d->dgs[j].name, s) == 0)
			return gw_verr(c, "'%s' already used by device_groups[%zu]", s, j);
	gw_vpath_pop(c, old);
	(void)copy_name(dg->name, s);

	dg->preferred = -1;
	rc = get_str(c, obj, "preferred_owner", false, HA_NAME_MAX, &s);
	if (rc)
		return rc;
	if (s && s[0]) {
		dg->preferred = ha_doc_find_node(d, s);
		if (dg->preferred < 0) {
			gw_vpath_key(c, "preferred_owner");
			return gw_verr(c, "'%s' is not a node of the cluster", s);
		}
	}

	dg->failback = HA_FAILBACK_IMMEDIATE;
	rc = get_str(c, obj, "failback", false, 32, &s);
	if (rc)
		return rc;
	if (s && strcmp(s, "manual") == 0) {
		dg->failback = HA_FAILBACK_MANUAL;
	} else if (s && strcmp(s, "immediate") != 0) {
		gw_vpath_key(c, "failback");
		return gw_verr(c, "'%s' is not one of immediate, manual", s);
	}

	dg->non_owner_state = 1;
	rc = get_str(c, obj, "non_owner_state", false, 32, &s);
	if (rc)
		return rc;
	if (s) {
		for (dg->non_owner_state = 1; dg->non_owner_state <= 3; dg->non_owner_state++)
			if (strcmp(s, ha_non_owner_state_name(dg->non_owner_state)) == 0)
				break;
		if (dg->non_owner_state > 3) {
			gw_vpath_key(c, "non_owner_state");
			return gw_verr(c, "'%s' is not one of active/non-optimized, standby, unavailable",
				       s);
		}
	}
	return 0;
}

static int parse_dgs(struct gw_vctx *c, struct json_object *cfg, struct ha_doc *d)
{
	struct json_object *dgs;
	int rc;

	rc = get_array(c, cfg, "device_groups", false, 0, HA_DGS_MAX, &dgs);
	if (rc)
		return rc;
	d->ndgs = dgs ? json_object_array_length(dgs) : 0;
	d->dgs = calloc(d->ndgs ? d->ndgs : 1, sizeof(*d->dgs));
	if (!d->dgs) {
		d->ndgs = 0;
		return gw_errf(c->err, c->errlen, -ENOMEM, "out of memory");
	}
	return parse_each(c, "device_groups", dgs, d->ndgs, d, parse_dg);
}

/* ----------------------------------------------------------------- targets */

/*
 * The name of kind (util/names.h) at key of obj, when it is a string: the
 * check isergwd's parser and the REST layer make, in their words (its type
 * and presence are isergwd's to check).
 */
static int check_name(struct gw_vctx *c, struct json_object *obj, const char *key,
		      enum gw_name_kind kind)
{
	struct json_object *v;
	char msg[384];

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
		return 0;
	if (!gw_name_check(kind, json_object_get_string(v), (size_t)json_object_get_string_len(v),
			   msg, sizeof(msg)))
		return 0;
	gw_vpath_key(c, key);
	return gw_verr(c, "%s", msg);
}

/*
 * The names in obj, an object of table t (config/schema.h), and in the
 * objects of its arrays: a target's name and alias, its ACLs' initiator
 * names, its LUNs' paths and backend initiator names.
 */
static int check_names(struct gw_vctx *c, struct json_object *obj, const struct gw_ftable *t)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct gw_field *f = &t->f[i];
		struct json_object *arr;
		int rc;

		if (f->is_name) {
			rc = check_name(c, obj, f->key, f->name);
			if (rc)
				return rc;
		}
		if (f->type != GW_FT_ARRAY || !f->sub || !json_object_object_get_ex(obj, f->key, &arr) ||
		    !json_object_is_type(arr, json_type_array))
			continue;
		for (size_t k = 0; k < json_object_array_length(arr); k++) {
			struct json_object *el = json_object_array_get_idx(arr, k);
			size_t at = gw_vpath_key(c, f->key);

			gw_vpath_index(c, k);
			if (json_object_is_type(el, json_type_object)) {
				rc = check_names(c, el, f->sub);
				if (rc)
					return rc;
			}
			gw_vpath_pop(c, at);
		}
	}
	return 0;
}

/*
 * The shape the device group check walks through (targets[] objects, luns[]
 * objects, device_group a string naming a device group of the cluster), and
 * the names (util/names.h); the rest of each target is isergwd's to check.
 */
static int check_targets(struct gw_vctx *c, struct json_object *targets, const struct ha_doc *d)
{
	size_t old = gw_vpath_key(c, "targets");

	for (size_t t = 0; t < json_object_array_length(targets); t++) {
		struct json_object *tgt = json_object_array_get_idx(targets, t), *luns;
		size_t at = gw_vpath_index(c, t);
		int rc;

		if (!json_object_is_type(tgt, json_type_object))
			return gw_verr(c, "expected an object, got %s", jtype(tgt));
		rc = check_names(c, tgt, &gw_schema_target);
		if (rc)
			return rc;
		rc = get_array(c, tgt, "luns", false, 0, SIZE_MAX, &luns);
		if (rc)
			return rc;
		for (size_t l = 0; luns && l < json_object_array_length(luns); l++) {
			struct json_object *lun = json_object_array_get_idx(luns, l);
			size_t lat = gw_vpath_key(c, "luns");
			const char *dg;

			gw_vpath_index(c, l);
			if (!json_object_is_type(lun, json_type_object))
				return gw_verr(c, "expected an object, got %s", jtype(lun));
			rc = get_str(c, lun, "device_group", false, HA_NAME_MAX, &dg);
			if (rc)
				return rc;
			if (!dg)
				dg = "default";
			if (ha_doc_find_dg(d, dg) < 0) {
				gw_vpath_key(c, "device_group");
				return gw_verr(c, "'%s' is not a device group of the cluster", dg);
			}
			gw_vpath_pop(c, lat);
		}
		gw_vpath_pop(c, at);
	}
	gw_vpath_pop(c, old);
	return 0;
}

/* ----------------------------------------------------------------- gateway */

/*
 * isergwd's top-level keys a cluster sets for all its nodes: the fields of
 * isergwd's table marked cluster (config/schema.h), with isergwd's ranges
 * and words.
 */
bool ha_gateway_key(const char *s, size_t len)
{
	const struct gw_field *f = gw_field_find(&gw_schema_config, s, len);

	return f && f->cluster;
}

static bool one_of(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (strcmp(s, *words) == 0)
			return true;
	return false;
}

static int check_gateway(struct gw_vctx *c, struct json_object *gw)
{
	size_t old = gw_vpath_key(c, "gateway");
	int rc;

	if (!json_object_is_type(gw, json_type_object))
		return gw_verr(c, "expected an object, got %s", jtype(gw));
	json_object_object_foreach(gw, key, val) {
		(void)val;
		if (!ha_gateway_key(key, strlen(key))) {
			gw_vpath_key(c, key);
			return gw_verr(c, "unknown key");
		}
	}
	for (size_t i = 0; i < gw_schema_config.n; i++) {
		const struct gw_field *f = &gw_schema_config.f[i];
		char words[128] = "";
		const char *s;
		uint64_t v;

		if (!f->cluster)
			continue;
		if (f->type == GW_FT_INTEGER) {
			rc = get_uint(c, gw, f->key, false, f->min, f->max, &v);
			if (rc)
				return rc;
			continue;
		}
		if (f->type == GW_FT_BOOLEAN) {
			struct json_object *b;

			if (json_object_object_get_ex(gw, f->key, &b) &&
			    !json_object_is_type(b, json_type_boolean)) {
				gw_vpath_key(c, f->key);
				return gw_verr(c, "expected true or false, got %s", jtype(b));
			}
			continue;
		}
		rc = get_str(c, gw, f->key, false, 16, &s);
		if (rc)
			return rc;
		if (!s || !f->words || one_of(s, f->words))
			continue;
		for (const char *const *w = f->words; *w; w++)
			snprintf(words + strlen(words), sizeof(words) - strlen(words), "%s%s",
				 w == f->words ? "" : ", ", *w);
		gw_vpath_key(c, f->key);
		return gw_verr(c, "'%s' is not one of %s", s, words);
	}
	gw_vpath_pop(c, old);
	return 0;
}

/* ------------------------------------------------------------ the config */

/*
 * The first number in v that is not an integer, reported at its path (the
 * canonical text has none). Returns 0 when there is none.
 */
static int find_double(struct gw_vctx *c, struct json_object *v)
{
	size_t old;
	int rc;

	switch (json_object_get_type(v)) {
	case json_type_double:
		return gw_verr(c, "expected an integer, got double");
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			old = gw_vpath_index(c, i);
			rc = find_double(c, json_object_array_get_idx(v, i));
			if (rc)
				return rc;
			gw_vpath_pop(c, old);
		}
		return 0;
	case json_type_object: {
		json_object_object_foreach(v, key, val) {
			old = gw_vpath_key(c, key);
			rc = find_double(c, val);
			if (rc)
				return rc;
			gw_vpath_pop(c, old);
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* The canonical text of v into *out; "{}" braces removed when strip. */
static int canon_into(struct gw_vctx *c, struct json_object *v, bool strip, char **out)
{
	size_t len;
	int rc;
	char *s = ha_json_canon(v, &len, &rc);

	if (!s) {
		if (rc == -EINVAL && find_double(c, v))
			return -EINVAL;
		if (rc == -EINVAL)
			return gw_verr(c, "a number that is not an integer");
		return gw_errf(c->err, c->errlen, rc, "out of memory");
	}
	if (strip && len >= 2) {
		memmove(s, s + 1, len - 2);
		s[len - 2] = '\0';
	}
	*out = s;
	return 0;
}

int ha_config_parse(struct gw_vctx *c, struct json_object *cfg, bool allow_empty,
		    struct ha_doc *d)
{
	struct json_object *targets = NULL, *chap = NULL, *gw = NULL;
	char path[512], why[64];
	uint64_t grace = 0;
	int rc;

	/* every string UTF-8 without NUL: the document is rendered as JSON everywhere */
	if (gw_json_strings_check(cfg, "", path, sizeof(path), why, sizeof(why))) {
		if (path[0])
			gw_vpath_key(c, path);
		return gw_verr(c, "%s", why);
	}
	rc = ha_vcheck_table(c, cfg, &gw_schema_cluster);
	if (rc)
		return rc;
	rc = get_field_uint(c, cfg, &gw_schema_cluster, "dataplane_grace_ms", false, &grace);
	if (rc)
		return rc;
	d->dataplane_grace_ms = (uint32_t)grace;
	if (!(allow_empty && json_object_object_length(cfg) == 0)) {
		rc = parse_nodes(c, cfg, d);
		if (rc)
			return rc;
		rc = parse_floating(c, cfg, d);
		if (rc)
			return rc;
	}
	rc = parse_dgs(c, cfg, d);
	if (rc)
		return rc;
	rc = get_array(c, cfg, "targets", false, 0, SIZE_MAX, &targets);
	if (rc)
		return rc;
	if (targets) {
		rc = check_targets(c, targets, d);
		if (rc)
			return rc;
	}
	if (json_object_object_get_ex(cfg, "discovery_chap", &chap) &&
	    !json_object_is_type(chap, json_type_object)) {
		gw_vpath_key(c, "discovery_chap");
		return gw_verr(c, "expected an object, got %s", jtype(chap));
	}
	if (json_object_object_get_ex(cfg, "gateway", &gw)) {
		rc = check_gateway(c, gw);
		if (rc)
			return rc;
	}

	rc = canon_into(c, cfg, false, &d->config_text);
	if (!rc && gw)
		rc = canon_into(c, gw, true, &d->gateway_members);
	if (!rc && targets)
		rc = canon_into(c, targets, false, &d->targets_text);
	if (!rc && chap)
		rc = canon_into(c, chap, false, &d->chap_text);
	if (rc)
		return rc;
	if (!d->gateway_members)
		d->gateway_members = strdup("");
	if (!d->targets_text)
		d->targets_text = strdup("[]");
	if (!d->gateway_members || !d->targets_text)
		return gw_errf(c->err, c->errlen, -ENOMEM, "out of memory");
	return 0;
}
