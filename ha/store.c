/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster document made durable by a saver thread (store.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "common/log.h"

#define COMP "ha-store"

struct ha_store {
	struct reactor *r;
	char *dir;
	void (*done)(void *ctx, uint64_t seq);
	void *ctx;
	int (*save)(const char *text, size_t len, const char *dir);
	bool journal;                   /* LUN changes as journal lines (the real writer only) */
	pthread_t thread;
	struct reactor_bell bell;       /* rung by the thread: store_cb on the loop */
	uint64_t reported_seq;          /* loop only: the last done() */

	pthread_mutex_t mu;             /* guards everything below */
	pthread_cond_t cv;
	bool stop;
	char *text;                     /* queued, not taken yet (NULL: none) */
	size_t len;
	char *jrnl;                     /* journal lines queued after text (NULL: none) */
	size_t jlen;
	uint64_t last_gen;              /* of the last document queued (0: none) */
	unsigned int jcount;            /* journal lines queued since the last whole document */
	uint64_t appends;               /* journal writes (or tries) */
	uint64_t seq, gen;
	uint64_t done_seq;              /* the newest document dealt with */
	uint64_t saves;                 /* documents written (or tried) */
	uint64_t dropped;               /* replaced by a newer one before they were taken */
	int fail_rc;                    /* the last failure not yet logged (0: none) */
	uint64_t fail_gen;
	unsigned int failures;          /* since the last log */
};

/* Under s->mu: a save of seq finished (rc 0 or a failure to log). */
static void finished(struct ha_store *s, uint64_t seq, uint64_t gen, int rc)
{
	if (seq > s->done_seq)
		s->done_seq = seq;
	if (rc) {
		s->fail_rc = rc;
		s->fail_gen = gen;
		s->failures++;
	}
}

static void *saver(void *arg)
{
	struct ha_store *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		uint64_t seq, gen;
		char *text;
		size_t len;
		int rc;

		char *jrnl;
		size_t jlen;

		while (!s->text && !s->jrnl && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->text && !s->jrnl)
			break;          /* stopping, and nothing left to write */
		text = s->text;
		len = s->len;
		jrnl = s->jrnl;
		jlen = s->jlen;
		seq = s->seq;
		gen = s->gen;
		s->text = NULL;
		s->jrnl = NULL;
		s->jlen = 0;
		pthread_mutex_unlock(&s->mu);

		/* the whole document first (it removes the old journal), then the lines after it */
		rc = text ? s->save(text, len, s->dir) : 0;
		if (!rc && jrnl)
			rc = ha_doc_journal_append(jrnl, jlen, s->dir);
		free(text);
		free(jrnl);

		pthread_mutex_lock(&s->mu);
		if (text)
			s->saves++;
		if (jrnl)
			s->appends++;
		finished(s, seq, gen, rc);
		reactor_bell_ring(&s->bell);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* On the loop: report what the thread finished. */
static void store_cb(void *arg)
{
	struct ha_store *s = arg;
	uint64_t seq, gen;
	unsigned int failures;
	int rc;

	pthread_mutex_lock(&s->mu);
	seq = s->done_seq;
	rc = s->fail_rc;
	gen = s->fail_gen;
	failures = s->failures;
	s->fail_rc = 0;
	s->failures = 0;
	pthread_mutex_unlock(&s->mu);
	if (rc)
		GW_ERR(COMP, "cannot store generation %" PRIu64 " in %s: %s%s", gen, s->dir,
		       strerror(-rc), failures > 1 ? " (and earlier ones)" : "");
	if (seq > s->reported_seq) {
		s->reported_seq = seq;
		s->done(s->ctx, seq);
	}
}

void ha_store_queue(struct ha_store *s, const struct ha_doc *d, uint64_t seq)
{
	char *copy, *line = NULL;

	/* one LUN change after the document queued last: a journal line, not the whole text */
	if (s->journal && d->delta_target && s->last_gen && d->generation == s->last_gen + 1 &&
	    s->jcount < HA_JOURNAL_MAX)
		line = ha_doc_journal_line(d);
	s->last_gen = d->generation;
	if (line) {
		size_t n = strlen(line);
		char *j;

		pthread_mutex_lock(&s->mu);
		j = realloc(s->jrnl, s->jlen + n + 1);
		if (j) {
			memcpy(j + s->jlen, line, n + 1);
			s->jrnl = j;
			s->jlen += n;
			s->jcount++;
			s->seq = seq;
			s->gen = d->generation;
			pthread_cond_signal(&s->cv);
			pthread_mutex_unlock(&s->mu);
			free(line);
			return;
		}
		pthread_mutex_unlock(&s->mu);
		free(line);     /* no memory: the whole document, below */
	}
	copy = malloc(d->text_len + 1);
	if (copy) {
		memcpy(copy, d->text, d->text_len);
		copy[d->text_len] = '\0';
	}
	pthread_mutex_lock(&s->mu);
	if (!copy) {
		finished(s, seq, d->generation, -ENOMEM);
		reactor_bell_ring(&s->bell);
	} else {
		if (s->text || s->jrnl) {
			/* not taken yet: the newer document covers it */
			free(s->text);
			free(s->jrnl);
			s->jrnl = NULL;
			s->jlen = 0;
			s->dropped++;
		}
		s->jcount = 0;
		s->text = copy;
		s->len = d->text_len;
		s->seq = seq;
		s->gen = d->generation;
		pthread_cond_signal(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

uint64_t ha_store_saves(struct ha_store *s)
{
	uint64_t n;

	pthread_mutex_lock(&s->mu);
	n = s->saves;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* What ha_store_start made, the thread ended (or never started). */
static void store_free(struct ha_store *s)
{
	reactor_bell_close(&s->bell);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s->dir);
	free(s->text);
	free(s->jrnl);
	free(s);
}

int ha_store_start(struct reactor *r, const struct ha_store_params *p, struct ha_store **out)
{
	struct ha_store *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->r = r;
	s->done = p->done;
	s->ctx = p->ctx;
	s->save = p->save ? p->save : ha_doc_save_text;
	s->journal = !p->save || p->journal;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	/* first: closed again when it fails, so store_free can take it whatever comes next */
	rc = reactor_bell_open(r, &s->bell, store_cb, s);
	if (rc)
		goto err_free;
	s->dir = strdup(p->dir);
	if (!s->dir) {
		rc = -ENOMEM;
		goto err_free;
	}
	rc = -pthread_create(&s->thread, NULL, saver, s);
	if (rc)
		goto err_free;
	*out = s;
	return 0;

err_free:
	store_free(s);
	return rc;
}

void ha_store_stop(struct ha_store *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	/* the thread writes what is queued before it ends */
	pthread_join(s->thread, NULL);
	if (s->fail_rc)
		GW_ERR(COMP, "cannot store generation %" PRIu64 " in %s: %s", s->fail_gen, s->dir,
		       strerror(-s->fail_rc));
	if (s->dropped || s->appends)
		GW_DEBUG(COMP, "%" PRIu64 " document(s) written, %" PRIu64 " journal append(s), %"
			 PRIu64 " replaced by a newer one before they were", s->saves, s->appends,
			 s->dropped);
	store_free(s);
}
