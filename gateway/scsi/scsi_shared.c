/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logical unit control state shared by the gateway nodes serving the same LU
 * (see scsi_shared.h for the file and its locks).
 *
 * The store (shs_*): open/validate/create the file, power-on detection, the
 * OFD locks, events. The LU glue (lu_shared_*): the node keeps working on its
 * in-memory copy (lists of registrations, reservation, mode bits) exactly as a
 * standalone node does; under the exclusive lock it first brings the copy up
 * to date (sync), changes it, then writes it back and posts the unit
 * attentions as events, which every node (this one included) applies to its
 * own nexuses. The command path compares the file's change counter with the
 * last one synced (one atomic load) and syncs only when they differ; a
 * reactor timer (scsi_shared_poller_start) does the same for idle LUs, so
 * aborts reach a node that receives no command.
 *
 * Lock order: lu->lock, then the file lock. Aborts for the core are queued in
 * the LU under lu->lock and run with no lock held (scsi_lu_shared_run_aborts).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "scsi/scsi_internal.h"
#include "common/log.h"
#include "common/reactor.h"

/* ------------------------------------------------------------------ store */

static int ofd_lock(int fd, short type, off_t start, bool wait)
{
	struct flock fl = {
		.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = 1,
	};

	for (;;) {
		if (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

int scsi_shs_lock(struct shs *s, bool exclusive)
{
	int rc;

	if (s->cluster) {
		pthread_mutex_lock(&s->mu);
		s->locked = true;
		return 0;
	}
	rc = ofd_lock(s->fd, exclusive ? F_WRLCK : F_RDLCK, SHS_LOCK_STATE, true);

	if (rc == 0)
		s->locked = true;
	return rc;
}

void scsi_shs_unlock(struct shs *s)
{
	if (!s->locked)
		return;
	s->locked = false;
	if (s->cluster) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	(void)ofd_lock(s->fd, F_UNLCK, SHS_LOCK_STATE, false);
}

static bool str_ok(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL;
}

static bool pr_type_ok(uint8_t t)
{
	return t == PR_TYPE_WE || t == PR_TYPE_EA || t == PR_TYPE_WE_RO || t == PR_TYPE_EA_RO ||
	       t == PR_TYPE_WE_AR || t == PR_TYPE_EA_AR;
}

/* Checks the state part (also used on every import: another node wrote it). */
int scsi_shs_state_validate(const struct shs_state *st, char *why, size_t len)
{
	uint32_t i;

	if (st->nregs > SHS_MAX_REGS) {
		snprintf(why, len, "%" PRIu32 " registrations (at most %u)", st->nregs, SHS_MAX_REGS);
		return -EINVAL;
	}
	for (i = 0; i < st->nregs; i++) {
		if (!str_ok(st->regs[i].iport, sizeof(st->regs[i].iport)) || !st->regs[i].iport[0] ||
		    st->regs[i].all_tg_pt > 1) {
			snprintf(why, len, "registration %" PRIu32 " is malformed", i);
			return -EINVAL;
		}
	}
	if (st->pr_held > 1 || st->aptpl > 1 || st->r2_held > 1 || st->wce > 1 || st->swp > 1) {
		snprintf(why, len, "a flag is neither 0 nor 1");
		return -EINVAL;
	}
	if (st->pr_held) {
		bool ar = st->pr_type == PR_TYPE_WE_AR || st->pr_type == PR_TYPE_EA_AR;

		if (!pr_type_ok(st->pr_type) || st->pr_holder >= (int32_t)st->nregs ||
		    st->pr_holder < -1 || (!ar && st->pr_holder < 0)) {
			snprintf(why, len, "reservation type %u holder %" PRId32 " is inconsistent",
				 st->pr_type, st->pr_holder);
			return -EINVAL;
		}
	}
	if (!str_ok(st->r2_iport, sizeof(st->r2_iport))) {
		snprintf(why, len, "the SCSI-2 reservation holder is malformed");
		return -EINVAL;
	}
	return 0;
}

/* Checks a mapped file; 0, or -EINVAL with a reason in why. */
static int shs_validate(const struct shs_file *f, const uint8_t naa[16], char *why, size_t len)
{
	if (memcmp(f->magic, SHS_MAGIC, sizeof(f->magic)) != 0) {
		snprintf(why, len, "not an isergw logical unit state file (bad magic)");
		return -EINVAL;
	}
	if (f->byte_order != SHS_BYTE_ORDER) {
		snprintf(why, len, "written by a host of another byte order");
		return -EINVAL;
	}
	if (f->version != SHS_VERSION) {
		snprintf(why, len, "format version %" PRIu32 ", this isergwd reads version %u",
			 f->version, SHS_VERSION);
		return -EINVAL;
	}
	if (f->size != sizeof(*f)) {
		snprintf(why, len, "header says %" PRIu64 " bytes, expected %zu", f->size, sizeof(*f));
		return -EINVAL;
	}
	if (memcmp(f->naa, naa, sizeof(f->naa)) != 0) {
		snprintf(why, len, "belongs to another logical unit (NAA differs)");
		return -EINVAL;
	}
	return scsi_shs_state_validate(&f->st, why, len);
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static void file_init(struct shs_file *f, const uint8_t naa[16], bool wce)
{
	memset(f, 0, sizeof(*f));
	f->version = SHS_VERSION;
	f->byte_order = SHS_BYTE_ORDER;
	f->size = sizeof(*f);
	memcpy(f->naa, naa, sizeof(f->naa));
	f->st.pr_holder = -1;
	f->st.wce = wce;
	atomic_store_explicit(&f->change, 1, memory_order_relaxed);
	f->state_gen = 1;
	memcpy(f->magic, SHS_MAGIC, sizeof(f->magic));         /* last: marks it initialized */
}

/* No other node has the file open: a power on of the LU (SPC-4 5.13.2). */
static void power_on(struct shs_file *f, bool wce)
{
	struct shs_state *st = &f->st;

	st->r2_held = 0;
	memset(st->r2_iport, 0, sizeof(st->r2_iport));
	st->r2_rel_port = 0;
	if (!st->aptpl) {
		st->pr_generation = 0;
		st->pr_held = 0;
		st->pr_type = 0;
		st->pr_holder = -1;
		st->nregs = 0;
		memset(st->regs, 0, sizeof(st->regs));
	}
	st->wce = wce;
	st->swp = 0;
	memset(f->ring, 0, sizeof(f->ring));
	f->power_ons++;
	f->state_gen++;
	atomic_fetch_add_explicit(&f->change, 1, memory_order_release);
}

int scsi_shs_open(const char *path, const uint8_t naa[16], bool default_wce, struct shs **out,
		  bool *power_on_out)
{
	struct shs *s;
	struct stat sb;
	char why[160];
	bool alone = false, fresh = false;
	int rc;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->fd < 0) {
		rc = -errno;
		GW_ERR(SCSI_LOG, "shared state %s: cannot open: %s", path, strerror(errno));
		goto err_free;
	}
	rc = scsi_shs_lock(s, true);
	if (rc) {
		GW_ERR(SCSI_LOG, "shared state %s: cannot lock (does the file system support "
		       "OFD locks?): %s", path, strerror(-rc));
		goto err_close;
	}
	if (fstat(s->fd, &sb) < 0) {
		rc = -errno;
		GW_ERR(SCSI_LOG, "shared state %s: fstat: %s", path, strerror(errno));
		goto err_unlock;
	}
	if (!S_ISREG(sb.st_mode)) {
		rc = -EINVAL;
		GW_ERR(SCSI_LOG, "shared state %s: not a regular file", path);
		goto err_unlock;
	}
	if (sb.st_size == 0) {
		if (ftruncate(s->fd, (off_t)sizeof(struct shs_file)) < 0) {
			rc = -errno;
			GW_ERR(SCSI_LOG, "shared state %s: cannot size it: %s", path, strerror(errno));
			goto err_unlock;
		}
		fresh = true;
	} else if ((uint64_t)sb.st_size != sizeof(struct shs_file)) {
		rc = -EINVAL;
		GW_ERR(SCSI_LOG, "shared state %s: %lld bytes, expected %zu (truncated, corrupt or "
		       "written by another version): refusing it", path, (long long)sb.st_size,
		       sizeof(struct shs_file));
		goto err_unlock;
	}
	s->f = mmap(NULL, sizeof(struct shs_file), PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->f == MAP_FAILED) {
		rc = -errno;
		s->f = NULL;
		GW_ERR(SCSI_LOG, "shared state %s: mmap: %s", path, strerror(errno));
		goto err_unlock;
	}
	/* a node killed between sizing and initializing leaves zeroes: start over */
	if (fresh || all_zero(s->f, offsetof(struct shs_file, change))) {
		file_init(s->f, naa, default_wce);
		fresh = true;
	} else if (shs_validate(s->f, naa, why, sizeof(why)) < 0) {
		rc = -EINVAL;
		GW_ERR(SCSI_LOG, "shared state %s: %s: refusing it", path, why);
		goto err_unmap;
	}
	/* alone? (every other node holds a read lock on the liveness byte) */
	rc = ofd_lock(s->fd, F_WRLCK, SHS_LOCK_ALIVE, false);
	if (rc == 0)
		alone = true;
	else if (rc != -EAGAIN && rc != -EACCES)
		goto err_lock_alive;
	if (alone)
		power_on(s->f, default_wce);
	rc = ofd_lock(s->fd, F_RDLCK, SHS_LOCK_ALIVE, false);
	if (rc)
		goto err_lock_alive;
	scsi_shs_unlock(s);
	if (power_on_out)
		*power_on_out = alone;
	GW_INFO(SCSI_LOG, "shared state %s: %s%s, %" PRIu32 " registration(s)%s", path,
		fresh ? "created" : "opened", alone ? ", first node (power on)" : "",
		s->f->st.nregs, s->f->st.pr_held ? ", reserved" : "");
	*out = s;
	return 0;

err_lock_alive:
	GW_ERR(SCSI_LOG, "shared state %s: liveness lock: %s", path, strerror(-rc));
err_unmap:
	munmap(s->f, sizeof(struct shs_file));
err_unlock:
	scsi_shs_unlock(s);
err_close:
	close(s->fd);
err_free:
	free(s);
	return rc;
}

/* The cluster's in-memory store: the state of a powered-on LU, version 0. */
static int shs_open_cluster(const uint8_t naa[16], bool default_wce, struct shs **out)
{
	struct shs *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->f = calloc(1, sizeof(*s->f));
	if (!s->f) {
		free(s);
		return -ENOMEM;
	}
	s->fd = -1;
	s->cluster = true;
	pthread_mutex_init(&s->mu, NULL);
	file_init(s->f, naa, default_wce);
	*out = s;
	return 0;
}

void scsi_shs_close(struct shs *s)
{
	if (!s)
		return;
	scsi_shs_unlock(s);
	if (s->cluster) {
		pthread_mutex_destroy(&s->mu);
		free(s->f);
		free(s);
		return;
	}
	munmap(s->f, sizeof(struct shs_file));
	close(s->fd);   /* drops the liveness lock */
	free(s);
}

uint64_t scsi_shs_post(struct shs *s, const struct shs_event *ev)
{
	struct shs_file *f = s->f;
	uint64_t seq = f->ev_seq + 1;
	struct shs_event *slot = &f->ring[seq % SHS_RING];

	*slot = *ev;
	slot->seq = seq;
	f->ev_seq = seq;
	return seq;
}

void scsi_shs_publish(struct shs *s, bool state_changed)
{
	if (state_changed)
		s->f->state_gen++;
	atomic_fetch_add_explicit(&s->f->change, 1, memory_order_release);
}

/* ---------------------------------------------------------------- LU glue */

struct sh_abort {
	struct list_head link;
	struct scsi_lu *lu;
	bool every_nexus;
	uint16_t rel_port;              /* 0: every target port */
	char iport[SHS_IPORT_MAX];
};

static uint64_t new_origin(void)
{
	uint64_t v = 0;
	struct timespec ts;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v) && v)
		return v;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)getpid() << 40) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ 1;
}

