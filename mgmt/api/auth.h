/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's security policy (docs/api.md, Security): bearer tokens, their
 * file, their roles and what each request needs. No libmicrohttpd here: the
 * HTTP server (http.c) asks api_access_of() what a request needs and
 * api_authorize() whether its Authorization header gives it, before any
 * route runs. Unit-tested by tests/unit/test_api_auth.c.
 *
 * A token is "isergw_NAME_SECRET": NAME is the token's line in the token
 * file (so that a request is checked against one hash, not every one), and
 * SECRET is 32 random bytes in unpadded base64url (43 characters). The file
 * keeps, per token, "NAME ROLE sha256:SALT:HASH": a random 16-byte salt and
 * SHA-256(salt || secret), both in hex. The secret has 256 bits of entropy,
 * so a fast salted hash is enough (nothing to stretch against a dictionary);
 * the hashes are compared with CRYPTO_memcmp.
 */
#ifndef ISERGW_API_AUTH_H
#define ISERGW_API_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest request body any route accepts (413 above it). */
#define API_BODY_MAX (1024u * 1024u)

#define API_TOKEN_NAME_MAX 64u          /* [A-Za-z0-9][A-Za-z0-9._-]* */
#define API_TOKEN_SECRET_BYTES 32u
#define API_TOKEN_SECRET_B64 43u        /* unpadded base64url of the secret */
#define API_TOKEN_SALT_BYTES 16u
#define API_TOKEN_HASH_BYTES 32u        /* SHA-256 */
#define API_TOKEN_PREFIX "isergw_"
/* "isergw_" NAME "_" SECRET and a NUL */
#define API_TOKEN_STR_MAX (sizeof(API_TOKEN_PREFIX) + API_TOKEN_NAME_MAX + 1 + \
			   API_TOKEN_SECRET_B64 + 1)
/* "sha256:" SALTHEX ":" HASHHEX and a NUL */
#define API_TOKEN_HASH_STR_MAX (7 + 2 * API_TOKEN_SALT_BYTES + 1 + 2 * API_TOKEN_HASH_BYTES + 1)
#define API_TOKEN_FILE_MAX (1024u * 1024u)
#define API_REALM "isergw"

enum api_role {
	API_ROLE_READ_ONLY = 0,
	API_ROLE_ADMIN,
};

/* What a request needs. */
enum api_access {
	API_ACCESS_OPEN = 0,            /* nothing: the probes */
	API_ACCESS_READ,                /* a read-only or an admin token */
	API_ACCESS_ADMIN,               /* an admin token */
};

struct api_token {
	char name[API_TOKEN_NAME_MAX + 1];
	enum api_role role;
	uint8_t salt[API_TOKEN_SALT_BYTES];
	uint8_t hash[API_TOKEN_HASH_BYTES];
};

struct api_tokens {
	struct api_token *v;
	size_t n;
};

/* "admin", "read-only"; api_role_parse returns 0 or -EINVAL. */
const char *api_role_name(enum api_role r);
int api_role_parse(const char *s, enum api_role *r);
/* A token name: 1..64 of [A-Za-z0-9._-], starting with a letter or digit. */
bool api_token_name_ok(const char *name);

/*
 * Parse a token file's text (len bytes, need not be NUL-terminated): one
 * token per line, "NAME ROLE sha256:SALTHEX:HASHHEX", fields separated by
 * blanks; blank lines and lines starting with '#' (after blanks) are
 * skipped. Returns 0 with *out filled (free with api_tokens_free), or
 * -EINVAL with "line N: what is wrong" in err (a malformed line, an unknown
 * role, a duplicate name), or -ENOMEM.
 */
int api_tokens_parse(const char *text, size_t len, struct api_tokens *out, char *err,
		     size_t errlen);
void api_tokens_free(struct api_tokens *t);

/*
 * Read and parse a token file: refused (-EPERM, the reason in err) when it is
 * not a regular file, is group- or world-accessible, or is owned by neither
 * root nor the effective user; -ENOENT and the like with the path in err;
 * then as api_tokens_parse, "PATH: line N: ...".
 */
