/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The service manager's notification protocol (sd_notify(3), libsystemd):
 * what the units' Type=notify waits for (docs/packaging.md). Each daemon says
 * READY only once it really serves; without NOTIFY_SOCKET (not started by
 * systemd, or Type= not notify) every call is a no-op.
 */
#ifndef ISERGW_NOTIFY_H
#define ISERGW_NOTIFY_H

#include <sysexits.h>

/*
 * The exit status of a daemon whose configuration is refused: a bad option,
 * a configuration file that cannot be read or is invalid, a token or TLS file
 * refused, a portal's port held by another program. EX_CONFIG of sysexits.h;
 * every unit lists it in RestartPreventExitStatus=, so that systemd does not
 * restart what cannot start before an administrator changes something. The
 * error itself is logged once at err.
 */
#define GW_EXIT_CONFIG EX_CONFIG /* 78 */

/* READY=1 with a STATUS= line for `systemctl status`. */
void gw_notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* STATUS= only. */
void gw_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* RELOADING=1 (a re-read of the configuration starts; READY=1 ends it). */
void gw_notify_reloading(void);
/* STOPPING=1: the shutdown has begun. */
void gw_notify_stopping(void);

#endif
