/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The LU state carried by the cluster (docs/control.md, "LU state"): the
 * SCSI layer's proposals go out as LuStateProposal events to the
 * subscribers (the HA agent); the agent answers with LuStateDone and pushes
 * what the cluster applied with LuStateApply.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_priv.h"
#include "scsi/scsi_shared.h"
#include "common/log.h"

/* ---- the state in both directions */

void ctl_lu_state_to_pb(const struct shs_state *st, const uint8_t naa[16], uint64_t version,
			Isergw__Ctl__LuState *out, Isergw__Ctl__LuReg *regs,
			Isergw__Ctl__LuReg **regp)
{
	isergw__ctl__lu_state__init(out);
	out->naa.data = (uint8_t *)(uintptr_t)naa;
	out->naa.len = 16;
	out->version = version;
	out->pr_generation = st->pr_generation;
	out->aptpl = st->aptpl;
	out->pr_held = st->pr_held;
	out->pr_type = st->pr_type;
	out->pr_holder = st->pr_holder;
	for (uint32_t i = 0; i < st->nregs && i < SHS_MAX_REGS; i++) {
		isergw__ctl__lu_reg__init(&regs[i]);
		regs[i].key = st->regs[i].key;
		regs[i].rel_port = st->regs[i].rel_port;
		regs[i].all_tg_pt = st->regs[i].all_tg_pt;
		regs[i].iport = (char *)(uintptr_t)st->regs[i].iport;
		regp[i] = &regs[i];
	}
	out->regs = regp;
	out->n_regs = st->nregs;
	out->r2_held = st->r2_held;
	out->r2_rel_port = st->r2_rel_port;
	out->r2_iport = (char *)(uintptr_t)st->r2_iport;
	out->mode_valid = true;
	out->wce = st->wce;
	out->swp = st->swp;
}

int ctl_lu_state_from_pb(const Isergw__Ctl__LuState *in, struct shs_state *st, char *why,
			 size_t len)
{
	memset(st, 0, sizeof(*st));
	if (in->n_regs > SHS_MAX_REGS) {
		snprintf(why, len, "%zu registrations (at most %u)", in->n_regs, SHS_MAX_REGS);
		return -EINVAL;
	}
	if (in->pr_type > 0xff || in->r2_rel_port > 0xffff) {
		snprintf(why, len, "a field is out of range");
		return -EINVAL;
	}
	st->pr_generation = in->pr_generation;
	st->aptpl = in->aptpl;
	st->pr_held = in->pr_held;
	st->pr_type = (uint8_t)in->pr_type;
	st->pr_holder = in->pr_holder;
	st->nregs = (uint32_t)in->n_regs;
	for (size_t i = 0; i < in->n_regs; i++) {
		const Isergw__Ctl__LuReg *r = in->regs[i];

		if (r->rel_port > 0xffff || strlen(r->iport) >= SHS_IPORT_MAX) {
			snprintf(why, len, "registration %zu is malformed", i);
			return -EINVAL;
		}
		st->regs[i].key = r->key;
		st->regs[i].rel_port = (uint16_t)r->rel_port;
		st->regs[i].all_tg_pt = r->all_tg_pt;
		snprintf(st->regs[i].iport, sizeof(st->regs[i].iport), "%s", r->iport);
	}
	st->r2_held = in->r2_held;
	st->r2_rel_port = (uint16_t)in->r2_rel_port;
	if (strlen(in->r2_iport) >= SHS_IPORT_MAX) {
		snprintf(why, len, "the SCSI-2 holder is malformed");
		return -EINVAL;
	}
	snprintf(st->r2_iport, sizeof(st->r2_iport), "%s", in->r2_iport);
	st->wce = in->wce;
	st->swp = in->swp;
	return scsi_shs_state_validate(st, why, len);
}

/* ---- proposals: SCSI layer -> event */

struct lu_prop_msg {
	struct gw_ctl *ctl;
	uint64_t id;
	uint8_t naa[16];
	uint64_t base;
	bool wait;
	size_t nev;
	struct shs_state st;
	struct shs_event ev[];
};

