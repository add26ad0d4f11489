/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The REST request bodies' schemas (rest.h): each object's fields and their
 * types, checked before a write is made, naming the field at fault.
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

const struct fdef rest_chap_f[] = {
	{ "user", T_STR, false }, { "secret", T_STR, false }, { NULL, 0, false },
};
const struct fdef rest_acl_f[] = {
	{ "initiator", T_IQN, true }, { "chap", T_CHAP, false }, { NULL, 0, false },
};
const struct fdef rest_lun_f[] = {
	{ "lun", T_INT, false }, { "path", T_PATH, true }, { "size", T_SIZE, false },
	{ "block_size", T_INT, false }, { "serial", T_STR, false }, { "naa", T_STR, false },
	{ "readonly", T_BOOL, false }, { "write_cache", T_BOOL, false },
	{ "thin", T_BOOL, false }, { "vendor", T_STR, false }, { "product", T_STR, false },
	{ "max_transfer", T_SIZE, false }, { "backend_sessions", T_INT, false },
	{ "backend_hold_s", T_INT, false }, { "backend_timeout_s", T_INT, false },
	{ "backend_read_chunk", T_SIZE, false }, { "backend_initiator", T_IQN, false },
	{ "device_group", T_STR, false }, { NULL, 0, false },
};
const struct fdef rest_target_f[] = {
	{ "iqn", T_IQN, true }, { "alias", T_ALIAS, false }, { "chap", T_CHAP, false },
	{ "mutual_chap", T_CHAP, false }, { "acls", T_ACLS, false },
	{ "max_recv_dsl", T_INT, false }, { "max_burst", T_INT, false },
	{ "first_burst", T_INT, false }, { "max_outstanding_r2t", T_INT, false },
	{ "initial_r2t", T_BOOL, false }, { "immediate_data", T_BOOL, false },
	{ "queue_depth", T_INT, false }, { "luns", T_LUNS, false }, { NULL, 0, false },
};

const char *rest_tname(json_object *v)
{
	return v ? json_type_to_name(json_object_get_type(v)) : "null";
}

static void join(char *out, size_t len, const char *path, const char *key)
{
	snprintf(out, len, "%s%s%s", path, path[0] ? "." : "", key);
}


static int check_arr(json_object *v, const struct fdef *f, const char *path, struct rest_err *e)
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

int rest_check_field(json_object *v, const struct fdef *d, const char *p, struct rest_err *e)
{
	static const char *const want[] = {
		[T_STR] = "a string", [T_INT] = "an integer", [T_BOOL] = "a boolean",
		[T_SIZE] = "an integer or a string", [T_CHAP] = "an object",
		[T_ACLS] = "an array", [T_LUNS] = "an array", [T_IQN] = "a string",
		[T_ALIAS] = "a string", [T_PATH] = "a string",
	};
	static const enum gw_name_kind kinds[] = {
		[T_IQN] = GW_NAME_ISCSI, [T_ALIAS] = GW_NAME_ALIAS, [T_PATH] = GW_NAME_PATH,
	};
	char msg[384];
	bool ok;

	switch (d->t) {
	case T_STR:
	case T_IQN:
	case T_ALIAS:
	case T_PATH:
		ok = json_object_is_type(v, json_type_string);
		break;
	case T_INT:
		ok = json_object_is_type(v, json_type_int);
		break;
	case T_BOOL:
		ok = json_object_is_type(v, json_type_boolean);
		break;
	case T_SIZE:
		ok = json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_string);
		break;
	case T_CHAP:
		ok = json_object_is_type(v, json_type_object);
		break;
	default:
		ok = json_object_is_type(v, json_type_array);
		break;
	}
	if (!ok)
		return rest_fail(e, -EINVAL, 422, p, "%s: expected %s, got %s", p, want[d->t], rest_tname(v));
	if (json_object_is_type(v, json_type_int) && int_saturated(v)) {
		char n[48];

		return rest_fail(e, -ERANGE, 422, p, "%s: %s is out of range (not a 64-bit integer)", p,
			    rest_int_text(v, n, sizeof(n)));
	}
	if ((d->t == T_IQN || d->t == T_ALIAS || d->t == T_PATH) &&
	    gw_name_check(kinds[d->t], json_object_get_string(v),
			  (size_t)json_object_get_string_len(v), msg, sizeof(msg)))
		return rest_fail(e, -EINVAL, 422, p, "%s: %s", p, msg);
	if (d->t == T_CHAP)
		return rest_check_obj(v, rest_chap_f, p, e);
	if (d->t == T_ACLS)
		return check_arr(v, rest_acl_f, p, e);
	if (d->t == T_LUNS)
		return check_arr(v, rest_lun_f, p, e);
	return 0;
}

/* Unknown keys, wrong types and missing required keys, naming the field. */
int rest_check_obj(json_object *o, const struct fdef *f, const char *path, struct rest_err *e)
{
	char p[256];

	json_object_object_foreach(o, key, v) {
		const struct fdef *d;
		int rc;

		for (d = f; d->key && strcmp(d->key, key); d++)
			;
		join(p, sizeof(p), path, key);
		if (!d->key)
			return rest_fail(e, -EINVAL, 422, p, "%s: unknown field", p);
		rc = rest_check_field(v, d, p, e);
		if (rc)
			return rc;
	}
	for (const struct fdef *d = f; d->key; d++) {
		if (d->required && !json_object_object_get_ex(o, d->key, NULL)) {
			join(p, sizeof(p), path, d->key);
			return rest_fail(e, -EINVAL, 422, p, "%s: required", p);
		}
	}
	return 0;
}
