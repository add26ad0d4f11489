/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster document made durable off the agent's loop. An fsync can take
 * 100 ms and more on a busy disk; on the loop it would delay heartbeats and
 * lease renewals. So the loop hands a copy of each new document's text to
 * one saver thread (ha_store_queue) and goes on; the thread writes it
 * (ha_doc_save_text: temporary file, fsync, rename, fsync of the directory)
 * and tells the loop through an eventfd, which calls done() there.
 *
 * A document made by one LUN change right after the one queued before it
 * (ha_doc_with_lun) is written as a journal line instead (appended to
 * HA_JOURNAL_FILE, then fdatasync; ha_doc_journal_line): a few hundred bytes
 * instead of the whole document and a rename. After HA_JOURNAL_MAX lines,
 * or any other document, the whole document is written again (which removes
 * the journal). Lines waiting together are appended in one write.
 *
 * Every queued document has a sequence number (increasing). Only the newest
 * one waiting is written: a queued text that a newer one replaces before the
 * thread took it is dropped, the newer save covers it. done(seq) means every
 * document up to seq has been dealt with; it comes once per wake-up, for the
 * newest save finished, so one done() may cover several queued documents.
 * A save that failed still completes its sequence number (the loop logs the
 * error, as it would have for a save on the loop): the node goes on with the
 * document it holds in memory, and the next generation is tried again.
 *
 * Threads: ha_store_start/queue/stop on the loop's thread only; done() runs
 * there too. The saver thread touches nothing but its copies and the file.
 */
#ifndef ISERGW_HA_STORE_H
#define ISERGW_HA_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "common/reactor.h"

struct ha_store;

struct ha_store_params {
	const char *dir;                /* the state directory (copied) */
	/* on the loop: every document up to seq was written (or failed: logged) */
	void (*done)(void *ctx, uint64_t seq);
	void *ctx;
	/* the writer, ha_doc_save_text when NULL (unit tests put their own) */
	int (*save)(const char *text, size_t len, const char *dir);
	/* with a writer of their own: LUN changes as journal lines all the same */
	bool journal;
};

/* Journal lines after a whole document at most: then the whole document again. */
#define HA_JOURNAL_MAX 256u

int ha_store_start(struct reactor *r, const struct ha_store_params *p, struct ha_store **out);
/*
 * Queue d (its text is copied) as document seq, which must be above every
 * sequence number queued before. Never blocks on the disk. Without memory
 * for the copy it counts as a save that failed (logged, done() follows).
 */
void ha_store_queue(struct ha_store *s, const struct ha_doc *d, uint64_t seq);
/* Saves done so far (the thread's count; for tests and logs). */
uint64_t ha_store_saves(struct ha_store *s);
/*
 * Write what is still queued, end the thread and free everything. No done()
 * after this. On the loop's thread, with the loop stopped or running.
 */
void ha_store_stop(struct ha_store *s);

#endif
