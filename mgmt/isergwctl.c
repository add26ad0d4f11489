/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl: the operator's command line for isergwd's control socket
 * (docs/control.md). Human-readable tables by default, --json for scripts.
 * This file owns the usage, the options before the command and the
 * dispatch to the command groups: the control socket's commands
 * (isergwctl_ctl.c, isergwctl_alua.c), 'cluster' (isergwctl_cluster.c) and
 * the REST commands (isergwctl_rest.c).
 *
 * Exit codes: 0 done, 1 refused by the daemon (the reason is printed),
 * 2 usage error, 3 cannot talk to the daemon; the REST commands
 * (isergwctl_rest.c: target, lun, node, device-group, config, api) also 4,
 * 5 and 6 (isergwctl.h).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "isergwctl.h"
#include "isergwctl_ctl.h"

#define DEFAULT_SOCKET "/run/isergw/isergwd.sock"

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

/* "isergwctl: MESSAGE" and the hint on stderr; ISERGWCTL_EXIT_USAGE. */
#define usage_err(...) isergwctl_usage_err(NULL, __VA_ARGS__)


/* ------------------------------------------------------------ main */

/* The control socket's commands: WORD [SUB], run with argv[0] the last word. */
static const struct {
	const char *word, *sub;
	int (*run)(struct isergwctl_ctx *x, int argc, char **argv);
} ctl_cmds[] = {
	{ "status", NULL, isergwctl_cmd_plain },
	{ "apply", NULL, isergwctl_cmd_apply },
	{ "reload", NULL, isergwctl_cmd_plain },
	{ "alua", "set", isergwctl_cmd_alua_set },
	{ "alua", "show", isergwctl_cmd_alua_show },
	{ "alua", "map", isergwctl_cmd_alua_map },
	{ "lease", NULL, isergwctl_cmd_lease },
	{ "sessions", NULL, isergwctl_cmd_plain },
	{ "counters", NULL, isergwctl_cmd_counters },
	{ "logout", NULL, isergwctl_cmd_logout },
	{ "watch", NULL, isergwctl_cmd_watch },
};

/* Command argv[0] other than the REST commands: its exit status. */
static int command(struct isergwctl_ctx *x, int argc, char **argv)
{
	const char *cmd = argv[0];

	for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++) {
		size_t sub = ctl_cmds[i].sub != NULL;

		if (strcmp(ctl_cmds[i].word, cmd) == 0 &&
		    (!sub || (argc > 1 && strcmp(ctl_cmds[i].sub, argv[1]) == 0)))
			return ctl_cmds[i].run(x, argc - (int)sub, argv + sub);
	}
	if (strcmp(cmd, "alua") == 0)
		return usage_err("%s", "alua needs 'set', 'map' or 'show'");
	if (strcmp(cmd, "cluster") == 0)
		return isergwctl_cluster(argc, argv, x->json, x->timeout_ms);
	if (strcmp(cmd, "help") == 0 && argc > 1 && isergwctl_rest_noun(argv[1])) {
		isergwctl_rest_usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	}
	return usage_err("unknown command '%s'", cmd);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		ISERGWCTL_OPT_JSON,
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "api", required_argument, NULL, 'A' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "cacert", required_argument, NULL, 'C' },
		{ "insecure", no_argument, NULL, 'I' },
		ISERGWCTL_OPT_END,
	};
	struct isergwctl_ctx x = {
		.peer = { .path = DEFAULT_SOCKET, .fd = -1, .reply_max = CTL_REPLY_FRAME_MAX },
		.timeout_ms = 30000,
	};
	struct isergwctl_rest_opts ro = { 0 };
	bool rest_opt = false;
	const char *cmd;
	uint32_t tmo;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "+s:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			x.peer.path = optarg;
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
			break;
		case 'T':
			ro.token_file = optarg;
			break;
		case 'C':
			ro.cacert = optarg;
			break;
		case 'I':
			ro.insecure = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("isergwctl %s\n", ISERGW_VERSION);
			return 0;
		default:
			usage(stderr);
			return ISERGWCTL_EXIT_USAGE;
		}
		rest_opt |= opt == 'A' || opt == 'T' || opt == 'C' || opt == 'I';
	}
	if (optind >= argc) {
		usage(stderr);
		return ISERGWCTL_EXIT_USAGE;
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
	rc = command(&x, argc, argv);
	isergwctl_peer_close(&x.peer);
	return rc;
}
