/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's corosync side: cmap (who we are, the node names, the cluster
 * name), votequorum (quorum, with the ring it is for), CPG (the group, in
 * agreed order, with the totem configuration callback of CPG_MODEL_V1). Each
 * library's fd sits in the reactor and is dispatched when readable. Every
 * cs_error_t becomes a negative errno here and nowhere else.
 *
 * If corosync goes away the agent leaves the group in its state machine
 * (which stops renewing isergwd's lease and steps it down) and tries to
 * connect again every second.
 */
#include <corosync/cmap.h>
#include <corosync/corotypes.h>
#include <corosync/cpg.h>
#include <corosync/votequorum.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent.h"
#include "common/log.h"
#include "common/notify.h"

#define COMP "corosync"
#define RECONNECT_MS 1000u
#define RETRY_SEND_MS 10u
#define TXQ_MAX 4096u

struct txmsg {
	struct list_head link;
	size_t len;
	uint8_t *buf;
};

struct ha_cluster {
	struct ha_agent *a;
	cpg_handle_t cpg;
	votequorum_handle_t vq;
	bool have_cpg, have_vq, joined;
	struct reactor_fd cpg_h, vq_h;
	struct reactor_timer reconnect, retry;
	struct list_head txq;
	size_t ntx;
	uint64_t q_ring_seq;
	uint32_t q_ring_node;
	bool quorate;
	bool tx_blocked_logged;
	bool down_logged;       /* corosync's absence was logged: the next attempts quietly */
};

static int cs_errno(cs_error_t e)
{
	switch (e) {
	case CS_OK: return 0;
	case CS_ERR_TRY_AGAIN: return -EAGAIN;
	case CS_ERR_NO_MEMORY: return -ENOMEM;
	case CS_ERR_NOT_EXIST: return -ENOENT;
	case CS_ERR_EXIST: return -EEXIST;
	case CS_ERR_ACCESS: return -EACCES;
	case CS_ERR_TIMEOUT: return -ETIMEDOUT;
	case CS_ERR_INVALID_PARAM: return -EINVAL;
	case CS_ERR_TOO_BIG: return -EMSGSIZE;
	case CS_ERR_NOT_SUPPORTED: return -EOPNOTSUPP;
	case CS_ERR_BAD_HANDLE:
	case CS_ERR_LIBRARY:
	default: return -ENOTCONN;
	}
}

static const char *cs_str(cs_error_t e)
{
	return strerror(-cs_errno(e));
}

static struct ha_cluster *the_cluster; /* the callbacks' context (one connection per process) */

/* ------------------------------------------------------------ cmap */

/*
 * How long isergwd's groups stay Transitioning after its lease ran out
 * before they turn Unavailable. While corosync forms a new ring (token +
 * consensus) no heartbeat comes back to anyone, so the nodes that stay lose
 * their leases too; Transitioning makes hosts retry on the same path,
 * Unavailable makes them fail it and wait for their path checker to take it
 * back. So the nodes that stay must not reach Unavailable before the new
 * ring, the barrier and the renewal: token + consensus + HA_RING_MARGIN_MS,
 * and never less than isergwd's own default. A node that loses quorum is
 * told to step down (Unavailable at once) whatever this says.
 */
#define HA_RING_MARGIN_MS 1000u
#define HA_UNAVAILABLE_MIN_MS 2000u

static void render_timings(struct ha_agent *a, uint32_t token, uint32_t consensus)
{
	uint64_t ms = (uint64_t)token + consensus + HA_RING_MARGIN_MS;

	if (!token) {
		a->render.lease_unavailable_ms = 0; /* unknown: isergwd's default */
		GW_WARN(COMP, "corosync's token timeout is unknown (cmap runtime.config.totem.token): "
			"isergwd keeps its default alua_lease_unavailable_ms");
		return;
	}
	if (ms < HA_UNAVAILABLE_MIN_MS)
		ms = HA_UNAVAILABLE_MIN_MS;
	if (ms > 600000)
		ms = 600000;
	a->render.lease_unavailable_ms = (uint32_t)ms;
	GW_INFO(COMP, "corosync token %u ms, consensus %u ms: an expired lease shows "
		"Transitioning for %u ms before Unavailable (alua_lease_unavailable_ms)",
		token, consensus, a->render.lease_unavailable_ms);
}

/*
 * Who we are, the cluster's name, the node names; at_start also corosync's
 * totem timings, from which a->render is derived (once: they are what this
 * agent renders for its isergwd).
 */
static int read_cmap(struct ha_agent *a, bool at_start)
{
	cmap_handle_t h;
	cmap_iter_handle_t it;
	char key[CMAP_KEYNAME_MAXLEN + 1];
	char *s = NULL;
	cs_error_t e;
	int rc = 0;

	e = cmap_initialize(&h);
	if (e != CS_OK)
		return cs_errno(e);
	if (cmap_get_string(h, "totem.cluster_name", &s) == CS_OK && s) {
		snprintf(a->cluster_name, sizeof(a->cluster_name), "%s", s);
		free(s);
	} else {
		snprintf(a->cluster_name, sizeof(a->cluster_name), "%s", "");
	}
	if (at_start) {
		/* corosync's own figures, as it runs (token_coefficient applied) */
		uint32_t token = 0, consensus = 0;

		if (cmap_get_uint32(h, "runtime.config.totem.token", &token) != CS_OK)
			token = 0;
		if (cmap_get_uint32(h, "runtime.config.totem.consensus", &consensus) != CS_OK)
			consensus = 0;
		render_timings(a, token, consensus);
	}
	e = cmap_iter_init(h, "nodelist.node.", &it);
	if (e == CS_OK) {
		size_t vlen;
		cmap_value_types_t type;

		while (cmap_iter_next(h, it, key, &vlen, &type) == CS_OK) {
			char nkey[CMAP_KEYNAME_MAXLEN + 1], *name = NULL;
			uint32_t id, idx;

			if (sscanf(key, "nodelist.node.%u.nodeid", &idx) != 1 ||
			    !strstr(key, ".nodeid"))
				continue;
			if (cmap_get_uint32(h, key, &id) != CS_OK)
				continue;
			snprintf(nkey, sizeof(nkey), "nodelist.node.%u.name", idx);
			if (cmap_get_string(h, nkey, &name) != CS_OK || !name) {
				snprintf(nkey, sizeof(nkey), "nodelist.node.%u.ring0_addr", idx);
				if (cmap_get_string(h, nkey, &name) != CS_OK)
					name = NULL;
			}
			if (name) {
				if (a->sm_ready)
					ha_sm_set_name(&a->sm, id, name);
				if (id == a->nodeid)
					snprintf(a->node_name, sizeof(a->node_name), "%s", name);
				free(name);
			}
		}
		cmap_iter_finalize(h, it);
	}
	if (!a->node_name[0]) {
		GW_ERR(COMP, "node %u has no name in corosync's nodelist (nodelist.node.N.name)",
		       a->nodeid);
		rc = -ENOENT;
	}
	cmap_finalize(h);
	return rc;
}

/* ------------------------------------------------------------ callbacks */

static void deliver_cb(cpg_handle_t h, const struct cpg_name *group, uint32_t nodeid,
		       uint32_t pid, void *msg, size_t len)
{
	struct ha_agent *a = the_cluster->a;

	(void)h;
	(void)group;
	(void)pid;
	ha_sm_deliver(&a->sm, nodeid, msg, len, gw_now_ms());
}

static void confchg_cb(cpg_handle_t h, const struct cpg_name *group,
		       const struct cpg_address *members, size_t nmembers,
		       const struct cpg_address *left, size_t nleft,
		       const struct cpg_address *joined, size_t njoined)
{
	struct ha_agent *a = the_cluster->a;
	uint32_t ids[HA_MAX_MEMBERS];
	size_t n = 0;

	(void)h;
	(void)group;
	for (size_t i = 0; i < nleft; i++)
		GW_NOTICE(COMP, "agent of node %u left the group (%s)", left[i].nodeid,
			  left[i].reason == CPG_REASON_NODEDOWN ? "node down" :
			  left[i].reason == CPG_REASON_PROCDOWN ? "process down" :
			  left[i].reason == CPG_REASON_LEAVE ? "left" : "other");
	for (size_t i = 0; i < njoined; i++)
		GW_NOTICE(COMP, "agent of node %u joined the group", joined[i].nodeid);
	for (size_t i = 0; i < nmembers && n < HA_MAX_MEMBERS; i++) {
		bool dup = false;

		for (size_t k = 0; k < n; k++)
			if (ids[k] == members[i].nodeid)
				dup = true;
		if (dup) {
			GW_ERR(COMP, "two agents of node %u in the group (pid %u too): one agent per node",
			       members[i].nodeid, members[i].pid);
			continue;
		}
		ids[n++] = members[i].nodeid;
	}
	ha_sm_view(&a->sm, ids, n, gw_now_ms());
	for (size_t i = 0; i < nmembers && !a->joined; i++) {
		if (members[i].nodeid != a->nodeid || members[i].pid != (uint32_t)getpid())
			continue;
		/* the service manager's readiness (docs/packaging.md) */
		a->joined = true;
		gw_notify_ready("member of group %s on cluster %s as node %s (id %u); local API %s",
				HA_GROUP_NAME, a->cluster_name, a->node_name, a->nodeid,
				a->opts.socket);
	}
}

static void totem_cb(cpg_handle_t h, struct cpg_ring_id ring, uint32_t n, const uint32_t *nodes)
{
	struct ha_agent *a = the_cluster->a;

	(void)h;
	ha_sm_ring(&a->sm, ring.seq, ring.nodeid, nodes, n, gw_now_ms());
	/* names of nodes added to corosync's nodelist at run time */
	read_cmap(a, false);
}

/*
 * from_nodelist: the node list of a new ring arrived, whose own quorum
 * notification may come after it: until then the quorate flag we hold is the
 * old ring's, so take votequorum's current one instead (and none if it cannot
 * be asked), never the old ring's for the new ring.
 */
static void quorum_update(struct ha_cluster *cl, bool from_nodelist)
{
	struct votequorum_info info;
	uint32_t expected = 0, total = 0;

	memset(&info, 0, sizeof(info));
	if (votequorum_getinfo(cl->vq, 0, &info) == CS_OK) {
		expected = info.node_expected_votes;
		total = info.total_votes;
		if (from_nodelist)
			cl->quorate = (info.flags & VOTEQUORUM_INFO_QUORATE) != 0;
	} else if (from_nodelist) {
		cl->quorate = false;
	}
	ha_sm_quorum(&cl->a->sm, cl->quorate, cl->q_ring_seq, cl->q_ring_node, expected, total,
		     gw_now_ms());
}

static void vq_quorum_cb(votequorum_handle_t h, uint64_t ctx, uint32_t quorate, uint32_t n,
			 votequorum_node_t nodes[])
{
	(void)h;
	(void)ctx;
	(void)n;
	(void)nodes;
	the_cluster->quorate = quorate != 0;
	quorum_update(the_cluster, false);
}

static void vq_nodelist_cb(votequorum_handle_t h, uint64_t ctx, votequorum_ring_id_t ring,
			   uint32_t n, uint32_t nodes[])
{
	(void)h;
	(void)ctx;
	(void)n;
	(void)nodes;
	the_cluster->q_ring_seq = ring.seq;
	the_cluster->q_ring_node = ring.nodeid;
	quorum_update(the_cluster, true);
}

/* ------------------------------------------------------------ connection */

static void disconnect(struct ha_cluster *cl)
{
	struct ha_agent *a = cl->a;

	if (cl->have_cpg) {
		reactor_del_fd(a->r, &cl->cpg_h);
		cpg_finalize(cl->cpg);
		cl->have_cpg = false;
	}
	if (cl->have_vq) {
		reactor_del_fd(a->r, &cl->vq_h);
		votequorum_finalize(cl->vq);
		cl->have_vq = false;
	}
	cl->joined = false;
	cl->quorate = false;
	while (!list_empty(&cl->txq)) {
		struct txmsg *t = list_first_entry(&cl->txq, struct txmsg, link);

		list_del(&t->link);
		free(t->buf);
		free(t);
	}
	cl->ntx = 0;
}

static void lost(struct ha_cluster *cl, const char *what, cs_error_t e)
{
	struct ha_agent *a = cl->a;

	GW_ERR(COMP, "%s: %s: corosync is gone; isergwd's lease is no longer renewed, "
	       "reconnecting every %u ms", what, cs_str(e), RECONNECT_MS);
	disconnect(cl);
	if (a->sm_ready) {
		ha_sm_view(&a->sm, NULL, 0, gw_now_ms());
		ha_sm_quorum(&a->sm, false, 0, 0, 0, 0, gw_now_ms());
	}
	if (!a->stopping)
		reactor_timer_arm(a->r, &cl->reconnect, RECONNECT_MS);
}

static void flush_txq(struct ha_cluster *cl);

static void cpg_fd_cb(void *arg, uint32_t events)
{
	struct ha_cluster *cl = arg;
	cs_error_t e;

	(void)events;
	e = cpg_dispatch(cl->cpg, CS_DISPATCH_ALL);
	if (e != CS_OK && e != CS_ERR_TRY_AGAIN) {
		lost(cl, "cpg_dispatch", e);
		return;
	}
	flush_txq(cl);
}

static void vq_fd_cb(void *arg, uint32_t events)
{
	struct ha_cluster *cl = arg;
	cs_error_t e;

	(void)events;
	e = votequorum_dispatch(cl->vq, CS_DISPATCH_ALL);
	if (e != CS_OK && e != CS_ERR_TRY_AGAIN)
		lost(cl, "votequorum_dispatch", e);
}

static cpg_model_v1_data_t model = {
	.model = CPG_MODEL_V1,
	.cpg_deliver_fn = deliver_cb,
	.cpg_confchg_fn = confchg_cb,
	.cpg_totem_confchg_fn = totem_cb,
	.flags = CPG_MODEL_V1_DELIVER_INITIAL_TOTEM_CONF,
};

static votequorum_callbacks_t vq_callbacks = {
	.votequorum_quorum_notify_fn = vq_quorum_cb,
	.votequorum_nodelist_notify_fn = vq_nodelist_cb,
};

static int connect_corosync(struct ha_cluster *cl)
{
	struct ha_agent *a = cl->a;
	unsigned int nodeid;
	cs_error_t e;
	int fd, rc;

	e = votequorum_initialize(&cl->vq, &vq_callbacks);
	if (e != CS_OK) {
		rc = cs_errno(e);
		gw_log(cl->down_logged ? GW_LOG_DEBUG : GW_LOG_WARN, COMP, "votequorum_initialize: %s (is corosync running, with "
			"quorum { provider: corosync_votequorum }?)", cs_str(e));
		return rc;
	}
	cl->have_vq = true;
	e = cpg_model_initialize(&cl->cpg, CPG_MODEL_V1, (cpg_model_data_t *)&model, NULL);
	if (e != CS_OK) {
		rc = cs_errno(e);
		gw_log(cl->down_logged ? GW_LOG_DEBUG : GW_LOG_WARN, COMP, "cpg_model_initialize: %s", cs_str(e));
		goto err;
	}
	cl->have_cpg = true;
	e = cpg_local_get(cl->cpg, &nodeid);
	if (e != CS_OK) {
		rc = cs_errno(e);
		gw_log(cl->down_logged ? GW_LOG_DEBUG : GW_LOG_WARN, COMP, "cpg_local_get: %s", cs_str(e));
		goto err;
	}
	if (a->nodeid && a->nodeid != nodeid) {
		GW_ERR(COMP, "corosync now says this is node %u, it was node %u: restart the agent",
		       nodeid, a->nodeid);
		rc = -EINVAL;
		goto err;
	}
	a->nodeid = nodeid;
	rc = read_cmap(a, true);
	if (rc)
		goto err;
	if (votequorum_fd_get(cl->vq, &fd) != CS_OK ||
	    reactor_add_fd(a->r, &cl->vq_h, fd, EPOLLIN, vq_fd_cb, cl)) {
		rc = -EIO;
		goto err;
	}
	if (cpg_fd_get(cl->cpg, &fd) != CS_OK ||
	    reactor_add_fd(a->r, &cl->cpg_h, fd, EPOLLIN, cpg_fd_cb, cl)) {
		reactor_del_fd(a->r, &cl->vq_h);
		rc = -EIO;
		goto err;
	}
	e = votequorum_trackstart(cl->vq, 0, CS_TRACK_CHANGES | CS_TRACK_CURRENT);
	if (e != CS_OK) {
		rc = cs_errno(e);
		gw_log(cl->down_logged ? GW_LOG_DEBUG : GW_LOG_WARN, COMP, "votequorum_trackstart: %s", cs_str(e));
		goto err_fds;
	}
	GW_NOTICE(COMP, "connected to corosync: node %u (%s) of cluster '%s'", a->nodeid,
		  a->node_name, a->cluster_name);
	cl->down_logged = false;
	return 0;

err_fds:
	reactor_del_fd(a->r, &cl->vq_h);
	reactor_del_fd(a->r, &cl->cpg_h);
err:
	if (cl->have_cpg)
		cpg_finalize(cl->cpg);
	if (cl->have_vq)
		votequorum_finalize(cl->vq);
	cl->have_cpg = cl->have_vq = false;
	return rc;
}

int ha_cluster_join(struct ha_cluster *cl)
{
	struct cpg_name name;
	cs_error_t e;

	if (!cl->have_cpg)
		return -ENOTCONN;
	name.length = (uint32_t)strlen(HA_GROUP_NAME);
	memcpy(name.value, HA_GROUP_NAME, name.length);
	do {
		e = cpg_join(cl->cpg, &name);
	} while (e == CS_ERR_TRY_AGAIN);
	if (e != CS_OK) {
		GW_ERR(COMP, "cpg_join %s: %s", HA_GROUP_NAME, cs_str(e));
		return cs_errno(e);
	}
	cl->joined = true;
	GW_INFO(COMP, "joined the process group %s", HA_GROUP_NAME);
	return 0;
}

static void reconnect_cb(void *arg)
{
	struct ha_cluster *cl = arg;
	struct ha_agent *a = cl->a;

	if (connect_corosync(cl) || ha_cluster_join(cl)) {
		cl->down_logged = true;         /* lost() said it: quietly from here */
		disconnect(cl);
		reactor_timer_arm(a->r, &cl->reconnect, RECONNECT_MS);
	}
}

/* ------------------------------------------------------------ sending */

static int mcast(struct ha_cluster *cl, const uint8_t *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)(uintptr_t)buf, .iov_len = len };
	cs_error_t e = cpg_mcast_joined(cl->cpg, CPG_TYPE_AGREED, &iov, 1);

	return cs_errno(e);
}

