// LINK: gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for backend/file.c, run twice: with the io_uring engine and with
 * the worker-thread engine (ISERGW_NO_URING=1). Each test runs a reactor on
 * its own thread and submits from that thread with reactor_send_msg().
 * ISERGW_TEST_LOOP=1 adds a block-device test on a loop device (needs root).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "scsi/scsi_bdev_ext.h"
#include "common/log.h"
#include "common/reactor.h"

#define MiB (1024u * 1024u)
#define TMPFS_MAGIC_NR 0x01021994

struct harness {
	struct reactor *r;
	pthread_t tid;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t completed;
	bool in_submit;         /* reactor thread only */
	bool cb_in_submit;
	bool cb_wrong_thread;
	char dir[64];
	char path[128];
};

static void *reactor_main(void *arg)
{
	struct harness *h = arg;

	reactor_run(h->r);
	return NULL;
}

static int setup(void **state)
{
	struct harness *h = calloc(1, sizeof(*h));

	if (!h)
		return -1;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	snprintf(h->dir, sizeof(h->dir), "/tmp/test_bdev_XXXXXX");
	if (!mkdtemp(h->dir))
		return -1;
	snprintf(h->path, sizeof(h->path), "%s/disk.img", h->dir);
	if (reactor_create(0, &h->r))
		return -1;
	if (pthread_create(&h->tid, NULL, reactor_main, h))
		return -1;
	*state = h;
	return 0;
}

static int teardown(void **state)
{
	struct harness *h = *state;
	char cmd[400];
	DIR *d;
	struct dirent *de;

	reactor_stop(h->r);
	pthread_join(h->tid, NULL);
	reactor_destroy(h->r);
	d = opendir(h->dir);
	if (d) {
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(cmd, sizeof(cmd), "%s/%s", h->dir, de->d_name);
			unlink(cmd);
		}
		closedir(d);
	}
	rmdir(h->dir);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->cond);
	free(h);
	return 0;
}

