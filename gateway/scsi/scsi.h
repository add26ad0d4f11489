/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SCSI block device emulation (SPC-4 / SBC-3) on top of a bdev.
 *
 * The iSCSI core builds a struct scsi_cmd per SCSI Command PDU, gathers all
 * Data-Out into cmd->buf first (for writes), then calls scsi_cmd_submit().
 * The SCSI layer decodes the CDB, checks unit attentions / reservations,
 * performs the command (asynchronously through the bdev where needed) and
 * calls cmd->done(cmd) exactly once, on the submitting thread; done may run
 * before scsi_cmd_submit() returns.
 *
 * Residuals: the SCSI layer sets cmd->xfer_len to the number of bytes the
 * command itself would move (for reads: min(allocation length, data
 * available); for READ/WRITE: blocks * block size). The core derives
 * iSCSI residuals from xfer_len and the Expected Data Transfer Length
 * (buf_len). For reads the SCSI layer writes at most buf_len bytes to buf.
 *
 * Threading: a scsi_lu is shared by all reactors; its control state (unit
 * attentions, reservations, mode pages) is protected by a mutex inside the
 * LU and never held across I/O.
 */
#ifndef ISERGW_SCSI_H
#define ISERGW_SCSI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_api.h"

GW_API_BEGIN

struct bdev;
struct scsi_lu;

/* Status codes (SAM-5). */
#define SCSI_STATUS_GOOD                 0x00
#define SCSI_STATUS_CHECK_CONDITION      0x02
#define SCSI_STATUS_CONDITION_MET        0x04
#define SCSI_STATUS_BUSY                 0x08
#define SCSI_STATUS_RESERVATION_CONFLICT 0x18
#define SCSI_STATUS_TASK_SET_FULL        0x28
#define SCSI_STATUS_ACA_ACTIVE           0x30
#define SCSI_STATUS_TASK_ABORTED         0x40

/* Sense keys. */
#define SCSI_SK_NO_SENSE        0x0
#define SCSI_SK_RECOVERED_ERROR 0x1
#define SCSI_SK_NOT_READY       0x2
#define SCSI_SK_MEDIUM_ERROR    0x3
#define SCSI_SK_HARDWARE_ERROR  0x4
#define SCSI_SK_ILLEGAL_REQUEST 0x5
#define SCSI_SK_UNIT_ATTENTION  0x6
#define SCSI_SK_DATA_PROTECT    0x7
#define SCSI_SK_ABORTED_COMMAND 0xb
#define SCSI_SK_MISCOMPARE      0xe

#define SCSI_SENSE_MAX 96
#define SCSI_CDB_MAX   32

/* Task attributes (iSCSI ATTR field). */
enum scsi_task_attr {
	SCSI_ATTR_UNTAGGED = 0,
	SCSI_ATTR_SIMPLE   = 1,
	SCSI_ATTR_ORDERED  = 2,
	SCSI_ATTR_HEAD_OF_QUEUE = 3,
	SCSI_ATTR_ACA      = 4,
};

/*
 * A target port as the SCSI layer sees it: used in VPD 0x83 and by ALUA and
 * persistent reservations. Same values on every gateway node for the same
 * portal, so identity survives a portal move.
 */
struct scsi_port {
	uint16_t rel_port_id;           /* relative target port identifier, >= 1 */
	uint16_t tpg_id;                /* target port group id */
	char name[256];                 /* "<target iqn>,t,0x<tpgt hex4>" */
};

/*
 * An I_T nexus: one iSCSI session (initiator port) through one target port.
 * Owned by the core; registered with every LU the session can see.
 */
struct scsi_itn {
	uint64_t id;                    /* unique for the daemon's lifetime */
	char initiator_name[224];       /* iSCSI name */
	char initiator_port[256];       /* "<initiator name>,i,0x<isid hex12>" */
	uint8_t isid[6];
	const struct scsi_port *port;
	/* LUN map of the target this nexus is logged in to: index = LUN. */
	struct scsi_lu *const *luns;
	uint32_t nluns;
};

/* An LU of the nexus' map: a reload changes the map while commands run. */
static inline struct scsi_lu *scsi_itn_lu(const struct scsi_itn *itn, uint32_t i)
{
	return __atomic_load_n(&itn->luns[i], __ATOMIC_ACQUIRE);
}

