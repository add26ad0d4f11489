/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control socket server (ctl/ctl.h, docs/control.md); the operations
 * themselves are in ctl_ops*.c (ctl_priv.h).
 *
 * One control thread runs a reactor of its own (not one of gw->reactors)
 * with the IPC endpoint of common/ipc.h on it: that accepts clients, reads
 * length-prefixed frames and hands over one request at a time per client;
 * this file decodes and dispatches it. While a request is served
 * asynchronously (answers gathered from the reactors, an ALUA transition
 * waiting for its timer, ctl_client_done) or its reply is not yet written,
 * the client's socket is not read. A subscribed client also gets the events
 * pushed to it, at most CTL_EVENT_QUEUE_MAX of them queued (more are dropped
 * and counted). Everything in
 * struct gw_ctl below the "control thread only" line is touched by that
 * thread alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_priv.h"
#include "backend/backend.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/notify.h"

#define CTL_MAX_CLIENTS 32u

/* ------------------------------------------------------------ clients */

static void client_frame(struct gw_ipc_conn *conn, const uint8_t *body, uint32_t len);

static int client_open(struct gw_ipc_conn *conn)
{
	struct ctl_client *c = gw_ipc_conn_priv(conn);

	c->ctl = gw_ipc_server_arg(conn->srv);
	c->conn = conn;
	c->name = conn->name;
	return 0;
}

static void client_reply_error(struct gw_ipc_conn *conn, int status, const char *why)
{
	ctl_reply_err(gw_ipc_conn_priv(conn), status, why);
}

static void client_close(struct gw_ipc_conn *conn)
{
	struct ctl_client *c = gw_ipc_conn_priv(conn);

	if (c->subscribed) {
		atomic_fetch_sub(&c->ctl->nsubscribers, 1);
		GW_NOTICE(COMP, "%s: no longer subscribed to events", c->name);
	}
}

static const struct gw_ipc_ops client_ops = {
	.open = client_open,
	.frame = client_frame,
	.reply_error = client_reply_error,
	.close = client_close,
};

void ctl_client_send(struct ctl_client *c, CtlReply *rep)
{
	uint8_t *buf;
	size_t len;
	int rc;

	if (c->conn->closed)
		return;
	rc = ctl_frame_pack(&rep->base, &buf, &len);
	if (rc) {
		/* too big or no memory: say so in a reply that fits */
		CtlReply small = ISERGW__CTL__REPLY__INIT;
		char why[96];

		snprintf(why, sizeof(why), "reply could not be built: %s", strerror(-rc));
		small.status = rc;
		small.error = why;
		GW_WARN(COMP, "%s: %s", c->name, why);
		if (ctl_frame_pack(&small.base, &buf, &len)) {
			gw_ipc_conn_close(c->conn);
			return;
		}
	}
	gw_ipc_reply(c->conn, buf, len);
}

/* Push an event to a subscriber; false when its queue is full (dropped) or it is gone. */
bool ctl_client_push_event(struct ctl_client *c, Isergw__Ctl__Event *ev)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;
	uint8_t *buf;
	size_t len;

	if (c->conn->closed || !c->subscribed)
		return false;
	if (!gw_ipc_push_room(c->conn)) {
		/* a slow or stuck subscriber: never wait for it */
		if (c->dropped++ == 0)
			GW_WARN(COMP, "%s: %u events not yet read: dropping event %llu and the next ones "
				"until it catches up", c->name, c->conn->npushed,
				(unsigned long long)ev->seq);
		return false;
	}
	ev->dropped = c->dropped;
	rep.payload_case = ISERGW__CTL__REPLY__PAYLOAD_EVENT;
	rep.event = ev;
	if (ctl_frame_pack(&rep.base, &buf, &len) || gw_ipc_push(c->conn, buf, len)) {
		GW_WARN(COMP, "%s: out of memory: event %llu dropped", c->name,
			(unsigned long long)ev->seq);
		c->dropped++;
		return false;
	}
	if (c->dropped)
		GW_NOTICE(COMP, "%s: events flow again after %llu dropped", c->name,
			  (unsigned long long)c->dropped);
	c->dropped = 0;
	return !c->conn->closed;
}

