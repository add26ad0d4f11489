/* SPDX-License-Identifier: Apache-2.0 */
/* Fake rdma-core: the edge under dm/iser.c (see fake_verbs.h). */
#include "fake_verbs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/pdu.h"

#define FV_RECV_MAX 512u
#define FV_CQ_MAX   2048u   /* iser.c posts at most 1024 sends and 256 receives */

/* ---------------- event channels (CM) and completion channels ---------------- */

struct fv_event {
	struct rdma_cm_event ev;        /* first: rdma_ack_cm_event() gets this */
	uint8_t priv[64];
	struct fv_event *next;
};

struct fv_chan {
	struct rdma_event_channel ch;   /* first */
	struct fv_event *head, *tail;
	struct fv_chan *next;
};

struct fv_cq_ev {
	struct ibv_cq *cq;
	struct fv_cq_ev *next;
};

struct fv_cchan {
	struct ibv_comp_channel ch;     /* first */
	struct fv_cq_ev *head, *tail;
};

struct fv_id {
	struct rdma_cm_id id;           /* first */
	bool accepted, disconnect_sent;
	uint8_t initiator_depth;
};

struct fv_recv {
	uint64_t wr_id;
	uint64_t addr;
	uint32_t len;
};

struct fv_qp {
	struct ibv_qp qp;               /* first */
	struct fv_recv rq[FV_RECV_MAX];
	uint32_t rq_head, rq_n;
	bool err;
};

struct fv_cq {
	struct ibv_cq cq;               /* first */
	struct ibv_wc wc[FV_CQ_MAX];
	uint32_t head, n;
	bool armed;
};

struct fv_held {
	struct fv_cq *cq;
	struct ibv_wc wc;
	struct fv_held *next;
};

static struct fv_chan *chans;
static struct rdma_cm_id *listener;
static struct rdma_cm_id *conn_id;     /* the last fv_connect()'s, until destroyed */
static struct ibv_device fv_device = { .name = "fake_rdma0", .dev_name = "uverbs0" };
static struct ibv_context fv_ctx;
static const uint8_t *remote;
static size_t remote_len;
static bool hold_sq;
static struct fv_held *held_head, *held_tail;
static enum ibv_wc_status fail_next;
static unsigned int live_qps;
static uint64_t sq_posted;
static uint32_t next_key = 0x100, next_qpn = 0x40;
static volatile uint32_t sink;

static void efd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		abort();
}

static void efd_drain(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		abort();
}

static void chan_push(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		      enum rdma_cm_event_type type)
{
	struct fv_chan *c = (struct fv_chan *)ch;
	struct fv_event *e = calloc(1, sizeof(*e));

	if (!e)
		abort();
	e->ev.id = id;
	e->ev.event = type;
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	efd_signal(c->ch.fd);
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct fv_chan *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ch.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	c->next = chans;
	chans = c;
	return &c->ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	struct fv_chan *c = (struct fv_chan *)ch;

	for (struct fv_chan **pp = &chans; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	while (c->head) {
		struct fv_event *e = c->head;

		c->head = e->next;
		free(e);
	}
	close(c->ch.fd);
	free(c);
}

int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **event)
{
	struct fv_chan *c = (struct fv_chan *)ch;
	struct fv_event *e = c->head;

	if (!e) {
		efd_drain(c->ch.fd);
		errno = EAGAIN;
		return -1;
	}
	c->head = e->next;
	if (!c->head)
		c->tail = NULL;
	*event = &e->ev;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	free(event);
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
	case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
	case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
	default: return "RDMA_CM_EVENT_OTHER";
	}
}

