/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON for the cluster document: the canonical writer (keys sorted at every
 * depth, no whitespace) that makes every node that applies the same change
 * to the same document produce the same bytes, the reader with its size
 * limit, and the key paths of validation messages.
 *
 * The writer escapes strings itself rather than through json-c so that the
 * bytes do not depend on json-c's version or flags (a rolling upgrade runs
 * two of them side by side).
 */
#include "doc_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/names.h"

/* ------------------------------------------------------------ text buffer */

void ha_sb_init(struct ha_sbuf *b)
{
	memset(b, 0, sizeof(*b));
}

void ha_sb_free(struct ha_sbuf *b)
{
	free(b->s);
	ha_sb_init(b);
}

static bool sb_reserve(struct ha_sbuf *b, size_t more)
{
	size_t need, cap;
	char *s;

	if (b->err)
		return false;
	if (more > SIZE_MAX / 2 - b->len) {
		b->err = -ENOMEM;
		return false;
	}
	need = b->len + more + 1;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	s = realloc(b->s, cap);
	if (!s) {
		b->err = -ENOMEM;
		return false;
	}
	b->s = s;
	b->cap = cap;
	return true;
}

void ha_sb_putn(struct ha_sbuf *b, const char *s, size_t n)
{
	if (!sb_reserve(b, n))
		return;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void ha_sb_puts(struct ha_sbuf *b, const char *s)
{
	ha_sb_putn(b, s, strlen(s));
}

void ha_sb_printf(struct ha_sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	if (!sb_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void ha_sb_put_jstr(struct ha_sbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0;

	ha_sb_putn(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		char esc[6];
		size_t elen = 2;

		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		ha_sb_putn(b, s + run, i - run);
		run = i + 1;
		esc[0] = '\\';
		switch (ch) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[ch >> 4];
			esc[5] = hex[ch & 0xf];
			elen = 6;
			break;
		}
		ha_sb_putn(b, esc, elen);
	}
	ha_sb_putn(b, s + run, n - run);
	ha_sb_putn(b, "\"", 1);
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void put_canon_object(struct ha_sbuf *b, struct json_object *v)
{
	size_t n = (size_t)json_object_object_length(v), i = 0;
	const char **keys;

	if (n == 0) {
		ha_sb_puts(b, "{}");
		return;
	}
	keys = calloc(n, sizeof(*keys));
	if (!keys) {
		if (!b->err)
			b->err = -ENOMEM;
		return;
	}
	json_object_object_foreach(v, key, val) {
		(void)val;
		if (i < n)
			keys[i++] = key;
	}
	qsort(keys, i, sizeof(*keys), key_cmp);
	ha_sb_putn(b, "{", 1);
	for (size_t k = 0; k < i && !b->err; k++) {
		if (k)
			ha_sb_putn(b, ",", 1);
		ha_sb_put_jstr(b, keys[k], strlen(keys[k]));
		ha_sb_putn(b, ":", 1);
		ha_sb_put_canon(b, json_object_object_get(v, keys[k]));
	}
	ha_sb_putn(b, "}", 1);
	free(keys);
}

void ha_sb_put_canon(struct ha_sbuf *b, const struct json_object *cv)
{
	/* json-c's getters take non-const objects; none of them changes it */
	struct json_object *v = (struct json_object *)(uintptr_t)cv;

	if (b->err)
		return;
	switch (json_object_get_type(v)) {
	case json_type_null:
		ha_sb_puts(b, "null");
		break;
	case json_type_boolean:
		ha_sb_puts(b, json_object_get_boolean(v) ? "true" : "false");
		break;
	case json_type_int:
		if (json_object_get_int64(v) < 0)
			ha_sb_printf(b, "%" PRId64, json_object_get_int64(v));
		else
			ha_sb_printf(b, "%" PRIu64, json_object_get_uint64(v));
		break;
	case json_type_double:
		b->err = -EINVAL;
		break;
	case json_type_string:
		ha_sb_put_jstr(b, json_object_get_string(v), (size_t)json_object_get_string_len(v));
		break;
	case json_type_array: {
		size_t n = json_object_array_length(v);

		ha_sb_putn(b, "[", 1);
		for (size_t i = 0; i < n && !b->err; i++) {
			if (i)
				ha_sb_putn(b, ",", 1);
			ha_sb_put_canon(b, json_object_array_get_idx(v, i));
		}
		ha_sb_putn(b, "]", 1);
		break;
	}
	case json_type_object:
		put_canon_object(b, v);
		break;
	}
}

char *ha_sb_take(struct ha_sbuf *b, size_t *len, int *err)
{
	char *s;

	if (!b->err && !b->s)
		ha_sb_putn(b, "", 0);
	if (b->err) {
		if (err)
			*err = b->err;
		ha_sb_free(b);
		return NULL;
	}
	s = b->s;
	if (len)
		*len = b->len;
	if (err)
		*err = 0;
	ha_sb_init(b);
	return s;
}

char *ha_json_canon(const struct json_object *v, size_t *len, int *err)
{
	struct ha_sbuf b;

	ha_sb_init(&b);
	ha_sb_put_canon(&b, v);
	return ha_sb_take(&b, len, err);
}

/* ------------------------------------------------------------------ reader */

int ha_json_parse(const char *text, const char *what, struct json_object **out, char *err,
		  size_t errlen)
{
	char msg[256];
	size_t len;
	int rc;

	*out = NULL;
	if (!text)
		return gw_errf(err, errlen, -EINVAL, "%s: none", what);
	len = strnlen(text, (size_t)HA_DOC_MAX + 1);
	if (len > HA_DOC_MAX)
		return gw_errf(err, errlen, -EMSGSIZE, "%s: larger than %u bytes", what,
				  HA_DOC_MAX);
	rc = gw_json_parse_text(text, len, "trailing data", out, msg, sizeof(msg));
	if (rc)
		return gw_errf(err, errlen, rc, "%s: %s", what, msg);
	return 0;
}

