/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SBC-3 block commands on top of the asynchronous bdev API.
 *
 * Every medium-modifying command passes the per-LU gate: ordinary writes
 * run concurrently with each other, a COMPARE AND WRITE or ORWRITE runs alone
 * against writes (after the writes ahead of it drained, before any write
 * queued behind it), which makes its read-modify-write atomic with respect to
 * writes and other COMPARE AND WRITEs on the LU. A WRITE ATOMIC also excludes
 * reads; reads count themselves lock-free and queue only while a WRITE ATOMIC
 * is queued or running. Queued commands resume on the reactor that submitted
 * them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scsi/scsi_bdev_ext.h"
#include "scsi/scsi_internal.h"
#include "common/bufpool.h"
#include "common/log.h"
#include "common/reactor.h"

/* --------------------------------------------------------------- the gate */

static void gate_resume_msg(void *arg)
{
	struct scsi_cmd *cmd = arg;

	cmd_priv(cmd)->resume(cmd);
}

/* May a command of this kind start now? (lu->lock held; FIFO order aside) */
static bool gate_admissible(struct scsi_lu *lu, uint8_t kind)
{
	switch (kind) {
	case GATE_WRITE:
		return lu->gate_excl == GATE_NONE;
	case GATE_READ:
		return lu->gate_excl != GATE_ATOMIC;
	case GATE_CAW:
		return lu->gate_excl == GATE_NONE && lu->gate_writes == 0;
	default:        /* GATE_ATOMIC */
		return lu->gate_excl == GATE_NONE && lu->gate_writes == 0 &&
		       atomic_load(&lu->gate_readers) == 0;
	}
}

static void gate_admit(struct scsi_lu *lu, uint8_t kind)
{
	if (kind == GATE_WRITE)
		lu->gate_writes++;
	else if (kind == GATE_READ)
		atomic_fetch_add(&lu->gate_readers, 1);
	else
		lu->gate_excl = kind;
}

/* Admits the command now (true) or queues it and calls resume later (false). */
static bool gate_enter(struct scsi_cmd *cmd, enum scsi_gate kind,
		       void (*resume)(struct scsi_cmd *cmd))
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_priv *pv = cmd_priv(cmd);
	bool ok;

	pthread_mutex_lock(&lu->lock);
	if (kind == GATE_ATOMIC)
		/* before looking at gate_readers: pairs with gate_read_enter() */
		atomic_fetch_add(&lu->gate_atomics, 1);
	ok = list_empty(&lu->gate_waiters) && gate_admissible(lu, kind);
	pv->gate = (uint8_t)kind;
	if (ok) {
		gate_admit(lu, kind);
	} else {
		pv->resume = resume;
		pv->reactor = reactor_self();
		list_add_tail(&pv->wait_link, &lu->gate_waiters);
	}
	pthread_mutex_unlock(&lu->lock);
	return ok;
}

/* Moves the waiters at the head of the FIFO that may run now to `run`. */
static void gate_collect_locked(struct scsi_lu *lu, struct list_head *run)
{
	while (!list_empty(&lu->gate_waiters)) {
		struct scsi_priv *w = list_first_entry(&lu->gate_waiters, struct scsi_priv, wait_link);

		if (!gate_admissible(lu, w->gate))
			break;
		gate_admit(lu, w->gate);
		list_del(&w->wait_link);
		list_add_tail(&w->wait_link, run);
	}
}

/* Resumes the collected waiters, each on the reactor that submitted it. */
static void gate_run(struct scsi_lu *lu, struct list_head *run)
{
	struct list_head *pos, *n;

	list_for_each_safe(pos, n, run) {
		struct scsi_priv *w = list_entry(pos, struct scsi_priv, wait_link);
		struct reactor *self = reactor_self();

		list_del(pos);
		if (w->reactor && w->reactor != self) {
			if (reactor_send_msg(w->reactor, gate_resume_msg, w->cmd) == 0)
				continue;
			GW_ERR(SCSI_LOG, "lun %llu: cannot post resume message; resuming here",
			       (unsigned long long)lu->params.lun);
		}
		w->resume(w->cmd);
	}
}

static void gate_kick(struct scsi_lu *lu)
{
	struct list_head run;

	list_init(&run);
	pthread_mutex_lock(&lu->lock);
	gate_collect_locked(lu, &run);
	pthread_mutex_unlock(&lu->lock);
	gate_run(lu, &run);
}

/*
 * Reads take no lock while no WRITE ATOMIC is queued or running: they count
 * themselves in gate_readers, then look at gate_atomics (a WRITE ATOMIC does
 * the opposite, both sequentially consistent, so one of the two sees the
 * other). A read that sees a WRITE ATOMIC backs off and queues in the FIFO.
 */
static bool gate_read_enter(struct scsi_cmd *cmd, void (*resume)(struct scsi_cmd *cmd))
{
	struct scsi_lu *lu = cmd->lu;

	atomic_fetch_add(&lu->gate_readers, 1);
	if (atomic_load(&lu->gate_atomics) == 0) {
		cmd_priv(cmd)->gate = GATE_READ_FAST;
		return true;
	}
	atomic_fetch_sub(&lu->gate_readers, 1);
	gate_kick(lu);          /* the WRITE ATOMIC may have been waiting for us */
	return gate_enter(cmd, GATE_READ, resume);
}

static void gate_exit(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_priv *pv = cmd_priv(cmd);
	uint8_t kind = pv->gate;
	struct list_head run;

	/* the cluster-wide lock goes with the local gate */
	if (pv->cl_lock)
		scsi_lu_cluster_unlock(cmd);
	if (kind == GATE_NONE)
		return;
	pv->gate = GATE_NONE;
	if (kind == GATE_READ || kind == GATE_READ_FAST) {
		atomic_fetch_sub(&lu->gate_readers, 1);
		if (atomic_load(&lu->gate_atomics) != 0)
			gate_kick(lu);  /* a WRITE ATOMIC may be waiting for reads to drain */
		return;
	}
	list_init(&run);
	pthread_mutex_lock(&lu->lock);
	if (kind == GATE_WRITE) {
		lu->gate_writes--;
	} else {
		lu->gate_excl = GATE_NONE;
		if (kind == GATE_ATOMIC)
			atomic_fetch_sub(&lu->gate_atomics, 1);
	}
	gate_collect_locked(lu, &run);
	pthread_mutex_unlock(&lu->lock);
	gate_run(lu, &run);
}

