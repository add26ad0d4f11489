// LINK: gw_scsi gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SET TARGET PORT GROUPS under the external ALUA policy: the command runs on
 * a real reactor thread and is held there while the request handler (a mock
 * of the control socket) records it; it completes GOOD once the device
 * group's states match (scsi_alua_set_states, not before: a state set that
 * does not match keeps it waiting), HARDWARE ERROR 67h/0Ah when refused,
 * NOT READY 04h/0Ah when nobody listens, the owner says "not now" or the
 * timeout passes; an abort releases it after the current batch of events,
 * never inside scsi_cmd_abort(), and late answers then find nothing. A
 * request already in effect is GOOD at once; the local policy applies it
 * as before; past SCSI_ALUA_HELD_MAX held commands the next gets BUSY.
 * Waits are for completions only, never for a time.
 */

#include "test_scsi_harness.h"
#include "test_scsi_reactor.h"

#define MB (1024ull * 1024)

/* What the mock policy owner saw. */
static struct {
	int rc;                         /* what the handler returns */
	unsigned int n;
	struct scsi_alua_request last;
	void *arg;
} owner;

static int owner_handler(const struct scsi_alua_request *req, void *arg)
{
	pthread_mutex_lock(&mu);
	owner.n++;
	owner.last = *req;
	owner.arg = arg;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return owner.rc;
}

struct rctx {
	struct tctx x;
	struct scsi_itn c;              /* through test_port2 (group 2) */
	struct reactor *r;
	pthread_t thread;
};

/* STPG of (tpg, state) pairs through nexus itn, submitted on the reactor. */
static void stpg_submit(struct rctx *rc, struct rcmd *t, const struct scsi_itn *itn,
			const uint16_t *tpg, const uint8_t *state, size_t n)
{
	uint32_t len = (uint32_t)(4 + 4 * n);

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < n; i++) {
		t->pl[4 + 4 * i] = state[i];
		t->pl[4 + 4 * i + 2] = (uint8_t)(tpg[i] >> 8);
		t->pl[4 + 4 * i + 3] = (uint8_t)tpg[i];
	}
	t->c.itn = itn;
	t->c.lu = rc->x.lu;
	t->c.cdb[0] = 0xa4;
	t->c.cdb[1] = 0x0a;
	t->c.cdb[9] = (uint8_t)len;
	t->c.cdb_len = 12;
	t->c.data_out = true;
	t->c.buf = t->pl;
	t->c.buf_len = len;
	t->c.done = rcmd_done;
	t->c.attr = SCSI_ATTR_SIMPLE;
	assert_int_equal(reactor_send_msg(rc->r, submit_msg, &t->c), 0);
}

static void stpg1(struct rctx *rc, struct rcmd *t, uint16_t tpg, uint8_t state)
{
	stpg_submit(rc, t, &rc->c, &tpg, &state, 1);
}

/* Waits until the handler has seen n requests; returns the last. */
static struct scsi_alua_request wait_requests(unsigned int n)
{
	struct scsi_alua_request r;

	pthread_mutex_lock(&mu);
	while (owner.n < n)
		pthread_cond_wait(&cv, &mu);
	r = owner.last;
	pthread_mutex_unlock(&mu);
	return r;
}

static void assert_status(struct rcmd *t, uint8_t status, uint8_t key, uint16_t asc)
{
	assert_int_equal(t->c.status, status);
	if (status != SCSI_STATUS_CHECK_CONDITION)
		return;
	assert_int_equal(t->c.sense[2] & 0x0f, key);
	assert_int_equal(t->c.sense[12] << 8 | t->c.sense[13], asc);
}

static int setup(void **state)
{
	struct rctx *rc = calloc(1, sizeof(*rc));
	struct scsi_lu_params p = default_params();
	struct tcmd t;
	uint8_t tur[16] = { 0 };

	assert_non_null(rc);
	scsi_alua_reset();
	tctx_setup(&rc->x, 16 * MB, 512, &p);   /* a and b through test_port1 (group 1) */
	itn_init(&rc->c, 3, "iqn.2026-01.org.example:host-c", "400001370002", &test_port2,
		 rc->x.luns, 1);
	scsi_lu_itn_add(rc->x.lu, &rc->c);
	/* group 1 owns the default device group, group 2 stands by */
	assert_int_equal(scsi_alua_dg_configure(SCSI_ALUA_DG_DEFAULT, 1, SCSI_ALUA_STANDBY), 0);
	/* the fresh nexuses' unit attentions out of the way */
	for (int i = 0; i < 8; i++) {
		const struct scsi_itn *n[3] = { &rc->x.a, &rc->x.b, &rc->c };

		for (int k = 0; k < 3; k++) {
			tcmd_init(&t, n[k], rc->x.lu, tur, 6, NULL, 0);
			scsi_cmd_submit(&t.c);
		}
	}
	memset(&owner, 0, sizeof(owner));
	scsi_alua_set_request_handler(owner_handler, rc);
	scsi_alua_set_policy(SCSI_ALUA_POLICY_EXTERNAL, 600000);
	assert_int_equal(reactor_create(0, &rc->r), 0);
	assert_int_equal(pthread_create(&rc->thread, NULL, reactor_thread, rc->r), 0);
	*state = rc;
	return 0;
}

