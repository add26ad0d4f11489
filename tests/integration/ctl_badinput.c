/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hostile clients of isergwd's control socket (ctl.sh).
 *
 *   ctl_badinput --socket PATH [--case NAME]
 *
 * Each case connects, sends bad input and checks that the daemon answers
 * with an error reply carrying a reason (and, where the stream is out of
 * step, closes the connection), then that a well-formed GetStatus on a new
 * connection still works. Cases: truncated, truncated-header, oversized,
 * garbage, unknown-op, empty, bad-enum, bad-values, change-lun, placement,
 * many-clients; "nonroot" (not in the default set) expects the refusal of a
 * client whose uid is neither 0 nor the daemon's. Prints "PASS case" /
 * "FAIL case: why"; exits 1 on any failure.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_wire.h"

#define TIMEOUT_MS 20000

static const char *sock_path;
static int failures;

static int sock_open(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "connect %s: %s\n", sock_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static bool send_raw(int fd, const void *p, size_t len)
{
	return send(fd, p, len, MSG_NOSIGNAL) == (ssize_t)len;
}

/* Read one reply: its status and reason; false when none came. */
static bool expect_reply(int fd, int *status, char *why, size_t len)
{
	CtlReply *rep;
	int rc = ctl_recv_reply(fd, &rep, TIMEOUT_MS);

	if (rc) {
		snprintf(why, len, "no reply: %s", strerror(-rc));
		return false;
	}
	*status = rep->status;
	snprintf(why, len, "%s", rep->error);
	ctl_reply_free(rep);
	return true;
}

/* The daemon closes the connection (end of stream within the timeout). */
static bool expect_eof(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b;

	ssize_t n;

	if (poll(&p, 1, TIMEOUT_MS) != 1)
		return false;
	n = recv(fd, &b, 1, 0);
	/* unread bytes of ours at the daemon's close turn the end into a reset */
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

static bool status_ok(int fd)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__GetStatus gs = ISERGW__CTL__GET_STATUS__INIT;
	CtlReply *rep;
	bool ok;

	req.op_case = ISERGW__CTL__REQUEST__OP_GET_STATUS;
	req.get_status = &gs;
	if (ctl_send_request(fd, &req) || ctl_recv_reply(fd, &rep, TIMEOUT_MS))
		return false;
	ok = rep->status == 0 && rep->payload_case == ISERGW__CTL__REPLY__PAYLOAD_STATUS_INFO;
	ctl_reply_free(rep);
	return ok;
}

static void result(const char *name, bool ok, const char *why)
{
	printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name, why);
	fflush(stdout);
	if (!ok)
		failures++;
}

