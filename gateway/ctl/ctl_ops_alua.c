/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ALUA through the control socket (ctl_priv.h, docs/control.md):
 * SetAluaStates (epochs, transitions on the control thread's timer),
 * GetAluaStates, and the events of the external ALUA policy.
 *
 * Events: SET TARGET PORT GROUPS under the external ALUA policy reaches
 * ctl_alua_request() on the command's reactor, which copies it to the
 * control thread by message (nothing else on the data path); the control
 * thread pushes it to every subscriber, or tells the SCSI layer at once that
 * nobody took it. A subscriber answers with AluaRequestDone.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_priv.h"
#include "util/log.h"

#define CTL_ALUA_KNOWN_MAX 256u       /* groups listed per device group */

static int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- ALUA */

/*
 * The one place that changes ALUA states: all groups of one device group at
 * once (an empty name is the default device group).
 */
static int alua_apply(const struct alua_set *s, bool transitioning, char *err, size_t errlen)
{
	struct scsi_alua_update u[CTL_ALUA_MAX_GROUPS];
	int rc;

	/* device groups come from the configuration: a name nobody configured is a mistake */
	if (s->dg[0] && scsi_alua_get_states(s->dg, NULL, 0, NULL) == -ENOENT)
		return errf(err, errlen, -ENOENT, "device group '%s' does not exist", s->dg);
	memcpy(u, s->u, s->n * sizeof(u[0]));
	for (size_t i = 0; transitioning && i < s->n; i++)
		u[i].state = SCSI_ALUA_TRANSITIONING;
	rc = scsi_alua_set_states(s->dg, u, s->n);
	if (rc == -ENOSPC)
		return errf(err, errlen, rc, "the ALUA table is full");
	if (rc)
		return errf(err, errlen, rc, "ALUA states not set: %s", strerror(-rc));
	return 0;
}

static int cmp_update(const void *a, const void *b)
{
	const struct scsi_alua_update *x = a, *y = b;

	return (int)x->tpg_id - (int)y->tpg_id;
}

static bool alua_set_equal(const struct alua_set *a, const struct alua_set *b)
{
	if (strcmp(a->dg, b->dg) || a->n != b->n || a->transition_ms != b->transition_ms)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->u[i].tpg_id != b->u[i].tpg_id || a->u[i].state != b->u[i].state ||
		    a->u[i].pref != b->u[i].pref)
			return false;
	return true;
}

/*
 * The AluaStates payload: every group the device group knows (the port map,
 * the local portals' groups and every group with an explicit state), from
 * the SCSI layer's own table.
 */
static Isergw__Ctl__AluaStates *alua_states_build(struct gw_ctl *ctl, struct arena *a,
						  const char *dg)
{
	Isergw__Ctl__AluaStates *st = ctl_arena_alloc(a, sizeof(*st));
	struct scsi_alua_update u[CTL_ALUA_KNOWN_MAX];
	size_t n = 0;

	if (!st)
		return NULL;
	isergw__ctl__alua_states__init(st);
	if (scsi_alua_get_states(dg, u, CTL_ALUA_KNOWN_MAX, &n))
		n = 0;
	if (n > CTL_ALUA_KNOWN_MAX)
		n = CTL_ALUA_KNOWN_MAX;
	st->epoch = ctl->alua_epoch;
	st->device_group = ctl_arena_strdup(a, dg);
	st->transition_pending = ctl->transition_timer.armed;
	st->groups = ctl_arena_alloc(a, (n ? n : 1) * sizeof(*st->groups));
	if (!st->groups)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		Isergw__Ctl__AluaGroupState *g = ctl_arena_alloc(a, sizeof(*g));

		if (!g)
			return NULL;
		isergw__ctl__alua_group_state__init(g);
		g->tpg_id = u[i].tpg_id;
		g->state = (Isergw__Ctl__AluaState)u[i].state;
		g->pref = u[i].pref;
		st->groups[st->n_groups++] = g;
	}
	return st;
}

static void alua_reply(struct ctl_client *c, const char *dg, bool async)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	struct arena a = { 0 };

	rep.alua = alua_states_build(c->ctl, &a, dg);
	if (rep.alua) {
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_ALUA;
	} else {
		rep.status = -ENOMEM;
		rep.error = ctl_str("out of memory");
	}
	if (async)
		ctl_client_done(c, &rep);
	else
		ctl_client_send(c, &rep);
	ctl_arena_free(&a);
}

