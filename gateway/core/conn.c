/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connections: the login phase, full-feature PDU dispatch, NOP pings,
 * Logout, Text, Reject, and teardown.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/iscsi.h"
#include "core/pdu.h"
#include "common/bufpool.h"
#include "common/log.h"

#define COMP "conn"

static void conn_free_now(void *arg);

/* PDUs come from the reactor's cache: no allocator call per Data-In, R2T or NOP. */
static _Thread_local struct gw_obj_cache tl_pdu_cache =
	GW_OBJ_CACHE_INIT(sizeof(struct iscsi_tx_pdu), 512);

struct iscsi_tx_pdu *iscsi_tx_pdu_alloc(void)
{
	struct iscsi_tx_pdu *pdu = gw_obj_get(&tl_pdu_cache);

	if (pdu)
		gw_zero(pdu, sizeof(*pdu));
	return pdu;
}

/* A PDU of our own with opcode op and the F bit, the rest of its header zero; NULL without memory. */
static struct iscsi_tx_pdu *conn_pdu_new(uint8_t op)
{
	struct iscsi_tx_pdu *pdu = iscsi_tx_pdu_alloc();

	if (pdu) {
		pdu->bhs.opcode = op;
		pdu->bhs.flags = ISCSI_FLAG_FINAL;
	}
	return pdu;
}

void iscsi_tx_pdu_free(struct iscsi_tx_pdu *pdu)
{
	if (!pdu)
		return;
	free(pdu->owned);
	gw_obj_put(&tl_pdu_cache, pdu);
}

/*
 * Gives pdu its own copy of data[0..len) (freed with the PDU) as its data
 * segment, and sets DataSegmentLength. -ENOMEM leaves pdu as it was.
 */
static int pdu_set_data_copy(struct iscsi_tx_pdu *pdu, const void *data, uint32_t len)
{
	uint8_t *copy = NULL;

	if (len) {
		copy = malloc(len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, data, len);
	}
	pdu->data = copy;
	pdu->data_len = len;
	pdu->owned = copy;
	iscsi_bhs_set_dsl(&pdu->bhs, len);
	return 0;
}

void iscsi_conn_get(struct iscsi_conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void iscsi_conn_put(struct iscsi_conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1) {
		/* last reference: free on the owning reactor, after this event batch */
		if (reactor_self() == c->reactor)
			reactor_defer(c->reactor, &c->free_work);
		else
			reactor_send_msg(c->reactor, conn_free_now, c);
	}
}

/* The count of the lines about c's PDUs that its window held back (when it ends). */
static void conn_log_quiet(struct iscsi_conn *c, uint64_t quiet, bool closing)
{
	if (quiet && closing)
		GW_NOTICE(COMP, "%s (%s): %" PRIu64 " more lines about its PDUs not written before "
			  "it closed", c->peer, c->sess ? c->sess->initiator : "login", quiet);
	else if (quiet)
		GW_NOTICE(COMP, "%s (%s): %" PRIu64 " more lines about its PDUs not written in %u s",
			  c->peer, c->sess ? c->sess->initiator : "login", quiet, ISCSI_CONN_LOG_S);
}

bool iscsi_conn_log_room(struct iscsi_conn *c)
{
	conn_log_quiet(c, gw_log_window_roll(&c->log, reactor_now_us() / 1000,
					     ISCSI_CONN_LOG_S * 1000), false);
	return gw_log_window_take(&c->log, ISCSI_CONN_LOG_LINES);
}

static bool conn_text_log_room(void *ctx)
{
	return iscsi_conn_log_room(ctx);
}

int iscsi_conn_admit(struct gw *gw, const char *peer, struct iscsi_admission *a)
{
	uint32_t max;
	int rc;

	a->counted = false;
	pthread_mutex_lock(&gw->sess_lock);
	max = gw->cfg->max_logins_per_address;  /* as the last reload left it */
	pthread_mutex_unlock(&gw->sess_lock);
	rc = gw_login_slot_take(&gw->login_slots, peer, max, a->key);
	if (rc < 0)
		return rc;
	a->counted = rc > 0;
	return 0;
}

void iscsi_conn_admit_cancel(struct gw *gw, struct iscsi_admission *a)
{
	if (!a || !a->counted)
		return;
	a->counted = false;
	gw_login_slot_put(&gw->login_slots, a->key);
}

/* The connection no longer counts as logging in from its address. */
static void conn_login_slot_put(struct iscsi_conn *c)
{
	iscsi_conn_admit_cancel(c->gw, &c->adm);
}

