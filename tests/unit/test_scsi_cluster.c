// LINK: gw_scsi gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The LU state carried by the cluster (scsi_cluster.c, params.cluster_state):
 * the test plays the HA agent. A PERSISTENT RESERVE OUT runs on a real
 * reactor thread and is held there while its proposal (the new state,
 * computed on the node's copy, and its events) sits with the mock handler;
 * the node's copy is unchanged until the "cluster" applies the version
 * (scsi_cluster_apply); the command completes once answered (GOOD),
 * runs again on the newer state when another change came first (-ESTALE),
 * and ends NOT READY 04h/07h when nobody listens or the cluster refuses.
 * Applied versions from other nodes bring their registrations, unit
 * attentions and aborts; old versions, unknown LUs and malformed states
 * change nothing. Waits are for completions only, never for a time.
 */
#include <errno.h>

#include "test_scsi_harness.h"
#include "test_scsi_reactor.h"
#include "scsi/scsi_shared.h"

#define MB (1024ull * 1024)

/* What the mock agent saw. */
static struct {
	int rc;                         /* what the handler returns */
	unsigned int n;
	uint64_t id, base;
	bool wait;
	struct shs_state st;
	size_t nev;
	struct shs_event ev[SCSI_LU_EVENTS_MAX];
} ag;

static int agent_handler(const struct scsi_lu_proposal *p, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	ag.n++;
	ag.id = p->id;
	ag.base = p->base_version;
	ag.wait = p->wait;
	ag.st = *p->st;
	ag.nev = p->nev;
	memcpy(ag.ev, p->ev, p->nev * sizeof(ag.ev[0]));
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return ag.rc;
}

/* What the core's abort handler was asked. */
static struct {
	int n;
	bool every;
} ab;

static void rec_abort(struct scsi_lu *lu, const char *iport, uint16_t rel, void *arg)
{
	(void)lu;
	(void)rel;
	(void)arg;
	ab.n++;
	ab.every = iport == NULL;
}

static uint8_t g_naa[16];

struct rctx {
	struct tctx x;
	struct reactor *r;
	pthread_t thread;
};

/* PERSISTENT RESERVE OUT through nexus a, on the reactor. */
static void prout_submit(struct rctx *rc, struct rcmd *t, uint8_t sa, uint8_t type, uint64_t rk,
			 uint64_t sark)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < 8; i++) {
		t->pl[i] = (uint8_t)(rk >> (56 - 8 * i));
		t->pl[8 + i] = (uint8_t)(sark >> (56 - 8 * i));
	}
	t->c.itn = &rc->x.a;
	t->c.lu = rc->x.lu;
	t->c.cdb[0] = 0x5f;
	t->c.cdb[1] = sa;
	t->c.cdb[2] = type;
	t->c.cdb[8] = 24;
	t->c.cdb_len = 10;
	t->c.data_out = true;
	t->c.buf = t->pl;
	t->c.buf_len = 24;
	t->c.done = rcmd_done;
	t->c.attr = SCSI_ATTR_SIMPLE;
	assert_int_equal(reactor_send_msg(rc->r, submit_msg, &t->c), 0);
}

