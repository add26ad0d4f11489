// LINK: gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the pure parts of backend/iscsi.c: backend URL parsing,
 * the reconnect backoff, the classification of backend answers, and how an
 * interrupted COMPARE AND WRITE is resolved, the slicing of a split
 * command's iovecs; the designator of VPD page 0x83 that names the LU. An
 * unreachable backend at open
 * (nothing listens on the port) opens offline, with the configured geometry
 * or with an unknown one, and closes while it keeps being unreachable.
 * When writes must wait for this node's reservation key (fencing).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/iscsi_priv.h"

static void test_url_basic(void **state)
{
	struct bdev_iscsi_url u;
	char err[128];

	(void)state;
	assert_int_equal(bdev_iscsi_parse_url("iscsi://127.0.0.1/iqn.2026-11.org.x:t/1", &u, err,
					      sizeof(err)), 0);
	assert_string_equal(u.host, "127.0.0.1");
	assert_int_equal(u.port, 3260);
	assert_string_equal(u.portal, "127.0.0.1:3260");
	assert_string_equal(u.iqn, "iqn.2026-11.org.x:t");
	assert_int_equal(u.lun, 1);
	assert_string_equal(u.user, "");

	assert_int_equal(bdev_iscsi_parse_url("iscsi://bob%s3cr%t@e@host.example:13400/iqn.a:b/0",
					      &u, err, sizeof(err)), 0);
	assert_string_equal(u.user, "bob");
	assert_string_equal(u.secret, "s3cr%t@e");
	assert_string_equal(u.host, "host.example");
	assert_int_equal(u.port, 13400);
	assert_int_equal(u.lun, 0);

	assert_int_equal(bdev_iscsi_parse_url("iscsi://[::1]:3261/iqn.a:b/16383", &u, err,
					      sizeof(err)), 0);
	assert_string_equal(u.host, "::1");
	assert_string_equal(u.portal, "[::1]:3261");
	assert_int_equal(u.lun, 16383);
}

static void test_url_bad(void **state)
{
	static const char *const bad[] = {
		"", "tcp://127.0.0.1/iqn.a:b/1", "iscsi://", "iscsi://127.0.0.1",
		"iscsi://127.0.0.1/iqn.a:b", "iscsi://127.0.0.1/iqn.a:b/", "iscsi://127.0.0.1//1",
		"iscsi://127.0.0.1:0/iqn.a:b/1", "iscsi://127.0.0.1:65536/iqn.a:b/1",
		"iscsi://127.0.0.1:/iqn.a:b/1", "iscsi://127.0.0.1:x/iqn.a:b/1",
		"iscsi://127.0.0.1/iqn.a:b/x", "iscsi://127.0.0.1/iqn.a:b/-1",
		"iscsi://127.0.0.1/iqn.a:b/16384", "iscsi://user@127.0.0.1/iqn.a:b/1",
		"iscsi://%pw@127.0.0.1/iqn.a:b/1", "iscsi://u%@127.0.0.1/iqn.a:b/1",
		"iscsi://[::1/iqn.a:b/1", "iscsi://[]:1/iqn.a:b/1", "iscsi://:3260/iqn.a:b/1",
		"iscsi://h/a/b/1",
	};
	struct bdev_iscsi_url u;
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (bdev_iscsi_parse_url(bad[i], &u, err, sizeof(err)) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
		assert_true(err[0] != '\0');
		assert_null(strstr(err, "pw"));
	}
	assert_false(bdev_is_iscsi_url("/var/lib/disk.img"));
	assert_true(bdev_is_iscsi_url("iscsi://h/i/0"));
}

static void test_backoff(void **state)
{
	uint32_t prev = 0;

	(void)state;
	assert_int_equal(bdev_iscsi_backoff_ms(0), IB_BACKOFF_BASE_MS);
	assert_int_equal(bdev_iscsi_backoff_ms(1), 2 * IB_BACKOFF_BASE_MS);
	for (unsigned int a = 0; a < 100; a++) {
		uint32_t d = bdev_iscsi_backoff_ms(a);

		assert_true(d >= prev);
		assert_true(d <= IB_BACKOFF_MAX_MS);
		prev = d;
	}
	assert_int_equal(bdev_iscsi_backoff_ms(1000000), IB_BACKOFF_MAX_MS);
}

