/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iSCSI backstore, backend sessions (docs/backend.md, "iSCSI backstore"):
 * the request pool and the life of one backend session on a reactor:
 * connect and login, the probe after login, registering this node's
 * reservation key, teardown, the reconnect backoff.
 */
#ifdef ISERGW_HAVE_LIBISCSI

#include "backend/iscsi_int.h"

/* ------------------------------------------------------------------------ */
/* requests                                                                 */

struct ib_req *ib_req_alloc(struct ib_rx *rx)
{
	struct ib_req *q = rx->free_reqs;

	if (q)
		rx->free_reqs = q->next_free;
	else if (!(q = malloc(sizeof(*q))))
		return NULL;
	memset(q, 0, offsetof(struct ib_req, etask));     /* etask: at its issue */
	q->rx = rx;
	q->epoch = atomic_load_explicit(&rx->ib->fence_epoch, memory_order_relaxed);
	list_init(&q->link);
	return q;
}

void ib_req_free(struct ib_req *q)
{
	struct ib_rx *rx = q->rx;

	free(q->bounce);
	q->next_free = rx->free_reqs;
	rx->free_reqs = q;
}

/*
 * Gives back a backend task of q after its callback or a teardown: q's own
 * task keeps its memory for the next issue (only what libiscsi hung on it
 * goes: sense data, and scsi_malloc'ed blocks, which ib_sess_issue never
 * asks for), a task of libiscsi's helpers is freed.
 */
void ib_task_put(struct ib_req *q, struct scsi_task *t)
{
	if (!t)
		return;
	if (t != &q->etask) {
		scsi_free_scsi_task(t);
		return;
	}
	if (t->mem) {
		/* scsi_free_scsi_task frees the blocks, then the copy */
		struct scsi_task *h = malloc(sizeof(*h));

		if (h) {
			*h = *t;
			scsi_free_scsi_task(h);
		}
	} else {
		free(t->datain.data);
	}
	t->mem = NULL;
	t->datain.data = NULL;
}

/*
 * The first step of a libiscsi callback for q: false while q's session is
 * torn down (the teardown frees q), else q leaves the session's in-flight
 * requests and its task is the callback's.
 */
bool ib_req_landed(struct ib_req *q)
{
	struct ib_sess *s = q->sess;

	if (!s || !s->ctx)
		return false;
	list_del(&q->link);
	s->ninflight--;
	q->task = NULL;
	return true;
}

const char *ib_req_name(const struct ib_req *q)
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
void ib_req_finish(struct ib_req *q, int result)
{
	struct bdev_io *io = q->io;

	ib_req_free(q);
	io->result = result;
	io->cb(io);
}

