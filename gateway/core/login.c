/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Login phase (RFC 7143 sections 6, 11.12, 11.13, 12, 13): the per-connection
 * state machine. One struct iscsi_login per connection; iscsi_login_rx() is
 * called for every Login Request and produces the Login Response header and
 * text. Keys are negotiated by params.c, CHAP is done by chap.c.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/chap.h"
#include "core/login.h"
#include "core/params.h"
#include "core/pdu.h"
#include "common/log.h"
#include "config/names.h"

#define COMP "login"
#define MAX_UNKNOWN_KEYS 128u

enum login_state {
	LS_START = 0,   /* no Login Request seen yet */
	LS_ACTIVE,
	LS_DONE,        /* full feature phase reached */
	LS_FAILED,
};

enum auth_state {
	AUTH_START = 0, /* no AuthMethod agreed */
	AUTH_CHAP,      /* AuthMethod=CHAP agreed, exchange in progress */
	AUTH_DONE,      /* authenticated, or no authentication */
};

struct iscsi_login {
	struct iscsi_login_env env;
	enum login_state state;
	int stage;                              /* current stage (CSG) */
	uint8_t fail_class, fail_detail;

	/* what must stay the same across the login's PDUs */
	uint8_t isid[6];
	uint16_t tsih_be, cid_be;
	uint32_t itt_be;
	uint32_t cmd_sn;
	uint8_t version_max, version_min;

	char initiator_name[GW_NAME_MAX];
	char target_name[GW_NAME_MAX];
	enum iscsi_session_type type;
	const struct gw_target_cfg *target;

	/* authentication */
	const struct gw_chap_cfg *chap_cred;
	const struct gw_chap_cfg *chap_mutual;
	bool chap_required;
	enum auth_state auth;
	struct iscsi_chap chap;

	/* negotiation */
	struct iscsi_neg neg;
	bool seen[ISCSI_KEY__COUNT];            /* keys the initiator sent in this login */
	char unknown[MAX_UNKNOWN_KEYS][ISCSI_KEY_NAME_MAX + 1];
	size_t nunknown;
	bool declared_first;                    /* TargetPortalGroupTag / TargetAlias sent */
	bool identified;                        /* identity keys of the first text processed */

	/* initiator's text, accumulated over C=1 PDUs */
	struct iscsi_textbuf in;

	/* our response; out_off bytes already sent (C=1 responses) */
	struct iscsi_textbuf out;
	size_t out_off;
	bool resp_transit;                      /* T of the final response PDU */
	int resp_nsg;

	struct iscsi_sess_params sess;
	struct iscsi_conn_params conn;
};

/* Key values of the security stage found in one message. */
struct auth_keys {
	const char *method, *a, *i, *c, *n, *r;
};

int iscsi_login_create(const struct iscsi_login_env *env, struct iscsi_login **out)
{
	struct iscsi_login *l;

	if (!env || !env->cfg || !out)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->env = *env;
	l->env.peer_addr[sizeof(l->env.peer_addr) - 1] = '\0';
	l->env.local_addr[sizeof(l->env.local_addr) - 1] = '\0';
	iscsi_tb_init(&l->in, ISCSI_TEXT_MAX);
	iscsi_tb_init(&l->out, ISCSI_TEXT_MAX);
	iscsi_neg_init(&l->neg, NULL, env->transport, false, true);
	iscsi_neg_result(&l->neg, &l->sess, &l->conn);
	*out = l;
	return 0;
}

void iscsi_login_destroy(struct iscsi_login *l)
{
	if (!l)
		return;
	iscsi_tb_free(&l->in);
	iscsi_tb_free(&l->out);
	/* the CHAP challenge is wiped by chap.c once used; wipe everything anyway */
	memset(&l->chap, 0, sizeof(l->chap));
	free(l);
}

static const char *who(const struct iscsi_login *l)
{
	return l->initiator_name[0] ? l->initiator_name : "(unnamed initiator)";
}