bool scsi_sbc_gate_enter(struct scsi_cmd *cmd, enum scsi_gate kind, void (*resume)(struct scsi_cmd *cmd))
{
	if (kind == GATE_READ || kind == GATE_READ_FAST)
		return gate_read_enter(cmd, resume);
	return gate_enter(cmd, kind, resume);
}

void scsi_sbc_gate_exit(struct scsi_cmd *cmd)
{
	gate_exit(cmd);
}

/* -------------------------------------------------------------- utilities */

static bool lba_out_of_range(const struct scsi_lu *lu, uint64_t lba, uint64_t n)
{
	return lba > lu->nblocks || n > lu->nblocks - lba;
}

/*
 * Answers a command whose range leaves the LU (LBA OUT OF RANGE) or is empty
 * (GOOD: nothing to do); true when it did.
 */
static bool range_answered(struct scsi_cmd *cmd, uint64_t lba, uint64_t n)
{
	if (lba_out_of_range(cmd->lu, lba, n)) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return true;
	}
	if (n == 0) {
		scsi_good(cmd);
		return true;
	}
	return false;
}

static int submit(struct scsi_cmd *cmd, enum bdev_op op, uint64_t off, uint64_t len,
		  void *buf, uint32_t flags, bdev_io_cb cb)
{
	struct scsi_priv *pv = cmd_priv(cmd);
	struct bdev_io *io = &pv->io;

	gw_zero(io, sizeof(*io));
	io->op = op;
	io->flags = flags;
	io->offset = off;
	io->len = len;
	if (flags & BDEV_IO_TO_PIPE) {
		io->pipe_fd = cmd->pipe->wfd;
	} else if (buf) {
		pv->iov[0].iov_base = buf;
		/* COMPARE AND WRITE done by the backstore: verify + write data */
		pv->iov[0].iov_len = (flags & BDEV_IO_COMPARE_AND_WRITE) ? 2 * len : len;
		io->iov = pv->iov;
		io->iovcnt = 1;
	}
	io->cb = cb;
	io->ctx = cmd;
	io->sense = cmd->sense;         /* a SCSI backend's own answer lands here */
	return bdev_submit(cmd->lu->bdev, io);
}

int scsi_sbc_submit(struct scsi_cmd *cmd, enum bdev_op op, uint64_t off, uint64_t len, void *buf,
		    uint32_t flags, bdev_io_cb cb)
{
	return submit(cmd, op, off, len, buf, flags, cb);
}

static void free_bounce(struct scsi_cmd *cmd)
{
	struct scsi_priv *pv = cmd_priv(cmd);

	free(pv->bounce);
	pv->bounce = NULL;
}

/* Ends a medium command with the sense matching a bdev error. */
static void io_error(struct scsi_cmd *cmd, int err, bool write)
{
	struct scsi_lu *lu = cmd->lu;

	gate_exit(cmd);
	free_bounce(cmd);
	if (err == -EREMOTEIO) {
		/* a backend target answered: its status and sense go back unchanged */
		const struct bdev_io *io = &cmd_priv(cmd)->io;

		GW_DEBUG(SCSI_LOG, "lun %llu: backend status 0x%02x on %s at LBA %llu",
			 (unsigned long long)lu->params.lun, io->scsi_status, write ? "write" : "read",
			 (unsigned long long)cmd_priv(cmd)->lba);
		cmd->status = io->scsi_status ? io->scsi_status : SCSI_STATUS_CHECK_CONDITION;
		cmd->sense_len = cmd->status == SCSI_STATUS_CHECK_CONDITION ? io->sense_len : 0;
		if (cmd->status == SCSI_STATUS_CHECK_CONDITION && !cmd->sense_len) {
			scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
			return;
		}
		scsi_complete(cmd);
		return;
	}
	if (err == -ENOTCONN) {
		/* the backend stayed unreachable past its hold limit (bdev offline) */
		scsi_fail(cmd, SCSI_SK_NOT_READY, ASC_LU_BECOMING_READY);
		return;
	}
	GW_ERR(SCSI_LOG, "lun %llu: %s error on %s at LBA %llu: %s",
	       (unsigned long long)lu->params.lun, write ? "write" : "read", lu->bdev->name,
	       (unsigned long long)cmd_priv(cmd)->lba, strerror(-err));
	if (write && err == -ENOSPC)
		scsi_fail(cmd, SCSI_SK_DATA_PROTECT, ASC_SPACE_ALLOC_FAILED);
	else
		scsi_fail(cmd, SCSI_SK_MEDIUM_ERROR, write ? ASC_WRITE_ERROR : ASC_UNRECOVERED_READ);
}

/* A medium command's I/O completed: when it failed, end the command (io_error) and say so. */
static bool io_failed(struct bdev_io *io, bool write)
{
	if (io->result >= 0)
		return false;
	io_error(io->ctx, io->result, write);
	return true;
}

static void fail_write_protected(struct scsi_cmd *cmd)
{
	scsi_fail(cmd, SCSI_SK_DATA_PROTECT,
		  cmd->lu->swp && !cmd->lu->params.readonly && !cmd->lu->bdev->info.readonly
			  ? ASC_SW_WRITE_PROTECTED : ASC_WRITE_PROTECTED);
}

static uint32_t write_flags(const struct scsi_cmd *cmd, bool fua)
{
	return (fua || !cmd->lu->wce) ? BDEV_IO_FUA : 0;
}

