/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Malformed and hostile input against an iSER target (RFC 7145), from a small
 * initiator of its own on librdmacm/libibverbs: an RC queue pair, the iSER CM
 * private data, Login and SCSI Command PDUs sent as RDMA Sends behind a
 * 28-byte iSER header, read buffers exposed to the target's RDMA Writes and
 * write buffers to its RDMA Reads. PDUs are built from
 * gateway/core/iscsi_spec.h; the iSER header is encoded here, independently
 * of the target's own gateway/dm/iser_spec.h. Runs where RDMA exists (the VM
 * test bed: tests/vm/guest-iser-badinput.sh).
 *
 *   iser_badinput --addr A [--port P] --target IQN [--lun N] [--cases LIST]
 *                 [--initiator IQN] [--disc-timeout MS] [--settle-ms MS] [--list]
 *
 * Each case runs on fresh connections and prints "PASS name: what happened"
 * or "FAIL name: ...", with the times and the RDMA CM events seen. One
 * "witness" session stays logged in for the whole run: after every case a
 * TEST UNIT READY on it must still be GOOD (other sessions unaffected), and
 * it answers the target's NOP-In pings meanwhile. Every wait polls the CM
 * event channels and completion channels with poll(2) against a deadline, so
 * a silent target fails a case instead of hanging the run.
 *
 * The first Login Request goes out the moment RDMA_CM_EVENT_ESTABLISHED
 * arrives, as real initiators do: the target must take a Send that completes
 * before its own ESTABLISHED event. --settle-ms waits that long first (a
 * diagnostic for that race, not for normal runs).
 *
 * "Disconnect" means RDMA_CM_EVENT_DISCONNECTED arrives within --disc-timeout
 * (default 10000 ms) and the offending PDU got no answer.
 *
 * Exit status: 0 when every selected case passed, 1 otherwise, 2 for a usage
 * or set-up error (no RDMA device, witness session impossible).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "badinput_common.h"
#include "core/iscsi_spec.h"

/* ---------------------------------------------------------------------- */
/* iSER wire format (RFC 7145 9.2, 9.5), encoded here on purpose */

#define ISER_HDR_LEN   28u
#define ISER_CTRL      0x10u  /* iSCSI control-type PDU */
#define ISER_HELLO     0x20u
#define ISER_WSV       0x08u
#define ISER_RSV       0x04u
#define CM_ZBVA_NOT_SUP       0x80u
#define CM_SEND_W_INV_NOT_SUP 0x40u

#define HDRS_LEN   (ISER_HDR_LEN + ISCSI_BHS_LEN)
#define MY_RDSL    8192u                    /* what our receive buffers hold */
#define RX_SIZE    (HDRS_LEN + MY_RDSL)     /* 28 + 48 + 8192 */
#define TX_SIZE    (HDRS_LEN + MY_RDSL)
#define NRX        64u
#define NTX        64u
#define SQ_DEPTH   128u
#define CQ_DEPTH   (NRX + SQ_DEPTH)
#define MAX_CONNS  16

#define CONNECT_MS 10000
#define CMD_MS     20000
#define MIB        (1u << 20)

/* An iSER header to send: flags, reserved bytes, STags and base offsets. */
struct ihdr {
	uint8_t flags;
	uint8_t rsvd[3];
	uint32_t wstag, rstag;
	uint64_t wva, rva;
};

/* ---------------------------------------------------------------------- */
/* configuration and results */

static struct {
	const char *addr;
	const char *port;
	const char *target;
	unsigned lun;
	const char *initiator;
	int disc_ms;
	int settle_ms;
} cfg = {
	.port = "3260", .initiator = "iqn.2026-11.org.isergw:iser-badinput", .disc_ms = 10000,
};

static uint32_t blksz = 512;
static uint64_t nblocks;

/* ---------------------------------------------------------------------- */
/* connections */

/* A PDU the target sent, copied out of its receive buffer. */
struct rpdu {
	struct rpdu *next;
	uint8_t iser[ISER_HDR_LEN];
	uint8_t bhs[ISCSI_BHS_LEN];
	uint8_t *data;
	uint32_t dlen;
	uint32_t byte_len;
};

/* A registered data buffer of one connection. */
struct dbuf {
	struct dbuf *next;
	uint8_t *p;
	size_t len;
	struct ibv_mr *mr;
};

struct iconn {
	const char *name;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	bool qp;
	uint8_t *rx, *tx;
	struct ibv_mr *rx_mr, *tx_mr;
	bool tx_busy[NTX];
	struct dbuf *bufs;
	/* what happened */
	bool addr_ok, route_ok, established, disconnected, failed;
	const char *fail_event;
	long long t_established, t_disconnected;
	int rep_flags;                  /* first byte of the CM reply's private data, -1 none */
	unsigned wc_err;                /* completions in error, flushes included */
	enum ibv_wc_status first_wc_err;
	const char *first_wc_err_kind;
	unsigned recv_ok;
	struct rpdu *q_head, **q_tail;
	/* iSCSI */
	uint8_t isid[6];
	uint16_t tsih;
	uint32_t itt, cmd_sn, exp_stat_sn, max_cmd_sn;
	uint32_t send_dsl;              /* the target's TargetRecvDataSegmentLength */
	uint32_t first_burst;
	bool immediate_data, initial_r2t;
	uint32_t mou;                   /* MaxOutstandingUnexpectedPDUs agreed (0: none) */
	bool mou_answered;
	unsigned nops_answered;
};

static struct iconn *live[MAX_CONNS];
static bool in_pump; /* completions are being handled: post_raw must not wait */

static void conn_track(struct iconn *c)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (!live[i]) {
			live[i] = c;
			return;
		}
}

static void conn_untrack(struct iconn *c)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (live[i] == c)
			live[i] = NULL;
}

static int post_recv(struct iconn *c, uint32_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->rx + (size_t)i * RX_SIZE), .length = RX_SIZE, .lkey = c->rx_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad) ? -EIO : 0;
}

static int post_raw(struct iconn *c, const void *buf, uint32_t len);

/* The target pings (NOP-In with a TTT): answer, so idle sessions stay up. */
static void answer_nop(struct iconn *c, const struct rpdu *p)
{
	uint8_t b[HDRS_LEN] = { 0 };

	b[0] = ISER_CTRL;
	bhs_nop_answer(b + ISER_HDR_LEN, p->bhs, c->cmd_sn, c->exp_stat_sn);
	if (post_raw(c, b, sizeof(b)) == 0)
		c->nops_answered++;
}

static void track_sn(struct iconn *c, const struct rpdu *p)
{
	uint8_t op = p->bhs[0] & ISCSI_OPCODE_MASK;
	bool has_stat = op == ISCSI_OP_SCSI_RSP || op == ISCSI_OP_NOP_IN || op == ISCSI_OP_LOGIN_RSP ||
			op == ISCSI_OP_TEXT_RSP || op == ISCSI_OP_LOGOUT_RSP || op == ISCSI_OP_TASK_MGMT_RSP ||
			op == ISCSI_OP_REJECT || op == ISCSI_OP_ASYNC_MSG ||
			(op == ISCSI_OP_DATA_IN && (p->bhs[1] & ISCSI_DATAIN_STATUS));

	if (op == ISCSI_OP_NOP_IN && be32get(p->bhs + 16) == ISCSI_RSVD_TAG)
		has_stat = false; /* a ping does not advance StatSN */
	if (has_stat)
		c->exp_stat_sn = be32get(p->bhs + 24) + 1;
	if (op != ISCSI_OP_DATA_IN && (c->max_cmd_sn == 0 || sn_gt(be32get(p->bhs + 32), c->max_cmd_sn)))
		c->max_cmd_sn = be32get(p->bhs + 32);
}

