/* SPDX-License-Identifier: Apache-2.0 */
// LINK: gw_proto isergw_config isergw_common
// SOURCES: fake_login.c
// COVERS: gateway/core/chap.c
/*
 * CHAP (core/chap.c) and its value encodings (params.c: numbers and binary
 * values in decimal, 0x hex and 0b base64), driven as login.c drives them:
 * iscsi_chap_init with the credentials of a login, iscsi_chap_challenge for
 * the initiator's CHAP_A list, iscsi_chap_response for its CHAP_N/CHAP_R
 * (and CHAP_I/CHAP_C of mutual CHAP), repeated in any order.
 *
 * Input: a flags byte (bit 0: initiator credentials configured, bit 1:
 * mutual credentials, bit 2: a response buffer limited to 64 bytes), then
 * four fields of one length byte and that many bytes: user and secret of
 * the initiator's credentials, user and secret of the mutual ones (secrets
 * of 0 to 255 bytes), then records [op][flags][len, 16 bits big-endian][len bytes]:
 *   op 0  CHAP_A=<bytes>: the challenge
 *   op 1  the bytes as the strings CHAP_N, CHAP_R, CHAP_I, CHAP_C (NUL
 *         separated; flags bits 0-3 leave each out)
 *   op 2  the initiator's answer computed here for the last challenge:
 *         flags bits 0-1 the encoding of CHAP_R (hex, 0X hex upper case,
 *         base64, base64 without padding), bit 2 a wrong user, bit 3 one
 *         bit of the digest flipped, bit 4 mutual CHAP with CHAP_I the first
 *         byte (bit 5: written in hex; no byte: empty) and CHAP_C the rest
 *         (bit 6: base64),
 *         bit 7 CHAP_C our own challenge (a reflection)
 *   op 3  a new login: iscsi_chap_init again
 *   op 4  the codecs: the bytes as a number and as a binary value (at most
 *         flags + 1 bytes), re-encoded in hex and parsed back
 * Checks that abort: a challenge names an algorithm of the list and carries
 * CHAP_A, CHAP_I and CHAP_C once each, CHAP_C is the challenge kept; an
 * answer is accepted exactly when it is right (user, digest, a mutual
 * challenge that is well formed and not ours) and then our mutual CHAP_R is
 * the right digest; a value decodes to what it encodes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/chap.h"
#include "core/params.h"
#include "fake_login.h"
#include "config/config.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "check failed: %s (line %d)\n", #x, __LINE__); abort(); } } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	gw_log_set_level(getenv("ISERGW_FUZZ_LOG") ? GW_LOG_DEBUG : GW_LOG_ERR);
	return 0;
}

struct in {
	const uint8_t *p;
	size_t left;
};

static size_t take(struct in *in, const uint8_t **out, size_t want)
{
	size_t n = want < in->left ? want : in->left;

	*out = in->p;
	in->p += n;
	in->left -= n;
	return n;
}

/* A field of one length byte and its bytes, as a C string in dst[dstsz]. */
static void field(struct in *in, char *dst, size_t dstsz)
{
	const uint8_t *b, *p;
	size_t n = 0;

	if (take(in, &b, 1))
		n = take(in, &p, b[0]);
	if (n >= dstsz)
		n = dstsz - 1;
	if (n)
		memcpy(dst, p, n);
	dst[n] = '\0';
}

/* Each key once in the answer, and its value. */
static const char *once(const struct iscsi_textbuf *tb, const char *key)
{
	unsigned int n;
	const char *v = fake_text_value(tb->buf, tb->len, key, &n);

	CHECK(n == 1);
	return v;
}

/*
 * The first algorithm of the list we support (RFC 7143 12.1.3: the target
 * takes the first it knows), each item a numerical-value (decimal, 0x hex
 * or 0b base64); 0: none.
 */
