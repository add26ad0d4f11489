/* SPDX-License-Identifier: Apache-2.0 */
// LINK: gw_proto isergw_config isergw_common
// SOURCES: fake_login.c
// COVERS: gateway/core/login.c gateway/core/params.c gateway/core/text.c gateway/core/chap.c
/*
 * Login and text negotiation (core/login.c, text.c, params.c, chap.c) driven
 * as core/conn.c drives them: one connection's Login Requests until the
 * login completes or fails, then Text Requests (SendTargets, renegotiation)
 * in full feature phase; a failed login closes the connection and the next
 * PDU opens a new one. The configuration (loaded once, from JSON, by
 * util/config.c) has a target with CHAP and mutual CHAP, one without CHAP
 * and one behind an ACL with per-initiator CHAP; the second variant adds
 * discovery CHAP and secrets of edge lengths.
 *
 * Input: one byte of mode (bit 0: configuration variant, bit 1: iSER portal,
 * bits 2-3: portal, bits 4-7: seed of the CHAP challenges), then records
 *   [op][flags][len, 16 bits big-endian][len bytes]
 * op & 7:
 *   0  Login Request: flags is the BHS flags byte (T, C, CSG, NSG), the
 *      bytes its text; op >> 3 toggles fields of the connection's BHS
 *      template (bit 0 ISID, 1 TSIH, 2 CID, 3 ITT, 4 Version-min)
 *   1  Text Request: flags bit 7 F, bit 6 C, bit 0 the last TTT we were
 *      given (else 0xffffffff), bit 1 a new ITT; the bytes its text
 *   2  the initiator's CHAP answer to the last challenge, computed here:
 *      flags bits 0-1 whose credentials (target, ACL, discovery, a wrong
 *      secret), bit 2 base64 (else hex), bit 3 mutual CHAP (CHAP_I is the
 *      first byte, CHAP_C the rest), bit 4 one bit of CHAP_R flipped,
 *      bit 5 T=1 to the operational stage, bit 6 T=1 to full feature phase
 *   3  a raw PDU: 48 bytes of BHS (its own DataSegmentLength bounds the
 *      data that follows), handed to the login or the text code by phase
 *   4  the connection closes; the next PDU opens a new one
 * Every answer is checked: a key appears once (SendTargets' TargetName and
 * TargetAddress excepted), the text ends with a NUL, flags and stages are
 * consistent, the negotiated parameters are within their ranges, and our
 * mutual CHAP answer is the right digest. A violation aborts.
 *
 * Seeds (corpus/fuzz_login/): the exchanges of tests/unit/test_login*.c and
 * of the initiators of tests/integration (libiscsi, open-iscsi) rebuilt by
 * tests/fuzz/gen_login_seeds.py.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/chap.h"
#include "core/iscsi_spec.h"
#include "core/login.h"
#include "core/params.h"
#include "core/pdu.h"
#include "fake_login.h"
#include "config/config.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "check failed: %s (line %d)\n", #x, __LINE__); abort(); } } while (0)

static const char *const cfg_json[2] = {
	"{ \"state_dir\": \"/nonexistent/isergw-fuzz\","
	"  \"portals\": ["
	"    { \"url\": \"tcp://192.0.2.10:3260\", \"tpgt\": 7, \"rel_port_id\": 1 },"
	"    { \"url\": \"tcp://0.0.0.0:3261\", \"rel_port_id\": 2 },"
	"    { \"url\": \"iser://[2001:db8::1]:3260\", \"rel_port_id\": 3, \"tpg_id\": 2 },"
	"    { \"url\": \"iser://192.0.2.10:3260\", \"rel_port_id\": 4, \"tpg_id\": 2 } ],"
	"  \"targets\": ["
	"    { \"iqn\": \"iqn.2026-01.org.isergw:chap\", \"alias\": \"chap disk\","
	"      \"chap\": { \"user\": \"iuser\", \"secret\": \"initiator-secret\" },"
	"      \"mutual_chap\": { \"user\": \"tuser\", \"secret\": \"target-secret-2\" } },"
	"    { \"iqn\": \"iqn.2026-01.org.isergw:open\", \"initial_r2t\": true,"
	"      \"immediate_data\": false, \"max_recv_dsl\": 8192, \"max_burst\": 65536,"
	"      \"first_burst\": 65536, \"max_outstanding_r2t\": 4 },"
	"    { \"iqn\": \"iqn.2026-01.org.isergw:acl\","
	"      \"acls\": [ { \"initiator\": \"iqn.1994-05.com.redhat:client2\","
	"                    \"chap\": { \"user\": \"acluser\", \"secret\": \"acl-secret-1234\" } },"
	"                  { \"initiator\": \"iqn.1994-05.com.redhat:client1\" } ] } ] }",
	"{ \"state_dir\": \"/nonexistent/isergw-fuzz\","
	"  \"discovery_chap\": { \"user\": \"disc\", \"secret\": \"discovery-secret-1\" },"
	"  \"portals\": ["
	"    { \"url\": \"tcp://[2001:db8::2]:3260\", \"rel_port_id\": 1 },"
	"    { \"url\": \"tcp://[::]:3262\", \"rel_port_id\": 2 },"
	"    { \"url\": \"iser://0.0.0.0:3260\", \"rel_port_id\": 3 },"
	"    { \"url\": \"tcp://198.51.100.7:3260\", \"tpgt\": 65535, \"rel_port_id\": 4 } ],"
	"  \"targets\": ["
	"    { \"iqn\": \"iqn.2026-01.org.isergw:chap\","
	"      \"chap\": { \"user\": \"u\", \"secret\": \"x\" },"
	"      \"mutual_chap\": { \"user\": \"a-rather-long-target-user-name-for-mutual-chap\","
	"        \"secret\": \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\" } },"
	"    { \"iqn\": \"iqn.2026-01.org.isergw:open\", \"max_recv_dsl\": 512,"
	"      \"max_burst\": 512, \"first_burst\": 512 },"
	"    { \"iqn\": \"eui.0123456789ABCDEF\", \"alias\": \"\\u00e9t\\u00e9\","
	"      \"acls\": [ { \"initiator\": \"iqn.1994-05.com.redhat:client2\","
	"                    \"chap\": { \"user\": \"acluser\", \"secret\": \"acl-secret-12\" } } ] } ] }",
};

static struct gw_config *cfgs[2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[512];

	(void)argc;
	(void)argv;
	/* ISERGW_FUZZ_LOG=1: every log line, to see what an input does */
	gw_log_set_level(getenv("ISERGW_FUZZ_LOG") ? GW_LOG_DEBUG : GW_LOG_ERR);
	for (size_t i = 0; i < 2; i++) {
		if (gw_config_load_string(cfg_json[i], &cfgs[i], err, sizeof(err))) {
			fprintf(stderr, "fuzz_login: configuration %zu: %s\n", i, err);
			abort();
		}
	}
	return 0;
}

