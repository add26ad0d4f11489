// LINK: ha_logic
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the agent pushes a generation to its isergwd (ha_doc_push_kind, used
 * by ha/gwlink.c; docs/ha.md, "Pushing to isergwd"): a generation that
 * changes only where device groups are served (owners, a drain, moves, the
 * live set) goes as the ALUA map alone, with the keys to fence at the
 * backend when the live set changed, to every node but those whose own
 * liveness changed; a LUN change as that LUN; anything else, or a generation
 * that does not follow the one isergwd holds, as the whole configuration.
 * And the promise the ALUA map alone relies on: every node's rendered
 * configuration of such a generation is the one before but for the device
 * groups' owner_tpg_id (and the keys to fence, which the map carries).
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
#include <json-c/json.h>

#include "config/config.h"
#include "doc.h"

#define NODE(name, tpg, url, rel) \
	"{\"name\":\"" name "\",\"tpg_id\":" #tpg ",\"portals\":[{\"url\":\"" url "\"," \
	"\"rel_port_id\":" #rel "}]}"
#define CONFIG(gateway) \
	"{\"nodes\":[" NODE("n1", 1, "tcp://10.0.0.1:3260", 1) "," \
	NODE("n2", 2, "tcp://10.0.0.2:3260", 2) "," NODE("n3", 3, "tcp://10.0.0.3:3260", 3) "]," \
	"\"device_groups\":[{\"name\":\"dg1\",\"preferred_owner\":\"n1\"}," \
	"{\"name\":\"dg2\",\"preferred_owner\":\"n2\",\"non_owner_state\":\"standby\"}]," \
	"\"targets\":[{\"iqn\":\"iqn.2026-11.org.example:push\",\"luns\":[" \
	"{\"lun\":0,\"path\":\"/dev/a\",\"device_group\":\"dg1\"}," \
	"{\"lun\":1,\"path\":\"/dev/b\",\"device_group\":\"dg2\"}]}]" gateway "}"

/* Generation 1 of CONFIG(gateway): every node live, dg1 on n1, dg2 on n2. */
static struct ha_doc *base_doc(const char *config)
{
	const int owner[2] = { 0, 1 }, moving[2] = { -1, -1 };
	const bool live[3] = { true, true, true };
	struct ha_doc *e, *c, *d;
	char err[256];

	assert_int_equal(ha_doc_empty(&e), 0);
	assert_int_equal(ha_doc_with_config(e, config, &c, err, sizeof(err)), 0);
	assert_int_equal(ha_doc_with_runtime(c, owner, moving, live, &d), 0);
	ha_doc_free(e);
	ha_doc_free(c);
	return d;
}

/* Node k's rendering of d, parsed. */
static json_object *render_parsed(const struct ha_doc *d, int k)
{
	char err[256];
	char *s = ha_doc_render_node(d, k, err, sizeof(err));
	json_object *o;

	assert_non_null(s);
	o = json_tokener_parse(s);
	free(s);
	assert_non_null(o);
	return o;
}

/* Node k's rendering of d, its device groups' owner_tpg_id left out (and the keys to fence). */
static json_object *render_sans(const struct ha_doc *d, int k, bool fence)
{
	json_object *o = render_parsed(d, k), *dgs;

	if (fence)
		json_object_object_del(o, "backend_pr_fence");
	assert_true(json_object_object_get_ex(o, "device_groups", &dgs));
	for (size_t i = 0; i < json_object_array_length(dgs); i++)
		json_object_object_del(json_object_array_get_idx(dgs, i), "owner_tpg_id");
	return o;
}

/* Node k renders b as a but for the owners (and with fence, the keys to fence). */
static bool node_renders_same(const struct ha_doc *a, const struct ha_doc *b, int k, bool fence)
{
	json_object *x = render_sans(a, k, fence), *y = render_sans(b, k, fence);
	bool same = json_object_equal(x, y) != 0;

	json_object_put(x);
	json_object_put(y);
	return same;
}

/* Every node renders b as a but for the owners. */
static bool renders_same_but_owners(const struct ha_doc *a, const struct ha_doc *b)
{
	bool same = true;

	for (int k = 0; k < (int)a->nnodes; k++)
		same &= node_renders_same(a, b, k, false);
	return same;
}

