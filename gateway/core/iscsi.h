/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The iSCSI core: daemon runtime (targets, portals, reactors), sessions,
 * connections and tasks. Datamovers (dm/) call the upcalls declared at the
 * bottom; everything else here is the core's own.
 *
 * Threading: a connection and its session live on one reactor (MaxConnections
 * is 1). The session table is global and guarded by gw->sess_lock; work on a
 * session owned by another reactor goes there by reactor_send_msg().
 */
#ifndef ISERGW_ISCSI_H
#define ISERGW_ISCSI_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/log.h"
#include "core/counters.h"
#include "core/iscsi_spec.h"
#include "core/login.h"
#include "core/datamover.h"
#include "scsi/scsi.h"
#include "config/config.h"
#include "common/list.h"
#include "common/reactor.h"
#include "gw_api.h"

GW_API_BEGIN

struct bdev;
struct gw;
struct iscsi_task_set;

#define GW_MAX_LUNS 16384

struct gw_target {
	struct gw *gw;
	const struct gw_target_cfg *cfg;
	/*
	 * index = LUN number, NULL for holes; GW_MAX_LUNS entries so that a
	 * reload can add LUNs without moving the array sessions point at.
	 */
	struct scsi_lu **luns;
	struct bdev **bdevs;
	uint32_t nluns;                 /* = GW_MAX_LUNS */
	struct scsi_port *ports;        /* one per portal, same index as gw->portals */
	bool removed;
	/* LUNs of cfg that could not be opened, why (logged once per change); under sess_lock */
	struct gw_lun_fault *faults;
	size_t nfaults;
};

struct gw_lun_fault {
	uint32_t lun;
	int rc;
	char why[256];
};

/*
 * Whether LUN lc of target t serves I/O here: 0 (online), or 1 with
 * *state ("failed": not open; "offline": a backend that does not answer)
 * and why. Caller holds sess_lock.
 */
int gw_lun_fault(const struct gw_target *t, const struct gw_lun_cfg *lc, const char **state,
		 const char **why);

/*
 * A portal listens, or waits for its address (core/portal.c): an address
 * that is not on this node yet (a floating address held by another node, an
 * interface or RDMA device that comes up after the daemon) is retried with a
 * backoff and at once when rtnetlink reports an address added; when the
 * address is removed the portal stops listening, drops its connections and
 * waits again. Listening and unlistening happen on reactor 0 once the
 * reactors run; `state` and `last_error` are read by any thread.
 */
enum gw_portal_state {
	GW_PORTAL_WAITING = 0,
	GW_PORTAL_LISTENING = 1,
};

struct gw_portal {
	struct gw *gw;
	const struct gw_portal_cfg *cfg;
	size_t index;
	const struct gw_dm_ops *dm;
	void *dm_priv;
	bool removed;
	atomic_int state;               /* enum gw_portal_state */
	atomic_int last_error;          /* -errno of the last failed listen, 0 once listening */
	atomic_bool closed;             /* closed (reactor 0 did it): never listens again */
	struct sockaddr_storage addr;   /* resolved when opened, port 0 */
	bool any;                       /* 0.0.0.0 or [::]: never waits for an address */
	struct reactor_timer retry;     /* reactor 0 */
	uint32_t retry_ms;              /* the next backoff step */
	uint32_t tries;                 /* failed attempts since it last listened */
};

/*
 * What a reload replaces while the reactors run: a portal's and a target's
 * configuration, a target's LUNs. gw_reload publishes them with a release
 * store under sess_lock; a thread that does not hold sess_lock reads them
 * with these. What they replaced is retired, not freed (below), so a reader
 * may go on using what it read.
 */
static inline const struct gw_portal_cfg *gw_portal_cfg(const struct gw_portal *p)
{
	return __atomic_load_n(&p->cfg, __ATOMIC_ACQUIRE);
}

static inline const struct gw_target_cfg *gw_target_cfg(const struct gw_target *t)
{
	return __atomic_load_n(&t->cfg, __ATOMIC_ACQUIRE);
}

static inline struct scsi_lu *gw_target_lu(const struct gw_target *t, uint64_t lun)
{
	return lun < t->nluns ? __atomic_load_n(&t->luns[lun], __ATOMIC_ACQUIRE) : NULL;
}

/* Objects replaced by a reload, freed at exit (sessions may still point at them). */
struct gw_retired {
	struct gw_retired *next;
	void (*free_fn)(void *);
	void *obj;
};

