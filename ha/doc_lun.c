/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One LUN added to or removed from a target of the cluster document without
 * going through the whole configuration (doc.h, ha_doc_with_lun): the
 * document keeps its configuration as canonical text, so the change is made
 * in that text, next to the target's other LUNs, and only the LUN itself is
 * parsed and validated. Canonical text (docs/ha-config.md) has no
 * whitespace, keys sorted bytewise, strings escaped only where JSON requires:
 * a short walker over it finds a target's members and its LUNs' numbers.
 * The result is the text that canonicalising the whole changed configuration
 * would give (unit.test_ha_doc checks both ways).
 */
#include "doc_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

#define LUN_MAX 16384u                  /* isergwd's LUN numbers: 0..16383 */

/* ------------------------------------------------------------ the walker */

/* Past the string starting at s[i] ('"'); strchr finds the quotes (most of the text is strings). */
static size_t skip_str(const char *s, size_t i)
{
	const char *q = s + i + 1;

	for (;;) {
		size_t bs = 0;

		q = strchr(q, '"');
		if (!q)
			return i + 1 + strlen(s + i + 1);
		while (q - bs > s + i + 1 && q[-(ptrdiff_t)bs - 1] == '\\')
			bs++;
		if (!(bs & 1))
			return (size_t)(q - s) + 1;
		q++;
	}
}

