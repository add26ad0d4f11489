/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TCP datamover: PDU framing on a byte stream (RFC 7143 with digests),
 * batched non-blocking reads and writev, Data-In as PDUs pointing into the
 * task buffer (no copy), R2T-driven Data-Out.
 *
 * Large READs without a data digest take their data from a pipe instead
 * (docs/architecture.md, "Data-In without a copy"; the configuration's
 * tcp_splice, on by default): each reactor keeps a few pipes; a READ task of
 * at least TCP_PIPE_MIN bytes is offered one (scsi_cmd.pipe), a file
 * backstore splices its page cache into it, and each Data-In PDU goes out as
 * its header (MSG_MORE) followed by a splice from the pipe to the socket: the
 * data never passes through user space.
 *
 * A connection's task buffers hold at most TCP_BUF_LIMIT bytes (one task of
 * any size when it holds none): a further task waits for buffers (buf_get
 * -EAGAIN, iscsi_task_buf_ready) in the order the commands came. Without it
 * an initiator that sends READs and never reads its socket makes the daemon
 * read them all into memory: 120 READs of 16 MiB were 1.9 GB per session.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/iscsi.h"
#include "core/pdu.h"
#include "core/datamover.h"
#include "dm/dm.h"
#include "common/bufpool.h"
#include "common/list.h"
#include "common/log.h"
#include "common/netaddr.h"
#include "common/rawsys.h"

#define COMP "tcp"
#define TCP_LOGIN_MAX_DSL   65536u
#define TCP_RX_MIN          (256u * 1024u)
#define TCP_MAX_IOV         64
#define TCP_READS_PER_EVENT 8
#define TCP_PIPE_MIN        (64u * 1024u)       /* smaller READs are copied */
#define TCP_PIPE_SIZE       (2u * 1024u * 1024u)
#define TCP_PIPES_MAX       64u                 /* per reactor thread */
#define TCP_BUF_LIMIT       (64u * 1024u * 1024u) /* task buffer bytes per connection */

/* A pipe a READ's data waits in (struct scsi_data_pipe), kept per reactor thread. */
struct tcp_pipe {
	struct scsi_data_pipe sp;
	int rfd;
	uint32_t sent;                  /* bytes spliced to the socket */
	struct tcp_pipe *next;          /* free list */
};

static _Thread_local struct {
	struct tcp_pipe *free;
	unsigned int count;             /* free and in use */
	bool failed;                    /* cannot make pipes of the size: copy */
	bool warned;                    /* pipe2() failed once */
} tl_pipes;

struct tcp_listener {
	int fd;
	struct reactor_fd rfd;
	struct reactor *reactor;
	struct gw_portal *portal;
	struct reactor_accept_guard guard;      /* out of descriptors: a pause, not a spin */
};

struct tcp_conn {
	int fd;
	struct reactor_fd rfd;
	struct reactor *reactor;
	struct iscsi_conn *conn;
	struct gw_portal *portal;
	struct iscsi_admission adm;     /* from accept to iscsi_conn_create */
	uint8_t *rx;
	size_t rxcap, rxlen, rxoff;
	uint32_t max_rx_dsl;
	bool hd, dd;
	bool closing;
	bool in_rx;
	struct iscsi_tx_pdu *txhead, *txtail;
	struct reactor_deferred flush_work;
	struct reactor_deferred closed_work;
	struct sockaddr_storage peer, local;
	uint64_t buf_bytes;                     /* task buffers held (TCP_BUF_LIMIT) */
	struct list_head buf_waiters;           /* struct tcp_buf_wait, in order */
	struct reactor_deferred buf_wake;
};

/* A task waiting for its buffer (its dm_priv meanwhile). */
struct tcp_buf_wait {
	struct list_head link;
	struct iscsi_task *t;
};

static void tcp_conn_event(void *arg, uint32_t events);

