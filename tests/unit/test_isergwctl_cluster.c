// LINK: isergwctl_cluster_lib isergw_proto PkgConfig::JSONC Threads::Threads
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl cluster (mgmt/isergwctl_cluster.c), the client's side only: a
 * canned agent (a thread of this test on a unix socket) reads one ApiRequest
 * and answers with the frame the test prepared. Checked: the requests sent
 * (config apply: the file's or stdin's content, base generation and wait;
 * drain, undrain, move), the status tables and the JSON documents, config
 * get (pretty, --runtime, --json), change results (applied, unchanged,
 * pending); exit 1 with the reason for a refusal (-ENOLCK "no quorum") and
 * for a change the agent answered -ETIMEDOUT with nodes pending; exit 3 for
 * garbled replies (not protobuf, a positive status, the wrong payload,
 * control characters or invalid UTF-8, a digest that is not hex, a frame
 * truncated or oversized, no answer, the connection closed, no agent); exit
 * 2 for usage errors, before any connection; files over 1 MiB refused; help;
 * token add (the token alone on stdout), list (no hash shown), revoke.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_wire.h"
#include "isergw_ha.pb-c.h"
#include "isergwctl.h"

typedef Isergw__Ha__ApiRequest ApiRequest;
typedef Isergw__Ha__ApiReply ApiReply;

#define MAX_ARGS 24

/* The canned agent: one connection, one request, the prepared answer. */
struct agent {
	char dir[64];
	char path[108];
	int lfd;
	pthread_t tid;
	bool serving;
	uint8_t *reply;         /* bytes to answer with (NULL: close without answering) */
	size_t reply_len;
	bool silent;            /* never answer: wait until the client goes */
	ApiRequest *req;        /* what came */
};

/* What a run of isergwctl_cluster() printed. */
struct run {
	int rc;
	char *out, *err;
};