/*
 * ALUA (SPC-4 5.15). The cluster's target port groups (which relative target
 * ports each holds, this node's and the other nodes') form one port map, the
 * same for every LU. The asymmetric access state is kept per device group (a
 * set of LUs that fail over together; every LU names one, "default" unless
 * configured) and per target port group: a group without an explicit state
 * has the device group's default (its owner group Active/Optimized with
 * PREF, the others non_owner_state; without an owner every group
 * Active/Optimized). The state applying to a command is that of the LU's
 * device group for the group of cmd->itn->port.
 */
#define SCSI_ALUA_ACTIVE_OPTIMIZED     0x0
#define SCSI_ALUA_ACTIVE_NON_OPTIMIZED 0x1
#define SCSI_ALUA_STANDBY              0x2
#define SCSI_ALUA_UNAVAILABLE          0x3
#define SCSI_ALUA_OFFLINE              0xe
#define SCSI_ALUA_TRANSITIONING        0xf

#define SCSI_ALUA_DG_DEFAULT  "default"
#define SCSI_ALUA_DG_NAME_MAX 64        /* with the NUL */

struct scsi_alua_update {
	uint16_t tpg_id;
	uint8_t state;                  /* SCSI_ALUA_* */
	bool pref;                      /* PREF bit reported by REPORT TARGET PORT GROUPS */
};

/*
 * Sets the state of n groups of device group dg (NULL or "": "default";
 * created if unknown) at once: all or none (-EINVAL for an invalid state,
 * -ENOSPC when a table is full). Every nexus of every LU of that device group
 * gets the unit attention ASYMMETRIC ACCESS STATE CHANGED (2A/06) if anything
 * changed. Explicit states last until the process ends or scsi_alua_reset().
 */
int scsi_alua_set_states(const char *dg, const struct scsi_alua_update *u, size_t n);
/*
 * The states of every group of the port map and every group with an explicit
 * state, for device group dg: at most max into out, *n = how many there are.
 * -ENOENT for an unknown device group.
 */
int scsi_alua_get_states(const char *dg, struct scsi_alua_update *out, size_t max, size_t *n);
/* One group; -ENOENT (and Active/Optimized) for a device group or a group nobody knows. */
int scsi_alua_get_state(const char *dg, uint16_t tpg_id, uint8_t *state, bool *pref);
/* The states of one device group in a map: dg NULL or "" is "default". */
struct scsi_alua_dg_update {
	const char *dg;
	const struct scsi_alua_update *u;
	size_t n;
};
/*
 * Sets the states of n device groups at once (the HA agent's map): every
 * device group must exist (-ENOENT, *bad = its index, nothing changed), every
 * state be valid (-EINVAL) and fit (-ENOSPC) before any is changed. The
 * nexuses of each device group that changed get 2A/06, as for
 * scsi_alua_set_states().
 */
int scsi_alua_set_map(const struct scsi_alua_dg_update *m, size_t n, size_t *bad);
/*
 * The configured default of device group dg (created if unknown): owner_tpg
 * 0 = no owner (every group Active/Optimized); otherwise the owner
 * Active/Optimized with PREF and the others non_owner_state (Active/Non-
 * optimized, Standby or Unavailable). Nexuses of its LUs get 2A/06 when a
 * group's resulting state changes.
 */
int scsi_alua_dg_configure(const char *dg, uint16_t owner_tpg, uint8_t non_owner_state);

/* The port map. */
struct scsi_alua_port {
	uint16_t rel_port_id;
	uint16_t tpg_id;
	bool local;                     /* a port of this node */
};
/*
 * Replaces the whole port map (a reload forgets ports and groups no longer
 * configured). A relative port is in one group only (-EINVAL otherwise).
 */
int scsi_alua_set_ports(const struct scsi_alua_port *p, size_t n);
/*
 * Adds one local port to the map (relative port id under its group; a port
 * listed under another group moves). Idempotent; a nexus registers its port
 * too, so a map nobody set lists the ports sessions used.
 */
int scsi_alua_register_port(const struct scsi_port *p);
/* Forgets the port map, every device group and the lease (tests, reconfiguration). */
void scsi_alua_reset(void);
/* The port map holds more than one relative port (INQUIRY MULTIP). */
bool scsi_alua_multiport(void);