static void cq_drain(struct iconn *c)
{
	struct ibv_wc wc[32];
	int n;

	if (!c->cq)
		return;
	while ((n = ibv_poll_cq(c->cq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			bool recv = wc[i].opcode & IBV_WC_RECV;

			if (wc[i].status != IBV_WC_SUCCESS) {
				if (!c->wc_err++) {
					c->first_wc_err = wc[i].status;
					c->first_wc_err_kind = recv ? "receive" : "send";
				}
				if (!recv && wc[i].wr_id < NTX)
					c->tx_busy[wc[i].wr_id] = false;
				continue;
			}
			if (!recv) {
				if (wc[i].wr_id < NTX)
					c->tx_busy[wc[i].wr_id] = false;
				continue;
			}
			uint32_t idx = (uint32_t)wc[i].wr_id;
			const uint8_t *b = c->rx + (size_t)idx * RX_SIZE;
			struct rpdu *p = calloc(1, sizeof(*p));

			c->recv_ok++;
			if (p) {
				uint32_t len = wc[i].byte_len;

				p->byte_len = len;
				memcpy(p->iser, b, len < ISER_HDR_LEN ? len : ISER_HDR_LEN);
				if (len >= HDRS_LEN) {
					memcpy(p->bhs, b + ISER_HDR_LEN, ISCSI_BHS_LEN);
					p->dlen = be24get(p->bhs + 5);
					if (p->dlen > len - HDRS_LEN)
						p->dlen = len - HDRS_LEN;
					if (p->dlen) {
						p->data = malloc(p->dlen + 1u);
						if (p->data) {
							memcpy(p->data, b + HDRS_LEN, p->dlen);
							p->data[p->dlen] = 0;
						} else {
							p->dlen = 0;
						}
					}
				}
			}
			if (c->established && !c->disconnected)
				(void)post_recv(c, idx);
			if (!p)
				continue;
			track_sn(c, p);
			if ((p->bhs[0] & ISCSI_OPCODE_MASK) == ISCSI_OP_NOP_IN &&
			    be32get(p->bhs + 20) != ISCSI_RSVD_TAG) {
				answer_nop(c, p);
				free(p->data);
				free(p);
				continue;
			}
			*c->q_tail = p;
			c->q_tail = &p->next;
		}
	}
}

static void cm_drain(struct iconn *c)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(c->ech, &ev) == 0) {
		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			c->addr_ok = true;
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			c->route_ok = true;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			c->established = true;
			c->t_established = now_ms();
			if (ev->param.conn.private_data && ev->param.conn.private_data_len >= 1)
				c->rep_flags = *(const uint8_t *)ev->param.conn.private_data;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			if (!c->disconnected) {
				c->disconnected = true;
				c->t_disconnected = now_ms();
				/* the peer left: our QP goes to the error state, posted work flushes */
				rdma_disconnect(c->id);
			}
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			break;
		default:
			if (!c->failed) {
				c->failed = true;
				c->fail_event = rdma_event_str(ev->event);
			}
			break;
		}
		rdma_ack_cm_event(ev);
	}
}

static void chan_drain(struct iconn *c)
{
	struct ibv_cq *cq;
	void *ctx;

	while (c->cch && ibv_get_cq_event(c->cch, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		ibv_req_notify_cq(cq, 0);
	}
	cq_drain(c);
}

/* Handle what every live connection has pending, waiting up to timeout_ms. */
static void pump(int timeout_ms)
{
	struct pollfd pfd[2 * MAX_CONNS];
	struct iconn *who[2 * MAX_CONNS];
	int n = 0;

	in_pump = true;
	for (int i = 0; i < MAX_CONNS; i++) {
		if (!live[i])
			continue;
		chan_drain(live[i]);
		cm_drain(live[i]);
		pfd[n] = (struct pollfd){ .fd = live[i]->ech->fd, .events = POLLIN };
		who[n++] = live[i];
		if (live[i]->cch) {
			pfd[n] = (struct pollfd){ .fd = live[i]->cch->fd, .events = POLLIN };
			who[n++] = live[i];
		}
	}
	in_pump = false;
	if (timeout_ms < 0)
		timeout_ms = 0;
	if (poll(pfd, (nfds_t)n, timeout_ms) <= 0)
		return;
	in_pump = true;
	for (int i = 0; i < n; i++) {
		if (!pfd[i].revents)
			continue;
		if (pfd[i].fd == who[i]->ech->fd)
			cm_drain(who[i]);
		else
			chan_drain(who[i]);
	}
	in_pump = false;
}

static int remaining(long long deadline)
{
	long long r = deadline - now_ms();

	return r < 0 ? 0 : r > 200 ? 200 : (int)r;
}

static void conn_destroy(struct iconn *c, bool graceful)
{
	if (!c)
		return;
	if (graceful && c->established && !c->disconnected) {
		long long dl = now_ms() + 2000;

		rdma_disconnect(c->id);
		while (!c->disconnected && now_ms() < dl)
			pump(remaining(dl));
	}
	conn_untrack(c);
	if (c->qp)
		rdma_destroy_qp(c->id);
	for (struct dbuf *b = c->bufs, *nb; b; b = nb) {
		nb = b->next;
		ibv_dereg_mr(b->mr);
		free(b->p);
		free(b);
	}
	if (c->rx_mr)
		ibv_dereg_mr(c->rx_mr);
	if (c->tx_mr)
		ibv_dereg_mr(c->tx_mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->cch)
		ibv_destroy_comp_channel(c->cch);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ech)
		rdma_destroy_event_channel(c->ech);
	for (struct rpdu *p = c->q_head, *np; p; p = np) {
		np = p->next;
		free(p->data);
		free(p);
	}
	free(c->rx);
	free(c->tx);
	free(c);
}

static int wait_flag(struct iconn *c, const bool *flag, int ms, const char *what)
{
	long long dl = now_ms() + ms;

	while (!*flag && !c->failed && now_ms() < dl)
		pump(remaining(dl));
	if (*flag)
		return 0;
	if (c->failed)
		notef("%s: %s", what, c->fail_event);
	else
		notef("%s: nothing within %d ms", what, ms);
	return -EIO;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/* An RDMA CM connection with the iSER private data; receives posted. */
static struct iconn *conn_connect(const char *name)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct iconn *c = calloc(1, sizeof(*c));
	struct ibv_qp_init_attr qa;
	struct ibv_device_attr da;
	struct rdma_conn_param cp;
	uint8_t pd_flags[4] = { CM_ZBVA_NOT_SUP | CM_SEND_W_INV_NOT_SUP, 0, 0, 0 };
	int rc;

	if (!c)
		return NULL;
	c->name = name;
	c->rep_flags = -1;
	c->q_tail = &c->q_head;
	c->ech = rdma_create_event_channel();
	if (!c->ech || set_nonblock(c->ech->fd)) {
		notef("%s: no RDMA CM event channel: %s", name, strerror(errno));
		goto err;
	}
	if (rdma_create_id(c->ech, &c->id, c, RDMA_PS_TCP)) {
		notef("%s: rdma_create_id: %s", name, strerror(errno));
		goto err;
	}
	conn_track(c);
	rc = getaddrinfo(cfg.addr, cfg.port, &hints, &ai);
	if (rc) {
		notef("%s: %s: %s", name, cfg.addr, gai_strerror(rc));
		goto err;
	}
	rc = rdma_resolve_addr(c->id, NULL, ai->ai_addr, 2000);
	freeaddrinfo(ai);
	if (rc) {
		notef("%s: rdma_resolve_addr: %s", name, strerror(errno));
		goto err;
	}
	if (wait_flag(c, &c->addr_ok, CONNECT_MS, "address resolution"))
		goto err;
	if (rdma_resolve_route(c->id, 2000)) {
		notef("%s: rdma_resolve_route: %s", name, strerror(errno));
		goto err;
	}
	if (wait_flag(c, &c->route_ok, CONNECT_MS, "route resolution"))
		goto err;
	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cch = ibv_create_comp_channel(c->id->verbs);
	if (!c->pd || !c->cch || set_nonblock(c->cch->fd)) {
		notef("%s: no protection domain/completion channel", name);
		goto err;
	}
	c->cq = ibv_create_cq(c->id->verbs, CQ_DEPTH, c, c->cch, 0);
	if (!c->cq || ibv_req_notify_cq(c->cq, 0)) {
		notef("%s: ibv_create_cq failed", name);
		goto err;
	}
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = SQ_DEPTH;
	qa.cap.max_recv_wr = NRX;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, c->pd, &qa)) {
		notef("%s: rdma_create_qp: %s", name, strerror(errno));
		goto err;
	}
	c->qp = true;
	c->rx = aligned_alloc(4096, (size_t)NRX * RX_SIZE);
	c->tx = aligned_alloc(4096, (size_t)NTX * TX_SIZE);
	if (!c->rx || !c->tx)
		goto err;
	c->rx_mr = ibv_reg_mr(c->pd, c->rx, (size_t)NRX * RX_SIZE, IBV_ACCESS_LOCAL_WRITE);
	c->tx_mr = ibv_reg_mr(c->pd, c->tx, (size_t)NTX * TX_SIZE, 0);
	if (!c->rx_mr || !c->tx_mr) {
		notef("%s: ibv_reg_mr: %s (ulimit -l?)", name, strerror(errno));
		goto err;
	}
	for (uint32_t i = 0; i < NRX; i++)
		if (post_recv(c, i))
			goto err;
	if (ibv_query_device(c->id->verbs, &da))
		memset(&da, 0, sizeof(da));
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd_flags;
	cp.private_data_len = sizeof(pd_flags);
	cp.responder_resources = (uint8_t)(da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16);
	cp.initiator_depth = (uint8_t)(da.max_qp_init_rd_atom < 16 ? da.max_qp_init_rd_atom : 16);
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_connect(c->id, &cp)) {
		notef("%s: rdma_connect: %s", name, strerror(errno));
		goto err;
	}
	if (wait_flag(c, &c->established, CONNECT_MS, "connect"))
		goto err;
	if (cfg.settle_ms) {
		long long dl = now_ms() + cfg.settle_ms;

		while (now_ms() < dl)
			pump(remaining(dl));
	}
	for (int i = 0; i < 6; i++)
		c->isid[i] = (uint8_t)(i == 0 ? 0x80 : rand());
	c->itt = (uint32_t)rand() & 0xffff;
	c->cmd_sn = 1;
	c->send_dsl = MY_RDSL;
	return c;