static int setup(void **state)
{
	struct agent *a = calloc(1, sizeof(*a));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	assert_non_null(a);
	snprintf(a->dir, sizeof(a->dir), "/tmp/isergwctl-cluster-XXXXXX");
	assert_non_null(mkdtemp(a->dir));
	snprintf(a->path, sizeof(a->path), "%s/ha.sock", a->dir);
	memcpy(sa.sun_path, a->path, strlen(a->path) + 1);
	a->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(a->lfd >= 0);
	assert_int_equal(bind(a->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(a->lfd, 4), 0);
	*state = a;
	return 0;
}

static int teardown(void **state)
{
	struct agent *a = *state;

	if (a->serving)
		pthread_join(a->tid, NULL);
	close(a->lfd);
	unlink(a->path);
	rmdir(a->dir);
	free(a->reply);
	if (a->req)
		isergw__ha__api_request__free_unpacked(a->req, NULL);
	free(a);
	return 0;
}

static void write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static void *serve(void *arg)
{
	struct agent *a = arg;
	struct pollfd p = { .fd = a->lfd, .events = POLLIN };
	struct ctl_frame_rx rx;
	int fd, rc;
	char b;

	/* a client that never comes fails the test (no request), never hangs it */
	if (poll(&p, 1, 5000) != 1 || (fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return NULL;
	ctl_frame_rx_init(&rx);
	do
		rc = ctl_frame_rx_read(&rx, fd, CTL_FRAME_MAX);
	while (rc == 0);
	if (rc == 1)
		a->req = isergw__ha__api_request__unpack(NULL, rx.len, rx.body);
	ctl_frame_rx_reset(&rx);
	if (a->silent) {
		while (read(fd, &b, 1) > 0)
			;
	} else if (a->reply) {
		write_all(fd, a->reply, a->reply_len);
	}
	close(fd);
	return NULL;
}

/* Answer the next connection with these bytes. */
static void agent_raw(struct agent *a, const void *bytes, size_t len)
{
	a->reply = malloc(len);
	assert_non_null(a->reply);
	memcpy(a->reply, bytes, len);
	a->reply_len = len;
	assert_int_equal(pthread_create(&a->tid, NULL, serve, a), 0);
	a->serving = true;
}

/* Answer the next connection with this reply. */
static void agent_reply(struct agent *a, const ApiReply *rep)
{
	uint8_t *buf;
	size_t len;

	assert_int_equal(ctl_frame_pack(&rep->base, &buf, &len), 0);
	agent_raw(a, buf, len);
	free(buf);
}

/* Wait for the agent to be done; the request it got. */
static const ApiRequest *agent_done(struct agent *a)
{
	if (a->serving)
		pthread_join(a->tid, NULL);
	a->serving = false;
	assert_non_null(a->req);
	return a->req;
}

/* No client connected (the usage errors are found before connecting). */
static void assert_no_connection(struct agent *a)
{
	struct pollfd p = { .fd = a->lfd, .events = POLLIN };

	assert_int_equal(poll(&p, 1, 0), 0);
}

static char *slurp(FILE *f)
{
	long n;
	char *s;

	fflush(f);
	n = ftell(f);
	assert_true(n >= 0);
	s = calloc(1, (size_t)n + 1);
	assert_non_null(s);
	rewind(f);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

/* isergwctl_cluster("cluster", "--ha-socket", a->path, args...) with stdout and stderr caught. */
static struct run run_v(struct agent *a, bool json, int timeout_ms, va_list ap)
{
	char *argv[MAX_ARGS + 1];
	int argc = 0;
	FILE *fo = tmpfile(), *fe = tmpfile();
	int so, se;
	struct run r;
	const char *s;

	argv[argc++] = (char *)(uintptr_t)"cluster";
	argv[argc++] = (char *)(uintptr_t)"--ha-socket";
	argv[argc++] = a->path;
	while ((s = va_arg(ap, const char *)) && argc < MAX_ARGS)
		argv[argc++] = (char *)(uintptr_t)s;
	argv[argc] = NULL;
	assert_non_null(fo);
	assert_non_null(fe);
	fflush(stdout);
	fflush(stderr);
	so = dup(STDOUT_FILENO);
	se = dup(STDERR_FILENO);
	dup2(fileno(fo), STDOUT_FILENO);
	dup2(fileno(fe), STDERR_FILENO);
	r.rc = isergwctl_cluster(argc, argv, json, timeout_ms);
	fflush(stdout);
	fflush(stderr);
	dup2(so, STDOUT_FILENO);
	dup2(se, STDERR_FILENO);
	close(so);
	close(se);
	fseek(fo, 0, SEEK_END);
	fseek(fe, 0, SEEK_END);
	r.out = slurp(fo);
	r.err = slurp(fe);
	return r;
}

static struct run run(struct agent *a, ...)
{
	struct run r;
	va_list ap;

	va_start(ap, a);
	r = run_v(a, false, 2000, ap);
	va_end(ap);
	return r;
}

static struct run run_opts(struct agent *a, bool json, int timeout_ms, ...)
{
	struct run r;
	va_list ap;

	va_start(ap, timeout_ms);
	r = run_v(a, json, timeout_ms, ap);
	va_end(ap);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static json_object *parse(const char *text)
{
	json_object *o = json_tokener_parse(text);

	assert_non_null(o);
	return o;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v;

	assert_true(json_object_object_get_ex(o, key, &v));
	return v;
}

/* ------------------------------------------------------------ status */

/* A three-node cluster, n3 gone: one device group on n1, one moving away from n1. */
struct status_fixture {
	Isergw__Ha__ClusterStatus st;
	Isergw__Ha__MemberStatus m[3];
	Isergw__Ha__MemberStatus *mp[3];
	Isergw__Ha__DeviceGroupStatus dg[2];
	Isergw__Ha__DeviceGroupStatus *dgp[2];
	Isergw__Ha__GroupNodeState ns[2][3];
	Isergw__Ha__GroupNodeState *nsp[2][3];
	char *fg[1];
	ApiReply rep;
};

static void status_fixture(struct status_fixture *f)
{
	static const char *const names[3] = { "n1", "n2", "n3" };
	static const char *const states[2][3] = {
		{ "ao", "ano", "unavailable" },
		{ "standby", "transitioning", "unavailable" },
	};

	memset(f, 0, sizeof(*f));
	isergw__ha__cluster_status__init(&f->st);
	f->st.cluster_name = (char *)(uintptr_t)"lab";
	f->st.node_name = (char *)(uintptr_t)"n1";
	f->st.nodeid = 1;
	f->st.quorate = true;
	f->st.phase = (char *)(uintptr_t)"synced";
	f->st.generation = 7;
	f->st.digest = (char *)(uintptr_t)
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	f->st.protocol = 1;
	f->st.isergwd_connected = true;
	f->st.isergwd_epoch = 42;
	f->st.lease_remaining_ms = 1350;
	f->st.expected_votes = 3;
	f->st.total_votes = 2;
	for (int i = 0; i < 3; i++) {
		isergw__ha__member_status__init(&f->m[i]);
		f->m[i].nodeid = (uint32_t)i + 1;
		f->m[i].name = (char *)(uintptr_t)names[i];
		f->m[i].corosync_member = i < 2;
		f->m[i].agent = i < 2;
		f->m[i].synced = i < 2;
		f->m[i].drained = i == 1;
		f->m[i].applied_generation = i < 2 ? 7 : 6;
		f->m[i].last_heard_ms = i == 0 ? 12 : i == 1 ? 95 : 0;
		f->m[i].tpg_id = (uint32_t)i + 1;
		f->m[i].dataplane = (char *)(uintptr_t)(i == 0 ? "healthy" : i == 1 ? "failed" : "");
		f->mp[i] = &f->m[i];
	}
	f->st.members = f->mp;
	f->st.n_members = 3;
	/* node 1: two LUNs of dg1 serve no I/O there */
	f->m[0].luns_failed = 2;
	f->m[0].failed_groups = f->fg;
	f->m[0].n_failed_groups = 1;
	f->fg[0] = (char *)(uintptr_t)"dg1";
	for (int g = 0; g < 2; g++) {
		isergw__ha__device_group_status__init(&f->dg[g]);
		f->dg[g].name = (char *)(uintptr_t)(g ? "dg2" : "dg1");
		f->dg[g].owner = (char *)(uintptr_t)(g ? "" : "n1");
		f->dg[g].preferred_owner = (char *)(uintptr_t)(g ? "n2" : "n1");
		f->dg[g].failback = (char *)(uintptr_t)(g ? "manual" : "immediate");
		for (int i = 0; i < 3; i++) {
			isergw__ha__group_node_state__init(&f->ns[g][i]);
			f->ns[g][i].node = (char *)(uintptr_t)names[i];
			f->ns[g][i].tpg_id = (uint32_t)i + 1;
			f->ns[g][i].state = (char *)(uintptr_t)states[g][i];
			f->ns[g][i].pref = g == 0 && i == 0;
			f->nsp[g][i] = &f->ns[g][i];
		}
		f->dg[g].states = f->nsp[g];
		f->dg[g].n_states = 3;
		f->dgp[g] = &f->dg[g];
	}
	f->st.device_groups = f->dgp;
	f->st.n_device_groups = 2;
	isergw__ha__api_reply__init(&f->rep);
	f->rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS;
	f->rep.cluster_status = &f->st;
}

static void status_table(void **state)
{
	struct agent *a = *state;
	struct status_fixture f;
	struct run r;

	status_fixture(&f);
	agent_reply(a, &f.rep);
	r = run(a, "status", NULL);
	assert_int_equal(agent_done(a)->op_case, ISERGW__HA__API_REQUEST__OP_GET_STATUS);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	assert_string_equal(r.out,
		"cluster     lab\n"
		"node        n1 (nodeid 1)\n"
		"quorate     yes (votes 2/3)\n"
		"phase       synced\n"
		"generation  7 (digest 0123456789ab)\n"
		"protocol    1\n"
		"isergwd     connected, epoch 42\n"
		"lease       1350 ms remaining\n"
		"\n"
		"NODE  ID  COROSYNC  AGENT  SYNCED  DRAINED  APPLIED GEN  HEARD (ms ago)  TPG  "
		"DATA PLANE  LUNS FAILED\n"
		"n1    1   yes       yes    yes     no       7            12              1    "
		"healthy     2 (dg1)\n"
		"n2    2   yes       yes    yes     yes      7            95              2    "
		"failed      -\n"
		"n3    3   no        no     no      no       6            -               3    "
		"-           -\n"
		"\n"
		"DEVICE GROUP  OWNER  PREFERRED  FAILBACK   n1       n2     n3\n"
		"dg1           n1     n1         immediate  ao*      ano    unavail\n"
		"dg2           -      n2         manual     standby  trans  unavail\n");
	run_free(&r);
}

/* An agent with no configuration yet: no device groups, no lease, isergwd away. */
static void status_table_empty(void **state)
{
	struct agent *a = *state;
	struct status_fixture f;
	struct run r;

	status_fixture(&f);
	f.st.n_device_groups = 0;
	f.st.n_members = 0;
	f.st.digest = (char *)(uintptr_t)"";
	f.st.generation = 0;
	f.st.lease_remaining_ms = 0;
	f.st.isergwd_connected = false;
	f.st.quorate = false;
	agent_reply(a, &f.rep);
	r = run(a, "status", NULL);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "quorate     no (votes 2/3)\n"));
	assert_non_null(strstr(r.out, "generation  0 (digest -)\n"));
	assert_non_null(strstr(r.out, "isergwd     not connected, epoch 42\n"));
	assert_non_null(strstr(r.out, "lease       none\n"));
	assert_non_null(strstr(r.out, "\nno members\n\nno device groups\n"));
	run_free(&r);
}

static void status_json(void **state)
{
	struct agent *a = *state;
	struct status_fixture f;
	json_object *o, *m, *dg, *ns;
	struct run r;

	status_fixture(&f);
	agent_reply(a, &f.rep);
	r = run(a, "status", "--json", NULL);       /* --json after the command */
	assert_int_equal(r.rc, 0);
	o = parse(r.out);
	assert_string_equal(json_object_get_string(get(o, "cluster_name")), "lab");
	assert_string_equal(json_object_get_string(get(o, "node_name")), "n1");
	assert_int_equal(json_object_get_int(get(o, "nodeid")), 1);
	assert_true(json_object_get_boolean(get(o, "quorate")));
	assert_string_equal(json_object_get_string(get(o, "phase")), "synced");
	assert_int_equal(json_object_get_uint64(get(o, "generation")), 7);
	assert_string_equal(json_object_get_string(get(o, "digest")), f.st.digest);
	assert_int_equal(json_object_get_int(get(o, "protocol")), 1);
	assert_true(json_object_get_boolean(get(o, "isergwd_connected")));
	assert_int_equal(json_object_get_uint64(get(o, "isergwd_epoch")), 42);
	assert_int_equal(json_object_get_int(get(o, "lease_remaining_ms")), 1350);
	assert_int_equal(json_object_get_int(get(o, "expected_votes")), 3);
	assert_int_equal(json_object_get_int(get(o, "total_votes")), 2);
	assert_int_equal(json_object_array_length(get(o, "members")), 3);
	m = json_object_array_get_idx(get(o, "members"), 1);
	assert_string_equal(json_object_get_string(get(m, "name")), "n2");
	assert_true(json_object_get_boolean(get(m, "drained")));
	assert_true(json_object_get_boolean(get(m, "corosync_member")));
	assert_true(json_object_get_boolean(get(m, "agent")));
	assert_true(json_object_get_boolean(get(m, "synced")));
	assert_int_equal(json_object_get_uint64(get(m, "applied_generation")), 7);
	assert_int_equal(json_object_get_int(get(m, "last_heard_ms")), 95);
	assert_int_equal(json_object_get_int(get(m, "tpg_id")), 2);
	dg = json_object_array_get_idx(get(o, "device_groups"), 1);
	assert_string_equal(json_object_get_string(get(dg, "name")), "dg2");
	assert_string_equal(json_object_get_string(get(dg, "owner")), "");
	assert_string_equal(json_object_get_string(get(dg, "preferred_owner")), "n2");
	assert_string_equal(json_object_get_string(get(dg, "failback")), "manual");
	ns = json_object_array_get_idx(get(dg, "states"), 1);
	assert_string_equal(json_object_get_string(get(ns, "node")), "n2");
	assert_string_equal(json_object_get_string(get(ns, "state")), "transitioning");
	assert_int_equal(json_object_get_int(get(ns, "tpg_id")), 2);
	assert_false(json_object_get_boolean(get(ns, "pref")));
	ns = json_object_array_get_idx(get(json_object_array_get_idx(get(o, "device_groups"), 0),
					   "states"), 0);
	assert_true(json_object_get_boolean(get(ns, "pref")));
	json_object_put(o);
	run_free(&r);
}

/* ------------------------------------------------------------ config get */

static const char cfg_text[] = "{\"nodes\":[{\"name\":\"n1\",\"tpg_id\":1}],\"device_groups\":[]}";
static const char rt_text[] = "{\"drained\":[\"n2\"],\"owners\":{\"dg1\":\"n1\"}}";

static void config_reply(struct agent *a, const char *cfg, const char *rt)
{
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__ConfigDoc cd = ISERGW__HA__CONFIG_DOC__INIT;

	cd.generation = 7;
	cd.config_json = (char *)(uintptr_t)cfg;
	cd.runtime_json = (char *)(uintptr_t)rt;
	rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CONFIG;
	rep.config = &cd;
	agent_reply(a, &rep);
}

static void assert_json_text(const char *text, const char *want)
{
	json_object *o = parse(text), *w = parse(want);

	assert_true(json_object_equal(o, w));
	json_object_put(o);
	json_object_put(w);
}

static void config_get(void **state)
{
	struct agent *a = *state;
	struct run r;

	config_reply(a, cfg_text, rt_text);
	r = run(a, "config", "get", NULL);
	assert_int_equal(agent_done(a)->op_case, ISERGW__HA__API_REQUEST__OP_GET_CONFIG);
	assert_int_equal(r.rc, 0);
	assert_json_text(r.out, cfg_text);
	assert_non_null(strstr(r.out, "\n  \"nodes\""));       /* pretty */
	run_free(&r);
}

static void config_get_runtime(void **state)
{
	struct agent *a = *state;
	struct run r;

	config_reply(a, cfg_text, rt_text);
	r = run(a, "config", "--runtime", "get", NULL);
	assert_int_equal(r.rc, 0);
	assert_json_text(r.out, rt_text);
	run_free(&r);
}

static void config_get_json(void **state)
{
	struct agent *a = *state;
	json_object *o, *w;
	struct run r;

	config_reply(a, cfg_text, rt_text);
	r = run_opts(a, true, 2000, "config", "get", NULL);    /* the global --json */
	assert_int_equal(r.rc, 0);
	o = parse(r.out);
	assert_int_equal(json_object_get_uint64(get(o, "generation")), 7);
	w = parse(cfg_text);
	assert_true(json_object_equal(get(o, "config"), w));
	json_object_put(w);
	w = parse(rt_text);
	assert_true(json_object_equal(get(o, "runtime"), w));
	json_object_put(w);
	json_object_put(o);
	run_free(&r);
}

static void config_get_garbled(void **state)
{
	struct agent *a = *state;
	struct run r;

	config_reply(a, "{\"nodes\":", rt_text);
	r = run(a, "config", "get", NULL);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_CONNECT);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "garbled reply"));
	assert_non_null(strstr(r.err, "config_json is not a JSON object"));
	run_free(&r);
}

