// LINK: isergw_proto
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control socket's wire layer (proto/ctl_wire.c): frames read from a
 * socketpair byte by byte, in one go, truncated (header and body), oversized
 * (no body read), empty; request decoding of garbage, an unknown operation,
 * an empty request, bad enum values at any depth, and the range checks of
 * every operation; the ALUA state names; events: Subscribe and
 * AluaRequestDone requests (ranges), the Event a subscriber receives
 * (encoded as the daemon does, decoded and checked as a client does: every
 * field in range, bad enum values, an unknown event kind passed on), and
 * event frames read from a socket between replies; SetAluaMap (epoch, the
 * number of device groups, a name twice, each group list checked as
 * SetAluaStates' and named by its index) and the lease requests (RenewLease,
 * StepDown, GetLease).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_wire.h"

struct pair {
	int rd, wr;
};

static int setup(void **state)
{
	struct pair *p = malloc(sizeof(*p));
	int sv[2];

	assert_non_null(p);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	p->rd = sv[0];
	p->wr = sv[1];
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct pair *p = *state;

	close(p->rd);
	if (p->wr >= 0)
		close(p->wr);
	free(p);
	return 0;
}

static void put(struct pair *p, const void *b, size_t n)
{
	assert_int_equal(write(p->wr, b, n), (ssize_t)n);
}

static void close_wr(struct pair *p)
{
	close(p->wr);
	p->wr = -1;
}

static void frame_whole(void **state)
{
	struct pair *p = *state;
	const uint8_t f[] = { 0, 0, 0, 3, 'a', 'b', 'c' };
	struct ctl_frame_rx rx;

	ctl_frame_rx_init(&rx);
	put(p, f, sizeof(f));
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), 1);
	assert_int_equal(rx.len, 3);
	assert_memory_equal(rx.body, "abc", 3);
	ctl_frame_rx_reset(&rx);
	/* nothing more: would block */
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), 0);
	/* the peer closes between frames */
	close_wr(p);
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), -ENOTCONN);
	ctl_frame_rx_reset(&rx);
}

static void frame_bytewise(void **state)
{
	struct pair *p = *state;
	const uint8_t f[] = { 0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0, 0 };
	struct ctl_frame_rx rx;

	ctl_frame_rx_init(&rx);
	for (size_t i = 0; i < 8; i++) {
		put(p, &f[i], 1);
		assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), 0);
	}
	put(p, &f[8], 1);
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), 1);
	assert_int_equal(rx.len, 5);
	assert_memory_equal(rx.body, f + 4, 5);
	ctl_frame_rx_reset(&rx);
	/* an empty frame is a frame */
	put(p, f + 9, 4);
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), 1);
	assert_int_equal(rx.len, 0);
	ctl_frame_rx_reset(&rx);
}

static void frame_truncated_body(void **state)
{
	struct pair *p = *state;
	const uint8_t f[] = { 0, 0, 0, 100, 1, 2, 3 };
	struct ctl_frame_rx rx;

	ctl_frame_rx_init(&rx);
	put(p, f, sizeof(f));
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), 0);
	close_wr(p);
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), -EPIPE);
	assert_int_equal(rx.have, 3);
	assert_int_equal(rx.len, 100);
	ctl_frame_rx_reset(&rx);
}

static void frame_truncated_header(void **state)
{
	struct pair *p = *state;
	const uint8_t f[] = { 0, 0 };
	struct ctl_frame_rx rx;

	ctl_frame_rx_init(&rx);
	put(p, f, sizeof(f));
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), 0);
	close_wr(p);
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), -EPIPE);
	assert_int_equal(rx.hdr_have, 2);
	ctl_frame_rx_reset(&rx);
}

static void frame_oversized(void **state)
{
	struct pair *p = *state;
	const uint8_t f[] = { 0xff, 0xff, 0xff, 0xff, 9, 9, 9, 9 };
	const uint8_t g[] = { 0, 0, 0x10, 1 };  /* max + 1 */
	struct ctl_frame_rx rx;
	uint8_t rest[8];

	ctl_frame_rx_init(&rx);
	put(p, f, sizeof(f));
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, CTL_FRAME_MAX), -EMSGSIZE);
	assert_null(rx.body);                   /* nothing allocated */
	/* the body was not read: still in the socket */
	assert_int_equal(read(p->rd, rest, sizeof(rest)), 4);
	ctl_frame_rx_reset(&rx);
	put(p, g, sizeof(g));
	assert_int_equal(ctl_frame_rx_read(&rx, p->rd, 4096), -EMSGSIZE);
	assert_int_equal(rx.len, 0x1001);
	ctl_frame_rx_reset(&rx);
}

