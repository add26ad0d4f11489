/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-reactor I/O counters (core/counters.h). Each reactor thread owns one
 * chained hash table, created on its first completion and freed when the
 * thread exits (a pthread key destructor). An entry is allocated the first
 * time a (target, LUN), (port, group) or device group completes a command on
 * that reactor and never moves, so accounting is three lookups and some
 * additions. The table doubles its buckets when it holds twice as many
 * entries (thousands of LUNs), so a lookup stays a short chain.
 */
#include "core/counters.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scsi/scsi.h"
#include "common/log.h"
#include "common/reactor.h"

#define CTR_BUCKETS_MIN 256u
#define CTR_BUCKETS_MAX (1u << 20)

struct ctr_entry {
	struct ctr_entry *next;
	size_t hash;
	struct gw_ctr_sample s;
};

struct ctr_table {
	uint64_t id;                    /* unique in the process: what a gw_ctr_cache names */
	size_t n;
	size_t nbuckets;                /* a power of two */
	struct ctr_entry **bucket;
};

static pthread_key_t ctr_key;
static pthread_once_t ctr_once = PTHREAD_ONCE_INIT;
static _Thread_local struct ctr_table *tl_table;
static atomic_uint_fast64_t table_ids;

static void table_free(void *arg)
{
	struct ctr_table *t = arg;

	for (size_t i = 0; i < t->nbuckets; i++) {
		while (t->bucket[i]) {
			struct ctr_entry *e = t->bucket[i];

			t->bucket[i] = e->next;
			free(e);
		}
	}
	free(t->bucket);
	free(t);
}

static void ctr_key_init(void)
{
	if (pthread_key_create(&ctr_key, table_free))
		GW_WARN("counters", "no thread key: I/O counters disabled");
}

static struct ctr_table *table_self(void)
{
	if (tl_table)
		return tl_table;
	pthread_once(&ctr_once, ctr_key_init);
	tl_table = calloc(1, sizeof(*tl_table));
	if (!tl_table)
		return NULL;
	tl_table->id = atomic_fetch_add(&table_ids, 1) + 1;
	tl_table->nbuckets = CTR_BUCKETS_MIN;
	tl_table->bucket = calloc(CTR_BUCKETS_MIN, sizeof(*tl_table->bucket));
	if (!tl_table->bucket || pthread_setspecific(ctr_key, tl_table)) {
		free(tl_table->bucket);
		free(tl_table);
		tl_table = NULL;
	}
	return tl_table;
}

uint64_t gw_counters_now_us(void)
{
	return reactor_now_us();
}

/*
 * The class of each opcode, 1 + its enum gw_io_class, 0: other. READ(6/10/12/16);
 * WRITE(6/10/12/16), WRITE AND VERIFY(10/12/16), WRITE SAME(10/16), COMPARE AND WRITE.
 */
#define R (1 + GW_IO_READ)
#define W (1 + GW_IO_WRITE)
static const uint8_t io_class[256] = {
	[0x08] = R, [0x28] = R, [0xa8] = R, [0x88] = R,
	[0x0a] = W, [0x2a] = W, [0xaa] = W, [0x8a] = W,
	[0x2e] = W, [0xae] = W, [0x8e] = W,
	[0x41] = W, [0x93] = W,
	[0x89] = W,
};
#undef R
#undef W

enum gw_io_class gw_io_classify(uint8_t op)
{
	return io_class[op] ? (enum gw_io_class)(io_class[op] - 1) : GW_IO_OTHER;
}

static unsigned int lat_bucket(uint64_t us)
{
	unsigned int b = us < 2 ? 0 : 63u - (unsigned int)__builtin_clzll(us);

	return b < GW_LAT_BUCKETS ? b : GW_LAT_BUCKETS - 1;
}

/* What one completion adds, worked out once for the four places it is counted. */
struct ctr_delta {
	enum gw_io_class cl;
	uint32_t bytes_read, bytes_written;
	size_t status_off;              /* offset of the status counter to bump, 0: none */
	size_t lat_off;                 /* offset of the latency bucket to bump, 0: none */
};

static size_t status_offset(const struct gw_io_done *d)
{
	if (d->aborted)
		return offsetof(struct gw_io_counters, aborted);
	switch (d->status) {
	case SCSI_STATUS_GOOD:
	case SCSI_STATUS_CONDITION_MET:
		return 0;
	case SCSI_STATUS_CHECK_CONDITION:
		return offsetof(struct gw_io_counters, check_condition);
	case SCSI_STATUS_BUSY:
	case SCSI_STATUS_TASK_SET_FULL:
		return offsetof(struct gw_io_counters, busy);
	case SCSI_STATUS_RESERVATION_CONFLICT:
		return offsetof(struct gw_io_counters, reservation_conflict);
	default:
		return offsetof(struct gw_io_counters, aborted);
	}
}

static void ctr_bump(struct gw_io_counters *c, size_t off)
{
	(*(uint64_t *)(void *)((char *)c + off))++;
}

static void account(struct gw_io_counters *c, const struct ctr_delta *x)
{
	c->cmds[x->cl]++;
	c->bytes_read += x->bytes_read;
	c->bytes_written += x->bytes_written;
	if (x->status_off)
		ctr_bump(c, x->status_off);
	if (x->lat_off)
		ctr_bump(c, x->lat_off);
}

