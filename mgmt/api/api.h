/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api: what its parts share (docs/api.md).
 *
 *   main.c      options, signals, start and stop; the main thread runs a
 *               reactor that only waits for SIGTERM/SIGINT
 *   http.c      the HTTP/1.1 server (libmicrohttpd, its internal poll()
 *               threads): the connection table, routing, problem documents, request accounting
 *   gwclient.c  isergwd's control socket, one short connection per request,
 *               every call bounded by a deadline
 *   haclient.c  the HA agent's local socket, asynchronous: a thread of its
 *               own (a reactor), one connection per call, every call bounded
 *               by a deadline; HTTP handlers never wait for it
 *   v1.c        the /api/v1 operations: chains of agent calls (read the
 *               configuration, change it, apply it) ending in an answer
 *   rest.c      the resources' JSON, routing, checks (pure; unit-tested)
 *   metrics.c   the rendering of /metrics (pure; unit-tested)
 *   auth.c      tokens, the token file, the access policy (pure; unit-tested)
 *   token_cli.c isergw-api token add|list|remove
 */
#ifndef ISERGW_API_H
#define ISERGW_API_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "auth.h"
#include "cache.h"
#include "pace.h"
#include "ctl_wire.h"
#include "isergw_ha.pb-c.h"
#include "metrics.h"
#include "rest.h"

#define API_DEFAULT_LISTEN "127.0.0.1:8080"
#define API_DEFAULT_GW_SOCKET "/run/isergw/isergwd.sock"
#define API_DEFAULT_HA_SOCKET "/run/isergw/ha.sock"
#define API_DG_MAX 64u                  /* --device-group given at most this often */
#define API_PATH_MAX 108u               /* sun_path */

/*
 * Connections past --max-connections that answer /healthz and /readyz only,
 * for when every other one is busy answering (docs/api.md, Limits); the
 * listen backlog is --max-connections, at least API_BACKLOG_MIN
 */
#define API_PROBE_RESERVE 8u
#define API_BACKLOG_MIN 64u

/* --nice: the management plane yields the CPU to the data plane */
#define API_DEFAULT_NICE 10u

struct api_opts {
	char listen[128];
	struct sockaddr_storage addr;   /* --listen, parsed */
	socklen_t addrlen;
	char gw_socket[API_PATH_MAX];
	uint32_t gw_timeout_ms;
	char ha_socket[API_PATH_MAX];
	uint32_t ha_timeout_ms;         /* the agent answers a read (or a write, after the wait) */
	uint32_t change_wait_ms;        /* a write waits for every live member (then 202) */
	char config_file[4096];         /* standalone: isergwd's configuration file ("": cluster) */
	uint32_t threads;
	uint32_t conn_limit;
	uint32_t conn_limit_ip;         /* --max-connections-per-ip */
	uint32_t idle_timeout_s;
	uint32_t nice;                  /* --nice: 0 leaves the priority alone */
	char log_level[16];
	char *dgs[API_DG_MAX];          /* --device-group, besides the default one */
	size_t ndgs;
	/* ---- security (docs/api.md, Security) */
	char token_file[4096];          /* "": no tokens, only the probes and /metrics open */
	uint32_t token_poll_ms;         /* the cluster's tokens asked for this often (0: not) */
	bool metrics_open;              /* /metrics without a token */
	uint32_t metrics_cache_ms;      /* scrapes this close to the last render get it (0: off) */
	bool per_lun_histograms;        /* /metrics: a latency histogram per LUN too */
	uint32_t status_cache_ms;       /* the agent's status this recent is answered again (0: off) */
	uint32_t max_request_rate;      /* requests a second past the probes (0: unpaced) */
	uint32_t request_burst;         /* of those, at once */
	char tls_cert[4096];            /* both or neither: HTTPS */
	char tls_key[4096];
};

struct api_http;
struct api_ha;

struct api {
	struct api_opts opts;
	struct api_http *http;
	struct api_ha *ha;
	pthread_mutex_t stats_lock;     /* the server's threads record, /metrics reads */
	struct api_stats stats;
	/*
	 * ---- the tokens: read by the server's threads, replaced on SIGHUP
	 * (the file's) and when the cluster's change (the HA client's thread).
	 * tokens = the file's, then the cluster's whose names the file has not.
	 */
	pthread_rwlock_t tokens_lock;
	struct api_tokens tokens;
	struct api_tokens file_tokens;
	struct api_tokens cluster_tokens;
	bool tokens_any;                /* a token file given, or the cluster has tokens */
	/* the cluster's tokens (main.c, the HA client's thread only) */
	uint64_t cluster_tokens_gen;
	bool cluster_tokens_seen;       /* an answer came (the agent speaks GetTokens) */
	bool cluster_tokens_failing;    /* the last poll failed (logged once) */
	bool cluster_agent_absent;      /* no agent's socket, none ever answered (logged once) */
	/* ---- rendered configuration reads by generation (cache.h; cluster only) */
	struct api_cache cache;
	/* ---- the last /metrics render (cache.h) */
	struct api_scrape scrape;
	/* ---- request pacing (pace.h) */
	struct api_pace pace;
};

/* ---- http.c */
int api_http_start(struct api *a);
void api_http_stop(struct api *a);
/* Once a second: log lines of windows that ended (connection floods). */
void api_http_tick(struct api *a);