static void test_classify(void **state)
{
	(void)state;
	assert_int_equal(bdev_iscsi_classify(0x00, 0, 0, 0, false), IB_DONE);
	assert_int_equal(bdev_iscsi_classify(0x08, 0, 0, 0, false), IB_RETRY_LATER);     /* BUSY */
	assert_int_equal(bdev_iscsi_classify(0x28, 0, 0, 0, false), IB_RETRY_LATER);     /* TSF */
	assert_int_equal(bdev_iscsi_classify(0x18, 0, 0, 0, false), IB_PASS);    /* RES CONFLICT */
	assert_int_equal(bdev_iscsi_classify(-1, 0, 0, 0, false), IB_RECONNECT);
	assert_int_equal(bdev_iscsi_classify(0x02, 0x6, 0x29, 0x00, false), IB_RETRY);   /* POR */
	assert_int_equal(bdev_iscsi_classify(0x02, 0x2, 0x04, 0x01, false), IB_RETRY_LATER);
	assert_int_equal(bdev_iscsi_classify(0x02, 0xb, 0x47, 0x00, false), IB_RETRY_LATER);
	assert_int_equal(bdev_iscsi_classify(0x02, 0x5, 0x25, 0x00, false), IB_RETRY_LATER);
	/* host errors go back as they are */
	assert_int_equal(bdev_iscsi_classify(0x02, 0x5, 0x21, 0x00, false), IB_PASS);
	assert_int_equal(bdev_iscsi_classify(0x02, 0x3, 0x11, 0x00, false), IB_PASS);
	assert_int_equal(bdev_iscsi_classify(0x02, 0xe, 0x1d, 0x00, false), IB_PASS);
	assert_int_equal(bdev_iscsi_classify(0x02, 0x5, 0x20, 0x00, false), IB_PASS);
	/* an optional command (WRITE SAME for WRITE_ZEROES) the backend lacks */
	assert_int_equal(bdev_iscsi_classify(0x02, 0x5, 0x20, 0x00, true), IB_UNSUPPORTED);
	assert_int_equal(bdev_iscsi_classify(0x02, 0x5, 0x24, 0x00, true), IB_UNSUPPORTED);
	assert_int_equal(bdev_iscsi_classify(0x02, 0x5, 0x21, 0x00, true), IB_PASS);
}

static void test_caw_outcome(void **state)
{
	uint8_t cmp[1024], wr[1024], buf[2048], disk[1024];
	struct iovec iov[3];
	uint64_t off = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(cmp); i++) {
		cmp[i] = (uint8_t)i;
		wr[i] = (uint8_t)(i * 7 + 3);
	}
	memcpy(buf, cmp, sizeof(cmp));
	memcpy(buf + sizeof(cmp), wr, sizeof(wr));
	/* split the data unevenly across iovecs, across the verify/write border */
	iov[0].iov_base = buf;
	iov[0].iov_len = 700;
	iov[1].iov_base = buf + 700;
	iov[1].iov_len = 600;
	iov[2].iov_base = buf + 1300;
	iov[2].iov_len = 748;

	memcpy(disk, wr, sizeof(disk));
	assert_int_equal(bdev_iscsi_caw_outcome(disk, iov, 3, sizeof(disk), &off), IB_CAW_APPLIED);
	memcpy(disk, cmp, sizeof(disk));
	assert_int_equal(bdev_iscsi_caw_outcome(disk, iov, 3, sizeof(disk), &off), IB_CAW_REISSUE);
	disk[777] ^= 0xff;
	assert_int_equal(bdev_iscsi_caw_outcome(disk, iov, 3, sizeof(disk), &off),
			 IB_CAW_MISCOMPARE);
	assert_int_equal(off, 777);
}

