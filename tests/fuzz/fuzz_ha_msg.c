/* SPDX-License-Identifier: Apache-2.0 */
// LINK: ha_core
// COVERS: ha/sm.c ha/sm_lu.c ha/sm_dp.c ha/codec.c ha/placement.c
/*
 * isergw-ha's group messages and state machine (ha/codec.c, ha/sm.c,
 * ha/sm_lu.c, ha/sm_dp.c): node 1 ("n1") of a three-node cluster (the
 * document of tests/unit/test_ha_sm.c: nodes n1 n2 n3, device groups
 * dg1 dg2 dg3 owned by their preferred nodes, one target with three LUNs)
 * takes a sequence of events, every input from the same start (a new state
 * machine on that document, fake clock at 1000000 ms, no isergwd), and
 * everything is freed at the end.
 *
 * The input is a sequence of records, each
 *   kind (1 byte) | arg (1 byte) | length (2 bytes, little-endian) | payload
 * (a truncated last payload is taken as it is). The kinds (kind % EV_COUNT)
 * are what corosync, the local isergwd, the local API and the peers do:
 * a message delivered from node arg (the payload: a packed GroupMsg), one of
 * this node's own multicasts delivered back (CPG delivers a member's own
 * messages to it in the agreed order too: they wait in a queue until then),
 * time passing, the corosync ring, the CPG view and votequorum's verdict
 * (joins, leaves, partitions), isergwd taking a generation or going away,
 * isergwd's LUN faults, the saver thread catching up, the local API's
 * changes (configuration, LUN, drain, move, host move, token, fenced), and
 * the LU state (isergwd's proposals, LBA locks, its answers, parked UAs);
 * and two records where the harness writes a peer's messages with the real
 * encoder from mutated text: a Sync announcing a document and its State
 * (the fuzzer cannot make up a digest), and a Change of any kind.
 *
 * The outputs are captured by the ops below, which check what must hold
 * whatever the peers say: a lease is given only synchronised, quorate in
 * CPG's ring, with isergwd holding the current generation, and for no
 * longer than a lease; every document this node takes (and the one it holds
 * after each record) has its owners in range, at most one Active/Optimized
 * port group per device group, and parses back from its own text to the same
 * text and digest (what a restart loads from cluster.json; whole when its
 * configuration is new in the input, otherwise its text is checked canonical).
 *
 * An input whose first byte is 0xe0..0xff runs the whole cluster instead
 * (cluster_run below): the three state machines real, and the safety of
 * what the hosts see checked across the nodes.
 *
 * Seeds: messages the agents really send. Run with ISERGW_FUZZ_HA_SEEDS=DIR,
 * the target writes DIR/<scenario> instead of fuzzing: three real state
 * machines on an in-memory bus in CPG's agreed order (as the unit tests),
 * node 1 driven through the records above, the records being what node 1
 * saw (tests/fuzz/corpus/fuzz_ha_msg/README).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include <json-c/json.h>

#include "doc_priv.h"
#include "isergw_ctl.pb-c.h"
#include "sm.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NODES 3
#define LEASE 1500u
#define HB 100u
#define T0 1000000u
#define OWNQ 256u
#define LU_APPS 64u
#define MAX_RECORDS 1024u
#define IQN "iqn.2026-11.org.isergw:t"

enum ev {
	EV_MSG = 0,     /* arg: sender nodeid; payload: the message */
	EV_LOOP,        /* arg: how many of our own queued messages are delivered (0: 1) */
	EV_TICK,        /* arg: 10 ms steps */
	EV_CLOCK,       /* arg: 100 ms steps, the clock only (a frozen loop) */
	EV_RING,        /* payload: nodeids; arg bit 0: the same ring sequence */
	EV_VIEW,        /* payload: nodeids */
	EV_QUORUM,      /* arg bit 0 quorate, bit 1 an older ring; payload[0]: total votes */
	EV_GW_APPLIED,  /* arg bit 0: refused, bit 1: the generation before */
	EV_GW_LOST,
	EV_GW_LUNS,     /* payload: online, failed, then per fault: dg, lun, state */
	EV_STORED,      /* the saver caught up (arg bit 0: up to the one before) */
	EV_SUBMIT,      /* arg: which API call; payload: its arguments */
	EV_LU_PROPOSE,  /* arg: naa; payload: base, state length, state, events */
	EV_LU_LOCK,     /* arg: naa, bit 7 release; payload: lock index, lba, blocks */
	EV_LU_GW,       /* isergwd answers the oldest LU apply (arg: status) */
	EV_LU_GW_LOST,
	EV_LU_PARKED,   /* isergwd takes the UAs parked for it */
	EV_LU_PARK_OWN, /* arg: naa; payload: version, events */
	EV_PEER_DOC,    /* node arg's Sync announcing the payload's document, then its State */
	EV_PEER_CHANGE, /* node arg's Change on the current generation (payload: kind, arguments) */
	EV_COUNT
};

enum cev { CE_TICK = 0, CE_SIDES, CE_RESTART, CE_GW_APPLY, CE_GW_LOST, CE_DRAIN, CE_MOVE,
	   CE_HOST_MOVE, CE_CONFIG, CE_LUNS, CE_COUNT };

enum peer_change { PC_CONFIG = 0, PC_LUN, PC_TOKEN, PC_DRAIN, PC_MOVE, PC_PLACEMENT, PC_COUNT };

enum sub { SUB_CONFIG = 0, SUB_LUN, SUB_DRAIN, SUB_MOVE, SUB_HOST_MOVE, SUB_TOKEN, SUB_FENCED,
	   SUB_COUNT };

static const char *names[NODES] = { "n1", "n2", "n3" };
static const char *pick_node[] = { "n1", "n2", "n3", "n4", "" };
static const char *pick_dg[] = { "dg1", "dg2", "dg3", "dg4", "" };

static const char *config3 =
	"{\"nodes\":["
	"{\"name\":\"n1\",\"tpg_id\":1,\"portals\":[{\"url\":\"tcp://10.0.0.1:3260\",\"rel_port_id\":1}]},"
	"{\"name\":\"n2\",\"tpg_id\":2,\"portals\":[{\"url\":\"tcp://10.0.0.2:3260\",\"rel_port_id\":2}]},"
	"{\"name\":\"n3\",\"tpg_id\":3,\"portals\":[{\"url\":\"tcp://10.0.0.3:3260\",\"rel_port_id\":3}]}],"
	"\"device_groups\":["
	"{\"name\":\"dg1\",\"preferred_owner\":\"n1\"},"
	"{\"name\":\"dg2\",\"preferred_owner\":\"n2\"},"
	"{\"name\":\"dg3\",\"preferred_owner\":\"n3\",\"failback\":\"manual\"}],"
	"\"targets\":[{\"iqn\":\"" IQN "\",\"luns\":["
	"{\"lun\":0,\"path\":\"/var/lib/isergw/fz-0.img\",\"device_group\":\"dg1\"},"
	"{\"lun\":1,\"path\":\"/var/lib/isergw/fz-1.img\",\"device_group\":\"dg2\"},"
	"{\"lun\":2,\"path\":\"/var/lib/isergw/fz-2.img\",\"device_group\":\"dg3\"}]}]}";

static struct ha_doc *base_doc;         /* generation 2: config3, owned by the preferred nodes */

struct own {
	uint8_t *buf;
	size_t len;
};

struct lu_app {
	uint32_t origin;
	uint64_t proposal_id;
	uint8_t naa[16];
	uint64_t version;
};

/* node 1 and what its glue would hold */
static struct {
	struct ha_sm sm;
	bool live;
	uint64_t now;
	uint64_t ring_seq;
	uint64_t doc_seq, prev_doc_seq;
	struct own q[OWNQ];
	size_t qhead, nq;
	struct lu_app apps[LU_APPS];
	size_t napps;
	uint64_t proposal_id;
	char *checked_cfg;              /* a configuration text that parsed back whole */
} F;

/* the seed generator (NULL while fuzzing): see the end of the file */
struct gen;
static struct gen *G;
static void gen_sent(const HaMsg *m);

/* ------------------------------------------------------------ invariants */

static void die(const char *what)
{
	fprintf(stderr, "fuzz_ha_msg: invariant broken: %s\n", what);
	abort();
}