static uint8_t stage_flags(int stage)
{
	return (uint8_t)((stage << ISCSI_LOGIN_CSG_SHIFT) & ISCSI_LOGIN_CSG_MASK);
}

static enum iscsi_login_result login_fail(struct iscsi_login *l, struct iscsi_login_rsp *rsp,
					  uint8_t cls, uint8_t detail, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static enum iscsi_login_result login_fail(struct iscsi_login *l, struct iscsi_login_rsp *rsp,
					  uint8_t cls, uint8_t detail, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	GW_WARN(COMP, "%s: login of %s failed (status %02x/%02x): %s", l->env.peer_addr, who(l),
		cls, detail, msg);
	l->state = LS_FAILED;
	l->fail_class = cls;
	l->fail_detail = detail;
	rsp->flags = stage_flags(l->stage);
	rsp->status_class = cls;
	rsp->status_detail = detail;
	put_be24(rsp->data_seg_len, 0);
	iscsi_tb_reset(&l->out);
	l->out_off = 0;
	iscsi_tb_reset(&l->in);
	return ISCSI_LOGIN_RES_FAIL;
}

/* Failure codes returned by the message handlers. */
struct fail {
	uint8_t cls, detail;
	char why[256];
};

static int set_fail(struct fail *f, uint8_t cls, uint8_t detail, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int set_fail(struct fail *f, uint8_t cls, uint8_t detail, const char *fmt, ...)
{
	va_list ap;

	f->cls = cls;
	f->detail = detail;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	return -1;
}

/* A builder error: out of memory, or a response larger than we allow. */
static int build_fail(struct fail *f, int rc)
{
	if (rc == -E2BIG)
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				"login response text would exceed %u bytes", ISCSI_TEXT_MAX);
	return set_fail(f, ISCSI_LOGIN_STATUS_TARGET_ERR, ISCSI_LOGIN_DETAIL_NO_RESOURCES,
			"out of memory building the login response");
}

static const struct gw_target_cfg *find_target(const struct gw_config *cfg, const char *iqn)
{
	size_t i;

	for (i = 0; i < cfg->ntargets; i++)
		if (strcasecmp(cfg->targets[i].iqn, iqn) == 0)
			return &cfg->targets[i];
	return NULL;
}

const struct gw_acl_cfg *iscsi_target_acl(const struct gw_target_cfg *t, const char *initiator)
{
	size_t i;

	for (i = 0; i < t->nacls; i++)
		if (strcasecmp(t->acls[i].initiator, initiator) == 0)
			return &t->acls[i];
	return NULL;
}

static void warn_secret(const struct iscsi_login *l, const struct gw_chap_cfg *c, const char *what)
{
	if (c && strlen(c->secret) < ISCSI_CHAP_SECRET_MIN)
		GW_WARN(COMP, "%s: %s CHAP secret of user \"%s\" is shorter than %u bytes "
			"(RFC 7143 12.1.3)", l->env.peer_addr, what, c->user, ISCSI_CHAP_SECRET_MIN);
}

/*
 * First Login Request: InitiatorName, SessionType, TargetName; target lookup,
 * ACL and choice of CHAP credentials.
 */
static int login_identity(struct iscsi_login *l, struct fail *f)
{
	const char *iname = NULL, *tname = NULL, *stype = NULL;
	const struct gw_acl_cfg *acl = NULL;
	const struct gw_target_cfg *t = NULL;
	struct iscsi_kv kv;
	size_t off = 0, bad;
	char why[160];
	int rc;

	l->identified = true;
	while ((rc = iscsi_kv_next(l->in.buf, l->in.len, &off, &kv, why, sizeof(why))) > 0) {
		if (!iname && strcmp(kv.key, "InitiatorName") == 0)
			iname = kv.val;
		else if (!tname && strcmp(kv.key, "TargetName") == 0)
			tname = kv.val;
		else if (!stype && strcmp(kv.key, "SessionType") == 0)
			stype = kv.val;
	}
	if (rc < 0)
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				"malformed login text: %s", why);
	if (!iname || !iname[0])
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_MISSING_PARAM,
				"no InitiatorName in the first Login Request");
	if (strlen(iname) >= sizeof(l->initiator_name))
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				"InitiatorName longer than %u bytes", GW_NAME_MAX - 1);
	/* text values are UTF-8 (RFC 7143 6.1); the name is shown in logs and the REST API */
	if (!gw_utf8_valid(iname, strlen(iname), &bad))
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				"InitiatorName is not UTF-8 (byte %zu)", bad);
	/* nor a name with a control character (RFC 3722 prohibits them): a newline or an
	 * escape sequence would reach isergwctl's tables and the sessions' listings */
	bad = gw_utf8_control_at(iname, strlen(iname));
	if (bad < strlen(iname))
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				"InitiatorName has a control character (byte %zu)", bad);
	snprintf(l->initiator_name, sizeof(l->initiator_name), "%s", iname);

	if (!stype || strcmp(stype, "Normal") == 0)
		l->type = ISCSI_SESSION_NORMAL;
	else if (strcmp(stype, "Discovery") == 0)
		l->type = ISCSI_SESSION_DISCOVERY;
	else
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_SESSION_TYPE,
				"unsupported SessionType=%.40s", stype);

	if (l->type == ISCSI_SESSION_NORMAL) {
		if (!tname || !tname[0])
			return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR,
					ISCSI_LOGIN_DETAIL_MISSING_PARAM,
					"no TargetName in the first Login Request of a normal session");
		if (strlen(tname) < sizeof(l->target_name))
			t = find_target(l->env.cfg, tname);
		if (!t)
			return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_NOT_FOUND,
					"unknown target %.223s", tname);
		snprintf(l->target_name, sizeof(l->target_name), "%s", tname);
		if (t->nacls > 0) {
			acl = iscsi_target_acl(t, l->initiator_name);
			if (!acl)
				return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR,
						ISCSI_LOGIN_DETAIL_FORBIDDEN,
						"initiator %s not in ACL of target %s from %s",
						l->initiator_name, t->iqn, l->env.peer_addr);
		}
		l->target = t;
		if (acl && acl->chap.user[0])
			l->chap_cred = &acl->chap;
		else if (t->chap.user[0])
			l->chap_cred = &t->chap;
		if (t->mutual_chap.user[0])
			l->chap_mutual = &t->mutual_chap;
	} else {
		if (tname && strlen(tname) < sizeof(l->target_name))
			snprintf(l->target_name, sizeof(l->target_name), "%s", tname);
		if (l->env.cfg->discovery_chap.user[0])
			l->chap_cred = &l->env.cfg->discovery_chap;
	}
	l->chap_required = l->chap_cred != NULL;
	if (l->chap_required) {
		warn_secret(l, l->chap_cred, "initiator");
		warn_secret(l, l->chap_mutual, "mutual");
		if (l->chap_mutual && strcmp(l->chap_mutual->secret, l->chap_cred->secret) == 0)
			GW_WARN(COMP, "%s: mutual CHAP secret equals the initiator's CHAP secret "
				"(RFC 7143 12.1.3 forbids it)", l->env.peer_addr);
	}
	if (l->chap_required && l->stage != ISCSI_STAGE_SECURITY)
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_AUTH_FAILED,
				"CHAP is required but the initiator skipped the security stage");
	iscsi_neg_init(&l->neg, l->target, l->env.transport, l->type == ISCSI_SESSION_DISCOVERY,
		       l->tsih_be == 0);
	iscsi_chap_init(&l->chap, l->chap_cred, l->chap_mutual);
	return 0;
}

