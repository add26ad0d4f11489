/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ALUA (SPC-4 5.15): the port map of the cluster's target port groups, the
 * asymmetric access state per (device group, target port group), REPORT
 * TARGET PORT GROUPS, SET TARGET PORT GROUPS and the per-state command
 * filter.
 *
 * Port map: every portal is a target port of every target with the same
 * relative port id and group (core/target.c), and the configuration lists
 * the other nodes' ports (port_groups), so a group id means the same set of
 * ports for every LU of the cluster. Device groups: each LU names one
 * (lu->alua_dg, an index that stays valid: device groups are never freed
 * before scsi_alua_reset); a group's state there is the explicit one set
 * through scsi_alua_set_states() or SET TARGET PORT GROUPS, else the device
 * group's configured default. alua.restricted counts the device groups in
 * which some state refuses commands, so that the I/O path takes no lock while
 * none does.
 *
 * Standalone for now: SET TARGET PORT GROUPS is applied locally; the HA agent
 * will drive scsi_alua_set_states() on every node.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsi/scsi_internal.h"
#include "util/log.h"

#define ALUA_MAX_TPG            64u
#define ALUA_MAX_PORTS          64u     /* per group; RTPG's TARGET PORT COUNT is one byte */
#define ALUA_MAX_DG             256u
#define ALUA_TRANSITION_TIME_S  30u     /* IMPLICIT TRANSITION TIME (extended RTPG header) */

/* RTPG descriptor STATUS CODE */
#define ALUA_STATUS_NONE        0x00
#define ALUA_STATUS_EXPLICIT    0x01    /* altered by SET TARGET PORT GROUPS */
#define ALUA_STATUS_IMPLICIT    0x02    /* altered by implicit asymmetric access state change */

/* T_SUP O_SUP U_SUP S_SUP AN_SUP AO_SUP (no LBD_SUP) */
#define ALUA_SUPPORTED_STATES   0xcf

/* A target port group of the port map. */
struct alua_tpg {
	uint16_t id;
	uint8_t nports;
	uint16_t ports[ALUA_MAX_PORTS];
};

/* An explicit state of one group in a device group. */
struct alua_state {
	uint16_t tpg;
	uint8_t state;
	uint8_t status;
	bool pref;
};

struct alua_dg {
	char name[SCSI_ALUA_DG_NAME_MAX];
	uint16_t owner;                 /* 0: none, every group Active/Optimized */
	uint8_t non_owner;              /* default state of the other groups */
	bool restricted;                /* some state of it refuses commands */
	size_t n;
	struct alua_state st[ALUA_MAX_TPG];
};

static struct {
	pthread_mutex_t lock;
	atomic_uint restricted;         /* device groups with a state refusing commands */
	size_t ntpg;
	struct alua_tpg tpg[ALUA_MAX_TPG];
	size_t ndg;
	struct alua_dg *dg[ALUA_MAX_DG];
} alua = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Relative port ids of this node's ports, read without a lock (scsi_shared.c). */
static atomic_uchar local_ports[65536 / 8];

static void local_port_set(uint16_t rel, bool on)
{
	unsigned char bit = (unsigned char)(1u << (rel & 7));

	if (on)
		atomic_fetch_or(&local_ports[rel >> 3], bit);
	else
		atomic_fetch_and(&local_ports[rel >> 3], (unsigned char)~bit);
}

bool alua_port_is_local(uint16_t rel)
{
	return rel && (atomic_load_explicit(&local_ports[rel >> 3], memory_order_relaxed) &
		       (1u << (rel & 7)));
}

/* ------------------------------------------------------------ the filter */

/* Which states allow a command (SPC-4 5.15.2.4.4 to 5.15.2.4.7). */
#define OK_SB 0x1       /* Standby */
#define OK_UN 0x2       /* Unavailable, and Offline (as far as we still answer) */
#define OK_TR 0x4       /* Transitioning */
#define OK_ALL (OK_SB | OK_UN | OK_TR)

