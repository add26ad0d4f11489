/* SPDX-License-Identifier: Apache-2.0 */
/* Commands held on their reactor until another party answers (scsi_held.h). */
#include <errno.h>

#include "scsi/scsi_held.h"

/* The timer, on the command's reactor. */
static void held_timeout(void *arg)
{
	struct scsi_held *h = arg;
	struct scsi_held_list *l = h->list;
	bool mine;

	pthread_mutex_lock(l->lock);
	mine = !list_empty(&h->link);
	if (mine) {
		scsi_held_unlink(h);
		if (!h->decided) {
			h->decided = true;
			l->outcome(h, -ETIMEDOUT);
		}
	}
	pthread_mutex_unlock(l->lock);
	if (mine)   /* otherwise an abort unlinked it and finishes it after this batch */
		l->finish(h);
}

static void held_finish_deferred(void *arg)
{
	struct scsi_held *h = arg;

	h->list->finish(h);
}

void scsi_held_init(struct scsi_held *h, struct scsi_held_list *l, struct scsi_cmd *cmd,
		    struct reactor *r)
{
	h->list = l;
	h->cmd = cmd;
	h->reactor = r;
	list_init(&h->link);
	reactor_timer_init(&h->timer, held_timeout, h);
	reactor_deferred_init(&h->finish_work, held_finish_deferred, h);
}

void scsi_held_add(struct scsi_held *h, uint64_t id)
{
	h->id = id;
	list_add_tail(&h->link, &h->list->held);
	atomic_fetch_add(&h->list->nheld, 1);
}

static struct scsi_held *held_find(struct scsi_held_list *l, uint64_t id)
{
	struct list_head *pos;

	list_for_each(pos, &l->held) {
		struct scsi_held *h = list_entry(pos, struct scsi_held, link);

		if (h->id == id)
			return h;
	}
	return NULL;
}

struct scsi_held *scsi_held_lock_find(struct scsi_held_list *l, uint64_t id)
{
	struct scsi_held *h;

	pthread_mutex_lock(l->lock);
	h = held_find(l, id);
	if (!h)
		pthread_mutex_unlock(l->lock);
	return h;
}

void scsi_held_unlink(struct scsi_held *h)
{
	list_del(&h->link);
	list_init(&h->link);
	atomic_fetch_sub(&h->list->nheld, 1);
}

void scsi_held_cancel(struct scsi_held *h)
{
	reactor_timer_cancel(h->reactor, &h->timer);
	reactor_deferred_cancel(h->reactor, &h->finish_work);
}

void scsi_held_take(struct scsi_held_list *l, uint64_t id)
{
	struct scsi_held *h;

	pthread_mutex_lock(l->lock);
	h = held_find(l, id);
	if (h)
		scsi_held_unlink(h);
	pthread_mutex_unlock(l->lock);
	if (h)
		l->finish(h);
}

void scsi_held_abort(struct scsi_held_list *l, struct scsi_cmd *cmd)
{
	struct scsi_held *h = NULL;
	struct list_head *pos;

	if (atomic_load(&l->nheld) == 0)
		return;
	pthread_mutex_lock(l->lock);
	list_for_each(pos, &l->held) {
		struct scsi_held *e = list_entry(pos, struct scsi_held, link);

		if (e->cmd == cmd) {
			h = e;
			break;
		}
	}
	if (h) {
		scsi_held_unlink(h);
		h->decided = true;
		l->outcome(h, -ECANCELED);
	}
	pthread_mutex_unlock(l->lock);
	/* never complete inside the caller's abort loop */
	if (h)
		reactor_defer(h->reactor, &h->finish_work);
}
