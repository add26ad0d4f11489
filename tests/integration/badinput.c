/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Malformed and hostile input against a target, over raw TCP (no libiscsi):
 * PDUs are built from gateway/core/iscsi_spec.h.
 *
 *   badinput --addr A --port P --target IQN [--lun N] [--cases LIST]
 *            [--chap-user U --chap-secret S] [--acl-allowed IQN]
 *            [--stall-limit SECONDS] [--nop-limit SECONDS] [--list]
 *
 * Each case runs on a fresh connection/session where it needs one and prints
 * "PASS name: what was received" or "FAIL name: ...". Where the RFC allows
 * more than one answer the line says which one the target gave. Every wait
 * is bounded (5 s per PDU), so a target that hangs fails instead of hanging
 * the test. Exit status: 0 when every selected case passed, 1 otherwise.
 *
 * Cases (default: the ones needing no special target setup):
 *   unknown-opcode, dsl-too-big, ahs-oversized, ahs-truncated, cmdsn-window,
 *   dataout-unknown-itt, login-no-equals, login-binary, login-junk-64k,
 *   login-junk-64k-one-pdu, login-dup-keys, login-stall, write-drop,
 *   digest-crc32c, digest-bad-header, digest-bad-data, digest-header-only,
 *   final-login
 * and, when the target was started for them:
 *   chap-wrong-secret (needs --chap-user/--chap-secret; also checks the
 *   right secret works), acl-forbidden (needs --acl-allowed),
 *   nop-answered, nop-silent (need a target that pings every second and
 *   gives up after a few seconds; --nop-limit bounds the wait for the drop).
 * and on request (tests/integration/taskattr.sh): attr-ordered, attr-mix,
 *   attr-abort, attr-reset, attr-logout, attr-drop (SAM-5 task attributes,
 *   several commands in one TCP write), bidi-out-of-order,
 *   dataout-zero-solicited, dataout-zero-unsolicited, dataout-zero-final,
 *   dataout-zero-unsol-final (Data-Out with DataSegmentLength 0; with F,
 *   ending its sequence short).
 *
 * Digests: the client has its own bitwise CRC32C (RFC 3720 appendix B.4,
 * checked against the RFC's vectors at start-up). On a session that
 * negotiated them, every PDU we send carries them and every PDU the target
 * sends is checked (header digest over BHS + AHS, data digest over data +
 * padding, little-endian on the wire); a wrong one fails the case.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "badinput_common.h"
#include "core/iscsi_spec.h"

#define PDU_TIMEOUT_MS 5000
#define QUIET_MS       2000 /* "silently ignored": nothing within this */
#define MY_MRDSL       262144u

/* ---------------------------------------------------------------------- */
/* configuration and results */

static struct {
	const char *addr;
	int port;
	const char *target;
	unsigned lun;
	const char *chap_user, *chap_secret;
	const char *acl_allowed;
	int stall_limit;
	const char *initiator;
} cfg = {
	.addr = "127.0.0.1", .port = 3260, .stall_limit = 30,
	.initiator = "iqn.2026-11.org.isergw:badinput",
};

static int nop_limit = 15; /* nop-silent: seconds to wait for the drop */
/* the next login offers InitialR2T=No (unsolicited Data-Out), set per case */
static bool login_unsolicited;

/* ---------------------------------------------------------------------- */
/* CRC32C (Castagnoli), bitwise, reflected: RFC 3720 appendix B.4 */

static uint32_t crc32c_update(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
	}
	return crc;
}

static uint32_t crc32c(const void *buf, size_t len)
{
	return crc32c_update(0xffffffffu, buf, len) ^ 0xffffffffu;
}

/* The RFC's vectors: a wrong CRC here would make every digest case meaningless. */
static bool crc32c_selftest(void)
{
	static const uint8_t read10[48] = {
		0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0x14, 0, 0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x18,
		0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0,
	};
	uint8_t zeros[32] = { 0 }, ones[32], inc[32], dec[32];
	for (int i = 0; i < 32; i++) {
		ones[i] = 0xff;
		inc[i] = (uint8_t)i;
		dec[i] = (uint8_t)(31 - i);
	}
	const struct { const void *p; size_t n; uint32_t want; } v[] = {
		{ "123456789", 9, 0xe3069283u },
		{ zeros, 32, 0x8a9136aau },  /* on the wire: aa 36 91 8a */
		{ ones, 32, 0x62a8ab43u },   /* 43 ab a8 62 */
		{ inc, 32, 0x46dd794eu },    /* 4e 79 dd 46 */
		{ dec, 32, 0x113fdb5cu },    /* 5c db 3f 11 */
		{ read10, 48, 0xd9963a56u }, /* 56 3a 96 d9 */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint32_t got = crc32c(v[i].p, v[i].n);
		if (got != v[i].want) {
			fprintf(stderr, "badinput: CRC32C self-test %zu: got 0x%08x, want 0x%08x\n", i,
				got, v[i].want);
			return false;
		}
	}
	return true;
}

static void le32put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t le32get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---------------------------------------------------------------------- */
/* connection and PDU I/O */

struct pdu {
	uint8_t bhs[ISCSI_BHS_LEN];
	uint8_t *data; /* NUL-terminated copy of the data segment */
	uint32_t dlen;
};

struct conn {
	int fd;
	uint32_t cmd_sn, exp_stat_sn, max_cmd_sn, itt;
	uint32_t tgt_mrdsl, first_burst, max_burst;
	bool immediate_data, initial_r2t;
	uint16_t tsih;
	uint8_t isid[6];
	/* digests: wanted at login, agreed by the target, in use (FFP) */
	bool want_hd, want_dd;
	char agreed_hd[32], agreed_dd[32];
	bool hd, dd;
	bool corrupt_hd, corrupt_dd;  /* one shot: send the next digest wrong */
	unsigned hd_ok, dd_ok;        /* digests of target PDUs verified */
	uint32_t my_mrdsl;            /* declared MaxRecvDataSegmentLength */
	uint32_t dout_max;            /* split Data-Out PDUs at this size (0: none) */
	unsigned imm_bytes, r2ts, data_outs, data_ins; /* what scsi_exec() did */
	/* NOP-In pings from the target */
	bool ignore_pings;            /* do not answer them */
	unsigned pings, pings_answered, pings_unsolicited;
	long long first_ping_ms;
};

static void pdu_free(struct pdu *p)
{
	free(p->data);
	p->data = NULL;
	p->dlen = 0;
}

static uint8_t pdu_op(const struct pdu *p) { return p->bhs[0] & ISCSI_OPCODE_MASK; }
static uint8_t pdu_op_raw(const uint8_t *bhs) { return bhs[0] & ISCSI_OPCODE_MASK; }