static const struct {
	uint8_t op;
	int16_t sa;             /* -1: any */
	uint8_t ok;
} alua_allowed[] = {
	{ 0x03, -1,   OK_ALL },                 /* REQUEST SENSE */
	{ 0x12, -1,   OK_ALL },                 /* INQUIRY */
	{ 0xa0, -1,   OK_ALL },                 /* REPORT LUNS */
	{ 0xa3, 0x0a, OK_ALL },                 /* REPORT TARGET PORT GROUPS */
	{ 0xa3, 0x0c, OK_ALL },                 /* REPORT SUPPORTED OPERATION CODES */
	{ 0xa3, 0x0d, OK_ALL },                 /* REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS */
	{ 0xa4, 0x0a, OK_SB | OK_UN },          /* SET TARGET PORT GROUPS */
	{ 0x15, -1,   OK_SB },                  /* MODE SELECT(6) */
	{ 0x55, -1,   OK_SB },                  /* MODE SELECT(10) */
	{ 0x1a, -1,   OK_SB },                  /* MODE SENSE(6) */
	{ 0x5a, -1,   OK_SB },                  /* MODE SENSE(10) */
	{ 0x4c, -1,   OK_SB },                  /* LOG SELECT */
	{ 0x4d, -1,   OK_SB },                  /* LOG SENSE */
	{ 0x1c, -1,   OK_SB },                  /* RECEIVE DIAGNOSTIC RESULTS */
	{ 0x1d, -1,   OK_SB },                  /* SEND DIAGNOSTIC */
	{ 0x5e, -1,   OK_SB },                  /* PERSISTENT RESERVE IN */
	{ 0x5f, -1,   OK_SB },                  /* PERSISTENT RESERVE OUT */
};

static struct alua_tpg *tpg_find(uint16_t id)
{
	size_t i;

	for (i = 0; i < alua.ntpg; i++)
		if (alua.tpg[i].id == id)
			return &alua.tpg[i];
	return NULL;
}

static const char *dg_name(const char *dg)
{
	return (dg && dg[0]) ? dg : SCSI_ALUA_DG_DEFAULT;
}

/* alua.lock held. Index of device group `name`, or -1. */
static int dg_find(const char *name)
{
	size_t i;

	name = dg_name(name);
	for (i = 0; i < alua.ndg; i++)
		if (strcmp(alua.dg[i]->name, name) == 0)
			return (int)i;
	return -1;
}

/* alua.lock held. Finds or creates; -ENOSPC / -ENOMEM / -EINVAL (name too long). */
static int dg_get(const char *name)
{
	struct alua_dg *d;
	int i = dg_find(name);

	if (i >= 0)
		return i;
	name = dg_name(name);
	if (strlen(name) >= SCSI_ALUA_DG_NAME_MAX)
		return -EINVAL;
	if (alua.ndg >= ALUA_MAX_DG)
		return -ENOSPC;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->non_owner = SCSI_ALUA_ACTIVE_NON_OPTIMIZED;
	alua.dg[alua.ndg] = d;
	return (int)alua.ndg++;
}

static struct alua_state *dg_state_find(struct alua_dg *d, uint16_t tpg)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (d->st[i].tpg == tpg)
			return &d->st[i];
	return NULL;
}

/* The state of group tpg in device group d (explicit, else the default). */
static struct alua_state dg_effective(struct alua_dg *d, uint16_t tpg)
{
	struct alua_state r = { tpg, SCSI_ALUA_ACTIVE_OPTIMIZED, ALUA_STATUS_NONE, false };
	const struct alua_state *e = d ? dg_state_find(d, tpg) : NULL;

	if (e)
		return *e;
	if (d && d->owner) {
		r.pref = d->owner == tpg;
		r.state = r.pref ? SCSI_ALUA_ACTIVE_OPTIMIZED : d->non_owner;
	}
	return r;
}

static bool state_restricts(uint8_t state)
{
	return state != SCSI_ALUA_ACTIVE_OPTIMIZED && state != SCSI_ALUA_ACTIVE_NON_OPTIMIZED;
}

/* alua.lock held. */
static void restricted_update(void)
{
	unsigned int n = 0;
	size_t i, k;

	for (i = 0; i < alua.ndg; i++) {
		struct alua_dg *d = alua.dg[i];

		d->restricted = d->owner && state_restricts(d->non_owner);
		for (k = 0; k < d->n && !d->restricted; k++)
			d->restricted = state_restricts(d->st[k].state);
		n += d->restricted;
	}
	atomic_store_explicit(&alua.restricted, n, memory_order_release);
}

