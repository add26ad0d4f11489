/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iSCSI backstore: a LUN of a backend iSCSI target, reached with libiscsi's
 * asynchronous API inside the reactors (docs/backend.md, "iSCSI backstore").
 *
 *  - Open (main thread): one short-lived session discovers capacity, block
 *    size and the backend's provisioning limits (READ CAPACITY(16), VPD B0h
 *    and B2h), driven by poll() with a deadline, then is closed.
 *  - I/O: each reactor that submits I/O for the bdev opens its own backend
 *    sessions (`sessions` per reactor, lazily on its first submission), so
 *    commands never cross threads and completions run on the submitting
 *    reactor. A session's socket is an fd in the reactor's epoll
 *    (iscsi_get_fd / iscsi_which_events / iscsi_service); newly queued
 *    commands are written from a deferred call once per loop iteration; a
 *    tick timer calls iscsi_service(ctx, 0) for libiscsi's command timeouts
 *    and expires commands held longer than the hold limit.
 *  - Data moves without copies: the caller's iovecs are the task's data-in
 *    (libiscsi reads the Data-In PDUs straight into them) or data-out.
 *  - Faults: libiscsi's own reconnect is off (it would re-issue everything,
 *    COMPARE AND WRITE included). A session that drops, or whose command
 *    times out, is destroyed; its commands go back, in order, to the head of
 *    the reactor's wait queue and are issued again on another live session
 *    or after reconnecting (backoff 50 ms doubling to 2 s, same ISID so the
 *    backend reinstates the old session and drops its tasks). A COMPARE AND
 *    WRITE whose outcome is unknown is resolved by reading the blocks back
 *    (bdev_iscsi_caw_outcome). Commands wait at most hold_ms in all; then
 *    they fail with -ENOTCONN and the bdev is offline (the SCSI layer answers
 *    NOT READY) until a session logs in again.
 *  - Fencing (docs/backend.md, "The gateways' reservation"): sessions
 *    register this node's key while it holds a lease. When the lease comes
 *    back after a gap, or a session finds the key preempted, every reactor
 *    is told at once (ib_poke) and checks its sessions (READ KEYS, or a new
 *    login that registers); until the key is known to be there the bdev
 *    awaits its registration (bdev_awaits_registration, from counters the
 *    reactors keep: rx_recount) and the SCSI layer answers Transitioning.
 */
#include "backend/backend.h"
#include "backend/iscsi_priv.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define IB_COMP "bdev-iscsi"

/* ------------------------------------------------------------------------ */
/* pure helpers (also built without libiscsi: unit tests)                   */

bool bdev_is_iscsi_url(const char *path)
{
	return path && strncmp(path, "iscsi://", 8) == 0;
}

static int url_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
	return -EINVAL;
}

static bool copy_part(char *dst, size_t cap, const char *src, size_t n)
{
	if (n >= cap)
		return false;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return true;
}

int bdev_iscsi_parse_url(const char *url, struct bdev_iscsi_url *out, char *err, size_t errlen)
{
	const char *p, *at, *slash, *hend, *iqn, *lun;
	unsigned long long v;
	char *end;

	memset(out, 0, sizeof(*out));
	out->port = 3260;
	if (!bdev_is_iscsi_url(url))
		return url_err(err, errlen, "not an iscsi:// URL");
	p = url + 8;
	slash = strchr(p, '/');
	if (!slash)
		return url_err(err, errlen, "missing /IQN/LUN after the host");
	/* credentials: user%secret@ before the host (the secret may hold '@') */
	at = NULL;
	for (const char *q = p; q < slash; q++)
		if (*q == '@')
			at = q;
	if (at) {
		const char *pct = memchr(p, '%', (size_t)(at - p));

		if (!pct || pct == p || pct + 1 == at)
			return url_err(err, errlen, "credentials must be user%secret@");
		if (!copy_part(out->user, sizeof(out->user), p, (size_t)(pct - p)) ||
		    !copy_part(out->secret, sizeof(out->secret), pct + 1, (size_t)(at - pct - 1)))
			return url_err(err, errlen, "CHAP user or secret too long");
		p = at + 1;
	}
	/* host, [v6] or name/IPv4, then optional :port */
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(slash - p));

		if (!rb || rb == p + 1)
			return url_err(err, errlen, "bad [IPv6] host");
		if (!copy_part(out->host, sizeof(out->host), p + 1, (size_t)(rb - p - 1)))
			return url_err(err, errlen, "host too long");
		hend = rb + 1;
		if (hend != slash && *hend != ':')
			return url_err(err, errlen, "junk after ]");
	} else {
		hend = memchr(p, ':', (size_t)(slash - p));
		if (!hend)
			hend = slash;
		if (hend == p)
			return url_err(err, errlen, "missing host");
		if (!copy_part(out->host, sizeof(out->host), p, (size_t)(hend - p)))
			return url_err(err, errlen, "host too long");
	}
	if (*hend == ':') {
		char num[8];

		if (!copy_part(num, sizeof(num), hend + 1, (size_t)(slash - hend - 1)) || !num[0])
			return url_err(err, errlen, "bad port");
		errno = 0;
		v = strtoull(num, &end, 10);
		if (errno || *end || v == 0 || v > 65535 || num[0] == '-' || num[0] == '+')
			return url_err(err, errlen, "bad port");
		out->port = (uint16_t)v;
	}
	iqn = slash + 1;
	lun = strrchr(iqn, '/');
	if (!lun || lun == iqn)
		return url_err(err, errlen, "missing IQN or LUN (iscsi://HOST[:PORT]/IQN/LUN)");
	if (!copy_part(out->iqn, sizeof(out->iqn), iqn, (size_t)(lun - iqn)))
		return url_err(err, errlen, "IQN too long");
	if (strchr(out->iqn, '/'))
		return url_err(err, errlen, "IQN contains '/'");
	lun++;
	if (!*lun || *lun < '0' || *lun > '9')
		return url_err(err, errlen, "bad LUN");
	errno = 0;
	v = strtoull(lun, &end, 10);
	if (errno || *end || v > 16383)
		return url_err(err, errlen, "bad LUN (0..16383)");
	out->lun = (uint32_t)v;
	if (strchr(out->host, ':'))
		snprintf(out->portal, sizeof(out->portal), "[%s]:%u", out->host, out->port);
	else
		snprintf(out->portal, sizeof(out->portal), "%s:%u", out->host, out->port);
	return 0;
}

/* Preference of a designator type naming a logical unit; 0: not one that does. */
static int desig_rank(uint8_t type)
{
	switch (type) {
	case 3: return 4;       /* NAA */
	case 2: return 3;       /* EUI-64 */
	case 8: return 2;       /* SCSI name string */
	case 1: return 1;       /* T10 vendor ID */
	default: return 0;      /* relative port, port group, LU group, MD5, UUID, ... */
	}
}

size_t bdev_iscsi_lu_designator(const uint8_t *page, size_t len, uint8_t *out, size_t outlen)
{
	size_t end, best_at = 0, best_len = 0;
	int best = 0;

	if (len < 4 || page[1] != 0x83)
		return 0;
	end = 4 + ((size_t)page[2] << 8 | page[3]);
	if (end > len)
		end = len;     /* truncated: what arrived */
	for (size_t i = 4; i + 4 <= end; i += 4 + (size_t)page[i + 3]) {
		uint8_t assoc = (page[i + 1] >> 4) & 3, type = page[i + 1] & 0xf;
		size_t dl = page[i + 3];

		/* association 0: the logical unit (1: its target port, 2: the target device) */
		if (i + 4 + dl > end || assoc != 0 || dl == 0 || desig_rank(type) <= best)
			continue;
		best = desig_rank(type);
		best_at = i;
		best_len = dl;
	}
	if (!best || 2 + best_len > outlen)
		return 0;
	out[0] = page[best_at + 1] & 0xf;
	out[1] = page[best_at] & 0xf;
	memcpy(out + 2, page + best_at + 4, best_len);
	return 2 + best_len;
}

bool bdev_iscsi_designator_global(const uint8_t *d, size_t len)
{
	if (len < 3)
		return false;
	switch (d[0]) {
	case 2:         /* EUI-64 */
	case 8:         /* SCSI name string */
		return true;
	case 3: {       /* NAA: its type in the first nibble */
		uint8_t naa = d[2] >> 4;

		return naa == 2 || naa == 5 || naa == 6;
	}
	default:
		return false;
	}
}

uint32_t bdev_iscsi_backoff_ms(unsigned int attempt)
{
	uint64_t d = IB_BACKOFF_BASE_MS;

	while (attempt-- && d < IB_BACKOFF_MAX_MS)
		d *= 2;
	return d > IB_BACKOFF_MAX_MS ? IB_BACKOFF_MAX_MS : (uint32_t)d;
}

/* SCSI status values, as libiscsi reports them. */
#define IB_ST_GOOD        0x00
#define IB_ST_CHECK       0x02
#define IB_ST_BUSY        0x08
#define IB_ST_TSF         0x28

enum ib_action bdev_iscsi_classify(int status, uint8_t key, uint8_t asc, uint8_t ascq,
				   bool optional_cmd)
{
	switch (status) {
	case IB_ST_GOOD:
		return IB_DONE;
	case IB_ST_BUSY:
	case IB_ST_TSF:
		return IB_RETRY_LATER;
	case IB_ST_CHECK:
		break;
	default:
		/* RESERVATION CONFLICT, ACA ACTIVE, TASK ABORTED, ...: the host's */
		return status < 0 ? IB_RECONNECT : IB_PASS;
	}
	switch (key) {
	case 0x6:       /* UNIT ATTENTION: the backend's own, not the host's */
		return IB_RETRY;
	case 0x2:       /* NOT READY: becoming ready, restarting, ... */
		return IB_RETRY_LATER;
	case 0xb:       /* ABORTED COMMAND: e.g. a backend-side transport hiccup */
		return IB_RETRY_LATER;
	case 0x5:       /* ILLEGAL REQUEST */
		if (asc == 0x25 && ascq == 0x00)
			return IB_RETRY_LATER;  /* LUN gone: wait for it within the hold */
		if (optional_cmd && ((asc == 0x20 && ascq == 0x00) || asc == 0x24))
			return IB_UNSUPPORTED;
		return IB_PASS;
	default:
		return IB_PASS;
	}
}

static int iov_cmp(const struct iovec *iov, int iovcnt, uint64_t skip, const uint8_t *buf,
		   uint64_t len, uint64_t *first_diff)
{
	uint64_t pos = 0;

	for (int i = 0; i < iovcnt && pos < len; i++) {
		const uint8_t *b = iov[i].iov_base;
		uint64_t l = iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		b += skip;
		l -= skip;
		skip = 0;
		if (l > len - pos)
			l = len - pos;
		if (memcmp(b, buf + pos, l) != 0) {
			for (uint64_t k = 0; k < l; k++) {
				if (b[k] != buf[pos + k]) {
					*first_diff = pos + k;
					return 1;
				}
			}
		}
		pos += l;
	}
	return 0;
}

int bdev_iscsi_iov_slice(const struct iovec *iov, int iovcnt, uint64_t off, uint64_t len,
			 struct iovec *out)
{
	uint64_t pos = 0;
	int n = 0;

	for (int i = 0; i < iovcnt && len; i++) {
		uint64_t l = iov[i].iov_len, skip, take;

		if (pos + l <= off) {
			pos += l;
			continue;
		}
		skip = off > pos ? off - pos : 0;
		take = l - skip < len ? l - skip : len;
		out[n].iov_base = (uint8_t *)iov[i].iov_base + skip;
		out[n].iov_len = take;
		n++;
		off += take;
		len -= take;
		pos += l;
	}
	return n;
}

