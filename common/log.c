/* SPDX-License-Identifier: Apache-2.0 */
#include "common/log.h"
#include "common/utf8.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static _Atomic int g_level = GW_LOG_NOTICE;
static const char *const level_names[] = { "err", "warn", "notice", "info", "debug" };
/* syslog(3) priorities of the levels: LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG */
static const char *const journal_prefixes[] = { "<3>", "<4>", "<5>", "<6>", "<7>" };
static pthread_once_t journal_once = PTHREAD_ONCE_INIT;
static bool to_journal;

/*
 * Whether stderr is a stream of the journal (systemd.exec(5), $JOURNAL_STREAM
 * names its device and inode): then each line starts with its priority,
 * "<3>" for err, which journald takes as the line's priority (without it
 * every line would be info). A stderr redirected elsewhere gets no prefix.
 */
static void journal_detect(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	uintmax_t dev, ino;
	struct stat st;

	if (!v || sscanf(v, "%ju:%ju", &dev, &ino) != 2 || fstat(2, &st) < 0)
		return;
	to_journal = (uintmax_t)st.st_dev == dev && (uintmax_t)st.st_ino == ino;
}

static const char *journal_prefix(enum gw_log_level lvl)
{
	pthread_once(&journal_once, journal_detect);
	return to_journal ? journal_prefixes[lvl] : "";
}

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

/*
 * msg into out (cap > 0, NUL-terminated) with every byte a peer could use to
 * forge or garble a line written as \xNN: control characters (a newline
 * would start a line of the sender's making in the journal) and bytes that
 * are not strict UTF-8 (journald keeps such a message as a blob that
 * journalctl does not show). Names, keys and paths that come from initiators,
 * HTTP clients, peers or files reach log lines as they were received.
 */
size_t gw_log_escape(const char *msg, char *out, size_t cap)
{
	const unsigned char *m = (const unsigned char *)msg;
	size_t len = strlen(msg), o = 0;

	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t k = gw_utf8_next(m, len, i, &cp);

		if (k && cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp < 0xa0)) {
			if (o + k >= cap)
				break;
			memcpy(out + o, m + i, k);
			o += k;
			i += k;
			continue;
		}
		if (o + 4 >= cap)
			break;
		snprintf(out + o, cap - o, "\\x%02x", m[i]);
		o += 4;
		i++;
	}
	out[o] = '\0';
	return o;
}

void gw_log(enum gw_log_level lvl, const char *comp, const char *fmt, ...)
{
	char line[1024], msg[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if ((int)lvl > atomic_load_explicit(&g_level, memory_order_relaxed))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%s%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-6s %s: ",
		     journal_prefix(lvl), tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		     tm.tm_sec, ts.tv_nsec / 1000000L, level_names[lvl], comp);
	if (n < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if ((size_t)n < sizeof(line))
		gw_log_escape(msg, line + n, sizeof(line) - (size_t)n);
	/* one fputs per line: stdio locks the stream, so lines never interleave */
	size_t len = strnlen(line, sizeof(line) - 2);
	line[len] = '\n';
	line[len + 1] = '\0';
	fputs(line, stderr);
}

void gw_log_plain(enum gw_log_level lvl, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	size_t len;
	int n;

	n = snprintf(line, sizeof(line), "%s", journal_prefix(lvl));
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	len = strnlen(line, sizeof(line) - 2);
	if (len && line[len - 1] != '\n') {
		line[len] = '\n';
		line[len + 1] = '\0';
	}
	fputs(line, stderr);
}

int gw_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

uint64_t gw_log_window_roll(struct gw_log_window *w, uint64_t now_ms, uint32_t window_ms)
{
	uint64_t quiet = w->quiet;

	if (now_ms - w->start_ms < window_ms)
		return 0;
	w->start_ms = now_ms;
	w->n = 0;
	w->quiet = 0;
	return quiet;
}

bool gw_log_window_take(struct gw_log_window *w, uint32_t max)
{
	if (w->n < max) {
		w->n++;
		return true;
	}
	w->quiet++;
	return false;
}
