// LINK: gw_core
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path's I/O counters (core/counters.c): classification of
 * opcodes, status and byte accounting, the log2 latency buckets, one table
 * per thread (a second thread's completions are not in the first one's
 * snapshot), entries keyed by (target, LUN), (port, group) and device group;
 * a table of 10,000 LUNs (its buckets grown on the way) keeps every entry;
 * a session's cache of its entries counts as the lookups do.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/counters.h"
#include "scsi/scsi.h"

static const int target_a, target_b;    /* stand-ins for struct gw_target */

static struct gw_io_done done(const void *t, uint32_t lun, uint16_t rel, uint8_t op,
			      uint8_t status, uint64_t age_us)
{
	struct gw_io_done d = {
		.target = t, .lun = lun, .rel_port_id = rel, .tpg_id = 1, .opcode = op,
		.status = status, .bytes_read = op == 0x28 ? 4096 : 0,
		.bytes_written = op == 0x2a ? 8192 : 0,
		.start_us = gw_counters_now_us() - age_us,
	};

	return d;
}

static const struct gw_ctr_sample *find(const struct gw_ctr_sample *s, size_t n,
					enum gw_ctr_kind k, const void *t, uint32_t lun,
					uint16_t rel)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].kind == k && (k == GW_CTR_LUN ? s[i].target == t && s[i].lun == lun
						       : s[i].rel_port_id == rel))
			return &s[i];
	return NULL;
}

static uint64_t bucket_sum(const uint64_t *b, unsigned int from, unsigned int to)
{
	uint64_t n = 0;

	for (unsigned int i = from; i < to; i++)
		n += b[i];
	return n;
}

static void classify(void **state)
{
	(void)state;
	assert_int_equal(gw_io_classify(0x28), GW_IO_READ);
	assert_int_equal(gw_io_classify(0x88), GW_IO_READ);
	assert_int_equal(gw_io_classify(0x2a), GW_IO_WRITE);
	assert_int_equal(gw_io_classify(0x89), GW_IO_WRITE);
	assert_int_equal(gw_io_classify(0x00), GW_IO_OTHER);
	assert_int_equal(gw_io_classify(0x12), GW_IO_OTHER);
}

static void *other_thread(void *arg)
{
	struct gw_io_done d = done(&target_b, 0, 9, 0x28, SCSI_STATUS_GOOD, 0);
	struct gw_ctr_sample *s;
	size_t n;

	for (int i = 0; i < 5; i++)
		gw_counters_done(NULL, &d);
	assert_int_equal(gw_counters_snapshot(&s, &n), 0);
	*(size_t *)arg = n;
	free(s);
	return NULL;
}