static void queue_abort(struct scsi_lu *lu, const struct shs_event *ev, const char *iport)
{
	struct sh_abort *a = calloc(1, sizeof(*a));

	if (!a) {
		GW_ERR(SCSI_LOG, "lun %llu: out of memory queuing an abort from another node",
		       (unsigned long long)lu->params.lun);
		return;
	}
	a->lu = lu;
	a->every_nexus = ev->kind == SHS_EV_UA_ALL;
	a->rel_port = (ev->flags & SHS_EVF_ALL_PORTS) ? 0 : ev->rel_port;
	snprintf(a->iport, sizeof(a->iport), "%s", iport);
	list_add_tail(&a->link, &lu->sh_aborts);
}

/* Applies one event to this node's nexuses (lu->lock held). */
static void apply_event(struct scsi_lu *lu, const struct shs_event *ev)
{
	char iport[SHS_IPORT_MAX];
	struct list_head *pos;

	if (!str_ok(ev->iport, sizeof(ev->iport))) {
		GW_WARN(SCSI_LOG, "lun %llu: shared event %" PRIu64 " is malformed: ignored",
			(unsigned long long)lu->params.lun, ev->seq);
		return;
	}
	memcpy(iport, ev->iport, sizeof(iport));
	switch (ev->kind) {
	case SHS_EV_UA_ALL: {
		const struct scsi_nexus *self = NULL;

		if (ev->flags & SHS_EVF_EXCEPT)
			self = scsi_nexus_lookup(lu, iport, ev->rel_port, false);
		scsi_ua_add_all(lu, self, ev->asc);
		break;
	}
	case SHS_EV_UA_NEXUS:
		if (ev->flags & SHS_EVF_ALL_PORTS) {
			list_for_each(pos, &lu->nexuses) {
				struct scsi_nexus *nx = list_entry(pos, struct scsi_nexus, link);

				if (strcmp(nx->iport, iport) == 0)
					scsi_ua_add(lu, nx, ev->asc);
			}
		} else {
			/* a nexus through one of our ports keeps its UA while logged out */
			scsi_ua_add(lu, scsi_nexus_lookup(lu, iport, ev->rel_port,
						scsi_alua_port_is_local(ev->rel_port)), ev->asc);
		}
		break;
	default:
		GW_WARN(SCSI_LOG, "lun %llu: shared event %" PRIu64 " of unknown kind %u: ignored",
			(unsigned long long)lu->params.lun, ev->seq, ev->kind);
		return;
	}
	/* the node that posted it has already aborted what it serves */
	if ((ev->flags & SHS_EVF_ABORT) && ev->origin != lu->sh_origin)
		queue_abort(lu, ev, iport);
}

