/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LU lifecycle, I_T nexus bookkeeping and unit attention queues.
 *
 * A nexus is identified by (initiator port name, relative target port id), so
 * its unit attentions survive a reconnect of the same initiator port through
 * the same target port. A nexus that goes away with UAs still queued is kept
 * (up to SCSI_NEXUS_DETACHED_MAX of them); one with nothing queued is freed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsi/scsi_internal.h"
#include "common/log.h"
#include "common/reactor.h"

/* Every LU of the process, for unit attentions that are not the LU's own (ALUA). */
static pthread_mutex_t all_lus_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head all_lus = { &all_lus, &all_lus };

/* ----------------------------------------------------- nexus / UA helpers */

static void nexus_free_if_idle(struct scsi_lu *lu, struct scsi_nexus *nx)
{
	if (nx->attached || nx->ua_n)
		return;
	list_del(&nx->link);
	lu->ndetached--;
	free(nx);
}

struct scsi_nexus *scsi_nexus_lookup(struct scsi_lu *lu, const char *iport, uint16_t rel, bool create)
{
	struct list_head *pos;
	struct scsi_nexus *nx;

	list_for_each(pos, &lu->nexuses) {
		nx = list_entry(pos, struct scsi_nexus, link);
		if (nx->rel_port == rel && strcmp(nx->iport, iport) == 0)
			return nx;
	}
	if (!create)
		return NULL;
	if (lu->ndetached >= SCSI_NEXUS_DETACHED_MAX) {
		/* drop the oldest detached nexus (and its UAs) to stay bounded */
		list_for_each(pos, &lu->nexuses) {
			nx = list_entry(pos, struct scsi_nexus, link);
			if (!nx->attached) {
				atomic_fetch_sub(&lu->ua_pending, nx->ua_n);
				list_del(&nx->link);
				lu->ndetached--;
				free(nx);
				break;
			}
		}
	}
	nx = calloc(1, sizeof(*nx));
	if (!nx)
		return NULL;
	snprintf(nx->iport, sizeof(nx->iport), "%s", iport);
	nx->rel_port = rel;
	list_add_tail(&nx->link, &lu->nexuses);
	lu->ndetached++;        /* counted as detached until attached */
	return nx;
}

void scsi_ua_add(struct scsi_lu *lu, struct scsi_nexus *nx, uint16_t asc)
{
	unsigned int i;

	if (!nx)
		return;
	for (i = 0; i < nx->ua_n; i++)
		if (nx->ua[i] == asc)
			return; /* already pending: report once */
	if (nx->ua_n == SCSI_UA_MAX) {
		/* queue full: the newest condition replaces the last one */
		nx->ua[SCSI_UA_MAX - 1] = asc;
		return;
	}
	nx->ua[nx->ua_n++] = asc;
	atomic_fetch_add(&lu->ua_pending, 1);
}

void scsi_ua_add_all(struct scsi_lu *lu, const struct scsi_nexus *except, uint16_t asc)
{
	struct list_head *pos;

	list_for_each(pos, &lu->nexuses) {
		struct scsi_nexus *nx = list_entry(pos, struct scsi_nexus, link);

		if (nx != except)
			scsi_ua_add(lu, nx, asc);
	}
}

bool scsi_ua_pop(struct scsi_lu *lu, const char *iport, uint16_t rel, uint16_t *asc)
{
	struct scsi_nexus *nx = scsi_nexus_lookup(lu, iport, rel, false);

	if (!nx || nx->ua_n == 0)
		return false;
	*asc = nx->ua[0];
	memmove(&nx->ua[0], &nx->ua[1], (size_t)(nx->ua_n - 1) * sizeof(nx->ua[0]));
	nx->ua_n--;
	atomic_fetch_sub(&lu->ua_pending, 1);
	nexus_free_if_idle(lu, nx);
	return true;
}

