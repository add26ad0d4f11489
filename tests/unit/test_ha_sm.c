// LINK: ha_core
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HA agent's state machine (ha/sm.c) with a fake clock and a fake
 * corosync: N state machines joined by an in-memory bus that delivers every
 * multicast to every member of the view in one total order, as CPG's agreed
 * delivery does. Membership and quorum changes reach every member at the
 * same point of that order. Checks the sync barrier, changes, the leader's
 * placements, leases, step-downs, partitions, planned moves, drains, the
 * codec's refusals and the version negotiation.
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

#include <cmocka.h>

#include "sm.h"

#define N 3
#define LEASE 1500u
#define HB 100u
#define ALUA_AO 0
#define ALUA_ANO 1
#define ALUA_UNAVAIL 3
#define ALUA_TRANS 15

struct node {
	struct ha_sm sm;
	bool up;                        /* in the view */
	bool partitioned;               /* in a ring of its own */
	uint64_t lease;                 /* last lease given to "isergwd" */
	unsigned int leases, stepdowns, docs;
	uint64_t doc_seq;               /* the newest document handed over to be stored */
	bool slow_disk;                 /* its saves do not finish until cleared */
	bool gw_dead;                   /* its isergwd is gone and takes nothing */
	uint64_t done_id;
	int done_status;
	uint64_t done_gen;
	char done_err[256];
};

struct bmsg {
	uint32_t from;
	uint8_t *buf;
	size_t len;
};

static struct node nodes[N];
static struct bmsg bus[4096];
static size_t nbus;
static uint64_t now_ms = 1000000;
static uint64_t ring_seq = 4;

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
	struct node *n = ctx;

	(void)d;
	n->docs++;
	n->doc_seq = seq;
}

static void op_lease(void *ctx, uint64_t expires)
{
	struct node *n = ctx;

	n->lease = expires;
	n->leases++;
}

static void op_step_down(void *ctx, const char *reason)
{
	struct node *n = ctx;

	(void)reason;
	n->stepdowns++;
	n->lease = 0;
}

static void op_change_done(void *ctx, uint64_t id, int status, const char *err, uint64_t gen)
{
	struct node *n = ctx;

	n->done_id = id;
	n->done_status = status;
	n->done_gen = gen;
	snprintf(n->done_err, sizeof(n->done_err), "%s", err ? err : "");
}

static void op_applied(void *ctx)
{
	(void)ctx;
}

static const struct ha_sm_ops ops = {
	.send = op_send,
	.doc_changed = op_doc_changed,
	.lease = op_lease,
	.step_down = op_step_down,
	.change_done = op_change_done,
	.applied = op_applied,
};

/* Two nodes see each other when both are up and on the same side. */
static bool together(int a, int b)
{
	return nodes[a].up && nodes[b].up && nodes[a].partitioned == nodes[b].partitioned;
}

/*
 * With hold_placements set, the leader's placements are not delivered but
 * kept in held[] (in order) until release_held(): a placement on its way.
 */
static bool hold_placements;
static struct bmsg held[256];
static size_t nheld;

static bool is_placement(const struct bmsg *b)
{
	HaMsg *m;
	char err[256];
	bool yes;

	if (ha_msg_decode(b->buf, b->len, &m, err, sizeof(err)))
		return false;
	yes = m->body_case == ISERGW__HA__GROUP_MSG__BODY_CHANGE &&
	      m->change->kind_case == ISERGW__HA__CHANGE__KIND_PLACEMENT;
	ha_msg_free(m);
	return yes;
}

/* Deliver everything queued, in order, to every member that sees the sender. */
static void pump(void)
{
	for (size_t i = 0; i < nbus; i++) {
		int from = (int)bus[i].from - 1;

		if (hold_placements && is_placement(&bus[i])) {
			assert_true(nheld < sizeof(held) / sizeof(held[0]));
			held[nheld++] = bus[i];
			bus[i].buf = NULL;
			continue;
		}
		for (int k = 0; k < N; k++)
			if (together(from, k))
				ha_sm_deliver(&nodes[k].sm, bus[i].from, bus[i].buf, bus[i].len, now_ms);
	}
	for (size_t i = 0; i < nbus; i++)
		free(bus[i].buf);
	nbus = 0;
}

/* The held placements go out now, in the order they were sent. */
static void release_held(void)
{
	hold_placements = false;
	for (size_t i = 0; i < nheld; i++) {
		assert_true(nbus < sizeof(bus) / sizeof(bus[0]));
		bus[nbus++] = held[i];
	}
	nheld = 0;
}

/* The saver of every up node without a slow disk catches up (with its newest document). */
static void store_all(void)
{
	for (int k = 0; k < N; k++)
		if (nodes[k].up && !nodes[k].slow_disk)
			ha_sm_doc_stored(&nodes[k].sm, nodes[k].doc_seq);
}

/* Keep pumping until nothing is left (messages beget messages). */
static void settle(void)
{
	for (int i = 0; i < 100; i++) {
		store_all();
		if (!nbus)
			break;
		pump();
	}
	assert_int_equal(nbus, 0);
}

/*
 * One heartbeat passes: every up node ticks, and the isergwd of every up
 * node but skip (-1: none) takes its agent's generation.
 */
static void tick_applying_but(int skip)
{
	now_ms += HB;
	for (int k = 0; k < N; k++)
		if (nodes[k].up)
			ha_sm_tick(&nodes[k].sm, now_ms);
	settle();
	for (int k = 0; k < N; k++)
		if (nodes[k].up && k != skip && !nodes[k].gw_dead)
			ha_sm_gw_applied(&nodes[k].sm, nodes[k].sm.doc->generation, 0, NULL, now_ms);
	settle();
}

/* isergwd on every up node takes whatever generation its agent has. */
static void gw_apply_all(void)
{
	store_all();
	for (int k = 0; k < N; k++)
		if (nodes[k].up && !nodes[k].gw_dead)
			ha_sm_gw_applied(&nodes[k].sm, nodes[k].sm.doc->generation, 0, NULL, now_ms);
	settle();
}

/* A membership change as corosync delivers it: ring, view, quorum, on each side. */
static void membership(void)
{
	uint32_t ids[2][N];
	size_t n[2] = { 0, 0 };

	ring_seq += 4;
	for (int k = 0; k < N; k++)
		if (nodes[k].up)
			ids[nodes[k].partitioned][n[nodes[k].partitioned]++] = (uint32_t)k + 1;
	for (int k = 0; k < N; k++) {
		int side = nodes[k].partitioned;

		if (!nodes[k].up)
			continue;
		ha_sm_ring(&nodes[k].sm, ring_seq, ids[side][0], ids[side], n[side], now_ms);
		ha_sm_view(&nodes[k].sm, ids[side], n[side], now_ms);
		ha_sm_quorum(&nodes[k].sm, n[side] * 2 > N, ring_seq, ids[side][0], N,
			     (uint32_t)n[side], now_ms);
	}
	settle();
}

/* Time passes: ticks every heartbeat, messages delivered after each. */
static void run_for(uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t += HB) {
		now_ms += HB;
		for (int k = 0; k < N; k++)
			if (nodes[k].up)
				ha_sm_tick(&nodes[k].sm, now_ms);
		settle();
		gw_apply_all();
	}
}

static const char *names[N] = { "n1", "n2", "n3" };

static const char *config3 =
	"{\"nodes\":["
	"{\"name\":\"n1\",\"tpg_id\":1,\"portals\":[{\"url\":\"tcp://10.0.0.1:3260\",\"rel_port_id\":1}]},"
	"{\"name\":\"n2\",\"tpg_id\":2,\"portals\":[{\"url\":\"tcp://10.0.0.2:3260\",\"rel_port_id\":2}]},"
	"{\"name\":\"n3\",\"tpg_id\":3,\"portals\":[{\"url\":\"tcp://10.0.0.3:3260\",\"rel_port_id\":3}]}],"
	"\"device_groups\":["
	"{\"name\":\"dg1\",\"preferred_owner\":\"n1\"},"
	"{\"name\":\"dg2\",\"preferred_owner\":\"n2\"},"
	"{\"name\":\"dg3\",\"preferred_owner\":\"n3\",\"failback\":\"manual\"}],"
	"\"targets\":[{\"iqn\":\"iqn.2026-11.org.isergw:t\",\"luns\":["
	"{\"lun\":0,\"path\":\"/tmp/test-ha-sm-0.img\",\"device_group\":\"dg1\"},"
	"{\"lun\":1,\"path\":\"/tmp/test-ha-sm-1.img\",\"device_group\":\"dg2\"},"
	"{\"lun\":2,\"path\":\"/tmp/test-ha-sm-2.img\",\"device_group\":\"dg3\"}]}]}";

/* config3 with dg1's failback manual: nothing moves */
static const char *config3_manual =
	"{\"nodes\":["
	"{\"name\":\"n1\",\"tpg_id\":1,\"portals\":[{\"url\":\"tcp://10.0.0.1:3260\",\"rel_port_id\":1}]},"
	"{\"name\":\"n2\",\"tpg_id\":2,\"portals\":[{\"url\":\"tcp://10.0.0.2:3260\",\"rel_port_id\":2}]},"
	"{\"name\":\"n3\",\"tpg_id\":3,\"portals\":[{\"url\":\"tcp://10.0.0.3:3260\",\"rel_port_id\":3}]}],"
	"\"device_groups\":["
	"{\"name\":\"dg1\",\"preferred_owner\":\"n1\",\"failback\":\"manual\"},"
	"{\"name\":\"dg2\",\"preferred_owner\":\"n2\"},"
	"{\"name\":\"dg3\",\"preferred_owner\":\"n3\",\"failback\":\"manual\"}],"
	"\"targets\":[{\"iqn\":\"iqn.2026-11.org.isergw:t\",\"luns\":["
	"{\"lun\":0,\"path\":\"/tmp/test-ha-sm-0.img\",\"device_group\":\"dg1\"},"
	"{\"lun\":1,\"path\":\"/tmp/test-ha-sm-1.img\",\"device_group\":\"dg2\"},"
	"{\"lun\":2,\"path\":\"/tmp/test-ha-sm-2.img\",\"device_group\":\"dg3\"}]}]}";

static uint32_t start_proto_max; /* the protocol start_node's agent speaks (0: the newest) */

