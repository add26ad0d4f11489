// LINK: api_logic isergw_proto PkgConfig::JSONC
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's cache of rendered configuration reads (mgmt/api/cache.c): a
 * hit returns a copy of the answer kept for the route from that document
 * (generation and digest); another document named drops every entry (a newer
 * generation, an older one, the same generation with another digest: a
 * cluster made anew), an answer rendered from a document no longer named is
 * not kept; the entry
 * and byte bounds hold, the oldest entry going first; and what the
 * configuration reads render from a configuration holding CHAP secrets and
 * an iscsi:// password, the only thing ever kept, holds none of them.
 */
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <unistd.h>

#include "cache.h"
#include "rest.h"

/* the digest of generation gen in these tests */
static const char *dg(uint64_t gen)
{
	static char d[32];

	snprintf(d, sizeof(d), "d%llu", (unsigned long long)gen);
	return d;
}

static void put_s(struct api_cache *c, uint64_t gen, const char *key, const char *body)
{
	api_cache_put(c, gen, dg(gen), key, body, strlen(body));
}

/* the body kept for key at gen, or NULL (to free) */
static char *get_s(struct api_cache *c, uint64_t gen, const char *key)
{
	char *b = NULL;
	size_t len = 0;

	if (!api_cache_get(c, gen, dg(gen), key, &b, &len))
		return NULL;
	assert_int_equal(len, strlen(b));
	return b;
}

static void expect(struct api_cache *c, uint64_t gen, const char *key, const char *want)
{
	char *b = get_s(c, gen, key);

	if (!want) {
		assert_null(b);
		return;
	}
	assert_non_null(b);
	assert_string_equal(b, want);
	free(b);
}

static void test_hit_and_copy(void **state)
{
	struct api_cache c;
	char *b;

	(void)state;
	api_cache_init(&c);
	expect(&c, 7, "targets", NULL); /* the agent names document 7 */
	put_s(&c, 7, "targets", "{\"items\":[]}\n");
	expect(&c, 7, "targets", "{\"items\":[]}\n");
	expect(&c, 7, "config", NULL);
	/* a copy: the caller's to change and free */
	b = get_s(&c, 7, "targets");
	assert_non_null(b);
	b[0] = 'X';
	free(b);
	expect(&c, 7, "targets", "{\"items\":[]}\n");
	/* the same key again: replaced */
	put_s(&c, 7, "targets", "two");
	expect(&c, 7, "targets", "two");
	/* generation 0 (none) is never kept nor found */
	put_s(&c, 0, "x", "y");
	expect(&c, 0, "x", NULL);
	assert_int_equal(c.hits, 4);
	api_cache_destroy(&c);
}

static void test_invalidation(void **state)
{
	struct api_cache c;
	char *b = NULL;
	size_t len = 0;

	(void)state;
	api_cache_init(&c);
	/* a put before any get names the document: not kept */
	put_s(&c, 5, "targets", "at 5");
	expect(&c, 5, "targets", NULL);
	put_s(&c, 5, "targets", "at 5");
	put_s(&c, 5, "config", "config at 5");
	expect(&c, 5, "targets", "at 5");
	/* the cluster moved on: nothing of generation 5 is answered any more */
	expect(&c, 6, "targets", NULL);
	assert_int_equal(c.invalidations, 1);
	assert_int_equal(c.bytes, 0);
	/* rendered from 5 but put once 6 was named: not kept */
	put_s(&c, 5, "targets", "late");
	expect(&c, 6, "targets", NULL);
	put_s(&c, 6, "targets", "at 6");
	put_s(&c, 6, "config", "config at 6");
	expect(&c, 6, "targets", "at 6");
	/* a cluster made anew: the same generation with another digest */
	assert_false(api_cache_get(&c, 6, "other", "targets", &b, &len));
	assert_null(b);
	assert_int_equal(c.bytes, 0);
	expect(&c, 6, "config", NULL);
	/* and generations going back: another document too */
	put_s(&c, 6, "targets", "at 6 again");
	expect(&c, 6, "targets", "at 6 again");
	expect(&c, 2, "targets", NULL);
	expect(&c, 6, "targets", NULL);
	api_cache_clear(&c);
	expect(&c, 6, "targets", NULL);
	assert_int_equal(c.bytes, 0);
	api_cache_destroy(&c);
}

