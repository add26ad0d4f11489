/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's edges for fuzz_rest and fuzz_http: libmicrohttpd's
 * connection API, the HA agent, shutdown(2) of a connection (fake_api.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api.h"
#include "fake_api.h"
#include "common/log.h"

/* ------------------------------------------------------------ libmicrohttpd */

/* fake sockets: above any descriptor the process can hold, so never a real one */
#define FZ_FD_BASE 0x7fff0000

struct MHD_Response {
	char *body;
	size_t len;
	bool must_free;
	unsigned int refs;
	char *type;             /* Content-Type, for the check */
	bool close;             /* Connection: close */
};

struct MHD_Connection {
	bool open;
	int fd;
	struct sockaddr_storage addr;
	void *socket_context;
	void *req_cls;
	bool in_request;        /* the access handler was called for the request */
	bool shut;              /* shutdown(2) by conn_admit */
	bool suspended;
	union MHD_ConnectionInfo ci;
	const struct fz_request *rq;
	size_t fed;             /* body pieces given */
	bool head_only;         /* HEAD: no body to check */
	struct MHD_Response *resp;
	unsigned int code;
};

struct MHD_Daemon {
	MHD_AcceptPolicyCallback apc;
	void *apc_cls;
	MHD_AccessHandlerCallback dh;
	void *dh_cls;
	MHD_RequestCompletedCallback done;
	void *done_cls;
	MHD_NotifyConnectionCallback notify;
	void *notify_cls;
	MHD_LogCallback log;
	void *log_cls;
	bool running;
};

static struct MHD_Daemon daemon_;
static struct MHD_Connection conns[FZ_CONNS];
static bool trace;              /* FZ_TRACE set: every answer on stderr */

static void fz_die(const char *what, const char *detail) __attribute__((noreturn));

static void fz_die(const char *what, const char *detail)
{
	fprintf(stderr, "fake_api: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
				    MHD_AcceptPolicyCallback apc, void *apc_cls,
				    MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	va_list ap;
	int opt;

	(void)flags;
	(void)port;
	memset(&daemon_, 0, sizeof(daemon_));
	daemon_.apc = apc;
	daemon_.apc_cls = apc_cls;
	daemon_.dh = dh;
	daemon_.dh_cls = dh_cls;
	va_start(ap, dh_cls);
	while ((opt = va_arg(ap, int)) != MHD_OPTION_END) {
		switch (opt) {
		case MHD_OPTION_EXTERNAL_LOGGER:
			daemon_.log = va_arg(ap, MHD_LogCallback);
			daemon_.log_cls = va_arg(ap, void *);
			break;
		case MHD_OPTION_NOTIFY_COMPLETED:
			daemon_.done = va_arg(ap, MHD_RequestCompletedCallback);
			daemon_.done_cls = va_arg(ap, void *);
			break;
		case MHD_OPTION_NOTIFY_CONNECTION:
			daemon_.notify = va_arg(ap, MHD_NotifyConnectionCallback);
			daemon_.notify_cls = va_arg(ap, void *);
			break;
		case MHD_OPTION_SOCK_ADDR:
		case MHD_OPTION_ARRAY:      /* the thread pool, TLS: nothing for us */
			(void)va_arg(ap, void *);
			break;
		case MHD_OPTION_CONNECTION_LIMIT:
		case MHD_OPTION_LISTEN_BACKLOG_SIZE:
		case MHD_OPTION_CONNECTION_TIMEOUT:
			(void)va_arg(ap, unsigned int);
			break;
		case MHD_OPTION_CONNECTION_MEMORY_LIMIT:
			(void)va_arg(ap, size_t);
			break;
		default:
			va_end(ap);
			fz_die("MHD_start_daemon: an option the fake does not know", NULL);
		}
	}
	va_end(ap);
	if (!daemon_.apc || !daemon_.dh || !daemon_.done || !daemon_.notify)
		fz_die("MHD_start_daemon: a callback is missing", NULL);
	daemon_.running = true;
	return &daemon_;
}

void MHD_stop_daemon(struct MHD_Daemon *d)
{
	if (d != &daemon_)
		fz_die("MHD_stop_daemon: not the daemon", NULL);
	daemon_.running = false;
}

const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *c,
							enum MHD_ConnectionInfoType type, ...)
{
	switch (type) {
	case MHD_CONNECTION_INFO_SOCKET_CONTEXT:
		c->ci.socket_context = c->socket_context;
		return &c->ci;
	case MHD_CONNECTION_INFO_CLIENT_ADDRESS:
		c->ci.client_addr = (struct sockaddr *)&c->addr;
		return &c->ci;
	case MHD_CONNECTION_INFO_CONNECTION_FD:
		c->ci.connect_fd = c->fd;
		return &c->ci;
	default:
		return NULL;
	}
}

int MHD_get_connection_values(struct MHD_Connection *c, enum MHD_ValueKind kind,
			      MHD_KeyValueIterator it, void *cls)
{
	int n = 0;

	if (!c->rq)
		return 0;
	for (size_t i = 0; i < c->rq->nhdrs; i++) {
		const struct fz_hdr *h = &c->rq->hdrs[i];

		if (!(h->kind & (int)kind))
			continue;
		n++;
		if (it && it(cls, (enum MHD_ValueKind)h->kind, h->key, h->value) != MHD_YES)
			break;
	}
	return n;
}

const char *MHD_lookup_connection_value(struct MHD_Connection *c, enum MHD_ValueKind kind,
					const char *key)
{
	if (!c->rq)
		return NULL;
	for (size_t i = 0; i < c->rq->nhdrs; i++) {
		const struct fz_hdr *h = &c->rq->hdrs[i];

		if ((h->kind & (int)kind) && key && !strcasecmp(h->key, key))
			return h->value;
	}
	return NULL;
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
						     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->refs = 1;
	r->len = size;
	if (mode == MHD_RESPMEM_MUST_COPY) {
		r->body = malloc(size ? size : 1);
		if (!r->body) {
			free(r);
			return NULL;
		}
		memcpy(r->body, buffer, size);
		r->must_free = true;
	} else {
		r->body = buffer;
		r->must_free = mode == MHD_RESPMEM_MUST_FREE;
	}
	return r;
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *r, const char *header,
					const char *content)
{
	if (!r || !header || !content || strchr(content, '\n') || strchr(content, '\r'))
		return MHD_NO;  /* libmicrohttpd refuses these too */
	if (!strcasecmp(header, MHD_HTTP_HEADER_CONTENT_TYPE)) {
		free(r->type);
		r->type = strdup(content);
	} else if (!strcasecmp(header, MHD_HTTP_HEADER_CONNECTION) && !strcasecmp(content, "close")) {
		r->close = true;
	}
	return MHD_YES;
}

void MHD_destroy_response(struct MHD_Response *r)
{
	if (!r || --r->refs)
		return;
	if (r->must_free)
		free(r->body);
	free(r->type);
	free(r);
}

/* A JSON answer must be JSON, and UTF-8 (docs/api.md: every problem document). */
static void check_answer(const struct MHD_Connection *c, unsigned int code,
			 const struct MHD_Response *r)
{
	struct json_tokener *tok;
	json_object *o;

	if (code < 100 || code > 599)
		fz_die("an HTTP status out of range", NULL);
	/* the resources and problems; not the embedded OpenAPI document (150 KiB, static) */
	if (!r->type || !strstr(r->type, "json") || c->head_only || !r->len || r->len > 65536)
		return;
	tok = json_tokener_new();
	if (!tok)
		return;
	json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, r->body, (int)r->len);
	if (!o) {
		char head[200];

		snprintf(head, sizeof(head), "%.*s", (int)(r->len < 160 ? r->len : 160), r->body);
		fz_die("a JSON answer that is not UTF-8 JSON", head);
	}
	json_object_put(o);
	json_tokener_free(tok);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *c, unsigned int code,
				   struct MHD_Response *r)
{
	if (!c || !r || c->resp || !c->in_request)
		return MHD_NO;
	check_answer(c, code, r);
	r->refs++;
	c->resp = r;
	c->code = code;
	return MHD_YES;
}

