/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Text keys: parser, builder, value codecs, the key table and the
 * negotiation engine (RFC 7143 5.1, 6.2, 13; RFC 7144; RFC 7145 6).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/params.h"

#define ISCSI_RDSL_MIN 512u
#define ISCSI_RDSL_MAX 16777215u

/*
 * The one key table. Kinds, use and ranges are those of RFC 7143 section 13
 * (RFC 7144 for TaskReporting/iSCSIProtocolLevel, RFC 7145 section 6 for the
 * iSER keys). Our offer is either a constant or comes from the target's
 * configuration (see iscsi_neg_offer_value).
 */
static const struct iscsi_key_def key_table[ISCSI_KEY__COUNT] = {
	[ISCSI_KEY_HEADER_DIGEST] = {
		.name = "HeaderDigest", .id = ISCSI_KEY_HEADER_DIGEST, .kind = ISCSI_KIND_LIST,
		.use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_VALUE_MAX,
		.offer = ISCSI_OFFER_DIGEST, .list = "None,CRC32C",
	},
	[ISCSI_KEY_DATA_DIGEST] = {
		.name = "DataDigest", .id = ISCSI_KEY_DATA_DIGEST, .kind = ISCSI_KIND_LIST,
		.use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_VALUE_MAX,
		.offer = ISCSI_OFFER_DIGEST, .list = "None,CRC32C",
	},
	[ISCSI_KEY_MAX_CONNECTIONS] = {
		.name = "MaxConnections", .id = ISCSI_KEY_MAX_CONNECTIONS, .kind = ISCSI_KIND_NUM_MIN,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .irrelevant_discovery = true,
		.max_len = ISCSI_VALUE_MAX, .min = 1, .max = 65535, .rfc_default = 1,
		.offer = ISCSI_OFFER_CONST, .def_offer = 1,
	},
	[ISCSI_KEY_SEND_TARGETS] = {
		.name = "SendTargets", .id = ISCSI_KEY_SEND_TARGETS, .kind = ISCSI_KIND_STR_DECL,
		.use = ISCSI_USE_FFP, .scope = ISCSI_SCOPE_SESSION, .max_len = ISCSI_VALUE_MAX,
	},
	[ISCSI_KEY_TARGET_NAME] = {
		.name = "TargetName", .id = ISCSI_KEY_TARGET_NAME, .kind = ISCSI_KIND_STR_DECL,
		.use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_SESSION, .max_len = GW_NAME_MAX - 1,
	},
	[ISCSI_KEY_INITIATOR_NAME] = {
		.name = "InitiatorName", .id = ISCSI_KEY_INITIATOR_NAME, .kind = ISCSI_KIND_STR_DECL,
		.use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_SESSION, .max_len = GW_NAME_MAX - 1,
	},
	[ISCSI_KEY_TARGET_ALIAS] = {
		.name = "TargetAlias", .id = ISCSI_KEY_TARGET_ALIAS, .kind = ISCSI_KIND_STR_DECL,
		.use = ISCSI_USE_ALL, .scope = ISCSI_SCOPE_SESSION, .target_sends = true,
		.max_len = ISCSI_VALUE_MAX,
	},
	[ISCSI_KEY_INITIATOR_ALIAS] = {
		.name = "InitiatorAlias", .id = ISCSI_KEY_INITIATOR_ALIAS, .kind = ISCSI_KIND_STR_DECL,
		.use = ISCSI_USE_ALL, .scope = ISCSI_SCOPE_SESSION, .max_len = ISCSI_VALUE_MAX,
	},
	[ISCSI_KEY_TARGET_ADDRESS] = {
		.name = "TargetAddress", .id = ISCSI_KEY_TARGET_ADDRESS, .kind = ISCSI_KIND_STR_DECL,
		.use = ISCSI_USE_ALL, .scope = ISCSI_SCOPE_SESSION, .target_sends = true,
		.max_len = ISCSI_VALUE_MAX,
	},
	[ISCSI_KEY_TPGT] = {
		.name = "TargetPortalGroupTag", .id = ISCSI_KEY_TPGT, .kind = ISCSI_KIND_NUM_DECL,
		.use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_SESSION, .target_sends = true,
		.max_len = ISCSI_VALUE_MAX, .min = 0, .max = 65535,
	},
	[ISCSI_KEY_INITIAL_R2T] = {
		.name = "InitialR2T", .id = ISCSI_KEY_INITIAL_R2T, .kind = ISCSI_KIND_BOOL_OR,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .irrelevant_discovery = true,
		.max_len = ISCSI_VALUE_MAX, .rfc_default = 1, .offer = ISCSI_OFFER_CFG_INITIAL_R2T,
	},
	[ISCSI_KEY_IMMEDIATE_DATA] = {
		.name = "ImmediateData", .id = ISCSI_KEY_IMMEDIATE_DATA, .kind = ISCSI_KIND_BOOL_AND,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .irrelevant_discovery = true,
		.max_len = ISCSI_VALUE_MAX, .rfc_default = 1, .offer = ISCSI_OFFER_CFG_IMMEDIATE,
	},
	[ISCSI_KEY_MAX_RECV_DSL] = {
		.name = "MaxRecvDataSegmentLength", .id = ISCSI_KEY_MAX_RECV_DSL,
		.kind = ISCSI_KIND_NUM_DECL, .use = ISCSI_USE_ALL, .scope = ISCSI_SCOPE_CONN,
		.max_len = ISCSI_VALUE_MAX, .min = ISCSI_RDSL_MIN, .max = ISCSI_RDSL_MAX,
		.rfc_default = ISCSI_DEFAULT_MRDSL, .offer = ISCSI_OFFER_CFG_MAX_RECV_DSL,
	},
	[ISCSI_KEY_MAX_BURST] = {
		.name = "MaxBurstLength", .id = ISCSI_KEY_MAX_BURST, .kind = ISCSI_KIND_NUM_MIN,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .irrelevant_discovery = true,
		.max_len = ISCSI_VALUE_MAX, .min = 512, .max = ISCSI_RDSL_MAX, .rfc_default = 262144,
		.offer = ISCSI_OFFER_CFG_MAX_BURST,
	},
	[ISCSI_KEY_FIRST_BURST] = {
		.name = "FirstBurstLength", .id = ISCSI_KEY_FIRST_BURST, .kind = ISCSI_KIND_NUM_MIN,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .irrelevant_discovery = true,
		.max_len = ISCSI_VALUE_MAX, .min = 512, .max = ISCSI_RDSL_MAX, .rfc_default = 65536,
		.offer = ISCSI_OFFER_CFG_FIRST_BURST,
	},
	[ISCSI_KEY_TIME2WAIT] = {
		.name = "DefaultTime2Wait", .id = ISCSI_KEY_TIME2WAIT, .kind = ISCSI_KIND_NUM_MAX,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .max_len = ISCSI_VALUE_MAX,
		.min = 0, .max = 3600, .rfc_default = 2, .offer = ISCSI_OFFER_CONST, .def_offer = 2,
	},
	[ISCSI_KEY_TIME2RETAIN] = {
		.name = "DefaultTime2Retain", .id = ISCSI_KEY_TIME2RETAIN, .kind = ISCSI_KIND_NUM_MIN,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .max_len = ISCSI_VALUE_MAX,
		.min = 0, .max = 3600, .rfc_default = 20, .offer = ISCSI_OFFER_CONST, .def_offer = 20,
	},
	[ISCSI_KEY_MAX_OUTSTANDING_R2T] = {
		.name = "MaxOutstandingR2T", .id = ISCSI_KEY_MAX_OUTSTANDING_R2T,
		.kind = ISCSI_KIND_NUM_MIN, .use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION,
		.irrelevant_discovery = true, .max_len = ISCSI_VALUE_MAX, .min = 1, .max = 65535,
		.rfc_default = 1, .offer = ISCSI_OFFER_CFG_MAX_R2T,
	},
	[ISCSI_KEY_DATA_PDU_IN_ORDER] = {
		.name = "DataPDUInOrder", .id = ISCSI_KEY_DATA_PDU_IN_ORDER, .kind = ISCSI_KIND_BOOL_OR,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .irrelevant_discovery = true,
		.max_len = ISCSI_VALUE_MAX, .rfc_default = 1, .offer = ISCSI_OFFER_CONST,
		.def_offer = 1,
	},
	[ISCSI_KEY_DATA_SEQ_IN_ORDER] = {
		.name = "DataSequenceInOrder", .id = ISCSI_KEY_DATA_SEQ_IN_ORDER,
		.kind = ISCSI_KIND_BOOL_OR, .use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION,
		.irrelevant_discovery = true, .max_len = ISCSI_VALUE_MAX, .rfc_default = 1,
		.offer = ISCSI_OFFER_CONST, .def_offer = 1,
	},
	[ISCSI_KEY_ERL] = {
		.name = "ErrorRecoveryLevel", .id = ISCSI_KEY_ERL, .kind = ISCSI_KIND_NUM_MIN,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .max_len = ISCSI_VALUE_MAX,
		.min = 0, .max = 2, .rfc_default = 0, .offer = ISCSI_OFFER_CONST, .def_offer = 0,
	},
	[ISCSI_KEY_SESSION_TYPE] = {
		.name = "SessionType", .id = ISCSI_KEY_SESSION_TYPE, .kind = ISCSI_KIND_STR_DECL,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .max_len = ISCSI_VALUE_MAX,
	},
	[ISCSI_KEY_AUTH_METHOD] = {
		.name = "AuthMethod", .id = ISCSI_KEY_AUTH_METHOD, .kind = ISCSI_KIND_AUTH,
		.use = ISCSI_USE_SEC, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_VALUE_MAX,
		.list = "None,CHAP",
	},
	[ISCSI_KEY_CHAP_A] = {
		.name = "CHAP_A", .id = ISCSI_KEY_CHAP_A, .kind = ISCSI_KIND_AUTH,
		.use = ISCSI_USE_SEC, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_VALUE_MAX,
	},
	[ISCSI_KEY_CHAP_I] = {
		.name = "CHAP_I", .id = ISCSI_KEY_CHAP_I, .kind = ISCSI_KIND_AUTH,
		.use = ISCSI_USE_SEC, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_VALUE_MAX,
	},
	[ISCSI_KEY_CHAP_C] = {
		.name = "CHAP_C", .id = ISCSI_KEY_CHAP_C, .kind = ISCSI_KIND_AUTH,
		.use = ISCSI_USE_SEC, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_BIG_VALUE_MAX,
	},
	[ISCSI_KEY_CHAP_N] = {
		.name = "CHAP_N", .id = ISCSI_KEY_CHAP_N, .kind = ISCSI_KIND_AUTH,
		.use = ISCSI_USE_SEC, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_VALUE_MAX,
	},
	[ISCSI_KEY_CHAP_R] = {
		.name = "CHAP_R", .id = ISCSI_KEY_CHAP_R, .kind = ISCSI_KIND_AUTH,
		.use = ISCSI_USE_SEC, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_BIG_VALUE_MAX,
	},
	/* RFC 7143 13.26: obsolete markers. OFMarker/IFMarker answered No (AND with our No). */
	[ISCSI_KEY_OF_MARKER] = {
		.name = "OFMarker", .id = ISCSI_KEY_OF_MARKER, .kind = ISCSI_KIND_BOOL_AND,
		.use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_VALUE_MAX,
		.rfc_default = 0, .offer = ISCSI_OFFER_CONST, .def_offer = 0,
	},
	[ISCSI_KEY_IF_MARKER] = {
		.name = "IFMarker", .id = ISCSI_KEY_IF_MARKER, .kind = ISCSI_KIND_BOOL_AND,
		.use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_VALUE_MAX,
		.rfc_default = 0, .offer = ISCSI_OFFER_CONST, .def_offer = 0,
	},
	[ISCSI_KEY_OF_MARK_INT] = {
		.name = "OFMarkInt", .id = ISCSI_KEY_OF_MARK_INT, .kind = ISCSI_KIND_REJECT,
		.use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_VALUE_MAX,
	},
	[ISCSI_KEY_IF_MARK_INT] = {
		.name = "IFMarkInt", .id = ISCSI_KEY_IF_MARK_INT, .kind = ISCSI_KIND_REJECT,
		.use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_CONN, .max_len = ISCSI_VALUE_MAX,
	},
	/* RFC 7144 / RFC 7143 13.23-13.24: we implement RFC 7143 semantics (level 1). */
	[ISCSI_KEY_TASK_REPORTING] = {
		.name = "TaskReporting", .id = ISCSI_KEY_TASK_REPORTING, .kind = ISCSI_KIND_LIST,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .irrelevant_discovery = true,
		.max_len = ISCSI_VALUE_MAX, .offer = ISCSI_OFFER_CONST, .list = "RFC3720",
	},
	[ISCSI_KEY_PROTOCOL_LEVEL] = {
		.name = "iSCSIProtocolLevel", .id = ISCSI_KEY_PROTOCOL_LEVEL,
		.kind = ISCSI_KIND_NUM_MIN, .use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION,
		.max_len = ISCSI_VALUE_MAX, .min = 0, .max = 31, .rfc_default = 1,
		.offer = ISCSI_OFFER_CONST, .def_offer = 1,
	},
	/* RFC 7145 section 6. */
	[ISCSI_KEY_RDMA_EXTENSIONS] = {
		.name = "RDMAExtensions", .id = ISCSI_KEY_RDMA_EXTENSIONS, .kind = ISCSI_KIND_BOOL_AND,
		.use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION, .irrelevant_discovery = true,
		.max_len = ISCSI_VALUE_MAX, .rfc_default = 0, .offer = ISCSI_OFFER_ISER,
	},
	[ISCSI_KEY_INITIATOR_RDSL] = {
		.name = "InitiatorRecvDataSegmentLength", .id = ISCSI_KEY_INITIATOR_RDSL,
		.kind = ISCSI_KIND_NUM_MIN, .use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_CONN,
		.iser_only = true, .irrelevant_discovery = true, .max_len = ISCSI_VALUE_MAX,
		.min = ISCSI_RDSL_MIN, .max = ISCSI_RDSL_MAX, .rfc_default = ISCSI_DEFAULT_MRDSL,
		.offer = ISCSI_OFFER_CFG_MAX_RECV_DSL,
	},
	[ISCSI_KEY_TARGET_RDSL] = {
		.name = "TargetRecvDataSegmentLength", .id = ISCSI_KEY_TARGET_RDSL,
		.kind = ISCSI_KIND_NUM_MIN, .use = ISCSI_USE_IO, .scope = ISCSI_SCOPE_CONN,
		.iser_only = true, .irrelevant_discovery = true, .max_len = ISCSI_VALUE_MAX,
		.min = ISCSI_RDSL_MIN, .max = ISCSI_RDSL_MAX, .rfc_default = ISCSI_DEFAULT_MRDSL,
		.offer = ISCSI_OFFER_CFG_MAX_RECV_DSL,
	},
	[ISCSI_KEY_MAX_OUT_UNEXP_PDUS] = {
		.name = "MaxOutstandingUnexpectedPDUs", .id = ISCSI_KEY_MAX_OUT_UNEXP_PDUS,
		.kind = ISCSI_KIND_NUM_MIN0, .use = ISCSI_USE_LO, .scope = ISCSI_SCOPE_SESSION,
		.iser_only = true, .irrelevant_discovery = true, .max_len = ISCSI_VALUE_MAX,
		.min = 2, .max = UINT32_MAX, .rfc_default = 0, .offer = ISCSI_OFFER_CONST,
		.def_offer = 0,
	},
};

