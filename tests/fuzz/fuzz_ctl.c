/* SPDX-License-Identifier: Apache-2.0 */
// LINK: gw_dm isergw_proto -Wl,--wrap=bdev_file_open -Wl,--wrap=bdev_iscsi_open -Wl,--wrap=getaddrinfo
// COVERS: gateway/ctl/ctl.c gateway/ctl/ctl_ops.c gateway/ctl/ctl_ops_alua.c gateway/ctl/ctl_ops_lease.c gateway/ctl/ctl_ops_lu.c gateway/ctl/ctl_ops_reactors.c proto/ctl_wire.c
/*
 * isergwd's control socket (gateway/ctl/, proto/ctl_wire.c): the bytes one
 * client writes, framed or not, read and answered by the real control code
 * against a real daemon state: gw_create (core/runtime.c) with the portals,
 * targets, LUNs and ALUA groups of a configuration, the control state of
 * ctl_create, and the client of ctl_client_add on one end of a socketpair;
 * the other end is the client, whose every reply frame must decode
 * (ctl_reply_decode) with a status in range, or the target aborts. Nothing
 * runs on a thread: the control reactor and the data reactors are polled
 * (reactor_poll) until idle after every record, and the timers of the
 * control state (an ALUA transition, the lease) fire when the input says
 * time passes, on a clock of the input's (scsi_alua_lease_set_clock).
 *
 * The edges are faked: portals "listen" without a socket (the TCP and iSER
 * datamovers' listen/unlisten), addresses are resolved numerically only
 * (getaddrinfo without DNS), and every backing store, file, block device or
 * iscsi:// URL, opens one of eight memory files (memfd) chosen by its path,
 * so that nothing is created or written on disk however an ApplyConfig or
 * ChangeLun names its LUNs (the same path is the same store, so the "one
 * store, one LUN" refusals stay reachable). The configuration's state_dir
 * is /proc (reservations are only read from it, and no command runs here).
 *
 * Input: a mode byte (bit 0: a managed node: alua_lease, the external ALUA
 * policy and the cluster LU state, no portal or target until ApplyConfig;
 * bit 1: a client of another uid, refused; bit 2: ReloadConfig finds a
 * configuration file; bits 3-4: portals listen, or (1) those a reload adds
 * fail with EADDRINUSE, or (2) all wait with EADDRNOTAVAIL), then records [op][len, 16 bits big-endian][len bytes]:
 *   op & 3 = 0  the bytes, written to the socket as they are
 *   op & 3 = 1  the bytes as one frame body (the 4-byte length put before)
 *   op & 3 = 2  op >> 2: 0 time passes (the first 4 bytes, ms, big-endian)
 *               and the armed timers fire; 1 the client shuts its writing
 *               side; 2 it closes and connects again; 3 portals opened from
 *               now listen (first byte 0) or fail as in the mode
 *   op & 3 = 3  an ApplyConfig of epoch op >> 2 with the bytes as its JSON
 *
 * Seeds: the requests isergwctl, isergw-ha and isergw-api send, packed by
 * the real encoder (ctl_frame_pack): ISERGW_FUZZ_WRITE_SEEDS=DIR
 * build-fuzz/tests/fuzz/fuzz_ctl writes them into DIR and exits
 * (tests/fuzz/corpus/fuzz_ctl/ was made so).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/iscsi.h"
#include "ctl/ctl_priv.h"
#include "dm/dm.h"
#include "ctl_wire.h"
#include "scsi/scsi.h"
#include "config/config.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "check failed: %s (line %d)\n", #x, __LINE__); abort(); } } while (0)

/* ---------------- the edges ---------------- */

#define NMEM 16
#define MEM_SIZE (1u << 20)
#define CLOCK_START 1000000000ull

static int memfds[NMEM];
static uint64_t fz_now;
static int listen_rc;

int __real_bdev_file_open(const struct bdev_file_params *p, struct bdev **out);
int __wrap_bdev_file_open(const struct bdev_file_params *p, struct bdev **out);
int __wrap_bdev_iscsi_open(const struct bdev_iscsi_params *p, struct bdev **out);
int __real_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		       struct addrinfo **res);
int __wrap_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		       struct addrinfo **res);

