/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's link to its node's isergwd (control socket, docs/control.md).
 * isergwd holds no state of its own under the agent: on every (re)connection
 * it gets the current generation again, the configuration rendered for this
 * node (ApplyConfig, epoch = generation) and then the ALUA map of every
 * device group (SetAluaMap, same epoch). The same epoch with the same content
 * is a no-op in isergwd, so an agent that restarts changes nothing that is
 * already right. Lease renewals and step-downs go on the same connection;
 * the hosts' SET TARGET PORT GROUPS come back as events and become moves.
 *
 * A generation made by one LUN change from the one isergwd holds goes as
 * that change alone (ChangeLun, epoch = generation: the LUN opened or
 * closed, nothing reloaded, no ALUA map since the map did not change); one
 * that changes only where device groups are served (a failover, a drain, a
 * move) as its ALUA map alone (SetAluaMap with config_epoch and the owners:
 * nothing rendered, parsed or reloaded), with the keys of the nodes to fence
 * at the backend when the live set changed (isergwd preempts them before it
 * sets a state, if its Subscribed reply says it can: else the whole
 * configuration, whose reload fences them); any other (ha_doc_push_kind),
 * or a ChangeLun or placement isergwd refuses, as the whole configuration.
 *
 * Replies come in request order: a FIFO of what was sent says what each one
 * answers. Disconnected, the link tries again every 200 ms, and at once when
 * the socket file appears (inotify on its directory: a restarted isergwd is
 * driven as soon as it listens, not up to 200 ms later); bind() creates the
 * file just before listen(), so a refusal right after it is tried again
 * every 10 ms for a while.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "agent.h"
#include "common/ipc.h"
#include "common/log.h"

#define COMP "ha-gw"
#define RECONNECT_MS 200u
#define RECONNECT_FAST_MS 10u   /* after the socket file appeared */
#define RECONNECT_FAST_TRIES 50u
#define SENT_MAX 256u

enum sent_kind { S_SUBSCRIBE = 1, S_CONFIG, S_LUN, S_ALUA, S_PLACE, S_LEASE, S_STEPDOWN, S_DONE,
		 S_LUAPPLY, S_LUDONE, S_STATUS };
#define LUN_POLL_MS 500u        /* isergwd's LUN states asked this often */

/* A LuStateApply on its way: who waits for isergwd's answer. */
struct lu_pend {
	uint32_t origin;
	uint64_t proposal_id;
	uint8_t naa[16];
	uint64_t version;
	uint64_t parked_upto;   /* it carried this node's parked UAs up to this version (0: none) */
};

struct txbuf {
	struct list_head link;
	uint8_t *buf;
	size_t len, off;
};

struct ha_gwlink {
	struct ha_agent *a;
	int fd;
	bool connected;
	struct reactor_fd h;
	struct gw_frame_rx rx;
	struct list_head txq;
	struct reactor_timer reconnect;
	/* what was sent, in order */
	struct { enum sent_kind kind; uint64_t gen; struct lu_pend lu; } sent[SENT_MAX];
	size_t sent_head, nsent;
	/* pushing */
	uint64_t pushing_gen;           /* on its way (0: none) */
	uint64_t pushed_gen;            /* isergwd holds this one */
	bool want;
	uint64_t epoch;                 /* isergwd's, as last seen */
	uint64_t config_gen;            /* the generation of the configuration isergwd holds */
	bool lus_pushed;                /* this connection's isergwd got the LU states */
	bool map_fences;                /* its isergwd fences at the backend on a SetAluaMap */
	bool logged_down;
	/* the socket's directory watched: its file appearing means isergwd listens (soon) */
	int ino_fd;                     /* -1: none */
	struct reactor_fd ino_h;
	char sock_name[HA_SOCK_PATH_MAX]; /* the file's name in its directory */
	unsigned int fast_tries;        /* left at RECONNECT_FAST_MS */
	uint64_t polled_ms;             /* the LUN states last asked for (GetStatus) */
	bool polling;                   /* the answer is on its way */
};

static void gw_disconnect(struct ha_gwlink *g, const char *why);

/* ------------------------------------------------------------ sending */

static void gw_flush(struct ha_gwlink *g)
{
	while (!list_empty(&g->txq)) {
		struct txbuf *t = list_first_entry(&g->txq, struct txbuf, link);
		int rc = gw_ipc_send_some(g->fd, t->buf, t->len, &t->off);

		if (rc == 0) {
			reactor_mod_fd(g->a->r, &g->h, EPOLLIN | EPOLLOUT);
			return;
		}
		if (rc < 0) {
			gw_disconnect(g, strerror(-rc));
			return;
		}
		list_del(&t->link);
		free(t->buf);
		free(t);
	}
	reactor_mod_fd(g->a->r, &g->h, EPOLLIN);
}