static int conn_open(struct conn *c)
{
	static unsigned sessions;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)cfg.port) };
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (inet_pton(AF_INET, cfg.addr, &sa.sin_addr) != 1)
		return -EINVAL;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	c->fd = fd;
	c->itt = 0x1000;
	c->tgt_mrdsl = 8192; /* RFC default until negotiated */
	c->first_burst = 65536;
	c->max_burst = 262144;
	c->my_mrdsl = MY_MRDSL;
	unsigned s = ++sessions;
	c->isid[0] = 0x80; /* random format */
	c->isid[1] = (uint8_t)(getpid() >> 8);
	c->isid[2] = (uint8_t)getpid();
	c->isid[3] = (uint8_t)(s >> 16);
	c->isid[4] = (uint8_t)(s >> 8);
	c->isid[5] = (uint8_t)s;
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int send_all(struct conn *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Send BHS + data (padded); data_seg_len is set from dlen unless keep_dsl.
 * With digests in use, the header digest follows the BHS and the data digest
 * (over data + padding) the padding; corrupt_hd/corrupt_dd flip one bit of
 * the next one sent.
 */
static int send_pdu(struct conn *c, uint8_t *bhs, const void *data, uint32_t dlen, bool keep_dsl)
{
	static const uint8_t pad[4];
	uint8_t dig[4];
	uint32_t npad = (4 - (dlen & 3)) & 3;
	if (!keep_dsl)
		be24put(bhs + 5, dlen);
	int rc = send_all(c, bhs, ISCSI_BHS_LEN);
	if (rc == 0 && c->hd) {
		uint32_t d = crc32c(bhs, ISCSI_BHS_LEN);
		if (c->corrupt_hd) {
			d ^= 0x00010000u;
			c->corrupt_hd = false;
		}
		le32put(dig, d);
		rc = send_all(c, dig, 4);
	}
	if (rc == 0 && dlen)
		rc = send_all(c, data, dlen);
	if (rc == 0 && npad)
		rc = send_all(c, pad, npad);
	if (rc == 0 && dlen && c->dd) {
		uint32_t d = crc32c_update(crc32c_update(0xffffffffu, data, dlen), pad, npad) ^ 0xffffffffu;
		if (c->corrupt_dd) {
			d ^= 0x80u;
			c->corrupt_dd = false;
		}
		le32put(dig, d);
		rc = send_all(c, dig, 4);
	}
	return rc;
}

/* 0, -ETIMEDOUT, or -ECONNRESET for EOF/reset. */
static int recv_exact(struct conn *c, void *buf, size_t len, long long deadline)
{
	uint8_t *p = buf;
	while (len) {
		long long left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		int pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			return -ETIMEDOUT;
		ssize_t n = recv(c->fd, p, len, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -ECONNRESET;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void track_sn(struct conn *c, const struct pdu *p)
{
	uint8_t op = pdu_op(p);
	uint32_t stat_sn = be32get(p->bhs + 24);
	uint32_t exp = be32get(p->bhs + 28), max = be32get(p->bhs + 32);
	bool has_status = true;
	if (op == ISCSI_OP_R2T || op == ISCSI_OP_ASYNC_MSG ||
	    (op == ISCSI_OP_DATA_IN && !(p->bhs[1] & ISCSI_DATAIN_STATUS)) ||
	    (op == ISCSI_OP_NOP_IN && be32get(p->bhs + 16) == ISCSI_RSVD_TAG))
		has_status = false;
	if (op == ISCSI_OP_DATA_IN && !(p->bhs[1] & ISCSI_DATAIN_STATUS))
		return; /* StatSN reserved */
	if (has_status && !sn_gt(c->exp_stat_sn, stat_sn))
		c->exp_stat_sn = stat_sn + 1;
	if (op == ISCSI_OP_LOGIN_RSP && p->bhs[36] != 0)
		return;
	if (sn_gt(exp, c->cmd_sn))
		c->cmd_sn = exp;
	c->max_cmd_sn = max;
}

static void answer_ping(struct conn *c, const struct pdu *p)
{
	uint8_t b[ISCSI_BHS_LEN];
	bhs_nop_answer(b, p->bhs, c->cmd_sn, c->exp_stat_sn);
	send_pdu(c, b, NULL, 0, false);
}

/*
 * Receive one PDU within timeout_ms. Target NOP-In pings are answered
 * (unless ignore_pings) and async messages skipped. With digests in use,
 * both are checked. Returns 0, -ETIMEDOUT, -ECONNRESET, or -EBADMSG for a
 * wrong digest from the target (described in the note).
 */
static int recv_pdu(struct conn *c, struct pdu *p, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	for (;;) {
		memset(p, 0, sizeof(*p));
		int rc = recv_exact(c, p->bhs, ISCSI_BHS_LEN, deadline);
		if (rc)
			return rc;
		uint32_t ahs = p->bhs[4] * 4u, dlen = be24get(p->bhs + 5);
		uint32_t padded = (dlen + 3) & ~3u;
		uint32_t hdl = c->hd ? 4u : 0u, ddl = c->dd && dlen ? 4u : 0u;
		size_t rest = (size_t)ahs + hdl + padded + ddl;
		uint8_t *raw = calloc(1, ISCSI_BHS_LEN + rest + 1);
		if (raw == NULL)
			return -ENOMEM;
		memcpy(raw, p->bhs, ISCSI_BHS_LEN);
		rc = recv_exact(c, raw + ISCSI_BHS_LEN, rest, deadline);
		if (rc) {
			free(raw);
			return rc;
		}
		uint8_t op = pdu_op(p);
		if (c->hd) {
			uint32_t want = crc32c(raw, ISCSI_BHS_LEN + ahs);
			uint32_t got = le32get(raw + ISCSI_BHS_LEN + ahs);
			if (got != want) {
				notef("%s (opcode 0x%02x) with a wrong header digest 0x%08x (want 0x%08x)",
				      opname(op), op, got, want);
				free(raw);
				return -EBADMSG;
			}
			c->hd_ok++;
		}
		const uint8_t *dp = raw + ISCSI_BHS_LEN + ahs + hdl;
		if (ddl) {
			uint32_t want = crc32c(dp, padded), got = le32get(dp + padded);
			if (got != want) {
				notef("%s (opcode 0x%02x) with a wrong data digest 0x%08x (want 0x%08x)",
				      opname(op), op, got, want);
				free(raw);
				return -EBADMSG;
			}
			c->dd_ok++;
		}
		p->data = calloc(1, (size_t)padded + 1);
		if (p->data == NULL) {
			free(raw);
			return -ENOMEM;
		}
		memcpy(p->data, dp, padded);
		free(raw);
		p->data[dlen] = '\0';
		p->dlen = dlen;
		track_sn(c, p);
		if (op == ISCSI_OP_NOP_IN && be32get(p->bhs + 16) == ISCSI_RSVD_TAG) {
			if (be32get(p->bhs + 20) != ISCSI_RSVD_TAG) {
				c->pings++;
				if (!c->first_ping_ms)
					c->first_ping_ms = now_ms();
				if (!c->ignore_pings) {
					answer_ping(c, p);
					c->pings_answered++;
				}
			} else
				c->pings_unsolicited++;
			pdu_free(p);
			continue;
		}
		if (op == ISCSI_OP_ASYNC_MSG) {
			notef("async event %u", p->bhs[36]);
			pdu_free(p);
			continue;
		}
		return 0;
	}
}

static void describe(const struct pdu *p)
{
	uint8_t op = pdu_op(p);
	switch (op) {
	case ISCSI_OP_REJECT: notef("Reject reason 0x%02x", p->bhs[2]); break;
	case ISCSI_OP_LOGIN_RSP: notef("Login Response status %02x/%02x", p->bhs[36], p->bhs[37]); break;
	case ISCSI_OP_SCSI_RSP: notef("SCSI Response status 0x%02x", p->bhs[3]); break;
	default: notef("%s (opcode 0x%02x)", opname(op), op); break;
	}
}

static void describe_err(int rc)
{
	if (rc == -EBADMSG)
		return; /* the digest error is already in the note */
	notef("%s", rc == -ETIMEDOUT ? "nothing within the timeout" :
		    rc == -ECONNRESET ? "connection closed by the target" : strerror(-rc));
}

/* ---------------------------------------------------------------------- */
/* text keys */

static const char *key_get(const struct pdu *p, const char *key)
{
	return key_find(p->data, p->dlen, key);
}

/* ---------------------------------------------------------------------- */
/* login */

static int send_login(struct conn *c, uint8_t flags, const void *data, uint32_t dlen)
{
	uint8_t b[ISCSI_BHS_LEN];
	bhs_login(b, flags, c->isid, c->tsih, c->itt, c->cmd_sn, c->exp_stat_sn);
	return send_pdu(c, b, data, dlen, false);
}

/*
 * One login exchange. Returns 0 with *rsp filled on status 00/00, a positive
 * (class << 8 | detail) on a rejected login (note filled), or a negative
 * errno when the target dropped or did not answer.
 */
static int login_step(struct conn *c, uint8_t flags, const struct keys *k, struct pdu *rsp)
{
	int rc = send_login(c, flags, k ? k->buf : NULL, k ? (uint32_t)k->len : 0);
	if (rc)
		return rc;
	rc = recv_pdu(c, rsp, PDU_TIMEOUT_MS);
	if (rc)
		return rc;
	rc = login_rsp_status(rsp->bhs);
	if (rc) {
		describe(rsp);
		pdu_free(rsp);
		return rc;
	}
	c->tsih = login_rsp_tsih(rsp->bhs);
	return 0;
}

static int parse_hex(const char *s, uint8_t *out, size_t max)
{
	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return -1;
	s += 2;
	size_t n = strlen(s);
	if (n % 2 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return (int)(n / 2);
}

static void initial_keys(struct keys *k, const char *initiator)
{
	key_addf(k, "InitiatorName=%s", initiator);
	key_add(k, "SessionType=Normal");
	key_addf(k, "TargetName=%s", cfg.target);
}

/* Security stage with CHAP (RFC 7143 12.1.3), MD5 only. */
static int login_chap(struct conn *c, const char *initiator, const char *user, const char *secret)
{
	struct keys k = { .len = 0 };
	struct pdu rsp;
	initial_keys(&k, initiator);
	key_add(&k, "AuthMethod=CHAP,None");
	int rc = login_step(c, login_flags(false, ISCSI_STAGE_SECURITY, 0), &k, &rsp);
	if (rc)
		return rc;
	const char *am = key_get(&rsp, "AuthMethod");
	if (am == NULL || strcmp(am, "CHAP") != 0) {
		notef("target chose AuthMethod=%s, not CHAP", am ? am : "(none)");
		pdu_free(&rsp);
		return -EPROTO;
	}
	pdu_free(&rsp);
	k.len = 0;
	key_add(&k, "CHAP_A=5");
	rc = login_step(c, login_flags(false, ISCSI_STAGE_SECURITY, 0), &k, &rsp);
	if (rc)
		return rc;
	const char *id = key_get(&rsp, "CHAP_I"), *chal = key_get(&rsp, "CHAP_C");
	uint8_t cbin[1024], md[EVP_MAX_MD_SIZE];
	int clen = chal ? parse_hex(chal, cbin, sizeof(cbin)) : -1;
	if (id == NULL || clen < 0) {
		notef("no usable CHAP_I/CHAP_C from the target");
		pdu_free(&rsp);
		return -EPROTO;
	}
	uint8_t idb = (uint8_t)strtoul(id, NULL, 0);
	pdu_free(&rsp);
	unsigned mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx == NULL || !EVP_DigestInit_ex(ctx, EVP_md5(), NULL) ||
	    !EVP_DigestUpdate(ctx, &idb, 1) || !EVP_DigestUpdate(ctx, secret, strlen(secret)) ||
	    !EVP_DigestUpdate(ctx, cbin, (size_t)clen) || !EVP_DigestFinal_ex(ctx, md, &mdlen)) {
		EVP_MD_CTX_free(ctx);
		return -EIO;
	}
	EVP_MD_CTX_free(ctx);
	char hex[2 * EVP_MAX_MD_SIZE + 3] = "0x";
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(hex + 2 + 2 * i, 3, "%02x", md[i]);
	k.len = 0;
	key_addf(&k, "CHAP_N=%s", user);
	key_addf(&k, "CHAP_R=%s", hex);
	rc = login_step(c, login_flags(true, ISCSI_STAGE_SECURITY, ISCSI_STAGE_OPERATIONAL), &k, &rsp);
	if (rc)
		return rc;
	pdu_free(&rsp);
	return 0;
}

static void parse_op_keys(struct conn *c, const struct pdu *rsp)
{
	const char *v;
	if ((v = key_get(rsp, "MaxRecvDataSegmentLength")))
		c->tgt_mrdsl = (uint32_t)strtoul(v, NULL, 10);
	if ((v = key_get(rsp, "FirstBurstLength")))
		c->first_burst = (uint32_t)strtoul(v, NULL, 10);
	if ((v = key_get(rsp, "MaxBurstLength")))
		c->max_burst = (uint32_t)strtoul(v, NULL, 10);
	if ((v = key_get(rsp, "ImmediateData")))
		c->immediate_data = strcmp(v, "Yes") == 0;
	if ((v = key_get(rsp, "InitialR2T")))
		c->initial_r2t = strcmp(v, "Yes") == 0;
	if ((v = key_get(rsp, "HeaderDigest")))
		snprintf(c->agreed_hd, sizeof(c->agreed_hd), "%s", v);
	if ((v = key_get(rsp, "DataDigest")))
		snprintf(c->agreed_dd, sizeof(c->agreed_dd), "%s", v);
}

/*
 * Login Requests with T set from stage csg to nsg, the keys k in the first
 * and none after, until the target transits too (at most 4 more); the
 * operational keys of each Login Response are taken.
 */
static int login_stage(struct conn *c, int csg, int nsg, const struct keys *k, struct pdu *rsp)
{
	uint8_t fl = login_flags(true, csg, nsg);
	int rc = login_step(c, fl, k, rsp);
	for (int i = 0; rc == 0 && !login_transits_to(rsp->bhs, nsg) && i < 4; i++) {
		if (csg == ISCSI_STAGE_OPERATIONAL)
			parse_op_keys(c, rsp);
		pdu_free(rsp);
		rc = login_step(c, fl, NULL, rsp);
	}
	return rc;
}

/* A full normal-session login; CHAP when user is set. See login_step(). */
static int login_full(struct conn *c, const char *initiator, const char *user, const char *secret)
{
	struct pdu rsp;
	int rc;
	c->immediate_data = true;
	c->initial_r2t = true;
	if (user) {
		rc = login_chap(c, initiator, user, secret);
		if (rc)
			return rc;
	} else {
		struct keys k = { .len = 0 };
		initial_keys(&k, initiator);
		key_add(&k, "AuthMethod=None");
		rc = login_stage(c, ISCSI_STAGE_SECURITY, ISCSI_STAGE_OPERATIONAL, &k, &rsp);
		if (rc)
			return rc;
		pdu_free(&rsp);
	}
	struct keys k = { .len = 0 };
	key_addf(&k, "HeaderDigest=%s", c->want_hd ? "CRC32C" : "None");
	key_addf(&k, "DataDigest=%s", c->want_dd ? "CRC32C" : "None");
	key_addf(&k, "MaxRecvDataSegmentLength=%u", c->my_mrdsl);
	key_addf(&k, "InitialR2T=%s", login_unsolicited ? "No" : "Yes");
	key_add(&k, "ImmediateData=Yes");
	key_add(&k, "FirstBurstLength=65536");
	key_add(&k, "MaxBurstLength=262144");
	key_add(&k, "MaxOutstandingR2T=1");
	key_add(&k, "MaxConnections=1");
	key_add(&k, "DataPDUInOrder=Yes");
	key_add(&k, "DataSequenceInOrder=Yes");
	key_add(&k, "ErrorRecoveryLevel=0");
	key_add(&k, "DefaultTime2Wait=0");
	key_add(&k, "DefaultTime2Retain=0");
	rc = login_stage(c, ISCSI_STAGE_OPERATIONAL, ISCSI_STAGE_FULL_FEATURE, &k, &rsp);
	if (rc)
		return rc;
	parse_op_keys(c, &rsp);
	if (!login_transits_to(rsp.bhs, ISCSI_STAGE_FULL_FEATURE)) {
		notef("target never moved to full feature phase");
		rc = -EPROTO;
	}
	pdu_free(&rsp);
	/* digests start with the first PDU after the final Login Response */
	if (rc == 0 && (c->want_hd || c->want_dd)) {
		bool hd_ok = !c->want_hd || strcmp(c->agreed_hd, "CRC32C") == 0;
		bool dd_ok = !c->want_dd || strcmp(c->agreed_dd, "CRC32C") == 0;
		if (!hd_ok || !dd_ok) {
			notef("asked HeaderDigest=%s DataDigest=%s, target answered HeaderDigest=%s "
			      "DataDigest=%s", c->want_hd ? "CRC32C" : "None",
			      c->want_dd ? "CRC32C" : "None", c->agreed_hd[0] ? c->agreed_hd : "(nothing)",
			      c->agreed_dd[0] ? c->agreed_dd : "(nothing)");
			return -EPROTO;
		}
		c->hd = c->want_hd;
		c->dd = c->want_dd;
	}
	return rc;
}

static int scsi_exec(struct conn *c, const uint8_t *cdb, bool write, uint8_t *buf, uint32_t len);

/* session_open() with digests wanted (hd/dd), our MaxRecvDataSegmentLength */
static int session_open_ex(struct conn *c, bool hd, bool dd, uint32_t mrdsl);

static int session_open(struct conn *c)
{
	return session_open_ex(c, false, false, MY_MRDSL);
}

static int session_open_ex(struct conn *c, bool hd, bool dd, uint32_t mrdsl)
{
	int rc = conn_open(c);
	if (rc) {
		notef("connect: %s", strerror(-rc));
		return rc;
	}
	c->want_hd = hd;
	c->want_dd = dd;
	c->my_mrdsl = mrdsl;
	rc = login_full(c, cfg.initiator, cfg.chap_user, cfg.chap_secret);
	if (rc) {
		if (rc < 0)
			describe_err(rc);
		notef("login failed");
		conn_close(c);
		return rc;
	}
	/* consume the unit attentions a new I_T nexus starts with */
	uint8_t tur[16] = { 0 };
	for (int i = 0; i < 4; i++) {
		rc = scsi_exec(c, tur, false, NULL, 0);
		if (rc <= 0)
			break;
	}
	if (rc) {
		notef("TEST UNIT READY after login: %s", rc > 0 ? "never GOOD" : "no answer");
		conn_close(c);
		return rc < 0 ? rc : -EIO;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* full feature phase */

/*
 * NOP-Out (immediate) with data; 0 when the matching NOP-In came back and,
 * with echo, carried the same data (odd lengths exercise padding).
 */
static int nop_exchange(struct conn *c, const char *data, bool echo)
{
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t itt = ++c->itt, len = (uint32_t)strlen(data);
	bhs_nop_out(b, itt, ISCSI_RSVD_TAG, c->cmd_sn, c->exp_stat_sn);
	int rc = send_pdu(c, b, data, len, false);
	if (rc)
		return rc;
	for (;;) {
		struct pdu p;
		rc = recv_pdu(c, &p, PDU_TIMEOUT_MS);
		if (rc)
			return rc;
		if (pdu_op(&p) == ISCSI_OP_NOP_IN && be32get(p.bhs + 16) == itt) {
			bool same = !echo || (p.dlen == len && memcmp(p.data, data, len) == 0);
			if (!same)
				notef("NOP-In echoed %u bytes \"%.*s\" instead of \"%s\"", p.dlen,
				      (int)strnlen((char *)p.data, 40), (char *)p.data, data);
			pdu_free(&p);
			return same ? 0 : -EPROTO;
		}
		notef("unexpected");
		describe(&p);
		pdu_free(&p);
	}
}

/* NOP-Out ping; 0 when the matching NOP-In came back. */
static int ping(struct conn *c)
{
	return nop_exchange(c, "ping", false);
}

/* NOP-Out with data: the NOP-In must echo it. */
static int ping_data(struct conn *c, const char *data)
{
	return nop_exchange(c, data, true);
}

static void ping_check(struct conn *c, bool *ok)
{
	int rc = ping(c);
	if (rc == 0)
		notef("NOP-Out answered afterwards");
	else {
		notef("NOP-Out not answered afterwards:");
		describe_err(rc);
		*ok = false;
	}
}

/* A SCSI Command BHS for itt at the current CmdSN (not advanced). */
static void build_cmd(struct conn *c, uint8_t *b, uint32_t itt, uint8_t flags, uint32_t xfer,
		      const uint8_t *cdb)
{
	bhs_scsi_cmd(b, cfg.lun, itt, flags, xfer, c->cmd_sn, c->exp_stat_sn, cdb);
}

/* What came back first after a hostile PDU. */
enum answer { ANSWER_PDU, ANSWER_DROP, ANSWER_NONE };

/*
 * Note the first answer, rc and p as exchange() left them: a drop (the
 * connection closed, or with send_drop EPIPE while sending) noted as
 * dropped, another error described, a PDU described and left to the caller.
 */
static enum answer first_answer(int rc, bool send_drop, const char *dropped, const struct pdu *p)
{
	if (rc == -ECONNRESET || (send_drop && rc == -EPIPE)) {
		notef("%s", dropped);
		return ANSWER_DROP;
	}
	if (rc) {
		describe_err(rc);
		return ANSWER_NONE;
	}
	describe(p);
	return ANSWER_PDU;
}

/* Send a PDU and receive the first one back within timeout_ms. */
static int exchange(struct conn *c, uint8_t *bhs, const void *data, uint32_t dlen, int timeout_ms,
		    struct pdu *p)
{
	int rc = send_pdu(c, bhs, data, dlen, false);
	return rc ? rc : recv_pdu(c, p, timeout_ms);
}

/*
 * Run a SCSI command to completion: immediate data, R2T/Data-Out, Data-In.
 * Returns the SCSI status (>= 0) or a negative errno: -EPROTO when another
 * PDU (e.g. a Reject) ended it, which is then described in the note.
 */
static int scsi_exec(struct conn *c, const uint8_t *cdb, bool write, uint8_t *buf, uint32_t len)
{
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t itt = ++c->itt, imm = 0;
	if (write && c->immediate_data)
		imm = len < c->first_burst ? len : c->first_burst;
	if (imm > c->tgt_mrdsl)
		imm = c->tgt_mrdsl;
	build_cmd(c, b, itt, len ? (write ? ISCSI_CMD_WRITE : ISCSI_CMD_READ) : 0, len, cdb);
	c->cmd_sn++;
	c->imm_bytes += imm;
	int rc = send_pdu(c, b, buf, imm, false);
	if (rc)
		return rc;
	for (;;) {
		struct pdu p;
		rc = recv_pdu(c, &p, PDU_TIMEOUT_MS);
		if (rc)
			return rc;
		uint8_t op = pdu_op(&p);
		if (op == ISCSI_OP_DATA_IN && be32get(p.bhs + 16) == itt && !write) {
			uint32_t off = be32get(p.bhs + 40);
			c->data_ins++;
			if (off <= len && p.dlen <= len - off)
				memcpy(buf + off, p.data, p.dlen);
			if (p.bhs[1] & ISCSI_DATAIN_STATUS) {
				rc = p.bhs[3];
				pdu_free(&p);
				return rc;
			}
		} else if (op == ISCSI_OP_R2T && be32get(p.bhs + 16) == itt && write) {
			uint32_t ttt = be32get(p.bhs + 20), off = be32get(p.bhs + 40);
			uint32_t want = be32get(p.bhs + 44), dsn = 0;
			c->r2ts++;
			uint32_t maxn = c->dout_max && c->dout_max < c->tgt_mrdsl ? c->dout_max : c->tgt_mrdsl;
			while (want && off < len) {
				uint32_t n = want < maxn ? want : maxn;
				if (n > len - off)
					n = len - off;
				uint8_t d[ISCSI_BHS_LEN] = { 0 };
				d[0] = ISCSI_OP_DATA_OUT;
				d[1] = n == want ? ISCSI_FLAG_FINAL : 0;
				put_lun(d, cfg.lun);
				be32put(d + 16, itt);
				be32put(d + 20, ttt);
				be32put(d + 28, c->exp_stat_sn);
				be32put(d + 36, dsn++);
				be32put(d + 40, off);
				c->data_outs++;
				rc = send_pdu(c, d, buf + off, n, false);
				if (rc) {
					pdu_free(&p);
					return rc;
				}
				off += n;
				want -= n;
			}
		} else if (op == ISCSI_OP_SCSI_RSP && be32get(p.bhs + 16) == itt) {
			rc = p.bhs[2] ? -EIO : p.bhs[3];
			if (p.bhs[2])
				notef("SCSI Response with iSCSI response 0x%02x", p.bhs[2]);
			pdu_free(&p);
			return rc;
		} else {
			describe(&p);
			pdu_free(&p);
			return -EPROTO;
		}
		pdu_free(&p);
	}
}

/* A READ of block 0..7 works on a fresh session: the "target still serves" probe. */
static bool serves_fresh_session(void)
{
	struct conn c;
	uint8_t cdb[16], buf[4096];
	if (session_open(&c))
		return false;
	cdb10(cdb, 0x28, 0, 8);
	int rc = scsi_exec(&c, cdb, false, buf, sizeof(buf));
	conn_close(&c);
	if (rc != 0) {
		notef("READ(10) on a fresh session: %s", rc > 0 ? "non-GOOD status" : "no answer");
		return false;
	}
	notef("a fresh session logs in and READs");
	return true;
}

/* ---------------------------------------------------------------------- */
/* cases */

/*
 * Cases on a session of their own get it logged in (session_open_ex()) and
 * closed by run_case(); they return the verdict.
 */

static bool case_unknown_opcode(struct conn *c)
{
	bool ok = false;
	uint8_t b[ISCSI_BHS_LEN] = { 0 };
	b[0] = 0x1f | ISCSI_OP_IMMEDIATE; /* no such initiator opcode */
	b[1] = ISCSI_FLAG_FINAL;
	be32put(b + 16, ++c->itt);
	be32put(b + 24, c->cmd_sn);
	be32put(b + 28, c->exp_stat_sn);
	struct pdu p;
	int rc = exchange(c, b, NULL, 0, PDU_TIMEOUT_MS, &p);
	if (rc)
		describe_err(rc);
	else {
		describe(&p);
		ok = pdu_op(&p) == ISCSI_OP_REJECT &&
		     (p.bhs[2] == ISCSI_REJECT_CMD_NOT_SUPPORTED || p.bhs[2] == ISCSI_REJECT_PROTOCOL_ERROR);
		if (ok && p.bhs[2] == ISCSI_REJECT_PROTOCOL_ERROR)
			notef("(RFC 7143 prefers 0x05 Command not supported)");
		if (ok && p.dlen >= ISCSI_BHS_LEN && p.data[0] != b[0])
			notef("(rejected header does not echo ours)");
		pdu_free(&p);
		ping_check(c, &ok);
	}
	return ok;
}

static bool case_dsl_too_big(struct conn *c)
{
	bool ok = false;
	uint32_t dlen = c->tgt_mrdsl + 4096;
	uint8_t *data = calloc(1, dlen);
	uint8_t b[ISCSI_BHS_LEN];
	bhs_nop_out(b, ++c->itt, ISCSI_RSVD_TAG, c->cmd_sn, c->exp_stat_sn);
	notef("NOP-Out with %u data bytes, target MaxRecvDataSegmentLength %u:", dlen, c->tgt_mrdsl);
	struct pdu p;
	int rc = data ? exchange(c, b, data, dlen, PDU_TIMEOUT_MS, &p) : -ENOMEM;
	enum answer a = first_answer(rc, true, "connection dropped (allowed: protocol error)", &p);
	ok = a == ANSWER_DROP;
	if (a == ANSWER_PDU) {
		bool rej = pdu_op(&p) == ISCSI_OP_REJECT && p.bhs[2] == ISCSI_REJECT_PROTOCOL_ERROR;
		pdu_free(&p);
		if (rej) {
			/* after the Reject the target may close, or must still work */
			int r2 = recv_pdu(c, &p, QUIET_MS);
			if (r2 == -ECONNRESET) {
				notef("then dropped the connection");
				ok = true;
			} else if (r2 == -ETIMEDOUT) {
				ok = true;
				ping_check(c, &ok);
			} else if (r2 == 0) {
				describe(&p);
				pdu_free(&p);
			}
		} else
			notef("(expected Reject 0x04 or a drop)");
	}
	free(data);
	return ok;
}

/* TotalAHSLength of 255 words, all sent, with an AHS of an undefined type. */
static bool case_ahs_oversized(struct conn *c)
{
	bool ok = false;
	uint8_t pkt[ISCSI_BHS_LEN + ISCSI_MAX_AHS_LEN] = { 0 }, cdb[16] = { 0 };
	build_cmd(c, pkt, ++c->itt, 0, 0, cdb); /* TEST UNIT READY */
	c->cmd_sn++;
	pkt[4] = 255;
	be16put(pkt + ISCSI_BHS_LEN, ISCSI_MAX_AHS_LEN - 3); /* AHSLength */
	pkt[ISCSI_BHS_LEN + 2] = 0x3e;                        /* AHSType: undefined */
	memset(pkt + ISCSI_BHS_LEN + 4, 0xa5, ISCSI_MAX_AHS_LEN - 4);
	struct pdu p;
	int rc = send_all(c, pkt, sizeof(pkt));
	if (rc == 0)
		rc = recv_pdu(c, &p, PDU_TIMEOUT_MS);
	enum answer a = first_answer(rc, false, "connection dropped", &p);
	ok = a == ANSWER_DROP;
	if (a == ANSWER_PDU) {
		uint8_t op = pdu_op(&p);
		ok = op == ISCSI_OP_REJECT || (op == ISCSI_OP_SCSI_RSP && (p.bhs[2] != 0 || p.bhs[3] != 0));
		if (op == ISCSI_OP_SCSI_RSP && p.bhs[2] == 0 && p.bhs[3] == 0)
			notef("(GOOD: the bogus AHS was ignored)");
		pdu_free(&p);
		if (ok) {
			int r2 = recv_pdu(c, &p, 500);
			if (r2 == -ECONNRESET)
				notef("then dropped the connection");
			else {
				if (r2 == 0)
					pdu_free(&p);
				ping_check(c, &ok);
			}
		}
	}
	return ok;
}

/* TotalAHSLength says 1020 bytes, 8 arrive, then the initiator half-closes. */
static bool case_ahs_truncated(struct conn *c)
{
	bool ok = false;
	uint8_t pkt[ISCSI_BHS_LEN + 8] = { 0 }, cdb[16] = { 0 };
	build_cmd(c, pkt, ++c->itt, 0, 0, cdb);
	pkt[4] = 255;
	be16put(pkt + ISCSI_BHS_LEN, 5);
	pkt[ISCSI_BHS_LEN + 2] = ISCSI_AHS_EXTENDED_CDB;
	struct pdu p;
	int rc = send_all(c, pkt, sizeof(pkt));
	if (rc == 0) {
		shutdown(c->fd, SHUT_WR);
		rc = recv_pdu(c, &p, PDU_TIMEOUT_MS);
	}
	enum answer a = first_answer(rc, false, "connection closed after the truncated PDU", &p);
	ok = a == ANSWER_DROP;
	if (a == ANSWER_NONE)
		notef("(the target holds a half-closed connection)");
	else if (a == ANSWER_PDU) {
		ok = pdu_op(&p) == ISCSI_OP_REJECT;
		pdu_free(&p);
	}
	return ok;
}

static bool case_cmdsn_window(struct conn *c)
{
	bool ok = false;
	uint8_t a[512], bpat[512], got[512], cdb[16];
	const uint32_t lba = 7;
	pattern(a, sizeof(a), 1);
	pattern(bpat, sizeof(bpat), 2);
	cdb10(cdb, 0x2a, lba, 1);
	int rc = scsi_exec(c, cdb, true, a, sizeof(a));
	if (rc != 0) {
		notef("setup WRITE(10) failed (%d)", rc);
		return false;
	}
	/* the same write of another pattern, CmdSN far outside the window */
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t bad_sn = c->cmd_sn + 0x40000000u;
	uint32_t itt = ++c->itt;
	build_cmd(c, b, itt, ISCSI_CMD_WRITE, sizeof(bpat), cdb);
	be32put(b + 24, bad_sn);
	notef("WRITE with CmdSN %u (window %u..%u):", bad_sn, c->cmd_sn, c->max_cmd_sn);
	struct pdu p;
	rc = exchange(c, b, bpat, c->immediate_data ? sizeof(bpat) : 0, QUIET_MS, &p);
	if (rc == -ETIMEDOUT) {
		notef("silently ignored");
		ok = true;
	} else if (rc == 0) {
		describe(&p);
		ok = pdu_op(&p) == ISCSI_OP_REJECT;
		if (ok)
			notef("(RFC 7143 4.2.2.1: should be silently ignored)");
		pdu_free(&p);
	} else
		describe_err(rc);
	if (rc == -ECONNRESET)
		return ok;
	cdb10(cdb, 0x28, lba, 1);
	rc = scsi_exec(c, cdb, false, got, sizeof(got));
	if (rc != 0) {
		notef("READ(10) afterwards failed (%d)", rc);
		ok = false;
	} else if (memcmp(got, a, sizeof(a)) != 0) {
		notef("the out-of-window WRITE was executed");
		ok = false;
	} else
		notef("not executed, READ(10) in the window works");
	return ok;
}


/*
 * ABORT TASK for a command whose status already arrived: RFC 7143 11.5.1 and
 * libiscsi's AbortTaskSimpleAsync expect "Task does not exist" (a Function
 * complete would claim it was aborted after it had succeeded).
 */
static bool case_abort_completed(struct conn *c)
{
	uint8_t cdb[16] = { 0 }, b[ISCSI_BHS_LEN];
	int rc = scsi_exec(c, cdb, false, NULL, 0); /* TEST UNIT READY */
	uint32_t done_itt = c->itt, done_sn = c->cmd_sn - 1;
	struct pdu p;

	if (rc != 0) {
		notef("setup TEST UNIT READY failed (%d)", rc);
		return false;
	}
	memset(b, 0, sizeof(b));
	b[0] = ISCSI_OP_TASK_MGMT_REQ | ISCSI_OP_IMMEDIATE;
	b[1] = 0x80 | ISCSI_TMF_ABORT_TASK;
	put_lun(b, cfg.lun);
	be32put(b + 16, ++c->itt);
	be32put(b + 20, done_itt);
	be32put(b + 24, c->cmd_sn);
	be32put(b + 28, c->exp_stat_sn);
	be32put(b + 32, done_sn);
	rc = exchange(c, b, NULL, 0, 5000, &p);
	if (rc != 0) {
		describe_err(rc);
		return false;
	}
	describe(&p);
	bool ok = pdu_op(&p) == ISCSI_OP_TASK_MGMT_RSP && p.bhs[2] == ISCSI_TMF_RSP_NO_TASK;
	notef("ABORT TASK of the completed TUR: response %u (want 1, task does not exist)", p.bhs[2]);
	pdu_free(&p);
	return ok;
}

static bool case_dataout_unknown(struct conn *c)
{
	bool ok = false;
	uint8_t d[ISCSI_BHS_LEN] = { 0 }, data[512] = { 0 };
	d[0] = ISCSI_OP_DATA_OUT;
	d[1] = ISCSI_FLAG_FINAL;
	put_lun(d, cfg.lun);
	be32put(d + 16, 0x7654321u);
	be32put(d + 20, 0x1234567u);
	be32put(d + 28, c->exp_stat_sn);
	struct pdu p;
	int rc = exchange(c, d, data, sizeof(data), QUIET_MS, &p);
	if (rc == -ETIMEDOUT) {
		notef("ignored");
		ok = true;
	} else if (rc == 0) {
		describe(&p);
		ok = pdu_op(&p) == ISCSI_OP_REJECT &&
		     (p.bhs[2] == ISCSI_REJECT_INVALID_PDU_FIELD || p.bhs[2] == ISCSI_REJECT_PROTOCOL_ERROR);
		pdu_free(&p);
	} else
		describe_err(rc);
	if (ok)
		ping_check(c, &ok);
	return ok;
}

/*
 * A login whose first PDU carries bad text. Passing answers: a Login
 * Response of class 2, or a drop. Anything else fails.
 */
static void login_expect_reject(const char *name, const void *data, uint32_t dlen)
{
	struct conn c;
	bool ok = false;
	int rc = conn_open(&c);
	if (rc == 0)
		rc = send_login(&c, login_flags(true, ISCSI_STAGE_SECURITY, ISCSI_STAGE_OPERATIONAL), data, dlen);
	struct pdu p;
	if (rc == 0)
		rc = recv_pdu(&c, &p, PDU_TIMEOUT_MS);
	enum answer a = first_answer(rc, true, "connection dropped", &p);
	ok = a == ANSWER_DROP;
	if (a == ANSWER_PDU) {
		ok = pdu_op(&p) == ISCSI_OP_LOGIN_RSP && p.bhs[36] == ISCSI_LOGIN_STATUS_INIT_ERR;
		if (pdu_op(&p) == ISCSI_OP_LOGIN_RSP && p.bhs[36] == 0 && p.dlen)
			notef("answer keys \"%.*s\"", (int)strnlen((char *)p.data, 80), (char *)p.data);
		pdu_free(&p);
	}
	conn_close(&c);
	verdict(name, ok);
}

/*
 * A first Login Request with InitiatorName, then session_type (n bytes with
 * their NUL), TargetName and the keys in extra: login_expect_reject().
 */
static void login_keys_reject(const char *name, const void *session_type, size_t n,
			      const char *const *extra)
{
	struct keys k = { .len = 0 };
	key_addf(&k, "InitiatorName=%s", cfg.initiator);
	key_add_raw(&k, session_type, n);
	key_addf(&k, "TargetName=%s", cfg.target);
	for (; *extra; extra++)
		key_add(&k, *extra);
	login_expect_reject(name, k.buf, k.len);
}

static const char normal_session[] = "SessionType=Normal";

static void case_login_no_equals(const char *name)
{
	static const char *const extra[] = { "AuthMethod=None", "ThisKeyHasNoEqualsSign", NULL };
	login_keys_reject(name, normal_session, sizeof(normal_session), extra);
}

static void case_login_binary(const char *name)
{
	/* SessionType with binary bytes in its name and value */
	static const char bin[] = "Sess\x01\x02\xff\x80ionType=No\x7f\xfe" "rmal";
	static const char *const extra[] = { "AuthMethod=None", NULL };
	login_keys_reject(name, bin, sizeof(bin), extra);
}

static void case_login_dup_keys(const char *name)
{
	static const char *const extra[] = { "SessionType=Normal", "AuthMethod=None", NULL };
	login_keys_reject(name, normal_session, sizeof(normal_session), extra);
}

static void junk(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
		if (p[i] == 0 || p[i] == '=')
			p[i] = 'J';
	}
}

/* 64 KiB of junk in 8 KiB PDUs with the C bit, then a final one. */
static void case_login_junk_64k(const char *name)
{
	struct conn c;
	bool ok = false;
	uint8_t chunk[8192];
	int rc = conn_open(&c), i;
	struct pdu p;
	for (i = 0; rc == 0 && i <= 8; i++) {
		junk(chunk, sizeof(chunk), (unsigned)i);
		uint8_t fl = i < 8 ? ISCSI_LOGIN_CONTINUE : login_flags(true, ISCSI_STAGE_SECURITY, ISCSI_STAGE_OPERATIONAL);
		rc = send_login(&c, fl, chunk, sizeof(chunk));
		if (rc)
			break;
		rc = recv_pdu(&c, &p, PDU_TIMEOUT_MS);
		if (rc)
			break;
		if (pdu_op(&p) != ISCSI_OP_LOGIN_RSP || p.bhs[36] != 0) {
			notef("after %d KiB:", (i + 1) * 8);
			describe(&p);
			ok = pdu_op(&p) == ISCSI_OP_LOGIN_RSP && p.bhs[36] == ISCSI_LOGIN_STATUS_INIT_ERR;
			pdu_free(&p);
			break;
		}
		pdu_free(&p); /* an empty response asking for more: fine */
	}
	if (rc == -ECONNRESET || rc == -EPIPE) {
		notef("connection dropped after %d KiB", i * 8);
		ok = true;
	} else if (rc)
		describe_err(rc);
	else if (i > 8)
		notef("all 72 KiB of junk accepted without an error");
	conn_close(&c);
	verdict(name, ok);
}

static void case_login_junk_one_pdu(const char *name)
{
	static uint8_t big[65536];
	junk(big, sizeof(big), 99);
	notef("one Login PDU of 64 KiB (login MaxRecvDataSegmentLength is 8192):");
	login_expect_reject(name, big, sizeof(big));
}

static void case_login_stall(const char *name)
{
	struct conn c;
	bool ok = false;
	struct keys k = { .len = 0 };
	struct pdu p;
	initial_keys(&k, cfg.initiator);
	key_add(&k, "AuthMethod=None");
	int rc = conn_open(&c);
	if (rc == 0)
		rc = login_step(&c, login_flags(true, ISCSI_STAGE_SECURITY, ISCSI_STAGE_OPERATIONAL), &k, &p);
	if (rc) {
		notef("first login step failed");
		if (rc < 0)
			describe_err(rc);
	} else {
		pdu_free(&p);
		long long t0 = now_ms();
		rc = recv_pdu(&c, &p, cfg.stall_limit * 1000);
		if (rc == -ECONNRESET) {
			notef("connection closed %.1f s after the login stalled", (double)(now_ms() - t0) / 1000);
			ok = true;
		} else if (rc == 0) {
			describe(&p);
			pdu_free(&p);
		} else
			notef("still open after %d s", cfg.stall_limit);
	}
	conn_close(&c);
	verdict(name, ok);
}

/* A WRITE whose data never comes: the initiator closes after the R2T. */
static bool case_write_drop(struct conn *c)
{
	uint8_t b[ISCSI_BHS_LEN], cdb[16], data[4096];
	pattern(data, sizeof(data), 3);
	cdb10(cdb, 0x2a, 64, 64); /* 32 KiB */
	build_cmd(c, b, ++c->itt, ISCSI_CMD_WRITE, 32768, cdb);
	c->cmd_sn++;
	struct pdu p;
	int rc = exchange(c, b, data, c->immediate_data ? sizeof(data) : 0, PDU_TIMEOUT_MS, &p);
	if (rc == 0) {
		describe(&p);
		pdu_free(&p);
	} else
		describe_err(rc);
	conn_close(c);
	notef("closed mid-write");
	return serves_fresh_session();
}

static void case_chap(const char *name)
{
	struct conn c;
	bool ok = false;
	char bad[300];
	snprintf(bad, sizeof(bad), "%sX", cfg.chap_secret);
	int rc = conn_open(&c);
	if (rc == 0)
		rc = login_full(&c, cfg.initiator, cfg.chap_user, bad);
	conn_close(&c);
	if (rc == (ISCSI_LOGIN_STATUS_INIT_ERR << 8 | ISCSI_LOGIN_DETAIL_AUTH_FAILED))
		ok = true;
	else if (rc <= 0) {
		if (rc < 0)
			describe_err(rc);
		notef("wrong secret not refused with 02/01");
	}
	/* the right secret works: the refusal above was about the secret */
	rc = conn_open(&c);
	if (rc == 0)
		rc = login_full(&c, cfg.initiator, cfg.chap_user, cfg.chap_secret);
	if (rc == 0) {
		notef("right secret logs in");
		ping_check(&c, &ok);
	} else {
		notef("right secret refused (%d)", rc);
		ok = false;
	}
	conn_close(&c);
	verdict(name, ok);
}

static void case_acl(const char *name)
{
	struct conn c;
	bool ok = false;
	int rc = conn_open(&c);
	if (rc == 0)
		rc = login_full(&c, "iqn.2026-11.org.isergw:intruder", NULL, NULL);
	conn_close(&c);
	if (rc == (ISCSI_LOGIN_STATUS_INIT_ERR << 8 | ISCSI_LOGIN_DETAIL_FORBIDDEN))
		ok = true;
	else {
		if (rc < 0)
			describe_err(rc);
		notef("initiator outside the ACL not refused with 02/02");
	}
	rc = conn_open(&c);
	if (rc == 0)
		rc = login_full(&c, cfg.acl_allowed, NULL, NULL);
	if (rc == 0)
		notef("the allowed initiator logs in");
	else {
		notef("the allowed initiator is refused (%d)", rc);
		ok = false;
	}
	conn_close(&c);
	verdict(name, ok);
}

/* ---------------------------------------------------------------------- */
/* digests (RFC 7143 11.1 / 13.1; errors: 7.8) */

static void digest_counts(const struct conn *c)
{
	notef("verified %u header and %u data digests of the target", c->hd_ok, c->dd_ok);
}

/* A NOP-Out with data on a session with digests: echoed, or the verdict is false. */
static bool digest_ping(struct conn *c, const char *data, const char *what, bool say_ok)
{
	int rc = ping_data(c, data);
	if (rc) {
		notef("%s:", what);
		describe_err(rc);
		return false;
	}
	if (say_ok)
		notef("%s echoed", what);
	return true;
}

/*
 * HeaderDigest=CRC32C, DataDigest=CRC32C; a WRITE(10) of 128 KiB with
 * immediate data and Data-Out PDUs answering the R2T (split at 16 KiB), a
 * READ(10) back in Data-In PDUs of at most 16 KiB (our
 * MaxRecvDataSegmentLength), a NOP-Out with 7 bytes (padding), all digests
 * checked.
 */
static bool case_digest_crc32c(struct conn *c)
{
	bool ok = false;
	const uint32_t len = 131072, lba = 1024;
	uint8_t cdb[16];
	uint8_t *out = malloc(len), *in = calloc(1, len);
	if (!out || !in)
		goto out;
	notef("agreed HeaderDigest=%s DataDigest=%s", c->agreed_hd, c->agreed_dd);
	c->dout_max = 16384;
	pattern(out, len, 21);
	cdb10(cdb, 0x2a, lba, (uint16_t)(len / 512));
	c->imm_bytes = c->r2ts = c->data_outs = c->data_ins = 0;
	int rc = scsi_exec(c, cdb, true, out, len);
	notef("WRITE(10) %u KiB: %u bytes immediate, %u R2T, %u Data-Out: status %d", len / 1024,
	      c->imm_bytes, c->r2ts, c->data_outs, rc);
	ok = rc == 0;
	if (ok && (c->imm_bytes == 0 || c->r2ts == 0)) {
		notef("(the exchange did not use both immediate data and an R2T: "
		      "ImmediateData=%s InitialR2T=%s FirstBurstLength %u)",
		      c->immediate_data ? "Yes" : "No", c->initial_r2t ? "Yes" : "No", c->first_burst);
		ok = false;
	}
	if (ok) {
		cdb10(cdb, 0x28, lba, (uint16_t)(len / 512));
		rc = scsi_exec(c, cdb, false, in, len);
		notef("READ(10): %u Data-In, status %d", c->data_ins, rc);
		if (rc != 0)
			ok = false;
		else if (memcmp(in, out, len) != 0) {
			notef("the data read back differs from the data written");
			ok = false;
		} else if (c->data_ins < 2) {
			notef("(expected several Data-In PDUs of at most 16 KiB)");
			ok = false;
		} else
			notef("data matches");
	}
	if (ok)
		ok = digest_ping(c, "digest!", "NOP-Out with 7 data bytes", true);
	digest_counts(c);
	if (ok && (c->hd_ok == 0 || c->dd_ok == 0))
		ok = false;
out:
	free(out);
	free(in);
	return ok;
}

/* A NOP-Out with a wrong header digest: at ERL 0 the target drops the connection. */
static bool case_digest_bad_header(struct conn *c)
{
	bool ok = false;
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t itt = ++c->itt;
	bhs_nop_out(b, itt, ISCSI_RSVD_TAG, c->cmd_sn, c->exp_stat_sn);
	c->corrupt_hd = true;
	long long t0 = now_ms();
	int rc = send_pdu(c, b, "hdr!", 4, false);
	notef("NOP-Out with a wrong header digest:");
	while (rc == 0) {
		struct pdu p;
		long long left = PDU_TIMEOUT_MS - (now_ms() - t0);
		rc = recv_pdu(c, &p, left > 0 ? (int)left : 1);
		if (rc)
			break;
		describe(&p);
		if (pdu_op(&p) == ISCSI_OP_NOP_IN && be32get(p.bhs + 16) == itt) {
			notef("(the PDU with the bad header digest was answered)");
			pdu_free(&p);
			rc = -EPROTO;
			break;
		}
		pdu_free(&p);
	}
	if (rc == -ECONNRESET || rc == -EPIPE) {
		notef("connection dropped after %lld ms", now_ms() - t0);
		ok = true;
	} else if (rc != -EPROTO) {
		describe_err(rc);
		notef("(expected the target to drop the connection)");
	}
	return ok;
}

/* Send a one-block WRITE(10) with all its data immediate; CmdSN sn, ITT itt. */
static int send_write1(struct conn *c, uint32_t itt, uint32_t sn, uint32_t lba, const uint8_t *data)
{
	uint8_t b[ISCSI_BHS_LEN], cdb[16];
	cdb10(cdb, 0x2a, lba, 1);
	build_cmd(c, b, itt, ISCSI_CMD_WRITE, 512, cdb);
	be32put(b + 24, sn);
	return send_pdu(c, b, data, 512, false);
}

/*
 * A SCSI Command whose immediate data has a wrong data digest: Reject 0x02
 * echoing its header, the command discarded (ExpCmdSN does not move past
 * it), the connection still usable (NOP-Out echoed with valid digests), and
 * the retried command (same ITT and CmdSN, RFC 7143 7.8) executes.
 */
static bool case_digest_bad_data(struct conn *c)
{
	bool ok = false;
	uint8_t a[512], bpat[512], got[512], cdb[16];
	const uint32_t lba = 2048;
	pattern(a, sizeof(a), 31);
	pattern(bpat, sizeof(bpat), 32);
	if (!c->immediate_data) {
		notef("target refused ImmediateData: cannot send a command with immediate data");
		goto out;
	}
	cdb10(cdb, 0x2a, lba, 1);
	int rc = scsi_exec(c, cdb, true, a, sizeof(a));
	if (rc != 0) {
		notef("setup WRITE(10) failed (%d)", rc);
		goto out;
	}
	uint32_t itt = ++c->itt, sn = c->cmd_sn++;
	c->corrupt_dd = true;
	rc = send_write1(c, itt, sn, lba, bpat);
	notef("WRITE(10) CmdSN %u with a wrong data digest on its immediate data:", sn);
	struct pdu p;
	if (rc == 0)
		rc = recv_pdu(c, &p, PDU_TIMEOUT_MS);
	if (rc) {
		describe_err(rc);
		goto out;
	}
	describe(&p);
	if (pdu_op(&p) != ISCSI_OP_REJECT || p.bhs[2] != 0x02) {
		notef("(expected Reject reason 0x02, data digest error)");
		pdu_free(&p);
		goto out;
	}
	uint32_t exp = be32get(p.bhs + 28);
	if (p.dlen < ISCSI_BHS_LEN || pdu_op_raw(p.data) != ISCSI_OP_SCSI_CMD || be32get(p.data + 16) != itt) {
		notef("(the Reject does not carry the rejected header)");
		pdu_free(&p);
		goto out;
	}
	pdu_free(&p);
	if (exp != sn) {
		notef("Reject ExpCmdSN %u: the discarded command's CmdSN %u was consumed", exp, sn);
		goto out;
	}
	notef("ExpCmdSN stays %u", exp);
	if (!digest_ping(c, "still here", "NOP-Out afterwards", false))
		goto out;
	notef("NOP-Out echoed");
	/* the initiator retries the discarded command */
	rc = send_write1(c, itt, sn, lba, bpat);
	if (rc == 0)
		rc = recv_pdu(c, &p, PDU_TIMEOUT_MS);
	if (rc) {
		notef("retried WRITE:");
		describe_err(rc);
		goto out;
	}
	if (pdu_op(&p) != ISCSI_OP_SCSI_RSP || be32get(p.bhs + 16) != itt || p.bhs[2] || p.bhs[3]) {
		notef("retried WRITE:");
		describe(&p);
		pdu_free(&p);
		goto out;
	}
	pdu_free(&p);
	cdb10(cdb, 0x28, lba, 1);
	rc = scsi_exec(c, cdb, false, got, sizeof(got));
	if (rc != 0)
		notef("READ(10) afterwards failed (%d)", rc);
	else if (memcmp(got, bpat, sizeof(got)) != 0)
		notef("READ(10) after the retried WRITE does not return its data");
	else {
		notef("the retried WRITE executed");
		ok = true;
	}
out:
	digest_counts(c);
	return ok;
}

/* HeaderDigest=CRC32C, DataDigest=None: data PDUs carry no data digest. */
static bool case_digest_header_only(struct conn *c)
{
	bool ok = false;
	const uint32_t len = 32768, lba = 4096;
	uint8_t cdb[16];
	uint8_t *out = malloc(len), *in = calloc(1, len);
	if (!out || !in)
		goto out;
	notef("agreed HeaderDigest=%s DataDigest=%s", c->agreed_hd,
	      c->agreed_dd[0] ? c->agreed_dd : "(default None)");
	ok = c->agreed_dd[0] == '\0' || strcmp(c->agreed_dd, "None") == 0;
	pattern(out, len, 41);
	cdb10(cdb, 0x2a, lba, (uint16_t)(len / 512));
	int rc = ok ? scsi_exec(c, cdb, true, out, len) : -EPROTO;
	if (ok && rc == 0) {
		cdb10(cdb, 0x28, lba, (uint16_t)(len / 512));
		rc = scsi_exec(c, cdb, false, in, len);
	}
	if (ok && rc == 0 && memcmp(in, out, len) == 0)
		notef("WRITE + READ of %u KiB match", len / 1024);
	else if (ok) {
		notef("WRITE/READ: %s", rc ? "failed" : "data differs");
		ok = false;
	}
	if (ok)
		ok = digest_ping(c, "hdr-only", "NOP-Out", false);
	digest_counts(c);
	if (c->hd_ok == 0 || c->dd_ok != 0)
		ok = false;
out:
	free(out);
	free(in);
	return ok;
}

/* ---------------------------------------------------------------------- */
/* task attributes (SAM-5): several commands in one TCP write */

#define ATTR_SIMPLE  1
#define ATTR_ORDERED 2
#define ATTR_HOQ     3
#define ATTR_ACA     4

/* One command of a batch, and what came back for it. */
struct bcmd {
	uint8_t attr;           /* task attribute (ATTR field, 0-7) */
	uint8_t op;             /* 0x28 READ(10), 0x2a WRITE(10), 0x00 TEST UNIT READY */
	uint32_t lba;
	uint16_t blocks;
	const uint8_t *wdata;   /* WRITE: all of it immediate */
	uint8_t *rbuf;          /* READ: blocks * 512 bytes */
	uint32_t itt;
	int status;             /* -1 until its status arrived */
	uint8_t sk, asc, ascq;  /* sense of a CHECK CONDITION */
	unsigned order;         /* 1, 2, ...: when its status arrived within the batch */
	bool may_abort;         /* a TMF of the batch may abort it (no answer then) */
};

/* Append BHS + data + padding (no digests: the batch sessions use none). */
static void batch_put(uint8_t *buf, size_t *len, uint8_t *bhs, const void *data, uint32_t dlen)
{
	be24put(bhs + 5, dlen);
	memcpy(buf + *len, bhs, ISCSI_BHS_LEN);
	*len += ISCSI_BHS_LEN;
	if (dlen)
		memcpy(buf + *len, data, dlen);
	*len += dlen;
	while (*len & 3)
		buf[(*len)++] = 0;
}

/* The SCSI Command PDU of bc (CmdSN advanced) appended to buf. */
static void batch_cmd(struct conn *c, uint8_t *buf, size_t *len, struct bcmd *bc)
{
	uint8_t b[ISCSI_BHS_LEN], cdb[16];
	uint32_t bytes = bc->op ? bc->blocks * 512u : 0;
	uint8_t dir = bc->op == 0x2a ? ISCSI_CMD_WRITE : bc->op == 0x28 ? ISCSI_CMD_READ : 0;

	if (bc->op)
		cdb10(cdb, bc->op, bc->lba, bc->blocks);
	else
		memset(cdb, 0, sizeof(cdb));
	bc->itt = ++c->itt;
	bc->status = -1;
	build_cmd(c, b, bc->itt, dir, bytes, cdb);
	b[1] = (uint8_t)((b[1] & ~ISCSI_CMD_ATTR_MASK) | bc->attr);
	c->cmd_sn++;
	batch_put(buf, len, b, bc->wdata, bc->op == 0x2a ? bytes : 0);
}

/* A TMF Request (immediate) appended to buf; returns its ITT. */
static uint32_t batch_tmf(struct conn *c, uint8_t *buf, size_t *len, uint8_t func,
			  const struct bcmd *ref)
{
	uint8_t b[ISCSI_BHS_LEN] = { 0 };
	uint32_t itt = ++c->itt;

	b[0] = ISCSI_OP_TASK_MGMT_REQ | ISCSI_OP_IMMEDIATE;
	b[1] = 0x80 | func;
	put_lun(b, cfg.lun);
	be32put(b + 16, itt);
	be32put(b + 20, ref ? ref->itt : ISCSI_RSVD_TAG);
	be32put(b + 24, c->cmd_sn);
	be32put(b + 28, c->exp_stat_sn);
	if (ref)
		be32put(b + 32, c->cmd_sn - 1);
	batch_put(buf, len, b, NULL, 0);
	return itt;
}

static struct bcmd *batch_find(struct bcmd *v, size_t n, uint32_t itt)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].itt == itt)
			return &v[i];
	return NULL;
}

/*
 * Receive until every command of v has its status (those that may_abort
 * excepted) and, with tmf_itt, the TMF Response has come (*tmf_rsp); the
 * commands a TMF aborted never answer. Every PDU within 5 s. Returns 0, or
 * a negative errno with the note told.
 */
static int batch_collect(struct conn *c, struct bcmd *v, size_t n, uint32_t tmf_itt, int *tmf_rsp)
{
	unsigned got = 0;

	if (tmf_rsp)
		*tmf_rsp = -1;
	for (;;) {
		size_t open = 0;
		struct pdu p;

		for (size_t i = 0; i < n; i++)
			open += v[i].status < 0 && !v[i].may_abort;
		if (!open && (!tmf_itt || *tmf_rsp >= 0))
			return 0;
		int rc = recv_pdu(c, &p, PDU_TIMEOUT_MS);
		if (rc) {
			notef("%zu of %zu commands%s unanswered:", open, n,
			      tmf_itt && *tmf_rsp < 0 ? " and the TMF" : "");
			describe_err(rc);
			return rc;
		}
		uint8_t op = pdu_op(&p);
		struct bcmd *bc = batch_find(v, n, be32get(p.bhs + 16));
		if (op == ISCSI_OP_TASK_MGMT_RSP && tmf_itt && be32get(p.bhs + 16) == tmf_itt) {
			*tmf_rsp = p.bhs[2];
		} else if (op == ISCSI_OP_DATA_IN && bc && bc->status < 0) {
			uint32_t off = be32get(p.bhs + 40), len = bc->blocks * 512u;
			if (bc->rbuf && off <= len && p.dlen <= len - off)
				memcpy(bc->rbuf + off, p.data, p.dlen);
			if (p.bhs[1] & ISCSI_DATAIN_STATUS) {
				bc->status = p.bhs[3];
				bc->order = ++got;
			}
		} else if (op == ISCSI_OP_SCSI_RSP && bc && bc->status < 0) {
			bc->status = p.bhs[2] ? 0x100 | p.bhs[2] : p.bhs[3];
			bc->order = ++got;
			if (p.dlen >= 2 + 14) {
				bc->sk = p.data[2 + 2] & 0x0f;
				bc->asc = p.data[2 + 12];
				bc->ascq = p.data[2 + 13];
			}
		} else {
			notef("unexpected");
			describe(&p);
			pdu_free(&p);
			return -EPROTO;
		}
		pdu_free(&p);
	}
}

/* Nothing more within QUIET_MS: true; otherwise the PDU is told. */
static bool batch_quiet(struct conn *c)
{
	struct pdu p;
	int rc = recv_pdu(c, &p, QUIET_MS);
	if (rc == -ETIMEDOUT)
		return true;
	notef("then");
	if (rc == 0) {
		describe(&p);
		pdu_free(&p);
	} else
		describe_err(rc);
	return false;
}

static bool batch_send(struct conn *c, const uint8_t *buf, size_t len)
{
	int rc = send_all(c, buf, len);
	if (rc)
		describe_err(rc);
	return rc == 0;
}

/*
 * The hang of a reactor: READ(10) of 2048 blocks ORDERED, then two READ(10)
 * SIMPLE, in one TCP write. All three answered GOOD, the SIMPLE ones after
 * the ORDERED one completed; the connection still answers.
 */
static bool case_attr_ordered(struct conn *c)
{
	static uint8_t buf[4 * ISCSI_BHS_LEN], big[2048 * 512], r1[4096], r2[4096];
	struct bcmd v[] = {
		{ .attr = ATTR_ORDERED, .op = 0x28, .lba = 0, .blocks = 2048, .rbuf = big },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = 8, .blocks = 8, .rbuf = r1 },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = 16, .blocks = 8, .rbuf = r2 },
	};
	size_t len = 0;
	bool ok;

	for (size_t i = 0; i < 3; i++)
		batch_cmd(c, buf, &len, &v[i]);
	if (buf[1] != 0xc2) {
		notef("(the ORDERED READ has flags 0x%02x, want 0xc2)", buf[1]);
		return false;
	}
	if (!batch_send(c, buf, len) || batch_collect(c, v, 3, 0, NULL))
		return false;
	notef("ORDERED READ(10) 2048 blocks status %d, SIMPLE READ(10)s %d and %d", v[0].status,
	      v[1].status, v[2].status);
	ok = v[0].status == 0 && v[1].status == 0 && v[2].status == 0;
	if (ok)
		ping_check(c, &ok);
	return ok;
}

