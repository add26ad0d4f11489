/* SPDX-License-Identifier: Apache-2.0 */
// LINK: api_server
// SOURCES: fake_api.c
// COVERS: mgmt/api/http.c
/*
 * isergw-api's HTTP request handling as far as our code goes (mgmt/api/http.c):
 * the callbacks it gives libmicrohttpd called as libmicrohttpd calls them
 * (fake_api.c): the accept policy and the connection table (limits per
 * address and in all, the probes' reserve, closing the idle connection
 * that has been so longest), the access handler with any method, URL,
 * version, headers and query arguments libmicrohttpd could pass (bytes
 * other than NUL), the guard (one Authorization header, tokens and roles,
 * Content-Length and the body cap), the body in pieces split where the
 * input says (up to past the 4 MiB at which the connection is closed), a
 * request left half-way and continued or dropped later, the completion and
 * the close; the routes behind it (/healthz, /readyz and /metrics with no
 * isergwd, /api/v1 with the fake agent).
 *
 * libmicrohttpd's messages to the logger http.c gives it are fuzzed too.
 *
 * What is libmicrohttpd's and not fuzzed here: the request line and header
 * parsing, the chunked encoding, percent-decoding of the URL and the
 * arguments, the 431/505/400 it answers itself, its timeouts and sockets.
 *
 * The input, bytes:
 *   settings   bit 0 no tokens, 1 --metrics-open, 2 no HA agent,
 *              3-4 --max-connections - 1, 5-6 --max-connections-per-ip - 1
 *   then operations, each a byte (its value mod 7) and its operands:
 *   0 open      peer (0..7: four IPv4, four IPv6 addresses)
 *   1 request   conn, method (str8), url (str16), version (byte: 0 HTTP/1.1,
 *               1 HTTP/1.0, 2 str8, 3 HTTP/1.1), headers (count, then each:
 *               kind (bit 0: a query argument), name str8, value: a length
 *               byte (255: an argument without a value) and the bytes),
 *               body (count % 9 pieces, each: a byte, bit 7 set: (low 7
 *               bits + 1) * 32 KiB of filler, else a u16 length and the
 *               bytes), then how many pieces to give now (255: all, and the end;
 *               254: all and the first final call, the answer not queued yet)
 *   2 more      conn, pieces (as above)
 *   3 close     conn (the client goes away)
 *   4 faults    a length byte and the HA agent's fault tape (fake_api.c)
 *   5 request   as 1 with a byte first choosing a valid Authorization
 *               header (even: the admin token, odd: the read-only one)
 *   6 log       str16: a message of libmicrohttpd's to http.c's logger
 * str8 is a length byte and the bytes, str16 a little-endian u16 length
 * and the bytes (both cut at the input's end). Seeds: gen_api_seeds.py.
 */
#include <microhttpd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_api.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQS_MAX 64
#define CHUNKS_MAX 8
#define FILLER (32u * 1024u)

/* the filler of big bodies: 128 * 32 KiB, past the 4 MiB that closes a connection */
static char filler[128u * FILLER];

struct in {
	const uint8_t *p;
	size_t n;
	char *arena;            /* strings, NUL-terminated */
	size_t used, cap;
};

static uint8_t u8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint16_t u16(struct in *in)
{
	uint16_t lo = u8(in);

	return (uint16_t)(lo | (uint16_t)u8(in) << 8);
}

/* n bytes of the input as a string (cut at a NUL, as libmicrohttpd's are) */
static const char *str(struct in *in, size_t n)
{
	char *s;

	if (n > in->n)
		n = in->n;
	if (in->used + n + 1 > in->cap)
		return "";
	s = in->arena + in->used;
	memcpy(s, in->p, n);
	s[n] = '\0';
	in->used += strlen(s) + 1;
	in->p += n;
	in->n -= n;
	return s;
}

static size_t upto_of(uint8_t b)
{
	return b == 255 ? SIZE_MAX : b == 254 ? FZ_ONE_FINAL : b % 8u;
}

