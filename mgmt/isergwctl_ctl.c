/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl's commands over isergwd's control socket (docs/control.md), the
 * common part: the options every command parses, talking to the daemon
 * (one request, one reply), showing a reply as a table or as JSON (a view);
 * and the commands status, apply, reload, sessions, counters and logout.
 * The ALUA commands are in isergwctl_alua.c.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_wire.h"
#include "isergwctl.h"
#include "isergwctl_ctl.h"

/* "isergwctl: MESSAGE" and the hint on stderr; ISERGWCTL_EXIT_USAGE. */
#define usage_err(...) isergwctl_usage_err(NULL, __VA_ARGS__)

/* --epoch N of apply and alua set: 0, or the usage error's exit code. */
int isergwctl_parse_epoch(const char *s, uint64_t *epoch)
{
	if (isergwctl_parse_u64(s, epoch) || *epoch == 0)
		return usage_err("--epoch wants a number >= 1, not '%s'", s);
	return 0;
}

/*
 * A command's options one at a time, as getopt_long returns them (set
 * optind = 1 before the first); --json, which every command takes, is
 * handled here.
 */
int isergwctl_next_opt(struct isergwctl_ctx *x, int argc, char **argv, const struct option *opts)
{
	int opt;

	while ((opt = getopt_long(argc, argv, "+", opts, NULL)) == 'j')
		x->json = true;
	return opt;
}

/* After a command's options: 0, or the usage error's exit code for a stray argument. */
int isergwctl_no_more_args(const char *cmd, int argc, char **argv)
{
	if (optind != argc)
		return usage_err("%s: unexpected '%s'", cmd, argv[optind]);
	return 0;
}

/* A command whose only option is --json: 0, or the usage error's exit code. */
int isergwctl_json_only_args(struct isergwctl_ctx *x, const char *cmd, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			x->json = true;
		else
			return usage_err("%s: unexpected '%s'", cmd, argv[i]);
	}
	return 0;
}

/* ------------------------------------------------------------ talking */

int isergwctl_call_any(struct isergwctl_ctx *x, const CtlRequest *req, CtlReply **out, int extra_ms)
{
	const char *path = x->peer.path;
	struct ctl_frame_rx rx;
	int rc = isergwctl_call(&x->peer, &req->base, x->timeout_ms + extra_ms, &rx);

	if (rc == 0 && !(*out = ctl_reply_unpack(rx.body, rx.len))) {
		isergwctl_peer_close(&x->peer);
		rc = -EBADMSG;
	}
	ctl_frame_rx_reset(&rx);
	if (rc == 0)
		return 0;
	switch (x->peer.step) {
	case ISERGWCTL_STEP_PATH:
		fprintf(stderr, "isergwctl: socket path too long: %s\n", path);
		return ISERGWCTL_EXIT_USAGE;
	case ISERGWCTL_STEP_SOCKET:
	case ISERGWCTL_STEP_CONNECT:
		fprintf(stderr, "isergwctl: cannot connect to %s: %s\n", path, strerror(-rc));
		break;
	case ISERGWCTL_STEP_PACK:
	case ISERGWCTL_STEP_SEND:
		fprintf(stderr, "isergwctl: cannot send to %s: %s\n", path, strerror(-rc));
		break;
	case ISERGWCTL_STEP_RECV:
		fprintf(stderr, "isergwctl: no answer from %s: %s\n", path,
			rc == -EPIPE || rc == -ENOTCONN ? "connection closed" : strerror(-rc));
		break;
	}
	return ISERGWCTL_EXIT_CONNECT;
}

/* isergwctl_call_any(), and a refusal is printed: 0 with *out or ISERGWCTL_EXIT_*. */
static int call(struct isergwctl_ctx *x, const CtlRequest *req, CtlReply **out, int extra_ms)
{
	CtlReply *rep;
	int rc = isergwctl_call_any(x, req, &rep, extra_ms);

	if (rc)
		return rc;
	if (rep->status) {
		isergwctl_print_refusal(rep->status, rep->error);
		ctl_reply_free(rep);
		return ISERGWCTL_EXIT_REFUSED;
	}
	*out = rep;
	return 0;
}

