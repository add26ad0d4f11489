/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's Prometheus metrics (docs/metrics.md): the API's own
 * request accounting and the rendering of one scrape in the text exposition
 * format 0.0.4. Pure: no sockets, no clock, no locks; the caller gathers
 * what isergwd answered on its control socket and the API's statistics, and
 * gets the text back. Every family is declared once, in a table in
 * metrics.c, with its HELP and TYPE.
 */
#ifndef ISERGW_API_METRICS_H
#define ISERGW_API_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isergw_ctl.pb-c.h"
#include "isergw_ha.pb-c.h"

/* The routes the API knows; every other path is "other" (a bounded label). */
enum api_route {
	API_ROUTE_HEALTHZ = 0,
	API_ROUTE_READYZ,
	API_ROUTE_METRICS,
	API_ROUTE_V1,           /* every path under /api/v1/ */
	API_ROUTE_OTHER,
	API_ROUTE_N,
};

/* "/healthz", "/readyz", "/metrics", "/api/v1", "other". */
const char *api_route_name(enum api_route r);
/* The route of a request path (without the query string). */
enum api_route api_route_of(const char *path);

/* Upper bounds (seconds) of the request duration histogram, +Inf implied. */
#define API_DUR_NBOUNDS 12
extern const double api_dur_bounds[API_DUR_NBOUNDS];

/* Distinct (route, status code) pairs kept; more are counted as code 0. */
#define API_CODES_MAX 64

struct api_stats {
	struct {
		enum api_route route;
		unsigned int code;
		uint64_t n;
	} codes[API_CODES_MAX];
	size_t ncodes;
	struct {
		uint64_t bucket[API_DUR_NBOUNDS + 1];   /* not cumulative; last: above every bound */
		uint64_t count;
		double sum;
	} dur[API_ROUTE_N];
};

void api_stats_init(struct api_stats *s);
/* One answered request: its route, HTTP status and duration in seconds. */
void api_stats_record(struct api_stats *s, enum api_route r, unsigned int code, double seconds);

/* What one scrape renders. Pointers may be NULL when isergwd did not answer. */
struct metrics_input {
	const char *version;            /* isergw_build_info */
	bool up;                        /* isergwd answered */
	double now_s;                   /* Unix time of the scrape (for the start time) */
	const Isergw__Ctl__StatusInfo *status;
	const Isergw__Ctl__SessionList *sessions;
	const Isergw__Ctl__Counters *counters;
	bool lun_histograms;            /* isergw_lun_latency_seconds too (--per-lun-histograms) */
	Isergw__Ctl__AluaStates *const *alua;   /* one per device group asked */
	size_t nalua;
	const struct api_stats *api;
	bool cluster_up;                /* the HA agent answered GetClusterStatus */
	const Isergw__Ha__ClusterStatus *cluster;
};

/*
 * Render a scrape into a malloc'd, NUL-terminated buffer (*out, *len without
 * the NUL). Returns 0 or -ENOMEM.
 */
int metrics_render(const struct metrics_input *in, char **out, size_t *len);

/* The content type of what metrics_render() makes. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
