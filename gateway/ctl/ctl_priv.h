/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the control socket's server (ctl.c) and its operations (ctl_ops*.c)
 * share; not for use outside gateway/ctl/.
 *
 *   ctl.c              the control socket on the IPC endpoint (common/ipc.h:
 *                      SO_PEERCRED, frames, clients and their queues),
 *                      subscriptions, dispatch, the thread
 *   ctl_ops.c          GetStatus, ApplyConfig (epochs), Subscribe
 *   ctl_ops_alua.c     Set/GetAluaStates, SetAluaMap, transitions, AluaRequestDone,
 *                      ALUA events
 *   ctl_ops_lease.c    RenewLease, StepDown, GetLease, the lease's timer
 *   ctl_ops_reactors.c ListSessions, GetCounters, Logout: answered by the reactors
 *
 * Everything here runs on the control thread unless said otherwise.
 */
#ifndef ISERGW_CTL_PRIV_H
#define ISERGW_CTL_PRIV_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "core/iscsi.h"
#include "common/ipc.h"
#include "ctl/ctl.h"
#include "ctl_wire.h"

#define COMP "ctl"

/* A control client: the private area of its IPC connection (common/ipc.h). */
struct ctl_client {
	struct gw_ctl *ctl;
	struct gw_ipc_conn *conn;
	const char *name;               /* "control client pid N uid N" */
	bool busy;                      /* a request is in service, answered by ctl_client_done */
	bool held;                      /* the connection is held for it */
	bool subscribed;                /* receives events */
	uint64_t dropped;               /* events dropped since the last one queued */
};

/* The states of one device group in an ALUA request, groups sorted by id. */
struct alua_set {
	char dg[CTL_DG_NAME_MAX + 1];   /* as asked ("" is the default group) */
	size_t n;
	struct scsi_alua_update u[CTL_ALUA_MAX_GROUPS];
};

/*
 * One ALUA request (SetAluaStates: one device group; SetAluaMap: several),
 * normalised for the same-epoch comparison: device groups sorted by name,
 * "" as "default".
 */
struct alua_map {
	size_t n;
	struct alua_set *dg;            /* n of them (malloc'd) */
	uint32_t transition_ms;
	bool map;                       /* SetAluaMap: only changing groups transition; AluaMap reply */
};

struct gw_ctl {
	struct gw *gw;
	int (*load)(void *arg, const char *json, struct gw_config **out, char *err, size_t errlen);
	int (*load_file)(void *arg, struct gw_config **out, char *err, size_t errlen);
	const char *config_path;
	void *load_arg;
	struct reactor *r;
	pthread_t thread;
	pthread_mutex_t reload_lock;    /* gw_reload from here or from SIGHUP */
	atomic_uint inflight;           /* requests out on the reactors, events on their way here */
	atomic_uint nsubscribers;       /* clients subscribed to events */
	uint64_t start_ms;              /* monotonic */
	uint64_t start_unix_ms;         /* the same instant, wall clock (StatusInfo.start_time_ms) */
	/* ---- control thread only ---- */
	struct gw_ipc_server *srv;      /* the socket and its clients */
	uint64_t epoch;                 /* newest accepted */
	uint64_t config_epoch;
	json_object *config_doc;        /* the document applied at config_epoch */
	uint64_t alua_epoch;
	struct alua_map alua_last;      /* the request accepted at alua_epoch */
	/* an ALUA transition in progress */
	struct reactor_timer transition_timer;
	struct ctl_client *transition_client;
	struct alua_map transition_final;
	uint64_t event_seq;             /* of the last event */
	/* the ALUA lease: armed for its next change of phase (ctl_ops_lease.c) */
	struct reactor_timer lease_timer;
};

/* ------------------------------------------------------------ server (ctl.c) */

/*
 * The control state without its socket or thread: gw_ctl_start is this,
 * the listening socket and the thread; gw_ctl_stop ends with ctl_destroy.
 * A test or fuzz target drives it by hand: ctl_client_add for a connected
 * stream socket (fd non-blocking, owned by the client from then on) with
 * its peer's credentials, reactor_poll(ctl->r) for its events.
 */
int ctl_create(struct gw *gw, const struct gw_ctl_params *p, struct gw_ctl **out);
void ctl_destroy(struct gw_ctl *ctl);
int ctl_client_add(struct gw_ctl *ctl, int fd, const struct ucred *cred);