/* ------------------------------------------------------------ changes */

/* Split a copy of "a b c" at the spaces into words; their number. */
static size_t words(char *buf, size_t size, const char *list, char **w, size_t max)
{
	size_t n = 0;

	snprintf(buf, size, "%s", list);
	for (char *p = buf; *p && n < max;) {
		w[n++] = p;
		p += strcspn(p, " ");
		if (*p)
			*p++ = '\0';
	}
	return n;
}

static void change_reply(struct agent *a, int status, const char *error, uint64_t gen,
			 const char *applied, const char *pending, bool changed)
{
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__ChangeResult cr = ISERGW__HA__CHANGE_RESULT__INIT;
	char abuf[64] = "", pbuf[64] = "", *ap[8], *pp[8];

	cr.n_applied = words(abuf, sizeof(abuf), applied, ap, 8);
	cr.n_pending = words(pbuf, sizeof(pbuf), pending, pp, 8);
	cr.generation = gen;
	cr.applied = ap;
	cr.pending = pp;
	cr.changed = changed;
	rep.status = status;
	rep.error = (char *)(uintptr_t)error;
	rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CHANGE;
	rep.change = &cr;
	agent_reply(a, &rep);
}

static void refusal_reply(struct agent *a, int status, const char *error)
{
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;

	rep.status = status;
	rep.error = (char *)(uintptr_t)error;
	agent_reply(a, &rep);
}

