/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Backstores. A bdev is one opened backing store (file, block device; later a
 * backend iSCSI LUN), shared by all reactors. I/O is asynchronous: submit on a
 * reactor thread, the completion callback runs later on the same reactor
 * thread (never inside bdev_submit()). Types of backstore are ops tables.
 */
#ifndef ISERGW_BACKEND_H
#define ISERGW_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

enum bdev_op {
	BDEV_OP_READ = 0,
	BDEV_OP_WRITE,
	BDEV_OP_FLUSH,        /* everything written so far reaches stable storage */
	BDEV_OP_UNMAP,        /* deallocate [offset, offset+len): reads return zeroes after */
	BDEV_OP_WRITE_ZEROES, /* write zeroes over [offset, offset+len) */
};

#define BDEV_IO_FUA  0x1u     /* WRITE: complete only once the data is stable */

struct bdev;
struct bdev_io;
typedef void (*bdev_io_cb)(struct bdev_io *io);

/* Caller-owned request; must stay valid until cb runs. */
struct bdev_io {
	enum bdev_op op;
	uint32_t flags;
	uint64_t offset;        /* bytes */
	uint64_t len;           /* bytes */
	struct iovec *iov;      /* READ/WRITE: data, total length == len */
	int iovcnt;
	int result;             /* set before cb: 0 or negative errno (short I/O: -EIO) */
	bdev_io_cb cb;
	void *ctx;
	/* private to the backstore */
	struct bdev *bdev;
	uint64_t done_bytes;
	void *priv;
};

struct bdev_info {
	uint64_t size_bytes;
	uint32_t block_size;    /* logical block size, bytes */
	bool readonly;
	bool unmap_supported;   /* UNMAP deallocates (punch hole) */
	bool rotational;
};

struct bdev_ops {
	const char *name;
	int (*submit)(struct bdev *b, struct bdev_io *io);
	void (*close)(struct bdev *b);
};

struct bdev {
	const struct bdev_ops *ops;
	struct bdev_info info;
	char name[256];
	void *priv;
};

struct bdev_file_params {
	const char *path;
	uint64_t create_size;   /* if the file is missing: create it sparse with this size (0 = fail) */
	uint32_t block_size;    /* 0 = 512 */
	bool readonly;
};

/* Opens a regular file or block device. Returns 0 or -errno; logs why on error. */
int bdev_file_open(const struct bdev_file_params *p, struct bdev **out);

/* Submit; returns 0 (cb will run later on this thread) or -errno (cb never runs). */
static inline int bdev_submit(struct bdev *b, struct bdev_io *io)
{
	io->bdev = b;
	io->done_bytes = 0;
	return b->ops->submit(b, io);
}

void bdev_close(struct bdev *b);

#endif
