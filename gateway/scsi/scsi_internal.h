/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to gateway/scsi/: the LU object, the per-command private area,
 * the dispatch table entry and the helpers shared by the scsi_*.c files.
 *
 * Locking: lu->lock guards the nexus/UA list, reservations, mode pages and
 * the write gate. It is never held across bdev I/O, callbacks or cmd->done.
 * lu->ua_pending and lu->res_active mirror "is there anything to check" so
 * that the common READ/WRITE path takes no lock for UA/reservation checks.
 */
#ifndef ISERGW_SCSI_INTERNAL_H
#define ISERGW_SCSI_INTERNAL_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "backend/backend.h"
#include "scsi/scsi.h"
#include "scsi/scsi_shared.h"
#include "common/list.h"

#define SCSI_LOG "scsi"

/* Limits advertised in the Block Limits VPD page (0xB0). */
#define SCSI_MAX_XFER_BYTES     (8u << 20)   /* reported, not enforced */
#define SCSI_OPT_XFER_BYTES     (1u << 20)
#define SCSI_MAX_CAW_BLOCKS     255u         /* MAXIMUM COMPARE AND WRITE LENGTH */
#define SCSI_MAX_UNMAP_LBAS     0x100000u
#define SCSI_MAX_UNMAP_DESC     1024u
#define SCSI_MAX_WS_BLOCKS      0x400000ull  /* MAXIMUM WRITE SAME LENGTH */
#define SCSI_WS_CHUNK_BYTES     (1u << 20)   /* WRITE SAME bounce buffer size */
#define SCSI_MAX_ATOMIC_BYTES   (1u << 20)   /* MAXIMUM ATOMIC TRANSFER LENGTH, in bytes */
#define SCSI_XCOPY_CHUNK_BYTES  (1u << 20)   /* EXTENDED COPY bounce buffer size */
#define SCSI_XCOPY_MAX_CSCD     8u           /* MAXIMUM CSCD DESCRIPTOR COUNT */
#define SCSI_XCOPY_MAX_SEGS     16u          /* MAXIMUM SEGMENT DESCRIPTOR COUNT */
#define SCSI_XCOPY_MAX_DESC_LEN 1024u        /* MAXIMUM DESCRIPTOR LIST LENGTH */
#define SCSI_XCOPY_MAX_SEG_BYTES (64u << 20) /* MAXIMUM SEGMENT LENGTH */
#define SCSI_XCOPY_STATUS_MAX   16u          /* retained copy statuses per LU */

#define SCSI_SK_COPY_ABORTED    0xa          /* sense key, SPC-4 */

#define SCSI_UA_MAX             16
#define SCSI_NEXUS_DETACHED_MAX 1024         /* departed nexuses kept for their UAs */

/* Additional sense codes (ASC << 8 | ASCQ) used across files. */
#define ASC_NO_ADDITIONAL       0x0000
#define ASC_COPY_TARGET_UNREACHABLE 0x0d02
#define ASC_INVALID_FIELD_IU    0x0e03
#define ASC_OPERATION_IN_PROGRESS 0x0016
#define ASC_TOO_MANY_CSCD       0x2606
#define ASC_UNSUPPORTED_CSCD_TYPE 0x2607
#define ASC_TOO_MANY_SEGMENTS   0x2608
#define ASC_UNSUPPORTED_SEG_TYPE 0x2609
#define ASC_WRITE_ERROR         0x0c00
#define ASC_UNRECOVERED_READ    0x1100
#define ASC_MISCOMPARE_VERIFY   0x1d00
#define ASC_PARAM_LIST_LENGTH   0x1a00
#define ASC_INVALID_OPCODE      0x2000
#define ASC_LU_BECOMING_READY   0x0401       /* NOT READY: backend unreachable */
#define ASC_LU_NOT_READY_IN_PROGRESS 0x0407  /* NOT READY: operation in progress (cluster) */
#define ASC_LBA_OUT_OF_RANGE    0x2100
#define ASC_INVALID_FIELD_CDB   0x2400
#define ASC_LU_NOT_SUPPORTED    0x2500
#define ASC_INVALID_FIELD_PARAM 0x2600
#define ASC_INVALID_RELEASE_PR  0x2604
#define ASC_WRITE_PROTECTED     0x2700
#define ASC_SW_WRITE_PROTECTED  0x2702
#define ASC_SPACE_ALLOC_FAILED  0x2707
#define ASC_POWER_ON_RESET      0x2900
#define ASC_BUS_RESET           0x2902
#define ASC_BDR_OCCURRED        0x2903
#define ASC_MODE_PARAMS_CHANGED 0x2a01
#define ASC_CAPACITY_CHANGED    0x2a09       /* CAPACITY DATA HAS CHANGED */
#define ASC_RESERVATIONS_PREEMPTED 0x2a03
#define ASC_ALUA_STATE_CHANGED  0x2a06       /* ASYMMETRIC ACCESS STATE CHANGED */
#define ASC_ALUA_TRANSITION     0x040a       /* NOT READY: asymmetric access state transition */
#define ASC_ALUA_STANDBY        0x040b       /* NOT READY: target port in standby state */
#define ASC_ALUA_UNAVAILABLE    0x040c       /* NOT READY: target port in unavailable state */
#define ASC_ALUA_OFFLINE        0x0412       /* NOT READY: logical unit offline */
#define ASC_STPG_FAILED         0x670a       /* SET TARGET PORT GROUPS COMMAND FAILED */
#define ASC_RESERVATIONS_RELEASED  0x2a04
#define ASC_REGISTRATIONS_PREEMPTED 0x2a05
#define ASC_COMMANDS_CLEARED_BY_OTHER 0x2f00
#define ASC_SAVING_NOT_SUPPORTED 0x3900
#define ASC_INTERNAL_TARGET_FAILURE 0x4400
#define ASC_INSUFFICIENT_RESOURCES 0x5503

