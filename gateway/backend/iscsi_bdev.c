/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iSCSI backstore, the bdev ops: submit (long READs split into pieces),
 * close, the counters.
 */
#ifdef ISERGW_HAVE_LIBISCSI

#include "backend/iscsi_int.h"

/* ------------------------------------------------------------------------ */
/* bdev ops                                                                 */

/* Issues q now if a session is free and nothing waits, else queues it. */
static void rx_enqueue(struct ib_rx *rx, struct ib_req *q)
{
	struct ib_sess *s = ib_pick_session(rx);

	if (s && list_empty(&rx->wait) && list_empty(&rx->requeue)) {
		ib_sess_issue(s, q);
		return;
	}
	if (!s && atomic_load_explicit(&rx->ib->bdev.offline, memory_order_relaxed)) {
		ib_req_defer_result(q, -ENOTCONN);
		return;
	}
	list_add_tail(&q->link, &rx->wait);
	rx->nwait++;
	ib_rx_arm_tick(rx);
	if (s)
		ib_rx_defer(rx);
}

/*
 * A READ or WRITE longer than the backend's MAXIMUM TRANSFER LENGTH goes as
 * several backend commands (pieces), issued together. Each piece is a
 * request of its own: a piece interrupted by a session drop is issued again
 * alone, pieces already completed are not redone. The host's command ends
 * when all pieces ended, with the error of the lowest failed piece.
 */
struct ib_piece {
	struct bdev_io io;
	struct ib_split *sp;
	uint8_t sense[BDEV_SENSE_MAX];
};

struct ib_split {
	struct bdev_io *parent;
	struct ib_rx *rx;
	unsigned int left;
	int result;
	uint64_t err_off;
	uint8_t status;
	uint8_t sense_len;
	uint8_t sense[BDEV_SENSE_MAX];
	struct ib_piece *pieces;        /* npieces, the iovec pool, the request pointers */
	size_t cap;                     /* bytes at pieces */
	struct ib_split *next_free;     /* in rx->free_splits */
};

/* Splits kept per reactor for the next long command (beyond, freed). */
#define IB_SPLIT_CACHE 32u

static void split_put(struct ib_split *sp)
{
	struct ib_rx *rx = sp->rx;

	if (rx->nfree_splits >= IB_SPLIT_CACHE) {
		free(sp->pieces);
		free(sp);
		return;
	}
	sp->next_free = rx->free_splits;
	rx->free_splits = sp;
	rx->nfree_splits++;
}

/* A split with room for `bytes` at pieces, from rx's cache when it has one. */
static struct ib_split *split_get(struct ib_rx *rx, size_t bytes)
{
	struct ib_split *sp = rx->free_splits;

	if (sp) {
		rx->free_splits = sp->next_free;
		rx->nfree_splits--;
	} else if (!(sp = calloc(1, sizeof(*sp)))) {
		return NULL;
	}
	sp->rx = rx;
	if (sp->cap < bytes) {
		struct ib_piece *p = malloc(bytes);

		if (!p) {
			split_put(sp);
			return NULL;
		}
		free(sp->pieces);
		sp->pieces = p;
		sp->cap = bytes;
	}
	sp->result = 0;
	sp->err_off = 0;
	sp->status = 0;
	sp->sense_len = 0;
	return sp;
}

void ib_split_cache_free(struct ib_rx *rx)
{
	while (rx->free_splits) {
		struct ib_split *sp = rx->free_splits;

		rx->free_splits = sp->next_free;
		free(sp->pieces);
		free(sp);
	}
	rx->nfree_splits = 0;
}

static void piece_done(struct bdev_io *pio)
{
	struct ib_piece *pc = pio->ctx;
	struct ib_split *sp = pc->sp;
	struct bdev_io *io = sp->parent;

	if (pio->result && (sp->result == 0 || pio->offset < sp->err_off)) {
		sp->result = pio->result;
		sp->err_off = pio->offset;
		sp->status = pio->scsi_status;
		sp->sense_len = pio->sense_len;
		memcpy(sp->sense, pc->sense, pio->sense_len);
	}
	if (--sp->left)
		return;
	io->result = sp->result;
	if (sp->result == -EREMOTEIO)
		ib_req_set_answer(io, sp->status, sp->sense_len ? sp->sense : NULL, sp->sense_len);
	split_put(sp);
	io->cb(io);
}

