/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iSCSI wire formats (RFC 7143). Types only: every header segment is 48 bytes
 * and multi-byte fields are big-endian on the wire. Use the accessors in
 * pdu.h (be16/be24/be32 helpers) rather than touching fields byte by byte.
 */
#ifndef ISERGW_ISCSI_SPEC_H
#define ISERGW_ISCSI_SPEC_H

#include <assert.h>
#include <stdint.h>

#define ISCSI_BHS_LEN          48u
#define ISCSI_DIGEST_LEN       4u
#define ISCSI_DEFAULT_PORT     3260
#define ISCSI_RSVD_TAG         0xffffffffu
#define ISCSI_MAX_AHS_LEN      (255u * 4u)
#define ISCSI_MAX_DSL          0xffffffu

/* Opcodes, initiator to target (RFC 7143 11.1.1). */
enum iscsi_op_initiator {
	ISCSI_OP_NOP_OUT       = 0x00,
	ISCSI_OP_SCSI_CMD      = 0x01,
	ISCSI_OP_TASK_MGMT_REQ = 0x02,
	ISCSI_OP_LOGIN_REQ     = 0x03,
	ISCSI_OP_TEXT_REQ      = 0x04,
	ISCSI_OP_DATA_OUT      = 0x05,
	ISCSI_OP_LOGOUT_REQ    = 0x06,
	ISCSI_OP_SNACK_REQ     = 0x10,
};

/* Opcodes, target to initiator. */
enum iscsi_op_target {
	ISCSI_OP_NOP_IN         = 0x20,
	ISCSI_OP_SCSI_RSP       = 0x21,
	ISCSI_OP_TASK_MGMT_RSP  = 0x22,
	ISCSI_OP_LOGIN_RSP      = 0x23,
	ISCSI_OP_TEXT_RSP       = 0x24,
	ISCSI_OP_DATA_IN        = 0x25,
	ISCSI_OP_LOGOUT_RSP     = 0x26,
	ISCSI_OP_R2T            = 0x31,
	ISCSI_OP_ASYNC_MSG      = 0x32,
	ISCSI_OP_REJECT         = 0x3f,
};

#define ISCSI_OPCODE_MASK      0x3f
#define ISCSI_OP_IMMEDIATE     0x40

/* Common flag bits in byte 1. */
#define ISCSI_FLAG_FINAL       0x80
#define ISCSI_FLAG_CONTINUE    0x40 /* text/login C bit */

/* SCSI Command flags. */
#define ISCSI_CMD_READ         0x40
#define ISCSI_CMD_WRITE        0x20
#define ISCSI_CMD_ATTR_MASK    0x07

/* SCSI Response / Data-In flags. */
#define ISCSI_RSP_BIDI_OVERFLOW   0x10
#define ISCSI_RSP_BIDI_UNDERFLOW  0x08
#define ISCSI_RSP_OVERFLOW        0x04
#define ISCSI_RSP_UNDERFLOW       0x02
#define ISCSI_DATAIN_ACK          0x40
#define ISCSI_DATAIN_STATUS       0x01

/* SCSI Response "response" byte. */
#define ISCSI_RESPONSE_COMPLETED  0x00
#define ISCSI_RESPONSE_TARGET_FAILURE 0x01

/* Login flags and stages. */
#define ISCSI_LOGIN_TRANSIT    0x80
#define ISCSI_LOGIN_CONTINUE   0x40
#define ISCSI_LOGIN_CSG_SHIFT  2
#define ISCSI_LOGIN_CSG_MASK   0x0c
#define ISCSI_LOGIN_NSG_MASK   0x03
enum iscsi_login_stage {
	ISCSI_STAGE_SECURITY    = 0,
	ISCSI_STAGE_OPERATIONAL = 1,
	ISCSI_STAGE_FULL_FEATURE = 3,
};

