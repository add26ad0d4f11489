/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The iSER datamover (RFC 7145) over rdma-core: an RDMA CM listener per
 * portal, one RC queue pair per connection, control PDUs by Send with the
 * iSER header, Data-In by RDMA Write to the initiator's read STag, Data-Out
 * by RDMA Read from its write STag. Login and text negotiation stay in the
 * core; this file only moves PDUs and data.
 *
 * Threads: the listener's event channel lives on reactor 0; an accepted
 * rdma_cm_id is migrated to the event channel of the reactor that owns the
 * connection, whose completion channel also carries the connection's CQ.
 *
 * Memory: every reactor keeps, per RDMA device, one region registered once
 * (huge pages when the system has them) and carves task buffers out of it in
 * 64 KiB pages. When it runs dry a task waits (buf_get returns -EAGAIN) and
 * is resumed, in arrival order, when pages come back.
 *
 * Teardown: terminate → rdma_disconnect (the QP enters the error state and
 * flushes) → every posted work request completes → QP, CQ, memory and id are
 * destroyed → iscsi_conn_closed(). Nothing is freed while the device may
 * still write into it.
 */
#include "core/datamover.h"
#include "dm/dm.h"

#ifdef ISERGW_HAVE_RDMA

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "core/iscsi.h"
#include "core/pdu.h"
#include "dm/iser_spec.h"
#include "common/log.h"
#include "common/netaddr.h"

#define COMP "iser"

#define ISER_HDRS_LEN      ((uint32_t)sizeof(struct iser_hdr) + ISCSI_BHS_LEN)
#define ISER_RX_SIZE       (ISER_HDRS_LEN + ISCSI_MAX_AHS_LEN + ISCSI_ISER_RECV_DSL + 4u)
#define ISER_TX_SIZE       (ISER_HDRS_LEN + ISCSI_ISER_RECV_DSL)
/* receive and send buffers of a connection, each block page aligned and a
 * whole number of pages (aligned_alloc wants a multiple of the alignment) */
#define ISER_PAGE_ROUND(n) (((size_t)(n) + 4095u) & ~(size_t)4095u)
#define ISER_RX_MEM_LEN    ISER_PAGE_ROUND((size_t)ISER_NRX * ISER_RX_SIZE)
#define ISER_TX_MEM_LEN    ISER_PAGE_ROUND((size_t)ISER_NTX * ISER_TX_SIZE)
#define ISER_NRX           256u         /* receives posted per connection */
#define ISER_NTX           256u         /* send buffers per connection */
#define ISER_SQ_DEPTH      1024u
#define ISER_RDMA_CHUNK    (8u << 20)   /* bytes per RDMA Read/Write work request */
#define ISER_FFP_XMIT_DSL  128u         /* Linux ib_iser full-feature receive buffers */
#define ISER_POOL_SIZE     (64u << 20)  /* registered task memory per reactor and device */
#define ISER_PAGE_SHIFT    16u
#define ISER_PAGE_SIZE     (1u << ISER_PAGE_SHIFT)
#define ISER_POOL_PAGES    (ISER_POOL_SIZE >> ISER_PAGE_SHIFT)
#define ISER_POLL_BATCH    32
#define ISER_SPIN_US       0u           /* busy-poll a CQ this long after its last completion */
#define ISER_INLINE_WANT   256u         /* control PDUs (headers + sense) sent inline */
#define ISER_LOGOUT_GRACE_MS 60000u     /* wait for the initiator to disconnect after Logout */
#define ISER_LOGOUT_TICK_MS  500u

/* work request ids: a pointer with the kind in the low bits */
enum iser_wr_kind {
	WR_RECV = 1,
	WR_SEND = 2,
	WR_RDMA_WRITE = 3,
	WR_RDMA_READ = 4,
	WR_RDMA_WRITE_UNSIG = 5,        /* completes silently unless it fails */
};
#define WR_KIND_MASK 7u

/* ---------------- devices, per-reactor state ---------------- */

struct iser_dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	char name[IBV_SYSFS_NAME_MAX];  /* the device's name (verbs may be gone: see stale) */
	uint32_t nrdevs;                /* reactors' iser_rdev on it */
	bool dead;                      /* removed: freed with its last iser_rdev */
	/*
	 * The RDMA CM library gave the same device on another context: it
	 * closed the one we had (its last id on it was destroyed, e.g. a
	 * floating address left), and with it, in the kernel, our protection
	 * domain, registrations and completion channels on it. Those are not
	 * freed again through libibverbs (their handles point into the closed
	 * context); only our own memory is.
	 */
	bool stale;
	/*
	 * An id of our own bound on the device for as long as we hold
	 * resources on it: the RDMA CM library closes a device's context
	 * when its last id there goes (a floating address leaving takes the
	 * last listener), and our protection domain and registrations with it.
	 */
	struct rdma_cm_id *anchor;
	struct iser_dev *next;
};

static pthread_mutex_t g_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iser_dev *g_devs;
static uint32_t g_dead_devs;            /* removed devices still held (g_dev_lock) */
static struct ibv_context *g_stale_verbs;       /* a stale context the reactors are told of */

/* One reactor's view of one device: completion channel and task memory. */
struct iser_rdev {
	struct iser_dev *dev;
	struct reactor *reactor;
	struct ibv_comp_channel *chan;
	struct reactor_fd rfd;
	uint8_t *pool;
	size_t pool_len;
	bool pool_huge;
	struct ibv_mr *pool_mr;
	uint8_t used[ISER_POOL_PAGES];  /* 1 = page taken */
	uint32_t free_pages;
	struct list_head waiters;       /* struct iser_task.wait_link, FIFO */
	struct reactor_deferred wake;
	uint32_t nconns;                /* connections using it */
	bool dead;                      /* device removed: freed once idle */
	struct iser_rdev *next;
};

/* The reactor's RDMA CM event channel for its connections. */
struct iser_rchan {
	struct rdma_event_channel *ch;
	struct reactor_fd rfd;
	struct reactor *reactor;
};

static _Thread_local struct iser_rdev *tl_rdevs;
static _Thread_local struct iser_rchan *tl_rchan;

struct iser_listener {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;          /* NULL while its device is gone */
	struct reactor_fd rfd;
	struct reactor *reactor;
	struct gw_portal *portal;
	struct sockaddr_storage addr;
	struct reactor_timer relisten;  /* after a device removal */
	uint32_t relisten_tries;
};

enum iser_conn_state {
	ISER_CONNECTING = 0,
	ISER_ESTABLISHED,
	ISER_CLOSING,       /* disconnect requested, waiting for flushes */
	ISER_CLOSED,
};

struct iser_tx {
	uint8_t *buf;
	struct iscsi_tx_pdu *pdu;
	struct iser_tx *next_free;
	struct iser_conn *ic;
	uint32_t unsig;                 /* unsignaled RDMA Writes this Send completes */
};

/* A control PDU or a data movement waiting for send queue space or a buffer. */
struct iser_backlog {
	struct list_head link;
	struct iscsi_tx_pdu *pdu;       /* or NULL: */
	struct iscsi_task *task;
	bool read;                      /* get_data (RDMA Read) rather than put_data */
};

/* A send-queue work request waiting for the end of the event loop iteration. */
struct iser_wr {
	struct ibv_send_wr wr;
	struct ibv_sge sge;
};

struct iser_conn {
	struct rdma_cm_id *id;
	struct iscsi_conn *conn;
	struct iser_rdev *rd;
	struct gw_portal *portal;
	struct reactor *reactor;
	struct ibv_cq *cq;
	enum iser_conn_state state;
	bool send_inv;                  /* initiator accepts Send with Invalidate */
	bool disconnected;              /* DISCONNECTED event seen */
	bool cm_established;            /* the CM reported ESTABLISHED */
	bool disconnect_deferred;       /* terminated before the CM reported ESTABLISHED */
	bool logout_sent;               /* a Logout Response reached the initiator */
	struct reactor_timer logout_timer;
	uint32_t logout_waited_ms;
	bool spinning;                  /* CQ polled from spin_work, not armed */
	uint64_t spin_until;            /* µs, CLOCK_MONOTONIC */
	struct reactor_deferred spin_work;
	bool unsol_by_ref;              /* initiator leaves unsolicited data in its buffer */
	uint8_t rd_depth;               /* RDMA Reads we may have outstanding (initiator_depth) */
	uint8_t *rx_mem;
	struct ibv_mr *rx_mr;
	uint8_t *tx_mem;
	struct ibv_mr *tx_mr;
	struct iser_tx tx[ISER_NTX];
	struct iser_tx *tx_free;
	uint32_t sq_used;
	uint32_t posted_recv, posted_send;
	uint32_t max_inline;            /* Sends up to this size go inline */
	struct list_head backlog;
	struct iser_wr pend[ISER_SQ_DEPTH]; /* posted with one doorbell per iteration */
	uint32_t npend;
	struct reactor_deferred post_work;
	struct iser_hdr_info cur;       /* iSER header of the PDU being delivered */
	bool cur_valid;
	char peer[80], local[80];
	struct reactor_deferred closed_work;
};