/* Past the value starting at s[i]. */
static size_t skip_val(const char *s, size_t i)
{
	int depth = 0;

	if (s[i] == '"')
		return skip_str(s, i);
	if (s[i] != '{' && s[i] != '[') {
		while (s[i] && s[i] != ',' && s[i] != '}' && s[i] != ']')
			i++;
		return i;
	}
	for (;;) {
		char c = s[i];

		if (!c)
			return i;
		if (c == '"') {
			i = skip_str(s, i);
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return i + 1;
		i++;
	}
}

/* Where the next element (or member) starts, the one before ending at i. */
static size_t past_comma(const char *s, size_t i)
{
	return s[i] == ',' ? i + 1 : i;
}

struct member {
	size_t key, key_end;                    /* the key's text, quotes included */
	size_t val, val_end;
};

/*
 * The next member of the object whose members start at *i; false at its end
 * (*i then at the '}') or on text that is not canonical.
 */
static bool next_member(const char *s, size_t *i, struct member *m)
{
	*i = past_comma(s, *i);
	if (s[*i] != '"')
		return false;
	m->key = *i;
	m->key_end = skip_str(s, *i);
	if (s[m->key_end] != ':')
		return false;
	m->val = m->key_end + 1;
	m->val_end = skip_val(s, m->val);
	*i = m->val_end;
	return true;
}

static bool key_is(const char *s, const struct member *m, const char *key)
{
	size_t n = strlen(key);

	return m->key_end - m->key == n + 2 && !memcmp(s + m->key + 1, key, n);
}

/* Where target iqn is in the targets array text s. */
struct tpos {
	size_t index;                           /* in targets[] */
	size_t obj, obj_end;                    /* the target object */
	bool has_luns;
	size_t luns, luns_end;                  /* its "luns" array */
	size_t luns_at;                         /* without one: where "luns" goes */
};

static int find_target(const char *s, const char *iqn, struct tpos *t, char *err, size_t errlen)
{
	struct ha_sbuf want;
	size_t i = 1, wl;
	char *w;
	int rc;

	ha_sb_init(&want);
	ha_sb_put_jstr(&want, iqn, strlen(iqn));
	w = ha_sb_take(&want, &wl, &rc);
	if (!w)
		return gw_errf(err, errlen, rc, "out of memory");
	rc = gw_errf(err, errlen, -ENOENT, "no target %s", iqn);
	if (s[0] != '[')
		goto out;
	for (t->index = 0; s[i] == '{'; t->index++) {
		struct member m;
		size_t j = i + 1;
		bool match = false;

		t->obj = i;
		t->has_luns = false;
		t->luns_at = 0;
		while (next_member(s, &j, &m)) {
			if (key_is(s, &m, "iqn"))
				match = m.val_end - m.val == wl && !memcmp(s + m.val, w, wl);
			if (key_is(s, &m, "luns")) {
				t->has_luns = true;
				t->luns = m.val;
				t->luns_end = m.val_end;
			}
			/* keys are sorted: "luns" goes before the first key after it */
			if (!t->luns_at && strncmp(s + m.key + 1, "luns\"", 5) > 0 &&
			    !key_is(s, &m, "luns"))
				t->luns_at = m.key;
		}
		if (s[j] != '}') {
			rc = gw_errf(err, errlen, -EINVAL, "targets[%zu]: not canonical text",
					t->index);
			goto out;
		}
		if (!t->luns_at)
			t->luns_at = j;
		t->obj_end = j + 1;
		if (match) {
			rc = 0;
			goto out;
		}
		i = past_comma(s, j + 1);
	}
out:
	free(w);
	return rc;
}

/* A LUN's place in the array text s[a..a_end): its index and span (lun found), the count. */
struct lpos {
	bool found;
	size_t index, el, el_end;
	size_t count;
};

static int find_lun(const char *s, size_t a, uint32_t lun, struct lpos *l, const struct tpos *t,
		    bool *used, char *err, size_t errlen)
{
	size_t i = a + 1;

	memset(l, 0, sizeof(*l));
	for (; s[i] == '{'; l->count++) {
		/*
		 * A LUN object is flat (isergwd refuses any other key), and in
		 * canonical text a quote inside a string is escaped: "lun": is
		 * its key, nothing else.
		 */
		size_t j = skip_val(s, i);
		const char *k = memmem(s + i, j - i, "\"lun\":", 6);
		char *end;
		unsigned long v;

		if (j <= i + 1 || s[j - 1] != '}')
			return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu]: not canonical "
					  "text", t->index, l->count);
		if (!k)
			return gw_errf(err, errlen, -EOPNOTSUPP, "targets[%zu].luns[%zu]: no \"lun\" "
					  "(numbered by its place): change the whole configuration",
					  t->index, l->count);
		v = strtoul(k + 6, &end, 10);
		if (end == k + 6 || (*end != ',' && *end != '}'))
			return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].lun: not a "
					  "number", t->index, l->count);
		if (used && v < LUN_MAX)
			used[v] = true;
		if (v == lun && !l->found) {
			l->found = true;
			l->index = l->count;
			l->el = i;
			l->el_end = j;
		}
		i = past_comma(s, j);
	}
	if (s[i] != ']')
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns: not canonical text",
				  t->index);
	return 0;
}

/*
 * The JSON string s[i..end) of canonical text (escapes only where JSON
 * requires them, \u00XX for control bytes) into out; false if it does not
 * fit or is not such a string.
 */
static bool jstr_decode(const char *s, size_t i, size_t end, char *out, size_t len)
{
	size_t o = 0;

	if (end < i + 2 || s[i] != '"' || s[end - 1] != '"')
		return false;
	for (i++, end--; i < end; i++) {
		char ch = s[i];

		if (ch == '\\' && ++i < end) {
			switch (s[i]) {
			case 'b': ch = '\b'; break;
			case 'f': ch = '\f'; break;
			case 'n': ch = '\n'; break;
			case 'r': ch = '\r'; break;
			case 't': ch = '\t'; break;
			case 'u': {
				char hex[5] = "";
				char *hend;
				unsigned long v;

				if (i + 4 >= end)
					return false;
				memcpy(hex, s + i + 1, 4);
				v = strtoul(hex, &hend, 16);
				if (*hend || v > 0xff)
					return false;
				ch = (char)v;
				i += 4;
				break;
			}
			default: ch = s[i]; break;
			}
		}
		if (o + 1 >= len)
			return false;
		out[o++] = ch;
	}
	out[o] = '\0';
	return true;
}

