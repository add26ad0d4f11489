/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Backstores. A bdev is one opened backing store (file, block device; later a
 * backend iSCSI LUN), shared by all reactors. I/O is asynchronous: submit on a
 * reactor thread, the completion callback runs later on the same reactor
 * thread (never inside bdev_submit()). Types of backstore are ops tables.
 */
#ifndef ISERGW_BACKEND_H
#define ISERGW_BACKEND_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gw_api.h"

GW_API_BEGIN

enum bdev_op {
	BDEV_OP_READ = 0,
	BDEV_OP_WRITE,
	BDEV_OP_FLUSH,        /* everything written so far reaches stable storage */
	BDEV_OP_UNMAP,        /* deallocate [offset, offset+len): reads return zeroes after */
	BDEV_OP_WRITE_ZEROES, /* write zeroes over [offset, offset+len) */
};

#define BDEV_IO_FUA  0x1u     /* WRITE: complete only once the data is stable */
/*
 * WRITE: an atomic compare and write done by the backstore itself (only
 * where bdev_info.native_caw; other backstores reject it since the iovecs
 * do not add up to len): iov holds 2 * len bytes, the data to compare with
 * [offset, offset+len) followed by the data to write there. A miscompare
 * ends in -EREMOTEIO with MISCOMPARE sense (see bdev_io.sense).
 */
#define BDEV_IO_COMPARE_AND_WRITE 0x2u
/*
 * READ (only where bdev_info.splice_read): the data goes into the pipe whose
 * write end is pipe_fd, by reference to the backing store's page cache
 * (splice), instead of into the iovecs (iov unused). The pipe must have room
 * for bdev_pipe_room(offset, len) bytes: a pipe takes a slot per page of the
 * file. On failure the pipe may hold part of the data: the caller drains or
 * closes it. The data blocks nobody's thread: the backstore fills the pipe
 * off the reactor (io_uring's workers, or its own worker threads).
 */
#define BDEV_IO_TO_PIPE 0x4u
#define BDEV_SENSE_MAX 96u

struct bdev;
struct bdev_io;
typedef void (*bdev_io_cb)(struct bdev_io *io);

/* The pipe size a BDEV_IO_TO_PIPE read of [offset, offset+len) needs: whole pages. */
static inline uint64_t bdev_pipe_room(uint64_t offset, uint64_t len)
{
	uint64_t page = (uint64_t)getpagesize();

	return (offset % page + len + page - 1) / page * page;
}

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
	/*
	 * Optional, set by the caller: where a backstore that speaks SCSI (iscsi)
	 * puts the backend's answer when it is not GOOD. Then result is
	 * -EREMOTEIO, scsi_status the backend's status and, for CHECK CONDITION,
	 * sense[0..sense_len) its sense data, unchanged (at most BDEV_SENSE_MAX
	 * bytes). With sense == NULL the status is still set.
	 */
	uint8_t *sense;
	uint8_t sense_len;
	uint8_t scsi_status;
	int pipe_fd;            /* BDEV_IO_TO_PIPE: write end of the pipe */
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
	bool native_caw;        /* BDEV_IO_COMPARE_AND_WRITE is supported */
	bool splice_read;       /* BDEV_IO_TO_PIPE is supported */
	uint32_t opt_xfer_bytes; /* OPTIMAL TRANSFER LENGTH of the backing store; 0 = none */
};

/*
 * Called by a backstore whose geometry changed (info.size_bytes or
 * info.block_size; an iscsi LUN whose backend was unreachable at start, or
 * grew): on any thread, with the backstore's lock held, so it must not call
 * back into the bdev.
 */
typedef void (*bdev_listener_fn)(void *arg, struct bdev *b);

/* A backstore's listener, set and called with the backstore's own lock held. */
struct bdev_listener {
	bdev_listener_fn fn;
	void *arg;
};

/* For set_listener: (un)set it and, when set, call it once (see bdev_set_listener). */
static inline void bdev_listener_set(struct bdev_listener *l, struct bdev *b,
				     bdev_listener_fn fn, void *arg)
{
	l->fn = fn;
	l->arg = arg;
	if (fn)
		fn(arg, b);
}

/* The geometry of b changed: tell the listener, if any. */
static inline void bdev_listener_call(const struct bdev_listener *l, struct bdev *b)
{
	if (l->fn)
		l->fn(l->arg, b);
}

struct bdev_ops {
	const char *name;
	int (*submit)(struct bdev *b, struct bdev_io *io);
	void (*close)(struct bdev *b);
	/* optional: backstores whose geometry can change */
	void (*set_listener)(struct bdev *b, bdev_listener_fn fn, void *arg);
	/* optional: bdev_grow */
	int (*grow)(struct bdev *b, uint64_t size, bool *grown);
	/* optional: bdev_awaits_registration (any thread, never blocks) */
	bool (*awaits_registration)(struct bdev *b);
};

