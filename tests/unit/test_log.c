// LINK: isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The log's lines (common/log.c): what a peer sent cannot start a line of
 * its own or hide the rest from journalctl. Control characters and bytes
 * that are not strict UTF-8 are written as \xNN; valid UTF-8 stays as it is;
 * an escape is never cut in half at the end of the buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"

static void check(const char *in, const char *want)
{
	char out[256];

	assert_int_equal(gw_log_escape(in, out, sizeof(out)), strlen(want));
	assert_string_equal(out, want);
}

static void test_escape(void **state)
{
	(void)state;
	check("iqn.1994-05.com.redhat:client1", "iqn.1994-05.com.redhat:client1");
	/* a newline that would forge a line of its own */
	check("iqn.x\n2026-11-28T00:00:00.000Z err    gateway: forged",
	      "iqn.x\\x0a2026-11-28T00:00:00.000Z err    gateway: forged");
	check("a\rb\tc\x01" "d\x7f", "a\\x0db\\x09c\\x01d\\x7f");
	/* not UTF-8: each byte */
	check("x\xff\xfe", "x\\xff\\xfe");
	check("\xc0\xaf", "\\xc0\\xaf");                 /* overlong '/' */
	check("\xed\xa0\x80", "\\xed\\xa0\\x80");        /* a surrogate */
	check("\xe2\x82", "\\xe2\\x82");                 /* cut short */
	/* valid UTF-8 stays; C1 controls (U+0085) do not */
	check("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xbe", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xbe");
	check("a\xc2\x85" "b", "a\\xc2\\x85b");
}

static void test_escape_cut(void **state)
{
	char out[8];

	(void)state;
	/* room for 7 bytes: "ab" and one escape (4), not half of the next */
	assert_int_equal(gw_log_escape("ab\n\n\n", out, sizeof(out)), 6);
	assert_string_equal(out, "ab\\x0a");
	/* a UTF-8 sequence is not cut either */
	assert_int_equal(gw_log_escape("abcde\xe2\x82\xac", out, sizeof(out)), 5);
	assert_string_equal(out, "abcde");
}

/* gw_log itself: one line, whatever the message holds */
static void test_one_line(void **state)
{
	char tmpl[] = "/tmp/test_log.XXXXXX", buf[2048];
	int fd = mkstemp(tmpl), saved;
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	unlink(tmpl);
	fflush(stderr);
	saved = dup(2);
	assert_int_equal(dup2(fd, 2), 2);
	gw_log(GW_LOG_WARN, "login", "login of %s failed", "iqn.x\nforged line\n\xff");
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "warn   login: login of iqn.x\\x0aforged line\\x0a\\xff failed\n"));
	assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_escape_cut),
		cmocka_unit_test(test_one_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