err:
	conn_destroy(c, false);
	return NULL;
}

/* A registered buffer of len bytes, filled with fill. */
static struct dbuf *dbuf_reg(struct iconn *c, size_t len, int access, int fill)
{
	struct dbuf *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!b->p) {
		free(b);
		return NULL;
	}
	memset(b->p, fill, len);
	b->len = len;
	b->mr = ibv_reg_mr(c->pd, b->p, len, access);
	if (!b->mr) {
		notef("ibv_reg_mr(%zu): %s", len, strerror(errno));
		free(b->p);
		free(b);
		return NULL;
	}
	b->next = c->bufs;
	c->bufs = b;
	return b;
}

#define ACC_READBUF  (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define ACC_WRITEBUF (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ)

/* One signaled Send of len bytes from a free send buffer. */
static int post_raw(struct iconn *c, const void *buf, uint32_t len)
{
	long long dl = now_ms() + 5000;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t i;

	if (len > TX_SIZE)
		return -EMSGSIZE;
	for (;;) {
		for (i = 0; i < NTX && c->tx_busy[i]; i++)
			;
		if (i < NTX)
			break;
		if (in_pump || c->disconnected || now_ms() >= dl)
			return -ENOBUFS;
		pump(remaining(dl));
	}
	memcpy(c->tx + (size_t)i * TX_SIZE, buf, len);
	sge.addr = (uintptr_t)(c->tx + (size_t)i * TX_SIZE);
	sge.length = len;
	sge.lkey = c->tx_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(c->id->qp, &wr, &bad))
		return -EIO;
	c->tx_busy[i] = true;
	return 0;
}

static void ihdr_encode(uint8_t *b, const struct ihdr *h)
{
	memset(b, 0, ISER_HDR_LEN);
	if (!h) {
		b[0] = ISER_CTRL;
		return;
	}
	b[0] = h->flags;
	memcpy(b + 1, h->rsvd, 3);
	be32put(b + 4, h->wstag);
	be64put(b + 8, h->wva);
	be32put(b + 16, h->rstag);
	be64put(b + 20, h->rva);
}

/*
 * Send one PDU: iSER header h (NULL: a plain control-type header), the BHS
 * with DataSegmentLength claim_dsl (UINT32_MAX: dlen), then dlen data bytes
 * padded to 4.
 */
static int send_pdu_ex(struct iconn *c, const struct ihdr *h, uint8_t *bhs, const void *data,
		       uint32_t dlen, uint32_t claim_dsl)
{
	static uint8_t b[TX_SIZE];
	uint32_t pad = (4u - (dlen & 3u)) & 3u;

	if (HDRS_LEN + dlen + pad > sizeof(b))
		return -EMSGSIZE;
	be24put(bhs + 5, claim_dsl == UINT32_MAX ? dlen : claim_dsl);
	ihdr_encode(b, h);
	memcpy(b + ISER_HDR_LEN, bhs, ISCSI_BHS_LEN);
	if (dlen)
		memcpy(b + HDRS_LEN, data, dlen);
	memset(b + HDRS_LEN + dlen, 0, pad);
	return post_raw(c, b, HDRS_LEN + dlen + pad);
}

static int send_pdu(struct iconn *c, const struct ihdr *h, uint8_t *bhs, const void *data, uint32_t dlen)
{
	return send_pdu_ex(c, h, bhs, data, dlen, UINT32_MAX);
}

static void rpdu_free(struct rpdu *p)
{
	if (p) {
		free(p->data);
		free(p);
	}
}

/* The ITT a received PDU answers (a Reject: the one of the rejected header). */
static uint32_t rpdu_itt(const struct rpdu *p)
{
	if ((p->bhs[0] & ISCSI_OPCODE_MASK) == ISCSI_OP_REJECT && p->dlen >= ISCSI_BHS_LEN)
		return be32get(p->data + 16);
	return be32get(p->bhs + 16);
}

/* Take the first queued PDU for itt (any PDU when itt is ISCSI_RSVD_TAG). */
static struct rpdu *take(struct iconn *c, uint32_t itt)
{
	for (struct rpdu **pp = &c->q_head; *pp; pp = &(*pp)->next) {
		struct rpdu *p = *pp;

		if (itt != ISCSI_RSVD_TAG && rpdu_itt(p) != itt)
			continue;
		*pp = p->next;
		if (!*pp)
			c->q_tail = pp;
		p->next = NULL;
		return p;
	}
	return NULL;
}

/* Wait for a PDU for itt: 0 with *out, -ECONNRESET, -ETIMEDOUT. */
static int recv_for(struct iconn *c, uint32_t itt, int ms, struct rpdu **out)
{
	long long dl = now_ms() + ms;

	for (;;) {
		*out = take(c, itt);
		if (*out)
			return 0;
		if (c->disconnected || c->failed)
			return -ECONNRESET;
		if (now_ms() >= dl)
			return -ETIMEDOUT;
		pump(remaining(dl));
	}
}

static void describe(const struct rpdu *p)
{
	uint8_t op = p->bhs[0] & ISCSI_OPCODE_MASK;

	if (op == ISCSI_OP_SCSI_RSP)
		notef("%s status 0x%02x response 0x%02x", opname(op), p->bhs[3], p->bhs[2]);
	else if (op == ISCSI_OP_REJECT)
		notef("Reject reason 0x%02x", p->bhs[2]);
	else if (op == ISCSI_OP_LOGIN_RSP)
		notef("Login Response %02x/%02x", p->bhs[36], p->bhs[37]);
	else
		notef("%s (opcode 0x%02x)", opname(op), op);
}

static void describe_err(int rc)
{
	notef("%s", rc == -ETIMEDOUT ? "no answer within the timeout" :
		    rc == -ECONNRESET ? "the connection ended" : strerror(-rc));
}

/* The connection's CM and completion history, for the notes. */
static void conn_story(const struct iconn *c, long long t0)
{
	if (c->disconnected)
		notef("DISCONNECTED %lld ms after the PDU", c->t_disconnected - t0);
	else
		notef("no DISCONNECTED event");
	if (c->failed)
		notef("CM event %s", c->fail_event);
	if (c->wc_err)
		notef("%u completions in error locally (first: %s %s)", c->wc_err, c->first_wc_err_kind,
		      ibv_wc_status_str(c->first_wc_err));
}

/* ---------------------------------------------------------------------- */
/* text keys and login */

static const char *key_get(const struct rpdu *p, const char *key)
{
	return key_find(p->data, p->dlen, key);
}

static void login_bhs(struct iconn *c, uint8_t *b, uint8_t flags)
{
	bhs_login(b, flags, c->isid, c->tsih, c->itt, c->cmd_sn, c->exp_stat_sn);
}