static void io_cb(struct bdev_io *io)
{
	struct harness *h = io->ctx;

	if (!pthread_equal(pthread_self(), h->tid))
		h->cb_wrong_thread = true;
	if (h->in_submit)
		h->cb_in_submit = true;
	pthread_mutex_lock(&h->lock);
	h->completed++;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

struct batch {
	struct harness *h;
	struct bdev *b;
	struct bdev_io **ios;
	int *sync_rc;
	size_t n;
};

static void submit_batch(void *arg)
{
	struct batch *bt = arg;
	struct harness *h = bt->h;
	size_t failed = 0;

	h->in_submit = true;
	for (size_t i = 0; i < bt->n; i++) {
		bt->sync_rc[i] = bdev_submit(bt->b, bt->ios[i]);
		if (bt->sync_rc[i])
			failed++;
	}
	h->in_submit = false;
	pthread_mutex_lock(&h->lock);
	h->completed += failed;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

/* Submits n ios from the reactor thread and waits for all of them. */
static void run_ios(struct harness *h, struct bdev *b, struct bdev_io **ios, size_t n, int *sync_rc)
{
	struct batch bt = { h, b, ios, sync_rc, n };
	struct timespec deadline;

	for (size_t i = 0; i < n; i++) {
		ios[i]->cb = io_cb;
		ios[i]->ctx = h;
		ios[i]->result = 12345;
	}
	pthread_mutex_lock(&h->lock);
	h->completed = 0;
	pthread_mutex_unlock(&h->lock);
	assert_int_equal(reactor_send_msg(h->r, submit_batch, &bt), 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 60;
	pthread_mutex_lock(&h->lock);
	while (h->completed < n)
		if (pthread_cond_timedwait(&h->cond, &h->lock, &deadline) == ETIMEDOUT)
			break;
	assert_int_equal(h->completed, n);
	pthread_mutex_unlock(&h->lock);
	assert_false(h->cb_wrong_thread);
	assert_false(h->cb_in_submit);
}

/* One io; returns the synchronous error or the completion result. */
static int run_one(struct harness *h, struct bdev *b, struct bdev_io *io)
{
	int sync_rc;

	run_ios(h, b, &io, 1, &sync_rc);
	return sync_rc ? sync_rc : io->result;
}

static int rw(struct harness *h, struct bdev *b, enum bdev_op op, uint32_t flags, uint64_t off,
	      void *buf, size_t len)
{
	struct iovec iov = { buf, len };
	struct bdev_io io = { .op = op, .flags = flags, .offset = off, .len = len, .iov = &iov,
			      .iovcnt = 1 };

	return run_one(h, b, &io);
}

static int simple(struct harness *h, struct bdev *b, enum bdev_op op, uint64_t off, uint64_t len)
{
	struct bdev_io io = { .op = op, .offset = off, .len = len };

	return run_one(h, b, &io);
}

static void fill(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((seed + i) * 131 + (seed >> 7) + 1);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static struct bdev *open_new(struct harness *h, uint64_t size)
{
	struct bdev_file_params p = { .path = h->path, .create_size = size };
	struct bdev *b = NULL;

	assert_int_equal(bdev_file_open(&p, &b), 0);
	assert_non_null(b);
	return b;
}

/* ------------------------------------------------------------------------ */

static void test_create_sparse(void **state)
{
	struct harness *h = *state;
	struct bdev_file_params p = { .path = h->path };
	struct bdev *b = NULL;
	char missing[160];
	struct stat st;

	/* missing, no size: fails */
	assert_int_equal(bdev_file_open(&p, &b), -ENOENT);
	assert_null(b);
	/* missing parent directory: not created */
	snprintf(missing, sizeof(missing), "%s/nodir/disk.img", h->dir);
	p.path = missing;
	p.create_size = MiB;
	assert_int_equal(bdev_file_open(&p, &b), -ENOENT);
	/* size not a multiple of the block size */
	p.path = h->path;
	p.create_size = MiB + 100;
	assert_int_equal(bdev_file_open(&p, &b), -EINVAL);
	assert_int_equal(stat(h->path, &st), -1);

	p.create_size = 64 * MiB;
	assert_int_equal(bdev_file_open(&p, &b), 0);
	assert_int_equal(stat(h->path, &st), 0);
	assert_int_equal(st.st_size, 64 * MiB);
	assert_true(st.st_blocks * 512 < 64 * MiB / 2); /* sparse */
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(b->info.size_bytes, 64 * MiB);
	assert_int_equal(b->info.block_size, 512);
	assert_false(b->info.readonly);
	assert_false(b->info.rotational);
	assert_true(b->info.unmap_supported); /* ext4/xfs/tmpfs all punch holes */
	assert_string_equal(b->ops->name, "file");
	bdev_close(b);

	/* existing file, create_size ignored */
	p.create_size = 4096;
	assert_int_equal(bdev_file_open(&p, &b), 0);
	assert_int_equal(b->info.size_bytes, 64 * MiB);
	bdev_close(b);

	/* 4096-byte blocks */
	p.block_size = 4096;
	assert_int_equal(bdev_file_open(&p, &b), 0);
	assert_int_equal(b->info.block_size, 4096);
	bdev_close(b);
	p.block_size = 1000;
	assert_int_equal(bdev_file_open(&p, &b), -EINVAL);
}

static void test_bad_sizes(void **state)
{
	struct harness *h = *state;
	struct bdev_file_params p = { .path = h->path };
	struct bdev *b = NULL;
	int fd;

	fd = open(h->path, O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1000), 0);
	assert_int_equal(bdev_file_open(&p, &b), -EINVAL);
	assert_null(b);
	assert_int_equal(ftruncate(fd, 6144), 0);
	assert_int_equal(bdev_file_open(&p, &b), 0); /* 12 x 512 */
	bdev_close(b);
	p.block_size = 4096;
	assert_int_equal(bdev_file_open(&p, &b), -EINVAL); /* 1.5 x 4096 */
	assert_int_equal(ftruncate(fd, 0), 0);
	p.block_size = 0;
	assert_int_equal(bdev_file_open(&p, &b), -EINVAL); /* empty */
	close(fd);
	/* a directory */
	p.path = h->dir;
	p.readonly = true;
	assert_int_equal(bdev_file_open(&p, &b), -EINVAL);
}

static void check_roundtrip(struct harness *h, struct bdev *b, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t *w = malloc(len), *r = malloc(len), *direct = malloc(len);
	int fd;

	assert_non_null(w);
	assert_non_null(r);
	assert_non_null(direct);
	fill(w, len, seed);
	memset(r, 0xee, len);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, 0, off, w, len), 0);
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, off, r, len), 0);
	assert_memory_equal(w, r, len);
	/* and it really is in the file */
	fd = open(h->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, direct, len, (off_t)off), (ssize_t)len);
	close(fd);
	assert_memory_equal(w, direct, len);
	free(w);
	free(r);
	free(direct);
}

