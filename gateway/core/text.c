/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Text Requests in full feature phase (RFC 7143 11.10, 11.11, Appendix C):
 * SendTargets and renegotiation of the keys that may change after login.
 * Long answers are split at the initiator's MaxRecvDataSegmentLength with
 * the C bit and a Target Transfer Tag.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/login.h"
#include "core/params.h"
#include "core/pdu.h"
#include "common/log.h"

#define COMP "text"

/* A line about the request, as the connection's log limit allows (login.h). */
#define TEXT_WARN(env, ...)                                                 \
	do {                                                                \
		if (!(env)->log_room || (env)->log_room((env)->log_ctx))    \
			GW_WARN(COMP, __VA_ARGS__);                         \
	} while (0)

#define MAX_UNKNOWN_KEYS 128u

struct iscsi_text {
	/* our answer; out_off bytes already sent */
	struct iscsi_textbuf out;
	size_t out_off;
	bool final;                     /* F bit for the last part of the answer */
	/* initiator's text accumulated over C=1 requests */
	struct iscsi_textbuf in;
	/* the exchange in progress: ITT (wire order) and our TTT (0xffffffff: none) */
	uint32_t itt_be;
	uint32_t ttt;
	uint32_t next_ttt;
	uint32_t declared_mrdsl;
};

int iscsi_text_create(struct iscsi_text **out)
{
	struct iscsi_text *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	iscsi_tb_init(&t->in, ISCSI_TEXT_MAX);
	iscsi_tb_init(&t->out, ISCSI_TEXT_MAX);
	t->ttt = ISCSI_RSVD_TAG;
	t->next_ttt = 1;
	*out = t;
	return 0;
}

void iscsi_text_destroy(struct iscsi_text *t)
{
	if (!t)
		return;
	iscsi_tb_free(&t->in);
	iscsi_tb_free(&t->out);
	free(t);
}

uint32_t iscsi_text_declared_max_xmit_dsl(const struct iscsi_text *t)
{
	return t->declared_mrdsl;
}

static uint32_t new_ttt(struct iscsi_text *t)
{
	uint32_t v = t->next_ttt++;

	if (v == ISCSI_RSVD_TAG) {
		v = 1;
		t->next_ttt = 2;
	}
	return v;
}

static void reset_exchange(struct iscsi_text *t)
{
	iscsi_tb_reset(&t->out);
	t->out_off = 0;
	iscsi_tb_reset(&t->in);
	t->ttt = ISCSI_RSVD_TAG;
	t->final = true;
}

static bool visible(const struct gw_target_cfg *tg, const char *initiator)
{
	return tg->nacls == 0 || (initiator && iscsi_target_acl(tg, initiator));
}

static bool wildcard_addr(const char *a)
{
	return !a[0] || strcmp(a, "0.0.0.0") == 0 || strcmp(a, "::") == 0 ||
	       strcmp(a, "[::]") == 0 || strcmp(a, "*") == 0;
}

/* Host part of "addr:port", "[v6]:port", or a bare address. */
static int host_of(const char *hostport, char *out, size_t sz)
{
	const char *end;
	size_t len;

	if (!hostport || !hostport[0])
		return -ENOENT;
	if (hostport[0] == '[') {
		end = strchr(hostport, ']');
		if (!end)
			return -EINVAL;
		hostport++;
	} else {
		end = strrchr(hostport, ':');
		if (!end || strchr(hostport, ':') != end) /* bare IPv6 or no port */
			end = hostport + strlen(hostport);
	}
	len = (size_t)(end - hostport);
	if (len == 0 || len >= sz)
		return -EINVAL;
	memcpy(out, hostport, len);
	out[len] = '\0';
	return 0;
}

/* "addr:port,tpgt" for one portal; IPv6 in brackets; wildcards as our local address. */
static int portal_address(const struct gw_portal_cfg *p, const char *local, char *out, size_t sz)
{
	char host[80];
	int n;

	if (wildcard_addr(p->addr)) {
		if (host_of(local, host, sizeof(host)))
			return -ENOENT;
	} else if (host_of(p->addr, host, sizeof(host))) {
		return -EINVAL;
	}
	n = snprintf(out, sz, strchr(host, ':') ? "[%s]:%u,%u" : "%s:%u,%u", host,
		     (unsigned int)(p->port ? p->port : ISCSI_DEFAULT_PORT), (unsigned int)p->tpgt);
	return n < 0 || (size_t)n >= sz ? -E2BIG : 0;
}