static void conn_free_now(void *arg)
{
	struct iscsi_conn *c = arg;

	conn_login_slot_put(c);
	conn_log_quiet(c, c->log.quiet, true);
	reactor_timer_cancel(c->reactor, &c->login_timer);
	reactor_timer_cancel(c->reactor, &c->nop_timer);
	reactor_timer_cancel(c->reactor, &c->logout_timer);
	iscsi_login_destroy(c->login);
	iscsi_text_destroy(c->text);
	if (c->sess)
		iscsi_task_sets_fini(c->sess);
	free(c->sess);
	atomic_fetch_sub(&c->gw->stats.connections, 1);
	free(c);
}

uint32_t iscsi_conn_exp_cmd_sn(const struct iscsi_conn *c)
{
	return c->sess ? c->sess->exp_cmd_sn : 0;
}

uint32_t iscsi_conn_max_cmd_sn(const struct iscsi_conn *c)
{
	const struct iscsi_session *s = c->sess;
	uint32_t depth;

	if (!s)
		return 0;
	depth = s->queue_depth > c->ntasks ? s->queue_depth - c->ntasks : 1;
	return s->exp_cmd_sn + depth - 1;
}

int iscsi_conn_send(struct iscsi_conn *c, struct iscsi_tx_pdu *pdu, bool advance_stat_sn)
{
	uint8_t *b = (uint8_t *)&pdu->bhs;
	uint8_t op = iscsi_bhs_opcode(&pdu->bhs);
	int rc;

	/* StatSN / ExpCmdSN / MaxCmdSN sit at bytes 24, 28, 32 of every target PDU */
	if (op != ISCSI_OP_DATA_IN || advance_stat_sn)
		put_be32(b + 24, c->stat_sn);
	put_be32(b + 28, iscsi_conn_exp_cmd_sn(c));
	put_be32(b + 32, iscsi_conn_max_cmd_sn(c));
	if (advance_stat_sn)
		c->stat_sn++;
	if (c->state == CONN_STATE_CLOSING) {
		if (pdu->sent)
			pdu->sent(pdu, -ECONNRESET);
		else
			iscsi_tx_pdu_free(pdu);
		return -ECONNRESET;
	}
	rc = c->dm->send_control(c, pdu);
	if (rc) {
		if (pdu->sent)
			pdu->sent(pdu, rc);
		else
			iscsi_tx_pdu_free(pdu);
	}
	return rc;
}

void iscsi_conn_reject(struct iscsi_conn *c, const struct iscsi_bhs *bad, uint8_t reason)
{
	struct iscsi_tx_pdu *pdu = iscsi_tx_pdu_alloc();
	struct iscsi_reject *r;

	atomic_fetch_add(&c->gw->stats.rejects, 1);
	if (iscsi_conn_log_room(c))
		GW_WARN(COMP, "%s (%s): rejecting %s (opcode 0x%02x, ITT 0x%08x): reason 0x%02x",
			c->peer, c->sess ? c->sess->initiator : "-",
			iscsi_opcode_name(bad->opcode), bad->opcode & ISCSI_OPCODE_MASK,
			be32toh(bad->itt), reason);
	if (!pdu)
		return;
	if (pdu_set_data_copy(pdu, bad, ISCSI_BHS_LEN)) {
		iscsi_tx_pdu_free(pdu);
		return;
	}
	r = (struct iscsi_reject *)&pdu->bhs;
	r->opcode = ISCSI_OP_REJECT;
	r->flags = ISCSI_FLAG_FINAL;
	r->reason = reason;
	r->itt = ISCSI_RSVD_TAG;
	iscsi_conn_send(c, pdu, true);
}

static void conn_terminate(struct iscsi_conn *c)
{
	if (c->state == CONN_STATE_CLOSING)
		return;
	c->state = CONN_STATE_CLOSING;
	conn_login_slot_put(c);
	reactor_timer_cancel(c->reactor, &c->login_timer);
	reactor_timer_cancel(c->reactor, &c->nop_timer);
	reactor_timer_cancel(c->reactor, &c->logout_timer);
	c->dm->terminate(c);
}

void iscsi_conn_close(struct iscsi_conn *c)
{
	conn_terminate(c);
}

