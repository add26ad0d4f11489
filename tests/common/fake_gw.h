/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A gateway without threads for driving the core: one reactor (the caller
 * runs it with reactor_poll()), one portal whose datamover the caller gives,
 * one target with FAKE_GW_LUNS LUNs on memory backstores. The backstore
 * completes I/O in a deferred call of the submitting reactor, as the file
 * backstore does from its ring's eventfd; it can also hold completions until
 * told (fake_gw_hold_io), so commands can be caught in the backend.
 *
 * What a session can change is rebuilt by fake_gw_reset(): the LUs (unit
 * attentions, reservations, mode pages), their data and the ALUA states;
 * call it with no connection alive.
 */
#ifndef ISERGW_FAKE_GW_H
#define ISERGW_FAKE_GW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/iscsi.h"
#include "core/pdu.h"

#define FAKE_GW_LUNS 2
#define FAKE_GW_TARGET "iqn.2026-11.org.isergw:fuzz"
#define FAKE_GW_INITIATOR "iqn.2026-11.org.example:fuzz-host"

struct fake_gw {
	struct gw *gw;
	struct reactor *r;
	struct gw_portal *portal;
	struct gw_target *target;
};

/* transport: what the portal says it is (the login key table follows it). */
int fake_gw_create(const struct gw_dm_ops *dm, enum gw_transport transport, struct fake_gw **out);
void fake_gw_destroy(struct fake_gw *g);
/* Fresh LUs and ALUA states; 0 or -errno. */
int fake_gw_reset(struct fake_gw *g);
/* Hold backstore completions (true) until fake_gw_run_io(), or complete them by themselves. */
void fake_gw_hold_io(struct fake_gw *g, bool hold);
/* Complete the held I/O (at the next poll). */
void fake_gw_run_io(struct fake_gw *g);
/* Run the reactor until nothing is ready; aborts if it does not settle. */
void fake_gw_poll(struct fake_gw *g);

/*
 * The initiator's side of a login, as the drivers of the fake write it:
 * fake_gw_put_key() appends "key=value" and its NUL to the data segment
 * buf[*len..cap) (aborts if it does not fit); fake_gw_login_req() fills a
 * Login Request of CID 1 going from the operational stage straight to full
 * feature phase, with klen bytes of keys.
 */
void fake_gw_put_key(char *buf, size_t *len, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void fake_gw_login_req(struct iscsi_login_req *req, const uint8_t isid[6], uint32_t itt,
		       uint32_t cmd_sn, uint32_t klen);
/* Whether an initiator PDU of opcode op carries a CmdSN (bytes 24..27). */
bool fake_gw_has_cmd_sn(uint8_t op);

#endif