/* What every document must be, whoever made it. */
static void check_doc(const struct ha_doc *d, bool reparse)
{
	struct ha_alua_entry e[HA_NODES_MAX];
	uint8_t dig[HA_DIGEST_LEN];

	if (d->nnodes > HA_NODES_MAX || d->ndgs > HA_DGS_MAX)
		die("too many nodes or device groups");
	for (size_t g = 0; g < d->ndgs; g++) {
		int ao = 0;

		if (d->owner[g] < -1 || d->owner[g] >= (int)d->nnodes)
			die("an owner out of range");
		if (d->moving_from[g] < -1 || d->moving_from[g] >= (int)d->nnodes)
			die("a moving_from out of range");
		ha_alua_states(d, (int)g, e);
		for (size_t n = 0; n < d->nnodes; n++)
			ao += e[n].state == 0;
		if (ao > 1)
			die("two port groups Active/Optimized for one device group");
	}
	if (!d->text || strlen(d->text) != d->text_len)
		die("a document without its text");
	SHA256((const unsigned char *)d->text, d->text_len, dig);
	if (memcmp(dig, d->digest, sizeof(dig)))
		die("a digest that is not its text's");
	if (reparse && F.checked_cfg && !strcmp(F.checked_cfg, d->config_text)) {
		/* the configuration parsed back already: the text is canonical JSON */
		struct json_object *o = NULL;
		char err[512], *t;
		size_t len;
		int rc;

		if (ha_json_parse(d->text, "document", &o, err, sizeof(err)))
			die("a document's text that is no JSON");
		t = ha_json_canon(o, &len, &rc);
		json_object_put(o);
		if (t && (len != d->text_len || memcmp(t, d->text, len)))
			die("a document's text that is not canonical");
		free(t);
	} else if (reparse) {
		struct ha_doc *p = NULL;
		char err[512];
		int rc = ha_doc_parse(d->text, &p, err, sizeof(err));

		if (rc == -ENOMEM)
			return;
		if (rc) {
			fprintf(stderr, "fuzz_ha_msg: generation %llu does not parse back: %s\n",
				(unsigned long long)d->generation, err);
			die("a document that does not parse back");
		}
		if (p->generation != d->generation || p->text_len != d->text_len ||
		    memcmp(p->text, d->text, d->text_len))
			die("a document whose text parses to another text");
		ha_doc_free(p);
		free(F.checked_cfg);
		F.checked_cfg = strdup(d->config_text);
	}
}

/* ------------------------------------------------------------ node 1's ops */

static int op_send(void *ctx, const HaMsg *m)
{
	uint8_t *buf;
	size_t len;
	int rc;

	(void)ctx;
	rc = ha_msg_pack(m, &buf, &len);
	if (rc)
		return rc;
	if (G)
		gen_sent(m);
	if (F.nq == OWNQ) {
		/* a queue that long: the oldest is lost (CPG would have delivered it) */
		free(F.q[F.qhead].buf);
		F.qhead = (F.qhead + 1) % OWNQ;
		F.nq--;
	}
	F.q[(F.qhead + F.nq++) % OWNQ] = (struct own){ .buf = buf, .len = len };
	return 0;
}

static void op_doc_changed(void *ctx, const struct ha_doc *d, uint64_t seq)
{
	(void)ctx;
	if (seq <= F.doc_seq)
		die("document sequence numbers that do not increase");
	F.prev_doc_seq = F.doc_seq;
	F.doc_seq = seq;
	check_doc(d, true);
}

static void op_lease(void *ctx, uint64_t expires)
{
	const struct ha_sm *sm = &F.sm;

	(void)ctx;
	if (sm->phase != HA_PHASE_SYNCED || !sm->quorate || sm->q_ring_seq != sm->ring_seq)
		die("a lease given unsynchronised or without quorum in CPG's ring");
	if (!sm->gw_applied_any || sm->gw_applied_gen != sm->doc->generation)
		die("a lease given while isergwd does not hold the current generation");
	if (expires <= F.now || expires > F.now + sm->lease_ms)
		die("a lease that is over or longer than a lease");
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
	(void)err;
	(void)gen;
	if (status > 0)
		die("a change answered with a positive status");
}

static void op_applied(void *ctx)
{
	(void)ctx;
}

static void op_lu_apply(void *ctx, const uint8_t naa[16], uint64_t version, const uint8_t *state,
			size_t len, const uint8_t *events, size_t evlen, uint32_t origin,
			uint64_t proposal_id)
{
	struct lu_app *a;

	(void)ctx;
	(void)state;
	(void)len;
	(void)events;
	(void)evlen;
	if (F.napps == LU_APPS) {
		memmove(&F.apps[0], &F.apps[1], (LU_APPS - 1) * sizeof(F.apps[0]));
		F.napps--;
	}
	a = &F.apps[F.napps++];
	a->origin = origin;
	a->proposal_id = proposal_id;
	memcpy(a->naa, naa, 16);
	a->version = version;
}

static void op_lu_done(void *ctx, uint64_t id, int status, const char *why)
{
	(void)ctx;
	(void)id;
	(void)why;
	if (status > 0)
		die("an LU proposal answered with a positive status");
}

static void op_lu_store(void *ctx)
{
	(void)ctx;
}

static void op_lu_handover(void *ctx)
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
	.lu_apply = op_lu_apply,
	.lu_done = op_lu_done,
	.lu_store = op_lu_store,
	.lu_handover = op_lu_handover,
};

/* ------------------------------------------------------------ the start */

static struct ha_doc *start_doc(void)
{
	struct ha_doc *d = NULL;

	/* a copy of the base (generation 3): no validation per input */
	if (ha_doc_with_runtime(base_doc, base_doc->owner, base_doc->moving_from, base_doc->live,
				&d))
		abort();
	return d;
}

static void fz_start(void)
{
	struct ha_sm_params p = {
		.nodeid = 1, .name = "n1", .cluster = "fz", .lease_ms = LEASE, .heartbeat_ms = HB,
	};

	memset(&F, 0, sizeof(F));
	F.now = T0;
	F.ring_seq = 4;
	if (ha_sm_init(&F.sm, &p, &ops, NULL, start_doc(), F.now))
		abort();
	for (uint32_t i = 0; i < NODES; i++)
		ha_sm_set_name(&F.sm, i + 1, names[i]);
	F.live = true;
	F.checked_cfg = strdup(base_doc->config_text);  /* checked whole when it was made */
}

static void fz_stop(void)
{
	/* parsed back when it came (op_doc_changed), or the start document */
	check_doc(F.sm.doc, false);
	ha_sm_fini(&F.sm);
	for (size_t i = 0; i < F.nq; i++)
		free(F.q[(F.qhead + i) % OWNQ].buf);
	F.nq = 0;
	F.live = false;
	free(F.checked_cfg);
	F.checked_cfg = NULL;
}

/* ------------------------------------------------------------ the records */

static uint8_t byte_at(const uint8_t *p, size_t len, size_t i)
{
	return i < len ? p[i] : 0;
}

static void naa_of(uint8_t arg, uint8_t naa[16])
{
	for (int i = 0; i < 16; i++)
		naa[i] = (uint8_t)(0x60 + i);
	naa[15] = arg & 3;              /* four LUs */
	if (arg & 0x40)
		naa[0] = 0x20;          /* not an NAA */
}

/* The strings s0 NUL s1 NUL s2 of a payload (NUL-terminated copies in buf). */
static size_t split(const uint8_t *p, size_t len, char *buf, size_t cap, const char **out,
		    size_t max)
{
	size_t n = 0, k = 0;

	if (len >= cap)
		len = cap - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	while (n < max) {
		out[n++] = buf + k;
		k += strlen(buf + k);
		if (k >= len)
			break;
		k++;
	}
	for (size_t i = n; i < max; i++)
		out[i] = "";
	return n;
}

static void members_of(const uint8_t *p, size_t len, uint32_t *ids, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < len && *n < HA_MAX_MEMBERS + 1; i++)
		ids[(*n)++] = p[i];
}

static void do_submit(uint8_t arg, const uint8_t *p, size_t len)
{
	char err[512], buf[4096];
	const char *s[3];
	uint8_t a = byte_at(p, len, 0), b = byte_at(p, len, 1);

	switch ((arg & 0x7f) % SUB_COUNT) {
	case SUB_CONFIG:
		split(p, len, buf, sizeof(buf), s, 1);
		(void)ha_sm_submit_config(&F.sm, s[0], F.sm.doc->generation - (arg >> 7), err,
					  sizeof(err));
		break;
	case SUB_LUN: {
		uint32_t lun = a;

		/* flags, number, then "iqn" NUL "lun json" (empty: remove) */
		split(len > 2 ? p + 2 : p, len > 2 ? len - 2 : 0, buf, sizeof(buf), s, 2);
		(void)ha_sm_submit_lun(&F.sm, s[0][0] ? s[0] : IQN, arg & 0x80, &lun,
				       s[1][0] ? s[1] : NULL, F.sm.doc->generation, err,
				       sizeof(err));
		(void)b;
		break;
	}
	case SUB_DRAIN:
		(void)ha_sm_submit_drain(&F.sm, pick_node[a % 5], b & 1, b & 2, err, sizeof(err));
		break;
	case SUB_MOVE:
		(void)ha_sm_submit_move(&F.sm, pick_dg[a % 5], pick_node[b % 5], err, sizeof(err));
		break;
	case SUB_HOST_MOVE:
		(void)ha_sm_submit_host_move(&F.sm, pick_dg[a % 5], pick_node[b % 5], F.now, err,
					     sizeof(err));
		break;
	case SUB_TOKEN:
		/* name NUL role (empty: revoke) NUL hash */
		split(p, len, buf, sizeof(buf), s, 3);
		(void)ha_sm_submit_token(&F.sm, s[0], s[1][0] ? s[1] : NULL, s[2], 1764300000, err,
					 sizeof(err));
		break;
	case SUB_FENCED:
		(void)ha_sm_submit_fenced(&F.sm, pick_node[a % 5], err, sizeof(err));
		break;
	}
}