static void start_node(int k, struct ha_doc *doc)
{
	struct ha_sm_params p = {
		.nodeid = (uint32_t)k + 1, .name = names[k], .cluster = "test",
		.lease_ms = LEASE, .heartbeat_ms = HB, .proto_max = start_proto_max,
	};
	struct node *n = &nodes[k];

	memset(n, 0, sizeof(*n));
	if (!doc)
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
		start_node(k, NULL);
	membership();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < nbus; i++)
		free(bus[i].buf);
	nbus = 0;
	for (size_t i = 0; i < nheld; i++)
		free(held[i].buf);
	nheld = 0;
	hold_placements = false;
	for (int k = 0; k < N; k++)
		ha_sm_fini(&nodes[k].sm);
	return 0;
}

static int owner_of(int k, const char *dg)
{
	const struct ha_doc *d = nodes[k].sm.doc;
	int g = ha_doc_find_dg(d, dg);

	assert_true(g >= 0);
	return d->owner[g];
}

/* Node k's ALUA state of node m's group for device group dg, as k pushes it. */
static int state_of(int k, const char *dg, int m)
{
	const struct ha_doc *d = nodes[k].sm.doc;
	struct ha_alua_entry e[N];
	int g = ha_doc_find_dg(d, dg);

	assert_true(g >= 0);
	ha_alua_states(d, g, e);
	return e[m].state;
}

/* Never two different groups Active/Optimized for one device group, over all up nodes. */
static void assert_one_ao(void)
{
	static const char *dgs[] = { "dg1", "dg2", "dg3" };

	for (size_t g = 0; g < 3; g++) {
		int ao = -1;

		for (int k = 0; k < N; k++) {
			if (!nodes[k].up || nodes[k].sm.doc->ndgs == 0)
				continue;
			/* a node that is not leased serves nothing */
			if (!nodes[k].lease || nodes[k].lease <= now_ms)
				continue;
			for (int m = 0; m < N; m++) {
				if (state_of(k, dgs[g], m) != ALUA_AO)
					continue;
				if (ao >= 0 && ao != m)
					fail_msg("%s: node %d's group AO per node %d, node %d's per another",
						 dgs[g], m + 1, k + 1, ao + 1);
				ao = m;
			}
		}
	}
}

static void configure(void)
{
	char err[512] = "";
	int64_t id = ha_sm_submit_config(&nodes[0].sm, config3, 0, err, sizeof(err));

	if (id < 0)
		fail_msg("config refused: %s", err);
	settle();
	assert_int_equal(nodes[0].done_id, (uint64_t)id);
	assert_int_equal(nodes[0].done_status, 0);
	gw_apply_all();
	run_for(500);
}

/* Node k's agent restarts as one that speaks protocols up to proto_max; 500 ms later. */
static void restart_older(int k, uint32_t proto_max)
{
	nodes[k].up = false;
	ha_sm_fini(&nodes[k].sm);
	membership();
	start_proto_max = proto_max;
	start_node(k, NULL);
	start_proto_max = 0;
	membership();
	run_for(500);
}

/* ---------------------------------------------------------------- tests */

static void test_barrier_and_config(void **state)
{
	(void)state;
	for (int k = 0; k < N; k++)
		assert_int_equal(nodes[k].sm.phase, HA_PHASE_SYNCED);
	configure();
	for (int k = 0; k < N; k++) {
		assert_true(nodes[k].sm.doc->generation >= 2);
		assert_int_equal(nodes[k].sm.doc->generation, nodes[0].sm.doc->generation);
		assert_memory_equal(nodes[k].sm.doc->digest, nodes[0].sm.doc->digest, HA_DIGEST_LEN);
		/* preferred owners */
		assert_int_equal(owner_of(k, "dg1"), 0);
		assert_int_equal(owner_of(k, "dg2"), 1);
		assert_int_equal(owner_of(k, "dg3"), 2);
		assert_int_equal(state_of(k, "dg1", 0), ALUA_AO);
		assert_int_equal(state_of(k, "dg1", 1), ALUA_ANO);
		/* leased */
		assert_true(nodes[k].lease > now_ms);
	}
	assert_one_ao();
}

static void test_lease_from_heartbeat(void **state)
{
	(void)state;
	configure();
	/* the lease ends lease_ms after the heartbeat that renewed it was sent */
	for (int k = 0; k < N; k++) {
		assert_true(nodes[k].lease <= now_ms + LEASE);
		assert_true(nodes[k].lease > now_ms + LEASE - 2 * HB);
	}
	/* isergwd lost: no renewal until it holds the generation again */
	ha_sm_gw_lost(&nodes[1].sm);
	nodes[1].lease = 0;
	now_ms += HB;
	ha_sm_tick(&nodes[1].sm, now_ms);
	settle();
	assert_int_equal(nodes[1].lease, 0);
	/* back: renewed at once, from the last heartbeat that came back (not a newer one) */
	ha_sm_gw_applied(&nodes[1].sm, nodes[1].sm.doc->generation, 0, NULL, now_ms);
	assert_true(nodes[1].lease > now_ms);
	assert_int_equal(nodes[1].lease,
			 nodes[1].sm.hb_sent_ms[nodes[1].sm.hb_back_seq % HA_HB_RING] + LEASE);
	run_for(HB);
	assert_true(nodes[1].lease > now_ms);
}

/*
 * A node frozen past its lease and resumed: until a heartbeat it sends after
 * resuming comes back, its status is "stale", not quorate, and it takes no
 * change; messages queued before (delivered first) do not end it.
 */
static void test_stale_after_a_freeze(void **state)
{
	char why[256];

	(void)state;
	configure();
	assert_string_equal(ha_sm_phase_name(&nodes[2].sm), "synced");
	/* the others go on while node 3's loop does not run */
	nodes[2].up = false;
	run_for(LEASE / 2);
	nodes[2].up = true;
	now_ms += LEASE;
	/* first thing after resuming: a message sent while it was frozen */
	ha_sm_tick(&nodes[0].sm, now_ms);
	for (size_t i = 0; i < nbus; i++)
		ha_sm_deliver(&nodes[2].sm, bus[i].from, bus[i].buf, bus[i].len, now_ms);
	assert_string_equal(ha_sm_phase_name(&nodes[2].sm), "stale");
	assert_false(ha_sm_can_change(&nodes[2].sm, why, sizeof(why)));
	assert_non_null(strstr(why, "stale"));
	for (size_t i = 0; i < nbus; i++)
		free(bus[i].buf);
	nbus = 0;
	/* its own next heartbeat delivered back: current again */
	ha_sm_tick(&nodes[2].sm, now_ms);
	assert_string_equal(ha_sm_phase_name(&nodes[2].sm), "stale");
	settle();
	assert_string_equal(ha_sm_phase_name(&nodes[2].sm), "synced");
	assert_true(ha_sm_can_change(&nodes[2].sm, why, sizeof(why)));
	/* a clock that runs on time never makes it stale */
	run_for(LEASE * 2);
	assert_string_equal(ha_sm_phase_name(&nodes[2].sm), "synced");
}

static void test_node_death(void **state)
{
	uint64_t died;

	(void)state;
	configure();
	nodes[0].up = false;            /* node 1 dies: it owned dg1 */
	died = now_ms;
	ha_sm_fini(&nodes[0].sm);
	run_for(2200);                  /* corosync notices after token + consensus */
	membership();
	/* survivors: node 1's group Unavailable, dg1 owned elsewhere once the lease is over */
	for (int k = 1; k < N; k++) {
		assert_int_equal(state_of(k, "dg1", 0), ALUA_UNAVAIL);
		assert_true(owner_of(k, "dg1") == 1 || owner_of(k, "dg1") == 2);
		assert_int_equal(owner_of(k, "dg1"), owner_of(1, "dg1"));
		assert_int_equal(owner_of(k, "dg2"), 1);
		assert_int_equal(owner_of(k, "dg3"), 2);
	}
	assert_true(now_ms - died >= LEASE);
	assert_one_ao();
	/* counted: one failover (dg1), nothing planned */
	for (int k = 1; k < N; k++) {
		assert_int_equal(nodes[k].sm.failovers, 1);
		assert_int_equal(nodes[k].sm.planned_moves, 0);
	}
	/* node 1 returns: failback immediate gives dg1 back, through Transitioning */
	start_node(0, NULL);
	membership();
	run_for(1000);
	for (int k = 0; k < N; k++) {
		assert_int_equal(owner_of(k, "dg1"), 0);
		assert_int_equal(state_of(k, "dg1", 0), ALUA_AO);
		assert_int_equal(nodes[k].sm.doc->generation, nodes[1].sm.doc->generation);
	}
	assert_one_ao();
	/* the failback is a planned move; node 1 adopted its document: counted nothing of it */
	for (int k = 1; k < N; k++) {
		assert_int_equal(nodes[k].sm.failovers, 1);
		assert_int_equal(nodes[k].sm.planned_moves, 1);
	}
	assert_int_equal(nodes[0].sm.failovers, 0);
	assert_int_equal(nodes[0].sm.planned_moves, 1);
}

/*
 * Failback waits for the returning node: dg1 stays with its owner, serving
 * (not Transitioning), until node 1's isergwd holds the generation that made
 * it live; only then the move, through Transitioning as any planned one.
 */
static void test_failback_waits_for_the_new_owner(void **state)
{
	uint64_t gen;

	(void)state;
	configure();
	nodes[0].up = false;
	ha_sm_fini(&nodes[0].sm);
	run_for(2200);
	membership();
	run_for(LEASE);
	assert_int_equal(owner_of(1, "dg1"), owner_of(2, "dg1"));
	assert_true(owner_of(1, "dg1") == 1 || owner_of(1, "dg1") == 2);
	/* node 1 returns; its isergwd is slow to take anything */
	start_node(0, NULL);
	membership();
	for (int t = 0; t < 10; t++) {
		tick_applying_but(0);
		/* the old owner keeps dg1, Active/Optimized, on every node */
		for (int k = 0; k < N; k++) {
			int o = owner_of(k, "dg1");

			assert_true(o == 1 || o == 2);
			assert_int_equal(state_of(k, "dg1", o), ALUA_AO);
		}
	}
	gen = nodes[1].sm.doc->generation;
	assert_int_equal(state_of(1, "dg1", 0), ALUA_ANO); /* node 1 live meanwhile */
	/* its isergwd takes the current generation: now the move, and it ends with node 1 */
	run_for(1000);
	assert_true(nodes[1].sm.doc->generation > gen);
	for (int k = 0; k < N; k++) {
		assert_int_equal(owner_of(k, "dg1"), 0);
		assert_int_equal(state_of(k, "dg1", 0), ALUA_AO);
	}
	assert_one_ao();
}