/* Persistent reservation types. */
#define PR_TYPE_WE      0x1
#define PR_TYPE_EA      0x3
#define PR_TYPE_WE_RO   0x5
#define PR_TYPE_EA_RO   0x6
#define PR_TYPE_WE_AR   0x7
#define PR_TYPE_EA_AR   0x8

/* MAXIMUM and OPTIMAL TRANSFER LENGTH in bytes (VPD B0h): the configured
 * limit, and the backstore's optimal size (a backend target's) if smaller. */
static inline uint32_t scsi_lu_max_xfer(const struct scsi_lu *lu);
static inline uint32_t scsi_lu_opt_xfer(const struct scsi_lu *lu);

/* Identity of an I_T nexus as the LU remembers it. */
struct scsi_nexus {
	struct list_head link;
	char iport[256];        /* initiator port name */
	uint16_t rel_port;      /* relative target port id */
	unsigned int attached;  /* live scsi_itn objects using it */
	uint8_t ua_n;
	uint16_t ua[SCSI_UA_MAX]; /* asc << 8 | ascq, oldest first */
};

struct pr_reg {
	struct list_head link;
	uint64_t key;
	char iport[256];
	uint16_t rel_port;
	bool all_tg_pt;
};

struct scsi_lu {
	struct scsi_lu_params params;
	struct bdev *bdev;
	/* atomic: a backstore whose backend was unreachable at start learns them later */
	_Atomic uint32_t block_size;
	_Atomic uint64_t nblocks;       /* 0: not known yet (NOT READY for medium access) */
	uint8_t tpgs;           /* INQUIRY TPGS field: 3, implicit and explicit ALUA */
	_Atomic size_t alua_dg; /* ALUA device group (index, scsi_alua.c) */
	struct list_head all_link; /* every LU of the process (scsi_lu.c), for ALUA UAs */

	pthread_mutex_t lock;
	atomic_uint ua_pending; /* total UAs queued on all nexuses */
	atomic_bool res_active; /* a SCSI-2 or persistent reservation exists */

	struct list_head nexuses;       /* struct scsi_nexus */
	unsigned int ndetached;

	/* mode pages (current values): written under lock, read on the I/O path */
	atomic_bool wce;
	atomic_bool swp;

	/* SCSI-2 RESERVE/RELEASE */
	bool r2_held;
	char r2_iport[256];
	uint16_t r2_rel_port;

	/* persistent reservations */
	uint32_t pr_generation;
	struct list_head pr_regs;       /* struct pr_reg */
	bool pr_held;
	uint8_t pr_type;
	struct pr_reg *pr_holder;       /* NULL for all-registrants types */
	bool pr_aptpl;
	uint64_t pr_save_seq;           /* bumped on every change, under lock */
	pthread_mutex_t pr_save_lock;   /* orders writers of pr_path */
	uint64_t pr_saved_seq;          /* under pr_save_lock */

