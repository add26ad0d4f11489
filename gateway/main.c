/* SPDX-License-Identifier: Apache-2.0 */
/* isergwd: the isergw data-plane daemon. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/iscsi.h"
#include "ctl/ctl.h"
#include "ctl_wire.h"
#include "config/config.h"
#include "common/daemon.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/notify.h"

#define COMP "main"
#define DEFAULT_IQN "iqn.2026-11.org.isergw:default"
#define DEFAULT_PORTAL "tcp://127.0.0.1:3260"
#define DEFAULT_LUN_SIZE (1ull << 30)
#define MAX_CLI_ITEMS 64

static void usage(FILE *f)
{
	fprintf(f,
"Usage: isergwd [OPTIONS]\n"
"Serve SCSI block LUNs over iSCSI (TCP) and iSER.\n"
"\n"
"Quick serve (no configuration file):\n"
"  --portal URL          listen on tcp://ADDR[:PORT] (repeatable; default " DEFAULT_PORTAL ")\n"
"  --target IQN          target name (default " DEFAULT_IQN ")\n"
"  --lun PATH            file or block device; LUNs are numbered 0,1,... in order\n"
"                        (repeatable; default STATE_DIR/default-lun.img)\n"
"  --size SIZE           create missing LUN files sparse with this size (e.g. 1G;\n"
"                        default 1G for the default LUN)\n"
"  --block-size N        logical block size of the LUNs: 512 or 4096 (default 512)\n"
"  --acl IQN             admit only these initiators (repeatable; default: any)\n"
"  --chap-user U, --chap-secret S\n"
"                        require CHAP from initiators\n"
"  --mutual-user U, --mutual-secret S\n"
"                        credentials the target answers mutual CHAP with\n"
"\n"
"Full configuration:\n"
"  -c, --config FILE     JSON configuration (see docs/configuration.md)\n"
"\n"
"Managed (a node of the HA agent, isergw-ha):\n"
"  --managed             start with no portal and no target, the ALUA lease\n"
"                        enforced (alua_lease true: every target port group\n"
"                        Unavailable until the agent gives a lease) and the\n"
"                        external ALUA policy, and wait for the configuration\n"
"                        over the control socket (ApplyConfig); every document\n"
"                        applied keeps alua_lease true and alua_policy external.\n"
"                        Not with --config or the quick-serve options\n"
"\n"
"Common:\n"
"  --reactors N          reactor threads (default: one per CPU)\n"
"  --log-level LEVEL     err, warn, notice, info or debug (default notice)\n"
"  --state-dir DIR       durable state: reservations, default LUN (default /var/lib/isergw)\n"
"  --ctl-socket PATH     control socket (default /run/isergw/isergwd.sock)\n"
"  --login-timeout S     seconds a login may take (default 15)\n"
"  --check-config        validate the configuration, print it and exit\n"
"  --reload              check --config, then ask the isergwd running on its\n"
"                        ctl_socket (or --ctl-socket) to re-read it, as SIGHUP\n"
"                        does, and wait: exit 0 once applied, 1 when refused (the\n"
"                        configuration running stays); the unit's ExecReload=\n"
"  -h, --help            this help\n"
"  -V, --version         print the version\n"
"\n"
"Signals: SIGTERM/SIGINT shut down cleanly (initiators are asked to log out,\n"
"data is flushed); SIGHUP re-reads the configuration file.\n"
"\n"
"Exit status: 0 stopped cleanly, 78 (EX_CONFIG) the configuration is refused (an\n"
"option, the file, a LUN path, a portal's port in use by another program: logged\n"
"at err; the unit does not restart), 1 another failure.\n");
}

static void sighup(void *arg);

static struct gw_daemon daemon_gw = {
	.name = "isergwd", .usage = usage, .stop_what = "shutting down", .hup = sighup,
};

enum {
	OPT_PORTAL = 256, OPT_TARGET, OPT_LUN, OPT_SIZE, OPT_BLOCK_SIZE, OPT_ACL, OPT_CHAP_USER,
	OPT_CHAP_SECRET, OPT_MUTUAL_USER, OPT_MUTUAL_SECRET, OPT_REACTORS, OPT_LOG_LEVEL,
	OPT_STATE_DIR, OPT_CTL_SOCKET, OPT_LOGIN_TIMEOUT, OPT_CHECK, OPT_MANAGED, OPT_RELOAD,
};

static const struct option long_opts[] = {
	{ "portal", required_argument, NULL, OPT_PORTAL },
	{ "target", required_argument, NULL, OPT_TARGET },
	{ "lun", required_argument, NULL, OPT_LUN },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
	{ "acl", required_argument, NULL, OPT_ACL },
	{ "chap-user", required_argument, NULL, OPT_CHAP_USER },
	{ "chap-secret", required_argument, NULL, OPT_CHAP_SECRET },
	{ "mutual-user", required_argument, NULL, OPT_MUTUAL_USER },
	{ "mutual-secret", required_argument, NULL, OPT_MUTUAL_SECRET },
	{ "config", required_argument, NULL, 'c' },
	{ "reactors", required_argument, NULL, OPT_REACTORS },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "ctl-socket", required_argument, NULL, OPT_CTL_SOCKET },
	{ "login-timeout", required_argument, NULL, OPT_LOGIN_TIMEOUT },
	{ "check-config", no_argument, NULL, OPT_CHECK },
	{ "managed", no_argument, NULL, OPT_MANAGED },
	{ "reload", no_argument, NULL, OPT_RELOAD },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct cli {
	const char *portals[MAX_CLI_ITEMS];
	size_t nportals;
	const char *luns[MAX_CLI_ITEMS];
	size_t nluns;
	const char *acls[MAX_CLI_ITEMS];
	size_t nacls;
	const char *target;
	const char *config;
	const char *chap_user, *chap_secret, *mutual_user, *mutual_secret;
	const char *log_level, *state_dir, *ctl_socket;
	uint64_t size;
	bool size_set;
	uint32_t block_size;
	uint32_t reactors;
	bool reactors_set;
	uint32_t login_timeout;
	bool login_timeout_set;
	bool check;
	bool managed;           /* the HA agent's node: configured over the control socket */
	bool reload;            /* --reload: ask the running daemon to re-read its file */
};

