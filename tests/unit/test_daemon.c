// LINK: isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemons' skeleton (common/daemon.c): after gw_daemon_start the
 * signals are blocked (SIGPIPE too: a write to a closed socket fails with
 * EPIPE and the process lives); a SIGHUP calls the daemon's hup and the
 * main reactor goes on; a SIGTERM calls its stop and ends gw_daemon_run;
 * the log level is checked and an operand left over refused.
 */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/daemon.h"

struct seen {
	int hups, stops, ticks;
	struct gw_daemon *d;
	struct reactor_timer t;
};

static void on_hup(void *arg)
{
	((struct seen *)arg)->hups++;
}

static void on_stop(void *arg)
{
	((struct seen *)arg)->stops++;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: test\n");
}

/* On the main reactor: a SIGHUP first, once it was taken a SIGTERM. */
static void tick(void *arg)
{
	struct seen *s = arg;

	if (s->ticks++ == 0)
		raise(SIGHUP);
	else if (s->hups)
		raise(SIGTERM);
	if (s->ticks < 1000)
		reactor_timer_arm(s->d->r, &s->t, 1);
	else
		reactor_stop(s->d->r);  /* no signal came through: end here, the test fails */
}

static void test_signals(void **state)
{
	struct seen s = { 0 };
	struct gw_daemon d = {
		.name = "test", .usage = usage, .stop_what = "stopping", .hup = on_hup,
		.stop = on_stop, .arg = &s,
	};
	sigset_t now;
	int sv[2];

	(void)state;
	assert_int_equal(gw_daemon_start(&d), 0);
	assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &now), 0);
	assert_true(sigismember(&now, SIGTERM) && sigismember(&now, SIGINT) &&
		    sigismember(&now, SIGHUP) && sigismember(&now, SIGPIPE));
	/* SIGPIPE blocked: the write fails, nobody dies */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	assert_int_equal(write(sv[0], "x", 1), -1);
	assert_int_equal(errno, EPIPE);
	close(sv[0]);
	s.d = &d;
	reactor_timer_init(&s.t, tick, &s);
	reactor_timer_arm(d.r, &s.t, 1);
	gw_daemon_run(&d);
	assert_int_equal(s.hups, 1);
	assert_int_equal(s.stops, 1);
	assert_true(s.ticks < 1000);
	reactor_timer_cancel(d.r, &s.t);
	gw_daemon_fini(&d);
	assert_null(d.r);
	gw_daemon_fini(&d);             /* twice: nothing */
}

static void test_options(void **state)
{
	struct gw_daemon d = { .name = "test", .usage = usage };
	char *argv[] = { (char *)"test", (char *)"extra", NULL };

	(void)state;
	assert_int_equal(gw_daemon_check_log_level(&d, "debug"), 0);
	assert_int_equal(gw_daemon_check_log_level(&d, "loud"), -EINVAL);
	optind = 1;
	assert_int_equal(gw_daemon_no_operands(&d, 2, argv), -EINVAL);
	optind = 2;
	assert_int_equal(gw_daemon_no_operands(&d, 2, argv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signals),
		cmocka_unit_test(test_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
