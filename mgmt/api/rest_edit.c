/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The REST writes to the cluster configuration (rest.h, docs/api.md):
 * targets, LUNs, ACLs, discovery CHAP, each checked by its schema and
 * applied to the configuration read; the reads of those resources, secrets
 * redacted; JSON merge patches.
 */
#include "rest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/names.h"
#include "rest_priv.h"

/* ------------------------------------------------------------ configuration */

int rest_config_parse(const char *config_json, json_object **out)
{
	json_object *o = json_tokener_parse(config_json && config_json[0] ? config_json : "{}");

	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return -EBADMSG;
	}
	*out = o;
	return 0;
}

/* "iscsi://user%secret@host/..." -> "iscsi://user@host/..." (malloc'd), or NULL: nothing to cut */
static char *redact_url(const char *s)
{
	const char *auth = s + strlen("iscsi://"), *at, *pct, *slash;
	char *out;

	if (strncmp(s, "iscsi://", strlen("iscsi://")))
		return NULL;
	slash = strchr(auth, '/');
	at = strchr(auth, '@');
	if (!at || (slash && slash < at))
		return NULL;
	pct = memchr(auth, '%', (size_t)(at - auth));
	if (!pct)
		return NULL;
	out = malloc(strlen(s) + 1);
	if (!out)
		return NULL;
	memcpy(out, s, (size_t)(pct - s));
	strcpy(out + (pct - s), at);
	return out;
}

static void redact_in(json_object *o)
{
	if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			redact_in(json_object_array_get_idx(o, i));
		return;
	}
	if (!json_object_is_type(o, json_type_object))
		return;
	json_object_object_del(o, "secret");
	json_object_object_foreach(o, key, v) {
		if (!strcmp(key, "path") && json_object_is_type(v, json_type_string)) {
			char *r = redact_url(json_object_get_string(v));

			if (r) {
				json_object_set_string(v, r);
				free(r);
			}
		} else {
			redact_in(v);
		}
	}
}

json_object *rest_redact(json_object *o)
{
	json_object *c = NULL;

	if (!o || json_object_deep_copy(o, &c, NULL))
		return NULL;
	redact_in(c);
	return c;
}

const char *rest_str_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

json_object *rest_arr_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}

static json_object *obj_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

/* the element of array a whose string key equals val, and its index */
json_object *rest_find_by(json_object *a, const char *key, const char *val, size_t *idx)
{
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *el = json_object_array_get_idx(a, i);
		const char *s = rest_str_of(el, key);

		if (s && !strcmp(s, val)) {
			if (idx)
				*idx = i;
			return el;
		}
	}
	return NULL;
}

/* A LUN's number: its "lun", or its index in the array (isergwd's default). */
static int64_t lun_number(json_object *l, size_t idx)
{
	json_object *v;

	if (json_object_object_get_ex(l, "lun", &v) && json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	return (int64_t)idx;
}

json_object *rest_find_lun(json_object *t, uint32_t lun, size_t *idx)
{
	json_object *a = rest_arr_of(t, "luns");

	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *el = json_object_array_get_idx(a, i);

		if (json_object_is_type(el, json_type_object) && lun_number(el, i) == (int64_t)lun) {
			if (idx)
				*idx = i;
			return el;
		}
	}
	return NULL;
}

static void keep_chap(json_object *cur, json_object *next, const char *key)
{
	json_object *c = obj_of(cur, key), *n = obj_of(next, key), *s;
	const char *cu, *nu;

	if (!c || !n || json_object_object_get_ex(n, "secret", NULL) ||
	    !json_object_object_get_ex(c, "secret", &s))
		return;
	cu = rest_str_of(c, "user");
	nu = rest_str_of(n, "user");
	if (!cu || !nu || strcmp(cu, nu))
		return;
	json_object_object_add(n, "secret", json_object_get(s));
}