bool alua_check(struct scsi_cmd *cmd)
{
	uint8_t op = cmd->cdb[0], sa = cmd->cdb[1] & 0x1f, state, mask;
	uint16_t asc;
	size_t i;

	if (atomic_load_explicit(&alua.restricted, memory_order_acquire) == 0)
		return false;
	if (!cmd->itn || !cmd->itn->port)
		return false;
	pthread_mutex_lock(&alua.lock);
	state = dg_effective(cmd->lu->alua_dg < alua.ndg ? alua.dg[cmd->lu->alua_dg] : NULL,
			     cmd->itn->port->tpg_id).state;
	pthread_mutex_unlock(&alua.lock);

	switch (state) {
	case SCSI_ALUA_STANDBY:
		mask = OK_SB;
		asc = ASC_ALUA_STANDBY;
		break;
	case SCSI_ALUA_UNAVAILABLE:
		mask = OK_UN;
		asc = ASC_ALUA_UNAVAILABLE;
		break;
	case SCSI_ALUA_OFFLINE:
		mask = OK_UN;
		asc = ASC_ALUA_OFFLINE;
		break;
	case SCSI_ALUA_TRANSITIONING:
		mask = OK_TR;
		asc = ASC_ALUA_TRANSITION;
		break;
	default:
		return false;
	}
	for (i = 0; i < sizeof(alua_allowed) / sizeof(alua_allowed[0]); i++) {
		if (alua_allowed[i].op != op || (alua_allowed[i].sa >= 0 && alua_allowed[i].sa != sa))
			continue;
		if (alua_allowed[i].ok & mask)
			return false;
		break;
	}
	scsi_fail(cmd, SCSI_SK_NOT_READY, asc);
	return true;
}

/* ------------------------------------------------------------ state table */

static bool state_valid(uint8_t s)
{
	return s <= SCSI_ALUA_UNAVAILABLE || s == SCSI_ALUA_OFFLINE || s == SCSI_ALUA_TRANSITIONING;
}

static const char *state_name(uint8_t s)
{
	switch (s) {
	case SCSI_ALUA_ACTIVE_OPTIMIZED: return "active/optimized";
	case SCSI_ALUA_ACTIVE_NON_OPTIMIZED: return "active/non-optimized";
	case SCSI_ALUA_STANDBY: return "standby";
	case SCSI_ALUA_UNAVAILABLE: return "unavailable";
	case SCSI_ALUA_OFFLINE: return "offline";
	case SCSI_ALUA_TRANSITIONING: return "transitioning";
	default: return "?";
	}
}

int alua_dg_ref(const char *name)
{
	int rc;

	pthread_mutex_lock(&alua.lock);
	rc = dg_get(name);
	pthread_mutex_unlock(&alua.lock);
	return rc;
}

/*
 * Applies n updates to device group `name`, all or none. keep_pref: leave
 * PREF alone (STPG has none). The UA goes to every nexus of the device
 * group's LUs but (except_iport, except_rel) of except_lu.
 */
static int alua_apply(const char *name, const struct scsi_alua_update *u, size_t n,
		      uint8_t status, bool keep_pref, const struct scsi_lu *except_lu,
		      const char *except_iport, uint16_t except_rel)
{
	struct alua_dg *d;
	size_t i, j, fresh = 0;
	bool changed = false;
	int di;

	for (i = 0; i < n; i++)
		if (!state_valid(u[i].state))
			return -EINVAL;
	pthread_mutex_lock(&alua.lock);
	di = dg_get(name);
	if (di < 0) {
		pthread_mutex_unlock(&alua.lock);
		return di;
	}
	d = alua.dg[di];
	for (i = 0; i < n; i++) {
		bool dup = false;

		for (j = 0; j < i; j++)
			dup |= u[j].tpg_id == u[i].tpg_id;
		if (!dup && !dg_state_find(d, u[i].tpg_id))
			fresh++;
	}
	if (d->n + fresh > ALUA_MAX_TPG) {
		pthread_mutex_unlock(&alua.lock);
		return -ENOSPC;
	}
	for (i = 0; i < n; i++) {
		struct alua_state cur = dg_effective(d, u[i].tpg_id);
		struct alua_state *e = dg_state_find(d, u[i].tpg_id);
		bool pref = keep_pref ? cur.pref : u[i].pref;

		if (!e) {
			e = &d->st[d->n++];
			*e = cur;
		}
		if (cur.state == u[i].state && cur.pref == pref)
			continue;
		GW_NOTICE(SCSI_LOG, "device group %s, target port group %u: %s -> %s%s", d->name,
			  u[i].tpg_id, state_name(cur.state), state_name(u[i].state),
			  pref ? " (preferred)" : "");
		e->state = u[i].state;
		e->pref = pref;
		e->status = status;
		changed = true;
	}
	restricted_update();
	pthread_mutex_unlock(&alua.lock);
	if (changed)
		lu_ua_all_lus(ASC_ALUA_STATE_CHANGED, di, except_lu, except_iport, except_rel);
	return 0;
}