/* call(), and the reply must carry the payload of v; EXIT_* on failure. */
int isergwctl_call_view(struct isergwctl_ctx *x, const CtlRequest *req,
			const struct isergwctl_ctl_view *v, CtlReply **out, int extra_ms)
{
	int rc = call(x, req, out, extra_ms);

	if (rc || !v->payload || (*out)->payload_case == v->payload)
		return rc;
	if (v->what)
		fprintf(stderr, "isergwctl: unexpected answer to %s\n", v->what);
	ctl_reply_free(*out);
	return ISERGWCTL_EXIT_CONNECT;
}

/* Print the reply as v says (--json or the table) and free it; 0. */
int isergwctl_show(struct isergwctl_ctx *x, CtlReply *rep, const struct isergwctl_ctl_view *v,
		   const void *sel)
{
	const struct isergwctl_shown sh = { rep, sel };

	if (x->json) {
		json_object *doc = v->list ? json_object_new_array() : json_object_new_object();

		v->json(doc, &sh);
		isergwctl_print_json(doc);
	} else {
		v->table(&sh);
	}
	ctl_reply_free(rep);
	return 0;
}

/* Send req and show its reply: 0 or EXIT_*. */
int isergwctl_run(struct isergwctl_ctx *x, const CtlRequest *req, const struct isergwctl_ctl_view *v,
		  const void *sel, int extra_ms)
{
	CtlReply *rep;
	int rc = isergwctl_call_view(x, req, v, &rep, extra_ms);

	return rc ? rc : isergwctl_show(x, rep, v, sel);
}

int isergwctl_call_plain(struct isergwctl_ctx *x, Isergw__Ctl__Request__OpCase op,
			 const struct isergwctl_ctl_view *v, CtlReply **out)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	ProtobufCMessage *m = isergwctl_pb_op_new(&req.base, op);
	int rc = m ? isergwctl_call_view(x, &req, v, out, 0) : ISERGWCTL_EXIT_CONNECT;

	free(m);
	return rc;
}

int isergwctl_run_plain(struct isergwctl_ctx *x, Isergw__Ctl__Request__OpCase op,
			const struct isergwctl_ctl_view *v)
{
	CtlReply *rep;
	int rc = isergwctl_call_plain(x, op, v, &rep);

	return rc ? rc : isergwctl_show(x, rep, v, NULL);
}

/* The groups of an ALUA message as a JSON array: tpg_id, state (and pref). */
json_object *isergwctl_alua_groups_json(Isergw__Ctl__AluaGroupState *const *groups, size_t n,
					bool with_pref)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		json_object *g = json_object_new_object();

		jset_u64(g, "tpg_id", groups[i]->tpg_id);
		jset_str(g, "state", ctl_alua_state_name(groups[i]->state));
		if (with_pref)
			json_object_object_add(g, "pref", json_object_new_boolean(groups[i]->pref));
		json_object_array_add(arr, g);
	}
	return arr;
}

/* ------------------------------------------------------------ status */

/* Fields shown in --json (isergwctl_pb_json): by name, under another key, a message's own. */
#define JF(name)                    { name, NULL, NULL }
#define JF_AS(name, key)            { name, key, NULL }
#define JF_IN(name, fields)         { name, NULL, fields }
#define JF_AS_IN(name, key, fields) { name, key, fields }
#define JF_END                      { NULL, NULL, NULL }

/* StatusInfo in --json: its fields in this order (not start_time_ms). */
static const struct isergwctl_jfield status_fields[] = {
	JF("version"), JF("pid"), JF("epoch"), JF("config_epoch"), JF("alua_epoch"),
	JF("uptime_ms"), JF("sessions"), JF("connections"), JF("connections_refused"),
	JF("targets"), JF("portals"),
	JF("reactors"), JF("lease_state"), JF("lease_remaining_ms"), JF("portal_states"),
	JF("luns_online"), JF("lun_faults_total"), JF("lun_faults"), JF_END,
};

static void status_json(json_object *o, const struct isergwctl_shown *sh)
{
	isergwctl_pb_json_add(o, &sh->rep->status_info->base, status_fields);
}

