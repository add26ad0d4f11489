// LINK: api_logic
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's tokens and access policy (mgmt/api/auth.c): the token file
 * (good files with comments, blank lines, CRLF; malformed lines, bad roles,
 * bad hashes, duplicates, each named by its line number; the permission and
 * owner checks), tokens made by api_token_new verified (the right token,
 * a wrong secret, an unknown name, truncated, empty, other schemes), the
 * role decisions per method and route, and the token file's add/remove;
 * the cluster's tokens checked and merged after the file's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth.h"

#define SALT "000102030405060708090a0b0c0d0e0f"
#define HASH "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

static int parse(const char *text, struct api_tokens *t, char *err, size_t errlen)
{
	err[0] = '\0';
	return api_tokens_parse(text, strlen(text), t, err, errlen);
}

static void test_parse_good(void **state)
{
	const char *text =
		"# isergw-api tokens\n"
		"\n"
		"ops admin sha256:" SALT ":" HASH "\n"
		"   # an indented comment\n"
		"\tprom\tread-only   sha256:" SALT ":" HASH "  \r\n"
		"a.b_c-9 read-only sha256:" SALT ":" HASH;     /* no newline at the end */
	struct api_tokens t;
	char err[256];

	(void)state;
	assert_int_equal(parse(text, &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.v[0].name, "ops");
	assert_int_equal(t.v[0].role, API_ROLE_ADMIN);
	assert_string_equal(t.v[1].name, "prom");
	assert_int_equal(t.v[1].role, API_ROLE_READ_ONLY);
	assert_string_equal(t.v[2].name, "a.b_c-9");
	assert_int_equal(t.v[0].salt[0], 0x00);
	assert_int_equal(t.v[0].salt[15], 0x0f);
	assert_int_equal(t.v[0].hash[1], 0x11);
	assert_int_equal(t.v[0].hash[31], 0xff);
	api_tokens_free(&t);
	assert_null(t.v);

	/* an empty file, only comments: no tokens, not an error */
	assert_int_equal(parse("", &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 0);
	api_tokens_free(&t);
	assert_int_equal(parse("# nothing\n\n", &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 0);
	api_tokens_free(&t);
}

static void test_parse_bad(void **state)
{
	static const struct {
		const char *line;       /* the third line of a file */
		const char *err;        /* a part of the message */
	} cases[] = {
		{ "ops admin", "want NAME ROLE HASH" },
		{ "ops", "want NAME ROLE HASH" },
		{ "ops admin sha256:" SALT ":" HASH " extra", "want NAME ROLE HASH" },
		{ "ops root sha256:" SALT ":" HASH, "neither admin nor read-only" },
		{ "ops Admin sha256:" SALT ":" HASH, "neither admin nor read-only" },
		{ "ops readonly sha256:" SALT ":" HASH, "neither admin nor read-only" },
		{ "ops read-only md5:" SALT ":" HASH, "does not start with sha256:" },
		{ "ops admin sha256:" SALT HASH, "32 and 64 hex digits" },
		{ "ops admin sha256:" SALT ":" HASH "0", "32 and 64 hex digits" },
		{ "ops admin sha256:" SALT "0:" HASH, "32 and 64 hex digits" },
		{ "ops admin sha256:" SALT ":" "zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		  "32 and 64 hex digits" },
		{ "-ops admin sha256:" SALT ":" HASH, "the name" },
		{ "o/ps admin sha256:" SALT ":" HASH, "the name" },
		{ "ops\xc3\xa9 admin sha256:" SALT ":" HASH, "the name" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa admin sha256:"
		  SALT ":" HASH, "the name" },      /* 65 */
		{ "first admin sha256:" SALT ":" HASH, "a second token named first" },
	};
	char text[1024], err[256];
	struct api_tokens t = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "# tokens\nfirst read-only sha256:" SALT ":" HASH
			 "\n%s\nlast admin sha256:" SALT ":" HASH "\n", cases[i].line);
		assert_int_equal(parse(text, &t, err, sizeof(err)), -EINVAL);
		assert_null(t.v);
		if (strncmp(err, "line 3: ", 8) || !strstr(err, cases[i].err))
			fail_msg("case %zu '%s': error '%s', want line 3 and '%s'", i, cases[i].line,
				 err, cases[i].err);
	}
	/* 64 is the longest name */
	snprintf(text, sizeof(text), "%s admin sha256:" SALT ":" HASH "\n",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	assert_int_equal(parse(text, &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 1);
	api_tokens_free(&t);
	/* a NUL inside a line */
	memcpy(text, "ops admin\0sha256:x\n", 19);
	assert_int_equal(api_tokens_parse(text, 19, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 1"));
}

/* A token and a one-token set holding it. */
static void make(const char *name, enum api_role role, char *token, struct api_tokens *t)
{
	char line[256], err[256];

	assert_int_equal(api_token_new(name, role, token, API_TOKEN_STR_MAX, line, sizeof(line)), 0);
	/* the file line holds no part of the secret */
	assert_null(strstr(line, token + strlen(token) - API_TOKEN_SECRET_B64));
	assert_int_equal(parse(line, t, err, sizeof(err)), 0);
	assert_int_equal(t->n, 1);
}

static enum api_authz authz(const struct api_tokens *t, const char *hdr, enum api_access need,
			    const char **who)
{
	const struct api_token *w = (const struct api_token *)1;
	enum api_authz v = api_authorize(t, hdr, need, &w);

	*who = w ? w->name : NULL;
	return v;
}

static void test_verify(void **state)
{
	char tok[API_TOKEN_STR_MAX], hdr[256], other[API_TOKEN_STR_MAX];
	struct api_tokens t, t2;
	const char *who;
	size_t n;

	(void)state;
	make("ops", API_ROLE_ADMIN, tok, &t);
	assert_int_equal(strncmp(tok, "isergw_ops_", 11), 0);
	n = strlen(tok);
	assert_int_equal(n, 11 + API_TOKEN_SECRET_B64);

	/* the right token */
	snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	assert_int_equal(authz(&t, hdr, API_ACCESS_ADMIN, &who), API_AUTHZ_OK);
	assert_string_equal(who, "ops");
	assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_OK);
	/* the scheme in any case, blanks around */
	snprintf(hdr, sizeof(hdr), "  bEARER \t%s  ", tok);
	assert_int_equal(authz(&t, hdr, API_ACCESS_ADMIN, &who), API_AUTHZ_OK);

	/* a wrong secret: each position of it changed in turn */
	for (size_t i = n - API_TOKEN_SECRET_B64; i < n; i++) {
		snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
		hdr[7 + i] = hdr[7 + i] == 'A' ? 'B' : 'A';
		assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
		assert_null(who);
	}
	/* another token's secret under this name */
	make("ops", API_ROLE_ADMIN, other, &t2);
	snprintf(hdr, sizeof(hdr), "Bearer isergw_ops_%s", other + 11);
	assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	api_tokens_free(&t2);
	/* an unknown name with the right secret */
	snprintf(hdr, sizeof(hdr), "Bearer isergw_opz_%s", tok + 11);
	assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	assert_null(who);
	/* truncated, one character more, no prefix, an empty token */
	snprintf(hdr, sizeof(hdr), "Bearer %.*s", (int)n - 1, tok);
	assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	snprintf(hdr, sizeof(hdr), "Bearer %sA", tok);
	assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	snprintf(hdr, sizeof(hdr), "Bearer %s", tok + 7);
	assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	assert_int_equal(authz(&t, "Bearer ", API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	assert_int_equal(authz(&t, "Bearer isergw__", API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	/* the secret's last character carries 4 bits: another spelling of it is refused */
	{
		static const char b64[] =
			"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
		size_t last;

		snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
		last = strlen(hdr) - 1;
		/* the same 4 bits, a low bit set that must be zero */
		hdr[last] = b64[(strchr(b64, hdr[last]) - b64) ^ 1];
		assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
		hdr[last] = '=';
		assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	}

	/* no Bearer credentials at all */
	assert_int_equal(authz(&t, NULL, API_ACCESS_READ, &who), API_AUTHZ_NO_TOKEN);
	assert_int_equal(authz(&t, "", API_ACCESS_READ, &who), API_AUTHZ_NO_TOKEN);
	assert_int_equal(authz(&t, "Bearer", API_ACCESS_READ, &who), API_AUTHZ_NO_TOKEN);
	snprintf(hdr, sizeof(hdr), "Basic %s", tok);
	assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_NO_TOKEN);
	snprintf(hdr, sizeof(hdr), "Bearer%s", tok);
	assert_int_equal(authz(&t, hdr, API_ACCESS_READ, &who), API_AUTHZ_NO_TOKEN);

	/* no tokens configured: nothing verifies */
	snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	assert_int_equal(authz(NULL, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	t2 = (struct api_tokens){ 0 };
	assert_int_equal(authz(&t2, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	/* an open route asks nothing, whatever the header */
	assert_int_equal(authz(&t2, "garbage", API_ACCESS_OPEN, &who), API_AUTHZ_OK);
	assert_null(who);
	api_tokens_free(&t);
}

static void test_roles(void **state)
{
	char ro[API_TOKEN_STR_MAX], adm[API_TOKEN_STR_MAX], hro[256], hadm[256], err[256];
	char line1[256], line2[256], text[600];
	struct api_tokens t;
	const char *who;

	(void)state;
	assert_int_equal(api_token_new("prom", API_ROLE_READ_ONLY, ro, sizeof(ro), line1,
				       sizeof(line1)), 0);
	assert_int_equal(api_token_new("ops", API_ROLE_ADMIN, adm, sizeof(adm), line2,
				       sizeof(line2)), 0);
	snprintf(text, sizeof(text), "%s\n%s\n", line1, line2);
	assert_int_equal(parse(text, &t, err, sizeof(err)), 0);
	snprintf(hro, sizeof(hro), "Bearer %s", ro);
	snprintf(hadm, sizeof(hadm), "Bearer %s", adm);

	assert_int_equal(authz(&t, hro, API_ACCESS_READ, &who), API_AUTHZ_OK);
	assert_string_equal(who, "prom");
	assert_int_equal(authz(&t, hro, API_ACCESS_ADMIN, &who), API_AUTHZ_FORBIDDEN);
	assert_string_equal(who, "prom");
	assert_int_equal(authz(&t, hadm, API_ACCESS_READ, &who), API_AUTHZ_OK);
	assert_string_equal(who, "ops");
	assert_int_equal(authz(&t, hadm, API_ACCESS_ADMIN, &who), API_AUTHZ_OK);
	/* one token's name with the other's secret */
	snprintf(hro, sizeof(hro), "Bearer isergw_ops_%s", ro + strlen("isergw_prom_"));
	assert_int_equal(authz(&t, hro, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	api_tokens_free(&t);
}

static void test_policy(void **state)
{
	static const char *const reads[] = { "GET", "HEAD" };
	static const char *const writes[] = { "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "get" };

	(void)state;
	for (int tok = 0; tok < 2; tok++) {
		for (int open = 0; open < 2; open++) {
			for (size_t i = 0; i < 2; i++) {
				assert_int_equal(api_access_of(reads[i], "/healthz", tok, open),
						 API_ACCESS_OPEN);
				assert_int_equal(api_access_of(reads[i], "/readyz", tok, open),
						 API_ACCESS_OPEN);
				assert_int_equal(api_access_of(reads[i], "/api/v1/targets", tok, open),
						 API_ACCESS_READ);
				assert_int_equal(api_access_of(reads[i], "/api", tok, open),
						 API_ACCESS_READ);
				assert_int_equal(api_access_of(reads[i], "/api/", tok, open),
						 API_ACCESS_READ);
			}
			for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
				assert_int_equal(api_access_of(writes[i], "/api/v1/targets/x", tok, open),
						 API_ACCESS_ADMIN);
				assert_int_equal(api_access_of(writes[i], "/api/v1", tok, open),
						 API_ACCESS_ADMIN);
				/* the probes refuse other methods themselves (405) */
				assert_int_equal(api_access_of(writes[i], "/healthz", tok, open),
						 API_ACCESS_OPEN);
			}
			/* every other path fails closed, however a router might read it */
			assert_int_equal(api_access_of("POST", "/apix", tok, open), API_ACCESS_ADMIN);
			assert_int_equal(api_access_of("GET", "/nope", tok, open), API_ACCESS_READ);
			assert_int_equal(api_access_of("POST", "//api/v1/targets", tok, open),
					 API_ACCESS_ADMIN);
			assert_int_equal(api_access_of("DELETE", "/API/v1/x", tok, open),
					 API_ACCESS_ADMIN);
			assert_int_equal(api_access_of("POST", "/healthz/", tok, open),
					 API_ACCESS_ADMIN);
			assert_int_equal(api_access_of("POST", "/metrics/../api/v1", tok, open),
					 API_ACCESS_ADMIN);
			assert_int_equal(api_access_of("GET", "", tok, open), API_ACCESS_READ);
		}
	}
	/* /metrics: open without tokens or with --metrics-open, else READ */
	assert_int_equal(api_access_of("GET", "/metrics", false, false), API_ACCESS_OPEN);
	assert_int_equal(api_access_of("GET", "/metrics", false, true), API_ACCESS_OPEN);
	assert_int_equal(api_access_of("GET", "/metrics", true, true), API_ACCESS_OPEN);
	assert_int_equal(api_access_of("GET", "/metrics", true, false), API_ACCESS_READ);
	assert_int_equal(api_access_of("HEAD", "/metrics", true, false), API_ACCESS_READ);
	assert_true(api_method_is_read("GET"));
	assert_true(api_method_is_read("HEAD"));
	assert_false(api_method_is_read("POST"));
	assert_false(api_method_is_read("get"));
}

/* ---- the file */

static char dir[64];

static int setup_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_api_auth.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_load(void **state)
{
	char path[128], err[512];
	struct api_tokens t;

	(void)state;
	snprintf(path, sizeof(path), "%s/tokens", dir);
	write_file(path, "ops admin sha256:" SALT ":" HASH "\n", 0600);
	assert_int_equal(api_tokens_load(path, &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 1);
	api_tokens_free(&t);
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(api_tokens_load(path, &t, err, sizeof(err)), 0);
	api_tokens_free(&t);

	/* group- or world-accessible */
	static const mode_t bad[] = { 0640, 0604, 0620, 0602, 0610, 0601, 0644, 0666 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(chmod(path, bad[i]), 0);
		assert_int_equal(api_tokens_load(path, &t, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "lets others read or write it"));
		assert_non_null(strstr(err, path));
	}
	assert_int_equal(chmod(path, 0600), 0);
	/* owned by someone else (only as root can the test make such a file) */
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(api_tokens_load(path, &t, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "owned by uid 65534"));
		assert_int_equal(chown(path, 0, 0), 0);
	}
	/* a malformed line: path and line number */
	write_file(path, "# x\nops admin sha256:" SALT ":" HASH "\nops admin\n", 0600);
	assert_int_equal(api_tokens_load(path, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "line 3: "));
	/* missing; a directory */
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(api_tokens_load(path, &t, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, path));
	assert_int_not_equal(api_tokens_load(dir, &t, err, sizeof(err)), 0);
}

static void test_file_add_remove(void **state)
{
	char path[128], err[512], tok1[API_TOKEN_STR_MAX], tok2[API_TOKEN_STR_MAX], hdr[256];
	char *text;
	size_t len;
	struct api_tokens t;
	struct stat st;
	const char *who;

	(void)state;
	snprintf(path, sizeof(path), "%s/new-tokens", dir);
	unlink(path);
	/* a new file: 0600 */
	assert_int_equal(api_token_file_add(path, "ops", API_ROLE_ADMIN, tok1, sizeof(tok1), err,
					    sizeof(err)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* appended, comments kept */
	assert_int_equal(api_read_file(path, 1 << 20, true, &text, &len, err, sizeof(err)), 0);
	free(text);
	{
		FILE *f = fopen(path, "a");

		assert_non_null(f);
		fputs("# a comment\n", f);
		fclose(f);
	}
	assert_int_equal(api_token_file_add(path, "prom", API_ROLE_READ_ONLY, tok2, sizeof(tok2),
					    err, sizeof(err)), 0);
	assert_int_not_equal(strcmp(tok1 + 11, tok2 + 12), 0);
	assert_int_equal(api_token_file_add(path, "prom", API_ROLE_ADMIN, hdr, sizeof(hdr), err,
					    sizeof(err)), -EEXIST);
	assert_int_equal(api_token_file_add(path, "bad name", API_ROLE_ADMIN, hdr, sizeof(hdr),
					    err, sizeof(err)), -EINVAL);
	assert_int_equal(api_tokens_load(path, &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 2);
	snprintf(hdr, sizeof(hdr), "Bearer %s", tok1);
	assert_int_equal(authz(&t, hdr, API_ACCESS_ADMIN, &who), API_AUTHZ_OK);
	snprintf(hdr, sizeof(hdr), "Bearer %s", tok2);
	assert_int_equal(authz(&t, hdr, API_ACCESS_ADMIN, &who), API_AUTHZ_FORBIDDEN);
	api_tokens_free(&t);
	/* the secrets are nowhere in the file */
	assert_int_equal(api_read_file(path, 1 << 20, true, &text, &len, err, sizeof(err)), 0);
	assert_null(strstr(text, tok1 + 11));
	assert_null(strstr(text, tok2 + 12));
	assert_non_null(strstr(text, "# a comment\n"));
	free(text);

	/* remove */
	assert_int_equal(api_token_file_remove(path, "ops", err, sizeof(err)), 0);
	assert_int_equal(api_token_file_remove(path, "ops", err, sizeof(err)), -ENOENT);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(api_tokens_load(path, &t, err, sizeof(err)), 0);
	assert_int_equal(t.n, 1);
	assert_string_equal(t.v[0].name, "prom");
	api_tokens_free(&t);
	assert_int_equal(api_read_file(path, 1 << 20, true, &text, &len, err, sizeof(err)), 0);
	assert_non_null(strstr(text, "# a comment\n"));
	free(text);
	/* a file others can read is neither added to nor removed from */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(api_token_file_add(path, "x", API_ROLE_ADMIN, tok1, sizeof(tok1), err,
					    sizeof(err)), -EPERM);
	assert_int_equal(api_token_file_remove(path, "prom", err, sizeof(err)), -EPERM);
}

/*
 * A FIFO as the token file or a TLS file is refused at once (opening it
 * waited for a writer for ever: the start hung, and so did SIGHUP, with
 * SIGTERM unanswered); a private key others can read is refused like the
 * token file.
 */
static void test_not_regular_or_open(void **state)
{
	char path[128], err[512];
	struct api_tokens t;
	char *text;
	size_t len;

	(void)state;
	snprintf(path, sizeof(path), "%s/fifo", dir);
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(10);                      /* a hang is a failure, not a stuck run */
	assert_int_equal(api_tokens_load(path, &t, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "a FIFO, not a regular file"));
	assert_int_equal(api_read_file(path, 1 << 20, false, &text, &len, err, sizeof(err)),
			 -EPERM);
	assert_int_equal(api_read_file(path, 1 << 20, true, &text, &len, err, sizeof(err)),
			 -EPERM);
	alarm(0);
	unlink(path);
	/* a directory */
	assert_int_equal(api_read_file(dir, 1 << 20, false, &text, &len, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "a directory"));
	/* a key file of mode 0644: the certificate may be read, the key may not */
	snprintf(path, sizeof(path), "%s/key.pem", dir);
	{
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs("-----BEGIN PRIVATE KEY-----\n", f);
		fclose(f);
	}
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(api_read_file(path, 1 << 20, false, &text, &len, err, sizeof(err)), 0);
	free(text);
	assert_int_equal(api_read_file(path, 1 << 20, true, &text, &len, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "mode 0644 lets others read or write it"));
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(api_read_file(path, 1 << 20, true, &text, &len, err, sizeof(err)), 0);
	free(text);
	unlink(path);
}

/*
 * The cluster's tokens (docs/api.md, Cluster tokens): made by
 * api_token_make, carried as name, role and hash, checked as a file line
 * would be, and merged after the file's, a file token of the same name
 * winning.
 */
static void test_cluster_tokens(void **state)
{
	char tok[API_TOKEN_STR_MAX], ftok[API_TOKEN_STR_MAX], hash[API_TOKEN_HASH_STR_MAX];
	char hdr[256];
	struct api_tokens file, cl = { 0 }, m;
	struct api_token x;
	const char *who;
	size_t shadowed;

	(void)state;
	assert_int_equal(api_token_make("prom", tok, sizeof(tok), hash, sizeof(hash)), 0);
	assert_int_equal(strncmp(hash, "sha256:", 7), 0);
	assert_int_equal(strlen(hash) + 1, API_TOKEN_HASH_STR_MAX);
	assert_null(strstr(hash, tok + strlen(tok) - API_TOKEN_SECRET_B64));
	/* what a peer or an agent may send: refused unless it is a file line's */
	assert_int_equal(api_token_from_fields("prom", "root", hash, &x), -EINVAL);
	assert_int_equal(api_token_from_fields("prom", "admin", "sha256:" SALT ":00", &x), -EINVAL);
	assert_int_equal(api_token_from_fields("prom", "admin", "md5:" SALT ":" HASH, &x), -EINVAL);
	assert_int_equal(api_token_from_fields("", "admin", hash, &x), -EINVAL);
	assert_int_equal(api_token_from_fields("a b", "admin", hash, &x), -EINVAL);
	assert_int_equal(api_token_from_fields("prom", "read-only", hash, &x), 0);
	cl.v = calloc(2, sizeof(*cl.v));
	assert_non_null(cl.v);
	cl.v[cl.n++] = x;
	/* a cluster token named as the file's "ops" */
	assert_int_equal(api_token_from_fields("ops", "admin", "sha256:" SALT ":" HASH, &cl.v[1]), 0);
	cl.n++;
	make("ops", API_ROLE_ADMIN, ftok, &file);
	assert_int_equal(api_tokens_merge(&file, &cl, &m, &shadowed), 0);
	assert_int_equal(m.n, 2);
	assert_int_equal(shadowed, 1);
	/* the cluster's token verifies with its role; the file's ops is the file's */
	snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	assert_int_equal(authz(&m, hdr, API_ACCESS_READ, &who), API_AUTHZ_OK);
	assert_string_equal(who, "prom");
	assert_int_equal(authz(&m, hdr, API_ACCESS_ADMIN, &who), API_AUTHZ_FORBIDDEN);
	snprintf(hdr, sizeof(hdr), "Bearer %s", ftok);
	assert_int_equal(authz(&m, hdr, API_ACCESS_ADMIN, &who), API_AUTHZ_OK);
	api_tokens_free(&m);
	/* revoked: no longer in the cluster's list, refused */
	cl.n = 1;
	cl.v[0] = cl.v[1];
	assert_int_equal(api_tokens_merge(&file, &cl, &m, &shadowed), 0);
	snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	assert_int_equal(authz(&m, hdr, API_ACCESS_READ, &who), API_AUTHZ_BAD_TOKEN);
	api_tokens_free(&m);
	api_tokens_free(&file);
	api_tokens_free(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_verify),
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_file_add_remove),
		cmocka_unit_test(test_not_regular_or_open),
		cmocka_unit_test(test_cluster_tokens),
	};

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
