/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ALUA (SPC-4 5.15): the port map of the cluster's target port groups, the
 * asymmetric access state per (device group, target port group), REPORT
 * TARGET PORT GROUPS, SET TARGET PORT GROUPS and the per-state command
 * filter.
 *
 * Port map: every portal is a target port of every target with the same
 * relative port id and group (core/runtime.c), and the configuration lists
 * the other nodes' ports (port_groups), so a group id means the same set of
 * ports for every LU of the cluster. Device groups: each LU names one
 * (lu->alua_dg, an index that stays valid: device groups are never freed
 * before scsi_alua_reset); a group's state there is the explicit one set
 * through scsi_alua_set_states() or SET TARGET PORT GROUPS, else the device
 * group's configured default. alua.restricted counts the device groups in
 * which some state refuses commands, so that the I/O path takes no lock while
 * none does.
 *
 * SET TARGET PORT GROUPS follows the policy owner (scsi_alua_set_policy):
 * standalone (local) it is applied here; in a cluster (external) the HA
 * agent owns the states of every node, so the command becomes a request
 * handed to it (scsi_alua_set_request_handler: the control socket) and is
 * held until the device group's states match (the agent answers with
 * scsi_alua_set_states on every node), the agent answers otherwise, the
 * command is aborted, or a timer on the command's reactor fires.
 *
 * The lease (scsi_alua_lease_*, see scsi.h): while it is enforced and not
 * valid, every group reports and enforces Unavailable or Transitioning over
 * the states kept underneath. The command path (scsi_alua_check, RTPG) reads the
 * expiry (one atomic) and the monotonic clock itself; lease.announced is the
 * phase the unit attentions were last raised for (scsi_alua_lease_sync).
 * While it overrides the states, a change underneath reports nothing new and
 * raises no unit attention: the sync that ends the override does.
 *
 * Under a valid lease, an LU forwarded to a backend (iscsi://) whose
 * reservation key this node has not registered again since it was fenced or
 * without a lease (bdev_awaits_registration) reports this node's groups
 * Transitioning instead of Active/Optimized or Active/Non-optimized, and
 * enforces it: its writes would be refused by the backend (docs/ha.md,
 * "Failback"). Hosts retry; the states apply again once the key is there.
 *
 * A held command (struct alua_held) is listed in alua.held under alua.lock
 * and finished on its own reactor by whoever unlinks it there: the timer,
 * the message that announces a decision, or an abort (scsi_held.h). Other
 * threads only decide (under the lock) and send that message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsi/scsi_held.h"
#include "scsi/scsi_internal.h"
#include "common/log.h"
#include "common/reactor.h"

#define ALUA_MAX_TPG            64u
#define ALUA_MAX_PORTS          64u     /* per group; RTPG's TARGET PORT COUNT is one byte */
#define ALUA_MAX_DG             257u    /* a configuration's 256 (the cluster's limit) and "default" */
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

/* How a held SET TARGET PORT GROUPS ends. */
enum held_result {
	HELD_GOOD,              /* the states match the request */
	HELD_REFUSED,           /* the policy owner said no (or set other states) */
	HELD_NOT_NOW,           /* the policy owner asked to retry later */
	HELD_UNDELIVERED,       /* nobody listening */
	HELD_TIMEOUT,           /* no answer in time */
	HELD_ABORTED,           /* task management or the connection gone */
};

/* A SET TARGET PORT GROUPS waiting for the policy owner. */
struct alua_held {
	struct scsi_held hd;            /* in alua.held */
	size_t dg;                      /* device group index */
	size_t n;
	struct scsi_alua_update u[ALUA_MAX_TPG];
	uint8_t result;                 /* enum held_result, once decided */
	const struct scsi_lu *lu;
	char iport[256];
	uint16_t rel;
	uint32_t timeout_ms;
};

/* A decision to announce to the held command's reactor (after the lock is dropped). */
struct held_note {
	uint64_t id;
	struct reactor *reactor;
};

static void held_outcome(struct scsi_held *hd, int status);
static void held_finish_hd(struct scsi_held *hd);
static bool state_restricts(uint8_t state);

static struct {
	pthread_mutex_t lock;
	atomic_uint restricted;         /* device groups with a state refusing commands */
	size_t ntpg;
	struct alua_tpg tpg[ALUA_MAX_TPG];
	size_t ndg;
	struct alua_dg *dg[ALUA_MAX_DG];
	/* the policy owner */
	atomic_int policy;              /* enum scsi_alua_policy */
	atomic_uint timeout_ms;
	scsi_alua_request_fn handler;   /* under lock */
	void *handler_arg;
	struct scsi_held_list held;     /* struct alua_held */
	uint64_t next_id;               /* under lock */
} alua = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.timeout_ms = SCSI_ALUA_REQUEST_TIMEOUT_MS,
	.held = SCSI_HELD_LIST_INIT(alua.held, &alua.lock, held_outcome, held_finish_hd),
};

