/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster document (doc.h, docs/ha-config.md): building documents from a
 * configuration or a stored text, the runtime map, the canonical text and its
 * digest. Each node's isergwd configuration is rendered in doc_render.c,
 * durable storage is doc_store.c.
 *
 * Every document is checked whole when it is built from text: the
 * configuration's structure (doc_config.c), the runtime against it, then
 * isergwd's own validator on the rendering of every node, so a document the
 * cluster agreed on is one every node's isergwd accepts.
 */
#include "doc_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "common/log.h"

#define ERR_MAX 512

/* The text of a negative errno (thread-safe). */
static const char *errstr(int rc, char *buf, size_t len)
{
	return strerror_r(-rc, buf, len);
}

/* ------------------------------------------------------------- allocation */

struct ha_doc *ha_doc_alloc(void)
{
	return calloc(1, sizeof(struct ha_doc));
}

void ha_doc_free(struct ha_doc *d)
{
	if (!d)
		return;
	for (size_t k = 0; d->nodes && k < d->nnodes; k++)
		free(d->nodes[k].portals);
	free(d->nodes);
	free(d->floating);
	free(d->dgs);
	free(d->owner);
	free(d->drained);
	free(d->live);
	free(d->moving_from);
	free(d->text);
	free(d->config_text);
	free(d->gateway_members);
	free(d->targets_text);
	free(d->chap_text);
	free(d->tokens_text);
	free(d->delta_target);
	free(d->delta_lun_json);
	ha_doc_lun_idx_free(d->lun_idx);
	free(d);
}

/* owner[] (all none) and drained[] (all false) for d's device groups and nodes. */
static int alloc_runtime(struct ha_doc *d)
{
	d->owner = malloc((d->ndgs ? d->ndgs : 1) * sizeof(*d->owner));
	d->moving_from = malloc((d->ndgs ? d->ndgs : 1) * sizeof(*d->moving_from));
	d->drained = calloc(d->nnodes ? d->nnodes : 1, sizeof(*d->drained));
	d->live = calloc(d->nnodes ? d->nnodes : 1, sizeof(*d->live));
	if (!d->owner || !d->drained || !d->live || !d->moving_from)
		return -ENOMEM;
	for (size_t g = 0; g < d->ndgs; g++)
		d->owner[g] = d->moving_from[g] = -1;
	return 0;
}

static char *dup_or_null(const char *s, bool *failed)
{
	char *r;

	if (!s)
		return NULL;
	r = strdup(s);
	if (!r)
		*failed = true;
	return r;
}

/* A deep copy of d but its text (the caller changes it and calls doc_finish). */
static int doc_copy(const struct ha_doc *d, struct ha_doc **out)
{
	struct ha_doc *c = ha_doc_alloc();
	bool failed = false;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->generation = d->generation;
	c->nnodes = d->nnodes;
	c->ndgs = d->ndgs;
	c->dataplane_grace_ms = d->dataplane_grace_ms;
	c->nodes = calloc(d->nnodes ? d->nnodes : 1, sizeof(*c->nodes));
	c->dgs = calloc(d->ndgs ? d->ndgs : 1, sizeof(*c->dgs));
	if (!c->nodes || !c->dgs || alloc_runtime(c))
		goto err_free_copy;
	for (size_t k = 0; k < d->nnodes; k++) {
		const struct ha_node *n = &d->nodes[k];

		c->nodes[k] = *n;
		c->nodes[k].portals = calloc(n->nportals ? n->nportals : 1, sizeof(*n->portals));
		if (!c->nodes[k].portals) {
			c->nodes[k].nportals = 0;
			failed = true;
			continue;
		}
		if (n->nportals)
			memcpy(c->nodes[k].portals, n->portals, n->nportals * sizeof(*n->portals));
	}
	if (d->nfloating) {
		c->floating = malloc(d->nfloating * sizeof(*d->floating));
		if (c->floating) {
			memcpy(c->floating, d->floating, d->nfloating * sizeof(*d->floating));
			c->nfloating = d->nfloating;
		} else {
			failed = true;
		}
	}
	if (d->ndgs) {
		memcpy(c->dgs, d->dgs, d->ndgs * sizeof(*d->dgs));
		memcpy(c->owner, d->owner, d->ndgs * sizeof(*d->owner));
		memcpy(c->moving_from, d->moving_from, d->ndgs * sizeof(*d->moving_from));
	}
	if (d->nnodes) {
		memcpy(c->drained, d->drained, d->nnodes * sizeof(*d->drained));
		memcpy(c->live, d->live, d->nnodes * sizeof(*d->live));
	}
	c->config_text = dup_or_null(d->config_text, &failed);
	c->gateway_members = dup_or_null(d->gateway_members, &failed);
	c->targets_text = dup_or_null(d->targets_text, &failed);
	c->chap_text = dup_or_null(d->chap_text, &failed);
	c->tokens_text = dup_or_null(d->tokens_text, &failed);
	if (failed)
		goto err_free_copy;
	*out = c;
	return 0;

err_free_copy:
	ha_doc_free(c);
	return -ENOMEM;
}