static int add_target(struct iscsi_text *t, const struct iscsi_text_env *env,
		      const struct gw_target_cfg *tg)
{
	const struct gw_config *cfg = env->cfg;
	char (*seen)[112] = NULL;
	size_t i, j, nseen = 0;
	int rc;

	rc = iscsi_tb_add(&t->out, "TargetName", tg->iqn);
	if (rc || cfg->nportals == 0)
		return rc;
	seen = calloc(cfg->nportals, sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	for (i = 0; i < cfg->nportals; i++) {
		char addr[112];

		if (portal_address(&cfg->portals[i], env->local_addr, addr, sizeof(addr)))
			continue;
		for (j = 0; j < nseen; j++)
			if (strcmp(seen[j], addr) == 0)
				break;
		if (j < nseen)
			continue; /* same address on a TCP and an iSER portal */
		memcpy(seen[nseen++], addr, sizeof(addr));
		rc = iscsi_tb_add(&t->out, "TargetAddress", addr);
		if (rc)
			break;
	}
	free(seen);
	return rc;
}

/* SendTargets=All | <iSCSI name> | "" (RFC 7143 Appendix C). */
static int send_targets(struct iscsi_text *t, const struct iscsi_text_env *env, const char *val)
{
	const struct gw_config *cfg = env->cfg;
	size_t i;
	int rc;

	if (env->session_type == ISCSI_SESSION_NORMAL) {
		/* a normal session only learns about its own target */
		if (!env->target)
			return 0;
		if (!val[0] || strcmp(val, "All") == 0 || strcasecmp(val, env->target->iqn) == 0)
			return add_target(t, env, env->target);
		return 0;
	}
	if (!val[0])
		return 0;
	for (i = 0; i < cfg->ntargets; i++) {
		const struct gw_target_cfg *tg = &cfg->targets[i];

		if (strcmp(val, "All") != 0 && strcasecmp(val, tg->iqn) != 0)
			continue;
		if (!visible(tg, env->initiator_name))
			continue;
		rc = add_target(t, env, tg);
		if (rc)
			return rc;
	}
	return 0;
}

/* Answer one complete request text into t->out. -EPROTO for a protocol error. */
static int text_message(struct iscsi_text *t, const struct iscsi_text_env *env)
{
	bool msg_seen[ISCSI_KEY__COUNT] = { false };
	char unknown[MAX_UNKNOWN_KEYS][ISCSI_KEY_NAME_MAX + 1];
	size_t nunknown = 0, i, off = 0;
	const struct iscsi_key_def *k;
	struct iscsi_neg neg;
	struct iscsi_kv kv;
	char why[200];
	int rc;

	iscsi_neg_init(&neg, env->target, GW_TRANSPORT_TCP,
		       env->session_type == ISCSI_SESSION_DISCOVERY, true);
	while ((rc = iscsi_kv_next(t->in.buf, t->in.len, &off, &kv, why, sizeof(why))) > 0) {
		k = iscsi_key_find(kv.key);
		if (!k) {
			for (i = 0; i < nunknown; i++)
				if (strcmp(unknown[i], kv.key) == 0)
					break;
			if (i < nunknown || nunknown >= MAX_UNKNOWN_KEYS) {
				snprintf(why, sizeof(why), "duplicate or too many unknown keys (%s)",
					 kv.key);
				rc = -EPROTO;
				break;
			}
			snprintf(unknown[nunknown++], sizeof(unknown[0]), "%s", kv.key);
			rc = iscsi_tb_add(&t->out, kv.key, "NotUnderstood");
			if (rc)
				return rc;
			continue;
		}
		if (msg_seen[k->id]) {
			snprintf(why, sizeof(why), "duplicate key %s", k->name);
			rc = -EPROTO;
			break;
		}
		msg_seen[k->id] = true;
		if (k->id == ISCSI_KEY_SEND_TARGETS) {
			if (kv.vlen > k->max_len)
				rc = iscsi_tb_add(&t->out, k->name, "Reject");
			else
				rc = send_targets(t, env, kv.val);
		} else if (k->kind == ISCSI_KIND_AUTH) {
			rc = iscsi_tb_add(&t->out, k->name, "Reject");
		} else {
			rc = iscsi_neg_key(&neg, k, kv.val, ISCSI_PHASE_FFP, &t->out, why,
					   sizeof(why));
			if (!rc && k->id == ISCSI_KEY_MAX_RECV_DSL &&
			    neg.state[k->id] == ISCSI_NEG_DONE)
				t->declared_mrdsl = (uint32_t)neg.val[k->id];
		}
		if (rc)
			break;
	}
	if (rc == -EPROTO || rc == -EINVAL) {
		TEXT_WARN(env, "%s: bad Text Request: %s", env->initiator_name ? env->initiator_name :
			"?", why);
		return -EPROTO;
	}
	if (rc < 0)
		return rc;
	return iscsi_neg_end_message(&neg, &t->out);
}

static void send_part(struct iscsi_text *t, const struct iscsi_text_env *env,
		      struct iscsi_text_rsp *rsp, const uint8_t **rsp_data, uint32_t *rsp_dlen)
{
	size_t max = env->max_xmit_dsl ? env->max_xmit_dsl : ISCSI_DEFAULT_MRDSL;
	size_t rem = t->out.len - t->out_off;
	size_t n = rem > max ? max : rem;

	*rsp_data = n ? (const uint8_t *)t->out.buf + t->out_off : NULL;
	*rsp_dlen = (uint32_t)n;
	put_be24(rsp->data_seg_len, (uint32_t)n);
	t->out_off += n;
	if (t->out_off < t->out.len || !t->final) {
		/* more to come: C=1 (answer continues) or F=0 (initiator's F=0), with a TTT */
		if (t->ttt == ISCSI_RSVD_TAG)
			t->ttt = new_ttt(t);
		rsp->flags = t->out_off < t->out.len ? ISCSI_FLAG_CONTINUE : 0;
		rsp->ttt = htobe32(t->ttt);
		return;
	}
	rsp->flags = ISCSI_FLAG_FINAL;
	rsp->ttt = htobe32(ISCSI_RSVD_TAG);
	reset_exchange(t);
}

int iscsi_text_rx(struct iscsi_text *t, const struct iscsi_text_env *env,
		  const struct iscsi_text_req *req, const uint8_t *data, uint32_t dlen,
		  struct iscsi_text_rsp *rsp, const uint8_t **rsp_data, uint32_t *rsp_dlen)
{
	bool final = req->flags & ISCSI_FLAG_FINAL;
	bool cont = req->flags & ISCSI_FLAG_CONTINUE;
	uint32_t ttt = be32toh(req->ttt);
	const char *who = env->initiator_name ? env->initiator_name : "?";
	int rc;

	*rsp_data = NULL;
	*rsp_dlen = 0;
	t->declared_mrdsl = 0;
	if (cont && final) {
		TEXT_WARN(env, "%s: Text Request with both F and C set", who);
		return -EPROTO;
	}
	if (ttt != ISCSI_RSVD_TAG) {
		if (ttt != t->ttt || req->itt != t->itt_be) {
			TEXT_WARN(env, "%s: Text Request with unknown TTT 0x%08x", who, ttt);
			return -EPROTO;
		}
		if (t->out_off < t->out.len && dlen) {
			TEXT_WARN(env, "%s: data in a Text Request continuing our answer", who);
			return -EPROTO;
		}
	} else {
		/* a new exchange: forget anything in progress (RFC 7143 11.10.4) */
		reset_exchange(t);
	}

	memset(rsp, 0, sizeof(*rsp));
	rsp->opcode = ISCSI_OP_TEXT_RSP;
	rsp->itt = req->itt;
	memcpy(rsp->lun, req->lun, sizeof(rsp->lun));
	t->itt_be = req->itt;

	if (t->out_off < t->out.len) {
		send_part(t, env, rsp, rsp_data, rsp_dlen);
		return 0;
	}
	if (dlen > ISCSI_TEXT_MAX - t->in.len) {
		TEXT_WARN(env, "%s: text longer than %u bytes", who, ISCSI_TEXT_MAX);
		reset_exchange(t);
		return -EPROTO;
	}
	if (iscsi_tb_append(&t->in, data, dlen))
		return -ENOMEM;
	if (cont) {
		/* partial text: empty answer with F=0 and a TTT to continue with */
		if (t->ttt == ISCSI_RSVD_TAG)
			t->ttt = new_ttt(t);
		rsp->ttt = htobe32(t->ttt);
		return 0;
	}
	if (t->in.len > 0 && t->in.buf[t->in.len - 1] != '\0') {
		TEXT_WARN(env, "%s: Text Request data does not end with a NUL", who);
		reset_exchange(t);
		return -EPROTO;
	}
	iscsi_tb_reset(&t->out);
	t->out_off = 0;
	rc = text_message(t, env);
	iscsi_tb_reset(&t->in);
	if (rc) {
		reset_exchange(t);
		return rc;
	}
	t->final = final;
	send_part(t, env, rsp, rsp_data, rsp_dlen);
	return 0;
}