static void tcp_addrs(struct iscsi_conn *c, char *peer, size_t plen, char *local, size_t llen)
{
	struct tcp_conn *tc = c->dm_priv;

	gw_fmt_sockaddr((const struct sockaddr *)&tc->peer, peer, plen);
	gw_fmt_sockaddr((const struct sockaddr *)&tc->local, local, llen);
}

/* ---------------- pipes for Data-In without a copy ---------------- */

static void tcp_pipe_close(struct tcp_pipe *p)
{
	close(p->rfd);
	close(p->sp.wfd);
	free(p);
	tl_pipes.count--;
}

/*
 * A pipe of TCP_PIPE_SIZE, or half that where more is not allowed (1 MiB is
 * /proc/sys/fs/pipe-max-size's default); NULL: none now.
 */
static struct tcp_pipe *tcp_pipe_new(void)
{
	static const int sizes[] = { TCP_PIPE_SIZE, TCP_PIPE_SIZE / 2 };
	struct tcp_pipe *p;
	int fds[2], sz = -1;

	if (tl_pipes.failed || tl_pipes.count >= TCP_PIPES_MAX)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		/* out of descriptors: said once per reactor, READs are copied meanwhile */
		if (!tl_pipes.warned)
			GW_WARN(COMP, "cannot create a pipe: %s: Data-In is copied", strerror(errno));
		tl_pipes.warned = true;
		free(p);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && sz < 0; i++)
		sz = fcntl(fds[1], F_SETPIPE_SZ, sizes[i]);
	if (sz < 0) {
		/* e.g. above pipe-user-pages-soft: this reactor copies from now on */
		GW_NOTICE(COMP, "cannot size a pipe to %u bytes: %s: Data-In is copied",
			  TCP_PIPE_SIZE / 2, strerror(errno));
		tl_pipes.failed = true;
		close(fds[0]);
		close(fds[1]);
		free(p);
		return NULL;
	}
	p->rfd = fds[0];
	p->sp.wfd = fds[1];
	p->sp.cap = (uint32_t)sz;
	tl_pipes.count++;
	return p;
}

static struct tcp_pipe *tcp_pipe_get(void)
{
	struct tcp_pipe *p = tl_pipes.free;

	if (p)
		tl_pipes.free = p->next;
	else
		p = tcp_pipe_new();
	if (p) {
		p->sp.len = 0;
		p->sent = 0;
		p->next = NULL;
	}
	return p;
}

/* Back to the free list when empty; a pipe with data left (a failed READ, a lost connection) is closed. */
static void tcp_pipe_put(struct tcp_pipe *p)
{
	if (p->sp.len != p->sent) {
		tcp_pipe_close(p);
		return;
	}
	p->next = tl_pipes.free;
	tl_pipes.free = p;
}

/* The task's pipe when its data-in is there; NULL: in t->buf. */
static struct tcp_pipe *tcp_task_pipe(const struct iscsi_task *t)
{
	if (!t->scsi.pipe || !t->scsi.pipe->len)
		return NULL;
	return container_of(t->scsi.pipe, struct tcp_pipe, sp);
}

static bool tcp_buf_fits(const struct tcp_conn *tc, uint32_t len)
{
	return !tc->buf_bytes || tc->buf_bytes + len <= TCP_BUF_LIMIT;
}

/* t's buffer (and pipe), counted against the connection's limit. */
static int tcp_buf_take(struct iscsi_conn *c, struct tcp_conn *tc, struct iscsi_task *t)
{
	t->buf = gw_buf_alloc(t->edtl);
	if (!t->buf)
		return -ENOMEM;
	tc->buf_bytes += t->edtl;
	/* c->cfg: the configuration when the connection came, stable for its life */
	if (t->data_in && !t->data_out && !tc->dd && t->edtl >= TCP_PIPE_MIN && c->cfg->tcp_splice) {
		struct tcp_pipe *p = tcp_pipe_get();

		t->scsi.pipe = p ? &p->sp : NULL;
	}
	return 0;
}

