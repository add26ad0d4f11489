/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's request pacing (--max-request-rate; docs/api.md, "Under
 * load"): a token bucket of `rate` requests a second with a burst of
 * `burst`. A request that finds no token waits, in order, for one: its
 * connection is suspended and the pacer's thread resumes it when its token
 * comes, so a client that asks as fast as it can gets answers at the rate
 * and the node's CPUs stay with the data path. Nothing is refused: a
 * waiting request only waits (the connection limits bound how many).
 */
#ifndef ISERGW_API_PACE_H
#define ISERGW_API_PACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/list.h"

struct api_pace_wait {
	struct list_head link;
	void (*go)(void *arg);          /* on the pacer's thread, no lock held */
	void *arg;
};

struct api_pace {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thr;
	bool started, stop;            /* started: set by init only; stop: under mu */
	double rate, burst, tokens;     /* rate 0: no pacing */
	uint64_t last_ns;               /* monotonic, of the last refill */
	struct list_head waits;
	uint64_t waited, passed;        /* requests that waited, that did not */
	uint64_t charged;               /* answer bytes charged */
};

/* rate 0: off (api_pace_take always passes). 0 or -errno (the thread). */
int api_pace_init(struct api_pace *p, uint32_t rate, uint32_t burst);
/*
 * Every waiting request goes (its go is called), then the thread ends;
 * later takes pass. api_pace_destroy (after stop, or alone) frees the rest.
 */
void api_pace_stop(struct api_pace *p);
void api_pace_destroy(struct api_pace *p);
/*
 * true: a token was there, go on. false: w waits; w->go(w->arg) comes from
 * the pacer's thread once its token does. before_wait(arg), when not NULL,
 * is called under the pacer's lock before w can be let go (suspend the
 * connection there: its resume cannot come first).
 */
bool api_pace_take(struct api_pace *p, struct api_pace_wait *w, void (*before_wait)(void *),
		   void *arg);

/*
 * A paced request's answer of len bytes costs len / API_PACE_BYTES tokens
 * more (the bucket may go below zero: the next requests wait longer), so a
 * client that asks for big answers (thousands of LUNs, /metrics of them)
 * gets fewer a second.
 */
#define API_PACE_BYTES 65536u
void api_pace_charge(struct api_pace *p, size_t len);

#endif
