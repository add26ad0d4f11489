/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What doc.c, doc_config.c and doc_json.c share: a growing text buffer, the
 * canonical JSON writer, the JSON reader with its size limit, and the
 * key-path context of the validators.
 */
#ifndef ISERGW_HA_DOC_PRIV_H
#define ISERGW_HA_DOC_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "common/log.h"
#include "config/names.h"

struct json_object;

#define HA_DOC_COMP "ha-doc"

/* ------------------------------------------------------------ text buffer */

/* A growing NUL-terminated text; the first error sticks in err (-ENOMEM, -EINVAL). */
struct ha_sbuf {
	char *s;
	size_t len;
	size_t cap;
	int err;
};

void ha_sb_init(struct ha_sbuf *b);
void ha_sb_free(struct ha_sbuf *b);
void ha_sb_putn(struct ha_sbuf *b, const char *s, size_t n);
void ha_sb_puts(struct ha_sbuf *b, const char *s);
void ha_sb_printf(struct ha_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string, quoted and escaped. */
void ha_sb_put_jstr(struct ha_sbuf *b, const char *s, size_t n);
/*
 * v in canonical form: object keys sorted bytewise at every depth, no
 * whitespace, arrays in their order, integers in decimal, strings escaped
 * only where JSON requires (", \ and control characters). A number that is
 * not an integer sets err to -EINVAL: no document holds one (isergwd's
 * configuration has none), and a double has no single canonical spelling.
 */
void ha_sb_put_canon(struct ha_sbuf *b, const struct json_object *v);
/* The text (caller frees) and its length; NULL and the error when one happened. */
char *ha_sb_take(struct ha_sbuf *b, size_t *len, int *err);

/* The canonical text of v (malloc'd), NULL with *err set otherwise. */
char *ha_json_canon(const struct json_object *v, size_t *len, int *err);
/*
 * Parse text (at most HA_DOC_MAX bytes: -EMSGSIZE) into *out. Syntax errors
 * are -EINVAL with "what: line L column C: reason" in err.
 */
int ha_json_parse(const char *text, const char *what, struct json_object **out, char *err,
		  size_t errlen);

/* doc.c's copy of d at generation + 1 (its text not built), and the text and digest built. */
int ha_doc_next_priv(const struct ha_doc *d, struct ha_doc **out);
int ha_doc_finish_priv(struct ha_doc *d);
/*
 * ha_doc_load's work on what it read, in two steps: text (len bytes and a
 * NUL: the file path's) as the stored document (returns as ha_doc_load),
 * then the lines of a journal (the file path's, len bytes and a NUL) that
 * follow *d replayed (*d replaced; where it stops is logged). The texts are
 * modified.
 */
int ha_doc_load_text(const char *path, char *text, size_t len, struct ha_doc **out, char *err,
		     size_t errlen);
void ha_doc_journal_replay(const char *path, char *text, size_t len, struct ha_doc **d);
/* doc_lun.c's index of a document made by a LUN added (NULL: none). */
void ha_doc_lun_idx_free(struct ha_lun_idx *x);

/* ------------------------------------------------------- validation */

/* The context of the checks: gw_vctx and its key paths (config/names.h). */
struct gw_ftable;
/* Every key of obj (an object, else an error) is a field of table t (config/schema.h). */
int ha_vcheck_table(struct gw_vctx *c, struct json_object *obj, const struct gw_ftable *t);
/* Every key of obj (an object, else an error) is one of keys[]. */
int ha_vcheck_keys(struct gw_vctx *c, struct json_object *obj, const char *const *keys,
		   size_t nkeys);

/* ------------------------------------------------------------- documents */

struct ha_doc *ha_doc_alloc(void);
/*
 * Check the configuration cfg (at the path of c) and fill d's nodes, device
 * groups and private texts from it. allow_empty: "{}" is accepted as the
 * configuration of no nodes (a stored document); otherwise nodes are required.
 */
int ha_config_parse(struct gw_vctx *c, struct json_object *cfg, bool allow_empty,
		    struct ha_doc *d);
/*
 * doc_tokens.c: check the document's "api_tokens" object (at the path of c)
 * and make its canonical text (*canon, malloc'd; NULL when it is empty).
 */
int ha_doc_tokens_parse(struct gw_vctx *c, struct json_object *obj, char **canon);
/* Whether s[0..len) is one of the gateway keys (isergwd top-level keys of the cluster). */
bool ha_gateway_key(const char *s, size_t len);

#endif