static void test_iov_slice(void **state)
{
	static uint8_t a[100], b[300], c[50];
	struct iovec iov[3] = { { a, sizeof(a) }, { b, sizeof(b) }, { c, sizeof(c) } };
	struct iovec out[3];
	uint64_t total = 0;

	(void)state;
	/* inside one iovec */
	assert_int_equal(bdev_iscsi_iov_slice(iov, 3, 110, 20, out), 1);
	assert_ptr_equal(out[0].iov_base, b + 10);
	assert_int_equal(out[0].iov_len, 20);
	/* across all three */
	assert_int_equal(bdev_iscsi_iov_slice(iov, 3, 90, 320, out), 3);
	assert_ptr_equal(out[0].iov_base, a + 90);
	assert_int_equal(out[0].iov_len, 10);
	assert_ptr_equal(out[1].iov_base, b);
	assert_int_equal(out[1].iov_len, 300);
	assert_ptr_equal(out[2].iov_base, c);
	assert_int_equal(out[2].iov_len, 10);
	/* on a boundary, to the end */
	assert_int_equal(bdev_iscsi_iov_slice(iov, 3, 400, 50, out), 1);
	assert_ptr_equal(out[0].iov_base, c);
	assert_int_equal(out[0].iov_len, 50);
	/* consecutive slices cover the data exactly once */
	for (uint64_t off = 0; off < 450; off += 64) {
		uint64_t len = 450 - off < 64 ? 450 - off : 64;
		int n = bdev_iscsi_iov_slice(iov, 3, off, len, out);

		for (int i = 0; i < n; i++)
			total += out[i].iov_len;
	}
	assert_int_equal(total, 450);
}

static void test_open_unreachable(void **state)
{
	struct bdev_iscsi_params p = {
		.url = "iscsi://127.0.0.1:13499/iqn.2026-11.org.isergw:nobody/0",
		.open_timeout_ms = 2000,
	};
	struct bdev *b = NULL;

	(void)state;
	/* nothing listens there and no geometry: offline, capacity unknown (0) */
	assert_int_equal(bdev_iscsi_open(&p, &b), 0);
	assert_non_null(b);
	assert_true(bdev_offline(b));
	assert_int_equal(b->info.size_bytes, 0);
	assert_int_equal(b->info.block_size, 512);
	bdev_close(b);          /* stops the background discovery */
	b = NULL;
	/* with a configured geometry it opens offline */
	p.size_bytes = 1u << 20;
	p.block_size = 512;
	assert_int_equal(bdev_iscsi_open(&p, &b), 0);
	assert_non_null(b);
	assert_true(bdev_offline(b));
	assert_int_equal(b->info.size_bytes, 1u << 20);
	assert_int_equal(b->info.block_size, 512);
	bdev_close(b);
	/* a bad URL is refused before any connect */
	p.url = "iscsi://127.0.0.1:13499/iqn.x";
	assert_int_equal(bdev_iscsi_open(&p, &b), -EINVAL);
}

/* What an answer to PERSISTENT RESERVE OUT means for the fencing. */
/* Writes wait for the key (Transitioning) only with fencing on, and only while needed. */
static void test_awaits_registration(void **state)
{
	(void)state;
	/* no fencing (no key, or a backend without persistent reservations): never */
	assert_false(bdev_iscsi_awaits_registration(false, 2, 2, 1, 5));
	/* no session up yet: its login registers before it serves */
	assert_false(bdev_iscsi_awaits_registration(true, 0, 0, 0, 5));
	/* registered, the key seen there since the last lease gap */
	assert_false(bdev_iscsi_awaits_registration(true, 0, 3, 5, 5));
	/* a session serves unregistered (came up without a lease, or found itself fenced) */
	assert_true(bdev_iscsi_awaits_registration(true, 1, 0, 5, 5));
	assert_true(bdev_iscsi_awaits_registration(true, 1, 3, 5, 5));
	/* back after a time without a lease: the key may have been preempted meanwhile */
	assert_true(bdev_iscsi_awaits_registration(true, 0, 1, 4, 5));
	/* fenced found on another reactor: the key is known gone (0) */
	assert_true(bdev_iscsi_awaits_registration(true, 0, 2, 0, 5));
}

