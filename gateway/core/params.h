/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Text keys (RFC 7143 sections 5.1, 6.2, 13; RFC 7144; RFC 7145 section 6):
 * the key=value parser, the response builder, value codecs and the one
 * table-driven negotiation engine shared by login.c (Login Requests) and
 * text.c (Text Requests in full feature phase). Private to gw_proto.
 */
#ifndef ISERGW_PARAMS_H
#define ISERGW_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/login.h"
#include "config/config.h"
#include "gw_api.h"

GW_API_BEGIN

/* Limits of RFC 7143 6.1 / 12.1.3. */
#define ISCSI_TEXT_MAX          65536u  /* total key=value data of one negotiation message */
#define ISCSI_KEY_NAME_MAX      63u
#define ISCSI_VALUE_MAX         255u
#define ISCSI_CHAP_BIN_MAX      1024u   /* CHAP_C / CHAP_R binary length */
#define ISCSI_BIG_VALUE_MAX     (2u + 2u * ISCSI_CHAP_BIN_MAX) /* hex-encoded CHAP_C/R */
#define ISCSI_LOGIN_PDU_DSL     8192u   /* MaxRecvDataSegmentLength in force during login */
#define ISCSI_DEFAULT_MRDSL     8192u

/* ---------------- key=value pairs ---------------- */

struct iscsi_kv {
	char key[ISCSI_KEY_NAME_MAX + 1];
	const char *val;        /* NUL-terminated, inside the parsed buffer */
	size_t vlen;
};

/*
 * Iterate over the pairs of a complete text (every pair NUL-terminated, the
 * last byte of buf a NUL). Returns 1 and fills *kv for a pair, 0 at the end,
 * -EPROTO for a malformed pair (no '=', empty or over-long key, key with
 * characters outside RFC 7143 5.1's key-name set) with a reason in why.
 * Empty strings between NULs are skipped.
 */
int iscsi_kv_next(const char *buf, size_t len, size_t *off, struct iscsi_kv *kv,
		  char *why, size_t whylen);