/*
 * What the backing store is, set at open and not changed after, so that a
 * second LUN on it is refused (core/runtime.c): a file's device and inode, a
 * block device's device number, a backend LUN's designator from its VPD
 * page 0x83 (type, code set, identifier; followed by a NUL and the target's
 * name when the designator is unique within its target only, as tgt's
 * locally assigned NAA made of target id and LUN; BDEV_ID_NONE when the
 * backend could not be reached at open: then only its URL tells). Messages
 * show bytes[0..shown).
 */
enum bdev_id_kind {
	BDEV_ID_NONE = 0,
	BDEV_ID_FILE,           /* bytes: st_dev, st_ino (two uint64_t) */
	BDEV_ID_BLOCK,          /* bytes: st_rdev (uint64_t) */
	BDEV_ID_DESIGNATOR,     /* bytes: designator type, code set, identifier[, NUL, IQN] */
};
#define BDEV_ID_MAX 512u

struct bdev_id {
	enum bdev_id_kind kind;
	uint16_t len;
	uint16_t shown;
	uint8_t bytes[BDEV_ID_MAX];
};

struct bdev {
	const struct bdev_ops *ops;
	struct bdev_info info;
	char name[256];
	struct bdev_id id;
	void *priv;
	/* Set by the backstore while its backing store is unreachable (I/O then
	 * fails with -ENOTCONN); zero for backstores that are always there.
	 * Offline with info.size_bytes == 0: the geometry is not known yet. */
	atomic_bool offline;
};

struct bdev_file_params {
	const char *path;
	uint64_t create_size;   /* if the file is missing: create it sparse with this size (0 = fail) */
	uint32_t block_size;    /* 0 = 512 */
	bool readonly;
	char *err;              /* set: why an open fails goes here, not to the log (the caller's) */
	size_t errlen;
};

/*
 * Opens a regular file or block device. Returns 0 or -errno; says why on
 * error (in p->err when set, otherwise logged).
 */
int bdev_file_open(const struct bdev_file_params *p, struct bdev **out);

/*
 * A LUN of a backend iSCSI target (docs/backend.md, "iSCSI backstore").
 * url: iscsi://[user%secret@]HOST[:PORT]/IQN/LUN (CHAP towards the backend).
 * Capacity and block size are discovered at open, synchronously: call it on
 * the main thread, never on a reactor. If the backend cannot be reached then,
 * the bdev opens offline, with size_bytes/block_size if given, else with an
 * unknown geometry (info.size_bytes 0), and a background thread keeps trying;
 * the geometry it finds is announced to the listener (bdev_set_listener).
 * Only a bad URL fails the open.
 */
struct bdev_iscsi_params {
	const char *url;
	const char *initiator;  /* our initiator name towards the backend; NULL = default */
	unsigned int sessions;  /* backend sessions per reactor that does I/O; 0 = 1 */
	uint32_t read_chunk;    /* READs longer go to the backend as pieces of this size; 0 = never */
	uint32_t hold_ms;       /* keep commands waiting for the backend this long; 0 = 30000 */
	uint32_t cmd_timeout_s; /* a backend command taking longer drops the session; 0 = 15 */
	uint32_t open_timeout_ms; /* discovery at open; 0 = 5000 */
	bool open_bounded;      /* open_timeout_ms is what the caller can spare (0: none):
				 * no answer by then opens NOT READY, told as a notice */
	uint64_t size_bytes;    /* expected geometry if unreachable at open (0 = unknown) */
	uint32_t block_size;
	bool readonly;
};

int bdev_iscsi_open(const struct bdev_iscsi_params *p, struct bdev **out);
/* true if path names an iscsi:// backend */
bool bdev_is_iscsi_url(const char *path);

/* Counters of an iscsi bdev (metrics); -EINVAL for another backstore type. */
struct bdev_iscsi_stats {
	uint64_t commands;      /* backend commands completed */
	uint64_t retries;       /* commands issued again (reconnect, BUSY, UA, ...) */
	uint64_t reconnects;    /* sessions established after the first */
	uint64_t connect_failures;
	uint64_t held_expired;  /* host commands failed after the hold limit */
	uint64_t latency_us_sum; /* backend latency of successful commands */
	uint64_t latency_us_max;
	bool offline;
};
int bdev_iscsi_get_stats(struct bdev *b, struct bdev_iscsi_stats *out);

/*
 * Fencing at the backend (docs/backend.md, "The gateways' reservation").
 * key: this node's persistent reservation key on every iscsi:// LUN (0:
 * none, no reservation is used). A backend session registers the key when
 * it logs in, and reserves the LUN if nobody has, but only while may_register
 * says so (the node holds a valid lease; NULL: always). Callable on any
 * thread, at any time (start, reload).
 */
void bdev_iscsi_fence_setup(uint64_t key, bool (*may_register)(void));
/*
 * The node holds a lease again after a time without one (the HA agent
 * renewed it after it ran out, or after a step down): it may have been
 * fenced meanwhile. Call bdev_iscsi_lease_regaining() before the lease is
 * valid again and bdev_iscsi_lease_regained() after: from the first call
 * every iscsi:// LUN that has a registered backend session awaits its
 * registration (bdev_awaits_registration) until one READ KEYS found this
 * node's key still there, or its sessions registered again; the second
 * starts that at once on every reactor instead of at their next tick.
 * Control thread.
 */
