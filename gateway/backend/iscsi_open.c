/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iSCSI backstore, opening: discovery of the backend LUN on a short
 * synchronous session (capacity, block size, limits, the designator), the
 * geometry and its listener, the background discovery thread for a
 * backend not reachable at open, and bdev_iscsi_open().
 */
#ifdef ISERGW_HAVE_LIBISCSI

#include <netdb.h>
#include <sys/socket.h>

#include "backend/iscsi_int.h"

/* ------------------------------------------------------------------------ */
/* open: discovery on the calling (non-reactor) thread                      */


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

/*
 * A context for a short synchronous session to the backend LUN (discovery,
 * fencing): no reconnect, the command timeout from timeout_ms, an ISID of
 * ib's with qualifier isid_qual, CHAP when the URL has it. NULL: no memory.
 */
struct iscsi_context *ib_sync_context(struct ib_bdev *ib, uint32_t timeout_ms, uint16_t isid_qual)
{
	struct iscsi_context *ctx = iscsi_create_context(ib->initiator);

	if (!ctx)
		return NULL;
	iscsi_set_log_fn(ctx, ctx_log);
	iscsi_set_targetname(ctx, ib->url.iqn);
	iscsi_set_session_type(ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(ctx, ISCSI_HEADER_DIGEST_NONE);
	iscsi_set_noautoreconnect(ctx, 1);
	iscsi_set_timeout(ctx, (int)((timeout_ms + 999) / 1000));
	iscsi_set_isid_random(ctx, ib->isid_rnd, isid_qual);
	if (ib->url.user[0])
		iscsi_set_initiator_username_pwd(ctx, ib->url.user, ib->url.secret);
	return ctx;
}

void ib_disc_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct disc *d = priv;

	d->done = true;
	d->status = status;
	d->task = data;
	if (status != SCSI_STATUS_GOOD)
		snprintf(d->err, sizeof(d->err), "%s", iscsi_get_error(ctx));
}

int ib_disc_wait(struct iscsi_context *ctx, struct ib_bdev *ib, struct disc *d,
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
void ib_disc_drain(struct iscsi_context *ctx, struct disc *d, uint64_t limit_ms)
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
			t = iscsi_readcapacity16_task(ctx, (int)ib->url.lun, ib_disc_cb, &d);
		else
			t = iscsi_inquiry_task(ctx, (int)ib->url.lun, 1, page, page == 0x83 ? 1024 : 255,
					       ib_disc_cb, &d);
		if (!t)
			return -ENOMEM;
		rc = ib_disc_wait(ctx, ib, &d, deadline);
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
		if (iscsi_scsi_command_async(ctx, (int)ib->url.lun, t, ib_disc_cb, NULL, &d) != 0) {
			scsi_free_scsi_task(t);
			return false;
		}
		if (ib_disc_wait(ctx, ib, &d, deadline) != 0)
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

/* The backend's host is an address, not a name to look up. */
static bool host_numeric(const struct bdev_iscsi_url *u)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;

	if (getaddrinfo(u->host, NULL, &hints, &res) != 0)
		return false;
	freeaddrinfo(res);
	return true;
}

/*
 * One short session: login, READ CAPACITY(16), the COMPARE AND WRITE probe,
 * VPD B0h, 83h and B2h. Returns 0, or -errno with the reason in why (no secret).
 *
 * libiscsi frees its connect state only in the connect's callback, which a
 * context destroyed before it never gets: left to its own timeout (whole
 * seconds, so it may fire early), libiscsi calls back first, and our
 * deadline is a backstop a second later. With hand_over (an open that may
 * not wait past timeout_ms) it is the other way round: the deadline is ours,
 * exact, libiscsi's a second later, and a login still pending at it is
 * handed to the discovery thread (ib->left_ctx), which lets libiscsi call
 * back before it destroys the context.
 */
