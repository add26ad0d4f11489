/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP/1.1 server of isergw-api on libmicrohttpd: its internal poll()
 * thread (or a pool of them, --threads), so that the main thread only waits
 * for signals. Routes: GET/HEAD /healthz, /readyz, /metrics, and the REST
 * resources under /api/v1 (rest.c routes them, v1.c carries them out);
 * everything else is answered with an RFC 9457 problem document (404, 405
 * with Allow).
 *
 * An /api/v1 request that needs the HA agent never waits on this thread: its
 * body is read (body_take, under the guard's cap), checked, then the
 * connection is suspended (MHD_suspend_connection) and the operation handed
 * to the HA client's thread (haclient.c); its answer comes back through
 * v1_done, which resumes the connection, and the next call of on_request
 * queues it.
 * Requests libmicrohttpd refuses itself (a request line it cannot parse,
 * headers above the connection's memory) get its 4xx and a warn line from
 * its error log.
 *
 * Before any route runs, api_guard() (the security section below) answers
 * 401, 403 and 413 (docs/api.md, Security): the policy is auth.c's. Before
 * a connection is taken, conn_admit (the connections section) makes room in
 * a full table (docs/api.md, Limits).
 *
 * This file is the one place that turns libmicrohttpd's results into
 * negative errnos (mhd_rc).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "api.h"
#include "problem.h"
#include "common/list.h"
#include "common/log.h"
#include "common/netaddr.h"
#include "common/reactor.h"

#define COMP "http"
#define CONN_MEMORY_LIMIT (32u * 1024u)    /* request line + headers of one connection */

/*
 * The connection table (docs/api.md, Limits): every connection libmicrohttpd
 * holds, with what it is doing, so that a full table makes room for a new
 * connection by closing an idle one (conn_admit) instead of leaving it in
 * the listen backlog, and keeps API_PROBE_RESERVE connections past
 * --max-connections for the probes.
 */
enum conn_state {
	CONN_IDLE,              /* no request yet, or between two (keep-alive) */
	CONN_RECEIVING,         /* a request's head arrived, its body is arriving */
	CONN_ANSWERING,         /* a whole request: routed, paced, at the agent, answered */
};

/* One TCP connection: its peer, and what it does now. */
struct api_conn {
	struct list_head link;          /* conns.all */
	char peer[64];
	struct sockaddr_storage addr;   /* the peer's */
	int fd;                         /* libmicrohttpd's: valid while linked */
	unsigned int requests;          /* that reached a route */
	enum conn_state state;
	uint64_t since_ms;              /* the last change of state */
	bool authed;                    /* a request on it carried a valid token */
	bool req_authed;                /* the request being received does */
	bool reserve;                   /* past --max-connections: the probes only */
	bool evicted;                   /* closed by conn_admit, not counted any more */
};

struct api_conns {
	pthread_mutex_t mu;
	struct list_head all;
	uint32_t limit;                 /* --max-connections */
	uint32_t limit_ip;              /* --max-connections-per-ip */
	uint32_t n, nres;               /* counted: within limit, in the reserve */
	uint64_t evicted, refused;      /* since the last log line */
	uint64_t log_ms;                /* of that line */
	/* connections closed without a request: one line each, CONN_NOREQ_LINES a window */
	struct gw_log_window noreq;
};

struct api_http {
	struct MHD_Daemon *d;
	struct api_conns conns;
	char *tls_cert;                 /* --tls-cert, --tls-key: PEM, kept while d runs */
	char *tls_key;
	size_t tls_key_len;
	/* lines about what one peer did: CONN_NOREQ_LINES a CONN_LOG_MS (mhd_log_room) */
	pthread_mutex_t peer_mu;        /* never held while calling libmicrohttpd */
	struct gw_log_window peer;
};

/* TLS 1.2 and 1.3 only (GnuTLS priority string) */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define TLS_FILE_MAX (1024u * 1024u)

/* One request, from its first call to its completion. */
struct api_req {
	struct timespec start;
	enum api_route route;
	unsigned int code;
	char method[8];
	/* ---- security: api_guard() */
	char who[API_TOKEN_NAME_MAX + 1];       /* the token's name, "" without one */
	char path[128];                         /* printable, for the write log line */
	uint64_t body_len;                      /* request body bytes seen so far */
	/* /api/v1 */
	struct rest_match m;            /* m.op: the operation (REST_NONE otherwise) */
	char *body;                     /* what was uploaded (NUL-terminated) */
	size_t blen;
	bool suspended;                 /* handed to v1.c, waiting for its answer */
	struct api_pace *pace;          /* past the pacer (--max-request-rate), which its
					   answer's bytes are charged to; NULL: not paced (yet) */
	struct api_pace_wait pw;        /* waiting for its token */
	bool ready;                     /* ans is the answer */
	struct api_answer ans;
	struct MHD_Connection *c;
	bool complete;                  /* the whole request arrived */
};

/* The OpenAPI document, embedded at build time (mgmt/openapi.json). */
extern const char api_openapi_json[];
extern const size_t api_openapi_json_len;

static int mhd_rc(enum MHD_Result r)
{
	return r == MHD_YES ? 0 : -EIO;
}

static double elapsed_s(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void peer_of(struct MHD_Connection *c, char *out, size_t len)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	if (ci && ci->client_addr)
		gw_fmt_sockaddr(ci->client_addr, out, len);
	else
		snprintf(out, len, "unknown");
}

/* Queue body (malloc'd, taken over) with a content type and optional Allow. */
/*
 * Queue an answer (body taken; NULL: none) with Content-Type (type NULL:
 * none), Cache-Control: no-store and the extra headers hdrs (name, value
 * pairs, NULL-terminated; a NULL value skips its header).
 */
static int respond_hdrs(struct MHD_Connection *c, struct api_req *r, unsigned int code,
			const char *type, char *body, size_t len, const char *const *hdrs)
{
	struct MHD_Response *resp;
	int rc = 0;

	if (body && r->pace)
		api_pace_charge(r->pace, len);
	if (body)
		resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	else
		resp = MHD_create_response_from_buffer(0, (void *)(uintptr_t)"",
						       MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(body);
		return -ENOMEM;
	}
	if (type)
		rc = mhd_rc(MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type));
	if (!rc)
		rc = mhd_rc(MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store"));
	for (size_t i = 0; !rc && hdrs && hdrs[i]; i += 2)
		if (hdrs[i + 1])
			rc = mhd_rc(MHD_add_response_header(resp, hdrs[i], hdrs[i + 1]));
	if (!rc)
		rc = mhd_rc(MHD_queue_response(c, code, resp));
	MHD_destroy_response(resp);
	if (!rc)
		r->code = code;
	return rc;
}

static int respond(struct MHD_Connection *c, struct api_req *r, unsigned int code,
		   const char *type, char *body, size_t len, const char *allow)
{
	const char *hdrs[] = { MHD_HTTP_HEADER_ALLOW, allow, NULL };

	return respond_hdrs(c, r, code, type, body, len, hdrs);
}

static int respond_json(struct MHD_Connection *c, struct api_req *r, unsigned int code,
			const char *type, json_object *o, const char *allow)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = s ? strlen(s) : 0;
	char *body = s ? malloc(len + 2) : NULL;

	if (!body) {
		json_object_put(o);
		return -ENOMEM;
	}
	memcpy(body, s, len);
	body[len++] = '\n';
	body[len] = '\0';
	json_object_put(o);
	return respond(c, r, code, type, body, len, allow);
}

/* RFC 9457: type about:blank, the status phrase as title, what went wrong as detail. */
/* A problem document (RFC 9457) with the extra headers hdrs (name, value
 * pairs, NULL-terminated; a NULL value leaves its header out). */
static int problem_v(struct MHD_Connection *c, struct api_req *r, unsigned int code,
		     const char *const *hdrs, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

static int problem_v(struct MHD_Connection *c, struct api_req *r, unsigned int code,
		     const char *const *hdrs, const char *fmt, va_list ap)
{
	char detail[512];
	char *body;
	size_t len;

	vsnprintf(detail, sizeof(detail), fmt, ap);
	body = api_problem_json(code, MHD_get_reason_phrase_for(code), detail, &len);
	if (!body)
		return -ENOMEM;
	return respond_hdrs(c, r, code, API_PROBLEM_TYPE, body, len, hdrs);
}

static int problem(struct MHD_Connection *c, struct api_req *r, unsigned int code,
		   const char *allow, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int problem(struct MHD_Connection *c, struct api_req *r, unsigned int code,
		   const char *allow, const char *fmt, ...)
{
	const char *hdrs[] = { MHD_HTTP_HEADER_ALLOW, allow, NULL };
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = problem_v(c, r, code, hdrs, fmt, ap);
	va_end(ap);
	return rc;
}

/* ------------------------------------------------------------ routes */

static int get_healthz(struct api *a, struct MHD_Connection *c, struct api_req *r)
{
	json_object *o = json_object_new_object();

	(void)a;
	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "status", json_object_new_string("alive"));
	return respond_json(c, r, MHD_HTTP_OK, "application/json", o, NULL);
}

static int get_readyz(struct api *a, struct MHD_Connection *c, struct api_req *r)
{
	struct api_gw_snapshot s;
	char err[256] = "";
	json_object *o;
	int rc;

	rc = api_gw_fetch(a->opts.gw_socket, (int)a->opts.gw_timeout_ms, false, NULL, 0, &s, err,
			  sizeof(err));
	if (rc) {
		GW_INFO(COMP, "not ready: %s", err);
		return problem(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
			       "isergwd does not answer on its control socket: %s", err);
	}
	o = json_object_new_object();
	if (!o) {
		api_gw_snapshot_free(&s);
		return -ENOMEM;
	}
	json_object_object_add(o, "status", json_object_new_string("ready"));
	json_object_object_add(o, "isergwd_version",
			       json_object_new_string(s.status->status_info->version));
	json_object_object_add(o, "isergwd_pid",
			       json_object_new_int64(s.status->status_info->pid));
	api_gw_snapshot_free(&s);
	return respond_json(c, r, MHD_HTTP_OK, "application/json", o, NULL);
}

/*
 * The HA agent's GetClusterStatus for a scrape, asked on the agent client's
 * thread while this one asks isergwd: the reply is packed in the callback
 * (the client frees its own after it) and unpacked here.
 */
struct ha_scrape {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	uint8_t *buf;                   /* the packed ClusterStatus, or NULL */
	size_t len;
};

static void on_ha_scrape(void *arg, int rc, Isergw__Ha__ApiReply *rep, const char *why)
{
	struct ha_scrape *w = arg;
	uint8_t *buf = NULL;
	size_t len = 0;

	if (rc)
		GW_INFO(COMP, "metrics: the HA agent not reached: %s", why ? why : strerror(-rc));
	else if (rep->status || rep->payload_case != ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS)
		GW_INFO(COMP, "metrics: the HA agent refused its status: %s",
			rep->error ? rep->error : "(no reason)");
	else {
		len = protobuf_c_message_get_packed_size(&rep->cluster_status->base);
		buf = malloc(len ? len : 1);
		if (buf)
			protobuf_c_message_pack(&rep->cluster_status->base, buf);
	}
	pthread_mutex_lock(&w->mu);
	w->buf = buf;
	w->len = len;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static int render_metrics(struct api *a, char **text, size_t *len)
{
	struct ha_scrape hw = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	Isergw__Ha__ApiRequest hreq = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__GetClusterStatus gcs = ISERGW__HA__GET_CLUSTER_STATUS__INIT;
	Isergw__Ha__ClusterStatus *cluster = NULL;
	bool asked = false;
	struct api_gw_snapshot s;
	struct metrics_input in = { .version = ISERGW_VERSION };
	Isergw__Ctl__AluaStates *alua[API_DG_MAX + 1];
	struct api_stats stats;
	struct timespec now;
	char err[256] = "";
	int rc;

	hreq.op_case = ISERGW__HA__API_REQUEST__OP_GET_STATUS;
	hreq.get_status = &gcs;
	/* the callback comes exactly once, within the timeout: waited for below */
	asked = a->ha && !api_ha_call(a->ha, &hreq, a->opts.gw_timeout_ms, on_ha_scrape, &hw);
	rc = api_gw_fetch(a->opts.gw_socket, (int)a->opts.gw_timeout_ms, API_GW_FULL |
			  (a->opts.per_lun_histograms ? API_GW_LUN_LATENCY : 0u), a->opts.dgs,
			  a->opts.ndgs, &s, err, sizeof(err));
	if (rc) {
		GW_INFO(COMP, "metrics: isergwd not reached: %s", err);
	} else {
		in.up = true;
		in.status = s.status->status_info;
		in.sessions = s.sessions->sessions;
		in.counters = s.counters->counters;
		in.lun_histograms = a->opts.per_lun_histograms;
		for (size_t i = 0; i < s.nalua; i++)
			alua[i] = s.alua[i]->alua;
		in.alua = alua;
		in.nalua = s.nalua;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	in.now_s = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
	pthread_mutex_lock(&a->stats_lock);
	stats = a->stats;
	pthread_mutex_unlock(&a->stats_lock);
	in.api = &stats;
	if (asked) {
		pthread_mutex_lock(&hw.mu);
		while (!hw.done)
			pthread_cond_wait(&hw.cv, &hw.mu);
		pthread_mutex_unlock(&hw.mu);
		if (hw.buf)
			cluster = isergw__ha__cluster_status__unpack(NULL, hw.len, hw.buf);
		free(hw.buf);
	}
	in.cluster_up = cluster != NULL;
	in.cluster = cluster;
	rc = metrics_render(&in, text, len);
	if (cluster)
		isergw__ha__cluster_status__free_unpacked(cluster, NULL);
	if (in.up)
		api_gw_snapshot_free(&s);
	return rc;
}

/* A scrape: the last render if it is recent enough (--metrics-cache-ms), else a new one. */
static int get_metrics(struct api *a, struct MHD_Connection *c, struct api_req *r)
{
	uint64_t max_age = a->opts.metrics_cache_ms;
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (!api_scrape_get(&a->scrape, gw_now_ms(), max_age, &text, &len)) {
		uint64_t t0 = gw_now_ms(), t1;

		rc = render_metrics(a, &text, &len);
		t1 = gw_now_ms();
		api_scrape_put(&a->scrape, t1, max_age, rc ? NULL : text, len, t1 - t0);
		if (rc)
			return rc;
	}
	return respond(c, r, MHD_HTTP_OK, METRICS_CONTENT_TYPE, text, len, NULL);
}

/* ------------------------------------------------------------ /api/v1 */

/*
 * The bytes of an /api/v1 write's body, kept for v1_request. The cap is the
 * guard's (api_guard: a Content-Length above API_BODY_MAX is 413 before the
 * body is read; api_guard_body/api_guard_complete: a chunked body past it is
 * dropped and answered 413), so that request bodies are limited in one place.
 */
_Static_assert(REST_BODY_MAX == API_BODY_MAX, "rest.c parses what the guard lets through");

static int body_take(struct api_req *r, const char *data, size_t len)
{
	char *b;

	if (len > API_BODY_MAX - r->blen)
		return -EMSGSIZE;       /* the guard said 0: never */
	b = realloc(r->body, r->blen + len + 1);
	if (!b)
		return -ENOMEM;
	memcpy(b + r->blen, data, len);
	r->blen += len;
	b[r->blen] = '\0';
	r->body = b;
	return 0;
}

/* Queue an answer of v1.c (its body taken over). */
static int respond_answer(struct MHD_Connection *c, struct api_req *r, struct api_answer *ans)
{
	char ra[16];
	const char *hdrs[] = {
		MHD_HTTP_HEADER_ETAG, ans->etag[0] ? ans->etag : NULL,
		MHD_HTTP_HEADER_LOCATION, ans->location[0] ? ans->location : NULL,
		MHD_HTTP_HEADER_RETRY_AFTER, ans->retry_after_s ? ra : NULL,
		NULL,
	};
	char *body = ans->body;

	snprintf(ra, sizeof(ra), "%u", ans->retry_after_s);
	ans->body = NULL;
	return respond_hdrs(c, r, ans->code, ans->len ? ans->type : NULL, body, ans->len, hdrs);
}

static int respond_err(struct MHD_Connection *c, struct api_req *r, const struct rest_err *e)
{
	struct api_answer ans;

	api_answer_problem(&ans, e);
	if (!ans.body)
		return -ENOMEM;
	return respond_answer(c, r, &ans);
}

/* On the HA client's thread: the operation's answer; the connection resumes. */
static void v1_done(void *arg, struct api_answer *ans)
{
	struct api_req *r = arg;

	r->ans = *ans;
	r->ready = true;
	MHD_resume_connection(r->c);
}

static int v1_request(struct api *a, struct MHD_Connection *c, struct api_req *r)
{
	struct rest_err e = { .code = 0 };
	json_object *body = NULL;
	const char *im;
	uint64_t gen = 0;
	int rc;

	if (r->m.op == REST_OPENAPI) {
		char *doc = malloc(api_openapi_json_len);

		if (!doc)
			return -ENOMEM;
		memcpy(doc, api_openapi_json, api_openapi_json_len);
		return respond(c, r, MHD_HTTP_OK, "application/json", doc, api_openapi_json_len,
			       NULL);
	}
	if (rest_op_local(r->m.op)) {
		api_v1_local(a, &r->m, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
								   "grace_s"), &r->ans);
		if (!r->ans.body && r->ans.code != 204)
			return -ENOMEM;
		return respond_answer(c, r, &r->ans);
	}
	im = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_MATCH);
	if (!rest_op_writes(r->m.op))
		im = NULL;      /* a read answers the current state, whatever the client holds */
	if (im && rest_if_match(im, &gen)) {
		e.code = MHD_HTTP_PRECONDITION_FAILED;
		snprintf(e.detail, sizeof(e.detail), "If-Match: %.64s is not an entity tag of this "
			 "API (one strong tag \"gN\" as in an ETag, or *)", im);
		return respond_err(c, r, &e);
	}
	if (r->m.op == REST_NODE_PATCH &&
	    rest_force_param(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "force"),
			     &r->m.force, &e))
		return respond_err(c, r, &e);
	if (rest_op_has_body(r->m.op)) {
		rc = rest_parse_body(r->body, r->blen, &body, &e);
		if (!rc)
			rc = api_v1_check(&r->m, body, &e);
		if (rc) {
			json_object_put(body);
			return respond_err(c, r, &e);
		}
	}
	/* suspended first: the answer may come back before api_v1_start returns */
	r->c = c;
	r->suspended = true;
	MHD_suspend_connection(c);
	rc = api_v1_start(a, &r->m, body, im != NULL, gen, v1_done, r);
	if (rc) {
		rest_agent_unreachable(rc, rc == -ESHUTDOWN ? "isergw-api is stopping" :
				       strerror(-rc), &e);
		api_answer_problem(&r->ans, &e);
		r->ready = true;
		MHD_resume_connection(c);
	}
	return 0;
}

static struct api_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* The connection's request moves on (conn_admit reads the state). */
static void conn_set(struct api *a, struct MHD_Connection *c, enum conn_state st)
{
	struct api_conns *t = &a->http->conns;
	struct api_conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&t->mu);
	if (st == CONN_RECEIVING) {
		k->requests++;
		k->req_authed = false;
	}
	k->state = st;
	k->since_ms = gw_now_ms();
	pthread_mutex_unlock(&t->mu);
}

