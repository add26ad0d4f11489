/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HA agent's state machine (docs/ha.md): the cluster document, the sync
 * barrier after every membership change, changes in agreed order, the
 * leader's runtime decisions and the lease. Pure: no corosync, no sockets,
 * no clock of its own. The glue (cluster.c) feeds it corosync's callbacks and
 * the delivered messages with the current monotonic time, and it answers
 * through the ops table. Everything is decided on the agreed message stream,
 * so that every member decides the same thing at the same point of it:
 *
 *   view change (CPG)  -> SYNCING: every member multicasts Sync
 *   every Sync of the view delivered -> the winner (highest generation, then
 *                         highest digest); State from the winner if some
 *                         member differs -> SYNCED
 *   SYNCED: Changes applied in delivery order (generation + 1 each)
 *
 * The local quorum (votequorum) gates what this node does, never what it
 * applies: it sends changes, renews its isergwd's lease and (as the leader)
 * decides placements only while quorate with the quorum ring equal to the
 * CPG ring; it steps its isergwd down as soon as it is not.
 */
#ifndef ISERGW_HA_SM_H
#define ISERGW_HA_SM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "isergw_ha.pb-c.h"

#define HA_PROTO_MIN 1u
#define HA_PROTO_MAX 4u            /* 2: Fenced; 3: LunChange, the LU state (LuPropose, LuApplied,
                                      LuLock, LuUnlock, Sync.lu_states); 4: DataPlane,
                                      TokenChange */
#define HA_PROTO_LU 3u             /* the first that carries the LU state */
#define HA_PROTO_DP 4u             /* the first that carries the data plane's health */
#define HA_PROTO_TOKENS 4u         /* the first with isergw-api's tokens (TokenChange) */
#define HA_MAX_MEMBERS 32u
#define HA_HB_RING 64u                  /* own heartbeats remembered (seq -> send time) */
#define HA_MSG_MAX (1u << 20)           /* largest group message */

typedef Isergw__Ha__GroupMsg HaMsg;

/* A LUN that serves no I/O on a node (isergwd's LunFault, DataPlane.luns). */
struct ha_lun_fault {
	char target[224];
	uint32_t lun;
	char dg[HA_NAME_MAX];
	char state[16];                 /* "failed" or "offline" */
	char reason[256];
};
#define HA_DP_LUNS_MAX 64u              /* LUN faults a DataPlane carries */

/* A node's data plane as its agent reports it (DataPlane, docs/ha.md "Data plane health"). */
struct ha_dp {
	bool known;                     /* reported (an agent of protocol 4 and up) */
	bool serving;                   /* its isergwd is connected and holds a generation */
	bool healthy;                   /* false: it has not served for the grace */
	char (*failed)[HA_NAME_MAX];    /* device groups with a LUN that serves no I/O there */
	size_t nfailed;
	uint32_t luns_online, luns_failed;
	struct ha_lun_fault *luns;      /* at most HA_DP_LUNS_MAX */
	size_t nluns;
};

/* "healthy", "down", "failed", "recovering" or "unknown" (ClusterStatus). */
const char *ha_dp_state_name(const struct ha_dp *dp);
/* Device group dg is among dp's failed ones. */
bool ha_dp_dg_failed(const struct ha_dp *dp, const char *dg);

enum ha_phase {
	HA_PHASE_START = 0,     /* not in the group yet */
	HA_PHASE_SYNCING,       /* barrier of the current view running */
	HA_PHASE_SYNCED,        /* barrier passed: changes are applied */
};

struct ha_member {
	uint32_t nodeid;
	char name[HA_NAME_MAX];
	bool in_view;           /* its agent is in the CPG group */
	bool in_ring;           /* its node is in the corosync membership */
	bool sync_rcvd;         /* its Sync of the current view arrived */
	uint64_t sync_gen;
	uint8_t sync_digest[HA_DIGEST_LEN];
	uint32_t proto_max;
	uint64_t lease_ms;      /* its lease, from its Sync */
	uint64_t last_heard_ms; /* monotonic, when a message of its was delivered (0: never) */
	uint64_t applied_gen;   /* the newest generation its isergwd took */
	bool gw_down;           /* it has no isergwd, and its lease there is over */
	bool foreign;           /* its agent is of another cluster name (this view) */
	bool fenced;            /* the fencer confirmed it fenced since it was last heard of */
	struct ha_dp dp;        /* its data plane, as its last Sync or DataPlane said */
	bool used;
};