/* Byte of the TRANSFER LENGTH field in the READ/WRITE families' CDBs. */
static uint16_t xfer_len_byte(const uint8_t *cdb)
{
	switch (cdb[0] >> 5) {
	case 0: return 4;
	case 1: case 2: return 7;
	case 5: return 6;
	default: return 10;
	}
}

/* A configured MAXIMUM TRANSFER LENGTH is enforced (SBC-4 5.x: INVALID FIELD IN CDB). */
static bool over_max_xfer(struct scsi_cmd *cmd, uint64_t bytes)
{
	if (!cmd->lu->params.max_xfer_bytes || bytes <= cmd->lu->params.max_xfer_bytes)
		return false;
	scsi_fail_cdb(cmd, xfer_len_byte(cmd->cdb), -1);
	return true;
}

/* LBA and transfer length of the READ/WRITE/VERIFY families. */
static void decode_lba_len(const uint8_t *cdb, uint64_t *lba, uint32_t *n)
{
	switch (cdb[0] >> 5) {
	case 0:         /* 6-byte */
		*lba = (uint64_t)(cdb[1] & 0x1f) << 16 | (uint64_t)cdb[2] << 8 | cdb[3];
		*n = cdb[4] ? cdb[4] : 256;
		break;
	case 1:         /* 10-byte */
	case 2:
		*lba = get_be32(&cdb[2]);
		*n = get_be16(&cdb[7]);
		break;
	case 5:         /* 12-byte */
		*lba = get_be32(&cdb[2]);
		*n = get_be32(&cdb[6]);
		break;
	default:        /* 16-byte */
		*lba = get_be64(&cdb[2]);
		*n = get_be32(&cdb[10]);
		break;
	}
}

/* ------------------------------------------------------------ READ CAPACITY */

void scsi_sbc_read_capacity10(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	uint8_t d[8];

	if (!(cmd->cdb[8] & 0x01) && get_be32(&cmd->cdb[2]) != 0) {
		scsi_fail_cdb(cmd, 2, -1);
		return;
	}
	put_be32(&d[0], lu->nblocks - 1 > 0xfffffffeull ? 0xffffffffu : (uint32_t)(lu->nblocks - 1));
	put_be32(&d[4], lu->block_size);
	scsi_reply(cmd, d, sizeof(d), sizeof(d));
}

void scsi_sbc_read_capacity16(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	uint8_t d[32];

	memset(d, 0, sizeof(d));
	put_be64(&d[0], lu->nblocks - 1);
	put_be32(&d[8], lu->block_size);
	if (scsi_lu_thin(lu))
		d[14] = 0x80 | 0x40;    /* LBPME, LBPRZ */
	scsi_reply(cmd, d, sizeof(d), get_be32(&cmd->cdb[10]));
}

/* ------------------------------------------------------------------- READ */

static void read_done(struct bdev_io *io)
{
	struct scsi_cmd *cmd = io->ctx;
	struct scsi_priv *pv = cmd_priv(cmd);

	if (io_failed(io, false))
		return;
	gate_exit(cmd);
	if (pv->bounce) {
		if (cmd->buf_len)
			memcpy(cmd->buf, pv->bounce, cmd->buf_len);
		free_bounce(cmd);
	}
	scsi_good(cmd);
}

static void read_start(struct scsi_cmd *cmd)
{
	struct scsi_priv *pv = cmd_priv(cmd);
	struct scsi_lu *lu = cmd->lu;
	uint64_t bytes = (uint64_t)pv->nblocks * lu->block_size;
	uint64_t off = pv->lba * lu->block_size;
	int rc;

	if (cmd->pipe && bytes == cmd->buf_len && lu->bdev->info.splice_read &&
	    bdev_pipe_room(off, bytes) <= cmd->pipe->cap) {
		/* the data-in by reference, no copy here (struct scsi_data_pipe) */
		cmd->pipe->len = (uint32_t)bytes;
		rc = submit(cmd, BDEV_OP_READ, off, bytes, NULL, BDEV_IO_TO_PIPE, read_done);
	} else {
		rc = submit(cmd, BDEV_OP_READ, off, bytes, pv->bounce ? pv->bounce : cmd->buf, 0,
			    read_done);
	}
	if (rc < 0)
		io_error(cmd, rc, false);
}

void scsi_sbc_read(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_priv *pv = cmd_priv(cmd);
	uint64_t lba, bytes;
	uint32_t n;

	decode_lba_len(cmd->cdb, &lba, &n);
	if (cmd->cdb[0] != 0x08 && (cmd->cdb[1] & 0xe0)) {     /* RDPROTECT */
		scsi_fail_cdb(cmd, 1, 7);
		return;
	}
	bytes = (uint64_t)n * lu->block_size;
	cmd->xfer_len = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
	if (over_max_xfer(cmd, bytes))
		return;
	if (range_answered(cmd, lba, n))
		return;
	if (bytes > cmd->buf_len) {
		/*
		 * The initiator asked for less than the command moves (the core
		 * reports the overflow): only the blocks that hold what it can take
		 * are read, not the whole range into memory, through a bounce buffer
		 * when the last of them is partial.
		 */
		n = (uint32_t)(((uint64_t)cmd->buf_len + lu->block_size - 1) / lu->block_size);
		if (n == 0) {
			scsi_good(cmd);
			return;
		}
		if (cmd->buf_len % lu->block_size) {
			pv->bounce = malloc((size_t)n * lu->block_size);
			if (!pv->bounce) {
				scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
				return;
			}
		}
	}
	pv->lba = lba;
	pv->nblocks = n;
	if (gate_read_enter(cmd, read_start))
		read_start(cmd);
}

/* ------------------------------------------------------------------ WRITE */

/* The final write of WRITE, COMPARE AND WRITE and ORWRITE (frees a bounce buffer, if any). */
static void write_done(struct bdev_io *io)
{
	struct scsi_cmd *cmd = io->ctx;

	if (io_failed(io, true))
		return;
	free_bounce(cmd);
	gate_exit(cmd);
	scsi_good(cmd);
}