void rest_keep_secrets(json_object *cur, json_object *next)
{
	json_object *nt = rest_arr_of(next, "targets");

	keep_chap(cur, next, "discovery_chap");
	for (size_t i = 0; nt && i < json_object_array_length(nt); i++) {
		json_object *t = json_object_array_get_idx(nt, i), *ct, *na, *nl;
		const char *iqn = rest_str_of(t, "iqn");

		if (!iqn || !(ct = rest_find_by(rest_arr_of(cur, "targets"), "iqn", iqn, NULL)))
			continue;
		keep_chap(ct, t, "chap");
		keep_chap(ct, t, "mutual_chap");
		na = rest_arr_of(t, "acls");
		for (size_t k = 0; na && k < json_object_array_length(na); k++) {
			json_object *acl = json_object_array_get_idx(na, k);
			const char *ini = rest_str_of(acl, "initiator");
			json_object *cacl = ini ? rest_find_by(rest_arr_of(ct, "acls"), "initiator", ini, NULL) :
					    NULL;

			if (cacl)
				keep_chap(cacl, acl, "chap");
		}
		nl = rest_arr_of(t, "luns");
		for (size_t k = 0; nl && k < json_object_array_length(nl); k++) {
			json_object *l = json_object_array_get_idx(nl, k), *cl;
			const char *np, *cp;
			char *r;

			if (!json_object_is_type(l, json_type_object))
				continue;
			cl = rest_find_lun(ct, (uint32_t)lun_number(l, k), NULL);
			np = rest_str_of(l, "path");
			cp = rest_str_of(cl, "path");
			if (!np || !cp || !(r = redact_url(cp)))
				continue;
			if (!strcmp(r, np))
				json_object_object_add(l, "path", json_object_new_string(cp));
			free(r);
		}
	}
}

json_object *rest_targets(json_object *cfg)
{
	json_object *a = rest_arr_of(cfg, "targets");
	json_object *items = a ? rest_redact(a) : json_object_new_array();

	return rest_list_of(items);
}

json_object *rest_target(json_object *cfg, const char *iqn)
{
	json_object *t = rest_find_by(rest_arr_of(cfg, "targets"), "iqn", iqn, NULL);

	return t ? rest_redact(t) : NULL;
}

json_object *rest_luns(json_object *cfg, const char *iqn)
{
	json_object *t = rest_find_by(rest_arr_of(cfg, "targets"), "iqn", iqn, NULL), *a, *items;

	if (!t)
		return NULL;
	a = rest_arr_of(t, "luns");
	items = json_object_new_array();
	/* every LUN with its number, given or implied */
	for (size_t i = 0; items && a && i < json_object_array_length(a); i++) {
		json_object *l = rest_redact(json_object_array_get_idx(a, i));

		if (!l)
			continue;
		if (!json_object_object_get_ex(l, "lun", NULL))
			json_object_object_add(l, "lun", json_object_new_int64((int64_t)i));
		json_object_array_add(items, l);
	}
	return rest_list_of(items);
}

json_object *rest_lun(json_object *cfg, const char *iqn, uint32_t lun)
{
	json_object *t = rest_find_by(rest_arr_of(cfg, "targets"), "iqn", iqn, NULL), *l;

	if (!t || !(l = rest_find_lun(t, lun, NULL)))
		return NULL;
	l = rest_redact(l);
	if (l && !json_object_object_get_ex(l, "lun", NULL))
		json_object_object_add(l, "lun", json_object_new_int64((int64_t)lun));
	return l;
}

/* the array cfg[key], made when absent */
json_object *rest_arr_make(json_object *cfg, const char *key)
{
	json_object *a = rest_arr_of(cfg, key);

	if (a)
		return a;
	a = json_object_new_array();
	if (a)
		json_object_object_add(cfg, key, a);
	return a;
}

/* A copy of body appended to the array key of parent (made when absent). */
static int append_copy(json_object *parent, const char *key, json_object *body,
		       struct rest_err *e)
{
	json_object *a = rest_arr_make(parent, key), *copy = NULL;

