/* SPDX-License-Identifier: Apache-2.0 */
#include "core/pdu.h"

#include <isa-l/crc.h>

uint64_t iscsi_lun_decode(const uint8_t lun[8])
{
	switch (lun[0] >> 6) {
	case 0: /* peripheral device addressing, bus 0 */
		if (lun[0] & 0x3f)
			return UINT64_MAX;
		return lun[1];
	case 1: /* flat space */
		return ((uint64_t)(lun[0] & 0x3f) << 8) | lun[1];
	default:
		return UINT64_MAX;
	}
}

void iscsi_lun_encode(uint64_t lun, uint8_t out[8])
{
	memset(out, 0, 8);
	if (lun < 256) {
		out[1] = (uint8_t)lun;
	} else {
		out[0] = (uint8_t)(0x40 | ((lun >> 8) & 0x3f));
		out[1] = (uint8_t)lun;
	}
}

enum iscsi_cmdsn_verdict iscsi_cmdsn_check(uint32_t exp_cmd_sn, uint32_t max_cmd_sn,
					   uint32_t cmd_sn, int immediate)
{
	if (immediate || cmd_sn == exp_cmd_sn)
		return ISCSI_CMDSN_NOW;
	if (sn_gt(cmd_sn, exp_cmd_sn) && sn_le(cmd_sn, max_cmd_sn))
		return ISCSI_CMDSN_QUEUE;
	return ISCSI_CMDSN_IGNORE;
}

uint32_t iscsi_crc32c(const void *buf, size_t len, uint32_t seed)
{
	/* ISA-L's crc32_iscsi takes an int length: feed large buffers in pieces */
	const unsigned char *p = buf;
	uint32_t crc = seed;

	while (len) {
		size_t n = len > (1u << 30) ? (1u << 30) : len;

		crc = crc32_iscsi((unsigned char *)(uintptr_t)p, (int)n, crc);
		p += n;
		len -= n;
	}
	return crc;
}

uint32_t iscsi_digest(const void *buf, size_t len)
{
	return iscsi_digest_final(iscsi_crc32c(buf, len, ISCSI_CRC32C_SEED));
}

uint32_t iscsi_data_digest(const void *buf, size_t len, uint32_t pad)
{
	static const uint8_t zeros[4];
	uint32_t crc = iscsi_crc32c(buf, len, ISCSI_CRC32C_SEED);

	if (pad)
		crc = iscsi_crc32c(zeros, pad, crc);
	return iscsi_digest_final(crc);
}

const char *iscsi_opcode_name(uint8_t opcode)
{
	switch (opcode & ISCSI_OPCODE_MASK) {
	case ISCSI_OP_NOP_OUT: return "NOP-Out";
	case ISCSI_OP_SCSI_CMD: return "SCSI Command";
	case ISCSI_OP_TASK_MGMT_REQ: return "Task Management Request";
	case ISCSI_OP_LOGIN_REQ: return "Login Request";
	case ISCSI_OP_TEXT_REQ: return "Text Request";
	case ISCSI_OP_DATA_OUT: return "Data-Out";
	case ISCSI_OP_LOGOUT_REQ: return "Logout Request";
	case ISCSI_OP_SNACK_REQ: return "SNACK";
	case ISCSI_OP_NOP_IN: return "NOP-In";
	case ISCSI_OP_SCSI_RSP: return "SCSI Response";
	case ISCSI_OP_TASK_MGMT_RSP: return "Task Management Response";
	case ISCSI_OP_LOGIN_RSP: return "Login Response";
	case ISCSI_OP_TEXT_RSP: return "Text Response";
	case ISCSI_OP_DATA_IN: return "Data-In";
	case ISCSI_OP_LOGOUT_RSP: return "Logout Response";
	case ISCSI_OP_R2T: return "R2T";
	case ISCSI_OP_ASYNC_MSG: return "Async Message";
	case ISCSI_OP_REJECT: return "Reject";
	default: return "unknown";
	}
}
