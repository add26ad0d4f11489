// LINK: ha_core
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The LU state the agents carry (ha/sm_lu.c), with three state machines on
 * an in-memory bus that delivers every multicast to every member of the
 * view in one total order (as test_ha_sm.c, CPG's agreed delivery): a
 * proposal is applied by every member as the next version and answered
 * only once every member's isergwd took it; of two proposals on the same
 * version the first delivered wins and the other is answered -ESTALE; a
 * member that leaves is not waited for; a proposal delivered while a
 * membership's barrier runs is refused everywhere; a node that joins takes
 * the table at the barrier; proposals from a future protocol, for an LU
 * that is not an NAA, out of order, and answers nobody waits for are
 * refused with a log line.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"
#include "isergw_ctl.pb-c.h"
#include "sm.h"

#define N 3

struct apply {
	uint64_t version;
	uint32_t origin;
	uint64_t proposal_id;
	uint8_t naa[16];
	bool answered;
};

struct node {
	struct ha_sm sm;
	bool up;
	bool hold;                      /* its isergwd does not answer until released */
	struct apply applies[64];
	size_t napplies;
	uint64_t done_id;
	int done_status;
	unsigned int ndone, stores, handovers;
};

struct bmsg {
	uint32_t from;
	uint8_t *buf;
	size_t len;
};

static struct node nodes[N];
static struct bmsg bus[1024];
static size_t nbus;
static uint64_t now_ms = 1000000;
static uint64_t ring_seq = 4;
static const char *names[N] = { "n1", "n2", "n3" };
static const uint8_t naa1[16] = { 0x60, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

static int op_send(void *ctx, const HaMsg *m)
{
	struct node *n = ctx;
	uint8_t *buf;
	size_t len;

	assert_int_equal(ha_msg_pack(m, &buf, &len), 0);
	assert_true(nbus < sizeof(bus) / sizeof(bus[0]));
	bus[nbus++] = (struct bmsg){ .from = n->sm.nodeid, .buf = buf, .len = len };
	return 0;
}

static void op_doc_changed(void *ctx, const struct ha_doc *d, uint64_t seq)
{
	(void)ctx;
	(void)d;
	(void)seq;
}

static void op_lease(void *ctx, uint64_t expires)
{
	(void)ctx;
	(void)expires;
}

static void op_step_down(void *ctx, const char *reason)
{
	(void)ctx;
	(void)reason;
}

static void op_change_done(void *ctx, uint64_t id, int status, const char *err, uint64_t gen)
{
	(void)ctx;
	(void)id;
	(void)status;
	(void)err;
	(void)gen;
}

static void op_applied(void *ctx)
{
	(void)ctx;
}

static void op_lu_apply(void *ctx, const uint8_t naa[16], uint64_t version, const uint8_t *state,
			size_t len, const uint8_t *events, size_t evlen, uint32_t origin,
			uint64_t proposal_id)
{
	struct node *n = ctx;
	struct apply *a;

	(void)state;
	(void)len;
	(void)events;
	(void)evlen;
	assert_true(n->napplies < 64);
	a = &n->applies[n->napplies++];
	memset(a, 0, sizeof(*a));
	a->version = version;
	a->origin = origin;
	a->proposal_id = proposal_id;
	memcpy(a->naa, naa, 16);
	if (!n->hold) {
		a->answered = true;
		ha_sm_lu_gw_applied(&n->sm, origin, proposal_id, naa, version, 0);
	}
}

static void op_lu_done(void *ctx, uint64_t id, int status, const char *why)
{
	struct node *n = ctx;

	(void)why;
	n->done_id = id;
	n->done_status = status;
	n->ndone++;
}

static void op_lu_store(void *ctx)
{
	struct node *n = ctx;

	n->stores++;
}

static void op_lu_handover(void *ctx)
{
	struct node *n = ctx;

	n->handovers++;
}

static const struct ha_sm_ops ops = {
	.send = op_send,
	.doc_changed = op_doc_changed,
	.lease = op_lease,
	.step_down = op_step_down,
	.change_done = op_change_done,
	.applied = op_applied,
	.lu_apply = op_lu_apply,
	.lu_done = op_lu_done,
	.lu_store = op_lu_store,
	.lu_handover = op_lu_handover,
};

static void settle(void)
{
	for (int i = 0; i < 100 && nbus; i++) {
		/* pump() may queue more: take the current batch first */
		struct bmsg batch[1024];
		size_t n = nbus;

		memcpy(batch, bus, n * sizeof(bus[0]));
		nbus = 0;
		for (size_t k = 0; k < n; k++) {
			int from = (int)batch[k].from - 1;

			for (int j = 0; j < N; j++)
				if (nodes[from].up && nodes[j].up)
					ha_sm_deliver(&nodes[j].sm, batch[k].from, batch[k].buf,
						      batch[k].len, now_ms);
			free(batch[k].buf);
		}
	}
	assert_int_equal(nbus, 0);
}

/* Ring, view, quorum on every up node, delivered before anything else; settled unless held. */
static void view_change(bool do_settle)
{
	uint32_t ids[N];
	size_t n = 0;

	ring_seq += 4;
	for (int k = 0; k < N; k++)
		if (nodes[k].up)
			ids[n++] = (uint32_t)k + 1;
	for (int k = 0; k < N; k++) {
		if (!nodes[k].up)
			continue;
		ha_sm_ring(&nodes[k].sm, ring_seq, ids[0], ids, n, now_ms);
		ha_sm_view(&nodes[k].sm, ids, n, now_ms);
		ha_sm_quorum(&nodes[k].sm, n * 2 > N, ring_seq, ids[0], N, (uint32_t)n, now_ms);
	}
	if (do_settle)
		settle();
}

static void start_node(int k)
{
	struct ha_sm_params p = {
		.nodeid = (uint32_t)k + 1, .name = names[k], .cluster = "test",
		.lease_ms = 1500, .heartbeat_ms = 100,
	};
	struct ha_doc *doc;
	struct node *n = &nodes[k];

	memset(n, 0, sizeof(*n));
	assert_int_equal(ha_doc_empty(&doc), 0);
	assert_int_equal(ha_sm_init(&n->sm, &p, &ops, n, doc, now_ms), 0);
	for (int i = 0; i < N; i++)
		ha_sm_set_name(&n->sm, (uint32_t)i + 1, names[i]);
	n->up = true;
}

static int setup(void **state)
{
	(void)state;
	nbus = 0;
	for (int k = 0; k < N; k++)
		start_node(k);
	view_change(true);
	for (int k = 0; k < N; k++) {
		assert_int_equal(nodes[k].sm.phase, HA_PHASE_SYNCED);
		assert_true(nodes[k].sm.lus.synced);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < nbus; i++)
		free(bus[i].buf);
	nbus = 0;
	for (int k = 0; k < N; k++)
		ha_sm_fini(&nodes[k].sm);
	return 0;
}

static int propose(int k, uint64_t id, uint64_t base, const char *blob)
{
	char err[256] = "";

	return ha_sm_lu_propose(&nodes[k].sm, id, naa1, base, (const uint8_t *)blob, strlen(blob),
				NULL, 0, err, sizeof(err));
}

static void assert_version(int k, uint64_t v, const char *blob)
{
	const struct ha_lu *l = ha_sm_lu_find(&nodes[k].sm, naa1);

	assert_non_null(l);
	assert_int_equal(l->version, v);
	assert_int_equal(l->len, strlen(blob));
	assert_memory_equal(l->state, blob, l->len);
}

/* Node k's isergwd answers every apply it holds. */
static void release(int k)
{
	struct node *n = &nodes[k];

	n->hold = false;
	for (size_t i = 0; i < n->napplies; i++) {
		struct apply *a = &n->applies[i];

		if (a->answered)
			continue;
		a->answered = true;
		ha_sm_lu_gw_applied(&n->sm, a->origin, a->proposal_id, a->naa, a->version, 0);
	}
	settle();
}

/* ---------------------------------------------------------------- tests */

static void test_applied_everywhere_before_done(void **state)
{
	(void)state;
	nodes[2].hold = true;
	assert_int_equal(propose(0, 7, 0, "state-A"), 0);
	settle();
	for (int k = 0; k < N; k++) {
		assert_version(k, 1, "state-A");
		assert_int_equal(nodes[k].napplies, 1);
		assert_int_equal(nodes[k].applies[0].origin, 1);
		assert_int_equal(nodes[k].applies[0].proposal_id, 7);
		assert_true(nodes[k].stores >= 1);
	}
	/* node 3's isergwd has not answered: no completion yet */
	assert_int_equal(nodes[0].ndone, 0);
	release(2);
	assert_int_equal(nodes[0].ndone, 1);
	assert_int_equal(nodes[0].done_id, 7);
	assert_int_equal(nodes[0].done_status, 0);
	assert_int_equal(nodes[1].ndone, 0);
}

static void test_same_base_first_wins(void **state)
{
	(void)state;
	assert_int_equal(propose(0, 1, 0, "from-n1"), 0);
	assert_int_equal(propose(1, 1, 0, "from-n2"), 0);
	settle();
	for (int k = 0; k < N; k++)
		assert_version(k, 1, "from-n1");
	assert_int_equal(nodes[0].done_status, 0);
	assert_int_equal(nodes[1].ndone, 1);
	assert_int_equal(nodes[1].done_status, -ESTALE);
	/* node 2 runs its command again on version 1 */
	assert_int_equal(propose(1, 2, 1, "from-n2-again"), 0);
	settle();
	for (int k = 0; k < N; k++)
		assert_version(k, 2, "from-n2-again");
	assert_int_equal(nodes[1].done_id, 2);
	assert_int_equal(nodes[1].done_status, 0);
}

static void test_member_that_leaves_is_not_waited_for(void **state)
{
	(void)state;
	nodes[2].hold = true;
	assert_int_equal(propose(0, 3, 0, "x"), 0);
	settle();
	assert_int_equal(nodes[0].ndone, 0);
	nodes[2].up = false;                    /* killed before its isergwd answered */
	view_change(true);
	assert_int_equal(nodes[0].ndone, 1);
	assert_int_equal(nodes[0].done_status, 0);
	ha_sm_fini(&nodes[2].sm);
	start_node(2);                          /* for teardown */
	nodes[2].up = false;
}

static void test_refused_while_the_barrier_runs(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(propose(0, 1, 0, "v1"), 0);
	settle();
	/* a proposal sent before the view change, delivered after it */
	assert_int_equal(propose(1, 9, 1, "late"), 0);
	{
		struct bmsg late = bus[--nbus];

		view_change(false);
		/* our own proposal path refuses too until merged */
		assert_int_equal(ha_sm_lu_propose(&nodes[0].sm, 10, naa1, 1, (const uint8_t *)"y", 1,
						  NULL, 0, err, sizeof(err)), -EAGAIN);
		/* delivered ahead of the Syncs */
		memmove(&bus[1], &bus[0], nbus * sizeof(bus[0]));
		bus[0] = late;
		nbus++;
	}
	settle();
	for (int k = 0; k < N; k++) {
		assert_version(k, 1, "v1");
		assert_true(nodes[k].sm.lus.synced);
	}
	assert_int_equal(nodes[1].done_id, 9);
	assert_int_equal(nodes[1].done_status, -EAGAIN);
}

static void test_joiner_takes_the_table(void **state)
{
	(void)state;
	nodes[2].up = false;
	view_change(true);
	assert_int_equal(propose(0, 1, 0, "while-n3-away"), 0);
	settle();
	assert_int_equal(nodes[0].done_status, 0);
	ha_sm_fini(&nodes[2].sm);
	start_node(2);                          /* an empty table: restarted, nothing on disk */
	assert_null(ha_sm_lu_find(&nodes[2].sm, naa1));
	view_change(true);
	for (int k = 0; k < N; k++)
		assert_version(k, 1, "while-n3-away");
	/* pushed to its isergwd, with nobody waiting */
	assert_int_equal(nodes[2].napplies, 1);
	assert_int_equal(nodes[2].applies[0].origin, 0);
	assert_int_equal(nodes[2].applies[0].version, 1);
	/* and it takes part in the next change */
	assert_int_equal(propose(2, 5, 1, "from-n3"), 0);
	settle();
	for (int k = 0; k < N; k++)
		assert_version(k, 2, "from-n3");
	assert_int_equal(nodes[2].done_status, 0);
}

static void test_no_quorum_no_proposal(void **state)
{
	(void)state;
	nodes[1].up = false;
	nodes[2].up = false;
	view_change(true);
	assert_int_equal(propose(0, 1, 0, "alone"), -ENOLCK);
	assert_null(ha_sm_lu_find(&nodes[0].sm, naa1));
}

/* Sends a crafted message from node `from` at protocol `version`. */
static void inject(uint32_t from, uint32_t version, HaMsg *m)
{
	uint8_t *buf;
	size_t len;

	m->version = version;
	m->cluster = (char *)(uintptr_t)"test";
	assert_int_equal(ha_msg_pack(m, &buf, &len), 0);
	for (int k = 0; k < N; k++)
		ha_sm_deliver(&nodes[k].sm, from, buf, len, now_ms);
	free(buf);
}

static void test_bad_lu_messages_refused(void **state)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__LuPropose p = ISERGW__HA__LU_PROPOSE__INIT;
	Isergw__Ha__LuApplied a = ISERGW__HA__LU_APPLIED__INIT;
	uint8_t bad_naa[16] = { 0x20 };
	uint64_t rejected = nodes[0].sm.rejected_msgs;

	(void)state;
	assert_int_equal(propose(0, 1, 0, "v1"), 0);
	settle();
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_LU_PROPOSE;
	m.lu_propose = &p;
	p.origin = 2;
	p.proposal_id = 77;
	p.naa.data = (uint8_t *)(uintptr_t)naa1;
	p.naa.len = 16;
	p.base_version = 1;
	p.state.data = (uint8_t *)(uintptr_t)"evil";
	p.state.len = 4;
	/* from a future protocol */
	inject(2, HA_PROTO_MAX + 1, &m);
	/* in a protocol that has no LU state */
	inject(2, 2, &m);
	/* not an NAA */
	p.naa.data = bad_naa;
	inject(2, HA_PROTO_MAX, &m);
	p.naa.data = (uint8_t *)(uintptr_t)naa1;
	/* claims another origin */
	p.origin = 3;
	inject(2, HA_PROTO_MAX, &m);
	p.origin = 2;
	assert_true(nodes[0].sm.rejected_msgs >= rejected + 3);
	for (int k = 0; k < N; k++)
		assert_version(k, 1, "v1");
	/* out of order: on a version nobody holds */
	p.base_version = 5;
	inject(2, HA_PROTO_MAX, &m);
	/* for an LU nobody knows, on a version above 0 */
	p.naa.data = (uint8_t *)(uintptr_t)"\x60\x99\x99\x99\x99\x99\x99\x99\x99\x99\x99\x99\x99\x99\x99\x99";
	p.base_version = 3;
	inject(2, HA_PROTO_MAX, &m);
	for (int k = 0; k < N; k++) {
		assert_version(k, 1, "v1");
		assert_int_equal(nodes[k].sm.lus.n, 1);
	}
	/* an answer to a proposal nobody waits for changes nothing */
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_LU_APPLIED;
	m.lu_applied = &a;
	a.origin = 1;
	a.proposal_id = 12345;
	a.naa.data = (uint8_t *)(uintptr_t)naa1;
	a.naa.len = 16;
	a.version = 1;
	inject(2, HA_PROTO_MAX, &m);
	assert_int_equal(nodes[0].ndone, 1);
	settle();
}

static void test_older_group_carries_no_lu_state(void **state)
{
	char err[256] = "";

	(void)state;
	for (int k = 0; k < N; k++)
		nodes[k].sm.proto = 2;          /* as after a barrier with a protocol 2 agent */
	assert_int_equal(ha_sm_lu_propose(&nodes[0].sm, 1, naa1, 0, (const uint8_t *)"x", 1, NULL,
					  0, err, sizeof(err)), -EPROTONOSUPPORT);
	assert_non_null(strstr(err, "protocol 2"));
}

/* A packed isergw.ctl.LuState of LU naa with one registration. */
static uint8_t *lu_state(const uint8_t naa[16], bool aptpl, size_t *len)
{
	Isergw__Ctl__LuState st = ISERGW__CTL__LU_STATE__INIT;
	Isergw__Ctl__LuReg r = ISERGW__CTL__LU_REG__INIT, *rp = &r;
	uint8_t *buf;

	st.naa.data = (uint8_t *)(uintptr_t)naa;
	st.naa.len = 16;
	st.aptpl = aptpl;
	st.pr_generation = 1;
	st.pr_holder = -1;
	r.key = 0xabc;
	r.iport = (char *)(uintptr_t)"iqn.2026-11.org.example:h,i,0x1";
	st.regs = &rp;
	st.n_regs = 1;
	*len = isergw__ctl__lu_state__get_packed_size(&st);
	buf = malloc(*len);
	assert_non_null(buf);
	isergw__ctl__lu_state__pack(&st, buf);
	return buf;
}

/* The table on disk: a restart keeps the APTPL states (power on drops the others). */
static void test_aptpl_survives_a_restart(void **state)
{
	static const uint8_t naa2[16] = { 0x60, 2 };
	char dir[] = "/tmp/test-ha-lu-XXXXXX", path[64];
	uint8_t *a, *b;
	size_t alen, blen;
	const struct ha_lu *l;

	(void)state;
	assert_non_null(mkdtemp(dir));
	a = lu_state(naa1, true, &alen);
	b = lu_state(naa2, false, &blen);
	assert_int_equal(propose(0, 1, 0, "x"), 0);    /* naa1 version 1 ... */
	settle();
	{
		char err[128];

		assert_int_equal(ha_sm_lu_propose(&nodes[0].sm, 2, naa1, 1, a, alen, NULL, 0, err,
						  sizeof(err)), 0);
		assert_int_equal(ha_sm_lu_propose(&nodes[0].sm, 3, naa2, 0, b, blen, NULL, 0, err,
						  sizeof(err)), 0);
	}
	settle();
	assert_int_equal(ha_lu_save(&nodes[0].sm, dir), 0);
	/* node 1's agent restarts alone, from its disk */
	ha_sm_fini(&nodes[0].sm);
	start_node(0);
	assert_int_equal(ha_lu_load(&nodes[0].sm, dir), 0);
	l = ha_sm_lu_find(&nodes[0].sm, naa1);
	assert_non_null(l);
	assert_int_equal(l->version, 2);
	assert_int_equal(l->len, alen);
	assert_memory_equal(l->state, a, alen);
	assert_null(ha_sm_lu_find(&nodes[0].sm, naa2));
	/* an empty file is the empty table (what no reservation packs to): loaded, nothing in it */
	snprintf(path, sizeof(path), "%s/lu-state.pb", dir);
	{
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fclose(f);
	}
	ha_sm_fini(&nodes[0].sm);
	start_node(0);
	assert_int_equal(ha_lu_load(&nodes[0].sm, dir), 0);
	assert_null(ha_sm_lu_find(&nodes[0].sm, naa1));
	/* a garbled file is refused; nothing loaded */
	{
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs("\xff\xff\xff garbage", f);
		fclose(f);
	}
	ha_sm_fini(&nodes[0].sm);
	start_node(0);
	assert_int_equal(ha_lu_load(&nodes[0].sm, dir), -EINVAL);
	assert_null(ha_sm_lu_find(&nodes[0].sm, naa1));
	unlink(path);
	rmdir(dir);
	free(a);
	free(b);
	nodes[0].up = false;    /* not in the view: teardown only */
}

static const char *config_nodes =
	"{\"nodes\":["
	"{\"name\":\"n1\",\"tpg_id\":1,\"portals\":[{\"url\":\"tcp://10.0.0.1:3260\",\"rel_port_id\":1}]},"
	"{\"name\":\"n2\",\"tpg_id\":2,\"portals\":[{\"url\":\"tcp://10.0.0.2:3260\",\"rel_port_id\":2}]},"
	"{\"name\":\"n3\",\"tpg_id\":3,\"portals\":[{\"url\":\"tcp://10.0.0.3:3260\",\"rel_port_id\":3},"
	"{\"url\":\"tcp://10.0.1.3:3260\",\"rel_port_id\":13}]}],"
	"\"device_groups\":[{\"name\":\"dg1\",\"preferred_owner\":\"n1\"}],"
	"\"targets\":[{\"iqn\":\"iqn.2026-11.org.isergw:t\",\"luns\":["
	"{\"lun\":0,\"path\":\"/tmp/test-ha-lu-0.img\",\"device_group\":\"dg1\"}]}]}";

/* A packed isergw.ctl.LuStateApply holding these events. */
static uint8_t *lu_events(const Isergw__Ctl__LuEvent *ev, size_t n, size_t *len)
{
	Isergw__Ctl__LuStateApply a = ISERGW__CTL__LU_STATE_APPLY__INIT;
	Isergw__Ctl__LuEvent *evp[8];
	uint8_t *buf;

	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++)
		evp[i] = (Isergw__Ctl__LuEvent *)(uintptr_t)&ev[i];
	a.events = evp;
	a.n_events = n;
	*len = isergw__ctl__lu_state_apply__get_packed_size(&a);
	buf = malloc(*len + 1);
	assert_non_null(buf);
	isergw__ctl__lu_state_apply__pack(&a, buf);
	return buf;
}

