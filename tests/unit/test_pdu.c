// LINK: gw_proto isergw_config isergw_common
/* PDU helpers: byte order, LUN encoding, CRC32C digests, serial arithmetic, CmdSN window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/pdu.h"

static void test_be_helpers(void **state)
{
	uint8_t b[8] = { 0 };

	(void)state;
	put_be24(b, 0xabcdef);
	assert_int_equal(b[0], 0xab);
	assert_int_equal(b[2], 0xef);
	assert_int_equal(get_be24(b), 0xabcdef);
	put_be64(b, 0x0102030405060708ull);
	assert_int_equal(b[0], 1);
	assert_int_equal(b[7], 8);
	assert_true(get_be64(b) == 0x0102030405060708ull);
	put_be16(b, 0xbeef);
	assert_int_equal(get_be16(b), 0xbeef);
}

static void test_bhs_fields(void **state)
{
	struct iscsi_bhs bhs;

	(void)state;
	memset(&bhs, 0, sizeof(bhs));
	bhs.opcode = ISCSI_OP_SCSI_CMD | ISCSI_OP_IMMEDIATE;
	bhs.total_ahs_len = 3;
	iscsi_bhs_set_dsl(&bhs, 0x123456);
	assert_int_equal(iscsi_bhs_opcode(&bhs), ISCSI_OP_SCSI_CMD);
	assert_true(iscsi_bhs_immediate(&bhs));
	assert_int_equal(iscsi_bhs_dsl(&bhs), 0x123456);
	assert_int_equal(iscsi_ahs_len(&bhs), 12);
	assert_int_equal(iscsi_pad4(0), 0);
	assert_int_equal(iscsi_pad4(1), 3);
	assert_int_equal(iscsi_pad4(4), 0);
	assert_int_equal(iscsi_pad4(511), 1);
	/* field offsets the core relies on */
	assert_int_equal(offsetof(struct iscsi_scsi_cmd, cdb), 32);
	assert_int_equal(offsetof(struct iscsi_scsi_rsp, stat_sn), 24);
	assert_int_equal(offsetof(struct iscsi_data_in, residual), 44);
	assert_int_equal(offsetof(struct iscsi_login_rsp, status_class), 36);
	assert_int_equal(offsetof(struct iscsi_r2t, desired_len), 44);
	assert_int_equal(offsetof(struct iscsi_async_msg, param3), 42);
}

static void test_lun_codec(void **state)
{
	uint8_t lun[8];

	(void)state;
	iscsi_lun_encode(5, lun);
	assert_int_equal(lun[0], 0);
	assert_int_equal(lun[1], 5);
	assert_true(iscsi_lun_decode(lun) == 5);
	iscsi_lun_encode(300, lun);
	assert_int_equal(lun[0], 0x41);
	assert_int_equal(lun[1], 300 & 0xff);
	assert_true(iscsi_lun_decode(lun) == 300);
	iscsi_lun_encode(16383, lun);
	assert_true(iscsi_lun_decode(lun) == 16383);
	memset(lun, 0, sizeof(lun));
	lun[0] = 0x80; /* logical unit addressing: not supported */
	assert_true(iscsi_lun_decode(lun) == UINT64_MAX);
	lun[0] = 0x01; /* peripheral addressing with a bus number */
	assert_true(iscsi_lun_decode(lun) == UINT64_MAX);
}

static void test_crc32c(void **state)
{
	static const uint8_t zeros32[32];
	uint8_t ones32[32], inc32[32];

	(void)state;
	/* RFC 3720 appendix B.4 test vectors */
	memset(ones32, 0xff, sizeof(ones32));
	for (int i = 0; i < 32; i++)
		inc32[i] = (uint8_t)i;
	assert_int_equal(iscsi_digest("123456789", 9), 0xe3069283);
	assert_int_equal(iscsi_digest(zeros32, 32), 0x8a9136aa);
	assert_int_equal(iscsi_digest(ones32, 32), 0x62a8ab43);
	assert_int_equal(iscsi_digest(inc32, 32), 0x46dd794e);
	/* data digest covers the padding */
	assert_int_equal(iscsi_data_digest(zeros32, 29, 3), 0x8a9136aa);
	/* incremental == one shot */
	uint32_t crc = iscsi_crc32c(inc32, 10, ISCSI_CRC32C_SEED);
	crc = iscsi_crc32c(inc32 + 10, 22, crc);
	assert_int_equal(iscsi_digest_final(crc), 0x46dd794e);
}

static void test_serial_arith(void **state)
{
	(void)state;
	assert_true(sn_lt(1, 2));
	assert_false(sn_lt(2, 2));
	assert_true(sn_lt(0xfffffff0u, 5));      /* wraps */
	assert_true(sn_gt(5, 0xfffffff0u));
	assert_true(sn_le(7, 7));
	assert_false(sn_le(8, 7));
}

static void test_cmdsn_window(void **state)
{
	(void)state;
	/* window [100, 131] */
	assert_int_equal(iscsi_cmdsn_check(100, 131, 100, 0), ISCSI_CMDSN_NOW);
	assert_int_equal(iscsi_cmdsn_check(100, 131, 101, 0), ISCSI_CMDSN_QUEUE);
	assert_int_equal(iscsi_cmdsn_check(100, 131, 131, 0), ISCSI_CMDSN_QUEUE);
	assert_int_equal(iscsi_cmdsn_check(100, 131, 132, 0), ISCSI_CMDSN_IGNORE);
	assert_int_equal(iscsi_cmdsn_check(100, 131, 99, 0), ISCSI_CMDSN_IGNORE);
	assert_int_equal(iscsi_cmdsn_check(100, 131, 0x80000000u, 0), ISCSI_CMDSN_IGNORE);
	/* immediate commands are never held back */
	assert_int_equal(iscsi_cmdsn_check(100, 131, 5000, 1), ISCSI_CMDSN_NOW);
	/* across the 2^32 wrap */
	assert_int_equal(iscsi_cmdsn_check(0xfffffffeu, 29, 3, 0), ISCSI_CMDSN_QUEUE);
	assert_int_equal(iscsi_cmdsn_check(0xfffffffeu, 29, 0xfffffffdu, 0), ISCSI_CMDSN_IGNORE);
	/* closed window (MaxCmdSN = ExpCmdSN - 1) */
	assert_int_equal(iscsi_cmdsn_check(100, 99, 101, 0), ISCSI_CMDSN_IGNORE);
}

static void test_opcode_names(void **state)
{
	(void)state;
	assert_string_equal(iscsi_opcode_name(ISCSI_OP_SCSI_CMD | ISCSI_OP_IMMEDIATE), "SCSI Command");
	assert_string_equal(iscsi_opcode_name(ISCSI_OP_REJECT), "Reject");
	assert_string_equal(iscsi_opcode_name(0x1f), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_be_helpers),
		cmocka_unit_test(test_bhs_fields),
		cmocka_unit_test(test_lun_codec),
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test(test_serial_arith),
		cmocka_unit_test(test_cmdsn_window),
		cmocka_unit_test(test_opcode_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
