/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl target | lun | node | device-group | config | api ...: the
 * operator's command line for the REST resources of isergw-api (/api/v1,
 * docs/api.md), with libcurl (docs/rest-cli.md). One HTTP request per command
 * (plus the polls of --wait), bounded by --timeout; TLS verified unless
 * --insecure says otherwise out loud; a bearer token read from a file that
 * only its owner may read, and never printed.
 *
 * This file owns the usage, the talking (libcurl, --wait), the token and the
 * entry. The pure half is declared in isergwctl.h and unit-tested by
 * tests/unit/test_isergwctl_rest.c: a problem document into a message and
 * an HTTP status into an exit status (here), arguments into a request and
 * KEY=VALUE into a merge patch (isergwctl_rest_args.c), the tables
 * (isergwctl_rest_render.c). libcurl's CURLcode becomes a negative errno in
 * one place, curl_rc().
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "isergwctl.h"

#define ANSWER_MAX    (16u << 20)   /* an answer body, bytes */
#define TOKEN_MAX     4096u
#define POLL_MS       500           /* --wait: between two reads of the operation */

/* ------------------------------------------------------------ usage */

void isergwctl_rest_usage(FILE *f)
{
	fprintf(f,
"Usage: isergwctl [--api URL] [--token-file F] [--cacert FILE] [--insecure]\n"
"                 [--json] [--timeout S] NOUN VERB [OPTIONS] [ARGS]\n"
"Talk to isergw-api's REST resources (/api/v1, docs/api.md, docs/rest-cli.md).\n"
"\n"
"Commands (the resource each one uses):\n"
"  target list                       GET    /api/v1/targets\n"
"  target show IQN                   GET    /api/v1/targets/IQN\n"
"  target create IQN [--alias A] [--from-json FILE]\n"
"                                    POST   /api/v1/targets\n"
"  target delete IQN                 DELETE /api/v1/targets/IQN\n"
"  lun list IQN                      GET    /api/v1/targets/IQN/luns\n"
"  lun show IQN LUN                  GET    /api/v1/targets/IQN/luns/LUN\n"
"  lun create IQN --path P [--size S] [--lun N] [--device-group DG]\n"
"             [--from-json FILE]     POST   /api/v1/targets/IQN/luns\n"
"  lun set IQN LUN KEY=VALUE...      PATCH  /api/v1/targets/IQN/luns/LUN\n"
"                                    (a JSON merge patch: VALUE a number, true,\n"
"                                    false, null (back to the default), a JSON\n"
"                                    object, array or \"quoted string\", else text)\n"
"  lun delete IQN LUN                DELETE /api/v1/targets/IQN/luns/LUN\n"
"  node list                         GET    /api/v1/nodes\n"
"  node show NAME                    GET    /api/v1/nodes/NAME\n"
"  node drain NAME [--force]         PATCH  /api/v1/nodes/NAME[?force=true] {\"drained\": true}\n"
"                                    (refused, 409, when no other node could own\n"
"                                    its device groups, unless --force)\n"
"  node undrain NAME                 PATCH  /api/v1/nodes/NAME {\"drained\": false}\n"
"  device-group list                 GET    /api/v1/device-groups\n"
"  device-group show NAME            GET    /api/v1/device-groups/NAME\n"
"  device-group move NAME NODE       PATCH  /api/v1/device-groups/NAME {\"owner\": NODE}\n"
"  target set IQN KEY=VALUE...       PATCH  /api/v1/targets/IQN (alias, chap, mutual_chap,\n"
"                                    limits: chap={\"user\":\"u\",\"secret\":\"s\"} or null)\n"
"  acl list IQN                      GET    /api/v1/targets/IQN/acls\n"
"  acl show IQN INITIATOR            GET    /api/v1/targets/IQN/acls/INITIATOR\n"
"  acl create IQN INITIATOR [--from-json FILE]\n"
"                                    POST   /api/v1/targets/IQN/acls (FILE: its chap)\n"
"  acl set IQN INITIATOR KEY=VALUE...\n"
"                                    PATCH  /api/v1/targets/IQN/acls/INITIATOR\n"
"  acl delete IQN INITIATOR          DELETE /api/v1/targets/IQN/acls/INITIATOR\n"
"  discovery-chap show               GET    /api/v1/discovery-chap\n"
"  discovery-chap set FILE           PUT    /api/v1/discovery-chap ({\"user\", \"secret\"})\n"
"  discovery-chap delete             DELETE /api/v1/discovery-chap\n"
"  portal list NODE                  GET    /api/v1/nodes/NODE/portals\n"
"  portal show NODE ID               GET    /api/v1/nodes/NODE/portals/ID\n"
"  portal create NODE URL [--rel-port-id ID]\n"
"                                    POST   /api/v1/nodes/NODE/portals\n"
"  portal set NODE ID url=URL        PATCH  /api/v1/nodes/NODE/portals/ID\n"
"  portal delete NODE ID             DELETE /api/v1/nodes/NODE/portals/ID\n"
"  port-group list                   GET    /api/v1/port-groups\n"
"  session list                      GET    /api/v1/sessions (the answering node's)\n"
"  session show TSIH                 GET    /api/v1/sessions/TSIH\n"
"  session logout TSIH [--grace S]   DELETE /api/v1/sessions/TSIH[?grace_s=S]\n"
"  config export                     GET    /api/v1/config (JSON on stdout)\n"
"  config import FILE                PUT    /api/v1/config (FILE '-': stdin)\n"
"  api status                        GET    /api/v1/cluster\n"
"\n"
"Options (before NOUN):\n"
"  --api URL         isergw-api (default $ISERGW_API, then " ISERGWCTL_API_DEFAULT ")\n"
"  --token-file F    the bearer token, on F's first line (default\n"
"                    $ISERGW_TOKEN_FILE, then " ISERGWCTL_TOKEN_DEFAULT " if it exists);\n"
"                    F must not be readable by group or others\n"
"  --cacert FILE     verify the server's TLS certificate against this CA\n"
"  --insecure        do not verify the server's certificate (warns each time)\n"
"  --timeout S       the whole command, --wait included (default 30)\n"
"Options (after NOUN, any command):\n"
"  --json            the server's JSON, pretty-printed, instead of tables\n"
"  --if-match ETAG   a write only if the cluster is still at ETAG (\"gN\", from\n"
"                    a write's answer or 'api status': generation N)\n"
"  --wait            a write answered 202 (made, not yet applied by every live\n"
"                    node): poll its operation until done or --timeout\n"
"\n"
"Exit status: 0 done; 1 refused by the server (400, 404, 409, 412, 422, other\n"
"4xx: the reason printed); 2 usage error; 3 cannot connect, TLS failure, no\n"
"answer in time (also 504), a garbled answer or a server error (5xx); 4 not\n"
"authorized (401, 403, or an unusable token file); 5 the cluster cannot take\n"
"it now (503, Retry-After shown); 6 accepted (202) but not finished when\n"
"--wait ran out.\n");
}

