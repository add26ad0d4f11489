/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iSCSI backstore, commands: a bdev_io as a backend SCSI command on a
 * session (READ/WRITE, FLUSH, UNMAP, WRITE SAME, COMPARE AND WRITE), its
 * completion, what a backend answer means (retry, pass, reconnect) and the
 * read-back that resolves an interrupted COMPARE AND WRITE.
 */
#ifdef ISERGW_HAVE_LIBISCSI

#include "backend/iscsi_int.h"

/* ------------------------------------------------------------------------ */
/* commands                                                                 */

static void cmd_cb(struct iscsi_context *ctx, int status, void *data, void *priv);
static void req_fail_fenced(struct ib_req *q);

void ib_rx_defer(struct ib_rx *rx)
{
	reactor_defer(rx->r, &rx->flush);
}

void ib_req_defer_result(struct ib_req *q, int result)
{
	q->deferred_result = result;
	list_add_tail(&q->link, &q->rx->done);
	ib_rx_defer(q->rx);
}

static void req_requeue(struct ib_req *q, uint64_t delay_ms)
{
	struct ib_rx *rx = q->rx;

	q->not_before_ms = delay_ms ? gw_now_ms() + delay_ms : 0;
	list_add_tail(&q->link, &rx->requeue);
	rx->nwait++;
	atomic_fetch_add(&rx->ib->n_retries, 1);
	ib_rx_defer(rx);
}

struct ib_sess *ib_pick_session(struct ib_rx *rx)
{
	struct ib_sess *best = NULL;

	for (unsigned int i = 0; i < rx->nsess; i++) {
		struct ib_sess *s = &rx->sess[i];

		if (s->state != S_UP || s->broken || !s->ctx)
			continue;
		if (!best || s->ninflight < best->ninflight)
			best = s;
	}
	return best;
}

/* Builds the backend CDB of a request. Returns the transfer direction. */
static int build_cdb(struct ib_req *q, uint8_t *cdb, int *cdb_len, uint32_t *xfer,
		     struct scsi_iovec **iov, int *iovcnt)
{
	struct ib_bdev *ib = q->rx->ib;
	struct bdev_io *io = q->io;
	uint64_t lba = io->offset / ib->bs, n = io->len / ib->bs;

	memset(cdb, 0, 16);
	*cdb_len = 16;
	*xfer = 0;
	*iov = NULL;
	*iovcnt = 0;
	if (q->kind == RK_CAW_CHECK) {
		cdb[0] = 0x88;
		put_be64(&cdb[2], lba);
		put_be32(&cdb[10], (uint32_t)n);
		*xfer = (uint32_t)io->len;
		return SCSI_XFER_READ;
	}
	switch (io->op) {
	case BDEV_OP_READ:
		cdb[0] = 0x88;
		put_be64(&cdb[2], lba);
		put_be32(&cdb[10], (uint32_t)n);
		*xfer = (uint32_t)io->len;
		*iov = (struct scsi_iovec *)(void *)io->iov;
		*iovcnt = io->iovcnt;
		return SCSI_XFER_READ;
	case BDEV_OP_WRITE:
		if (io->flags & BDEV_IO_COMPARE_AND_WRITE) {
			cdb[0] = 0x89;
			cdb[1] = (io->flags & BDEV_IO_FUA) ? 0x08 : 0;
			put_be64(&cdb[2], lba);
			cdb[13] = (uint8_t)n;
			*xfer = (uint32_t)(2 * io->len);
		} else {
			cdb[0] = 0x8a;
			cdb[1] = (io->flags & BDEV_IO_FUA) ? 0x08 : 0;
			put_be64(&cdb[2], lba);
			put_be32(&cdb[10], (uint32_t)n);
			*xfer = (uint32_t)io->len;
		}
		*iov = (struct scsi_iovec *)(void *)io->iov;
		*iovcnt = io->iovcnt;
		return SCSI_XFER_WRITE;
	case BDEV_OP_FLUSH:
		cdb[0] = 0x91;          /* SYNCHRONIZE CACHE(16), whole LUN */
		return SCSI_XFER_NONE;
	case BDEV_OP_UNMAP:
		*cdb_len = 10;
		cdb[0] = 0x42;
		cdb[8] = 24;
		memset(q->param, 0, sizeof(q->param));
		q->param[1] = 22;
		q->param[3] = 16;
		put_be64(&q->param[8], lba);
		put_be32(&q->param[16], (uint32_t)n);
		*xfer = 24;
		return SCSI_XFER_WRITE;
	case BDEV_OP_WRITE_ZEROES:
		cdb[0] = 0x93;
		put_be64(&cdb[2], lba);
		put_be32(&cdb[10], (uint32_t)n);
		*xfer = ib->bs;
		return SCSI_XFER_WRITE;
	}
	return -1;
}

