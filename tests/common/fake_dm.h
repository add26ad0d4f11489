/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake datamover for driving the iSCSI core (core/conn.c, session.c,
 * task.c) without sockets: it stands where dm/tcp.c stands. Bytes the
 * "initiator" sends are appended to a receive buffer and framed by the
 * core's own iscsi_conn_rx_stream(), exactly as the TCP datamover frames
 * what it reads; PDUs the core sends are queued and "written" in a deferred
 * call after the event batch (each PDU's header and data read there, then
 * its sent callback run), as tcp.c's writev flush does. Data-In and R2Ts
 * are the TCP datamover's own put_data/get_data (they only call the core).
 * Task buffers come from a bounded pool, as iSER's: a task that does not fit
 * waits for one (buf_get -EAGAIN, then iscsi_task_buf_ready()).
 * Teardown follows tcp.c: terminate flushes, fails what is left, and calls
 * iscsi_conn_closed() from a deferred call.
 *
 * Everything runs on one reactor the caller drives with reactor_poll(): the
 * fake_dm_* calls below only queue work on it.
 */
#ifndef ISERGW_FAKE_DM_H
#define ISERGW_FAKE_DM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/iscsi.h"

struct fake_dm;

/* Called for every PDU the core sends, when it is "written" (data valid then). */
typedef void (*fake_dm_tx_fn)(void *arg, const struct iscsi_tx_pdu *pdu);

/*
 * The ops table to give a portal (transport TCP). Every connection made on
 * that portal with fake_dm_connect() uses it.
 */
extern struct gw_dm_ops fake_dm_ops;

/*
 * A new connection on portal p (whose dm is &fake_dm_ops), on reactor r, in
 * the login phase. *conn is the core's connection (valid until the fake is
 * closed and the reactor polled).
 */
int fake_dm_connect(struct gw_portal *p, struct reactor *r, struct fake_dm **out,
		    struct iscsi_conn **conn);
/*
 * The address the connections made after it come from, as a datamover writes
 * it ("192.0.2.1:40000", "[2001:db8::1]:40000"); NULL: "fake-initiator:1",
 * which is no address (not counted by max_logins_per_address).
 */
void fake_dm_set_peer(const char *peer);
/* Bytes from the initiator: framed and handed to the core at the next poll. */
int fake_dm_feed(struct fake_dm *d, const void *buf, size_t len);
/* The initiator closes its end (as a read of 0 bytes does in tcp.c), at the next poll. */
void fake_dm_hangup(struct fake_dm *d);
/* Watch what the core sends; NULL: only read it. */
void fake_dm_set_tx(struct fake_dm *d, fake_dm_tx_fn fn, void *arg);
/* Whether the core is done with the connection (iscsi_conn_closed has run). */
bool fake_dm_closed(const struct fake_dm *d);
/* Free the fake once fake_dm_closed() (or if the core never had the connection). */
void fake_dm_free(struct fake_dm *d);
/* PDUs and bytes (header, data) written so far. */
uint64_t fake_dm_tx_pdus(const struct fake_dm *d);

#endif