/* The held placement is delivered: nodes 1 and 2 own dg3 between them, leased again at once. */
static void placement_arrives(void)
{
	release_held();
	settle();
	gw_apply_all();
	for (int k = 0; k < 2; k++) {
		assert_true(owner_of(k, "dg3") == 0 || owner_of(k, "dg3") == 1);
		assert_true(nodes[k].lease > now_ms);
	}
	assert_one_ao();
}

/*
 * A survivor's isergwd is never leased on a map that names as owner a node
 * that left and whose lease is over: after a node death the leader's
 * placement reaches the members one after the other, and a member leased on
 * the old map meanwhile would report the dead node's group Active/Optimized
 * while one that applied the placement reports its own (ha.failover once saw
 * it: node 2 renewed at the barrier with the map from before the death).
 */
static void test_no_lease_on_a_map_naming_a_lost_owner(void **state)
{
	(void)state;
	configure();
	nodes[2].up = false;            /* node 3, dg3's owner, dies */
	ha_sm_fini(&nodes[2].sm);
	now_ms += 2200;                 /* corosync forms the new ring: nothing delivered */
	hold_placements = true;         /* the leader's placement is on its way */
	membership();
	for (int t = 0; t < 5; t++)
		tick_applying_but(-1);  /* heartbeats come back, isergwd holds the generation */
	assert_true(nheld > 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(owner_of(k, "dg3"), 2);
		if (nodes[k].lease > now_ms)
			fail_msg("node %d leased until +%" PRIu64 " ms on a map naming dead node 3 "
				 "dg3's owner", k + 1, nodes[k].lease - now_ms);
	}
	/* the placement arrives: dg3 elsewhere, leased again at once */
	placement_arrives();
}

/*
 * A lost owner whose lease still runs (its agent restarting): the others'
 * leases go on as before, but none reaches past the moment the leader may
 * hand its groups over, so that no member is still leased on the old map
 * while another applies the new one.
 */
static void test_leases_end_before_a_lost_owner_moves(void **state)
{
	uint64_t moved = 0, gen;

	(void)state;
	configure();
	gen = nodes[0].sm.doc->generation;
	nodes[2].up = false;            /* node 3's agent leaves the group; its node stays */
	ha_sm_fini(&nodes[2].sm);
	hold_placements = true;
	membership();
	run_for(LEASE / 2);
	/* nothing changes for hosts meanwhile */
	assert_int_equal(nheld, 0);
	assert_int_equal(nodes[0].sm.doc->generation, gen);
	for (int k = 0; k < 2; k++)
		assert_true(nodes[k].lease > now_ms);
	for (uint64_t t = 0; t < 3 * LEASE && !moved; t += HB) {
		now_ms += HB;
		for (int k = 0; k < 2; k++)
			ha_sm_tick(&nodes[k].sm, now_ms);
		settle();
		gw_apply_all();
		if (nheld)
			moved = now_ms;
	}
	assert_true(moved > 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(owner_of(k, "dg3"), 2);
		if (nodes[k].lease > moved)
			fail_msg("node %d leased until %" PRIu64 " ms after the leader moved dg3",
				 k + 1, nodes[k].lease - moved);
	}
	placement_arrives();
}

/* A Fenced message from node `from` about `node`, delivered to every up member that sees it. */
static void deliver_fenced(int from, const char *node, uint32_t version)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Fenced f = ISERGW__HA__FENCED__INIT;
	uint8_t *buf;
	size_t len;

	f.node = (char *)(uintptr_t)node;
	m.version = version;
	m.cluster = (char *)(uintptr_t)"test";
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_FENCED;
	m.fenced = &f;
	assert_int_equal(ha_msg_pack(&m, &buf, &len), 0);
	for (int k = 0; k < N; k++)
		if (together(from, k))
			ha_sm_deliver(&nodes[k].sm, (uint32_t)from + 1, buf, len, now_ms);
	free(buf);
	settle();
}

/*
 * The fencer confirmed a dead node fenced: its groups move at once instead
 * of after its lease. Never for a node that is alive: in the group, or a
 * corosync member; a Fenced that says so anyway changes nothing.
 */
static void test_fenced_node_moves_at_once(void **state)
{
	char err[256];
	uint64_t gen, died;

	(void)state;
	configure();
	gen = nodes[0].sm.doc->generation;
	assert_int_equal(ha_sm_submit_fenced(&nodes[0].sm, "n3", err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "in the group"));
	assert_int_equal(ha_sm_submit_fenced(&nodes[0].sm, "n9", err, sizeof(err)), -ENOENT);
	/* a member that says node 3 was fenced while it is in the group: ignored */
	deliver_fenced(1, "n3", HA_PROTO_MAX);
	run_for(3 * HB);
	assert_int_equal(nodes[0].sm.doc->generation, gen);
	assert_int_equal(owner_of(0, "dg3"), 2);
	assert_false(ha_sm_member_by_name(&nodes[0].sm, "n3")->fenced);
	/* node 3 dies; the new ring forms at once (for the test): dg3 waits for its lease */
	nodes[2].up = false;
	ha_sm_fini(&nodes[2].sm);
	died = now_ms;
	membership();
	run_for(2 * HB);
	assert_int_equal(owner_of(0, "dg3"), 2);
	/* pacemaker fenced it: told through node 2 */
	assert_int_equal(ha_sm_submit_fenced(&nodes[1].sm, "n3", err, sizeof(err)), 0);
	settle();
	gw_apply_all();
	for (int k = 0; k < 2; k++) {
		assert_true(owner_of(k, "dg3") == 0 || owner_of(k, "dg3") == 1);
		assert_int_equal(state_of(k, "dg3", 2), ALUA_UNAVAIL);
		assert_true(nodes[k].lease > now_ms);
	}
	assert_true(now_ms - died < LEASE / 2);
	assert_one_ao();
	/* node 3 back: heard of again, the fence forgotten; failback manual */
	start_node(2, NULL);
	membership();
	run_for(1000);
	assert_false(ha_sm_member_by_name(&nodes[0].sm, "n3")->fenced);
	assert_int_equal(state_of(2, "dg3", 2), ALUA_ANO);
}

/* An agent of protocol 1 in the group: the fence is not announced (it would not understand). */
static void test_fenced_needs_protocol_2(void **state)
{
	char err[256];

	(void)state;
	configure();
	restart_older(1, 1);          /* node 2's agent restarts as an older one */
	for (int k = 0; k < N; k++)
		assert_int_equal(nodes[k].sm.proto, 1);
	nodes[2].up = false;
	ha_sm_fini(&nodes[2].sm);
	membership();
	assert_int_equal(ha_sm_submit_fenced(&nodes[0].sm, "n3", err, sizeof(err)),
			 -EPROTONOSUPPORT);
	assert_non_null(strstr(err, "protocol 1"));
	/* nor is a Fenced in a protocol 1 message taken */
	deliver_fenced(1, "n3", 1);
	assert_false(ha_sm_member_by_name(&nodes[0].sm, "n3")->fenced);
	deliver_fenced(1, "", HA_PROTO_MAX);
	/* a well-formed one is, also from an older agent's group (the codec decides) */
	deliver_fenced(1, "n3", 2);
	assert_true(ha_sm_member_by_name(&nodes[0].sm, "n3")->fenced);
}

static void test_lost_owner_waits_for_its_lease(void **state)
{
	(void)state;
	configure();
	/* the agent of node 3 leaves the group but its node stays (restart): dg3 is held */
	uint64_t gen = nodes[0].sm.doc->generation;

	nodes[2].up = false;
	ha_sm_fini(&nodes[2].sm);
	membership();
	assert_int_equal(owner_of(0, "dg3"), 2);
	run_for(LEASE / 2);
	/* nothing changes for hosts meanwhile: no new generation, its group as it was */
	assert_int_equal(owner_of(0, "dg3"), 2);
	assert_int_equal(nodes[0].sm.doc->generation, gen);
	assert_int_equal(state_of(0, "dg3", 2), ALUA_AO);
	assert_int_equal(state_of(1, "dg1", 2), ALUA_ANO);
	/* after the lease (plus one heartbeat and the margin) it moves */
	run_for(LEASE + 300);
	assert_true(owner_of(0, "dg3") == 0 || owner_of(0, "dg3") == 1);
	assert_int_equal(state_of(0, "dg3", 2), ALUA_UNAVAIL);
	/* failback manual: node 3 back, dg3 stays where it is */
	start_node(2, NULL);
	membership();
	run_for(1000);
	assert_true(owner_of(2, "dg3") == 0 || owner_of(2, "dg3") == 1);
	assert_int_equal(state_of(2, "dg3", 2), ALUA_ANO);
}

/*
 * Node 1 comes back from a minority as node 2's agent goes away, in one
 * membership change: node 1 leads again, but it heard nothing of node 2
 * while it was cut off, and node 2's isergwd renewed its lease in the
 * majority until then. dg2 stays node 2's until that lease has run out.
 */
static void test_rejoined_leader_waits_for_a_lease_it_did_not_see(void **state)
{
	uint64_t lease2;

	(void)state;
	configure();
	nodes[0].partitioned = true;    /* node 1 cut off for 3 s */
	membership();
	run_for(3000);
	assert_false(nodes[0].sm.quorate);
	assert_int_equal(owner_of(1, "dg2"), 1);
	lease2 = nodes[1].lease;        /* node 2's isergwd serves dg2 until then */
	assert_true(lease2 > now_ms);
	nodes[0].partitioned = false;
	nodes[1].up = false;
	ha_sm_fini(&nodes[1].sm);
	membership();
	assert_true(ha_sm_is_leader(&nodes[0].sm));
	while (now_ms + HB < lease2) {
		assert_int_equal(owner_of(0, "dg2"), 1);
		assert_int_equal(owner_of(2, "dg2"), 1);
		run_for(HB);
	}
	/* after that lease (plus one heartbeat and the margin) it moves */
	run_for(LEASE + 300);
	assert_true(owner_of(0, "dg2") == 0 || owner_of(0, "dg2") == 2);
	start_node(1, NULL);
	membership();
}

