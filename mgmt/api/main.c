/* SPDX-License-Identifier: Apache-2.0 */
/* isergw-api: the management service of a gateway node (docs/api.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api.h"
#include "config/config.h"
#include "common/daemon.h"
#include "common/log.h"
#include "common/notify.h"
#include "common/reactor.h"

#define COMP "main"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: isergw-api [OPTIONS]\n"
"The isergw management service of one gateway node: an HTTP/1.1 server with\n"
"health and readiness probes and Prometheus metrics taken from the local\n"
"isergwd's control socket, and the REST resources of the cluster under /api/v1\n"
"through the local HA agent's socket (docs/api.md). It keeps no state of its\n"
"own.\n"
"\n"
"  --listen ADDR:PORT          where to serve HTTP (default " API_DEFAULT_LISTEN ");\n"
"                              an IPv6 address in brackets: [::1]:8080\n"
"  --isergwd-socket PATH       isergwd's control socket (default\n"
"                              " API_DEFAULT_GW_SOCKET ")\n"
"  --isergwd-timeout-ms MS     how long a request waits for isergwd in all (default\n"
"                              1000; 50..10000): a scrape or a readiness probe never\n"
"                              takes longer\n"
"  --ha-socket PATH            the HA agent's local API (default\n"
"                              " API_DEFAULT_HA_SOCKET "); asked\n"
"                              asynchronously, one connection per call\n"
"  --ha-timeout-ms MS          how long the agent may take to answer a read, or\n"
"                              a write after its wait (default 2000; 100..60000)\n"
"  --change-wait-ms MS         how long a write waits for every live member to\n"
"                              apply it before it is answered 202 with an\n"
"                              operation (default 5000; 100..600000)\n"
"  --config FILE               standalone, without an HA agent: /api/v1 reads and\n"
"                              writes isergwd's configuration FILE (replaced\n"
"                              atomically) and applies it over the control socket\n"
"  --device-group NAME         also report the ALUA states of this device group (the\n"
"                              default one is always reported); may be repeated, up\n"
"                              to 64 times\n"
"  --threads N                 HTTP server threads, each a poll() loop (default 2;\n"
"                              1..16): one waiting for isergwd does not hold up the\n"
"                              others\n"
"  --max-connections N         HTTP connections open at once (default 128; 1..4096),\n"
"                              and 8 more for /healthz and /readyz only; when\n"
"                              all are open a new one closes the one idle longest\n"
"  --max-connections-per-ip N  of those, from one address at most (default 32;\n"
"                              1..4096; raise it behind a proxy or load balancer);\n"
"                              at the limit a new one closes that address's idle one\n"
"  --idle-timeout S            close an HTTP connection idle this long (default 30;\n"
"                              1..3600)\n"
"  --log-level LEVEL           err, warn, notice, info or debug (default notice;\n"
"                              info logs every request)\n"
"  --nice N                    yield the CPU to the data path: run at nice N\n"
"                              (default 10; 0..19) under SCHED_BATCH, set at\n"
"                              start for every thread; 0 leaves the priority\n"
"                              as started (docs/packaging.md, CPU priority)\n"
"Security (docs/api.md, Security):\n"
"  --token-file FILE           the bearer tokens (made by 'isergw-api token add');\n"
"                              must be mode 0600 or stricter and owned by root or\n"
"                              this user; re-read on SIGHUP. Without it only\n"
"                              /healthz, /readyz and /metrics can be reached\n"
"  --metrics-open              serve /metrics without a token even with\n"
"                              tokens (by default it then needs one)\n"
"  --token-poll-ms MS          in a cluster, ask the HA agent for the cluster's\n"
"                              tokens (isergwctl cluster token) this often\n"
"                              (default 250; 0..60000, 0: file tokens only)\n"
"  --max-request-rate N        answer at most N requests a second (the probes\n"
"                              /healthz and /readyz aside); the others wait\n"
"                              their turn, none is refused, so that clients\n"
"                              cannot take the data path's CPUs (default 250;\n"
"                              0..1000000, 0: no limit)\n"
"  --request-burst N           of those, at once after a quiet spell (default\n"
"                              the rate / 20 + 1)\n"
"  --status-cache-ms MS        reads within MS of the agent's last status answer\n"
"                              from it instead of asking the agent again; a\n"
"                              change through this API drops it (default 100;\n"
"                              0..10000, 0: every read asks)\n"
"  --metrics-cache-ms MS       a scrape within MS of the last one gets its text,\n"
"                              and scrapes that come while one is rendered wait\n"
"                              for it (default 250; 0..60000, 0: every scrape\n"
"                              renders): scrapers cannot load the data path\n"
"  --per-lun-histograms        also serve a latency histogram per LUN (50\n"
"                              samples a LUN); by default latency is per target\n"
"                              port and per device group (docs/metrics.md)\n"
"  --tls-cert FILE             serve HTTPS (TLS 1.2 and 1.3 only) with this PEM\n"
"                              certificate (chain); needs --tls-key\n"
"  --tls-key FILE              the PEM private key of --tls-cert: mode 0600 or\n"
"                              stricter, owned by root or this user\n"
"  -h, --help                  this help\n"
"  -V, --version               print the version\n"
"\n"
"Routes: GET /healthz (the process answers), GET /readyz (200 while isergwd\n"
"answers on its control socket, else 503), GET /metrics (Prometheus text format\n"
"0.0.4); /api/v1: cluster, nodes, device-groups, targets, targets/IQN/luns,\n"
"config, operations (GET /api/v1/openapi.json describes them); writes take\n"
"If-Match with an ETag. Errors are application/problem+json (RFC 9457).\n"
"/healthz and /readyz need no token; every other path (/api/v1/...) needs a\n"
"read-only or admin token for GET and HEAD and an admin token for every other\n"
"method (Authorization: Bearer TOKEN; /metrics too with --token-file, unless\n"
"--metrics-open). Request bodies above 1 MiB are refused (413). Every write is\n"
"logged with its token's name.\n"
"Runs in the foreground, logs to stderr. SIGTERM/SIGINT stop it (exit 0);\n"
"SIGHUP re-reads --token-file. Exit status 78 (EX_CONFIG): the configuration is\n"
"refused (an option, the token file, the TLS files, the listen address; logged\n"
"at err, the unit does not restart); 1: another failure.\n"
"\n"
"       isergw-api token add --token-file FILE --name NAME --role admin|read-only\n"
"       isergw-api token list --token-file FILE\n"
"       isergw-api token remove --token-file FILE --name NAME\n"
"make a token (printed once), list the names and roles, remove a token\n"
"('isergw-api token --help').\n");
}

/* .hup and .arg: main, once the API object is there */
static struct gw_daemon daemon_api = {
	.name = "isergw-api", .usage = usage, .stop_what = "stopping",
};