static int first_supported(const char *alist)
{
	for (const char *p = alist; *p;) {
		size_t l = strcspn(p, ",");
		char item[32];
		uint64_t v;

		if (l > 0 && l < sizeof(item)) {
			memcpy(item, p, l);
			item[l] = '\0';
			if (iscsi_parse_number(item, &v) == 0 && (v == ISCSI_CHAP_ALG_MD5 ||
								  v == ISCSI_CHAP_ALG_SHA256))
				return (int)v;
		}
		if (!p[l])
			break;
		p += l + 1;
	}
	return 0;
}

static void op_challenge(struct iscsi_chap *c, struct iscsi_textbuf *tb, const char *alist)
{
	char why[200];
	uint8_t chal[ISCSI_CHAP_BIN_MAX];
	size_t clen = 0;
	uint64_t v;
	int rc;

	iscsi_tb_reset(tb);
	rc = iscsi_chap_challenge(c, alist, tb, why, sizeof(why));
	if (rc) {
		CHECK(rc == -EACCES || rc == -E2BIG || rc == -ENOMEM);
		return;
	}
	CHECK(c->state == ISCSI_CHAP_WAIT_R);
	CHECK(c->alg == ISCSI_CHAP_ALG_MD5 || c->alg == ISCSI_CHAP_ALG_SHA256);
	CHECK(c->clen == iscsi_chap_digest_len(c->alg));
	fake_check_text(tb->buf, tb->len, NULL);
	CHECK(iscsi_parse_number(once(tb, "CHAP_A"), &v) == 0 && v == (uint64_t)c->alg);
	CHECK(iscsi_parse_number(once(tb, "CHAP_I"), &v) == 0 && v == c->id);
	CHECK(iscsi_parse_binary(once(tb, "CHAP_C"), chal, sizeof(chal), &clen) == 0);
	CHECK(clen == c->clen && memcmp(chal, c->challenge, clen) == 0);
	/* the first the list names that we support, however it is written ("0bBQ" is 5) */
	CHECK(c->alg == first_supported(alist));
}