static void lu_prop_run(void *arg)
{
	struct lu_prop_msg *m = arg;
	struct gw_ctl *ctl = m->ctl;
	Isergw__Ctl__LuStateProposal p = ISERGW__CTL__LU_STATE_PROPOSAL__INIT;
	Isergw__Ctl__LuState st;
	Isergw__Ctl__LuReg *regs = calloc(SHS_MAX_REGS, sizeof(*regs));
	Isergw__Ctl__LuReg **regp = calloc(SHS_MAX_REGS, sizeof(*regp));
	Isergw__Ctl__LuEvent *ev = calloc(m->nev + 1, sizeof(*ev));
	Isergw__Ctl__LuEvent **evp = calloc(m->nev + 1, sizeof(*evp));
	Isergw__Ctl__Event e = ISERGW__CTL__EVENT__INIT;
	unsigned int delivered = 0;

	if (!regs || !regp || !ev || !evp) {
		GW_ERR(COMP, "LU state proposal %llu: out of memory", (unsigned long long)m->id);
		goto out;
	}
	ctl_lu_state_to_pb(&m->st, m->naa, m->base, &st, regs, regp);
	for (size_t i = 0; i < m->nev; i++) {
		isergw__ctl__lu_event__init(&ev[i]);
		ev[i].kind = m->ev[i].kind;
		ev[i].flags = m->ev[i].flags;
		ev[i].asc = m->ev[i].asc;
		ev[i].rel_port = m->ev[i].rel_port;
		ev[i].iport = m->ev[i].iport;
		evp[i] = &ev[i];
	}
	p.proposal_id = m->id;
	p.state = &st;
	p.events = evp;
	p.n_events = m->nev;
	p.wait = m->wait;
	e.kind_case = ISERGW__CTL__EVENT__KIND_LU_STATE_PROPOSAL;
	e.lu_state_proposal = &p;
	delivered = ctl_publish(ctl, &e);
	if (!delivered) {
		GW_WARN(COMP, "LU state proposal %llu: no subscriber took it",
			(unsigned long long)m->id);
		goto out;
	}
	GW_DEBUG(COMP, "LU state proposal %llu (base version %llu, %zu event(s)) sent as event "
		 "%llu", (unsigned long long)m->id, (unsigned long long)m->base, m->nev,
		 (unsigned long long)e.seq);
	delivered = 1;
out:
	if (!delivered && m->wait)
		(void)scsi_cluster_done(m->id, -ENOTCONN);
	free(regs);
	free(regp);
	free(ev);
	free(evp);
	ctl_event_done(ctl, m);
}

int ctl_lu_propose(const struct scsi_lu_proposal *p, void *arg)
{
	struct gw_ctl *ctl = arg;
	struct lu_prop_msg *m;
	int rc;

	m = ctl_event_new(ctl, sizeof(*m) + p->nev * sizeof(m->ev[0]), &rc);
	if (!m)
		return rc;
	m->ctl = ctl;
	m->id = p->id;
	memcpy(m->naa, p->naa, sizeof(m->naa));
	m->base = p->base_version;
	m->wait = p->wait;
	m->nev = p->nev;
	m->st = *p->st;
	memcpy(m->ev, p->ev, p->nev * sizeof(m->ev[0]));
	return ctl_post(ctl, lu_prop_run, m);
}

/* ---- requests */