/*
 * isergw-api's options, one row each: a number of api_opts (default and
 * range), a string (default; the field's size bounds it), a flag, or one
 * with a function of its own. --help and --version are parse_cli's.
 */
struct opt_row {
	const char *name;
	enum { ROW_U32, ROW_STR, ROW_FLAG, ROW_FN } kind;
	size_t off;                     /* the field in struct api_opts (not ROW_FN) */
	size_t size;                    /* ROW_STR: the field's */
	const char *sdef;               /* ROW_STR: the default (NULL: empty) */
	uint32_t def, min, max;         /* ROW_U32 */
	int (*set)(struct api_opts *o, const char *v);  /* ROW_FN */
};

#define U32_ROW(n, f, d, lo, hi) \
	{ n, ROW_U32, offsetof(struct api_opts, f), 0, NULL, d, lo, hi, NULL }
#define STR_ROW(n, f, d) \
	{ n, ROW_STR, offsetof(struct api_opts, f), sizeof(((struct api_opts *)0)->f), d, 0, 0, 0, NULL }
#define FLAG_ROW(n, f) { n, ROW_FLAG, offsetof(struct api_opts, f), 0, NULL, 0, 0, 0, NULL }
#define FN_ROW(n, fn) { n, ROW_FN, 0, 0, NULL, 0, 0, 0, fn }

static int set_str(char *dst, size_t len, const char *v, const char *what)
{
	return gw_opt_str("isergw-api", dst, len, v, what);
}

