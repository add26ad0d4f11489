/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reservations: SCSI-2 RESERVE/RELEASE (SPC-2) and persistent reservations
 * (SPC-4 5.13, PERSISTENT RESERVE IN/OUT), the command conflict table, and
 * the persistence of PR state to params.pr_path.
 *
 * Persistence: every change is written as a small text file (see
 * docs/scsi.md) to "<pr_path>.tmp", fsync'ed and renamed over pr_path. The
 * state is restored by scsi_lu_create() whatever APTPL said: a gateway
 * restart or failover is not a power loss of the LU. The write is done
 * outside lu->lock, in sequence order.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scsi/scsi_internal.h"
#include "common/log.h"
#include "common/fsutil.h"

/* ----------------------------------------------------------------- helpers */

static void update_res_active(struct scsi_lu *lu)
{
	atomic_store_explicit(&lu->res_active, lu->r2_held || lu->pr_held, memory_order_release);
}

static bool type_all_regs(uint8_t type)
{
	return type == PR_TYPE_WE_AR || type == PR_TYPE_EA_AR;
}

static bool type_valid(uint8_t type)
{
	switch (type) {
	case PR_TYPE_WE: case PR_TYPE_EA: case PR_TYPE_WE_RO:
	case PR_TYPE_EA_RO: case PR_TYPE_WE_AR: case PR_TYPE_EA_AR:
		return true;
	default:
		return false;
	}
}

static struct pr_reg *reg_find(struct scsi_lu *lu, const char *iport, uint16_t rel)
{
	struct list_head *pos;

	list_for_each(pos, &lu->pr_regs) {
		struct pr_reg *r = list_entry(pos, struct pr_reg, link);

		if ((r->all_tg_pt || r->rel_port == rel) && strcmp(r->iport, iport) == 0)
			return r;
	}
	return NULL;
}

static bool is_holder(const struct scsi_lu *lu, const struct pr_reg *r)
{
	if (!lu->pr_held || !r)
		return false;
	return type_all_regs(lu->pr_type) || lu->pr_holder == r;
}

/*
 * Queues a UA for the initiator port(s) of a registration. With a shared
 * state it becomes an event for every node (abort: the other nodes also
 * abort that nexus's tasks).
 */
static void ua_to_reg_ex(struct scsi_lu *lu, const struct pr_reg *r, uint16_t asc, bool abort)
{
	struct list_head *pos;

	if (lu->sh) {
		scsi_lu_shared_ua(lu, SHS_EV_UA_NEXUS,
				  (uint8_t)((r->all_tg_pt ? SHS_EVF_ALL_PORTS : 0) |
				       (abort ? SHS_EVF_ABORT : 0)),
			     asc, r->iport, r->rel_port);
		return;
	}
	if (!r->all_tg_pt) {
		scsi_ua_add(lu, scsi_nexus_lookup(lu, r->iport, r->rel_port, true), asc);
		return;
	}
	list_for_each(pos, &lu->nexuses) {
		struct scsi_nexus *nx = list_entry(pos, struct scsi_nexus, link);

		if (strcmp(nx->iport, r->iport) == 0)
			scsi_ua_add(lu, nx, asc);
	}
}

static void ua_to_reg(struct scsi_lu *lu, const struct pr_reg *r, uint16_t asc)
{
	ua_to_reg_ex(lu, r, asc, false);
}

static void ua_to_regs_except(struct scsi_lu *lu, const struct pr_reg *except, uint16_t asc)
{
	struct list_head *pos;

	list_for_each(pos, &lu->pr_regs) {
		struct pr_reg *r = list_entry(pos, struct pr_reg, link);

		if (r != except)
			ua_to_reg(lu, r, asc);
	}
}

static void release_reservation(struct scsi_lu *lu)
{
	lu->pr_held = false;
	lu->pr_type = 0;
	lu->pr_holder = NULL;
	update_res_active(lu);
}

/* Removes a registration, applying what that means for the reservation. */
static void reg_remove(struct scsi_lu *lu, struct pr_reg *r)
{
	if (lu->pr_held) {
		if (type_all_regs(lu->pr_type)) {
			if (lu->pr_regs.next == &r->link && r->link.next == &lu->pr_regs)
				release_reservation(lu);        /* last registrant */
		} else if (lu->pr_holder == r) {
			uint8_t type = lu->pr_type;

			release_reservation(lu);
			list_del(&r->link);
			if (type == PR_TYPE_WE_RO || type == PR_TYPE_EA_RO)
				ua_to_regs_except(lu, NULL, ASC_RESERVATIONS_RELEASED);
			free(r);
			return;
		}
	}
	list_del(&r->link);
	free(r);
}

/* ------------------------------------------------------------ persistence */