/* The three nodes' portals configured, then n3 out of the view. */
static void n3_away(void)
{
	char err[256] = "";

	assert_true(ha_sm_submit_config(&nodes[0].sm, config_nodes, 0, err, sizeof(err)) > 0);
	settle();
	for (int k = 0; k < N; k++)
		assert_int_equal(nodes[k].sm.doc->nnodes, 3);
	nodes[2].up = false;
	view_change(true);
}

static size_t parked_for(int k, const char *node)
{
	size_t n = 0;

	for (size_t i = 0; i < nodes[k].sm.lus.nparked; i++)
		n += !strcmp(nodes[k].sm.lus.parked[i].node, node);
	return n;
}

/*
 * A PREEMPT while the preempted nexus's node is away: its UA is parked by
 * every member, handed to the node when it returns (and by nobody else
 * after that), not twice when a late copy comes back, and kept when the
 * node's own isergwd is not there.
 */
static void test_ua_for_a_node_away(void **state)
{
	static const char *h1 = "iqn.2026-11.org.example:h1,i,0x1";
	static const char *h2 = "iqn.2026-11.org.example:h2,i,0x1";
	Isergw__Ctl__LuEvent ev[4];
	struct ha_lu_parked out[8];
	char err[256] = "";
	uint8_t *evb;
	size_t evlen;

	(void)state;
	n3_away();
	for (int i = 0; i < 4; i++)
		isergw__ctl__lu_event__init(&ev[i]);
	/* 2A/05 for h1's nexus through n3's first portal (away) */
	ev[0].kind = 2;
	ev[0].flags = 4;        /* ABORT */
	ev[0].asc = 0x2a05;
	ev[0].rel_port = 3;
	ev[0].iport = (char *)(uintptr_t)h1;
	/* 2A/05 for h2's nexus through n1 (here: its isergwd gets it now) */
	ev[1].kind = 2;
	ev[1].asc = 0x2a05;
	ev[1].rel_port = 1;
	ev[1].iport = (char *)(uintptr_t)h2;
	/* 2A/03 for h2 on every port (all_tg_pt): n3's two portals */
	ev[2].kind = 2;
	ev[2].flags = 2;        /* ALL_PORTS */
	ev[2].asc = 0x2a03;
	ev[2].iport = (char *)(uintptr_t)h2;
	/* a reset's UA for every nexus: n3's nexuses are lost with it, nothing parked */
	ev[3].kind = 1;
	ev[3].asc = 0x2903;
	ev[3].iport = (char *)(uintptr_t)"";
	evb = lu_events(ev, 4, &evlen);
	assert_int_equal(ha_sm_lu_propose(&nodes[0].sm, 1, naa1, 0, (const uint8_t *)"v1", 2, evb,
					  evlen, err, sizeof(err)), 0);
	settle();
	assert_int_equal(nodes[0].done_status, 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(nodes[k].sm.lus.nparked, 3);
		assert_int_equal(parked_for(k, "n3"), 3);
		assert_int_equal(nodes[k].handovers, 0);
	}
	/* n3 restarts with nothing on disk and joins */
	ha_sm_fini(&nodes[2].sm);
	start_node(2);
	view_change(true);
	assert_int_equal(nodes[0].sm.lus.nparked, 0);
	assert_int_equal(nodes[1].sm.lus.nparked, 0);
	assert_int_equal(parked_for(2, "n3"), 3);
	assert_int_equal(nodes[2].handovers, 1);
	assert_int_equal(ha_sm_lu_parked_mine(&nodes[2].sm), 3);
	assert_int_equal(ha_sm_lu_parked_for(&nodes[2].sm, 0, out, 8), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(out[i].version, 1);
		if (out[i].asc == 0x2a05) {
			assert_string_equal(out[i].iport, h1);
			assert_int_equal(out[i].rel_port, 3);
		} else {
			assert_int_equal(out[i].asc, 0x2a03);
			assert_string_equal(out[i].iport, h2);
			assert_true(out[i].rel_port == 3 || out[i].rel_port == 13);
		}
	}
	/* isergwd took them */
	ha_sm_lu_parked_taken(&nodes[2].sm, naa1, 1);
	assert_int_equal(nodes[2].sm.lus.nparked, 0);
	assert_int_equal(ha_sm_lu_find(&nodes[2].sm, naa1)->handed, 1);
	/* a member that was cut off comes back with its old copy: not handed again */
	ha_sm_lu_load_parked(&nodes[0].sm, out, 3);
	view_change(true);
	for (int k = 0; k < N; k++)
		assert_int_equal(nodes[k].sm.lus.nparked, 0);
	assert_int_equal(nodes[2].handovers, 1);
	/* every node here: nothing parked for a change */
	assert_int_equal(ha_sm_lu_propose(&nodes[1].sm, 2, naa1, 1, (const uint8_t *)"v2", 2, evb,
					  evlen, err, sizeof(err)), 0);
	settle();
	for (int k = 0; k < N; k++) {
		assert_version(k, 2, "v2");
		assert_int_equal(nodes[k].sm.lus.nparked, 0);
	}
	/* n3's isergwd is not there: its agent keeps the UAs for its own portals only */
	ha_sm_lu_park_own(&nodes[2].sm, naa1, 2, evb, evlen);
	assert_int_equal(parked_for(2, "n3"), 3);
	assert_int_equal(nodes[2].sm.lus.nparked, 3);
	/* ... through its store */
	{
		char dir[] = "/tmp/test-ha-lu-XXXXXX", path[64];

		assert_non_null(mkdtemp(dir));
		assert_int_equal(ha_lu_save(&nodes[2].sm, dir), 0);
		ha_sm_fini(&nodes[2].sm);
		start_node(2);
		assert_int_equal(ha_lu_load(&nodes[2].sm, dir), 0);
		assert_int_equal(ha_sm_lu_parked_mine(&nodes[2].sm), 3);
		snprintf(path, sizeof(path), "%s/lu-state.pb", dir);
		unlink(path);
		rmdir(dir);
	}
	free(evb);
}

