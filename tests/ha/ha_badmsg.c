/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bad input for isergw-ha (ha.badinput, tests/ha/badinput.sh).
 *
 *   ha_badmsg [--timeout S] group CASE [--node NAME] [--size BYTES]
 *
 * Run inside a gateway node (it talks to that node's corosync): joins the
 * CPG group "isergw-ha" as one more process of the node (CPG_MODEL_V1),
 * waits for the sync barrier its join starts (a Sync from every other
 * member, so the agents are synchronised again), multicasts one bad message
 * in agreed order, waits until corosync delivers it back (every agent has
 * it then), and leaves. CASE:
 *
 *   empty           a message of 0 bytes
 *   random          bytes that do not decode as a GroupMsg
 *   truncated       a valid Heartbeat cut short by its last byte
 *   future          a GroupMsg of protocol version 99 (a Change draining NAME)
 *   foreign         a valid Change draining NAME, of cluster "<ours>-other"
 *   origin          a Change draining NAME whose origin is another member
 *   sync-order      a Sync whose members are not ascending
 *   sync-digest     a Sync with a digest of 7 bytes
 *   sync-parked     a Sync carrying a parked unit attention for relative port 0
 *   state-gen       a State whose generation no member announced
 *   fenced          a Fenced (protocol 2) saying NAME was fenced, while it lives
 *   fenced-v1       the same in a protocol 1 message (Fenced is protocol 2)
 *   lun-garbled     a LunChange (protocol 3) adding LUN 99 to the bed's target
 *                   whose LUN object is garbled JSON: decodes, refused by
 *                   every agent on delivery
 *   lun-v2          a well-formed LunChange in a protocol 2 message
 *   token-garbled   a TokenChange (protocol 4) adding an API token whose hash
 *                   is not sha256:SALT:HASH: refused by every agent's codec
 *   token-v3        a well-formed TokenChange in a protocol 3 message
 *   oversized       a State of --size bytes (default 1 MiB + 1, one above the
 *                   agent's limit; corosync 3 fragments big messages in
 *                   libcpg and took 64 MiB here; its CS_ERR_TOO_BIG would
 *                   be reported as an outcome, nothing reaching the agents)
 *
 * NAME (--node, default n3) is a node of the cluster configuration: a
 * change that got through would drain it, which the test would see.
 *
 *   ha_badmsg [--timeout S] api SOCKET CASE [ARG...]
 *
 * Talks to an agent's local API (ApiRequest/ApiReply, a 4-byte big-endian
 * length and protobuf, at most 1 MiB) and checks its answer. CASE:
 *
 *   oversized-frame      a header announcing 2 MiB: -EMSGSIZE, then closed
 *   truncated-frame      a header of 64 bytes, 10 of them, hang up (the
 *                        agent still answers a new connection)
 *   garbage              bytes that are no ApiRequest: -EBADMSG, and the
 *                        connection still answers a GetClusterStatus
 *   empty                a request of 0 bytes (no operation): -EOPNOTSUPP
 *   hangup               a GetClusterStatus from a client that shut its
 *                        reading side (the reply cannot be delivered); the
 *                        agent still answers a new connection
 *   config FILE TEXT     ApplyClusterConfig of FILE: refused (-EINVAL) with
 *                        an error containing TEXT
 *   move DG NODE TEXT    Move: refused (-ENOENT) with an error containing TEXT
 *   drain NODE TEXT      Drain: refused (-ENOENT), error containing TEXT
 *   lun IQN JSON TEXT    ChangeLun adding JSON as LUN 99 of IQN: refused
 *                        (-EINVAL) with an error containing TEXT
 *   status               GetClusterStatus: prints "generation N phase P"
 *
 * Prints one line per case, "ok CASE: ..." or "FAIL CASE: ..."; exits 1 when
 * an expectation fails, 2 on a usage error.
 */
#include <corosync/cmap.h>
#include <corosync/corotypes.h>
#include <corosync/cpg.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_wire.h"
#include "isergw_ha.pb-c.h"

#define GROUP_NAME "isergw-ha"
#define MEMBERS_MAX 64u
#define AGENT_MSG_MAX (1u << 20)        /* the agent's largest group message */
#define PROTO_FUTURE 99u
#define BED_TARGET "iqn.2026-11.org.isergw:ha"  /* the bed's target (tests/ha/bed.sh) */

typedef Isergw__Ha__GroupMsg GroupMsg;
typedef Isergw__Ha__ApiRequest ApiRequest;
typedef Isergw__Ha__ApiReply ApiReply;