static void accounting(void **state)
{
	struct gw_io_counters sess;
	struct gw_ctr_sample *s;
	const struct gw_ctr_sample *l0, *l1, *p1, *p2;
	struct gw_io_done d;
	pthread_t th;
	size_t n, other_n = 0;

	(void)state;
	memset(&sess, 0, sizeof(sess));
	for (int i = 0; i < 3; i++) {
		d = done(&target_a, 0, 1, 0x28, SCSI_STATUS_GOOD, 5);   /* bucket 2: [4, 8) */
		gw_counters_done(&sess, &d);
	}
	d = done(&target_a, 0, 1, 0x2a, SCSI_STATUS_GOOD, 1000);       /* bucket 9 */
	gw_counters_done(&sess, &d);
	d = done(&target_a, 1, 2, 0x2a, SCSI_STATUS_CHECK_CONDITION, 0);
	gw_counters_done(&sess, &d);
	d = done(&target_a, 1, 2, 0x12, SCSI_STATUS_RESERVATION_CONFLICT, 0);
	gw_counters_done(&sess, &d);
	d = done(&target_a, 1, 2, 0x28, SCSI_STATUS_GOOD, 0);
	d.aborted = true;
	gw_counters_done(&sess, &d);
	d = done(NULL, 5, 2, 0x00, SCSI_STATUS_BUSY, 0);               /* no such LUN: port only */
	gw_counters_done(&sess, &d);

	assert_int_equal(pthread_create(&th, NULL, other_thread, &other_n), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(other_n, 2);           /* its own LUN and port entries */

	assert_int_equal(gw_counters_snapshot(&s, &n), 0);
	assert_int_equal(n, 4);                 /* LUN 0, LUN 1, port 1, port 2 */
	l0 = find(s, n, GW_CTR_LUN, &target_a, 0, 0);
	l1 = find(s, n, GW_CTR_LUN, &target_a, 1, 0);
	p1 = find(s, n, GW_CTR_PORT, NULL, 0, 1);
	p2 = find(s, n, GW_CTR_PORT, NULL, 0, 2);
	assert_non_null(l0);
	assert_non_null(l1);
	assert_non_null(p1);
	assert_non_null(p2);
	assert_null(find(s, n, GW_CTR_LUN, &target_b, 0, 0));
	assert_int_equal(l0->c.cmds[GW_IO_READ], 3);
	assert_int_equal(l0->c.cmds[GW_IO_WRITE], 1);
	assert_int_equal(l0->c.bytes_read, 3 * 4096);
	assert_int_equal(l0->c.bytes_written, 8192);
	/* a command is never faster than its age at completion: lower buckets stay empty */
	assert_int_equal(bucket_sum(l0->c.lat_read, 0, 2), 0);
	assert_int_equal(bucket_sum(l0->c.lat_read, 2, GW_LAT_BUCKETS), 3);
	assert_int_equal(bucket_sum(l0->c.lat_write, 0, 9), 0);
	assert_int_equal(bucket_sum(l0->c.lat_write, 9, GW_LAT_BUCKETS), 1);
	assert_memory_equal(&p1->c, &l0->c, sizeof(l0->c));
	assert_int_equal(l1->c.check_condition, 1);
	assert_int_equal(l1->c.reservation_conflict, 1);
	assert_int_equal(l1->c.aborted, 1);
	assert_int_equal(l1->c.bytes_read, 0);  /* the aborted READ moved nothing */
	assert_int_equal(l1->c.cmds[GW_IO_READ], 1);
	assert_int_equal(p2->c.busy, 1);
	assert_int_equal(p2->c.cmds[GW_IO_OTHER], 2);
	assert_int_equal(sess.cmds[GW_IO_READ] + sess.cmds[GW_IO_WRITE] + sess.cmds[GW_IO_OTHER], 8);
	free(s);
}

#define MANY_LUNS 10000u

/* On a thread of its own: a fresh table. */
static void *many_luns_thread(void *arg)
{
	struct gw_ctr_sample *s;
	size_t n, nlun = 0;
	uint64_t dg_cmds[3] = { 0 };

	(void)arg;
	for (unsigned int round = 1; round <= 2; round++) {
		for (uint32_t l = 0; l < MANY_LUNS; l++) {
			struct gw_io_done d = done(&target_a, l, 1, 0x28, SCSI_STATUS_GOOD, 100);

			d.dg = (uint16_t)(l % 3 + 1);
			gw_counters_done(NULL, &d);
		}
		assert_int_equal(gw_counters_snapshot(&s, &n), 0);
		/* every LUN once, one port, three device groups */
		assert_int_equal(n, MANY_LUNS + 1 + 3);
		nlun = 0;
		memset(dg_cmds, 0, sizeof(dg_cmds));
		for (size_t i = 0; i < n; i++) {
			if (s[i].kind == GW_CTR_LUN) {
				assert_true(s[i].target == &target_a && s[i].lun < MANY_LUNS);
				assert_int_equal(s[i].c.cmds[GW_IO_READ], round);
				assert_int_equal(bucket_sum(s[i].c.lat_read, 0, GW_LAT_BUCKETS), round);
				nlun++;
			} else if (s[i].kind == GW_CTR_DG) {
				assert_true(s[i].lun < 3);
				dg_cmds[s[i].lun] = s[i].c.cmds[GW_IO_READ];
				assert_int_equal(bucket_sum(s[i].c.lat_read, 0, GW_LAT_BUCKETS),
						 s[i].c.cmds[GW_IO_READ]);
			} else {
				assert_int_equal(s[i].c.cmds[GW_IO_READ], round * MANY_LUNS);
			}
		}
		assert_int_equal(nlun, MANY_LUNS);
		assert_int_equal(dg_cmds[0], round * 3334);
		assert_int_equal(dg_cmds[1], round * 3333);
		assert_int_equal(dg_cmds[2], round * 3333);
		free(s);
	}
	return NULL;
}

static void many_luns_and_device_groups(void **state)
{
	pthread_t th;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, many_luns_thread, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/*
 * A session's cache of its entries (struct gw_ctr_cache): the same sequence
 * counted with a cache and without one, each on a fresh table, gives the same
 * table; the cache follows a LUN, port or device group that changes and a
 * table that is not the one it names.
 */
struct cache_run {
	struct gw_ctr_cache *cache;
	struct gw_ctr_sample *s;
	size_t n;
};

/* The sample of s[0..n) with the key of k (its kind, target, LUN or group, port). */
static const struct gw_ctr_sample *same_key(const struct gw_ctr_sample *s, size_t n,
					    const struct gw_ctr_sample *k)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].kind == k->kind && s[i].target == k->target && s[i].lun == k->lun &&
		    s[i].rel_port_id == k->rel_port_id && s[i].tpg_id == k->tpg_id)
			return &s[i];
	return NULL;
}

