/* SPDX-License-Identifier: Apache-2.0 */
/* Daemon runtime: reactors, targets (backstores + logical units), portals,
 * start-up and clean shutdown. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/iscsi.h"
#include "common/bufpool.h"
#include "common/fsutil.h"
#include "common/log.h"

#define COMP "gateway"

struct reactor *gw_pick_reactor(struct gw *gw)
{
	unsigned int i = atomic_fetch_add(&gw->next_reactor, 1);

	return gw->reactors[i % gw->nreactors];
}

struct gw_target *gw_find_target(struct gw *gw, const char *iqn)
{
	for (size_t i = 0; i < gw->ntargets; i++)
		if (strcmp(gw->targets[i]->cfg->iqn, iqn) == 0)
			return gw->targets[i];
	return NULL;
}

struct gw_barrier {
	atomic_uint left;
	void (*fn)(void *);
	void *arg;
};

static void barrier_step(void *arg)
{
	struct gw_barrier *b = arg;

	if (atomic_fetch_sub(&b->left, 1) == 1) {
		b->fn(b->arg);
		free(b);
	}
}

/* Memory for a request that frees something later; without it that leaks, said once here. */
static void *alloc_or_leak(size_t size, const char *what)
{
	void *p = malloc(size);

	if (!p)
		GW_WARN(COMP, "out of memory: leaking %s", what);
	return p;
}

void gw_free_after_reactors(struct gw *gw, void (*fn)(void *), void *arg)
{
	struct gw_barrier *b = alloc_or_leak(sizeof(*b), "a cross-reactor request");

	if (!b)
		return;
	b->fn = fn;
	b->arg = arg;
	atomic_init(&b->left, gw->nreactors);
	for (unsigned int i = 0; i < gw->nreactors; i++)
		if (reactor_send_msg(gw->reactors[i], barrier_step, b))
			barrier_step(b);
}

static void gw_retire(struct gw *gw, void (*free_fn)(void *), void *obj)
{
	struct gw_retired *r = alloc_or_leak(sizeof(*r), "a retired object");

	if (!r)
		return;
	r->free_fn = free_fn;
	r->obj = obj;
	r->next = gw->retired;
	gw->retired = r;
}

/*
 * A file of the LU named after its NAA: DIR/PREFIX-<naa in hex>SUFFIX. The
 * directory is cut short rather than the name when out is too small.
 */
static void naa_path_for(const struct gw_lun_cfg *lc, const char *dir, const char *prefix,
			 const char *suffix, char *out, size_t len)
{
	char hex[2 * sizeof(lc->naa) + 1];

	for (size_t k = 0; k < sizeof(lc->naa); k++)
		snprintf(hex + 2 * k, 3, "%02x", lc->naa[k]);
	snprintf(out, len, "%.*s/%s%s%s", (int)(len - sizeof(hex) - 10), dir, prefix, hex, suffix);
}

/* A LUN path for log lines: the user and secret of an iscsi:// URL left out. */
static const char *path_for_log(const char *path, char *buf, size_t len)
{
	const char *at, *slash;

	if (strncmp(path, "iscsi://", 8) != 0)
		return path;
	at = strchr(path + 8, '@');
	slash = strchr(path + 8, '/');
	if (!at || (slash && slash < at))
		return path;
	snprintf(buf, len, "iscsi://***@%s", at + 1);
	return buf;
}

/*
 * The backing stores open, one per LUN: a LUN whose store is another LUN's
 * is refused (two logical units on one store would have other serials, and
 * reservations and CAW locks covering one of them only). One store: the
 * same key (gw_store_key, the text of the path or URL) or the same identity
 * the backstore found at open (bdev.id: device + inode of a file, the
 * device number of a block device, the VPD 0x83 designator of a backend
 * LU reached by another address).
 */
struct gw_store {
	const struct bdev *b;
	char *key;
	char iqn[GW_NAME_MAX];
	uint32_t lun;
};

static bool id_same(const struct bdev_id *a, const struct bdev_id *b)
{
	return a->kind != BDEV_ID_NONE && a->kind == b->kind && a->len == b->len &&
	       memcmp(a->bytes, b->bytes, a->len) == 0;
}

static void id_describe(const struct bdev_id *id, char *buf, size_t len)
{
	uint64_t v[2] = { 0, 0 };
	size_t n;

	memcpy(v, id->bytes, id->len < sizeof(v) ? id->len : sizeof(v));
	switch (id->kind) {
	case BDEV_ID_FILE:
		snprintf(buf, len, "one file: device %u:%u inode %llu", major((dev_t)v[0]),
			 minor((dev_t)v[0]), (unsigned long long)v[1]);
		return;
	case BDEV_ID_BLOCK:
		snprintf(buf, len, "one block device: %u:%u", major((dev_t)v[0]), minor((dev_t)v[0]));
		return;
	case BDEV_ID_DESIGNATOR:
		n = (size_t)snprintf(buf, len, "one backend logical unit: VPD 0x83 designator type %u ",
				     id->bytes[0]);
		for (size_t i = 2; i < id->shown && i < 34 && n + 3 < len; i++, n += 2)
			snprintf(buf + n, len - n, "%02x", id->bytes[i]);
		return;
	default:
		snprintf(buf, len, "one store");
		return;
	}
}

/* Caller holds sess_lock (or the daemon is starting). 0, -EADDRINUSE (why filled), -ENOMEM. */
static int store_claim(struct gw *gw, const char *iqn, const struct gw_lun_cfg *lc,
		       const struct bdev *b, char *why, size_t whylen)
{
	char *key = malloc(GW_STORE_KEY_MAX), desc[160];
	struct gw_store *st;

	if (!key)
		return -ENOMEM;
	if (gw_store_key(lc->path, key, GW_STORE_KEY_MAX))
		key[0] = '\0';
	for (size_t i = 0; i < gw->nstores; i++) {
		const struct gw_store *o = &gw->stores[i];
		bool by_key = key[0] && strcmp(o->key, key) == 0;

		if (!by_key && !id_same(&o->b->id, &b->id))
			continue;
		if (by_key)
			snprintf(desc, sizeof(desc), "%.150s", key);
		else
			id_describe(&b->id, desc, sizeof(desc));
		gw_store_conflict(why, whylen, NULL, iqn, lc->lun, o->iqn, o->lun, desc);
		free(key);
		return -EADDRINUSE;
	}
	if (gw->nstores == gw->stores_cap) {
		size_t cap = gw->stores_cap ? 2 * gw->stores_cap : 16;

		st = realloc(gw->stores, cap * sizeof(*st));
		if (!st) {
			free(key);
			return -ENOMEM;
		}
		gw->stores = st;
		gw->stores_cap = cap;
	}
	st = &gw->stores[gw->nstores];
	st->key = strdup(key);  /* as long as it is, not GW_STORE_KEY_MAX per LUN */
	free(key);
	if (!st->key)
		return -ENOMEM;
	gw->nstores++;
	st->b = b;
	st->lun = lc->lun;
	snprintf(st->iqn, sizeof(st->iqn), "%s", iqn);
	return 0;
}