/* ---------------- one connection ---------------- */

struct fz_conn {
	const struct gw_config *cfg;
	struct iscsi_login_env env;
	struct iscsi_login *login;
	struct iscsi_text *text;
	bool ffp, closed;
	/* the initiator's BHS template */
	uint8_t isid[6];
	uint16_t tsih, cid;
	uint32_t itt, cmd_sn;
	uint8_t vmin;
	/* the login answer gathered over C=1 responses */
	char *ans;
	size_t ans_len;
	int alg;
	uint8_t chap_id;
	char last_chal[2 * ISCSI_CHAP_DIGEST_MAX + 3];
	/* the CHAP challenge we sent as mutual CHAP_C (for checking the target's CHAP_R) */
	uint8_t mchal[ISCSI_CHAP_BIN_MAX];
	size_t mchal_len;
	uint8_t mid;
	bool mutual_pending;
	/* full feature phase */
	uint32_t max_xmit_dsl;
	uint32_t text_itt, last_ttt;
	char *tans;
	size_t tans_len;
};

static void conn_open(struct fz_conn *c, const struct gw_config *cfg, size_t portal)
{
	static const uint8_t isid[6] = { 0x80, 0x12, 0x34, 0x56, 0x00, 0x01 };
	const struct gw_portal_cfg *p = &cfg->portals[portal % cfg->nportals];

	memset(c, 0, sizeof(*c));
	c->cfg = cfg;
	c->env.cfg = cfg;
	c->env.portal = p;
	c->env.transport = p->transport;
	snprintf(c->env.peer_addr, sizeof(c->env.peer_addr), "192.0.2.99:51234");
	snprintf(c->env.local_addr, sizeof(c->env.local_addr),
		 strchr(p->addr, ':') ? "[%s]:%u" : "%s:%u",
		 strcmp(p->addr, "0.0.0.0") == 0 ? "192.0.2.11" :
		 strcmp(p->addr, "::") == 0 ? "2001:db8::11" : p->addr, p->port);
	if (iscsi_login_create(&c->env, &c->login) || iscsi_text_create(&c->text))
		abort();
	memcpy(c->isid, isid, sizeof(c->isid));
	c->cid = 1;
	c->itt = 0x1234;
	c->cmd_sn = 77;
	c->last_ttt = ISCSI_RSVD_TAG;
}