static void test_write_read(void **state)
{
	struct harness *h = *state;
	struct bdev *b = open_new(h, 64 * MiB);

	check_roundtrip(h, b, 0, 512, 1);
	check_roundtrip(h, b, 512, 4096 + 512, 2);      /* multiple of 512, not of 4096 */
	check_roundtrip(h, b, 7 * 512, 3 * 512, 3);     /* unaligned to 4 KiB offset */
	check_roundtrip(h, b, MiB, MiB, 4);
	check_roundtrip(h, b, 64 * MiB - 4096, 4096, 5); /* last block */
	check_roundtrip(h, b, 3 * MiB + 512, 8 * MiB, 6);
	bdev_close(b);
}

static void test_multi_iovec(void **state)
{
	struct harness *h = *state;
	struct bdev *b = open_new(h, 16 * MiB);
	static const size_t lens[] = { 1000, 24, 3072, 1, 511, 65536, 512 }; /* sum 70656 = 138 x 512 */
	struct iovec wiov[7], riov[7];
	size_t total = 0;
	uint8_t *w, *r;

	for (size_t i = 0; i < 7; i++)
		total += lens[i];
	assert_int_equal(total % 512, 0);
	w = malloc(total);
	r = malloc(total);
	fill(w, total, 77);
	memset(r, 0, total);
	for (size_t i = 0, o = 0; i < 7; o += lens[i], i++) {
		wiov[i] = (struct iovec){ w + o, lens[i] };
		riov[i] = (struct iovec){ r + o, lens[i] };
	}
	struct bdev_io wio = { .op = BDEV_OP_WRITE, .offset = 4096, .len = total, .iov = wiov,
			       .iovcnt = 7 };
	struct bdev_io rio = { .op = BDEV_OP_READ, .offset = 4096, .len = total, .iov = riov,
			       .iovcnt = 7 };

	assert_int_equal(run_one(h, b, &wio), 0);
	assert_int_equal(run_one(h, b, &rio), 0);
	assert_memory_equal(w, r, total);
	assert_int_equal(rio.done_bytes, total);
	/* the caller's iovecs are left alone */
	for (size_t i = 0; i < 7; i++)
		assert_int_equal(riov[i].iov_len, lens[i]);

	/* lengths that do not add up are rejected synchronously */
	wio.len = total + 512;
	assert_int_equal(run_one(h, b, &wio), -EINVAL);
	wio.len = total;
	wio.iovcnt = 0;
	assert_int_equal(run_one(h, b, &wio), -EINVAL);
	free(w);
	free(r);
	bdev_close(b);
}

static void test_fua_flush(void **state)
{
	struct harness *h = *state;
	struct bdev *b = open_new(h, 16 * MiB);
	uint8_t w[8192], r[8192];

	fill(w, sizeof(w), 9);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, BDEV_IO_FUA, 8192, w, sizeof(w)), 0);
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, 8192, r, sizeof(r)), 0);
	assert_memory_equal(w, r, sizeof(w));
	assert_int_equal(simple(h, b, BDEV_OP_FLUSH, 0, 0), 0);
	bdev_close(b);
}

