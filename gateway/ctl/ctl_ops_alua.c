/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ALUA through the control socket (ctl_priv.h, docs/control.md):
 * SetAluaStates and SetAluaMap (one kind of epoch, transitions on the
 * control thread's timer; a SetAluaMap with config_epoch also stands for
 * the configuration of its epoch: a placement-only change, which may fence
 * nodes at the backend first), GetAluaStates, and the events of the
 * external ALUA policy.
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
#include "common/log.h"

#define CTL_ALUA_KNOWN_MAX 256u       /* groups listed per device group */

_Static_assert(CTL_PR_FENCE_MAX <= GW_PR_FENCE_MAX, "a map's fencing keys fit a configuration");

/* ---- ALUA */

static int cmp_update(const void *a, const void *b)
{
	const struct scsi_alua_update *x = a, *y = b;

	return (int)x->tpg_id - (int)y->tpg_id;
}

static int cmp_set(const void *a, const void *b)
{
	const struct alua_set *x = a, *y = b;

	return strcmp(ctl_dg_name(x->dg), ctl_dg_name(y->dg));
}

static void alua_map_free(struct alua_map *m)
{
	free(m->dg);
	memset(m, 0, sizeof(*m));
}

/* A map of n device groups, zeroed; -ENOMEM. */
static int alua_map_alloc(struct alua_map *m, size_t n)
{
	memset(m, 0, sizeof(*m));
	m->dg = calloc(n ? n : 1, sizeof(*m->dg));
	if (!m->dg)
		return -ENOMEM;
	m->n = n;
	return 0;
}

static int alua_map_dup(struct alua_map *dst, const struct alua_map *src)
{
	int rc = alua_map_alloc(dst, src->n);

	if (rc)
		return rc;
	memcpy(dst->dg, src->dg, src->n * sizeof(*src->dg));
	dst->transition_ms = src->transition_ms;
	dst->map = src->map;
	return 0;
}

/* One device group of a request, its groups sorted. */
static void alua_set_fill(struct alua_set *set, const char *dg,
			  Isergw__Ctl__AluaGroupState *const *groups, size_t n)
{
	snprintf(set->dg, sizeof(set->dg), "%s", dg);
	set->n = n;
	for (size_t i = 0; i < n; i++) {
		set->u[i].tpg_id = (uint16_t)groups[i]->tpg_id;
		set->u[i].state = (uint8_t)groups[i]->state;
		set->u[i].pref = groups[i]->pref;
	}
	qsort(set->u, set->n, sizeof(set->u[0]), cmp_update);
}

void ctl_alua_free(struct gw_ctl *ctl)
{
	alua_map_free(&ctl->alua_last);
	alua_map_free(&ctl->transition_final);
}

static bool alua_set_equal(const struct alua_set *a, const struct alua_set *b)
{
	if (strcmp(ctl_dg_name(a->dg), ctl_dg_name(b->dg)) || a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->u[i].tpg_id != b->u[i].tpg_id || a->u[i].state != b->u[i].state ||
		    a->u[i].pref != b->u[i].pref)
			return false;
	return true;
}

/* Same content: the same device groups with the same states, the same transition time. */
static bool alua_map_equal(const struct alua_map *a, const struct alua_map *b)
{
	if (a->n != b->n || a->transition_ms != b->transition_ms)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!alua_set_equal(&a->dg[i], &b->dg[i]))
			return false;
	return true;
}

/*
 * The one place that changes ALUA states: every device group of the request
 * at once, all checked before any is changed (scsi_alua_set_map). With
 * transitioning, the groups first go to Transitioning: every listed group
 * for SetAluaStates, those whose state changes for SetAluaMap.
 */