static bool same_block(const uint8_t *got, const uint8_t *want, const char *what)
{
	if (memcmp(got, want, 512) == 0)
		return true;
	notef("%s does not return the data of the WRITE ahead of it", what);
	return false;
}

/*
 * Every attribute mixed, several held at once: an ORDERED WRITE is seen by
 * the SIMPLE READ behind it, a second ORDERED WRITE by the next READ, HEAD
 * OF QUEUE runs, ACA (no ACA condition can exist) is refused with
 * ILLEGAL REQUEST / INVALID MESSAGE ERROR, and everything else is GOOD.
 */
static bool case_attr_mix(struct conn *c)
{
	static uint8_t buf[16 * (ISCSI_BHS_LEN + 512)], big[2048 * 512];
	static uint8_t a[512], b2[512], ra[512], rb[512], r3[512], r4[512];
	const uint32_t lba = 4000;
	pattern(a, sizeof(a), 51);
	pattern(b2, sizeof(b2), 52);
	struct bcmd v[] = {
		{ .attr = ATTR_ORDERED, .op = 0x28, .lba = 0, .blocks = 2048, .rbuf = big },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = 8, .blocks = 1, .rbuf = r3 },
		{ .attr = ATTR_ORDERED, .op = 0x2a, .lba = lba, .blocks = 1, .wdata = a },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = lba, .blocks = 1, .rbuf = ra },
		{ .attr = ATTR_HOQ, .op = 0x00 },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = 9, .blocks = 1, .rbuf = r4 },
		{ .attr = ATTR_ORDERED, .op = 0x2a, .lba = lba, .blocks = 1, .wdata = b2 },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = lba, .blocks = 1, .rbuf = rb },
		{ .attr = ATTR_ACA, .op = 0x00 },
		{ .attr = 0 /* untagged */, .op = 0x00 },
		{ .attr = ATTR_ORDERED, .op = 0x00 },
		{ .attr = ATTR_ORDERED, .op = 0x00 },
	};
	const size_t n = sizeof(v) / sizeof(v[0]);
	size_t len = 0;
	bool ok = true;

	if (!c->immediate_data) {
		notef("target refused ImmediateData");
		return false;
	}
	for (size_t i = 0; i < n; i++)
		batch_cmd(c, buf, &len, &v[i]);
	if (!batch_send(c, buf, len) || batch_collect(c, v, n, 0, NULL))
		return false;
	for (size_t i = 0; i < n; i++) {
		bool aca = v[i].attr == ATTR_ACA;
		bool want = aca ? v[i].status == 2 && v[i].sk == 5 && v[i].asc == 0x49 &&
				  v[i].ascq == 0 : v[i].status == 0;
		if (!want) {
			notef("command %zu (attribute %u): status 0x%x sense %x/%02x/%02x%s", i,
			      v[i].attr, (unsigned)v[i].status, v[i].sk, v[i].asc, v[i].ascq,
			      aca ? " (want CHECK CONDITION 5/49/00)" : "");
			ok = false;
		}
	}
	if (ok)
		notef("%zu commands answered as expected (ACA: 5/49/00)", n);
	ok = same_block(ra, a, "the READ behind the first ORDERED WRITE") && ok;
	ok = same_block(rb, b2, "the READ behind the second ORDERED WRITE") && ok;
	if (v[3].order < v[2].order || v[7].order < v[6].order) {
		notef("a SIMPLE READ completed before the ORDERED WRITE ahead of it");
		ok = false;
	}
	if (ok)
		ping_check(c, &ok);
	return ok;
}