static void flush_txq(struct ha_cluster *cl)
{
	struct ha_agent *a = cl->a;

	while (!list_empty(&cl->txq) && cl->joined) {
		struct txmsg *t = list_first_entry(&cl->txq, struct txmsg, link);
		int rc = mcast(cl, t->buf, t->len);

		if (rc == -EAGAIN) {
			reactor_timer_arm(a->r, &cl->retry, RETRY_SEND_MS);
			return;
		}
		if (rc)
			GW_ERR(COMP, "a queued message could not be sent: %s (dropped)", strerror(-rc));
		list_del(&t->link);
		free(t->buf);
		free(t);
		cl->ntx--;
	}
	if (list_empty(&cl->txq) && cl->tx_blocked_logged) {
		GW_NOTICE(COMP, "corosync takes messages again: send queue empty");
		cl->tx_blocked_logged = false;
	}
}

static void retry_cb(void *arg)
{
	flush_txq(arg);
}

int ha_cluster_send(struct ha_cluster *cl, const HaMsg *m)
{
	struct txmsg *t;
	uint8_t *buf;
	size_t len;
	int rc;

	if (!cl->joined)
		return -ENOTCONN;
	rc = ha_msg_pack(m, &buf, &len);
	if (rc)
		return rc;
	if (list_empty(&cl->txq)) {
		rc = mcast(cl, buf, len);
		if (rc != -EAGAIN) {
			free(buf);
			return rc;
		}
	}
	/* flow control: keep it, in order, and try again soon */
	if (cl->ntx >= TXQ_MAX) {
		free(buf);
		GW_ERR(COMP, "send queue full (%u messages): corosync has not taken any for long",
		       TXQ_MAX);
		return -ENOBUFS;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		free(buf);
		return -ENOMEM;
	}
	t->buf = buf;
	t->len = len;
	list_add_tail(&t->link, &cl->txq);
	cl->ntx++;
	if (!cl->tx_blocked_logged) {
		GW_NOTICE(COMP, "corosync flow control: queueing messages");
		cl->tx_blocked_logged = true;
	}
	reactor_timer_arm(cl->a->r, &cl->retry, RETRY_SEND_MS);
	return 0;
}

