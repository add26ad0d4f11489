/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl's ALUA commands over isergwd's control socket (docs/control.md):
 * alua show, alua set, alua map, the lease (show, renew, stepdown) and watch
 * (events, and the stand-in policy answering ALUA change requests).
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_wire.h"
#include "isergwctl.h"
#include "isergwctl_ctl.h"

/* "isergwctl: MESSAGE" and the hint on stderr; ISERGWCTL_EXIT_USAGE. */
#define usage_err(...) isergwctl_usage_err(NULL, __VA_ARGS__)

/* ------------------------------------------------------------ alua */

static void alua_states_json(json_object *o, const Isergw__Ctl__AluaStates *a)
{
	jset_u64(o, "epoch", a->epoch);
	jset_str(o, "device_group", a->device_group);
	json_object_object_add(o, "transition_pending",
			       json_object_new_boolean(a->transition_pending));
	json_object_object_add(o, "groups", isergwctl_alua_groups_json(a->groups, a->n_groups, true));
	if (a->lease_state[0])
		jset_str(o, "lease_state", a->lease_state);
}

static void alua_json(json_object *o, const struct isergwctl_shown *sh)
{
	alua_states_json(o, sh->rep->alua);
}

/* What every group reports instead of its state while the lease is not valid. */
static const char *lease_override_name(const char *lease_state)
{
	if (!lease_state[0] || strcmp(lease_state, "valid") == 0)
		return NULL;
	return strcmp(lease_state, "expired") == 0 ? "transitioning" : "unavailable";
}

static void alua_states_table(const Isergw__Ctl__AluaStates *a, bool head)
{
	const char *ov = lease_override_name(a->lease_state);

	if (head)
		printf("ALUA epoch %llu", (unsigned long long)a->epoch);
	printf("%s%s%s\n", head ? (a->device_group[0] ? ", device group " : "") : "device group ",
	       head ? a->device_group : (a->device_group[0] ? a->device_group : "default"),
	       a->transition_pending ? " (transition pending)" : "");
	if (ov)
		printf("ALUA lease %s: every group reports and enforces %s instead of the states "
		       "below\n", a->lease_state, ov);
	printf("%-6s %-14s %s\n", "TPG", "STATE", "PREF");
	for (size_t i = 0; i < a->n_groups; i++)
		printf("%-6u %-14s %s\n", a->groups[i]->tpg_id, ctl_alua_state_name(a->groups[i]->state),
		       a->groups[i]->pref ? "yes" : "no");
}

static void alua_table(const struct isergwctl_shown *sh)
{
	alua_states_table(sh->rep->alua, true);
}

static const struct isergwctl_ctl_view alua_view = {
	ISERGW__CTL__REPLY__PAYLOAD_ALUA, NULL, false, alua_json, alua_table,
};

int isergwctl_cmd_alua_show(struct isergwctl_ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dg", required_argument, NULL, 'd' },
		ISERGWCTL_OPT_JSON,
		ISERGWCTL_OPT_END,
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__GetAluaStates ga = ISERGW__CTL__GET_ALUA_STATES__INIT;
	int opt, rc;

	optind = 1;
	while ((opt = isergwctl_next_opt(x, argc, argv, opts)) != -1) {
		if (opt != 'd')
			return usage_err("%s", "alua show: bad option");
		ga.device_group = optarg;
	}
	if ((rc = isergwctl_no_more_args("alua show", argc, argv)))
		return rc;
	req.op_case = ISERGW__CTL__REQUEST__OP_GET_ALUA_STATES;
	req.get_alua_states = &ga;
	return isergwctl_run(x, &req, &alua_view, NULL, 0);
}

