/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Waiting for one libiscsi asynchronous call (the clients that drive
 * several commands at once and still need a synchronous step now and then):
 *
 *   struct iscsi_wait w = { 0 };
 *   if (!iscsi_testunitready_task(ctx, lun, iscsi_wait_cb, &w) ||
 *       iscsi_wait_until(ctx, &w.done, iscsi_now_ms() + 10000)) ...
 */
#ifndef ISERGW_TESTS_ISCSI_WAIT_H
#define ISERGW_TESTS_ISCSI_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include <iscsi/iscsi.h>

struct iscsi_wait {
	bool done;
	int status;
	struct scsi_task *task;
};

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t iscsi_now_ms(void);
/* The callback of an asynchronous call; priv is its struct iscsi_wait. */
void iscsi_wait_cb(struct iscsi_context *c, int status, void *data, void *priv);
/* Services ctx until *flag or the deadline: 0, -ETIMEDOUT, -EIO or the errno of poll. */
int iscsi_wait_until(struct iscsi_context *ctx, bool *flag, uint64_t deadline);

#endif