/* A backing store: the memory file its path hashes to. */
static int mem_open(const struct bdev_file_params *p, const char *path, struct bdev **out)
{
	struct bdev_file_params q = *p;
	char fdpath[64];
	uint32_t h = 2166136261u;

	for (const char *s = path ? path : ""; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", memfds[h % NMEM]);
	q.path = fdpath;
	return __real_bdev_file_open(&q, out);
}

int __wrap_bdev_file_open(const struct bdev_file_params *p, struct bdev **out)
{
	if (!p || !p->path || !p->path[0])
		return __real_bdev_file_open(p, out);
	return mem_open(p, p->path, out);
}

int __wrap_bdev_iscsi_open(const struct bdev_iscsi_params *p, struct bdev **out)
{
	struct bdev_file_params q = {
		.block_size = p->block_size, .readonly = p->readonly,
	};
	char err[256];

	q.err = err;
	q.errlen = sizeof(err);
	return mem_open(&q, p->url, out);
}

/* No name service: numeric addresses only. */
int __wrap_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		       struct addrinfo **res)
{
	struct addrinfo h;

	if (hints)
		h = *hints;
	else
		memset(&h, 0, sizeof(h));
	h.ai_flags |= AI_NUMERICHOST | AI_NUMERICSERV;
	return __real_getaddrinfo(node, service, &h, res);
}

static int fake_listen(struct gw_portal *p)
{
	(void)p;
	return listen_rc;
}

static void fake_unlisten(struct gw_portal *p)
{
	(void)p;
}

static uint64_t fake_clock(void)
{
	return fz_now;
}

/* ---------------- configurations ---------------- */

static const char *const base_json[2] = {
	"{ \"reactors\": 2, \"state_dir\": \"/proc\","
	"  \"portals\": ["
	"    { \"url\": \"tcp://127.0.0.1:3260\", \"rel_port_id\": 1, \"tpg_id\": 1 },"
	"    { \"url\": \"tcp://[::1]:3261\", \"rel_port_id\": 2, \"tpg_id\": 2 } ],"
	"  \"port_groups\": [ { \"tpg_id\": 1, \"rel_port_ids\": [ 1 ] },"
	"                     { \"tpg_id\": 2, \"rel_port_ids\": [ 2 ] },"
	"                     { \"tpg_id\": 3, \"rel_port_ids\": [ 3, 4 ] } ],"
	"  \"device_groups\": [ { \"name\": \"dg1\", \"owner_tpg_id\": 1 },"
	"                       { \"name\": \"dg2\", \"owner_tpg_id\": 3,"
	"                         \"non_owner_state\": \"standby\" } ],"
	"  \"targets\": ["
	"    { \"iqn\": \"iqn.2026-11.org.isergw:t0\", \"luns\": ["
	"      { \"lun\": 0, \"path\": \"/var/lib/isergw/a.img\", \"size\": \"1M\","
	"        \"naa\": \"6001405aabbccddeeff0011223344556\" },"
	"      { \"lun\": 1, \"path\": \"/var/lib/isergw/b.img\", \"size\": \"1M\","
	"        \"device_group\": \"dg1\" } ] },"
	"    { \"iqn\": \"iqn.2026-11.org.isergw:t1\", \"luns\": ["
	"      { \"lun\": 0, \"path\": \"/var/lib/isergw/c.img\", \"size\": \"1M\","
	"        \"block_size\": 4096, \"device_group\": \"dg2\" } ] } ] }",
	/* a managed node before its agent configured it */
	"{ \"reactors\": 1, \"state_dir\": \"/proc\", \"alua_lease\": true,"
	"  \"alua_policy\": \"external\", \"lu_state\": \"cluster\" }",
};

static bool managed;

/*
 * The control socket's load: as isergwd's (main.c ctl_load and finish_config,
 * without command-line overrides): the document over the defaults (and the
 * managed settings), finalized and validated; the stores checked unless
 * managed.
 */
