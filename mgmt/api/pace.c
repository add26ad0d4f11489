/* SPDX-License-Identifier: Apache-2.0 */
/* Request pacing: a token bucket and a thread that lets waiting requests go (pace.h). */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "pace.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* under mu */
static void refill(struct api_pace *p)
{
	uint64_t t = now_ns();

	if (t > p->last_ns) {
		p->tokens += (double)(t - p->last_ns) * p->rate / 1e9;
		if (p->tokens > p->burst)
			p->tokens = p->burst;
	}
	p->last_ns = t;
}

static void *pace_main(void *arg)
{
	struct api_pace *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct api_pace_wait *w;

		while (!p->stop && list_empty(&p->waits))
			pthread_cond_wait(&p->cv, &p->mu);
		if (list_empty(&p->waits))
			break;          /* stopping, nobody waits */
		refill(p);
		if (!p->stop && p->tokens < 1.0) {
			double wait_ns = (1.0 - p->tokens) * 1e9 / p->rate;
			struct timespec until;

			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_nsec += (long)wait_ns + 1;
			until.tv_sec += until.tv_nsec / 1000000000L;
			until.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&p->cv, &p->mu, &until);
			continue;
		}
		if (!p->stop)
			p->tokens -= 1.0;
		w = list_first_entry(&p->waits, struct api_pace_wait, link);
		list_del(&w->link);
		pthread_mutex_unlock(&p->mu);
		w->go(w->arg);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int api_pace_init(struct api_pace *p, uint32_t rate, uint32_t burst)
{
	pthread_condattr_t ca;
	int rc;

	memset(p, 0, sizeof(*p));
	list_init(&p->waits);
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	p->rate = rate;
	p->burst = burst ? burst : 1;
	p->tokens = p->burst;
	p->last_ns = now_ns();
	if (!rate)
		return 0;
	rc = pthread_create(&p->thr, NULL, pace_main, p);
	if (rc)
		return -rc;
	p->started = true;
	return 0;
}

/*
 * The HTTP threads may still take and charge: started stays as init set it
 * (they read it without the lock); stop, under the lock, says the thread
 * was told to end, so a second call does not join it again.
 */
void api_pace_stop(struct api_pace *p)
{
	bool first;

	if (!p->started)
		return;
	pthread_mutex_lock(&p->mu);
	first = !p->stop;
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (first)
		pthread_join(p->thr, NULL);
}

void api_pace_destroy(struct api_pace *p)
{
	api_pace_stop(p);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
}

bool api_pace_take(struct api_pace *p, struct api_pace_wait *w, void (*before_wait)(void *),
		   void *arg)
{
	if (!p->started)
		return true;
	pthread_mutex_lock(&p->mu);
	if (p->stop) {
		pthread_mutex_unlock(&p->mu);
		return true;
	}
	refill(p);
	if (list_empty(&p->waits) && p->tokens >= 1.0) {
		p->tokens -= 1.0;
		p->passed++;
		pthread_mutex_unlock(&p->mu);
		return true;
	}
	if (before_wait)
		before_wait(arg);
	list_add_tail(&w->link, &p->waits);
	p->waited++;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return false;
}

void api_pace_charge(struct api_pace *p, size_t len)
{
	if (!p->started || len < API_PACE_BYTES)
		return;
	pthread_mutex_lock(&p->mu);
	p->tokens -= (double)len / API_PACE_BYTES;
	p->charged += len;
	pthread_mutex_unlock(&p->mu);
}
