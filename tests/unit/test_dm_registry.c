// LINK: gw_core
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The datamover registry of the core (core/dm_registry.c): a datamover
 * registers its ops table for its transport (unset entries filled with
 * stubs, a second one for the same transport refused), the core finds it by
 * transport, and the thread and global exits reach every registered
 * datamover through its ops (the core names no datamover). Linked without
 * dm/: only the fakes here are registered.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/iscsi.h"

static int thread_exits, global_exits;

static void fake_thread_exit(void)
{
	thread_exits++;
}

static void fake_global_exit(void)
{
	global_exits++;
}

static struct gw_dm_ops fake_tcp = {
	.name = "fake-tcp", .transport = GW_TRANSPORT_TCP,
	.thread_exit = fake_thread_exit, .global_exit = fake_global_exit,
};
static struct gw_dm_ops fake_tcp2 = { .name = "fake-tcp2", .transport = GW_TRANSPORT_TCP };
static struct gw_dm_ops fake_iser = { .name = "fake-iser", .transport = GW_TRANSPORT_ISER };
static struct gw_dm_ops bad = { .name = "bad", .transport = (enum gw_transport)7 };

static void register_and_find(void **state)
{
	(void)state;
	assert_null(gw_dm_for_transport(GW_TRANSPORT_TCP));
	assert_null(gw_dm_for_transport(GW_TRANSPORT_ISER));
	assert_int_equal(gw_dm_register(&fake_tcp), 0);
	assert_ptr_equal(gw_dm_for_transport(GW_TRANSPORT_TCP), &fake_tcp);
	assert_null(gw_dm_for_transport(GW_TRANSPORT_ISER));
	assert_int_equal(gw_dm_register(&fake_tcp2), -EEXIST);
	assert_ptr_equal(gw_dm_for_transport(GW_TRANSPORT_TCP), &fake_tcp);
	assert_int_equal(gw_dm_register(&bad), -EINVAL);
	assert_null(gw_dm_for_transport((enum gw_transport)7));

	/* unset entries are stubs: the core never tests for NULL */
	assert_non_null(fake_tcp.send_control);
	assert_int_equal(fake_tcp.send_control(NULL, NULL), -EOPNOTSUPP);
	assert_int_equal(fake_tcp.listen(NULL), -EOPNOTSUPP);
	assert_non_null(fake_tcp.buf_get);
}

static void exits_go_through_the_ops(void **state)
{
	(void)state;
	/* iser registered without exits of its own: they are no-ops */
	assert_int_equal(gw_dm_register(&fake_iser), 0);
	assert_non_null(fake_iser.thread_exit);
	assert_non_null(fake_iser.global_exit);
	gw_dm_thread_exit();
	gw_dm_thread_exit();
	gw_dm_global_exit();
	assert_int_equal(thread_exits, 2);
	assert_int_equal(global_exits, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(register_and_find),
		cmocka_unit_test(exits_go_through_the_ops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