static void initial_keys(struct keys *k)
{
	key_addf(k, "InitiatorName=%s", cfg.initiator);
	key_addf(k, "TargetName=%s", cfg.target);
	key_add(k, "SessionType=Normal");
	key_add(k, "AuthMethod=None");
}

/* One Login Request/Response. 0 (status 00/00), class<<8|detail, or -errno. */
static int login_step(struct iconn *c, uint8_t flags, const struct keys *k, struct rpdu **rsp)
{
	uint8_t b[ISCSI_BHS_LEN];
	int rc;

	login_bhs(c, b, flags);
	rc = send_pdu(c, NULL, b, k ? k->buf : NULL, k ? k->len : 0);
	if (rc)
		return rc;
	rc = recv_for(c, c->itt, CMD_MS, rsp);
	if (rc)
		return rc;
	rc = login_rsp_status((*rsp)->bhs);
	if (rc) {
		describe(*rsp);
		rpdu_free(*rsp);
		return rc;
	}
	c->tsih = login_rsp_tsih((*rsp)->bhs);
	return 0;
}

static void parse_op_keys(struct iconn *c, const struct rpdu *p)
{
	const char *v;

	if ((v = key_get(p, "TargetRecvDataSegmentLength")))
		c->send_dsl = (uint32_t)strtoul(v, NULL, 10);
	if ((v = key_get(p, "FirstBurstLength")))
		c->first_burst = (uint32_t)strtoul(v, NULL, 10);
	if ((v = key_get(p, "ImmediateData")))
		c->immediate_data = strcmp(v, "Yes") == 0;
	if ((v = key_get(p, "InitialR2T")))
		c->initial_r2t = strcmp(v, "Yes") == 0;
	if ((v = key_get(p, "MaxOutstandingUnexpectedPDUs"))) {
		c->mou = (uint32_t)strtoul(v, NULL, 10);
		c->mou_answered = true;
		if (strcmp(v, "NotUnderstood") == 0 || strcmp(v, "Irrelevant") == 0)
			notef("MaxOutstandingUnexpectedPDUs answered %s", v);
	}
	if ((v = key_get(p, "RDMAExtensions")) && strcmp(v, "Yes") != 0)
		notef("target answered RDMAExtensions=%s", v);
}

/*
 * Login Requests with T set from stage csg to nsg, the keys k in the first
 * and none after, until the target transits too (at most 4 more); the
 * operational keys of each Login Response are taken.
 */
static int login_stage(struct iconn *c, int csg, int nsg, const struct keys *k, struct rpdu **rsp)
{
	uint8_t fl = login_flags(true, csg, nsg);
	int rc = login_step(c, fl, k, rsp);

	for (int i = 0; rc == 0 && !login_transits_to((*rsp)->bhs, nsg) && i < 4; i++) {
		if (csg == ISCSI_STAGE_OPERATIONAL)
			parse_op_keys(c, *rsp);
		rpdu_free(*rsp);
		rc = login_step(c, fl, NULL, rsp);
	}
	return rc;
}

/* A normal-session login over this connection; mou 0: the key is not sent. */
static int login(struct iconn *c, uint32_t mou)
{
	struct keys k = { .len = 0 };
	struct rpdu *rsp;
	int rc;

	c->immediate_data = false; /* RFC defaults unless the target agrees */
	c->initial_r2t = true;
	c->first_burst = 65536;
	initial_keys(&k);
	rc = login_stage(c, ISCSI_STAGE_SECURITY, ISCSI_STAGE_OPERATIONAL, &k, &rsp);
	if (rc)
		return rc;
	rpdu_free(rsp);
	k.len = 0;
	key_add(&k, "RDMAExtensions=Yes");
	key_add(&k, "HeaderDigest=None");
	key_add(&k, "DataDigest=None");
	key_addf(&k, "MaxRecvDataSegmentLength=%u", MY_RDSL);
	key_addf(&k, "InitiatorRecvDataSegmentLength=%u", MY_RDSL);
	key_addf(&k, "TargetRecvDataSegmentLength=%u", MY_RDSL);
	key_add(&k, "ImmediateData=Yes");
	key_add(&k, "InitialR2T=No");
	key_add(&k, "FirstBurstLength=262144");
	key_add(&k, "MaxBurstLength=16776192");
	key_add(&k, "ErrorRecoveryLevel=0");
	key_add(&k, "MaxConnections=1");
	if (mou)
		key_addf(&k, "MaxOutstandingUnexpectedPDUs=%u", mou);
	rc = login_stage(c, ISCSI_STAGE_OPERATIONAL, ISCSI_STAGE_FULL_FEATURE, &k, &rsp);
	if (rc)
		return rc;
	parse_op_keys(c, rsp);
	if (!login_transits_to(rsp->bhs, ISCSI_STAGE_FULL_FEATURE)) {
		notef("target never moved to full feature phase");
		rc = -EPROTO;
	}
	rpdu_free(rsp);
	c->itt++;
	return rc;
}

/* ---------------------------------------------------------------------- */
/* SCSI commands */

#define OP_TUR      0x00
#define OP_READCAP  0x25
#define OP_READ10   0x28
#define OP_WRITE10  0x2a

/* A SCSI Command BHS: flags ISCSI_CMD_READ/WRITE, F bit set. Advances CmdSN. */
static uint32_t cmd_bhs(struct iconn *c, uint8_t *b, uint8_t rw, uint32_t edtl, const uint8_t *cdb)
{
	uint32_t itt = c->itt++;

	bhs_scsi_cmd(b, cfg.lun, itt, rw, edtl, c->cmd_sn++, c->exp_stat_sn, cdb);
	return itt;
}

/* Wait for the SCSI Response to itt: its status (>= 0) or a negative errno. */
static int cmd_wait(struct iconn *c, uint32_t itt, int ms)
{
	struct rpdu *p;
	int rc;

	for (;;) {
		rc = recv_for(c, itt, ms, &p);
		if (rc)
			return rc;
		uint8_t op = p->bhs[0] & ISCSI_OPCODE_MASK;

		if (op == ISCSI_OP_SCSI_RSP) {
			rc = p->bhs[2] ? -EIO : p->bhs[3];
			if (p->bhs[2] || p->bhs[3]) {
				describe(p);
				if (p->dlen >= 2 + 14 && p->bhs[3] == 2)
					notef("sense key 0x%x ASC/ASCQ %02x/%02x", p->data[2 + 2] & 0xf,
					      p->data[2 + 12], p->data[2 + 13]);
			}
			rpdu_free(p);
			return rc;
		}
		if (op == ISCSI_OP_DATA_IN && (p->bhs[1] & ISCSI_DATAIN_STATUS)) {
			notef("Data-In PDU with status (iSER targets RDMA Write the data)");
			rc = p->bhs[3];
			rpdu_free(p);
			return rc;
		}
		describe(p);
		rpdu_free(p);
		if (op == ISCSI_OP_REJECT || op == ISCSI_OP_R2T)
			return -EPROTO;
	}
}

/* Issue a READ(10) of len bytes at lba into b (RSV with its rkey). */
static int read_issue(struct iconn *c, uint32_t lba, struct dbuf *b, size_t off, uint32_t len, uint32_t *itt)
{
	uint8_t bhs[ISCSI_BHS_LEN], cdb[16];
	struct ihdr h = { .flags = ISER_CTRL | ISER_RSV, .rstag = b->mr->rkey,
			  .rva = (uintptr_t)(b->p + off) };

	cdb10(cdb, OP_READ10, lba, (uint16_t)(len / blksz));
	*itt = cmd_bhs(c, bhs, ISCSI_CMD_READ, len, cdb);
	return send_pdu(c, &h, bhs, NULL, 0);
}

static int scsi_read(struct iconn *c, uint32_t lba, struct dbuf *b, uint32_t len)
{
	uint32_t itt;
	int rc = read_issue(c, lba, b, 0, len, &itt);

	return rc ? rc : cmd_wait(c, itt, CMD_MS);
}

/*
 * WRITE(10) of len bytes from b at lba: up to imm bytes as immediate data
 * (bounded by what was negotiated), the rest by the target's RDMA Read from
 * the write STag, whose base offset is the first byte not sent immediately
 * (RFC 7145 9.2).
 */
/* The immediate data a WRITE of len bytes may carry, at most want. */
static uint32_t imm_for(const struct iconn *c, uint32_t len, uint32_t want)
{
	if (!c->immediate_data)
		return 0;
	if (want > c->send_dsl)
		want = c->send_dsl;
	if (want > c->first_burst)
		want = c->first_burst;
	return want < len ? want : len;
}

