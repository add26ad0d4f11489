// LINK: api_logic
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's /metrics rendering (mgmt/api/metrics.c): every family once
 * with HELP and TYPE, the log2 latency buckets of isergwd turned into
 * cumulative le buckets in seconds with +Inf equal to _count, label values
 * escaped, the families of isergwd left out when it did not answer, the
 * effective ALUA state under a lease, the API's own request statistics;
 * latency per device group always, per LUN only when asked.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"

#define NB 24   /* isergwd's buckets */

struct fixture {
	Isergw__Ctl__StatusInfo st;
	Isergw__Ctl__SessionList sl;
	Isergw__Ctl__Session sess[3], *sessp[3];
	Isergw__Ctl__Connection conn[4], *connp[4];
	Isergw__Ctl__Counters ctr;
	Isergw__Ctl__LunCounters lun[2], *lunp[2];
	Isergw__Ctl__PortCounters port[1], *portp[1];
	Isergw__Ctl__GroupCounters dg[2], *dgp[2];
	Isergw__Ctl__IoStats io[4];
	uint64_t lat[4][2][NB];
	Isergw__Ctl__AluaStates alua[2], *aluap[2];
	Isergw__Ctl__AluaGroupState grp[3], *grpp[3];
	struct api_stats api;
	struct metrics_input in;
	char *text;
	size_t len;
};