static int fz_load(void *arg, const char *json, struct gw_config **out, char *err, size_t errlen)
{
	struct gw_config base, *cfg;
	char verr[512];
	int rc;

	(void)arg;
	gw_config_defaults(&base);
	if (managed) {
		base.alua_lease = true;
		base.alua_policy_external = true;
	}
	rc = gw_config_load_string_base(json, &base, &cfg, err, errlen);
	if (rc)
		return rc;
	if (managed) {
		cfg->alua_lease = true;
		cfg->alua_policy_external = true;
	}
	gw_config_finalize(cfg);
	rc = gw_config_validate(cfg, verr, sizeof(verr));
	if (!rc && !managed)
		rc = gw_config_check_stores(cfg, verr, sizeof(verr));
	if (!rc && !managed)
		rc = gw_config_check_files(cfg, verr, sizeof(verr));
	if (rc) {
		snprintf(err, errlen, "invalid configuration: %s", verr);
		gw_config_free(cfg);
		return rc;
	}
	*out = cfg;
	return 0;
}

static bool have_file;

/* ReloadConfig: the start-up configuration as the file, or no file. */
static int fz_load_file(void *arg, struct gw_config **out, char *err, size_t errlen)
{
	if (!have_file) {
		snprintf(err, errlen, "no configuration file to re-read (quick serve)");
		return -EOPNOTSUPP;
	}
	return fz_load(arg, base_json[managed], out, err, errlen);
}

/* ---------------- the daemon and its client ---------------- */

struct fz {
	struct gw *gw;
	struct gw_ctl *ctl;
	int peer;               /* the client's end, -1: closed */
	bool wr_shut;
	uint8_t *in;            /* what the daemon sent, not yet a whole frame */
	size_t in_len, in_cap;
	uid_t uid;
};

/* Read what the daemon sent; every whole frame must be a Reply that decodes. */
static int drain(struct fz *z)
{
	int got = 0;

	while (z->peer >= 0) {
		ssize_t n;

		if (z->in_cap - z->in_len < 65536) {
			size_t cap = z->in_cap ? 2 * z->in_cap : 131072;
			uint8_t *nb = realloc(z->in, cap);

			CHECK(nb);
			z->in = nb;
			z->in_cap = cap;
		}
		n = recv(z->peer, z->in + z->in_len, z->in_cap - z->in_len, MSG_DONTWAIT);
		if (n <= 0)
			break;
		z->in_len += (size_t)n;
		got += (int)n;
	}
	while (z->in_len >= CTL_FRAME_HDR) {
		uint32_t len = be32toh(*(const uint32_t *)(const void *)z->in);
		CtlReply *rep = NULL;
		char err[256];

		CHECK(len <= CTL_REPLY_FRAME_MAX);
		if (z->in_len < CTL_FRAME_HDR + len)
			break;
		if (ctl_reply_decode(z->in + CTL_FRAME_HDR, len, &rep, err, sizeof(err))) {
			fprintf(stderr, "fuzz_ctl: the daemon sent a frame that does not decode: %s\n",
				err);
			abort();
		}
		CHECK(rep->status <= 0 && rep->status >= -CTL_ERRNO_MAX);
		CHECK(rep->status == 0 || (rep->error && rep->error[0]));
		ctl_reply_free(rep);
		memmove(z->in, z->in + CTL_FRAME_HDR + len, z->in_len - CTL_FRAME_HDR - len);
		z->in_len -= CTL_FRAME_HDR + len;
	}
	return got;
}

/* Poll the control and data reactors and read the replies until nothing moves. */
static void pump(struct fz *z)
{
	for (int round = 0; round < 256; round++) {
		int n = 0, rc;

		rc = reactor_poll(z->ctl->r);
		n += rc > 0 ? rc : 0;
		for (unsigned int i = 0; i < z->gw->nreactors; i++) {
			rc = reactor_poll(z->gw->reactors[i]);
			n += rc > 0 ? rc : 0;
		}
		n += drain(z);
		if (!n)
			return;
	}
}