struct gw_stats {
	atomic_uint_fast64_t logins, login_failures, sessions, connections;
	atomic_uint_fast64_t commands, read_bytes, write_bytes, rejects, conn_drops;
};

struct gw_store;

/* Connections in the login phase per source address (core/addr_limit.c). */
#define GW_LOGIN_BUCKETS 256
#define GW_LOGIN_KEY_LEN 16
struct gw_login_host;
struct gw_login_slots {
	bool ready;                     /* initialised: else nothing is counted */
	pthread_mutex_t lock;
	struct gw_login_host *buckets[GW_LOGIN_BUCKETS];
	struct gw_log_window log;       /* the lines about refused connections */
	uint64_t refused;
};
void gw_login_slots_init(struct gw_login_slots *s);
void gw_login_slots_fini(struct gw_login_slots *s);
/* The key of a peer as gw_fmt_sockaddr writes it (an IPv6 address: its /64); false: none. */
bool gw_login_key(const char *peer, uint8_t key[GW_LOGIN_KEY_LEN]);
/*
 * A connection from peer enters the login phase: 1 counted (key filled, give
 * it back with gw_login_slot_put), 0 not counted (no limit, no address),
 * -EBUSY refused: max from that address are logging in (a warn line, at most
 * 10 every 10 s).
 */
int gw_login_slot_take(struct gw_login_slots *s, const char *peer, uint32_t max,
		       uint8_t key[GW_LOGIN_KEY_LEN]);
void gw_login_slot_put(struct gw_login_slots *s, const uint8_t key[GW_LOGIN_KEY_LEN]);
uint64_t gw_login_slots_refused(struct gw_login_slots *s);
/* One connection's slot (iscsi_conn_admit), held from its accept to its login's end. */
struct iscsi_admission {
	bool counted;
	uint8_t key[GW_LOGIN_KEY_LEN];
};

struct gw {
	bool lu_state_cluster;              /* new LUs: the cluster carries their state (lu_state) */
	struct gw_config *cfg;          /* current; replaced by reload under sess_lock */
	struct gw_target **targets;     /* guarded by sess_lock */
	size_t ntargets;
	struct gw_portal **portals;     /* guarded by sess_lock */
	size_t nportals;
	struct gw_retired *retired;
	struct reactor **reactors;
	unsigned int nreactors;
	pthread_t *threads;
	atomic_uint next_reactor;
	atomic_bool shutting_down;
	pthread_mutex_t sess_lock;
	struct list_head sessions;      /* struct iscsi_session.link */
	uint16_t next_tsih;
	uint64_t next_itn_id;
	struct gw_stats stats;
	struct gw_login_slots login_slots;      /* connections logging in, per address */
	bool nreactors_joined;
	atomic_bool running;            /* reactor threads started */
	int ifaddr_fd;                  /* rtnetlink address events (portal.c), -1 = none */
	struct reactor_fd ifaddr_rfd;
	/* the backing stores open, one per LUN (runtime.c); guarded by sess_lock */
	struct gw_store *stores;
	size_t nstores, stores_cap;
};

enum iscsi_conn_state {
	CONN_STATE_LOGIN = 0,
	CONN_STATE_FFP,
	CONN_STATE_LOGGED_OUT,          /* Logout Response queued: close once sent */
	CONN_STATE_CLOSING,             /* terminate called, waiting for iscsi_conn_closed */
};

struct iscsi_session {
	struct gw *gw;
	struct gw_target *target;       /* NULL for discovery */
	enum iscsi_session_type type;
	char initiator[GW_NAME_MAX];
	uint8_t isid[6];
	uint16_t tsih;
	struct iscsi_sess_params params;
	uint32_t exp_cmd_sn;
	uint32_t queue_depth;
	struct iscsi_conn *conn;        /* the one connection */
	struct reactor *reactor;
	struct scsi_itn itn;
	struct list_head pending;       /* commands waiting for a CmdSN gap to fill */
	uint32_t npending;
	/*
	 * SAM-5 task attributes (core/task.c): one task set per LUN with tasks,
	 * made with the first, freed with the last. Held tasks run from
	 * sched_work, never inside another task's completion.
	 */
	struct list_head task_sets;     /* struct iscsi_task_set.link */
	struct list_head sets_to_run;   /* sets whose held tasks may run now */
	struct reactor_deferred sched_work;
	struct iscsi_task_set *spare_set;
	uint64_t next_task_seq;         /* age of a task in its set */
	bool attr_warned;               /* a reserved task attribute was logged */
	struct list_head link;          /* gw->sessions */
	bool registered;
	struct gw_io_counters stats;    /* commands of this session (its reactor only) */
	struct gw_ctr_cache ctr_cache;  /* the reactor's counter entries it used last */
};