void MHD_suspend_connection(struct MHD_Connection *c)
{
	c->suspended = true;
}

void MHD_resume_connection(struct MHD_Connection *c)
{
	c->suspended = false;
}

/* conn_admit closes an idle connection for a new one by shutdown(2) of its socket */
int shutdown(int fd, int how)
{
	if (fd >= FZ_FD_BASE && fd < FZ_FD_BASE + (int)FZ_CONNS) {
		conns[fd - FZ_FD_BASE].shut = true;
		return 0;
	}
	return (int)syscall(SYS_shutdown, fd, how);
}

static void mhd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void mhd_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	daemon_.log(daemon_.log_cls, fmt, ap);
	va_end(ap);
}

void fz_mhd_log(const char *line)
{
	if (daemon_.log)
		mhd_log("%s", line);
}

/* ------------------------------------------------------------ connections */

static void conn_free_resp(struct MHD_Connection *c)
{
	if (c->resp)
		MHD_destroy_response(c->resp);
	c->resp = NULL;
	c->code = 0;
}

/* the request on c ends (toe), as libmicrohttpd ends it */
static void req_end(struct MHD_Connection *c, enum MHD_RequestTerminationCode toe)
{
	if (c->in_request)
		daemon_.done(daemon_.done_cls, c, &c->req_cls, toe);
	if (c->req_cls)
		fz_die("the completion left the request's context", NULL);
	c->in_request = false;
	c->suspended = false;
	c->rq = NULL;
	c->fed = 0;
	conn_free_resp(c);
}

static void conn_end(struct MHD_Connection *c, enum MHD_RequestTerminationCode toe)
{
	if (!c->open)
		return;
	req_end(c, toe);
	daemon_.notify(daemon_.notify_cls, c, &c->socket_context, MHD_CONNECTION_NOTIFY_CLOSED);
	c->open = false;
	c->shut = false;
	c->socket_context = NULL;
}

/* connections conn_admit closed: their threads see the end and libmicrohttpd closes them */
static void conn_reap(void)
{
	for (size_t i = 0; i < FZ_CONNS; i++)
		if (conns[i].open && conns[i].shut)
			conn_end(&conns[i], MHD_REQUEST_TERMINATED_WITH_ERROR);
}

int fz_conn_open(unsigned int peer)
{
	struct MHD_Connection *c = NULL;
	enum MHD_Result ok;
	size_t i;

	for (i = 0; i < FZ_CONNS && !c; i++)
		if (!conns[i].open)
			c = &conns[i];
	if (!c)
		return -1;
	i = (size_t)(c - conns);
	memset(c, 0, sizeof(*c));
	c->fd = FZ_FD_BASE + (int)i;
	peer %= 8;
	if (peer < 4) {
		struct sockaddr_in *a = (struct sockaddr_in *)&c->addr;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)(40000 + i));
		a->sin_addr.s_addr = htonl(0x0a000001u + peer);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&c->addr;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)(40000 + i));
		a->sin6_addr.s6_addr[0] = 0xfd;
		a->sin6_addr.s6_addr[15] = (uint8_t)peer;
	}
	ok = daemon_.apc(daemon_.apc_cls, (struct sockaddr *)&c->addr,
			 peer < 4 ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	if (ok != MHD_YES) {
		conn_reap();
		return -1;
	}
	c->open = true;
	daemon_.notify(daemon_.notify_cls, c, &c->socket_context, MHD_CONNECTION_NOTIFY_STARTED);
	conn_reap();
	return c->open ? (int)i : -1;
}

bool fz_conn_open_p(int i)
{
	return i >= 0 && (size_t)i < FZ_CONNS && conns[i].open;
}