static int timeout_s = 30;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int verdict(bool ok, const char *c, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int verdict(bool ok, const char *c, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s: ", ok ? "ok" : "FAIL", c);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return ok ? 0 : 1;
}

static const char *cs_name(cs_error_t e)
{
	switch (e) {
	case CS_OK: return "CS_OK";
	case CS_ERR_TRY_AGAIN: return "CS_ERR_TRY_AGAIN";
	case CS_ERR_TOO_BIG: return "CS_ERR_TOO_BIG";
	case CS_ERR_INVALID_PARAM: return "CS_ERR_INVALID_PARAM";
	case CS_ERR_NO_MEMORY: return "CS_ERR_NO_MEMORY";
	case CS_ERR_LIBRARY: return "CS_ERR_LIBRARY";
	case CS_ERR_BAD_HANDLE: return "CS_ERR_BAD_HANDLE";
	case CS_ERR_NOT_EXIST: return "CS_ERR_NOT_EXIST";
	case CS_ERR_EXIST: return "CS_ERR_EXIST";
	case CS_ERR_ACCESS: return "CS_ERR_ACCESS";
	default: return "CS_ERR_(other)";
	}
}

/* ================================================================ the group */

struct member {
	uint32_t nodeid, pid;
	bool synced;                    /* its Sync of our view came */
};

static struct {
	uint32_t nodeid, pid;
	bool joined;                    /* a view with us in it came */
	bool left;                      /* a view without us came after that */
	struct member others[MEMBERS_MAX];
	size_t nothers;
	uint64_t generation;            /* the highest a Sync of our view announced */
	uint64_t ring_seq;
	const uint8_t *want;            /* our message, once sent */
	size_t want_len;
	bool echoed;                    /* corosync delivered it back to us */
	size_t delivered;
} g;

static void deliver_cb(cpg_handle_t h, const struct cpg_name *group, uint32_t nodeid,
		       uint32_t pid, void *msg, size_t len)
{
	GroupMsg *m;

	(void)h;
	(void)group;
	g.delivered++;
	if (nodeid == g.nodeid && pid == g.pid) {
		if (g.want && len == g.want_len && (!len || !memcmp(msg, g.want, len)))
			g.echoed = true;
		return;
	}
	if (!g.joined)
		return;
	m = isergw__ha__group_msg__unpack(NULL, len, msg);
	if (!m)
		return;
	if (m->body_case == ISERGW__HA__GROUP_MSG__BODY_SYNC) {
		for (size_t i = 0; i < g.nothers; i++)
			if (g.others[i].nodeid == nodeid && g.others[i].pid == pid)
				g.others[i].synced = true;
		if (m->sync->generation > g.generation)
			g.generation = m->sync->generation;
		g.ring_seq = m->sync->ring_seq;
	}
	isergw__ha__group_msg__free_unpacked(m, NULL);
}

static void confchg_cb(cpg_handle_t h, const struct cpg_name *group,
		       const struct cpg_address *members, size_t nmembers,
		       const struct cpg_address *left, size_t nleft,
		       const struct cpg_address *joined, size_t njoined)
{
	bool self = false;

	(void)h;
	(void)group;
	(void)left;
	(void)nleft;
	(void)joined;
	(void)njoined;
	for (size_t i = 0; i < nmembers; i++)
		if (members[i].nodeid == g.nodeid && members[i].pid == g.pid)
			self = true;
	if (!self) {
		if (g.joined)
			g.left = true;
		return;
	}
	/* a new view with us: its barrier starts again */
	g.joined = true;
	g.nothers = 0;
	for (size_t i = 0; i < nmembers && g.nothers < MEMBERS_MAX; i++) {
		if (members[i].nodeid == g.nodeid && members[i].pid == g.pid)
			continue;
		g.others[g.nothers++] = (struct member){ .nodeid = members[i].nodeid,
							 .pid = members[i].pid };
	}
}

static cpg_model_v1_data_t model = {
	.model = CPG_MODEL_V1,
	.cpg_deliver_fn = deliver_cb,
	.cpg_confchg_fn = confchg_cb,
	.flags = 0,
};

static bool barrier_done(void)
{
	if (!g.joined)
		return false;
	for (size_t i = 0; i < g.nothers; i++)
		if (!g.others[i].synced)
			return false;
	return true;
}

/* Dispatch until done() or the deadline; false on timeout or error. */
static bool dispatch_until(cpg_handle_t h, int fd, bool (*done)(void), uint64_t deadline)
{
	while (!done()) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = now_ms();
		cs_error_t e;

		if (now >= deadline)
			return false;
		if (poll(&p, 1, (int)(deadline - now > 200 ? 200 : deadline - now)) < 0 &&
		    errno != EINTR)
			return false;
		e = cpg_dispatch(h, CS_DISPATCH_ALL);
		if (e != CS_OK && e != CS_ERR_TRY_AGAIN) {
			fprintf(stderr, "cpg_dispatch: %s\n", cs_name(e));
			return false;
		}
	}
	return true;
}