/* The store of a LUN closed or removed is free again. Caller holds sess_lock. */
static void store_forget(struct gw *gw, const struct bdev *b)
{
	for (size_t i = 0; b && i < gw->nstores; i++) {
		if (gw->stores[i].b != b)
			continue;
		free(gw->stores[i].key);
		gw->stores[i] = gw->stores[--gw->nstores];
		return;
	}
}

static void store_forget_target(struct gw *gw, const struct gw_target *t)
{
	for (uint32_t i = 0; t->bdevs && i < t->nluns; i++)
		store_forget(gw, t->bdevs[i]);
}

static struct gw_lun_fault *fault_find(const struct gw_target *t, uint32_t lun)
{
	for (size_t i = 0; i < t->nfaults; i++)
		if (t->faults[i].lun == lun)
			return &t->faults[i];
	return NULL;
}

static void fault_drop(struct gw_target *t, uint32_t lun)
{
	struct gw_lun_fault *f = fault_find(t, lun);

	if (f)
		*f = t->faults[--t->nfaults];
}

/*
 * LUN lun of t could not be opened (rc, why): logged at err when that is new
 * (the first failure, or another reason than the last one), at debug when a
 * reload finds it as it was, so that a LUN that stays broken costs one line.
 */
static void fault_set(struct gw_target *t, const char *iqn, uint32_t lun, int rc, const char *why)
{
	struct gw_lun_fault *f = fault_find(t, lun), *nf;

	if (f && f->rc == rc && !strcmp(f->why, why)) {
		GW_DEBUG(COMP, "target %s LUN %u: still not served: %s", iqn, lun, why);
		return;
	}
	GW_ERR(COMP, "target %s LUN %u: not served: %s", iqn, lun, why);
	if (!f) {
		nf = realloc(t->faults, (t->nfaults + 1) * sizeof(*nf));
		if (!nf)
			return;
		t->faults = nf;
		f = &t->faults[t->nfaults++];
	}
	f->lun = lun;
	f->rc = rc;
	snprintf(f->why, sizeof(f->why), "%s", why);
}

int gw_lun_fault(const struct gw_target *t, const struct gw_lun_cfg *lc, const char **state,
		 const char **why)
{
	const struct gw_lun_fault *f;

	if (lc->lun < t->nluns && t->luns[lc->lun]) {
		if (!t->bdevs[lc->lun] || !bdev_offline(t->bdevs[lc->lun]))
			return 0;
		*state = "offline";
		*why = "its iscsi:// backend does not answer";
		return 1;
	}
	f = fault_find(t, lc->lun);
	*state = "failed";
	*why = f ? f->why : "not opened";
	return 1;
}

/*
 * Opens LUN lc of target tcfg: its backstore, then its logical unit. A LUN
 * that cannot be opened is recorded (fault_set: logged at err once per
 * change of its reason). A store another LUN has open: -EADDRINUSE, the
 * reason in why_out; recorded and logged the same way unless quiet (the
 * caller, ChangeLun, answers with the reason and logs it).
 */
static int lun_open(struct gw *gw, struct gw_target *t, const struct gw_target_cfg *tcfg,
		    const struct gw_lun_cfg *lc, struct bdev **bout, struct scsi_lu **lout,
		    char *why_out, size_t why_outlen, bool quiet)
{
	char why[512] = "", logpath[PATH_MAX];
	struct scsi_lu_params lp;
	struct bdev *b;
	int rc;

	/* the backstore type follows from the path's scheme: iscsi:// is a backend iSCSI LUN */
	rc = bdev_open_lun(lc, why, sizeof(why), &b);
	if (rc) {
		if (!why[0])
			snprintf(why, sizeof(why), "%s: cannot open: %s",
				 path_for_log(lc->path, logpath, sizeof(logpath)), strerror(-rc));
		fault_set(t, tcfg->iqn, lc->lun, rc, why);
		return rc;
	}
	rc = store_claim(gw, tcfg->iqn, lc, b, why, sizeof(why));
	if (rc) {
		if (rc != -EADDRINUSE)
			snprintf(why, sizeof(why), "%s", strerror(-rc));
		if (why_out && why_outlen)
			snprintf(why_out, why_outlen, "%s", why);
		if (!quiet)
			fault_set(t, tcfg->iqn, lc->lun, rc, why);
		bdev_close(b);
		return rc;
	}
	memset(&lp, 0, sizeof(lp));
	lp.lun = lc->lun;
	snprintf(lp.vendor, sizeof(lp.vendor), "%s", lc->vendor);
	snprintf(lp.product, sizeof(lp.product), "%s", lc->product);
	snprintf(lp.revision, sizeof(lp.revision), "0001");
	snprintf(lp.serial, sizeof(lp.serial), "%s", lc->serial);
	memcpy(lp.naa, lc->naa, sizeof(lp.naa));
	lp.readonly = lc->readonly;
	lp.write_cache = lc->write_cache;
	lp.thin = lc->thin;
	lp.max_xfer_bytes = (uint32_t)lc->max_transfer;
	snprintf(lp.alua_dg, sizeof(lp.alua_dg), "%s", lc->device_group);
	/* the LU state: carried by the cluster, in a file shared with the other nodes, or ours */
	if (gw->lu_state_cluster)
		lp.cluster_state = true;
	else if (gw->cfg->shared_state_dir[0])
		naa_path_for(lc, gw->cfg->shared_state_dir, "lu-", ".state", lp.shared_path,
			     sizeof(lp.shared_path));
	else
		naa_path_for(lc, gw->cfg->state_dir, "pr-", ".json", lp.pr_path, sizeof(lp.pr_path));
	rc = scsi_lu_create(&lp, b, lout);
	if (rc) {
		snprintf(why, sizeof(why), "cannot create the logical unit: %s", strerror(-rc));
		fault_set(t, tcfg->iqn, lc->lun, rc, why);
		store_forget(gw, b);
		bdev_close(b);
		return rc;
	}
	*bout = b;
	if (fault_find(t, lc->lun)) {
		GW_NOTICE(COMP, "target %s LUN %u: served again", tcfg->iqn, lc->lun);
		fault_drop(t, lc->lun);
	}
	GW_INFO(COMP, "target %s LUN %u: %s, %llu bytes, block size %u%s", tcfg->iqn, lc->lun,
		b->name, (unsigned long long)b->info.size_bytes, b->info.block_size,
		lc->readonly ? ", read-only" : "");
	return 0;
}