static void do_gw_luns(const uint8_t *p, size_t len)
{
	struct ha_lun_fault f[4];
	size_t n = 0;

	memset(f, 0, sizeof(f));
	for (size_t i = 2; i + 2 < len && n < 4; i += 3, n++) {
		snprintf(f[n].target, sizeof(f[n].target), "%s", IQN);
		f[n].lun = p[i + 1];
		snprintf(f[n].dg, sizeof(f[n].dg), "%s", pick_dg[p[i] % 5]);
		snprintf(f[n].state, sizeof(f[n].state), "%s", p[i + 2] & 1 ? "offline" : "failed");
		snprintf(f[n].reason, sizeof(f[n].reason), "I/O error");
	}
	ha_sm_gw_luns(&F.sm, byte_at(p, len, 0), byte_at(p, len, 1), f, n, F.now);
}

static void do_lu_gw(uint8_t arg)
{
	struct lu_app a;

	if (!F.napps)
		return;
	a = F.apps[0];
	memmove(&F.apps[0], &F.apps[1], (F.napps - 1) * sizeof(F.apps[0]));
	F.napps--;
	ha_sm_lu_gw_applied(&F.sm, a.origin, a.proposal_id, a.naa, a.version,
			    arg ? -(int)(arg % 128) : 0);
}

static void do_lu_parked(void)
{
	struct ha_lu_parked out[16];

	for (size_t i = 0; i < F.sm.lus.n; i++) {
		uint8_t naa[16];
		uint64_t upto = 0;
		size_t n = ha_sm_lu_parked_for(&F.sm, i, out, 16);

		if (!n)
			continue;
		for (size_t k = 0; k < n; k++)
			if (out[k].version > upto)
				upto = out[k].version;
		memcpy(naa, F.sm.lus.v[i].naa, 16);
		ha_sm_lu_parked_taken(&F.sm, naa, upto);
		return;         /* the table may have changed */
	}
}

/* m from node `from`, packed with the real encoder and delivered. */
static void peer_deliver(uint32_t from, HaMsg *m)
{
	uint8_t *buf;
	size_t len;

	m->version = F.sm.proto;
	m->cluster = (char *)(uintptr_t)"fz";
	if (ha_msg_pack(m, &buf, &len))
		return;
	ha_sm_deliver(&F.sm, from, buf, len, F.now);
	free(buf);
}

/*
 * A peer holding the document text: its Sync for the current view (the
 * generation and digest the text parses to, or its SHA-256 as it is), then
 * its State. The fuzzer cannot forge a digest; this way any text reaches
 * the adoption of the winner's document.
 */
static void do_peer_doc(uint8_t from, const uint8_t *p, size_t len)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Sync sy = ISERGW__HA__SYNC__INIT;
	Isergw__Ha__State st = ISERGW__HA__STATE__INIT;
	uint8_t dig[HA_DIGEST_LEN];
	struct ha_doc *d = NULL;
	char err[256], *text = malloc(len + 1);
	uint64_t gen;

	if (!text)
		return;
	memcpy(text, p, len);
	text[len] = '\0';
	if (ha_doc_parse(text, &d, err, sizeof(err)) == 0) {
		gen = d->generation;
		memcpy(dig, d->digest, sizeof(dig));
		ha_doc_free(d);
	} else {
		gen = F.sm.doc->generation + 1;
		SHA256((const unsigned char *)text, len, dig);
	}
	sy.ring_seq = F.sm.ring_seq;
	sy.ring_node = F.sm.ring_node;
	sy.generation = gen;
	sy.digest.data = dig;
	sy.digest.len = sizeof(dig);
	sy.protocol_min = HA_PROTO_MIN;
	sy.protocol_max = HA_PROTO_MAX;
	sy.node_name = (char *)(uintptr_t)(from >= 1 && from <= NODES ? names[from - 1] : "");
	sy.lease_ms = LEASE;
	sy.members = F.sm.view;
	sy.n_members = F.sm.nview;
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_SYNC;
	m.sync = &sy;
	peer_deliver(from, &m);
	st.ring_seq = F.sm.ring_seq;
	st.generation = gen;
	st.doc_json = text;
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_STATE;
	m.state = &st;
	peer_deliver(from, &m);
	free(text);
}

/* A Change of node `from` based on the current generation: JSON and names mutate freely. */
static void do_peer_change(uint8_t from, const uint8_t *p, size_t len)
{
	HaMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Change c = ISERGW__HA__CHANGE__INIT;
	Isergw__Ha__LunChange lun = ISERGW__HA__LUN_CHANGE__INIT;
	Isergw__Ha__TokenChange tok = ISERGW__HA__TOKEN_CHANGE__INIT;
	Isergw__Ha__NodeDrain dr = ISERGW__HA__NODE_DRAIN__INIT;
	Isergw__Ha__DgMove mv = ISERGW__HA__DG_MOVE__INIT;
	Isergw__Ha__Placement pl = ISERGW__HA__PLACEMENT__INIT;
	Isergw__Ha__DgOwner own[8], *ownp[8];
	char *live[HA_NODES_MAX];
	char buf[8192];
	const char *s[24];
	uint8_t kind = len ? p[0] : 0;

	split(len ? p + 1 : p, len ? len - 1 : 0, buf, sizeof(buf), s, 24);
	c.origin = from;
	c.request_id = 1;
	c.base_generation = F.sm.doc->generation - ((kind & 0x80) && F.sm.doc->generation);
	switch ((kind & 0x7f) % PC_COUNT) {
	case PC_CONFIG:
		c.kind_case = ISERGW__HA__CHANGE__KIND_CONFIG_JSON;
		c.config_json = (char *)(uintptr_t)s[0];
		break;
	case PC_LUN:
		/* target NUL number NUL lun json */
		c.kind_case = ISERGW__HA__CHANGE__KIND_LUN;
		c.lun = &lun;
		lun.target = (char *)(uintptr_t)s[0];
		lun.lun = (uint32_t)strtoul(s[1], NULL, 10);
		lun.lun_json = (char *)(uintptr_t)s[2];
		break;
	case PC_TOKEN:
		c.kind_case = ISERGW__HA__CHANGE__KIND_TOKEN;
		c.token = &tok;
		tok.name = (char *)(uintptr_t)s[0];
		tok.role = (char *)(uintptr_t)s[1];
		tok.hash = (char *)(uintptr_t)s[2];
		tok.created = 1764300000;
		break;
	case PC_DRAIN:
		c.kind_case = ISERGW__HA__CHANGE__KIND_DRAIN;
		c.drain = &dr;
		dr.node = (char *)(uintptr_t)s[0];
		dr.drained = s[1][0] == '1';
		break;
	case PC_MOVE:
		c.kind_case = ISERGW__HA__CHANGE__KIND_MOVE;
		c.move = &mv;
		mv.device_group = (char *)(uintptr_t)s[0];
		mv.node = (char *)(uintptr_t)s[1];
		break;
	case PC_PLACEMENT:
		/* (dg NUL owner NUL moving_from NUL) x up to 4, then the live nodes */
		c.kind_case = ISERGW__HA__CHANGE__KIND_PLACEMENT;
		c.placement = &pl;
		for (size_t i = 0; i < 4 && s[3 * i][0]; i++) {
			isergw__ha__dg_owner__init(&own[i]);
			own[i].device_group = (char *)(uintptr_t)s[3 * i];
			own[i].node = (char *)(uintptr_t)s[3 * i + 1];
			own[i].moving_from = (char *)(uintptr_t)s[3 * i + 2];
			ownp[i] = &own[i];
			pl.n_owners++;
		}
		pl.owners = ownp;
		for (size_t i = 12; i < 24 && s[i][0]; i++)
			live[pl.n_live++] = (char *)(uintptr_t)s[i];
		pl.live = live;
		break;
	}
	m.body_case = ISERGW__HA__GROUP_MSG__BODY_CHANGE;
	m.change = &c;
	peer_deliver(from, &m);
}

