/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File backstore: a regular file or a block device (docs/backend.md, "File
 * backstore").
 *
 * Two I/O engines, chosen per reactor thread on its first submission:
 *
 *  - io_uring: one ring per reactor thread (created lazily, thread-local),
 *    its completion eventfd registered in that reactor's epoll. SQEs are
 *    prepared by bdev_submit() and submitted once per loop iteration from a
 *    reactor_deferred ("flush"). At most RING_ENTRIES requests are in
 *    flight per ring; further requests wait, in order, in a per-thread
 *    overflow list and are issued as completions free space.
 *
 *  - worker threads, when io_uring_queue_init() fails (seccomp, old kernel)
 *    or ISERGW_NO_URING=1: a small process-wide pool doing preadv/pwritev2/
 *    fdatasync/fallocate. Completions go back to the submitting reactor
 *    with reactor_send_msg(), one message per batch.
 *
 * Callbacks always run on the submitting reactor thread, from an fd or
 * message handler, never inside bdev_submit().
 *
 * A READ with BDEV_IO_TO_PIPE is a splice from the file into the caller's
 * pipe: IORING_OP_SPLICE, which io_uring always runs on its own worker
 * threads (a page-cache miss waits there for the disk, not on the
 * reactor), or splice(2) on a pool worker. Like a read it continues when
 * short and fails with -EIO at the end of the file.
 */
#include "backend/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "common/rawsys.h"
#include "common/reactor.h"

#define FILE_COMP "bdev-file"

#define RING_ENTRIES      256u  /* SQ size, also the in-flight limit per ring */
#define POOL_MIN_WORKERS  2
#define POOL_MAX_WORKERS  16
#define ZERO_BUF_SIZE     (64u * 1024)
#define SUBMIT_RETRY_MS   1
#define IO_SINGLE_MAX     (1u << 30)

struct file_bdev {
	struct bdev bdev;
	int fd;
	bool is_blkdev;
	atomic_bool no_zero_range;      /* FALLOC_FL_ZERO_RANGE unsupported: write zero buffers */
	pthread_mutex_t lock;           /* the listener, a resize */
	struct bdev_listener listener;
};

static const struct bdev_ops file_ops;

static struct file_bdev *to_file(struct bdev *b)
{
	return container_of(b, struct file_bdev, bdev);
}

static const char *op_name(enum bdev_op op)
{
	switch (op) {
	case BDEV_OP_READ: return "read";
	case BDEV_OP_WRITE: return "write";
	case BDEV_OP_FLUSH: return "flush";
	case BDEV_OP_UNMAP: return "unmap";
	case BDEV_OP_WRITE_ZEROES: return "write-zeroes";
	}
	return "?";
}

static void log_io_error(const struct bdev_io *io, int err)
{
	GW_ERR(FILE_COMP, "%s: %s offset %" PRIu64 " len %" PRIu64 " failed: %s", io->bdev->name,
	       op_name(io->op), io->offset, io->len, strerror(-err));
}

/*
 * The part of a READ/WRITE still to do, from io->done_bytes on. When that
 * point falls inside an iovec, the rest of that one segment is returned as
 * *single (a plain read/write); otherwise the caller's array from the next
 * whole segment on. The caller's iovecs are never modified.
 */
struct io_rest {
	struct iovec *iov;
	int iovcnt;
	struct iovec single;
	bool is_single;
};

static void io_rest(const struct bdev_io *io, struct io_rest *r)
{
	uint64_t skip = io->done_bytes;
	int i = 0;

	while (i < io->iovcnt && skip >= io->iov[i].iov_len) {
		skip -= io->iov[i].iov_len;
		i++;
	}
	r->is_single = skip != 0;
	if (r->is_single) {
		r->single.iov_base = (char *)io->iov[i].iov_base + skip;
		r->single.iov_len = io->iov[i].iov_len - skip;
		if (r->single.iov_len > IO_SINGLE_MAX)
			r->single.iov_len = IO_SINGLE_MAX; /* the rest is another round */
		r->iov = &r->single;
		r->iovcnt = 1;
	} else {
		r->iov = &io->iov[i];
		r->iovcnt = io->iovcnt - i;
	}
}

/* ------------------------------------------------------------------------ */
/* engine selection, logged once                                            */

static atomic_bool g_engine_logged;

static bool uring_disabled_by_env(void)
{
	const char *e = getenv("ISERGW_NO_URING");

	return e && strcmp(e, "0") != 0 && e[0] != '\0';
}

/* ------------------------------------------------------------------------ */
/* per-thread state                                                         */

struct fb_job;

struct io_thread {
	struct reactor *reactor;
	/* io_uring engine */
	bool use_uring;
	bool uring_splice;              /* the ring has IORING_OP_SPLICE */
	struct io_uring ring;
	int efd;
	struct reactor_fd efd_handler;
	struct reactor_deferred flush;
	struct reactor_timer retry;
	unsigned int inflight;          /* SQEs prepared or submitted, CQE not reaped */
	unsigned int unsubmitted;       /* SQEs prepared, not yet submitted */
	struct bdev_io *ovf_head;       /* waiting for ring space; linked by io->priv */
	struct bdev_io *ovf_tail;
	/* worker-thread completions coming back (both engines use the pool) */
	pthread_mutex_t cmpl_lock;
	struct fb_job *cmpl_head;
	struct fb_job *cmpl_tail;
	bool cmpl_msg_pending;
	atomic_uint pool_inflight;
};

static _Thread_local struct io_thread *tl_io;
static pthread_key_t g_io_key;
static pthread_once_t g_io_key_once = PTHREAD_ONCE_INIT;

static void io_thread_free(struct io_thread *t)
{
	if (t->use_uring) {
		/* closing the eventfd takes it out of the reactor's epoll set */
		io_uring_queue_exit(&t->ring);
		close(t->efd);
	}
	pthread_mutex_destroy(&t->cmpl_lock);
	free(t);
}

/* Thread exit: stop using the reactor (it may be gone already), drop the ring. */
static void io_thread_destructor(void *arg)
{
	struct io_thread *t = arg;

	if (t->inflight || atomic_load(&t->pool_inflight)) {
		GW_ERR(FILE_COMP, "reactor thread exits with %u+%u I/Os in flight: leaking its state",
		       t->inflight, atomic_load(&t->pool_inflight));
		return;
	}
	io_thread_free(t);
}

static void io_key_create(void)
{
	if (pthread_key_create(&g_io_key, io_thread_destructor))
		GW_ERR(FILE_COMP, "pthread_key_create failed: rings are not freed at thread exit");
}

static void uring_flush(void *arg);
static void uring_retry(void *arg);
static void uring_efd_cb(void *arg, uint32_t events);

static int uring_setup(struct io_thread *t)
{
	static const int needed_ops[] = { IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_READ,
					  IORING_OP_WRITE, IORING_OP_FSYNC, IORING_OP_FALLOCATE };
	struct io_uring_probe *probe;
	int rc;

	rc = io_uring_queue_init(RING_ENTRIES, &t->ring,
				 IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER |
				 IORING_SETUP_CLAMP);
	if (rc == -EINVAL) /* kernel older than 6.0: no SINGLE_ISSUER / SUBMIT_ALL */
		rc = io_uring_queue_init(RING_ENTRIES, &t->ring, IORING_SETUP_CLAMP);
	if (rc)
		return rc;

	probe = io_uring_get_probe_ring(&t->ring);
	if (!probe) {
		rc = -ENOSYS;
		goto err_exit_ring;
	}
	for (size_t i = 0; i < sizeof(needed_ops) / sizeof(needed_ops[0]); i++) {
		if (!io_uring_opcode_supported(probe, needed_ops[i])) {
			rc = -EOPNOTSUPP;
			break;
		}
	}
	t->uring_splice = io_uring_opcode_supported(probe, IORING_OP_SPLICE);
	io_uring_free_probe(probe);
	if (rc)
		goto err_exit_ring;

	t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (t->efd < 0) {
		rc = -errno;
		goto err_exit_ring;
	}
	rc = io_uring_register_eventfd(&t->ring, t->efd);
	if (rc)
		goto err_close_efd;
	rc = reactor_add_fd(t->reactor, &t->efd_handler, t->efd, EPOLLIN, uring_efd_cb, t);
	if (rc)
		goto err_close_efd;
	reactor_deferred_init(&t->flush, uring_flush, t);
	reactor_timer_init(&t->retry, uring_retry, t);
	return 0;

err_close_efd:
	close(t->efd);
err_exit_ring:
	io_uring_queue_exit(&t->ring);
	return rc;
}

static struct io_thread *io_thread_get(void)
{
	struct reactor *r = reactor_self();
	struct io_thread *t = tl_io;
	int rc;

	if (!r)
		return NULL;
	if (t && t->reactor == r)
		return t;
	if (t) {
		/* this thread now runs another reactor: start over if idle */
		if (t->inflight || atomic_load(&t->pool_inflight) || t->ovf_head)
			return NULL;
		pthread_setspecific(g_io_key, NULL);
		io_thread_free(t);
		tl_io = NULL;
	}

	pthread_once(&g_io_key_once, io_key_create);
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->reactor = r;
	t->efd = -1;
	pthread_mutex_init(&t->cmpl_lock, NULL);

	if (uring_disabled_by_env()) {
		if (!atomic_exchange(&g_engine_logged, true))
			GW_NOTICE(FILE_COMP, "I/O engine: worker threads (ISERGW_NO_URING is set)");
	} else {
		rc = uring_setup(t);
		if (rc == 0) {
			t->use_uring = true;
			if (!atomic_exchange(&g_engine_logged, true))
				GW_NOTICE(FILE_COMP, "I/O engine: io_uring (%u entries per reactor)",
					  RING_ENTRIES);
		} else if (!atomic_exchange(&g_engine_logged, true)) {
			GW_NOTICE(FILE_COMP, "I/O engine: worker threads (io_uring unavailable: %s)",
				  strerror(-rc));
		}
	}
	pthread_setspecific(g_io_key, t);
	tl_io = t;
	return t;
}

/* ------------------------------------------------------------------------ */
/* worker pool                                                              */

struct fb_job {
	struct bdev_io *io;
	struct io_thread *owner;
	int result;
	struct fb_job *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fb_job *head, *tail;
	unsigned int nworkers;
	unsigned int idle;
	unsigned int max_workers;
} g_pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/* Never written: source of WRITE_ZEROES emulation. */
static char g_zero_buf[ZERO_BUF_SIZE];

/* BDEV_IO_TO_PIPE on a worker: splice(2) may wait for the disk here */
static int sync_splice(struct bdev_io *io, int fd)
{
	while (io->done_bytes < io->len) {
		loff_t off = (loff_t)(io->offset + io->done_bytes);
		ssize_t n = splice(fd, &off, io->pipe_fd, NULL, io->len - io->done_bytes, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO; /* EOF: short read */
		io->done_bytes += (uint64_t)n;
	}
	return 0;
}

static int sync_rw(struct bdev_io *io, int fd)
{
	if (io->flags & BDEV_IO_TO_PIPE)
		return sync_splice(io, fd);
	while (io->done_bytes < io->len) {
		struct io_rest rest;
		uint64_t off = io->offset + io->done_bytes;
		int cnt;
		ssize_t n;

		io_rest(io, &rest);
		cnt = rest.iovcnt > IOV_MAX ? IOV_MAX : rest.iovcnt;
		if (io->op == BDEV_OP_READ)
			n = preadv(fd, rest.iov, cnt, (off_t)off);
		else
			n = pwritev2(fd, rest.iov, cnt, (off_t)off,
				     (io->flags & BDEV_IO_FUA) ? RWF_DSYNC : 0);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO; /* EOF: short read/write */
		io->done_bytes += (uint64_t)n;
	}
	return 0;
}

static int sync_write_zero_buffers(struct bdev_io *io, int fd)
{
	struct iovec iov[16];
	uint64_t done = 0;

	for (size_t i = 0; i < sizeof(iov) / sizeof(iov[0]); i++) {
		iov[i].iov_base = g_zero_buf;
		iov[i].iov_len = sizeof(g_zero_buf);
	}
	while (done < io->len) {
		uint64_t left = io->len - done;
		int cnt = 0;
		ssize_t n;

		while (cnt < 16 && left) {
			size_t l = left > sizeof(g_zero_buf) ? sizeof(g_zero_buf) : (size_t)left;

			iov[cnt++].iov_len = l;
			left -= l;
		}
		n = pwritev(fd, iov, cnt, (off_t)(io->offset + done));
		for (int i = 0; i < cnt; i++)
			iov[i].iov_len = sizeof(g_zero_buf);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		done += (uint64_t)n;
	}
	return 0;
}

static int sync_fallocate(int fd, int mode, uint64_t off, uint64_t len)
{
	int rc;

	do {
		rc = fallocate(fd, mode, (off_t)off, (off_t)len);
	} while (rc < 0 && errno == EINTR);
	return rc < 0 ? -errno : 0;
}

static int sync_do(struct bdev_io *io)
{
	struct file_bdev *f = to_file(io->bdev);
	int rc;

	switch (io->op) {
	case BDEV_OP_READ:
	case BDEV_OP_WRITE:
		return sync_rw(io, f->fd);
	case BDEV_OP_FLUSH:
		do {
			rc = fdatasync(f->fd);
		} while (rc < 0 && errno == EINTR);
		return rc < 0 ? -errno : 0;
	case BDEV_OP_UNMAP:
		return sync_fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, io->offset,
				      io->len);
	case BDEV_OP_WRITE_ZEROES:
		if (!atomic_load(&f->no_zero_range)) {
			rc = sync_fallocate(f->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
					    io->offset, io->len);
			if (rc != -EOPNOTSUPP)
				return rc;
			atomic_store(&f->no_zero_range, true); /* e.g. tmpfs */
		}
		return sync_write_zero_buffers(io, f->fd);
	}
	return -EINVAL;
}

static void pool_drain(void *arg);

/* Worker side: hand a finished job back to its reactor, one message per batch. */
static void pool_complete(struct fb_job *job)
{
	struct io_thread *t = job->owner;
	bool send;

	job->next = NULL;
	pthread_mutex_lock(&t->cmpl_lock);
	if (t->cmpl_tail)
		t->cmpl_tail->next = job;
	else
		t->cmpl_head = job;
	t->cmpl_tail = job;
	send = !t->cmpl_msg_pending;
	t->cmpl_msg_pending = true;
	pthread_mutex_unlock(&t->cmpl_lock);
	if (!send)
		return;
	for (unsigned int tries = 0; reactor_send_msg(t->reactor, pool_drain, t); tries++) {
		if (tries == 0)
			GW_ERR(FILE_COMP, "cannot send a completion to reactor %u: retrying",
			       reactor_index(t->reactor));
		usleep(1000);
	}
}

static void *pool_worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "gw-file-io");
	pthread_mutex_lock(&g_pool.lock);
	for (;;) {
		struct fb_job *job;

		while (!g_pool.head) {
			g_pool.idle++;
			pthread_cond_wait(&g_pool.cond, &g_pool.lock);
			g_pool.idle--;
		}
		job = g_pool.head;
		g_pool.head = job->next;
		if (!g_pool.head)
			g_pool.tail = NULL;
		pthread_mutex_unlock(&g_pool.lock);

		job->result = sync_do(job->io);
		pool_complete(job);

		pthread_mutex_lock(&g_pool.lock);
	}
	return NULL;
}