static void test_pr_outcome(void **state)
{
	enum { REG = 0, RESV = 1, PREEMPT = 4, REG_IGNORE = 6 };

	(void)state;
	assert_int_equal(bdev_iscsi_pr_outcome(REG_IGNORE, 0x00, 0, 0), IB_PR_OK);
	assert_int_equal(bdev_iscsi_pr_outcome(PREEMPT, 0x00, 0, 0), IB_PR_OK);
	/* preempting a key nobody holds any more (another survivor was first) */
	assert_int_equal(bdev_iscsi_pr_outcome(PREEMPT, 0x18, 0, 0), IB_PR_ALREADY);
	/* reserving a LUN another registrant reserved */
	assert_int_equal(bdev_iscsi_pr_outcome(RESV, 0x18, 0, 0), IB_PR_ALREADY);
	/* a registration never conflicts: something is wrong */
	assert_int_equal(bdev_iscsi_pr_outcome(REG_IGNORE, 0x18, 0, 0), IB_PR_FAIL);
	assert_int_equal(bdev_iscsi_pr_outcome(REG, 0x18, 0, 0), IB_PR_FAIL);
	/* the backend's unit attentions: again */
	assert_int_equal(bdev_iscsi_pr_outcome(PREEMPT, 0x02, 0x6, 0x29), IB_PR_RETRY);
	/* no persistent reservations: INVALID COMMAND OPERATION CODE, INVALID FIELD IN CDB */
	assert_int_equal(bdev_iscsi_pr_outcome(REG_IGNORE, 0x02, 0x5, 0x20), IB_PR_UNSUPPORTED);
	assert_int_equal(bdev_iscsi_pr_outcome(RESV, 0x02, 0x5, 0x24), IB_PR_UNSUPPORTED);
	/* anything else fails: NOT READY, MEDIUM ERROR, BUSY, a transport error */
	assert_int_equal(bdev_iscsi_pr_outcome(PREEMPT, 0x02, 0x2, 0x04), IB_PR_FAIL);
	assert_int_equal(bdev_iscsi_pr_outcome(PREEMPT, 0x02, 0x3, 0x11), IB_PR_FAIL);
	assert_int_equal(bdev_iscsi_pr_outcome(PREEMPT, 0x08, 0, 0), IB_PR_FAIL);
	assert_int_equal(bdev_iscsi_pr_outcome(PREEMPT, -1, 0, 0), IB_PR_FAIL);
	/* the type: WRITE EXCLUSIVE - REGISTRANTS ONLY */
	assert_int_equal(IB_PR_TYPE, 5);
}

/* The host's answer for a command of a fenced node: NOT READY 04/0C, fixed format. */
static void test_fenced_sense(void **state)
{
	uint8_t s[IB_FENCED_SENSE_LEN];

	(void)state;
	memset(s, 0xee, sizeof(s));
	bdev_iscsi_fenced_sense(s);
	assert_int_equal(s[0], 0x70);
	assert_int_equal(s[2], 0x02);
	assert_int_equal(s[7], 10);
	assert_int_equal(s[12], 0x04);
	assert_int_equal(s[13], 0x0c);
	for (size_t i = 0; i < sizeof(s); i++)
		if (i != 0 && i != 2 && i != 7 && i != 12 && i != 13)
			assert_int_equal(s[i], 0);
}