static int submit_split(struct ib_rx *rx, struct bdev_io *io, uint64_t piece_bytes)
{
	uint64_t npieces = (io->len + piece_bytes - 1) / piece_bytes;
	size_t niov = (size_t)io->iovcnt + npieces;
	struct ib_req **reqs;
	struct ib_split *sp;
	struct iovec *pool;
	uint64_t off = 0;
	uint64_t k;

	sp = split_get(rx, npieces * sizeof(struct ib_piece) + niov * sizeof(struct iovec) +
		       npieces * sizeof(struct ib_req *));
	if (!sp)
		return -ENOMEM;
	pool = (struct iovec *)(void *)(sp->pieces + npieces);
	reqs = (struct ib_req **)(void *)(pool + niov);
	/* every request first, so that nothing is issued unless all can be */
	for (k = 0; k < npieces; k++) {
		reqs[k] = ib_req_alloc(rx);
		if (!reqs[k])
			goto err_reqs;
	}
	sp->parent = io;
	sp->left = (unsigned int)npieces;
	for (k = 0; k < npieces; k++) {
		struct ib_piece *pc = &sp->pieces[k];
		uint64_t len = io->len - off < piece_bytes ? io->len - off : piece_bytes;

		memset(pc, 0, sizeof(*pc));
		pc->sp = sp;
		pc->io.op = io->op;
		pc->io.flags = io->flags;
		pc->io.offset = io->offset + off;
		pc->io.len = len;
		pc->io.iov = pool;
		pc->io.iovcnt = bdev_iscsi_iov_slice(io->iov, io->iovcnt, off, len, pool);
		pool += pc->io.iovcnt;
		pc->io.cb = piece_done;
		pc->io.ctx = pc;
		pc->io.sense = pc->sense;
		pc->io.bdev = io->bdev;
		reqs[k]->io = &pc->io;
		reqs[k]->kind = RK_IO;
		reqs[k]->t0_ms = gw_now_ms();
		off += len;
	}
	for (k = 0; k < npieces; k++)
		rx_enqueue(rx, reqs[k]);
	return 0;

err_reqs:
	while (k--)
		ib_req_free(reqs[k]);
	split_put(sp);
	return -ENOMEM;
}

static int iscsi_submit(struct bdev *b, struct bdev_io *io)
{
	struct ib_bdev *ib = to_ib(b);
	struct ib_rx *rx;
	struct ib_req *q;
	uint64_t end, data_len = io->len;
	uint64_t nblocks = atomic_load_explicit(&ib->nblocks, memory_order_relaxed);
	uint32_t bs = atomic_load_explicit(&ib->bs, memory_order_relaxed);
	uint32_t max_xfer = 0;
	bool caw_too_long = false;

	if (!io->cb)
		return -EINVAL;
	io->result = 0;
	io->scsi_status = 0;
	io->sense_len = 0;
	io->priv = NULL;
	if (nblocks == 0)
		return -ENOTCONN;       /* geometry not known yet: the backend never answered */
	if (io->op == BDEV_OP_WRITE && (io->flags & BDEV_IO_COMPARE_AND_WRITE)) {
		uint32_t max_caw = atomic_load_explicit(&ib->max_caw_blocks, memory_order_relaxed);

		data_len = 2 * io->len;
		if (io->len / bs > 255)
			return -EINVAL;
		/* never split: longer than the backend takes → the gateway emulates it */
		caw_too_long = max_caw && io->len / bs > max_caw;
	}
	switch (io->op) {
	case BDEV_OP_READ:
	case BDEV_OP_WRITE: {
		uint64_t total = 0;

		if (io->iovcnt <= 0 || !io->iov || io->len == 0 || data_len > INT32_MAX)
			return -EINVAL;
		for (int i = 0; i < io->iovcnt; i++)
			total += io->iov[i].iov_len;
		if (total != data_len)
			return -EINVAL;
		if (!(io->flags & BDEV_IO_COMPARE_AND_WRITE))
			max_xfer = atomic_load_explicit(&ib->max_xfer_blocks, memory_order_relaxed);
		break;
	}
	case BDEV_OP_FLUSH:
		break;
	case BDEV_OP_UNMAP:
		if (!b->info.unmap_supported)
			return -EOPNOTSUPP;
		if (io->len == 0 || io->len / bs > UINT32_MAX)
			return -EINVAL;
		break;
	case BDEV_OP_WRITE_ZEROES: {
		uint64_t max_ws = atomic_load_explicit(&ib->max_ws_blocks, memory_order_relaxed);

		if (!atomic_load(&ib->has_ws) || atomic_load(&ib->no_ws) || (io->flags & BDEV_IO_FUA) ||
		    io->len / bs > UINT32_MAX || (max_ws && io->len / bs > max_ws))
			return -EOPNOTSUPP;
		if (io->len == 0)
			return -EINVAL;
		break;
	}
	default:
		return -EINVAL;
	}
	if (io->op != BDEV_OP_FLUSH) {
		if (io->offset % bs || io->len % bs)
			return -EINVAL;
		if (__builtin_add_overflow(io->offset, io->len, &end) || end > nblocks * bs)
			return -EINVAL;
		if (io->op != BDEV_OP_READ && b->info.readonly)
			return -EROFS;
	}
	rx = ib_rx_get(ib);
	if (!rx)
		return reactor_self() ? -ENOMEM : -EINVAL;
	if (io->op == BDEV_OP_READ && ib->read_chunk >= bs) {
		/* a long read as pieces issued together: the backend reads them in
		 * parallel and its Data-In flows sooner (docs/backend.md, Splitting) */
		uint32_t chunk = ib->read_chunk / bs;

		if (!max_xfer || chunk < max_xfer)
			max_xfer = chunk;
	}
	if (max_xfer && io->len > (uint64_t)max_xfer * bs)
		return submit_split(rx, io, (uint64_t)max_xfer * bs);
	q = ib_req_alloc(rx);
	if (!q)
		return -ENOMEM;
	q->io = io;
	q->kind = RK_IO;
	q->t0_ms = gw_now_ms();
	if (caw_too_long) {
		ib_req_defer_result(q, -EOPNOTSUPP);
		return 0;
	}
	rx_enqueue(rx, q);
	return 0;
}

