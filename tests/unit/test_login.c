// LINK: gw_proto isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for core/login.c: whole logins driven by synthesized Login
 * Request PDUs (stages, CHAP, ACLs, failures, key negotiation, C bit).
 */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "core/iscsi_spec.h"
#include "core/login.h"
#include "config/config.h"
#include "common/log.h"

#include "test_text_keys.h"

/* ---------------- log capture (replaces util/log.c for this program) ---------------- */

static char logbuf[65536];
static size_t loglen;

void gw_log(enum gw_log_level lvl, const char *comp, const char *fmt, ...)
{
	va_list ap;
	int n;

	(void)lvl;
	if (loglen >= sizeof(logbuf) - 1)
		return;
	n = snprintf(logbuf + loglen, sizeof(logbuf) - loglen, "[%s] ", comp);
	if (n > 0)
		loglen += (size_t)n < sizeof(logbuf) - loglen ? (size_t)n : sizeof(logbuf) - loglen - 1;
	va_start(ap, fmt);
	n = vsnprintf(logbuf + loglen, sizeof(logbuf) - loglen, fmt, ap);
	va_end(ap);
	if (n > 0)
		loglen += (size_t)n < sizeof(logbuf) - loglen ? (size_t)n : sizeof(logbuf) - loglen - 1;
	if (loglen < sizeof(logbuf) - 1)
		logbuf[loglen++] = '\n';
	logbuf[loglen] = '\0';
}

enum gw_log_level gw_log_get_level(void)
{
	return GW_LOG_DEBUG;
}

static bool log_has(const char *s)
{
	return strstr(logbuf, s) != NULL;
}

/* ---------------- configuration built by hand ---------------- */

#define T0 "iqn.2026-01.org.isergw:t0"
#define T1 "iqn.2026-01.org.isergw:t1"
#define INAME "iqn.1994-05.com.redhat:client1"
#define INAME2 "iqn.1994-05.com.redhat:client2"
#define PEER "192.0.2.99:51234"

static struct gw_portal_cfg portals[2];
static struct gw_target_cfg targets[2];
static struct gw_acl_cfg acls[2];
static struct gw_config cfg;

static void target_init(struct gw_target_cfg *t, const char *iqn)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->iqn, sizeof(t->iqn), "%s", iqn);
	t->max_recv_dsl = 262144;
	t->max_burst = 16776192;
	t->first_burst = 262144;
	t->max_outstanding_r2t = 1;
	t->initial_r2t = false;
	t->immediate_data = true;
	t->queue_depth = 128;
}

static void cfg_reset(void)
{
	memset(&cfg, 0, sizeof(cfg));
	memset(portals, 0, sizeof(portals));
	memset(acls, 0, sizeof(acls));
	portals[0].transport = GW_TRANSPORT_TCP;
	snprintf(portals[0].addr, sizeof(portals[0].addr), "192.0.2.10");
	portals[0].port = 3260;
	portals[0].tpgt = 7;
	target_init(&targets[0], T0);
	snprintf(targets[0].alias, sizeof(targets[0].alias), "disk zero");
	target_init(&targets[1], T1);
	snprintf(acls[0].initiator, sizeof(acls[0].initiator), "%s", INAME2);
	targets[1].acls = acls;
	targets[1].nacls = 1;
	cfg.portals = portals;
	cfg.nportals = 1;
	cfg.targets = targets;
	cfg.ntargets = 2;
	cfg.login_timeout_s = 15;
	loglen = 0;
	logbuf[0] = '\0';
}

static void set_chap(struct gw_chap_cfg *c, const char *user, const char *secret)
{
	snprintf(c->user, sizeof(c->user), "%s", user);
	snprintf(c->secret, sizeof(c->secret), "%s", secret);
}

/* ---------------- driving a login ---------------- */

#define FL(t, c, csg, nsg) \
	(uint8_t)(((t) ? 0x80 : 0) | ((c) ? 0x40 : 0) | ((csg) << 2) | ((t) ? (nsg) : 0))

struct lt {
	struct iscsi_login *l;
	struct iscsi_login_env env;
	struct iscsi_login_rsp rsp;
	const uint8_t *rd;
	uint32_t rdlen;
	uint8_t isid[6];
	uint16_t tsih, cid;
	uint32_t itt, cmd_sn;
	uint8_t vmin, vmax;
};

static void lt_start(struct lt *t, enum gw_transport tr)
{
	static const uint8_t isid[6] = { 0x80, 0x12, 0x34, 0x56, 0x00, 0x01 };

	memset(t, 0, sizeof(*t));
	t->env.cfg = &cfg;
	t->env.portal = &portals[0];
	t->env.transport = tr;
	snprintf(t->env.peer_addr, sizeof(t->env.peer_addr), PEER);
	snprintf(t->env.local_addr, sizeof(t->env.local_addr), "192.0.2.10:3260");
	memcpy(t->isid, isid, 6);
	t->itt = 0x1234;
	t->cmd_sn = 77;
	assert_int_equal(iscsi_login_create(&t->env, &t->l), 0);
}

static void lt_end(struct lt *t)
{
	iscsi_login_destroy(t->l);
	t->l = NULL;
}

static enum iscsi_login_result lt_send(struct lt *t, uint8_t flags, const void *text, size_t len)
{
	struct iscsi_login_req req;

	memset(&req, 0, sizeof(req));
	req.opcode = ISCSI_OP_LOGIN_REQ | ISCSI_OP_IMMEDIATE;
	req.flags = flags;
	req.version_max = t->vmax;
	req.version_min = t->vmin;
	req.data_seg_len[0] = (uint8_t)(len >> 16);
	req.data_seg_len[1] = (uint8_t)(len >> 8);
	req.data_seg_len[2] = (uint8_t)len;
	memcpy(req.isid, t->isid, 6);
	req.tsih = htobe16(t->tsih);
	req.itt = htobe32(t->itt);
	req.cid = htobe16(t->cid);
	req.cmd_sn = htobe32(t->cmd_sn);
	req.exp_stat_sn = htobe32(1);
	return iscsi_login_rx(t->l, &req, text, (uint32_t)len, &t->rsp, &t->rd, &t->rdlen);
}

/* Join "k=v" strings into NUL-separated text; returns its length. */
static size_t mk(char *buf, size_t sz, ...)
{
	va_list ap;
	size_t len;

	va_start(ap, sz);
	len = keys_join(buf, sz, ap);
	va_end(ap);
	return len;
}
#define TXT(buf, ...) mk(buf, sizeof(buf), __VA_ARGS__, (const char *)NULL)

static enum iscsi_login_result lt_sendv(struct lt *t, unsigned int flags, ...)
{
	char buf[8192];
	size_t len;
	va_list ap;

	va_start(ap, flags);
	len = keys_join(buf, sizeof(buf), ap);
	va_end(ap);
	return lt_send(t, (uint8_t)flags, buf, len);
}
#define SEND(t, flags, ...) lt_sendv(t, flags, __VA_ARGS__, (const char *)NULL)

static uint32_t rsp_dsl(const struct lt *t)
{
	return ((uint32_t)t->rsp.data_seg_len[0] << 16) | ((uint32_t)t->rsp.data_seg_len[1] << 8) |
	       t->rsp.data_seg_len[2];
}

