/* SPDX-License-Identifier: Apache-2.0 */
/* isergw-api's tokens, their file and the access policy (auth.h, docs/api.md). */
#include "auth.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"

#define HASH_PREFIX "sha256:"

const char *api_role_name(enum api_role r)
{
	return r == API_ROLE_ADMIN ? "admin" : "read-only";
}

int api_role_parse(const char *s, enum api_role *r)
{
	if (!strcmp(s, "admin"))
		*r = API_ROLE_ADMIN;
	else if (!strcmp(s, "read-only"))
		*r = API_ROLE_READ_ONLY;
	else
		return -EINVAL;
	return 0;
}

static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (!first && (c == '.' || c == '_' || c == '-'));
}

static bool name_ok_n(const char *s, size_t n)
{
	if (n == 0 || n > API_TOKEN_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i], i == 0))
			return false;
	return true;
}

bool api_token_name_ok(const char *name)
{
	return name_ok_n(name, strlen(name));
}

/* ------------------------------------------------------------ encodings */

static const char hexdigits[] = "0123456789abcdef";
static const char b64url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* c's value as a digit of the alphabet digits, or -1 */
static int digit_val(const char *digits, char c)
{
	const char *p = c ? strchr(digits, c) : NULL;

	return p ? (int)(p - digits) : -1;
}

static int hexval(char c)
{
	return digit_val(hexdigits, (char)tolower((unsigned char)c));
}

/* exactly 2 * n hex digits in s[0..slen) into out */
static int unhex(const char *s, size_t slen, uint8_t *out, size_t n)
{
	if (slen != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static void tohex(const uint8_t *in, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hexdigits[in[i] >> 4];
		out[2 * i + 1] = hexdigits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* 32 bytes <-> 43 characters of unpadded base64url (the last one carries 4 bits) */
static void b64_secret(const uint8_t *in, char *out)
{
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;

	for (size_t i = 0; i < API_TOKEN_SECRET_BYTES; i++) {
		acc = acc << 8 | in[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[o++] = b64url[(acc >> bits) & 63];
		}
	}
	if (bits)
		out[o++] = b64url[(acc << (6 - bits)) & 63];
	out[o] = '\0';
}

static int unb64_secret(const char *s, uint8_t *out)
{
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;

	for (size_t i = 0; i < API_TOKEN_SECRET_B64; i++) {
		int v = digit_val(b64url, s[i]);

		if (v < 0)
			return -EINVAL;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o < API_TOKEN_SECRET_BYTES)
				out[o++] = (uint8_t)(acc >> bits);
		}
	}
	/* the 2 bits left over must be zero: one secret, one spelling */
	if (o != API_TOKEN_SECRET_BYTES || (acc & ((1u << bits) - 1)))
		return -EINVAL;
	return 0;
}

static int hash_secret(const uint8_t *salt, const uint8_t *secret, uint8_t *out)
{
	uint8_t in[API_TOKEN_SALT_BYTES + API_TOKEN_SECRET_BYTES];
	unsigned int n = 0;
	int ok;

	memcpy(in, salt, API_TOKEN_SALT_BYTES);
	memcpy(in + API_TOKEN_SALT_BYTES, secret, API_TOKEN_SECRET_BYTES);
	ok = EVP_Digest(in, sizeof(in), out, &n, EVP_sha256(), NULL);
	OPENSSL_cleanse(in, sizeof(in));
	return ok && n == API_TOKEN_HASH_BYTES ? 0 : -EIO;
}

/* ------------------------------------------------------------ the file */

void api_tokens_free(struct api_tokens *t)
{
	if (t->v)
		OPENSSL_cleanse(t->v, t->n * sizeof(*t->v));
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

/* The next blank-separated field of [*p, end): its start and length (0: none). */
static size_t field(const char **p, const char *end, const char **start)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*start = s;
	while (s < end && *s != ' ' && *s != '\t')
		s++;
	*p = s;
	return (size_t)(s - *start);
}

static int parse_line(const char *s, const char *end, struct api_token *tok, const char **what)
{
	const char *f[4];
	size_t n[4];

	for (int i = 0; i < 4; i++)
		n[i] = field(&s, end, &f[i]);
	if (!n[2] || n[3]) {
		*what = "want NAME ROLE HASH";
		return -EINVAL;
	}
	if (!name_ok_n(f[0], n[0])) {
		*what = "the name is not 1..64 of A-Z a-z 0-9 . _ - (starting with a letter or digit)";
		return -EINVAL;
	}
	memcpy(tok->name, f[0], n[0]);
	tok->name[n[0]] = '\0';
	if (n[1] == 5 && !memcmp(f[1], "admin", 5)) {
		tok->role = API_ROLE_ADMIN;
	} else if (n[1] == 9 && !memcmp(f[1], "read-only", 9)) {
		tok->role = API_ROLE_READ_ONLY;
	} else {
		*what = "the role is neither admin nor read-only";
		return -EINVAL;
	}
	if (n[2] < strlen(HASH_PREFIX) || memcmp(f[2], HASH_PREFIX, strlen(HASH_PREFIX))) {
		*what = "the hash does not start with sha256:";
		return -EINVAL;
	}
	if (api_token_hash_parse(f[2], n[2], tok->salt, tok->hash)) {
		*what = "the hash is not sha256:SALT:HASH with 32 and 64 hex digits";
		return -EINVAL;
	}
	return 0;
}

int api_tokens_parse(const char *text, size_t len, struct api_tokens *out, char *err,
		     size_t errlen)
{
	const char *p = text, *end = text + len;
	struct api_tokens t = { 0 };
	size_t cap = 0;
	unsigned int lineno = 0;
	int rc = 0;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end, *s = p, *what = NULL;
		struct api_token tok;

		lineno++;
		p = eol ? eol + 1 : end;
		if (le > s && le[-1] == '\r')
			le--;
		while (s < le && (*s == ' ' || *s == '\t'))
			s++;
		if (s == le || *s == '#')
			continue;
		if (memchr(s, '\0', (size_t)(le - s))) {
			snprintf(err, errlen, "line %u: a NUL byte", lineno);
			rc = -EINVAL;
			goto err_free;
		}
		memset(&tok, 0, sizeof(tok));
		if (parse_line(s, le, &tok, &what)) {
			snprintf(err, errlen, "line %u: %s", lineno, what);
			rc = -EINVAL;
			goto err_free;
		}
		for (size_t i = 0; i < t.n; i++) {
			if (!strcmp(t.v[i].name, tok.name)) {
				snprintf(err, errlen, "line %u: a second token named %s", lineno,
					 tok.name);
				rc = -EINVAL;
				goto err_free;
			}
		}
		if (t.n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct api_token *v = realloc(t.v, ncap * sizeof(*v));

			if (!v) {
				snprintf(err, errlen, "out of memory");
				rc = -ENOMEM;
				goto err_free;
			}
			t.v = v;
			cap = ncap;
		}
		t.v[t.n++] = tok;
	}
	*out = t;
	return 0;
err_free:
	api_tokens_free(&t);
	return rc;
}