	if (!a || json_object_deep_copy(body, &copy, NULL) || json_object_array_add(a, copy)) {
		json_object_put(copy);
		return rest_fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	return 0;
}

int rest_target_create(json_object *cfg, json_object *body, char *iqn, size_t iqnlen,
		       struct rest_err *e)
{
	const char *name;
	int rc;

	rc = rest_check_obj(body, &gw_schema_target, "", e);
	if (rc)
		return rc;
	name = rest_str_of(body, "iqn");
	if (rest_find_by(rest_arr_of(cfg, "targets"), "iqn", name, NULL))
		return rest_fail(e, -EEXIST, 409, "iqn", "iqn: a target %s exists already", name);
	rc = append_copy(cfg, "targets", body, e);
	if (!rc)
		snprintf(iqn, iqnlen, "%s", name);
	return rc;
}

static json_object *target_or_404(json_object *cfg, const char *iqn, size_t *idx,
				  struct rest_err *e)
{
	json_object *t = rest_find_by(rest_arr_of(cfg, "targets"), "iqn", iqn, idx);

	if (!t)
		rest_fail(e, -ENOENT, 404, NULL, "no target %s", iqn);
	return t;
}

int rest_target_delete(json_object *cfg, const char *iqn, struct rest_err *e)
{
	size_t idx;

	if (!target_or_404(cfg, iqn, &idx, e))
		return -ENOENT;
	json_object_array_del_idx(rest_arr_of(cfg, "targets"), idx, 1);
	return 0;
}

/* Target iqn of cfg, when there is one (404) and body passes table t: NULL with *rc otherwise. */
static json_object *target_with(json_object *cfg, const char *iqn, json_object *body,
				const struct gw_ftable *t, int *rc, struct rest_err *e)
{
	json_object *tg = target_or_404(cfg, iqn, NULL, e);

	*rc = tg ? rest_check_obj(body, t, "", e) : -ENOENT;
	return *rc ? NULL : tg;
}

int rest_lun_create(json_object *cfg, const char *iqn, json_object *body, uint32_t *lun,
		    struct rest_err *e)
{
	json_object *t, *a, *copy = NULL, *v;
	uint32_t n = 0;
	int rc;

	t = target_with(cfg, iqn, body, &gw_schema_lun, &rc, e);
	if (!t)
		return rc;
	if (json_object_object_get_ex(body, "lun", &v)) {
		int64_t want = json_object_get_int64(v);
		char nb[48];

		if (want < 0 || want > REST_LUN_MAX)
			return rest_fail(e, -EINVAL, 422, "lun", "lun: %s is out of range (0..%u)",
				    rest_int_text(v, nb, sizeof(nb)), REST_LUN_MAX);
		n = (uint32_t)want;
		if (rest_find_lun(t, n, NULL))
			return rest_fail(e, -EEXIST, 409, "lun", "lun: LUN %u of %s exists already", n,
				    iqn);
	} else {
		while (n <= REST_LUN_MAX && rest_find_lun(t, n, NULL))
			n++;
		if (n > REST_LUN_MAX)
			return rest_fail(e, -ENOSPC, 409, "lun", "lun: %s has no free LUN number", iqn);
	}
	/*
	 * The LUNs already there keep the numbers they had: one without "lun"
	 * (its index) gets it written down before the array changes.
	 */
	a = rest_arr_make(t, "luns");
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *l = json_object_array_get_idx(a, i);

