// LINK: isergw_gw
// SOURCES: ../common/fake_dm.c ../common/fake_gw.c ../common/fake_ini.c
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the session table of core/session.c and the command
 * window a session gives (core/conn.c): the real core on two memory LUs
 * with only the datamover (tests/common/fake_dm.c) and the gateway around
 * the core (tests/common/fake_gw.c, one reactor polled by the test) faked.
 *
 * Session reinstatement (RFC 7143 6.3.5: a login with the ISID of a live
 * session drops the old one, its tasks in the backstore included, and the
 * new one works); two I_T nexuses side by side; a connection added to a
 * live session (TSIH given) refused as MaxConnections=1 says, to an unknown
 * one as "session does not exist"; a Logout removing the session (also with
 * a task in the backstore, never answered, freed when it ends); MaxCmdSN
 * held back by the commands in the backstore and advanced when they
 * complete, never moving back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_ini.h"

static size_t nsessions(struct fake_gw *g)
{
	struct list_head *pos;
	size_t n = 0;

	list_for_each(pos, &g->gw->sessions)
		n++;
	return n;
}

static void read10(struct fake_ini *ini, uint32_t itt, uint32_t lba, uint16_t n)
{
	struct iscsi_bhs bhs;
	uint8_t cdb[16];

	fake_ini_rw10(cdb, false, lba, n);
	fake_ini_scsi_cmd(&bhs, itt, fake_ini_cmd_sn(ini, false), false, 0, cdb, 10,
			  ISCSI_FLAG_FINAL | ISCSI_CMD_READ, (uint32_t)n * 512u, 0);
	fake_ini_send(ini, &bhs, NULL, 0);
}

static bool pings(struct fake_ini *ini)
{
	uint32_t exp, max;

	if (fake_ini_closed(ini))
		return false;
	fake_ini_window(ini, &exp, &max);
	return true;
}

/*
 * A second login with the same ISID reinstates the session: the old
 * connection is dropped (its READ in the backstore is never answered, and
 * everything of it is freed once the backstore lets it go), one session is
 * left, under a new TSIH, and it works.
 */
static void test_reinstatement(void **state)
{
	struct fake_ini a, b;
	struct fake_gw *g;
	uint16_t tsih_a;

	(void)state;
	g = fake_ini_gw();
	fake_ini_login(&a, NULL);
	tsih_a = a.c->sess->tsih;
	assert_int_equal(nsessions(g), 1);
	fake_gw_hold_io(g, true);
	read10(&a, 0x10, 0, 8);
	read10(&a, 0x11, 8, 8);
	assert_int_equal(a.c->ntasks, 2);

	fake_ini_login(&b, NULL);
	assert_true(fake_ini_closed(&a));
	assert_int_equal(a.nrx, 0);
	assert_int_equal(nsessions(g), 1);
	assert_int_equal(atomic_load(&g->gw->stats.sessions), 1);
	assert_int_not_equal(b.c->sess->tsih, tsih_a);
	assert_true(pings(&b));

	fake_gw_hold_io(g, false);
	fake_gw_poll(g);
	assert_int_equal(a.nrx, 0);             /* the old nexus's READs: never answered */
	assert_int_equal(atomic_load(&g->gw->stats.connections), 1);
	read10(&b, 0x12, 0, 1);
	assert_true(fake_ini_find(&b, 0, ISCSI_OP_DATA_IN, 0x12) >= 0 ||
		    fake_ini_find(&b, 0, ISCSI_OP_SCSI_RSP, 0x12) >= 0);
	fake_ini_logout_free(&a);
	fake_ini_logout_free(&b);
	assert_int_equal(nsessions(g), 0);
	assert_int_equal(atomic_load(&g->gw->stats.sessions), 0);
	assert_int_equal(atomic_load(&g->gw->stats.connections), 0);
}

