/* SPDX-License-Identifier: Apache-2.0 */
/* The names of the configuration, one check per kind (names.h). */
#include "config/names.h"
#include "common/utf8.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ UTF-8 */

bool gw_utf8_valid(const char *s, size_t len, size_t *bad)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;

	for (size_t i = 0; i < len;) {
		size_t n = gw_utf8_next(u, len, i, &cp);

		if (!n) {
			if (bad)
				*bad = i;
			return false;
		}
		i += n;
	}
	return true;
}

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/* Printable UTF-8 without NUL: safe to show inside a message. */
static bool showable(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;

	for (size_t i = 0; i < len;) {
		size_t n = gw_utf8_next(u, len, i, &cp);

		if (!n || is_control(cp))
			return false;
		i += n;
	}
	return true;
}

/* ------------------------------------------------------------ kinds */

/*
 * Code points beyond ASCII that RFC 3722 (stringprep profile for iSCSI
 * names, section 6) prohibits: RFC 3454 tables C.1.2, C.2.2, C.3, C.4, C.5
 * (not UTF-8 anyway), C.6, C.7, C.8, C.9.
 */
static bool iscsi_prohibited(uint32_t cp)
{
	static const struct { uint32_t lo, hi; } tab[] = {
		{ 0x0080, 0x00a0 }, { 0x0340, 0x0341 }, { 0x06dd, 0x06dd }, { 0x070f, 0x070f },
		{ 0x1680, 0x1680 }, { 0x180e, 0x180e }, { 0x2000, 0x200f }, { 0x2028, 0x202f },
		{ 0x205f, 0x2063 }, { 0x206a, 0x206f }, { 0x2ff0, 0x2ffb }, { 0x3000, 0x3000 },
		{ 0xe000, 0xf8ff }, { 0xfdd0, 0xfdef }, { 0xfeff, 0xfeff }, { 0xfff9, 0xffff },
		{ 0x1d173, 0x1d17a }, { 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f },
		{ 0xf0000, 0x10ffff },
	};

	if ((cp & 0xfffe) == 0xfffe)
		return true;    /* U+xFFFE, U+xFFFF of every plane */
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (cp >= tab[i].lo && cp <= tab[i].hi)
			return true;
	return false;
}

static bool hex_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Why n (len bytes, valid UTF-8 without NUL) is not an iSCSI name; NULL when it is. */
static const char *iscsi_why(const char *n, size_t len, char *buf, size_t buflen)
{
	const unsigned char *u = (const unsigned char *)n;
	uint32_t cp;

	if (len == 0)
		return "empty";
	if (len > GW_ISCSI_NAME_LEN)
		return "longer than 223 bytes";
	if (len >= 4 && !memcmp(n, "eui.", 4))
		return len == 4 + 16 && hex_digits(n + 4, 16) ? NULL :
		       "eui. names have exactly 16 hex digits";
	if (len >= 4 && !memcmp(n, "naa.", 4))
		return (len == 4 + 16 || len == 4 + 32) && hex_digits(n + 4, len - 4) ? NULL :
		       "naa. names have 16 or 32 hex digits";
	if (len < 4 || memcmp(n, "iqn.", 4))
		return "must start with iqn., eui. or naa.";
	/* iqn.YYYY-MM.authority[:unique] */
	if (len < 4 + 7 + 2 || !digit(n[4]) || !digit(n[5]) || !digit(n[6]) || !digit(n[7]) ||
	    n[8] != '-' || !digit(n[9]) || !digit(n[10]) || n[11] != '.')
		return "iqn. must be followed by a date YYYY-MM and a dot";
	if ((n[9] - '0') * 10 + (n[10] - '0') < 1 || (n[9] - '0') * 10 + (n[10] - '0') > 12)
		return "month of the iqn. date must be 01..12";
	if (n[12] == ':' || n[12] == '.' || n[12] == '-')
		return "iqn. needs a reversed domain name after the date";
	for (size_t i = 12; i < len;) {
		size_t k = gw_utf8_next(u, len, i, &cp);

		if (cp >= 'A' && cp <= 'Z')
			return "must be lowercase";
		if (cp < 0x80 && !((cp >= 'a' && cp <= 'z') || digit((char)cp) || cp == '-' ||
				   cp == '.' || cp == ':'))
			return "allowed characters are a-z 0-9 - . : and UTF-8 letters beyond ASCII";
		if (cp >= 0x80 && iscsi_prohibited(cp)) {
			snprintf(buf, buflen, "U+%04X is not allowed in an iSCSI name (RFC 3722)",
				 (unsigned int)cp);
			return buf;
		}
		i += k;
	}
	return NULL;
}