/* Value of key in the last response (NULL if absent); *count: occurrences. */
static const char *rsp_val_n(const struct lt *t, const char *key, int *count)
{
	static char val[4096];
	const char *p = (const char *)t->rd, *end = p + t->rdlen, *found = NULL;
	size_t kl = strlen(key);

	*count = 0;
	assert_int_equal(rsp_dsl(t), t->rdlen);
	if (t->rdlen)
		assert_int_equal(p[t->rdlen - 1], '\0');
	while (p < end) {
		size_t l = strlen(p);

		if (l > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
			if (!found)
				found = p + kl + 1;
			(*count)++;
		}
		p += l + 1;
	}
	if (!found)
		return NULL;
	snprintf(val, sizeof(val), "%s", found);
	return val;
}

static const char *rsp_val(const struct lt *t, const char *key)
{
	int n;
	const char *v = rsp_val_n(t, key, &n);

	assert_true(n <= 1);
	return v;
}

static void assert_status(const struct lt *t, uint8_t cls, uint8_t detail)
{
	assert_int_equal(t->rsp.opcode, ISCSI_OP_LOGIN_RSP);
	assert_int_equal(t->rsp.status_class, cls);
	assert_int_equal(t->rsp.status_detail, detail);
	assert_int_equal(t->rsp.version_max, 0);
	assert_int_equal(t->rsp.version_active, 0);
	assert_memory_equal(t->rsp.isid, t->isid, 6);
	assert_int_equal(be32toh(t->rsp.itt), t->itt);
	assert_int_equal(t->rsp.tsih, 0);
}

static void assert_fail(struct lt *t, enum iscsi_login_result res, uint8_t detail)
{
	assert_int_equal(res, ISCSI_LOGIN_RES_FAIL);
	assert_status(t, ISCSI_LOGIN_STATUS_INIT_ERR, detail);
	assert_int_equal(t->rdlen, 0);
	assert_int_equal(t->rsp.flags & ISCSI_LOGIN_TRANSIT, 0);
}

static void assert_flags(const struct lt *t, uint8_t flags)
{
	assert_int_equal(t->rsp.flags, flags);
}

/* Operational keys as libiscsi sends them. */
#define OPKEYS                                                                           \
	"HeaderDigest=None", "DataDigest=None", "InitialR2T=No", "ImmediateData=Yes",    \
		"MaxBurstLength=262144", "FirstBurstLength=262144",                     \
		"DefaultTime2Wait=2", "DefaultTime2Retain=0", "MaxOutstandingR2T=1",    \
		"ErrorRecoveryLevel=0", "IFMarker=No", "OFMarker=No", "MaxConnections=1", \
		"MaxRecvDataSegmentLength=262144", "DataPDUInOrder=Yes",                \
		"DataSequenceInOrder=Yes"

/* ---------------- CHAP helper computed independently with libcrypto ---------------- */

static int hexv(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static size_t unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	assert_true(s[0] == '0' && (s[1] == 'x' || s[1] == 'X'));
	s += 2;
	while (s[0] && s[1]) {
		assert_true(n < max);
		out[n++] = (uint8_t)(hexv(s[0]) << 4 | hexv(s[1]));
		s += 2;
	}
	return n;
}

static void tohex(const uint8_t *in, size_t n, char *out)
{
	size_t i;

	out[0] = '0';
	out[1] = 'x';
	for (i = 0; i < n; i++)
		snprintf(out + 2 + 2 * i, 3, "%02X", in[i]); /* upper case: both must be accepted */
}

static size_t chap_hash(const EVP_MD *md, uint8_t id, const char *secret, const uint8_t *c,
			size_t clen, uint8_t *out)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int len = 0;

	assert_non_null(ctx);
	assert_int_equal(EVP_DigestInit_ex(ctx, md, NULL), 1);
	assert_int_equal(EVP_DigestUpdate(ctx, &id, 1), 1);
	assert_int_equal(EVP_DigestUpdate(ctx, secret, strlen(secret)), 1);
	assert_int_equal(EVP_DigestUpdate(ctx, c, clen), 1);
	assert_int_equal(EVP_DigestFinal_ex(ctx, out, &len), 1);
	EVP_MD_CTX_free(ctx);
	return len;
}

/* From the last response's CHAP_I/CHAP_C, compute "0x..." CHAP_R with secret. */
static void chap_answer(const struct lt *t, const EVP_MD *md, const char *secret, char *resp,
			uint8_t *chal_out, size_t *chal_len)
{
	uint8_t chal[1024], dig[64];
	const char *i = rsp_val(t, "CHAP_I"), *c;
	unsigned long id;
	size_t clen, dlen;

	assert_non_null(i);
	id = strtoul(i, NULL, 10);
	assert_true(id <= 255);
	c = rsp_val(t, "CHAP_C");
	assert_non_null(c);
	clen = unhex(c, chal, sizeof(chal));
	assert_true(clen >= 16);
	dlen = chap_hash(md, (uint8_t)id, secret, chal, clen, dig);
	tohex(dig, dlen, resp);
	if (chal_out) {
		memcpy(chal_out, chal, clen);
		*chal_len = clen;
	}
}

/* ---------------- tests: stages ---------------- */

static void test_discovery_no_chap(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "SessionType=Discovery",
		 "HeaderDigest=None", "DataDigest=None", "MaxRecvDataSegmentLength=65536",
		 "DefaultTime2Wait=2", "InitialR2T=Yes", "ErrorRecoveryLevel=0");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_status(&t, 0, 0);
	assert_flags(&t, FL(1, 0, 1, 3));
	assert_string_equal(rsp_val(&t, "HeaderDigest"), "None");
	assert_string_equal(rsp_val(&t, "InitialR2T"), "Irrelevant");
	assert_string_equal(rsp_val(&t, "ErrorRecoveryLevel"), "0");
	assert_string_equal(rsp_val(&t, "DefaultTime2Wait"), "2");
	assert_string_equal(rsp_val(&t, "MaxRecvDataSegmentLength"), "8192");
	assert_null(rsp_val(&t, "TargetPortalGroupTag"));
	assert_int_equal(iscsi_login_session_type(t.l), ISCSI_SESSION_DISCOVERY);
	assert_null(iscsi_login_target(t.l));
	assert_string_equal(iscsi_login_initiator_name(t.l), INAME);
	assert_string_equal(iscsi_login_initiator_alias(t.l), "");
	assert_int_equal(iscsi_login_conn_params(t.l)->max_xmit_dsl, 65536);
	assert_int_equal(iscsi_login_conn_params(t.l)->max_recv_dsl, 8192);
	assert_int_equal(iscsi_login_first_cmdsn(t.l), 77);
	assert_int_equal(iscsi_login_cid(t.l), 0);
	assert_int_equal(iscsi_login_tsih(t.l), 0);
	lt_end(&t);
}