/* The lease; written under alua.lock, the atomics read by the command path without it. */
static struct {
	atomic_bool enforced;
	atomic_bool stepped_down;
	_Atomic uint64_t expires_ms;    /* 0: none given, or dropped */
	atomic_uint unavailable_ms;
	_Atomic uint64_t lost_ms;
	uint8_t announced;              /* enum scsi_lease_phase of the last sync, under alua.lock */
} lease = {
	.unavailable_ms = SCSI_LEASE_UNAVAILABLE_MS,
};

/* The lease's clock (tests replace it before any thread runs). */
static uint64_t (*lease_clock)(void) = gw_now_ms;

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

bool scsi_alua_port_is_local(uint16_t rel)
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

/* Takes alua.lock and finds or creates the device group: its index with the lock held, or a
 * negative errno (dg_get's) with the lock released. */
static int dg_lock_get(const char *name)
{
	int di;

	pthread_mutex_lock(&alua.lock);
	di = dg_get(name);
	if (di < 0)
		pthread_mutex_unlock(&alua.lock);
	return di;
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

/* ------------------------------------------------------------ the lease */

enum scsi_lease_phase scsi_lease_phase(const struct scsi_lease *l, uint64_t now_ms)
{
	if (!l->enforced)
		return SCSI_LEASE_OFF;
	if (!l->expires_ms)
		return l->stepped_down ? SCSI_LEASE_STEPPED_DOWN : SCSI_LEASE_NONE;
	if (now_ms < l->expires_ms)
		return SCSI_LEASE_VALID;
	if (now_ms - l->expires_ms < l->unavailable_ms)
		return SCSI_LEASE_EXPIRED;
	return SCSI_LEASE_STEPPED_DOWN;
}

uint8_t scsi_lease_override(enum scsi_lease_phase ph)
{
	switch (ph) {
	case SCSI_LEASE_NONE:
	case SCSI_LEASE_STEPPED_DOWN:
		return SCSI_ALUA_UNAVAILABLE;
	case SCSI_LEASE_EXPIRED:
		return SCSI_ALUA_TRANSITIONING;
	default:
		return SCSI_LEASE_NO_OVERRIDE;
	}
}

uint64_t scsi_lease_next_change(const struct scsi_lease *l, uint64_t now_ms)
{
	switch (scsi_lease_phase(l, now_ms)) {
	case SCSI_LEASE_VALID:
		return l->expires_ms;
	case SCSI_LEASE_EXPIRED:
		return l->expires_ms + l->unavailable_ms;
	default:
		return 0;
	}
}

uint64_t scsi_lease_lost_since(const struct scsi_lease *l, uint64_t now_ms)
{
	enum scsi_lease_phase ph = scsi_lease_phase(l, now_ms);

	if (ph == SCSI_LEASE_OFF || ph == SCSI_LEASE_VALID)
		return 0;
	return l->expires_ms ? l->expires_ms : l->lost_ms;
}

const char *scsi_lease_phase_name(enum scsi_lease_phase ph)
{
	switch (ph) {
	case SCSI_LEASE_OFF: return "off";
	case SCSI_LEASE_NONE: return "none";
	case SCSI_LEASE_VALID: return "valid";
	case SCSI_LEASE_EXPIRED: return "expired";
	case SCSI_LEASE_STEPPED_DOWN: return "stepped-down";
	}
	return "?";
}

uint64_t scsi_alua_lease_now(void)
{
	return lease_clock();
}

void scsi_alua_lease_set_clock(uint64_t (*now_ms)(void))
{
	lease_clock = now_ms ? now_ms : gw_now_ms;
}

void scsi_alua_lease_get(struct scsi_lease *out)
{
	out->enforced = atomic_load(&lease.enforced);
	out->stepped_down = atomic_load(&lease.stepped_down);
	out->expires_ms = atomic_load(&lease.expires_ms);
	out->unavailable_ms = atomic_load(&lease.unavailable_ms);
	out->lost_ms = atomic_load(&lease.lost_ms);
}

/*
 * The command path: the state every group has for the lease right now, or
 * SCSI_LEASE_NO_OVERRIDE. No lock; the clock is read only while a lease runs.
 */
static uint8_t lease_override_now(void)
{
	struct scsi_lease l = { .enforced = true };

	if (!atomic_load_explicit(&lease.enforced, memory_order_acquire))
		return SCSI_LEASE_NO_OVERRIDE;
	l.expires_ms = atomic_load_explicit(&lease.expires_ms, memory_order_acquire);
	if (!l.expires_ms)
		return SCSI_ALUA_UNAVAILABLE;
	l.unavailable_ms = atomic_load_explicit(&lease.unavailable_ms, memory_order_relaxed);
	return scsi_lease_override(scsi_lease_phase(&l, lease_clock()));
}

uint8_t scsi_alua_gated_state(uint8_t state, bool awaits_registration)
{
	return awaits_registration && !state_restricts(state) ? SCSI_ALUA_TRANSITIONING : state;
}

/* A port of this node is in group g. */
static bool tpg_is_local(const struct alua_tpg *g)
{
	for (size_t k = 0; k < g->nports; k++)
		if (scsi_alua_port_is_local(g->ports[k]))
			return true;
	return false;
}

/* What REPORT TARGET PORT GROUPS says of group tpg of d under the lease override ov. */
static struct alua_state dg_reported(struct alua_dg *d, uint16_t tpg, uint8_t ov)
{
	struct alua_state s = dg_effective(d, tpg);

	if (ov != SCSI_LEASE_NO_OVERRIDE) {
		s.state = ov;
		s.pref = false;
		s.status = ALUA_STATUS_IMPLICIT;
	}
	return s;
}

/* alua.lock held: the last sync's override still hides the states underneath. */
static bool lease_hides_states(void)
{
	return scsi_lease_override((enum scsi_lease_phase)lease.announced) != SCSI_LEASE_NO_OVERRIDE;
}

/*
 * alua.lock held: the phase now becomes the announced one; changed[i] tells
 * whether device group i reports other states than under the previous one
 * (its nexuses get 2A/06). Returns the previous phase.
 */
static enum scsi_lease_phase lease_sync_locked(bool *changed, enum scsi_lease_phase *now_ph)
{
	enum scsi_lease_phase old = (enum scsi_lease_phase)lease.announced, ph;
	struct scsi_lease l;
	uint8_t a, b;

	scsi_alua_lease_get(&l);
	ph = scsi_lease_phase(&l, lease_clock());
	a = scsi_lease_override(old);
	b = scsi_lease_override(ph);
	for (size_t i = 0; i < alua.ndg; i++) {
		changed[i] = false;
		for (size_t k = 0; a != b && k < alua.ntpg && !changed[i]; k++) {
			struct alua_state x, y;

			if (!alua.tpg[k].nports)
				continue;
			x = dg_reported(alua.dg[i], alua.tpg[k].id, a);
			y = dg_reported(alua.dg[i], alua.tpg[k].id, b);
			changed[i] = x.state != y.state || x.pref != y.pref;
		}
	}
	lease.announced = (uint8_t)ph;
	*now_ph = ph;
	return old;
}

/* No lock held: the unit attentions of a sync. */
static void lease_sync_ua(const bool *changed, size_t ndg)
{
	for (size_t i = 0; i < ndg; i++)
		if (changed[i])
			scsi_lu_ua_all_lus(ASC_ALUA_STATE_CHANGED, (int)i, NULL, NULL, 0);
}

enum scsi_lease_phase scsi_alua_lease_sync(enum scsi_lease_phase *before)
{
	bool changed[ALUA_MAX_DG];
	enum scsi_lease_phase old, ph;
	size_t ndg;

	pthread_mutex_lock(&alua.lock);
	old = lease_sync_locked(changed, &ph);
	ndg = alua.ndg;
	pthread_mutex_unlock(&alua.lock);
	lease_sync_ua(changed, ndg);
	if (before)
		*before = old;
	return ph;
}

void scsi_alua_lease_configure(bool enforced, uint32_t unavailable_ms)
{
	bool changed[ALUA_MAX_DG];
	enum scsi_lease_phase ph;
	bool was;
	size_t ndg;

	pthread_mutex_lock(&alua.lock);
	was = atomic_load(&lease.enforced);
	if (enforced && !was) {
		/* from now on without a lease until one is given */
		atomic_store(&lease.expires_ms, 0);
		atomic_store(&lease.stepped_down, false);
		atomic_store(&lease.lost_ms, lease_clock());
	}
	atomic_store(&lease.unavailable_ms, unavailable_ms);
	atomic_store(&lease.enforced, enforced);
	/*
	 * Switching enforcement tells the hosts at once; a new unavailable_ms
	 * takes effect on the command path at once and is told (and logged) by
	 * the next sync, the control thread's.
	 */
	if (enforced != was)
		(void)lease_sync_locked(changed, &ph);
	ndg = enforced != was ? alua.ndg : 0;
	pthread_mutex_unlock(&alua.lock);
	if (enforced && !was)
		GW_NOTICE(SCSI_LOG, "ALUA lease enforced: every target port group Unavailable until a "
			  "lease is given (Transitioning for %u ms after one runs out)", unavailable_ms);
	else if (!enforced && was)
		GW_NOTICE(SCSI_LOG, "ALUA lease no longer enforced: the states apply as they are");
	lease_sync_ua(changed, ndg);
}

int scsi_alua_lease_renew(uint64_t expires_ms)
{
	bool changed[ALUA_MAX_DG];
	enum scsi_lease_phase ph;
	size_t ndg;

	if (!expires_ms)
		return -EINVAL;
	pthread_mutex_lock(&alua.lock);
	if (!atomic_load(&lease.enforced)) {
		pthread_mutex_unlock(&alua.lock);
		return -EOPNOTSUPP;
	}
	atomic_store(&lease.stepped_down, false);
	atomic_store_explicit(&lease.expires_ms, expires_ms, memory_order_release);
	(void)lease_sync_locked(changed, &ph);
	ndg = alua.ndg;
	pthread_mutex_unlock(&alua.lock);
	lease_sync_ua(changed, ndg);
	return 0;
}

int scsi_alua_lease_step_down(void)
{
	bool changed[ALUA_MAX_DG];
	enum scsi_lease_phase ph;
	size_t ndg;

	pthread_mutex_lock(&alua.lock);
	if (!atomic_load(&lease.enforced)) {
		pthread_mutex_unlock(&alua.lock);
		return -EOPNOTSUPP;
	}
	atomic_store(&lease.stepped_down, true);
	atomic_store(&lease.lost_ms, lease_clock());
	atomic_store_explicit(&lease.expires_ms, 0, memory_order_release);
	(void)lease_sync_locked(changed, &ph);
	ndg = alua.ndg;
	pthread_mutex_unlock(&alua.lock);
	lease_sync_ua(changed, ndg);
	return 0;
}

/* ------------------------------------------------------------ the filter */

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

bool scsi_alua_check(struct scsi_cmd *cmd)
{
	uint8_t op = cmd->cdb[0], sa = cmd->cdb[1] & 0x1f, state, mask;
	uint16_t asc;
	size_t i;

	if (!cmd->itn || !cmd->itn->port)
		return false;
	/* the lease first: it overrides every group, whatever the clock of the control thread */
	state = lease_override_now();
	if (state == SCSI_LEASE_NO_OVERRIDE) {
		bool gate = bdev_awaits_registration(cmd->lu->bdev);

		if (!gate && atomic_load_explicit(&alua.restricted, memory_order_acquire) == 0)
			return false;
		pthread_mutex_lock(&alua.lock);
		state = dg_effective(cmd->lu->alua_dg < alua.ndg ? alua.dg[cmd->lu->alua_dg] : NULL,
				     cmd->itn->port->tpg_id).state;
		pthread_mutex_unlock(&alua.lock);
		state = scsi_alua_gated_state(state, gate);
	}

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

/* ------------------------------------------------ held SET TARGET PORT GROUPS */

/* alua.lock held: does device group d hold every state the request asks for? */
static bool held_matches(struct alua_dg *d, const struct scsi_alua_update *u, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (dg_effective(d, u[i].tpg_id).state != u[i].state)
			return false;
	return true;
}

/* alua.lock held: the first decision stands. */
static bool held_decide(struct alua_held *h, enum held_result r)
{
	if (h->hd.decided)
		return false;
	h->hd.decided = true;
	h->result = (uint8_t)r;
	return true;
}

/* alua.lock held: the timer's or an abort's outcome. */
static void held_outcome(struct scsi_held *hd, int status)
{
	container_of(hd, struct alua_held, hd)->result =
		status == -ECANCELED ? HELD_ABORTED : HELD_TIMEOUT;
}

/* On the command's reactor, once unlinked: complete it and free the record. */
static void held_finish(struct alua_held *h)
{
	struct scsi_cmd *cmd = h->hd.cmd;
	unsigned long long lun = (unsigned long long)h->lu->params.lun;

	scsi_held_cancel(&h->hd);
	switch ((enum held_result)h->result) {
	case HELD_GOOD:
		GW_INFO(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS request %llu from %s: done",
			lun, (unsigned long long)h->hd.id, h->iport);
		scsi_good(cmd);
		break;
	case HELD_REFUSED:
		GW_NOTICE(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS request %llu from %s: refused "
			  "by the ALUA policy owner", lun, (unsigned long long)h->hd.id, h->iport);
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_STPG_FAILED);
		break;
	case HELD_NOT_NOW:
	case HELD_UNDELIVERED:
	case HELD_TIMEOUT:
		GW_WARN(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS request %llu from %s: %s; "
			"answered NOT READY, asymmetric access state transition", lun,
			(unsigned long long)h->hd.id, h->iport,
			h->result == HELD_NOT_NOW ? "the ALUA policy owner asked to retry later" :
			h->result == HELD_UNDELIVERED ? "no ALUA policy owner is listening" :
			"no answer from the ALUA policy owner in time");
		scsi_fail(cmd, SCSI_SK_NOT_READY, ASC_ALUA_TRANSITION);
		break;
	case HELD_ABORTED:
		GW_INFO(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS request %llu from %s: aborted",
			lun, (unsigned long long)h->hd.id, h->iport);
		cmd->status = SCSI_STATUS_TASK_ABORTED;
		cmd->sense_len = 0;
		scsi_complete(cmd);
		break;
	}
	free(h);
}

static void held_finish_hd(struct scsi_held *hd)
{
	held_finish(container_of(hd, struct alua_held, hd));
}

/* A decision announced by another thread, on the command's reactor. */
static void held_msg(void *arg)
{
	scsi_held_take(&alua.held, (uint64_t)(uintptr_t)arg);
}

/* No lock held: tell each decided command's reactor (the timer covers a lost message). */
static void held_post(const struct held_note *notes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (reactor_send_msg(notes[i].reactor, held_msg, (void *)(uintptr_t)notes[i].id))
			GW_WARN(SCSI_LOG, "SET TARGET PORT GROUPS request %llu: out of memory; "
				"it completes when its timer fires", (unsigned long long)notes[i].id);
}

/*
 * alua.lock held, after device group di changed: every held request its
 * states now satisfy is decided GOOD, and the groups it named report
 * "altered by SET TARGET PORT GROUPS" in RTPG. Their notes go to notes[]
 * (room for cap) for held_post(); *except is the nexus of the first one,
 * spared the unit attention (SPC-4: every I_T nexus but the one the STPG
 * came through).
 */
static size_t held_settle(size_t di, struct held_note *notes, size_t cap,
			  const struct alua_held **except)
{
	struct alua_dg *d = alua.dg[di];
	struct list_head *pos;
	size_t n = 0;

	*except = NULL;
	list_for_each(pos, &alua.held.held) {
		struct alua_held *h = list_entry(pos, struct alua_held, hd.link);

		if (h->dg != di || h->hd.decided || !held_matches(d, h->u, h->n))
			continue;
		held_decide(h, HELD_GOOD);
		for (size_t i = 0; i < h->n; i++) {
			struct alua_state *e = dg_state_find(d, h->u[i].tpg_id);

			if (e)
				e->status = ALUA_STATUS_EXPLICIT;
		}
		if (!*except)
			*except = h;
		if (n < cap)
			notes[n++] = (struct held_note){ h->hd.id, h->hd.reactor };
	}
	return n;
}

void scsi_alua_set_policy(enum scsi_alua_policy policy, uint32_t timeout_ms)
{
	atomic_store(&alua.policy, (int)policy);
	atomic_store(&alua.timeout_ms, timeout_ms ? timeout_ms : SCSI_ALUA_REQUEST_TIMEOUT_MS);
}

enum scsi_alua_policy scsi_alua_get_policy(uint32_t *timeout_ms)
{
	if (timeout_ms)
		*timeout_ms = atomic_load(&alua.timeout_ms);
	return (enum scsi_alua_policy)atomic_load(&alua.policy);
}

void scsi_alua_set_request_handler(scsi_alua_request_fn fn, void *arg)
{
	pthread_mutex_lock(&alua.lock);
	alua.handler = fn;
	alua.handler_arg = arg;
	pthread_mutex_unlock(&alua.lock);
}

int scsi_alua_request_done(uint64_t id, int status)
{
	struct held_note note;
	struct scsi_held *hd;
	struct alua_held *h;
	enum held_result r;

	if (id == 0 || status > 0)
		return -EINVAL;
	hd = scsi_held_lock_find(&alua.held, id);
	if (!hd)
		return -ENOENT;
	h = container_of(hd, struct alua_held, hd);
	if (status == 0)
		r = h->dg < alua.ndg && held_matches(alua.dg[h->dg], h->u, h->n) ? HELD_GOOD
										     : HELD_REFUSED;
	else if (status == -EAGAIN)
		r = HELD_NOT_NOW;
	else if (status == -ENOTCONN)   /* no subscriber took the event */
		r = HELD_UNDELIVERED;
	else
		r = HELD_REFUSED;
	if (!held_decide(h, r)) {
		pthread_mutex_unlock(&alua.lock);
		return -EALREADY;
	}
	note = (struct held_note){ h->hd.id, h->hd.reactor };
	pthread_mutex_unlock(&alua.lock);
	held_post(&note, 1);
	return 0;
}

unsigned int scsi_alua_requests_held(void)
{
	return atomic_load(&alua.held.nheld);
}

void scsi_alua_cmd_abort(struct scsi_cmd *cmd)
{
	scsi_held_abort(&alua.held, cmd);
}

int scsi_alua_dg_ref(const char *name)
{
	int rc;

	pthread_mutex_lock(&alua.lock);
	rc = dg_get(name);
	pthread_mutex_unlock(&alua.lock);
	return rc;
}

/* alua.lock held: room for n updates in device group d? 0 or -ENOSPC. */
static int dg_room(struct alua_dg *d, const struct scsi_alua_update *u, size_t n)
{
	size_t fresh = 0;

	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		for (size_t j = 0; j < i; j++)
			dup |= u[j].tpg_id == u[i].tpg_id;
		if (!dup && !dg_state_find(d, u[i].tpg_id))
			fresh++;
	}
	return d->n + fresh > ALUA_MAX_TPG ? -ENOSPC : 0;
}