/* Another ISID is another nexus: both sessions live, apart; one ending leaves the other. */
static void test_two_nexuses(void **state)
{
	struct fake_ini_opts o2 = { .isid_no = 2 };
	struct fake_ini a, b;
	struct fake_gw *g;

	(void)state;
	g = fake_ini_gw();
	fake_ini_login(&a, NULL);
	fake_ini_login(&b, &o2);
	assert_false(fake_ini_closed(&a));
	assert_int_equal(nsessions(g), 2);
	assert_int_not_equal(a.c->sess->tsih, b.c->sess->tsih);
	assert_int_not_equal(a.c->sess->itn.id, b.c->sess->itn.id);
	fake_ini_logout_free(&a);
	assert_int_equal(nsessions(g), 1);
	assert_true(pings(&b));
	fake_ini_logout_free(&b);
	assert_int_equal(nsessions(g), 0);
}

/*
 * A login naming a TSIH adds a connection to that session: refused (one
 * connection per session) when it lives, "session does not exist" when it
 * does not; the live session is not disturbed.
 */
static void test_connection_add(void **state)
{
	struct fake_ini a, b;
	struct fake_ini_opts o = { 0 };
	struct fake_gw *g;

	(void)state;
	g = fake_ini_gw();
	fake_ini_login(&a, NULL);
	o.tsih = a.c->sess->tsih;
	assert_int_equal(fake_ini_login_try(&b, &o),
			 ISCSI_LOGIN_STATUS_INIT_ERR << 8 | ISCSI_LOGIN_DETAIL_TOO_MANY_CONNS);
	assert_true(fake_ini_closed(&b));
	fake_ini_logout_free(&b);
	o.tsih = (uint16_t)(a.c->sess->tsih + 100);
	assert_int_equal(fake_ini_login_try(&b, &o),
			 ISCSI_LOGIN_STATUS_INIT_ERR << 8 | ISCSI_LOGIN_DETAIL_NO_SESSION);
	fake_ini_logout_free(&b);
	assert_int_equal(nsessions(g), 1);
	assert_true(pings(&a));
	fake_ini_logout_free(&a);
}

static void logout(struct fake_ini *ini, uint32_t itt)
{
	struct iscsi_logout_req req;

	memset(&req, 0, sizeof(req));
	req.opcode = ISCSI_OP_LOGOUT_REQ | ISCSI_OP_IMMEDIATE;
	req.flags = 0x80 | ISCSI_LOGOUT_CLOSE_SESSION;
	req.itt = htobe32(itt);
	req.cid = htobe16(1);
	req.cmd_sn = htobe32(fake_ini_cmd_sn(ini, true));
	fake_ini_send(ini, (struct iscsi_bhs *)&req, NULL, 0);
}

/* A Logout (close the session): answered, then the connection and the session are gone. */
static void test_logout(void **state)
{
	struct fake_ini a;
	struct fake_gw *g;
	int i;

	(void)state;
	g = fake_ini_gw();
	fake_ini_login(&a, NULL);
	assert_int_equal(atomic_load(&g->gw->stats.sessions), 1);
	logout(&a, 0x20);
	i = fake_ini_find(&a, 0, ISCSI_OP_LOGOUT_RSP, 0x20);
	assert_true(i >= 0);
	assert_int_equal(((struct iscsi_logout_rsp *)&a.rx[i].bhs)->response,
			 ISCSI_LOGOUT_RSP_SUCCESS);
	assert_true(fake_ini_closed(&a));
	assert_int_equal(nsessions(g), 0);
	assert_int_equal(atomic_load(&g->gw->stats.sessions), 0);
	assert_int_equal(atomic_load(&g->gw->stats.connections), 0);
	fake_ini_logout_free(&a);
}

/*
 * A Logout with a READ in the backstore: answered at once, the connection
 * and the session end, the READ is never answered, and once the backstore
 * lets it go everything is freed.
 */