/* Pack and queue a reply, then write what the socket takes. */
void ctl_client_send(struct ctl_client *c, CtlReply *rep);
/* Finish an asynchronous request: reply (unless the client went away). */
void ctl_client_done(struct ctl_client *c, CtlReply *rep);
/* Push an event to a subscriber; false when its queue is full (dropped) or it is gone. */
bool ctl_client_push_event(struct ctl_client *c, Isergw__Ctl__Event *ev);
/* On the control reactor: ev numbered and pushed to every subscriber; how many took it. */
unsigned int ctl_publish(struct gw_ctl *ctl, Isergw__Ctl__Event *ev);
/* From any thread: run fn(m) on the control reactor, counted in inflight; -ENOMEM frees m. */
int ctl_post(struct gw_ctl *ctl, reactor_fn fn, void *m);
/*
 * An event the SCSI layer hands over from a command's reactor: ctl_event_new allocates the
 * message to copy it into (NULL with *rc -ENOTCONN when nobody subscribes, or -ENOMEM),
 * ctl_post sends it, and its handler ends with ctl_event_done (frees it, drops inflight).
 */
void *ctl_event_new(struct gw_ctl *ctl, size_t size, int *rc);
void ctl_event_done(struct gw_ctl *ctl, void *m);
/* Log the refusal and answer it with status rc and the reason why. */
void ctl_reply_refused(struct ctl_client *c, const CtlRequest *req, int rc, const char *why);
/* The same answer without the log line (the caller logged the reason). */
void ctl_reply_err(struct ctl_client *c, int status, const char *why);

/* ------------------------------------------------------------ operations */

/* ctl_ops.c */
void ctl_op_get_status(struct ctl_client *c);
void ctl_op_apply_config(struct ctl_client *c, const CtlRequest *req);
void ctl_op_reload_config(struct ctl_client *c, const CtlRequest *req);
void ctl_op_change_lun(struct ctl_client *c, const CtlRequest *req);
void ctl_op_subscribe(struct ctl_client *c);

/* ctl_ops_alua.c */
void ctl_op_set_alua(struct ctl_client *c, const CtlRequest *req);
void ctl_op_set_alua_map(struct ctl_client *c, const CtlRequest *req);
/* Frees what the ALUA requests kept (alua_last, transition_final): at stop. */
void ctl_alua_free(struct gw_ctl *ctl);
void ctl_op_get_alua(struct ctl_client *c, const CtlRequest *req);
void ctl_op_alua_request_done(struct ctl_client *c, const CtlRequest *req);
void ctl_op_lu_state_apply(struct ctl_client *c, const CtlRequest *req);
void ctl_op_lu_state_done(struct ctl_client *c, const CtlRequest *req);
int ctl_lu_propose(const struct scsi_lu_proposal *p, void *arg);
int ctl_lu_lock(uint64_t id, const uint8_t naa[16], uint64_t lba, uint32_t blocks, bool lock,
		void *arg);
struct shs_state;
void ctl_lu_state_to_pb(const struct shs_state *st, const uint8_t naa[16], uint64_t version,
			Isergw__Ctl__LuState *out, Isergw__Ctl__LuReg *regs,
			Isergw__Ctl__LuReg **regp);
int ctl_lu_state_from_pb(const Isergw__Ctl__LuState *in, struct shs_state *st, char *why,
			 size_t len);
/* The timer of an ALUA transition (gw_ctl.transition_timer) expired: set the final states. */
void ctl_alua_transition_end(void *arg);
/*
 * The SCSI layer's handler of SET TARGET PORT GROUPS under the external
 * policy; runs on the command's reactor, under the SCSI layer's ALUA lock.
 */
int ctl_alua_request(const struct scsi_alua_request *req, void *arg);

/*
 * Around a change that opens backstores (ctl.c): while the ALUA lease is
 * valid, they must be open (or NOT READY) within half of what is left of it.
 */
void ctl_open_deadline_begin(void);
void ctl_open_deadline_end(void);

/* ctl_ops_lease.c */
void ctl_op_renew_lease(struct ctl_client *c, const CtlRequest *req);
void ctl_op_step_down(struct ctl_client *c, const CtlRequest *req);
void ctl_op_get_lease(struct ctl_client *c, const CtlRequest *req);
/* gw_ctl.lease_timer: the lease changed phase by itself. */
void ctl_lease_timer_fired(void *arg);
/* After a reload (any thread): follow a changed alua_lease or alua_lease_unavailable_ms. */
void ctl_lease_resync(struct gw_ctl *ctl);
/* The lease now: its phase's name ("off" when not enforced), ms left while valid, its end. */
void ctl_lease_status(const char **state, uint32_t *remaining_ms, uint64_t *expires_ms);

/* ctl_ops_reactors.c */
void ctl_op_list_sessions(struct ctl_client *c, const CtlRequest *req);
void ctl_op_get_counters(struct ctl_client *c, const CtlRequest *req);
void ctl_op_logout(struct ctl_client *c, const CtlRequest *req);

#endif
