/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The internals of the iSCSI backstore shared by its files (built with
 * libiscsi only): backend/iscsi.c (URLs, the pure helpers, the key),
 * iscsi_session.c, iscsi_io.c, iscsi_reactor.c, iscsi_bdev.c, iscsi_open.c
 * and iscsi_fence.c. Not for use outside backend/iscsi*.c.
 */
#ifndef ISERGW_BACKEND_ISCSI_INT_H
#define ISERGW_BACKEND_ISCSI_INT_H

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "backend/backend.h"
#include "backend/iscsi_priv.h"
#include "common/list.h"
#include "common/log.h"
#include "common/reactor.h"

#define IB_COMP "bdev-iscsi"
#define IB_MAX_REACTORS   256u
#define IB_TICK_IDLE_MS   1000u
#define IB_TICK_BUSY_MS   50u
#define IB_RETRY_LATER_MS 100u
#define IB_MAX_UA_RETRIES 8u
#define IB_DEFAULT_INITIATOR "iqn.2026-11.org.isergw:gateway"
#define IB_ZERO_BLOCK     65536u        /* largest block size we accept from a backend */
#define IB_MAX_BS         IB_ZERO_BLOCK
#define IB_OPEN_MIN_MS    50u           /* less left than this: a bounded open does not try */

_Static_assert(sizeof(struct scsi_iovec) == sizeof(struct iovec) &&
	       offsetof(struct scsi_iovec, iov_base) == offsetof(struct iovec, iov_base) &&
	       offsetof(struct scsi_iovec, iov_len) == offsetof(struct iovec, iov_len),
	       "libiscsi's scsi_iovec must be struct iovec");

struct ib_bdev;
struct ib_rx;
struct ib_split;

enum ib_sess_state { S_DOWN = 0, S_CONNECTING, S_PROBING, S_UP };

struct ib_sess {
	struct ib_rx *rx;
	unsigned int idx;
	enum ib_sess_state state;
	struct iscsi_context *ctx;
	struct reactor_fd fdh;
	int fd;
	uint32_t events;
	bool fd_added;
	bool broken;            /* set in callbacks, torn down once service returned */
	uint8_t queued;         /* commands queued since the last write (IB_WRITE_BATCH) */
	bool in_service;
	bool ever_up;
	bool registered;        /* our reservation key is registered through this session */
	uint32_t reg_epoch;     /* ib->fence_epoch when it registered */
	uint32_t reg_gen;       /* ib_lease_gen when it began to register */
	uint64_t connect_start_ms;
	unsigned int attempt;   /* failed connects in a row */
	uint64_t down_since_ms;
	struct reactor_timer reconnect;
	struct list_head inflight;      /* struct ib_req.link */
	unsigned int ninflight;
	struct list_head kick_link;
	char last_err[256];
};

/* One bdev on one reactor. */
struct ib_rx {
	struct ib_bdev *ib;
	struct reactor *r;
	struct ib_sess *sess;
	unsigned int nsess;
	struct list_head wait;          /* struct ib_req.link: FIFO waiting for a session */
	struct list_head kicks;         /* sessions to write out in flush */
	struct list_head requeue;       /* back from a failed attempt, go before wait */
	struct list_head done;          /* completions to deliver from flush */
	struct reactor_deferred flush;
	struct reactor_timer tick;
	struct ib_req *free_reqs;
	struct ib_split *free_splits;   /* iscsi_bdev.c: kept for the next long command */
	unsigned int nfree_splits;
	unsigned int nwait;
	/* fencing: its share of ib->n_up_unreg and ib->n_reg (ib_rx_recount) */
	unsigned int c_up_unreg, c_reg;
	bool keys_pending;              /* a READ KEYS of ib_rx_check_keys is out */
	uint8_t keys_ua;                /* unit attentions to it in a row */
	uint32_t keys_gen, keys_seq;    /* ib_lease_gen and ib->reg_seq when it was sent */
};

enum ib_req_kind { RK_IO = 0, RK_PROBE, RK_CAW_CHECK };

