/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Optional backstore hook used by GET LBA STATUS.
 *
 * A backend that can tell allocated from deallocated ranges (the file
 * backend with lseek(SEEK_DATA/SEEK_HOLE)) defines this function; the SCSI
 * layer declares it weak and, when it is not linked in, reports every LBA
 * as mapped. It is called on a reactor thread, so it must be cheap and must
 * not block for long (a SEEK_DATA/SEEK_HOLE pair on a local file is fine).
 *
 * Reports the provisioning state of the run starting at byte `offset`:
 * *mapped is true if the bytes are allocated (or unknown), false if they
 * are a hole; *run_len is the length in bytes of that run, at most `len`
 * and at least 1. Returns 0 or a negative errno (then the range is
 * reported as mapped); -EOPNOTSUPP for a bdev of another backstore type.
 */
#ifndef ISERGW_SCSI_BDEV_EXT_H
#define ISERGW_SCSI_BDEV_EXT_H

#include <stdbool.h>
#include <stdint.h>

struct bdev;

int bdev_get_alloc_status(struct bdev *b, uint64_t offset, uint64_t len, bool *mapped,
			  uint64_t *run_len) __attribute__((weak));

#endif
