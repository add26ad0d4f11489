/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl: the operator's command line for isergwd's control socket
 * (docs/control.md). Human-readable tables by default, --json for scripts.
 *
 * Exit codes: 0 done, 1 refused by the daemon (the reason is printed),
 * 2 usage error, 3 cannot talk to the daemon; the REST commands
 * (isergwctl_rest.c: target, lun, node, device-group, config, api) also 4,
 * 5 and 6 (isergwctl.h).
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_wire.h"
#include "isergwctl.h"

#define DEFAULT_SOCKET "/run/isergw/isergwd.sock"
#define EXIT_REFUSED 1
#define EXIT_USAGE   2
#define EXIT_CONNECT 3

struct ctx {
	const char *socket;
	bool json;
	int timeout_ms;
	int fd;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: isergwctl [-s|--socket PATH] [--json] [--timeout S] COMMAND [ARGS]\n"
"Talk to isergwd over its control socket (default " DEFAULT_SOCKET ").\n"
"\n"
"Commands:\n"
"  status                       version, pid, epoch, uptime, sessions, the lease\n"
"  apply --epoch N FILE.json    apply a full configuration (the configuration\n"
"                               file's JSON) as epoch N; FILE '-' reads stdin\n"
"  reload                       re-read isergwd's configuration file (as SIGHUP)\n"
"                               and wait: 1 with the reason when it is refused\n"
"  alua set [--epoch N] [--dg NAME] [--transition-ms MS] TPG=STATE[,pref] ...\n"
"                               set the ALUA states of target port groups, all at\n"
"                               once; STATE: ao, ano, standby, unavailable,\n"
"                               offline, transitioning; without --epoch the\n"
"                               current epoch + 1; --transition-ms: Transitioning\n"
"                               first, the final states after MS milliseconds\n"
"  alua show [--dg NAME]        the groups and their states\n"
"  alua map [--epoch N] [--transition-ms MS] --dg NAME TPG=STATE[,pref] ...\n"
"           [--dg NAME TPG=STATE[,pref] ...]\n"
"                               set the states of several device groups under\n"
"                               one epoch (all checked before any changes); each\n"
"                               --dg starts a device group ('default' for the\n"
"                               default one); --transition-ms: the groups whose\n"
"                               state changes go through Transitioning first\n"
"  lease [show]                 the ALUA lease: state, time left, expiry\n"
"  lease renew (--ms N | --at MS)\n"
"                               give a lease ending N ms from now (1..60000), or\n"
"                               at MS on the monotonic clock (CLOCK_MONOTONIC, ms)\n"
"  lease stepdown [--reason R]  drop the lease: every group Unavailable at once\n"
"  sessions                     sessions, connections and their command counts\n"
"  counters [--lun TARGET/LUN] [--ports] [--device-groups]\n"
"                               I/O counters per LUN (or per target port, or\n"
"                               per device group)\n"
"  logout (--tsih N | --initiator IQN) [--now] [--grace S]\n"
"                               ask the session(s) to log out within S seconds\n"
"                               (default 10) then drop them; --now drops at once\n"
"  watch [--apply | --refuse[=REASON]] [--count N]\n"
"                               subscribe to events and print them as they come\n"
"                               (--json: one JSON object per line); --apply sets\n"
"                               the states each ALUA change request (an initiator's\n"
"                               SET TARGET PORT GROUPS) asks for, --refuse refuses\n"
"                               them; --count: exit after N events\n"
"  cluster status | config get | config apply FILE | drain NODE | undrain NODE |\n"
"          move DEVICE_GROUP NODE | token add|list|revoke\n"
"                               the HA agent's cluster (its local API, default\n"
"                               " ISERGWCTL_HA_SOCKET "); isergwctl cluster --help\n"
"\n"
"REST commands, over isergw-api (isergwctl target --help, docs/rest-cli.md):\n"
"  [--api URL] [--token-file F] [--cacert FILE] [--insecure]\n"
"  target list | show IQN | create IQN [--alias A] [--from-json FILE] | delete IQN\n"
"  lun list IQN | show IQN LUN | create IQN --path P [--size S] [--lun N]\n"
"      [--device-group DG] [--from-json FILE] | set IQN LUN KEY=VALUE... |\n"
"      delete IQN LUN\n"
"  node list | show NAME | drain NAME | undrain NAME\n"
"  device-group list | show NAME | move NAME NODE\n"
"  config export | import FILE\n"
"  api status\n"
"                               writes take --if-match ETAG and --wait\n"
"\n"
"Options:\n"
"  -s, --socket PATH   control socket of the daemon\n"
"  --json              machine-readable output (one JSON document)\n"
"  --timeout S         wait at most S seconds for an answer (default 30, plus\n"
"                      the transition time of 'alua set')\n"
"  -h, --help          this help\n"
"  -V, --version       print the version\n"
"\n"
"Exit status: 0 done, 1 refused by the daemon (reason printed), 2 usage error,\n"
"3 cannot connect to the daemon; the REST commands also 4 not authorized,\n"
"5 the cluster cannot take it now (503), 6 accepted but not done when --wait\n"
"ran out (isergwctl target --help).\n");
}