static void op_raw(struct iscsi_chap *c, struct iscsi_textbuf *tb, uint8_t flags,
		   const uint8_t *d, size_t n)
{
	char buf[4 * 1024 + 8], why[200];
	const char *s[4] = { NULL };
	uint8_t chal[ISCSI_CHAP_DIGEST_MAX], id = c->id;
	size_t off = 0, clen = c->clen;
	int alg = c->alg, rc;

	if (n > sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	memcpy(buf, d, n);
	buf[n] = '\0';
	static const char *const names[4] = { "CHAP_N", "CHAP_R", "CHAP_I", "CHAP_C" };

	for (int k = 0; k < 4; k++) {
		s[k] = off <= n ? buf + off : "";
		off += strlen(s[k]) + 1;
		if (flags & (1u << k))
			s[k] = NULL;
		/* login.c refuses a value longer than its key allows before CHAP sees it */
		else if (strlen(s[k]) > iscsi_key_find(names[k])->max_len)
			return;
	}
	/* kept for the check: a successful response wipes the challenge */
	memcpy(chal, c->challenge, sizeof(chal));
	iscsi_tb_reset(tb);
	rc = iscsi_chap_response(c, s[0], s[1], s[2], s[3], tb, why, sizeof(why));
	if (rc == 0) {
		/* accepted: then CHAP_N and CHAP_R were the right ones */
		uint8_t want[ISCSI_CHAP_DIGEST_MAX], got[ISCSI_CHAP_BIN_MAX];
		size_t wlen = 0, glen = 0;

		CHECK(c->state == ISCSI_CHAP_DONE && s[0] && s[1] && c->cred);
		CHECK(strcmp(s[0], c->cred->user) == 0);
		CHECK(iscsi_parse_binary(s[1], got, sizeof(got), &glen) == 0);
		CHECK(iscsi_chap_digest(alg, id, c->cred->secret, strlen(c->cred->secret), chal,
					clen, want, &wlen) == 0);
		CHECK(glen == wlen && memcmp(got, want, wlen) == 0);
		return;
	}
	CHECK(rc == -EACCES || rc == -E2BIG || rc == -ENOMEM || rc == -EIO);
}

static int encode(const uint8_t *in, size_t n, unsigned int how, char *out, size_t outsz)
{
	int rc;

	switch (how & 3) {
	case 0:
		return iscsi_encode_hex(in, n, out, outsz);
	case 1:
		rc = iscsi_encode_hex(in, n, out, outsz);
		for (char *p = out; !rc && *p; p++)
			if (*p >= 'a' && *p <= 'z')
				*p = (char)(*p - 'a' + 'A');
		return rc;
	case 2:
		return fake_encode_base64(in, n, out, outsz, 0);
	default:
		return fake_encode_base64(in, n, out, outsz, 1);
	}
}

/* The answer an initiator computes (right or deliberately wrong), and whether it must pass. */
static void op_answer(struct iscsi_chap *c, struct iscsi_textbuf *tb, uint8_t flags,
		      const uint8_t *d, size_t n)
{
	const struct gw_chap_cfg *cred = c->cred, *mutual = c->mutual;
	uint8_t dig[ISCSI_CHAP_DIGEST_MAX], mchal[ISCSI_CHAP_BIN_MAX];
	char r[2 * ISCSI_CHAP_BIN_MAX + 8], ch[2 * ISCSI_CHAP_BIN_MAX + 8], idtxt[16], why[200];
	const char *user = cred ? cred->user : "nobody";
	bool mut = flags & 0x10, expect;
	size_t dlen = 0, mlen = 0;
	int alg = c->alg ? c->alg : ISCSI_CHAP_ALG_MD5;
	int rc;

	CHECK(iscsi_chap_digest(alg, c->id, cred ? cred->secret : "", cred ? strlen(cred->secret) : 0,
				c->challenge, c->clen, dig, &dlen) == 0);
	if (flags & 8)
		dig[0] ^= 0x80;
	CHECK(encode(dig, dlen, flags & 3, r, sizeof(r)) == 0);
	if (flags & 4)
		user = "not-the-user";
	expect = c->state == ISCSI_CHAP_WAIT_R && cred && cred->user[0] && !(flags & 0x0c);
	if (mut) {
		uint8_t id = n ? d[0] : 0;

		if (flags & 0x80) {
			mlen = c->clen;
			memcpy(mchal, c->challenge, mlen);
		} else {
			mlen = n > 1 ? n - 1 : 0;
			if (mlen > sizeof(mchal))
				mlen = sizeof(mchal);
			if (mlen)
				memcpy(mchal, d + 1, mlen);
		}
		snprintf(idtxt, sizeof(idtxt), (flags & 0x20) ? "0x%x" : "%u", id);
		/* no byte at all: an empty CHAP_I, which is no number */
		if (!n) {
			idtxt[0] = '\0';
			expect = false;
		}
		CHECK(encode(mchal, mlen, (flags & 0x40) ? 2 : 0, ch, sizeof(ch)) == 0);
		if (!mutual || !mutual->user[0] || mlen == 0)
			expect = false;
		/* a reflection of our challenge is refused */
		if (mlen == c->clen && memcmp(mchal, c->challenge, mlen) == 0)
			expect = false;
		/* "0b" alone: the encoder gives "0b" for nothing, which is no value */
	}
	iscsi_tb_reset(tb);
	rc = iscsi_chap_response(c, user, r, mut ? idtxt : NULL, mut ? ch : NULL, tb, why,
				 sizeof(why));
	if (rc == -E2BIG || rc == -ENOMEM)
		return;
	if (expect != (rc == 0)) {
		fprintf(stderr, "CHAP answer %s but %s: %s\n", expect ? "right" : "wrong",
			rc ? "refused" : "accepted", rc ? why : "");
		abort();
	}
	if (rc == 0 && mut) {
		/* our CHAP_R: the digest of their challenge with the mutual secret */
		uint8_t want[ISCSI_CHAP_DIGEST_MAX], got[ISCSI_CHAP_BIN_MAX];
		size_t wlen = 0, glen = 0;

		fake_check_text(tb->buf, tb->len, NULL);
		CHECK(strcmp(once(tb, "CHAP_N"), mutual->user) == 0);
		CHECK(iscsi_chap_digest(alg, n ? d[0] : 0, mutual->secret, strlen(mutual->secret), mchal,
					mlen, want, &wlen) == 0);
		CHECK(iscsi_parse_binary(once(tb, "CHAP_R"), got, sizeof(got), &glen) == 0);
		CHECK(glen == wlen && memcmp(got, want, wlen) == 0);
	}
}

static void op_codec(uint8_t flags, const uint8_t *d, size_t n)
{
	char s[2 * ISCSI_CHAP_BIN_MAX + 8], hex[2 * ISCSI_CHAP_BIN_MAX + 8];
	uint8_t bin[ISCSI_CHAP_BIN_MAX], bin2[ISCSI_CHAP_BIN_MAX];
	size_t blen = 0, blen2 = 0, max = (size_t)flags + 1;
	uint64_t v;

	if (n > sizeof(s) - 1)
		n = sizeof(s) - 1;
	memcpy(s, d, n);
	s[n] = '\0';
	if (iscsi_parse_number(s, &v) == 0) {
		/* a decimal number prints back to a number that parses to the same value */
		char dec[32];

		snprintf(dec, sizeof(dec), "%llu", (unsigned long long)v);
		CHECK(iscsi_parse_number(dec, &v) == 0 && v == strtoull(dec, NULL, 10));
	}
	if (iscsi_parse_binary(s, bin, max, &blen) == 0) {
		CHECK(blen <= max);
		CHECK(iscsi_encode_hex(bin, blen, hex, sizeof(hex)) == 0);
		CHECK(iscsi_parse_binary(hex, bin2, sizeof(bin2), &blen2) == 0);
		CHECK(blen2 == blen && memcmp(bin, bin2, blen) == 0);
		CHECK(fake_encode_base64(bin, blen, hex, sizeof(hex), 0) == 0);
		if (blen) {
			CHECK(iscsi_parse_binary(hex, bin2, sizeof(bin2), &blen2) == 0);
			CHECK(blen2 == blen && memcmp(bin, bin2, blen) == 0);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_chap_cfg cred, mutual;
	struct iscsi_textbuf tb;
	struct iscsi_chap c;
	struct in in = { data, size };
	const uint8_t *p;
	uint8_t mode;

	if (!take(&in, &p, 1))
		return 0;
	mode = p[0];
	memset(&cred, 0, sizeof(cred));
	memset(&mutual, 0, sizeof(mutual));
	field(&in, cred.user, sizeof(cred.user));
	field(&in, cred.secret, sizeof(cred.secret));
	field(&in, mutual.user, sizeof(mutual.user));
	field(&in, mutual.secret, sizeof(mutual.secret));
	fake_random_reset(size);
	iscsi_tb_init(&tb, (mode & 4) ? 64 : ISCSI_TEXT_MAX);
	iscsi_chap_init(&c, (mode & 1) ? &cred : NULL, (mode & 2) ? &mutual : NULL);
	while (in.left >= 4) {
		const uint8_t *h, *d;
		size_t n;

		take(&in, &h, 4);
		n = take(&in, &d, (size_t)h[2] << 8 | h[3]);
		switch (h[0] & 7) {
		case 0: {
			char alist[ISCSI_VALUE_MAX + 1];

			/* login.c refuses longer CHAP_A values */
			if (n > ISCSI_VALUE_MAX)
				n = ISCSI_VALUE_MAX;
			memcpy(alist, d, n);
			alist[n] = '\0';
			op_challenge(&c, &tb, alist);
			break;
		}
		case 1:
			op_raw(&c, &tb, h[1], d, n);
			break;
		case 2:
			op_answer(&c, &tb, h[1], d, n);
			break;
		case 3:
			iscsi_chap_init(&c, (mode & 1) ? &cred : NULL, (mode & 2) ? &mutual : NULL);
			break;
		case 4:
			op_codec(h[1], d, n);
			break;
		default:
			break;
		}
	}
	iscsi_tb_free(&tb);
	return 0;
}