static int alua_apply(const struct alua_map *m, bool transitioning, char *err, size_t errlen)
{
	struct scsi_alua_dg_update *up = calloc(m->n ? m->n : 1, sizeof(*up));
	struct alua_set *sets = calloc(m->n ? m->n : 1, sizeof(*sets));
	size_t bad = 0;
	int rc;

	if (!up || !sets) {
		free(up);
		free(sets);
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < m->n; i++) {
		sets[i] = m->dg[i];
		for (size_t k = 0; transitioning && k < sets[i].n; k++) {
			uint8_t cur = SCSI_ALUA_ACTIVE_OPTIMIZED;

			if (m->map) {
				(void)scsi_alua_get_state(sets[i].dg, sets[i].u[k].tpg_id, &cur, NULL);
				if (cur == sets[i].u[k].state)
					continue;
			}
			sets[i].u[k].state = SCSI_ALUA_TRANSITIONING;
		}
		up[i].dg = sets[i].dg;
		up[i].u = sets[i].u;
		up[i].n = sets[i].n;
	}
	rc = scsi_alua_set_map(up, m->n, &bad);
	free(up);
	free(sets);
	/* device groups come from the configuration: a name nobody configured is a mistake */
	if (rc == -ENOENT)
		return gw_errf(err, errlen, rc, "device group '%s' does not exist",
			    bad < m->n ? m->dg[bad].dg : "?");
	if (rc == -ENOSPC)
		return gw_errf(err, errlen, rc, "the ALUA table is full");
	if (rc)
		return gw_errf(err, errlen, rc, "ALUA states not set: %s", strerror(-rc));
	return 0;
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
	const char *lease_state;
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
	ctl_lease_status(&lease_state, NULL, NULL);
	st->lease_state = ctl_str(strcmp(lease_state, "off") ? lease_state : "");
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

/* The reply to an ALUA request: AluaStates of its device group, or AluaMap of all of them. */
static void alua_reply(struct ctl_client *c, const struct alua_map *m, bool async)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__AluaMap *am = NULL;
	struct arena a = { 0 };

	if (!m->map) {
		rep.alua = alua_states_build(c->ctl, &a, m->n ? m->dg[0].dg : "");
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_ALUA;
	} else if ((am = ctl_arena_alloc(&a, sizeof(*am))) != NULL) {
		isergw__ctl__alua_map__init(am);
		am->epoch = c->ctl->alua_epoch;
		am->config_epoch = c->ctl->config_epoch;
		am->device_groups = ctl_arena_alloc(&a, (m->n ? m->n : 1) * sizeof(*am->device_groups));
		for (size_t i = 0; am->device_groups && i < m->n; i++) {
			am->device_groups[i] = alua_states_build(c->ctl, &a, m->dg[i].dg);
			am->n_device_groups += am->device_groups[i] != NULL;
		}
		rep.alua_map = am;
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_ALUA_MAP;
	}
	if (a.failed || (!rep.alua && !rep.alua_map)) {
		memset(&rep, 0, sizeof(rep));
		isergw__ctl__reply__init(&rep);
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
	alua_map_free(&ctl->transition_final);
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
	struct alua_map final = ctl->transition_final;
	char why[160];
	int rc;

	ctl->transition_client = NULL;
	memset(&ctl->transition_final, 0, sizeof(ctl->transition_final));
	rc = alua_apply(&final, false, why, sizeof(why));
	if (rc) {
		CtlReply rep = ISERGW__CTL__REPLY__INIT;

		GW_ERR(COMP, "ALUA transition of epoch %llu: final states not set: %s",
		       (unsigned long long)ctl->alua_epoch, why);
		rep.status = rc;
		rep.error = why;
		if (c)
			ctl_client_done(c, &rep);
		alua_map_free(&final);
		return;
	}
	GW_NOTICE(COMP, "ALUA transition of epoch %llu done", (unsigned long long)ctl->alua_epoch);
	if (c)
		alua_reply(c, &final, true);
	alua_map_free(&final);
}

/* "dg1: 1=ao,pref 2=standby; dg2: ..." into line. */
static void alua_map_line(const struct alua_map *m, char *line, size_t len)
{
	size_t off = 0;

	line[0] = '\0';
	for (size_t i = 0; i < m->n && off < len - 48; i++) {
		const struct alua_set *set = &m->dg[i];

		if (m->map)
			off += (size_t)snprintf(line + off, len - off, "%s %s:", i ? ";" : "",
						ctl_dg_name(set->dg));
		for (size_t k = 0; k < set->n && off < len - 40; k++)
			off += (size_t)snprintf(line + off, len - off, " %u=%s%s", set->u[k].tpg_id,
						ctl_alua_state_name(set->u[k].state),
						set->u[k].pref ? ",pref" : "");
	}
}

/* ---- a placement-only change: SetAluaMap with config_epoch */

/*
 * A placement-only map names every device group, each looked up in the
 * document and in the running configuration: by name in a sorted copy of
 * their lists (a map of 256 groups costs 256 x 256 comparisons otherwise,
 * milliseconds on the failover path).
 */
struct dg_ref {
	const char *name;               /* ctl_dg_name()'s */
	void *obj;
};

static int dg_ref_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dg_ref *)a)->name, ((const struct dg_ref *)b)->name);
}

