/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Login and text negotiation (RFC 7143 sections 6, 12, 13), once for every
 * datamover. Pure protocol logic: it consumes Login/Text Request PDUs and
 * produces responses; it never touches sockets. The core owns StatSN,
 * ExpCmdSN, MaxCmdSN and TSIH and fills those response fields itself.
 *
 * Datamover-specific keys (iSER: RDMAExtensions, InitiatorRecvDataSegmentLength,
 * TargetRecvDataSegmentLength, MaxOutstandingUnexpectedPDUs) are part of the
 * one key table and enabled by env->transport.
 */
#ifndef ISERGW_LOGIN_H
#define ISERGW_LOGIN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/iscsi_spec.h"
#include "config/config.h"
#include "gw_api.h"

GW_API_BEGIN

/*
 * The iSER datamover receives every PDU into a pre-posted buffer with room
 * for this much data (RFC 7145: the target's receive data segment length); on
 * iSER portals the target never declares more (MaxRecvDataSegmentLength,
 * TargetRecvDataSegmentLength).
 */
#define ISCSI_ISER_RECV_DSL 8192u

enum iscsi_session_type {
	ISCSI_SESSION_NORMAL = 0,
	ISCSI_SESSION_DISCOVERY,
};

/* Session-wide operational parameters, as negotiated. */
struct iscsi_sess_params {
	bool initial_r2t;
	bool immediate_data;
	bool data_pdu_in_order;
	bool data_seq_in_order;
	uint32_t max_burst;
	uint32_t first_burst;
	uint32_t max_outstanding_r2t;
	uint32_t max_connections;
	uint32_t default_time2wait;
	uint32_t default_time2retain;
	uint32_t erl;
};

/* Connection-only operational parameters, as negotiated / declared. */
struct iscsi_conn_params {
	uint32_t max_recv_dsl;     /* we accept Data-Out/commands with at most this much data */
	uint32_t max_xmit_dsl;     /* the initiator's MaxRecvDataSegmentLength: our send limit */
	bool header_digest;        /* CRC32C on headers */
	bool data_digest;          /* CRC32C on data */
	/* iSER (RFC 7145) */
	bool rdma_extensions;
	uint32_t initiator_recv_dsl;
	bool initiator_recv_dsl_declared;  /* the initiator sent InitiatorRecvDataSegmentLength */
	uint32_t target_recv_dsl;
	uint32_t max_outstanding_unexpected_pdus;
};

/* What the core tells the login code about one new connection. */
struct iscsi_login_env {
	const struct gw_config *cfg;
	const struct gw_portal_cfg *portal;    /* portal the connection came in on */
	enum gw_transport transport;
	char peer_addr[80];                    /* "addr:port", for log lines */
	char local_addr[80];                   /* "addr:port" the connection is bound to */
};

enum iscsi_login_result {
	ISCSI_LOGIN_RES_CONTINUE = 0, /* send the response, wait for the next Login Request */
	ISCSI_LOGIN_RES_DONE,         /* send the response; full feature phase starts after it */
	ISCSI_LOGIN_RES_FAIL,         /* send the response (non-zero status class), then close */
};

struct iscsi_login;

int iscsi_login_create(const struct iscsi_login_env *env, struct iscsi_login **out);
void iscsi_login_destroy(struct iscsi_login *l);

/*
 * Handle one Login Request. Fills *rsp (opcode, flags T/C/CSG/NSG, versions,
 * ISID, ITT, status class/detail, DataSegmentLength) and points *rsp_data at
 * the response text (valid until the next call / destroy). TSIH is left 0.
 * Status and a log line naming the peer are produced for every failure:
 * unsupported version, missing InitiatorName/TargetName, unknown target,
 * initiator not in the ACL, failed CHAP, bad or duplicated keys, stage
 * violations, text over 64 KiB, ...
 */
enum iscsi_login_result iscsi_login_rx(struct iscsi_login *l, const struct iscsi_login_req *req,
				       const uint8_t *data, uint32_t dlen,
				       struct iscsi_login_rsp *rsp,
				       const uint8_t **rsp_data, uint32_t *rsp_dlen);

/* Results, valid after ISCSI_LOGIN_RES_DONE. */
enum iscsi_session_type iscsi_login_session_type(const struct iscsi_login *l);
const struct gw_target_cfg *iscsi_login_target(const struct iscsi_login *l); /* NULL for discovery */
const char *iscsi_login_initiator_name(const struct iscsi_login *l);
const char *iscsi_login_initiator_alias(const struct iscsi_login *l);   /* "" if none */
void iscsi_login_isid(const struct iscsi_login *l, uint8_t isid[6]);
uint16_t iscsi_login_tsih(const struct iscsi_login *l);                 /* as sent by the initiator */
uint16_t iscsi_login_cid(const struct iscsi_login *l);
uint32_t iscsi_login_first_cmdsn(const struct iscsi_login *l);         /* CmdSN of the leading login */
const struct iscsi_sess_params *iscsi_login_sess_params(const struct iscsi_login *l);
const struct iscsi_conn_params *iscsi_login_conn_params(const struct iscsi_login *l);

/* Target t's ACL entry for initiator (names compare without case), or NULL. */
const struct gw_acl_cfg *iscsi_target_acl(const struct gw_target_cfg *t, const char *initiator);

/*
 * Text Request processing in full feature phase (SendTargets, and key
 * renegotiation which we answer per RFC 7143 with Reject/NotUnderstood as
 * appropriate). Long answers are split with the C bit and a Target Transfer
 * Tag; the state lives in struct iscsi_text.
 */
struct iscsi_text;
struct iscsi_text_env {
	const struct gw_config *cfg;
	enum iscsi_session_type session_type;
	const struct gw_target_cfg *target;   /* normal session: its target */
	const char *initiator_name;
	const char *local_addr;               /* "addr:port" of this connection */
	uint32_t max_xmit_dsl;                /* split answers to at most this much data */
	/* whether a line about this request may be written (NULL: always) */
	bool (*log_room)(void *ctx);
	void *log_ctx;
};
int iscsi_text_create(struct iscsi_text **out);
void iscsi_text_destroy(struct iscsi_text *t);
/*
 * Fills rsp (opcode, flags F/C, ITT, TTT, LUN, DataSegmentLength). Returns 0,
 * or a negative errno when the request must be answered with a Reject
 * (-EPROTO: protocol error), in which case rsp is not used.
 */
int iscsi_text_rx(struct iscsi_text *t, const struct iscsi_text_env *env,
		  const struct iscsi_text_req *req, const uint8_t *data, uint32_t dlen,
		  struct iscsi_text_rsp *rsp, const uint8_t **rsp_data, uint32_t *rsp_dlen);
/*
 * After iscsi_text_rx() returned 0: the MaxRecvDataSegmentLength the
 * initiator declared in that request (its new receive limit, i.e. our new
 * max_xmit_dsl for this connection), or 0 if it declared none.
 */
uint32_t iscsi_text_declared_max_xmit_dsl(const struct iscsi_text *t);

GW_API_END

#endif