static bool echoed(void) { return g.echoed; }
static bool left(void) { return g.left; }

static char *cluster_name(void)
{
	cmap_handle_t h;
	char *s = NULL;

	if (cmap_initialize(&h) != CS_OK)
		return NULL;
	if (cmap_get_string(h, "totem.cluster_name", &s) != CS_OK)
		s = NULL;
	cmap_finalize(h);
	return s;
}

/* Packs m into a malloc'd buffer. */
static uint8_t *pack(const GroupMsg *m, size_t *len)
{
	uint8_t *buf;

	*len = protobuf_c_message_get_packed_size(&m->base);
	buf = malloc(*len ? *len : 1);
	if (buf)
		protobuf_c_message_pack(&m->base, buf);
	return buf;
}

/* Deterministic bytes that do not decode as a GroupMsg. */
static uint8_t *random_bytes(size_t n)
{
	uint8_t *b = malloc(n);
	uint32_t x = 0x1badcafe;

	if (!b)
		return NULL;
	for (;;) {
		GroupMsg *m;

		for (size_t i = 0; i < n; i++) {
			x = x * 1664525u + 1013904223u;
			b[i] = (uint8_t)(x >> 24);
		}
		m = isergw__ha__group_msg__unpack(NULL, n, b);
		if (!m)
			return b;
		isergw__ha__group_msg__free_unpacked(m, NULL);
	}
}

struct bad {
	uint8_t *buf;
	size_t len;
	char what[512];
};

/* Builds the bad message of case c (after the barrier: g.generation is known). */
static int build(const char *c, const char *cluster, const char *node, size_t size,
		 struct bad *out)
{
	GroupMsg m = ISERGW__HA__GROUP_MSG__INIT;
	Isergw__Ha__Heartbeat hb = ISERGW__HA__HEARTBEAT__INIT;
	Isergw__Ha__Change ch = ISERGW__HA__CHANGE__INIT;
	Isergw__Ha__NodeDrain dr = ISERGW__HA__NODE_DRAIN__INIT;
	Isergw__Ha__Sync sy = ISERGW__HA__SYNC__INIT;
	Isergw__Ha__State st = ISERGW__HA__STATE__INIT;
	Isergw__Ha__Fenced fe = ISERGW__HA__FENCED__INIT;
	Isergw__Ha__LunChange lc = ISERGW__HA__LUN_CHANGE__INIT;
	Isergw__Ha__TokenChange tc = ISERGW__HA__TOKEN_CHANGE__INIT;
	Isergw__Ha__LuPropose lp = ISERGW__HA__LU_PROPOSE__INIT;
	Isergw__Ha__LuLock lk = ISERGW__HA__LU_LOCK__INIT;
	static uint8_t naa[16] = { 0x60, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99,
				   0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99 };
	uint32_t members[3] = { 3, 1, 2 };
	uint8_t digest[32];
	char other[256], *doc = NULL;

	memset(digest, 0xab, sizeof(digest));
	m.version = 1;
	m.cluster = (char *)(uintptr_t)cluster;
	/* the harmful change the version, cluster and origin checks must stop */
	dr.node = (char *)(uintptr_t)node;
	dr.drained = true;
	ch.origin = g.nodeid;
	ch.request_id = 1;
	ch.base_generation = g.generation;
	ch.kind_case = ISERGW__HA__CHANGE__KIND_DRAIN;
	ch.drain = &dr;
	sy.ring_seq = g.ring_seq;
	sy.generation = g.generation;
	sy.digest.data = digest;
	sy.digest.len = sizeof(digest);
	sy.protocol_min = 1;
	sy.protocol_max = 1;
	sy.lease_ms = 1500;
	sy.node_name = (char *)(uintptr_t)"bogus";
	sy.members = members;
	sy.n_members = 3;