static void status_table(const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__StatusInfo *s = sh->rep->status_info;

	printf("version      %s\n", s->version);
	printf("pid          %u\n", s->pid);
	printf("epoch        %llu (configuration %llu, ALUA %llu)\n",
	       (unsigned long long)s->epoch, (unsigned long long)s->config_epoch,
	       (unsigned long long)s->alua_epoch);
	printf("uptime       %llu.%03llu s\n", (unsigned long long)(s->uptime_ms / 1000),
	       (unsigned long long)(s->uptime_ms % 1000));
	printf("sessions     %u\n", s->sessions);
	printf("connections  %u (%llu refused: max_logins_per_address)\n", s->connections,
	       (unsigned long long)s->connections_refused);
	printf("targets      %u\n", s->targets);
	printf("portals      %u\n", s->portals);
	printf("reactors     %u\n", s->reactors);
	if (strcmp(s->lease_state, "valid") == 0)
		printf("lease        valid, %u ms left\n", s->lease_remaining_ms);
	else
		printf("lease        %s\n", s->lease_state[0] ? s->lease_state : "?");
	for (size_t i = 0; i < s->n_portal_states; i++) {
		const Isergw__Ctl__PortalStatus *p = s->portal_states[i];

		printf("portal       %s  port %u  group %u  %s%s%s%s\n", p->url, p->rel_port_id,
		       p->tpg_id, p->state, p->error[0] ? " (" : "", p->error,
		       p->error[0] ? ")" : "");
	}
	printf("luns         %u online, %u not served\n", s->luns_online, s->lun_faults_total);
	for (size_t i = 0; i < s->n_lun_faults; i++) {
		const Isergw__Ctl__LunFault *f = s->lun_faults[i];

		printf("lun          %s LUN %u  %s: %s\n", f->target, f->lun, f->state, f->reason);
	}
}

static const struct isergwctl_ctl_view status_view = {
	ISERGW__CTL__REPLY__PAYLOAD_STATUS_INFO, "status", false, status_json, status_table,
};

int isergwctl_get_status(struct isergwctl_ctx *x, CtlReply **rep)
{
	return isergwctl_call_plain(x, ISERGW__CTL__REQUEST__OP_GET_STATUS, &status_view, rep);
}

/* ------------------------------------------------------------ apply */

