/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's tokens in the cluster document (doc.h, docs/api.md, Cluster
 * tokens): the "api_tokens" object, checked whenever it is read (a stored or
 * transmitted document) or changed (a TokenChange delivered by the group),
 * with the token file's own rules for names and hashes (mgmt/api/auth.c).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "doc_priv.h"

_Static_assert(sizeof(((struct ha_token *)0)->name) == API_TOKEN_NAME_MAX + 1, "token name size");
_Static_assert(sizeof(((struct ha_token *)0)->hash) >= API_TOKEN_HASH_STR_MAX, "token hash size");

int ha_token_check(const char *name, const char *role, const char *hash, char *err,
		   size_t errlen)
{
	uint8_t salt[API_TOKEN_SALT_BYTES], h[API_TOKEN_HASH_BYTES];
	enum api_role r;

	if (!api_token_name_ok(name))
		return gw_errf(err, errlen, -EINVAL, "token name: not 1..%u of A-Z a-z 0-9 . _ - "
				  "(starting with a letter or digit)", API_TOKEN_NAME_MAX);
	if (api_role_parse(role, &r))
		return gw_errf(err, errlen, -EINVAL, "token %s: role: neither admin nor read-only",
				  name);
	if (api_token_hash_parse(hash, strlen(hash), salt, h))
		return gw_errf(err, errlen, -EINVAL, "token %s: hash: not sha256:SALT:HASH with 32 "
				  "and 64 hex digits", name);
	return 0;
}

/* One token's object {"created":N,"hash":"...","role":"..."} at the path of c. */
static int token_parse(struct gw_vctx *c, const char *name, struct json_object *o)
{
	static const char *const keys[] = { "created", "hash", "role" };
	struct json_object *cr, *h, *r;
	char why[160];
	int rc;

	rc = ha_vcheck_keys(c, o, keys, sizeof(keys) / sizeof(keys[0]));
	if (rc)
		return rc;
	if (!json_object_object_get_ex(o, "created", &cr) || !json_object_is_type(cr, json_type_int) ||
	    json_object_get_int64(cr) < 0)
		return gw_verr(c, "created: expected seconds since the epoch");
	if (!json_object_object_get_ex(o, "hash", &h) || !json_object_is_type(h, json_type_string) ||
	    !json_object_object_get_ex(o, "role", &r) || !json_object_is_type(r, json_type_string))
		return gw_verr(c, "expected the strings hash and role");
	if (strlen(json_object_get_string(h)) != (size_t)json_object_get_string_len(h) ||
	    strlen(json_object_get_string(r)) != (size_t)json_object_get_string_len(r))
		return gw_verr(c, "contains a NUL character");
	if (ha_token_check(name, json_object_get_string(r), json_object_get_string(h), why,
			   sizeof(why)))
		return gw_verr(c, "%s", why);
	return 0;
}

int ha_doc_tokens_parse(struct gw_vctx *c, struct json_object *obj, char **canon)
{
	size_t old = gw_vpath_key(c, "api_tokens"), n = 0;
	int rc = 0;

	*canon = NULL;
	if (!json_object_is_type(obj, json_type_object))
		return gw_verr(c, "expected an object, got %s",
			       json_type_to_name(json_object_get_type(obj)));
	json_object_object_foreach(obj, name, v) {
		size_t at = gw_vpath_key(c, name);

		if (++n > HA_TOKENS_MAX)
			return gw_verr(c, "more than %u tokens", HA_TOKENS_MAX);
		if (!api_token_name_ok(name))
			return gw_verr(c, "not a token name (1..%u of A-Z a-z 0-9 . _ -, starting "
				       "with a letter or digit)", API_TOKEN_NAME_MAX);
		rc = token_parse(c, name, v);
		if (rc)
			return rc;
		gw_vpath_pop(c, at);
	}
	gw_vpath_pop(c, old);
	if (!n)
		return 0;
	*canon = ha_json_canon(obj, NULL, &rc);
	if (!*canon)
		return gw_errf(c->err, c->errlen, rc ? rc : -ENOMEM, "api_tokens: out of memory");
	return 0;
}

/* d's tokens as a JSON object (a new empty one when there are none); NULL: no memory. */
static struct json_object *tokens_obj(const struct ha_doc *d)
{
	if (!d->tokens_text)
		return json_object_new_object();
	return json_tokener_parse(d->tokens_text);
}

