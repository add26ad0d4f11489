/* SPDX-License-Identifier: Apache-2.0 */
/* Byte-order helpers and PDU field accessors for the wire structs in iscsi_spec.h. */
#ifndef ISERGW_PDU_H
#define ISERGW_PDU_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/iscsi_spec.h"
#include "gw_api.h"

GW_API_BEGIN

static inline uint32_t get_be24(const uint8_t *p)
{
	return ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2];
}

static inline void put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline uint16_t get_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline void put_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline uint32_t get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline uint64_t get_be64(const uint8_t *p) { return ((uint64_t)get_be32(p) << 32) | get_be32(p + 4); }
static inline void put_be64(uint8_t *p, uint64_t v) { put_be32(p, (uint32_t)(v >> 32)); put_be32(p + 4, (uint32_t)v); }

static inline uint8_t iscsi_bhs_opcode(const struct iscsi_bhs *b) { return b->opcode & ISCSI_OPCODE_MASK; }
static inline int iscsi_bhs_immediate(const struct iscsi_bhs *b) { return !!(b->opcode & ISCSI_OP_IMMEDIATE); }
static inline uint32_t iscsi_bhs_dsl(const struct iscsi_bhs *b) { return get_be24(b->data_seg_len); }
static inline void iscsi_bhs_set_dsl(struct iscsi_bhs *b, uint32_t len) { put_be24(b->data_seg_len, len); }
static inline uint32_t iscsi_ahs_len(const struct iscsi_bhs *b) { return (uint32_t)b->total_ahs_len * 4u; }
static inline uint32_t iscsi_pad4(uint32_t len) { return (4u - (len & 3u)) & 3u; }

/* Serial number arithmetic (RFC 1982, 32 bits) for CmdSN, StatSN, DataSN. */
static inline int sn_lt(uint32_t a, uint32_t b) { return a != b && (int32_t)(a - b) < 0; }
static inline int sn_le(uint32_t a, uint32_t b) { return a == b || (int32_t)(a - b) < 0; }
static inline int sn_gt(uint32_t a, uint32_t b) { return sn_lt(b, a); }

/* Where a command's CmdSN puts it (RFC 7143 4.2.2.1). */
enum iscsi_cmdsn_verdict {
	ISCSI_CMDSN_NOW = 0,    /* deliver now (== ExpCmdSN, or immediate) */
	ISCSI_CMDSN_QUEUE,      /* inside the window but ahead of a gap */
	ISCSI_CMDSN_IGNORE,     /* outside [ExpCmdSN, MaxCmdSN]: silently ignored */
};
enum iscsi_cmdsn_verdict iscsi_cmdsn_check(uint32_t exp_cmd_sn, uint32_t max_cmd_sn,
					   uint32_t cmd_sn, int immediate);

/*
 * LUN field (SAM-5 addressing): decode single-level peripheral (00b) and
 * flat-space (01b) addressing; anything else returns UINT64_MAX.
 */
uint64_t iscsi_lun_decode(const uint8_t lun[8]);
void iscsi_lun_encode(uint64_t lun, uint8_t out[8]);

/* CRC32C as iSCSI digests use it (RFC 7143 13.1, 11.1.5). */
uint32_t iscsi_crc32c(const void *buf, size_t len, uint32_t seed);
#define ISCSI_CRC32C_SEED 0xffffffffu
static inline uint32_t iscsi_digest_final(uint32_t crc) { return ~crc; }
/* Whole-buffer digest: final value, to be stored little-endian on the wire. */
uint32_t iscsi_digest(const void *buf, size_t len);
/* Digest of data followed by pad zero bytes. */
uint32_t iscsi_data_digest(const void *buf, size_t len, uint32_t pad);

/* Printable name of an opcode, for logs. */
const char *iscsi_opcode_name(uint8_t opcode);

GW_API_END

#endif