static int gw_send(struct ha_gwlink *g, const CtlRequest *req, enum sent_kind kind, uint64_t gen)
{
	struct txbuf *t;
	int rc;

	if (!g->connected)
		return -ENOTCONN;
	if (g->nsent >= SENT_MAX) {
		gw_disconnect(g, "isergwd does not answer");
		return -EIO;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	rc = ctl_frame_pack(&req->base, &t->buf, &t->len);
	if (rc) {
		free(t);
		return rc;
	}
	list_add_tail(&t->link, &g->txq);
	g->sent[(g->sent_head + g->nsent) % SENT_MAX].kind = kind;
	g->sent[(g->sent_head + g->nsent) % SENT_MAX].gen = gen;
	g->nsent++;
	gw_flush(g);
	return 0;
}

/* ------------------------------------------------------------ pushing a document */

/*
 * The ALUA map of generation gen (S_ALUA), or, with base (the generation
 * whose configuration isergwd holds), the placement-only change from base to
 * gen: the map with every device group's owner (S_PLACE), and with fence
 * (node self's index) the keys its configuration lists to fence.
 */
static void push_alua(struct ha_gwlink *g, uint64_t gen, uint64_t base, int fence)
{
	const struct ha_doc *d = g->a->sm.doc;
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__SetAluaMap map = ISERGW__CTL__SET_ALUA_MAP__INIT;
	Isergw__Ctl__DeviceGroupStates *dgs = calloc(d->ndgs + 1, sizeof(*dgs));
	Isergw__Ctl__DeviceGroupStates **dgp = calloc(d->ndgs + 1, sizeof(*dgp));
	uint16_t ftpg[HA_FLOATING_MAX];
	size_t nf = ha_doc_floating_tpgs(d, ftpg);
	size_t per = d->nnodes + nf;
	Isergw__Ctl__AluaGroupState *gs = calloc(d->ndgs * per + 1, sizeof(*gs));
	Isergw__Ctl__AluaGroupState **gsp = calloc(d->ndgs * per + 1, sizeof(*gsp));
	struct ha_alua_entry *e = calloc(d->nnodes + 1, sizeof(*e));
	uint64_t keys[HA_NODES_MAX];
	size_t k = 0;

	if (!dgs || !dgp || !gs || !gsp || !e) {
		GW_ERR(COMP, "out of memory building the ALUA map");
		g->pushing_gen = 0;
		goto out;
	}
	for (size_t i = 0; i < d->ndgs; i++) {
		isergw__ctl__device_group_states__init(&dgs[i]);
		dgs[i].device_group = d->dgs[i].name;
		dgs[i].owner_tpg_id = base ? ha_doc_owner_tpg(d, i) : 0;
		dgs[i].groups = &gsp[k];
		ha_alua_states(d, (int)i, e);
		for (size_t n = 0; n < d->nnodes; n++, k++) {
			isergw__ctl__alua_group_state__init(&gs[k]);
			gs[k].tpg_id = e[n].tpg_id;
			gs[k].state = (Isergw__Ctl__AluaState)e[n].state;
			gs[k].pref = e[n].pref;
			gsp[k] = &gs[k];
		}
		/* a floating portal's group: the node holding the address serves every LUN */
		for (size_t f = 0; f < nf; f++, k++) {
			isergw__ctl__alua_group_state__init(&gs[k]);
			gs[k].tpg_id = ftpg[f];
			gs[k].state = (Isergw__Ctl__AluaState)0; /* Active/Optimized */
			gsp[k] = &gs[k];
		}
		dgs[i].n_groups = per;
		dgp[i] = &dgs[i];
	}
	map.epoch = gen;
	map.device_groups = dgp;
	map.n_device_groups = d->ndgs;
	map.transition_ms = g->a->opts.transition_ms;
	map.config_epoch = base;
	if (fence >= 0) {
		map.backend_pr_fence_set = true;
		map.n_backend_pr_fence = ha_doc_fence_keys(d, (size_t)fence, keys);
		map.backend_pr_fence = keys;
	}
	req.op_case = ISERGW__CTL__REQUEST__OP_SET_ALUA_MAP;
	req.set_alua_map = &map;
	if (gw_send(g, &req, base ? S_PLACE : S_ALUA, gen))
		g->pushing_gen = 0;
out:
	free(dgs);
	free(dgp);
	free(gs);
	free(gsp);
	free(e);
}

static void push_done(struct ha_gwlink *g, uint64_t gen, int status, const char *err)
{
	struct ha_agent *a = g->a;

	g->pushing_gen = 0;
	if (!status) {
		g->pushed_gen = gen;
		GW_INFO(COMP, "isergwd holds generation %" PRIu64, gen);
	}
	ha_sm_gw_applied(&a->sm, gen, status, err, gw_now_ms());
}

/* isergwd refused a generation sent as a change: it is not where this agent thought. */
static void push_whole(struct ha_gwlink *g, const char *what, uint64_t gen, const char *err)
{
	GW_WARN(COMP, "isergwd refused the %s of generation %" PRIu64 " (%s): sending the whole "
		"configuration", what, gen, err);
	g->pushing_gen = 0;
	g->pushed_gen = 0;
	g->want = true;
}

static void push_next(struct ha_gwlink *g)
{
	const struct ha_doc *d = g->a->sm.doc;
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__ApplyConfig ac = ISERGW__CTL__APPLY_CONFIG__INIT;
	char err[512] = "";
	enum ha_push kind;
	char *json;
	int self;

	if (!g->connected || g->pushing_gen || !g->want || !d->generation)
		return;
	g->want = false;
	self = ha_doc_find_node(d, g->a->node_name);
	if (self < 0) {
		/* not a node of the configuration: nothing to serve; isergwd keeps none */
		GW_INFO(COMP, "node %s is not in the cluster configuration (generation %" PRIu64
			"): nothing to push", g->a->node_name, d->generation);
		return;
	}
	/* isergwd holds the configuration and the map of pushed_gen, or nothing known */
	kind = ha_doc_push_kind(d, self, g->config_gen == g->pushed_gen ? g->pushed_gen : 0);
	if (kind == HA_PUSH_PLACEMENT ||
	    (kind == HA_PUSH_PLACEMENT_FENCE && g->map_fences)) {
		/* where device groups are served (and whom to fence first): the ALUA map alone */
		g->pushing_gen = d->generation;
		push_alua(g, d->generation, g->pushed_gen,
			  kind == HA_PUSH_PLACEMENT_FENCE ? self : -1);
		return;
	}
	if (kind == HA_PUSH_LUN) {
		/* that LUN only */
		Isergw__Ctl__ChangeLun cl = ISERGW__CTL__CHANGE_LUN__INIT;

		cl.epoch = d->generation;
		cl.target = d->delta_target;
		cl.lun = d->delta_lun;
		cl.lun_json = d->delta_lun_json ? d->delta_lun_json : (char *)(uintptr_t)"";
		req.op_case = ISERGW__CTL__REQUEST__OP_CHANGE_LUN;
		req.change_lun = &cl;
		g->pushing_gen = d->generation;
		if (gw_send(g, &req, S_LUN, d->generation))
			g->pushing_gen = 0;
		return;
	}
	json = ha_doc_render_node_opts(d, self, &g->a->render, err, sizeof(err));
	if (!json) {
		GW_ERR(COMP, "cannot render the configuration of generation %" PRIu64 ": %s",
		       d->generation, err);
		ha_sm_gw_applied(&g->a->sm, d->generation, -EINVAL, err, gw_now_ms());
		return;
	}
	ac.epoch = d->generation;
	ac.config_json = json;
	req.op_case = ISERGW__CTL__REQUEST__OP_APPLY_CONFIG;
	req.apply_config = &ac;
	g->pushing_gen = d->generation;
	if (gw_send(g, &req, S_CONFIG, d->generation))
		g->pushing_gen = 0;
	free(json);
}

void ha_gwlink_doc(struct ha_gwlink *g, const struct ha_doc *d)
{
	g->want = true;
	push_next(g);
}

/* ------------------------------------------------------------ lease */

void ha_gwlink_lease(struct ha_gwlink *g, uint64_t expires_ms)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__RenewLease rl = ISERGW__CTL__RENEW_LEASE__INIT;

	rl.expires_mono_ms = expires_ms;
	req.op_case = ISERGW__CTL__REQUEST__OP_RENEW_LEASE;
	req.renew_lease = &rl;
	gw_send(g, &req, S_LEASE, 0);
}