static void pack_roundtrip(void **state)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT, *out = NULL;
	Isergw__Ctl__GetStatus gs = ISERGW__CTL__GET_STATUS__INIT;
	char err[200];
	uint8_t *buf;
	size_t len;

	(void)state;
	req.op_case = ISERGW__CTL__REQUEST__OP_GET_STATUS;
	req.get_status = &gs;
	assert_int_equal(ctl_frame_pack(&req.base, &buf, &len), 0);
	assert_int_equal(len, 4 + ((uint32_t)buf[3] | (uint32_t)buf[2] << 8));
	assert_int_equal(ctl_request_decode(buf + 4, len - 4, &out, err, sizeof(err)), 0);
	assert_int_equal(out->op_case, ISERGW__CTL__REQUEST__OP_GET_STATUS);
	assert_string_equal(ctl_op_name(out), "get_status");
	ctl_request_free(out);
	free(buf);
}

/* Decode a packed request; returns the status, the reason in err. */
static int decode(const CtlRequest *req, char *err, size_t errlen)
{
	CtlRequest *out = NULL;
	uint8_t *buf;
	size_t len;
	int rc;

	assert_int_equal(ctl_frame_pack(&req->base, &buf, &len), 0);
	err[0] = '\0';
	rc = ctl_request_decode(buf + 4, len - 4, &out, err, errlen);
	free(buf);
	if (rc == 0)
		ctl_request_free(out);
	else
		assert_null(out);
	return rc;
}

static void decode_garbage(void **state)
{
	const uint8_t garbage[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	const uint8_t truncated_sub[] = { 0x0a, 0x05, 0x00 };   /* field 1, 5 bytes, only 1 */
	const uint8_t wrong_wire[] = { 0x0d, 1, 2, 3, 4 };      /* field 1 as fixed32 */
	CtlRequest *out = NULL;
	char err[200];

	(void)state;
	assert_int_equal(ctl_request_decode(garbage, sizeof(garbage), &out, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "malformed"));
	assert_int_equal(ctl_request_decode(truncated_sub, sizeof(truncated_sub), &out, err,
					    sizeof(err)), -EBADMSG);
	assert_int_equal(ctl_request_decode(wrong_wire, sizeof(wrong_wire), &out, err, sizeof(err)),
			 -EBADMSG);
	assert_null(out);
}

static void decode_unknown_op(void **state)
{
	const uint8_t unknown[] = { 0x98, 0x06, 0x01 };         /* field 99 = 1 */
	CtlRequest *out = NULL;
	char err[200];

	(void)state;
	assert_int_equal(ctl_request_decode(unknown, sizeof(unknown), &out, err, sizeof(err)),
			 -EOPNOTSUPP);
	assert_string_equal(err, "unknown operation (field 99)");
	assert_int_equal(ctl_request_decode((const uint8_t *)"", 0, &out, err, sizeof(err)),
			 -EOPNOTSUPP);
	assert_string_equal(err, "no operation in the request");
}

static void decode_bad_enum(void **state)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__SetAluaStates s = ISERGW__CTL__SET_ALUA_STATES__INIT;
	Isergw__Ctl__AluaGroupState g[2] = { ISERGW__CTL__ALUA_GROUP_STATE__INIT,
					      ISERGW__CTL__ALUA_GROUP_STATE__INIT };
	Isergw__Ctl__AluaGroupState *gp[2] = { &g[0], &g[1] };
	char err[200];

	(void)state;
	g[0].tpg_id = 1;
	g[0].state = ISERGW__CTL__ALUA_STATE__ALUA_STANDBY;
	g[1].tpg_id = 2;
	g[1].state = ISERGW__CTL__ALUA_STATE__ALUA_OFFLINE;
	s.epoch = 3;
	s.groups = gp;
	s.n_groups = 2;
	req.op_case = ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES;
	req.set_alua_states = &s;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	/* the second entry of the repeated field, a value between defined ones */
	g[1].state = (Isergw__Ctl__AluaState)4;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "AluaGroupState.state: 4 is not a valid AluaState");
	g[1].state = (Isergw__Ctl__AluaState)-1;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	g[1].state = ISERGW__CTL__ALUA_STATE__ALUA_TRANSITIONING;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
}

