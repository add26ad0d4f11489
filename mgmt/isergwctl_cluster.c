/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwctl cluster ...: the operator's command line for the HA agent
 * isergw-ha, over its local API (proto/isergw_ha.proto, ApiRequest and
 * ApiReply) on a root-only unix socket with the control socket's framing
 * (docs/cluster-cli.md). One request per connection, answered within a
 * deadline; a reply is checked whole (status, strings, payload) before any of
 * it is printed, and one that does not make sense is an error (exit 3).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_wire.h"
#include "isergw_ha.pb-c.h"
#include "isergwctl.h"
#include "common/log.h"

typedef Isergw__Ha__ApiRequest ApiRequest;
typedef Isergw__Ha__ApiReply ApiReply;

#define DEFAULT_TIMEOUT_MS 30000
#define WAIT_MAX_MS        600000u        /* the agent waits at most this long for a change */
#define CONFIG_MAX         CTL_FRAME_MAX  /* a configuration file, bytes */
#define TEXT_MAX           4096u          /* a string of a reply other than a JSON document */
#define NODES_MAX          256u           /* members, and nodes in a device group's states */
#define DGS_MAX            4096u          /* device groups */
#define POS_MAX            4u             /* command words and operands */
#define NAME_MAX_LEN       255u           /* a node or device group name given */

/* The options that only some commands take (--ha-socket, --json, --help: all). */
enum {
	OPT_RUNTIME = 1u << 0,
	OPT_BASE_GEN = 1u << 1,
	OPT_WAIT = 1u << 2,
	OPT_FORCE = 1u << 3,
	OPT_ROLE = 1u << 4,
};

struct cl {
	const char *socket;
	bool json;
	int timeout_ms;
	bool help;
	unsigned int given;     /* OPT_* seen */
	uint64_t base_gen;
	uint32_t wait_ms;
	const char *role;       /* --role */
	char *pos[POS_MAX];     /* command words, then operands */
	size_t npos;
	const struct cl_cmd *cmd;       /* the command given */
};

/*
 * A change whose request is made of its operands and options alone
 * (cmd_change): the operation (its message is the type of that field of
 * ApiRequest), the string fields the operands go to, in order, and a bool
 * field set true (NULL: none); its force is --force (and its timeout_ms
 * --wait-ms, as every change's: run_change).
 */
struct cl_change {
	Isergw__Ha__ApiRequest__OpCase op;
	const char *fields[2];
	const char *flag;
};

struct cl_cmd {
	const char *word, *word2;       /* "config" "get"; word2 NULL: one word */
	size_t nargs;                   /* operands after the words */
	const char *operands;           /* for the usage error */
	unsigned int opts;              /* OPT_* it takes */
	bool names;                     /* the operands are names: printable text */
	int (*run)(struct cl *c, char **args);
	const struct cl_change *change; /* run is cmd_change: how */
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: isergwctl [--json] [--timeout S] cluster COMMAND [OPTIONS] [ARGS]\n"
"Talk to the HA agent isergw-ha over its local API (root only).\n"
"\n"
"Commands:\n"
"  status                 the cluster: quorum, phase, generation, the link to\n"
"                         isergwd and its lease; every member; every device\n"
"                         group with its owner and each node's ALUA state\n"
"                         (ao, ano, standby, unavail, offline, trans; '*': PREF)\n"
"  config get [--runtime] the cluster configuration (JSON); --runtime: the\n"
"                         runtime map (owners, drained nodes) instead; with\n"
"                         --json: {\"generation\", \"config\", \"runtime\"}\n"
"  config apply [--base-generation N] [--wait-ms MS] FILE\n"
"                         apply a whole new cluster configuration (FILE '-':\n"
"                         stdin; at most 1 MiB); --base-generation N: only if\n"
"                         the cluster is at generation N (0: no check)\n"
"  drain NODE [--wait-ms MS] [--force]\n"
"                         move every device group off NODE and keep them off;\n"
"                         refused when no other node could own them (the\n"
"                         groups named) unless --force: they then have no\n"
"                         owner, no node serves their LUNs\n"
"  undrain NODE [--wait-ms MS]\n"
"                         let NODE own device groups again\n"
"  move DEVICE_GROUP NODE [--wait-ms MS]\n"
"                         make NODE the owner of DEVICE_GROUP\n"
"  fenced NODE            the fencer confirmed NODE fenced (powered off): its\n"
"                         device groups move without waiting for its lease.\n"
"                         For pacemaker's fencing alert (docs/ha.md); refused\n"
"                         while NODE is a corosync member or its agent in the\n"
"                         group. Never say it of a node that may be running\n"
"                         (it may still write)\n"
"  token add NAME --role admin|read-only [--wait-ms MS]\n"
"                         make an API token for isergw-api on every node\n"
"                         (docs/api.md, Cluster tokens): printed once, on\n"
"                         stdout; the cluster keeps only its salted hash\n"
"  token list             the cluster's API tokens: name, role, created\n"
"  token revoke NAME [--wait-ms MS]\n"
"                         refuse token NAME on every node from now on\n"
"  help                   this help\n"
"\n"
"Options (anywhere after 'cluster'):\n"
"  --ha-socket PATH  the agent's socket (default " ISERGWCTL_HA_SOCKET ")\n"
"  --json            one JSON document instead of tables\n"
"  --role ROLE       token add: admin (every method) or read-only (GET, HEAD)\n"
"  --wait-ms MS      how long the agent waits for every live node to apply the\n"
"                    change before it answers with the nodes that have not\n"
"                    (0..600000; 0 or none: the agent's change_timeout_ms)\n"
"  -h, --help        this help\n"
"\n"
"A change (config apply, drain, undrain, move, token add, token revoke) is answered once every live node\n"
"applied it: 'generation N applied by NODE ...', or 'unchanged'. isergwctl waits\n"
"for an answer at most --timeout (default 30 s) plus --wait-ms.\n"
"\n"
"Exit status: 0 done; 1 refused by the agent (reason printed), or a change that\n"
"live nodes had not applied when the wait ended (listed as pending); 2 usage\n"
"error; 3 cannot connect, no answer in time, or an answer that makes no sense.\n");
}

