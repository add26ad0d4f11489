/* SPDX-License-Identifier: Apache-2.0 */
/* isergwd: the isergw data-plane daemon. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/iscsi.h"
#include "ctl/ctl.h"
#include "util/config.h"
#include "util/log.h"
#include "util/notify.h"

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
"  -h, --help            this help\n"
"  -V, --version         print the version\n"
"\n"
"Signals: SIGTERM/SIGINT shut down cleanly (initiators are asked to log out,\n"
"data is flushed); SIGHUP re-reads the configuration file.\n");
}

enum {
	OPT_PORTAL = 256, OPT_TARGET, OPT_LUN, OPT_SIZE, OPT_BLOCK_SIZE, OPT_ACL, OPT_CHAP_USER,
	OPT_CHAP_SECRET, OPT_MUTUAL_USER, OPT_MUTUAL_SECRET, OPT_REACTORS, OPT_LOG_LEVEL,
	OPT_STATE_DIR, OPT_CTL_SOCKET, OPT_LOGIN_TIMEOUT, OPT_CHECK, OPT_MANAGED,
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
};

static int copy_str(char *dst, size_t len, const char *src, const char *what)
{
	if (strlen(src) >= len) {
		fprintf(stderr, "isergwd: %s too long (max %zu bytes)\n", what, len - 1);
		return -EINVAL;
	}
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

static int add_item(const char **arr, size_t *n, const char *v, const char *what)
{
	if (*n >= MAX_CLI_ITEMS) {
		fprintf(stderr, "isergwd: too many %s (max %d)\n", what, MAX_CLI_ITEMS);
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
			fprintf(stderr, "isergwd: bad --portal '%s' (want tcp://ADDR[:PORT] or "
				"iser://ADDR[:PORT])\n", url);
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
		fprintf(stderr, "isergwd: CHAP needs both a user and a secret\n");
		return -EINVAL;
	}
	if (cli->mutual_user && !cli->chap_user) {
		fprintf(stderr, "isergwd: mutual CHAP needs --chap-user/--chap-secret too\n");
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

static int parse_cli(int argc, char **argv, struct cli *cli)
{
	int opt;

	memset(cli, 0, sizeof(*cli));
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
		case OPT_SIZE:
			rc = gw_parse_size(optarg, &cli->size);
			cli->size_set = true;
			if (rc)
				fprintf(stderr, "isergwd: bad --size '%s'\n", optarg);
			break;
		case OPT_BLOCK_SIZE:
			rc = gw_parse_u32(optarg, &cli->block_size);
			if (rc || (cli->block_size != 512 && cli->block_size != 4096)) {
				fprintf(stderr, "isergwd: --block-size must be 512 or 4096\n");
				rc = -EINVAL;
			}
			break;
		case OPT_REACTORS:
			rc = gw_parse_u32(optarg, &cli->reactors);
			if (rc || cli->reactors == 0 || cli->reactors > 256) {
				fprintf(stderr, "isergwd: --reactors must be 1..256\n");
				rc = -EINVAL;
			}
			cli->reactors_set = true;
			break;
		case OPT_LOGIN_TIMEOUT:
			rc = gw_parse_u32(optarg, &cli->login_timeout);
			if (rc || cli->login_timeout == 0 || cli->login_timeout > 3600) {
				fprintf(stderr, "isergwd: --login-timeout must be 1..3600 seconds\n");
				rc = -EINVAL;
			}
			cli->login_timeout_set = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("isergwd %s\n", ISERGW_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
		if (rc)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "isergwd: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (cli->config && (cli->nportals || cli->nluns || cli->target || cli->nacls ||
			    cli->chap_user || cli->mutual_user || cli->size_set)) {
		fprintf(stderr, "isergwd: --config cannot be combined with quick-serve options\n");
		return -EINVAL;
	}
	if (cli->managed && (cli->config || cli->nportals || cli->nluns || cli->target ||
			     cli->nacls || cli->chap_user || cli->mutual_user || cli->size_set ||
			     cli->block_size)) {
		fprintf(stderr, "isergwd: --managed takes its configuration from the control socket: "
			"not with --config or quick-serve options\n");
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

static int load_config(const struct cli *cli, struct gw_config **out)
{
	char err[600] = "";
	struct gw_config *cfg;
	int rc;

	if (cli->config) {
		rc = gw_config_load_file(cli->config, &cfg, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "isergwd: %s\n", err); /* err names the file */
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
	rc = finish_config(cli, cfg, cli->config != NULL, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "isergwd: %s\n", err);
		goto err_free;
	}
	*out = cfg;
	return 0;