/* What the state machine asks of its glue. */
struct ha_sm_ops {
	/* Multicast m to the group (agreed order); 0 or a negative errno (the glue queues on flow control). */
	int (*send)(void *ctx, const HaMsg *m);
	/*
	 * The document changed (new generation or adopted): push it to isergwd
	 * and store it. seq numbers the documents made here (increasing); call
	 * ha_sm_doc_stored(seq) once it is durable (later, from the loop: a
	 * saver thread). This node's Applied waits for that.
	 */
	void (*doc_changed)(void *ctx, const struct ha_doc *d, uint64_t seq);
	/* Renew isergwd's lease until expires_ms (monotonic). */
	void (*lease)(void *ctx, uint64_t expires_ms);
	/* No quorum / not synchronised: isergwd stops serving now. */
	void (*step_down)(void *ctx, const char *reason);
	/* A change this node sent was applied (status 0, generation) or refused. */
	void (*change_done)(void *ctx, uint64_t request_id, int status, const char *err, uint64_t gen);
	/* Some member's applied generation advanced (waiting API requests look again). */
	void (*applied)(void *ctx);
	/*
	 * The LU state (docs/ha.md, "The LU state"): version of LU naa was
	 * applied here (state: a packed isergw.ctl.LuState; events: a packed
	 * isergw.ctl.LuStateApply holding the events, may be empty). Push it
	 * to isergwd; call ha_sm_lu_gw_applied(origin, proposal_id, ...) once
	 * it answered (at once when there is no isergwd). origin 0: a state
	 * adopted at the barrier (nobody waits). NULL: not used.
	 */
	void (*lu_apply)(void *ctx, const uint8_t naa[16], uint64_t version, const uint8_t *state,
			 size_t len, const uint8_t *events, size_t evlen, uint32_t origin,
			 uint64_t proposal_id);
	/* The answer to isergwd's proposal_id (0, -ESTALE, or why it was not applied). */
	void (*lu_done)(void *ctx, uint64_t proposal_id, int status, const char *why);
	/* The LU table changed: store it (durably) before answering anything. */
	void (*lu_store)(void *ctx);
	/*
	 * Unit attentions parked for this node while it was away are in
	 * lus.parked: hand them to isergwd (ha_sm_lu_parked_for) if it is
	 * there, otherwise when it comes. NULL: not used.
	 */
	void (*lu_handover)(void *ctx);
};

/* One LU's state as the agents keep it. */
struct ha_lu {
	uint8_t naa[16];
	uint64_t version;
	uint8_t *state;                 /* packed isergw.ctl.LuState */
	size_t len;
	uint64_t handed;                /* this node's isergwd took the parked UAs up to this version */
};

/*
 * A unit attention for a nexus through a node that was away (not in the
 * view) when the change raising it was applied: kept alike by every member,
 * handed to the node when it returns.
 */
struct ha_lu_parked {
	uint8_t naa[16];
	uint64_t version;               /* the LU version that raised it */
	char node[HA_NAME_MAX];
	char iport[256];
	uint16_t rel_port;
	uint16_t asc;
};
#define HA_PARKED_MAX 4096u

/* A proposal of this node's isergwd, applied, waiting for every member's Applied. */
struct ha_lu_wait {
	uint64_t proposal_id;
	uint8_t naa[16];
	uint64_t version;
	uint32_t need[HA_MAX_MEMBERS];  /* nodeids still to answer */
	size_t nneed;
};
#define HA_LU_WAITS_MAX 256u
#define HA_LU_MAX 4096u                 /* LUs in the table */

/* A cluster-wide LBA lock (COMPARE AND WRITE, WRITE ATOMIC), queued or granted. */
struct ha_lbalock {
	uint32_t origin;
	uint64_t id;
	uint8_t naa[16];
	uint64_t lba;
	uint32_t blocks;
	bool granted;
};
#define HA_LOCKS_MAX 4096u

