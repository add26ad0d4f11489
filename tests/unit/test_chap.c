// LINK: gw_proto isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for core/chap.c: digests, challenge, verification, mutual CHAP. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/chap.h"
#include "common/log.h"

#include "test_log_silent.h"

static void test_digest_vectors(void **state)
{
	uint8_t chal[32], out[64];
	char hex[80];
	size_t n, i;

	(void)state;
	for (i = 0; i < sizeof(chal); i++)
		chal[i] = (uint8_t)i;
	/* python: hashlib.md5(bytes([1]) + b"secretsecret" + bytes(range(16))) */
	assert_int_equal(iscsi_chap_digest(ISCSI_CHAP_ALG_MD5, 1, "secretsecret", 12, chal, 16, out,
					   &n), 0);
	assert_int_equal(n, 16);
	assert_int_equal(iscsi_encode_hex(out, n, hex, sizeof(hex)), 0);
	assert_string_equal(hex, "0x226dc576c33f04ff9c3a200ffe35f442");
	assert_int_equal(iscsi_chap_digest(ISCSI_CHAP_ALG_SHA256, 0xfe, "secretsecret", 12, chal,
					   32, out, &n), 0);
	assert_int_equal(n, 32);
	assert_int_equal(iscsi_encode_hex(out, n, hex, sizeof(hex)), 0);
	assert_string_equal(hex,
			    "0x69cb228840ff1a6b2194e4d6cd9a5478fdf1dd5dfb80f55d49489e2d723f8e6d");
	assert_int_equal(iscsi_chap_digest(6, 0, "x", 1, chal, 1, out, &n), -EINVAL);
	assert_int_equal(iscsi_chap_digest_len(5), 16);
	assert_int_equal(iscsi_chap_digest_len(7), 32);
	assert_int_equal(iscsi_chap_digest_len(6), 0);
}

/* Challenge from the response text: id and binary challenge. */
static void parse_challenge(const struct iscsi_textbuf *tb, uint8_t *id, uint8_t *chal,
			    size_t *clen)
{
	size_t off = 0;
	struct iscsi_kv kv;
	char why[80];
	uint64_t v;
	bool got_i = false, got_c = false;

	while (iscsi_kv_next(tb->buf, tb->len, &off, &kv, why, sizeof(why)) > 0) {
		if (strcmp(kv.key, "CHAP_I") == 0) {
			assert_int_equal(iscsi_parse_number(kv.val, &v), 0);
			*id = (uint8_t)v;
			got_i = true;
		} else if (strcmp(kv.key, "CHAP_C") == 0) {
			assert_int_equal(iscsi_parse_binary(kv.val, chal, 64, clen), 0);
			got_c = true;
		}
	}
	assert_true(got_i && got_c);
}

static void test_challenge_and_verify(void **state)
{
	struct gw_chap_cfg cred, mutual;
	struct iscsi_chap c, c2;
	struct iscsi_textbuf tb;
	uint8_t id = 0, chal[64], dig[64];
	size_t clen = 0, dlen = 0;
	char hex[200], why[200];

	(void)state;
	memset(&cred, 0, sizeof(cred));
	memset(&mutual, 0, sizeof(mutual));
	snprintf(cred.user, sizeof(cred.user), "alice");
	snprintf(cred.secret, sizeof(cred.secret), "alicesecret123");
	snprintf(mutual.user, sizeof(mutual.user), "tgt");
	snprintf(mutual.secret, sizeof(mutual.secret), "targetsecret12");
	iscsi_tb_init(&tb, 0);

	iscsi_chap_init(&c, &cred, &mutual);
	assert_int_equal(iscsi_chap_challenge(&c, "1,2,3", &tb, why, sizeof(why)), -EACCES);
	assert_int_equal(iscsi_chap_challenge(&c, "0x05", &tb, why, sizeof(why)), 0);
	assert_memory_equal(tb.buf, "CHAP_A=5", 9);
	parse_challenge(&tb, &id, chal, &clen);
	assert_int_equal(clen, 16);
	assert_int_equal(c.state, ISCSI_CHAP_WAIT_R);

	/* a second challenge differs */
	iscsi_chap_init(&c2, &cred, NULL);
	iscsi_tb_reset(&tb);
	assert_int_equal(iscsi_chap_challenge(&c2, "7", &tb, why, sizeof(why)), 0);
	assert_int_equal(c2.clen, 32);
	assert_memory_not_equal(c2.challenge, c.challenge, 16);

	assert_int_equal(iscsi_chap_digest(5, id, "alicesecret123", 14, chal, clen, dig, &dlen), 0);
	assert_int_equal(iscsi_encode_hex(dig, dlen, hex, sizeof(hex)), 0);
	iscsi_tb_reset(&tb);
	assert_int_equal(iscsi_chap_response(&c, "alice", "0x00", NULL, NULL, &tb, why, sizeof(why)),
			 -EACCES);
	assert_int_equal(iscsi_chap_response(&c, "alice", "garbage", NULL, NULL, &tb, why,
					     sizeof(why)), -EACCES);
	assert_int_equal(iscsi_chap_response(&c, NULL, hex, NULL, NULL, &tb, why, sizeof(why)),
			 -EACCES);
	assert_int_equal(iscsi_chap_response(&c, "alice", hex, "1", NULL, &tb, why, sizeof(why)),
			 -EACCES);
	assert_int_equal(iscsi_chap_response(&c, "alice", hex, "256", "0x0102", &tb, why,
					     sizeof(why)), -EACCES);
	assert_int_equal(iscsi_chap_response(&c, "alice", hex, "9", "0x0102", &tb, why,
					     sizeof(why)), 0);
	assert_int_equal(c.state, ISCSI_CHAP_DONE);
	assert_memory_equal(tb.buf, "CHAP_N=tgt", 11);
	/* our answer to the mutual challenge */
	assert_int_equal(iscsi_chap_digest(5, 9, "targetsecret12", 14, (const uint8_t *)"\x01\x02", 2,
					   dig, &dlen), 0);
	assert_int_equal(iscsi_encode_hex(dig, dlen, hex, sizeof(hex)), 0);
	assert_memory_equal(tb.buf + 11, "CHAP_R=", 7);
	assert_string_equal(tb.buf + 18, hex);
	/* no second response once done */
	assert_int_equal(iscsi_chap_response(&c, "alice", hex, NULL, NULL, &tb, why, sizeof(why)),
			 -EACCES);
	iscsi_tb_free(&tb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digest_vectors),
		cmocka_unit_test(test_challenge_and_verify),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