static void transition_cancel(struct gw_ctl *ctl, uint64_t by_epoch)
{
	struct ctl_client *c = ctl->transition_client;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	char why[96];

	if (!ctl->transition_timer.armed)
		return;
	reactor_timer_cancel(ctl->r, &ctl->transition_timer);
	ctl->transition_client = NULL;
	GW_NOTICE(COMP, "ALUA transition superseded by epoch %llu", (unsigned long long)by_epoch);
	snprintf(why, sizeof(why), "superseded by epoch %llu before the transition ended",
		 (unsigned long long)by_epoch);
	rep.status = -ECANCELED;
	rep.error = why;
	if (c)
		ctl_client_done(c, &rep);
}

void ctl_alua_transition_end(void *arg)
{
	struct gw_ctl *ctl = arg;
	struct ctl_client *c = ctl->transition_client;
	char why[160];
	int rc;

	ctl->transition_client = NULL;
	rc = alua_apply(&ctl->transition_final, false, why, sizeof(why));
	if (rc) {
		CtlReply rep = ISERGW__CTL__REPLY__INIT;

		GW_ERR(COMP, "ALUA transition of epoch %llu: final states not set: %s",
		       (unsigned long long)ctl->alua_epoch, why);
		rep.status = rc;
		rep.error = why;
		if (c)
			ctl_client_done(c, &rep);
		return;
	}
	GW_NOTICE(COMP, "ALUA transition of epoch %llu done", (unsigned long long)ctl->alua_epoch);
	if (c)
		alua_reply(c, ctl->transition_final.dg, true);
}

void ctl_op_set_alua(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__SetAluaStates *s = req->set_alua_states;
	struct gw_ctl *ctl = c->ctl;
	struct alua_set set;
	char why[200], line[512];
	size_t off = 0;
	int rc;

	memset(&set, 0, sizeof(set));
	snprintf(set.dg, sizeof(set.dg), "%s", s->device_group);
	set.n = s->n_groups;
	set.transition_ms = s->transition_ms;
	for (size_t i = 0; i < s->n_groups; i++) {
		set.u[i].tpg_id = (uint16_t)s->groups[i]->tpg_id;
		set.u[i].state = (uint8_t)s->groups[i]->state;
		set.u[i].pref = s->groups[i]->pref;
	}
	qsort(set.u, set.n, sizeof(set.u[0]), cmp_update);
	if (s->epoch < ctl->epoch) {
		snprintf(why, sizeof(why), "epoch %llu is older than the current epoch %llu",
			 (unsigned long long)s->epoch, (unsigned long long)ctl->epoch);
		ctl_reply_refused(c, req, -ESTALE, why);
		return;
	}
	if (s->epoch == ctl->alua_epoch) {
		if (!alua_set_equal(&set, &ctl->alua_last)) {
			snprintf(why, sizeof(why), "epoch %llu was already used for different ALUA "
				 "states", (unsigned long long)s->epoch);
			ctl_reply_refused(c, req, -EEXIST, why);
			return;
		}
		alua_reply(c, set.dg, false);
		return;
	}
	rc = alua_apply(&set, set.transition_ms > 0, why, sizeof(why));
	if (rc) {
		ctl_reply_refused(c, req, rc, why);
		return;
	}
	transition_cancel(ctl, s->epoch);
	ctl->epoch = s->epoch;
	ctl->alua_epoch = s->epoch;
	ctl->alua_last = set;
	for (size_t i = 0; i < set.n && off < sizeof(line) - 40; i++)
		off += (size_t)snprintf(line + off, sizeof(line) - off, " %u=%s%s", set.u[i].tpg_id,
					ctl_alua_state_name(set.u[i].state),
					set.u[i].pref ? ",pref" : "");
	GW_NOTICE(COMP, "%s: ALUA epoch %llu%s%s:%s%s", c->name, (unsigned long long)s->epoch,
		  set.dg[0] ? " device group " : "", set.dg, line,
		  set.transition_ms ? " (transitioning first)" : "");
	if (!set.transition_ms) {
		alua_reply(c, set.dg, false);
		return;
	}
	ctl->transition_final = set;
	ctl->transition_client = c;
	c->busy = true;
	reactor_timer_arm(ctl->r, &ctl->transition_timer, set.transition_ms);
}

void ctl_op_get_alua(struct ctl_client *c, const CtlRequest *req)
{
	const char *dg = req->get_alua_states->device_group;
	char why[160];

	/* as for SetAluaStates: a device group of the configuration, or the default one */
	if (dg[0] && scsi_alua_get_states(dg, NULL, 0, NULL) == -ENOENT) {
		snprintf(why, sizeof(why), "device group '%s' does not exist", dg);
		ctl_reply_refused(c, req, -ENOENT, why);
		return;
	}
	alua_reply(c, dg, false);
}