static void apply_events(struct scsi_lu *lu)
{
	const struct shs_file *f = lu->sh->f;
	uint64_t last = f->ev_seq, seq;

	if (last < lu->sh_ev_seen) {
		GW_WARN(SCSI_LOG, "lun %llu: shared event sequence went back from %" PRIu64
			" to %" PRIu64, (unsigned long long)lu->params.lun, lu->sh_ev_seen, last);
		lu->sh_ev_seen = last;
		return;
	}
	seq = lu->sh_ev_seen + 1;
	if (last - lu->sh_ev_seen > SHS_RING) {
		GW_WARN(SCSI_LOG, "lun %llu: %" PRIu64 " events of other nodes were overwritten "
			"before this node read them", (unsigned long long)lu->params.lun,
			last - lu->sh_ev_seen - SHS_RING);
		seq = last - SHS_RING + 1;
	}
	for (; seq <= last; seq++) {
		const struct shs_event *ev = &f->ring[seq % SHS_RING];

		if (ev->seq != seq) {
			GW_WARN(SCSI_LOG, "lun %llu: shared event %" PRIu64 " missing from the ring",
				(unsigned long long)lu->params.lun, seq);
			continue;
		}
		apply_event(lu, ev);
	}
	lu->sh_ev_seen = last;
}