/* The request being received carries a valid token. */
static void conn_authed(struct api *a, struct MHD_Connection *c)
{
	struct api_conns *t = &a->http->conns;
	struct api_conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&t->mu);
	k->authed = k->req_authed = true;
	pthread_mutex_unlock(&t->mu);
}

/* RFC 9110 5.6.2: a method is a token. */
static bool is_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || strchr("!#$%&'*+-.^_`|~", *s)))
			return false;
	return true;
}

/* ------------------------------------------------------------ security */
/*
 * The guard (docs/api.md, Security): on a request's first call, before any
 * route, what the request needs (auth.c's api_access_of) against its bearer
 * token (api_authorize), then a Content-Length over API_BODY_MAX; on every
 * piece of body, the bytes so far against API_BODY_MAX. A refusal is a
 * problem document and closes the connection. Neither the token nor the
 * Authorization header is ever logged or answered; the token's name is.
 */

#define WWW_AUTH "Bearer realm=\"" API_REALM "\""
#define WWW_AUTH_INVALID WWW_AUTH ", error=\"invalid_token\""

/* Queue a refusal of the guard. 1 when queued, or a negative errno. */
static int guard_refuse(struct MHD_Connection *c, struct api_req *r, unsigned int code,
			const char *www_auth, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int guard_refuse(struct MHD_Connection *c, struct api_req *r, unsigned int code,
			const char *www_auth, const char *fmt, ...)
{
	const char *hdrs[] = { MHD_HTTP_HEADER_WWW_AUTHENTICATE, www_auth,
			       MHD_HTTP_HEADER_CONNECTION, "close", NULL };
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = problem_v(c, r, code, hdrs, fmt, ap);
	va_end(ap);
	return rc ? rc : 1;
}

struct hdr_count {
	const char *name;
	unsigned int n;
};

static enum MHD_Result count_hdr(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct hdr_count *h = cls;

	(void)kind;
	(void)value;
	h->n += !strcasecmp(key, h->name);
	return MHD_YES;
}

/* How many times the request carries header name. */
static unsigned int header_count(struct MHD_Connection *c, const char *name)
{
	struct hdr_count h = { .name = name };

	MHD_get_connection_values(c, MHD_HEADER_KIND, count_hdr, &h);
	return h.n;
}

/* 0: the request may go on; 1: refused (answered); or a negative errno. */
static int api_guard(struct api *a, struct MHD_Connection *c, const char *url,
		     const char *method, struct api_req *r)
{
	const struct api_token *who;
	const char *authz, *cl;
	enum api_access need;
	enum api_authz v;
	char peer[64];
	bool any;
	size_t i;

	for (i = 0; url[i] && i + 1 < sizeof(r->path); i++)
		r->path[i] = url[i] > ' ' && url[i] < 0x7f ? url[i] : '?';
	r->path[i] = '\0';
	/*
	 * Which of two would count is a guess a proxy in front may make
	 * otherwise (RFC 9110 5.3: Authorization is not a list): refused
	 */
	if (header_count(c, MHD_HTTP_HEADER_AUTHORIZATION) > 1) {
		peer_of(c, peer, sizeof(peer));
		GW_WARN(COMP, "refused %s %s from %s: more than one Authorization header",
			r->method, r->path, peer);
		return guard_refuse(c, r, MHD_HTTP_BAD_REQUEST, NULL,
				    "more than one Authorization header: send one");
	}
	authz = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	pthread_rwlock_rdlock(&a->tokens_lock);
	any = a->tokens_any;
	need = api_access_of(method, url, any, a->opts.metrics_open);
	v = api_authorize(&a->tokens, authz, need, &who);
	if (who)
		snprintf(r->who, sizeof(r->who), "%s", who->name);
	pthread_rwlock_unlock(&a->tokens_lock);
	switch (v) {
	case API_AUTHZ_OK:
		if (r->who[0])
			conn_authed(a, c);
		break;
	case API_AUTHZ_NO_TOKEN:
		if (!any)
			return guard_refuse(c, r, MHD_HTTP_UNAUTHORIZED, WWW_AUTH,
					    "no tokens are configured (isergw-api --token-file): "
					    "%s cannot be reached", r->path);
		return guard_refuse(c, r, MHD_HTTP_UNAUTHORIZED, WWW_AUTH,
				    "a bearer token is needed (Authorization: Bearer TOKEN)");
	case API_AUTHZ_BAD_TOKEN:
		peer_of(c, peer, sizeof(peer));
		GW_WARN(COMP, "refused %s %s from %s: the bearer token is not valid", r->method,
			r->path, peer);
		return guard_refuse(c, r, MHD_HTTP_UNAUTHORIZED, WWW_AUTH_INVALID,
				    "the bearer token is not valid");
	case API_AUTHZ_FORBIDDEN:
		peer_of(c, peer, sizeof(peer));
		GW_WARN(COMP, "refused %s %s from %s: token %s is read-only", r->method, r->path,
			peer, r->who);
		return guard_refuse(c, r, MHD_HTTP_FORBIDDEN, NULL,
				    "token %s is read-only: %s needs an admin token", r->who,
				    r->method);
	}
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl) {
		char *end;
		unsigned long long n;

		errno = 0;
		n = strtoull(cl, &end, 10);
		if (errno || end == cl || n > API_BODY_MAX)
			return guard_refuse(c, r, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
					    "the request body (Content-Length %.24s) is over the "
					    "limit of %u bytes", cl, API_BODY_MAX);
	}
	return 0;
}