static int write_issue(struct iconn *c, uint32_t lba, struct dbuf *b, uint32_t len, uint32_t imm,
		       uint32_t *itt)
{
	uint8_t bhs[ISCSI_BHS_LEN], cdb[16];
	struct ihdr h = { .flags = ISER_CTRL };

	imm = imm_for(c, len, imm);
	if (imm < len) {
		h.flags |= ISER_WSV;
		h.wstag = b->mr->rkey;
		h.wva = (uintptr_t)(b->p + imm);
	}
	cdb10(cdb, OP_WRITE10, lba, (uint16_t)(len / blksz));
	*itt = cmd_bhs(c, bhs, ISCSI_CMD_WRITE, len, cdb);
	return send_pdu(c, &h, bhs, b->p, imm);
}

static int scsi_write(struct iconn *c, uint32_t lba, struct dbuf *b, uint32_t len, uint32_t imm)
{
	uint32_t itt;
	int rc = write_issue(c, lba, b, len, imm, &itt);

	return rc ? rc : cmd_wait(c, itt, CMD_MS);
}

static int scsi_tur(struct iconn *c)
{
	uint8_t bhs[ISCSI_BHS_LEN], cdb[16] = { OP_TUR };
	uint32_t itt = cmd_bhs(c, bhs, 0, 0, cdb);
	int rc = send_pdu(c, NULL, bhs, NULL, 0);

	return rc ? rc : cmd_wait(c, itt, CMD_MS);
}

static int scsi_readcap(struct iconn *c)
{
	uint8_t cdb[16] = { OP_READCAP };
	uint8_t bhs[ISCSI_BHS_LEN];
	struct dbuf *b = dbuf_reg(c, 8, ACC_READBUF, 0);
	struct ihdr h = { .flags = ISER_CTRL | ISER_RSV };
	uint32_t itt;
	int rc;

	if (!b)
		return -ENOMEM;
	h.rstag = b->mr->rkey;
	h.rva = (uintptr_t)b->p;
	itt = cmd_bhs(c, bhs, ISCSI_CMD_READ, 8, cdb);
	rc = send_pdu(c, &h, bhs, NULL, 0);
	if (!rc)
		rc = cmd_wait(c, itt, CMD_MS);
	if (rc == 0) {
		nblocks = (uint64_t)be32get(b->p) + 1;
		blksz = be32get(b->p + 4);
	}
	return rc;
}

static int logout(struct iconn *c)
{
	uint8_t b[ISCSI_BHS_LEN] = { 0 };
	uint32_t itt = c->itt++;
	struct rpdu *p;
	int rc;

	b[0] = ISCSI_OP_LOGOUT_REQ | ISCSI_OP_IMMEDIATE;
	b[1] = 0x80 | ISCSI_LOGOUT_CLOSE_SESSION;
	be32put(b + 16, itt);
	be32put(b + 24, c->cmd_sn);
	be32put(b + 28, c->exp_stat_sn);
	rc = send_pdu(c, NULL, b, NULL, 0);
	if (rc)
		return rc;
	rc = recv_for(c, itt, CMD_MS, &p);
	if (rc)
		return rc;
	rc = (p->bhs[0] & ISCSI_OPCODE_MASK) == ISCSI_OP_LOGOUT_RSP && p->bhs[2] == 0 ? 0 : -EPROTO;
	if (rc)
		describe(p);
	rpdu_free(p);
	return rc;
}

/* Connect, log in, and get past the unit attention of a new I_T nexus. */
static struct iconn *session_open(const char *name, uint32_t mou)
{
	struct iconn *c = conn_connect(name);
	int rc;

	if (!c)
		return NULL;
	rc = login(c, mou);
	if (rc) {
		if (rc < 0)
			describe_err(rc);
		notef("%s: login failed", name);
		conn_destroy(c, false);
		return NULL;
	}
	size_t keep = strlen(note);

	for (int i = 0; i < 4; i++) {
		rc = scsi_tur(c);
		if (rc <= 0)
			break;
		note[keep] = '\0'; /* the unit attention of a new nexus is no news */
	}
	if (rc) {
		notef("%s: TEST UNIT READY after login: %s", name, rc > 0 ? "never GOOD" : "no answer");
		conn_destroy(c, false);
		return NULL;
	}
	return c;
}

static bool same(const uint8_t *a, const uint8_t *b, size_t len, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (a[i] != b[i]) {
			notef("%s differs at byte %zu (0x%02x, expected 0x%02x)", what, i, a[i], b[i]);
			return false;
		}
	return true;
}

/* ---------------------------------------------------------------------- */
/* cases */

/*
 * A bad PDU (answered by itt, or by anything when ISCSI_RSVD_TAG) went out
 * at t0: the target must disconnect within --disc-timeout without answering.
 */
static bool expect_drop(struct iconn *c, uint32_t itt, long long t0)
{
	long long dl = t0 + cfg.disc_ms;
	bool answered = false;
	struct rpdu *p;

	while (!c->disconnected && !c->failed && now_ms() < dl)
		pump(remaining(dl));
	pump(0);
	while ((p = take(c, ISCSI_RSVD_TAG))) {
		if (itt == ISCSI_RSVD_TAG || rpdu_itt(p) == itt) {
			answered = true;
			notef("the target ANSWERED the bad PDU:");
		} else {
			notef("also received:");
		}
		describe(p);
		rpdu_free(p);
	}
	conn_story(c, t0);
	return c->disconnected && !answered;
}

static void fail_open(const char *name)
{
	notef("could not open a session");
	verdict(name, false);
}

/* Normal I/O: TUR, WRITE with immediate data + RDMA Read, READs by RDMA Write. */
static void case_sanity(const char *name)
{
	const uint32_t len = 64u * 1024u, lba = 1024, lba2 = 1200;
	struct iconn *c = session_open(name, 0);
	struct dbuf *wb, *rb, *wb2;
	bool ok = true;
	uint32_t imm;
	long long t;
	int rc;

	if (!c)
		return fail_open(name);
	if (c->rep_flags < 0)
		notef("no CM reply private data");
	notef("CM reply private data flags 0x%02x; ImmediateData=%s InitialR2T=%s "
	      "TargetRecvDataSegmentLength=%u FirstBurstLength=%u", c->rep_flags & 0xff,
	      c->immediate_data ? "Yes" : "No", c->initial_r2t ? "Yes" : "No", c->send_dsl,
	      c->first_burst);
	wb = dbuf_reg(c, len, ACC_WRITEBUF, 0);
	rb = dbuf_reg(c, len, ACC_READBUF, 0xa5);
	wb2 = dbuf_reg(c, 8u * blksz, ACC_WRITEBUF, 0);
	if (!wb || !rb || !wb2) {
		verdict(name, false);
		conn_destroy(c, true);
		return;
	}
	t = now_ms();
	rc = scsi_tur(c);
	notef("TUR %s (%lld ms)", rc == 0 ? "GOOD" : "FAILED", now_ms() - t);
	ok &= rc == 0;

	pattern(wb->p, len, 1);
	t = now_ms();
	rc = scsi_write(c, lba, wb, len, 8192);
	imm = imm_for(c, len, 8192);
	notef("WRITE(10) %u KiB, %u bytes immediate + RDMA Read from VA+%u: %s (%lld ms)", len >> 10,
	      imm, imm, rc == 0 ? "GOOD" : "FAILED", now_ms() - t);
	ok &= rc == 0;

	t = now_ms();
	rc = scsi_read(c, lba, rb, 8u * blksz);
	notef("READ(10) 8 blocks by RDMA Write: %s (%lld ms)", rc == 0 ? "GOOD" : "FAILED", now_ms() - t);
	ok &= rc == 0 && same(rb->p, wb->p, 8u * blksz, "READ(10) 8 blocks");
	for (size_t i = 8u * blksz; ok && i < len; i++)
		if (rb->p[i] != 0xa5) {
			notef("the target wrote past the 8 blocks asked for (byte %zu)", i);
			ok = false;
		}

	t = now_ms();
	rc = scsi_read(c, lba, rb, len);
	notef("READ(10) %u KiB back: %s (%lld ms)", len >> 10, rc == 0 ? "GOOD" : "FAILED", now_ms() - t);
	ok &= rc == 0 && same(rb->p, wb->p, len, "read-back");

	/* all immediate: no write STag at all */
	pattern(wb2->p, 8u * blksz, 2);
	rc = scsi_write(c, lba2, wb2, 8u * blksz, 8u * blksz);
	notef("WRITE(10) 8 blocks %s: %s", c->immediate_data && 8u * blksz <= c->send_dsl ?
	      "all immediate (no STag)" : "by RDMA Read", rc == 0 ? "GOOD" : "FAILED");
	ok &= rc == 0;
	memset(rb->p, 0xa5, len);
	rc = scsi_read(c, lba2, rb, 8u * blksz);
	ok &= rc == 0 && same(rb->p, wb2->p, 8u * blksz, "immediate-data read-back");
	if (c->wc_err)
		conn_story(c, now_ms());
	ok &= !c->disconnected && !c->wc_err;
	verdict(name, ok);
	conn_destroy(c, true);
}