static void conn_close(struct fz_conn *c)
{
	iscsi_login_destroy(c->login);
	iscsi_text_destroy(c->text);
	free(c->ans);
	free(c->tans);
	c->login = NULL;
	c->text = NULL;
	c->ans = c->tans = NULL;
}

static void append(char **buf, size_t *len, const uint8_t *d, uint32_t n)
{
	char *nb;

	if (!n)
		return;
	nb = realloc(*buf, *len + n);
	if (!nb)
		abort();
	memcpy(nb + *len, d, n);
	*buf = nb;
	*len += n;
}

/* Digest of the mutual challenge with the target's secret: what its CHAP_R must be. */
static void check_mutual_answer(struct fz_conn *c, const struct gw_target_cfg *t)
{
	const char *n = fake_text_value(c->ans, c->ans_len, "CHAP_N", NULL);
	const char *r = fake_text_value(c->ans, c->ans_len, "CHAP_R", NULL);
	uint8_t want[ISCSI_CHAP_DIGEST_MAX], got[ISCSI_CHAP_BIN_MAX];
	size_t wlen = 0, glen = 0;

	CHECK(n && r && t);
	CHECK(strcmp(n, t->mutual_chap.user) == 0);
	CHECK(iscsi_chap_digest(c->alg, c->mid, t->mutual_chap.secret,
				strlen(t->mutual_chap.secret), c->mchal, c->mchal_len, want,
				&wlen) == 0);
	CHECK(iscsi_parse_binary(r, got, sizeof(got), &glen) == 0);
	CHECK(glen == wlen && memcmp(got, want, wlen) == 0);
}

/* One complete login answer (the last part had C=0). */
static void login_answer_done(struct fz_conn *c)
{
	const char *v;
	uint64_t n;

	fake_check_text(c->ans, c->ans_len, NULL);
	v = fake_text_value(c->ans, c->ans_len, "CHAP_A", NULL);
	if (v) {
		CHECK(iscsi_parse_number(v, &n) == 0 && iscsi_chap_digest_len((int)n));
		c->alg = (int)n;
		v = fake_text_value(c->ans, c->ans_len, "CHAP_I", NULL);
		CHECK(v && iscsi_parse_number(v, &n) == 0 && n <= 255);
		c->chap_id = (uint8_t)n;
		v = fake_text_value(c->ans, c->ans_len, "CHAP_C", NULL);
		CHECK(v && strlen(v) == 2 + 2 * iscsi_chap_digest_len(c->alg));
		snprintf(c->last_chal, sizeof(c->last_chal), "%s", v);
	}
	if (c->mutual_pending && fake_text_value(c->ans, c->ans_len, "CHAP_R", NULL))
		check_mutual_answer(c, iscsi_login_target(c->login));
	c->mutual_pending = false;
}

static void check_params(const struct fz_conn *c)
{
	const struct iscsi_sess_params *sp = iscsi_login_sess_params(c->login);
	const struct iscsi_conn_params *cp = iscsi_login_conn_params(c->login);

	CHECK(sp->first_burst <= sp->max_burst);
	CHECK(sp->erl == 0);
	CHECK(sp->max_connections >= 1);
	CHECK(sp->max_outstanding_r2t >= 1 && sp->max_outstanding_r2t <= 65535);
	CHECK(sp->default_time2wait <= 3600 && sp->default_time2retain <= 3600);
	CHECK(cp->max_recv_dsl >= 512 && cp->max_recv_dsl <= 16777215);
	CHECK(cp->max_xmit_dsl >= 512 && cp->max_xmit_dsl <= 16777215);
	if (c->env.transport == GW_TRANSPORT_ISER) {
		CHECK(!cp->header_digest && !cp->data_digest);
		if (cp->rdma_extensions)
			CHECK(cp->max_recv_dsl <= ISCSI_ISER_RECV_DSL);
	}
	if (iscsi_login_session_type(c->login) == ISCSI_SESSION_NORMAL)
		CHECK(iscsi_login_target(c->login) != NULL);
	CHECK(iscsi_login_initiator_name(c->login)[0]);
}