/* A login identity key repeated in a later PDU: allowed with the same value only. */
static int redeclared(struct iscsi_login *l, const struct iscsi_key_def *k, const char *val,
		      struct fail *f)
{
	const char *was;

	switch (k->id) {
	case ISCSI_KEY_INITIATOR_NAME:
		was = l->initiator_name;
		break;
	case ISCSI_KEY_TARGET_NAME:
		was = l->target_name;
		break;
	case ISCSI_KEY_SESSION_TYPE:
		was = l->type == ISCSI_SESSION_DISCOVERY ? "Discovery" : "Normal";
		break;
	case ISCSI_KEY_INITIATOR_ALIAS:
		was = l->neg.initiator_alias;
		break;
	default:
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				"key %s sent again in the same login", k->name);
	}
	if (strcmp(was, val) != 0)
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				"%s changed during the login (%.64s -> %.64s)", k->name, was, val);
	return 0;
}

static int unknown_key(struct iscsi_login *l, const char *key, struct fail *f)
{
	size_t i;
	int rc;

	for (i = 0; i < l->nunknown; i++)
		if (strcmp(l->unknown[i], key) == 0)
			return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
					"duplicate key %s", key);
	if (l->nunknown >= MAX_UNKNOWN_KEYS)
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				"more than %u unknown keys", MAX_UNKNOWN_KEYS);
	snprintf(l->unknown[l->nunknown++], sizeof(l->unknown[0]), "%s", key);
	GW_DEBUG(COMP, "%s: %s sent unknown key %s", l->env.peer_addr, who(l), key);
	rc = iscsi_tb_add(&l->out, key, "NotUnderstood");
	return rc ? build_fail(f, rc) : 0;
}

