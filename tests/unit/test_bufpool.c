// LINK: isergw_config isergw_common
/* Per-thread buffer cache: alignment, reuse within a class, limits, oversize; object caches. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/bufpool.h"

static void test_alignment_and_size(void **state)
{
	size_t sizes[] = { 1, 512, 4096, 4097, 65536, 1u << 20, (1u << 20) + 1, 16u << 20 };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *p = gw_buf_alloc(sizes[i]);

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 4096, 0);
		memset(p, 0xa5, sizes[i]); /* the whole length is usable (ASan checks) */
		gw_buf_free(p, sizes[i]);
	}
	assert_null(gw_buf_alloc(0));
	gw_buf_free(NULL, 10);
	gw_buf_cache_drain();
}

static void test_reuse_same_class(void **state)
{
	void *a, *b;

	(void)state;
	a = gw_buf_alloc(3000);
	gw_buf_free(a, 3000);
	b = gw_buf_alloc(4096); /* same 4 KiB class: the cached buffer comes back */
	assert_ptr_equal(a, b);
	gw_buf_free(b, 4096);
	b = gw_buf_alloc(8192); /* another class: not the same buffer */
	assert_ptr_not_equal(a, b);
	gw_buf_free(b, 8192);
	/* the class boundaries: 4097 and 8192 bytes are one class, 8193 the next */
	a = gw_buf_alloc(4097);
	gw_buf_free(a, 4097);
	b = gw_buf_alloc(8192);
	assert_ptr_equal(a, b);
	gw_buf_free(b, 8192);
	b = gw_buf_alloc(8193);
	assert_ptr_not_equal(a, b);
	gw_buf_free(b, 8193);
	a = gw_buf_alloc(16u << 20);
	gw_buf_free(a, 16u << 20);
	b = gw_buf_alloc((8u << 20) + 1);
	assert_ptr_equal(a, b);
	gw_buf_free(b, (8u << 20) + 1);
	gw_buf_cache_drain();
}

static void test_limit_and_oversize(void **state)
{
	enum { N = 40 };
	void *p[N];

	(void)state;
	/* more 1 MiB buffers than the class keeps: the extra ones are freed */
	for (int i = 0; i < N; i++)
		p[i] = gw_buf_alloc(1u << 20);
	for (int i = 0; i < N; i++)
		gw_buf_free(p[i], 1u << 20);
	/* beyond the largest class: plain aligned allocation */
	p[0] = gw_buf_alloc((16u << 20) + 1);
	assert_non_null(p[0]);
	assert_int_equal((uintptr_t)p[0] % 4096, 0);
	gw_buf_free(p[0], (16u << 20) + 1);
	gw_buf_cache_drain();
}

struct obj {
	uint64_t a[12];
};

static _Thread_local struct gw_obj_cache obj_cache = GW_OBJ_CACHE_INIT(sizeof(struct obj), 4);

static void test_obj_cache_reuse_and_limit(void **state)
{
	struct obj *p[6], *q;

	(void)state;
	for (int i = 0; i < 6; i++) {
		p[i] = gw_obj_get(&obj_cache);
		assert_non_null(p[i]);
		memset(p[i], 0x5a, sizeof(*p[i])); /* the whole object is usable (ASan checks) */
	}
	assert_int_equal(obj_cache.n, 0);
	/* four are kept, the other two go back to the allocator */
	for (int i = 0; i < 6; i++)
		gw_obj_put(&obj_cache, p[i]);
	assert_int_equal(obj_cache.n, 4);
	/* the last one kept comes back first, as the caller left it */
	q = gw_obj_get(&obj_cache);
	assert_ptr_equal(q, p[3]);
	assert_int_equal(obj_cache.n, 3);
	gw_obj_put(&obj_cache, q);
	gw_obj_put(&obj_cache, NULL);
	assert_int_equal(obj_cache.n, 4);
	gw_buf_cache_drain();
	assert_int_equal(obj_cache.n, 0);
	assert_null(obj_cache.head);
	/* a drained cache allocates again, and keeps again */
	q = gw_obj_get(&obj_cache);
	assert_non_null(q);
	gw_obj_put(&obj_cache, q);
	assert_int_equal(obj_cache.n, 1);
	gw_buf_cache_drain();
}

/* A thread that keeps objects and ends without draining: its exit frees them (LSan checks). */
static void *obj_thread(void *arg)
{
	struct obj *p = gw_obj_get(&obj_cache), *q = gw_obj_get(&obj_cache);

	(void)arg;
	gw_obj_put(&obj_cache, p);
	gw_obj_put(&obj_cache, q);
	return (void *)(uintptr_t)obj_cache.n;
}

static void test_obj_cache_thread_exit(void **state)
{
	pthread_t th;
	void *kept;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, obj_thread, NULL), 0);
	assert_int_equal(pthread_join(th, &kept), 0);
	assert_int_equal((uintptr_t)kept, 2);
	assert_int_equal(obj_cache.n, 0); /* this thread's cache is its own */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alignment_and_size),
		cmocka_unit_test(test_reuse_same_class),
		cmocka_unit_test(test_limit_and_oversize),
		cmocka_unit_test(test_obj_cache_reuse_and_limit),
		cmocka_unit_test(test_obj_cache_thread_exit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