/* Per-task state (task->dm_priv). */
struct iser_task {
	struct iser_hdr_info hdr;
	struct iser_rdev *rd;           /* whose pool the pages (or the wait) are in */
	uint32_t first_page, npages;    /* pool pages of the buffer, npages 0 = none */
	struct list_head wait_link;
	bool waiting;
	struct iscsi_task *task;
	uint32_t reads_outstanding;
	uint32_t read_start;            /* first byte fetched by RDMA Read */
	uint32_t read_len;
};

static void iser_conn_event(struct iser_conn *ic, struct rdma_cm_event *ev);
static void iser_flush_backlog(struct iser_conn *ic);
static void iser_maybe_closed(struct iser_conn *ic);

static uint32_t iser_spin_us;

/* An id bound to local's address (any port) on verbs' device, or NULL (logged). */
static struct rdma_cm_id *iser_anchor(struct ibv_context *verbs, const struct sockaddr *local)
{
	struct sockaddr_storage ss;
	struct rdma_cm_id *id = NULL;
	socklen_t len;

	if (!local || (local->sa_family != AF_INET && local->sa_family != AF_INET6))
		return NULL;
	len = local->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	memcpy(&ss, local, len);
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP)) {
		GW_WARN(COMP, "device %s: no anchor id: %s", ibv_get_device_name(verbs->device),
			strerror(errno));
		return NULL;
	}
	if (rdma_bind_addr(id, (struct sockaddr *)&ss) || id->verbs != verbs) {
		GW_WARN(COMP, "device %s: the anchor id did not bind to it: %s",
			ibv_get_device_name(verbs->device), id->verbs ? "another context" :
			strerror(errno));
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

static struct iser_dev *iser_dev_get(struct ibv_context *verbs, const struct sockaddr *local)
{
	struct iser_dev *d;

	pthread_mutex_lock(&g_dev_lock);
	if (!g_devs) {
		const char *e = getenv("ISERGW_ISER_SPIN_US");

		iser_spin_us = e ? (uint32_t)strtoul(e, NULL, 10) : ISER_SPIN_US;
		if (iser_spin_us > 10000)
			iser_spin_us = 10000;
	}
	for (d = g_devs; d; d = d->next)
		if (d->verbs == verbs && !d->dead)
			goto found;
	/* the same device on a new context: the old one was closed under us */
	for (d = g_devs; d; d = d->next) {
		if (d->dead || strcmp(d->name, ibv_get_device_name(verbs->device)))
			continue;
		GW_WARN(COMP, "device %s: the RDMA CM library opened it anew (its previous context "
			"was closed when its last listener went): the resources on that context are "
			"dropped, new ones are made", d->name);
		d->dead = true;
		d->stale = true;
		g_dead_devs++;
		g_stale_verbs = d->verbs;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		goto out;
	d->verbs = verbs;
	snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(verbs->device));
	if (ibv_query_device(verbs, &d->attr)) {
		GW_ERR(COMP, "%s: cannot query device", ibv_get_device_name(verbs->device));
		free(d);
		d = NULL;
		goto out;
	}
	d->pd = ibv_alloc_pd(verbs);
	if (!d->pd) {
		GW_ERR(COMP, "%s: cannot allocate a protection domain",
		       ibv_get_device_name(verbs->device));
		free(d);
		d = NULL;
		goto out;
	}
	d->anchor = iser_anchor(verbs, local);
	d->next = g_devs;
	g_devs = d;
	GW_INFO(COMP, "device %s: max_qp_wr %d, max_sge %d, max_qp_rd_atom %d, max_mr_size %llu; "
		"completion queues busy-polled %u us after their last completion",
		ibv_get_device_name(verbs->device), d->attr.max_qp_wr, d->attr.max_sge,
		d->attr.max_qp_rd_atom, (unsigned long long)d->attr.max_mr_size, iser_spin_us);
found:
	d->nrdevs++;
out:
	pthread_mutex_unlock(&g_dev_lock);
	return d;
}

static void iser_dev_free_locked(struct iser_dev *d)
{
	for (struct iser_dev **pp = &g_devs; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	}
	if (d->dead)
		g_dead_devs--;
	if (!d->stale)
		ibv_dealloc_pd(d->pd);
	if (d->anchor)
		rdma_destroy_id(d->anchor);
	free(d);
}

/* A reactor let go of the device; a removed one is freed with its last. */
static void iser_dev_put(struct iser_dev *d)
{
	pthread_mutex_lock(&g_dev_lock);
	if (!--d->nrdevs && d->dead) {
		GW_INFO(COMP, "device %s: all resources released", d->name);
		iser_dev_free_locked(d);
	}
	pthread_mutex_unlock(&g_dev_lock);
}

/*
 * librdmacm keeps a context open on every device it has seen, and closes a
 * removed one only when it rescans the device list, which it does when asked
 * for the list. The kernel finishes removing a device (rdma link delete,
 * driver unload) only once every process has closed it: rescan, but only
 * when none of our resources on a removed device remain (closing the
 * context under them would free what they point to).
 */
static void iser_sync_devices(void)
{
	static bool warned;
	struct ibv_context **list;
	bool held;
	int n = 0;

	pthread_mutex_lock(&g_dev_lock);
	held = g_dead_devs != 0;
	pthread_mutex_unlock(&g_dev_lock);
	if (held)
		return;
	list = rdma_get_devices(&n);
	if (list)
		rdma_free_devices(list);
	if (n == 0 && !warned) {
		/* its rescan gives up on an empty list, keeping the old context */
		warned = true;
		GW_WARN(COMP, "no RDMA device left: the RDMA CM library keeps the removed one open "
			"until another appears or isergwd stops, and for drivers that cannot "
			"detach a process (rxe, siw) the kernel's removal waits until then");
	} else if (n > 0) {
		warned = false;
	}
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static void iser_cq_event(void *arg, uint32_t events);
static void iser_pool_wake(void *arg);
static void iser_rdev_maybe_free(struct iser_rdev *rd);

static struct iser_rdev *iser_rdev_get(struct ibv_context *verbs, const struct sockaddr *local)
{
	struct reactor *r = reactor_self();
	struct iser_rdev *rd;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;

	for (struct iser_rdev *next, *it = tl_rdevs; it; it = next) {
		next = it->next;
		if (it->dev->stale && !it->dead) {
			/* its context was closed: freed once idle, never used again */
			it->dead = true;
			iser_rdev_maybe_free(it);
			continue;
		}
		if (it->dev->verbs == verbs && !it->dead)
			return it;
	}
	rd = calloc(1, sizeof(*rd));
	if (!rd)
		return NULL;
	rd->dev = iser_dev_get(verbs, local);
	if (!rd->dev)
		goto err_free;
	rd->reactor = r;
	list_init(&rd->waiters);
	reactor_deferred_init(&rd->wake, iser_pool_wake, rd);
	rd->chan = ibv_create_comp_channel(verbs);
	if (!rd->chan || set_nonblock(rd->chan->fd))
		goto err_chan;
	rd->pool_len = ISER_POOL_SIZE;
	rd->pool = mmap(NULL, rd->pool_len, PROT_READ | PROT_WRITE, flags | MAP_HUGETLB, -1, 0);
	rd->pool_huge = rd->pool != MAP_FAILED;
	if (!rd->pool_huge)
		rd->pool = mmap(NULL, rd->pool_len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (rd->pool == MAP_FAILED)
		goto err_chan;
	rd->pool_mr = ibv_reg_mr(rd->dev->pd, rd->pool, rd->pool_len,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_WRITE);
	if (!rd->pool_mr) {
		GW_ERR(COMP, "cannot register %zu MiB of task memory: %s (is the locked-memory "
		       "limit, ulimit -l, high enough?)", rd->pool_len >> 20, strerror(errno));
		goto err_pool;
	}
	rd->free_pages = ISER_POOL_PAGES;
	if (reactor_add_fd(r, &rd->rfd, rd->chan->fd, EPOLLIN, iser_cq_event, rd))
		goto err_mr;
	rd->next = tl_rdevs;
	tl_rdevs = rd;
	GW_INFO(COMP, "reactor %u: %zu MiB of task memory registered on %s%s", reactor_index(r),
		rd->pool_len >> 20, ibv_get_device_name(verbs->device),
		rd->pool_huge ? " (huge pages)" : "");
	return rd;

err_mr:
	ibv_dereg_mr(rd->pool_mr);
err_pool:
	munmap(rd->pool, rd->pool_len);
err_chan:
	if (rd->chan)
		ibv_destroy_comp_channel(rd->chan);
	iser_dev_put(rd->dev);
err_free:
	free(rd);
	return NULL;
}

static void iser_rdev_free(struct iser_rdev *rd)
{
	for (struct iser_rdev **pp = &tl_rdevs; *pp; pp = &(*pp)->next) {
		if (*pp == rd) {
			*pp = rd->next;
			break;
		}
	}
	reactor_del_fd(rd->reactor, &rd->rfd);
	reactor_deferred_cancel(rd->reactor, &rd->wake);
	if (rd->dev->stale) {
		/* the context is closed: the kernel freed the registration with it */
		close(rd->chan->fd);
	} else {
		ibv_dereg_mr(rd->pool_mr);
		ibv_destroy_comp_channel(rd->chan);
	}
	munmap(rd->pool, rd->pool_len);
	iser_dev_put(rd->dev);
	free(rd);
}

/* A removed device's memory and completion channel go once nothing uses them. */
static void iser_rdev_maybe_free(struct iser_rdev *rd)
{
	if (!rd->dead || rd->nconns || rd->free_pages != ISER_POOL_PAGES ||
	    !list_empty(&rd->waiters))
		return;
	GW_INFO(COMP, "reactor %u: task memory on removed device %s released",
		reactor_index(rd->reactor), rd->dev->name);
	iser_rdev_free(rd);
}

/* On each reactor: its view of a removed device is freed once idle. */
static void iser_removed_on_reactor(void *arg)
{
	struct ibv_context *verbs = arg;

	for (struct iser_rdev *rd = tl_rdevs, *next; rd; rd = next) {
		next = rd->next;
		if (rd->dev->verbs == verbs && !rd->dead) {
			rd->dead = true;
			iser_rdev_maybe_free(rd);
		}
	}
}

/*
 * The CM said RDMA_CM_EVENT_DEVICE_REMOVAL for an id on verbs: the kernel
 * waits until every resource on the device is gone. Connections on it are
 * dropped by their own events; here the device is marked removed and every
 * reactor told to free its memory registrations on it once idle.
 */
static void iser_device_removed(struct gw *gw, struct ibv_context *verbs)
{
	bool first = false;

	if (!verbs)
		return;
	pthread_mutex_lock(&g_dev_lock);
	for (struct iser_dev *d = g_devs; d; d = d->next) {
		if (d->verbs == verbs && !d->dead) {
			d->dead = true;
			g_dead_devs++;
			first = true;
		}
	}
	pthread_mutex_unlock(&g_dev_lock);
	if (!first)
		return;
	GW_ERR(COMP, "RDMA device %s removed: dropping its connections and releasing its "
	       "resources", ibv_get_device_name(verbs->device));
	for (unsigned int i = 0; i < gw->nreactors; i++) {
		if (gw->reactors[i] == reactor_self())
			iser_removed_on_reactor(verbs);
		else if (reactor_send_msg(gw->reactors[i], iser_removed_on_reactor, verbs))
			GW_ERR(COMP, "cannot tell reactor %u of the device removal", i);
	}
}

/* ---------------- task memory ---------------- */

static int pool_take(struct iser_rdev *rd, uint32_t npages, uint32_t *first)
{
	uint32_t run = 0;

	if (npages > rd->free_pages)
		return -EAGAIN;
	for (uint32_t i = 0; i < ISER_POOL_PAGES; i++) {
		run = rd->used[i] ? 0 : run + 1;
		if (run == npages) {
			*first = i + 1 - npages;
			memset(&rd->used[*first], 1, npages);
			rd->free_pages -= npages;
			return 0;
		}
	}
	return -EAGAIN;
}

static void pool_give(struct iser_rdev *rd, uint32_t first, uint32_t npages)
{
	memset(&rd->used[first], 0, npages);
	rd->free_pages += npages;
	if (!list_empty(&rd->waiters))
		reactor_defer(rd->reactor, &rd->wake);
}

static uint32_t pages_for(uint32_t len)
{
	return (len + ISER_PAGE_SIZE - 1) >> ISER_PAGE_SHIFT;
}

/* Buffers came back: resume waiting tasks in order, as long as they fit. */
static void iser_pool_wake(void *arg)
{
	struct iser_rdev *rd = arg;

	if (rd->dead)
		return; /* its connections are going; their waits are cancelled */
	while (!list_empty(&rd->waiters)) {
		struct iser_task *it = list_first_entry(&rd->waiters, struct iser_task, wait_link);
		struct iscsi_task *t = it->task;

		if (pool_take(rd, pages_for(t->edtl), &it->first_page))
			break;
		it->npages = pages_for(t->edtl);
		it->rd = rd;
		list_del(&it->wait_link);
		it->waiting = false;
		t->buf = rd->pool + ((size_t)it->first_page << ISER_PAGE_SHIFT);
		iscsi_task_buf_ready(t);
	}
}

static struct iser_task *iser_task_of(struct iscsi_conn *c, struct iscsi_task *t)
{
	struct iser_conn *ic = c->dm_priv;
	struct iser_task *it = t->dm_priv;

	if (it)
		return it;
	it = calloc(1, sizeof(*it));
	if (!it)
		return NULL;
	it->task = t;
	list_init(&it->wait_link);
	if (ic && ic->cur_valid)
		it->hdr = ic->cur;
	t->dm_priv = it;
	return it;
}

static int iser_buf_get(struct iscsi_conn *c, struct iscsi_task *t)
{
	struct iser_conn *ic = c->dm_priv;
	struct iser_task *it = iser_task_of(c, t);
	uint32_t npages = pages_for(t->edtl);

	if (!it)
		return -ENOMEM;
	if (npages > ISER_POOL_PAGES) {
		GW_WARN(COMP, "%s: transfer of %u bytes exceeds the %u MiB task memory", c->peer,
			t->edtl, ISER_POOL_SIZE >> 20);
		return -ENOMEM;
	}
	it->rd = ic->rd;
	if (list_empty(&ic->rd->waiters) && pool_take(ic->rd, npages, &it->first_page) == 0) {
		it->npages = npages;
		t->buf = ic->rd->pool + ((size_t)it->first_page << ISER_PAGE_SHIFT);
		return 0;
	}
	it->waiting = true;
	list_add_tail(&it->wait_link, &ic->rd->waiters);
	GW_DEBUG(COMP, "%s: task memory exhausted, ITT 0x%08x waits", c->peer, t->itt);
	return -EAGAIN;
}

/*
 * Also after the connection is gone (a task whose backend I/O was still
 * running): the pages go back to the pool they came from.
 */
static void iser_buf_put(struct iscsi_conn *c, struct iscsi_task *t)
{
	struct iser_task *it = t->dm_priv;
	struct iser_rdev *rd;

	(void)c;
	if (!it)
		return;
	rd = it->rd;
	if (it->waiting) {
		list_del(&it->wait_link);
		it->waiting = false;
	} else if (it->npages && rd) {
		pool_give(rd, it->first_page, it->npages);
		it->npages = 0;
	}
	t->buf = NULL;
	if (rd)
		iser_rdev_maybe_free(rd);
}

/* The last RDMA Read of a task the core let go of (aborted) completed: its pages are free now. */
static void iser_task_orphan_done(struct iser_task *it)
{
	struct iser_rdev *rd = it->rd;

	if (it->npages && rd) {
		pool_give(rd, it->first_page, it->npages);
		iser_rdev_maybe_free(rd);
	}
	free(it);
}

static void iser_release_task(struct iscsi_conn *c, struct iscsi_task *t)
{
	struct iser_conn *ic = c->dm_priv;
	struct iser_task *it = t->dm_priv;
	struct list_head *pos, *n;

	if (!it)
		return;
	/* RDMA work queued for later (no send-queue room) goes with the task */
	if (ic) {
		list_for_each_safe(pos, n, &ic->backlog) {
			struct iser_backlog *b = list_entry(pos, struct iser_backlog, link);

			if (!b->pdu && b->task == t) {
				list_del(&b->link);
				free(b);
			}
		}
	}
	if (it->reads_outstanding) {
		/*
		 * Aborted (task management) while RDMA Reads still write into its
		 * pages: the pages and this state stay until the last Read
		 * completes (read_done), or nothing else may be given them.
		 */
		it->task = NULL;
		t->dm_priv = NULL;
		t->buf = NULL;
		return;
	}
	if (it->waiting || it->npages)
		iser_buf_put(c, t);
	free(it);
	t->dm_priv = NULL;
}

/* ---------------- posting work ---------------- */

static int post_recv(struct iser_conn *ic, uint32_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(ic->rx_mem + (size_t)i * ISER_RX_SIZE),
		.length = ISER_RX_SIZE,
		.lkey = ic->rx_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = ((uint64_t)i << 3) | WR_RECV, .sg_list = &sge, .num_sge = 1,
	}, *bad;
	int rc = ibv_post_recv(ic->id->qp, &wr, &bad);

	if (rc)
		return -rc;
	ic->posted_recv++;
	return 0;
}

static void iser_complete(struct iser_conn *ic, const struct ibv_wc *wc);

/* Post every queued send-queue request with one doorbell. */
static void iser_post_pending(void *arg)
{
	struct iser_conn *ic = arg;
	struct ibv_send_wr *bad = NULL;
	uint32_t n = ic->npend;
	int rc;

	if (!n)
		return;
	for (uint32_t i = 0; i < n; i++)
		ic->pend[i].wr.next = i + 1 < n ? &ic->pend[i + 1].wr : NULL;
	ic->npend = 0;
	rc = ibv_post_send(ic->id->qp, &ic->pend[0].wr, &bad);
	if (!rc)
		return;
	GW_WARN(COMP, "%s: posting work requests failed: %s", ic->peer, strerror(rc));
	/* what was not posted completes here as flushed, so nothing leaks */
	for (struct ibv_send_wr *w = bad; w; w = w->next) {
		struct ibv_wc wc = { .wr_id = w->wr_id, .status = IBV_WC_WR_FLUSH_ERR };

		iser_complete(ic, &wc);
	}
	if (ic->state == ISER_ESTABLISHED)
		iscsi_conn_drop(ic->conn, "posting RDMA work failed");
}

/* Queue one send-queue request; posted at the end of this loop iteration. */
static int post_send(struct iser_conn *ic, const struct ibv_send_wr *wr, const struct ibv_sge *sge)
{
	struct iser_wr *w;

	if (ic->npend >= ISER_SQ_DEPTH)
		return -EAGAIN;
	w = &ic->pend[ic->npend++];
	w->wr = *wr;
	w->sge = *sge;
	w->wr.sg_list = &w->sge;
	w->wr.num_sge = 1;
	ic->sq_used++;
	ic->posted_send++;
	reactor_defer(ic->reactor, &ic->post_work);
	return 0;
}

static bool sq_room(const struct iser_conn *ic, uint32_t n)
{
	return ic->sq_used + n <= ISER_SQ_DEPTH;
}

/* Send one control PDU now; -EAGAIN when out of send buffers or queue space. */
static int send_pdu_now(struct iser_conn *ic, struct iscsi_tx_pdu *pdu)
{
	struct iser_tx *tx = ic->tx_free;
	uint32_t len = pdu->data_len;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	int rc;

	if (!tx || !sq_room(ic, 1))
		return -EAGAIN;
	if (len > ISCSI_ISER_RECV_DSL) {
		GW_ERR(COMP, "%s: %s with %u data bytes does not fit a Send", ic->peer,
		       iscsi_opcode_name(pdu->bhs.opcode), len);
		return -EMSGSIZE;
	}
	ic->tx_free = tx->next_free;
	GW_DEBUG(COMP, "%s: tx %s ITT 0x%08x dlen %u", ic->peer,
		 iscsi_opcode_name(pdu->bhs.opcode), be32toh(pdu->bhs.itt), len);
	iser_hdr_encode_ctrl(tx->buf);
	memcpy(tx->buf + sizeof(struct iser_hdr), &pdu->bhs, ISCSI_BHS_LEN);
	if (len)
		memcpy(tx->buf + ISER_HDRS_LEN, pdu->data, len);
	tx->pdu = pdu;
	sge.addr = (uintptr_t)tx->buf;
	sge.length = ISER_HDRS_LEN + len;
	sge.lkey = ic->tx_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)tx | WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (sge.length <= ic->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	/* the SCSI Response of a task whose buffer the initiator registered:
	 * invalidate its STag remotely, saving the initiator a local invalidate */
	if (ic->send_inv && iscsi_bhs_opcode(&pdu->bhs) == ISCSI_OP_SCSI_RSP && pdu->ctx) {
		struct iser_task *it = ((struct iscsi_task *)pdu->ctx)->dm_priv;

		if (it && (it->hdr.rsv || it->hdr.wsv)) {
			wr.opcode = IBV_WR_SEND_WITH_INV;
			wr.invalidate_rkey = it->hdr.rsv ? it->hdr.read_stag : it->hdr.write_stag;
		}
	}
	rc = post_send(ic, &wr, &sge);
	if (rc) {
		tx->pdu = NULL;
		tx->next_free = ic->tx_free;
		ic->tx_free = tx;
	}
	return rc;
}

static int backlog_add(struct iser_conn *ic, struct iscsi_tx_pdu *pdu, struct iscsi_task *t,
		       bool read)
{
	struct iser_backlog *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->pdu = pdu;
	b->task = t;
	b->read = read;
	list_add_tail(&b->link, &ic->backlog);
	return 0;
}

static int iser_send_control(struct iscsi_conn *c, struct iscsi_tx_pdu *pdu)
{
	struct iser_conn *ic = c->dm_priv;
	int rc;

	if (!ic || ic->state != ISER_ESTABLISHED)
		return -ECONNRESET;
	if (list_empty(&ic->backlog)) {
		rc = send_pdu_now(ic, pdu);
		if (rc != -EAGAIN)
			return rc;
	}
	return backlog_add(ic, pdu, NULL, false);
}

/*
 * Queue RDMA Writes (Data-In) or Reads (Data-Out) moving len bytes between
 * t->buf + local_off and the initiator's (rkey, remote), in chunks the device
 * takes in one work request. Returns the number of requests queued, or -errno.
 */
static int post_rdma(struct iser_conn *ic, struct iscsi_task *t, bool read, uint32_t local_off,
		     uint64_t remote, uint32_t rkey, uint32_t len)
{
	enum iser_wr_kind kind = read ? WR_RDMA_READ : WR_RDMA_WRITE_UNSIG;
	struct iser_task *it = t->dm_priv;
	int nwr = 0;

	for (uint32_t off = 0; off < len; off += ISER_RDMA_CHUNK) {
		uint32_t n = len - off < ISER_RDMA_CHUNK ? len - off : ISER_RDMA_CHUNK;
		struct ibv_sge sge = {
			.addr = (uintptr_t)(t->buf + local_off + off), .length = n,
			.lkey = ic->rd->pool_mr->lkey,
		};
		struct ibv_send_wr wr;
		int rc;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = (uintptr_t)it | kind;
		wr.opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		wr.send_flags = read ? IBV_SEND_SIGNALED : 0;
		wr.wr.rdma.remote_addr = remote + off;
		wr.wr.rdma.rkey = rkey;
		rc = post_send(ic, &wr, &sge);
		if (rc)
			return rc;
		nwr++;
	}
	return nwr;
}

/* RDMA Writes of a task's Data-In, then its status. */
static int rdma_write_now(struct iser_conn *ic, struct iscsi_task *t)
{
	struct iser_task *it = t->dm_priv;
	uint32_t len = iscsi_task_data_in_len(t);
	uint32_t nwr = (len + ISER_RDMA_CHUNK - 1) / ISER_RDMA_CHUNK;
	int rc;

	uint32_t first = ic->npend;
	struct iser_wr *last;

	if (!sq_room(ic, nwr + 1) || !ic->tx_free)
		return -EAGAIN;
	rc = post_rdma(ic, t, false, 0, it->hdr.read_va, it->hdr.read_stag, len);
	if (rc < 0)
		return rc;
	t->data_sn = 0;
	iscsi_task_send_response(t); /* RC ordering: delivered after the writes */
	/*
	 * The writes go unsignaled: the SCSI Response's Send right behind them
	 * completes after them (RC), and accounts for them. Should anything else
	 * have come between (or no Send at all), the writes signal themselves.
	 */
	last = ic->npend > first + (uint32_t)rc ? &ic->pend[ic->npend - 1] : NULL;
	if (last && ic->npend == first + (uint32_t)rc + 1 &&
	    (last->wr.wr_id & WR_KIND_MASK) == WR_SEND) {
		struct iser_tx *tx = (struct iser_tx *)(uintptr_t)(last->wr.wr_id & ~(uint64_t)WR_KIND_MASK);

		tx->unsig = (uint32_t)rc;
		return 0;
	}
	for (uint32_t i = first; i < first + (uint32_t)rc && i < ic->npend; i++) {
		ic->pend[i].wr.wr_id = (ic->pend[i].wr.wr_id & ~(uint64_t)WR_KIND_MASK) | WR_RDMA_WRITE;
		ic->pend[i].wr.send_flags |= IBV_SEND_SIGNALED;
	}
	return 0;
}

/* RDMA Reads of everything the initiator did not send unsolicited. */
static int rdma_read_now(struct iser_conn *ic, struct iscsi_task *t)
{
	struct iser_task *it = t->dm_priv;
	uint32_t start = it->read_start, len = t->edtl - start;
	uint32_t nwr = (len + ISER_RDMA_CHUNK - 1) / ISER_RDMA_CHUNK;
	int rc;

	if (!sq_room(ic, nwr))
		return -EAGAIN;
	it->read_len = len;
	/* RFC 7145 9.2: the write base offset already points at the first byte
	 * not sent unsolicited */
	rc = post_rdma(ic, t, true, start, it->hdr.write_va, it->hdr.write_stag, len);
	if (rc < 0)
		return rc;
	it->reads_outstanding += (uint32_t)rc;
	return 0;
}

/*
 * Can t's data move by RDMA on c? 0; -ECONNRESET when the connection is not
 * up; -EPROTO (c dropped) when the iSER header gave no STag for it: a read
 * STag for Data-In by RDMA Write, a write STag for Data-Out by RDMA Read.
 */
static int rdma_check(struct iscsi_conn *c, struct iscsi_task *t, bool rdma_read)
{
	struct iser_conn *ic = c->dm_priv;
	struct iser_task *it = t->dm_priv;

	if (!ic || ic->state != ISER_ESTABLISHED)
		return -ECONNRESET;
	if (!it || !(rdma_read ? it->hdr.wsv : it->hdr.rsv)) {
		iscsi_conn_drop(c, rdma_read ? "WRITE needs data but the iSER header has no write STag"
					     : "READ data without a read STag in the iSER header");
		return -EPROTO;
	}
	return 0;
}

/* RDMA Writes or Reads of t: posted now unless others wait before them in the backlog. */
static int rdma_post_or_queue(struct iser_conn *ic, struct iscsi_task *t, bool rdma_read)
{
	int rc;

	if (list_empty(&ic->backlog)) {
		rc = rdma_read ? rdma_read_now(ic, t) : rdma_write_now(ic, t);
		if (rc != -EAGAIN)
			return rc;
	}
	return backlog_add(ic, NULL, t, rdma_read);
}

static int iser_put_data(struct iscsi_conn *c, struct iscsi_task *t)
{
	int rc = rdma_check(c, t, false);

	return rc ? rc : rdma_post_or_queue(c->dm_priv, t, false);
}

static int iser_get_data(struct iscsi_conn *c, struct iscsi_task *t)
{
	struct iser_conn *ic = c->dm_priv;
	struct iser_task *it = t->dm_priv;
	int rc = rdma_check(c, t, true);

	if (rc)
		return rc;
	if (!ic->rd_depth) {
		/* an RDMA Read on such a QP would wait forever (Soft-RoCE) */
		iscsi_conn_drop(c, "WRITE needs data by RDMA Read but the initiator's connection "
			       "allows no RDMA Reads (responder resources 0)");
		return -EPROTO;
	}
	/* everything past the unsolicited part, in one go: the core must not ask again */
	it->read_start = t->r2t_next;
	t->r2t_next = t->edtl;
	return rdma_post_or_queue(ic, t, true);
}

static void iser_flush_backlog(struct iser_conn *ic)
{
	while (!list_empty(&ic->backlog) && ic->state == ISER_ESTABLISHED) {
		struct iser_backlog *b = list_first_entry(&ic->backlog, struct iser_backlog, link);
		int rc;

		if (b->pdu) {
			rc = send_pdu_now(ic, b->pdu);
		} else if (b->read) {
			rc = rdma_read_now(ic, b->task);
		} else {
			rc = rdma_write_now(ic, b->task);
		}
		if (rc == -EAGAIN)
			return;
		list_del(&b->link);
		if (rc) {
			if (b->pdu && b->pdu->sent)
				b->pdu->sent(b->pdu, rc);
			else if (b->pdu)
				iscsi_tx_pdu_free(b->pdu);
			free(b);
			iscsi_conn_drop(ic->conn, "posting RDMA work failed");
			return;
		}
		free(b);
	}
}

static void backlog_fail(struct iser_conn *ic)
{
	while (!list_empty(&ic->backlog)) {
		struct iser_backlog *b = list_first_entry(&ic->backlog, struct iser_backlog, link);

		list_del(&b->link);
		if (b->pdu) {
			if (b->pdu->sent)
				b->pdu->sent(b->pdu, -ECONNRESET);
			else
				iscsi_tx_pdu_free(b->pdu);
		} else if (!b->read) {
			/* Data-In never left: the task still waits for its status */
			b->task->state = TASK_STATE_DONE;
		}
		free(b);
	}
}

/* ---------------- completions ---------------- */

static void rx_done(struct iser_conn *ic, uint32_t idx, const struct ibv_wc *wc)
{
	uint8_t *buf = ic->rx_mem + (size_t)idx * ISER_RX_SIZE;
	struct iscsi_conn *c = ic->conn;
	const struct iscsi_bhs *bhs = (const struct iscsi_bhs *)(buf + sizeof(struct iser_hdr));
	struct iscsi_bhs cmd_copy;
	struct iser_hdr_info h;
	const char *why = NULL;
	uint32_t ahs_len, dsl;

	ic->posted_recv--;
	/*
	 * The QP receives as soon as rdma_accept() made it ready: a fast
	 * initiator's first Login Request can complete here before our own
	 * ESTABLISHED event is read. A receive proves the connection is up.
	 */
	if (wc->status == IBV_WC_SUCCESS && ic->state == ISER_CONNECTING) {
		ic->state = ISER_ESTABLISHED;
		GW_INFO(COMP, "%s: RDMA connection established on %s (first receive)", ic->peer,
			ic->local);
	}
	if (wc->status != IBV_WC_SUCCESS || ic->state != ISER_ESTABLISHED)
		return;
	if (iser_hdr_decode(buf, wc->byte_len, &h, &why)) {
		char msg[128];

		snprintf(msg, sizeof(msg), "bad iSER header: %s", why);
		iscsi_conn_drop(c, msg);
		return;
	}
	ahs_len = iscsi_ahs_len(bhs);
	dsl = iscsi_bhs_dsl(bhs);
	if ((uint64_t)ISER_HDRS_LEN + ahs_len > wc->byte_len) {
		iscsi_conn_drop(c, "Send shorter than the PDU's headers and AHS");
		return;
	}
	if ((uint64_t)ISER_HDRS_LEN + ahs_len + dsl > wc->byte_len) {
		uint32_t carried = wc->byte_len - ISER_HDRS_LEN - ahs_len;
		char msg[128];

		/*
		 * libiscsi's iSER initiator declares immediate data and unsolicited
		 * Data-Out it then leaves out of its Sends: the data stays in its
		 * registered buffer, behind the write STag. Such a connection is
		 * served "by reference": commands are taken as if no unsolicited
		 * data followed, and the data is read by RDMA. Any other PDU that is
		 * short is malformed.
		 */
		if (iscsi_bhs_opcode(bhs) == ISCSI_OP_SCSI_CMD && h.wsv) {
			dsl = carried;
		} else if (iscsi_bhs_opcode(bhs) == ISCSI_OP_DATA_OUT && carried == 0) {
			if (!ic->unsol_by_ref)
				GW_INFO(COMP, "%s: initiator sends Data-Out without data: reading "
					"unsolicited data by RDMA from the write STag", ic->peer);
			ic->unsol_by_ref = true;
			iscsi_task_fetch_unsolicited(c, (const struct iscsi_data_out *)bhs);
			goto repost;
		} else {
			snprintf(msg, sizeof(msg), "%s claims %u data bytes but the Send carried %u",
				 iscsi_opcode_name(bhs->opcode), dsl, carried);
			iscsi_conn_drop(c, msg);
			return;
		}
		if (!ic->unsol_by_ref)
			GW_INFO(COMP, "%s: SCSI Command declares %u immediate bytes but the Send "
				"carries %u: reading write data by RDMA from the write STag",
				ic->peer, iscsi_bhs_dsl(bhs), carried);
		ic->unsol_by_ref = true;
	}
	if (ic->unsol_by_ref && iscsi_bhs_opcode(bhs) == ISCSI_OP_SCSI_CMD) {
		/* no unsolicited Data-Out will carry data: say so to the core */
		memcpy(&cmd_copy, bhs, sizeof(cmd_copy));
		cmd_copy.flags |= ISCSI_FLAG_FINAL;
		iscsi_bhs_set_dsl(&cmd_copy, dsl);
		bhs = &cmd_copy;
	}
	ic->cur = h;
	ic->cur_valid = true;
	iscsi_conn_rx_pdu(c, bhs, ahs_len ? buf + ISER_HDRS_LEN : NULL, ahs_len,
			  dsl ? buf + ISER_HDRS_LEN + ahs_len : NULL, dsl);
	ic->cur_valid = false;
repost:
	/* RFC 7145 6.7: commands are unexpected PDUs, outstanding until answered */
	if (c->state == CONN_STATE_FFP && c->params.max_outstanding_unexpected_pdus &&
	    c->ntasks > c->params.max_outstanding_unexpected_pdus) {
		char msg[128];

		snprintf(msg, sizeof(msg), "initiator has %u commands outstanding, more than "
			 "MaxOutstandingUnexpectedPDUs=%u", c->ntasks,
			 c->params.max_outstanding_unexpected_pdus);
		iscsi_conn_drop(c, msg);
		return;
	}
	if (ic->state == ISER_ESTABLISHED && post_recv(ic, idx)) {
		iscsi_conn_drop(c, "cannot re-post a receive buffer");
		return;
	}
	/* every receive the initiator may fill is posted again at once; running
	 * out means it sent more unexpected PDUs than it may have outstanding */
	if (ic->state == ISER_ESTABLISHED && ic->posted_recv == 0)
		iscsi_conn_drop(c, "initiator exceeded its outstanding unexpected PDUs");
}

static void send_done(struct iser_conn *ic, struct iser_tx *tx, const struct ibv_wc *wc)
{
	struct iscsi_tx_pdu *pdu = tx->pdu;

	/* this Send and the unsignaled RDMA Writes posted right before it */
	ic->sq_used -= 1 + tx->unsig;
	ic->posted_send -= 1 + tx->unsig;
	tx->unsig = 0;
	tx->pdu = NULL;
	tx->next_free = ic->tx_free;
	ic->tx_free = tx;
	if (pdu) {
		int st = wc->status == IBV_WC_SUCCESS ? 0 : -EIO;

		if (!st && iscsi_bhs_opcode(&pdu->bhs) == ISCSI_OP_LOGOUT_RSP)
			ic->logout_sent = true;
		if (pdu->sent)
			pdu->sent(pdu, st);
		else
			iscsi_tx_pdu_free(pdu);
	}
}

static void read_done(struct iser_conn *ic, struct iser_task *it, const struct ibv_wc *wc)
{
	struct iscsi_task *t = it->task;

	ic->sq_used--;
	ic->posted_send--;
	if (--it->reads_outstanding)
		return;
	if (!t) {
		iser_task_orphan_done(it);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS || ic->state != ISER_ESTABLISHED)
		return;
	t->received += it->read_len;
	if (t->received >= t->edtl && t->state == TASK_STATE_DATA_OUT)
		iscsi_task_data_ready(t);
}

static const char *wr_kind_name(unsigned int k)
{
	switch (k) {
	case WR_RECV: return "receive";
	case WR_SEND: return "send";
	case WR_RDMA_WRITE: return "RDMA Write";
	case WR_RDMA_READ: return "RDMA Read";
	case WR_RDMA_WRITE_UNSIG: return "RDMA Write";
	default: return "?";
	}
}

static void iser_complete(struct iser_conn *ic, const struct ibv_wc *wc)
{
	unsigned int kind = wc->wr_id & WR_KIND_MASK;
	void *p = (void *)(uintptr_t)(wc->wr_id & ~(uint64_t)WR_KIND_MASK);

	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR &&
	    ic->state == ISER_ESTABLISHED) {
		char msg[160];

		snprintf(msg, sizeof(msg), "%s completed with %s (vendor error 0x%x)",
			 wr_kind_name(kind), ibv_wc_status_str(wc->status), wc->vendor_err);
		iscsi_conn_drop(ic->conn, msg);
	}
	switch (kind) {
	case WR_RECV:
		rx_done(ic, (uint32_t)(wc->wr_id >> 3), wc);
		break;
	case WR_SEND:
		send_done(ic, p, wc);
		break;
	case WR_RDMA_WRITE:
		ic->sq_used--;
		ic->posted_send--;
		break;
	case WR_RDMA_WRITE_UNSIG:
		break;  /* failed or flushed: accounted by the Send behind it */
	case WR_RDMA_READ:
		read_done(ic, p, wc);
		break;
	default:
		break;
	}
}

/* Handle every completion the CQ holds; returns how many there were. */
static uint32_t iser_poll(struct iser_conn *ic)
{
	struct ibv_wc wc[ISER_POLL_BATCH];
	uint32_t total = 0;
	int n;

	do {
		n = ibv_poll_cq(ic->cq, ISER_POLL_BATCH, wc);
		for (int i = 0; i < n; i++)
			iser_complete(ic, &wc[i]);
		if (n > 0)
			total += (uint32_t)n;
	} while (n == ISER_POLL_BATCH);
	if (ic->state == ISER_ESTABLISHED)
		iser_flush_backlog(ic);
	else
		iser_maybe_closed(ic);
	return total;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * Busy polling: after a completion event the CQ is not re-armed at once but
 * polled again from the reactor's deferred queue (each round after the
 * reactor looked at its other descriptors without sleeping, and after our
 * queued work requests were posted) until nothing completed for
 * iser_spin_us; then it is armed, and polled once more to close the race.
 * Saves the sleep, the completion event, its read and the re-arm when the
 * next completion follows closely (an initiator with commands in flight).
 */
static void iser_spin(void *arg)
{
	struct iser_conn *ic = arg;
	uint64_t now;

	if (ic->state == ISER_CLOSED)
		return;
	if (iser_poll(ic))
		ic->spin_until = now_us() + iser_spin_us;
	if (ic->state != ISER_ESTABLISHED) {
		ic->spinning = false;
		return; /* flushes complete on the armed CQ (terminate armed it) */
	}
	now = now_us();
	if (now < ic->spin_until) {
		reactor_defer(ic->reactor, &ic->spin_work);
		return;
	}
	ic->spinning = false;
	ibv_req_notify_cq(ic->cq, 0);
	if (iser_poll(ic)) {
		ic->spinning = true;
		ic->spin_until = now_us() + iser_spin_us;
		reactor_defer(ic->reactor, &ic->spin_work);
	}
}

static void iser_cq_event(void *arg, uint32_t events)
{
	struct iser_rdev *rd = arg;
	struct ibv_cq *cq;
	void *ctx;

	(void)events;
	while (ibv_get_cq_event(rd->chan, &cq, &ctx) == 0) {
		struct iser_conn *ic = ctx;

		ibv_ack_cq_events(cq, 1);
		if (iser_spin_us && ic->state == ISER_ESTABLISHED) {
			/* re-armed when the spinning ends */
			iser_poll(ic);
			if (!ic->spinning && ic->state == ISER_ESTABLISHED) {
				ic->spinning = true;
				ic->spin_until = now_us() + iser_spin_us;
				reactor_defer(ic->reactor, &ic->spin_work);
			}
			continue;
		}
		if (ic->state != ISER_CLOSED)
			ibv_req_notify_cq(cq, 0);
		iser_poll(ic);
	}
}

/* ---------------- connection life ---------------- */

static void iser_conn_free(struct iser_conn *ic)
{
	if (ic->reactor) {
		reactor_deferred_cancel(ic->reactor, &ic->post_work);
		reactor_timer_cancel(ic->reactor, &ic->logout_timer);
		reactor_deferred_cancel(ic->reactor, &ic->spin_work);
	}
	if (ic->id && ic->id->qp)
		rdma_destroy_qp(ic->id);
	if (ic->cq)
		ibv_destroy_cq(ic->cq);
	if (ic->rx_mr)
		ibv_dereg_mr(ic->rx_mr);
	if (ic->tx_mr)
		ibv_dereg_mr(ic->tx_mr);
	free(ic->rx_mem);
	free(ic->tx_mem);
	if (ic->id)
		rdma_destroy_id(ic->id);
	if (ic->rd) {
		ic->rd->nconns--;
		iser_rdev_maybe_free(ic->rd);
	}
	free(ic);
}

static void iser_closed_work(void *arg)
{
	struct iser_conn *ic = arg;
	struct iscsi_conn *c = ic->conn;

	if (c) {
		c->dm_priv = NULL;
		iser_conn_free(ic);
		iscsi_conn_closed(c);
	} else {
		iser_conn_free(ic);
	}
}

/* All posted work has flushed and the CM is done: free, then tell the core. */
static void iser_maybe_closed(struct iser_conn *ic)
{
	if (ic->state != ISER_CLOSING || ic->posted_recv || ic->posted_send || !ic->disconnected)
		return;
	ic->state = ISER_CLOSED;
	reactor_defer(ic->reactor, &ic->closed_work);
}

static void iser_terminate(struct iscsi_conn *c)
{
	struct iser_conn *ic = c->dm_priv;

	if (!ic || ic->state == ISER_CLOSING || ic->state == ISER_CLOSED)
		return;
	ic->state = ISER_CLOSING;
	backlog_fail(ic);
	reactor_deferred_cancel(ic->reactor, &ic->post_work);
	if (ic->spinning) {
		/* the flushes must raise events: arm the CQ again */
		reactor_deferred_cancel(ic->reactor, &ic->spin_work);
		ic->spinning = false;
		ibv_req_notify_cq(ic->cq, 0);
	}
	iser_post_pending(ic); /* they flush with the rest */
	/*
	 * Moves the QP to the error state: every posted request flushes. Before
	 * the CM has reported ESTABLISHED (a receive can complete first) the id
	 * cannot disconnect yet (the kernel then sends no DREQ, yet returns 0):
	 * do it when the event arrives.
	 */
	if (!ic->cm_established && !ic->disconnected) {
		ic->disconnect_deferred = true;
	} else if (ic->logout_sent && !ic->disconnected) {
		/*
		 * After a Logout Response it is the initiator that closes the
		 * connection (RFC 7143, Logout), as tgt waits for it to. libiscsi
		 * 1.19's iSER initiator never does while its process lives, and
		 * its CM event thread writes into the freed context when our
		 * disconnect arrives, corrupting the process's heap. The QP is in
		 * the error state already: wait for the initiator (or its exit),
		 * up to a limit, or until we shut down.
		 */
		reactor_timer_arm(ic->reactor, &ic->logout_timer, ISER_LOGOUT_TICK_MS);
	} else if (rdma_disconnect(ic->id) && errno != EINVAL) {
		GW_INFO(COMP, "%s: rdma_disconnect: %s", ic->peer, strerror(errno));
	}
	if (ic->id->qp) {
		struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(ic->id->qp, &attr, IBV_QP_STATE);
	}
	iser_poll(ic);
	iser_maybe_closed(ic);
}

static void iser_logout_grace(void *arg)
{
	struct iser_conn *ic = arg;

	if (ic->disconnected)
		return;
	ic->logout_waited_ms += ISER_LOGOUT_TICK_MS;
	if (ic->logout_waited_ms < ISER_LOGOUT_GRACE_MS &&
	    !atomic_load(&ic->portal->gw->shutting_down)) {
		reactor_timer_arm(ic->reactor, &ic->logout_timer, ISER_LOGOUT_TICK_MS);
		return;
	}
	GW_INFO(COMP, "%s: initiator did not disconnect within %u ms of its Logout: "
		"disconnecting", ic->peer, ic->logout_waited_ms);
	if (rdma_disconnect(ic->id) && errno != EINVAL)
		GW_INFO(COMP, "%s: rdma_disconnect: %s", ic->peer, strerror(errno));
}

static int iser_enter_ffp(struct iscsi_conn *c)
{
	/*
	 * Full-feature control PDUs must fit the initiator's receive buffers:
	 * Linux ib_iser posts 128-byte ones unless InitiatorRecvDataSegmentLength
	 * says otherwise (RFC 7145 section 6.5).
	 */
	if (c->sess && c->sess->type == ISCSI_SESSION_NORMAL &&
	    !c->params.initiator_recv_dsl_declared && c->params.max_xmit_dsl > ISER_FFP_XMIT_DSL)
		c->params.max_xmit_dsl = ISER_FFP_XMIT_DSL;
	if (c->params.max_xmit_dsl > ISCSI_ISER_RECV_DSL)
		c->params.max_xmit_dsl = ISCSI_ISER_RECV_DSL;
	return 0;
}

static void iser_addrs(struct iscsi_conn *c, char *peer, size_t plen, char *local, size_t llen)
{
	struct iser_conn *ic = c->dm_priv;

	snprintf(peer, plen, "%s", ic ? ic->peer : "?");
	snprintf(local, llen, "%s", ic ? ic->local : "?");
}

static void iser_rchan_event(void *arg, uint32_t events)
{
	struct iser_rchan *rc = arg;
	struct rdma_cm_event *ev;

	(void)events;
	while (rdma_get_cm_event(rc->ch, &ev) == 0) {
		struct iser_conn *ic = ev->id->context;
		struct rdma_cm_event copy = *ev;

		rdma_ack_cm_event(ev);
		if (ic)
			iser_conn_event(ic, &copy);
	}
}

static struct iser_rchan *iser_rchan_get(void)
{
	struct iser_rchan *rc = tl_rchan;

	if (rc)
		return rc;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return NULL;
	rc->reactor = reactor_self();
	rc->ch = rdma_create_event_channel();
	if (!rc->ch || set_nonblock(rc->ch->fd) ||
	    reactor_add_fd(rc->reactor, &rc->rfd, rc->ch->fd, EPOLLIN, iser_rchan_event, rc)) {
		if (rc->ch)
			rdma_destroy_event_channel(rc->ch);
		free(rc);
		return NULL;
	}
	tl_rchan = rc;
	return rc;
}

static void iser_conn_event(struct iser_conn *ic, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		ic->cm_established = true;
		if (ic->state == ISER_CONNECTING) {
			ic->state = ISER_ESTABLISHED;
			GW_INFO(COMP, "%s: RDMA connection established on %s", ic->peer, ic->local);
		} else if (ic->disconnect_deferred) {
			ic->disconnect_deferred = false;
			if (rdma_disconnect(ic->id))
				GW_INFO(COMP, "%s: rdma_disconnect: %s", ic->peer, strerror(errno));
		}
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			iser_device_removed(ic->portal->gw, ic->id->verbs);
		ic->disconnected = true;
		if (ic->state == ISER_ESTABLISHED || ic->state == ISER_CONNECTING) {
			char why[96];

			snprintf(why, sizeof(why), "RDMA connection ended (%s)",
				 rdma_event_str(ev->event));
			/* the initiator's disconnect is its going away; the rest are ours */
			if (ic->conn->state == CONN_STATE_FFP && ev->event == RDMA_CM_EVENT_DISCONNECTED)
				iscsi_conn_peer_closed(ic->conn);
			else if (ic->conn->state == CONN_STATE_FFP)
				iscsi_conn_drop(ic->conn, why);
			else
				iscsi_conn_close(ic->conn);
		}
		iser_poll(ic);
		iser_maybe_closed(ic);
		break;
	default:
		GW_DEBUG(COMP, "%s: CM event %s", ic->peer, rdma_event_str(ev->event));
		break;
	}
}