static void test_unmap_write_zeroes(void **state)
{
	struct harness *h = *state;
	struct bdev *b = open_new(h, 16 * MiB);
	size_t len = 2 * MiB;
	uint8_t *w = malloc(len), *r = malloc(len);
	struct stat st1, st2;

	fill(w, len, 11);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, 0, MiB, w, len), 0);
	assert_int_equal(simple(h, b, BDEV_OP_FLUSH, 0, 0), 0);
	assert_int_equal(stat(h->path, &st1), 0);

	/* unmap the middle MiB: zeroes there, data around, blocks freed */
	assert_int_equal(simple(h, b, BDEV_OP_UNMAP, MiB + MiB / 2, MiB), 0);
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, MiB, r, len), 0);
	assert_memory_equal(r, w, MiB / 2);
	assert_true(all_zero(r + MiB / 2, MiB));
	assert_memory_equal(r + MiB + MiB / 2, w + MiB + MiB / 2, MiB / 2);
	assert_int_equal(stat(h->path, &st2), 0);
	assert_true(st2.st_blocks < st1.st_blocks);
	assert_int_equal(st2.st_size, 16 * MiB);

	/* GET LBA STATUS hook: hole / data / hole / data / hole to the end */
	{
		static const struct { uint64_t off; bool mapped; uint64_t run; } want[] = {
			{ 0, false, MiB },
			{ MiB, true, MiB / 2 },
			{ MiB + MiB / 2, false, MiB },
			{ 2 * MiB + MiB / 2, true, MiB / 2 },
			{ 3 * MiB, false, 13 * MiB },
		};
		bool mapped;
		uint64_t run;

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			assert_int_equal(bdev_get_alloc_status(b, want[i].off, 16 * MiB - want[i].off,
							       &mapped, &run), 0);
			assert_int_equal(mapped, want[i].mapped);
			assert_int_equal(run, want[i].run);
		}
		assert_int_equal(bdev_get_alloc_status(b, MiB, 4096, &mapped, &run), 0);
		assert_true(mapped);
		assert_int_equal(run, 4096); /* capped at len */
		assert_int_equal(bdev_get_alloc_status(b, 16 * MiB, 512, &mapped, &run), -EINVAL);
	}

	/* write zeroes over the first 512 KiB + 512 */
	assert_int_equal(simple(h, b, BDEV_OP_WRITE_ZEROES, MiB, MiB / 2 + 512), 0);
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, MiB, r, len), 0);
	assert_true(all_zero(r, MiB / 2 + 512));
	assert_true(all_zero(r + MiB / 2, MiB));
	assert_memory_equal(r + MiB + MiB / 2, w + MiB + MiB / 2, MiB / 2);

	/* beyond the end: rejected, the file does not grow */
	assert_int_equal(simple(h, b, BDEV_OP_UNMAP, 16 * MiB - 512, 1024), -EINVAL);
	assert_int_equal(simple(h, b, BDEV_OP_WRITE_ZEROES, 16 * MiB, 512), -EINVAL);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, 0, 16 * MiB, w, 512), -EINVAL);
	assert_int_equal(simple(h, b, BDEV_OP_UNMAP, 0, 0), -EINVAL);
	assert_int_equal(stat(h->path, &st2), 0);
	assert_int_equal(st2.st_size, 16 * MiB);
	free(w);
	free(r);
	bdev_close(b);
}

/* tmpfs has PUNCH_HOLE but no ZERO_RANGE: WRITE_ZEROES falls back to writing zeroes */
static void test_write_zeroes_tmpfs(void **state)
{
	struct harness *h = *state;
	struct bdev_file_params p = { .create_size = 4 * MiB };
	struct statfs sfs;
	char path[64];
	struct bdev *b;
	uint8_t *w = malloc(MiB), *r = malloc(MiB);

	if (statfs("/dev/shm", &sfs) || sfs.f_type != TMPFS_MAGIC_NR) {
		free(w);
		free(r);
		skip();
	}
	snprintf(path, sizeof(path), "/dev/shm/test_bdev_%d", (int)getpid());
	unlink(path);
	p.path = path;
	assert_int_equal(bdev_file_open(&p, &b), 0);
	fill(w, MiB, 5);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, 0, 0, w, MiB), 0);
	/* more than one 64 KiB x 16 round of zero buffers */
	assert_int_equal(simple(h, b, BDEV_OP_WRITE_ZEROES, 512, MiB - 1024), 0);
	assert_int_equal(simple(h, b, BDEV_OP_WRITE_ZEROES, 0, 512), 0); /* flag cached now */
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, 0, r, MiB), 0);
	assert_true(all_zero(r, MiB - 512));
	assert_memory_equal(r + MiB - 512, w + MiB - 512, 512);
	bdev_close(b);
	unlink(path);
	free(w);
	free(r);
}

static void test_short_read(void **state)
{
	struct harness *h = *state;
	struct bdev *b = open_new(h, 8192);
	uint8_t w[8192], r[8192];
	struct iovec iov[2] = { { r, 4096 }, { r + 4096, 4096 } };
	struct bdev_io io = { .op = BDEV_OP_READ, .offset = 0, .len = 8192, .iov = iov, .iovcnt = 2 };
	int fd;

	/* entirely past the end */
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, 8192, r, 512), -EIO);
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, 1 * MiB, r, 4096), -EIO);
	/* straddling the end */
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, 4096, r, 8192), -EIO);

	/* file truncated under us: the first readv stops mid-iovec, the rest hits EOF */
	fill(w, sizeof(w), 3);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, 0, 0, w, sizeof(w)), 0);
	fd = open(h->path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 5000), 0);
	close(fd);
	memset(r, 0, sizeof(r));
	assert_int_equal(run_one(h, b, &io), -EIO);
	assert_int_equal(io.done_bytes, 5000);
	assert_memory_equal(r, w, 5000);
	bdev_close(b);
}