struct ha_lus {
	struct ha_lu *v;
	size_t n, cap;
	struct ha_lbalock *locks;       /* in delivery order */
	size_t nlocks, caplocks;
	struct { uint32_t origin; uint64_t id; } released[64];  /* unlocked while the barrier ran */
	size_t nreleased;
	uint64_t granted_total;
	bool synced;                    /* the barrier of this view merged every member's table */
	struct ha_lu_wait waits[HA_LU_WAITS_MAX];
	size_t nwaits;
	uint64_t proposed, accepted, stale, refused;   /* counters (status) */
	struct ha_lu_parked *parked;    /* oldest first */
	size_t nparked, capparked;
	uint64_t parked_dropped;        /* past HA_PARKED_MAX (warned once) */
};

struct ha_sm_params {
	uint32_t nodeid;
	const char *name;               /* this node's corosync name */
	const char *cluster;            /* totem.cluster_name */
	uint64_t lease_ms;              /* isergwd's lease */
	uint64_t heartbeat_ms;
	uint32_t proto_max;             /* the newest protocol it speaks (0: HA_PROTO_MAX);
					   lower only to act as an older agent (tests) */
};

struct ha_sm_move {                     /* a move asked of the leader */
	int dg;
	int node;
};

enum ha_req_kind { HA_REQ_CONFIG = 1, HA_REQ_DRAIN, HA_REQ_UNDRAIN, HA_REQ_MOVE };

/*
 * An Applied of ours waiting for the document to be durable here: it goes out
 * once the store has caught up with the document that was current when
 * isergwd answered (need_seq), in the order isergwd answered.
 */
struct ha_sm_applied {
	uint64_t gen;
	uint64_t need_seq;
	int status;
	char err[256];
};
#define HA_SM_APPLIED_MAX 16u

struct ha_sm_req {                      /* a change of ours on its way */
	uint64_t id;
	enum ha_req_kind kind;
	char dg[HA_NAME_MAX];
	char node[HA_NAME_MAX];
	bool sent_applied;              /* its own change was applied; waiting for its effect */
	bool orphans;                   /* a drain by force: its groups get no owner (done once
					 * the node owns none, though they stay moving from it) */
};
#define HA_SM_REQS_MAX 64u

struct ha_sm {
	const struct ha_sm_ops *ops;
	void *ctx;
	uint32_t nodeid;
	char name[HA_NAME_MAX];
	char cluster[HA_NAME_MAX];
	uint64_t lease_ms, heartbeat_ms;
	uint64_t start_ms;

	struct ha_doc *doc;
	enum ha_phase phase;
	uint32_t proto;                 /* the version the group speaks */
	uint32_t proto_max;             /* the newest version this agent speaks */

	/* corosync */
	uint64_t ring_seq;              /* CPG's totem ring */
	uint32_t ring_node;
	bool quorate;
	uint64_t q_ring_seq;            /* votequorum's ring */
	uint32_t q_ring_node;
	uint32_t expected_votes, total_votes;
	bool stepped_down;

	struct ha_member m[HA_MAX_MEMBERS];
	uint32_t view[HA_MAX_MEMBERS];  /* current CPG members, ascending */
	size_t nview;
	bool state_sent;                /* this view's State multicast (by us) */

	/* heartbeats and the lease */
	uint64_t hb_seq;
	uint64_t hb_sent_ms[HA_HB_RING];
	uint64_t hb_last_ms;
	uint64_t hb_back_seq;           /* our newest heartbeat delivered back (0: none yet) */
	uint64_t hb_back_ring;          /* in this CPG ring */
	/*
	 * The agent's loop did not run for a while (the node was frozen, the
	 * process stopped): what it knows of the group may be old until a
	 * heartbeat it sends after that comes back through corosync (CPG's
	 * agreed order delivers every change of the ring before it).
	 */
	uint64_t clock_last_ms;         /* the last ha_sm_clock (0: none yet) */
	bool stale;
	uint64_t stale_hb_seq;          /* the first heartbeat that ends it */
	uint64_t lease_expires_ms;      /* the last renewal given to isergwd (0: none) */
	bool lease_given;               /* by this agent, since it started */
	uint64_t gw_applied_gen;        /* isergwd took this generation (config and ALUA) */
	bool gw_applied_any;
	bool gw_lost;                   /* no isergwd connection */
	bool gw_down_sent;              /* the others were told (Applied -ENOTCONN) */
	uint64_t told_gen;              /* isergwd's generation as told to the group (heartbeats) */