/*
 * n more body bytes (a chunked one, or one the route reads). libmicrohttpd
 * 0.9.75 cannot queue an answer while a body is arriving, so past
 * API_BODY_MAX the rest is read and dropped, and api_guard_complete()
 * answers 413 once the body ends; a body still going at BODY_DRAIN_MAX
 * closes the connection without an answer. Returns 0 (a route may keep the
 * bytes), 1 (past API_BODY_MAX: drop them) or -EFBIG (close).
 */
#define BODY_DRAIN_MAX (4ull * API_BODY_MAX)

static int api_guard_body(struct MHD_Connection *c, struct api_req *r, size_t n)
{
	char peer[64];

	r->body_len += n;
	if (r->body_len <= API_BODY_MAX)
		return 0;
	if (r->body_len <= BODY_DRAIN_MAX)
		return 1;
	peer_of(c, peer, sizeof(peer));
	GW_WARN(COMP, "%s %s from %s: a request body over %llu bytes, connection closed",
		r->method, r->path, peer, BODY_DRAIN_MAX);
	return -EFBIG;
}

/* The request is complete: 413 when its body passed API_BODY_MAX. 0, 1 (answered) or -errno. */
static int api_guard_complete(struct MHD_Connection *c, struct api_req *r)
{
	if (r->body_len <= API_BODY_MAX)
		return 0;
	return guard_refuse(c, r, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
			    "the request body (%llu bytes) is over the limit of %u bytes",
			    (unsigned long long)r->body_len, API_BODY_MAX);
}