struct req {
	struct fz_request rq;
	struct fz_chunk chunks[CHUNKS_MAX];
};

static void request(struct in *in, struct req *r, bool auth)
{
	struct fz_request *rq = &r->rq;
	int conn;
	uint8_t v, nh, nc;
	size_t upto;

	memset(r, 0, sizeof(*r));
	conn = u8(in) % FZ_CONNS;
	if (auth)
		rq->hdrs[rq->nhdrs++] = (struct fz_hdr){ MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION,
							 u8(in) & 1 ? "Bearer " FZ_TOKEN_VIEWER :
							 "Bearer " FZ_TOKEN_ADMIN };
	rq->method = str(in, u8(in));
	rq->url = str(in, u16(in));
	v = u8(in) % 4;
	rq->version = v == 1 ? MHD_HTTP_VERSION_1_0 : v == 2 ? str(in, u8(in)) :
		      MHD_HTTP_VERSION_1_1;
	nh = u8(in) % (FZ_HDRS - 1);
	for (uint8_t i = 0; i < nh && in->n; i++) {
		bool arg = u8(in) & 1;
		const char *key = str(in, u8(in));
		uint8_t l = u8(in);
		const char *val = l == 255 ? (arg ? NULL : "") : str(in, l);

		rq->hdrs[rq->nhdrs++] = (struct fz_hdr){ arg ? MHD_GET_ARGUMENT_KIND : MHD_HEADER_KIND,
							 key, val };
	}
	nc = u8(in) % (CHUNKS_MAX + 1);
	for (uint8_t i = 0; i < nc && in->n; i++) {
		uint8_t b = u8(in);
		struct fz_chunk *k = &r->chunks[rq->nchunks++];

		if (b & 0x80) {
			k->data = filler;
			k->len = ((size_t)(b & 0x7f) + 1) * FILLER;
		} else {
			size_t len = u16(in);

			if (len > in->n)
				len = in->n;
			k->data = (const char *)in->p;
			k->len = len;
			in->p += len;
			in->n -= len;
		}
	}
	rq->chunks = r->chunks;
	upto = upto_of(u8(in));
	(void)fz_request(conn, rq, upto);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { .p = data, .n = size };
	struct fz_settings set;
	struct req *reqs;
	size_t nreq = 0;
	uint8_t s;

	if (!size)
		return 0;
	reqs = calloc(REQS_MAX, sizeof(*reqs));
	in.cap = size * 2 + 64;
	in.arena = malloc(in.cap);
	if (!reqs || !in.arena) {
		free(reqs);
		free(in.arena);
		return 0;
	}
	s = u8(&in);
	set = (struct fz_settings){
		.tokens = !(s & 1),
		.metrics_open = s & 2,
		.agent = !(s & 4),
		.conn_limit = 1u + ((s >> 3) & 3u),
		.conn_limit_ip = 1u + ((s >> 5) & 3u),
	};
	fz_begin(&set);
	while (in.n) {
		uint8_t op = u8(&in) % 7;

		switch (op) {
		case 0:
			(void)fz_conn_open(u8(&in));
			break;
		case 1:
		case 5:
			if (nreq == REQS_MAX)
				goto out;
			request(&in, &reqs[nreq++], op == 5);
			break;
		case 2: {
			int conn = u8(&in) % FZ_CONNS;

			(void)fz_request_more(conn, upto_of(u8(&in)));
			break;
		}
		case 3:
			fz_conn_close(u8(&in) % FZ_CONNS);
			break;
		case 4: {
			size_t n = u8(&in);

			if (n > in.n)
				n = in.n;
			fz_agent_tape(in.p, n);
			in.p += n;
			in.n -= n;
			break;
		}
		case 6:
			fz_mhd_log(str(&in, u16(&in)));
			break;
		}
	}
out:
	fz_end();
	free(in.arena);
	free(reqs);
	return 0;
}
