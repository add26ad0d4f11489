/* SPDX-License-Identifier: Apache-2.0 */
/* An initiator for the unit tests of the iSCSI core (see fake_ini.h). */
#include "fake_ini.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bufpool.h"
#include "common/log.h"
#include "config/config.h"

#define FIRST_CMDSN 1u

#define MAX_LIVE 16

static struct fake_gw *shared_gw;
/* connections not freed yet: a test that failed leaves its own behind */
static struct fake_dm *live[MAX_LIVE];

static void live_hangup(struct fake_dm *d)
{
	fake_dm_set_tx(d, NULL, NULL);
	fake_dm_hangup(d);
	fake_gw_poll(shared_gw);
	fake_gw_hold_io(shared_gw, false);
	fake_gw_poll(shared_gw);
	fake_dm_free(d);
}

struct fake_gw *fake_ini_gw(void)
{
	for (size_t i = 0; i < MAX_LIVE; i++) {
		if (live[i])
			live_hangup(live[i]);
		live[i] = NULL;
	}
	if (!shared_gw && fake_gw_create(&fake_dm_ops, GW_TRANSPORT_TCP, &shared_gw))
		abort();
	if (fake_gw_reset(shared_gw))
		abort();
	return shared_gw;
}

void fake_ini_gw_destroy(void)
{
	fake_gw_destroy(shared_gw);
	shared_gw = NULL;
	/* task buffers are cached per thread, as a reactor thread drains its cache at exit */
	gw_buf_cache_drain();
}

int fake_ini_group_teardown(void **state)
{
	(void)state;
	fake_ini_gw_destroy();
	return 0;
}

void fake_ini_log_level(void)
{
	gw_log_set_level(getenv("ISERGW_TEST_VERBOSE") ? GW_LOG_DEBUG : GW_LOG_ERR);
}

static void record_tx(void *arg, const struct iscsi_tx_pdu *pdu)
{
	struct fake_ini *ini = arg;
	struct fake_ini_rx *r;

	if (ini->nrx == ini->caprx) {
		size_t cap = ini->caprx ? ini->caprx * 2 : 64;
		struct fake_ini_rx *n = realloc(ini->rx, cap * sizeof(*n));

		if (!n)
			abort();
		ini->rx = n;
		ini->caprx = cap;
	}
	r = &ini->rx[ini->nrx++];
	r->bhs = pdu->bhs;
	r->dlen = pdu->data_len;
	r->data = NULL;
	if (pdu->data_len) {
		r->data = malloc(pdu->data_len);
		if (!r->data)
			abort();
		memcpy(r->data, pdu->data, pdu->data_len);
	}
}

static void target_settings(struct fake_gw *g, const struct fake_ini_opts *o)
{
	struct gw_target_cfg *t = &g->gw->cfg->targets[0];

	/* the target allows everything: the initiator's keys choose */
	t->immediate_data = true;
	t->initial_r2t = false;
	t->first_burst = 262144;
	t->max_burst = 16776192;
	t->max_outstanding_r2t = 16;
	t->max_recv_dsl = o->target_mrdsl ? o->target_mrdsl : 65536;
	t->queue_depth = o->queue_depth ? o->queue_depth : 128;
}

void fake_ini_login(struct fake_ini *ini, const struct fake_ini_opts *o)
{
	if (fake_ini_login_try(ini, o)) {
		fprintf(stderr, "fake_ini: the login did not reach full feature phase\n");
		abort();
	}
}