/* "isergwctl: cluster: MESSAGE" and the hint on stderr; ISERGWCTL_EXIT_USAGE. */
#define usage_err(...) isergwctl_usage_err("cluster", __VA_ARGS__)

/* ------------------------------------------------------------ talking */

/* What a call that failed with rc (at p->step) means, on stderr. */
static void say_failed(const struct isergwctl_peer *p, int rc, const struct ctl_frame_rx *rx,
		       int timeout_ms)
{
	char why[256];

	switch (p->step) {
	case ISERGWCTL_STEP_PACK:
	case ISERGWCTL_STEP_PATH:
		fprintf(stderr, "isergwctl: %s\n", strerror(-rc));
		return;
	case ISERGWCTL_STEP_SOCKET:
		fprintf(stderr, "isergwctl: socket: %s\n", strerror(-rc));
		return;
	case ISERGWCTL_STEP_CONNECT:
		fprintf(stderr, "isergwctl: cannot connect to %s: %s%s\n", p->path, strerror(-rc),
			rc == -ENOENT || rc == -ECONNREFUSED ? " (is isergw-ha running?)" :
			rc == -EACCES ? " (the agent's socket is for root only)" : "");
		return;
	case ISERGWCTL_STEP_SEND:
		fprintf(stderr, "isergwctl: cannot send to %s: %s\n", p->path,
			rc == -ETIMEDOUT ? "the agent does not read" : strerror(-rc));
		return;
	case ISERGWCTL_STEP_RECV:
		if (rc == -ETIMEDOUT)
			snprintf(why, sizeof(why), "no answer within %d ms", timeout_ms);
		else if (rc == -ENOTCONN)
			snprintf(why, sizeof(why), "the agent closed the connection without answering");
		else if (rc == -EPIPE)
			snprintf(why, sizeof(why), "the connection ended inside the reply (%u of %u bytes)",
				 rx->hdr_have < CTL_FRAME_HDR ? rx->hdr_have : CTL_FRAME_HDR + rx->have,
				 rx->hdr_have < CTL_FRAME_HDR ? CTL_FRAME_HDR : CTL_FRAME_HDR + rx->len);
		else if (rc == -EMSGSIZE)
			snprintf(why, sizeof(why), "a reply of %u bytes, above the maximum of %u", rx->len,
				 CTL_FRAME_MAX);
		else
			snprintf(why, sizeof(why), "%s", strerror(-rc));
		fprintf(stderr, "isergwctl: %s: %s\n", p->path, why);
		return;
	}
}

/* ------------------------------------------------------------ checking a reply */

/*
 * s is valid UTF-8 of at most max bytes without control characters (C0, DEL,
 * C1: nothing of it can drive the terminal); multiline lets \t \n \r through.
 * Returns -1, or the offset of the first byte that is not.
 */
static long text_bad_at(const char *s, size_t max, bool multiline)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (p[i]) {
		unsigned int b = p[i];
		uint32_t cp;
		size_t n;

		if (i >= max)
			return (long)i;
		if (b < 0x80) {
			if (b == 0x7f || (b < 0x20 && !(multiline && (b == '\t' || b == '\n' ||
								     b == '\r'))))
				return (long)i;
			i++;
			continue;
		}
		if (b >= 0xc2 && b <= 0xdf)
			n = 1, cp = b & 0x1f;
		else if (b >= 0xe0 && b <= 0xef)
			n = 2, cp = b & 0x0f;
		else if (b >= 0xf0 && b <= 0xf4)
			n = 3, cp = b & 0x07;
		else
			return (long)i;
		for (size_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return (long)i;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp <= 0x9f)
			return (long)i;
		i += n + 1;
	}
	return -1;
}

/*
 * Every string of m (at any depth) printable (the ConfigDoc's JSON documents
 * may be multi-line and as long as a frame), every message present that is
 * said to be; -EBADMSG with the reason otherwise.
 */
static int check_message(const ProtobufCMessage *m, char *err, size_t errlen)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	bool doc = d == &isergw__ha__config_doc__descriptor;

	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)m;
		const void *member = base + f->offset;
		size_t n = 1;
		int rc;

		if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)(const void *)(base + f->quantifier_offset) != f->id)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			n = *(const size_t *)(const void *)(base + f->quantifier_offset);
			member = *(const void *const *)member;
			if (n && !member)
				return gw_errf(err, errlen, -EBADMSG, "%s.%s: missing", d->short_name, f->name);
		}
		for (size_t k = 0; k < n; k++) {
			const void *v = ((const void *const *)member)[k];
			long at;

			if (!v) {
				if (f->type == PROTOBUF_C_TYPE_MESSAGE && f->label != PROTOBUF_C_LABEL_REPEATED &&
				    !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
					continue;       /* a sub-message not sent */
				return gw_errf(err, errlen, -EBADMSG, "%s.%s: missing", d->short_name, f->name);
			}
			if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
				if ((rc = check_message(v, err, errlen)))
					return rc;
				continue;
			}
			at = text_bad_at(v, doc ? CTL_FRAME_MAX : TEXT_MAX, doc);
			if (at >= 0)
				return gw_errf(err, errlen, -EBADMSG, "%s.%s: %s at byte %ld", d->short_name, f->name,
					   (size_t)at >= (doc ? CTL_FRAME_MAX : TEXT_MAX) ? "too long" :
					   "not printable text", at);
		}
	}
	return 0;
}