/* "isergwctl: MESSAGE" and the hint on stderr; ISERGWCTL_EXIT_USAGE. */
#define usage_err(...) isergwctl_usage_err(NULL, __VA_ARGS__)

/* ------------------------------------------------------------ pure: exit status */

int isergwctl_rest_exit(long status)
{
	if (status >= 200 && status < 300)
		return ISERGWCTL_EXIT_OK;
	if (status == 401 || status == 403)
		return ISERGWCTL_EXIT_AUTH;
	if (status >= 400 && status < 500)
		return ISERGWCTL_EXIT_REFUSED;
	if (status == 503)
		return ISERGWCTL_EXIT_UNAVAILABLE;
	/* 504, 500, any other 5xx, 1xx, 3xx: no usable answer */
	return ISERGWCTL_EXIT_CONNECT;
}


/* ------------------------------------------------------------ pure: the URL */

bool isergwctl_url_private(const char *url)
{
	static const char *const loopback[] = { "http://127.0.0.1", "http://localhost", "http://[::1]" };

	if (strncmp(url, "https://", 8) == 0)
		return true;
	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		size_t n = strlen(loopback[i]);

		if (strncmp(url, loopback[i], n) == 0 && strchr(":/", url[n]))
			return true;
	}
	return false;
}

/* ------------------------------------------------------------ pure: problem documents */

