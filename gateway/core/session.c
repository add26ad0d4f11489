/* SPDX-License-Identifier: Apache-2.0 */
/* The session table: binding a logged-in connection to a session, TSIH
 * allocation, session reinstatement (RFC 7143 6.3.5) and unbinding. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/iscsi.h"
#include "core/pdu.h"
#include "common/log.h"

#define COMP "session"

static void drop_reinstated(void *arg)
{
	struct iscsi_conn *old = arg;

	iscsi_conn_drop(old, "session reinstated by a new login with the same ISID");
	iscsi_conn_put(old);
}

static bool tsih_in_use(struct gw *gw, uint16_t tsih)
{
	struct list_head *pos;

	list_for_each(pos, &gw->sessions) {
		if (list_entry(pos, struct iscsi_session, link)->tsih == tsih)
			return true;
	}
	return false;
}

int iscsi_session_bind(struct iscsi_conn *c)
{
	struct gw *gw = c->gw;
	struct iscsi_session *s, *old = NULL;
	struct list_head *pos;
	const struct gw_target_cfg *tcfg;

	if (iscsi_login_tsih(c->login) != 0) {
		uint16_t tsih = iscsi_login_tsih(c->login);
		bool live;

		pthread_mutex_lock(&gw->sess_lock);
		live = tsih_in_use(gw, tsih);
		pthread_mutex_unlock(&gw->sess_lock);
		GW_WARN(COMP, "%s: login for an existing session (TSIH %u, %s): only one connection "
			"per session is supported", c->peer, tsih, live ? "live" : "unknown");
		return live ? -EEXIST : -ESRCH;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->gw = gw;
	s->type = iscsi_login_session_type(c->login);
	snprintf(s->initiator, sizeof(s->initiator), "%s", iscsi_login_initiator_name(c->login));
	iscsi_login_isid(c->login, s->isid);
	s->params = *iscsi_login_sess_params(c->login);
	s->exp_cmd_sn = iscsi_login_first_cmdsn(c->login);
	s->reactor = c->reactor;
	s->conn = c;
	list_init(&s->pending);
	iscsi_task_sets_init(s);
	list_init(&s->link);
	pthread_mutex_lock(&gw->sess_lock);
	if (s->type == ISCSI_SESSION_NORMAL) {
		tcfg = iscsi_login_target(c->login);
		s->target = tcfg ? gw_find_target(gw, tcfg->iqn) : NULL;
		if (!s->target || c->portal->removed) {
			pthread_mutex_unlock(&gw->sess_lock);
			GW_WARN(COMP, "%s: target %s went away during login", c->peer,
				tcfg ? tcfg->iqn : "?");
			free(s);
			return -ENOENT;
		}
		s->queue_depth = s->target->cfg->queue_depth ? s->target->cfg->queue_depth : 128;
	} else {
		s->queue_depth = 8;
	}
	if (s->type == ISCSI_SESSION_NORMAL) {
		list_for_each(pos, &gw->sessions) {
			struct iscsi_session *o = list_entry(pos, struct iscsi_session, link);

			if (o->type == s->type && o->target == s->target &&
			    memcmp(o->isid, s->isid, 6) == 0 &&
			    strcmp(o->initiator, s->initiator) == 0) {
				old = o;
				break;
			}
		}
	}
	if (old) {
		list_del(&old->link);
		old->registered = false;
		iscsi_conn_get(old->conn);
		reactor_send_msg(old->reactor, drop_reinstated, old->conn);
		GW_NOTICE(COMP, "%s: reinstating session of %s (old TSIH %u)", c->peer,
			  s->initiator, old->tsih);
	}
	do {
		gw->next_tsih++;
		if (gw->next_tsih == 0)
			gw->next_tsih = 1;
	} while (tsih_in_use(gw, gw->next_tsih));
	s->tsih = gw->next_tsih;
	s->itn.id = ++gw->next_itn_id;
	list_add_tail(&s->link, &gw->sessions);
	s->registered = true;

	snprintf(s->itn.initiator_name, sizeof(s->itn.initiator_name), "%s", s->initiator);
	snprintf(s->itn.initiator_port, sizeof(s->itn.initiator_port),
		 "%s,i,0x%02x%02x%02x%02x%02x%02x", s->initiator, s->isid[0], s->isid[1],
		 s->isid[2], s->isid[3], s->isid[4], s->isid[5]);
	memcpy(s->itn.isid, s->isid, 6);
	if (s->target) {
		s->itn.port = &s->target->ports[c->portal->index];
		s->itn.luns = s->target->luns;
		s->itn.nluns = s->target->nluns;
		for (uint32_t i = 0; i < s->target->nluns; i++)
			if (s->target->luns[i])
				scsi_lu_itn_add(s->target->luns[i], &s->itn);
	}
	pthread_mutex_unlock(&gw->sess_lock);
	atomic_fetch_add(&gw->stats.sessions, 1);
	c->sess = s;
	return 0;
}

void iscsi_session_unbind(struct iscsi_conn *c)
{
	struct iscsi_session *s = c->sess;
	struct gw *gw = c->gw;

	if (!s)
		return;
	pthread_mutex_lock(&gw->sess_lock);
	if (s->registered) {
		list_del(&s->link);
		s->registered = false;
	}
	if (s->target) {
		for (uint32_t i = 0; i < s->target->nluns; i++)
			if (s->target->luns[i])
				scsi_lu_itn_remove(s->target->luns[i], &s->itn);
	}
	pthread_mutex_unlock(&gw->sess_lock);
	atomic_fetch_sub(&gw->stats.sessions, 1);
	/* the struct itself is freed with the connection: tasks still in the
	 * SCSI layer may point at s->itn until they complete */
}

struct foreach_msg {
	void (*fn)(struct iscsi_conn *c, void *arg);
	void *arg;
	struct iscsi_conn *c;
};

static void foreach_run(void *arg)
{
	struct foreach_msg *m = arg;

	m->fn(m->c, m->arg);
	iscsi_conn_put(m->c);
	free(m);
}

void iscsi_sessions_foreach(struct gw *gw, void (*fn)(struct iscsi_conn *c, void *arg), void *arg)
{
	struct list_head *pos;

	pthread_mutex_lock(&gw->sess_lock);
	list_for_each(pos, &gw->sessions) {
		struct iscsi_session *s = list_entry(pos, struct iscsi_session, link);
		struct foreach_msg *m = malloc(sizeof(*m));

		if (!m)
			continue;
		m->fn = fn;
		m->arg = arg;
		m->c = s->conn;
		iscsi_conn_get(s->conn);
		if (reactor_send_msg(s->reactor, foreach_run, m)) {
			iscsi_conn_put(s->conn);
			free(m);
		}
	}
	pthread_mutex_unlock(&gw->sess_lock);
}