/*
 * The ALUA lease (configuration key alua_lease). When it is enforced, this
 * node serves ALUA-governed commands only while a lease given through the
 * control socket (by the HA agent) is valid: without one every target port
 * group of every device group is reported (REPORT TARGET PORT GROUPS) and
 * enforced (the per-state command filter) as Unavailable, and for
 * unavailable_ms after a lease ran out as Transitioning (hosts retry). The
 * explicit and configured states stay underneath and apply again, as they
 * are, once a lease is valid.
 *
 * The command path compares the monotonic clock with the expiry itself (an
 * atomic load and a vDSO clock_gettime per command while enforced), so a
 * node thawed after a freeze refuses commands at once, before any timer of
 * the control thread has run. The unit attentions of a change (2A/06 on
 * every nexus whose LU's reported states change) are raised by
 * scsi_alua_lease_sync(): at once by renew, step down and configure, and by
 * the control thread's timer when a lease runs out.
 */
enum scsi_lease_phase {
	SCSI_LEASE_OFF = 0,             /* not enforced: the states apply as they are */
	SCSI_LEASE_NONE,                /* enforced, no lease given yet: Unavailable */
	SCSI_LEASE_VALID,
	SCSI_LEASE_EXPIRED,             /* ran out less than unavailable_ms ago: Transitioning */
	SCSI_LEASE_STEPPED_DOWN,        /* ran out longer ago, or stepped down: Unavailable */
};
#define SCSI_LEASE_UNAVAILABLE_MS 2000u /* default of alua_lease_unavailable_ms */
#define SCSI_LEASE_NO_OVERRIDE    0xffu

struct scsi_lease {
	bool enforced;
	bool stepped_down;              /* dropped by scsi_alua_lease_step_down() */
	uint64_t expires_ms;            /* monotonic ms the lease ends; 0: none given, or dropped */
	uint32_t unavailable_ms;        /* how long "expired" lasts before "stepped-down" */
	uint64_t lost_ms;               /* when the node was last left without a lease (start, step down) */
};

/* Pure functions of a lease and a monotonic time (ms): the phase at now_ms. */
enum scsi_lease_phase scsi_lease_phase(const struct scsi_lease *l, uint64_t now_ms);
/* The state every group reports in phase ph; SCSI_LEASE_NO_OVERRIDE: their own. */
uint8_t scsi_lease_override(enum scsi_lease_phase ph);
/* When the phase next changes by itself, after now_ms; 0: never without a request. */
uint64_t scsi_lease_next_change(const struct scsi_lease *l, uint64_t now_ms);
/* Since when the node is without a valid lease at now_ms (0: it has one, or none is enforced). */
uint64_t scsi_lease_lost_since(const struct scsi_lease *l, uint64_t now_ms);
/* "off", "none", "valid", "expired", "stepped-down". */
const char *scsi_lease_phase_name(enum scsi_lease_phase ph);
/*
 * The state this node's group serves in, for an LU whose backend awaits this
 * node's reservation key (bdev_awaits_registration: it was fenced, or has
 * just been without a lease): Transitioning instead of an active state; any
 * other state, or no wait, unchanged. Under a valid lease only (the lease's
 * own override comes first).
 */
uint8_t scsi_alua_gated_state(uint8_t state, bool awaits_registration);

/*
 * Enforce the lease or not (a reload may change it); switching enforcement
 * on starts without a lease ("none") and is synced at once. unavailable_ms
 * 0: stepped down as soon as the lease ends; a new value applies to the
 * command path at once, its unit attentions wait for the next sync.
 */
void scsi_alua_lease_configure(bool enforced, uint32_t unavailable_ms);
/* The lease ends at monotonic expires_ms (exactly; >= 1). -EOPNOTSUPP when not enforced. */
int scsi_alua_lease_renew(uint64_t expires_ms);
/* The lease is dropped: "stepped-down" at once. -EOPNOTSUPP when not enforced. */
int scsi_alua_lease_step_down(void);
void scsi_alua_lease_get(struct scsi_lease *out);
/*
 * Raise the unit attentions of the phase change since the last sync, if the
 * reported states changed; returns the phase now, *before (may be NULL) the
 * phase of the previous sync.
 */