static bool is_hex(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))
			return false;
	return true;
}

/* Add name to the node columns unless it is there; false when there are too many. */
static bool add_column(const char **cols, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(cols[i], name) == 0)
			return true;
	if (*n == NODES_MAX)
		return false;
	cols[(*n)++] = name;
	return true;
}

static bool in_states(const Isergw__Ha__ClusterStatus *s, const char *node)
{
	for (size_t g = 0; g < s->n_device_groups; g++)
		for (size_t k = 0; k < s->device_groups[g]->n_states; k++)
			if (strcmp(s->device_groups[g]->states[k]->node, node) == 0)
				return true;
	return false;
}

/*
 * The nodes of the device group table, one column each: the members' order
 * first, then any other node a state names. False when they are more than
 * NODES_MAX.
 */
static bool node_columns(const Isergw__Ha__ClusterStatus *s, const char **cols, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < s->n_members; i++)
		if (in_states(s, s->members[i]->name))
			(void)add_column(cols, n, s->members[i]->name);
	for (size_t g = 0; g < s->n_device_groups; g++)
		for (size_t k = 0; k < s->device_groups[g]->n_states; k++)
			if (!add_column(cols, n, s->device_groups[g]->states[k]->node))
				return false;
	return true;
}

static int check_status(const Isergw__Ha__ClusterStatus *s, char *err, size_t errlen)
{
	const char *cols[NODES_MAX];
	size_t ncols;

	if (!is_hex(s->digest) || strlen(s->digest) > 128)
		return gw_errf(err, errlen, -EBADMSG, "ClusterStatus.digest: '%s' is not hex", s->digest);
	if (s->n_members > NODES_MAX)
		return gw_errf(err, errlen, -EBADMSG, "ClusterStatus: %zu members (at most %u)", s->n_members,
			   NODES_MAX);
	if (s->n_device_groups > DGS_MAX)
		return gw_errf(err, errlen, -EBADMSG, "ClusterStatus: %zu device groups (at most %u)",
			   s->n_device_groups, DGS_MAX);
	for (size_t i = 0; i < s->n_members; i++)
		if (!s->members[i]->name[0])
			return gw_errf(err, errlen, -EBADMSG, "ClusterStatus.members[%zu]: no name", i);
	for (size_t g = 0; g < s->n_device_groups; g++) {
		const Isergw__Ha__DeviceGroupStatus *dg = s->device_groups[g];

		if (!dg->name[0])
			return gw_errf(err, errlen, -EBADMSG, "ClusterStatus.device_groups[%zu]: no name", g);
		if (dg->n_states > NODES_MAX)
			return gw_errf(err, errlen, -EBADMSG, "device group %s: %zu states (at most %u)", dg->name,
				   dg->n_states, NODES_MAX);
		for (size_t k = 0; k < dg->n_states; k++)
			if (!dg->states[k]->node[0])
				return gw_errf(err, errlen, -EBADMSG, "device group %s: states[%zu] names no node",
					   dg->name, k);
	}
	if (!node_columns(s, cols, &ncols))
		return gw_errf(err, errlen, -EBADMSG, "the device groups' states name more than %u nodes", NODES_MAX);
	return 0;
}

static int check_change(const Isergw__Ha__ChangeResult *r, char *err, size_t errlen)
{
	if (r->n_applied > NODES_MAX || r->n_pending > NODES_MAX)
		return gw_errf(err, errlen, -EBADMSG, "ChangeResult: %zu applied, %zu pending (at most %u)",
			   r->n_applied, r->n_pending, NODES_MAX);
	for (size_t i = 0; i < r->n_applied; i++)
		if (!r->applied[i][0])
			return gw_errf(err, errlen, -EBADMSG, "ChangeResult.applied[%zu]: empty", i);
	for (size_t i = 0; i < r->n_pending; i++)
		if (!r->pending[i][0])
			return gw_errf(err, errlen, -EBADMSG, "ChangeResult.pending[%zu]: empty", i);
	return 0;
}

/* Unpack and check a reply: 0 with *out, or -EBADMSG with the reason in err. */
static int reply_decode(const uint8_t *buf, size_t len, ApiReply **out, char *err, size_t errlen)
{
	ApiReply *r = isergw__ha__api_reply__unpack(NULL, len, buf);
	int rc;

	if (!r)
		return gw_errf(err, errlen, -EBADMSG, "%zu bytes that do not decode as an ApiReply", len);
	if (r->status > 0 || r->status < -CTL_ERRNO_MAX)
		rc = gw_errf(err, errlen, -EBADMSG, "status %d is neither 0 nor a negative errno", r->status);
	else if ((rc = ctl_check_enums(&r->base, err, errlen)))
		rc = -EBADMSG;
	else if (!(rc = check_message(&r->base, err, errlen))) {
		if (r->payload_case == ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS)
			rc = check_status(r->cluster_status, err, errlen);
		else if (r->payload_case == ISERGW__HA__API_REPLY__PAYLOAD_CHANGE)
			rc = check_change(r->change, err, errlen);
	}
	if (rc) {
		isergw__ha__api_reply__free_unpacked(r, NULL);
		return rc;
	}
	*out = r;
	return 0;
}

/*
 * Send req to the agent and read its reply, all within the timeout plus
 * extra_ms. 0 with *out a checked reply of any status, or an exit status
 * with the reason printed.
 */