static void test_normal_security_operational_ffp(void **state)
{
	struct lt t;
	enum iscsi_login_result r;
	uint8_t isid[6];

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	t.cid = 3;
	r = SEND(&t, FL(1, 0, 0, 1), "InitiatorName=" INAME, "InitiatorAlias=client one",
		 "TargetName=" T0, "SessionType=Normal", "AuthMethod=None");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_status(&t, 0, 0);
	assert_flags(&t, FL(1, 0, 0, 1));
	assert_string_equal(rsp_val(&t, "AuthMethod"), "None");
	assert_string_equal(rsp_val(&t, "TargetPortalGroupTag"), "7");
	assert_string_equal(rsp_val(&t, "TargetAlias"), "disk zero");
	assert_null(rsp_val(&t, "MaxRecvDataSegmentLength")); /* not in the security stage */

	/* libiscsi re-declares its identity keys in the operational stage */
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "InitiatorAlias=client one",
		 "TargetName=" T0, "SessionType=Normal", OPKEYS);
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_status(&t, 0, 0);
	assert_flags(&t, FL(1, 0, 1, 3));
	assert_null(rsp_val(&t, "TargetPortalGroupTag")); /* only in the first response */
	assert_string_equal(rsp_val(&t, "MaxRecvDataSegmentLength"), "262144");
	assert_string_equal(rsp_val(&t, "InitialR2T"), "No");
	assert_string_equal(rsp_val(&t, "ImmediateData"), "Yes");
	assert_string_equal(rsp_val(&t, "MaxBurstLength"), "262144");
	assert_string_equal(rsp_val(&t, "FirstBurstLength"), "262144");
	assert_string_equal(rsp_val(&t, "DefaultTime2Retain"), "0");
	assert_string_equal(rsp_val(&t, "IFMarker"), "No");
	assert_string_equal(rsp_val(&t, "MaxConnections"), "1");
	assert_string_equal(rsp_val(&t, "DataPDUInOrder"), "Yes");
	assert_ptr_equal(iscsi_login_target(t.l), &targets[0]);
	assert_int_equal(iscsi_login_session_type(t.l), ISCSI_SESSION_NORMAL);
	assert_string_equal(iscsi_login_initiator_alias(t.l), "client one");
	assert_int_equal(iscsi_login_cid(t.l), 3);
	iscsi_login_isid(t.l, isid);
	assert_memory_equal(isid, t.isid, 6);
	assert_false(iscsi_login_sess_params(t.l)->initial_r2t);
	assert_true(iscsi_login_sess_params(t.l)->immediate_data);
	assert_int_equal(iscsi_login_sess_params(t.l)->max_burst, 262144);
	assert_int_equal(iscsi_login_sess_params(t.l)->erl, 0);
	assert_int_equal(iscsi_login_conn_params(t.l)->max_recv_dsl, 262144);
	assert_int_equal(iscsi_login_conn_params(t.l)->max_xmit_dsl, 262144);

	/* a Login Request after full feature phase started */
	r = SEND(&t, FL(1, 0, 1, 3), "X-foo=1");
	assert_int_equal(r, ISCSI_LOGIN_RES_FAIL);
	lt_end(&t);
}

static void test_direct_to_ffp(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0, OPKEYS);
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_flags(&t, FL(1, 0, 1, 3));
	assert_string_equal(rsp_val(&t, "TargetPortalGroupTag"), "7");
	assert_string_equal(rsp_val(&t, "MaxRecvDataSegmentLength"), "262144");
	lt_end(&t);
}

static void test_security_straight_to_ffp(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 0, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "AuthMethod=None");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_flags(&t, FL(1, 0, 0, 3));
	assert_null(rsp_val(&t, "MaxRecvDataSegmentLength"));
	/* nothing declared: RFC defaults both ways */
	assert_int_equal(iscsi_login_conn_params(t.l)->max_recv_dsl, 8192);
	assert_int_equal(iscsi_login_conn_params(t.l)->max_xmit_dsl, 8192);
	assert_true(iscsi_login_sess_params(t.l)->initial_r2t);
	assert_int_equal(iscsi_login_sess_params(t.l)->first_burst, 65536);
	lt_end(&t);
}

static void test_target_proposes_keys(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	targets[0].immediate_data = false;
	targets[0].max_burst = 131072;
	lt_start(&t, GW_TRANSPORT_TCP);
	/* security -> FFP requested, but our config needs operational negotiation */
	r = SEND(&t, FL(1, 0, 0, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "AuthMethod=None");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_flags(&t, FL(1, 0, 0, 1));
	/* the initiator offers nothing about ImmediateData / MaxBurstLength */
	r = SEND(&t, FL(1, 0, 1, 3), "HeaderDigest=None");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_flags(&t, FL(0, 0, 1, 0));
	assert_string_equal(rsp_val(&t, "ImmediateData"), "No");
	assert_string_equal(rsp_val(&t, "MaxBurstLength"), "131072");
	/* asking again without answering: failure */
	r = SEND(&t, FL(1, 0, 1, 3), "DataDigest=None");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);

	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0);
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_flags(&t, FL(0, 0, 1, 0));
	r = SEND(&t, FL(1, 0, 1, 3), "ImmediateData=No", "MaxBurstLength=65536");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_int_equal(t.rdlen, 0);
	assert_false(iscsi_login_sess_params(t.l)->immediate_data);
	assert_int_equal(iscsi_login_sess_params(t.l)->max_burst, 65536);
	assert_int_equal(iscsi_login_sess_params(t.l)->first_burst, 65536);
	lt_end(&t);
}

static void test_transit_only_when_asked(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 1, 0), "InitiatorName=" INAME, "TargetName=" T0,
		 "HeaderDigest=CRC32C,None");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_flags(&t, FL(0, 0, 1, 0));
	assert_string_equal(rsp_val(&t, "HeaderDigest"), "CRC32C");
	r = SEND(&t, FL(1, 0, 1, 3), "DataDigest=None,CRC32C");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "DataDigest"), "None");
	assert_true(iscsi_login_conn_params(t.l)->header_digest);
	assert_false(iscsi_login_conn_params(t.l)->data_digest);
	lt_end(&t);
}

/* ---------------- tests: CHAP ---------------- */

static void chap_login(const EVP_MD *md, const char *alist, const char *alg_expect)
{
	struct lt t;
	enum iscsi_login_result r;
	char resp[200];

	cfg_reset();
	set_chap(&targets[0].chap, "alice", "alicesecret123");
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 0, 1), "InitiatorName=" INAME, "TargetName=" T0,
		 "SessionType=Normal", "AuthMethod=None,CHAP");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_flags(&t, FL(0, 0, 0, 0)); /* not authenticated yet: no transit */
	assert_string_equal(rsp_val(&t, "AuthMethod"), "CHAP");
	r = SEND(&t, FL(0, 0, 0, 1), alist);
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_string_equal(rsp_val(&t, "CHAP_A"), alg_expect);
	chap_answer(&t, md, "alicesecret123", resp, NULL, NULL);
	{
		char n[64], rr[256];

		snprintf(n, sizeof(n), "CHAP_N=alice");
		snprintf(rr, sizeof(rr), "CHAP_R=%s", resp);
		r = SEND(&t, FL(1, 0, 0, 1), n, rr);
	}
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_status(&t, 0, 0);
	assert_flags(&t, FL(1, 0, 0, 1));
	r = SEND(&t, FL(1, 0, 1, 3), OPKEYS);
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_true(log_has("authenticated with CHAP"));
	lt_end(&t);
}