const struct iscsi_key_def *iscsi_key_find(const char *name)
{
	size_t i;

	for (i = 0; i < ISCSI_KEY__COUNT; i++)
		if (strcmp(key_table[i].name, name) == 0)
			return &key_table[i];
	return NULL;
}

const struct iscsi_key_def *iscsi_key_def(enum iscsi_key_id id)
{
	if ((unsigned int)id >= ISCSI_KEY__COUNT)
		return NULL;
	return &key_table[id];
}

/* ---------------- key=value pairs ---------------- */

static bool key_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '+' || c == '@' || c == '_';
}

int iscsi_kv_next(const char *buf, size_t len, size_t *off, struct iscsi_kv *kv,
		  char *why, size_t whylen)
{
	while (*off < len) {
		const char *s = buf + *off;
		const char *nul = memchr(s, '\0', len - *off);
		const char *eq;
		size_t slen, klen, i;

		if (!nul) {
			snprintf(why, whylen, "text not NUL-terminated");
			return -EPROTO;
		}
		slen = (size_t)(nul - s);
		*off += slen + 1;
		if (slen == 0)
			continue;
		eq = memchr(s, '=', slen);
		if (!eq) {
			snprintf(why, whylen, "key without '=' (%.40s)", s);
			return -EPROTO;
		}
		klen = (size_t)(eq - s);
		if (klen == 0) {
			snprintf(why, whylen, "empty key name");
			return -EPROTO;
		}
		if (klen > ISCSI_KEY_NAME_MAX) {
			snprintf(why, whylen, "key name longer than %u bytes (%.40s...)",
				 ISCSI_KEY_NAME_MAX, s);
			return -EPROTO;
		}
		for (i = 0; i < klen; i++) {
			if (!key_char_ok(s[i])) {
				snprintf(why, whylen, "invalid character 0x%02x in key name",
					 (unsigned int)(unsigned char)s[i]);
				return -EPROTO;
			}
		}
		memcpy(kv->key, s, klen);
		kv->key[klen] = '\0';
		kv->val = eq + 1;
		kv->vlen = slen - klen - 1;
		return 1;
	}
	return 0;
}