static void login_pdu(struct fz_conn *c, const struct iscsi_login_req *req, const uint8_t *d,
		      uint32_t dlen)
{
	struct iscsi_login_rsp rsp;
	const uint8_t *rd = NULL;
	uint32_t rdlen = 0;
	enum iscsi_login_result res;

	res = iscsi_login_rx(c->login, req, d, dlen, &rsp, &rd, &rdlen);
	CHECK(rsp.opcode == ISCSI_OP_LOGIN_RSP);
	CHECK(memcmp(rsp.isid, req->isid, 6) == 0 && rsp.itt == req->itt);
	CHECK(get_be24(rsp.data_seg_len) == rdlen && rdlen <= ISCSI_LOGIN_PDU_DSL);
	CHECK(!(rsp.flags & ISCSI_LOGIN_TRANSIT) || !(rsp.flags & ISCSI_LOGIN_CONTINUE));
	CHECK(rsp.version_max == 0 && rsp.version_active == 0 && rsp.tsih == 0);
	if (res == ISCSI_LOGIN_RES_FAIL) {
		CHECK(rsp.status_class != 0 && rdlen == 0);
		/* the connection is closed after the answer (conn.c) */
		c->closed = true;
		return;
	}
	CHECK(rsp.status_class == 0 && rsp.status_detail == 0);
	if (rsp.flags & ISCSI_LOGIN_TRANSIT) {
		int csg = (rsp.flags & ISCSI_LOGIN_CSG_MASK) >> ISCSI_LOGIN_CSG_SHIFT;
		int nsg = rsp.flags & ISCSI_LOGIN_NSG_MASK;

		CHECK(nsg > csg && nsg != 2);
		CHECK((res == ISCSI_LOGIN_RES_DONE) == (nsg == ISCSI_STAGE_FULL_FEATURE));
		/* the target moves only where the initiator asked (or earlier) */
		CHECK(req->flags & ISCSI_LOGIN_TRANSIT);
		CHECK(nsg <= (req->flags & ISCSI_LOGIN_NSG_MASK));
	} else {
		CHECK(res != ISCSI_LOGIN_RES_DONE);
	}
	append(&c->ans, &c->ans_len, rd, rdlen);
	if (!(rsp.flags & ISCSI_LOGIN_CONTINUE)) {
		login_answer_done(c);
		free(c->ans);
		c->ans = NULL;
		c->ans_len = 0;
	}
	if (res == ISCSI_LOGIN_RES_DONE) {
		check_params(c);
		c->ffp = true;
		c->max_xmit_dsl = iscsi_login_conn_params(c->login)->max_xmit_dsl;
		c->text_itt = c->itt + 1;
	}
}

static void text_answer_done(struct fz_conn *c)
{
	static const char *const rep[] = { "TargetName", "TargetAddress", NULL };
	size_t off = 0;
	bool named = false;

	fake_check_text(c->tans, c->tans_len, rep);
	/* SendTargets: every TargetAddress follows a TargetName (a key sent by the initiator: Reject) */
	while (off < c->tans_len) {
		const char *e = c->tans + off;

		if (strncmp(e, "TargetName=", 11) == 0 && strcmp(e + 11, "Reject") != 0)
			named = true;
		else if (strncmp(e, "TargetAddress=", 14) == 0 && strcmp(e + 14, "Reject") != 0)
			CHECK(named);
		off += strlen(e) + 1;
	}
}