struct iser_accept_msg {
	struct rdma_cm_id *id;
	struct gw_portal *portal;
	struct iser_cm_hdr req;
	bool req_valid;
	uint8_t initiator_depth, responder_resources;
	struct iscsi_admission adm;     /* until iscsi_conn_create takes it */
};

static void iser_reject(struct rdma_cm_id *id, const char *why)
{
	char peer[80];

	gw_fmt_sockaddr(rdma_get_peer_addr(id), peer, sizeof(peer));
	GW_WARN(COMP, "%s: refusing RDMA connection: %s", peer, why);
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

/* On the reactor that will own the connection. */
static void iser_accept_on_reactor(void *arg)
{
	struct iser_accept_msg *m = arg;
	struct rdma_cm_id *id = m->id;
	struct iser_rchan *rch = iser_rchan_get();
	struct rdma_conn_param cp;
	struct ibv_qp_init_attr qa;
	struct iser_cm_depths depths;
	struct iser_cm_hdr rsp;
	struct iser_conn *ic;
	struct iser_dev *dev;
	int rc;

	if (!rch || rdma_migrate_id(id, rch->ch)) {
		iser_reject(id, "cannot attach to the reactor's event channel");
		iscsi_conn_admit_cancel(m->portal->gw, &m->adm);
		free(m);
		return;
	}
	ic = calloc(1, sizeof(*ic));
	if (!ic) {
		iser_reject(id, "out of memory");
		iscsi_conn_admit_cancel(m->portal->gw, &m->adm);
		free(m);
		return;
	}
	ic->id = id;
	ic->portal = m->portal;
	ic->reactor = rch->reactor;
	ic->state = ISER_CONNECTING;
	list_init(&ic->backlog);
	reactor_deferred_init(&ic->closed_work, iser_closed_work, ic);
	reactor_deferred_init(&ic->post_work, iser_post_pending, ic);
	reactor_timer_init(&ic->logout_timer, iser_logout_grace, ic);
	reactor_deferred_init(&ic->spin_work, iser_spin, ic);
	gw_fmt_sockaddr(rdma_get_peer_addr(id), ic->peer, sizeof(ic->peer));
	gw_fmt_sockaddr(rdma_get_local_addr(id), ic->local, sizeof(ic->local));
	ic->send_inv = m->req_valid && !(m->req.flags & ISER_CM_SEND_W_INV_NOT_SUP);
	ic->rd = iser_rdev_get(id->verbs, rdma_get_local_addr(id));
	if (!ic->rd)
		goto err_reject;
	ic->rd->nconns++;
	dev = ic->rd->dev;
	ic->cq = ibv_create_cq(id->verbs, (int)(ISER_SQ_DEPTH + ISER_NRX), ic, ic->rd->chan, 0);
	if (!ic->cq || ibv_req_notify_cq(ic->cq, 0))
		goto err_reject;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = ic->cq;
	qa.recv_cq = ic->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = ISER_SQ_DEPTH;
	qa.cap.max_recv_wr = ISER_NRX;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = ISER_INLINE_WANT;
	if (rdma_create_qp(id, dev->pd, &qa)) {
		qa.cap.max_inline_data = 0; /* the device has no inline sends */
		if (rdma_create_qp(id, dev->pd, &qa)) {
			GW_WARN(COMP, "%s: cannot create a queue pair: %s", ic->peer,
				strerror(errno));
			goto err_reject;
		}
	}
	ic->max_inline = qa.cap.max_inline_data;
	ic->rx_mem = aligned_alloc(4096, ISER_RX_MEM_LEN);
	ic->tx_mem = aligned_alloc(4096, ISER_TX_MEM_LEN);
	if (!ic->rx_mem || !ic->tx_mem)
		goto err_reject;
	ic->rx_mr = ibv_reg_mr(dev->pd, ic->rx_mem, ISER_RX_MEM_LEN,
			       IBV_ACCESS_LOCAL_WRITE);
	ic->tx_mr = ibv_reg_mr(dev->pd, ic->tx_mem, ISER_TX_MEM_LEN, 0);
	if (!ic->rx_mr || !ic->tx_mr)
		goto err_reject;
	for (uint32_t i = 0; i < ISER_NTX; i++) {
		ic->tx[i].buf = ic->tx_mem + (size_t)i * ISER_TX_SIZE;
		ic->tx[i].ic = ic;
		ic->tx[i].next_free = ic->tx_free;
		ic->tx_free = &ic->tx[i];
	}
	for (uint32_t i = 0; i < ISER_NRX; i++)
		if (post_recv(ic, i))
			goto err_reject;
	id->context = ic;
	rc = iscsi_conn_create(m->portal, ic->reactor, ic, &m->adm, &ic->conn);
	if (rc)
		goto err_reject;

	memset(&rsp, 0, sizeof(rsp));
	rsp.flags = ISER_CM_ZBVA_NOT_USED | (ic->send_inv ? 0 : ISER_CM_SEND_W_INV_NOT_USED);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &rsp;
	cp.private_data_len = sizeof(rsp);
	depths = iser_cm_accept_depths(m->initiator_depth, m->responder_resources,
				       dev->attr.max_qp_init_rd_atom, dev->attr.max_qp_rd_atom);
	cp.initiator_depth = depths.initiator_depth;
	cp.responder_resources = depths.responder_resources;
	ic->rd_depth = cp.initiator_depth;
	if (!ic->rd_depth)
		GW_WARN(COMP, "%s: initiator accepts no RDMA Reads (responder resources 0): "
			"WRITE data must all come unsolicited", ic->peer);
	cp.rnr_retry_count = 7;
	free(m);
	if (rdma_accept(id, &cp)) {
		GW_WARN(COMP, "%s: rdma_accept: %s", ic->peer, strerror(errno));
		ic->state = ISER_ESTABLISHED; /* let terminate run the normal teardown */
		ic->disconnected = true;      /* no CM connection: no event will come */
		iscsi_conn_drop(ic->conn, "could not accept the RDMA connection");
	}
	return;

err_reject:
	GW_WARN(COMP, "%s: refusing RDMA connection: cannot set up its RDMA resources", ic->peer);
	iscsi_conn_admit_cancel(m->portal->gw, &m->adm);        /* if not taken */
	rdma_reject(id, NULL, 0);
	id->context = NULL;
	iser_conn_free(ic); /* QP, CQ, memory, then the id */
	free(m);
}

static void iser_listener_lost(struct iser_listener *l);

static void iser_listen_event(void *arg, uint32_t events)
{
	struct iser_listener *l = arg;
	struct rdma_cm_event *ev;

	(void)events;
	while (rdma_get_cm_event(l->ch, &ev) == 0) {
		struct iser_accept_msg *m;
		char peer[80];
		struct rdma_cm_id *id = ev->id;
		enum rdma_cm_event_type type = ev->event;

		if (type != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			if (type == RDMA_CM_EVENT_DEVICE_REMOVAL && id == l->id) {
				iser_listener_lost(l);
				return;
			}
			continue;
		}
		m = calloc(1, sizeof(*m));
		if (!m || atomic_load(&l->portal->gw->shutting_down)) {
			rdma_ack_cm_event(ev);
			iser_reject(id, m ? "target shutting down" : "out of memory");
			free(m);
			continue;
		}
		/* too many logging in from its address: rejected before it costs more */
		gw_fmt_sockaddr(rdma_get_peer_addr(id), peer, sizeof(peer));
		if (iscsi_conn_admit(l->portal->gw, peer, &m->adm)) {
			rdma_ack_cm_event(ev);
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			free(m);
			continue;
		}
		m->id = id;
		m->portal = l->portal;
		m->initiator_depth = ev->param.conn.initiator_depth;
		m->responder_resources = ev->param.conn.responder_resources;
		if (ev->param.conn.private_data_len >= sizeof(m->req) && ev->param.conn.private_data) {
			memcpy(&m->req, ev->param.conn.private_data, sizeof(m->req));
			m->req_valid = true;
		}
		id->context = NULL;
		rdma_ack_cm_event(ev);
		if (reactor_send_msg(gw_pick_reactor(l->portal->gw), iser_accept_on_reactor, m)) {
			iser_reject(id, "cannot reach a reactor");
			iscsi_conn_admit_cancel(l->portal->gw, &m->adm);
			free(m);
		}
	}
}

/* Create, bind and listen on the listener's id; -errno (id left NULL) on failure. */
static int iser_listener_bind(struct iser_listener *l)
{
	int rc;

	if (rdma_create_id(l->ch, &l->id, l, RDMA_PS_TCP)) {
		l->id = NULL;
		return -errno;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)&l->addr) || rdma_listen(l->id, 128)) {
		rc = -errno;
		rdma_destroy_id(l->id);
		l->id = NULL;
		return rc ? rc : -EIO;
	}
	return 0;
}

