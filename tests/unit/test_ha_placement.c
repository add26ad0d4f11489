// LINK: ha_logic
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for ha/placement.c: the rules in their order, fewest moves,
 * failback, drains, balance of orphans, ties, determinism.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "doc.h"
#include "placement.h"

#define MAX_DGS 16

struct dgspec {
	int preferred;          /* node index or -1 */
	bool manual;            /* failback manual */
};

/* A document of nnodes nodes n0.. (one portal each) and the device groups dg0.. of spec. */
static struct ha_doc *make_doc(int nnodes, const struct dgspec *spec, int ndgs)
{
	struct ha_doc *e = NULL, *d = NULL;
	char cfg[8192], err[512] = "";
	size_t len;
	int rc;

	len = (size_t)snprintf(cfg, sizeof(cfg), "{\"nodes\":[");
	for (int k = 0; k < nnodes; k++)
		len += (size_t)snprintf(cfg + len, sizeof(cfg) - len,
					"%s{\"name\":\"n%d\",\"tpg_id\":%d,\"portals\":[{\"url\":"
					"\"tcp://10.0.0.%d\",\"rel_port_id\":%d}]}",
					k ? "," : "", k, k + 1, k + 1, k + 1);
	len += (size_t)snprintf(cfg + len, sizeof(cfg) - len, "],\"device_groups\":[");
	for (int g = 0; g < ndgs; g++) {
		char pref[64] = "";

		if (spec && spec[g].preferred >= 0)
			snprintf(pref, sizeof(pref), ",\"preferred_owner\":\"n%d\"", spec[g].preferred);
		len += (size_t)snprintf(cfg + len, sizeof(cfg) - len, "%s{\"name\":\"dg%d\"%s%s}",
					g ? "," : "", g, pref,
					spec && spec[g].manual ? ",\"failback\":\"manual\"" : "");
	}
	snprintf(cfg + len, sizeof(cfg) - len,
		 "],\"targets\":[{\"iqn\":\"iqn.2026-11.org.example:t\"}]}");

	assert_int_equal(ha_doc_empty(&e), 0);
	rc = ha_doc_with_config(e, cfg, &d, err, sizeof(err));
	if (rc)
		print_error("%s\n%s\n", err, cfg);
	assert_int_equal(rc, 0);
	ha_doc_free(e);
	return d;
}

static void all(bool *eligible, int n, bool v)
{
	for (int i = 0; i < n; i++)
		eligible[i] = v;
}

static void none_owned(int *owner, int n)
{
	for (int i = 0; i < n; i++)
		owner[i] = -1;
}

static void test_preferred(void **state)
{
	static const struct dgspec spec[] = { { 2, false }, { 0, false }, { 1, true }, { -1, false } };
	struct ha_doc *d = make_doc(3, spec, 4);
	bool el[3];
	int in[4], out[4];

	(void)state;
	all(el, 3, true);
	none_owned(in, 4);
	assert_int_equal(ha_place(d, el, in, out), 4);
	assert_int_equal(out[0], 2);
	assert_int_equal(out[1], 0);
	assert_int_equal(out[2], 1);    /* manual failback still takes a free preferred owner (rule 3) */
	/* the one without a preference: n0, n1, n2 own one each after rules 1-3; lowest index */
	assert_int_equal(out[3], 0);
	ha_doc_free(d);
}

static void test_deterministic(void **state)
{
	static const struct dgspec spec[] = { { -1, false }, { 1, true }, { -1, false }, { 0, false },
					      { -1, true }, { 2, false }, { -1, false } };
	struct ha_doc *d = make_doc(4, spec, 7);
	bool el[4] = { true, false, true, true };
	int in[7] = { 1, 1, -1, 3, 0, 1, 2 }, a[7], b[7], c[7];
	int ra, rb, rc;

	(void)state;
	ra = ha_place(d, el, in, a);
	rb = ha_place(d, el, in, b);
	assert_int_equal(ra, rb);
	assert_memory_equal(a, b, sizeof(a));
	/* the same array as input and output */
	memcpy(c, in, sizeof(c));
	rc = ha_place(d, el, c, c);
	assert_int_equal(rc, ra);
	assert_memory_equal(a, c, sizeof(a));
	/* and placing the result again moves nothing */
	assert_int_equal(ha_place(d, el, a, b), 0);
	assert_memory_equal(a, b, sizeof(a));
	/* nothing lands on the ineligible node */
	for (int g = 0; g < 7; g++)
		assert_int_not_equal(a[g], 1);
	ha_doc_free(d);
}

