/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the REST half share and nothing else sees (rest.c:
 * routes and bodies; rest_schema.c; rest_render.c; rest_edit.c;
 * rest_portal.c): the error setter, the schema checks, the JSON helpers.
 */
#ifndef ISERGW_API_REST_PRIV_H
#define ISERGW_API_REST_PRIV_H

#include "rest.h"
#include "config/schema.h"

/* rest.c */
__attribute__((format(printf, 5, 6)))
int rest_fail(struct rest_err *e, int rc, unsigned int code, const char *field,
	      const char *fmt, ...);
void rest_key_path(const char *error, char *out, size_t len);

/* rest_schema.c */
const char *rest_tname(json_object *v);
const char *rest_int_text(json_object *v, char *buf, size_t len);
const char *rest_want(enum gw_ftype t);
int rest_check_field(json_object *v, const struct gw_field *d, const char *p, struct rest_err *e);
int rest_check_obj(json_object *o, const struct gw_ftable *f, const char *path,
		   struct rest_err *e);

/* rest_render.c */
void rest_add_str(json_object *o, const char *k, const char *v);
void rest_add_u64(json_object *o, const char *k, uint64_t v);
json_object *rest_list_of(json_object *items);

/* rest_edit.c */
const char *rest_str_of(json_object *o, const char *key);
json_object *rest_arr_of(json_object *o, const char *key);
json_object *rest_find_by(json_object *a, const char *key, const char *val, size_t *idx);
json_object *rest_find_lun(json_object *t, uint32_t lun, size_t *idx);
json_object *rest_arr_make(json_object *cfg, const char *key);
int rest_merge_patch(json_object *target, json_object *patch);
/* cur with the merge patch applied, checked against t, in place of element idx of arr */
int rest_patch_put(json_object *arr, size_t idx, json_object *cur, json_object *patch,
		   const struct gw_ftable *t, struct rest_err *e);

/* rest_portal.c */
json_object *rest_find_portal(json_object *node, uint32_t rel, size_t *idx);

#endif
