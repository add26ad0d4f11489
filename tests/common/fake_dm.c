/* SPDX-License-Identifier: Apache-2.0 */
/* A fake TCP datamover for the core (see fake_dm.h). */
#include "fake_dm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pdu.h"
#include "core/datamover.h"
#include "dm/dm.h"
#include "common/bufpool.h"

#define FAKE_LOGIN_MAX_DSL 65536u       /* as tcp.c during login */
#define FAKE_RX_MIN        (256u * 1024u)
/*
 * Task buffers: like iSER's registered pool, a connection has so much
 * (FAKE_BUF_POOL); a task that does not fit waits (-EAGAIN) and is resumed
 * in arrival order when buffers come back, one larger than the whole pool
 * fails (-ENOMEM).
 */
#define FAKE_BUF_POOL      (1u << 20)

struct fake_buf_wait {
	struct list_head link;
	struct iscsi_task *t;
};

struct fake_dm {
	struct iscsi_conn *conn;
	struct reactor *reactor;
	uint8_t *rx;
	size_t rxlen, rxcap, max_pdu;
	uint32_t max_rx_dsl;
	bool hd, dd;
	bool closing;                   /* terminate ran */
	bool closed;                    /* iscsi_conn_closed ran */
	bool hangup;
	struct iscsi_tx_pdu *txhead, *txtail;
	struct reactor_deferred rx_work;
	struct reactor_deferred flush_work;
	struct reactor_deferred closed_work;
	struct reactor_deferred hangup_work;
	uint32_t buf_used;
	struct list_head buf_waiters;   /* struct fake_buf_wait, oldest first */
	struct reactor_deferred buf_work;
	fake_dm_tx_fn tx_fn;
	void *tx_arg;
	uint64_t tx_pdus;
	uint32_t tx_sum;
};

static void tx_complete(struct iscsi_tx_pdu *pdu, int status)
{
	if (pdu->sent)
		pdu->sent(pdu, status);
	else
		iscsi_tx_pdu_free(pdu);
}

/* "writev": read every byte of each queued PDU, then complete it. */
static void fake_flush(void *arg)
{
	struct fake_dm *d = arg;

	while (d->txhead && !d->closing) {
		struct iscsi_tx_pdu *pdu = d->txhead;

		d->txhead = pdu->next;
		if (!d->txhead)
			d->txtail = NULL;
		d->tx_sum = iscsi_crc32c(&pdu->bhs, ISCSI_BHS_LEN, d->tx_sum);
		if (pdu->data_len)
			d->tx_sum = iscsi_crc32c(pdu->data, pdu->data_len, d->tx_sum);
		if (iscsi_bhs_dsl(&pdu->bhs) != pdu->data_len) {
			fprintf(stderr, "fake_dm: %s with DataSegmentLength %u but %u data bytes\n",
				iscsi_opcode_name(pdu->bhs.opcode), iscsi_bhs_dsl(&pdu->bhs),
				pdu->data_len);
			abort();
		}
		d->tx_pdus++;
		if (d->tx_fn)
			d->tx_fn(d->tx_arg, pdu);
		tx_complete(pdu, 0);
	}
}

static int fake_send_control(struct iscsi_conn *c, struct iscsi_tx_pdu *pdu)
{
	struct fake_dm *d = c->dm_priv;

	if (d->closing)
		return -ECONNRESET;
	pdu->off = 0;
	pdu->next = NULL;
	if (d->txtail)
		d->txtail->next = pdu;
	else
		d->txhead = pdu;
	d->txtail = pdu;
	reactor_defer(d->reactor, &d->flush_work);
	return 0;
}

static void fake_closed_work(void *arg)
{
	struct fake_dm *d = arg;
	struct iscsi_conn *c = d->conn;

	free(d->rx);
	d->rx = NULL;
	d->rxlen = d->rxcap = 0;
	/* c->dm_priv stays: tasks the backstore still has give their buffers back later */
	d->conn = NULL;
	d->closed = true;
	iscsi_conn_closed(c);
}