void ha_gwlink_step_down(struct ha_gwlink *g, const char *reason)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__StepDown sd = ISERGW__CTL__STEP_DOWN__INIT;

	sd.reason = (char *)(uintptr_t)reason;
	req.op_case = ISERGW__CTL__REQUEST__OP_STEP_DOWN;
	req.step_down = &sd;
	if (gw_send(g, &req, S_STEPDOWN, 0) == 0)
		GW_WARN(COMP, "isergwd told to step down: %s", reason);
}

/* ------------------------------------------------------------ events */

static void alua_done(struct ha_gwlink *g, uint64_t id, int status, const char *reason)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__AluaRequestDone dn = ISERGW__CTL__ALUA_REQUEST_DONE__INIT;

	dn.request_id = id;
	dn.status = status;
	dn.reason = (char *)(uintptr_t)reason;
	req.op_case = ISERGW__CTL__REQUEST__OP_ALUA_REQUEST_DONE;
	req.alua_request_done = &dn;
	gw_send(g, &req, S_DONE, 0);
}

/* A host's SET TARGET PORT GROUPS: the group it wants Active/Optimized moves the device group. */
static void on_alua_request(struct ha_gwlink *g, const Isergw__Ctl__AluaChangeRequest *r)
{
	const struct ha_doc *d = g->a->sm.doc;
	char err[256] = "";
	int node = -1;
	int64_t rc;

	for (size_t i = 0; i < r->n_groups; i++) {
		if (r->groups[i]->state != ISERGW__CTL__ALUA_STATE__ALUA_AO)
			continue;
		for (size_t n = 0; n < d->nnodes; n++)
			if (d->nodes[n].tpg_id == r->groups[i]->tpg_id)
				node = (int)n;
	}
	GW_NOTICE(COMP, "SET TARGET PORT GROUPS from %s (LUN %" PRIu64 ", device group %s): "
		  "wants %s Active/Optimized", r->initiator_port, r->lun, r->device_group,
		  node >= 0 ? d->nodes[node].name : "no node's group");
	if (node < 0) {
		alua_done(g, r->request_id, -EINVAL, "only a move of the device group to one node's "
			  "target port group (Active/Optimized) is supported");
		return;
	}
	rc = ha_sm_submit_host_move(&g->a->sm, r->device_group, d->nodes[node].name, gw_now_ms(),
				    err, sizeof(err));
	if (rc == -EALREADY)
		return; /* the states match already: isergwd completes it */
	if (rc < 0) {
		GW_WARN(COMP, "SET TARGET PORT GROUPS refused: %s", err);
		alua_done(g, r->request_id, rc == -EAGAIN || rc == -ENOLCK ? -EAGAIN : (int)rc, err);
	}
	/* otherwise the command completes when the states match (SetAluaMap) */
}