/* Login status classes and details (RFC 7143 11.13.5). */
#define ISCSI_LOGIN_STATUS_SUCCESS      0x00
#define ISCSI_LOGIN_STATUS_REDIRECT     0x01
#define ISCSI_LOGIN_STATUS_INIT_ERR     0x02
#define ISCSI_LOGIN_STATUS_TARGET_ERR   0x03
/* class 0x02 details */
#define ISCSI_LOGIN_DETAIL_INIT_ERR          0x00
#define ISCSI_LOGIN_DETAIL_AUTH_FAILED       0x01
#define ISCSI_LOGIN_DETAIL_FORBIDDEN         0x02
#define ISCSI_LOGIN_DETAIL_NOT_FOUND         0x03
#define ISCSI_LOGIN_DETAIL_TARGET_REMOVED    0x04
#define ISCSI_LOGIN_DETAIL_UNSUPPORTED_VER   0x05
#define ISCSI_LOGIN_DETAIL_TOO_MANY_CONNS    0x06
#define ISCSI_LOGIN_DETAIL_MISSING_PARAM     0x07
#define ISCSI_LOGIN_DETAIL_CANT_INCLUDE      0x08
#define ISCSI_LOGIN_DETAIL_SESSION_TYPE      0x09
#define ISCSI_LOGIN_DETAIL_NO_SESSION        0x0a
#define ISCSI_LOGIN_DETAIL_INVALID_REQUEST   0x0b
/* class 0x03 details */
#define ISCSI_LOGIN_DETAIL_TARGET_ERROR      0x00
#define ISCSI_LOGIN_DETAIL_SERVICE_UNAVAIL   0x01
#define ISCSI_LOGIN_DETAIL_NO_RESOURCES      0x02

/* Task management functions and responses (RFC 7143 11.5, 11.6). */
enum iscsi_tmf_func {
	ISCSI_TMF_ABORT_TASK          = 1,
	ISCSI_TMF_ABORT_TASK_SET      = 2,
	ISCSI_TMF_CLEAR_ACA           = 3,
	ISCSI_TMF_CLEAR_TASK_SET      = 4,
	ISCSI_TMF_LOGICAL_UNIT_RESET  = 5,
	ISCSI_TMF_TARGET_WARM_RESET   = 6,
	ISCSI_TMF_TARGET_COLD_RESET   = 7,
	ISCSI_TMF_TASK_REASSIGN       = 8,
};
enum iscsi_tmf_response {
	ISCSI_TMF_RSP_COMPLETE        = 0,
	ISCSI_TMF_RSP_NO_TASK         = 1,
	ISCSI_TMF_RSP_NO_LUN          = 2,
	ISCSI_TMF_RSP_TASK_ALLEGIANT  = 3,
	ISCSI_TMF_RSP_NO_FAILOVER     = 4,
	ISCSI_TMF_RSP_NOT_SUPPORTED   = 5,
	ISCSI_TMF_RSP_AUTH_FAILED     = 6,
	ISCSI_TMF_RSP_REJECTED        = 255,
};

/* Logout reasons and responses. */
enum iscsi_logout_reason {
	ISCSI_LOGOUT_CLOSE_SESSION    = 0,
	ISCSI_LOGOUT_CLOSE_CONNECTION = 1,
	ISCSI_LOGOUT_REMOVE_CONN_RECOVERY = 2,
};
enum iscsi_logout_response {
	ISCSI_LOGOUT_RSP_SUCCESS      = 0,
	ISCSI_LOGOUT_RSP_NO_CID       = 1,
	ISCSI_LOGOUT_RSP_NO_RECOVERY  = 2,
	ISCSI_LOGOUT_RSP_CLEANUP_FAILED = 3,
};

/* Reject reasons (RFC 7143 11.17.1). */
enum iscsi_reject_reason {
	ISCSI_REJECT_DATA_DIGEST      = 0x02,
	ISCSI_REJECT_SNACK            = 0x03,
	ISCSI_REJECT_PROTOCOL_ERROR   = 0x04,
	ISCSI_REJECT_CMD_NOT_SUPPORTED = 0x05,
	ISCSI_REJECT_IMM_CMD          = 0x06,
	ISCSI_REJECT_TASK_IN_PROGRESS = 0x07,
	ISCSI_REJECT_INVALID_DATA_ACK = 0x08,
	ISCSI_REJECT_INVALID_PDU_FIELD = 0x09,
	ISCSI_REJECT_OUT_OF_RESOURCES = 0x0a,
	ISCSI_REJECT_NEGOTIATION_RESET = 0x0b,
	ISCSI_REJECT_WAITING_LOGOUT   = 0x0c,
};

/* Async events (RFC 7143 11.9.1). */
enum iscsi_async_event {
	ISCSI_ASYNC_SCSI_EVENT        = 0,
	ISCSI_ASYNC_LOGOUT_REQUEST    = 1,
	ISCSI_ASYNC_DROP_CONNECTION   = 2,
	ISCSI_ASYNC_DROP_ALL_CONNECTIONS = 3,
	ISCSI_ASYNC_RENEGOTIATE       = 4,
	ISCSI_ASYNC_VENDOR            = 255,
};