void scsi_lu_ua_all_lus(uint16_t asc, int dg, const struct scsi_lu *except_lu,
			const char *except_iport, uint16_t except_rel)
{
	struct list_head *pos;

	pthread_mutex_lock(&all_lus_lock);
	list_for_each(pos, &all_lus) {
		struct scsi_lu *lu = list_entry(pos, struct scsi_lu, all_link);
		const struct scsi_nexus *self = NULL;

		if (dg >= 0 && lu->alua_dg != (size_t)dg)
			continue;

		pthread_mutex_lock(&lu->lock);
		if (lu == except_lu && except_iport)
			self = scsi_nexus_lookup(lu, except_iport, except_rel, false);
		scsi_ua_add_all(lu, self, asc);
		pthread_mutex_unlock(&lu->lock);
	}
	pthread_mutex_unlock(&all_lus_lock);
}

/* -------------------------------------------------------------- lifecycle */

/*
 * The backstore's geometry changed (an iscsi:// backend reached after start,
 * or resized): new READ CAPACITY data and a unit attention CAPACITY DATA HAS
 * CHANGED on every nexus (SBC-4 4.6). Called on any thread.
 */
static void lu_geometry_changed(void *arg, struct bdev *b)
{
	struct scsi_lu *lu = arg;
	uint32_t bs = b->info.block_size;
	uint64_t n = bs ? b->info.size_bytes / bs : 0;

	if (bs < 512 || (bs & (bs - 1)) || n == 0)
		return;
	pthread_mutex_lock(&lu->lock);
	if (n != lu->nblocks || bs != lu->block_size) {
		GW_NOTICE(SCSI_LOG, "lun %llu: capacity now %llu blocks of %u bytes (was %llu of %u): "
			  "unit attention CAPACITY DATA HAS CHANGED", (unsigned long long)lu->params.lun,
			  (unsigned long long)n, bs, (unsigned long long)lu->nblocks, lu->block_size);
		lu->block_size = bs;
		lu->nblocks = n;
		scsi_ua_add_all(lu, NULL, ASC_CAPACITY_CHANGED);
	}
	pthread_mutex_unlock(&lu->lock);
}