/*
 * TMFs while tasks are held behind an ORDERED READ: ABORT TASK of a held
 * SIMPLE READ, then ABORT TASK SET of the rest; the session goes on.
 */
static bool case_attr_abort(struct conn *c)
{
	static uint8_t buf[8 * ISCSI_BHS_LEN], big[2048 * 512], r[4][512];
	struct bcmd v[] = {
		{ .attr = ATTR_ORDERED, .op = 0x28, .lba = 0, .blocks = 2048, .rbuf = big },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = 8, .blocks = 1, .rbuf = r[0], .may_abort = true },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = 9, .blocks = 1, .rbuf = r[1] },
	};
	size_t len = 0;
	int tmf, rc;
	bool ok = true;

	for (size_t i = 0; i < 3; i++)
		batch_cmd(c, buf, &len, &v[i]);
	uint32_t titt = batch_tmf(c, buf, &len, ISCSI_TMF_ABORT_TASK, &v[1]);
	be32put(buf + len - ISCSI_BHS_LEN + 32, c->cmd_sn - 2); /* RefCmdSN: the SIMPLE READ's */
	if (!batch_send(c, buf, len) || batch_collect(c, v, 3, titt, &tmf))
		return false;
	notef("ABORT TASK of a SIMPLE READ held behind an ORDERED one: response %d (%s); ORDERED "
	      "status %d, the other SIMPLE %d", tmf, v[1].status < 0 ? "not answered" : "answered",
	      v[0].status, v[2].status);
	/* aborted and never answered, or answered first and then "no such task" */
	if (!(tmf == ISCSI_TMF_RSP_COMPLETE && v[1].status < 0) &&
	    !(tmf == ISCSI_TMF_RSP_NO_TASK && v[1].status >= 0))
		ok = false;
	if (v[0].status != 0 || v[2].status != 0 || !batch_quiet(c))
		ok = false;
	/* ABORT TASK SET with an ORDERED READ running and others held */
	struct bcmd w[] = {
		{ .attr = ATTR_ORDERED, .op = 0x28, .lba = 0, .blocks = 2048, .rbuf = big, .may_abort = true },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = 8, .blocks = 1, .rbuf = r[2], .may_abort = true },
		{ .attr = ATTR_ORDERED, .op = 0x28, .lba = 9, .blocks = 1, .rbuf = r[3], .may_abort = true },
		{ .attr = ATTR_HOQ, .op = 0x28, .lba = 9, .blocks = 1, .rbuf = r[3], .may_abort = true },
	};
	len = 0;
	for (size_t i = 0; i < 4; i++)
		batch_cmd(c, buf, &len, &w[i]);
	titt = batch_tmf(c, buf, &len, ISCSI_TMF_ABORT_TASK_SET, NULL);
	if (!batch_send(c, buf, len) || batch_collect(c, w, 4, titt, &tmf))
		return false;
	notef("ABORT TASK SET: response %d", tmf);
	if (tmf != ISCSI_TMF_RSP_COMPLETE || !batch_quiet(c))
		ok = false;
	if (ok)
		ping_check(c, &ok);
	if (ok) {
		uint8_t cdb[16], one[512];
		cdb10(cdb, 0x28, 0, 1);
		rc = scsi_exec(c, cdb, false, one, sizeof(one));
		notef("READ(10) afterwards: %d", rc);
		ok = rc == 0;
	}
	return ok;
}