	if (!strcmp(c, "empty")) {
		out->buf = malloc(1);
		out->len = 0;
		snprintf(out->what, sizeof(out->what), "0 bytes");
	} else if (!strcmp(c, "random")) {
		out->len = 200;
		out->buf = random_bytes(out->len);
		snprintf(out->what, sizeof(out->what), "200 bytes that do not decode as a GroupMsg");
	} else if (!strcmp(c, "truncated")) {
		GroupMsg *back;

		hb.seq = 77;
		hb.applied_generation = g.generation;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_HEARTBEAT;
		m.heartbeat = &hb;
		out->buf = pack(&m, &out->len);
		if (!out->buf || out->len < 2)
			return -ENOMEM;
		out->len--;
		back = isergw__ha__group_msg__unpack(NULL, out->len, out->buf);
		if (back) {
			isergw__ha__group_msg__free_unpacked(back, NULL);
			fprintf(stderr, "a Heartbeat cut short still decodes\n");
			return -EINVAL;
		}
		snprintf(out->what, sizeof(out->what), "a Heartbeat of %zu bytes cut to %zu",
			 out->len + 1, out->len);
	} else if (!strcmp(c, "future")) {
		m.version = PROTO_FUTURE;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_CHANGE;
		m.change = &ch;
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "version %u: drain %s, base generation %llu",
			 PROTO_FUTURE, node, (unsigned long long)g.generation);
	} else if (!strcmp(c, "fenced") || !strcmp(c, "fenced-v1")) {
		fe.node = (char *)(uintptr_t)node;
		m.version = strcmp(c, "fenced") ? 1 : 2;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_FENCED;
		m.fenced = &fe;
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "protocol %u: node %s was fenced (it is alive)",
			 m.version, node);
	} else if (!strcmp(c, "lun-garbled") || !strcmp(c, "lun-v2")) {
		lc.target = (char *)(uintptr_t)BED_TARGET;
		lc.lun = 99;
		lc.lun_json = (char *)(uintptr_t)(strcmp(c, "lun-v2") ?
			"{\"path\": \"/tmp/x.img\", \"size\" 1M" :
			"{\"lun\":99,\"path\":\"/tmp/isergw-badmsg-lun99.img\",\"size\":\"1M\"}");
		ch.kind_case = ISERGW__HA__CHANGE__KIND_LUN;
		ch.lun = &lc;
		m.version = strcmp(c, "lun-v2") ? 3 : 2;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_CHANGE;
		m.change = &ch;
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "protocol %u: LUN 99 of %s: %s", m.version,
			 BED_TARGET, lc.lun_json);
	} else if (!strcmp(c, "token-garbled") || !strcmp(c, "token-v3")) {
		tc.name = (char *)(uintptr_t)"badmsg";
		tc.role = (char *)(uintptr_t)"admin";
		tc.hash = (char *)(uintptr_t)(strcmp(c, "token-v3") ? "sha256:00:11" :
			"sha256:00112233445566778899aabbccddeeff:"
			"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
		tc.created = 1;
		ch.kind_case = ISERGW__HA__CHANGE__KIND_TOKEN;
		ch.token = &tc;
		m.version = strcmp(c, "token-v3") ? 4 : 3;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_CHANGE;
		m.change = &ch;
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "protocol %u: API token %s, hash %s", m.version,
			 tc.name, tc.hash);
	} else if (!strncmp(c, "lu-", 3)) {
		/* a reservation change for an LU nobody knows, on version 7 of it */
		lp.origin = g.nodeid;
		lp.proposal_id = 1;
		lp.naa.data = naa;
		lp.naa.len = sizeof(naa);
		lp.base_version = 7;
		lp.state.data = (uint8_t *)(uintptr_t)"junk";
		lp.state.len = 4;
		m.version = 3;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_LU_PROPOSE;
		m.lu_propose = &lp;
		if (!strcmp(c, "lu-future")) {
			m.version = PROTO_FUTURE;
		} else if (!strcmp(c, "lu-v2")) {
			m.version = 2;
		} else if (!strcmp(c, "lu-origin")) {
			lp.origin = g.nodeid + 100;
		} else if (!strcmp(c, "lu-lock-v2")) {
			lk.origin = g.nodeid;
			lk.lock_id = 1;
			lk.naa.data = naa;
			lk.naa.len = sizeof(naa);
			lk.blocks = 1;
			m.version = 2;
			m.body_case = ISERGW__HA__GROUP_MSG__BODY_LU_LOCK;
			m.lu_lock = &lk;
		} else if (strcmp(c, "lu-unknown")) {
			fprintf(stderr, "unknown group case '%s'\n", c);
			return -EINVAL;
		}
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "protocol %u: %s for LU 6099...99 on version 7",
			 m.version, m.body_case == ISERGW__HA__GROUP_MSG__BODY_LU_LOCK ? "an LBA lock" :
			 "a reservation change");
	} else if (!strcmp(c, "foreign")) {
		snprintf(other, sizeof(other), "%s-other", cluster);
		m.cluster = other;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_CHANGE;
		m.change = &ch;
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "cluster '%s': drain %s, base generation %llu",
			 other, node, (unsigned long long)g.generation);
	} else if (!strcmp(c, "origin")) {
		uint32_t o = 0;

		for (size_t i = 0; i < g.nothers; i++)
			if (g.others[i].nodeid != g.nodeid)
				o = g.others[i].nodeid;
		if (!o)
			o = g.nodeid + 1;
		ch.origin = o;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_CHANGE;
		m.change = &ch;
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "origin %u from node %u: drain %s, base "
			 "generation %llu", o, g.nodeid, node, (unsigned long long)g.generation);
	} else if (!strcmp(c, "sync-order")) {
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_SYNC;
		m.sync = &sy;
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "a Sync with members 3,1,2");
	} else if (!strcmp(c, "sync-digest")) {
		members[0] = 1;
		members[1] = 2;
		members[2] = 3;
		sy.digest.len = 7;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_SYNC;
		m.sync = &sy;
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "a Sync with a digest of 7 bytes");
	} else if (!strcmp(c, "sync-parked")) {
		static Isergw__Ha__LuParked pk = ISERGW__HA__LU_PARKED__INIT, *pkp = &pk;

		members[0] = 1;
		members[1] = 2;
		members[2] = 3;
		pk.naa.data = naa;
		pk.naa.len = 16;
		pk.version = 1;
		pk.node = (char *)(uintptr_t)node;
		pk.iport = (char *)(uintptr_t)"iqn.2026-11.org.example:h,i,0x1";
		pk.rel_port = 0;        /* no such port */
		pk.asc = 0x2a05;
		sy.lu_parked = &pkp;
		sy.n_lu_parked = 1;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_SYNC;
		m.sync = &sy;
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "a Sync with a parked unit attention for "
			 "relative port 0");
	} else if (!strcmp(c, "state-gen")) {
		st.ring_seq = g.ring_seq;
		st.generation = g.generation + 1000;
		st.doc_json = (char *)(uintptr_t)"{}";
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_STATE;
		m.state = &st;
		out->buf = pack(&m, &out->len);
		snprintf(out->what, sizeof(out->what), "a State of generation %llu",
			 (unsigned long long)st.generation);
	} else if (!strcmp(c, "oversized")) {
		size_t n = size ? size : AGENT_MSG_MAX + 1;

		/* a State whose document fills the message up to n bytes */
		doc = malloc(n + 1);
		if (!doc)
			return -ENOMEM;
		memset(doc, 'x', n);
		doc[n] = '\0';
		st.ring_seq = g.ring_seq;
		st.generation = g.generation + 1000;
		m.body_case = ISERGW__HA__GROUP_MSG__BODY_STATE;
		m.state = &st;
		for (size_t body = n; body > 0; body--) {
			doc[body] = '\0';
			st.doc_json = doc;
			if (protobuf_c_message_get_packed_size(&m.base) <= n)
				break;
		}
		out->buf = pack(&m, &out->len);
		free(doc);
		snprintf(out->what, sizeof(out->what), "a State of %zu bytes", out->len);
	} else {
		fprintf(stderr, "unknown group case '%s'\n", c);
		return -EINVAL;
	}
	return out->buf ? 0 : -ENOMEM;
}