static void *cache_thread(void *arg)
{
	struct cache_run *r = arg;
	static const struct { const void *t; uint32_t lun; uint16_t rel; uint16_t dg; uint8_t st; } seq[] = {
		{ &target_a, 0, 1, 1, SCSI_STATUS_GOOD }, { &target_a, 0, 1, 1, SCSI_STATUS_GOOD },
		{ &target_a, 1, 1, 1, SCSI_STATUS_CHECK_CONDITION }, { &target_b, 1, 1, 2, SCSI_STATUS_GOOD },
		{ &target_b, 1, 2, 2, SCSI_STATUS_BUSY }, { NULL, 7, 2, 0, SCSI_STATUS_GOOD },
		{ &target_a, 0, 0, 3, SCSI_STATUS_GOOD }, { &target_a, 0, 1, 1, SCSI_STATUS_GOOD },
	};

	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
			struct gw_io_done d = done(seq[i].t, seq[i].lun, seq[i].rel, i & 1 ? 0x2a : 0x28,
						   seq[i].st, 3);

			d.dg = seq[i].dg;
			d.aborted = round == 2 && i == 3;
			d.cache = r->cache;
			gw_counters_done(NULL, &d);
		}
	}
	assert_int_equal(gw_counters_snapshot(&r->s, &r->n), 0);
	return NULL;
}

static void cached_entries(void **state)
{
	struct gw_ctr_cache cache;
	struct cache_run with = { .cache = &cache }, again = { .cache = &cache }, without = { 0 };
	pthread_t th;

	(void)state;
	memset(&cache, 0, sizeof(cache));
	assert_int_equal(pthread_create(&th, NULL, cache_thread, &with), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(pthread_create(&th, NULL, cache_thread, &without), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* the same cache on another thread: that thread's table, not the old one's entries */
	assert_int_equal(pthread_create(&th, NULL, cache_thread, &again), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* LUN a/0, a/1, b/1; ports 1 and 2; device groups 1 to 3 */
	assert_int_equal(without.n, 8);
	assert_int_equal(with.n, without.n);
	assert_int_equal(again.n, without.n);
	for (size_t i = 0; i < without.n; i++) {
		const struct gw_ctr_sample *w = &without.s[i];
		const struct gw_ctr_sample *got[2] = { same_key(with.s, with.n, w),
						       same_key(again.s, again.n, w) };

		for (int k = 0; k < 2; k++) {
			assert_non_null(got[k]);
			/* everything but which latency bucket (that is the clock's) */
			assert_memory_equal(&got[k]->c, &w->c, offsetof(struct gw_io_counters, lat_read));
			assert_int_equal(bucket_sum(got[k]->c.lat_read, 0, GW_LAT_BUCKETS),
					 bucket_sum(w->c.lat_read, 0, GW_LAT_BUCKETS));
			assert_int_equal(bucket_sum(got[k]->c.lat_write, 0, GW_LAT_BUCKETS),
					 bucket_sum(w->c.lat_write, 0, GW_LAT_BUCKETS));
		}
	}
	/* and they counted: LUN a/0 had 4 commands a round */
	{
		const struct gw_ctr_sample key = { .kind = GW_CTR_LUN, .target = &target_a, .lun = 0 };
		const struct gw_ctr_sample *l = same_key(without.s, without.n, &key);

		assert_non_null(l);
		assert_int_equal(l->c.cmds[GW_IO_READ] + l->c.cmds[GW_IO_WRITE], 3 * 4);
	}
	free(with.s);
	free(without.s);
	free(again.s);
}

static void add(void **state)
{
	struct gw_io_counters a, b;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.cmds[GW_IO_READ] = 1;
	b.cmds[GW_IO_READ] = 2;
	b.lat_write[GW_LAT_BUCKETS - 1] = 7;
	gw_counters_add(&a, &b);
	assert_int_equal(a.cmds[GW_IO_READ], 3);
	assert_int_equal(a.lat_write[GW_LAT_BUCKETS - 1], 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(classify),
		cmocka_unit_test(accounting),
		cmocka_unit_test(add),
		cmocka_unit_test(many_luns_and_device_groups),
		cmocka_unit_test(cached_entries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