enum ib_caw_outcome bdev_iscsi_caw_outcome(const uint8_t *disk, const struct iovec *iov, int iovcnt,
					   uint64_t len, uint64_t *miscompare_off)
{
	uint64_t d = 0;

	if (iov_cmp(iov, iovcnt, len, disk, len, &d) == 0)
		return IB_CAW_APPLIED;
	if (iov_cmp(iov, iovcnt, 0, disk, len, &d) == 0)
		return IB_CAW_REISSUE;
	*miscompare_off = d;
	return IB_CAW_MISCOMPARE;
}

#define IB_ST_RESV_CONFLICT 0x18
#define IB_PR_OUT_RESERVE   1
#define IB_PR_OUT_PREEMPT   4

enum ib_pr_outcome bdev_iscsi_pr_outcome(int sa, int status, uint8_t key, uint8_t asc)
{
	(void)asc;
	if (status == IB_ST_GOOD)
		return IB_PR_OK;
	if (status == IB_ST_RESV_CONFLICT) {
		/*
		 * PREEMPT: the key to preempt is registered nowhere (another
		 * survivor was first). RESERVE: another registrant holds the
		 * reservation. Anything else (REGISTER AND IGNORE EXISTING KEY
		 * never conflicts) is a failure.
		 */
		return sa == IB_PR_OUT_PREEMPT || sa == IB_PR_OUT_RESERVE ? IB_PR_ALREADY
									  : IB_PR_FAIL;
	}
	if (status != IB_ST_CHECK)
		return IB_PR_FAIL;
	if (key == 0x6)
		return IB_PR_RETRY;
	if (key == 0x5)         /* INVALID COMMAND OPERATION CODE, INVALID FIELD, ... */
		return IB_PR_UNSUPPORTED;
	return IB_PR_FAIL;
}

void bdev_iscsi_fenced_sense(uint8_t sense[IB_FENCED_SENSE_LEN])
{
	memset(sense, 0, IB_FENCED_SENSE_LEN);
	sense[0] = 0x70;        /* current, fixed format */
	sense[2] = 0x02;        /* NOT READY */
	sense[7] = 10;
	sense[12] = 0x04;       /* LOGICAL UNIT NOT ACCESSIBLE, */
	sense[13] = 0x0c;       /* TARGET PORT IN UNAVAILABLE STATE */
}

bool bdev_iscsi_awaits_registration(bool fencing, unsigned int up_unregistered,
				    unsigned int registered, uint32_t confirmed_gen,
				    uint32_t lease_gen)
{
	if (!fencing)
		return false;
	return up_unregistered > 0 || (registered > 0 && confirmed_gen != lease_gen);
}

#ifndef ISERGW_HAVE_LIBISCSI

void bdev_iscsi_lease_regaining(void)
{
}

void bdev_iscsi_lease_regained(void)
{
}

void bdev_iscsi_fence_setup(uint64_t key, bool (*may_register)(void))
{
	(void)key;
	(void)may_register;
}

int bdev_iscsi_fence(struct bdev *b, const uint64_t *keys, size_t n, uint32_t timeout_ms)
{
	(void)b;
	(void)keys;
	(void)n;
	(void)timeout_ms;
	return -EINVAL;
}

int bdev_iscsi_open(const struct bdev_iscsi_params *p, struct bdev **out)
{
	(void)p;
	*out = NULL;
	GW_ERR(IB_COMP, "iscsi:// backstores need libiscsi, which this build lacks");
	return -EPROTONOSUPPORT;
}

int bdev_iscsi_get_stats(struct bdev *b, struct bdev_iscsi_stats *out)
{
	(void)b;
	(void)out;
	return -EINVAL;
}

#else /* ISERGW_HAVE_LIBISCSI */

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdatomic.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "common/list.h"
#include "common/reactor.h"

#define IB_MAX_REACTORS   256u
#define IB_TICK_IDLE_MS   1000u
#define IB_TICK_BUSY_MS   50u
#define IB_RETRY_LATER_MS 100u
#define IB_MAX_UA_RETRIES 8u
#define IB_DEFAULT_INITIATOR "iqn.2026-11.org.isergw:gateway"
#define IB_ZERO_BLOCK     65536u        /* largest block size we accept from a backend */
#define IB_MAX_BS         IB_ZERO_BLOCK

_Static_assert(sizeof(struct scsi_iovec) == sizeof(struct iovec) &&
	       offsetof(struct scsi_iovec, iov_base) == offsetof(struct iovec, iov_base) &&
	       offsetof(struct scsi_iovec, iov_len) == offsetof(struct iovec, iov_len),
	       "libiscsi's scsi_iovec must be struct iovec");

struct ib_bdev;
struct ib_rx;

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
	bool kick;              /* commands queued since the last write */
	bool in_service;
	bool ever_up;
	bool registered;        /* our reservation key is registered through this session */
	uint32_t reg_epoch;     /* ib->fence_epoch when it registered */
	uint32_t reg_gen;       /* g_lease_gen when it began to register */
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
	unsigned int nwait;
	/* fencing: its share of ib->n_up_unreg and ib->n_reg (rx_recount) */
	unsigned int c_up_unreg, c_reg;
	bool keys_pending;              /* a READ KEYS of rx_check_keys is out */
	uint8_t keys_ua;                /* unit attentions to it in a row */
	uint32_t keys_gen, keys_seq;    /* g_lease_gen and ib->reg_seq when it was sent */
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
	 * g_lease_gen in which the key was last known registered, and a count
	 * of registrations (a READ KEYS that saw one happen proves nothing).
	 */
	atomic_uint n_up_unreg, n_reg;
	_Atomic uint32_t ok_gen;
	_Atomic uint32_t reg_seq;
	struct list_head all_link;      /* g_ibs */
	_Atomic uint32_t odd_answer;    /* last backend answer logged by note_odd_answer */
	pthread_mutex_t lock;
	bdev_listener_fn listener;
	void *listener_arg;
	/* discovery in the background while the backend is unreachable */
	pthread_t disc_thread;
	bool disc_running;
	atomic_bool disc_stop;
	pthread_cond_t disc_cond;
	_Atomic(struct ib_rx *) rx[IB_MAX_REACTORS];
	/* counters */
	atomic_uint_fast64_t n_commands, n_retries, n_reconnects, n_connect_fail, n_expired;
	atomic_uint_fast64_t lat_sum_us, lat_max_us;
};

static const struct bdev_ops iscsi_ops;

/* This node's reservation key (0: no fencing) and when it may register it. */
static _Atomic uint64_t g_pr_key;
static bool (*_Atomic g_may_register)(void);
/* Bumped each time the node holds a lease again after a time without one. */
static _Atomic uint32_t g_lease_gen = 1;
/* Every open iscsi bdev, for bdev_iscsi_lease_regained(). */
static pthread_mutex_t g_ibs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head g_ibs = { &g_ibs, &g_ibs };

void bdev_iscsi_fence_setup(uint64_t key, bool (*may_register)(void))
{
	uint64_t old = atomic_exchange(&g_pr_key, key);

	atomic_store(&g_may_register, may_register);
	if (old != key && key)
		GW_NOTICE(IB_COMP, "backend reservation key 0x%016" PRIx64 ": iscsi:// LUNs are "
			  "fenced by persistent reservation", key);
	else if (old != key)
		GW_NOTICE(IB_COMP, "no backend reservation key (was 0x%016" PRIx64 "): iscsi:// "
			  "sessions register nothing from now on", old);
}

static bool fence_key_set(const struct ib_bdev *ib)
{
	return atomic_load(&g_pr_key) && !atomic_load(&ib->pr_unsupported);
}

static bool fence_may_register(void)
{
	bool (*fn)(void) = atomic_load(&g_may_register);

	return !fn || fn();
}

/* Moves all of `from` (in order) to the front of `to`. */
static void list_splice_head(struct list_head *from, struct list_head *to)
{
	if (list_empty(from))
		return;
	from->prev->next = to->next;
	to->next->prev = from->prev;
	to->next = from->next;
	from->next->prev = to;
	list_init(from);
}

static struct ib_bdev *to_ib(struct bdev *b)
{
	return container_of(b, struct ib_bdev, bdev);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint32_t fnv1a(uint32_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 16777619u;
	}
	return h;
}

static void ctx_log(int level, const char *msg)
{
	GW_DEBUG(IB_COMP, "libiscsi[%d]: %s", level, msg);
}

/* ------------------------------------------------------------------------ */
/* requests                                                                 */

static struct ib_req *req_alloc(struct ib_rx *rx)
{
	struct ib_req *q = rx->free_reqs;

	if (q)
		rx->free_reqs = q->next_free;
	else if (!(q = malloc(sizeof(*q))))
		return NULL;
	memset(q, 0, sizeof(*q));
	q->rx = rx;
	q->epoch = atomic_load_explicit(&rx->ib->fence_epoch, memory_order_relaxed);
	list_init(&q->link);
	return q;
}

static void req_free(struct ib_req *q)
{
	struct ib_rx *rx = q->rx;

	free(q->bounce);
	q->next_free = rx->free_reqs;
	rx->free_reqs = q;
}

static const char *req_name(const struct ib_req *q)
{
	if (q->kind == RK_PROBE)
		return "probe";
	if (q->kind == RK_CAW_CHECK)
		return "compare-and-write check";
	switch (q->io->op) {
	case BDEV_OP_READ: return "read";
	case BDEV_OP_WRITE:
		return (q->io->flags & BDEV_IO_COMPARE_AND_WRITE) ? "compare-and-write" : "write";
	case BDEV_OP_FLUSH: return "flush";
	case BDEV_OP_UNMAP: return "unmap";
	case BDEV_OP_WRITE_ZEROES: return "write-same";
	}
	return "?";
}

/* Completes a host I/O now (we are in an fd/timer/deferred handler). */
static void req_finish(struct ib_req *q, int result)
{
	struct bdev_io *io = q->io;

	req_free(q);
	io->result = result;
	io->cb(io);
}

static void req_set_answer(struct bdev_io *io, uint8_t status, const uint8_t *sense, size_t len)
{
	io->scsi_status = status;
	io->sense_len = 0;
	if (!io->sense || !sense)
		return;
	if (len > BDEV_SENSE_MAX)
		len = BDEV_SENSE_MAX;
	memcpy(io->sense, sense, len);
	io->sense_len = (uint8_t)len;
}

/* ------------------------------------------------------------------------ */
/* sessions                                                                 */

static void rx_pump(struct ib_rx *rx);
static void rx_recount(struct ib_rx *rx);
static void rx_check_keys(struct ib_rx *rx);
static void ib_poke(struct ib_bdev *ib);
static void sess_connect(struct ib_sess *s);
static void sess_teardown(struct ib_sess *s);
static void rx_arm_tick(struct ib_rx *rx);
static void sess_fd_cb(void *arg, uint32_t events);

static void sess_update_events(struct ib_sess *s)
{
	struct ib_rx *rx = s->rx;
	uint32_t ev;
	int fd;

	if (!s->ctx)
		return;
	fd = iscsi_get_fd(s->ctx);
	ev = (uint32_t)iscsi_which_events(s->ctx) & (EPOLLIN | EPOLLOUT);
	if (s->fd_added && fd != s->fd) {
		reactor_del_fd(rx->r, &s->fdh);
		s->fd_added = false;
	}
	if (fd < 0)
		return;
	if (!s->fd_added) {
		if (reactor_add_fd(rx->r, &s->fdh, fd, ev, sess_fd_cb, s) == 0) {
			s->fd_added = true;
			s->fd = fd;
			s->events = ev;
		}
		return;
	}
	if (ev != s->events && reactor_mod_fd(rx->r, &s->fdh, ev) == 0)
		s->events = ev;
}

/* After iscsi_service: tear down a broken session, refresh the fd events. */
static void sess_after_service(struct ib_sess *s, int rc)
{
	if (rc < 0 && s->ctx && !s->broken) {
		snprintf(s->last_err, sizeof(s->last_err), "%s", iscsi_get_error(s->ctx));
		s->broken = true;
	}
	if (s->broken) {
		sess_teardown(s);
		rx_pump(s->rx);
		return;
	}
	sess_update_events(s);
}

