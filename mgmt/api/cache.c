/* SPDX-License-Identifier: Apache-2.0 */
/* The cache of rendered configuration reads (cache.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"

void api_cache_init(struct api_cache *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
}

static void entry_drop(struct api_cache *c, struct api_cache_entry *x)
{
	if (!x->key)
		return;
	c->bytes -= x->len;
	free(x->key);
	free(x->body);
	memset(x, 0, sizeof(*x));
}

static void drop_all(struct api_cache *c)
{
	for (size_t i = 0; i < API_CACHE_ENTRIES; i++)
		entry_drop(c, &c->e[i]);
}

void api_cache_destroy(struct api_cache *c)
{
	drop_all(c);
	pthread_mutex_destroy(&c->lock);
}

void api_cache_clear(struct api_cache *c)
{
	pthread_mutex_lock(&c->lock);
	drop_all(c);
	pthread_mutex_unlock(&c->lock);
}

static bool same_doc(const struct api_cache *c, uint64_t gen, const char *digest)
{
	return gen == c->gen && !strcmp(digest, c->digest);
}

/* under lock: the agent names another document; every entry is stale */
static void see_doc(struct api_cache *c, uint64_t gen, const char *digest)
{
	if (same_doc(c, gen, digest))
		return;
	if (c->stamp)
		c->invalidations++;
	drop_all(c);
	c->stamp = 0;
	c->gen = gen;
	snprintf(c->digest, sizeof(c->digest), "%s", digest);
}

static struct api_cache_entry *find(struct api_cache *c, const char *key)
{
	for (size_t i = 0; i < API_CACHE_ENTRIES; i++)
		if (c->e[i].key && !strcmp(c->e[i].key, key))
			return &c->e[i];
	return NULL;
}

bool api_cache_get(struct api_cache *c, uint64_t gen, const char *digest, const char *key,
		   char **body, size_t *len)
{
	struct api_cache_entry *x;
	char *copy = NULL;

	*body = NULL;
	if (!gen || strlen(digest) >= API_CACHE_DIGEST_MAX)
		return false;
	pthread_mutex_lock(&c->lock);
	see_doc(c, gen, digest);
	x = find(c, key);
	if (x && (copy = malloc(x->len + 1))) {
		memcpy(copy, x->body, x->len);
		copy[x->len] = '\0';
		*len = x->len;
	}
	if (copy)
		c->hits++;
	else
		c->misses++;
	pthread_mutex_unlock(&c->lock);
	*body = copy;
	return copy != NULL;
}

void api_cache_put(struct api_cache *c, uint64_t gen, const char *digest, const char *key,
		   const char *body, size_t len)
{
	struct api_cache_entry *x, *old;
	char *k, *b;

	if (!gen || len > API_CACHE_BYTES || strlen(key) >= API_CACHE_KEY_MAX)
		return;
	k = strdup(key);
	b = malloc(len + 1);
	if (!k || !b)
		goto err_free;
	memcpy(b, body, len);
	b[len] = '\0';
	pthread_mutex_lock(&c->lock);
	if (!same_doc(c, gen, digest)) {
		pthread_mutex_unlock(&c->lock);
		goto err_free; /* rendered from a document no longer the agent's */
	}
	x = find(c, key);
	if (x)
		entry_drop(c, x);
	/* room: a free slot within the byte budget, the oldest entries going first */
	for (;;) {
		x = NULL;
		old = NULL;
		for (size_t i = 0; i < API_CACHE_ENTRIES; i++) {
			if (!c->e[i].key)
				x = x ? x : &c->e[i];
			else if (!old || c->e[i].stamp < old->stamp)
				old = &c->e[i];
		}
		if (x && c->bytes + len <= API_CACHE_BYTES)
			break;
		entry_drop(c, old);
	}
	x->key = k;
	x->body = b;
	x->len = len;
	x->stamp = ++c->stamp;
	c->bytes += len;
	pthread_mutex_unlock(&c->lock);
	return;

err_free:
	free(k);
	free(b);
}

/* ------------------------------------------------------------ /metrics */

void api_scrape_init(struct api_scrape *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cv, NULL);
}

void api_scrape_destroy(struct api_scrape *s)
{
	free(s->body);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->lock);
}

bool api_scrape_get(struct api_scrape *s, uint64_t now_ms, uint64_t max_age_ms, char **body,
		    size_t *len)
{
	bool hit = false;

	if (!max_age_ms)
		return false;
	pthread_mutex_lock(&s->lock);
	while (s->busy)
		pthread_cond_wait(&s->cv, &s->lock);
	if (s->render_ms * API_SCRAPE_COST > max_age_ms)
		max_age_ms = s->render_ms * API_SCRAPE_COST;
	if (s->body && now_ms >= s->at_ms && now_ms - s->at_ms < max_age_ms) {
		*body = malloc(s->len + 1);
		if (*body) {
			memcpy(*body, s->body, s->len);
			(*body)[s->len] = '\0';
			*len = s->len;
			s->hits++;
			hit = true;
		}
	}
	if (!hit)
		s->busy = true;         /* this caller renders; the others wait for it */
	pthread_mutex_unlock(&s->lock);
	return hit;
}

void api_scrape_put(struct api_scrape *s, uint64_t now_ms, uint64_t max_age_ms, const char *body,
		    size_t len, uint64_t render_ms)
{
	char *copy = NULL;

	if (!max_age_ms)
		return;
	if (body) {
		copy = malloc(len + 1);
		if (copy)
			memcpy(copy, body, len);
	}
	pthread_mutex_lock(&s->lock);
	if (copy) {
		free(s->body);
		s->body = copy;
		s->len = len;
		s->at_ms = now_ms;
		s->render_ms = render_ms;
		s->renders++;
	}
	s->busy = false;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->lock);
}