void fz_conn_close(int i)
{
	if (fz_conn_open_p(i))
		conn_end(&conns[i], MHD_REQUEST_TERMINATED_CLIENT_ABORT);
}

static bool call(struct MHD_Connection *c, const char *data, size_t *len)
{
	const struct fz_request *rq = c->rq;
	size_t zero = 0;

	c->in_request = true;
	return daemon_.dh(daemon_.dh_cls, c, rq->url, rq->method, rq->version, data,
			  len ? len : &zero, &c->req_cls) == MHD_YES;
}

/* the answer queued: sent, the request completed; the connection kept or closed */
static unsigned int answered(struct MHD_Connection *c, bool body_left)
{
	unsigned int code = c->code;
	const char *conn_hdr = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							   MHD_HTTP_HEADER_CONNECTION);
	bool close = c->resp->close || body_left || !strcmp(c->rq->version, "HTTP/1.0") ||
		     (conn_hdr && !strcasecmp(conn_hdr, "close"));

	if (trace)
		fprintf(stderr, "fz: %s %s -> %u %.*s\n", c->rq->method, c->rq->url, code,
			(int)(c->resp->len < 300 ? c->resp->len : 300),
			c->resp->body ? c->resp->body : "");
	req_end(c, MHD_REQUEST_TERMINATED_COMPLETED_OK);
	if (close)
		conn_end(c, MHD_REQUEST_TERMINATED_COMPLETED_OK);
	return code;
}

unsigned int fz_request_more(int i, size_t upto)
{
	struct MHD_Connection *c;

	if (!fz_conn_open_p(i) || !conns[i].rq)
		return 0;
	c = &conns[i];
	if (c->resp)    /* answered at its head (a refusal): the body is not read */
		return answered(c, c->fed < c->rq->nchunks);
	while (c->fed < c->rq->nchunks && upto) {
		const struct fz_chunk *k = &c->rq->chunks[c->fed++];
		size_t left = k->len;

		upto -= upto != SIZE_MAX;
		if (!left)
			continue;
		/* libmicrohttpd calls again with what the handler left */
		for (int tries = 0; left; tries++) {
			if (tries == 3)
				fz_die("the access handler does not take the body", NULL);
			if (!call(c, k->data + (k->len - left), &left)) {
				conn_end(c, MHD_REQUEST_TERMINATED_WITH_ERROR);
				return 0;
			}
		}
		if (c->resp)
			fz_die("an answer queued while the body arrives", NULL);
	}
	if (c->fed < c->rq->nchunks || !upto)
		return 0;
	/* the body ended: the final calls until an answer is queued */
	for (int tries = 0; !c->resp; tries++) {
		if (c->suspended)
			fz_die("a request suspended and never resumed (the agent answered)", NULL);
		if (tries == 4)
			fz_die("the access handler answers nothing", NULL);
		if (tries == 1 && upto == FZ_ONE_FINAL)
			return 0;       /* resumed, not called again yet */
		if (!call(c, NULL, NULL)) {
			conn_end(c, MHD_REQUEST_TERMINATED_WITH_ERROR);
			return 0;
		}
	}
	return answered(c, false);
}

unsigned int fz_request(int i, const struct fz_request *rq, size_t upto)
{
	struct MHD_Connection *c;

	if (!fz_conn_open_p(i) || conns[i].rq)
		return 0;
	c = &conns[i];
	c->rq = rq;
	c->fed = 0;
	c->head_only = !strcmp(rq->method, "HEAD");
	if (!call(c, NULL, NULL)) {
		conn_end(c, MHD_REQUEST_TERMINATED_WITH_ERROR);
		return 0;
	}
	if (c->resp)
		return answered(c, rq->nchunks > 0);
	return fz_request_more(i, upto);
}

/* ------------------------------------------------------------ the HA agent */

#define FZ_HA ((struct api_ha *)(uintptr_t)0x4a4a)
#define FZ_NODES_MAX 8u
#define FZ_CFG \
	"{\"nodes\":[" \
	"{\"name\":\"n1\",\"tpg_id\":1,\"portals\":[{\"url\":\"tcp://10.0.0.1:3260\",\"rel_port_id\":1}," \
	"{\"url\":\"iser://10.1.0.1\",\"rel_port_id\":4}]}," \
	"{\"name\":\"n2\",\"tpg_id\":2,\"portals\":[{\"url\":\"tcp://10.0.0.2:3260\",\"rel_port_id\":2}]}," \
	"{\"name\":\"n3\",\"tpg_id\":3}]," \
	"\"device_groups\":[{\"name\":\"dg1\",\"preferred_owner\":\"n1\"}," \
	"{\"name\":\"dg2\",\"preferred_owner\":\"n2\",\"failback\":\"manual\"}]," \
	"\"discovery_chap\":{\"user\":\"disc\",\"secret\":\"discsecret12\"}," \
	"\"targets\":[{\"iqn\":\"iqn.2026-11.org.isergw:t1\",\"alias\":\"one\"," \
	"\"chap\":{\"user\":\"u1\",\"secret\":\"secret123456\"}," \
	"\"acls\":[{\"initiator\":\"iqn.1994-05.com.redhat:h1\"," \
	"\"chap\":{\"user\":\"h1\",\"secret\":\"hostsecret12\"}}]," \
	"\"luns\":[{\"lun\":0,\"path\":\"/var/lib/isergw/a.img\",\"size\":\"1G\"," \
	"\"device_group\":\"dg1\"},{\"lun\":1,\"path\":\"iscsi://u%pw@10.0.0.9/iqn.2026-11.b:x/0\"," \
	"\"device_group\":\"dg2\"}]}," \
	"{\"iqn\":\"iqn.2026-11.org.isergw:t2\",\"luns\":[{\"path\":\"/dev/sdb\"}]}]}"

static struct {
	json_object *cfg;
	uint64_t gen;
	json_object *drained;   /* node name: true */
	json_object *owners;    /* device group: node */
	const uint8_t *tape;
	size_t tlen;
} ag;

