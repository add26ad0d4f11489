/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What isergwctl's command groups (isergwctl.c, isergwctl_cluster.c) share:
 * the usage error, number options, the monotonic clock, a JSON
 * document on stdout and the line of a refused request (declared in isergwctl.h).
 */
#include <errno.h>
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
