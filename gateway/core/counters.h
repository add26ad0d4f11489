/* SPDX-License-Identifier: Apache-2.0 */
/*
 * I/O counters of the data path: per session, per LUN (target, LUN), per
 * target port (relative port id, target port group) and per ALUA device group
 * (the one the LUN was in when the command completed). Counted on the reactor
 * that completes a command, in that reactor's own table: no atomics, no
 * locks. Readers ask every reactor for a copy of its table by message
 * (gw_counters_snapshot on each reactor) and add the copies up.
 */
#ifndef ISERGW_COUNTERS_H
#define ISERGW_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gw_api.h"

GW_API_BEGIN

#define GW_LAT_BUCKETS 24       /* log2 buckets of microseconds; the last is open-ended */

enum gw_io_class { GW_IO_READ = 0, GW_IO_WRITE, GW_IO_OTHER, GW_IO_NCLASS };

struct gw_io_counters {
	uint64_t cmds[GW_IO_NCLASS];
	uint64_t bytes_read;            /* Data-In delivered */
	uint64_t bytes_written;         /* Data-Out received */
	uint64_t check_condition;
	uint64_t busy;                  /* BUSY, TASK SET FULL */
	uint64_t reservation_conflict;
	uint64_t aborted;
	uint64_t lat_read[GW_LAT_BUCKETS];
	uint64_t lat_write[GW_LAT_BUCKETS];
};

/*
 * The table entries a session's completions went to last, so that the next
 * completion of the same LUN, port and device group finds them without a
 * lookup. Zero it when the session starts. Entries never move and live as
 * long as their table; a completion on another table (a thread that is not
 * the one it names) looks its entries up again.
 */
struct gw_ctr_cache {
	uint64_t table_id;              /* the table the entries are in, 0: none */
	const void *target;
	uint32_t lun;
	uint16_t rel_port_id, tpg_id;
	uint16_t dg;
	struct gw_io_counters *lun_c, *port_c, *dg_c;
};

/* One completed command, as the core describes it. */
struct gw_io_done {
	const void *target;             /* struct gw_target *, NULL: no LUN entry */
	uint32_t lun;
	uint16_t rel_port_id;           /* 0: no port entry */
	uint16_t tpg_id;
	uint16_t dg;                    /* 1 + the LU's ALUA device group index; 0: none */
	uint8_t opcode;
	uint8_t status;
	bool aborted;
	uint32_t bytes_read, bytes_written;
	uint64_t start_us;
	struct gw_ctr_cache *cache;     /* optional: the session's (above) */
};

enum gw_ctr_kind { GW_CTR_LUN = 0, GW_CTR_PORT, GW_CTR_DG };

struct gw_ctr_sample {
	enum gw_ctr_kind kind;
	const void *target;             /* LUN: struct gw_target * */
	uint32_t lun;                   /* LUN; DG: the device group index (gw_io_done.dg - 1) */
	uint16_t rel_port_id, tpg_id;   /* PORT */
	struct gw_io_counters c;
};

/* Monotonic microseconds for a command's start and end: the reactor round's (reactor_now_us). */
uint64_t gw_counters_now_us(void);
enum gw_io_class gw_io_classify(uint8_t opcode);
/* Account one completion into `sess` (may be NULL) and this reactor's table. */
void gw_counters_done(struct gw_io_counters *sess, const struct gw_io_done *d);
/* Add b into a. */
void gw_counters_add(struct gw_io_counters *a, const struct gw_io_counters *b);
/* Copy of the calling reactor's table (malloc'd array, *n entries); -ENOMEM. */
int gw_counters_snapshot(struct gw_ctr_sample **out, size_t *n);

GW_API_END

#endif