static void decode_alua_ranges(void **state)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__SetAluaStates s = ISERGW__CTL__SET_ALUA_STATES__INIT;
	Isergw__Ctl__AluaGroupState g[CTL_ALUA_MAX_GROUPS + 1];
	Isergw__Ctl__AluaGroupState *gp[CTL_ALUA_MAX_GROUPS + 1];
	char err[200], dg[CTL_DG_NAME_MAX + 2];

	(void)state;
	for (size_t i = 0; i <= CTL_ALUA_MAX_GROUPS; i++) {
		isergw__ctl__alua_group_state__init(&g[i]);
		g[i].tpg_id = (uint32_t)(i + 1);
		gp[i] = &g[i];
	}
	req.op_case = ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES;
	req.set_alua_states = &s;
	s.groups = gp;
	s.n_groups = 1;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);     /* epoch 0 */
	assert_non_null(strstr(err, "epoch"));
	s.epoch = 1;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	s.n_groups = 0;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no groups"));
	s.n_groups = CTL_ALUA_MAX_GROUPS + 1;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	s.n_groups = CTL_ALUA_MAX_GROUPS;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	g[5].tpg_id = 70000;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	g[5].tpg_id = 3;                                                /* = g[2] */
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "set_alua_states: group 3 listed twice");
	g[5].tpg_id = 6;
	s.transition_ms = CTL_TRANSITION_MAX_MS + 1;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	s.transition_ms = CTL_TRANSITION_MAX_MS;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	memset(dg, 'x', sizeof(dg) - 1);
	dg[sizeof(dg) - 1] = '\0';
	s.device_group = dg;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
}

/* SetAluaMap: the map's own limits, then each device group's list as SetAluaStates'. */
static void decode_alua_map(void **state)
{
	enum { NDG = CTL_ALUA_MAP_MAX_DG + 1 };
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__SetAluaMap m = ISERGW__CTL__SET_ALUA_MAP__INIT;
	Isergw__Ctl__DeviceGroupStates *d = calloc(NDG, sizeof(*d));
	Isergw__Ctl__DeviceGroupStates **dp = calloc(NDG, sizeof(*dp));
	Isergw__Ctl__AluaGroupState g[CTL_ALUA_MAX_GROUPS + 1];
	Isergw__Ctl__AluaGroupState *gp[CTL_ALUA_MAX_GROUPS + 1];
	char (*names)[16] = calloc(NDG, 16), err[200], longname[CTL_DG_NAME_MAX + 2];

	(void)state;
	assert_non_null(d);
	assert_non_null(dp);
	assert_non_null(names);
	for (size_t i = 0; i <= CTL_ALUA_MAX_GROUPS; i++) {
		isergw__ctl__alua_group_state__init(&g[i]);
		g[i].tpg_id = (uint32_t)(i + 1);
		g[i].state = ISERGW__CTL__ALUA_STATE__ALUA_STANDBY;
		gp[i] = &g[i];
	}
	for (size_t i = 0; i < NDG; i++) {
		isergw__ctl__device_group_states__init(&d[i]);
		snprintf(names[i], 16, "dg%zu", i);
		d[i].device_group = names[i];
		d[i].groups = gp;
		d[i].n_groups = 2;
		dp[i] = &d[i];
	}
	req.op_case = ISERGW__CTL__REQUEST__OP_SET_ALUA_MAP;
	req.set_alua_map = &m;
	m.device_groups = dp;
	m.n_device_groups = 3;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);     /* epoch 0 */
	assert_string_equal(err, "set_alua_map: epoch must be >= 1");
	m.epoch = 12;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	m.n_device_groups = 0;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "set_alua_map: no device groups");
	m.n_device_groups = CTL_ALUA_MAP_MAX_DG + 1;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "set_alua_map: 257 device groups (at most 256)");
	m.n_device_groups = CTL_ALUA_MAP_MAX_DG;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	m.transition_ms = CTL_TRANSITION_MAX_MS + 1;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "transition_ms"));
	m.transition_ms = CTL_TRANSITION_MAX_MS;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);

	/* a device group twice, "" and "default" being the same one */
	m.n_device_groups = 3;
	d[2].device_group = names[0];
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "set_alua_map: device group 'dg0' listed twice");
	d[0].device_group = ctl_str("");
	d[2].device_group = ctl_str("default");
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "set_alua_map: device group 'default' listed twice");
	d[2].device_group = names[2];
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	d[1].device_group = longname;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "set_alua_map: device_groups[1].device_group longer than 63 bytes");
	d[1].device_group = names[1];

	/* each list as SetAluaStates', named by its index */
	d[1].n_groups = 0;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "set_alua_map: device_groups[1]: no groups");
	d[1].n_groups = CTL_ALUA_MAX_GROUPS + 1;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "set_alua_map: device_groups[1]: 65 groups (at most 64)");
	d[1].n_groups = CTL_ALUA_MAX_GROUPS;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	g[4].tpg_id = 70000;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "set_alua_map: device_groups[1]: groups[4].tpg_id 70000 not in 1..65535");
	g[4].tpg_id = 0;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	g[4].tpg_id = 1;                                                /* = g[0] */
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "set_alua_map: device_groups[1]: group 1 listed twice");
	g[4].tpg_id = 5;
	/* an enum value the enum does not have, in a nested list */
	g[1].state = (Isergw__Ctl__AluaState)9;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "AluaGroupState.state: 9 is not a valid AluaState");
	g[1].state = ISERGW__CTL__ALUA_STATE__ALUA_AO;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);

	/* the keys to fence: with a placement-only change only, said set, non-zero, 64 at most */
	{
		uint64_t keys[CTL_PR_FENCE_MAX + 1];

		for (size_t i = 0; i <= CTL_PR_FENCE_MAX; i++)
			keys[i] = 0x6973677700000000ull + i + 1;
		m.backend_pr_fence = keys;
		m.backend_pr_fence_set = true;
		assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, "set_alua_map: backend_pr_fence without config_epoch (only "
				    "a placement-only change carries it)");
		m.config_epoch = 11;
		assert_int_equal(decode(&req, err, sizeof(err)), 0);          /* none: all unfenced */
		m.n_backend_pr_fence = 2;
		assert_int_equal(decode(&req, err, sizeof(err)), 0);
		m.backend_pr_fence_set = false;
		assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, "set_alua_map: backend_pr_fence without backend_pr_fence_set");
		m.backend_pr_fence_set = true;
		m.n_backend_pr_fence = CTL_PR_FENCE_MAX + 1;
		assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, "set_alua_map: 65 backend_pr_fence keys (at most 64)");
		m.n_backend_pr_fence = 2;
		keys[1] = 0;
		assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, "set_alua_map: backend_pr_fence[1] is 0");
	}
	free(names);
	free(dp);
	free(d);
}