struct iscsi_conn {
	struct gw *gw;
	const struct gw_config *cfg;    /* configuration current when the connection arrived */
	struct gw_portal *portal;
	struct reactor *reactor;
	const struct gw_dm_ops *dm;
	void *dm_priv;
	enum iscsi_conn_state state;
	atomic_int refs;
	struct iscsi_login *login;
	struct iscsi_text *text;
	struct iscsi_session *sess;
	struct iscsi_conn_params params;
	uint32_t stat_sn;
	uint16_t cid;
	uint32_t next_ttt;
	struct reactor_timer login_timer;
	struct reactor_timer nop_timer;
	uint64_t last_rx_ms;
	uint64_t rx_us;                 /* when the PDU being handled arrived (gw_counters_now_us) */
	uint32_t nop_ttt;               /* outstanding ping, 0xffffffff = none */
	uint64_t nop_sent_ms;
	struct list_head tasks;         /* struct iscsi_task.link */
	uint32_t ntasks;
	struct list_head tmfs;          /* TMF responses waiting for aborted tasks */
	struct reactor_deferred free_work;
	char peer[80];
	char local[80];
	uint64_t login_time;            /* Unix time the login completed, 0 = logging in */
	struct reactor_timer logout_timer; /* drop unless the initiator logs out as asked */
	uint16_t logout_grace_s;
	/* lines about its PDUs: ISCSI_CONN_LOG_LINES a window (iscsi_conn_log_room) */
	struct gw_log_window log;
	/* its slot of gw->login_slots, given back when the login ends */
	struct iscsi_admission adm;
};

enum iscsi_task_state {
	TASK_STATE_NEW = 0,
	TASK_STATE_WAIT_CMDSN,          /* in session->pending */
	TASK_STATE_DATA_OUT,            /* collecting write data */
	TASK_STATE_WAIT_ORDER,          /* held in its task set (task attributes) */
	TASK_STATE_EXEC,                /* in the SCSI layer / backend */
	TASK_STATE_DATA_IN,             /* datamover moving read data */
	TASK_STATE_RESPONSE,            /* status queued, waiting for it to leave */
	TASK_STATE_DONE,
};

#define ISCSI_MAX_R2T 16

struct iscsi_r2t_state {
	uint32_t ttt;
	uint32_t offset;
	uint32_t len;
	uint32_t received;
	uint32_t exp_data_sn;
	bool active;
};

struct iscsi_task {
	/*
	 * Tasks come from the reactor's cache (core/task.c) and are not zeroed
	 * whole. This first part is set for every command by task_alloc and
	 * iscsi_task_scsi_cmd, field by field.
	 */
	struct iscsi_conn *conn;
	struct list_head link;          /* conn->tasks */
	struct list_head pend_link;     /* session->pending, or its set's held tasks */
	struct list_head set_link;      /* set->tasks while in the task set */
	struct list_head barrier_link;  /* set->barriers (ORDERED, HEAD OF QUEUE) */
	struct iscsi_task_set *set;     /* the task set of its LUN */
	struct iscsi_scsi_cmd hdr;
	enum iscsi_task_state state;
	uint32_t itt;
	uint32_t cmd_sn;
	uint32_t edtl;
	uint64_t lun;
	uint64_t start_us;              /* arrival, for the latency counters */
	bool immediate;
	bool data_in;
	bool data_out;
	uint8_t cls;                    /* SAM-5 class of its task attribute (core/task.c) */
	/* From here to r2t: zeroed by task_alloc. */
	bool in_set;                    /* entered (CmdSN order), not yet left */
	bool aborted;
	bool buf_wait;                  /* waiting for the datamover's buffer */
	uint16_t data_err;              /* ASC/ASCQ of a Data-Out sequence error, 0 = none */
	uint64_t seq;                   /* age in the set */
	uint8_t *staging;               /* unsolicited data received while waiting */
	uint8_t *buf;
	uint32_t buf_len;
	/* Data-Out bookkeeping */
	uint32_t unsol_end;             /* unsolicited data covers [0, unsol_end) */
	uint32_t unsol_received;
	uint32_t unsol_exp_data_sn;
	uint32_t received;              /* all data-out bytes placed so far */
	uint32_t r2t_next;              /* next offset to ask for */
	uint32_t r2t_sn;
	uint32_t r2t_outstanding;
	/* Data-In bookkeeping */
	uint32_t data_sn;
	uint32_t pending_tx;            /* PDUs of this task not yet sent */
	struct iscsi_tmf *tmf;          /* TMF waiting for this aborted task */
	void *dm_priv;
	/*
	 * Of what follows only what a command uses is initialised: r2t for a
	 * command with write data; scsi but its sense data and its private
	 * area (the SCSI layer sets that up at submission); rsp and sense_seg
	 * where they are filled in.
	 */
	struct iscsi_r2t_state r2t[ISCSI_MAX_R2T];
	struct scsi_cmd scsi;
	struct iscsi_tx_pdu rsp;
	uint8_t sense_seg[2 + SCSI_SENSE_MAX];  /* SenseLength + sense data */
};