static void record(uint8_t kind, uint8_t arg, const uint8_t *p, size_t len)
{
	struct ha_sm *sm = &F.sm;
	uint32_t ids[HA_MAX_MEMBERS + 1];
	uint8_t naa[16];
	char err[256];
	size_t n;

	switch (kind % EV_COUNT) {
	case EV_MSG:
		ha_sm_deliver(sm, arg, p, len, F.now);
		break;
	case EV_LOOP:
		for (unsigned int i = 0; i < (arg ? arg : 1u) && F.nq; i++) {
			struct own o = F.q[F.qhead];

			F.qhead = (F.qhead + 1) % OWNQ;
			F.nq--;
			ha_sm_deliver(sm, sm->nodeid, o.buf, o.len, F.now);
			free(o.buf);
		}
		break;
	case EV_TICK:
		F.now += 10u * arg;
		ha_sm_tick(sm, F.now);
		break;
	case EV_CLOCK:
		F.now += 100u * arg;
		ha_sm_clock(sm, F.now);
		break;
	case EV_RING:
		if (!(arg & 1))
			F.ring_seq += 4;
		members_of(p, len, ids, &n);
		ha_sm_ring(sm, F.ring_seq, n ? ids[0] : 0, ids, n, F.now);
		break;
	case EV_VIEW:
		members_of(p, len, ids, &n);
		ha_sm_view(sm, ids, n, F.now);
		break;
	case EV_QUORUM:
		ha_sm_quorum(sm, arg & 1, arg & 2 ? F.ring_seq - 4 : F.ring_seq, sm->ring_node,
			     NODES, byte_at(p, len, 0), F.now);
		break;
	case EV_GW_APPLIED:
		ha_sm_gw_applied(sm, sm->doc->generation - ((arg & 2) && sm->doc->generation),
				 arg & 1 ? -EINVAL : 0, arg & 1 ? "targets[0]: refused" : NULL,
				 F.now);
		break;
	case EV_GW_LOST:
		ha_sm_gw_lost(sm);
		ha_sm_lu_gw_lost(sm);
		F.napps = 0;
		break;
	case EV_GW_LUNS:
		do_gw_luns(p, len);
		break;
	case EV_STORED:
		ha_sm_doc_stored(sm, arg & 1 ? F.prev_doc_seq : F.doc_seq);
		break;
	case EV_SUBMIT:
		do_submit(arg, p, len);
		break;
	case EV_LU_PROPOSE: {
		size_t slen = byte_at(p, len, 1);
		const uint8_t *st = len > 2 ? p + 2 : p;
		size_t rest = len > 2 ? len - 2 : 0;

		if (slen > rest)
			slen = rest;
		naa_of(arg, naa);
		(void)ha_sm_lu_propose(sm, ++F.proposal_id, naa, byte_at(p, len, 0), st, slen,
				       st + slen, rest - slen, err, sizeof(err));
		break;
	}
	case EV_LU_LOCK:
		naa_of(arg, naa);
		(void)ha_sm_lu_lock(sm, 1000u + byte_at(p, len, 0), naa, byte_at(p, len, 1),
				    byte_at(p, len, 2), arg & 0x80, err, sizeof(err));
		break;
	case EV_LU_GW:
		do_lu_gw(arg);
		break;
	case EV_LU_GW_LOST:
		ha_sm_lu_gw_lost(sm);
		F.napps = 0;
		break;
	case EV_LU_PARKED:
		do_lu_parked();
		break;
	case EV_LU_PARK_OWN:
		naa_of(arg, naa);
		ha_sm_lu_park_own(sm, naa, byte_at(p, len, 0), len ? p + 1 : p, len ? len - 1 : 0);
		break;
	case EV_PEER_DOC:
		do_peer_doc(arg, p, len);
		break;
	case EV_PEER_CHANGE:
		do_peer_change(arg, p, len);
		break;
	}
	check_doc(sm->doc, false);
}

/* ------------------------------------------------------------ libFuzzer */

static void gen_seeds(const char *dir);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct ha_doc *empty = NULL, *d1 = NULL;
	const char *seeds = getenv("ISERGW_FUZZ_HA_SEEDS");
	char err[512];
	int owner[3] = { 0, 1, 2 };

	(void)argc;
	(void)argv;
	gw_log_set_level(seeds ? GW_LOG_WARN : GW_LOG_ERR);
	if (ha_doc_empty(&empty) || ha_doc_with_config(empty, config3, &d1, err, sizeof(err)) ||
	    ha_doc_with_owners(d1, owner, &base_doc)) {
		fprintf(stderr, "fuzz_ha_msg: the start document: %s\n", err);
		abort();
	}
	ha_doc_free(empty);
	ha_doc_free(d1);
	if (seeds) {
		gen_seeds(seeds);
		exit(0);
	}
	return 0;
}

static void cluster_run(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	if (size && (data[0] & 0xe0) == 0xe0) {
		cluster_run(data + 1, size - 1);
		return 0;
	}
	fz_start();
	for (unsigned int r = 0; r < MAX_RECORDS && off + 4 <= size; r++) {
		size_t len = (size_t)data[off + 2] | (size_t)data[off + 3] << 8;
		uint8_t kind = data[off], arg = data[off + 1];

		off += 4;
		if (len > size - off)
			len = size - off;
		record(kind, arg, data + off, len);
		off += len;
	}
	fz_stop();
	return 0;
}

/* ------------------------------------------------------------ the seeds */

/*
 * Nodes 2 and 3 are real state machines too; every multicast goes on a bus
 * delivered in one order to every member on the sender's side, as CPG does.
 * What node 1 sees is written as records (and run through record(), so the
 * file replays exactly).
 */
struct peer {
	struct ha_sm sm;
	bool up;
	uint64_t doc_seq;
	struct lu_app apps[LU_APPS];
	size_t napps;
};

struct bmsg {
	uint32_t from;
	uint8_t *buf;
	size_t len;
};

struct gen {
	struct peer p[NODES];           /* [0] unused: node 1 is F */
	int side[NODES];                /* partitions: nodes see those on their side */
	struct bmsg bus[4096];
	size_t nbus;
	uint8_t *out;
	size_t len, cap;
	bool failed;
};

static void gen_put(uint8_t kind, uint8_t arg, const void *p, size_t len)
{
	struct gen *g = G;

	if (g->len + 4 + len > g->cap) {
		size_t cap = (g->len + 4 + len) * 2;
		uint8_t *n = realloc(g->out, cap);

		if (!n)
			abort();
		g->out = n;
		g->cap = cap;
	}
	g->out[g->len++] = kind;
	g->out[g->len++] = arg;
	g->out[g->len++] = (uint8_t)len;
	g->out[g->len++] = (uint8_t)(len >> 8);
	if (len)
		memcpy(g->out + g->len, p, len);
	g->len += len;
}

/* Node 1 does this: written down, then done. */
static void ev(uint8_t kind, uint8_t arg, const void *p, size_t len)
{
	if (len > 0xffff)
		abort();
	gen_put(kind, arg, p, len);
	record(kind, arg, p, len);
}

static void bus_put(uint32_t from, const HaMsg *m)
{
	struct gen *g = G;
	struct bmsg *b;

	if (g->nbus == sizeof(g->bus) / sizeof(g->bus[0]))
		abort();
	b = &g->bus[g->nbus++];
	b->from = from;
	if (ha_msg_pack(m, &b->buf, &b->len))
		abort();
}

static void gen_sent(const HaMsg *m)
{
	bus_put(1, m);
}

static int peer_send(void *ctx, const HaMsg *m)
{
	struct peer *p = ctx;

	bus_put(p->sm.nodeid, m);
	return 0;
}

static void peer_doc_changed(void *ctx, const struct ha_doc *d, uint64_t seq)
{
	struct peer *p = ctx;

	(void)d;
	p->doc_seq = seq;
}

static void peer_lease(void *ctx, uint64_t expires)
{
	(void)ctx;
	(void)expires;
}

static void peer_step_down(void *ctx, const char *reason)
{
	(void)ctx;
	(void)reason;
}

static void peer_change_done(void *ctx, uint64_t id, int status, const char *err, uint64_t gen)
{
	(void)ctx;
	(void)gen;
	if (status)
		fprintf(stderr, "gen: change %llu of a peer: %d %s\n", (unsigned long long)id,
			status, err ? err : "");
}

static void peer_lu_apply(void *ctx, const uint8_t naa[16], uint64_t version,
			  const uint8_t *state, size_t len, const uint8_t *events, size_t evlen,
			  uint32_t origin, uint64_t proposal_id)
{
	struct peer *p = ctx;
	struct lu_app *a;

	(void)state;
	(void)len;
	(void)events;
	(void)evlen;
	if (p->napps == LU_APPS)
		abort();
	a = &p->apps[p->napps++];
	a->origin = origin;
	a->proposal_id = proposal_id;
	memcpy(a->naa, naa, 16);
	a->version = version;
}

static const struct ha_sm_ops peer_ops = {
	.send = peer_send,
	.doc_changed = peer_doc_changed,
	.lease = peer_lease,
	.step_down = peer_step_down,
	.change_done = peer_change_done,
	.applied = op_applied,
	.lu_apply = peer_lu_apply,
	.lu_done = op_lu_done,
	.lu_store = op_lu_store,
	.lu_handover = op_lu_handover,
};

static bool up(int k)
{
	return k == 0 ? true : G->p[k].up;
}

