/* SPDX-License-Identifier: Apache-2.0 */
/* Daemon runtime: reactors, targets (backstores + logical units), portals,
 * start-up and clean shutdown. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/iscsi.h"
#include "util/log.h"

#define COMP "gateway"

struct reactor *gw_pick_reactor(struct gw *gw)
{
	unsigned int i = atomic_fetch_add(&gw->next_reactor, 1);

	return gw->reactors[i % gw->nreactors];
}

struct gw_target *gw_find_target(struct gw *gw, const char *iqn)
{
	for (size_t i = 0; i < gw->ntargets; i++)
		if (strcmp(gw->targets[i].cfg->iqn, iqn) == 0)
			return &gw->targets[i];
	return NULL;
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len;

	len = strnlen(path, sizeof(buf));
	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int target_open(struct gw *gw, struct gw_target *t, const struct gw_target_cfg *cfg)
{
	uint32_t max_lun = 0;
	int rc;

	t->gw = gw;
	t->cfg = cfg;
	for (size_t i = 0; i < cfg->nluns; i++)
		if (cfg->luns[i].lun > max_lun)
			max_lun = cfg->luns[i].lun;
	t->nluns = cfg->nluns ? max_lun + 1 : 0;
	t->luns = calloc(t->nluns ? t->nluns : 1, sizeof(*t->luns));
	t->bdevs = calloc(t->nluns ? t->nluns : 1, sizeof(*t->bdevs));
	t->ports = calloc(gw->nportals ? gw->nportals : 1, sizeof(*t->ports));
	if (!t->luns || !t->bdevs || !t->ports)
		return -ENOMEM;
	for (size_t i = 0; i < gw->nportals; i++) {
		const struct gw_portal_cfg *pc = gw->portals[i].cfg;

		t->ports[i].rel_port_id = pc->rel_port_id;
		t->ports[i].tpg_id = pc->tpg_id;
		snprintf(t->ports[i].name, sizeof(t->ports[i].name), "%s,t,0x%04x", cfg->iqn,
			 pc->tpgt);
	}
	for (size_t i = 0; i < cfg->nluns; i++) {
		const struct gw_lun_cfg *lc = &cfg->luns[i];
		struct bdev_file_params bp = {
			.path = lc->path, .create_size = lc->size, .block_size = lc->block_size,
			.readonly = lc->readonly,
		};
		struct scsi_lu_params lp;
		struct bdev *b;

		rc = bdev_file_open(&bp, &b);
		if (rc) {
			GW_ERR(COMP, "target %s LUN %u: cannot open %s: %s", cfg->iqn, lc->lun,
			       lc->path, strerror(-rc));
			return rc;
		}
		t->bdevs[lc->lun] = b;
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
		snprintf(lp.pr_path, sizeof(lp.pr_path), "%s/pr-", gw->cfg->state_dir);
		for (size_t k = 0; k < 16; k++) {
			size_t l = strlen(lp.pr_path);

			snprintf(lp.pr_path + l, sizeof(lp.pr_path) - l, "%02x", lc->naa[k]);
		}
		{
			size_t l = strlen(lp.pr_path);

			snprintf(lp.pr_path + l, sizeof(lp.pr_path) - l, ".json");
		}
		rc = scsi_lu_create(&lp, b, &t->luns[lc->lun]);
		if (rc) {
			GW_ERR(COMP, "target %s LUN %u: cannot create logical unit: %s", cfg->iqn,
			       lc->lun, strerror(-rc));
			return rc;
		}
		GW_INFO(COMP, "target %s LUN %u: %s, %llu bytes, block size %u%s", cfg->iqn,
			lc->lun, lc->path, (unsigned long long)b->info.size_bytes, b->info.block_size,
			lc->readonly ? ", read-only" : "");
	}
	return 0;
}

static void target_close(struct gw_target *t)
{
	for (uint32_t i = 0; i < t->nluns; i++) {
		if (t->luns && t->luns[i])
			scsi_lu_destroy(t->luns[i]);
		if (t->bdevs && t->bdevs[i])
			bdev_close(t->bdevs[i]);
	}
	free(t->luns);
	free(t->bdevs);
	free(t->ports);
}

static void *reactor_thread(void *arg)
{
	reactor_run(arg);
	return NULL;
}

int gw_start(struct gw_config *cfg, struct gw **out)
{
	struct gw *gw;
	long ncpu;
	int rc;

	gw = calloc(1, sizeof(*gw));
	if (!gw)
		return -ENOMEM;
	gw->cfg = cfg;
	list_init(&gw->sessions);
	pthread_mutex_init(&gw->sess_lock, NULL);
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
	rc = mkdir_p(cfg->state_dir);
	if (rc) {
		GW_ERR(COMP, "cannot create state directory %s: %s", cfg->state_dir, strerror(-rc));
		goto err;
	}

	gw->nportals = cfg->nportals;
	gw->portals = calloc(cfg->nportals ? cfg->nportals : 1, sizeof(*gw->portals));
	if (!gw->portals) {
		rc = -ENOMEM;
		goto err;
	}
	for (size_t i = 0; i < cfg->nportals; i++) {
		gw->portals[i].gw = gw;
		gw->portals[i].cfg = &cfg->portals[i];
		gw->portals[i].index = i;
		gw->portals[i].dm = gw_dm_for_transport(cfg->portals[i].transport);
		if (!gw->portals[i].dm) {
			GW_ERR(COMP, "portal %s:%u: transport not available in this build",
			       cfg->portals[i].addr, cfg->portals[i].port);
			rc = -EPROTONOSUPPORT;
			goto err;
		}
	}
	gw->targets = calloc(cfg->ntargets ? cfg->ntargets : 1, sizeof(*gw->targets));
	if (!gw->targets) {
		rc = -ENOMEM;
		goto err;
	}
	gw->ntargets = cfg->ntargets;
	for (size_t i = 0; i < cfg->ntargets; i++) {
		rc = target_open(gw, &gw->targets[i], &cfg->targets[i]);
		if (rc)
			goto err;
	}
	for (size_t i = 0; i < gw->nportals; i++) {
		rc = gw->portals[i].dm->listen(&gw->portals[i]);
		if (rc)
			goto err;
	}
	for (unsigned int i = 0; i < gw->nreactors; i++) {
		rc = -pthread_create(&gw->threads[i], NULL, reactor_thread, gw->reactors[i]);
		if (rc) {
			for (unsigned int k = 0; k < i; k++) {
				reactor_stop(gw->reactors[k]);
				pthread_join(gw->threads[k], NULL);
			}
			goto err;
		}
	}
	GW_NOTICE(COMP, "ready: %zu target(s), %zu portal(s), %u reactor(s)", gw->ntargets,
		  gw->nportals, gw->nreactors);
	*out = gw;
	return 0;

err:
	for (size_t i = 0; i < gw->nportals && gw->portals; i++)
		if (gw->portals[i].dm)
			gw->portals[i].dm->unlisten(&gw->portals[i]);
	gw->nreactors = gw->reactors ? gw->nreactors : 0;
	gw_destroy(gw);
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

static bool conns_gone(struct gw *gw)
{
	return atomic_load(&gw->stats.connections) == 0;
}

void gw_shutdown(struct gw *gw, unsigned int grace_ms)
{
	atomic_store(&gw->shutting_down, true);
	GW_NOTICE(COMP, "shutting down: asking initiators to log out");
	for (size_t i = 0; i < gw->nportals; i++)
		gw->portals[i].dm->unlisten(&gw->portals[i]);
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
	gw->nreactors_joined = true;
}

void gw_destroy(struct gw *gw)
{
	if (!gw)
		return;
	for (size_t i = 0; i < gw->ntargets; i++)
		target_close(&gw->targets[i]);
	free(gw->targets);
	free(gw->portals);
	for (unsigned int i = 0; gw->reactors && i < gw->nreactors; i++)
		reactor_destroy(gw->reactors[i]);
	free(gw->reactors);
	free(gw->threads);
	pthread_mutex_destroy(&gw->sess_lock);
	free(gw);
}