/* Every write that passed the guard: the token's name, never its secret. */
static void api_log_write(const struct api_req *r, enum MHD_RequestTerminationCode toe)
{
	if (!r->who[0] || api_method_is_read(r->method) || r->code == MHD_HTTP_FORBIDDEN)
		return;
	GW_NOTICE(COMP, "write by token %s: %s %s %u%s", r->who, r->method, r->path, r->code,
		  toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (not completed)");
}

/* ------------------------------------------------------------ connections */
/*
 * libmicrohttpd holds at most --max-connections + API_PROBE_RESERVE
 * connections by our count, --max-connections-per-ip from one address:
 * conn_admit (its accept policy, on the thread that accepted) decides,
 * on_connection counts. A new connection from an address at its limit
 * makes room among that address's own connections (refused when none may
 * go); then, when the table is full, among all. Room is made by closing
 * the idle connection that has been so longest, one that never carried a
 * valid token first (no request yet, a request head or body still arriving
 * without a token, or idle between requests), then an idle one that did; a
 * connection whose request is being answered, or whose token was valid
 * while its body arrives, is never closed for another. With none to close
 * in a full table, the new connection takes one of
 * API_PROBE_RESERVE places that answer /healthz and /readyz only (503
 * otherwise); with those taken too it is closed at once, so that the listen
 * backlog never holds connections nobody will accept.
 *
 * A connection is closed by shutdown(2) of its socket: its thread sees the
 * end of it in its next poll() and libmicrohttpd closes it. The socket is
 * libmicrohttpd's and stays open until on_connection(CLOSED) returns, which
 * takes the table's lock first: a socket in the table is never one that
 * was closed and reused.
 */
#define CONN_LOG_MS 10000u              /* at most one line this often */
#define CONN_NOREQ_LINES 20u            /* "closed without a request" lines per CONN_LOG_MS */

/*
 * The connection conn_admit let in on this thread, until on_connection
 * (STARTED), which libmicrohttpd calls next on the same thread, takes it;
 * one still here at the next conn_admit never started.
 */
static _Thread_local struct api_conn *conn_pending;

/*
 * The connections closed to make room and refused since the last line, at
 * most one line a CONN_LOG_MS; last: the newest connection's peer (NULL
 * from the tick, which has none). Under t->mu.
 */
static void conn_log_limits(struct api_conns *t, uint64_t now, const char *last)
{
	if (!(t->evicted || t->refused) || now - t->log_ms < CONN_LOG_MS)
		return;
	GW_WARN(COMP, "connection limits reached (--max-connections %u and %u for "
		"the probes, --max-connections-per-ip %u): %" PRIu64 " idle connections "
		"closed to make room, %" PRIu64 " refused (none idle) since the last such "
		"line%s%s", t->limit, API_PROBE_RESERVE, t->limit_ip, t->evicted, t->refused,
		last ? "; the last new one from " : "", last ? last : "");
	t->evicted = t->refused = 0;
	t->log_ms = now;
}

/* The count of the connections closed without a request not logged one by one. */
static void conn_log_noreq_quiet(struct api_conns *t, uint64_t now)
{
	uint64_t quiet = gw_log_window_roll(&t->noreq, now, CONN_LOG_MS);

	if (quiet)
		GW_NOTICE(COMP, "%" PRIu64 " more connections closed without a request "
			  "that could be answered in %u s (not logged one by one)",
			  quiet, CONN_LOG_MS / 1000);
}

/*
 * The lines about what a single peer did (libmicrohttpd's: a refusal, a
 * connection closed or reset half-way; ours: a method that is no token):
 * as the "closed without a request" lines, CONN_NOREQ_LINES in CONN_LOG_MS,
 * then one line counting the others. Their own lock: libmicrohttpd writes
 * them from any of its threads, and never while one of ours is held by us.
 */
static void peer_log_quiet(struct api_http *h, uint64_t now)
{
	uint64_t quiet = gw_log_window_roll(&h->peer, now, CONN_LOG_MS);

	if (quiet)
		GW_NOTICE(COMP, "%" PRIu64 " more lines about single connections (refused, "
			  "closed or reset half-way) not written in %u s", quiet,
			  CONN_LOG_MS / 1000);
}

/* Whether a line about one peer may be written now (else it is counted). */
static bool peer_log_room(struct api *a)
{
	struct api_http *h = a->http;
	bool room;

	if (!h)
		return true;    /* libmicrohttpd starting or stopping */
	pthread_mutex_lock(&h->peer_mu);
	peer_log_quiet(h, gw_now_ms());
	room = gw_log_window_take(&h->peer, CONN_NOREQ_LINES);
	pthread_mutex_unlock(&h->peer_mu);
	return room;
}

/* 0: the one to close first; 1: then; -1: never */
static int conn_rank(const struct api_conn *k)
{
	if (k->evicted || k->fd < 0)
		return -1;
	if (k->state == CONN_IDLE)
		return k->authed ? 1 : 0;
	if (k->state == CONN_RECEIVING && !k->req_authed)
		return 0;
	return -1;
}

/* Whether k's peer is host a (the port aside). */
static bool conn_from(const struct api_conn *k, const struct sockaddr *a)
{
	if (k->addr.ss_family != a->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)&k->addr)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)a)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)&k->addr)->sin6_addr,
			       &((const struct sockaddr_in6 *)a)->sin6_addr, sizeof(struct in6_addr));
	return false;
}

