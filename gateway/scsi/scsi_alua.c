/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ALUA (SPC-4 5.15): the asymmetric access state of each target port group,
 * REPORT TARGET PORT GROUPS, SET TARGET PORT GROUPS and the per-state command
 * filter.
 *
 * The table is process-wide and tiny: every portal is a target port of every
 * target with the same relative port id and group (core/target.c), so a
 * group id means the same set of ports for every LU. A group nobody has set is
 * Active/Optimized. alua.restricted counts the groups in a state that refuses
 * commands, so that the I/O path takes no lock while every group is active.
 *
 * Standalone for now: SET TARGET PORT GROUPS is applied locally; the HA agent
 * will drive scsi_alua_set_states() for the whole cluster.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scsi/scsi_internal.h"
#include "util/log.h"

#define ALUA_MAX_TPG            64u
#define ALUA_MAX_PORTS          64u     /* per group; RTPG's TARGET PORT COUNT is one byte */
#define ALUA_TRANSITION_TIME_S  30u     /* IMPLICIT TRANSITION TIME (extended RTPG header) */

/* RTPG descriptor STATUS CODE */
#define ALUA_STATUS_NONE        0x00
#define ALUA_STATUS_EXPLICIT    0x01    /* altered by SET TARGET PORT GROUPS */
#define ALUA_STATUS_IMPLICIT    0x02    /* altered by implicit asymmetric access state change */

/* T_SUP O_SUP U_SUP S_SUP AN_SUP AO_SUP (no LBD_SUP) */
#define ALUA_SUPPORTED_STATES   0xcf

struct alua_tpg {
	uint16_t id;
	uint8_t state;
	uint8_t status;
	bool pref;
	uint8_t nports;
	uint16_t ports[ALUA_MAX_PORTS];
};

static struct {
	pthread_mutex_t lock;
	atomic_uint restricted;         /* groups not Active/Optimized nor Active/Non-optimized */
	size_t n;
	struct alua_tpg tpg[ALUA_MAX_TPG];
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

	for (i = 0; i < alua.n; i++)
		if (alua.tpg[i].id == id)
			return &alua.tpg[i];
	return NULL;
}

static bool state_restricts(uint8_t state)
{
	return state != SCSI_ALUA_ACTIVE_OPTIMIZED && state != SCSI_ALUA_ACTIVE_NON_OPTIMIZED;
}

static void restricted_update(void)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < alua.n; i++)
		if (state_restricts(alua.tpg[i].state))
			n++;
	atomic_store_explicit(&alua.restricted, n, memory_order_release);
}