/* A TEST UNIT READY behind an iSER header h: the target must disconnect. */
static void bad_header_case(const char *name, const struct ihdr *h)
{
	struct iconn *c = session_open(name, 0);
	uint8_t bhs[ISCSI_BHS_LEN], cdb[16] = { OP_TUR };
	uint32_t itt;
	long long t0;

	if (!c)
		return fail_open(name);
	itt = cmd_bhs(c, bhs, 0, 0, cdb);
	notef("TEST UNIT READY with iSER flags 0x%02x, reserved bytes %02x %02x %02x", h->flags,
	      h->rsvd[0], h->rsvd[1], h->rsvd[2]);
	t0 = now_ms();
	if (send_pdu(c, h, bhs, NULL, 0)) {
		notef("send failed");
		verdict(name, false);
	} else {
		verdict(name, expect_drop(c, itt, t0));
	}
	conn_destroy(c, false);
}

static void case_hdr_reserved_flags(const char *name)
{
	struct ihdr h = { .flags = ISER_CTRL | 0x03 };

	bad_header_case(name, &h);
}

static void case_hdr_reserved_bytes(const char *name)
{
	struct ihdr h = { .flags = ISER_CTRL, .rsvd = { 0, 0x01, 0 } };

	bad_header_case(name, &h);
}

static void case_hdr_unknown_opcode(const char *name)
{
	struct ihdr h = { .flags = 0x40 };

	bad_header_case(name, &h);
}

static void case_hdr_hello(const char *name)
{
	struct ihdr h = { .flags = ISER_HELLO };

	bad_header_case(name, &h);
}

/* A Send shorter than the iSER header plus a BHS. */
static void case_hdr_short_send(const char *name)
{
	struct iconn *c = session_open(name, 0);
	uint8_t b[40] = { ISER_CTRL };
	long long t0;

	if (!c)
		return fail_open(name);
	b[ISER_HDR_LEN] = ISCSI_OP_NOP_OUT | ISCSI_OP_IMMEDIATE;
	b[ISER_HDR_LEN + 1] = ISCSI_FLAG_FINAL;
	notef("a Send of %zu bytes", sizeof(b));
	t0 = now_ms();
	if (post_raw(c, b, sizeof(b))) {
		notef("send failed");
		verdict(name, false);
	} else {
		verdict(name, expect_drop(c, ISCSI_RSVD_TAG, t0));
	}
	conn_destroy(c, false);
}

/* READ(10) with RSV set and read STag 0, or without RSV at all. */
static void read_stag_case(const char *name, bool rsv)
{
	struct iconn *c = session_open(name, 0);
	uint8_t bhs[ISCSI_BHS_LEN], cdb[16];
	struct ihdr h = { .flags = (uint8_t)(ISER_CTRL | (rsv ? ISER_RSV : 0)) };
	struct dbuf *b;
	uint32_t itt;
	long long t0;

	if (!c)
		return fail_open(name);
	b = dbuf_reg(c, 8u * blksz, ACC_READBUF, 0);
	if (b)
		h.rva = (uintptr_t)b->p; /* a real address: only the STag is wrong */
	cdb10(cdb, OP_READ10, 0, 8);
	itt = cmd_bhs(c, bhs, ISCSI_CMD_READ, 8u * blksz, cdb);
	notef("READ(10) 8 blocks, %s", rsv ? "RSV set, read STag 0" : "no RSV (no read STag)");
	t0 = now_ms();
	if (send_pdu(c, &h, bhs, NULL, 0)) {
		notef("send failed");
		verdict(name, false);
	} else {
		verdict(name, expect_drop(c, itt, t0));
	}
	conn_destroy(c, false);
}

static void case_read_zero_stag(const char *name) { read_stag_case(name, true); }
static void case_read_no_stag(const char *name) { read_stag_case(name, false); }

/* READ(10) into a memory region deregistered before the command went out. */
static void case_read_stale_stag(const char *name)
{
	struct iconn *c = session_open(name, 0);
	uint8_t bhs[ISCSI_BHS_LEN], cdb[16];
	struct ihdr h = { .flags = ISER_CTRL | ISER_RSV };
	struct ibv_mr *mr;
	uint8_t *p;
	uint32_t itt;
	long long t0;

	if (!c)
		return fail_open(name);
	p = aligned_alloc(4096, 64u * 1024u);
	mr = p ? ibv_reg_mr(c->pd, p, 64u * 1024u, ACC_READBUF) : NULL;
	if (!mr) {
		notef("ibv_reg_mr failed");
		free(p);
		verdict(name, false);
		conn_destroy(c, false);
		return;
	}
	h.rstag = mr->rkey;
	h.rva = (uintptr_t)p;
	ibv_dereg_mr(mr);
	cdb10(cdb, OP_READ10, 0, (uint16_t)(64u * 1024u / blksz));
	itt = cmd_bhs(c, bhs, ISCSI_CMD_READ, 64u * 1024u, cdb);
	notef("READ(10) 64 KiB to the rkey 0x%08x of a deregistered region", h.rstag);
	t0 = now_ms();
	if (send_pdu(c, &h, bhs, NULL, 0)) {
		notef("send failed");
		verdict(name, false);
	} else {
		verdict(name, expect_drop(c, itt, t0));
	}
	conn_destroy(c, false);
	free(p);
}

/* The LBAs of lba..+len on a fresh session hold want. */
static bool check_unchanged(const char *who, uint32_t lba, const uint8_t *want, uint32_t len)
{
	struct iconn *c = session_open(who, 0);
	struct dbuf *b;
	bool ok;
	int rc;

	if (!c) {
		notef("no new session to read the LBAs back");
		return false;
	}
	b = dbuf_reg(c, len, ACC_READBUF, 0xa5);
	rc = b ? scsi_read(c, lba, b, len) : -ENOMEM;
	ok = rc == 0 && same(b->p, want, len, "the LBAs on a new session");
	if (ok)
		notef("LBAs %u..%u unchanged on a new session", lba, lba + len / blksz - 1);
	else if (rc)
		notef("read-back on a new session: %s", rc > 0 ? "not GOOD" : "failed");
	conn_destroy(c, true);
	return ok;
}

/*
 * WRITE(10) of len bytes without immediate data whose write STag is either
 * missing (wsv false) or names a region of only 4 KiB: the target cannot
 * fetch the data and must disconnect without writing anything.
 */
static void write_stag_case(const char *name, uint32_t lba, bool wsv)
{
	const uint32_t len = 64u * 1024u;
	struct iconn *c = session_open(name, 0);
	uint8_t bhs[ISCSI_BHS_LEN], cdb[16];
	struct ihdr h = { .flags = (uint8_t)(ISER_CTRL | (wsv ? ISER_WSV : 0)) };
	struct dbuf *before, *small;
	uint8_t *want;
	uint32_t itt;
	bool ok;
	long long t0;

	if (!c)
		return fail_open(name);
	want = malloc(len);
	before = dbuf_reg(c, len, ACC_WRITEBUF, 0);
	small = dbuf_reg(c, 4096, ACC_WRITEBUF, 0x5a);
	if (!want || !before || !small) {
		free(want);
		verdict(name, false);
		conn_destroy(c, false);
		return;
	}
	/* known contents first, so "unchanged" means something */
	pattern(before->p, len, 3 + lba);
	memcpy(want, before->p, len);
	if (scsi_write(c, lba, before, len, 0) != 0) {
		notef("the first (good) WRITE failed");
		free(want);
		verdict(name, false);
		conn_destroy(c, false);
		return;
	}
	if (wsv) {
		h.wstag = small->mr->rkey;
		h.wva = (uintptr_t)small->p;
	}
	cdb10(cdb, OP_WRITE10, lba, (uint16_t)(len / blksz));
	itt = cmd_bhs(c, bhs, ISCSI_CMD_WRITE, len, cdb);
	if (wsv)
		notef("WRITE(10) %u KiB, no immediate data, write STag of a 4 KiB region", len >> 10);
	else
		notef("WRITE(10) %u KiB, no immediate data, no WSV (no write STag)", len >> 10);
	t0 = now_ms();
	if (send_pdu(c, &h, bhs, NULL, 0)) {
		notef("send failed");
		ok = false;
	} else {
		ok = expect_drop(c, itt, t0);
	}
	conn_destroy(c, false);
	ok &= check_unchanged("readback", lba, want, len);
	free(want);
	verdict(name, ok);
}

