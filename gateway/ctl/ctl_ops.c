/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Control operations answered at once on the control thread: GetStatus,
 * ApplyConfig and ChangeLun (with their epochs), Subscribe.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_priv.h"
#include "common/log.h"

/* ------------------------------------------------------------ requests */

#define LUN_FAULTS_MAX 1024u

/* The LUNs that serve and the ones that do not (why); caller holds sess_lock. */
static void lun_faults(struct gw *gw, Isergw__Ctl__StatusInfo *si, struct arena *a)
{
	for (size_t i = 0; i < gw->ntargets; i++) {
		const struct gw_target *t = gw->targets[i];

		for (size_t k = 0; !t->removed && k < t->cfg->nluns; k++) {
			const struct gw_lun_cfg *lc = &t->cfg->luns[k];
			Isergw__Ctl__LunFault *f;
			const char *state, *why;

			if (!gw_lun_fault(t, lc, &state, &why)) {
				si->luns_online++;
				continue;
			}
			si->lun_faults_total++;
			if (si->n_lun_faults == LUN_FAULTS_MAX)
				continue;
			if (!si->lun_faults)
				si->lun_faults = ctl_arena_alloc(a, LUN_FAULTS_MAX * sizeof(*si->lun_faults));
			f = ctl_arena_alloc(a, sizeof(*f));
			if (!si->lun_faults || !f)
				continue;
			isergw__ctl__lun_fault__init(f);
			f->target = ctl_arena_strdup(a, t->cfg->iqn);
			f->lun = lc->lun;
			f->device_group = ctl_arena_strdup(a, lc->device_group);
			f->state = ctl_str(state);
			f->reason = ctl_arena_strdup(a, why);
			si->lun_faults[si->n_lun_faults++] = f;
		}
	}
}

void ctl_op_get_status(struct ctl_client *c)
{
	struct gw_ctl *ctl = c->ctl;
	struct gw *gw = ctl->gw;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__StatusInfo si = ISERGW__CTL__STATUS_INFO__INIT;
	struct arena a = { 0 };
	const char *lease_state;

	si.version = ctl_str(ISERGW_VERSION);
	si.pid = (uint32_t)getpid();
	si.epoch = ctl->epoch;
	si.config_epoch = ctl->config_epoch;
	si.alua_epoch = ctl->alua_epoch;
	si.uptime_ms = gw_now_ms() - ctl->start_ms;
	si.start_time_ms = ctl->start_unix_ms;
	si.sessions = (uint32_t)atomic_load(&gw->stats.sessions);
	si.connections = (uint32_t)atomic_load(&gw->stats.connections);
	si.connections_refused = gw_login_slots_refused(&gw->login_slots);
	si.reactors = gw->nreactors;
	ctl_lease_status(&lease_state, &si.lease_remaining_ms, NULL);
	si.lease_state = ctl_str(lease_state);
	pthread_mutex_lock(&gw->sess_lock);
	si.targets = (uint32_t)gw->ntargets;
	si.portals = (uint32_t)gw->nportals;
	si.portal_states = ctl_arena_alloc(&a, gw->nportals * sizeof(*si.portal_states));
	for (size_t i = 0; si.portal_states && i < gw->nportals; i++) {
		const struct gw_portal *p = gw->portals[i];
		Isergw__Ctl__PortalStatus *ps = ctl_arena_alloc(&a, sizeof(*ps));
		int state = atomic_load(&p->state), err = atomic_load(&p->last_error);
		char url[128];

		if (!ps)
			break;
		isergw__ctl__portal_status__init(ps);
		snprintf(url, sizeof(url), "%s://%s%s%s:%u",
			 p->cfg->transport == GW_TRANSPORT_ISER ? "iser" : "tcp",
			 strchr(p->cfg->addr, ':') ? "[" : "", p->cfg->addr,
			 strchr(p->cfg->addr, ':') ? "]" : "", p->cfg->port);
		ps->url = ctl_arena_strdup(&a, url);
		ps->rel_port_id = p->cfg->rel_port_id;
		ps->tpg_id = p->cfg->tpg_id;
		ps->tpgt = p->cfg->tpgt ? p->cfg->tpgt : p->cfg->rel_port_id;
		ps->state = ctl_str(gw_portal_state_name(state));
		ps->error = state == GW_PORTAL_LISTENING || !err ? ctl_str("") :
			    ctl_arena_strdup(&a, strerror(-err));
		si.portal_states[si.n_portal_states++] = ps;
	}
	lun_faults(gw, &si, &a);
	pthread_mutex_unlock(&gw->sess_lock);
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_STATUS_INFO;
	rep.status_info = &si;
	ctl_client_send(c, &rep);
	ctl_arena_free(&a);
}