/*
 * The rest of fd, NUL-terminated, at most max bytes: 0, -EFBIG past max, or
 * the read's negative errno. fd stays open.
 */
static int read_fd(int fd, size_t max, char **buf, size_t *len)
{
	char *b = NULL;
	size_t n = 0, cap = 0;

	for (;;) {
		ssize_t r;

		if (n + 4096 + 1 > cap) {
			char *nb;

			cap = cap ? cap * 2 : 8192;
			if (cap > max + 8192) {
				free(b);
				return -EFBIG;
			}
			nb = realloc(b, cap);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int rc = -errno;

			free(b);
			return rc;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		free(b);
		return -EFBIG;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/* What a file that is not a regular one is, for a log line. */
/*
 * Whether fd may be read: a regular file (a FIFO or a device would block
 * the reader, or never end), and, with secret, one that only its owner can
 * read, ours or root's.
 */
static int check_file(int fd, const char *path, bool secret, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: %s, not a regular file", path, gw_file_kind(&st));
		return -EPERM;
	}
	if (!secret)
		return 0;
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen, "%s: mode %04o lets others read or write it (chmod 600 %s)",
			 path, (unsigned int)(st.st_mode & 07777), path);
		return -EPERM;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s: owned by uid %u, neither root nor this process's uid %u",
			 path, (unsigned int)st.st_uid, (unsigned int)geteuid());
		return -EPERM;
	}
	return 0;
}

/*
 * path's text, at most max bytes. O_NONBLOCK: opening a FIFO (or a device)
 * does not wait for a writer; check_file then refuses it. nofollow: a
 * symbolic link is refused (ELOOP).
 */