static int teardown(void **state)
{
	struct rctx *rc = *state;

	reactor_stop(rc->r);
	pthread_join(rc->thread, NULL);
	reactor_destroy(rc->r);
	assert_int_equal(scsi_alua_requests_held(), 0);
	scsi_alua_set_request_handler(NULL, NULL);
	scsi_alua_set_policy(SCSI_ALUA_POLICY_LOCAL, 0);
	scsi_lu_itn_remove(rc->x.lu, &rc->c);
	tctx_teardown(&rc->x);
	scsi_alua_reset();
	free(rc);
	return 0;
}

/* Pops the unit attentions of nexus itn with TEST UNIT READY; how many were asc. */
static int count_ua(struct rctx *rc, const struct scsi_itn *itn, uint16_t asc)
{
	uint8_t tur[16] = { 0 };
	struct tcmd t;
	int n = 0;

	for (int i = 0; i < 16; i++) {
		tcmd_init(&t, itn, rc->x.lu, tur, 6, NULL, 0);
		scsi_cmd_submit(&t.c);
		if (t.c.status != SCSI_STATUS_CHECK_CONDITION ||
		    (t.c.sense[2] & 0x0f) != SCSI_SK_UNIT_ATTENTION)
			break;
		n += (t.c.sense[12] << 8 | t.c.sense[13]) == asc;
	}
	return n;
}