static void sess_fd_cb(void *arg, uint32_t events)
{
	struct ib_sess *s = arg;
	int rc;

	if (!s->ctx)
		return;
	s->in_service = true;
	rc = iscsi_service(s->ctx, (int)(events & (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP)));
	s->in_service = false;
	sess_after_service(s, rc);
}

static void sess_mark_broken(struct ib_sess *s, const char *why)
{
	if (s->broken)
		return;
	s->broken = true;
	snprintf(s->last_err, sizeof(s->last_err), "%s", why);
}

static void reconnect_cb(void *arg)
{
	sess_connect(arg);
}

/*
 * Destroys the session's context (its commands come back to the head of the
 * wait queue, in order) and schedules a reconnect. Never called from inside
 * iscsi_service() of this context.
 */
static void sess_teardown(struct ib_sess *s)
{
	struct ib_rx *rx = s->rx;
	struct ib_bdev *ib = rx->ib;
	struct list_head back;
	struct iscsi_context *ctx = s->ctx;
	bool was_up = s->state == S_UP;

	if (!ctx)
		return;
	if (s->fd_added) {
		reactor_del_fd(rx->r, &s->fdh);
		s->fd_added = false;
	}
	if (!list_empty(&s->kick_link)) {
		list_del(&s->kick_link);
		list_init(&s->kick_link);
	}
	s->ctx = NULL;
	s->state = S_DOWN;
	s->broken = false;
	/* callbacks during destroy see ctx == NULL and leave requests alone */
	iscsi_destroy_context(ctx);
	list_init(&back);
	while (!list_empty(&s->inflight)) {
		struct ib_req *q = list_first_entry(&s->inflight, struct ib_req, link);

		list_del(&q->link);
		if (q->task) {
			scsi_free_scsi_task(q->task);
			q->task = NULL;
		}
		q->sess = NULL;
		s->ninflight--;
		if (q->kind == RK_PROBE) {
			req_free(q);
			continue;
		}
		if (q->io && (q->io->flags & BDEV_IO_COMPARE_AND_WRITE) && q->kind == RK_IO)
			q->caw_unknown = true;
		atomic_fetch_add(&ib->n_retries, 1);
		list_add_tail(&q->link, &back);
		rx->nwait++;
	}
	list_splice_head(&back, &rx->wait);
	if (was_up) {
		s->down_since_ms = gw_now_ms();
		GW_WARN(IB_COMP, "%s: backend session %u on reactor %u lost (%s): reconnecting",
			ib->bdev.name, s->idx, reactor_index(rx->r), s->last_err);
	} else {
		atomic_fetch_add(&ib->n_connect_fail, 1);
		if (s->attempt == 0 || s->attempt % 20 == 0)
			GW_ERR(IB_COMP, "%s: cannot log in to the backend %s (session %u, try %u): %s",
			       ib->bdev.name, ib->url.portal, s->idx, s->attempt + 1, s->last_err);
		s->attempt++;
	}
	reactor_timer_arm(rx->r, &s->reconnect, was_up ? 0 : bdev_iscsi_backoff_ms(s->attempt - 1));
	rx->keys_pending = false;       /* its READ KEYS, if any, was dropped with it */
	rx_recount(rx);
	rx_arm_tick(rx);
}

static void probe_cb(struct iscsi_context *ctx, int status, void *data, void *priv);
static void ib_set_geometry_locked(struct ib_bdev *ib, uint64_t nblocks, uint32_t bs);
static void sess_up(struct ib_sess *s);
static void pr_cb(struct iscsi_context *ctx, int status, void *data, void *priv);

/* A probe request of session s, or NULL (out of memory). */
static struct ib_req *probe_req(struct ib_sess *s)
{
	struct ib_req *q = req_alloc(s->rx);

	if (q) {
		q->kind = RK_PROBE;
		q->sess = s;
	}
	return q;
}

/* The probe's task t (NULL: not issued) in flight on s: true, or false with q freed. */
static bool probe_track(struct ib_sess *s, struct ib_req *q, struct scsi_task *t)
{
	if (!t) {
		req_free(q);
		return false;
	}
	q->task = t;
	list_add_tail(&q->link, &s->inflight);
	s->ninflight++;
	return true;
}

/* One PERSISTENT RESERVE OUT step of a session's registration (a probe request). */
static void sess_pr_out(struct ib_sess *s, int sa, uint8_t ua_retries)
{
	struct ib_rx *rx = s->rx;
	struct ib_req *q = probe_req(s);
	struct scsi_persistent_reserve_out_basic p = { 0 };
	struct scsi_task *t;

	if (!q) {
		sess_mark_broken(s, "out of memory");
		return;
	}
	q->pr_step = (uint8_t)sa;
	q->ua_retries = ua_retries;
	/* registering: the new key in SERVICE ACTION RESERVATION KEY; reserving: ours */
	if (sa == SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY)
		p.service_action_reservation_key = atomic_load(&g_pr_key);
	else
		p.reservation_key = atomic_load(&g_pr_key);
	t = iscsi_persistent_reserve_out_task(s->ctx, (int)rx->ib->url.lun, sa,
					      SCSI_PERSISTENT_RESERVE_SCOPE_LU, IB_PR_TYPE, &p, pr_cb, q);
	if (!probe_track(s, q, t))
		sess_mark_broken(s, iscsi_get_error(s->ctx));
}

/*
 * After READ CAPACITY: register this node's key and reserve the LUN when a
 * key is set and the node may (a valid lease); otherwise the session serves
 * unregistered (on a reserved LUN its writes are refused, which is the
 * point for a node without a lease).
 */
static void sess_register(struct ib_sess *s)
{
	struct ib_bdev *ib = s->rx->ib;

	s->registered = false;
	s->reg_gen = atomic_load(&g_lease_gen);
	if (!fence_key_set(ib)) {
		sess_up(s);
		return;
	}
	if (!fence_may_register()) {
		atomic_store(&ib->gate_closed_seen, true);
		GW_INFO(IB_COMP, "%s: backend session %u on reactor %u: no valid lease, not "
			"registering the reservation key", ib->bdev.name, s->idx,
			reactor_index(s->rx->r));
		sess_up(s);
		return;
	}
	/*
	 * The node was without a lease since it last registered: it may have
	 * been fenced meanwhile without seeing it. Nothing submitted before
	 * this registration may be written through it.
	 */
	if (atomic_load(&ib->ever_registered) && atomic_exchange(&ib->gate_closed_seen, false)) {
		atomic_fetch_add(&ib->fence_epoch, 1);
		atomic_store(&ib->ok_gen, 0);
		GW_NOTICE(IB_COMP, "%s: registering again after a time without a lease: commands "
			  "from before fail NOT READY 04/0C", ib->bdev.name);
		ib_poke(ib);    /* the other sessions' registrations are of the old epoch */
	}
	sess_pr_out(s, SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY, 0);
}

static void pr_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct ib_req *q = priv;
	struct ib_sess *s = q->sess;
	struct ib_bdev *ib = q->rx->ib;
	struct scsi_task *t = data ? data : q->task;
	int sa = q->pr_step;
	uint8_t key = 0, asc = 0, ascq = 0, ua = q->ua_retries;

	(void)ctx;
	if (!s || !s->ctx)
		return;         /* teardown in progress: it frees q */
	list_del(&q->link);
	s->ninflight--;
	q->task = NULL;
	if (status == SCSI_STATUS_CHECK_CONDITION && t) {
		key = (uint8_t)t->sense.key;
		asc = (uint8_t)(t->sense.ascq >> 8);
		ascq = (uint8_t)t->sense.ascq;
	}
	if (t)
		scsi_free_scsi_task(t);
	req_free(q);
	if (status < 0) {
		sess_mark_broken(s, "persistent reserve out: no answer");
		return;
	}
	switch (bdev_iscsi_pr_outcome(sa, status, key, asc)) {
	case IB_PR_RETRY:
		if (ua < IB_MAX_UA_RETRIES) {
			sess_pr_out(s, sa, (uint8_t)(ua + 1));
			return;
		}
		/* fall through */
	case IB_PR_FAIL:
		GW_WARN(IB_COMP, "%s: backend refused PERSISTENT RESERVE OUT (service action %d): "
			"status 0x%x sense %x/%02x/%02x: logging in again", ib->bdev.name, sa, status,
			key, asc, ascq);
		sess_mark_broken(s, "persistent reservation refused");
		return;
	case IB_PR_UNSUPPORTED:
		if (!atomic_exchange(&ib->pr_unsupported, true))
			GW_WARN(IB_COMP, "%s: the backend does not do persistent reservations (sense "
				"%x/%02x/%02x to service action %d): no fencing at the backend for "
				"this LUN, the lease is the only guard against a stale node's writes",
				ib->bdev.name, key, asc, ascq, sa);
		sess_up(s);
		return;
	case IB_PR_OK:
	case IB_PR_ALREADY:
		break;
	}
	if (sa == SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY) {
		sess_pr_out(s, SCSI_PERSISTENT_RESERVE_RESERVE, 0);
		return;
	}
	s->registered = true;
	s->reg_epoch = atomic_load(&ib->fence_epoch);
	atomic_fetch_add(&ib->reg_seq, 1);
	/* the first registration proves the key is there; with others, READ KEYS does */
	if (atomic_load(&ib->n_reg) == 0)
		atomic_store(&ib->ok_gen, s->reg_gen);
	if (atomic_exchange(&ib->fenced_seen, false))
		GW_NOTICE(IB_COMP, "%s: registered reservation key 0x%016" PRIx64 " again: this "
			  "node holds a lease again after it was fenced", ib->bdev.name,
			  atomic_load(&g_pr_key));
	if (!atomic_exchange(&ib->ever_registered, true))
		GW_NOTICE(IB_COMP, "%s: registered reservation key 0x%016" PRIx64 " with the "
			  "backend (%s)", ib->bdev.name, atomic_load(&g_pr_key),
			  status == SCSI_STATUS_GOOD ? "reserved it, WRITE EXCLUSIVE - REGISTRANTS ONLY"
			  : "already reserved");
	sess_up(s);
}

static void sess_probe(struct ib_sess *s)
{
	struct ib_req *q = probe_req(s);

	if (!q) {
		sess_mark_broken(s, "out of memory");
		return;
	}
	if (!probe_track(s, q, iscsi_readcapacity16_task(s->ctx, (int)s->rx->ib->url.lun,
							 probe_cb, q)))
		sess_mark_broken(s, iscsi_get_error(s->ctx));
}

static void sess_up(struct ib_sess *s)
{
	struct ib_rx *rx = s->rx;
	struct ib_bdev *ib = rx->ib;

	s->state = S_UP;
	if (s->ever_up) {
		atomic_fetch_add(&ib->n_reconnects, 1);
		GW_NOTICE(IB_COMP, "%s: backend session %u on reactor %u up again after %" PRIu64 " ms",
			  ib->bdev.name, s->idx, reactor_index(rx->r), gw_now_ms() - s->down_since_ms);
	} else if (s->attempt) {
		GW_NOTICE(IB_COMP, "%s: backend session %u on reactor %u up after %u failed tries",
			  ib->bdev.name, s->idx, reactor_index(rx->r), s->attempt);
	} else {
		GW_INFO(IB_COMP, "%s: backend session %u on reactor %u up", ib->bdev.name, s->idx,
			reactor_index(rx->r));
	}
	s->ever_up = true;
	s->attempt = 0;
	if (atomic_exchange(&ib->bdev.offline, false))
		GW_NOTICE(IB_COMP, "%s: backend reachable again: LUN online", ib->bdev.name);
	atomic_store(&ib->offline_logged, false);
	rx_recount(rx);
	rx_check_keys(rx);      /* registered beside sessions not yet known to be */
	rx_pump(rx);
}