/* Answer an applied (or already applied) configuration: its epoch and what now serves. */
static void ctl_reply_apply(struct ctl_client *c, uint64_t epoch, bool changed)
{
	struct gw_ctl *ctl = c->ctl;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__ApplyResult res = ISERGW__CTL__APPLY_RESULT__INIT;

	res.epoch = epoch;
	res.changed = changed;
	pthread_mutex_lock(&ctl->gw->sess_lock);
	res.targets = (uint32_t)ctl->gw->ntargets;
	res.portals = (uint32_t)ctl->gw->nportals;
	pthread_mutex_unlock(&ctl->gw->sess_lock);
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_APPLY;
	rep.apply = &res;
	ctl_client_send(c, &rep);
}

void ctl_op_apply_config(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__ApplyConfig *a = req->apply_config;
	struct gw_ctl *ctl = c->ctl;
	enum json_tokener_error jerr = json_tokener_success;
	struct gw_config *cfg = NULL;
	json_object *doc;
	char why[600];
	int rc;

	if (a->epoch < ctl->epoch) {
		snprintf(why, sizeof(why), "epoch %llu is older than the current epoch %llu",
			 (unsigned long long)a->epoch, (unsigned long long)ctl->epoch);
		ctl_reply_refused(c, req, -ESTALE, why);
		return;
	}
	doc = json_tokener_parse_verbose(a->config_json, &jerr);
	if (!doc) {
		snprintf(why, sizeof(why), "configuration: not a JSON document: %s",
			 json_tokener_error_desc(jerr));
		ctl_reply_refused(c, req, -EINVAL, why);
		return;
	}
	if (a->epoch == ctl->config_epoch) {
		bool same = json_object_equal(doc, ctl->config_doc);

		json_object_put(doc);
		if (!same) {
			snprintf(why, sizeof(why), "epoch %llu was already applied with a different "
				 "configuration", (unsigned long long)a->epoch);
			ctl_reply_refused(c, req, -EEXIST, why);
			return;
		}
		GW_INFO(COMP, "%s: configuration of epoch %llu already applied", c->name,
			(unsigned long long)a->epoch);
		ctl_reply_apply(c, a->epoch, false);
		return;
	}
	why[0] = '\0';
	rc = ctl->load(ctl->load_arg, a->config_json, &cfg, why, sizeof(why));
	if (rc) {
		json_object_put(doc);
		if (!why[0])
			snprintf(why, sizeof(why), "configuration: %s", strerror(-rc));
		ctl_reply_refused(c, req, rc, why);
		return;
	}
	GW_NOTICE(COMP, "%s: applying the configuration of epoch %llu", c->name,
		  (unsigned long long)a->epoch);
	rc = gw_ctl_reload(ctl, ctl->gw, cfg);
	if (rc) {
		json_object_put(doc);
		snprintf(why, sizeof(why), "reload failed: %s", strerror(-rc));
		ctl_reply_refused(c, req, rc, why);
		return;
	}
	json_object_put(ctl->config_doc);
	ctl->config_doc = doc;
	ctl->config_epoch = a->epoch;
	ctl->epoch = a->epoch;
	ctl_reply_apply(c, a->epoch, true);
}

/* ---- ReloadConfig: the configuration file again, answered once applied or refused */

void ctl_op_reload_config(struct ctl_client *c, const CtlRequest *req)
{
	struct gw_ctl *ctl = c->ctl;
	char why[640];
	int rc;

	GW_NOTICE(COMP, "%s: reload of the configuration file requested", c->name);
	rc = gw_ctl_reload_file(ctl, why, sizeof(why));
	if (rc) {
		/* logged once by gw_ctl_reload_file: the answer only */
		ctl_reply_err(c, rc, why);
		return;
	}
	ctl_reply_apply(c, ctl->config_epoch, true);
}

/* ---- ChangeLun: one LUN added or removed without a reload */

