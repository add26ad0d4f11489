// LINK: gw_proto isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the TCP datamover (dm/tcp.c), SPDK conn_ut style: tcp.c
 * is compiled into this program and the iSCSI core around it is faked (a
 * connection object, a framer standing for iscsi_conn_rx_stream that checks
 * every PDU it is given, drop/close/closed counting). The reactor, the
 * digests and the socket calls are the real ones; the "initiator" is the
 * other end of a stream socket accepted by tcp.c's own listener (a unix
 * socket in the abstract namespace: no port, no file), the target's end
 * with a small send buffer so that writes are partial.
 *
 * Send: a queue of PDUs far larger than the socket takes (digests on and
 * off, every padding) leaves in order, byte-exact, each PDU's sent callback
 * once, resumed by EPOLLOUT after EAGAIN while the initiator reads slowly.
 * Receive: a stream cut into reads of every awkward size (1 byte, inside
 * the header, inside the digest, larger than half the buffer) reaches the
 * framer whole, in order; the login phase's limit and the negotiated one.
 * Teardown: terminate while sending (queued PDUs fail once with
 * -ECONNRESET, iscsi_conn_closed once, after the event), the initiator
 * closing while the target sends, a drop from inside the receive path.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <cmocka.h>

#include "../../gateway/dm/tcp.c"

#define NPDU    32
#define SEG_MAX (64u * 1024u)

/* ---------------- the core, faked ---------------- */

static struct gw gw;
static struct gw_config gw_cfg;
static struct gw_portal portal;
static struct reactor *R;
static struct iscsi_conn *conn;         /* the one connection tcp.c made */
static unsigned int drops, closes, closed;
static uint32_t drop_at_itt = ~0u;      /* the framer drops the connection at this ITT */
/*
 * What went wrong inside a reactor callback (the fakes below run there):
 * recorded, not asserted, since a failed assertion would jump out of the
 * reactor; the tests check it.
 */
static const char *cb_error;

#define CB_CHECK(cond)                                                          \
	do {                                                                    \
		if (!(cond) && !cb_error)                                       \
			cb_error = #cond;                                       \
	} while (0)

struct reactor *gw_pick_reactor(struct gw *g)
{
	(void)g;
	return R;
}

int iscsi_conn_admit(struct gw *g, const char *peer, struct iscsi_admission *a)
{
	(void)g;
	(void)peer;
	a->counted = false;
	return 0;
}

void iscsi_conn_admit_cancel(struct gw *g, struct iscsi_admission *a)
{
	(void)g;
	(void)a;
}

int iscsi_conn_create(struct gw_portal *p, struct reactor *r, void *dm_priv,
		      struct iscsi_admission *a, struct iscsi_conn **out)
{
	struct iscsi_conn *c = calloc(1, sizeof(*c));
	struct tcp_conn *tc = dm_priv;
	int small = 4096;