static void *dg_ref_find(const struct dg_ref *r, size_t n, const char *name)
{
	const struct dg_ref key = { .name = ctl_dg_name(name) };
	const struct dg_ref *f = n ? bsearch(&key, r, n, sizeof(*r), dg_ref_cmp) : NULL;

	return f ? f->obj : NULL;
}

/* The configuration document's "device_groups" by name (*n of them; NULL: out of memory). */
static struct dg_ref *doc_dgs(json_object *doc, size_t *n)
{
	json_object *dgs, *o, *v;
	struct dg_ref *r;
	size_t len = 0;

	*n = 0;
	if (json_object_object_get_ex(doc, "device_groups", &dgs) &&
	    json_object_is_type(dgs, json_type_array))
		len = json_object_array_length(dgs);
	r = calloc(len ? len : 1, sizeof(*r));
	if (!r)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		o = json_object_array_get_idx(dgs, i);
		if (json_object_object_get_ex(o, "name", &v) && json_object_is_type(v, json_type_string))
			r[(*n)++] = (struct dg_ref){ ctl_dg_name(json_object_get_string(v)), o };
	}
	qsort(r, *n, sizeof(*r), dg_ref_cmp);
	return r;
}

/* A placement-only SetAluaMap, and the document's object of each of its device groups. */
struct placement {
	const Isergw__Ctl__SetAluaMap *s;
	json_object **dgs;              /* s->n_device_groups of them */
};

/*
 * Whether SetAluaMap s may stand for the configuration of its epoch: the
 * configuration isergwd holds is the one it names, and each of its device
 * groups is one of that configuration. 0: yes (p->dgs set when the owners
 * are to be taken, NULL when this epoch took them already); else refused,
 * why in why.
 */