/* A READ into a pipe (BDEV_IO_TO_PIPE): n bytes at off, 0 or the error. */
static int pipe_read(struct harness *h, struct bdev *b, int wfd, uint64_t off, size_t len,
		     uint64_t *done)
{
	struct bdev_io io = { .op = BDEV_OP_READ, .flags = BDEV_IO_TO_PIPE, .offset = off,
			      .len = len, .pipe_fd = wfd };
	int rc = run_one(h, b, &io);

	*done = io.done_bytes;
	return rc;
}

static void pipe_drain(int rfd, uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(rfd, buf + got, len - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
}

static void test_pipe_read(void **state)
{
	struct harness *h = *state;
	struct bdev *b = open_new(h, 4 * MiB);
	uint8_t *w = malloc(2 * MiB), *r = malloc(2 * MiB);
	uint64_t done;
	int fds[2], fd, avail;

	assert_non_null(w);
	assert_non_null(r);
	assert_true(b->info.splice_read);
	assert_int_equal(pipe(fds), 0);
	assert_true(fcntl(fds[1], F_SETPIPE_SZ, (int)MiB) >= (int)MiB);
	fill(w, 2 * MiB, 11);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, 0, 0, w, 2 * MiB), 0);

	/* page-aligned, a whole pipe; then not aligned, less */
	assert_int_equal(pipe_read(h, b, fds[1], MiB, MiB, &done), 0);
	assert_int_equal(done, MiB);
	assert_true(bdev_pipe_room(MiB, MiB) == MiB);
	pipe_drain(fds[0], r, MiB);
	assert_memory_equal(r, w + MiB, MiB);
	assert_true(bdev_pipe_room(512, 65536) == 65536 + 4096);
	assert_int_equal(pipe_read(h, b, fds[1], 512, 65536, &done), 0);
	pipe_drain(fds[0], r, 65536);
	assert_memory_equal(r, w + 512, 65536);

	/* not a READ, no pipe: refused */
	{
		struct bdev_io io = { .op = BDEV_OP_WRITE, .flags = BDEV_IO_TO_PIPE, .len = 4096,
				      .pipe_fd = fds[1] };
		struct bdev_io nofd = { .op = BDEV_OP_READ, .flags = BDEV_IO_TO_PIPE, .len = 4096,
					.pipe_fd = -1 };

		assert_int_equal(run_one(h, b, &io), -EINVAL);
		assert_int_equal(run_one(h, b, &nofd), -EINVAL);
	}

	/* the file cut under us: a short read is -EIO, the pipe holds what was read */
	fd = open(h->path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 3 * MiB / 2), 0);
	close(fd);
	assert_int_equal(pipe_read(h, b, fds[1], MiB, MiB, &done), -EIO);
	assert_int_equal(done, MiB / 2);
	assert_int_equal(ioctl(fds[0], FIONREAD, &avail), 0);
	assert_int_equal(avail, (int)(MiB / 2));
	pipe_drain(fds[0], r, MiB / 2);
	assert_memory_equal(r, w + MiB, MiB / 2);
	assert_int_equal(pipe_read(h, b, fds[1], 2 * MiB, 4096, &done), -EIO);
	assert_int_equal(done, 0);

	close(fds[0]);
	close(fds[1]);
	free(w);
	free(r);
	bdev_close(b);
}