	(void)a;
	if (!c)
		return -ENOMEM;
	CB_CHECK(conn == NULL);
	c->gw = p->gw;
	c->cfg = p->gw->cfg;
	c->portal = p;
	c->reactor = r;
	c->dm = p->dm;
	c->dm_priv = dm_priv;
	c->state = CONN_STATE_LOGIN;
	snprintf(c->peer, sizeof(c->peer), "test-initiator");
	/* small, so that the target's writes are partial */
	CB_CHECK(setsockopt(tc->fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
	conn = c;
	*out = c;
	return 0;
}

void iscsi_conn_drop(struct iscsi_conn *c, const char *why)
{
	(void)why;
	if (c->state == CONN_STATE_CLOSING)
		return;
	drops++;
	c->state = CONN_STATE_CLOSING;
	c->dm->terminate(c);
}

/* a peer gone in full feature phase counts as a drop, as in the core */
void iscsi_conn_peer_closed(struct iscsi_conn *c)
{
	iscsi_conn_drop(c, "closed by the initiator without logout");
}

void iscsi_conn_close(struct iscsi_conn *c)
{
	closes++;
	c->state = CONN_STATE_CLOSING;
	c->dm->terminate(c);
}

void iscsi_conn_closed(struct iscsi_conn *c)
{
	CB_CHECK(c == conn);
	CB_CHECK(c->dm_priv == NULL);
	closed++;
	free(c);
	conn = NULL;
}

struct iscsi_tx_pdu *iscsi_tx_pdu_alloc(void)
{
	return calloc(1, sizeof(struct iscsi_tx_pdu));
}

void iscsi_tx_pdu_free(struct iscsi_tx_pdu *pdu)
{
	free(pdu);
}

/* only tcp_put_data() sends through the core here: its PDUs all have a callback */
int iscsi_conn_send(struct iscsi_conn *c, struct iscsi_tx_pdu *pdu, bool advance_stat_sn)
{
	int rc = c->dm->send_control(c, pdu);

	(void)advance_stat_sn;
	if (rc)
		pdu->sent(pdu, rc);
	return rc;
}

/* Data-In of tcp_put_data(): not tested here (the core builds it) */
uint32_t iscsi_task_data_in_len(const struct iscsi_task *t)
{
	return t->edtl;
}

bool iscsi_task_put_data_with_status(const struct iscsi_task *t)
{
	(void)t;
	return true;
}

void iscsi_task_build_datain(struct iscsi_task *t, struct iscsi_data_in *h, uint32_t offset,
			     uint32_t len, bool final, bool status)
{
	(void)t;
	(void)len;
	memset(h, 0, sizeof(*h));
	h->opcode = ISCSI_OP_DATA_IN;
	h->flags = (final ? ISCSI_FLAG_FINAL : 0) | (status ? ISCSI_DATAIN_STATUS : 0);
	h->buffer_offset = htobe32(offset);
	iscsi_bhs_set_dsl((struct iscsi_bhs *)h, len);
}

static unsigned int tx_done;

void iscsi_task_tx_done(struct iscsi_task *t)
{
	t->pending_tx--;
	tx_done++;
}

void iscsi_task_send_response(struct iscsi_task *t)
{
	(void)t;
}

int iscsi_task_send_r2ts(struct iscsi_task *t)
{
	(void)t;
	return 0;
}

/* the tasks that got their buffer after waiting, in order */
static struct iscsi_task *buf_ready[8];
static unsigned int nbuf_ready;

void iscsi_task_buf_ready(struct iscsi_task *t)
{
	if (nbuf_ready < 8)
		buf_ready[nbuf_ready] = t;
	nbuf_ready++;
}

/* the core's registry: tcp.c registers itself at start (GW_DM_REGISTER) */
static struct gw_dm_ops *registered_dm;

int gw_dm_register(struct gw_dm_ops *ops)
{
	registered_dm = ops;
	return 0;
}

/*
 * The framer: what iscsi_conn_rx_stream() does with the bytes, minus the
 * protocol. Every PDU must be the next one the initiator sent: ITT n,
 * data of len_of(n) bytes of pattern n, digests right.
 */
static uint32_t rx_next;                /* ITT of the next PDU expected */
static struct iscsi_rx_framing last_f;
static uint8_t pattern[SEG_MAX + 8];

static uint32_t len_of(uint32_t itt)
{
	static const uint32_t lens[] = { 0, 1, 2, 3, 4, 5, 47, 48, 4093, 8192, 150001, 65535 };

	return lens[itt % (sizeof(lens) / sizeof(lens[0]))];
}

size_t iscsi_conn_rx_stream(struct iscsi_conn *c, const uint8_t *buf, size_t len,
			    const struct iscsi_rx_framing *f)
{
	size_t done = 0;

	last_f = *f;
	while (c->state != CONN_STATE_CLOSING && len - done >= ISCSI_BHS_LEN) {
		const uint8_t *p = buf + done;
		const struct iscsi_bhs *bhs = (const struct iscsi_bhs *)p;
		uint32_t dsl = iscsi_bhs_dsl(bhs), pad = iscsi_pad4(dsl), itt = be32toh(bhs->itt);
		uint32_t hlen = ISCSI_BHS_LEN + (f->hd ? 4u : 0u), got;
		size_t total = (size_t)hlen + dsl + pad + (f->dd && dsl ? 4u : 0u);
		bool ok = itt == rx_next && dsl == len_of(itt) && total <= f->max_pdu;

		if (ok && len - done < total)
			break;
		if (ok && f->hd) {
			memcpy(&got, p + ISCSI_BHS_LEN, 4);
			ok = le32toh(got) == iscsi_digest(p, ISCSI_BHS_LEN);
		}
		for (uint32_t i = 0; ok && i < dsl; i++)
			ok = p[hlen + i] == (uint8_t)(pattern[i % SEG_MAX] + itt);
		if (ok && f->dd && dsl) {
			memcpy(&got, p + hlen + dsl + pad, 4);
			ok = le32toh(got) == iscsi_data_digest(p + hlen, dsl, pad);
		}
		if (!ok) {
			CB_CHECK(!"the framer was given the PDU expected");
			iscsi_conn_drop(c, "test: not the PDU expected");
			break;
		}
		done += total;
		rx_next++;
		if (itt == drop_at_itt)
			iscsi_conn_drop(c, "test: a bad PDU");
	}
	return done;
}

/* ---------------- the initiator's end ---------------- */

static int listen_fd = -1;
static struct tcp_listener *listener;
static int peer_fd = -1;                /* the initiator's end */

static int setup(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t salen;
	int fd, rc;

	(void)state;
	conn = NULL;
	cb_error = NULL;
	drops = closes = closed = 0;
	drop_at_itt = ~0u;
	rx_next = 0;
	tx_done = 0;
	/* the abstract namespace: nothing in the file system */
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "isergw-test-tcp-%d", (int)getpid());
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1));
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(listen_fd >= 0);
	assert_int_equal(bind(listen_fd, (struct sockaddr *)&sa, salen), 0);
	assert_int_equal(listen(listen_fd, 4), 0);
	/* tcp.c's own listener, on that socket */
	listener = calloc(1, sizeof(*listener));
	assert_non_null(listener);
	listener->fd = listen_fd;
	listener->portal = &portal;
	listener->reactor = R;
	rc = reactor_add_fd(R, &listener->rfd, listen_fd, EPOLLIN, tcp_accept, listener);
	assert_int_equal(rc, 0);
	portal.dm_priv = listener;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, salen), 0);
	for (int i = 0; i < 100 && !conn; i++)
		reactor_poll(R);
	assert_non_null(conn);
	peer_fd = fd;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (cb_error)
		fprintf(stderr, "test_tcp: in a callback: %s\n", cb_error);
	if (conn && conn->state != CONN_STATE_CLOSING)
		iscsi_conn_close(conn);
	for (int i = 0; i < 100 && conn; i++)
		reactor_poll(R);
	if (peer_fd >= 0)
		close(peer_fd);
	peer_fd = -1;
	tcp_unlisten_msg(listener);
	portal.dm_priv = NULL;
	listener = NULL;
	return conn || cb_error ? -1 : 0;
}

