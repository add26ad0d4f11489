/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fake rdma-core for driving dm/iser.c without RDMA hardware. The program
 * that links fake_verbs.c gets its own definitions of the librdmacm and
 * libibverbs functions iser.c calls (they take precedence over the shared
 * libraries'), and one fake device whose context's ops (post_send,
 * post_recv, poll_cq, req_notify_cq: inline calls in verbs.h) are ours.
 *
 * The fake plays the initiator's side of the wire: it raises RDMA CM events
 * (a connect request on the listener, ESTABLISHED, DISCONNECTED) on event
 * channels whose descriptors are eventfds in the reactor's epoll; it fills
 * posted receives with what the initiator sends (fv_send) and completes
 * them on the connection's CQ; it completes the target's Sends and RDMA
 * Writes after reading every byte of them, and RDMA Reads with bytes from
 * the initiator's memory (fv_set_remote). Completions raise an event on the
 * CQ's completion channel when it is armed, as a device does. A QP moved to
 * the error state flushes what is posted; rdma_disconnect() is answered
 * with DISCONNECTED.
 */
#ifndef ISERGW_FAKE_VERBS_H
#define ISERGW_FAKE_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* The id of the last rdma_listen() (the portal's listener), or NULL. */
struct rdma_cm_id *fv_listener(void);
/*
 * An initiator connects to the listener: a CONNECT_REQUEST event with this
 * private data (NULL: none) and depths. Returns the new id (the connection's
 * once the target accepts it).
 */
struct rdma_cm_id *fv_connect(const void *priv, uint8_t priv_len, uint8_t initiator_depth,
			      uint8_t responder_resources);
/* The id of the last fv_connect() while it lives (the target has not destroyed it). */
struct rdma_cm_id *fv_conn(void);
/* Whether the target accepted id (rdma_accept) and how many reads it may have outstanding. */
bool fv_accepted(const struct rdma_cm_id *id, uint8_t *initiator_depth);
/* A CM event for id (ESTABLISHED, DISCONNECTED, ...) on its channel. */
void fv_cm_event(struct rdma_cm_id *id, enum rdma_cm_event_type type);
/*
 * The initiator's Send of len bytes into the oldest receive posted on id's
 * QP, completed on its CQ (longer than the buffer: IBV_WC_LOC_LEN_ERR).
 * -ENOBUFS: none posted.
 */
int fv_send(struct rdma_cm_id *id, const void *buf, size_t len);
/* What RDMA Reads find in the initiator's memory: buf repeated (NULL: zeroes). */
void fv_set_remote(const void *buf, size_t len);
/* Hold send-queue completions (Sends, RDMA Reads and Writes) until released. */
void fv_hold_sq(bool hold);
/* The next send-queue completion gets this status (IBV_WC_SUCCESS: none). */
void fv_fail_next(enum ibv_wc_status st);
/* Work requests and CM objects still alive (a connection's must all be gone). */
unsigned int fv_live_qps(void);
/* Sends and RDMA Writes the target posted (read in full). */
uint64_t fv_sq_posted(void);

#endif
