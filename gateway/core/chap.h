/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CHAP for iSCSI login (RFC 1994, RFC 7143 12.1.3), target side: choose the
 * algorithm, issue the challenge, verify the initiator's response, and
 * answer a mutual (bidirectional) challenge. Private to gw_proto.
 */
#ifndef ISERGW_CHAP_H
#define ISERGW_CHAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/params.h"
#include "config/config.h"
#include "gw_api.h"

GW_API_BEGIN

enum iscsi_chap_alg {
	ISCSI_CHAP_ALG_MD5 = 5,
	ISCSI_CHAP_ALG_SHA256 = 7,
};

#define ISCSI_CHAP_DIGEST_MAX 32u
#define ISCSI_CHAP_SECRET_MIN 12u   /* RFC 7143 12.1.3: SHOULD be at least 12 bytes (96 bits) */

enum iscsi_chap_state {
	ISCSI_CHAP_WAIT_A = 0,  /* AuthMethod=CHAP agreed, waiting for CHAP_A */
	ISCSI_CHAP_WAIT_R,      /* challenge sent, waiting for CHAP_N/CHAP_R */
	ISCSI_CHAP_DONE,
};

struct iscsi_chap {
	enum iscsi_chap_state state;
	int alg;                        /* 0 until chosen */
	uint8_t id;
	uint8_t challenge[ISCSI_CHAP_DIGEST_MAX];
	size_t clen;
	const struct gw_chap_cfg *cred;   /* initiator authenticates to us */
	const struct gw_chap_cfg *mutual; /* we authenticate to the initiator (may be NULL) */
};

/* Random bytes (getrandom()); 0 or -EIO. */
int iscsi_chap_random(void *buf, size_t len);

void iscsi_chap_init(struct iscsi_chap *c, const struct gw_chap_cfg *cred,
		     const struct gw_chap_cfg *mutual);

/* Digest length of an algorithm, 0 if unsupported. */
size_t iscsi_chap_digest_len(int alg);

/* H(id || secret || challenge). Returns 0 or -EIO (libcrypto failure), -EINVAL. */
int iscsi_chap_digest(int alg, uint8_t id, const void *secret, size_t slen,
		      const uint8_t *chal, size_t clen, uint8_t *out, size_t *outlen);

/*
 * CHAP_A=<list>: pick the first algorithm we support (5, 7), then append
 * CHAP_A, CHAP_I and CHAP_C to rsp. -EACCES when no algorithm is acceptable,
 * -EIO when no random bytes could be had.
 */
int iscsi_chap_challenge(struct iscsi_chap *c, const char *alist, struct iscsi_textbuf *rsp,
			 char *why, size_t whylen);

/*
 * CHAP_N/CHAP_R (and CHAP_I/CHAP_C for mutual CHAP, both NULL otherwise):
 * verify, and answer the mutual challenge with our CHAP_N/CHAP_R.
 * -EACCES on any authentication failure (reason in why), -EIO on libcrypto
 * failure.
 */
int iscsi_chap_response(struct iscsi_chap *c, const char *n, const char *r, const char *i,
			const char *ch, struct iscsi_textbuf *rsp, char *why, size_t whylen);

GW_API_END

#endif