static void client_connect(struct fz *z)
{
	struct ucred cred = { .pid = getpid(), .uid = z->uid, .gid = getegid() };
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	if (ctl_client_add(z->ctl, sv[0], &cred)) {
		close(sv[0]);
		close(sv[1]);
		z->peer = -1;
		return;
	}
	z->peer = sv[1];
	z->wr_shut = false;
	z->in_len = 0;
}

static void client_close(struct fz *z)
{
	if (z->peer >= 0)
		close(z->peer);
	z->peer = -1;
	pump(z);
}

/* Write as the client does; a daemon that does not read (busy, or gone) gets the rest dropped. */
static void client_write(struct fz *z, const uint8_t *d, size_t n)
{
	int stalls = 0;

	while (n && z->peer >= 0 && !z->wr_shut) {
		ssize_t w = send(z->peer, d, n, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w > 0) {
			d += w;
			n -= (size_t)w;
			stalls = 0;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return;
		pump(z);
		if (++stalls > 4)
			return;
	}
}

/* Time passes: the lease clock moves and the control state's armed timers fire. */
static void time_passes(struct fz *z, uint64_t ms)
{
	struct gw_ctl *ctl = z->ctl;

	fz_now += ms;
	if (ctl->lease_timer.armed) {
		reactor_timer_cancel(ctl->r, &ctl->lease_timer);
		ctl_lease_timer_fired(ctl);
	}
	if (ctl->transition_timer.armed) {
		reactor_timer_cancel(ctl->r, &ctl->transition_timer);
		ctl_alua_transition_end(ctl);
	}
	pump(z);
}

static int fz_open(struct fz *z, uint8_t mode)
{
	struct gw_ctl_params p = {
		.path = "/nonexistent/isergw-fuzz/isergwd.sock",
		.load = fz_load,
		.load_file = fz_load_file,
		.config_path = "/nonexistent/isergw-fuzz/isergwd.json",
	};
	struct gw_config *cfg;
	char err[600];

	memset(z, 0, sizeof(*z));
	z->peer = -1;
	managed = mode & 1;
	have_file = mode & 4;
	z->uid = (mode & 2) ? geteuid() + 4242 : geteuid();
	/* a port in use fails a start: that one is for the portals a reload adds */
	listen_rc = ((mode >> 3) & 3) == 2 ? -EADDRNOTAVAIL : 0;
	fz_now = CLOCK_START;
	scsi_alua_reset();
	for (size_t i = 0; i < NMEM; i++)
		CHECK(ftruncate(memfds[i], MEM_SIZE) == 0);
	if (fz_load(NULL, base_json[managed], &cfg, err, sizeof(err))) {
		fprintf(stderr, "fuzz_ctl: base configuration: %s\n", err);
		abort();
	}
	if (gw_create(cfg, &z->gw)) {
		gw_config_free(cfg);
		return -1;
	}
	CHECK(ctl_create(z->gw, &p, &z->ctl) == 0);
	if (((mode >> 3) & 3) == 1)
		listen_rc = -EADDRINUSE;
	ctl_lease_resync(z->ctl);
	pump(z);
	client_connect(z);
	pump(z);
	return 0;
}

static void fz_close(struct fz *z)
{
	client_close(z);
	for (int i = 0; i < 64 && atomic_load(&z->ctl->inflight); i++)
		pump(z);
	CHECK(atomic_load(&z->ctl->inflight) == 0);
	ctl_destroy(z->ctl);
	pthread_mutex_lock(&z->gw->sess_lock);
	for (size_t i = 0; i < z->gw->nportals; i++)
		gw_portal_close(z->gw->portals[i]);
	pthread_mutex_unlock(&z->gw->sess_lock);
	for (unsigned int i = 0; i < z->gw->nreactors; i++)
		reactor_poll(z->gw->reactors[i]);
	gw_destroy(z->gw);
	free(z->in);
}

/* ---------------- seeds ---------------- */

struct seedbuf {
	uint8_t b[65536];
	size_t n;
};

static void seed_raw(struct seedbuf *s, uint8_t op, const void *d, size_t n)
{
	CHECK(s->n + 3 + n <= sizeof(s->b));
	s->b[s->n++] = op;
	s->b[s->n++] = (uint8_t)(n >> 8);
	s->b[s->n++] = (uint8_t)n;
	memcpy(s->b + s->n, d, n);
	s->n += n;
}

/* One request as isergwctl writes it: a frame packed by ctl_frame_pack. */
static void seed_req(struct seedbuf *s, CtlRequest *req)
{
	uint8_t *buf;
	size_t len;

	CHECK(ctl_frame_pack(&req->base, &buf, &len) == 0);
	seed_raw(s, 0, buf, len);
	free(buf);
}

static void seed_time(struct seedbuf *s, uint32_t ms)
{
	uint32_t be = htobe32(ms);

	seed_raw(s, 2, &be, sizeof(be));
}

static void seed_write(const char *dir, const char *name, const struct seedbuf *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f && fwrite(s->b, 1, s->n, f) == s->n && fclose(f) == 0);
}

