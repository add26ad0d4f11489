// LINK: gw_proto isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for core/text.c: Text Requests in full feature phase —
 * SendTargets (ACL filtering, portals, wildcard and IPv6 addresses), long
 * answers split with C and a TTT, C-bit requests, renegotiation answers.
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

#include "core/iscsi_spec.h"
#include "core/login.h"
#include "config/config.h"
#include "common/log.h"

#define TEST_LOG_LEVEL GW_LOG_DEBUG
#include "test_log_silent.h"

#include "test_text_keys.h"

#define INAME "iqn.1994-05.com.redhat:client1"
#define INAME2 "iqn.1994-05.com.redhat:client2"

static struct gw_portal_cfg portals[4];
static struct gw_target_cfg targets[40];
static struct gw_acl_cfg acls[1];
static struct gw_config cfg;

static void cfg_reset(size_t ntargets)
{
	size_t i;

	memset(&cfg, 0, sizeof(cfg));
	memset(portals, 0, sizeof(portals));
	memset(targets, 0, sizeof(targets));
	memset(acls, 0, sizeof(acls));
	for (i = 0; i < ntargets; i++) {
		snprintf(targets[i].iqn, sizeof(targets[i].iqn), "iqn.2026-01.org.isergw:t%zu", i);
		targets[i].max_recv_dsl = 262144;
		targets[i].max_burst = 16776192;
		targets[i].first_burst = 262144;
		targets[i].max_outstanding_r2t = 1;
		targets[i].immediate_data = true;
	}
	snprintf(acls[0].initiator, sizeof(acls[0].initiator), INAME2);
	targets[1].acls = acls;
	targets[1].nacls = 1;
	/* wildcard TCP portal, an iSER portal on IPv6, the same v6 address again over TCP */
	snprintf(portals[0].addr, sizeof(portals[0].addr), "0.0.0.0");
	portals[0].port = 3260;
	portals[0].tpgt = 1;
	portals[1].transport = GW_TRANSPORT_ISER;
	snprintf(portals[1].addr, sizeof(portals[1].addr), "fe80::1");
	portals[1].port = 3261;
	portals[1].tpgt = 2;
	portals[2] = portals[1];
	portals[2].transport = GW_TRANSPORT_TCP;
	cfg.portals = portals;
	cfg.nportals = 3;
	cfg.targets = targets;
	cfg.ntargets = ntargets;
}

struct tt {
	struct iscsi_text *t;
	struct iscsi_text_env env;
	struct iscsi_text_rsp rsp;
	const uint8_t *rd;
	uint32_t rdlen;
	uint32_t itt;
};

static void tt_start(struct tt *x, enum iscsi_session_type type, const struct gw_target_cfg *tg,
		     const char *iname)
{
	memset(x, 0, sizeof(*x));
	assert_int_equal(iscsi_text_create(&x->t), 0);
	x->env.cfg = &cfg;
	x->env.session_type = type;
	x->env.target = tg;
	x->env.initiator_name = iname;
	x->env.local_addr = "198.51.100.7:3260";
	x->env.max_xmit_dsl = 8192;
	x->itt = 0x42;
}

static int tt_send(struct tt *x, uint8_t flags, uint32_t ttt, const void *data, size_t len)
{
	struct iscsi_text_req req;

	memset(&req, 0, sizeof(req));
	req.opcode = ISCSI_OP_TEXT_REQ;
	req.flags = flags;
	req.itt = htobe32(x->itt);
	req.ttt = htobe32(ttt);
	req.lun[1] = 5;
	req.data_seg_len[0] = (uint8_t)(len >> 16);
	req.data_seg_len[1] = (uint8_t)(len >> 8);
	req.data_seg_len[2] = (uint8_t)len;
	memset(&x->rsp, 0xee, sizeof(x->rsp));
	return iscsi_text_rx(x->t, &x->env, &req, data, (uint32_t)len, &x->rsp, &x->rd,
			     &x->rdlen);
}

static int tt_sendv(struct tt *x, unsigned int flags, ...)
{
	char buf[4096];
	size_t len;
	va_list ap;

	va_start(ap, flags);
	len = keys_join(buf, sizeof(buf), ap);
	va_end(ap);
	return tt_send(x, (uint8_t)flags, ISCSI_RSVD_TAG, buf, len);
}
#define TSEND(x, ...) tt_sendv(x, ISCSI_FLAG_FINAL, __VA_ARGS__, (const char *)NULL)

