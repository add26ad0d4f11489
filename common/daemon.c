/* SPDX-License-Identifier: Apache-2.0 */
/* The daemons' shared skeleton (common/daemon.h). */
#include "common/daemon.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/notify.h"

#define COMP "main"

void gw_daemon_help(const struct gw_daemon *d)
{
	d->usage(stdout);
	exit(0);
}

void gw_daemon_version(const struct gw_daemon *d)
{
	printf("%s %s%s\n", d->name, ISERGW_VERSION, d->version_extra ? d->version_extra : "");
	exit(0);
}

int gw_daemon_check_log_level(const struct gw_daemon *d, const char *level)
{
	enum gw_log_level l;

	if (!gw_log_parse_level(level, &l))
		return 0;
	GW_CFGERR("%s: log-level: '%s' is not err, warn, notice, info or debug", d->name, level);
	return -EINVAL;
}

void gw_daemon_set_log_level(const char *level)
{
	enum gw_log_level l;

	if (!gw_log_parse_level(level, &l))
		gw_log_set_level(l);
}

int gw_daemon_no_operands(const struct gw_daemon *d, int argc, char *const *argv)
{
	if (optind >= argc)
		return 0;
	GW_CFGERR("%s: unexpected argument '%s'", d->name, argv[optind]);
	return -EINVAL;
}

void gw_daemon_block_signals(struct gw_daemon *d)
{
	sigset_t all;

	sigemptyset(&d->mask);
	sigaddset(&d->mask, SIGTERM);
	sigaddset(&d->mask, SIGINT);
	sigaddset(&d->mask, SIGHUP);
	all = d->mask;
	sigaddset(&all, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

static void signal_cb(void *arg, uint32_t events)
{
	struct gw_daemon *d = arg;
	struct signalfd_siginfo si;

	(void)events;
	while (read(d->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			d->hup(d->arg);
			continue;
		}
		GW_NOTICE(COMP, "%s received: %s", strsignal((int)si.ssi_signo), d->stop_what);
		if (d->stop)
			d->stop(d->arg);
		reactor_stop(d->r);
	}
}

int gw_daemon_start(struct gw_daemon *d)
{
	int rc;

	d->sfd = -1;
	gw_daemon_block_signals(d);
	rc = reactor_create(0, &d->r);
	if (rc) {
		GW_CFGERR("%s: reactor: %s", d->name, strerror(-rc));
		return rc;
	}
	d->sfd = signalfd(-1, &d->mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->sfd < 0) {
		rc = -errno;
		goto err_signalfd;
	}
	rc = reactor_add_fd(d->r, &d->sh, d->sfd, EPOLLIN, signal_cb, d);
	if (rc)
		goto err_signalfd;
	return 0;

err_signalfd:
	GW_ERR(COMP, "signalfd: %s", strerror(-rc));
	if (d->sfd >= 0)
		close(d->sfd);
	d->sfd = -1;
	reactor_destroy(d->r);
	d->r = NULL;
	return rc;
}

void gw_daemon_run(struct gw_daemon *d)
{
	reactor_run(d->r);
	gw_notify_stopping();
}

void gw_daemon_fini(struct gw_daemon *d)
{
	if (d->r) {
		reactor_del_fd(d->r, &d->sh);
		close(d->sfd);
		d->sfd = -1;
		reactor_destroy(d->r);
		d->r = NULL;
	}
}