	/*
	 * The gate (see scsi_sbc.c). Under lock: gate_writes, gate_excl and the
	 * FIFO. gate_readers counts reads in flight and gate_atomics the WRITE
	 * ATOMIC commands queued or running; both are atomics so that a read
	 * takes no lock unless a WRITE ATOMIC is around.
	 */
	unsigned int gate_writes;
	uint8_t gate_excl;              /* enum scsi_gate running alone, or GATE_NONE */
	atomic_uint gate_readers;
	atomic_uint gate_atomics;
	struct list_head gate_waiters;  /* struct scsi_priv.wait_link, FIFO */

	/* EXTENDED COPY: copy statuses kept for RECEIVE COPY RESULTS (under lock) */
	struct list_head xcopy_status;  /* struct xcopy_status */
	unsigned int nxcopy_status;

	/*
	 * State shared with the other nodes serving this LU (scsi_shared.c);
	 * NULL when standalone. sh_seen is the file's change counter last
	 * synced (read without the lock by the command path); the rest is
	 * under lock.
	 */
	struct shs *sh;
	_Atomic uint64_t sh_seen;
	uint64_t sh_state_gen;          /* state generation of the local copy */
	uint64_t sh_ev_seen;            /* last event applied */
	uint64_t sh_bad_gen;            /* state generation found corrupt (logged once) */
	uint64_t sh_origin;             /* this LU object's id in the events it posts */
	bool sh_posted;                 /* an event was posted since scsi_lu_shared_begin */
	struct scsi_lu_proposal *cl_prop; /* cluster store: the change being made (under lock) */
	bool cl_force;                  /* propose even an unchanged state (a read barrier) */
	struct list_head sh_aborts;     /* aborts asked by other nodes, for the core */
};

static inline uint32_t scsi_lu_max_xfer(const struct scsi_lu *lu)
{
	return lu->params.max_xfer_bytes ? lu->params.max_xfer_bytes : SCSI_MAX_XFER_BYTES;
}

static inline uint32_t scsi_lu_opt_xfer(const struct scsi_lu *lu)
{
	uint32_t opt = SCSI_OPT_XFER_BYTES, max = scsi_lu_max_xfer(lu);

	if (lu->bdev->info.opt_xfer_bytes >= lu->block_size && lu->bdev->info.opt_xfer_bytes < opt)
		opt = lu->bdev->info.opt_xfer_bytes;
	return opt < max ? opt : max;
}

/* Per-command private state, lives in cmd->priv_io. */
struct scsi_priv {
	struct bdev_io io;              /* first: not zeroed at submission (scsi_sbc.c's submit sets it) */
	struct iovec iov[2];
	struct list_head wait_link;
	struct reactor *reactor;        /* submitting reactor (NULL in tests) */
	void (*resume)(struct scsi_cmd *cmd);
	struct scsi_cmd *cmd;
	void *bounce;
	uint64_t lba;
	uint64_t remaining;             /* blocks still to do (WRITE SAME, VERIFY) */
	uint32_t nblocks;
	uint32_t chunk;                 /* blocks per WRITE SAME or VERIFY I/O */
	uint32_t idx;                   /* UNMAP descriptor index; VERIFY: blocks compared */
	uint32_t ndesc;
	uint8_t gate;                   /* enum scsi_gate */
	uint8_t step;
	bool fua;
	uint64_t cl_lock;               /* cluster-wide LBA lock held (scsi_cluster.c), 0: none */
};
static_assert(sizeof(struct scsi_priv) <= sizeof(((struct scsi_cmd *)0)->priv_io),
	      "scsi_priv must fit in scsi_cmd.priv_io");

static inline struct scsi_priv *cmd_priv(struct scsi_cmd *cmd)
{
	return (struct scsi_priv *)(void *)cmd->priv_io;
}

/*
 * Gate kinds. WRITE: ordinary medium writes, concurrent with each other.
 * CAW: runs alone against writes (COMPARE AND WRITE, ORWRITE). ATOMIC: runs
 * alone against writes and reads (WRITE ATOMIC). READ: a read that had to
 * queue because a WRITE ATOMIC is queued or running; READ_FAST: a read that
 * did not (counted in gate_readers only).
 */
enum scsi_gate {
	GATE_NONE = 0,
	GATE_WRITE,
	GATE_CAW,
	GATE_ATOMIC,
	GATE_READ,
	GATE_READ_FAST,
};