/* Send bad bytes, expect `want` with a non-empty reason, then EOF if `closes`. */
static void refused_case(const char *name, const void *bytes, size_t len, bool shut_wr,
			 int want, bool closes, bool still_usable)
{
	char why[300];
	int fd = sock_open(), status = 0;
	bool ok;

	if (fd < 0) {
		result(name, false, "cannot connect");
		return;
	}
	ok = send_raw(fd, bytes, len);
	if (ok && shut_wr)
		shutdown(fd, SHUT_WR);
	if (!ok || !expect_reply(fd, &status, why, sizeof(why))) {
		result(name, false, ok ? why : "send failed");
		close(fd);
		return;
	}
	if (status != want || !why[0]) {
		char msg[400];

		snprintf(msg, sizeof(msg), "status %d (want %d), reason '%s'", status, want, why);
		result(name, false, msg);
		close(fd);
		return;
	}
	if (closes && !expect_eof(fd)) {
		result(name, false, "the daemon kept the connection open");
		close(fd);
		return;
	}
	if (still_usable && !status_ok(fd)) {
		result(name, false, "the connection was not usable after the error reply");
		close(fd);
		return;
	}
	close(fd);
	fd = sock_open();
	if (fd < 0 || !status_ok(fd)) {
		result(name, false, "GetStatus on a new connection failed afterwards");
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	result(name, true, why);
}

static void case_truncated(void)
{
	uint8_t b[4 + 10] = { 0, 0, 0, 100, 0x0a, 0x00 };

	refused_case("truncated", b, sizeof(b), true, -EPIPE, true, false);
}

static void case_truncated_header(void)
{
	uint8_t b[2] = { 0, 0 };

	refused_case("truncated-header", b, sizeof(b), true, -EPIPE, true, false);
}

static void case_oversized(void)
{
	/* 1 GiB announced, a few body bytes: the daemon must not wait for the rest */
	uint8_t b[4 + 16] = { 0x40, 0, 0, 0, 0x0a, 0x00 };

	refused_case("oversized", b, sizeof(b), false, -EMSGSIZE, true, false);
}

static void case_frame(const char *name, const void *body, uint32_t len, int want)
{
	uint8_t *b = malloc(4 + len);

	if (!b)
		return;
	b[0] = (uint8_t)(len >> 24);
	b[1] = (uint8_t)(len >> 16);
	b[2] = (uint8_t)(len >> 8);
	b[3] = (uint8_t)len;
	if (len)
		memcpy(b + 4, body, len);
	refused_case(name, b, 4 + len, false, want, false, true);
	free(b);
}

static void case_packed(const char *name, const CtlRequest *req, int want)
{
	uint8_t *buf;
	size_t len;

	if (ctl_frame_pack(&req->base, &buf, &len)) {
		result(name, false, "cannot pack");
		return;
	}
	refused_case(name, buf, len, false, want, false, true);
	free(buf);
}

static void case_bad_enum(void)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__SetAluaStates s = ISERGW__CTL__SET_ALUA_STATES__INIT;
	Isergw__Ctl__AluaGroupState g = ISERGW__CTL__ALUA_GROUP_STATE__INIT, *gp = &g;

	g.tpg_id = 1;
	g.state = (Isergw__Ctl__AluaState)7; /* no such state */
	s.epoch = 1000000;
	s.groups = &gp;
	s.n_groups = 1;
	req.op_case = ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES;
	req.set_alua_states = &s;
	case_packed("bad-enum", &req, -EINVAL);
}

static void case_bad_values(void)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__SetAluaStates s = ISERGW__CTL__SET_ALUA_STATES__INIT;
	Isergw__Ctl__AluaGroupState g[2] = { ISERGW__CTL__ALUA_GROUP_STATE__INIT,
					      ISERGW__CTL__ALUA_GROUP_STATE__INIT };
	Isergw__Ctl__AluaGroupState *gp[2] = { &g[0], &g[1] };
	Isergw__Ctl__Logout lo = ISERGW__CTL__LOGOUT__INIT;

	g[0].tpg_id = 1;
	g[1].tpg_id = 1;        /* the same group twice */
	s.epoch = 1000000;
	s.groups = gp;
	s.n_groups = 2;
	req.op_case = ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES;
	req.set_alua_states = &s;
	case_packed("duplicate-group", &req, -EINVAL);
	g[1].tpg_id = 0;
	case_packed("group-zero", &req, -EINVAL);
	req.op_case = ISERGW__CTL__REQUEST__OP_LOGOUT;
	req.logout = &lo;       /* neither tsih nor initiator */
	case_packed("logout-nobody", &req, -EINVAL);
}

/* ChangeLun: out of range, and one for a target the daemon does not have (garbled LUN). */
static void case_change_lun(void)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__ChangeLun cl = ISERGW__CTL__CHANGE_LUN__INIT;

	req.op_case = ISERGW__CTL__REQUEST__OP_CHANGE_LUN;
	req.change_lun = &cl;
	cl.target = (char *)(uintptr_t)"iqn.2026-11.org.example:none";
	cl.lun = 3;
	cl.lun_json = (char *)(uintptr_t)"{\"lun\": 3, \"path\" garbled";
	cl.epoch = 0;
	case_packed("change-lun-epoch-0", &req, -EINVAL);
	cl.epoch = 1000000;
	cl.lun = 16384;
	case_packed("change-lun-16384", &req, -EINVAL);
	cl.lun = 3;
	case_packed("change-lun-no-target", &req, -ENOENT);
}

