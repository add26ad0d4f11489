/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The LU state carried by the cluster (params.cluster_state; docs/scsi.md,
 * "Logical units shared by several nodes"). The store is scsi_shared.c's
 * in-memory copy (struct shs with cluster set): a change runs the same code
 * as with a shared file, but scsi_lu_shared_end leaves the copy as the cluster
 * holds it and puts the new state and its events into a proposal. Here:
 *
 *   scsi_lu_cluster_submit   the proposal goes to the handler (the control
 *                       socket: an event the HA agent takes to corosync);
 *                       the command, if any, is held on its reactor
 *   scsi_cluster_apply  the cluster applied a version (every node, in the
 *                       cluster's order): the copy takes it, its events
 *                       reach this node's nexuses, aborts run
 *   scsi_cluster_done   the proposal's answer: the held command completes
 *                       (or runs again on the newer state, -ESTALE)
 *
 * A held command (struct cl_held) is listed in cl.held under cl.lock and
 * finished on its own reactor by whoever unlinks it there (scsi_held.h), as
 * the held SET TARGET PORT GROUPS of scsi_alua.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsi/scsi_held.h"
#include "scsi/scsi_internal.h"
#include "common/log.h"
#include "common/reactor.h"

struct cl_held {
	struct scsi_held hd;            /* in cl.held */
	int status;                     /* under cl.lock until unlinked */
	unsigned long long lun;
	lu_cluster_finish_fn finish;
	void *ctx;
};

static void held_outcome(struct scsi_held *hd, int status);
static void held_finish(struct scsi_held *hd);

static struct {
	pthread_mutex_t lock;
	scsi_cluster_propose_fn handler;        /* under lock */
	void *handler_arg;
	struct scsi_held_list held;
	uint64_t next_id;
	scsi_cluster_lock_fn lock_fn;           /* under lock */
	void *lock_arg;
} cl = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.held = SCSI_HELD_LIST_INIT(cl.held, &cl.lock, held_outcome, held_finish),
};

struct scsi_lu_proposal *scsi_lu_proposal_new(const struct scsi_lu *lu)
{
	struct scsi_lu_proposal *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->st = calloc(1, sizeof(*p->st));
	p->ev = calloc(SCSI_LU_EVENTS_MAX, sizeof(*p->ev));
	if (!p->st || !p->ev) {
		scsi_lu_proposal_free(p);
		return NULL;
	}
	memcpy(p->naa, lu->params.naa, sizeof(p->naa));
	return p;
}

void scsi_lu_proposal_free(struct scsi_lu_proposal *p)
{
	if (!p)
		return;
	free(p->st);
	free(p->ev);
	free(p);
}

void scsi_cluster_set_handler(scsi_cluster_propose_fn fn, void *arg)
{
	pthread_mutex_lock(&cl.lock);
	cl.handler = fn;
	cl.handler_arg = arg;
	pthread_mutex_unlock(&cl.lock);
}

unsigned int scsi_cluster_held(void)
{
	return atomic_load(&cl.held.nheld);
}

void scsi_lu_cluster_fail(struct scsi_cmd *cmd, int status)
{
	(void)status;
	scsi_fail(cmd, SCSI_SK_NOT_READY, ASC_LU_NOT_READY_IN_PROGRESS);
}

bool scsi_lu_cluster_rerun_ok(struct scsi_cmd *cmd)
{
	return ++cmd->cluster_reruns <= SCSI_CLUSTER_RETRIES;
}

/* cl.lock held: the timer's or an abort's outcome. */
static void held_outcome(struct scsi_held *hd, int status)
{
	container_of(hd, struct cl_held, hd)->status = status;
}