static char *read_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	size_t cap = 65536, n = 0;
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(cap);
	while (buf) {
		size_t r = fread(buf + n, 1, cap - n - 1, f);

		n += r;
		if (r == 0)
			break;
		if (n + 1 == cap) {
			char *nb = cap > CTL_FRAME_MAX ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				buf = NULL;
				errno = EFBIG;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (buf && ferror(f)) {
		free(buf);
		buf = NULL;
	}
	if (f != stdin)
		fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

static void apply_json(json_object *o, const struct isergwctl_shown *sh)
{
	isergwctl_pb_json_add(o, &sh->rep->apply->base, NULL);
}

static void apply_table(const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__ApplyResult *r = sh->rep->apply;

	printf("epoch %llu: %s (%u target(s), %u portal(s))\n", (unsigned long long)r->epoch,
	       r->changed ? "applied" : "already applied, nothing to do", r->targets, r->portals);
}

static const struct isergwctl_ctl_view apply_view = {
	ISERGW__CTL__REPLY__PAYLOAD_APPLY, NULL, false, apply_json, apply_table,
};

int isergwctl_cmd_apply(struct isergwctl_ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "epoch", required_argument, NULL, 'e' },
		ISERGWCTL_OPT_JSON,
		ISERGWCTL_OPT_END,
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__ApplyConfig ac = ISERGW__CTL__APPLY_CONFIG__INIT;
	uint64_t epoch = 0;
	bool have_epoch = false;
	size_t len;
	char *doc;
	int opt, rc;

	optind = 1;
	while ((opt = isergwctl_next_opt(x, argc, argv, opts)) != -1) {
		if (opt != 'e')
			return usage_err("%s", "apply: bad option");
		if ((rc = isergwctl_parse_epoch(optarg, &epoch)))
			return rc;
		have_epoch = true;
	}
	if (!have_epoch)
		return usage_err("%s", "apply needs --epoch N");
	if (optind != argc - 1)
		return usage_err("%s", "apply needs exactly one FILE.json");
	doc = read_file(argv[optind], &len);
	if (!doc) {
		fprintf(stderr, "isergwctl: cannot read %s: %s\n", argv[optind], strerror(errno));
		return ISERGWCTL_EXIT_USAGE;
	}
	ac.epoch = epoch;
	ac.config_json = doc;
	req.op_case = ISERGW__CTL__REQUEST__OP_APPLY_CONFIG;
	req.apply_config = &ac;
	rc = isergwctl_run(x, &req, &apply_view, NULL, 0);
	free(doc);
	return rc;
}

/* ------------------------------------------------------------ sessions */

/* IoStats in --json: the latency histograms' keys say their buckets are log2. */
static const struct isergwctl_jfield iostats_fields[] = {
	JF("cmds_read"), JF("cmds_write"), JF("cmds_other"), JF("bytes_read"), JF("bytes_written"),
	JF("check_condition"), JF("busy"), JF("reservation_conflict"), JF("aborted"),
	JF_AS("lat_read_us", "lat_read_us_log2"), JF_AS("lat_write_us", "lat_write_us_log2"), JF_END,
};

static const struct isergwctl_jfield session_fields[] = {
	JF("target"), JF("initiator"), JF("isid"), JF("tsih"), JF("portal"), JF("transport"),
	JF("type"), JF("connections"), JF_IN("stats", iostats_fields), JF_END,
};

static void sessions_json(json_object *arr, const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__SessionList *sl = sh->rep->sessions;

	for (size_t i = 0; i < sl->n_sessions; i++)
		json_object_array_add(arr, isergwctl_pb_json(&sl->sessions[i]->base, session_fields));
}

static void sessions_table(const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__SessionList *sl = sh->rep->sessions;

	printf("%-5s %-9s %-12s %-36s %-5s %-21s %-21s %-12s %-19s %9s %9s %9s\n", "TSIH",
	       "TRANSPORT", "ISID", "INITIATOR", "CID", "PEER", "PORTAL", "STATE", "LOGIN", "READS",
	       "WRITES", "OTHER");
	for (size_t i = 0; i < sl->n_sessions; i++) {
		const Isergw__Ctl__Session *s = sl->sessions[i];

		for (size_t k = 0; k < s->n_connections; k++) {
			const Isergw__Ctl__Connection *c = s->connections[k];
			char when[32] = "-";
			time_t t = (time_t)c->login_time;
			struct tm tm;

			if (c->login_time && localtime_r(&t, &tm))
				strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
			printf("%-5u %-9s %-12s %-36s %-5u %-21s %-21s %-12s %-19s %9llu %9llu %9llu\n",
			       s->tsih, s->transport, s->isid, s->initiator, c->cid, c->peer,
			       c->local, c->state, when,
			       (unsigned long long)(s->stats ? s->stats->cmds_read : 0),
			       (unsigned long long)(s->stats ? s->stats->cmds_write : 0),
			       (unsigned long long)(s->stats ? s->stats->cmds_other : 0));
		}
		printf("      %s %s\n", s->type, s->target[0] ? s->target : "(discovery)");
	}
	printf("%zu session(s)\n", sl->n_sessions);
}

static const struct isergwctl_ctl_view sessions_view = {
	ISERGW__CTL__REPLY__PAYLOAD_SESSIONS, NULL, true, sessions_json, sessions_table,
};

/*
 * The commands that take only --json and send an operation without fields:
 * status, reload (isergwd re-reads the configuration file it was started
 * with, as SIGHUP does, and answers once it is applied or refused: exit 1,
 * the reason printed, the configuration running stays) and sessions.
 */
static const struct {
	const char *word;
	Isergw__Ctl__Request__OpCase op;
	const struct isergwctl_ctl_view *view;
} plain_cmds[] = {
	{ "status", ISERGW__CTL__REQUEST__OP_GET_STATUS, &status_view },
	{ "reload", ISERGW__CTL__REQUEST__OP_RELOAD_CONFIG, &apply_view },
	{ "sessions", ISERGW__CTL__REQUEST__OP_LIST_SESSIONS, &sessions_view },
};

int isergwctl_cmd_plain(struct isergwctl_ctx *x, int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(plain_cmds) / sizeof(plain_cmds[0]); i++) {
		int rc;

		if (strcmp(plain_cmds[i].word, argv[0]))
			continue;
		rc = isergwctl_json_only_args(x, argv[0], argc, argv);
		return rc ? rc : isergwctl_run_plain(x, plain_cmds[i].op, plain_cmds[i].view);
	}
	return usage_err("unknown command '%s'", argv[0]);
}

/* ------------------------------------------------------------ counters */

/* Upper bound (us) of the bucket holding the q-quantile, 0 without samples. */
static uint64_t lat_quantile(const uint64_t *b, size_t n, double q)
{
	uint64_t total = 0, acc = 0;

	for (size_t i = 0; i < n; i++)
		total += b[i];
	if (!total)
		return 0;
	for (size_t i = 0; i < n; i++) {
		acc += b[i];
		if ((double)acc >= q * (double)total)
			return 1ull << (i + 1);
	}
	return 1ull << n;
}

