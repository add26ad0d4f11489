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
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scsi/scsi.h"
#include "common/log.h"

#define CTR_BUCKETS_MIN 256u
#define CTR_BUCKETS_MAX (1u << 20)

struct ctr_entry {
	struct ctr_entry *next;
	size_t hash;
	struct gw_ctr_sample s;
};

struct ctr_table {
	size_t n;
	size_t nbuckets;                /* a power of two */
	struct ctr_entry **bucket;
};

static pthread_key_t ctr_key;
static pthread_once_t ctr_once = PTHREAD_ONCE_INIT;
static _Thread_local struct ctr_table *tl_table;

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
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

enum gw_io_class gw_io_classify(uint8_t op)
{
	switch (op) {
	case 0x08: case 0x28: case 0xa8: case 0x88:             /* READ(6/10/12/16) */
		return GW_IO_READ;
	case 0x0a: case 0x2a: case 0xaa: case 0x8a:             /* WRITE(6/10/12/16) */
	case 0x2e: case 0xae: case 0x8e:                        /* WRITE AND VERIFY */
	case 0x41: case 0x93:                                   /* WRITE SAME(10/16) */
	case 0x89:                                              /* COMPARE AND WRITE */
		return GW_IO_WRITE;
	default:
		return GW_IO_OTHER;
	}
}

static unsigned int lat_bucket(uint64_t us)
{
	unsigned int b = us < 2 ? 0 : 63u - (unsigned int)__builtin_clzll(us);

	return b < GW_LAT_BUCKETS ? b : GW_LAT_BUCKETS - 1;
}

static void account(struct gw_io_counters *c, const struct gw_io_done *d, enum gw_io_class cl,
		    unsigned int bucket)
{
	c->cmds[cl]++;
	if (d->aborted) {
		c->aborted++;
		return;
	}
	c->bytes_read += d->bytes_read;
	c->bytes_written += d->bytes_written;
	switch (d->status) {
	case SCSI_STATUS_GOOD:
	case SCSI_STATUS_CONDITION_MET:
		break;
	case SCSI_STATUS_CHECK_CONDITION:
		c->check_condition++;
		break;
	case SCSI_STATUS_BUSY:
	case SCSI_STATUS_TASK_SET_FULL:
		c->busy++;
		break;
	case SCSI_STATUS_RESERVATION_CONFLICT:
		c->reservation_conflict++;
		break;
	default:
		c->aborted++;
		break;
	}
	if (cl == GW_IO_READ)
		c->lat_read[bucket]++;
	else if (cl == GW_IO_WRITE)
		c->lat_write[bucket]++;
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
	enum gw_io_class cl = gw_io_classify(d->opcode);
	unsigned int bucket = lat_bucket(gw_counters_now_us() - d->start_us);
	struct ctr_table *t = table_self();
	struct gw_io_counters *c;

	if (sess)
		account(sess, d, cl, bucket);
	if (!t)
		return;
	if (d->target && (c = entry_get(t, GW_CTR_LUN, d->target, d->lun, 0, 0)))
		account(c, d, cl, bucket);
	if (d->rel_port_id && (c = entry_get(t, GW_CTR_PORT, NULL, 0, d->rel_port_id, d->tpg_id)))
		account(c, d, cl, bucket);
	if (d->dg && (c = entry_get(t, GW_CTR_DG, NULL, d->dg - 1u, 0, 0)))
		account(c, d, cl, bucket);
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