/* "a.b.c.d:port" or "[v6]:port", numeric only (no name lookups at start-up). */
static int parse_listen(struct api_opts *o, const char *v)
{
	char host[128];
	const char *port;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *res = NULL;
	uint32_t p;
	int rc;

	if (set_str(o->listen, sizeof(o->listen), v, "listen"))
		return -EINVAL;
	if (v[0] == '[') {
		const char *end = strchr(v, ']');

		if (!end || end[1] != ':' || (size_t)(end - v - 1) >= sizeof(host))
			goto bad;
		memcpy(host, v + 1, (size_t)(end - v - 1));
		host[end - v - 1] = '\0';
		port = end + 2;
		hints.ai_family = AF_INET6;
	} else {
		const char *colon = strrchr(v, ':');

		if (!colon || (size_t)(colon - v) >= sizeof(host) || strchr(v, ':') != colon)
			goto bad;
		memcpy(host, v, (size_t)(colon - v));
		host[colon - v] = '\0';
		port = colon + 1;
		hints.ai_family = AF_INET;
	}
	if (gw_parse_u32(port, &p) || p == 0 || p > 65535)
		goto bad;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc || !res || res->ai_addrlen > sizeof(o->addr)) {
		if (res)
			freeaddrinfo(res);
		goto bad;
	}
	memcpy(&o->addr, res->ai_addr, res->ai_addrlen);
	o->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
bad:
	GW_CFGERR("isergw-api: listen: '%s' is not ADDR:PORT (a numeric IPv4 address, or "
		"an IPv6 address in brackets, and a port 1..65535)", v);
	return -EINVAL;
}

static int opt_config(struct api_opts *o, const char *v)
{
	if (set_str(o->config_file, sizeof(o->config_file), v, "config"))
		return -EINVAL;
	if (v[0] != '/') {
		GW_CFGERR("isergw-api: config: an absolute path, please");
		return -EINVAL;
	}
	return 0;
}

static int opt_device_group(struct api_opts *o, const char *v)
{
	if (o->ndgs == API_DG_MAX) {
		GW_CFGERR("isergw-api: device-group: at most %u", API_DG_MAX);
		return -EINVAL;
	}
	if (!v[0] || strlen(v) > CTL_DG_NAME_MAX) {
		GW_CFGERR("isergw-api: device-group: must be 1..%u bytes", CTL_DG_NAME_MAX);
		return -EINVAL;
	}
	if (!(o->dgs[o->ndgs] = strdup(v)))
		return -ENOMEM;
	o->ndgs++;
	return 0;
}

static int opt_log_level(struct api_opts *o, const char *v)
{
	int rc = gw_daemon_check_log_level(&daemon_api, v);

	return rc ? rc : set_str(o->log_level, sizeof(o->log_level), v, "log-level");
}

static const struct opt_row opt_rows[] = {
	FN_ROW("listen", parse_listen),
	STR_ROW("isergwd-socket", gw_socket, API_DEFAULT_GW_SOCKET),
	U32_ROW("isergwd-timeout-ms", gw_timeout_ms, 1000, 50, 10000),
	STR_ROW("ha-socket", ha_socket, API_DEFAULT_HA_SOCKET),
	U32_ROW("ha-timeout-ms", ha_timeout_ms, 2000, 100, 60000),
	U32_ROW("change-wait-ms", change_wait_ms, 5000, 100, 600000),
	FN_ROW("config", opt_config),
	FN_ROW("device-group", opt_device_group),
	U32_ROW("threads", threads, 2, 1, 16),
	U32_ROW("max-connections", conn_limit, 128, 1, 4096),
	U32_ROW("max-connections-per-ip", conn_limit_ip, 32, 1, 4096),
	U32_ROW("idle-timeout", idle_timeout_s, 30, 1, 3600),
	FN_ROW("log-level", opt_log_level),
	U32_ROW("nice", nice, API_DEFAULT_NICE, 0, 19),
	STR_ROW("token-file", token_file, NULL),
	U32_ROW("token-poll-ms", token_poll_ms, 250, 0, 60000),
	FLAG_ROW("metrics-open", metrics_open),
	U32_ROW("metrics-cache-ms", metrics_cache_ms, 250, 0, 60000),
	FLAG_ROW("per-lun-histograms", per_lun_histograms),
	U32_ROW("status-cache-ms", status_cache_ms, 100, 0, 10000),
	U32_ROW("max-request-rate", max_request_rate, 250, 0, 1000000),
	U32_ROW("request-burst", request_burst, 0, 1, 1000000),     /* 0: from the rate */
	STR_ROW("tls-cert", tls_cert, NULL),
	STR_ROW("tls-key", tls_key, NULL),
};