static void test_bounds(void **state)
{
	struct api_cache c;
	char key[32];
	char *big;

	(void)state;
	api_cache_init(&c);
	expect(&c, 1, "k0", NULL);
	for (unsigned int i = 0; i < API_CACHE_ENTRIES + 3; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		put_s(&c, 1, key, key);
	}
	/* the three oldest went, the others stay */
	expect(&c, 1, "k0", NULL);
	expect(&c, 1, "k2", NULL);
	expect(&c, 1, "k3", "k3");
	snprintf(key, sizeof(key), "k%u", API_CACHE_ENTRIES + 2);
	expect(&c, 1, key, key);
	/* bytes: an answer above the budget is not kept; one that fills it evicts */
	big = calloc(1, API_CACHE_BYTES + 1);
	assert_non_null(big);
	api_cache_put(&c, 1, dg(1), "big", big, API_CACHE_BYTES + 1);
	expect(&c, 1, "big", NULL);
	api_cache_put(&c, 1, dg(1), "big", big, API_CACHE_BYTES - 2);
	assert_true(c.bytes <= API_CACHE_BYTES);
	expect(&c, 1, "k3", NULL);
	{
		char *b = NULL;
		size_t len = 0;

		assert_true(api_cache_get(&c, 1, dg(1), "big", &b, &len));
		assert_int_equal(len, API_CACHE_BYTES - 2);
		free(b);
	}
	free(big);
	/* a key too long is not kept */
	big = malloc(API_CACHE_KEY_MAX + 1);
	assert_non_null(big);
	memset(big, 'a', API_CACHE_KEY_MAX);
	big[API_CACHE_KEY_MAX] = '\0';
	put_s(&c, 1, big, "v");
	expect(&c, 1, big, NULL);
	free(big);
	api_cache_destroy(&c);
}

/* ------------------------------------------------------------ secrets */

#define SECRETS "{\"discovery_chap\":{\"user\":\"d\",\"secret\":\"dsecret\"},\"targets\":[" \
	"{\"iqn\":\"iqn.a\",\"chap\":{\"user\":\"u\",\"secret\":\"usecret\"}," \
	"\"mutual_chap\":{\"user\":\"m\",\"secret\":\"msecret\"}," \
	"\"acls\":[{\"initiator\":\"i1\",\"chap\":{\"user\":\"iu\",\"secret\":\"isecret\"}," \
	"\"mutual_chap\":{\"user\":\"mu\",\"secret\":\"imsecret\"}}]," \
	"\"luns\":[{\"lun\":3,\"path\":\"iscsi://bu%bsecret@10.0.0.1:3260/iqn.be/1\"}]}]}"

static void keep(struct api_cache *c, const char *key, json_object *o)
{
	const char *s;

	assert_non_null(o);
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	api_cache_put(c, 3, dg(3), key, s, strlen(s));
	json_object_put(o);
}

static void test_no_secrets_kept(void **state)
{
	static const char *const secrets[] = {
		"dsecret", "usecret", "msecret", "isecret", "imsecret", "bsecret",
	};
	json_object *cfg = json_tokener_parse(SECRETS);
	struct api_cache c;
	size_t n = 0;

	(void)state;
	assert_non_null(cfg);
	api_cache_init(&c);
	expect(&c, 3, "config", NULL); /* the agent names document 3 */
	/* every configuration read isergw-api keeps (v1.c, config_read) */
	keep(&c, "config", rest_redact(cfg));
	keep(&c, "targets", rest_targets(cfg));
	keep(&c, "target", rest_target(cfg, "iqn.a"));
	keep(&c, "luns", rest_luns(cfg, "iqn.a"));
	keep(&c, "lun", rest_lun(cfg, "iqn.a", 3));
	keep(&c, "acls", rest_acls(cfg, "iqn.a"));
	keep(&c, "acl", rest_acl(cfg, "iqn.a", "i1"));
	keep(&c, "discovery-chap", rest_discovery_chap(cfg));
	keep(&c, "port-groups", rest_port_groups(cfg));
	for (size_t i = 0; i < API_CACHE_ENTRIES; i++) {
		if (!c.e[i].key)
			continue;
		n++;
		for (size_t k = 0; k < sizeof(secrets) / sizeof(secrets[0]); k++)
			if (strstr(c.e[i].body, secrets[k]))
				fail_msg("the cache keeps %s in %s: %s", secrets[k], c.e[i].key,
					 c.e[i].body);
		assert_null(strstr(c.e[i].body, "\"secret\""));
	}
	assert_int_equal(n, 9);
	api_cache_destroy(&c);
	json_object_put(cfg);
}

