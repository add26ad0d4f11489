/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Portals: listening, or waiting for their address.
 *
 * An address may not be on this node when the daemon starts (an interface,
 * an RDMA device or a floating address that comes later), may be removed
 * (pacemaker moved the floating address to another node) and may come back.
 * A portal whose listen fails for such a reason waits: it is logged once,
 * retried with a backoff (GW_PORTAL_RETRY_MIN_MS doubling to
 * GW_PORTAL_RETRY_MAX_MS: an RDMA device appearing on an address that exists
 * sends no address event) and at once when rtnetlink reports an address
 * added. When its address is removed, the portal stops listening, drops the
 * sessions that came through it (their peer now reaches whichever node holds
 * the address) and waits again (an iSER listener stays bound meanwhile:
 * keep_listener_without_address in dm/iser.c says why). The portal keeps
 * its relative port id, TPGT and target port group throughout: it is the
 * same target port wherever it is served.
 *
 * A port in use (EADDRINUSE) is not an address that has not arrived: another
 * program holds it. At start it fails the start (the daemon exits with
 * GW_EXIT_CONFIG); a portal added by a reload (SIGHUP, ApplyConfig: a managed
 * node must not fail) waits, logged at err and reported degraded in the
 * service manager's STATUS, as `waiting` with its error in GetStatus.
 *
 * Threads: once the reactors run, every listen and unlisten of a portal
 * happens on reactor 0 (retry timer, rtnetlink socket, close messages), so
 * p->dm_priv is only touched there; before that (gw_start) on the caller's
 * thread. Portal objects are freed only at exit (a reload retires them), so
 * a message or timer naming one never outlives it.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/iscsi.h"
#include "common/ifaddr.h"
#include "common/log.h"
#include "common/notify.h"

#define COMP "portal"
#define PORTAL_LOG_EVERY 60u    /* while waiting, one info line per this many tries */

bool gw_portal_error_waits(int err)
{
	switch (err) {
	case -EADDRNOTAVAIL:    /* the address is not on this node (yet) */
	case -EADDRINUSE:       /* another program holds the port (a reload's portal; at start: fails) */
	case -ENODEV:           /* iSER: no RDMA device (yet), or rdma_ucm not loaded */
	case -ENOENT:
	case -ENXIO:
	case -ENETDOWN:
	case -ENETUNREACH:
	case -EAFNOSUPPORT:     /* IPv6 switched off on this node for now */
		return true;
	default:
		return false;
	}
}

uint32_t gw_portal_backoff_next(uint32_t ms)
{
	if (ms < GW_PORTAL_RETRY_MIN_MS)
		return GW_PORTAL_RETRY_MIN_MS;
	return ms >= GW_PORTAL_RETRY_MAX_MS / 2 ? GW_PORTAL_RETRY_MAX_MS : ms * 2;
}

const char *gw_portal_state_name(int state)
{
	return state == GW_PORTAL_LISTENING ? "listening" : "waiting";
}

size_t gw_portals_port_in_use(struct gw *gw)
{
	size_t n = 0;

	pthread_mutex_lock(&gw->sess_lock);
	for (size_t i = 0; i < gw->nportals; i++)
		n += atomic_load(&gw->portals[i]->state) == GW_PORTAL_WAITING &&
		     atomic_load(&gw->portals[i]->last_error) == -EADDRINUSE;
	pthread_mutex_unlock(&gw->sess_lock);
	return n;
}

static const char *portal_scheme(const struct gw_portal *p)
{
	return gw_portal_cfg(p)->transport == GW_TRANSPORT_ISER ? "iser" : "tcp";
}

static bool on_reactor0(const struct gw *gw)
{
	return !atomic_load(&gw->running) || reactor_self() == gw->reactors[0];
}

static void portal_try(struct gw_portal *p);