/* A temporary file with this content; its path in path. */
static void temp_file(char *path, size_t size, const void *content, size_t len)
{
	int fd;

	snprintf(path, size, "/tmp/isergwctl-cluster-cfg-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, len), (ssize_t)len);
	close(fd);
}

static const char apply_text[] = "{\n  \"cluster\": \"lab\",\n  \"nodes\": []\n}\n";

static void config_apply(void **state)
{
	struct agent *a = *state;
	const ApiRequest *req;
	char path[64];
	struct run r;

	temp_file(path, sizeof(path), apply_text, strlen(apply_text));
	change_reply(a, 0, "", 8, "n1 n2 n3", "", true);
	/* options before and after the operand */
	r = run(a, "config", "apply", "--base-generation", "7", path, "--wait-ms", "5000", NULL);
	req = agent_done(a);
	assert_int_equal(req->op_case, ISERGW__HA__API_REQUEST__OP_APPLY_CONFIG);
	assert_string_equal(req->apply_config->config_json, apply_text);
	assert_int_equal(req->apply_config->base_generation, 7);
	assert_int_equal(req->apply_config->timeout_ms, 5000);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "generation 8 applied by n1 n2 n3\n");
	assert_string_equal(r.err, "");
	run_free(&r);
	unlink(path);
}

static void config_apply_stdin(void **state)
{
	struct agent *a = *state;
	const ApiRequest *req;
	char path[64];
	struct run r;
	int in, fd;

	temp_file(path, sizeof(path), apply_text, strlen(apply_text));
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	in = dup(STDIN_FILENO);
	dup2(fd, STDIN_FILENO);
	change_reply(a, 0, "", 8, "n1 n2", "n3", true);
	r = run(a, "config", "apply", "-", NULL);
	dup2(in, STDIN_FILENO);
	close(in);
	close(fd);
	req = agent_done(a);
	assert_string_equal(req->apply_config->config_json, apply_text);
	assert_int_equal(req->apply_config->base_generation, 0);
	assert_int_equal(req->apply_config->timeout_ms, 0);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "generation 8 applied by n1 n2\npending: n3\n");
	run_free(&r);
	unlink(path);
}

static void config_apply_too_big(void **state)
{
	struct agent *a = *state;
	size_t len = CTL_FRAME_MAX + 1;
	char *big = malloc(len), path[64];
	struct run r;

	assert_non_null(big);
	memset(big, ' ', len);
	temp_file(path, sizeof(path), big, len);
	free(big);
	r = run(a, "config", "apply", path, NULL);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_USAGE);
	assert_non_null(strstr(r.err, "1048577 bytes, more than the 1 MiB"));
	assert_no_connection(a);
	run_free(&r);
	unlink(path);
}

