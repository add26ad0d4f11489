/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-thread data buffer cache for task buffers: power-of-two size classes
 * from 4 KiB to 16 MiB, each keeping a bounded number of free buffers so that
 * steady-state I/O neither calls mmap/munmap nor faults pages in. A buffer
 * must be freed on the thread that allocated it (tasks live on one reactor);
 * buffers are page aligned (usable for O_DIRECT and RDMA registration later).
 */
#ifndef ISERGW_BUFPOOL_H
#define ISERGW_BUFPOOL_H

#include <stddef.h>
#include <string.h>

/* Returns a buffer of at least len bytes (len > 0), or NULL. */
void *gw_buf_alloc(size_t len);
/* len must be the length given to gw_buf_alloc. NULL is ignored. */
void gw_buf_free(void *buf, size_t len);
/* Drop this thread's cached buffers and objects (thread exit, tests). */
void gw_buf_cache_drain(void);

/*
 * A thread's cache of fixed-size objects (tasks, PDUs): objects come back to
 * the thread that freed them and are handed out again without calling the
 * allocator, up to `max` kept; beyond that they are freed, and an empty cache
 * allocates. Declare one per kind and thread:
 *   static _Thread_local struct gw_obj_cache c = GW_OBJ_CACHE_INIT(sizeof(T), 256);
 * Objects come uninitialised (the caller sets what it uses). A thread's
 * caches are emptied by gw_buf_cache_drain and when the thread exits; under
 * AddressSanitizer a cached object is poisoned but for its first 8 bytes (the
 * free list's link), so a use after free is still reported.
 */
struct gw_obj_cache {
	size_t size;
	unsigned int max;
	unsigned int n;
	void *head;
	struct gw_obj_cache *next;      /* the thread's caches holding objects */
	_Bool listed;
};
#define GW_OBJ_CACHE_INIT(sz, mx) { .size = (sz), .max = (mx) }

/* The allocator's side of the caches (and every call under AddressSanitizer). */
void *gw_obj_get_slow(struct gw_obj_cache *c);
void gw_obj_put_slow(struct gw_obj_cache *c, void *obj);
#if defined(__SANITIZE_ADDRESS__)
#define GW_OBJ_FAST 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GW_OBJ_FAST 0
#endif
#endif
#ifndef GW_OBJ_FAST
#define GW_OBJ_FAST 1
#endif

/* An object of c->size bytes, or NULL without memory. */
static inline void *gw_obj_get(struct gw_obj_cache *c)
{
	void **f = c->head;

	if (!GW_OBJ_FAST || !f)
		return gw_obj_get_slow(c);
	c->head = *f;
	c->n--;
	return f;
}

/* Give obj (from gw_obj_get on this or another thread's cache of the same kind) back. NULL is ignored. */
static inline void gw_obj_put(struct gw_obj_cache *c, void *obj)
{
	if (!GW_OBJ_FAST || !obj || !c->listed || c->n >= c->max) {
		gw_obj_put_slow(c, obj);
		return;
	}
	*(void **)obj = c->head;
	c->head = obj;
	c->n++;
}

/*
 * Zero n bytes of a cached object. For n a compile-time constant of tens to
 * a few hundred bytes this becomes a few 32-byte stores, where a plain memset
 * of that size is compiled into rep stos (slower to start, and one counted
 * instruction per 8 bytes).
 */
static inline void gw_zero(void *p, size_t n)
{
	unsigned char *b = p;

#pragma GCC unroll 16
	for (; n >= 32; n -= 32, b += 32)
		memset(b, 0, 32);
	memset(b, 0, n);
}

#endif
