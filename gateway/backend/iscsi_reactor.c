/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iSCSI backstore, per-reactor state: one struct ib_rx per (bdev, reactor)
 * with its sessions and wait queues, the deferred flush, the tick (command
 * timeouts, the hold limit, reconnects), and the fencing checks on the
 * reactor (READ KEYS, the counters bdev_awaits_registration reads).
 */
#ifdef ISERGW_HAVE_LIBISCSI

#include "backend/iscsi_int.h"

/* ------------------------------------------------------------------------ */
/* per-reactor state                                                        */

void ib_rx_pump(struct ib_rx *rx)
{
	struct list_head *pos, *n;
	uint64_t now = gw_now_ms();

	list_splice_head(&rx->requeue, &rx->wait);
	list_for_each_safe(pos, n, &rx->wait) {
		struct ib_req *q = list_entry(pos, struct ib_req, link);
		struct ib_sess *s;

		if (q->not_before_ms > now)
			continue;
		s = ib_pick_session(rx);
		if (!s)
			break;
		list_del(&q->link);
		rx->nwait--;
		if (q->caw_unknown && q->kind == RK_IO) {
			q->kind = RK_CAW_CHECK;
			q->bounce = malloc(q->io->len);
			if (!q->bounce) {
				ib_req_defer_result(q, -ENOMEM);
				continue;
			}
		}
		ib_sess_issue(s, q);
	}
	for (unsigned int i = 0; i < rx->nsess; i++) {
		struct ib_sess *s = &rx->sess[i];

		if (!s->ctx && !s->reconnect.armed)
			ib_sess_connect(s);
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
		s->queued = 0;
		s->in_service = true;
		rc = iscsi_service(s->ctx, POLLOUT);
		s->in_service = false;
		ib_sess_after_service(s, rc);
	}
	for (unsigned int i = 0; i < rx->nsess; i++)
		if (rx->sess[i].broken && rx->sess[i].ctx && !rx->sess[i].in_service)
			ib_sess_teardown(&rx->sess[i]);
	if (!list_empty(&rx->requeue) || !list_empty(&rx->wait))
		ib_rx_pump(rx);
	while (!list_empty(&rx->done)) {
		struct ib_req *q = list_first_entry(&rx->done, struct ib_req, link);

		list_del(&q->link);
		ib_req_finish(q, q->deferred_result);
	}
	/* issuing from the pump or from callbacks above may have queued more */
	if (!list_empty(&rx->kicks) && !rx->flush.pending)
		ib_rx_defer(rx);
}

void ib_rx_arm_tick(struct ib_rx *rx)
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
		ib_req_finish(q, -ENOTCONN);
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
	ib_rx_recount(rx);
	ib_poke(ib);
}

static void keys_cb(struct iscsi_context *ctx, int status, void *data, void *priv)
{
	struct ib_req *q = priv;
	struct ib_rx *rx = q->rx;
	struct ib_bdev *ib = rx->ib;
	struct scsi_task *t = data ? data : q->task;
	struct scsi_persistent_reserve_in_read_keys *rk;
	uint64_t own = atomic_load(&ib_pr_key);
	bool found = false, ua;

	(void)ctx;
	rx->keys_pending = false;
	if (!ib_req_landed(q))
		return;         /* teardown in progress: it frees q */
	ib_req_free(q);
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
			ib_rx_check_keys(rx);
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
void ib_rx_check_keys(struct ib_rx *rx)
{
	struct ib_bdev *ib = rx->ib;
	uint32_t ep = atomic_load(&ib->fence_epoch);
	struct ib_sess *s = NULL;
	struct ib_req *q;
	struct scsi_task *t;

	if (rx->keys_pending || !rx->c_reg || !fence_key_set(ib) || !fence_may_register() ||
	    atomic_load(&ib->ok_gen) == atomic_load(&ib_lease_gen))
		return;
	for (unsigned int i = 0; i < rx->nsess && !s; i++)
		if (rx->sess[i].state == S_UP && rx->sess[i].registered &&
		    rx->sess[i].reg_epoch == ep && !rx->sess[i].broken && rx->sess[i].ctx)
			s = &rx->sess[i];
	if (!s || !(q = ib_probe_req(s)))
		return;
	rx->keys_gen = atomic_load(&ib_lease_gen);
	rx->keys_seq = atomic_load(&ib->reg_seq);
	t = iscsi_persistent_reserve_in_task(s->ctx, (int)ib->url.lun,
					     SCSI_PERSISTENT_RESERVE_READ_KEYS, 4096, keys_cb, q);
	if (ib_probe_track(s, q, t)) {
		rx->keys_pending = true;
		ib_sess_kick(s);
	}
}

/*
 * Recounts rx's sessions that are up into its bdev's counters
 * (bdev_awaits_registration): registered in this fence epoch, or not. On
 * rx's reactor, after anything that changes a session's state.
 */
void ib_rx_recount(struct ib_rx *rx)
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

void ib_rx_tick(void *arg)
{
	struct ib_rx *rx = arg;
	uint64_t now = gw_now_ms();

	for (unsigned int i = 0; i < rx->nsess; i++) {
		struct ib_sess *s = &rx->sess[i];
		int rc;

		if (!s->ctx || s->in_service)
			continue;
		if (s->state == S_CONNECTING && now - s->connect_start_ms > ib_login_limit_ms(rx->ib))
			ib_sess_mark_broken(s, "login timed out");
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
				ib_sess_mark_broken(s, "a valid lease again: logging in to register "
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
		ib_sess_after_service(s, rc);
	}
	ib_rx_recount(rx);
	ib_rx_check_keys(rx);
	rx_expire(rx);
	ib_rx_pump(rx);
	ib_rx_arm_tick(rx);
}

static void rx_poke_msg(void *arg)
{
	ib_rx_tick(arg);
}

/* Every reactor of ib looks at its sessions now, not at its next tick. Any thread. */
void ib_poke(struct ib_bdev *ib)
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
	atomic_fetch_add(&ib_lease_gen, 1);
}

void bdev_iscsi_lease_regained(void)
{
	struct list_head *pos;

	pthread_mutex_lock(&ib_all_lock);
	list_for_each(pos, &ib_all)
		ib_poke(list_entry(pos, struct ib_bdev, all_link));
	pthread_mutex_unlock(&ib_all_lock);
}

bool ib_awaits_registration(struct bdev *b)
{
	struct ib_bdev *ib = to_ib(b);

	return bdev_iscsi_awaits_registration(fence_key_set(ib), atomic_load(&ib->n_up_unreg),
					      atomic_load(&ib->n_reg), atomic_load(&ib->ok_gen),
					      atomic_load(&ib_lease_gen));
}

struct ib_rx *ib_rx_get(struct ib_bdev *ib)
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
	reactor_timer_init(&rx->tick, ib_rx_tick, rx);
	for (unsigned int i = 0; i < rx->nsess; i++) {
		struct ib_sess *s = &rx->sess[i];

		s->rx = rx;
		s->idx = i;
		s->fd = -1;
		list_init(&s->inflight);
		list_init(&s->kick_link);
		reactor_timer_init(&s->reconnect, ib_reconnect_cb, s);
	}
	atomic_store(&ib->rx[idx], rx);
	for (unsigned int i = 0; i < rx->nsess; i++)
		ib_sess_connect(&rx->sess[i]);
	ib_rx_arm_tick(rx);
	return rx;
}

void ib_rx_free(struct ib_rx *rx)
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
			ib_task_put(q, q->task);
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
	ib_split_cache_free(rx);
	free(rx->sess);
	free(rx);
}

#endif /* ISERGW_HAVE_LIBISCSI */