/*
 * alua.lock held, room checked: n updates of device group d (keep_pref:
 * leave PREF alone, STPG has none). True when a state or PREF changed.
 */
static bool dg_apply(struct alua_dg *d, const struct scsi_alua_update *u, size_t n,
		     uint8_t status, bool keep_pref)
{
	bool changed = false;

	for (size_t i = 0; i < n; i++) {
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
	return changed;
}

int scsi_lu_set_device_group(struct scsi_lu *lu, const char *name)
{
	bool changed;
	int di;

	di = dg_lock_get(name);
	if (di < 0)
		return di;
	changed = lu->alua_dg != (size_t)di;
	lu->alua_dg = (size_t)di;
	pthread_mutex_unlock(&alua.lock);
	if (!changed)
		return 0;
	GW_NOTICE(SCSI_LOG, "lun %llu: now in ALUA device group %s",
		  (unsigned long long)lu->params.lun, dg_name(name));
	pthread_mutex_lock(&lu->lock);
	scsi_ua_add_all(lu, NULL, ASC_ALUA_STATE_CHANGED);
	pthread_mutex_unlock(&lu->lock);
	return 0;
}

size_t scsi_lu_dg_index(const struct scsi_lu *lu)
{
	return atomic_load_explicit(&lu->alua_dg, memory_order_relaxed);
}

int scsi_alua_dg_name(size_t idx, char *out, size_t len)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&alua.lock);
	if (idx < alua.ndg) {
		snprintf(out, len, "%s", alua.dg[idx]->name);
		rc = 0;
	}
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
	struct held_note notes[SCSI_ALUA_HELD_MAX];
	const struct alua_held *ex = NULL;
	char ex_iport[256];
	size_t i, nnotes = 0;
	bool changed, ua;
	int di, rc;

	for (i = 0; i < n; i++)
		if (!state_valid(u[i].state))
			return -EINVAL;
	di = dg_lock_get(name);
	if (di < 0)
		return di;
	rc = dg_room(alua.dg[di], u, n);
	if (rc) {
		pthread_mutex_unlock(&alua.lock);
		return rc;
	}
	changed = dg_apply(alua.dg[di], u, n, status, keep_pref);
	restricted_update();
	if (changed)
		nnotes = held_settle((size_t)di, notes, SCSI_ALUA_HELD_MAX, &ex);
	if (ex && !except_lu) {
		except_lu = ex->lu;
		snprintf(ex_iport, sizeof(ex_iport), "%s", ex->iport);
		except_iport = ex_iport;
		except_rel = ex->rel;
	}
	/* under the lease's override the reported states did not change */
	ua = changed && !lease_hides_states();
	pthread_mutex_unlock(&alua.lock);
	if (ua)
		scsi_lu_ua_all_lus(ASC_ALUA_STATE_CHANGED, di, except_lu, except_iport, except_rel);
	held_post(notes, nnotes);
	return 0;
}