static void fill(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	isergw__ctl__status_info__init(&f->st);
	f->st.version = "0.1.0";
	f->st.uptime_ms = 10500;
	f->st.config_epoch = 7;
	f->st.alua_epoch = 9;
	f->st.targets = 2;
	f->st.portals = 3;
	f->st.reactors = 2;
	f->st.lease_state = "off";

	isergw__ctl__session_list__init(&f->sl);
	for (int i = 0; i < 3; i++) {
		isergw__ctl__session__init(&f->sess[i]);
		f->sessp[i] = &f->sess[i];
	}
	for (int i = 0; i < 4; i++) {
		isergw__ctl__connection__init(&f->conn[i]);
		f->connp[i] = &f->conn[i];
	}
	f->sess[0].transport = "tcp";
	f->sess[0].type = "normal";
	f->sess[0].connections = &f->connp[0];
	f->sess[0].n_connections = 2;
	f->sess[1].transport = "iser";
	f->sess[1].type = "normal";
	f->sess[1].connections = &f->connp[2];
	f->sess[1].n_connections = 1;
	f->sess[2].transport = "tcp";
	f->sess[2].type = "discovery";
	f->sess[2].connections = &f->connp[3];
	f->sess[2].n_connections = 1;
	f->sl.sessions = f->sessp;
	f->sl.n_sessions = 3;

	isergw__ctl__counters__init(&f->ctr);
	for (int i = 0; i < 4; i++) {
		isergw__ctl__io_stats__init(&f->io[i]);
		f->io[i].lat_read_us = f->lat[i][0];
		f->io[i].n_lat_read_us = NB;
		f->io[i].lat_write_us = f->lat[i][1];
		f->io[i].n_lat_write_us = NB;
	}
	/* LUN 0: 10 reads: 3 in [0,2) µs, 5 in [64,128) µs, 2 in the open last bucket */
	f->io[0].cmds_read = 10;
	f->io[0].cmds_write = 4;
	f->io[0].cmds_other = 1;
	f->io[0].bytes_read = 40960;
	f->io[0].bytes_written = 16384;
	f->io[0].check_condition = 2;
	f->io[0].busy = 1;
	f->io[0].aborted = 3;
	f->lat[0][0][0] = 3;
	f->lat[0][0][6] = 5;
	f->lat[0][0][NB - 1] = 2;
	f->lat[0][1][10] = 4;
	for (int i = 0; i < 2; i++) {
		isergw__ctl__lun_counters__init(&f->lun[i]);
		f->lun[i].stats = &f->io[i];
		f->lunp[i] = &f->lun[i];
	}
	f->lun[0].target = "iqn.2026-11.org.isergw:a";
	f->lun[0].lun = 0;
	f->lun[1].target = "iqn.odd\"name\\x";
	f->lun[1].lun = 5;
	isergw__ctl__port_counters__init(&f->port[0]);
	f->port[0].rel_port_id = 3;
	f->port[0].tpg_id = 2;
	f->port[0].stats = &f->io[2];
	f->io[2].cmds_read = 7;
	f->io[2].reservation_conflict = 6;
	f->portp[0] = &f->port[0];
	f->ctr.luns = f->lunp;
	f->ctr.n_luns = 2;
	f->ctr.ports = f->portp;
	f->ctr.n_ports = 1;
	/* device groups: "default" with LUN 0's numbers, dg1 with one slow write */
	for (int i = 0; i < 2; i++) {
		isergw__ctl__group_counters__init(&f->dg[i]);
		f->dgp[i] = &f->dg[i];
	}
	f->dg[0].device_group = "default";
	f->dg[0].stats = &f->io[0];
	f->dg[1].device_group = "dg1";
	f->dg[1].stats = &f->io[3];
	f->io[3].cmds_write = 1;
	f->lat[3][1][17] = 1;           /* [131072, 262144) µs */
	f->ctr.groups = f->dgp;
	f->ctr.n_groups = 2;

	for (int i = 0; i < 3; i++) {
		isergw__ctl__alua_group_state__init(&f->grp[i]);
		f->grpp[i] = &f->grp[i];
	}
	f->grp[0].tpg_id = 1;
	f->grp[0].state = ISERGW__CTL__ALUA_STATE__ALUA_AO;
	f->grp[0].pref = true;
	f->grp[1].tpg_id = 2;
	f->grp[1].state = ISERGW__CTL__ALUA_STATE__ALUA_STANDBY;
	f->grp[2].tpg_id = 1;
	f->grp[2].state = ISERGW__CTL__ALUA_STATE__ALUA_AO;
	for (int i = 0; i < 2; i++) {
		isergw__ctl__alua_states__init(&f->alua[i]);
		f->aluap[i] = &f->alua[i];
	}
	f->alua[0].device_group = "";
	f->alua[0].groups = &f->grpp[0];
	f->alua[0].n_groups = 2;
	f->alua[1].device_group = "dg1";
	f->alua[1].groups = &f->grpp[2];
	f->alua[1].n_groups = 1;
	f->alua[1].lease_state = "expired";
	f->alua[1].transition_pending = true;

	api_stats_init(&f->api);
	f->in.version = "0.1.0";
	f->in.up = true;
	f->in.now_s = 1000.0;
	f->in.status = &f->st;
	f->in.sessions = &f->sl;
	f->in.counters = &f->ctr;
	f->in.alua = f->aluap;
	f->in.nalua = 2;
	f->in.api = &f->api;
}

static void render(struct fixture *f)
{
	free(f->text);
	f->text = NULL;
	assert_int_equal(metrics_render(&f->in, &f->text, &f->len), 0);
	assert_non_null(f->text);
	assert_int_equal(strlen(f->text), f->len);
}

/* The text holds this exact line. */
static void has_line(const struct fixture *f, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = f->text; (p = strstr(p, line)); p++) {
		if ((p == f->text || p[-1] == '\n') && p[n] == '\n')
			return;
	}
	fail_msg("line not found: %s\n--- in:\n%s", line, f->text);
}

static void no_text(const struct fixture *f, const char *s)
{
	if (strstr(f->text, s))
		fail_msg("unexpected: %s", s);
}

static size_t count(const char *text, const char *s)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, s)); p += strlen(s))
		n++;
	return n;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	fill(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	free(f->text);
	free(f);
	return 0;
}

