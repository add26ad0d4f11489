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
