/* SPDX-License-Identifier: Apache-2.0 */
#include "common/bufpool.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* Under AddressSanitizer cached buffers are poisoned, so a use after free
 * is still caught even though the memory is not returned to the allocator. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define BUF_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define BUF_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define BUF_POISON(p, n)   ((void)(p), (void)(n))
#define BUF_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define BUF_MIN_SHIFT 12u       /* 4 KiB */
#define BUF_MAX_SHIFT 24u       /* 16 MiB */
#define BUF_CLASSES   (BUF_MAX_SHIFT - BUF_MIN_SHIFT + 1u)
#define BUF_ALIGN     4096u

struct buf_free {
	struct buf_free *next;
};

struct buf_class {
	struct buf_free *head;
	unsigned int count;
};

static _Thread_local struct buf_class tl_classes[BUF_CLASSES];

/* How many free buffers a class keeps: about 32 MiB per thread at most. */
static unsigned int class_limit(unsigned int cls)
{
	static const unsigned int limits[BUF_CLASSES] = {
		256, 128, 128, 64, 64, 32, 32, 16, 16, 8, 4, 2, 1,
	};

	return limits[cls];
}

static int size_class(size_t len, unsigned int *cls)
{
	if (len <= ((size_t)1 << BUF_MIN_SHIFT)) {
		*cls = 0;
		return 0;
	}
	if (len > ((size_t)1 << BUF_MAX_SHIFT))
		return -1;
	/* the smallest power of two >= len */
	*cls = 64u - (unsigned int)__builtin_clzll((unsigned long long)len - 1) - BUF_MIN_SHIFT;
	return 0;
}

void *gw_buf_alloc(size_t len)
{
	struct buf_class *c;
	unsigned int cls;
	void *p;

	if (len == 0)
		return NULL;
	if (size_class(len, &cls))
		return aligned_alloc(BUF_ALIGN, (len + BUF_ALIGN - 1) & ~(size_t)(BUF_ALIGN - 1));
	c = &tl_classes[cls];
	if (c->head) {
		struct buf_free *f = c->head;

		BUF_UNPOISON(f, (size_t)1 << (cls + BUF_MIN_SHIFT));
		c->head = f->next;
		c->count--;
		return f;
	}
	p = aligned_alloc(BUF_ALIGN, (size_t)1 << (cls + BUF_MIN_SHIFT));
	return p;
}

void gw_buf_free(void *buf, size_t len)
{
	struct buf_class *c;
	struct buf_free *f = buf;
	unsigned int cls;

	if (!buf)
		return;
	if (size_class(len, &cls)) {
		free(buf);
		return;
	}
	c = &tl_classes[cls];
	if (c->count >= class_limit(cls)) {
		free(buf);
		return;
	}
	f->next = c->head;
	c->head = f;
	c->count++;
	BUF_POISON(f, (size_t)1 << (cls + BUF_MIN_SHIFT));
}

/* ---- object caches ---- */

/* This thread's caches that hold objects; a thread key empties them when it exits. */
static _Thread_local struct gw_obj_cache *tl_obj_caches;
static pthread_key_t obj_key;
static pthread_once_t obj_once = PTHREAD_ONCE_INIT;
static _Bool obj_key_ok;

static void obj_caches_drain(void)
{
	while (tl_obj_caches) {
		struct gw_obj_cache *c = tl_obj_caches;

		while (c->head) {
			struct buf_free *f = c->head;

			BUF_UNPOISON(f, c->size);
			c->head = f->next;
			free(f);
		}
		c->n = 0;
		c->listed = 0;
		tl_obj_caches = c->next;
		c->next = NULL;
	}
}

static void obj_thread_exit(void *arg)
{
	(void)arg;
	obj_caches_drain();
}

static void obj_key_init(void)
{
	obj_key_ok = pthread_key_create(&obj_key, obj_thread_exit) == 0;
}

void *gw_obj_get_slow(struct gw_obj_cache *c)
{
	struct buf_free *f = c->head;

	if (!f)
		return malloc(c->size < sizeof(*f) ? sizeof(*f) : c->size);
	BUF_UNPOISON(f, c->size);
	c->head = f->next;
	c->n--;
	return f;
}

void gw_obj_put_slow(struct gw_obj_cache *c, void *obj)
{
	struct buf_free *f = obj;

	if (!obj)
		return;
	if (c->n >= c->max) {
		free(obj);
		return;
	}
	if (!c->listed) {
		/* the first object this thread keeps here: drained at thread exit */
		pthread_once(&obj_once, obj_key_init);
		if (!obj_key_ok || pthread_setspecific(obj_key, (void *)1)) {
			free(obj);
			return;
		}
		c->listed = 1;
		c->next = tl_obj_caches;
		tl_obj_caches = c;
	}
	f->next = c->head;
	c->head = f;
	c->n++;
	/* all but the link: LeakSanitizer does not follow pointers in poisoned memory */
	if (c->size > sizeof(*f))
		BUF_POISON((char *)f + sizeof(*f), c->size - sizeof(*f));
}

void gw_buf_cache_drain(void)
{
	obj_caches_drain();
	for (unsigned int i = 0; i < BUF_CLASSES; i++) {
		struct buf_class *c = &tl_classes[i];

		while (c->head) {
			struct buf_free *f = c->head;

			BUF_UNPOISON(f, (size_t)1 << (i + BUF_MIN_SHIFT));
			c->head = f->next;
			free(f);
		}
		c->count = 0;
	}
}