/* Called with g_pool.lock held: start a worker unless one is idle. Workers block all signals. */
static void pool_maybe_spawn(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t tid;

	if (!g_pool.max_workers) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		g_pool.max_workers = ncpu < POOL_MIN_WORKERS ? POOL_MIN_WORKERS
				   : ncpu > POOL_MAX_WORKERS ? POOL_MAX_WORKERS : (unsigned int)ncpu;
	}
	if (g_pool.idle || g_pool.nworkers >= g_pool.max_workers)
		return;
	if (pthread_attr_init(&attr))
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&tid, &attr, pool_worker, NULL) == 0)
		g_pool.nworkers++;
	else if (!g_pool.nworkers)
		GW_ERR(FILE_COMP, "cannot start an I/O worker thread");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

static int pool_submit(struct io_thread *t, struct bdev_io *io)
{
	struct fb_job *job = malloc(sizeof(*job));

	if (!job)
		return -ENOMEM;
	job->io = io;
	job->owner = t;
	job->result = 0;
	job->next = NULL;
	atomic_fetch_add(&t->pool_inflight, 1);
	pthread_mutex_lock(&g_pool.lock);
	pool_maybe_spawn();
	if (!g_pool.nworkers) {
		pthread_mutex_unlock(&g_pool.lock);
		atomic_fetch_sub(&t->pool_inflight, 1);
		free(job);
		return -EAGAIN;
	}
	if (g_pool.tail)
		g_pool.tail->next = job;
	else
		g_pool.head = job;
	g_pool.tail = job;
	pthread_cond_signal(&g_pool.cond);
	pthread_mutex_unlock(&g_pool.lock);
	return 0;
}