/*
 * Brings the local copy up to date (lu->lock and a file lock held); false if
 * the state could not be imported (the local copy is then stale).
 */
static bool sync_locked(struct scsi_lu *lu)
{
	struct shs_file *f = lu->sh->f;
	uint64_t change = atomic_load_explicit(&f->change, memory_order_acquire);
	bool ok = true;

	if (f->state_gen != lu->sh_state_gen) {
		char why[160];

		if (scsi_shs_state_validate(&f->st, why, sizeof(why)) < 0) {
			if (lu->sh_bad_gen != f->state_gen)
				GW_ERR(SCSI_LOG, "lun %llu: shared state written by another node is "
				       "corrupt (%s): keeping the previous state",
				       (unsigned long long)lu->params.lun, why);
			lu->sh_bad_gen = f->state_gen;
			ok = false;
		} else if (scsi_pr_import(lu, &f->st) < 0) {
			ok = false;     /* out of memory: logged, retried on the next command */
		} else {
			atomic_store(&lu->wce, f->st.wce != 0);
			atomic_store(&lu->swp, f->st.swp != 0);
			lu->sh_state_gen = f->state_gen;
		}
	}
	apply_events(lu);
	if (ok)
		atomic_store_explicit(&lu->sh_seen, change, memory_order_release);
	return ok;
}