/* "TPG=STATE[,pref]" into g: 0, or the usage error's exit code. */
static int parse_group(const char *arg, Isergw__Ctl__AluaGroupState *g)
{
	char buf[64], *eq, *comma;
	int state;

	snprintf(buf, sizeof(buf), "%s", arg);
	eq = strchr(buf, '=');
	if (!eq)
		return usage_err("'%s' is not TPG=STATE[,pref]", arg);
	*eq = '\0';
	comma = strchr(eq + 1, ',');
	if (comma)
		*comma = '\0';
	isergw__ctl__alua_group_state__init(g);
	if (isergwctl_parse_u32(buf, 65535, &g->tpg_id) || g->tpg_id == 0)
		return usage_err("bad target port group id in '%s' (1..65535)", arg);
	if (ctl_alua_state_parse(eq + 1, &state))
		return usage_err("bad state in '%s' (ao, ano, standby, unavailable, offline, "
				 "transitioning)", arg);
	g->state = (Isergw__Ctl__AluaState)state;
	if (comma) {
		if (strcmp(comma + 1, "pref"))
			return usage_err("'%s': only ',pref' may follow the state", arg);
		g->pref = true;
	}
	return 0;
}

/* Without --epoch: the current epoch + 1. */
static int next_epoch(struct isergwctl_ctx *x, uint64_t *epoch)
{
	CtlReply *rep;
	int rc;

	if (*epoch)
		return 0;
	rc = isergwctl_get_status(x, &rep);
	if (rc)
		return rc;
	*epoch = rep->status_info->epoch + 1;
	ctl_reply_free(rep);
	return 0;
}

int isergwctl_cmd_alua_set(struct isergwctl_ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "epoch", required_argument, NULL, 'e' },
		{ "dg", required_argument, NULL, 'd' },
		{ "transition-ms", required_argument, NULL, 't' },
		ISERGWCTL_OPT_JSON,
		ISERGWCTL_OPT_END,
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__SetAluaStates sa = ISERGW__CTL__SET_ALUA_STATES__INIT;
	Isergw__Ctl__AluaGroupState gs[CTL_ALUA_MAX_GROUPS];
	Isergw__Ctl__AluaGroupState *gp[CTL_ALUA_MAX_GROUPS];
	uint64_t epoch = 0;
	int opt, rc;

	optind = 1;
	while ((opt = isergwctl_next_opt(x, argc, argv, opts)) != -1) {
		switch (opt) {
		case 'e':
			if ((rc = isergwctl_parse_epoch(optarg, &epoch)))
				return rc;
			break;
		case 'd':
			sa.device_group = optarg;
			break;
		case 't':
			if (isergwctl_parse_u32(optarg, CTL_TRANSITION_MAX_MS, &sa.transition_ms))
				return usage_err("--transition-ms wants 0..600000, not '%s'", optarg);
			break;
		default:
			return usage_err("%s", "alua set: bad option");
		}
	}
	if (optind == argc)
		return usage_err("%s", "alua set needs at least one TPG=STATE[,pref]");
	if (argc - optind > (int)CTL_ALUA_MAX_GROUPS)
		return usage_err("%s", "alua set: too many groups");
	for (int i = optind; i < argc; i++) {
		if ((rc = parse_group(argv[i], &gs[sa.n_groups])))
			return rc;
		gp[sa.n_groups] = &gs[sa.n_groups];
		sa.n_groups++;
	}
	sa.groups = gp;
	if ((rc = next_epoch(x, &epoch)))
		return rc;
	sa.epoch = epoch;
	req.op_case = ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES;
	req.set_alua_states = &sa;
	return isergwctl_run(x, &req, &alua_view, NULL, (int)sa.transition_ms);
}

/* ------------------------------------------------------------ alua map */

static void alua_map_json(json_object *o, const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__AluaMap *m = sh->rep->alua_map;
	json_object *arr = json_object_new_array();

	jset_u64(o, "epoch", m->epoch);
	for (size_t i = 0; i < m->n_device_groups; i++) {
		json_object *d = json_object_new_object();

		alua_states_json(d, m->device_groups[i]);
		json_object_array_add(arr, d);
	}
	json_object_object_add(o, "device_groups", arr);
}