/* ---------------- response builder ---------------- */

void iscsi_tb_init(struct iscsi_textbuf *tb, size_t limit)
{
	memset(tb, 0, sizeof(*tb));
	tb->limit = limit ? limit : ISCSI_TEXT_MAX;
}

void iscsi_tb_reset(struct iscsi_textbuf *tb)
{
	tb->len = 0;
}

void iscsi_tb_free(struct iscsi_textbuf *tb)
{
	free(tb->buf);
	tb->buf = NULL;
	tb->len = 0;
	tb->cap = 0;
}

static int tb_reserve(struct iscsi_textbuf *tb, size_t more)
{
	size_t need, ncap;
	char *nb;

	if (more > tb->limit || tb->len > tb->limit - more)
		return -E2BIG;
	need = tb->len + more;
	if (need <= tb->cap)
		return 0;
	ncap = tb->cap ? tb->cap : 512;
	while (ncap < need)
		ncap *= 2;
	if (ncap > tb->limit)
		ncap = tb->limit;
	nb = realloc(tb->buf, ncap);
	if (!nb)
		return -ENOMEM;
	tb->buf = nb;
	tb->cap = ncap;
	return 0;
}

int iscsi_tb_append(struct iscsi_textbuf *tb, const void *data, size_t len)
{
	int rc;

	if (len == 0)
		return 0;
	rc = tb_reserve(tb, len);
	if (rc)
		return rc;
	memcpy(tb->buf + tb->len, data, len);
	tb->len += len;
	return 0;
}