		if (json_object_is_type(l, json_type_object) &&
		    !json_object_object_get_ex(l, "lun", NULL))
			json_object_object_add(l, "lun", json_object_new_int64((int64_t)i));
	}
	if (!a || json_object_deep_copy(body, &copy, NULL))
		return rest_fail(e, -ENOMEM, 500, NULL, "out of memory");
	json_object_object_add(copy, "lun", json_object_new_int64(n));
	if (json_object_array_add(a, copy)) {
		json_object_put(copy);
		return rest_fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	*lun = n;
	return 0;
}

/*
 * A LUN grows online (isergwd extends its file on the reload, hosts get
 * CAPACITY DATA HAS CHANGED) but never shrinks: data past the new end would
 * be lost under the hosts' file systems. 0 (size unset either side) counts
 * as no size.
 */
static int lun_no_shrink(json_object *cur, json_object *next, struct rest_err *e)
{
	json_object *cv, *nv;
	uint64_t cb, nb;

	if (!json_object_object_get_ex(cur, "size", &cv) ||
	    !json_object_object_get_ex(next, "size", &nv))
		return 0;
	if (rest_size_parse(nv, &nb))
		return rest_fail(e, -EINVAL, 422, "size", "size: not a size (bytes, or a number with "
			    "K, M, G or T)");
	if (rest_size_parse(cv, &cb) || !nb || nb >= cb)
		return 0;
	return rest_fail(e, -EINVAL, 422, "size", "size: %" PRIu64 " bytes is less than %" PRIu64
		    ": a LUN grows online but never shrinks", nb, cb);
}

int rest_lun_patch(json_object *cfg, const char *iqn, uint32_t lun, json_object *patch,
		   struct rest_err *e)
{
	json_object *t = target_or_404(cfg, iqn, NULL, e), *l, *merged = NULL;
	size_t idx;
	int rc;