/* ------------------------------------------------------------ lookups */

int ha_doc_find_node(const struct ha_doc *d, const char *name)
{
	if (!d || !name)
		return -1;
	for (size_t k = 0; k < d->nnodes; k++)
		if (strcmp(d->nodes[k].name, name) == 0)
			return (int)k;
	return -1;
}

int ha_doc_find_dg(const struct ha_doc *d, const char *name)
{
	if (!d || !name)
		return -1;
	for (size_t g = 0; g < d->ndgs; g++)
		if (strcmp(d->dgs[g].name, name) == 0)
			return (int)g;
	return -1;
}

void ha_digest_hex(const uint8_t *digest, char out[2 * HA_DIGEST_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < HA_DIGEST_LEN; i++) {
		out[2 * i] = hex[digest[i] >> 4];
		out[2 * i + 1] = hex[digest[i] & 0xf];
	}
	out[2 * HA_DIGEST_LEN] = '\0';
}

/* ------------------------------------------------------ canonical text */

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A JSON array of the names of the nodes whose flag is set, sorted. */
static void put_node_set(struct ha_sbuf *b, const struct ha_doc *d, const bool *set)
{
	const char *names[HA_NODES_MAX];
	size_t n = 0;

	for (size_t k = 0; k < d->nnodes; k++)
		if (set[k])
			names[n++] = d->nodes[k].name;
	qsort(names, n, sizeof(names[0]), str_cmp);
	ha_sb_puts(b, "[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			ha_sb_puts(b, ",");
		ha_sb_put_jstr(b, names[i], strlen(names[i]));
	}
	ha_sb_puts(b, "]");
}

/* A JSON object {dg: node} of the device groups whose entry is a node, sorted by dg. */
static void put_dg_map(struct ha_sbuf *b, const struct ha_doc *d, const int *map)
{
	const char *names[HA_DGS_MAX];
	size_t n = 0;

	for (size_t g = 0; g < d->ndgs; g++)
		if (map[g] >= 0)
			names[n++] = d->dgs[g].name;
	qsort(names, n, sizeof(names[0]), str_cmp);
	ha_sb_puts(b, "{");
	for (size_t i = 0; i < n; i++) {
		int g = ha_doc_find_dg(d, names[i]);

		if (i)
			ha_sb_puts(b, ",");
		ha_sb_put_jstr(b, names[i], strlen(names[i]));
		ha_sb_puts(b, ":");
		ha_sb_put_jstr(b, d->nodes[map[g]].name, strlen(d->nodes[map[g]].name));
	}
	ha_sb_puts(b, "}");
}

/*
 * {"drained":[names],"live":[names],"moving":{dg:previous owner},
 *  "owners":{dg:node}}: sorted, owned (moving) groups only
 */
static void put_runtime(struct ha_sbuf *b, const struct ha_doc *d)
{
	if (d->nnodes > HA_NODES_MAX || d->ndgs > HA_DGS_MAX) {
		b->err = -EINVAL;
		return;
	}
	ha_sb_puts(b, "{\"drained\":");
	put_node_set(b, d, d->drained);
	ha_sb_puts(b, ",\"live\":");
	put_node_set(b, d, d->live);
	ha_sb_puts(b, ",\"moving\":");
	put_dg_map(b, d, d->moving_from);
	ha_sb_puts(b, ",\"owners\":");
	put_dg_map(b, d, d->owner);
	ha_sb_puts(b, "}");
}