/* Serializes the PR state (lu->lock held); returns a malloc'ed string. */
static char *pr_serialize(struct scsi_lu *lu)
{
	struct list_head *pos;
	size_t cap = 128, len;
	char *s;
	int holder = -1, i = 0;

	list_for_each(pos, &lu->pr_regs)
		cap += 300;
	s = malloc(cap);
	if (!s)
		return NULL;
	len = (size_t)snprintf(s, cap, "isergw-pr 1\ngeneration %" PRIu32 "\naptpl %d\n",
			       lu->pr_generation, lu->pr_aptpl ? 1 : 0);
	list_for_each(pos, &lu->pr_regs) {
		struct pr_reg *r = list_entry(pos, struct pr_reg, link);

		if (lu->pr_holder == r)
			holder = i;
		len += (size_t)snprintf(s + len, cap - len, "reg %016" PRIx64 " %u %d %s\n", r->key,
					r->rel_port, r->all_tg_pt ? 1 : 0, r->iport);
		i++;
	}
	if (lu->pr_held)
		snprintf(s + len, cap - len, "reservation %u %d\n", lu->pr_type, holder);
	return s;
}

static int pr_write_file(const char *path, const char *text)
{
	char tmp[4200], dir[4200];
	int fd, rc;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = gw_write_all(fd, text, strlen(text));
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		return rc;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

/* Called without lu->lock with a snapshot taken under it. */
static void pr_save(struct scsi_lu *lu, char *text, uint64_t seq)
{
	int rc;

	if (!text) {
		GW_ERR(SCSI_LOG, "lun %llu: out of memory saving persistent reservations",
		       (unsigned long long)lu->params.lun);
		return;
	}
	pthread_mutex_lock(&lu->pr_save_lock);
	if (seq > lu->pr_saved_seq) {
		rc = pr_write_file(lu->params.pr_path, text);
		if (rc < 0)
			GW_ERR(SCSI_LOG, "lun %llu: cannot save persistent reservations to %s: %s",
			       (unsigned long long)lu->params.lun, lu->params.pr_path,
			       strerror(-rc));
		else
			lu->pr_saved_seq = seq;
	}
	pthread_mutex_unlock(&lu->pr_save_lock);
	free(text);
}

void scsi_pr_free(struct scsi_lu *lu)
{
	struct list_head *pos, *n;

	list_for_each_safe(pos, n, &lu->pr_regs) {
		list_del(pos);
		free(list_entry(pos, struct pr_reg, link));
	}
	release_reservation(lu);
}

int scsi_pr_import(struct scsi_lu *lu, const struct shs_state *st)
{
	struct list_head fresh;
	struct pr_reg *holder = NULL;
	uint32_t i;

	list_init(&fresh);
	for (i = 0; i < st->nregs; i++) {
		struct pr_reg *r = calloc(1, sizeof(*r));

		if (!r) {
			while (!list_empty(&fresh)) {
				struct list_head *p = fresh.next;

				list_del(p);
				free(list_entry(p, struct pr_reg, link));
			}
			GW_ERR(SCSI_LOG, "lun %llu: out of memory reading the shared reservations",
			       (unsigned long long)lu->params.lun);
			return -ENOMEM;
		}
		r->key = st->regs[i].key;
		r->rel_port = st->regs[i].rel_port;
		r->all_tg_pt = st->regs[i].all_tg_pt != 0;
		snprintf(r->iport, sizeof(r->iport), "%s", st->regs[i].iport);
		if ((int32_t)i == st->pr_holder)
			holder = r;
		list_add_tail(&r->link, &fresh);
	}
	scsi_pr_free(lu);
	while (!list_empty(&fresh)) {
		struct list_head *p = fresh.next;

		list_del(p);
		list_add_tail(p, &lu->pr_regs);
	}
	lu->pr_generation = st->pr_generation;
	lu->pr_aptpl = st->aptpl != 0;
	lu->pr_held = st->pr_held != 0;
	lu->pr_type = lu->pr_held ? st->pr_type : 0;
	lu->pr_holder = (lu->pr_held && !type_all_regs(st->pr_type)) ? holder : NULL;
	lu->r2_held = st->r2_held != 0;
	lu->r2_rel_port = st->r2_rel_port;
	snprintf(lu->r2_iport, sizeof(lu->r2_iport), "%s", st->r2_iport);
	update_res_active(lu);
	return 0;
}

void scsi_pr_export(struct scsi_lu *lu, struct shs_state *st)
{
	struct list_head *pos;
	uint32_t n = 0, old = st->nregs;

	st->pr_holder = -1;
	list_for_each(pos, &lu->pr_regs) {
		struct pr_reg *r = list_entry(pos, struct pr_reg, link);
		struct shs_reg *e = &st->regs[n];

		if (n == SHS_MAX_REGS)
			break;          /* pr_register refuses more */
		memset(e, 0, sizeof(*e));
		e->key = r->key;
		e->rel_port = r->rel_port;
		e->all_tg_pt = r->all_tg_pt;
		snprintf(e->iport, sizeof(e->iport), "%s", r->iport);
		if (lu->pr_holder == r)
			st->pr_holder = (int32_t)n;
		n++;
	}
	if (old > SHS_MAX_REGS)
		old = SHS_MAX_REGS;
	if (old > n)
		memset(&st->regs[n], 0, (size_t)(old - n) * sizeof(st->regs[0]));
	st->nregs = n;
	st->pr_generation = lu->pr_generation;
	st->aptpl = lu->pr_aptpl;
	st->pr_held = lu->pr_held;
	st->pr_type = lu->pr_held ? lu->pr_type : 0;
	st->r2_held = lu->r2_held;
	st->r2_rel_port = lu->r2_held ? lu->r2_rel_port : 0;
	memset(st->r2_iport, 0, sizeof(st->r2_iport));
	if (lu->r2_held)
		snprintf(st->r2_iport, sizeof(st->r2_iport), "%s", lu->r2_iport);
}

int scsi_pr_load(struct scsi_lu *lu)
{
	char line[512];
	struct stat st;
	FILE *f;
	int fd, lineno = 0, nregs = 0, rc = 0;
	struct pr_reg **byidx = NULL;

	if (!lu->params.pr_path[0])
		return 0;
	/* a regular file only: opening a FIFO left there would wait for a writer */
	fd = gw_open_regular(lu->params.pr_path, O_RDONLY, &st);
	if (fd == -ENOENT)
		return 0;
	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		rc = fd == -GW_ENOTREG ? -EINVAL : fd < 0 ? fd : -errno;
		GW_ERR(SCSI_LOG, "lun %llu: cannot read %s: %s", (unsigned long long)lu->params.lun,
		       lu->params.pr_path, fd == -GW_ENOTREG ? gw_file_kind(&st) : strerror(-rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	while (fgets(line, sizeof(line), f)) {
		uint64_t key;
		unsigned int rel, type, ver;
		int atp, holder;
		char iport[256];

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (lineno == 1) {
			if (sscanf(line, "isergw-pr %u", &ver) != 1 || ver != 1)
				goto bad;
			continue;
		}
		if (sscanf(line, "generation %" SCNu32, &lu->pr_generation) == 1)
			continue;
		if (sscanf(line, "aptpl %d", &atp) == 1) {
			lu->pr_aptpl = atp != 0;
			continue;
		}
		if (sscanf(line, "reg %" SCNx64 " %u %d %255s", &key, &rel, &atp, iport) == 4) {
			struct pr_reg *r = calloc(1, sizeof(*r)), **nb;

			nb = realloc(byidx, sizeof(*byidx) * (size_t)(nregs + 1));
			if (!r || !nb) {
				free(r);
				if (nb)
					byidx = nb;
				rc = -ENOMEM;
				goto out;
			}
			byidx = nb;
			r->key = key;
			r->rel_port = (uint16_t)rel;
			r->all_tg_pt = atp != 0;
			snprintf(r->iport, sizeof(r->iport), "%s", iport);
			list_add_tail(&r->link, &lu->pr_regs);
			byidx[nregs++] = r;
			continue;
		}
		if (sscanf(line, "reservation %u %d", &type, &holder) == 2) {
			if (!type_valid((uint8_t)type) || holder >= nregs ||
			    (!type_all_regs((uint8_t)type) && holder < 0))
				goto bad;
			lu->pr_held = true;
			lu->pr_type = (uint8_t)type;
			lu->pr_holder = type_all_regs((uint8_t)type) ? NULL : byidx[holder];
			continue;
		}
		if (line[0] == '\0' || line[0] == '#')
			continue;
		goto bad;
	}
	update_res_active(lu);
	GW_INFO(SCSI_LOG, "lun %llu: restored %d registration(s)%s from %s",
		(unsigned long long)lu->params.lun, nregs, lu->pr_held ? " and a reservation" : "",
		lu->params.pr_path);
	goto out;
bad:
	GW_ERR(SCSI_LOG, "lun %llu: %s:%d: malformed persistent reservation state",
	       (unsigned long long)lu->params.lun, lu->params.pr_path, lineno);
	rc = -EINVAL;
out:
	free(byidx);
	fclose(f);
	if (rc < 0)
		scsi_pr_free(lu);
	return rc;
}

/* -------------------------------------------------------- conflict checks */

bool scsi_pr_check_conflict(struct scsi_cmd *cmd, const struct scsi_opdef *def)
{
	struct scsi_lu *lu = cmd->lu;
	const char *iport;
	uint16_t rel;
	int prc = def->prc;
	bool conflict = false;

	/* START STOP UNIT with START=1, POWER CONDITION=0 and PREVENT=0 are harmless */
	if (def->op == 0x1b && (cmd->cdb[4] & 0xf1) == 0x01)
		prc = PRC_ALLOW;
	if (def->op == 0x1e && (cmd->cdb[4] & 0x03) == 0)
		prc = PRC_ALLOW;

	scsi_nexus_id(cmd->itn, &iport, &rel);
	pthread_mutex_lock(&lu->lock);
	if (lu->r2_held && !(def->flags & OPF_R2_OK) &&
	    (lu->r2_rel_port != rel || strcmp(lu->r2_iport, iport) != 0)) {
		conflict = true;
	} else if (lu->pr_held && prc != PRC_ALLOW) {
		struct pr_reg *r = reg_find(lu, iport, rel);

		if (!is_holder(lu, r)) {
			switch (lu->pr_type) {
			case PR_TYPE_WE:
				conflict = prc == PRC_WRITE;
				break;
			case PR_TYPE_EA:
				conflict = true;
				break;
			case PR_TYPE_WE_RO:
			case PR_TYPE_WE_AR:
				conflict = !r && prc == PRC_WRITE;
				break;
			case PR_TYPE_EA_RO:
			case PR_TYPE_EA_AR:
				conflict = !r;
				break;
			default:
				conflict = true;
				break;
			}
		}
	}
	pthread_mutex_unlock(&lu->lock);
	return conflict;
}

static bool r2_holder_is(const struct scsi_lu *lu, const char *iport, uint16_t rel)
{
	return lu->r2_held && lu->r2_rel_port == rel && strcmp(lu->r2_iport, iport) == 0;
}

struct scsi_lu_proposal *scsi_pr_nexus_gone(struct scsi_lu *lu, const char *iport, uint16_t rel)
{
	bool changed = false;

	/* only this node can have reserved through this nexus: the local copy knows */
	if (!r2_holder_is(lu, iport, rel))
		return NULL;
	if (lu->sh && scsi_lu_shared_begin(lu) < 0)
		return NULL;
	if (r2_holder_is(lu, iport, rel)) {
		lu->r2_held = false;
		update_res_active(lu);
		changed = true;
	}
	GW_INFO(SCSI_LOG, "lun %llu: the SCSI-2 reservation of %s (port %u) released: nexus gone",
		(unsigned long long)lu->params.lun, iport, rel);
	if (lu->sh) {
		scsi_lu_shared_end(lu, changed);
		return lu_shared_take(lu);      /* the caller submits it once unlocked */
	}
	return NULL;
}

void scsi_pr_reset(struct scsi_lu *lu)
{
	lu->r2_held = false;
	update_res_active(lu);
}

/* ------------------------------------------------------ RESERVE / RELEASE */

/*
 * Cluster store: a command whose change went to the cluster ends here, on
 * its reactor, with the cluster's answer (see scsi_lu_cluster_submit). ctx holds
 * what the command computed; rerun runs it again on the newer state.
 */
struct pr_after {
	void (*rerun)(struct scsi_cmd *cmd);
	int res;                        /* enum pr_result, or the conflict flag */
	bool conflict;
	size_t npreempted;
	struct pr_preempted *preempted;
	uint8_t sa, type;
	char iport[256];
};

static void r2_finish(struct scsi_cmd *cmd, int status, void *ctx)
{
	struct pr_after *a = ctx;

	if (cmd && status == 0) {
		if (a->conflict)
			scsi_conflict(cmd);
		else
			scsi_good(cmd);
	} else if (cmd && status == -ESTALE && scsi_lu_cluster_rerun_ok(cmd)) {
		a->rerun(cmd);
	} else if (cmd) {
		scsi_lu_cluster_fail(cmd, status);
	}
	free(a);
}

/* No lock held: a change made, held until the cluster answers; false: none to wait for. */
static bool r2_submit(struct scsi_cmd *cmd, struct scsi_lu_proposal *prop, bool conflict,
		      void (*rerun)(struct scsi_cmd *cmd))
{
	struct pr_after *a;
	int rc;

	if (!prop)
		return false;
	a = calloc(1, sizeof(*a));
	if (!a) {
		scsi_lu_proposal_free(prop);
		scsi_fail(cmd, SCSI_SK_ABORTED_COMMAND, ASC_INSUFFICIENT_RESOURCES);
		return true;
	}
	a->conflict = conflict;
	a->rerun = rerun;
	rc = scsi_lu_cluster_submit(cmd->lu, prop, cmd, r2_finish, a);
	if (rc) {
		free(a);
		scsi_lu_cluster_fail(cmd, rc);
	}
	return true;
}

/*
 * lu->lock held, the change made: the lock dropped, a RESERVE(6) or
 * RELEASE(6) (what) completes, or waits for the cluster (then rerun).
 */
static void r2_end(struct scsi_cmd *cmd, const char *what, const char *iport, uint16_t rel,
		   bool conflict, bool changed, void (*rerun)(struct scsi_cmd *cmd))
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_lu_proposal *prop = NULL;

	if (lu->sh) {
		scsi_lu_shared_end(lu, changed);
		prop = lu_shared_take(lu);
	}
	pthread_mutex_unlock(&lu->lock);
	if (lu->sh)
		scsi_lu_shared_run_aborts(lu);
	GW_INFO(SCSI_LOG, "lun %llu: %s from %s (port %u): %s%s",
		(unsigned long long)lu->params.lun, what, iport, rel,
		conflict ? "conflict" : changed ? "done" : "nothing to do",
		prop ? " (to the cluster)" : "");
	if (r2_submit(cmd, prop, conflict, rerun))
		return;
	if (conflict)
		scsi_conflict(cmd);
	else
		scsi_good(cmd);
}

/*
 * RESERVE and RELEASE: the nexus, and the LU locked with its shared state
 * current; false when that state cannot be read (cmd failed, nothing held).
 */
static bool r2_begin(struct scsi_cmd *cmd, const char **iport, uint16_t *rel)
{
	struct scsi_lu *lu = cmd->lu;

	scsi_nexus_id(cmd->itn, iport, rel);
	pthread_mutex_lock(&lu->lock);
	if (lu->sh && scsi_lu_shared_begin(lu) < 0) {
		pthread_mutex_unlock(&lu->lock);
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return false;
	}
	return true;
}

void scsi_pr_reserve6(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	const char *iport;
	uint16_t rel;
	bool conflict = false, changed = false;

	if (cmd->cdb[0] == 0x56 && (cmd->cdb[1] & 0x12)) {     /* 3RDPTY, LONGID */
		scsi_fail_cdb(cmd, 1, (cmd->cdb[1] & 0x10) ? 4 : 1);
		return;
	}
	if (cmd->cdb[0] == 0x16 && (cmd->cdb[1] & 0x01)) {     /* obsolete extents */
		scsi_fail_cdb(cmd, 1, 0);
		return;
	}
	if (!r2_begin(cmd, &iport, &rel))
		return;
	if (!list_empty(&lu->pr_regs)) {
		/* SPC-3 5.6.3: RESERVE/RELEASE conflict while PR registrations exist */
		conflict = true;
	} else if (lu->r2_held && !r2_holder_is(lu, iport, rel)) {
		conflict = true;
		/*
		 * held through another node, whose release (a lost nexus) may be on
		 * its way: the answer after one round trip of the cluster's order
		 */
		if (lu->sh && lu->sh->cluster && !scsi_alua_port_is_local(lu->r2_rel_port) &&
		    cmd->cluster_reruns == 0)
			lu->cl_force = true;
	} else {
		changed = !lu->r2_held;
		lu->r2_held = true;
		lu->r2_rel_port = rel;
		snprintf(lu->r2_iport, sizeof(lu->r2_iport), "%s", iport);
		update_res_active(lu);
	}
	r2_end(cmd, "RESERVE", iport, rel, conflict, changed, scsi_pr_reserve6);
}

void scsi_pr_release6(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	const char *iport;
	uint16_t rel;
	bool conflict = false, changed = false;

	if (cmd->cdb[0] == 0x57 && (cmd->cdb[1] & 0x12)) {
		scsi_fail_cdb(cmd, 1, (cmd->cdb[1] & 0x10) ? 4 : 1);
		return;
	}
	if (!r2_begin(cmd, &iport, &rel))
		return;
	if (!list_empty(&lu->pr_regs)) {
		conflict = true;
	} else if (r2_holder_is(lu, iport, rel)) {
		lu->r2_held = false;
		update_res_active(lu);
		changed = true;
	}
	/* releasing from a nexus that does not hold the reservation is a no-op */
	r2_end(cmd, "RELEASE", iport, rel, conflict, changed, scsi_pr_release6);
}

/* ---------------------------------------------------- PERSISTENT RESERVE IN */

/* iSCSI TransportID, format 01b (name + ISID); returns its length. */
static uint32_t put_transport_id(uint8_t *p, const char *iport)
{
	size_t n = strnlen(iport, 255);
	size_t len = (n + 1 + 3) & ~(size_t)3;

	if (len < 20)
		len = 20;
	memset(p, 0, 4 + len);
	p[0] = 0x40 | 0x05;
	put_be16(&p[2], (uint16_t)len);
	memcpy(&p[4], iport, n);
	return (uint32_t)(4 + len);
}

void scsi_pr_in(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	uint8_t sa = cmd->cdb[1] & 0x1f;
	uint16_t alloc = get_be16(&cmd->cdb[7]);
	struct list_head *pos;
	uint8_t *d;
	size_t cap = 64;
	uint32_t len = 8;

	pthread_mutex_lock(&lu->lock);
	list_for_each(pos, &lu->pr_regs)
		cap += 24 + 4 + 260;
	d = calloc(1, cap);
	if (!d) {
		pthread_mutex_unlock(&lu->lock);
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	put_be32(&d[0], lu->pr_generation);
	switch (sa) {
	case 0x00:      /* READ KEYS */
		list_for_each(pos, &lu->pr_regs) {
			put_be64(&d[len], list_entry(pos, struct pr_reg, link)->key);
			len += 8;
		}
		put_be32(&d[4], len - 8);
		break;
	case 0x01:      /* READ RESERVATION */
		if (lu->pr_held) {
			if (!type_all_regs(lu->pr_type) && lu->pr_holder)
				put_be64(&d[8], lu->pr_holder->key);
			d[21] = lu->pr_type & 0x0f;     /* scope LU_SCOPE */
			len += 16;
		}
		put_be32(&d[4], len - 8);
		break;
	case 0x02:      /* REPORT CAPABILITIES */
		put_be16(&d[0], 8);
		d[2] = 0x10 | 0x04 | 0x01;      /* CRH, ATP_C, PTPL_C */
		d[3] = 0x80 | (lu->pr_aptpl ? 0x01 : 0); /* TMV, PTPL_A */
		d[4] = 0x80 | 0x40 | 0x20 | 0x08 | 0x02; /* WR_EX_AR EX_AC_RO WR_EX_RO EX_AC WR_EX */
		d[5] = 0x01;                    /* EX_AC_AR */
		len = 8;
		break;
	case 0x03:      /* READ FULL STATUS */
		list_for_each(pos, &lu->pr_regs) {
			struct pr_reg *r = list_entry(pos, struct pr_reg, link);
			uint8_t *e = &d[len];
			uint32_t tl;

			put_be64(&e[0], r->key);
			if (r->all_tg_pt)
				e[12] |= 0x02;
			if (is_holder(lu, r)) {
				e[12] |= 0x01;
				e[13] = lu->pr_type & 0x0f;
			}
			put_be16(&e[18], r->rel_port);
			tl = put_transport_id(&e[24], r->iport);
			put_be32(&e[20], tl);
			len += 24 + tl;
		}
		put_be32(&d[4], len - 8);
		break;
	default:        /* filtered by the dispatch table */
		break;
	}
	pthread_mutex_unlock(&lu->lock);
	scsi_reply(cmd, d, len, alloc);
	free(d);
}

/* --------------------------------------------------- PERSISTENT RESERVE OUT */

enum pr_result { PRR_GOOD, PRR_CONFLICT, PRR_BAD_PARAM, PRR_BAD_RELEASE, PRR_NOMEM };

static uint32_t reg_count(struct scsi_lu *lu)
{
	struct list_head *pos;
	uint32_t n = 0;

	list_for_each(pos, &lu->pr_regs)
		n++;
	return n;
}

static enum pr_result pr_register(struct scsi_lu *lu, struct pr_reg *self, const char *iport,
				  uint16_t rel, uint64_t rk, uint64_t sark, bool ignore,
				  bool all_tg_pt, bool aptpl, bool *changed)
{
	if (!self) {
		if (!ignore && rk != 0)
			return PRR_CONFLICT;
		if (sark == 0)
			return PRR_GOOD;        /* nothing to unregister */
		if (lu->sh && reg_count(lu) >= SHS_MAX_REGS)
			return PRR_NOMEM;       /* the shared state file holds no more */
		self = calloc(1, sizeof(*self));
		if (!self)
			return PRR_NOMEM;
		self->key = sark;
		self->rel_port = rel;
		self->all_tg_pt = all_tg_pt;
		snprintf(self->iport, sizeof(self->iport), "%s", iport);
		list_add_tail(&self->link, &lu->pr_regs);
	} else {
		if (!ignore && rk != self->key)
			return PRR_CONFLICT;
		if (sark == 0)
			reg_remove(lu, self);
		else
			self->key = sark;
	}
	lu->pr_aptpl = aptpl;
	lu->pr_generation++;
	*changed = true;
	return PRR_GOOD;
}

static scsi_abort_nexus_fn g_abort_fn;
static void *g_abort_arg;

void scsi_set_abort_nexus_handler(scsi_abort_nexus_fn fn, void *arg)
{
	g_abort_fn = fn;
	g_abort_arg = arg;
}

void scsi_pr_abort_nexus(struct scsi_lu *lu, const char *iport, uint16_t rel_port)
{
	if (g_abort_fn)
		g_abort_fn(lu, iport, rel_port, g_abort_arg);
}

/* Nexuses whose registrations a PREEMPT AND ABORT removed (tasks to abort). */
struct pr_preempted {
	char iport[256];
	uint16_t rel_port;
};
#define PR_MAX_PREEMPTED 64

/* PREEMPT / PREEMPT AND ABORT (SPC-4 5.13.11.4). */
static enum pr_result pr_preempt(struct scsi_lu *lu, struct pr_reg *self, uint64_t sark,
				 uint8_t type, bool *changed, struct pr_preempted *out,
				 size_t *nout, bool abort)
{
	struct list_head *pos, *n;
	bool removed = false;
	bool holder_preempted = false;

	if (lu->pr_held && !type_all_regs(lu->pr_type) && lu->pr_holder &&
	    lu->pr_holder->key == sark)
		holder_preempted = true;
	if (lu->pr_held && type_all_regs(lu->pr_type) && sark == 0)
		holder_preempted = true;
	if (!holder_preempted && sark == 0)
		return PRR_BAD_PARAM;

	list_for_each_safe(pos, n, &lu->pr_regs) {
		struct pr_reg *r = list_entry(pos, struct pr_reg, link);

		if (r == self)
			continue;
		if (sark != 0 && r->key != sark)
			continue;
		ua_to_reg_ex(lu, r, ASC_REGISTRATIONS_PREEMPTED, abort);
		if (out && *nout < PR_MAX_PREEMPTED) {
			memcpy(out[*nout].iport, r->iport, sizeof(out[*nout].iport));
			/* an ALL_TG_PT registration: that initiator port through every port */
			out[*nout].rel_port = r->all_tg_pt ? 0 : r->rel_port;
			(*nout)++;
		}
		if (lu->pr_holder == r)
			lu->pr_holder = NULL;
		list_del(&r->link);
		free(r);
		removed = true;
	}
	if (holder_preempted) {
		bool type_changed = lu->pr_type != type;

		lu->pr_held = true;
		lu->pr_type = type;
		lu->pr_holder = type_all_regs(type) ? NULL : self;
		update_res_active(lu);
		if (type_changed)
			ua_to_regs_except(lu, self, ASC_RESERVATIONS_RELEASED);
	} else if (!removed) {
		return PRR_CONFLICT;
	}
	if (lu->pr_held && type_all_regs(lu->pr_type) && list_empty(&lu->pr_regs))
		release_reservation(lu);
	lu->pr_generation++;
	*changed = true;
	return PRR_GOOD;
}

static void pr_out_finish(struct scsi_cmd *cmd, int status, void *ctx);
static void pr_out_complete(struct scsi_cmd *cmd, enum pr_result res, bool changed, uint8_t sa,
			    uint8_t type, const char *iport, const struct pr_preempted *preempted,
			    size_t npreempted);

void scsi_pr_out(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	uint8_t sa = cmd->cdb[1] & 0x1f;
	uint8_t scope = cmd->cdb[2] >> 4, type = cmd->cdb[2] & 0x0f;
	uint32_t plen = get_be32(&cmd->cdb[5]);
	const uint8_t *p = cmd->buf;
	uint64_t rk, sark;
	bool spec_i_pt, all_tg_pt, aptpl, changed = false;
	enum pr_result res = PRR_GOOD;
	struct pr_reg *self;
	const char *iport;
	uint16_t rel;
	char *snap = NULL;
	uint64_t seq = 0;
	struct pr_preempted *preempted = NULL;
	size_t npreempted = 0;
	struct scsi_lu_proposal *prop = NULL;

	cmd->xfer_len = plen;
	if (plen < 24 || cmd->buf_len < 24 || !p) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return;
	}
	spec_i_pt = p[20] & 0x08;
	all_tg_pt = p[20] & 0x04;
	aptpl = p[20] & 0x01;
	if (spec_i_pt) {
		/* SIP_C = 0: SPEC_I_PT is not supported */
		scsi_fail_param(cmd, 20, 3);
		return;
	}
	if (plen != 24) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return;
	}
	if (all_tg_pt && sa != 0x00 && sa != 0x06) {
		scsi_fail_param(cmd, 20, 2);
		return;
	}
	if (sa == 0x01 || sa == 0x02 || sa == 0x04 || sa == 0x05) {
		if (scope != 0) {
			scsi_fail_cdb(cmd, 2, 7);
			return;
		}
		if (!type_valid(type)) {
			scsi_fail_cdb(cmd, 2, 3);
			return;
		}
	}
	rk = get_be64(&p[0]);
	sark = get_be64(&p[8]);

	scsi_nexus_id(cmd->itn, &iport, &rel);
	if (sa == 0x05)
		preempted = calloc(PR_MAX_PREEMPTED, sizeof(*preempted));
	pthread_mutex_lock(&lu->lock);
	if (lu->sh && scsi_lu_shared_begin(lu) < 0) {
		pthread_mutex_unlock(&lu->lock);
		free(preempted);
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	self = reg_find(lu, iport, rel);
	switch (sa) {
	case 0x00:      /* REGISTER */
	case 0x06:      /* REGISTER AND IGNORE EXISTING KEY */
		res = pr_register(lu, self, iport, rel, rk, sark, sa == 0x06, all_tg_pt, aptpl,
				  &changed);
		break;
	case 0x01:      /* RESERVE */
		if (!self || self->key != rk) {
			res = PRR_CONFLICT;
		} else if (lu->pr_held) {
			if (!is_holder(lu, self) || lu->pr_type != type)
				res = PRR_CONFLICT;
		} else {
			lu->pr_held = true;
			lu->pr_type = type;
			lu->pr_holder = type_all_regs(type) ? NULL : self;
			update_res_active(lu);
			changed = true;
		}
		break;
	case 0x02:      /* RELEASE */
		if (!self || self->key != rk) {
			res = PRR_CONFLICT;
		} else if (lu->pr_held && is_holder(lu, self)) {
			if (lu->pr_type != type) {
				res = PRR_BAD_RELEASE;
			} else {
				uint8_t old = lu->pr_type;

				release_reservation(lu);
				if (old != PR_TYPE_WE && old != PR_TYPE_EA)
					ua_to_regs_except(lu, self, ASC_RESERVATIONS_RELEASED);
				changed = true;
			}
		}
		break;
	case 0x03:      /* CLEAR */
		if (!self || self->key != rk) {
			res = PRR_CONFLICT;
		} else {
			struct list_head *pos, *n;

			ua_to_regs_except(lu, self, ASC_RESERVATIONS_PREEMPTED);
			release_reservation(lu);
			list_for_each_safe(pos, n, &lu->pr_regs) {
				list_del(pos);
				free(list_entry(pos, struct pr_reg, link));
			}
			lu->pr_generation++;
			changed = true;
		}
		break;
	case 0x04:      /* PREEMPT */
	case 0x05:      /* PREEMPT AND ABORT: tasks of the preempted nexuses are the core's */
		if (!self || self->key != rk)
			res = PRR_CONFLICT;
		else
			res = pr_preempt(lu, self, sark, type, &changed,
					 preempted, &npreempted, sa == 0x05);
		break;
	default:        /* filtered by the dispatch table */
		res = PRR_BAD_PARAM;
		break;
	}
	if (lu->sh) {
		scsi_lu_shared_end(lu, changed);
		prop = lu_shared_take(lu);
	} else if (changed && lu->params.pr_path[0]) {
		snap = pr_serialize(lu);
		seq = ++lu->pr_save_seq;
	}
	pthread_mutex_unlock(&lu->lock);
	if (lu->sh)
		scsi_lu_shared_run_aborts(lu);
	if (prop) {
		struct pr_after *a = calloc(1, sizeof(*a));
		int rc;

		if (!a) {
			scsi_lu_proposal_free(prop);
			free(preempted);
			scsi_fail(cmd, SCSI_SK_ABORTED_COMMAND, ASC_INSUFFICIENT_RESOURCES);
			return;
		}
		a->rerun = scsi_pr_out;
		a->res = (int)res;
		a->preempted = preempted;
		a->npreempted = npreempted;
		a->sa = sa;
		a->type = type;
		snprintf(a->iport, sizeof(a->iport), "%s", iport);
		rc = scsi_lu_cluster_submit(lu, prop, cmd, pr_out_finish, a);
		if (rc) {
			free(a->preempted);
			free(a);
			scsi_lu_cluster_fail(cmd, rc);
		}
		return;
	}
	if (changed && !lu->sh && lu->params.pr_path[0])
		pr_save(lu, snap, seq);
	pr_out_complete(cmd, res, changed, sa, type, iport, preempted, npreempted);
	free(preempted);
}

/* The cluster's answer to a PERSISTENT RESERVE OUT's change (its reactor). */
static void pr_out_finish(struct scsi_cmd *cmd, int status, void *ctx)
{
	struct pr_after *a = ctx;

	if (cmd && status == 0)
		pr_out_complete(cmd, (enum pr_result)a->res, true, a->sa, a->type, a->iport,
				a->preempted, a->npreempted);
	else if (cmd && status == -ESTALE && scsi_lu_cluster_rerun_ok(cmd))
		scsi_pr_out(cmd);
	else if (cmd)
		scsi_lu_cluster_fail(cmd, status);
	free(a->preempted);
	free(a);
}

static void pr_out_complete(struct scsi_cmd *cmd, enum pr_result res, bool changed, uint8_t sa,
			    uint8_t type, const char *iport, const struct pr_preempted *preempted,
			    size_t npreempted)
{
	struct scsi_lu *lu = cmd->lu;

	if (changed)
		GW_INFO(SCSI_LOG, "lun %llu: PERSISTENT RESERVE OUT sa %u type %u from %s",
			(unsigned long long)lu->params.lun, sa, type, iport);
	for (size_t i = 0; res == PRR_GOOD && g_abort_fn && i < npreempted; i++)
		g_abort_fn(lu, preempted[i].iport, preempted[i].rel_port, g_abort_arg);
	switch (res) {
	case PRR_GOOD:
		scsi_good(cmd);
		break;
	case PRR_CONFLICT:
		scsi_conflict(cmd);
		break;
	case PRR_BAD_PARAM:
		scsi_fail_param(cmd, 8, -1);
		break;
	case PRR_BAD_RELEASE:
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_INVALID_RELEASE_PR);
		break;
	case PRR_NOMEM:
		/* INSUFFICIENT REGISTRATION RESOURCES */
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, 0x5504);
		break;
	}
}