/* "isergwctl: MESSAGE" and the hint on stderr; EXIT_USAGE. */
#define usage_err(...) isergwctl_usage_err(NULL, __VA_ARGS__)

/* --epoch N of apply and alua set: 0, or the usage error's exit code. */
static int parse_epoch(const char *s, uint64_t *epoch)
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
static int next_opt(struct ctx *x, int argc, char **argv, const struct option *opts)
{
	int opt;

	while ((opt = getopt_long(argc, argv, "+", opts, NULL)) == 'j')
		x->json = true;
	return opt;
}

/* After a command's options: 0, or the usage error's exit code for a stray argument. */
static int no_more_args(const char *cmd, int argc, char **argv)
{
	if (optind != argc)
		return usage_err("%s: unexpected '%s'", cmd, argv[optind]);
	return 0;
}

/* A command whose only option is --json: 0, or the usage error's exit code. */
static int json_only_args(struct ctx *x, const char *cmd, int argc, char **argv)
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

static int ctl_connect(struct ctx *x)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(x->socket) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "isergwctl: socket path too long: %s\n", x->socket);
		return EXIT_USAGE;
	}
	memcpy(sa.sun_path, x->socket, strlen(x->socket) + 1);
	x->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (x->fd < 0 || connect(x->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "isergwctl: cannot connect to %s: %s\n", x->socket, strerror(errno));
		return EXIT_CONNECT;
	}
	return 0;
}

/* Send req, wait for the reply; EXIT_* on failure (reason printed). */
static int call(struct ctx *x, const CtlRequest *req, CtlReply **out, int extra_ms)
{
	CtlReply *rep;
	int rc;

	if (x->fd < 0 && (rc = ctl_connect(x)))
		return rc;
	rc = ctl_send_request(x->fd, req);
	if (rc) {
		fprintf(stderr, "isergwctl: cannot send to %s: %s\n", x->socket, strerror(-rc));
		return EXIT_CONNECT;
	}
	rc = ctl_recv_reply(x->fd, &rep, x->timeout_ms + extra_ms);
	if (rc) {
		fprintf(stderr, "isergwctl: no answer from %s: %s\n", x->socket,
			rc == -EPIPE || rc == -ENOTCONN ? "connection closed" : strerror(-rc));
		return EXIT_CONNECT;
	}
	if (rep->status) {
		isergwctl_print_refusal(rep->status, rep->error);
		ctl_reply_free(rep);
		return EXIT_REFUSED;
	}
	*out = rep;
	return 0;
}