/* d->text and d->digest from everything else. */
static int doc_finish(struct ha_doc *d)
{
	struct ha_sbuf b;
	int rc;

	free(d->text);
	d->text = NULL;
	ha_sb_init(&b);
	/* the tokens' key only when there are tokens: a document without keeps its digest */
	if (d->tokens_text) {
		ha_sb_puts(&b, "{\"api_tokens\":");
		ha_sb_puts(&b, d->tokens_text);
		ha_sb_puts(&b, ",\"config\":");
	} else {
		ha_sb_puts(&b, "{\"config\":");
	}
	ha_sb_puts(&b, d->config_text);
	ha_sb_printf(&b, ",\"generation\":%" PRIu64 ",\"runtime\":", d->generation);
	put_runtime(&b, d);
	ha_sb_puts(&b, "}");
	d->text = ha_sb_take(&b, &d->text_len, &rc);
	if (!d->text)
		return rc;
	if (d->text_len > HA_DOC_MAX)
		return -EMSGSIZE;
	if (EVP_Digest(d->text, d->text_len, d->digest, NULL, EVP_sha256(), NULL) != 1)
		return -EIO;
	return 0;
}

char *ha_doc_config_json(const struct ha_doc *d)
{
	return d && d->config_text ? strdup(d->config_text) : NULL;
}

char *ha_doc_runtime_json(const struct ha_doc *d)
{
	struct ha_sbuf b;

	if (!d)
		return NULL;
	ha_sb_init(&b);
	put_runtime(&b, d);
	return ha_sb_take(&b, NULL, NULL);
}


/*
 * isergwd's message about node k's rendering, with its key path as it is in
 * the cluster configuration where there is one: isergwd's portals[i] are
 * nodes[k].portals[i], its top-level gateway keys are gateway.KEY, targets,
 * discovery_chap and device_groups (rendered in config order) keep their path.
 */
static void translate(const struct ha_doc *d, size_t k, const char *prefix, const char *msg,
		      char *err, size_t errlen)
{
	const char *name = d->nodes[k].name;
	size_t n = strspn(msg, "abcdefghijklmnopqrstuvwxyz_");
	char after = msg[n];
	bool path_end = after == '[' || after == '.' || after == ':';

	if (path_end && n == 7 && strncmp(msg, "portals", n) == 0 && after == '[' &&
	    strtoul(msg + 8, NULL, 10) >= d->nodes[k].nportals) {
		char *end;
		unsigned long i = strtoul(msg + 8, &end, 10);

		gw_errf(err, errlen, -EINVAL, "%snodes[%zu] (%s): %sfloating_portals[%lu%s", prefix,
			   k, name, prefix, i - d->nodes[k].nportals, end);
	} else if (path_end && n == 7 && strncmp(msg, "portals", n) == 0)
		gw_errf(err, errlen, -EINVAL, "%snodes[%zu] (%s): %snodes[%zu].%s", prefix, k, name,
			   prefix, k, msg);
	else if ((after == ':' || after == '.') && ha_gateway_key(msg, n))
		gw_errf(err, errlen, -EINVAL, "%snodes[%zu] (%s): %sgateway.%s", prefix, k, name,
			   prefix, msg);
	else if (path_end && ((n == 7 && strncmp(msg, "targets", n) == 0) ||
			      (n == 14 && strncmp(msg, "discovery_chap", n) == 0) ||
			      (n == 13 && strncmp(msg, "device_groups", n) == 0)))
		gw_errf(err, errlen, -EINVAL, "%snodes[%zu] (%s): %s%s", prefix, k, name, prefix,
			   msg);
	else
		gw_errf(err, errlen, -EINVAL, "%snodes[%zu] (%s): %s", prefix, k, name, msg);
}