/* AuthMethod: the first method of the initiator's list that we accept. */
static int auth_method(struct iscsi_login *l, const char *list, struct fail *f)
{
	const char *want = l->chap_required ? "CHAP" : "None";
	const char *p = list;
	bool found = false;
	int rc;

	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == strlen(want) && memcmp(p, want, len) == 0) {
			found = true;
			break;
		}
		if (!e)
			break;
		p = e + 1;
	}
	if (!found) {
		if (l->chap_required)
			return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR,
					ISCSI_LOGIN_DETAIL_AUTH_FAILED,
					"CHAP is required but the initiator offered AuthMethod=%.64s",
					list);
		/* initiator wants authentication we have no credentials for: its call */
		rc = iscsi_tb_add(&l->out, "AuthMethod", "Reject");
		l->auth = AUTH_DONE;
		return rc ? build_fail(f, rc) : 0;
	}
	rc = iscsi_tb_add(&l->out, "AuthMethod", want);
	if (rc)
		return build_fail(f, rc);
	l->auth = l->chap_required ? AUTH_CHAP : AUTH_DONE;
	return 0;
}

static int chap_fail(struct iscsi_login *l, int rc, const char *why, struct fail *f)
{
	if (rc == -EACCES)
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_AUTH_FAILED,
				"CHAP authentication failed: %s", why);
	if (rc == -EIO)
		return set_fail(f, ISCSI_LOGIN_STATUS_TARGET_ERR, ISCSI_LOGIN_DETAIL_TARGET_ERROR,
				"CHAP: %s", why);
	return build_fail(f, rc);
}

/* Security stage: AuthMethod and the CHAP exchange. *ok: authentication complete. */
static int login_auth(struct iscsi_login *l, const struct auth_keys *ak, bool transit, bool *ok,
		      struct fail *f)
{
	bool chap_keys = ak->a || ak->i || ak->c || ak->n || ak->r;
	char why[200];
	int rc;