static void decode_lease(void **state)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__RenewLease rl = ISERGW__CTL__RENEW_LEASE__INIT;
	Isergw__Ctl__StepDown sd = ISERGW__CTL__STEP_DOWN__INIT;
	Isergw__Ctl__GetLease gl = ISERGW__CTL__GET_LEASE__INIT;
	char err[200], reason[CTL_REASON_MAX + 2];

	(void)state;
	req.op_case = ISERGW__CTL__REQUEST__OP_RENEW_LEASE;
	req.renew_lease = &rl;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "renew_lease: expires_mono_ms must be >= 1");
	rl.expires_mono_ms = 123456789;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);

	req.op_case = ISERGW__CTL__REQUEST__OP_STEP_DOWN;
	req.step_down = &sd;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);            /* no reason given */
	memset(reason, 'r', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	sd.reason = reason;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "step_down: reason longer than 255 bytes");
	reason[CTL_REASON_MAX] = '\0';
	assert_int_equal(decode(&req, err, sizeof(err)), 0);

	req.op_case = ISERGW__CTL__REQUEST__OP_GET_LEASE;
	req.get_lease = &gl;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
}

static void decode_other_ops(void **state)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__ApplyConfig ac = ISERGW__CTL__APPLY_CONFIG__INIT;
	Isergw__Ctl__Logout lo = ISERGW__CTL__LOGOUT__INIT;
	char err[200], name[CTL_INITIATOR_MAX + 2];

	(void)state;
	req.op_case = ISERGW__CTL__REQUEST__OP_APPLY_CONFIG;
	req.apply_config = &ac;
	ac.config_json = ctl_str("{}");
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);     /* epoch 0 */
	ac.epoch = 9;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	ac.config_json = ctl_str("");
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "empty configuration"));

	req.op_case = ISERGW__CTL__REQUEST__OP_LOGOUT;
	req.logout = &lo;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);     /* nobody */
	lo.who_case = ISERGW__CTL__LOGOUT__WHO_TSIH;
	lo.tsih = 0;
	/* proto3: a zero member of a oneof is still sent, and refused */
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	lo.tsih = 7;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	lo.grace_s = CTL_LOGOUT_GRACE_MAX_S + 1;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	lo.grace_s = 0;
	lo.who_case = ISERGW__CTL__LOGOUT__WHO_INITIATOR;
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	lo.initiator = name;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	lo.initiator = ctl_str("iqn.2026-11.org.example:host");
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
}