static void test_chap_md5(void **state)
{
	(void)state;
	chap_login(EVP_md5(), "CHAP_A=5", "5");
}

static void test_chap_sha256(void **state)
{
	(void)state;
	chap_login(EVP_sha256(), "CHAP_A=7,5", "7");
	chap_login(EVP_md5(), "CHAP_A=6,5,7", "5");
}

static void chap_until_challenge(struct lt *t)
{
	enum iscsi_login_result r;

	r = SEND(t, FL(1, 0, 0, 1), "InitiatorName=" INAME, "TargetName=" T0,
		 "AuthMethod=CHAP,None");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_string_equal(rsp_val(t, "AuthMethod"), "CHAP");
	r = SEND(t, FL(0, 0, 0, 1), "CHAP_A=5");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
}

static void test_chap_wrong_secret(void **state)
{
	struct lt t;
	enum iscsi_login_result r;
	char resp[200], rr[256];

	(void)state;
	cfg_reset();
	set_chap(&targets[0].chap, "alice", "alicesecret123");
	lt_start(&t, GW_TRANSPORT_TCP);
	chap_until_challenge(&t);
	chap_answer(&t, EVP_md5(), "not the secret", resp, NULL, NULL);
	snprintf(rr, sizeof(rr), "CHAP_R=%s", resp);
	r = SEND(&t, FL(1, 0, 0, 1), "CHAP_N=alice", rr);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	assert_true(log_has("wrong CHAP response"));
	assert_true(log_has(PEER));
	assert_true(log_has(INAME));
	/* the failure sticks */
	r = SEND(&t, FL(1, 0, 0, 1), "CHAP_N=alice");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	lt_end(&t);
}

static void test_chap_wrong_user(void **state)
{
	struct lt t;
	enum iscsi_login_result r;
	char resp[200], rr[256];

	(void)state;
	cfg_reset();
	set_chap(&targets[0].chap, "alice", "alicesecret123");
	lt_start(&t, GW_TRANSPORT_TCP);
	chap_until_challenge(&t);
	chap_answer(&t, EVP_md5(), "alicesecret123", resp, NULL, NULL);
	snprintf(rr, sizeof(rr), "CHAP_R=%s", resp);
	r = SEND(&t, FL(1, 0, 0, 1), "CHAP_N=mallory", rr);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	assert_true(log_has("unknown CHAP user"));
	lt_end(&t);
}

static void test_chap_required(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	set_chap(&targets[0].chap, "alice", "alicesecret123");
	/* None only */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 0, 1), "InitiatorName=" INAME, "TargetName=" T0, "AuthMethod=None");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	lt_end(&t);
	/* security stage skipped */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0, OPKEYS);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	assert_true(log_has("skipped the security stage"));
	lt_end(&t);
	/* transit without AuthMethod */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 0, 1), "InitiatorName=" INAME, "TargetName=" T0);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	lt_end(&t);
	/* no acceptable algorithm */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 0, 1), "InitiatorName=" INAME, "TargetName=" T0, "AuthMethod=CHAP");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	r = SEND(&t, FL(0, 0, 0, 1), "CHAP_A=6,99,x");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	lt_end(&t);
	/* CHAP_R before CHAP_A */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 0, 1), "InitiatorName=" INAME, "TargetName=" T0, "AuthMethod=CHAP",
		 "CHAP_N=alice", "CHAP_R=0x00");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	lt_end(&t);
	/* CHAP keys in the operational stage */
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 1, 0), "InitiatorName=" INAME, "TargetName=" T0, "CHAP_A=5");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
}

static void test_chap_acl_entry_and_discovery(void **state)
{
	struct lt t;
	enum iscsi_login_result r;
	char resp[200], rr[256];

	(void)state;
	/* the ACL entry's credentials win over the target's */
	cfg_reset();
	set_chap(&targets[1].chap, "target-user", "targetsecret12");
	set_chap(&acls[0].chap, "bob", "bobsecret12345");
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 0, 1), "InitiatorName=" INAME2, "TargetName=" T1, "AuthMethod=CHAP",
		 "CHAP_A=5");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_string_equal(rsp_val(&t, "AuthMethod"), "CHAP");
	chap_answer(&t, EVP_md5(), "bobsecret12345", resp, NULL, NULL);
	snprintf(rr, sizeof(rr), "CHAP_R=%s", resp);
	r = SEND(&t, FL(1, 0, 0, 3), "CHAP_N=bob", rr);
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	lt_end(&t);

	/* discovery CHAP, with a short secret (warning only) */
	cfg_reset();
	set_chap(&cfg.discovery_chap, "disc", "short");
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 0, 1), "InitiatorName=" INAME, "SessionType=Discovery",
		 "AuthMethod=None");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	lt_end(&t);
	assert_true(log_has("shorter than 12 bytes"));
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 0, 1), "InitiatorName=" INAME, "SessionType=Discovery",
		 "AuthMethod=CHAP");
	r = SEND(&t, FL(0, 0, 0, 1), "CHAP_A=5");
	chap_answer(&t, EVP_md5(), "short", resp, NULL, NULL);
	snprintf(rr, sizeof(rr), "CHAP_R=%s", resp);
	r = SEND(&t, FL(1, 0, 0, 3), "CHAP_N=disc", rr);
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_int_equal(iscsi_login_session_type(t.l), ISCSI_SESSION_DISCOVERY);
	lt_end(&t);

	/* no CHAP configured: an initiator insisting on CHAP gets Reject */
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 0, 1), "InitiatorName=" INAME, "TargetName=" T0, "AuthMethod=CHAP");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_string_equal(rsp_val(&t, "AuthMethod"), "Reject");
	lt_end(&t);
}

static void test_chap_mutual(void **state)
{
	struct lt t;
	enum iscsi_login_result r;
	char resp[200], rr[256], cc[300];
	uint8_t ichal[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };
	uint8_t dig[64], got[64];
	size_t dlen;
	const char *tr;

	(void)state;
	cfg_reset();
	set_chap(&targets[0].chap, "alice", "alicesecret123");
	set_chap(&targets[0].mutual_chap, "target0", "targetsecret99");
	lt_start(&t, GW_TRANSPORT_TCP);
	chap_until_challenge(&t);
	chap_answer(&t, EVP_md5(), "alicesecret123", resp, NULL, NULL);
	snprintf(rr, sizeof(rr), "CHAP_R=%s", resp);
	snprintf(cc, sizeof(cc), "CHAP_C=");
	tohex(ichal, sizeof(ichal), cc + 7);
	r = SEND(&t, FL(1, 0, 0, 1), "CHAP_N=alice", rr, "CHAP_I=0x2a", cc);
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_status(&t, 0, 0);
	assert_flags(&t, FL(1, 0, 0, 1));
	assert_string_equal(rsp_val(&t, "CHAP_N"), "target0");
	tr = rsp_val(&t, "CHAP_R");
	assert_non_null(tr);
	dlen = chap_hash(EVP_md5(), 42, "targetsecret99", ichal, sizeof(ichal), dig);
	assert_int_equal(unhex(tr, got, sizeof(got)), dlen);
	assert_memory_equal(got, dig, dlen);
	lt_end(&t);

	/* base64 CHAP_R and CHAP_C are accepted too */
	lt_start(&t, GW_TRANSPORT_TCP);
	chap_until_challenge(&t);
	{
		uint8_t chal[64], d[64];
		size_t clen, n;
		uint8_t id = (uint8_t)strtoul(rsp_val(&t, "CHAP_I"), NULL, 10);
		unsigned char b64[200];
		char r64[256];

		clen = unhex(rsp_val(&t, "CHAP_C"), chal, sizeof(chal));
		n = chap_hash(EVP_md5(), id, "alicesecret123", chal, clen, d);
		EVP_EncodeBlock(b64, d, (int)n);
		snprintf(r64, sizeof(r64), "CHAP_R=0b%s", b64);
		r = SEND(&t, FL(1, 0, 0, 1), "CHAP_N=alice", r64, "CHAP_I=7",
			 "CHAP_C=0bAQIDBAUGBwgJCgsMDQ4PEA==");
		assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
		assert_status(&t, 0, 0);
		assert_non_null(rsp_val(&t, "CHAP_R"));
	}
	lt_end(&t);
}