/* On the control reactor: number ev as the next event and push it to every subscriber. */
unsigned int ctl_publish(struct gw_ctl *ctl, Isergw__Ctl__Event *ev)
{
	struct list_head *pos, *n;
	unsigned int delivered = 0;

	ev->seq = ++ctl->event_seq;
	list_for_each_safe(pos, n, &ctl->srv->conns) {
		struct gw_ipc_conn *conn = list_entry(pos, struct gw_ipc_conn, link);

		delivered += ctl_client_push_event(gw_ipc_conn_priv(conn), ev);
	}
	return delivered;
}

/*
 * From any thread: fn(m) runs on the control reactor and drops ctl->inflight
 * when done. -ENOMEM (m freed) when the message cannot be sent.
 */
int ctl_post(struct gw_ctl *ctl, reactor_fn fn, void *m)
{
	atomic_fetch_add(&ctl->inflight, 1);
	if (reactor_send_msg(ctl->r, fn, m)) {
		atomic_fetch_sub(&ctl->inflight, 1);
		free(m);
		return -ENOMEM;
	}
	return 0;
}

void *ctl_event_new(struct gw_ctl *ctl, size_t size, int *rc)
{
	void *m;

	if (atomic_load(&ctl->nsubscribers) == 0) {
		*rc = -ENOTCONN;
		return NULL;
	}
	m = malloc(size);
	if (!m)
		*rc = -ENOMEM;
	return m;
}

void ctl_event_done(struct gw_ctl *ctl, void *m)
{
	free(m);
	atomic_fetch_sub(&ctl->inflight, 1);
}

void ctl_reply_err(struct ctl_client *c, int status, const char *why)
{
	CtlReply rep = ISERGW__CTL__REPLY__INIT;

	rep.status = status;
	rep.error = ctl_str(why);
	ctl_client_send(c, &rep);
}

/* Finish an asynchronous request: reply (unless the client went away). */
void ctl_client_done(struct ctl_client *c, CtlReply *rep)
{
	c->busy = false;
	ctl_client_send(c, rep);
	if (c->held) {
		c->held = false;
		gw_ipc_conn_release(c->conn);
	}
}

int ctl_client_add(struct gw_ctl *ctl, int fd, const struct ucred *cred)
{
	return gw_ipc_conn_add(ctl->srv, fd, cred);
}

/* ------------------------------------------------------------ requests */

void ctl_reply_refused(struct ctl_client *c, const CtlRequest *req, int rc, const char *why)
{
	GW_WARN(COMP, "%s: %s refused: %s", c->name, req ? ctl_op_name(req) : "request", why);
	ctl_reply_err(c, rc, why);
}

