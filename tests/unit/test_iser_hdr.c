// LINK: isergw_gw
/* iSER header decoding and encoding (RFC 7145 section 9.2); RDMA CM accept depths. */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dm/iser_spec.h"

static uint8_t buf[128];

static void build(uint8_t flags, uint32_t wstag, uint64_t wva, uint32_t rstag, uint64_t rva)
{
	struct iser_hdr h;

	memset(buf, 0, sizeof(buf));
	memset(&h, 0, sizeof(h));
	h.flags = flags;
	h.write_stag = htobe32(wstag);
	h.write_va = htobe64(wva);
	h.read_stag = htobe32(rstag);
	h.read_va = htobe64(rva);
	memcpy(buf, &h, sizeof(h));
}

static void test_decode_valid(void **state)
{
	struct iser_hdr_info i;
	const char *why = NULL;

	(void)state;
	build(ISER_OP_ISCSI_CTRL | ISER_WSV | ISER_RSV, 0x1234, 0xffff880012345000ull, 0x5678,
	      0x7f0000001000ull);
	assert_int_equal(iser_hdr_decode(buf, 28 + 48, &i, &why), 0);
	assert_true(i.wsv);
	assert_true(i.rsv);
	assert_int_equal(i.write_stag, 0x1234);
	assert_int_equal(i.read_stag, 0x5678);
	assert_true(i.write_va == 0xffff880012345000ull);
	assert_true(i.read_va == 0x7f0000001000ull);
	/* no STags at all (e.g. a NOP-Out) */
	build(ISER_OP_ISCSI_CTRL, 0, 0, 0, 0);
	assert_int_equal(iser_hdr_decode(buf, 28 + 48 + 8, &i, &why), 0);
	assert_false(i.wsv);
	assert_false(i.rsv);
}

static void test_decode_rejects(void **state)
{
	struct iser_hdr_info i;
	const char *why = NULL;

	(void)state;
	build(ISER_OP_ISCSI_CTRL, 0, 0, 0, 0);
	assert_int_equal(iser_hdr_decode(buf, 28 + 47, &i, &why), -EPROTO); /* too short */
	assert_non_null(why);
	build(ISER_OP_HELLO, 0, 0, 0, 0);
	assert_int_equal(iser_hdr_decode(buf, 76, &i, &why), -EPROTO);
	build(0x40, 0, 0, 0, 0); /* unknown opcode */
	assert_int_equal(iser_hdr_decode(buf, 76, &i, &why), -EPROTO);
	build(ISER_OP_ISCSI_CTRL | 0x01, 0, 0, 0, 0); /* reserved flag bit */
	assert_int_equal(iser_hdr_decode(buf, 76, &i, &why), -EPROTO);
	build(ISER_OP_ISCSI_CTRL, 0, 0, 0, 0);
	buf[2] = 1; /* reserved byte */
	assert_int_equal(iser_hdr_decode(buf, 76, &i, &why), -EPROTO);
	build(ISER_OP_ISCSI_CTRL | ISER_WSV, 0, 0x1000, 0, 0); /* valid but zero write STag */
	assert_int_equal(iser_hdr_decode(buf, 76, &i, &why), -EPROTO);
	build(ISER_OP_ISCSI_CTRL | ISER_RSV, 0, 0, 0, 0x1000); /* valid but zero read STag */
	assert_int_equal(iser_hdr_decode(buf, 76, &i, &why), -EPROTO);
}

static void test_encode_ctrl(void **state)
{
	struct iser_hdr_info i;
	const char *why = NULL;

	(void)state;
	memset(buf, 0xff, sizeof(buf));
	iser_hdr_encode_ctrl(buf);
	assert_int_equal(buf[0], ISER_OP_ISCSI_CTRL);
	for (int k = 1; k < 28; k++)
		assert_int_equal(buf[k], 0);
	assert_int_equal(iser_hdr_decode(buf, 76, &i, &why), 0);
}

/*
 * The connect request's values are already ours: libiscsi 1.19 connects with
 * responder_resources 4 and initiator_depth 0, which the accepting side sees
 * as initiator_depth 4 (we may read) and responder_resources 0.
 */
static void test_accept_depths(void **state)
{
	struct iser_cm_depths d;

	(void)state;
	d = iser_cm_accept_depths(4, 0, 128, 128);     /* libiscsi */
	assert_int_equal(d.initiator_depth, 4);
	assert_int_equal(d.responder_resources, 0);
	d = iser_cm_accept_depths(128, 1, 16, 128);    /* capped by the device */
	assert_int_equal(d.initiator_depth, 16);
	assert_int_equal(d.responder_resources, 1);
	d = iser_cm_accept_depths(0, 16, 128, 8);      /* no RDMA Read allowed */
	assert_int_equal(d.initiator_depth, 0);
	assert_int_equal(d.responder_resources, 8);
	d = iser_cm_accept_depths(255, 255, 1000, -1); /* odd device limits */
	assert_int_equal(d.initiator_depth, 255);
	assert_int_equal(d.responder_resources, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_valid),
		cmocka_unit_test(test_decode_rejects),
		cmocka_unit_test(test_encode_ctrl),
		cmocka_unit_test(test_accept_depths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