int scsi_lu_create(const struct scsi_lu_params *p, struct bdev *bdev, struct scsi_lu **out)
{
	struct scsi_lu *lu;
	int rc;

	if (!p || !bdev || !out)
		return -EINVAL;
	if (bdev->info.block_size < 512 || (bdev->info.block_size & (bdev->info.block_size - 1))) {
		GW_ERR(SCSI_LOG, "lun %llu: unsupported block size %u",
		       (unsigned long long)p->lun, bdev->info.block_size);
		return -EINVAL;
	}
	if (bdev->info.size_bytes < bdev->info.block_size && !bdev_offline(bdev)) {
		GW_ERR(SCSI_LOG, "lun %llu: backing store %s is smaller than one block",
		       (unsigned long long)p->lun, bdev->name);
		return -EINVAL;
	}
	lu = calloc(1, sizeof(*lu));
	if (!lu)
		return -ENOMEM;
	lu->params = *p;
	lu->bdev = bdev;
	lu->block_size = bdev->info.block_size;
	lu->nblocks = bdev->info.size_bytes / bdev->info.block_size;
	lu->tpgs = 3;           /* ALUA, implicit and explicit */
	rc = scsi_alua_dg_ref(p->alua_dg);
	if (rc < 0) {
		GW_ERR(SCSI_LOG, "lun %llu: ALUA device group %s: %s", (unsigned long long)p->lun,
		       p->alua_dg, strerror(-rc));
		free(lu);
		return rc;
	}
	lu->alua_dg = (size_t)rc;
	atomic_init(&lu->wce, p->write_cache);
	atomic_init(&lu->swp, false);
	list_init(&lu->nexuses);
	list_init(&lu->pr_regs);
	list_init(&lu->gate_waiters);
	list_init(&lu->xcopy_status);
	list_init(&lu->sh_aborts);
	atomic_init(&lu->sh_seen, 0);
	atomic_init(&lu->gate_readers, 0);
	atomic_init(&lu->gate_atomics, 0);
	atomic_init(&lu->ua_pending, 0);
	atomic_init(&lu->res_active, false);
	if ((rc = pthread_mutex_init(&lu->lock, NULL)) != 0) {
		free(lu);
		return -rc;
	}
	if ((rc = pthread_mutex_init(&lu->pr_save_lock, NULL)) != 0) {
		rc = -rc;
		goto err_destroy_lock;
	}
	/* reservations: in the file shared with the other nodes, or our own */
	rc = p->shared_path[0] || p->cluster_state ? scsi_lu_shared_open(lu) : scsi_pr_load(lu);
	if (rc < 0)
		goto err_destroy_save_lock;
	if (p->thin && !bdev->info.unmap_supported)
		GW_WARN(SCSI_LOG, "lun %llu: thin provisioning requested but %s cannot unmap; "
			"advertising a fully provisioned LU", (unsigned long long)p->lun, bdev->name);
	GW_INFO(SCSI_LOG, "lun %llu: %llu blocks of %u bytes on %s%s%s",
		(unsigned long long)p->lun, (unsigned long long)lu->nblocks, lu->block_size,
		bdev->name, p->readonly ? ", read-only" : "", scsi_lu_thin(lu) ? ", thin" : "");
	bdev_set_listener(bdev, lu_geometry_changed, lu);
	pthread_mutex_lock(&all_lus_lock);
	list_add_tail(&lu->all_link, &all_lus);
	pthread_mutex_unlock(&all_lus_lock);
	*out = lu;
	return 0;

err_destroy_save_lock:
	scsi_pr_free(lu);
	pthread_mutex_destroy(&lu->pr_save_lock);
err_destroy_lock:
	pthread_mutex_destroy(&lu->lock);
	free(lu);
	return rc;
}

void scsi_lu_destroy(struct scsi_lu *lu)
{
	struct list_head *pos, *n;

	if (!lu)
		return;
	bdev_set_listener(lu->bdev, NULL, NULL);
	pthread_mutex_lock(&all_lus_lock);
	list_del(&lu->all_link);
	pthread_mutex_unlock(&all_lus_lock);
	list_for_each_safe(pos, n, &lu->nexuses) {
		list_del(pos);
		free(list_entry(pos, struct scsi_nexus, link));
	}
	scsi_lu_shared_close(lu);
	scsi_xcopy_status_free(lu);
	scsi_pr_free(lu);
	pthread_mutex_destroy(&lu->pr_save_lock);
	pthread_mutex_destroy(&lu->lock);
	free(lu);
}

const struct scsi_lu_params *scsi_lu_get_params(const struct scsi_lu *lu)
{
	return &lu->params;
}

void scsi_lu_itn_add(struct scsi_lu *lu, const struct scsi_itn *itn)
{
	const char *iport;
	uint16_t rel;
	struct scsi_nexus *nx;

	if (itn && itn->port)
		(void)scsi_alua_register_port(itn->port);       /* known to RTPG from now on */
	scsi_nexus_id(itn, &iport, &rel);
	pthread_mutex_lock(&lu->lock);
	nx = scsi_nexus_lookup(lu, iport, rel, true);
	if (nx) {
		if (nx->attached++ == 0)
			lu->ndetached--;
	} else {
		GW_ERR(SCSI_LOG, "lun %llu: out of memory tracking nexus %s",
		       (unsigned long long)lu->params.lun, iport);
	}
	pthread_mutex_unlock(&lu->lock);
}

enum redo_kind { REDO_RESET, REDO_CLEARED, REDO_GONE };

static bool reset_submit(struct scsi_lu *lu, struct scsi_lu_proposal *prop,
			 scsi_reset_done_fn done, void *arg, enum redo_kind what,
			 enum scsi_reset_kind kind, uint16_t asc, const char *iport, uint16_t rel);