static bool together(int a, int b)
{
	return up(a) && up(b) && G->side[a] == G->side[b];
}

/* Deliver what is on the bus (and what that makes) to every member on the sender's side. */
static void settle(void)
{
	struct gen *g = G;

	for (int round = 0; round < 100 && g->nbus; round++) {
		struct bmsg batch[4096];
		size_t n = g->nbus;

		memcpy(batch, g->bus, n * sizeof(batch[0]));
		g->nbus = 0;
		for (size_t i = 0; i < n; i++) {
			int from = (int)batch[i].from - 1;

			for (int k = 0; k < NODES; k++) {
				if (!together(from, k))
					continue;
				if (k == 0 && from == 0)
					ev(EV_LOOP, 1, NULL, 0);
				else if (k == 0)
					ev(EV_MSG, (uint8_t)batch[i].from, batch[i].buf, batch[i].len);
				else
					ha_sm_deliver(&g->p[k].sm, batch[i].from, batch[i].buf,
						      batch[i].len, F.now);
			}
			free(batch[i].buf);
		}
		/* the peers' savers and isergwds keep up */
		for (int k = 1; k < NODES; k++) {
			struct peer *p = &g->p[k];

			if (!p->up)
				continue;
			ha_sm_doc_stored(&p->sm, p->doc_seq);
			for (size_t i = 0; i < p->napps; i++)
				ha_sm_lu_gw_applied(&p->sm, p->apps[i].origin, p->apps[i].proposal_id,
						    p->apps[i].naa, p->apps[i].version, 0);
			p->napps = 0;
		}
		if (F.doc_seq > F.sm.stored_seq)
			ev(EV_STORED, 0, NULL, 0);
		while (F.napps)
			ev(EV_LU_GW, 0, NULL, 0);
	}
}

/* Every isergwd takes its agent's generation. */
static void gw_apply_all(void)
{
	ev(EV_GW_APPLIED, 0, NULL, 0);
	for (int k = 1; k < NODES; k++)
		if (G->p[k].up)
			ha_sm_gw_applied(&G->p[k].sm, G->p[k].sm.doc->generation, 0, NULL, F.now);
	settle();
}

static void run_for(unsigned int ms)
{
	for (unsigned int t = 0; t < ms; t += HB) {
		ev(EV_TICK, HB / 10, NULL, 0);
		for (int k = 1; k < NODES; k++)
			if (G->p[k].up)
				ha_sm_tick(&G->p[k].sm, F.now);
		settle();
		gw_apply_all();
	}
}

/* Ring, view and quorum on each side, as corosync gives them. */
static void membership(void)
{
	uint32_t ids[2][NODES];
	uint8_t ids8[NODES], votes;
	size_t n[2] = { 0, 0 };
	uint64_t ring;

	for (int k = 0; k < NODES; k++)
		if (up(k))
			ids[G->side[k]][n[G->side[k]]++] = (uint32_t)k + 1;
	for (size_t i = 0; i < n[G->side[0]]; i++)
		ids8[i] = (uint8_t)ids[G->side[0]][i];
	votes = (uint8_t)n[G->side[0]];
	ev(EV_RING, 0, ids8, n[G->side[0]]);
	ev(EV_VIEW, 0, ids8, n[G->side[0]]);
	ev(EV_QUORUM, n[G->side[0]] * 2 > NODES, &votes, 1);
	ring = F.ring_seq;
	for (int k = 1; k < NODES; k++) {
		int s = G->side[k];

		if (!G->p[k].up)
			continue;
		ha_sm_ring(&G->p[k].sm, ring, ids[s][0], ids[s], n[s], F.now);
		ha_sm_view(&G->p[k].sm, ids[s], n[s], F.now);
		ha_sm_quorum(&G->p[k].sm, n[s] * 2 > NODES, ring, ids[s][0], NODES,
			     (uint32_t)n[s], F.now);
	}
	settle();
}

static void peer_start(int k, struct ha_doc *doc)
{
	struct ha_sm_params prm = {
		.nodeid = (uint32_t)k + 1, .name = names[k], .cluster = "fz", .lease_ms = LEASE,
		.heartbeat_ms = HB,
	};
	struct peer *p = &G->p[k];

	memset(p, 0, sizeof(*p));
	if (ha_sm_init(&p->sm, &prm, &peer_ops, p, doc ? doc : start_doc(), F.now))
		abort();
	for (uint32_t i = 0; i < NODES; i++)
		ha_sm_set_name(&p->sm, i + 1, names[i]);
	p->up = true;
}

static void peer_stop(int k)
{
	if (!G->p[k].up)
		return;
	ha_sm_fini(&G->p[k].sm);
	G->p[k].up = false;
}

/* The three nodes start together and pass the barrier; every isergwd takes the document. */
static void gen_begin(struct gen *g, struct ha_doc *peer_doc)
{
	memset(g, 0, sizeof(*g));
	G = g;
	fz_start();
	for (int k = 1; k < NODES; k++) {
		struct ha_doc *d = NULL;

		if (peer_doc && ha_doc_with_runtime(peer_doc, peer_doc->owner, peer_doc->moving_from,
						    peer_doc->live, &d))
			abort();
		peer_start(k, d);
	}
	membership();
	gw_apply_all();
	run_for(300);
}

static void gen_end(const char *dir, const char *name)
{
	struct gen *g = G;
	char path[4096];
	FILE *f;

	run_for(200);
	fprintf(stderr, "gen: %s: node 1 %s, generation %llu, %zu LU state(s), %zu parked\n", name,
		ha_sm_phase_name(&F.sm), (unsigned long long)F.sm.doc->generation, F.sm.lus.n,
		F.sm.lus.nparked);
	for (int k = 1; k < NODES; k++)
		peer_stop(k);
	for (size_t i = 0; i < g->nbus; i++)
		free(g->bus[i].buf);
	fz_stop();
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(g->out, 1, g->len, f) != g->len || fclose(f)) {
		perror(path);
		exit(1);
	}
	fprintf(stderr, "gen: %s: %zu bytes\n", path, g->len);
	free(g->out);
	G = NULL;
}

static void peer_submit_ok(int64_t id, const char *err)
{
	if (id < 0) {
		fprintf(stderr, "gen: a peer's request refused: %s\n", err);
		exit(1);
	}
}

/* A packed isergw.ctl.LuState with one registration through relative port rel_port. */
static uint8_t *lu_state(const uint8_t naa[16], uint32_t rel_port, bool aptpl, size_t *len)
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
	r.rel_port = rel_port;
	r.iport = (char *)(uintptr_t)"iqn.2026-11.org.example:h,i,0x1";
	st.regs = &rp;
	st.n_regs = 1;
	*len = isergw__ctl__lu_state__get_packed_size(&st);
	buf = malloc(*len);
	if (!buf)
		abort();
	isergw__ctl__lu_state__pack(&st, buf);
	return buf;
}

/* A packed isergw.ctl.LuStateApply: REGISTRATIONS PREEMPTED (2A/05) for one nexus through rel_port. */
static uint8_t *lu_events(uint32_t rel_port, size_t *len)
{
	Isergw__Ctl__LuStateApply a = ISERGW__CTL__LU_STATE_APPLY__INIT;
	Isergw__Ctl__LuEvent e = ISERGW__CTL__LU_EVENT__INIT, *ep = &e;
	uint8_t *buf;

	e.kind = 2;
	e.asc = 0x2a05;
	e.rel_port = rel_port;
	e.iport = (char *)(uintptr_t)"iqn.2026-11.org.example:h,i,0x1";
	a.events = &ep;
	a.n_events = 1;
	*len = isergw__ctl__lu_state_apply__get_packed_size(&a);
	buf = malloc(*len ? *len : 1);
	if (!buf)
		abort();
	isergw__ctl__lu_state_apply__pack(&a, buf);
	return buf;
}

/* Node 1's LU proposal: base, state length, state, events (EV_LU_PROPOSE's payload). */
static void ev_propose(uint8_t lu, uint8_t base, uint32_t rel_port, bool aptpl, bool events)
{
	uint8_t naa[16], rec[512];
	size_t slen, elen = 0;
	uint8_t *st, *evb = NULL;

	naa_of(lu, naa);
	st = lu_state(naa, rel_port, aptpl, &slen);
	if (events)
		evb = lu_events(rel_port, &elen);
	if (2 + slen + elen > sizeof(rec) || slen > 255)
		abort();
	rec[0] = base;
	rec[1] = (uint8_t)slen;
	memcpy(rec + 2, st, slen);
	if (elen)
		memcpy(rec + 2 + slen, evb, elen);
	ev(EV_LU_PROPOSE, lu, rec, 2 + slen + elen);
	free(st);
	free(evb);
}