char *isergwctl_problem_message(long status, const char *body, size_t len, const char *retry_after)
{
	json_object *doc = body && len ? isergwctl_json_parse_strict(body, len) : NULL;
	json_object *v;
	const char *title = NULL, *detail = NULL, *field = NULL;
	char *msg = NULL;
	char ra[64] = "";

	if (doc && json_object_is_type(doc, json_type_object)) {
		if (json_object_object_get_ex(doc, "title", &v) && json_object_is_type(v, json_type_string))
			title = json_object_get_string(v);
		if (json_object_object_get_ex(doc, "detail", &v) && json_object_is_type(v, json_type_string))
			detail = json_object_get_string(v);
		if (json_object_object_get_ex(doc, "field", &v) && json_object_is_type(v, json_type_string))
			field = json_object_get_string(v);
	}
	if (retry_after && retry_after[0])
		snprintf(ra, sizeof(ra), " (retry after %.20s s)", retry_after);
	if (asprintf(&msg, "%ld %s: %s%s%s%s", status, title ? title : "",
		     detail ? detail : "the answer carries no problem document",
		     field ? " (field: " : "", field ? field : "", field ? ")" : "") < 0)
		msg = NULL;
	if (msg && ra[0]) {
		char *m2;

		if (asprintf(&m2, "%s%s", msg, ra) < 0)
			m2 = NULL;
		free(msg);
		msg = m2;
	}
	json_object_put(doc);
	return msg;
}


/* ------------------------------------------------------------ talking */

struct answer {
	long status;
	char *body;
	size_t len;
	bool too_big;
	char etag[128];
	char location[512];
	char retry_after[32];
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n;
	char *b;

	if (a->len + len > ANSWER_MAX) {
		a->too_big = true;
		return 0;
	}
	b = realloc(a->body, a->len + len + 1);
	if (!b)
		return 0;
	memcpy(b + a->len, p, len);
	a->len += len;
	b[a->len] = '\0';
	a->body = b;
	return len;
}

/* "Name: value" into buf when the header is name; blanks and CRLF trimmed. */
static void header_value(const char *p, size_t len, const char *name, char *buf, size_t buflen)
{
	size_t nl = strlen(name), end;

	if (len <= nl || strncasecmp(p, name, nl) != 0 || p[nl] != ':')
		return;
	p += nl + 1;
	len -= nl + 1;
	while (len && (*p == ' ' || *p == '\t')) {
		p++;
		len--;
	}
	end = len;
	while (end && (p[end - 1] == '\r' || p[end - 1] == '\n' || p[end - 1] == ' '))
		end--;
	snprintf(buf, buflen, "%.*s", (int)end, p);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n;

	if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {     /* a new answer (after 100 Continue) */
		a->etag[0] = a->location[0] = a->retry_after[0] = '\0';
		return len;
	}
	header_value(p, len, "ETag", a->etag, sizeof(a->etag));
	header_value(p, len, "Location", a->location, sizeof(a->location));
	header_value(p, len, "Retry-After", a->retry_after, sizeof(a->retry_after));
	return len;
}

/* The one place a CURLcode becomes a negative errno. */
static int curl_rc(CURLcode c)
{
	switch (c) {
	case CURLE_OK:
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_SHUTDOWN_FAILED:
		return -EKEYREJECTED;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		return -ECONNRESET;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return -EINVAL;
	case CURLE_WRITE_ERROR:
		return -EFBIG;
	default:
		return -EPROTO;
	}
}

struct client {
	const struct isergwctl_rest_opts *o;
	const char *api;                 /* without a trailing '/' */
	char base[1024];
	char auth[TOKEN_MAX + 32];       /* "Authorization: Bearer ..." or "" */
	int64_t deadline;
};