static void test_every_family_declared_once(void **state)
{
	struct fixture *f = *state;
	const char *line;

	render(f);
	/* each # TYPE line names a family that has exactly one # HELP line */
	for (line = f->text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		char name[128], type[32], help[160];

		if (sscanf(line, "# TYPE %127s %31s", name, type) != 2)
			continue;
		snprintf(help, sizeof(help), "# HELP %s ", name);
		assert_int_equal(count(f->text, help), 1);
		snprintf(help, sizeof(help), "# TYPE %s ", name);
		assert_int_equal(count(f->text, help), 1);
		assert_true(!strcmp(type, "gauge") || !strcmp(type, "counter") ||
			    !strcmp(type, "histogram"));
		/* _total only on counters */
		if (strlen(name) > 6 && !strcmp(name + strlen(name) - 6, "_total"))
			assert_string_equal(type, "counter");
		else
			assert_string_not_equal(type, "counter");
		assert_int_equal(strncmp(name, "isergw_", 7), 0);
	}
	assert_true(count(f->text, "# TYPE ") >= 25);
}

static void test_status_and_sessions(void **state)
{
	struct fixture *f = *state;

	render(f);
	has_line(f, "isergw_build_info{version=\"0.1.0\"} 1");
	has_line(f, "isergw_up 1");
	has_line(f, "isergw_start_time_seconds 989.500");   /* now - uptime: an older isergwd */
	/* isergwd's own start time wins: a later scrape shows the same value */
	f->st.start_time_ms = 989123;
	f->in.now_s = 1000.004;
	render(f);
	has_line(f, "isergw_start_time_seconds 989.123");
	f->in.now_s = 1000.0;
	f->st.start_time_ms = 0;
	render(f);
	has_line(f, "isergw_config_epoch 7");
	has_line(f, "isergw_alua_epoch 9");
	has_line(f, "isergw_targets 2");
	has_line(f, "isergw_portals 3");
	has_line(f, "isergw_alua_lease_state{state=\"off\"} 1");
	has_line(f, "isergw_alua_lease_state{state=\"valid\"} 0");
	has_line(f, "isergw_sessions{transport=\"tcp\",type=\"normal\"} 1");
	has_line(f, "isergw_sessions{transport=\"tcp\",type=\"discovery\"} 1");
	has_line(f, "isergw_sessions{transport=\"iser\",type=\"normal\"} 1");
	has_line(f, "isergw_sessions{transport=\"iser\",type=\"discovery\"} 0");
	has_line(f, "isergw_connections{transport=\"tcp\"} 3");
	has_line(f, "isergw_connections{transport=\"iser\"} 1");
}

static void test_io_counters(void **state)
{
	struct fixture *f = *state;

	render(f);
	has_line(f, "isergw_lun_commands_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",op=\"read\"} 10");
	has_line(f, "isergw_lun_commands_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",op=\"write\"} 4");
	has_line(f, "isergw_lun_commands_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",op=\"other\"} 1");
	has_line(f, "isergw_lun_read_bytes_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\"} 40960");
	has_line(f, "isergw_lun_written_bytes_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\"} 16384");
	has_line(f, "isergw_lun_errors_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",status=\"check_condition\"} 2");
	has_line(f, "isergw_lun_errors_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",status=\"busy\"} 1");
	has_line(f, "isergw_lun_errors_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",status=\"reservation_conflict\"} 0");
	has_line(f, "isergw_lun_aborted_commands_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\"} 3");
	has_line(f, "isergw_port_commands_total{rel_port_id=\"3\",tpg_id=\"2\",op=\"read\"} 7");
	has_line(f, "isergw_port_errors_total{rel_port_id=\"3\",tpg_id=\"2\",status=\"reservation_conflict\"} 6");
	/* a quote and a backslash in a label value are escaped */
	has_line(f, "isergw_lun_commands_total{target=\"iqn.odd\\\"name\\\\x\",lun=\"5\",op=\"read\"} 0");
}