static void peer_propose(int k, uint64_t id, uint8_t lu, uint64_t base, uint32_t rel_port,
			 bool events)
{
	uint8_t naa[16], *st, *evb = NULL;
	size_t slen, elen = 0;
	char err[256];

	naa_of(lu, naa);
	st = lu_state(naa, rel_port, false, &slen);
	if (events)
		evb = lu_events(rel_port, &elen);
	if (ha_sm_lu_propose(&G->p[k].sm, id, naa, base, st, slen, evb, elen, err, sizeof(err)))
		fprintf(stderr, "gen: proposal refused: %s\n", err);
	free(st);
	free(evb);
}

static const char *config4 =
	"{\"nodes\":["
	"{\"name\":\"n1\",\"tpg_id\":1,\"portals\":[{\"url\":\"tcp://10.0.0.1:3260\",\"rel_port_id\":1}]},"
	"{\"name\":\"n2\",\"tpg_id\":2,\"portals\":[{\"url\":\"tcp://10.0.0.2:3260\",\"rel_port_id\":2}]},"
	"{\"name\":\"n3\",\"tpg_id\":3,\"portals\":[{\"url\":\"tcp://10.0.0.3:3260\",\"rel_port_id\":3}]}],"
	"\"floating_portals\":[{\"url\":\"tcp://10.0.0.100:3260\",\"rel_port_id\":100,\"tpg_id\":100}],"
	"\"dataplane_grace_ms\":500,"
	"\"gateway\":{\"log_level\":\"notice\",\"nop_interval_s\":5},"
	"\"device_groups\":["
	"{\"name\":\"dg1\",\"preferred_owner\":\"n1\"},"
	"{\"name\":\"dg2\",\"preferred_owner\":\"n2\",\"non_owner_state\":\"standby\"},"
	"{\"name\":\"dg3\",\"preferred_owner\":\"n3\",\"failback\":\"manual\"},"
	"{\"name\":\"dg4\"}],"
	"\"targets\":[{\"iqn\":\"" IQN "\",\"luns\":["
	"{\"lun\":0,\"path\":\"/var/lib/isergw/fz-0.img\",\"device_group\":\"dg1\"},"
	"{\"lun\":1,\"path\":\"/var/lib/isergw/fz-1.img\",\"device_group\":\"dg2\"},"
	"{\"lun\":2,\"path\":\"/var/lib/isergw/fz-2.img\",\"device_group\":\"dg3\"},"
	"{\"lun\":3,\"path\":\"/var/lib/isergw/fz-3.img\",\"device_group\":\"dg4\","
	"\"size\":\"64M\"}]}]}";

#define HASH "sha256:000102030405060708090a0b0c0d0e0f:" \
	"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

static void cl_seed(const char *dir, const char *name, const uint8_t *b, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b, 1, n, f) != n || fclose(f))
		exit(1);
}

static void gen_seeds(const char *dir)
{
	static struct gen g;
	char err[512];
	uint32_t lun;

	/* 1. start: the barrier of three nodes with one document, heartbeats */
	gen_begin(&g, NULL);
	gen_end(dir, "start-barrier");

	/* 2. a node's agent started with an older document: it takes the winner's State */
	{
		struct ha_doc *newer = NULL;

		if (ha_doc_with_config(base_doc, config4, &newer, err, sizeof(err))) {
			fprintf(stderr, "gen: config4: %s\n", err);
			exit(1);
		}
		gen_begin(&g, newer);
		ha_doc_free(newer);
		gen_end(dir, "state-from-winner");
	}

	/* 3. a configuration change from a peer (Change config_json), then one of ours */
	gen_begin(&g, NULL);
	peer_submit_ok(ha_sm_submit_config(&g.p[1].sm, config4, g.p[1].sm.doc->generation, err,
					   sizeof(err)), err);
	settle();
	gw_apply_all();
	run_for(300);
	ev(EV_SUBMIT, SUB_CONFIG, config3, strlen(config3));
	settle();
	gw_apply_all();
	gen_end(dir, "config-change");

	/* 4. node 3 dies: the leader (node 1) waits its lease out and places dg3 */
	gen_begin(&g, NULL);
	peer_stop(2);
	membership();
	run_for(2500);
	/* it comes back: the barrier again, then failback stays manual for dg3 */
	peer_start(2, NULL);
	membership();
	run_for(500);
	gen_end(dir, "node-lost-and-back");

	/* 5. a partition: node 1 alone (no quorum, steps down), then healed */
	gen_begin(&g, NULL);
	g.side[0] = 1;
	membership();
	run_for(600);
	g.side[0] = 0;
	membership();
	run_for(600);
	gen_end(dir, "partition-healed");

	/* 6. drain, move and undrain through node 1's API; a host's move through node 2 */
	gen_begin(&g, NULL);
	ev(EV_SUBMIT, SUB_DRAIN, (const uint8_t[]){ 1, 1 }, 2);
	settle();
	run_for(500);
	ev(EV_SUBMIT, SUB_MOVE, (const uint8_t[]){ 0, 2 }, 2);
	settle();
	run_for(500);
	ev(EV_SUBMIT, SUB_DRAIN, (const uint8_t[]){ 1, 0 }, 2);
	settle();
	run_for(500);
	run_for(HA_HOST_MOVE_SETTLE_MS);
	ev(EV_SUBMIT, SUB_HOST_MOVE, (const uint8_t[]){ 1, 0 }, 2);
	settle();
	run_for(500);
	gen_end(dir, "drain-move-undrain");

	/* 7. LUN changes (LunChange) from a peer and from node 1 */
	gen_begin(&g, NULL);
	lun = 0;
	peer_submit_ok(ha_sm_submit_lun(&g.p[1].sm, IQN, false, &lun,
					"{\"path\":\"/var/lib/isergw/fz-9.img\",\"device_group\":\"dg2\"}",
					g.p[1].sm.doc->generation, err, sizeof(err)), err);
	settle();
	gw_apply_all();
	{
		static const char rec[] = "\x05\x00" IQN "\0"
			"{\"path\":\"/var/lib/isergw/fz-5.img\",\"device_group\":\"dg1\",\"size\":\"16M\"}";

		ev(EV_SUBMIT, SUB_LUN | 0x80, rec, sizeof(rec) - 1);
	}
	settle();
	gw_apply_all();
	{
		static const char rec[] = "\x01\x00" IQN;

		ev(EV_SUBMIT, SUB_LUN | 0x80, rec, sizeof(rec) - 1);
	}
	settle();
	gw_apply_all();
	gen_end(dir, "lun-changes");

	/* 8. the LU state: proposals from node 1 and a peer, LBA locks, answers */
	gen_begin(&g, NULL);
	ev_propose(0, 0, 2, true, false);
	settle();
	peer_propose(1, 7, 0, 1, 1, true);
	settle();
	peer_propose(2, 8, 1, 0, 3, false);
	settle();
	ev(EV_LU_LOCK, 0, (const uint8_t[]){ 1, 10, 8 }, 3);
	settle();
	{
		uint8_t naa[16];

		naa_of(0, naa);
		if (ha_sm_lu_lock(&g.p[2].sm, 55, naa, 12, 4, false, err, sizeof(err)))
			abort();
		settle();
		ev(EV_LU_LOCK, 0x80, (const uint8_t[]){ 1, 10, 8 }, 3);
		settle();
		if (ha_sm_lu_lock(&g.p[2].sm, 55, naa, 12, 4, true, err, sizeof(err)))
			abort();
		settle();
	}
	run_for(300);
	gen_end(dir, "lu-state");

	/* 9. a PREEMPT while node 3 is away parks its UA; node 3 back takes it at the barrier */
	gen_begin(&g, NULL);
	ev_propose(1, 0, 3, false, false);
	settle();
	peer_stop(2);
	membership();
	run_for(300);
	peer_propose(1, 9, 1, 1, 3, true);
	settle();
	ev_propose(2, 0, 1, false, true);
	settle();
	peer_start(2, NULL);
	membership();
	run_for(300);
	ev(EV_LU_PARKED, 0, NULL, 0);
	gen_end(dir, "lu-parked-away");

	/* 10. data plane: LUN faults on node 1 and on a peer (DataPlane), the grace, recovery */
	gen_begin(&g, NULL);
	ev(EV_GW_LUNS, 0, (const uint8_t[]){ 2, 1, 0, 0, 0 }, 5);
	{
		struct ha_lun_fault f = { .target = IQN, .lun = 1, .dg = "dg2", .state = "failed",
					  .reason = "read error" };

		ha_sm_gw_luns(&g.p[1].sm, 2, 1, &f, 1, F.now);
	}
	run_for(1000);
	ev(EV_GW_LUNS, 0, (const uint8_t[]){ 3, 0 }, 2);
	ha_sm_gw_luns(&g.p[1].sm, 3, 0, NULL, 0, F.now);
	run_for(1000);
	gen_end(dir, "dataplane");

	/* 11. tokens (TokenChange) and a node fenced after it died (Fenced) */
	gen_begin(&g, NULL);
	peer_submit_ok(ha_sm_submit_token(&g.p[1].sm, "ops", "admin", HASH, 1764300000, err,
					  sizeof(err)), err);
	settle();
	gw_apply_all();
	ev(EV_SUBMIT, SUB_TOKEN, "ro\0read-only\0" HASH, sizeof("ro\0read-only\0" HASH) - 1);
	settle();
	gw_apply_all();
	ev(EV_SUBMIT, SUB_TOKEN, "ops\0\0", 5);
	settle();
	gw_apply_all();
	peer_stop(2);
	membership();
	run_for(200);
	ev(EV_SUBMIT, SUB_FENCED, (const uint8_t[]){ 2 }, 1);
	settle();
	run_for(500);
	gen_end(dir, "tokens-fenced");

	/* 13. structured peers: a newer document announced and sent, changes of every kind */
	{
		struct ha_doc *newer = NULL, *nd = NULL;
		static const char lun[] = "\x01" IQN "\0" "7\0"
			"{\"device_group\":\"dg2\",\"lun\":7,\"path\":\"/var/lib/isergw/fz-7.img\"}";
		static const char tok[] = "\x02ops\0admin\0" HASH;
		static const char drain[] = "\x03n3\0" "1";
		static const char move[] = "\x04" "dg1\0n2";
		static const char place[] = "\x05" "dg1\0n2\0n1\0dg2\0n2\0\0dg3\0n3\0\0\0\0\0"
			"n1\0n2\0n3";
		uint8_t *cfg = malloc(strlen(config4) + 1);

		gen_begin(&g, NULL);
		if (!cfg || ha_doc_with_config(base_doc, config4, &newer, err, sizeof(err)))
			exit(1);
		/* newer than what node 1 holds after the changes below */
		while (newer->generation < 20) {
			if (ha_doc_with_runtime(newer, newer->owner, newer->moving_from, newer->live,
						&nd))
				exit(1);
			ha_doc_free(newer);
			newer = nd;
		}
		nd = NULL;
		cfg[0] = PC_CONFIG;
		memcpy(cfg + 1, config4, strlen(config4));
		ev(EV_PEER_CHANGE, 2, cfg, strlen(config4) + 1);
		ev(EV_PEER_CHANGE, 2, lun, sizeof(lun) - 1);
		ev(EV_PEER_CHANGE, 3, tok, sizeof(tok) - 1);
		ev(EV_PEER_CHANGE, 2, drain, sizeof(drain) - 1);
		ev(EV_PEER_CHANGE, 3, move, sizeof(move) - 1);
		ev(EV_PEER_CHANGE, 1, place, sizeof(place) - 1);
		/* a view change: node 2 announces a newer document than anyone */
		{
			const uint8_t ids[] = { 1, 2, 3 };

			ev(EV_RING, 0, ids, 3);
			ev(EV_VIEW, 0, ids, 3);
			ev(EV_QUORUM, 1, (const uint8_t[]){ 3 }, 1);
			ev(EV_LOOP, (uint8_t)(F.nq < 255 ? F.nq : 255), NULL, 0);    /* our Sync last */
			ev(EV_PEER_DOC, 2, newer->text, newer->text_len);
			ev(EV_PEER_DOC, 3, newer->text, newer->text_len);
		}
		free(cfg);
		ha_doc_free(newer);
		ha_doc_free(nd);
		/* no run_for: the peers did not see these */
		for (int k = 1; k < NODES; k++)
			peer_stop(k);
		for (size_t i = 0; i < g.nbus; i++)
			free(g.bus[i].buf);
		g.nbus = 0;
		fz_stop();
		{
			char path[4096];
			FILE *f;

			snprintf(path, sizeof(path), "%s/%s", dir, "peer-structured");
			f = fopen(path, "wb");
			if (!f || fwrite(g.out, 1, g.len, f) != g.len || fclose(f))
				exit(1);
			free(g.out);
			G = NULL;
		}
	}

	/* the whole cluster (cluster_run): 0xe0, then events of 3 bytes */
	{
		static const uint8_t part[] = { 0xe0, CE_SIDES, 0x04, 0, CE_TICK, 15, 50,
			CE_TICK, 15, 50, CE_TICK, 15, 50, CE_SIDES, 0, 0, CE_TICK, 15, 50,
			CE_TICK, 15, 50 };
		static const uint8_t down[] = { 0xe0, CE_SIDES, 0x08, 0, CE_TICK, 15, 50,
			CE_TICK, 15, 50, CE_TICK, 15, 50, CE_SIDES, 0, 0, CE_TICK, 15, 50,
			CE_TICK, 15, 50 };
		static const uint8_t changes[] = { 0xe0, CE_DRAIN, 0, 1, CE_TICK, 15, 50,
			CE_MOVE, 1, 8, CE_TICK, 15, 50, CE_HOST_MOVE, 2, 1, CE_TICK, 15, 50,
			CE_DRAIN, 0, 0x11, CE_TICK, 15, 50, CE_CONFIG, 0, 1, CE_TICK, 15, 50,
			CE_LUNS, 1, 5, CE_TICK, 15, 50, CE_TICK, 15, 50, CE_GW_LOST, 2, 0,
			CE_TICK, 15, 50, CE_TICK, 15, 50, CE_GW_APPLY, 2, 0, CE_RESTART, 0, 0,
			CE_TICK, 15, 50, CE_GW_APPLY, 0, 0, CE_TICK, 15, 50 };

		cl_seed(dir, "cluster-partition", part, sizeof(part));
		cl_seed(dir, "cluster-node-down", down, sizeof(down));
		cl_seed(dir, "cluster-changes", changes, sizeof(changes));
	}

	/* 12. isergwd goes away and comes back; the agent's loop stalls (stale view) */
	gen_begin(&g, NULL);
	ev(EV_GW_LOST, 0, NULL, 0);
	run_for(2000);
	ev(EV_CLOCK, 10, NULL, 0);
	run_for(500);
	gen_end(dir, "gw-lost-stale");
}