/* Growable response text; every pair is written as "key=value\0". */
struct iscsi_textbuf {
	char *buf;
	size_t len;
	size_t cap;
	size_t limit;           /* refuse to grow past this (0: ISCSI_TEXT_MAX) */
};
void iscsi_tb_init(struct iscsi_textbuf *tb, size_t limit);
void iscsi_tb_reset(struct iscsi_textbuf *tb);
void iscsi_tb_free(struct iscsi_textbuf *tb);
/* Appends len bytes as they are (text data received); -E2BIG past the limit, -ENOMEM. */
int iscsi_tb_append(struct iscsi_textbuf *tb, const void *data, size_t len);
/* Append one pair; -ENOMEM, -E2BIG past the limit. */
int iscsi_tb_add(struct iscsi_textbuf *tb, const char *key, const char *val);
int iscsi_tb_addf(struct iscsi_textbuf *tb, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int iscsi_tb_add_u64(struct iscsi_textbuf *tb, const char *key, uint64_t v);

/* ---------------- value codecs ---------------- */

/*
 * numerical-value of RFC 7143 5.1: decimal, 0x/0X hex or 0b/0B base64,
 * at most 64 bits. No sign, no white space. -EINVAL malformed, -ERANGE too big.
 */
int iscsi_parse_number(const char *s, uint64_t *out);
/* binary-value: 0x hex or 0b base64 into out[max]; -EINVAL, -E2BIG. */
int iscsi_parse_binary(const char *s, uint8_t *out, size_t max, size_t *outlen);
/* "0x" + lower-case hex into out (size >= 2 + 2n + 1). */
int iscsi_encode_hex(const uint8_t *in, size_t n, char *out, size_t outsz);
/* Yes/No; -EINVAL otherwise. */
int iscsi_parse_bool(const char *s, bool *out);

/* ---------------- the key table ---------------- */

enum iscsi_key_id {
	ISCSI_KEY_HEADER_DIGEST = 0,
	ISCSI_KEY_DATA_DIGEST,
	ISCSI_KEY_MAX_CONNECTIONS,
	ISCSI_KEY_SEND_TARGETS,
	ISCSI_KEY_TARGET_NAME,
	ISCSI_KEY_INITIATOR_NAME,
	ISCSI_KEY_TARGET_ALIAS,
	ISCSI_KEY_INITIATOR_ALIAS,
	ISCSI_KEY_TARGET_ADDRESS,
	ISCSI_KEY_TPGT,
	ISCSI_KEY_INITIAL_R2T,
	ISCSI_KEY_IMMEDIATE_DATA,
	ISCSI_KEY_MAX_RECV_DSL,
	ISCSI_KEY_MAX_BURST,
	ISCSI_KEY_FIRST_BURST,
	ISCSI_KEY_TIME2WAIT,
	ISCSI_KEY_TIME2RETAIN,
	ISCSI_KEY_MAX_OUTSTANDING_R2T,
	ISCSI_KEY_DATA_PDU_IN_ORDER,
	ISCSI_KEY_DATA_SEQ_IN_ORDER,
	ISCSI_KEY_ERL,
	ISCSI_KEY_SESSION_TYPE,
	ISCSI_KEY_AUTH_METHOD,
	ISCSI_KEY_CHAP_A,
	ISCSI_KEY_CHAP_I,
	ISCSI_KEY_CHAP_C,
	ISCSI_KEY_CHAP_N,
	ISCSI_KEY_CHAP_R,
	ISCSI_KEY_OF_MARKER,
	ISCSI_KEY_IF_MARKER,
	ISCSI_KEY_OF_MARK_INT,
	ISCSI_KEY_IF_MARK_INT,
	ISCSI_KEY_TASK_REPORTING,
	ISCSI_KEY_PROTOCOL_LEVEL,
	ISCSI_KEY_RDMA_EXTENSIONS,
	ISCSI_KEY_INITIATOR_RDSL,
	ISCSI_KEY_TARGET_RDSL,
	ISCSI_KEY_MAX_OUT_UNEXP_PDUS,
	ISCSI_KEY__COUNT,
};

enum iscsi_key_kind {
	ISCSI_KIND_BOOL_AND,    /* result = ours AND theirs */
	ISCSI_KIND_BOOL_OR,     /* result = ours OR theirs */
	ISCSI_KIND_NUM_MIN,     /* result = min(ours, theirs) */
	ISCSI_KIND_NUM_MIN0,    /* min, where 0 means "no limit" */
	ISCSI_KIND_NUM_MAX,     /* result = max(ours, theirs) */
	ISCSI_KIND_NUM_DECL,    /* declarative number (each side declares its own) */
	ISCSI_KIND_STR_DECL,    /* declarative string (names, alias, address, type) */
	ISCSI_KIND_LIST,        /* first value of the offer's list that we accept */
	ISCSI_KIND_AUTH,        /* AuthMethod, CHAP_*: handled by login.c / chap.c */
	ISCSI_KIND_REJECT,      /* obsolete keys always answered Reject (RFC 7143 13.26) */
};

enum iscsi_key_use {
	ISCSI_USE_LO,           /* leading connection's login only */
	ISCSI_USE_IO,           /* login only (initialize only) */
	ISCSI_USE_ALL,          /* login and full feature phase */
	ISCSI_USE_FFP,          /* full feature phase only (SendTargets) */
	ISCSI_USE_SEC,          /* security negotiation stage only */
};

enum iscsi_key_scope {
	ISCSI_SCOPE_SESSION,
	ISCSI_SCOPE_CONN,
};

/* Where the target's own value (its offer) comes from. */
enum iscsi_key_offer {
	ISCSI_OFFER_CONST,      /* def_offer below */
	ISCSI_OFFER_DIGEST,     /* CRC32C,None on TCP; None on iSER */
	ISCSI_OFFER_CFG_INITIAL_R2T,
	ISCSI_OFFER_CFG_IMMEDIATE,
	ISCSI_OFFER_CFG_MAX_RECV_DSL,
	ISCSI_OFFER_CFG_MAX_BURST,
	ISCSI_OFFER_CFG_FIRST_BURST,
	ISCSI_OFFER_CFG_MAX_R2T,
	ISCSI_OFFER_ISER,       /* Yes on an iSER portal, No on TCP */
};

struct iscsi_key_def {
	const char *name;
	enum iscsi_key_id id;
	enum iscsi_key_kind kind;
	enum iscsi_key_use use;
	enum iscsi_key_scope scope;
	bool iser_only;         /* RFC 7145 key: irrelevant unless RDMAExtensions=Yes */
	bool target_sends;      /* only the target may send it (initiator's copy: Reject) */
	bool irrelevant_discovery;
	size_t max_len;         /* longest value accepted */
	uint64_t min, max;      /* numerical range */
	uint64_t rfc_default;   /* value when not negotiated (booleans 0/1) */
	enum iscsi_key_offer offer;
	uint64_t def_offer;
	const char *list;       /* LIST keys: comma list of values we accept, in preference */
};

const struct iscsi_key_def *iscsi_key_find(const char *name);
const struct iscsi_key_def *iscsi_key_def(enum iscsi_key_id id);

/* ---------------- negotiation state ---------------- */

enum iscsi_neg_state {
	ISCSI_NEG_NONE = 0,     /* not mentioned yet: RFC default in force */
	ISCSI_NEG_DONE,         /* offered by the initiator and answered, or declared */
	ISCSI_NEG_REJECTED,     /* the initiator's offer was answered Reject */
	ISCSI_NEG_PROPOSED,     /* we proposed it; waiting for the initiator's answer */
};

enum iscsi_neg_phase {
	ISCSI_PHASE_LOGIN,
	ISCSI_PHASE_FFP,
};

struct iscsi_neg {
	const struct gw_target_cfg *tgt;        /* NULL for discovery */
	enum gw_transport transport;
	bool discovery;
	bool leading;                           /* TSIH 0 */
	uint64_t val[ISCSI_KEY__COUNT];         /* negotiated value (bool 0/1, list index) */
	uint8_t state[ISCSI_KEY__COUNT];
	bool first_burst_answer;                /* FirstBurstLength answer deferred */
	bool mrdsl_declared;                    /* we declared our MaxRecvDataSegmentLength */
	char initiator_alias[ISCSI_VALUE_MAX + 1];
};

void iscsi_neg_init(struct iscsi_neg *n, const struct gw_target_cfg *tgt,
		    enum gw_transport transport, bool discovery, bool leading);

/* Target's own value for a numerical / boolean key. */
uint64_t iscsi_neg_offer_value(const struct iscsi_neg *n, const struct iscsi_key_def *k);

/*
 * Handle one key the initiator sent (not AUTH keys and not the login
 * identity keys InitiatorName/TargetName/SessionType, which login.c owns).
 * Appends our answer, if one is due, to rsp. Returns 0, or -EPROTO when the
 * whole negotiation must fail (invalid declaration, a bad answer to our own
 * proposal), with a reason in why; -ENOMEM / -E2BIG from the builder.
 */
int iscsi_neg_key(struct iscsi_neg *n, const struct iscsi_key_def *k, const char *val,
		  enum iscsi_neg_phase phase, struct iscsi_textbuf *rsp, char *why, size_t whylen);

/* After all keys of one message: deferred answers (FirstBurstLength <= MaxBurstLength). */
int iscsi_neg_end_message(struct iscsi_neg *n, struct iscsi_textbuf *rsp);

/* Declare our MaxRecvDataSegmentLength once (operational stage). */
int iscsi_neg_declare(struct iscsi_neg *n, struct iscsi_textbuf *rsp);

/*
 * Before leaving the login for full feature phase: propose the keys whose
 * RFC default we cannot live with and that the initiator did not mention
 * (e.g. ImmediateData=No, a smaller MaxBurstLength, RDMAExtensions=Yes).
 * *nproposed: how many were added now (with add false: how many would be);
 * *npending: still unanswered.
 * Returns -EPROTO (with why) if a needed key ended Rejected or at an
 * unacceptable value (e.g. RDMAExtensions=No on an iSER portal).
 */
int iscsi_neg_propose(struct iscsi_neg *n, struct iscsi_textbuf *rsp, bool add,
		      unsigned int *nproposed, unsigned int *npending, char *why, size_t whylen);

/* Final parameter sets. */
void iscsi_neg_result(const struct iscsi_neg *n, struct iscsi_sess_params *sp,
		      struct iscsi_conn_params *cp);

GW_API_END

#endif
