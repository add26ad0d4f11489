/* SPDX-License-Identifier: Apache-2.0 */
// LINK: isergw_gw
// SOURCES: fake_verbs.c ../common/fake_gw.c
// COVERS: gateway/dm/iser.c
/*
 * The iSER datamover's receive path (dm/iser.c, RFC 7145) with the verbs
 * and RDMA CM calls at the edge faked (fake_verbs.c): the portal listens
 * through iser.c's own listener; each input connects (a connect request
 * with the CM private data and depths it chooses), logs in over an iSER
 * Send (RDMAExtensions=Yes, the login-to-full-feature switch of
 * iser_enter_ffp), then plays records: Sends carrying an iSER header (its
 * flags, write STag/VA and read STag/VA) and an iSCSI PDU, SCSI commands
 * whose data moves by RDMA Read (from the input's "initiator memory") and
 * RDMA Write, completions held or failed, CM events. The core and the SCSI
 * layer behind it are the real ones, on the memory LUNs of fake_gw.c. At the
 * end the initiator disconnects: the QP, connection, session and tasks must
 * all be gone (else abort); LeakSanitizer checks the rest.
 *
 * Input:
 *   byte 0  bit 0 Send with Invalidate not supported, bit 1 no CM private
 *           data, bit 2 ESTABLISHED before the login (else the first receive
 *           establishes), bit 3 InitiatorRecvDataSegmentLength declared, bit 4
 *           ImmediateData=No, bits 5-6 RDMA Reads allowed (0, 1, 4, 16), bit 7
 *           hold backstore I/O from the start
 *   byte 1  bits 0-1 the target's MaxRecvDataSegmentLength (512, 8192, 65536,
 *           262144: iSER caps it), bits 2-3 FirstBurst/MaxBurstLength, bits
 *           4-5 queue depth (128, 1, 2, 8), bit 6 MaxOutstandingUnexpectedPDUs=2
 *   records, each starting with a kind byte k:
 *     k < 0xc0  a Send: 28 bytes of iSER header (k bit 0: its flags made a
 *               valid control-type header, keeping WSV/RSV), 48 of BHS (k bit
 *               2: CmdSN filled in and counted), the AHS, then the data segment
 *               as far as the input goes (k bit 1: none, the data left in the
 *               initiator's buffer as libiscsi does)
 *     0xc1      initiator memory: 1 byte L, then L bytes RDMA Reads return
 *     0xc2      hold send-queue completions; 0xc3 release them
 *     0xc4      1 byte: the status of the next send-queue completion
 *     0xc5      RDMA_CM_EVENT_ESTABLISHED
 *     0xc6      the initiator disconnects (nothing more is read)
 *     0xc7      hold backstore I/O; 0xc8 let it go; 0xc9 complete what is held
 *     others    the reactor runs
 *
 * Seeds: tests/fuzz/corpus/fuzz_iser/, made by tests/fuzz/mkseeds_iser.py
 * from what Linux ib_iser and libiscsi's iSER initiator send.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pdu.h"
#include "dm/iser_spec.h"
#include "fake_gw.h"
#include "fuzz_input.h"
#include "fake_verbs.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FIRST_CMDSN 1u
#define SEND_MAX (28u + ISCSI_BHS_LEN + ISCSI_MAX_AHS_LEN + 65536u)

static struct fake_gw *g;
static uint8_t sendbuf[SEND_MAX];
static uint8_t remote_mem[256];

static void login(struct rdma_cm_id *id, uint8_t b0, uint8_t b1)
{
	static const uint32_t burst[4][2] = {
		{ 262144, 16776192 }, { 512, 512 }, { 8192, 65536 }, { 65536, 65536 },
	};
	static const uint8_t isid[6] = { 0x80, 0x00, 0x01, 0x37, 0x00, 0x02 };
	struct iscsi_login_req req;
	char keys[1024];
	size_t klen = 0, len;

	fake_gw_put_key(keys, &klen, sizeof(keys), "InitiatorName=" FAKE_GW_INITIATOR);
	fake_gw_put_key(keys, &klen, sizeof(keys), "SessionType=Normal");
	fake_gw_put_key(keys, &klen, sizeof(keys), "TargetName=" FAKE_GW_TARGET);
	fake_gw_put_key(keys, &klen, sizeof(keys), "RDMAExtensions=Yes");
	fake_gw_put_key(keys, &klen, sizeof(keys), "HeaderDigest=None");
	fake_gw_put_key(keys, &klen, sizeof(keys), "DataDigest=None");
	if (b0 & 8)
		fake_gw_put_key(keys, &klen, sizeof(keys), "InitiatorRecvDataSegmentLength=8192");
	fake_gw_put_key(keys, &klen, sizeof(keys), "TargetRecvDataSegmentLength=8192");
	fake_gw_put_key(keys, &klen, sizeof(keys), "InitialR2T=No");
	fake_gw_put_key(keys, &klen, sizeof(keys), "ImmediateData=%s", b0 & 16 ? "No" : "Yes");
	fake_gw_put_key(keys, &klen, sizeof(keys), "FirstBurstLength=%u", burst[(b1 >> 2) & 3][0]);
	fake_gw_put_key(keys, &klen, sizeof(keys), "MaxBurstLength=%u", burst[(b1 >> 2) & 3][1]);
	fake_gw_put_key(keys, &klen, sizeof(keys), "MaxOutstandingR2T=1");
	fake_gw_put_key(keys, &klen, sizeof(keys), "ErrorRecoveryLevel=0");
	if (b1 & 0x40)
		fake_gw_put_key(keys, &klen, sizeof(keys), "MaxOutstandingUnexpectedPDUs=2");

	fake_gw_login_req(&req, isid, 0x2000, FIRST_CMDSN, (uint32_t)klen);
	iser_hdr_encode_ctrl(sendbuf);
	memcpy(sendbuf + sizeof(struct iser_hdr), &req, sizeof(req));
	len = sizeof(struct iser_hdr) + sizeof(req);
	memcpy(sendbuf + len, keys, klen);
	len += klen;
	if (fv_send(id, sendbuf, len))
		abort();
	fake_gw_poll(g);
	if (!list_empty(&g->gw->sessions))
		return;
	/* the target proposed InitiatorRecvDataSegmentLength (not declared): answer it */
	klen = 0;
	fake_gw_put_key(keys, &klen, sizeof(keys), "InitiatorRecvDataSegmentLength=8192");
	iscsi_bhs_set_dsl((struct iscsi_bhs *)&req, (uint32_t)klen);
	req.exp_stat_sn = htobe32(1);
	memcpy(sendbuf + sizeof(struct iser_hdr), &req, sizeof(req));
	len = sizeof(struct iser_hdr) + sizeof(req);
	memcpy(sendbuf + len, keys, klen);
	len += klen;
	if (fv_send(id, sendbuf, len))
		abort();
	fake_gw_poll(g);
}