static void alua_map_table(const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__AluaMap *m = sh->rep->alua_map;

	printf("ALUA epoch %llu, %zu device group(s)\n", (unsigned long long)m->epoch,
	       m->n_device_groups);
	for (size_t i = 0; i < m->n_device_groups; i++) {
		printf("\n");
		alua_states_table(m->device_groups[i], false);
	}
}

static const struct isergwctl_ctl_view alua_map_view = {
	ISERGW__CTL__REPLY__PAYLOAD_ALUA_MAP, "alua map", false, alua_map_json, alua_map_table,
};

/* The request being built by cmd_alua_map (freed by alua_map_free). */
struct map_req {
	Isergw__Ctl__SetAluaMap m;
	Isergw__Ctl__DeviceGroupStates *d;      /* CTL_ALUA_MAP_MAX_DG */
	Isergw__Ctl__DeviceGroupStates **dp;
	Isergw__Ctl__AluaGroupState (*g)[CTL_ALUA_MAX_GROUPS];
	Isergw__Ctl__AluaGroupState *(*gp)[CTL_ALUA_MAX_GROUPS];
};

static void map_req_free(struct map_req *r)
{
	free(r->d);
	free(r->dp);
	free(r->g);
	free(r->gp);
}

/*
 * alua map [--epoch N] [--transition-ms MS] [--json] --dg NAME TPG=STATE[,pref]...
 * [--dg NAME ...]: options and device groups in any order; the groups follow
 * their --dg (those before the first --dg are the default device group's).
 */
int isergwctl_cmd_alua_map(struct isergwctl_ctx *x, int argc, char **argv)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	struct map_req r = { .m = ISERGW__CTL__SET_ALUA_MAP__INIT };
	Isergw__Ctl__DeviceGroupStates *cur = NULL;
	uint64_t epoch = 0;
	int rc = 0;

	r.d = calloc(CTL_ALUA_MAP_MAX_DG, sizeof(*r.d));
	r.dp = calloc(CTL_ALUA_MAP_MAX_DG, sizeof(*r.dp));
	r.g = calloc(CTL_ALUA_MAP_MAX_DG, sizeof(*r.g));
	r.gp = calloc(CTL_ALUA_MAP_MAX_DG, sizeof(*r.gp));
	if (!r.d || !r.dp || !r.g || !r.gp) {
		map_req_free(&r);
		fprintf(stderr, "isergwctl: out of memory\n");
		return ISERGWCTL_EXIT_USAGE;
	}
	r.m.device_groups = r.dp;
	for (int i = 1; i < argc && !rc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--json") == 0) {
			x->json = true;
		} else if (strcmp(a, "--epoch") == 0 && val) {
			rc = isergwctl_parse_epoch(val, &epoch);
			i++;
		} else if (strcmp(a, "--transition-ms") == 0 && val) {
			if (isergwctl_parse_u32(val, CTL_TRANSITION_MAX_MS, &r.m.transition_ms))
				rc = usage_err("--transition-ms wants 0..600000, not '%s'", val);
			i++;
		} else if (strcmp(a, "--dg") == 0 && val) {
			if (r.m.n_device_groups >= CTL_ALUA_MAP_MAX_DG) {
				rc = usage_err("alua map: at most %u device groups", CTL_ALUA_MAP_MAX_DG);
				break;
			}
			cur = &r.d[r.m.n_device_groups];
			isergw__ctl__device_group_states__init(cur);
			cur->device_group = (char *)(uintptr_t)val;
			cur->groups = r.gp[r.m.n_device_groups];
			r.dp[r.m.n_device_groups++] = cur;
			i++;
		} else if (a[0] == '-' && a[1] == '-') {
			rc = usage_err("alua map: bad option '%s'%s", a, val ? "" : " (or its value missing)");
		} else {
			size_t k = cur ? (size_t)(cur - r.d) : 0;

			if (!cur) {
				/* the default device group until the first --dg */
				cur = &r.d[0];
				isergw__ctl__device_group_states__init(cur);
				cur->groups = r.gp[0];
				r.dp[r.m.n_device_groups++] = cur;
			}
			if (cur->n_groups >= CTL_ALUA_MAX_GROUPS) {
				rc = usage_err("alua map: at most %u groups per device group",
					       CTL_ALUA_MAX_GROUPS);
				break;
			}
			rc = parse_group(a, &r.g[k][cur->n_groups]);
			if (!rc) {
				r.gp[k][cur->n_groups] = &r.g[k][cur->n_groups];
				cur->n_groups++;
			}
		}
	}
	if (!rc && r.m.n_device_groups == 0)
		rc = usage_err("%s", "alua map needs --dg NAME TPG=STATE[,pref] ...");
	for (size_t i = 0; !rc && i < r.m.n_device_groups; i++)
		if (r.d[i].n_groups == 0)
			rc = usage_err("alua map: device group '%s' without TPG=STATE",
				       r.d[i].device_group[0] ? r.d[i].device_group : "default");
	if (!rc)
		rc = next_epoch(x, &epoch);
	if (!rc) {
		r.m.epoch = epoch;
		req.op_case = ISERGW__CTL__REQUEST__OP_SET_ALUA_MAP;
		req.set_alua_map = &r.m;
		rc = isergwctl_run(x, &req, &alua_map_view, NULL, (int)r.m.transition_ms);
	}
	map_req_free(&r);
	return rc;
}