/*
 * A per-nexus event without an initiator port (isergwd never sends one) is
 * not parked: a Sync carrying it would be refused by every member, and the
 * returning node's barrier would never end.
 */
static void test_malformed_event_not_parked(void **state)
{
	Isergw__Ctl__LuEvent ev;
	char err[256] = "";
	uint8_t *evb;
	size_t evlen;

	(void)state;
	n3_away();
	isergw__ctl__lu_event__init(&ev);
	ev.kind = 2;
	ev.asc = 0x2a05;
	ev.rel_port = 3;
	ev.iport = (char *)(uintptr_t)"";
	evb = lu_events(&ev, 1, &evlen);
	assert_int_equal(ha_sm_lu_propose(&nodes[0].sm, 1, naa1, 0, (const uint8_t *)"v1", 2, evb,
					  evlen, err, sizeof(err)), 0);
	settle();
	assert_int_equal(nodes[0].sm.lus.nparked, 0);
	assert_int_equal(nodes[1].sm.lus.nparked, 0);
	ha_sm_fini(&nodes[2].sm);
	start_node(2);
	view_change(true);
	for (int k = 0; k < N; k++) {
		assert_int_equal(nodes[k].sm.phase, HA_PHASE_SYNCED);
		assert_true(nodes[k].sm.lus.synced);
	}
	free(evb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_applied_everywhere_before_done, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_base_first_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_member_that_leaves_is_not_waited_for, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refused_while_the_barrier_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_joiner_takes_the_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_quorum_no_proposal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_lu_messages_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_older_group_carries_no_lu_state, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_aptpl_survives_a_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ua_for_a_node_away, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_event_not_parked, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