/* What corosync answers while it is not (yet) running or still starting. */
static bool corosync_not_up(int rc)
{
	return rc == -ENOTCONN || rc == -EAGAIN || rc == -ETIMEDOUT;
}

int ha_cluster_start(struct ha_agent *a, const sigset_t *stop, struct ha_cluster **out)
{
	struct timespec ts = { .tv_sec = RECONNECT_MS / 1000,
			       .tv_nsec = (long)(RECONNECT_MS % 1000) * 1000000L };
	struct ha_cluster *cl = calloc(1, sizeof(*cl));
	unsigned int tries = 0;
	int rc, sig;

	if (!cl)
		return -ENOMEM;
	cl->a = a;
	list_init(&cl->txq);
	reactor_timer_init(&cl->reconnect, reconnect_cb, cl);
	reactor_timer_init(&cl->retry, retry_cb, cl);
	the_cluster = cl;
	/*
	 * Started before corosync (or with it: `corosync -f & isergw-ha &`), the
	 * agent waits for it as it does when corosync dies later: tried every
	 * RECONNECT_MS, the absence logged once. Nothing else runs yet (no
	 * lease is given before the agent is in the group), so a plain wait.
	 */
	while ((rc = connect_corosync(cl)) && corosync_not_up(rc)) {
		if (!cl->down_logged) {
			GW_WARN(COMP, "corosync is not running (yet): %s; trying again every %u ms",
				strerror(-rc), RECONNECT_MS);
			gw_notify_status("waiting for corosync");
			cl->down_logged = true;
		}
		tries++;
		sig = sigtimedwait(stop, NULL, &ts);
		if (sig == SIGHUP)
			GW_NOTICE(COMP, "SIGHUP: nothing to re-read (the agent's settings need a "
				  "restart)");
		else if (sig >= 0) {
			GW_NOTICE(COMP, "%s received while waiting for corosync", strsignal(sig));
			rc = -EINTR;
			break;
		}
	}
	if (rc) {
		the_cluster = NULL;
		free(cl);
		return rc;
	}
	if (tries)
		GW_NOTICE(COMP, "corosync answered after %u attempt(s)", tries + 1);
	*out = cl;
	return 0;
}

void ha_cluster_stop(struct ha_cluster *cl)
{
	struct cpg_name name;

	if (!cl)
		return;
	if (cl->joined) {
		name.length = (uint32_t)strlen(HA_GROUP_NAME);
		memcpy(name.value, HA_GROUP_NAME, name.length);
		cpg_leave(cl->cpg, &name);
	}
	reactor_timer_cancel(cl->a->r, &cl->reconnect);
	reactor_timer_cancel(cl->a->r, &cl->retry);
	disconnect(cl);
	the_cluster = NULL;
	free(cl);
}