int api_tokens_load(const char *path, struct api_tokens *out, char *err, size_t errlen);

/*
 * What a request needs (docs/api.md, Security): /healthz and /readyz are
 * open; /metrics needs READ when tokens are configured, unless metrics_open;
 * every other path (/api/v1/..., and those no route serves, so that a route
 * added later, or a path a router would read differently, is never open by
 * mistake): GET and HEAD need READ, every other method ADMIN. path is
 * without the query string, exactly as libmicrohttpd passes it.
 */
enum api_access api_access_of(const char *method, const char *path, bool tokens_configured,
			      bool metrics_open);
/* A method that does not change anything: GET or HEAD. */
bool api_method_is_read(const char *method);

enum api_authz {
	API_AUTHZ_OK = 0,
	API_AUTHZ_NO_TOKEN,             /* 401, no Bearer credentials */
	API_AUTHZ_BAD_TOKEN,            /* 401 error="invalid_token" */
	API_AUTHZ_FORBIDDEN,            /* 403: a read-only token on a write */
};

/*
 * Whether an Authorization header value (NULL when there is none) gives what
 * need asks. The token's line is found by its name; its hash is computed and
 * compared in constant time (an unknown name costs the same hash and
 * comparison against a dummy). *who is the token when it verified (also on
 * FORBIDDEN), else NULL. An OPEN need is OK whatever the header says.
 */
enum api_authz api_authorize(const struct api_tokens *t, const char *authorization,
			     enum api_access need, const struct api_token **who);

/*
 * A new token NAME with role: its string (the only time the secret exists,
 * API_TOKEN_STR_MAX bytes) and its token file line without a newline
 * (at least 256 bytes). Returns 0, -EINVAL (bad name) or -EIO (no random).
 */
int api_token_new(const char *name, enum api_role role, char *token, size_t toklen,
		  char *line, size_t linelen);

/*
 * A new token NAME: its string (API_TOKEN_STR_MAX bytes) and its hash
 * "sha256:SALTHEX:HASHHEX" (API_TOKEN_HASH_STR_MAX bytes), what the token
 * file and the cluster document keep. 0, -EINVAL (bad name) or -EIO.
 */
int api_token_make(const char *name, char *token, size_t toklen, char *hash, size_t hashlen);
/* Whether s[0..n) is "sha256:SALTHEX:HASHHEX" (32 and 64 hex digits): 0 with both, or -EINVAL. */
int api_token_hash_parse(const char *s, size_t n, uint8_t *salt, uint8_t *hash);

/*
 * A token of the cluster (the HA agent's GetTokens): name, role and
 * "sha256:SALT:HASH" checked as a token file's line. 0 or -EINVAL.
 */
int api_token_from_fields(const char *name, const char *role, const char *hash,
			  struct api_token *out);
/*
 * out = a's tokens, then b's whose names a has not (*shadowed: how many of
 * b's were left out for that): the token file's first, then the cluster's.
 * 0 or -ENOMEM (free out with api_tokens_free).
 */
int api_tokens_merge(const struct api_tokens *a, const struct api_tokens *b,
		     struct api_tokens *out, size_t *shadowed);

/* Add/remove/list in a token file (the isergw-api token command). */
int api_token_file_add(const char *path, const char *name, enum api_role role, char *token,
		       size_t toklen, char *err, size_t errlen);
int api_token_file_remove(const char *path, const char *name, char *err, size_t errlen);

/*
 * Read a whole regular file of at most max bytes (malloc'd, NUL-terminated),
 * never waiting on a FIFO or a device; secret: only its owner, root or this
 * process's user, may read or write it (mode 0600 or stricter), as the token
 * file. 0 or -errno with the reason and the path in err.
 */
int api_read_file(const char *path, size_t max, bool secret, char **buf, size_t *len, char *err,
		  size_t errlen);
/*
 * Replace path with text, mode mode: a temporary file beside it, fsync,
 * rename, fsync the directory. 0 or -errno with the reason and the path in err.
 */
int api_write_file(const char *path, const char *text, size_t len, mode_t mode, char *err,
		   size_t errlen);

#endif