void fz_agent_tape(const uint8_t *p, size_t n)
{
	ag.tape = p;
	ag.tlen = n;
}

static uint8_t tape_byte(void)
{
	if (!ag.tlen)
		return 0;
	ag.tlen--;
	return *ag.tape++;
}

static void agent_reset(void)
{
	json_object_put(ag.cfg);
	json_object_put(ag.drained);
	json_object_put(ag.owners);
	ag.cfg = json_tokener_parse(FZ_CFG);
	ag.drained = json_object_new_object();
	ag.owners = json_object_new_object();
	if (!ag.cfg || !ag.drained || !ag.owners)
		fz_die("the agent's document", NULL);
	json_object_object_add(ag.owners, "dg1", json_object_new_string("n1"));
	json_object_object_add(ag.owners, "dg2", json_object_new_string("n2"));
	ag.gen = 7;
	ag.tape = NULL;
	ag.tlen = 0;
}

static void agent_free(void)
{
	json_object_put(ag.cfg);
	json_object_put(ag.drained);
	json_object_put(ag.owners);
	memset(&ag, 0, sizeof(ag));
}

static json_object *cfg_array(const char *key)
{
	json_object *a;

	if (!json_object_object_get_ex(ag.cfg, key, &a) || !json_object_is_type(a, json_type_array))
		return NULL;
	return a;
}

static const char *obj_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* the names of the configuration's nodes (at most FZ_NODES_MAX) */
static size_t node_names(const char **names)
{
	json_object *a = cfg_array("nodes");
	size_t n = 0;

	for (size_t i = 0; a && i < json_object_array_length(a) && n < FZ_NODES_MAX; i++) {
		const char *s = obj_str(json_object_array_get_idx(a, i), "name");

		if (s)
			names[n++] = s;
	}
	return n;
}

static bool node_known(const char *name)
{
	const char *names[FZ_NODES_MAX];
	size_t n = node_names(names);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

static json_object *target_of(const char *iqn)
{
	json_object *a = cfg_array("targets");

	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *t = json_object_array_get_idx(a, i);
		const char *s = obj_str(t, "iqn");

		if (s && !strcmp(s, iqn))
			return t;
	}
	return NULL;
}

/* the reply as it comes off the wire: packed, then unpacked (NULL: none) */
static Isergw__Ha__ApiReply *wire(const Isergw__Ha__ApiReply *rep)
{
	size_t len = isergw__ha__api_reply__get_packed_size(rep);
	uint8_t *buf = malloc(len ? len : 1);
	Isergw__Ha__ApiReply *out;

	if (!buf)
		return NULL;
	isergw__ha__api_reply__pack(rep, buf);
	out = isergw__ha__api_reply__unpack(NULL, len, buf);
	free(buf);
	return out;
}

static const char *const errors[] = {
	"",
	"no quorum: this node's ring is not quorate",
	"the cluster is re-forming",
	"base generation 3 is not the cluster's (generation 9)",
	"targets[0].luns[1].block_size: 1000 is not 512 or 4096",
	"nodes[0] (n1): targets[1].luns[0].device_group: 'x' is not a device group of the cluster",
	"no device group dg9",
	"no node n9",
	"no target iqn.2026-11.org.isergw:t9",
	"targets[0].acls[0].initiator: \"IQN.x\" is not a valid iSCSI name",
	"nodes[1].portals[0].url: not a portal",
	"discovery_chap.secret: 12..16 bytes",
	"target iqn.2026-11.org.isergw:t2 numbers its LUNs by their place",
	"targets[0].luns[99]: taken",
	"draining n1 would leave dg1 without an owner",
	"\xff\xfe not UTF-8",
};

static const int statuses[] = {
	-ENOLCK, -EAGAIN, -ESTALE, -EINVAL, -ENOENT, -EHOSTDOWN, -EPERM, -EBUSY,
	-ETIMEDOUT, -EOPNOTSUPP, -EEXIST, -ENOSPC, -EIO, -EBADMSG, -ENOMEM, -1,
};

static char *names_applied[FZ_NODES_MAX];

/* a change made: the generation moves on, every node applied it (or n3 not yet) */
static void change_result(Isergw__Ha__ChangeResult *cr, bool pending)
{
	static char *pend[] = { (char *)"n3" };
	const char *names[FZ_NODES_MAX];
	size_t n = node_names(names);

	ag.gen++;
	cr->generation = ag.gen;
	cr->changed = true;
	for (size_t i = 0; i < n; i++)
		names_applied[i] = (char *)(uintptr_t)names[i];
	cr->applied = names_applied;
	cr->n_applied = pending && n ? n - 1 : n;
	if (pending) {
		cr->pending = pend;
		cr->n_pending = 1;
	}
}