static void fake_terminate(struct iscsi_conn *c)
{
	struct fake_dm *d = c->dm_priv;

	if (!d || d->closing)
		return;
	/* as tcp.c: push out what is queued, then fail the rest */
	reactor_deferred_cancel(d->reactor, &d->flush_work);
	reactor_deferred_cancel(d->reactor, &d->rx_work);
	fake_flush(d);
	d->closing = true;
	while (d->txhead) {
		struct iscsi_tx_pdu *pdu = d->txhead;

		d->txhead = pdu->next;
		if (!d->txhead)
			d->txtail = NULL;
		tx_complete(pdu, -ECONNRESET);
	}
	reactor_defer(d->reactor, &d->closed_work);
}

static int fake_enter_ffp(struct iscsi_conn *c)
{
	struct fake_dm *d = c->dm_priv;
	size_t need;

	d->hd = c->params.header_digest;
	d->dd = c->params.data_digest;
	d->max_rx_dsl = c->params.max_recv_dsl;
	need = (size_t)d->max_rx_dsl + ISCSI_BHS_LEN + ISCSI_MAX_AHS_LEN + 16;
	d->max_pdu = need < FAKE_RX_MIN ? FAKE_RX_MIN : need;
	return 0;
}

/* the peer the next connections say they come from (fake_dm_set_peer) */
static char fake_peer[80] = "fake-initiator:1";

void fake_dm_set_peer(const char *peer)
{
	snprintf(fake_peer, sizeof(fake_peer), "%s", peer ? peer : "fake-initiator:1");
}

static void fake_addrs(struct iscsi_conn *c, char *peer, size_t plen, char *local, size_t llen)
{
	(void)c;
	snprintf(peer, plen, "%s", fake_peer);
	snprintf(local, llen, "fake-target:3260");
}

static int fake_buf_get(struct iscsi_conn *c, struct iscsi_task *t)
{
	struct fake_dm *d = c->dm_priv;
	struct fake_buf_wait *w;

	if (t->edtl > FAKE_BUF_POOL)
		return -ENOMEM;
	if (list_empty(&d->buf_waiters) && d->buf_used + t->edtl <= FAKE_BUF_POOL) {
		t->buf = gw_buf_alloc(t->edtl);
		if (!t->buf)
			return -ENOMEM;
		d->buf_used += t->edtl;
		return 0;
	}
	w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->t = t;
	t->dm_priv = w;
	list_add_tail(&w->link, &d->buf_waiters);
	return -EAGAIN;
}

/* Buffers came back: the waiting tasks that fit now get theirs, oldest first. */
static void fake_buf_work(void *arg)
{
	struct fake_dm *d = arg;

	while (!list_empty(&d->buf_waiters)) {
		struct fake_buf_wait *w = list_first_entry(&d->buf_waiters, struct fake_buf_wait, link);
		struct iscsi_task *t = w->t;

		if (d->buf_used + t->edtl > FAKE_BUF_POOL)
			break;
		t->buf = gw_buf_alloc(t->edtl);
		if (!t->buf)
			abort();
		d->buf_used += t->edtl;
		list_del(&w->link);
		t->dm_priv = NULL;
		free(w);
		iscsi_task_buf_ready(t);
	}
}

/* Also after the connection is gone (a task the backstore still had). */
static void fake_buf_put(struct iscsi_conn *c, struct iscsi_task *t)
{
	struct fake_dm *d = c->dm_priv;
	struct fake_buf_wait *w = t->dm_priv;

	if (w) {
		/* still waiting: t->buf is the core's staging buffer */
		list_del(&w->link);
		t->dm_priv = NULL;
		free(w);
		return;
	}
	gw_buf_free(t->buf, t->edtl);
	t->buf = NULL;
	d->buf_used -= t->edtl;
	if (!list_empty(&d->buf_waiters))
		reactor_defer(d->reactor, &d->buf_work);
}

static int fake_put_data(struct iscsi_conn *c, struct iscsi_task *t)
{
	return gw_dm_tcp_ops.put_data(c, t);
}

static int fake_get_data(struct iscsi_conn *c, struct iscsi_task *t)
{
	return gw_dm_tcp_ops.get_data(c, t);
}

struct gw_dm_ops fake_dm_ops = {
	.name = "fake",
	.transport = GW_TRANSPORT_TCP,
	.send_control = fake_send_control,
	.put_data = fake_put_data,
	.buf_get = fake_buf_get,
	.buf_put = fake_buf_put,
	.get_data = fake_get_data,
	.terminate = fake_terminate,
	.enter_ffp = fake_enter_ffp,
	.addrs = fake_addrs,
};