/* ---- daemon runtime (core/runtime.c) ---- */
/*
 * Everything gw_start does but start the reactor threads: reactors,
 * portals, targets and their LUNs, the ALUA configuration. The reactors are
 * driven by the caller (reactor_poll: tests, fuzz targets) until gw_start's
 * threads would; gw_destroy frees it. On success gw owns cfg.
 */
int gw_create(struct gw_config *cfg, struct gw **out);
int gw_start(struct gw_config *cfg, struct gw **out);
/*
 * Apply a new, validated configuration: portals and targets that stay keep
 * their sessions; removed ones are dropped; ACL/CHAP changes apply to new
 * logins; LUNs are added and removed in place. Takes ownership of cfg.
 */
int gw_reload(struct gw *gw, struct gw_config *cfg);
/*
 * The configuration in use gets fence (n keys) as its backend_pr_fence
 * without a reload: the keys it did not list are preempted first on every
 * iscsi:// LUN open here, as gw_reload does (docs/ha.md, "Fencing at the
 * backend"). Under the caller's reload serialisation. -ENOKEY: keys given
 * but the configuration has no key of its own (fencing off or not live).
 */
int gw_fence_keys(struct gw *gw, const uint64_t *fence, size_t n);
/*
 * One LUN added to (gw_lun_add: lc copied into the target's configuration)
 * or removed from (gw_lun_remove) target iqn of the configuration in use,
 * without a reload: no other LUN, portal or session is touched. The LU is
 * opened (closed) and given to (taken from) the target's sessions as a
 * reload would. -ENOENT: no such target (or LUN to remove); -EEXIST: the
 * LUN number is in use; -EADDRINUSE: its backing store is another LUN's
 * (why says which, when given); -errno when the backstore cannot be opened.
 */
int gw_lun_add(struct gw *gw, const char *iqn, const struct gw_lun_cfg *lc, char *why,
	       size_t whylen);
int gw_lun_remove(struct gw *gw, const char *iqn, uint32_t lun);
/* Whether target iqn has LUN lun open (false for no such target). */
bool gw_lun_exists(struct gw *gw, const char *iqn, uint32_t lun);
/* Ask every session to log out, wait up to grace_ms, drop the rest, flush, stop. */
void gw_shutdown(struct gw *gw, unsigned int grace_ms);
void gw_destroy(struct gw *gw);
struct reactor *gw_pick_reactor(struct gw *gw);
/* Run fn(arg) once every reactor has handled the messages queued to it so far. */
void gw_free_after_reactors(struct gw *gw, void (*fn)(void *), void *arg);
/* Caller holds gw->sess_lock. */
struct gw_target *gw_find_target(struct gw *gw, const char *iqn);

/* ---- portals (core/portal.c) ---- */
/*
 * Open a portal: listen at once if its address is here, else wait for it
 * (logged, retried). Fails only for what no retry can fix: an address that
 * does not resolve, a transport this build lacks, no memory, and at start
 * (the reactors not running yet) a port another program holds (-EADDRINUSE).
 */
int gw_portal_open(struct gw *gw, const struct gw_portal_cfg *pc, size_t index,
		   struct gw_portal **out);