/*
 * Fencing at the backend: a backend session registers this node's key only
 * while the node may serve, i.e. holds a valid lease (or none is enforced).
 */
static bool fence_may_register(void)
{
	struct scsi_lease l;
	enum scsi_lease_phase ph;

	scsi_alua_lease_get(&l);
	ph = scsi_lease_phase(&l, gw_now_ms());
	return ph == SCSI_LEASE_OFF || ph == SCSI_LEASE_VALID;
}

#define GW_FENCE_LUN_MS   3000u        /* one LUN's fencing session */
#define GW_FENCE_TOTAL_MS 5000u        /* all LUNs of one configuration */
#define GW_FENCE_THREADS  8u           /* LUNs fenced at once */

/* One configuration's fencing: the LUNs, shared by the fencing threads. */
struct fence_run {
	struct bdev **bdevs;
	const char **iqns;
	uint32_t *luns;
	size_t nbdevs;
	const uint64_t *keys;
	size_t nkeys;
	uint64_t start;
	atomic_size_t next;             /* the next LUN to take */
	atomic_uint done, failed, skipped;
};

static void *fence_thread(void *arg)
{
	struct fence_run *r = arg;
	size_t i;

	while ((i = atomic_fetch_add(&r->next, 1)) < r->nbdevs) {
		uint64_t spent = gw_now_ms() - r->start;
		uint32_t left;
		int rc;

		if (spent >= GW_FENCE_TOTAL_MS) {
			atomic_fetch_add(&r->skipped, 1);
			GW_ERR(COMP, "target %s LUN %u: not fenced at the backend, the fencing of "
			       "this configuration took %u ms already: the lease is the only guard",
			       r->iqns[i], r->luns[i], GW_FENCE_TOTAL_MS);
			continue;
		}
		left = (uint32_t)(GW_FENCE_TOTAL_MS - spent);
		rc = bdev_fence(r->bdevs[i], r->keys, r->nkeys,
			       left < GW_FENCE_LUN_MS ? left : GW_FENCE_LUN_MS);
		if (rc == 0)
			atomic_fetch_add(&r->done, 1);
		else if (rc != -EOPNOTSUPP)
			atomic_fetch_add(&r->failed, 1);
	}
	return NULL;
}

/*
 * Preempt keys (n of them, own: this node's key) on every iscsi:// LUN open
 * here, so the node they name can no longer write when another node takes
 * its device groups over. Up to GW_FENCE_THREADS LUNs at once (each a short
 * blocking session of its own), so that many LUNs cost about what the
 * slowest few cost. Bounded: a backend that does not answer is logged and
 * the caller goes on (the lease is then the only guard). Runs on the control
 * thread (or the SIGHUP path) under the reload lock, which may block and
 * waits here for its fencing threads; never holds a lock a reactor takes.
 * Reloads are serialised, so the targets and their backstores stay put.
 */
static void fence_keys_run(struct gw *gw, uint64_t own, const uint64_t *keys, size_t n)
{
	size_t cap = 0, nthr = 0;
	struct fence_run r = { .keys = keys, .nkeys = n, .start = gw_now_ms() };
	pthread_t thr[GW_FENCE_THREADS];

	bdev_iscsi_fence_setup(own, fence_may_register);
	for (size_t i = 0; i < gw->ntargets; i++)
		cap += gw->targets[i]->bdevs ? gw->targets[i]->nluns : 0;
	r.bdevs = calloc(cap ? cap : 1, sizeof(*r.bdevs));
	r.iqns = calloc(cap ? cap : 1, sizeof(*r.iqns));
	r.luns = calloc(cap ? cap : 1, sizeof(*r.luns));
	if (!r.bdevs || !r.iqns || !r.luns) {
		GW_ERR(COMP, "backend fencing: out of memory: no LUN fenced, the lease is the only "
		       "guard");
		goto out;
	}
	for (size_t i = 0; i < gw->ntargets; i++) {
		struct gw_target *t = gw->targets[i];

		for (uint32_t l = 0; t->bdevs && l < t->nluns; l++) {
			struct bdev *b = t->bdevs[l];

			if (!b || !bdev_fenceable(b))
				continue;
			r.bdevs[r.nbdevs] = b;
			r.iqns[r.nbdevs] = t->cfg->iqn;
			r.luns[r.nbdevs++] = l;
		}
	}
	/* this thread fences too: with one LUN (or no thread to be had) it fences alone */
	for (; nthr + 1 < GW_FENCE_THREADS && nthr + 1 < r.nbdevs; nthr++)
		if (pthread_create(&thr[nthr], NULL, fence_thread, &r))
			break;
	fence_thread(&r);
	for (size_t i = 0; i < nthr; i++)
		pthread_join(thr[i], NULL);
	GW_NOTICE(COMP, "backend fencing of %zu key(s) (first 0x%016llx): %u LUN(s) fenced, %u "
		  "failed, %u not tried, in %llu ms", n, (unsigned long long)keys[0],
		  atomic_load(&r.done), atomic_load(&r.failed), atomic_load(&r.skipped),
		  (unsigned long long)(gw_now_ms() - r.start));
out:
	free(r.bdevs);
	free(r.iqns);
	free(r.luns);
}

/* Before a configuration is applied (and before the ALUA states it carries): the keys it adds. */
static void backend_fence(struct gw *gw, const struct gw_config *ncfg)
{
	uint64_t keys[GW_PR_FENCE_MAX];
	size_t n = gw_config_fence_new(gw->cfg, ncfg, keys);

	if (n)
		fence_keys_run(gw, ncfg->backend_pr_key, keys, n);
}