/* --metrics-cache-ms: a scrape close to the last render gets its text; later ones render. */
static void test_scrape_reuse(void **state)
{
	struct api_scrape s;
	char *body = NULL;
	size_t len = 0;

	(void)state;
	api_scrape_init(&s);
	/* nothing rendered yet: the caller renders (and is the one that does) */
	assert_false(api_scrape_get(&s, 1000, 250, &body, &len));
	assert_true(s.busy);
	api_scrape_put(&s, 1000, 250, "isergw_up 1\n", 12, 5);
	assert_false(s.busy);
	/* 249 ms later: the same text, a copy */
	assert_true(api_scrape_get(&s, 1249, 250, &body, &len));
	assert_int_equal(len, 12);
	assert_memory_equal(body, "isergw_up 1\n", 12);
	assert_ptr_not_equal(body, s.body);
	free(body);
	/* 250 ms later: rendered again */
	assert_false(api_scrape_get(&s, 1250, 250, &body, &len));
	/* a failed render keeps the old text but lets the next caller try */
	api_scrape_put(&s, 1250, 250, NULL, 0, 5);
	assert_false(s.busy);
	assert_false(api_scrape_get(&s, 1251, 250, &body, &len));
	api_scrape_put(&s, 1300, 250, "isergw_up 0\n", 12, 5);
	assert_true(api_scrape_get(&s, 1301, 250, &body, &len));
	assert_memory_equal(body, "isergw_up 0\n", 12);
	free(body);
	assert_int_equal(s.hits, 2);
	assert_int_equal(s.renders, 2);
	/* a render that took 100 ms is kept 10 times as long: 1 s, not 250 ms */
	assert_false(api_scrape_get(&s, 5000, 250, &body, &len));
	api_scrape_put(&s, 5100, 250, "slow 1\n", 7, 100);
	assert_true(api_scrape_get(&s, 6099, 250, &body, &len));
	free(body);
	assert_false(api_scrape_get(&s, 6100, 250, &body, &len));
	api_scrape_put(&s, 6100, 250, NULL, 0, 0);
	/* 0: off, every scrape renders, nothing kept */
	assert_false(api_scrape_get(&s, 1302, 0, &body, &len));
	assert_false(s.busy);
	api_scrape_destroy(&s);
}

struct waiter {
	struct api_scrape *s;
	bool hit;
	char *body;
	size_t len;
};

static void *wait_scrape(void *arg)
{
	struct waiter *w = arg;

	w->hit = api_scrape_get(w->s, 2000, 250, &w->body, &w->len);
	return NULL;
}

/* Scrapes that come while one renders wait for it and get its text. */
static void test_scrape_single_flight(void **state)
{
	struct api_scrape s;
	struct waiter w[4];
	pthread_t t[4];
	char *body;
	size_t len;

	(void)state;
	api_scrape_init(&s);
	assert_false(api_scrape_get(&s, 2000, 250, &body, &len));
	for (int i = 0; i < 4; i++) {
		w[i] = (struct waiter){ .s = &s };
		assert_int_equal(pthread_create(&t[i], NULL, wait_scrape, &w[i]), 0);
	}
	usleep(50000);          /* they wait: nothing rendered yet */
	for (int i = 0; i < 4; i++)
		assert_null(w[i].body);
	api_scrape_put(&s, 2000, 250, "x 1\n", 4, 1);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_true(w[i].hit);
		assert_int_equal(w[i].len, 4);
		free(w[i].body);
	}
	assert_int_equal(s.renders, 1);
	api_scrape_destroy(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_and_copy),
		cmocka_unit_test(test_invalidation),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_no_secrets_kept),
		cmocka_unit_test(test_scrape_reuse),
		cmocka_unit_test(test_scrape_single_flight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
