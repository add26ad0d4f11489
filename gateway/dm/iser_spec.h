/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iSER wire formats (RFC 7145 section 9, and what the Linux initiator sends):
 * the iSER header in front of every iSCSI control-type PDU carried by an RDMA
 * Send, and the private data of the RDMA CM connection request and reply.
 */
#ifndef ISERGW_ISER_SPEC_H
#define ISERGW_ISER_SPEC_H

#include <assert.h>
#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* iSER header: flags byte = opcode (high nibble) | WSV | RSV. */
#define ISER_OPCODE_MASK   0xf0
#define ISER_OP_ISCSI_CTRL 0x10   /* iSCSI control-type PDU */
#define ISER_OP_HELLO      0x20
#define ISER_OP_HELLO_RPLY 0x30
#define ISER_WSV           0x08   /* Write STag valid */
#define ISER_RSV           0x04   /* Read STag valid */
#define ISER_FLAGS_RSVD    0x03   /* must be zero for control-type PDUs */

struct iser_hdr {
	uint8_t  flags;
	uint8_t  rsvd[3];
	uint32_t write_stag;
	uint64_t write_va;
	uint32_t read_stag;
	uint64_t read_va;
} __attribute__((packed));
static_assert(sizeof(struct iser_hdr) == 28, "iSER header is 28 bytes");

/* RDMA CM private data: connect request (initiator) and reply (target). */
#define ISER_CM_ZBVA_NOT_SUP        0x80  /* request: initiator does not use zero-based VAs */
#define ISER_CM_SEND_W_INV_NOT_SUP  0x40  /* request: no Send with Invalidate, please */
#define ISER_CM_ZBVA_NOT_USED       0x80  /* reply: target does not use zero-based VAs */
#define ISER_CM_SEND_W_INV_NOT_USED 0x40  /* reply: target will not Send with Invalidate */

struct iser_cm_hdr {
	uint8_t flags;
	uint8_t rsvd[3];
} __attribute__((packed));
static_assert(sizeof(struct iser_cm_hdr) == 4, "iSER CM private data is 4 bytes");

/* A decoded iSER header of a received control-type PDU. */
struct iser_hdr_info {
	bool wsv, rsv;
	uint32_t write_stag, read_stag;
	uint64_t write_va, read_va;
};

/*
 * Decode and check the iSER header at the front of a received Send of len
 * bytes. Returns 0, -EPROTO with a reason (not a control-type PDU, reserved
 * bits set, a valid flag with a zero STag, too short).
 */
int iser_hdr_decode(const void *buf, uint32_t len, struct iser_hdr_info *out, const char **why);
/* The header in front of every PDU the target sends (no STags). */
void iser_hdr_encode_ctrl(void *buf);

/*
 * RDMA Read/atomic depths for rdma_accept() from a connect request. The
 * request event reports both values from the accepting side's point of view
 * (rdma_accept(3)): req_initiator_depth is the most RDMA Reads we may have
 * outstanding towards the initiator (its responder resources), and must not
 * be exceeded; req_responder_resources is how many it would keep outstanding
 * towards us. Each is capped by the device's limit.
 */
struct iser_cm_depths {
	uint8_t initiator_depth;        /* our RDMA Reads in flight (0: none allowed) */
	uint8_t responder_resources;
};
struct iser_cm_depths iser_cm_accept_depths(uint8_t req_initiator_depth,
					    uint8_t req_responder_resources,
					    int dev_max_qp_init_rd_atom, int dev_max_qp_rd_atom);

#endif