/*
 * The connection to close first among those from host (NULL: any), under
 * t->mu; NULL when none may be closed. *n: how many are from host.
 */
static struct api_conn *conn_victim(struct api_conns *t, const struct sockaddr *host,
				    uint32_t *n)
{
	struct api_conn *k, *victim = NULL;
	struct list_head *pos;
	int best = 2, rank;

	*n = 0;
	list_for_each(pos, &t->all) {
		k = list_entry(pos, struct api_conn, link);
		if (k->evicted || (host && !conn_from(k, host)))
			continue;
		++*n;
		rank = conn_rank(k);
		if (rank < 0 || rank > best || (rank == best && k->since_ms >= victim->since_ms))
			continue;
		victim = k;
		best = rank;
	}
	return victim;
}

/* Close k for a new connection, under t->mu. */
static void conn_evict(struct api_conns *t, struct api_conn *k, uint64_t now)
{
	shutdown(k->fd, SHUT_RDWR);
	k->evicted = true;
	if (k->reserve)
		t->nres--;
	else
		t->n--;
	t->evicted++;
	GW_DEBUG(COMP, "closed %s's connection, idle for %" PRIu64 " ms, for a new one", k->peer,
		 now - k->since_ms);
}

/* k leaves the table (its count too, unless it was closed for another), under t->mu. */
static void conn_drop(struct api_conns *t, struct api_conn *k)
{
	list_del(&k->link);
	if (k->evicted)
		return;
	if (k->reserve)
		t->nres--;
	else
		t->n--;
}