static int ha_call(const struct cl *c, const ApiRequest *req, uint32_t extra_ms, ApiReply **out)
{
	struct isergwctl_peer peer = { .path = c->socket, .fd = -1, .reply_max = CTL_FRAME_MAX };
	int timeout_ms = c->timeout_ms + (int)extra_ms;
	struct ctl_frame_rx rx;
	char why[512];
	int rc;

	if (c->socket[0]) {
		rc = isergwctl_call(&peer, &req->base, timeout_ms, &rx);
	} else {
		ctl_frame_rx_init(&rx);
		peer.step = ISERGWCTL_STEP_PATH;
		rc = -ENAMETOOLONG;
	}
	if (rc == -EMSGSIZE && peer.step == ISERGWCTL_STEP_PACK)
		rc = usage_err("the request is larger than a frame may be (%u bytes)", CTL_FRAME_MAX);
	else if (rc == -ENAMETOOLONG && peer.step == ISERGWCTL_STEP_PATH)
		rc = usage_err("--ha-socket: '%s' is not a socket path (1..%zu bytes)", c->socket,
			       sizeof((struct sockaddr_un){ 0 }.sun_path) - 1);
	else if (rc == 0 && (rc = reply_decode(rx.body, rx.len, out, why, sizeof(why)))) {
		fprintf(stderr, "isergwctl: garbled reply from %s: %s\n", c->socket, why);
		rc = ISERGWCTL_EXIT_CONNECT;
	} else if (rc) {
		say_failed(&peer, rc, &rx, timeout_ms);
		rc = ISERGWCTL_EXIT_CONNECT;
	}
	ctl_frame_rx_reset(&rx);
	isergwctl_peer_close(&peer);
	return rc;
}

/*
 * ha_call() for a reply that is refused or carries the payload expected:
 * 0 with *out (status 0, or any status when keep_failed), or an exit status
 * with the reason printed.
 */
static int ha_request(const struct cl *c, const ApiRequest *req, uint32_t extra_ms,
		      Isergw__Ha__ApiReply__PayloadCase expect, bool keep_failed, ApiReply **out)
{
	ApiReply *rep;
	int rc = ha_call(c, req, extra_ms, &rep);

	if (rc)
		return rc;
	if (rep->status == 0 && rep->payload_case != expect) {
		fprintf(stderr, "isergwctl: garbled reply from %s: payload %d where %d was expected\n",
			c->socket, (int)rep->payload_case, (int)expect);
		isergw__ha__api_reply__free_unpacked(rep, NULL);
		return ISERGWCTL_EXIT_CONNECT;
	}
	if (rep->status && !keep_failed) {
		isergwctl_print_refusal(rep->status, rep->error);
		isergw__ha__api_reply__free_unpacked(rep, NULL);
		return ISERGWCTL_EXIT_REFUSED;
	}
	*out = rep;
	return 0;
}

/* ha_request() of an operation without arguments (its message empty), as a read. */
static int ha_request_plain(const struct cl *c, Isergw__Ha__ApiRequest__OpCase op,
			    Isergw__Ha__ApiReply__PayloadCase expect, ApiReply **out)
{
	ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	ProtobufCMessage *m = isergwctl_pb_op_new(&req.base, op);
	int rc = m ? ha_request(c, &req, 0, expect, false, out) : ISERGWCTL_EXIT_CONNECT;

	free(m);
	return rc;
}

/* ------------------------------------------------------------ tables */

_Static_assert(ISERGWCTL_DG_COLS + NODES_MAX <= ISERGWCTL_TABLE_COLS_MAX,
	       "the device group table has a column per node and four more");