/* A dropped connection: counted, logged once at lvl as "PEER (INITIATOR): what", ended. */
static void conn_drop_at(struct iscsi_conn *c, enum gw_log_level lvl, const char *what,
			 const char *why)
{
	if (c->state == CONN_STATE_CLOSING)
		return;
	atomic_fetch_add(&c->gw->stats.conn_drops, 1);
	gw_log(lvl, COMP, "%s (%s): %s%s", c->peer, c->sess ? c->sess->initiator : "login", what,
	       why);
	conn_terminate(c);
}

void iscsi_conn_drop(struct iscsi_conn *c, const char *why)
{
	conn_drop_at(c, GW_LOG_WARN, "dropping connection: ", why);
}

void iscsi_conn_peer_closed(struct iscsi_conn *c)
{
	conn_drop_at(c, GW_LOG_NOTICE, "connection closed by the initiator without logout", "");
}

static void conn_login_timeout(void *arg)
{
	struct iscsi_conn *c = arg;
	char why[96];

	snprintf(why, sizeof(why), "login not completed within %u s",
		 c->cfg->login_timeout_s);
	iscsi_conn_drop(c, why);
}

static void conn_nop_timer(void *arg)
{
	struct iscsi_conn *c = arg;
	const struct gw_config *cfg = c->cfg;
	uint64_t now = gw_now_ms();
	struct iscsi_tx_pdu *pdu;
	struct iscsi_nop_in *n;

	if (c->state != CONN_STATE_FFP)
		return;
	if (c->nop_ttt != ISCSI_RSVD_TAG &&
	    now - c->nop_sent_ms >= (uint64_t)cfg->nop_timeout_s * 1000u &&
	    now - c->last_rx_ms >= (uint64_t)cfg->nop_timeout_s * 1000u) {
		char why[96];

		snprintf(why, sizeof(why), "no answer to NOP-In for %u s", cfg->nop_timeout_s);
		iscsi_conn_drop(c, why);
		return;
	}
	if (c->nop_ttt == ISCSI_RSVD_TAG &&
	    now - c->last_rx_ms >= (uint64_t)cfg->nop_interval_s * 1000u) {
		pdu = conn_pdu_new(ISCSI_OP_NOP_IN);
		if (pdu) {
			n = (struct iscsi_nop_in *)&pdu->bhs;
			n->itt = ISCSI_RSVD_TAG;
			c->nop_ttt = c->next_ttt++ & 0x7fffffffu;
			n->ttt = htobe32(c->nop_ttt);
			c->nop_sent_ms = now;
			iscsi_conn_send(c, pdu, false);
		}
	}
	reactor_timer_arm(c->reactor, &c->nop_timer, 1000);
}

static void conn_logout_timeout(void *arg)
{
	struct iscsi_conn *c = arg;
	char why[96];

	snprintf(why, sizeof(why), "did not log out within %u s as requested", c->logout_grace_s);
	iscsi_conn_drop(c, why);
}

int iscsi_conn_create(struct gw_portal *p, struct reactor *r, void *dm_priv,
		      struct iscsi_admission *a, struct iscsi_conn **out)
{
	struct iscsi_login_env env;
	struct iscsi_conn *c;
	int rc;

	c = calloc(1, sizeof(*c));
	if (!c) {
		iscsi_conn_admit_cancel(p->gw, a);
		return -ENOMEM;
	}
	c->gw = p->gw;
	if (a) {                        /* the slot is the connection's now */
		c->adm = *a;
		a->counted = false;
	}
	memset(&env, 0, sizeof(env));
	pthread_mutex_lock(&p->gw->sess_lock);
	c->cfg = p->gw->cfg;
	env.portal = p->cfg;            /* both as the last reload left them */
	pthread_mutex_unlock(&p->gw->sess_lock);
	c->portal = p;
	c->reactor = r;
	c->dm = p->dm;
	c->dm_priv = dm_priv;
	c->state = CONN_STATE_LOGIN;
	atomic_init(&c->refs, 1);
	c->nop_ttt = ISCSI_RSVD_TAG;
	c->next_ttt = 1;
	c->last_rx_ms = gw_now_ms();
	list_init(&c->tasks);
	list_init(&c->tmfs);
	reactor_deferred_init(&c->free_work, conn_free_now, c);
	reactor_timer_init(&c->login_timer, conn_login_timeout, c);
	reactor_timer_init(&c->nop_timer, conn_nop_timer, c);
	reactor_timer_init(&c->logout_timer, conn_logout_timeout, c);
	c->dm->addrs(c, c->peer, sizeof(c->peer), c->local, sizeof(c->local));