static void test_latency_histogram(void **state)
{
	struct fixture *f = *state;
	const char *p = "isergw_lun_latency_seconds_bucket{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",op=\"read\",";

	f->in.lun_histograms = true;
	render(f);
	char line[256];

#define BUCKET(le, v) do { snprintf(line, sizeof(line), "%sle=\"%s\"} %s", p, le, v); has_line(f, line); } while (0)
	BUCKET("0.000002", "3");        /* bucket 0: [0, 2) µs */
	BUCKET("0.000004", "3");
	BUCKET("0.000064", "3");        /* bucket 5: [32, 64) */
	BUCKET("0.000128", "8");        /* bucket 6: [64, 128) */
	BUCKET("8.388608", "8");        /* bucket 22, the last bounded one */
	BUCKET("+Inf", "10");           /* with the open-ended bucket 23 */
#undef BUCKET
	has_line(f, "isergw_lun_latency_seconds_count{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",op=\"read\"} 10");
	has_line(f, "isergw_lun_latency_seconds_bucket{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",op=\"write\",le=\"0.001024\"} 0");
	has_line(f, "isergw_lun_latency_seconds_bucket{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",op=\"write\",le=\"0.002048\"} 4");
	has_line(f, "isergw_lun_latency_seconds_count{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",op=\"write\"} 4");
	/* 23 bounded buckets and +Inf per series */
	assert_int_equal(count(f->text, "isergw_lun_latency_seconds_bucket{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",op=\"read\""), NB);
	/* isergwd keeps no sum: none is made up */
	no_text(f, "isergw_lun_latency_seconds_sum");
	no_text(f, "isergw_port_latency_seconds_sum");
	has_line(f, "isergw_port_latency_seconds_count{rel_port_id=\"3\",tpg_id=\"2\",op=\"read\"} 0");
}

/* By default: the LUNs' counters, no LUN histogram; a histogram per device group. */
static void test_latency_by_default(void **state)
{
	struct fixture *f = *state;

	render(f);
	no_text(f, "isergw_lun_latency_seconds");
	has_line(f, "isergw_lun_commands_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\",op=\"read\"} 10");
	has_line(f, "isergw_lun_read_bytes_total{target=\"iqn.2026-11.org.isergw:a\",lun=\"0\"} 40960");
	assert_int_equal(count(f->text, "# TYPE isergw_device_group_latency_seconds histogram\n"), 1);
	has_line(f, "isergw_device_group_latency_seconds_bucket{device_group=\"default\",op=\"read\",le=\"0.000128\"} 8");
	has_line(f, "isergw_device_group_latency_seconds_bucket{device_group=\"default\",op=\"read\",le=\"+Inf\"} 10");
	has_line(f, "isergw_device_group_latency_seconds_count{device_group=\"default\",op=\"read\"} 10");
	has_line(f, "isergw_device_group_latency_seconds_bucket{device_group=\"dg1\",op=\"write\",le=\"0.131072\"} 0");
	has_line(f, "isergw_device_group_latency_seconds_bucket{device_group=\"dg1\",op=\"write\",le=\"0.262144\"} 1");
	has_line(f, "isergw_device_group_latency_seconds_count{device_group=\"dg1\",op=\"write\"} 1");
	assert_int_equal(count(f->text, "isergw_device_group_latency_seconds_bucket{device_group=\"dg1\",op=\"read\","), NB);
	no_text(f, "isergw_device_group_latency_seconds_sum");
	/* a LUN: 9 samples (3 commands, 2 bytes, 3 errors, 1 aborted) */
	assert_int_equal(count(f->text, "lun=\"0\""), 9);
	f->in.lun_histograms = true;
	render(f);
	assert_int_equal(count(f->text, "lun=\"0\""), 9 + 2 * (NB + 1));
}