/* ------------------------------------------------------------ the LU state */

void ha_gwlink_lu_done(struct ha_gwlink *g, uint64_t proposal_id, int status, const char *why)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__LuStateDone dn = ISERGW__CTL__LU_STATE_DONE__INIT;

	dn.proposal_id = proposal_id;
	dn.status = status;
	dn.reason = (char *)(uintptr_t)(why ? why : "");
	req.op_case = ISERGW__CTL__REQUEST__OP_LU_STATE_DONE;
	req.lu_state_done = &dn;
	gw_send(g, &req, S_LUDONE, 0);
}

void ha_gwlink_lu_apply(struct ha_gwlink *g, const uint8_t naa[16], uint64_t version,
			const uint8_t *state, size_t len, const uint8_t *events, size_t evlen,
			uint32_t origin, uint64_t proposal_id)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__LuStateApply ap = ISERGW__CTL__LU_STATE_APPLY__INIT;
	Isergw__Ctl__LuStateApply *ev = NULL;
	Isergw__Ctl__LuState *st = NULL;
	struct lu_pend p = { .origin = origin, .proposal_id = proposal_id, .version = version };
	int rc = -EINVAL;

	memcpy(p.naa, naa, 16);
	if (!g->connected) {
		/* the UAs for this node's nexuses wait for the isergwd to come */
		if (origin)
			ha_sm_lu_park_own(&g->a->sm, naa, version, events, evlen);
		ha_sm_lu_gw_applied(&g->a->sm, origin, proposal_id, naa, version, -ENOTCONN);
		return;
	}
	st = isergw__ctl__lu_state__unpack(NULL, len, state);
	if (evlen)
		ev = isergw__ctl__lu_state_apply__unpack(NULL, evlen, events);
	if (!st || (evlen && !ev)) {
		GW_ERR(COMP, "an LU state (version %" PRIu64 ") does not decode: not pushed", version);
		goto out;
	}
	st->version = version;
	if (st->naa.len != 16 || memcmp(st->naa.data, naa, 16)) {
		GW_ERR(COMP, "an LU state (version %" PRIu64 ") names another LU: not pushed", version);
		goto out;
	}
	ap.state = st;
	if (ev) {
		ap.events = ev->events;
		ap.n_events = ev->n_events;
	}
	ap.own = origin && origin == g->a->sm.nodeid;
	ap.initial = origin == 0;
	req.op_case = ISERGW__CTL__REQUEST__OP_LU_STATE_APPLY;
	req.lu_state_apply = &ap;
	/* the slot gw_send fills: who waits for the answer */
	if (g->nsent < SENT_MAX)
		g->sent[(g->sent_head + g->nsent) % SENT_MAX].lu = p;
	rc = gw_send(g, &req, S_LUAPPLY, 0);
out:
	if (st)
		isergw__ctl__lu_state__free_unpacked(st, NULL);
	if (ev)
		isergw__ctl__lu_state_apply__free_unpacked(ev, NULL);
	if (rc)
		ha_sm_lu_gw_applied(&g->a->sm, origin, proposal_id, naa, version, rc);
}

#define HANDOVER_MAX 128u        /* parked UAs per LuStateApply (isergwd takes 144 events) */

/*
 * The i-th LU's state with the unit attentions parked for this node while
 * it was away (away: isergwd queues them even when it holds this version).
 * 1 when some were sent, 0 when there were none, or a negative errno.
 */