static void test_many_concurrent(void **state)
{
	struct harness *h = *state;
	enum { N = 1000, BS = 4096 };
	struct bdev *b = open_new(h, (uint64_t)N * BS);
	uint8_t *wbuf = malloc((size_t)N * BS), *rbuf = malloc((size_t)N * BS);
	struct bdev_io *ios = calloc(N, sizeof(*ios));
	struct bdev_io **pios = calloc(N, sizeof(*pios));
	struct iovec *iov = calloc(N, sizeof(*iov));
	int *rc = calloc(N, sizeof(*rc));

	assert_non_null(wbuf);
	assert_non_null(rbuf);
	fill(wbuf, (size_t)N * BS, 1234);
	gw_log_set_level(GW_LOG_DEBUG); /* shows "ring full: queueing" with io_uring */
	memset(rbuf, 0, (size_t)N * BS);
	/* reverse order, to not just stream */
	for (int i = 0; i < N; i++) {
		int blk = N - 1 - i;

		iov[i] = (struct iovec){ wbuf + (size_t)blk * BS, BS };
		ios[i] = (struct bdev_io){ .op = BDEV_OP_WRITE, .offset = (uint64_t)blk * BS,
					   .len = BS, .iov = &iov[i], .iovcnt = 1 };
		pios[i] = &ios[i];
	}
	run_ios(h, b, pios, N, rc);
	gw_log_set_level(GW_LOG_NOTICE);
	for (int i = 0; i < N; i++) {
		assert_int_equal(rc[i], 0);
		assert_int_equal(ios[i].result, 0);
	}
	for (int i = 0; i < N; i++) {
		iov[i] = (struct iovec){ rbuf + (size_t)i * BS, BS };
		ios[i] = (struct bdev_io){ .op = BDEV_OP_READ, .offset = (uint64_t)i * BS, .len = BS,
					   .iov = &iov[i], .iovcnt = 1 };
	}
	run_ios(h, b, pios, N, rc);
	for (int i = 0; i < N; i++) {
		assert_int_equal(rc[i], 0);
		assert_int_equal(ios[i].result, 0);
	}
	assert_memory_equal(wbuf, rbuf, (size_t)N * BS);
	free(wbuf);
	free(rbuf);
	free(ios);
	free(pios);
	free(iov);
	free(rc);
	bdev_close(b);
}

static void test_readonly(void **state)
{
	struct harness *h = *state;
	struct bdev_file_params p = { .path = h->path, .create_size = MiB, .readonly = true };
	struct bdev *b = NULL;
	uint8_t buf[4096];

	/* read-only never creates */
	assert_int_equal(bdev_file_open(&p, &b), -ENOENT);
	bdev_close(open_new(h, MiB));
	fill(buf, sizeof(buf), 1);
	{
		int fd = open(h->path, O_WRONLY);

		assert_int_equal(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		close(fd);
	}
	assert_int_equal(bdev_file_open(&p, &b), 0);
	assert_true(b->info.readonly);
	assert_false(b->info.unmap_supported);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, 0, 0, buf, sizeof(buf)), -EROFS);
	assert_int_equal(simple(h, b, BDEV_OP_UNMAP, 0, 4096), -EROFS);
	assert_int_equal(simple(h, b, BDEV_OP_WRITE_ZEROES, 0, 4096), -EROFS);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, 0, buf, sizeof(buf)), 0);
	{
		uint8_t expect[4096];

		fill(expect, sizeof(expect), 1);
		assert_memory_equal(buf, expect, sizeof(buf));
	}
	assert_int_equal(simple(h, b, BDEV_OP_FLUSH, 0, 0), 0);
	bdev_close(b);
}

static void test_not_on_reactor(void **state)
{
	struct harness *h = *state;
	struct bdev *b = open_new(h, MiB);
	uint8_t buf[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct bdev_io io = { .op = BDEV_OP_READ, .len = sizeof(buf), .iov = &iov, .iovcnt = 1,
			      .cb = io_cb, .ctx = h };

	assert_int_equal(bdev_submit(b, &io), -EINVAL); /* the test thread runs no reactor */
	bdev_close(b);
}

/* Block device: a loop device over a file (root; opt-in with ISERGW_TEST_LOOP=1). */
static void test_block_device(void **state)
{
	struct harness *h = *state;
	struct bdev_file_params p = { 0 };
	char loopdev[32];
	struct bdev *b;
	uint8_t w[65536], r[65536];
	int ctl, n, loopfd, backing;

	if (!getenv("ISERGW_TEST_LOOP"))
		skip();
	bdev_close(open_new(h, 32 * MiB));
	ctl = open("/dev/loop-control", O_RDWR);
	assert_true(ctl >= 0);
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	assert_true(n >= 0);
	snprintf(loopdev, sizeof(loopdev), "/dev/loop%d", n);
	loopfd = open(loopdev, O_RDWR);
	backing = open(h->path, O_RDWR);
	assert_true(loopfd >= 0 && backing >= 0);
	assert_int_equal(ioctl(loopfd, LOOP_SET_FD, backing), 0);
	close(backing);

	p.path = loopdev;
	p.block_size = 512;
	assert_int_equal(bdev_file_open(&p, &b), 0);
	assert_int_equal(b->info.size_bytes, 32 * MiB);
	assert_int_equal(b->info.block_size, 512);
	print_message("loop: rotational %d unmap %d\n", b->info.rotational, b->info.unmap_supported);
	fill(w, sizeof(w), 42);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, BDEV_IO_FUA, MiB, w, sizeof(w)), 0);
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, MiB, r, sizeof(r)), 0);
	assert_memory_equal(w, r, sizeof(w));
	assert_int_equal(simple(h, b, BDEV_OP_FLUSH, 0, 0), 0);
	assert_int_equal(simple(h, b, BDEV_OP_WRITE_ZEROES, MiB, 4096), 0);
	if (b->info.unmap_supported)
		assert_int_equal(simple(h, b, BDEV_OP_UNMAP, MiB + 4096, 4096), 0);
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, MiB, r, sizeof(r)), 0);
	assert_true(all_zero(r, b->info.unmap_supported ? 8192 : 4096));
	assert_memory_equal(r + 8192, w + 8192, sizeof(w) - 8192);
	assert_int_equal(rw(h, b, BDEV_OP_READ, 0, 32 * MiB, r, 512), -EIO);
	bdev_close(b);
	ioctl(loopfd, LOOP_CLR_FD, 0);
	close(loopfd);
}

