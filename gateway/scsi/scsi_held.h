/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commands held on their reactor until another party answers: the cluster's
 * proposals and LBA locks (scsi_cluster.c) and SET TARGET PORT GROUPS waiting
 * for the ALUA policy owner (scsi_alua.c). Each owner embeds struct scsi_held
 * in its record and keeps one struct scsi_held_list under its own lock.
 *
 * A held command is listed under the owner's lock and finished on its own
 * reactor by whoever unlinks it there: the timer, the message that announces
 * a decision (carrying the id, never the pointer, so a late message finds
 * nothing: scsi_held_take), or an abort. Other threads only decide
 * (held->decided, under the lock) and send that message.
 */
#ifndef ISERGW_SCSI_HELD_H
#define ISERGW_SCSI_HELD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/list.h"
#include "common/reactor.h"

struct scsi_cmd;
struct scsi_held;

struct scsi_held_list {
	pthread_mutex_t *lock;          /* the owner's: guards held and each decided */
	struct list_head held;          /* struct scsi_held */
	atomic_uint nheld;
	/*
	 * Under lock: the outcome becomes status, -ETIMEDOUT (the timer, when
	 * nothing decided it before) or -ECANCELED (an abort, whatever was decided).
	 */
	void (*outcome)(struct scsi_held *h, int status);
	/* On the command's reactor, once unlinked: complete the command, free the record. */
	void (*finish)(struct scsi_held *h);
};

#define SCSI_HELD_LIST_INIT(l, lk, out, fin) \
	{ .lock = (lk), .held = LIST_HEAD_INIT((l).held), .outcome = (out), .finish = (fin) }

struct scsi_held {
	struct list_head link;          /* list->held, under list->lock */
	struct scsi_held_list *list;
	uint64_t id;
	bool decided;                   /* under list->lock */
	struct scsi_cmd *cmd;
	struct reactor *reactor;        /* the command's; the rest is its thread's */
	struct reactor_timer timer;
	struct reactor_deferred finish_work;
};

/* Not listed yet: the timer and the deferred finish are set up, not armed. */
void scsi_held_init(struct scsi_held *h, struct scsi_held_list *l, struct scsi_cmd *cmd,
		    struct reactor *r);
/* l->lock held. */
void scsi_held_add(struct scsi_held *h, uint64_t id);
/* Takes l->lock and finds id: the record with the lock held, or NULL with the lock released. */
struct scsi_held *scsi_held_lock_find(struct scsi_held_list *l, uint64_t id);
void scsi_held_unlink(struct scsi_held *h);
/* On the command's reactor, first thing in l->finish: timer and deferred finish cancelled. */
void scsi_held_cancel(struct scsi_held *h);
/* A decision's message on the command's reactor: finish id if it is still listed. */
void scsi_held_take(struct scsi_held_list *l, uint64_t id);
/* No lock held: cmd, if held, is decided -ECANCELED and finished after the caller's loop. */
void scsi_held_abort(struct scsi_held_list *l, struct scsi_cmd *cmd);

#endif