static void decode_event_requests(void **state)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__Subscribe sub = ISERGW__CTL__SUBSCRIBE__INIT;
	Isergw__Ctl__AluaRequestDone d = ISERGW__CTL__ALUA_REQUEST_DONE__INIT;
	char err[200], reason[CTL_REASON_MAX + 2];

	(void)state;
	req.op_case = ISERGW__CTL__REQUEST__OP_SUBSCRIBE;
	req.subscribe = &sub;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);

	req.op_case = ISERGW__CTL__REQUEST__OP_ALUA_REQUEST_DONE;
	req.alua_request_done = &d;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);     /* request_id 0 */
	assert_string_equal(err, "alua_request_done: request_id must be >= 1");
	d.request_id = 42;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);            /* done */
	d.status = -EPERM;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);            /* refused */
	d.status = 1;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "status 1"));
	d.status = -CTL_ERRNO_MAX - 1;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	d.status = -CTL_ERRNO_MAX;
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	memset(reason, 'r', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	d.reason = reason;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "reason"));
	reason[CTL_REASON_MAX] = '\0';
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
}

/* An AluaChangeRequest event as the daemon builds it. */
struct ev {
	CtlReply rep;
	Isergw__Ctl__Event e;
	Isergw__Ctl__AluaChangeRequest a;
	Isergw__Ctl__AluaGroupState g[CTL_ALUA_MAX_GROUPS + 1];
	Isergw__Ctl__AluaGroupState *gp[CTL_ALUA_MAX_GROUPS + 1];
};

static void ev_init(struct ev *v)
{
	isergw__ctl__reply__init(&v->rep);
	isergw__ctl__event__init(&v->e);
	isergw__ctl__alua_change_request__init(&v->a);
	for (size_t i = 0; i <= CTL_ALUA_MAX_GROUPS; i++) {
		isergw__ctl__alua_group_state__init(&v->g[i]);
		v->g[i].tpg_id = (uint32_t)(i + 1);
		v->gp[i] = &v->g[i];
	}
	v->g[1].state = ISERGW__CTL__ALUA_STATE__ALUA_STANDBY;
	v->a.request_id = 7;
	v->a.device_group = ctl_str("dg2");
	v->a.groups = v->gp;
	v->a.n_groups = 2;
	v->a.initiator_port = ctl_str("iqn.2026-11.org.example:host,i,0x400001370000");
	v->a.rel_port_id = 2;
	v->a.tpg_id = 2;
	v->a.lun = 1;
	v->a.timeout_ms = 10000;
	v->e.seq = 3;
	v->e.dropped = 5;
	v->e.kind_case = ISERGW__CTL__EVENT__KIND_ALUA_CHANGE_REQUEST;
	v->e.alua_change_request = &v->a;
	v->rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_EVENT;
	v->rep.event = &v->e;
}

static int ev_decode(struct ev *v, CtlReply **out, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int rc;

	assert_int_equal(ctl_frame_pack(&v->rep.base, &buf, &len), 0);
	err[0] = '\0';
	*out = NULL;
	rc = ctl_reply_decode(buf + 4, len - 4, out, err, errlen);
	free(buf);
	if (rc)
		assert_null(*out);
	return rc;
}

static int ev_check(struct ev *v, char *err, size_t errlen)
{
	CtlReply *out;
	int rc = ev_decode(v, &out, err, errlen);

	ctl_reply_free(out);
	return rc;
}