/* Reactor side: run the callbacks of finished jobs. */
static void pool_drain(void *arg)
{
	struct io_thread *t = arg;
	struct fb_job *job, *next;

	pthread_mutex_lock(&t->cmpl_lock);
	job = t->cmpl_head;
	t->cmpl_head = t->cmpl_tail = NULL;
	t->cmpl_msg_pending = false;
	pthread_mutex_unlock(&t->cmpl_lock);
	for (; job; job = next) {
		struct bdev_io *io = job->io;

		next = job->next;
		io->result = job->result;
		free(job);
		atomic_fetch_sub(&t->pool_inflight, 1);
		if (io->result)
			log_io_error(io, io->result);
		io->cb(io);
	}
}

/* ------------------------------------------------------------------------ */
/* io_uring engine                                                          */

static void uring_flush(void *arg)
{
	struct io_thread *t = arg;
	int rc;

	if (!t->unsubmitted)
		return;
	rc = io_uring_submit(&t->ring);
	if (rc >= 0) {
		t->unsubmitted -= (unsigned int)rc > t->unsubmitted ? t->unsubmitted : (unsigned int)rc;
		if (!t->unsubmitted)
			return;
	} else if (rc != -EAGAIN && rc != -EBUSY && rc != -EINTR) {
		GW_ERR(FILE_COMP, "io_uring_submit: %s: retrying", strerror(-rc));
	}
	/* the kernel took less than everything: try again shortly */
	reactor_timer_arm(t->reactor, &t->retry, SUBMIT_RETRY_MS);
}