/* Node k's rendered backend_pr_fence of d is keys (n of them), as ha_doc_fence_keys says. */
static void assert_fence_rendered(const struct ha_doc *d, int k, const uint64_t *keys, size_t n)
{
	uint64_t got[HA_NODES_MAX];
	char want[24];
	json_object *o = render_parsed(d, k), *a;

	assert_int_equal(ha_doc_fence_keys(d, (size_t)k, got), n);
	assert_true(json_object_object_get_ex(o, "backend_pr_fence", &a));
	assert_int_equal(json_object_array_length(a), n);
	for (size_t i = 0; i < n; i++) {
		assert_true(got[i] == keys[i]);
		snprintf(want, sizeof(want), "0x%016llx", (unsigned long long)keys[i]);
		assert_string_equal(json_object_get_string(json_object_array_get_idx(a, i)), want);
	}
	json_object_put(o);
}

static void test_owners_alone(void **state)
{
	const int owner[2] = { 1, 1 };
	struct ha_doc *a = base_doc(CONFIG("")), *b;

	(void)state;
	assert_int_equal(ha_doc_with_owners(a, owner, &b), 0);
	assert_int_equal(ha_doc_push_kind(b, 1, a->generation), HA_PUSH_PLACEMENT);
	assert_true(renders_same_but_owners(a, b));
	/* the owner is what the ALUA map carries for the configuration */
	assert_int_equal(ha_doc_owner_tpg(b, 0), 2);
	/* isergwd holds nothing known, or an older generation: the whole configuration */
	assert_int_equal(ha_doc_push_kind(b, 1, 0), HA_PUSH_CONFIG);
	assert_int_equal(ha_doc_push_kind(b, 1, a->generation - 1), HA_PUSH_CONFIG);
	assert_int_equal(ha_doc_push_kind(b, 1, b->generation), HA_PUSH_CONFIG);
	ha_doc_free(a);
	ha_doc_free(b);
}

static void test_drain_and_move(void **state)
{
	const int owner[2] = { 1, 1 }, moving[2] = { 0, -1 };
	const bool live[3] = { true, true, true };
	struct ha_doc *a = base_doc(CONFIG("")), *b, *c;

	(void)state;
	/* drain n1, then the leader's placement moves dg1 off it */
	assert_int_equal(ha_doc_with_drain(a, 0, true, &b), 0);
	assert_int_equal(ha_doc_push_kind(b, 1, a->generation), HA_PUSH_PLACEMENT);
	assert_true(renders_same_but_owners(a, b));
	assert_int_equal(ha_doc_with_runtime(b, owner, moving, live, &c), 0);
	assert_int_equal(ha_doc_push_kind(c, 1, b->generation), HA_PUSH_PLACEMENT);
	assert_true(renders_same_but_owners(b, c));
	/* two generations at once: the whole configuration */
	assert_int_equal(ha_doc_push_kind(c, 1, a->generation), HA_PUSH_CONFIG);
	ha_doc_free(a);
	ha_doc_free(b);
	ha_doc_free(c);
}