static int tcp_buf_get(struct iscsi_conn *c, struct iscsi_task *t)
{
	struct tcp_conn *tc = c->dm_priv;
	struct tcp_buf_wait *w;

	if (!tc)
		return -ENOMEM;
	if (list_empty(&tc->buf_waiters) && tcp_buf_fits(tc, t->edtl))
		return tcp_buf_take(c, tc, t);
	w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->t = t;
	t->dm_priv = w;
	list_add_tail(&w->link, &tc->buf_waiters);
	GW_DEBUG(COMP, "%s: %" PRIu64 " bytes of task buffers held, ITT 0x%08x waits", c->peer,
		 tc->buf_bytes, t->itt);
	return -EAGAIN;
}

/* Buffers came back: the waiting tasks, in order, as long as they fit. */
static void tcp_buf_wake(void *arg)
{
	struct tcp_conn *tc = arg;

	while (!list_empty(&tc->buf_waiters)) {
		struct tcp_buf_wait *w = list_first_entry(&tc->buf_waiters, struct tcp_buf_wait,
							  link);
		struct iscsi_task *t = w->t;

		if (!tcp_buf_fits(tc, t->edtl) || tcp_buf_take(tc->conn, tc, t))
			return;         /* the next buffer to come back tries again */
		list_del(&w->link);
		t->dm_priv = NULL;
		free(w);
		iscsi_task_buf_ready(t);
	}
}

/* Also for a task that outlived its connection's socket (tc gone: nothing counted). */
static void tcp_buf_put(struct iscsi_conn *c, struct iscsi_task *t)
{
	struct tcp_conn *tc = c ? c->dm_priv : NULL;
	struct tcp_buf_wait *w = t->dm_priv;

	if (w) {
		/* an aborted or closing task cancels its wait */
		list_del(&w->link);
		t->dm_priv = NULL;
		free(w);
		return;
	}
	if (!t->buf)
		return;
	gw_buf_free(t->buf, t->edtl);
	t->buf = NULL;
	if (!tc)
		return;
	tc->buf_bytes -= t->edtl;
	if (!list_empty(&tc->buf_waiters))
		reactor_defer(tc->reactor, &tc->buf_wake);
}

static void tcp_thread_exit(void)
{
	while (tl_pipes.free) {
		struct tcp_pipe *p = tl_pipes.free;

		tl_pipes.free = p->next;
		tcp_pipe_close(p);
	}
}

/* ---------------- transmit ---------------- */

static void tx_complete(struct iscsi_tx_pdu *pdu, int status)
{
	if (pdu->sent)
		pdu->sent(pdu, status);
	else
		iscsi_tx_pdu_free(pdu);
}

static void tcp_fail_tx(struct tcp_conn *tc)
{
	while (tc->txhead) {
		struct iscsi_tx_pdu *pdu = tc->txhead;

		tc->txhead = pdu->next;
		if (!tc->txhead)
			tc->txtail = NULL;
		tx_complete(pdu, -ECONNRESET);
	}
}

#define TX_FLAG_HD   0x40000000u
#define TX_FLAG_DD   0x20000000u
#define TX_FLAG_PIPE 0x10000000u        /* the data is in the task's pipe: no pad, no digest */
#define TX_LEN(p)    ((p)->total & 0x0fffffffu)

static uint32_t pdu_hdr_len(const struct iscsi_tx_pdu *pdu)
{
	return ISCSI_BHS_LEN + ((pdu->total & TX_FLAG_HD) ? 4u : 0u);
}

/*
 * iovecs for what is left of one PDU: header, header digest, data, pad +
 * data digest; of a PDU whose data is in a pipe, the header part only.
 */