int iscsi_tb_add(struct iscsi_textbuf *tb, const char *key, const char *val)
{
	size_t kl = strlen(key), vl = strlen(val);
	int rc;

	rc = tb_reserve(tb, kl + vl + 2);
	if (rc)
		return rc;
	memcpy(tb->buf + tb->len, key, kl);
	tb->buf[tb->len + kl] = '=';
	memcpy(tb->buf + tb->len + kl + 1, val, vl);
	tb->buf[tb->len + kl + 1 + vl] = '\0';
	tb->len += kl + vl + 2;
	return 0;
}

int iscsi_tb_addf(struct iscsi_textbuf *tb, const char *key, const char *fmt, ...)
{
	char val[ISCSI_BIG_VALUE_MAX + 1];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(val))
		return -E2BIG;
	return iscsi_tb_add(tb, key, val);
}

int iscsi_tb_add_u64(struct iscsi_textbuf *tb, const char *key, uint64_t v)
{
	return iscsi_tb_addf(tb, key, "%llu", (unsigned long long)v);
}

/* ---------------- value codecs ---------------- */

/* The value of c as a digit of alphabet (its index), or -1. */
static int digit_val(const char *alphabet, char c)
{
	const char *p = c ? strchr(alphabet, c) : NULL;

	return p ? (int)(p - alphabet) : -1;
}

static int hex_val(char c)
{
	return digit_val("0123456789abcdef", (char)tolower((unsigned char)c));
}

static int b64_val(char c)
{
	return digit_val("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", c);
}