int scsi_alua_set_states(const char *dg, const struct scsi_alua_update *u, size_t n)
{
	if (n && !u)
		return -EINVAL;
	return alua_apply(dg, u, n, ALUA_STATUS_IMPLICIT, false, NULL, NULL, 0);
}

int scsi_alua_get_states(const char *dg, struct scsi_alua_update *out, size_t max, size_t *n)
{
	struct alua_dg *d;
	size_t i, k = 0;
	int di;

	pthread_mutex_lock(&alua.lock);
	di = dg_find(dg);
	if (di < 0) {
		pthread_mutex_unlock(&alua.lock);
		if (n)
			*n = 0;
		return -ENOENT;
	}
	d = alua.dg[di];
	/* the groups of the port map, then groups only set explicitly */
	for (i = 0; i < alua.ntpg + d->n; i++) {
		uint16_t id = i < alua.ntpg ? alua.tpg[i].id : d->st[i - alua.ntpg].tpg;
		struct alua_state s;

		if (i >= alua.ntpg && tpg_find(id))
			continue;
		s = dg_effective(d, id);
		if (out && k < max) {
			out[k].tpg_id = id;
			out[k].state = s.state;
			out[k].pref = s.pref;
		}
		k++;
	}
	pthread_mutex_unlock(&alua.lock);
	if (n)
		*n = k;
	return 0;
}

int scsi_alua_get_state(const char *dg, uint16_t tpg_id, uint8_t *state, bool *pref)
{
	struct alua_state s = { tpg_id, SCSI_ALUA_ACTIVE_OPTIMIZED, 0, false };
	int di, rc = -ENOENT;

	pthread_mutex_lock(&alua.lock);
	di = dg_find(dg);
	if (di >= 0) {
		s = dg_effective(alua.dg[di], tpg_id);
		if (tpg_find(tpg_id) || dg_state_find(alua.dg[di], tpg_id))
			rc = 0;
	}
	pthread_mutex_unlock(&alua.lock);
	if (state)
		*state = s.state;
	if (pref)
		*pref = s.pref;
	return rc;
}

int scsi_alua_dg_configure(const char *dg, uint16_t owner_tpg, uint8_t non_owner_state)
{
	struct alua_state before[ALUA_MAX_TPG];
	struct alua_dg *d;
	bool changed = false;
	size_t i;
	int di;

	if (non_owner_state != SCSI_ALUA_ACTIVE_NON_OPTIMIZED && non_owner_state != SCSI_ALUA_STANDBY &&
	    non_owner_state != SCSI_ALUA_UNAVAILABLE && non_owner_state != SCSI_ALUA_ACTIVE_OPTIMIZED)
		return -EINVAL;
	pthread_mutex_lock(&alua.lock);
	di = dg_get(dg);
	if (di < 0) {
		pthread_mutex_unlock(&alua.lock);
		return di;
	}
	d = alua.dg[di];
	for (i = 0; i < alua.ntpg; i++)
		before[i] = dg_effective(d, alua.tpg[i].id);
	if (d->owner != owner_tpg || d->non_owner != non_owner_state)
		GW_INFO(SCSI_LOG, "device group %s: owner target port group %u, others %s", d->name,
			owner_tpg, state_name(non_owner_state));
	d->owner = owner_tpg;
	d->non_owner = non_owner_state;
	for (i = 0; i < alua.ntpg; i++) {
		struct alua_state now = dg_effective(d, alua.tpg[i].id);

		changed |= now.state != before[i].state || now.pref != before[i].pref;
	}
	restricted_update();
	pthread_mutex_unlock(&alua.lock);
	if (changed)
		lu_ua_all_lus(ASC_ALUA_STATE_CHANGED, di, NULL, NULL, 0);
	return 0;
}

