/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control socket's wire layer, shared by isergwd (gateway/ctl/) and its
 * clients (isergwctl): protobuf in the frames of common/ipc.h (4-byte
 * big-endian length, then that many bytes), request decoding with the
 * structural checks every operation needs, and blocking helpers for clients.
 * No sockets are opened here; see docs/control.md for the protocol.
 */
#ifndef ISERGW_CTL_WIRE_H
#define ISERGW_CTL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ipc.h"
#include "isergw_ctl.pb-c.h"

#define CTL_FRAME_HDR        GW_IPC_FRAME_HDR
#define CTL_FRAME_MAX        (1u << 20)     /* largest frame body, either direction */
/* but a Reply of the daemon may be this long (GetCounters with per-LUN histograms) */
#define CTL_REPLY_FRAME_MAX  (16u << 20)
#define CTL_ALUA_MAX_GROUPS  64u
#define CTL_TRANSITION_MAX_MS 600000u       /* 10 minutes */
#define CTL_DG_NAME_MAX      63u
#define CTL_INITIATOR_MAX    223u           /* an iSCSI name (also ChangeLun's target) */
#define CTL_LUN_MAX          16384u         /* ChangeLun: LUNs 0..16383 */
#define CTL_LOGOUT_GRACE_DEFAULT_S 10u
#define CTL_LOGOUT_GRACE_MAX_S     3600u
#define CTL_REASON_MAX       255u           /* AluaRequestDone.reason */
#define CTL_IPORT_MAX        255u           /* an initiator port name */
#define CTL_ERRNO_MAX        4095           /* statuses are 0 or -1..-4095 */
#define CTL_EVENT_QUEUE_MAX  64u            /* events waiting per subscriber */
#define CTL_ALUA_MAP_MAX_DG  256u           /* device groups in one SetAluaMap */
#define CTL_PR_FENCE_MAX     64u            /* SetAluaMap.backend_pr_fence keys */
#define CTL_LEASE_AHEAD_MAX_MS 60000u       /* RenewLease: how far ahead a lease may end */

typedef Isergw__Ctl__Request CtlRequest;

/* The device group a name means: "" is "default". */
static inline const char *ctl_dg_name(const char *dg)
{
	return dg && dg[0] ? dg : "default";
}

/* protobuf-c declares string fields `char *` though packing only reads them. */
static inline char *ctl_str(const char *s)
{
	return (char *)(uintptr_t)s;
}

typedef Isergw__Ctl__Reply CtlReply;

/* The frame reader of common/ipc.h, under the names its clients know. */
#define ctl_frame_rx gw_frame_rx
static inline void ctl_frame_rx_init(struct gw_frame_rx *rx)
{
	gw_frame_rx_init(rx);
}

static inline void ctl_frame_rx_reset(struct gw_frame_rx *rx)
{
	gw_frame_rx_reset(rx);
}

/* gw_frame_rx_read: 1 a whole frame, 0 more needed, -ENOTCONN, -EPIPE, -EMSGSIZE, -errno. */
static inline int ctl_frame_rx_read(struct gw_frame_rx *rx, int fd, uint32_t max)
{
	return gw_frame_rx_read(rx, fd, max);
}

/*
 * hdr + packed message in one malloc'd buffer; -EMSGSIZE above CTL_FRAME_MAX
 * (CTL_REPLY_FRAME_MAX for a Reply).
 */
int ctl_frame_pack(const ProtobufCMessage *m, uint8_t **out, size_t *len);

/*
 * Allocations of one reply (isergwd's, the agent's), freed together once it
 * is packed. Zeroed to start; any allocation that failed sets failed.
 */
struct arena {
	void **p;
	size_t n, cap;
	bool failed;
};

/* size bytes, zeroed, or NULL (a->failed set). */
void *ctl_arena_alloc(struct arena *a, size_t size);
/* A copy of s, or "" when out of memory (a->failed tells). */
char *ctl_arena_strdup(struct arena *a, const char *s);
void ctl_arena_free(struct arena *a);

/*
 * Unpack and check a Request: a known operation, enum values that exist,
 * numbers and strings in range, no duplicate groups. On error returns a
 * negative errno (-EBADMSG: not a Request, -EOPNOTSUPP: unknown operation,
 * -EINVAL: a bad field) and writes the reason into err.
 */
int ctl_request_decode(const uint8_t *buf, size_t len, CtlRequest **out, char *err,
		       size_t errlen);
void ctl_request_free(CtlRequest *r);
/* Every enum field of m (recursively) holds a value its enum defines. */
int ctl_check_enums(const ProtobufCMessage *m, char *err, size_t errlen);

CtlReply *ctl_reply_unpack(const uint8_t *buf, size_t len);
void ctl_reply_free(CtlReply *r);
/*
 * Unpack and check a frame from the daemon: a Reply whose enum values exist;
 * an Event's fields in range (request id, groups, names). -EBADMSG (not a
 * Reply) or -EINVAL with the reason in err.
 */
int ctl_reply_decode(const uint8_t *buf, size_t len, CtlReply **out, char *err, size_t errlen);
/* The frame is an Event pushed to a subscriber, not the answer to a request. */
static inline int ctl_reply_is_event(const CtlReply *r)
{
	return r->payload_case == ISERGW__CTL__REPLY__PAYLOAD_EVENT;
}

/* Name of an operation ("get_status"), for log lines. */
const char *ctl_op_name(const CtlRequest *r);
/* "ao", "ano", "standby", "unavailable", "offline", "transitioning" ("?" otherwise). */
const char *ctl_alua_state_name(int state);
int ctl_alua_state_parse(const char *s, int *state);

/*
 * Blocking client helpers. A message (a Request, or the agent's ApiRequest)
 * packed into one frame and written whole: 0 or a negative errno.
 */
int ctl_frame_send(int fd, const ProtobufCMessage *m);
/* Send a request, read one reply (timeout_ms <= 0: wait). */
int ctl_send_request(int fd, const CtlRequest *req);
int ctl_recv_reply(int fd, CtlReply **out, int timeout_ms);
/*
 * The next frame from the daemon, reply or event, checked by
 * ctl_reply_decode (timeout_ms <= 0: wait). -ETIMEDOUT, -EPIPE/-ENOTCONN
 * (closed), -EBADMSG/-EINVAL (reason in err).
 */
int ctl_recv_frame(int fd, CtlReply **out, int timeout_ms, char *err, size_t errlen);

#endif