/* Decode hex digits (odd count: implied leading zero nibble). */
static int decode_hex(const char *s, uint8_t *out, size_t max, size_t *outlen)
{
	size_t n = strlen(s), i, o = 0;
	int hi, lo;

	if (n == 0)
		return -EINVAL;
	if ((n + 1) / 2 > max)
		return -E2BIG;
	i = 0;
	if (n & 1) {
		lo = hex_val(s[0]);
		if (lo < 0)
			return -EINVAL;
		out[o++] = (uint8_t)lo;
		i = 1;
	}
	for (; i < n; i += 2) {
		hi = hex_val(s[i]);
		lo = hex_val(s[i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[o++] = (uint8_t)((hi << 4) | lo);
	}
	*outlen = o;
	return 0;
}

/* Decode base64 (RFC 4648, padding optional). */
static int decode_b64(const char *s, uint8_t *out, size_t max, size_t *outlen)
{
	size_t n = strlen(s), i, o = 0, pad = 0;
	uint32_t acc = 0;
	unsigned int bits = 0;

	while (n > 0 && s[n - 1] == '=' && pad < 2) {
		n--;
		pad++;
	}
	if (n == 0 || (n % 4) == 1)
		return -EINVAL;
	if (pad && ((n + pad) % 4) != 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		int v = b64_val(s[i]);

		if (v < 0)
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= max)
				return -E2BIG;
			out[o++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1u;
		}
	}
	if (acc != 0) /* non-canonical trailing bits */
		return -EINVAL;
	*outlen = o;
	return 0;
}

int iscsi_parse_binary(const char *s, uint8_t *out, size_t max, size_t *outlen)
{
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return decode_hex(s + 2, out, max, outlen);
	if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
		return decode_b64(s + 2, out, max, outlen);
	return -EINVAL;
}

int iscsi_parse_number(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!s[0])
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || s[1] == 'b' || s[1] == 'B')) {
		uint8_t bin[ISCSI_VALUE_MAX];
		size_t n = 0;
		int rc = iscsi_parse_binary(s, bin, sizeof(bin), &n);

		if (rc == -E2BIG)
			return -ERANGE;
		if (rc)
			return rc;
		for (i = 0; i < n; i++) {
			if (v >> 56)
				return -ERANGE;
			v = (v << 8) | bin[i];
		}
		*out = v;
		return 0;
	}
	for (i = 0; s[i]; i++) {
		unsigned int d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (unsigned int)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int iscsi_encode_hex(const uint8_t *in, size_t n, char *out, size_t outsz)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	if (outsz < 2 * n + 3)
		return -E2BIG;
	out[0] = '0';
	out[1] = 'x';
	for (i = 0; i < n; i++) {
		out[2 + 2 * i] = digits[in[i] >> 4];
		out[3 + 2 * i] = digits[in[i] & 15];
	}
	out[2 + 2 * n] = '\0';
	return 0;
}

int iscsi_parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "Yes") == 0) {
		*out = true;
		return 0;
	}
	if (strcmp(s, "No") == 0) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

/* ---------------- negotiation ---------------- */

static uint32_t clamp_rdsl(uint32_t v, uint32_t fallback)
{
	if (v == 0)
		v = fallback;
	if (v < ISCSI_RDSL_MIN)
		v = ISCSI_RDSL_MIN;
	if (v > ISCSI_RDSL_MAX)
		v = ISCSI_RDSL_MAX;
	return v;
}

uint64_t iscsi_neg_offer_value(const struct iscsi_neg *n, const struct iscsi_key_def *k)
{
	const struct gw_target_cfg *t = n->tgt;

	switch (k->offer) {
	case ISCSI_OFFER_CONST:
		return k->def_offer;
	case ISCSI_OFFER_DIGEST:
		return 0;
	case ISCSI_OFFER_CFG_INITIAL_R2T:
		/* iSER: write data past the immediate part is fetched by RDMA
		 * Read, never sent as unsolicited Data-Out Sends (as LIO and tgt) */
		if (n->transport == GW_TRANSPORT_ISER)
			return 1;
		return t ? t->initial_r2t : 1;
	case ISCSI_OFFER_CFG_IMMEDIATE:
		return t ? t->immediate_data : 1;
	case ISCSI_OFFER_CFG_MAX_RECV_DSL: {
		uint64_t v = t ? clamp_rdsl(t->max_recv_dsl, 262144) : ISCSI_DEFAULT_MRDSL;

		/* iSER: our receive buffers are posted in advance, of a fixed size */
		if (n->transport == GW_TRANSPORT_ISER && k->id != ISCSI_KEY_INITIATOR_RDSL &&
		    v > ISCSI_ISER_RECV_DSL)
			v = ISCSI_ISER_RECV_DSL;
		return v;
	}
	case ISCSI_OFFER_CFG_MAX_BURST:
		return t ? clamp_rdsl(t->max_burst, 16776192) : 262144;
	case ISCSI_OFFER_CFG_FIRST_BURST:
		return t ? clamp_rdsl(t->first_burst, 262144) : 65536;
	case ISCSI_OFFER_CFG_MAX_R2T:
		if (!t || t->max_outstanding_r2t == 0)
			return 1;
		return t->max_outstanding_r2t > 65535 ? 65535 : t->max_outstanding_r2t;
	case ISCSI_OFFER_ISER:
		return n->transport == GW_TRANSPORT_ISER;
	}
	return k->rfc_default;
}

void iscsi_neg_init(struct iscsi_neg *n, const struct gw_target_cfg *tgt,
		    enum gw_transport transport, bool discovery, bool leading)
{
	size_t i;