static void uring_retry(void *arg)
{
	uring_flush(arg);
}

static void uring_prep(struct io_thread *t, struct bdev_io *io)
{
	struct file_bdev *f = to_file(io->bdev);
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
	uint64_t off = io->offset + io->done_bytes;
	bool wr = io->op == BDEV_OP_WRITE;
	struct io_rest rest;

	if (!sqe) {
		/* cannot happen while inflight < RING_ENTRIES; be safe anyway */
		io_uring_submit(&t->ring);
		sqe = io_uring_get_sqe(&t->ring);
		if (!sqe) {
			GW_ERR(FILE_COMP, "io_uring: no SQE despite free slots");
			abort();
		}
	}
	switch (io->op) {
	case BDEV_OP_READ:
	case BDEV_OP_WRITE:
		if (io->flags & BDEV_IO_TO_PIPE) {
			io_uring_prep_splice(sqe, f->fd, (int64_t)off, io->pipe_fd, -1,
					     (unsigned int)(io->len - io->done_bytes), 0);
			break;
		}
		io_rest(io, &rest);
		if (rest.is_single)
			io_uring_prep_rw(wr ? IORING_OP_WRITE : IORING_OP_READ, sqe, f->fd,
					 rest.single.iov_base, (unsigned int)rest.single.iov_len, off);
		else
			io_uring_prep_rw(wr ? IORING_OP_WRITEV : IORING_OP_READV, sqe, f->fd, rest.iov,
					 (unsigned int)(rest.iovcnt > IOV_MAX ? IOV_MAX : rest.iovcnt),
					 off);
		if (wr && (io->flags & BDEV_IO_FUA))
			sqe->rw_flags = RWF_DSYNC;
		break;
	case BDEV_OP_FLUSH:
		io_uring_prep_fsync(sqe, f->fd, IORING_FSYNC_DATASYNC);
		break;
	case BDEV_OP_UNMAP:
		io_uring_prep_fallocate(sqe, f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					(off_t)io->offset, (off_t)io->len);
		break;
	case BDEV_OP_WRITE_ZEROES:
		io_uring_prep_fallocate(sqe, f->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
					(off_t)io->offset, (off_t)io->len);
		break;
	}
	io_uring_sqe_set_data(sqe, io);
	t->inflight++;
	t->unsubmitted++;
	reactor_defer(t->reactor, &t->flush);
}