/*
 * libiscsi puts each command into its output queue by walking the queue (in
 * CmdSN order), about 27 instructions a step: a burst of N commands queued
 * for the one write at the end of the round costs N*N/2 steps. A session
 * with IB_WRITE_BATCH commands not yet written writes them at once, so the
 * walk stays short; the rest of the burst still goes in the round's flush.
 */
#define IB_WRITE_BATCH 8u

static void sess_write_now(struct ib_sess *s)
{
	int rc;

	s->queued = 0;
	s->in_service = true;
	rc = iscsi_service(s->ctx, POLLOUT);
	s->in_service = false;
	/* torn down by the round's flush (the session is kicked), not here */
	if (rc < 0 && !s->broken)
		ib_sess_mark_broken(s, iscsi_get_error(s->ctx));
}

void ib_sess_kick(struct ib_sess *s)
{
	if (list_empty(&s->kick_link))
		list_add_tail(&s->kick_link, &s->rx->kicks);
	ib_rx_defer(s->rx);
}

/*
 * Issues q on s. On failure q goes back to the queue (or fails, deferred).
 * The backend command is q's own task, its data the host's buffers: READ
 * data lands in them, WRITE data is sent from them (no copy either way).
 */
void ib_sess_issue(struct ib_sess *s, struct ib_req *q)
{
	struct ib_rx *rx = s->rx;
	struct scsi_task *t = &q->etask;
	struct scsi_iovec *iov;
	uint32_t xfer;
	int cdb_len, iovcnt, dir;

	if (q->kind != RK_PROBE &&
	    q->epoch != atomic_load_explicit(&rx->ib->fence_epoch, memory_order_relaxed)) {
		/* submitted before this node found itself fenced: never write it now */
		req_fail_fenced(q);
		ib_req_defer_result(q, -EREMOTEIO);
		return;
	}
	memset(t, 0, sizeof(*t));
	dir = build_cdb(q, t->cdb, &cdb_len, &xfer, &iov, &iovcnt);
	if (dir < 0) {
		ib_req_defer_result(q, -EINVAL);
		return;
	}
	t->cdb_size = cdb_len;
	t->xfer_dir = dir;
	t->expxferlen = (int)xfer;
	if (q->kind == RK_CAW_CHECK) {
		q->iov1.iov_base = q->bounce;
		q->iov1.iov_len = q->io->len;
		scsi_task_set_iov_in(t, &q->iov1, 1);
	} else if (q->io->op == BDEV_OP_UNMAP || q->io->op == BDEV_OP_WRITE_ZEROES) {
		q->iov1.iov_base = q->io->op == BDEV_OP_UNMAP ? q->param : rx->ib->zero_block;
		q->iov1.iov_len = xfer;
		scsi_task_set_iov_out(t, &q->iov1, 1);
	} else if (dir == SCSI_XFER_READ) {
		scsi_task_set_iov_in(t, iov, iovcnt);       /* Data-In lands in the caller's buffer */
	} else if (dir == SCSI_XFER_WRITE) {
		scsi_task_set_iov_out(t, iov, iovcnt);      /* sent from the caller's buffer */
	}
	q->task = t;
	q->sess = s;
	if (iscsi_scsi_command_async(s->ctx, (int)rx->ib->url.lun, t, cmd_cb, NULL, q) != 0) {
		q->task = NULL;
		q->sess = NULL;
		ib_task_put(q, t);
		ib_sess_mark_broken(s, iscsi_get_error(s->ctx));
		req_requeue(q, 0);
		return;
	}
	q->issue_us = now_us();
	list_add_tail(&q->link, &s->inflight);
	s->ninflight++;
	ib_sess_kick(s);
	if (++s->queued >= IB_WRITE_BATCH && !s->in_service && !s->broken)
		sess_write_now(s);
}

