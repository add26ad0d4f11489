/* SPDX-License-Identifier: Apache-2.0 */
// LINK: isergw_gw
// SOURCES: ../common/fake_dm.c ../common/fake_gw.c
// COVERS: gateway/core/conn.c gateway/core/session.c gateway/core/task.c gateway/core/pdu.c
/*
 * PDUs on a logged-in iSCSI/TCP connection: framing (BHS, AHS, digests,
 * data segment, padding) by the core's iscsi_conn_rx_stream() and every
 * opcode's handling in full feature phase (core/conn.c, session.c, task.c,
 * the SCSI layer on two memory LUNs), with only the datamover faked
 * (fake_dm.c: the bytes reach the core as tcp.c hands them over, what the
 * core sends is read and completed as tcp.c's flush does) and a gateway
 * without threads (fake_gw.c: one reactor run by reactor_poll()).
 *
 * Each input logs in afresh (one Login Request, Normal session, CSG 1 ->
 * FFP) with the session shape its first two bytes choose, then plays its
 * records (more connections may log in: other nexuses, or reinstating the
 * first session), then the initiators hang up; the connections, sessions
 * and every task must be gone afterwards (else: abort), and LeakSanitizer
 * sees the rest.
 *
 * Input:
 *   byte 0  bit 0 HeaderDigest, bit 1 DataDigest, bit 2 ImmediateData=No,
 *           bit 3 InitialR2T=Yes, bits 4-5 the target's MaxRecvDataSegmentLength
 *           (512, 8192, 65536, 262144), bits 6-7 FirstBurst/MaxBurstLength
 *   byte 1  bits 0-1 MaxOutstandingR2T - 1, bit 2 hold backstore I/O from the
 *           start, bits 3-4 the initiator's MaxRecvDataSegmentLength (512,
 *           4096, 8192, 262144), bits 5-6 queue depth (128, 1, 2, 8)
 *   records, each starting with a kind byte k:
 *     k < 0xc0  a PDU appended to the stream (not sent yet): 48 bytes of BHS,
 *               TotalAHSLength * 4 bytes of AHS, DataSegmentLength bytes of
 *               data (zeroes where the input ends); digests computed as
 *               negotiated unless k bit 0 (header) / bit 1 (data) says to take
 *               them from the input; k bit 2: CmdSN filled in (and counted)
 *     0xc0      deliver: 2 bytes N, the first N bytes of the stream (0: all)
 *               reach the target as one read, then the reactor runs
 *     0xc1      raw: 1 byte L, L bytes appended to the stream
 *     0xc2      hold backstore I/O; 0xc3 let it go; 0xc4 complete what is held
 *     0xc5      the current connection's initiator hangs up
 *     0xc6      1 byte b: another connection logs in and becomes the current
 *               one (at most 4): a second I_T nexus, or with b bit 0 the first
 *               one's ISID again (session reinstatement)
 *     0xc7      1 byte b: connection b (modulo their number) becomes the current
 *     others    ignored
 * The stream not delivered yet goes to the current connection when it
 * changes and at the end; then every initiator hangs up.
 *
 * Seeds: tests/fuzz/corpus/fuzz_pdu/, made by tests/fuzz/mkseeds_pdu.py (see
 * there) from PDUs as libiscsi's tools and our integration clients send them.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pdu.h"
#include "fake_dm.h"
#include "fake_gw.h"
#include "fuzz_input.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STREAM_MAX (4u << 20)
#define FIRST_CMDSN 1u

static struct fake_gw *g;

struct stream {
	uint8_t *buf;
	size_t off, len, cap;           /* buf[off..len) not delivered yet */
};