static void enter_ffp(bool hd, bool dd, uint32_t max_recv_dsl)
{
	conn->state = CONN_STATE_FFP;
	conn->params.header_digest = hd;
	conn->params.data_digest = dd;
	conn->params.max_recv_dsl = max_recv_dsl;
	assert_int_equal(gw_dm_tcp_ops.enter_ffp(conn), 0);
}

/* ---------------- send ---------------- */

struct sent_rec {
	int status;
	unsigned int calls;
	unsigned int order;
};

static struct sent_rec sent[NPDU];
static unsigned int nsent;
static uint8_t *tx_data[NPDU];

static void pdu_sent(struct iscsi_tx_pdu *pdu, int status)
{
	struct sent_rec *s = &sent[(uintptr_t)pdu->ctx];

	s->status = status;
	s->calls++;
	s->order = nsent++;
	free(pdu);
}

/* NPDU PDUs of 1..64 KiB (every padding), ITT i, data pattern + i. */
static void queue_pdus(unsigned int n)
{
	memset(sent, 0, sizeof(sent));
	nsent = 0;
	for (unsigned int i = 0; i < n; i++) {
		struct iscsi_tx_pdu *pdu = iscsi_tx_pdu_alloc();
		uint32_t len = SEG_MAX - i * 7;

		assert_non_null(pdu);
		tx_data[i] = malloc(len);
		assert_non_null(tx_data[i]);
		for (uint32_t k = 0; k < len; k++)
			tx_data[i][k] = (uint8_t)(pattern[k] + i);
		pdu->bhs.opcode = ISCSI_OP_NOP_IN;
		pdu->bhs.itt = htobe32(i);
		iscsi_bhs_set_dsl(&pdu->bhs, len);
		pdu->data = tx_data[i];
		pdu->data_len = len;
		pdu->sent = pdu_sent;
		pdu->ctx = (void *)(uintptr_t)i;
		assert_int_equal(gw_dm_tcp_ops.send_control(conn, pdu), 0);
	}
}

static void free_tx_data(unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		free(tx_data[i]);
		tx_data[i] = NULL;
	}
}

/* Read what the socket has (non-blocking) into buf[*len..cap); returns the bytes read. */
static size_t drain(int fd, uint8_t *buf, size_t *len, size_t cap, size_t most)
{
	size_t got = 0;

	while (got < most) {
		size_t want = cap - *len < most - got ? cap - *len : most - got;
		ssize_t n;

		if (!want)
			break;
		n = read(fd, buf + *len, want);
		if (n <= 0)
			break;
		*len += (size_t)n;
		got += (size_t)n;
	}
	return got;
}

