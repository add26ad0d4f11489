/* SPDX-License-Identifier: Apache-2.0 */
/* The control socket's frames and request checks (proto/ctl_wire.h). */
#include "ctl_wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/log.h"
#include "common/fsutil.h"

/* ------------------------------------------------------------ frames */

int ctl_frame_pack(const ProtobufCMessage *m, uint8_t **out, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *buf;

	if (n > (m->descriptor == &isergw__ctl__reply__descriptor ? CTL_REPLY_FRAME_MAX
								     : CTL_FRAME_MAX))
		return -EMSGSIZE;
	buf = malloc(CTL_FRAME_HDR + n);
	if (!buf)
		return -ENOMEM;
	gw_frame_hdr_put(buf, (uint32_t)n);
	protobuf_c_message_pack(m, buf + CTL_FRAME_HDR);
	*out = buf;
	*len = CTL_FRAME_HDR + n;
	return 0;
}

/* ------------------------------------------------------------ reply arena */

void *ctl_arena_alloc(struct arena *a, size_t size)
{
	void *m;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 32;
		void **np = realloc(a->p, cap * sizeof(*np));

		if (!np) {
			a->failed = true;
			return NULL;
		}
		a->p = np;
		a->cap = cap;
	}
	m = calloc(1, size ? size : 1);
	if (!m) {
		a->failed = true;
		return NULL;
	}
	a->p[a->n++] = m;
	return m;
}

char *ctl_arena_strdup(struct arena *a, const char *s)
{
	size_t len = strlen(s);
	char *d = ctl_arena_alloc(a, len + 1);

	if (d)
		memcpy(d, s, len + 1);
	return d ? d : ctl_str("");
}

void ctl_arena_free(struct arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->p[i]);
	free(a->p);
	memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------ checks */

int ctl_check_enums(const ProtobufCMessage *m, char *err, size_t errlen)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)m;
		const void *member = base + f->offset;
		size_t n = 1;
		int rc;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			if (*(const uint32_t *)(const void *)(base + f->quantifier_offset) != f->id)
				continue;
		}
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			n = *(const size_t *)(const void *)(base + f->quantifier_offset);
			member = *(void *const *)member;
		}
		for (size_t k = 0; k < n; k++) {
			if (f->type == PROTOBUF_C_TYPE_ENUM) {
				int v = ((const int *)member)[k];

				if (!protobuf_c_enum_descriptor_get_value(f->descriptor, v))
					return gw_errf(err, errlen, -EINVAL,
						       "%s.%s: %d is not a valid %s", d->short_name,
						       f->name, v,
						       ((const ProtobufCEnumDescriptor *)f->descriptor)->short_name);
			} else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
				const ProtobufCMessage *sub;

				if (f->label == PROTOBUF_C_LABEL_REPEATED)
					sub = ((const ProtobufCMessage *const *)member)[k];
				else
					sub = *(const ProtobufCMessage *const *)member;
				if (sub && (rc = ctl_check_enums(sub, err, errlen)))
					return rc;
			}
		}
	}
	return 0;
}

/* The groups of one device group (SetAluaStates, SetAluaMap): 1..64, ids in range, no repeats. */
static int check_groups(const char *what, Isergw__Ctl__AluaGroupState *const *groups, size_t n,
			char *err, size_t errlen)
{
	if (n == 0)
		return gw_errf(err, errlen, -EINVAL, "%s: no groups", what);
	if (n > CTL_ALUA_MAX_GROUPS)
		return gw_errf(err, errlen, -EINVAL, "%s: %zu groups (at most %u)", what, n,
			       CTL_ALUA_MAX_GROUPS);
	for (size_t i = 0; i < n; i++) {
		const Isergw__Ctl__AluaGroupState *g = groups[i];

		if (g->tpg_id == 0 || g->tpg_id > 65535)
			return gw_errf(err, errlen, -EINVAL, "%s: groups[%zu].tpg_id %u not in 1..65535",
				       what, i, g->tpg_id);
		for (size_t k = 0; k < i; k++)
			if (groups[k]->tpg_id == g->tpg_id)
				return gw_errf(err, errlen, -EINVAL, "%s: group %u listed twice", what,
					       g->tpg_id);
	}
	return 0;
}

