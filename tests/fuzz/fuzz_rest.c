/* SPDX-License-Identifier: Apache-2.0 */
// LINK: api_server
// SOURCES: fake_api.c
// COVERS: mgmt/api/rest.c mgmt/api/v1.c mgmt/api/auth.c mgmt/api/problem.c
/*
 * isergw-api's REST resources (/api/v1): requests through http.c's handler
 * (the guard: tokens and roles, the body cap; routing, If-Match, ?force=,
 * the body checks), v1.c's operations (their chains of agent calls,
 * retries on a base that moved on, 202s, the cache of reads) and rest.c,
 * auth.c, problem.c, cache.c, against a fake HA agent holding one cluster
 * document (fake_api.c) that every execution starts from. A sequence of
 * requests on one connection: a POST, then a PATCH or a DELETE of what it
 * made, sees what the earlier ones changed.
 *
 * The input is text, one request after another, separated by a line "%%":
 *
 *   METHOD PATH[?QUERY]
 *   Header: value                  (Authorization, If-Match, Content-Type...)
 *   @agent BYTES                   (not a header: the agent's faults for this
 *                                   request's calls, one byte a call, fake_api.c)
 *
 *   BODY
 *
 * (BYTES: any but a newline.) PATH is percent-decoded and QUERY split into arguments as libmicrohttpd
 * does (MHD_http_unescape). The tokens FZ_TOKEN_ADMIN and FZ_TOKEN_VIEWER
 * (fake_api.h) verify. The seeds (corpus/fuzz_rest/) are made by
 * tests/fuzz/gen_api_seeds.py from the examples of mgmt/openapi.json and the
 * requests the api tests send (see its header).
 */
#include <microhttpd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_api.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQS_MAX 12     /* requests of one input: enough for a chain, not too slow */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_init();
	return 0;
}

/* the next line of *p (NUL-terminated in place, "\r" dropped; *len its bytes), NULL at the end */
static char *line_of(char **p, char *end, size_t *len)
{
	char *s = *p, *nl;

	if (s >= end)
		return NULL;
	nl = memchr(s, '\n', (size_t)(end - s));
	if (nl) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		nl = end;
		*p = end;
	}
	if (nl > s && nl[-1] == '\r')
		*--nl = '\0';
	*len = (size_t)(nl - s);
	return s;
}

/* one request's text [s, end) into rq (pointers into the text); false: none */
static bool parse(char *s, char *end, struct fz_request *rq, struct fz_chunk *body,
		  const uint8_t **tape, size_t *tlen)
{
	size_t len;
	char *line = line_of(&s, end, &len), *sp, *q, *v;

	if (!line || !*line)
		return false;
	sp = strchr(line, ' ');
	if (!sp)
		return false;
	*sp = '\0';
	rq->method = line;
	rq->url = sp + 1;
	rq->version = MHD_HTTP_VERSION_1_1;
	rq->nhdrs = 0;
	*tape = NULL;
	*tlen = 0;
	/* the query string: arguments, as libmicrohttpd splits and decodes them */
	q = strchr(sp + 1, '?');
	if (q) {
		*q++ = '\0';
		while (q && *q && rq->nhdrs < FZ_HDRS) {
			char *amp = strchr(q, '&');

			if (amp)
				*amp++ = '\0';
			v = strchr(q, '=');
			if (v) {
				*v++ = '\0';
				MHD_http_unescape(v);
			}
			MHD_http_unescape(q);
			rq->hdrs[rq->nhdrs++] = (struct fz_hdr){ MHD_GET_ARGUMENT_KIND, q, v };
			q = amp;
		}
	}
	MHD_http_unescape(sp + 1);
	while ((line = line_of(&s, end, &len)) && len) {
		if (!strncmp(line, "@agent ", 7)) {
			/* bytes, NULs included */
			*tape = (const uint8_t *)line + 7;
			*tlen = len - 7;
			continue;
		}
		v = strchr(line, ':');
		if (!v || rq->nhdrs >= FZ_HDRS)
			continue;
		*v++ = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		rq->hdrs[rq->nhdrs++] = (struct fz_hdr){ MHD_HEADER_KIND, line, v };
	}
	body->data = s;
	body->len = (size_t)(end - s);
	rq->chunks = body;
	rq->nchunks = body->len ? 1 : 0;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct fz_settings set = {
		.tokens = true, .agent = true, .conn_limit = 8, .conn_limit_ip = 8,
	};
	struct fz_request rq;
	struct fz_chunk body;
	const uint8_t *tape;
	size_t tlen;
	char *text, *s, *end;
	int conn = -1, n = 0;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	fz_begin(&set);
	for (s = text; s < text + size && n < REQS_MAX; s = end, n++) {
		char *sep = memmem(s, (size_t)(text + size - s), "\n%%\n", 4);

		end = sep ? sep : text + size;
		if (sep)
			*sep = '\0';
		if (!parse(s, end, &rq, &body, &tape, &tlen)) {
			end = sep ? sep + 4 : text + size;
			continue;
		}
		if (!fz_conn_open_p(conn))
			conn = fz_conn_open(0);
		fz_agent_tape(tape, tlen);
		(void)fz_request(conn, &rq, SIZE_MAX);
		fz_agent_tape(NULL, 0);
		end = sep ? sep + 4 : text + size;
	}
	fz_end();
	free(text);
	return 0;
}