	*ok = false;
	if (l->auth == AUTH_START) {
		if (ak->method) {
			if (auth_method(l, ak->method, f))
				return -1;
		} else if (l->chap_required && transit) {
			return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_AUTH_FAILED,
					"CHAP is required but the initiator did not offer AuthMethod");
		}
	}
	if (l->auth == AUTH_CHAP) {
		switch (l->chap.state) {
		case ISCSI_CHAP_WAIT_A:
			if (ak->i || ak->c || ak->n || ak->r)
				return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR,
						ISCSI_LOGIN_DETAIL_AUTH_FAILED,
						"CHAP keys sent before CHAP_A");
			if (!ak->a)
				break;
			rc = iscsi_chap_challenge(&l->chap, ak->a, &l->out, why, sizeof(why));
			if (rc)
				return chap_fail(l, rc, why, f);
			break;
		case ISCSI_CHAP_WAIT_R:
			if (!ak->n && !ak->r && !ak->i && !ak->c)
				break;
			rc = iscsi_chap_response(&l->chap, ak->n, ak->r, ak->i, ak->c, &l->out, why,
						 sizeof(why));
			if (rc)
				return chap_fail(l, rc, why, f);
			l->auth = AUTH_DONE;
			GW_INFO(COMP, "%s: %s authenticated with CHAP%s", l->env.peer_addr, who(l),
				ak->i ? " (mutual)" : "");
			break;
		case ISCSI_CHAP_DONE:
			break;
		}
	} else if (chap_keys) {
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_AUTH_FAILED,
				"CHAP keys without AuthMethod=CHAP");
	}
	if (l->auth == AUTH_START && !l->chap_required && transit)
		l->auth = AUTH_DONE;
	*ok = l->auth == AUTH_DONE;
	return 0;
}

/* Declarations of the first response: TargetPortalGroupTag, TargetAlias. */
static int declare_first(struct iscsi_login *l)
{
	int rc = 0;

	if (l->declared_first)
		return 0;
	l->declared_first = true;
	if (l->type != ISCSI_SESSION_NORMAL)
		return 0;
	/* skipped if the initiator sent the key itself: it was answered Reject */
	if (l->target->alias[0] && !l->seen[ISCSI_KEY_TARGET_ALIAS])
		rc = iscsi_tb_add(&l->out, "TargetAlias", l->target->alias);
	if (!rc && !l->seen[ISCSI_KEY_TPGT])
		rc = iscsi_tb_add_u64(&l->out, "TargetPortalGroupTag",
				      l->env.portal ? l->env.portal->tpgt : 1);
	return rc;
}

/* One complete login text (all C=1 parts joined): answer it and pick the transition. */
static int login_message(struct iscsi_login *l, bool first, bool transit, int nsg,
			 struct fail *f)
{
	bool msg_seen[ISCSI_KEY__COUNT] = { false };
	struct auth_keys ak = { 0 };
	const struct iscsi_key_def *k;
	unsigned int nprop = 0, npend = 0;
	struct iscsi_kv kv;
	size_t off = 0;
	char why[200];
	bool auth_ok = true;
	int rc;

	iscsi_tb_reset(&l->out);
	l->out_off = 0;
	l->resp_transit = false;
	l->resp_nsg = 0;
	if (first && login_identity(l, f))
		return -1;