	/* the document's durability (ops->doc_changed, ha_sm_doc_stored) */
	uint64_t doc_seq;               /* the current document's (0: the one loaded at start) */
	uint64_t stored_seq;            /* durable up to this one */
	struct ha_sm_applied applied_q[HA_SM_APPLIED_MAX];
	size_t applied_head, napplied;

	/* the leader's plans */
	bool replace;                   /* rerun the placement at the next chance */
	int *target;                    /* per device group: node index or -1 */
	size_t ntarget;
	bool *dp_elig;                  /* who was eligible for what (dg x node) when last looked at */
	size_t dp_elig_n;
	uint64_t inflight_base;         /* base generation of our Placement on its way (0: none) */
	uint64_t inflight_ms;
	struct ha_sm_move moves[16];
	size_t nmoves;

	uint64_t hold_until_ms;         /* a lost owner's lease runs out then (0: none) */
	/*
	 * This node was out of the quorate group (a minority, no group, not
	 * synchronised) until this view change: a node it did not hear from
	 * may have renewed its lease in the quorate group until then.
	 */
	uint64_t blind_ms;
	uint64_t *dg_moved_ms;          /* per device group of doc: when it last changed hands (0: not seen) */
	uint64_t failovers;             /* device groups whose lost owner was replaced (ClusterStatus) */
	uint64_t planned_moves;         /* device groups moved off a live owner */
	struct ha_sm_req reqs[HA_SM_REQS_MAX];
	size_t nreqs;
	uint64_t next_request;          /* our request ids */
	uint64_t rejected_msgs;         /* garbled, foreign or future messages ignored */

	struct ha_lus lus;              /* the LU state (sm_lu.c) */

	/* this node's data plane (docs/ha.md, "Data plane health") */
	struct ha_dp dp;                /* what it reports (DataPlane, Sync) */
	bool dp_dirty;                  /* changed since it was last multicast */
	uint64_t dp_since_ms;           /* dp.serving has been what it is since */
	struct ha_dp_dg {               /* device groups with a LUN failed here */
		char name[HA_NAME_MAX];
		uint64_t ok_since;      /* served again since (0: failing now) */
	} *dp_dgs;
	size_t ndp_dgs;
};

int ha_sm_init(struct ha_sm *sm, const struct ha_sm_params *p, const struct ha_sm_ops *ops,
	       void *ctx, struct ha_doc *doc /* taken */, uint64_t now);
void ha_sm_fini(struct ha_sm *sm);

/* corosync's node names (cmap nodelist), for members that have not spoken yet. */
void ha_sm_set_name(struct ha_sm *sm, uint32_t nodeid, const char *name);
/* Totem configuration change (CPG_MODEL_V1): the corosync ring and its members. */
void ha_sm_ring(struct ha_sm *sm, uint64_t ring_seq, uint32_t ring_node, const uint32_t *nodes,
		size_t n, uint64_t now);
/* CPG configuration change: the agents in the group now. */
void ha_sm_view(struct ha_sm *sm, const uint32_t *members, size_t n, uint64_t now);
/* votequorum: quorate or not, in which ring. */
void ha_sm_quorum(struct ha_sm *sm, bool quorate, uint64_t ring_seq, uint32_t ring_node,
		  uint32_t expected_votes, uint32_t total_votes, uint64_t now);
/* A message delivered by CPG, from nodeid. Bad input is logged and ignored. */
void ha_sm_deliver(struct ha_sm *sm, uint32_t nodeid, const uint8_t *buf, size_t len,
		   uint64_t now);
/* Every heartbeat_ms (and after events): heartbeats, the leader's waits. */
void ha_sm_tick(struct ha_sm *sm, uint64_t now);
/*
 * The loop's clock, at each tick, delivery and status query: a gap of more
 * than half the lease (and 3 heartbeats) since the previous call makes the
 * view stale (ha_sm_phase_name "stale", not quorate to the status) until
 * the agent's next heartbeat is delivered back.
 */
void ha_sm_clock(struct ha_sm *sm, uint64_t now);
/* The local isergwd took generation gen (status 0) or refused it. */
void ha_sm_gw_applied(struct ha_sm *sm, uint64_t gen, int status, const char *err, uint64_t now);
/* isergwd went away: it holds nothing any more. */
void ha_sm_gw_lost(struct ha_sm *sm);
/*
 * isergwd's LUNs (GetStatus): online of them serve, failed do not (faults
 * lists them, n of them, possibly fewer than failed). A device group with
 * a LUN that does not serve is reported failed at once, and served again
 * once all its LUNs have served for the grace.
 */