/* ---------------- ids ---------------- */

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	struct fv_id *f = calloc(1, sizeof(*f));

	if (!f) {
		errno = ENOMEM;
		return -1;
	}
	f->id.channel = channel;
	f->id.context = context;
	f->id.ps = ps;
	*id = &f->id;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	/* its events not read yet go with it */
	for (struct fv_chan *c = chans; c; c = c->next) {
		struct fv_event **pp = &c->head;

		c->tail = NULL;
		while (*pp) {
			struct fv_event *e = *pp;

			if (e->ev.id == id || e->ev.listen_id == id) {
				*pp = e->next;
				free(e);
				continue;
			}
			c->tail = e;
			pp = &e->next;
		}
	}
	if (id == listener)
		listener = NULL;
	if (id == conn_id)
		conn_id = NULL;
	free(id);
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	size_t len = addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						 : sizeof(struct sockaddr_in);

	id->verbs = &fv_ctx;
	memcpy(&id->route.addr.src_storage, addr, len);
	return 0;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	(void)backlog;
	listener = id;
	return 0;
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	id->channel = channel;
	return 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct fv_id *f = (struct fv_id *)id;

	f->accepted = true;
	f->initiator_depth = conn_param ? conn_param->initiator_depth : 0;
	return 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	(void)id;
	(void)private_data;
	(void)private_data_len;
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	struct fv_id *f = (struct fv_id *)id;

	/* the initiator's side answers: DISCONNECTED here too */
	if (!f->disconnect_sent && id->channel) {
		f->disconnect_sent = true;
		chan_push(id->channel, id, RDMA_CM_EVENT_DISCONNECTED);
	}
	return 0;
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **l = calloc(2, sizeof(*l));

	if (l)
		l[0] = &fv_ctx;
	if (num_devices)
		*num_devices = l ? 1 : 0;
	return l;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* ---------------- verbs ---------------- */

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : "?";
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	(void)context;
	memset(device_attr, 0, sizeof(*device_attr));
	device_attr->max_qp_wr = 16384;
	device_attr->max_sge = 32;
	device_attr->max_cqe = 65536;
	device_attr->max_qp_rd_atom = 16;
	device_attr->max_qp_init_rd_atom = 16;
	device_attr->max_mr_size = UINT64_MAX;
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (pd)
		pd->context = context;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct fv_cchan *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ch.context = context;
	c->ch.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct fv_cchan *c = (struct fv_cchan *)channel;

	while (c->head) {
		struct fv_cq_ev *e = c->head;

		c->head = e->next;
		free(e);
	}
	close(c->ch.fd);
	free(c);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct fv_cchan *c = (struct fv_cchan *)channel;
	struct fv_cq_ev *e = c->head;

	if (!e) {
		efd_drain(c->ch.fd);
		errno = EAGAIN;
		return -1;
	}
	c->head = e->next;
	if (!c->head)
		c->tail = NULL;
	*cq = e->cq;
	*cq_context = e->cq->cq_context;
	free(e);
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	(void)cq;
	(void)nevents;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct fv_cq *c = calloc(1, sizeof(*c));

	(void)comp_vector;
	if (!c)
		return NULL;
	c->cq.context = context;
	c->cq.channel = channel;
	c->cq.cq_context = cq_context;
	c->cq.cqe = cqe;
	return &c->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct fv_cchan *ch = (struct fv_cchan *)cq->channel;

	if (ch) {
		struct fv_cq_ev **pp = &ch->head;

		ch->tail = NULL;
		while (*pp) {
			struct fv_cq_ev *e = *pp;

			if (e->cq == cq) {
				*pp = e->next;
				free(e);
				continue;
			}
			ch->tail = e;
			pp = &e->next;
		}
	}
	for (struct fv_held **pp = &held_head; *pp;) {
		struct fv_held *h = *pp;

		if (&h->cq->cq == cq) {
			fprintf(stderr, "fake_verbs: a CQ destroyed with completions outstanding\n");
			abort();
		}
		pp = &h->next;
	}
	free(cq);
	return 0;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	(void)access;
	if (!mr)
		return NULL;
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = mr->rkey = next_key++;
	return mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	(void)iova;
	return ibv_reg_mr(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	free(mr);
	return 0;
}

/* ---------------- queues ---------------- */

static void cq_push(struct fv_cq *c, const struct ibv_wc *wc)
{
	struct fv_cchan *ch = (struct fv_cchan *)c->cq.channel;

	if (c->n == FV_CQ_MAX) {
		fprintf(stderr, "fake_verbs: CQ overrun\n");
		abort();
	}
	c->wc[(c->head + c->n++) % FV_CQ_MAX] = *wc;
	if (c->armed && ch) {
		struct fv_cq_ev *e = calloc(1, sizeof(*e));

		if (!e)
			abort();
		c->armed = false;
		e->cq = &c->cq;
		if (ch->tail)
			ch->tail->next = e;
		else
			ch->head = e;
		ch->tail = e;
		efd_signal(ch->ch.fd);
	}
}

static int fv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct fv_cq *c = (struct fv_cq *)cq;
	int n = 0;

	while (n < num_entries && c->n) {
		wc[n++] = c->wc[c->head];
		c->head = (c->head + 1) % FV_CQ_MAX;
		c->n--;
	}
	return n;
}

static int fv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct fv_cq *c = (struct fv_cq *)cq;

	/* as a device: an event for the next completion, not for those there */
	(void)solicited_only;
	c->armed = true;
	return 0;
}