/* Target iqn's index in the configuration document (-1: none), and its "luns" array (or NULL). */
static int doc_target(json_object *doc, const char *iqn, json_object **target, json_object **luns)
{
	json_object *targets, *t, *v;

	*target = *luns = NULL;
	if (!json_object_object_get_ex(doc, "targets", &targets) ||
	    !json_object_is_type(targets, json_type_array))
		return -1;
	for (size_t i = 0; i < json_object_array_length(targets); i++) {
		t = json_object_array_get_idx(targets, i);
		if (!json_object_object_get_ex(t, "iqn", &v) || !json_object_is_type(v, json_type_string) ||
		    strcmp(json_object_get_string(v), iqn))
			continue;
		*target = t;
		if (json_object_object_get_ex(t, "luns", &v) && json_object_is_type(v, json_type_array))
			*luns = v;
		return (int)i;
	}
	return -1;
}

/*
 * The index of LUN number lun in luns (-1: none); -2 when a LUN has no "lun"
 * (its number is its index: removing one before it would renumber it).
 */
static int doc_lun(json_object *luns, uint32_t lun)
{
	json_object *v;
	int found = -1;

	for (size_t i = 0; luns && i < json_object_array_length(luns); i++) {
		if (!json_object_object_get_ex(json_object_array_get_idx(luns, i), "lun", &v))
			return -2;
		if (json_object_get_int64(v) == (int64_t)lun)
			found = (int)i;
	}
	return found;
}

static bool dg_known(const struct gw_config *cfg, const char *name)
{
	if (!name[0] || !strcmp(name, "default"))
		return true;
	for (size_t i = 0; i < cfg->ndevice_groups; i++)
		if (!strcmp(cfg->device_groups[i].name, name))
			return true;
	return false;
}