void ha_sm_gw_luns(struct ha_sm *sm, uint32_t online, uint32_t failed,
		   const struct ha_lun_fault *faults, size_t n, uint64_t now);
/*
 * How long isergwd may not serve before the node gives its device groups
 * up (and serve again before it takes them back): the cluster's
 * dataplane_grace_ms, or this agent's lease.
 */
uint64_t ha_sm_dp_grace(const struct ha_sm *sm);
/*
 * Every document up to seq (ops->doc_changed) is durable here (or its save
 * failed and was logged): the Applied messages waiting for it go out.
 */
void ha_sm_doc_stored(struct ha_sm *sm, uint64_t seq);

/*
 * Changes from the local API. Each returns a request id (>= 1) whose
 * change_done comes later, or a negative errno with the reason in err
 * (-EAGAIN not synchronised, -ENOLCK no quorum, -ESTALE base generation, ...).
 */
int64_t ha_sm_submit_config(struct ha_sm *sm, const char *config_json, uint64_t base_gen,
			    char *err, size_t errlen);
/*
 * One LUN added to (lun_json set: a JSON object) or removed from (lun_json
 * NULL or "") target iqn, checked at once against the current document
 * (ha_doc_with_lun); without has_lun an added LUN gets the lowest number
 * free, returned in *lun. Multicast as a LunChange (protocol 3), or as the
 * whole configuration it makes while the group speaks an older protocol or
 * the target has LUNs numbered by their place. The request id, or a
 * negative errno with err (-ENOENT, -EEXIST, -EINVAL, -ESTALE, ...).
 */
int64_t ha_sm_submit_lun(struct ha_sm *sm, const char *iqn, bool has_lun, uint32_t *lun,
			 const char *lun_json, uint64_t base_gen, char *err, size_t errlen);
int64_t ha_sm_submit_drain(struct ha_sm *sm, const char *node, bool drained, bool force,
			   char *err, size_t errlen);
int64_t ha_sm_submit_move(struct ha_sm *sm, const char *dg, const char *node, char *err,
			  size_t errlen);
/*
 * isergw-api's token name added (role set; hash its "sha256:SALT:HASH",
 * created its time) or revoked (role NULL), as a TokenChange (docs/api.md,
 * Cluster tokens). The request id, or -EPROTONOSUPPORT (a member speaks
 * protocol 3 or older), -EEXIST, -ENOENT, -EINVAL with err.
 */
int64_t ha_sm_submit_token(struct ha_sm *sm, const char *name, const char *role,
			   const char *hash, uint64_t created, char *err, size_t errlen);
/*
 * A host's SET TARGET PORT GROUPS: a move, except while the device group is
 * moving or within HA_HOST_MOVE_SETTLE_MS of its last change of hands
 * (-EAGAIN: NOT READY, transition, for the host). A host that activates a
 * path group of several nodes' ports (Linux's alua handler, when the owner's
 * path fails) asks through each of them at once; without the wait the group
 * would move back and forth between them.
 */
#define HA_HOST_MOVE_SETTLE_MS 5000u
int64_t ha_sm_submit_host_move(struct ha_sm *sm, const char *dg, const char *node, uint64_t now,
			       char *err, size_t errlen);

/*
 * The fencer confirmed NODE fenced: multicast Fenced, so that its groups move
 * without waiting for its lease. 0 once sent, or a negative errno with the
 * reason in err: -ENOLCK/-EAGAIN (as the changes), -EPROTONOSUPPORT (a member
 * speaks protocol 1), -ENOENT (no such node), -EBUSY (it is in the corosync
 * membership or its agent in the group: not dead).
 */
int ha_sm_submit_fenced(struct ha_sm *sm, const char *node, char *err, size_t errlen);

/*
 * The LU state (sm_lu.c). A proposal of the local isergwd: multicast, or a
 * negative errno (the glue answers isergwd with it): -ENOLCK no quorum,
 * -EAGAIN not synchronised, -EPROTONOSUPPORT the group speaks < 3.
 */
int ha_sm_lu_propose(struct ha_sm *sm, uint64_t proposal_id, const uint8_t naa[16],
		     uint64_t base_version, const uint8_t *state, size_t len,
		     const uint8_t *events, size_t evlen, char *err, size_t errlen);