/* Without a key, or for another backstore, nothing is fenced. */
static void test_fence_refused(void **state)
{
	struct bdev_iscsi_params p = {
		.url = "iscsi://127.0.0.1:13499/iqn.2026-11.org.isergw:nobody/0",
		.open_timeout_ms = 500, .size_bytes = 1u << 20, .block_size = 512,
	};
	uint64_t k = 0x6973677700000002ull;
	struct bdev *b = NULL;

	(void)state;
	assert_int_equal(bdev_iscsi_fence(NULL, &k, 1, 100), -EINVAL);
	assert_int_equal(bdev_iscsi_open(&p, &b), 0);
	bdev_iscsi_fence_setup(0, NULL);
	assert_int_equal(bdev_iscsi_fence(b, &k, 1, 100), -EOPNOTSUPP);
	/* a key but nobody at the backend: the bounded attempt fails, logged */
	bdev_iscsi_fence_setup(0x6973677700000001ull, NULL);
	assert_int_equal(bdev_iscsi_fence(b, &k, 0, 100), 0);
	assert_true(bdev_iscsi_fence(b, &k, 1, 300) < 0);
	bdev_iscsi_fence_setup(0, NULL);
	bdev_close(b);
}

/* VPD page 0x83: the designator naming the LU, and whether it is unique beyond its target. */
static void test_lu_designator(void **state)
{
	/* tgt's: T10 vendor ID, NAA locally assigned, then port designators */
	static const uint8_t tgt[] = {
		0x00, 0x83, 0x00, 0x28,
		0x02, 0x01, 0x00, 0x08, 'I', 'E', 'T', ' ', ' ', ' ', ' ', ' ',
		0x01, 0x03, 0x00, 0x08, 0x30, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
		0x01, 0x14, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01,        /* relative target port */
		0x01, 0x15, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01,        /* target port group */
	};
	/* a NAA of the target port only, an EUI-64 and a NAA 6 of the LU */
	static const uint8_t lio[] = {
		0x00, 0x83, 0x00, 0x2c,
		0x01, 0x13, 0x00, 0x08, 0x50, 1, 2, 3, 4, 5, 6, 7,     /* association 1: the port */
		0x01, 0x02, 0x00, 0x08, 0xaa, 1, 2, 3, 4, 5, 6, 7,     /* EUI-64 */
		0x01, 0x03, 0x00, 0x10, 0x60, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	};
	uint8_t out[300];
	size_t n;

	(void)state;
	n = bdev_iscsi_lu_designator(tgt, sizeof(tgt), out, sizeof(out));
	assert_int_equal(n, 10);
	assert_int_equal(out[0], 3);
	assert_int_equal(out[1], 1);
	assert_memory_equal(out + 2, tgt + 20, 8);
	assert_false(bdev_iscsi_designator_global(out, n));
	n = bdev_iscsi_lu_designator(lio, sizeof(lio), out, sizeof(out));
	assert_int_equal(n, 18);
	assert_int_equal(out[0], 3);
	assert_memory_equal(out + 2, lio + 32, 16);
	assert_true(bdev_iscsi_designator_global(out, n));
	/* only T10 vendor ID: that one, not global */
	n = bdev_iscsi_lu_designator(tgt, 16, out, sizeof(out));
	assert_int_equal(n, 10);
	assert_int_equal(out[0], 1);
	assert_false(bdev_iscsi_designator_global(out, n));
	/* truncated data: what arrived; not page 0x83, nothing, no room: none */
	assert_int_equal(bdev_iscsi_lu_designator(lio, 20, out, sizeof(out)), 0);
	assert_int_equal(bdev_iscsi_lu_designator(lio, 32, out, sizeof(out)), 10);
	assert_true(bdev_iscsi_designator_global(out, 10));
	assert_int_equal(bdev_iscsi_lu_designator(tgt + 1, sizeof(tgt) - 1, out, sizeof(out)), 0);
	assert_int_equal(bdev_iscsi_lu_designator(tgt, 3, out, sizeof(out)), 0);
	assert_int_equal(bdev_iscsi_lu_designator(lio, sizeof(lio), out, 17), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_basic),
		cmocka_unit_test(test_lu_designator),
		cmocka_unit_test(test_url_bad),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_caw_outcome),
		cmocka_unit_test(test_iov_slice),
		cmocka_unit_test(test_open_unreachable),
		cmocka_unit_test(test_pr_outcome),
		cmocka_unit_test(test_awaits_registration),
		cmocka_unit_test(test_fenced_sense),
		cmocka_unit_test(test_fence_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