#define N_ROWS (sizeof(opt_rows) / sizeof(opt_rows[0]))
#define OPT_ROW 256                     /* getopt_long's answer for opt_rows[i]: OPT_ROW + i */

/* getopt_long's table: the rows, --help, --version, the end. */
static void long_opts_fill(struct option *lo)
{
	for (size_t i = 0; i < N_ROWS; i++)
		lo[i] = (struct option){ opt_rows[i].name,
					 opt_rows[i].kind == ROW_FLAG ? no_argument : required_argument,
					 NULL, OPT_ROW + (int)i };
	lo[N_ROWS] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[N_ROWS + 1] = (struct option){ "version", no_argument, NULL, 'V' };
	lo[N_ROWS + 2] = (struct option){ 0 };
}

static void row_default(struct api_opts *o, const struct opt_row *r)
{
	char *f = (char *)o + r->off;

	if (r->kind == ROW_STR)
		snprintf(f, r->size, "%s", r->sdef ? r->sdef : "");
	else if (r->kind == ROW_U32)
		*(uint32_t *)(void *)f = r->def;
}

static int row_set(struct api_opts *o, const struct opt_row *r, const char *v)
{
	char *f = (char *)o + r->off;

	switch (r->kind) {
	case ROW_U32:
		return gw_opt_u32("isergw-api", (uint32_t *)(void *)f, v, r->min, r->max, r->name);
	case ROW_STR:
		return set_str(f, r->size, v, r->name);
	case ROW_FLAG:
		*(bool *)f = true;
		return 0;
	default:
		return r->set(o, v);
	}
}

static void opts_free(struct api_opts *o)
{
	for (size_t i = 0; i < o->ndgs; i++)
		free(o->dgs[i]);
	o->ndgs = 0;
}

static int parse_cli(int argc, char **argv, struct api_opts *o)
{
	struct option long_opts[N_ROWS + 3];
	int opt, rc = 0;

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < N_ROWS; i++)
		row_default(o, &opt_rows[i]);
	snprintf(o->log_level, sizeof(o->log_level), "notice");
	long_opts_fill(long_opts);
	opterr = 0; /* getopt's own message would not reach the journal as an error */
	while (!rc && (opt = getopt_long(argc, argv, "hV", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			opts_free(o);
			gw_daemon_help(&daemon_api);
		case 'V':
			opts_free(o);
			gw_daemon_version(&daemon_api);
		default:
			if (opt >= OPT_ROW && opt < OPT_ROW + (int)N_ROWS) {
				rc = row_set(o, &opt_rows[opt - OPT_ROW], optarg);
			} else {
				gw_opt_refused("isergw-api", argv, optind, optopt);
				rc = -EINVAL;
			}
		}
	}
	if (!rc && !o->tls_cert[0] != !o->tls_key[0]) {
		GW_CFGERR("isergw-api: --tls-cert and --tls-key go together");
		rc = -EINVAL;
	}
	if (!rc)
		rc = gw_daemon_no_operands(&daemon_api, argc, argv);
	if (!rc && !o->listen[0])
		rc = parse_listen(o, API_DEFAULT_LISTEN);
	if (rc)
		opts_free(o);
	return rc;
}

/* ------------------------------------------------------------ loop */

/* The main loop's timer: every second, api_http_tick. */
struct ticker {
	struct api *a;
	struct reactor *r;
	struct reactor_timer tick;
};

static void tick_cb(void *arg)
{
	struct ticker *t = arg;

	api_http_tick(t->a);
	reactor_timer_arm(t->r, &t->tick, 1000);
}

static void sighup(void *arg)
{
	struct api *a = arg;

	if (!a->opts.token_file[0])
		GW_NOTICE(COMP, "SIGHUP: no --token-file to re-read (the options need a restart)");
	else
		api_tokens_reload(a);
}

/*
 * a->tokens anew: the file's tokens, then the cluster's whose names the file
 * has not (a file token is this node's own: it wins). Under the write lock.
 */