/* Print and free the table: 0, or -ENOMEM (nothing printed, said on stderr). */
static int table_print(struct isergwctl_table *t)
{
	int rc = isergwctl_table_print(t, stdout);

	if (rc)
		fprintf(stderr, "isergwctl: out of memory\n");
	return rc;
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static const char *or_dash(const char *s)
{
	return s[0] ? s : "-";
}

static int members_table(const Isergw__Ha__ClusterStatus *s)
{
	static const char *const heads[] = { "NODE", "ID", "COROSYNC", "AGENT", "SYNCED", "DRAINED",
					     "APPLIED GEN", "HEARD (ms ago)", "TPG", "DATA PLANE",
					     "LUNS FAILED" };
	struct isergwctl_table t;

	if (s->n_members == 0) {
		printf("no members\n");
		return 0;
	}
	isergwctl_table_init(&t, sizeof(heads) / sizeof(heads[0]));
	isergwctl_table_heads(&t, heads, sizeof(heads) / sizeof(heads[0]));
	for (size_t i = 0; i < s->n_members; i++) {
		const Isergw__Ha__MemberStatus *m = s->members[i];
		char groups[256] = "";
		size_t used = 0;

		isergwctl_table_cell(&t, "%s", m->name);
		if (m->nodeid)
			isergwctl_table_cell(&t, "%u", m->nodeid);
		else
			isergwctl_table_cell(&t, "-");
		isergwctl_table_cell(&t, "%s", yes_no(m->corosync_member));
		isergwctl_table_cell(&t, "%s", yes_no(m->agent));
		isergwctl_table_cell(&t, "%s", yes_no(m->synced));
		isergwctl_table_cell(&t, "%s", yes_no(m->drained));
		isergwctl_table_cell(&t, "%llu", (unsigned long long)m->applied_generation);
		if (m->last_heard_ms)
			isergwctl_table_cell(&t, "%u", m->last_heard_ms);
		else
			isergwctl_table_cell(&t, "-");
		if (m->tpg_id)
			isergwctl_table_cell(&t, "%u", m->tpg_id);
		else
			isergwctl_table_cell(&t, "-");
		isergwctl_table_cell(&t, "%s", or_dash(m->dataplane));
		/* how many, and the device groups they cost the node */
		for (size_t k = 0; k < m->n_failed_groups && used < sizeof(groups); k++)
			used += (size_t)snprintf(groups + used, sizeof(groups) - used, "%s%s",
						 k ? "," : " (", m->failed_groups[k]);
		if (m->luns_failed)
			isergwctl_table_cell(&t, "%u%s%s", m->luns_failed, groups,
					     m->n_failed_groups ? ")" : "");
		else
			isergwctl_table_cell(&t, "-");
	}
	return table_print(&t);
}

/* One row per device group, one column per node with its ALUA state there. */
static int groups_table(const Isergw__Ha__ClusterStatus *s)
{
	const char *cols[NODES_MAX];
	size_t ncols;
	struct isergwctl_table t;

	if (s->n_device_groups == 0) {
		printf("no device groups\n");
		return 0;
	}
	(void)node_columns(s, cols, &ncols);      /* at most NODES_MAX: check_status */
	isergwctl_dg_table_init(&t, ncols);
	for (size_t i = 0; i < ncols; i++)
		isergwctl_table_cell(&t, "%s", cols[i]);
	for (size_t g = 0; g < s->n_device_groups; g++) {
		const Isergw__Ha__DeviceGroupStatus *dg = s->device_groups[g];

		isergwctl_table_cell(&t, "%s", dg->name);
		isergwctl_table_cell(&t, "%s", or_dash(dg->owner));
		isergwctl_table_cell(&t, "%s", or_dash(dg->preferred_owner));
		isergwctl_table_cell(&t, "%s", or_dash(dg->failback));
		for (size_t i = 0; i < ncols; i++) {
			const Isergw__Ha__GroupNodeState *ns = NULL;

			for (size_t k = 0; k < dg->n_states && !ns; k++)
				if (strcmp(dg->states[k]->node, cols[i]) == 0)
					ns = dg->states[k];
			if (ns)
				isergwctl_table_cell(&t, "%s%s", isergwctl_state_abbrev(ns->state), ns->pref ? "*" : "");
			else
				isergwctl_table_cell(&t, "-");
		}
	}
	return table_print(&t);
}

static int status_table(const Isergw__Ha__ClusterStatus *s)
{
	printf("cluster     %s\n", or_dash(s->cluster_name));
	printf("node        %s (nodeid %u)\n", or_dash(s->node_name), s->nodeid);
	printf("quorate     %s (votes %u/%u)\n", yes_no(s->quorate), s->total_votes,
	       s->expected_votes);
	printf("phase       %s\n", or_dash(s->phase));
	printf("generation  %llu (digest %.12s)\n", (unsigned long long)s->generation,
	       or_dash(s->digest));
	printf("protocol    %u\n", s->protocol);
	printf("isergwd     %s, epoch %llu\n", s->isergwd_connected ? "connected" : "not connected",
	       (unsigned long long)s->isergwd_epoch);
	if (s->lease_remaining_ms)
		printf("lease       %u ms remaining\n", s->lease_remaining_ms);
	else
		printf("lease       none\n");
	printf("\n");
	if (members_table(s))
		return -ENOMEM;
	printf("\n");
	return groups_table(s);
}

/* ------------------------------------------------------------ commands */

static int cmd_status(struct cl *c, char **args)
{
	ApiReply *rep;
	int rc;

	(void)args;
	rc = ha_request_plain(c, ISERGW__HA__API_REQUEST__OP_GET_STATUS,
			      ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS, &rep);
	if (rc)
		return rc;
	if (c->json)
		isergwctl_print_json(isergwctl_pb_json(&rep->cluster_status->base, NULL));
	else if (status_table(rep->cluster_status))
		rc = ISERGWCTL_EXIT_CONNECT;
	isergw__ha__api_reply__free_unpacked(rep, NULL);
	return rc;
}

/* A JSON document of the reply, which must be an object; NULL (reason printed) if not. */
static json_object *reply_doc(const struct cl *c, const char *field, const char *text)
{
	enum json_tokener_error jerr;
	json_object *o = json_tokener_parse_verbose(text, &jerr);

	if (!o || !json_object_is_type(o, json_type_object)) {
		fprintf(stderr, "isergwctl: garbled reply from %s: ConfigDoc.%s is not a JSON object%s%s\n",
			c->socket, field, o ? "" : ": ", o ? "" : json_tokener_error_desc(jerr));
		json_object_put(o);
		return NULL;
	}
	return o;
}

static int cmd_config_get(struct cl *c, char **args)
{
	json_object *cfg, *rt = NULL;
	ApiReply *rep;
	int rc;

	(void)args;
	rc = ha_request_plain(c, ISERGW__HA__API_REQUEST__OP_GET_CONFIG,
			      ISERGW__HA__API_REPLY__PAYLOAD_CONFIG, &rep);
	if (rc)
		return rc;
	cfg = reply_doc(c, "config_json", rep->config->config_json);
	if (cfg)
		rt = reply_doc(c, "runtime_json", rep->config->runtime_json);
	if (!cfg || !rt) {
		json_object_put(cfg);
		rc = ISERGWCTL_EXIT_CONNECT;
	} else if (c->json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "generation", json_object_new_uint64(rep->config->generation));
		json_object_object_add(o, "config", cfg);
		json_object_object_add(o, "runtime", rt);
		isergwctl_print_json(o);
	} else if (c->given & OPT_RUNTIME) {
		json_object_put(cfg);
		isergwctl_print_json(rt);
	} else {
		json_object_put(rt);
		isergwctl_print_json(cfg);
	}
	isergw__ha__api_reply__free_unpacked(rep, NULL);
	return rc;
}

