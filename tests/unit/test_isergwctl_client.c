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

#include "ctl_wire.h"
#include "isergwctl.h"

/* The peer: answers each of the first 'answers' requests with 'reply', then does 'last'. */
struct peer {
	char dir[64];
	char path[108];
	int lfd;
	pthread_t tid;
	bool serving;
	const uint8_t *reply;
	size_t reply_len;
	int answers;
	const uint8_t *last;    /* written after the answers, then the connection closed */
	size_t last_len;
};

static int setup(void **state)
{
	struct peer *p = calloc(1, sizeof(*p));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	assert_non_null(p);
	snprintf(p->dir, sizeof(p->dir), "/tmp/isergwctl-client-XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	snprintf(p->path, sizeof(p->path), "%s/s.sock", p->dir);
	memcpy(sa.sun_path, p->path, strlen(p->path) + 1);
	p->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(p->lfd >= 0);
	assert_int_equal(bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(p->lfd, 4), 0);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct peer *p = *state;

	if (p->serving)
		pthread_join(p->tid, NULL);
	close(p->lfd);
	unlink(p->path);
	rmdir(p->dir);
	free(p);
	return 0;
}

static void put(int fd, const uint8_t *b, size_t len)
{
	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;
		b += n;
		len -= (size_t)n;
	}
}

static void *serve(void *arg)
{
	struct peer *p = arg;
	struct pollfd pf = { .fd = p->lfd, .events = POLLIN };
	struct ctl_frame_rx rx;
	int fd, rc;

	if (poll(&pf, 1, 5000) != 1 || (fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return NULL;
	for (int i = 0; i < p->answers; i++) {
		ctl_frame_rx_init(&rx);
		do
			rc = ctl_frame_rx_read(&rx, fd, CTL_FRAME_MAX);
		while (rc == 0);
		ctl_frame_rx_reset(&rx);
		if (rc != 1)
			break;
		put(fd, p->reply, p->reply_len);
	}
	if (p->last)
		put(fd, p->last, p->last_len);
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

static void closed_inside(void **state)
{
	static const uint8_t half[] = { 0, 0, 0, 100, 'a', 'b' };
	struct peer *p = *state;
	struct isergwctl_peer c = { .path = p->path, .fd = -1, .reply_max = CTL_FRAME_MAX };
	struct ctl_frame_rx rx;

	p->answers = 1;
	p->reply = half;
	p->reply_len = sizeof(half);
	start(p);
	assert_int_equal(isergwctl_call(&c, status_req(), 2000, &rx), -EPIPE);
	assert_int_equal(c.step, ISERGWCTL_STEP_RECV);
	assert_int_equal(rx.len, 100);
	assert_int_equal(rx.have, 2);
	ctl_frame_rx_reset(&rx);
}

static void too_large(void **state)
{
	static const uint8_t big[] = { 0, 0x10, 0, 1 };    /* 1 MiB + 1 */
	struct peer *p = *state;
	struct isergwctl_peer c = { .path = p->path, .fd = -1, .reply_max = CTL_FRAME_MAX };
	struct ctl_frame_rx rx;

	p->answers = 1;
	p->reply = big;
	p->reply_len = sizeof(big);
	start(p);
	assert_int_equal(isergwctl_call(&c, status_req(), 2000, &rx), -EMSGSIZE);
	assert_int_equal(c.step, ISERGWCTL_STEP_RECV);
	ctl_frame_rx_reset(&rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(reply_and_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(no_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(path_too_long, setup, teardown),
		cmocka_unit_test_setup_teardown(no_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(not_read, setup, teardown),
		cmocka_unit_test_setup_teardown(closed_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(too_large, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
