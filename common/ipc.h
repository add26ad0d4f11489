/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one local IPC endpoint of the daemons: length-prefixed frames (a
 * 4-byte big-endian length, then that many bytes) on a unix stream socket.
 * What the bytes mean (protobuf: proto/ctl_wire.h, proto/isergw_ha.proto) is
 * the owner's business; this file owns the socket side.
 *
 * Server (isergwd's control socket, the HA agent's local API): the listening
 * socket (gw_unix_listen), accept with SO_PEERCRED (uid 0 and the daemon's
 * own uid only), a client limit, per-client receive buffer and send queue,
 * all on one reactor. A client is served one request at a time: once a
 * frame was handed to the owner, nothing more is read from that client until
 * the owner's reply has been written (backpressure: a client that does not
 * read its replies stops being read). Frames the owner pushes unasked
 * (events) queue beside the reply, at most max_push of them per client; the
 * rest are refused (-ENOBUFS), never waited for.
 *
 * Client: a non-blocking connect bounded by a deadline, blocking frame
 * reads with a timeout.
 */
#ifndef ISERGW_COMMON_IPC_H
#define ISERGW_COMMON_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/list.h"
#include "common/reactor.h"

#define GW_IPC_FRAME_HDR 4u
#define GW_IPC_PATH_MAX  sizeof(((struct sockaddr_un *)0)->sun_path)

/* ------------------------------------------------------------ frames */

/* Incremental reader of one frame from a (non-blocking) stream socket. */
struct gw_frame_rx {
	uint8_t hdr[GW_IPC_FRAME_HDR];
	uint32_t hdr_have;
	uint32_t len;           /* body length, once the header is complete */
	uint32_t have;          /* body bytes read */
	uint8_t *body;
};

void gw_frame_rx_init(struct gw_frame_rx *rx);
/* Forget a partial or complete frame (frees the body). */
void gw_frame_rx_reset(struct gw_frame_rx *rx);
/*
 * Read what is available. Returns 1 when a whole frame is in rx->body and
 * rx->len (it stays there until gw_frame_rx_reset), 0 when more bytes are
 * needed (EAGAIN), -ENOTCONN when the peer closed between frames, -EPIPE when
 * it closed in the middle of one, -EMSGSIZE when the header announces more
 * than max bytes (nothing of the body is read or allocated), or -errno.
 */
int gw_frame_rx_read(struct gw_frame_rx *rx, int fd, uint32_t max);
/* The header of a frame of len bytes, into hdr[0..3]. */
void gw_frame_hdr_put(uint8_t *hdr, uint32_t len);

/* ------------------------------------------------------------ client side */

/*
 * Start a non-blocking, close-on-exec connection to the unix stream socket at
 * path on *fd (a new socket when *fd < 0; it stays *fd's, -1 when socket()
 * failed). 0 connected, -EINPROGRESS (writable once connected), -EAGAIN (the
 * listen backlog is full: call again later with the same fd),
 * -ENAMETOOLONG or -errno.
 */
int gw_ipc_connect_start(const char *path, int *fd);
/*
 * The same, waiting up to timeout_ms (<= 0: not at all) for a full backlog:
 * the connected fd (non-blocking), or -ETIMEDOUT, -errno.
 */
int gw_ipc_connect(const char *path, int timeout_ms);
/*
 * Write buf[*off..len) to a non-blocking socket as far as it takes it
 * (MSG_NOSIGNAL), advancing *off: 1 all written, 0 it would block, -errno
 * (-EPIPE when it took nothing).
 */
int gw_ipc_send_some(int fd, const uint8_t *buf, size_t len, size_t *off);
/*
 * Wait for one whole frame of at most max bytes into rx (timeout_ms <= 0:
 * wait for ever): 0, -ETIMEDOUT, or gw_frame_rx_read's errors.
 */
int gw_frame_recv(int fd, struct gw_frame_rx *rx, uint32_t max, int timeout_ms);

/* ------------------------------------------------------------ server side */

struct gw_ipc_server;
struct gw_ipc_conn;

struct gw_ipc_ops {
	/* A client is accepted: set up its private area (gw_ipc_conn_priv); -errno refuses it. */
	int (*open)(struct gw_ipc_conn *c);
	/*
	 * One request: body (len bytes) is valid during the call. The client is
	 * not read again until gw_ipc_reply has been called for it and the
	 * reply written.
	 */
	void (*frame)(struct gw_ipc_conn *c, const uint8_t *body, uint32_t len);
	/*
	 * Answer with an error status and the reason (the owner packs its own
	 * error reply and calls gw_ipc_reply): refusals at accept and frames
	 * that put the stream out of step.
	 */
	void (*reply_error)(struct gw_ipc_conn *c, int status, const char *why);
	/* The socket is closed (the private area lives on while held). Optional. */
	void (*close)(struct gw_ipc_conn *c);
};

