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
 *   iscsi_conn_admit()      a connection is being accepted: may it be (per-address limit)?
 *   iscsi_conn_create()     a transport connection arrived on a portal
 *   iscsi_conn_rx_pdu()     a PDU (header, AHS, data) was received
 *   iscsi_task_data_ready() all Data-Out of a task has been placed (get_data done)
 *   iscsi_conn_sent()       a PDU queued with a completion callback left the node
 *   iscsi_conn_closed()     the transport is down and drained: free the connection
 *
 *   thread_exit   a reactor thread ends: free its datamover state
 *   global_exit   every reactor stopped: free process-wide datamover state
 *
 * The core owns this interface and the registry (core/dm_registry.c); each
 * datamover (dm/) registers its ops table with GW_DM_REGISTER(). Unset
 * entries of an ops table are filled with -EOPNOTSUPP stubs (or no-ops) at
 * registration, so callers never test for NULL.
 */
#ifndef ISERGW_DATAMOVER_H
#define ISERGW_DATAMOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/iscsi_spec.h"
#include "config/config.h"
#include "gw_api.h"

GW_API_BEGIN

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
	/* the calling reactor thread ends: release its state of this datamover */
	void (*thread_exit)(void);
	/* after every reactor stopped: release the process-wide state */
	void (*global_exit)(void);
};

/*
 * Registers a datamover for ops->transport (filling unset entries). Returns
 * 0, or -EEXIST if one is registered for it already, -EINVAL for an unknown
 * transport. Before any reactor runs (GW_DM_REGISTER: at program start).
 */
int gw_dm_register(struct gw_dm_ops *ops);
/* A datamover file registers its ops table at program start. */
#define GW_DM_REGISTER(ops)                                                   \
	static void __attribute__((constructor)) gw_dm_register_##ops(void)   \
	{                                                                     \
		gw_dm_register(&(ops));                                       \
	}
/* The datamover registered for transport t; NULL if none (built without it). */
const struct gw_dm_ops *gw_dm_for_transport(enum gw_transport t);
/* Fill unset entries with -EOPNOTSUPP stubs (an ops table never registered: tests). */
void gw_dm_fill_ops(struct gw_dm_ops *ops);
/* Every registered datamover's thread_exit, on the reactor thread that ends. */
void gw_dm_thread_exit(void);
/* Every registered datamover's global_exit (after every reactor stopped). */
void gw_dm_global_exit(void);

GW_API_END

#endif