static int tokens_merge_locked(struct api *a)
{
	struct api_tokens m;
	size_t shadowed;
	int rc;

	rc = api_tokens_merge(&a->file_tokens, &a->cluster_tokens, &m, &shadowed);
	if (rc)
		return rc;
	if (shadowed)
		GW_WARN(COMP, "%zu of the cluster's tokens not used on this node: the token file "
			"has tokens of their names", shadowed);
	api_tokens_free(&a->tokens);
	a->tokens = m;
	a->tokens_any = a->opts.token_file[0] || a->cluster_tokens.n;
	return 0;
}

/*
 * Tokens t in place of *slot (the file's or the cluster's), merged into those in use:
 * 0, or -ENOMEM with *slot and the tokens in use as before. Owns t from then on.
 */
static int tokens_swap(struct api *a, struct api_tokens *slot, struct api_tokens t)
{
	struct api_tokens old;
	int rc;

	pthread_rwlock_wrlock(&a->tokens_lock);
	old = *slot;
	*slot = t;
	rc = tokens_merge_locked(a);
	if (rc) {
		*slot = old;
		old = t;
	}
	pthread_rwlock_unlock(&a->tokens_lock);
	api_tokens_free(&old);
	return rc;
}

int api_tokens_reload(struct api *a)
{
	struct api_tokens t;
	char err[512] = "";
	size_t nadmin = 0;
	int rc;

	rc = api_tokens_load(a->opts.token_file, &t, err, sizeof(err));
	if (rc) {
		GW_ERR(COMP, "token file: %s%s", err, a->file_tokens.n || a->http ?
		       " (the tokens read before stay in use)" : "");
		return rc;
	}
	for (size_t i = 0; i < t.n; i++)
		nadmin += t.v[i].role == API_ROLE_ADMIN;
	rc = tokens_swap(a, &a->file_tokens, t);
	if (rc) {
		GW_ERR(COMP, "token file: out of memory (the tokens read before stay in use)");
		return rc;
	}
	GW_NOTICE(COMP, "token file %s: %zu tokens (%zu admin, %zu read-only)",
		  a->opts.token_file, t.n, nadmin, t.n - nadmin);
	return 0;
}

int api_cluster_tokens_set(struct api *a, const Isergw__Ha__TokenList *tl)
{
	struct api_tokens t = { 0 };
	size_t nadmin = 0;
	int rc;

	if (tl->n_tokens) {
		t.v = calloc(tl->n_tokens, sizeof(*t.v));
		if (!t.v)
			return -ENOMEM;
	}
	for (size_t i = 0; i < tl->n_tokens; i++) {
		const Isergw__Ha__ApiToken *in = tl->tokens[i];
		struct api_token *x = &t.v[t.n];

		if (api_token_from_fields(in->name, in->role, in->hash, x)) {
			GW_ERR(COMP, "the cluster's token '%.64s' refused: not a valid name, role "
			       "and sha256:SALT:HASH", tl->tokens[i]->name);
			continue;
		}
		nadmin += x->role == API_ROLE_ADMIN;
		t.n++;
	}
	if (a->cluster_tokens_seen && t.n == a->cluster_tokens.n &&
	    (!t.n || !memcmp(t.v, a->cluster_tokens.v, t.n * sizeof(*t.v)))) {
		a->cluster_tokens_gen = tl->generation;
		api_tokens_free(&t);
		return (int)a->cluster_tokens.n;
	}
	rc = tokens_swap(a, &a->cluster_tokens, t);
	if (rc) {
		GW_ERR(COMP, "the cluster's tokens: out of memory (those read before stay in use)");
		return rc;
	}
	a->cluster_tokens_seen = true;
	a->cluster_tokens_gen = tl->generation;
	GW_NOTICE(COMP, "the cluster's tokens (generation %" PRIu64 "): %zu (%zu admin, %zu "
		  "read-only)", tl->generation, t.n, nadmin, t.n - nadmin);
	return (int)t.n;
}