/*
 * A WARN line whenever the backend's answer other than GOOD changes (odd
 * sense passed through, NOT READY held, ...), not one per command; the
 * next GOOD resets it.
 */
static void note_odd_answer(struct ib_bdev *ib, const struct ib_req *q, int status, uint8_t key,
			    uint8_t asc, uint8_t ascq)
{
	uint32_t v = ((uint32_t)(status & 0xff) << 24 | (uint32_t)key << 16 | (uint32_t)asc << 8 |
		      ascq) | 0x80000000u;

	if (atomic_exchange(&ib->odd_answer, v) == v)
		return;
	char what[64];

	if (status == SCSI_STATUS_CHECK_CONDITION)
		snprintf(what, sizeof(what), "CHECK CONDITION, sense %x/%02x/%02x", key, asc, ascq);
	else
		snprintf(what, sizeof(what), "status 0x%02x", (unsigned int)status & 0xff);
	GW_WARN(IB_COMP, "%s: backend answers %s with %s: %s", ib->bdev.name, ib_req_name(q), what,
		status == SCSI_STATUS_RESERVATION_CONFLICT ? "passed to the host (the backend LUN is "
		"reserved by another initiator)"
		: key == 0x2 || (key == 0x5 && asc == 0x25) || status == SCSI_STATUS_BUSY ||
		  status == SCSI_STATUS_TASK_SET_FULL || key == 0xb
		? "held and retried, then NOT READY 04/01 to the host"
		: key == 0x7 ? "passed to the host (the backend LUN is write protected)"
		: "passed to the host");
}

/* Raw sense bytes of a CHECK CONDITION (libiscsi keeps SenseLength + sense). */
static const uint8_t *task_sense(const struct scsi_task *t, size_t *len)
{
	size_t n;

	if (!t->datain.data || t->datain.size < 2)
		return NULL;
	n = (size_t)t->datain.data[0] << 8 | t->datain.data[1];
	if (n > (size_t)t->datain.size - 2)
		n = (size_t)t->datain.size - 2;
	*len = n;
	return n ? t->datain.data + 2 : NULL;
}

static void caw_resolve(struct ib_req *q)
{
	struct bdev_io *io = q->io;
	uint64_t off = 0;
	uint8_t sense[18];

	switch (bdev_iscsi_caw_outcome(q->bounce, io->iov, io->iovcnt, io->len, &off)) {
	case IB_CAW_APPLIED:
		GW_NOTICE(IB_COMP, "%s: interrupted compare-and-write at offset %" PRIu64
			  " had been applied: GOOD", q->rx->ib->bdev.name, io->offset);
		ib_req_finish(q, 0);
		return;
	case IB_CAW_REISSUE:
		GW_NOTICE(IB_COMP, "%s: interrupted compare-and-write at offset %" PRIu64
			  " had not been applied: issuing it again", q->rx->ib->bdev.name, io->offset);
		free(q->bounce);
		q->bounce = NULL;
		q->kind = RK_IO;
		q->caw_unknown = false;
		req_requeue(q, 0);
		return;
	case IB_CAW_MISCOMPARE:
		break;
	}
	memset(sense, 0, sizeof(sense));
	sense[0] = 0xf0;        /* current, fixed, VALID */
	sense[2] = 0x0e;        /* MISCOMPARE */
	put_be32(&sense[3], (uint32_t)off);
	sense[7] = 10;
	sense[12] = 0x1d;       /* MISCOMPARE DURING VERIFY OPERATION */
	ib_req_set_answer(io, 0x02, sense, sizeof(sense));
	ib_req_finish(q, -EREMOTEIO);
}

