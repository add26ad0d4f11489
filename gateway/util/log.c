/* SPDX-License-Identifier: Apache-2.0 */
#include "util/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static _Atomic int g_level = GW_LOG_NOTICE;
static const char *const level_names[] = { "err", "warn", "notice", "info", "debug" };

void gw_log_set_level(enum gw_log_level lvl)
{
	atomic_store(&g_level, (int)lvl);
}

enum gw_log_level gw_log_get_level(void)
{
	return (enum gw_log_level)atomic_load_explicit(&g_level, memory_order_relaxed);
}

int gw_log_parse_level(const char *s, enum gw_log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum gw_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void gw_log(enum gw_log_level lvl, const char *comp, const char *fmt, ...)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if ((int)lvl > atomic_load_explicit(&g_level, memory_order_relaxed))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-6s %s: ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		     tm.tm_sec, ts.tv_nsec / 1000000L, level_names[lvl], comp);
	if (n < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* one fputs per line: stdio locks the stream, so lines never interleave */
	size_t len = strnlen(line, sizeof(line) - 2);
	line[len] = '\n';
	line[len + 1] = '\0';
	fputs(line, stderr);
}