/* Generic view of any Basic Header Segment. */
struct iscsi_bhs {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;  /* in 4-byte words */
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint8_t  opspec[28];
};
static_assert(sizeof(struct iscsi_bhs) == ISCSI_BHS_LEN, "BHS is 48 bytes");

struct iscsi_scsi_cmd {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint32_t exp_xfer_len;
	uint32_t cmd_sn;
	uint32_t exp_stat_sn;
	uint8_t  cdb[16];
};
static_assert(sizeof(struct iscsi_scsi_cmd) == ISCSI_BHS_LEN, "SCSI Command is 48 bytes");

struct iscsi_scsi_rsp {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  response;
	uint8_t  status;
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  rsvd8[8];
	uint32_t itt;
	uint32_t snack_tag;
	uint32_t stat_sn;
	uint32_t exp_cmd_sn;
	uint32_t max_cmd_sn;
	uint32_t exp_data_sn;
	uint32_t bidi_residual;
	uint32_t residual;
};
static_assert(sizeof(struct iscsi_scsi_rsp) == ISCSI_BHS_LEN, "SCSI Response is 48 bytes");

struct iscsi_tmf_req {
	uint8_t  opcode;
	uint8_t  function; /* top bit set */
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint32_t ref_task_tag;
	uint32_t cmd_sn;
	uint32_t exp_stat_sn;
	uint32_t ref_cmd_sn;
	uint32_t exp_data_sn;
	uint8_t  rsvd40[8];
};
static_assert(sizeof(struct iscsi_tmf_req) == ISCSI_BHS_LEN, "TMF Request is 48 bytes");

struct iscsi_tmf_rsp {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  response;
	uint8_t  rsvd3;
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  rsvd8[8];
	uint32_t itt;
	uint32_t rsvd20;
	uint32_t stat_sn;
	uint32_t exp_cmd_sn;
	uint32_t max_cmd_sn;
	uint8_t  rsvd36[12];
};
static_assert(sizeof(struct iscsi_tmf_rsp) == ISCSI_BHS_LEN, "TMF Response is 48 bytes");

struct iscsi_data_out {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint32_t ttt;
	uint32_t rsvd24;
	uint32_t exp_stat_sn;
	uint32_t rsvd32;
	uint32_t data_sn;
	uint32_t buffer_offset;
	uint32_t rsvd44;
};
static_assert(sizeof(struct iscsi_data_out) == ISCSI_BHS_LEN, "Data-Out is 48 bytes");

struct iscsi_data_in {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2;
	uint8_t  status;
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint32_t ttt;
	uint32_t stat_sn;
	uint32_t exp_cmd_sn;
	uint32_t max_cmd_sn;
	uint32_t data_sn;
	uint32_t buffer_offset;
	uint32_t residual;
};
static_assert(sizeof(struct iscsi_data_in) == ISCSI_BHS_LEN, "Data-In is 48 bytes");

struct iscsi_r2t {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint32_t ttt;
	uint32_t stat_sn;
	uint32_t exp_cmd_sn;
	uint32_t max_cmd_sn;
	uint32_t r2t_sn;
	uint32_t buffer_offset;
	uint32_t desired_len;
};
static_assert(sizeof(struct iscsi_r2t) == ISCSI_BHS_LEN, "R2T is 48 bytes");

struct iscsi_async_msg {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt; /* 0xffffffff */
	uint32_t rsvd20;
	uint32_t stat_sn;
	uint32_t exp_cmd_sn;
	uint32_t max_cmd_sn;
	uint8_t  async_event;
	uint8_t  async_vcode;
	uint16_t param1;
	uint16_t param2;
	uint16_t param3;
	uint32_t rsvd44;
};
static_assert(sizeof(struct iscsi_async_msg) == ISCSI_BHS_LEN, "Async Message is 48 bytes");

/* Text Request / Text Response share a layout up to ExpStatSN/StatSN. */
struct iscsi_text_req {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint32_t ttt;
	uint32_t cmd_sn;
	uint32_t exp_stat_sn;
	uint8_t  rsvd32[16];
};
static_assert(sizeof(struct iscsi_text_req) == ISCSI_BHS_LEN, "Text Request is 48 bytes");

