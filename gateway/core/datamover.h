/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The datamover interface (RFC 5047). The iSCSI core does all of iSCSI
 * (login, text, sessions, CmdSN, tasks, task management); a datamover only
 * moves PDUs and data. Operations are named after RFC 5047's primitives:
 *
 *   send_control  Send_Control: queue a control PDU (response, R2T, NOP-In, ...)
 *   put_data      Put_Data: deliver a task's Data-In (with status if allowed)
 *   get_data      Get_Data: obtain a task's remaining solicited Data-Out
 *   release_task  the core is done with a task: drop datamover resources
 *   buf_get/put   a task's data buffer (iSER: from memory registered once; when
 *                 it runs dry the task waits, see iscsi_task_buf_ready())
 *   terminate     stop the connection; the core hears back via iscsi_conn_closed()
 *
 * Upcalls (Notify primitives), implemented by the core in core/iscsi.h:
 *   iscsi_conn_create()     a transport connection arrived on a portal
 *   iscsi_conn_rx_pdu()     a PDU (header, AHS, data) was received
 *   iscsi_task_data_ready() all Data-Out of a task has been placed (get_data done)
 *   iscsi_conn_sent()       a PDU queued with a completion callback left the node
 *   iscsi_conn_closed()     the transport is down and drained: free the connection
 *
 * Unset entries of an ops table are filled with -EOPNOTSUPP stubs by
 * gw_dm_register(), so callers never test for NULL.
 */
#ifndef ISERGW_DATAMOVER_H
#define ISERGW_DATAMOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/iscsi_spec.h"
#include "config/config.h"

struct iscsi_conn;
struct iscsi_task;
struct gw_portal;
struct reactor;

/*
 * One PDU on its way out. The header (and digest space) lives inside; the data
 * is referenced, not copied, and must stay valid until `sent` runs (or the
 * PDU is freed on connection teardown).
 */
struct iscsi_tx_pdu {
	struct iscsi_bhs bhs;
	uint8_t hdigest[4];
	uint8_t pad_ddigest[8];           /* padding (0-3 bytes) then data digest */
	const uint8_t *data;
	uint32_t data_len;
	void (*sent)(struct iscsi_tx_pdu *pdu, int status); /* optional; status 0 or -errno */
	void *ctx;
	void *owned;                      /* freed with the PDU (e.g. a login response copy) */
	struct iscsi_tx_pdu *next;
	/* private to the datamover */
	uint32_t off;                     /* bytes already written */
	uint32_t total;
	bool in_pool;
};

struct gw_dm_ops {
	const char *name;
	enum gw_transport transport;
	/*
	 * The portal's address was removed: true keeps the listener (it only
	 * stops hearing from anyone until the address is back), false closes
	 * it and the portal listens again when the address comes back.
	 */
	bool keep_listener_without_address;
	/* start listening on a portal; new connections call iscsi_conn_create() */
	int (*listen)(struct gw_portal *portal);
	void (*unlisten)(struct gw_portal *portal);
	int (*send_control)(struct iscsi_conn *c, struct iscsi_tx_pdu *pdu);
	int (*put_data)(struct iscsi_conn *c, struct iscsi_task *t);
	int (*get_data)(struct iscsi_conn *c, struct iscsi_task *t);
	void (*release_task)(struct iscsi_conn *c, struct iscsi_task *t);
	/*
	 * Data buffer of t->edtl bytes: returns 0 with t->buf set, -EAGAIN when
	 * the task must wait (the datamover sets t->buf and calls
	 * iscsi_task_buf_ready() later, on the same reactor), or -ENOMEM.
	 * buf_put returns it, or cancels the wait. Default: gw_buf_alloc/free.
	 */
	int (*buf_get)(struct iscsi_conn *c, struct iscsi_task *t);
	void (*buf_put)(struct iscsi_conn *c, struct iscsi_task *t);
	void (*terminate)(struct iscsi_conn *c);
	/* login finished: switch to full-feature parameters (digests, buffers) */
	int (*enter_ffp)(struct iscsi_conn *c);
	/* "addr:port" strings for log lines */
	void (*addrs)(struct iscsi_conn *c, char *peer, size_t plen, char *local, size_t llen);
};

/* Release the calling reactor thread's datamover state (at thread exit). */
void gw_dm_thread_exit(void);
/* Release process-wide datamover state (after every reactor stopped). */
void gw_dm_global_exit(void);
void iser_thread_exit(void);
void iser_global_exit(void);

/* Fill unset entries with -EOPNOTSUPP stubs. */
void gw_dm_fill_ops(struct gw_dm_ops *ops);
const struct gw_dm_ops *gw_dm_for_transport(enum gw_transport t);

extern struct gw_dm_ops gw_dm_tcp_ops;
extern struct gw_dm_ops gw_dm_iser_ops;   /* NULL name when built without rdma-core */

#endif