#define ISER_RELISTEN_MS 1000u

/*
 * The listener's device was removed: its id goes (the kernel waits for
 * that), and the portal listens again once a device serves its address.
 */
static void iser_listener_lost(struct iser_listener *l)
{
	const struct gw_portal_cfg *pc = gw_portal_cfg(l->portal);

	iser_device_removed(l->portal->gw, l->id->verbs);
	rdma_destroy_id(l->id);
	l->id = NULL;
	l->relisten_tries = 0;
	GW_ERR(COMP, "portal iser://%s:%u: RDMA device removed: not listening; trying again "
	       "every %u ms", pc->addr, pc->port, ISER_RELISTEN_MS);
	gw_portal_set_listening(l->portal, false, -ENODEV);
	reactor_timer_arm(l->reactor, &l->relisten, ISER_RELISTEN_MS);
}

static void iser_relisten(void *arg)
{
	struct iser_listener *l = arg;
	const struct gw_portal_cfg *pc = gw_portal_cfg(l->portal);
	int rc;

	if (l->id || atomic_load(&l->portal->gw->shutting_down))
		return;
	iser_sync_devices();
	rc = iser_listener_bind(l);
	if (rc) {
		if (++l->relisten_tries == 1 || l->relisten_tries % 60 == 0)
			GW_INFO(COMP, "portal iser://%s:%u: cannot listen yet: %s",
				pc->addr, pc->port, strerror(-rc));
		reactor_timer_arm(l->reactor, &l->relisten, ISER_RELISTEN_MS);
		return;
	}
	GW_NOTICE(COMP, "listening on iser://%s:%u", pc->addr, pc->port);
	gw_portal_set_listening(l->portal, true, 0);
}