static void probe_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct ib_req *q = priv;
	struct ib_sess *s = q->sess;
	struct ib_rx *rx = q->rx;
	struct ib_bdev *ib = rx->ib;
	struct scsi_task *t = data ? data : q->task;
	struct scsi_readcapacity16 *rc16;

	(void)ctx;
	if (!s || !s->ctx)
		return;         /* teardown in progress: it frees q */
	list_del(&q->link);
	s->ninflight--;
	q->task = NULL;
	if (status == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_UNIT_ATTENTION &&
	    q->ua_retries++ < IB_MAX_UA_RETRIES) {
		scsi_free_scsi_task(t);
		req_free(q);
		sess_probe(s);
		return;
	}
	if (status != SCSI_STATUS_GOOD) {
		char why[200];

		if (status == SCSI_STATUS_CHECK_CONDITION)
			snprintf(why, sizeof(why), "backend LUN %u: READ CAPACITY sense %x/%02x/%02x",
				 ib->url.lun, t->sense.key, t->sense.ascq >> 8, t->sense.ascq & 0xff);
		else
			snprintf(why, sizeof(why), "READ CAPACITY status 0x%x", status);
		if (t)
			scsi_free_scsi_task(t);
		req_free(q);
		sess_mark_broken(s, why);
		return;
	}
	rc16 = scsi_datain_unmarshall(t);
	if (!rc16 || rc16->block_length != atomic_load(&ib->bs) || rc16->returned_lba == UINT64_MAX) {
		/* a new block size would change the meaning of every LBA: refuse it */
		char why[200];

		snprintf(why, sizeof(why),
			 "backend LUN block size changed: %" PRIu64 " blocks of %u, expected blocks "
			 "of %u", rc16 ? rc16->returned_lba + 1 : 0, rc16 ? rc16->block_length : 0,
			 atomic_load(&ib->bs));
		scsi_free_scsi_task(t);
		req_free(q);
		sess_mark_broken(s, why);
		return;
	}
	if (rc16->returned_lba + 1 != atomic_load(&ib->nblocks)) {
		uint64_t old;

		/* resized (or never known): adopt it, the listener raises the unit attention */
		pthread_mutex_lock(&ib->lock);
		old = atomic_load(&ib->nblocks);
		ib_set_geometry_locked(ib, rc16->returned_lba + 1, rc16->block_length);
		pthread_mutex_unlock(&ib->lock);
		GW_WARN(IB_COMP, "%s: the backend LUN now has %" PRIu64 " blocks (was %" PRIu64
			"): capacity data has changed", ib->bdev.name, rc16->returned_lba + 1, old);
	}
	scsi_free_scsi_task(t);
	req_free(q);
	sess_register(s);
}

static void login_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct ib_sess *s = priv;

	(void)data;
	if (s->ctx != ctx)
		return;
	if (status != SCSI_STATUS_GOOD) {
		sess_mark_broken(s, iscsi_get_error(ctx));
		return;
	}
	s->state = S_PROBING;
	sess_probe(s);
}

static void sess_connect(struct ib_sess *s)
{
	struct ib_rx *rx = s->rx;
	struct ib_bdev *ib = rx->ib;
	struct iscsi_context *ctx;

	if (s->ctx)
		return;
	s->broken = false;
	ctx = iscsi_create_context(ib->initiator);
	if (!ctx) {
		snprintf(s->last_err, sizeof(s->last_err), "cannot create a libiscsi context");
		s->attempt++;
		reactor_timer_arm(rx->r, &s->reconnect, bdev_iscsi_backoff_ms(s->attempt));
		return;
	}
	iscsi_set_log_fn(ctx, ctx_log);
	iscsi_set_targetname(ctx, ib->url.iqn);
	iscsi_set_session_type(ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(ctx, ISCSI_HEADER_DIGEST_NONE);
	iscsi_set_noautoreconnect(ctx, 1);
	iscsi_set_timeout(ctx, (int)ib->cmd_timeout_s);
	iscsi_set_isid_random(ctx, ib->isid_rnd,
			      (reactor_index(rx->r) * 64u + s->idx) & 0xffffu);
	iscsi_set_tcp_keepidle(ctx, 5);
	iscsi_set_tcp_keepintvl(ctx, 2);
	iscsi_set_tcp_keepcnt(ctx, 3);
	if (ib->url.user[0])
		iscsi_set_initiator_username_pwd(ctx, ib->url.user, ib->url.secret);
	s->ctx = ctx;
	s->state = S_CONNECTING;
	s->connect_start_ms = gw_now_ms();
	if (iscsi_full_connect_async(ctx, ib->url.portal, (int)ib->url.lun, login_cb, s) != 0) {
		snprintf(s->last_err, sizeof(s->last_err), "%s", iscsi_get_error(ctx));
		s->broken = true;
		sess_teardown(s);
		return;
	}
	sess_update_events(s);
}

/* ------------------------------------------------------------------------ */
/* commands                                                                 */

static void cmd_cb(struct iscsi_context *ctx, int status, void *data, void *priv);
static void req_fail_fenced(struct ib_req *q);

static void rx_defer(struct ib_rx *rx)
{
	reactor_defer(rx->r, &rx->flush);
}

static void req_defer_result(struct ib_req *q, int result)
{
	q->deferred_result = result;
	list_add_tail(&q->link, &q->rx->done);
	rx_defer(q->rx);
}

static void req_requeue(struct ib_req *q, uint64_t delay_ms)
{
	struct ib_rx *rx = q->rx;

	q->not_before_ms = delay_ms ? gw_now_ms() + delay_ms : 0;
	list_add_tail(&q->link, &rx->requeue);
	rx->nwait++;
	atomic_fetch_add(&rx->ib->n_retries, 1);
	rx_defer(rx);
}

static struct ib_sess *pick_session(struct ib_rx *rx)
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

static void sess_kick(struct ib_sess *s)
{
	if (list_empty(&s->kick_link))
		list_add_tail(&s->kick_link, &s->rx->kicks);
	rx_defer(s->rx);
}

/* Issues q on s. On failure q goes back to the queue (or fails, deferred). */
static void sess_issue(struct ib_sess *s, struct ib_req *q)
{
	struct ib_rx *rx = s->rx;
	struct scsi_iovec *iov;
	struct scsi_task *t;
	struct iscsi_data d = { 0 };
	uint8_t cdb[16];
	uint32_t xfer;
	int cdb_len, iovcnt, dir;

	if (q->kind != RK_PROBE &&
	    q->epoch != atomic_load_explicit(&rx->ib->fence_epoch, memory_order_relaxed)) {
		/* submitted before this node found itself fenced: never write it now */
		req_fail_fenced(q);
		req_defer_result(q, -EREMOTEIO);
		return;
	}
	dir = build_cdb(q, cdb, &cdb_len, &xfer, &iov, &iovcnt);
	if (dir < 0) {
		req_defer_result(q, -EINVAL);
		return;
	}
	t = scsi_create_task(cdb_len, cdb, dir, (int)xfer);
	if (!t) {
		req_defer_result(q, -ENOMEM);
		return;
	}
	if (q->kind == RK_CAW_CHECK) {
		if (scsi_task_add_data_in_buffer(t, (int)q->io->len, q->bounce) != 0) {
			scsi_free_scsi_task(t);
			req_defer_result(q, -ENOMEM);
			return;
		}
	} else if (q->io->op == BDEV_OP_UNMAP) {
		d.data = q->param;
		d.size = xfer;
	} else if (q->io->op == BDEV_OP_WRITE_ZEROES) {
		d.data = rx->ib->zero_block;
		d.size = xfer;
	} else if (dir == SCSI_XFER_READ) {
		scsi_task_set_iov_in(t, iov, iovcnt);       /* Data-In lands in the caller's buffer */
	} else if (dir == SCSI_XFER_WRITE) {
		scsi_task_set_iov_out(t, iov, iovcnt);      /* sent from the caller's buffer */
	}
	q->task = t;
	q->sess = s;
	if (iscsi_scsi_command_async(s->ctx, (int)rx->ib->url.lun, t, cmd_cb, d.data ? &d : NULL,
				     q) != 0) {
		q->task = NULL;
		q->sess = NULL;
		scsi_free_scsi_task(t);
		sess_mark_broken(s, iscsi_get_error(s->ctx));
		req_requeue(q, 0);
		return;
	}
	q->issue_us = now_us();
	list_add_tail(&q->link, &s->inflight);
	s->ninflight++;
	sess_kick(s);
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
	GW_WARN(IB_COMP, "%s: backend answers %s with %s: %s", ib->bdev.name, req_name(q), what,
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
		req_finish(q, 0);
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
	req_set_answer(io, 0x02, sense, sizeof(sense));
	req_finish(q, -EREMOTEIO);
}

/* A command this node may no longer have written: NOT READY 04/0C to the host. */
static void req_fail_fenced(struct ib_req *q)
{
	uint8_t sense[IB_FENCED_SENSE_LEN];

	bdev_iscsi_fenced_sense(sense);
	req_set_answer(q->io, 0x02, sense, sizeof(sense));
}

/*
 * The backend answered RESERVATION CONFLICT while we use a reservation key:
 * this node's key was preempted (it was fenced by the others), or the session
 * serves unregistered because the node had no lease. When the session was
 * registered, everything submitted so far fails (the epoch); an unregistered
 * one came up without a lease, and its registration will advance the epoch
 * (sess_register). Either way it registers again only once the node holds a
 * lease again (rx_tick).
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
		       "with a valid lease", ib->bdev.name, req_name(q), q->io->offset);
		rx_recount(q->rx);
		ib_poke(ib);    /* every session registers again now, not at its next tick */
	} else if (!atomic_exchange(&ib->fenced_seen, true)) {
		GW_ERR(IB_COMP, "%s: backend answers %s at offset %" PRIu64 " with RESERVATION "
		       "CONFLICT: this node is not registered (no valid lease): failing its "
		       "commands NOT READY 04/0C", ib->bdev.name, req_name(q), q->io->offset);
	}
	req_fail_fenced(q);
	req_finish(q, -EREMOTEIO);
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
		scsi_free_scsi_task(t);
		if (q->kind == RK_IO && (q->io->flags & BDEV_IO_COMPARE_AND_WRITE))
			q->caw_unknown = true;
		if (status == SCSI_STATUS_TIMEOUT)
			GW_WARN(IB_COMP, "%s: backend %s timed out after %u s: dropping the session",
				ib->bdev.name, req_name(q), ib->cmd_timeout_s);
		sess_mark_broken(s, status == SCSI_STATUS_TIMEOUT ? "command timed out"
				    : iscsi_get_error(ctx));
		req_requeue(q, 0);
		return;
	}
	if (status == SCSI_STATUS_RESERVATION_CONFLICT && q->kind == RK_IO && fence_key_set(ib)) {
		scsi_free_scsi_task(t);
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
		scsi_free_scsi_task(t);
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
		req_finish(q, 0);
		return;
	case IB_RETRY:
		GW_INFO(IB_COMP, "%s: backend unit attention %02x/%02x on %s: issuing it again",
			ib->bdev.name, asc, ascq, req_name(q));
		scsi_free_scsi_task(t);
		req_requeue(q, 0);
		if (asc == 0x2a && ascq == 0x09) {
			/* log in again: the probe reads the new capacity and adopts it */
			GW_WARN(IB_COMP, "%s: the backend reports a capacity change: reconnecting "
				"to read it", ib->bdev.name);
			sess_mark_broken(s, "backend capacity changed");
		}
		return;
	case IB_RETRY_LATER:
		if (q->not_before_ms == 0)      /* once per command, not every 100 ms */
			GW_INFO(IB_COMP, "%s: backend answered %s to %s (status 0x%x, sense %x/%02x/%02x): "
			"retrying", ib->bdev.name, status == SCSI_STATUS_CHECK_CONDITION ? "not now"
			: "busy", req_name(q), status, key, asc, ascq);
		scsi_free_scsi_task(t);
		if (q->kind == RK_IO && atomic_load_explicit(&ib->bdev.offline, memory_order_relaxed)) {
			/* held once to the limit already: answer NOT READY at once until GOOD */
			req_finish(q, -ENOTCONN);
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
		scsi_free_scsi_task(t);
		req_finish(q, -EOPNOTSUPP);
		return;
	case IB_PASS:
	case IB_RECONNECT:
	default: {
		size_t slen = 0;
		const uint8_t *sn = status == SCSI_STATUS_CHECK_CONDITION ? task_sense(t, &slen) : NULL;

		GW_INFO(IB_COMP, "%s: backend %s at offset %" PRIu64 ": status 0x%x sense %x/%02x/%02x",
			ib->bdev.name, req_name(q), q->io->offset, status, key, asc, ascq);
		req_set_answer(q->io, (uint8_t)status, sn, slen);
		scsi_free_scsi_task(t);
		req_finish(q, -EREMOTEIO);
		return;
	}
	}
}