static void test_chap_reflection(void **state)
{
	struct lt t;
	enum iscsi_login_result r;
	char resp[200], rr[256], cc[300];
	uint8_t chal[1024];
	size_t clen;

	(void)state;
	cfg_reset();
	set_chap(&targets[0].chap, "alice", "alicesecret123");
	set_chap(&targets[0].mutual_chap, "target0", "targetsecret99");
	lt_start(&t, GW_TRANSPORT_TCP);
	chap_until_challenge(&t);
	chap_answer(&t, EVP_md5(), "alicesecret123", resp, chal, &clen);
	snprintf(rr, sizeof(rr), "CHAP_R=%s", resp);
	snprintf(cc, sizeof(cc), "CHAP_C=");
	tohex(chal, clen, cc + 7); /* send our own challenge back */
	r = SEND(&t, FL(1, 0, 0, 1), "CHAP_N=alice", rr, "CHAP_I=1", cc);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	assert_true(log_has("reflected"));
	lt_end(&t);

	/* mutual CHAP asked for, none configured */
	targets[0].mutual_chap.user[0] = '\0';
	lt_start(&t, GW_TRANSPORT_TCP);
	chap_until_challenge(&t);
	chap_answer(&t, EVP_md5(), "alicesecret123", resp, NULL, NULL);
	snprintf(rr, sizeof(rr), "CHAP_R=%s", resp);
	r = SEND(&t, FL(1, 0, 0, 1), "CHAP_N=alice", rr, "CHAP_I=1", "CHAP_C=0x0102030405");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	assert_true(log_has("no mutual credentials"));
	lt_end(&t);

	/* CHAP_I without CHAP_C */
	lt_start(&t, GW_TRANSPORT_TCP);
	chap_until_challenge(&t);
	chap_answer(&t, EVP_md5(), "alicesecret123", resp, NULL, NULL);
	snprintf(rr, sizeof(rr), "CHAP_R=%s", resp);
	r = SEND(&t, FL(1, 0, 0, 1), "CHAP_N=alice", rr, "CHAP_I=1");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_AUTH_FAILED);
	lt_end(&t);
}

/* ---------------- tests: identity failures ---------------- */

static void test_acl_denied(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T1);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_FORBIDDEN);
	assert_true(log_has("initiator " INAME " not in ACL of target " T1 " from " PEER));
	lt_end(&t);
	/* the listed initiator gets in (case-insensitively) */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=IQN.1994-05.com.redhat:CLIENT2",
		 "TargetName=" T1);
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	lt_end(&t);
}

static void test_identity_failures(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=iqn.2026-01.org:nope");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_NOT_FOUND);
	assert_true(log_has("unknown target"));
	lt_end(&t);

	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "TargetName=" T0, "SessionType=Normal");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_MISSING_PARAM);
	assert_true(log_has("no InitiatorName"));
	lt_end(&t);

	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "SessionType=Normal");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_MISSING_PARAM);
	lt_end(&t);

	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=", "TargetName=" T0);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_MISSING_PARAM);
	lt_end(&t);

	/* a name that is not UTF-8 (RFC 7143 6.1): never shown in a session list */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=iqn.2026-11.org.x:\xff\xfe", "TargetName=" T0);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	assert_true(log_has("InitiatorName is not UTF-8 (byte 18)"));
	lt_end(&t);

	/* nor one with a control character (RFC 3722): an escape sequence in isergwctl's table */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=iqn.2026-11.org.x:\x1b[2J", "TargetName=" T0);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	assert_true(log_has("InitiatorName has a control character (byte 18)"));
	lt_end(&t);

	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "SessionType=Boot");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_SESSION_TYPE);
	lt_end(&t);

	/* empty first request */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = lt_send(&t, FL(1, 0, 1, 3), NULL, 0);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_MISSING_PARAM);
	lt_end(&t);
}

static void test_version(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	t.vmin = 1;
	t.vmax = 2;
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_UNSUPPORTED_VER);
	lt_end(&t);
	/* Version-max above ours is fine */
	lt_start(&t, GW_TRANSPORT_TCP);
	t.vmax = 5;
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0);
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_int_equal(t.rsp.version_max, 0);
	assert_int_equal(t.rsp.version_active, 0);
	lt_end(&t);
}

static void test_header_rules(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	/* ISID / ITT / CID / TSIH must not change */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 1, 0), "InitiatorName=" INAME, "TargetName=" T0);
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	t.itt++;
	r = SEND(&t, FL(1, 0, 1, 3), "MaxBurstLength=65536");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);

	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 1, 0), "InitiatorName=" INAME, "TargetName=" T0);
	t.isid[5] ^= 1;
	r = SEND(&t, FL(1, 0, 1, 3), "MaxBurstLength=65536");
	assert_int_equal(r, ISCSI_LOGIN_RES_FAIL);
	lt_end(&t);

	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 1, 0), "InitiatorName=" INAME, "TargetName=" T0);
	t.cid = 9;
	r = SEND(&t, FL(1, 0, 1, 3), "MaxBurstLength=65536");
	assert_int_equal(r, ISCSI_LOGIN_RES_FAIL);
	lt_end(&t);

	/* T and C together */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 1, 1, 3), "InitiatorName=" INAME, "TargetName=" T0);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);

	/* NSG not after CSG, reserved NSG 2, CSG 3 */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 1), "InitiatorName=" INAME, "TargetName=" T0);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 0, 2), "InitiatorName=" INAME, "TargetName=" T0);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 3, 0), "InitiatorName=" INAME, "TargetName=" T0);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);

	/* stage jump without our T=1 */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 0, 0), "InitiatorName=" INAME, "TargetName=" T0, "AuthMethod=None");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	r = SEND(&t, FL(1, 0, 1, 3), "MaxBurstLength=65536");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);

	/* a non-login opcode */
	lt_start(&t, GW_TRANSPORT_TCP);
	{
		struct iscsi_login_req req;

		memset(&req, 0, sizeof(req));
		req.opcode = ISCSI_OP_TEXT_REQ;
		r = iscsi_login_rx(t.l, &req, NULL, 0, &t.rsp, &t.rd, &t.rdlen);
		assert_int_equal(r, ISCSI_LOGIN_RES_FAIL);
		assert_int_equal(t.rsp.status_detail, ISCSI_LOGIN_DETAIL_INVALID_REQUEST);
	}
	lt_end(&t);
}