static int check_set_alua(const Isergw__Ctl__SetAluaStates *s, char *err, size_t errlen)
{
	if (s->epoch == 0)
		return gw_errf(err, errlen, -EINVAL, "set_alua_states: epoch must be >= 1");
	if (strlen(s->device_group) > CTL_DG_NAME_MAX)
		return gw_errf(err, errlen, -EINVAL, "set_alua_states: device_group longer than %u bytes",
			       CTL_DG_NAME_MAX);
	if (s->transition_ms > CTL_TRANSITION_MAX_MS)
		return gw_errf(err, errlen, -EINVAL, "set_alua_states: transition_ms %u above %u",
			       s->transition_ms, CTL_TRANSITION_MAX_MS);
	return check_groups("set_alua_states", s->groups, s->n_groups, err, errlen);
}

static int check_set_alua_map(const Isergw__Ctl__SetAluaMap *m, char *err, size_t errlen)
{
	char what[96];
	int rc;

	if (m->epoch == 0)
		return gw_errf(err, errlen, -EINVAL, "set_alua_map: epoch must be >= 1");
	if (m->n_device_groups == 0)
		return gw_errf(err, errlen, -EINVAL, "set_alua_map: no device groups");
	if (m->n_device_groups > CTL_ALUA_MAP_MAX_DG)
		return gw_errf(err, errlen, -EINVAL, "set_alua_map: %zu device groups (at most %u)",
			       m->n_device_groups, CTL_ALUA_MAP_MAX_DG);
	if (m->transition_ms > CTL_TRANSITION_MAX_MS)
		return gw_errf(err, errlen, -EINVAL, "set_alua_map: transition_ms %u above %u",
			       m->transition_ms, CTL_TRANSITION_MAX_MS);
	for (size_t i = 0; i < m->n_device_groups; i++) {
		const Isergw__Ctl__DeviceGroupStates *d = m->device_groups[i];

		if (strlen(d->device_group) > CTL_DG_NAME_MAX)
			return gw_errf(err, errlen, -EINVAL,
				       "set_alua_map: device_groups[%zu].device_group longer than %u bytes",
				       i, CTL_DG_NAME_MAX);
		for (size_t k = 0; k < i; k++)
			if (strcmp(ctl_dg_name(m->device_groups[k]->device_group),
				   ctl_dg_name(d->device_group)) == 0)
				return gw_errf(err, errlen, -EINVAL,
					       "set_alua_map: device group '%s' listed twice",
					       ctl_dg_name(d->device_group));
		snprintf(what, sizeof(what), "set_alua_map: device_groups[%zu]", i);
		rc = check_groups(what, d->groups, d->n_groups, err, errlen);
		if (rc)
			return rc;
	}
	if ((m->backend_pr_fence_set || m->n_backend_pr_fence) && !m->config_epoch)
		return gw_errf(err, errlen, -EINVAL, "set_alua_map: backend_pr_fence without "
			       "config_epoch (only a placement-only change carries it)");
	if (m->n_backend_pr_fence && !m->backend_pr_fence_set)
		return gw_errf(err, errlen, -EINVAL, "set_alua_map: backend_pr_fence without "
			       "backend_pr_fence_set");
	if (m->n_backend_pr_fence > CTL_PR_FENCE_MAX)
		return gw_errf(err, errlen, -EINVAL, "set_alua_map: %zu backend_pr_fence keys (at "
			       "most %u)", m->n_backend_pr_fence, CTL_PR_FENCE_MAX);
	for (size_t i = 0; i < m->n_backend_pr_fence; i++)
		if (!m->backend_pr_fence[i])
			return gw_errf(err, errlen, -EINVAL, "set_alua_map: backend_pr_fence[%zu] is 0",
				       i);
	return 0;
}

static int check_alua_done(const Isergw__Ctl__AluaRequestDone *d, char *err, size_t errlen)
{
	if (d->request_id == 0)
		return gw_errf(err, errlen, -EINVAL, "alua_request_done: request_id must be >= 1");
	if (d->status > 0 || d->status < -CTL_ERRNO_MAX)
		return gw_errf(err, errlen, -EINVAL,
			       "alua_request_done: status %d is neither 0 nor a negative errno",
			       d->status);
	if (strlen(d->reason) > CTL_REASON_MAX)
		return gw_errf(err, errlen, -EINVAL, "alua_request_done: reason longer than %u bytes",
			       CTL_REASON_MAX);
	return 0;
}

