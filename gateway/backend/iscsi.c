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
 *    reactors keep: ib_rx_recount) and the SCSI layer answers Transitioning.
 *
 * This file: URLs and the other pure helpers (unit-tested without a
 * backend), the no-libiscsi stubs and this node's key. The rest, over
 * iscsi_int.h: iscsi_session.c (requests, sessions), iscsi_io.c (commands),
 * iscsi_reactor.c (per-reactor state), iscsi_bdev.c (the bdev ops),
 * iscsi_open.c (discovery, open) and iscsi_fence.c (fencing).
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

#include "backend/iscsi_int.h"

/* This node's reservation key (0: no fencing) and when it may register it. */
_Atomic uint64_t ib_pr_key;
bool (*_Atomic ib_may_register)(void);
/* Bumped each time the node holds a lease again after a time without one. */
_Atomic uint32_t ib_lease_gen = 1;
/* Every open iscsi bdev, for bdev_iscsi_lease_regained(). */
pthread_mutex_t ib_all_lock = PTHREAD_MUTEX_INITIALIZER;
struct list_head ib_all = { &ib_all, &ib_all };

void bdev_iscsi_fence_setup(uint64_t key, bool (*may_register)(void))
{
	uint64_t old = atomic_exchange(&ib_pr_key, key);

	atomic_store(&ib_may_register, may_register);
	if (old != key && key)
		GW_NOTICE(IB_COMP, "backend reservation key 0x%016" PRIx64 ": iscsi:// LUNs are "
			  "fenced by persistent reservation", key);
	else if (old != key)
		GW_NOTICE(IB_COMP, "no backend reservation key (was 0x%016" PRIx64 "): iscsi:// "
			  "sessions register nothing from now on", old);
}

#endif /* ISERGW_HAVE_LIBISCSI */