void scsi_lu_itn_remove(struct scsi_lu *lu, const struct scsi_itn *itn)
{
	struct scsi_lu_proposal *prop = NULL;
	const char *iport;
	uint16_t rel;
	struct scsi_nexus *nx;

	scsi_nexus_id(itn, &iport, &rel);
	pthread_mutex_lock(&lu->lock);
	nx = scsi_nexus_lookup(lu, iport, rel, false);
	if (nx && nx->attached) {
		if (--nx->attached == 0) {
			lu->ndetached++;
			/* SPC-2: an I_T nexus loss releases its SCSI-2 reservation */
			prop = scsi_pr_nexus_gone(lu, iport, rel);
			nexus_free_if_idle(lu, nx);
		}
	}
	pthread_mutex_unlock(&lu->lock);
	(void)reset_submit(lu, prop, NULL, NULL, REDO_GONE, 0, 0, iport, rel);
}

void scsi_lu_itn_logout(struct scsi_lu *lu, const struct scsi_itn *itn)
{
	(void)scsi_lu_itn_logout_wait(lu, itn, NULL, NULL);
}

bool scsi_lu_itn_logout_wait(struct scsi_lu *lu, const struct scsi_itn *itn,
			     scsi_reset_done_fn done, void *arg)
{
	struct scsi_lu_proposal *prop;
	const char *iport;
	uint16_t rel;

	scsi_nexus_id(itn, &iport, &rel);
	pthread_mutex_lock(&lu->lock);
	prop = scsi_pr_nexus_gone(lu, iport, rel);
	pthread_mutex_unlock(&lu->lock);
	return reset_submit(lu, prop, done, arg, REDO_GONE, 0, 0, iport, rel);
}

/* A reset's proposal answered: the caller that waits for it goes on. */
/*
 * A change without a command (a reset, CLEAR TASK SET, a lost nexus's
 * SCSI-2 release) on its way to the cluster: computed again and proposed
 * again when another change came first (-ESTALE); done(arg), if any, once
 * it is in force everywhere or failed.
 */
struct reset_wait {
	scsi_reset_done_fn done;
	void *arg;
	struct scsi_lu *lu;
	enum redo_kind what;
	enum scsi_reset_kind kind;
	uint16_t asc;
	uint16_t rel;
	char iport[256];
	unsigned int tries;
};

static struct scsi_lu_proposal *reset_prop(struct scsi_lu *lu, enum scsi_reset_kind kind,
					   uint16_t asc);
static struct scsi_lu_proposal *cleared_prop(struct scsi_lu *lu, const char *iport, uint16_t rel);

static struct scsi_lu_proposal *redo(struct reset_wait *w)
{
	struct scsi_lu_proposal *prop;

	switch (w->what) {
	case REDO_RESET:
		return reset_prop(w->lu, w->kind, w->asc);
	case REDO_CLEARED:
		return cleared_prop(w->lu, w->iport, w->rel);
	case REDO_GONE:
	default:
		pthread_mutex_lock(&w->lu->lock);
		prop = scsi_pr_nexus_gone(w->lu, w->iport, w->rel);
		pthread_mutex_unlock(&w->lu->lock);
		return prop;
	}
}

static void reset_finish(struct scsi_cmd *cmd, int status, void *ctx)
{
	struct reset_wait *w = ctx;
	struct scsi_lu_proposal *prop;

	(void)cmd;
	if (status == -ESTALE && ++w->tries <= SCSI_CLUSTER_RETRIES) {
		prop = redo(w);
		if (prop && scsi_lu_cluster_submit(w->lu, prop, NULL, reset_finish, w) == 0)
			return;
	} else if (status) {
		GW_WARN(SCSI_LOG, "lun %llu: a reset or a lost nexus's release is not in force on "
			"every node: %s", (unsigned long long)w->lu->params.lun, strerror(-status));
	}
	if (w->done)
		w->done(w->arg);
	free(w);
}