/*
 * The result of a change: "generation N applied by ...", or unchanged, and
 * the nodes still pending (--json: the ChangeResult). A change the agent
 * answered -ETIMEDOUT with its result is shown, then refused (exit 1).
 */
static int change_show(const struct cl *c, ApiReply *rep)
{
	const Isergw__Ha__ChangeResult *r = rep->change;
	int rc = ISERGWCTL_EXIT_OK;

	if (rep->status && !(rep->status == -ETIMEDOUT &&
			     rep->payload_case == ISERGW__HA__API_REPLY__PAYLOAD_CHANGE)) {
		isergwctl_print_refusal(rep->status, rep->error);
		isergw__ha__api_reply__free_unpacked(rep, NULL);
		return ISERGWCTL_EXIT_REFUSED;
	}
	if (c->json) {
		isergwctl_print_json(isergwctl_pb_json(&r->base, NULL));
	} else {
		if (r->changed) {
			printf("generation %llu applied by", (unsigned long long)r->generation);
			for (size_t i = 0; i < r->n_applied; i++)
				printf(" %s", r->applied[i]);
			printf("%s\n", r->n_applied ? "" : " no node yet");
		} else {
			printf("unchanged (generation %llu)\n", (unsigned long long)r->generation);
		}
		if (r->n_pending) {
			printf("pending:");
			for (size_t i = 0; i < r->n_pending; i++)
				printf(" %s", r->pending[i]);
			printf("\n");
		}
	}
	if (rep->status) {
		fflush(stdout);
		isergwctl_print_refusal(rep->status, rep->error);
		rc = ISERGWCTL_EXIT_REFUSED;
	}
	isergw__ha__api_reply__free_unpacked(rep, NULL);
	return rc;
}

/*
 * Send a change, its timeout_ms --wait-ms (how long the agent waits for the
 * nodes), and show its result: an exit status.
 */
static int run_change(struct cl *c, const ApiRequest *req)
{
	ApiReply *rep;
	int rc;

	(void)isergwctl_pb_set_name(isergwctl_pb_op(&req->base, req->op_case), "timeout_ms", NULL,
				    c->wait_ms);
	rc = ha_request(c, req, c->wait_ms, ISERGW__HA__API_REPLY__PAYLOAD_CHANGE, true, &rep);
	return rc ? rc : change_show(c, rep);
}

/*
 * The file (or stdin for "-"), NUL-terminated, at most CONFIG_MAX bytes: a
 * malloc'd buffer, or NULL with the reason printed.
 */
static char *read_config(const char *path, size_t *lenp)
{
	bool is_stdin = strcmp(path, "-") == 0;
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	const char *name = is_stdin ? "stdin" : path;
	struct stat st;
	size_t len = 0;
	char *buf = NULL;

	if (fd < 0) {
		fprintf(stderr, "isergwctl: cannot read %s: %s\n", name, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > (off_t)CONFIG_MAX) {
		fprintf(stderr, "isergwctl: %s: %lld bytes, more than the 1 MiB (%u bytes) a cluster "
			"configuration may have\n", name, (long long)st.st_size, CONFIG_MAX);
		goto err;
	}
	buf = malloc(CONFIG_MAX + 2);
	if (!buf) {
		fprintf(stderr, "isergwctl: out of memory\n");
		goto err;
	}
	while (len <= CONFIG_MAX) {
		ssize_t n = read(fd, buf + len, CONFIG_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "isergwctl: cannot read %s: %s\n", name, strerror(errno));
			goto err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > CONFIG_MAX) {
		fprintf(stderr, "isergwctl: %s: more than the 1 MiB (%u bytes) a cluster configuration "
			"may have\n", name, CONFIG_MAX);
		goto err;
	}
	if (len == 0 || memchr(buf, '\0', len)) {
		fprintf(stderr, "isergwctl: %s: %s\n", name, len ? "a NUL byte in it: not a JSON text" :
			"empty");
		goto err;
	}
	buf[len] = '\0';
	if (!is_stdin)
		close(fd);
	*lenp = len;
	return buf;

err:
	free(buf);
	if (!is_stdin)
		close(fd);
	return NULL;
}

static int cmd_config_apply(struct cl *c, char **args)
{
	ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__ApplyClusterConfig ac = ISERGW__HA__APPLY_CLUSTER_CONFIG__INIT;
	size_t len;
	char *doc = read_config(args[0], &len);
	int rc;

	if (!doc)
		return ISERGWCTL_EXIT_USAGE;
	ac.config_json = doc;
	ac.base_generation = c->base_gen;
	req.op_case = ISERGW__HA__API_REQUEST__OP_APPLY_CONFIG;
	req.apply_config = &ac;
	rc = run_change(c, &req);
	free(doc);
	return rc;
}

/* drain, undrain, move, token revoke: the request as c->cmd->change says, its result shown. */
static int cmd_change(struct cl *c, char **args)
{
	const struct cl_change *ch = c->cmd->change;
	ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	ProtobufCMessage *m = isergwctl_pb_op_new(&req.base, ch->op);
	int rc;

	if (!m)
		return ISERGWCTL_EXIT_CONNECT;
	for (size_t i = 0; i < c->cmd->nargs; i++)
		(void)isergwctl_pb_set_name(m, ch->fields[i], args[i], 0);
	if (ch->flag)
		(void)isergwctl_pb_set_name(m, ch->flag, NULL, 1);
	if (c->given & OPT_FORCE)
		(void)isergwctl_pb_set_name(m, "force", NULL, 1);
	rc = run_change(c, &req);
	free(m);
	return rc;
}

/* The fencer confirmed NODE fenced (pacemaker's fencing alert calls this). */
static int cmd_fenced(struct cl *c, char **args)
{
	ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__NodeFenced f = ISERGW__HA__NODE_FENCED__INIT;
	ApiReply *rep;
	int rc;

	f.node = args[0];
	req.op_case = ISERGW__HA__API_REQUEST__OP_NODE_FENCED;
	req.node_fenced = &f;
	rc = ha_request(c, &req, 0, ISERGW__HA__API_REPLY__PAYLOAD__NOT_SET, false, &rep);
	if (rc)
		return rc;
	if (c->json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "node", json_object_new_string(args[0]));
		json_object_object_add(o, "announced", json_object_new_boolean(1));
		isergwctl_print_json(o);
	} else {
		printf("node %s: fence announced to the group\n", args[0]);
	}
	isergw__ha__api_reply__free_unpacked(rep, NULL);
	return ISERGWCTL_EXIT_OK;
}

