/* SPDX-License-Identifier: Apache-2.0 */
/* isergw-ha: the isergw HA agent (docs/ha.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "store.h"
#include "config/config.h"
#include "common/daemon.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/notify.h"

#define COMP "main"
#define DEFAULT_CONFIG "/etc/isergw/ha.json"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: isergw-ha [OPTIONS]\n"
"The isergw HA agent: one per gateway node, on corosync. It keeps the cluster's\n"
"configuration and runtime map (one document with a generation, stored in the\n"
"state directory), decides which node is Active/Optimized for each device group,\n"
"drives the local isergwd over its control socket and renews isergwd's lease\n"
"while this node is in a quorate, synchronised cluster (docs/ha.md).\n"
"\n"
"  -c, --config FILE        the agent's JSON configuration (default " DEFAULT_CONFIG
" if it\n"
"                           exists; the options below override it)\n"
"  --state-dir DIR          where the cluster document is kept (default /var/lib/isergw)\n"
"  --socket PATH            the local API, root only (default /run/isergw/ha.sock)\n"
"  --isergwd-socket PATH    isergwd's control socket (default /run/isergw/isergwd.sock)\n"
"  --lease-ms MS            isergwd's lease, renewed on every heartbeat that comes back\n"
"                           in a quorate ring (default 1500; 200..60000)\n"
"  --heartbeat-ms MS        heartbeat period (default 100; 20..5000, below the lease)\n"
"  --change-timeout-ms MS   how long a change waits for every live node (default 10000)\n"
"  --transition-ms MS       planned moves: isergwd shows Transitioning this long\n"
"                           before the new states (default 0)\n"
"  --log-level LEVEL        err, warn, notice, info or debug (default notice)\n"
"  -h, --help               this help\n"
"  -V, --version            print the version\n"
"\n"
"Runs in the foreground, logs to stderr. SIGTERM/SIGINT stop it: it leaves the\n"
"group and isergwd keeps serving until its lease runs out. Started before\n"
"corosync, it waits for it (tried every second).\n"
"Exit status: 0 stopped, 78 (EX_CONFIG) the configuration is refused (logged at\n"
"err; the unit does not restart), 1 another failure.\n"
"isergwctl cluster --help lists what the local API offers.\n");
}

static void sighup(void *arg);
static void sigstop(void *arg);
static char version_extra[32];

static struct gw_daemon daemon_ha = {
	.name = "isergw-ha",
	.usage = usage,
	.stop_what = "leaving the group",
	.hup = sighup,
	.stop = sigstop,
};

enum {
	OPT_STATE_DIR = 256, OPT_SOCKET, OPT_GW_SOCKET, OPT_LEASE, OPT_HB, OPT_CHANGE_TIMEOUT,
	OPT_TRANSITION, OPT_LOG_LEVEL,
};

static const struct option long_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "isergwd-socket", required_argument, NULL, OPT_GW_SOCKET },
	{ "lease-ms", required_argument, NULL, OPT_LEASE },
	{ "heartbeat-ms", required_argument, NULL, OPT_HB },
	{ "change-timeout-ms", required_argument, NULL, OPT_CHANGE_TIMEOUT },
	{ "transition-ms", required_argument, NULL, OPT_TRANSITION },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void opts_defaults(struct ha_opts *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->state_dir, sizeof(o->state_dir), "/var/lib/isergw");
	snprintf(o->socket, sizeof(o->socket), "/run/isergw/ha.sock");
	snprintf(o->gw_socket, sizeof(o->gw_socket), "/run/isergw/isergwd.sock");
	snprintf(o->log_level, sizeof(o->log_level), "notice");
	o->lease_ms = 1500;
	o->heartbeat_ms = 100;
	o->change_timeout_ms = 10000;
	o->transition_ms = 0;
}

static int set_str(char *dst, size_t len, const char *v, const char *what)
{
	return gw_opt_str("isergw-ha", dst, len, v, what);
}

static int set_u32(uint32_t *dst, const char *v, uint32_t min, uint32_t max, const char *what)
{
	return gw_opt_u32("isergw-ha", dst, v, min, max, what);
}

/* One setting, from the command line or the configuration file (same names, '-' or '_'). */
static int set_opt(struct ha_opts *o, int id, const char *v)
{
	switch (id) {
	case OPT_STATE_DIR: return set_str(o->state_dir, sizeof(o->state_dir), v, "state-dir");
	case OPT_SOCKET: return set_str(o->socket, sizeof(o->socket), v, "socket");
	case OPT_GW_SOCKET: return set_str(o->gw_socket, sizeof(o->gw_socket), v, "isergwd-socket");
	case OPT_LOG_LEVEL:
		if (gw_daemon_check_log_level(&daemon_ha, v))
			return -EINVAL;
		return set_str(o->log_level, sizeof(o->log_level), v, "log-level");
	case OPT_LEASE: return set_u32(&o->lease_ms, v, 200, 60000, "lease-ms");
	case OPT_HB: return set_u32(&o->heartbeat_ms, v, 20, 5000, "heartbeat-ms");
	case OPT_CHANGE_TIMEOUT:
		return set_u32(&o->change_timeout_ms, v, 100, 600000, "change-timeout-ms");
	case OPT_TRANSITION: return set_u32(&o->transition_ms, v, 0, 60000, "transition-ms");
	default: return -EINVAL;
	}
}