static void event_roundtrip(void **state)
{
	struct ev v;
	CtlReply *out;
	const Isergw__Ctl__AluaChangeRequest *a;
	char err[200];

	(void)state;
	ev_init(&v);
	assert_int_equal(ev_decode(&v, &out, err, sizeof(err)), 0);
	assert_true(ctl_reply_is_event(out));
	assert_int_equal(out->status, 0);
	assert_int_equal(out->event->seq, 3);
	assert_int_equal(out->event->dropped, 5);
	assert_int_equal(out->event->kind_case, ISERGW__CTL__EVENT__KIND_ALUA_CHANGE_REQUEST);
	a = out->event->alua_change_request;
	assert_int_equal(a->request_id, 7);
	assert_string_equal(a->device_group, "dg2");
	assert_int_equal(a->n_groups, 2);
	assert_int_equal(a->groups[0]->tpg_id, 1);
	assert_int_equal(a->groups[0]->state, ISERGW__CTL__ALUA_STATE__ALUA_AO);
	assert_int_equal(a->groups[1]->tpg_id, 2);
	assert_int_equal(a->groups[1]->state, ISERGW__CTL__ALUA_STATE__ALUA_STANDBY);
	assert_string_equal(a->initiator_port, "iqn.2026-11.org.example:host,i,0x400001370000");
	assert_int_equal(a->rel_port_id, 2);
	assert_int_equal(a->tpg_id, 2);
	assert_int_equal(a->lun, 1);
	assert_int_equal(a->timeout_ms, 10000);
	ctl_reply_free(out);

	/* an ordinary reply is not an event */
	isergw__ctl__reply__init(&v.rep);
	v.rep.status = -ENOENT;
	v.rep.error = ctl_str("no such request");
	assert_int_equal(ev_decode(&v, &out, err, sizeof(err)), 0);
	assert_false(ctl_reply_is_event(out));
	ctl_reply_free(out);
}

static void event_bad_values(void **state)
{
	const uint8_t garbage[] = { 0x8a, 0x01, 0x05, 0xff };  /* field 17, 5 bytes, only 1 */
	struct ev v;
	CtlReply *out = NULL;
	char err[200], big[CTL_IPORT_MAX + 2];

	(void)state;
	assert_int_equal(ctl_reply_decode(garbage, sizeof(garbage), &out, err, sizeof(err)),
			 -EBADMSG);
	assert_null(out);

	ev_init(&v);
	v.g[1].state = (Isergw__Ctl__AluaState)9;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "AluaGroupState.state: 9 is not a valid AluaState");

	ev_init(&v);
	v.a.request_id = 0;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "alua_change_request: request_id must be >= 1");

	ev_init(&v);
	v.e.seq = 0;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);

	ev_init(&v);
	v.rep.status = -EIO;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);

	ev_init(&v);
	v.a.n_groups = 0;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);
	v.a.n_groups = CTL_ALUA_MAX_GROUPS + 1;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);
	v.a.n_groups = CTL_ALUA_MAX_GROUPS;
	assert_int_equal(ev_check(&v, err, sizeof(err)), 0);

	ev_init(&v);
	v.g[0].tpg_id = 0;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);
	v.g[0].tpg_id = 65536;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);
	v.g[0].tpg_id = 2;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "alua_change_request: group 2 listed twice");

	ev_init(&v);
	v.a.rel_port_id = 65536;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);

	ev_init(&v);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	v.a.initiator_port = big;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);
	v.a.initiator_port = ctl_str("");
	big[CTL_DG_NAME_MAX + 1] = '\0';
	v.a.device_group = big;
	assert_int_equal(ev_check(&v, err, sizeof(err)), -EINVAL);
	big[CTL_DG_NAME_MAX] = '\0';
	assert_int_equal(ev_check(&v, err, sizeof(err)), 0);

	/* a kind this client does not know: passed on, to be skipped */
	ev_init(&v);
	v.e.kind_case = ISERGW__CTL__EVENT__KIND__NOT_SET;
	v.e.alua_change_request = NULL;
	assert_int_equal(ev_check(&v, err, sizeof(err)), 0);
}