static void test_match_completes(void **state)
{
	struct rctx *rc = *state;
	struct scsi_alua_update ano = { 2, SCSI_ALUA_ACTIVE_NON_OPTIMIZED, false };
	struct scsi_alua_update ao[2] = { { 1, SCSI_ALUA_ACTIVE_NON_OPTIMIZED, false },
					  { 2, SCSI_ALUA_ACTIVE_OPTIMIZED, false } };
	struct scsi_alua_request r;
	struct rcmd t;
	uint8_t st, c[16] = { 0xa3, 0x0a }, buf[64];
	struct tcmd q;

	stpg1(rc, &t, 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	r = wait_requests(1);
	assert_ptr_equal(owner.arg, rc);
	assert_true(r.id >= 1);
	assert_string_equal(r.dg, SCSI_ALUA_DG_DEFAULT);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.u[0].tpg_id, 2);
	assert_int_equal(r.u[0].state, SCSI_ALUA_ACTIVE_OPTIMIZED);
	assert_string_equal(r.initiator_port, "iqn.2026-01.org.example:host-c,i,0x400001370002");
	assert_int_equal(r.rel_port_id, 2);
	assert_int_equal(r.tpg_id, 2);
	assert_int_equal(r.timeout_ms, 600000);
	assert_int_equal(scsi_alua_requests_held(), 1);
	/* nothing changed locally */
	assert_int_equal(scsi_alua_get_state(NULL, 2, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_STANDBY);

	/* states that do not match keep it waiting */
	assert_int_equal(scsi_alua_set_states(NULL, &ano, 1), 0);
	reactor_sync(rc->r);
	assert_int_equal(ndone(&t), 0);
	assert_int_equal(scsi_alua_requests_held(), 1);
	assert_int_equal(count_ua(rc, &rc->c, 0x2a06), 1);
	assert_int_equal(count_ua(rc, &rc->x.b, 0x2a06), 1);

	/* the owner's states arrive: GOOD */
	assert_int_equal(scsi_alua_set_states(NULL, ao, 2), 0);
	wait_done(&t);
	assert_status(&t, SCSI_STATUS_GOOD, 0, 0);
	assert_int_equal(scsi_alua_requests_held(), 0);
	assert_int_equal(scsi_alua_request_done(r.id, 0), -ENOENT);     /* finished */

	/* RTPG: group 2 Active/Optimized, altered by SET TARGET PORT GROUPS */
	c[9] = sizeof(buf);
	for (int i = 0; i < 4; i++) {   /* past a's unit attention */
		tcmd_init(&q, &rc->x.a, rc->x.lu, c, 12, buf, sizeof(buf));
		q.c.data_in = true;
		scsi_cmd_submit(&q.c);
		if (q.c.status == SCSI_STATUS_GOOD)
			break;
	}
	assert_int_equal(q.c.status, SCSI_STATUS_GOOD);
	{
		const uint8_t *g2 = &buf[4 + 8 + 4 * buf[4 + 7]];      /* after group 1 */

		assert_int_equal(be16(&g2[2]), 2);
		assert_int_equal(g2[0] & 0x0f, SCSI_ALUA_ACTIVE_OPTIMIZED);
		assert_int_equal(g2[5], 0x01);
	}
	/* the change that satisfied it spares the STPG's nexus its unit attention */
	assert_int_equal(count_ua(rc, &rc->c, 0x2a06), 0);
	assert_int_equal(count_ua(rc, &rc->x.b, 0x2a06), 1);
}

static void test_refused_and_not_now(void **state)
{
	struct rctx *rc = *state;
	struct scsi_alua_request r;
	struct rcmd t;
	uint8_t st;

	/* refused */
	stpg1(rc, &t, 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	r = wait_requests(1);
	assert_int_equal(scsi_alua_request_done(r.id, 1), -EINVAL);
	assert_int_equal(scsi_alua_request_done(r.id, -EPERM), 0);
	{
		/* decided: a second answer does not count (finished by now or not) */
		int rc2 = scsi_alua_request_done(r.id, 0);

		assert_true(rc2 == -EALREADY || rc2 == -ENOENT);
	}
	wait_done(&t);
	assert_status(&t, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_HARDWARE_ERROR, 0x670a);
	assert_int_equal(scsi_alua_get_state(NULL, 2, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_STANDBY);

	/* "done" with states other than asked: refused too */
	stpg1(rc, &t, 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	r = wait_requests(2);
	assert_int_equal(scsi_alua_request_done(r.id, 0), 0);
	wait_done(&t);
	assert_status(&t, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_HARDWARE_ERROR, 0x670a);

	/* not now: NOT READY, transition (retryable) */
	stpg1(rc, &t, 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	r = wait_requests(3);
	assert_int_equal(scsi_alua_request_done(r.id, -EAGAIN), 0);
	wait_done(&t);
	assert_status(&t, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_NOT_READY, 0x040a);
	assert_int_equal(scsi_alua_request_done(r.id, 0), -ENOENT);
	assert_int_equal(scsi_alua_request_done(0, 0), -EINVAL);
}

static void test_timeout(void **state)
{
	struct rctx *rc = *state;
	struct scsi_alua_request r;
	struct rcmd t;

	scsi_alua_set_policy(SCSI_ALUA_POLICY_EXTERNAL, 100);
	stpg1(rc, &t, 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	r = wait_requests(1);
	assert_int_equal(r.timeout_ms, 100);
	wait_done(&t);  /* nobody answers */
	assert_status(&t, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_NOT_READY, 0x040a);
	assert_int_equal(scsi_alua_requests_held(), 0);
	/* a late answer finds nothing */
	assert_int_equal(scsi_alua_request_done(r.id, 0), -ENOENT);
}

static void test_nobody_listening(void **state)
{
	struct rctx *rc = *state;
	struct rcmd t;

	owner.rc = -ENOTCONN;   /* the control socket has no subscriber */
	stpg1(rc, &t, 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	wait_done(&t);
	assert_status(&t, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_NOT_READY, 0x040a);
	assert_int_equal(owner.n, 1);
	scsi_alua_set_request_handler(NULL, NULL);
	stpg1(rc, &t, 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	wait_done(&t);
	assert_status(&t, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_NOT_READY, 0x040a);
	assert_int_equal(owner.n, 1);
	assert_int_equal(scsi_alua_requests_held(), 0);
}

struct abort_check {
	struct rcmd *t;
	int ndone_after;
};

static void abort_msg(void *arg)
{
	struct abort_check *a = arg;

	scsi_cmd_abort(&a->t->c);
	a->ndone_after = a->t->ndone;   /* this thread is the one that completes it */
}

static void test_abort_while_held(void **state)
{
	struct rctx *rc = *state;
	struct scsi_alua_update ao = { 2, SCSI_ALUA_ACTIVE_OPTIMIZED, false };
	struct abort_check a = { 0 };
	struct scsi_alua_request r;
	struct rcmd t, other;

	stpg1(rc, &t, 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	r = wait_requests(1);
	/* an abort for a command that is not held changes nothing */
	memset(&other, 0, sizeof(other));
	a.t = &other;
	assert_int_equal(reactor_send_msg(rc->r, abort_msg, &a), 0);
	reactor_sync(rc->r);
	assert_int_equal(scsi_alua_requests_held(), 1);

	a.t = &t;
	a.ndone_after = -1;
	assert_int_equal(reactor_send_msg(rc->r, abort_msg, &a), 0);
	wait_done(&t);
	assert_int_equal(a.ndone_after, 0);     /* not from inside scsi_cmd_abort */
	assert_int_equal(t.c.status, SCSI_STATUS_TASK_ABORTED);
	assert_int_equal(scsi_alua_requests_held(), 0);
	/* late answers and matching states find nothing to complete */
	assert_int_equal(scsi_alua_request_done(r.id, 0), -ENOENT);
	assert_int_equal(scsi_alua_set_states(NULL, &ao, 1), 0);
	reactor_sync(rc->r);
	assert_int_equal(ndone(&t), 1);

	/* decided (states set) and aborted in the same batch: completed once */
	ao.state = SCSI_ALUA_STANDBY;
	assert_int_equal(scsi_alua_set_states(NULL, &ao, 1), 0);
	assert_int_equal(count_ua(rc, &rc->c, 0x2a06), 1);
	stpg1(rc, &t, 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	r = wait_requests(2);
	ao.state = SCSI_ALUA_ACTIVE_OPTIMIZED;
	assert_int_equal(scsi_alua_set_states(NULL, &ao, 1), 0);        /* message on its way */
	a.ndone_after = -1;
	assert_int_equal(reactor_send_msg(rc->r, abort_msg, &a), 0);
	wait_done(&t);
	reactor_sync(rc->r);
	assert_int_equal(ndone(&t), 1);
	assert_int_equal(scsi_alua_requests_held(), 0);
}

static void test_in_effect_and_local(void **state)
{
	struct rctx *rc = *state;
	const uint16_t tpg[2] = { 1, 2 };
	const uint8_t st2[2] = { SCSI_ALUA_ACTIVE_OPTIMIZED, SCSI_ALUA_STANDBY };
	struct rcmd t;
	uint8_t st;

	/* already so: GOOD, nobody asked */
	stpg_submit(rc, &t, &rc->c, tpg, st2, 2);
	wait_done(&t);
	assert_status(&t, SCSI_STATUS_GOOD, 0, 0);
	assert_int_equal(owner.n, 0);

	/* invalid requests are refused before anyone is asked */
	stpg1(rc, &t, 9, SCSI_ALUA_ACTIVE_OPTIMIZED);
	wait_done(&t);
	assert_status(&t, SCSI_STATUS_CHECK_CONDITION, SCSI_SK_ILLEGAL_REQUEST, 0x2600);
	assert_int_equal(owner.n, 0);

	/* the local policy applies it here, as before */
	scsi_alua_set_policy(SCSI_ALUA_POLICY_LOCAL, 0);
	stpg1(rc, &t, 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	wait_done(&t);
	assert_status(&t, SCSI_STATUS_GOOD, 0, 0);
	assert_int_equal(owner.n, 0);
	assert_int_equal(scsi_alua_get_state(NULL, 2, &st, NULL), 0);
	assert_int_equal(st, SCSI_ALUA_ACTIVE_OPTIMIZED);
}

static void test_busy_past_the_limit(void **state)
{
	struct rctx *rc = *state;
	struct scsi_alua_update ao = { 2, SCSI_ALUA_ACTIVE_OPTIMIZED, false };
	struct rcmd *t = calloc(SCSI_ALUA_HELD_MAX + 1, sizeof(*t));

	assert_non_null(t);
	for (unsigned int i = 0; i < SCSI_ALUA_HELD_MAX; i++)
		stpg1(rc, &t[i], 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	wait_requests(SCSI_ALUA_HELD_MAX);
	assert_int_equal(scsi_alua_requests_held(), SCSI_ALUA_HELD_MAX);
	stpg1(rc, &t[SCSI_ALUA_HELD_MAX], 2, SCSI_ALUA_ACTIVE_OPTIMIZED);
	wait_done(&t[SCSI_ALUA_HELD_MAX]);
	assert_int_equal(t[SCSI_ALUA_HELD_MAX].c.status, SCSI_STATUS_BUSY);
	/* one state change completes them all */
	assert_int_equal(scsi_alua_set_states(NULL, &ao, 1), 0);
	for (unsigned int i = 0; i < SCSI_ALUA_HELD_MAX; i++) {
		wait_done(&t[i]);
		assert_status(&t[i], SCSI_STATUS_GOOD, 0, 0);
	}
	assert_int_equal(scsi_alua_requests_held(), 0);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_match_completes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_and_not_now, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nobody_listening, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_while_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_in_effect_and_local, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_past_the_limit, setup, teardown),
	};

	gw_log_set_level(GW_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