/* alua.lock held: removes rel from every group but `keep` (emptied groups stay). */
static void port_unlist(uint16_t rel, uint16_t keep)
{
	size_t i, k;

	for (i = 0; i < alua.ntpg; i++) {
		struct alua_tpg *g = &alua.tpg[i];

		if (g->id == keep)
			continue;
		for (k = 0; k < g->nports; k++) {
			if (g->ports[k] != rel)
				continue;
			memmove(&g->ports[k], &g->ports[k + 1],
				(size_t)(g->nports - k - 1) * sizeof(g->ports[0]));
			g->nports--;
			break;
		}
	}
}

/* alua.lock held: lists rel under group tpg (created); -ENOSPC when full. */
static int port_list(uint16_t rel, uint16_t tpg)
{
	struct alua_tpg *g = tpg_find(tpg);
	size_t k;

	port_unlist(rel, tpg);
	if (!g) {
		if (alua.ntpg >= ALUA_MAX_TPG)
			return -ENOSPC;
		/* kept in group id order: every node reports the groups alike */
		for (k = alua.ntpg; k > 0 && alua.tpg[k - 1].id > tpg; k--)
			alua.tpg[k] = alua.tpg[k - 1];
		alua.ntpg++;
		g = &alua.tpg[k];
		memset(g, 0, sizeof(*g));
		g->id = tpg;
	}
	for (k = 0; k < g->nports; k++)
		if (g->ports[k] == rel)
			return 0;
	if (g->nports >= ALUA_MAX_PORTS)
		return -ENOSPC;
	g->ports[g->nports++] = rel;
	return 0;
}

int scsi_alua_register_port(const struct scsi_port *p)
{
	int rc;

	if (!p || !p->rel_port_id)
		return -EINVAL;
	local_port_set(p->rel_port_id, true);
	pthread_mutex_lock(&alua.lock);
	rc = port_list(p->rel_port_id, p->tpg_id);
	pthread_mutex_unlock(&alua.lock);
	return rc;
}

int scsi_alua_set_ports(const struct scsi_alua_port *p, size_t n)
{
	size_t i, j;
	int rc = 0;

	for (i = 0; i < n; i++) {
		if (!p[i].rel_port_id)
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (p[j].rel_port_id == p[i].rel_port_id && p[j].tpg_id != p[i].tpg_id)
				return -EINVAL;
	}
	pthread_mutex_lock(&alua.lock);
	alua.ntpg = 0;
	for (i = 0; i < sizeof(local_ports); i++)
		atomic_store(&local_ports[i], 0);
	for (i = 0; i < n && rc == 0; i++) {
		rc = port_list(p[i].rel_port_id, p[i].tpg_id);
		if (p[i].local)
			local_port_set(p[i].rel_port_id, true);
	}
	pthread_mutex_unlock(&alua.lock);
	return rc;
}

void scsi_alua_reset(void)
{
	size_t i;

	pthread_mutex_lock(&alua.lock);
	alua.ntpg = 0;
	for (i = 0; i < alua.ndg; i++)
		free(alua.dg[i]);
	alua.ndg = 0;
	restricted_update();
	for (i = 0; i < sizeof(local_ports); i++)
		atomic_store(&local_ports[i], 0);
	pthread_mutex_unlock(&alua.lock);
}

/* ------------------------------------------------- REPORT TARGET PORT GROUPS */