/* The nexus a device group's unit attention spares (a held STPG's sender). */
struct ua_except {
	const struct scsi_lu *lu;
	char iport[256];
	uint16_t rel;
};

int scsi_alua_set_map(const struct scsi_alua_dg_update *m, size_t n, size_t *bad)
{
	struct held_note notes[SCSI_ALUA_HELD_MAX];
	struct ua_except *ex = NULL;
	int di[ALUA_MAX_DG];
	bool changed[ALUA_MAX_DG], ua;
	size_t i, j, nnotes = 0;
	int rc = 0;

	if (n > ALUA_MAX_DG || (n && !m))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		for (j = 0; j < m[i].n; j++) {
			if (!state_valid(m[i].u[j].state)) {
				if (bad)
					*bad = i;
				return -EINVAL;
			}
		}
	}
	ex = calloc(n ? n : 1, sizeof(*ex));
	if (!ex)
		return -ENOMEM;
	pthread_mutex_lock(&alua.lock);
	/* every device group exists, once, with room: before anything changes */
	for (i = 0; i < n && !rc; i++) {
		di[i] = dg_find(m[i].dg);
		rc = di[i] < 0 ? -ENOENT : dg_room(alua.dg[di[i]], m[i].u, m[i].n);
		for (j = 0; j < i && !rc; j++)
			if (di[j] == di[i])
				rc = -EINVAL;
		if (rc && bad)
			*bad = i;
	}
	if (rc) {
		pthread_mutex_unlock(&alua.lock);
		free(ex);
		return rc;
	}
	for (i = 0; i < n; i++) {
		const struct alua_held *h = NULL;

		changed[i] = dg_apply(alua.dg[di[i]], m[i].u, m[i].n, ALUA_STATUS_IMPLICIT, false);
		if (changed[i])
			nnotes += held_settle((size_t)di[i], notes + nnotes,
					      SCSI_ALUA_HELD_MAX - nnotes, &h);
		if (h) {
			ex[i].lu = h->lu;
			snprintf(ex[i].iport, sizeof(ex[i].iport), "%s", h->iport);
			ex[i].rel = h->rel;
		}
	}
	restricted_update();
	ua = !lease_hides_states();
	pthread_mutex_unlock(&alua.lock);
	for (i = 0; ua && i < n; i++)
		if (changed[i])
			scsi_lu_ua_all_lus(ASC_ALUA_STATE_CHANGED, di[i], ex[i].lu,
					   ex[i].lu ? ex[i].iport : NULL, ex[i].rel);
	held_post(notes, nnotes);
	free(ex);
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
	struct held_note notes[SCSI_ALUA_HELD_MAX];
	const struct alua_held *ex;
	struct alua_dg *d;
	bool changed = false;
	size_t i, nnotes = 0;
	int di;

	if (non_owner_state != SCSI_ALUA_ACTIVE_NON_OPTIMIZED && non_owner_state != SCSI_ALUA_STANDBY &&
	    non_owner_state != SCSI_ALUA_UNAVAILABLE && non_owner_state != SCSI_ALUA_ACTIVE_OPTIMIZED)
		return -EINVAL;
	di = dg_lock_get(dg);
	if (di < 0)
		return di;
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
	if (changed)
		nnotes = held_settle((size_t)di, notes, SCSI_ALUA_HELD_MAX, &ex);
	changed &= !lease_hides_states();
	pthread_mutex_unlock(&alua.lock);
	if (changed)
		scsi_lu_ua_all_lus(ASC_ALUA_STATE_CHANGED, di, NULL, NULL, 0);
	held_post(notes, nnotes);
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
	atomic_store(&lease.enforced, false);
	atomic_store(&lease.stepped_down, false);
	atomic_store(&lease.expires_ms, 0);
	atomic_store(&lease.unavailable_ms, SCSI_LEASE_UNAVAILABLE_MS);
	atomic_store(&lease.lost_ms, 0);
	lease.announced = SCSI_LEASE_OFF;
	pthread_mutex_unlock(&alua.lock);
}