/* Check the stream the initiator read: NPDU PDUs as queued, digests as negotiated. */
static void check_stream(const uint8_t *buf, size_t len, unsigned int n, bool hd, bool dd)
{
	size_t off = 0;

	for (unsigned int i = 0; i < n; i++) {
		const struct iscsi_bhs *bhs = (const struct iscsi_bhs *)(buf + off);
		uint32_t dlen = SEG_MAX - i * 7, pad = iscsi_pad4(dlen), v;

		assert_true(off + ISCSI_BHS_LEN <= len);
		assert_int_equal(be32toh(bhs->itt), i);
		assert_int_equal(iscsi_bhs_dsl(bhs), dlen);
		if (hd) {
			memcpy(&v, buf + off + ISCSI_BHS_LEN, 4);
			assert_int_equal(le32toh(v), iscsi_digest(bhs, ISCSI_BHS_LEN));
		}
		off += ISCSI_BHS_LEN + (hd ? 4u : 0u);
		assert_true(off + dlen + pad + (dd ? 4u : 0u) <= len);
		assert_memory_equal(buf + off, tx_data[i], dlen);
		for (uint32_t k = 0; k < pad; k++)
			assert_int_equal(buf[off + dlen + k], 0);
		if (dd) {
			memcpy(&v, buf + off + dlen + pad, 4);
			assert_int_equal(le32toh(v), iscsi_data_digest(tx_data[i], dlen, pad));
		}
		off += dlen + pad + (dd ? 4u : 0u);
	}
	assert_int_equal(off, len);
}

/*
 * 32 PDUs of ~64 KiB queued at once against a send buffer of a few KiB:
 * the first flush writes part and waits (EAGAIN); the initiator reads in
 * small bites, and each time the reactor's EPOLLOUT resumes the flush,
 * until every byte is out, in order, each PDU's callback once with 0.
 */
static void test_send_partial_writes(void **state)
{
	(void)state;
	for (int mode = 0; mode < 4; mode++) {
		bool hd = mode & 1, dd = mode & 2;
		size_t cap = NPDU * (SEG_MAX + 64), len = 0;
		uint8_t *buf = malloc(cap);
		unsigned int idle = 0;

		assert_non_null(buf);
		if (mode)
			assert_int_equal(setup(NULL), 0);
		enter_ffp(hd, dd, 65536);
		queue_pdus(NPDU);
		reactor_poll(R);
		/* the socket took a part: the rest waits for EPOLLOUT */
		assert_true(nsent < NPDU);
		while (nsent < NPDU || drain(peer_fd, buf, &len, cap, ~(size_t)0)) {
			/* an initiator reading 3000 bytes at a time */
			size_t got = drain(peer_fd, buf, &len, cap, 3000);

			reactor_poll(R);
			idle = got ? 0 : idle + 1;
			assert_true(idle < 1000); /* no progress at all: the flush never resumed */
		}
		assert_int_equal(drops, 0);
		for (unsigned int i = 0; i < NPDU; i++) {
			assert_int_equal(sent[i].calls, 1);
			assert_int_equal(sent[i].status, 0);
			assert_int_equal(sent[i].order, i);
		}
		check_stream(buf, len, NPDU, hd, dd);
		free_tx_data(NPDU);
		free(buf);
		assert_int_equal(teardown(NULL), 0);
	}
	assert_int_equal(setup(NULL), 0);
}

/*
 * Terminate while PDUs wait for the socket: what is queued is failed once
 * with -ECONNRESET (the ones written complete with 0), a new PDU is
 * refused, and iscsi_conn_closed() comes once, from a deferred call.
 */
static void test_close_while_sending(void **state)
{
	unsigned int ok = 0, reset = 0;
	struct iscsi_tx_pdu *pdu;

	(void)state;
	enter_ffp(false, false, 65536);
	queue_pdus(NPDU);
	reactor_poll(R);
	assert_true(nsent < NPDU);
	gw_dm_tcp_ops.terminate(conn);
	for (unsigned int i = 0; i < NPDU; i++) {
		assert_int_equal(sent[i].calls, 1);
		if (sent[i].status == 0)
			ok++;
		else if (sent[i].status == -ECONNRESET)
			reset++;
	}
	assert_int_equal(ok + reset, NPDU);
	assert_true(reset > 0);
	pdu = iscsi_tx_pdu_alloc();
	assert_non_null(pdu);
	assert_int_equal(gw_dm_tcp_ops.send_control(conn, pdu), -ECONNRESET);
	free(pdu);
	/* a second terminate changes nothing */
	gw_dm_tcp_ops.terminate(conn);
	assert_int_equal(closed, 0);
	reactor_poll(R);
	assert_int_equal(closed, 1);
	assert_null(conn);
	for (unsigned int i = 0; i < NPDU; i++)
		assert_int_equal(sent[i].calls, 1);
	free_tx_data(NPDU);
}