/* ------------------------------------------------------------ lease */

static void lease_json(json_object *o, const struct isergwctl_shown *sh)
{
	isergwctl_pb_json_add(o, &sh->rep->lease->base, NULL);
}

static void lease_table(const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__LeaseInfo *l = sh->rep->lease;

	if (strcmp(l->state, "valid") == 0)
		printf("ALUA lease valid, %u ms left (until %llu ms on the monotonic clock)\n",
		       l->remaining_ms, (unsigned long long)l->expires_mono_ms);
	else
		printf("ALUA lease %s: every target port group %s\n", l->state,
		       strcmp(l->state, "expired") == 0 ? "Transitioning" : "Unavailable");
}

static const struct isergwctl_ctl_view lease_view = {
	ISERGW__CTL__REPLY__PAYLOAD_LEASE, "lease", false, lease_json, lease_table,
};

int isergwctl_cmd_lease(struct isergwctl_ctx *x, int argc, char **argv)
{
	static const struct option renew_opts[] = {
		{ "ms", required_argument, NULL, 'm' },
		{ "at", required_argument, NULL, 'a' },
		ISERGWCTL_OPT_JSON,
		ISERGWCTL_OPT_END,
	};
	static const struct option down_opts[] = {
		{ "reason", required_argument, NULL, 'r' },
		ISERGWCTL_OPT_JSON,
		ISERGWCTL_OPT_END,
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__RenewLease rl = ISERGW__CTL__RENEW_LEASE__INIT;
	Isergw__Ctl__StepDown sd = ISERGW__CTL__STEP_DOWN__INIT;
	const char *sub = "show";
	int opt, rc;

	/* "lease" alone is "lease show" */
	if (argc > 1 && argv[1][0] != '-') {
		sub = argv[1];
		argc--;
		argv++;
	}
	if (strcmp(sub, "show") == 0) {
		if ((rc = isergwctl_json_only_args(x, "lease show", argc, argv)))
			return rc;
		return isergwctl_run_plain(x, ISERGW__CTL__REQUEST__OP_GET_LEASE, &lease_view);
	}
	optind = 1;
	if (strcmp(sub, "renew") == 0) {
		uint32_t ms = 0;
		uint64_t at = 0;

		while ((opt = isergwctl_next_opt(x, argc, argv, renew_opts)) != -1) {
			if (opt == 'a') {
				if (isergwctl_parse_u64(optarg, &at) || at == 0)
					return usage_err("lease renew: --at wants a time >= 1 (ms)");
				continue;
			}
			if (opt != 'm' || isergwctl_parse_u32(optarg, CTL_LEASE_AHEAD_MAX_MS, &ms) ||
			    ms == 0)
				return usage_err("lease renew: --ms wants 1..%u", CTL_LEASE_AHEAD_MAX_MS);
		}
		if ((rc = isergwctl_no_more_args("lease renew", argc, argv)))
			return rc;
		if (!ms == !at)
			return usage_err("%s", "lease renew needs --ms N or --at MS");
		/* isergwd and isergwctl share the machine's monotonic clock */
		rl.expires_mono_ms = at ? at : (uint64_t)isergwctl_now_ms() + ms;
		req.op_case = ISERGW__CTL__REQUEST__OP_RENEW_LEASE;
		req.renew_lease = &rl;
		return isergwctl_run(x, &req, &lease_view, NULL, 0);
	}
	if (strcmp(sub, "stepdown") == 0) {
		while ((opt = isergwctl_next_opt(x, argc, argv, down_opts)) != -1) {
			if (opt != 'r')
				return usage_err("%s", "lease stepdown: bad option");
			if (strlen(optarg) > CTL_REASON_MAX)
				return usage_err("--reason: at most %u bytes", CTL_REASON_MAX);
			sd.reason = optarg;
		}
		if ((rc = isergwctl_no_more_args("lease stepdown", argc, argv)))
			return rc;
		req.op_case = ISERGW__CTL__REQUEST__OP_STEP_DOWN;
		req.step_down = &sd;
		return isergwctl_run(x, &req, &lease_view, NULL, 0);
	}
	return usage_err("lease: unknown subcommand '%s' (show, renew, stepdown)", sub);
}

/* ------------------------------------------------------------ watch */

static int answer_request(struct isergwctl_ctx *ax, uint64_t id, int status, const char *reason)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__AluaRequestDone d = ISERGW__CTL__ALUA_REQUEST_DONE__INIT;
	CtlReply *rep;
	int rc;

	d.request_id = id;
	d.status = status;
	d.reason = ctl_str(reason);
	req.op_case = ISERGW__CTL__REQUEST__OP_ALUA_REQUEST_DONE;
	req.alua_request_done = &d;
	rc = isergwctl_call_any(ax, &req, &rep, 0);
	if (rc)
		return rc;
	if (rep->status)
		fprintf(stderr, "isergwctl: request %llu: answer refused: %s\n",
			(unsigned long long)id, rep->error);
	rc = rep->status ? ISERGWCTL_EXIT_REFUSED : 0;
	ctl_reply_free(rep);
	return rc;
}