static void stream_put(struct stream *s, const void *p, size_t n)
{
	if (!n || s->len + n > STREAM_MAX)
		return;
	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;

		while (cap < s->len + n)
			cap *= 2;
		s->buf = realloc(s->buf, cap);
		if (!s->buf)
			abort();
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static void deliver(struct fake_dm *d, struct stream *s, size_t n)
{
	if (!n || n > s->len - s->off)
		n = s->len - s->off;
	if (!n)
		return;
	fake_dm_feed(d, s->buf + s->off, n);
	s->off += n;
	fake_gw_poll(g);
}

/* One Login Request, operational stage straight to full feature phase. */
static void login(struct fake_dm *d, uint8_t b0, uint8_t b1, uint8_t isid_no)
{
	static const uint32_t irdsl[4] = { 512, 4096, 8192, 262144 };
	static const uint32_t burst[4][2] = {
		{ 262144, 16776192 }, { 512, 512 }, { 4096, 16384 }, { 65536, 65536 },
	};
	struct iscsi_login_req req;
	uint8_t isid[6] = { 0x40, 0x00, 0x01, 0x37, 0x00, 0x01 };
	char keys[1024];
	size_t klen = 0;
	uint8_t pad[4] = { 0 };

	fake_gw_put_key(keys, &klen, sizeof(keys), "InitiatorName=" FAKE_GW_INITIATOR);
	fake_gw_put_key(keys, &klen, sizeof(keys), "SessionType=Normal");
	fake_gw_put_key(keys, &klen, sizeof(keys), "TargetName=" FAKE_GW_TARGET);
	fake_gw_put_key(keys, &klen, sizeof(keys), "HeaderDigest=%s", b0 & 1 ? "CRC32C" : "None");
	fake_gw_put_key(keys, &klen, sizeof(keys), "DataDigest=%s", b0 & 2 ? "CRC32C" : "None");
	fake_gw_put_key(keys, &klen, sizeof(keys), "InitialR2T=No");
	fake_gw_put_key(keys, &klen, sizeof(keys), "ImmediateData=Yes");
	fake_gw_put_key(keys, &klen, sizeof(keys), "MaxRecvDataSegmentLength=%u",
			irdsl[(b1 >> 3) & 3]);
	fake_gw_put_key(keys, &klen, sizeof(keys), "FirstBurstLength=%u", burst[(b0 >> 6) & 3][0]);
	fake_gw_put_key(keys, &klen, sizeof(keys), "MaxBurstLength=%u", burst[(b0 >> 6) & 3][1]);
	fake_gw_put_key(keys, &klen, sizeof(keys), "MaxOutstandingR2T=16");
	fake_gw_put_key(keys, &klen, sizeof(keys), "ErrorRecoveryLevel=0");

	isid[5] = isid_no;
	fake_gw_login_req(&req, isid, 0x1000, FIRST_CMDSN, (uint32_t)klen);
	fake_dm_feed(d, &req, sizeof(req));
	fake_dm_feed(d, keys, klen);
	fake_dm_feed(d, pad, iscsi_pad4((uint32_t)klen));
	fake_gw_poll(g);
}

static void target_settings(uint8_t b0, uint8_t b1)
{
	static const uint32_t trdsl[4] = { 512, 8192, 65536, 262144 };
	static const uint32_t qdepth[4] = { 128, 1, 2, 8 };
	struct gw_target_cfg *t = &g->gw->cfg->targets[0];

	t->immediate_data = !(b0 & 4);
	t->initial_r2t = b0 & 8;
	t->max_recv_dsl = trdsl[(b0 >> 4) & 3];
	t->first_burst = 262144;
	t->max_burst = 16776192;
	t->max_outstanding_r2t = (b1 & 3) + 1u;
	t->queue_depth = qdepth[(b1 >> 5) & 3];
}

static void pdu_record(struct input *in, struct stream *s, uint8_t k, bool hd, bool dd,
		       uint32_t max_dsl, uint32_t *cmd_sn)
{
	struct iscsi_bhs bhs;
	uint8_t ahs[ISCSI_MAX_AHS_LEN], tail[8] = { 0 };
	uint32_t ahs_len, dsl, pad, v;
	uint8_t *data;

	take(in, &bhs, sizeof(bhs));
	if ((k & 4) && fake_gw_has_cmd_sn(iscsi_bhs_opcode(&bhs))) {
		put_be32((uint8_t *)&bhs + 24, *cmd_sn);
		if (!iscsi_bhs_immediate(&bhs))
			(*cmd_sn)++;
	}
	ahs_len = iscsi_ahs_len(&bhs);
	take(in, ahs, ahs_len);
	stream_put(s, &bhs, sizeof(bhs));
	stream_put(s, ahs, ahs_len);
	if (hd) {
		if (k & 1) {
			take(in, &v, 4);
		} else {
			uint32_t crc = iscsi_crc32c(&bhs, sizeof(bhs), ISCSI_CRC32C_SEED);

			crc = iscsi_crc32c(ahs, ahs_len, crc);
			v = htole32(iscsi_digest_final(crc));
		}
		stream_put(s, &v, 4);
	}
	dsl = iscsi_bhs_dsl(&bhs);
	if (dsl > max_dsl)
		return; /* the header alone ends the connection */
	if (dsl > in->left) {
		/* the input ends inside the data: so does the stream */
		stream_put(s, in->p, in->left);
		in->p += in->left;
		in->left = 0;
		return;
	}
	data = malloc(dsl ? dsl : 1);
	if (!data)
		abort();
	take(in, data, dsl);
	pad = iscsi_pad4(dsl);
	stream_put(s, data, dsl);
	stream_put(s, tail, pad);
	if (dd && dsl) {
		if (k & 2)
			take(in, &v, 4);
		else
			v = htole32(iscsi_data_digest(data, dsl, pad));
		stream_put(s, &v, 4);
	}
	free(data);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* ISERGW_FUZZ_VERBOSE=1: every log line, to see what an input does */
	gw_log_set_level(getenv("ISERGW_FUZZ_VERBOSE") ? GW_LOG_DEBUG : GW_LOG_ERR);
	if (fake_gw_create(&fake_dm_ops, GW_TRANSPORT_TCP, &g))
		abort();
	return 0;
}

/* The connections of an input: [0] logged in first; records go to the current one. */
#define MAX_CONNS 4

struct conn_slot {
	struct fake_dm *d;
	uint32_t cmd_sn;
};

/* A new connection logs in (ISID isid_no: the same as a live session's reinstates it). */
static struct fake_dm *connect_login(uint8_t b0, uint8_t b1, uint8_t isid_no, bool *hd, bool *dd,
				     uint32_t *max_dsl)
{
	struct iscsi_conn *c;
	struct fake_dm *d;

	if (fake_dm_connect(g->portal, g->r, &d, &c))
		abort();
	login(d, b0, b1, isid_no);
	if (fake_dm_closed(d) || c->state != CONN_STATE_FFP) {
		fprintf(stderr, "fuzz_pdu: the login did not reach full feature phase\n");
		abort();
	}
	*hd = c->params.header_digest;
	*dd = c->params.data_digest;
	*max_dsl = c->params.max_recv_dsl; /* c may be gone once a record dropped it */
	if (*hd != (b0 & 1) || *dd != !!(b0 & 2))
		abort();
	return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct stream s = { 0 };
	struct conn_slot conns[MAX_CONNS];
	unsigned int nconns = 1, cur = 0;
	uint32_t max_dsl;
	uint8_t b0 = 0, b1 = 0;
	bool hd, dd;

	take(&in, &b0, 1);
	take(&in, &b1, 1);
	if (fake_gw_reset(g))
		abort();
	target_settings(b0, b1);
	memset(conns, 0, sizeof(conns));
	conns[0].d = connect_login(b0, b1, 1, &hd, &dd, &max_dsl);
	conns[0].cmd_sn = FIRST_CMDSN;
	fake_gw_hold_io(g, b1 & 4);

	while (in.left) {
		struct conn_slot *cs = &conns[cur];
		uint8_t k = 0, b[2];

		take(&in, &k, 1);
		if (k < 0xc0) {
			pdu_record(&in, &s, k, hd, dd, max_dsl, &cs->cmd_sn);
			continue;
		}
		switch (k) {
		case 0xc0:
			take(&in, b, 2);
			deliver(cs->d, &s, get_be16(b));
			break;
		case 0xc1: {
			uint8_t raw[255];

			take(&in, b, 1);
			take(&in, raw, b[0]);
			stream_put(&s, raw, b[0]);
			break;
		}
		case 0xc2:
			fake_gw_hold_io(g, true);
			break;
		case 0xc3:
			fake_gw_hold_io(g, false);
			fake_gw_poll(g);
			break;
		case 0xc4:
			fake_gw_run_io(g);
			fake_gw_poll(g);
			break;
		case 0xc5:
			deliver(cs->d, &s, 0);
			fake_dm_hangup(cs->d);
			fake_gw_poll(g);
			break;
		case 0xc6:
			/* another connection: a new nexus, or (b bit 0) reinstating the first */
			take(&in, b, 1);
			if (nconns == MAX_CONNS)
				break;
			deliver(cs->d, &s, 0);
			cur = nconns++;
			conns[cur].d = connect_login(b0, b1, b[0] & 1 ? 1 : (uint8_t)(cur + 1), &hd,
						     &dd, &max_dsl);
			conns[cur].cmd_sn = FIRST_CMDSN;
			break;
		case 0xc7:
			take(&in, b, 1);
			deliver(cs->d, &s, 0);
			cur = b[0] % nconns;
			break;
		default:
			break;
		}
	}
	deliver(conns[cur].d, &s, 0);
	free(s.buf);

	/* the initiators go away: everything must be released */
	for (unsigned int i = 0; i < nconns; i++)
		fake_dm_hangup(conns[i].d);
	fake_gw_poll(g);
	fake_gw_hold_io(g, false);
	fake_gw_poll(g);
	for (unsigned int i = 0; i < nconns; i++) {
		if (!fake_dm_closed(conns[i].d) || atomic_load(&g->gw->stats.connections) != 0 ||
		    !list_empty(&g->gw->sessions)) {
			fprintf(stderr, "fuzz_pdu: a connection outlived its transport (closed %d, "
				"connections %llu)\n", fake_dm_closed(conns[i].d),
				(unsigned long long)atomic_load(&g->gw->stats.connections));
			abort();
		}
		fake_dm_free(conns[i].d);
	}
	return 0;
}