/* ------------------------------------------------------------ the cluster */

/*
 * An input whose first byte is 0xe0..0xff: the three nodes are all real
 * state machines on the bus (CPG's agreed order, every message delivered
 * before the next membership change, as virtual synchrony has it) and the
 * input is what happens to them, 3 bytes an event (kind, a, b): time, a
 * partition or an agent down (its isergwd keeps the lease it has), an agent
 * restarted, isergwd taking the generation or going away, the local API's changes, LUN faults. The
 * safety of the whole: a host never finds two port groups Active/Optimized
 * for one device group among the isergwds that serve (hold an unexpired
 * lease), each with the ALUA map of the generation it took last.
 */

#define CL_EVENTS 512u
#define CL_TICKS 300u                   /* 30 s at most: an execution stays short */

static struct {
	uint64_t lease[NODES];          /* what isergwd was given */
	bool gw[NODES];                 /* isergwd connected to its agent */
	char ao[NODES][8][HA_NAME_MAX]; /* per device group of isergwd's map: "dg=owner" */
	size_t nao[NODES];
	bool down[NODES];
	bool gw_gone[NODES];            /* isergwd went away (until it comes back: CE_GW_APPLY) */
	char *saved[NODES];             /* the stored document of an agent that is down */
	unsigned int ticks;
} CL;

static int cl_node(const struct ha_sm *sm)
{
	return (int)sm->nodeid - 1;
}

static void cl_lease(void *ctx, uint64_t expires)
{
	struct peer *p = ctx;

	CL.lease[cl_node(&p->sm)] = expires;
}

static void cl_step_down(void *ctx, const char *reason)
{
	struct peer *p = ctx;
	int k = cl_node(&p->sm);

	(void)reason;
	if (CL.gw[k])           /* an isergwd away from its agent serves on its lease */
		CL.lease[k] = 0;
}

static void cl_change_done(void *ctx, uint64_t id, int status, const char *err, uint64_t gen)
{
	(void)ctx;
	(void)id;
	(void)status;
	(void)err;
	(void)gen;
}

static const struct ha_sm_ops cl_ops = {
	.send = peer_send,
	.doc_changed = peer_doc_changed,
	.lease = cl_lease,
	.step_down = cl_step_down,
	.change_done = cl_change_done,
	.applied = op_applied,
	.lu_apply = peer_lu_apply,
	.lu_done = op_lu_done,
	.lu_store = op_lu_store,
	.lu_handover = op_lu_handover,
};

static bool cl_together(int a, int b)
{
	return !CL.down[a] && !CL.down[b] && G->side[a] == G->side[b];
}

