/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The edges of isergw-api faked for fuzz_rest and fuzz_http (fake_api.c):
 *
 * - libmicrohttpd at its API: MHD_start_daemon keeps the callbacks
 *   mgmt/api/http.c gives it (the accept policy, the access handler, the
 *   connection and completion notifications), and the harness calls them as
 *   libmicrohttpd would, on one thread: a connection accepted, a request's
 *   first call, its body in pieces, the final calls (again after a resume),
 *   the completion, the close. The connection-level functions http.c calls
 *   (headers and arguments, connection info, queue, suspend and resume, the
 *   responses) are faked here; MHD_get_reason_phrase_for and
 *   MHD_http_unescape are libmicrohttpd's own. shutdown(2) of a fake
 *   connection's descriptor (conn_admit closing an idle one) closes it.
 * - isergwd at gwclient.c's API (api_gw_fetch, api_gw_call): its status,
 *   two sessions, no counters; the fault tape may make it time out, not
 *   answer or refuse.
 * - the HA agent at haclient.c's API (api_ha_call, api_ha_call_ex): a cluster
 *   document in memory (configuration, generation, drained nodes, owners)
 *   that answers every request synchronously, as the agent would, unless the
 *   fault tape (bytes of the input) says otherwise for that call: a timeout,
 *   a refusal with a status and a message, a 202, a reply of the wrong kind,
 *   arbitrary bytes as the reply. Every execution starts from one document.
 *
 * Every answer queued is checked: a status in 100..599, and a JSON body
 * (problem documents included) that parses as UTF-8 JSON; abort() otherwise.
 */
#ifndef ISERGW_FUZZ_FAKE_API_H
#define ISERGW_FUZZ_FAKE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FZ_CONNS 16u            /* connections at once */
#define FZ_HDRS 32u             /* headers and query arguments of one request */

struct fz_settings {
	bool tokens;            /* the token file's tokens (else: none configured) */
	bool metrics_open;
	bool agent;             /* an HA client (else: -ENOTCONN for /api/v1) */
	uint32_t conn_limit;    /* --max-connections */
	uint32_t conn_limit_ip;
};

/* a header (kind 1, MHD_HEADER_KIND) or a query argument (8, MHD_GET_ARGUMENT_KIND) */
struct fz_hdr {
	int kind;
	const char *key;
	const char *value;      /* NULL: an argument without '=' */
};

struct fz_chunk {
	const char *data;
	size_t len;
};

struct fz_request {
	const char *method;
	const char *url;        /* percent-decoded, no query string (libmicrohttpd's) */
	const char *version;
	struct fz_hdr hdrs[FZ_HDRS];
	size_t nhdrs;
	const struct fz_chunk *chunks;
	size_t nchunks;
};

/* The admin and the read-only token of the token file (fixed secrets). */
#define FZ_TOKEN_ADMIN "isergw_admin_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
#define FZ_TOKEN_VIEWER "isergw_viewer_QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8"

/* LLVMFuzzerInitialize: quiet logs, the tokens */
void fz_init(void);
/* an execution: the API and the agent's document as at start */
void fz_begin(const struct fz_settings *s);
/* every connection closed, everything freed */
void fz_end(void);

/* The agent's faults for its next calls, one byte a call (past the end: none). */
void fz_agent_tape(const uint8_t *p, size_t n);

/* A connection from peer (0..7: four IPv4, four IPv6 addresses): its slot, or -1. */
int fz_conn_open(unsigned int peer);
/* The client closes it (a request in progress ends unfinished). */
void fz_conn_close(int i);
bool fz_conn_open_p(int i);
/*
 * A request on connection i (rq kept by the caller until it is done):
 * its head, then up to upto pieces of its body (SIZE_MAX: all, and the
 * request is finished: the final calls, the completion). Returns the
 * status answered (0: none yet, or the connection closed).
 */
unsigned int fz_request(int i, const struct fz_request *rq, size_t upto);
/*
 * upto FZ_ONE_FINAL: the whole body and one final call, not the next one
 * libmicrohttpd makes after a resume (the answer waits; a close may come first).
 */
#define FZ_ONE_FINAL (SIZE_MAX - 1)
/* A message of libmicrohttpd's to the logger http.c gave it. */
void fz_mhd_log(const char *line);
/* A request begun with fz_request(..., upto): more pieces, or all and the end. */
unsigned int fz_request_more(int i, size_t upto);

#endif
