/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the configuration library share and nothing else sees:
 * the limits, the parser's context and its field tables (config_fields.c),
 * and the helpers one file defines and another calls.
 */
#ifndef ISERGW_CONFIG_PRIV_H
#define ISERGW_CONFIG_PRIV_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "config/schema.h"

#define CFG_COMP "config"

#define CFG_FILE_MAX      (16u << 20) /* a configuration file larger than this is a mistake */
#define CFG_REACTORS_MAX  1024u
#define CFG_TIMEOUT_MAX   3600u
#define CFG_LUN_MAX       16384u      /* LUNs 0..16383: flat / peripheral addressing */
#define CFG_DSL_MIN       512u
#define CFG_DSL_MAX       16777215u   /* 2^24 - 1, RFC 7143 */
#define CFG_QDEPTH_MAX    4096u
#define CFG_SECRET_WARN   12u         /* RFC 7143 9.2.1: at least 96 bits */

/*
 * IEEE company ID put in default NAA type 6 designators. 0x1A5E4A has the
 * low nibble of its first octet = 1010b, the "local" (X) bit set as in all
 * IEEE CIDs, and is not registered to anyone: designators made with it are
 * unique only within one isergw deployment (they are derived from the target
 * IQN, which is unique). Operators owning an OUI set "naa" explicitly.
 */
#define GW_NAA_DEFAULT_CID 0x1A5E4Au

/* The rows of the field tables (schema.h), each with its one-line doc. */
#define FSIZE(T, m) sizeof(((T *)0)->m)
#define F_AT(T, m)  .off = offsetof(T, m), .size = FSIZE(T, m)
#define F_UINT_(T, m, lo, hi, d) \
	.key = #m, .type = GW_FT_INTEGER, .min = lo, .max = hi, .doc = d, .kind = GW_FK_UINT, F_AT(T, m)
#define F_UINT(T, m, lo, hi, d) { F_UINT_(T, m, lo, hi, d) }
#define F_BOOL_(T, m, d) .key = #m, .type = GW_FT_BOOLEAN, .doc = d, .kind = GW_FK_BOOL, F_AT(T, m)
#define F_BOOL(T, m, d) { F_BOOL_(T, m, d) }
#define F_STR_(T, m, nonempty, req, d) \
	.key = #m, .type = GW_FT_STRING, .required = req, .min = nonempty, .max = FSIZE(T, m) - 1, \
	.doc = d, .kind = GW_FK_STR, F_AT(T, m)
#define F_STR(T, m, nonempty, req, d) { F_STR_(T, m, nonempty, req, d) }
/* a string that is a name of kind k (names.h) */
#define F_NAME(T, m, nonempty, req, k, d) { F_STR_(T, m, nonempty, req, d), .is_name = true, .name = k }
#define F_SIZE(T, m, d) \
	{ .key = #m, .type = GW_FT_SIZE, .max = INT64_MAX, .doc = d, .kind = GW_FK_SIZE, F_AT(T, m) }
#define F_OBJ(T, m, tbl, d) \
	{ .key = #m, .type = GW_FT_OBJECT, .sub = &(tbl), .doc = d, .kind = GW_FK_OBJ, F_AT(T, m) }
/* a key parsed by f, of JSON type t; the X_ forms take more (.words, .sub, ...) after them */
#define F_FN_(k, f, req, t, d) .key = k, .type = t, .required = req, .doc = d, .kind = GW_FK_CUSTOM, .fn = f
#define F_FN(k, f, req, t, d) { F_FN_(k, f, req, t, d) }
/* an array of objects of table sub_ (into m, counted in nm), each set up by init_ */
#define F_ARRAY_(T, m, nm, init_, sub_, d) \
	.key = #m, .type = GW_FT_ARRAY, .doc = d, .kind = GW_FK_ARRAY, .off = offsetof(T, m), \
	.size = sizeof(*((T *)0)->m), .count_off = offsetof(T, nm), .init = init_, .sub = &sub_
#define F_ARRAY(T, m, nm, init_, sub_, d) { F_ARRAY_(T, m, nm, init_, sub_, d) }
#define TABLE(arr)           { arr, sizeof(arr) / sizeof(arr[0]) }

#define FIELDS_MAX 32

#define FNV64_OFFSET 0xcbf29ce484222325ull

/* config.c: the parser (its context and key paths: gw_vctx, config/names.h) */
const char *cfg_jtype(const struct json_object *v);
int cfg_parse_object(struct gw_vctx *c, struct json_object *obj, const struct gw_ftable *t,
		     void *base);
int cfg_parse_array(struct gw_vctx *c, struct json_object *v, size_t elsz, void **arr, size_t *n,
		    void (*init)(void *el, size_t idx), const struct gw_ftable *t);
int cfg_str_copy(char *dst, size_t dstsz, const char *src);
bool cfg_str_terminated(const char *s, size_t sz);
int cfg_hex_val(char ch);
bool cfg_all_hex(const char *s, size_t n);
bool cfg_printable_ascii(const char *s);

/* config_fields.c: the tables (schema.h) */
void cfg_lun_init(void *el, size_t idx);

/* config_validate.c */
int cfg_validate_lun_one(const struct gw_lun_cfg *l, size_t ti, size_t li, char *err,
			 size_t errlen);

/* config_defaults.c */
uint64_t cfg_fnv1a64(uint64_t h, const void *data, size_t len);
void cfg_lun_finalize(const char *iqn, struct gw_lun_cfg *l);

#endif