static int pdu_iov(const struct iscsi_tx_pdu *pdu, struct iovec *iov, int max)
{
	struct { const uint8_t *p; uint32_t len; } seg[4];
	uint32_t pad = iscsi_pad4(pdu->data_len);
	uint32_t skip = pdu->off;
	int n = 0, nseg = 0;

	seg[nseg].p = (const uint8_t *)&pdu->bhs;
	seg[nseg++].len = ISCSI_BHS_LEN;
	if (pdu->total & TX_FLAG_HD) {
		seg[nseg].p = pdu->hdigest;
		seg[nseg++].len = 4;
	}
	if (pdu->data_len && !(pdu->total & TX_FLAG_PIPE)) {
		uint32_t tail = pad + ((pdu->total & TX_FLAG_DD) ? 4u : 0u);

		seg[nseg].p = pdu->data;
		seg[nseg++].len = pdu->data_len;
		if (tail) {
			seg[nseg].p = pdu->pad_ddigest;
			seg[nseg++].len = tail;
		}
	}
	for (int i = 0; i < nseg && n < max; i++) {
		if (skip >= seg[i].len) {
			skip -= seg[i].len;
			continue;
		}
		iov[n].iov_base = (void *)(uintptr_t)(seg[i].p + skip);
		iov[n].iov_len = seg[i].len - skip;
		skip = 0;
		n++;
	}
	return n;
}

/* The data of the PDU at the head, once its header is out: from the pipe to the socket. */
static ssize_t tcp_splice_out(struct tcp_conn *tc, struct iscsi_tx_pdu *pdu)
{
	struct iscsi_task *t = pdu->ctx;
	struct tcp_pipe *p = tcp_task_pipe(t);
	uint32_t left = TX_LEN(pdu) - pdu->off;
	ssize_t n;

	if (!p || left > p->sp.len - p->sent) {
		errno = EPIPE; /* cannot happen: put_data checked the length */
		return -1;
	}
	n = splice(p->rfd, NULL, tc->fd, NULL, left,
		   SPLICE_F_NONBLOCK | SPLICE_F_MOVE | (pdu->next ? SPLICE_F_MORE : 0));
	if (n > 0)
		p->sent += (uint32_t)n;
	else if (n == 0)
		errno = EPIPE;
	return n > 0 ? n : -1;
}

static void tcp_flush(void *arg)
{
	struct tcp_conn *tc = arg;

	while (tc->txhead && !tc->closing) {
		struct iovec iov[TCP_MAX_IOV];
		struct msghdr msg = { .msg_iov = iov };
		struct iscsi_tx_pdu *pdu = tc->txhead;
		int niov = 0, more = 0;
		ssize_t n;

		if ((pdu->total & TX_FLAG_PIPE) && pdu->off >= pdu_hdr_len(pdu)) {
			n = tcp_splice_out(tc, pdu);
		} else {
			/* a PDU whose data is in a pipe ends the batch: its header, then the splice */
			for (; pdu && niov < TCP_MAX_IOV - 4; pdu = pdu->next) {
				niov += pdu_iov(pdu, iov + niov, TCP_MAX_IOV - niov);
				if (pdu->total & TX_FLAG_PIPE) {
					more = MSG_MORE;
					break;
				}
			}
			msg.msg_iovlen = (size_t)niov;
			n = gw_sys_sendmsg(tc->fd, &msg, more);
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				reactor_mod_fd(tc->reactor, &tc->rfd, EPOLLIN | EPOLLOUT);
				return;
			}
			if (errno == EINTR)
				continue;
			GW_INFO(COMP, "%s: send failed: %s", tc->conn->peer, strerror(errno));
			iscsi_conn_drop(tc->conn, "send failed");
			return;
		}
		while (n > 0 && tc->txhead) {
			pdu = tc->txhead;
			uint32_t left = TX_LEN(pdu) - pdu->off;

			if ((size_t)n < left) {
				pdu->off += (uint32_t)n;
				n = 0;
				break;
			}
			n -= left;
			tc->txhead = pdu->next;
			if (!tc->txhead)
				tc->txtail = NULL;
			tx_complete(pdu, 0);
		}
	}
	if (!tc->closing)
		reactor_mod_fd(tc->reactor, &tc->rfd, EPOLLIN);
}

