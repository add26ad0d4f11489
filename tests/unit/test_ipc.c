// LINK: isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local IPC endpoint (common/ipc.c), driven by hand on one reactor with
 * clients on socketpairs: one request at a time per client (a second frame
 * sent at once is read only after the first one's reply), a client held by
 * a request served asynchronously outlives its close until released,
 * pushed frames bounded per client (-ENOBUFS beyond, room again once the
 * client read them), a truncated frame (-EPIPE) and an oversized one
 * (-EMSGSIZE) answered with the reason and closed, a uid that is neither 0
 * nor ours refused (-EACCES), too many clients refused with an answer or
 * closed at once; the client side: connect to a listening server (and
 * -ENOENT without one), a frame read with a timeout.
 */
#include <errno.h>
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

#include "common/ipc.h"
#include "common/reactor.h"

struct priv {
	unsigned int frames;            /* requests handed over */
	bool silent;                    /* no answer (otherwise each request is echoed at once) */
	bool closed;                    /* the close callback ran */
};

struct fx {
	struct reactor *r;
	struct gw_ipc_server *s;
	char tmp[64];
};

static uint8_t *frame_of(const void *body, uint32_t len, size_t *flen)
{
	uint8_t *b = malloc(GW_IPC_FRAME_HDR + len + 1);

	assert_non_null(b);
	gw_frame_hdr_put(b, len);
	memcpy(b + GW_IPC_FRAME_HDR, body, len);
	*flen = GW_IPC_FRAME_HDR + len;
	return b;
}

/* Answer c with a frame of body. */
static void reply_with(struct gw_ipc_conn *c, const void *body, uint32_t len)
{
	size_t flen;
	uint8_t *b = frame_of(body, len, &flen);

	gw_ipc_reply(c, b, flen);
}

static void t_frame(struct gw_ipc_conn *c, const uint8_t *body, uint32_t len)
{
	struct priv *p = gw_ipc_conn_priv(c);

	p->frames++;
	if (!p->silent)
		reply_with(c, body, len);
}

static void t_reply_error(struct gw_ipc_conn *c, int status, const char *why)
{
	char text[256];
	int n = snprintf(text, sizeof(text), "%d %s", status, why);

	reply_with(c, text, (uint32_t)n);
}

static void t_close(struct gw_ipc_conn *c)
{
	struct priv *p = gw_ipc_conn_priv(c);

	p->closed = true;
}

static const struct gw_ipc_ops ops = {
	.frame = t_frame,
	.reply_error = t_reply_error,
	.close = t_close,
};

static void make_server(struct fx *f, unsigned int max_clients, const char *busy_why)
{
	struct gw_ipc_params p = {
		.comp = "test",
		.what = "test socket",
		.client = "test client",
		.r = f->r,
		.max_clients = max_clients,
		.busy_why = busy_why,
		.max_push = 2,
		.frame_max = 1024,
		.priv_size = sizeof(struct priv),
		.ops = &ops,
		.arg = f,
	};

	if (f->s)
		gw_ipc_server_destroy(f->s);
	assert_int_equal(gw_ipc_server_create(&p, &f->s), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(reactor_create(0, &f->r), 0);
	make_server(f, 4, "too many test clients");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	gw_ipc_server_destroy(f->s);
	reactor_destroy(f->r);
	if (f->tmp[0])
		rmdir(f->tmp);
	free(f);
	return 0;
}

static void pump(struct fx *f)
{
	for (int i = 0; i < 100 && reactor_poll(f->r) > 0; i++)
		;
}

/* The server's newest client. */
static struct gw_ipc_conn *newest(struct fx *f)
{
	return list_entry(f->s->conns.prev, struct gw_ipc_conn, link);
}

/* A client of uid (its peer end returned). */
static int client(struct fx *f, uid_t uid, int want)
{
	struct ucred cred = { .pid = getpid(), .uid = uid, .gid = getgid() };
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(gw_ipc_conn_add(f->s, sv[0], &cred), want);
	if (want)
		close(sv[0]);
	pump(f);
	return sv[1];
}

static void send_frame(int fd, const char *body)
{
	size_t flen;
	uint8_t *b = frame_of(body, (uint32_t)strlen(body), &flen);

	assert_int_equal(write(fd, b, flen), (ssize_t)flen);
	free(b);
}

/* The next frame from the server as a string ("" when none within 1 s). */
static void recv_text(int fd, char *out, size_t outlen)
{
	struct gw_frame_rx rx;

	out[0] = '\0';
	gw_frame_rx_init(&rx);
	if (gw_frame_recv(fd, &rx, 1u << 20, 1000) == 0)
		snprintf(out, outlen, "%.*s", (int)rx.len, (const char *)rx.body);
	gw_frame_rx_reset(&rx);
}

static bool at_eof(int fd)
{
	char b;

	return read(fd, &b, 1) == 0;
}

static void test_one_request_at_a_time(void **state)
{
	struct fx *f = *state;
	int fd = client(f, 0, 0);
	struct gw_ipc_conn *c = newest(f);
	struct priv *p = gw_ipc_conn_priv(c);
	char got[256];

	p->silent = true;
	send_frame(fd, "one");
	send_frame(fd, "two");
	pump(f);
	/* the second waits for the first one's reply */
	assert_int_equal(p->frames, 1);
	assert_true(c->in_request);
	reply_with(c, "r1", 2);
	pump(f);
	assert_int_equal(p->frames, 2);
	recv_text(fd, got, sizeof(got));
	assert_string_equal(got, "r1");
	p->silent = false;
	reply_with(c, "r2", 2);
	send_frame(fd, "three");
	pump(f);
	assert_int_equal(p->frames, 3);
	recv_text(fd, got, sizeof(got));
	assert_string_equal(got, "r2");
	recv_text(fd, got, sizeof(got));
	assert_string_equal(got, "three");
	close(fd);
	pump(f);
	/* closed and freed */
	assert_int_equal(f->s->nconns, 0);
	assert_true(list_empty(&f->s->closed));
}

static void test_held_outlives_close(void **state)
{
	struct fx *f = *state;
	int fd = client(f, 0, 0);
	struct gw_ipc_conn *c = newest(f);
	struct priv *p = gw_ipc_conn_priv(c);

	p->silent = true;
	send_frame(fd, "async");
	pump(f);
	assert_int_equal(p->frames, 1);
	gw_ipc_conn_hold(c);
	close(fd);
	pump(f);
	/* closed, but its memory stays for the request in service (ASan would tell) */
	assert_true(c->closed);
	assert_true(p->closed);
	assert_int_equal(f->s->nconns, 0);
	assert_ptr_equal(f->s->closed.next, &c->link);
	reply_with(c, "late", 4);    /* dropped: nobody to tell */
	gw_ipc_conn_release(c);
	pump(f);
	assert_true(list_empty(&f->s->closed));
}

static void test_push_bounded(void **state)
{
	struct fx *f = *state;
	int fd = client(f, 0, 0);
	struct gw_ipc_conn *c = newest(f);
	char big[4096];
	size_t flen;
	int sndbuf = 4096, rc;

	/* a small socket buffer, so that pushed frames stay queued */
	setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	memset(big, 'x', sizeof(big));
	for (rc = 0; rc == 0 && c->npushed < 2;)
		rc = gw_ipc_push(c, frame_of(big, sizeof(big), &flen), flen);
	assert_int_equal(rc, 0);
	assert_int_equal(c->npushed, 2);
	assert_false(gw_ipc_push_room(c));
	assert_int_equal(gw_ipc_push(c, frame_of("e", 1, &flen), flen), -ENOBUFS);
	/* the client reads: the queue drains, room again */
	for (int i = 0; i < 1000 && c->npushed; i++) {
		char b[65536];

		while (read(fd, b, sizeof(b)) > 0)
			;
		pump(f);
	}
	assert_int_equal(c->npushed, 0);
	assert_true(gw_ipc_push_room(c));
	close(fd);
	pump(f);
}

static void test_truncated(void **state)
{
	struct fx *f = *state;
	int fd = client(f, 0, 0);
	uint8_t part[14] = { 0, 0, 0, 100, '0', '1', '2', '3', '4', '5', '6', '7', '8', '9' };
	char got[256];

	assert_int_equal(write(fd, part, sizeof(part)), (ssize_t)sizeof(part));
	shutdown(fd, SHUT_WR);
	pump(f);
	recv_text(fd, got, sizeof(got));
	assert_string_equal(got, "-32 truncated frame: the connection ended inside it, after 14 of "
			    "104 bytes");
	assert_true(at_eof(fd));
	close(fd);
}

static void test_oversized(void **state)
{
	struct fx *f = *state;
	int fd = client(f, 0, 0);
	uint8_t hdr[4];
	char got[256];

	gw_frame_hdr_put(hdr, 2000);
	assert_int_equal(write(fd, hdr, sizeof(hdr)), 4);
	pump(f);
	recv_text(fd, got, sizeof(got));
	assert_string_equal(got, "-90 frame of 2000 bytes exceeds the maximum of 1024 bytes");
	assert_true(at_eof(fd));
	close(fd);
}

static void test_foreign_uid(void **state)
{
	struct fx *f = *state;
	uid_t uid = geteuid() == 12345 ? 12346 : 12345;
	int fd = client(f, uid, 0);
	char got[256], want[128];

	snprintf(want, sizeof(want), "-13 permission denied: uid %u may not use the test socket",
		 (unsigned int)uid);
	recv_text(fd, got, sizeof(got));
	assert_string_equal(got, want);
	assert_true(at_eof(fd));
	close(fd);
}

static void test_too_many(void **state)
{
	struct fx *f = *state;
	int fds[5];
	char got[256];

	for (int i = 0; i < 4; i++)
		fds[i] = client(f, 0, 0);
	/* with an answer */
	fds[4] = client(f, 0, 0);
	recv_text(fds[4], got, sizeof(got));
	assert_string_equal(got, "-16 too many test clients");
	assert_true(at_eof(fds[4]));
	close(fds[4]);
	/* closed at once */
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	pump(f);
	make_server(f, 1, NULL);
	fds[0] = client(f, 0, 0);
	fds[1] = client(f, 0, -EBUSY);
	close(fds[1]);
	close(fds[0]);
	pump(f);
}

static void test_client_side(void **state)
{
	struct fx *f = *state;
	char path[128], got[256];
	int fd;

	snprintf(f->tmp, sizeof(f->tmp), "/tmp/test_ipc.XXXXXX");
	assert_non_null(mkdtemp(f->tmp));
	snprintf(path, sizeof(path), "%s/sock", f->tmp);
	assert_int_equal(gw_ipc_connect(path, 100), -ENOENT);
	assert_int_equal(gw_ipc_listen(f->s, path), 0);
	fd = gw_ipc_connect(path, 1000);
	assert_true(fd >= 0);
	pump(f);
	/* nothing sent: no frame within the time */
	{
		struct gw_frame_rx rx;

		gw_frame_rx_init(&rx);
		assert_int_equal(gw_frame_recv(fd, &rx, 1024, 50), -ETIMEDOUT);
		gw_frame_rx_reset(&rx);
	}
	send_frame(fd, "ping");
	pump(f);
	recv_text(fd, got, sizeof(got));
	assert_string_equal(got, "ping");
	close(fd);
	pump(f);
	gw_ipc_unlisten(f->s);
	assert_int_equal(access(path, F_OK), -1);
}

/*
 * A listener whose backlog is full: a unix socket's connect() then fails
 * with EAGAIN and the socket is not connecting (poll calls it writable
 * anyway). The client must keep trying until its deadline, not hand back
 * a socket that is not connected.
 */
static void test_client_backlog_full(void **state)
{
	struct fx *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd, fds[64], n = 0, fd;

	snprintf(f->tmp, sizeof(f->tmp), "/tmp/test_ipc.XXXXXX");
	assert_non_null(mkdtemp(f->tmp));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/full", f->tmp);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	/* fill the backlog: nobody accepts */
	for (; n < 64; n++) {
		fds[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		assert_true(fds[n] >= 0);
		if (connect(fds[n], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			assert_int_equal(errno, EAGAIN);
			close(fds[n]);
			break;
		}
	}
	assert_true(n < 64);
	fd = gw_ipc_connect(sa.sun_path, 50);
	if (fd >= 0)
		close(fd);
	assert_int_equal(fd, -ETIMEDOUT);
	while (n-- > 0)
		close(fds[n]);
	close(lfd);
	unlink(sa.sun_path);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_one_request_at_a_time), T(test_held_outlives_close), T(test_push_bounded),
		T(test_truncated), T(test_oversized), T(test_foreign_uid), T(test_too_many),
		T(test_client_side), T(test_client_backlog_full),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