static void test_agent_restart_within_lease_changes_nothing(void **state)
{
	uint64_t gen;
	uint8_t digest[HA_DIGEST_LEN];
	struct ha_doc *d;
	char err[256];

	(void)state;
	configure();
	gen = nodes[0].sm.doc->generation;
	memcpy(digest, nodes[0].sm.doc->digest, HA_DIGEST_LEN);
	assert_int_equal(ha_doc_parse(nodes[2].sm.doc->text, &d, err, sizeof(err)), 0);
	nodes[2].up = false;
	ha_sm_fini(&nodes[2].sm);
	membership();
	run_for(LEASE / 3);
	start_node(2, d);               /* back with its stored document */
	membership();
	run_for(1000);
	for (int k = 0; k < N; k++) {
		assert_int_equal(nodes[k].sm.doc->generation, gen);
		assert_memory_equal(nodes[k].sm.doc->digest, digest, HA_DIGEST_LEN);
		assert_true(nodes[k].lease > now_ms);
	}
	assert_int_equal(owner_of(0, "dg3"), 2);
}

/*
 * A restarted agent whose isergwd still holds the generation: renewed the
 * moment the barrier passes, from its heartbeat that came back meanwhile
 * in this ring, not at the next heartbeat.
 */
static void test_restart_renews_at_the_barrier(void **state)
{
	uint32_t ids[N] = { 1, 2, 3 };
	struct ha_doc *d;
	char err[256];
	uint64_t gen, sent;

	(void)state;
	configure();
	gen = nodes[2].sm.doc->generation;
	assert_int_equal(ha_doc_parse(nodes[2].sm.doc->text, &d, err, sizeof(err)), 0);
	nodes[2].up = false;
	ha_sm_fini(&nodes[2].sm);
	membership();
	run_for(LEASE / 3);
	start_node(2, d);
	ha_sm_gw_applied(&nodes[2].sm, gen, 0, NULL, now_ms);  /* its isergwd holds it still */
	assert_int_equal(nodes[2].leases, 0);
	/* node 3 is in the new ring first and heartbeats before the others' Syncs come */
	ring_seq += 4;
	ha_sm_ring(&nodes[2].sm, ring_seq, 1, ids, N, now_ms);
	ha_sm_view(&nodes[2].sm, ids, N, now_ms);
	ha_sm_quorum(&nodes[2].sm, true, ring_seq, 1, N, N, now_ms);
	now_ms += HB;
	ha_sm_tick(&nodes[2].sm, now_ms);
	sent = now_ms;
	for (int k = 0; k < 2; k++) {
		ha_sm_ring(&nodes[k].sm, ring_seq, 1, ids, N, now_ms);
		ha_sm_view(&nodes[k].sm, ids, N, now_ms);
		ha_sm_quorum(&nodes[k].sm, true, ring_seq, 1, N, N, now_ms);
	}
	now_ms += 10;
	settle();
	assert_int_equal(nodes[2].sm.phase, HA_PHASE_SYNCED);
	assert_int_equal(nodes[2].leases, 1);
	assert_int_equal(nodes[2].lease, sent + LEASE);
	run_for(500);
	for (int k = 0; k < N; k++)
		assert_int_equal(nodes[k].sm.doc->generation, gen);
}

/* One node's agent of another cluster name: left out, the two others go on; it never serves. */
static void test_foreign_cluster_member(void **state)
{
	struct ha_sm_params p = {
		.nodeid = 3, .name = "n3", .cluster = "other", .lease_ms = LEASE, .heartbeat_ms = HB,
	};
	struct ha_doc *d;

	(void)state;
	configure();
	nodes[2].up = false;
	ha_sm_fini(&nodes[2].sm);
	membership();
	run_for(LEASE + 500);
	/* node 3 comes back configured for another cluster */
	assert_int_equal(ha_doc_empty(&d), 0);
	memset(&nodes[2], 0, sizeof(nodes[2]));
	assert_int_equal(ha_sm_init(&nodes[2].sm, &p, &ops, &nodes[2], d, now_ms), 0);
	for (int i = 0; i < N; i++)
		ha_sm_set_name(&nodes[2].sm, (uint32_t)i + 1, names[i]);
	nodes[2].up = true;
	membership();
	run_for(1000);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(nodes[k].sm.phase, HA_PHASE_SYNCED);
		assert_true(nodes[k].lease > now_ms);
		assert_int_equal(state_of(k, "dg3", 2), ALUA_UNAVAIL);
	}
	assert_int_equal(nodes[2].lease, 0);
	assert_true(owner_of(0, "dg3") == 0 || owner_of(0, "dg3") == 1);
}

static void test_partition(void **state)
{
	uint64_t gen_major;
	char err[256];

	(void)state;
	configure();
	nodes[2].partitioned = true;    /* node 3 cut off */
	run_for(2200);
	membership();
	/* the minority stepped down, gets no lease */
	assert_true(nodes[2].stepdowns >= 1);
	assert_false(nodes[2].sm.quorate);
	nodes[2].lease = 0;
	run_for(1000);
	assert_int_equal(nodes[2].lease, 0);
	/* changes refused there */
	assert_int_equal(ha_sm_submit_drain(&nodes[2].sm, "n1", true, false, err, sizeof(err)), -ENOLCK);
	assert_non_null(strstr(err, "quorum"));
	/* the majority took dg3 over and changes things */
	assert_true(owner_of(0, "dg3") == 0 || owner_of(0, "dg3") == 1);
	assert_true(ha_sm_submit_drain(&nodes[0].sm, "n2", true, false, err, sizeof(err)) > 0);
	settle();
	run_for(1000);
	assert_int_equal(owner_of(0, "dg2"), 0);
	gen_major = nodes[0].sm.doc->generation;
	assert_true(gen_major > nodes[2].sm.doc->generation);
	assert_one_ao();
	/* heal: node 3 takes the majority's generation, never goes back */
	nodes[2].partitioned = false;
	membership();
	run_for(1000);
	assert_true(nodes[2].sm.doc->generation >= gen_major);
	assert_memory_equal(nodes[2].sm.doc->digest, nodes[0].sm.doc->digest, HA_DIGEST_LEN);
	assert_true(nodes[2].lease > now_ms);
	assert_one_ao();
}

static void test_planned_move_goes_through_transitioning(void **state)
{
	char err[256];
	int64_t id;
	bool saw_trans = false;

	(void)state;
	configure();
	id = ha_sm_submit_move(&nodes[1].sm, "dg1", "n3", err, sizeof(err));
	assert_true(id > 0);
	/* step by step: the old owner demoted everywhere before the new one is promoted */
	for (int i = 0; i < 20 && owner_of(0, "dg1") != 2; i++) {
		pump();
		if (owner_of(0, "dg1") < 0) {
			assert_int_equal(state_of(0, "dg1", 0), ALUA_TRANS);
			saw_trans = true;
		}
		assert_one_ao();
		gw_apply_all();
	}
	assert_true(saw_trans);
	assert_int_equal(owner_of(0, "dg1"), 2);
	assert_int_equal(nodes[1].done_id, (uint64_t)id);
	assert_int_equal(nodes[1].done_status, 0);
	/* the same again: nothing to do */
	assert_int_equal(ha_sm_submit_move(&nodes[1].sm, "dg1", "n3", err, sizeof(err)), -EALREADY);
	/* unknown names */
	assert_int_equal(ha_sm_submit_move(&nodes[1].sm, "nope", "n3", err, sizeof(err)), -ENOENT);
	assert_int_equal(ha_sm_submit_move(&nodes[1].sm, "dg1", "n9", err, sizeof(err)), -ENOENT);
}

/*
 * Host SET TARGET PORT GROUPS: refused (-EAGAIN) while the group moves and
 * until it has kept its owner for HA_HOST_MOVE_SETTLE_MS, so that the paths
 * of one host asking at once through two nodes cannot bounce it between
 * them; the initial placement does not count; afterwards a move again.
 */
static void test_host_moves_wait_for_a_settled_group(void **state)
{
	char err[256];
	int64_t id;
	uint64_t gen;

	(void)state;
	configure();
	/* placed, never moved: a host's request moves it at once */
	id = ha_sm_submit_host_move(&nodes[1].sm, "dg1", "n2", now_ms, err, sizeof(err));
	assert_true(id > 0);
	/* while it moves, another path's request is refused */
	pump();
	if (owner_of(1, "dg1") < 0) {
		assert_int_equal(ha_sm_submit_host_move(&nodes[2].sm, "dg1", "n3", now_ms, err,
							sizeof(err)), -EAGAIN);
		assert_non_null(strstr(err, "moving"));
	}
	for (int i = 0; i < 20 && owner_of(0, "dg1") != 1; i++) {
		gw_apply_all();
		pump();
	}
	assert_int_equal(owner_of(0, "dg1"), 1);
	/* moved just now: the other path's request waits, nothing changes */
	gen = nodes[2].sm.doc->generation;
	assert_int_equal(ha_sm_submit_host_move(&nodes[2].sm, "dg1", "n3", now_ms, err, sizeof(err)),
			 -EAGAIN);
	assert_non_null(strstr(err, "changed hands"));
	run_for(1000);
	assert_int_equal(nodes[2].sm.doc->generation, gen);
	assert_int_equal(owner_of(2, "dg1"), 1);
	/* asking for the owner it has: already so */
	assert_int_equal(ha_sm_submit_host_move(&nodes[2].sm, "dg1", "n2", now_ms, err, sizeof(err)),
			 -EALREADY);
	/* a drained node's group is refused for good, settled or not */
	assert_true(ha_sm_submit_drain(&nodes[0].sm, "n3", true, false, err, sizeof(err)) > 0);
	settle();
	assert_int_equal(ha_sm_submit_host_move(&nodes[2].sm, "dg1", "n3", now_ms, err, sizeof(err)),
			 -EPERM);
	assert_true(ha_sm_submit_drain(&nodes[0].sm, "n3", false, false, err, sizeof(err)) > 0);
	settle();
	/* settled: a move again */
	run_for(HA_HOST_MOVE_SETTLE_MS + 1000); /* the undrain may have moved dg1 home */
	id = ha_sm_submit_host_move(&nodes[2].sm, "dg1", "n3", now_ms, err, sizeof(err));
	assert_true(id > 0);
	for (int i = 0; i < 20 && owner_of(0, "dg1") != 2; i++) {
		gw_apply_all();
		pump();
	}
	assert_int_equal(owner_of(0, "dg1"), 2);
	/* the other device groups never moved */
	assert_int_equal(ha_sm_submit_host_move(&nodes[0].sm, "nope", "n1", now_ms, err, sizeof(err)),
			 -ENOENT);
}