static int placement_check(const struct gw_ctl *ctl, struct placement *p, char *why, size_t len)
{
	const Isergw__Ctl__SetAluaMap *s = p->s;
	struct dg_ref *ix;
	size_t nix;
	int rc = 0;

	p->dgs = NULL;
	if (!s->config_epoch)
		return 0;
	if (s->config_epoch >= s->epoch)
		return gw_errf(why, len, -EINVAL, "set_alua_map: config_epoch %llu is not older than "
			       "epoch %llu", (unsigned long long)s->config_epoch,
			       (unsigned long long)s->epoch);
	if (ctl->config_doc && ctl->config_epoch == s->epoch)
		return 0; /* this epoch took them already: the ALUA epoch rules decide */
	if (!ctl->config_doc || ctl->config_epoch != s->config_epoch)
		return gw_errf(why, len, -ESTALE, "the configuration held is of epoch %llu, not %llu: "
			       "apply the whole configuration", (unsigned long long)ctl->config_epoch,
			       (unsigned long long)s->config_epoch);
	ix = doc_dgs(ctl->config_doc, &nix);
	p->dgs = calloc(s->n_device_groups ? s->n_device_groups : 1, sizeof(*p->dgs));
	if (!ix || !p->dgs) {
		rc = gw_errf(why, len, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s->n_device_groups && !rc; i++) {
		const Isergw__Ctl__DeviceGroupStates *g = s->device_groups[i];

		p->dgs[i] = dg_ref_find(ix, nix, g->device_group);
		if (g->owner_tpg_id > 65535)
			rc = gw_errf(why, len, -EINVAL, "set_alua_map: device_groups[%zu].owner_tpg_id "
				     "%u not in 0..65535", i, g->owner_tpg_id);
		else if (!p->dgs[i])
			rc = gw_errf(why, len, -ENOENT, "device group '%s' is not in the "
				     "configuration of epoch %llu", ctl_dg_name(g->device_group),
				     (unsigned long long)ctl->config_epoch);
	}
out:
	free(ix);
	if (rc) {
		free(p->dgs);
		p->dgs = NULL;
	}
	return rc;
}

/*
 * A placement-only change whose configuration lists other nodes to fence
 * (backend_pr_fence): the keys the configuration held did not list are
 * preempted on every iscsi:// LUN before any state of the map is set or
 * the map answered, as ApplyConfig does before it applies (docs/ha.md,
 * "Fencing at the backend"), so the new owner serves only once the lost
 * node can no longer write. Blocks the control thread while it fences
 * (bounded, as a reload). 0, or refused (nothing set) with why.
 */
static int placement_fence(struct gw_ctl *ctl, const Isergw__Ctl__SetAluaMap *s, char *why,
			   size_t len)
{
	int rc;

	if (!s->backend_pr_fence_set)
		return 0;
	pthread_mutex_lock(&ctl->reload_lock);
	rc = gw_fence_keys(ctl->gw, s->backend_pr_fence, s->n_backend_pr_fence);
	pthread_mutex_unlock(&ctl->reload_lock);
	if (rc == -ENOKEY)
		return gw_errf(why, len, rc, "the configuration of epoch %llu has no backend "
			       "reservation key to fence with: apply the whole configuration",
			       (unsigned long long)ctl->config_epoch);
	if (rc)
		return gw_errf(why, len, rc, "set_alua_map: backend_pr_fence: %s", strerror(-rc));
	return 0;
}

/* The document's "backend_pr_fence" as the rendering of s's configuration has it. */
static bool placement_doc_fence(json_object *doc, const Isergw__Ctl__SetAluaMap *s)
{
	json_object *a = json_object_new_array_ext((int)s->n_backend_pr_fence);
	char key[24];

	if (!a)
		return false;
	for (size_t i = 0; i < s->n_backend_pr_fence; i++) {
		snprintf(key, sizeof(key), "0x%016llx", (unsigned long long)s->backend_pr_fence[i]);
		if (json_object_array_add(a, json_object_new_string(key))) {
			json_object_put(a);
			return false;
		}
	}
	if (json_object_object_add(doc, "backend_pr_fence", a)) {
		json_object_put(a);
		return false;
	}
	return true;
}

/*
 * The configuration held becomes that of epoch: the device groups' owners
 * of s in the document kept for ApplyConfig's comparison, in the running
 * configuration and in the SCSI layer's defaults (the explicit states just
 * set stay what hosts see); nothing is parsed or reloaded.
 */
static void placement_take(struct gw_ctl *ctl, const struct placement *p, uint64_t epoch)
{
	const Isergw__Ctl__SetAluaMap *s = p->s;
	struct gw_config *cfg;
	struct dg_ref *ix;
	bool ok = true;

	pthread_mutex_lock(&ctl->reload_lock);
	cfg = ctl->gw->cfg;
	ix = calloc(cfg->ndevice_groups ? cfg->ndevice_groups : 1, sizeof(*ix));
	for (size_t k = 0; ix && k < cfg->ndevice_groups; k++)
		ix[k] = (struct dg_ref){ ctl_dg_name(cfg->device_groups[k].name),
					 &cfg->device_groups[k] };
	if (ix)
		qsort(ix, cfg->ndevice_groups, sizeof(*ix), dg_ref_cmp);
	/* the keys were fenced, and the running configuration took them, before the states */
	if (!ix || (s->backend_pr_fence_set && !placement_doc_fence(ctl->config_doc, s)))
		ok = false;
	for (size_t i = 0; ix && i < s->n_device_groups; i++) {
		const Isergw__Ctl__DeviceGroupStates *g = s->device_groups[i];
		struct gw_device_group_cfg *d = dg_ref_find(ix, cfg->ndevice_groups, g->device_group);
		json_object *v = json_object_new_int((int32_t)g->owner_tpg_id);

		if (!v || json_object_object_add(p->dgs[i], "owner_tpg_id", v)) {
			json_object_put(v);
			ok = false;
		}
		if (!d)
			continue;
		d->owner_tpg_id = (uint16_t)g->owner_tpg_id;
		if (scsi_alua_dg_configure(d->name, d->owner_tpg_id, d->non_owner_state))
			ok = false;
	}
	pthread_mutex_unlock(&ctl->reload_lock);
	free(ix);
	if (!ok) {
		/* the next ApplyConfig of this epoch then reloads, as any other would */
		GW_WARN(COMP, "epoch %llu: the device groups' owners not all kept: the configuration "
			"stays that of epoch %llu", (unsigned long long)epoch,
			(unsigned long long)ctl->config_epoch);
		return;
	}
	GW_NOTICE(COMP, "epoch %llu: the configuration of epoch %llu with the map's device group "
		  "owners (no reload)", (unsigned long long)epoch,
		  (unsigned long long)ctl->config_epoch);
	ctl->config_epoch = epoch;
}

/*
 * The epochs of the ALUA kind (docs/control.md), shared by SetAluaStates and
 * SetAluaMap; m is the normalised request, consumed. place: a placement-only
 * SetAluaMap whose owners its epoch takes once applied (NULL: none).
 */
static void alua_request(struct ctl_client *c, const CtlRequest *req, uint64_t epoch,
			 struct alua_map *m, const struct placement *place)
{
	struct gw_ctl *ctl = c->ctl;
	char why[200], line[1024];
	int rc;

	qsort(m->dg, m->n, sizeof(m->dg[0]), cmp_set);
	if (epoch < ctl->epoch) {
		snprintf(why, sizeof(why), "epoch %llu is older than the current epoch %llu",
			 (unsigned long long)epoch, (unsigned long long)ctl->epoch);
		ctl_reply_refused(c, req, -ESTALE, why);
		goto out;
	}
	if (epoch == ctl->alua_epoch) {
		if (!alua_map_equal(m, &ctl->alua_last)) {
			snprintf(why, sizeof(why), "epoch %llu was already used for different ALUA "
				 "states", (unsigned long long)epoch);
			ctl_reply_refused(c, req, -EEXIST, why);
			goto out;
		}
		alua_reply(c, m, false);
		goto out;
	}
	/* the lost nodes fenced at the backend before anyone may serve their groups */
	rc = place ? placement_fence(ctl, place->s, why, sizeof(why)) : 0;
	if (!rc)
		rc = alua_apply(m, m->transition_ms > 0, why, sizeof(why));
	if (rc) {
		ctl_reply_refused(c, req, rc, why);
		goto out;
	}
	transition_cancel(ctl, epoch);
	ctl->epoch = epoch;
	ctl->alua_epoch = epoch;
	alua_map_line(m, line, sizeof(line));
	GW_NOTICE(COMP, "%s: ALUA epoch %llu%s%s%s:%s%s", c->name, (unsigned long long)epoch,
		  !m->map && m->dg[0].dg[0] ? " device group " : "", m->map ? "" : m->dg[0].dg,
		  m->map ? " map" : "", line,
		  m->transition_ms ? m->map ? " (the groups that change transition first)"
					    : " (transitioning first)" : "");
	if (place)
		placement_take(ctl, place, epoch);
	if (m->transition_ms && alua_map_dup(&ctl->transition_final, m) == 0) {
		ctl->transition_client = c;
		c->busy = true;
		reactor_timer_arm(ctl->r, &ctl->transition_timer, m->transition_ms);
	} else if (m->transition_ms) {
		/* no memory to remember the final states: set them now */
		GW_WARN(COMP, "ALUA epoch %llu: out of memory: the final states are set at once",
			(unsigned long long)epoch);
		(void)alua_apply(m, false, why, sizeof(why));
		alua_reply(c, m, false);
	} else {
		alua_reply(c, m, false);
	}
	alua_map_free(&ctl->alua_last);
	ctl->alua_last = *m;
	return;
out:
	alua_map_free(m);
}

void ctl_op_set_alua(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__SetAluaStates *s = req->set_alua_states;
	struct alua_map m;

	if (alua_map_alloc(&m, 1)) {
		ctl_reply_refused(c, req, -ENOMEM, "out of memory");
		return;
	}
	alua_set_fill(&m.dg[0], s->device_group, s->groups, s->n_groups);
	m.transition_ms = s->transition_ms;
	alua_request(c, req, s->epoch, &m, NULL);
}

void ctl_op_set_alua_map(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__SetAluaMap *s = req->set_alua_map;
	struct placement p = { .s = s };
	struct alua_map m;
	char why[200];
	int rc;

	rc = placement_check(c->ctl, &p, why, sizeof(why));
	if (rc) {
		ctl_reply_refused(c, req, rc, why);
		return;
	}
	if (alua_map_alloc(&m, s->n_device_groups)) {
		free(p.dgs);
		ctl_reply_refused(c, req, -ENOMEM, "out of memory");
		return;
	}
	for (size_t i = 0; i < s->n_device_groups; i++)
		alua_set_fill(&m.dg[i], s->device_groups[i]->device_group, s->device_groups[i]->groups,
			      s->device_groups[i]->n_groups);
	m.transition_ms = s->transition_ms;
	m.map = true;
	alua_request(c, req, s->epoch, &m, p.dgs ? &p : NULL);
	free(p.dgs);
}

void ctl_op_get_alua(struct ctl_client *c, const CtlRequest *req)
{
	const char *dg = req->get_alua_states->device_group;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	struct arena a = { 0 };
	char why[160];

	/* as for SetAluaStates: a device group of the configuration, or the default one */
	if (dg[0] && scsi_alua_get_states(dg, NULL, 0, NULL) == -ENOENT) {
		snprintf(why, sizeof(why), "device group '%s' does not exist", dg);
		ctl_reply_refused(c, req, -ENOENT, why);
		return;
	}
	rep.alua = alua_states_build(c->ctl, &a, dg);
	if (rep.alua && !a.failed) {
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_ALUA;
	} else {
		rep.alua = NULL;
		rep.status = -ENOMEM;
		rep.error = ctl_str("out of memory");
	}
	ctl_client_send(c, &rep);
	ctl_arena_free(&a);
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
	unsigned int delivered;

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
	ev.kind_case = ISERGW__CTL__EVENT__KIND_ALUA_CHANGE_REQUEST;
	ev.alua_change_request = &a;
	delivered = ctl_publish(ctl, &ev);
	if (delivered) {
		GW_INFO(COMP, "ALUA request %llu (device group %s) sent to %u subscriber(s) as event "
			"%llu", (unsigned long long)r->id, r->dg, delivered,
			(unsigned long long)ev.seq);
	} else {
		GW_WARN(COMP, "ALUA request %llu (device group %s): no subscriber took it",
			(unsigned long long)r->id, r->dg);
		(void)scsi_alua_request_done(r->id, -ENOTCONN);
	}
	ctl_event_done(ctl, m);
}

/* On the command's reactor, under the SCSI layer's ALUA lock: copy and go (arg: the gw_ctl). */
int ctl_alua_request(const struct scsi_alua_request *req, void *arg)
{
	struct alua_event_msg *m;
	int rc;

	m = ctl_event_new(arg, sizeof(*m), &rc);
	if (!m)
		return rc;
	*m = (struct alua_event_msg){ .ctl = arg, .req = *req };
	return ctl_post(arg, alua_event_run, m);
}