/*
 * LOGICAL UNIT RESET, CLEAR TASK SET and TARGET WARM RESET, each in the
 * same TCP write as an ORDERED READ and the tasks held behind it: answered
 * FUNCTION COMPLETE, nothing after it; the unit attention the reset leaves
 * is taken with TEST UNIT READY and a READ works again.
 */
static bool case_attr_reset(struct conn *c)
{
	static const uint8_t funcs[] = { ISCSI_TMF_LOGICAL_UNIT_RESET, ISCSI_TMF_CLEAR_TASK_SET,
					 ISCSI_TMF_TARGET_WARM_RESET };
	static uint8_t buf[8 * ISCSI_BHS_LEN], big[2048 * 512], r[2][512];
	bool ok = true;

	for (size_t f = 0; f < sizeof(funcs) && ok; f++) {
		struct bcmd v[] = {
			{ .attr = ATTR_ORDERED, .op = 0x28, .lba = 0, .blocks = 2048, .rbuf = big,
			  .may_abort = true },
			{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = 8, .blocks = 1, .rbuf = r[0],
			  .may_abort = true },
			{ .attr = ATTR_ORDERED, .op = 0x28, .lba = 9, .blocks = 1, .rbuf = r[1],
			  .may_abort = true },
		};
		size_t len = 0;
		int tmf, rc = 0;
		uint8_t tur[16] = { 0 }, cdb[16], one[512];

		for (size_t i = 0; i < 3; i++)
			batch_cmd(c, buf, &len, &v[i]);
		uint32_t titt = batch_tmf(c, buf, &len, funcs[f], NULL);
		if (!batch_send(c, buf, len) || batch_collect(c, v, 3, titt, &tmf))
			return false;
		notef("TMF function %u with tasks held: response %d", funcs[f], tmf);
		if (tmf != ISCSI_TMF_RSP_COMPLETE || !batch_quiet(c))
			return false;
		for (int i = 0; i < 4; i++) {
			rc = scsi_exec(c, tur, false, NULL, 0);
			if (rc <= 0)
				break;
		}
		cdb10(cdb, 0x28, 0, 1);
		if (rc == 0)
			rc = scsi_exec(c, cdb, false, one, sizeof(one));
		if (rc != 0) {
			notef("TEST UNIT READY / READ(10) afterwards: %d", rc);
			ok = false;
		}
	}
	if (ok)
		notef("a READ works after each");
	return ok;
}