/* A node without isergwd is not waited for once its lease there is over; before, it is. */
static void test_move_without_an_isergwd(void **state)
{
	char err[256];
	int64_t id;

	(void)state;
	configure();
	ha_sm_gw_lost(&nodes[2].sm);
	id = ha_sm_submit_move(&nodes[1].sm, "dg1", "n2", err, sizeof(err));
	assert_true(id > 0);
	/* nodes 1 and 2 apply the demotion; node 3 cannot: the promotion waits */
	for (int i = 0; i < 3; i++) {
		settle();
		for (int k = 0; k < 2; k++)
			ha_sm_gw_applied(&nodes[k].sm, nodes[k].sm.doc->generation, 0, NULL, now_ms);
		settle();
	}
	assert_int_equal(owner_of(0, "dg1"), -1);
	/* ticks without node 3's isergwd taking anything, past its lease */
	for (int t = 0; t < (int)(LEASE / HB) + 3; t++) {
		tick_applying_but(2);
		if (t < (int)(LEASE / HB) - 5)
			assert_int_equal(owner_of(0, "dg1"), -1);
	}
	assert_int_equal(owner_of(0, "dg1"), 1);
	assert_int_equal(nodes[1].done_id, (uint64_t)id);
	assert_int_equal(nodes[1].done_status, 0);
}

/* The configuration the cluster has already: no new generation (a move would be undone). */
/*
 * A planned move of dg3 off node 3, whose isergwd does not take the
 * Transitioning generation; then node 3's agent leaves the group (a
 * restart). Its isergwd still serves dg3 Active/Optimized on the old map
 * until its lease ends: the new owner may not be made Active/Optimized
 * before, although every agent left in the group applied the demotion.
 */
static void test_move_waits_for_an_old_owner_that_left(void **state)
{
	char err[256];
	uint64_t lease3;

	(void)state;
	configure();
	nodes[2].gw_dead = true;        /* node 3's isergwd takes nothing more */
	assert_true(ha_sm_submit_move(&nodes[0].sm, "dg3", "n1", err, sizeof(err)) > 0);
	for (int i = 0; i < 3; i++)
		tick_applying_but(2);
	assert_int_equal(owner_of(0, "dg3"), -1);       /* n3 Transitioning */
	lease3 = nodes[2].lease;
	assert_true(lease3 > now_ms);
	nodes[2].up = false;
	ha_sm_fini(&nodes[2].sm);
	membership();
	while (now_ms + HB < lease3) {
		assert_int_equal(owner_of(0, "dg3"), -1);
		assert_int_equal(owner_of(1, "dg3"), -1);
		tick_applying_but(2);
	}
	run_for(LEASE + 300);
	assert_int_equal(owner_of(0, "dg3"), 0);
	nodes[2].gw_dead = false;
	start_node(2, NULL);
	membership();
}

/*
 * Node 1's agent leaves the group; its isergwd serves on its lease with the
 * map it has (dg2 Active/Optimized on node 2). A planned move of dg2 to
 * node 3 meanwhile: nodes 2 and 3 apply the demotion, but node 3 may be
 * made Active/Optimized only once node 1's isergwd no longer reports node 2
 * so: once its lease is over.
 */
static void test_move_waits_for_a_live_node_away(void **state)
{
	char err[256];
	uint64_t lease1;

	(void)state;
	configure();
	lease1 = nodes[0].lease;
	nodes[0].up = false;
	ha_sm_fini(&nodes[0].sm);
	membership();
	assert_true(ha_sm_submit_move(&nodes[1].sm, "dg2", "n3", err, sizeof(err)) > 0);
	while (now_ms + HB < lease1) {
		assert_true(owner_of(1, "dg2") != 2);
		assert_true(owner_of(2, "dg2") != 2);
		tick_applying_but(0);
	}
	/* then dg2 has an owner again (the placement that ends node 1's lease may keep node 2) */
	run_for(LEASE + 300);
	assert_true(owner_of(1, "dg2") == 1 || owner_of(1, "dg2") == 2);
	assert_int_equal(owner_of(2, "dg2"), owner_of(1, "dg2"));
	start_node(0, NULL);
	membership();
}

static void test_same_config_changes_nothing(void **state)
{
	char err[256];

	(void)state;
	configure();
	assert_int_equal(ha_sm_submit_config(&nodes[0].sm, config3, 0, err, sizeof(err)), -EALREADY);
	assert_int_equal(nbus, 0);
}

static void test_drain_undrain(void **state)
{
	char err[256];

	(void)state;
	configure();
	assert_true(ha_sm_submit_drain(&nodes[0].sm, "n2", true, false, err, sizeof(err)) > 0);
	settle();
	run_for(1000);
	for (int k = 0; k < N; k++) {
		assert_true(owner_of(k, "dg2") == 0 || owner_of(k, "dg2") == 2);
		assert_int_equal(state_of(k, "dg2", 1), ALUA_ANO);
	}
	assert_int_equal(nodes[0].done_status, 0);
	assert_int_equal(ha_sm_submit_drain(&nodes[0].sm, "n2", true, false, err, sizeof(err)), -EALREADY);
	assert_true(ha_sm_submit_drain(&nodes[0].sm, "n2", false, false, err, sizeof(err)) > 0);
	settle();
	run_for(1000);
	assert_int_equal(owner_of(0, "dg2"), 1);   /* failback immediate */
	assert_one_ao();
}

/* The last node that can own groups: its drain refused naming them, unless forced. */
static void test_drain_of_the_last_serving_node(void **state)
{
	char err[256];
	int64_t id;

	(void)state;
	configure();
	assert_true(ha_sm_submit_drain(&nodes[0].sm, "n2", true, false, err, sizeof(err)) > 0);
	settle();
	assert_true(ha_sm_submit_drain(&nodes[0].sm, "n3", true, false, err, sizeof(err)) > 0);
	settle();
	run_for(1000);
	for (int g = 1; g <= 3; g++) {
		char dg[8];

		snprintf(dg, sizeof(dg), "dg%d", g);
		assert_int_equal(owner_of(1, dg), 0);
	}
	/* n1 is the last: refused naming every group, nothing sent, the groups still owned */
	assert_int_equal(nbus, 0);
	assert_int_equal(ha_sm_submit_drain(&nodes[1].sm, "n1", true, false, err, sizeof(err)),
			 -EBUSY);
	assert_non_null(strstr(err, "would leave device groups dg1, dg2, dg3 without an owner"));
	assert_int_equal(nbus, 0);
	run_for(1000);
	assert_int_equal(owner_of(1, "dg1"), 0);
	assert_one_ao();
	/* forced: every group without an owner, and the request answered as done */
	id = ha_sm_submit_drain(&nodes[1].sm, "n1", true, true, err, sizeof(err));
	assert_true(id > 0);
	settle();
	run_for(1000);
	for (int k = 0; k < N; k++) {
		assert_int_equal(owner_of(k, "dg1"), -1);
		assert_int_equal(owner_of(k, "dg2"), -1);
		assert_int_equal(owner_of(k, "dg3"), -1);
	}
	assert_int_equal(nodes[1].done_id, (uint64_t)id);
	assert_int_equal(nodes[1].done_status, 0);
	/* one node undrained: it owns them again */
	assert_true(ha_sm_submit_drain(&nodes[0].sm, "n2", false, false, err, sizeof(err)) > 0);
	settle();
	run_for(1000);
	assert_int_equal(owner_of(0, "dg2"), 1);
	assert_one_ao();
}

static void test_stale_base_generation(void **state)
{
	char err[256];

	(void)state;
	configure();
	assert_int_equal(ha_sm_submit_config(&nodes[0].sm, config3, 1, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "generation"));
}

static void test_invalid_config_refused_before_sending(void **state)
{
	char err[512] = "";
	uint64_t gen;

	(void)state;
	configure();
	gen = nodes[0].sm.doc->generation;
	assert_int_equal(ha_sm_submit_config(&nodes[0].sm,
		"{\"nodes\":[{\"name\":\"n1\",\"tpg_id\":1,\"colour\":1}]}", 0, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "colour"));
	assert_int_equal(nbus, 0);
	assert_int_equal(nodes[1].sm.doc->generation, gen);
}

/* Bytes that are no message, a message of the future, one of another cluster. */
static void test_bad_messages_ignored(void **state)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Heartbeat h = ISERGW__HA__HEARTBEAT__INIT;
	uint8_t garbage[] = { 0xff, 0xff, 0xff, 0x01, 0x02 };
	uint8_t *buf;
	size_t len;
	uint64_t gen, rejected;

	(void)state;
	configure();
	gen = nodes[0].sm.doc->generation;
	rejected = nodes[0].sm.rejected_msgs;
	ha_sm_deliver(&nodes[0].sm, 2, garbage, sizeof(garbage), now_ms);
	ha_sm_deliver(&nodes[0].sm, 2, garbage, 0, now_ms);
	h.seq = 1;
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_HEARTBEAT;
	m.heartbeat = &h;
	m.cluster = (char *)(uintptr_t)"test";
	m.version = HA_PROTO_MAX + 1;
	assert_int_equal(ha_msg_pack(&m, &buf, &len), 0);
	ha_sm_deliver(&nodes[0].sm, 2, buf, len, now_ms);
	free(buf);
	m.version = HA_PROTO_MAX;
	m.cluster = (char *)(uintptr_t)"other";
	assert_int_equal(ha_msg_pack(&m, &buf, &len), 0);
	ha_sm_deliver(&nodes[0].sm, 2, buf, len, now_ms);
	free(buf);
	/* a truncated real message */
	m.cluster = (char *)(uintptr_t)"test";
	assert_int_equal(ha_msg_pack(&m, &buf, &len), 0);
	ha_sm_deliver(&nodes[0].sm, 2, buf, len - 1, now_ms);
	free(buf);
	assert_true(nodes[0].sm.rejected_msgs >= rejected + 4);
	assert_int_equal(nodes[0].sm.doc->generation, gen);
	assert_int_equal(nodes[0].sm.phase, HA_PHASE_SYNCED);
}