/*
 * A cluster-wide LBA lock for the local isergwd's lock_id (release: give it
 * back). 0 once multicast (the grant comes as ops->lu_done(lock_id, 0), a
 * refusal as lu_done(lock_id, -EAGAIN)), or a negative errno as
 * ha_sm_lu_propose.
 */
int ha_sm_lu_lock(struct ha_sm *sm, uint64_t lock_id, const uint8_t naa[16], uint64_t lba,
		  uint32_t blocks, bool release, char *err, size_t errlen);
/* isergwd answered the LuStateApply of (origin, proposal_id) (origin 0: nobody waits). */
void ha_sm_lu_gw_applied(struct ha_sm *sm, uint32_t origin, uint64_t proposal_id,
			 const uint8_t naa[16], uint64_t version, int status);
/* The local isergwd went away: its proposals' waits are dropped. */
void ha_sm_lu_gw_lost(struct ha_sm *sm);
/* The table loaded from disk at start (taken: states malloc'd). */
void ha_sm_lu_load(struct ha_sm *sm, struct ha_lu *v, size_t n);
/* Unit attentions for this node, loaded from its store (not yet handed over). */
void ha_sm_lu_load_parked(struct ha_sm *sm, const struct ha_lu_parked *p, size_t n);
/*
 * Events (a packed isergw.ctl.LuStateApply) of version `version` of LU naa
 * that this node's isergwd could not take (it is not connected): the ones
 * for nexuses through this node's portals are parked for it.
 */
void ha_sm_lu_park_own(struct ha_sm *sm, const uint8_t naa[16], uint64_t version,
		       const uint8_t *events, size_t evlen);
/*
 * Copies the unit attentions parked for this node of the i-th LU of the
 * table into out (at most max): the number copied. Once isergwd took them,
 * ha_sm_lu_parked_taken(naa, the highest version among them) drops them
 * (and stores the table); until then they stay, and go again on reconnect.
 */
size_t ha_sm_lu_parked_for(const struct ha_sm *sm, size_t i, struct ha_lu_parked *out,
			   size_t max);
void ha_sm_lu_parked_taken(struct ha_sm *sm, const uint8_t naa[16], uint64_t upto);
size_t ha_sm_lu_parked_mine(const struct ha_sm *sm);
/* A parked UA as carried (Sync, LuStore): out points into e. */
void ha_lu_parked_to_pb(const struct ha_lu_parked *e, Isergw__Ha__LuParked *out);
/* And back: 0, or -EINVAL when malformed (the codec's and the store's check). */
int ha_lu_parked_from_pb(const Isergw__Ha__LuParked *p, struct ha_lu_parked *out);
const struct ha_lu *ha_sm_lu_find(const struct ha_sm *sm, const uint8_t naa[16]);
/* the state machine's hooks (sm.c, sm_barrier.c) */
void ha_sm_lu_view(struct ha_sm *sm);
void ha_sm_lu_sync(struct ha_sm *sm, const Isergw__Ha__Sync *s, bool last);
void ha_sm_lu_fill_sync(struct ha_sm *sm, Isergw__Ha__Sync *s);   /* free with ha_sm_lu_free_sync */
void ha_sm_lu_free_sync(Isergw__Ha__Sync *s);
void ha_sm_lu_deliver(struct ha_sm *sm, uint32_t from, const HaMsg *m);
void ha_sm_lu_fini(struct ha_sm *sm);
/* The data plane's health (sm_dp.c); the state machine's hooks (sm.c, sm_barrier.c). */
void ha_sm_dp_init(struct ha_sm *sm, uint64_t now);
void ha_sm_dp_tick(struct ha_sm *sm, uint64_t now);
/* This node's DataPlane (pointing into sm; free with ha_sm_dp_free_pb): 0 or -ENOMEM. */
int ha_sm_dp_fill(const struct ha_sm *sm, Isergw__Ha__DataPlane *out);
void ha_sm_dp_free_pb(Isergw__Ha__DataPlane *dp);
/* LUN fault f as a message (pointing into f). */
void ha_lun_fault_to_pb(const struct ha_lun_fault *f, Isergw__Ha__LunFault *p);
/* A member's DataPlane (or its Sync without one: p NULL) delivered. */
void ha_sm_dp_deliver(struct ha_sm *sm, struct ha_member *from, const Isergw__Ha__DataPlane *p);
/*
 * How well node n of the document can serve device group g (lower is
 * better): 0 its LUNs of g serve there (or it does not report), 1 a LUN of g
 * does not serve there, 2 its data plane failed, 3 not at all (!base: its
 * agent is not in the group, or it is drained).
 */