static void text_pdu(struct fz_conn *c, const struct iscsi_text_req *req, const uint8_t *d,
		     uint32_t dlen)
{
	struct iscsi_text_env env;
	struct iscsi_text_rsp rsp;
	const uint8_t *rd = NULL;
	uint32_t rdlen = 0, mx;
	int rc;

	memset(&env, 0, sizeof(env));
	env.cfg = c->cfg;
	env.session_type = iscsi_login_session_type(c->login);
	env.target = iscsi_login_target(c->login);
	env.initiator_name = iscsi_login_initiator_name(c->login);
	env.local_addr = c->env.local_addr;
	env.max_xmit_dsl = c->max_xmit_dsl;
	rc = iscsi_text_rx(c->text, &env, req, d, dlen, &rsp, &rd, &rdlen);
	if (rc) {
		/* a Reject; the connection stays */
		CHECK(rc == -EPROTO || rc == -ENOMEM);
		free(c->tans);
		c->tans = NULL;
		c->tans_len = 0;
		return;
	}
	mx = c->max_xmit_dsl ? c->max_xmit_dsl : ISCSI_DEFAULT_MRDSL;
	CHECK(rsp.opcode == ISCSI_OP_TEXT_RSP && rsp.itt == req->itt);
	CHECK(get_be24(rsp.data_seg_len) == rdlen && rdlen <= mx);
	CHECK(!(rsp.flags & ISCSI_FLAG_FINAL) || !(rsp.flags & ISCSI_FLAG_CONTINUE));
	if (rsp.flags & ISCSI_FLAG_FINAL)
		CHECK(be32toh(rsp.ttt) == ISCSI_RSVD_TAG);
	else
		CHECK(be32toh(rsp.ttt) != ISCSI_RSVD_TAG);
	c->last_ttt = be32toh(rsp.ttt);
	if (iscsi_text_declared_max_xmit_dsl(c->text)) {
		c->max_xmit_dsl = iscsi_text_declared_max_xmit_dsl(c->text);
		CHECK(c->max_xmit_dsl >= 512 && c->max_xmit_dsl <= 16777215);
	}
	append(&c->tans, &c->tans_len, rd, rdlen);
	if (!(rsp.flags & ISCSI_FLAG_CONTINUE)) {
		text_answer_done(c);
		free(c->tans);
		c->tans = NULL;
		c->tans_len = 0;
	}
}

static void fill_login_req(const struct fz_conn *c, struct iscsi_login_req *req, uint8_t flags,
			   uint32_t dlen)
{
	memset(req, 0, sizeof(*req));
	req->opcode = ISCSI_OP_LOGIN_REQ | ISCSI_OP_IMMEDIATE;
	req->flags = flags;
	req->version_max = 0;
	req->version_min = c->vmin;
	put_be24(req->data_seg_len, dlen);
	memcpy(req->isid, c->isid, 6);
	req->tsih = htobe16(c->tsih);
	req->itt = htobe32(c->itt);
	req->cid = htobe16(c->cid);
	req->cmd_sn = htobe32(c->cmd_sn);
	req->exp_stat_sn = htobe32(1);
}

/* The initiator's CHAP_N/CHAP_R (and mutual CHAP_I/CHAP_C) for the last challenge. */
static void chap_answer(struct fz_conn *c, uint8_t flags, const uint8_t *d, size_t n)
{
	const struct gw_config *cfg = c->cfg;
	const struct gw_chap_cfg *cred;
	const char *chal_s = NULL;
	uint8_t chal[ISCSI_CHAP_BIN_MAX], dig[ISCSI_CHAP_DIGEST_MAX];
	char text[6144], enc[2 * ISCSI_CHAP_BIN_MAX + 8];
	size_t clen = 0, dlen = 0, tl = 0;
	struct iscsi_login_req req;
	const char *secret;
	int k;

	switch (flags & 3) {
	case 0: cred = &cfg->targets[0].chap; break;
	case 1: cred = &cfg->targets[2].acls[0].chap; break;
	case 2: cred = &cfg->discovery_chap; break;
	default: cred = &cfg->targets[0].chap; break;
	}
	secret = (flags & 3) == 3 ? "not-the-secret" : cred->secret;
	if (c->last_chal[0])
		chal_s = c->last_chal;
	if (!chal_s || iscsi_parse_binary(chal_s, chal, sizeof(chal), &clen) || !c->alg)
		clen = 0;
	if (iscsi_chap_digest(c->alg ? c->alg : ISCSI_CHAP_ALG_MD5, c->chap_id, secret,
			      strlen(secret), chal, clen, dig, &dlen))
		abort();
	if (flags & 0x10)
		dig[0] ^= 1;
	if (flags & 4)
		k = fake_encode_base64(dig, dlen, enc, sizeof(enc), 0);
	else
		k = iscsi_encode_hex(dig, dlen, enc, sizeof(enc));
	if (k)
		abort();
	tl += (size_t)snprintf(text + tl, sizeof(text) - tl, "CHAP_N=%s", cred->user) + 1;
	tl += (size_t)snprintf(text + tl, sizeof(text) - tl, "CHAP_R=%s", enc) + 1;
	if ((flags & 8) && n >= 1) {
		c->mid = d[0];
		c->mchal_len = n - 1 > 512 ? 512 : n - 1;
		memcpy(c->mchal, d + 1, c->mchal_len);
		if (flags & 4)
			k = fake_encode_base64(c->mchal, c->mchal_len, enc, sizeof(enc), 0);
		else
			k = iscsi_encode_hex(c->mchal, c->mchal_len, enc, sizeof(enc));
		if (k)
			abort();
		tl += (size_t)snprintf(text + tl, sizeof(text) - tl, "CHAP_I=%u", c->mid) + 1;
		tl += (size_t)snprintf(text + tl, sizeof(text) - tl, "CHAP_C=%s", enc) + 1;
		c->mutual_pending = c->mchal_len > 0;
	}
	fill_login_req(c, &req,
		       (flags & 0x40) ? ISCSI_LOGIN_TRANSIT | ISCSI_STAGE_FULL_FEATURE :
		       (flags & 0x20) ? ISCSI_LOGIN_TRANSIT | ISCSI_STAGE_OPERATIONAL : 0,
		       (uint32_t)tl);
	login_pdu(c, &req, (const uint8_t *)text, (uint32_t)tl);
}