	memset(n, 0, sizeof(*n));
	n->tgt = tgt;
	n->transport = transport;
	n->discovery = discovery;
	n->leading = leading;
	for (i = 0; i < ISCSI_KEY__COUNT; i++)
		n->val[i] = key_table[i].rfc_default;
}

static int answer(struct iscsi_textbuf *rsp, const struct iscsi_key_def *k, const char *v)
{
	return iscsi_tb_add(rsp, k->name, v);
}

static bool key_applies(const struct iscsi_neg *n, const struct iscsi_key_def *k)
{
	if (n->discovery && k->irrelevant_discovery)
		return false;
	if (k->iser_only && n->transport != GW_TRANSPORT_ISER)
		return false;
	if (k->use == ISCSI_USE_LO && !n->leading)
		return false;
	return true;
}

/* Is value v the one from the accepted list for this key on this transport? */
static int list_index(const struct iscsi_neg *n, const struct iscsi_key_def *k, const char *v,
		      size_t vlen)
{
	const char *p = k->list;
	int idx = 0;

	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == vlen && memcmp(p, v, l) == 0) {
			/* RFC 7145: no digests on iSER (CRC32C is index 1 of the digest list) */
			if (k->offer == ISCSI_OFFER_DIGEST && idx != 0 &&
			    n->transport == GW_TRANSPORT_ISER)
				return -1;
			return idx;
		}
		if (!e)
			break;
		p = e + 1;
		idx++;
	}
	return -1;
}

static const char *list_name(const struct iscsi_key_def *k, uint64_t idx, char *buf, size_t sz)
{
	const char *p = k->list;
	uint64_t i = 0;

	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (i == idx) {
			snprintf(buf, sz, "%.*s", (int)l, p);
			return buf;
		}
		if (!e)
			break;
		p = e + 1;
		i++;
	}
	snprintf(buf, sz, "?");
	return buf;
}

/* First element of the offered comma list we accept: index, or -1; -EINVAL if malformed. */
static int pick_from_list(const struct iscsi_neg *n, const struct iscsi_key_def *k,
			  const char *val)
{
	const char *p = val;
	int best = -1;

	if (!*val)
		return -EINVAL;
	for (;;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		int idx;

		if (l == 0)
			return -EINVAL; /* the whole list is malformed */
		idx = list_index(n, k, p, l);
		if (best < 0 && idx >= 0)
			best = idx;
		if (!e)
			return best;
		p = e + 1;
	}
}

static uint64_t num_result(const struct iscsi_key_def *k, uint64_t ours, uint64_t theirs)
{
	switch (k->kind) {
	case ISCSI_KIND_NUM_MIN:
		return ours < theirs ? ours : theirs;
	case ISCSI_KIND_NUM_MAX:
		return ours > theirs ? ours : theirs;
	case ISCSI_KIND_NUM_MIN0:
		if (ours == 0)
			return theirs;
		if (theirs == 0)
			return ours;
		return ours < theirs ? ours : theirs;
	default:
		return theirs;
	}
}

static bool num_in_range(const struct iscsi_key_def *k, uint64_t v)
{
	if (k->kind == ISCSI_KIND_NUM_MIN0 && v == 0)
		return true;
	return v >= k->min && v <= k->max;
}

static bool is_answer_word(const char *v)
{
	return strcmp(v, "Reject") == 0 || strcmp(v, "Irrelevant") == 0 ||
	       strcmp(v, "NotUnderstood") == 0;
}

/* The initiator's reply to a key we proposed. */
static int take_answer(struct iscsi_neg *n, const struct iscsi_key_def *k, const char *val)
{
	uint64_t ours = iscsi_neg_offer_value(n, k), v;
	bool b;

	n->state[k->id] = ISCSI_NEG_REJECTED;
	if (is_answer_word(val))
		return 0;
	switch (k->kind) {
	case ISCSI_KIND_BOOL_AND:
	case ISCSI_KIND_BOOL_OR:
		if (iscsi_parse_bool(val, &b))
			return 0;
		n->val[k->id] = k->kind == ISCSI_KIND_BOOL_AND ? (ours && b) : (ours || b);
		break;
	case ISCSI_KIND_NUM_MIN:
	case ISCSI_KIND_NUM_MIN0:
	case ISCSI_KIND_NUM_MAX:
		if (iscsi_parse_number(val, &v) || !num_in_range(k, v))
			return 0;
		n->val[k->id] = num_result(k, ours, v);
		break;
	default:
		return 0;
	}
	n->state[k->id] = ISCSI_NEG_DONE;
	return 0;
}

int iscsi_neg_key(struct iscsi_neg *n, const struct iscsi_key_def *k, const char *val,
		  enum iscsi_neg_phase phase, struct iscsi_textbuf *rsp, char *why, size_t whylen)
{
	uint64_t v, ours, res;
	bool b;
	int idx;
	char buf[32];