struct ib_req {
	struct list_head link;
	struct ib_rx *rx;
	struct bdev_io *io;             /* NULL for a probe */
	struct ib_sess *sess;
	struct scsi_task *task;
	uint8_t kind;                   /* enum ib_req_kind */
	uint8_t ua_retries;
	bool caw_unknown;               /* a CAW was sent on a session that dropped */
	int deferred_result;            /* for completions delivered from flush */
	uint64_t t0_ms;                 /* first submission (hold limit) */
	uint64_t issue_us;
	uint64_t not_before_ms;
	uint8_t *bounce;                /* CAW read-back */
	uint8_t param[24];              /* UNMAP parameter list */
	uint8_t pr_step;                /* a registration step: its PR OUT service action */
	uint32_t epoch;                 /* ib->fence_epoch when it was submitted */
	struct ib_req *next_free;
	struct scsi_iovec iov1;         /* the one data buffer of UNMAP, WRITE SAME, the CAW check */
	/*
	 * The backend command of an RK_IO or RK_CAW_CHECK request, reused from
	 * one issue to the next (no scsi_create_task per command); libiscsi
	 * owns it while it is in flight. Last: ib_req_alloc does not clear it.
	 */
	struct scsi_task etask;
};

struct ib_bdev {
	struct bdev bdev;
	struct bdev_iscsi_url url;
	char initiator[224];
	unsigned int sessions;
	uint32_t read_chunk;            /* READs longer than this go as pieces; 0 = never */
	uint32_t hold_ms;
	uint32_t cmd_timeout_s;
	uint32_t isid_rnd;              /* stable per (initiator, host, url) */
	/* geometry: changes only under lock (discovery thread, a probe seeing a resize) */
	_Atomic uint64_t nblocks;       /* 0 = not known yet */
	_Atomic uint32_t bs;
	uint8_t *zero_block;            /* IB_ZERO_BLOCK bytes */
	atomic_bool has_ws;             /* try WRITE SAME(16) for WRITE_ZEROES */
	_Atomic uint64_t max_ws_blocks; /* 0 = no limit reported */
	_Atomic uint32_t max_xfer_blocks; /* backend MAXIMUM TRANSFER LENGTH; 0 = none */
	_Atomic uint32_t max_caw_blocks;  /* backend MAXIMUM COMPARE AND WRITE LENGTH */
	atomic_bool no_ws;              /* the backend refused WRITE SAME */
	atomic_bool offline_logged;
	/* fencing at the backend (docs/backend.md, "The gateways' reservation") */
	atomic_bool pr_unsupported;     /* the backend refused PERSISTENT RESERVE OUT: fencing off */
	atomic_bool ever_registered;
	atomic_bool gate_closed_seen;   /* a session found no valid lease since the last registration */
	atomic_bool fenced_seen;        /* the backend refused us for a reservation conflict */
	_Atomic uint32_t fence_epoch;   /* bumped when this node finds itself fenced */
	/*
	 * What bdev_awaits_registration() reads: sessions up but not
	 * registered (in this fence_epoch), sessions registered, the
	 * ib_lease_gen in which the key was last known registered, and a count
	 * of registrations (a READ KEYS that saw one happen proves nothing).
	 */
	atomic_uint n_up_unreg, n_reg;
	_Atomic uint32_t ok_gen;
	_Atomic uint32_t reg_seq;
	struct list_head all_link;      /* ib_all */
	_Atomic uint32_t odd_answer;    /* last backend answer logged by note_odd_answer */
	pthread_mutex_t lock;
	struct bdev_listener listener;
	/* discovery in the background while the backend is unreachable */
	pthread_t disc_thread;
	bool disc_running;
	bool disc_err_first;            /* the open did not wait: the first failure is an err */
	struct iscsi_context *left_ctx; /* a login the open stopped waiting for (discover) */
	struct disc *left_d;
	atomic_bool disc_stop;
	pthread_cond_t disc_cond;
	_Atomic(struct ib_rx *) rx[IB_MAX_REACTORS];
	/* counters */
	atomic_uint_fast64_t n_commands, n_retries, n_reconnects, n_connect_fail, n_expired;
	atomic_uint_fast64_t lat_sum_us, lat_max_us;
};

extern const struct bdev_ops bdev_iscsi_ops;