/* ---------------- the input ---------------- */

static uint16_t be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct gw_config *cfg;
	struct fz_conn c;
	size_t off = 1, portal;
	uint8_t mode;

	if (size < 1)
		return 0;
	mode = data[0];
	cfg = cfgs[mode & 1];
	/* bit 1: an iSER portal (2 and 3), else a TCP one (0 and 1); bits 2-3 pick within */
	portal = (mode & 2) ? 2 + ((mode >> 2) & 1) : ((mode >> 2) & 1);
	if (mode & 8)
		portal ^= 1;
	fake_random_reset(mode >> 4);
	conn_open(&c, cfg, portal);
	while (off + 4 <= size) {
		uint8_t op = data[off], flags = data[off + 1];
		size_t len = be16_at(data + off + 2);
		const uint8_t *d = data + off + 4;

		off += 4;
		if (len > size - off)
			len = size - off;
		off += len;
		if (c.closed) {
			/* the initiator connects again */
			conn_close(&c);
			conn_open(&c, cfg, portal);
		}
		switch (op & 7) {
		case 0: {
			struct iscsi_login_req req;

			if (op & 0x08)
				c.isid[5] ^= 1;
			if (op & 0x10)
				c.tsih ^= 1;
			if (op & 0x20)
				c.cid ^= 1;
			if (op & 0x40)
				c.itt ^= 1;
			if (op & 0x80)
				c.vmin ^= 1;
			if (c.ffp) {
				/* conn.c answers a Login Request in full feature phase with a Reject */
				break;
			}
			fill_login_req(&c, &req, flags, (uint32_t)len);
			login_pdu(&c, &req, d, (uint32_t)len);
			break;
		}
		case 1: {
			struct iscsi_text_req req;

			if (!c.ffp) {
				/* conn.c: a non-login PDU during login drops the connection */
				c.closed = true;
				break;
			}
			if (flags & 2)
				c.text_itt++;
			memset(&req, 0, sizeof(req));
			req.opcode = ISCSI_OP_TEXT_REQ;
			req.flags = flags & (ISCSI_FLAG_FINAL | ISCSI_FLAG_CONTINUE);
			put_be24(req.data_seg_len, (uint32_t)len);
			req.itt = htobe32(c.text_itt);
			req.ttt = htobe32((flags & 1) ? c.last_ttt : ISCSI_RSVD_TAG);
			req.cmd_sn = htobe32(c.cmd_sn);
			text_pdu(&c, &req, d, (uint32_t)len);
			break;
		}
		case 2:
			if (!c.ffp)
				chap_answer(&c, flags, d, len);
			break;
		case 3: {
			union {
				struct iscsi_bhs bhs;
				struct iscsi_login_req login;
				struct iscsi_text_req text;
			} u;
			uint32_t dsl;

			if (len < ISCSI_BHS_LEN)
				break;
			memcpy(&u, d, ISCSI_BHS_LEN);
			dsl = get_be24(u.bhs.data_seg_len);
			if (dsl > len - ISCSI_BHS_LEN)
				dsl = (uint32_t)(len - ISCSI_BHS_LEN);
			if (!c.ffp)
				login_pdu(&c, &u.login, d + ISCSI_BHS_LEN, dsl);
			else if (iscsi_bhs_opcode(&u.bhs) == ISCSI_OP_TEXT_REQ)
				text_pdu(&c, &u.text, d + ISCSI_BHS_LEN, dsl);
			break;
		}
		case 4:
			c.closed = true;
			break;
		default:
			break;
		}
	}
	conn_close(&c);
	return 0;
}