/* Pool workers are named "gw-file-io": count them to tell which engine ran. */
static int count_pool_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, "gw-file-io", 10) == 0)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

static int group_uring_setup(void **state)
{
	(void)state;
	unsetenv("ISERGW_NO_URING");
	return 0;
}

static int group_pool_setup(void **state)
{
	(void)state;
	setenv("ISERGW_NO_URING", "1", 1);
	return 0;
}

static void test_engine_uring(void **state)
{
	struct harness *h = *state;
	struct bdev *b = open_new(h, MiB);
	uint8_t buf[4096];

	/* /tmp supports everything natively: no worker thread is needed */
	fill(buf, sizeof(buf), 1);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, 0, 0, buf, sizeof(buf)), 0);
	assert_int_equal(count_pool_threads(), 0);
	bdev_close(b);
}

static void test_engine_pool(void **state)
{
	struct harness *h = *state;
	struct bdev *b = open_new(h, MiB);
	uint8_t buf[4096];

	fill(buf, sizeof(buf), 1);
	assert_int_equal(rw(h, b, BDEV_OP_WRITE, 0, 0, buf, sizeof(buf)), 0);
	assert_true(count_pool_threads() > 0);
	bdev_close(b);
}

/*
 * Gateway nodes given the same new LUN on a shared directory create its file
 * at the same moment: every one of them must open it whole (none may see it
 * between its creation and its sizing, at 0 bytes), and no temporary file
 * may be left beside it.
 */
#define RACERS 8
#define RACE_ROUNDS 40

struct racer {
	pthread_barrier_t *start;
	const char *path;
	int rc;
	uint64_t size;
};

static void *race_open(void *arg)
{
	struct racer *r = arg;
	struct bdev_file_params p = { .path = r->path, .create_size = 8 * MiB };
	struct bdev *b = NULL;

	pthread_barrier_wait(r->start);
	r->rc = bdev_file_open(&p, &b);
	if (!r->rc) {
		r->size = b->info.size_bytes;
		bdev_close(b);
	}
	return NULL;
}

static void test_create_race(void **state)
{
	struct harness *h = *state;
	pthread_barrier_t start;
	pthread_t t[RACERS];
	struct racer r[RACERS];
	int failed = 0;

	for (int round = 0; round < RACE_ROUNDS; round++) {
		char path[200];
		DIR *d;
		struct dirent *e;
		int files = 0;

		snprintf(path, sizeof(path), "%s/race-%d.img", h->dir, round);
		assert_int_equal(pthread_barrier_init(&start, NULL, RACERS), 0);
		for (int i = 0; i < RACERS; i++) {
			r[i] = (struct racer){ .start = &start, .path = path };
			assert_int_equal(pthread_create(&t[i], NULL, race_open, &r[i]), 0);
		}
		for (int i = 0; i < RACERS; i++) {
			pthread_join(t[i], NULL);
			if (r[i].rc || r[i].size != 8 * MiB)
				failed++;
		}
		pthread_barrier_destroy(&start);
		d = opendir(h->dir);
		assert_non_null(d);
		while ((e = readdir(d)))
			if (!strncmp(e->d_name, "race-", 5))
				files++;
		closedir(d);
		assert_int_equal(files, round + 1); /* no temporary file left */
	}
	if (failed)
		fail_msg("%d of %d opens of a file being created at once failed or saw it short",
			 failed, RACERS * RACE_ROUNDS);
}