/* On the HA client's thread: the agent's answer to GetTokens. */
static void cluster_tokens_cb(void *arg, int rc, Isergw__Ha__ApiReply *rep, const char *why)
{
	struct api *a = arg;
	char buf[256];

	if (rc == -ECANCELED)
		return;         /* stopping */
	if (!rc && !rep->status && rep->payload_case == ISERGW__HA__API_REPLY__PAYLOAD_TOKENS) {
		if (a->cluster_tokens_failing && a->cluster_tokens_seen)
			GW_NOTICE(COMP, "the cluster's tokens are read again from the HA agent");
		a->cluster_tokens_failing = false;
		a->cluster_agent_absent = false;
		api_cluster_tokens_set(a, rep->tokens);
		return;
	}
	if (rc == -ENOENT && !a->cluster_tokens_seen) {
		/* no agent's socket and never one: a standalone gateway, nothing is wrong */
		if (!a->cluster_agent_absent)
			GW_INFO(COMP, "no HA agent (%s): no cluster tokens until one answers", why);
		a->cluster_agent_absent = true;
		return;
	}
	if (a->cluster_tokens_failing)
		return;
	a->cluster_tokens_failing = true;
	if (!rc)
		snprintf(buf, sizeof(buf), "%s", rep->error[0] ? rep->error :
			 strerror(rep->status ? -rep->status : EBADMSG));
	/* the tokens held stay in use: an agent restarting locks nobody out */
	GW_WARN(COMP, "the cluster's tokens cannot be read from the HA agent (%s); the %zu "
		"read before stay in use until it answers", rc ? why : buf,
		a->cluster_tokens.n);
}

/* Whether isergwd answers now: a log line at start, nothing depends on it. */
static void probe_isergwd(const struct api *a)
{
	struct api_gw_snapshot s;
	char err[256] = "";

	if (api_gw_fetch(a->opts.gw_socket, (int)a->opts.gw_timeout_ms, false, NULL, 0, &s, err,
			 sizeof(err))) {
		GW_WARN(COMP, "isergwd does not answer yet (%s): /readyz answers 503 and isergw_up "
			"is 0 until it does", err);
		return;
	}
	GW_NOTICE(COMP, "isergwd %s (pid %u) answers on %s", s.status->status_info->version,
		  s.status->status_info->pid, a->opts.gw_socket);
	api_gw_snapshot_free(&s);
}

/*
 * The management plane yields to the data plane (docs/packaging.md, CPU
 * priority): nice --nice and SCHED_BATCH, before any thread starts so that
 * every thread inherits them (on Linux both are per thread). Only ever
 * lowered: a service manager that started us lower already (the unit's
 * Nice= and CPUSchedulingPolicy=) is left alone, and so are its system call
 * filters, which refuse setpriority. A refusal is logged, not fatal.
 */
static void lower_priority(uint32_t nice_to)
{
	struct sched_param sp = { .sched_priority = 0 };
	int cur, pol;

	if (!nice_to)
		return;
	errno = 0;
	cur = getpriority(PRIO_PROCESS, 0);
	if (errno)
		cur = 0;
	if (cur < (int)nice_to && setpriority(PRIO_PROCESS, 0, (int)nice_to))
		GW_NOTICE(COMP, "--nice %u: %s (running at nice %d)", nice_to, strerror(errno), cur);
	pol = sched_getscheduler(0);
	if (pol == SCHED_OTHER && sched_setscheduler(0, SCHED_BATCH, &sp))
		GW_NOTICE(COMP, "SCHED_BATCH: %s (left as started)", strerror(errno));
	errno = 0;
	cur = getpriority(PRIO_PROCESS, 0);
	pol = sched_getscheduler(0);
	GW_NOTICE(COMP, "CPU priority: nice %d, %s", errno ? 0 : cur,
		pol == SCHED_BATCH ? "SCHED_BATCH" : pol == SCHED_IDLE ? "SCHED_IDLE" :
		pol == SCHED_OTHER ? "SCHED_OTHER" : "a real-time policy");
}