/*
 * A bidirectional WRITE (not supported) with all its data, sent ahead of
 * the CmdSN gap before it, then the command filling the gap, in one TCP
 * write: the READ is GOOD, the bidirectional one CHECK CONDITION 05/24/00,
 * and the session goes on (its CmdSN was consumed in order).
 */
static bool case_bidi_out_of_order(struct conn *c)
{
	static uint8_t buf[4 * ISCSI_BHS_LEN + 512], w[512], r[512];
	struct bcmd v[] = {
		{ .attr = ATTR_SIMPLE, .op = 0x2a, .lba = 6000, .blocks = 1, .wdata = w },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = 6000, .blocks = 1, .rbuf = r },
	};
	size_t len = 0;
	uint8_t tur[16] = { 0 };
	uint32_t sn = c->cmd_sn;
	int rc;

	if (!c->immediate_data) {
		notef("target refused ImmediateData");
		return false;
	}
	/* the bidirectional one takes CmdSN sn + 1, the READ sn, the READ goes second */
	c->cmd_sn = sn + 1;
	batch_cmd(c, buf, &len, &v[0]);
	buf[1] |= ISCSI_CMD_READ;
	c->cmd_sn = sn;
	batch_cmd(c, buf, &len, &v[1]);
	c->cmd_sn = sn + 2;
	if (!batch_send(c, buf, len) || batch_collect(c, v, 2, 0, NULL))
		return false;
	notef("bidirectional WRITE (CmdSN ahead): status 0x%x sense %x/%02x/%02x; READ filling "
	      "the gap: %d", (unsigned)v[0].status, v[0].sk, v[0].asc, v[0].ascq, v[1].status);
	bool ok = v[0].status == 2 && v[0].sk == 5 && v[0].asc == 0x24 && v[1].status == 0;
	rc = scsi_exec(c, tur, false, NULL, 0);
	notef("TEST UNIT READY afterwards: %d", rc);
	return ok && rc == 0;
}