	while ((rc = iscsi_kv_next(l->in.buf, l->in.len, &off, &kv, why, sizeof(why))) > 0) {
		k = iscsi_key_find(kv.key);
		if (!k) {
			if (unknown_key(l, kv.key, f))
				return -1;
			continue;
		}
		if (msg_seen[k->id])
			return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
					"duplicate key %s", k->name);
		msg_seen[k->id] = true;
		if (l->seen[k->id]) {
			if (redeclared(l, k, kv.val, f))
				return -1;
			continue;
		}
		l->seen[k->id] = true;
		switch (k->id) {
		case ISCSI_KEY_INITIATOR_NAME:
		case ISCSI_KEY_TARGET_NAME:
		case ISCSI_KEY_SESSION_TYPE:
			/* taken from the first PDU; later first mentions must agree with it */
			if (!first && redeclared(l, k, kv.val, f))
				return -1;
			continue;
		default:
			break;
		}
		if (k->kind == ISCSI_KIND_AUTH) {
			if (l->stage != ISCSI_STAGE_SECURITY)
				return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR,
						ISCSI_LOGIN_DETAIL_INIT_ERR,
						"%s outside the security stage", k->name);
			switch (k->id) {
			case ISCSI_KEY_AUTH_METHOD: ak.method = kv.val; break;
			case ISCSI_KEY_CHAP_A: ak.a = kv.val; break;
			case ISCSI_KEY_CHAP_I: ak.i = kv.val; break;
			case ISCSI_KEY_CHAP_C: ak.c = kv.val; break;
			case ISCSI_KEY_CHAP_N: ak.n = kv.val; break;
			case ISCSI_KEY_CHAP_R: ak.r = kv.val; break;
			default: break;
			}
			if (kv.vlen > k->max_len)
				return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR,
						ISCSI_LOGIN_DETAIL_AUTH_FAILED,
						"%s value longer than %zu bytes", k->name, k->max_len);
			continue;
		}
		rc = iscsi_neg_key(&l->neg, k, kv.val, ISCSI_PHASE_LOGIN, &l->out, why, sizeof(why));
		if (rc == -EPROTO)
			return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
					"%s", why);
		if (rc)
			return build_fail(f, rc);
	}
	if (rc < 0)
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				"malformed login text: %s", why);
	rc = iscsi_neg_end_message(&l->neg, &l->out);
	if (!rc)
		rc = declare_first(l);
	if (rc)
		return build_fail(f, rc);

	if (l->stage == ISCSI_STAGE_SECURITY) {
		if (login_auth(l, &ak, transit, &auth_ok, f))
			return -1;
		if (!transit || !auth_ok)
			return 0;
		l->resp_transit = true;
		l->resp_nsg = nsg;
		if (nsg == ISCSI_STAGE_FULL_FEATURE) {
			/* straight to FFP: only if nothing needs operational negotiation */
			rc = iscsi_neg_propose(&l->neg, &l->out, false, &nprop, &npend, why,
					       sizeof(why));
			if (rc == -EPROTO)
				return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR,
						ISCSI_LOGIN_DETAIL_INIT_ERR, "%s", why);
			if (rc)
				return build_fail(f, rc);
			if (nprop || npend)
				l->resp_nsg = ISCSI_STAGE_OPERATIONAL;
		}
		return 0;
	}

	/* operational stage */
	rc = iscsi_neg_declare(&l->neg, &l->out);
	if (rc)
		return build_fail(f, rc);
	if (!transit)
		return 0;
	rc = iscsi_neg_propose(&l->neg, &l->out, true, &nprop, &npend, why, sizeof(why));
	if (rc == -EPROTO)
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR, "%s",
				why);
	if (rc)
		return build_fail(f, rc);
	if (npend == 0) {
		l->resp_transit = true;
		l->resp_nsg = ISCSI_STAGE_FULL_FEATURE;
	} else if (nprop == 0) {
		return set_fail(f, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				"initiator asked for full feature phase without answering the "
				"keys the target proposed");
	} else {
		GW_DEBUG(COMP, "%s: proposing %u key(s) to %s", l->env.peer_addr, nprop, who(l));
	}
	return 0;
}