struct feeder {
	int fd;
	size_t len;
};

static void *feed(void *arg)
{
	struct feeder *f = arg;
	char buf[4096];
	size_t sent = 0;

	memset(buf, ' ', sizeof(buf));
	while (sent < f->len) {
		size_t n = f->len - sent < sizeof(buf) ? f->len - sent : sizeof(buf);
		ssize_t w = write(f->fd, buf, n);

		if (w <= 0)
			break;
		sent += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

/* A pipe has no size to look at: counted while reading. */
static void config_apply_too_big_stdin(void **state)
{
	struct agent *a = *state;
	struct feeder f = { .len = CTL_FRAME_MAX + 100 };
	pthread_t tid;
	int p[2], in;
	struct run r;

	assert_int_equal(pipe(p), 0);
	f.fd = p[1];
	assert_int_equal(pthread_create(&tid, NULL, feed, &f), 0);
	in = dup(STDIN_FILENO);
	dup2(p[0], STDIN_FILENO);
	r = run(a, "config", "apply", "-", NULL);
	dup2(in, STDIN_FILENO);
	close(in);
	close(p[0]);
	pthread_join(tid, NULL);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_USAGE);
	assert_non_null(strstr(r.err, "stdin: more than the 1 MiB"));
	assert_no_connection(a);
	run_free(&r);
}

static void config_apply_empty(void **state)
{
	struct agent *a = *state;
	char path[64];
	struct run r;

	temp_file(path, sizeof(path), "", 0);
	r = run(a, "config", "apply", path, NULL);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_USAGE);
	assert_non_null(strstr(r.err, ": empty"));
	assert_no_connection(a);
	run_free(&r);
	unlink(path);
	r = run(a, "config", "apply", "/nonexistent/cluster.json", NULL);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_USAGE);
	assert_non_null(strstr(r.err, "cannot read /nonexistent/cluster.json"));
	run_free(&r);
}

static void drain_refused(void **state)
{
	struct agent *a = *state;
	const ApiRequest *req;
	struct run r;

	refusal_reply(a, -ENOLCK, "no quorum");
	r = run(a, "drain", "n2", NULL);
	req = agent_done(a);
	assert_int_equal(req->op_case, ISERGW__HA__API_REQUEST__OP_DRAIN);
	assert_string_equal(req->drain->node, "n2");
	assert_false(req->drain->undrain);
	assert_false(req->drain->force);
	assert_int_equal(req->drain->timeout_ms, 0);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_REFUSED);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err, "isergwctl: refused: no quorum (No locks available)\n");
	run_free(&r);
}

/* The last node that can own groups: the agent refuses it unless --force, which undrain does not take. */
static void drain_forced(void **state)
{
	struct agent *a = *state;
	const ApiRequest *req;
	struct run r;

	r = run(a, "undrain", "n2", "--force", NULL);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_USAGE);
	assert_non_null(strstr(r.err, "undrain does not take --force"));
	assert_no_connection(a);
	run_free(&r);
	change_reply(a, 0, "", 7, "n1 n2 n3", "", true);
	r = run(a, "drain", "n2", "--force", NULL);
	req = agent_done(a);
	assert_int_equal(req->op_case, ISERGW__HA__API_REQUEST__OP_DRAIN);
	assert_true(req->drain->force);
	assert_false(req->drain->undrain);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_OK);
	run_free(&r);
}

/* The wait ended with n3 not done: the result and the error, exit 1. */
static void undrain_timeout_pending(void **state)
{
	struct agent *a = *state;
	const ApiRequest *req;
	struct run r;

	change_reply(a, -ETIMEDOUT, "generation 9 not applied within 100 ms by: n3", 9, "n1 n2",
		     "n3", true);
	r = run(a, "undrain", "n3", "--wait-ms", "100", NULL);
	req = agent_done(a);
	assert_string_equal(req->drain->node, "n3");
	assert_true(req->drain->undrain);
	assert_int_equal(req->drain->timeout_ms, 100);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_REFUSED);
	assert_string_equal(r.out, "generation 9 applied by n1 n2\npending: n3\n");
	assert_string_equal(r.err, "isergwctl: refused: generation 9 not applied within 100 ms by: "
			    "n3 (Connection timed out)\n");
	run_free(&r);
}

static void timeout_pending_json(void **state)
{
	struct agent *a = *state;
	json_object *o;
	struct run r;

	change_reply(a, -ETIMEDOUT, "generation 9 not applied within 100 ms by: n3", 9, "n1 n2",
		     "n3", true);
	r = run_opts(a, true, 2000, "drain", "n1", NULL);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_REFUSED);
	o = parse(r.out);
	assert_int_equal(json_object_get_uint64(get(o, "generation")), 9);
	assert_true(json_object_get_boolean(get(o, "changed")));
	assert_int_equal(json_object_array_length(get(o, "applied")), 2);
	assert_int_equal(json_object_array_length(get(o, "pending")), 1);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(get(o, "pending"), 0)),
			    "n3");
	json_object_put(o);
	assert_non_null(strstr(r.err, "(Connection timed out)"));
	run_free(&r);
}

/* -ETIMEDOUT before the change was made: no result, a plain refusal. */
static void timeout_no_result(void **state)
{
	struct agent *a = *state;
	struct run r;

	refusal_reply(a, -ETIMEDOUT, "the change was not applied within 10000 ms");
	r = run(a, "drain", "n1", NULL);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_REFUSED);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err, "isergwctl: refused: the change was not applied within 10000 ms "
			    "(Connection timed out)\n");
	run_free(&r);
}

