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

#define CFG_COMP "config"

#define CFG_FILE_MAX      (16u << 20) /* a configuration file larger than this is a mistake */
#define CFG_PATH_MAX      512         /* longest key path reported in a message */
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

struct pctx {
	char *err;
	size_t errlen;
	char path[CFG_PATH_MAX];
	size_t plen;
};

enum fkind {
	FK_UINT,        /* JSON integer into a uint16/32 or unsigned int, [min, max] */
	FK_BOOL,
	FK_STR,         /* into a char[size]; min = 1: must not be empty */
	FK_SIZE,        /* integer or "1G"-style string into a uint64_t */
	FK_OBJ,         /* nested object described by sub */
	FK_CUSTOM,      /* fn(ctx, value, base) */
};

struct ftable;

struct field {
	const char *key;
	enum fkind kind;
	size_t off;
	size_t size;
	uint64_t min, max;
	bool required;
	const struct ftable *sub;
	int (*fn)(struct pctx *c, struct json_object *v, void *base);
};

struct ftable {
	const struct field *f;
	size_t n;
};

#define FSIZE(T, m) sizeof(((T *)0)->m)
#define F_UINT(T, m, lo, hi) { #m, FK_UINT, offsetof(T, m), FSIZE(T, m), lo, hi, false, NULL, NULL }
#define F_BOOL(T, m)         { #m, FK_BOOL, offsetof(T, m), FSIZE(T, m), 0, 0, false, NULL, NULL }
#define F_STR(T, m, nonempty, req) \
	{ #m, FK_STR, offsetof(T, m), FSIZE(T, m), nonempty, 0, req, NULL, NULL }
#define F_SIZE(T, m)         { #m, FK_SIZE, offsetof(T, m), FSIZE(T, m), 0, INT64_MAX, false, NULL, NULL }
#define F_OBJ(T, m, tbl)     { #m, FK_OBJ, offsetof(T, m), FSIZE(T, m), 0, 0, false, &(tbl), NULL }
#define F_FN(key, f, req)    { key, FK_CUSTOM, 0, 0, 0, 0, req, NULL, f }
#define TABLE(arr)           { arr, sizeof(arr) / sizeof(arr[0]) }

#define FIELDS_MAX 32

#define FNV64_OFFSET 0xcbf29ce484222325ull

/* config.c: the parser */
__attribute__((format(printf, 2, 3)))
int cfg_perr(struct pctx *c, const char *fmt, ...);
const char *cfg_jtype(const struct json_object *v);
void cfg_path_set_len(struct pctx *c, size_t len);
size_t cfg_path_index(struct pctx *c, size_t i);
int cfg_parse_object(struct pctx *c, struct json_object *obj, const struct ftable *t, void *base);
int cfg_parse_array(struct pctx *c, struct json_object *v, size_t elsz, void **arr, size_t *n,
		    void (*init)(void *el, size_t idx), const struct ftable *t);
int cfg_str_copy(char *dst, size_t dstsz, const char *src);
bool cfg_str_terminated(const char *s, size_t sz);
int cfg_hex_val(char ch);
bool cfg_all_hex(const char *s, size_t n);
bool cfg_printable_ascii(const char *s);

/* config_fields.c: the tables */
extern const struct ftable cfg_config_table;
extern const struct ftable cfg_lun_table;
void cfg_lun_init(void *el, size_t idx);

/* config_validate.c */
int cfg_validate_lun_one(const struct gw_lun_cfg *l, size_t ti, size_t li, char *err,
			 size_t errlen);

/* config_defaults.c */
uint64_t cfg_fnv1a64(uint64_t h, const void *data, size_t len);
void cfg_lun_finalize(const char *iqn, struct gw_lun_cfg *l);

#endif