static void case_write_short_stag(const char *name) { write_stag_case(name, 4096, true); }
static void case_write_no_stag(const char *name) { write_stag_case(name, 4352, false); }

/* A WRITE whose BHS claims more immediate data than the Send carried. */
static void case_ffp_dsl_overclaim(const char *name)
{
	struct iconn *c = session_open(name, 0);
	uint8_t bhs[ISCSI_BHS_LEN], cdb[16], data[512];
	uint32_t itt;
	long long t0;

	if (!c)
		return fail_open(name);
	memset(data, 0x77, sizeof(data));
	cdb10(cdb, OP_WRITE10, 4608, (uint16_t)(8192u / blksz));
	itt = cmd_bhs(c, bhs, ISCSI_CMD_WRITE, 8192, cdb);
	notef("WRITE(10) claiming 8192 bytes of immediate data, 512 carried");
	t0 = now_ms();
	if (send_pdu_ex(c, NULL, bhs, data, sizeof(data), 8192)) {
		notef("send failed");
		verdict(name, false);
	} else {
		verdict(name, expect_drop(c, itt, t0));
	}
	conn_destroy(c, false);
}

/* The first Login Request claims more data than the Send carried. */
static void login_dsl_case(const char *name, uint32_t claim_extra, uint32_t claim_abs)
{
	struct iconn *c = conn_connect(name);
	struct keys k = { .len = 0 };
	uint8_t b[ISCSI_BHS_LEN];
	uint32_t claim;
	long long t0;

	if (!c)
		return fail_open(name);
	initial_keys(&k);
	claim = claim_abs ? claim_abs : k.len + claim_extra;
	login_bhs(c, b, login_flags(true, ISCSI_STAGE_SECURITY, ISCSI_STAGE_OPERATIONAL));
	notef("Login Request claiming %u data bytes, %u carried", claim, k.len);
	t0 = now_ms();
	if (send_pdu_ex(c, NULL, b, k.buf, k.len, claim)) {
		notef("send failed");
		verdict(name, false);
	} else {
		verdict(name, expect_drop(c, ISCSI_RSVD_TAG, t0));
	}
	conn_destroy(c, false);
}

static void case_login_dsl_overclaim(const char *name) { login_dsl_case(name, 1024, 0); }
static void case_login_dsl_huge(const char *name) { login_dsl_case(name, 0, ISCSI_MAX_DSL); }

/* A fresh session reads 1 MiB: the target still serves. */
static bool still_serves(const char *who)
{
	struct iconn *c = session_open(who, 0);
	struct dbuf *b;
	long long t = now_ms();
	int rc;

	if (!c) {
		notef("a new session FAILED afterwards");
		return false;
	}
	b = dbuf_reg(c, MIB, ACC_READBUF, 0);
	rc = b ? scsi_read(c, 0, b, MIB) : -ENOMEM;
	notef("a new session afterwards: READ 1 MiB %s (%lld ms)", rc == 0 ? "GOOD" : "FAILED",
	      now_ms() - t);
	conn_destroy(c, true);
	return rc == 0;
}

/*
 * 16 READs of 1 MiB, then the initiator goes away at once: with
 * rdma_disconnect first (graceful) or by destroying the QP and the id.
 */
static void inflight_case(const char *name, bool graceful)
{
	struct iconn *c = session_open(name, 0);
	struct dbuf *b;
	uint32_t itt;
	int sent = 0;

	if (!c)
		return fail_open(name);
	b = dbuf_reg(c, 16u * MIB, ACC_READBUF, 0);
	for (int i = 0; b && i < 16; i++)
		if (read_issue(c, (uint32_t)i * (MIB / blksz), b, (size_t)i * MIB, MIB, &itt) == 0)
			sent++;
	notef("%d READs of 1 MiB posted, then %s at once", sent,
	      graceful ? "rdma_disconnect + destroy" : "destroy (QP, then id) without rdma_disconnect");
	if (graceful)
		rdma_disconnect(c->id);
	conn_destroy(c, false);
	verdict(name, sent == 16 && still_serves("after"));
}

static void case_disconnect_inflight(const char *name) { inflight_case(name, true); }
static void case_destroy_inflight(const char *name) { inflight_case(name, false); }

/* Send n READs of 1 MiB back-to-back; their ITTs in itts. */
static int burst_reads(struct iconn *c, struct dbuf *b, int n, uint32_t *itts)
{
	for (int i = 0; i < n; i++) {
		int rc = read_issue(c, (uint32_t)i * (MIB / blksz), b, (size_t)i * MIB, MIB, &itts[i]);

		if (rc)
			return rc;
	}
	return 0;
}

static int burst_turs(struct iconn *c, int n, uint32_t *itts)
{
	for (int i = 0; i < n; i++) {
		uint8_t bhs[ISCSI_BHS_LEN], cdb[16] = { OP_TUR };
		int rc;

		itts[i] = cmd_bhs(c, bhs, 0, 0, cdb);
		rc = send_pdu(c, NULL, bhs, NULL, 0);
		if (rc)
			return rc;
	}
	return 0;
}

/* MaxOutstandingUnexpectedPDUs=4 and never more than 4 commands outstanding. */
static void case_mou_within(const char *name)
{
	struct iconn *c = session_open(name, 4);
	struct dbuf *b;
	uint32_t itts[4];
	int rounds_ok = 0, rc = 0;
	long long t = now_ms();

	if (!c)
		return fail_open(name);
	if (c->mou_answered)
		notef("MaxOutstandingUnexpectedPDUs answered %u", c->mou);
	else
		notef("MaxOutstandingUnexpectedPDUs not answered");
	b = dbuf_reg(c, 4u * MIB, ACC_READBUF, 0);
	/* the next 4 go out the moment the last answer of the previous 4 arrived */
	for (int r = 0; b && rc == 0 && r < 30; r++) {
		rc = r < 5 ? burst_reads(c, b, 4, itts) : burst_turs(c, 4, itts);
		for (int i = 0; rc == 0 && i < 4; i++)
			rc = cmd_wait(c, itts[i], CMD_MS);
		if (rc == 0)
			rounds_ok++;
	}
	notef("%d of 30 rounds of 4 commands GOOD (5 of 4 READs of 1 MiB, 25 of 4 TURs; each round "
	      "sent as soon as the previous one was answered) in %lld ms", rounds_ok, now_ms() - t);
	if (rc)
		describe_err(rc < 0 ? rc : -EIO);
	if (c->disconnected || c->wc_err)
		conn_story(c, t);
	verdict(name, rounds_ok == 30 && c->mou_answered && c->mou == 4 && !c->disconnected);
	conn_destroy(c, true);
}