bool ha_doc_has_token(const struct ha_doc *d, const char *name)
{
	struct json_object *o = d ? tokens_obj(d) : NULL;
	bool has = o && json_object_object_get_ex(o, name, NULL);

	json_object_put(o);
	return has;
}

int ha_doc_with_token(const struct ha_doc *d, const char *name, const char *role,
		      const char *hash, uint64_t created, struct ha_doc **out, char *err,
		      size_t errlen)
{
	bool add = role && role[0];
	struct json_object *o, *t;
	struct ha_doc *n = NULL;
	char *text = NULL;
	int rc;

	*out = NULL;
	if (!d || !name)
		return -EINVAL;
	if (add && (rc = ha_token_check(name, role, hash ? hash : "", err, errlen)))
		return rc;
	if (!add && !api_token_name_ok(name))
		return gw_errf(err, errlen, -EINVAL, "token name: not 1..%u of A-Z a-z 0-9 . _ - "
				  "(starting with a letter or digit)", API_TOKEN_NAME_MAX);
	o = tokens_obj(d);
	if (!o)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	if (add) {
		if (json_object_object_get_ex(o, name, NULL)) {
			rc = gw_errf(err, errlen, -EEXIST, "a token named %s exists (revoke it "
					"first)", name);
			goto out_put;
		}
		if ((size_t)json_object_object_length(o) >= HA_TOKENS_MAX) {
			rc = gw_errf(err, errlen, -ENOSPC, "the cluster has %u tokens already",
					HA_TOKENS_MAX);
			goto out_put;
		}
		t = json_object_new_object();
		if (!t || json_object_object_add(t, "created", json_object_new_int64((int64_t)created)) ||
		    json_object_object_add(t, "hash", json_object_new_string(hash)) ||
		    json_object_object_add(t, "role", json_object_new_string(role)) ||
		    json_object_object_add(o, name, t)) {
			json_object_put(t);
			rc = gw_errf(err, errlen, -ENOMEM, "out of memory");
			goto out_put;
		}
	} else {
		if (!json_object_object_get_ex(o, name, NULL)) {
			rc = gw_errf(err, errlen, -ENOENT, "no token named %s in the cluster", name);
			goto out_put;
		}
		json_object_object_del(o, name);
	}
	if (json_object_object_length(o)) {
		text = ha_json_canon(o, NULL, &rc);
		if (!text) {
			rc = gw_errf(err, errlen, rc ? rc : -ENOMEM, "out of memory");
			goto out_put;
		}
	}
	rc = ha_doc_next_priv(d, &n);
	if (rc) {
		gw_errf(err, errlen, rc, "cannot make the next generation: %s", strerror(-rc));
		goto out_text;
	}
	free(n->tokens_text);
	n->tokens_text = text;
	text = NULL;
	rc = ha_doc_finish_priv(n);
	if (rc) {
		gw_errf(err, errlen, rc, "%s", rc == -EMSGSIZE ?
			   "the document would be larger than 1 MiB" : strerror(-rc));
		ha_doc_free(n);
		goto out_put;
	}
	*out = n;
out_text:
	free(text);
out_put:
	json_object_put(o);
	return rc;
}

static int token_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ha_token *)a)->name, ((const struct ha_token *)b)->name);
}

int ha_doc_tokens(const struct ha_doc *d, struct ha_token **out, size_t *n)
{
	struct json_object *o;
	struct ha_token *v;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (!d->tokens_text)
		return 0;
	o = tokens_obj(d);
	if (!o)
		return -ENOMEM;
	v = calloc((size_t)json_object_object_length(o) + 1, sizeof(*v));
	if (!v) {
		json_object_put(o);
		return -ENOMEM;
	}
	/* checked when the document was made: names, roles and hashes fit */
	json_object_object_foreach(o, name, t) {
		struct json_object *x;

		snprintf(v[k].name, sizeof(v[k].name), "%s", name);
		if (json_object_object_get_ex(t, "role", &x))
			snprintf(v[k].role, sizeof(v[k].role), "%s", json_object_get_string(x));
		if (json_object_object_get_ex(t, "hash", &x))
			snprintf(v[k].hash, sizeof(v[k].hash), "%s", json_object_get_string(x));
		if (json_object_object_get_ex(t, "created", &x))
			v[k].created = (uint64_t)json_object_get_int64(x);
		k++;
	}
	json_object_put(o);
	qsort(v, k, sizeof(*v), token_cmp);
	*out = v;
	*n = k;
	return 0;
}