static enum MHD_Result conn_admit(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct api *a = cls;
	struct api_conns *t = &a->http->conns;
	struct api_conn *victim;
	enum MHD_Result ok = MHD_YES;
	uint64_t now = gw_now_ms();
	uint32_t nhost;
	struct api_conn *k;

	(void)addrlen;
	pthread_mutex_lock(&t->mu);
	if (conn_pending) {
		conn_drop(t, conn_pending);
		free(conn_pending);
		conn_pending = NULL;
	}
	/* the address's own connections first: its limit is the same whoever it is */
	victim = conn_victim(t, addr, &nhost);
	if (nhost >= t->limit_ip) {
		if (victim)
			conn_evict(t, victim, now);
		else
			ok = MHD_NO;
	}
	if (ok == MHD_YES && t->n >= t->limit) {
		victim = conn_victim(t, NULL, &nhost);
		if (victim)
			conn_evict(t, victim, now);
		else if (t->nres >= API_PROBE_RESERVE)
			ok = MHD_NO;
	}
	/* counted now: another thread may take the next connection before this one starts */
	k = ok == MHD_YES ? calloc(1, sizeof(*k)) : NULL;
	if (k) {
		gw_fmt_sockaddr(addr, k->peer, sizeof(k->peer));
		memcpy(&k->addr, addr, addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
		       sizeof(struct sockaddr_in));
		k->fd = -1;
		k->since_ms = now;
		k->reserve = t->n >= t->limit;
		if (k->reserve)
			t->nres++;
		else
			t->n++;
		list_add_tail(&k->link, &t->all);
		conn_pending = k;
	} else {
		ok = MHD_NO;
	}
	t->refused += ok == MHD_NO;
	conn_log_limits(t, now, k ? k->peer : "(refused)");
	pthread_mutex_unlock(&t->mu);
	return ok;
}

/*
 * Called every second from the main thread: the counting lines of a window
 * that ended with no connection after it (a flood that stopped) are written
 * now rather than at the next connection, which may never come.
 */
void api_http_tick(struct api *a)
{
	struct api_conns *t;
	uint64_t now = gw_now_ms();

	if (!a->http)
		return;
	t = &a->http->conns;
	pthread_mutex_lock(&t->mu);
	conn_log_limits(t, now, NULL);
	conn_log_noreq_quiet(t, now);
	pthread_mutex_unlock(&t->mu);
	pthread_mutex_lock(&a->http->peer_mu);
	peer_log_quiet(a->http, now);
	pthread_mutex_unlock(&a->http->peer_mu);
}

/* Whether c holds one of the probes' places (on its own thread). */
static bool conn_reserved(struct MHD_Connection *c)
{
	struct api_conn *k = conn_of(c);

	return k && k->reserve;         /* set before its first request, never changed */
}

/* A request other than a probe on a probe's place: 503, closed. 0 or -errno. */
static int reserve_refuse(struct api *a, struct MHD_Connection *c, struct api_req *r)
{
	const char *hdrs[] = { MHD_HTTP_HEADER_RETRY_AFTER, "1",
			       MHD_HTTP_HEADER_CONNECTION, "close", NULL };
	char detail[200];
	char *body;
	size_t len;

	snprintf(detail, sizeof(detail), "every connection (--max-connections %u) is busy "
		 "answering; this one is kept for /healthz and /readyz", a->opts.conn_limit);
	body = api_problem_json(MHD_HTTP_SERVICE_UNAVAILABLE,
				MHD_get_reason_phrase_for(MHD_HTTP_SERVICE_UNAVAILABLE), detail,
				&len);
	if (!body)
		return -ENOMEM;
	return respond_hdrs(c, r, MHD_HTTP_SERVICE_UNAVAILABLE, API_PROBLEM_TYPE, body, len, hdrs);
}

/*
 * k closed before any request on it could be answered: a line naming its
 * peer, CONN_NOREQ_LINES in CONN_LOG_MS at most (a client opening and
 * dropping thousands of connections would fill the journal), then one
 * counting the rest. Under t->mu.
 */
static void conn_log_noreq(struct api_conns *t, const struct api_conn *k)
{
	conn_log_noreq_quiet(t, gw_now_ms());
	if (gw_log_window_take(&t->noreq, CONN_NOREQ_LINES))
		GW_NOTICE(COMP, "connection from %s closed without a request that could be "
			  "answered (malformed, too large, or none sent)", k->peer);
}