static void jset_u64(json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static void jset_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

/* A reply to show, and what of it the command was asked to show (NULL: all). */
struct shown {
	const CtlReply *rep;
	const void *sel;
};

/* How a command shows its reply: one JSON document (--json) or a table. */
struct view {
	Isergw__Ctl__Reply__PayloadCase payload;    /* the reply's payload; NOT_SET: any */
	const char *what;       /* a reply without it: "unexpected answer to WHAT" (NULL: silent) */
	bool list;              /* the JSON document is an array, not an object */
	void (*json)(json_object *doc, const struct shown *sh);       /* fills the document */
	void (*table)(const struct shown *sh);
};

/* call(), and the reply must carry the payload of v; EXIT_* on failure. */
static int call_view(struct ctx *x, const CtlRequest *req, const struct view *v, CtlReply **out,
		     int extra_ms)
{
	int rc = call(x, req, out, extra_ms);

	if (rc || !v->payload || (*out)->payload_case == v->payload)
		return rc;
	if (v->what)
		fprintf(stderr, "isergwctl: unexpected answer to %s\n", v->what);
	ctl_reply_free(*out);
	return EXIT_CONNECT;
}

/* Print the reply as v says (--json or the table) and free it; 0. */
static int show(struct ctx *x, CtlReply *rep, const struct view *v, const void *sel)
{
	const struct shown sh = { rep, sel };

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
static int run(struct ctx *x, const CtlRequest *req, const struct view *v, const void *sel,
	       int extra_ms)
{
	CtlReply *rep;
	int rc = call_view(x, req, v, &rep, extra_ms);

	return rc ? rc : show(x, rep, v, sel);
}

/* The groups of an ALUA message as a JSON array: tpg_id, state (and pref). */
static json_object *alua_groups_json(Isergw__Ctl__AluaGroupState *const *groups, size_t n,
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

static void status_json(json_object *o, const struct shown *sh)
{
	const Isergw__Ctl__StatusInfo *s = sh->rep->status_info;

	jset_str(o, "version", s->version);
	jset_u64(o, "pid", s->pid);
	jset_u64(o, "epoch", s->epoch);
	jset_u64(o, "config_epoch", s->config_epoch);
	jset_u64(o, "alua_epoch", s->alua_epoch);
	jset_u64(o, "uptime_ms", s->uptime_ms);
	jset_u64(o, "sessions", s->sessions);
	jset_u64(o, "connections", s->connections);
	jset_u64(o, "targets", s->targets);
	jset_u64(o, "portals", s->portals);
	jset_u64(o, "reactors", s->reactors);
	jset_str(o, "lease_state", s->lease_state);
	jset_u64(o, "lease_remaining_ms", s->lease_remaining_ms);
	{
		json_object *arr = json_object_new_array();

		for (size_t i = 0; i < s->n_portal_states; i++) {
			const Isergw__Ctl__PortalStatus *p = s->portal_states[i];
			json_object *po = json_object_new_object();

			jset_str(po, "url", p->url);
			jset_u64(po, "rel_port_id", p->rel_port_id);
			jset_u64(po, "tpg_id", p->tpg_id);
			jset_u64(po, "tpgt", p->tpgt);
			jset_str(po, "state", p->state);
			jset_str(po, "error", p->error);
			json_object_array_add(arr, po);
		}
		json_object_object_add(o, "portal_states", arr);
	}
	jset_u64(o, "luns_online", s->luns_online);
	jset_u64(o, "lun_faults_total", s->lun_faults_total);
	{
		json_object *arr = json_object_new_array();

		for (size_t i = 0; i < s->n_lun_faults; i++) {
			const Isergw__Ctl__LunFault *f = s->lun_faults[i];
			json_object *fo = json_object_new_object();

			jset_str(fo, "target", f->target);
			jset_u64(fo, "lun", f->lun);
			jset_str(fo, "device_group", f->device_group);
			jset_str(fo, "state", f->state);
			jset_str(fo, "reason", f->reason);
			json_object_array_add(arr, fo);
		}
		json_object_object_add(o, "lun_faults", arr);
	}
}

static void status_table(const struct shown *sh)
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
	printf("connections  %u\n", s->connections);
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

static const struct view status_view = {
	ISERGW__CTL__REPLY__PAYLOAD_STATUS_INFO, "status", false, status_json, status_table,
};

static int get_status(struct ctx *x, CtlReply **rep)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__GetStatus gs = ISERGW__CTL__GET_STATUS__INIT;

	req.op_case = ISERGW__CTL__REQUEST__OP_GET_STATUS;
	req.get_status = &gs;
	return call_view(x, &req, &status_view, rep, 0);
}

static int cmd_status(struct ctx *x, int argc, char **argv)
{
	CtlReply *rep;
	int rc = json_only_args(x, "status", argc, argv);

	if (!rc)
		rc = get_status(x, &rep);
	return rc ? rc : show(x, rep, &status_view, NULL);
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

static void apply_json(json_object *o, const struct shown *sh)
{
	const Isergw__Ctl__ApplyResult *r = sh->rep->apply;

	jset_u64(o, "epoch", r->epoch);
	json_object_object_add(o, "changed", json_object_new_boolean(r->changed));
	jset_u64(o, "targets", r->targets);
	jset_u64(o, "portals", r->portals);
}

static void apply_table(const struct shown *sh)
{
	const Isergw__Ctl__ApplyResult *r = sh->rep->apply;

	printf("epoch %llu: %s (%u target(s), %u portal(s))\n", (unsigned long long)r->epoch,
	       r->changed ? "applied" : "already applied, nothing to do", r->targets, r->portals);
}

static const struct view apply_view = {
	ISERGW__CTL__REPLY__PAYLOAD_APPLY, NULL, false, apply_json, apply_table,
};

static int cmd_apply(struct ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "epoch", required_argument, NULL, 'e' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__ApplyConfig ac = ISERGW__CTL__APPLY_CONFIG__INIT;
	uint64_t epoch = 0;
	bool have_epoch = false;
	size_t len;
	char *doc;
	int opt, rc;

	optind = 1;
	while ((opt = next_opt(x, argc, argv, opts)) != -1) {
		if (opt != 'e')
			return usage_err("%s", "apply: bad option");
		if ((rc = parse_epoch(optarg, &epoch)))
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
		return EXIT_USAGE;
	}
	ac.epoch = epoch;
	ac.config_json = doc;
	req.op_case = ISERGW__CTL__REQUEST__OP_APPLY_CONFIG;
	req.apply_config = &ac;
	rc = run(x, &req, &apply_view, NULL, 0);
	free(doc);
	return rc;
}

/*
 * reload: isergwd re-reads the configuration file it was started with, as
 * SIGHUP does, and answers once it is applied or refused (exit 1, the reason
 * printed; the configuration running stays).
 */
static int cmd_reload(struct ctx *x, int argc, char **argv)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__ReloadConfig rl = ISERGW__CTL__RELOAD_CONFIG__INIT;
	int rc = json_only_args(x, "reload", argc, argv);

	if (rc)
		return rc;
	req.op_case = ISERGW__CTL__REQUEST__OP_RELOAD_CONFIG;
	req.reload_config = &rl;
	return run(x, &req, &apply_view, NULL, 0);
}

/* ------------------------------------------------------------ alua */

static void alua_states_json(json_object *o, const Isergw__Ctl__AluaStates *a)
{
	jset_u64(o, "epoch", a->epoch);
	jset_str(o, "device_group", a->device_group);
	json_object_object_add(o, "transition_pending",
			       json_object_new_boolean(a->transition_pending));
	json_object_object_add(o, "groups", alua_groups_json(a->groups, a->n_groups, true));
	if (a->lease_state[0])
		jset_str(o, "lease_state", a->lease_state);
}

static void alua_json(json_object *o, const struct shown *sh)
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

static void alua_table(const struct shown *sh)
{
	alua_states_table(sh->rep->alua, true);
}

static const struct view alua_view = {
	ISERGW__CTL__REPLY__PAYLOAD_ALUA, NULL, false, alua_json, alua_table,
};

static int cmd_alua_show(struct ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dg", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__GetAluaStates ga = ISERGW__CTL__GET_ALUA_STATES__INIT;
	int opt, rc;

	optind = 1;
	while ((opt = next_opt(x, argc, argv, opts)) != -1) {
		if (opt != 'd')
			return usage_err("%s", "alua show: bad option");
		ga.device_group = optarg;
	}
	if ((rc = no_more_args("alua show", argc, argv)))
		return rc;
	req.op_case = ISERGW__CTL__REQUEST__OP_GET_ALUA_STATES;
	req.get_alua_states = &ga;
	return run(x, &req, &alua_view, NULL, 0);
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
static int next_epoch(struct ctx *x, uint64_t *epoch)
{
	CtlReply *rep;
	int rc;

	if (*epoch)
		return 0;
	rc = get_status(x, &rep);
	if (rc)
		return rc;
	*epoch = rep->status_info->epoch + 1;
	ctl_reply_free(rep);
	return 0;
}

static int cmd_alua_set(struct ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "epoch", required_argument, NULL, 'e' },
		{ "dg", required_argument, NULL, 'd' },
		{ "transition-ms", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__SetAluaStates sa = ISERGW__CTL__SET_ALUA_STATES__INIT;
	Isergw__Ctl__AluaGroupState gs[CTL_ALUA_MAX_GROUPS];
	Isergw__Ctl__AluaGroupState *gp[CTL_ALUA_MAX_GROUPS];
	uint64_t epoch = 0;
	int opt, rc;

	optind = 1;
	while ((opt = next_opt(x, argc, argv, opts)) != -1) {
		switch (opt) {
		case 'e':
			if ((rc = parse_epoch(optarg, &epoch)))
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
	return run(x, &req, &alua_view, NULL, (int)sa.transition_ms);
}

/* ------------------------------------------------------------ alua map */

static void alua_map_json(json_object *o, const struct shown *sh)
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

static void alua_map_table(const struct shown *sh)
{
	const Isergw__Ctl__AluaMap *m = sh->rep->alua_map;

	printf("ALUA epoch %llu, %zu device group(s)\n", (unsigned long long)m->epoch,
	       m->n_device_groups);
	for (size_t i = 0; i < m->n_device_groups; i++) {
		printf("\n");
		alua_states_table(m->device_groups[i], false);
	}
}

static const struct view alua_map_view = {
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
static int cmd_alua_map(struct ctx *x, int argc, char **argv)
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
		return EXIT_USAGE;
	}
	r.m.device_groups = r.dp;
	for (int i = 1; i < argc && !rc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--json") == 0) {
			x->json = true;
		} else if (strcmp(a, "--epoch") == 0 && val) {
			rc = parse_epoch(val, &epoch);
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
		rc = run(x, &req, &alua_map_view, NULL, (int)r.m.transition_ms);
	}
	map_req_free(&r);
	return rc;
}

/* ------------------------------------------------------------ lease */

static void lease_json(json_object *o, const struct shown *sh)
{
	const Isergw__Ctl__LeaseInfo *l = sh->rep->lease;

	jset_str(o, "state", l->state);
	jset_u64(o, "remaining_ms", l->remaining_ms);
	jset_u64(o, "expires_mono_ms", l->expires_mono_ms);
	json_object_object_add(o, "enforced", json_object_new_boolean(l->enforced));
}

static void lease_table(const struct shown *sh)
{
	const Isergw__Ctl__LeaseInfo *l = sh->rep->lease;

	if (strcmp(l->state, "valid") == 0)
		printf("ALUA lease valid, %u ms left (until %llu ms on the monotonic clock)\n",
		       l->remaining_ms, (unsigned long long)l->expires_mono_ms);
	else
		printf("ALUA lease %s: every target port group %s\n", l->state,
		       strcmp(l->state, "expired") == 0 ? "Transitioning" : "Unavailable");
}

static const struct view lease_view = {
	ISERGW__CTL__REPLY__PAYLOAD_LEASE, "lease", false, lease_json, lease_table,
};

static int cmd_lease(struct ctx *x, int argc, char **argv)
{
	static const struct option renew_opts[] = {
		{ "ms", required_argument, NULL, 'm' },
		{ "at", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct option down_opts[] = {
		{ "reason", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__GetLease gl = ISERGW__CTL__GET_LEASE__INIT;
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
		if ((rc = json_only_args(x, "lease show", argc, argv)))
			return rc;
		req.op_case = ISERGW__CTL__REQUEST__OP_GET_LEASE;
		req.get_lease = &gl;
		return run(x, &req, &lease_view, NULL, 0);
	}
	optind = 1;
	if (strcmp(sub, "renew") == 0) {
		uint32_t ms = 0;
		uint64_t at = 0;

		while ((opt = next_opt(x, argc, argv, renew_opts)) != -1) {
			if (opt == 'a') {
				if (isergwctl_parse_u64(optarg, &at) || at == 0)
					return usage_err("lease renew: --at wants a time >= 1 (ms)");
				continue;
			}
			if (opt != 'm' || isergwctl_parse_u32(optarg, CTL_LEASE_AHEAD_MAX_MS, &ms) ||
			    ms == 0)
				return usage_err("lease renew: --ms wants 1..%u", CTL_LEASE_AHEAD_MAX_MS);
		}
		if ((rc = no_more_args("lease renew", argc, argv)))
			return rc;
		if (!ms == !at)
			return usage_err("%s", "lease renew needs --ms N or --at MS");
		/* isergwd and isergwctl share the machine's monotonic clock */
		rl.expires_mono_ms = at ? at : (uint64_t)isergwctl_now_ms() + ms;
		req.op_case = ISERGW__CTL__REQUEST__OP_RENEW_LEASE;
		req.renew_lease = &rl;
		return run(x, &req, &lease_view, NULL, 0);
	}
	if (strcmp(sub, "stepdown") == 0) {
		while ((opt = next_opt(x, argc, argv, down_opts)) != -1) {
			if (opt != 'r')
				return usage_err("%s", "lease stepdown: bad option");
			if (strlen(optarg) > CTL_REASON_MAX)
				return usage_err("--reason: at most %u bytes", CTL_REASON_MAX);
			sd.reason = optarg;
		}
		if ((rc = no_more_args("lease stepdown", argc, argv)))
			return rc;
		req.op_case = ISERGW__CTL__REQUEST__OP_STEP_DOWN;
		req.step_down = &sd;
		return run(x, &req, &lease_view, NULL, 0);
	}
	return usage_err("lease: unknown subcommand '%s' (show, renew, stepdown)", sub);
}

/* ------------------------------------------------------------ sessions */

static json_object *iostats_json(const Isergw__Ctl__IoStats *s)
{
	json_object *o = json_object_new_object(), *lr = json_object_new_array(),
		    *lw = json_object_new_array();

	jset_u64(o, "cmds_read", s->cmds_read);
	jset_u64(o, "cmds_write", s->cmds_write);
	jset_u64(o, "cmds_other", s->cmds_other);
	jset_u64(o, "bytes_read", s->bytes_read);
	jset_u64(o, "bytes_written", s->bytes_written);
	jset_u64(o, "check_condition", s->check_condition);
	jset_u64(o, "busy", s->busy);
	jset_u64(o, "reservation_conflict", s->reservation_conflict);
	jset_u64(o, "aborted", s->aborted);
	for (size_t i = 0; i < s->n_lat_read_us; i++)
		json_object_array_add(lr, json_object_new_uint64(s->lat_read_us[i]));
	for (size_t i = 0; i < s->n_lat_write_us; i++)
		json_object_array_add(lw, json_object_new_uint64(s->lat_write_us[i]));
	json_object_object_add(o, "lat_read_us_log2", lr);
	json_object_object_add(o, "lat_write_us_log2", lw);
	return o;
}

static void sessions_json(json_object *arr, const struct shown *sh)
{
	const Isergw__Ctl__SessionList *sl = sh->rep->sessions;

	for (size_t i = 0; i < sl->n_sessions; i++) {
		const Isergw__Ctl__Session *s = sl->sessions[i];
		json_object *o = json_object_new_object(), *ca = json_object_new_array();

		jset_str(o, "target", s->target);
		jset_str(o, "initiator", s->initiator);
		jset_str(o, "isid", s->isid);
		jset_u64(o, "tsih", s->tsih);
		jset_str(o, "portal", s->portal);
		jset_str(o, "transport", s->transport);
		jset_str(o, "type", s->type);
		for (size_t k = 0; k < s->n_connections; k++) {
			const Isergw__Ctl__Connection *c = s->connections[k];
			json_object *co = json_object_new_object();

			jset_u64(co, "cid", c->cid);
			jset_str(co, "peer", c->peer);
			jset_str(co, "local", c->local);
			jset_str(co, "state", c->state);
			jset_u64(co, "login_time", c->login_time);
			json_object_array_add(ca, co);
		}
		json_object_object_add(o, "connections", ca);
		if (s->stats)
			json_object_object_add(o, "stats", iostats_json(s->stats));
		json_object_array_add(arr, o);
	}
}

static void sessions_table(const struct shown *sh)
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

static const struct view sessions_view = {
	ISERGW__CTL__REPLY__PAYLOAD_SESSIONS, NULL, true, sessions_json, sessions_table,
};

static int cmd_sessions(struct ctx *x, int argc, char **argv)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__ListSessions ls = ISERGW__CTL__LIST_SESSIONS__INIT;
	int rc = json_only_args(x, "sessions", argc, argv);

	if (rc)
		return rc;
	req.op_case = ISERGW__CTL__REQUEST__OP_LIST_SESSIONS;
	req.list_sessions = &ls;
	return run(x, &req, &sessions_view, NULL, 0);
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

static void counters_json(json_object *o, const struct shown *sh)
{
	const Isergw__Ctl__Counters *co = sh->rep->counters;
	const struct counters_sel *f = sh->sel;
	json_object *arr = json_object_new_array();

	if (f->ports) {
		for (size_t i = 0; i < co->n_ports; i++) {
			json_object *p = json_object_new_object();

			jset_u64(p, "rel_port_id", co->ports[i]->rel_port_id);
			jset_u64(p, "tpg_id", co->ports[i]->tpg_id);
			json_object_object_add(p, "stats", iostats_json(co->ports[i]->stats));
			json_object_array_add(arr, p);
		}
		json_object_object_add(o, "ports", arr);
		return;
	}
	if (f->groups) {
		for (size_t i = 0; i < co->n_groups; i++) {
			json_object *p = json_object_new_object();

			jset_str(p, "device_group", co->groups[i]->device_group);
			json_object_object_add(p, "stats", iostats_json(co->groups[i]->stats));
			json_object_array_add(arr, p);
		}
		json_object_object_add(o, "device_groups", arr);
		return;
	}
	for (size_t i = 0; i < co->n_luns; i++) {
		const Isergw__Ctl__LunCounters *l = co->luns[i];
		json_object *p;

		if (counters_skip(f, l))
			continue;
		p = json_object_new_object();
		jset_str(p, "target", l->target);
		jset_u64(p, "lun", l->lun);
		json_object_object_add(p, "stats", iostats_json(l->stats));
		json_object_array_add(arr, p);
	}
	json_object_object_add(o, "luns", arr);
}

static void counters_table(const struct shown *sh)
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

static const struct view counters_view = {
	ISERGW__CTL__REPLY__PAYLOAD_COUNTERS, NULL, false, counters_json, counters_table,
};

static int cmd_counters(struct ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "lun", required_argument, NULL, 'l' },
		{ "ports", no_argument, NULL, 'p' },
		{ "device-groups", no_argument, NULL, 'g' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__GetCounters gc = ISERGW__CTL__GET_COUNTERS__INIT;
	struct counters_sel f = { 0 };
	char tbuf[256], *slash;
	int opt, rc;

	optind = 1;
	while ((opt = next_opt(x, argc, argv, opts)) != -1) {
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
	if ((rc = no_more_args("counters", argc, argv)))
		return rc;
	if (f.ports + f.groups + (f.target != NULL) > 1)
		return usage_err("%s", "counters: one of --lun, --ports and --device-groups");
	gc.lun_latency = true;          /* every number of every LUN */
	req.op_case = ISERGW__CTL__REQUEST__OP_GET_COUNTERS;
	req.get_counters = &gc;
	return run(x, &req, &counters_view, &f, 0);
}

/* ------------------------------------------------------------ logout */

/* arg: the request, for whether the sessions were dropped or asked to log out */
static void logout_json(json_object *o, const struct shown *sh)
{
	const Isergw__Ctl__Logout *lo = sh->sel;

	jset_u64(o, "sessions", sh->rep->logout ? sh->rep->logout->sessions : 0);
	json_object_object_add(o, "immediate", json_object_new_boolean(lo->immediate));
}

static void logout_table(const struct shown *sh)
{
	const Isergw__Ctl__Logout *lo = sh->sel;

	printf("%u session(s) %s\n", sh->rep->logout ? sh->rep->logout->sessions : 0,
	       lo->immediate ? "dropped" : "asked to log out");
}

static const struct view logout_view = {
	ISERGW__CTL__REPLY__PAYLOAD__NOT_SET, NULL, false, logout_json, logout_table,
};

static int cmd_logout(struct ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tsih", required_argument, NULL, 't' },
		{ "initiator", required_argument, NULL, 'i' },
		{ "now", no_argument, NULL, 'n' },
		{ "grace", required_argument, NULL, 'g' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__Logout lo = ISERGW__CTL__LOGOUT__INIT;
	int opt, rc;

	optind = 1;
	while ((opt = next_opt(x, argc, argv, opts)) != -1) {
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
	if ((rc = no_more_args("logout", argc, argv)))
		return rc;
	req.op_case = ISERGW__CTL__REQUEST__OP_LOGOUT;
	req.logout = &lo;
	return run(x, &req, &logout_view, &lo, 0);
}

/* ------------------------------------------------------------ watch */

/* One request on its own connection; the reply (any status) or EXIT_CONNECT. */
static int call_raw(struct ctx *x, const CtlRequest *req, CtlReply **out)
{
	int rc;

	if (x->fd < 0 && (rc = ctl_connect(x)))
		return rc;
	if (ctl_send_request(x->fd, req) || ctl_recv_reply(x->fd, out, x->timeout_ms)) {
		fprintf(stderr, "isergwctl: no answer from %s\n", x->socket);
		close(x->fd);
		x->fd = -1;
		return EXIT_CONNECT;
	}
	return 0;
}

static int answer_request(struct ctx *ax, uint64_t id, int status, const char *reason)
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
	rc = call_raw(ax, &req, &rep);
	if (rc)
		return rc;
	if (rep->status)
		fprintf(stderr, "isergwctl: request %llu: answer refused: %s\n",
			(unsigned long long)id, rep->error);
	rc = rep->status ? EXIT_REFUSED : 0;
	ctl_reply_free(rep);
	return rc;
}

/*
 * The stand-in policy of --apply: the states the command asked for, the
 * groups' PREF kept, as the next epoch (retried when another writer took
 * that epoch first); -EAGAIN to the daemon when they cannot be set.
 */
static int apply_request(struct ctx *ax, const Isergw__Ctl__AluaChangeRequest *a)
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
		if ((rc = call_raw(ax, &req, &rep)))
			return rc;
		epoch = rep->status_info ? rep->status_info->epoch + 1 : 1;
		ctl_reply_free(rep);
		ga.device_group = a->device_group;
		req.op_case = ISERGW__CTL__REQUEST__OP_GET_ALUA_STATES;
		req.get_alua_states = &ga;
		if ((rc = call_raw(ax, &req, &cur)))
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
		if ((rc = call_raw(ax, &req, &rep)))
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

static void print_event(struct ctx *x, const Isergw__Ctl__Event *e)
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
				       alua_groups_json(a->groups, a->n_groups, false));
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
static const struct view subscribed_view = {
	ISERGW__CTL__REPLY__PAYLOAD_SUBSCRIBED, "subscribe", false, NULL, NULL,
};

static int cmd_watch(struct ctx *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "apply", no_argument, NULL, 'a' },
		{ "refuse", optional_argument, NULL, 'r' },
		{ "count", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__Subscribe sub = ISERGW__CTL__SUBSCRIBE__INIT;
	struct ctx ax = *x;
	const char *refuse = NULL;
	bool apply = false;
	uint64_t count = 0, seen = 0;
	CtlReply *rep;
	char err[256];
	int opt, rc;

	optind = 1;
	while ((opt = next_opt(x, argc, argv, opts)) != -1) {
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
	if ((rc = no_more_args("watch", argc, argv)))
		return rc;
	if (apply && refuse)
		return usage_err("%s", "watch: --apply or --refuse, not both");
	if (strlen(refuse ? refuse : "") > CTL_REASON_MAX)
		return usage_err("--refuse: a reason of at most %u bytes", CTL_REASON_MAX);
	req.op_case = ISERGW__CTL__REQUEST__OP_SUBSCRIBE;
	req.subscribe = &sub;
	if ((rc = call_view(x, &req, &subscribed_view, &rep, 0)))
		return rc;
	fprintf(stderr, "isergwctl: watching %s (ALUA policy %s, requests wait %u ms)%s\n",
		x->socket, rep->subscribed->alua_policy, rep->subscribed->alua_request_timeout_ms,
		apply ? ", applying ALUA change requests" : refuse ? ", refusing ALUA change requests"
								  : "");
	ctl_reply_free(rep);
	/* answers go on a connection of their own: this one only carries events */
	ax.fd = -1;
	ax.json = false;
	for (;;) {
		const Isergw__Ctl__Event *e;

		rc = ctl_recv_frame(x->fd, &rep, 0, err, sizeof(err));
		if (rc == -EBADMSG || rc == -EINVAL) {
			fprintf(stderr, "isergwctl: bad frame from %s skipped: %s\n", x->socket, err);
			continue;
		}
		if (rc) {
			fprintf(stderr, "isergwctl: %s: %s\n", x->socket,
				rc == -EPIPE || rc == -ENOTCONN ? "connection closed" : strerror(-rc));
			rc = EXIT_CONNECT;
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
	if (ax.fd >= 0)
		close(ax.fd);
	return rc;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "api", required_argument, NULL, 'A' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "cacert", required_argument, NULL, 'C' },
		{ "insecure", no_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctx x = { .socket = DEFAULT_SOCKET, .timeout_ms = 30000, .fd = -1 };
	struct isergwctl_rest_opts ro = { 0 };
	bool rest_opt = false;
	const char *cmd;
	uint32_t tmo;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "+s:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			x.socket = optarg;
			break;
		case 'j':
			x.json = true;
			break;
		case 't':
			if (isergwctl_parse_u32(optarg, 86400, &tmo) || tmo == 0)
				return usage_err("--timeout wants 1..86400 seconds, not '%s'", optarg);
			x.timeout_ms = (int)tmo * 1000;
			break;
		case 'A':
			ro.api = optarg;
			rest_opt = true;
			break;
		case 'T':
			ro.token_file = optarg;
			rest_opt = true;
			break;
		case 'C':
			ro.cacert = optarg;
			rest_opt = true;
			break;
		case 'I':
			ro.insecure = true;
			rest_opt = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("isergwctl %s\n", ISERGW_VERSION);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	if (isergwctl_rest_noun(cmd)) {
		ro.json = x.json;
		ro.timeout_ms = x.timeout_ms;
		return isergwctl_rest(argc, argv, &ro);
	}
	if (rest_opt)
		return usage_err("--api, --token-file, --cacert and --insecure go with the REST "
				 "commands (target, lun, node, device-group, config, api), not '%s'", cmd);
	if (strcmp(cmd, "status") == 0)
		rc = cmd_status(&x, argc, argv);
	else if (strcmp(cmd, "apply") == 0)
		rc = cmd_apply(&x, argc, argv);
	else if (strcmp(cmd, "reload") == 0)
		rc = cmd_reload(&x, argc, argv);
	else if (strcmp(cmd, "alua") == 0 && argc > 1 && strcmp(argv[1], "set") == 0)
		rc = cmd_alua_set(&x, argc - 1, argv + 1);
	else if (strcmp(cmd, "alua") == 0 && argc > 1 && strcmp(argv[1], "show") == 0)
		rc = cmd_alua_show(&x, argc - 1, argv + 1);
	else if (strcmp(cmd, "alua") == 0 && argc > 1 && strcmp(argv[1], "map") == 0)
		rc = cmd_alua_map(&x, argc - 1, argv + 1);
	else if (strcmp(cmd, "alua") == 0)
		rc = usage_err("%s", "alua needs 'set', 'map' or 'show'");
	else if (strcmp(cmd, "lease") == 0)
		rc = cmd_lease(&x, argc, argv);
	else if (strcmp(cmd, "sessions") == 0)
		rc = cmd_sessions(&x, argc, argv);
	else if (strcmp(cmd, "counters") == 0)
		rc = cmd_counters(&x, argc, argv);
	else if (strcmp(cmd, "logout") == 0)
		rc = cmd_logout(&x, argc, argv);
	else if (strcmp(cmd, "watch") == 0)
		rc = cmd_watch(&x, argc, argv);
	else if (strcmp(cmd, "cluster") == 0)
		rc = isergwctl_cluster(argc, argv, x.json, x.timeout_ms);
	else if (strcmp(cmd, "help") == 0 && argc > 1 && isergwctl_rest_noun(argv[1])) {
		isergwctl_rest_usage(stdout);
		rc = 0;
	} else if (strcmp(cmd, "help") == 0) {
		usage(stdout);
		rc = 0;
	} else
		rc = usage_err("unknown command '%s'", cmd);
	if (x.fd >= 0)
		close(x.fd);
	return rc;
}