/* The initiator goes away while the target sends: dropped once, every PDU completed once. */
static void test_peer_closes_while_sending(void **state)
{
	(void)state;
	enter_ffp(true, true, 65536);
	queue_pdus(NPDU);
	reactor_poll(R);
	assert_true(nsent < NPDU);
	close(peer_fd);
	peer_fd = -1;
	for (int i = 0; i < 100 && conn; i++)
		reactor_poll(R);
	assert_null(conn);
	assert_int_equal(closed, 1);
	assert_int_equal(drops, 1);
	for (unsigned int i = 0; i < NPDU; i++)
		assert_int_equal(sent[i].calls, 1);
	free_tx_data(NPDU);
}

/* ---------------- receive ---------------- */

/* The initiator's PDUs itt first..first+n-1 as bytes (digests as asked). */
static size_t build_stream(uint8_t *buf, size_t cap, uint32_t first, uint32_t n, bool hd, bool dd)
{
	size_t len = 0;

	for (uint32_t itt = first; itt < first + n; itt++) {
		struct iscsi_bhs bhs;
		uint32_t dsl = len_of(itt), pad = iscsi_pad4(dsl), v;

		assert_true(len + ISCSI_BHS_LEN + 8 + dsl + pad <= cap);
		memset(&bhs, 0, sizeof(bhs));
		bhs.opcode = ISCSI_OP_NOP_OUT;
		bhs.itt = htobe32(itt);
		iscsi_bhs_set_dsl(&bhs, dsl);
		memcpy(buf + len, &bhs, sizeof(bhs));
		len += sizeof(bhs);
		if (hd) {
			v = htole32(iscsi_digest(&bhs, sizeof(bhs)));
			memcpy(buf + len, &v, 4);
			len += 4;
		}
		for (uint32_t i = 0; i < dsl; i++)
			buf[len + i] = (uint8_t)(pattern[i % SEG_MAX] + itt);
		memset(buf + len + dsl, 0, pad);
		if (dd && dsl) {
			v = htole32(iscsi_data_digest(buf + len, dsl, pad));
			memcpy(buf + len + dsl + pad, &v, 4);
			len += 4;
		}
		len += dsl + pad;
	}
	return len;
}

/* Write all of buf[0..len) in pieces of the sizes given (cycled), the reactor running between. */
static void send_in_pieces(int fd, const uint8_t *buf, size_t len, const size_t *sizes,
			   size_t nsizes)
{
	size_t off = 0, k = 0;
	unsigned int idle = 0;

	while (off < len) {
		size_t want = sizes[k++ % nsizes];
		ssize_t n;

		if (want > len - off)
			want = len - off;
		n = write(peer_fd, buf + off, want);
		if (n > 0)
			off += (size_t)n;
		reactor_poll(R);
		idle = n > 0 ? 0 : idle + 1;
		assert_true(idle < 1000);
		assert_null(cb_error);
		assert_int_equal(drops + closes, 0);
	}
	for (int i = 0; i < 10; i++)
		reactor_poll(R);
}

/*
 * PDUs from 0 to 150 KiB of data (larger than half the receive buffer)
 * cut into reads of 1, 7, 47, 49 bytes, 4 KiB + 3, 100 KiB: each reaches the
 * framer once, whole, in order; during login the framer is told the login
 * limit (64 KiB), afterwards the negotiated one and the digests.
 */
static void test_receive_framing(void **state)
{
	static const size_t sizes[][3] = {
		{ 1, 1, 1 }, { 7, 47, 49 }, { 4099, 1, 102400 }, { 200000, 3, 5 },
	};
	(void)state;
	size_t cap = 4u << 20, len;
	uint8_t *buf = malloc(cap);
	uint32_t first = 0;

	assert_non_null(buf);
	/* login phase: small PDUs only (the login limit) */
	len = build_stream(buf, cap, 0, 8, false, false);
	send_in_pieces(peer_fd, buf, len, sizes[1], 3);
	assert_int_equal(rx_next, 8);
	assert_int_equal(last_f.max_dsl, TCP_LOGIN_MAX_DSL);
	assert_false(last_f.hd || last_f.dd);
	first = 12;     /* ITTs 8..11 skipped: 150001 bytes would be beyond the login limit */
	rx_next = first;
	enter_ffp(true, true, 262144);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t n = s == 0 ? 6 : 24;

		len = build_stream(buf, cap, first, n, true, true);
		send_in_pieces(peer_fd, buf, len, sizes[s], 3);
		assert_int_equal(rx_next, first + n);
		first += n;
	}
	assert_int_equal(last_f.max_dsl, 262144);
	assert_true(last_f.hd && last_f.dd);
	free(buf);
}