int fake_ini_login_try(struct fake_ini *ini, const struct fake_ini_opts *o)
{
	static const struct fake_ini_opts none;
	uint8_t isid[6] = { 0x40, 0x00, 0x01, 0x37, 0x00, 0x01 };
	struct iscsi_login_req req;
	uint8_t pad[4] = { 0 };
	char keys[1024];
	size_t klen = 0;

	if (!o)
		o = &none;
	memset(ini, 0, sizeof(*ini));
	ini->g = shared_gw;
	target_settings(ini->g, o);
	if (fake_dm_connect(ini->g->portal, ini->g->r, &ini->d, &ini->c))
		abort();
	fake_dm_set_tx(ini->d, record_tx, ini);
	fake_gw_put_key(keys, &klen, sizeof(keys), "InitiatorName=" FAKE_GW_INITIATOR);
	fake_gw_put_key(keys, &klen, sizeof(keys), "SessionType=Normal");
	fake_gw_put_key(keys, &klen, sizeof(keys), "TargetName=" FAKE_GW_TARGET);
	fake_gw_put_key(keys, &klen, sizeof(keys), "HeaderDigest=%s", o->hd ? "CRC32C" : "None");
	fake_gw_put_key(keys, &klen, sizeof(keys), "DataDigest=%s", o->dd ? "CRC32C" : "None");
	fake_gw_put_key(keys, &klen, sizeof(keys), "InitialR2T=%s", o->initial_r2t ? "Yes" : "No");
	fake_gw_put_key(keys, &klen, sizeof(keys), "ImmediateData=%s",
			o->no_immediate_data ? "No" : "Yes");
	fake_gw_put_key(keys, &klen, sizeof(keys), "MaxRecvDataSegmentLength=262144");
	fake_gw_put_key(keys, &klen, sizeof(keys), "FirstBurstLength=%u",
			o->first_burst ? o->first_burst : 65536);
	fake_gw_put_key(keys, &klen, sizeof(keys), "MaxBurstLength=%u",
			o->max_burst ? o->max_burst : 262144);
	fake_gw_put_key(keys, &klen, sizeof(keys), "MaxOutstandingR2T=%u",
			o->max_out_r2t ? o->max_out_r2t : 1);
	fake_gw_put_key(keys, &klen, sizeof(keys), "ErrorRecoveryLevel=0");
	isid[5] = o->isid_no ? o->isid_no : 1;
	fake_gw_login_req(&req, isid, 0x1000, FIRST_CMDSN, (uint32_t)klen);
	req.tsih = htobe16(o->tsih);
	for (size_t i = 0; i < MAX_LIVE; i++) {
		if (!live[i]) {
			live[i] = ini->d;
			break;
		}
	}
	fake_ini_feed(ini, &req, sizeof(req));
	fake_ini_feed(ini, keys, klen);
	fake_ini_feed(ini, pad, iscsi_pad4((uint32_t)klen));
	if (!ini->c || ini->c->state != CONN_STATE_FFP) {
		int i = fake_ini_find(ini, 0, ISCSI_OP_LOGIN_RSP, ~0u);
		const struct iscsi_login_rsp *rsp;

		if (i < 0)
			abort();
		rsp = (const struct iscsi_login_rsp *)&ini->rx[i].bhs;
		if (!rsp->status_class && !rsp->status_detail)
			abort();
		return rsp->status_class << 8 | rsp->status_detail;
	}
	ini->hd = ini->c->params.header_digest;
	ini->dd = ini->c->params.data_digest;
	if (ini->hd != o->hd || ini->dd != o->dd)
		abort();
	ini->cmd_sn = FIRST_CMDSN;
	fake_ini_clear(ini);
	return 0;
}

uint32_t fake_ini_cmd_sn(struct fake_ini *ini, bool immediate)
{
	return immediate ? ini->cmd_sn : ini->cmd_sn++;
}

size_t fake_ini_encode(const struct fake_ini *ini, const struct iscsi_bhs *bhs, const void *ahs,
		       const void *data, uint32_t dlen, bool bad_hd, bool bad_dd, uint8_t *out,
		       size_t cap)
{
	uint32_t ahs_len = iscsi_ahs_len(bhs), pad = iscsi_pad4(dlen), v;
	size_t len = 0;

	if (ISCSI_BHS_LEN + ahs_len + 8 + (size_t)dlen + pad > cap)
		abort();
	memcpy(out, bhs, ISCSI_BHS_LEN);
	len += ISCSI_BHS_LEN;
	if (ahs_len)
		memcpy(out + len, ahs, ahs_len);
	len += ahs_len;
	if (ini->hd) {
		v = htole32(iscsi_digest(out, len) ^ (bad_hd ? 1u : 0u));
		memcpy(out + len, &v, 4);
		len += 4;
	}
	if (dlen) {
		memcpy(out + len, data, dlen);
		memset(out + len + dlen, 0, pad);
		len += dlen + pad;
		if (ini->dd) {
			v = htole32(iscsi_data_digest(data, dlen, pad) ^ (bad_dd ? 1u : 0u));
			memcpy(out + len, &v, 4);
			len += 4;
		}
	}
	return len;
}

void fake_ini_feed(struct fake_ini *ini, const void *buf, size_t len)
{
	if (fake_dm_feed(ini->d, buf, len))
		abort();
	fake_gw_poll(ini->g);
	if (fake_dm_closed(ini->d))
		ini->c = NULL;
}

void fake_ini_send(struct fake_ini *ini, const struct iscsi_bhs *bhs, const void *data,
		   uint32_t dlen)
{
	size_t cap = ISCSI_BHS_LEN + 8 + (size_t)dlen + 4;
	uint8_t *buf = malloc(cap);
	size_t len;

	if (!buf)
		abort();
	len = fake_ini_encode(ini, bhs, NULL, data, dlen, false, false, buf, cap);
	fake_ini_feed(ini, buf, len);
	free(buf);
}

int fake_ini_find(const struct fake_ini *ini, size_t from, uint8_t op, uint32_t itt)
{
	for (size_t i = from; i < ini->nrx; i++) {
		const struct iscsi_bhs *b = &ini->rx[i].bhs;

		if (iscsi_bhs_opcode(b) == op && (itt == ~0u || be32toh(b->itt) == itt))
			return (int)i;
	}
	return -1;
}

