// LINK: isergwctl_client isergw_proto Threads::Threads
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl_call() (mgmt/isergwctl_client.c), the one client of isergwd's
 * control socket and the HA agent's local API, against a peer played by a
 * thread of this test on a unix socket: a reply frame comes back whole and
 * the connection stays for the next request; each failure is reported at
 * its step with its errno and bounded by the timeout: no socket there
 * (CONNECT -ENOENT), a path too long (PATH), a peer that never answers
 * (RECV -ETIMEDOUT), one that never reads a large request (SEND
 * -ETIMEDOUT, where a blocking write would hang), one that closes inside
 * the reply (RECV -EPIPE), a reply above the limit (RECV -EMSGSIZE).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fsutil.h"
#include "ctl_wire.h"
#include "isergwctl.h"

/* The peer: answers each of the first 'answers' requests with 'reply', then closes. */
struct peer {
	char dir[64];
	char path[108];
	int lfd;
	pthread_t tid;
	bool serving;
	const uint8_t *reply;
	size_t reply_len;
	int answers;
};

/* A peer listening in a directory of its own; the test fails (setup -1) without one. */
static int setup(void **state)
{
	static const char tmpl[] = "/tmp/isergwctl-client-XXXXXX";
	struct peer *p = calloc(1, sizeof(*p));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	*state = p;
	if (!p)
		return -1;
	memcpy(p->dir, tmpl, sizeof(tmpl));
	p->lfd = -1;
	if (!mkdtemp(p->dir))
		return -1;
	snprintf(p->path, sizeof(p->path), "%s/s.sock", p->dir);
	memcpy(sa.sun_path, p->path, strlen(p->path) + 1);
	p->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(p->lfd, 4) ?
	       -1 : 0;
}

static int teardown(void **state)
{
	struct peer *p = *state;

	if (!p)
		return 0;
	if (p->serving)
		pthread_join(p->tid, NULL);
	if (p->lfd >= 0)
		close(p->lfd);
	/* the socket first: the directory must be empty */
	(void)(unlink(p->path) + rmdir(p->dir));
	free(p);
	return 0;
}

/* One whole frame read from the (blocking) fd: true, or false at the connection's end. */
static bool one_frame(int fd)
{
	struct ctl_frame_rx rx;
	int rc;

	ctl_frame_rx_init(&rx);
	while ((rc = ctl_frame_rx_read(&rx, fd, CTL_FRAME_MAX)) == 0)
		;
	ctl_frame_rx_reset(&rx);
	return rc == 1;
}