static void write_start(struct scsi_cmd *cmd)
{
	struct scsi_priv *pv = cmd_priv(cmd);
	struct scsi_lu *lu = cmd->lu;
	int rc;

	rc = submit(cmd, BDEV_OP_WRITE, pv->lba * lu->block_size,
		    (uint64_t)pv->nblocks * lu->block_size, cmd->buf, write_flags(cmd, pv->fua),
		    write_done);
	if (rc < 0)
		io_error(cmd, rc, true);
}

void scsi_sbc_write(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_priv *pv = cmd_priv(cmd);
	uint8_t op = cmd->cdb[0];
	bool verify = op == 0x2e || op == 0xae || op == 0x8e;
	uint64_t lba, bytes;
	uint32_t n;

	decode_lba_len(cmd->cdb, &lba, &n);
	if (op != 0x0a) {
		if (cmd->cdb[1] & 0xe0) {                       /* WRPROTECT */
			scsi_fail_cdb(cmd, 1, 7);
			return;
		}
		if (verify && (cmd->cdb[1] & 0x04)) {           /* BYTCHK 1xb */
			scsi_fail_cdb(cmd, 1, 2);
			return;
		}
	}
	bytes = (uint64_t)n * lu->block_size;
	cmd->xfer_len = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
	if (over_max_xfer(cmd, bytes))
		return;
	if (scsi_lu_write_protected(lu)) {
		fail_write_protected(cmd);
		return;
	}
	if (range_answered(cmd, lba, n))
		return;
	if (bytes > cmd->buf_len) {
		/*
		 * The initiator sends less than the CDB asks to write (iSCSI EDTL
		 * < transfer length): write the whole blocks that did arrive, and
		 * let the core report the overflow residual (RFC 7143 11.4.5.1).
		 * Less than one block: nothing is written; a partial block is an
		 * INVALID FIELD IN INFORMATION UNIT.
		 */
		n = cmd->buf_len / lu->block_size;
		if (cmd->buf_len % lu->block_size && n == 0) {
			scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, 0x0e03);
			return;
		}
		if (n == 0) {
			scsi_good(cmd);
			return;
		}
	}
	pv->lba = lba;
	pv->nblocks = n;
	/* WRITE AND VERIFY: the write is verified once stable, hence FUA */
	pv->fua = verify || (op != 0x0a && (cmd->cdb[1] & 0x08));
	if (gate_enter(cmd, GATE_WRITE, write_start))
		write_start(cmd);
}

/* ----------------------------------------------------------------- VERIFY */

/*
 * VERIFY with BYTCHK reads the range in chunks of at most SCSI_WS_CHUNK_BYTES
 * (pv->chunk blocks at pv->lba; pv->idx blocks compared so far, pv->remaining
 * to go) into one bounce buffer: BYTCHK 11b sends one block for a range of
 * any length, which must not become an allocation of the whole range.
 */
static void verify_start(struct scsi_cmd *cmd);

static void verify_done(struct bdev_io *io)
{
	struct scsi_cmd *cmd = io->ctx;
	struct scsi_priv *pv = cmd_priv(cmd);
	uint32_t bs = cmd->lu->block_size;
	const uint8_t *disk = pv->bounce;
	bool per_block = pv->step == 3;
	uint64_t i, done = (uint64_t)pv->idx * bs, total = (uint64_t)pv->chunk * bs;

	if (io_failed(io, false))
		return;
	for (i = 0; i < total; i++) {
		uint8_t want = per_block ? cmd->buf[i % bs] : cmd->buf[done + i];

		if (disk[i] != want) {
			gate_exit(cmd);
			free_bounce(cmd);
			scsi_cmd_set_sense_info(cmd, SCSI_SK_MISCOMPARE, 0x1d, 0x00,
						(uint32_t)(done + i));
			scsi_complete(cmd);
			return;
		}
	}
	pv->idx += pv->chunk;
	pv->lba += pv->chunk;
	pv->remaining -= pv->chunk;
	if (pv->remaining) {
		verify_start(cmd);
		return;
	}
	gate_exit(cmd);
	free_bounce(cmd);
	scsi_good(cmd);
}

static void verify_start(struct scsi_cmd *cmd)
{
	struct scsi_priv *pv = cmd_priv(cmd);
	struct scsi_lu *lu = cmd->lu;
	uint64_t max = SCSI_WS_CHUNK_BYTES / lu->block_size ? SCSI_WS_CHUNK_BYTES / lu->block_size : 1;
	int rc;

	pv->chunk = (uint32_t)(pv->remaining < max ? pv->remaining : max);
	rc = submit(cmd, BDEV_OP_READ, pv->lba * lu->block_size,
		    (uint64_t)pv->chunk * lu->block_size, pv->bounce, 0, verify_done);
	if (rc < 0)
		io_error(cmd, rc, false);
}

void scsi_sbc_verify(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_priv *pv = cmd_priv(cmd);
	uint8_t bytchk = (cmd->cdb[1] >> 1) & 0x03;
	uint64_t lba, need, chunk;
	uint32_t n;

	decode_lba_len(cmd->cdb, &lba, &n);
	if (cmd->cdb[1] & 0xe0) {                               /* VRPROTECT */
		scsi_fail_cdb(cmd, 1, 7);
		return;
	}
	if (bytchk == 2) {
		scsi_fail_cdb(cmd, 1, 2);
		return;
	}
	need = bytchk == 0 ? 0 : bytchk == 3 ? lu->block_size : (uint64_t)n * lu->block_size;
	if (n == 0)
		need = 0;
	cmd->xfer_len = need > UINT32_MAX ? UINT32_MAX : (uint32_t)need;
	if (lba_out_of_range(lu, lba, n)) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return;
	}
	if (n == 0 || bytchk == 0) {
		scsi_good(cmd);
		return;
	}
	if (need > cmd->buf_len || !cmd->buf) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, 0x0e03);
		return;
	}
	pv->lba = lba;
	pv->nblocks = n;
	pv->remaining = n;
	pv->idx = 0;
	pv->step = bytchk;
	chunk = SCSI_WS_CHUNK_BYTES / lu->block_size ? SCSI_WS_CHUNK_BYTES / lu->block_size : 1;
	pv->bounce = malloc((size_t)(n < chunk ? n : chunk) * lu->block_size);
	if (!pv->bounce) {
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	if (gate_read_enter(cmd, verify_start))
		verify_start(cmd);
}