/*
 * The stand-in policy of --apply: the states the command asked for, the
 * groups' PREF kept, as the next epoch (retried when another writer took
 * that epoch first); -EAGAIN to the daemon when they cannot be set.
 */
static int apply_request(struct isergwctl_ctx *ax, const Isergw__Ctl__AluaChangeRequest *a)
{
	Isergw__Ctl__AluaGroupState gs[CTL_ALUA_MAX_GROUPS];
	Isergw__Ctl__AluaGroupState *gp[CTL_ALUA_MAX_GROUPS];
	char why[320] = "";
	int rc = 0;

	for (int attempt = 0; attempt < 5; attempt++) {
		CtlRequest req = ISERGW__CTL__REQUEST__INIT;
		Isergw__Ctl__GetStatus st = ISERGW__CTL__GET_STATUS__INIT;
		Isergw__Ctl__GetAluaStates ga = ISERGW__CTL__GET_ALUA_STATES__INIT;
		Isergw__Ctl__SetAluaStates sa = ISERGW__CTL__SET_ALUA_STATES__INIT;
		CtlReply *cur = NULL, *rep = NULL;
		uint64_t epoch;

		req.op_case = ISERGW__CTL__REQUEST__OP_GET_STATUS;
		req.get_status = &st;
		if ((rc = isergwctl_call_any(ax, &req, &rep, 0)))
			return rc;
		epoch = rep->status_info ? rep->status_info->epoch + 1 : 1;
		ctl_reply_free(rep);
		ga.device_group = a->device_group;
		req.op_case = ISERGW__CTL__REQUEST__OP_GET_ALUA_STATES;
		req.get_alua_states = &ga;
		if ((rc = isergwctl_call_any(ax, &req, &cur, 0)))
			return rc;
		for (size_t i = 0; i < a->n_groups; i++) {
			isergw__ctl__alua_group_state__init(&gs[i]);
			gs[i].tpg_id = a->groups[i]->tpg_id;
			gs[i].state = a->groups[i]->state;
			for (size_t k = 0; cur->alua && k < cur->alua->n_groups; k++)
				if (cur->alua->groups[k]->tpg_id == gs[i].tpg_id)
					gs[i].pref = cur->alua->groups[k]->pref;
			gp[i] = &gs[i];
		}
		ctl_reply_free(cur);
		sa.epoch = epoch;
		sa.device_group = a->device_group;
		sa.groups = gp;
		sa.n_groups = a->n_groups;
		req.op_case = ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES;
		req.set_alua_states = &sa;
		if ((rc = isergwctl_call_any(ax, &req, &rep, 0)))
			return rc;
		rc = rep->status;
		snprintf(why, sizeof(why), "%s", rep->error);
		ctl_reply_free(rep);
		if (rc == 0) {
			/* the states match: the daemon completes the command by itself */
			fprintf(stderr, "isergwctl: request %llu applied as epoch %llu\n",
				(unsigned long long)a->request_id, (unsigned long long)epoch);
			return 0;
		}
		if (rc != -ESTALE && rc != -EEXIST)
			break;
	}
	fprintf(stderr, "isergwctl: request %llu: states not set: %s\n",
		(unsigned long long)a->request_id, why);
	snprintf(why, sizeof(why), "isergwctl watch --apply: states not set");
	return answer_request(ax, a->request_id, -EAGAIN, why);
}