/* No lock held: hands the proposal over (w taken); true when w->done(arg) comes later. */
static bool redo_submit(struct reset_wait *w, struct scsi_lu_proposal *prop)
{
	bool waits = w->done != NULL;

	if (!prop) {
		free(w);
		return false;
	}
	if (!reactor_self()) {
		struct scsi_lu *lu = w->lu;

		free(w);
		(void)scsi_lu_cluster_submit(lu, prop, NULL, NULL, NULL);
		return false;
	}
	if (scsi_lu_cluster_submit(w->lu, prop, NULL, reset_finish, w)) {
		free(w);
		return false;
	}
	return waits;
}

static bool reset_submit(struct scsi_lu *lu, struct scsi_lu_proposal *prop,
			 scsi_reset_done_fn done, void *arg, enum redo_kind what,
			 enum scsi_reset_kind kind, uint16_t asc, const char *iport, uint16_t rel)
{
	struct reset_wait *w;

	if (!prop)
		return false;
	w = calloc(1, sizeof(*w));
	if (!w) {
		(void)scsi_lu_cluster_submit(lu, prop, NULL, NULL, NULL);
		return false;
	}
	w->done = done;
	w->arg = arg;
	w->lu = lu;
	w->what = what;
	w->kind = kind;
	w->asc = asc;
	w->rel = rel;
	snprintf(w->iport, sizeof(w->iport), "%s", iport ? iport : "");
	return redo_submit(w, prop);
}

void scsi_lu_reset(struct scsi_lu *lu, const struct scsi_itn *from, enum scsi_reset_kind kind)
{
	(void)scsi_lu_reset_wait(lu, from, kind, NULL, NULL);
}

/* A shared LU's reset, under the locks (the file store applies it; the cluster's: a proposal). */
static struct scsi_lu_proposal *reset_prop(struct scsi_lu *lu, enum scsi_reset_kind kind,
					   uint16_t asc)
{
	struct scsi_lu_proposal *prop = NULL;

	pthread_mutex_lock(&lu->lock);
	if (scsi_lu_shared_begin(lu) == 0) {
		/* every node: the UA to each of its nexuses, and abort their tasks */
		scsi_lu_shared_ua(lu, SHS_EV_UA_ALL, SHS_EVF_ABORT, asc, NULL, 0);
		scsi_pr_reset(lu);
		if (kind == SCSI_RESET_TARGET_COLD) {
			lu->wce = lu->params.write_cache;
			lu->swp = false;
		}
		scsi_lu_shared_end(lu, true);
		prop = lu_shared_take(lu);
	}
	pthread_mutex_unlock(&lu->lock);
	return prop;
}

static struct scsi_lu_proposal *cleared_prop(struct scsi_lu *lu, const char *iport, uint16_t rel)
{
	struct scsi_lu_proposal *prop = NULL;

	pthread_mutex_lock(&lu->lock);
	if (scsi_lu_shared_begin(lu) == 0) {
		/* the task set is the LU's: other nodes abort theirs too */
		scsi_lu_shared_ua(lu, SHS_EV_UA_ALL, SHS_EVF_EXCEPT | SHS_EVF_ABORT,
				  ASC_COMMANDS_CLEARED_BY_OTHER, iport, rel);
		scsi_lu_shared_end(lu, false);
		prop = lu_shared_take(lu);
	}
	pthread_mutex_unlock(&lu->lock);
	return prop;
}

bool scsi_lu_reset_wait(struct scsi_lu *lu, const struct scsi_itn *from,
			enum scsi_reset_kind kind, scsi_reset_done_fn done, void *arg)
{
	struct scsi_lu_proposal *prop = NULL;
	bool waits = false;
	uint16_t asc;