static int discover(struct ib_bdev *ib, uint32_t timeout_ms, bool hand_over, struct ib_found *f,
		    char *why, size_t whylen)
{
	/* without hand_over, libiscsi's timeout first, ours a backstop a second later */
	uint64_t deadline = gw_now_ms() + timeout_ms + (hand_over ? 0 : 1000);
	struct iscsi_context *ctx;
	struct scsi_readcapacity16 *rc16;
	struct scsi_task *t = NULL;
	struct disc *d;
	bool lbpme, lbprz;
	uint32_t max_unmap = 0, max_unmap_desc = 0;
	int rc;

	memset(f, 0, sizeof(*f));
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	ctx = ib_sync_context(ib, hand_over ? timeout_ms + 1000 : timeout_ms, 0xffffu);
	if (!ctx) {
		free(d);
		snprintf(why, whylen, "cannot create a libiscsi context");
		return -ENOMEM;
	}
	if (iscsi_full_connect_async(ctx, ib->url.portal, (int)ib->url.lun, ib_disc_cb, d) != 0) {
		snprintf(why, whylen, "cannot connect to the backend %.60s: %.200s", ib->url.portal,
			 iscsi_get_error(ctx));
		rc = -ECONNREFUSED;
		goto out;
	}
	rc = ib_disc_wait(ctx, ib, d, deadline);
	if (rc == -ECANCELED) {
		ib_disc_drain(ctx, d, 200);
		goto out;
	}
	if (rc == -ETIMEDOUT && hand_over && !d->done) {
		snprintf(why, whylen, "cannot log in to the backend %.60s target %.170s: timed out",
			 ib->url.portal, ib->url.iqn);
		ib->left_ctx = ctx;
		ib->left_d = d;
		return rc;
	}
	if (rc || d->status != SCSI_STATUS_GOOD) {
		snprintf(why, whylen, "cannot log in to the backend %.60s target %.170s%s: %.200s",
			 ib->url.portal, ib->url.iqn, ib->url.user[0] ? " (with CHAP)" : "",
			 rc == -ETIMEDOUT ? "timed out" : d->err[0] ? d->err : iscsi_get_error(ctx));
		rc = rc == -ETIMEDOUT || d->status == SCSI_STATUS_TIMEOUT ? -ETIMEDOUT : -ECONNREFUSED;
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
	free(d);
	return rc;
}

/*
 * The login an open handed over (discover): libiscsi's callback, which its
 * timeout (at most 5 s and the second past ours) brings, then the context
 * goes (without wait, at once: libiscsi's connect state is lost).
 */
static void disc_left_end(struct ib_bdev *ib, bool wait)
{
	if (wait && ib->left_ctx)
		(void)ib_disc_wait(ib->left_ctx, ib, ib->left_d, gw_now_ms() + 7000);
	if (ib->left_ctx) {
		ib_disc_drain(ib->left_ctx, ib->left_d, 200);
		iscsi_destroy_context(ib->left_ctx);
	}
	free(ib->left_d);
	ib->left_ctx = NULL;
	ib->left_d = NULL;
}

/*
 * Sets the geometry (telling the listener when it changed). Called with
 * ib->lock held.
 */
void ib_set_geometry_locked(struct ib_bdev *ib, uint64_t nblocks, uint32_t bs)
{
	if (nblocks == atomic_load(&ib->nblocks) && bs == atomic_load(&ib->bs))
		return;
	atomic_store(&ib->bs, bs);
	atomic_store(&ib->nblocks, nblocks);
	ib->bdev.info.block_size = bs;
	ib->bdev.info.size_bytes = nblocks * bs;
	bdev_listener_call(&ib->listener, &ib->bdev);
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
	disc_left_end(ib, true);
	for (unsigned int attempt = 0; !atomic_load(&ib->disc_stop); attempt++) {
		struct ib_found f;
		struct timespec until;
		uint64_t old_n, ms;
		uint32_t old_bs;
		char why[512];
		int rc;

		rc = discover(ib, 5000, false, &f, why, sizeof(why));
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
		if (attempt == 0 && ib->disc_err_first)
			GW_ERR(IB_COMP, "%s: backend not usable: %s (LUN stays NOT READY, retrying in "
			       "the background)", ib->bdev.name, why);
		else if ((attempt + 1) % 20 == 0) /* the first failure was logged by the open */
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

void ib_set_listener(struct bdev *b, bdev_listener_fn fn, void *arg)
{
	struct ib_bdev *ib = to_ib(b);

	pthread_mutex_lock(&ib->lock);
	/* the discovery thread may have found the backend since the owner read info */
	bdev_listener_set(&ib->listener, b, fn, arg);
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
	bool lookup;
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
	ib->bdev.ops = &bdev_iscsi_ops;
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
	/*
	 * A caller that can spare only so long (the control thread while the
	 * ALUA lease runs) gets the LUN NOT READY rather than wait past it;
	 * below IB_OPEN_MIN_MS left, or with a host name to look up (which no
	 * deadline bounds), it is not even tried here.
	 */
	lookup = p->open_bounded && !host_numeric(&ib->url);
	if (p->open_bounded && (p->open_timeout_ms < IB_OPEN_MIN_MS || lookup))
		rc = -ETIMEDOUT;
	else
		rc = discover(ib, p->open_timeout_ms ? p->open_timeout_ms : 5000, p->open_bounded, &f,
			      why, sizeof(why));
	if (rc == 0) {
		ib_apply_locked(ib, &f);        /* nobody else sees ib yet */
		if (f.desig_len)
			ib_set_id(ib, &f);
		ib_log_found(ib, &f, "backend LUN");
	} else {
		/* the change could not wait: a notice now, the first failure an err */
		ib->disc_err_first = p->open_bounded && rc == -ETIMEDOUT;
		if (ib->disc_err_first && lookup)
			GW_NOTICE(IB_COMP, "%s: a host name to look up, which this change cannot wait "
				  "for (the ALUA lease runs): LUN NOT READY until the backend answers "
				  "(discovering in the background)", ib->bdev.name);
		else if (ib->disc_err_first)
			GW_NOTICE(IB_COMP, "%s: no answer within the %u ms this change could wait (the "
				  "ALUA lease runs): LUN NOT READY until the backend answers "
				  "(discovering in the background)", ib->bdev.name, p->open_timeout_ms);
		else
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
		if (!ib->disc_err_first && p->size_bytes)
			GW_ERR(IB_COMP, "%s: backend not usable at start: LUN offline (NOT READY) with "
			       "the configured %" PRIu64 " blocks of %u until the backend answers",
			       ib->bdev.name, atomic_load(&ib->nblocks), atomic_load(&ib->bs));
		else if (!ib->disc_err_first)
			GW_ERR(IB_COMP, "%s: backend not usable at start: LUN present but NOT READY, "
			       "capacity unknown until the backend answers (discovering in the "
			       "background)", ib->bdev.name);
	}
	GW_INFO(IB_COMP, "%s: %u session(s) per reactor, hold %u ms, reads in pieces of %u bytes%s",
		ib->bdev.name, ib->sessions, ib->hold_ms, ib->read_chunk,
		p->readonly ? ", read-only" : "");
	pthread_mutex_lock(&ib_all_lock);
	list_add_tail(&ib->all_link, &ib_all);
	pthread_mutex_unlock(&ib_all_lock);
	*out = &ib->bdev;
	return 0;

err_zero:
	disc_left_end(ib, false);
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