static void test_failback(void **state)
{
	/* dg0 prefers n0 with immediate failback, dg1 prefers n0 with manual failback */
	static const struct dgspec spec[] = { { 0, false }, { 0, true } };
	struct ha_doc *d = make_doc(3, spec, 2);
	bool el[3];
	int own[2], out[2];

	(void)state;
	all(el, 3, true);
	none_owned(own, 2);
	assert_int_equal(ha_place(d, el, own, out), 2);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 0);

	/* n0 fails: both go to the least loaded, one each */
	el[0] = false;
	memcpy(own, out, sizeof(own));
	assert_int_equal(ha_place(d, el, own, out), 2);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 2);

	/* n0 returns: the immediate one goes back, the manual one stays */
	el[0] = true;
	memcpy(own, out, sizeof(own));
	assert_int_equal(ha_place(d, el, own, out), 1);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 2);
	ha_doc_free(d);
}

static void test_fewest_moves(void **state)
{
	/* manual failback everywhere: a returning node takes nothing back */
	static const struct dgspec spec[] = { { 0, true }, { 1, true }, { 2, true }, { -1, true } };
	struct ha_doc *d = make_doc(3, spec, 4);
	bool el[3];
	int own[4] = { 1, 1, 2, 1 }, out[4];

	(void)state;
	all(el, 3, true);
	assert_int_equal(ha_place(d, el, own, out), 0);
	assert_memory_equal(own, out, sizeof(own));

	/* without preferences at all: current owners kept even when unbalanced */
	ha_doc_free(d);
	d = make_doc(3, NULL, 4);
	{
		int skew[4] = { 0, 0, 0, 0 };

		assert_int_equal(ha_place(d, el, skew, out), 0);
		assert_memory_equal(skew, out, sizeof(skew));
	}

	/* rule 2 before rule 3: a current owner is kept over an eligible preferred one (manual) */
	ha_doc_free(d);
	d = make_doc(3, spec, 4);
	{
		int cur[4] = { 2, 2, 2, 2 };

		assert_int_equal(ha_place(d, el, cur, out), 0);
		/* and rule 3 when the current owner is gone */
		el[2] = false;
		assert_int_equal(ha_place(d, el, cur, out), 4);
		assert_int_equal(out[0], 0);
		assert_int_equal(out[1], 1);
		assert_int_equal(out[2], 0);    /* n0 and n1 load 1: lowest index */
		assert_int_equal(out[3], 1);
	}
	ha_doc_free(d);
}

static void test_drain(void **state)
{
	struct ha_doc *d = make_doc(4, NULL, 8);
	/* n0: dg0-dg3, n1: dg4, n2: dg5 dg6, n3: dg7 */
	int own[8] = { 0, 0, 0, 0, 1, 2, 2, 3 }, out[8];
	bool el[4] = { false, true, true, true };       /* n0 drained */

	(void)state;
	assert_int_equal(ha_place(d, el, own, out), 4);
	/* the others did not move */
	assert_int_equal(out[4], 1);
	assert_int_equal(out[5], 2);
	assert_int_equal(out[6], 2);
	assert_int_equal(out[7], 3);
	/* loads n1 1, n2 2, n3 1: dg0 -> n1, dg1 -> n3, dg2 -> n1, dg3 -> n2 */
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 3);
	assert_int_equal(out[2], 1);
	assert_int_equal(out[3], 2);
	assert_int_equal(ha_place_load(d, out, 0), 0);
	assert_int_equal(ha_place_load(d, out, 1), 3);
	assert_int_equal(ha_place_load(d, out, 2), 3);
	assert_int_equal(ha_place_load(d, out, 3), 2);

	/* undrain, no preferences: nothing moves back */
	el[0] = true;
	memcpy(own, out, sizeof(own));
	assert_int_equal(ha_place(d, el, own, out), 0);
	ha_doc_free(d);
}

