/* SPDX-License-Identifier: Apache-2.0 */
#include "problem.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

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
	    json_object_object_add(o, "detail", json_object_new_string(detail ? detail : "")))
		goto out_put;
	if (field && field[0] &&
	    json_object_object_add(o, "field", json_object_new_string(field)))
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