/* the agent's answer to a change of one LUN (ChangeLun); 0 or a refusal */
static int change_lun(const Isergw__Ha__ChangeLun *cl, Isergw__Ha__ChangeResult *cr,
		      const char **why, bool pending)
{
	json_object *t = target_of(cl->target), *luns, *l, *v;
	uint32_t lun = cl->lun;

	if (cl->base_generation && cl->base_generation != ag.gen) {
		*why = errors[3];
		return -ESTALE;
	}
	if (!t) {
		*why = errors[8];
		return -ENOENT;
	}
	if (!json_object_object_get_ex(t, "luns", &luns) || !json_object_is_type(luns, json_type_array)) {
		luns = json_object_new_array();
		json_object_object_add(t, "luns", luns);
	}
	for (size_t i = 0; i < json_object_array_length(luns); i++)
		if (!json_object_object_get_ex(json_object_array_get_idx(luns, i), "lun", NULL)) {
			*why = errors[12];
			return -EOPNOTSUPP;
		}
	if (!cl->lun_json || !cl->lun_json[0]) {
		for (size_t i = 0; i < json_object_array_length(luns); i++) {
			if (json_object_object_get_ex(json_object_array_get_idx(luns, i), "lun", &v) &&
			    json_object_get_int64(v) == (int64_t)lun) {
				json_object_array_del_idx(luns, i, 1);
				change_result(cr, pending);
				cr->lun = lun;
				return 0;
			}
		}
		*why = "no such LUN";
		return -ENOENT;
	}
	l = json_tokener_parse(cl->lun_json);
	if (!json_object_is_type(l, json_type_object)) {
		json_object_put(l);
		*why = "lun_json: not a JSON object";
		return -EINVAL;
	}
	for (lun = cl->has_lun ? cl->lun : 0;; lun++) {
		bool taken = false;

		for (size_t i = 0; i < json_object_array_length(luns) && !taken; i++)
			taken = json_object_object_get_ex(json_object_array_get_idx(luns, i), "lun",
							  &v) && json_object_get_int64(v) == (int64_t)lun;
		if (!taken)
			break;
		if (cl->has_lun || lun >= REST_LUN_MAX) {
			json_object_put(l);
			*why = errors[13];
			return cl->has_lun ? -EEXIST : -ENOSPC;
		}
	}
	json_object_object_add(l, "lun", json_object_new_int64(lun));
	json_object_array_add(luns, l);
	change_result(cr, pending);
	cr->lun = lun;
	return 0;
}

/* The status the agent gives: its document, the members and the device groups. */
static void status_of(Isergw__Ha__ClusterStatus *st, Isergw__Ha__MemberStatus *ms,
		      Isergw__Ha__MemberStatus **msp, Isergw__Ha__DeviceGroupStatus *dg,
		      Isergw__Ha__DeviceGroupStatus **dgp, Isergw__Ha__GroupNodeState *gs,
		      Isergw__Ha__GroupNodeState **gsp, Isergw__Ha__LunFault *lf,
		      Isergw__Ha__LunFault **lfp, char *digest, size_t dlen, uint8_t f)
{
	const char *names[FZ_NODES_MAX];
	size_t n = node_names(names), ndg = 0;
	json_object *dgs = cfg_array("device_groups");

	snprintf(digest, dlen, "%016" PRIx64 "d1gest", (uint64_t)(ag.gen * 0x9e3779b97f4a7c15ull));
	st->cluster_name = (char *)"fz";
	st->node_name = (char *)"n1";
	st->nodeid = 1;
	st->quorate = !(f & 0x10);
	st->phase = (char *)(f & 0x10 ? "inquorate" : "synced");
	st->generation = ag.gen;
	st->digest = digest;
	st->protocol = 4;
	st->isergwd_connected = true;
	st->expected_votes = st->total_votes = (uint32_t)n;
	isergw__ha__lun_fault__init(lf);
	lf->target = (char *)"iqn.2026-11.org.isergw:t1";
	lf->lun = 1;
	lf->device_group = (char *)"dg2";
	lf->state = (char *)"offline";
	lf->reason = (char *)"the backend does not answer";
	*lfp = lf;
	for (size_t i = 0; i < n; i++) {
		json_object *d;

		isergw__ha__member_status__init(&ms[i]);
		ms[i].nodeid = (uint32_t)i + 1;
		ms[i].name = (char *)(uintptr_t)names[i];
		ms[i].corosync_member = ms[i].agent = ms[i].synced = !(i == 2 && (f & 0x20));
		ms[i].drained = json_object_object_get_ex(ag.drained, names[i], &d);
		ms[i].applied_generation = ag.gen - (i == 2 && (f & 0x40));
		ms[i].last_heard_ms = 100 * (uint32_t)i;
		ms[i].tpg_id = (uint32_t)i + 1;
		ms[i].dataplane = (char *)(i == 1 ? "degraded" : "healthy");
		ms[i].luns_online = 3;
		if (i == 1) {
			ms[i].luns_failed = 1;
			ms[i].luns = lfp;
			ms[i].n_luns = 1;
		}
		msp[i] = &ms[i];
	}
	st->members = msp;
	st->n_members = n;
	for (size_t i = 0; dgs && i < json_object_array_length(dgs) && ndg < FZ_NODES_MAX; i++) {
		json_object *o = json_object_array_get_idx(dgs, i), *ow;
		const char *name = obj_str(o, "name"), *pref = obj_str(o, "preferred_owner"),
			   *fb = obj_str(o, "failback");

		if (!name)
			continue;
		isergw__ha__device_group_status__init(&dg[ndg]);
		dg[ndg].name = (char *)(uintptr_t)name;
		dg[ndg].owner = (char *)(uintptr_t)(json_object_object_get_ex(ag.owners, name, &ow) ?
						    json_object_get_string(ow) : "");
		dg[ndg].preferred_owner = (char *)(uintptr_t)(pref ? pref : "");
		dg[ndg].failback = (char *)(uintptr_t)(fb ? fb : "immediate");
		/* every node's state of this group, FZ_NODES_MAX per group */
		dg[ndg].states = &gsp[ndg * FZ_NODES_MAX];
		for (size_t k = 0; k < n; k++) {
			Isergw__Ha__GroupNodeState *g = &gs[ndg * FZ_NODES_MAX + k];

			isergw__ha__group_node_state__init(g);
			g->node = (char *)(uintptr_t)names[k];
			g->tpg_id = (uint32_t)k + 1;
			g->state = (char *)(!strcmp(names[k], dg[ndg].owner) ? "ao" :
					    (f & 0x80) ? "transitioning" : "ano");
			g->pref = pref && !strcmp(pref, names[k]);
			gsp[ndg * FZ_NODES_MAX + k] = g;
		}
		dg[ndg].n_states = n;
		dgp[ndg] = &dg[ndg];
		ndg++;
	}
	st->device_groups = dgp;
	st->n_device_groups = ndg;
}