static void print_stats_row(const char *key, const Isergw__Ctl__IoStats *s)
{
	printf("%-44s %10llu %10llu %8llu %14llu %14llu %6llu %5llu %5llu %6llu %8llu %8llu\n", key,
	       (unsigned long long)s->cmds_read, (unsigned long long)s->cmds_write,
	       (unsigned long long)s->cmds_other, (unsigned long long)s->bytes_read,
	       (unsigned long long)s->bytes_written, (unsigned long long)s->check_condition,
	       (unsigned long long)s->busy, (unsigned long long)s->reservation_conflict,
	       (unsigned long long)s->aborted,
	       (unsigned long long)lat_quantile(s->lat_read_us, s->n_lat_read_us, 0.99),
	       (unsigned long long)lat_quantile(s->lat_write_us, s->n_lat_write_us, 0.99));
}

static void print_stats_head(const char *key)
{
	printf("%-44s %10s %10s %8s %14s %14s %6s %5s %5s %6s %8s %8s\n", key, "READS", "WRITES",
	       "OTHER", "BYTES_READ", "BYTES_WRITTEN", "CHECK", "BUSY", "RESV", "ABORT", "RD_P99<",
	       "WR_P99<");
}

/* What counters shows: the LUNs (all, or one), the target ports or the device groups. */
struct counters_sel {
	bool ports;
	bool groups;
	const char *target;     /* NULL: every LUN */
	uint32_t lun;
};

static bool counters_skip(const struct counters_sel *f, const Isergw__Ctl__LunCounters *l)
{
	return f->target && (strcmp(l->target, f->target) || l->lun != f->lun);
}

/* Counters in --json: of the ports, of the device groups, or of the LUNs selected. */
static const struct isergwctl_jfield port_fields[] = {
	JF("rel_port_id"), JF("tpg_id"), JF_IN("stats", iostats_fields), JF_END,
};
static const struct isergwctl_jfield ports_fields[] = { JF_IN("ports", port_fields), JF_END };
static const struct isergwctl_jfield group_fields[] = {
	JF("device_group"), JF_IN("stats", iostats_fields), JF_END,
};
static const struct isergwctl_jfield groups_fields[] = {
	JF_AS_IN("groups", "device_groups", group_fields), JF_END,
};
static const struct isergwctl_jfield lun_fields[] = {
	JF("target"), JF("lun"), JF_IN("stats", iostats_fields), JF_END,
};

static void counters_json(json_object *o, const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__Counters *co = sh->rep->counters;
	const struct counters_sel *f = sh->sel;
	json_object *arr;

	if (f->ports || f->groups) {
		isergwctl_pb_json_add(o, &co->base, f->ports ? ports_fields : groups_fields);
		return;
	}
	arr = json_object_new_array();
	for (size_t i = 0; i < co->n_luns; i++)
		if (!counters_skip(f, co->luns[i]))
			json_object_array_add(arr, isergwctl_pb_json(&co->luns[i]->base, lun_fields));
	json_object_object_add(o, "luns", arr);
}

static void counters_table(const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__Counters *co = sh->rep->counters;
	const struct counters_sel *f = sh->sel;

	if (f->ports) {
		print_stats_head("PORT (REL_PORT_ID/TPG)");
		for (size_t i = 0; i < co->n_ports; i++) {
			char key[32];

			snprintf(key, sizeof(key), "%u/%u", co->ports[i]->rel_port_id,
				 co->ports[i]->tpg_id);
			print_stats_row(key, co->ports[i]->stats);
		}
		return;
	}
	if (f->groups) {
		print_stats_head("DEVICE GROUP");
		for (size_t i = 0; i < co->n_groups; i++)
			print_stats_row(co->groups[i]->device_group, co->groups[i]->stats);
		return;
	}
	print_stats_head("TARGET/LUN");
	for (size_t i = 0; i < co->n_luns; i++) {
		const Isergw__Ctl__LunCounters *l = co->luns[i];
		char key[256];

		if (counters_skip(f, l))
			continue;
		snprintf(key, sizeof(key), "%s/%u", l->target, l->lun);
		print_stats_row(key, l->stats);
	}
}

static const struct isergwctl_ctl_view counters_view = {
	ISERGW__CTL__REPLY__PAYLOAD_COUNTERS, NULL, false, counters_json, counters_table,
};