bool scsi_alua_multiport(void)
{
	unsigned int ports = 0;

	pthread_mutex_lock(&alua.lock);
	for (size_t i = 0; i < alua.ntpg; i++)
		ports += alua.tpg[i].nports;
	pthread_mutex_unlock(&alua.lock);
	return ports > 1;
}

/* ------------------------------------------------- REPORT TARGET PORT GROUPS */

void scsi_alua_rtpg(struct scsi_cmd *cmd)
{
	uint8_t fmt = cmd->cdb[1] >> 5;
	uint32_t alloc = get_be32(&cmd->cdb[6]);
	struct alua_dg *d;
	uint32_t len, off;
	uint8_t ov;
	bool gate;
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
	ov = lease_override_now();
	gate = ov == SCSI_LEASE_NO_OVERRIDE && bdev_awaits_registration(cmd->lu->bdev);
	pthread_mutex_lock(&alua.lock);
	d = cmd->lu->alua_dg < alua.ndg ? alua.dg[cmd->lu->alua_dg] : NULL;
	for (i = 0; i < alua.ntpg; i++) {
		const struct alua_tpg *g = &alua.tpg[i];
		struct alua_state s;
		uint8_t *p = &d8[off];

		if (!g->nports)
			continue;       /* its ports were removed */
		s = dg_reported(d, g->id, ov);
		if (gate && tpg_is_local(g) && !state_restricts(s.state)) {
			s.state = SCSI_ALUA_TRANSITIONING;
			s.status = ALUA_STATUS_IMPLICIT;
		}
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

/*
 * The policy is someone else's: hand the request over and hold the command
 * (its reactor goes on serving) until the outcome is known.
 */
static void stpg_hold(struct scsi_cmd *cmd, const struct scsi_alua_update *u, size_t n)
{
	struct reactor *r = reactor_self();
	struct scsi_alua_request req;
	struct alua_held *h;
	const char *iport;
	char line[256];
	size_t off = 0;
	int rc;

	memset(&req, 0, sizeof(req));
	scsi_nexus_id(cmd->itn, &iport, &req.rel_port_id);
	if (!r) {
		/* only a reactor can hold a command: nothing to wait on here */
		GW_WARN(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS from %s outside a reactor: "
			"cannot wait for the ALUA policy owner", (unsigned long long)cmd->lu->params.lun,
			iport);
		scsi_fail(cmd, SCSI_SK_NOT_READY, ASC_ALUA_TRANSITION);
		return;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		scsi_fail(cmd, SCSI_SK_ABORTED_COMMAND, ASC_INSUFFICIENT_RESOURCES);
		return;
	}
	h->n = n;
	memcpy(h->u, u, n * sizeof(u[0]));
	scsi_held_init(&h->hd, &alua.held, cmd, r);
	h->lu = cmd->lu;
	snprintf(h->iport, sizeof(h->iport), "%s", iport);
	h->rel = req.rel_port_id;
	h->timeout_ms = atomic_load(&alua.timeout_ms);
	for (size_t i = 0; i < n && off < sizeof(line) - 24; i++)
		off += (size_t)snprintf(line + off, sizeof(line) - off, " %u=%s", u[i].tpg_id,
					state_name(u[i].state));

	pthread_mutex_lock(&alua.lock);
	h->dg = cmd->lu->alua_dg;
	if (h->dg < alua.ndg && held_matches(alua.dg[h->dg], u, n)) {
		/* nothing to change: SPC-4 asks no transition of a group already there */
		pthread_mutex_unlock(&alua.lock);
		GW_INFO(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS from %s:%s already in effect",
			(unsigned long long)cmd->lu->params.lun, iport, line);
		free(h);
		scsi_good(cmd);
		return;
	}
	if (atomic_load(&alua.held.nheld) >= SCSI_ALUA_HELD_MAX) {
		pthread_mutex_unlock(&alua.lock);
		GW_WARN(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS from %s: already %u waiting; BUSY",
			(unsigned long long)cmd->lu->params.lun, iport, SCSI_ALUA_HELD_MAX);
		free(h);
		cmd->status = SCSI_STATUS_BUSY;
		cmd->sense_len = 0;
		scsi_complete(cmd);
		return;
	}
	scsi_held_add(&h->hd, ++alua.next_id);
	reactor_timer_arm(r, &h->hd.timer, h->timeout_ms);

	req.id = h->hd.id;
	snprintf(req.dg, sizeof(req.dg), "%s", h->dg < alua.ndg ? alua.dg[h->dg]->name
								: SCSI_ALUA_DG_DEFAULT);
	req.n = n;
	memcpy(req.u, u, n * sizeof(u[0]));
	snprintf(req.initiator_port, sizeof(req.initiator_port), "%s", iport);
	req.tpg_id = cmd->itn && cmd->itn->port ? cmd->itn->port->tpg_id : 0;
	req.lun = cmd->lu->params.lun;
	req.timeout_ms = h->timeout_ms;
	rc = alua.handler ? alua.handler(&req, alua.handler_arg) : -ENOTCONN;
	if (rc) {
		scsi_held_unlink(&h->hd);
		held_decide(h, HELD_UNDELIVERED);
	}
	pthread_mutex_unlock(&alua.lock);
	GW_NOTICE(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS from %s through port %u (device "
		  "group %s):%s: request %llu %s", (unsigned long long)cmd->lu->params.lun, iport,
		  req.rel_port_id, req.dg, line, (unsigned long long)req.id,
		  rc ? "has nobody to go to" : "handed to the ALUA policy owner");
	if (rc)
		held_finish(h);
}

void scsi_alua_stpg(struct scsi_cmd *cmd)
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
	if (scsi_alua_get_policy(NULL) == SCSI_ALUA_POLICY_EXTERNAL) {
		stpg_hold(cmd, u, n);
		return;
	}
	GW_INFO(SCSI_LOG, "lun %llu: SET TARGET PORT GROUPS from %s (%zu groups, device group %s)",
		(unsigned long long)cmd->lu->params.lun, iport, n, dg);
	rc = alua_apply(dg, u, n, ALUA_STATUS_EXPLICIT, true, cmd->lu, iport, rel);
	if (rc < 0) {
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	scsi_good(cmd);
}