int scsi_lu_shared_open(struct scsi_lu *lu)
{
	bool pon = false;
	int rc;

	list_init(&lu->sh_aborts);
	if (lu->params.cluster_state)
		rc = shs_open_cluster(lu->params.naa, lu->params.write_cache, &lu->sh);
	else
		rc = scsi_shs_open(lu->params.shared_path, lu->params.naa, lu->params.write_cache,
				   &lu->sh, &pon);
	if (rc)
		return rc;
	lu->sh_origin = new_origin();
	/* the lock order of every change: lu->lock, then the store's lock */
	pthread_mutex_lock(&lu->lock);
	rc = scsi_shs_lock(lu->sh, false);
	if (rc) {
		pthread_mutex_unlock(&lu->lock);
		GW_ERR(SCSI_LOG, "lun %llu: %s: cannot lock: %s", (unsigned long long)lu->params.lun,
		       lu->sh->cluster ? "cluster state" : lu->params.shared_path, strerror(-rc));
		scsi_shs_close(lu->sh);
		lu->sh = NULL;
		return rc;
	}
	/* events posted before we came are not ours to apply */
	lu->sh_ev_seen = lu->sh->f->ev_seq;
	lu->sh_state_gen = 0;
	rc = sync_locked(lu) ? 0 : -EINVAL;
	scsi_shs_unlock(lu->sh);
	pthread_mutex_unlock(&lu->lock);
	if (rc) {
		scsi_shs_close(lu->sh);
		lu->sh = NULL;
		scsi_pr_free(lu);
		return rc;
	}
	return 0;
}

void scsi_lu_shared_close(struct scsi_lu *lu)
{
	struct list_head *pos, *n;

	if (!lu->sh)
		return;
	list_for_each_safe(pos, n, &lu->sh_aborts) {
		list_del(pos);
		free(list_entry(pos, struct sh_abort, link));
	}
	scsi_lu_proposal_free(lu->cl_prop);
	lu->cl_prop = NULL;
	scsi_shs_close(lu->sh);
	lu->sh = NULL;
}

