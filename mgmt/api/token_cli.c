/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api token add|list|remove: the token file (docs/api.md, Security).
 * The secret of a new token is printed once, to stdout, and kept nowhere.
 */
#include <errno.h>
#include <getopt.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

static void token_usage(FILE *f)
{
	fprintf(f,
"Usage: isergw-api token add --token-file FILE --name NAME --role admin|read-only\n"
"       isergw-api token list --token-file FILE\n"
"       isergw-api token remove --token-file FILE --name NAME\n"
"Manage isergw-api's bearer tokens (docs/api.md, Security).\n"
"  add     make a token: the file is created (mode 0600) or rewritten with it\n"
"          appended (a temporary file renamed over it); the token is printed\n"
"          once, on stdout, and stored only as a salted SHA-256 hash\n"
"  list    the tokens' names and roles, one a line (never a secret)\n"
"  remove  take the token NAME out of the file\n"
"NAME: 1..64 of A-Z a-z 0-9 . _ - (starting with a letter or digit). A running\n"
"isergw-api reads the file again on SIGHUP. Exit 0, 1 on an error, 2 on bad usage.\n");
}

int api_token_cli(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "token-file", required_argument, NULL, 'f' },
		{ "name", required_argument, NULL, 'n' },
		{ "role", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd, *file = NULL, *name = NULL, *role = NULL;
	char err[512] = "", token[API_TOKEN_STR_MAX];
	enum api_role r = API_ROLE_READ_ONLY;
	int opt, rc;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		token_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	optind = 1;
	while ((opt = getopt_long(argc - 1, argv + 1, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			file = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'r':
			role = optarg;
			break;
		case 'h':
			token_usage(stdout);
			return 0;
		default:
			token_usage(stderr);
			return 2;
		}
	}
	if (optind < argc - 1 || !file) {
		fprintf(stderr, "isergw-api token: %s\n", !file ? "--token-file FILE is required" :
			"unexpected argument");
		return 2;
	}
	if (!strcmp(cmd, "add")) {
		if (!name || !role || api_role_parse(role, &r)) {
			fprintf(stderr, "isergw-api token add: --name NAME and --role admin|read-only "
				"are required\n");
			return 2;
		}
		rc = api_token_file_add(file, name, r, token, sizeof(token), err, sizeof(err));
		if (rc) {
			fprintf(stderr, "isergw-api token add: %s\n", err);
			return 1;
		}
		printf("%s\n", token);
		fflush(stdout);
		OPENSSL_cleanse(token, sizeof(token));
		fprintf(stderr, "isergw-api: token %s (%s) added to %s; its secret is printed above "
			"and nowhere else\n", name, api_role_name(r), file);
		return 0;
	}
	if (!strcmp(cmd, "remove")) {
		if (!name) {
			fprintf(stderr, "isergw-api token remove: --name NAME is required\n");
			return 2;
		}
		rc = api_token_file_remove(file, name, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "isergw-api token remove: %s\n", err);
			return 1;
		}
		return 0;
	}
	if (!strcmp(cmd, "list")) {
		struct api_tokens t;

		rc = api_tokens_load(file, &t, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "isergw-api token list: %s\n", err);
			return 1;
		}
		for (size_t i = 0; i < t.n; i++)
			printf("%s %s\n", t.v[i].name, api_role_name(t.v[i].role));
		api_tokens_free(&t);
		return 0;
	}
	fprintf(stderr, "isergw-api token: '%s' is not add, list or remove\n", cmd);
	return 2;
}