/*
 * A LUN added (the path of LUN lun of iqn, targets[t->index].luns[li]) on the
 * backing store of a LUN in the targets array text s: refused naming both,
 * by util/config.c's key and message, as isergwd's validator refuses it in a
 * whole configuration.
 */
static int store_taken(const char *s, const struct tpos *t, size_t li, const char *iqn,
		       uint32_t lun, const char *path, char *err, size_t errlen)
{
	char *key = malloc(3 * GW_STORE_KEY_MAX), *other, *name;
	char what[96];
	size_t i = 1;
	int rc = 0;

	if (!key)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	other = key + GW_STORE_KEY_MAX;
	name = other + GW_STORE_KEY_MAX;
	if (gw_store_key(path, key, GW_STORE_KEY_MAX) || s[0] != '[')
		goto out;
	while (!rc && s[i] == '{') {
		struct member m;
		size_t j = i + 1, luns = 0, tiqn = 0, tiqn_end = 0;

		while (next_member(s, &j, &m)) {
			if (key_is(s, &m, "iqn")) {
				tiqn = m.val;
				tiqn_end = m.val_end;
			} else if (key_is(s, &m, "luns") && s[m.val] == '[') {
				luns = m.val + 1;
			}
		}
		for (size_t a = luns; luns && !rc && s[a] == '{'; ) {
			size_t k = a + 1, b = skip_val(s, a);
			unsigned long n = 0;
			bool same = false;

			while (next_member(s, &k, &m)) {
				if (key_is(s, &m, "lun"))
					n = strtoul(s + m.val, NULL, 10);
				else if (key_is(s, &m, "path"))
					same = jstr_decode(s, m.val, m.val_end, name, GW_STORE_KEY_MAX) &&
					       !gw_store_key(name, other, GW_STORE_KEY_MAX) &&
					       !strcmp(key, other);
			}
			if (same) {
				snprintf(what, sizeof(what), "targets[%zu].luns[%zu].path", t->index, li);
				if (!jstr_decode(s, tiqn, tiqn_end, name, GW_STORE_KEY_MAX))
					snprintf(name, GW_STORE_KEY_MAX, "?");
				rc = gw_store_conflict(err, errlen, what, iqn, lun, name, (uint32_t)n,
						       key);
			}
			a = past_comma(s, b);
		}
		i = past_comma(s, j + 1);
	}
out:
	free(key);
	return rc;
}

/* ------------------------------------------------------------ the LUN */

/* The LUN object's canonical text with "lun" = lun, checked as a whole configuration would. */
static char *lun_canon(const struct ha_doc *d, const char *iqn, const struct tpos *t, size_t li,
		       uint32_t lun, const char *json, char *err, size_t errlen)
{
	struct json_object *obj, *v;
	struct gw_lun_cfg *lc = NULL;
	const char *dg = "default";
	char *canon = NULL;
	int rc;

	rc = ha_json_parse(json, "lun", &obj, err, errlen);
	if (rc)
		return NULL;
	if (!json_object_is_type(obj, json_type_object)) {
		gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu]: expected an object, got %s",
			   t->index, li, json_type_to_name(json_object_get_type(obj)));
		goto out;
	}
	if (json_object_object_get_ex(obj, "lun", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) != (int64_t)lun) {
			gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].lun: must be %u",
				   t->index, li, lun);
			goto out;
		}
	} else if (json_object_object_add(obj, "lun", json_object_new_int64(lun))) {
		gw_errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	if (json_object_object_get_ex(obj, "device_group", &v)) {
		if (!json_object_is_type(v, json_type_string)) {
			gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].device_group: expected "
				   "a string", t->index, li);
			goto out;
		}
		dg = json_object_get_string(v);
	}
	if (ha_doc_find_dg(d, dg) < 0) {
		gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].device_group: '%s' is not "
			   "a device group of the cluster", t->index, li, dg);
		goto out;
	}
	/* isergwd's own validator, on this LUN */
	lc = malloc(sizeof(*lc));
	if (!lc) {
		gw_errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	if (gw_lun_parse(obj, iqn, t->index, li, lc, err, errlen) ||
	    store_taken(d->targets_text ? d->targets_text : "[]", t, li, iqn, lun, lc->path, err,
			errlen))
		goto out;
	canon = ha_json_canon(obj, NULL, &rc);
	if (!canon)
		gw_errf(err, errlen, rc, rc == -EINVAL ? "targets[%zu].luns[%zu]: a number that "
			   "is not an integer" : "out of memory", t->index, li);
out:
	free(lc);
	json_object_put(obj);
	return canon;
}

