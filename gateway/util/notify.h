/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The service manager's notification protocol (sd_notify(3), libsystemd):
 * what the units' Type=notify waits for (docs/packaging.md). Each daemon says
 * READY only once it really serves; without NOTIFY_SOCKET (not started by
 * systemd, or Type= not notify) every call is a no-op.
 */
#ifndef ISERGW_NOTIFY_H
#define ISERGW_NOTIFY_H

/* READY=1 with a STATUS= line for `systemctl status`. */
void gw_notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* STATUS= only. */
void gw_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* RELOADING=1 (a re-read of the configuration starts; READY=1 ends it). */
void gw_notify_reloading(void);
/* STOPPING=1: the shutdown has begun. */
void gw_notify_stopping(void);

#endif