/* the agent's answer to req, or *rc and *why: the call failed (the fault tape says how) */
static Isergw__Ha__ApiReply *agent(const Isergw__Ha__ApiRequest *req, int *rc, const char **why)
{
	Isergw__Ha__ApiReply rep = ISERGW__HA__API_REPLY__INIT;
	Isergw__Ha__ClusterStatus st = ISERGW__HA__CLUSTER_STATUS__INIT;
	Isergw__Ha__ConfigDoc cd = ISERGW__HA__CONFIG_DOC__INIT;
	Isergw__Ha__ChangeResult cr = ISERGW__HA__CHANGE_RESULT__INIT;
	Isergw__Ha__TokenList tl = ISERGW__HA__TOKEN_LIST__INIT;
	Isergw__Ha__MemberStatus ms[FZ_NODES_MAX], *msp[FZ_NODES_MAX];
	Isergw__Ha__DeviceGroupStatus dg[FZ_NODES_MAX], *dgp[FZ_NODES_MAX];
	Isergw__Ha__GroupNodeState gs[FZ_NODES_MAX * FZ_NODES_MAX];
	Isergw__Ha__GroupNodeState *gsp[FZ_NODES_MAX * FZ_NODES_MAX];
	Isergw__Ha__LunFault lf, *lfp;
	Isergw__Ha__ApiReply *out;
	char digest[64], msg[REST_NAME_MAX + 64];
	uint8_t f = tape_byte();
	bool pending = (f & 15) == 11;
	const char *err = "";
	json_object *o;

	*rc = 0;
	*why = "";
	switch (f & 15) {
	case 8:
		*rc = -ETIMEDOUT;
		*why = "no answer on /run/isergw/ha.sock within 2000 ms";
		return NULL;
	case 9:
		*rc = -ECONNREFUSED;
		*why = "cannot connect to /run/isergw/ha.sock: Connection refused";
		return NULL;
	case 10:
		rep.status = statuses[f >> 4];
		rep.error = (char *)(uintptr_t)errors[tape_byte() % (sizeof(errors) / sizeof(errors[0]))];
		return wire(&rep);
	case 12:
		return wire(&rep);      /* no payload */
	case 13: {
		/* bytes of the tape as the reply */
		size_t n = tape_byte();

		if (n > ag.tlen)
			n = ag.tlen;
		out = isergw__ha__api_reply__unpack(NULL, n, ag.tape);
		ag.tape += n;
		ag.tlen -= n;
		if (!out) {
			*rc = -EBADMSG;
			*why = "an answer that is no ApiReply on /run/isergw/ha.sock";
		}
		return out;
	}
	case 14:
		ag.gen++;       /* another node changed the cluster meanwhile */
		break;
	case 15:
		tl.generation = ag.gen;
		rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_TOKENS;
		rep.tokens = &tl;
		return wire(&rep);
	default:
		break;
	}
	switch (req->op_case) {
	case ISERGW__HA__API_REQUEST__OP_GET_STATUS:
		status_of(&st, ms, msp, dg, dgp, gs, gsp, &lf, &lfp, digest, sizeof(digest), f);
		rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CLUSTER_STATUS;
		rep.cluster_status = &st;
		break;
	case ISERGW__HA__API_REQUEST__OP_GET_CONFIG:
		cd.generation = ag.gen;
		cd.config_json = (char *)(uintptr_t)json_object_to_json_string_ext(ag.cfg,
									       JSON_C_TO_STRING_PLAIN);
		cd.runtime_json = (char *)"{}";
		rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CONFIG;
		rep.config = &cd;
		break;
	case ISERGW__HA__API_REQUEST__OP_APPLY_CONFIG: {
		const Isergw__Ha__ApplyClusterConfig *ac = req->apply_config;

		if (ac->base_generation && ac->base_generation != ag.gen) {
			rep.status = -ESTALE;
			err = errors[3];
			break;
		}
		o = json_tokener_parse(ac->config_json);
		if (!json_object_is_type(o, json_type_object)) {
			json_object_put(o);
			rep.status = -EINVAL;
			err = "config: not a JSON object";
			break;
		}
		json_object_put(ag.cfg);
		ag.cfg = o;
		change_result(&cr, pending);
		break;
	}
	case ISERGW__HA__API_REQUEST__OP_DRAIN: {
		const Isergw__Ha__Drain *d = req->drain;

		if (!node_known(d->node)) {
			rep.status = -ENOENT;
			snprintf(msg, sizeof(msg), "no node %s", d->node);
			err = msg;
			break;
		}
		if (d->undrain)
			json_object_object_del(ag.drained, d->node);
		else
			json_object_object_add(ag.drained, d->node, json_object_new_boolean(1));
		change_result(&cr, pending);
		break;
	}
	case ISERGW__HA__API_REQUEST__OP_MOVE: {
		const Isergw__Ha__Move *m = req->move;

		if (!json_object_object_get_ex(ag.owners, m->device_group, NULL)) {
			rep.status = -ENOENT;
			snprintf(msg, sizeof(msg), "no device group %s", m->device_group);
			err = msg;
		} else if (!node_known(m->node)) {
			rep.status = -ENOENT;
			snprintf(msg, sizeof(msg), "no node %s", m->node);
			err = msg;
		} else {
			json_object_object_add(ag.owners, m->device_group,
					       json_object_new_string(m->node));
			change_result(&cr, pending);
		}
		break;
	}
	case ISERGW__HA__API_REQUEST__OP_CHANGE_LUN:
		rep.status = change_lun(req->change_lun, &cr, &err, pending);
		break;
	case ISERGW__HA__API_REQUEST__OP_GET_TOKENS:
		tl.generation = ag.gen;
		rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_TOKENS;
		rep.tokens = &tl;
		break;
	default:
		rep.status = -EOPNOTSUPP;
		err = "not a request of isergw-api";
		break;
	}
	if (cr.generation && !rep.status) {
		rep.payload_case = ISERGW__HA__API_REPLY__PAYLOAD_CHANGE;
		rep.change = &cr;
		if (pending) {
			rep.status = -ETIMEDOUT;
			err = "not applied by every live node within the wait";
		}
	}
	rep.error = (char *)(uintptr_t)err;
	return wire(&rep);
}