#define REQ(name, field, op, type, init) \
	CtlRequest name = ISERGW__CTL__REQUEST__INIT; \
	type name##_m = init; \
	name.op_case = op; \
	name.field = &name##_m

static const char seed_config[] =
	"{ \"lu_state\": \"cluster\", \"portals\": [ { \"url\": \"tcp://127.0.0.1:3260\", \"rel_port_id\": 1 },"
	"  { \"url\": \"iser://192.0.2.5:3260\", \"rel_port_id\": 5, \"tpg_id\": 2 } ],"
	"  \"device_groups\": [ { \"name\": \"dg1\", \"owner_tpg_id\": 1 } ],"
	"  \"targets\": [ { \"iqn\": \"iqn.2026-11.org.isergw:t0\", \"luns\": ["
	"    { \"lun\": 0, \"path\": \"/var/lib/isergw/a.img\", \"size\": \"1M\","
	"      \"naa\": \"6001405aabbccddeeff0011223344556\" },"
	"    { \"lun\": 7, \"path\": \"iscsi://192.0.2.9/iqn.2026-11.org.backend:x/0\","
	"      \"device_group\": \"dg1\" } ] } ] }";

static void write_seeds(const char *dir)
{
	struct seedbuf s;

	REQ(status, get_status, ISERGW__CTL__REQUEST__OP_GET_STATUS, Isergw__Ctl__GetStatus,
	    ISERGW__CTL__GET_STATUS__INIT);
	REQ(apply, apply_config, ISERGW__CTL__REQUEST__OP_APPLY_CONFIG, Isergw__Ctl__ApplyConfig,
	    ISERGW__CTL__APPLY_CONFIG__INIT);
	REQ(chlun, change_lun, ISERGW__CTL__REQUEST__OP_CHANGE_LUN, Isergw__Ctl__ChangeLun,
	    ISERGW__CTL__CHANGE_LUN__INIT);
	REQ(reload, reload_config, ISERGW__CTL__REQUEST__OP_RELOAD_CONFIG,
	    Isergw__Ctl__ReloadConfig, ISERGW__CTL__RELOAD_CONFIG__INIT);
	REQ(sessions, list_sessions, ISERGW__CTL__REQUEST__OP_LIST_SESSIONS,
	    Isergw__Ctl__ListSessions, ISERGW__CTL__LIST_SESSIONS__INIT);
	REQ(counters, get_counters, ISERGW__CTL__REQUEST__OP_GET_COUNTERS,
	    Isergw__Ctl__GetCounters, ISERGW__CTL__GET_COUNTERS__INIT);
	REQ(logout, logout, ISERGW__CTL__REQUEST__OP_LOGOUT, Isergw__Ctl__Logout,
	    ISERGW__CTL__LOGOUT__INIT);
	REQ(sub, subscribe, ISERGW__CTL__REQUEST__OP_SUBSCRIBE, Isergw__Ctl__Subscribe,
	    ISERGW__CTL__SUBSCRIBE__INIT);
	REQ(setalua, set_alua_states, ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES,
	    Isergw__Ctl__SetAluaStates, ISERGW__CTL__SET_ALUA_STATES__INIT);
	REQ(getalua, get_alua_states, ISERGW__CTL__REQUEST__OP_GET_ALUA_STATES,
	    Isergw__Ctl__GetAluaStates, ISERGW__CTL__GET_ALUA_STATES__INIT);
	REQ(map, set_alua_map, ISERGW__CTL__REQUEST__OP_SET_ALUA_MAP, Isergw__Ctl__SetAluaMap,
	    ISERGW__CTL__SET_ALUA_MAP__INIT);
	REQ(renew, renew_lease, ISERGW__CTL__REQUEST__OP_RENEW_LEASE, Isergw__Ctl__RenewLease,
	    ISERGW__CTL__RENEW_LEASE__INIT);
	REQ(getlease, get_lease, ISERGW__CTL__REQUEST__OP_GET_LEASE, Isergw__Ctl__GetLease,
	    ISERGW__CTL__GET_LEASE__INIT);
	REQ(stepdown, step_down, ISERGW__CTL__REQUEST__OP_STEP_DOWN, Isergw__Ctl__StepDown,
	    ISERGW__CTL__STEP_DOWN__INIT);
	REQ(ardone, alua_request_done, ISERGW__CTL__REQUEST__OP_ALUA_REQUEST_DONE,
	    Isergw__Ctl__AluaRequestDone, ISERGW__CTL__ALUA_REQUEST_DONE__INIT);
	REQ(luapply, lu_state_apply, ISERGW__CTL__REQUEST__OP_LU_STATE_APPLY,
	    Isergw__Ctl__LuStateApply, ISERGW__CTL__LU_STATE_APPLY__INIT);
	REQ(ludone, lu_state_done, ISERGW__CTL__REQUEST__OP_LU_STATE_DONE,
	    Isergw__Ctl__LuStateDone, ISERGW__CTL__LU_STATE_DONE__INIT);
	Isergw__Ctl__AluaGroupState g1 = ISERGW__CTL__ALUA_GROUP_STATE__INIT;
	Isergw__Ctl__AluaGroupState g2 = ISERGW__CTL__ALUA_GROUP_STATE__INIT;
	Isergw__Ctl__AluaGroupState *gs[2] = { &g1, &g2 };
	Isergw__Ctl__DeviceGroupStates d1 = ISERGW__CTL__DEVICE_GROUP_STATES__INIT;
	Isergw__Ctl__DeviceGroupStates d2 = ISERGW__CTL__DEVICE_GROUP_STATES__INIT;
	Isergw__Ctl__DeviceGroupStates *ds[2] = { &d1, &d2 };
	Isergw__Ctl__LuState lst = ISERGW__CTL__LU_STATE__INIT;
	Isergw__Ctl__LuReg reg = ISERGW__CTL__LU_REG__INIT;
	Isergw__Ctl__LuReg *regs[1] = { &reg };
	static uint8_t naa[16] = { 0x60, 0x01, 0x40, 0x5a, 0xab, 0xbc, 0xcd, 0xde,
				   0xef, 0xf0, 0x01, 0x12, 0x23, 0x34, 0x45, 0x56 };

	/* isergwctl status */
	s.n = 0;
	s.b[s.n++] = 0;
	seed_req(&s, &status);
	seed_write(dir, "status", &s);

	/* isergw-api standalone: ApplyConfig, again unchanged, ChangeLun add and remove */
	s.n = 0;
	s.b[s.n++] = 0;
	apply_m.epoch = 1;
	apply_m.config_json = ctl_str(seed_config);
	seed_req(&s, &apply);
	seed_req(&s, &apply);
	chlun_m.epoch = 2;
	chlun_m.target = ctl_str("iqn.2026-11.org.isergw:t0");
	chlun_m.lun = 5;
	chlun_m.lun_json = ctl_str("{ \"lun\": 5, \"path\": \"/var/lib/isergw/e.img\", "
				   "\"size\": \"1M\" }");
	seed_req(&s, &chlun);
	chlun_m.epoch = 3;
	chlun_m.lun = 0;
	chlun_m.lun_json = ctl_str("");
	seed_req(&s, &chlun);
	seed_req(&s, &status);
	seed_write(dir, "apply-changelun", &s);

	/* isergwctl reload, sessions, counters, logout */
	s.n = 0;
	s.b[s.n++] = 4;
	seed_req(&s, &reload);
	seed_req(&s, &sessions);
	counters_m.lun_latency = true;
	seed_req(&s, &counters);
	logout_m.who_case = ISERGW__CTL__LOGOUT__WHO_INITIATOR;
	logout_m.initiator = ctl_str("iqn.1994-05.com.redhat:client1");
	logout_m.grace_s = 5;
	seed_req(&s, &logout);
	logout_m.who_case = ISERGW__CTL__LOGOUT__WHO_TSIH;
	logout_m.tsih = 1;
	logout_m.immediate = true;
	seed_req(&s, &logout);
	seed_write(dir, "sessions-counters-logout", &s);

	/* isergwctl alua set with a transition, get; isergw-ha's SetAluaMap */
	s.n = 0;
	s.b[s.n++] = 0;
	g1.tpg_id = 1;
	g1.state = ISERGW__CTL__ALUA_STATE__ALUA_AO;
	g1.pref = true;
	g2.tpg_id = 2;
	g2.state = ISERGW__CTL__ALUA_STATE__ALUA_STANDBY;
	setalua_m.epoch = 1;
	setalua_m.device_group = ctl_str("dg1");
	setalua_m.groups = gs;
	setalua_m.n_groups = 2;
	setalua_m.transition_ms = 2000;
	seed_req(&s, &sub);
	seed_req(&s, &setalua);
	seed_time(&s, 2500);
	getalua_m.device_group = ctl_str("dg1");
	seed_req(&s, &getalua);
	d1.device_group = ctl_str("");
	d1.groups = gs;
	d1.n_groups = 2;
	d2.device_group = ctl_str("dg2");
	d2.groups = gs;
	d2.n_groups = 1;
	map_m.epoch = 2;
	map_m.device_groups = ds;
	map_m.n_device_groups = 2;
	seed_req(&s, &map);
	seed_write(dir, "alua", &s);

	/* isergw-ha on a managed node: configuration, lease, LU state, step down */
	s.n = 0;
	s.b[s.n++] = 1;
	seed_req(&s, &sub);
	apply_m.epoch = 1;
	seed_req(&s, &apply);
	renew_m.expires_mono_ms = CLOCK_START + 5000;
	seed_req(&s, &renew);
	seed_req(&s, &getlease);
	lst.naa.data = naa;
	lst.naa.len = sizeof(naa);
	lst.version = 1;
	lst.pr_generation = 1;
	lst.pr_holder = -1;
	reg.key = 0x1234;
	reg.rel_port = 1;
	reg.iport = ctl_str("iqn.1994-05.com.redhat:client1,i,0x800000000001");
	lst.regs = regs;
	lst.n_regs = 1;
	luapply_m.state = &lst;
	luapply_m.initial = true;
	seed_req(&s, &luapply);
	ludone_m.proposal_id = 1;
	ludone_m.status = 0;
	seed_req(&s, &ludone);
	ardone_m.request_id = 1;
	ardone_m.status = -EAGAIN;
	seed_req(&s, &ardone);
	seed_time(&s, 6000);
	seed_req(&s, &getlease);
	stepdown_m.reason = ctl_str("maintenance");
	seed_req(&s, &stepdown);
	seed_write(dir, "managed-lease", &s);

	/* frames split anywhere; a frame too large; a truncated one then a half-close */
	{
		uint8_t *buf;
		size_t len;
		static const uint8_t big[4] = { 0x00, 0x20, 0x00, 0x00 };

		CHECK(ctl_frame_pack(&status.base, &buf, &len) == 0);
		s.n = 0;
		s.b[s.n++] = 0x08;
		seed_raw(&s, 0, buf, 1);
		seed_raw(&s, 0, buf + 1, len - 1);
		seed_raw(&s, 0, buf, len - 1);
		seed_raw(&s, 2 | (1 << 2), "", 0);
		seed_write(dir, "split-truncated", &s);
		s.n = 0;
		s.b[s.n++] = 0;
		seed_raw(&s, 0, big, sizeof(big));
		seed_raw(&s, 2 | (2 << 2), "", 0);
		seed_raw(&s, 1, buf + CTL_FRAME_HDR, len - CTL_FRAME_HDR);
		seed_raw(&s, 3 | (4 << 2), seed_config, strlen(seed_config));
		seed_write(dir, "oversize-reconnect", &s);
		free(buf);
	}
}