static int read_checked(const char *path, int flags, bool secret, size_t max, char **buf,
			size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
	int rc;

	*buf = NULL;
	*len = 0;
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	rc = check_file(fd, path, secret, err, errlen);
	if (!rc) {
		rc = read_fd(fd, max, buf, len);
		if (rc == -EFBIG)
			snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
		else if (rc)
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	}
	close(fd);
	return rc;
}

int api_read_file(const char *path, size_t max, bool secret, char **buf, size_t *len, char *err,
		  size_t errlen)
{
	return read_checked(path, 0, secret, max, buf, len, err, errlen);
}

/* The private file's text (NULL and 0 when missing and missing_ok). */
static int read_private(const char *path, bool missing_ok, char **buf, size_t *len, char *err,
			size_t errlen)
{
	int rc = read_checked(path, O_NOFOLLOW, true, API_TOKEN_FILE_MAX, buf, len, err, errlen);

	if (rc == -ENOENT && missing_ok) {
		err[0] = '\0';
		return 0;
	}
	return rc;
}

int api_tokens_load(const char *path, struct api_tokens *out, char *err, size_t errlen)
{
	char perr[200];
	char *text;
	size_t len;
	int rc;

	rc = read_private(path, false, &text, &len, err, errlen);
	if (rc)
		return rc;
	rc = api_tokens_parse(text, len, out, perr, sizeof(perr));
	if (rc)
		snprintf(err, errlen, "%s: %s", path, perr);
	free(text);
	return rc;
}

/* ------------------------------------------------------------ policy */

bool api_method_is_read(const char *method)
{
	return !strcmp(method, "GET") || !strcmp(method, "HEAD");
}

enum api_access api_access_of(const char *method, const char *path, bool tokens_configured,
			      bool metrics_open)
{
	if (!strcmp(path, "/healthz") || !strcmp(path, "/readyz"))
		return API_ACCESS_OPEN;
	if (!strcmp(path, "/metrics"))
		return tokens_configured && !metrics_open ? API_ACCESS_READ : API_ACCESS_OPEN;
	/* everything else, /api and the paths no route serves alike: fail closed */
	return api_method_is_read(method) ? API_ACCESS_READ : API_ACCESS_ADMIN;
}

/*
 * "Bearer isergw_NAME_SECRET" (the scheme in any case, RFC 9110 11.1): the
 * name and the decoded secret. -EINVAL when the header is not Bearer
 * (*bearer false) or its token is not of our form (*bearer true).
 */