static void move_unchanged(void **state)
{
	struct agent *a = *state;
	const ApiRequest *req;
	struct run r;

	change_reply(a, 0, "", 7, "n1 n2 n3", "", false);
	r = run(a, "move", "--wait-ms", "2500", "dg1", "n2", NULL);
	req = agent_done(a);
	assert_int_equal(req->op_case, ISERGW__HA__API_REQUEST__OP_MOVE);
	assert_string_equal(req->move->device_group, "dg1");
	assert_string_equal(req->move->node, "n2");
	assert_int_equal(req->move->timeout_ms, 2500);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "unchanged (generation 7)\n");
	run_free(&r);
}

static void move_json(void **state)
{
	struct agent *a = *state;
	json_object *o;
	struct run r;

	change_reply(a, 0, "", 10, "n1 n2", "", true);
	r = run(a, "--json", "move", "dg2", "n1", NULL);
	assert_int_equal(r.rc, 0);
	o = parse(r.out);
	assert_int_equal(json_object_get_uint64(get(o, "generation")), 10);
	assert_true(json_object_get_boolean(get(o, "changed")));
	assert_int_equal(json_object_array_length(get(o, "applied")), 2);
	assert_int_equal(json_object_array_length(get(o, "pending")), 0);
	json_object_put(o);
	run_free(&r);
}

/* A node name that looks like an option, after "--". */
static void operand_after_dashdash(void **state)
{
	struct agent *a = *state;
	struct run r;

	change_reply(a, 0, "", 3, "n1", "", true);
	r = run(a, "drain", "--", "-n1", NULL);
	assert_string_equal(agent_done(a)->drain->node, "-n1");
	assert_int_equal(r.rc, 0);
	run_free(&r);
}

/* isergwctl's main parsed its options with "+" (stop at the command): ours still permute. */
static void after_main_getopt(void **state)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	struct agent *a = *state;
	char *argv[] = { (char *)(uintptr_t)"isergwctl", (char *)(uintptr_t)"--json",
			 (char *)(uintptr_t)"cluster", NULL };
	struct run r;

	optind = 0;     /* afresh, as in a new process: "+" ordering from now on */
	while (getopt_long(3, argv, "+s:h", opts, NULL) != -1)
		;
	assert_int_equal(optind, 2);
	change_reply(a, 0, "", 4, "n1", "", true);
	r = run(a, "drain", "n2", "--wait-ms", "700", NULL);
	assert_int_equal(agent_done(a)->drain->timeout_ms, 700);
	assert_int_equal(r.rc, 0);
	run_free(&r);
}

/* ------------------------------------------------------------ garbled, gone */

static void expect_garbled(struct agent *a, const char *what)
{
	struct run r = run(a, "status", NULL);

	agent_done(a);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_CONNECT);
	assert_string_equal(r.out, "");
	if (!strstr(r.err, what))
		fail_msg("stderr '%s' lacks '%s'", r.err, what);
	run_free(&r);
}

static void garbled_not_protobuf(void **state)
{
	static const uint8_t junk[] = { 0, 0, 0, 3, 0xff, 0xff, 0xff };

	agent_raw(*state, junk, sizeof(junk));
	expect_garbled(*state, "garbled reply from");
}

static void garbled_status_positive(void **state)
{
	refusal_reply(*state, 5, "five");
	expect_garbled(*state, "status 5 is neither 0 nor a negative errno");
}

static void garbled_wrong_payload(void **state)
{
	config_reply(*state, cfg_text, rt_text);
	expect_garbled(*state, "garbled reply");
}

static void garbled_no_payload(void **state)
{
	refusal_reply(*state, 0, "");
	expect_garbled(*state, "garbled reply");
}

static void garbled_control_character(void **state)
{
	struct status_fixture f;

	status_fixture(&f);
	f.m[1].name = (char *)(uintptr_t)"n\x1b[2J";
	agent_reply(*state, &f.rep);
	expect_garbled(*state, "MemberStatus.name: not printable text at byte 1");
}

static void garbled_c1_control(void **state)
{
	struct status_fixture f;

	status_fixture(&f);
	f.st.phase = (char *)(uintptr_t)"sy\xc2\x9b" "2J";
	agent_reply(*state, &f.rep);
	expect_garbled(*state, "ClusterStatus.phase: not printable text at byte 2");
}

static void garbled_error_not_utf8(void **state)
{
	refusal_reply(*state, -EINVAL, "bad \xff name");
	expect_garbled(*state, "ApiReply.error: not printable text at byte 4");
}

static void garbled_digest(void **state)
{
	struct status_fixture f;

	status_fixture(&f);
	f.st.digest = (char *)(uintptr_t)"xyz";
	agent_reply(*state, &f.rep);
	expect_garbled(*state, "ClusterStatus.digest");
}

static void garbled_empty_node(void **state)
{
	struct status_fixture f;

	status_fixture(&f);
	f.ns[1][2].node = (char *)(uintptr_t)"";
	agent_reply(*state, &f.rep);
	expect_garbled(*state, "device group dg2: states[2] names no node");
}

static void garbled_change_pending(void **state)
{
	struct agent *a = *state;
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__ChangeResult cr = ISERGW__HA__CHANGE_RESULT__INIT;
	char *pend[] = { (char *)(uintptr_t)"" };
	struct run r;

	cr.pending = pend;
	cr.n_pending = 1;
	rep.status = -ETIMEDOUT;
	rep.error = (char *)(uintptr_t)"late";
	rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CHANGE;
	rep.change = &cr;
	agent_reply(a, &rep);
	r = run(a, "drain", "n1", NULL);
	agent_done(a);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_CONNECT);
	assert_non_null(strstr(r.err, "ChangeResult.pending[0]: empty"));
	run_free(&r);
}

static void reply_truncated(void **state)
{
	static const uint8_t part[] = { 0, 0, 0, 100, 8, 1, 8, 1, 8, 1 };

	agent_raw(*state, part, sizeof(part));
	expect_garbled(*state, "the connection ended inside the reply (10 of 104 bytes)");
}