static int group_case(const char *c, const char *node, size_t size)
{
	struct cpg_name name;
	cpg_handle_t h;
	uint64_t deadline = now_ms() + (uint64_t)timeout_s * 1000u;
	struct bad b = { .buf = NULL };
	char *cluster;
	cs_error_t e;
	int fd, rc = 1;
	unsigned int nodeid;

	cluster = cluster_name();
	if (!cluster)
		return verdict(false, c, "cannot read totem.cluster_name from cmap");
	e = cpg_model_initialize(&h, CPG_MODEL_V1, (cpg_model_data_t *)&model, NULL);
	if (e != CS_OK) {
		free(cluster);
		return verdict(false, c, "cpg_model_initialize: %s", cs_name(e));
	}
	if (cpg_local_get(h, &nodeid) != CS_OK || cpg_fd_get(h, &fd) != CS_OK) {
		rc = verdict(false, c, "cpg_local_get / cpg_fd_get failed");
		goto out;
	}
	g.nodeid = nodeid;
	g.pid = (uint32_t)getpid();
	name.length = (uint32_t)strlen(GROUP_NAME);
	memcpy(name.value, GROUP_NAME, name.length);
	do {
		e = cpg_join(h, &name);
	} while (e == CS_ERR_TRY_AGAIN && now_ms() < deadline && !usleep(10000));
	if (e != CS_OK) {
		rc = verdict(false, c, "cpg_join: %s", cs_name(e));
		goto out;
	}
	/* the agents run a sync barrier for the view we made: let it end */
	if (!dispatch_until(h, fd, barrier_done, deadline)) {
		rc = verdict(false, c, "no Sync from every member of the group within %d s "
			     "(joined: %s, %zu other member(s))", timeout_s, g.joined ? "yes" : "no",
			     g.nothers);
		goto leave;
	}
	if (build(c, cluster, node, size, &b)) {
		rc = verdict(false, c, "cannot build the message");
		goto leave;
	}
	g.want = b.buf;
	g.want_len = b.len;
	for (;;) {
		struct iovec iov = { .iov_base = b.buf, .iov_len = b.len };

		e = cpg_mcast_joined(h, CPG_TYPE_AGREED, &iov, 1);
		if (e != CS_ERR_TRY_AGAIN || now_ms() >= deadline)
			break;
		usleep(10000);
	}
	if (e == CS_ERR_TOO_BIG) {
		/* corosync's own limit is below ours: nothing reaches the agents */
		rc = verdict(!strcmp(c, "oversized"), c, "%s: corosync refuses it (%s)", b.what,
			     cs_name(e));
		goto leave;
	}
	if (e != CS_OK) {
		rc = verdict(false, c, "%s: cpg_mcast_joined: %s", b.what, cs_name(e));
		goto leave;
	}
	if (!dispatch_until(h, fd, echoed, deadline)) {
		rc = verdict(false, c, "%s: sent, not delivered back within %d s", b.what,
			     timeout_s);
		goto leave;
	}
	rc = verdict(true, c, "%s: multicast by node %u pid %u (agreed), delivered to the group "
		     "(generation %llu)", b.what, g.nodeid, g.pid,
		     (unsigned long long)g.generation);
leave:
	cpg_leave(h, &name);
	/* the view without us: the agents see us go before we are gone */
	dispatch_until(h, fd, left, now_ms() + 5000u);
out:
	cpg_finalize(h);
	free(b.buf);
	free(cluster);
	return rc;
}