int gw_fence_keys(struct gw *gw, const uint64_t *fence, size_t n)
{
	struct gw_config *cfg = gw->cfg;
	uint64_t keys[GW_PR_FENCE_MAX];
	size_t nnew = 0;

	if (n > GW_PR_FENCE_MAX)
		return -EINVAL;
	if (!cfg->backend_fencing || !cfg->backend_pr_key)
		return n ? -ENOKEY : 0;
	for (size_t i = 0; i < n; i++) {
		bool listed = false;

		for (size_t k = 0; k < cfg->nbackend_pr_fence; k++)
			listed |= cfg->backend_pr_fence[k] == fence[i];
		if (!listed)
			keys[nnew++] = fence[i];
	}
	if (nnew)
		fence_keys_run(gw, cfg->backend_pr_key, keys, nnew);
	if (n) /* none: fence may be NULL (an empty list of the control protocol) */
		memcpy(cfg->backend_pr_fence, fence, n * sizeof(*fence));
	cfg->nbackend_pr_fence = n;
	return 0;
}

/*
 * ALUA: the port map (this node's portals, and the other nodes' ports from
 * port_groups) replaces the previous one, so a reload forgets removed ports;
 * then the device groups' defaults ("default" has no owner unless configured),
 * who owns the ALUA policy (alua_policy: what SET TARGET PORT GROUPS does),
 * and whether the states need a lease (alua_lease).
 */
static void alua_configure(const struct gw_config *cfg)
{
	size_t max = cfg->nportals + cfg->nport_groups * GW_PG_PORTS_MAX + 1, n = 0;
	struct scsi_alua_port *p = calloc(max, sizeof(*p));
	bool dflt = false;
	int rc;

	if (!p) {
		GW_ERR(COMP, "out of memory building the ALUA port map");
		return;
	}
	for (size_t i = 0; i < cfg->nportals; i++)
		p[n++] = (struct scsi_alua_port){ cfg->portals[i].rel_port_id,
						  cfg->portals[i].tpg_id, true };
	for (size_t i = 0; i < cfg->nport_groups; i++) {
		const struct gw_port_group_cfg *g = &cfg->port_groups[i];

		for (size_t k = 0; k < g->nrel_port_ids; k++) {
			bool local = false;

			for (size_t j = 0; j < cfg->nportals; j++)
				local |= cfg->portals[j].rel_port_id == g->rel_port_ids[k];
			if (!local)
				p[n++] = (struct scsi_alua_port){ g->rel_port_ids[k], g->tpg_id, false };
		}
	}
	rc = scsi_alua_set_ports(p, n);
	if (rc)
		GW_ERR(COMP, "ALUA port map: %s", strerror(-rc));
	free(p);
	for (size_t i = 0; i < cfg->ndevice_groups; i++) {
		const struct gw_device_group_cfg *d = &cfg->device_groups[i];

		dflt |= strcmp(d->name, SCSI_ALUA_DG_DEFAULT) == 0;
		rc = scsi_alua_dg_configure(d->name, d->owner_tpg_id, d->non_owner_state);
		if (rc)
			GW_ERR(COMP, "device group %s: %s", d->name, strerror(-rc));
	}
	if (!dflt)
		(void)scsi_alua_dg_configure(SCSI_ALUA_DG_DEFAULT, 0, SCSI_ALUA_ACTIVE_NON_OPTIMIZED);
	scsi_alua_set_policy(cfg->alua_policy_external ? SCSI_ALUA_POLICY_EXTERNAL
						       : SCSI_ALUA_POLICY_LOCAL,
			     cfg->alua_request_timeout_ms);
	scsi_alua_lease_configure(cfg->alua_lease, cfg->alua_lease_unavailable_ms);
	bdev_iscsi_fence_setup(cfg->backend_fencing ? cfg->backend_pr_key : 0, fence_may_register);
}

/* Target ports: one per portal, named after the portal's TPGT. */
static struct scsi_port *ports_build(struct gw *gw, const struct gw_target_cfg *cfg)
{
	struct scsi_port *ports = calloc(gw->nportals ? gw->nportals : 1, sizeof(*ports));

	if (!ports)
		return NULL;
	for (size_t i = 0; i < gw->nportals; i++) {
		const struct gw_portal_cfg *pc = gw->portals[i]->cfg;

		ports[i].rel_port_id = pc->rel_port_id;
		ports[i].tpg_id = pc->tpg_id;
		snprintf(ports[i].name, sizeof(ports[i].name), "%s,t,0x%04x", cfg->iqn, pc->tpgt);
		/* REPORT TARGET PORT GROUPS lists a group once its ports are known */
		scsi_alua_register_port(&ports[i]);
	}
	return ports;
}

static void target_free(void *arg)
{
	struct gw_target *t = arg;

	for (uint32_t i = 0; t->luns && i < t->nluns; i++) {
		if (t->luns[i])
			scsi_lu_destroy(t->luns[i]);
		if (t->bdevs[i])
			bdev_close(t->bdevs[i]);
	}
	free(t->luns);
	free(t->bdevs);
	free(t->ports);
	free(t->faults);
	free(t);
}

/*
 * At start a LUN that cannot be opened fails the start; added by a reload
 * (tolerant), the target is served without it, the LUN reported failed
 * (gw_lun_fault) and opened again by the next reload.
 */
static int target_open(struct gw *gw, const struct gw_target_cfg *cfg, bool tolerant,
		       struct gw_target **out)
{
	struct gw_target *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	t->gw = gw;
	t->cfg = cfg;
	t->nluns = GW_MAX_LUNS;
	t->luns = calloc(GW_MAX_LUNS, sizeof(*t->luns));
	t->bdevs = calloc(GW_MAX_LUNS, sizeof(*t->bdevs));
	t->ports = ports_build(gw, cfg);
	if (!t->luns || !t->bdevs || !t->ports) {
		rc = -ENOMEM;
		goto err_free;
	}
	for (size_t i = 0; i < cfg->nluns; i++) {
		const struct gw_lun_cfg *lc = &cfg->luns[i];

		rc = lun_open(gw, t, cfg, lc, &t->bdevs[lc->lun], &t->luns[lc->lun], NULL, 0,
			      false);
		if (rc && !tolerant)
			goto err_free;
	}
	*out = t;
	return 0;

err_free:
	store_forget_target(gw, t);
	target_free(t);
	return rc;
}

static size_t portals_waiting(struct gw *gw)
{
	size_t n = 0;

	for (size_t i = 0; i < gw->nportals; i++)
		n += atomic_load(&gw->portals[i]->state) != GW_PORTAL_LISTENING;
	return n;
}