/* The options file's bytes: at most this many */
#define HA_OPTS_FILE_MAX (64u * 1024u)

static int load_file(struct ha_opts *o, const char *path, bool must_exist)
{
	enum json_tokener_error jerr = json_tokener_success;
	json_object *root;
	struct stat st;
	size_t got = 0;
	char *text;
	int fd, rc = 0;

	/* a FIFO or a device would block or never end: a regular file only */
	fd = gw_open_regular(path, O_RDONLY, &st);
	if (fd == -GW_ENOTREG) {
		GW_CFGERR("isergw-ha: %s: %s, not a regular file", path, gw_file_kind(&st));
		return -EINVAL;
	}
	if (fd < 0) {
		if (!must_exist && fd == -ENOENT)
			return 0;
		GW_CFGERR("isergw-ha: %s: %s", path, strerror(-fd));
		return fd;
	}
	if ((uint64_t)st.st_size > HA_OPTS_FILE_MAX) {
		close(fd);
		GW_CFGERR("isergw-ha: %s: larger than %u bytes", path, HA_OPTS_FILE_MAX);
		return -EINVAL;
	}
	rc = gw_config_read_fd(fd, (size_t)st.st_size, &text, &got);
	close(fd);
	if (rc) {
		GW_CFGERR("isergw-ha: %s: %s", path, strerror(-rc));
		return rc;
	}
	root = json_tokener_parse_verbose(text, &jerr);
	free(text);
	if (!root || !json_object_is_type(root, json_type_object)) {
		GW_CFGERR("isergw-ha: %s: not a JSON object (%s)", path,
			  root ? "another JSON value" : json_tokener_error_desc(jerr));
		json_object_put(root);
		return -EINVAL;
	}
	json_object_object_foreach(root, key, val) {
		char name[64], buf[64];
		const char *v;
		int id = 0;

		snprintf(name, sizeof(name), "%s", key);
		for (char *p = name; *p; p++)
			if (*p == '_')
				*p = '-';
		for (const struct option *lo = long_opts; lo->name; lo++)
			if (lo->val >= 256 && !strcmp(lo->name, name))
				id = lo->val;
		if (!id) {
			GW_CFGERR("isergw-ha: %s: %s: unknown key", path, key);
			rc = -EINVAL;
			break;
		}
		if (json_object_is_type(val, json_type_int)) {
			snprintf(buf, sizeof(buf), "%" PRId64, json_object_get_int64(val));
			v = buf;
		} else if (json_object_is_type(val, json_type_string)) {
			v = json_object_get_string(val);
		} else {
			GW_CFGERR("isergw-ha: %s: %s: must be a string or an integer", path, key);
			rc = -EINVAL;
			break;
		}
		rc = set_opt(o, id, v);
		if (rc) {
			gw_log_plain(GW_LOG_NOTICE, "isergw-ha: (in %s)", path);
			break;
		}
	}
	json_object_put(root);
	return rc;
}

