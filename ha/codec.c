/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The group messages' codec (proto/isergw_ha.proto): packing, and the checks
 * every delivered message passes before the state machine looks at it. A
 * message from a newer agent (version above ours) is refused here with
 * -EPROTONOSUPPORT; garbled bytes with -EBADMSG; a field out of range with
 * -EINVAL. The caller logs the reason and ignores the message.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "sm.h"
#include "config/names.h"
#include "common/log.h"

#define HA_OWNERS_MAX 256u

int ha_msg_pack(const HaMsg *m, uint8_t **out, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(&m->base);
	uint8_t *buf;

	if (n > HA_MSG_MAX)
		return -EMSGSIZE;
	buf = malloc(n ? n : 1);
	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(&m->base, buf);
	*out = buf;
	*len = n;
	return 0;
}

static int name_ok(const char *s, const char *what, char *err, size_t errlen)
{
	size_t n = strlen(s);

	if (n >= HA_NAME_MAX)
		return gw_errf(err, errlen, -EINVAL, "%s: %zu bytes (at most %u)", what, n,
			   HA_NAME_MAX - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return gw_errf(err, errlen, -EINVAL, "%s: not printable ASCII", what);
	return 0;
}

static int check_dataplane(const Isergw__Ha__DataPlane *d, char *err, size_t errlen)
{
	int rc;

	if (d->n_failed_groups > HA_DGS_MAX)
		return gw_errf(err, errlen, -EINVAL, "dataplane.failed_groups: %zu (at most %u)",
			   d->n_failed_groups, HA_DGS_MAX);
	for (size_t i = 0; i < d->n_failed_groups; i++)
		if ((rc = name_ok(d->failed_groups[i], "dataplane.failed_groups", err, errlen)))
			return rc;
	if (d->n_luns > HA_DP_LUNS_MAX || d->n_luns > d->luns_failed)
		return gw_errf(err, errlen, -EINVAL, "dataplane.luns: %zu (at most %u, and at most "
			   "luns_failed %u)", d->n_luns, HA_DP_LUNS_MAX, d->luns_failed);
	for (size_t i = 0; i < d->n_luns; i++) {
		const Isergw__Ha__LunFault *f = d->luns[i];

		if (strlen(f->target) >= sizeof(((struct ha_lun_fault *)0)->target) ||
		    strlen(f->reason) >= sizeof(((struct ha_lun_fault *)0)->reason) ||
		    (strcmp(f->state, "failed") && strcmp(f->state, "offline")))
			return gw_errf(err, errlen, -EINVAL, "dataplane.luns[%zu]: a target, a state "
				   "(failed, offline) and a reason of bounded length are required", i);
		if ((rc = name_ok(f->device_group, "dataplane.luns.device_group", err, errlen)))
			return rc;
	}
	return 0;
}

static int check_sync(const Isergw__Ha__Sync *s, char *err, size_t errlen)
{
	int rc;

	if (s->digest.len != 0 && s->digest.len != HA_DIGEST_LEN)
		return gw_errf(err, errlen, -EINVAL, "sync.digest: %zu bytes (want 0 or %u)",
			   s->digest.len, HA_DIGEST_LEN);
	if (s->generation && !s->digest.len)
		return gw_errf(err, errlen, -EINVAL, "sync.digest: missing for generation %llu",
			   (unsigned long long)s->generation);
	if (!s->protocol_min || s->protocol_min > s->protocol_max)
		return gw_errf(err, errlen, -EINVAL, "sync.protocol: min %u max %u", s->protocol_min,
			   s->protocol_max);
	if (s->protocol_min > HA_PROTO_MAX)
		return gw_errf(err, errlen, -EPROTONOSUPPORT,
			   "sync: the sender speaks protocol %u..%u, we speak %u..%u",
			   s->protocol_min, s->protocol_max, HA_PROTO_MIN, HA_PROTO_MAX);
	if (!s->n_members || s->n_members > HA_MAX_MEMBERS)
		return gw_errf(err, errlen, -EINVAL, "sync.members: %zu (1..%u)", s->n_members,
			   HA_MAX_MEMBERS);
	for (size_t i = 1; i < s->n_members; i++)
		if (s->members[i] <= s->members[i - 1])
			return gw_errf(err, errlen, -EINVAL, "sync.members: not ascending");
	if (s->lease_ms > 600000)
		return gw_errf(err, errlen, -EINVAL, "sync.lease_ms: %llu (at most 600000)",
			   (unsigned long long)s->lease_ms);
	if (s->n_lu_locks > HA_LOCKS_MAX)
		return gw_errf(err, errlen, -EINVAL, "sync.lu_locks: %zu (at most %u)", s->n_lu_locks,
			   HA_LOCKS_MAX);
	for (size_t i = 0; i < s->n_lu_locks; i++)
		if (s->lu_locks[i]->naa.len != 16 || !s->lu_locks[i]->blocks ||
		    !s->lu_locks[i]->lock_id)
			return gw_errf(err, errlen, -EINVAL, "sync.lu_locks[%zu]: malformed", i);
	if (s->n_lu_states > HA_LU_MAX)
		return gw_errf(err, errlen, -EINVAL, "sync.lu_states: %zu (at most %u)", s->n_lu_states,
			   HA_LU_MAX);
	for (size_t i = 0; i < s->n_lu_states; i++) {
		const Isergw__Ha__LuBlob *b = s->lu_states[i];

		if (b->naa.len != 16 || !b->version || !b->state.len)
			return gw_errf(err, errlen, -EINVAL, "sync.lu_states[%zu]: a 16-byte naa, a "
				   "version >= 1 and a state are required", i);
		for (size_t k = 0; k < i; k++)
			if (!memcmp(s->lu_states[k]->naa.data, b->naa.data, 16))
				return gw_errf(err, errlen, -EINVAL, "sync.lu_states: an LU listed twice");
	}
	if (s->n_lu_parked > HA_PARKED_MAX)
		return gw_errf(err, errlen, -EINVAL, "sync.lu_parked: %zu (at most %u)", s->n_lu_parked,
			   HA_PARKED_MAX);
	for (size_t i = 0; i < s->n_lu_parked; i++) {
		struct ha_lu_parked pk;

		if (ha_lu_parked_from_pb(s->lu_parked[i], &pk))
			return gw_errf(err, errlen, -EINVAL, "sync.lu_parked[%zu]: malformed (a 16-byte "
				   "naa, a version, a node, an initiator port, a relative port "
				   "1..65535 and an ASC/ASCQ)", i);
	}
	if (s->dataplane && (rc = check_dataplane(s->dataplane, err, errlen)))
		return rc;
	return name_ok(s->node_name, "sync.node_name", err, errlen);
}

static int check_change(const Isergw__Ha__Change *c, char *err, size_t errlen)
{
	char msg[384];
	int rc;

	if (!c->request_id && c->kind_case != ISERGW__HA__CHANGE__KIND_PLACEMENT)
		return gw_errf(err, errlen, -EINVAL, "change.request_id: 0");
	switch (c->kind_case) {
	case ISERGW__HA__CHANGE__KIND_CONFIG_JSON:
		if (!c->config_json[0])
			return gw_errf(err, errlen, -EINVAL, "change.config_json: empty");
		return 0;
	case ISERGW__HA__CHANGE__KIND_DRAIN:
		return name_ok(c->drain->node, "change.drain.node", err, errlen);
	case ISERGW__HA__CHANGE__KIND_MOVE:
		rc = name_ok(c->move->device_group, "change.move.device_group", err, errlen);
		return rc ? rc : name_ok(c->move->node, "change.move.node", err, errlen);
	case ISERGW__HA__CHANGE__KIND_PLACEMENT:
		if (c->placement->n_owners > HA_OWNERS_MAX)
			return gw_errf(err, errlen, -EINVAL, "change.placement.owners: %zu (at most %u)",
				   c->placement->n_owners, HA_OWNERS_MAX);
		if (c->placement->n_live > HA_MAX_MEMBERS)
			return gw_errf(err, errlen, -EINVAL, "change.placement.live: %zu (at most %u)",
				   c->placement->n_live, HA_MAX_MEMBERS);
		for (size_t i = 0; i < c->placement->n_owners; i++) {
			const Isergw__Ha__DgOwner *o = c->placement->owners[i];

			rc = name_ok(o->device_group, "change.placement.owners.device_group", err,
				     errlen);
			rc = rc ? rc : name_ok(o->node, "change.placement.owners.node", err, errlen);
			rc = rc ? rc : name_ok(o->moving_from, "change.placement.owners.moving_from",
					       err, errlen);
			if (rc)
				return rc;
		}
		for (size_t i = 0; i < c->placement->n_live; i++)
			if ((rc = name_ok(c->placement->live[i], "change.placement.live", err, errlen)))
				return rc;
		return 0;
	case ISERGW__HA__CHANGE__KIND_LUN:
		/* the check the target passed when it was made (names.h), not a stricter one */
		if (gw_name_check(GW_NAME_ISCSI, c->lun->target, strlen(c->lun->target), msg,
				  sizeof(msg)))
			return gw_errf(err, errlen, -EINVAL, "change.lun.target: %s", msg);
		if (c->lun->lun >= 16384)
			return gw_errf(err, errlen, -EINVAL, "change.lun.lun: %u (0..16383)", c->lun->lun);
		if (c->lun->lun_json[0] && c->lun->lun_json[0] != '{')
			return gw_errf(err, errlen, -EINVAL, "change.lun.lun_json: not a JSON object");
		return 0;
	case ISERGW__HA__CHANGE__KIND_TOKEN: {
		const Isergw__Ha__TokenChange *t = c->token;
		char why[200];

		if (!t->role[0]) {
			if (t->hash[0] || t->created)
				return gw_errf(err, errlen, -EINVAL, "change.token: a revoke with a hash "
					   "or a time");
			if (!api_token_name_ok(t->name))
				return gw_errf(err, errlen, -EINVAL, "change.token.name: not a token name");
			return 0;
		}
		if (ha_token_check(t->name, t->role, t->hash, why, sizeof(why)))
			return gw_errf(err, errlen, -EINVAL, "change.token: %s", why);
		return 0;
	}
	default:
		return gw_errf(err, errlen, -EINVAL, "change: no kind (or an unknown one: %d)",
			   (int)c->kind_case);
	}
}

/* The protocol version m's body needs (docs/ha.md, "Messages"); what: its name in a refusal. */
static uint32_t body_proto(const HaMsg *m, const char **what)
{
	*what = "";
	switch (m->body_case) {
	case ISERGW__HA__GROUP_MSG__BODY_CHANGE:
		if (m->change->kind_case == ISERGW__HA__CHANGE__KIND_LUN) {
			*what = "change.lun";
			return 3;
		}
		if (m->change->kind_case == ISERGW__HA__CHANGE__KIND_TOKEN) {
			*what = "change.token";
			return HA_PROTO_TOKENS;
		}
		return HA_PROTO_MIN;
	case ISERGW__HA__GROUP_MSG__BODY_FENCED:
		*what = "fenced";
		return 2;
	case ISERGW__HA__GROUP_MSG__BODY_LU_PROPOSE:
		*what = "lu_propose";
		return HA_PROTO_LU;
	case ISERGW__HA__GROUP_MSG__BODY_LU_APPLIED:
		*what = "lu_applied";
		return HA_PROTO_LU;
	case ISERGW__HA__GROUP_MSG__BODY_LU_LOCK:
		*what = "lu_lock";
		return HA_PROTO_LU;
	case ISERGW__HA__GROUP_MSG__BODY_LU_UNLOCK:
		*what = "lu_unlock";
		return HA_PROTO_LU;
	case ISERGW__HA__GROUP_MSG__BODY_DATAPLANE:
		*what = "dataplane";
		return HA_PROTO_DP;
	default:
		return HA_PROTO_MIN;
	}
}

int ha_msg_decode(const uint8_t *buf, size_t len, HaMsg **out, char *err, size_t errlen)
{
	const char *what;
	HaMsg *m;
	int rc = 0;

	*out = NULL;
	if (len > HA_MSG_MAX)
		return gw_errf(err, errlen, -EMSGSIZE, "%zu bytes (at most %u)", len, HA_MSG_MAX);
	m = isergw__ha__group_msg__unpack(NULL, len, buf);
	if (!m)
		return gw_errf(err, errlen, -EBADMSG, "%zu bytes that do not decode as a GroupMsg", len);
	if (m->version > HA_PROTO_MAX) {
		rc = gw_errf(err, errlen, -EPROTONOSUPPORT,
			 "protocol version %u (we speak %u..%u)", m->version, HA_PROTO_MIN,
			 HA_PROTO_MAX);
		goto err_free;
	}
	if (m->version < HA_PROTO_MIN) {
		rc = gw_errf(err, errlen, -EINVAL, "protocol version %u (we speak %u..%u)", m->version,
			 HA_PROTO_MIN, HA_PROTO_MAX);
		goto err_free;
	}
	if ((rc = name_ok(m->cluster, "cluster", err, errlen)))
		goto err_free;
	if (m->version < body_proto(m, &what)) {
		rc = gw_errf(err, errlen, -EINVAL, "%s: in a protocol %u message", what, m->version);
		goto err_free;
	}
	switch (m->body_case) {
	case ISERGW__HA__GROUP_MSG__BODY_SYNC:
		rc = check_sync(m->sync, err, errlen);
		break;
	case ISERGW__HA__GROUP_MSG__BODY_STATE:
		if (!m->state->generation || !m->state->doc_json[0])
			rc = gw_errf(err, errlen, -EINVAL, "state: empty document or generation 0");
		break;
	case ISERGW__HA__GROUP_MSG__BODY_CHANGE:
		rc = check_change(m->change, err, errlen);
		break;
	case ISERGW__HA__GROUP_MSG__BODY_APPLIED:
		if (m->applied->status > 0 || m->applied->status < -4095)
			rc = gw_errf(err, errlen, -EINVAL, "applied.status: %d", m->applied->status);
		else if (strlen(m->applied->error) > 1024)
			rc = gw_errf(err, errlen, -EINVAL, "applied.error: longer than 1024 bytes");
		break;
	case ISERGW__HA__GROUP_MSG__BODY_HEARTBEAT:
		if (!m->heartbeat->seq)
			rc = gw_errf(err, errlen, -EINVAL, "heartbeat.seq: 0");
		break;
	case ISERGW__HA__GROUP_MSG__BODY_FENCED:
		if (!m->fenced->node[0])
			rc = gw_errf(err, errlen, -EINVAL, "fenced.node: empty");
		else
			rc = name_ok(m->fenced->node, "fenced.node", err, errlen);
		break;
	case ISERGW__HA__GROUP_MSG__BODY_LU_PROPOSE: {
		const Isergw__Ha__LuPropose *p = m->lu_propose;

		if (p->naa.len != 16 || (p->naa.data[0] >> 4) != 6)
			rc = gw_errf(err, errlen, -EINVAL, "lu_propose.naa: not an NAA type 6 designator "
				 "of 16 bytes (%zu bytes)", p->naa.len);
		else if (!p->proposal_id || !p->origin)
			rc = gw_errf(err, errlen, -EINVAL, "lu_propose: proposal_id and origin must be set");
		else if (!p->state.len)
			rc = gw_errf(err, errlen, -EINVAL, "lu_propose.state: empty");
		break;
	}
	case ISERGW__HA__GROUP_MSG__BODY_LU_APPLIED: {
		const Isergw__Ha__LuApplied *a = m->lu_applied;

		if (a->naa.len != 16 || !a->proposal_id || !a->origin || !a->version)
			rc = gw_errf(err, errlen, -EINVAL, "lu_applied: naa (16 bytes), origin, "
				 "proposal_id and version must be set");
		else if (a->status > 0 || a->status < -4095)
			rc = gw_errf(err, errlen, -EINVAL, "lu_applied.status: %d", a->status);
		break;
	}
	case ISERGW__HA__GROUP_MSG__BODY_LU_LOCK: {
		const Isergw__Ha__LuLock *k = m->lu_lock;

		if (k->naa.len != 16 || (k->naa.data[0] >> 4) != 6)
			rc = gw_errf(err, errlen, -EINVAL, "lu_lock.naa: not an NAA type 6 designator");
		else if (!k->lock_id || !k->origin || !k->blocks || k->lba + k->blocks < k->lba)
			rc = gw_errf(err, errlen, -EINVAL, "lu_lock: origin, lock_id and a range of "
				 "blocks >= 1 must be set");
		break;
	}
	case ISERGW__HA__GROUP_MSG__BODY_LU_UNLOCK:
		if (!m->lu_unlock->lock_id || !m->lu_unlock->origin)
			rc = gw_errf(err, errlen, -EINVAL, "lu_unlock: origin and lock_id must be set");
		break;
	case ISERGW__HA__GROUP_MSG__BODY_DATAPLANE:
		rc = check_dataplane(m->dataplane, err, errlen);
		break;
	default:
		rc = gw_errf(err, errlen, -EINVAL, "no body (or an unknown one: field %d)",
			 (int)m->body_case);
		break;
	}
	if (rc)
		goto err_free;
	*out = m;
	return 0;

err_free:
	isergw__ha__group_msg__free_unpacked(m, NULL);
	return rc;
}

void ha_msg_free(HaMsg *m)
{
	if (m)
		isergw__ha__group_msg__free_unpacked(m, NULL);
}

const char *ha_msg_kind(const HaMsg *m)
{
	switch (m->body_case) {
	case ISERGW__HA__GROUP_MSG__BODY_SYNC: return "sync";
	case ISERGW__HA__GROUP_MSG__BODY_STATE: return "state";
	case ISERGW__HA__GROUP_MSG__BODY_CHANGE: return "change";
	case ISERGW__HA__GROUP_MSG__BODY_APPLIED: return "applied";
	case ISERGW__HA__GROUP_MSG__BODY_HEARTBEAT: return "heartbeat";
	case ISERGW__HA__GROUP_MSG__BODY_FENCED: return "fenced";
	case ISERGW__HA__GROUP_MSG__BODY_LU_PROPOSE: return "lu-propose";
	case ISERGW__HA__GROUP_MSG__BODY_LU_APPLIED: return "lu-applied";
	case ISERGW__HA__GROUP_MSG__BODY_LU_LOCK: return "lu-lock";
	case ISERGW__HA__GROUP_MSG__BODY_LU_UNLOCK: return "lu-unlock";
	case ISERGW__HA__GROUP_MSG__BODY_DATAPLANE: return "dataplane";
	default: return "?";
	}
}