static int left_ms(const struct client *cl)
{
	int64_t left = cl->deadline - isergwctl_now_ms();

	return left <= 0 ? 1 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/*
 * One request: the answer in *a (status, body, headers). 0, or the exit
 * status of a request that got no HTTP answer (reason printed).
 */
static int http(struct client *cl, const char *method, const char *path, json_object *body,
		const char *if_match, struct answer *a)
{
	char url[2048], errbuf[CURL_ERROR_SIZE] = "", im[160];
	struct curl_slist *h = NULL, *h2;
	const char *text = NULL;
	CURL *c;
	CURLcode cc;
	int rc, ret = ISERGWCTL_EXIT_OK;

	memset(a, 0, sizeof(*a));
	if ((size_t)snprintf(url, sizeof(url), "%s%s", cl->base, path) >= sizeof(url)) {
		fprintf(stderr, "isergwctl: the URL is too long\n");
		return ISERGWCTL_EXIT_USAGE;
	}
	c = curl_easy_init();
	if (!c) {
		fprintf(stderr, "isergwctl: cannot start libcurl\n");
		return ISERGWCTL_EXIT_CONNECT;
	}
#define H(s) do { if (!(h2 = curl_slist_append(h, (s)))) goto nomem; h = h2; } while (0)
	H("Accept: application/json, application/problem+json");
	if (cl->auth[0])
		H(cl->auth);
	if (if_match && if_match[0]) {
		snprintf(im, sizeof(im), "If-Match: %s", if_match);
		H(im);
	}
	if (body) {
		H("Content-Type: application/json");
		H("Expect:");
		text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
							    JSON_C_TO_STRING_NOSLASHESCAPE);
	}
#undef H
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left_ms(cl));
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "isergwctl");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	if (cl->o->cacert)
		curl_easy_setopt(c, CURLOPT_CAINFO, cl->o->cacert);
	if (cl->o->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (text) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
	}
	cc = curl_easy_perform(c);
	rc = curl_rc(cc);
	if (rc) {
		if (a->too_big)
			fprintf(stderr, "isergwctl: %s: an answer above %u bytes\n", cl->api, ANSWER_MAX);
		else
			fprintf(stderr, "isergwctl: %s %s: %s%s%s\n", method, url,
				rc == -ETIMEDOUT ? "no answer in time: " :
				rc == -EKEYREJECTED ? "TLS: " : "",
				errbuf[0] ? errbuf : curl_easy_strerror(cc),
				rc == -EKEYREJECTED && !cl->o->cacert ? " (--cacert FILE for a private CA)" : "");
		ret = ISERGWCTL_EXIT_CONNECT;
		free(a->body);
		a->body = NULL;
		a->len = 0;
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return ret;
nomem:
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	fprintf(stderr, "isergwctl: out of memory\n");
	return ISERGWCTL_EXIT_CONNECT;
}

/* The answer's body as JSON, or NULL with "a garbled answer" printed. */
static json_object *answer_json(const struct client *cl, const struct answer *a)
{
	json_object *doc = a->len ? isergwctl_json_parse_strict(a->body, a->len) : NULL;

	if (!doc || !json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		fprintf(stderr, "isergwctl: %s: a %ld answer that is not a JSON object\n", cl->api,
			a->status);
		return NULL;
	}
	return doc;
}

static int refused(const struct answer *a)
{
	char *msg = isergwctl_problem_message(a->status, a->body, a->len, a->retry_after);

	fprintf(stderr, "isergwctl: %s\n", msg ? msg : "out of memory");
	free(msg);
	return isergwctl_rest_exit(a->status);
}

/* "n1, n2" of a string array, into buf. */
static const char *names(json_object *arr, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; arr && i < json_object_array_length(arr) && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
				      json_object_get_string(json_object_array_get_idx(arr, i)));
	return buf[0] ? buf : "-";
}

/* A 202: print the operation; with --wait poll it. The exit status. */
static int accepted(struct client *cl, const struct isergwctl_rest_req *r, struct answer *a)
{
	json_object *op = answer_json(cl, a), *done, *id;
	char path[600], applied[1024], pending[1024];
	int rc;

	if (!op)
		return ISERGWCTL_EXIT_CONNECT;
	id = isergwctl_json_member(op, "id", json_type_string);
	if (!id || !isergwctl_json_member(op, "done", json_type_boolean)) {
		fprintf(stderr, "isergwctl: %s: a 202 answer without an operation\n", cl->api);
		json_object_put(op);
		return ISERGWCTL_EXIT_CONNECT;
	}
	if (!r->json)
		printf("%s: accepted, operation %s: applied by %s; pending on %s\n", r->what,
		       json_object_get_string(id), names(isergwctl_json_member(op, "applied", json_type_array), applied,
							 sizeof(applied)),
		       names(isergwctl_json_member(op, "pending", json_type_array), pending, sizeof(pending)));
	if (!r->wait) {
		if (r->json)
			isergwctl_print_json(op);
		else
			json_object_put(op);
		return ISERGWCTL_EXIT_OK;
	}
	snprintf(path, sizeof(path), "/api/v1/operations/%s", json_object_get_string(id));
	for (;;) {
		struct answer b;
		json_object *next;

		done = isergwctl_json_member(op, "done", json_type_boolean);
		if (done && json_object_get_boolean(done)) {
			if (r->json)
				isergwctl_print_json(op);
			else {
				printf("operation %s done: applied by %s\n", json_object_get_string(id),
				       names(isergwctl_json_member(op, "applied", json_type_array), applied, sizeof(applied)));
				json_object_put(op);
			}
			return ISERGWCTL_EXIT_OK;
		}
		if (cl->deadline - isergwctl_now_ms() <= POLL_MS)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = POLL_MS * 1000000L }, NULL);
		if ((rc = http(cl, "GET", path, NULL, NULL, &b)))
			break;
		if (b.status != 200) {
			json_object_put(op);
			rc = refused(&b);
			free(b.body);
			return rc;
		}
		next = answer_json(cl, &b);
		free(b.body);
		if (!next) {
			json_object_put(op);
			return ISERGWCTL_EXIT_CONNECT;
		}
		json_object_put(op);
		op = next;
		id = isergwctl_json_member(op, "id", json_type_string);
		if (!id) {
			json_object_put(op);
			return ISERGWCTL_EXIT_CONNECT;
		}
	}
	fprintf(stderr, "isergwctl: operation %s not done when --wait ran out: pending on %s\n",
		json_object_get_string(id),
		names(isergwctl_json_member(op, "pending", json_type_array), pending, sizeof(pending)));
	if (r->json)
		isergwctl_print_json(op);
	else
		json_object_put(op);
	return ISERGWCTL_EXIT_PENDING;
}