static void print_event(struct isergwctl_ctx *x, const Isergw__Ctl__Event *e)
{
	const Isergw__Ctl__AluaChangeRequest *a = e->alua_change_request;

	if (e->kind_case != ISERGW__CTL__EVENT__KIND_ALUA_CHANGE_REQUEST) {
		if (x->json) {
			json_object *o = json_object_new_object();

			jset_u64(o, "seq", e->seq);
			jset_u64(o, "dropped", e->dropped);
			jset_str(o, "event", "unknown");
			printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
			json_object_put(o);
		} else {
			printf("event %llu: of a kind this isergwctl does not know\n",
			       (unsigned long long)e->seq);
		}
		return;
	}
	if (x->json) {
		json_object *o = json_object_new_object();

		jset_u64(o, "seq", e->seq);
		jset_u64(o, "dropped", e->dropped);
		jset_str(o, "event", "alua_change_request");
		jset_u64(o, "request_id", a->request_id);
		jset_str(o, "device_group", a->device_group);
		json_object_object_add(o, "groups",
				       isergwctl_alua_groups_json(a->groups, a->n_groups, false));
		jset_str(o, "initiator_port", a->initiator_port);
		jset_u64(o, "rel_port_id", a->rel_port_id);
		jset_u64(o, "tpg_id", a->tpg_id);
		jset_u64(o, "lun", a->lun);
		jset_u64(o, "timeout_ms", a->timeout_ms);
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
		return;
	}
	printf("event %llu: ALUA change request %llu, device group %s:",
	       (unsigned long long)e->seq, (unsigned long long)a->request_id, a->device_group);
	for (size_t i = 0; i < a->n_groups; i++)
		printf(" %u=%s", a->groups[i]->tpg_id, ctl_alua_state_name(a->groups[i]->state));
	printf(", from %s through port %u (group %u), LUN %llu, waits %u ms", a->initiator_port,
	       a->rel_port_id, a->tpg_id, (unsigned long long)a->lun, a->timeout_ms);
	if (e->dropped)
		printf(" (%llu events dropped before it)", (unsigned long long)e->dropped);
	printf("\n");
}