	env.cfg = c->cfg;
	env.transport = p->dm->transport;
	snprintf(env.peer_addr, sizeof(env.peer_addr), "%s", c->peer);
	snprintf(env.local_addr, sizeof(env.local_addr), "%s", c->local);
	rc = iscsi_login_create(&env, &c->login);
	if (rc)
		goto err_free;
	rc = iscsi_text_create(&c->text);
	if (rc)
		goto err_login;
	if (c->cfg->login_timeout_s)
		reactor_timer_arm(r, &c->login_timer, (uint64_t)c->cfg->login_timeout_s * 1000u);
	atomic_fetch_add(&c->gw->stats.connections, 1);
	GW_INFO(COMP, "%s: new %s connection on portal %s", c->peer, c->dm->name, c->local);
	*out = c;
	return 0;

err_login:
	iscsi_login_destroy(c->login);
err_free:
	conn_login_slot_put(c);
	free(c);
	return rc;
}

void iscsi_conn_closed(struct iscsi_conn *c)
{
	c->state = CONN_STATE_CLOSING;
	conn_login_slot_put(c);
	reactor_timer_cancel(c->reactor, &c->login_timer);
	reactor_timer_cancel(c->reactor, &c->nop_timer);
	reactor_timer_cancel(c->reactor, &c->logout_timer);
	iscsi_conn_abort_tasks(c);
	if (c->sess) {
		GW_NOTICE(COMP, "%s: session %s (TSIH %u) closed", c->peer, c->sess->initiator,
			  c->sess->tsih);
		iscsi_session_unbind(c);
	}
	iscsi_conn_put(c);
}

/* ---------------- login phase ---------------- */

static void login_fail_sent(struct iscsi_tx_pdu *pdu, int status)
{
	struct iscsi_conn *c = pdu->ctx;

	(void)status;
	iscsi_tx_pdu_free(pdu);
	conn_terminate(c);
}

static void conn_rx_login(struct iscsi_conn *c, const struct iscsi_bhs *bhs,
			  const uint8_t *data, uint32_t dlen)
{
	const struct iscsi_login_req *req = (const struct iscsi_login_req *)bhs;
	struct iscsi_login_rsp *rsp;
	struct iscsi_tx_pdu *pdu;
	const uint8_t *rdata = NULL;
	uint32_t rdlen = 0;
	enum iscsi_login_result res;

	if (iscsi_bhs_opcode(bhs) != ISCSI_OP_LOGIN_REQ) {
		iscsi_conn_drop(c, "non-login PDU during login");
		return;
	}
	pdu = iscsi_tx_pdu_alloc();
	if (!pdu) {
		iscsi_conn_drop(c, "out of memory");
		return;
	}
	if (!c->stat_sn && !c->sess)
		c->stat_sn = be32toh(req->exp_stat_sn);
	rsp = (struct iscsi_login_rsp *)&pdu->bhs;
	res = iscsi_login_rx(c->login, req, data, dlen, rsp, &rdata, &rdlen);
	if (pdu_set_data_copy(pdu, rdata, rdlen)) {
		iscsi_tx_pdu_free(pdu);
		iscsi_conn_drop(c, "out of memory");
		return;
	}

	if (res == ISCSI_LOGIN_RES_DONE) {
		int rc = iscsi_session_bind(c);

		if (rc) {
			rsp->flags &= (uint8_t)~(ISCSI_LOGIN_TRANSIT | ISCSI_LOGIN_CSG_MASK |
						ISCSI_LOGIN_NSG_MASK);
			rsp->flags |= (uint8_t)(req->flags & ISCSI_LOGIN_CSG_MASK);
			switch (rc) {
			case -EEXIST: /* a connection to add to a live session: MaxConnections=1 */
				rsp->status_class = ISCSI_LOGIN_STATUS_INIT_ERR;
				rsp->status_detail = ISCSI_LOGIN_DETAIL_TOO_MANY_CONNS;
				break;
			case -ESRCH:
				rsp->status_class = ISCSI_LOGIN_STATUS_INIT_ERR;
				rsp->status_detail = ISCSI_LOGIN_DETAIL_NO_SESSION;
				break;
			case -ENOENT:
				rsp->status_class = ISCSI_LOGIN_STATUS_INIT_ERR;
				rsp->status_detail = ISCSI_LOGIN_DETAIL_TARGET_REMOVED;
				break;
			default:
				rsp->status_class = ISCSI_LOGIN_STATUS_TARGET_ERR;
				rsp->status_detail = ISCSI_LOGIN_DETAIL_NO_RESOURCES;
				break;
			}
			res = ISCSI_LOGIN_RES_FAIL;
		} else {
			rsp->tsih = htobe16(c->sess->tsih);
		}
	}
	if (res == ISCSI_LOGIN_RES_FAIL) {
		atomic_fetch_add(&c->gw->stats.login_failures, 1);
		pdu->sent = login_fail_sent;
		pdu->ctx = c;
		iscsi_conn_send(c, pdu, true);
		/* no more PDUs accepted on this connection */
		c->state = CONN_STATE_LOGGED_OUT;
		return;
	}
	iscsi_conn_send(c, pdu, true);
	if (res == ISCSI_LOGIN_RES_DONE) {
		c->params = *iscsi_login_conn_params(c->login);
		c->cid = iscsi_login_cid(c->login);
		c->login_time = (uint64_t)time(NULL);
		reactor_timer_cancel(c->reactor, &c->login_timer);
		conn_login_slot_put(c);
		c->state = CONN_STATE_FFP;
		if (c->dm->enter_ffp(c)) {
			iscsi_conn_drop(c, "datamover could not enter full feature phase");
			return;
		}
		atomic_fetch_add(&c->gw->stats.logins, 1);
		if (c->cfg->nop_interval_s)
			reactor_timer_arm(c->reactor, &c->nop_timer, 1000);
		GW_NOTICE(COMP, "%s: %s session of %s%s%s logged in (TSIH %u, %s, digests %s/%s, "
			  "MaxRecvDSL %u/%u, burst %u/%u, R2T %s, immediate %s)", c->peer,
			  c->sess->type == ISCSI_SESSION_DISCOVERY ? "discovery" : "normal",
			  c->sess->initiator, c->sess->target ? " to " : "",
			  c->sess->target ? gw_target_cfg(c->sess->target)->iqn : "", c->sess->tsih,
			  c->dm->name,
			  c->params.header_digest ? "CRC32C" : "None",
			  c->params.data_digest ? "CRC32C" : "None", c->params.max_recv_dsl,
			  c->params.max_xmit_dsl, c->sess->params.first_burst, c->sess->params.max_burst,
			  c->sess->params.initial_r2t ? "initial" : "not initial",
			  c->sess->params.immediate_data ? "yes" : "no");
	}
}