/* A write answered 200, 201 or 204. */
static int changed(const struct client *cl, const struct isergwctl_rest_req *r, const struct answer *a)
{
	const char *verb = strcmp(r->method, "POST") == 0 ? "created" :
			   strcmp(r->method, "DELETE") == 0 ? "deleted" :
			   strcmp(r->method, "PUT") == 0 ? "imported" : "changed";
	json_object *doc;

	if (a->len) {
		if (!(doc = answer_json(cl, a)))
			return ISERGWCTL_EXIT_CONNECT;
		if (r->json) {
			isergwctl_print_json(doc);
			return ISERGWCTL_EXIT_OK;
		}
		json_object_put(doc);
	}
	if (!r->json) {
		printf("%s %s", r->what, verb);
		if (a->location[0] && strcmp(r->method, "POST") == 0)
			printf(" at %s", a->location);
		if (a->etag[0])
			printf(", ETag %s", a->etag);
		printf("\n");
	}
	return ISERGWCTL_EXIT_OK;
}

/* ------------------------------------------------------------ the token */

/*
 * The token of path (or of the defaults), as "Authorization: Bearer T" in
 * cl->auth, or nothing when no file is named and the default one does not
 * exist. 0, or the exit status (reason printed). The token is never printed.
 */
static int load_token(struct client *cl, const char *path)
{
	bool named = path != NULL;
	char buf[TOKEN_MAX + 2];
	struct stat st;
	size_t len;
	ssize_t n;
	int fd;

	if (!path)
		path = getenv("ISERGW_TOKEN_FILE");
	named = named || (path && path[0]);
	if (!path || !path[0])
		path = ISERGWCTL_TOKEN_DEFAULT;
	fd = gw_open_regular(path, O_RDONLY, &st);
	if (fd == -GW_ENOTREG) {
		fprintf(stderr, "isergwctl: token file %s: %s, not a regular file\n", path,
			gw_file_kind(&st));
		return ISERGWCTL_EXIT_AUTH;
	}
	if (fd < 0) {
		if (!named && fd == -ENOENT)
			return 0;
		fprintf(stderr, "isergwctl: token file %s: %s\n", path, strerror(-fd));
		return ISERGWCTL_EXIT_AUTH;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		fprintf(stderr, "isergwctl: token file %s is open to group or others (mode %04o): "
			"refused; chmod 600 %s\n", path, (unsigned)(st.st_mode & 07777), path);
		goto err_close;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		fprintf(stderr, "isergwctl: token file %s: %s\n", path, strerror(errno));
		return ISERGWCTL_EXIT_AUTH;
	}
	buf[n] = '\0';
	len = strcspn(buf, "\r\n");
	if (len == 0 || len > TOKEN_MAX) {     /* read TOKEN_MAX + 1 bytes: too long is seen */
		fprintf(stderr, "isergwctl: token file %s: no token on its first line (1..%u characters)\n",
			path, TOKEN_MAX);
		explicit_bzero(buf, sizeof(buf));
		return ISERGWCTL_EXIT_AUTH;
	}
	for (size_t i = 0; i < len; i++) {
		if (buf[i] <= ' ' || buf[i] >= 0x7f) {
			fprintf(stderr, "isergwctl: token file %s: the token has a blank or a control "
				"character\n", path);
			explicit_bzero(buf, sizeof(buf));
			return ISERGWCTL_EXIT_AUTH;
		}
	}
	snprintf(cl->auth, sizeof(cl->auth), "Authorization: Bearer %.*s", (int)len, buf);
	explicit_bzero(buf, sizeof(buf));
	return 0;
err_close:
	close(fd);
	return ISERGWCTL_EXIT_AUTH;
}

