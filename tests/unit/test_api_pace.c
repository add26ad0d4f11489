// LINK: api_haclient
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's request pacer (mgmt/api/pace.c): a burst passes at once, the
 * requests past it wait in order and go at the rate, none is refused, big
 * answers cost more, and stopping lets every waiting request go.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pace.h"

#define N 40

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int order[N];
static int nwent;
static int suspended;

static void go(void *arg)
{
	pthread_mutex_lock(&mu);
	order[nwent++] = (int)(intptr_t)arg;
	pthread_mutex_unlock(&mu);
}

static void before(void *arg)
{
	(void)arg;
	suspended++;            /* under the pacer's lock */
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int went(void)
{
	int n;

	pthread_mutex_lock(&mu);
	n = nwent;
	pthread_mutex_unlock(&mu);
	return n;
}

static void test_burst_then_rate(void **state)
{
	struct api_pace p;
	struct api_pace_wait w[N];
	int passed = 0;
	double t0;

	(void)state;
	nwent = 0;
	suspended = 0;
	assert_int_equal(api_pace_init(&p, 200, 10), 0);
	t0 = now_s();
	for (int i = 0; i < N; i++) {
		w[i].go = go;
		w[i].arg = (void *)(intptr_t)i;
		if (api_pace_take(&p, &w[i], before, NULL))
			passed++;
	}
	/* the burst at once; the rest waits, suspended before it could go */
	assert_int_equal(passed, 10);
	assert_int_equal(suspended, N - 10);
	while (went() < N - 10 && now_s() - t0 < 10)
		usleep(1000);
	assert_int_equal(went(), N - 10);
	/* 30 at 200 a second: not before about 150 ms (a lower bound only: no timing upper bound) */
	assert_true(now_s() - t0 >= 0.12);
	for (int i = 0; i < N - 10; i++)
		assert_int_equal(order[i], 10 + i);     /* in the order they came */
	assert_int_equal(p.passed, 10);
	assert_int_equal(p.waited, N - 10);
	api_pace_destroy(&p);
}

static void test_stop_lets_all_go(void **state)
{
	struct api_pace p;
	struct api_pace_wait w[N];

	(void)state;
	nwent = 0;
	assert_int_equal(api_pace_init(&p, 1, 1), 0);   /* one a second */
	for (int i = 0; i < N; i++) {
		w[i].go = go;
		w[i].arg = (void *)(intptr_t)i;
		(void)api_pace_take(&p, &w[i], NULL, NULL);
	}
	api_pace_stop(&p);
	assert_int_equal(went(), N - 1);
	/* after the stop, requests pass */
	assert_true(api_pace_take(&p, &w[0], NULL, NULL));
	api_pace_destroy(&p);
}

/* Big answers cost more: the next request waits for the bytes to be paid. */
static void test_bytes_charged(void **state)
{
	struct api_pace p;
	struct api_pace_wait w = { .go = go, .arg = (void *)(intptr_t)7 };

	(void)state;
	nwent = 0;
	assert_int_equal(api_pace_init(&p, 100, 5), 0);
	assert_true(api_pace_take(&p, &w, NULL, NULL));
	api_pace_charge(&p, 1000);                      /* small: free */
	assert_true(api_pace_take(&p, &w, NULL, NULL));
	api_pace_charge(&p, 20 * API_PACE_BYTES);       /* 20 requests' worth */
	assert_false(api_pace_take(&p, &w, NULL, NULL));
	assert_int_equal(p.charged, 20 * API_PACE_BYTES);
	api_pace_stop(&p);                              /* lets it go */
	assert_int_equal(went(), 1);
	api_pace_destroy(&p);
}

/*
 * isergw-api stops the pacer while the HTTP threads still take and charge
 * (api_http_stop: the waiting requests go first, then libmicrohttpd stops).
 * Stopping must not touch what they read without the lock: in the TSan tree
 * this test reported the race on `started` (main thread: api_pace_stop;
 * a taker: api_pace_take, api_pace_charge).
 */
static atomic_int taker_state;          /* 1: taking; 2: told to end */

static void *taker(void *arg)
{
	struct api_pace *p = arg;
	struct api_pace_wait w = { .go = go, .arg = (void *)(intptr_t)1 };
	bool queued = false;

	atomic_store_explicit(&taker_state, 1, memory_order_relaxed);
	while (atomic_load_explicit(&taker_state, memory_order_relaxed) == 1) {
		if (!queued)    /* w may wait once only (the burst makes it unlikely) */
			queued = !api_pace_take(p, &w, NULL, NULL);
		api_pace_charge(p, 1);
	}
	return NULL;
}

static void test_stop_while_taking(void **state)
{
	struct api_pace p;
	pthread_t t;

	(void)state;
	nwent = 0;
	atomic_store(&taker_state, 0);
	assert_int_equal(api_pace_init(&p, 1000000, 1000000), 0);
	assert_int_equal(pthread_create(&t, NULL, taker, &p), 0);
	while (atomic_load_explicit(&taker_state, memory_order_relaxed) != 1)
		usleep(100);
	usleep(1000);
	api_pace_stop(&p);
	usleep(1000);                   /* the taker goes on past the stop */
	atomic_store_explicit(&taker_state, 2, memory_order_relaxed);
	assert_int_equal(pthread_join(t, NULL), 0);
	api_pace_destroy(&p);
}

static void test_off(void **state)
{
	struct api_pace p;
	struct api_pace_wait w;

	(void)state;
	assert_int_equal(api_pace_init(&p, 0, 0), 0);
	for (int i = 0; i < 10000; i++)
		assert_true(api_pace_take(&p, &w, NULL, NULL));
	api_pace_destroy(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_then_rate),
		cmocka_unit_test(test_stop_lets_all_go),
		cmocka_unit_test(test_bytes_charged),
		cmocka_unit_test(test_stop_while_taking),
		cmocka_unit_test(test_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