static void tt_end(struct tt *x)
{
	iscsi_text_destroy(x->t);
}

static uint32_t dsl(const struct tt *x)
{
	return ((uint32_t)x->rsp.data_seg_len[0] << 16) | ((uint32_t)x->rsp.data_seg_len[1] << 8) |
	       x->rsp.data_seg_len[2];
}

/* The whole answer as "k=v\n" lines for easy comparison. */
static void lines(const uint8_t *d, uint32_t len, char *out, size_t sz)
{
	size_t o = 0, i;

	for (i = 0; i < len && o + 1 < sz; i++)
		out[o++] = d[i] ? (char)d[i] : '\n';
	out[o] = '\0';
}

static void assert_final(const struct tt *x)
{
	assert_int_equal(x->rsp.opcode, ISCSI_OP_TEXT_RSP);
	assert_int_equal(x->rsp.flags, ISCSI_FLAG_FINAL);
	assert_int_equal(be32toh(x->rsp.ttt), ISCSI_RSVD_TAG);
	assert_int_equal(be32toh(x->rsp.itt), x->itt);
	assert_int_equal(x->rsp.lun[1], 5);
	assert_int_equal(dsl(x), x->rdlen);
}

static void test_send_targets_discovery_acl(void **state)
{
	struct tt x;
	char out[4096];

	(void)state;
	cfg_reset(2);
	tt_start(&x, ISCSI_SESSION_DISCOVERY, NULL, INAME);
	assert_int_equal(TSEND(&x, "SendTargets=All"), 0);
	assert_final(&x);
	lines(x.rd, x.rdlen, out, sizeof(out));
	assert_string_equal(out, "TargetName=iqn.2026-01.org.isergw:t0\n"
				 "TargetAddress=198.51.100.7:3260,1\n"
				 "TargetAddress=[fe80::1]:3261,2\n");
	tt_end(&x);

	/* the initiator on t1's ACL sees both */
	tt_start(&x, ISCSI_SESSION_DISCOVERY, NULL, INAME2);
	assert_int_equal(TSEND(&x, "SendTargets=All"), 0);
	assert_final(&x);
	lines(x.rd, x.rdlen, out, sizeof(out));
	assert_string_equal(out, "TargetName=iqn.2026-01.org.isergw:t0\n"
				 "TargetAddress=198.51.100.7:3260,1\n"
				 "TargetAddress=[fe80::1]:3261,2\n"
				 "TargetName=iqn.2026-01.org.isergw:t1\n"
				 "TargetAddress=198.51.100.7:3260,1\n"
				 "TargetAddress=[fe80::1]:3261,2\n");
	/* one target by name; a hidden one gives nothing */
	assert_int_equal(TSEND(&x, "SendTargets=iqn.2026-01.org.isergw:t1"), 0);
	lines(x.rd, x.rdlen, out, sizeof(out));
	assert_non_null(strstr(out, "TargetName=iqn.2026-01.org.isergw:t1\n"));
	assert_null(strstr(out, ":t0"));
	tt_end(&x);

	tt_start(&x, ISCSI_SESSION_DISCOVERY, NULL, INAME);
	assert_int_equal(TSEND(&x, "SendTargets=iqn.2026-01.org.isergw:t1"), 0);
	assert_final(&x);
	assert_int_equal(x.rdlen, 0);
	/* an IPv6 local address for the wildcard portal */
	x.env.local_addr = "[2001:db8::5]:3260";
	assert_int_equal(TSEND(&x, "SendTargets=All"), 0);
	lines(x.rd, x.rdlen, out, sizeof(out));
	assert_non_null(strstr(out, "TargetAddress=[2001:db8::5]:3260,1\n"));
	tt_end(&x);
}