static void test_alua(void **state)
{
	struct fixture *f = *state;

	render(f);
	has_line(f, "isergw_alua_state{device_group=\"default\",tpg_id=\"1\",state=\"active_optimized\"} 1");
	has_line(f, "isergw_alua_state{device_group=\"default\",tpg_id=\"1\",state=\"standby\"} 0");
	has_line(f, "isergw_alua_state{device_group=\"default\",tpg_id=\"2\",state=\"standby\"} 1");
	has_line(f, "isergw_alua_state{device_group=\"default\",tpg_id=\"2\",state=\"active_optimized\"} 0");
	has_line(f, "isergw_alua_preferred{device_group=\"default\",tpg_id=\"1\"} 1");
	has_line(f, "isergw_alua_preferred{device_group=\"default\",tpg_id=\"2\"} 0");
	/* dg1 is set AO, but its lease expired: hosts see Transitioning */
	has_line(f, "isergw_alua_state{device_group=\"dg1\",tpg_id=\"1\",state=\"transitioning\"} 1");
	has_line(f, "isergw_alua_state{device_group=\"dg1\",tpg_id=\"1\",state=\"active_optimized\"} 0");
	has_line(f, "isergw_alua_transition_pending{device_group=\"dg1\"} 1");
	has_line(f, "isergw_alua_transition_pending{device_group=\"default\"} 0");
	/* stepped down: Unavailable */
	f->alua[1].lease_state = "stepped-down";
	render(f);
	has_line(f, "isergw_alua_state{device_group=\"dg1\",tpg_id=\"1\",state=\"unavailable\"} 1");
	/* valid: the state set */
	f->alua[1].lease_state = "valid";
	render(f);
	has_line(f, "isergw_alua_state{device_group=\"dg1\",tpg_id=\"1\",state=\"active_optimized\"} 1");
	/* six states per group, one of them 1 */
	assert_int_equal(count(f->text, "isergw_alua_state{device_group=\"default\",tpg_id=\"1\","), 6);
}

static void test_isergwd_down(void **state)
{
	struct fixture *f = *state;

	f->in.up = false;
	f->in.status = NULL;
	f->in.sessions = NULL;
	f->in.counters = NULL;
	f->in.nalua = 0;
	render(f);
	has_line(f, "isergw_up 0");
	has_line(f, "isergw_build_info{version=\"0.1.0\"} 1");
	no_text(f, "isergw_lun_");
	no_text(f, "isergw_port_");
	no_text(f, "isergw_sessions");
	no_text(f, "isergw_alua_");
	no_text(f, "isergw_config_epoch");
	/* the API's own families stay */
	has_line(f, "# TYPE isergw_api_requests_total counter");
	has_line(f, "# TYPE isergw_api_request_duration_seconds histogram");
}

/* The cluster families, from the HA agent's ClusterStatus, and without one. */
static void test_cluster(void **state)
{
	struct fixture *f = *state;
	Isergw__Ha__ClusterStatus cs = ISERGW__HA__CLUSTER_STATUS__INIT;
	Isergw__Ha__MemberStatus m[3], *mp[3];
	static const char *const names[] = { "n1", "n2", "n\"3" };

	for (int i = 0; i < 3; i++) {
		isergw__ha__member_status__init(&m[i]);
		m[i].name = (char *)(uintptr_t)names[i];
		m[i].corosync_member = i != 2;
		m[i].synced = i == 0;
		m[i].applied_generation = 40 + (uint64_t)i;
		mp[i] = &m[i];
	}
	cs.quorate = true;
	cs.generation = 42;
	cs.failovers = 3;
	cs.planned_moves = 5;
	cs.members = mp;
	cs.n_members = 3;
	/* no agent: up 0 and nothing else of the cluster */
	render(f);
	has_line(f, "isergw_cluster_up 0");
	no_text(f, "isergw_cluster_quorate");
	f->in.cluster_up = true;
	f->in.cluster = &cs;
	render(f);
	has_line(f, "isergw_cluster_up 1");
	has_line(f, "isergw_cluster_quorate 1");
	has_line(f, "isergw_cluster_members 2");
	has_line(f, "isergw_cluster_synced_members 1");
	has_line(f, "isergw_cluster_generation 42");
	has_line(f, "isergw_cluster_node_applied_generation{node=\"n1\"} 40");
	has_line(f, "isergw_cluster_node_applied_generation{node=\"n\\\"3\"} 42");
	has_line(f, "# TYPE isergw_cluster_failovers_total counter");
	has_line(f, "isergw_cluster_failovers_total 3");
	has_line(f, "isergw_cluster_planned_moves_total 5");
	cs.quorate = false;
	render(f);
	has_line(f, "isergw_cluster_quorate 0");
	f->in.cluster = NULL;
}

