/* SPDX-License-Identifier: Apache-2.0 */
#include "problem.h"

#include "config/names.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A JSON string of s: what the request carried (a percent-decoded path, a
 * header) may be any bytes, and JSON is UTF-8, so each byte that is not part
 * of a UTF-8 sequence is written as the four characters \xHH.
 */
static json_object *json_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i, n, out = 0, len = strlen(s);
	json_object *o;
	uint32_t cp;
	char *buf;

	for (i = 0; p[i]; i += n)
		out += (n = gw_utf8_next(p, len, i, &cp)) ? n : (n = 1, 4);
	if (out == i)
		return json_object_new_string(s);
	buf = malloc(out + 1);
	if (!buf)
		return NULL;
	for (i = 0, out = 0; p[i]; i += n) {
		n = gw_utf8_next(p, len, i, &cp);
		if (n) {
			memcpy(buf + out, p + i, n);
			out += n;
		} else {
			n = 1;
			snprintf(buf + out, 5, "\\x%02x", p[i]);
			out += 4;
		}
	}
	buf[out] = '\0';
	o = json_object_new_string(buf);
	free(buf);
	return o;
}

char *api_problem_json(unsigned int code, const char *title, const char *detail, size_t *len)
{
	return api_problem_json_field(code, title, detail, NULL, len);
}

char *api_problem_json_field(unsigned int code, const char *title, const char *detail,
			     const char *field, size_t *len)
{
	json_object *o = json_object_new_object();
	const char *s;
	char *out = NULL;
	size_t n;

	if (!o)
		return NULL;
	if (json_object_object_add(o, "type", json_object_new_string("about:blank")) ||
	    json_object_object_add(o, "title", json_object_new_string(title ? title : "")) ||
	    json_object_object_add(o, "status", json_object_new_int((int)code)) ||
	    json_object_object_add(o, "detail", json_text(detail ? detail : "")))
		goto out_put;
	/* a 422 always names its field: "" is the body as a whole */
	if (field && (field[0] || code == 422) &&
	    json_object_object_add(o, "field", json_text(field)))
		goto out_put;
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		goto out_put;
	n = strlen(s);
	out = malloc(n + 2);
	if (!out)
		goto out_put;
	memcpy(out, s, n);
	out[n++] = '\n';
	out[n] = '\0';
	*len = n;
out_put:
	json_object_put(o);
	return out;
}