static void test_send_targets_normal_session(void **state)
{
	struct tt x;
	char out[4096];

	(void)state;
	cfg_reset(2);
	cfg.nportals = 1;
	tt_start(&x, ISCSI_SESSION_NORMAL, &targets[0], INAME);
	assert_int_equal(TSEND(&x, "SendTargets=All"), 0);
	lines(x.rd, x.rdlen, out, sizeof(out));
	assert_string_equal(out, "TargetName=iqn.2026-01.org.isergw:t0\n"
				 "TargetAddress=198.51.100.7:3260,1\n");
	assert_int_equal(TSEND(&x, "SendTargets="), 0);
	lines(x.rd, x.rdlen, out, sizeof(out));
	assert_string_equal(out, "TargetName=iqn.2026-01.org.isergw:t0\n"
				 "TargetAddress=198.51.100.7:3260,1\n");
	assert_int_equal(TSEND(&x, "SendTargets=iqn.2026-01.org.isergw:t1"), 0);
	assert_int_equal(x.rdlen, 0);
	tt_end(&x);
}

static void test_long_answer_split(void **state)
{
	struct tt x;
	static char all[65536], direct[65536];
	size_t got = 0, dlen;
	uint32_t ttt;
	int parts = 1;

	(void)state;
	cfg_reset(40);
	cfg.nportals = 1;
	tt_start(&x, ISCSI_SESSION_DISCOVERY, NULL, INAME);
	assert_int_equal(TSEND(&x, "SendTargets=All"), 0);
	assert_final(&x);
	dlen = x.rdlen;
	memcpy(direct, x.rd, dlen);
	assert_true(dlen > 1000);

	x.env.max_xmit_dsl = 512;
	assert_int_equal(TSEND(&x, "SendTargets=All"), 0);
	assert_int_equal(x.rsp.flags, ISCSI_FLAG_CONTINUE);
	assert_int_equal(x.rdlen, 512);
	assert_int_equal(dsl(&x), 512);
	ttt = be32toh(x.rsp.ttt);
	assert_int_not_equal(ttt, ISCSI_RSVD_TAG);
	memcpy(all, x.rd, x.rdlen);
	got = x.rdlen;
	/* an unknown TTT is a protocol error (the exchange survives it) */
	assert_int_equal(tt_send(&x, ISCSI_FLAG_FINAL, ttt + 1, NULL, 0), -EPROTO);
	/* data while we are continuing: protocol error */
	assert_int_equal(tt_send(&x, ISCSI_FLAG_FINAL, ttt, "A=B", 4), -EPROTO);
	for (;;) {
		assert_int_equal(tt_send(&x, ISCSI_FLAG_FINAL, ttt, NULL, 0), 0);
		assert_true(x.rdlen <= 512);
		memcpy(all + got, x.rd, x.rdlen);
		got += x.rdlen;
		parts++;
		if (x.rsp.flags == ISCSI_FLAG_FINAL)
			break;
		assert_int_equal(x.rsp.flags, ISCSI_FLAG_CONTINUE);
		assert_int_equal(be32toh(x.rsp.ttt), ttt);
	}
	assert_final(&x);
	assert_int_equal(got, dlen);
	assert_memory_equal(all, direct, dlen);
	assert_int_equal(parts, (int)((dlen + 511) / 512));
	/* the exchange is over: its TTT is now unknown */
	assert_int_equal(tt_send(&x, ISCSI_FLAG_FINAL, ttt, NULL, 0), -EPROTO);

	/* a new request (reserved TTT) abandons an unfinished answer */
	assert_int_equal(TSEND(&x, "SendTargets=All"), 0);
	assert_int_equal(x.rsp.flags, ISCSI_FLAG_CONTINUE);
	x.env.max_xmit_dsl = 8192;
	assert_int_equal(TSEND(&x, "SendTargets=iqn.2026-01.org.isergw:t0"), 0);
	assert_final(&x);
	tt_end(&x);
}