static void cl_settle(void)
{
	struct gen *g = G;

	for (int round = 0; round < 100 && g->nbus; round++) {
		struct bmsg batch[4096];
		size_t n = g->nbus;

		memcpy(batch, g->bus, n * sizeof(batch[0]));
		g->nbus = 0;
		for (size_t i = 0; i < n; i++) {
			int from = (int)batch[i].from - 1;

			for (int k = 0; k < NODES; k++)
				if (cl_together(from, k))
					ha_sm_deliver(&g->p[k].sm, batch[i].from, batch[i].buf,
						      batch[i].len, F.now);
			free(batch[i].buf);
		}
		for (int k = 0; k < NODES; k++) {
			struct peer *p = &g->p[k];

			if (CL.down[k])
				continue;
			ha_sm_doc_stored(&p->sm, p->doc_seq);
			for (size_t i = 0; i < p->napps; i++)
				ha_sm_lu_gw_applied(&p->sm, p->apps[i].origin, p->apps[i].proposal_id,
						    p->apps[i].naa, p->apps[i].version, 0);
			p->napps = 0;
		}
	}
	/* what is left (a loop of messages) is dropped with the round */
	for (size_t i = 0; i < g->nbus; i++)
		free(g->bus[i].buf);
	g->nbus = 0;
}

static void cl_membership(void)
{
	uint32_t ids[2][NODES];
	size_t n[2] = { 0, 0 };

	cl_settle();
	F.ring_seq += 4;
	for (int k = 0; k < NODES; k++)
		if (!CL.down[k])
			ids[G->side[k]][n[G->side[k]]++] = (uint32_t)k + 1;
	for (int k = 0; k < NODES; k++) {
		int s = G->side[k];

		if (CL.down[k])
			continue;
		ha_sm_ring(&G->p[k].sm, F.ring_seq, ids[s][0], ids[s], n[s], F.now);
		ha_sm_view(&G->p[k].sm, ids[s], n[s], F.now);
		ha_sm_quorum(&G->p[k].sm, n[s] * 2 > NODES, F.ring_seq, ids[s][0], NODES,
			     (uint32_t)n[s], F.now);
	}
	cl_settle();
}

/* isergwd of node k takes its agent's generation: its ALUA map is that document's. */
static void cl_gw_apply(int k)
{
	const struct ha_doc *d = G->p[k].sm.doc;

	CL.gw[k] = true;
	CL.nao[k] = 0;
	for (size_t g = 0; g < d->ndgs && g < 8; g++) {
		struct ha_alua_entry e[HA_NODES_MAX];

		ha_alua_states(d, (int)g, e);
		for (size_t n = 0; n < d->nnodes; n++)
			if (e[n].state == 0)
				snprintf(CL.ao[k][CL.nao[k]++], HA_NAME_MAX, "%.30s=%.30s",
					 d->dgs[g].name, d->nodes[n].name);
	}
	ha_sm_gw_applied(&G->p[k].sm, d->generation, 0, NULL, F.now);
}

static void cl_start(int k, struct ha_doc *doc)
{
	struct ha_sm_params prm = {
		.nodeid = (uint32_t)k + 1, .name = names[k], .cluster = "fz", .lease_ms = LEASE,
		.heartbeat_ms = HB,
	};
	struct peer *p = &G->p[k];

	memset(p, 0, sizeof(*p));
	if (ha_sm_init(&p->sm, &prm, &cl_ops, p, doc, F.now))
		abort();
	for (uint32_t i = 0; i < NODES; i++)
		ha_sm_set_name(&p->sm, i + 1, names[i]);
	CL.down[k] = false;
}

/* Two isergwds that serve must not name different owners Active/Optimized for a device group. */
static void cl_check(void)
{
	for (int a = 0; a < NODES; a++) {
		if (CL.lease[a] <= F.now)
			continue;
		for (int b = a + 1; b < NODES; b++) {
			if (CL.lease[b] <= F.now)
				continue;
			for (size_t i = 0; i < CL.nao[a]; i++)
				for (size_t j = 0; j < CL.nao[b]; j++) {
					const char *x = CL.ao[a][i], *y = CL.ao[b][j];
					size_t lx = strcspn(x, "="), ly = strcspn(y, "=");

					if (lx == ly && !memcmp(x, y, lx) && strcmp(x, y)) {
						fprintf(stderr, "fuzz_ha_msg: at %llu ms node %d serves "
							"%s, node %d serves %s\n",
							(unsigned long long)F.now, a + 1, x, b + 1, y);
						die("two owners Active/Optimized among the serving nodes");
					}
				}
		}
	}
}

static void cl_event(uint8_t kind, uint8_t a, uint8_t b)
{
	int k = a % NODES;
	struct ha_sm *sm = &G->p[k].sm;
	char err[512];

	if (CL.down[k] && kind % CE_COUNT != CE_TICK && kind % CE_COUNT != CE_SIDES)
		return;
	switch (kind % CE_COUNT) {
	case CE_TICK:
		for (unsigned int i = 0; i <= (a & 15u) && CL.ticks < CL_TICKS; i++, CL.ticks++) {
			F.now += HB / 2u + (b & 63u);
			for (int n = 0; n < NODES; n++)
				if (!CL.down[n])
					ha_sm_tick(&G->p[n].sm, F.now);
			cl_settle();
			/* connected isergwds take what their agents have */
			for (int n = 0; n < NODES; n++)
				if (!CL.down[n] && CL.gw[n] && (a & 0x80) == 0)
					cl_gw_apply(n);
			cl_settle();
			cl_check();
		}
		break;
	case CE_SIDES:
		/* bits 0-2: the side of each node; bits 3-5: its agent is down */
		for (int n = 0; n < NODES; n++) {
			bool down = a & (8u << n);

			G->side[n] = (a >> n) & 1;
			if (down && !CL.down[n]) {
				free(CL.saved[n]);
				CL.saved[n] = strdup(G->p[n].sm.doc->text);
				ha_sm_fini(&G->p[n].sm);
				CL.down[n] = true;
				CL.gw[n] = false;       /* its isergwd keeps its lease */
			} else if (!down && CL.down[n]) {
				/* back with the document it stored */
				struct ha_doc *d = NULL;

				if (!CL.saved[n] || ha_doc_parse(CL.saved[n], &d, err, sizeof(err)))
					die("a node's own document does not load after a restart");
				cl_start(n, d);
				CL.gw[n] = !CL.gw_gone[n];      /* isergwd connects again */
			}
		}
		cl_membership();
		break;
	case CE_RESTART: {
		/* the agent restarts with the document it stored; isergwd keeps its lease */
		struct ha_doc *d = NULL;
		char *t = strdup(sm->doc->text);

		if (!t || ha_doc_parse(t, &d, err, sizeof(err)))
			die("a node's own document does not load after a restart");
		free(t);
		ha_sm_fini(sm);
		CL.down[k] = true;
		cl_membership();
		cl_start(k, d);
		CL.gw[k] = !CL.gw_gone[k];      /* isergwd connects to the new agent */
		cl_membership();
		break;
	}
	case CE_GW_APPLY:
		CL.gw_gone[k] = false;
		cl_gw_apply(k);
		break;
	case CE_GW_LOST:
		CL.gw[k] = false;
		CL.gw_gone[k] = true;
		ha_sm_gw_lost(sm);
		ha_sm_lu_gw_lost(sm);
		break;
	case CE_DRAIN:
		(void)ha_sm_submit_drain(sm, names[b % NODES], !(b & 0x10), b & 0x20, err,
					 sizeof(err));
		break;
	case CE_MOVE:
		(void)ha_sm_submit_move(sm, pick_dg[b % 3], names[(b >> 2) % NODES], err,
					sizeof(err));
		break;
	case CE_HOST_MOVE:
		(void)ha_sm_submit_host_move(sm, pick_dg[b % 3], names[(b >> 2) % NODES], F.now, err,
					     sizeof(err));
		break;
	case CE_CONFIG:
		(void)ha_sm_submit_config(sm, b & 1 ? config4 : config3, sm->doc->generation, err,
					  sizeof(err));
		break;
	case CE_LUNS: {
		struct ha_lun_fault f = { .target = IQN, .lun = b % 3u, .state = "failed",
					  .reason = "I/O error" };

		snprintf(f.dg, sizeof(f.dg), "%s", pick_dg[b % 3]);
		ha_sm_gw_luns(sm, 3u - !!(b & 4), !!(b & 4), &f, !!(b & 4), F.now);
		break;
	}
	}
	cl_settle();
	cl_check();
}

static void cluster_run(const uint8_t *data, size_t size)
{
	static struct gen g;

	memset(&g, 0, sizeof(g));
	memset(&CL, 0, sizeof(CL));
	G = &g;
	F.now = T0;
	F.ring_seq = 4;
	for (int k = 0; k < NODES; k++)
		cl_start(k, start_doc());
	cl_membership();
	for (int k = 0; k < NODES; k++)
		cl_gw_apply(k);
	cl_settle();
	cl_event(CE_TICK, 4, 50);       /* every node serves: leased */
	for (size_t off = 0, n = 0; off + 3 <= size && n < CL_EVENTS; off += 3, n++)
		cl_event(data[off], data[off + 1], data[off + 2]);
	for (int k = 0; k < NODES; k++) {
		if (!CL.down[k])
			ha_sm_fini(&g.p[k].sm);
		free(CL.saved[k]);
	}
	for (size_t i = 0; i < g.nbus; i++)
		free(g.bus[i].buf);
	G = NULL;
}
