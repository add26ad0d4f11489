/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The REST request bodies' checks (rest.h): each object's fields against the
 * configuration's field tables (config/schema.h), before a write is made,
 * naming the field at fault.
 */
#include "rest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/names.h"
#include "rest_priv.h"

/* ------------------------------------------------------------ schemas */

/*
 * The objects' fields are the configuration library's tables (config/schema.h,
 * the ones isergwd parses with): here they are checked for their presence,
 * JSON types and names only; ranges and the rest are the agent's to check,
 * which runs isergwd's validator on the whole configuration.
 */
const char *rest_tname(json_object *v)
{
	return v ? json_type_to_name(json_object_get_type(v)) : "null";
}

static void join(char *out, size_t len, const char *path, const char *key)
{
	snprintf(out, len, "%s%s%s", path, path[0] ? "." : "", key);
}


static int check_arr(json_object *v, const struct gw_ftable *f, const char *path, struct rest_err *e)
{
	char p[256];

	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *el = json_object_array_get_idx(v, i);
		int rc;

		snprintf(p, sizeof(p), "%s[%zu]", path, i);
		if (!json_object_is_type(el, json_type_object))
			return rest_fail(e, -EINVAL, 422, p, "%s: expected an object, got %s", p,
				    rest_tname(el));
		rc = rest_check_obj(el, f, p, e);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * A JSON integer as it was sent. json-c keeps an int64 or a uint64 and
 * saturates past their ends without a word, so 2^64 reads as 2^64 - 1: at
 * the ends the text says "or more" / "or less".
 */
const char *rest_int_text(json_object *v, char *buf, size_t len)
{
	int64_t i = json_object_get_int64(v);
	uint64_t u;

	if (i == INT64_MIN) {
		snprintf(buf, len, "%" PRId64 " or less", i);
	} else if (i == INT64_MAX) {
		u = json_object_get_uint64(v);
		snprintf(buf, len, "%" PRIu64 "%s", u, u == UINT64_MAX ? " or more" : "");
	} else {
		snprintf(buf, len, "%" PRId64, i);
	}
	return buf;
}

/* Whether json-c saturated v: no field takes a number at either end of 64 bits. */
static bool int_saturated(json_object *v)
{
	int64_t i = json_object_get_int64(v);

	return i == INT64_MIN || (i == INT64_MAX && json_object_get_uint64(v) == UINT64_MAX);
}

const char *rest_want(enum gw_ftype t)
{
	static const char *const want[] = {
		[GW_FT_STRING] = "a string", [GW_FT_INTEGER] = "an integer",
		[GW_FT_BOOLEAN] = "a boolean", [GW_FT_SIZE] = "an integer or a string",
		[GW_FT_OBJECT] = "an object", [GW_FT_ARRAY] = "an array",
	};

	return want[t];
}

static bool type_ok(json_object *v, enum gw_ftype t)
{
	switch (t) {
	case GW_FT_STRING:
		return json_object_is_type(v, json_type_string);
	case GW_FT_INTEGER:
		return json_object_is_type(v, json_type_int);
	case GW_FT_BOOLEAN:
		return json_object_is_type(v, json_type_boolean);
	case GW_FT_SIZE:
		return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_string);
	case GW_FT_OBJECT:
		return json_object_is_type(v, json_type_object);
	case GW_FT_ARRAY:
		return json_object_is_type(v, json_type_array);
	}
	return false;
}

int rest_check_field(json_object *v, const struct gw_field *d, const char *p, struct rest_err *e)
{
	char msg[384];

	if (!type_ok(v, d->type))
		return rest_fail(e, -EINVAL, 422, p, "%s: expected %s, got %s", p, rest_want(d->type),
				 rest_tname(v));
	if (json_object_is_type(v, json_type_int) && int_saturated(v)) {
		char n[48];

		return rest_fail(e, -ERANGE, 422, p, "%s: %s is out of range (not a 64-bit integer)", p,
			    rest_int_text(v, n, sizeof(n)));
	}
	if (d->is_name && gw_name_check(d->name, json_object_get_string(v),
					(size_t)json_object_get_string_len(v), msg, sizeof(msg)))
		return rest_fail(e, -EINVAL, 422, p, "%s: %s", p, msg);
	if (d->type == GW_FT_OBJECT && d->sub)
		return rest_check_obj(v, d->sub, p, e);
	if (d->type == GW_FT_ARRAY && d->sub)
		return check_arr(v, d->sub, p, e);
	return 0;
}

/* Unknown keys, wrong types and missing required keys, naming the field. */
int rest_check_obj(json_object *o, const struct gw_ftable *f, const char *path,
		   struct rest_err *e)
{
	char p[256];

	json_object_object_foreach(o, key, v) {
		const struct gw_field *d = gw_field_find(f, key, strlen(key));
		int rc;

		join(p, sizeof(p), path, key);
		if (!d)
			return rest_fail(e, -EINVAL, 422, p, "%s: unknown field", p);
		rc = rest_check_field(v, d, p, e);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < f->n; i++) {
		if (f->f[i].required && !json_object_object_get_ex(o, f->f[i].key, NULL)) {
			join(p, sizeof(p), path, f->f[i].key);
			return rest_fail(e, -EINVAL, 422, p, "%s: required", p);
		}
	}
	return 0;
}