/* On the command's reactor, once unlinked. */
static void held_finish(struct scsi_held *hd)
{
	struct cl_held *h = container_of(hd, struct cl_held, hd);

	scsi_held_cancel(hd);
	if (h->status == -ECANCELED) {
		GW_INFO(SCSI_LOG, "lun %llu: cluster change %" PRIu64 ": command aborted",
			h->lun, hd->id);
		hd->cmd->status = SCSI_STATUS_TASK_ABORTED;
		hd->cmd->sense_len = 0;
		h->finish(NULL, -ECANCELED, h->ctx);   /* frees ctx */
		scsi_complete(hd->cmd);
	} else {
		if (h->status && h->status != -ESTALE)
			GW_WARN(SCSI_LOG, "lun %llu: cluster change %" PRIu64 " not applied (%s): "
				"NOT READY, the host retries", h->lun, hd->id, strerror(-h->status));
		h->finish(hd->cmd, h->status, h->ctx);
	}
	free(h);
}

static void held_msg(void *arg)
{
	scsi_held_take(&cl.held, (uint64_t)(uintptr_t)arg);
}

int scsi_lu_cluster_submit(struct scsi_lu *lu, struct scsi_lu_proposal *p, struct scsi_cmd *cmd,
			   lu_cluster_finish_fn finish, void *ctx)
{
	struct cl_held *h = NULL;
	struct reactor *r = reactor_self();
	scsi_cluster_propose_fn fn;
	void *arg;
	int rc;

	if ((cmd || finish) && !r) {
		scsi_lu_proposal_free(p);
		return -EINVAL;
	}
	if (cmd || finish) {
		h = calloc(1, sizeof(*h));
		if (!h) {
			scsi_lu_proposal_free(p);
			return -ENOMEM;
		}
		scsi_held_init(&h->hd, &cl.held, cmd, r);
		h->lun = (unsigned long long)lu->params.lun;
		h->finish = finish;
		h->ctx = ctx;
	}
	p->wait = h != NULL;
	pthread_mutex_lock(&cl.lock);
	p->id = ++cl.next_id;
	fn = cl.handler;
	arg = cl.handler_arg;
	if (h)
		scsi_held_add(&h->hd, p->id);
	pthread_mutex_unlock(&cl.lock);
	/* the handler copies the proposal into an event: it runs without cl.lock */
	rc = fn ? fn(p, arg) : -ENOTCONN;
	if (rc) {
		GW_WARN(SCSI_LOG, "lun %llu: a change of the LU state cannot reach the cluster "
			"(%s): not applied anywhere%s", (unsigned long long)lu->params.lun,
			rc == -ENOTCONN ? "no HA agent is listening" : strerror(-rc),
			cmd ? ", the command ends NOT READY" : "");
		if (h) {
			pthread_mutex_lock(&cl.lock);
			scsi_held_unlink(&h->hd);
			pthread_mutex_unlock(&cl.lock);
			free(h);
		}
	} else if (h) {
		reactor_timer_arm(r, &h->hd.timer, SCSI_CLUSTER_TIMEOUT_MS);
	}
	scsi_lu_proposal_free(p);
	return rc;
}

int scsi_cluster_done(uint64_t id, int status)
{
	struct scsi_held *hd;
	struct reactor *r;

	if (!id || status > 0)
		return -EINVAL;
	hd = scsi_held_lock_find(&cl.held, id);
	if (!hd)
		return -ENOENT;
	if (hd->decided) {
		pthread_mutex_unlock(&cl.lock);
		return -EALREADY;
	}
	hd->decided = true;
	held_outcome(hd, status);
	r = hd->reactor;
	pthread_mutex_unlock(&cl.lock);
	if (reactor_send_msg(r, held_msg, (void *)(uintptr_t)id))
		GW_WARN(SCSI_LOG, "cluster change %" PRIu64 ": out of memory; the command "
			"completes when its timer fires", id);
	return 0;
}

void scsi_cluster_cmd_abort(struct scsi_cmd *cmd)
{
	scsi_held_abort(&cl.held, cmd);
}

/* ------------------------------------------------------------ applying */

