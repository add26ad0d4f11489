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

#endif