static void *reactor_thread(void *arg)
{
	reactor_run(arg);
	gw_dm_thread_exit();
	gw_buf_cache_drain();
	return NULL;
}

/* A start that failed: everything freed but the configuration, which the caller still owns. */
static void gw_abandon(struct gw *gw)
{
	for (size_t i = 0; i < gw->nportals; i++)
		gw_portal_close(gw->portals[i]);
	gw->cfg = NULL;
	gw_destroy(gw);
}

int gw_create(struct gw_config *cfg, struct gw **out)
{
	struct gw *gw;
	long ncpu;
	int rc;

	gw = calloc(1, sizeof(*gw));
	if (!gw)
		return -ENOMEM;
	gw->cfg = cfg;
	gw->lu_state_cluster = cfg->lu_state_cluster;
	gw->ifaddr_fd = -1;
	list_init(&gw->sessions);
	pthread_mutex_init(&gw->sess_lock, NULL);
	gw_login_slots_init(&gw->login_slots);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	gw->nreactors = cfg->reactors ? cfg->reactors : (ncpu > 0 ? (unsigned int)ncpu : 1);
	gw->reactors = calloc(gw->nreactors, sizeof(*gw->reactors));
	gw->threads = calloc(gw->nreactors, sizeof(*gw->threads));
	if (!gw->reactors || !gw->threads) {
		rc = -ENOMEM;
		goto err;
	}
	for (unsigned int i = 0; i < gw->nreactors; i++) {
		rc = reactor_create(i, &gw->reactors[i]);
		if (rc)
			goto err;
	}
	rc = gw_mkdir_p(cfg->state_dir);
	if (rc) {
		GW_ERR(COMP, "cannot create state directory %s: %s", cfg->state_dir, strerror(-rc));
		goto err;
	}
	if (cfg->shared_state_dir[0]) {
		rc = gw_mkdir_p(cfg->shared_state_dir);
		if (rc) {
			GW_ERR(COMP, "cannot create shared state directory %s: %s",
			       cfg->shared_state_dir, strerror(-rc));
			goto err;
		}
		/* other nodes' resets and aborts reach idle LUs too */
		rc = scsi_shared_poller_start(gw->reactors[0], 100);
		if (rc)
			goto err;
	}

	gw->portals = calloc(cfg->nportals ? cfg->nportals : 1, sizeof(*gw->portals));
	gw->targets = calloc(cfg->ntargets ? cfg->ntargets : 1, sizeof(*gw->targets));
	if (!gw->portals || !gw->targets) {
		rc = -ENOMEM;
		goto err;
	}
	for (size_t i = 0; i < cfg->nportals; i++) {
		rc = gw_portal_open(gw, &cfg->portals[i], i, &gw->portals[i]);
		if (rc)
			goto err;
		gw->nportals++;
	}
	gw_portal_watch_start(gw);
	alua_configure(cfg);
	for (size_t i = 0; i < cfg->ntargets; i++) {
		rc = target_open(gw, &cfg->targets[i], false, &gw->targets[i]);
		if (rc)
			goto err;
		gw->ntargets++;
	}
	*out = gw;
	return 0;

err:
	gw_abandon(gw);
	return rc;
}

int gw_start(struct gw_config *cfg, struct gw **out)
{
	struct gw *gw;
	int rc;

	rc = gw_create(cfg, &gw);
	if (rc)
		return rc;
	atomic_store(&gw->running, true);
	for (unsigned int i = 0; i < gw->nreactors; i++) {
		rc = -pthread_create(&gw->threads[i], NULL, reactor_thread, gw->reactors[i]);
		if (rc) {
			for (unsigned int k = 0; k < i; k++) {
				reactor_stop(gw->reactors[k]);
				pthread_join(gw->threads[k], NULL);
			}
			atomic_store(&gw->running, false);
			goto err;
		}
	}
	iscsi_task_register_preempt_abort(gw);
	GW_NOTICE(COMP, "ready: %zu target(s), %zu portal(s) (%zu waiting for their address), "
		  "%u reactor(s)", gw->ntargets, gw->nportals, portals_waiting(gw), gw->nreactors);
	*out = gw;
	return 0;

err:
	gw_abandon(gw);
	return rc;
}

static void shutdown_logout(struct iscsi_conn *c, void *arg)
{
	iscsi_conn_request_logout(c, (uint16_t)(uintptr_t)arg);
}

static void shutdown_drop(struct iscsi_conn *c, void *arg)
{
	(void)arg;
	iscsi_conn_drop(c, "target shutting down");
}

static bool sessions_empty(struct gw *gw)
{
	bool empty;

	pthread_mutex_lock(&gw->sess_lock);
	empty = list_empty(&gw->sessions);
	pthread_mutex_unlock(&gw->sess_lock);
	return empty;
}

static void wait_until(struct gw *gw, unsigned int ms, bool (*done)(struct gw *))
{
	for (unsigned int waited = 0; waited < ms && !done(gw); waited += 20)
		usleep(20 * 1000);
}

static bool portals_closed(struct gw *gw)
{
	bool closed = true;

	pthread_mutex_lock(&gw->sess_lock);
	for (size_t i = 0; i < gw->nportals; i++)
		closed &= atomic_load(&gw->portals[i]->closed);
	pthread_mutex_unlock(&gw->sess_lock);
	return closed;
}

static bool conns_gone(struct gw *gw)
{
	return atomic_load(&gw->stats.connections) == 0;
}

void gw_shutdown(struct gw *gw, unsigned int grace_ms)
{
	atomic_store(&gw->shutting_down, true);
	GW_NOTICE(COMP, "shutting down: asking initiators to log out");
	pthread_mutex_lock(&gw->sess_lock);
	for (size_t i = 0; i < gw->nportals; i++)
		gw_portal_close(gw->portals[i]);
	pthread_mutex_unlock(&gw->sess_lock);
	/* reactor 0 closes them: done before it stops, so no listener is left behind */
	wait_until(gw, 2000, portals_closed);
	iscsi_sessions_foreach(gw, shutdown_logout, (void *)(uintptr_t)((grace_ms + 999) / 1000));
	wait_until(gw, grace_ms, sessions_empty);
	if (!sessions_empty(gw))
		GW_NOTICE(COMP, "dropping sessions that did not log out");
	iscsi_sessions_foreach(gw, shutdown_drop, NULL);
	/* in-flight backend I/O completes before its connection is freed */
	wait_until(gw, 10000, conns_gone);
	if (!conns_gone(gw))
		GW_WARN(COMP, "%llu connection(s) still busy at shutdown",
			(unsigned long long)atomic_load(&gw->stats.connections));
	for (unsigned int i = 0; i < gw->nreactors; i++)
		reactor_stop(gw->reactors[i]);
	for (unsigned int i = 0; i < gw->nreactors; i++)
		pthread_join(gw->threads[i], NULL);
	atomic_store(&gw->running, false);
}