/* A command this node may no longer have written: NOT READY 04/0C to the host. */
static void req_fail_fenced(struct ib_req *q)
{
	uint8_t sense[IB_FENCED_SENSE_LEN];

	bdev_iscsi_fenced_sense(sense);
	ib_req_set_answer(q->io, 0x02, sense, sizeof(sense));
}

/*
 * The backend answered RESERVATION CONFLICT while we use a reservation key:
 * this node's key was preempted (it was fenced by the others), or the session
 * serves unregistered because the node had no lease. When the session was
 * registered, everything submitted so far fails (the epoch); an unregistered
 * one came up without a lease, and its registration will advance the epoch
 * (ib_sess_register). Either way it registers again only once the node holds a
 * lease again (ib_rx_tick).
 */
static void req_fenced(struct ib_req *q, struct ib_sess *s)
{
	struct ib_bdev *ib = q->rx->ib;

	if (s->registered) {
		/* fenced: every registration of the key is gone, on every reactor */
		atomic_fetch_add(&ib->fence_epoch, 1);
		atomic_store(&ib->ok_gen, 0);
		s->registered = false;
		atomic_store(&ib->fenced_seen, true);
		GW_ERR(IB_COMP, "%s: backend answers %s at offset %" PRIu64 " with RESERVATION "
		       "CONFLICT: this node's reservation key was preempted (fenced by the other "
		       "gateways); failing its commands NOT READY 04/0C, registering again only "
		       "with a valid lease", ib->bdev.name, ib_req_name(q), q->io->offset);
		ib_rx_recount(q->rx);
		ib_poke(ib);    /* every session registers again now, not at its next tick */
	} else if (!atomic_exchange(&ib->fenced_seen, true)) {
		GW_ERR(IB_COMP, "%s: backend answers %s at offset %" PRIu64 " with RESERVATION "
		       "CONFLICT: this node is not registered (no valid lease): failing its "
		       "commands NOT READY 04/0C", ib->bdev.name, ib_req_name(q), q->io->offset);
	}
	req_fail_fenced(q);
	ib_req_finish(q, -EREMOTEIO);
}