enum scsi_lease_phase scsi_alua_lease_sync(enum scsi_lease_phase *before);
/* The monotonic clock of the lease, in ms (a test may replace it; NULL: CLOCK_MONOTONIC). */
uint64_t scsi_alua_lease_now(void);
void scsi_alua_lease_set_clock(uint64_t (*now_ms)(void));

/*
 * Who owns the ALUA policy, i.e. what SET TARGET PORT GROUPS does:
 * LOCAL (the default) applies it on this node at once; EXTERNAL hands it
 * to the request handler below (the control socket, where the HA agent
 * listens) and holds the command, without blocking its reactor, until the
 * device group's states match what it asked (set through
 * scsi_alua_set_states), the handler's owner answers it with
 * scsi_alua_request_done(), the command is aborted, or timeout_ms passes.
 * Outcomes (docs/scsi.md): GOOD; refused: HARDWARE ERROR, SET TARGET PORT
 * GROUPS COMMAND FAILED (67h/0Ah); nobody listening or no answer in time:
 * NOT READY, ASYMMETRIC ACCESS STATE TRANSITION (04h/0Ah); aborted: the core
 * discards the status. A request that matches the current states is GOOD
 * at once under either policy.
 */
enum scsi_alua_policy {
	SCSI_ALUA_POLICY_LOCAL = 0,
	SCSI_ALUA_POLICY_EXTERNAL,
};
#define SCSI_ALUA_REQUEST_TIMEOUT_MS 10000u     /* default */
#define SCSI_ALUA_REQUEST_GROUPS_MAX 64u
#define SCSI_ALUA_HELD_MAX           256u       /* held at once; more get BUSY */

void scsi_alua_set_policy(enum scsi_alua_policy policy, uint32_t timeout_ms);
enum scsi_alua_policy scsi_alua_get_policy(uint32_t *timeout_ms);

/* A SET TARGET PORT GROUPS handed to the policy owner. */
struct scsi_alua_request {
	uint64_t id;                    /* >= 1, never reused while the process lives */
	char dg[SCSI_ALUA_DG_NAME_MAX]; /* the LU's device group */
	size_t n;
	struct scsi_alua_update u[SCSI_ALUA_REQUEST_GROUPS_MAX]; /* as asked (pref false) */
	char initiator_port[256];       /* "<initiator name>,i,0x<isid>" */
	uint16_t rel_port_id;           /* the target port it arrived through */
	uint16_t tpg_id;                /* and that port's group */
	uint64_t lun;
	uint32_t timeout_ms;            /* how long the command waits for an answer */
};
/*
 * Called on the command's reactor, with an internal lock held: must not
 * block nor call back into the SCSI layer. 0: the request is on its way;
 * a negative errno: nobody will answer (the command fails at once, NOT
 * READY 04h/0Ah). NULL handler: nobody listens.
 */
typedef int (*scsi_alua_request_fn)(const struct scsi_alua_request *req, void *arg);
void scsi_alua_set_request_handler(scsi_alua_request_fn fn, void *arg);
/*
 * The policy owner's answer to request id (any thread). status 0: done,
 * the command completes GOOD if the states now match the request, else as
 * refused; -EAGAIN or -ENOTCONN: not now (NOT READY 04h/0Ah, the initiator
 * may retry); any other negative errno: refused (HARDWARE ERROR 67h/0Ah).
 * Returns 0, -EALREADY (already decided, e.g. the states matched), -ENOENT
 * (no such request is held: answered, timed out or aborted) or -EINVAL.
 */
int scsi_alua_request_done(uint64_t id, int status);
/* How many SET TARGET PORT GROUPS commands are held right now. */
unsigned int scsi_alua_requests_held(void);