static void test_continued_request(void **state)
{
	static const char p1[] = "SendTar";
	static const char p2[] = "gets=All";
	struct tt x;
	uint32_t ttt;

	(void)state;
	cfg_reset(1);
	cfg.nportals = 1;
	tt_start(&x, ISCSI_SESSION_DISCOVERY, NULL, INAME);
	assert_int_equal(tt_send(&x, ISCSI_FLAG_CONTINUE, ISCSI_RSVD_TAG, p1, sizeof(p1) - 1), 0);
	assert_int_equal(x.rsp.flags, 0);
	assert_int_equal(x.rdlen, 0);
	assert_int_equal(dsl(&x), 0);
	ttt = be32toh(x.rsp.ttt);
	assert_int_not_equal(ttt, ISCSI_RSVD_TAG);
	assert_int_equal(tt_send(&x, ISCSI_FLAG_FINAL, ttt, p2, sizeof(p2)), 0);
	assert_final(&x);
	assert_non_null(memmem(x.rd, x.rdlen, "TargetName=iqn.2026-01.org.isergw:t0", 36));

	/* F and C together */
	assert_int_equal(tt_send(&x, ISCSI_FLAG_FINAL | ISCSI_FLAG_CONTINUE, ISCSI_RSVD_TAG, p1,
				 sizeof(p1) - 1), -EPROTO);
	/* F=0: the answer has F=0 and a TTT */
	assert_int_equal(tt_sendv(&x, 0, "SendTargets=All", (const char *)NULL), 0);
	assert_int_equal(x.rsp.flags, 0);
	assert_int_not_equal(be32toh(x.rsp.ttt), ISCSI_RSVD_TAG);
	tt_end(&x);

	/* 64 KiB limit on continued text */
	tt_start(&x, ISCSI_SESSION_DISCOVERY, NULL, INAME);
	{
		static char junk[16384];
		int i, rc = 0;

		memset(junk, 'x', sizeof(junk));
		ttt = ISCSI_RSVD_TAG;
		for (i = 0; i < 8 && rc == 0; i++) {
			rc = tt_send(&x, ISCSI_FLAG_CONTINUE, ttt, junk, sizeof(junk));
			ttt = be32toh(x.rsp.ttt);
		}
		assert_int_equal(rc, -EPROTO);
		assert_int_equal(i, 5);
	}
	tt_end(&x);
}

static void test_ffp_keys(void **state)
{
	struct tt x;
	char out[2048];

	(void)state;
	cfg_reset(1);
	tt_start(&x, ISCSI_SESSION_NORMAL, &targets[0], INAME);
	assert_int_equal(TSEND(&x, "MaxRecvDataSegmentLength=16384", "MaxBurstLength=4096",
			       "InitiatorName=" INAME, "X-foo=bar", "CHAP_A=5", "HeaderDigest=None",
			       "InitiatorAlias=renamed", "TargetAlias=x", "OFMarkInt=1"),
			 0);
	assert_final(&x);
	lines(x.rd, x.rdlen, out, sizeof(out));
	assert_string_equal(out, "MaxBurstLength=Reject\n"
				 "InitiatorName=Reject\n"
				 "X-foo=NotUnderstood\n"
				 "CHAP_A=Reject\n"
				 "HeaderDigest=Reject\n"
				 "TargetAlias=Reject\n"
				 "OFMarkInt=Reject\n");
	assert_int_equal(iscsi_text_declared_max_xmit_dsl(x.t), 16384);
	assert_int_equal(TSEND(&x, "MaxRecvDataSegmentLength=12"), 0);
	lines(x.rd, x.rdlen, out, sizeof(out));
	assert_string_equal(out, "MaxRecvDataSegmentLength=Reject\n");
	assert_int_equal(iscsi_text_declared_max_xmit_dsl(x.t), 0);

	/* protocol errors */
	assert_int_equal(TSEND(&x, "SendTargets=All", "SendTargets=All"), -EPROTO);
	assert_int_equal(TSEND(&x, "NoEqualsSign"), -EPROTO);
	assert_int_equal(tt_send(&x, ISCSI_FLAG_FINAL, ISCSI_RSVD_TAG, "A=B", 3), -EPROTO);
	assert_int_equal(tt_send(&x, ISCSI_FLAG_FINAL, 12345, NULL, 0), -EPROTO);
	/* an empty request gets an empty final answer */
	assert_int_equal(tt_send(&x, ISCSI_FLAG_FINAL, ISCSI_RSVD_TAG, NULL, 0), 0);
	assert_final(&x);
	assert_int_equal(x.rdlen, 0);
	tt_end(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_targets_discovery_acl),
		cmocka_unit_test(test_send_targets_normal_session),
		cmocka_unit_test(test_long_answer_split),
		cmocka_unit_test(test_continued_request),
		cmocka_unit_test(test_ffp_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