/*
 * The connection goes (a Logout, or closed) with tasks held: then a new
 * session on the same reactor logs in and READs.
 */
static bool attr_then_leave(struct conn *c, bool logout)
{
	static uint8_t buf[8 * ISCSI_BHS_LEN], big[2048 * 512], r[2][512];
	struct bcmd v[] = {
		{ .attr = ATTR_ORDERED, .op = 0x28, .lba = 0, .blocks = 2048, .rbuf = big },
		{ .attr = ATTR_SIMPLE, .op = 0x28, .lba = 8, .blocks = 1, .rbuf = r[0] },
		{ .attr = ATTR_ORDERED, .op = 0x28, .lba = 9, .blocks = 1, .rbuf = r[1] },
	};
	size_t len = 0;
	bool ok = true;

	for (size_t i = 0; i < 3; i++)
		batch_cmd(c, buf, &len, &v[i]);
	if (logout) {
		uint8_t b[ISCSI_BHS_LEN] = { 0 };
		b[0] = ISCSI_OP_LOGOUT_REQ | ISCSI_OP_IMMEDIATE;
		b[1] = 0x80; /* close the session */
		be32put(b + 16, ++c->itt);
		be32put(b + 24, c->cmd_sn);
		be32put(b + 28, c->exp_stat_sn);
		batch_put(buf, &len, b, NULL, 0);
	}
	if (!batch_send(c, buf, len))
		return false;
	if (logout) {
		/* whatever comes, then the Logout Response and the close */
		bool answered = false;
		for (;;) {
			struct pdu p;
			int rc = recv_pdu(c, &p, PDU_TIMEOUT_MS);
			if (rc == -ECONNRESET)
				break;
			if (rc) {
				notef("after the Logout:");
				describe_err(rc);
				ok = false;
				break;
			}
			answered |= pdu_op(&p) == ISCSI_OP_LOGOUT_RSP;
			pdu_free(&p);
		}
		notef("Logout with tasks held: %s, connection closed",
		      answered ? "Logout Response" : "no Logout Response");
		ok = ok && answered;
	} else {
		notef("connection closed with tasks held");
	}
	conn_close(c);
	return serves_fresh_session() && ok;
}

static bool case_attr_logout(struct conn *c)
{
	return attr_then_leave(c, true);
}

static bool case_attr_drop(struct conn *c)
{
	return attr_then_leave(c, false);
}

/* A Data-Out for itt: TTT ttt, DataSN dsn, offset off, F when final. */
static int send_dataout(struct conn *c, uint32_t itt, uint32_t ttt, uint32_t dsn, uint32_t off,
			bool final, const uint8_t *data, uint32_t dlen)
{
	uint8_t d[ISCSI_BHS_LEN] = { 0 };
	d[0] = ISCSI_OP_DATA_OUT;
	d[1] = final ? ISCSI_FLAG_FINAL : 0;
	put_lun(d, cfg.lun);
	be32put(d + 16, itt);
	be32put(d + 20, ttt);
	be32put(d + 28, c->exp_stat_sn);
	be32put(d + 36, dsn);
	be32put(d + 40, off);
	return send_pdu(c, d, data, dlen, false);
}

/*
 * WRITE(10) of one block without immediate data, then a Data-Out with
 * DataSegmentLength 0 (answering the R2T, or unsolicited), then the block:
 * GOOD, and the block reads back. With final, the empty Data-Out has F (its
 * sequence ends short, the block never follows): CHECK CONDITION, ABORTED
 * COMMAND, 4B/00 DATA PHASE ERROR (solicited) or 0C/0D NOT ENOUGH
 * UNSOLICITED DATA, and the session goes on.
 */
static bool dataout_zero(struct conn *c, bool solicited, bool final)
{
	uint8_t b[ISCSI_BHS_LEN], cdb[16], data[512], got[512];
	const uint32_t lba = 5000 + (solicited ? 0 : 1) + (final ? 2 : 0);
	uint32_t itt = ++c->itt, ttt = ISCSI_RSVD_TAG;
	struct pdu p;
	int rc;

	pattern(data, sizeof(data), solicited ? 61 : 62);
	cdb10(cdb, 0x2a, lba, 1);
	build_cmd(c, b, itt, ISCSI_CMD_WRITE, sizeof(data), cdb);
	if (!solicited) {
		if (c->initial_r2t) {
			notef("target insisted on InitialR2T=Yes");
			return false;
		}
		b[1] &= (uint8_t)~ISCSI_FLAG_FINAL; /* unsolicited Data-Out follows */
	}
	c->cmd_sn++;
	rc = send_pdu(c, b, NULL, 0, false);
	if (rc == 0 && solicited) {
		rc = recv_pdu(c, &p, PDU_TIMEOUT_MS);
		if (rc == 0) {
			if (pdu_op(&p) != ISCSI_OP_R2T || be32get(p.bhs + 16) != itt) {
				describe(&p);
				pdu_free(&p);
				return false;
			}
			ttt = be32get(p.bhs + 20);
			pdu_free(&p);
		}
	}
	if (rc == 0)
		rc = send_dataout(c, itt, ttt, 0, 0, final, NULL, 0);
	if (rc == 0 && !final)
		rc = send_dataout(c, itt, ttt, 1, 0, true, data, sizeof(data));
	if (rc == 0)
		rc = recv_pdu(c, &p, PDU_TIMEOUT_MS);
	notef("%s Data-Out of 0 bytes%s:", solicited ? "solicited" : "unsolicited",
	      final ? " with F" : ", then the block");
	if (rc) {
		describe_err(rc);
		return false;
	}
	bool ok = pdu_op(&p) == ISCSI_OP_SCSI_RSP && be32get(p.bhs + 16) == itt && !p.bhs[2];
	describe(&p);
	if (ok && final) {
		uint8_t want = solicited ? 0x4b : 0x0c, wantq = solicited ? 0 : 0x0d;
		ok = p.bhs[3] == 2 && p.dlen >= 2 + 14 && (p.data[2 + 2] & 0x0f) == 0x0b &&
		     p.data[2 + 12] == want && p.data[2 + 13] == wantq;
		if (p.dlen >= 2 + 14)
			notef("sense %x/%02x/%02x (want b/%02x/%02x)", p.data[2 + 2] & 0x0f,
			      p.data[2 + 12], p.data[2 + 13], want, wantq);
	} else if (ok) {
		ok = p.bhs[3] == 0;
	}
	pdu_free(&p);
	if (!ok)
		return false;
	if (!final) {
		cdb10(cdb, 0x28, lba, 1);
		rc = scsi_exec(c, cdb, false, got, sizeof(got));
		if (rc != 0 || memcmp(got, data, sizeof(got)) != 0) {
			notef("READ(10) afterwards: %s", rc ? "failed" : "other data");
			return false;
		}
		notef("the block reads back");
	}
	ping_check(c, &ok);
	return ok;
}