/* A read that ends inside a PDU (then EAGAIN) is kept, not dropped; the rest completes it. */
static void test_receive_eagain(void **state)
{
	(void)state;
	uint8_t buf[256];
	size_t len;

	enter_ffp(false, true, 65536);
	rx_next = 6; /* 47 bytes of data */
	len = build_stream(buf, sizeof(buf), 6, 1, false, true);
	assert_int_equal(write(peer_fd, buf, 30), 30);
	for (int i = 0; i < 5; i++)
		reactor_poll(R);
	assert_int_equal(rx_next, 6);
	assert_int_equal(drops + closes, 0);
	assert_int_equal(write(peer_fd, buf + 30, len - 31), (ssize_t)(len - 31));
	reactor_poll(R);
	assert_int_equal(rx_next, 6);
	assert_int_equal(write(peer_fd, buf + len - 1, 1), 1);
	reactor_poll(R);
	assert_int_equal(rx_next, 7);
	assert_null(cb_error);
	assert_int_equal(drops + closes, 0);
}

/*
 * The core drops the connection from inside the receive path (a bad PDU
 * in the middle of a read): nothing after it is framed, the connection is
 * freed only after the event returns, once.
 */
static void test_drop_inside_receive(void **state)
{
	(void)state;
	uint8_t buf[4096];
	size_t len;

	enter_ffp(false, false, 65536);
	drop_at_itt = 3;
	len = build_stream(buf, sizeof(buf), 0, 8, false, false);
	assert_int_equal(write(peer_fd, buf, len), (ssize_t)len);
	reactor_poll(R);
	assert_int_equal(rx_next, 4);
	assert_int_equal(drops, 1);
	for (int i = 0; i < 5 && conn; i++)
		reactor_poll(R);
	assert_int_equal(closed, 1);
	assert_int_equal(rx_next, 4);
}

/* The initiator closes during login: closed (not dropped), once. */
static void test_peer_closes_in_login(void **state)
{
	(void)state;
	close(peer_fd);
	peer_fd = -1;
	for (int i = 0; i < 10 && conn; i++)
		reactor_poll(R);
	assert_int_equal(closes, 1);
	assert_int_equal(drops, 0);
	assert_int_equal(closed, 1);
}

/*
 * Data-In: a read of 150001 bytes with MaxXmitDataSegmentLength 8192 goes as
 * 18 PDUs of 8192 and one of 2545, offsets in order, the last with F and
 * status; the task is held until the last is sent (one tx_done per PDU and
 * one for the queuing).
 */
static void test_put_data_segments(void **state)
{
	(void)state;
	size_t cap = 200000 + 64 * 20, len = 0;
	uint8_t *buf = malloc(cap), *data = malloc(150001);
	struct iscsi_task t;
	size_t off = 0;
	unsigned int idle = 0, npdu = 0;

	assert_non_null(buf);
	assert_non_null(data);
	for (uint32_t i = 0; i < 150001; i++)
		data[i] = (uint8_t)(i * 13);
	enter_ffp(false, false, 65536);
	conn->params.max_xmit_dsl = 8192;
	memset(&t, 0, sizeof(t));
	t.conn = conn;
	t.edtl = 150001;
	t.buf = data;
	assert_int_equal(gw_dm_tcp_ops.put_data(conn, &t), 0);
	while (t.pending_tx || drain(peer_fd, buf, &len, cap, ~(size_t)0)) {
		size_t got = drain(peer_fd, buf, &len, cap, 5000);

		reactor_poll(R);
		idle = got ? 0 : idle + 1;
		assert_true(idle < 1000);
	}
	assert_int_equal(tx_done, 20);
	while (off < len) {
		const struct iscsi_data_in *h = (const struct iscsi_data_in *)(buf + off);
		uint32_t dsl = iscsi_bhs_dsl((const struct iscsi_bhs *)h);
		bool last = npdu == 18;

		assert_int_equal(be32toh(h->buffer_offset), npdu * 8192u);
		assert_int_equal(dsl, last ? 150001 - 18 * 8192 : 8192);
		assert_int_equal(!!(h->flags & ISCSI_FLAG_FINAL), last);
		assert_int_equal(!!(h->flags & ISCSI_DATAIN_STATUS), last);
		assert_memory_equal(buf + off + ISCSI_BHS_LEN, data + npdu * 8192u, dsl);
		off += ISCSI_BHS_LEN + dsl + iscsi_pad4(dsl);
		npdu++;
	}
	assert_int_equal(npdu, 19);
	assert_int_equal(off, len);
	free(buf);
	free(data);
}