static void ovf_push(struct io_thread *t, struct bdev_io *io)
{
	io->priv = NULL;
	if (t->ovf_tail)
		t->ovf_tail->priv = io;
	else
		t->ovf_head = io;
	t->ovf_tail = io;
}

/* Issue now if there is room and nobody is waiting ahead; else queue. */
static void uring_issue(struct io_thread *t, struct bdev_io *io)
{
	if (t->ovf_head || t->inflight >= RING_ENTRIES) {
		if (!t->ovf_head)
			GW_DEBUG(FILE_COMP, "reactor %u: ring full (%u in flight): queueing",
				 reactor_index(t->reactor), t->inflight);
		ovf_push(t, io);
	} else {
		uring_prep(t, io);
	}
}

static void uring_issue_overflow(struct io_thread *t)
{
	while (t->ovf_head && t->inflight < RING_ENTRIES) {
		struct bdev_io *io = t->ovf_head;

		t->ovf_head = io->priv;
		if (!t->ovf_head)
			t->ovf_tail = NULL;
		io->priv = NULL;
		uring_prep(t, io);
	}
}

static void uring_done(struct bdev_io *io, int rc)
{
	io->result = rc;
	if (rc)
		log_io_error(io, rc);
	io->cb(io);
}

/* One CQE. Returns with io either completed or issued again. */
static void uring_handle(struct io_thread *t, struct bdev_io *io, int res)
{
	if (res == -EINTR || res == -EAGAIN) {
		uring_issue(t, io);
		return;
	}
	switch (io->op) {
	case BDEV_OP_READ:
	case BDEV_OP_WRITE:
		if (res < 0) {
			uring_done(io, res);
			return;
		}
		if (res == 0) {
			uring_done(io, -EIO); /* EOF: short read / write */
			return;
		}
		io->done_bytes += (uint64_t)res;
		if (io->done_bytes < io->len) {
			uring_issue(t, io); /* continue the short transfer */
			return;
		}
		uring_done(io, 0);
		return;
	case BDEV_OP_WRITE_ZEROES:
		if (res == -EOPNOTSUPP) {
			/* no ZERO_RANGE here (tmpfs, ...): a worker writes zero buffers */
			int rc;

			atomic_store(&to_file(io->bdev)->no_zero_range, true);
			rc = pool_submit(t, io);
			if (rc)
				uring_done(io, rc);
			return;
		}
		uring_done(io, res < 0 ? res : 0);
		return;
	case BDEV_OP_FLUSH:
	case BDEV_OP_UNMAP:
		uring_done(io, res < 0 ? res : 0);
		return;
	}
	uring_done(io, -EINVAL);
}

static void uring_reap(struct io_thread *t)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&t->ring, &cqe) == 0) {
		struct bdev_io *io = io_uring_cqe_get_data(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(&t->ring, cqe);
		t->inflight--;
		uring_handle(t, io, res);
		uring_issue_overflow(t);
	}
	uring_issue_overflow(t);
}