/* token add NAME --role ROLE: the token on stdout (only there), the result on stderr */
static int cmd_token_add(struct cl *c, char **args)
{
	ApiRequest req = ISERGW__HA__API_REQUEST__INIT;
	Isergw__Ha__ChangeToken ct = ISERGW__HA__CHANGE_TOKEN__INIT;
	const Isergw__Ha__ChangeResult *r;
	ApiReply *rep;
	int rc;

	if (!c->role || (strcmp(c->role, "admin") && strcmp(c->role, "read-only")))
		return usage_err("token add needs --role admin or --role read-only");
	ct.name = args[0];
	ct.role = (char *)(uintptr_t)c->role;
	ct.timeout_ms = c->wait_ms;
	req.op_case = ISERGW__HA__API_REQUEST__OP_CHANGE_TOKEN;
	req.change_token = &ct;
	rc = ha_request(c, &req, c->wait_ms, ISERGW__HA__API_REPLY__PAYLOAD_CHANGE, true, &rep);
	if (rc)
		return rc;
	r = rep->change;
	if (rep->payload_case != ISERGW__HA__API_REPLY__PAYLOAD_CHANGE || !r->token[0])
		return change_show(c, rep);
	if (c->json) {
		isergwctl_print_json(isergwctl_pb_json(&r->base, NULL));
	} else {
		printf("%s\n", r->token);
		fflush(stdout);
		fprintf(stderr, "isergwctl: token %s (%s) added to the cluster in generation %llu; "
			"its secret is printed above and nowhere else\n", args[0], c->role,
			(unsigned long long)r->generation);
		for (size_t i = 0; i < r->n_pending; i++)
			fprintf(stderr, "isergwctl: pending on %s\n", r->pending[i]);
	}
	rc = ISERGWCTL_EXIT_OK;
	if (rep->status) {
		isergwctl_print_refusal(rep->status, rep->error);
		rc = ISERGWCTL_EXIT_REFUSED;
	}
	isergw__ha__api_reply__free_unpacked(rep, NULL);
	return rc;
}

static int cmd_token_list(struct cl *c, char **args)
{
	static const char *const heads[] = { "NAME", "ROLE", "CREATED" };
	struct isergwctl_table t;
	ApiReply *rep;
	int rc;

	(void)args;
	rc = ha_request_plain(c, ISERGW__HA__API_REQUEST__OP_GET_TOKENS,
			      ISERGW__HA__API_REPLY__PAYLOAD_TOKENS, &rep);
	if (rc)
		return rc;
	if (c->json) {
		json_object *o = json_object_new_object(), *a = json_object_new_array();

		/* the names, roles and times: never a hash */
		for (size_t i = 0; i < rep->tokens->n_tokens; i++) {
			const Isergw__Ha__ApiToken *k = rep->tokens->tokens[i];
			json_object *e = json_object_new_object();

			json_object_object_add(e, "name", json_object_new_string(k->name));
			json_object_object_add(e, "role", json_object_new_string(k->role));
			json_object_object_add(e, "created", json_object_new_int64((int64_t)k->created));
			json_object_array_add(a, e);
		}
		json_object_object_add(o, "generation",
				       json_object_new_int64((int64_t)rep->tokens->generation));
		json_object_object_add(o, "tokens", a);
		isergwctl_print_json(o);
	} else {
		isergwctl_table_init(&t, 3);
		isergwctl_table_heads(&t, heads, 3);
		for (size_t i = 0; i < rep->tokens->n_tokens; i++) {
			const Isergw__Ha__ApiToken *k = rep->tokens->tokens[i];
			time_t when = (time_t)k->created;
			struct tm tm;
			char ts[32] = "?";

			if (gmtime_r(&when, &tm))
				strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
			isergwctl_table_cell(&t, "%s", k->name);
			isergwctl_table_cell(&t, "%s", k->role);
			isergwctl_table_cell(&t, "%s", ts);
		}
		isergwctl_table_print(&t, stdout);
	}
	isergw__ha__api_reply__free_unpacked(rep, NULL);
	return ISERGWCTL_EXIT_OK;
}

static const struct cl_change drain_change = {
	ISERGW__HA__API_REQUEST__OP_DRAIN, { "node", NULL }, NULL,
};
static const struct cl_change undrain_change = {
	ISERGW__HA__API_REQUEST__OP_DRAIN, { "node", NULL }, "undrain",
};
static const struct cl_change move_change = {
	ISERGW__HA__API_REQUEST__OP_MOVE, { "device_group", "node" }, NULL,
};
static const struct cl_change revoke_change = {
	ISERGW__HA__API_REQUEST__OP_CHANGE_TOKEN, { "name", NULL }, "revoke",
};

