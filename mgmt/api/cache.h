/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-api's cache of rendered configuration reads (docs/api.md, "The
 * cache of reads"): the 200 answers of GET /api/v1/targets, .../luns,
 * /api/v1/config, ... keyed by the route and the cluster document they were
 * rendered from, named by its generation and digest (GetClusterStatus). A
 * document never changes, so an answer rendered from it is the answer for
 * as long as the agent names that document; every entry is dropped as soon
 * as another one is named (a newer generation, or a cluster made anew whose
 * generations start again: the digest differs). Only rendered answers are
 * kept, never the configuration read from the agent: what the cache holds
 * went through rest_redact (CHAP secrets and the passwords of iscsi://
 * URLs removed) exactly as an answer does.
 *
 * Thread-safe (one mutex); in practice used by the HA client's thread only.
 */
#ifndef ISERGW_API_CACHE_H
#define ISERGW_API_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define API_CACHE_ENTRIES 64u                   /* answers kept at most */
#define API_CACHE_BYTES (64u * 1024u * 1024u)   /* their bodies' bytes at most */
#define API_CACHE_KEY_MAX 1024u
#define API_CACHE_DIGEST_MAX 128u               /* the document's digest, hex */

struct api_cache_entry {
	char *key;                      /* NULL: a free slot */
	char *body;
	size_t len;
	uint64_t stamp;                 /* insertion order, for eviction */
};

struct api_cache {
	pthread_mutex_t lock;
	uint64_t gen;                   /* the document of every entry (0: none yet) */
	char digest[API_CACHE_DIGEST_MAX];
	uint64_t stamp;
	size_t bytes;
	struct api_cache_entry e[API_CACHE_ENTRIES];
	/* counters, for tests and logs */
	uint64_t hits, misses, invalidations;
};

void api_cache_init(struct api_cache *c);
void api_cache_destroy(struct api_cache *c);
/*
 * The answer kept for key from the document the agent names now (gen,
 * digest): true with a malloc'd copy in *body (len bytes, NUL-terminated
 * beyond them). Another document than the cache's drops every entry and
 * becomes the cache's (it is then a miss).
 */
bool api_cache_get(struct api_cache *c, uint64_t gen, const char *digest, const char *key,
		   char **body, size_t *len);
/*
 * Keep a copy of body (len bytes) for key, rendered from document (gen,
 * digest). Kept only if that is the cache's document (the one the last get
 * named: a render overtaken meanwhile is not kept), gen is not 0, and it is
 * within the bounds; when full, the oldest entry goes.
 */
void api_cache_put(struct api_cache *c, uint64_t gen, const char *digest, const char *key,
		   const char *body, size_t len);
/* Drop every entry (the generation seen stays). */
void api_cache_clear(struct api_cache *c);

/*
 * The last /metrics scrape (docs/metrics.md, "Scrapes close together"):
 * rendering one asks isergwd for every LU's counters and the agent for its
 * status, so scrapes within max_age_ms of the last render get its text, and
 * scrapes that arrive while one renders wait for it (one render at a time)
 * instead of each doing the work beside the data path.
 */
struct api_scrape {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	char *body;                     /* the last render (NULL: none) */
	size_t len;
	uint64_t at_ms;                 /* monotonic, when it was rendered */
	uint64_t render_ms;             /* how long that took */
	bool busy;                      /* a thread renders */
	uint64_t hits, renders;
};

void api_scrape_init(struct api_scrape *s);
void api_scrape_destroy(struct api_scrape *s);
/*
 * true: *body is a malloc'd copy of the render made within max_age_ms of
 * now, or within API_SCRAPE_COST times as long as that render took if that
 * is longer (rendering takes at most 1/API_SCRAPE_COST of the time however
 * large the configuration), waiting for one in progress first. false: the
 * caller renders and then calls api_scrape_put (NULL body when it failed).
 * max_age_ms 0: always false, and renders run side by side.
 */
#define API_SCRAPE_COST 10u
bool api_scrape_get(struct api_scrape *s, uint64_t now_ms, uint64_t max_age_ms, char **body,
		    size_t *len);
void api_scrape_put(struct api_scrape *s, uint64_t now_ms, uint64_t max_age_ms, const char *body,
		    size_t len, uint64_t render_ms);

#endif