/* Send (the next part of) the response text; apply the transition with the last part. */
static enum iscsi_login_result send_response(struct iscsi_login *l, struct iscsi_login_rsp *rsp,
					     const uint8_t **rsp_data, uint32_t *rsp_dlen)
{
	size_t rem = l->out.len - l->out_off;
	size_t n = rem > ISCSI_LOGIN_PDU_DSL ? ISCSI_LOGIN_PDU_DSL : rem;

	*rsp_data = n ? (const uint8_t *)l->out.buf + l->out_off : NULL;
	*rsp_dlen = (uint32_t)n;
	put_be24(rsp->data_seg_len, (uint32_t)n);
	l->out_off += n;
	if (l->out_off < l->out.len) {
		rsp->flags = stage_flags(l->stage) | ISCSI_LOGIN_CONTINUE;
		return ISCSI_LOGIN_RES_CONTINUE;
	}
	rsp->flags = stage_flags(l->stage);
	if (!l->resp_transit)
		return ISCSI_LOGIN_RES_CONTINUE;
	rsp->flags |= ISCSI_LOGIN_TRANSIT | (uint8_t)(l->resp_nsg & ISCSI_LOGIN_NSG_MASK);
	l->stage = l->resp_nsg;
	l->resp_transit = false;
	if (l->stage != ISCSI_STAGE_FULL_FEATURE)
		return ISCSI_LOGIN_RES_CONTINUE;
	iscsi_neg_result(&l->neg, &l->sess, &l->conn);
	l->state = LS_DONE;
	GW_DEBUG(COMP, "%s: login of %s complete", l->env.peer_addr, who(l));
	return ISCSI_LOGIN_RES_DONE;
}

enum iscsi_login_result iscsi_login_rx(struct iscsi_login *l, const struct iscsi_login_req *req,
				       const uint8_t *data, uint32_t dlen,
				       struct iscsi_login_rsp *rsp,
				       const uint8_t **rsp_data, uint32_t *rsp_dlen)
{
	bool transit = req->flags & ISCSI_LOGIN_TRANSIT;
	bool cont = req->flags & ISCSI_LOGIN_CONTINUE;
	int csg = (req->flags & ISCSI_LOGIN_CSG_MASK) >> ISCSI_LOGIN_CSG_SHIFT;
	int nsg = req->flags & ISCSI_LOGIN_NSG_MASK;
	bool first = l->state == LS_START;
	struct fail f;

	*rsp_data = NULL;
	*rsp_dlen = 0;
	memset(rsp, 0, sizeof(*rsp));
	rsp->opcode = ISCSI_OP_LOGIN_RSP;
	rsp->version_max = 0;
	rsp->version_active = 0;
	memcpy(rsp->isid, req->isid, sizeof(rsp->isid));
	rsp->itt = req->itt;
	rsp->flags = stage_flags(csg & 1);

	if (l->state == LS_FAILED) {
		rsp->status_class = l->fail_class;
		rsp->status_detail = l->fail_detail;
		return ISCSI_LOGIN_RES_FAIL;
	}
	if (l->state == LS_DONE)
		return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR,
				  ISCSI_LOGIN_DETAIL_INVALID_REQUEST,
				  "Login Request after the login completed");
	if ((req->opcode & ISCSI_OPCODE_MASK) != ISCSI_OP_LOGIN_REQ)
		return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR,
				  ISCSI_LOGIN_DETAIL_INVALID_REQUEST,
				  "opcode 0x%02x during the login phase", req->opcode);
	if (first) {
		memcpy(l->isid, req->isid, sizeof(l->isid));
		l->tsih_be = req->tsih;
		l->cid_be = req->cid;
		l->itt_be = req->itt;
		l->cmd_sn = be32toh(req->cmd_sn);
		l->version_max = req->version_max;
		l->version_min = req->version_min;
		l->stage = csg == ISCSI_STAGE_OPERATIONAL ? ISCSI_STAGE_OPERATIONAL :
							    ISCSI_STAGE_SECURITY;
		l->state = LS_ACTIVE;
		/* RFC 7143 11.12.4: we speak version 0; need Version-max >= 0 >= Version-min */
		if (req->version_min != 0)
			return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR,
					  ISCSI_LOGIN_DETAIL_UNSUPPORTED_VER,
					  "unsupported version range %u..%u", req->version_min,
					  req->version_max);
		if (csg != ISCSI_STAGE_SECURITY && csg != ISCSI_STAGE_OPERATIONAL)
			return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR,
					  ISCSI_LOGIN_DETAIL_INIT_ERR,
					  "first Login Request in stage %d", csg);
	} else {
		if (memcmp(l->isid, req->isid, sizeof(l->isid)) != 0 || l->tsih_be != req->tsih ||
		    l->cid_be != req->cid || l->itt_be != req->itt)
			return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR,
					  ISCSI_LOGIN_DETAIL_INIT_ERR,
					  "ISID, TSIH, CID or ITT changed during the login");
		if (l->version_max != req->version_max || l->version_min != req->version_min)
			return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR,
					  ISCSI_LOGIN_DETAIL_INIT_ERR,
					  "Version-max/min changed during the login");
	}
	if (transit && cont)
		return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				  "Login Request with both T and C set");
	if (csg != l->stage)
		return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				  "Login Request for stage %d while the login is in stage %d", csg,
				  l->stage);
	if (transit && (nsg <= csg || nsg == 2))
		return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				  "invalid stage transition %d -> %d", csg, nsg);

	/* the initiator fetches the rest of a response we sent with C=1 */
	if (l->out_off < l->out.len) {
		if (dlen || cont)
			return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR,
					  ISCSI_LOGIN_DETAIL_INIT_ERR,
					  "expected an empty Login Request to continue our response");
		return send_response(l, rsp, rsp_data, rsp_dlen);
	}

	if (dlen > ISCSI_TEXT_MAX - l->in.len)
		return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				  "login text longer than %u bytes", ISCSI_TEXT_MAX);
	if (iscsi_tb_append(&l->in, data, dlen))
		return login_fail(l, rsp, ISCSI_LOGIN_STATUS_TARGET_ERR,
				  ISCSI_LOGIN_DETAIL_NO_RESOURCES, "out of memory");
	if (cont) {
		/* RFC 7143 6.3: answer a partial text with an empty response, T=0 */
		return ISCSI_LOGIN_RES_CONTINUE;
	}
	if (l->in.len > 0 && l->in.buf[l->in.len - 1] != '\0')
		return login_fail(l, rsp, ISCSI_LOGIN_STATUS_INIT_ERR, ISCSI_LOGIN_DETAIL_INIT_ERR,
				  "login text does not end with a NUL");
	/* the first login text (which may span C=1 PDUs) carries the identity keys */
	if (login_message(l, !l->identified, transit, nsg, &f)) {
		iscsi_tb_reset(&l->in);
		return login_fail(l, rsp, f.cls, f.detail, "%s", f.why);
	}
	iscsi_tb_reset(&l->in);
	return send_response(l, rsp, rsp_data, rsp_dlen);
}