struct gw_ipc_params {
	const char *comp;               /* log component */
	const char *what;               /* "control socket": logs, refusals */
	const char *client;             /* "control client": a client's name is "<client> pid N uid N" */
	struct reactor *r;              /* every callback runs on it */
	unsigned int max_clients;
	/* beyond max_clients: this answer (-EBUSY), or NULL: closed at once, no answer */
	const char *busy_why;
	unsigned int max_push;          /* pushed frames queued per client */
	uint32_t frame_max;             /* largest request body */
	size_t priv_size;               /* the owner's area per client */
	const struct gw_ipc_ops *ops;
	void *arg;                      /* gw_ipc_server_arg */
};

/* A client; the fields are read-only for the owner. */
struct gw_ipc_conn {
	struct gw_ipc_server *srv;
	int fd;
	struct reactor_fd h;
	struct gw_frame_rx rx;
	struct list_head txq;           /* queued frames; the first is being written */
	size_t tx_off;                  /* bytes of the first written */
	unsigned int npushed;           /* pushed frames in txq */
	unsigned int holds;             /* gw_ipc_conn_hold minus releases */
	bool in_request;                /* a request handed to the owner, not yet answered */
	bool reply_queued;              /* its reply is in txq */
	bool close_after_tx;            /* close once the reply is written */
	bool closed;                    /* socket closed; freed when no longer held */
	char name[64];                  /* "<client> pid N uid N" */
	struct list_head link;          /* srv->conns, then srv->closed */
	struct reactor_deferred free_work;
	max_align_t priv[];
};

struct gw_ipc_server {
	struct gw_ipc_params p;
	char path[GW_IPC_PATH_MAX];
	int lfd;
	struct reactor_fd lh;
	struct reactor_accept_guard guard;      /* out of descriptors: a pause, not a spin */
	struct list_head conns;         /* open clients, in order of arrival */
	struct list_head closed;        /* closed, waiting for their free */
	size_t nconns;
	uint64_t refused;               /* clients refused (too many) since the last log line */
	uint64_t refused_logged_ms;
};

/* The server without its socket (a test or fuzz target adds clients by hand). */
int gw_ipc_server_create(const struct gw_ipc_params *p, struct gw_ipc_server **out);
/* Listen at path (gw_unix_listen, backlog 16) on the server's reactor. */
int gw_ipc_listen(struct gw_ipc_server *s, const char *path);
/* gw_ipc_server_create and gw_ipc_listen: the server serving path, or -errno (nothing left). */
int gw_ipc_server_start(const struct gw_ipc_params *p, const char *path,
			struct gw_ipc_server **out);
/* Close the listening socket and remove its file (nothing when not listening). */
void gw_ipc_unlisten(struct gw_ipc_server *s);
/* Close every client, free them (held ones too) and the server; unlistens. */
void gw_ipc_server_destroy(struct gw_ipc_server *s);
/*
 * A connected stream socket (non-blocking, owned by the server from here on)
 * with its peer's credentials, as if accepted: 0, or -errno (fd not taken).
 */
int gw_ipc_conn_add(struct gw_ipc_server *s, int fd, const struct ucred *cred);

static inline void *gw_ipc_conn_priv(struct gw_ipc_conn *c)
{
	return c->priv;
}

/* The client whose private area priv is. */
static inline struct gw_ipc_conn *gw_ipc_priv_conn(void *priv)
{
	return container_of((max_align_t *)priv, struct gw_ipc_conn, priv[0]);
}

static inline void *gw_ipc_server_arg(const struct gw_ipc_server *s)
{
	return s->p.arg;
}

/* The open clients: list_for_each_safe over s->conns, list_entry(pos, struct gw_ipc_conn, link). */

/*
 * Answer the request in service: buf (len bytes, a whole frame, malloc'd) is
 * the connection's from here; written at once as far as the socket takes it.
 * Nothing happens (buf freed) when the client is closed.
 */
void gw_ipc_reply(struct gw_ipc_conn *c, uint8_t *buf, size_t len);
/* The next reply is the last: the client is closed once it is written. */
void gw_ipc_close_after_reply(struct gw_ipc_conn *c);
/*
 * Push a frame the client did not ask for (an event): -ENOBUFS when max_push
 * are queued already, -ENOTCONN when closed (buf freed in both cases).
 */
int gw_ipc_push(struct gw_ipc_conn *c, uint8_t *buf, size_t len);
/* Whether gw_ipc_push would queue a frame now. */
bool gw_ipc_push_room(const struct gw_ipc_conn *c);
/*
 * Keep the client's memory (and private area) beyond its close, while the
 * owner still points at it (a request served asynchronously).
 */
void gw_ipc_conn_hold(struct gw_ipc_conn *c);
void gw_ipc_conn_release(struct gw_ipc_conn *c);
/* Close the client now (its close callback runs; freed later, once not held). */
void gw_ipc_conn_close(struct gw_ipc_conn *c);

#endif