int isergwctl_cmd_counters(struct isergwctl_ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "lun", required_argument, NULL, 'l' },
		{ "ports", no_argument, NULL, 'p' },
		{ "device-groups", no_argument, NULL, 'g' },
		ISERGWCTL_OPT_JSON,
		ISERGWCTL_OPT_END,
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__GetCounters gc = ISERGW__CTL__GET_COUNTERS__INIT;
	struct counters_sel f = { 0 };
	char tbuf[256], *slash;
	int opt, rc;

	optind = 1;
	while ((opt = isergwctl_next_opt(x, argc, argv, opts)) != -1) {
		switch (opt) {
		case 'l':
			snprintf(tbuf, sizeof(tbuf), "%s", optarg);
			slash = strrchr(tbuf, '/');
			if (!slash || slash == tbuf ||
			    isergwctl_parse_u32(slash + 1, UINT32_MAX, &f.lun))
				return usage_err("--lun wants TARGET/LUN, not '%s'", optarg);
			*slash = '\0';
			f.target = tbuf;
			break;
		case 'p':
			f.ports = true;
			break;
		case 'g':
			f.groups = true;
			break;
		default:
			return usage_err("%s", "counters: bad option");
		}
	}
	if ((rc = isergwctl_no_more_args("counters", argc, argv)))
		return rc;
	if (f.ports + f.groups + (f.target != NULL) > 1)
		return usage_err("%s", "counters: one of --lun, --ports and --device-groups");
	gc.lun_latency = true;          /* every number of every LUN */
	req.op_case = ISERGW__CTL__REQUEST__OP_GET_COUNTERS;
	req.get_counters = &gc;
	return isergwctl_run(x, &req, &counters_view, &f, 0);
}

/* ------------------------------------------------------------ logout */

/* arg: the request, for whether the sessions were dropped or asked to log out */
static void logout_json(json_object *o, const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__Logout *lo = sh->sel;

	jset_u64(o, "sessions", sh->rep->logout ? sh->rep->logout->sessions : 0);
	json_object_object_add(o, "immediate", json_object_new_boolean(lo->immediate));
}

static void logout_table(const struct isergwctl_shown *sh)
{
	const Isergw__Ctl__Logout *lo = sh->sel;

	printf("%u session(s) %s\n", sh->rep->logout ? sh->rep->logout->sessions : 0,
	       lo->immediate ? "dropped" : "asked to log out");
}

static const struct isergwctl_ctl_view logout_view = {
	ISERGW__CTL__REPLY__PAYLOAD__NOT_SET, NULL, false, logout_json, logout_table,
};

int isergwctl_cmd_logout(struct isergwctl_ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tsih", required_argument, NULL, 't' },
		{ "initiator", required_argument, NULL, 'i' },
		{ "now", no_argument, NULL, 'n' },
		{ "grace", required_argument, NULL, 'g' },
		ISERGWCTL_OPT_JSON,
		ISERGWCTL_OPT_END,
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__Logout lo = ISERGW__CTL__LOGOUT__INIT;
	int opt, rc;

	optind = 1;
	while ((opt = isergwctl_next_opt(x, argc, argv, opts)) != -1) {
		switch (opt) {
		case 't':
			if (lo.who_case || isergwctl_parse_u32(optarg, 65535, &lo.tsih) ||
			    lo.tsih == 0)
				return usage_err("%s", "logout: one --tsih N (1..65535) or --initiator");
			lo.who_case = ISERGW__CTL__LOGOUT__WHO_TSIH;
			break;
		case 'i':
			if (lo.who_case)
				return usage_err("%s", "logout: one --tsih N or --initiator IQN");
			lo.initiator = optarg;
			lo.who_case = ISERGW__CTL__LOGOUT__WHO_INITIATOR;
			break;
		case 'n':
			lo.immediate = true;
			break;
		case 'g':
			if (isergwctl_parse_u32(optarg, CTL_LOGOUT_GRACE_MAX_S, &lo.grace_s) ||
			    lo.grace_s == 0)
				return usage_err("--grace wants 1..3600 seconds, not '%s'", optarg);
			break;
		default:
			return usage_err("%s", "logout: bad option");
		}
	}
	if (!lo.who_case)
		return usage_err("%s", "logout needs --tsih N or --initiator IQN");
	if ((rc = isergwctl_no_more_args("logout", argc, argv)))
		return rc;
	req.op_case = ISERGW__CTL__REQUEST__OP_LOGOUT;
	req.logout = &lo;
	return isergwctl_run(x, &req, &logout_view, &lo, 0);
}