/* Why s (valid UTF-8 without NUL) is not a text of 0 (empty_ok) or 1..max bytes without control characters. */
static const char *text_why(const char *s, size_t len, size_t max, bool empty_ok, char *buf,
			    size_t buflen)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;

	if (!len && !empty_ok)
		return "empty";
	if (len > max) {
		snprintf(buf, buflen, "longer than %zu bytes", max);
		return buf;
	}
	size_t i = gw_utf8_control_at(s, len);

	if (i < len) {
		gw_utf8_next(u, len, i, &cp);
		snprintf(buf, buflen, "control character U+%04X at byte %zu", (unsigned int)cp, i);
		return buf;
	}
	return NULL;
}

size_t gw_utf8_control_at(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;

	for (size_t i = 0; i < len;) {
		size_t k = gw_utf8_next(u, len, i, &cp);

		if (!k)
			return len;     /* not UTF-8: the caller checked it is */
		if (is_control(cp))
			return i;
		i += k;
	}
	return len;
}

int gw_name_check(enum gw_name_kind kind, const char *s, size_t len, char *msg, size_t msglen)
{
	static const char *const what[] = {
		[GW_NAME_ISCSI] = "a valid iSCSI name",
		[GW_NAME_ALIAS] = "a valid alias",
		[GW_NAME_PATH] = "a valid path",
	};
	char buf[96];
	const char *why;
	size_t bad;

	if (!s)
		s = "";
	if (memchr(s, '\0', len))
		why = "contains a NUL character";
	else if (!gw_utf8_valid(s, len, &bad)) {
		snprintf(buf, sizeof(buf), "not valid UTF-8 (byte %zu)", bad);
		why = buf;
	} else if (kind == GW_NAME_ISCSI)
		why = iscsi_why(s, len, buf, sizeof(buf));
	else if (kind == GW_NAME_ALIAS)
		why = text_why(s, len, GW_ALIAS_LEN, true, buf, sizeof(buf));
	else
		why = text_why(s, len, GW_PATH_LEN, false, buf, sizeof(buf));
	if (!why)
		return 0;
	if (msg && msglen) {
		/* the name itself only where it is safe to show (and not too long to) */
		if (len && len <= GW_ISCSI_NAME_LEN && showable(s, len))
			snprintf(msg, msglen, "\"%.*s\" is not %s: %s", (int)len, s, what[kind], why);
		else
			snprintf(msg, msglen, "not %s: %s", what[kind], why);
	}
	return -EINVAL;
}

/* ------------------------------------------------------------ JSON */

static int str_why(const char *s, size_t len, char *why, size_t whylen)
{
	size_t bad;

	if (memchr(s, '\0', len))
		snprintf(why, whylen, "contains a NUL character");
	else if (!gw_utf8_valid(s, len, &bad))
		snprintf(why, whylen, "not valid UTF-8 (byte %zu)", bad);
	else
		return 0;
	return -EINVAL;
}

static int walk(struct json_object *o, char *path, size_t pathlen, size_t plen, char *why,
		size_t whylen)
{
	switch (json_object_get_type(o)) {
	case json_type_string:
		return str_why(json_object_get_string(o), (size_t)json_object_get_string_len(o), why,
			       whylen);
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			snprintf(path + plen, pathlen - plen, "[%zu]", i);
			if (walk(json_object_array_get_idx(o, i), path, pathlen,
				 strnlen(path, pathlen - 1), why, whylen))
				return -EINVAL;
		}
		path[plen] = '\0';
		return 0;
	case json_type_object: {
		json_object_object_foreach(o, key, val) {
			if (str_why(key, strlen(key), why, whylen)) {
				path[plen] = '\0';
				snprintf(why + strlen(why), whylen - strlen(why), " in a member name");
				return -EINVAL;
			}
			snprintf(path + plen, pathlen - plen, "%s%s", plen ? "." : "", key);
			if (walk(val, path, pathlen, strnlen(path, pathlen - 1), why, whylen))
				return -EINVAL;
		}
		path[plen] = '\0';
		return 0;
	}
	default:
		return 0;
	}
}

int gw_json_strings_check(struct json_object *o, const char *prefix, char *path, size_t pathlen,
			  char *why, size_t whylen)
{
	if (!path || !pathlen || !why || !whylen)
		return -EINVAL;
	snprintf(path, pathlen, "%s", prefix ? prefix : "");
	why[0] = '\0';
	return walk(o, path, pathlen, strlen(path), why, whylen);
}