/* ---- main.c: (re)read --token-file; the old tokens stay on an error. 0 or -errno */
int api_tokens_reload(struct api *a);
/*
 * main.c: the cluster's tokens from a TokenList (each checked: a bad one is
 * left out with an err line); in use at once if they differ from those held.
 * Returns the number taken, or -ENOMEM.
 */
int api_cluster_tokens_set(struct api *a, const Isergw__Ha__TokenList *tl);
/* ---- token_cli.c: isergw-api token ... (argv[0] "token"); the exit status */
int api_token_cli(int argc, char **argv);

/* ---- gwclient.c: isergwd's answers for one scrape */
struct api_gw_snapshot {
	CtlReply *status;               /* GetStatus */
	CtlReply *sessions;             /* ListSessions */
	CtlReply *counters;             /* GetCounters */
	CtlReply *alua[API_DG_MAX + 1]; /* GetAluaStates, those that exist */
	size_t nalua;
};

/*
 * Ask isergwd for its status (and, with API_GW_FULL, its sessions, counters and the
 * ALUA states of the default device group and of dgs[]) within timeout_ms in
 * all. Returns 0, or a negative errno with the reason in err (-ETIMEDOUT,
 * -ECONNREFUSED, -ENOENT, a refusal's status). A device group isergwd does
 * not know is left out, not an error.
 */
#define API_GW_FULL        1u   /* sessions, counters, ALUA states too */
#define API_GW_LUN_LATENCY 2u   /* the counters with every LUN's latency buckets */
int api_gw_fetch(const char *socket_path, int timeout_ms, unsigned int what, char *const *dgs,
		 size_t ndgs, struct api_gw_snapshot *s, char *err, size_t errlen);
void api_gw_snapshot_free(struct api_gw_snapshot *s);
/*
 * One control request, its reply (the caller frees it; it may be a refusal:
 * (*rep)->status) within timeout_ms. 0, or a negative errno with why in err.
 */
int api_gw_call(const char *socket_path, int timeout_ms, const CtlRequest *req, CtlReply **rep,
		char *err, size_t errlen);

/* ---- haclient.c: the HA agent's socket, asynchronous */
/*
 * The end of a call, on the client's thread: rc 0 and the agent's reply
 * (which may be a refusal: rep->status; freed after the callback returns), or
 * a negative errno (-ETIMEDOUT, -ECONNREFUSED, -ENOENT, -ECANCELED at stop)
 * and why. The callback may start another call.
 */
typedef void (*api_ha_cb)(void *arg, int rc, Isergw__Ha__ApiReply *rep, const char *why);
int api_ha_start(const char *path, struct api_ha **out);
/*
 * Ends every call in flight (-ECANCELED), then the thread; later calls are
 * refused (-ESHUTDOWN) until api_ha_free, once no other thread calls.
 */
void api_ha_stop(struct api_ha *h);
void api_ha_free(struct api_ha *h);
/*
 * A GetClusterStatus the agent answered within ms is answered again from
 * the client (0: never; the default); any change ending drops it.
 */
void api_ha_set_status_cache(struct api_ha *h, uint32_t ms);
/*
 * Ask the agent for the cluster's tokens (GetTokens) now and every
 * period_ms after each answer, until api_ha_stop; cb gets each answer (or
 * failure) on the client's thread. Call once, after api_ha_start.
 */
int api_ha_poll_tokens(struct api_ha *h, uint32_t period_ms, api_ha_cb cb, void *arg);
/* Any thread. 0: cb will be called exactly once; -ESHUTDOWN, -ENOMEM, -EMSGSIZE: it will not. */
int api_ha_call(struct api_ha *h, const Isergw__Ha__ApiRequest *req, uint32_t timeout_ms,
		api_ha_cb cb, void *arg);
/* The same; fresh: a GetClusterStatus goes to the agent whatever is kept. */
int api_ha_call_ex(struct api_ha *h, const Isergw__Ha__ApiRequest *req, uint32_t timeout_ms,
		   bool fresh, api_ha_cb cb, void *arg);

/* ---- v1.c: the /api/v1 operations */
struct api_answer {
	unsigned int code;
	const char *type;               /* static */
	char *body;                     /* malloc'd, NULL: none */
	size_t len;
	char etag[32];                  /* "" none */
	char location[600];             /* "" none */
	unsigned int retry_after_s;     /* 0 none */
};

typedef void (*api_v1_done)(void *arg, struct api_answer *ans);
/* What can be refused before the agent is asked (a PATCH body): 0 or -EINVAL with e. */
int api_v1_check(const struct rest_match *m, json_object *body, struct rest_err *e);
/*
 * Start operation m (body taken over, may be NULL; if_match: the If-Match
 * header was given, gen its generation, 0 for "*"). 0: done(arg, ans) will
 * be called once, on the HA client's thread, the answer then the caller's;
 * negative errno: it will not (body freed).
 */
int api_v1_start(struct api *a, const struct rest_match *m, json_object *body, bool if_match,
		 uint64_t gen, api_v1_done done, void *arg);
/*
 * An operation of the node's own isergwd (rest_op_local: sessions), on the
 * calling thread, within --isergwd-timeout-ms. grace: DELETE's ?grace_s=
 * (NULL: the connections are dropped at once).
 */
void api_v1_local(struct api *a, const struct rest_match *m, const char *grace,
		  struct api_answer *ans);
void api_answer_problem(struct api_answer *ans, const struct rest_err *e);
void api_answer_free(struct api_answer *ans);

#endif