/* ------------------------------------------------------------ entry */

int isergwctl_rest(int argc, char **argv, const struct isergwctl_rest_opts *o)
{
	struct isergwctl_rest_req r;
	struct client cl = { .o = o };
	struct answer a;
	json_object *doc;
	char err[512];
	size_t blen;
	int rc;

	if (isergwctl_rest_parse(argc, argv, &r, err, sizeof(err))) {
		fprintf(stderr, "isergwctl: %s\nTry 'isergwctl %s --help'.\n", err,
			argc > 0 ? argv[0] : "target");
		return ISERGWCTL_EXIT_USAGE;
	}
	r.json = r.json || o->json;
	if (r.help) {
		isergwctl_rest_usage(stdout);
		return ISERGWCTL_EXIT_OK;
	}
	cl.api = o->api ? o->api : getenv("ISERGW_API");
	if (!cl.api || !cl.api[0])
		cl.api = ISERGWCTL_API_DEFAULT;
	blen = strlen(cl.api);
	while (blen && cl.api[blen - 1] == '/')
		blen--;
	if ((strncmp(cl.api, "http://", 7) != 0 && strncmp(cl.api, "https://", 8) != 0) ||
	    blen >= sizeof(cl.base)) {
		isergwctl_rest_req_free(&r);
		return usage_err("--api wants an http:// or https:// URL, not '%s'", cl.api);
	}
	snprintf(cl.base, sizeof(cl.base), "%.*s", (int)blen, cl.api);
	if (o->insecure && strncmp(cl.api, "https://", 8) == 0)
		fprintf(stderr, "isergwctl: warning: --insecure: the certificate of %s is not verified; "
			"anyone on the path can read and change this request and its token\n", cl.api);
	if ((rc = load_token(&cl, o->token_file))) {
		isergwctl_rest_req_free(&r);
		return rc;
	}
	if (cl.auth[0] && !isergwctl_url_private(cl.base))
		fprintf(stderr, "isergwctl: warning: the token goes in clear text to %s (https:// "
			"keeps it private)\n", cl.base);
	cl.deadline = isergwctl_now_ms() + (o->timeout_ms > 0 ? o->timeout_ms : 30000);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "isergwctl: cannot start libcurl\n");
		rc = ISERGWCTL_EXIT_CONNECT;
		goto out;
	}
	rc = http(&cl, r.method, r.path, r.body, r.if_match, &a);
	if (rc)
		goto out_curl;
	if (a.status == 202 && strcmp(r.method, "GET") != 0) {
		rc = accepted(&cl, &r, &a);
	} else if (a.status < 200 || a.status >= 300) {
		rc = refused(&a);
	} else if (r.view == ISERGWCTL_VIEW_CHANGE) {
		rc = changed(&cl, &r, &a);
	} else if (!(doc = answer_json(&cl, &a))) {
		rc = ISERGWCTL_EXIT_CONNECT;
	} else if (r.json) {
		isergwctl_print_json(doc);
	} else {
		rc = isergwctl_rest_render(stdout, r.view, doc);
		if (rc)
			fprintf(stderr, "isergwctl: %s: %s\n", cl.api,
				rc == -ENOMEM ? "out of memory" : "an answer that does not fit its resource");
		rc = rc ? ISERGWCTL_EXIT_CONNECT : ISERGWCTL_EXIT_OK;
		json_object_put(doc);
	}
	free(a.body);
out_curl:
	curl_global_cleanup();
out:
	explicit_bzero(cl.auth, sizeof(cl.auth));
	isergwctl_rest_req_free(&r);
	return rc;
}