static void test_live_set(void **state)
{
	const int owner[2] = { 1, 1 }, back[2] = { 0, 1 }, moving[2] = { -1, -1 };
	const bool live[3] = { false, true, true }, all[3] = { true, true, true };
	const uint64_t n1_key = gw_backend_pr_key(1);
	struct ha_doc *a = base_doc(CONFIG("")), *b, *c;

	(void)state;
	/*
	 * n1 lost: its groups move and the others' configurations list its key
	 * to fence. The survivors take that as the map with the key (isergwd
	 * fences before it sets a state); n1 itself, its own key gone, the
	 * whole configuration.
	 */
	assert_int_equal(ha_doc_with_runtime(a, owner, moving, live, &b), 0);
	assert_int_equal(ha_doc_push_kind(b, 0, a->generation), HA_PUSH_CONFIG);
	for (int k = 1; k < 3; k++) {
		assert_int_equal(ha_doc_push_kind(b, k, a->generation), HA_PUSH_PLACEMENT_FENCE);
		assert_false(node_renders_same(a, b, k, false));
		assert_true(node_renders_same(a, b, k, true));
		assert_fence_rendered(b, k, &n1_key, 1);
		assert_fence_rendered(a, k, NULL, 0);
	}
	assert_int_equal(ha_doc_fence_keys(b, 0, (uint64_t[HA_NODES_MAX]){ 0 }), 0);
	assert_int_equal(ha_doc_push_kind(b, 1, 0), HA_PUSH_CONFIG);
	assert_int_equal(ha_doc_push_kind(b, 1, a->generation - 1), HA_PUSH_CONFIG);
	/* n1 back (live again, its groups back): the others' lists lose its key */
	assert_int_equal(ha_doc_with_runtime(b, back, moving, all, &c), 0);
	assert_int_equal(ha_doc_push_kind(c, 0, b->generation), HA_PUSH_CONFIG);
	assert_int_equal(ha_doc_push_kind(c, 2, b->generation), HA_PUSH_PLACEMENT_FENCE);
	assert_true(node_renders_same(b, c, 2, true));
	assert_fence_rendered(c, 2, NULL, 0);
	/* the same live set: no key changes, the map alone */
	ha_doc_free(a);
	a = c;
	assert_int_equal(ha_doc_with_runtime(a, owner, moving, all, &c), 0);
	assert_int_equal(ha_doc_push_kind(c, 0, a->generation), HA_PUSH_PLACEMENT);
	ha_doc_free(a);
	ha_doc_free(b);
	ha_doc_free(c);
	/* without fencing keys the live set is not rendered: placement alone, on every node */
	a = base_doc(CONFIG(",\"gateway\":{\"backend_fencing\":\"none\"}"));
	assert_int_equal(ha_doc_with_runtime(a, owner, moving, live, &b), 0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(ha_doc_push_kind(b, k, a->generation), HA_PUSH_PLACEMENT);
	assert_true(renders_same_but_owners(a, b));
	assert_int_equal(ha_doc_fence_keys(b, 1, (uint64_t[HA_NODES_MAX]){ 0 }), 0);
	ha_doc_free(a);
	ha_doc_free(b);
}

static void test_other_changes(void **state)
{
	struct ha_doc *a = base_doc(CONFIG("")), *b;
	char err[256];

	(void)state;
	assert_int_equal(ha_doc_with_lun(a, "iqn.2026-11.org.example:push", 2,
					 "{\"path\":\"/dev/c\",\"device_group\":\"dg1\"}", &b, err,
					 sizeof(err)), 0);
	assert_int_equal(ha_doc_push_kind(b, 1, a->generation), HA_PUSH_LUN);
	ha_doc_free(b);
	assert_int_equal(ha_doc_with_config(a, CONFIG(",\"gateway\":{\"log_level\":\"debug\"}"), &b,
					    err, sizeof(err)), 0);
	assert_int_equal(ha_doc_push_kind(b, 1, a->generation), HA_PUSH_CONFIG);
	ha_doc_free(b);
	assert_int_equal(ha_doc_with_token(a, "ops", "admin", "sha256:00112233445566778899aabbccddeeff:"
					   "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
					   1, &b, err, sizeof(err)), 0);
	assert_int_equal(ha_doc_push_kind(b, 1, a->generation), HA_PUSH_CONFIG);
	ha_doc_free(b);
	ha_doc_free(a);
}

/* A document received whole (a peer's sync) says nothing of what it changed. */
static void test_parsed_whole(void **state)
{
	const int owner[2] = { 1, 1 };
	struct ha_doc *a = base_doc(CONFIG("")), *b, *p;
	char err[256];

	(void)state;
	assert_int_equal(ha_doc_with_owners(a, owner, &b), 0);
	assert_int_equal(ha_doc_parse(b->text, &p, err, sizeof(err)), 0);
	assert_int_equal(p->generation, b->generation);
	assert_int_equal(ha_doc_push_kind(p, 1, a->generation), HA_PUSH_CONFIG);
	ha_doc_free(a);
	ha_doc_free(b);
	ha_doc_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owners_alone),
		cmocka_unit_test(test_drain_and_move),
		cmocka_unit_test(test_live_set),
		cmocka_unit_test(test_other_changes),
		cmocka_unit_test(test_parsed_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