	if (k->kind == ISCSI_KIND_AUTH) {
		snprintf(why, whylen, "%s is a security key", k->name);
		return -EPROTO;
	}
	if (phase == ISCSI_PHASE_FFP) {
		if (k->use != ISCSI_USE_ALL && k->use != ISCSI_USE_FFP)
			return answer(rsp, k, "Reject");
	} else if (k->use == ISCSI_USE_FFP) {
		return answer(rsp, k, "Reject");
	}
	if (k->target_sends || k->kind == ISCSI_KIND_REJECT)
		return answer(rsp, k, "Reject");
	if (!key_applies(n, k))
		return answer(rsp, k, "Irrelevant");
	if (strlen(val) > k->max_len) {
		if (k->kind == ISCSI_KIND_NUM_DECL && phase == ISCSI_PHASE_LOGIN) {
			snprintf(why, whylen, "%s value too long", k->name);
			return -EPROTO;
		}
		n->state[k->id] = ISCSI_NEG_REJECTED;
		return answer(rsp, k, "Reject");
	}
	if (n->state[k->id] == ISCSI_NEG_PROPOSED)
		return take_answer(n, k, val);

	ours = iscsi_neg_offer_value(n, k);
	switch (k->kind) {
	case ISCSI_KIND_BOOL_AND:
	case ISCSI_KIND_BOOL_OR:
		if (iscsi_parse_bool(val, &b))
			break;
		res = k->kind == ISCSI_KIND_BOOL_AND ? (ours && b) : (ours || b);
		n->val[k->id] = res;
		n->state[k->id] = ISCSI_NEG_DONE;
		return answer(rsp, k, res ? "Yes" : "No");
	case ISCSI_KIND_NUM_MIN:
	case ISCSI_KIND_NUM_MIN0:
	case ISCSI_KIND_NUM_MAX:
		if (iscsi_parse_number(val, &v) || !num_in_range(k, v))
			break;
		res = num_result(k, ours, v);
		n->val[k->id] = res;
		n->state[k->id] = ISCSI_NEG_DONE;
		if (k->id == ISCSI_KEY_FIRST_BURST) {
			/* answered once MaxBurstLength of the same message is known */
			n->first_burst_answer = true;
			return 0;
		}
		return iscsi_tb_add_u64(rsp, k->name, res);
	case ISCSI_KIND_NUM_DECL:
		if (iscsi_parse_number(val, &v) || !num_in_range(k, v)) {
			if (phase == ISCSI_PHASE_LOGIN) {
				snprintf(why, whylen, "invalid %s=%.40s", k->name, val);
				return -EPROTO;
			}
			break;
		}
		n->val[k->id] = v;
		n->state[k->id] = ISCSI_NEG_DONE;
		return 0;
	case ISCSI_KIND_STR_DECL:
		if (k->id == ISCSI_KEY_INITIATOR_ALIAS) {
			snprintf(n->initiator_alias, sizeof(n->initiator_alias), "%s", val);
			n->state[k->id] = ISCSI_NEG_DONE;
		}
		return 0;
	case ISCSI_KIND_LIST:
		idx = pick_from_list(n, k, val);
		if (idx < 0)
			break;
		n->val[k->id] = (uint64_t)idx;
		n->state[k->id] = ISCSI_NEG_DONE;
		return answer(rsp, k, list_name(k, (uint64_t)idx, buf, sizeof(buf)));
	default:
		break;
	}
	n->state[k->id] = ISCSI_NEG_REJECTED;
	return answer(rsp, k, "Reject");
}

int iscsi_neg_end_message(struct iscsi_neg *n, struct iscsi_textbuf *rsp)
{
	if (!n->first_burst_answer)
		return 0;
	n->first_burst_answer = false;
	if (n->val[ISCSI_KEY_FIRST_BURST] > n->val[ISCSI_KEY_MAX_BURST])
		n->val[ISCSI_KEY_FIRST_BURST] = n->val[ISCSI_KEY_MAX_BURST];
	return iscsi_tb_add_u64(rsp, "FirstBurstLength", n->val[ISCSI_KEY_FIRST_BURST]);
}

int iscsi_neg_declare(struct iscsi_neg *n, struct iscsi_textbuf *rsp)
{
	const struct iscsi_key_def *k = &key_table[ISCSI_KEY_MAX_RECV_DSL];
	int rc;

	if (n->mrdsl_declared)
		return 0;
	rc = iscsi_tb_add_u64(rsp, k->name, iscsi_neg_offer_value(n, k));
	if (rc == 0)
		n->mrdsl_declared = true;
	return rc;
}

/* Can we live with the RFC default of a key nobody negotiated? */
static bool default_acceptable(const struct iscsi_neg *n, const struct iscsi_key_def *k)
{
	uint64_t ours = iscsi_neg_offer_value(n, k);

	switch (k->kind) {
	case ISCSI_KIND_BOOL_AND:
		return k->rfc_default == ours;
	case ISCSI_KIND_BOOL_OR:
		return true; /* Yes is the conservative value of every OR key we have */
	case ISCSI_KIND_NUM_MIN:
		return k->rfc_default <= ours;
	case ISCSI_KIND_NUM_MIN0:
		return ours == 0 || (k->rfc_default != 0 && k->rfc_default <= ours);
	case ISCSI_KIND_NUM_MAX:
		return k->rfc_default >= ours;
	default:
		return true;
	}
}