/* The first failed attempt of a wait, logged once. */
static void portal_log_wait(const struct gw_portal *p, int rc)
{
	const struct gw_portal_cfg *pc = gw_portal_cfg(p);

	if (rc == -EADDRINUSE) {
		GW_ERR(COMP, "portal %s://%s:%u (relative port %u, group %u): cannot listen: address "
		       "in use (another program holds the port); retried every %u ms at most",
		       portal_scheme(p), pc->addr, pc->port, pc->rel_port_id, pc->tpg_id,
		       GW_PORTAL_RETRY_MAX_MS);
		gw_notify_status("degraded: portal %s://%s:%u not listening: address in use",
				 portal_scheme(p), pc->addr, pc->port);
		return;
	}
	GW_WARN(COMP, "portal %s://%s:%u (relative port %u, group %u): cannot listen yet: %s; "
		"waiting for its address (retried every %u ms at most, and at once when an "
		"address is added)", portal_scheme(p), pc->addr, pc->port, pc->rel_port_id,
		pc->tpg_id, strerror(-rc), GW_PORTAL_RETRY_MAX_MS);
}

static void portal_retry_timer(void *arg)
{
	portal_try(arg);
}

static void portal_arm(struct gw_portal *p)
{
	p->retry_ms = gw_portal_backoff_next(p->retry_ms);
	reactor_timer_arm(p->gw->reactors[0], &p->retry, p->retry_ms);
}

/* Reactor 0 (or the starting thread): listen unless listening or closed. */
static void portal_try(struct gw_portal *p)
{
	const struct gw_portal_cfg *pc = gw_portal_cfg(p);     /* a reload may replace it */
	int rc;

	if (atomic_load(&p->closed) || atomic_load(&p->gw->shutting_down) || p->dm_priv)
		return;
	rc = p->dm->listen(p);
	if (rc == 0) {
		if (p->tries && atomic_load(&p->last_error) == -EADDRINUSE) {
			GW_NOTICE(COMP, "portal %s://%s:%u (relative port %u, group %u): its port is "
				  "free: serving after %u attempt(s)", portal_scheme(p), pc->addr,
				  pc->port, pc->rel_port_id, pc->tpg_id, p->tries);
			gw_notify_status("portal %s://%s:%u listening (its port was in use)",
					 portal_scheme(p), pc->addr, pc->port);
		} else if (p->tries) {
			GW_NOTICE(COMP, "portal %s://%s:%u (relative port %u, group %u): its address is "
				  "here: serving after %u attempt(s)", portal_scheme(p), pc->addr,
				  pc->port, pc->rel_port_id, pc->tpg_id, p->tries);
		}
		p->tries = 0;
		p->retry_ms = 0;
		atomic_store(&p->last_error, 0);
		atomic_store(&p->state, GW_PORTAL_LISTENING);
		if (atomic_load(&p->gw->running))
			reactor_timer_cancel(p->gw->reactors[0], &p->retry);
		return;
	}
	atomic_store(&p->last_error, rc);
	atomic_store(&p->state, GW_PORTAL_WAITING);
	if (p->tries++ == 0)
		portal_log_wait(p, rc);
	else if (p->tries % PORTAL_LOG_EVERY == 0)
		GW_INFO(COMP, "portal %s://%s:%u: still waiting (%u attempts): %s", portal_scheme(p),
			pc->addr, pc->port, p->tries, strerror(-rc));
	if (atomic_load(&p->gw->running))
		portal_arm(p);
}

static void portal_try_msg(void *arg)
{
	struct gw_portal *p = arg;

	/* a new attempt after a wait: from the shortest step again */
	p->retry_ms = 0;
	portal_try(p);
}

static int portal_resolve(struct gw_portal *p)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(p->cfg->addr, NULL, &hints, &res);

	if (rc) {
		GW_ERR(COMP, "portal %s://%s:%u: cannot resolve address: %s", portal_scheme(p),
		       p->cfg->addr, p->cfg->port, gai_strerror(rc));
		return -EINVAL;
	}
	if (res->ai_addrlen <= sizeof(p->addr))
		memcpy(&p->addr, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	p->any = gw_sockaddr_is_any(&p->addr);
	return 0;
}