static int handover_one(struct ha_gwlink *g, size_t i)
{
	const struct ha_lu *lu = &g->a->sm.lus.v[i];
	struct ha_lu_parked pk[HANDOVER_MAX];
	Isergw__Ctl__LuEvent ev[HANDOVER_MAX], *evp[HANDOVER_MAX];
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__LuStateApply ap = ISERGW__CTL__LU_STATE_APPLY__INIT;
	Isergw__Ctl__LuState *st;
	struct lu_pend p = { .version = lu->version };
	size_t n = ha_sm_lu_parked_for(&g->a->sm, i, pk, HANDOVER_MAX);
	int rc;

	if (!n)
		return 0;
	st = isergw__ctl__lu_state__unpack(NULL, lu->len, lu->state);
	if (!st)
		return -EINVAL;
	st->version = lu->version;
	memcpy(p.naa, lu->naa, 16);
	for (size_t k = 0; k < n; k++) {
		isergw__ctl__lu_event__init(&ev[k]);
		ev[k].kind = 2;         /* one nexus */
		ev[k].asc = pk[k].asc;
		ev[k].rel_port = pk[k].rel_port;
		ev[k].iport = pk[k].iport;
		evp[k] = &ev[k];
		if (pk[k].version > p.parked_upto)
			p.parked_upto = pk[k].version;
	}
	ap.state = st;
	ap.events = evp;
	ap.n_events = n;
	ap.away = true;
	req.op_case = ISERGW__CTL__REQUEST__OP_LU_STATE_APPLY;
	req.lu_state_apply = &ap;
	if (g->nsent < SENT_MAX)
		g->sent[(g->sent_head + g->nsent) % SENT_MAX].lu = p;
	rc = gw_send(g, &req, S_LUAPPLY, 0);
	isergw__ctl__lu_state__free_unpacked(st, NULL);
	if (rc)
		return rc;
	GW_NOTICE(COMP, "%zu unit attention(s) raised while this node was away handed to isergwd "
		  "(LU version %" PRIu64 ")", n, lu->version);
	return 1;
}

/* Every LU state the agent holds, to an isergwd that just took a configuration. */
static void push_lus(struct ha_gwlink *g)
{
	const struct ha_lus *l = &g->a->sm.lus;

	g->lus_pushed = true;
	for (size_t i = 0; i < l->n && g->connected; i++) {
		if (handover_one(g, i) > 0)
			continue;
		ha_gwlink_lu_apply(g, l->v[i].naa, l->v[i].version, l->v[i].state, l->v[i].len,
				   NULL, 0, 0, 0);
	}
}

void ha_gwlink_lu_handover(struct ha_gwlink *g)
{
	const struct ha_lus *l = &g->a->sm.lus;

	/* before isergwd took a configuration, push_lus hands them over */
	if (!g->connected || !g->lus_pushed)
		return;
	for (size_t i = 0; i < l->n && g->connected; i++)
		(void)handover_one(g, i);
}