int iscsi_neg_propose(struct iscsi_neg *n, struct iscsi_textbuf *rsp, bool add,
		      unsigned int *nproposed, unsigned int *npending, char *why, size_t whylen)
{
	size_t i;
	int rc;

	*nproposed = 0;
	*npending = 0;
	for (i = 0; i < ISCSI_KEY__COUNT; i++) {
		const struct iscsi_key_def *k = &key_table[i];
		uint64_t ours;

		switch (k->kind) {
		case ISCSI_KIND_BOOL_AND:
		case ISCSI_KIND_BOOL_OR:
		case ISCSI_KIND_NUM_MIN:
		case ISCSI_KIND_NUM_MIN0:
		case ISCSI_KIND_NUM_MAX:
			break;
		default:
			continue;
		}
		if (!key_applies(n, k))
			continue;
		ours = iscsi_neg_offer_value(n, k);
		switch (n->state[i]) {
		case ISCSI_NEG_PROPOSED:
			(*npending)++;
			continue;
		case ISCSI_NEG_DONE:
			if (k->id == ISCSI_KEY_RDMA_EXTENSIONS && ours && !n->val[i]) {
				snprintf(why, whylen, "RDMAExtensions=No on an iSER portal");
				return -EPROTO;
			}
			continue;
		case ISCSI_NEG_REJECTED:
			if (!default_acceptable(n, k)) {
				snprintf(why, whylen, "no agreement on %s", k->name);
				return -EPROTO;
			}
			continue;
		default:
			break;
		}
		if (default_acceptable(n, k))
			continue;
		if (!add) {
			(*nproposed)++;
			continue;
		}
		if (k->kind == ISCSI_KIND_BOOL_AND || k->kind == ISCSI_KIND_BOOL_OR)
			rc = iscsi_tb_add(rsp, k->name, ours ? "Yes" : "No");
		else
			rc = iscsi_tb_add_u64(rsp, k->name, ours);
		if (rc)
			return rc;
		n->state[i] = ISCSI_NEG_PROPOSED;
		(*nproposed)++;
		(*npending)++;
	}
	return 0;
}

void iscsi_neg_result(const struct iscsi_neg *n, struct iscsi_sess_params *sp,
		      struct iscsi_conn_params *cp)
{
	const struct iscsi_key_def *mrdsl = &key_table[ISCSI_KEY_MAX_RECV_DSL];
	uint32_t ours, peer;
	bool rdma;

	memset(sp, 0, sizeof(*sp));
	memset(cp, 0, sizeof(*cp));
	sp->initial_r2t = n->val[ISCSI_KEY_INITIAL_R2T] != 0;
	sp->immediate_data = n->val[ISCSI_KEY_IMMEDIATE_DATA] != 0;
	sp->data_pdu_in_order = n->val[ISCSI_KEY_DATA_PDU_IN_ORDER] != 0;
	sp->data_seq_in_order = n->val[ISCSI_KEY_DATA_SEQ_IN_ORDER] != 0;
	sp->max_burst = (uint32_t)n->val[ISCSI_KEY_MAX_BURST];
	sp->first_burst = (uint32_t)n->val[ISCSI_KEY_FIRST_BURST];
	if (sp->first_burst > sp->max_burst)
		sp->first_burst = sp->max_burst;
	sp->max_outstanding_r2t = (uint32_t)n->val[ISCSI_KEY_MAX_OUTSTANDING_R2T];
	sp->max_connections = (uint32_t)n->val[ISCSI_KEY_MAX_CONNECTIONS];
	sp->default_time2wait = (uint32_t)n->val[ISCSI_KEY_TIME2WAIT];
	sp->default_time2retain = (uint32_t)n->val[ISCSI_KEY_TIME2RETAIN];
	sp->erl = (uint32_t)n->val[ISCSI_KEY_ERL];

	cp->header_digest = n->val[ISCSI_KEY_HEADER_DIGEST] == 1;
	cp->data_digest = n->val[ISCSI_KEY_DATA_DIGEST] == 1;
	rdma = n->transport == GW_TRANSPORT_ISER && !n->discovery &&
	       n->val[ISCSI_KEY_RDMA_EXTENSIONS] != 0;
	cp->rdma_extensions = rdma;
	cp->initiator_recv_dsl = (uint32_t)n->val[ISCSI_KEY_INITIATOR_RDSL];
	cp->target_recv_dsl = (uint32_t)n->val[ISCSI_KEY_TARGET_RDSL];
	cp->max_outstanding_unexpected_pdus = (uint32_t)n->val[ISCSI_KEY_MAX_OUT_UNEXP_PDUS];

	ours = n->mrdsl_declared ? (uint32_t)iscsi_neg_offer_value(n, mrdsl) : ISCSI_DEFAULT_MRDSL;
	peer = n->state[ISCSI_KEY_MAX_RECV_DSL] == ISCSI_NEG_DONE ?
		       (uint32_t)n->val[ISCSI_KEY_MAX_RECV_DSL] : ISCSI_DEFAULT_MRDSL;
	if (rdma) {
		/*
		 * RFC 7145: the iSER keys replace MaxRecvDataSegmentLength. Initiators
		 * that only used MaxRecvDataSegmentLength (LIO-era behaviour) keep
		 * working: their declaration is used when they sent no iSER key.
		 */
		cp->max_recv_dsl = ours > cp->target_recv_dsl ? ours : cp->target_recv_dsl;
		cp->initiator_recv_dsl_declared =
			n->state[ISCSI_KEY_INITIATOR_RDSL] == ISCSI_NEG_DONE;
		if (cp->initiator_recv_dsl_declared)
			cp->max_xmit_dsl = cp->initiator_recv_dsl;
		else
			cp->max_xmit_dsl = peer;
	} else {
		cp->max_recv_dsl = ours;
		cp->max_xmit_dsl = peer;
	}
}