enum iscsi_session_type iscsi_login_session_type(const struct iscsi_login *l)
{
	return l->type;
}

const struct gw_target_cfg *iscsi_login_target(const struct iscsi_login *l)
{
	return l->type == ISCSI_SESSION_NORMAL ? l->target : NULL;
}

const char *iscsi_login_initiator_name(const struct iscsi_login *l)
{
	return l->initiator_name;
}

const char *iscsi_login_initiator_alias(const struct iscsi_login *l)
{
	return l->neg.initiator_alias;
}

void iscsi_login_isid(const struct iscsi_login *l, uint8_t isid[6])
{
	memcpy(isid, l->isid, 6);
}

uint16_t iscsi_login_tsih(const struct iscsi_login *l)
{
	return be16toh(l->tsih_be);
}

uint16_t iscsi_login_cid(const struct iscsi_login *l)
{
	return be16toh(l->cid_be);
}

uint32_t iscsi_login_first_cmdsn(const struct iscsi_login *l)
{
	return l->cmd_sn;
}

const struct iscsi_sess_params *iscsi_login_sess_params(const struct iscsi_login *l)
{
	return &l->sess;
}

const struct iscsi_conn_params *iscsi_login_conn_params(const struct iscsi_login *l)
{
	return &l->conn;
}
