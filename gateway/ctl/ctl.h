/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control socket server (docs/control.md): a unix stream socket, owner
 * only, served by a control thread of its own with its own reactor, never on
 * a data-path reactor. Requests that need the reactors (sessions, counters,
 * forced logouts) go to them by message and are answered when every reactor
 * has replied; a configuration reload runs on the control thread.
 */
#ifndef ISERGW_CTL_H
#define ISERGW_CTL_H

#include <stddef.h>

#include "gw_api.h"

GW_API_BEGIN

struct gw;
struct gw_config;
struct gw_ctl;

struct gw_ctl_params {
	const char *path;       /* socket path; its directory is created 0700 when missing */
	/*
	 * Turn a configuration document (JSON, as the configuration file) into a
	 * validated configuration, exactly as a SIGHUP reload does (command-line
	 * overrides included). 0 or a negative errno with the reason in err.
	 */
	int (*load)(void *arg, const char *json, struct gw_config **out, char *err, size_t errlen);
	/*
	 * Read the configuration file again (SIGHUP, ReloadConfig) into a
	 * validated configuration, with the same overrides; -EOPNOTSUPP with the
	 * reason in err when there is no file. Logs nothing: the caller does.
	 */
	int (*load_file)(void *arg, struct gw_config **out, char *err, size_t errlen);
	const char *config_path;        /* the file load_file reads, for the messages */
	void *load_arg;
};

int gw_ctl_start(struct gw *gw, const struct gw_ctl_params *p, struct gw_ctl **out);
/* Close the socket (the file is removed), finish in-flight requests, stop the thread. */
void gw_ctl_stop(struct gw_ctl *ctl);
/*
 * gw_reload() serialised with the reloads of the control socket (ApplyConfig):
 * the SIGHUP path calls this. Takes ownership of cfg; ctl may be NULL.
 */
int gw_ctl_reload(struct gw_ctl *ctl, struct gw *gw, struct gw_config *cfg);
/*
 * The configuration file read again and applied (SIGHUP, the ReloadConfig
 * request): RELOADING=1 ... READY=1 to the service manager, a refused file
 * logged once at err (the reason also in err); the configuration running
 * stays on any failure. 0 or a negative errno (-EOPNOTSUPP: no file to
 * re-read, logged at notice).
 */
int gw_ctl_reload_file(struct gw_ctl *ctl, char *err, size_t errlen);

GW_API_END

#endif