static int iser_listen(struct gw_portal *p)
{
	const struct gw_portal_cfg *pc = gw_portal_cfg(p);     /* a reload may replace it */
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	struct iser_listener *l;
	char port[8];
	int rc;

	snprintf(port, sizeof(port), "%u", pc->port);
	rc = getaddrinfo(pc->addr, port, &hints, &res);
	if (rc) {
		GW_ERR(COMP, "portal iser://%s:%u: cannot resolve address: %s", pc->addr,
		       pc->port, gai_strerror(rc));
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		rc = -ENOMEM;
		goto err_ai;
	}
	l->portal = p;
	if (res->ai_addrlen > sizeof(l->addr)) {
		rc = -EINVAL;
		goto err_free;
	}
	memcpy(&l->addr, res->ai_addr, res->ai_addrlen);
	reactor_timer_init(&l->relisten, iser_relisten, l);
	/*
	 * Failures are the portal's to log: it waits for an RDMA device and
	 * tries again (core/portal.c). librdmacm finds a device that appeared
	 * since its first use by itself when the bind lands on it.
	 */
	l->ch = rdma_create_event_channel();
	if (!l->ch) {
		rc = -errno;
		GW_DEBUG(COMP, "portal iser://%s:%u: no RDMA CM (is rdma_ucm loaded?): %s",
			 pc->addr, pc->port, strerror(errno));
		goto err_free;
	}
	if (set_nonblock(l->ch->fd)) {
		rc = -errno;
		goto err_ch;
	}
	rc = iser_listener_bind(l);
	if (rc) {
		GW_DEBUG(COMP, "portal iser://%s:%u: cannot listen: %s (no RDMA device on that "
			 "address?)", pc->addr, pc->port, strerror(-rc));
		goto err_ch;
	}
	l->reactor = p->gw->reactors[0];
	rc = reactor_add_fd(l->reactor, &l->rfd, l->ch->fd, EPOLLIN, iser_listen_event, l);
	if (rc)
		goto err_id;
	p->dm_priv = l;
	freeaddrinfo(res);
	GW_NOTICE(COMP, "listening on iser://%s:%u", pc->addr, pc->port);
	return 0;

err_id:
	rdma_destroy_id(l->id);
err_ch:
	rdma_destroy_event_channel(l->ch);
err_free:
	free(l);
err_ai:
	freeaddrinfo(res);
	return rc ? rc : -EIO;
}

