/* SPDX-License-Identifier: Apache-2.0 */
/* What the hostile-input clients share: see badinput_common.h. */
#include "badinput_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/iscsi_spec.h"

long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------------- */
/* results */

char note[2048];
int passes, failures;
static size_t note_cap = sizeof(note);

void notes_limit(size_t cap)
{
	note_cap = cap && cap < sizeof(note) ? cap : sizeof(note);
}

void notef(const char *fmt, ...)
{
	size_t len = strlen(note);
	va_list ap;

	if (len && len + 2 < note_cap) {
		memcpy(note + len, "; ", 3);
		len += 2;
	}
	if (len >= note_cap - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(note + len, note_cap - len, fmt, ap);
	va_end(ap);
}

void verdict(const char *name, bool ok)
{
	printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name, note[0] ? note : "-");
	fflush(stdout);
	if (ok)
		passes++;
	else
		failures++;
	note[0] = '\0';
}

const char *opname(uint8_t op)
{
	static const char *const names[ISCSI_OPCODE_MASK + 1] = {
		[ISCSI_OP_NOP_IN] = "NOP-In",
		[ISCSI_OP_SCSI_RSP] = "SCSI Response",
		[ISCSI_OP_TASK_MGMT_RSP] = "TMF Response",
		[ISCSI_OP_LOGIN_RSP] = "Login Response",
		[ISCSI_OP_TEXT_RSP] = "Text Response",
		[ISCSI_OP_DATA_IN] = "Data-In",
		[ISCSI_OP_LOGOUT_RSP] = "Logout Response",
		[ISCSI_OP_R2T] = "R2T",
		[ISCSI_OP_ASYNC_MSG] = "Async Message",
		[ISCSI_OP_REJECT] = "Reject",
	};
	const char *n = names[op & ISCSI_OPCODE_MASK];

	return n ? n : "unknown PDU";
}

/* ---------------------------------------------------------------------- */
/* text keys */

void key_add_raw(struct keys *k, const void *p, size_t n)
{
	if (k->len + n <= sizeof(k->buf)) {
		memcpy(k->buf + k->len, p, n);
		k->len += (uint32_t)n;
	}
}

void key_add(struct keys *k, const char *kv)
{
	key_add_raw(k, kv, strlen(kv) + 1);
}

void key_addf(struct keys *k, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	key_add(k, tmp);
}

const char *key_find(const uint8_t *data, uint32_t dlen, const char *key)
{
	size_t kl = strlen(key);

	for (uint32_t i = 0; i < dlen;) {
		const char *s = (const char *)data + i;
		size_t sl = strnlen(s, dlen - i);

		if (sl > kl && strncmp(s, key, kl) == 0 && s[kl] == '=')
			return s + kl + 1;
		i += (uint32_t)sl + 1;
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Basic Header Segments */

uint8_t login_flags(bool transit, int csg, int nsg)
{
	return (uint8_t)((transit ? ISCSI_LOGIN_TRANSIT : 0) | csg << ISCSI_LOGIN_CSG_SHIFT |
			 (transit ? nsg : 0));
}

void bhs_login(uint8_t *b, uint8_t flags, const uint8_t isid[6], uint16_t tsih, uint32_t itt,
	       uint32_t cmd_sn, uint32_t exp_stat_sn)
{
	memset(b, 0, ISCSI_BHS_LEN);
	b[0] = ISCSI_OP_LOGIN_REQ | ISCSI_OP_IMMEDIATE;
	b[1] = flags;
	memcpy(b + 8, isid, 6);
	be16put(b + 14, tsih);
	be32put(b + 16, itt); /* the same ITT for the whole login */
	be32put(b + 24, cmd_sn);
	be32put(b + 28, exp_stat_sn);
}

bool login_transits_to(const uint8_t *bhs, int nsg)
{
	return (bhs[1] & ISCSI_LOGIN_TRANSIT) && (bhs[1] & ISCSI_LOGIN_NSG_MASK) == nsg;
}

int login_rsp_status(const uint8_t *bhs)
{
	if ((bhs[0] & ISCSI_OPCODE_MASK) != ISCSI_OP_LOGIN_RSP)
		return -EPROTO;
	return bhs[36] << 8 | bhs[37];
}

uint16_t login_rsp_tsih(const uint8_t *bhs)
{
	return (uint16_t)(bhs[14] << 8 | bhs[15]);
}

void put_lun(uint8_t *b, unsigned lun)
{
	memset(b + 8, 0, 8);
	if (lun < 256) {
		b[9] = (uint8_t)lun;
	} else { /* flat space addressing */
		b[8] = (uint8_t)(0x40 | ((lun >> 8) & 0x3f));
		b[9] = (uint8_t)lun;
	}
}

void bhs_nop_out(uint8_t *b, uint32_t itt, uint32_t ttt, uint32_t cmd_sn, uint32_t exp_stat_sn)
{
	memset(b, 0, ISCSI_BHS_LEN);
	b[0] = ISCSI_OP_NOP_OUT | ISCSI_OP_IMMEDIATE;
	b[1] = ISCSI_FLAG_FINAL;
	be32put(b + 16, itt);
	be32put(b + 20, ttt);
	be32put(b + 24, cmd_sn);
	be32put(b + 28, exp_stat_sn);
}

void bhs_nop_answer(uint8_t *b, const uint8_t *ping, uint32_t cmd_sn, uint32_t exp_stat_sn)
{
	bhs_nop_out(b, ISCSI_RSVD_TAG, be32get(ping + 20), cmd_sn, exp_stat_sn);
	memcpy(b + 8, ping + 8, 8);
}

void bhs_scsi_cmd(uint8_t *b, unsigned lun, uint32_t itt, uint8_t flags, uint32_t edtl,
		  uint32_t cmd_sn, uint32_t exp_stat_sn, const uint8_t *cdb)
{
	memset(b, 0, ISCSI_BHS_LEN);
	b[0] = ISCSI_OP_SCSI_CMD;
	b[1] = (uint8_t)(ISCSI_FLAG_FINAL | flags | 1 /* simple task attribute */);
	put_lun(b, lun);
	be32put(b + 16, itt);
	be32put(b + 20, edtl);
	be32put(b + 24, cmd_sn);
	be32put(b + 28, exp_stat_sn);
	memcpy(b + 32, cdb, 16);
}

void cdb10(uint8_t *cdb, uint8_t op, uint32_t lba, uint16_t blocks)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	be32put(cdb + 2, lba);
	be16put(cdb + 7, blocks);
}

void pattern(uint8_t *buf, size_t len, uint32_t tag)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(tag * 131 + i * 7 + (i >> 9));
}

/* ---------------------------------------------------------------------- */
/* options */

bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == n && strncmp(p, name, n) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

bool case_list_known(const char *prog, const char *list, const char *(*name_of)(size_t i), size_t n)
{
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		bool known = false;

		for (size_t i = 0; i < n; i++)
			known |= strlen(name_of(i)) == l && strncmp(name_of(i), p, l) == 0;
		if (!known) {
			fprintf(stderr, "%s: unknown case '%.*s' (see --list)\n", prog, (int)l, p);
			return false;
		}
		p = e ? e + 1 : p + l;
	}
	return true;
}

bool parse_num(const char *prog, const char *s, long max, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 0 || v > max) {
		fprintf(stderr, "%s: bad number '%s'\n", prog, s);
		return false;
	}
	*out = v;
	return true;
}
