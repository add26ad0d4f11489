/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connections in the login phase, counted per source address (an IPv6
 * address by its /64, what one host is given): a host that opens connections
 * and never logs in holds max_logins_per_address of them at most, not every
 * descriptor the process has (LimitNOFILE), which would keep every other host
 * out, multipath paths coming back after a failover among them. Connections
 * in full feature phase are not counted: a host may have as many sessions as
 * it likes.
 *
 * One table for the gateway, under its own mutex: every reactor creates
 * connections. Taken when a connection is created, given back when its login
 * completes or it closes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/iscsi.h"
#include "common/log.h"

#define COMP "conn"
#define REFUSED_LINES     10u      /* lines about refused connections a window */
#define REFUSED_WINDOW_MS 10000u

struct gw_login_host {
	struct gw_login_host *next;
	uint8_t key[GW_LOGIN_KEY_LEN];
	uint32_t n;                     /* its connections in the login phase */
};

void gw_login_slots_init(struct gw_login_slots *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->ready = true;
}

void gw_login_slots_fini(struct gw_login_slots *s)
{
	if (!s->ready)
		return;
	for (size_t i = 0; i < GW_LOGIN_BUCKETS; i++) {
		while (s->buckets[i]) {
			struct gw_login_host *h = s->buckets[i];

			s->buckets[i] = h->next;
			free(h);
		}
	}
	pthread_mutex_destroy(&s->lock);
	s->ready = false;
}

/*
 * The key of peer as gw_fmt_sockaddr writes it ("ADDR:PORT", "[ADDR6]:PORT"):
 * IPv4 as an IPv4-mapped IPv6 address, IPv6 its first 64 bits (an IPv4-mapped
 * one whole). false: not an address (not counted).
 */
bool gw_login_key(const char *peer, uint8_t key[GW_LOGIN_KEY_LEN])
{
	char host[INET6_ADDRSTRLEN];
	const char *end;
	size_t len;

	memset(key, 0, GW_LOGIN_KEY_LEN);
	if (peer[0] == '[') {
		struct in6_addr a6;

		end = strchr(peer, ']');
		if (!end || (len = (size_t)(end - peer - 1)) >= sizeof(host))
			return false;
		memcpy(host, peer + 1, len);
		host[len] = '\0';
		if (inet_pton(AF_INET6, host, &a6) != 1)
			return false;
		memcpy(key, &a6, IN6_IS_ADDR_V4MAPPED(&a6) ? 16 : 8);
		return true;
	} else {
		struct in_addr a4;

		end = strrchr(peer, ':');
		len = end ? (size_t)(end - peer) : strlen(peer);
		if (len >= sizeof(host))
			return false;
		memcpy(host, peer, len);
		host[len] = '\0';
		if (inet_pton(AF_INET, host, &a4) != 1)
			return false;
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &a4, 4);
		return true;
	}
}

static size_t key_bucket(const uint8_t key[GW_LOGIN_KEY_LEN])
{
	uint32_t h = 2166136261u;       /* FNV-1a */

	for (size_t i = 0; i < GW_LOGIN_KEY_LEN; i++)
		h = (h ^ key[i]) * 16777619u;
	return h % GW_LOGIN_BUCKETS;
}

static struct gw_login_host **host_find(struct gw_login_slots *s,
					const uint8_t key[GW_LOGIN_KEY_LEN])
{
	struct gw_login_host **pp = &s->buckets[key_bucket(key)];

	while (*pp && memcmp((*pp)->key, key, GW_LOGIN_KEY_LEN))
		pp = &(*pp)->next;
	return pp;
}

int gw_login_slot_take(struct gw_login_slots *s, const char *peer, uint32_t max,
		       uint8_t key[GW_LOGIN_KEY_LEN])
{
	struct gw_login_host **pp, *h;
	uint64_t quiet = 0;
	bool say = false;
	uint32_t n = 0;
	int rc = 1;

	if (!s->ready || !max || !gw_login_key(peer, key))
		return 0;
	pthread_mutex_lock(&s->lock);
	pp = host_find(s, key);
	h = *pp;
	if (h && h->n >= max) {
		s->refused++;
		quiet = gw_log_window_roll(&s->log, gw_now_ms(), REFUSED_WINDOW_MS);
		say = gw_log_window_take(&s->log, REFUSED_LINES);
		n = h->n;
		rc = -EBUSY;
	} else if (h) {
		h->n++;
	} else if ((h = calloc(1, sizeof(*h)))) {
		memcpy(h->key, key, GW_LOGIN_KEY_LEN);
		h->n = 1;
		*pp = h;
	} else {
		rc = 0;                 /* without memory: not counted, not refused */
	}
	pthread_mutex_unlock(&s->lock);
	if (quiet)
		GW_NOTICE(COMP, "%" PRIu64 " more connections refused in %u s: too many logging "
			  "in from one address (max_logins_per_address)", quiet,
			  REFUSED_WINDOW_MS / 1000u);
	if (say)
		GW_WARN(COMP, "%s: connection refused: %u connections from this address are "
			"logging in already (max_logins_per_address %u)", peer, n, max);
	return rc;
}

void gw_login_slot_put(struct gw_login_slots *s, const uint8_t key[GW_LOGIN_KEY_LEN])
{
	struct gw_login_host **pp, *h;

	pthread_mutex_lock(&s->lock);
	pp = host_find(s, key);
	h = *pp;
	if (h && --h->n == 0) {
		*pp = h->next;
		free(h);
	}
	pthread_mutex_unlock(&s->lock);
}

uint64_t gw_login_slots_refused(struct gw_login_slots *s)
{
	uint64_t n;

	if (!s->ready)
		return 0;
	pthread_mutex_lock(&s->lock);
	n = s->refused;
	pthread_mutex_unlock(&s->lock);
	return n;
}