/* ---------------- tests: keys ---------------- */

static void test_duplicate_keys(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "MaxBurstLength=65536", "MaxBurstLength=65536");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	assert_true(log_has("duplicate key MaxBurstLength"));
	lt_end(&t);

	/* across PDUs of one login */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 1, 0), "InitiatorName=" INAME, "TargetName=" T0,
		 "MaxBurstLength=65536");
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	r = SEND(&t, FL(1, 0, 1, 3), "MaxBurstLength=65536");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);

	/* identity re-declared with another value */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(0, 0, 1, 0), "InitiatorName=" INAME, "TargetName=" T0);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME2);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);

	/* unknown keys twice */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0, "X-a=1", "X-a=1");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
}

static void test_not_understood_and_special_keys(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "X-com.example.Foo=bar", "FancyNewKey=1", "OFMarker=Yes", "IFMarkInt=2048~8192",
		 "OFMarkInt=1", "TaskReporting=FastAbort,RFC3720", "iSCSIProtocolLevel=2",
		 "SendTargets=All", "TargetAlias=x", "TargetAddress=1.2.3.4", "RDMAExtensions=Yes",
		 "InitiatorRecvDataSegmentLength=65536", "MaxOutstandingUnexpectedPDUs=8",
		 "MaxConnections=4", "ErrorRecoveryLevel=2", "DefaultTime2Wait=5",
		 "DefaultTime2Retain=3600", "MaxOutstandingR2T=16");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "X-com.example.Foo"), "NotUnderstood");
	assert_string_equal(rsp_val(&t, "FancyNewKey"), "NotUnderstood");
	assert_string_equal(rsp_val(&t, "OFMarker"), "No");
	assert_string_equal(rsp_val(&t, "IFMarkInt"), "Reject");
	assert_string_equal(rsp_val(&t, "OFMarkInt"), "Reject");
	assert_string_equal(rsp_val(&t, "TaskReporting"), "RFC3720");
	assert_string_equal(rsp_val(&t, "iSCSIProtocolLevel"), "1");
	assert_string_equal(rsp_val(&t, "SendTargets"), "Reject");
	assert_string_equal(rsp_val(&t, "TargetAlias"), "Reject");
	assert_string_equal(rsp_val(&t, "TargetAddress"), "Reject");
	assert_string_equal(rsp_val(&t, "RDMAExtensions"), "No");
	assert_string_equal(rsp_val(&t, "InitiatorRecvDataSegmentLength"), "Irrelevant");
	assert_string_equal(rsp_val(&t, "MaxOutstandingUnexpectedPDUs"), "Irrelevant");
	assert_string_equal(rsp_val(&t, "MaxConnections"), "1");
	assert_string_equal(rsp_val(&t, "ErrorRecoveryLevel"), "0");
	assert_string_equal(rsp_val(&t, "DefaultTime2Wait"), "5");
	assert_string_equal(rsp_val(&t, "DefaultTime2Retain"), "20");
	assert_string_equal(rsp_val(&t, "MaxOutstandingR2T"), "1");
	assert_int_equal(iscsi_login_sess_params(t.l)->default_time2wait, 5);
	assert_false(iscsi_login_conn_params(t.l)->rdma_extensions);
	lt_end(&t);

	/* TaskReporting without RFC3720 */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "TaskReporting=FastAbort", "HeaderDigest=MD5", "DataDigest=CRC32C,,None");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "TaskReporting"), "Reject");
	assert_string_equal(rsp_val(&t, "HeaderDigest"), "Reject");
	assert_string_equal(rsp_val(&t, "DataDigest"), "Reject");
	lt_end(&t);
}

static void test_numeric_negotiation(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	targets[0].max_burst = 262144;
	targets[0].first_burst = 1048576; /* bigger than max_burst: clamped */
	targets[0].max_outstanding_r2t = 8;
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "FirstBurstLength=524288", "MaxBurstLength=1048576", "MaxOutstandingR2T=4");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "MaxBurstLength"), "262144");
	assert_string_equal(rsp_val(&t, "FirstBurstLength"), "262144");
	assert_string_equal(rsp_val(&t, "MaxOutstandingR2T"), "4");
	assert_int_equal(iscsi_login_sess_params(t.l)->max_burst, 262144);
	assert_int_equal(iscsi_login_sess_params(t.l)->first_burst, 262144);
	assert_int_equal(iscsi_login_sess_params(t.l)->max_outstanding_r2t, 4);
	lt_end(&t);

	/* the initiator's smaller values win; hex and base64 numbers */
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "MaxBurstLength=0x10000", "FirstBurstLength=0bAQAA");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "MaxBurstLength"), "65536");
	assert_string_equal(rsp_val(&t, "FirstBurstLength"), "65536");
	lt_end(&t);

	/* out of range / malformed: Reject, defaults stay */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "MaxBurstLength=0x100000000", "FirstBurstLength=-1", "MaxOutstandingR2T=0",
		 "DefaultTime2Wait=99999999999999999999999", "DefaultTime2Retain=12abc",
		 "ErrorRecoveryLevel=", "ImmediateData=yes", "InitialR2T=Maybe",
		 "MaxConnections=0x0000000000000000000001");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "MaxBurstLength"), "Reject");
	assert_string_equal(rsp_val(&t, "FirstBurstLength"), "Reject");
	assert_string_equal(rsp_val(&t, "MaxOutstandingR2T"), "Reject");
	assert_string_equal(rsp_val(&t, "DefaultTime2Wait"), "Reject");
	assert_string_equal(rsp_val(&t, "DefaultTime2Retain"), "Reject");
	assert_string_equal(rsp_val(&t, "ErrorRecoveryLevel"), "Reject");
	assert_string_equal(rsp_val(&t, "ImmediateData"), "Reject");
	assert_string_equal(rsp_val(&t, "InitialR2T"), "Reject");
	assert_string_equal(rsp_val(&t, "MaxConnections"), "1");
	assert_int_equal(iscsi_login_sess_params(t.l)->max_burst, 262144);
	lt_end(&t);
}

static void test_boolean_negotiation(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	/* InitialR2T is OR, ImmediateData is AND */
	targets[0].initial_r2t = true;
	targets[0].immediate_data = false;
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0, "InitialR2T=No",
		 "ImmediateData=Yes", "DataPDUInOrder=No", "DataSequenceInOrder=No");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "InitialR2T"), "Yes");
	assert_string_equal(rsp_val(&t, "ImmediateData"), "No");
	assert_string_equal(rsp_val(&t, "DataPDUInOrder"), "Yes");
	assert_string_equal(rsp_val(&t, "DataSequenceInOrder"), "Yes");
	assert_true(iscsi_login_sess_params(t.l)->initial_r2t);
	assert_false(iscsi_login_sess_params(t.l)->immediate_data);
	lt_end(&t);

	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0, "InitialR2T=No",
		 "ImmediateData=No");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "InitialR2T"), "No");
	assert_string_equal(rsp_val(&t, "ImmediateData"), "No");
	lt_end(&t);
}

