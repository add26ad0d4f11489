// LINK: gw_scsi gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A LU on a real file grown online (bdev_grow, what a reload raising the
 * LUN's size does): CAPACITY DATA HAS CHANGED once per nexus and the new
 * READ CAPACITY. A file of its own: the file backstore brings its own GET
 * LBA STATUS, which test_scsi_sbc.c's in-memory bdev must not get.
 */
#include <unistd.h>

#include "test_scsi_harness.h"

/* A command that does no I/O (TEST UNIT READY, READ CAPACITY), completed at once. */
static uint8_t run_now(struct tctx *x, const struct scsi_itn *itn, const uint8_t *cdb,
		       size_t cdb_len, void *buf, uint32_t buf_len)
{
	tcmd_init(&x->t, itn, x->lu, cdb, cdb_len, buf, buf_len);
	x->t.c.data_in = true;
	scsi_cmd_submit(&x->t.c);
	assert_int_equal(x->t.ndone, 1);
	return x->t.c.status;
}

static uint64_t capacity16(struct tctx *x, const struct scsi_itn *itn)
{
	uint8_t c[16], buf[32];

	cdb16(c, 0x9e, 0x10, 0, sizeof(buf));
	assert_int_equal(run_now(x, itn, c, 16, buf, sizeof(buf)), SCSI_STATUS_GOOD);
	return be64(buf) + 1;
}

/*
 * A LU on a file grown online (bdev_grow: what a reload raising the LUN's
 * size does): every nexus gets CAPACITY DATA HAS CHANGED once, READ
 * CAPACITY the new size; a size that is not larger changes nothing.
 */
static void test_grow_online(void **state)
{
	char path[] = "/tmp/test_scsi_grow_XXXXXX";
	struct scsi_lu_params p = default_params();
	struct bdev_file_params fp = { .path = path };
	struct tctx x;
	struct bdev *b = NULL;
	uint8_t tur[16] = { 0 };
	bool grown;
	int fd, n;

	(void)state;
	memset(&x, 0, sizeof(x));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	assert_int_equal(bdev_file_open(&fp, &b), 0);
	assert_int_equal(scsi_lu_create(&p, b, &x.lu), 0);
	x.luns[0] = x.lu;
	itn_init(&x.a, 1, "iqn.2026-01.org.example:host-a", "400001370000", &test_port1, x.luns, 1);
	itn_init(&x.b, 2, "iqn.2026-01.org.example:host-b", "400001370001", &test_port1, x.luns, 1);
	scsi_lu_itn_add(x.lu, &x.a);
	scsi_lu_itn_add(x.lu, &x.b);
	for (n = 0; run_now(&x, &x.a, tur, 6, NULL, 0) != SCSI_STATUS_GOOD && n < 32; n++)
		;
	for (n = 0; run_now(&x, &x.b, tur, 6, NULL, 0) != SCSI_STATUS_GOOD && n < 32; n++)
		;
	assert_int_equal(capacity16(&x, &x.a), 2048);

	assert_int_equal(bdev_grow(b, 2 << 20, &grown), 0);
	assert_true(grown);
	run_now(&x, &x.a, tur, 6, NULL, 0);
	assert_sense(&x, SCSI_SK_UNIT_ATTENTION, 0x2a09);
	assert_int_equal(run_now(&x, &x.a, tur, 6, NULL, 0), SCSI_STATUS_GOOD);
	assert_int_equal(capacity16(&x, &x.a), 4096);
	/* the other nexus too, once, on whatever command comes first */
	cdb16(tur, 0x9e, 0x10, 0, 32);
	run_now(&x, &x.b, tur, 16, NULL, 0);
	assert_sense(&x, SCSI_SK_UNIT_ATTENTION, 0x2a09);
	assert_int_equal(capacity16(&x, &x.b), 4096);

	/* not larger: no unit attention */
	assert_int_equal(bdev_grow(b, 1 << 20, &grown), 0);
	assert_false(grown);
	memset(tur, 0, sizeof(tur));
	assert_int_equal(run_now(&x, &x.a, tur, 6, NULL, 0), SCSI_STATUS_GOOD);
	assert_int_equal(capacity16(&x, &x.a), 4096);

	scsi_lu_itn_remove(x.lu, &x.a);
	scsi_lu_itn_remove(x.lu, &x.b);
	scsi_lu_destroy(x.lu);
	bdev_close(b);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_online),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