/* ---------------- full feature phase ---------------- */

/* CmdSN rules for non-SCSI commands: returns false when the PDU must be ignored. */
static bool conn_cmdsn_ok(struct iscsi_conn *c, const struct iscsi_bhs *bhs, uint32_t cmd_sn)
{
	struct iscsi_session *s = c->sess;
	bool immediate = iscsi_bhs_immediate(bhs);

	switch (iscsi_cmdsn_check(s->exp_cmd_sn, iscsi_conn_max_cmd_sn(c), cmd_sn, immediate)) {
	case ISCSI_CMDSN_NOW:
		if (!immediate) {
			s->exp_cmd_sn++;
			iscsi_session_run_pending(s);
		}
		return true;
	case ISCSI_CMDSN_QUEUE:
		return true; /* ahead of a gap: serve it, the gap's owner advances ExpCmdSN */
	default:
		if (iscsi_conn_log_room(c))
			GW_WARN(COMP, "%s (%s): %s with CmdSN %u outside window [%u, %u]: ignored",
				c->peer, s->initiator, iscsi_opcode_name(bhs->opcode), cmd_sn,
				s->exp_cmd_sn, iscsi_conn_max_cmd_sn(c));
		return false;
	}
}

static void conn_rx_nop_out(struct iscsi_conn *c, const struct iscsi_bhs *bhs,
			    const uint8_t *data, uint32_t dlen)
{
	const struct iscsi_nop_out *req = (const struct iscsi_nop_out *)bhs;
	struct iscsi_tx_pdu *pdu;
	struct iscsi_nop_in *rsp;

	if (req->itt == ISCSI_RSVD_TAG) {
		/* answer to our ping (or an unsolicited one-way NOP-Out) */
		if (req->ttt != ISCSI_RSVD_TAG && be32toh(req->ttt) == c->nop_ttt)
			c->nop_ttt = ISCSI_RSVD_TAG;
		if (!iscsi_bhs_immediate(bhs)) {
			iscsi_conn_reject(c, bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		}
		return;
	}
	if (req->ttt != ISCSI_RSVD_TAG) {
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		return;
	}
	if (!conn_cmdsn_ok(c, bhs, be32toh(req->cmd_sn)))
		return;
	pdu = conn_pdu_new(ISCSI_OP_NOP_IN);
	if (!pdu)
		return;
	rsp = (struct iscsi_nop_in *)&pdu->bhs;
	memcpy(rsp->lun, req->lun, 8);
	rsp->itt = req->itt;
	rsp->ttt = ISCSI_RSVD_TAG;
	/* the ping data comes back; without memory, the answer goes without it */
	(void)pdu_set_data_copy(pdu, data,
				dlen < c->params.max_xmit_dsl ? dlen : c->params.max_xmit_dsl);
	iscsi_conn_send(c, pdu, true);
}

static void logout_sent(struct iscsi_tx_pdu *pdu, int status)
{
	struct iscsi_conn *c = pdu->ctx;

	(void)status;
	iscsi_tx_pdu_free(pdu);
	conn_terminate(c);
}

/* A Logout Response waiting for the cluster to release the session's SCSI-2 reservations. */
struct logout_wait {
	struct iscsi_conn *c;
	struct iscsi_tx_pdu *pdu;
	unsigned int pending;
};

static void logout_wait_done(void *arg);

static void conn_rx_logout(struct iscsi_conn *c, const struct iscsi_bhs *bhs)
{
	const struct iscsi_logout_req *req = (const struct iscsi_logout_req *)bhs;
	uint8_t reason = req->flags & 0x7f;
	struct iscsi_tx_pdu *pdu;
	struct iscsi_logout_rsp *rsp;
	struct logout_wait *w;

	if (!conn_cmdsn_ok(c, bhs, be32toh(req->cmd_sn)))
		return;
	pdu = conn_pdu_new(ISCSI_OP_LOGOUT_RSP);
	if (!pdu) {
		iscsi_conn_drop(c, "out of memory");
		return;
	}
	rsp = (struct iscsi_logout_rsp *)&pdu->bhs;
	rsp->itt = req->itt;
	if (reason == ISCSI_LOGOUT_REMOVE_CONN_RECOVERY) {
		rsp->response = ISCSI_LOGOUT_RSP_NO_RECOVERY;
	} else if (reason == ISCSI_LOGOUT_CLOSE_CONNECTION && be16toh(req->cid) != c->cid) {
		rsp->response = ISCSI_LOGOUT_RSP_NO_CID;
	} else if (reason > ISCSI_LOGOUT_REMOVE_CONN_RECOVERY) {
		iscsi_tx_pdu_free(pdu);
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		return;
	} else {
		rsp->response = ISCSI_LOGOUT_RSP_SUCCESS;
		GW_NOTICE(COMP, "%s: %s logging out (%s)", c->peer, c->sess->initiator,
			  reason == ISCSI_LOGOUT_CLOSE_SESSION ? "close session" : "close connection");
		c->state = CONN_STATE_LOGGED_OUT;
		pdu->sent = logout_sent;
		pdu->ctx = c;
		rsp->time2wait = htobe16((uint16_t)c->sess->params.default_time2wait);
		rsp->time2retain = htobe16((uint16_t)c->sess->params.default_time2retain);
		/* one connection per session: the session and its nexus end here */
		w = calloc(1, sizeof(*w));
		if (w) {
			w->c = c;
			w->pdu = pdu;
			w->pending = 1;
			iscsi_conn_get(c);
		}
		pthread_mutex_lock(&c->gw->sess_lock);
		for (uint32_t i = 0; c->sess->target && i < c->sess->target->nluns; i++)
			if (c->sess->target->luns[i] &&
			    scsi_lu_itn_logout_wait(c->sess->target->luns[i], &c->sess->itn,
						    w ? logout_wait_done : NULL, w))
				w->pending++;
		pthread_mutex_unlock(&c->gw->sess_lock);
		/* the answer once a SCSI-2 release is in force on every node (cluster) */
		if (w) {
			logout_wait_done(w);
			return;
		}
	}
	rsp->time2wait = htobe16((uint16_t)c->sess->params.default_time2wait);
	rsp->time2retain = htobe16((uint16_t)c->sess->params.default_time2retain);
	iscsi_conn_send(c, pdu, true);
}

static void logout_wait_done(void *arg)
{
	struct logout_wait *w = arg;

	if (--w->pending)
		return;
	if (w->c->state == CONN_STATE_LOGGED_OUT)
		iscsi_conn_send(w->c, w->pdu, true);
	else
		iscsi_tx_pdu_free(w->pdu);
	iscsi_conn_put(w->c);
	free(w);
}

static void conn_rx_text(struct iscsi_conn *c, const struct iscsi_bhs *bhs,
			 const uint8_t *data, uint32_t dlen)
{
	const struct iscsi_text_req *req = (const struct iscsi_text_req *)bhs;
	struct iscsi_text_env env;
	struct iscsi_tx_pdu *pdu;
	const uint8_t *rdata = NULL;
	uint32_t rdlen = 0;
	int rc;

	if (!conn_cmdsn_ok(c, bhs, be32toh(req->cmd_sn)))
		return;
	pdu = iscsi_tx_pdu_alloc();
	if (!pdu)
		return;
	memset(&env, 0, sizeof(env));
	env.cfg = c->cfg;
	env.session_type = c->sess->type;
	env.target = c->sess->target ? gw_target_cfg(c->sess->target) : NULL;
	env.initiator_name = c->sess->initiator;
	env.local_addr = c->local;
	env.max_xmit_dsl = c->params.max_xmit_dsl;
	env.log_room = conn_text_log_room;
	env.log_ctx = c;
	rc = iscsi_text_rx(c->text, &env, req, data, dlen, (struct iscsi_text_rsp *)&pdu->bhs,
			   &rdata, &rdlen);
	if (rc) {
		iscsi_tx_pdu_free(pdu);
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		return;
	}
	/* MaxRecvDataSegmentLength may be re-declared in full feature phase */
	if (iscsi_text_declared_max_xmit_dsl(c->text))
		c->params.max_xmit_dsl = iscsi_text_declared_max_xmit_dsl(c->text);
	if (pdu_set_data_copy(pdu, rdata, rdlen)) {
		iscsi_tx_pdu_free(pdu);
		return;
	}
	iscsi_conn_send(c, pdu, true);
}

void iscsi_conn_request_logout(struct iscsi_conn *c, uint16_t seconds)
{
	struct iscsi_tx_pdu *pdu;
	struct iscsi_async_msg *m;

	if (c->state != CONN_STATE_FFP)
		return;
	if (c->sess && c->sess->type == ISCSI_SESSION_DISCOVERY) {
		iscsi_conn_drop(c, "target shutting down");
		return;
	}
	pdu = conn_pdu_new(ISCSI_OP_ASYNC_MSG);
	if (!pdu)
		return;
	m = (struct iscsi_async_msg *)&pdu->bhs;
	memset(m->lun, 0, sizeof(m->lun));
	m->itt = ISCSI_RSVD_TAG;
	m->async_event = ISCSI_ASYNC_LOGOUT_REQUEST;
	m->param3 = htobe16(seconds);
	iscsi_conn_send(c, pdu, true);
}

void iscsi_conn_force_logout(struct iscsi_conn *c, uint16_t seconds)
{
	if (c->state == CONN_STATE_LOGGED_OUT || c->state == CONN_STATE_CLOSING)
		return;
	if (c->state != CONN_STATE_FFP || c->sess->type == ISCSI_SESSION_DISCOVERY) {
		iscsi_conn_drop(c, "logout requested by the control socket");
		return;
	}
	if (c->logout_timer.armed)
		return; /* already asked: the first deadline stands */
	GW_NOTICE(COMP, "%s (%s): asking the initiator to log out within %u s", c->peer,
		  c->sess->initiator, seconds);
	c->logout_grace_s = seconds;
	iscsi_conn_request_logout(c, seconds);
	reactor_timer_arm(c->reactor, &c->logout_timer, (uint64_t)seconds * 1000u);
}

void iscsi_conn_rx_pdu(struct iscsi_conn *c, const struct iscsi_bhs *bhs, const uint8_t *ahs,
		       uint32_t ahs_len, const uint8_t *data, uint32_t dlen)
{
	uint8_t op = iscsi_bhs_opcode(bhs);
	uint64_t now_us = gw_counters_now_us();  /* the round's clock: when the PDU came */

	c->rx_us = now_us;
	c->last_rx_ms = now_us / 1000u;
	GW_DEBUG(COMP, "%s: rx %s ITT 0x%08x dlen %u", c->peer, iscsi_opcode_name(op),
		 be32toh(bhs->itt), dlen);
	switch (c->state) {
	case CONN_STATE_LOGIN:
		if (ahs_len) {
			iscsi_conn_drop(c, "AHS in a Login Request");
			return;
		}
		conn_rx_login(c, bhs, data, dlen);
		return;
	case CONN_STATE_FFP:
		break;
	default:
		return; /* closing: ignore */
	}

	if (c->sess->type == ISCSI_SESSION_DISCOVERY &&
	    op != ISCSI_OP_TEXT_REQ && op != ISCSI_OP_LOGOUT_REQ && op != ISCSI_OP_NOP_OUT) {
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		return;
	}
	if (ahs_len && op != ISCSI_OP_SCSI_CMD) {
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		return;
	}

	switch (op) {
	case ISCSI_OP_NOP_OUT:
		conn_rx_nop_out(c, bhs, data, dlen);
		break;
	case ISCSI_OP_SCSI_CMD:
		iscsi_task_scsi_cmd(c, bhs, ahs, ahs_len, data, dlen);
		break;
	case ISCSI_OP_TASK_MGMT_REQ:
		if (!conn_cmdsn_ok(c, bhs, be32toh(((const struct iscsi_tmf_req *)bhs)->cmd_sn)))
			break;
		iscsi_task_tmf(c, (const struct iscsi_tmf_req *)bhs);
		break;
	case ISCSI_OP_TEXT_REQ:
		conn_rx_text(c, bhs, data, dlen);
		break;
	case ISCSI_OP_DATA_OUT:
		iscsi_task_data_out(c, (const struct iscsi_data_out *)bhs, data, dlen);
		break;
	case ISCSI_OP_LOGOUT_REQ:
		conn_rx_logout(c, bhs);
		break;
	case ISCSI_OP_SNACK_REQ:
		/* ErrorRecoveryLevel 0: no SNACK support */
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_CMD_NOT_SUPPORTED);
		break;
	case ISCSI_OP_LOGIN_REQ:
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		break;
	default:
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_CMD_NOT_SUPPORTED);
		break;
	}
}