/* ------------------------------------------------------------ changes */


/* Where the change goes, and the LUN's canonical text (add): what both the check and the change need. */
/*
 * What a LUN added to a target leaves for the next one (ha_doc's lun_idx):
 * where its LUNs end and which numbers they use, so that LUNs added one
 * after the other to one target do not walk over all of them each time.
 */
struct ha_lun_idx {
	char *iqn;
	size_t tindex;                          /* the target's index in targets[] */
	size_t luns_end;                        /* just past its "luns" array's ']' */
	size_t count;
	uint8_t used[LUN_MAX / 8];
};

void ha_doc_lun_idx_free(struct ha_lun_idx *x)
{
	if (x)
		free(x->iqn);
	free(x);
}

static bool idx_used(const struct ha_lun_idx *x, uint32_t lun)
{
	return lun < LUN_MAX && (x->used[lun / 8] >> (lun % 8) & 1);
}

/*
 * Where the change goes, and the LUN's canonical text (add): what both the
 * check and the change need. *used (may be NULL): the numbers in use, when
 * the LUNs were walked (not when d's index said it all).
 */
static int lun_prepare(const struct ha_doc *d, const char *iqn, uint32_t lun, const char *lun_json,
		       struct tpos *t, struct lpos *l, char **canon, bool *used, bool *walked,
		       char *err, size_t errlen)
{
	const char *s = d && d->targets_text ? d->targets_text : "[]";
	const struct ha_lun_idx *x = d ? d->lun_idx : NULL;
	bool add = lun_json && lun_json[0];
	int rc;

	if (err && errlen)
		err[0] = '\0';
	*canon = NULL;
	*walked = false;
	memset(l, 0, sizeof(*l));
	if (!d || !d->config_text)
		return gw_errf(err, errlen, -EINVAL, "no document");
	if (add && x && !strcmp(x->iqn, iqn) && !idx_used(x, lun) && lun < LUN_MAX) {
		/* the LUN before this one went to the same target: its index says it all */
		memset(t, 0, sizeof(*t));
		t->index = x->tindex;
		t->has_luns = true;
		t->luns_end = x->luns_end;
		l->count = x->count;
	} else {
		rc = find_target(s, iqn, t, err, errlen);
		if (rc)
			return rc;
		if (t->has_luns) {
			rc = find_lun(s, t->luns, lun, l, t, used, err, errlen);
			if (rc)
				return rc;
		}
		*walked = true;
	}
	if (!add && !l->found)
		return gw_errf(err, errlen, -ENOENT, "no LUN %u in %s", lun, iqn);
	if (add && l->found)
		return gw_errf(err, errlen, -EEXIST, "targets[%zu].luns[%zu].lun: LUN %u of %s "
				  "exists already", t->index, l->index, lun, iqn);
	if (add && lun >= LUN_MAX)
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].lun: %u out of range "
				  "(0..%u)", t->index, l->count, lun, LUN_MAX - 1);
	if (add) {
		*canon = lun_canon(d, iqn, t, l->count, lun, lun_json, err, errlen);
		if (!*canon)
			return err && err[0] == '\0' ? -ENOMEM : -EINVAL;
	}
	return 0;
}