/* ------------------------------------------------------------- WRITE SAME */

static void ws_next(struct scsi_cmd *cmd);

static void ws_done(struct bdev_io *io)
{
	struct scsi_cmd *cmd = io->ctx;
	struct scsi_priv *pv = cmd_priv(cmd);

	if (io->result < 0) {
		if (pv->step == 1 && (io->result == -EOPNOTSUPP || io->result == -EINVAL)) {
			/* no WRITE ZEROES in this backstore: write a zero pattern */
			pv->step = 0;
			ws_next(cmd);
			return;
		}
		io_error(cmd, io->result, true);
		return;
	}
	if (pv->step != 0) {            /* UNMAP or WRITE ZEROES: single request */
		pv->remaining = 0;
	} else {
		pv->lba += pv->chunk;
		pv->remaining -= pv->chunk;
	}
	if (pv->remaining == 0) {
		free_bounce(cmd);
		gate_exit(cmd);
		scsi_good(cmd);
		return;
	}
	ws_next(cmd);
}

static void ws_next(struct scsi_cmd *cmd)
{
	struct scsi_priv *pv = cmd_priv(cmd);
	struct scsi_lu *lu = cmd->lu;
	uint32_t bs = lu->block_size;
	uint64_t off = pv->lba * bs;
	int rc;

	switch (pv->step) {
	case 2:         /* deallocate */
		rc = submit(cmd, BDEV_OP_UNMAP, off, pv->remaining * bs, NULL, 0, ws_done);
		break;
	case 1:         /* all-zero pattern */
		rc = submit(cmd, BDEV_OP_WRITE_ZEROES, off, pv->remaining * bs, NULL,
			    write_flags(cmd, false), ws_done);
		if (rc == -EOPNOTSUPP || rc == -EINVAL) {
			pv->step = 0;
			ws_next(cmd);
			return;
		}
		break;
	default:
		if (!pv->bounce) {
			uint64_t max = SCSI_WS_CHUNK_BYTES / bs ? SCSI_WS_CHUNK_BYTES / bs : 1;
			uint32_t i, blocks = (uint32_t)(pv->remaining < max ? pv->remaining : max);

			pv->bounce = malloc((size_t)blocks * bs);
			if (!pv->bounce) {
				gate_exit(cmd);
				scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
				return;
			}
			for (i = 0; i < blocks; i++) {
				if (cmd->buf && cmd->buf_len >= bs)
					memcpy((uint8_t *)pv->bounce + (size_t)i * bs, cmd->buf, bs);
				else
					memset((uint8_t *)pv->bounce + (size_t)i * bs, 0, bs);
			}
			pv->chunk = blocks;
		}
		if (pv->chunk > pv->remaining)
			pv->chunk = (uint32_t)pv->remaining;
		rc = submit(cmd, BDEV_OP_WRITE, off, (uint64_t)pv->chunk * bs, pv->bounce,
			    write_flags(cmd, false), ws_done);
		break;
	}
	if (rc < 0)
		io_error(cmd, rc, true);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

void scsi_sbc_write_same(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_priv *pv = cmd_priv(cmd);
	bool sixteen = cmd->cdb[0] == 0x93;
	uint8_t b1 = cmd->cdb[1];
	bool unmap = b1 & 0x08, ndob = sixteen && (b1 & 0x01);
	uint64_t lba = sixteen ? get_be64(&cmd->cdb[2]) : get_be32(&cmd->cdb[2]);
	uint64_t n = sixteen ? get_be32(&cmd->cdb[10]) : get_be16(&cmd->cdb[7]);

	if (b1 & 0xe0) {                        /* WRPROTECT */
		scsi_fail_cdb(cmd, 1, 7);
		return;
	}
	if (b1 & 0x10) {                        /* ANCHOR: ANC_SUP is 0 */
		scsi_fail_cdb(cmd, 1, 4);
		return;
	}
	if (b1 & 0x06) {                        /* obsolete PBDATA/LBDATA */
		scsi_fail_cdb(cmd, 1, (b1 & 0x04) ? 2 : 1);
		return;
	}
	if (unmap && !scsi_lu_thin(lu)) {       /* LBPWS/LBPWS10 are 0 */
		scsi_fail_cdb(cmd, 1, 3);
		return;
	}
	cmd->xfer_len = ndob ? 0 : lu->block_size;
	if (scsi_lu_write_protected(lu)) {
		fail_write_protected(cmd);
		return;
	}
	if (lba_out_of_range(lu, lba, n)) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return;
	}
	if (n == 0) {                           /* WSNZ = 1 */
		scsi_fail_cdb(cmd, sixteen ? 10 : 7, -1);
		return;
	}
	if (n > SCSI_MAX_WS_BLOCKS) {
		scsi_fail_cdb(cmd, sixteen ? 10 : 7, -1);
		return;
	}
	if (!ndob && cmd->buf_len != lu->block_size && !(unmap && cmd->buf_len == 0)) {
		/* exactly one logical block of data-out is expected */
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, 0x0e03);
		return;
	}
	pv->lba = lba;
	pv->remaining = n;
	if (unmap)
		pv->step = 2;   /* deallocate: reads return zeroes after (LBPRZ) */
	else if (ndob || cmd->buf_len == 0 || all_zero(cmd->buf, lu->block_size))
		pv->step = 1;
	else
		pv->step = 0;
	if (gate_enter(cmd, GATE_WRITE, ws_next))
		ws_next(cmd);
}

