/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one client of isergwctl's unix sockets: isergwd's control socket
 * (isergwctl_ctl.c, isergwctl_alua.c) and the HA agent's local API
 * (isergwctl_cluster.c). Both speak the control socket's framing
 * (proto/ctl_wire.c): a request frame out, one reply frame back, all within
 * a deadline. The socket side is common/ipc.c's client (a non-blocking
 * connect, frames read as they come); here the deadline: a full backlog is
 * tried again and a peer that does not read is waited for until it; the
 * reply may fall silent for what is left of it (gw_frame_recv's timeout
 * is per wait). Nothing is printed here: the caller says what a failure
 * means in its own words (isergwctl_peer.step).
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ipc.h"
#include "ctl_wire.h"
#include "isergwctl.h"

static int left_ms(int64_t deadline)
{
	int64_t left = deadline - isergwctl_now_ms();

	return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* buf written whole by the deadline: 0, -ETIMEDOUT (the peer does not read), or -errno. */
static int send_frame(int fd, const uint8_t *buf, size_t len, int64_t deadline)
{
	size_t off = 0;
	int rc;

	while ((rc = gw_ipc_send_some(fd, buf, len, &off)) == 0) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		rc = poll(&p, 1, left_ms(deadline));
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc == 0)
			return -ETIMEDOUT;
	}
	return rc < 0 ? rc : 0;
}

/*
 * p->fd connected and non-blocking: 0, or -errno with p->step set. A full
 * backlog (-EAGAIN) is tried again, at most until the deadline.
 */
static int peer_connect(struct isergwctl_peer *p, int64_t deadline)
{
	int fd = -1, rc;

	while ((rc = gw_ipc_connect_start(p->path, &fd)) == -EAGAIN && left_ms(deadline) > 0)
		(void)poll(NULL, 0, left_ms(deadline) < 10 ? left_ms(deadline) : 10);
	if (rc == 0) {
		p->fd = fd;
		return 0;
	}
	p->step = rc == -ENAMETOOLONG ? ISERGWCTL_STEP_PATH :
		  fd < 0 ? ISERGWCTL_STEP_SOCKET : ISERGWCTL_STEP_CONNECT;
	if (fd >= 0)
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
	rc = send_frame(p->fd, buf, len, deadline);
	if (!rc) {
		/* gw_frame_recv waits for ever at 0 ms: at least 1 ms, then it times out */
		p->step = ISERGWCTL_STEP_RECV;
		rc = gw_frame_recv(p->fd, rx, p->reply_max, left_ms(deadline) ? left_ms(deadline) : 1);
	}
	if (rc)
		isergwctl_peer_close(p);
out_free:
	free(buf);
	return rc;
}