/* ------------------------------------------------------------------------ */
/* per-reactor state                                                        */

static void rx_pump(struct ib_rx *rx)
{
	struct list_head *pos, *n;
	uint64_t now = gw_now_ms();

	list_splice_head(&rx->requeue, &rx->wait);
	list_for_each_safe(pos, n, &rx->wait) {
		struct ib_req *q = list_entry(pos, struct ib_req, link);
		struct ib_sess *s;

		if (q->not_before_ms > now)
			continue;
		s = pick_session(rx);
		if (!s)
			break;
		list_del(&q->link);
		rx->nwait--;
		if (q->caw_unknown && q->kind == RK_IO) {
			q->kind = RK_CAW_CHECK;
			q->bounce = malloc(q->io->len);
			if (!q->bounce) {
				req_defer_result(q, -ENOMEM);
				continue;
			}
		}
		sess_issue(s, q);
	}
	for (unsigned int i = 0; i < rx->nsess; i++) {
		struct ib_sess *s = &rx->sess[i];

		if (!s->ctx && !s->reconnect.armed)
			sess_connect(s);
	}
}

static void rx_flush(void *arg)
{
	struct ib_rx *rx = arg;

	while (!list_empty(&rx->kicks)) {
		struct ib_sess *s = list_entry(rx->kicks.next, struct ib_sess, kick_link);
		int rc;

		list_del(&s->kick_link);
		list_init(&s->kick_link);
		if (!s->ctx || s->broken || s->in_service)
			continue;
		s->in_service = true;
		rc = iscsi_service(s->ctx, POLLOUT);
		s->in_service = false;
		sess_after_service(s, rc);
	}
	for (unsigned int i = 0; i < rx->nsess; i++)
		if (rx->sess[i].broken && rx->sess[i].ctx && !rx->sess[i].in_service)
			sess_teardown(&rx->sess[i]);
	if (!list_empty(&rx->requeue) || !list_empty(&rx->wait))
		rx_pump(rx);
	while (!list_empty(&rx->done)) {
		struct ib_req *q = list_first_entry(&rx->done, struct ib_req, link);

		list_del(&q->link);
		req_finish(q, q->deferred_result);
	}
	/* issuing from the pump or from callbacks above may have queued more */
	if (!list_empty(&rx->kicks) && !rx->flush.pending)
		rx_defer(rx);
}

static void rx_arm_tick(struct ib_rx *rx)
{
	uint64_t want = rx->nwait ? IB_TICK_BUSY_MS : IB_TICK_IDLE_MS;
	uint64_t at = gw_now_ms() + want;

	if (rx->tick.armed && rx->tick.deadline_ms <= at)
		return;
	reactor_timer_arm(rx->r, &rx->tick, want);
}

static void rx_expire(struct ib_rx *rx)
{
	struct ib_bdev *ib = rx->ib;
	uint64_t now = gw_now_ms();
	struct list_head *pos, *n;

	list_splice_head(&rx->requeue, &rx->wait);
	list_for_each_safe(pos, n, &rx->wait) {
		struct ib_req *q = list_entry(pos, struct ib_req, link);

		if (now - q->t0_ms < ib->hold_ms)
			continue;
		list_del(&q->link);
		rx->nwait--;
		atomic_fetch_add(&ib->n_expired, 1);
		if (!atomic_exchange(&ib->bdev.offline, true) || !atomic_exchange(&ib->offline_logged, true))
			GW_ERR(IB_COMP, "%s: backend %s has not served a command for %u ms: failing "
			       "held commands, LUN offline (NOT READY) until it answers", ib->bdev.name,
			       ib->url.portal, ib->hold_ms);
		req_finish(q, -ENOTCONN);
	}
}

static uint64_t ib_login_limit_ms(const struct ib_bdev *ib)
{
	uint64_t ms = (uint64_t)ib->cmd_timeout_s * 1000u;

	return ms < 5000 ? 5000 : ms;
}

/*
 * This node's key may be gone (READ KEYS did not find it, or could not tell):
 * what it submitted before must never be written now, and every session of
 * every reactor registers again at once.
 */
static void ib_refenced(struct ib_rx *rx)
{
	struct ib_bdev *ib = rx->ib;

	atomic_fetch_add(&ib->fence_epoch, 1);
	atomic_store(&ib->ok_gen, 0);
	atomic_store(&ib->fenced_seen, true);
	for (unsigned int i = 0; i < rx->nsess; i++)
		rx->sess[i].registered = false;
	rx_recount(rx);
	ib_poke(ib);
}

static void keys_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct ib_req *q = priv;
	struct ib_sess *s = q->sess;
	struct ib_rx *rx = q->rx;
	struct ib_bdev *ib = rx->ib;
	struct scsi_task *t = data ? data : q->task;
	struct scsi_persistent_reserve_in_read_keys *rk;
	uint64_t own = atomic_load(&g_pr_key);
	bool found = false, ua;

	(void)ctx;
	rx->keys_pending = false;
	if (!s || !s->ctx)
		return;         /* teardown in progress: it frees q */
	list_del(&q->link);
	s->ninflight--;
	q->task = NULL;
	req_free(q);
	if (status != SCSI_STATUS_GOOD || !t) {
		/*
		 * A unit attention (a preempt raises REGISTRATIONS PREEMPTED on
		 * our nexus): ask again at once; a hiccup: at the next tick.
		 */
		ua = status == SCSI_STATUS_CHECK_CONDITION && t &&
		     t->sense.key == SCSI_SENSE_UNIT_ATTENTION;
		if (!ua)
			GW_INFO(IB_COMP, "%s: READ KEYS after the lease came back: status 0x%x",
				ib->bdev.name, status);
		if (t)
			scsi_free_scsi_task(t);
		if (ua && rx->keys_ua++ < IB_MAX_UA_RETRIES)
			rx_check_keys(rx);
		return;
	}
	rx->keys_ua = 0;
	rk = scsi_datain_unmarshall(t);
	for (int i = 0; rk && i < rk->num_keys; i++)
		found |= rk->keys[i] == own;
	scsi_free_scsi_task(t);
	if (!rk)
		return;
	if (found && atomic_load(&ib->reg_seq) == rx->keys_seq) {
		/* still registered: writes go on (bdev_awaits_registration) */
		atomic_store(&ib->ok_gen, rx->keys_gen);
		return;
	}
	if (found) {
		/* a session registered meanwhile: that key may be its own, not the others' */
		GW_NOTICE(IB_COMP, "%s: a backend session registered while READ KEYS was out: "
			  "every session registers again", ib->bdev.name);
	} else {
		/*
		 * Our key is gone: the others fenced this node while it had no
		 * lease, and it has not written since.
		 */
		GW_ERR(IB_COMP, "%s: this node's reservation key 0x%016" PRIx64 " was preempted "
		       "while it had no lease (fenced by the other gateways): commands from before "
		       "fail NOT READY 04/0C, registering again", ib->bdev.name, own);
	}
	ib_refenced(rx);
}

/*
 * The lease is back after a time without it (a thawed or reconnected node,
 * or only a membership change of the cluster): was this node fenced
 * meanwhile? One READ KEYS on a registered session says whether our key is
 * still there; until it answers, the LUN awaits its registration
 * (bdev_awaits_registration: hosts are told Transitioning, not refused).
 */
static void rx_check_keys(struct ib_rx *rx)
{
	struct ib_bdev *ib = rx->ib;
	uint32_t ep = atomic_load(&ib->fence_epoch);
	struct ib_sess *s = NULL;
	struct ib_req *q;
	struct scsi_task *t;

	if (rx->keys_pending || !rx->c_reg || !fence_key_set(ib) || !fence_may_register() ||
	    atomic_load(&ib->ok_gen) == atomic_load(&g_lease_gen))
		return;
	for (unsigned int i = 0; i < rx->nsess && !s; i++)
		if (rx->sess[i].state == S_UP && rx->sess[i].registered &&
		    rx->sess[i].reg_epoch == ep && !rx->sess[i].broken && rx->sess[i].ctx)
			s = &rx->sess[i];
	if (!s || !(q = probe_req(s)))
		return;
	rx->keys_gen = atomic_load(&g_lease_gen);
	rx->keys_seq = atomic_load(&ib->reg_seq);
	t = iscsi_persistent_reserve_in_task(s->ctx, (int)ib->url.lun,
					     SCSI_PERSISTENT_RESERVE_READ_KEYS, 4096, keys_cb, q);
	if (probe_track(s, q, t)) {
		rx->keys_pending = true;
		sess_kick(s);
	}
}

/*
 * Recounts rx's sessions that are up into its bdev's counters
 * (bdev_awaits_registration): registered in this fence epoch, or not. On
 * rx's reactor, after anything that changes a session's state.
 */
static void rx_recount(struct ib_rx *rx)
{
	struct ib_bdev *ib = rx->ib;
	uint32_t ep = atomic_load(&ib->fence_epoch);
	unsigned int unreg = 0, reg = 0;

	for (unsigned int i = 0; i < rx->nsess; i++) {
		const struct ib_sess *s = &rx->sess[i];

		if (s->state != S_UP)
			continue;
		if (s->registered && s->reg_epoch == ep)
			reg++;
		else
			unreg++;
	}
	atomic_fetch_add(&ib->n_up_unreg, unreg - rx->c_up_unreg);
	atomic_fetch_add(&ib->n_reg, reg - rx->c_reg);
	rx->c_up_unreg = unreg;
	rx->c_reg = reg;
}

static void rx_tick(void *arg)
{
	struct ib_rx *rx = arg;
	uint64_t now = gw_now_ms();

	for (unsigned int i = 0; i < rx->nsess; i++) {
		struct ib_sess *s = &rx->sess[i];
		int rc;

		if (!s->ctx || s->in_service)
			continue;
		if (s->state == S_CONNECTING && now - s->connect_start_ms > ib_login_limit_ms(rx->ib))
			sess_mark_broken(s, "login timed out");
		/*
		 * This node found itself fenced (on any reactor) since this session
		 * registered: a PREEMPT removes every registration of the key, so
		 * this one is gone too.
		 */
		if (s->registered &&
		    s->reg_epoch != atomic_load_explicit(&rx->ib->fence_epoch, memory_order_relaxed))
			s->registered = false;
		if (s->state == S_UP && !s->registered && !s->broken && fence_key_set(rx->ib)) {
			if (fence_may_register())
				sess_mark_broken(s, "a valid lease again: logging in to register "
						 "the reservation key");
			else
				atomic_store(&rx->ib->gate_closed_seen, true);
		}
		if (!s->broken) {
			s->in_service = true;
			rc = iscsi_service(s->ctx, 0);
			s->in_service = false;
		} else {
			rc = 0;
		}
		sess_after_service(s, rc);
	}
	rx_recount(rx);
	rx_check_keys(rx);
	rx_expire(rx);
	rx_pump(rx);
	rx_arm_tick(rx);
}

static void rx_poke_msg(void *arg)
{
	rx_tick(arg);
}