err_free:
	gw_config_free(cfg);
	return rc;
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

int main(int argc, char **argv)
{
	struct gw_ctl_params ctl_params = { 0 };
	struct gw_config *cfg = NULL;
	struct gw_ctl *ctl = NULL;
	enum gw_log_level lvl;
	struct gw *gw = NULL;
	struct cli cli;
	sigset_t sigs;
	int rc, sig;

	if (parse_cli(argc, argv, &cli))
		return 2;
	if (load_config(&cli, &cfg))
		return 1;
	if (gw_log_parse_level(cfg->log_level, &lvl)) {
		fprintf(stderr, "isergwd: unknown log level '%s'\n", cfg->log_level);
		gw_config_free(cfg);
		return 2;
	}
	gw_log_set_level(lvl);
	if (cli.check) {
		printf("configuration OK: %zu portal(s), %zu target(s)\n", cfg->nportals, cfg->ntargets);
		gw_config_free(cfg);
		return 0;
	}

	/* signals are taken synchronously by the main thread only */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	GW_NOTICE(COMP, "isergwd %s starting%s", ISERGW_VERSION,
		  cli.managed ? " managed: waiting for the configuration on the control socket" : "");
	rc = gw_start(cfg, &gw); /* on success gw owns cfg */
	if (rc) {
		GW_ERR(COMP, "start-up failed: %s", strerror(-rc));
		gw_config_free(cfg);
		return 1;
	}
	ctl_params.path = cfg->ctl_socket;
	ctl_params.load = ctl_load;
	ctl_params.load_arg = &cli;
	rc = gw_ctl_start(gw, &ctl_params, &ctl);
	if (rc) {
		GW_ERR(COMP, "start-up failed: control socket %s: %s", cfg->ctl_socket,
		       strerror(-rc));
		gw_shutdown(gw, 0);
		gw_destroy(gw);
		return 1;
	}
	/* the portals listen (gw_start) and the control socket answers: serving */
	gw_notify_ready("serving %zu portal(s), %zu target(s)%s", cfg->nportals, cfg->ntargets,
			cli.managed ? " (managed: configured by isergw-ha)" : "");
	for (;;) {
		rc = sigwait(&sigs, &sig);
		if (rc)
			continue;
		if (sig == SIGHUP) {
			struct gw_config *ncfg;

			if (!cli.config) {
				GW_NOTICE(COMP, "SIGHUP: no configuration file to re-read (%s)",
					  cli.managed ? "managed" : "quick-serve");
				continue;
			}
			GW_NOTICE(COMP, "SIGHUP: re-reading %s", cli.config);
			gw_notify_reloading();
			if (load_config(&cli, &ncfg)) {
				GW_ERR(COMP, "reload failed: configuration kept as it was");
				gw_notify_ready("reload of %s failed: configuration kept", cli.config);
				continue;
			}
			rc = gw_ctl_reload(ctl, gw, ncfg);
			gw_notify_ready("%s %s", cli.config, rc ? "reload failed: configuration kept" :
					"reloaded");
			continue;
		}
		if (sig == SIGPIPE)
			continue;
		GW_NOTICE(COMP, "%s received", sig == SIGTERM ? "SIGTERM" : "SIGINT");
		break;
	}
	gw_notify_stopping();
	gw_ctl_stop(ctl);
	gw_shutdown(gw, 3000);
	gw_destroy(gw); /* frees the configuration it owns */
	GW_NOTICE(COMP, "stopped");
	return 0;
}
