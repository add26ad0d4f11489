// LINK: api_logic
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's RFC 9457 problem documents (mgmt/api/problem.c): the four
 * members with their types, one line ending in a newline, a detail with
 * quotes, backslashes, control characters and non-ASCII bytes kept exactly
 * through JSON escaping, slashes not escaped; bytes that are not UTF-8 as
 * \xHH, so that the document is always valid UTF-8.
 */
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "problem.h"

static json_object *parse(const char *doc, size_t len)
{
	json_object *o;

	assert_int_equal(strlen(doc), len);
	assert_true(len > 1 && doc[len - 1] == '\n');
	assert_null(memchr(doc, '\n', len - 1));        /* one line */
	o = json_tokener_parse(doc);
	assert_non_null(o);
	assert_true(json_object_is_type(o, json_type_object));
	return o;
}

static const char *member(json_object *o, const char *k, json_type t)
{
	json_object *v;

	assert_true(json_object_object_get_ex(o, k, &v));
	assert_true(json_object_is_type(v, t));
	return json_object_get_string(v);
}

static void test_members(void **state)
{
	size_t len = 0;
	char *doc = api_problem_json(404, "Not Found", "no resource at /api/v2/x", &len);
	json_object *o;
	json_object *v;

	(void)state;
	assert_non_null(doc);
	o = parse(doc, len);
	assert_string_equal(member(o, "type", json_type_string), "about:blank");
	assert_string_equal(member(o, "title", json_type_string), "Not Found");
	assert_true(json_object_object_get_ex(o, "status", &v));
	assert_true(json_object_is_type(v, json_type_int));
	assert_int_equal(json_object_get_int(v), 404);
	assert_string_equal(member(o, "detail", json_type_string), "no resource at /api/v2/x");
	assert_int_equal(json_object_object_length(o), 4);
	assert_non_null(strstr(doc, "/api/v2/x"));      /* slashes as they are */
	json_object_put(o);
	free(doc);
}

static void test_escaping(void **state)
{
	const char *detail = "a \"quoted\" \\ path\twith\r\ncontrol \x01 and caf\xc3\xa9";
	size_t len = 0;
	char *doc = api_problem_json(400, "Bad Request", detail, &len);
	json_object *o;

	(void)state;
	assert_non_null(doc);
	o = parse(doc, len);
	assert_string_equal(member(o, "detail", json_type_string), detail);
	assert_null(strchr(doc, '\t'));
	assert_null(strchr(doc, '\x01'));
	json_object_put(o);
	free(doc);
}

/*
 * Bytes that are not UTF-8 (a percent-decoded path, a header) become \xHH:
 * the document is valid UTF-8 JSON; UTF-8 around them is kept.
 */
static void test_not_utf8(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "no resource at /api/v1/targets/\xff\xfe",
		  "no resource at /api/v1/targets/\\xff\\xfe" },
		{ "cut caf\xc3", "cut caf\\xc3" },                       /* a sequence cut short */
		{ "over \xc0\xaf long", "over \\xc0\\xaf long" },       /* overlong '/' */
		{ "half \xed\xa0\x80", "half \\xed\\xa0\\x80" },    /* a UTF-16 surrogate */
		{ "big \xf4\x90\x80\x80", "big \\xf4\\x90\\x80\\x80" },  /* past U+10FFFF */
		{ "ok caf\xc3\xa9 \xf0\x9f\x92\xbe\x80", "ok caf\xc3\xa9 \xf0\x9f\x92\xbe\\x80" },
	};
	json_tokener *tok = json_tokener_new();

	(void)state;
	assert_non_null(tok);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = 0;
		char *doc = api_problem_json_field(422, "Unprocessable Content", cases[i].in,
						   cases[i].in, &len);
		json_object *o;

		assert_non_null(doc);
		json_tokener_reset(tok);
		o = json_tokener_parse_ex(tok, doc, (int)len);
		assert_int_equal(json_tokener_get_error(tok), json_tokener_success);
		assert_non_null(o);
		assert_string_equal(member(o, "detail", json_type_string), cases[i].out);
		assert_string_equal(member(o, "field", json_type_string), cases[i].out);
		json_object_put(o);
		free(doc);
	}
	json_tokener_free(tok);
}

/* A 422 always carries field, "" for the body as a whole; another status only a named one. */
static void test_field(void **state)
{
	size_t len = 0;
	char *doc = api_problem_json_field(422, "Unprocessable Content",
					   "the body must be a JSON object", "", &len);
	json_object *o;

	(void)state;
	assert_non_null(doc);
	o = parse(doc, len);
	assert_string_equal(member(o, "field", json_type_string), "");
	json_object_put(o);
	free(doc);
	doc = api_problem_json_field(404, "Not Found", "no target x", "", &len);
	assert_non_null(doc);
	o = parse(doc, len);
	assert_false(json_object_object_get_ex(o, "field", NULL));
	json_object_put(o);
	free(doc);
	doc = api_problem_json_field(409, "Conflict", "lun: LUN 2 exists", "lun", &len);
	assert_non_null(doc);
	o = parse(doc, len);
	assert_string_equal(member(o, "field", json_type_string), "lun");
	json_object_put(o);
	free(doc);
}

static void test_null_strings(void **state)
{
	size_t len = 0;
	char *doc = api_problem_json(503, NULL, NULL, &len);
	json_object *o;

	(void)state;
	assert_non_null(doc);
	o = parse(doc, len);
	assert_string_equal(member(o, "title", json_type_string), "");
	assert_string_equal(member(o, "detail", json_type_string), "");
	json_object_put(o);
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_members),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_not_utf8),
		cmocka_unit_test(test_field),
		cmocka_unit_test(test_null_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