static void reply_oversized(void **state)
{
	static const uint8_t hdr[] = { 0, 0x10, 0, 1 };

	agent_raw(*state, hdr, sizeof(hdr));
	expect_garbled(*state, "a reply of 1048577 bytes, above the maximum of 1048576");
}

static void reply_none(void **state)
{
	struct agent *a = *state;

	a->reply = NULL;
	assert_int_equal(pthread_create(&a->tid, NULL, serve, a), 0);
	a->serving = true;
	expect_garbled(a, "the agent closed the connection without answering");
}

static void reply_late(void **state)
{
	struct agent *a = *state;
	struct run r;

	a->silent = true;
	assert_int_equal(pthread_create(&a->tid, NULL, serve, a), 0);
	a->serving = true;
	r = run_opts(a, false, 300, "status", NULL);
	agent_done(a);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_CONNECT);
	assert_non_null(strstr(r.err, "no answer within 300 ms"));
	run_free(&r);
	/* a change waits --wait-ms longer */
	isergw__ha__api_request__free_unpacked(a->req, NULL);
	a->req = NULL;
	assert_int_equal(pthread_create(&a->tid, NULL, serve, a), 0);
	a->serving = true;
	r = run_opts(a, false, 300, "drain", "n1", "--wait-ms", "200", NULL);
	agent_done(a);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_CONNECT);
	assert_non_null(strstr(r.err, "no answer within 500 ms"));
	run_free(&r);
}

static void no_agent(void **state)
{
	struct agent *a = *state;
	struct run r;

	unlink(a->path);
	r = run(a, "status", NULL);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_CONNECT);
	assert_non_null(strstr(r.err, "cannot connect to"));
	assert_non_null(strstr(r.err, "No such file or directory (is isergw-ha running?)"));
	run_free(&r);
}

/* ------------------------------------------------------------ usage */

static void expect_usage(struct agent *a, const char *what, ...)
{
	struct run r;
	va_list ap;

	va_start(ap, what);
	r = run_v(a, false, 2000, ap);
	va_end(ap);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_USAGE);
	assert_string_equal(r.out, "");
	if (!strstr(r.err, what))
		fail_msg("stderr '%s' lacks '%s'", r.err, what);
	assert_no_connection(a);
	run_free(&r);
}

/* ------------------------------------------------------------ tokens */

#define TOKEN "isergw_prom_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

/* token add: the request; the token alone on stdout, the result on stderr. */
static void token_add(void **state)
{
	struct agent *a = *state;
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__ChangeResult cr = ISERGW__HA__CHANGE_RESULT__INIT;
	char *applied[] = { (char *)(uintptr_t)"n1", (char *)(uintptr_t)"n2" };
	const ApiRequest *req;
	struct run r;

	cr.generation = 12;
	cr.changed = true;
	cr.applied = applied;
	cr.n_applied = 2;
	cr.token = (char *)(uintptr_t)TOKEN;
	rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CHANGE;
	rep.change = &cr;
	agent_reply(a, &rep);
	r = run(a, "token", "add", "prom", "--role", "read-only", "--wait-ms", "50", NULL);
	req = agent_done(a);
	assert_int_equal(req->op_case, ISERGW__HA__API_REQUEST__OP_CHANGE_TOKEN);
	assert_string_equal(req->change_token->name, "prom");
	assert_string_equal(req->change_token->role, "read-only");
	assert_false(req->change_token->revoke);
	assert_int_equal(req->change_token->timeout_ms, 50);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_OK);
	assert_string_equal(r.out, TOKEN "\n");
	assert_non_null(strstr(r.err, "token prom (read-only) added to the cluster in generation 12"));
	assert_null(strstr(r.err, TOKEN));
	run_free(&r);
}

static void token_add_refused(void **state)
{
	struct agent *a = *state;
	struct run r;

	refusal_reply(a, -EEXIST, "a token named prom exists (revoke it first)");
	r = run(a, "token", "add", "prom", "--role", "admin", NULL);
	agent_done(a);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_REFUSED);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "a token named prom exists"));
	run_free(&r);
}

static void token_revoke(void **state)
{
	struct agent *a = *state;
	const ApiRequest *req;
	struct run r;

	change_reply(a, 0, "", 13, "n1 n2 n3", "", true);
	r = run(a, "token", "revoke", "prom", NULL);
	req = agent_done(a);
	assert_int_equal(req->op_case, ISERGW__HA__API_REQUEST__OP_CHANGE_TOKEN);
	assert_string_equal(req->change_token->name, "prom");
	assert_true(req->change_token->revoke);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_OK);
	assert_string_equal(r.out, "generation 13 applied by n1 n2 n3\n");
	run_free(&r);
}

/* The agent's answer to GetTokens: one token, prom. */
static void tokens_reply(struct agent *a)
{
	ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__TokenList tl = ISERGW__HA__TOKEN_LIST__INIT;
	Isergw__Ha__ApiToken t = ISERGW__HA__API_TOKEN__INIT, *tp[] = { &t };

	t.name = (char *)(uintptr_t)"prom";
	t.role = (char *)(uintptr_t)"read-only";
	t.hash = (char *)(uintptr_t)"sha256:00:11";
	t.created = 1795830000;
	tl.generation = 14;
	tl.tokens = tp;
	tl.n_tokens = 1;
	rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_TOKENS;
	rep.tokens = &tl;
	agent_reply(a, &rep);
}

/* token list: a table without a hash */
static void token_list(void **state)
{
	struct agent *a = *state;
	struct run r;

	tokens_reply(a);
	r = run(a, "token", "list", NULL);
	assert_int_equal(agent_done(a)->op_case, ISERGW__HA__API_REQUEST__OP_GET_TOKENS);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_OK);
	assert_non_null(strstr(r.out, "NAME"));
	assert_non_null(strstr(r.out, "prom  read-only  2026-11-28T"));
	assert_null(strstr(r.out, "sha256"));
	run_free(&r);
}