int api_ha_call_ex(struct api_ha *h, const Isergw__Ha__ApiRequest *req, uint32_t timeout_ms,
		   bool fresh, api_ha_cb cb, void *arg)
{
	Isergw__Ha__ApiRequest *in;
	Isergw__Ha__ApiReply *rep;
	const char *why;
	uint8_t *buf;
	size_t len;
	int rc;

	(void)timeout_ms;
	(void)fresh;
	if (h != FZ_HA)
		fz_die("api_ha_call: not the client", NULL);
	/* what the agent reads is what goes on the wire */
	len = isergw__ha__api_request__get_packed_size(req);
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	isergw__ha__api_request__pack(req, buf);
	in = isergw__ha__api_request__unpack(NULL, len, buf);
	free(buf);
	if (!in)
		fz_die("api_ha_call: a request the agent cannot read", NULL);
	rep = agent(in, &rc, &why);
	isergw__ha__api_request__free_unpacked(in, NULL);
	if (!rep && !rc) {
		rc = -ENOMEM;
		why = "out of memory";
	}
	/* the callback may start the next call (synchronously here: any thread may answer) */
	cb(arg, rc, rc ? NULL : rep, why);
	if (rep)
		isergw__ha__api_reply__free_unpacked(rep, NULL);
	return 0;
}

int api_ha_call(struct api_ha *h, const Isergw__Ha__ApiRequest *req, uint32_t timeout_ms,
		api_ha_cb cb, void *arg)
{
	return api_ha_call_ex(h, req, timeout_ms, false, cb, arg);
}

/* ------------------------------------------------------------ isergwd */
/*
 * isergwd's control socket at gwclient.c's API (api_gw_fetch, api_gw_call):
 * its status, two sessions, no counters; the same fault tape says when it
 * times out (8), cannot be reached (9), refuses (10) or answers a status of
 * four bytes of the tape (13).
 */

static CtlReply *gw_wire(const CtlReply *rep)
{
	size_t len = isergw__ctl__reply__get_packed_size(rep);
	uint8_t *buf = malloc(len ? len : 1);
	CtlReply *out;

	if (!buf)
		return NULL;
	isergw__ctl__reply__pack(rep, buf);
	out = ctl_reply_unpack(buf, len);
	free(buf);
	return out;
}

/* the reply to one request of op (a GetStatus, ListSessions, GetCounters, Logout), or a refusal */
static CtlReply *gw_reply(int op, const Isergw__Ctl__Logout *lo, int32_t status)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	Isergw__Ctl__StatusInfo si = ISERGW__CTL__STATUS_INFO__INIT;
	Isergw__Ctl__LunFault lf = ISERGW__CTL__LUN_FAULT__INIT, *lfp = &lf;
	Isergw__Ctl__SessionList sl = ISERGW__CTL__SESSION_LIST__INIT;
	Isergw__Ctl__Session ss[2], *ssp[2] = { &ss[0], &ss[1] };
	Isergw__Ctl__Connection cn = ISERGW__CTL__CONNECTION__INIT, *cnp = &cn;
	Isergw__Ctl__IoStats io = ISERGW__CTL__IO_STATS__INIT;
	Isergw__Ctl__Counters co = ISERGW__CTL__COUNTERS__INIT;
	Isergw__Ctl__LogoutResult lr = ISERGW__CTL__LOGOUT_RESULT__INIT;

	if (status) {
		rep.status = status;
		return gw_wire(&rep);
	}
	switch (op) {
	case ISERGW__CTL__REQUEST__OP_GET_STATUS:
		si.version = (char *)"0.1.0";
		si.pid = 4242;
		si.epoch = 3;
		si.lease_state = (char *)"valid";
		si.lease_remaining_ms = 1200;
		si.luns_online = 3;
		lf.target = (char *)"iqn.2026-11.org.isergw:t1";
		lf.lun = 1;
		lf.device_group = (char *)"dg2";
		lf.state = (char *)"failed";
		lf.reason = (char *)"/srv/a.img: cannot open: No such file or directory";
		si.lun_faults = &lfp;
		si.n_lun_faults = 1;
		si.lun_faults_total = 1;
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_STATUS_INFO;
		rep.status_info = &si;
		break;
	case ISERGW__CTL__REQUEST__OP_LIST_SESSIONS:
		for (size_t i = 0; i < 2; i++) {
			isergw__ctl__session__init(&ss[i]);
			ss[i].tsih = (uint32_t)i + 1;
			ss[i].initiator = (char *)"iqn.1994-05.com.redhat:h1";
			ss[i].isid = (char *)"023d00000001";
			ss[i].portal = (char *)"10.0.0.1:3260";
			ss[i].transport = (char *)(i ? "iser" : "tcp");
			ss[i].type = (char *)(i ? "discovery" : "normal");
			ss[i].target = (char *)(i ? "" : "iqn.2026-11.org.isergw:t1");
		}
		cn.cid = 1;
		cn.peer = (char *)"10.0.0.7:51234";
		cn.local = (char *)"10.0.0.1:3260";
		cn.state = (char *)"full-feature";
		cn.login_time = 1795000000;
		ss[0].connections = &cnp;
		ss[0].n_connections = 1;
		io.cmds_read = 10;
		io.bytes_read = 40960;
		ss[0].stats = &io;
		sl.sessions = ssp;
		sl.n_sessions = 2;
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_SESSIONS;
		rep.sessions = &sl;
		break;
	case ISERGW__CTL__REQUEST__OP_GET_COUNTERS:
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_COUNTERS;
		rep.counters = &co;
		break;
	case ISERGW__CTL__REQUEST__OP_LOGOUT:
		if (lo->who_case != ISERGW__CTL__LOGOUT__WHO_TSIH || lo->tsih < 1 || lo->tsih > 2) {
			rep.status = -ENOENT;
			rep.error = (char *)"no such session";
			break;
		}
		lr.sessions = 1;
		rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_LOGOUT;
		rep.logout = &lr;
		break;
	default:
		rep.status = -ENOENT;
		rep.error = (char *)"no such device group";
		break;
	}
	return gw_wire(&rep);
}