static int parse_bearer(const char *h, bool *bearer, char *name, uint8_t *secret)
{
	const char *tok;
	size_t n, pre = strlen(API_TOKEN_PREFIX), nlen;

	*bearer = false;
	while (*h == ' ' || *h == '\t')
		h++;
	if (strncasecmp(h, "Bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
		return -EINVAL;
	*bearer = true;
	tok = h + 6;
	while (*tok == ' ' || *tok == '\t')
		tok++;
	n = strlen(tok);
	while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
		n--;
	if (n < pre + 1 + 1 + API_TOKEN_SECRET_B64 || strncmp(tok, API_TOKEN_PREFIX, pre) ||
	    tok[n - API_TOKEN_SECRET_B64 - 1] != '_')
		return -EINVAL;
	nlen = n - API_TOKEN_SECRET_B64 - 1 - pre;
	if (!name_ok_n(tok + pre, nlen))
		return -EINVAL;
	memcpy(name, tok + pre, nlen);
	name[nlen] = '\0';
	return unb64_secret(tok + n - API_TOKEN_SECRET_B64, secret);
}

enum api_authz api_authorize(const struct api_tokens *t, const char *authorization,
			     enum api_access need, const struct api_token **who)
{
	static const struct api_token dummy;    /* what an unknown name is compared with */
	const struct api_token *tok = NULL;
	char name[API_TOKEN_NAME_MAX + 1];
	uint8_t secret[API_TOKEN_SECRET_BYTES];
	uint8_t h[API_TOKEN_HASH_BYTES];
	bool bearer, match;

	*who = NULL;
	if (need == API_ACCESS_OPEN)
		return API_AUTHZ_OK;
	if (!authorization)
		return API_AUTHZ_NO_TOKEN;
	if (parse_bearer(authorization, &bearer, name, secret)) {
		OPENSSL_cleanse(secret, sizeof(secret));
		return bearer ? API_AUTHZ_BAD_TOKEN : API_AUTHZ_NO_TOKEN;
	}
	for (size_t i = 0; t && i < t->n; i++)
		if (!strcmp(t->v[i].name, name))
			tok = &t->v[i];
	/* the same work whether the name is known or not */
	match = !hash_secret(tok ? tok->salt : dummy.salt, secret, h) &&
		CRYPTO_memcmp(h, tok ? tok->hash : dummy.hash, sizeof(h)) == 0 && tok;
	OPENSSL_cleanse(secret, sizeof(secret));
	OPENSSL_cleanse(h, sizeof(h));
	if (!match)
		return API_AUTHZ_BAD_TOKEN;
	*who = tok;
	if (need == API_ACCESS_ADMIN && tok->role != API_ROLE_ADMIN)
		return API_AUTHZ_FORBIDDEN;
	return API_AUTHZ_OK;
}

/* ------------------------------------------------------------ making tokens */

int api_token_hash_parse(const char *s, size_t n, uint8_t *salt, uint8_t *hash)
{
	const char *h = s, *colon;
	size_t pre = strlen(HASH_PREFIX);

	if (n < pre || memcmp(h, HASH_PREFIX, pre))
		return -EINVAL;
	h += pre;
	colon = memchr(h, ':', (size_t)(s + n - h));
	if (!colon || unhex(h, (size_t)(colon - h), salt, API_TOKEN_SALT_BYTES) ||
	    unhex(colon + 1, (size_t)(s + n - colon - 1), hash, API_TOKEN_HASH_BYTES))
		return -EINVAL;
	return 0;
}

int api_token_make(const char *name, char *token, size_t toklen, char *hash, size_t hashlen)
{
	uint8_t secret[API_TOKEN_SECRET_BYTES], salt[API_TOKEN_SALT_BYTES];
	uint8_t h[API_TOKEN_HASH_BYTES];
	char b64[API_TOKEN_SECRET_B64 + 1];
	char salthex[2 * API_TOKEN_SALT_BYTES + 1], hashhex[2 * API_TOKEN_HASH_BYTES + 1];
	int rc = 0;

	if (!api_token_name_ok(name) || toklen < API_TOKEN_STR_MAX ||
	    hashlen < API_TOKEN_HASH_STR_MAX)
		return -EINVAL;
	if (RAND_bytes(secret, sizeof(secret)) != 1 || RAND_bytes(salt, sizeof(salt)) != 1 ||
	    hash_secret(salt, secret, h)) {
		rc = -EIO;
		goto out;
	}
	b64_secret(secret, b64);
	tohex(salt, sizeof(salt), salthex);
	tohex(h, sizeof(h), hashhex);
	snprintf(token, toklen, API_TOKEN_PREFIX "%s_%s", name, b64);
	snprintf(hash, hashlen, HASH_PREFIX "%s:%s", salthex, hashhex);
out:
	OPENSSL_cleanse(secret, sizeof(secret));
	OPENSSL_cleanse(b64, sizeof(b64));
	return rc;
}

int api_token_new(const char *name, enum api_role role, char *token, size_t toklen,
		  char *line, size_t linelen)
{
	char hash[API_TOKEN_HASH_STR_MAX];
	int rc;

	if (linelen < 256)
		return -EINVAL;
	rc = api_token_make(name, token, toklen, hash, sizeof(hash));
	if (rc)
		return rc;
	snprintf(line, linelen, "%s %s %s", name, api_role_name(role), hash);
	return 0;
}

int api_token_from_fields(const char *name, const char *role, const char *hash,
			  struct api_token *out)
{
	memset(out, 0, sizeof(*out));
	if (!api_token_name_ok(name) || api_role_parse(role, &out->role) ||
	    api_token_hash_parse(hash, strlen(hash), out->salt, out->hash))
		return -EINVAL;
	memcpy(out->name, name, strlen(name) + 1);
	return 0;
}

int api_tokens_merge(const struct api_tokens *a, const struct api_tokens *b,
		     struct api_tokens *out, size_t *shadowed)
{
	struct api_tokens m = { 0 };
	size_t n = a->n + b->n;

	*shadowed = 0;
	if (n) {
		m.v = calloc(n, sizeof(*m.v));
		if (!m.v)
			return -ENOMEM;
	}
	for (size_t i = 0; i < a->n; i++)
		m.v[m.n++] = a->v[i];
	for (size_t i = 0; i < b->n; i++) {
		bool taken = false;

		for (size_t k = 0; k < a->n && !taken; k++)
			taken = !strcmp(a->v[k].name, b->v[i].name);
		if (taken)
			(*shadowed)++;
		else
			m.v[m.n++] = b->v[i];
	}
	*out = m;
	return 0;
}

int api_write_file(const char *path, const char *text, size_t len, mode_t mode, char *err,
		   size_t errlen)
{
	char tmp[4096], dir[4096];
	int fd, dfd, rc;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp) ||
	    (size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	fd = mkstemp(tmp);      /* 0600 */
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot create a temporary file beside it: %s", path,
			 strerror(errno));
		return rc;
	}
	if (fchmod(fd, mode)) {
		rc = -errno;
		goto err_unlink;
	}
	rc = gw_write_all(fd, text, len);
	if (rc)
		goto err_unlink;
	if (fsync(fd)) {
		rc = -errno;
		goto err_unlink;
	}
	if (close(fd)) {
		fd = -1;
		rc = -errno;
		goto err_unlink;
	}
	fd = -1;
	if (rename(tmp, path)) {
		rc = -errno;
		goto err_unlink;
	}
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
err_unlink:
	snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

int api_token_file_add(const char *path, const char *name, enum api_role role, char *token,
		       size_t toklen, char *err, size_t errlen)
{
	struct api_tokens t = { 0 };
	char perr[200], line[256];
	char *text, *out;
	size_t len, olen;
	int rc;

	if (!api_token_name_ok(name)) {
		snprintf(err, errlen, "the name '%s' is not 1..%u of A-Z a-z 0-9 . _ - "
			 "(starting with a letter or digit)", name, API_TOKEN_NAME_MAX);
		return -EINVAL;
	}
	rc = read_private(path, true, &text, &len, err, errlen);
	if (rc)
		return rc;
	if (text) {
		rc = api_tokens_parse(text, len, &t, perr, sizeof(perr));
		if (rc) {
			snprintf(err, errlen, "%s: %s", path, perr);
			goto out_text;
		}
		for (size_t i = 0; i < t.n; i++) {
			if (!strcmp(t.v[i].name, name)) {
				snprintf(err, errlen, "%s: a token named %s exists (remove it first)",
					 path, name);
				rc = -EEXIST;
				goto out_tokens;
			}
		}
	}
	rc = api_token_new(name, role, token, toklen, line, sizeof(line));
	if (rc) {
		snprintf(err, errlen, "cannot make a token: %s", strerror(-rc));
		goto out_tokens;
	}
	out = malloc(len + strlen(line) + 2);    /* a newline before and after the line */
	if (!out) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out_secret;
	}
	if (len)
		memcpy(out, text, len);
	olen = len;
	if (len && text[len - 1] != '\n')
		out[olen++] = '\n';
	memcpy(out + olen, line, strlen(line));
	olen += strlen(line);
	out[olen++] = '\n';
	rc = api_write_file(path, out, olen, 0600, err, errlen);
	free(out);
out_secret:
	if (rc)
		OPENSSL_cleanse(token, toklen);
out_tokens:
	api_tokens_free(&t);
out_text:
	free(text);
	return rc;
}