/* ================================================================ the local API */

static const char *api_path;

static int api_open(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_s };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(api_path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "%s: path too long\n", api_path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	memcpy(sa.sun_path, api_path, strlen(api_path) + 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "connect %s: %s\n", api_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

static bool send_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		b += n;
		len -= (size_t)n;
	}
	return true;
}

static bool send_header(int fd, uint32_t len)
{
	uint8_t h[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
			 (uint8_t)len };

	return send_all(fd, h, sizeof(h));
}

static bool send_frame(int fd, const void *body, uint32_t len)
{
	return send_header(fd, len) && (!len || send_all(fd, body, len));
}

static bool send_request(int fd, const ApiRequest *req)
{
	uint8_t *buf;
	size_t len;
	bool ok;

	if (ctl_frame_pack(&req->base, &buf, &len))
		return false;
	ok = send_all(fd, buf, len);
	free(buf);
	return ok;
}

/* 1: n bytes read; 0: end of stream first; -1: error or timeout */
static int recv_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = recv(fd, b, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 0;
		b += r;
		n -= (size_t)r;
	}
	return 1;
}

/* One reply, or NULL with the reason in why. */
static ApiReply *recv_reply(int fd, char *why, size_t whylen)
{
	uint8_t h[4], *body;
	uint32_t len;
	ApiReply *rep;
	int r = recv_all(fd, h, sizeof(h));

	if (r <= 0) {
		snprintf(why, whylen, "no reply (%s)", r == 0 ? "connection closed" :
			 strerror(errno));
		return NULL;
	}
	len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
	if (len > CTL_FRAME_MAX) {
		snprintf(why, whylen, "a reply of %u bytes", len);
		return NULL;
	}
	body = malloc(len ? len : 1);
	if (!body || recv_all(fd, body, len) != 1) {
		free(body);
		snprintf(why, whylen, "a reply cut short");
		return NULL;
	}
	rep = isergw__ha__api_reply__unpack(NULL, len, body);
	free(body);
	if (!rep)
		snprintf(why, whylen, "a reply of %u bytes that is no ApiReply", len);
	return rep;
}

/* The agent closes the connection (end of stream, nothing else). */
static bool expect_eof(int fd)
{
	char b;

	return recv(fd, &b, 1, 0) == 0;
}

/* A GetClusterStatus on fd answered with a status: true, and the generation. */
static bool status_ok(int fd, uint64_t *gen, char *phase, size_t phaselen, char *why,
		      size_t whylen)
{
	ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__GetClusterStatus gs = ISERGW__HA__GET_CLUSTER_STATUS__INIT;
	ApiReply *rep;
	bool ok;

	req.op_case = ISERGW__HA__API_REQUEST__OP_GET_STATUS;
	req.get_status = &gs;
	if (!send_request(fd, &req)) {
		snprintf(why, whylen, "cannot send a GetClusterStatus: %s", strerror(errno));
		return false;
	}
	rep = recv_reply(fd, why, whylen);
	if (!rep)
		return false;
	ok = rep->status == 0 &&
	     rep->payload_case == ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS;
	if (!ok)
		snprintf(why, whylen, "GetClusterStatus answered status %d (%s)", rep->status,
			 rep->error);
	if (ok && gen)
		*gen = rep->cluster_status->generation;
	if (ok && phase)
		snprintf(phase, phaselen, "%s", rep->cluster_status->phase);
	isergw__ha__api_reply__free_unpacked(rep, NULL);
	return ok;
}