/*
 * isergwd's own validator on every node's rendering. A document read
 * (prefix "config.": stored, or taken from the cluster) may be older than
 * the check that a store belongs to one LUN: it is kept, with a warning
 * (each isergwd leaves the second LUN out); a new configuration is refused.
 */
static int validate_nodes(const struct ha_doc *d, const char *prefix, char *err, size_t errlen)
{
	for (size_t k = 0; k < d->nnodes; k++) {
		struct gw_config *cfg = NULL;
		char msg[ERR_MAX];
		char *text = ha_doc_render_node(d, (int)k, err, errlen);
		int rc;

		if (!text)
			return -ENOMEM;
		rc = gw_config_load_string(text, &cfg, msg, sizeof(msg));
		free(text);
		if (rc == -ENOMEM)
			return gw_errf(err, errlen, rc, "out of memory");
		if (rc) {
			translate(d, k, prefix, msg, err, errlen);
			return -EINVAL;
		}
		/* the targets are every node's: their stores once */
		rc = k ? 0 : gw_config_check_stores(cfg, msg, sizeof(msg));
		gw_config_free(cfg);
		if (rc == -ENOMEM)
			return gw_errf(err, errlen, rc, "out of memory");
		if (rc && prefix[0]) {
			GW_WARN(HA_DOC_COMP, "generation %" PRIu64 " kept although %s; isergwd opens "
				"one of them: change the configuration", d->generation, msg);
		} else if (rc) {
			translate(d, k, prefix, msg, err, errlen);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * A document built from text made whole: isergwd's validator on every node
 * (key paths from prefix), then its canonical text and digest. An error
 * names the part (what); too_large is the reason when it exceeds HA_DOC_MAX.
 */
static int check_finish(struct ha_doc *d, const char *prefix, const char *what,
			const char *too_large, char *err, size_t errlen)
{
	char ebuf[64];
	int rc = validate_nodes(d, prefix, err, errlen);

	if (rc)
		return rc;
	rc = doc_finish(d);
	if (rc)
		gw_errf(err, errlen, rc, "%s: %s", what,
			rc == -EMSGSIZE ? too_large : errstr(rc, ebuf, sizeof(ebuf)));
	return rc;
}

/* ------------------------------------------------------------ building */

/*
 * A document of generation gen from the configuration text json, its runtime
 * carried over from base by name (base NULL: none owned, none drained).
 */
static int build_from_config(const struct ha_doc *base, uint64_t gen, const char *json,
			     struct ha_doc **out, char *err, size_t errlen)
{
	struct json_object *cfg;
	struct gw_vctx c;
	struct ha_doc *d;
	int rc;

	*out = NULL;
	gw_vctx_init(&c, err, errlen, "");
	rc = ha_json_parse(json, "config", &cfg, err, errlen);
	if (rc)
		return rc;
	d = ha_doc_alloc();
	if (!d) {
		rc = gw_errf(err, errlen, -ENOMEM, "out of memory");
		goto err_put_cfg;
	}
	rc = ha_config_parse(&c, cfg, false, d);
	if (rc)
		goto err_free_doc;
	if (alloc_runtime(d)) {
		rc = gw_errf(err, errlen, -ENOMEM, "out of memory");
		goto err_free_doc;
	}
	for (size_t g = 0; base && g < d->ndgs; g++) {
		int old = ha_doc_find_dg(base, d->dgs[g].name);

		if (old >= 0 && base->owner[old] >= 0)
			d->owner[g] = ha_doc_find_node(d, base->nodes[base->owner[old]].name);
		if (old >= 0 && base->moving_from[old] >= 0)
			d->moving_from[g] = ha_doc_find_node(d,
					base->nodes[base->moving_from[old]].name);
	}
	for (size_t k = 0; base && k < d->nnodes; k++) {
		int old = ha_doc_find_node(base, d->nodes[k].name);

		d->drained[k] = old >= 0 && base->drained[old];
		d->live[k] = old >= 0 && base->live[old];
	}
	/* the API tokens are no part of the configuration: they stay */
	if (base && base->tokens_text) {
		d->tokens_text = strdup(base->tokens_text);
		if (!d->tokens_text) {
			rc = gw_errf(err, errlen, -ENOMEM, "out of memory");
			goto err_free_doc;
		}
	}
	d->generation = gen;
	rc = check_finish(d, "", "config", "the document would be larger than 1 MiB", err, errlen);
	if (rc)
		goto err_free_doc;
	json_object_put(cfg);
	*out = d;
	return 0;

err_free_doc:
	ha_doc_free(d);
err_put_cfg:
	json_object_put(cfg);
	return rc;
}

int ha_config_check(const char *config_json, char *err, size_t errlen)
{
	struct ha_doc *d;
	int rc = build_from_config(NULL, 1, config_json, &d, err, errlen);

	ha_doc_free(d);
	return rc;
}

int ha_doc_with_config(const struct ha_doc *d, const char *config_json, struct ha_doc **out,
		       char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!d)
		return gw_errf(err, errlen, -EINVAL, "no document");
	if (d->generation == UINT64_MAX)
		return gw_errf(err, errlen, -EOVERFLOW, "generation: at its maximum");
	return build_from_config(d, d->generation + 1, config_json, out, err, errlen);
}

int ha_doc_config_equal(const struct ha_doc *d, const char *config_json, char *err, size_t errlen)
{
	struct json_object *cfg;
	char *canon;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!d || !d->config_text)
		return gw_errf(err, errlen, -EINVAL, "no document");
	rc = ha_json_parse(config_json, "config", &cfg, err, errlen);
	if (rc)
		return rc;
	canon = ha_json_canon(cfg, NULL, &rc);
	json_object_put(cfg);
	if (!canon)
		return rc == -EINVAL ? 0 : gw_errf(err, errlen, rc, "out of memory");
	rc = strcmp(canon, d->config_text) == 0;
	free(canon);
	return rc;
}

static int next_generation(const struct ha_doc *d, struct ha_doc **out);

int ha_doc_next_priv(const struct ha_doc *d, struct ha_doc **out)
{
	return next_generation(d, out);
}

int ha_doc_finish_priv(struct ha_doc *d)
{
	return doc_finish(d);
}

/* A copy of d of the next generation, before its change and doc_finish. */
static int next_generation(const struct ha_doc *d, struct ha_doc **out)
{
	int rc;

	*out = NULL;
	if (!d)
		return -EINVAL;
	if (d->generation == UINT64_MAX)
		return -EOVERFLOW;
	rc = doc_copy(d, out);
	if (rc)
		return rc;
	(*out)->generation = d->generation + 1;
	return 0;
}

static int finish_or_free(struct ha_doc *n, struct ha_doc **out)
{
	int rc = doc_finish(n);

	if (rc) {
		ha_doc_free(n);
		return rc;
	}
	*out = n;
	return 0;
}

int ha_doc_with_owners(const struct ha_doc *d, const int *owner, struct ha_doc **out)
{
	struct ha_doc *n;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!d || (d->ndgs && !owner))
		return -EINVAL;
	for (size_t g = 0; g < d->ndgs; g++)
		if (owner[g] < -1 || (owner[g] >= 0 && (size_t)owner[g] >= d->nnodes))
			return -EINVAL;
	rc = next_generation(d, &n);
	if (rc)
		return rc;
	if (d->ndgs)
		memcpy(n->owner, owner, d->ndgs * sizeof(*owner));
	n->delta_placement = true;
	return finish_or_free(n, out);
}