int ha_doc_lun_free(const struct ha_doc *d, const char *iqn, uint32_t *lun, char *err,
		    size_t errlen)
{
	const char *s = d && d->targets_text ? d->targets_text : "[]";
	struct tpos t;
	struct lpos l;
	bool *used;
	uint32_t n = 0;
	int rc;

	if (d && d->lun_idx && !strcmp(d->lun_idx->iqn, iqn)) {
		/* the index the last LUN added to this target left */
		while (n < LUN_MAX && idx_used(d->lun_idx, n))
			n++;
		goto out;
	}
	rc = find_target(s, iqn, &t, err, errlen);
	if (rc)
		return rc;
	if (t.has_luns) {
		used = calloc(LUN_MAX, sizeof(*used));
		if (!used)
			return gw_errf(err, errlen, -ENOMEM, "out of memory");
		rc = find_lun(s, t.luns, LUN_MAX, &l, &t, used, err, errlen);
		while (!rc && n < LUN_MAX && used[n])
			n++;
		free(used);
		if (rc)
			return rc;
	}
out:
	if (n == LUN_MAX)
		return gw_errf(err, errlen, -ENOSPC, "target %s has no free LUN number", iqn);
	*lun = n;
	return 0;
}

int ha_doc_lun_check(const struct ha_doc *d, const char *iqn, uint32_t lun, const char *lun_json,
		     char **canon, char *err, size_t errlen)
{
	struct tpos t;
	struct lpos l;
	bool walked;

	return lun_prepare(d, iqn, lun, lun_json, &t, &l, canon, NULL, &walked, err, errlen);
}

int ha_doc_with_lun(const struct ha_doc *d, const char *iqn, uint32_t lun, const char *lun_json,
		    struct ha_doc **out, char *err, size_t errlen)
{
	const char *s = d && d->targets_text ? d->targets_text : "[]";
	size_t sl = strlen(s), cl, tl, cut = 0, cut_end = 0, at = 0;
	bool add = lun_json && lun_json[0];
	struct ha_sbuf nt, nc;
	struct ha_doc *n = NULL;
	char *canon = NULL;
	struct tpos t;
	struct lpos l;
	int rc;

	bool *used = NULL, walked;
	struct ha_lun_idx *x = NULL;

	*out = NULL;
	if (add && !(d && d->lun_idx && !strcmp(d->lun_idx->iqn, iqn))) {
		used = calloc(LUN_MAX, sizeof(*used));
		if (!used)
			return gw_errf(err, errlen, -ENOMEM, "out of memory");
	}
	rc = lun_prepare(d, iqn, lun, lun_json, &t, &l, &canon, used, &walked, err, errlen);
	if (rc) {
		free(used);
		return rc;
	}
	/* the index the next LUN added to this target starts from */
	if (add) {
		x = calloc(1, sizeof(*x));
		if (x && walked && used) {
			for (uint32_t k = 0; k < LUN_MAX; k++)
				if (used[k])
					x->used[k / 8] |= (uint8_t)(1u << (k % 8));
		} else if (x && !walked) {
			memcpy(x->used, d->lun_idx->used, sizeof(x->used));
		} else if (x) {
			/* walked without the numbers (should not happen): no index */
			free(x);
			x = NULL;
		}
		if (x) {
			x->iqn = strdup(iqn);
			x->tindex = t.index;
			x->count = l.count + 1;
			x->used[lun / 8] |= (uint8_t)(1u << (lun % 8));
			x->luns_end = t.has_luns ? t.luns_end + (l.count ? 1 : 0) + strlen(canon) :
				      t.luns_at + strlen("\"luns\":[") + strlen(canon) + 1 +
				      (s[t.luns_at] == '}' && t.luns_at > t.obj + 1 ? 1 : 0);
			if (!x->iqn) {
				free(x);
				x = NULL;
			}
		}
	}
	free(used);
	/* the configuration's text ends with its "targets" (the last key): ...,"targets":[...]} */
	cl = strlen(d->config_text);
	tl = sl;
	if (cl < tl + 1 || memcmp(d->config_text + cl - tl - 1, s, tl) ||
	    d->config_text[cl - 1] != '}') {
		free(canon);
		return gw_errf(err, errlen, -EINVAL, "config: the targets are not its last key");
	}

