// LINK: gw_proto isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for core/params.c: key=value parsing, codecs, key table, negotiation engine. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/params.h"
#include "common/log.h"

#include "test_log_silent.h"

static void test_numbers(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(iscsi_parse_number("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(iscsi_parse_number("262144", &v), 0);
	assert_int_equal(v, 262144);
	assert_int_equal(iscsi_parse_number("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(iscsi_parse_number("18446744073709551616", &v), -ERANGE);
	assert_int_equal(iscsi_parse_number("0x40000", &v), 0);
	assert_int_equal(v, 0x40000);
	assert_int_equal(iscsi_parse_number("0XfFfF", &v), 0);
	assert_int_equal(v, 0xffff);
	assert_int_equal(iscsi_parse_number("0x00000000000000000000000001", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(iscsi_parse_number("0x10000000000000000", &v), -ERANGE);
	assert_int_equal(iscsi_parse_number("0bAQID", &v), 0);
	assert_int_equal(v, 0x010203);
	assert_int_equal(iscsi_parse_number("0b//////////8=", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(iscsi_parse_number("0bAQAAAAAAAAAA", &v), -ERANGE);
	assert_int_equal(iscsi_parse_number("", &v), -EINVAL);
	assert_int_equal(iscsi_parse_number("-1", &v), -EINVAL);
	assert_int_equal(iscsi_parse_number("+1", &v), -EINVAL);
	assert_int_equal(iscsi_parse_number(" 1", &v), -EINVAL);
	assert_int_equal(iscsi_parse_number("1 ", &v), -EINVAL);
	assert_int_equal(iscsi_parse_number("0x", &v), -EINVAL);
	assert_int_equal(iscsi_parse_number("0xg", &v), -EINVAL);
	assert_int_equal(iscsi_parse_number("0b", &v), -EINVAL);
	assert_int_equal(iscsi_parse_number("0b!!!!", &v), -EINVAL);
	assert_int_equal(iscsi_parse_number("12abc", &v), -EINVAL);
}

static void test_binary(void **state)
{
	uint8_t b[8];
	size_t n;

	(void)state;
	assert_int_equal(iscsi_parse_binary("0x0102ff", b, sizeof(b), &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(b[2], 0xff);
	assert_int_equal(iscsi_parse_binary("0xabc", b, sizeof(b), &n), 0); /* odd: leading 0 */
	assert_int_equal(n, 2);
	assert_int_equal(b[0], 0x0a);
	assert_int_equal(b[1], 0xbc);
	assert_int_equal(iscsi_parse_binary("0x010203040506070809", b, sizeof(b), &n), -E2BIG);
	assert_int_equal(iscsi_parse_binary("0bAQID", b, sizeof(b), &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(iscsi_parse_binary("0bAQI=", b, sizeof(b), &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(iscsi_parse_binary("0bAQ=", b, sizeof(b), &n), -EINVAL);
	assert_int_equal(iscsi_parse_binary("0bA", b, sizeof(b), &n), -EINVAL);
	assert_int_equal(iscsi_parse_binary("0bAR==", b, sizeof(b), &n), -EINVAL); /* stray bits */
	assert_int_equal(iscsi_parse_binary("1234", b, sizeof(b), &n), -EINVAL);
	{
		char hex[32];

		assert_int_equal(iscsi_encode_hex((const uint8_t *)"\x01\xab", 2, hex, sizeof(hex)), 0);
		assert_string_equal(hex, "0x01ab");
		assert_int_equal(iscsi_encode_hex((const uint8_t *)"\x01\xab", 2, hex, 6), -E2BIG);
	}
}

static void test_kv_parser(void **state)
{
	static const char ok[] = "A=1\0\0B.c-d+e@f_g=\0C==x\0";
	static const char noeq[] = "A=1\0B\0";
	static const char unterminated[] = "A=1\0B=2";
	struct iscsi_kv kv;
	size_t off = 0;
	char why[100];

	(void)state;
	assert_int_equal(iscsi_kv_next(ok, sizeof(ok) - 1, &off, &kv, why, sizeof(why)), 1);
	assert_string_equal(kv.key, "A");
	assert_string_equal(kv.val, "1");
	assert_int_equal(iscsi_kv_next(ok, sizeof(ok) - 1, &off, &kv, why, sizeof(why)), 1);
	assert_string_equal(kv.key, "B.c-d+e@f_g");
	assert_string_equal(kv.val, "");
	assert_int_equal(kv.vlen, 0);
	assert_int_equal(iscsi_kv_next(ok, sizeof(ok) - 1, &off, &kv, why, sizeof(why)), 1);
	assert_string_equal(kv.key, "C");
	assert_string_equal(kv.val, "=x");
	assert_int_equal(iscsi_kv_next(ok, sizeof(ok) - 1, &off, &kv, why, sizeof(why)), 0);

	off = 0;
	assert_int_equal(iscsi_kv_next(noeq, sizeof(noeq) - 1, &off, &kv, why, sizeof(why)), 1);
	assert_int_equal(iscsi_kv_next(noeq, sizeof(noeq) - 1, &off, &kv, why, sizeof(why)),
			 -EPROTO);
	off = 0;
	assert_int_equal(iscsi_kv_next(unterminated, sizeof(unterminated) - 1, &off, &kv, why,
				       sizeof(why)), 1);
	assert_int_equal(iscsi_kv_next(unterminated, sizeof(unterminated) - 1, &off, &kv, why,
				       sizeof(why)), -EPROTO);
	assert_non_null(strstr(why, "NUL"));
}

static void test_textbuf(void **state)
{
	struct iscsi_textbuf tb;
	int i, rc = 0;

	(void)state;
	iscsi_tb_init(&tb, 64);
	assert_int_equal(iscsi_tb_add(&tb, "Key", "Value"), 0);
	assert_int_equal(tb.len, 10);
	assert_memory_equal(tb.buf, "Key=Value", 10);
	assert_int_equal(iscsi_tb_add_u64(&tb, "N", 4096), 0);
	assert_memory_equal(tb.buf + 10, "N=4096", 7);
	for (i = 0; i < 20 && rc == 0; i++)
		rc = iscsi_tb_add(&tb, "K", "vvvvvv");
	assert_int_equal(rc, -E2BIG);
	assert_true(tb.len <= 64);
	iscsi_tb_free(&tb);
}

static void test_key_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ISCSI_KEY__COUNT; i++) {
		const struct iscsi_key_def *k = iscsi_key_def((enum iscsi_key_id)i);

		assert_non_null(k);
		assert_non_null(k->name);
		assert_int_equal(k->id, i);
		assert_ptr_equal(iscsi_key_find(k->name), k);
		assert_true(strlen(k->name) <= ISCSI_KEY_NAME_MAX);
		assert_true(k->max_len > 0);
		if (k->kind == ISCSI_KIND_NUM_MIN || k->kind == ISCSI_KIND_NUM_MAX)
			assert_true(k->rfc_default >= k->min && k->rfc_default <= k->max);
	}
	assert_null(iscsi_key_find("headerdigest"));
	assert_null(iscsi_key_def(ISCSI_KEY__COUNT));
}

static void test_negotiation_engine(void **state)
{
	struct gw_target_cfg t;
	struct iscsi_neg n;
	struct iscsi_textbuf rsp;
	struct iscsi_sess_params sp;
	struct iscsi_conn_params cp;
	unsigned int np, pend;
	char why[100];

	(void)state;
	memset(&t, 0, sizeof(t));
	t.max_recv_dsl = 65536;
	t.max_burst = 131072;
	t.first_burst = 32768;
	t.max_outstanding_r2t = 2;
	t.immediate_data = false;
	t.initial_r2t = true;
	iscsi_tb_init(&rsp, 0);
	iscsi_neg_init(&n, &t, GW_TRANSPORT_TCP, false, true);

	/* FirstBurstLength's answer waits for MaxBurstLength of the same message */
	assert_int_equal(iscsi_neg_key(&n, iscsi_key_def(ISCSI_KEY_FIRST_BURST), "65536",
				       ISCSI_PHASE_LOGIN, &rsp, why, sizeof(why)), 0);
	assert_int_equal(rsp.len, 0);
	assert_int_equal(iscsi_neg_key(&n, iscsi_key_def(ISCSI_KEY_MAX_BURST), "16384",
				       ISCSI_PHASE_LOGIN, &rsp, why, sizeof(why)), 0);
	assert_int_equal(iscsi_neg_end_message(&n, &rsp), 0);
	assert_memory_equal(rsp.buf, "MaxBurstLength=16384\0FirstBurstLength=16384", 43);

	/* ImmediateData default (Yes) is not acceptable to us: proposed */
	iscsi_tb_reset(&rsp);
	assert_int_equal(iscsi_neg_propose(&n, &rsp, false, &np, &pend, why, sizeof(why)), 0);
	assert_int_equal(np, 1);
	assert_int_equal(rsp.len, 0);
	assert_int_equal(iscsi_neg_propose(&n, &rsp, true, &np, &pend, why, sizeof(why)), 0);
	assert_int_equal(np, 1);
	assert_int_equal(pend, 1);
	assert_memory_equal(rsp.buf, "ImmediateData=No", 17);
	/* the answer is taken without a reply */
	iscsi_tb_reset(&rsp);
	assert_int_equal(iscsi_neg_key(&n, iscsi_key_def(ISCSI_KEY_IMMEDIATE_DATA), "No",
				       ISCSI_PHASE_LOGIN, &rsp, why, sizeof(why)), 0);
	assert_int_equal(rsp.len, 0);
	assert_int_equal(iscsi_neg_propose(&n, &rsp, true, &np, &pend, why, sizeof(why)), 0);
	assert_int_equal(pend, 0);

	/* declarations */
	assert_int_equal(iscsi_neg_key(&n, iscsi_key_def(ISCSI_KEY_MAX_RECV_DSL), "0x2000",
				       ISCSI_PHASE_LOGIN, &rsp, why, sizeof(why)), 0);
	assert_int_equal(iscsi_neg_key(&n, iscsi_key_def(ISCSI_KEY_MAX_RECV_DSL), "511",
				       ISCSI_PHASE_LOGIN, &rsp, why, sizeof(why)), -EPROTO);
	assert_int_equal(iscsi_neg_declare(&n, &rsp), 0);
	assert_int_equal(iscsi_neg_declare(&n, &rsp), 0);
	assert_memory_equal(rsp.buf, "MaxRecvDataSegmentLength=65536", 31);
	assert_int_equal(rsp.len, 31);

	iscsi_neg_result(&n, &sp, &cp);
	assert_true(sp.initial_r2t);
	assert_false(sp.immediate_data);
	assert_int_equal(sp.max_burst, 16384);
	assert_int_equal(sp.first_burst, 16384);
	assert_int_equal(sp.max_outstanding_r2t, 1);
	assert_int_equal(sp.default_time2wait, 2);
	assert_int_equal(sp.default_time2retain, 20);
	assert_int_equal(cp.max_recv_dsl, 65536);
	assert_int_equal(cp.max_xmit_dsl, 8192);
	assert_false(cp.rdma_extensions);

	/* MaxOutstandingUnexpectedPDUs: min where 0 is "no limit" */
	iscsi_neg_init(&n, &t, GW_TRANSPORT_ISER, false, true);
	iscsi_tb_reset(&rsp);
	assert_int_equal(iscsi_neg_key(&n, iscsi_key_def(ISCSI_KEY_MAX_OUT_UNEXP_PDUS), "0",
				       ISCSI_PHASE_LOGIN, &rsp, why, sizeof(why)), 0);
	assert_memory_equal(rsp.buf, "MaxOutstandingUnexpectedPDUs=0", 31);
	iscsi_tb_reset(&rsp);
	iscsi_neg_init(&n, &t, GW_TRANSPORT_ISER, false, true);
	assert_int_equal(iscsi_neg_key(&n, iscsi_key_def(ISCSI_KEY_MAX_OUT_UNEXP_PDUS), "1",
				       ISCSI_PHASE_LOGIN, &rsp, why, sizeof(why)), 0);
	assert_memory_equal(rsp.buf, "MaxOutstandingUnexpectedPDUs=Reject", 36);

	/* InitialR2T: OR; over iSER we answer Yes whatever the configuration,
	 * so write data past the immediate part comes by RDMA Read */
	t.initial_r2t = false;
	iscsi_neg_init(&n, &t, GW_TRANSPORT_TCP, false, true);
	iscsi_tb_reset(&rsp);
	assert_int_equal(iscsi_neg_key(&n, iscsi_key_def(ISCSI_KEY_INITIAL_R2T), "No",
				       ISCSI_PHASE_LOGIN, &rsp, why, sizeof(why)), 0);
	assert_memory_equal(rsp.buf, "InitialR2T=No", 14);
	iscsi_neg_init(&n, &t, GW_TRANSPORT_ISER, false, true);
	iscsi_tb_reset(&rsp);
	assert_int_equal(iscsi_neg_key(&n, iscsi_key_def(ISCSI_KEY_INITIAL_R2T), "No",
				       ISCSI_PHASE_LOGIN, &rsp, why, sizeof(why)), 0);
	assert_memory_equal(rsp.buf, "InitialR2T=Yes", 15);
	iscsi_neg_result(&n, &sp, &cp);
	assert_true(sp.initial_r2t);

	/* non-leading connection: leading-only keys are irrelevant */
	iscsi_neg_init(&n, &t, GW_TRANSPORT_TCP, false, false);
	iscsi_tb_reset(&rsp);
	assert_int_equal(iscsi_neg_key(&n, iscsi_key_def(ISCSI_KEY_MAX_BURST), "16384",
				       ISCSI_PHASE_LOGIN, &rsp, why, sizeof(why)), 0);
	assert_memory_equal(rsp.buf, "MaxBurstLength=Irrelevant", 26);
	assert_int_equal(iscsi_neg_propose(&n, &rsp, false, &np, &pend, why, sizeof(why)), 0);
	assert_int_equal(np, 0);
	iscsi_tb_free(&rsp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_binary),
		cmocka_unit_test(test_kv_parser),
		cmocka_unit_test(test_textbuf),
		cmocka_unit_test(test_key_table),
		cmocka_unit_test(test_negotiation_engine),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