static const struct cl_cmd cmds[] = {
	{ "status", NULL, 0, "", 0, false, cmd_status, NULL },
	{ "config", "get", 0, "", OPT_RUNTIME, false, cmd_config_get, NULL },
	{ "config", "apply", 1, "FILE", OPT_BASE_GEN | OPT_WAIT, false, cmd_config_apply, NULL },
	{ "drain", NULL, 1, "NODE", OPT_WAIT | OPT_FORCE, true, cmd_change, &drain_change },
	{ "undrain", NULL, 1, "NODE", OPT_WAIT, true, cmd_change, &undrain_change },
	{ "move", NULL, 2, "DEVICE_GROUP NODE", OPT_WAIT, true, cmd_change, &move_change },
	{ "fenced", NULL, 1, "NODE", 0, true, cmd_fenced, NULL },
	{ "token", "add", 1, "NAME", OPT_ROLE | OPT_WAIT, true, cmd_token_add, NULL },
	{ "token", "list", 0, "", 0, false, cmd_token_list, NULL },
	{ "token", "revoke", 1, "NAME", OPT_WAIT, true, cmd_change, &revoke_change },
};

/* The options: --ha-socket, --json, --help, then one per OPT_* bit, in the bits' order. */
#define OPT_FIRST 3
static const struct option cl_opts[] = {
	{ "ha-socket", required_argument, NULL, 's' },
	ISERGWCTL_OPT_JSON,
	{ "help", no_argument, NULL, 'h' },
	{ "runtime", no_argument, NULL, 'r' },
	{ "base-generation", required_argument, NULL, 'b' },
	{ "wait-ms", required_argument, NULL, 'w' },
	{ "force", no_argument, NULL, 'f' },
	{ "role", required_argument, NULL, 'R' },
	ISERGWCTL_OPT_END,
};

/* ------------------------------------------------------------ entry */

/* Options anywhere, operands in order: 0, or the usage error's exit status. */
static int parse_args(struct cl *c, int argc, char **argv)
{
	struct isergwctl_args a = { .opts = cl_opts, .first = OPT_FIRST, .pos = c->pos, .max = POS_MAX };
	char why[256];
	int opt;

	/* 0, not 1: getopt starts afresh, with this optstring's ordering */
	optind = 0;
	while ((opt = isergwctl_args_next(&a, argc, argv)) != -1) {
		switch (opt) {
		case ISERGWCTL_ARGS_FULL:
			return usage_err("unexpected '%s'", a.extra);
		case 's':
			c->socket = optarg;
			break;
		case 'r':
		case 'f':
			break;          /* --runtime, --force: their bit is all */
		case 'b':
			if (isergwctl_parse_u64(optarg, &c->base_gen))
				return usage_err("--base-generation wants a generation number, not '%s'",
						 optarg);
			break;
		case 'w':
			if (isergwctl_parse_u32(optarg, WAIT_MAX_MS, &c->wait_ms))
				return usage_err("--wait-ms wants 0..%u milliseconds, not '%s'", WAIT_MAX_MS,
						 optarg);
			break;
		case 'R':
			c->role = optarg;
			break;
		default:
			isergwctl_args_bad_opt(opt, argv, why, sizeof(why));
			return usage_err("%s", why);
		}
	}
	c->npos = a.npos;
	c->json = c->json || a.json;
	c->help = a.help;
	c->given = a.given;
	return 0;
}

int isergwctl_cluster(int argc, char **argv, bool json, int timeout_ms)
{
	struct cl c = {
		.socket = ISERGWCTL_HA_SOCKET,
		.json = json,
		.timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS,
	};
	const struct cl_cmd *cmd = NULL;
	const char *unwanted;
	size_t words;
	int rc;

	if ((rc = parse_args(&c, argc, argv)))
		return rc;
	if (c.help || (c.npos && strcmp(c.pos[0], "help") == 0)) {
		usage(stdout);
		return ISERGWCTL_EXIT_OK;
	}
	if (c.npos == 0) {
		usage(stderr);
		return ISERGWCTL_EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !cmd; i++)
		if (strcmp(cmds[i].word, c.pos[0]) == 0 &&
		    (!cmds[i].word2 || (c.npos > 1 && strcmp(cmds[i].word2, c.pos[1]) == 0)))
			cmd = &cmds[i];
	if (!cmd && strcmp(c.pos[0], "config") == 0)
		return usage_err("config needs 'get' or 'apply'");
	if (!cmd && strcmp(c.pos[0], "token") == 0)
		return usage_err("token needs 'add', 'list' or 'revoke'");
	if (!cmd)
		return usage_err("unknown command '%s'", c.pos[0]);
	words = cmd->word2 ? 2 : 1;
	if (c.npos < words + cmd->nargs)
		return usage_err("%s%s%s needs %s", cmd->word, cmd->word2 ? " " : "",
				 cmd->word2 ? cmd->word2 : "", cmd->operands);
	if (c.npos > words + cmd->nargs)
		return usage_err("unexpected '%s'", c.pos[words + cmd->nargs]);
	unwanted = isergwctl_opt_unwanted(cl_opts, OPT_FIRST, c.given, cmd->opts);
	if (unwanted)
		return usage_err("%s%s%s does not take --%s", cmd->word, cmd->word2 ? " " : "",
				 cmd->word2 ? cmd->word2 : "", unwanted);
	for (size_t i = words; i < c.npos; i++) {
		if (!c.pos[i][0])
			return usage_err("%s: an empty operand", cmd->word);
		if (cmd->names && text_bad_at(c.pos[i], NAME_MAX_LEN, false) >= 0)
			return usage_err("%s: operand %zu is not a name (printable text of at most "
					 "%u bytes)", cmd->word, i - words + 1, NAME_MAX_LEN);
	}
	c.cmd = cmd;
	return cmd->run(&c, c.pos + words);
}