static void test_max_recv_dsl_declarations(void **state)
{
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	targets[0].max_recv_dsl = 131072;
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "MaxRecvDataSegmentLength=32768");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "MaxRecvDataSegmentLength"), "131072");
	assert_int_equal(iscsi_login_conn_params(t.l)->max_recv_dsl, 131072);
	assert_int_equal(iscsi_login_conn_params(t.l)->max_xmit_dsl, 32768);
	lt_end(&t);

	/* an invalid declaration fails the login */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "MaxRecvDataSegmentLength=100");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
}

static void test_iser_keys(void **state)
{
	struct lt t;
	enum iscsi_login_result r;
	const struct iscsi_conn_params *cp;

	(void)state;
	cfg_reset();
	portals[0].transport = GW_TRANSPORT_ISER;
	lt_start(&t, GW_TRANSPORT_ISER);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "HeaderDigest=CRC32C,None", "DataDigest=CRC32C,None", "RDMAExtensions=Yes",
		 "InitiatorRecvDataSegmentLength=65536", "TargetRecvDataSegmentLength=1048576",
		 "MaxOutstandingUnexpectedPDUs=16", "MaxRecvDataSegmentLength=262144");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "HeaderDigest"), "None");
	assert_string_equal(rsp_val(&t, "DataDigest"), "None");
	assert_string_equal(rsp_val(&t, "RDMAExtensions"), "Yes");
	assert_string_equal(rsp_val(&t, "InitiatorRecvDataSegmentLength"), "65536");
	/* our receive buffers hold ISCSI_ISER_RECV_DSL bytes of data: never more */
	assert_string_equal(rsp_val(&t, "TargetRecvDataSegmentLength"), "8192");
	assert_string_equal(rsp_val(&t, "MaxRecvDataSegmentLength"), "8192");
	assert_string_equal(rsp_val(&t, "MaxOutstandingUnexpectedPDUs"), "16");
	cp = iscsi_login_conn_params(t.l);
	assert_true(cp->rdma_extensions);
	assert_false(cp->header_digest);
	assert_false(cp->data_digest);
	assert_int_equal(cp->initiator_recv_dsl, 65536);
	assert_int_equal(cp->target_recv_dsl, ISCSI_ISER_RECV_DSL);
	assert_int_equal(cp->max_xmit_dsl, 65536);
	assert_int_equal(cp->max_recv_dsl, ISCSI_ISER_RECV_DSL);
	assert_int_equal(cp->max_outstanding_unexpected_pdus, 16);
	lt_end(&t);

	/* CRC32C only on iSER: Reject, and digests stay off */
	lt_start(&t, GW_TRANSPORT_ISER);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "HeaderDigest=CRC32C", "RDMAExtensions=Yes");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "HeaderDigest"), "Reject");
	assert_false(iscsi_login_conn_params(t.l)->header_digest);
	/* no iSER length keys: the MaxRecvDataSegmentLength defaults apply */
	assert_int_equal(iscsi_login_conn_params(t.l)->max_xmit_dsl, 8192);
	lt_end(&t);

	/* RDMAExtensions not offered: the target proposes it */
	lt_start(&t, GW_TRANSPORT_ISER);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0);
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_flags(&t, FL(0, 0, 1, 0));
	assert_string_equal(rsp_val(&t, "RDMAExtensions"), "Yes");
	r = SEND(&t, FL(1, 0, 1, 3), "RDMAExtensions=Yes");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_true(iscsi_login_conn_params(t.l)->rdma_extensions);
	lt_end(&t);

	/* RDMAExtensions=No on an iSER portal */
	lt_start(&t, GW_TRANSPORT_ISER);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0, "RDMAExtensions=No");
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	assert_true(log_has("RDMAExtensions=No on an iSER portal"));
	lt_end(&t);

	/* discovery on iSER: RDMAExtensions irrelevant */
	lt_start(&t, GW_TRANSPORT_ISER);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "SessionType=Discovery",
		 "RDMAExtensions=Yes");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "RDMAExtensions"), "Irrelevant");
	lt_end(&t);

	/* TCP: RDMAExtensions=Yes answered No */
	portals[0].transport = GW_TRANSPORT_TCP;
	lt_start(&t, GW_TRANSPORT_TCP);
	r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0,
		 "RDMAExtensions=Yes", "TargetRecvDataSegmentLength=8192");
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "RDMAExtensions"), "No");
	assert_string_equal(rsp_val(&t, "TargetRecvDataSegmentLength"), "Irrelevant");
	lt_end(&t);
}

/* ---------------- tests: C bit ---------------- */

static void test_continuation(void **state)
{
	static const char part1[] = "InitiatorName=" INAME "\0SessionTy";
	static const char part2[] = "pe=Normal\0TargetName=" T0 "\0MaxBurstLe";
	static const char part3[] = "ngth=65536";
	struct lt t;
	enum iscsi_login_result r;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = lt_send(&t, FL(0, 1, 1, 0), part1, sizeof(part1) - 1);
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_status(&t, 0, 0);
	assert_flags(&t, FL(0, 0, 1, 0));
	assert_int_equal(t.rdlen, 0);
	r = lt_send(&t, FL(0, 1, 1, 0), part2, sizeof(part2) - 1);
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_int_equal(t.rdlen, 0);
	r = lt_send(&t, FL(1, 0, 1, 3), part3, sizeof(part3)); /* with its NUL */
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "MaxBurstLength"), "65536");
	assert_ptr_equal(iscsi_login_target(t.l), &targets[0]);
	lt_end(&t);

	/* the final part must end with a NUL */
	lt_start(&t, GW_TRANSPORT_TCP);
	r = lt_send(&t, FL(0, 1, 1, 0), part1, sizeof(part1) - 1);
	r = lt_send(&t, FL(1, 0, 1, 3), part3, sizeof(part3) - 1);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
}

static void test_continuation_too_long(void **state)
{
	struct lt t;
	enum iscsi_login_result r = ISCSI_LOGIN_RES_CONTINUE;
	static char junk[8192];
	int i;

	(void)state;
	cfg_reset();
	memset(junk, 'A', sizeof(junk));
	lt_start(&t, GW_TRANSPORT_TCP);
	/* 1 MiB of garbage in continuation PDUs: cut at 64 KiB */
	for (i = 0; i < 128 && r == ISCSI_LOGIN_RES_CONTINUE; i++)
		r = lt_send(&t, FL(0, 1, 1, 0), junk, sizeof(junk));
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	assert_int_equal(i, 9);
	assert_true(log_has("longer than 65536"));
	lt_end(&t);
}

static void test_long_response_continues(void **state)
{
	struct lt t;
	enum iscsi_login_result r;
	static char text[32768];
	size_t len = 0, got = 0;
	char all[32768];
	int i;

	(void)state;
	cfg_reset();
	len = mk(text, sizeof(text), "InitiatorName=" INAME, "TargetName=" T0, (const char *)NULL);
	for (i = 0; i < 120; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"X-vendor.example.key-number-%03d-padding-padding-padding=v",
					i) + 1;
	lt_start(&t, GW_TRANSPORT_TCP);
	r = lt_send(&t, FL(1, 0, 1, 3), text, len);
	assert_int_equal(r, ISCSI_LOGIN_RES_CONTINUE);
	assert_flags(&t, FL(0, 1, 1, 0));
	assert_int_equal(t.rdlen, 8192);
	memcpy(all, t.rd, t.rdlen);
	got = t.rdlen;
	/* the initiator fetches the rest with an empty request */
	r = lt_send(&t, FL(0, 0, 1, 0), NULL, 0);
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_flags(&t, FL(1, 0, 1, 3));
	memcpy(all + got, t.rd, t.rdlen);
	got += t.rdlen;
	assert_true(got > 8192);
	assert_non_null(memmem(all, got, "X-vendor.example.key-number-119-padding-padding-padding="
				     "NotUnderstood", 69));
	lt_end(&t);
}