/* ------------------------------------------------------------------ UNMAP */

static void unmap_next(struct scsi_cmd *cmd);

static void unmap_done(struct bdev_io *io)
{
	struct scsi_cmd *cmd = io->ctx;

	if (io_failed(io, true))
		return;
	cmd_priv(cmd)->idx++;
	unmap_next(cmd);
}

static void unmap_next(struct scsi_cmd *cmd)
{
	struct scsi_priv *pv = cmd_priv(cmd);
	struct scsi_lu *lu = cmd->lu;

	while (pv->idx < pv->ndesc) {
		const uint8_t *desc = &cmd->buf[8 + 16 * pv->idx];
		uint64_t lba = get_be64(desc);
		uint32_t n = get_be32(desc + 8);
		int rc;

		if (n == 0) {
			pv->idx++;
			continue;
		}
		pv->lba = lba;
		rc = submit(cmd, BDEV_OP_UNMAP, lba * lu->block_size,
			    (uint64_t)n * lu->block_size, NULL, 0, unmap_done);
		if (rc < 0)
			io_error(cmd, rc, true);
		return;
	}
	gate_exit(cmd);
	scsi_good(cmd);
}

void scsi_sbc_unmap(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_priv *pv = cmd_priv(cmd);
	uint32_t plen = get_be16(&cmd->cdb[7]);
	uint32_t avail, data_len, bd_len, i;
	uint64_t total = 0;

	if (cmd->cdb[1] & 0x01) {               /* ANCHOR: ANC_SUP is 0 */
		scsi_fail_cdb(cmd, 1, 0);
		return;
	}
	cmd->xfer_len = plen;
	if (scsi_lu_write_protected(lu)) {
		fail_write_protected(cmd);
		return;
	}
	if (plen == 0) {
		scsi_good(cmd);
		return;
	}
	avail = plen < cmd->buf_len ? plen : cmd->buf_len;
	if (avail < 8 || !cmd->buf) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return;
	}
	data_len = get_be16(&cmd->buf[0]);
	bd_len = get_be16(&cmd->buf[2]);
	if (data_len + 2 > avail) {
		scsi_fail_param(cmd, 0, -1);
		return;
	}
	if (bd_len + 8 > avail) {
		scsi_fail_param(cmd, 2, -1);
		return;
	}
	pv->ndesc = bd_len / 16;
	if (pv->ndesc > SCSI_MAX_UNMAP_DESC) {
		scsi_fail_param(cmd, 2, -1);
		return;
	}
	for (i = 0; i < pv->ndesc; i++) {
		const uint8_t *desc = &cmd->buf[8 + 16 * i];
		uint64_t lba = get_be64(desc);
		uint32_t n = get_be32(desc + 8);

		if (lba_out_of_range(lu, lba, n)) {
			scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
			return;
		}
		total += n;
		if (total > SCSI_MAX_UNMAP_LBAS) {
			scsi_fail_param(cmd, (uint16_t)(8 + 16 * i + 8), -1);
			return;
		}
	}
	pv->idx = 0;
	if (gate_enter(cmd, GATE_WRITE, unmap_next))
		unmap_next(cmd);
}

/* ------------------------------------------------------ COMPARE AND WRITE */

static void caw_read_done(struct bdev_io *io)
{
	struct scsi_cmd *cmd = io->ctx;
	struct scsi_priv *pv = cmd_priv(cmd);
	struct scsi_lu *lu = cmd->lu;
	uint64_t bytes = (uint64_t)pv->nblocks * lu->block_size, i;
	const uint8_t *disk = pv->bounce;
	int rc;

	if (io_failed(io, false))
		return;
	for (i = 0; i < bytes; i++) {
		if (disk[i] != cmd->buf[i]) {
			free_bounce(cmd);
			gate_exit(cmd);
			scsi_cmd_set_sense_info(cmd, SCSI_SK_MISCOMPARE, 0x1d, 0x00, (uint32_t)i);
			scsi_complete(cmd);
			return;
		}
	}
	free_bounce(cmd);
	rc = submit(cmd, BDEV_OP_WRITE, pv->lba * lu->block_size, bytes, cmd->buf + bytes,
		    write_flags(cmd, pv->fua), write_done);
	if (rc < 0)
		io_error(cmd, rc, true);
}

/*
 * A backstore that does COMPARE AND WRITE itself (a backend iSCSI LUN): the
 * verify and write data go as one command, atomic on the backend for every
 * gateway that shares it; a miscompare comes back as the backend's sense.
 */
static void caw_emulated_start(struct scsi_cmd *cmd);

static void caw_native_done(struct bdev_io *io)
{
	struct scsi_cmd *cmd = io->ctx;

	if (io->result == -EOPNOTSUPP) {        /* the backend lacks it after all */
		caw_emulated_start(cmd);
		return;
	}
	write_done(io);
}

static void caw_native_start(struct scsi_cmd *cmd)
{
	struct scsi_priv *pv = cmd_priv(cmd);
	struct scsi_lu *lu = cmd->lu;
	uint64_t bytes = (uint64_t)pv->nblocks * lu->block_size;
	int rc;

	rc = submit(cmd, BDEV_OP_WRITE, pv->lba * lu->block_size, bytes, cmd->buf,
		    write_flags(cmd, pv->fua) | BDEV_IO_COMPARE_AND_WRITE, caw_native_done);
	if (rc < 0)
		io_error(cmd, rc, true);
}

static void caw_start(struct scsi_cmd *cmd)
{
	if (cmd->lu->bdev->info.native_caw) {
		caw_native_start(cmd);
		return;
	}
	caw_emulated_start(cmd);
}

/*
 * The read of a read-modify-write under the gate (COMPARE AND WRITE
 * emulated, ORWRITE): pv->nblocks at pv->lba into a bounce buffer, then cb.
 */