/* token list --json: names, roles, times, never a hash */
static void token_list_json(void **state)
{
	struct agent *a = *state;
	struct run r;

	tokens_reply(a);
	r = run_opts(a, true, 2000, "token", "list", NULL);
	agent_done(a);
	assert_int_equal(r.rc, ISERGWCTL_EXIT_OK);
	assert_non_null(strstr(r.out, "\"prom\""));
	assert_non_null(strstr(r.out, "\"generation\""));
	assert_non_null(strstr(r.out, "1795830000"));
	assert_null(strstr(r.out, "sha256"));
	run_free(&r);
}

static void usage_errors(void **state)
{
	struct agent *a = *state;

	expect_usage(a, "Usage: isergwctl", NULL);
	expect_usage(a, "unknown command 'frobnicate'", "frobnicate", NULL);
	expect_usage(a, "config needs 'get' or 'apply'", "config", NULL);
	expect_usage(a, "config needs 'get' or 'apply'", "config", "set", NULL);
	expect_usage(a, "drain needs NODE", "drain", NULL);
	expect_usage(a, "move needs DEVICE_GROUP NODE", "move", "dg1", NULL);
	expect_usage(a, "config apply needs FILE", "config", "apply", NULL);
	expect_usage(a, "unexpected 'n2'", "drain", "n1", "n2", NULL);
	expect_usage(a, "unexpected 'x'", "status", "x", NULL);
	expect_usage(a, "unexpected 'e'", "move", "b", "c", "d", "e", NULL);
	expect_usage(a, "status does not take --runtime", "status", "--runtime", NULL);
	expect_usage(a, "drain does not take --base-generation", "drain", "n1",
		     "--base-generation", "3", NULL);
	expect_usage(a, "config get does not take --wait-ms", "config", "get", "--wait-ms", "5",
		     NULL);
	expect_usage(a, "--wait-ms wants 0..600000 milliseconds, not 'abc'", "drain", "n1",
		     "--wait-ms", "abc", NULL);
	expect_usage(a, "not '600001'", "drain", "n1", "--wait-ms", "600001", NULL);
	expect_usage(a, "not '-1'", "drain", "n1", "--wait-ms=-1", NULL);
	expect_usage(a, "--wait-ms needs a value", "drain", "n1", "--wait-ms", NULL);
	expect_usage(a, "--base-generation wants a generation number, not '7x'", "config",
		     "apply", "--base-generation", "7x", "f", NULL);
	expect_usage(a, "unknown option '--bogus'", "status", "--bogus", NULL);
	expect_usage(a, "unknown option '-x'", "status", "-x", NULL);
	expect_usage(a, "drain: an empty operand", "drain", "", NULL);
	expect_usage(a, "move: operand 2 is not a name", "move", "dg1", "n\x1b", NULL);
	expect_usage(a, "--ha-socket: '' is not a socket path", "status", "--ha-socket", "",
		     NULL);
	expect_usage(a, "token needs 'add', 'list' or 'revoke'", "token", NULL);
	expect_usage(a, "token add needs --role admin or --role read-only", "token", "add", "x",
		     NULL);
	expect_usage(a, "token add needs --role admin or --role read-only", "token", "add", "x",
		     "--role", "root", NULL);
	expect_usage(a, "token revoke does not take --role", "token", "revoke", "x", "--role",
		     "admin", NULL);
	expect_usage(a, "token add needs NAME", "token", "add", NULL);
}

static void help(void **state)
{
	static const char *const forms[][3] = {
		{ "help", NULL, NULL },
		{ "--help", NULL, NULL },
		{ "-h", NULL, NULL },
		{ "drain", "--help", NULL },
	};
	struct agent *a = *state;

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct run r = run(a, forms[i][0], forms[i][1], NULL);

		assert_int_equal(r.rc, 0);
		assert_string_equal(r.err, "");
		assert_non_null(strstr(r.out, "Usage: isergwctl [--json] [--timeout S] cluster"));
		assert_non_null(strstr(r.out, "  status "));
		assert_non_null(strstr(r.out, "  config get [--runtime]"));
		assert_non_null(strstr(r.out,
				       "  config apply [--base-generation N] [--wait-ms MS] FILE\n"));
		assert_non_null(strstr(r.out, "  drain NODE [--wait-ms MS] [--force]\n"));
		assert_non_null(strstr(r.out, "  undrain NODE [--wait-ms MS]\n"));
		assert_non_null(strstr(r.out, "  move DEVICE_GROUP NODE [--wait-ms MS]\n"));
		assert_non_null(strstr(r.out, "--ha-socket PATH"));
		assert_non_null(strstr(r.out, "Exit status"));
		run_free(&r);
	}
	assert_no_connection(a);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(status_table),
		T(status_table_empty),
		T(status_json),
		T(config_get),
		T(config_get_runtime),
		T(config_get_json),
		T(config_get_garbled),
		T(config_apply),
		T(config_apply_stdin),
		T(config_apply_too_big),
		T(config_apply_too_big_stdin),
		T(config_apply_empty),
		T(drain_refused),
		T(drain_forced),
		T(undrain_timeout_pending),
		T(timeout_pending_json),
		T(timeout_no_result),
		T(move_unchanged),
		T(move_json),
		T(operand_after_dashdash),
		T(after_main_getopt),
		T(garbled_not_protobuf),
		T(garbled_status_positive),
		T(garbled_wrong_payload),
		T(garbled_no_payload),
		T(garbled_control_character),
		T(garbled_c1_control),
		T(garbled_error_not_utf8),
		T(garbled_digest),
		T(garbled_empty_node),
		T(garbled_change_pending),
		T(reply_truncated),
		T(reply_oversized),
		T(reply_none),
		T(reply_late),
		T(no_agent),
		T(token_add),
		T(token_add_refused),
		T(token_revoke),
		T(token_list),
		T(token_list_json),
		T(usage_errors),
		T(help),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