int gw_portal_open(struct gw *gw, const struct gw_portal_cfg *pc, size_t index,
		   struct gw_portal **out)
{
	struct gw_portal *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->gw = gw;
	p->cfg = pc;
	p->index = index;
	atomic_init(&p->state, GW_PORTAL_WAITING);
	atomic_init(&p->last_error, 0);
	atomic_init(&p->closed, false);
	reactor_timer_init(&p->retry, portal_retry_timer, p);
	p->dm = gw_dm_for_transport(pc->transport);
	if (!p->dm) {
		GW_ERR(COMP, "portal %s:%u: transport not available in this build", pc->addr, pc->port);
		free(p);
		return -EPROTONOSUPPORT;
	}
	rc = portal_resolve(p);
	if (rc) {
		free(p);
		return rc;
	}
	/*
	 * The first attempt runs here, so that a start or a reload logs at once
	 * whether the portal serves; a reload's new portal is not known to
	 * reactor 0 before the caller publishes it, so nothing races with this.
	 */
	rc = p->dm->listen(p);
	if (rc == 0) {
		atomic_store(&p->state, GW_PORTAL_LISTENING);
	} else if (rc == -EADDRINUSE && !atomic_load(&gw->running)) {
		/* at start (the reactors do not run yet): the start fails */
		GW_ERR(COMP, "portal %s://%s:%u (relative port %u, group %u): cannot listen: address "
		       "in use (another program holds the port; ss -ltnp 'sport = :%u' names it): "
		       "stop it or give the portal another port", portal_scheme(p), pc->addr,
		       pc->port, pc->rel_port_id, pc->tpg_id, pc->port);
		free(p);
		return rc;
	} else if (gw_portal_error_waits(rc)) {
		atomic_store(&p->last_error, rc);
		p->tries = 1;
		portal_log_wait(p, rc);
		/* the backoff timer is reactor 0's: arm it there (queued until it runs) */
		if (reactor_send_msg(gw->reactors[0], portal_try_msg, p))
			GW_ERR(COMP, "portal %s:%u: out of memory: it will be retried only when an "
			       "address is added", pc->addr, pc->port);
	} else {
		GW_ERR(COMP, "portal %s://%s:%u: cannot listen: %s", portal_scheme(p), pc->addr,
		       pc->port, strerror(-rc));
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

static void portal_close_now(struct gw_portal *p)
{
	atomic_store(&p->closed, true);
	if (atomic_load(&p->gw->running))
		reactor_timer_cancel(p->gw->reactors[0], &p->retry);
	p->dm->unlisten(p);
	atomic_store(&p->state, GW_PORTAL_WAITING);
}

static void portal_close_msg(void *arg)
{
	portal_close_now(arg);
}

void gw_portal_close(struct gw_portal *p)
{
	if (on_reactor0(p->gw)) {
		portal_close_now(p);
		return;
	}
	if (reactor_send_msg(p->gw->reactors[0], portal_close_msg, p))
		GW_ERR(COMP, "portal %s:%u: out of memory: left listening", p->cfg->addr, p->cfg->port);
}

void gw_portal_set_listening(struct gw_portal *p, bool listening, int err)
{
	atomic_store(&p->last_error, listening ? 0 : err);
	atomic_store(&p->state, listening ? GW_PORTAL_LISTENING : GW_PORTAL_WAITING);
}

/* ---------------- address events ---------------- */

static void drop_on_portal(struct iscsi_conn *c, void *arg)
{
	if (c->portal == arg)
		iscsi_conn_drop(c, "its portal's address was removed from this node");
}

/* Reactor 0: the address of a listening portal went away. */
static void portal_lost_address(struct gw_portal *p)
{
	const struct gw_portal_cfg *pc = gw_portal_cfg(p);

	if (!p->dm_priv || atomic_load(&p->closed) ||
	    atomic_load(&p->state) != GW_PORTAL_LISTENING)
		return;
	GW_NOTICE(COMP, "portal %s://%s:%u (relative port %u, group %u): its address was removed: "
		  "not listening, dropping its sessions, waiting for the address", portal_scheme(p),
		  pc->addr, pc->port, pc->rel_port_id, pc->tpg_id);
	atomic_store(&p->last_error, -EADDRNOTAVAIL);
	atomic_store(&p->state, GW_PORTAL_WAITING);
	if (!p->dm->keep_listener_without_address) {
		p->dm->unlisten(p);
		p->tries = 1;
		p->retry_ms = 0;
		portal_arm(p);
	}
	iscsi_sessions_foreach(p->gw, drop_on_portal, p);
}

/* Reactor 0: the address of a portal that kept its listener is back. */
static void portal_got_address(struct gw_portal *p)
{
	const struct gw_portal_cfg *pc = gw_portal_cfg(p);

	if (!p->dm_priv || atomic_load(&p->closed) ||
	    atomic_load(&p->state) == GW_PORTAL_LISTENING)
		return;
	atomic_store(&p->last_error, 0);
	atomic_store(&p->state, GW_PORTAL_LISTENING);
	GW_NOTICE(COMP, "portal %s://%s:%u (relative port %u, group %u): its address is back: "
		  "serving", portal_scheme(p), pc->addr, pc->port, pc->rel_port_id,
		  pc->tpg_id);
}

struct ifaddr_batch {
	struct gw_portal **portals;
	size_t n;
	bool added;             /* some address was added: every waiting portal tries */
	bool *lost;             /* per portal: its address was removed */
	bool *back;             /* per portal: its address was added */
};

static void ifaddr_event(void *arg, enum gw_ifaddr_event ev, const struct sockaddr_storage *addr,
			 uint32_t ifindex)
{
	struct ifaddr_batch *b = arg;

	(void)ifindex;
	if (ev == GW_IFADDR_NEW)
		b->added = true;
	for (size_t i = 0; i < b->n; i++) {
		if (b->portals[i]->any || !gw_sockaddr_same_ip(&b->portals[i]->addr, addr))
			continue;
		/* the last event of the batch about an address wins */
		b->lost[i] = ev == GW_IFADDR_DEL;
		b->back[i] = ev == GW_IFADDR_NEW;
	}
}

/* Every portal of the moment (they are never freed before exit). */
static int portals_snapshot(struct gw *gw, struct ifaddr_batch *b)
{
	pthread_mutex_lock(&gw->sess_lock);
	b->n = gw->nportals;
	b->portals = calloc(b->n ? b->n : 1, sizeof(*b->portals));
	b->lost = calloc(b->n ? b->n : 1, sizeof(*b->lost));
	b->back = calloc(b->n ? b->n : 1, sizeof(*b->back));
	if (b->portals && b->lost && b->back)
		memcpy(b->portals, gw->portals, b->n * sizeof(*b->portals));
	pthread_mutex_unlock(&gw->sess_lock);
	if (!b->portals || !b->lost || !b->back) {
		free(b->portals);
		free(b->lost);
		free(b->back);
		return -ENOMEM;
	}
	return 0;
}

static void ifaddr_readable(void *arg, uint32_t events)
{
	struct gw *gw = arg;
	struct ifaddr_batch b = { 0 };
	bool overrun = false;
	char buf[8192];

	(void)events;
	if (portals_snapshot(gw, &b))
		return;
	for (;;) {
		ssize_t n = recv(gw->ifaddr_fd, buf, sizeof(buf), 0);
		int rc;

		if (n < 0) {
			if (errno == ENOBUFS)
				overrun = true;
			else if (errno == EINTR)
				continue;
			break;
		}
		rc = gw_ifaddr_parse(buf, (size_t)n, ifaddr_event, &b);
		if (rc == -ENOBUFS)
			overrun = true;
		else if (rc < 0)
			GW_WARN(COMP, "ignoring a malformed rtnetlink message (%zd bytes)", n);
	}
	if (overrun) {
		/* events were lost: every waiting portal tries; a removal is caught by the next one */
		GW_WARN(COMP, "rtnetlink address events were lost: retrying every waiting portal");
		b.added = true;
	}
	for (size_t i = 0; i < b.n; i++) {
		struct gw_portal *p = b.portals[i];

		if (b.lost[i])
			portal_lost_address(p);
		else if (b.back[i] && p->dm_priv)
			portal_got_address(p);
		else if (b.added && !p->dm_priv)
			portal_try_msg(p);
	}
	free(b.portals);
	free(b.lost);
	free(b.back);
}

void gw_portal_watch_start(struct gw *gw)
{
	int fd = gw_ifaddr_open();

	gw->ifaddr_fd = -1;
	if (fd < 0) {
		GW_WARN(COMP, "no rtnetlink address events (%s): waiting portals are retried on "
			"their timer only", strerror(-fd));
		return;
	}
	if (reactor_add_fd(gw->reactors[0], &gw->ifaddr_rfd, fd, EPOLLIN, ifaddr_readable, gw)) {
		close(fd);
		return;
	}
	gw->ifaddr_fd = fd;
}

void gw_portal_watch_stop(struct gw *gw)
{
	/* after the reactors stopped */
	if (gw->ifaddr_fd < 0)
		return;
	reactor_del_fd(gw->reactors[0], &gw->ifaddr_rfd);
	close(gw->ifaddr_fd);
	gw->ifaddr_fd = -1;
}