static int check_request(const CtlRequest *r, char *err, size_t errlen)
{
	switch (r->op_case) {
	case ISERGW__CTL__REQUEST__OP_GET_STATUS:
	case ISERGW__CTL__REQUEST__OP_LIST_SESSIONS:
	case ISERGW__CTL__REQUEST__OP_GET_COUNTERS:
	case ISERGW__CTL__REQUEST__OP_SUBSCRIBE:
	case ISERGW__CTL__REQUEST__OP_RELOAD_CONFIG:
		return 0;
	case ISERGW__CTL__REQUEST__OP_ALUA_REQUEST_DONE:
		return check_alua_done(r->alua_request_done, err, errlen);
	case ISERGW__CTL__REQUEST__OP_APPLY_CONFIG:
		if (r->apply_config->epoch == 0)
			return gw_errf(err, errlen, -EINVAL, "apply_config: epoch must be >= 1");
		if (!r->apply_config->config_json[0])
			return gw_errf(err, errlen, -EINVAL, "apply_config: empty configuration");
		return 0;
	case ISERGW__CTL__REQUEST__OP_SET_ALUA_STATES:
		return check_set_alua(r->set_alua_states, err, errlen);
	case ISERGW__CTL__REQUEST__OP_SET_ALUA_MAP:
		return check_set_alua_map(r->set_alua_map, err, errlen);
	case ISERGW__CTL__REQUEST__OP_RENEW_LEASE:
		if (r->renew_lease->expires_mono_ms == 0)
			return gw_errf(err, errlen, -EINVAL, "renew_lease: expires_mono_ms must be >= 1");
		return 0;
	case ISERGW__CTL__REQUEST__OP_STEP_DOWN:
		if (strlen(r->step_down->reason) > CTL_REASON_MAX)
			return gw_errf(err, errlen, -EINVAL, "step_down: reason longer than %u bytes",
				       CTL_REASON_MAX);
		return 0;
	case ISERGW__CTL__REQUEST__OP_GET_LEASE:
		return 0;
	case ISERGW__CTL__REQUEST__OP_CHANGE_LUN:
		if (!r->change_lun->epoch)
			return gw_errf(err, errlen, -EINVAL, "change_lun: epoch must be >= 1");
		if (!r->change_lun->target[0] || strlen(r->change_lun->target) > CTL_INITIATOR_MAX)
			return gw_errf(err, errlen, -EINVAL, "change_lun: target must be 1..%u bytes",
				       CTL_INITIATOR_MAX);
		if (r->change_lun->lun >= CTL_LUN_MAX)
			return gw_errf(err, errlen, -EINVAL, "change_lun: lun %u above %u",
				       r->change_lun->lun, CTL_LUN_MAX - 1);
		return 0;
	case ISERGW__CTL__REQUEST__OP_LU_STATE_APPLY:
		if (!r->lu_state_apply->state || r->lu_state_apply->state->naa.len != 16 ||
		    !r->lu_state_apply->state->version)
			return gw_errf(err, errlen, -EINVAL, "lu_state_apply: a state with a 16-byte "
				       "naa and a version >= 1 is required");
		return 0;
	case ISERGW__CTL__REQUEST__OP_LU_STATE_DONE:
		if (!r->lu_state_done->proposal_id || r->lu_state_done->status > 0)
			return gw_errf(err, errlen, -EINVAL, "lu_state_done: proposal_id >= 1 and a "
				       "status of 0 or a negative errno are required");
		if (strlen(r->lu_state_done->reason) > CTL_REASON_MAX)
			return gw_errf(err, errlen, -EINVAL, "lu_state_done: reason longer than %u "
				       "bytes", CTL_REASON_MAX);
		return 0;
	case ISERGW__CTL__REQUEST__OP_GET_ALUA_STATES:
		if (strlen(r->get_alua_states->device_group) > CTL_DG_NAME_MAX)
			return gw_errf(err, errlen, -EINVAL,
				       "get_alua_states: device_group longer than %u bytes",
				       CTL_DG_NAME_MAX);
		return 0;
	case ISERGW__CTL__REQUEST__OP_LOGOUT: {
		const Isergw__Ctl__Logout *l = r->logout;

		switch (l->who_case) {
		case ISERGW__CTL__LOGOUT__WHO_TSIH:
			if (l->tsih == 0 || l->tsih > 65535)
				return gw_errf(err, errlen, -EINVAL, "logout: tsih %u not in 1..65535",
					       l->tsih);
			break;
		case ISERGW__CTL__LOGOUT__WHO_INITIATOR:
			if (!l->initiator[0] || strlen(l->initiator) > CTL_INITIATOR_MAX)
				return gw_errf(err, errlen, -EINVAL,
					       "logout: initiator name must be 1..%u bytes",
					       CTL_INITIATOR_MAX);
			break;
		default:
			return gw_errf(err, errlen, -EINVAL, "logout: neither tsih nor initiator given");
		}
		if (l->grace_s > CTL_LOGOUT_GRACE_MAX_S)
			return gw_errf(err, errlen, -EINVAL, "logout: grace_s %u above %u", l->grace_s,
				       CTL_LOGOUT_GRACE_MAX_S);
		return 0;
	}
	default:
		break;
	}
	if (r->base.n_unknown_fields)
		return gw_errf(err, errlen, -EOPNOTSUPP, "unknown operation (field %u)",
			       r->base.unknown_fields[0].tag);
	return gw_errf(err, errlen, -EOPNOTSUPP, "no operation in the request");
}