/* Stop listening and waiting, from any thread (done on reactor 0 once the reactors run). */
void gw_portal_close(struct gw_portal *p);
/* The rtnetlink watch that makes waiting portals listen as soon as their address appears. */
void gw_portal_watch_start(struct gw *gw);
void gw_portal_watch_stop(struct gw *gw);
/* Reactor 0: a datamover lost or regained its listener by itself (iSER device removal). */
void gw_portal_set_listening(struct gw_portal *p, bool listening, int err);
/* Pure helpers (unit tested): errors that make a portal wait, and the retry backoff. */
bool gw_portal_error_waits(int err);
uint32_t gw_portal_backoff_next(uint32_t ms);
const char *gw_portal_state_name(int state);
/* Portals waiting because another program holds their port (a reload's: degraded). */
size_t gw_portals_port_in_use(struct gw *gw);
#define GW_PORTAL_RETRY_MIN_MS 100u
#define GW_PORTAL_RETRY_MAX_MS 2000u

/* ---- session table (core/session.c) ---- */
int iscsi_session_bind(struct iscsi_conn *c);   /* after a successful leading login */
void iscsi_session_unbind(struct iscsi_conn *c);
/* Every live session of gw, on its own reactor: fn(conn) */
void iscsi_sessions_foreach(struct gw *gw, void (*fn)(struct iscsi_conn *c, void *arg), void *arg);

/* ---- connections (core/conn.c) ---- */
void iscsi_conn_get(struct iscsi_conn *c);
void iscsi_conn_put(struct iscsi_conn *c);
uint32_t iscsi_conn_max_cmd_sn(const struct iscsi_conn *c);
uint32_t iscsi_conn_exp_cmd_sn(const struct iscsi_conn *c);
/* Queue a control PDU; stamps StatSN/ExpCmdSN/MaxCmdSN as the opcode needs. */
int iscsi_conn_send(struct iscsi_conn *c, struct iscsi_tx_pdu *pdu, bool advance_stat_sn);
struct iscsi_tx_pdu *iscsi_tx_pdu_alloc(void);
void iscsi_tx_pdu_free(struct iscsi_tx_pdu *pdu);
void iscsi_conn_reject(struct iscsi_conn *c, const struct iscsi_bhs *bad, uint8_t reason);
/*
 * Whether a line about one of c's PDUs (a Reject, a CmdSN out of window, a
 * Data-Out that fails its command, a task management function) may be
 * written now: ISCSI_CONN_LOG_LINES every ISCSI_CONN_LOG_S seconds per
 * connection, then one notice counting the lines not written, when the
 * window ends or the connection does. An initiator sending bad PDUs in a
 * loop would fill the journal otherwise. The connection's own end (drop,
 * logout) is always written.
 */
#define ISCSI_CONN_LOG_LINES 10u
#define ISCSI_CONN_LOG_S 10u
bool iscsi_conn_log_room(struct iscsi_conn *c);
/* Close without a warning (the peer went away before logging in, or logged out). */
void iscsi_conn_close(struct iscsi_conn *c);
/* Drop the connection (and, at ERL 0, the session) with a log line. */
void iscsi_conn_drop(struct iscsi_conn *c, const char *why);
/*
 * The same for a full-feature connection the initiator closed without logging
 * out (a tool that probes and goes, a host that died): counted as a drop, logged
 * at notice, since nothing on the target is wrong.
 */
void iscsi_conn_peer_closed(struct iscsi_conn *c);
/* Target-initiated logout request (Async Message), e.g. on shutdown. */
void iscsi_conn_request_logout(struct iscsi_conn *c, uint16_t seconds);
/*
 * Forced logout: the Async Message "logout requested" with Parameter3 =
 * seconds (RFC 7143 11.9.1), and the connection dropped if the initiator has
 * not logged out by then. Discovery sessions are dropped at once.
 */
void iscsi_conn_force_logout(struct iscsi_conn *c, uint16_t seconds);

/* ---- tasks (core/task.c) ---- */
int iscsi_task_scsi_cmd(struct iscsi_conn *c, const struct iscsi_bhs *bhs,
			const uint8_t *ahs, uint32_t ahs_len, const uint8_t *data, uint32_t dlen);
void iscsi_task_data_out(struct iscsi_conn *c, const struct iscsi_data_out *hdr,
			 const uint8_t *data, uint32_t dlen);