/* Every reactor of ib looks at its sessions now, not at its next tick. Any thread. */
static void ib_poke(struct ib_bdev *ib)
{
	for (unsigned int i = 0; i < IB_MAX_REACTORS; i++) {
		struct ib_rx *rx = atomic_load(&ib->rx[i]);

		if (rx && reactor_send_msg(rx->r, rx_poke_msg, rx))
			GW_WARN(IB_COMP, "%s: out of memory: reactor %u registers at its next tick",
				ib->bdev.name, i);
	}
}

void bdev_iscsi_lease_regaining(void)
{
	atomic_fetch_add(&g_lease_gen, 1);
}

void bdev_iscsi_lease_regained(void)
{
	struct list_head *pos;

	pthread_mutex_lock(&g_ibs_lock);
	list_for_each(pos, &g_ibs)
		ib_poke(list_entry(pos, struct ib_bdev, all_link));
	pthread_mutex_unlock(&g_ibs_lock);
}

static bool iscsi_awaits_registration(struct bdev *b)
{
	struct ib_bdev *ib = to_ib(b);

	return bdev_iscsi_awaits_registration(fence_key_set(ib), atomic_load(&ib->n_up_unreg),
					      atomic_load(&ib->n_reg), atomic_load(&ib->ok_gen),
					      atomic_load(&g_lease_gen));
}

static struct ib_rx *rx_get(struct ib_bdev *ib)
{
	struct reactor *r = reactor_self();
	struct ib_rx *rx;
	unsigned int idx;

	if (!r)
		return NULL;
	idx = reactor_index(r);
	if (idx >= IB_MAX_REACTORS)
		return NULL;
	rx = atomic_load_explicit(&ib->rx[idx], memory_order_relaxed);
	if (rx)
		return rx;
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return NULL;
	rx->sess = calloc(ib->sessions, sizeof(*rx->sess));
	if (!rx->sess) {
		free(rx);
		return NULL;
	}
	rx->ib = ib;
	rx->r = r;
	rx->nsess = ib->sessions;
	list_init(&rx->wait);
	list_init(&rx->kicks);
	list_init(&rx->requeue);
	list_init(&rx->done);
	reactor_deferred_init(&rx->flush, rx_flush, rx);
	reactor_timer_init(&rx->tick, rx_tick, rx);
	for (unsigned int i = 0; i < rx->nsess; i++) {
		struct ib_sess *s = &rx->sess[i];

		s->rx = rx;
		s->idx = i;
		s->fd = -1;
		list_init(&s->inflight);
		list_init(&s->kick_link);
		reactor_timer_init(&s->reconnect, reconnect_cb, s);
	}
	atomic_store(&ib->rx[idx], rx);
	for (unsigned int i = 0; i < rx->nsess; i++)
		sess_connect(&rx->sess[i]);
	rx_arm_tick(rx);
	return rx;
}

static void rx_free(struct ib_rx *rx)
{
	struct list_head *lists[] = { &rx->wait, &rx->requeue, &rx->done };
	unsigned int left = 0;

	reactor_deferred_cancel(rx->r, &rx->flush);
	reactor_timer_cancel(rx->r, &rx->tick);
	for (unsigned int i = 0; i < rx->nsess; i++) {
		struct ib_sess *s = &rx->sess[i];
		struct iscsi_context *ctx = s->ctx;

		reactor_timer_cancel(rx->r, &s->reconnect);
		if (s->fd_added)
			reactor_del_fd(rx->r, &s->fdh);
		s->ctx = NULL;
		if (ctx)
			iscsi_destroy_context(ctx);
		while (!list_empty(&s->inflight)) {
			struct ib_req *q = list_first_entry(&s->inflight, struct ib_req, link);

			list_del(&q->link);
			if (q->task)
				scsi_free_scsi_task(q->task);
			if (q->kind != RK_PROBE)
				left++;
			free(q->bounce);
			free(q);
		}
	}
	for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++) {
		while (!list_empty(lists[k])) {
			struct ib_req *q = list_first_entry(lists[k], struct ib_req, link);

			list_del(&q->link);
			left++;
			free(q->bounce);
			free(q);
		}
	}
	if (left)
		GW_WARN(IB_COMP, "%s: closed with %u command(s) still queued", rx->ib->bdev.name, left);
	while (rx->free_reqs) {
		struct ib_req *q = rx->free_reqs;

		rx->free_reqs = q->next_free;
		free(q);
	}
	free(rx->sess);
	free(rx);
}

/* ------------------------------------------------------------------------ */
/* bdev ops                                                                 */

/* Issues q now if a session is free and nothing waits, else queues it. */
static void rx_enqueue(struct ib_rx *rx, struct ib_req *q)
{
	struct ib_sess *s = pick_session(rx);

	if (s && list_empty(&rx->wait) && list_empty(&rx->requeue)) {
		sess_issue(s, q);
		return;
	}
	if (!s && atomic_load_explicit(&rx->ib->bdev.offline, memory_order_relaxed)) {
		req_defer_result(q, -ENOTCONN);
		return;
	}
	list_add_tail(&q->link, &rx->wait);
	rx->nwait++;
	rx_arm_tick(rx);
	if (s)
		rx_defer(rx);
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
	unsigned int left;
	int result;
	uint64_t err_off;
	uint8_t status;
	uint8_t sense_len;
	uint8_t sense[BDEV_SENSE_MAX];
	struct ib_piece *pieces;        /* npieces, then the iovec pool */
};

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
		req_set_answer(io, sp->status, sp->sense_len ? sp->sense : NULL, sp->sense_len);
	free(sp->pieces);
	free(sp);
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

	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	sp->pieces = malloc(npieces * sizeof(struct ib_piece) + niov * sizeof(struct iovec) +
			    npieces * sizeof(struct ib_req *));
	if (!sp->pieces)
		goto err_sp;
	pool = (struct iovec *)(void *)(sp->pieces + npieces);
	reqs = (struct ib_req **)(void *)(pool + niov);
	/* every request first, so that nothing is issued unless all can be */
	for (k = 0; k < npieces; k++) {
		reqs[k] = req_alloc(rx);
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
		req_free(reqs[k]);
	free(sp->pieces);
err_sp:
	free(sp);
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
	rx = rx_get(ib);
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
	q = req_alloc(rx);
	if (!q)
		return -ENOMEM;
	q->io = io;
	q->kind = RK_IO;
	q->t0_ms = gw_now_ms();
	if (caw_too_long) {
		req_defer_result(q, -EOPNOTSUPP);
		return 0;
	}
	rx_enqueue(rx, q);
	return 0;
}

int bdev_iscsi_get_stats(struct bdev *b, struct bdev_iscsi_stats *out)
{
	struct ib_bdev *ib;

	if (!b || b->ops != &iscsi_ops || !out)
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

	pthread_mutex_lock(&g_ibs_lock);
	list_del(&ib->all_link);
	pthread_mutex_unlock(&g_ibs_lock);
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
			rx_free(rx);
	}
	free(ib->zero_block);
	pthread_cond_destroy(&ib->disc_cond);
	pthread_mutex_destroy(&ib->lock);
	memset(&ib->url, 0, sizeof(ib->url));   /* the CHAP secret */
	free(ib);
}

static void iscsi_set_listener(struct bdev *b, bdev_listener_fn fn, void *arg);

static const struct bdev_ops iscsi_ops = {
	.name = "iscsi",
	.submit = iscsi_submit,
	.close = iscsi_close,
	.set_listener = iscsi_set_listener,
	.awaits_registration = iscsi_awaits_registration,
};

/* ------------------------------------------------------------------------ */
/* open: discovery on the calling (non-reactor) thread                      */

struct disc {
	bool done;
	int status;
	struct scsi_task *task;
	char err[256];          /* libiscsi's reason, before later calls overwrite it */
};

/* What discovery learnt about the backend LUN. */
struct ib_found {
	uint64_t nblocks;
	uint32_t bs;
	bool unmap;
	bool native_caw;
	uint64_t max_ws_blocks;
	uint32_t max_xfer_blocks;
	uint32_t opt_xfer_blocks;
	uint32_t max_caw_blocks;
	uint8_t desig[BDEV_ID_MAX];     /* VPD page 0x83: the LU's designator (bdev_iscsi_lu_designator) */
	size_t desig_len;
};

static void disc_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct disc *d = priv;

	d->done = true;
	d->status = status;
	d->task = data;
	if (status != SCSI_STATUS_GOOD)
		snprintf(d->err, sizeof(d->err), "%s", iscsi_get_error(ctx));
}

static int disc_wait(struct iscsi_context *ctx, struct ib_bdev *ib, struct disc *d,
		     uint64_t deadline)
{
	while (!d->done) {
		struct pollfd pfd;

		if (atomic_load(&ib->disc_stop))
			return -ECANCELED;
		if (gw_now_ms() >= deadline)
			return -ETIMEDOUT;
		pfd.fd = iscsi_get_fd(ctx);
		pfd.events = (short)iscsi_which_events(ctx);
		pfd.revents = 0;
		if (poll(&pfd, 1, 100) < 0 && errno != EINTR)
			return -errno;
		if (iscsi_service(ctx, pfd.revents) < 0)
			return d->done ? 0 : -EIO;
	}
	return 0;
}

/*
 * After a cancelled connect: libiscsi frees its connect state only in the
 * connect's own callback, so a context destroyed before that leaks it. A
 * connect that is failing (refused, reset) ends within a few polls: give it
 * up to limit_ms before the context goes.
 */
static void disc_drain(struct iscsi_context *ctx, struct disc *d, uint64_t limit_ms)
{
	uint64_t until = gw_now_ms() + limit_ms;

	while (!d->done && gw_now_ms() < until) {
		struct pollfd pfd = { .fd = iscsi_get_fd(ctx),
				      .events = (short)iscsi_which_events(ctx) };

		if (poll(&pfd, 1, 20) < 0 && errno != EINTR)
			return;
		if (iscsi_service(ctx, pfd.revents) < 0)
			return;
	}
}

/* Runs a task built by fn to completion, retrying on unit attentions. */
static int disc_cmd(struct iscsi_context *ctx, struct ib_bdev *ib, int page, uint64_t deadline,
		    struct scsi_task **out)
{
	for (int tries = 0; tries < 8; tries++) {
		struct disc d = { 0 };
		struct scsi_task *t;
		int rc;

		if (page < 0)
			t = iscsi_readcapacity16_task(ctx, (int)ib->url.lun, disc_cb, &d);
		else
			t = iscsi_inquiry_task(ctx, (int)ib->url.lun, 1, page, page == 0x83 ? 1024 : 255,
					       disc_cb, &d);
		if (!t)
			return -ENOMEM;
		rc = disc_wait(ctx, ib, &d, deadline);
		if (rc) {
			/* the context is destroyed by the caller, which frees the PDU */
			return rc;
		}
		if (d.status == SCSI_STATUS_GOOD) {
			*out = t;
			return 0;
		}
		if (d.status == SCSI_STATUS_CHECK_CONDITION &&
		    t->sense.key == SCSI_SENSE_UNIT_ATTENTION) {
			scsi_free_scsi_task(t);
			continue;
		}
		if (d.status == SCSI_STATUS_CHECK_CONDITION)
			GW_DEBUG(IB_COMP, "%s: discovery command (page %d): sense %x/%04x", ib->bdev.name,
				 page, t->sense.key, t->sense.ascq);
		rc = d.status != SCSI_STATUS_CHECK_CONDITION ? -EIO
		     : t->sense.key == SCSI_SENSE_ILLEGAL_REQUEST && t->sense.ascq == 0x2500 ? -ENXIO
		     : t->sense.key == SCSI_SENSE_NOT_READY ? -EAGAIN : -EIO;
		scsi_free_scsi_task(t);
		return rc;
	}
	return -EIO;
}

/*
 * Does the backend do COMPARE AND WRITE? One with NUMBER OF LOGICAL BLOCKS 0
 * moves no data and changes nothing (SBC-3 5.2): GOOD where supported,
 * INVALID COMMAND OPERATION CODE where not (tgt).
 */