static void test_balance(void **state)
{
	struct ha_doc *d = make_doc(3, NULL, 6);
	bool el[3];
	int own[6], out[6];

	(void)state;
	all(el, 3, true);
	none_owned(own, 6);
	assert_int_equal(ha_place(d, el, own, out), 6);
	for (int n = 0; n < 3; n++)
		assert_int_equal(ha_place_load(d, out, n), 2);
	/* one by one in config order, ties to the lowest index */
	for (int g = 0; g < 6; g++)
		assert_int_equal(out[g], g % 3);

	/* a node lost: its two spread over the other two */
	el[1] = false;
	memcpy(own, out, sizeof(own));
	assert_int_equal(ha_place(d, el, own, out), 2);
	assert_int_equal(ha_place_load(d, out, 0), 3);
	assert_int_equal(ha_place_load(d, out, 2), 3);
	assert_int_equal(out[1], 0);
	assert_int_equal(out[4], 2);
	ha_doc_free(d);
}

static void test_settled_load_first(void **state)
{
	/* dg0 has no preference; dg1 prefers n0: dg1's load counts before dg0 is placed */
	static const struct dgspec spec[] = { { -1, false }, { 0, false } };
	struct ha_doc *d = make_doc(2, spec, 2);
	bool el[2] = { true, true };
	int own[2] = { -1, -1 }, out[2];

	(void)state;
	assert_int_equal(ha_place(d, el, own, out), 2);
	assert_int_equal(out[1], 0);
	assert_int_equal(out[0], 1);
	ha_doc_free(d);
}

static void test_ties_and_none(void **state)
{
	struct ha_doc *d = make_doc(3, NULL, 2);
	bool el[3];
	int own[2] = { -1, -1 }, out[2];

	(void)state;
	/* all equal: the lowest index */
	all(el, 3, true);
	own[1] = 0;
	assert_int_equal(ha_place(d, el, own, out), 1);
	assert_int_equal(out[0], 1);    /* n0 has dg1 already */
	assert_int_equal(out[1], 0);
	own[1] = -1;
	el[0] = false;
	assert_int_equal(ha_place(d, el, own, out), 2);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 2);

	/* no eligible node: none */
	all(el, 3, false);
	own[0] = 2;
	own[1] = -1;
	assert_int_equal(ha_place(d, el, own, out), 1);
	assert_int_equal(out[0], -1);
	assert_int_equal(out[1], -1);

	/* owners out of range count as none */
	all(el, 3, true);
	own[0] = 7;
	own[1] = -5;
	assert_int_equal(ha_place(d, el, own, out), 2);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 1);
	ha_doc_free(d);
}

static void test_args(void **state)
{
	struct ha_doc *d = make_doc(2, NULL, 1), *e;
	bool el[2] = { true, true };
	int own[1] = { -1 }, out[1];

	(void)state;
	assert_int_equal(ha_place(NULL, el, own, out), -EINVAL);
	assert_int_equal(ha_place(d, NULL, own, out), -EINVAL);
	assert_int_equal(ha_place(d, el, NULL, out), -EINVAL);
	assert_int_equal(ha_place(d, el, own, NULL), -EINVAL);
	/* the empty document: nothing to place */
	assert_int_equal(ha_doc_empty(&e), 0);
	assert_int_equal(ha_place(e, NULL, NULL, NULL), 0);
	assert_int_equal(ha_place_load(e, NULL, 0), 0);
	ha_doc_free(e);
	ha_doc_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preferred),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_failback),
		cmocka_unit_test(test_fewest_moves),
		cmocka_unit_test(test_drain),
		cmocka_unit_test(test_balance),
		cmocka_unit_test(test_settled_load_first),
		cmocka_unit_test(test_ties_and_none),
		cmocka_unit_test(test_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