/* Status on a new connection: the agent still serves. */
static bool still_serving(char *why, size_t whylen)
{
	int fd = api_open();
	bool ok;

	if (fd < 0) {
		snprintf(why, whylen, "cannot connect any more");
		return false;
	}
	ok = status_ok(fd, NULL, NULL, 0, why, whylen);
	close(fd);
	return ok;
}

/* Sends req (or a raw frame), expects a refusal with status want and text in its error. */
static int expect_refusal(const char *c, int fd, int want, const char *text, char *got,
			  size_t gotlen)
{
	char why[512];
	ApiReply *rep = recv_reply(fd, why, sizeof(why));
	int rc;

	if (!rep)
		return verdict(false, c, "%s", why);
	snprintf(got, gotlen, "%s", rep->error);
	if (rep->status != want)
		rc = verdict(false, c, "status %d (%s), expected %d (%s)", rep->status, rep->error,
			     want, strerror(-want));
	else if (text && !strstr(rep->error, text))
		rc = verdict(false, c, "status %d as expected, but the error '%s' does not "
			     "contain '%s'", rep->status, rep->error, text);
	else
		rc = 0;
	isergw__ha__api_reply__free_unpacked(rep, NULL);
	return rc;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		if (buf) {
			buf[n] = '\0';
			*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

static int api_case(const char *c, int argc, char **argv)
{
	char why[512], got[1024] = "", phase[64];
	uint64_t gen;
	int fd, rc;

	if (!strcmp(c, "status")) {
		fd = api_open();
		if (fd < 0)
			return verdict(false, c, "cannot connect");
		rc = status_ok(fd, &gen, phase, sizeof(phase), why, sizeof(why)) ?
		     verdict(true, c, "generation %llu phase %s", (unsigned long long)gen, phase) :
		     verdict(false, c, "%s", why);
		close(fd);
		return rc;
	}
	fd = api_open();
	if (fd < 0)
		return verdict(false, c, "cannot connect");
	if (!strcmp(c, "oversized-frame")) {
		if (!send_header(fd, 2u << 20))
			rc = verdict(false, c, "cannot send the header");
		else if ((rc = expect_refusal(c, fd, -EMSGSIZE, NULL, got, sizeof(got))) == 0)
			rc = expect_eof(fd) ?
			     verdict(true, c, "a 2 MiB header: -EMSGSIZE (%s), connection closed", got) :
			     verdict(false, c, "-EMSGSIZE, but the connection stays open");
	} else if (!strcmp(c, "truncated-frame")) {
		static const char part[10] = "0123456789";

		if (!send_header(fd, 64) || !send_all(fd, part, sizeof(part))) {
			rc = verdict(false, c, "cannot send");
		} else {
			close(fd);
			fd = -1;
			rc = still_serving(why, sizeof(why)) ?
			     verdict(true, c, "10 of 64 bytes, hung up; the agent still answers") :
			     verdict(false, c, "after a frame cut short: %s", why);
		}
	} else if (!strcmp(c, "garbage")) {
		static const char junk[] = "\x0a\xff\x01not an ApiRequest";

		if (!send_frame(fd, junk, sizeof(junk) - 1))
			rc = verdict(false, c, "cannot send");
		else if ((rc = expect_refusal(c, fd, -EBADMSG, NULL, got, sizeof(got))) == 0)
			rc = status_ok(fd, &gen, NULL, 0, why, sizeof(why)) ?
			     verdict(true, c, "-EBADMSG (%s); the same connection then answers a "
				     "GetClusterStatus (generation %llu)", got,
				     (unsigned long long)gen) :
			     verdict(false, c, "-EBADMSG, then the connection is no longer usable: %s",
				     why);
	} else if (!strcmp(c, "empty")) {
		if (!send_frame(fd, NULL, 0))
			rc = verdict(false, c, "cannot send");
		else if ((rc = expect_refusal(c, fd, -EOPNOTSUPP, NULL, got, sizeof(got))) == 0)
			rc = verdict(true, c, "an empty request: -EOPNOTSUPP (%s)", got);
	} else if (!strcmp(c, "hangup")) {
		ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
		Isergw__Ha__GetClusterStatus gs = ISERGW__HA__GET_CLUSTER_STATUS__INIT;

		req.op_case = ISERGW__HA__API_REQUEST__OP_GET_STATUS;
		req.get_status = &gs;
		/* the agent's reply finds a peer that reads no more (EPIPE) */
		if (shutdown(fd, SHUT_RD) < 0 || !send_request(fd, &req)) {
			rc = verdict(false, c, "cannot send");
		} else {
			close(fd);
			fd = -1;
			rc = still_serving(why, sizeof(why)) ?
			     verdict(true, c, "a request whose reply cannot be delivered; the agent "
				     "still answers") :
			     verdict(false, c, "after a client that hung up on its reply: %s", why);
		}
	} else if (!strcmp(c, "config") && argc == 2) {
		ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
		Isergw__Ha__ApplyClusterConfig ac = ISERGW__HA__APPLY_CLUSTER_CONFIG__INIT;
		size_t len;
		char *json = read_file(argv[0], &len);

		if (!json) {
			rc = verdict(false, c, "cannot read %s", argv[0]);
		} else {
			ac.config_json = json;
			req.op_case = ISERGW__HA__API_REQUEST__OP_APPLY_CONFIG;
			req.apply_config = &ac;
			if (!send_request(fd, &req))
				rc = verdict(false, c, "cannot send");
			else if ((rc = expect_refusal(c, fd, -EINVAL, argv[1], got, sizeof(got))) == 0)
				rc = verdict(true, c, "%s: -EINVAL (%s)", argv[0], got);
			free(json);
		}
	} else if (!strcmp(c, "move") && argc == 3) {
		ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
		Isergw__Ha__Move mv = ISERGW__HA__MOVE__INIT;

		mv.device_group = argv[0];
		mv.node = argv[1];
		req.op_case = ISERGW__HA__API_REQUEST__OP_MOVE;
		req.move = &mv;
		if (!send_request(fd, &req))
			rc = verdict(false, c, "cannot send");
		else if ((rc = expect_refusal(c, fd, -ENOENT, argv[2], got, sizeof(got))) == 0)
			rc = verdict(true, c, "%s to %s: -ENOENT (%s)", argv[0], argv[1], got);
	} else if (!strcmp(c, "lun") && argc == 3) {
		ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
		Isergw__Ha__ChangeLun cl = ISERGW__HA__CHANGE_LUN__INIT;

		cl.target = argv[0];
		cl.has_lun = true;
		cl.lun = 99;
		cl.lun_json = argv[1];
		req.op_case = ISERGW__HA__API_REQUEST__OP_CHANGE_LUN;
		req.change_lun = &cl;
		if (!send_request(fd, &req))
			rc = verdict(false, c, "cannot send");
		else if ((rc = expect_refusal(c, fd, -EINVAL, argv[2], got, sizeof(got))) == 0)
			rc = verdict(true, c, "%s: -EINVAL (%s)", argv[1], got);
	} else if (!strcmp(c, "drain") && argc == 2) {
		ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
		Isergw__Ha__Drain dr = ISERGW__HA__DRAIN__INIT;

		dr.node = argv[0];
		req.op_case = ISERGW__HA__API_REQUEST__OP_DRAIN;
		req.drain = &dr;
		if (!send_request(fd, &req))
			rc = verdict(false, c, "cannot send");
		else if ((rc = expect_refusal(c, fd, -ENOENT, argv[1], got, sizeof(got))) == 0)
			rc = verdict(true, c, "%s: -ENOENT (%s)", argv[0], got);
	} else {
		fprintf(stderr, "unknown api case '%s' or wrong arguments\n", c);
		rc = 2;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

static void usage(void)
{
	fputs("usage: ha_badmsg [--timeout S] group CASE [--node NAME] [--size BYTES]\n"
	      "       ha_badmsg [--timeout S] api SOCKET CASE [ARG...]\n"
	      "(cases: see the comment at the top of tests/ha/ha_badmsg.c)\n", stderr);
}

int main(int argc, char **argv)
{
	int i = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (i + 1 < argc && !strcmp(argv[i], "--timeout")) {
		char *end;
		long t = strtol(argv[i + 1], &end, 10);

		if (*end || t <= 0 || t > 3600) {
			usage();
			return 2;
		}
		timeout_s = (int)t;
		i += 2;
	}
	if (i + 1 < argc && !strcmp(argv[i], "group")) {
		const char *c = argv[i + 1], *node = "n3";
		unsigned long long size = 0;

		for (i += 2; i < argc; i += 2) {
			if (i + 1 < argc && !strcmp(argv[i], "--node")) {
				node = argv[i + 1];
			} else if (i + 1 < argc && !strcmp(argv[i], "--size")) {
				char *end;

				size = strtoull(argv[i + 1], &end, 10);
				if (*end || !size || size > (64u << 20)) {
					usage();
					return 2;
				}
			} else {
				usage();
				return 2;
			}
		}
		return group_case(c, node, (size_t)size);
	}
	if (i + 2 < argc && !strcmp(argv[i], "api")) {
		api_path = argv[i + 1];
		return api_case(argv[i + 2], argc - i - 3, argv + i + 3);
	}
	usage();
	return 2;
}