static void test_api_stats(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(api_route_of("/metrics"), API_ROUTE_METRICS);
	assert_int_equal(api_route_of("/healthz"), API_ROUTE_HEALTHZ);
	assert_int_equal(api_route_of("/readyz"), API_ROUTE_READYZ);
	assert_int_equal(api_route_of("/metrics/"), API_ROUTE_OTHER);
	assert_int_equal(api_route_of("/anything/else"), API_ROUTE_OTHER);
	api_stats_record(&f->api, API_ROUTE_METRICS, 200, 0.0002);
	api_stats_record(&f->api, API_ROUTE_METRICS, 200, 0.003);
	api_stats_record(&f->api, API_ROUTE_METRICS, 200, 7.0);
	api_stats_record(&f->api, API_ROUTE_READYZ, 503, 0.0007);
	api_stats_record(&f->api, API_ROUTE_OTHER, 404, 0.0001);
	api_stats_record(&f->api, API_ROUTE_OTHER, 99, 0.0001);   /* not a status: code 0 */
	render(f);
	has_line(f, "isergw_api_requests_total{route=\"/metrics\",code=\"200\"} 3");
	has_line(f, "isergw_api_requests_total{route=\"/readyz\",code=\"503\"} 1");
	has_line(f, "isergw_api_requests_total{route=\"other\",code=\"404\"} 1");
	has_line(f, "isergw_api_requests_total{route=\"other\",code=\"0\"} 1");
	has_line(f, "isergw_api_request_duration_seconds_bucket{route=\"/metrics\",le=\"0.0005\"} 1");
	has_line(f, "isergw_api_request_duration_seconds_bucket{route=\"/metrics\",le=\"0.001\"} 1");
	has_line(f, "isergw_api_request_duration_seconds_bucket{route=\"/metrics\",le=\"0.005\"} 2");
	has_line(f, "isergw_api_request_duration_seconds_bucket{route=\"/metrics\",le=\"2.5\"} 2");
	has_line(f, "isergw_api_request_duration_seconds_bucket{route=\"/metrics\",le=\"+Inf\"} 3");
	has_line(f, "isergw_api_request_duration_seconds_count{route=\"/metrics\"} 3");
	has_line(f, "isergw_api_request_duration_seconds_sum{route=\"/metrics\"} 7.003200");
	has_line(f, "isergw_api_request_duration_seconds_count{route=\"/healthz\"} 0");
}

static void test_api_stats_bounded(void **state)
{
	struct fixture *f = *state;

	/* more distinct (route, code) pairs than the table holds: the rest lands in one entry */
	for (unsigned int c = 100; c < 100 + API_CODES_MAX + 20; c++)
		api_stats_record(&f->api, API_ROUTE_OTHER, c, 0.001);
	assert_int_equal(f->api.ncodes, API_CODES_MAX);
	render(f);
	assert_int_equal(count(f->text, "isergw_api_requests_total{"), API_CODES_MAX);
	has_line(f, "isergw_api_requests_total{route=\"other\",code=\"0\"} 21");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_family_declared_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_and_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_io_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_latency_histogram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_latency_by_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alua, setup, teardown),
		cmocka_unit_test_setup_teardown(test_isergwd_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cluster, setup, teardown),
		cmocka_unit_test_setup_teardown(test_api_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_api_stats_bounded, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