/* What tcp.c does with the bytes it read: frame them, keep the incomplete rest. */
static void fake_rx_work(void *arg)
{
	struct fake_dm *d = arg;
	struct iscsi_conn *c = d->conn;
	struct iscsi_rx_framing f;
	size_t done;

	if (d->closing || !d->rxlen)
		return;
	f.hd = d->hd;
	f.dd = d->dd;
	f.max_dsl = c->state == CONN_STATE_LOGIN ? FAKE_LOGIN_MAX_DSL : d->max_rx_dsl;
	f.max_pdu = d->max_pdu;
	done = iscsi_conn_rx_stream(c, d->rx, d->rxlen, &f);
	if (d->closed || !d->rx || !done)
		return;
	memmove(d->rx, d->rx + done, d->rxlen - done);
	d->rxlen -= done;
}

static void fake_hangup_work(void *arg)
{
	struct fake_dm *d = arg;
	struct iscsi_conn *c = d->conn;

	if (d->closing || !c)
		return;
	if (c->state == CONN_STATE_FFP)
		iscsi_conn_peer_closed(c);
	else
		iscsi_conn_close(c);
}

int fake_dm_connect(struct gw_portal *p, struct reactor *r, struct fake_dm **out,
		    struct iscsi_conn **conn)
{
	struct fake_dm *d = calloc(1, sizeof(*d));
	struct iscsi_admission adm;
	int rc;

	if (!d)
		return -ENOMEM;
	d->reactor = r;
	d->max_rx_dsl = FAKE_LOGIN_MAX_DSL;
	d->max_pdu = FAKE_RX_MIN;
	reactor_deferred_init(&d->rx_work, fake_rx_work, d);
	reactor_deferred_init(&d->flush_work, fake_flush, d);
	reactor_deferred_init(&d->closed_work, fake_closed_work, d);
	reactor_deferred_init(&d->hangup_work, fake_hangup_work, d);
	reactor_deferred_init(&d->buf_work, fake_buf_work, d);
	list_init(&d->buf_waiters);
	gw_dm_fill_ops(&fake_dm_ops);
	rc = iscsi_conn_admit(p->gw, fake_peer, &adm);      /* as tcp.c does at accept */
	if (rc) {
		free(d);
		return rc;
	}
	rc = iscsi_conn_create(p, r, d, &adm, &d->conn);
	if (rc) {
		free(d);
		return rc;
	}
	*out = d;
	*conn = d->conn;
	return 0;
}

int fake_dm_feed(struct fake_dm *d, const void *buf, size_t len)
{
	if (d->closing || !len)
		return 0;
	if (d->rxlen + len > d->rxcap) {
		size_t cap = d->rxcap ? d->rxcap : 4096;
		uint8_t *n;

		while (cap < d->rxlen + len)
			cap *= 2;
		n = realloc(d->rx, cap);
		if (!n)
			return -ENOMEM;
		d->rx = n;
		d->rxcap = cap;
	}
	memcpy(d->rx + d->rxlen, buf, len);
	d->rxlen += len;
	reactor_defer(d->reactor, &d->rx_work);
	return 0;
}

void fake_dm_hangup(struct fake_dm *d)
{
	if (!d->closing)
		reactor_defer(d->reactor, &d->hangup_work);
}

void fake_dm_set_tx(struct fake_dm *d, fake_dm_tx_fn fn, void *arg)
{
	d->tx_fn = fn;
	d->tx_arg = arg;
}

bool fake_dm_closed(const struct fake_dm *d)
{
	return d->closed;
}

void fake_dm_free(struct fake_dm *d)
{
	if (!d)
		return;
	reactor_deferred_cancel(d->reactor, &d->rx_work);
	reactor_deferred_cancel(d->reactor, &d->flush_work);
	reactor_deferred_cancel(d->reactor, &d->closed_work);
	reactor_deferred_cancel(d->reactor, &d->hangup_work);
	reactor_deferred_cancel(d->reactor, &d->buf_work);
	free(d->rx);
	free(d);
}

uint64_t fake_dm_tx_pdus(const struct fake_dm *d)
{
	return d->tx_pdus;
}