static void gated_read_start(struct scsi_cmd *cmd, bdev_io_cb cb)
{
	struct scsi_priv *pv = cmd_priv(cmd);
	struct scsi_lu *lu = cmd->lu;
	uint64_t bytes = (uint64_t)pv->nblocks * lu->block_size;
	int rc;

	pv->bounce = malloc(bytes);
	if (!pv->bounce) {
		gate_exit(cmd);
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	rc = submit(cmd, BDEV_OP_READ, pv->lba * lu->block_size, bytes, pv->bounce, 0, cb);
	if (rc < 0)
		io_error(cmd, rc, false);
}

/* Read, compare and write under the gate: atomic against this gateway's writes. */
static void caw_emulated_start(struct scsi_cmd *cmd)
{
	gated_read_start(cmd, caw_read_done);
}

/* Into the gate (after the cluster-wide lock, when the cluster carries the LU's state). */
static void caw_gate(struct scsi_cmd *cmd)
{
	if (gate_enter(cmd, GATE_CAW, caw_start))
		caw_start(cmd);
}

void scsi_sbc_compare_and_write(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_priv *pv = cmd_priv(cmd);
	uint64_t lba = get_be64(&cmd->cdb[2]);
	uint32_t n = cmd->cdb[13];
	uint64_t need = 2ull * n * lu->block_size;

	if (cmd->cdb[1] & 0xe0) {                               /* WRPROTECT */
		scsi_fail_cdb(cmd, 1, 7);
		return;
	}
	if (n > SCSI_MAX_CAW_BLOCKS) {
		scsi_fail_cdb(cmd, 13, -1);
		return;
	}
	cmd->xfer_len = (uint32_t)need;
	if (scsi_lu_write_protected(lu)) {
		fail_write_protected(cmd);
		return;
	}
	if (lba_out_of_range(lu, lba, n)) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return;
	}
	if (n == 0) {
		if (cmd->buf_len) {
			/* data sent for zero blocks: the length field is wrong */
			scsi_fail_cdb(cmd, 13, -1);
			return;
		}
		scsi_good(cmd);
		return;
	}
	if (cmd->buf_len != need || !cmd->buf) {
		/* the data-out buffer must hold exactly the verify and write data */
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, 0x0e03);
		return;
	}
	pv->lba = lba;
	pv->nblocks = n;
	pv->fua = cmd->cdb[1] & 0x08;
	/* a backend's own COMPARE AND WRITE is atomic for every gateway already */
	if (!lu->bdev->info.native_caw && scsi_lu_cluster_lock(cmd, lba, n, caw_gate))
		return;
	caw_gate(cmd);
}

/* ---------------------------------------------------------------- ORWRITE */

static void orw_read_done(struct bdev_io *io)
{
	struct scsi_cmd *cmd = io->ctx;
	struct scsi_priv *pv = cmd_priv(cmd);
	struct scsi_lu *lu = cmd->lu;
	uint64_t bytes = (uint64_t)pv->nblocks * lu->block_size, i;
	uint8_t *disk = pv->bounce;
	int rc;

	if (io_failed(io, false))
		return;
	for (i = 0; i < bytes; i++)
		disk[i] |= cmd->buf[i];
	rc = submit(cmd, BDEV_OP_WRITE, pv->lba * lu->block_size, bytes, disk,
		    write_flags(cmd, pv->fua), write_done);
	if (rc < 0)
		io_error(cmd, rc, true);
}

static void orw_start(struct scsi_cmd *cmd)
{
	gated_read_start(cmd, orw_read_done);
}

/*
 * ORWRITE(16): read, OR the data-out in, write back. It passes the gate like
 * COMPARE AND WRITE, so no write or COMPARE AND WRITE on the LU interleaves
 * with the read-modify-write. Checks and short data-out as WRITE(16).
 */
void scsi_sbc_orwrite(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_priv *pv = cmd_priv(cmd);
	uint64_t lba = get_be64(&cmd->cdb[2]), bytes;
	uint32_t n = get_be32(&cmd->cdb[10]);

	if (cmd->cdb[1] & 0xe0) {                               /* ORPROTECT */
		scsi_fail_cdb(cmd, 1, 7);
		return;
	}
	bytes = (uint64_t)n * lu->block_size;
	cmd->xfer_len = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
	if (scsi_lu_write_protected(lu)) {
		fail_write_protected(cmd);
		return;
	}
	if (range_answered(cmd, lba, n))
		return;
	if (bytes > cmd->buf_len || !cmd->buf) {
		/* as WRITE: the whole blocks that arrived, nothing if less than one */
		n = cmd->buf ? cmd->buf_len / lu->block_size : 0;
		if (cmd->buf_len % lu->block_size && n == 0) {
			scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IU);
			return;
		}
		if (n == 0) {
			scsi_good(cmd);
			return;
		}
	}
	pv->lba = lba;
	pv->nblocks = n;
	pv->fua = cmd->cdb[1] & 0x08;
	if (gate_enter(cmd, GATE_CAW, orw_start))
		orw_start(cmd);
}

/* ----------------------------------------------------------- WRITE ATOMIC */

/*
 * WRITE ATOMIC(16) (SBC-4): a write that no other command on the LU observes
 * half done. It runs alone in the gate (GATE_ATOMIC: after the writes, reads
 * and COMPARE AND WRITEs admitted before it have drained; reads and writes
 * that arrive later wait until it completed). Limits in VPD B0h: MAXIMUM
 * ATOMIC TRANSFER LENGTH = SCSI_MAX_ATOMIC_BYTES, alignment and granularity 1,
 * no atomic boundary. Data-out shorter than the transfer length is rejected
 * (a partial atomic write is not atomic): nothing is written.
 */
static void atomic_gate(struct scsi_cmd *cmd)
{
	if (gate_enter(cmd, GATE_ATOMIC, write_start))
		write_start(cmd);
}