static int copy_str(char *dst, size_t len, const char *src, const char *what)
{
	if (strlen(src) >= len) {
		GW_CFGERR("isergwd: %s too long (max %zu bytes)", what, len - 1);
		return -EINVAL;
	}
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

static int add_item(const char **arr, size_t *n, const char *v, const char *what)
{
	if (*n >= MAX_CLI_ITEMS) {
		GW_CFGERR("isergwd: too many %s (max %d)", what, MAX_CLI_ITEMS);
		return -EINVAL;
	}
	arr[(*n)++] = v;
	return 0;
}

/* Build the configuration of the quick-serve command line. */
static int build_quick_config(const struct cli *cli, struct gw_config *cfg)
{
	struct gw_target_cfg *t;
	size_t nportals = cli->nportals ? cli->nportals : 1;
	size_t nluns = cli->nluns ? cli->nluns : 1;
	int rc;

	cfg->portals = calloc(nportals, sizeof(*cfg->portals));
	cfg->targets = calloc(1, sizeof(*cfg->targets));
	if (!cfg->portals || !cfg->targets)
		return -ENOMEM;
	for (size_t i = 0; i < nportals; i++) {
		const char *url = cli->nportals ? cli->portals[i] : DEFAULT_PORTAL;

		gw_portal_defaults(&cfg->portals[i]);
		rc = gw_portal_parse(url, &cfg->portals[i]);
		if (rc) {
			GW_CFGERR("isergwd: bad --portal '%s' (want tcp://ADDR[:PORT] or "
				"iser://ADDR[:PORT])", url);
			return rc;
		}
		cfg->portals[i].rel_port_id = (uint16_t)(i + 1);
	}
	cfg->nportals = nportals;
	cfg->ntargets = 1;
	t = &cfg->targets[0];
	gw_target_defaults(t);
	rc = copy_str(t->iqn, sizeof(t->iqn), cli->target ? cli->target : DEFAULT_IQN, "--target");
	if (rc)
		return rc;
	t->luns = calloc(nluns, sizeof(*t->luns));
	if (!t->luns)
		return -ENOMEM;
	t->nluns = nluns;
	for (size_t i = 0; i < nluns; i++) {
		struct gw_lun_cfg *l = &t->luns[i];

		gw_lun_defaults(l);
		l->lun = (uint32_t)i;
		if (cli->nluns) {
			rc = copy_str(l->path, sizeof(l->path), cli->luns[i], "--lun");
			l->size = cli->size_set ? cli->size : 0;
		} else {
			int n = snprintf(l->path, sizeof(l->path), "%s/default-lun.img", cfg->state_dir);

			rc = n < 0 || (size_t)n >= sizeof(l->path) ? -ENAMETOOLONG : 0;
			l->size = cli->size_set ? cli->size : DEFAULT_LUN_SIZE;
		}
		if (rc)
			return rc;
		if (cli->block_size)
			l->block_size = cli->block_size;
	}
	if (cli->nacls) {
		t->acls = calloc(cli->nacls, sizeof(*t->acls));
		if (!t->acls)
			return -ENOMEM;
		t->nacls = cli->nacls;
		for (size_t i = 0; i < cli->nacls; i++) {
			rc = copy_str(t->acls[i].initiator, sizeof(t->acls[i].initiator),
				      cli->acls[i], "--acl");
			if (rc)
				return rc;
		}
	}
	if ((cli->chap_user != NULL) != (cli->chap_secret != NULL) ||
	    (cli->mutual_user != NULL) != (cli->mutual_secret != NULL)) {
		GW_CFGERR("isergwd: CHAP needs both a user and a secret");
		return -EINVAL;
	}
	if (cli->mutual_user && !cli->chap_user) {
		GW_CFGERR("isergwd: mutual CHAP needs --chap-user/--chap-secret too");
		return -EINVAL;
	}
	if (cli->chap_user) {
		rc = copy_str(t->chap.user, sizeof(t->chap.user), cli->chap_user, "--chap-user");
		rc = rc ? rc : copy_str(t->chap.secret, sizeof(t->chap.secret), cli->chap_secret,
					"--chap-secret");
		if (rc)
			return rc;
	}
	if (cli->mutual_user) {
		rc = copy_str(t->mutual_chap.user, sizeof(t->mutual_chap.user), cli->mutual_user,
			      "--mutual-user");
		rc = rc ? rc : copy_str(t->mutual_chap.secret, sizeof(t->mutual_chap.secret),
					cli->mutual_secret, "--mutual-secret");
		if (rc)
			return rc;
	}
	return 0;
}

/* An option's whole number in [min, max]; otherwise -EINVAL and the log line says why. */
static int parse_u32_in(const char *arg, uint32_t *v, uint32_t min, uint32_t max, const char *why)
{
	if (gw_parse_u32(arg, v) || *v < min || *v > max) {
		GW_CFGERR("isergwd: %s", why);
		return -EINVAL;
	}
	return 0;
}

static int parse_cli(int argc, char **argv, struct cli *cli)
{
	int opt;

	memset(cli, 0, sizeof(*cli));
	opterr = 0; /* getopt's own message would not reach the journal as an error */
	while ((opt = getopt_long(argc, argv, "c:hV", long_opts, NULL)) != -1) {
		int rc = 0;

		switch (opt) {
		case OPT_PORTAL: rc = add_item(cli->portals, &cli->nportals, optarg, "--portal"); break;
		case OPT_LUN: rc = add_item(cli->luns, &cli->nluns, optarg, "--lun"); break;
		case OPT_ACL: rc = add_item(cli->acls, &cli->nacls, optarg, "--acl"); break;
		case OPT_TARGET: cli->target = optarg; break;
		case 'c': cli->config = optarg; break;
		case OPT_CHAP_USER: cli->chap_user = optarg; break;
		case OPT_CHAP_SECRET: cli->chap_secret = optarg; break;
		case OPT_MUTUAL_USER: cli->mutual_user = optarg; break;
		case OPT_MUTUAL_SECRET: cli->mutual_secret = optarg; break;
		case OPT_LOG_LEVEL: cli->log_level = optarg; break;
		case OPT_STATE_DIR: cli->state_dir = optarg; break;
		case OPT_CTL_SOCKET: cli->ctl_socket = optarg; break;
		case OPT_CHECK: cli->check = true; break;
		case OPT_MANAGED: cli->managed = true; break;
		case OPT_RELOAD: cli->reload = true; break;
		case OPT_SIZE:
			rc = gw_parse_size(optarg, &cli->size);
			cli->size_set = true;
			if (rc)
				GW_CFGERR("isergwd: bad --size '%s'", optarg);
			break;
		case OPT_BLOCK_SIZE:
			rc = gw_parse_u32(optarg, &cli->block_size);
			if (rc || (cli->block_size != 512 && cli->block_size != 4096)) {
				GW_CFGERR("isergwd: --block-size must be 512 or 4096");
				rc = -EINVAL;
			}
			break;
		case OPT_REACTORS:
			rc = parse_u32_in(optarg, &cli->reactors, 1, 256,
					  "--reactors must be 1..256");
			cli->reactors_set = true;
			break;
		case OPT_LOGIN_TIMEOUT:
			rc = parse_u32_in(optarg, &cli->login_timeout, 1, 3600,
					  "--login-timeout must be 1..3600 seconds");
			cli->login_timeout_set = true;
			break;
		case 'h':
			gw_daemon_help(&daemon_gw);
		case 'V':
			gw_daemon_version(&daemon_gw);
		default:
			gw_opt_refused("isergwd", argv, optind, optopt);
			return -EINVAL;
		}
		if (rc)
			return rc;
	}
	if (gw_daemon_no_operands(&daemon_gw, argc, argv))
		return -EINVAL;
	if (cli->config && (cli->nportals || cli->nluns || cli->target || cli->nacls ||
			    cli->chap_user || cli->mutual_user || cli->size_set)) {
		GW_CFGERR("isergwd: --config cannot be combined with quick-serve options");
		return -EINVAL;
	}
	if (cli->managed && (cli->config || cli->nportals || cli->nluns || cli->target ||
			     cli->nacls || cli->chap_user || cli->mutual_user || cli->size_set ||
			     cli->block_size)) {
		GW_CFGERR("isergwd: --managed takes its configuration from the control socket: "
			"not with --config or quick-serve options");
		return -EINVAL;
	}
	return 0;
}

/* What a managed node always has, whatever the document says. */
static void managed_settings(struct gw_config *cfg)
{
	cfg->alua_lease = true;
	cfg->alua_policy_external = true;
}

static int override_str(char *dst, size_t len, const char *src, const char *what, char *err,
			size_t errlen)
{
	if (strlen(src) >= len) {
		snprintf(err, errlen, "%s too long (max %zu bytes)", what, len - 1);
		return -EINVAL;
	}
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/*
 * The command-line settings that override a configuration document (file,
 * SIGHUP re-read or the control socket's ApplyConfig), then derived defaults
 * and the cross-field checks.
 */
static int finish_config(const struct cli *cli, struct gw_config *cfg, bool from_doc, char *err,
			 size_t errlen)
{
	char verr[512];
	int rc = 0;

	if (from_doc && cli->state_dir)
		rc = override_str(cfg->state_dir, sizeof(cfg->state_dir), cli->state_dir,
				  "--state-dir", err, errlen);
	if (!rc && cli->ctl_socket)
		rc = override_str(cfg->ctl_socket, sizeof(cfg->ctl_socket), cli->ctl_socket,
				  "--ctl-socket", err, errlen);
	if (!rc && cli->log_level)
		rc = override_str(cfg->log_level, sizeof(cfg->log_level), cli->log_level,
				  "--log-level", err, errlen);
	if (rc)
		return rc;
	if (cli->reactors_set)
		cfg->reactors = cli->reactors;
	if (cli->login_timeout_set)
		cfg->login_timeout_s = cli->login_timeout;
	if (cli->managed)
		managed_settings(cfg);
	gw_config_finalize(cfg);
	rc = gw_config_validate(cfg, verr, sizeof(verr));
	/*
	 * One store, one LUN, by the text and by what this node's file system
	 * says. Not on a managed node: the HA agent refuses new configurations
	 * with two LUNs on one store, and one it keeps (made before the check)
	 * refused as a whole here would leave this node on an old generation,
	 * serving nothing; the second LUN is left out when it is opened.
	 */
	if (!rc && !cli->managed)
		rc = gw_config_check_stores(cfg, verr, sizeof(verr));
	if (!rc && !cli->managed)
		rc = gw_config_check_files(cfg, verr, sizeof(verr));
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	else if (rc)
		snprintf(err, errlen, "invalid configuration: %s", verr);
	return rc;
}

/*
 * The configuration of the command line: the file's (--config) or the quick
 * serve's. 0, or a negative errno with the reason in err (naming the file),
 * or already printed when err stays empty (a quick-serve option).
 */
static int load_config(const struct cli *cli, struct gw_config **out, char *err, size_t errlen)
{
	struct gw_config *cfg;
	int rc;

	err[0] = '\0';
	if (cli->config) {
		rc = gw_config_load_file(cli->config, &cfg, err, errlen);
		if (rc) {
			if (!err[0])
				snprintf(err, errlen, "%s: %s", cli->config, strerror(-rc));
			return rc;
		}
	} else {
		cfg = calloc(1, sizeof(*cfg));
		if (!cfg)
			return -ENOMEM;
		gw_config_defaults(cfg);
		if (cli->state_dir && (rc = copy_str(cfg->state_dir, sizeof(cfg->state_dir),
						     cli->state_dir, "--state-dir")))
			goto err_free;
		/* managed: nothing to serve until the HA agent applies a configuration */
		rc = cli->managed ? 0 : build_quick_config(cli, cfg);
		if (rc)
			goto err_free;
	}
	rc = finish_config(cli, cfg, cli->config != NULL, err, errlen);
	if (rc)
		goto err_free;
	*out = cfg;
	return 0;

err_free:
	gw_config_free(cfg);
	return rc;
}

/* SIGHUP and ReloadConfig: the file again (-EOPNOTSUPP without one). */
static int ctl_load_file(void *arg, struct gw_config **out, char *err, size_t errlen)
{
	const struct cli *cli = arg;

	if (!cli->config) {
		snprintf(err, errlen, "no configuration file to re-read (%s)", cli->managed ?
			 "managed: isergw-ha applies the configuration" :
			 "quick serve: changed options need a restart");
		return -EOPNOTSUPP;
	}
	return load_config(cli, out, err, errlen);
}

/*
 * ApplyConfig of the control socket: the document as if it were the file;
 * on a managed node, over the managed settings (so that a document without
 * portals or targets is fine there too).
 */
static int ctl_load(void *arg, const char *json, struct gw_config **out, char *err, size_t errlen)
{
	const struct cli *cli = arg;
	struct gw_config *cfg, base;
	int rc;

	gw_config_defaults(&base);
	if (cli->managed)
		managed_settings(&base);
	rc = gw_config_load_string_base(json, &base, &cfg, err, errlen);
	if (rc)
		return rc;
	rc = finish_config(arg, cfg, true, err, errlen);
	if (rc) {
		gw_config_free(cfg);
		return rc;
	}
	*out = cfg;
	return 0;
}

/* A failed start whose cause an administrator must change: no restart helps. */
static bool start_error_is_config(int rc)
{
	switch (rc) {
	case -EADDRINUSE:       /* a portal's port or the control socket held by another */
	case -EINVAL:
	case -ENOENT:           /* a LUN file without a size, a directory that is not there */
	case -ENOTDIR:
	case -EISDIR:
	case -EACCES:
	case -EPERM:
	case -ENAMETOOLONG:
	case -EPROTONOSUPPORT:  /* a transport this build lacks */
	case -EEXIST:           /* the control socket's path is no socket */
		return true;
	default:
		return false;
	}
}

/*
 * isergwd --reload: what the unit's ExecReload= runs. The daemon re-reads
 * its file and answers once it is applied or refused; the exit status says
 * which (0, or 1 with the reason; the daemon logged it at err). The control
 * socket: --ctl-socket, else the file's ctl_socket. A file that cannot be
 * read or is invalid is refused here already (at err, in the unit's log as
 * the daemon's would be): the daemon is not asked and keeps what it runs.
 */
static int reload_client(const struct cli *cli)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__ReloadConfig rl = ISERGW__CTL__RELOAD_CONFIG__INIT;
	struct gw_config base, *cfg = NULL;
	char path[sizeof(base.ctl_socket)], err[600] = "";
	CtlReply *rep = NULL;
	int fd, rc;

	gw_config_defaults(&base);
	snprintf(path, sizeof(path), "%s", base.ctl_socket);
	if (cli->config) {
		rc = load_config(cli, &cfg, err, sizeof(err));
		if (rc) {
			GW_CFGERR("isergwd: reload failed: configuration kept as it was: %s",
				  err[0] ? err : strerror(-rc));
			return 1;
		}
		snprintf(path, sizeof(path), "%s", cfg->ctl_socket);
		gw_config_free(cfg);
	}
	if (cli->ctl_socket)
		snprintf(path, sizeof(path), "%s", cli->ctl_socket);
	fd = gw_unix_connect(path);
	if (fd < 0) {
		GW_CFGERR("isergwd: --reload: cannot connect to %s: %s (is isergwd running?)", path,
			  strerror(-fd));
		return 1;
	}
	req.op_case = ISERGW__CTL__REQUEST__OP_RELOAD_CONFIG;
	req.reload_config = &rl;
	rc = ctl_send_request(fd, &req);
	if (!rc)
		rc = ctl_recv_reply(fd, &rep, 0);
	close(fd);
	if (rc) {
		GW_CFGERR("isergwd: --reload: %s: %s", path, strerror(-rc));
		return 1;
	}
	rc = rep->status;
	if (rc == -EOPNOTSUPP) {
		printf("isergwd: nothing to reload: %s\n", rep->error);
		rc = 0;
	} else if (rc) {
		/* the daemon logged it at err: here a notice only, not the same error twice */
		gw_log_plain(GW_LOG_NOTICE, "isergwd: reload failed: %s", rep->error);
	} else if (rep->payload_case == ISERGW__CTL__REPLY__PAYLOAD_APPLY) {
		printf("isergwd: configuration reloaded: %u portal(s), %u target(s)\n",
		       rep->apply->portals, rep->apply->targets);
	}
	ctl_reply_free(rep);
	return rc ? 1 : 0;
}

/* SIGHUP: the configuration file again (logged and told to the service manager there). */
static void sighup(void *arg)
{
	struct gw_ctl *ctl = *(struct gw_ctl **)arg;
	char err[600];

	(void)gw_ctl_reload_file(ctl, err, sizeof(err));
}

int main(int argc, char **argv)
{
	struct gw_ctl_params ctl_params = { 0 };
	struct gw_config *cfg = NULL;
	struct gw_ctl *ctl = NULL;
	struct gw *gw = NULL;
	char err[600];
	struct cli cli;
	int rc;

	if (parse_cli(argc, argv, &cli))
		return GW_EXIT_CONFIG;
	if (cli.reload)
		return reload_client(&cli);
	rc = load_config(&cli, &cfg, err, sizeof(err));
	if (rc) {
		if (err[0])
			GW_CFGERR("isergwd: %s", err);
		return rc == -ENOMEM ? 1 : GW_EXIT_CONFIG;
	}
	if (gw_daemon_check_log_level(&daemon_gw, cfg->log_level)) {
		gw_config_free(cfg);
		return GW_EXIT_CONFIG;
	}
	gw_daemon_set_log_level(cfg->log_level);
	if (cli.check) {
		printf("configuration OK: %zu portal(s), %zu target(s)\n", cfg->nportals, cfg->ntargets);
		gw_config_free(cfg);
		return 0;
	}

	/* signals are taken by the main thread only, on its reactor: blocked in every thread */
	daemon_gw.arg = &ctl;
	if (gw_daemon_start(&daemon_gw)) {
		gw_config_free(cfg);
		return 1;
	}

	GW_NOTICE(COMP, "isergwd %s starting%s", ISERGW_VERSION,
		  cli.managed ? " managed: waiting for the configuration on the control socket" : "");
	rc = gw_start(cfg, &gw); /* on success gw owns cfg */
	if (rc) {
		gw_config_free(cfg);
		gw_daemon_fini(&daemon_gw);
		if (start_error_is_config(rc)) {
			/* the error itself was logged at err where it happened */
			GW_NOTICE(COMP, "start-up failed (%s): the error above says what to change; "
				  "exit status %d", strerror(-rc), GW_EXIT_CONFIG);
			return GW_EXIT_CONFIG;
		}
		GW_ERR(COMP, "start-up failed: %s", strerror(-rc));
		return 1;
	}
	ctl_params.path = cfg->ctl_socket;
	ctl_params.load = ctl_load;
	ctl_params.load_file = ctl_load_file;
	ctl_params.config_path = cli.config;
	ctl_params.load_arg = &cli;
	rc = gw_ctl_start(gw, &ctl_params, &ctl);
	if (rc) {
		bool config = start_error_is_config(rc);

		gw_log(config ? GW_LOG_NOTICE : GW_LOG_ERR, COMP, "start-up failed: control socket "
		       "%s: %s", cfg->ctl_socket, strerror(-rc));
		gw_shutdown(gw, 0);
		gw_destroy(gw);
		gw_daemon_fini(&daemon_gw);
		return config ? GW_EXIT_CONFIG : 1;
	}
	/* the portals listen (gw_start) and the control socket answers: serving */
	gw_notify_ready("serving %zu portal(s), %zu target(s)%s", cfg->nportals, cfg->ntargets,
			cli.managed ? " (managed: configured by isergw-ha)" : "");
	/* until SIGTERM or SIGINT; SIGHUP re-reads the file meanwhile */
	gw_daemon_run(&daemon_gw);
	gw_ctl_stop(ctl);
	gw_shutdown(gw, 3000);
	gw_destroy(gw); /* frees the configuration it owns */
	gw_daemon_fini(&daemon_gw);
	GW_NOTICE(COMP, "stopped");
	return 0;
}