int scsi_lu_shared_begin(struct scsi_lu *lu)
{
	int rc = scsi_shs_lock(lu->sh, true);

	if (rc) {
		GW_ERR(SCSI_LOG, "lun %llu: cannot lock the shared state: %s",
		       (unsigned long long)lu->params.lun, strerror(-rc));
		return rc;
	}
	lu->sh_posted = false;
	if (!sync_locked(lu)) {
		/* changing a stale copy would overwrite what other nodes did */
		scsi_shs_unlock(lu->sh);
		return -EIO;
	}
	if (lu->sh->cluster) {
		scsi_lu_proposal_free(lu->cl_prop);
		lu->cl_prop = scsi_lu_proposal_new(lu);
		if (!lu->cl_prop) {
			scsi_shs_unlock(lu->sh);
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Cluster store, lu->lock and the store's lock held, at the end of a change:
 * the new state and the events go into the proposal, and the local copy
 * goes back to the state the cluster applied (it changes only when the
 * cluster applies the proposal, on every node alike).
 */
static void cluster_end(struct scsi_lu *lu, bool state_changed)
{
	struct shs *s = lu->sh;
	struct scsi_lu_proposal *p = lu->cl_prop;

	if (!p)
		return;
	if (lu->cl_force) {
		lu->cl_force = false;
		state_changed = true;   /* the same state, as the next version */
	}
	if (!state_changed && !p->nev) {
		scsi_lu_proposal_free(p);
		lu->cl_prop = NULL;
		return;
	}
	*p->st = s->f->st;
	scsi_pr_export(lu, p->st);
	p->st->wce = atomic_load(&lu->wce);
	p->st->swp = atomic_load(&lu->swp);
	p->base_version = s->version;
	/* back to what the cluster holds */
	if (state_changed) {
		(void)scsi_pr_import(lu, &s->f->st);
		atomic_store(&lu->wce, s->f->st.wce != 0);
		atomic_store(&lu->swp, s->f->st.swp != 0);
	}
}

void scsi_lu_shared_end(struct scsi_lu *lu, bool state_changed)
{
	struct shs *s = lu->sh;
	bool aptpl;

	if (s->cluster) {
		cluster_end(lu, state_changed);
		scsi_shs_unlock(s);
		return;
	}
	if (state_changed) {
		scsi_pr_export(lu, &s->f->st);
		s->f->st.wce = atomic_load(&lu->wce);
		s->f->st.swp = atomic_load(&lu->swp);
	}
	if (state_changed || lu->sh_posted) {
		scsi_shs_publish(s, state_changed);
		/* our own copy is the state just written; apply our events here too */
		if (state_changed)
			lu->sh_state_gen = s->f->state_gen;
		(void)sync_locked(lu);
	}
	aptpl = s->f->st.aptpl;
	scsi_shs_unlock(s);
	/* reservations that persist through power loss reach the disk now */
	if (state_changed && aptpl && msync(s->f, sizeof(*s->f), MS_SYNC) < 0)
		GW_ERR(SCSI_LOG, "lun %llu: msync of %s: %s", (unsigned long long)lu->params.lun,
		       lu->params.shared_path, strerror(errno));
}

void scsi_lu_shared_ua(struct scsi_lu *lu, uint8_t kind, uint8_t flags, uint16_t asc,
		       const char *iport, uint16_t rel_port)
{
	struct shs_event ev;

	if (lu->sh->cluster) {
		struct scsi_lu_proposal *p = lu->cl_prop;

		if (!p)
			return;
		if (p->nev == SCSI_LU_EVENTS_MAX) {
			GW_WARN(SCSI_LOG, "lun %llu: more than %u unit attentions in one change: "
				"some are lost", (unsigned long long)lu->params.lun, SCSI_LU_EVENTS_MAX);
			return;
		}
		ev = (struct shs_event){ .kind = kind, .flags = flags, .asc = asc,
					 .rel_port = rel_port };
		if (iport)
			snprintf(ev.iport, sizeof(ev.iport), "%s", iport);
		p->ev[p->nev++] = ev;
		lu->sh_posted = true;
		return;
	}
	memset(&ev, 0, sizeof(ev));
	ev.origin = lu->sh_origin;
	ev.kind = kind;
	ev.flags = flags;
	ev.asc = asc;
	ev.rel_port = rel_port;
	if (iport)
		snprintf(ev.iport, sizeof(ev.iport), "%s", iport);
	scsi_shs_post(lu->sh, &ev);
	lu->sh_posted = true;
}

/* Moves the LU's queued aborts to `out` (lu->lock held). */
static void take_aborts(struct scsi_lu *lu, struct list_head *out)
{
	while (!list_empty(&lu->sh_aborts)) {
		struct list_head *p = lu->sh_aborts.next;

		list_del(p);
		list_add_tail(p, out);
	}
}

static void run_aborts(struct list_head *todo)
{
	while (!list_empty(todo)) {
		struct sh_abort *a = list_entry(todo->next, struct sh_abort, link);

		list_del(&a->link);
		GW_NOTICE(SCSI_LOG, "lun %llu: aborting the tasks of %s%s (requested through "
			  "another node)", (unsigned long long)a->lu->params.lun,
			  a->every_nexus ? "every nexus" : a->iport,
			  a->every_nexus || a->rel_port ? "" : " on every port");
		scsi_pr_abort_nexus(a->lu, a->every_nexus ? NULL : a->iport, a->rel_port);
		free(a);
	}
}

void scsi_lu_shared_run_aborts(struct scsi_lu *lu)
{
	struct list_head todo;

	if (!lu->sh)
		return;
	list_init(&todo);
	pthread_mutex_lock(&lu->lock);
	take_aborts(lu, &todo);
	pthread_mutex_unlock(&lu->lock);
	run_aborts(&todo);
}

/* lu->lock held: read-lock the file and sync; false if the lock failed. */
static bool refresh_locked(struct scsi_lu *lu)
{
	int rc = scsi_shs_lock(lu->sh, false);

	if (rc) {
		GW_ERR(SCSI_LOG, "lun %llu: cannot lock the shared state: %s",
		       (unsigned long long)lu->params.lun, strerror(-rc));
		return false;
	}
	(void)sync_locked(lu);
	scsi_shs_unlock(lu->sh);
	return true;
}

void scsi_lu_shared_refresh(struct scsi_lu *lu)
{
	pthread_mutex_lock(&lu->lock);
	if (lu_shared_stale(lu))
		refresh_locked(lu);
	pthread_mutex_unlock(&lu->lock);
	scsi_lu_shared_run_aborts(lu);
}

void scsi_lu_shared_poll_one(struct scsi_lu *lu, struct list_head *aborts)
{
	if (!lu->sh)
		return;
	/* also when not stale: aborts synced where they could not run (nexus removal) */
	pthread_mutex_lock(&lu->lock);
	if (lu_shared_stale(lu))
		refresh_locked(lu);
	take_aborts(lu, aborts);
	pthread_mutex_unlock(&lu->lock);
}

void scsi_lu_shared_run_abort_list(struct list_head *aborts)
{
	run_aborts(aborts);
}

/* --------------------------------------------------------------- poller */

static struct {
	struct reactor *r;
	struct reactor_timer t;
	uint64_t interval_ms;
} poller;

static void poller_tick(void *arg)
{
	(void)arg;
	scsi_shared_poll();
	reactor_timer_arm(poller.r, &poller.t, poller.interval_ms);
}

static void poller_arm(void *arg)
{
	(void)arg;
	reactor_timer_arm(poller.r, &poller.t, poller.interval_ms);
}

int scsi_shared_poller_start(struct reactor *r, unsigned int interval_ms)
{
	poller.r = r;
	poller.interval_ms = interval_ms ? interval_ms : 100;
	reactor_timer_init(&poller.t, poller_tick, NULL);
	return reactor_send_msg(r, poller_arm, NULL);
}