struct grow_seen {
	unsigned int calls;
	uint64_t size;
};

static void grow_listener(void *arg, struct bdev *b)
{
	struct grow_seen *g = arg;

	g->calls++;
	g->size = b->info.size_bytes;
}

/* bdev_grow: the file extended online, never shrunk; the listener told */
static void test_grow(void **state)
{
	struct harness *h = *state;
	struct bdev *b = open_new(h, 4 * MiB);
	struct grow_seen g = { 0 };
	struct stat st;
	bool grown = true;

	bdev_set_listener(b, grow_listener, &g);
	assert_int_equal(g.calls, 1);           /* told once at once: compare, not assume */
	assert_int_equal(g.size, 4 * MiB);
	/* writes past the end are refused before */
	check_roundtrip(h, b, 0, 4096, 1);

	assert_int_equal(bdev_grow(b, 8 * MiB, &grown), 0);
	assert_true(grown);
	assert_int_equal(b->info.size_bytes, 8 * MiB);
	assert_int_equal(stat(h->path, &st), 0);
	assert_int_equal(st.st_size, 8 * MiB);
	assert_int_equal(g.calls, 2);
	assert_int_equal(g.size, 8 * MiB);
	check_roundtrip(h, b, 6 * MiB, 64 * 1024, 2);   /* beyond the old end */
	check_roundtrip(h, b, 0, 4096, 1);              /* the old data stays */

	/* the same size, a smaller one: nothing changes, nobody is told */
	assert_int_equal(bdev_grow(b, 8 * MiB, &grown), 0);
	assert_false(grown);
	assert_int_equal(bdev_grow(b, MiB, &grown), 0);
	assert_false(grown);
	assert_int_equal(stat(h->path, &st), 0);
	assert_int_equal(st.st_size, 8 * MiB);
	assert_int_equal(b->info.size_bytes, 8 * MiB);
	assert_int_equal(g.calls, 2);

	/* a file grown by someone else (another node) counts in whole blocks */
	assert_int_equal(truncate(h->path, 9 * MiB + 100), 0);
	assert_int_equal(bdev_grow(b, 9 * MiB, &grown), 0);
	assert_true(grown);
	assert_int_equal(b->info.size_bytes, 9 * MiB);
	assert_int_equal(g.calls, 3);

	bdev_set_listener(b, NULL, NULL);
	assert_int_equal(bdev_grow(b, 10 * MiB, &grown), 0);
	assert_true(grown);
	assert_int_equal(g.calls, 3);
	bdev_close(b);

	/* read-only: cannot be extended */
	{
		struct bdev_file_params p = { .path = h->path, .readonly = true };

		assert_int_equal(bdev_file_open(&p, &b), 0);
		assert_int_equal(bdev_grow(b, 16 * MiB, &grown), -EROFS);
		assert_false(grown);
		assert_int_equal(b->info.size_bytes, 10 * MiB);
		bdev_close(b);
	}
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest uring_tests[] = {
		T(test_engine_uring), /* first: before any test could start workers */
		T(test_create_sparse),
		T(test_create_race),
		T(test_bad_sizes),
		T(test_write_read),
		T(test_multi_iovec),
		T(test_fua_flush),
		T(test_unmap_write_zeroes),
		T(test_short_read),
		T(test_pipe_read),
		T(test_many_concurrent),
		T(test_readonly),
		T(test_grow),
		T(test_not_on_reactor),
		T(test_block_device),
		T(test_write_zeroes_tmpfs),
	};
	const struct CMUnitTest pool_tests[] = {
		T(test_engine_pool),
		T(test_write_read),
		T(test_multi_iovec),
		T(test_fua_flush),
		T(test_unmap_write_zeroes),
		T(test_short_read),
		T(test_pipe_read),
		T(test_many_concurrent),
		T(test_readonly),
		T(test_block_device),
		T(test_write_zeroes_tmpfs),
	};
	int failed = 0;

	failed += cmocka_run_group_tests_name("io_uring", uring_tests, group_uring_setup, NULL);
	failed += cmocka_run_group_tests_name("workers", pool_tests, group_pool_setup, NULL);
	return failed;
}
