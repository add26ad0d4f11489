/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For tests whose commands run on a real reactor thread and may be held
 * there (scsi_cluster.c, the held SET TARGET PORT GROUPS): a command that
 * counts its completions, submitted by message, and waits on mu/cv for
 * completions only, never for a time. Include after test_scsi_harness.h.
 */
#ifndef TEST_SCSI_REACTOR_H
#define TEST_SCSI_REACTOR_H

#include <pthread.h>

#include "common/reactor.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

struct rcmd {
	struct scsi_cmd c;
	int ndone;
	uint8_t pl[64];
};

static inline void *reactor_thread(void *arg)
{
	reactor_run(arg);
	return NULL;
}

static inline void rcmd_done(struct scsi_cmd *cmd)
{
	struct rcmd *t = (struct rcmd *)(void *)cmd;

	pthread_mutex_lock(&mu);
	t->ndone++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static inline void submit_msg(void *arg)
{
	scsi_cmd_submit(arg);
}

static inline void wait_done(struct rcmd *t)
{
	pthread_mutex_lock(&mu);
	while (t->ndone == 0)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	assert_int_equal(t->ndone, 1);
}

static inline int ndone(struct rcmd *t)
{
	int n;

	pthread_mutex_lock(&mu);
	n = t->ndone;
	pthread_mutex_unlock(&mu);
	return n;
}

static bool synced;

static inline void sync_msg(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	synced = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* Everything sent to reactor r before this has run when it returns. */
static inline void reactor_sync(struct reactor *r)
{
	pthread_mutex_lock(&mu);
	synced = false;
	pthread_mutex_unlock(&mu);
	assert_int_equal(reactor_send_msg(r, sync_msg, NULL), 0);
	pthread_mutex_lock(&mu);
	while (!synced)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

#endif