static bool disc_caw_probe(struct iscsi_context *ctx, struct ib_bdev *ib, uint64_t deadline)
{
	for (int tries = 0; tries < 8; tries++) {
		uint8_t cdb[16] = { 0x89 };
		struct disc d = { 0 };
		struct scsi_task *t = scsi_create_task(16, cdb, SCSI_XFER_NONE, 0);
		bool ua;

		if (!t)
			return false;
		if (iscsi_scsi_command_async(ctx, (int)ib->url.lun, t, disc_cb, NULL, &d) != 0) {
			scsi_free_scsi_task(t);
			return false;
		}
		if (disc_wait(ctx, ib, &d, deadline) != 0)
			return false;   /* the PDU goes with the context */
		ua = d.status == SCSI_STATUS_CHECK_CONDITION &&
		     t->sense.key == SCSI_SENSE_UNIT_ATTENTION;
		if (!ua) {
			bool ok = d.status == SCSI_STATUS_GOOD;

			if (!ok)
				GW_NOTICE(IB_COMP, "%s: the backend does not do COMPARE AND WRITE "
					  "(sense %x/%04x): the gateway emulates it, atomic through "
					  "this gateway only", ib->bdev.name, t->sense.key, t->sense.ascq);
			scsi_free_scsi_task(t);
			return ok;
		}
		scsi_free_scsi_task(t);
	}
	return false;
}

/*
 * One short session: login, READ CAPACITY(16), the COMPARE AND WRITE probe,
 * VPD B0h, 83h and B2h. Returns 0, or -errno with the reason in why (no secret).
 */