void fake_ini_window(struct fake_ini *ini, uint32_t *exp_cmd_sn, uint32_t *max_cmd_sn)
{
	static uint32_t n;
	uint32_t itt = 0xfffe0000u + (n++ & 0xffffu);
	struct iscsi_bhs bhs;
	size_t from = ini->nrx;
	int i;

	fake_ini_nop_out(&bhs, itt, ini->cmd_sn, 0);
	fake_ini_send(ini, &bhs, NULL, 0);
	i = fake_ini_find(ini, from, ISCSI_OP_NOP_IN, itt);
	if (i < 0)
		abort();
	*exp_cmd_sn = get_be32((const uint8_t *)&ini->rx[i].bhs + 28);
	*max_cmd_sn = get_be32((const uint8_t *)&ini->rx[i].bhs + 32);
	free(ini->rx[i].data);
	memmove(&ini->rx[i], &ini->rx[i + 1], (ini->nrx - (size_t)i - 1) * sizeof(ini->rx[0]));
	ini->nrx--;
}

void fake_ini_clear(struct fake_ini *ini)
{
	for (size_t i = 0; i < ini->nrx; i++)
		free(ini->rx[i].data);
	ini->nrx = 0;
}

bool fake_ini_closed(const struct fake_ini *ini)
{
	return fake_dm_closed(ini->d);
}

void fake_ini_logout_free(struct fake_ini *ini)
{
	for (size_t i = 0; i < MAX_LIVE; i++)
		if (live[i] == ini->d)
			live[i] = NULL;
	if (!ini->d)
		return;
	fake_dm_hangup(ini->d);
	fake_gw_poll(ini->g);
	fake_gw_hold_io(ini->g, false);
	fake_gw_poll(ini->g);
	if (!fake_dm_closed(ini->d)) {
		fprintf(stderr, "fake_ini: the connection outlived its transport\n");
		abort();
	}
	fake_dm_free(ini->d);
	fake_ini_clear(ini);
	free(ini->rx);
	memset(ini, 0, sizeof(*ini));
}

void fake_ini_scsi_cmd(struct iscsi_bhs *bhs, uint32_t itt, uint32_t cmd_sn, bool immediate,
		       uint64_t lun, const uint8_t *cdb, size_t cdb_len, uint8_t flags,
		       uint32_t edtl, uint32_t dlen)
{
	struct iscsi_scsi_cmd *h = (struct iscsi_scsi_cmd *)bhs;

	memset(h, 0, sizeof(*h));
	h->opcode = ISCSI_OP_SCSI_CMD | (immediate ? ISCSI_OP_IMMEDIATE : 0);
	h->flags = flags;
	iscsi_lun_encode(lun, h->lun);
	h->itt = htobe32(itt);
	h->exp_xfer_len = htobe32(edtl);
	h->cmd_sn = htobe32(cmd_sn);
	memcpy(h->cdb, cdb, cdb_len < 16 ? cdb_len : 16);
	iscsi_bhs_set_dsl(bhs, dlen);
}

void fake_ini_data_out(struct iscsi_bhs *bhs, uint32_t itt, uint32_t ttt, uint32_t data_sn,
		       uint32_t offset, uint32_t dlen, bool final)
{
	struct iscsi_data_out *h = (struct iscsi_data_out *)bhs;

	memset(h, 0, sizeof(*h));
	h->opcode = ISCSI_OP_DATA_OUT;
	h->flags = final ? ISCSI_FLAG_FINAL : 0;
	h->itt = htobe32(itt);
	h->ttt = htobe32(ttt);
	h->data_sn = htobe32(data_sn);
	h->buffer_offset = htobe32(offset);
	iscsi_bhs_set_dsl(bhs, dlen);
}

void fake_ini_nop_out(struct iscsi_bhs *bhs, uint32_t itt, uint32_t cmd_sn, uint32_t dlen)
{
	struct iscsi_nop_out *h = (struct iscsi_nop_out *)bhs;

	memset(h, 0, sizeof(*h));
	h->opcode = ISCSI_OP_NOP_OUT | ISCSI_OP_IMMEDIATE;
	h->flags = ISCSI_FLAG_FINAL;
	h->itt = htobe32(itt);
	h->ttt = ISCSI_RSVD_TAG;
	h->cmd_sn = htobe32(cmd_sn);
	iscsi_bhs_set_dsl(bhs, dlen);
}

void fake_ini_rw10(uint8_t cdb[16], bool write, uint32_t lba, uint16_t n)
{
	memset(cdb, 0, 16);
	cdb[0] = write ? 0x2a : 0x28;
	put_be32(cdb + 2, lba);
	put_be16(cdb + 7, n);
}
