// LINK: ha_core
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The saver thread (ha/store.c): documents written off the loop, the newest
 * waiting one only (coalescing), completions back on the loop in order, what
 * is queued written before the thread ends, failures still completed, and
 * the real write (temporary file, fsync, rename) read back.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store.h"

/* ------------------------------------------------------------ a saver that waits at a gate */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static unsigned int entered;            /* saves started */
static char written[16][64];            /* texts, in the order written */
static unsigned int nwritten;
static int save_rc;

static int fake_save(const char *text, size_t len, const char *dir)
{
	(void)dir;
	pthread_mutex_lock(&mu);
	entered++;
	pthread_cond_broadcast(&cv);
	while (!gate_open)
		pthread_cond_wait(&cv, &mu);
	if (nwritten < 16)
		snprintf(written[nwritten++], sizeof(written[0]), "%.*s", (int)len, text);
	pthread_mutex_unlock(&mu);
	return save_rc;
}

static void wait_entered(unsigned int n)
{
	pthread_mutex_lock(&mu);
	while (entered < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void open_gate(bool open)
{
	pthread_mutex_lock(&mu);
	gate_open = open;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------ the loop */

static struct reactor *r;
static uint64_t done_seqs[16];
static unsigned int ndone;
static uint64_t want_seq;
static struct reactor_timer timeout;

static void on_done(void *ctx, uint64_t seq)
{
	(void)ctx;
	if (ndone < 16)
		done_seqs[ndone] = seq;
	ndone++;
	if (seq >= want_seq)
		reactor_stop(r);
}

static void on_timeout(void *arg)
{
	(void)arg;
	reactor_stop(r);
}

static struct reactor_timer gate_timer;
static unsigned int gate_ndone = ~0u;  /* done() calls before the gate opened */

static void gate_cb(void *arg)
{
	(void)arg;
	gate_ndone = ndone;
	open_gate(true);
}

/* Run the loop until done(seq), at most ms (once per reactor: a stopped one stays stopped). */
static void run_for_done(uint64_t seq, uint64_t ms)
{
	want_seq = seq;
	reactor_timer_arm(r, &timeout, ms);
	reactor_run(r);
	reactor_timer_cancel(r, &timeout);
}

static void queue(struct ha_store *s, uint64_t gen, uint64_t seq)
{
	char text[64];
	struct ha_doc d = { .generation = gen };

	snprintf(text, sizeof(text), "{\"generation\":%llu}", (unsigned long long)gen);
	d.text = text;
	d.text_len = strlen(text);
	ha_store_queue(s, &d, seq);
}

static int setup(void **state)
{
	(void)state;
	assert_int_equal(reactor_create(0, &r), 0);
	reactor_timer_init(&timeout, on_timeout, NULL);
	reactor_timer_init(&gate_timer, gate_cb, NULL);
	gate_open = false;
	entered = nwritten = ndone = 0;
	save_rc = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	reactor_destroy(r);
	return 0;
}

static struct ha_store *start(int (*save)(const char *, size_t, const char *), const char *dir)
{
	struct ha_store_params p = { .dir = dir, .done = on_done, .save = save };
	struct ha_store *s = NULL;

	assert_int_equal(ha_store_start(r, &p, &s), 0);
	assert_non_null(s);
	return s;
}

/* ------------------------------------------------------------ tests */

/* While one save runs, three more documents come: only the newest is written after it. */
static void test_coalesces_to_the_newest(void **state)
{
	struct ha_store *s = start(fake_save, "/nonexistent");

	(void)state;
	queue(s, 7, 1);
	wait_entered(1);                /* the thread writes generation 7 (held at the gate) */
	queue(s, 8, 2);
	queue(s, 9, 3);
	queue(s, 10, 4);
	open_gate(true);
	run_for_done(4, 10000);
	assert_int_equal(nwritten, 2);
	assert_string_equal(written[0], "{\"generation\":7}");
	assert_string_equal(written[1], "{\"generation\":10}");
	assert_int_equal(ha_store_saves(s), 2);
	/* increasing, ending with the newest; never one beyond what was written */
	assert_true(ndone >= 1 && ndone <= 2);
	assert_int_equal(done_seqs[ndone - 1], 4);
	if (ndone == 2)
		assert_int_equal(done_seqs[0], 1);
	ha_store_stop(s);
}

/* No done() before the save it reports has finished. */
static void test_done_only_after_the_write(void **state)
{
	struct ha_store *s = start(fake_save, "/nonexistent");

	(void)state;
	queue(s, 3, 1);
	wait_entered(1);
	/* the write is held for 300 ms of the loop running: nothing comes meanwhile */
	reactor_timer_arm(r, &gate_timer, 300);
	run_for_done(1, 10000);
	assert_true(gate_ndone == 0);
	assert_int_equal(ndone, 1);
	assert_int_equal(done_seqs[0], 1);
	ha_store_stop(s);
}

/* Stopping writes what is still queued, and joins. */
static void test_stop_writes_the_queued_one(void **state)
{
	struct ha_store *s = start(fake_save, "/nonexistent");

	(void)state;
	queue(s, 1, 1);
	wait_entered(1);
	queue(s, 2, 2);
	open_gate(true);
	ha_store_stop(s);
	assert_int_equal(nwritten, 2);
	assert_string_equal(written[1], "{\"generation\":2}");
}

/* A failed save still completes its sequence number (the loop logs it). */
static void test_failure_completes(void **state)
{
	struct ha_store *s = start(fake_save, "/nonexistent");

	(void)state;
	save_rc = -EIO;
	open_gate(true);
	queue(s, 5, 1);
	run_for_done(1, 10000);
	assert_int_equal(ndone, 1);
	assert_int_equal(done_seqs[0], 1);
	ha_store_stop(s);
}

/* The real writer: the file is there when done() comes, and reads back. */
static void test_real_save(void **state)
{
	char dir[] = "/tmp/test-ha-store-XXXXXX", path[64], buf[128] = "";
	struct ha_doc *d = NULL, *back = NULL;
	struct ha_store *s;
	char err[256] = "";
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	s = start(NULL, dir);
	assert_int_equal(ha_doc_empty(&d), 0);
	ha_store_queue(s, d, 1);
	run_for_done(1, 10000);
	assert_int_equal(ndone, 1);
	assert_int_equal(ha_doc_load(dir, &back, err, sizeof(err)), 0);
	assert_memory_equal(back->digest, d->digest, HA_DIGEST_LEN);
	snprintf(path, sizeof(path), "%s/%s", dir, HA_DOC_FILE);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_int_equal(strncmp(buf, d->text, d->text_len), 0);
	ha_store_stop(s);
	ha_doc_free(d);
	ha_doc_free(back);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/*
 * LUN changes after a whole document go to the journal, which the load
 * replays; after HA_JOURNAL_MAX lines a whole document again (it removes
 * the journal), then lines again.
 */
static void test_real_journal(void **state)
{
	char dir[] = "/tmp/test-ha-store-XXXXXX", path[96], err[256] = "";
	const char *cfg = "{\"nodes\":[{\"name\":\"n1\",\"tpg_id\":1,\"portals\":[{\"url\":"
		"\"tcp://10.0.0.1\",\"rel_port_id\":1}]}],\"device_groups\":[{\"name\":\"default\"}],"
		"\"targets\":[{\"iqn\":\"iqn.2026-11.org.example:t\"}]}";
	struct ha_doc *e = NULL, *d = NULL, *n = NULL, *back = NULL;
	struct ha_store *s;
	uint64_t seq = 0;
	char lun[64];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, HA_JOURNAL_FILE);
	s = start(NULL, dir);
	assert_int_equal(ha_doc_empty(&e), 0);
	assert_int_equal(ha_doc_with_config(e, cfg, &d, err, sizeof(err)), 0);
	ha_store_queue(s, d, ++seq);
	for (unsigned int i = 0; i < HA_JOURNAL_MAX + 3; i++) {
		snprintf(lun, sizeof(lun), "{\"path\":\"/dev/x%u\"}", i);
		assert_int_equal(ha_doc_with_lun(d, "iqn.2026-11.org.example:t", i, lun, &n, err,
						 sizeof(err)), 0);
		ha_doc_free(d);
		d = n;
		ha_store_queue(s, d, ++seq);
	}
	run_for_done(seq, 20000);
	assert_true(ha_store_saves(s) >= 1);
	/* the last two changes came after the whole document of change HA_JOURNAL_MAX + 1 */
	f = fopen(path, "r");
	assert_non_null(f);
	for (int lines = 0; lines < 3; lines++) {
		char buf[256];

		if (!fgets(buf, sizeof(buf), f)) {
			assert_int_equal(lines, 2);
			break;
		}
		assert_true(lines < 2);
	}
	fclose(f);
	assert_int_equal(ha_doc_load(dir, &back, err, sizeof(err)), 0);
	assert_int_equal(back->generation, d->generation);
	assert_string_equal(back->text, d->text);
	ha_doc_free(back);
	ha_store_stop(s);
	ha_doc_free(d);
	ha_doc_free(e);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, HA_DOC_FILE);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_coalesces_to_the_newest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_done_only_after_the_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_writes_the_queued_one, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_completes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_real_save, setup, teardown),
		cmocka_unit_test_setup_teardown(test_real_journal, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