/* A command of isergwd's changed an LU's state: to the group. */
static void on_lu_proposal(struct ha_gwlink *g, const Isergw__Ctl__LuStateProposal *p)
{
	Isergw__Ctl__LuStateApply evs = ISERGW__CTL__LU_STATE_APPLY__INIT;
	uint8_t *state = NULL, *events = NULL;
	size_t len, evlen;
	char err[256] = "";
	int rc = -EINVAL;

	if (!p->state || p->state->naa.len != 16) {
		snprintf(err, sizeof(err), "a proposal without an LU");
		goto out;
	}
	len = isergw__ctl__lu_state__get_packed_size(p->state);
	state = malloc(len + 1);
	evs.events = p->events;
	evs.n_events = p->n_events;
	evlen = isergw__ctl__lu_state_apply__get_packed_size(&evs);
	events = malloc(evlen + 1);
	if (!state || !events) {
		rc = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	isergw__ctl__lu_state__pack(p->state, state);
	isergw__ctl__lu_state_apply__pack(&evs, events);
	rc = (int)ha_sm_lu_propose(&g->a->sm, p->proposal_id, p->state->naa.data,
				   p->state->version, state, len, events, evlen, err, sizeof(err));
out:
	if (rc) {
		GW_WARN(COMP, "LU state proposal %" PRIu64 " of isergwd not sent: %s", p->proposal_id,
			err);
		ha_gwlink_lu_done(g, p->proposal_id, rc, err);
	}
	free(state);
	free(events);
}

/* A COMPARE AND WRITE or WRITE ATOMIC of isergwd's wants (or gives back) an LBA lock. */
static void on_lu_lock(struct ha_gwlink *g, const Isergw__Ctl__LuLockRequest *r)
{
	char err[256] = "";
	int rc = -EINVAL;

	if (r->naa.len == 16 && r->lock_id)
		rc = ha_sm_lu_lock(&g->a->sm, r->lock_id, r->naa.data, r->lba, r->blocks, r->release,
				   err, sizeof(err));
	else
		snprintf(err, sizeof(err), "a lock request without an LU or an id");
	if (rc && !r->release) {
		GW_WARN(COMP, "LBA lock %" PRIu64 " of isergwd not asked: %s", r->lock_id, err);
		ha_gwlink_lu_done(g, r->lock_id, rc, err);
	} else if (rc) {
		GW_WARN(COMP, "LBA lock %" PRIu64 " of isergwd: the release did not go out: %s",
			r->lock_id, err);
	}
}

/* ------------------------------------------------------------ receiving */

/*
 * isergwd's LUNs that serve and those that do not (GetStatus), for the data
 * plane's health (ha_sm_gw_luns): every LUN_POLL_MS while connected.
 */
void ha_gwlink_poll(struct ha_gwlink *g, uint64_t now)
{
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__GetStatus gs = ISERGW__CTL__GET_STATUS__INIT;

	if (!g || !g->connected || g->polling || !g->epoch || now - g->polled_ms < LUN_POLL_MS)
		return;
	req.op_case = ISERGW__CTL__REQUEST__OP_GET_STATUS;
	req.get_status = &gs;
	if (!gw_send(g, &req, S_STATUS, 0)) {
		g->polling = true;
		g->polled_ms = now;
	}
}

static void on_status(struct ha_gwlink *g, const Isergw__Ctl__StatusInfo *si)
{
	struct ha_lun_fault *f = calloc(si->n_lun_faults + 1, sizeof(*f));

	if (!f)
		return;
	for (size_t i = 0; i < si->n_lun_faults; i++) {
		const Isergw__Ctl__LunFault *p = si->lun_faults[i];

		snprintf(f[i].target, sizeof(f[i].target), "%s", p->target);
		f[i].lun = p->lun;
		snprintf(f[i].dg, sizeof(f[i].dg), "%s", p->device_group);
		snprintf(f[i].state, sizeof(f[i].state), "%s", p->state);
		snprintf(f[i].reason, sizeof(f[i].reason), "%s", p->reason);
	}
	ha_sm_gw_luns(&g->a->sm, si->luns_online, si->lun_faults_total, f, si->n_lun_faults,
		      gw_now_ms());
	free(f);
}

static void on_reply(struct ha_gwlink *g, CtlReply *rep)
{
	enum sent_kind kind;
	struct lu_pend lp;
	uint64_t gen;

	if (ctl_reply_is_event(rep)) {
		if (rep->event->kind_case == ISERGW__CTL__EVENT__KIND_ALUA_CHANGE_REQUEST)
			on_alua_request(g, rep->event->alua_change_request);
		if (rep->event->kind_case == ISERGW__CTL__EVENT__KIND_LU_STATE_PROPOSAL)
			on_lu_proposal(g, rep->event->lu_state_proposal);
		if (rep->event->kind_case == ISERGW__CTL__EVENT__KIND_LU_LOCK_REQUEST)
			on_lu_lock(g, rep->event->lu_lock_request);
		if (rep->event->dropped)
			GW_WARN(COMP, "isergwd dropped %" PRIu64 " event(s) for the agent",
				rep->event->dropped);
		return;
	}
	if (!g->nsent) {
		GW_WARN(COMP, "isergwd sent a reply nobody asked for: ignored");
		return;
	}
	kind = g->sent[g->sent_head].kind;
	gen = g->sent[g->sent_head].gen;
	lp = g->sent[g->sent_head].lu;
	g->sent_head = (g->sent_head + 1) % SENT_MAX;
	g->nsent--;
	switch (kind) {
	case S_CONFIG:
		if (rep->status) {
			GW_ERR(COMP, "isergwd refused the configuration of generation %" PRIu64 ": %s",
			       gen, rep->error);
			push_done(g, gen, rep->status, rep->error);
			break;
		}
		if (rep->payload_case == ISERGW__CTL__REPLY__PAYLOAD_APPLY && rep->apply->changed)
			GW_NOTICE(COMP, "isergwd took the configuration of generation %" PRIu64, gen);
		g->epoch = g->config_gen = gen;
		/* the LU states before the ALUA states and the lease: nothing served stale */
		push_lus(g);
		if (g->a->sm.doc->generation != gen || !g->a->sm.doc->ndgs) {
			/* superseded meanwhile, or no device group: done with this one */
			push_done(g, gen, 0, NULL);
			break;
		}
		push_alua(g, gen, 0, -1);
		break;
	case S_LUN:
		if (rep->status) {
			push_whole(g, "LUN change", gen, rep->error);
			break;
		}
		g->epoch = g->config_gen = gen;
		push_done(g, gen, 0, NULL);
		break;
	case S_PLACE:
		if (rep->status) {
			push_whole(g, "placement", gen, rep->error);
			break;
		}
		g->epoch = gen;
		/* an older isergwd serves the map but keeps its configuration's epoch */
		if (rep->payload_case == ISERGW__CTL__REPLY__PAYLOAD_ALUA_MAP &&
		    rep->alua_map->config_epoch == gen)
			g->config_gen = gen;
		GW_INFO(COMP, "isergwd took generation %" PRIu64 " as its ALUA map alone%s", gen,
			g->config_gen == gen ? "" : " (its configuration stays older)");
		push_done(g, gen, 0, NULL);
		break;
	case S_ALUA:
		if (rep->status)
			GW_ERR(COMP, "isergwd refused the ALUA map of generation %" PRIu64 ": %s", gen,
			       rep->error);
		push_done(g, gen, rep->status, rep->error);
		break;
	case S_LEASE:
	case S_LUDONE:
		if (rep->status)
			GW_WARN(COMP, "isergwd refused %s: %s",
				kind == S_LEASE ? "the lease" : "an LU state answer", rep->error);
		break;
	case S_LUAPPLY:
		if (rep->status && rep->status != -ENOENT)
			GW_WARN(COMP, "isergwd refused an LU state (version %" PRIu64 "): %s",
				lp.version, rep->error);
		if (lp.parked_upto && (!rep->status || rep->status == -EALREADY))
			ha_sm_lu_parked_taken(&g->a->sm, lp.naa, lp.parked_upto);
		ha_sm_lu_gw_applied(&g->a->sm, lp.origin, lp.proposal_id, lp.naa, lp.version,
				    rep->status == -EALREADY ? 0 : rep->status);
		break;
	case S_STATUS:
		g->polling = false;
		if (!rep->status && rep->payload_case == ISERGW__CTL__REPLY__PAYLOAD_STATUS_INFO)
			on_status(g, rep->status_info);
		break;
	case S_STEPDOWN:
	case S_DONE:
		if (rep->status && kind == S_STEPDOWN)
			GW_WARN(COMP, "isergwd refused to step down: %s", rep->error);
		break;
	case S_SUBSCRIBE:
		if (rep->status)
			GW_ERR(COMP, "cannot subscribe to isergwd's events: %s", rep->error);
		else if (strcmp(rep->subscribed->alua_policy, "external"))
			GW_WARN(COMP, "isergwd's alua_policy is %s, not external",
				rep->subscribed->alua_policy);
		/* an older isergwd gets a changed live set as the whole configuration */
		g->map_fences = !rep->status && rep->subscribed->map_fences;
		break;
	}
	if (g->want)
		push_next(g);
}

static void gw_cb(void *arg, uint32_t events)
{
	struct ha_gwlink *g = arg;
	char err[256];
	CtlReply *rep;
	int rc;

	if (events & EPOLLOUT)
		gw_flush(g);
	if (!g->connected || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	for (;;) {
		rc = gw_frame_rx_read(&g->rx, g->fd, CTL_FRAME_MAX);
		if (rc == 0)
			return;
		if (rc < 0) {
			gw_disconnect(g, rc == -ENOTCONN ? "isergwd closed the control socket" :
				      strerror(-rc));
			return;
		}
		rc = ctl_reply_decode(g->rx.body, g->rx.len, &rep, err, sizeof(err));
		gw_frame_rx_reset(&g->rx);
		if (rc) {
			GW_WARN(COMP, "bad frame from isergwd: %s", err);
			gw_disconnect(g, "protocol error");
			return;
		}
		on_reply(g, rep);
		ctl_reply_free(rep);
		if (!g->connected)
			return;
	}
}

/* ------------------------------------------------------------ connection */

static void gw_disconnect(struct ha_gwlink *g, const char *why)
{
	if (!g->connected)
		return;
	if (g->a->stopping)
		GW_INFO(COMP, "leaving isergwd's control socket %s", g->a->opts.gw_socket);
	else
		GW_WARN(COMP, "lost isergwd's control socket %s: %s", g->a->opts.gw_socket, why);
	reactor_del_fd(g->a->r, &g->h);
	close(g->fd);
	g->fd = -1;
	g->connected = false;
	g->lus_pushed = false;
	g->map_fences = false;
	gw_frame_rx_reset(&g->rx);
	while (!list_empty(&g->txq)) {
		struct txbuf *t = list_first_entry(&g->txq, struct txbuf, link);

		list_del(&t->link);
		free(t->buf);
		free(t);
	}
	/* the LU states on their way: this node's isergwd gets them all again on connect */
	for (size_t i = 0; i < g->nsent; i++) {
		const struct lu_pend *p = &g->sent[(g->sent_head + i) % SENT_MAX].lu;

		if (g->sent[(g->sent_head + i) % SENT_MAX].kind == S_LUAPPLY)
			ha_sm_lu_gw_applied(&g->a->sm, p->origin, p->proposal_id, p->naa, p->version,
					    -ENOTCONN);
	}
	g->nsent = 0;
	g->polling = false;
	g->pushing_gen = 0;
	g->pushed_gen = 0;
	ha_sm_gw_lost(&g->a->sm);
	ha_sm_lu_gw_lost(&g->a->sm);
	if (!g->a->stopping)
		reactor_timer_arm(g->a->r, &g->reconnect, RECONNECT_MS);
}

/* The socket file was created (or moved) in its directory: try now. */
static void ino_cb(void *arg, uint32_t events)
{
	struct ha_gwlink *g = arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool ours = false;
	ssize_t n;

	(void)events;
	while ((n = read(g->ino_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)(void *)p;

			/* an overflowed queue may have lost ours */
			if ((ev->len && !strcmp(ev->name, g->sock_name)) || (ev->mask & IN_Q_OVERFLOW))
				ours = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	if (!ours || g->connected || g->a->stopping)
		return;
	GW_INFO(COMP, "isergwd's control socket %s appeared: connecting", g->a->opts.gw_socket);
	g->fast_tries = RECONNECT_FAST_TRIES;
	reactor_timer_arm(g->a->r, &g->reconnect, 0);
}

/* Watch the socket's directory (again: it may not have existed before). */
static void ino_watch(struct ha_gwlink *g)
{
	char dir[HA_SOCK_PATH_MAX];

	if (g->ino_fd < 0)
		return;
	memcpy(dir, g->a->opts.gw_socket, strlen(g->a->opts.gw_socket) + 1);
	if (inotify_add_watch(g->ino_fd, dirname(dir), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0 &&
	    errno != ENOENT)
		GW_DEBUG(COMP, "cannot watch the directory of %s: %s", g->a->opts.gw_socket,
			 strerror(errno));
}

static void reconnect_cb(void *arg)
{
	struct ha_gwlink *g = arg;
	CtlRequest req = ISERGW__CTL__REQUEST__INIT;
	Isergw__Ctl__Subscribe sub = ISERGW__CTL__SUBSCRIBE__INIT;
	int fd = -1, rc;

	rc = gw_ipc_connect_start(g->a->opts.gw_socket, &fd);
	if (rc) {
		if (!g->logged_down)
			GW_NOTICE(COMP, "isergwd's control socket %s not there (%s): trying every %u ms "
				  "and when it appears", g->a->opts.gw_socket, strerror(-rc),
				  RECONNECT_MS);
		g->logged_down = true;
		if (fd >= 0)
			close(fd);
		ino_watch(g);
		if (g->fast_tries) {
			g->fast_tries--;
			reactor_timer_arm(g->a->r, &g->reconnect, RECONNECT_FAST_MS);
		} else {
			reactor_timer_arm(g->a->r, &g->reconnect, RECONNECT_MS);
		}
		return;
	}
	if (reactor_add_fd(g->a->r, &g->h, fd, EPOLLIN, gw_cb, g)) {
		close(fd);
		reactor_timer_arm(g->a->r, &g->reconnect, RECONNECT_MS);
		return;
	}
	g->fd = fd;
	g->connected = true;
	g->logged_down = false;
	g->fast_tries = 0;
	g->nsent = 0;
	g->sent_head = 0;
	GW_NOTICE(COMP, "connected to isergwd (%s)", g->a->opts.gw_socket);
	req.op_case = ISERGW__CTL__REQUEST__OP_SUBSCRIBE;
	req.subscribe = &sub;
	gw_send(g, &req, S_SUBSCRIBE, 0);
	/* it holds nothing we can trust: the whole current state again */
	g->want = true;
	push_next(g);
}

int ha_gwlink_start(struct ha_agent *a, struct ha_gwlink **out)
{
	struct ha_gwlink *g = calloc(1, sizeof(*g));
	char path[HA_SOCK_PATH_MAX];
	int rc;

	if (!g)
		return -ENOMEM;
	if (strlen(a->opts.gw_socket) >= GW_IPC_PATH_MAX) {
		free(g);
		return -ENAMETOOLONG;
	}
	g->a = a;
	g->fd = -1;
	memcpy(path, a->opts.gw_socket, strlen(a->opts.gw_socket) + 1);
	snprintf(g->sock_name, sizeof(g->sock_name), "%s", basename(path));
	/* without inotify the link only polls (every RECONNECT_MS) */
	g->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	rc = g->ino_fd < 0 ? -errno : reactor_add_fd(a->r, &g->ino_h, g->ino_fd, EPOLLIN, ino_cb, g);
	if (rc) {
		GW_WARN(COMP, "no inotify (%s): isergwd's control socket is only polled every %u ms",
			strerror(-rc), RECONNECT_MS);
		if (g->ino_fd >= 0)
			close(g->ino_fd);
		g->ino_fd = -1;
	}
	ino_watch(g);
	list_init(&g->txq);
	gw_frame_rx_init(&g->rx);
	reactor_timer_init(&g->reconnect, reconnect_cb, g);
	/* at once: isergwd works on the push while the agent joins the group */
	reconnect_cb(g);
	*out = g;
	return 0;
}

bool ha_gwlink_connected(const struct ha_gwlink *g)
{
	return g && g->connected;
}

uint64_t ha_gwlink_epoch(const struct ha_gwlink *g)
{
	return g ? g->pushed_gen : 0;
}

void ha_gwlink_stop(struct ha_gwlink *g)
{
	if (!g)
		return;
	g->a->stopping = true;
	gw_disconnect(g, "the agent is stopping");
	reactor_timer_cancel(g->a->r, &g->reconnect);
	if (g->ino_fd >= 0) {
		reactor_del_fd(g->a->r, &g->ino_h);
		close(g->ino_fd);
	}
	free(g);
}