/* Subscribed: printed by cmd_watch itself, to stderr */
static const struct isergwctl_ctl_view subscribed_view = {
	ISERGW__CTL__REPLY__PAYLOAD_SUBSCRIBED, "subscribe", false, NULL, NULL,
};

int isergwctl_cmd_watch(struct isergwctl_ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "apply", no_argument, NULL, 'a' },
		{ "refuse", optional_argument, NULL, 'r' },
		{ "count", required_argument, NULL, 'c' },
		ISERGWCTL_OPT_JSON,
		ISERGWCTL_OPT_END,
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__Subscribe sub = ISERGW__CTL__SUBSCRIBE__INIT;
	struct isergwctl_ctx ax = *x;
	const char *refuse = NULL;
	bool apply = false;
	uint64_t count = 0, seen = 0;
	CtlReply *rep;
	char err[256];
	int opt, rc;

	optind = 1;
	while ((opt = isergwctl_next_opt(x, argc, argv, opts)) != -1) {
		switch (opt) {
		case 'a':
			apply = true;
			break;
		case 'r':
			refuse = optarg ? optarg : "refused by isergwctl watch --refuse";
			break;
		case 'c':
			if (isergwctl_parse_u64(optarg, &count) || count == 0)
				return usage_err("--count wants a number >= 1, not '%s'", optarg);
			break;
		default:
			return usage_err("%s", "watch: bad option");
		}
	}
	if ((rc = isergwctl_no_more_args("watch", argc, argv)))
		return rc;
	if (apply && refuse)
		return usage_err("%s", "watch: --apply or --refuse, not both");
	if (strlen(refuse ? refuse : "") > CTL_REASON_MAX)
		return usage_err("--refuse: a reason of at most %u bytes", CTL_REASON_MAX);
	req.op_case = ISERGW__CTL__REQUEST__OP_SUBSCRIBE;
	req.subscribe = &sub;
	if ((rc = isergwctl_call_view(x, &req, &subscribed_view, &rep, 0)))
		return rc;
	fprintf(stderr, "isergwctl: watching %s (ALUA policy %s, requests wait %u ms)%s\n",
		x->peer.path, rep->subscribed->alua_policy, rep->subscribed->alua_request_timeout_ms,
		apply ? ", applying ALUA change requests" : refuse ? ", refusing ALUA change requests"
								  : "");
	ctl_reply_free(rep);
	/* answers go on a connection of their own: this one only carries events */
	ax.peer.fd = -1;
	ax.json = false;
	for (;;) {
		const Isergw__Ctl__Event *e;

		rc = ctl_recv_frame(x->peer.fd, &rep, 0, err, sizeof(err));
		if (rc == -EBADMSG || rc == -EINVAL) {
			fprintf(stderr, "isergwctl: bad frame from %s skipped: %s\n", x->peer.path, err);
			continue;
		}
		if (rc) {
			fprintf(stderr, "isergwctl: %s: %s\n", x->peer.path,
				rc == -EPIPE || rc == -ENOTCONN ? "connection closed" : strerror(-rc));
			rc = ISERGWCTL_EXIT_CONNECT;
			break;
		}
		if (!ctl_reply_is_event(rep)) {
			fprintf(stderr, "isergwctl: unexpected reply (status %d) skipped\n", rep->status);
			ctl_reply_free(rep);
			continue;
		}
		e = rep->event;
		print_event(x, e);
		fflush(stdout);
		if (e->kind_case == ISERGW__CTL__EVENT__KIND_ALUA_CHANGE_REQUEST) {
			if (apply)
				(void)apply_request(&ax, e->alua_change_request);
			else if (refuse && answer_request(&ax, e->alua_change_request->request_id, -EPERM,
							  refuse) == 0)
				fprintf(stderr, "isergwctl: request %llu refused\n",
					(unsigned long long)e->alua_change_request->request_id);
		}
		ctl_reply_free(rep);
		if (count && ++seen >= count) {
			rc = 0;
			break;
		}
	}
	isergwctl_peer_close(&ax.peer);
	return rc;
}