	if (!t)
		return -ENOENT;
	l = rest_find_lun(t, lun, &idx);
	if (!l)
		return rest_fail(e, -ENOENT, 404, NULL, "no LUN %u in %s", lun, iqn);
	/* RFC 7396 on a copy; the copy replaces the LUN once it passes */
	if (json_object_deep_copy(l, &merged, NULL))
		return rest_fail(e, -ENOMEM, 500, NULL, "out of memory");
	json_object_object_add(merged, "lun", json_object_new_int64(lun));
	json_object_object_foreach(patch, key, v) {
		if (!strcmp(key, "lun") && !(json_object_is_type(v, json_type_int) &&
					     json_object_get_int64(v) == (int64_t)lun)) {
			json_object_put(merged);
			return rest_fail(e, -EINVAL, 422, "lun", "lun: the number of a LUN cannot change "
				    "(delete it and create another)");
		}
		if (!v) {
			json_object_object_del(merged, key);
		} else {
			json_object *c = NULL;

			if (json_object_deep_copy(v, &c, NULL)) {
				json_object_put(merged);
				return rest_fail(e, -ENOMEM, 500, NULL, "out of memory");
			}
			json_object_object_add(merged, key, c);
		}
	}
	rc = rest_check_obj(merged, &gw_schema_lun, "", e);
	if (!rc)
		rc = lun_no_shrink(l, merged, e);
	if (rc) {
		json_object_put(merged);
		return rc;
	}
	json_object_array_put_idx(rest_arr_of(t, "luns"), idx, merged);
	return 0;
}

int rest_lun_delete(json_object *cfg, const char *iqn, uint32_t lun, struct rest_err *e)
{
	json_object *t = target_or_404(cfg, iqn, NULL, e), *a;
	size_t idx;

	if (!t)
		return -ENOENT;
	if (!rest_find_lun(t, lun, &idx))
		return rest_fail(e, -ENOENT, 404, NULL, "no LUN %u in %s", lun, iqn);
	a = rest_arr_of(t, "luns");
	/* the LUNs after it keep their numbers */
	for (size_t i = idx + 1; i < json_object_array_length(a); i++) {
		json_object *l = json_object_array_get_idx(a, i);

		if (json_object_is_type(l, json_type_object) &&
		    !json_object_object_get_ex(l, "lun", NULL))
			json_object_object_add(l, "lun", json_object_new_int64((int64_t)i));
	}
	json_object_array_del_idx(a, idx, 1);
	return 0;
}


int rest_lun_body(json_object *body, bool *has_lun, uint32_t *lun, struct rest_err *e)
{
	json_object *v;
	int rc = rest_check_obj(body, &gw_schema_lun, "", e);

	if (rc)
		return rc;
	*has_lun = json_object_object_get_ex(body, "lun", &v);
	*lun = 0;
	if (*has_lun) {
		int64_t want = json_object_get_int64(v);
		char nb[48];

		if (want < 0 || want > REST_LUN_MAX)
			return rest_fail(e, -EINVAL, 422, "lun", "lun: %s is out of range (0..%u)",
				    rest_int_text(v, nb, sizeof(nb)), REST_LUN_MAX);
		*lun = (uint32_t)want;
	}
	return 0;
}

/* ------------------------------------------------------------ merge patches */

/*
 * RFC 7396 on target (in place): objects merge recursively, null removes, any
 * other value replaces. 0 or -ENOMEM.
 */
int rest_merge_patch(json_object *target, json_object *patch)
{
	json_object_object_foreach(patch, key, v) {
		json_object *cur, *c = NULL;

		if (!v) {
			json_object_object_del(target, key);
			continue;
		}
		if (json_object_is_type(v, json_type_object) &&
		    json_object_object_get_ex(target, key, &cur) &&
		    json_object_is_type(cur, json_type_object)) {
			if (rest_merge_patch(cur, v))
				return -ENOMEM;
			continue;
		}
		if (json_object_is_type(v, json_type_object)) {
			/* a new object: its nulls drop out (RFC 7396 MergePatch({}, v)) */
			c = json_object_new_object();
			if (!c || rest_merge_patch(c, v)) {
				json_object_put(c);
				return -ENOMEM;
			}
		} else if (json_object_deep_copy(v, &c, NULL)) {
			return -ENOMEM;
		}
		json_object_object_add(target, key, c);
	}
	return 0;
}

int rest_patch_put(json_object *arr, size_t idx, json_object *cur, json_object *patch,
		   const struct gw_ftable *t, struct rest_err *e)
{
	json_object *merged = NULL;
	int rc;

	if (json_object_deep_copy(cur, &merged, NULL) || rest_merge_patch(merged, patch)) {
		json_object_put(merged);
		return rest_fail(e, -ENOMEM, 500, NULL, "out of memory");
	}
	rc = rest_check_obj(merged, t, "", e);
	if (rc) {
		json_object_put(merged);
		return rc;
	}
	json_object_array_put_idx(arr, idx, merged);
	return 0;
}

json_object *rest_lun_made(const char *iqn, json_object *body, uint32_t lun)
{
	json_object *cfg = json_object_new_object(), *targets = json_object_new_array();
	json_object *t = json_object_new_object(), *luns = json_object_new_array(), *l = NULL;

	if (!cfg || !targets || !t || !luns || json_object_deep_copy(body, &l, NULL))
		goto err;
	json_object_object_add(l, "lun", json_object_new_int64((int64_t)lun));
	json_object_array_add(luns, l);
	json_object_object_add(t, "iqn", json_object_new_string(iqn));
	json_object_object_add(t, "luns", luns);
	json_object_array_add(targets, t);
	json_object_object_add(cfg, "targets", targets);
	return cfg;
err:
	json_object_put(cfg);
	json_object_put(targets);
	json_object_put(t);
	json_object_put(luns);
	return NULL;
}

void rest_lun_error_prefix(const char *error, char *buf, size_t len)
{
	char path[256];
	const char *l, *end;

	buf[0] = '\0';
	rest_key_path(error ? error : "", path, sizeof(path));
	if (strncmp(path, "targets[", 8) || !(l = strstr(path, "].luns[")) ||
	    !(end = strchr(l + 7, ']')) || (size_t)(end + 1 - path) >= len)
		return;
	memcpy(buf, path, (size_t)(end + 1 - path));
	buf[end + 1 - path] = '\0';
}

/* ------------------------------------------------------------ targets, ACLs */

int rest_target_patch(json_object *cfg, const char *iqn, json_object *patch, struct rest_err *e)
{
	json_object *t = target_or_404(cfg, iqn, NULL, e), *v;
	size_t idx;
	int rc;

	if (!t)
		return -ENOENT;
	rest_find_by(rest_arr_of(cfg, "targets"), "iqn", iqn, &idx);
	if (json_object_object_get_ex(patch, "iqn", &v) &&
	    !(json_object_is_type(v, json_type_string) && !strcmp(json_object_get_string(v), iqn)))
		return rest_fail(e, -EINVAL, 422, "iqn", "iqn: the name of a target cannot change "
			    "(create another)");
	if (json_object_object_get_ex(patch, "luns", NULL))
		return rest_fail(e, -EINVAL, 422, "luns", "luns: changed through %s/targets/%s/luns",
			    REST_PREFIX, iqn);
	if (json_object_object_get_ex(patch, "acls", NULL))
		return rest_fail(e, -EINVAL, 422, "acls", "acls: changed through %s/targets/%s/acls",
			    REST_PREFIX, iqn);
	/* the types of the patch first: its nulls are not values of the target */
	json_object_object_foreach(patch, key, pv) {
		const struct gw_field *d = gw_field_find(&gw_schema_target, key, strlen(key));
		char p[256];

		snprintf(p, sizeof(p), "%s", key);
		if (!d)
			return rest_fail(e, -EINVAL, 422, p, "%s: unknown field", p);
		if (pv && d->type == GW_FT_OBJECT && json_object_is_type(pv, json_type_object)) {
			/* a CHAP object of a patch may name a null (remove) */
			json_object_object_foreach(pv, ck, cv) {
				const struct gw_field *cd = gw_field_find(d->sub, ck, strlen(ck));
				char cp[256];

				snprintf(cp, sizeof(cp), "%s.%s", key, ck);
				if (!cd)
					return rest_fail(e, -EINVAL, 422, cp, "%s: unknown field", cp);
				if (cv && (rc = rest_check_field(cv, cd, cp, e)))
					return rc;
			}
		} else if (pv && (rc = rest_check_field(pv, d, p, e))) {
			return rc;
		}
	}
	return rest_patch_put(rest_arr_of(cfg, "targets"), idx, t, patch, &gw_schema_target, e);
}

json_object *rest_acls(json_object *cfg, const char *iqn)
{
	json_object *t = rest_find_by(rest_arr_of(cfg, "targets"), "iqn", iqn, NULL), *a;

	if (!t)
		return NULL;
	a = rest_arr_of(t, "acls");
	return rest_list_of(a ? rest_redact(a) : json_object_new_array());
}

json_object *rest_acl(json_object *cfg, const char *iqn, const char *initiator)
{
	json_object *t = rest_find_by(rest_arr_of(cfg, "targets"), "iqn", iqn, NULL);
	json_object *acl = t ? rest_find_by(rest_arr_of(t, "acls"), "initiator", initiator, NULL) : NULL;

	return acl ? rest_redact(acl) : NULL;
}

int rest_acl_create(json_object *cfg, const char *iqn, json_object *body, char *ini,
		    size_t inilen, struct rest_err *e)
{
	const char *name;
	json_object *t;
	int rc;

	t = target_with(cfg, iqn, body, &gw_schema_acl, &rc, e);
	if (!t)
		return rc;
	name = rest_str_of(body, "initiator");
	if (rest_find_by(rest_arr_of(t, "acls"), "initiator", name, NULL))
		return rest_fail(e, -EEXIST, 409, "initiator", "initiator: %s has an ACL in %s already",
			    name, iqn);
	rc = append_copy(t, "acls", body, e);
	if (!rc)
		snprintf(ini, inilen, "%s", name);
	return rc;
}

static json_object *acl_or_404(json_object *cfg, const char *iqn, const char *initiator,
			       json_object **t, size_t *idx, struct rest_err *e)
{
	json_object *acl;

	*t = target_or_404(cfg, iqn, NULL, e);
	if (!*t)
		return NULL;
	acl = rest_find_by(rest_arr_of(*t, "acls"), "initiator", initiator, idx);
	if (!acl)
		rest_fail(e, -ENOENT, 404, NULL, "no ACL for %s in %s", initiator, iqn);
	return acl;
}

int rest_acl_patch(json_object *cfg, const char *iqn, const char *initiator,
		   json_object *patch, struct rest_err *e)
{
	json_object *t, *acl = NULL, *v;
	size_t idx;

	acl = acl_or_404(cfg, iqn, initiator, &t, &idx, e);
	if (!acl)
		return -ENOENT;
	if (json_object_object_get_ex(patch, "initiator", &v) &&
	    !(json_object_is_type(v, json_type_string) &&
	      !strcmp(json_object_get_string(v), initiator)))
		return rest_fail(e, -EINVAL, 422, "initiator", "initiator: the initiator of an ACL "
			    "cannot change (delete it and create another)");
	json_object_object_foreach(patch, key, pv) {
		if (strcmp(key, "initiator") && strcmp(key, "chap"))
			return rest_fail(e, -EINVAL, 422, key, "%s: unknown field", key);
		if (pv && !strcmp(key, "chap") && !json_object_is_type(pv, json_type_object))
			return rest_fail(e, -EINVAL, 422, key, "chap: expected an object, got %s",
				    rest_tname(pv));
	}
	return rest_patch_put(rest_arr_of(t, "acls"), idx, acl, patch, &gw_schema_acl, e);
}

int rest_acl_delete(json_object *cfg, const char *iqn, const char *initiator,
		    struct rest_err *e)
{
	json_object *t;
	size_t idx;