void gw_destroy(struct gw *gw)
{
	if (!gw)
		return;
	gw_portal_watch_stop(gw);
	for (size_t i = 0; i < gw->ntargets; i++)
		target_free(gw->targets[i]);
	free(gw->targets);
	for (size_t i = 0; i < gw->nstores; i++)
		free(gw->stores[i].key);
	free(gw->stores);
	for (size_t i = 0; i < gw->nportals; i++)
		free(gw->portals[i]);
	free(gw->portals);
	while (gw->retired) {
		struct gw_retired *r = gw->retired;

		gw->retired = r->next;
		r->free_fn(r->obj);
		free(r);
	}
	for (unsigned int i = 0; gw->reactors && i < gw->nreactors; i++)
		reactor_destroy(gw->reactors[i]);
	gw_dm_global_exit();
	free(gw->reactors);
	free(gw->threads);
	pthread_mutex_destroy(&gw->sess_lock);
	gw_login_slots_fini(&gw->login_slots);
	gw_config_free(gw->cfg);
	free(gw);
}

/* ---------------- reload ---------------- */

static bool portal_same(const struct gw_portal_cfg *a, const struct gw_portal_cfg *b)
{
	return a->transport == b->transport && a->port == b->port && strcmp(a->addr, b->addr) == 0;
}

static bool lun_same(const struct gw_lun_cfg *a, const struct gw_lun_cfg *b)
{
	return strcmp(a->path, b->path) == 0 && a->block_size == b->block_size &&
	       a->readonly == b->readonly && a->thin == b->thin &&
	       memcmp(a->naa, b->naa, sizeof(a->naa)) == 0 && strcmp(a->serial, b->serial) == 0 &&
	       strcmp(a->vendor, b->vendor) == 0 && strcmp(a->product, b->product) == 0 &&
	       a->max_transfer == b->max_transfer && a->backend_sessions == b->backend_sessions &&
	       a->backend_hold_s == b->backend_hold_s &&
	       a->backend_timeout_s == b->backend_timeout_s &&
	       a->backend_read_chunk == b->backend_read_chunk &&
	       strcmp(a->backend_initiator, b->backend_initiator) == 0;
}

static const struct gw_lun_cfg *find_lun(const struct gw_target_cfg *t, uint32_t lun)
{
	for (size_t i = 0; i < t->nluns; i++)
		if (t->luns[i].lun == lun)
			return &t->luns[i];
	return NULL;
}

static void retire_lu(void *arg)
{
	scsi_lu_destroy(arg);
}

static void retire_bdev(void *arg)
{
	bdev_close(arg);
}

static void retire_cfg(void *arg)
{
	gw_config_free(arg);
}

static void drop_removed(struct iscsi_conn *c, void *arg)
{
	(void)arg;
	if (!c->sess)
		return;
	if (c->portal->removed || (c->sess->target && c->sess->target->removed))
		iscsi_conn_drop(c, "its portal or target was removed by a configuration reload");
}

/*
 * A LUN that stays, with a size above its backstore's: grown online (the file
 * extended, a block device's size read again), hosts get CAPACITY DATA HAS
 * CHANGED on their next command (scsi_lu.c's listener); sessions stay.
 * iscsi:// LUNs follow their backend's size.
 */
static void lun_grow(struct gw_target *t, const struct gw_lun_cfg *ol,
		     const struct gw_lun_cfg *nl, const char *iqn)
{
	struct bdev *b = t->bdevs[nl->lun];
	bool grown;
	int rc;

	if (!b || !nl->size || nl->size <= b->info.size_bytes)
		return;
	rc = bdev_grow(b, nl->size, &grown);
	if (rc == -EOPNOTSUPP) {
		if (nl->size != ol->size)
			GW_NOTICE(COMP, "reload: target %s LUN %u: the size of a backend LUN is the "
				  "backend's: grow it there (hosts are told once it reports the "
				  "change)", iqn, nl->lun);
	} else if (rc) {
		GW_ERR(COMP, "reload: target %s LUN %u not grown to %llu bytes: %s", iqn, nl->lun,
		       (unsigned long long)nl->size, strerror(-rc));
	} else if (grown) {
		GW_NOTICE(COMP, "reload: target %s LUN %u grown to %llu bytes", iqn, nl->lun,
			  (unsigned long long)b->info.size_bytes);
	} else if (nl->size != ol->size) {
		GW_NOTICE(COMP, "reload: target %s LUN %u: the block device is still %llu bytes "
			  "(grow the device itself, then reload)", iqn, nl->lun,
			  (unsigned long long)b->info.size_bytes);
	}
}

/*
 * LUN changes of a target that stays, in two steps: the LUNs removed or
 * changed go first, from every target (their stores are free again for the
 * LUNs added after, in any target), then the new ones are opened. Caller
 * holds sess_lock.
 */
static void reload_luns_drop(struct gw *gw, struct gw_target *t, const struct gw_target_cfg *ncfg)
{
	char logpath[PATH_MAX];
	const struct gw_target_cfg *ocfg = t->cfg;
	struct list_head *pos;

	for (size_t i = 0; i < ocfg->nluns; i++) {
		const struct gw_lun_cfg *ol = &ocfg->luns[i];
		const struct gw_lun_cfg *nl = find_lun(ncfg, ol->lun);

		if (nl && lun_same(ol, nl)) {
			lun_grow(t, ol, nl, ocfg->iqn);
			/* another ALUA device group: the same LU, under other states */
			if (strcmp(ol->device_group, nl->device_group) && t->luns[ol->lun] &&
			    scsi_lu_set_device_group(t->luns[ol->lun], nl->device_group))
				GW_ERR(COMP, "reload: target %s LUN %u: device group %s not set", ocfg->iqn,
				       ol->lun, nl->device_group);
			continue;
		}
		if (!t->luns[ol->lun])
			continue;
		GW_NOTICE(COMP, "reload: target %s LUN %u (%s) removed", ocfg->iqn, ol->lun,
			  path_for_log(ol->path, logpath, sizeof(logpath)));
		list_for_each(pos, &gw->sessions) {
			struct iscsi_session *s = list_entry(pos, struct iscsi_session, link);

			if (s->target == t)
				scsi_lu_itn_remove(t->luns[ol->lun], &s->itn);
		}
		/* commands in flight still use them: freed at exit */
		/* retired objects are freed last in, first out: the LU before its backstore */
		store_forget(gw, t->bdevs[ol->lun]);
		gw_retire(gw, retire_bdev, t->bdevs[ol->lun]);
		gw_retire(gw, retire_lu, t->luns[ol->lun]);
		__atomic_store_n(&t->luns[ol->lun], NULL, __ATOMIC_RELEASE);
		t->bdevs[ol->lun] = NULL;
	}
	for (size_t i = t->nfaults; i-- > 0;)
		if (!find_lun(ncfg, t->faults[i].lun))
			fault_drop(t, t->faults[i].lun);
}