int ctl_request_decode(const uint8_t *buf, size_t len, CtlRequest **out, char *err,
		       size_t errlen)
{
	CtlRequest *r;
	int rc;

	r = isergw__ctl__request__unpack(NULL, len, buf);
	if (!r)
		return gw_errf(err, errlen, -EBADMSG,
			       "malformed request: %zu bytes that do not decode as a Request", len);
	rc = ctl_check_enums(&r->base, err, errlen);
	if (!rc)
		rc = check_request(r, err, errlen);
	if (rc) {
		isergw__ctl__request__free_unpacked(r, NULL);
		return rc;
	}
	*out = r;
	return 0;
}

void ctl_request_free(CtlRequest *r)
{
	if (r)
		isergw__ctl__request__free_unpacked(r, NULL);
}

CtlReply *ctl_reply_unpack(const uint8_t *buf, size_t len)
{
	return isergw__ctl__reply__unpack(NULL, len, buf);
}

void ctl_reply_free(CtlReply *r)
{
	if (r)
		isergw__ctl__reply__free_unpacked(r, NULL);
}

static int check_alua_change(const Isergw__Ctl__AluaChangeRequest *a, char *err, size_t errlen)
{
	if (a->request_id == 0)
		return gw_errf(err, errlen, -EINVAL, "alua_change_request: request_id must be >= 1");
	if (strlen(a->device_group) > CTL_DG_NAME_MAX)
		return gw_errf(err, errlen, -EINVAL,
			       "alua_change_request: device_group longer than %u bytes",
			       CTL_DG_NAME_MAX);
	if (strlen(a->initiator_port) > CTL_IPORT_MAX)
		return gw_errf(err, errlen, -EINVAL,
			       "alua_change_request: initiator_port longer than %u bytes",
			       CTL_IPORT_MAX);
	if (a->rel_port_id > 65535 || a->tpg_id > 65535)
		return gw_errf(err, errlen, -EINVAL,
			       "alua_change_request: rel_port_id/tpg_id above 65535");
	if (a->n_groups == 0 || a->n_groups > CTL_ALUA_MAX_GROUPS)
		return gw_errf(err, errlen, -EINVAL, "alua_change_request: %zu groups (1..%u)",
			       a->n_groups, CTL_ALUA_MAX_GROUPS);
	for (size_t i = 0; i < a->n_groups; i++) {
		const Isergw__Ctl__AluaGroupState *g = a->groups[i];

		if (g->tpg_id == 0 || g->tpg_id > 65535)
			return gw_errf(err, errlen, -EINVAL,
				       "alua_change_request: groups[%zu].tpg_id %u not in 1..65535", i,
				       g->tpg_id);
		for (size_t k = 0; k < i; k++)
			if (a->groups[k]->tpg_id == g->tpg_id)
				return gw_errf(err, errlen, -EINVAL,
					       "alua_change_request: group %u listed twice", g->tpg_id);
	}
	return 0;
}