/* Twice the buckets, every entry moved (no allocation but the array); kept as is on ENOMEM. */
static void table_grow(struct ctr_table *t)
{
	size_t nb = t->nbuckets * 2;
	struct ctr_entry **b = calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < t->nbuckets; i++) {
		while (t->bucket[i]) {
			struct ctr_entry *e = t->bucket[i];

			t->bucket[i] = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(t->bucket);
	t->bucket = b;
	t->nbuckets = nb;
}

static struct gw_io_counters *entry_get(struct ctr_table *t, enum gw_ctr_kind kind,
					const void *target, uint32_t lun, uint16_t rel, uint16_t tpg)
{
	size_t h = kind == GW_CTR_LUN ? ((uintptr_t)target >> 4) * 31u + lun * 2654435761u
		 : kind == GW_CTR_PORT ? ((uintptr_t)rel << 16 | tpg) * 17u + 1u
				       : (size_t)lun * 13u + 7u;
	struct ctr_entry **head = &t->bucket[h & (t->nbuckets - 1)], *e;

	for (e = *head; e; e = e->next) {
		const struct gw_ctr_sample *s = &e->s;

		if (e->hash != h || s->kind != kind)
			continue;
		if (kind == GW_CTR_LUN ? s->target == target && s->lun == lun
		    : kind == GW_CTR_PORT ? s->rel_port_id == rel && s->tpg_id == tpg
					  : s->lun == lun)
			return &e->s.c;
	}
	if (t->n >= 2 * t->nbuckets && t->nbuckets < CTR_BUCKETS_MAX) {
		table_grow(t);
		head = &t->bucket[h & (t->nbuckets - 1)];
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->hash = h;
	e->s.kind = kind;
	e->s.target = target;
	e->s.lun = lun;
	e->s.rel_port_id = rel;
	e->s.tpg_id = tpg;
	e->next = *head;
	*head = e;
	t->n++;
	return &e->s.c;
}

void gw_counters_done(struct gw_io_counters *sess, const struct gw_io_done *d)
{
	unsigned int bucket = lat_bucket(gw_counters_now_us() - d->start_us);
	struct ctr_delta x = {
		.cl = gw_io_classify(d->opcode),
		.bytes_read = d->aborted ? 0 : d->bytes_read,
		.bytes_written = d->aborted ? 0 : d->bytes_written,
		.status_off = status_offset(d),
	};
	struct ctr_table *t = table_self();
	struct gw_ctr_cache *k = d->cache, none;
	struct gw_io_counters *c;

	/* an aborted command counts in cmds and aborted only */
	if (!d->aborted && x.cl == GW_IO_READ)
		x.lat_off = offsetof(struct gw_io_counters, lat_read) + bucket * sizeof(uint64_t);
	else if (!d->aborted && x.cl == GW_IO_WRITE)
		x.lat_off = offsetof(struct gw_io_counters, lat_write) + bucket * sizeof(uint64_t);
	if (sess)
		account(sess, &x);
	if (!t)
		return;
	if (!k) {
		memset(&none, 0, sizeof(none));
		k = &none;
	}
	if (k->table_id != t->id) {
		memset(k, 0, sizeof(*k));
		k->table_id = t->id;
	}
	if (d->target) {
		if (!k->lun_c || k->target != d->target || k->lun != d->lun) {
			k->lun_c = entry_get(t, GW_CTR_LUN, d->target, d->lun, 0, 0);
			k->target = d->target;
			k->lun = d->lun;
		}
		if ((c = k->lun_c))
			account(c, &x);
	}
	if (d->rel_port_id) {
		if (!k->port_c || k->rel_port_id != d->rel_port_id || k->tpg_id != d->tpg_id) {
			k->port_c = entry_get(t, GW_CTR_PORT, NULL, 0, d->rel_port_id, d->tpg_id);
			k->rel_port_id = d->rel_port_id;
			k->tpg_id = d->tpg_id;
		}
		if ((c = k->port_c))
			account(c, &x);
	}
	if (d->dg) {
		if (!k->dg_c || k->dg != d->dg) {
			k->dg_c = entry_get(t, GW_CTR_DG, NULL, d->dg - 1u, 0, 0);
			k->dg = d->dg;
		}
		if ((c = k->dg_c))
			account(c, &x);
	}
}

void gw_counters_add(struct gw_io_counters *a, const struct gw_io_counters *b)
{
	uint64_t *pa = (uint64_t *)a;
	const uint64_t *pb = (const uint64_t *)b;

	/* the struct is uint64_t fields only */
	for (size_t i = 0; i < sizeof(*a) / sizeof(uint64_t); i++)
		pa[i] += pb[i];
}

_Static_assert(sizeof(struct gw_io_counters) % sizeof(uint64_t) == 0, "counters are u64 only");

int gw_counters_snapshot(struct gw_ctr_sample **out, size_t *n)
{
	struct ctr_table *t = tl_table;
	struct gw_ctr_sample *s;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (!t || !t->n)
		return 0;
	s = malloc(t->n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->nbuckets; i++)
		for (const struct ctr_entry *e = t->bucket[i]; e; e = e->next)
			s[k++] = e->s;
	*out = s;
	*n = k;
	return 0;
}