static void cmd_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct ib_req *q = priv;
	struct ib_sess *s = q->sess;
	struct ib_rx *rx = q->rx;
	struct ib_bdev *ib = rx->ib;
	struct scsi_task *t = q->task;
	enum ib_action act;
	uint64_t lat;
	uint8_t key = 0, asc = 0, ascq = 0;
	bool optional;

	(void)data;
	if (!s || !s->ctx || s->ctx != ctx)
		return;         /* teardown in progress: it owns q */
	list_del(&q->link);
	s->ninflight--;
	q->sess = NULL;
	q->task = NULL;
	if (status == SCSI_STATUS_CANCELLED || status == SCSI_STATUS_ERROR ||
	    status == SCSI_STATUS_TIMEOUT) {
		ib_task_put(q, t);
		if (q->kind == RK_IO && (q->io->flags & BDEV_IO_COMPARE_AND_WRITE))
			q->caw_unknown = true;
		if (status == SCSI_STATUS_TIMEOUT)
			GW_WARN(IB_COMP, "%s: backend %s timed out after %u s: dropping the session",
				ib->bdev.name, ib_req_name(q), ib->cmd_timeout_s);
		ib_sess_mark_broken(s, status == SCSI_STATUS_TIMEOUT ? "command timed out"
				    : iscsi_get_error(ctx));
		req_requeue(q, 0);
		return;
	}
	if (status == SCSI_STATUS_RESERVATION_CONFLICT && q->kind == RK_IO && fence_key_set(ib)) {
		ib_task_put(q, t);
		req_fenced(q, s);
		return;
	}
	lat = now_us() - q->issue_us;
	atomic_fetch_add(&ib->n_commands, 1);
	atomic_fetch_add(&ib->lat_sum_us, lat);
	if (lat > atomic_load(&ib->lat_max_us))
		atomic_store(&ib->lat_max_us, lat);
	if (status == SCSI_STATUS_CHECK_CONDITION) {
		key = (uint8_t)t->sense.key;
		asc = (uint8_t)(t->sense.ascq >> 8);
		ascq = (uint8_t)t->sense.ascq;
	}
	optional = q->kind == RK_IO && (q->io->op == BDEV_OP_WRITE_ZEROES ||
					(q->io->flags & BDEV_IO_COMPARE_AND_WRITE));
	act = bdev_iscsi_classify(status, key, asc, ascq, optional);
	if (act == IB_RETRY && q->ua_retries++ >= IB_MAX_UA_RETRIES)
		act = IB_PASS;
	if (act == IB_PASS || act == IB_RETRY_LATER)
		note_odd_answer(ib, q, status, key, asc, ascq);
	switch (act) {
	case IB_DONE:
		ib_task_put(q, t);
		if (atomic_load_explicit(&ib->odd_answer, memory_order_relaxed))
			atomic_store(&ib->odd_answer, 0);
		if (atomic_load_explicit(&ib->bdev.offline, memory_order_relaxed) &&
		    atomic_exchange(&ib->bdev.offline, false))
			GW_NOTICE(IB_COMP, "%s: the backend answers GOOD again: LUN online",
				  ib->bdev.name);
		if (q->kind == RK_CAW_CHECK) {
			caw_resolve(q);
			return;
		}
		ib_req_finish(q, 0);
		return;
	case IB_RETRY:
		GW_INFO(IB_COMP, "%s: backend unit attention %02x/%02x on %s: issuing it again",
			ib->bdev.name, asc, ascq, ib_req_name(q));
		ib_task_put(q, t);
		req_requeue(q, 0);
		if (asc == 0x2a && ascq == 0x09) {
			/* log in again: the probe reads the new capacity and adopts it */
			GW_WARN(IB_COMP, "%s: the backend reports a capacity change: reconnecting "
				"to read it", ib->bdev.name);
			ib_sess_mark_broken(s, "backend capacity changed");
		}
		return;
	case IB_RETRY_LATER:
		if (q->not_before_ms == 0)      /* once per command, not every 100 ms */
			GW_INFO(IB_COMP, "%s: backend answered %s to %s (status 0x%x, sense %x/%02x/%02x): "
			"retrying", ib->bdev.name, status == SCSI_STATUS_CHECK_CONDITION ? "not now"
			: "busy", ib_req_name(q), status, key, asc, ascq);
		ib_task_put(q, t);
		if (q->kind == RK_IO && atomic_load_explicit(&ib->bdev.offline, memory_order_relaxed)) {
			/* held once to the limit already: answer NOT READY at once until GOOD */
			ib_req_finish(q, -ENOTCONN);
			return;
		}
		req_requeue(q, IB_RETRY_LATER_MS);
		return;
	case IB_UNSUPPORTED:
		if (q->io->op == BDEV_OP_WRITE_ZEROES) {
			GW_NOTICE(IB_COMP, "%s: the backend does not do WRITE SAME: writing zero "
				  "buffers", ib->bdev.name);
			atomic_store(&ib->no_ws, true);
		} else {
			GW_NOTICE(IB_COMP, "%s: the backend does not do COMPARE AND WRITE: the "
				  "gateway emulates it", ib->bdev.name);
		}
		ib_task_put(q, t);
		ib_req_finish(q, -EOPNOTSUPP);
		return;
	case IB_PASS:
	case IB_RECONNECT:
	default: {
		size_t slen = 0;
		const uint8_t *sn = status == SCSI_STATUS_CHECK_CONDITION ? task_sense(t, &slen) : NULL;

		GW_INFO(IB_COMP, "%s: backend %s at offset %" PRIu64 ": status 0x%x sense %x/%02x/%02x",
			ib->bdev.name, ib_req_name(q), q->io->offset, status, key, asc, ascq);
		ib_req_set_answer(q->io, (uint8_t)status, sn, slen);
		ib_task_put(q, t);
		ib_req_finish(q, -EREMOTEIO);
		return;
	}
	}
}

#endif /* ISERGW_HAVE_LIBISCSI */