static void test_codec_checks(void **state)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Sync s = ISERGW__HA__SYNC__INIT;
	uint32_t members[2] = { 2, 1 };
	uint8_t *buf;
	size_t len;
	HaMsg *out;
	char err[256];

	(void)state;
	m.version = 1;
	m.cluster = (char *)(uintptr_t)"c";
	/* no body */
	assert_int_equal(ha_msg_pack(&m, &buf, &len), 0);
	assert_int_equal(ha_msg_decode(buf, len, &out, err, sizeof(err)), -EINVAL);
	free(buf);
	/* members not ascending */
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_SYNC;
	m.sync = &s;
	s.protocol_min = 1;
	s.protocol_max = 1;
	s.members = members;
	s.n_members = 2;
	assert_int_equal(ha_msg_pack(&m, &buf, &len), 0);
	assert_int_equal(ha_msg_decode(buf, len, &out, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ascending"));
	free(buf);
	/* a sender that speaks only versions above ours */
	members[0] = 1;
	members[1] = 2;
	s.protocol_min = HA_PROTO_MAX + 1;
	s.protocol_max = HA_PROTO_MAX + 2;
	assert_int_equal(ha_msg_pack(&m, &buf, &len), 0);
	assert_int_equal(ha_msg_decode(buf, len, &out, err, sizeof(err)), -EPROTONOSUPPORT);
	free(buf);
	/* a newer sender that also speaks ours: accepted, and we speak the lowest max */
	s.protocol_min = 1;
	s.protocol_max = HA_PROTO_MAX + 1;
	assert_int_equal(ha_msg_pack(&m, &buf, &len), 0);
	assert_int_equal(ha_msg_decode(buf, len, &out, err, sizeof(err)), 0);
	ha_msg_free(out);
	free(buf);
}

static void test_version_negotiation(void **state)
{
	(void)state;
	/* every member speaks HA_PROTO_MAX: that is what the group speaks */
	for (int k = 0; k < N; k++)
		assert_int_equal(nodes[k].sm.proto, HA_PROTO_MAX);
}

/*
 * A slow disk: node 2's isergwd takes the new generations at once and its
 * lease goes on being renewed, but its Applied (and the generation its
 * heartbeats report) waits until the document is durable; a drain waits for
 * that. Two documents wait; the saver writes only the newest, which covers
 * both.
 */
static void test_applied_waits_for_the_disk(void **state)
{
	const struct ha_member *m2;
	uint64_t g0, lease, ng;
	int tgt;
	char err[256];
	int64_t id;

	(void)state;
	configure();
	g0 = nodes[1].sm.doc->generation;
	m2 = ha_sm_member(&nodes[0].sm, 2);
	assert_int_equal(m2->applied_gen, g0);
	nodes[1].slow_disk = true;
	id = ha_sm_submit_drain(&nodes[0].sm, "n3", true, false, err, sizeof(err));
	assert_true(id > 0);
	run_for(500);
	/*
	 * the drain (a generation), then dg3 leaving n3 (Transitioning:
	 * another one) once its new owner holds the drain: at once if that is
	 * n1, not while node 2's disk holds its Applied back if it is n2
	 */
	tgt = nodes[0].sm.target[ha_doc_find_dg(nodes[0].sm.doc, "dg3")];
	assert_true(tgt == 0 || tgt == 1);
	ng = tgt == 1 ? 1 : 2;
	assert_int_equal(nodes[1].sm.doc->generation, g0 + ng);
	assert_int_equal(nodes[1].sm.gw_applied_gen, g0 + ng);
	assert_int_equal(nodes[1].doc_seq, nodes[1].sm.stored_seq + ng);
	assert_int_equal(nodes[1].sm.napplied, ng); /* each generation once: the same answer again is not queued */
	assert_int_equal(m2->applied_gen, g0);
	assert_int_equal(ha_sm_member(&nodes[2].sm, 2)->applied_gen, g0);
	/* the promotion (or, for n2, the move itself: n3 serves on) waits for node 2 */
	assert_int_equal(owner_of(0, "dg3"), tgt == 1 ? 2 : -1);
	assert_true(nodes[0].done_id != (uint64_t)id);
	/* its lease does not wait for the disk */
	lease = nodes[1].lease;
	run_for(300);
	assert_true(nodes[1].lease > lease);
	assert_int_equal(owner_of(0, "dg3"), tgt == 1 ? 2 : -1);
	/* the disk catches up: one save, of the newest document, covers all */
	nodes[1].slow_disk = false;
	ha_sm_doc_stored(&nodes[1].sm, nodes[1].doc_seq);
	assert_int_equal(nodes[1].sm.napplied, 0);
	assert_int_equal(nodes[1].sm.told_gen, g0 + ng);
	settle();
	assert_true(m2->applied_gen >= g0 + ng);
	run_for(500);
	assert_true(owner_of(0, "dg3") == 0 || owner_of(0, "dg3") == 1);
	assert_int_equal(nodes[0].done_id, (uint64_t)id);
	assert_int_equal(nodes[0].done_status, 0);
	assert_one_ao();
}

/* Saves finish in order; an Applied waits for the document current when isergwd answered. */
static void test_applied_in_order_of_saves(void **state)
{
	const struct ha_member *m2;
	uint64_t g0, s0;
	char err[256];

	(void)state;
	configure();
	g0 = nodes[1].sm.doc->generation;
	m2 = ha_sm_member(&nodes[0].sm, 2);
	nodes[1].slow_disk = true;
	s0 = nodes[1].sm.stored_seq;
	/* a configuration change that moves nothing: one generation */
	assert_true(ha_sm_submit_config(&nodes[0].sm, config3_manual, g0, err, sizeof(err)) > 0);
	settle();
	assert_int_equal(nodes[1].sm.doc->generation, g0 + 1);
	assert_int_equal(nodes[1].doc_seq, s0 + 1);
	ha_sm_gw_applied(&nodes[1].sm, g0 + 1, 0, NULL, now_ms);
	assert_int_equal(nodes[1].sm.napplied, 1);
	assert_true(ha_sm_submit_config(&nodes[0].sm, config3, g0 + 1, err, sizeof(err)) > 0);
	settle();
	assert_int_equal(nodes[1].sm.doc->generation, g0 + 2);
	/* isergwd refuses the next one: its answer waits behind the first */
	ha_sm_gw_applied(&nodes[1].sm, g0 + 2, -EINVAL, "refused", now_ms);
	assert_int_equal(nodes[1].sm.napplied, 2);
	settle();
	assert_int_equal(m2->applied_gen, g0);
	/* the first save done: only the first Applied goes */
	ha_sm_doc_stored(&nodes[1].sm, s0 + 1);
	assert_int_equal(nodes[1].sm.napplied, 1);
	assert_int_equal(nodes[1].sm.told_gen, g0 + 1);
	settle();
	assert_int_equal(m2->applied_gen, g0 + 1);
	/* an older save reported late changes nothing */
	ha_sm_doc_stored(&nodes[1].sm, s0);
	assert_int_equal(nodes[1].sm.stored_seq, s0 + 1);
	assert_int_equal(nodes[1].sm.napplied, 1);
	/* isergwd lost: what waited is dropped, nothing is told */
	ha_sm_gw_lost(&nodes[1].sm);
	assert_int_equal(nodes[1].sm.napplied, 0);
	assert_int_equal(nodes[1].sm.told_gen, 0);
	nodes[1].slow_disk = false;
	run_for(500);
	assert_int_equal(m2->applied_gen, nodes[1].sm.doc->generation);
}

/* A whole-cluster restart: each node comes back with what it stored; the newest wins. */
static void test_restart_newest_generation_wins(void **state)
{
	char *text[N];
	struct ha_doc *d;
	char err[256];
	uint64_t newest;

	(void)state;
	configure();
	/* node 3 misses the last change (it is down), then everybody stops */
	nodes[2].up = false;
	text[2] = strdup(nodes[2].sm.doc->text);
	ha_sm_fini(&nodes[2].sm);
	membership();
	run_for(3000);
	assert_true(ha_sm_submit_drain(&nodes[0].sm, "n1", true, false, err, sizeof(err)) > 0);
	settle();
	run_for(500);
	newest = nodes[0].sm.doc->generation;
	text[0] = strdup(nodes[0].sm.doc->text);
	text[1] = strdup(nodes[1].sm.doc->text);
	for (int k = 0; k < 2; k++)
		ha_sm_fini(&nodes[k].sm);
	/* all three start again, from their stored documents */
	for (int k = 0; k < N; k++) {
		assert_int_equal(ha_doc_parse(text[k], &d, err, sizeof(err)), 0);
		start_node(k, d);
		free(text[k]);
	}
	membership();
	for (int k = 0; k < N; k++) {
		assert_int_equal(nodes[k].sm.phase, HA_PHASE_SYNCED);
		assert_true(nodes[k].sm.doc->generation >= newest);
		assert_true(nodes[k].sm.doc->drained[0]);
	}
}

/* The kind of change the last message on the bus carries (-1: not a change). */
static int last_change_kind(void)
{
	char err[256];
	HaMsg *m = NULL;
	int kind;

	assert_true(nbus > 0);
	assert_int_equal(ha_msg_decode(bus[nbus - 1].buf, bus[nbus - 1].len, &m, err, sizeof(err)),
			 0);
	kind = m->body_case == ISERGW__HA__GROUP_MSG__BODY_CHANGE ? (int)m->change->kind_case : -1;
	isergw__ha__group_msg__free_unpacked(m, NULL);
	return kind;
}

#define LUN3 "{\"path\":\"/tmp/test-ha-sm-3.img\",\"device_group\":\"dg1\"}"

/* One LUN added, then removed: a LunChange each, applied alike by every member, nothing moved. */
static void test_lun_change(void **state)
{
	const char *t = "iqn.2026-11.org.isergw:t";
	char err[512] = "";
	uint32_t lun = 99;
	uint64_t g0;
	int64_t id;

	(void)state;
	configure();
	g0 = nodes[0].sm.doc->generation;
	id = ha_sm_submit_lun(&nodes[1].sm, t, false, &lun, LUN3, 0, err, sizeof(err));
	if (id < 0)
		fail_msg("refused: %s", err);
	assert_int_equal(lun, 3);       /* the lowest free number */
	assert_int_equal(last_change_kind(), ISERGW__HA__CHANGE__KIND_LUN);
	settle();
	gw_apply_all();
	assert_int_equal(nodes[1].done_id, (uint64_t)id);
	assert_int_equal(nodes[1].done_status, 0);
	for (int k = 0; k < N; k++) {
		const struct ha_doc *d = nodes[k].sm.doc;

		assert_int_equal(d->generation, g0 + 1);
		assert_memory_equal(d->digest, nodes[0].sm.doc->digest, HA_DIGEST_LEN);
		assert_non_null(strstr(d->config_text, "test-ha-sm-3.img"));
		assert_string_equal(d->delta_target, t);
		assert_int_equal(d->delta_lun, 3);
		assert_int_equal(owner_of(k, "dg1"), 0);
	}
	/* refused before it is sent: a number in use, no such target, a bad LUN */
	lun = 3;
	assert_int_equal(ha_sm_submit_lun(&nodes[0].sm, t, true, &lun, LUN3, 0, err, sizeof(err)),
			 -EEXIST);
	assert_int_equal(ha_sm_submit_lun(&nodes[0].sm, "iqn.2026-11.org.isergw:none", true, &lun,
					  LUN3, 0, err, sizeof(err)), -ENOENT);
	lun = 4;
	assert_int_equal(ha_sm_submit_lun(&nodes[0].sm, t, true, &lun, "{\"path\": garbled", 0,
					  err, sizeof(err)), -EINVAL);
	assert_int_equal(ha_sm_submit_lun(&nodes[0].sm, t, true, &lun, LUN3, g0, err,
					  sizeof(err)), -ESTALE);
	assert_int_equal(nbus, 0);
	/* removed */
	lun = 3;
	id = ha_sm_submit_lun(&nodes[2].sm, t, true, &lun, NULL, 0, err, sizeof(err));
	assert_true(id > 0);
	assert_int_equal(last_change_kind(), ISERGW__HA__CHANGE__KIND_LUN);
	settle();
	gw_apply_all();
	assert_int_equal(nodes[2].done_status, 0);
	for (int k = 0; k < N; k++) {
		assert_int_equal(nodes[k].sm.doc->generation, g0 + 2);
		assert_null(strstr(nodes[k].sm.doc->config_text, "test-ha-sm-3.img"));
		assert_null(nodes[k].sm.doc->delta_lun_json);
	}
	assert_one_ao();
}

/* An agent of protocol 2 in the group: a LUN change goes as the whole configuration it makes. */
static void test_lun_change_protocol_2(void **state)
{
	char err[512] = "";
	uint32_t lun = 7;
	int64_t id;

	(void)state;
	configure();
	restart_older(1, 2);          /* node 2's agent restarts as an older one */
	gw_apply_all();
	for (int k = 0; k < N; k++)
		assert_int_equal(nodes[k].sm.proto, 2);
	id = ha_sm_submit_lun(&nodes[0].sm, "iqn.2026-11.org.isergw:t", true, &lun, LUN3, 0, err,
			      sizeof(err));
	if (id < 0)
		fail_msg("refused: %s", err);
	assert_int_equal(last_change_kind(), ISERGW__HA__CHANGE__KIND_CONFIG_JSON);
	settle();
	gw_apply_all();
	assert_int_equal(nodes[0].done_status, 0);
	for (int k = 0; k < N; k++) {
		assert_non_null(strstr(nodes[k].sm.doc->config_text, "test-ha-sm-3.img"));
		assert_memory_equal(nodes[k].sm.doc->digest, nodes[0].sm.doc->digest, HA_DIGEST_LEN);
	}
}


/* ---------------------------------------------------------------- the data plane's health */

/* Node k's isergwd dies and stays away (dead), or comes back (alive). */
static void gw_dies(int k)
{
	nodes[k].gw_dead = true;
	ha_sm_gw_lost(&nodes[k].sm);
}

static void gw_returns(int k)
{
	nodes[k].gw_dead = false;
}

/* Node k's isergwd reports a LUN of device group dg (NULL: none) serving no I/O. */
static void luns_failed(int k, const char *dg)
{
	struct ha_lun_fault f;

	memset(&f, 0, sizeof(f));
	snprintf(f.target, sizeof(f.target), "iqn.2026-11.org.isergw:t");
	f.lun = 0;
	snprintf(f.dg, sizeof(f.dg), "%s", dg ? dg : "");
	snprintf(f.state, sizeof(f.state), "offline");
	snprintf(f.reason, sizeof(f.reason), "its iscsi:// backend does not answer");
	ha_sm_gw_luns(&nodes[k].sm, dg ? 2 : 3, dg ? 1 : 0, &f, dg ? 1 : 0, now_ms);
}

/* Every up node agrees on dg's owner, which is Active/Optimized: that owner. */
static int agreed_owner(const char *dg)
{
	int o = -1;

	for (int k = 0; k < N; k++) {
		if (!nodes[k].up)
			continue;
		if (o < 0)
			o = owner_of(k, dg);
		assert_int_equal(owner_of(k, dg), o);
	}
	if (o >= 0)
		assert_int_equal(state_of(o == 0 ? 1 : 0, dg, o), ALUA_AO);
	return o;
}

/* How node k's data plane looks to node `seen_by`. */
static const char *dp_state(int seen_by, int k)
{
	const struct ha_member *m = ha_sm_member_by_name(&nodes[seen_by].sm, names[k]);

	assert_non_null(m);
	return ha_dp_state_name(&m->dp);
}

/*
 * isergwd dead on dg1's owner and kept down: the node keeps its groups
 * through the grace (a restart within it changes nothing), loses those
 * another node can serve once it is past, and gets dg1 back (failback
 * immediate) only once isergwd has served again for the grace.
 */
static void test_dp_dead_past_grace(void **state)
{
	int o;

	(void)state;
	configure();
	assert_string_equal(dp_state(1, 0), "healthy");
	gw_dies(0);
	run_for(LEASE - 3 * HB);
	assert_int_equal(agreed_owner("dg1"), 0);
	assert_string_equal(dp_state(1, 0), "down");
	run_for(6 * HB);
	assert_string_equal(dp_state(2, 0), "failed");
	o = agreed_owner("dg1");
	assert_true(o == 1 || o == 2);
	assert_int_equal(agreed_owner("dg2"), 1);
	assert_int_equal(agreed_owner("dg3"), 2);
	assert_one_ao();
	/* back, but not for the grace yet: dg1 stays away */
	gw_returns(0);
	run_for(LEASE / 2);
	assert_string_equal(dp_state(1, 0), "recovering");
	assert_int_equal(agreed_owner("dg1"), o);
	run_for(LEASE);
	assert_string_equal(dp_state(1, 0), "healthy");
	assert_int_equal(agreed_owner("dg1"), 0);
	assert_one_ao();
}

/* isergwd restarted within the grace: nothing moves. */
static void test_dp_restart_within_grace(void **state)
{
	uint64_t gen;

	(void)state;
	configure();
	gen = nodes[0].sm.doc->generation;
	gw_dies(0);
	run_for(LEASE / 2);
	gw_returns(0);
	run_for(2 * LEASE);
	assert_int_equal(agreed_owner("dg1"), 0);
	assert_int_equal(nodes[1].sm.doc->generation, gen);
}

/*
 * dg1's LUNs fail on its owner only (its backend unreachable from there):
 * dg1 moves to a node where they serve, the other groups stay; back once
 * they have served again on node 1 for the grace.
 */
static void test_dp_backend_failed_on_one_node(void **state)
{
	int o;

	(void)state;
	configure();
	luns_failed(0, "dg1");
	run_for(3 * HB);
	o = agreed_owner("dg1");
	assert_true(o == 1 || o == 2);
	assert_int_equal(agreed_owner("dg2"), 1);
	assert_int_equal(agreed_owner("dg3"), 2);
	assert_string_equal(dp_state(1, 0), "healthy");
	assert_one_ao();
	/* the new owner's LUNs of dg1 fail too, the third node's serve: there */
	luns_failed(o, "dg1");
	run_for(3 * HB);
	assert_int_equal(agreed_owner("dg1"), 3 - o);
	/* they serve again on node 1: back there once they have for the grace */
	luns_failed(0, NULL);
	run_for(LEASE / 2);
	assert_int_equal(agreed_owner("dg1"), 3 - o);
	run_for(LEASE);
	assert_int_equal(agreed_owner("dg1"), 0);
	assert_one_ao();
}

/* dg1's LUNs fail everywhere: nobody can do better, dg1 stays where it is. */
static void test_dp_backend_failed_everywhere(void **state)
{
	uint64_t gen;

	(void)state;
	configure();
	gen = nodes[0].sm.doc->generation;
	for (int k = N - 1; k >= 0; k--) {
		luns_failed(k, "dg1");
		run_for(2 * HB);
	}
	run_for(2 * LEASE);
	assert_int_equal(agreed_owner("dg1"), 0);
	assert_int_equal(nodes[0].sm.doc->generation, gen);
}

/*
 * No healthy node at all (every isergwd dead past the grace): every group
 * keeps an owner, the one it had. Then one node serves again: the groups
 * another node could not serve go there once it has for the grace.
 */
static void test_dp_no_healthy_node(void **state)
{
	(void)state;
	configure();
	for (int k = 0; k < N; k++)
		gw_dies(k);
	run_for(2 * LEASE);
	for (int k = 0; k < N; k++)
		assert_string_equal(dp_state(0, k), "failed");
	assert_int_equal(agreed_owner("dg1"), 0);
	assert_int_equal(agreed_owner("dg2"), 1);
	assert_int_equal(agreed_owner("dg3"), 2);
	gw_returns(1);
	run_for(LEASE + 3 * HB);
	assert_int_equal(agreed_owner("dg1"), 1);
	assert_int_equal(agreed_owner("dg2"), 1);
	assert_int_equal(agreed_owner("dg3"), 1);
}

/*
 * Hysteresis: an isergwd in a crash loop (down past the grace, then up and
 * down in turns shorter than the grace) costs its groups once; they do not
 * come back and go again with every turn. The same for LUNs that fail and
 * serve in turns.
 */
static void test_dp_hysteresis(void **state)
{
	uint64_t gen;
	int o;

	(void)state;
	configure();
	gw_dies(0);
	run_for(LEASE + 3 * HB);
	o = agreed_owner("dg1");
	assert_true(o == 1 || o == 2);
	gen = nodes[1].sm.doc->generation;
	for (int i = 0; i < 6; i++) {
		gw_returns(0);
		run_for(LEASE / 2);
		gw_dies(0);
		run_for(LEASE / 3);
		assert_int_equal(agreed_owner("dg1"), o);
	}
	assert_int_equal(nodes[1].sm.doc->generation, gen);
	gw_returns(0);
	run_for(LEASE + 3 * HB);
	assert_int_equal(agreed_owner("dg1"), 0);

	/* LUNs of dg2 failing and serving in turns on its owner: one move, no more */
	luns_failed(1, "dg2");
	run_for(3 * HB);
	o = agreed_owner("dg2");
	assert_true(o == 0 || o == 2);
	gen = nodes[1].sm.doc->generation;
	for (int i = 0; i < 6; i++) {
		luns_failed(1, NULL);
		run_for(LEASE / 2);
		luns_failed(1, "dg2");
		run_for(2 * HB);
		assert_int_equal(agreed_owner("dg2"), o);
	}
	assert_int_equal(nodes[1].sm.doc->generation, gen);
	luns_failed(1, NULL);
	run_for(LEASE + 3 * HB);
	assert_int_equal(agreed_owner("dg2"), 1);
}

/*
 * Before the cluster has a configuration the agents push nothing to their
 * isergwd: nothing to judge, no node fails, and the first configuration is
 * placed once, without moves after it.
 */
static void test_dp_no_configuration_yet(void **state)
{
	uint64_t gen;

	(void)state;
	for (int k = 0; k < N; k++)
		gw_dies(k);
	run_for(2 * LEASE);
	for (int k = 0; k < N; k++)
		assert_string_equal(dp_state(0, k), "healthy");
	for (int k = 0; k < N; k++)
		gw_returns(k);
	configure();
	gen = nodes[0].sm.doc->generation;
	run_for(2 * LEASE);
	assert_int_equal(nodes[0].sm.doc->generation, gen);
	assert_int_equal(agreed_owner("dg1"), 0);
	assert_int_equal(agreed_owner("dg2"), 1);
	assert_int_equal(agreed_owner("dg3"), 2);
}

/* An agent of protocol 3 says nothing of its data plane: taken as healthy. */
static void test_dp_older_agent(void **state)
{
	(void)state;
	configure();
	restart_older(2, 3);
	assert_int_equal(nodes[0].sm.proto, 3);
	assert_string_equal(dp_state(0, 2), "unknown");
	assert_int_equal(agreed_owner("dg3"), 2);
}

/* ------------------------------------------------------------ API tokens */

#define TOKEN_HASH "sha256:00112233445566778899aabbccddeeff:" \
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

/*
 * A token added through one node is in every node's document (its hash, the
 * same digest), revoked through another it is gone from all; what a member
 * would refuse never leaves.
 */
static void test_token_replicated(void **state)
{
	char err[512] = "";
	struct ha_token *t;
	size_t n;
	int64_t id;

	(void)state;
	configure();
	id = ha_sm_submit_token(&nodes[0].sm, "prom", "read-only", TOKEN_HASH, 1700000000, err,
				sizeof(err));
	if (id < 0)
		fail_msg("refused: %s", err);
	settle();
	gw_apply_all();
	assert_int_equal(nodes[0].done_status, 0);
	for (int k = 0; k < N; k++) {
		assert_true(ha_doc_has_token(nodes[k].sm.doc, "prom"));
		assert_memory_equal(nodes[k].sm.doc->digest, nodes[0].sm.doc->digest, HA_DIGEST_LEN);
		assert_int_equal(ha_doc_tokens(nodes[k].sm.doc, &t, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(t[0].name, "prom");
		assert_string_equal(t[0].role, "read-only");
		assert_string_equal(t[0].hash, TOKEN_HASH);
		assert_int_equal(t[0].created, 1700000000);
		free(t);
	}
	/* the same name again, a bad role, a bad hash, a bad name: refused before they leave */
	nbus = 0;
	assert_int_equal(ha_sm_submit_token(&nodes[1].sm, "prom", "admin", TOKEN_HASH, 1, err,
					    sizeof(err)), -EEXIST);
	assert_int_equal(ha_sm_submit_token(&nodes[1].sm, "x", "root", TOKEN_HASH, 1, err,
					    sizeof(err)), -EINVAL);
	assert_int_equal(ha_sm_submit_token(&nodes[1].sm, "x", "admin", "sha256:00:11", 1, err,
					    sizeof(err)), -EINVAL);
	assert_int_equal(ha_sm_submit_token(&nodes[1].sm, "-x", "admin", TOKEN_HASH, 1, err,
					    sizeof(err)), -EINVAL);
	assert_int_equal(ha_sm_submit_token(&nodes[1].sm, "nope", NULL, NULL, 0, err,
					    sizeof(err)), -ENOENT);
	assert_int_equal(nbus, 0);
	/* revoked through another node: gone everywhere */
	id = ha_sm_submit_token(&nodes[1].sm, "prom", NULL, NULL, 0, err, sizeof(err));
	if (id < 0)
		fail_msg("refused: %s", err);
	settle();
	gw_apply_all();
	assert_int_equal(nodes[1].done_status, 0);
	for (int k = 0; k < N; k++) {
		assert_false(ha_doc_has_token(nodes[k].sm.doc, "prom"));
		assert_null(strstr(nodes[k].sm.doc->text, "api_tokens"));
	}
}

/* A group that has a member speaking protocol 3 takes no token. */
static void test_token_protocol_3(void **state)
{
	char err[512] = "";

	(void)state;
	configure();
	restart_older(1, 3);
	gw_apply_all();
	assert_int_equal(ha_sm_submit_token(&nodes[0].sm, "prom", "admin", TOKEN_HASH, 1, err,
					    sizeof(err)), -EPROTONOSUPPORT);
	assert_non_null(strstr(err, "protocol 3"));
}

/* A TokenChange from a peer is checked before the state machine sees it. */
static void test_token_codec(void **state)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Change c = ISERGW__HA__CHANGE__INIT;
	Isergw__Ha__TokenChange tc = ISERGW__HA__TOKEN_CHANGE__INIT;
	static const struct {
		const char *name, *role, *hash;
		uint64_t created;
		uint32_t version;
		int rc;
	} cases[] = {
		{ "prom", "admin", TOKEN_HASH, 1, HA_PROTO_TOKENS, 0 },
		{ "prom", "", "", 0, HA_PROTO_TOKENS, 0 },                      /* a revoke */
		{ "prom", "admin", TOKEN_HASH, 1, 3, -EINVAL },                 /* too old a message */
		{ "prom", "root", TOKEN_HASH, 1, HA_PROTO_TOKENS, -EINVAL },
		{ "prom", "admin", "sha256:zz:zz", 1, HA_PROTO_TOKENS, -EINVAL },
		{ "prom", "admin", "secret", 1, HA_PROTO_TOKENS, -EINVAL },
		{ "", "admin", TOKEN_HASH, 1, HA_PROTO_TOKENS, -EINVAL },
		{ "a b", "admin", TOKEN_HASH, 1, HA_PROTO_TOKENS, -EINVAL },
		{ "prom", "", TOKEN_HASH, 0, HA_PROTO_TOKENS, -EINVAL },        /* a revoke with a hash */
		{ "../x", "", "", 0, HA_PROTO_TOKENS, -EINVAL },
	};
	char err[256];

	(void)state;
	m.cluster = (char *)(uintptr_t)"c";
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_CHANGE;
	m.change = &c;
	c.origin = 1;
	c.request_id = 1;
	c.base_generation = 1;
	c.kind_case = ISERGW__HA__CHANGE__KIND_TOKEN;
	c.token = &tc;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t *buf;
		size_t len;
		HaMsg *out = NULL;
		int rc;

		m.version = cases[i].version;
		tc.name = (char *)(uintptr_t)cases[i].name;
		tc.role = (char *)(uintptr_t)cases[i].role;
		tc.hash = (char *)(uintptr_t)cases[i].hash;
		tc.created = cases[i].created;
		assert_int_equal(ha_msg_pack(&m, &buf, &len), 0);
		err[0] = '\0';
		rc = ha_msg_decode(buf, len, &out, err, sizeof(err));
		if (rc != cases[i].rc)
			fail_msg("case %zu: %d (%s), expected %d", i, rc, err, cases[i].rc);
		if (rc)
			assert_non_null(strstr(err, "token"));
		ha_msg_free(out);
		free(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_barrier_and_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lun_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lun_change_protocol_2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_token_replicated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_token_protocol_3, setup, teardown),
		cmocka_unit_test(test_token_codec),
		cmocka_unit_test_setup_teardown(test_lease_from_heartbeat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_after_a_freeze, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_death, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failback_waits_for_the_new_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_owner_waits_for_its_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fenced_node_moves_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fenced_needs_protocol_2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_lease_on_a_map_naming_a_lost_owner, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_leases_end_before_a_lost_owner_moves, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rejoined_leader_waits_for_a_lease_it_did_not_see,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_restart_within_lease_changes_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_restart_renews_at_the_barrier, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_cluster_member, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partition, setup, teardown),
		cmocka_unit_test_setup_teardown(test_planned_move_goes_through_transitioning, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_move_without_an_isergwd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_move_waits_for_an_old_owner_that_left, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_move_waits_for_a_live_node_away, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_config_changes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_undrain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_of_the_last_serving_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_base_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_config_refused_before_sending, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_messages_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_version_negotiation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_newest_generation_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_moves_wait_for_a_settled_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_applied_waits_for_the_disk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_applied_in_order_of_saves, setup, teardown),
		cmocka_unit_test(test_codec_checks),
		cmocka_unit_test_setup_teardown(test_dp_dead_past_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dp_restart_within_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dp_backend_failed_on_one_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dp_backend_failed_everywhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dp_no_healthy_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dp_hysteresis, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dp_older_agent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dp_no_configuration_yet, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
