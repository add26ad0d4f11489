/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control state of a logical unit shared by every gateway node that
 * serves it (SPC-4 multi-port logical unit): one fixed-size file per LU,
 * named after its NAA, in a directory all nodes see (shared_state_dir),
 * mapped MAP_SHARED by each node.
 *
 * What is in the file: persistent reservations (registrations, the
 * reservation, PRgeneration, APTPL), the SCSI-2 reservation, the changeable
 * mode page bits (WCE, SWP), and a ring of events (unit attentions and
 * aborts) that each node applies to its own I_T nexuses.
 *
 * Locking (open file description locks, fcntl F_OFD_SETLKW, released by the
 * kernel when a node dies):
 *   byte SHS_LOCK_STATE: write-locked to change anything, read-locked to read
 *                        the state and the ring;
 *   byte SHS_LOCK_ALIVE: every node that has the file open holds a read lock
 *                        on it; a node opening the file that can write-lock it
 *                        (while holding the state lock) is the only one: the
 *                        logical unit is powered on (non-APTPL state cleared).
 * `change` is bumped (release) after every update, so the command path of a
 * node only compares it (one atomic load) with the value it last synced.
 *
 * The layout is the host's (byte order and alignment): every node of a
 * cluster must be the same architecture; the byte_order field refuses a file
 * written by another one. Any mismatch (size, magic, version, NAA, a field out
 * of range) refuses the file with a log line naming the problem.
 */
#ifndef ISERGW_SCSI_SHARED_H
#define ISERGW_SCSI_SHARED_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHS_MAGIC          "isergwLU"   /* 8 bytes, no NUL */
#define SHS_VERSION        1u
#define SHS_BYTE_ORDER     0x01020304u
#define SHS_MAX_REGS       128u         /* PR registrations per LU */
#define SHS_RING           128u         /* events kept for slow nodes */
#define SHS_IPORT_MAX      256u         /* initiator port name, NUL included */

#define SHS_LOCK_STATE     0            /* byte offsets of the OFD locks */
#define SHS_LOCK_ALIVE     1

/* Event kinds. */
#define SHS_EV_UA_ALL      1    /* UA `asc` to every nexus (except one if SHS_EVF_EXCEPT) */
#define SHS_EV_UA_NEXUS    2    /* UA `asc` to one nexus (all its ports if SHS_EVF_ALL_PORTS) */

/* Event flags. */
#define SHS_EVF_EXCEPT     0x01 /* UA_ALL: not to (iport, rel_port) */
#define SHS_EVF_ALL_PORTS  0x02 /* UA_NEXUS: iport through every target port */
#define SHS_EVF_ABORT      0x04 /* other nodes abort the tasks of the nexuses concerned */

struct shs_reg {
	uint64_t key;
	uint16_t rel_port;
	uint8_t all_tg_pt;
	uint8_t rsvd[5];
	char iport[SHS_IPORT_MAX];
};
static_assert(sizeof(struct shs_reg) == 272, "shs_reg layout");

struct shs_event {
	uint64_t seq;                   /* 1, 2, ...; slot = seq % SHS_RING */
	uint64_t origin;                /* instance id of the node (LU object) that posted it */
	uint8_t kind;                   /* SHS_EV_* */
	uint8_t flags;                  /* SHS_EVF_* */
	uint16_t asc;                   /* ASC << 8 | ASCQ */
	uint16_t rel_port;
	uint8_t rsvd[2];
	char iport[SHS_IPORT_MAX];      /* "" when not used */
};
static_assert(sizeof(struct shs_event) == 280, "shs_event layout");

/* The LU's control state, copied in and out by the nodes under the lock. */
struct shs_state {
	uint32_t pr_generation;
	uint8_t aptpl;
	uint8_t pr_held;
	uint8_t pr_type;
	uint8_t r2_held;                /* SCSI-2 RESERVE */
	int32_t pr_holder;              /* index in regs, -1: none / all-registrants type */
	uint32_t nregs;
	uint16_t r2_rel_port;
	uint8_t wce;                    /* mode page 08h WCE */
	uint8_t swp;                    /* mode page 0Ah SWP */
	uint8_t rsvd[4];
	char r2_iport[SHS_IPORT_MAX];
	struct shs_reg regs[SHS_MAX_REGS];
};
static_assert(sizeof(struct shs_state) == 24 + SHS_IPORT_MAX + SHS_MAX_REGS * 272,
	      "shs_state layout");

struct shs_file {
	char magic[8];
	uint32_t version;
	uint32_t byte_order;
	uint64_t size;                  /* sizeof(struct shs_file) */
	uint8_t naa[16];                /* the LU this file belongs to */
	uint8_t rsvd0[24];
	/* own cache line: the only field the command path reads */
	_Atomic uint64_t change;
	uint8_t rsvd1[56];
	uint64_t state_gen;             /* bumped when `st` changes */
	uint64_t ev_seq;                /* last event posted (0: none yet) */
	uint64_t power_ons;             /* times a node found itself alone */
	uint8_t rsvd2[40];
	struct shs_state st;
	struct shs_event ring[SHS_RING];
};
static_assert(offsetof(struct shs_file, change) == 64, "shs_file: change on its own line");
static_assert(offsetof(struct shs_file, st) == 192, "shs_file layout");
static_assert(sizeof(struct shs_file) == 192 + sizeof(struct shs_state) +
	      SHS_RING * sizeof(struct shs_event), "shs_file layout");
static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the change counter must be lock-free across processes");

/*
 * One node's handle on a state file, or (cluster) on an in-memory copy of
 * the same layout that only the cluster's applied versions change: the lock
 * is then a mutex, and `version` the cluster's version of the state.
 */
struct shs {
	int fd;                         /* -1: cluster */
	struct shs_file *f;
	bool locked;
	bool cluster;
	pthread_mutex_t mu;             /* cluster: the lock */
	uint64_t version;               /* cluster: version of f->st (0: never changed) */
};

/*
 * Opens (creating it if missing) and maps the state file of the LU with this
 * NAA; default_wce is the WCE a powered-on LU starts with. *power_on is set
 * when no other node had the file open (non-APTPL state was cleared).
 * Returns -EINVAL (and logs why) for a file of the wrong size, magic,
 * version, byte order or NAA, or with a field out of range.
 */
int scsi_shs_open(const char *path, const uint8_t naa[16], bool default_wce, struct shs **out,
		  bool *power_on);
void scsi_shs_close(struct shs *s);
/* Checks a state another node made; 0 or -EINVAL with the reason. */
int scsi_shs_state_validate(const struct shs_state *st, char *why, size_t len);

/* OFD lock on the state byte (exclusive: to change it). 0 or -errno. */
int scsi_shs_lock(struct shs *s, bool exclusive);
void scsi_shs_unlock(struct shs *s);

/* Under the exclusive lock: appends an event (seq assigned); returns its seq. */
uint64_t scsi_shs_post(struct shs *s, const struct shs_event *ev);
/* Under the exclusive lock: makes the changes visible (state_gen if the
 * state changed, then `change`). */
void scsi_shs_publish(struct shs *s, bool state_changed);

static inline uint64_t shs_change(const struct shs *s)
{
	return atomic_load_explicit(&s->f->change, memory_order_acquire);
}

#endif