struct iscsi_text_rsp {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint32_t ttt;
	uint32_t stat_sn;
	uint32_t exp_cmd_sn;
	uint32_t max_cmd_sn;
	uint8_t  rsvd36[12];
};
static_assert(sizeof(struct iscsi_text_rsp) == ISCSI_BHS_LEN, "Text Response is 48 bytes");

struct iscsi_login_req {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  version_max;
	uint8_t  version_min;
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  isid[6];
	uint16_t tsih;
	uint32_t itt;
	uint16_t cid;
	uint16_t rsvd22;
	uint32_t cmd_sn;
	uint32_t exp_stat_sn;
	uint8_t  rsvd32[16];
};
static_assert(sizeof(struct iscsi_login_req) == ISCSI_BHS_LEN, "Login Request is 48 bytes");

struct iscsi_login_rsp {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  version_max;
	uint8_t  version_active;
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  isid[6];
	uint16_t tsih;
	uint32_t itt;
	uint32_t rsvd20;
	uint32_t stat_sn;
	uint32_t exp_cmd_sn;
	uint32_t max_cmd_sn;
	uint8_t  status_class;
	uint8_t  status_detail;
	uint8_t  rsvd38[10];
};
static_assert(sizeof(struct iscsi_login_rsp) == ISCSI_BHS_LEN, "Login Response is 48 bytes");

struct iscsi_logout_req {
	uint8_t  opcode;
	uint8_t  flags; /* top bit set, reason in low 7 bits */
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  rsvd8[8];
	uint32_t itt;
	uint16_t cid;
	uint16_t rsvd22;
	uint32_t cmd_sn;
	uint32_t exp_stat_sn;
	uint8_t  rsvd32[16];
};
static_assert(sizeof(struct iscsi_logout_req) == ISCSI_BHS_LEN, "Logout Request is 48 bytes");

struct iscsi_logout_rsp {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  response;
	uint8_t  rsvd3;
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  rsvd8[8];
	uint32_t itt;
	uint32_t rsvd20;
	uint32_t stat_sn;
	uint32_t exp_cmd_sn;
	uint32_t max_cmd_sn;
	uint32_t rsvd36;
	uint16_t time2wait;
	uint16_t time2retain;
	uint32_t rsvd44;
};
static_assert(sizeof(struct iscsi_logout_rsp) == ISCSI_BHS_LEN, "Logout Response is 48 bytes");

struct iscsi_nop_out {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint32_t ttt;
	uint32_t cmd_sn;
	uint32_t exp_stat_sn;
	uint8_t  rsvd32[16];
};
static_assert(sizeof(struct iscsi_nop_out) == ISCSI_BHS_LEN, "NOP-Out is 48 bytes");

struct iscsi_nop_in {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint32_t ttt;
	uint32_t stat_sn;
	uint32_t exp_cmd_sn;
	uint32_t max_cmd_sn;
	uint8_t  rsvd36[12];
};
static_assert(sizeof(struct iscsi_nop_in) == ISCSI_BHS_LEN, "NOP-In is 48 bytes");

struct iscsi_reject {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  reason;
	uint8_t  rsvd3;
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  rsvd8[8];
	uint32_t itt; /* 0xffffffff */
	uint32_t rsvd20;
	uint32_t stat_sn;
	uint32_t exp_cmd_sn;
	uint32_t max_cmd_sn;
	uint32_t data_sn;
	uint8_t  rsvd40[8];
};
static_assert(sizeof(struct iscsi_reject) == ISCSI_BHS_LEN, "Reject is 48 bytes");

struct iscsi_snack_req {
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  rsvd2[2];
	uint8_t  total_ahs_len;
	uint8_t  data_seg_len[3];
	uint8_t  lun[8];
	uint32_t itt;
	uint32_t ttt;
	uint32_t rsvd24;
	uint32_t exp_stat_sn;
	uint8_t  rsvd32[8];
	uint32_t beg_run;
	uint32_t run_length;
};
static_assert(sizeof(struct iscsi_snack_req) == ISCSI_BHS_LEN, "SNACK is 48 bytes");

/* Additional Header Segment types (RFC 7143 11.2.2). */
#define ISCSI_AHS_EXTENDED_CDB     1
#define ISCSI_AHS_BIDI_READ_LEN    2

#endif /* ISERGW_ISCSI_SPEC_H */