static void uring_efd_cb(void *arg, uint32_t events)
{
	struct io_thread *t = arg;
	uint64_t v;

	(void)events;
	/* read first: a CQE posted after this read signals the eventfd again */
	if (gw_sys_read(t->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		GW_WARN(FILE_COMP, "eventfd read: %s", strerror(errno));
	uring_reap(t);
}

/* ------------------------------------------------------------------------ */
/* bdev ops                                                                 */

static int file_submit(struct bdev *b, struct bdev_io *io)
{
	struct io_thread *t;
	uint64_t end;

	if (!io->cb)
		return -EINVAL;
	io->result = 0;
	io->priv = NULL;
	switch (io->op) {
	case BDEV_OP_READ:
	case BDEV_OP_WRITE: {
		uint64_t total = 0;

		if (io->flags & BDEV_IO_TO_PIPE) {
			if (io->op != BDEV_OP_READ || io->len == 0 || io->len > UINT_MAX ||
			    io->pipe_fd < 0)
				return -EINVAL;
			break;
		}
		if (io->iovcnt <= 0 || io->iovcnt > IOV_MAX || !io->iov || io->len == 0)
			return -EINVAL;
		for (int i = 0; i < io->iovcnt; i++)
			total += io->iov[i].iov_len;
		if (total != io->len)
			return -EINVAL;
		break;
	}
	case BDEV_OP_FLUSH:
		break;
	case BDEV_OP_UNMAP:
	case BDEV_OP_WRITE_ZEROES:
		if (io->len == 0)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (io->op != BDEV_OP_READ && io->op != BDEV_OP_FLUSH) {
		if (b->info.readonly)
			return -EROFS;
		/* never grow the file; reads past the end fail as short reads (-EIO) */
		if (__builtin_add_overflow(io->offset, io->len, &end) || end > b->info.size_bytes)
			return -EINVAL;
	}

	t = io_thread_get();
	if (!t)
		return reactor_self() ? -ENOMEM : -EINVAL; /* must run on a reactor thread */
	if (!t->use_uring ||
	    (io->op == BDEV_OP_WRITE_ZEROES && atomic_load(&to_file(b)->no_zero_range)) ||
	    ((io->flags & BDEV_IO_TO_PIPE) && !t->uring_splice))
		return pool_submit(t, io);
	uring_issue(t, io);
	return 0;
}

static void file_close(struct bdev *b)
{
	struct file_bdev *f = to_file(b);

	close(f->fd);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

static void file_set_listener(struct bdev *b, bdev_listener_fn fn, void *arg)
{
	struct file_bdev *f = to_file(b);

	pthread_mutex_lock(&f->lock);
	bdev_listener_set(&f->listener, b, fn, arg);
	pthread_mutex_unlock(&f->lock);
}

/*
 * A larger size (the configuration's, on a reload): a regular file is
 * extended (sparse) to it, never shortened; a block device's own size is read
 * again (grown underneath, e.g. lvextend), the size asked is not used. The
 * new size, rounded down to whole blocks, is announced to the listener when
 * it grew; I/O goes on meanwhile (the submit path reads size_bytes once per
 * command).
 */
static int file_grow(struct bdev *b, uint64_t size, bool *grown)
{
	struct file_bdev *f = to_file(b);
	uint32_t bs = b->info.block_size;
	uint64_t now, old;
	struct stat st;
	int rc = 0;

	*grown = false;
	pthread_mutex_lock(&f->lock);
	old = b->info.size_bytes;
	if (f->is_blkdev) {
		if (ioctl(f->fd, BLKGETSIZE64, &now) < 0) {
			rc = -errno;
			goto out;
		}
	} else {
		if (fstat(f->fd, &st) < 0) {
			rc = -errno;
			goto out;
		}
		now = (uint64_t)st.st_size;
		if (size > now) {
			if (b->info.readonly) {
				rc = -EROFS;
				goto out;
			}
			if (size > (uint64_t)INT64_MAX || ftruncate(f->fd, (off_t)size) < 0) {
				rc = size > (uint64_t)INT64_MAX ? -EFBIG : -errno;
				goto out;
			}
			now = size;
		}
	}
	now -= now % bs;
	if (now > old) {
		__atomic_store_n(&b->info.size_bytes, now, __ATOMIC_RELEASE);
		*grown = true;
		GW_NOTICE(FILE_COMP, "%s: grown from %" PRIu64 " to %" PRIu64 " bytes", b->name, old,
			  now);
		bdev_listener_call(&f->listener, b);
	}
out:
	pthread_mutex_unlock(&f->lock);
	if (rc)
		GW_ERR(FILE_COMP, "%s: cannot grow to %" PRIu64 " bytes: %s", b->name, size,
		       strerror(-rc));
	return rc;
}

static const struct bdev_ops file_ops = {
	.name = "file",
	.submit = file_submit,
	.close = file_close,
	.set_listener = file_set_listener,
	.grow = file_grow,
};

/*
 * GET LBA STATUS support (declared weak in scsi/scsi_bdev_ext.h, which says
 * what it must do): SEEK_DATA/SEEK_HOLE on files; block devices report
 * "mapped". The file offset that lseek() moves is never used by our I/O.
 */
int bdev_get_alloc_status(struct bdev *b, uint64_t offset, uint64_t len, bool *mapped,
			  uint64_t *run_len);

int bdev_get_alloc_status(struct bdev *b, uint64_t offset, uint64_t len, bool *mapped,
			  uint64_t *run_len)
{
	struct file_bdev *f;
	off_t data, hole;

	if (!b || b->ops != &file_ops)
		return -EOPNOTSUPP;
	if (len == 0 || offset >= b->info.size_bytes)
		return -EINVAL;
	f = to_file(b);
	*mapped = true;
	*run_len = len;
	if (f->is_blkdev)
		return 0;
	data = lseek(f->fd, (off_t)offset, SEEK_DATA);
	if (data < 0) {
		if (errno != ENXIO)
			return -errno;
		*mapped = false; /* a hole up to the end of the file */
		return 0;
	}
	if ((uint64_t)data > offset) {
		*mapped = false;
		if ((uint64_t)data - offset < len)
			*run_len = (uint64_t)data - offset;
		return 0;
	}
	hole = lseek(f->fd, (off_t)offset, SEEK_HOLE);
	if (hole < 0)
		return -errno;
	if ((uint64_t)hole > offset && (uint64_t)hole - offset < len)
		*run_len = (uint64_t)hole - offset;
	return 0;
}

void bdev_close(struct bdev *b)
{
	if (b)
		b->ops->close(b);
}

/* ------------------------------------------------------------------------ */
/* open                                                                     */

static int read_u64_file(const char *path, uint64_t *out)
{
	unsigned long long v;
	char buf[32], *end;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	*out = v;
	return 0;
}

/* /sys/dev/block/MAJ:MIN/queue/<attr>, or the whole disk's for a partition. */
static int sysfs_queue_u64(dev_t dev, const char *attr, uint64_t *out)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s", major(dev), minor(dev), attr);
	if (read_u64_file(path, out) == 0)
		return 0;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/%s", major(dev), minor(dev), attr);
	return read_u64_file(path, out);
}

/*
 * Does PUNCH_HOLE work on this file? Probe on one block beyond the end of the
 * file with KEEP_SIZE: no data lives there and the size does not change, so
 * nothing is ever lost. (fallocate() rejects len 0 before asking the file
 * system, so a zero-length probe would tell nothing.)
 */
static bool probe_punch_hole(int fd, uint64_t size, uint32_t bs)
{
	uint64_t off = (size + bs - 1) / bs * bs;

	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, bs) == 0;
}

/*
 * A missing file is made whole under a temporary name beside it (created,
 * sized), then linked to its name, which fails if another node got there
 * first: then theirs is opened. So a file of the name is always full size.
 * Gateway nodes given the same LUN on a shared directory create it at the
 * same moment; with O_CREAT on the name itself one of them could open the
 * other's file between its creation and its ftruncate, see 0 bytes and
 * refuse the LUN. link() is atomic on local file systems and on NFS.
 */
static int create_whole(const struct bdev_file_params *p, int flags, bool *created)
{
	char tmp[PATH_MAX];
	unsigned int r;
	int fd, rc;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (unsigned int)getpid() ^ (unsigned int)time(NULL);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.new-%d-%08x", p->path, (int)getpid(), r) >=
	    sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, flags | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)p->create_size) < 0) {
		rc = -errno;
		GW_ERR(FILE_COMP, "%s: cannot size new file to %" PRIu64 ": %s", p->path,
		       p->create_size, strerror(-rc));
		goto err;
	}
	if (link(tmp, p->path) < 0) {
		rc = -errno;
		if (rc != -EEXIST)
			goto err;
		/* somebody else created it meanwhile, whole: theirs */
		close(fd);
		unlink(tmp);
		fd = open(p->path, flags);
		return fd < 0 ? -errno : fd;
	}
	unlink(tmp);
	*created = true;
	return fd;