int ha_doc_with_drain(const struct ha_doc *d, int node, bool drained, struct ha_doc **out)
{
	struct ha_doc *n;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!d || node < 0 || (size_t)node >= d->nnodes)
		return -EINVAL;
	rc = next_generation(d, &n);
	if (rc)
		return rc;
	n->drained[node] = drained;
	n->delta_placement = true;      /* not rendered: it changes the ALUA states only */
	return finish_or_free(n, out);
}

int ha_doc_with_runtime(const struct ha_doc *d, const int *owner, const int *moving_from,
			const bool *live, struct ha_doc **out)
{
	struct ha_doc *n;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!d || (d->ndgs && (!owner || !moving_from)) || (d->nnodes && !live))
		return -EINVAL;
	for (size_t g = 0; g < d->ndgs; g++)
		if (owner[g] < -1 || (owner[g] >= 0 && (size_t)owner[g] >= d->nnodes) ||
		    moving_from[g] < -1 || (moving_from[g] >= 0 && (size_t)moving_from[g] >= d->nnodes))
			return -EINVAL;
	rc = next_generation(d, &n);
	if (rc)
		return rc;
	if (d->ndgs) {
		memcpy(n->owner, owner, d->ndgs * sizeof(*owner));
		memcpy(n->moving_from, moving_from, d->ndgs * sizeof(*moving_from));
	}
	/*
	 * the live set is rendered as fencing keys: the nodes whose liveness
	 * turned get or lose their own key (the whole configuration), the
	 * others' keys to fence go with their ALUA maps
	 */
	n->delta_placement = true;
	for (size_t k = 0; ha_doc_backend_fencing(d) && k < d->nnodes; k++)
		if (d->live[k] != live[k])
			n->delta_live |= 1u << k;
	if (d->nnodes)
		memcpy(n->live, live, d->nnodes * sizeof(*live));
	return finish_or_free(n, out);
}