struct scsi_lu_params {
	uint64_t lun;                   /* LUN number inside its target */
	char vendor[9];                 /* INQUIRY vendor, padded on output */
	char product[17];
	char revision[5];
	char serial[64];                /* VPD 0x80; stable */
	uint8_t naa[16];                /* NAA IEEE Registered Extended (type 6) designator */
	bool readonly;
	bool write_cache;               /* initial WCE */
	bool thin;                      /* LBPME / UNMAP advertised (needs bdev unmap support) */
	uint32_t max_xfer_bytes;        /* MAXIMUM TRANSFER LENGTH enforced; 0 = report 8 MiB only */
	char pr_path[4096];             /* where persistent reservations are saved ("" = not persisted) */
	/*
	 * State file shared with the other gateway nodes serving this LU
	 * (reservations, mode bits, events; see scsi_shared.h). "" = standalone;
	 * when set, pr_path is not used.
	 */
	char shared_path[4096];
	/*
	 * The same state carried by the cluster instead (the HA agent over
	 * corosync, see scsi_cluster_* below): kept in memory here, changed
	 * only through proposals the cluster applies. Excludes shared_path.
	 */
	bool cluster_state;
	char alua_dg[SCSI_ALUA_DG_NAME_MAX];   /* ALUA device group ("" = "default") */
};

int scsi_lu_create(const struct scsi_lu_params *p, struct bdev *bdev, struct scsi_lu **out);
/*
 * The LU now belongs to ALUA device group dg (NULL or "": "default";
 * created if unknown), e.g. after a reload: its nexuses get 2A/06 when the
 * group changed. 0 or -errno (-ENOSPC: too many device groups).
 */
int scsi_lu_set_device_group(struct scsi_lu *lu, const char *dg);
/*
 * The index of the LU's device group, for the I/O counters (no lock: one
 * atomic load); stable until scsi_alua_reset(). scsi_alua_dg_name() gives its
 * name: 0, or -ENOENT for an index no device group has.
 */
size_t scsi_lu_dg_index(const struct scsi_lu *lu);
int scsi_alua_dg_name(size_t idx, char *out, size_t len);
void scsi_lu_destroy(struct scsi_lu *lu);
const struct scsi_lu_params *scsi_lu_get_params(const struct scsi_lu *lu);

/* The core tells each LU when a nexus appears and goes (for UA bookkeeping). */
void scsi_lu_itn_add(struct scsi_lu *lu, const struct scsi_itn *itn);
void scsi_lu_itn_remove(struct scsi_lu *lu, const struct scsi_itn *itn);
/*
 * The nexus is logging out: its SCSI-2 reservation is released now, before
 * the Logout Response leaves, so that a command through another nexus (or
 * another gateway node) after the logout never finds it held. Idempotent
 * with scsi_lu_itn_remove().
 */
void scsi_lu_itn_logout(struct scsi_lu *lu, const struct scsi_itn *itn);
struct scsi_lu;
typedef void (*scsi_reset_done_fn)(void *arg);
/* The same; true when done(arg) comes later (the cluster applies the release first). */
bool scsi_lu_itn_logout_wait(struct scsi_lu *lu, const struct scsi_itn *itn,
			     scsi_reset_done_fn done, void *arg);

enum scsi_reset_kind {
	SCSI_RESET_LU,          /* LOGICAL UNIT RESET */
	SCSI_RESET_TARGET_WARM, /* TARGET WARM RESET */
	SCSI_RESET_TARGET_COLD, /* TARGET COLD RESET */
};
/*
 * A reset that has already aborted the affected tasks in the core: clear
 * SCSI-2 reservations and establish the unit attentions SAM-5 requires.
 * `from` is the nexus that asked for it.
 */
void scsi_lu_reset(struct scsi_lu *lu, const struct scsi_itn *from, enum scsi_reset_kind kind);
/*
 * The same, for a caller that answers only once the reset is in force on
 * every node (the cluster store): true when done(arg) will be called later,
 * on this reactor, once the cluster applied it (or failed to); false when it
 * is in force already.
 */
bool scsi_lu_reset_wait(struct scsi_lu *lu, const struct scsi_itn *from,
			enum scsi_reset_kind kind, scsi_reset_done_fn done, void *arg);
/*
 * Tasks of other nexuses were aborted by `from` (CLEAR TASK SET, or
 * PREEMPT AND ABORT): establish COMMANDS CLEARED BY ANOTHER INITIATOR (2F/00).
 */
void scsi_lu_tasks_cleared(struct scsi_lu *lu, const struct scsi_itn *from);
bool scsi_lu_tasks_cleared_wait(struct scsi_lu *lu, const struct scsi_itn *from,
				scsi_reset_done_fn done, void *arg);

/*
 * PREEMPT AND ABORT (SPC-4 5.13.11.2.5): the SCSI layer removes the preempted
 * registrations; the tasks of those I_T nexuses on the LU are the core's to
 * abort. The handler is called, with no LU lock held and before the PERSISTENT
 * RESERVE OUT completes, once per preempted nexus.
 */