err:
	close(fd);
	unlink(tmp);
	return rc;
}

static int open_or_create(const struct bdev_file_params *p, int flags, bool *created)
{
	int fd;

	*created = false;
	fd = open(p->path, flags);
	if (fd >= 0 || errno != ENOENT || p->create_size == 0 || p->readonly)
		return fd < 0 ? -errno : fd;
	return create_whole(p, flags, created);
}

/* Why an open failed: into the caller's buffer when it has one, otherwise logged. */
static void open_fail(const struct bdev_file_params *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void open_fail(const struct bdev_file_params *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "%s", msg);
	else
		GW_ERR(FILE_COMP, "%s", msg);
}

int bdev_file_open(const struct bdev_file_params *p, struct bdev **out)
{
	struct file_bdev *f;
	struct stat st;
	uint32_t bs;
	bool created;
	int rc, fd;

	if (!p || !p->path || !p->path[0] || !out)
		return -EINVAL;
	*out = NULL;
	bs = p->block_size ? p->block_size : 512;
	if (bs < 512 || (bs & (bs - 1))) {
		open_fail(p, "%s: block size %u is not a power of two >= 512", p->path, bs);
		return -EINVAL;
	}
	if (p->create_size % bs) {
		open_fail(p, "%s: size %" PRIu64 " to create is not a multiple of block size %u",
		       p->path, p->create_size, bs);
		return -EINVAL;
	}

	fd = open_or_create(p, (p->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC, &created);
	if (fd < 0) {
		rc = fd;
		open_fail(p, "%s: cannot open%s: %s", p->path,
		       rc == -ENOENT && !p->create_size ? " (no size given to create it)" : "",
		       strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		open_fail(p, "%s: fstat: %s", p->path, strerror(-rc));
		goto err_close;
	}
	if (created)
		GW_NOTICE(FILE_COMP, "%s: created sparse file of %" PRIu64 " bytes", p->path,
			  p->create_size);

	f = calloc(1, sizeof(*f));
	if (!f) {
		rc = -ENOMEM;
		goto err_close;
	}
	f->fd = fd;
	pthread_mutex_init(&f->lock, NULL);
	f->bdev.ops = &file_ops;
	f->bdev.priv = f;
	snprintf(f->bdev.name, sizeof(f->bdev.name), "%s", p->path);
	f->bdev.info.readonly = p->readonly;

	if (S_ISBLK(st.st_mode)) {
		uint64_t bytes, v;
		int ssz;

		f->is_blkdev = true;
		if (ioctl(fd, BLKGETSIZE64, &bytes) < 0 || ioctl(fd, BLKSSZGET, &ssz) < 0) {
			rc = -errno;
			open_fail(p, "%s: block device size: %s", p->path, strerror(-rc));
			goto err_free;
		}
		if (p->block_size && (uint32_t)ssz != p->block_size)
			GW_NOTICE(FILE_COMP, "%s: using the device's logical block size %d, not %u",
				  p->path, ssz, p->block_size);
		bs = (uint32_t)ssz;
		f->bdev.info.size_bytes = bytes;
		f->bdev.info.rotational =
			sysfs_queue_u64(st.st_rdev, "rotational", &v) == 0 && v != 0;
		/* PUNCH_HOLE on a block device is a write-zeroes that may unmap */
		f->bdev.info.unmap_supported = !p->readonly &&
			sysfs_queue_u64(st.st_rdev, "write_zeroes_max_bytes", &v) == 0 && v != 0;
	} else if (S_ISREG(st.st_mode)) {
		f->bdev.info.size_bytes = (uint64_t)st.st_size;
		f->bdev.info.rotational = false;
		f->bdev.info.unmap_supported = !p->readonly && probe_punch_hole(fd, (uint64_t)st.st_size, bs);
	} else {
		rc = -EINVAL;
		open_fail(p, "%s: not a regular file or block device", p->path);
		goto err_free;
	}
	f->bdev.info.block_size = bs;
	f->bdev.info.splice_read = true;
	if (f->is_blkdev) {
		uint64_t rdev = (uint64_t)st.st_rdev;

		f->bdev.id.kind = BDEV_ID_BLOCK;
		f->bdev.id.len = sizeof(rdev);
		memcpy(f->bdev.id.bytes, &rdev, sizeof(rdev));
	} else {
		uint64_t ident[2] = { (uint64_t)st.st_dev, (uint64_t)st.st_ino };

		f->bdev.id.kind = BDEV_ID_FILE;
		f->bdev.id.len = sizeof(ident);
		memcpy(f->bdev.id.bytes, ident, sizeof(ident));
	}
	if (f->bdev.info.size_bytes == 0 || f->bdev.info.size_bytes % bs) {
		rc = -EINVAL;
		open_fail(p, "%s: size %" PRIu64 " is not a non-zero multiple of block size %u",
		       p->path, f->bdev.info.size_bytes, bs);
		goto err_free;
	}
	GW_INFO(FILE_COMP, "%s: %" PRIu64 " bytes, %u-byte blocks%s%s%s", p->path,
		f->bdev.info.size_bytes, bs, f->is_blkdev ? ", block device" : "",
		f->bdev.info.readonly ? ", read-only" : "",
		f->bdev.info.unmap_supported ? ", unmap" : "");
	*out = &f->bdev;
	return 0;

err_free:
	pthread_mutex_destroy(&f->lock);
	free(f);
err_close:
	close(fd);
	return rc;
}