size_t iscsi_conn_rx_stream(struct iscsi_conn *c, const uint8_t *buf, size_t len,
			    const struct iscsi_rx_framing *f)
{
	size_t done = 0;

	while (c->state != CONN_STATE_CLOSING && len - done >= ISCSI_BHS_LEN) {
		const uint8_t *p = buf + done;
		const struct iscsi_bhs *bhs = (const struct iscsi_bhs *)p;
		uint32_t ahs_len = iscsi_ahs_len(bhs);
		uint32_t dsl = iscsi_bhs_dsl(bhs);
		uint32_t hlen = ISCSI_BHS_LEN + ahs_len + (f->hd ? 4u : 0u);
		uint32_t pad = iscsi_pad4(dsl);
		size_t total = (size_t)hlen + dsl + pad + (f->dd && dsl ? 4u : 0u);

		if (dsl > f->max_dsl) {
			char why[128];

			snprintf(why, sizeof(why), "%s with DataSegmentLength %u beyond "
				 "MaxRecvDataSegmentLength %u", iscsi_opcode_name(bhs->opcode), dsl,
				 f->max_dsl);
			iscsi_conn_reject(c, bhs, ISCSI_REJECT_PROTOCOL_ERROR);
			iscsi_conn_drop(c, why);
			break;
		}
		if (len - done < hlen)
			break;
		if (f->hd) {
			uint32_t want, got;

			want = iscsi_digest(p, ISCSI_BHS_LEN + ahs_len);
			memcpy(&got, p + ISCSI_BHS_LEN + ahs_len, 4);
			if (le32toh(got) != want) {
				iscsi_conn_drop(c, "header digest error");
				break;
			}
		}
		if (total > f->max_pdu) {
			/* only during login can this happen (buffers sized at enter_ffp) */
			iscsi_conn_drop(c, "PDU larger than the receive buffer");
			break;
		}
		if (len - done < total)
			break;
		done += total;
		if (f->dd && dsl) {
			uint32_t want = iscsi_data_digest(p + hlen, dsl, pad), got;

			memcpy(&got, p + hlen + dsl + pad, 4);
			if (le32toh(got) != want) {
				/* RFC 7143 7.8: Reject and discard; at ErrorRecoveryLevel 0 a
				 * damaged Data-Out ends its command (no recovery R2T) */
				iscsi_conn_reject(c, bhs, ISCSI_REJECT_DATA_DIGEST);
				if (iscsi_bhs_opcode(bhs) == ISCSI_OP_DATA_OUT)
					iscsi_task_data_out_bad(c, (const struct iscsi_data_out *)bhs);
				continue;
			}
		}
		iscsi_conn_rx_pdu(c, bhs, ahs_len ? p + ISCSI_BHS_LEN : NULL, ahs_len,
				  dsl ? p + hlen : NULL, dsl);
	}
	return done;
}
