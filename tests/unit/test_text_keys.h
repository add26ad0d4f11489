/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by test_login.c and test_login_text.c: the text keys of a request
 * ("key=value" strings given as arguments up to a NULL) joined into the
 * NUL-separated data segment of a Login or Text Request.
 */
#ifndef TEST_TEXT_KEYS_H
#define TEST_TEXT_KEYS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* The strings of ap up to a NULL, each with its NUL, into buf (size bytes): their length. */
static inline size_t keys_join(char *buf, size_t size, va_list ap)
{
	const char *s;
	size_t len = 0;

	while ((s = va_arg(ap, const char *)) != NULL) {
		size_t l = strlen(s) + 1;

		assert_true(len + l <= size);
		memcpy(buf + len, s, l);
		len += l;
	}
	return len;
}

#endif