/*
 * A LUN opened while the target serves: every session of the target gets
 * its nexus on the new LU, then the reactors see the LU (release store).
 * Under gw->sess_lock.
 */
static void lun_publish(struct gw *gw, struct gw_target *t, uint32_t lun, struct bdev *b,
			struct scsi_lu *lu)
{
	struct list_head *pos;

	list_for_each(pos, &gw->sessions) {
		struct iscsi_session *s = list_entry(pos, struct iscsi_session, link);

		if (s->target == t)
			scsi_lu_itn_add(lu, &s->itn);
	}
	t->bdevs[lun] = b;
	__atomic_store_n(&t->luns[lun], lu, __ATOMIC_RELEASE);
}

static void reload_luns_add(struct gw *gw, struct gw_target *t, const struct gw_target_cfg *ncfg)
{
	char logpath[PATH_MAX];

	for (size_t i = 0; i < ncfg->nluns; i++) {
		const struct gw_lun_cfg *nl = &ncfg->luns[i];
		struct scsi_lu *lu;
		struct bdev *b;

		if (t->luns[nl->lun])
			continue;
		if (lun_open(gw, t, ncfg, nl, &b, &lu, NULL, 0, false))
			continue;       /* logged once per change of its reason */
		lun_publish(gw, t, nl->lun, b, lu);
		GW_NOTICE(COMP, "reload: target %s LUN %u (%s) added", ncfg->iqn, nl->lun,
			  path_for_log(nl->path, logpath, sizeof(logpath)));
	}
}

/* The target of iqn in use (not removed); caller holds sess_lock. */
static struct gw_target *target_by_iqn(struct gw *gw, const char *iqn)
{
	for (size_t i = 0; i < gw->ntargets; i++)
		if (!gw->targets[i]->removed && strcmp(gw->targets[i]->cfg->iqn, iqn) == 0)
			return gw->targets[i];
	return NULL;
}

/*
 * Takes gw->sess_lock (the caller unlocks it) and finds the target named
 * iqn, with its configuration (an element of gw->cfg, which this daemon
 * owns, so the caller may change it): NULL when there is none.
 */
static struct gw_target *target_lock(struct gw *gw, const char *iqn, struct gw_target_cfg **tc)
{
	struct gw_target *t;

	pthread_mutex_lock(&gw->sess_lock);
	t = target_by_iqn(gw, iqn);
	if (t)
		*tc = (struct gw_target_cfg *)(uintptr_t)t->cfg;
	return t;
}

bool gw_lun_exists(struct gw *gw, const char *iqn, uint32_t lun)
{
	struct gw_target *t;
	bool yes;

	if (lun >= GW_MAX_LUNS)
		return false;
	pthread_mutex_lock(&gw->sess_lock);
	t = target_by_iqn(gw, iqn);
	yes = t && t->luns[lun];
	pthread_mutex_unlock(&gw->sess_lock);
	return yes;
}

int gw_lun_add(struct gw *gw, const char *iqn, const struct gw_lun_cfg *lc, char *why,
	       size_t whylen)
{
	char logpath[PATH_MAX];
	struct gw_target_cfg *tc;
	struct gw_lun_cfg *luns;
	struct gw_target *t;
	struct scsi_lu *lu;
	struct bdev *b;
	int rc;

	if (lc->lun >= GW_MAX_LUNS)
		return -ERANGE;
	t = target_lock(gw, iqn, &tc);
	if (!t) {
		rc = -ENOENT;
		goto out;
	}
	/* an LU in the table: the configuration lists it (one that failed to open is not there) */
	if (t->luns[lc->lun]) {
		rc = -EEXIST;
		goto out;
	}
	if (tc->nluns + 1 > (tc->luns_cap > tc->nluns ? tc->luns_cap : tc->nluns)) {
		/* doubled: LUNs added one at a time do not copy the array each time */
		size_t cap = tc->nluns < 8 ? 16 : 2 * tc->nluns;

		luns = realloc(tc->luns, cap * sizeof(*luns));
		if (!luns) {
			rc = -ENOMEM;
			goto out;
		}
		tc->luns = luns;
		tc->luns_cap = cap;
	}
	luns = tc->luns;
	/* a store in use: the caller (ChangeLun) answers with why, and logs it */
	rc = lun_open(gw, t, tc, lc, &b, &lu, why, whylen, why && whylen);
	if (rc)
		goto out;
	luns[tc->nluns++] = *lc;
	lun_publish(gw, t, lc->lun, b, lu);
	GW_NOTICE(COMP, "target %s LUN %u (%s) added", iqn, lc->lun,
		  path_for_log(lc->path, logpath, sizeof(logpath)));
out:
	pthread_mutex_unlock(&gw->sess_lock);
	return rc;
}

int gw_lun_remove(struct gw *gw, const char *iqn, uint32_t lun)
{
	char logpath[PATH_MAX];
	struct gw_target_cfg *tc;
	struct gw_target *t;
	struct list_head *pos;
	size_t i;
	int rc = 0;

	t = target_lock(gw, iqn, &tc);
	if (!t) {
		rc = -ENOENT;
		goto out;
	}
	for (i = 0; i < tc->nluns && tc->luns[i].lun != lun; i++)
		;
	if (i == tc->nluns) {
		rc = -ENOENT;
		goto out;
	}
	GW_NOTICE(COMP, "target %s LUN %u (%s) removed", iqn, lun,
		  path_for_log(tc->luns[i].path, logpath, sizeof(logpath)));
	if (lun < GW_MAX_LUNS && t->luns[lun]) {
		list_for_each(pos, &gw->sessions) {
			struct iscsi_session *s = list_entry(pos, struct iscsi_session, link);

			if (s->target == t)
				scsi_lu_itn_remove(t->luns[lun], &s->itn);
		}
		/* commands in flight still use them: freed at exit, the LU before its backstore */
		store_forget(gw, t->bdevs[lun]);
		gw_retire(gw, retire_bdev, t->bdevs[lun]);
		gw_retire(gw, retire_lu, t->luns[lun]);
		__atomic_store_n(&t->luns[lun], NULL, __ATOMIC_RELEASE);
		t->bdevs[lun] = NULL;
	}
	memmove(&tc->luns[i], &tc->luns[i + 1], (tc->nluns - i - 1) * sizeof(*tc->luns));
	tc->nluns--;
	fault_drop(t, lun);
out:
	pthread_mutex_unlock(&gw->sess_lock);
	return rc;
}