int ha_sm_dp_tier(const struct ha_sm *sm, int n, int g, bool base);
void ha_sm_dp_fini(struct ha_sm *sm);
/*
 * Between the state machine's files (sm.c: members, the document, changes,
 * inputs; sm_barrier.c; sm_leader.c; sm_submit.c).
 */
void ha_sm_copy_name(char dst[HA_NAME_MAX], const char *src);
bool ha_sm_in_view(const struct ha_sm *sm, uint32_t nodeid);
bool ha_sm_node_in_view(const struct ha_sm *sm, int n);
bool ha_sm_member_holds(const struct ha_member *m, uint64_t gen);
bool ha_sm_node_holds(const struct ha_sm *sm, int n, uint64_t gen);
bool ha_sm_majority_agrees(const struct ha_sm *sm);
struct ha_sm_req *ha_sm_req_find(struct ha_sm *sm, uint64_t id, size_t *idx);
void ha_sm_doc_set(struct ha_sm *sm, struct ha_doc *d, uint64_t now);
void ha_sm_sync_check(struct ha_sm *sm, uint64_t now);
void ha_sm_on_sync(struct ha_sm *sm, struct ha_member *from, const Isergw__Ha__Sync *s,
		   uint64_t now);
bool ha_sm_announced(struct ha_sm *sm, uint64_t gen);
void ha_sm_on_state(struct ha_sm *sm, uint32_t nodeid, const Isergw__Ha__State *st,
		    uint64_t now);
void ha_sm_lease_check(struct ha_sm *sm, uint64_t seq, uint64_t now);
bool ha_sm_lease_over(const struct ha_sm *sm, int n, uint64_t now, uint64_t *until);
void ha_sm_leader_reconcile(struct ha_sm *sm, uint64_t now);
void ha_sm_on_fenced(struct ha_sm *sm, uint32_t from, const char *node);
/* sm_lu.c's: multicast m in the protocol version in use (a failure is logged). */
int ha_sm_send(struct ha_sm *sm, HaMsg *m);

/* Queries. */
bool ha_sm_can_change(const struct ha_sm *sm, char *why, size_t whylen);
const char *ha_sm_phase_name(const struct ha_sm *sm);
struct ha_member *ha_sm_member(struct ha_sm *sm, uint32_t nodeid);
/* The member whose name is name, or NULL. */
const struct ha_member *ha_sm_member_by_name(const struct ha_sm *sm, const char *name);
/* Node index in the document of nodeid (-1: not a node of the configuration). */
int ha_sm_node_of(const struct ha_sm *sm, uint32_t nodeid);
bool ha_sm_is_leader(const struct ha_sm *sm);
/*
 * Every node of the configuration whose agent is in the group took generation
 * gen; the names of those that did not into pending.
 */
bool ha_sm_all_applied(const struct ha_sm *sm, uint64_t gen, char pending[][HA_NAME_MAX],
		       size_t *npending, size_t max);

/*
 * The ALUA states of node `self` of document d for device group dg, one per
 * node of the configuration with its target port group (states are SPC-4
 * codes). Pure: the same document gives the same map on every node.
 */
struct ha_alua_entry {
	uint16_t tpg_id;
	uint8_t state;
	bool pref;
};
void ha_alua_states(const struct ha_doc *d, int dg, struct ha_alua_entry *out);

/* Group message codec (codec.c). */
/* Pack m (version and cluster set by the caller) into a malloc'd buffer. */
int ha_msg_pack(const HaMsg *m, uint8_t **out, size_t *len);
/*
 * Unpack and check a delivered message: a GroupMsg of a version we speak
 * (-EPROTONOSUPPORT otherwise), one body, fields in range (-EINVAL, -EBADMSG
 * for bytes that are no GroupMsg), the reason in err.
 */
int ha_msg_decode(const uint8_t *buf, size_t len, HaMsg **out, char *err, size_t errlen);
void ha_msg_free(HaMsg *m);
const char *ha_msg_kind(const HaMsg *m);

#endif