static bool case_dataout_zero_solicited(struct conn *c)
{
	return dataout_zero(c, true, false);
}

static bool case_dataout_zero_unsolicited(struct conn *c)
{
	return dataout_zero(c, false, false);
}

static bool case_dataout_zero_final(struct conn *c)
{
	return dataout_zero(c, true, true);
}

static bool case_dataout_zero_unsol_final(struct conn *c)
{
	return dataout_zero(c, false, true);
}

/* ---------------------------------------------------------------------- */
/* NOP-In pings (the target set up with nop_interval_s 1, nop_timeout_s 3) */

#define NOP_ANSWER_MS 6000

/*
 * Receive until limit_ms after t0 (recv_pdu() answers the pings), noting
 * anything else as unexpected. Returns the error that ended it (-ETIMEDOUT,
 * -ECONNRESET, ...), or 0 when the time ran out right after such a PDU.
 */
static int recv_until(struct conn *c, long long t0, long long limit_ms)
{
	int rc = -ETIMEDOUT;
	for (;;) {
		long long left = limit_ms - (now_ms() - t0);
		struct pdu p;
		if (left <= 0)
			return rc;
		rc = recv_pdu(c, &p, (int)left);
		if (rc)
			return rc;
		notef("unexpected");
		describe(&p);
		pdu_free(&p);
	}
}

/* Answer every ping for 6 s: the connection stays up, a TUR still works. */
static bool case_nop_answered(struct conn *c)
{
	bool ok = false;
	long long t0 = now_ms();
	int rc = recv_until(c, t0, NOP_ANSWER_MS);
	notef("%u NOP-In pings (ITT 0xffffffff, a TTT) answered in %d s", c->pings_answered,
	      NOP_ANSWER_MS / 1000);
	if (c->pings_unsolicited)
		notef("%u NOP-In with TTT 0xffffffff", c->pings_unsolicited);
	if (rc == -ETIMEDOUT) {
		ok = c->pings_answered >= 2;
		if (!ok)
			notef("(expected at least 2 with nop_interval_s 1)");
		uint8_t tur[16] = { 0 };
		rc = scsi_exec(c, tur, false, NULL, 0);
		notef("TEST UNIT READY afterwards: %d", rc);
		if (rc != 0) {
			if (rc < 0)
				describe_err(rc);
			ok = false;
		}
	} else {
		notef("after %.1f s:", (double)(now_ms() - t0) / 1000);
		describe_err(rc);
	}
	return ok;
}

/* Never answer: at least one ping arrives, then the target closes. */
static bool case_nop_silent(struct conn *c)
{
	bool ok = false;
	c->ignore_pings = true;
	long long t0 = now_ms();
	int rc = recv_until(c, t0, (long long)nop_limit * 1000);
	if (rc == 0)
		rc = -ETIMEDOUT; /* the limit passed */
	long long t1 = now_ms();
	if (c->pings)
		notef("first NOP-In ping %.1f s after login", (double)(c->first_ping_ms - t0) / 1000);
	else
		notef("no NOP-In ping with a TTT received");
	if (rc == -ECONNRESET) {
		notef("connection closed %.1f s after login (%.1f s after the first ping, %u pings)",
		      (double)(t1 - t0) / 1000,
		      c->pings ? (double)(t1 - c->first_ping_ms) / 1000 : 0.0, c->pings);
		ok = c->pings >= 1;
	} else if (rc == -ETIMEDOUT)
		notef("connection still open after %d s (--nop-limit)", nop_limit);
	else
		describe_err(rc);
	return ok;
}

static bool case_final_login(struct conn *c)
{
	uint8_t cdb[16], buf[4096];
	cdb10(cdb, 0x28, 0, 8);
	int rc = scsi_exec(c, cdb, false, buf, sizeof(buf));
	notef("login, TEST UNIT READY, READ(10) status %d", rc);
	bool ok = rc == 0;
	if (ok)
		ping_check(c, &ok);
	return ok;
}

/* ---------------------------------------------------------------------- */

/*
 * A case runs either by itself (fn: it opens what it needs and prints its
 * verdict) or on a fresh logged-in session (on_session), opened with the
 * digests hd/dd wanted and our MaxRecvDataSegmentLength mrdsl (0: MY_MRDSL).
 */
static const struct {
	const char *name;
	void (*fn)(const char *name);
	bool (*on_session)(struct conn *c);
	bool hd, dd;
	uint32_t mrdsl;
	bool unsol;             /* log in with InitialR2T=No */
	bool by_default;
} cases[] = {
	{ "unknown-opcode", .on_session = case_unknown_opcode, .by_default = true },
	{ "dsl-too-big", .on_session = case_dsl_too_big, .by_default = true },
	{ "ahs-oversized", .on_session = case_ahs_oversized, .by_default = true },
	{ "ahs-truncated", .on_session = case_ahs_truncated, .by_default = true },
	{ "cmdsn-window", .on_session = case_cmdsn_window, .by_default = true },
	{ "abort-completed", .on_session = case_abort_completed, .by_default = true },
	{ "dataout-unknown-itt", .on_session = case_dataout_unknown, .by_default = true },
	{ "login-no-equals", .fn = case_login_no_equals, .by_default = true },
	{ "login-binary", .fn = case_login_binary, .by_default = true },
	{ "login-junk-64k", .fn = case_login_junk_64k, .by_default = true },
	{ "login-junk-64k-one-pdu", .fn = case_login_junk_one_pdu, .by_default = true },
	{ "login-dup-keys", .fn = case_login_dup_keys, .by_default = true },
	{ "login-stall", .fn = case_login_stall, .by_default = true },
	{ "write-drop", .on_session = case_write_drop, .by_default = true },
	{ "digest-crc32c", .on_session = case_digest_crc32c, .hd = true, .dd = true, .mrdsl = 16384,
	  .by_default = true },
	{ "digest-bad-header", .on_session = case_digest_bad_header, .hd = true, .dd = true,
	  .by_default = true },
	{ "digest-bad-data", .on_session = case_digest_bad_data, .hd = true, .dd = true,
	  .by_default = true },
	{ "digest-header-only", .on_session = case_digest_header_only, .hd = true, .mrdsl = 16384,
	  .by_default = true },
	{ "attr-ordered", .on_session = case_attr_ordered },
	{ "attr-mix", .on_session = case_attr_mix },
	{ "attr-abort", .on_session = case_attr_abort },
	{ "attr-reset", .on_session = case_attr_reset },
	{ "bidi-out-of-order", .on_session = case_bidi_out_of_order },
	{ "attr-logout", .on_session = case_attr_logout },
	{ "attr-drop", .on_session = case_attr_drop },
	{ "dataout-zero-solicited", .on_session = case_dataout_zero_solicited },
	{ "dataout-zero-unsolicited", .on_session = case_dataout_zero_unsolicited, .unsol = true },
	{ "dataout-zero-final", .on_session = case_dataout_zero_final },
	{ "dataout-zero-unsol-final", .on_session = case_dataout_zero_unsol_final, .unsol = true },
	{ "nop-answered", .on_session = case_nop_answered },
	{ "nop-silent", .on_session = case_nop_silent },
	{ "chap-wrong-secret", .fn = case_chap },
	{ "acl-forbidden", .fn = case_acl },
	{ "final-login", .on_session = case_final_login, .by_default = true },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static const char *case_name(size_t i)
{
	return cases[i].name;
}

static void run_case(size_t i)
{
	struct conn c;
	bool ok = false;
	if (cases[i].fn) {
		cases[i].fn(cases[i].name);
		return;
	}
	login_unsolicited = cases[i].unsol;
	if (session_open_ex(&c, cases[i].hd, cases[i].dd, cases[i].mrdsl ? cases[i].mrdsl : MY_MRDSL) == 0) {
		ok = cases[i].on_session(&c);
		conn_close(&c);
	}
	verdict(cases[i].name, ok);
}

static void usage(void)
{
	fprintf(stderr, "usage: badinput --addr A --port P --target IQN [--lun N] [--cases a,b,...]\n"
		"                [--chap-user U --chap-secret S] [--acl-allowed IQN]\n"
		"                [--initiator IQN] [--stall-limit SECONDS] [--nop-limit SECONDS]\n"
		"                [--list]\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "target", required_argument, NULL, 't' },
		{ "lun", required_argument, NULL, 'l' },
		{ "cases", required_argument, NULL, 'c' },
		{ "chap-user", required_argument, NULL, 'U' },
		{ "chap-secret", required_argument, NULL, 'S' },
		{ "acl-allowed", required_argument, NULL, 'A' },
		{ "initiator", required_argument, NULL, 'i' },
		{ "stall-limit", required_argument, NULL, 's' },
		{ "nop-limit", required_argument, NULL, 'n' },
		{ "list", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *list = NULL;
	long v;
	int o;
	notes_limit(1024);
	while ((o = getopt_long(argc, argv, "a:p:t:l:c:U:S:A:i:s:n:Lh", lopts, NULL)) != -1) {
		switch (o) {
		case 'a': cfg.addr = optarg; break;
		case 'p':
		case 'l':
		case 'n':
		case 's':
			if (!parse_num("badinput", optarg, 65535, &v))
				return 2;
			if (o == 'p')
				cfg.port = (int)v;
			else if (o == 'l')
				cfg.lun = (unsigned)v;
			else if (o == 'n')
				nop_limit = (int)v;
			else
				cfg.stall_limit = (int)v;
			break;
		case 't': cfg.target = optarg; break;
		case 'c': list = optarg; break;
		case 'U': cfg.chap_user = optarg; break;
		case 'S': cfg.chap_secret = optarg; break;
		case 'A': cfg.acl_allowed = optarg; break;
		case 'i': cfg.initiator = optarg; break;
		case 'L':
			for (size_t i = 0; i < NCASES; i++)
				printf("%s%s\n", cases[i].name, cases[i].by_default ? "" : " (on request)");
			return 0;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (cfg.target == NULL || optind != argc) {
		usage();
		return 2;
	}
	if (!case_list_known("badinput", list, case_name, NCASES))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	if (!crc32c_selftest())
		return 2;
	for (size_t i = 0; i < NCASES; i++) {
		bool run = list ? in_list(list, cases[i].name) : cases[i].by_default;
		if (!run)
			continue;
		if (cases[i].fn == case_chap && (!cfg.chap_user || !cfg.chap_secret)) {
			fprintf(stderr, "badinput: %s needs --chap-user and --chap-secret\n", cases[i].name);
			return 2;
		}
		if (cases[i].fn == case_acl && !cfg.acl_allowed) {
			fprintf(stderr, "badinput: %s needs --acl-allowed\n", cases[i].name);
			return 2;
		}
		run_case(i);
	}
	printf("badinput: %d passed, %d failed\n", passes, failures);
	return failures ? 1 : 0;
}