typedef void (*scsi_abort_nexus_fn)(struct scsi_lu *lu, const char *initiator_port,
				    uint16_t rel_port_id, void *arg);
void scsi_set_abort_nexus_handler(scsi_abort_nexus_fn fn, void *arg);
/*
 * The same handler also receives the aborts other gateway nodes ask for
 * through the shared state (LOGICAL UNIT RESET, target resets, CLEAR TASK
 * SET, PREEMPT AND ABORT there): initiator_port NULL means every nexus of the
 * LU, rel_port_id 0 every target port of that initiator port. It is called
 * with no SCSI lock held, but possibly from a command's submission.
 */

/*
 * LUs with a shared state (params.shared_path): sync every LU whose state
 * file another node changed, and hand the aborts it asked for to the handler
 * above. Called periodically so that idle nodes apply them too;
 * scsi_shared_poller_start() arms a timer on reactor r doing it every
 * interval_ms (0: 100 ms). The command path syncs by itself.
 */
struct reactor;
void scsi_shared_poll(void);
int scsi_shared_poller_start(struct reactor *r, unsigned int interval_ms);

/*
 * The LU state carried by the cluster (params.cluster_state, docs/scsi.md):
 * a command that changes an LU's state (PERSISTENT RESERVE OUT, RESERVE,
 * RELEASE, MODE SELECT) computes the new state and its events on the
 * node's copy, restores the copy, and hands them to the proposal handler
 * (the control socket, where the HA agent listens); the command is held,
 * without blocking its reactor, until scsi_cluster_done() answers: 0 GOOD
 * (or what the command computed), -ESTALE the command runs again on the
 * newer state, anything else NOT READY, OPERATION IN PROGRESS (04h/07h, the
 * host retries). Resets, CLEAR TASK SET and a lost SCSI-2 holder's nexus
 * propose without holding anything. The state changes on every node only
 * through scsi_cluster_apply().
 */
#define SCSI_LU_EVENTS_MAX  (128u + 16u)
#define SCSI_CLUSTER_TIMEOUT_MS 10000u   /* a held command without an answer: NOT READY */
#define SCSI_CLUSTER_RETRIES 32u         /* -ESTALE reruns before NOT READY */
struct shs_state;
struct shs_event;
struct scsi_lu_proposal {
	uint64_t id;                    /* >= 1, never reused while the process lives */
	uint8_t naa[16];
	uint64_t base_version;          /* the version the state was computed on */
	bool wait;                      /* a command is held for the answer */
	struct shs_state *st;           /* the new state */
	size_t nev;
	struct shs_event *ev;           /* SCSI_LU_EVENTS_MAX of them (kind, flags, asc, rel_port, iport) */
};
/*
 * Called on the command's reactor (or the thread of a reset), with no SCSI
 * lock held: copies what it needs and must not block. 0: on its way; a
 * negative errno: nobody will answer (the command fails at once).
 */
typedef int (*scsi_cluster_propose_fn)(const struct scsi_lu_proposal *p, void *arg);
void scsi_cluster_set_handler(scsi_cluster_propose_fn fn, void *arg);
/*
 * The cluster applied version `version` of the LU with this NAA (any
 * thread): the state (mode_valid false: keep the LU's WCE/SWP), then the
 * events to this node's nexuses, aborts included unless own (the proposal
 * was this node's (SCSI_CLUSTER_OWN), which aborted its own tasks). A
 * version not newer than the one held changes nothing (-EALREADY), unless
 * SCSI_CLUSTER_AWAY: the events were raised while this node was away, and
 * are queued whatever the version (the state only if it is newer; no
 * aborts). -ENOENT: no such LU here; -EINVAL: the LU is not in cluster mode,
 * or the state is malformed.
 */
#define SCSI_CLUSTER_OWN  0x1u
#define SCSI_CLUSTER_AWAY 0x2u
int scsi_cluster_apply(const uint8_t naa[16], uint64_t version, const struct shs_state *st,
		       bool mode_valid, const struct shs_event *ev, size_t nev, unsigned int flags);