static int change_lun(struct gw_ctl *ctl, const Isergw__Ctl__ChangeLun *cl, bool *changed,
		      char *why, size_t len)
{
	enum json_tokener_error jerr = json_tokener_success;
	json_object *target, *luns, *obj = NULL, *v;
	struct gw_lun_cfg lc;
	char store[512];
	bool add = cl->lun_json[0] != '\0';
	int ti, li, rc;

	*changed = false;
	ti = doc_target(ctl->config_doc, cl->target, &target, &luns);
	if (ti < 0) {
		snprintf(why, len, "no target %s in the configuration", cl->target);
		return -ENOENT;
	}
	/*
	 * An add needs no walk over the LUNs: the gateway knows whether the
	 * number is taken (its LU table), and the new LUN goes last. Only a
	 * number in use (is it this epoch's own add?) and a removal look.
	 */
	li = add && !gw_lun_exists(ctl->gw, cl->target, cl->lun) ? -1 : doc_lun(luns, cl->lun);
	if (li == -2) {
		snprintf(why, len, "targets[%d].luns: a LUN without \"lun\" (numbered by its place): "
			 "apply the whole configuration instead", ti);
		return -EOPNOTSUPP;
	}
	if (!add) {
		if (li < 0 && cl->epoch == ctl->config_epoch)
			return 0; /* this epoch removed it already */
		if (li < 0) {
			snprintf(why, len, "no LUN %u in target %s", cl->lun, cl->target);
			return -ENOENT;
		}
		pthread_mutex_lock(&ctl->reload_lock);
		rc = gw_lun_remove(ctl->gw, cl->target, cl->lun);
		pthread_mutex_unlock(&ctl->reload_lock);
		if (rc && rc != -ENOENT) {
			snprintf(why, len, "LUN %u of %s not removed: %s", cl->lun, cl->target,
				 strerror(-rc));
			return rc;
		}
		json_object_array_del_idx(luns, (size_t)li, 1);
		*changed = true;
		return 0;
	}
	obj = json_tokener_parse_verbose(cl->lun_json, &jerr);
	if (!obj || !json_object_is_type(obj, json_type_object)) {
		snprintf(why, len, "targets[%d].luns: the LUN is not a JSON object%s%s", ti,
			 obj ? "" : ": ", obj ? "" : json_tokener_error_desc(jerr));
		json_object_put(obj);
		return -EINVAL;
	}
	if (li >= 0) {
		bool same = json_object_equal(obj, json_object_array_get_idx(luns, (size_t)li));

		json_object_put(obj);
		if (same && cl->epoch == ctl->config_epoch)
			return 0; /* this epoch added it already */
		snprintf(why, len, "targets[%d].luns[%d].lun: %u already used", ti, li, cl->lun);
		return -EEXIST;
	}
	li = luns ? (int)json_object_array_length(luns) : 0;
	if (!json_object_object_get_ex(obj, "lun", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) != (int64_t)cl->lun) {
		snprintf(why, len, "targets[%d].luns[%d].lun: must be %u", ti, li, cl->lun);
		rc = -EINVAL;
		goto out;
	}
	rc = gw_lun_parse(obj, cl->target, (size_t)ti, (size_t)li, &lc, why, len);
	if (rc)
		goto out;
	pthread_mutex_lock(&ctl->reload_lock);
	if (!dg_known(ctl->gw->cfg, lc.device_group)) {
		pthread_mutex_unlock(&ctl->reload_lock);
		snprintf(why, len, "targets[%d].luns[%d].device_group: \"%s\" is not in device_groups",
			 ti, li, lc.device_group);
		rc = -EINVAL;
		goto out;
	}
	ctl_open_deadline_begin();
	rc = gw_lun_add(ctl->gw, cl->target, &lc, store, sizeof(store));
	ctl_open_deadline_end();
	pthread_mutex_unlock(&ctl->reload_lock);
	if (rc == -EADDRINUSE) {
		snprintf(why, len, "targets[%d].luns[%d].path: %s", ti, li, store);
		goto out;
	}
	if (rc) {
		snprintf(why, len, "targets[%d].luns[%d]: LUN %u of %s not added: %s", ti, li, cl->lun,
			 cl->target, strerror(-rc));
		goto out;
	}
	if (!luns) {
		luns = json_object_new_array();
		if (!luns || json_object_object_add(target, "luns", luns)) {
			json_object_put(luns);
			snprintf(why, len, "out of memory");
			rc = -ENOMEM;
			goto out;
		}
	}
	if (json_object_array_add(luns, obj)) {
		snprintf(why, len, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	*changed = true;
	return 0;
out:
	json_object_put(obj);
	return rc;
}

void ctl_op_change_lun(struct ctl_client *c, const CtlRequest *req)
{
	const Isergw__Ctl__ChangeLun *cl = req->change_lun;
	struct gw_ctl *ctl = c->ctl;
	bool changed;
	char why[600] = "";
	int rc;

	if (!cl->epoch) {
		ctl_reply_refused(c, req, -EINVAL, "epoch: must be at least 1");
		return;
	}
	if (cl->epoch < ctl->epoch || (cl->epoch == ctl->epoch && cl->epoch != ctl->config_epoch)) {
		snprintf(why, sizeof(why), "epoch %llu is older than the current epoch %llu",
			 (unsigned long long)cl->epoch, (unsigned long long)ctl->epoch);
		ctl_reply_refused(c, req, -ESTALE, why);
		return;
	}
	if (!ctl->config_doc) {
		ctl_reply_refused(c, req, -ENOENT, "no configuration was applied yet (ApplyConfig)");
		return;
	}
	rc = change_lun(ctl, cl, &changed, why, sizeof(why));
	if (rc) {
		ctl_reply_refused(c, req, rc, why);
		return;
	}
	if (changed)
		GW_NOTICE(COMP, "%s: epoch %llu: LUN %u of %s %s", c->name,
			  (unsigned long long)cl->epoch, cl->lun, cl->target,
			  cl->lun_json[0] ? "added" : "removed");
	ctl->config_epoch = cl->epoch;
	ctl->epoch = cl->epoch;
	ctl_reply_apply(c, cl->epoch, changed);
}

/* ---- events */

void ctl_op_subscribe(struct ctl_client *c)
{
	struct gw_ctl *ctl = c->ctl;
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__Subscribed sub = ISERGW__CTL__SUBSCRIBED__INIT;
	uint32_t timeout_ms;
	enum scsi_alua_policy pol = scsi_alua_get_policy(&timeout_ms);

	if (!c->subscribed) {
		c->subscribed = true;
		atomic_fetch_add(&ctl->nsubscribers, 1);
		GW_NOTICE(COMP, "%s: subscribed to events (ALUA policy %s)", c->name,
			  pol == SCSI_ALUA_POLICY_EXTERNAL ? "external" : "local");
	}
	sub.alua_policy = ctl_str(pol == SCSI_ALUA_POLICY_EXTERNAL ? "external" : "local");
	sub.alua_request_timeout_ms = timeout_ms;
	sub.subscribers = atomic_load(&ctl->nsubscribers);
	sub.map_fences = true;
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_SUBSCRIBED;
	rep.subscribed = &sub;
	ctl_client_send(c, &rep);
}