void scsi_sbc_write_atomic(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_priv *pv = cmd_priv(cmd);
	uint64_t lba = get_be64(&cmd->cdb[2]), bytes;
	uint32_t n = get_be16(&cmd->cdb[12]);

	if (cmd->cdb[1] & 0xe0) {                               /* WRPROTECT */
		scsi_fail_cdb(cmd, 1, 7);
		return;
	}
	if (get_be16(&cmd->cdb[10]) != 0) {     /* ATOMIC BOUNDARY: MAXIMUM ATOMIC BOUNDARY SIZE 0 */
		scsi_fail_cdb(cmd, 10, -1);
		return;
	}
	bytes = (uint64_t)n * lu->block_size;
	cmd->xfer_len = (uint32_t)bytes;
	if (n > SCSI_MAX_ATOMIC_BYTES / lu->block_size) {
		scsi_fail_cdb(cmd, 12, -1);
		return;
	}
	if (scsi_lu_write_protected(lu)) {
		fail_write_protected(cmd);
		return;
	}
	if (range_answered(cmd, lba, n))
		return;
	if (bytes > cmd->buf_len || !cmd->buf) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_INVALID_FIELD_IU);
		return;
	}
	pv->lba = lba;
	pv->nblocks = n;
	pv->fua = cmd->cdb[1] & 0x08;
	if (scsi_lu_cluster_lock(cmd, lba, n, atomic_gate))
		return;
	atomic_gate(cmd);
}

/* ---------------------------------------------- SYNCHRONIZE CACHE, PRE-FETCH */

static void sync_done(struct bdev_io *io)
{
	struct scsi_cmd *cmd = io->ctx;

	if (io_failed(io, true))
		return;
	scsi_good(cmd);
}

static bool range_10_16(struct scsi_cmd *cmd)
{
	uint64_t lba, n;

	if (cmd->cdb[0] & 0x80) {
		lba = get_be64(&cmd->cdb[2]);
		n = get_be32(&cmd->cdb[10]);
	} else {
		lba = get_be32(&cmd->cdb[2]);
		n = get_be16(&cmd->cdb[7]);
	}
	cmd_priv(cmd)->lba = lba;
	if (lba_out_of_range(cmd->lu, lba, n)) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return false;
	}
	return true;
}

void scsi_sbc_sync_cache(struct scsi_cmd *cmd)
{
	int rc;

	if (!range_10_16(cmd))
		return;
	rc = submit(cmd, BDEV_OP_FLUSH, 0, 0, NULL, 0, sync_done);
	if (rc < 0)
		io_error(cmd, rc, true);
}

void scsi_sbc_prefetch(struct scsi_cmd *cmd)
{
	/* Nothing is cached on purpose: GOOD (not CONDITION MET) is the answer
	 * for "the range may not fit in the cache". */
	if (range_10_16(cmd))
		scsi_good(cmd);
}

/* --------------------------------------------------------- GET LBA STATUS */

void scsi_sbc_get_lba_status(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	uint64_t lba = get_be64(&cmd->cdb[2]);
	uint32_t alloc = get_be32(&cmd->cdb[10]);
	uint32_t max_desc, nd = 0, len;
	uint64_t want;
	uint8_t *d;

	if (lba >= lu->nblocks) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE);
		return;
	}
	/* in 64 bits: an allocation length near 4 GiB must not wrap to no descriptor */
	want = alloc > 8 ? ((uint64_t)alloc - 8 + 15) / 16 : 1;
	max_desc = want > 64 ? 64 : (uint32_t)want;
	d = calloc(1, 8 + 16 * (size_t)max_desc);
	if (!d) {
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	while (nd < max_desc && lba < lu->nblocks) {
		uint8_t *e = &d[8 + 16 * nd];
		uint64_t left = lu->nblocks - lba, run = left;
		bool mapped = true;

		if (left > 0xffffffffull)
			left = run = 0xffffffffull;
		if (bdev_get_alloc_status) {
			uint64_t run_bytes = 0;
			bool m = true;

			if (bdev_get_alloc_status(lu->bdev, lba * lu->block_size,
						  left * lu->block_size, &m, &run_bytes) == 0 &&
			    run_bytes > 0) {
				mapped = m;
				/* round to whole blocks; a partial block counts as mapped */
				run = run_bytes / lu->block_size;
				if (!mapped && run == 0)
					mapped = true;
				if (run == 0)
					run = 1;
				if (run > left)
					run = left;
			}
		}
		put_be64(&e[0], lba);
		put_be32(&e[8], (uint32_t)run);
		e[12] = mapped ? 0x00 : 0x01;   /* mapped / deallocated */
		nd++;
		lba += run;
		if (!bdev_get_alloc_status)
			break;
	}
	len = 8 + 16 * nd;
	put_be32(&d[0], len - 4);
	scsi_reply(cmd, d, len, alloc);
	free(d);
}

/* ---------------------------------------------- START STOP, PREVENT, DEFECTS */

void scsi_sbc_start_stop(struct scsi_cmd *cmd)
{
	/* The medium is not removable: loading or ejecting it is not possible. */
	if (cmd->cdb[4] & 0x02) {
		scsi_fail_cdb(cmd, 4, 1);
		return;
	}
	scsi_good(cmd);
}

void scsi_sbc_prevent_allow(struct scsi_cmd *cmd)
{
	scsi_good(cmd);
}

void scsi_sbc_read_defect_data(struct scsi_cmd *cmd)
{
	uint8_t d[8];

	memset(d, 0, sizeof(d));
	if (cmd->cdb[0] == 0x37) {
		d[1] = cmd->cdb[2] & 0x1f;      /* echo REQ_PLIST/REQ_GLIST/format */
		scsi_reply(cmd, d, 4, get_be16(&cmd->cdb[7]));
	} else {
		d[1] = cmd->cdb[1] & 0x1f;
		scsi_reply(cmd, d, 8, get_be32(&cmd->cdb[6]));
	}
}
