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
/* Drop this thread's cached buffers (thread exit, tests). */
void gw_buf_cache_drain(void);

#endif
