// LINK: gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The backstore registry (backend/backstore.c): a LUN's path is opened by
 * the backstore registered for its URL scheme (iscsi://), any other path
 * (no scheme, or one nobody registered) by the file backstore; a registered
 * scheme gets the LUN's configuration; a second backstore for a scheme is
 * refused; fencing goes to the backstore that has it, -EOPNOTSUPP elsewhere.
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
#include "config/config.h"

static const struct gw_lun_cfg *opened;
static int fenced;

static int mem_open(const struct gw_lun_cfg *lc, char *err, size_t errlen, struct bdev **out)
{
	(void)err;
	(void)errlen;
	(void)out;
	opened = lc;
	return -ENOTSUP;
}

static int mem_fence(struct bdev *b, const uint64_t *keys, size_t n, uint32_t timeout_ms)
{
	(void)b;
	(void)keys;
	(void)timeout_ms;
	fenced += (int)n;
	return 0;
}

static const struct bdev_backstore mem = { .scheme = "mem", .open = mem_open, .fence = mem_fence };
static const struct bdev_backstore mem2 = { .scheme = "mem", .open = mem_open };

static void by_scheme(void **state)
{
	const struct bdev_backstore *file = bdev_backstore_for("/var/lib/disk.img");

	(void)state;
	assert_non_null(file);
	assert_string_equal(file->scheme, BDEV_SCHEME_FILE);
	assert_string_equal(bdev_backstore_for("iscsi://h/iqn.2026-11.x:y/0")->scheme, "iscsi");
	/* a scheme nobody registered is a file name, as it always was */
	assert_ptr_equal(bdev_backstore_for("mem://x"), file);
	assert_ptr_equal(bdev_backstore_for("iscsi:/h"), file);
	assert_ptr_equal(bdev_backstore_for("iscsix://h"), file);

	assert_int_equal(bdev_backstore_register(&mem), 0);
	assert_int_equal(bdev_backstore_register(&mem2), -EEXIST);
	assert_ptr_equal(bdev_backstore_for("mem://x"), &mem);
	assert_ptr_equal(bdev_backstore_for("memx://x"), file);
}

static void open_and_fence_dispatch(void **state)
{
	struct gw_lun_cfg lc;
	struct bdev b, *out = NULL;
	const uint64_t keys[2] = { 1, 2 };
	char err[128] = "";

	(void)state;
	memset(&lc, 0, sizeof(lc));
	snprintf(lc.path, sizeof(lc.path), "mem://lun0");
	assert_int_equal(bdev_open_lun(&lc, err, sizeof(err), &out), -ENOTSUP);
	assert_ptr_equal(opened, &lc);

	/* a file that is not there: the file backstore says so */
	snprintf(lc.path, sizeof(lc.path), "/nonexistent/isergw-registry-test");
	assert_int_equal(bdev_open_lun(&lc, err, sizeof(err), &out), -ENOENT);

	memset(&b, 0, sizeof(b));
	snprintf(b.name, sizeof(b.name), "mem://lun0");
	assert_true(bdev_fenceable(&b));
	assert_int_equal(bdev_fence(&b, keys, 2, 100), 0);
	assert_int_equal(fenced, 2);
	snprintf(b.name, sizeof(b.name), "/var/lib/disk.img");
	assert_false(bdev_fenceable(&b));
	assert_int_equal(bdev_fence(&b, keys, 2, 100), -EOPNOTSUPP);
	assert_int_equal(fenced, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(by_scheme),
		cmocka_unit_test(open_and_fence_dispatch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
