/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one client of isergwctl's unix sockets: isergwd's control socket
 * (isergwctl_ctl.c, isergwctl_alua.c) and the HA agent's local API
 * (isergwctl_cluster.c). Both speak the control socket's framing
 * (proto/ctl_wire.c): a request frame out, one reply frame back, all within
 * a deadline. connect() waits (a full backlog) at most until the deadline;
 * after it the socket is non-blocking and every wait is a poll, so that a
 * peer stalling inside a frame cannot outlast the deadline. Nothing is
 * printed here: the caller says what a failure means in its own words
 * (isergwctl_peer.step).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_wire.h"
#include "isergwctl.h"

static int left_ms(int64_t deadline)
{
	int64_t left = deadline - isergwctl_now_ms();

	return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Wait until fd is ready for events: 0, -ETIMEDOUT at the deadline, or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int rc = poll(&p, 1, left_ms(deadline));

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		return rc == 0 ? -ETIMEDOUT : 0;
	}
}

static int send_all(int fd, const uint8_t *p, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		int rc;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if ((rc = wait_fd(fd, POLLOUT, deadline)))
			return rc;
	}
	return 0;
}

/* One whole frame into rx: 0, or ctl_frame_rx_read's errors, -ETIMEDOUT. */
static int recv_frame(int fd, struct ctl_frame_rx *rx, uint32_t max, int64_t deadline)
{
	for (;;) {
		int rc = ctl_frame_rx_read(rx, fd, max);

		if (rc)
			return rc < 0 ? rc : 0;
		if ((rc = wait_fd(fd, POLLIN, deadline)))
			return rc;
	}
}

/* p->fd connected and non-blocking: 0, or -errno with p->step set. */
static int peer_connect(struct isergwctl_peer *p, int64_t deadline)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t plen = strlen(p->path);
	int ms = left_ms(deadline) > 0 ? left_ms(deadline) : 1;    /* SO_SNDTIMEO 0: no limit */
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	int fd, flags, rc;

	p->step = ISERGWCTL_STEP_PATH;
	if (plen >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, p->path, plen + 1);
	p->step = ISERGWCTL_STEP_SOCKET;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* connect waits while the peer's backlog is full: at most until the deadline */
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) < 0) {
		p->step = ISERGWCTL_STEP_CONNECT;
		goto err_close;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		goto err_close;
	p->fd = fd;
	return 0;

err_close:
	rc = -errno;
	close(fd);
	return rc;
}

void isergwctl_peer_close(struct isergwctl_peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

int isergwctl_call(struct isergwctl_peer *p, const ProtobufCMessage *req, int timeout_ms,
		   struct ctl_frame_rx *rx)
{
	int64_t deadline = isergwctl_now_ms() + timeout_ms;
	uint8_t *buf;
	size_t len;
	int rc;

	ctl_frame_rx_init(rx);
	p->step = ISERGWCTL_STEP_PACK;
	rc = ctl_frame_pack(req, &buf, &len);
	if (rc)
		return rc;
	if (p->fd < 0 && (rc = peer_connect(p, deadline)))
		goto out_free;
	p->step = ISERGWCTL_STEP_SEND;
	rc = send_all(p->fd, buf, len, deadline);
	if (!rc) {
		p->step = ISERGWCTL_STEP_RECV;
		rc = recv_frame(p->fd, rx, p->reply_max, deadline);
	}
	if (rc)
		isergwctl_peer_close(p);
out_free:
	free(buf);
	return rc;
}