static int discover(struct ib_bdev *ib, uint32_t timeout_ms, struct ib_found *f, char *why,
		    size_t whylen)
{
	uint64_t deadline = gw_now_ms() + timeout_ms;
	struct iscsi_context *ctx;
	struct scsi_readcapacity16 *rc16;
	struct scsi_task *t = NULL;
	struct disc d = { 0 };
	bool lbpme, lbprz;
	uint32_t max_unmap = 0, max_unmap_desc = 0;
	int rc;

	memset(f, 0, sizeof(*f));
	ctx = iscsi_create_context(ib->initiator);
	if (!ctx) {
		snprintf(why, whylen, "cannot create a libiscsi context");
		return -ENOMEM;
	}
	iscsi_set_log_fn(ctx, ctx_log);
	iscsi_set_targetname(ctx, ib->url.iqn);
	iscsi_set_session_type(ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(ctx, ISCSI_HEADER_DIGEST_NONE);
	iscsi_set_noautoreconnect(ctx, 1);
	iscsi_set_timeout(ctx, (int)((timeout_ms + 999) / 1000));
	iscsi_set_isid_random(ctx, ib->isid_rnd, 0xffffu);
	if (ib->url.user[0])
		iscsi_set_initiator_username_pwd(ctx, ib->url.user, ib->url.secret);
	if (iscsi_full_connect_async(ctx, ib->url.portal, (int)ib->url.lun, disc_cb, &d) != 0) {
		snprintf(why, whylen, "cannot connect to the backend %.60s: %.200s", ib->url.portal,
			 iscsi_get_error(ctx));
		rc = -ECONNREFUSED;
		goto out;
	}
	rc = disc_wait(ctx, ib, &d, deadline);
	if (rc == -ECANCELED) {
		disc_drain(ctx, &d, 200);
		goto out;
	}
	if (rc || d.status != SCSI_STATUS_GOOD) {
		snprintf(why, whylen, "cannot log in to the backend %.60s target %.170s%s: %.200s",
			 ib->url.portal, ib->url.iqn, ib->url.user[0] ? " (with CHAP)" : "",
			 rc == -ETIMEDOUT ? "timed out" : d.err[0] ? d.err : iscsi_get_error(ctx));
		rc = rc == -ETIMEDOUT ? rc : -ECONNREFUSED;
		goto out;
	}
	rc = disc_cmd(ctx, ib, -1, deadline, &t);
	if (rc) {
		snprintf(why, whylen, "READ CAPACITY(16) of backend LUN %u failed: %s", ib->url.lun,
			 rc == -ENXIO ? "no such LUN" : rc == -EAGAIN ? "not ready" : strerror(-rc));
		goto out;
	}
	rc16 = scsi_datain_unmarshall(t);
	if (!rc16 || rc16->block_length < 512 || rc16->block_length > IB_MAX_BS ||
	    (rc16->block_length & (rc16->block_length - 1)) || rc16->returned_lba == UINT64_MAX) {
		snprintf(why, whylen, "backend LUN %u: unusable READ CAPACITY data", ib->url.lun);
		scsi_free_scsi_task(t);
		rc = -EIO;
		goto out;
	}
	f->bs = rc16->block_length;
	f->nblocks = rc16->returned_lba + 1;
	lbpme = rc16->lbpme;
	lbprz = rc16->lbprz;
	scsi_free_scsi_task(t);
	f->native_caw = disc_caw_probe(ctx, ib, deadline);
	if (disc_cmd(ctx, ib, 0xb0, deadline, &t) == 0) {
		struct scsi_inquiry_block_limits *bl = scsi_datain_unmarshall(t);

		if (bl) {
			f->max_ws_blocks = bl->max_ws_len;
			f->max_xfer_blocks = bl->max_xfer_len;
			f->opt_xfer_blocks = bl->opt_xfer_len;
			f->max_caw_blocks = bl->max_cmp;
			max_unmap = bl->max_unmap;
			max_unmap_desc = bl->max_unmap_bdc;
		}
		scsi_free_scsi_task(t);
	}
	/* what names the LU, so that two URLs reaching it are found out (core/runtime.c) */
	if (disc_cmd(ctx, ib, 0x83, deadline, &t) == 0) {
		f->desig_len = bdev_iscsi_lu_designator(t->datain.data, (size_t)t->datain.size,
							f->desig, sizeof(f->desig));
		scsi_free_scsi_task(t);
	}
	if (lbpme && disc_cmd(ctx, ib, 0xb2, deadline, &t) == 0) {
		struct scsi_inquiry_logical_block_provisioning *lbp = scsi_datain_unmarshall(t);

		f->unmap = lbp && lbp->lbpu && (lbprz || lbp->lbprz) && max_unmap_desc >= 1 &&
			   max_unmap >= 0x100000u;
		scsi_free_scsi_task(t);
	}
	rc = 0;
out:
	iscsi_destroy_context(ctx);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* fencing: preempting other nodes' keys (control thread, blocking)         */

/* One PERSISTENT RESERVE OUT on a synchronous session, retried on unit attentions. */
static enum ib_pr_outcome fence_pr_out(struct iscsi_context *ctx, struct ib_bdev *ib, int sa,
				       uint64_t key, uint64_t sa_key, uint64_t deadline,
				       char *why, size_t whylen)
{
	for (int tries = 0; tries < 8; tries++) {
		struct scsi_persistent_reserve_out_basic p = {
			.reservation_key = key, .service_action_reservation_key = sa_key,
		};
		struct disc d = { 0 };
		struct scsi_task *t;
		enum ib_pr_outcome o;
		uint8_t k = 0, asc = 0, ascq = 0;
		int rc;

		t = iscsi_persistent_reserve_out_task(ctx, (int)ib->url.lun, sa,
						      SCSI_PERSISTENT_RESERVE_SCOPE_LU, IB_PR_TYPE, &p,
						      disc_cb, &d);
		if (!t) {
			snprintf(why, whylen, "cannot queue PERSISTENT RESERVE OUT: %s",
				 iscsi_get_error(ctx));
			return IB_PR_FAIL;
		}
		rc = disc_wait(ctx, ib, &d, deadline);
		if (rc) {
			snprintf(why, whylen, "PERSISTENT RESERVE OUT (service action %d): %s", sa,
				 rc == -ETIMEDOUT ? "no answer in time" : strerror(-rc));
			return IB_PR_FAIL;
		}
		if (d.status == SCSI_STATUS_CHECK_CONDITION) {
			k = (uint8_t)t->sense.key;
			asc = (uint8_t)(t->sense.ascq >> 8);
			ascq = (uint8_t)t->sense.ascq;
		}
		scsi_free_scsi_task(t);
		o = d.status < 0 ? IB_PR_FAIL : bdev_iscsi_pr_outcome(sa, d.status, k, asc);
		if (o == IB_PR_RETRY)
			continue;
		if (o == IB_PR_FAIL || o == IB_PR_UNSUPPORTED)
			snprintf(why, whylen, "PERSISTENT RESERVE OUT (service action %d): status 0x%x "
				 "sense %x/%02x/%02x", sa, d.status, k, asc, ascq);
		return o;
	}
	snprintf(why, whylen, "PERSISTENT RESERVE OUT (service action %d): unit attentions", sa);
	return IB_PR_FAIL;
}

int bdev_iscsi_fence(struct bdev *b, const uint64_t *keys, size_t n, uint32_t timeout_ms)
{
	struct ib_bdev *ib;
	uint64_t deadline = gw_now_ms() + timeout_ms, own = atomic_load(&g_pr_key);
	struct iscsi_context *ctx;
	struct disc d = { 0 };
	enum ib_pr_outcome o;
	char why[512] = "";
	int rc;

	if (!b || b->ops != &iscsi_ops)
		return -EINVAL;
	ib = to_ib(b);
	if (!own || atomic_load(&ib->pr_unsupported))
		return -EOPNOTSUPP;
	if (n == 0)
		return 0;
	ctx = iscsi_create_context(ib->initiator);
	if (!ctx)
		return -ENOMEM;
	iscsi_set_log_fn(ctx, ctx_log);
	iscsi_set_targetname(ctx, ib->url.iqn);
	iscsi_set_session_type(ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(ctx, ISCSI_HEADER_DIGEST_NONE);
	iscsi_set_noautoreconnect(ctx, 1);
	iscsi_set_timeout(ctx, (int)((timeout_ms + 999) / 1000));
	iscsi_set_isid_random(ctx, ib->isid_rnd, 0xfffeu);     /* a nexus of its own */
	if (ib->url.user[0])
		iscsi_set_initiator_username_pwd(ctx, ib->url.user, ib->url.secret);
	if (iscsi_full_connect_async(ctx, ib->url.portal, (int)ib->url.lun, disc_cb, &d) != 0) {
		snprintf(why, sizeof(why), "cannot connect: %s", iscsi_get_error(ctx));
		rc = -ECONNREFUSED;
		goto out;
	}
	rc = disc_wait(ctx, ib, &d, deadline);
	if (rc || d.status != SCSI_STATUS_GOOD) {
		snprintf(why, sizeof(why), "cannot log in: %s", rc == -ETIMEDOUT ? "timed out"
			 : d.err[0] ? d.err : iscsi_get_error(ctx));
		if (rc)
			disc_drain(ctx, &d, 200);
		rc = rc == -ETIMEDOUT ? rc : -ECONNREFUSED;
		goto out;
	}
	/* our own key on this nexus, and a reservation that preempting leaves in place */
	o = fence_pr_out(ctx, ib, SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY, 0, own,
			 deadline, why, sizeof(why));
	if (o == IB_PR_OK)
		o = fence_pr_out(ctx, ib, SCSI_PERSISTENT_RESERVE_RESERVE, own, 0, deadline, why,
				 sizeof(why));
	for (size_t i = 0; i < n && (o == IB_PR_OK || o == IB_PR_ALREADY); i++) {
		o = fence_pr_out(ctx, ib, SCSI_PERSISTENT_RESERVE_PREEMPT, own, keys[i], deadline,
				 why, sizeof(why));
		if (o == IB_PR_OK)
			GW_NOTICE(IB_COMP, "%s: preempted reservation key 0x%016" PRIx64 ": that node "
				  "can no longer write to the backend LUN", ib->bdev.name, keys[i]);
		else if (o == IB_PR_ALREADY)
			GW_NOTICE(IB_COMP, "%s: reservation key 0x%016" PRIx64 " is not registered "
				  "(already preempted): fenced", ib->bdev.name, keys[i]);
	}
	if (o == IB_PR_UNSUPPORTED) {
		if (!atomic_exchange(&ib->pr_unsupported, true))
			GW_WARN(IB_COMP, "%s: the backend does not do persistent reservations (%s): no "
				"fencing at the backend for this LUN, the lease is the only guard "
				"against a stale node's writes", ib->bdev.name, why);
		rc = -EOPNOTSUPP;
		goto out_quiet;
	}
	rc = o == IB_PR_OK || o == IB_PR_ALREADY ? 0 : -EIO;
out:
	if (rc)
		GW_ERR(IB_COMP, "%s: fencing at the backend failed: %s", ib->bdev.name, why);
out_quiet:
	iscsi_destroy_context(ctx);
	return rc;
}

/*
 * Sets the geometry (telling the listener when it changed). Called with
 * ib->lock held.
 */
static void ib_set_geometry_locked(struct ib_bdev *ib, uint64_t nblocks, uint32_t bs)
{
	if (nblocks == atomic_load(&ib->nblocks) && bs == atomic_load(&ib->bs))
		return;
	atomic_store(&ib->bs, bs);
	atomic_store(&ib->nblocks, nblocks);
	ib->bdev.info.block_size = bs;
	ib->bdev.info.size_bytes = nblocks * bs;
	if (ib->listener)
		ib->listener(ib->listener_arg, &ib->bdev);
}

/* Publishes what discovery found. Called with ib->lock held. */
static void ib_apply_locked(struct ib_bdev *ib, const struct ib_found *f)
{
	uint64_t opt = (uint64_t)f->opt_xfer_blocks * f->bs;

	atomic_store(&ib->has_ws, true);
	atomic_store(&ib->max_ws_blocks, f->max_ws_blocks);
	atomic_store(&ib->max_xfer_blocks, f->max_xfer_blocks);
	atomic_store(&ib->max_caw_blocks, f->max_caw_blocks);
	ib->bdev.info.native_caw = f->native_caw;
	ib->bdev.info.unmap_supported = f->unmap && !ib->bdev.info.readonly;
	ib->bdev.info.opt_xfer_bytes = opt > UINT32_MAX ? 0 : (uint32_t)opt;
	ib_set_geometry_locked(ib, f->nblocks, f->bs);
}

static void ib_log_found(const struct ib_bdev *ib, const struct ib_found *f, const char *what)
{
	GW_NOTICE(IB_COMP, "%s: %s: %" PRIu64 " blocks of %u bytes%s%s, maximum transfer %u blocks%s",
		  ib->bdev.name, what, f->nblocks, f->bs, f->unmap ? ", unmap" : "",
		  f->native_caw ? ", compare-and-write" : "", f->max_xfer_blocks,
		  f->max_xfer_blocks ? "" : " (no limit)");
}

/*
 * The backend was not usable at open: keep discovering it in the background
 * (the same backoff as the sessions), then bring the LUN online.
 */
static void *disc_main(void *arg)
{
	struct ib_bdev *ib = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (unsigned int attempt = 0; !atomic_load(&ib->disc_stop); attempt++) {
		struct ib_found f;
		struct timespec until;
		uint64_t old_n, ms;
		uint32_t old_bs;
		char why[512];
		int rc;

		rc = discover(ib, 5000, &f, why, sizeof(why));
		if (rc == -ECANCELED)
			break;
		if (rc == 0) {
			pthread_mutex_lock(&ib->lock);
			old_n = atomic_load(&ib->nblocks);
			old_bs = atomic_load(&ib->bs);
			ib_apply_locked(ib, &f);
			pthread_mutex_unlock(&ib->lock);
			ib_log_found(ib, &f, "backend reachable");
			if (old_n && (old_n != f.nblocks || old_bs != f.bs))
				GW_WARN(IB_COMP, "%s: the backend LUN has %" PRIu64 " blocks of %u, not the "
					"configured %" PRIu64 " of %u: the backend's geometry is used "
					"(unit attention: capacity data has changed)", ib->bdev.name,
					f.nblocks, f.bs, old_n, old_bs);
			atomic_store(&ib->offline_logged, false);
			atomic_store(&ib->bdev.offline, false);
			GW_NOTICE(IB_COMP, "%s: LUN online after %u failed discovery tries",
				  ib->bdev.name, attempt + 1);
			break;
		}
		if ((attempt + 1) % 20 == 0)     /* the first failure was logged by the open */
			GW_ERR(IB_COMP, "%s: backend still not usable (try %u): %s (LUN stays NOT READY, "
			       "retrying in the background)", ib->bdev.name, attempt + 2, why);
		ms = bdev_iscsi_backoff_ms(attempt);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)(ms / 1000);
		until.tv_nsec += (long)(ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&ib->lock);
		while (!atomic_load(&ib->disc_stop) &&
		       pthread_cond_timedwait(&ib->disc_cond, &ib->lock, &until) == 0)
			;
		pthread_mutex_unlock(&ib->lock);
	}
	return NULL;
}

static void iscsi_set_listener(struct bdev *b, bdev_listener_fn fn, void *arg)
{
	struct ib_bdev *ib = to_ib(b);

	pthread_mutex_lock(&ib->lock);
	ib->listener = fn;
	ib->listener_arg = arg;
	/* the discovery thread may have found the backend since the owner read info */
	if (fn)
		fn(arg, b);
	pthread_mutex_unlock(&ib->lock);
}

static uint32_t isid_seed(const struct bdev_iscsi_params *p, const char *initiator)
{
	char host[256] = "";
	uint32_t h = 2166136261u;

	gethostname(host, sizeof(host) - 1);
	h = fnv1a(h, initiator);
	h = fnv1a(h, host);
	h = fnv1a(h, p->url);
	return h;
}

static int ib_init_sync(struct ib_bdev *ib)
{
	pthread_condattr_t ca;
	int rc;

	rc = pthread_mutex_init(&ib->lock, NULL);
	if (rc)
		return -rc;
	rc = pthread_condattr_init(&ca);
	if (rc)
		goto err_mutex;
	rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(&ib->disc_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (rc)
		goto err_mutex;
	return 0;

err_mutex:
	pthread_mutex_destroy(&ib->lock);
	return -rc;
}

/* The LU's identity (bdev.id) from its designator, scoped to the target when not global. */
static void ib_set_id(struct ib_bdev *ib, const struct ib_found *f)
{
	struct bdev_id *id = &ib->bdev.id;
	size_t n = f->desig_len, il = strlen(ib->url.iqn);

	memcpy(id->bytes, f->desig, n);
	if (!bdev_iscsi_designator_global(f->desig, n)) {
		if (n + 1 + il > sizeof(id->bytes))
			return;
		id->bytes[n++] = 0;
		for (size_t i = 0; i < il; i++)
			id->bytes[n++] = (uint8_t)tolower((unsigned char)ib->url.iqn[i]);
	}
	id->kind = BDEV_ID_DESIGNATOR;
	id->len = (uint16_t)n;
	id->shown = (uint16_t)f->desig_len;
}

int bdev_iscsi_open(const struct bdev_iscsi_params *p, struct bdev **out)
{
	struct ib_bdev *ib;
	struct ib_found f;
	char err[128], why[512];
	int rc;

	if (!p || !p->url || !out)
		return -EINVAL;
	*out = NULL;
	ib = calloc(1, sizeof(*ib));
	if (!ib)
		return -ENOMEM;
	rc = bdev_iscsi_parse_url(p->url, &ib->url, err, sizeof(err));
	if (rc) {
		GW_ERR(IB_COMP, "backend URL: %s (iscsi://[user%%secret@]HOST[:PORT]/IQN/LUN)", err);
		goto err_free;
	}
	if (p->size_bytes && (!p->block_size || p->size_bytes % p->block_size)) {
		GW_ERR(IB_COMP, "backend size %" PRIu64 " is not a multiple of block_size %u",
		       p->size_bytes, p->block_size);
		rc = -EINVAL;
		goto err_free;
	}
	rc = ib_init_sync(ib);
	if (rc)
		goto err_free;
	snprintf(ib->initiator, sizeof(ib->initiator), "%s",
		 p->initiator && p->initiator[0] ? p->initiator : IB_DEFAULT_INITIATOR);
	ib->sessions = p->sessions ? p->sessions : 1;
	if (ib->sessions > 64)
		ib->sessions = 64;
	ib->hold_ms = p->hold_ms ? p->hold_ms : 30000;
	ib->read_chunk = p->read_chunk;
	ib->cmd_timeout_s = p->cmd_timeout_s ? p->cmd_timeout_s : 15;
	ib->isid_rnd = isid_seed(p, ib->initiator);
	ib->bdev.ops = &iscsi_ops;
	ib->bdev.priv = ib;
	ib->bdev.info.readonly = p->readonly;
	ib->bdev.info.rotational = false;
	/* the name is logged everywhere: never the secret */
	snprintf(ib->bdev.name, sizeof(ib->bdev.name), "iscsi://%.60s/%.170s/%u", ib->url.portal,
		 ib->url.iqn, ib->url.lun);
	ib->zero_block = calloc(1, IB_ZERO_BLOCK);
	if (!ib->zero_block) {
		rc = -ENOMEM;
		goto err_sync;
	}
	rc = discover(ib, p->open_timeout_ms ? p->open_timeout_ms : 5000, &f, why, sizeof(why));
	if (rc == 0) {
		ib_apply_locked(ib, &f);        /* nobody else sees ib yet */
		if (f.desig_len)
			ib_set_id(ib, &f);
		ib_log_found(ib, &f, "backend LUN");
	} else {
		GW_ERR(IB_COMP, "%s: %s", ib->bdev.name, why);
		/* open offline: NOT READY until the background discovery finds it */
		ib->bdev.info.block_size = p->size_bytes ? p->block_size : 512;
		ib->bdev.info.size_bytes = p->size_bytes;
		atomic_store(&ib->bs, ib->bdev.info.block_size);
		atomic_store(&ib->nblocks, p->size_bytes / ib->bdev.info.block_size);
		atomic_store(&ib->bdev.offline, true);
		atomic_store(&ib->offline_logged, true);
		rc = pthread_create(&ib->disc_thread, NULL, disc_main, ib);
		if (rc) {
			rc = -rc;
			GW_ERR(IB_COMP, "%s: cannot start the discovery thread: %s", ib->bdev.name,
			       strerror(-rc));
			goto err_zero;
		}
		ib->disc_running = true;
		if (p->size_bytes)
			GW_ERR(IB_COMP, "%s: backend not usable at start: LUN offline (NOT READY) with "
			       "the configured %" PRIu64 " blocks of %u until the backend answers",
			       ib->bdev.name, atomic_load(&ib->nblocks), atomic_load(&ib->bs));
		else
			GW_ERR(IB_COMP, "%s: backend not usable at start: LUN present but NOT READY, "
			       "capacity unknown until the backend answers (discovering in the "
			       "background)", ib->bdev.name);
	}
	GW_INFO(IB_COMP, "%s: %u session(s) per reactor, hold %u ms, reads in pieces of %u bytes%s",
		ib->bdev.name, ib->sessions, ib->hold_ms, ib->read_chunk,
		p->readonly ? ", read-only" : "");
	pthread_mutex_lock(&g_ibs_lock);
	list_add_tail(&ib->all_link, &g_ibs);
	pthread_mutex_unlock(&g_ibs_lock);
	*out = &ib->bdev;
	return 0;

err_zero:
	free(ib->zero_block);
err_sync:
	pthread_cond_destroy(&ib->disc_cond);
	pthread_mutex_destroy(&ib->lock);
err_free:
	memset(&ib->url, 0, sizeof(ib->url));
	free(ib);
	return rc;
}

#endif /* ISERGW_HAVE_LIBISCSI */
