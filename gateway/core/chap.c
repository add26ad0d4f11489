/* SPDX-License-Identifier: Apache-2.0 */
/* CHAP (RFC 1994 / RFC 7143 12.1.3), target side. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/chap.h"

int iscsi_chap_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void iscsi_chap_init(struct iscsi_chap *c, const struct gw_chap_cfg *cred,
		     const struct gw_chap_cfg *mutual)
{
	memset(c, 0, sizeof(*c));
	c->state = ISCSI_CHAP_WAIT_A;
	c->cred = cred;
	c->mutual = mutual;
}

size_t iscsi_chap_digest_len(int alg)
{
	switch (alg) {
	case ISCSI_CHAP_ALG_MD5:
		return 16;
	case ISCSI_CHAP_ALG_SHA256:
		return 32;
	default:
		return 0;
	}
}

int iscsi_chap_digest(int alg, uint8_t id, const void *secret, size_t slen,
		      const uint8_t *chal, size_t clen, uint8_t *out, size_t *outlen)
{
	const EVP_MD *md;
	EVP_MD_CTX *ctx;
	unsigned int len = 0;
	int rc = -EIO;

	switch (alg) {
	case ISCSI_CHAP_ALG_MD5:
		md = EVP_md5();
		break;
	case ISCSI_CHAP_ALG_SHA256:
		md = EVP_sha256();
		break;
	default:
		return -EINVAL;
	}
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -EIO;
	if (EVP_DigestInit_ex(ctx, md, NULL) != 1 || EVP_DigestUpdate(ctx, &id, 1) != 1 ||
	    EVP_DigestUpdate(ctx, secret, slen) != 1 || EVP_DigestUpdate(ctx, chal, clen) != 1 ||
	    EVP_DigestFinal_ex(ctx, out, &len) != 1)
		goto out_free_ctx;
	*outlen = len;
	rc = 0;
out_free_ctx:
	EVP_MD_CTX_free(ctx);
	return rc;
}

int iscsi_chap_challenge(struct iscsi_chap *c, const char *alist, struct iscsi_textbuf *rsp,
			 char *why, size_t whylen)
{
	char hex[2 * ISCSI_CHAP_DIGEST_MAX + 3];
	const char *p = alist;
	int alg = 0, rc;

	/* first algorithm of the initiator's list that we support */
	while (*p && !alg) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		char item[32];
		uint64_t v;

		if (l > 0 && l < sizeof(item)) {
			memcpy(item, p, l);
			item[l] = '\0';
			if (iscsi_parse_number(item, &v) == 0 && v <= 0xff &&
			    iscsi_chap_digest_len((int)v))
				alg = (int)v;
		}
		if (!e)
			break;
		p = e + 1;
	}
	if (!alg) {
		snprintf(why, whylen, "no supported CHAP algorithm in CHAP_A=%.60s", alist);
		return -EACCES;
	}
	c->alg = alg;
	c->clen = iscsi_chap_digest_len(alg);
	if (iscsi_chap_random(&c->id, 1) || iscsi_chap_random(c->challenge, c->clen)) {
		snprintf(why, whylen, "no random bytes for the CHAP challenge");
		return -EIO;
	}
	rc = iscsi_encode_hex(c->challenge, c->clen, hex, sizeof(hex));
	if (rc)
		return rc;
	rc = iscsi_tb_addf(rsp, "CHAP_A", "%d", alg);
	if (!rc)
		rc = iscsi_tb_addf(rsp, "CHAP_I", "%u", (unsigned int)c->id);
	if (!rc)
		rc = iscsi_tb_add(rsp, "CHAP_C", hex);
	if (rc)
		return rc;
	c->state = ISCSI_CHAP_WAIT_R;
	return 0;
}

int iscsi_chap_response(struct iscsi_chap *c, const char *n, const char *r, const char *i,
			const char *ch, struct iscsi_textbuf *rsp, char *why, size_t whylen)
{
	uint8_t got[ISCSI_CHAP_BIN_MAX], want[EVP_MAX_MD_SIZE];
	uint8_t ichal[ISCSI_CHAP_BIN_MAX];
	char hex[2 * EVP_MAX_MD_SIZE + 3];
	size_t glen = 0, wlen = 0, iclen = 0, dlen = iscsi_chap_digest_len(c->alg);
	bool user_ok, resp_ok;
	uint64_t id;
	int rc;

	if (c->state != ISCSI_CHAP_WAIT_R || !dlen) {
		snprintf(why, whylen, "CHAP response before the challenge");
		return -EACCES;
	}
	if (!n || !r) {
		snprintf(why, whylen, "CHAP_N or CHAP_R missing");
		return -EACCES;
	}
	if (!i != !ch) {
		snprintf(why, whylen, "mutual CHAP needs both CHAP_I and CHAP_C");
		return -EACCES;
	}
	if (!c->cred || !c->cred->user[0]) {
		snprintf(why, whylen, "no CHAP credentials configured");
		return -EACCES;
	}
	if (iscsi_parse_binary(r, got, sizeof(got), &glen)) {
		snprintf(why, whylen, "malformed CHAP_R");
		return -EACCES;
	}
	rc = iscsi_chap_digest(c->alg, c->id, c->cred->secret, strlen(c->cred->secret),
			       c->challenge, c->clen, want, &wlen);
	if (rc) {
		snprintf(why, whylen, "CHAP digest computation failed");
		return rc;
	}
	user_ok = strcmp(n, c->cred->user) == 0;
	resp_ok = glen == wlen && CRYPTO_memcmp(got, want, wlen) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	if (!user_ok) {
		snprintf(why, whylen, "unknown CHAP user \"%.64s\"", n);
		return -EACCES;
	}
	if (!resp_ok) {
		snprintf(why, whylen, "wrong CHAP response for user \"%.64s\"", n);
		return -EACCES;
	}
	if (!i)
		goto out_done;

	/* mutual CHAP: the initiator challenges us */
	if (!c->mutual || !c->mutual->user[0]) {
		snprintf(why, whylen, "mutual CHAP requested but no mutual credentials configured");
		return -EACCES;
	}
	if (iscsi_parse_number(i, &id) || id > 255) {
		snprintf(why, whylen, "invalid CHAP_I=%.20s", i);
		return -EACCES;
	}
	if (iscsi_parse_binary(ch, ichal, sizeof(ichal), &iclen) || iclen == 0) {
		snprintf(why, whylen, "malformed CHAP_C");
		return -EACCES;
	}
	/* RFC 7143 12.1.3: a challenge equal to ours is a reflection attack. */
	if (iclen == c->clen && CRYPTO_memcmp(ichal, c->challenge, iclen) == 0) {
		snprintf(why, whylen, "initiator reflected our CHAP challenge");
		return -EACCES;
	}
	rc = iscsi_chap_digest(c->alg, (uint8_t)id, c->mutual->secret, strlen(c->mutual->secret),
			       ichal, iclen, want, &wlen);
	if (rc) {
		snprintf(why, whylen, "CHAP digest computation failed");
		return rc;
	}
	rc = iscsi_encode_hex(want, wlen, hex, sizeof(hex));
	OPENSSL_cleanse(want, sizeof(want));
	if (rc)
		return rc;
	rc = iscsi_tb_add(rsp, "CHAP_N", c->mutual->user);
	if (!rc)
		rc = iscsi_tb_add(rsp, "CHAP_R", hex);
	if (rc)
		return rc;
out_done:
	c->state = ISCSI_CHAP_DONE;
	OPENSSL_cleanse(c->challenge, sizeof(c->challenge));
	return 0;
}