/* The answer to proposal id (any thread): 0, -ENOENT (not held), -EALREADY. */
int scsi_cluster_done(uint64_t id, int status);
/*
 * The cluster-wide lock of LBAs [lba, lba + blocks) of an LU, for one
 * COMPARE AND WRITE or WRITE ATOMIC (lock), or its release (!lock). The
 * grant is answered with scsi_cluster_done(id, 0) (or an error: the command
 * ends NOT READY, and the lock is released). Called on the command's
 * reactor, no SCSI lock held; copies and must not block.
 */
typedef int (*scsi_cluster_lock_fn)(uint64_t id, const uint8_t naa[16], uint64_t lba,
				    uint32_t blocks, bool lock, void *arg);
void scsi_cluster_set_lock_handler(scsi_cluster_lock_fn fn, void *arg);
/* The version of the LU's state held here (0: never changed), -ENOENT. */
int scsi_cluster_version(const uint8_t naa[16], uint64_t *version);
unsigned int scsi_cluster_held(void);

struct scsi_cmd;
typedef void (*scsi_done_cb)(struct scsi_cmd *cmd);

/*
 * A pipe a READ may leave its data in instead of buf, offered by a
 * datamover that sends from a pipe without a copy (TCP, no data digest).
 * The SCSI layer uses it only for a READ of exactly buf_len bytes that fits
 * (bdev_pipe_room() <= cap) and whose backstore splices
 * (bdev_info.splice_read); then len is set to
 * the bytes asked of the backstore, and when the command ends GOOD they are
 * the data-in, in the pipe, and buf holds nothing. After a failure the pipe
 * may hold part of them.
 */
struct scsi_data_pipe {
	int wfd;                        /* write end, empty when offered */
	uint32_t cap;                   /* the pipe's size, bytes */
	uint32_t len;                   /* out: 0, or the READ went there */
};

struct scsi_cmd {
	/* in */
	const struct scsi_itn *itn;
	uint64_t lun;                   /* decoded LUN number */
	struct scsi_lu *lu;             /* NULL: no such LUN (scsi layer answers) */
	uint8_t cdb[SCSI_CDB_MAX];
	uint8_t cdb_len;
	uint8_t attr;                   /* enum scsi_task_attr */
	bool data_in;                   /* initiator expects data (iSCSI R bit) */
	bool data_out;                  /* initiator sends data (iSCSI W bit) */
	/* data-out contents or data-in space; a command that takes data-out
	 * submitted without data_out has none: the SCSI layer sets buf NULL and
	 * buf_len 0 (the buffer holds no data the initiator sent) */
	uint8_t *buf;
	uint32_t buf_len;               /* = Expected Data Transfer Length */
	struct scsi_data_pipe *pipe;    /* NULL, or see struct scsi_data_pipe */
	scsi_done_cb done;
	void *ctx;
	/* out */
	uint8_t status;
	uint8_t sense_len;
	uint8_t sense[SCSI_SENSE_MAX];  /* fixed format sense data */
	uint32_t xfer_len;              /* see residuals above */
	/* private to the SCSI layer */
	uint32_t cluster_reruns;        /* runs again after -ESTALE (scsi_cluster.c), 0 first */
	uint8_t priv_io[256] __attribute__((aligned(16))); /* holds a struct bdev_io and scratch */
};

void scsi_cmd_submit(struct scsi_cmd *cmd);
/*
 * The core aborted cmd (ABORT TASK and other task management, or its
 * connection is gone) while the SCSI layer still has it. A command that
 * only waits (a held SET TARGET PORT GROUPS) is released: cmd->done runs
 * after the current batch of events on the submitting reactor, never from
 * inside this call. Other commands complete when their I/O does. Call on
 * the reactor that submitted cmd.
 */
void scsi_cmd_abort(struct scsi_cmd *cmd);

/* Sense builder (fixed format, 18 bytes): sets status CHECK CONDITION. */
void scsi_cmd_set_sense(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq);
/* Same, with the INFORMATION field (VALID bit) set, e.g. miscompare offset. */
void scsi_cmd_set_sense_info(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq,
			     uint32_t info);
/* Same, with sense-key-specific field-pointer (SKSV, C/D, bit pointer). */
void scsi_cmd_set_sense_field(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq,
			      bool in_cdb, uint16_t field, int8_t bit);

GW_API_END

#endif