void ctl_op_lu_state_apply(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__LuStateApply *a = req->lu_state_apply;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	struct shs_state *st = NULL;
	struct shs_event *ev = NULL;
	char why[200];
	int rc;

	if (!a->state || a->state->naa.len != 16 || !a->state->version) {
		ctl_reply_refused(c, req, -EINVAL, "LuStateApply needs a state with a 16-byte naa "
				  "and a version >= 1");
		return;
	}
	if (a->n_events > SCSI_LU_EVENTS_MAX) {
		snprintf(why, sizeof(why), "%zu events (at most %u)", a->n_events,
			 SCSI_LU_EVENTS_MAX);
		ctl_reply_refused(c, req, -EINVAL, why);
		return;
	}
	st = malloc(sizeof(*st));
	ev = calloc(a->n_events + 1, sizeof(*ev));
	if (!st || !ev) {
		ctl_reply_refused(c, req, -ENOMEM, "out of memory");
		goto out;
	}
	rc = ctl_lu_state_from_pb(a->state, st, why, sizeof(why));
	if (rc) {
		ctl_reply_refused(c, req, rc, why);
		goto out;
	}
	for (size_t i = 0; i < a->n_events; i++) {
		const Isergw__Ctl__LuEvent *e = a->events[i];

		if ((e->kind != SHS_EV_UA_ALL && e->kind != SHS_EV_UA_NEXUS) || e->flags > 7 ||
		    e->asc > 0xffff || e->rel_port > 0xffff || strlen(e->iport) >= SHS_IPORT_MAX) {
			snprintf(why, sizeof(why), "event %zu is malformed", i);
			ctl_reply_refused(c, req, -EINVAL, why);
			goto out;
		}
		ev[i].kind = (uint8_t)e->kind;
		ev[i].flags = (uint8_t)e->flags;
		ev[i].asc = (uint16_t)e->asc;
		ev[i].rel_port = (uint16_t)e->rel_port;
		snprintf(ev[i].iport, sizeof(ev[i].iport), "%s", e->iport);
	}
	if (!a->state->mode_valid) {
		st->wce = 0;
		st->swp = 0;
	}
	rc = scsi_cluster_apply(a->state->naa.data, a->state->version, st, a->state->mode_valid,
				ev, a->n_events, (a->own ? SCSI_CLUSTER_OWN : 0) |
				(a->away ? SCSI_CLUSTER_AWAY : 0));
	if (rc && rc != -EALREADY) {
		snprintf(why, sizeof(why), "%s", rc == -ENOENT ? "no such logical unit here" :
			 rc == -EINVAL ? "the logical unit's state is not the cluster's "
			 "(lu_state) or the state is malformed" : strerror(-rc));
		ctl_reply_refused(c, req, rc, why);
		goto out;
	}
	ctl_client_send(c, &rep);
out:
	free(st);
	free(ev);
}

void ctl_op_lu_state_done(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__LuStateDone *d = req->lu_state_done;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	char why[160];
	int rc;

	if (d->status > 0) {
		ctl_reply_refused(c, req, -EINVAL, "LuStateDone: status must be 0 or a negative errno");
		return;
	}
	rc = scsi_cluster_done(d->proposal_id, d->status);
	if (rc && rc != -ENOENT && rc != -EALREADY) {
		snprintf(why, sizeof(why), "proposal %llu: %s", (unsigned long long)d->proposal_id,
			 strerror(-rc));
		ctl_reply_refused(c, req, rc, why);
		return;
	}
	if (d->status && d->status != -ESTALE)
		GW_WARN(COMP, "%s: LU state proposal %llu not applied: %s%s%s%s", c->name,
			(unsigned long long)d->proposal_id, strerror(-d->status),
			d->reason[0] ? " (" : "", d->reason, d->reason[0] ? ")" : "");
	/* -ENOENT: nothing held it (a reset's), or its command timed out or was aborted */
	ctl_client_send(c, &rep);
}

/* ---- cluster-wide LBA locks: SCSI layer -> event */

struct lu_lock_msg {
	struct gw_ctl *ctl;
	uint64_t id;
	uint8_t naa[16];
	uint64_t lba;
	uint32_t blocks;
	bool lock;
};

static void lu_lock_run(void *arg)
{
	struct lu_lock_msg *m = arg;
	struct gw_ctl *ctl = m->ctl;
	Isergw__Ctl__LuLockRequest r = ISERGW__CTL__LU_LOCK_REQUEST__INIT;
	Isergw__Ctl__Event e = ISERGW__CTL__EVENT__INIT;
	unsigned int delivered;

	r.lock_id = m->id;
	r.naa.data = m->naa;
	r.naa.len = 16;
	r.lba = m->lba;
	r.blocks = m->blocks;
	r.release = !m->lock;
	e.kind_case = ISERGW__CTL__EVENT__KIND_LU_LOCK_REQUEST;
	e.lu_lock_request = &r;
	delivered = ctl_publish(ctl, &e);
	if (!delivered && m->lock) {
		GW_WARN(COMP, "LBA lock %llu: no subscriber took it", (unsigned long long)m->id);
		(void)scsi_cluster_done(m->id, -ENOTCONN);
	}
	ctl_event_done(ctl, m);
}

int ctl_lu_lock(uint64_t id, const uint8_t naa[16], uint64_t lba, uint32_t blocks, bool lock,
		void *arg)
{
	struct lu_lock_msg *m;
	int rc;

	m = ctl_event_new(arg, sizeof(*m), &rc);
	if (!m)
		return rc;
	*m = (struct lu_lock_msg){ .ctl = arg, .id = id, .lba = lba, .blocks = blocks, .lock = lock };
	memcpy(m->naa, naa, sizeof(m->naa));
	return ctl_post(arg, lu_lock_run, m);
}