	if (!acl_or_404(cfg, iqn, initiator, &t, &idx, e))
		return -ENOENT;
	json_object_array_del_idx(rest_arr_of(t, "acls"), idx, 1);
	return 0;
}

/* ------------------------------------------------------------ discovery CHAP */

json_object *rest_discovery_chap(json_object *cfg)
{
	json_object *c = obj_of(cfg, "discovery_chap");

	return c ? rest_redact(c) : json_object_new_object();
}

int rest_discovery_chap_put(json_object *cfg, json_object *body, struct rest_err *e)
{
	json_object *cur = obj_of(cfg, "discovery_chap"), *copy = NULL, *s;
	const char *u = rest_str_of(body, "user"), *cu = rest_str_of(cur, "user");
	int rc;

	rc = rest_check_obj(body, &gw_schema_chap, "", e);
	if (rc)
		return rc;
	if (!u || !u[0])
		return rest_fail(e, -EINVAL, 422, "user", "user: required (DELETE removes discovery "
			    "CHAP)");
	if (json_object_deep_copy(body, &copy, NULL))
		return rest_fail(e, -ENOMEM, 500, NULL, "out of memory");
	/* the same user without a secret: the stored secret stays */
	if (!json_object_object_get_ex(copy, "secret", NULL)) {
		if (!cu || strcmp(cu, u) || !json_object_object_get_ex(cur, "secret", &s)) {
			json_object_put(copy);
			return rest_fail(e, -EINVAL, 422, "secret", "secret: required for a new user");
		}
		json_object_object_add(copy, "secret", json_object_get(s));
	}
	json_object_object_add(cfg, "discovery_chap", copy);
	return 0;
}

int rest_discovery_chap_delete(json_object *cfg, struct rest_err *e)
{
	if (!obj_of(cfg, "discovery_chap"))
		return rest_fail(e, -ENOENT, 404, NULL, "discovery CHAP is not set");
	json_object_object_del(cfg, "discovery_chap");
	return 0;
}
