/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rendering of /metrics (Prometheus text format 0.0.4) from a table of
 * families. Each family names its source (always, isergwd's status, its
 * sessions, its counters, its ALUA states, the API's statistics); a family
 * whose source is missing in a scrape (isergwd down) is left out whole.
 *
 * Latency histograms come from isergwd's own buckets: bucket i counts
 * commands that took [2^i, 2^(i+1)) µs, the last one is open-ended, so the
 * cumulative bucket le=2^(i+1) µs is the sum of buckets 0..i and +Inf is the
 * total. isergwd keeps no sum of latencies, so those histograms have no
 * _sum (docs/metrics.md).
 *
 * Scale: a LUN has 9 counter samples and, only with --per-lun-histograms, 50
 * latency samples; latency is otherwise per target port and per device group
 * (isergwd sums those itself and then leaves the LUNs' buckets out of its
 * answer), so that 10,000 LUNs render in a few MB.
 */
#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the API's own statistics */

static const char *const route_names[API_ROUTE_N] = {
	[API_ROUTE_HEALTHZ] = "/healthz",
	[API_ROUTE_READYZ] = "/readyz",
	[API_ROUTE_METRICS] = "/metrics",
	[API_ROUTE_V1] = "/api/v1",
	[API_ROUTE_OTHER] = "other",
};

const double api_dur_bounds[API_DUR_NBOUNDS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
};

const char *api_route_name(enum api_route r)
{
	return (unsigned int)r < API_ROUTE_N ? route_names[r] : "other";
}

enum api_route api_route_of(const char *path)
{
	for (int r = 0; r < API_ROUTE_V1; r++)
		if (!strcmp(path, route_names[r]))
			return (enum api_route)r;
	if (!strncmp(path, "/api/v1/", strlen("/api/v1/")))
		return API_ROUTE_V1;
	return API_ROUTE_OTHER;
}

void api_stats_init(struct api_stats *s)
{
	memset(s, 0, sizeof(*s));
}

void api_stats_record(struct api_stats *s, enum api_route r, unsigned int code, double seconds)
{
	size_t i, b;

	if ((unsigned int)r >= API_ROUTE_N)
		r = API_ROUTE_OTHER;
	if (code < 100 || code > 599)
		code = 0;
	for (i = 0; i < s->ncodes; i++)
		if (s->codes[i].route == r && s->codes[i].code == code)
			break;
	if (i == s->ncodes) {
		if (s->ncodes == API_CODES_MAX) {
			/* the table is full: the last entry collects the rest */
			i = API_CODES_MAX - 1;
			s->codes[i].code = 0;
		} else {
			s->codes[i].route = r;
			s->codes[i].code = code;
			s->ncodes++;
		}
	}
	s->codes[i].n++;
	if (seconds < 0)
		seconds = 0;
	for (b = 0; b < API_DUR_NBOUNDS && seconds > api_dur_bounds[b]; b++)
		;
	s->dur[r].bucket[b]++;
	s->dur[r].count++;
	s->dur[r].sum += seconds;
}

/* ------------------------------------------------------------ text helpers */

/* v in decimal, without printf's parsing: hundreds of thousands of samples a scrape. */
static void put_u64(FILE *f, uint64_t v)
{
	char b[21];
	size_t i = sizeof(b);

	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite(b + i, 1, sizeof(b) - i, f);
}

/* A label value with \, " and newline escaped (text format 0.0.4). */
static void put_label(FILE *f, const char *name, const char *v)
{
	fputs(name, f);
	fputs("=\"", f);
	if (v && !strpbrk(v, "\\\"\n")) {
		/* the usual case, at once */
		fputs(v, f);
		v = NULL;
	}
	for (; v && *v; v++) {
		if (*v == '\\')
			fputs("\\\\", f);
		else if (*v == '"')
			fputs("\\\"", f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

/* Label sets of the three kinds of I/O counters. */
enum scope { SCOPE_LUN, SCOPE_PORT, SCOPE_DG };

struct ioentity {
	enum scope scope;
	const char *target;             /* LUN; DG: the device group */
	uint32_t lun;
	uint32_t rel_port_id, tpg_id;
	const Isergw__Ctl__IoStats *st;
};

static void put_entity_labels(FILE *f, const struct ioentity *e)
{
	char num[16];

	if (e->scope == SCOPE_DG) {
		put_label(f, "device_group", e->target && e->target[0] ? e->target : "default");
	} else if (e->scope == SCOPE_LUN) {
		put_label(f, "target", e->target);
		fputs(",lun=\"", f);
		put_u64(f, e->lun);
		fputc('"', f);
	} else {
		snprintf(num, sizeof(num), "%" PRIu32, e->rel_port_id);
		put_label(f, "rel_port_id", num);
		snprintf(num, sizeof(num), "%" PRIu32, e->tpg_id);
		fputc(',', f);
		put_label(f, "tpg_id", num);
	}
}

/* name{entity labels[,extra="v"]} value */
static void put_io(FILE *f, const char *name, const struct ioentity *e, const char *xname,
		   const char *xval, uint64_t v)
{
	fputs(name, f);
	fputc('{', f);
	put_entity_labels(f, e);
	if (xname) {
		fputc(',', f);
		put_label(f, xname, xval);
	}
	fputs("} ", f);
	put_u64(f, v);
	fputc('\n', f);
}

/* 2^k microseconds as seconds, exactly ("0.000002", "8.388608"). */
static void put_pow2_us(FILE *f, unsigned int k)
{
	uint64_t us = (uint64_t)1 << k;

	fprintf(f, "%" PRIu64 ".%06" PRIu64, us / 1000000u, us % 1000000u);
}

static void put_log2_histogram(FILE *f, const char *name, const struct ioentity *e,
			       const char *op, const uint64_t *b, size_t n)
{
	uint64_t cum = 0;

	for (size_t i = 0; i + 1 < n && i < 62; i++) {
		cum += b[i];
		fputs(name, f);
		fputs("_bucket{", f);
		put_entity_labels(f, e);
		fputc(',', f);
		put_label(f, "op", op);
		fputs(",le=\"", f);
		put_pow2_us(f, (unsigned int)i + 1);
		fputs("\"} ", f);
		put_u64(f, cum);
		fputc('\n', f);
	}
	for (size_t i = n > 0 ? n - 1 : 0; i < n; i++)
		cum += b[i];
	fprintf(f, "%s_bucket{", name);
	put_entity_labels(f, e);
	fputc(',', f);
	put_label(f, "op", op);
	fprintf(f, ",le=\"+Inf\"} %" PRIu64 "\n", cum);
	fprintf(f, "%s_count{", name);
	put_entity_labels(f, e);
	fputc(',', f);
	put_label(f, "op", op);
	fprintf(f, "} %" PRIu64 "\n", cum);
}

/* ------------------------------------------------------------ families */

enum source { SRC_ALWAYS, SRC_STATUS, SRC_SESSIONS, SRC_COUNTERS, SRC_LUN_LATENCY, SRC_ALUA,
	      SRC_API, SRC_CLUSTER };

/* What an I/O family shows of an IoStats. */
enum iokind { IO_NONE, IO_COMMANDS, IO_READ_BYTES, IO_WRITTEN_BYTES, IO_ERRORS, IO_ABORTED,
	      IO_LATENCY };
/* What a status family shows of StatusInfo. */
enum stkind { ST_CONFIG_EPOCH, ST_ALUA_EPOCH, ST_TARGETS, ST_PORTALS, ST_REACTORS, ST_LUNS_ONLINE,
	      ST_LUNS_FAILED, ST_CONNECTIONS_REFUSED };

struct family;
typedef void (*emit_fn)(FILE *f, const struct family *fam, const struct metrics_input *in);

struct family {
	const char *name;
	const char *type;
	const char *help;
	enum source src;
	emit_fn emit;
	enum scope scope;       /* I/O families */
	int arg;                /* enum iokind (I/O families), enum stkind (status) */
};

static const Isergw__Ctl__IoStats empty_stats = ISERGW__CTL__IO_STATS__INIT;

#define IOST(field) offsetof(Isergw__Ctl__IoStats, field)

/* The series of the I/O families but latency: a label (NULL: none) and an IoStats counter. */
static const struct io_series {
	enum iokind kind;
	const char *label, *value;
	size_t off;             /* of a uint64_t in Isergw__Ctl__IoStats */
} io_series[] = {
	{ IO_COMMANDS, "op", "read", IOST(cmds_read) },
	{ IO_COMMANDS, "op", "write", IOST(cmds_write) },
	{ IO_COMMANDS, "op", "other", IOST(cmds_other) },
	{ IO_READ_BYTES, NULL, NULL, IOST(bytes_read) },
	{ IO_WRITTEN_BYTES, NULL, NULL, IOST(bytes_written) },
	{ IO_ERRORS, "status", "check_condition", IOST(check_condition) },
	{ IO_ERRORS, "status", "busy", IOST(busy) },
	{ IO_ERRORS, "status", "reservation_conflict", IOST(reservation_conflict) },
	{ IO_ABORTED, NULL, NULL, IOST(aborted) },
};

static void emit_io_one(FILE *f, const struct family *fam, const struct ioentity *e)
{
	const Isergw__Ctl__IoStats *s = e->st ? e->st : &empty_stats;

	if ((enum iokind)fam->arg == IO_LATENCY) {
		put_log2_histogram(f, fam->name, e, "read", s->lat_read_us, s->n_lat_read_us);
		put_log2_histogram(f, fam->name, e, "write", s->lat_write_us, s->n_lat_write_us);
		return;
	}
	for (size_t i = 0; i < sizeof(io_series) / sizeof(io_series[0]); i++) {
		const struct io_series *r = &io_series[i];

		if (r->kind == (enum iokind)fam->arg)
			put_io(f, fam->name, e, r->label, r->value,
			       *(const uint64_t *)(const void *)((const char *)s + r->off));
	}
}

static void emit_io(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	const Isergw__Ctl__Counters *c = in->counters;
	struct ioentity e = { .scope = fam->scope };

	if (fam->scope == SCOPE_LUN) {
		for (size_t i = 0; i < c->n_luns; i++) {
			e.target = c->luns[i]->target;
			e.lun = c->luns[i]->lun;
			e.st = c->luns[i]->stats;
			emit_io_one(f, fam, &e);
		}
	} else if (fam->scope == SCOPE_DG) {
		for (size_t i = 0; i < c->n_groups; i++) {
			e.target = c->groups[i]->device_group;
			e.st = c->groups[i]->stats;
			emit_io_one(f, fam, &e);
		}
	} else {
		for (size_t i = 0; i < c->n_ports; i++) {
			e.rel_port_id = c->ports[i]->rel_port_id;
			e.tpg_id = c->ports[i]->tpg_id;
			e.st = c->ports[i]->stats;
			emit_io_one(f, fam, &e);
		}
	}
}

static void emit_build_info(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	fprintf(f, "%s{", fam->name);
	put_label(f, "version", in->version ? in->version : "unknown");
	fputs("} 1\n", f);
}

static void emit_up(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	fprintf(f, "%s %d\n", fam->name, in->up ? 1 : 0);
}

static void emit_start_time(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	/* isergwd's own, constant for its life (now - uptime moved at every scrape) */
	double start = in->status->start_time_ms ? (double)in->status->start_time_ms / 1000.0 :
		       in->now_s - (double)in->status->uptime_ms / 1000.0;

	fprintf(f, "%s %.3f\n", fam->name, start > 0 ? start : 0);
}

static void emit_status_u64(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	const Isergw__Ctl__StatusInfo *s = in->status;
	uint64_t v = 0;

	switch ((enum stkind)fam->arg) {
	case ST_CONFIG_EPOCH: v = s->config_epoch; break;
	case ST_ALUA_EPOCH: v = s->alua_epoch; break;
	case ST_TARGETS: v = s->targets; break;
	case ST_PORTALS: v = s->portals; break;
	case ST_REACTORS: v = s->reactors; break;
	case ST_LUNS_ONLINE: v = s->luns_online; break;
	case ST_LUNS_FAILED: v = s->lun_faults_total; break;
	case ST_CONNECTIONS_REFUSED: v = s->connections_refused; break;
	}
	fprintf(f, "%s %" PRIu64 "\n", fam->name, v);
}

static const char *const lease_states[] = { "off", "none", "valid", "expired", "stepped-down" };

static void emit_lease_state(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	const char *cur = in->status->lease_state ? in->status->lease_state : "";

	for (size_t i = 0; i < sizeof(lease_states) / sizeof(lease_states[0]); i++) {
		fprintf(f, "%s{", fam->name);
		put_label(f, "state", lease_states[i]);
		fprintf(f, "} %d\n", !strcmp(cur, lease_states[i]));
	}
}

static void emit_lease_remaining(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	uint32_t ms = in->status->lease_remaining_ms;

	fprintf(f, "%s %" PRIu32 ".%03" PRIu32 "\n", fam->name, ms / 1000u, ms % 1000u);
}

static void emit_portal_listening(FILE *f, const struct family *fam,
				  const struct metrics_input *in)
{
	const Isergw__Ctl__StatusInfo *s = in->status;

	for (size_t i = 0; i < s->n_portal_states; i++) {
		const Isergw__Ctl__PortalStatus *p = s->portal_states[i];
		char num[16];

		fprintf(f, "%s{", fam->name);
		put_label(f, "portal", p->url);
		fputc(',', f);
		snprintf(num, sizeof(num), "%u", p->rel_port_id);
		put_label(f, "rel_port_id", num);
		fputc(',', f);
		snprintf(num, sizeof(num), "%u", p->tpg_id);
		put_label(f, "tpg_id", num);
		fprintf(f, "} %d\n", p->state && !strcmp(p->state, "listening"));
	}
}

static const char *const transports[] = { "tcp", "iser" };
static const char *const session_types[] = { "normal", "discovery" };
#define NTRANSPORTS (sizeof(transports) / sizeof(transports[0]))
#define NTYPES (sizeof(session_types) / sizeof(session_types[0]))

static int index_of(const char *const *names, size_t n, const char *v)
{
	for (size_t i = 0; i < n; i++)
		if (v && !strcmp(names[i], v))
			return (int)i;
	return -1;
}

static void emit_sessions(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	const Isergw__Ctl__SessionList *sl = in->sessions;
	uint64_t n[NTRANSPORTS][NTYPES] = { { 0 } };

	for (size_t i = 0; i < sl->n_sessions; i++) {
		int t = index_of(transports, NTRANSPORTS, sl->sessions[i]->transport);
		int y = index_of(session_types, NTYPES, sl->sessions[i]->type);

		if (t >= 0 && y >= 0)
			n[t][y]++;
	}
	for (size_t t = 0; t < NTRANSPORTS; t++) {
		for (size_t y = 0; y < NTYPES; y++) {
			fprintf(f, "%s{", fam->name);
			put_label(f, "transport", transports[t]);
			fputc(',', f);
			put_label(f, "type", session_types[y]);
			fprintf(f, "} %" PRIu64 "\n", n[t][y]);
		}
	}
}

static void emit_connections(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	const Isergw__Ctl__SessionList *sl = in->sessions;
	uint64_t n[NTRANSPORTS] = { 0 };

	for (size_t i = 0; i < sl->n_sessions; i++) {
		int t = index_of(transports, NTRANSPORTS, sl->sessions[i]->transport);

		if (t >= 0)
			n[t] += sl->sessions[i]->n_connections;
	}
	for (size_t t = 0; t < NTRANSPORTS; t++) {
		fprintf(f, "%s{", fam->name);
		put_label(f, "transport", transports[t]);
		fprintf(f, "} %" PRIu64 "\n", n[t]);
	}
}

/* The ALUA state names as isergwctl prints them, in wire-code order. */
static const struct { int code; const char *name; } alua_states[] = {
	{ ISERGW__CTL__ALUA_STATE__ALUA_AO, "active_optimized" },
	{ ISERGW__CTL__ALUA_STATE__ALUA_ANO, "active_non_optimized" },
	{ ISERGW__CTL__ALUA_STATE__ALUA_STANDBY, "standby" },
	{ ISERGW__CTL__ALUA_STATE__ALUA_UNAVAILABLE, "unavailable" },
	{ ISERGW__CTL__ALUA_STATE__ALUA_OFFLINE, "offline" },
	{ ISERGW__CTL__ALUA_STATE__ALUA_TRANSITIONING, "transitioning" },
};

/*
 * The state a host sees: the state set, unless the node enforces a lease
 * that is not valid (docs/control.md, The ALUA lease).
 */
static int alua_effective(const Isergw__Ctl__AluaStates *a, int state)
{
	const char *l = a->lease_state ? a->lease_state : "";

	if (!l[0] || !strcmp(l, "valid"))
		return state;
	if (!strcmp(l, "expired"))
		return ISERGW__CTL__ALUA_STATE__ALUA_TRANSITIONING;
	return ISERGW__CTL__ALUA_STATE__ALUA_UNAVAILABLE;
}

static void put_dg_tpg(FILE *f, const char *dg, uint32_t tpg)
{
	char num[16];

	put_label(f, "device_group", dg && dg[0] ? dg : "default");
	snprintf(num, sizeof(num), "%" PRIu32, tpg);
	fputc(',', f);
	put_label(f, "tpg_id", num);
}

static void emit_alua_state(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	for (size_t d = 0; d < in->nalua; d++) {
		const Isergw__Ctl__AluaStates *a = in->alua[d];

		for (size_t g = 0; g < a->n_groups; g++) {
			int st = alua_effective(a, (int)a->groups[g]->state);

			for (size_t k = 0; k < sizeof(alua_states) / sizeof(alua_states[0]); k++) {
				fprintf(f, "%s{", fam->name);
				put_dg_tpg(f, a->device_group, a->groups[g]->tpg_id);
				fputc(',', f);
				put_label(f, "state", alua_states[k].name);
				fprintf(f, "} %d\n", st == alua_states[k].code);
			}
		}
	}
}

static void emit_alua_pref(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	for (size_t d = 0; d < in->nalua; d++) {
		const Isergw__Ctl__AluaStates *a = in->alua[d];

		for (size_t g = 0; g < a->n_groups; g++) {
			fprintf(f, "%s{", fam->name);
			put_dg_tpg(f, a->device_group, a->groups[g]->tpg_id);
			fprintf(f, "} %d\n", a->groups[g]->pref ? 1 : 0);
		}
	}
}

static void emit_alua_pending(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	for (size_t d = 0; d < in->nalua; d++) {
		const Isergw__Ctl__AluaStates *a = in->alua[d];

		fprintf(f, "%s{", fam->name);
		put_label(f, "device_group", a->device_group && a->device_group[0] ?
			  a->device_group : "default");
		fprintf(f, "} %d\n", a->transition_pending ? 1 : 0);
	}
}

static void emit_api_requests(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	const struct api_stats *s = in->api;

	for (size_t i = 0; i < s->ncodes; i++) {
		char code[8];

		snprintf(code, sizeof(code), "%u", s->codes[i].code);
		fprintf(f, "%s{", fam->name);
		put_label(f, "route", api_route_name(s->codes[i].route));
		fputc(',', f);
		put_label(f, "code", code);
		fprintf(f, "} %" PRIu64 "\n", s->codes[i].n);
	}
}

static void emit_api_duration(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	const struct api_stats *s = in->api;

	for (int r = 0; r < API_ROUTE_N; r++) {
		uint64_t cum = 0;

		for (size_t b = 0; b < API_DUR_NBOUNDS; b++) {
			cum += s->dur[r].bucket[b];
			fprintf(f, "%s_bucket{", fam->name);
			put_label(f, "route", api_route_name((enum api_route)r));
			fprintf(f, ",le=\"%g\"} %" PRIu64 "\n", api_dur_bounds[b], cum);
		}
		fprintf(f, "%s_bucket{", fam->name);
		put_label(f, "route", api_route_name((enum api_route)r));
		fprintf(f, ",le=\"+Inf\"} %" PRIu64 "\n", s->dur[r].count);
		fprintf(f, "%s_sum{", fam->name);
		put_label(f, "route", api_route_name((enum api_route)r));
		fprintf(f, "} %.6f\n", s->dur[r].sum);
		fprintf(f, "%s_count{", fam->name);
		put_label(f, "route", api_route_name((enum api_route)r));
		fprintf(f, "} %" PRIu64 "\n", s->dur[r].count);
	}
}

/* ---- the cluster, as the local HA agent sees it */

static void emit_cluster_up(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	fprintf(f, "%s %d\n", fam->name, in->cluster_up && in->cluster ? 1 : 0);
}

static void emit_cluster_quorate(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	fprintf(f, "%s %d\n", fam->name, in->cluster->quorate ? 1 : 0);
}

static void emit_cluster_members(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	const Isergw__Ha__ClusterStatus *c = in->cluster;
	unsigned int n = 0;

	for (size_t i = 0; i < c->n_members; i++)
		if (fam->arg ? c->members[i]->synced : c->members[i]->corosync_member)
			n++;
	fprintf(f, "%s %u\n", fam->name, n);
}

static void emit_cluster_u64(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	const Isergw__Ha__ClusterStatus *c = in->cluster;
	uint64_t v = fam->arg == 0 ? c->generation : fam->arg == 1 ? c->failovers : c->planned_moves;

	fprintf(f, "%s %" PRIu64 "\n", fam->name, v);
}

static void emit_cluster_applied(FILE *f, const struct family *fam, const struct metrics_input *in)
{
	const Isergw__Ha__ClusterStatus *c = in->cluster;

	for (size_t i = 0; i < c->n_members; i++) {
		if (!c->members[i]->name || !c->members[i]->name[0])
			continue;
		fprintf(f, "%s{", fam->name);
		put_label(f, "node", c->members[i]->name);
		fprintf(f, "} %" PRIu64 "\n", c->members[i]->applied_generation);
	}
}

static const char *const dp_states[] = { "healthy", "down", "failed", "recovering", "unknown" };

static void emit_cluster_dataplane(FILE *f, const struct family *fam,
				   const struct metrics_input *in)
{
	const Isergw__Ha__ClusterStatus *c = in->cluster;

	for (size_t i = 0; i < c->n_members; i++) {
		const Isergw__Ha__MemberStatus *m = c->members[i];
		const char *cur = m->dataplane && m->dataplane[0] ? m->dataplane : "unknown";

		if (!m->name || !m->name[0])
			continue;
		for (size_t k = 0; k < sizeof(dp_states) / sizeof(dp_states[0]); k++) {
			fprintf(f, "%s{", fam->name);
			put_label(f, "node", m->name);
			fputc(',', f);
			put_label(f, "state", dp_states[k]);
			fprintf(f, "} %d\n", !strcmp(cur, dp_states[k]));
		}
	}
}

static void emit_cluster_luns_failed(FILE *f, const struct family *fam,
				     const struct metrics_input *in)
{
	const Isergw__Ha__ClusterStatus *c = in->cluster;

	for (size_t i = 0; i < c->n_members; i++) {
		const Isergw__Ha__MemberStatus *m = c->members[i];

		if (!m->name || !m->name[0])
			continue;
		fprintf(f, "%s{", fam->name);
		put_label(f, "node", m->name);
		fprintf(f, "} %zu\n", fam->arg ? m->n_failed_groups : (size_t)m->luns_failed);
	}
}

#define IOFAM(n, t, h, sc, k) { n, t, h, SRC_COUNTERS, emit_io, sc, k }

static const struct family families[] = {
	{ "isergw_build_info", "gauge", "Version of isergw-api; the value is always 1.",
	  SRC_ALWAYS, emit_build_info, 0, 0 },
	{ "isergw_up", "gauge", "1 when isergwd answered on its control socket for this scrape, "
	  "else 0.", SRC_ALWAYS, emit_up, 0, 0 },
	{ "isergw_start_time_seconds", "gauge", "When isergwd started, in seconds since the Unix "
	  "epoch.", SRC_STATUS, emit_start_time, 0, 0 },
	{ "isergw_config_epoch", "gauge", "Epoch of the configuration isergwd applied last "
	  "(0: the start-up one).", SRC_STATUS, emit_status_u64, 0, ST_CONFIG_EPOCH },
	{ "isergw_alua_epoch", "gauge", "Epoch of the ALUA states isergwd was set to last "
	  "(0: none).", SRC_STATUS, emit_status_u64, 0, ST_ALUA_EPOCH },
	{ "isergw_targets", "gauge", "Targets configured in isergwd.", SRC_STATUS,
	  emit_status_u64, 0, ST_TARGETS },
	{ "isergw_portals", "gauge", "Portals configured in isergwd.", SRC_STATUS,
	  emit_status_u64, 0, ST_PORTALS },
	{ "isergw_reactors", "gauge", "Reactor threads of isergwd.", SRC_STATUS,
	  emit_status_u64, 0, ST_REACTORS },
	{ "isergw_luns_online", "gauge", "LUNs of isergwd's configuration that are open and "
	  "answer.", SRC_STATUS, emit_status_u64, 0, ST_LUNS_ONLINE },
	{ "isergw_luns_failed", "gauge", "LUNs of isergwd's configuration that serve no I/O: not "
	  "opened (a missing file, ...) or a backend that does not answer.", SRC_STATUS,
	  emit_status_u64, 0, ST_LUNS_FAILED },
	{ "isergw_portal_listening", "gauge", "1 while a portal listens, 0 while it waits for its "
	  "address (not on this node: a floating address held elsewhere, or no RDMA device).",
	  SRC_STATUS, emit_portal_listening, 0, 0 },
	{ "isergw_alua_lease_state", "gauge", "State of isergwd's ALUA lease: 1 for the current "
	  "state, 0 for the others (off: the node enforces no lease).", SRC_STATUS,
	  emit_lease_state, 0, 0 },
	{ "isergw_alua_lease_remaining_seconds", "gauge", "Time until the ALUA lease ends, while "
	  "it is valid; else 0.", SRC_STATUS, emit_lease_remaining, 0, 0 },
	{ "isergw_sessions", "gauge", "Logged-in iSCSI sessions by transport and session type.",
	  SRC_SESSIONS, emit_sessions, 0, 0 },
	{ "isergw_connections", "gauge", "iSCSI connections by transport.", SRC_SESSIONS,
	  emit_connections, 0, 0 },
	{ "isergw_connections_refused_total", "counter", "Connections closed (TCP) or rejected "
	  "(iSER) as they arrived because max_logins_per_address connections from their address "
	  "were logging in already.", SRC_STATUS, emit_status_u64, 0, ST_CONNECTIONS_REFUSED },
	IOFAM("isergw_lun_commands_total", "counter", "SCSI commands completed per LUN, by kind "
	      "(read: READ(6/10/12/16); write: WRITE, WRITE AND VERIFY, WRITE SAME, COMPARE AND "
	      "WRITE; other: every other command).", SCOPE_LUN, IO_COMMANDS),
	IOFAM("isergw_lun_read_bytes_total", "counter", "Data-In bytes sent to initiators per "
	      "LUN.", SCOPE_LUN, IO_READ_BYTES),
	IOFAM("isergw_lun_written_bytes_total", "counter", "Data bytes written per LUN by "
	      "commands that completed GOOD.", SCOPE_LUN, IO_WRITTEN_BYTES),
	IOFAM("isergw_lun_errors_total", "counter", "Commands per LUN that completed with an "
	      "error status (CHECK CONDITION, BUSY or TASK SET FULL, RESERVATION CONFLICT).",
	      SCOPE_LUN, IO_ERRORS),
	IOFAM("isergw_lun_aborted_commands_total", "counter", "Commands per LUN completed after "
	      "an abort or a reset, or with their connection gone.", SCOPE_LUN, IO_ABORTED),
	{ "isergw_lun_latency_seconds", "histogram", "Time from a command's arrival to its "
	  "completion by the SCSI layer, per LUN, for reads and writes (isergwd's log2 "
	  "buckets; no _sum: isergwd keeps none).", SRC_LUN_LATENCY, emit_io, SCOPE_LUN,
	  IO_LATENCY },
	IOFAM("isergw_port_commands_total", "counter", "SCSI commands completed per target port "
	      "(relative port id, target port group), by kind.", SCOPE_PORT, IO_COMMANDS),
	IOFAM("isergw_port_read_bytes_total", "counter", "Data-In bytes sent to initiators per "
	      "target port.", SCOPE_PORT, IO_READ_BYTES),
	IOFAM("isergw_port_written_bytes_total", "counter", "Data bytes written per target port "
	      "by commands that completed GOOD.", SCOPE_PORT, IO_WRITTEN_BYTES),
	IOFAM("isergw_port_errors_total", "counter", "Commands per target port that completed "
	      "with an error status.", SCOPE_PORT, IO_ERRORS),
	IOFAM("isergw_port_aborted_commands_total", "counter", "Commands per target port "
	      "completed after an abort or a reset, or with their connection gone.", SCOPE_PORT,
	      IO_ABORTED),
	IOFAM("isergw_port_latency_seconds", "histogram", "Time from a command's arrival to its "
	      "completion by the SCSI layer, per target port, for reads and writes (no _sum: "
	      "isergwd keeps none).", SCOPE_PORT, IO_LATENCY),
	IOFAM("isergw_device_group_latency_seconds", "histogram", "Time from a command's "
	      "arrival to its completion by the SCSI layer, per ALUA device group (the one its "
	      "LUN was in), for reads and writes (no _sum: isergwd keeps none).", SCOPE_DG,
	      IO_LATENCY),
	{ "isergw_alua_state", "gauge", "Asymmetric access state a host sees for a target port "
	  "group of a device group: 1 for the current state, 0 for the others.", SRC_ALUA,
	  emit_alua_state, 0, 0 },
	{ "isergw_alua_preferred", "gauge", "1 when the target port group is the preferred one "
	  "(PREF bit) of its device group.", SRC_ALUA, emit_alua_pref, 0, 0 },
	{ "isergw_alua_transition_pending", "gauge", "1 while a device group is in a timed "
	  "transition.", SRC_ALUA, emit_alua_pending, 0, 0 },
	{ "isergw_cluster_up", "gauge", "1 when the node's HA agent (isergw-ha) answered for this "
	  "scrape, else 0.", SRC_ALWAYS, emit_cluster_up, 0, 0 },
	{ "isergw_cluster_quorate", "gauge", "1 while the node's corosync partition has quorum.",
	  SRC_CLUSTER, emit_cluster_quorate, 0, 0 },
	{ "isergw_cluster_members", "gauge", "Nodes in the corosync membership, as this node sees "
	  "it.", SRC_CLUSTER, emit_cluster_members, 0, 0 },
	{ "isergw_cluster_synced_members", "gauge", "Nodes whose agent passed the sync barrier of "
	  "the current membership.", SRC_CLUSTER, emit_cluster_members, 0, 1 },
	{ "isergw_cluster_generation", "gauge", "Generation of the cluster document this node's "
	  "agent holds.", SRC_CLUSTER, emit_cluster_u64, 0, 0 },
	{ "isergw_cluster_node_applied_generation", "gauge", "Newest generation each node's "
	  "isergwd applied, as this node's agent last heard.", SRC_CLUSTER, emit_cluster_applied,
	  0, 0 },
	{ "isergw_cluster_node_dataplane_state", "gauge", "Each node's data plane as its agent "
	  "reports it: 1 for the current state (healthy, down: isergwd not serving within the "
	  "grace, failed: past it, the node gives its device groups up, recovering, unknown), 0 "
	  "for the others.", SRC_CLUSTER, emit_cluster_dataplane, 0, 0 },
	{ "isergw_cluster_node_luns_failed", "gauge", "LUNs that serve no I/O on each node "
	  "(not opened, or a backend that does not answer), as its agent reports them.",
	  SRC_CLUSTER, emit_cluster_luns_failed, 0, 0 },
	{ "isergw_cluster_node_failed_device_groups", "gauge", "Device groups with a LUN that "
	  "serves no I/O on each node (such a node gives them up to one where they serve).",
	  SRC_CLUSTER, emit_cluster_luns_failed, 0, 1 },
	{ "isergw_cluster_failovers_total", "counter", "Device groups whose owner was lost and "
	  "replaced, in the generations this node's agent applied since it started.", SRC_CLUSTER,
	  emit_cluster_u64, 0, 1 },
	{ "isergw_cluster_planned_moves_total", "counter", "Device groups moved off a live owner "
	  "(drain, move, failback, a host's SET TARGET PORT GROUPS), in the generations this "
	  "node's agent applied since it started.", SRC_CLUSTER, emit_cluster_u64, 0, 2 },
	{ "isergw_api_requests_total", "counter", "HTTP requests answered by isergw-api, by "
	  "route and status code.", SRC_API, emit_api_requests, 0, 0 },
	{ "isergw_api_request_duration_seconds", "histogram", "Time isergw-api took to answer a "
	  "request, by route.", SRC_API, emit_api_duration, 0, 0 },
};

static bool family_present(const struct family *fam, const struct metrics_input *in)
{
	switch (fam->src) {
	case SRC_ALWAYS: return true;
	case SRC_STATUS: return in->up && in->status;
	case SRC_SESSIONS: return in->up && in->sessions;
	case SRC_COUNTERS: return in->up && in->counters;
	case SRC_LUN_LATENCY: return in->up && in->counters && in->lun_histograms;
	case SRC_ALUA: return in->up && in->nalua > 0;
	case SRC_API: return in->api != NULL;
	case SRC_CLUSTER: return in->cluster_up && in->cluster;
	}
	return false;
}

int metrics_render(const struct metrics_input *in, char **out, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	int bad;

	if (!f)
		return -ENOMEM;
	/* this thread's own stream: no lock around each of the million calls */
	__fsetlocking(f, FSETLOCKING_BYCALLER);
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		const struct family *fam = &families[i];

		if (!family_present(fam, in))
			continue;
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name,
			fam->type);
		fam->emit(f, fam, in);
	}
	bad = ferror(f);
	if (fclose(f) || bad) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	*len = n;
	return 0;
}