void alua_rtpg(struct scsi_cmd *cmd)
{
	uint8_t fmt = cmd->cdb[1] >> 5;
	uint32_t alloc = get_be32(&cmd->cdb[6]);
	struct alua_dg *d;
	uint32_t len, off;
	uint8_t *d8;
	size_t i, k;

	if (fmt > 1) {
		scsi_fail_cdb(cmd, 1, 7);
		return;
	}
	d8 = calloc(1, 8 + ALUA_MAX_TPG * (8 + 4 * ALUA_MAX_PORTS));
	if (!d8) {
		scsi_fail(cmd, SCSI_SK_ABORTED_COMMAND, ASC_INSUFFICIENT_RESOURCES);
		return;
	}
	off = fmt ? 8 : 4;
	pthread_mutex_lock(&alua.lock);
	d = cmd->lu->alua_dg < alua.ndg ? alua.dg[cmd->lu->alua_dg] : NULL;
	for (i = 0; i < alua.ntpg; i++) {
		const struct alua_tpg *g = &alua.tpg[i];
		struct alua_state s;
		uint8_t *p = &d8[off];

		if (!g->nports)
			continue;       /* its ports were removed */
		s = dg_effective(d, g->id);
		p[0] = (uint8_t)((s.pref ? 0x80 : 0) | (s.state & 0x0f));
		p[1] = ALUA_SUPPORTED_STATES;
		put_be16(&p[2], g->id);
		p[5] = s.status;
		p[7] = g->nports;
		for (k = 0; k < g->nports; k++)
			put_be16(&p[8 + 4 * k + 2], g->ports[k]);
		off += 8 + 4 * (uint32_t)g->nports;
	}
	pthread_mutex_unlock(&alua.lock);
	len = off;
	put_be32(&d8[0], len - 4);
	if (fmt) {
		d8[4] = 0x10;   /* FORMAT TYPE 001b */
		d8[5] = ALUA_TRANSITION_TIME_S;
	}
	scsi_reply(cmd, d8, len, alloc);
	free(d8);
}

/* --------------------------------------------------- SET TARGET PORT GROUPS */

void alua_stpg(struct scsi_cmd *cmd)
{
	struct scsi_alua_update u[ALUA_MAX_TPG];
	uint32_t plen = get_be32(&cmd->cdb[6]);
	const uint8_t *p = cmd->buf;
	char dg[SCSI_ALUA_DG_NAME_MAX];
	const char *iport;
	uint16_t rel;
	size_t n = 0, i;
	uint32_t off;
	int rc;

	if (plen == 0) {
		scsi_good(cmd);
		return;
	}
	if (plen < 4 || (plen - 4) % 4 || plen > cmd->buf_len || !p) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return;
	}
	if ((plen - 4) / 4 > ALUA_MAX_TPG) {
		scsi_fail_param(cmd, (uint16_t)(4 + 4 * ALUA_MAX_TPG + 2), 7);
		return;
	}
	pthread_mutex_lock(&alua.lock);
	for (off = 4; off < plen; off += 4) {
		const struct alua_tpg *g = tpg_find(get_be16(&p[off + 2]));
		uint8_t state = p[off] & 0x0f;
		int8_t bad_bit = -1;
		uint32_t bad = off;

		if (state > SCSI_ALUA_UNAVAILABLE) {
			bad_bit = 3;    /* offline, transitioning, LBA dependent: not settable */
		} else if (!g || !g->nports) {
			bad = off + 2;
			bad_bit = 7;    /* no such group on this target */
		} else {
			for (i = 0; i < n; i++)
				if (u[i].tpg_id == g->id) {
					bad = off + 2;
					bad_bit = 7;    /* the same group twice */
				}
		}
		if (bad_bit >= 0) {
			pthread_mutex_unlock(&alua.lock);
			scsi_fail_param(cmd, (uint16_t)bad, bad_bit);
			return;
		}
		u[n].tpg_id = g->id;
		u[n].state = state;
		u[n].pref = false;
		n++;
	}
	snprintf(dg, sizeof(dg), "%s", cmd->lu->alua_dg < alua.ndg ?
		 alua.dg[cmd->lu->alua_dg]->name : SCSI_ALUA_DG_DEFAULT);
	pthread_mutex_unlock(&alua.lock);

	scsi_nexus_id(cmd->itn, &iport, &rel);
	GW_INFO(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS from %s (%zu groups, device group %s)",
		(unsigned long long)cmd->lu->params.lun, iport, n, dg);
	rc = alua_apply(dg, u, n, ALUA_STATUS_EXPLICIT, true, cmd->lu, iport, rel);
	if (rc < 0) {
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	scsi_good(cmd);
}
