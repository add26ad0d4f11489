// LINK: ha_logic
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the agent pushes a generation to its isergwd (ha_doc_push_kind, used
 * by ha/gwlink.c; docs/ha.md, "Pushing to isergwd"): a generation that
 * changes only where device groups are served (owners, a drain, moves, the
 * live set when no fencing key changes) goes as the ALUA map alone; a LUN
 * change as that LUN; anything else, or a generation that does not follow
 * the one isergwd holds, as the whole configuration. And the promise the
 * ALUA map alone relies on: every node's rendered configuration of such a
 * generation is the one before but for the device groups' owner_tpg_id.
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

/* Node k's rendering of d, its device groups' owner_tpg_id left out. */
static json_object *render_sans_owners(const struct ha_doc *d, int k)
{
	char err[256];
	char *s = ha_doc_render_node(d, k, err, sizeof(err));
	json_object *o, *dgs;

	assert_non_null(s);
	o = json_tokener_parse(s);
	free(s);
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "device_groups", &dgs));
	for (size_t i = 0; i < json_object_array_length(dgs); i++)
		json_object_object_del(json_object_array_get_idx(dgs, i), "owner_tpg_id");
	return o;
}

/* Every node renders b as a but for the owners. */
static bool renders_same_but_owners(const struct ha_doc *a, const struct ha_doc *b)
{
	bool same = true;

	for (int k = 0; k < (int)a->nnodes; k++) {
		json_object *x = render_sans_owners(a, k), *y = render_sans_owners(b, k);

		same &= json_object_equal(x, y) != 0;
		json_object_put(x);
		json_object_put(y);
	}
	return same;
}

static void test_owners_alone(void **state)
{
	const int owner[2] = { 1, 1 };
	struct ha_doc *a = base_doc(CONFIG("")), *b;

	(void)state;
	assert_int_equal(ha_doc_with_owners(a, owner, &b), 0);
	assert_int_equal(ha_doc_push_kind(b, a->generation), HA_PUSH_PLACEMENT);
	assert_true(renders_same_but_owners(a, b));
	/* the owner is what the ALUA map carries for the configuration */
	assert_int_equal(ha_doc_owner_tpg(b, 0), 2);
	/* isergwd holds nothing known, or an older generation: the whole configuration */
	assert_int_equal(ha_doc_push_kind(b, 0), HA_PUSH_CONFIG);
	assert_int_equal(ha_doc_push_kind(b, a->generation - 1), HA_PUSH_CONFIG);
	assert_int_equal(ha_doc_push_kind(b, b->generation), HA_PUSH_CONFIG);
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
	assert_int_equal(ha_doc_push_kind(b, a->generation), HA_PUSH_PLACEMENT);
	assert_true(renders_same_but_owners(a, b));
	assert_int_equal(ha_doc_with_runtime(b, owner, moving, live, &c), 0);
	assert_int_equal(ha_doc_push_kind(c, b->generation), HA_PUSH_PLACEMENT);
	assert_true(renders_same_but_owners(b, c));
	/* two generations at once: the whole configuration */
	assert_int_equal(ha_doc_push_kind(c, a->generation), HA_PUSH_CONFIG);
	ha_doc_free(a);
	ha_doc_free(b);
	ha_doc_free(c);
}

static void test_live_set(void **state)
{
	const int owner[2] = { 1, 1 }, moving[2] = { -1, -1 };
	const bool live[3] = { false, true, true };
	struct ha_doc *a = base_doc(CONFIG("")), *b;

	(void)state;
	/* n1 lost: the others' fencing keys change, which is configuration */
	assert_int_equal(ha_doc_with_runtime(a, owner, moving, live, &b), 0);
	assert_int_equal(ha_doc_push_kind(b, a->generation), HA_PUSH_CONFIG);
	assert_false(renders_same_but_owners(a, b));
	ha_doc_free(a);
	ha_doc_free(b);
	/* without fencing keys the live set is not rendered: placement alone */
	a = base_doc(CONFIG(",\"gateway\":{\"backend_fencing\":\"none\"}"));
	assert_int_equal(ha_doc_with_runtime(a, owner, moving, live, &b), 0);
	assert_int_equal(ha_doc_push_kind(b, a->generation), HA_PUSH_PLACEMENT);
	assert_true(renders_same_but_owners(a, b));
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
	assert_int_equal(ha_doc_push_kind(b, a->generation), HA_PUSH_LUN);
	ha_doc_free(b);
	assert_int_equal(ha_doc_with_config(a, CONFIG(",\"gateway\":{\"log_level\":\"debug\"}"), &b,
					    err, sizeof(err)), 0);
	assert_int_equal(ha_doc_push_kind(b, a->generation), HA_PUSH_CONFIG);
	ha_doc_free(b);
	assert_int_equal(ha_doc_with_token(a, "ops", "admin", "sha256:00112233445566778899aabbccddeeff:"
					   "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
					   1, &b, err, sizeof(err)), 0);
	assert_int_equal(ha_doc_push_kind(b, a->generation), HA_PUSH_CONFIG);
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
	assert_int_equal(ha_doc_push_kind(p, a->generation), HA_PUSH_CONFIG);
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