int api_token_file_remove(const char *path, const char *name, char *err, size_t errlen)
{
	struct api_tokens t = { 0 };
	char perr[200];
	char *text, *out = NULL;
	size_t len, olen = 0;
	bool found = false;
	int rc;

	rc = read_private(path, false, &text, &len, err, errlen);
	if (rc)
		return rc;
	rc = api_tokens_parse(text, len, &t, perr, sizeof(perr));
	if (rc) {
		snprintf(err, errlen, "%s: %s", path, perr);
		goto out_text;
	}
	out = malloc(len + 1);
	if (!out) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out_tokens;
	}
	/* every line but the token's, comments and all, as it was */
	for (const char *p = text, *end = text + len; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *next = eol ? eol + 1 : end, *q = p, *f;
		size_t n = field(&q, eol ? eol : end, &f);

		if (n && *f != '#' && n == strlen(name) && !memcmp(f, name, n)) {
			found = true;
		} else {
			memcpy(out + olen, p, (size_t)(next - p));
			olen += (size_t)(next - p);
		}
		p = next;
	}
	if (!found) {
		snprintf(err, errlen, "%s: no token named %s", path, name);
		rc = -ENOENT;
		goto out_tokens;
	}
	rc = api_write_file(path, out, olen, 0600, err, errlen);
out_tokens:
	free(out);
	api_tokens_free(&t);
out_text:
	free(text);
	return rc;
}
