/* SPDX-License-Identifier: Apache-2.0 */
/* sd_notify(3) for the daemons' units (notify.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "common/log.h"
#include "common/notify.h"

#define COMP "notify"

/*
 * One message: FIELDS (may be empty), then STATUS=. sd_notify's errors are
 * logged at debug level only: without a service manager there is nobody to
 * tell, and with one a lost READY shows as the unit's start-up timeout.
 */
static void notify_send(const char *fields, const char *status)
{
	char msg[320];
	int rc;

	snprintf(msg, sizeof(msg), "%s%sSTATUS=%s", fields, fields[0] ? "\n" : "", status);
	rc = sd_notify(0, msg);
	if (rc < 0)
		GW_DEBUG(COMP, "sd_notify: %s", strerror(-rc));
}

__attribute__((format(printf, 2, 0)))
static void notify_fmt(const char *fields, const char *fmt, va_list ap)
{
	char status[256];

	vsnprintf(status, sizeof(status), fmt, ap);
	/* a newline would start another field */
	for (char *p = status; (p = strchr(p, '\n')); )
		*p = ' ';
	notify_send(fields, status);
}

void gw_notify_ready(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	notify_fmt("READY=1", fmt, ap);
	va_end(ap);
}

void gw_notify_status(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	notify_fmt("", fmt, ap);
	va_end(ap);
}

void gw_notify_reloading(void)
{
	notify_send("RELOADING=1", "reloading the configuration");
}

void gw_notify_stopping(void)
{
	notify_send("STOPPING=1", "stopping");
}
