// LINK: isergw_config isergw_common
/* Per-thread buffer cache: alignment, reuse within a class, limits, oversize. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alignment_and_size),
		cmocka_unit_test(test_reuse_same_class),
		cmocka_unit_test(test_limit_and_oversize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