static void target_settings(uint8_t b1)
{
	static const uint32_t trdsl[4] = { 512, 8192, 65536, 262144 };
	static const uint32_t qdepth[4] = { 128, 1, 2, 8 };
	struct gw_target_cfg *t = &g->gw->cfg->targets[0];

	t->immediate_data = true;
	t->initial_r2t = false;
	t->max_recv_dsl = trdsl[b1 & 3];
	t->first_burst = 262144;
	t->max_burst = 16776192;
	t->max_outstanding_r2t = 1;
	t->queue_depth = qdepth[(b1 >> 4) & 3];
}

static void send_record(struct input *in, uint8_t k, uint32_t *cmd_sn)
{
	struct iser_hdr *ih = (struct iser_hdr *)sendbuf;
	struct iscsi_bhs *bhs = (struct iscsi_bhs *)(sendbuf + sizeof(*ih));
	size_t len = sizeof(*ih) + ISCSI_BHS_LEN;
	uint32_t ahs_len, dsl;

	take(in, ih, sizeof(*ih));
	if (k & 1) {
		ih->flags = ISER_OP_ISCSI_CTRL | (ih->flags & (ISER_WSV | ISER_RSV));
		memset(ih->rsvd, 0, sizeof(ih->rsvd));
	}
	take(in, bhs, ISCSI_BHS_LEN);
	if ((k & 4) && fake_gw_has_cmd_sn(iscsi_bhs_opcode(bhs))) {
		put_be32((uint8_t *)bhs + 24, *cmd_sn);
		if (!iscsi_bhs_immediate(bhs))
			(*cmd_sn)++;
	}
	ahs_len = iscsi_ahs_len(bhs);
	len += take(in, sendbuf + len, ahs_len);
	dsl = iscsi_bhs_dsl(bhs);
	if (!(k & 2) && dsl) {
		if (dsl > SEND_MAX - len)
			dsl = (uint32_t)(SEND_MAX - len);
		len += take(in, sendbuf + len, dsl);
	}
	/* no connection, or no receive posted: the initiator's Send is lost */
	if (fv_conn())
		(void)fv_send(fv_conn(), sendbuf, len);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const struct gw_dm_ops *dm;

	(void)argc;
	(void)argv;
	/* ISERGW_FUZZ_VERBOSE=1: every log line, to see what an input does */
	gw_log_set_level(getenv("ISERGW_FUZZ_VERBOSE") ? GW_LOG_DEBUG : GW_LOG_ERR);
	dm = gw_dm_for_transport(GW_TRANSPORT_ISER);
	if (!dm || fake_gw_create(dm, GW_TRANSPORT_ISER, &g))
		abort();
	/* the portal listens through iser.c (reactor 0's epoll gets the CM channel) */
	if (dm->listen(g->portal) || !fv_listener())
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t depths[4] = { 0, 1, 4, 16 };
	struct input in = { data, size };
	struct iser_cm_hdr cm = { 0 };
	struct rdma_cm_id *id;
	struct iscsi_session *s;
	uint32_t cmd_sn = FIRST_CMDSN;
	uint8_t b0 = 0, b1 = 0;
	bool hung = false;

	take(&in, &b0, 1);
	take(&in, &b1, 1);
	if (fake_gw_reset(g))
		abort();
	target_settings(b1);
	fv_set_remote(NULL, 0);
	cm.flags = ISER_CM_ZBVA_NOT_SUP | (b0 & 1 ? ISER_CM_SEND_W_INV_NOT_SUP : 0);
	id = fv_connect(b0 & 2 ? NULL : &cm, sizeof(cm), depths[(b0 >> 5) & 3], 16);
	if (!id)
		abort();
	fake_gw_poll(g);
	if (!fv_accepted(id, NULL)) {
		fprintf(stderr, "fuzz_iser: the connection was not accepted\n");
		abort();
	}
	if (b0 & 4) {
		fv_cm_event(id, RDMA_CM_EVENT_ESTABLISHED);
		fake_gw_poll(g);
	}
	login(id, b0, b1);
	s = list_empty(&g->gw->sessions) ? NULL :
		list_first_entry(&g->gw->sessions, struct iscsi_session, link);
	if (!s || s->conn->state != CONN_STATE_FFP) {
		fprintf(stderr, "fuzz_iser: the login did not reach full feature phase\n");
		abort();
	}
	fake_gw_hold_io(g, b0 & 0x80);

	while (in.left && !hung) {
		uint8_t k = 0, b = 0;

		take(&in, &k, 1);
		if (k < 0xc0) {
			send_record(&in, k, &cmd_sn);
			fake_gw_poll(g);
			continue;
		}
		switch (k) {
		case 0xc1:
			take(&in, &b, 1);
			take(&in, remote_mem, b);
			fv_set_remote(remote_mem, b);
			break;
		case 0xc2:
			fv_hold_sq(true);
			break;
		case 0xc3:
			fv_hold_sq(false);
			break;
		case 0xc4:
			take(&in, &b, 1);
			fv_fail_next((enum ibv_wc_status)(b % (IBV_WC_GENERAL_ERR + 1)));
			break;
		case 0xc5:
			if (fv_conn())
				fv_cm_event(fv_conn(), RDMA_CM_EVENT_ESTABLISHED);
			break;
		case 0xc6:
			hung = true;
			break;
		case 0xc7:
			fake_gw_hold_io(g, true);
			break;
		case 0xc8:
			fake_gw_hold_io(g, false);
			break;
		case 0xc9:
			fake_gw_run_io(g);
			break;
		default:
			break;
		}
		fake_gw_poll(g);
	}

	/* the initiator goes away: everything must be released */
	fv_fail_next(IBV_WC_SUCCESS);
	fv_hold_sq(false);
	fake_gw_hold_io(g, false);
	fake_gw_poll(g);
	if (fv_conn())
		fv_cm_event(fv_conn(), RDMA_CM_EVENT_DISCONNECTED);
	fake_gw_poll(g);
	if (fv_live_qps() || atomic_load(&g->gw->stats.connections) != 0 ||
	    !list_empty(&g->gw->sessions)) {
		fprintf(stderr, "fuzz_iser: the connection outlived the RDMA connection (QPs %u, "
			"connections %llu)\n", fv_live_qps(),
			(unsigned long long)atomic_load(&g->gw->stats.connections));
		abort();
	}
	return 0;
}