static void datain_sent(struct iscsi_tx_pdu *pdu, int status);

static int tcp_send_control(struct iscsi_conn *c, struct iscsi_tx_pdu *pdu)
{
	struct tcp_conn *tc = c->dm_priv;
	/* Data-In whose data is in the task's pipe (tcp_put_data): never with a data digest */
	bool piped = pdu->data_len && !pdu->data && pdu->sent == datain_sent && !tc->dd;
	uint32_t pad = iscsi_pad4(pdu->data_len);
	uint32_t total = ISCSI_BHS_LEN;

	if (tc->closing)
		return -ECONNRESET;
	pdu->off = 0;
	pdu->next = NULL;
	memset(pdu->hdigest, 0, sizeof(pdu->hdigest));
	memset(pdu->pad_ddigest, 0, sizeof(pdu->pad_ddigest));
	if (tc->hd) {
		uint32_t d = iscsi_digest(&pdu->bhs, ISCSI_BHS_LEN);

		d = htole32(d);
		memcpy(pdu->hdigest, &d, 4);
		total += 4;
	}
	if (pdu->data_len) {
		total += pdu->data_len + pad;
		if (tc->dd) {
			uint32_t d = htole32(iscsi_data_digest(pdu->data, pdu->data_len, pad));

			memcpy(pdu->pad_ddigest + pad, &d, 4);
			total += 4;
		}
	}
	pdu->total = total | (tc->hd ? TX_FLAG_HD : 0) | (tc->dd && pdu->data_len ? TX_FLAG_DD : 0) |
		     (piped ? TX_FLAG_PIPE : 0);
	if (tc->txtail)
		tc->txtail->next = pdu;
	else
		tc->txhead = pdu;
	tc->txtail = pdu;
	reactor_defer(tc->reactor, &tc->flush_work);
	return 0;
}

static void datain_sent(struct iscsi_tx_pdu *pdu, int status)
{
	struct iscsi_task *t = pdu->ctx;

	(void)status;
	iscsi_tx_pdu_free(pdu);
	iscsi_task_tx_done(t);
}

static int tcp_put_data(struct iscsi_conn *c, struct iscsi_task *t)
{
	uint32_t len = iscsi_task_data_in_len(t);
	uint32_t max = c->params.max_xmit_dsl ? c->params.max_xmit_dsl : 8192;
	bool with_status = iscsi_task_put_data_with_status(t);
	struct tcp_pipe *p = tcp_task_pipe(t);
	int rc = 0;

	if (p) {
		/* the data is in the pipe: all of it, each PDU a multiple of 4 (no pad) */
		if (len != p->sp.len || p->sent)
			return -EIO;
		max &= ~3u;
	}
	t->pending_tx++; /* hold the task while queuing */
	for (uint32_t off = 0; off < len;) {
		uint32_t n = len - off < max ? len - off : max;
		bool last = off + n == len;
		struct iscsi_tx_pdu *pdu = iscsi_tx_pdu_alloc();

		if (!pdu) {
			rc = -ENOMEM;
			break;
		}
		iscsi_task_build_datain(t, (struct iscsi_data_in *)&pdu->bhs, off, n, last,
					last && with_status);
		pdu->data = p ? NULL : t->buf + off;
		pdu->data_len = n;
		pdu->sent = datain_sent;
		pdu->ctx = t;
		pdu->next = NULL;
		t->pending_tx++;
		if (iscsi_conn_send(c, pdu, last && with_status)) {
			rc = -ECONNRESET;
			break;
		}
		off += n;
	}
	if (!rc && !with_status)
		iscsi_task_send_response(t);
	iscsi_task_tx_done(t);
	return rc == -ENOMEM ? rc : 0;
}

static int tcp_get_data(struct iscsi_conn *c, struct iscsi_task *t)
{
	(void)c;
	return iscsi_task_send_r2ts(t);
}

