/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What isergwctl's command groups (isergwctl.c, isergwctl_cluster.c) share:
 * the usage error, number options, command lines of operands and option
 * bits, the monotonic clock, a JSON
 * document on stdout and the line of a refused request (declared in isergwctl.h).
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "isergwctl.h"

int isergwctl_usage_err(const char *group, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "isergwctl: %s%s", group ? group : "", group ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'isergwctl%s%s --help'.\n", group ? " " : "", group ? group : "");
	return ISERGWCTL_EXIT_USAGE;
}

int isergwctl_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int isergwctl_parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (isergwctl_parse_u64(s, &v) || v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int isergwctl_args_next(struct isergwctl_args *a, int argc, char **argv)
{
	int opt, idx = -1;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "-:h", a->opts, &idx)) != -1) {
		/* an option of a bit (getopt_long leaves idx alone for operands and -h) */
		if (idx >= (int)a->first)
			a->given |= 1u << (idx - (int)a->first);
		idx = -1;
		if (opt == 1 && a->npos == a->max) {
			a->extra = optarg;
			return ISERGWCTL_ARGS_FULL;
		}
		if (opt == 1)
			a->pos[a->npos++] = optarg;
		else if (opt == 'j')
			a->json = true;
		else if (opt == 'h')
			a->help = true;
		else
			return opt;
	}
	for (; optind < argc; optind++) {       /* after "--" */
		if (a->npos == a->max) {
			a->extra = argv[optind];
			a->after_dashes = true;
			return ISERGWCTL_ARGS_FULL;
		}
		a->pos[a->npos++] = argv[optind];
	}
	return -1;
}

void isergwctl_args_bad_opt(int opt, char **argv, char *why, size_t len)
{
	if (opt == ':')
		snprintf(why, len, "%s needs a value", argv[optind - 1]);
	else if (optopt)
		snprintf(why, len, "unknown option '-%c'", optopt);
	else
		snprintf(why, len, "unknown option '%s'", argv[optind - 1]);
}

const char *isergwctl_opt_unwanted(const struct option *opts, size_t first, unsigned int given,
				   unsigned int allowed)
{
	for (size_t i = 0; opts[first + i].name; i++)
		if (given & ~allowed & (1u << i))
			return opts[first + i].name;
	return NULL;
}

int64_t isergwctl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void isergwctl_print_json(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

void isergwctl_print_refusal(int status, const char *error)
{
	fprintf(stderr, "isergwctl: refused: %s (%s)\n", error[0] ? error : "no reason given",
		strerror(-status));
}

/* ------------------------------------------------------------ tables */

void isergwctl_table_init(struct isergwctl_table *t, size_t ncols)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols < ISERGWCTL_TABLE_COLS_MAX ? ncols : ISERGWCTL_TABLE_COLS_MAX;
}

void isergwctl_table_cell(struct isergwctl_table *t, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	if (t->failed)
		return;
	if (t->ncells == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		char **cells = realloc(t->cells, cap * sizeof(*cells));

		if (!cells) {
			t->failed = true;
			return;
		}
		t->cells = cells;
		t->cap = cap;
	}
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->failed = true;
		return;
	}
	if (n > t->width[t->ncells % t->ncols])
		t->width[t->ncells % t->ncols] = n;
	t->cells[t->ncells++] = s;
}

int isergwctl_table_print(struct isergwctl_table *t, FILE *f)
{
	int rc = t->failed ? -ENOMEM : 0;

	for (size_t i = 0; !rc && i < t->ncells; i++) {
		size_t col = i % t->ncols;

		if (col + 1 == t->ncols || i + 1 == t->ncells)
			fprintf(f, "%s\n", t->cells[i]);
		else
			fprintf(f, "%-*s  ", t->width[col], t->cells[i]);
	}
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	return rc;
}

void isergwctl_table_heads(struct isergwctl_table *t, const char *const *heads, size_t n)
{
	for (size_t i = 0; i < n; i++)
		isergwctl_table_cell(t, "%s", heads[i]);
}

void isergwctl_dg_table_init(struct isergwctl_table *t, size_t nnodes)
{
	static const char *const heads[] = { "DEVICE GROUP", "OWNER", "PREFERRED", "FAILBACK" };

	isergwctl_table_init(t, ISERGWCTL_DG_COLS + nnodes);
	isergwctl_table_heads(t, heads, ISERGWCTL_DG_COLS);
}

const char *isergwctl_state_abbrev(const char *state)
{
	if (strcmp(state, "unavailable") == 0)
		return "unavail";
	if (strcmp(state, "transitioning") == 0)
		return "trans";
	return state[0] ? state : "?";
}
