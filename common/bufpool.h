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
/* An object of c->size bytes, or NULL without memory. */
void *gw_obj_get(struct gw_obj_cache *c);
/* Give obj (from gw_obj_get on this or another thread's cache of the same kind) back. NULL is ignored. */
void gw_obj_put(struct gw_obj_cache *c, void *obj);

#endif