int ctl_reply_decode(const uint8_t *buf, size_t len, CtlReply **out, char *err, size_t errlen)
{
	CtlReply *r = isergw__ctl__reply__unpack(NULL, len, buf);
	int rc;

	if (!r)
		return gw_errf(err, errlen, -EBADMSG,
			       "malformed reply: %zu bytes that do not decode as a Reply", len);
	rc = ctl_check_enums(&r->base, err, errlen);
	if (!rc && r->payload_case == ISERGW__CTL__REPLY__PAYLOAD_EVENT) {
		const Isergw__Ctl__Event *e = r->event;

		if (r->status)
			rc = gw_errf(err, errlen, -EINVAL, "event with status %d", r->status);
		else if (e->seq == 0)
			rc = gw_errf(err, errlen, -EINVAL, "event: seq must be >= 1");
		else if (e->kind_case == ISERGW__CTL__EVENT__KIND_ALUA_CHANGE_REQUEST)
			rc = check_alua_change(e->alua_change_request, err, errlen);
		/* a kind this client does not know (a newer daemon): passed on, to be skipped */
	}
	if (rc) {
		isergw__ctl__reply__free_unpacked(r, NULL);
		return rc;
	}
	*out = r;
	return 0;
}

const char *ctl_op_name(const CtlRequest *r)
{
	const ProtobufCFieldDescriptor *f;

	f = protobuf_c_message_descriptor_get_field(&isergw__ctl__request__descriptor,
						    (unsigned int)r->op_case);
	return f ? f->name : "unknown";
}

static const struct {
	const char *name;
	int state;
} alua_names[] = {
	{ "ao", ISERGW__CTL__ALUA_STATE__ALUA_AO },
	{ "ano", ISERGW__CTL__ALUA_STATE__ALUA_ANO },
	{ "standby", ISERGW__CTL__ALUA_STATE__ALUA_STANDBY },
	{ "unavailable", ISERGW__CTL__ALUA_STATE__ALUA_UNAVAILABLE },
	{ "offline", ISERGW__CTL__ALUA_STATE__ALUA_OFFLINE },
	{ "transitioning", ISERGW__CTL__ALUA_STATE__ALUA_TRANSITIONING },
};

const char *ctl_alua_state_name(int state)
{
	for (size_t i = 0; i < sizeof(alua_names) / sizeof(alua_names[0]); i++)
		if (alua_names[i].state == state)
			return alua_names[i].name;
	return "?";
}

int ctl_alua_state_parse(const char *s, int *state)
{
	for (size_t i = 0; i < sizeof(alua_names) / sizeof(alua_names[0]); i++)
		if (strcasecmp(alua_names[i].name, s) == 0) {
			*state = alua_names[i].state;
			return 0;
		}
	return -EINVAL;
}

/* ------------------------------------------------------------ client side */

int ctl_frame_send(int fd, const ProtobufCMessage *m)
{
	uint8_t *buf;
	size_t len;
	int rc;

	rc = ctl_frame_pack(m, &buf, &len);
	if (rc)
		return rc;
	rc = gw_write_all(fd, buf, len);
	free(buf);
	return rc;
}

int ctl_send_request(int fd, const CtlRequest *req)
{
	return ctl_frame_send(fd, &req->base);
}

/* Waits for one whole frame of the daemon (up to CTL_REPLY_FRAME_MAX) into rx. */
static int recv_body(int fd, struct gw_frame_rx *rx, int timeout_ms)
{
	return gw_frame_recv(fd, rx, CTL_REPLY_FRAME_MAX, timeout_ms);
}

int ctl_recv_frame(int fd, CtlReply **out, int timeout_ms, char *err, size_t errlen)
{
	struct gw_frame_rx rx;
	int rc;

	ctl_frame_rx_init(&rx);
	rc = recv_body(fd, &rx, timeout_ms);
	if (rc == 0)
		rc = ctl_reply_decode(rx.body, rx.len, out, err, errlen);
	ctl_frame_rx_reset(&rx);
	return rc;
}

int ctl_recv_reply(int fd, CtlReply **out, int timeout_ms)
{
	struct gw_frame_rx rx;
	int rc;

	ctl_frame_rx_init(&rx);
	rc = recv_body(fd, &rx, timeout_ms);
	if (rc == 0) {
		*out = ctl_reply_unpack(rx.body, rx.len);
		rc = *out ? 0 : -EBADMSG;
	}
	ctl_frame_rx_reset(&rx);
	return rc;
}