/* This node's reservation key (0: no fencing) and when it may register it. */
extern _Atomic uint64_t ib_pr_key;
extern bool (*_Atomic ib_may_register)(void);
/* Bumped each time the node holds a lease again after a time without one. */
extern _Atomic uint32_t ib_lease_gen;
/* Every open iscsi bdev, for bdev_iscsi_lease_regained(). */
extern pthread_mutex_t ib_all_lock;
extern struct list_head ib_all;

/* One command of a synchronous session (discovery, fencing). */
struct disc {
	bool done;
	int status;
	struct scsi_task *task;
	char err[256];          /* libiscsi's reason, before later calls overwrite it */
};

/* requests and sessions (iscsi_session.c) */
struct ib_req *ib_req_alloc(struct ib_rx *rx);
void ib_req_free(struct ib_req *q);
void ib_task_put(struct ib_req *q, struct scsi_task *t);
bool ib_req_landed(struct ib_req *q);
const char *ib_req_name(const struct ib_req *q);
void ib_req_finish(struct ib_req *q, int result);
void ib_req_set_answer(struct bdev_io *io, uint8_t status, const uint8_t *sense, size_t len);
void ib_sess_after_service(struct ib_sess *s, int rc);
void ib_sess_mark_broken(struct ib_sess *s, const char *why);
void ib_reconnect_cb(void *arg);
void ib_sess_teardown(struct ib_sess *s);
struct ib_req *ib_probe_req(struct ib_sess *s);
bool ib_probe_track(struct ib_sess *s, struct ib_req *q, struct scsi_task *t);
void ib_sess_register(struct ib_sess *s);
void ib_sess_connect(struct ib_sess *s);

/* commands (iscsi_io.c) */
void ib_rx_defer(struct ib_rx *rx);
void ib_req_defer_result(struct ib_req *q, int result);
struct ib_sess *ib_pick_session(struct ib_rx *rx);
void ib_sess_kick(struct ib_sess *s);
void ib_sess_issue(struct ib_sess *s, struct ib_req *q);

/* long commands as pieces (iscsi_bdev.c) */
void ib_split_cache_free(struct ib_rx *rx);

/* per-reactor state (iscsi_reactor.c) */
void ib_rx_pump(struct ib_rx *rx);
void ib_rx_arm_tick(struct ib_rx *rx);
void ib_rx_check_keys(struct ib_rx *rx);
void ib_rx_recount(struct ib_rx *rx);
void ib_rx_tick(void *arg);
void ib_poke(struct ib_bdev *ib);
bool ib_awaits_registration(struct bdev *b);
struct ib_rx *ib_rx_get(struct ib_bdev *ib);
void ib_rx_free(struct ib_rx *rx);

/* discovery and open (iscsi_open.c) */
struct iscsi_context *ib_sync_context(struct ib_bdev *ib, uint32_t timeout_ms, uint16_t isid_qual);
void ib_disc_cb(struct iscsi_context *ctx, int status, void *data, void *priv);
int ib_disc_wait(struct iscsi_context *ctx, struct ib_bdev *ib, struct disc *d,
		 uint64_t deadline);
void ib_disc_drain(struct iscsi_context *ctx, struct disc *d, uint64_t limit_ms);
void ib_set_geometry_locked(struct ib_bdev *ib, uint64_t nblocks, uint32_t bs);
void ib_set_listener(struct bdev *b, bdev_listener_fn fn, void *arg);

static inline bool fence_key_set(const struct ib_bdev *ib)
{
	return atomic_load(&ib_pr_key) && !atomic_load(&ib->pr_unsupported);
}

static inline bool fence_may_register(void)
{
	bool (*fn)(void) = atomic_load(&ib_may_register);

	return !fn || fn();
}

/* Moves all of `from` (in order) to the front of `to`. */
static inline void list_splice_head(struct list_head *from, struct list_head *to)
{
	if (list_empty(from))
		return;
	from->prev->next = to->next;
	to->next->prev = from->prev;
	to->next = from->next;
	from->next->prev = to;
	list_init(from);
}

static inline struct ib_bdev *to_ib(struct bdev *b)
{
	return container_of(b, struct ib_bdev, bdev);
}

static inline uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static inline uint32_t fnv1a(uint32_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 16777619u;
	}
	return h;
}

static inline void ctx_log(int level, const char *msg)
{
	GW_DEBUG(IB_COMP, "libiscsi[%d]: %s", level, msg);
}

#endif