static void *serve(void *arg)
{
	struct peer *p = arg;
	struct pollfd pf = { .fd = p->lfd, .events = POLLIN };
	int fd;

	/* a client that never comes fails the test, never hangs it */
	if (poll(&pf, 1, 5000) != 1 || (fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return NULL;
	for (int i = 0; i < p->answers && one_frame(fd); i++)
		(void)gw_write_all(fd, p->reply, p->reply_len);
	close(fd);
	return NULL;
}

static void start(struct peer *p)
{
	assert_int_equal(pthread_create(&p->tid, NULL, serve, p), 0);
	p->serving = true;
}

/* A small request: GetStatus. */
static const ProtobufCMessage *status_req(void)
{
	static Isergw__Ctl__GetStatus gs = ISERGW__CTL__GET_STATUS__INIT;
	static CtlRequest req = ISERGW__CTL__REQUEST__INIT;

	req.op_case = ISERGW__CTL__REQUEST__OP_GET_STATUS;
	req.get_status = &gs;
	return &req.base;
}

static void reply_and_reuse(void **state)
{
	static const uint8_t frame[] = { 0, 0, 0, 3, 'a', 'b', 'c' };
	struct peer *p = *state;
	struct isergwctl_peer c = { .path = p->path, .fd = -1, .reply_max = CTL_FRAME_MAX };
	struct ctl_frame_rx rx;
	int fd;

	p->reply = frame;
	p->reply_len = sizeof(frame);
	p->answers = 2;
	start(p);
	assert_int_equal(isergwctl_call(&c, status_req(), 2000, &rx), 0);
	assert_int_equal(rx.len, 3);
	assert_memory_equal(rx.body, "abc", 3);
	ctl_frame_rx_reset(&rx);
	assert_true(c.fd >= 0);
	fd = c.fd;
	/* the second request goes on the same connection */
	assert_int_equal(isergwctl_call(&c, status_req(), 2000, &rx), 0);
	assert_int_equal(c.fd, fd);
	assert_int_equal(rx.len, 3);
	ctl_frame_rx_reset(&rx);
	isergwctl_peer_close(&c);
	assert_int_equal(c.fd, -1);
}

static void no_socket(void **state)
{
	struct peer *p = *state;
	struct isergwctl_peer c = { .path = p->path, .fd = -1, .reply_max = CTL_FRAME_MAX };
	struct ctl_frame_rx rx;

	unlink(p->path);
	assert_int_equal(isergwctl_call(&c, status_req(), 2000, &rx), -ENOENT);
	assert_int_equal(c.step, ISERGWCTL_STEP_CONNECT);
	assert_int_equal(c.fd, -1);
	ctl_frame_rx_reset(&rx);
}

static void path_too_long(void **state)
{
	char path[200];
	struct isergwctl_peer c = { .path = path, .fd = -1, .reply_max = CTL_FRAME_MAX };
	struct ctl_frame_rx rx;

	(void)state;
	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(isergwctl_call(&c, status_req(), 2000, &rx), -ENAMETOOLONG);
	assert_int_equal(c.step, ISERGWCTL_STEP_PATH);
	ctl_frame_rx_reset(&rx);
}

/* Nobody accepts: the request fits the socket's buffer, the reply never comes. */
static void no_answer(void **state)
{
	struct peer *p = *state;
	struct isergwctl_peer c = { .path = p->path, .fd = -1, .reply_max = CTL_FRAME_MAX };
	struct ctl_frame_rx rx;

	assert_int_equal(isergwctl_call(&c, status_req(), 200, &rx), -ETIMEDOUT);
	assert_int_equal(c.step, ISERGWCTL_STEP_RECV);
	assert_int_equal(c.fd, -1);
	ctl_frame_rx_reset(&rx);
}

/* Nobody reads a request larger than the socket's buffer: bounded, not a hang. */
static void not_read(void **state)
{
	struct peer *p = *state;
	struct isergwctl_peer c = { .path = p->path, .fd = -1, .reply_max = CTL_FRAME_MAX };
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__ApplyConfig ac = ISERGW__CTL__APPLY_CONFIG__INIT;
	struct ctl_frame_rx rx;
	char *doc = malloc(CTL_FRAME_MAX - 64);

	assert_non_null(doc);
	memset(doc, 'x', CTL_FRAME_MAX - 65);
	doc[CTL_FRAME_MAX - 65] = '\0';
	ac.epoch = 1;
	ac.config_json = doc;
	req.op_case = ISERGW__CTL__REQUEST__OP_APPLY_CONFIG;
	req.apply_config = &ac;
	assert_int_equal(isergwctl_call(&c, &req.base, 200, &rx), -ETIMEDOUT);
	assert_int_equal(c.step, ISERGWCTL_STEP_SEND);
	ctl_frame_rx_reset(&rx);
	free(doc);
}

/* The peer answers with bytes: the call fails with want at RECV, rx as far as it got. */
static void bad_reply(struct peer *p, const uint8_t *bytes, size_t len, int want,
		      struct ctl_frame_rx *rx)
{
	struct isergwctl_peer c = { .path = p->path, .fd = -1, .reply_max = CTL_FRAME_MAX };

	p->answers = 1;
	p->reply = bytes;
	p->reply_len = len;
	start(p);
	assert_int_equal(isergwctl_call(&c, status_req(), 2000, rx), want);
	assert_int_equal(c.step, ISERGWCTL_STEP_RECV);
	assert_int_equal(c.fd, -1);
}

static void closed_inside(void **state)
{
	static const uint8_t half[] = { 0, 0, 0, 100, 'a', 'b' };
	struct ctl_frame_rx rx;

	bad_reply(*state, half, sizeof(half), -EPIPE, &rx);
	assert_int_equal(rx.len, 100);
	assert_int_equal(rx.have, 2);
	ctl_frame_rx_reset(&rx);
}

static void too_large(void **state)
{
	static const uint8_t big[] = { 0, 0x10, 0, 1 };    /* 1 MiB + 1 */
	struct ctl_frame_rx rx;

	bad_reply(*state, big, sizeof(big), -EMSGSIZE, &rx);
	assert_null(rx.body);
	ctl_frame_rx_reset(&rx);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(reply_and_reuse), TEST(no_socket), TEST(path_too_long), TEST(no_answer),
		TEST(not_read), TEST(closed_inside), TEST(too_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