/* MaxOutstandingUnexpectedPDUs=4, then 8 READs of 1 MiB back-to-back. */
static void case_mou_exceeded(const char *name)
{
	struct iconn *c = session_open(name, 4);
	struct dbuf *b;
	uint32_t itts[8];
	struct rpdu *p;
	int good = 0, other = 0;
	long long t0;

	if (!c)
		return fail_open(name);
	if (c->mou_answered)
		notef("MaxOutstandingUnexpectedPDUs answered %u", c->mou);
	b = dbuf_reg(c, 8u * MIB, ACC_READBUF, 0);
	/*
	 * Leave a CmdSN gap first: the target must hold all 8 commands (none can
	 * complete and lower the count before the later ones arrive), so the
	 * outcome does not depend on how fast it serves the first ones.
	 */
	c->cmd_sn++;
	t0 = now_ms();
	if (!b || burst_reads(c, b, 8, itts)) {
		notef("could not send the 8 READs");
		verdict(name, false);
		conn_destroy(c, false);
		return;
	}
	notef("8 READs of 1 MiB sent back-to-back after a CmdSN gap");
	while (!c->disconnected && !c->failed && now_ms() < t0 + cfg.disc_ms)
		pump(remaining(t0 + cfg.disc_ms));
	pump(0);
	while ((p = take(c, ISCSI_RSVD_TAG))) {
		if ((p->bhs[0] & ISCSI_OPCODE_MASK) == ISCSI_OP_SCSI_RSP && p->bhs[3] == 0)
			good++;
		else
			other++;
		rpdu_free(p);
	}
	notef("%d GOOD SCSI Responses and %d other PDUs arrived", good, other);
	conn_story(c, t0);
	verdict(name, c->disconnected && good < 8 && c->mou_answered && c->mou == 4);
	conn_destroy(c, false);
}

/* After everything: a normal session works, including a logout. */
static void case_final_session(const char *name)
{
	const uint32_t len = 64u * 1024u;
	struct iconn *c = session_open(name, 0);
	struct dbuf *wb, *rb;
	bool ok;

	if (!c)
		return fail_open(name);
	wb = dbuf_reg(c, len, ACC_WRITEBUF, 0);
	rb = dbuf_reg(c, len, ACC_READBUF, 0);
	ok = wb && rb;
	if (ok) {
		pattern(wb->p, len, 9);
		ok = scsi_write(c, 5000, wb, len, 8192) == 0 && scsi_read(c, 5000, rb, len) == 0 &&
		     same(rb->p, wb->p, len, "final read-back");
	}
	notef("TUR, WRITE + READ 64 KiB %s", ok ? "GOOD and equal" : "FAILED");
	if (ok) {
		ok = logout(c) == 0;
		notef("logout %s", ok ? "answered" : "FAILED");
	}
	verdict(name, ok);
	conn_destroy(c, true);
}

/* ---------------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(const char *name);
	const char *what;
} cases[] = {
	{ "sanity", case_sanity, "TUR, WRITE (immediate + RDMA Read), READ (RDMA Write), compare" },
	{ "hdr-reserved-flags", case_hdr_reserved_flags, "iSER flags 0x13: disconnect" },
	{ "hdr-reserved-bytes", case_hdr_reserved_bytes, "iSER reserved byte set: disconnect" },
	{ "hdr-unknown-opcode", case_hdr_unknown_opcode, "iSER opcode 0x40: disconnect" },
	{ "hdr-hello", case_hdr_hello, "iSER Hello (0x20): disconnect" },
	{ "hdr-short-send", case_hdr_short_send, "a 40-byte Send: disconnect" },
	{ "read-zero-stag", case_read_zero_stag, "READ, RSV with STag 0: disconnect" },
	{ "read-no-stag", case_read_no_stag, "READ without RSV: disconnect" },
	{ "read-stale-stag", case_read_stale_stag, "READ to a deregistered region: disconnect" },
	{ "write-short-stag", case_write_short_stag,
	  "WRITE 64 KiB from a 4 KiB region: disconnect, nothing written" },
	{ "write-no-stag", case_write_no_stag, "WRITE needing data without WSV: disconnect, nothing written" },
	{ "ffp-dsl-overclaim", case_ffp_dsl_overclaim, "WRITE claiming more immediate data than sent: disconnect" },
	{ "disconnect-inflight", case_disconnect_inflight,
	  "16 READs of 1 MiB, rdma_disconnect + destroy at once: target serves on" },
	{ "destroy-inflight", case_destroy_inflight,
	  "16 READs of 1 MiB, destroy without rdma_disconnect: target serves on" },
	{ "mou-within", case_mou_within, "MaxOutstandingUnexpectedPDUs=4, 4 at a time: works" },
	{ "mou-exceeded", case_mou_exceeded, "MaxOutstandingUnexpectedPDUs=4, 8 READs at once: disconnect" },
	{ "login-dsl-overclaim", case_login_dsl_overclaim,
	  "Login Request claiming 1 KiB more than sent: disconnect" },
	{ "login-dsl-huge", case_login_dsl_huge, "Login Request claiming 16 MiB: disconnect" },
	{ "final-session", case_final_session, "a new session: TUR, WRITE, READ, logout" },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static const char *case_name(size_t i)
{
	return cases[i].name;
}

static void usage(void)
{
	fprintf(stderr, "usage: iser_badinput --addr A [--port P] --target IQN [--lun N] [--cases a,b,...]\n"
		"                     [--initiator IQN] [--disc-timeout MS] [--settle-ms MS] [--list]\n");
}

static struct iconn *witness;
static unsigned witness_turs;

/* Another session, open all along, must be unaffected by what a case did. */
static void witness_check(const char *after)
{
	long long t = now_ms();
	int rc;

	if (!witness)
		return;
	rc = scsi_tur(witness);
	if (rc == 0) {
		witness_turs++;
		return;
	}
	char name[96];

	snprintf(name, sizeof(name), "witness-after-%s", after);
	notef("TEST UNIT READY on the witness session: ");
	if (rc > 0)
		notef("status 0x%02x", rc);
	else
		describe_err(rc);
	notef("after %lld ms", now_ms() - t);
	conn_story(witness, t);
	verdict(name, false);
	conn_destroy(witness, false);
	witness = NULL;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "target", required_argument, NULL, 't' },
		{ "lun", required_argument, NULL, 'l' },
		{ "cases", required_argument, NULL, 'c' },
		{ "initiator", required_argument, NULL, 'i' },
		{ "disc-timeout", required_argument, NULL, 'd' },
		{ "settle-ms", required_argument, NULL, 's' },
		{ "list", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *list = NULL;
	long long t_all;
	long v;
	int o;

	while ((o = getopt_long(argc, argv, "a:p:t:l:c:i:d:s:Lh", lopts, NULL)) != -1) {
		switch (o) {
		case 'a': cfg.addr = optarg; break;
		case 'p': cfg.port = optarg; break;
		case 't': cfg.target = optarg; break;
		case 'c': list = optarg; break;
		case 'i': cfg.initiator = optarg; break;
		case 'l':
		case 's':
		case 'd':
			if (!parse_num("iser_badinput", optarg, 600000, &v))
				return 2;
			if (o == 'l')
				cfg.lun = (unsigned)v;
			else if (o == 's')
				cfg.settle_ms = (int)v;
			else
				cfg.disc_ms = (int)v;
			break;
		case 'L':
			for (size_t i = 0; i < NCASES; i++)
				printf("%-20s %s\n", cases[i].name, cases[i].what);
			return 0;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (!cfg.addr || !cfg.target || optind != argc) {
		usage();
		return 2;
	}
	if (!case_list_known("iser_badinput", list, case_name, NCASES))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	srand((unsigned)getpid() ^ (unsigned)now_ms());
	t_all = now_ms();

	witness = session_open("witness", 0);
	if (!witness || scsi_readcap(witness) != 0) {
		notef("the witness session (login, TUR, READ CAPACITY) failed");
		verdict("witness", false);
		return 1;
	}
	printf("iser_badinput: %s:%s %s LUN %u: %llu blocks of %u bytes; witness session "
	       "connected in %lld ms\n", cfg.addr, cfg.port, cfg.target, cfg.lun,
	       (unsigned long long)nblocks, blksz, witness->t_established - t_all);
	fflush(stdout);
	for (size_t i = 0; i < NCASES; i++) {
		long long t;

		if (list && !in_list(list, cases[i].name))
			continue;
		t = now_ms();
		cases[i].fn(cases[i].name);
		printf("  (%s: %lld ms)\n", cases[i].name, now_ms() - t);
		witness_check(cases[i].name);
	}
	if (witness) {
		notef("%u TURs GOOD between cases, %u NOP-In pings answered", witness_turs,
		      witness->nops_answered);
		int rc = logout(witness);

		notef("logout %s", rc == 0 ? "answered" : "FAILED");
		verdict("witness", rc == 0);
		conn_destroy(witness, true);
	}
	printf("iser_badinput: %d passed, %d failed (%lld ms)\n", passes, failures, now_ms() - t_all);
	return failures ? 1 : 0;
}