int bdev_iscsi_get_stats(struct bdev *b, struct bdev_iscsi_stats *out)
{
	struct ib_bdev *ib;

	if (!b || b->ops != &bdev_iscsi_ops || !out)
		return -EINVAL;
	ib = to_ib(b);
	out->commands = atomic_load(&ib->n_commands);
	out->retries = atomic_load(&ib->n_retries);
	out->reconnects = atomic_load(&ib->n_reconnects);
	out->connect_failures = atomic_load(&ib->n_connect_fail);
	out->held_expired = atomic_load(&ib->n_expired);
	out->latency_us_sum = atomic_load(&ib->lat_sum_us);
	out->latency_us_max = atomic_load(&ib->lat_max_us);
	out->offline = atomic_load(&ib->bdev.offline);
	return 0;
}

/* Called once the reactors have stopped (gw_destroy), or before any I/O. */
static void iscsi_close(struct bdev *b)
{
	struct ib_bdev *ib = to_ib(b);
	struct bdev_iscsi_stats st;

	pthread_mutex_lock(&ib_all_lock);
	list_del(&ib->all_link);
	pthread_mutex_unlock(&ib_all_lock);
	if (bdev_iscsi_get_stats(b, &st) == 0)
		GW_NOTICE(IB_COMP, "%s: closing: %" PRIu64 " backend commands, %" PRIu64 " retries, %"
			  PRIu64 " reconnects, %" PRIu64 " failed logins, %" PRIu64
			  " held commands expired, latency avg %" PRIu64 " us max %" PRIu64 " us",
			  b->name, st.commands, st.retries, st.reconnects, st.connect_failures,
			  st.held_expired, st.commands ? st.latency_us_sum / st.commands : 0,
			  st.latency_us_max);
	if (ib->disc_running) {
		pthread_mutex_lock(&ib->lock);
		atomic_store(&ib->disc_stop, true);
		pthread_cond_broadcast(&ib->disc_cond);
		pthread_mutex_unlock(&ib->lock);
		pthread_join(ib->disc_thread, NULL);
	}
	for (unsigned int i = 0; i < IB_MAX_REACTORS; i++) {
		struct ib_rx *rx = atomic_load(&ib->rx[i]);

		if (rx)
			ib_rx_free(rx);
	}
	free(ib->zero_block);
	pthread_cond_destroy(&ib->disc_cond);
	pthread_mutex_destroy(&ib->lock);
	memset(&ib->url, 0, sizeof(ib->url));   /* the CHAP secret */
	free(ib);
}


const struct bdev_ops bdev_iscsi_ops = {
	.name = "iscsi",
	.submit = iscsi_submit,
	.close = iscsi_close,
	.set_listener = ib_set_listener,
	.awaits_registration = ib_awaits_registration,
};

#endif /* ISERGW_HAVE_LIBISCSI */