/* a fault of the tape for isergwd: -errno with err, or 0 (and *status for a refusal) */
static int gw_fault(int *status, char *err, size_t errlen)
{
	uint8_t f = tape_byte();

	*status = 0;
	switch (f & 15) {
	case 8:
		snprintf(err, errlen, "no answer within 1000 ms");
		return -ETIMEDOUT;
	case 9:
		snprintf(err, errlen, "cannot connect to /run/isergw/isergwd.sock: Connection refused");
		return -ECONNREFUSED;
	case 10:
		*status = statuses[f >> 4];
		return 0;
	case 13: {
		/* any status at all, four bytes of the tape */
		uint32_t v = 0;

		for (int i = 0; i < 4; i++)
			v = v << 8 | tape_byte();
		*status = (int32_t)v;
		return 0;
	}
	default:
		return 0;
	}
}

int api_gw_call(const char *socket_path, int timeout_ms, const CtlRequest *req, CtlReply **rep,
		char *err, size_t errlen)
{
	int status, rc = gw_fault(&status, err, errlen);

	(void)socket_path;
	(void)timeout_ms;
	if (rc)
		return rc;
	*rep = gw_reply((int)req->op_case, req->logout, status);
	if (!*rep) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void api_gw_snapshot_free(struct api_gw_snapshot *s)
{
	if (s->status)
		ctl_reply_free(s->status);
	if (s->sessions)
		ctl_reply_free(s->sessions);
	if (s->counters)
		ctl_reply_free(s->counters);
	for (size_t i = 0; i < s->nalua; i++)
		ctl_reply_free(s->alua[i]);
	memset(s, 0, sizeof(*s));
}

int api_gw_fetch(const char *socket_path, int timeout_ms, unsigned int what, char *const *dgs,
		 size_t ndgs, struct api_gw_snapshot *s, char *err, size_t errlen)
{
	int status, rc = gw_fault(&status, err, errlen);

	(void)socket_path;
	(void)timeout_ms;
	(void)dgs;
	(void)ndgs;
	memset(s, 0, sizeof(*s));
	if (rc)
		return rc;
	if (status) {
		snprintf(err, errlen, "isergwd refused: %s", strerror(-status));
		return status;
	}
	s->status = gw_reply(ISERGW__CTL__REQUEST__OP_GET_STATUS, NULL, 0);
	if (what & API_GW_FULL) {
		s->sessions = gw_reply(ISERGW__CTL__REQUEST__OP_LIST_SESSIONS, NULL, 0);
		s->counters = gw_reply(ISERGW__CTL__REQUEST__OP_GET_COUNTERS, NULL, 0);
	}
	if (!s->status || ((what & API_GW_FULL) && (!s->sessions || !s->counters))) {
		api_gw_snapshot_free(s);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------ the API */

static struct api api_;
static struct api_tokens tokens_;

void fz_init(void)
{
	static const char file[] =
		"admin admin sha256:a0a1a2a3a4a5a6a7a8a9aaabacadaeaf:"
		"4353e662d8b7b4127e2231bb7dc448dc35cc5a893631bdd01574e802d768244a\n"
		"viewer read-only sha256:a0a1a2a3a4a5a6a7a8a9aaabacadaeaf:"
		"6c5f937341ae436e3725774d82c049f1ad53613b96d99d45aaf2498d30d67f4d\n";
	char err[256];

	gw_log_set_level(GW_LOG_ERR);
	trace = getenv("FZ_TRACE") != NULL;
	if (api_tokens_parse(file, sizeof(file) - 1, &tokens_, err, sizeof(err)))
		fz_die("the token file", err);
}

void fz_begin(const struct fz_settings *s)
{
	struct api *a = &api_;

	memset(a, 0, sizeof(*a));
	snprintf(a->opts.listen, sizeof(a->opts.listen), "127.0.0.1:8080");
	a->opts.addr.ss_family = AF_INET;
	snprintf(a->opts.gw_socket, sizeof(a->opts.gw_socket), "/run/isergw/isergwd.sock");
	a->opts.gw_timeout_ms = 1000;
	snprintf(a->opts.ha_socket, sizeof(a->opts.ha_socket), "/run/isergw/ha.sock");
	a->opts.ha_timeout_ms = 2000;
	a->opts.change_wait_ms = 5000;
	a->opts.threads = 1;
	a->opts.conn_limit = s->conn_limit ? s->conn_limit : 1;
	a->opts.conn_limit_ip = s->conn_limit_ip ? s->conn_limit_ip : 1;
	a->opts.idle_timeout_s = 30;
	a->opts.metrics_open = s->metrics_open;
	a->opts.max_request_rate = 0;   /* the pacer is a thread of its own: off */
	pthread_mutex_init(&a->stats_lock, NULL);
	pthread_rwlock_init(&a->tokens_lock, NULL);
	if (s->tokens)
		a->tokens = tokens_;    /* immutable, never freed here */
	a->tokens_any = s->tokens;
	api_cache_init(&a->cache);
	api_scrape_init(&a->scrape);
	a->ha = s->agent ? FZ_HA : NULL;
	agent_reset();
	memset(conns, 0, sizeof(conns));
	if (api_http_start(a))
		fz_die("api_http_start", NULL);
}

void fz_end(void)
{
	struct api *a = &api_;

	for (size_t i = 0; i < FZ_CONNS; i++)
		if (conns[i].open)
			conn_end(&conns[i], MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN);
	api_http_stop(a);
	api_scrape_destroy(&a->scrape);
	api_cache_destroy(&a->cache);
	pthread_rwlock_destroy(&a->tokens_lock);
	pthread_mutex_destroy(&a->stats_lock);
	agent_free();
}