int main(int argc, char **argv)
{
	static struct api api;
	struct api *a = &api;
	struct ticker t = { .a = a };
	int rc, status = 1;

	if (argc > 1 && !strcmp(argv[1], "token"))
		return api_token_cli(argc - 1, argv + 1);
	if (parse_cli(argc, argv, &a->opts))
		return GW_EXIT_CONFIG;
	gw_daemon_set_log_level(a->opts.log_level);
	lower_priority(a->opts.nice);
	api_cache_init(&a->cache);
	api_scrape_init(&a->scrape);
	api_stats_init(&a->stats);
	pthread_mutex_init(&a->stats_lock, NULL);
	pthread_rwlock_init(&a->tokens_lock, NULL);
	daemon_api.hup = sighup;
	daemon_api.arg = a;
	if (a->opts.token_file[0]) {
		rc = api_tokens_reload(a);      /* a refusal is logged there, at err */
		if (rc) {
			status = rc == -ENOMEM ? 1 : GW_EXIT_CONFIG;
			goto err_opts;
		}
	} else {
		GW_NOTICE(COMP, "no --token-file: no tokens are configured, every path but /healthz, "
			  "/readyz and /metrics answers 401");
	}

	/* every thread started from here on (libmicrohttpd's) inherits the signal mask */
	if (gw_daemon_start(&daemon_api))
		goto err_opts;
	t.r = daemon_api.r;
	rc = api_ha_start(a->opts.ha_socket, &a->ha);
	if (rc) {
		GW_ERR(COMP, "the HA agent's client: %s", strerror(-rc));
		goto err_opts;
	}
	api_ha_set_status_cache(a->ha, a->opts.status_cache_ms);
	/* in a cluster, the cluster's tokens too (docs/api.md, Cluster tokens) */
	if (!a->opts.config_file[0] && a->opts.token_poll_ms) {
		rc = api_ha_poll_tokens(a->ha, a->opts.token_poll_ms, cluster_tokens_cb, a);
		if (rc) {
			GW_ERR(COMP, "cannot ask the HA agent for the cluster's tokens: %s",
			       strerror(-rc));
			goto err_ha;
		}
	}
	rc = api_http_start(a);
	if (rc) {
		/*
		 * A TLS file refused is logged where it is read; libmicrohttpd's
		 * own refusal (the address, the port, the key) at warn above.
		 */
		if (rc == -EADDRNOTAVAIL)
			GW_ERR(COMP, "cannot serve HTTP on %s (see the line above)", a->opts.listen);
		status = rc == -ENOMEM ? 1 : GW_EXIT_CONFIG;
		goto err_ha;
	}
	if (a->opts.config_file[0])
		GW_NOTICE(COMP, "isergw-api %s serving %s://%s standalone (isergwd %s, its "
			  "configuration %s, %u threads)", ISERGW_VERSION,
			  a->opts.tls_cert[0] ? "https" : "http", a->opts.listen, a->opts.gw_socket,
			  a->opts.config_file, a->opts.threads);
	else
		GW_NOTICE(COMP, "isergw-api %s serving %s://%s (isergwd %s, HA agent %s, %u threads)",
			  ISERGW_VERSION, a->opts.tls_cert[0] ? "https" : "http", a->opts.listen,
			  a->opts.gw_socket, a->opts.ha_socket, a->opts.threads);
	probe_isergwd(a);
	/* HTTP listens: ready (whether isergwd answers is /readyz's business) */
	gw_notify_ready("serving %s://%s", a->opts.tls_cert[0] ? "https" : "http", a->opts.listen);

	reactor_timer_init(&t.tick, tick_cb, &t);
	reactor_timer_arm(t.r, &t.tick, 1000);
	gw_daemon_run(&daemon_api);
	reactor_timer_cancel(t.r, &t.tick);
	status = 0;

	/*
	 * The agent's client first: every operation in flight is answered (503)
	 * and its connection resumed, so that libmicrohttpd stops with no
	 * connection suspended; requests arriving meanwhile are answered 503.
	 */
	api_ha_stop(a->ha);
	api_http_stop(a);
err_ha:
	api_ha_stop(a->ha);
	api_ha_free(a->ha);
	a->ha = NULL;
err_opts:
	opts_free(&a->opts);
	api_tokens_free(&a->tokens);
	api_tokens_free(&a->file_tokens);
	api_tokens_free(&a->cluster_tokens);
	pthread_rwlock_destroy(&a->tokens_lock);
	pthread_mutex_destroy(&a->stats_lock);
	api_cache_destroy(&a->cache);
	api_scrape_destroy(&a->scrape);
	gw_daemon_fini(&daemon_api);
	GW_NOTICE(COMP, "stopped");
	return status;
}