/* Reservation classes of a command (SPC-4 5.13 table 66 / SBC-3 table). */
enum pr_class {
	PRC_ALLOW = 0,  /* allowed under every reservation */
	PRC_READ,       /* reads medium: WE allows non-holders */
	PRC_WRITE,      /* writes medium / changes state: only holders or registrants (RO/AR) */
};

/* Dispatch table entry. */
#define OPF_SA     0x01 /* opcode has service actions (cdb[1] & 0x1f) */
#define OPF_NO_UA  0x02 /* neither reports nor clears a unit attention */
#define OPF_NO_LU  0x04 /* handled even when cmd->lu == NULL */
#define OPF_R2_OK  0x08 /* allowed when another nexus holds a SCSI-2 reservation */
#define OPF_DOUT   0x10 /* takes data-out (write data, a parameter list) */

struct scsi_opdef {
	uint8_t op;
	uint8_t sa;
	uint8_t cdb_len;
	uint8_t flags;
	uint8_t prc;            /* enum pr_class (may be refined per CDB) */
	uint8_t usage[16];      /* CDB USAGE DATA for REPORT SUPPORTED OPCODES */
	void (*fn)(struct scsi_cmd *cmd);
	bool (*avail)(const struct scsi_lu *lu);
	uint32_t timeout_s;     /* recommended timeout for RCTD */
	const char *name;
};

/* Big-endian helpers. */
static inline uint16_t get_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}
static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}
static inline void put_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16); p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)v;
}
static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

/* ---- scsi_cmd.c: completion and shared answers ---- */
void scsi_complete(struct scsi_cmd *cmd);
void scsi_good(struct scsi_cmd *cmd);
void scsi_fail(struct scsi_cmd *cmd, uint8_t key, uint16_t asc);
/* INVALID FIELD IN CDB pointing at byte/bit of the CDB, then complete. */
void scsi_fail_cdb(struct scsi_cmd *cmd, uint16_t byte, int8_t bit);
/* INVALID FIELD IN PARAMETER LIST pointing at byte/bit, then complete. */
void scsi_fail_param(struct scsi_cmd *cmd, uint16_t byte, int8_t bit);
void scsi_conflict(struct scsi_cmd *cmd);
/* Copy a response built in `data` (len bytes available), truncated to the
 * allocation length and buf_len; sets xfer_len; status GOOD; completes. */
void scsi_reply(struct scsi_cmd *cmd, const uint8_t *data, uint32_t len, uint32_t alloc_len);
const struct scsi_opdef *scsi_find_op(uint8_t op, uint8_t sa, bool *op_known);
const struct scsi_opdef *scsi_op_table(size_t *n);
bool scsi_lu_thin(const struct scsi_lu *lu);
bool scsi_lu_write_protected(const struct scsi_lu *lu);
void scsi_nexus_id(const struct scsi_itn *itn, const char **iport, uint16_t *rel_port);

/* ---- scsi_lu.c: nexuses and unit attentions (call with lu->lock held) ---- */
struct scsi_nexus *scsi_nexus_lookup(struct scsi_lu *lu, const char *iport, uint16_t rel, bool create);
void scsi_ua_add(struct scsi_lu *lu, struct scsi_nexus *nx, uint16_t asc);
/* To every known nexus except `except` (may be NULL). */
void scsi_ua_add_all(struct scsi_lu *lu, const struct scsi_nexus *except, uint16_t asc);
/* Pops the oldest UA of the nexus; returns false if none. */
bool scsi_ua_pop(struct scsi_lu *lu, const char *iport, uint16_t rel, uint16_t *asc);

/*
 * Every nexus of every LU of ALUA device group dg (-1: every LU) gets the UA
 * `asc`, except nexus (except_iport, except_rel) of except_lu (may be NULL).
 * Takes each lu->lock.
 */
void scsi_lu_ua_all_lus(uint16_t asc, int dg, const struct scsi_lu *except_lu,
			const char *except_iport, uint16_t except_rel);

/* ---- scsi_shared.c: state shared with other nodes (only when lu->sh) ---- */
int scsi_lu_shared_open(struct scsi_lu *lu);
void scsi_lu_shared_close(struct scsi_lu *lu);
/* The file changed since the last sync (one atomic load each). */
static inline bool lu_shared_stale(const struct scsi_lu *lu)
{
	return shs_change(lu->sh) != atomic_load_explicit(&lu->sh_seen, memory_order_relaxed);
}
/* No lock held: sync the local copy, then run the aborts other nodes asked for. */
void scsi_lu_shared_refresh(struct scsi_lu *lu);
/*
 * lu->lock held: exclusive file lock and sync (0, or -errno: the command must
 * fail); then change the local copy, post UAs with scsi_lu_shared_ua, and
 * scsi_lu_shared_end writes the copy back if state_changed, publishes, applies the
 * posted events to this node's nexuses and unlocks the file.
 */