static void test_logout_with_task(void **state)
{
	struct fake_ini a;
	struct fake_gw *g;

	(void)state;
	g = fake_ini_gw();
	fake_ini_login(&a, NULL);
	fake_gw_hold_io(g, true);
	read10(&a, 0x28, 0, 8);
	logout(&a, 0x29);
	assert_true(fake_ini_find(&a, 0, ISCSI_OP_LOGOUT_RSP, 0x29) >= 0);
	assert_true(fake_ini_closed(&a));
	assert_int_equal(nsessions(g), 0);
	/* the connection waits for its task */
	assert_int_equal(atomic_load(&g->gw->stats.connections), 1);
	fake_gw_hold_io(g, false);
	fake_gw_poll(g);
	assert_int_equal(atomic_load(&g->gw->stats.connections), 0);
	assert_int_equal(fake_ini_find(&a, 0, ISCSI_OP_DATA_IN, 0x28), -1);
	assert_int_equal(fake_ini_find(&a, 0, ISCSI_OP_SCSI_RSP, 0x28), -1);
	fake_ini_logout_free(&a);
}

/*
 * Queue depth 4: MaxCmdSN = ExpCmdSN + 3 with nothing running. Two READs
 * in the backstore use two slots: the window's end stays where it was
 * (never moves back), a command past it is ignored; when they complete
 * MaxCmdSN advances by two and that CmdSN is taken.
 */
static void test_max_cmd_sn(void **state)
{
	struct fake_ini_opts o = { .queue_depth = 4 };
	uint32_t exp, max, max0;
	struct fake_ini a;
	struct fake_gw *g;

	(void)state;
	g = fake_ini_gw();
	fake_ini_login(&a, &o);
	fake_ini_window(&a, &exp, &max);
	assert_int_equal(exp, a.cmd_sn);
	assert_int_equal(max, exp + 3);
	max0 = max;
	fake_gw_hold_io(g, true);
	read10(&a, 0x30, 0, 1);
	read10(&a, 0x31, 1, 1);
	fake_ini_window(&a, &exp, &max);
	assert_int_equal(exp, a.cmd_sn);
	assert_int_equal(max, max0);
	/* past MaxCmdSN: ignored for good */
	read10(&a, 0x32, 2, 1);                 /* CmdSN exp: in the window */
	{
		struct iscsi_bhs bhs;
		uint8_t cdb[16];

		fake_ini_rw10(cdb, false, 3, 1);
		fake_ini_scsi_cmd(&bhs, 0x33, max0 + 1, false, 0, cdb, 10,
				  ISCSI_FLAG_FINAL | ISCSI_CMD_READ, 512, 0);
		fake_ini_send(&a, &bhs, NULL, 0);
	}
	assert_int_equal(a.c->ntasks, 3);
	fake_gw_hold_io(g, false);
	fake_gw_poll(g);
	fake_ini_window(&a, &exp, &max);
	assert_int_equal(exp, a.cmd_sn);
	assert_int_equal(max, exp + 3);
	assert_true(max > max0);
	assert_int_equal(a.c->ntasks, 0);
	assert_int_equal(fake_ini_find(&a, 0, ISCSI_OP_DATA_IN, 0x33), -1);
	assert_int_equal(fake_ini_find(&a, 0, ISCSI_OP_SCSI_RSP, 0x33), -1);
	/* max0 + 1, the CmdSN ignored before, is in the window now */
	read10(&a, 0x34, 3, 1);
	assert_int_equal(a.cmd_sn, max0 + 1);
	read10(&a, 0x35, 4, 1);
	assert_true(fake_ini_find(&a, 0, ISCSI_OP_DATA_IN, 0x34) >= 0);
	assert_true(fake_ini_find(&a, 0, ISCSI_OP_DATA_IN, 0x35) >= 0);
	fake_ini_logout_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reinstatement),
		cmocka_unit_test(test_two_nexuses),
		cmocka_unit_test(test_connection_add),
		cmocka_unit_test(test_logout),
		cmocka_unit_test(test_logout_with_task),
		cmocka_unit_test(test_max_cmd_sn),
	};

	fake_ini_log_level();
	return cmocka_run_group_tests(tests, NULL, fake_ini_group_teardown);
}