void iscsi_task_tmf(struct iscsi_conn *c, const struct iscsi_tmf_req *req);
/*
 * iSER: the initiator announced unsolicited data but leaves it in its
 * registered buffer: stop waiting for Data-Out and fetch the rest with get_data.
 */
void iscsi_task_fetch_unsolicited(struct iscsi_conn *c, const struct iscsi_data_out *hdr);
/* A Data-Out arrived damaged (data digest): its task ends with ABORTED COMMAND. */
void iscsi_task_data_out_bad(struct iscsi_conn *c, const struct iscsi_data_out *hdr);
/* Fill one Data-In header for [offset, offset+len) of task data; final+status when `status`. */
void iscsi_task_build_datain(struct iscsi_task *t, struct iscsi_data_in *h, uint32_t offset,
			     uint32_t len, bool final, bool status);
/* Queue the SCSI Response (after all Data-In); task freed when it is sent. */
void iscsi_task_send_response(struct iscsi_task *t);
/* Send the next R2Ts the negotiated limits allow (TCP get_data). */
int iscsi_task_send_r2ts(struct iscsi_task *t);
/* Session CmdSN window: run commands now in order. */
void iscsi_session_run_pending(struct iscsi_session *s);
/* A session's task sets: set up at bind, released with the session (its tasks all gone). */
void iscsi_task_sets_init(struct iscsi_session *s);
void iscsi_task_sets_fini(struct iscsi_session *s);
/* Connection teardown: abort everything, free what is idle. */
void iscsi_conn_abort_tasks(struct iscsi_conn *c);
/* Route the SCSI layer's PREEMPT AND ABORT requests to the sessions. */
void iscsi_task_register_preempt_abort(struct gw *gw);
bool iscsi_task_put_data_with_status(const struct iscsi_task *t);
uint32_t iscsi_task_data_in_len(const struct iscsi_task *t);
void iscsi_task_tx_done(struct iscsi_task *t);

/* ---- upcalls from datamovers ---- */
/*
 * A connection arriving from peer (as gw_fmt_sockaddr writes it), asked as it
 * is accepted, before anything is allocated for it: 0 admitted (a, counted
 * against max_logins_per_address until its login ends), -EBUSY refused (the
 * core logged it: close it, reject it). Any thread.
 */
int iscsi_conn_admit(struct gw *gw, const char *peer, struct iscsi_admission *a);
/* An admitted connection that never reached iscsi_conn_create (idempotent). */
void iscsi_conn_admit_cancel(struct gw *gw, struct iscsi_admission *a);
/*
 * A new transport connection on portal p, on reactor r (the caller's thread),
 * with its admission (NULL: not counted), which it takes over, also when it
 * fails.
 */
int iscsi_conn_create(struct gw_portal *p, struct reactor *r, void *dm_priv,
		      struct iscsi_admission *a, struct iscsi_conn **out);
/* A complete PDU; data valid only during the call. */
void iscsi_conn_rx_pdu(struct iscsi_conn *c, const struct iscsi_bhs *bhs, const uint8_t *ahs,
		       uint32_t ahs_len, const uint8_t *data, uint32_t dlen);
/*
 * PDUs on a byte stream (TCP): how they are framed on this connection, now.
 * max_dsl: the largest DataSegmentLength accepted (MaxRecvDataSegmentLength;
 * more is rejected and drops the connection); max_pdu: the largest whole
 * PDU the caller's buffer holds.
 */
struct iscsi_rx_framing {
	bool hd, dd;                    /* header and data digests (CRC32C) */
	uint32_t max_dsl;
	size_t max_pdu;
};
/*
 * Frames buf[0..len) (BHS, AHS, header digest, data, padding, data digest)
 * and hands each complete PDU to iscsi_conn_rx_pdu(); a header digest error
 * drops the connection, a data digest error rejects the PDU (and fails its
 * command if it is a Data-Out). Returns the bytes consumed: whole PDUs, up to
 * the first incomplete one or until the connection closes.
 */
size_t iscsi_conn_rx_stream(struct iscsi_conn *c, const uint8_t *buf, size_t len,
			    const struct iscsi_rx_framing *f);
void iscsi_task_data_ready(struct iscsi_task *t);
/* The buffer a buf_get() call made wait for is now in t->buf. */
void iscsi_task_buf_ready(struct iscsi_task *t);
void iscsi_conn_closed(struct iscsi_conn *c);

GW_API_END

#endif
