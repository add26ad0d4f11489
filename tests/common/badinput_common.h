/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the two hostile-input clients share: tests/integration/badinput.c
 * (iSCSI over TCP) and tests/vm/iser_badinput.c (iSER over librdmacm). Byte
 * order, the "PASS/FAIL name: note" verdict lines, login text keys, the Basic
 * Header Segments both build (Login Request, NOP-Out, SCSI Command), CDBs and
 * data patterns, and the --cases / number options. Neither transport is in
 * here: each client sends and receives its own way.
 */
#ifndef ISERGW_TESTS_BADINPUT_COMMON_H
#define ISERGW_TESTS_BADINPUT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------- */
/* byte order, serial numbers, time */

static inline void be16put(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void be24put(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 16); be16put(p + 1, v); }
static inline void be32put(uint8_t *p, uint32_t v) { be16put(p, v >> 16); be16put(p + 2, v & 0xffff); }
static inline void be64put(uint8_t *p, uint64_t v) { be32put(p, (uint32_t)(v >> 32)); be32put(p + 4, (uint32_t)v); }
static inline uint32_t be24get(const uint8_t *p) { return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; }
static inline uint32_t be32get(const uint8_t *p) { return (uint32_t)p[0] << 24 | be24get(p + 1); }
/* RFC 1982 serial number arithmetic (CmdSN, StatSN) */
static inline bool sn_gt(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }

/* CLOCK_MONOTONIC in milliseconds */
long long now_ms(void);

/* ---------------------------------------------------------------------- */
/* results: one "PASS name: note" or "FAIL name: note" line a case */

extern char note[2048];  /* what was received, for the verdict line */
extern int passes, failures;

/* Bound the note to cap bytes (at most sizeof(note)); longer text is cut. */
void notes_limit(size_t cap);
/* Append to the note, "; " between parts. */
void notef(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the verdict line with the note ("-" when empty), count it, clear the note. */
void verdict(const char *name, bool ok);
/* The name of a target opcode ("Reject", "Login Response", ...). */
const char *opname(uint8_t op);

/* ---------------------------------------------------------------------- */
/* text keys (RFC 7143 6): key=value, each NUL-terminated */

struct keys {
	char buf[16384];
	uint32_t len;
};

/* Append "key=value" (or any bytes) with its NUL; dropped when it does not fit. */
void key_add(struct keys *k, const char *kv);
void key_addf(struct keys *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append n raw bytes (which carry their own NUL, if any). */
void key_add_raw(struct keys *k, const void *p, size_t n);
/* The value of key in a NUL-separated data segment, or NULL. */
const char *key_find(const uint8_t *data, uint32_t dlen, const char *key);

/* ---------------------------------------------------------------------- */
/* Basic Header Segments (all fields not named are zero) */

/* Login Request flags: T (with NSG nsg) or not, CSG csg. */
uint8_t login_flags(bool transit, int csg, int nsg);
/* Login Request (immediate) BHS; DataSegmentLength is left to the sender. */
void bhs_login(uint8_t *b, uint8_t flags, const uint8_t isid[6], uint16_t tsih, uint32_t itt,
	       uint32_t cmd_sn, uint32_t exp_stat_sn);
/* Whether a Login Response has T set with NSG nsg. */
bool login_transits_to(const uint8_t *bhs, int nsg);
/* A Login Response's status: 0, class << 8 | detail, or -EPROTO for another PDU. */
int login_rsp_status(const uint8_t *bhs);
/* The TSIH of a Login Response. */
uint16_t login_rsp_tsih(const uint8_t *bhs);

/* LUN field (bytes 8-15): peripheral addressing below 256, flat space above. */
void put_lun(uint8_t *b, unsigned lun);
/* NOP-Out (immediate, F) with ITT itt and TTT ttt. */
void bhs_nop_out(uint8_t *b, uint32_t itt, uint32_t ttt, uint32_t cmd_sn, uint32_t exp_stat_sn);
/* The NOP-Out answering the target's NOP-In ping: its LUN and TTT, ITT reserved. */
void bhs_nop_answer(uint8_t *b, const uint8_t *ping, uint32_t cmd_sn, uint32_t exp_stat_sn);
/* SCSI Command: F, simple task attribute, flags (ISCSI_CMD_READ/WRITE), a 16-byte CDB. */
void bhs_scsi_cmd(uint8_t *b, unsigned lun, uint32_t itt, uint8_t flags, uint32_t edtl,
		  uint32_t cmd_sn, uint32_t exp_stat_sn, const uint8_t *cdb);

/* A 10-byte CDB (READ(10), WRITE(10)) in a 16-byte buffer. */
void cdb10(uint8_t *cdb, uint8_t op, uint32_t lba, uint16_t blocks);
/* Data that differs per tag and per byte. */
void pattern(uint8_t *buf, size_t len, uint32_t tag);

/* ---------------------------------------------------------------------- */
/* options */

/* Whether name is in the comma-separated list. */
bool in_list(const char *list, const char *name);
/*
 * Whether every name in the comma-separated list is one of the n cases
 * (name_of(i)); otherwise "prog: unknown case 'x' (see --list)" on stderr.
 */
bool case_list_known(const char *prog, const char *list, const char *(*name_of)(size_t i), size_t n);
/* A decimal number 0..max; otherwise "prog: bad number 's'" on stderr. */
bool parse_num(const char *prog, const char *s, long max, long *out);

#endif