/*
 * A connection starts (counted) or ends. One that closes before any request
 * on it reached a route: what libmicrohttpd refused (its own warn line says
 * why) or a client that sent nothing, or too little to be a request. One
 * line naming the peer.
 */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct api *a = cls;
	struct api_conns *t = &a->http->conns;
	struct api_conn *k = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		pthread_mutex_lock(&t->mu);
		k = conn_pending;
		conn_pending = NULL;
		if (k && ci) {
			k->fd = ci->connect_fd;
		} else if (k) {         /* no socket to close: not in the table */
			conn_drop(t, k);
			free(k);
			k = NULL;
		}
		pthread_mutex_unlock(&t->mu);
		*socket_context = k;
		return;
	}
	if (!k)
		return;
	pthread_mutex_lock(&t->mu);
	conn_drop(t, k);
	if (!k->requests && !k->evicted)
		conn_log_noreq(t, k);
	pthread_mutex_unlock(&t->mu);
	free(k);
	*socket_context = NULL;
}

typedef int (*route_fn)(struct api *a, struct MHD_Connection *c, struct api_req *r);

static const route_fn routes[API_ROUTE_N] = {
	[API_ROUTE_HEALTHZ] = get_healthz,
	[API_ROUTE_READYZ] = get_readyz,
	[API_ROUTE_METRICS] = get_metrics,
	[API_ROUTE_V1] = v1_request,
};

/* The pacer: suspended under its lock, resumed from its thread (MHD allows either). */
static void pace_suspend(void *arg)
{
	MHD_suspend_connection(arg);
}

static void pace_go(void *arg)
{
	MHD_resume_connection(arg);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct api *a = cls;
	struct api_req *r = *req_cls;
	int rc;

	(void)version;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		clock_gettime(CLOCK_MONOTONIC, &r->start);
		r->route = api_route_of(url);
		/* only a token goes into a log line */
		snprintf(r->method, sizeof(r->method), "%s", is_token(method) ? method : "-");
		*req_cls = r;
		conn_set(a, c, CONN_RECEIVING);
		/*
		 * Refusals are answered at once, before any body is read (the
		 * connection is closed after them); a route answers on the
		 * next call, once the request is complete, so that the
		 * connection can be kept alive.
		 */
		if (!is_token(method)) {
			char peer[64];

			peer_of(c, peer, sizeof(peer));
			if (peer_log_room(a))
				GW_WARN(COMP, "refused a request from %s: its method is not an "
					"HTTP token", peer);
			rc = problem(c, r, MHD_HTTP_BAD_REQUEST, NULL,
				     "the request method is not an HTTP token (RFC 9110 9.1)");
		} else if (conn_reserved(c) && r->route != API_ROUTE_HEALTHZ &&
			   r->route != API_ROUTE_READYZ) {
			rc = reserve_refuse(a, c, r);
		} else if ((rc = api_guard(a, c, url, method, r)) != 0) {
			/* 401, 403 or 413 answered (1), or an error */
			rc = rc > 0 ? 0 : rc;
		} else if (r->route == API_ROUTE_V1) {
			rc = rest_route(method, url, &r->m);
			if (rc == -ENOENT)
				rc = problem(c, r, MHD_HTTP_NOT_FOUND, NULL, "no resource at %.200s",
					     url);
			else if (rc)
				rc = problem(c, r, MHD_HTTP_METHOD_NOT_ALLOWED, r->m.allow,
					     "%.16s is not allowed on %.200s (%s)", method, url,
					     r->m.allow);
			else
				return MHD_YES;
		} else if (r->route == API_ROUTE_OTHER)
			rc = problem(c, r, MHD_HTTP_NOT_FOUND, NULL, "no resource at %.200s", url);
		else if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
			rc = problem(c, r, MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD",
				     "%.16s is not allowed on %s (GET, HEAD)", method,
				     api_route_name(r->route));
		else
			return MHD_YES;
		return rc ? MHD_NO : MHD_YES;
	}
	if (*upload_data_size) {
		/*
		 * Counted by the guard (its cap); a write of /api/v1 keeps the
		 * bytes below it, everything else is read and dropped
		 */
		rc = api_guard_body(c, r, *upload_data_size);
		if (!rc && rest_op_has_body(r->m.op))
			rc = body_take(r, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return rc < 0 ? MHD_NO : MHD_YES;
	}
	if (!r->complete) {
		r->complete = true;
		conn_set(a, c, CONN_ANSWERING);
	}
	if (r->code)
		return MHD_YES;
	if (r->ready) {
		r->ready = false;
		rc = respond_answer(c, r, &r->ans);
		return rc ? MHD_NO : MHD_YES;
	}
	if (r->suspended)
		return MHD_YES;
	/* every request but the probes waits for its token (--max-request-rate) */
	if (!r->pace && r->route != API_ROUTE_HEALTHZ && r->route != API_ROUTE_READYZ) {
		r->pace = &a->pace;
		r->c = c;
		r->pw.go = pace_go;
		r->pw.arg = c;
		if (!api_pace_take(&a->pace, &r->pw, pace_suspend, c))
			return MHD_YES; /* suspended: called again once its token came */
	}
	rc = api_guard_complete(c, r);
	if (rc)
		return rc > 0 ? MHD_YES : MHD_NO;
	rc = routes[r->route](a, c, r);
	if (rc && !r->code)
		rc = problem(c, r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", strerror(-rc));
	return rc ? MHD_NO : MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct api *a = cls;
	struct api_req *r = *req_cls;
	double secs;

	if (!r)
		return;
	*req_cls = NULL;
	conn_set(a, c, CONN_IDLE);
	secs = elapsed_s(&r->start);
	api_log_write(r, toe);
	if (r->code) {
		pthread_mutex_lock(&a->stats_lock);
		api_stats_record(&a->stats, r->route, r->code, secs);
		pthread_mutex_unlock(&a->stats_lock);
	}
	if (gw_log_get_level() >= GW_LOG_INFO) {
		char peer[64];

		peer_of(c, peer, sizeof(peer));
		GW_INFO(COMP, "%s %s %u from %s in %.1f ms%s", r->method,
			api_route_name(r->route), r->code, peer, secs * 1000,
			toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (not completed)");
	}
	if (r->ready)
		api_answer_free(&r->ans);
	free(r->body);
	free(r);
}

/* Both PEM files into h, or -errno with a line naming the path. */
static int tls_load(struct api *a, struct api_http *h)
{
	char err[512];
	size_t len;
	int rc;

	if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
		GW_ERR(COMP, "--tls-cert: this libmicrohttpd is built without TLS");
		return -ENOTSUP;
	}
	rc = api_read_file(a->opts.tls_cert, TLS_FILE_MAX, false, &h->tls_cert, &len, err,
			   sizeof(err));
	if (rc) {
		GW_ERR(COMP, "--tls-cert %s", err);
		return rc;
	}
	/* the private key: as private as the token file (a symbolic link to one is fine) */
	rc = api_read_file(a->opts.tls_key, TLS_FILE_MAX, true, &h->tls_key, &h->tls_key_len, err,
			   sizeof(err));
	if (rc) {
		GW_ERR(COMP, "--tls-key %s", err);
		return rc;
	}
	return 0;
}

static void tls_free(struct api_http *h)
{
	if (h->tls_key)
		OPENSSL_cleanse(h->tls_key, h->tls_key_len);
	free(h->tls_key);
	free(h->tls_cert);
}

/*
 * What libmicrohttpd 0.9.75 says about one connection its peer closed, reset
 * or broke half-way: the peer's doing, a notice, and as many as there are
 * such connections (a flood of them is the peer_log_room limit's case).
 */
static const char *const mhd_peer_msgs[] = {
	"Connection was closed by remote side",
	"Connection socket is closed when reading request",
	"Socket has been disconnected when reading request",
	"Failed to send data in request",
	"Too large value of 'Content-Length' header",
	"Failed to parse `Content-Length' header",
};

/*
 * libmicrohttpd's own messages: a request it refused, a connection its peer
 * broke, or its own trouble (a socket it cannot accept, memory). Its refusals
 * carry an HTML page; the line keeps the status and the page's title. The
 * first two are about single peers and follow peer_log_room; the last are
 * warnings, every one.
 */
__attribute__((format(printf, 2, 0)))
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct api *a = cls;
	char line[512];
	const char *code, *t0, *t1;
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = '\0';
	code = strstr(line, "HTTP response code is ");
	t0 = strstr(line, "<title>");
	t1 = t0 ? strstr(t0, "</title>") : NULL;
	if (code && t0 && t1) {
		t0 += strlen("<title>");
		if (peer_log_room(a))
			GW_WARN(COMP, "refused a request: HTTP %.3s %.*s",
				code + strlen("HTTP response code is "), (int)(t1 - t0), t0);
		return;
	}
	for (size_t i = 0; i < sizeof(mhd_peer_msgs) / sizeof(mhd_peer_msgs[0]); i++) {
		if (!strncmp(line, mhd_peer_msgs[i], strlen(mhd_peer_msgs[i]))) {
			if (peer_log_room(a))
				GW_NOTICE(COMP, "%s", line);
			return;
		}
	}
	GW_WARN(COMP, "%s", line);
}