int scsi_lu_shared_begin(struct scsi_lu *lu);
void scsi_lu_shared_end(struct scsi_lu *lu, bool state_changed);
void scsi_lu_shared_ua(struct scsi_lu *lu, uint8_t kind, uint8_t flags, uint16_t asc,
		       const char *iport, uint16_t rel_port);
/* No lock held: hands the queued aborts to the core. */
void scsi_lu_shared_run_aborts(struct scsi_lu *lu);

/* ---- scsi_cluster.c: the cluster store's proposals (lu->sh->cluster) ---- */
struct scsi_lu_proposal *scsi_lu_proposal_new(const struct scsi_lu *lu);
void scsi_lu_proposal_free(struct scsi_lu_proposal *p);
/* lu->lock held, after scsi_lu_shared_end: the proposal the change made (NULL: none). */
static inline struct scsi_lu_proposal *lu_shared_take(struct scsi_lu *lu)
{
	struct scsi_lu_proposal *p = lu->cl_prop;

	lu->cl_prop = NULL;
	return p;
}
/*
 * No lock held: hands proposal p (taken) to the cluster. cmd NULL: nothing
 * waits (a reset). Otherwise cmd is held and finish(cmd, status, ctx) runs
 * on its reactor with the answer (0, -ESTALE: run the command again, other:
 * failed); returns 0 then, or a negative errno (nothing held: the caller
 * fails cmd with scsi_lu_cluster_fail and frees ctx).
 */
typedef void (*lu_cluster_finish_fn)(struct scsi_cmd *cmd, int status, void *ctx);
int scsi_lu_cluster_submit(struct scsi_lu *lu, struct scsi_lu_proposal *p, struct scsi_cmd *cmd,
			   lu_cluster_finish_fn finish, void *ctx);
/* The command's answer when the cluster did not apply its change. */
void scsi_lu_cluster_fail(struct scsi_cmd *cmd, int status);
/* -ESTALE: may cmd run again? (counts its reruns) */
bool scsi_lu_cluster_rerun_ok(struct scsi_cmd *cmd);
void scsi_cluster_cmd_abort(struct scsi_cmd *cmd);
/*
 * COMPARE AND WRITE / WRITE ATOMIC on an LU whose state the cluster carries:
 * the cluster-wide lock of [lba, lba + n) first. Returns false when no lock
 * is needed (then(cmd) is the caller's to run now); true when cmd is held
 * until the lock is granted (then(cmd) runs on its reactor, pv->cl_lock set)
 * or failed (cmd completed NOT READY). scsi_lu_cluster_unlock releases a held
 * lock (no lock held: nothing).
 */
bool scsi_lu_cluster_lock(struct scsi_cmd *cmd, uint64_t lba, uint32_t n,
			  void (*then)(struct scsi_cmd *cmd));
void scsi_lu_cluster_unlock(struct scsi_cmd *cmd);
/* scsi_lu.c: under the LU list's lock, fn(lu) for the LU with this NAA; -ENOENT. */
int scsi_lu_with_naa(const uint8_t naa[16], int (*fn)(struct scsi_lu *lu, void *arg), void *arg);
/* For scsi_shared_poll(): sync one LU, move its aborts to a list; run the list later. */
void scsi_lu_shared_poll_one(struct scsi_lu *lu, struct list_head *aborts);
void scsi_lu_shared_run_abort_list(struct list_head *aborts);

/* ---- scsi_alua.c ---- */
/* A port of this node (registered by the core or a nexus). */
bool scsi_alua_port_is_local(uint16_t rel_port);
/* The index of device group `name` ("" = default), created if unknown; or -errno. */
int scsi_alua_dg_ref(const char *name);
void scsi_alua_rtpg(struct scsi_cmd *cmd);
void scsi_alua_stpg(struct scsi_cmd *cmd);
/* true if the command was refused (NOT READY) because of the port's ALUA state. */
bool scsi_alua_check(struct scsi_cmd *cmd);
/* A held SET TARGET PORT GROUPS is released (see scsi_cmd_abort). */
void scsi_alua_cmd_abort(struct scsi_cmd *cmd);