/* A send-queue completion: now, or held until fv_hold_sq(false). */
static void sq_complete(struct fv_qp *q, const struct ibv_wc *wc)
{
	struct fv_cq *c = (struct fv_cq *)q->qp.send_cq;

	if (hold_sq) {
		struct fv_held *h = calloc(1, sizeof(*h));

		if (!h)
			abort();
		h->cq = c;
		h->wc = *wc;
		if (held_tail)
			held_tail->next = h;
		else
			held_head = h;
		held_tail = h;
		return;
	}
	cq_push(c, wc);
}

/*
 * Read all n bytes at p, so that ASan checks the whole range a request names. Eight
 * bytes a load, and none of the fuzzer's comparison tracing: a data transfer of many
 * MiB took a second per input with a traced byte loop (its timeouts under load).
 */
__attribute__((no_sanitize("coverage")))
static uint32_t touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t s = 0, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);
		s = s * 31 + w;
	}
	for (; i < n; i++)
		s = s * 31 + b[i];
	return (uint32_t)(s ^ (s >> 32));
}

/* The initiator's memory as an RDMA READ fetches it: remote[k % remote_len], or zeros. */
static void fill_remote(uint8_t *p, size_t n)
{
	size_t done;

	if (!remote_len) {
		memset(p, 0, n);
		return;
	}
	done = remote_len < n ? remote_len : n;
	memcpy(p, remote, done);
	/* doubling: done stays a multiple of remote_len, so the pattern holds */
	while (done < n) {
		size_t c = done < n - done ? done : n - done;

		memcpy(p + done, p, c);
		done += c;
	}
}

static int fv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct fv_qp *q = (struct fv_qp *)qp;

	(void)bad_wr;
	for (; wr; wr = wr->next) {
		struct ibv_wc wc;
		bool signaled = wr->send_flags & IBV_SEND_SIGNALED;

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr->wr_id;
		wc.qp_num = qp->qp_num;
		wc.status = IBV_WC_SUCCESS;
		if (q->err) {
			wc.status = IBV_WC_WR_FLUSH_ERR;
			sq_complete(q, &wc);
			continue;
		}
		if (fail_next != IBV_WC_SUCCESS) {
			wc.status = fail_next;
			fail_next = IBV_WC_SUCCESS;
			signaled = true; /* a failed request reports itself */
		}
		for (int i = 0; i < wr->num_sge; i++) {
			void *p = (void *)(uintptr_t)wr->sg_list[i].addr;
			size_t n = wr->sg_list[i].length;

			switch (wr->opcode) {
			case IBV_WR_RDMA_READ:
				/* the initiator's memory lands in the target's buffer */
				fill_remote(p, n);
				wc.opcode = IBV_WC_RDMA_READ;
				break;
			case IBV_WR_RDMA_WRITE:
				sink += touch(p, n);
				wc.opcode = IBV_WC_RDMA_WRITE;
				break;
			default:
				sink += touch(p, n);
				wc.opcode = IBV_WC_SEND;
				break;
			}
			wc.byte_len += (uint32_t)n;
		}
		sq_posted++;
		if (signaled)
			sq_complete(q, &wc);
	}
	return 0;
}

static void recv_flush(struct fv_qp *q)
{
	while (q->rq_n) {
		struct fv_recv *r = &q->rq[q->rq_head];
		struct ibv_wc wc;

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = r->wr_id;
		wc.status = IBV_WC_WR_FLUSH_ERR;
		wc.opcode = IBV_WC_RECV;
		wc.qp_num = q->qp.qp_num;
		q->rq_head = (q->rq_head + 1) % FV_RECV_MAX;
		q->rq_n--;
		cq_push((struct fv_cq *)q->qp.recv_cq, &wc);
	}
}

static int fv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct fv_qp *q = (struct fv_qp *)qp;

	for (; wr; wr = wr->next) {
		struct fv_recv *r;

		if (q->rq_n == FV_RECV_MAX) {
			*bad_wr = wr;
			return ENOMEM;
		}
		r = &q->rq[(q->rq_head + q->rq_n++) % FV_RECV_MAX];
		r->wr_id = wr->wr_id;
		r->addr = wr->sg_list[0].addr;
		r->len = wr->sg_list[0].length;
	}
	if (q->err)
		recv_flush(q);
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct fv_qp *q = calloc(1, sizeof(*q));

	if (!q) {
		errno = ENOMEM;
		return -1;
	}
	q->qp.context = &fv_ctx;
	q->qp.pd = pd;
	q->qp.send_cq = qp_init_attr->send_cq;
	q->qp.recv_cq = qp_init_attr->recv_cq;
	q->qp.qp_type = qp_init_attr->qp_type;
	q->qp.qp_num = next_qpn++;
	q->qp.state = IBV_QPS_RTS;
	id->qp = &q->qp;
	live_qps++;
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	free(id->qp);
	id->qp = NULL;
	live_qps--;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct fv_qp *q = (struct fv_qp *)qp;

	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_ERR) {
		q->err = true;
		qp->state = IBV_QPS_ERR;
		recv_flush(q);
	}
	return 0;
}