static void iser_unlisten_msg(void *arg)
{
	struct iser_listener *l = arg;

	reactor_timer_cancel(l->reactor, &l->relisten);
	reactor_del_fd(l->reactor, &l->rfd);
	if (l->id)
		rdma_destroy_id(l->id);
	rdma_destroy_event_channel(l->ch);
	free(l);
}

static void iser_unlisten(struct gw_portal *p)
{
	struct iser_listener *l = p->dm_priv;

	if (!l)
		return;
	p->dm_priv = NULL;
	if (reactor_self() == l->reactor)
		iser_unlisten_msg(l);
	else
		reactor_send_msg(l->reactor, iser_unlisten_msg, l);
}

static void iser_thread_exit(void)
{
	while (tl_rdevs)
		iser_rdev_free(tl_rdevs);
	if (tl_rchan) {
		reactor_del_fd(tl_rchan->reactor, &tl_rchan->rfd);
		rdma_destroy_event_channel(tl_rchan->ch);
		free(tl_rchan);
		tl_rchan = NULL;
	}
}

static void iser_global_exit(void)
{
	pthread_mutex_lock(&g_dev_lock);
	while (g_devs)
		iser_dev_free_locked(g_devs);
	pthread_mutex_unlock(&g_dev_lock);
}

struct gw_dm_ops gw_dm_iser_ops = {
	.name = "iser",
	.transport = GW_TRANSPORT_ISER,
	/*
	 * The listener's id holds librdmacm's reference on the device: with
	 * none left, librdmacm may close the device's context at its next
	 * device-list rescan (a device added), while our protection domain,
	 * registered memory and completion channels made from it live on. A
	 * listener bound to an address that went away hears nothing until it
	 * is back, so it stays.
	 */
	.keep_listener_without_address = true,
	.listen = iser_listen,
	.unlisten = iser_unlisten,
	.send_control = iser_send_control,
	.put_data = iser_put_data,
	.get_data = iser_get_data,
	.release_task = iser_release_task,
	.buf_get = iser_buf_get,
	.buf_put = iser_buf_put,
	.terminate = iser_terminate,
	.enter_ffp = iser_enter_ffp,
	.addrs = iser_addrs,
	.thread_exit = iser_thread_exit,
	.global_exit = iser_global_exit,
};
GW_DM_REGISTER(gw_dm_iser_ops)

#else /* !ISERGW_HAVE_RDMA */

/* Built without rdma-core: iser:// portals report the transport unavailable. */
struct gw_dm_ops gw_dm_iser_ops;

#endif
