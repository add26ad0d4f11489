/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The names of the configuration, one check per kind (docs/configuration.md,
 * "Names"): iSCSI names (targets, ACL initiators, the backend initiator),
 * target aliases, LUN paths. isergwd's configuration parser (config.c), the
 * HA agent's document checks and group-message codec (ha/doc_config.c,
 * ha/codec.c) and the REST layer (mgmt/api/rest.c) all call these, so a name
 * one of them takes none of the others refuses, and they word a refusal the
 * same way. Also the rule for every JSON string taken from outside: valid
 * UTF-8 without NUL, so that whatever is stored renders as valid JSON.
 */
#ifndef ISERGW_NAMES_H
#define ISERGW_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/utf8.h"

enum gw_name_kind {
	/*
	 * A target or initiator name (RFC 7143 4.2.7, RFC 3720 3.2.6, RFC 3722,
	 * RFC 3980): "iqn.YYYY-MM.authority[:anything]" in lowercase a-z,
	 * 0-9, '-', '.', ':' and UTF-8 beyond ASCII that RFC 3722 does not
	 * prohibit; "eui." and 16 hex digits; "naa." and 16 or 32 hex digits.
	 * 1..223 bytes.
	 */
	GW_NAME_ISCSI,
	/* A TargetAlias: UTF-8 without control characters, 0..255 bytes. */
	GW_NAME_ALIAS,
	/* A LUN's path (file, device or iscsi:// URL): UTF-8 without control characters. */
	GW_NAME_PATH,
};

#define GW_ISCSI_NAME_LEN 223u
#define GW_ALIAS_LEN      255u
#define GW_PATH_LEN       4095u         /* PATH_MAX - 1 */

/*
 * Is s (len bytes; NUL bytes count and are refused) a valid name of kind?
 * 0, or -EINVAL with the reason in msg: "\"NAME\" is not a valid iSCSI name:
 * WHY", the name left out when it is not printable UTF-8 ("not a valid iSCSI
 * name: not valid UTF-8 (byte 27)"). Callers put the key path in front.
 */
int gw_name_check(enum gw_name_kind kind, const char *s, size_t len, char *msg, size_t msglen);

/*
 * Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above
 * U+10FFFF, no truncated sequence. On false, *bad (may be NULL) is the
 * offset of the first byte that is not.
 */
bool gw_utf8_valid(const char *s, size_t len, size_t *bad);
/*
 * The offset of the first control character (U+0000..U+001F, U+007F..U+009F)
 * in s, valid UTF-8 of len bytes; len when it has none.
 */
size_t gw_utf8_control_at(const char *s, size_t len);

/* gw_utf8_next: common/utf8.h */

/*
 * Every member name and string value of o (recursively) valid UTF-8 without
 * NUL? 0, or -EINVAL with the key path of the first one that is not in path
 * (prefix, then ".key" / "[i]" as the configuration's messages write them;
 * a member name that is not UTF-8: its object's path) and the reason in why:
 * "not valid UTF-8 (byte N)", "contains a NUL character".
 */
struct json_object;
int gw_json_strings_check(struct json_object *o, const char *prefix, char *path, size_t pathlen,
			  char *why, size_t whylen);

/*
 * A validator's context: where its one-line message goes (err, errlen) and
 * the key path it is at, as the configuration's messages write it
 * ("targets[0].luns[1].path"; cut at GW_VPATH_MAX).
 */
#define GW_VPATH_MAX 512
struct gw_vctx {
	char *err;
	size_t errlen;
	char path[GW_VPATH_MAX];
	size_t plen;
};

/* Start at path base ("" or NULL: the root); err emptied. */
void gw_vctx_init(struct gw_vctx *c, char *err, size_t errlen, const char *base);
/* Append ".key" ("key" at the root) / "[i]"; return the length to pop back to. */
size_t gw_vpath_key(struct gw_vctx *c, const char *key);
size_t gw_vpath_index(struct gw_vctx *c, size_t i);
void gw_vpath_pop(struct gw_vctx *c, size_t len);
/* "path: message" into err (the root is called "config"); returns -EINVAL. */
int gw_verr(struct gw_vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