static void wait_proposals(unsigned int n)
{
	pthread_mutex_lock(&mu);
	while (ag.n < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static unsigned int read_keys(struct rctx *rc, uint32_t *gen, uint64_t *keys)
{
	uint8_t c[16] = { 0x5e, 0x00 }, d[512];
	unsigned int n;

	c[7] = 0x02;
	memset(d, 0, sizeof(d));
	assert_int_equal(run_cdb(&rc->x, &rc->x.b, c, 10, d, sizeof(d)), SCSI_STATUS_GOOD);
	if (gen)
		*gen = be32(d);
	n = be32(&d[4]) / 8;
	for (unsigned int i = 0; keys && i < n; i++)
		keys[i] = be64(&d[8 + 8 * i]);
	return n;
}

static int setup(void **state)
{
	struct rctx *rc = calloc(1, sizeof(*rc));
	struct scsi_lu_params p = default_params();

	assert_non_null(rc);
	p.cluster_state = true;
	memcpy(g_naa, p.naa, sizeof(g_naa));
	tctx_setup(&rc->x, 16 * MB, 512, &p);
	drain_ua(&rc->x, &rc->x.a);
	drain_ua(&rc->x, &rc->x.b);
	memset(&ag, 0, sizeof(ag));
	memset(&ab, 0, sizeof(ab));
	scsi_cluster_set_handler(agent_handler, rc);
	scsi_set_abort_nexus_handler(rec_abort, NULL);
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
	assert_int_equal(scsi_cluster_held(), 0);
	scsi_cluster_set_handler(NULL, NULL);
	scsi_set_abort_nexus_handler(NULL, NULL);
	tctx_teardown(&rc->x);
	free(rc);
	return 0;
}

static const uint8_t *naa(struct rctx *rc)
{
	(void)rc;
	return g_naa;
}

/* The proposal is applied by "every node" (this one, own) as version v. */
static void apply_last(struct rctx *rc, uint64_t v)
{
	struct shs_state st;
	size_t nev;
	struct shs_event ev[SCSI_LU_EVENTS_MAX];

	pthread_mutex_lock(&mu);
	st = ag.st;
	nev = ag.nev;
	memcpy(ev, ag.ev, nev * sizeof(ev[0]));
	pthread_mutex_unlock(&mu);
	assert_int_equal(scsi_cluster_apply(naa(rc), v, &st, true, ev, nev, SCSI_CLUSTER_OWN), 0);
}

static void t_register_held_until_applied(void **state)
{
	struct rctx *rc = *state;
	struct rcmd t;
	uint64_t keys[4];
	uint32_t gen = 99;
	uint64_t v = 9;

	prout_submit(rc, &t, 0x00, 0, 0, 0xabc);
	wait_proposals(1);
	reactor_sync(rc->r);
	assert_int_equal(ndone(&t), 0);
	assert_true(ag.wait);
	assert_int_equal(ag.base, 0);
	assert_int_equal(ag.st.nregs, 1);
	assert_int_equal(ag.st.regs[0].key, 0xabc);
	assert_int_equal(ag.st.pr_generation, 1);
	/* not in force anywhere before the cluster applied it */
	assert_int_equal(read_keys(rc, &gen, NULL), 0);
	assert_int_equal(gen, 0);
	apply_last(rc, 1);
	assert_int_equal(read_keys(rc, &gen, keys), 1);
	assert_int_equal(keys[0], 0xabc);
	assert_int_equal(gen, 1);
	assert_int_equal(scsi_cluster_version(naa(rc), &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(ndone(&t), 0);
	/* complete only once every node applied it */
	assert_int_equal(scsi_cluster_done(ag.id, 0), 0);
	wait_done(&t);
	assert_int_equal(t.c.status, SCSI_STATUS_GOOD);
	/* a second answer finds nothing */
	assert_int_equal(scsi_cluster_done(ag.id, 0), -ENOENT);
}

static void t_stale_runs_again(void **state)
{
	struct rctx *rc = *state;
	struct shs_state other;
	struct rcmd t;
	uint64_t keys[4];

	prout_submit(rc, &t, 0x00, 0, 0, 0x111);
	wait_proposals(1);
	/* another node registered first: version 1 holds its key only */
	memset(&other, 0, sizeof(other));
	other.pr_holder = -1;
	other.nregs = 1;
	other.pr_generation = 1;
	other.regs[0].key = 0x222;
	other.regs[0].rel_port = 2;
	snprintf(other.regs[0].iport, sizeof(other.regs[0].iport), "%s",
		 "iqn.2026-01.org.example:host-c,i,0x400001370002");
	assert_int_equal(scsi_cluster_apply(naa(rc), 1, &other, false, NULL, 0, 0), 0);
	assert_int_equal(scsi_cluster_done(ag.id, -ESTALE), 0);
	/* it runs again on version 1 */
	wait_proposals(2);
	assert_int_equal(ag.base, 1);
	assert_int_equal(ag.st.nregs, 2);
	assert_int_equal(ag.st.pr_generation, 2);
	assert_int_equal(ndone(&t), 0);
	apply_last(rc, 2);
	assert_int_equal(scsi_cluster_done(ag.id, 0), 0);
	wait_done(&t);
	assert_int_equal(t.c.status, SCSI_STATUS_GOOD);
	assert_int_equal(read_keys(rc, NULL, keys), 2);
	assert_int_equal(keys[0], 0x222);
	assert_int_equal(keys[1], 0x111);
}

/* Until the n-th proposal, or t done; false if t is done. */
static bool wait_proposal_or_done(unsigned int n, struct rcmd *t)
{
	bool proposed;

	pthread_mutex_lock(&mu);
	while (ag.n < n && t->ndone == 0)
		pthread_cond_wait(&cv, &mu);
	proposed = t->ndone == 0;
	pthread_mutex_unlock(&mu);
	return proposed;
}

/* A change that finds the state moved every time runs again at most SCSI_CLUSTER_RETRIES times. */
static void t_stale_gives_up(void **state)
{
	struct rctx *rc = *state;
	struct rcmd t;
	unsigned int start = ag.n;

	prout_submit(rc, &t, 0x00, 0, 0, 0x444);
	for (unsigned int i = 0; i <= SCSI_CLUSTER_RETRIES; i++) {
		assert_true(wait_proposal_or_done(start + i + 1, &t));
		assert_int_equal(scsi_cluster_done(ag.id, -ESTALE), 0);
	}
	wait_done(&t);
	assert_int_equal(ag.n, start + SCSI_CLUSTER_RETRIES + 1);
	assert_int_equal(t.c.status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(t.c.sense[2] & 0x0f, SCSI_SK_NOT_READY);
	assert_int_equal(t.c.sense[12] << 8 | t.c.sense[13], 0x0407);
	assert_int_equal(read_keys(rc, NULL, NULL), 0);
}

static void t_nobody_listens_not_ready(void **state)
{
	struct rctx *rc = *state;
	struct rcmd t;

	ag.rc = -ENOTCONN;
	prout_submit(rc, &t, 0x00, 0, 0, 0x333);
	wait_done(&t);
	assert_int_equal(t.c.status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(t.c.sense[2] & 0x0f, SCSI_SK_NOT_READY);
	assert_int_equal(t.c.sense[12] << 8 | t.c.sense[13], 0x0407);
	assert_int_equal(read_keys(rc, NULL, NULL), 0);
}

static void t_refused_not_ready(void **state)
{
	struct rctx *rc = *state;
	struct rcmd t;

	prout_submit(rc, &t, 0x00, 0, 0, 0x444);
	wait_proposals(1);
	assert_int_equal(scsi_cluster_done(ag.id, -ENOLCK), 0);
	wait_done(&t);
	assert_int_equal(t.c.status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(t.c.sense[2] & 0x0f, SCSI_SK_NOT_READY);
	assert_int_equal(read_keys(rc, NULL, NULL), 0);
}

static void t_conflict_needs_no_cluster(void **state)
{
	struct rctx *rc = *state;
	struct rcmd t;

	/* RESERVE without a registration: RESERVATION CONFLICT, nothing proposed */
	prout_submit(rc, &t, 0x01, 0x01, 0x555, 0);
	wait_done(&t);
	assert_int_equal(t.c.status, SCSI_STATUS_RESERVATION_CONFLICT);
	assert_int_equal(ag.n, 0);
}

static void t_other_nodes_events(void **state)
{
	struct rctx *rc = *state;
	struct shs_state st;
	struct shs_event ev;

	/* a LOGICAL UNIT RESET through another node: UA here, and this node's tasks abort */
	memset(&st, 0, sizeof(st));
	st.pr_holder = -1;
	memset(&ev, 0, sizeof(ev));
	ev.kind = SHS_EV_UA_ALL;
	ev.flags = SHS_EVF_ABORT;
	ev.asc = 0x2903;
	assert_int_equal(scsi_cluster_apply(naa(rc), 1, &st, false, &ev, 1, 0), 0);
	assert_int_equal(ab.n, 1);
	assert_true(ab.every);
	assert_int_equal(run_tur(&rc->x, &rc->x.a), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_key(&rc->x), SCSI_SK_UNIT_ATTENTION);
	assert_int_equal(sense_asc(&rc->x), 0x2903);
	/* the same version again, an older one: nothing */
	assert_int_equal(scsi_cluster_apply(naa(rc), 1, &st, false, &ev, 1, 0), -EALREADY);
	assert_int_equal(ab.n, 1);
	/* this node's own reset: its tasks were aborted by the core already */
	assert_int_equal(scsi_cluster_apply(naa(rc), 2, &st, false, &ev, 1, SCSI_CLUSTER_OWN), 0);
	assert_int_equal(ab.n, 1);
}

/*
 * A change applied while this node was away: its agent hands over the UAs
 * for this node's nexuses with the version this node already holds; they
 * are queued all the same (and only for the nexus named).
 */
static void t_away_events_queued(void **state)
{
	struct rctx *rc = *state;
	struct shs_state st;
	struct shs_event ev;

	memset(&st, 0, sizeof(st));
	st.pr_holder = -1;
	assert_int_equal(scsi_cluster_apply(naa(rc), 3, &st, false, NULL, 0, 0), 0);
	assert_int_equal(run_tur(&rc->x, &rc->x.a), SCSI_STATUS_GOOD);
	assert_int_equal(run_tur(&rc->x, &rc->x.b), SCSI_STATUS_GOOD);
	memset(&ev, 0, sizeof(ev));
	ev.kind = SHS_EV_UA_NEXUS;
	ev.flags = SHS_EVF_ABORT;
	ev.asc = 0x2a05;
	ev.rel_port = rc->x.a.port->rel_port_id;
	snprintf(ev.iport, sizeof(ev.iport), "%s", rc->x.a.initiator_port);
	/* the version held, without the flag: nothing */
	assert_int_equal(scsi_cluster_apply(naa(rc), 3, &st, false, &ev, 1, 0), -EALREADY);
	assert_int_equal(run_tur(&rc->x, &rc->x.a), SCSI_STATUS_GOOD);
	/* handed over (an older version even): queued, nothing aborted */
	assert_int_equal(scsi_cluster_apply(naa(rc), 2, &st, false, &ev, 1, SCSI_CLUSTER_AWAY), 0);
	assert_int_equal(ab.n, 0);
	assert_int_equal(run_tur(&rc->x, &rc->x.b), SCSI_STATUS_GOOD);
	assert_int_equal(run_tur(&rc->x, &rc->x.a), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_key(&rc->x), SCSI_SK_UNIT_ATTENTION);
	assert_int_equal(sense_asc(&rc->x), 0x2a05);
	assert_int_equal(run_tur(&rc->x, &rc->x.a), SCSI_STATUS_GOOD);
	/* the state did not go back */
	{
		uint64_t v = 0;

		assert_int_equal(scsi_cluster_version(naa(rc), &v), 0);
		assert_int_equal(v, 3);
	}
}

static void t_bad_applies_refused(void **state)
{
	struct rctx *rc = *state;
	struct shs_state st;
	uint8_t other[16] = { 0x60, 1 };
	uint64_t v = 7;

	memset(&st, 0, sizeof(st));
	st.pr_holder = -1;
	assert_int_equal(scsi_cluster_apply(other, 1, &st, false, NULL, 0, 0), -ENOENT);
	st.nregs = SHS_MAX_REGS + 1;
	assert_int_equal(scsi_cluster_apply(naa(rc), 1, &st, false, NULL, 0, 0), -EINVAL);
	st.nregs = 0;
	st.pr_held = 1;
	st.pr_type = 1;
	st.pr_holder = 3;   /* no such registration */
	assert_int_equal(scsi_cluster_apply(naa(rc), 1, &st, false, NULL, 0, 0), -EINVAL);
	assert_int_equal(scsi_cluster_version(naa(rc), &v), 0);
	assert_int_equal(v, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(t_register_held_until_applied, setup, teardown),
		cmocka_unit_test_setup_teardown(t_stale_runs_again, setup, teardown),
		cmocka_unit_test_setup_teardown(t_stale_gives_up, setup, teardown),
		cmocka_unit_test_setup_teardown(t_nobody_listens_not_ready, setup, teardown),
		cmocka_unit_test_setup_teardown(t_refused_not_ready, setup, teardown),
		cmocka_unit_test_setup_teardown(t_conflict_needs_no_cluster, setup, teardown),
		cmocka_unit_test_setup_teardown(t_other_nodes_events, setup, teardown),
		cmocka_unit_test_setup_teardown(t_away_events_queued, setup, teardown),
		cmocka_unit_test_setup_teardown(t_bad_applies_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