/* Events arrive between replies on one stream: ctl_recv_frame returns each in order. */
static void event_frames_on_socket(void **state)
{
	struct pair *p = *state;
	CtlReply reply = ISERGW__CTL__REPLY__INIT, *out;
	struct ev v;
	uint8_t *b1, *b2;
	size_t l1, l2;
	char err[200];
	int fl;

	ev_init(&v);
	reply.status = -ESTALE;
	reply.error = ctl_str("epoch 1 is older than the current epoch 2");
	assert_int_equal(ctl_frame_pack(&v.rep.base, &b1, &l1), 0);
	assert_int_equal(ctl_frame_pack(&reply.base, &b2, &l2), 0);
	put(p, b1, l1);
	put(p, b2, 3);                  /* the reply arrives in two pieces */
	fl = fcntl(p->rd, F_GETFL);
	assert_int_equal(fcntl(p->rd, F_SETFL, fl & ~O_NONBLOCK), 0);
	assert_int_equal(ctl_recv_frame(p->rd, &out, 1000, err, sizeof(err)), 0);
	assert_true(ctl_reply_is_event(out));
	assert_int_equal(out->event->alua_change_request->request_id, 7);
	ctl_reply_free(out);
	put(p, b2 + 3, l2 - 3);
	assert_int_equal(ctl_recv_frame(p->rd, &out, 1000, err, sizeof(err)), 0);
	assert_false(ctl_reply_is_event(out));
	assert_int_equal(out->status, -ESTALE);
	ctl_reply_free(out);
	/* a bad event is reported, the stream stays in step */
	v.a.request_id = 0;
	free(b1);
	assert_int_equal(ctl_frame_pack(&v.rep.base, &b1, &l1), 0);
	put(p, b1, l1);
	put(p, b2, l2);
	assert_int_equal(ctl_recv_frame(p->rd, &out, 1000, err, sizeof(err)), -EINVAL);
	assert_int_equal(ctl_recv_frame(p->rd, &out, 1000, err, sizeof(err)), 0);
	assert_int_equal(out->status, -ESTALE);
	ctl_reply_free(out);
	close_wr(p);
	assert_int_equal(ctl_recv_frame(p->rd, &out, 1000, err, sizeof(err)), -ENOTCONN);
	free(b1);
	free(b2);
}

static void alua_names(void **state)
{
	int s;

	(void)state;
	assert_int_equal(ctl_alua_state_parse("standby", &s), 0);
	assert_int_equal(s, 2);
	assert_int_equal(ctl_alua_state_parse("AO", &s), 0);
	assert_int_equal(s, 0);
	assert_int_equal(ctl_alua_state_parse("transitioning", &s), 0);
	assert_int_equal(s, 15);
	assert_int_equal(ctl_alua_state_parse("active", &s), -EINVAL);
	assert_string_equal(ctl_alua_state_name(14), "offline");
	assert_string_equal(ctl_alua_state_name(5), "?");
}

static void decode_change_lun(void **state)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__ChangeLun cl = ISERGW__CTL__CHANGE_LUN__INIT;
	char err[256];

	(void)state;
	req.op_case = ISERGW__CTL__REQUEST__OP_CHANGE_LUN;
	req.change_lun = &cl;
	cl.epoch = 5;
	cl.target = (char *)(uintptr_t)"iqn.2026-11.org.example:t";
	cl.lun = 16383;
	cl.lun_json = (char *)(uintptr_t)"{\"lun\":16383,\"path\":\"/dev/x\"}";
	assert_int_equal(decode(&req, err, sizeof(err)), 0);
	cl.lun = 16384;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "change_lun: lun 16384 above 16383");
	cl.lun = 1;
	cl.epoch = 0;
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
	cl.epoch = 5;
	cl.target = (char *)(uintptr_t)"";
	assert_int_equal(decode(&req, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(frame_whole, setup, teardown),
		cmocka_unit_test(decode_change_lun),
		cmocka_unit_test_setup_teardown(frame_bytewise, setup, teardown),
		cmocka_unit_test_setup_teardown(frame_truncated_body, setup, teardown),
		cmocka_unit_test_setup_teardown(frame_truncated_header, setup, teardown),
		cmocka_unit_test_setup_teardown(frame_oversized, setup, teardown),
		cmocka_unit_test(pack_roundtrip),
		cmocka_unit_test(decode_garbage),
		cmocka_unit_test(decode_unknown_op),
		cmocka_unit_test(decode_bad_enum),
		cmocka_unit_test(decode_alua_ranges),
		cmocka_unit_test(decode_alua_map),
		cmocka_unit_test(decode_lease),
		cmocka_unit_test(decode_other_ops),
		cmocka_unit_test(alua_names),
		cmocka_unit_test(decode_event_requests),
		cmocka_unit_test(event_roundtrip),
		cmocka_unit_test(event_bad_values),
		cmocka_unit_test_setup_teardown(event_frames_on_socket, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
