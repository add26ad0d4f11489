/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ALUA lease through the control socket (ctl_priv.h, docs/control.md):
 * RenewLease, StepDown, GetLease, and the timer that raises the unit
 * attentions and logs when a lease runs out.
 *
 * The lease itself lives in the SCSI layer (scsi_alua_lease_*): the command
 * path compares the monotonic clock with the expiry on its own, so nothing
 * here has to be on time for a node without a lease to stop serving. The
 * timer (gw_ctl.lease_timer) only tells the hosts (2A/06) and the log, at
 * each change of phase: valid -> expired (Transitioning) -> stepped-down
 * (Unavailable).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "ctl_priv.h"
#include "common/log.h"

static void lease_rearm(struct gw_ctl *ctl)
{
	struct scsi_lease l;
	uint64_t now, next;

	scsi_alua_lease_get(&l);
	now = scsi_alua_lease_now();
	next = scsi_lease_next_change(&l, now);
	if (!next) {
		reactor_timer_cancel(ctl->r, &ctl->lease_timer);
		return;
	}
	reactor_timer_arm(ctl->r, &ctl->lease_timer, next > now ? next - now : 0);
}

/* Tell the hosts and the log what changed by itself since the last sync, then wait for the next change. */
static void lease_check(struct gw_ctl *ctl)
{
	enum scsi_lease_phase before, ph;
	struct scsi_lease l;
	uint64_t now;

	ph = scsi_alua_lease_sync(&before);
	scsi_alua_lease_get(&l);
	now = scsi_alua_lease_now();
	if (ph != before && before == SCSI_LEASE_VALID && ph == SCSI_LEASE_EXPIRED)
		GW_WARN(COMP, "ALUA lease expired: every target port group Transitioning (Unavailable "
			"in %u ms unless it is renewed)", l.unavailable_ms);
	else if (ph != before && ph == SCSI_LEASE_STEPPED_DOWN && l.expires_ms)
		GW_WARN(COMP, "ALUA lease expired %llu ms ago and was not renewed: stepped down: "
			"every target port group Unavailable",
			(unsigned long long)(now > l.expires_ms ? now - l.expires_ms : 0));
	lease_rearm(ctl);
}

void ctl_lease_timer_fired(void *arg)
{
	lease_check(arg);
}

static void lease_resync_msg(void *arg)
{
	lease_check(arg);
}

void ctl_lease_resync(struct gw_ctl *ctl)
{
	if (reactor_self() == ctl->r) {
		lease_check(ctl);
		return;
	}
	/* another thread (a SIGHUP reload): the timer is the control thread's */
	if (reactor_send_msg(ctl->r, lease_resync_msg, ctl))
		GW_WARN(COMP, "out of memory: the ALUA lease timer follows the reload at its next "
			"request");
}

void ctl_lease_status(const char **state, uint32_t *remaining_ms, uint64_t *expires_ms)
{
	struct scsi_lease l;
	uint64_t now;
	enum scsi_lease_phase ph;

	scsi_alua_lease_get(&l);
	now = scsi_alua_lease_now();
	ph = scsi_lease_phase(&l, now);
	if (state)
		*state = scsi_lease_phase_name(ph);
	if (remaining_ms) {
		uint64_t left = ph == SCSI_LEASE_VALID ? l.expires_ms - now : 0;

		*remaining_ms = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
	}
	if (expires_ms)
		*expires_ms = l.expires_ms;
}

static void lease_reply(struct ctl_client *c)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__LeaseInfo li = ISERGW__CTL__LEASE_INFO__INIT;
	const char *state;
	struct scsi_lease l;

	scsi_alua_lease_get(&l);
	ctl_lease_status(&state, &li.remaining_ms, &li.expires_mono_ms);
	li.state = ctl_str(state);
	li.enforced = l.enforced;
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_LEASE;
	rep.lease = &li;
	ctl_client_send(c, &rep);
}

/* false (refused) when this node does not enforce a lease. */
static bool lease_enforced(struct ctl_client *c, const CtlRequest *req)
{
	struct scsi_lease l;

	scsi_alua_lease_get(&l);
	if (l.enforced)
		return true;
	ctl_reply_refused(c, req, -EOPNOTSUPP, "this node does not enforce an ALUA lease "
			  "(configuration key alua_lease is false)");
	return false;
}

void ctl_op_renew_lease(struct ctl_client *c, const CtlRequest *req)
{
	uint64_t exp = req->renew_lease->expires_mono_ms, now, lost;
	enum scsi_lease_phase before;
	struct scsi_lease l;
	char why[200];
	int rc;

	if (!lease_enforced(c, req))
		return;
	scsi_alua_lease_get(&l);
	now = scsi_alua_lease_now();
	if (exp <= now) {
		snprintf(why, sizeof(why), "expires_mono_ms %llu is not in the future (the monotonic "
			 "clock is at %llu ms)", (unsigned long long)exp, (unsigned long long)now);
		ctl_reply_refused(c, req, -EINVAL, why);
		return;
	}
	if (exp - now > CTL_LEASE_AHEAD_MAX_MS) {
		snprintf(why, sizeof(why), "expires_mono_ms %llu is %llu ms ahead: at most %u",
			 (unsigned long long)exp, (unsigned long long)(exp - now),
			 CTL_LEASE_AHEAD_MAX_MS);
		ctl_reply_refused(c, req, -EINVAL, why);
		return;
	}
	before = scsi_lease_phase(&l, now);
	lost = scsi_lease_lost_since(&l, now);
	/*
	 * Back after a time without a lease: the node may have been fenced at
	 * the backend meanwhile. Its iscsi:// LUNs await their registration
	 * (Transitioning) from before the lease is valid until the key is
	 * known to be there, which every reactor checks now.
	 */
	if (before != SCSI_LEASE_VALID)
		bdev_iscsi_lease_regaining();
	rc = scsi_alua_lease_renew(exp);
	if (before != SCSI_LEASE_VALID)
		bdev_iscsi_lease_regained();
	if (rc) {
		snprintf(why, sizeof(why), "lease not renewed: %s", strerror(-rc));
		ctl_reply_refused(c, req, rc, why);
		return;
	}
	if (before != SCSI_LEASE_VALID)
		GW_NOTICE(COMP, "%s: ALUA lease %s after %llu ms without one: valid for %llu ms, the "
			  "states apply again", c->name,
			  before == SCSI_LEASE_NONE ? "granted" : "renewed",
			  (unsigned long long)(lost && now > lost ? now - lost : 0),
			  (unsigned long long)(exp - now));
	else
		GW_DEBUG(COMP, "%s: ALUA lease renewed: valid for %llu ms%s", c->name,
			 (unsigned long long)(exp - now),
			 exp < l.expires_ms ? " (shorter than the previous one)" : "");
	lease_rearm(c->ctl);
	lease_reply(c);
}

void ctl_op_step_down(struct ctl_client *c, const CtlRequest *req)
{
	const char *reason = req->step_down->reason;
	int rc;

	if (!lease_enforced(c, req))
		return;
	rc = scsi_alua_lease_step_down();
	if (rc) {
		ctl_reply_refused(c, req, rc, "step down failed");
		return;
	}
	GW_WARN(COMP, "%s: step down%s%s%s: ALUA lease dropped, every target port group Unavailable",
		c->name, reason[0] ? " (" : "", reason, reason[0] ? ")" : "");
	lease_rearm(c->ctl);
	lease_reply(c);
}

void ctl_op_get_lease(struct ctl_client *c, const CtlRequest *req)
{
	if (lease_enforced(c, req))
		lease_reply(c);
}