bool alua_check(struct scsi_cmd *cmd)
{
	uint8_t op = cmd->cdb[0], sa = cmd->cdb[1] & 0x1f, state, mask;
	const struct alua_tpg *g;
	uint16_t asc;
	size_t i;

	if (atomic_load_explicit(&alua.restricted, memory_order_acquire) == 0)
		return false;
	if (!cmd->itn || !cmd->itn->port)
		return false;
	pthread_mutex_lock(&alua.lock);
	g = tpg_find(cmd->itn->port->tpg_id);
	state = g ? g->state : SCSI_ALUA_ACTIVE_OPTIMIZED;
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

/* Call with alua.lock held. */
static struct alua_tpg *tpg_get(uint16_t id)
{
	struct alua_tpg *g = tpg_find(id);

	if (g || alua.n >= ALUA_MAX_TPG)
		return g;
	g = &alua.tpg[alua.n++];
	memset(g, 0, sizeof(*g));
	g->id = id;
	g->state = SCSI_ALUA_ACTIVE_OPTIMIZED;
	return g;
}

/*
 * Applies n updates all or none. keep_pref: leave PREF alone (STPG has none).
 * The UA goes to every nexus of every LU but (except_iport, except_rel) of
 * except_lu.
 */
static int alua_apply(const struct scsi_alua_update *u, size_t n, uint8_t status, bool keep_pref,
		      const struct scsi_lu *except_lu, const char *except_iport, uint16_t except_rel)
{
	size_t i, j, fresh = 0;
	bool changed = false;

	for (i = 0; i < n; i++)
		if (!state_valid(u[i].state))
			return -EINVAL;
	pthread_mutex_lock(&alua.lock);
	for (i = 0; i < n; i++) {
		bool dup = false;

		for (j = 0; j < i; j++)
			dup |= u[j].tpg_id == u[i].tpg_id;
		if (!dup && !tpg_find(u[i].tpg_id))
			fresh++;
	}
	if (alua.n + fresh > ALUA_MAX_TPG) {
		pthread_mutex_unlock(&alua.lock);
		return -ENOSPC;
	}
	for (i = 0; i < n; i++) {
		struct alua_tpg *g = tpg_get(u[i].tpg_id);
		bool pref = keep_pref ? g->pref : u[i].pref;

		if (g->state == u[i].state && g->pref == pref)
			continue;
		GW_NOTICE(SCSI_LOG, "target port group %u: %s -> %s%s", g->id, state_name(g->state),
			  state_name(u[i].state), pref ? " (preferred)" : "");
		g->state = u[i].state;
		g->pref = pref;
		g->status = status;
		changed = true;
	}
	restricted_update();
	pthread_mutex_unlock(&alua.lock);
	if (changed)
		lu_ua_all_lus(ASC_ALUA_STATE_CHANGED, except_lu, except_iport, except_rel);
	return 0;
}

int scsi_alua_set_states(const struct scsi_alua_update *u, size_t n)
{
	if (n && !u)
		return -EINVAL;
	return alua_apply(u, n, ALUA_STATUS_IMPLICIT, false, NULL, NULL, 0);
}

int scsi_alua_get_state(uint16_t tpg_id, uint8_t *state, bool *pref)
{
	const struct alua_tpg *g;

	pthread_mutex_lock(&alua.lock);
	g = tpg_find(tpg_id);
	if (state)
		*state = g ? g->state : SCSI_ALUA_ACTIVE_OPTIMIZED;
	if (pref)
		*pref = g ? g->pref : false;
	pthread_mutex_unlock(&alua.lock);
	return g ? 0 : -ENOENT;
}

int scsi_alua_register_port(const struct scsi_port *p)
{
	struct alua_tpg *g;
	size_t i, k;
	int rc = 0;

	if (!p || !p->rel_port_id)
		return -EINVAL;
	local_port_set(p->rel_port_id, true);
	pthread_mutex_lock(&alua.lock);
	/* a relative port belongs to one group: drop it from any other */
	for (i = 0; i < alua.n; i++) {
		g = &alua.tpg[i];
		for (k = 0; k < g->nports; k++) {
			if (g->ports[k] != p->rel_port_id)
				continue;
			if (g->id == p->tpg_id)
				goto out;
			memmove(&g->ports[k], &g->ports[k + 1],
				(size_t)(g->nports - k - 1) * sizeof(g->ports[0]));
			g->nports--;
			break;
		}
	}
	g = tpg_get(p->tpg_id);
	if (!g || g->nports >= ALUA_MAX_PORTS) {
		rc = -ENOSPC;
		goto out;
	}
	g->ports[g->nports++] = p->rel_port_id;
out:
	pthread_mutex_unlock(&alua.lock);
	return rc;
}

void scsi_alua_reset(void)
{
	pthread_mutex_lock(&alua.lock);
	alua.n = 0;
	restricted_update();
	for (size_t i = 0; i < sizeof(local_ports); i++)
		atomic_store(&local_ports[i], 0);
	pthread_mutex_unlock(&alua.lock);
}

/* ------------------------------------------------- REPORT TARGET PORT GROUPS */

void alua_rtpg(struct scsi_cmd *cmd)
{
	uint8_t fmt = cmd->cdb[1] >> 5;
	uint32_t alloc = get_be32(&cmd->cdb[6]);
	uint32_t len, off;
	uint8_t *d;
	size_t i, k;

	if (fmt > 1) {
		scsi_fail_cdb(cmd, 1, 7);
		return;
	}
	d = calloc(1, 8 + ALUA_MAX_TPG * (8 + 4 * ALUA_MAX_PORTS));
	if (!d) {
		scsi_fail(cmd, SCSI_SK_ABORTED_COMMAND, ASC_INSUFFICIENT_RESOURCES);
		return;
	}
	off = fmt ? 8 : 4;
	pthread_mutex_lock(&alua.lock);
	for (i = 0; i < alua.n; i++) {
		const struct alua_tpg *g = &alua.tpg[i];
		uint8_t *p = &d[off];

		if (!g->nports)
			continue;       /* set by the HA agent but no port here */
		p[0] = (uint8_t)((g->pref ? 0x80 : 0) | (g->state & 0x0f));
		p[1] = ALUA_SUPPORTED_STATES;
		put_be16(&p[2], g->id);
		p[5] = g->status;
		p[7] = g->nports;
		for (k = 0; k < g->nports; k++)
			put_be16(&p[8 + 4 * k + 2], g->ports[k]);
		off += 8 + 4 * (uint32_t)g->nports;
	}
	pthread_mutex_unlock(&alua.lock);
	len = off;
	put_be32(&d[0], len - 4);
	if (fmt) {
		d[4] = 0x10;    /* FORMAT TYPE 001b */
		d[5] = ALUA_TRANSITION_TIME_S;
	}
	scsi_reply(cmd, d, len, alloc);
	free(d);
}

/* --------------------------------------------------- SET TARGET PORT GROUPS */

void alua_stpg(struct scsi_cmd *cmd)
{
	struct scsi_alua_update u[ALUA_MAX_TPG];
	uint32_t plen = get_be32(&cmd->cdb[6]);
	const uint8_t *p = cmd->buf;
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
		u[n].pref = g->pref;
		n++;
	}
	pthread_mutex_unlock(&alua.lock);

	scsi_nexus_id(cmd->itn, &iport, &rel);
	GW_INFO(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS from %s (%zu groups)",
		(unsigned long long)cmd->lu->params.lun, iport, n);
	rc = alua_apply(u, n, ALUA_STATUS_EXPLICIT, true, cmd->lu, iport, rel);
	if (rc < 0) {
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	scsi_good(cmd);
}