struct apply_arg {
	uint64_t version;
	const struct shs_state *st;
	bool mode_valid;
	const struct shs_event *ev;
	size_t nev;
	bool own;
	bool away;
	struct list_head aborts;
	int rc;
};

/* Under the LU list's lock. */
static int apply_one(struct scsi_lu *lu, void *argp)
{
	struct apply_arg *a = argp;
	struct shs *s = lu->sh;
	char why[160];

	if (!s || !s->cluster)
		return -EINVAL;
	if (scsi_shs_state_validate(a->st, why, sizeof(why)) < 0) {
		GW_ERR(SCSI_LOG, "lun %llu: the cluster's state version %" PRIu64 " is malformed "
		       "(%s): refused", (unsigned long long)lu->params.lun, a->version, why);
		return -EINVAL;
	}
	pthread_mutex_lock(&lu->lock);
	scsi_shs_lock(s, true);
	if (a->version <= s->version && !a->away) {
		scsi_shs_unlock(s);
		pthread_mutex_unlock(&lu->lock);
		return -EALREADY;
	}
	if (a->version > s->version) {
		struct shs_state keep = { .wce = s->f->st.wce, .swp = s->f->st.swp };

		memcpy(&s->f->st, a->st, sizeof(s->f->st));
		if (!a->mode_valid) {
			s->f->st.wce = keep.wce;
			s->f->st.swp = keep.swp;
		}
	}
	for (size_t i = 0; i < a->nev; i++) {
		struct shs_event ev = a->ev[i];

		ev.origin = a->own ? lu->sh_origin : 0;
		if (a->away)
			ev.flags &= (uint8_t)~SHS_EVF_ABORT;     /* nothing of then runs here */
		scsi_shs_post(s, &ev);
	}
	if (a->version > s->version)
		s->version = a->version;
	scsi_shs_publish(s, true);
	scsi_shs_unlock(s);
	pthread_mutex_unlock(&lu->lock);
	/* this node's nexuses get the UAs now, and the aborts run below */
	scsi_lu_shared_poll_one(lu, &a->aborts);
	if (a->away)
		GW_INFO(SCSI_LOG, "lun %llu: %zu unit attention(s) raised while this node was away "
			"queued (cluster state version %" PRIu64 ")", (unsigned long long)lu->params.lun,
			a->nev, a->version);
	else
		GW_DEBUG(SCSI_LOG, "lun %llu: cluster state version %" PRIu64 " applied (%zu "
			 "event(s))", (unsigned long long)lu->params.lun, a->version, a->nev);
	return 0;
}

int scsi_cluster_apply(const uint8_t naa[16], uint64_t version, const struct shs_state *st,
		       bool mode_valid, const struct shs_event *ev, size_t nev, unsigned int flags)
{
	struct apply_arg a = {
		.version = version, .st = st, .mode_valid = mode_valid, .ev = ev, .nev = nev,
		.own = flags & SCSI_CLUSTER_OWN, .away = flags & SCSI_CLUSTER_AWAY,
	};
	int rc;

	if (!version || nev > SCSI_LU_EVENTS_MAX)
		return -EINVAL;
	list_init(&a.aborts);
	rc = scsi_lu_with_naa(naa, apply_one, &a);
	scsi_lu_shared_run_abort_list(&a.aborts);
	return rc;
}

static int version_one(struct scsi_lu *lu, void *arg)
{
	if (!lu->sh || !lu->sh->cluster)
		return -EINVAL;
	scsi_shs_lock(lu->sh, false);
	*(uint64_t *)arg = lu->sh->version;
	scsi_shs_unlock(lu->sh);
	return 0;
}

int scsi_cluster_version(const uint8_t naa[16], uint64_t *version)
{
	return scsi_lu_with_naa(naa, version_one, version);
}

/* ------------------------------------------------------------ LBA locks */