static void tcp_release_task(struct iscsi_conn *c, struct iscsi_task *t)
{
	(void)c;
	if (t->scsi.pipe) {
		tcp_pipe_put(container_of(t->scsi.pipe, struct tcp_pipe, sp));
		t->scsi.pipe = NULL;
	}
}

static void tcp_closed_work(void *arg)
{
	struct tcp_conn *tc = arg;
	struct iscsi_conn *c = tc->conn;

	if (tc->in_rx) {
		reactor_defer(tc->reactor, &tc->closed_work);
		return;
	}
	/* tasks still waiting for a buffer keep their node; their buf_put frees it */
	reactor_deferred_cancel(tc->reactor, &tc->buf_wake);
	while (!list_empty(&tc->buf_waiters))
		list_del(tc->buf_waiters.next);
	free(tc->rx);
	c->dm_priv = NULL;
	free(tc);
	iscsi_conn_closed(c);
}

static void tcp_terminate(struct iscsi_conn *c)
{
	struct tcp_conn *tc = c->dm_priv;

	if (!tc || tc->closing)
		return;
	/* best effort: push out what is queued (a Reject, a Logout Response) */
	reactor_deferred_cancel(tc->reactor, &tc->flush_work);
	tcp_flush(tc);
	tc->closing = true;
	reactor_del_fd(tc->reactor, &tc->rfd);
	shutdown(tc->fd, SHUT_RDWR);
	close(tc->fd);
	tc->fd = -1;
	tcp_fail_tx(tc);
	reactor_defer(tc->reactor, &tc->closed_work);
}

static int tcp_enter_ffp(struct iscsi_conn *c)
{
	struct tcp_conn *tc = c->dm_priv;
	size_t need;

	tc->hd = c->params.header_digest;
	tc->dd = c->params.data_digest;
	tc->max_rx_dsl = c->params.max_recv_dsl;
	need = (size_t)tc->max_rx_dsl + ISCSI_BHS_LEN + ISCSI_MAX_AHS_LEN + 16;
	if (need < TCP_RX_MIN)
		need = TCP_RX_MIN;
	if (need > tc->rxcap) {
		uint8_t *n = realloc(tc->rx, need);

		if (!n)
			return -ENOMEM;
		tc->rx = n;
		tc->rxcap = need;
	}
	return 0;
}

/* ---------------- receive ---------------- */

static void tcp_parse(struct tcp_conn *tc)
{
	struct iscsi_conn *c = tc->conn;
	struct iscsi_rx_framing f = {
		.hd = tc->hd, .dd = tc->dd,
		.max_dsl = c->state == CONN_STATE_LOGIN ? TCP_LOGIN_MAX_DSL : tc->max_rx_dsl,
		.max_pdu = tc->rxcap,
	};

	tc->rxoff += iscsi_conn_rx_stream(c, tc->rx + tc->rxoff, tc->rxlen - tc->rxoff, &f);
	if (tc->rxoff == tc->rxlen) {
		tc->rxoff = tc->rxlen = 0;
	} else if (tc->rxoff && (tc->rxcap - tc->rxlen < tc->rxcap / 4 || tc->rxoff > tc->rxcap / 2)) {
		memmove(tc->rx, tc->rx + tc->rxoff, tc->rxlen - tc->rxoff);
		tc->rxlen -= tc->rxoff;
		tc->rxoff = 0;
	}
}