static void __attribute__((constructor)) fv_init(void)
{
	fv_ctx.device = &fv_device;
	fv_ctx.ops.poll_cq = fv_poll_cq;
	fv_ctx.ops.req_notify_cq = fv_req_notify_cq;
	fv_ctx.ops.post_send = fv_post_send;
	fv_ctx.ops.post_recv = fv_post_recv;
	fv_ctx.cmd_fd = -1;
	fv_ctx.async_fd = -1;
	fv_ctx.num_comp_vectors = 1;
}

/* ---------------- the initiator's side ---------------- */

struct rdma_cm_id *fv_listener(void)
{
	return listener;
}

struct rdma_cm_id *fv_connect(const void *priv, uint8_t priv_len, uint8_t initiator_depth,
			      uint8_t responder_resources)
{
	struct fv_chan *c = listener ? (struct fv_chan *)listener->channel : NULL;
	struct rdma_cm_id *id;
	struct fv_event *e;

	if (!c || rdma_create_id(listener->channel, &id, NULL, RDMA_PS_TCP))
		return NULL;
	id->verbs = &fv_ctx;
	id->route.addr.src_sin.sin_family = AF_INET;
	id->route.addr.src_sin.sin_addr.s_addr = htonl(0x7f000001);
	id->route.addr.src_sin.sin_port = htons(3260);
	id->route.addr.dst_sin.sin_family = AF_INET;
	id->route.addr.dst_sin.sin_addr.s_addr = htonl(0x7f000002);
	id->route.addr.dst_sin.sin_port = htons(40000);
	chan_push(listener->channel, id, RDMA_CM_EVENT_CONNECT_REQUEST);
	conn_id = id;
	e = c->tail;
	e->ev.listen_id = listener;
	if (priv_len > sizeof(e->priv))
		priv_len = sizeof(e->priv);
	if (priv && priv_len) {
		memcpy(e->priv, priv, priv_len);
		e->ev.param.conn.private_data = e->priv;
		e->ev.param.conn.private_data_len = priv_len;
	}
	e->ev.param.conn.initiator_depth = initiator_depth;
	e->ev.param.conn.responder_resources = responder_resources;
	return id;
}

struct rdma_cm_id *fv_conn(void)
{
	return conn_id;
}

bool fv_accepted(const struct rdma_cm_id *id, uint8_t *initiator_depth)
{
	const struct fv_id *f = (const struct fv_id *)id;

	if (initiator_depth)
		*initiator_depth = f->initiator_depth;
	return f->accepted;
}

void fv_cm_event(struct rdma_cm_id *id, enum rdma_cm_event_type type)
{
	if (id->channel)
		chan_push(id->channel, id, type);
}

int fv_send(struct rdma_cm_id *id, const void *buf, size_t len)
{
	struct fv_qp *q = (struct fv_qp *)id->qp;
	struct fv_recv *r;
	struct ibv_wc wc;
	size_t n;

	if (!q || q->err || !q->rq_n)
		return -ENOBUFS;
	r = &q->rq[q->rq_head];
	q->rq_head = (q->rq_head + 1) % FV_RECV_MAX;
	q->rq_n--;
	n = len < r->len ? len : r->len;
	memcpy((void *)(uintptr_t)r->addr, buf, n);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wr_id;
	/* a Send longer than the receive buffer: a local length error, as a device says */
	wc.status = len > r->len ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = (uint32_t)n;
	wc.qp_num = q->qp.qp_num;
	cq_push((struct fv_cq *)q->qp.recv_cq, &wc);
	return 0;
}

void fv_set_remote(const void *buf, size_t len)
{
	remote = buf;
	remote_len = buf ? len : 0;
}

void fv_hold_sq(bool hold)
{
	hold_sq = hold;
	if (hold)
		return;
	while (held_head) {
		struct fv_held *h = held_head;

		held_head = h->next;
		if (!held_head)
			held_tail = NULL;
		cq_push(h->cq, &h->wc);
		free(h);
	}
}

void fv_fail_next(enum ibv_wc_status st)
{
	fail_next = st;
}

unsigned int fv_live_qps(void)
{
	return live_qps;
}

uint64_t fv_sq_posted(void)
{
	return sq_posted;
}