	ha_sb_init(&nt);
	if (add && t.has_luns) {
		at = t.luns_end - 1;    /* the ']' */
		ha_sb_putn(&nt, s, at);
		if (l.count)
			ha_sb_puts(&nt, ",");
		ha_sb_puts(&nt, canon);
		ha_sb_puts(&nt, s + at);
	} else if (add) {
		at = t.luns_at;
		ha_sb_putn(&nt, s, at);
		if (s[at] == '}' && at > t.obj + 1)
			ha_sb_puts(&nt, ",");
		ha_sb_puts(&nt, "\"luns\":[");
		ha_sb_puts(&nt, canon);
		ha_sb_puts(&nt, "]");
		if (s[at] != '}')
			ha_sb_puts(&nt, ",");
		ha_sb_puts(&nt, s + at);
	} else {
		cut = l.el;
		cut_end = l.el_end;
		if (s[cut_end] == ',')
			cut_end++;
		else if (s[cut - 1] == ',')
			cut--;
		ha_sb_putn(&nt, s, cut);
		ha_sb_puts(&nt, s + cut_end);
	}
	ha_sb_init(&nc);
	ha_sb_putn(&nc, d->config_text, cl - tl - 1);
	ha_sb_putn(&nc, nt.s ? nt.s : "", nt.len);
	ha_sb_puts(&nc, "}");

	rc = nt.err ? nt.err : nc.err;
	if (!rc)
		rc = ha_doc_next_priv(d, &n);
	if (rc) {
		gw_errf(err, errlen, rc, "out of memory");
		goto err_free;
	}
	free(n->targets_text);
	free(n->config_text);
	n->targets_text = ha_sb_take(&nt, NULL, NULL);
	n->config_text = ha_sb_take(&nc, NULL, NULL);
	n->delta_target = strdup(iqn);
	n->delta_lun = lun;
	n->delta_lun_json = canon;
	canon = NULL;
	n->lun_idx = x;
	x = NULL;
	if (!n->targets_text || !n->config_text || !n->delta_target) {
		rc = gw_errf(err, errlen, -ENOMEM, "out of memory");
		goto err_free;
	}
	if (add && !n->delta_lun_json) {
		rc = gw_errf(err, errlen, -ENOMEM, "out of memory");
		goto err_free;
	}
	rc = ha_doc_finish_priv(n);
	if (rc) {
		gw_errf(err, errlen, rc, "config: %s", rc == -EMSGSIZE ?
			   "the document would be larger than 1 MiB" : "out of memory");
		goto err_free;
	}
	*out = n;
	return 0;

err_free:
	ha_sb_free(&nt);
	ha_sb_free(&nc);
	free(canon);
	ha_doc_lun_idx_free(x);
	ha_doc_free(n);
	return rc;
}

char *ha_doc_journal_line(const struct ha_doc *d)
{
	struct ha_sbuf b;

	if (!d || !d->delta_target)
		return NULL;
	ha_sb_init(&b);
	ha_sb_printf(&b, "{\"generation\":%" PRIu64 ",\"lun\":", d->generation);
	ha_sb_puts(&b, d->delta_lun_json ? d->delta_lun_json : "null");
	ha_sb_printf(&b, ",\"number\":%u,\"target\":", d->delta_lun);
	ha_sb_put_jstr(&b, d->delta_target, strlen(d->delta_target));
	ha_sb_puts(&b, "}\n");
	return ha_sb_take(&b, NULL, NULL);
}