void scsi_cluster_set_lock_handler(scsi_cluster_lock_fn fn, void *arg)
{
	pthread_mutex_lock(&cl.lock);
	cl.lock_fn = fn;
	cl.lock_arg = arg;
	pthread_mutex_unlock(&cl.lock);
}

struct lock_wait {
	void (*then)(struct scsi_cmd *cmd);
	uint64_t id;
	uint8_t naa[16];
	uint64_t lba;
	uint32_t n;
};

static void lock_release(uint64_t id, const uint8_t naa[16], uint64_t lba, uint32_t n)
{
	scsi_cluster_lock_fn fn;
	void *arg;

	pthread_mutex_lock(&cl.lock);
	fn = cl.lock_fn;
	arg = cl.lock_arg;
	pthread_mutex_unlock(&cl.lock);
	if (fn && fn(id, naa, lba, n, false, arg))
		GW_WARN(SCSI_LOG, "cluster lock %" PRIu64 ": the release did not go out (the agent "
			"drops it when this node leaves the group)", id);
}

static void lock_granted(struct scsi_cmd *cmd, int status, void *ctx)
{
	struct lock_wait *w = ctx;

	if (cmd && status == 0) {
		cmd_priv(cmd)->cl_lock = w->id;
		w->then(cmd);
	} else {
		/* refused, timed out or aborted: a grant may still come, give it back */
		lock_release(w->id, w->naa, w->lba, w->n);
		if (cmd)
			scsi_lu_cluster_fail(cmd, status);
	}
	free(w);
}

bool scsi_lu_cluster_lock(struct scsi_cmd *cmd, uint64_t lba, uint32_t n,
			  void (*then)(struct scsi_cmd *cmd))
{
	struct scsi_lu *lu = cmd->lu;
	struct reactor *r = reactor_self();
	struct lock_wait *w;
	struct cl_held *h;
	scsi_cluster_lock_fn fn;
	void *arg;
	int rc;

	if (!lu->sh || !lu->sh->cluster)
		return false;
	cmd_priv(cmd)->cl_lock = 0;
	w = calloc(1, sizeof(*w));
	h = calloc(1, sizeof(*h));
	if (!w || !h || !r) {
		free(w);
		free(h);
		scsi_lu_cluster_fail(cmd, -ENOMEM);
		return true;
	}
	w->then = then;
	memcpy(w->naa, lu->params.naa, 16);
	w->lba = lba;
	w->n = n;
	scsi_held_init(&h->hd, &cl.held, cmd, r);
	h->lun = (unsigned long long)lu->params.lun;
	h->finish = lock_granted;
	h->ctx = w;
	pthread_mutex_lock(&cl.lock);
	w->id = ++cl.next_id;
	fn = cl.lock_fn;
	arg = cl.lock_arg;
	scsi_held_add(&h->hd, w->id);
	pthread_mutex_unlock(&cl.lock);
	rc = fn ? fn(w->id, w->naa, lba, n, true, arg) : -ENOTCONN;
	if (rc) {
		GW_WARN(SCSI_LOG, "lun %llu: the cluster-wide lock of LBA %" PRIu64 "+%u cannot be "
			"asked (%s): NOT READY", h->lun, lba, n,
			rc == -ENOTCONN ? "no HA agent is listening" : strerror(-rc));
		pthread_mutex_lock(&cl.lock);
		scsi_held_unlink(&h->hd);
		pthread_mutex_unlock(&cl.lock);
		free(h);
		free(w);
		scsi_lu_cluster_fail(cmd, rc);
		return true;
	}
	reactor_timer_arm(r, &h->hd.timer, SCSI_CLUSTER_TIMEOUT_MS);
	return true;
}

void scsi_lu_cluster_unlock(struct scsi_cmd *cmd)
{
	struct scsi_priv *pv = cmd_priv(cmd);
	uint64_t id = pv->cl_lock;

	if (!id)
		return;
	pv->cl_lock = 0;
	lock_release(id, cmd->lu->params.naa, pv->lba, pv->nblocks);
}