void ib_req_set_answer(struct bdev_io *io, uint8_t status, const uint8_t *sense, size_t len)
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
void ib_sess_after_service(struct ib_sess *s, int rc)
{
	if (rc < 0 && s->ctx && !s->broken) {
		snprintf(s->last_err, sizeof(s->last_err), "%s", iscsi_get_error(s->ctx));
		s->broken = true;
	}
	if (s->broken) {
		ib_sess_teardown(s);
		ib_rx_pump(s->rx);
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
	ib_sess_after_service(s, rc);
}

void ib_sess_mark_broken(struct ib_sess *s, const char *why)
{
	if (s->broken)
		return;
	s->broken = true;
	snprintf(s->last_err, sizeof(s->last_err), "%s", why);
}

void ib_reconnect_cb(void *arg)
{
	ib_sess_connect(arg);
}

/*
 * Destroys the session's context (its commands come back to the head of the
 * wait queue, in order) and schedules a reconnect. Never called from inside
 * iscsi_service() of this context.
 */
void ib_sess_teardown(struct ib_sess *s)
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
	s->queued = 0;
	/* callbacks during destroy see ctx == NULL and leave requests alone */
	iscsi_destroy_context(ctx);
	list_init(&back);
	while (!list_empty(&s->inflight)) {
		struct ib_req *q = list_first_entry(&s->inflight, struct ib_req, link);

		list_del(&q->link);
		ib_task_put(q, q->task);
		q->task = NULL;
		q->sess = NULL;
		s->ninflight--;
		if (q->kind == RK_PROBE) {
			ib_req_free(q);
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
	ib_rx_recount(rx);
	ib_rx_arm_tick(rx);
}

static void probe_cb(struct iscsi_context *ctx, int status, void *data, void *priv);
static void sess_up(struct ib_sess *s);
static void pr_cb(struct iscsi_context *ctx, int status, void *data, void *priv);

/* A probe request of session s, or NULL (out of memory). */
struct ib_req *ib_probe_req(struct ib_sess *s)
{
	struct ib_req *q = ib_req_alloc(s->rx);

	if (q) {
		q->kind = RK_PROBE;
		q->sess = s;
	}
	return q;
}

/* The probe's task t (NULL: not issued) in flight on s: true, or false with q freed. */
bool ib_probe_track(struct ib_sess *s, struct ib_req *q, struct scsi_task *t)
{
	if (!t) {
		ib_req_free(q);
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
	struct ib_req *q = ib_probe_req(s);
	struct scsi_persistent_reserve_out_basic p = { 0 };
	struct scsi_task *t;

	if (!q) {
		ib_sess_mark_broken(s, "out of memory");
		return;
	}
	q->pr_step = (uint8_t)sa;
	q->ua_retries = ua_retries;
	/* registering: the new key in SERVICE ACTION RESERVATION KEY; reserving: ours */
	if (sa == SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY)
		p.service_action_reservation_key = atomic_load(&ib_pr_key);
	else
		p.reservation_key = atomic_load(&ib_pr_key);
	t = iscsi_persistent_reserve_out_task(s->ctx, (int)rx->ib->url.lun, sa,
					      SCSI_PERSISTENT_RESERVE_SCOPE_LU, IB_PR_TYPE, &p, pr_cb, q);
	if (!ib_probe_track(s, q, t))
		ib_sess_mark_broken(s, iscsi_get_error(s->ctx));
}

/*
 * After READ CAPACITY: register this node's key and reserve the LUN when a
 * key is set and the node may (a valid lease); otherwise the session serves
 * unregistered (on a reserved LUN its writes are refused, which is the
 * point for a node without a lease).
 */
void ib_sess_register(struct ib_sess *s)
{
	struct ib_bdev *ib = s->rx->ib;

	s->registered = false;
	s->reg_gen = atomic_load(&ib_lease_gen);
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
	if (!ib_req_landed(q))
		return;         /* teardown in progress: it frees q */
	if (status == SCSI_STATUS_CHECK_CONDITION && t) {
		key = (uint8_t)t->sense.key;
		asc = (uint8_t)(t->sense.ascq >> 8);
		ascq = (uint8_t)t->sense.ascq;
	}
	if (t)
		scsi_free_scsi_task(t);
	ib_req_free(q);
	if (status < 0) {
		ib_sess_mark_broken(s, "persistent reserve out: no answer");
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
		ib_sess_mark_broken(s, "persistent reservation refused");
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
			  atomic_load(&ib_pr_key));
	if (!atomic_exchange(&ib->ever_registered, true))
		GW_NOTICE(IB_COMP, "%s: registered reservation key 0x%016" PRIx64 " with the "
			  "backend (%s)", ib->bdev.name, atomic_load(&ib_pr_key),
			  status == SCSI_STATUS_GOOD ? "reserved it, WRITE EXCLUSIVE - REGISTRANTS ONLY"
			  : "already reserved");
	sess_up(s);
}

static void sess_probe(struct ib_sess *s)
{
	struct ib_req *q = ib_probe_req(s);

	if (!q) {
		ib_sess_mark_broken(s, "out of memory");
		return;
	}
	if (!ib_probe_track(s, q, iscsi_readcapacity16_task(s->ctx, (int)s->rx->ib->url.lun,
							 probe_cb, q)))
		ib_sess_mark_broken(s, iscsi_get_error(s->ctx));
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
	ib_rx_recount(rx);
	ib_rx_check_keys(rx);      /* registered beside sessions not yet known to be */
	ib_rx_pump(rx);
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
	if (!ib_req_landed(q))
		return;         /* teardown in progress: it frees q */
	if (status == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_UNIT_ATTENTION &&
	    q->ua_retries++ < IB_MAX_UA_RETRIES) {
		scsi_free_scsi_task(t);
		ib_req_free(q);
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
		ib_req_free(q);
		ib_sess_mark_broken(s, why);
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
		ib_req_free(q);
		ib_sess_mark_broken(s, why);
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
	ib_req_free(q);
	ib_sess_register(s);
}

static void login_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct ib_sess *s = priv;

	(void)data;
	if (s->ctx != ctx)
		return;
	if (status != SCSI_STATUS_GOOD) {
		ib_sess_mark_broken(s, iscsi_get_error(ctx));
		return;
	}
	s->state = S_PROBING;
	sess_probe(s);
}

void ib_sess_connect(struct ib_sess *s)
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
		ib_sess_teardown(s);
		return;
	}
	sess_update_events(s);
}

#endif /* ISERGW_HAVE_LIBISCSI */