int gw_reload(struct gw *gw, struct gw_config *ncfg)
{
	struct gw_portal **nportals;
	struct gw_target **ntargets;
	size_t np = 0, nt = 0;
	bool dropped = false;

	nportals = calloc(ncfg->nportals ? ncfg->nportals : 1, sizeof(*nportals));
	ntargets = calloc(ncfg->ntargets ? ncfg->ntargets : 1, sizeof(*ntargets));
	if (!nportals || !ntargets) {
		free(nportals);
		free(ntargets);
		gw_config_free(ncfg);
		return -ENOMEM;
	}
	backend_fence(gw, ncfg);
	if (ncfg->lu_state_cluster != gw->lu_state_cluster)
		GW_NOTICE(COMP, "reload: lu_state %s: for the logical units created from now on",
			  ncfg->lu_state_cluster ? "cluster" : "local");
	gw->lu_state_cluster = ncfg->lu_state_cluster;
	pthread_mutex_lock(&gw->sess_lock);
	/* the shared state directory is the cluster's: it changes only with a restart */
	if (strcmp(ncfg->shared_state_dir, gw->cfg->shared_state_dir) != 0) {
		GW_WARN(COMP, "reload: shared_state_dir changes only with a restart; keeping %s",
			gw->cfg->shared_state_dir[0] ? gw->cfg->shared_state_dir : "(none)");
		memcpy(ncfg->shared_state_dir, gw->cfg->shared_state_dir,
		       sizeof(ncfg->shared_state_dir));
	}
	/* portals: keep the same address/port/transport, open new ones, close the rest */
	for (size_t i = 0; i < gw->nportals; i++) {
		struct gw_portal *p = gw->portals[i];
		bool keep = false;

		for (size_t j = 0; j < ncfg->nportals; j++)
			keep |= portal_same(p->cfg, &ncfg->portals[j]);
		if (!keep) {
			GW_NOTICE(COMP, "reload: portal %s:%u removed", p->cfg->addr, p->cfg->port);
			p->removed = true;
			gw_portal_close(p);
			gw_retire(gw, free, p);
			dropped = true;
		}
	}
	for (size_t j = 0; j < ncfg->nportals; j++) {
		struct gw_portal *p = NULL;

		for (size_t i = 0; i < gw->nportals; i++)
			if (!gw->portals[i]->removed && portal_same(gw->portals[i]->cfg, &ncfg->portals[j]))
				p = gw->portals[i];
		if (p) {
			__atomic_store_n(&p->cfg, &ncfg->portals[j], __ATOMIC_RELEASE);
			p->index = np;
		} else if (gw_portal_open(gw, &ncfg->portals[j], np, &p)) {
			GW_ERR(COMP, "reload: portal %s:%u could not be opened", ncfg->portals[j].addr,
			       ncfg->portals[j].port);
			continue;
		} else {
			GW_NOTICE(COMP, "reload: portal %s:%u added", p->cfg->addr, p->cfg->port);
		}
		nportals[np++] = p;
	}
	free(gw->portals);
	gw->portals = nportals;
	gw->nportals = np;
	alua_configure(ncfg);

	/* targets: same IQN stays (new ACL/CHAP/limits apply to new logins) */
	for (size_t i = 0; i < gw->ntargets; i++) {
		struct gw_target *t = gw->targets[i];
		bool keep = false;

		for (size_t j = 0; j < ncfg->ntargets; j++)
			keep |= strcmp(t->cfg->iqn, ncfg->targets[j].iqn) == 0;
		if (!keep) {
			GW_NOTICE(COMP, "reload: target %s removed", t->cfg->iqn);
			t->removed = true;
			store_forget_target(gw, t);
			gw_retire(gw, target_free, t);
			dropped = true;
		}
	}
	/* the LUNs that go first, so that their stores are free for the ones added */
	for (size_t j = 0; j < ncfg->ntargets; j++)
		for (size_t i = 0; i < gw->ntargets; i++)
			if (!gw->targets[i]->removed &&
			    strcmp(gw->targets[i]->cfg->iqn, ncfg->targets[j].iqn) == 0)
				reload_luns_drop(gw, gw->targets[i], &ncfg->targets[j]);
	for (size_t j = 0; j < ncfg->ntargets; j++) {
		const struct gw_target_cfg *tc = &ncfg->targets[j];
		struct gw_target *t = NULL;
		struct scsi_port *ports;

		for (size_t i = 0; i < gw->ntargets; i++)
			if (!gw->targets[i]->removed && strcmp(gw->targets[i]->cfg->iqn, tc->iqn) == 0)
				t = gw->targets[i];
		if (t) {
			reload_luns_add(gw, t, tc);
			ports = ports_build(gw, tc);
			if (ports) {
				gw_retire(gw, free, t->ports);
				t->ports = ports;
			}
			__atomic_store_n(&t->cfg, tc, __ATOMIC_RELEASE);
		} else if (target_open(gw, tc, true, &t)) {
			GW_ERR(COMP, "reload: target %s could not be created", tc->iqn);
			continue;
		} else {
			GW_NOTICE(COMP, "reload: target %s added", tc->iqn);
		}
		ntargets[nt++] = t;
	}
	free(gw->targets);
	gw->targets = ntargets;
	gw->ntargets = nt;
	gw_retire(gw, retire_cfg, gw->cfg);
	gw->cfg = ncfg;
	pthread_mutex_unlock(&gw->sess_lock);
	if (dropped)
		iscsi_sessions_foreach(gw, drop_removed, NULL);
	GW_NOTICE(COMP, "configuration reloaded: %zu target(s), %zu portal(s)", nt, np);
	return 0;
}