/*
 * Data-In from the task's pipe (what a file backstore filled): with
 * MaxXmitDataSegmentLength 8191 and a header digest, 300 KiB leave as
 * Data-In PDUs of 8188 bytes (a multiple of 4: no padding) and the rest,
 * header then data, through a send buffer of a few KiB (partial splices,
 * EAGAIN, EPOLLOUT), byte-exact; the emptied pipe goes back to the pool.
 * Then a pipe whose data the initiator never takes (it closes the
 * connection mid-send) is closed at release, not reused.
 */
static void fill_pipe(struct iscsi_task *t, const uint8_t *data, uint32_t len)
{
	struct scsi_data_pipe *sp = t->scsi.pipe;

	assert_non_null(sp);
	for (uint32_t off = 0; off < len;) {
		ssize_t n = write(sp->wfd, data + off, len - off);

		assert_true(n > 0);
		off += (uint32_t)n;
	}
	sp->len = len;
}

/* tcp_splice decides whether a large READ is offered a pipe; a small READ never is */
static void test_pipe_offer(void **state)
{
	struct iscsi_task t;

	(void)state;
	enter_ffp(true, false, 65536);
	for (int splice = 0; splice < 2; splice++) {
		for (uint32_t len = 4096; len <= 1048576; len *= 256) {
			gw_cfg.tcp_splice = splice;
			memset(&t, 0, sizeof(t));
			t.conn = conn;
			t.edtl = len;
			t.data_in = true;
			assert_int_equal(gw_dm_tcp_ops.buf_get(conn, &t), 0);
			if (splice && len >= 65536)
				assert_non_null(t.scsi.pipe);
			else
				assert_null(t.scsi.pipe);
			gw_dm_tcp_ops.release_task(conn, &t);
			gw_dm_tcp_ops.buf_put(conn, &t);
		}
	}
	gw_cfg.tcp_splice = true;
}

/*
 * A connection's task buffers: up to TCP_BUF_LIMIT bytes, then tasks wait and
 * get theirs in order as buffers come back; one task larger than the limit
 * gets one when the connection holds none; a waiting task that goes cancels
 * its wait. (An initiator that never reads its socket held 1.9 GB a session.)
 */
/* A task going as the core lets it go: its pipe, then its buffer (or its wait). */
static void task_put(struct iscsi_task *t)
{
	gw_dm_tcp_ops.release_task(conn, t);
	gw_dm_tcp_ops.buf_put(conn, t);
}

static void test_buf_limit(void **state)
{
	enum { MB16 = 16u << 20 };
	struct iscsi_task t[8];

	(void)state;
	enter_ffp(false, false, 65536);
	memset(t, 0, sizeof(t));
	nbuf_ready = 0;
	for (int i = 0; i < 8; i++) {
		t[i].conn = conn;
		t[i].edtl = MB16;
		t[i].data_in = true;
		t[i].itt = (uint32_t)i;
	}
	/* 64 MiB: four of 16 MiB, the fifth and sixth wait */
	for (int i = 0; i < 4; i++)
		assert_int_equal(gw_dm_tcp_ops.buf_get(conn, &t[i]), 0);
	assert_int_equal(gw_dm_tcp_ops.buf_get(conn, &t[4]), -EAGAIN);
	assert_int_equal(gw_dm_tcp_ops.buf_get(conn, &t[5]), -EAGAIN);
	assert_null(t[4].buf);
	/* the sixth goes (aborted) while waiting */
	task_put(&t[5]);
	/* one back: the fifth gets it, on the next round */
	task_put(&t[0]);
	assert_int_equal(nbuf_ready, 0);
	reactor_poll(R);
	assert_int_equal(nbuf_ready, 1);
	assert_ptr_equal(buf_ready[0], &t[4]);
	assert_non_null(t[4].buf);
	for (int i = 1; i < 5; i++)
		task_put(&t[i]);
	reactor_poll(R);
	assert_int_equal(nbuf_ready, 1);
	/* nothing held: one task above the limit is served alone */
	t[6].edtl = 64u << 20 | 4096;
	assert_int_equal(gw_dm_tcp_ops.buf_get(conn, &t[6]), 0);
	assert_int_equal(gw_dm_tcp_ops.buf_get(conn, &t[7]), -EAGAIN);
	task_put(&t[6]);
	reactor_poll(R);
	assert_int_equal(nbuf_ready, 2);
	assert_ptr_equal(buf_ready[1], &t[7]);
	task_put(&t[7]);
}