/* ---- events */

void ctl_op_alua_request_done(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__AluaRequestDone *d = req->alua_request_done;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	char why[160];
	int rc;

	rc = scsi_alua_request_done(d->request_id, d->status);
	if (rc == -ENOENT) {
		snprintf(why, sizeof(why), "no SET TARGET PORT GROUPS request %llu is waiting "
			 "(already answered, timed out or aborted)", (unsigned long long)d->request_id);
		ctl_reply_refused(c, req, rc, why);
		return;
	}
	if (rc && rc != -EALREADY) {
		snprintf(why, sizeof(why), "request %llu: %s", (unsigned long long)d->request_id,
			 strerror(-rc));
		ctl_reply_refused(c, req, rc, why);
		return;
	}
	GW_NOTICE(COMP, "%s: ALUA request %llu answered %s%s%s%s", c->name,
		  (unsigned long long)d->request_id, d->status ? strerror(-d->status) : "done",
		  d->reason[0] ? " (" : "", d->reason, d->reason[0] ? ")" : "");
	if (rc == -EALREADY)
		GW_INFO(COMP, "ALUA request %llu was already decided (its states were set)",
			(unsigned long long)d->request_id);
	ctl_client_send(c, &rep);
}

/* A SET TARGET PORT GROUPS copied here from its reactor. */
struct alua_event_msg {
	struct gw_ctl *ctl;
	struct scsi_alua_request req;
};

static void alua_event_run(void *arg)
{
	struct alua_event_msg *m = arg;
	struct gw_ctl *ctl = m->ctl;
	const struct scsi_alua_request *r = &m->req;
	Isergw__Ctl__AluaGroupState gs[SCSI_ALUA_REQUEST_GROUPS_MAX];
	Isergw__Ctl__AluaGroupState *gp[SCSI_ALUA_REQUEST_GROUPS_MAX];
	Isergw__Ctl__AluaChangeRequest a = ISERGW__CTL__ALUA_CHANGE_REQUEST__INIT;
	Isergw__Ctl__Event ev = ISERGW__CTL__EVENT__INIT;
	struct list_head *pos, *n;
	unsigned int delivered = 0;

	a.request_id = r->id;
	a.device_group = ctl_str(r->dg);
	a.initiator_port = ctl_str(r->initiator_port);
	a.rel_port_id = r->rel_port_id;
	a.tpg_id = r->tpg_id;
	a.lun = r->lun;
	a.timeout_ms = r->timeout_ms;
	for (size_t i = 0; i < r->n && i < SCSI_ALUA_REQUEST_GROUPS_MAX; i++) {
		isergw__ctl__alua_group_state__init(&gs[i]);
		gs[i].tpg_id = r->u[i].tpg_id;
		gs[i].state = (Isergw__Ctl__AluaState)r->u[i].state;
		gp[i] = &gs[i];
		a.n_groups++;
	}
	a.groups = gp;
	ev.seq = ++ctl->event_seq;
	ev.kind_case = ISERGW__CTL__EVENT__KIND_ALUA_CHANGE_REQUEST;
	ev.alua_change_request = &a;
	list_for_each_safe(pos, n, &ctl->clients) {
		struct ctl_client *c = list_entry(pos, struct ctl_client, link);

		delivered += ctl_client_push_event(c, &ev);
	}
	if (delivered) {
		GW_INFO(COMP, "ALUA request %llu (device group %s) sent to %u subscriber(s) as event "
			"%llu", (unsigned long long)r->id, r->dg, delivered,
			(unsigned long long)ev.seq);
	} else {
		GW_WARN(COMP, "ALUA request %llu (device group %s): no subscriber took it",
			(unsigned long long)r->id, r->dg);
		(void)scsi_alua_request_done(r->id, -ENOTCONN);
	}
	free(m);
	atomic_fetch_sub(&ctl->inflight, 1);
}

/* On the command's reactor, under the SCSI layer's ALUA lock: copy and go. */
int ctl_alua_request(const struct scsi_alua_request *req, void *arg)
{
	struct gw_ctl *ctl = arg;
	struct alua_event_msg *m;

	if (atomic_load(&ctl->nsubscribers) == 0)
		return -ENOTCONN;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->ctl = ctl;
	m->req = *req;
	atomic_fetch_add(&ctl->inflight, 1);
	if (reactor_send_msg(ctl->r, alua_event_run, m)) {
		atomic_fetch_sub(&ctl->inflight, 1);
		free(m);
		return -ENOMEM;
	}
	return 0;
}