/* ---------------- tests: hostile input ---------------- */

static void test_malformed_text(void **state)
{
	static const char no_eq[] = "InitiatorName=" INAME "\0TargetName\0";
	static const char nul_in_key[] = "Initiator\0Name=" INAME "\0";
	static const char empty_key[] = "=x\0";
	static const char bad_char[] = "Initiator Name=x\0";
	char longkey[200];
	struct lt t;
	enum iscsi_login_result r;
	size_t len;

	(void)state;
	cfg_reset();
	lt_start(&t, GW_TRANSPORT_TCP);
	r = lt_send(&t, FL(1, 0, 1, 3), no_eq, sizeof(no_eq) - 1);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
	lt_start(&t, GW_TRANSPORT_TCP);
	r = lt_send(&t, FL(1, 0, 1, 3), nul_in_key, sizeof(nul_in_key) - 1);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
	lt_start(&t, GW_TRANSPORT_TCP);
	r = lt_send(&t, FL(1, 0, 1, 3), empty_key, sizeof(empty_key) - 1);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
	lt_start(&t, GW_TRANSPORT_TCP);
	r = lt_send(&t, FL(1, 0, 1, 3), bad_char, sizeof(bad_char) - 1);
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
	/* key of 64 bytes */
	lt_start(&t, GW_TRANSPORT_TCP);
	memset(longkey, 'K', 64);
	memcpy(longkey + 64, "=1", 3);
	len = 67;
	{
		char buf[512];
		size_t l = TXT(buf, "InitiatorName=" INAME, "TargetName=" T0);

		memcpy(buf + l, longkey, len);
		r = lt_send(&t, FL(1, 0, 1, 3), buf, l + len);
	}
	assert_fail(&t, r, ISCSI_LOGIN_DETAIL_INIT_ERR);
	lt_end(&t);
	/* over-long value of a known key: Reject */
	lt_start(&t, GW_TRANSPORT_TCP);
	{
		char buf[1024], v[400];

		memset(v, 'N', sizeof(v));
		memcpy(v, "HeaderDigest=", 13);
		v[sizeof(v) - 1] = '\0';
		r = SEND(&t, FL(1, 0, 1, 3), "InitiatorName=" INAME, "TargetName=" T0, v);
		(void)buf;
	}
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	assert_string_equal(rsp_val(&t, "HeaderDigest"), "Reject");
	lt_end(&t);
	/* consecutive NULs are tolerated */
	lt_start(&t, GW_TRANSPORT_TCP);
	{
		static const char txt[] = "InitiatorName=" INAME "\0\0\0TargetName=" T0 "\0\0";

		r = lt_send(&t, FL(1, 0, 1, 3), txt, sizeof(txt) - 1);
	}
	assert_int_equal(r, ISCSI_LOGIN_RES_DONE);
	lt_end(&t);
}

static void test_fuzz_no_crash(void **state)
{
	static const char *const frags[] = {
		"InitiatorName=" INAME, "TargetName=" T0, "AuthMethod=CHAP,None", "CHAP_A=5",
		"CHAP_N=alice", "CHAP_R=0x", "CHAP_C=0b", "CHAP_I=300", "MaxBurstLength=",
		"=", "", "SessionType=Discovery", "HeaderDigest=CRC32C", "X=Y",
		"MaxRecvDataSegmentLength=0xffffffffffffffffff",
	};
	uint8_t buf[2048];
	unsigned int seed = 12345, round, n;
	int j;

	(void)state;
	cfg_reset();
	set_chap(&targets[0].chap, "alice", "alicesecret123");
	for (round = 0; round < 2000; round++) {
		struct lt t;
		enum iscsi_login_result r = ISCSI_LOGIN_RES_CONTINUE;

		lt_start(&t, round & 1 ? GW_TRANSPORT_ISER : GW_TRANSPORT_TCP);
		for (j = 0; j < 6 && r == ISCSI_LOGIN_RES_CONTINUE; j++) {
			size_t len = 0;
			uint8_t flags;

			seed = seed * 1103515245u + 12345u;
			n = (seed >> 16) % 8;
			while (n--) {
				seed = seed * 1103515245u + 12345u;
				if ((seed >> 20) & 1) {
					const char *f = frags[(seed >> 8) % (sizeof(frags) /
									  sizeof(frags[0]))];
					size_t l = strlen(f) + 1;

					if (len + l <= sizeof(buf)) {
						memcpy(buf + len, f, l);
						len += l;
					}
				} else {
					size_t l = (seed >> 4) % 64, k;

					for (k = 0; k < l && len < sizeof(buf); k++) {
						seed = seed * 1103515245u + 12345u;
						buf[len++] = (uint8_t)(seed >> 16);
					}
				}
			}
			seed = seed * 1103515245u + 12345u;
			flags = (uint8_t)(seed >> 16);
			r = lt_send(&t, flags, len ? buf : NULL, len);
			assert_true(r <= ISCSI_LOGIN_RES_FAIL);
			assert_true(t.rdlen <= 8192);
			if (r == ISCSI_LOGIN_RES_FAIL)
				assert_int_not_equal(t.rsp.status_class, 0);
		}
		lt_end(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_discovery_no_chap),
		cmocka_unit_test(test_normal_security_operational_ffp),
		cmocka_unit_test(test_direct_to_ffp),
		cmocka_unit_test(test_security_straight_to_ffp),
		cmocka_unit_test(test_target_proposes_keys),
		cmocka_unit_test(test_transit_only_when_asked),
		cmocka_unit_test(test_chap_md5),
		cmocka_unit_test(test_chap_sha256),
		cmocka_unit_test(test_chap_wrong_secret),
		cmocka_unit_test(test_chap_wrong_user),
		cmocka_unit_test(test_chap_required),
		cmocka_unit_test(test_chap_acl_entry_and_discovery),
		cmocka_unit_test(test_chap_mutual),
		cmocka_unit_test(test_chap_reflection),
		cmocka_unit_test(test_acl_denied),
		cmocka_unit_test(test_identity_failures),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_header_rules),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_not_understood_and_special_keys),
		cmocka_unit_test(test_numeric_negotiation),
		cmocka_unit_test(test_boolean_negotiation),
		cmocka_unit_test(test_max_recv_dsl_declarations),
		cmocka_unit_test(test_iser_keys),
		cmocka_unit_test(test_continuation),
		cmocka_unit_test(test_continuation_too_long),
		cmocka_unit_test(test_long_response_continues),
		cmocka_unit_test(test_malformed_text),
		cmocka_unit_test(test_fuzz_no_crash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