static void test_put_data_pipe(void **state)
{
	enum { LEN = 300 * 1024 };
	size_t cap = LEN + 64 * 64, len = 0, off = 0;
	uint8_t *buf = malloc(cap), *data = malloc(LEN);
	struct iscsi_task t;
	unsigned int idle = 0, npdu = 0, pipes;

	(void)state;
	assert_non_null(buf);
	assert_non_null(data);
	for (uint32_t i = 0; i < LEN; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 9));
	enter_ffp(true, false, 65536);
	conn->params.max_xmit_dsl = 8191;
	memset(&t, 0, sizeof(t));
	t.conn = conn;
	t.edtl = LEN;
	t.data_in = true;
	assert_int_equal(gw_dm_tcp_ops.buf_get(conn, &t), 0);
	fill_pipe(&t, data, LEN);
	pipes = tl_pipes.count;
	assert_int_equal(gw_dm_tcp_ops.put_data(conn, &t), 0);
	while (t.pending_tx || drain(peer_fd, buf, &len, cap, ~(size_t)0)) {
		size_t got = drain(peer_fd, buf, &len, cap, 3000);

		reactor_poll(R);
		idle = got ? 0 : idle + 1;
		assert_true(idle < 1000); /* the splice never resumed */
	}
	assert_int_equal(drops, 0);
	while (off < len) {
		const struct iscsi_data_in *h = (const struct iscsi_data_in *)(buf + off);
		uint32_t dsl = iscsi_bhs_dsl((const struct iscsi_bhs *)h), v;

		assert_int_equal(be32toh(h->buffer_offset), npdu * 8188u);
		assert_int_equal(dsl, LEN - npdu * 8188u < 8188u ? LEN - npdu * 8188u : 8188u);
		memcpy(&v, buf + off + ISCSI_BHS_LEN, 4);
		assert_int_equal(le32toh(v), iscsi_digest(h, ISCSI_BHS_LEN));
		assert_memory_equal(buf + off + ISCSI_BHS_LEN + 4, data + npdu * 8188u, dsl);
		off += ISCSI_BHS_LEN + 4 + dsl;
		npdu++;
	}
	assert_int_equal(off, len);
	assert_int_equal(npdu, (LEN + 8187) / 8188);
	gw_dm_tcp_ops.release_task(conn, &t);
	assert_null(t.scsi.pipe);
	assert_int_equal(tl_pipes.count, pipes); /* kept, empty */
	gw_dm_tcp_ops.buf_put(conn, &t);

	/* again, and the initiator leaves with most of it still in the pipe */
	memset(&t, 0, sizeof(t));
	t.conn = conn;
	t.edtl = LEN;
	t.data_in = true;
	assert_int_equal(gw_dm_tcp_ops.buf_get(conn, &t), 0);
	assert_int_equal(tl_pipes.count, pipes); /* the same one */
	fill_pipe(&t, data, LEN);
	assert_int_equal(gw_dm_tcp_ops.put_data(conn, &t), 0);
	reactor_poll(R);
	close(peer_fd);
	peer_fd = -1;
	for (int i = 0; i < 100 && conn; i++)
		reactor_poll(R);
	assert_null(conn);
	assert_int_equal(t.pending_tx, 0);
	gw_dm_tcp_ops.release_task(NULL, &t);
	assert_int_equal(tl_pipes.count, pipes - 1); /* closed with its leftovers */
	gw_dm_tcp_ops.buf_put(NULL, &t);
	free(buf);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_send_partial_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_while_sending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_closes_while_sending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_receive_framing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_receive_eagain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_inside_receive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_closes_in_login, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_data_segments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipe_offer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buf_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_data_pipe, setup, teardown),
	};
	int rc;

	signal(SIGPIPE, SIG_IGN);
	gw_log_set_level(getenv("ISERGW_TEST_VERBOSE") ? GW_LOG_DEBUG : GW_LOG_ERR);
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 31 + (i >> 8));
	if (registered_dm != &gw_dm_tcp_ops) {
		fprintf(stderr, "tcp.c did not register its datamover at start\n");
		return 1;
	}
	atomic_init(&gw.shutting_down, false);
	gw_config_defaults(&gw_cfg); /* tcp_splice on: test_put_data_pipe */
	gw.cfg = &gw_cfg;
	portal.gw = &gw;
	portal.dm = &gw_dm_tcp_ops;
	if (reactor_create(0, &R))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	gw_dm_tcp_ops.thread_exit();
	reactor_destroy(R);
	return rc;
}