static int parse_cli(int argc, char **argv, struct ha_opts *o)
{
	const char *config = NULL;
	int opt;

	opts_defaults(o);
	opterr = 0; /* getopt's own message would not reach the journal as an error */
	/* the file first, then the options on top */
	while ((opt = getopt_long(argc, argv, "c:hV", long_opts, NULL)) != -1) {
		if (opt == 'c')
			config = optarg;
		else if (opt == 'h')
			gw_daemon_help(&daemon_ha);
		else if (opt == 'V')
			gw_daemon_version(&daemon_ha);
		else if (opt == '?') {
			gw_opt_refused("isergw-ha", argv, optind, optopt);
			return -EINVAL;
		}
	}
	if (gw_daemon_no_operands(&daemon_ha, argc, argv))
		return -EINVAL;
	if (load_file(o, config ? config : DEFAULT_CONFIG, config != NULL))
		return -EINVAL;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:hV", long_opts, NULL)) != -1)
		if (opt >= 256 && set_opt(o, opt, optarg))
			return -EINVAL;
	if (o->heartbeat_ms * 4 > o->lease_ms) {
		GW_CFGERR("isergw-ha: the lease (%u ms) must be at least 4 heartbeats (%u ms)",
			o->lease_ms, o->heartbeat_ms);
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------ the state machine's ops */

static int op_send(void *ctx, const HaMsg *m)
{
	struct ha_agent *a = ctx;

	return a->cl ? ha_cluster_send(a->cl, m) : -ENOTCONN;
}

static void op_doc_changed(void *ctx, const struct ha_doc *d, uint64_t seq)
{
	struct ha_agent *a = ctx;
	int rc;

	/*
	 * isergwd first: the request leaves at once and isergwd works on it while
	 * the saver thread makes the document durable (an fsync can take 100 ms
	 * on a busy disk; the loop goes on with heartbeats and leases meanwhile).
	 * This node's Applied for it waits for both (ha_sm_doc_stored).
	 */
	if (a->gw)
		ha_gwlink_doc(a->gw, d);
	if (a->store) {
		ha_store_queue(a->store, d, seq);
		return;
	}
	/* stopping: the saver is gone, nobody waits for an Applied any more */
	rc = ha_doc_save(d, a->opts.state_dir);
	if (rc)
		GW_ERR(COMP, "cannot store generation %" PRIu64 " in %s: %s", d->generation,
		       a->opts.state_dir, strerror(-rc));
}

static void store_done(void *ctx, uint64_t seq)
{
	struct ha_agent *a = ctx;

	ha_sm_doc_stored(&a->sm, seq);
}

static void op_lease(void *ctx, uint64_t expires_ms)
{
	struct ha_agent *a = ctx;

	if (a->gw)
		ha_gwlink_lease(a->gw, expires_ms);
}

static void op_step_down(void *ctx, const char *reason)
{
	struct ha_agent *a = ctx;

	if (a->gw)
		ha_gwlink_step_down(a->gw, reason);
}

static void op_change_done(void *ctx, uint64_t id, int status, const char *err, uint64_t gen)
{
	struct ha_agent *a = ctx;

	ha_api_change_done(a->api, id, status, err, gen);
}

static void op_applied(void *ctx)
{
	struct ha_agent *a = ctx;

	ha_api_applied(a->api);
}

static void op_lu_apply(void *ctx, const uint8_t naa[16], uint64_t version, const uint8_t *state,
			size_t len, const uint8_t *events, size_t evlen, uint32_t origin,
			uint64_t proposal_id)
{
	struct ha_agent *a = ctx;

	if (a->gw) {
		ha_gwlink_lu_apply(a->gw, naa, version, state, len, events, evlen, origin,
				   proposal_id);
		return;
	}
	if (origin)
		ha_sm_lu_park_own(&a->sm, naa, version, events, evlen);
	ha_sm_lu_gw_applied(&a->sm, origin, proposal_id, naa, version, -ENOTCONN);
}

static void op_lu_handover(void *ctx)
{
	struct ha_agent *a = ctx;

	if (a->gw)
		ha_gwlink_lu_handover(a->gw);
}

static void op_lu_done(void *ctx, uint64_t proposal_id, int status, const char *why)
{
	struct ha_agent *a = ctx;

	if (a->gw)
		ha_gwlink_lu_done(a->gw, proposal_id, status, why);
}

static void op_lu_store(void *ctx)
{
	struct ha_agent *a = ctx;

	(void)ha_lu_save(&a->sm, a->opts.state_dir);
}

static const struct ha_sm_ops sm_ops = {
	.lu_apply = op_lu_apply,
	.lu_done = op_lu_done,
	.lu_store = op_lu_store,
	.lu_handover = op_lu_handover,
	.send = op_send,
	.doc_changed = op_doc_changed,
	.lease = op_lease,
	.step_down = op_step_down,
	.change_done = op_change_done,
	.applied = op_applied,
};

/* ------------------------------------------------------------ loop */

static void tick_cb(void *arg)
{
	struct ha_agent *a = arg;
	uint64_t now = gw_now_ms();

	ha_gwlink_poll(a->gw, now);
	ha_sm_tick(&a->sm, now);
	ha_api_tick(a->api, now);
	reactor_timer_arm(a->r, &a->tick, a->opts.heartbeat_ms);
}

static void sighup(void *arg)
{
	(void)arg;
	GW_NOTICE(COMP, "SIGHUP: nothing to re-read (the agent's settings need a restart)");
}

static void sigstop(void *arg)
{
	struct ha_agent *a = arg;

	a->stopping = true;
}

static struct ha_doc *load_doc(const char *dir)
{
	struct ha_doc *d = NULL;
	char err[512] = "";
	int rc = ha_doc_load(dir, &d, err, sizeof(err));

	if (!rc) {
		GW_NOTICE(COMP, "cluster document of generation %" PRIu64 " loaded from %s",
			  d->generation, dir);
		return d;
	}
	if (rc != -ENOENT)
		GW_ERR(COMP, "the cluster document in %s cannot be used (%s): starting empty; the "
		       "cluster's members will give this node theirs", dir, err[0] ? err : strerror(-rc));
	else
		GW_NOTICE(COMP, "no cluster document in %s yet: starting empty", dir);
	if (ha_doc_empty(&d))
		return NULL;
	return d;
}

int main(int argc, char **argv)
{
	static struct ha_agent agent;
	struct ha_agent *a = &agent;
	struct ha_sm_params p;
	struct ha_store_params sp = { 0 };
	struct ha_doc *doc;
	int rc, status = 1;

	/*
	 * Every generation makes a few texts of the document's size (half a
	 * megabyte at 4096 LUNs) and frees the previous ones. Above glibc's
	 * mmap threshold each would be a fresh mapping, faulted in and zeroed
	 * page by page, and unmapped again: most of what a LUN change cost.
	 * Served from the heap (and not trimmed back each time) they reuse
	 * the same pages. Within HA_DOC_MAX several times over.
	 */
	mallopt(M_MMAP_THRESHOLD, 16 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	snprintf(version_extra, sizeof(version_extra), " (protocol %u..%u)", HA_PROTO_MIN,
		 HA_PROTO_MAX);
	daemon_ha.version_extra = version_extra;
	if (parse_cli(argc, argv, &a->opts))
		return GW_EXIT_CONFIG;
	gw_daemon_set_log_level(a->opts.log_level);
	GW_NOTICE(COMP, "isergw-ha %s starting (protocol %u..%u, lease %u ms, heartbeat %u ms)",
		  ISERGW_VERSION, HA_PROTO_MIN, HA_PROTO_MAX, a->opts.lease_ms,
		  a->opts.heartbeat_ms);

	/* the signals are taken on the agent's loop (SIGTERM: leave the group) */
	daemon_ha.arg = a;
	if (gw_daemon_start(&daemon_ha))
		return 1;
	a->r = daemon_ha.r;
	doc = load_doc(a->opts.state_dir);
	if (!doc)
		goto out_reactor;
	sp.dir = a->opts.state_dir;
	sp.done = store_done;
	sp.ctx = a;
	rc = ha_store_start(a->r, &sp, &a->store);
	if (rc) {
		GW_ERR(COMP, "cannot start the thread that stores the cluster document: %s",
		       strerror(-rc));
		ha_doc_free(doc);
		goto out_reactor;
	}
	rc = ha_cluster_start(a, &daemon_ha.mask, &a->cl);
	if (rc == -EINTR) {
		status = 0;     /* stopped before corosync came */
		ha_doc_free(doc);
		goto out_store;
	}
	if (rc) {
		/* -ENOENT: this node has no name in corosync's nodelist (logged) */
		if (rc != -ENOENT)
			GW_ERR(COMP, "cannot connect to corosync: %s (the agent needs corosync's "
			       "CPG, votequorum and cmap)", strerror(-rc));
		else
			status = GW_EXIT_CONFIG;
		ha_doc_free(doc);
		goto out_store;
	}
	memset(&p, 0, sizeof(p));
	p.nodeid = a->nodeid;
	p.name = a->node_name;
	p.cluster = a->cluster_name;
	p.lease_ms = a->opts.lease_ms;
	p.heartbeat_ms = a->opts.heartbeat_ms;
	ha_sm_init(&a->sm, &p, &sm_ops, a, doc, gw_now_ms());
	(void)ha_lu_load(&a->sm, a->opts.state_dir);
	a->sm_ready = true;

	rc = ha_api_start(a, &a->api);
	if (rc) {
		GW_ERR(COMP, "start-up failed: local API %s: %s", a->opts.socket, strerror(-rc));
		goto out_cluster;
	}
	/* connects at once and pushes the document loaded (when there is one) */
	rc = ha_gwlink_start(a, &a->gw);
	if (rc)
		goto out_api;
	rc = ha_cluster_join(a->cl);
	if (rc)
		goto out_gw;
	reactor_timer_init(&a->tick, tick_cb, a);
	reactor_timer_arm(a->r, &a->tick, a->opts.heartbeat_ms);
	/*
	 * READY=1 comes once this agent is seen in the CPG group (cluster.c,
	 * confchg_cb): connected to corosync, a member, the local API listening.
	 * Not "synchronised": a node alone without quorum never is, and its unit
	 * must still start; isergwctl cluster status and the API's /metrics show
	 * the synchronisation (docs/packaging.md).
	 */
	gw_notify_status("joining the group on cluster %s as node %s (id %u)", a->cluster_name,
			 a->node_name, a->nodeid);

	gw_daemon_run(&daemon_ha);
	status = 0;

	reactor_timer_cancel(a->r, &a->tick);
out_gw:
	ha_gwlink_stop(a->gw);
	a->gw = NULL;
out_api:
	ha_api_stop(a->api);
	a->api = NULL;
out_cluster:
	ha_cluster_stop(a->cl);
	a->cl = NULL;
out_store:
	/* the newest document queued is written before the thread ends */
	ha_store_stop(a->store);
	a->store = NULL;
	if (a->sm_ready)
		ha_sm_fini(&a->sm);
out_reactor:
	gw_daemon_fini(&daemon_ha);
	a->r = NULL;
	GW_NOTICE(COMP, "stopped");
	return status;
}