static void client_frame(struct gw_ipc_conn *conn, const uint8_t *body, uint32_t len)
{
	struct ctl_client *c = gw_ipc_conn_priv(conn);
	CtlRequest *req = NULL;
	char why[256];
	int rc;

	rc = ctl_request_decode(body, len, &req, why, sizeof(why));
	if (rc) {
		ctl_reply_refused(c, NULL, rc, why);
		return;
	}
	GW_DEBUG(COMP, "%s: %s", c->name, ctl_op_name(req));
	switch (req->op_case) {
	case ISERGW__CTL__REQUEST__OP_GET_STATUS:
		ctl_op_get_status(c);
		break;
	case ISERGW__CTL__REQUEST__OP_APPLY_CONFIG:
		ctl_op_apply_config(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_RELOAD_CONFIG:
		ctl_op_reload_config(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_CHANGE_LUN:
		ctl_op_change_lun(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES:
		ctl_op_set_alua(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_GET_ALUA_STATES:
		ctl_op_get_alua(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_LIST_SESSIONS:
		ctl_op_list_sessions(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_GET_COUNTERS:
		ctl_op_get_counters(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_LOGOUT:
		ctl_op_logout(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_SUBSCRIBE:
		ctl_op_subscribe(c);
		break;
	case ISERGW__CTL__REQUEST__OP_ALUA_REQUEST_DONE:
		ctl_op_alua_request_done(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_LU_STATE_APPLY:
		ctl_op_lu_state_apply(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_LU_STATE_DONE:
		ctl_op_lu_state_done(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_SET_ALUA_MAP:
		ctl_op_set_alua_map(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_RENEW_LEASE:
		ctl_op_renew_lease(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_STEP_DOWN:
		ctl_op_step_down(c, req);
		break;
	case ISERGW__CTL__REQUEST__OP_GET_LEASE:
		ctl_op_get_lease(c, req);
		break;
	default: /* ctl_request_decode lets only known operations through */
		ctl_reply_refused(c, req, -EOPNOTSUPP, "unknown operation");
		break;
	}
	ctl_request_free(req);
	/* answered later (ctl_client_done): the client stays until then */
	if (c->busy) {
		c->held = true;
		gw_ipc_conn_hold(conn);
	}
}

/* ------------------------------------------------------------ start, stop */

static void *ctl_thread(void *arg)
{
	reactor_run(arg);
	return NULL;
}

int ctl_create(struct gw *gw, const struct gw_ctl_params *p, struct gw_ctl **out)
{
	struct gw_ipc_params sp = {
		.comp = COMP,
		.what = "control socket",
		.client = "control client",
		.max_clients = CTL_MAX_CLIENTS,
		.busy_why = "too many control clients",
		.max_push = CTL_EVENT_QUEUE_MAX,
		.frame_max = CTL_FRAME_MAX,
		.priv_size = sizeof(struct ctl_client),
		.ops = &client_ops,
	};
	struct gw_ctl *ctl;
	struct timespec now;
	int rc;

	if (strlen(p->path) >= GW_IPC_PATH_MAX)
		return -ENAMETOOLONG;
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	ctl->gw = gw;
	ctl->load = p->load;
	ctl->load_file = p->load_file;
	ctl->config_path = p->config_path;
	ctl->load_arg = p->load_arg;
	ctl->start_ms = gw_now_ms();
	clock_gettime(CLOCK_REALTIME, &now);
	ctl->start_unix_ms = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
	reactor_timer_init(&ctl->transition_timer, ctl_alua_transition_end, ctl);
	reactor_timer_init(&ctl->lease_timer, ctl_lease_timer_fired, ctl);
	rc = reactor_create(gw->nreactors, &ctl->r);
	if (rc)
		goto err_free;
	sp.r = ctl->r;
	sp.arg = ctl;
	rc = gw_ipc_server_create(&sp, &ctl->srv);
	if (rc) {
		reactor_destroy(ctl->r);
		goto err_free;
	}
	pthread_mutex_init(&ctl->reload_lock, NULL);
	*out = ctl;
	return 0;

err_free:
	free(ctl);
	return rc;
}

void ctl_destroy(struct gw_ctl *ctl)
{
	/* the clients go, those served asynchronously too */
	ctl->transition_client = NULL;
	gw_ipc_server_destroy(ctl->srv);
	reactor_destroy(ctl->r);
	json_object_put(ctl->config_doc);
	ctl_alua_free(ctl);
	pthread_mutex_destroy(&ctl->reload_lock);
	free(ctl);
}

int gw_ctl_start(struct gw *gw, const struct gw_ctl_params *p, struct gw_ctl **out)
{
	struct gw_ctl *ctl;
	int rc;

	rc = ctl_create(gw, p, &ctl);
	if (rc)
		return rc;
	rc = gw_ipc_listen(ctl->srv, p->path);
	if (rc)
		goto err_destroy;
	/* the lease's timer, for a lease configured before any request (none yet: not armed) */
	ctl_lease_resync(ctl);
	rc = -pthread_create(&ctl->thread, NULL, ctl_thread, ctl->r);
	if (rc)
		goto err_destroy;       /* the socket goes with the server */
	/* SET TARGET PORT GROUPS under the external ALUA policy comes here */
	scsi_alua_set_request_handler(ctl_alua_request, ctl);
	/* and the LU state changes of the cluster store */
	scsi_cluster_set_handler(ctl_lu_propose, ctl);
	scsi_cluster_set_lock_handler(ctl_lu_lock, ctl);
	GW_NOTICE(COMP, "control socket %s", p->path);
	*out = ctl;
	return 0;

err_destroy:
	ctl_destroy(ctl);
	return rc;
}

void gw_ctl_stop(struct gw_ctl *ctl)
{
	if (!ctl)
		return;
	/* no more events: from here SET TARGET PORT GROUPS finds nobody listening */
	scsi_alua_set_request_handler(NULL, NULL);
	scsi_cluster_set_handler(NULL, NULL);
	scsi_cluster_set_lock_handler(NULL, NULL);
	/* requests out on the reactors come back to the control thread first */
	for (unsigned int i = 0; i < 500 && atomic_load(&ctl->inflight); i++)
		usleep(10 * 1000);
	reactor_stop(ctl->r);
	pthread_join(ctl->thread, NULL);
	if (atomic_load(&ctl->inflight)) {
		/* a reactor still holds one: it will send it back here, so nothing is freed */
		GW_WARN(COMP, "%u control request(s) still on the reactors at shutdown: control "
			"state left allocated", atomic_load(&ctl->inflight));
		gw_ipc_unlisten(ctl->srv);
		return;
	}
	/* the thread is gone: its objects are ours */
	gw_ipc_unlisten(ctl->srv);
	GW_NOTICE(COMP, "control socket %s closed", ctl->srv->path);
	ctl_destroy(ctl);
}

/*
 * While the ALUA lease is valid, a change must not keep the renewals waiting
 * on this thread until it runs out: the remote backstores the change opens
 * get half of what is left of it, together; one that has not answered by
 * then opens NOT READY and is found in the background. Without a valid
 * lease (none enforced, none given yet, or lost) nothing is cut short.
 */
void ctl_open_deadline_begin(void)
{
	struct scsi_lease l;
	uint64_t now = scsi_alua_lease_now();

	scsi_alua_lease_get(&l);
	if (scsi_lease_phase(&l, now) != SCSI_LEASE_VALID)
		return;
	/* the lease's clock may be another than gw_now_ms (a test's): a duration */
	bdev_open_deadline_set(gw_now_ms() + (l.expires_ms - now) / 2);
}

void ctl_open_deadline_end(void)
{
	bdev_open_deadline_set(0);
}

int gw_ctl_reload(struct gw_ctl *ctl, struct gw *gw, struct gw_config *cfg)
{
	int rc;

	if (!ctl)
		return gw_reload(gw, cfg);
	pthread_mutex_lock(&ctl->reload_lock);
	ctl_open_deadline_begin();
	rc = gw_reload(gw, cfg);
	ctl_open_deadline_end();
	pthread_mutex_unlock(&ctl->reload_lock);
	/* alua_lease and alua_lease_unavailable_ms may have changed */
	ctl_lease_resync(ctl);
	return rc;
}

int gw_ctl_reload_file(struct gw_ctl *ctl, char *err, size_t errlen)
{
	struct gw_config *cfg = NULL;
	const char *path = ctl->config_path ? ctl->config_path : "the configuration";
	char why[600] = "";
	size_t inuse;
	int rc;

	err[0] = '\0';
	if (!ctl->load_file)
		return -EOPNOTSUPP;
	gw_notify_reloading();
	rc = ctl->load_file(ctl->load_arg, &cfg, why, sizeof(why));
	if (rc == -EOPNOTSUPP) {
		/* quick serve or managed: nothing to re-read, nothing wrong */
		GW_NOTICE(COMP, "reload: %s", why);
		snprintf(err, errlen, "%s", why);
		gw_notify_ready("nothing to reload: %s", why);
		return rc;
	}
	GW_NOTICE(COMP, "reload: re-reading %s", path);
	if (rc) {
		if (!why[0])
			snprintf(why, sizeof(why), "%s", strerror(-rc));
		/* the error itself, once; the reason names the file */
		GW_ERR(COMP, "reload failed: configuration kept as it was: %s", why);
		snprintf(err, errlen, "%s", why);
		gw_notify_ready("reload of %s failed: configuration kept", path);
		return rc;
	}
	rc = gw_ctl_reload(ctl, ctl->gw, cfg);
	if (rc) {
		/* what failed was logged by gw_reload at err */
		snprintf(err, errlen, "%s could not be applied: %s (configuration kept as it was)",
			 path, strerror(-rc));
		GW_WARN(COMP, "reload failed: %s", err);
		gw_notify_ready("reload of %s failed: configuration kept", path);
		return rc;
	}
	inuse = gw_portals_port_in_use(ctl->gw);
	if (inuse)
		gw_notify_ready("%s reloaded; degraded: %zu portal(s) not listening: address in use",
				path, inuse);
	else
		gw_notify_ready("%s reloaded", path);
	return 0;
}
