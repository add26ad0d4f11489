/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging. Levels (what each means):
 *   ERR   - something failed that an operator must act on or that lost service
 *           (a backend I/O error, a listener that could not bind).
 *   WARN  - a peer did something wrong or a limit was hit; service goes on
 *           (a protocol error from an initiator, a failed login, a dropped connection).
 *   NOTICE- normal but significant events (login, logout, reload, shutdown).
 *   INFO  - start-up details and configuration.
 *   DEBUG - per-PDU / per-command tracing, off by default.
 * Every line carries a component tag; protocol errors name the peer. When
 * stderr is the journal ($JOURNAL_STREAM), every line starts with its syslog
 * priority ("<3>" for ERR), so `journalctl -p err` shows the errors.
 */
#ifndef ISERGW_LOG_H
#define ISERGW_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gw_log_level {
	GW_LOG_ERR = 0,
	GW_LOG_WARN,
	GW_LOG_NOTICE,
	GW_LOG_INFO,
	GW_LOG_DEBUG,
};

void gw_log_set_level(enum gw_log_level lvl);
enum gw_log_level gw_log_get_level(void);
/* Parse "err|warn|notice|info|debug"; returns 0 or -EINVAL. */
int gw_log_parse_level(const char *s, enum gw_log_level *out);
/*
 * A line of the log: its time, level and component, then the message with
 * control characters and bytes that are not UTF-8 written as \xNN (see
 * gw_log_escape), so that what a peer sent cannot start a line of its own.
 */
void gw_log(enum gw_log_level lvl, const char *comp, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * A window of rate-limited lines: at most max lines in window_ms, the rest
 * counted. gw_log_window_roll starts a new window once the current one has
 * ended and returns the count it held back (0: none, or not ended yet), for
 * the caller's own "N more lines ..." notice; gw_log_window_take says whether
 * a line may be written now (else it is counted). Not locked: the caller's.
 */
struct gw_log_window {
	uint64_t start_ms;      /* the window's start */
	uint32_t n;             /* lines written in it */
	uint64_t quiet;         /* lines held back in it */
};
uint64_t gw_log_window_roll(struct gw_log_window *w, uint64_t now_ms, uint32_t window_ms);
bool gw_log_window_take(struct gw_log_window *w, uint32_t max);
/* msg escaped as gw_log writes it into out (cap > 0): its length (cut at cap - 1). */
size_t gw_log_escape(const char *msg, char *out, size_t cap);
/*
 * One message as it is, without time stamp or component ("isergwd: bad
 * --size 'x'"), for the person or the unit that started the program: what
 * option parsing refuses, before the log is set up. A newline is added when
 * missing. Printed whatever the log level; the journal gets its priority.
 */
void gw_log_plain(enum gw_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define GW_CFGERR(...) gw_log_plain(GW_LOG_ERR, __VA_ARGS__)

/*
 * Formats an error message into a caller's buffer (nothing when err is NULL
 * or errlen 0) and returns rc: `return gw_errf(err, errlen, -EINVAL, "...")`.
 * The one formatter of "what went wrong" for functions that return a
 * negative errno and say why in a buffer.
 */
int gw_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define GW_ERR(comp, ...)    gw_log(GW_LOG_ERR, comp, __VA_ARGS__)
#define GW_WARN(comp, ...)   gw_log(GW_LOG_WARN, comp, __VA_ARGS__)
#define GW_NOTICE(comp, ...) gw_log(GW_LOG_NOTICE, comp, __VA_ARGS__)
#define GW_INFO(comp, ...)   gw_log(GW_LOG_INFO, comp, __VA_ARGS__)
#define GW_DEBUG(comp, ...)                                             \
	do {                                                            \
		if (gw_log_get_level() >= GW_LOG_DEBUG)                 \
			gw_log(GW_LOG_DEBUG, comp, __VA_ARGS__);        \
	} while (0)

#endif