int ha_doc_empty(struct ha_doc **out)
{
	struct ha_doc *d;

	if (!out)
		return -EINVAL;
	*out = NULL;
	d = ha_doc_alloc();
	if (!d)
		return -ENOMEM;
	d->config_text = strdup("{}");
	d->gateway_members = strdup("");
	d->targets_text = strdup("[]");
	if (!d->config_text || !d->gateway_members || !d->targets_text || alloc_runtime(d)) {
		ha_doc_free(d);
		return -ENOMEM;
	}
	return finish_or_free(d, out);
}

/* ------------------------------------------------------------- parsing */

/* {dg: node} into map[] (per dg), under key `key` of the runtime. */
static int parse_dg_map(struct gw_vctx *c, const char *key, struct json_object *obj,
			struct ha_doc *d, int *map)
{
	size_t old = gw_vpath_key(c, key);

	if (!json_object_is_type(obj, json_type_object))
		return gw_verr(c, "expected an object, got %s",
			       json_type_to_name(json_object_get_type(obj)));
	json_object_object_foreach(obj, dgname, v) {
		size_t at = gw_vpath_key(c, dgname);
		int g = ha_doc_find_dg(d, dgname), n = -1;
		const char *s;

		if (g < 0)
			return gw_verr(c, "not a device group of the cluster");
		if (!json_object_is_type(v, json_type_string))
			return gw_verr(c, "expected a string, got %s",
				       json_type_to_name(json_object_get_type(v)));
		s = json_object_get_string(v);
		if (strlen(s) != (size_t)json_object_get_string_len(v))
			return gw_verr(c, "contains a NUL character");
		if (s[0]) {
			n = ha_doc_find_node(d, s);
			if (n < 0)
				return gw_verr(c, "'%s' is not a node of the cluster", s);
		}
		map[g] = n;
		gw_vpath_pop(c, at);
	}
	gw_vpath_pop(c, old);
	return 0;
}

/* [node names] into set[] (per node), under key `key` of the runtime. */
static int parse_node_set(struct gw_vctx *c, const char *key, struct json_object *arr,
			  struct ha_doc *d, bool *set)
{
	size_t old = gw_vpath_key(c, key);

	if (!json_object_is_type(arr, json_type_array))
		return gw_verr(c, "expected an array, got %s",
			       json_type_to_name(json_object_get_type(arr)));
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);
		size_t at = gw_vpath_index(c, i);
		const char *s;
		int n;

		if (!json_object_is_type(v, json_type_string))
			return gw_verr(c, "expected a string, got %s",
				       json_type_to_name(json_object_get_type(v)));
		s = json_object_get_string(v);
		n = ha_doc_find_node(d, s);
		if (n < 0 || strlen(s) != (size_t)json_object_get_string_len(v))
			return gw_verr(c, "'%s' is not a node of the cluster", s);
		if (set[n])
			return gw_verr(c, "'%s' listed twice", s);
		set[n] = true;
		gw_vpath_pop(c, at);
	}
	gw_vpath_pop(c, old);
	return 0;
}