	(void)from;
	/*
	 * SAM-5 / SPC-4 (table of ASC 29h): LOGICAL UNIT RESET -> 29/03 BUS DEVICE
	 * RESET FUNCTION OCCURRED; TARGET RESET (warm) -> 29/02 SCSI BUS RESET
	 * OCCURRED is the SCSI-2 "bus" reset; iSCSI targets report 29/00 POWER ON,
	 * RESET, OR BUS DEVICE RESET OCCURRED for warm resets and 29/01 POWER ON
	 * OCCURRED for cold resets. Every nexus of the LU, including the one that
	 * asked, gets it.
	 */
	switch (kind) {
	case SCSI_RESET_LU:
		asc = ASC_BDR_OCCURRED;
		break;
	case SCSI_RESET_TARGET_COLD:
		asc = 0x2901;
		break;
	case SCSI_RESET_TARGET_WARM:
	default:
		asc = ASC_POWER_ON_RESET;
		break;
	}
	if (lu->sh) {
		prop = reset_prop(lu, kind, asc);
		/* the core aborted this node's tasks; the other nodes on delivery */
		waits = reset_submit(lu, prop, done, arg, REDO_RESET, kind, asc, NULL, 0);
		goto out;
	}
	pthread_mutex_lock(&lu->lock);
	scsi_ua_add_all(lu, NULL, asc);
	scsi_pr_reset(lu);   /* clears SCSI-2 reservations; persistent ones survive */
	if (kind == SCSI_RESET_TARGET_COLD) {
		/* a cold reset is a power cycle: mode pages back to defaults */
		lu->wce = lu->params.write_cache;
		lu->swp = false;
	}
	pthread_mutex_unlock(&lu->lock);
out:
	GW_NOTICE(SCSI_LOG, "lun %llu: %s reset", (unsigned long long)lu->params.lun,
		  kind == SCSI_RESET_LU ? "logical unit" :
		  kind == SCSI_RESET_TARGET_COLD ? "target cold" : "target warm");
	return waits;
}

void scsi_lu_tasks_cleared(struct scsi_lu *lu, const struct scsi_itn *from)
{
	(void)scsi_lu_tasks_cleared_wait(lu, from, NULL, NULL);
}

bool scsi_lu_tasks_cleared_wait(struct scsi_lu *lu, const struct scsi_itn *from,
				scsi_reset_done_fn done, void *arg)
{
	struct scsi_lu_proposal *prop = NULL;
	const char *iport;
	uint16_t rel;
	struct scsi_nexus *self;

	scsi_nexus_id(from, &iport, &rel);
	if (lu->sh) {
		prop = cleared_prop(lu, iport, rel);
		return reset_submit(lu, prop, done, arg, REDO_CLEARED, 0, 0, iport, rel);
	}
	pthread_mutex_lock(&lu->lock);
	self = scsi_nexus_lookup(lu, iport, rel, false);
	scsi_ua_add_all(lu, self, ASC_COMMANDS_CLEARED_BY_OTHER);
	pthread_mutex_unlock(&lu->lock);
	return false;
}

int scsi_lu_with_naa(const uint8_t naa[16], int (*fn)(struct scsi_lu *lu, void *arg), void *arg)
{
	struct list_head *pos;
	int rc = -ENOENT;

	pthread_mutex_lock(&all_lus_lock);
	list_for_each(pos, &all_lus) {
		struct scsi_lu *lu = list_entry(pos, struct scsi_lu, all_link);

		if (memcmp(lu->params.naa, naa, sizeof(lu->params.naa)) == 0) {
			rc = fn(lu, arg);
			break;
		}
	}
	pthread_mutex_unlock(&all_lus_lock);
	return rc;
}

void scsi_shared_poll(void)
{
	struct list_head aborts, *pos;

	list_init(&aborts);
	pthread_mutex_lock(&all_lus_lock);
	list_for_each(pos, &all_lus)
		scsi_lu_shared_poll_one(list_entry(pos, struct scsi_lu, all_link), &aborts);
	pthread_mutex_unlock(&all_lus_lock);
	/* no lock held: the core's handler takes its own */
	scsi_lu_shared_run_abort_list(&aborts);
}
