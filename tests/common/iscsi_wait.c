/* SPDX-License-Identifier: Apache-2.0 */
/* Waiting for one libiscsi asynchronous call (iscsi_wait.h). */
#include "iscsi_wait.h"

#include <errno.h>
#include <poll.h>
#include <time.h>

uint64_t iscsi_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void iscsi_wait_cb(struct iscsi_context *c, int status, void *data, void *priv)
{
	struct iscsi_wait *w = priv;

	(void)c;
	w->done = true;
	w->status = status;
	w->task = data;
}

int iscsi_wait_until(struct iscsi_context *ctx, bool *flag, uint64_t deadline)
{
	while (!*flag) {
		struct pollfd p = { .fd = iscsi_get_fd(ctx), .events = (short)iscsi_which_events(ctx) };

		if (iscsi_now_ms() >= deadline)
			return -ETIMEDOUT;
		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			return -errno;
		if (iscsi_service(ctx, p.revents) < 0)
			return -EIO;
	}
	return 0;
}