static int parse_runtime(struct gw_vctx *c, struct json_object *rt, struct ha_doc *d)
{
	static const char *const keys[] = { "owners", "drained", "live", "moving" };
	struct json_object *v;
	size_t old = gw_vpath_key(c, "runtime");
	int rc;

	rc = ha_vcheck_keys(c, rt, keys, sizeof(keys) / sizeof(keys[0]));
	if (rc)
		return rc;
	if (json_object_object_get_ex(rt, "owners", &v) &&
	    (rc = parse_dg_map(c, "owners", v, d, d->owner)))
		return rc;
	if (json_object_object_get_ex(rt, "moving", &v) &&
	    (rc = parse_dg_map(c, "moving", v, d, d->moving_from)))
		return rc;
	if (json_object_object_get_ex(rt, "drained", &v) &&
	    (rc = parse_node_set(c, "drained", v, d, d->drained)))
		return rc;
	if (json_object_object_get_ex(rt, "live", &v) &&
	    (rc = parse_node_set(c, "live", v, d, d->live)))
		return rc;
	gw_vpath_pop(c, old);
	return 0;
}

static int parse_generation(struct gw_vctx *c, struct json_object *root, struct ha_doc *d)
{
	struct json_object *v;

	gw_vpath_key(c, "generation");
	if (!json_object_object_get_ex(root, "generation", &v))
		return gw_verr(c, "missing");
	if (!json_object_is_type(v, json_type_int))
		return gw_verr(c, "expected an integer, got %s",
			       json_type_to_name(json_object_get_type(v)));
	if (json_object_get_int64(v) < 0)
		return gw_verr(c, "must not be negative");
	d->generation = json_object_get_uint64(v);
	gw_vpath_pop(c, 0);
	return 0;
}

int ha_doc_parse(const char *text, struct ha_doc **out, char *err, size_t errlen)
{
	static const char *const keys[] = { "generation", "config", "runtime", "api_tokens" };
	struct json_object *root, *cfg, *rt, *tok;
	struct gw_vctx c;
	struct ha_doc *d;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	gw_vctx_init(&c, err, errlen, "");
	rc = ha_json_parse(text, "document", &root, err, errlen);
	if (rc)
		return rc;
	d = ha_doc_alloc();
	if (!d) {
		rc = gw_errf(err, errlen, -ENOMEM, "out of memory");
		goto err_put_root;
	}
	if (!json_object_is_type(root, json_type_object)) {
		rc = gw_errf(err, errlen, -EINVAL, "document: expected an object, got %s",
				json_type_to_name(json_object_get_type(root)));
		goto err_free_doc;
	}
	rc = ha_vcheck_keys(&c, root, keys, sizeof(keys) / sizeof(keys[0]));
	if (rc)
		goto err_free_doc;
	rc = parse_generation(&c, root, d);
	if (rc)
		goto err_free_doc;
	if (!json_object_object_get_ex(root, "config", &cfg) ||
	    !json_object_object_get_ex(root, "runtime", &rt)) {
		gw_vpath_key(&c, json_object_object_get_ex(root, "config", NULL) ? "runtime" : "config");
		rc = gw_verr(&c, "missing");
		goto err_free_doc;
	}
	gw_vpath_key(&c, "config");
	rc = ha_config_parse(&c, cfg, true, d);
	if (rc)
		goto err_free_doc;
	gw_vpath_pop(&c, 0);
	if (alloc_runtime(d)) {
		rc = gw_errf(err, errlen, -ENOMEM, "out of memory");
		goto err_free_doc;
	}
	rc = parse_runtime(&c, rt, d);
	if (rc)
		goto err_free_doc;
	if (json_object_object_get_ex(root, "api_tokens", &tok)) {
		rc = ha_doc_tokens_parse(&c, tok, &d->tokens_text);
		if (rc)
			goto err_free_doc;
	}
	rc = check_finish(d, "config.", "document", "larger than 1 MiB once canonical", err, errlen);
	if (rc)
		goto err_free_doc;
	json_object_put(root);
	*out = d;
	return 0;

err_free_doc:
	ha_doc_free(d);
err_put_root:
	json_object_put(root);
	return rc;
}