int api_http_start(struct api *a)
{
	struct api_http *h = calloc(1, sizeof(*h));
	/*
	 * poll(), not epoll: libmicrohttpd 0.9.75's edge-triggered epoll loses
	 * the end of a connection that came with the last bytes of a request
	 * (a partial request and a FIN in one segment): it reads the bytes,
	 * never reads again and keeps the connection until the idle timeout.
	 * poll() is level-triggered, so the end is seen at once. A thread's
	 * poll() covers its share of at most --max-connections + the probes'.
	 */
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
			     MHD_ALLOW_SUSPEND_RESUME;
	/*
	 * libmicrohttpd's own limit (each thread of the pool gets its share)
	 * stays above ours, with room for connections closed but not yet
	 * reaped, so that conn_admit decides; the listen backlog holds no more
	 * than a table's worth of connections waiting for accept()
	 */
	unsigned int mhd_limit = (a->opts.conn_limit + API_PROBE_RESERVE) * 2 * a->opts.threads;
	unsigned int backlog = a->opts.conn_limit > API_BACKLOG_MIN ? a->opts.conn_limit :
			       API_BACKLOG_MIN;
	/* a pool of one is no pool (libmicrohttpd warns): the option only from two up */
	struct MHD_OptionItem extra[5];
	size_t n = 0;
	int rc;

	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->conns.mu, NULL);
	pthread_mutex_init(&h->peer_mu, NULL);
	list_init(&h->conns.all);
	h->conns.limit = a->opts.conn_limit;
	h->conns.limit_ip = a->opts.conn_limit_ip;
	a->http = h;            /* the callbacks find the table there */
	if (a->opts.threads > 1)
		extra[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE,
						      (intptr_t)a->opts.threads, NULL };
	if (a->opts.addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (a->opts.tls_cert[0]) {
		rc = tls_load(a, h);
		if (rc)
			goto err_free;
		flags |= MHD_USE_TLS;
		extra[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert };
		extra[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key };
		extra[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
						      (void *)TLS_PRIORITIES };
	}
	extra[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	rc = api_pace_init(&a->pace, a->opts.max_request_rate,
			   a->opts.request_burst ? a->opts.request_burst :
			   a->opts.max_request_rate / 20 + 1);
	if (rc)
		goto err_free;
	h->d = MHD_start_daemon(flags, 0, conn_admit, a, on_request, a,
				MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, a,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a->opts.addr,
				MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
				MHD_OPTION_LISTEN_BACKLOG_SIZE, backlog,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)a->opts.idle_timeout_s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY_LIMIT,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, a,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, a,
				MHD_OPTION_ARRAY, extra,
				MHD_OPTION_END);
	if (!h->d) {
		api_pace_destroy(&a->pace);
		rc = -EADDRNOTAVAIL;
		goto err_free;
	}
	return 0;
err_free:
	a->http = NULL;
	pthread_mutex_destroy(&h->conns.mu);
	pthread_mutex_destroy(&h->peer_mu);
	tls_free(h);
	free(h);
	return rc;
}

void api_http_stop(struct api *a)
{
	if (!a->http)
		return;
	api_pace_stop(&a->pace);        /* the requests waiting go first */
	MHD_stop_daemon(a->http->d);
	api_pace_destroy(&a->pace);
	/* what was let in but never started */
	while (!list_empty(&a->http->conns.all)) {
		struct api_conn *k = list_first_entry(&a->http->conns.all, struct api_conn, link);

		list_del(&k->link);
		free(k);
	}
	pthread_mutex_destroy(&a->http->conns.mu);
	pthread_mutex_destroy(&a->http->peer_mu);
	tls_free(a->http);
	free(a->http);
	a->http = NULL;
}