static void tcp_conn_event(void *arg, uint32_t events)
{
	struct tcp_conn *tc = arg;
	struct iscsi_conn *c = tc->conn;

	if (tc->closing)
		return;
	if (events & EPOLLOUT)
		tcp_flush(tc);
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		return;
	tc->in_rx = true;
	for (int i = 0; i < TCP_READS_PER_EVENT && !tc->closing; i++) {
		ssize_t n;

		if (tc->rxlen == tc->rxcap) {
			if (tc->rxoff) {
				memmove(tc->rx, tc->rx + tc->rxoff, tc->rxlen - tc->rxoff);
				tc->rxlen -= tc->rxoff;
				tc->rxoff = 0;
			} else {
				break; /* cannot happen: a full PDU always fits */
			}
		}
		n = gw_sys_read(tc->fd, tc->rx + tc->rxlen, tc->rxcap - tc->rxlen);
		if (n > 0) {
			tc->rxlen += (size_t)n;
			tcp_parse(tc);
			if ((size_t)n < tc->rxcap / 2)
				break;
			continue;
		}
		if (n == 0) {
			if (c->state == CONN_STATE_FFP) {
				iscsi_conn_peer_closed(c);
			} else {
				GW_INFO(COMP, "%s: connection closed by peer%s", c->peer,
					c->state == CONN_STATE_LOGIN ? " during login" : "");
				iscsi_conn_close(c);
			}
			break;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			break;
		GW_WARN(COMP, "%s: receive failed: %s", c->peer, strerror(errno));
		iscsi_conn_drop(c, "receive failed");
		break;
	}
	tc->in_rx = false;
}

struct tcp_accept_msg {
	struct tcp_conn *tc;
	struct reactor *r;
};

static void tcp_conn_start(void *arg)
{
	struct tcp_accept_msg *m = arg;
	struct tcp_conn *tc = m->tc;
	int rc;

	free(m);
	rc = iscsi_conn_create(tc->portal, tc->reactor, tc, &tc->adm, &tc->conn);
	if (rc) {
		GW_ERR(COMP, "cannot create connection: %s", strerror(-rc));
		goto err_close;
	}
	rc = reactor_add_fd(tc->reactor, &tc->rfd, tc->fd, EPOLLIN, tcp_conn_event, tc);
	if (rc) {
		GW_ERR(COMP, "%s: cannot watch socket: %s", tc->conn->peer, strerror(-rc));
		tc->closing = true;
		close(tc->fd);
		tc->fd = -1;
		reactor_defer(tc->reactor, &tc->closed_work);
		return;
	}
	return;

err_close:
	close(tc->fd);
	free(tc->rx);
	free(tc);
}

static void tcp_accept(void *arg, uint32_t events)
{
	struct tcp_listener *l = arg;
	struct gw *gw = l->portal->gw;

	(void)events;
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		struct iscsi_admission adm;
		struct tcp_accept_msg *m;
		struct tcp_conn *tc;
		char who[80];
		int one = 1;
		int fd = accept4(l->fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			int err = errno;

			if (err == EAGAIN || err == EWOULDBLOCK)
				reactor_accept_idle(&l->guard);
			else if (err != EINTR && !reactor_accept_failed(&l->guard, err))
				GW_WARN(COMP, "accept on %s:%u: %s", gw_portal_cfg(l->portal)->addr,
					gw_portal_cfg(l->portal)->port, strerror(err));
			return;
		}
		if (atomic_load(&gw->shutting_down)) {
			close(fd);
			continue;
		}
		/* too many logging in from its address: closed before it costs more */
		gw_fmt_sockaddr((const struct sockaddr *)&peer, who, sizeof(who));
		if (iscsi_conn_admit(gw, who, &adm)) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		tc = calloc(1, sizeof(*tc));
		m = malloc(sizeof(*m));
		if (tc)
			tc->rx = malloc(TCP_RX_MIN);
		if (!tc || !m || !tc->rx) {
			GW_ERR(COMP, "out of memory accepting a connection");
			iscsi_conn_admit_cancel(gw, &adm);
			if (tc)
				free(tc->rx);
			free(tc);
			free(m);
			close(fd);
			continue;
		}
		tc->adm = adm;
		tc->fd = fd;
		tc->rxcap = TCP_RX_MIN;
		tc->max_rx_dsl = TCP_LOGIN_MAX_DSL;
		tc->portal = l->portal;
		tc->peer = peer;
		plen = sizeof(tc->local);
		getsockname(fd, (struct sockaddr *)&tc->local, &plen);
		tc->reactor = gw_pick_reactor(gw);
		reactor_deferred_init(&tc->flush_work, tcp_flush, tc);
		reactor_deferred_init(&tc->buf_wake, tcp_buf_wake, tc);
		list_init(&tc->buf_waiters);
		reactor_deferred_init(&tc->closed_work, tcp_closed_work, tc);
		m->tc = tc;
		m->r = tc->reactor;
		if (reactor_send_msg(tc->reactor, tcp_conn_start, m)) {
			iscsi_conn_admit_cancel(gw, &tc->adm);
			close(fd);
			free(tc->rx);
			free(tc);
			free(m);
		}
	}
}