/* ---------------- libFuzzer ---------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("ISERGW_FUZZ_WRITE_SEEDS");

	(void)argc;
	(void)argv;
	gw_log_set_level(getenv("ISERGW_FUZZ_LOG") ? GW_LOG_DEBUG : GW_LOG_ERR);
	unsetenv("NOTIFY_SOCKET");
	if (seeds) {
		write_seeds(seeds);
		exit(0);
	}
	for (size_t i = 0; i < NMEM; i++) {
		char name[32];

		snprintf(name, sizeof(name), "fuzz-ctl-store-%zu", i);
		memfds[i] = memfd_create(name, MFD_CLOEXEC);
		CHECK(memfds[i] >= 0);
	}
	gw_dm_for_transport(GW_TRANSPORT_TCP);
	gw_dm_tcp_ops.listen = fake_listen;
	gw_dm_tcp_ops.unlisten = fake_unlisten;
	if (gw_dm_for_transport(GW_TRANSPORT_ISER)) {
		gw_dm_iser_ops.listen = fake_listen;
		gw_dm_iser_ops.unlisten = fake_unlisten;
	}
	scsi_alua_lease_set_clock(fake_clock);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz z;
	size_t off = 1;

	if (size < 1)
		return 0;
	if (fz_open(&z, data[0]))
		return 0;
	while (off + 3 <= size) {
		uint8_t op = data[off];
		size_t len = (size_t)data[off + 1] << 8 | data[off + 2];
		const uint8_t *d = data + off + 3;

		off += 3;
		if (len > size - off)
			len = size - off;
		off += len;
		switch (op & 3) {
		case 0:
			client_write(&z, d, len);
			break;
		case 1: {
			uint32_t be = htobe32((uint32_t)len);

			client_write(&z, (const uint8_t *)&be, sizeof(be));
			client_write(&z, d, len);
			break;
		}
		case 2:
			switch (op >> 2) {
			case 0: {
				uint32_t ms = 1000;

				if (len >= 4)
					ms = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 |
					     (uint32_t)d[2] << 8 | d[3];
				time_passes(&z, ms);
				break;
			}
			case 1:
				if (z.peer >= 0 && !z.wr_shut) {
					shutdown(z.peer, SHUT_WR);
					z.wr_shut = true;
				}
				break;
			case 2:
				client_close(&z);
				client_connect(&z);
				break;
			case 3:
				listen_rc = len && d[0] ? -EADDRINUSE : 0;
				break;
			default:
				break;
			}
			break;
		case 3: {
			CtlRequest req = ISERGW__CTL__REQUEST__INIT;
			Isergw__Ctl__ApplyConfig ac = ISERGW__CTL__APPLY_CONFIG__INIT;
			char *json = malloc(len + 1);
			uint8_t *buf;
			size_t blen;

			CHECK(json);
			memcpy(json, d, len);
			json[len] = '\0';
			ac.epoch = op >> 2;
			ac.config_json = json;
			req.op_case = ISERGW__CTL__REQUEST__OP_APPLY_CONFIG;
			req.apply_config = &ac;
			if (ctl_frame_pack(&req.base, &buf, &blen) == 0) {
				client_write(&z, buf, blen);
				free(buf);
			}
			free(json);
			break;
		}
		}
		pump(&z);
	}
	fz_close(&z);
	return 0;
}
