/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The skeleton the three daemons (isergwd, isergw-ha, isergw-api) share:
 * --help and --version, the log level, an operand left over, the signals
 * (SIGTERM, SIGINT and SIGHUP taken on the main reactor through a signalfd,
 * SIGPIPE blocked: a write to a peer that left fails with EPIPE instead),
 * the main reactor's run with the service manager told STOPPING=1 at the
 * end. A daemon's own options, its start and its objects stay in its
 * main.c.
 */
#ifndef ISERGW_COMMON_DAEMON_H
#define ISERGW_COMMON_DAEMON_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/reactor.h"

struct gw_daemon {
	const char *name;               /* "isergw-ha": the program, in messages */
	void (*usage)(FILE *f);         /* --help */
	const char *version_extra;      /* printed after "NAME VERSION" (NULL: nothing) */
	const char *stop_what;          /* "<signal> received: <stop_what>" */
	void (*hup)(void *arg);         /* SIGHUP */
	void (*stop)(void *arg);        /* SIGTERM, SIGINT: before the main reactor stops (optional) */
	void *arg;
	/* ---- gw_daemon_start ---- */
	struct reactor *r;              /* the main reactor, on the main thread */
	sigset_t mask;                  /* SIGTERM, SIGINT, SIGHUP */
	int sfd;
	struct reactor_fd sh;
};

/* --help: the usage on stdout, exit 0. */
void gw_daemon_help(const struct gw_daemon *d) __attribute__((noreturn));
/* --version: "NAME VERSION[EXTRA]" on stdout, exit 0. */
void gw_daemon_version(const struct gw_daemon *d) __attribute__((noreturn));
/* Whether level names a log level: -EINVAL logged at err otherwise. */
int gw_daemon_check_log_level(const struct gw_daemon *d, const char *level);
/* Log at level from here on (one that gw_daemon_check_log_level accepted). */
void gw_daemon_set_log_level(const char *level);
/* After the options: an operand left is refused (logged at err), -EINVAL. */
int gw_daemon_no_operands(const struct gw_daemon *d, int argc, char *const *argv);

/*
 * Block SIGTERM, SIGINT, SIGHUP and SIGPIPE in the calling thread and so in
 * every thread started from it afterwards (call it before any), and fill
 * d->mask with the first three.
 */
void gw_daemon_block_signals(struct gw_daemon *d);
/*
 * gw_daemon_block_signals, then the main reactor (d->r) with the signals on
 * it: 0, or -errno logged at err.
 */
int gw_daemon_start(struct gw_daemon *d);
/* Run the main reactor until SIGTERM/SIGINT or reactor_stop(d->r); then STOPPING=1. */
void gw_daemon_run(struct gw_daemon *d);
/* The signalfd and the main reactor go (nothing when not started). */
void gw_daemon_fini(struct gw_daemon *d);

#endif