static int tcp_listen(struct gw_portal *p)
{
	const struct gw_portal_cfg *pc = gw_portal_cfg(p);     /* a reload may replace it */
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	struct tcp_listener *l;
	char port[8], what[96];
	int one = 1, rc;

	snprintf(port, sizeof(port), "%u", pc->port);
	rc = getaddrinfo(pc->addr, port, &hints, &res);
	if (rc) {
		GW_ERR(COMP, "portal %s:%u: cannot resolve address: %s", pc->addr, pc->port,
		       gai_strerror(rc));
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		rc = -ENOMEM;
		goto err_free_ai;
	}
	l->portal = p;
	l->fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		rc = -errno;
		goto err_free_l;
	}
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* a failure is the portal's to log: it may only wait for its address (core/portal.c) */
	if (bind(l->fd, res->ai_addr, res->ai_addrlen) < 0 || listen(l->fd, 256) < 0) {
		rc = -errno;
		goto err_close;
	}
	l->reactor = p->gw->reactors[0];
	rc = reactor_add_fd(l->reactor, &l->rfd, l->fd, EPOLLIN, tcp_accept, l);
	if (rc)
		goto err_close;
	snprintf(what, sizeof(what), "accept on tcp://%s:%u", pc->addr, pc->port);
	reactor_accept_guard_init(&l->guard, l->reactor, &l->rfd, what);
	p->dm_priv = l;
	freeaddrinfo(res);
	GW_NOTICE(COMP, "listening on tcp://%s:%u", pc->addr, pc->port);
	return 0;

err_close:
	close(l->fd);
err_free_l:
	free(l);
err_free_ai:
	freeaddrinfo(res);
	return rc;
}

static void tcp_unlisten_msg(void *arg)
{
	struct tcp_listener *l = arg;

	reactor_accept_guard_fini(&l->guard);
	reactor_del_fd(l->reactor, &l->rfd);
	close(l->fd);
	free(l);
}

static void tcp_unlisten(struct gw_portal *p)
{
	struct tcp_listener *l = p->dm_priv;

	if (!l)
		return;
	p->dm_priv = NULL;
	/* a start that failed: the reactors never ran, a message would never be read */
	if (reactor_self() == l->reactor || !atomic_load(&p->gw->running))
		tcp_unlisten_msg(l);
	else
		reactor_send_msg(l->reactor, tcp_unlisten_msg, l);
}

struct gw_dm_ops gw_dm_tcp_ops = {
	.name = "tcp",
	.transport = GW_TRANSPORT_TCP,
	.listen = tcp_listen,
	.unlisten = tcp_unlisten,
	.send_control = tcp_send_control,
	.put_data = tcp_put_data,
	.get_data = tcp_get_data,
	.release_task = tcp_release_task,
	.buf_get = tcp_buf_get,
	.buf_put = tcp_buf_put,
	.thread_exit = tcp_thread_exit,
	.terminate = tcp_terminate,
	.enter_ffp = tcp_enter_ffp,
	.addrs = tcp_addrs,
};
GW_DM_REGISTER(gw_dm_tcp_ops)