/*
 * A placement-only SetAluaMap (config_epoch set, docs/control.md): a
 * configuration epoch not older than the map's, and one the daemon does not
 * hold, are refused and change nothing.
 */
static void case_placement(void)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__SetAluaMap m = ISERGW__CTL__SET_ALUA_MAP__INIT;
	Isergw__Ctl__DeviceGroupStates dg = ISERGW__CTL__DEVICE_GROUP_STATES__INIT, *dgp = &dg;
	Isergw__Ctl__AluaGroupState g = ISERGW__CTL__ALUA_GROUP_STATE__INIT, *gp = &g;

	g.tpg_id = 1;
	dg.device_group = (char *)(uintptr_t)"";
	dg.groups = &gp;
	dg.n_groups = 1;
	dg.owner_tpg_id = 1;
	m.epoch = 1000000;
	m.device_groups = &dgp;
	m.n_device_groups = 1;
	req.op_case = ISERGW__CTL__REQUEST__OP_SET_ALUA_MAP;
	req.set_alua_map = &m;
	m.config_epoch = 1000000;
	case_packed("placement-config-epoch", &req, -EINVAL);
	m.config_epoch = 999999;
	case_packed("placement-stale", &req, -ESTALE);
}

static void case_many_clients(void)
{
	int fds[24], n = 0, fd;
	bool ok;

	/* clients that stall in the middle of a frame hold up nobody else */
	for (int i = 0; i < 24; i++) {
		fds[n] = sock_open();
		if (fds[n] < 0)
			break;
		send_raw(fds[n], "\0\0", 2);
		n++;
	}
	fd = sock_open();
	ok = fd >= 0 && status_ok(fd);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	result("many-clients", ok && n == 24,
	       !ok ? "GetStatus failed beside stalled clients"
		   : n == 24 ? "GetStatus answered beside 24 clients stalled mid-frame"
			     : "not all stalled clients connected");
}

static void case_nonroot(void)
{
	char why[300];
	int fd = sock_open(), status = 0;
	bool ok;

	if (fd < 0) {
		result("nonroot", false, "cannot connect (the socket must be reachable)");
		return;
	}
	/* the daemon refuses before reading anything */
	ok = expect_reply(fd, &status, why, sizeof(why)) && status == -EACCES && why[0] &&
	     expect_eof(fd);
	close(fd);
	result("nonroot", ok, why[0] ? why : "no refusal");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "case", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	static const uint8_t garbage[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					   0xff, 0xff, 0x0f, 0x13, 0x37, 0x00, 0x42 };
	static const uint8_t unknown_op[] = { 0x98, 0x06, 0x01 }; /* field 99, varint 1 */
	const char *only = NULL;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == 's')
			sock_path = optarg;
		else if (opt == 'c')
			only = optarg;
		else
			return 2;
	}
	if (!sock_path)
		return 2;
#define RUN(name, call) do { if (!only || !strcmp(only, name)) call; } while (0)
	if (only && !strcmp(only, "nonroot")) {
		case_nonroot();
		return failures ? 1 : 0;
	}
	RUN("truncated", case_truncated());
	RUN("truncated-header", case_truncated_header());
	RUN("oversized", case_oversized());
	RUN("garbage", case_frame("garbage", garbage, sizeof(garbage), -EBADMSG));
	RUN("unknown-op", case_frame("unknown-op", unknown_op, sizeof(unknown_op), -EOPNOTSUPP));
	RUN("empty", case_frame("empty", NULL, 0, -EOPNOTSUPP));
	RUN("bad-enum", case_bad_enum());
	RUN("bad-values", case_bad_values());
	RUN("change-lun", case_change_lun());
	RUN("placement", case_placement());
	RUN("many-clients", case_many_clients());
	return failures ? 1 : 0;
}