/* ---- scsi_spc.c ---- */
void scsi_spc_inquiry(struct scsi_cmd *cmd);
void scsi_spc_report_luns(struct scsi_cmd *cmd);
void scsi_spc_request_sense(struct scsi_cmd *cmd);
void scsi_spc_mode_sense(struct scsi_cmd *cmd);
void scsi_spc_mode_select(struct scsi_cmd *cmd);
void scsi_spc_rsoc(struct scsi_cmd *cmd);
void scsi_spc_rstmf(struct scsi_cmd *cmd);
void scsi_spc_test_unit_ready(struct scsi_cmd *cmd);

/* ---- scsi_sbc.c ---- */
void scsi_sbc_read_capacity10(struct scsi_cmd *cmd);
void scsi_sbc_read_capacity16(struct scsi_cmd *cmd);
void scsi_sbc_read(struct scsi_cmd *cmd);
void scsi_sbc_write(struct scsi_cmd *cmd);
void scsi_sbc_verify(struct scsi_cmd *cmd);
void scsi_sbc_write_same(struct scsi_cmd *cmd);
void scsi_sbc_unmap(struct scsi_cmd *cmd);
void scsi_sbc_compare_and_write(struct scsi_cmd *cmd);
void scsi_sbc_sync_cache(struct scsi_cmd *cmd);
void scsi_sbc_prefetch(struct scsi_cmd *cmd);
void scsi_sbc_get_lba_status(struct scsi_cmd *cmd);
void scsi_sbc_start_stop(struct scsi_cmd *cmd);
void scsi_sbc_prevent_allow(struct scsi_cmd *cmd);
void scsi_sbc_read_defect_data(struct scsi_cmd *cmd);
void scsi_sbc_orwrite(struct scsi_cmd *cmd);
void scsi_sbc_write_atomic(struct scsi_cmd *cmd);
/* The gate, for the other scsi_*.c files. */
bool scsi_sbc_gate_enter(struct scsi_cmd *cmd, enum scsi_gate kind,
			 void (*resume)(struct scsi_cmd *cmd));
void scsi_sbc_gate_exit(struct scsi_cmd *cmd);
int scsi_sbc_submit(struct scsi_cmd *cmd, enum bdev_op op, uint64_t off, uint64_t len, void *buf,
		    uint32_t flags, bdev_io_cb cb);

/* ---- scsi_xcopy.c ---- */
void scsi_xcopy_extended_copy(struct scsi_cmd *cmd);
void scsi_xcopy_receive_copy_results(struct scsi_cmd *cmd);
/* Builds the Third-party Copy VPD page (8Fh) into d (>= 96 bytes); returns its length. */
uint32_t scsi_xcopy_vpd_page(const struct scsi_cmd *cmd, uint8_t *d);
/* Frees the kept copy statuses (LU teardown). */
void scsi_xcopy_status_free(struct scsi_lu *lu);

/* ---- scsi_pr.c ---- */
void scsi_pr_reserve6(struct scsi_cmd *cmd);
void scsi_pr_release6(struct scsi_cmd *cmd);
void scsi_pr_in(struct scsi_cmd *cmd);
void scsi_pr_out(struct scsi_cmd *cmd);
/* true if the command must end in RESERVATION CONFLICT (lock taken inside). */
bool scsi_pr_check_conflict(struct scsi_cmd *cmd, const struct scsi_opdef *def);
int scsi_pr_load(struct scsi_lu *lu);
void scsi_pr_free(struct scsi_lu *lu);
/* Called by scsi_lu.c with lu->lock held. */
/* lu->lock held: the nexus is gone (its SCSI-2 reservation with it); a cluster proposal to submit. */
struct scsi_lu_proposal *scsi_pr_nexus_gone(struct scsi_lu *lu, const char *iport, uint16_t rel);
void scsi_pr_reset(struct scsi_lu *lu);
/* Shared state: replace the local copy (lu->lock held; 0 or -ENOMEM) / write it out. */
int scsi_pr_import(struct scsi_lu *lu, const struct shs_state *st);
void scsi_pr_export(struct scsi_lu *lu, struct shs_state *st);
/* Calls the core's abort handler (iport NULL: every nexus; rel_port 0: every port). */
void scsi_pr_abort_nexus(struct scsi_lu *lu, const char *iport, uint16_t rel_port);

#endif