void bdev_iscsi_lease_regaining(void);
void bdev_iscsi_lease_regained(void);
/*
 * Preempts keys[0..n) on the iscsi bdev b: a short session of its own logs
 * in, registers this node's key, makes sure the LUN is reserved and
 * preempts each key (a key already gone counts as done). Blocks up to
 * timeout_ms: call it on the control thread, never on a reactor. Returns 0,
 * -EOPNOTSUPP (the backend has no persistent reservations, or no key is
 * set), -ETIMEDOUT, -EINVAL (not an iscsi bdev) or another negative errno;
 * every failure is logged.
 */
int bdev_iscsi_fence(struct bdev *b, const uint64_t *keys, size_t n, uint32_t timeout_ms);

/*
 * Types of backstore by URL scheme (backend/backstore.c): a LUN's path
 * "SCHEME://..." is opened by the backstore registered for SCHEME ("iscsi"),
 * any other path by the one registered as BDEV_SCHEME_FILE (a file or block
 * device). file and iscsi are built in.
 */
#define BDEV_SCHEME_FILE "file"
struct gw_lun_cfg;
struct bdev_backstore {
	const char *scheme;
	/* Opens the LUN's store: 0 or -errno, why (when known) in err, not logged. */
	int (*open)(const struct gw_lun_cfg *lc, char *err, size_t errlen, struct bdev **out);
	/* optional: fencing at the backend, as bdev_iscsi_fence() */
	int (*fence)(struct bdev *b, const uint64_t *keys, size_t n, uint32_t timeout_ms);
};
/* 0, -EEXIST (the scheme has one), -ENOSPC. Before any LUN is opened. */
int bdev_backstore_register(const struct bdev_backstore *bs);
/* The backstore that opens path (NULL: none). */
const struct bdev_backstore *bdev_backstore_for(const char *path);
/*
 * The backstores this thread opens from now must be open by deadline_ms
 * (gw_now_ms(); 0: no deadline, each takes its own time). One that would
 * wait for a remote store past it opens NOT READY and finds the store in
 * the background (the control thread while isergwd holds an ALUA lease).
 */
void bdev_open_deadline_set(uint64_t deadline_ms);
/* Opens lc->path with its backstore: as bdev_backstore.open. */
int bdev_open_lun(const struct gw_lun_cfg *lc, char *err, size_t errlen, struct bdev **out);
/* Fences keys on b through its backstore; -EOPNOTSUPP if it has no fencing. */
int bdev_fence(struct bdev *b, const uint64_t *keys, size_t n, uint32_t timeout_ms);
/* b's backstore fences at the backend. */
bool bdev_fenceable(const struct bdev *b);

/*
 * The owner of the bdev (its logical unit) hears of geometry changes; fn NULL
 * = stop. fn is also called once from here (the geometry may have changed
 * since the owner read info): it must compare, not assume a change.
 */
static inline void bdev_set_listener(struct bdev *b, bdev_listener_fn fn, void *arg)
{
	if (b->ops->set_listener)
		b->ops->set_listener(b, fn, arg);
}

/*
 * True while this node's writes through b would be refused by the backend
 * until it registers its reservation key again: an iscsi:// LUN whose key is
 * not registered through some backend session that serves, or not known to
 * be since the node was last without a lease (it may have been fenced
 * meanwhile). The SCSI layer reports this node's target port groups
 * Transitioning for the LU meanwhile (docs/ha.md, "Failback"). Always false
 * for backstores without fencing. Any thread: a few atomic loads.
 */
static inline bool bdev_awaits_registration(struct bdev *b)
{
	return b && b->ops->awaits_registration && b->ops->awaits_registration(b);
}

/*
 * Grow online to size bytes (a reload raised the LUN's size): a file is
 * extended, a block device's size read again (it must have grown
 * underneath); never shrinks. *grown: the size changed, and the listener was
 * told (the LU raises CAPACITY DATA HAS CHANGED). -EOPNOTSUPP for backstores
 * whose size is not ours to set (iscsi://: the backend's own size, followed
 * when the backend reports CAPACITY DATA HAS CHANGED). Main or control
 * thread: it may block on the file system.
 */
static inline int bdev_grow(struct bdev *b, uint64_t size, bool *grown)
{
	*grown = false;
	return b->ops->grow ? b->ops->grow(b, size, grown) : -EOPNOTSUPP;
}

static inline bool bdev_offline(struct bdev *b)
{
	return atomic_load_explicit(&b->offline, memory_order_relaxed);
}

/* Submit; returns 0 (cb will run later on this thread) or -errno (cb never runs). */
static inline int bdev_submit(struct bdev *b, struct bdev_io *io)
{
	io->bdev = b;
	io->done_bytes = 0;
	return b->ops->submit(b, io);
}

void bdev_close(struct bdev *b);

GW_API_END

#endif
