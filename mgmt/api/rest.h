/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The REST resources of isergw-api under /api/v1 (docs/api.md), the pure
 * half: routing a method and a path to an operation, turning the HA agent's
 * answers (ClusterStatus, the cluster configuration JSON) into resource
 * JSON, applying a resource write to the cluster configuration, checking
 * request bodies (unknown fields, types), ETags and If-Match, and mapping
 * the agent's refusals to HTTP. No sockets, no clock, no locks: every
 * function is unit-tested by tests/unit/test_api_rest.c.
 *
 * Functions that can refuse return 0 or a negative errno and fill a
 * struct rest_err with the HTTP status, the field at fault (a path in the
 * request body, "" when none) and a one-line detail.
 */
#ifndef ISERGW_API_REST_H
#define ISERGW_API_REST_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isergw_ctl.pb-c.h"
#include "isergw_ha.pb-c.h"

#define REST_PREFIX "/api/v1"
#define REST_BODY_MAX (1u << 20)        /* a request body, at most (413 above) */
#define REST_NAME_MAX 255u              /* a path parameter (node, group, IQN, operation) */
#define REST_LUN_MAX 16383u

enum rest_op {
	REST_NONE = 0,
	REST_OPENAPI,
	REST_CLUSTER_GET,
	REST_NODES_LIST,
	REST_NODE_GET,
	REST_NODE_PATCH,
	REST_DGS_LIST,
	REST_DG_GET,
	REST_DG_PATCH,
	REST_TARGETS_LIST,
	REST_TARGET_POST,
	REST_TARGET_GET,
	REST_TARGET_DELETE,
	REST_LUNS_LIST,
	REST_LUN_POST,
	REST_LUN_GET,
	REST_LUN_PATCH,
	REST_LUN_DELETE,
	REST_CONFIG_GET,
	REST_CONFIG_PUT,
	REST_OPERATION_GET,
	REST_TARGET_PATCH,
	REST_ACLS_LIST,
	REST_ACL_POST,
	REST_ACL_GET,
	REST_ACL_PATCH,
	REST_ACL_DELETE,
	REST_DISCOVERY_CHAP_GET,
	REST_DISCOVERY_CHAP_PUT,
	REST_DISCOVERY_CHAP_DELETE,
	REST_PORTALS_LIST,
	REST_PORTAL_POST,
	REST_PORTAL_GET,
	REST_PORTAL_PATCH,
	REST_PORTAL_DELETE,
	REST_PORT_GROUPS_LIST,
	REST_SESSIONS_LIST,
	REST_SESSION_GET,
	REST_SESSION_DELETE,
	REST_OP_N,
};

struct rest_match {
	enum rest_op op;
	char name[REST_NAME_MAX + 1];   /* node, device group, target IQN or operation id */
	char sub[REST_NAME_MAX + 1];    /* the second name: an ACL's initiator */
	uint32_t lun;
	uint32_t num;                   /* a portal's rel_port_id, a session's TSIH: 1..65535 */
	const char *allow;              /* the methods of the path (405's Allow) */
	bool force;                     /* PATCH of a node: ?force=true (rest_force_param) */
};

struct rest_err {
	unsigned int code;              /* HTTP status */
	unsigned int retry_after_s;     /* 503: Retry-After (0: none) */
	char field[256];                /* in the request body, "" when none */
	char detail[768];
};

/*
 * The operation for method (HEAD counts as GET) on path (no query string,
 * already percent-decoded). 0; -ENOENT: no resource there (404); -EOPNOTSUPP:
 * the path exists but not with this method (405, m->allow set).
 */
int rest_route(const char *method, const char *path, struct rest_match *m);
const char *rest_op_name(enum rest_op op);
/*
 * The i-th path of the route table (below REST_PREFIX: "targets/{}/luns/{#}",
 * "{}" a name, "{#}" a LUN number, "{n}" a number 1..65535) and its methods;
 * -ENOENT past the end.
 * For the test that keeps mgmt/openapi.json true.
 */
int rest_route_at(size_t i, const char **pattern, const char **allow);
/* The operation takes a body (POST, PUT, PATCH). */
bool rest_op_has_body(enum rest_op op);
/* The operation changes the cluster (the bodies' and DELETE): If-Match applies. */
bool rest_op_writes(enum rest_op op);
/* The operation is served by the node's own isergwd (sessions), not the cluster. */
bool rest_op_local(enum rest_op op);

/* ---- ETags: a strong tag per cluster generation, "\"g42\"" */
void rest_etag(uint64_t generation, char *buf, size_t len);
/*
 * An If-Match header: one strong entity tag of ours (*gen set) or "*" (*gen
 * 0: any generation). -EINVAL (412: it can never match) for anything else:
 * a weak tag, a list, a tag not made by us.
 */
int rest_if_match(const char *header, uint64_t *gen);

/* ---- bodies */
/* Parse a request body: 400 (broken JSON, with line and column), 422 (not an object). */
int rest_parse_body(const char *body, size_t len, json_object **out, struct rest_err *e);

/* ---- from the agent's answers (every result a new object; NULL without memory) */
json_object *rest_cluster(const Isergw__Ha__ClusterStatus *st);
json_object *rest_nodes(const Isergw__Ha__ClusterStatus *st);
/* NULL when the node is not there (or without memory) */
json_object *rest_node(const Isergw__Ha__ClusterStatus *st, const char *name);
json_object *rest_dgs(const Isergw__Ha__ClusterStatus *st);
/*
 * A LUN's "status" (docs/api.md, LUNs): its state on every node as the nodes
 * report it, the overall state (online, degraded, failed, unknown) and a
 * Kubernetes-style "Ready" condition.
 */
json_object *rest_lun_status(const Isergw__Ha__ClusterStatus *st, const char *iqn, uint32_t lun);
json_object *rest_dg(const Isergw__Ha__ClusterStatus *st, const char *name);
/*
 * The operation "gN": whether every live member (synced agent) applied
 * generation N, which have and which have not. -EINVAL when id is not "gN".
 */
int rest_operation(const Isergw__Ha__ClusterStatus *st, const char *id, json_object **out);
json_object *rest_operation_new(uint64_t generation, char *const *applied, size_t napplied,
				char *const *pending, size_t npending);

/* The cluster configuration (GetConfig's config_json): an object, or -EBADMSG. */
int rest_config_parse(const char *config_json, json_object **out);
/*
 * A deep copy of a configuration, target, LUN or ACL with every CHAP secret
 * removed and the secret of an iscsi:// LUN path ("user%secret@") cut to
 * "user@": what GET shows. Secrets are write-only.
 */
json_object *rest_redact(json_object *o);
/*
 * Secrets a write left out are kept: every CHAP object of next without a
 * secret gets the one of the same place in cur (same target IQN, same ACL
 * initiator, same user), and every iscsi:// path equal to the redacted form
 * of cur's path at the same target and LUN number gets cur's path back. So
 * an exported configuration imports unchanged.
 */
void rest_keep_secrets(json_object *cur, json_object *next);

json_object *rest_targets(json_object *cfg);
/* NULL: no such target */
json_object *rest_target(json_object *cfg, const char *iqn);
json_object *rest_luns(json_object *cfg, const char *iqn);
json_object *rest_lun(json_object *cfg, const char *iqn, uint32_t lun);

/* ---- writes: change cfg in place (body is borrowed, copied where kept) */
int rest_target_create(json_object *cfg, json_object *body, char *iqn, size_t iqnlen,
		       struct rest_err *e);
int rest_target_delete(json_object *cfg, const char *iqn, struct rest_err *e);
/* A LUN without "lun" gets the lowest number free in the target (*lun). */
int rest_lun_create(json_object *cfg, const char *iqn, json_object *body, uint32_t *lun,
		    struct rest_err *e);
/* RFC 7396 JSON merge patch of one LUN; "lun" may not change. */
int rest_lun_patch(json_object *cfg, const char *iqn, uint32_t lun, json_object *patch,
		   struct rest_err *e);
int rest_lun_delete(json_object *cfg, const char *iqn, uint32_t lun, struct rest_err *e);
/*
 * The body of a LUN POST checked alone (fields, types, the lun range), for
 * the agent's ChangeLun, which adds it without the configuration being read
 * here: *has_lun and *lun from "lun".
 */
int rest_lun_body(json_object *body, bool *has_lun, uint32_t *lun, struct rest_err *e);
/*
 * The agent's answer to a LUN add or remove as the configuration it leaves
 * for the answer: {"targets": [{"iqn": iqn, "luns": [body with "lun"]}]}
 * (body borrowed; NULL when out of memory).
 */
json_object *rest_lun_made(const char *iqn, json_object *body, uint32_t lun);
/*
 * "targets[T].luns[L]" taken from the key path of an agent's refusal of a
 * LUN change ("targets[0].luns[7].block_size: ..."), "" when it names none.
 */
void rest_lun_error_prefix(const char *error, char *buf, size_t len);
/* RFC 7396 merge patch of a target: not "iqn", "luns" or "acls" (their own resources). */
int rest_target_patch(json_object *cfg, const char *iqn, json_object *patch, struct rest_err *e);

/* ---- ACLs of a target (targets[].acls[]), named by their initiator */
json_object *rest_acls(json_object *cfg, const char *iqn);
/* NULL: no such target or ACL */
json_object *rest_acl(json_object *cfg, const char *iqn, const char *initiator);
int rest_acl_create(json_object *cfg, const char *iqn, json_object *body, char *ini,
		    size_t inilen, struct rest_err *e);
/* RFC 7396; "initiator" may not change */
int rest_acl_patch(json_object *cfg, const char *iqn, const char *initiator,
		   json_object *patch, struct rest_err *e);
int rest_acl_delete(json_object *cfg, const char *iqn, const char *initiator,
		    struct rest_err *e);

/* ---- discovery CHAP: {"user": ...} ({} without one); PUT {"user", "secret"} */
json_object *rest_discovery_chap(json_object *cfg);
int rest_discovery_chap_put(json_object *cfg, json_object *body, struct rest_err *e);
int rest_discovery_chap_delete(json_object *cfg, struct rest_err *e);

/* ---- portals of a node (nodes[].portals[]), named by their rel_port_id */
/* NULL: no such node */
json_object *rest_portals(json_object *cfg, const char *node);
json_object *rest_portal(json_object *cfg, const char *node, uint32_t rel);
/* without "rel_port_id" the lowest free in the cluster (*rel) */
int rest_portal_create(json_object *cfg, const char *node, json_object *body, uint32_t *rel,
		       struct rest_err *e);
/* RFC 7396; only "url" may change */
int rest_portal_patch(json_object *cfg, const char *node, uint32_t rel, json_object *patch,
		      struct rest_err *e);
int rest_portal_delete(json_object *cfg, const char *node, uint32_t rel, struct rest_err *e);
/* the target port groups: one per node with portals (its tpg_id, its rel_port_ids) */
json_object *rest_port_groups(json_object *cfg);

/* ---- sessions, from isergwd's ListSessions (node: who answers) */
json_object *rest_sessions(const Isergw__Ctl__SessionList *sl, const char *node);
/* NULL: no session with this TSIH */
json_object *rest_session(const Isergw__Ctl__SessionList *sl, const char *node, uint32_t tsih);

/*
 * A LUN size as the configuration writes it (an integer, or a string with a
 * K/M/G/T suffix): 0 and the bytes, -EINVAL for anything else.
 */
int rest_size_parse(json_object *v, uint64_t *bytes);

/* PATCH of a node: {"drained": bool}. */
int rest_node_patch(json_object *body, bool *drained, struct rest_err *e);
/*
 * The query parameter force of a PATCH of a node (v NULL: absent): "true"
 * drains even a node whose drain would leave device groups without an owner
 * (the agent refuses that otherwise, 409). 0, or 422 naming force.
 */
int rest_force_param(const char *v, bool *force, struct rest_err *e);
/* PATCH of a device group: {"owner": "node"}. */
int rest_dg_patch(json_object *body, char *owner, size_t len, struct rest_err *e);

/*
 * Where the write of op landed in the cluster configuration, so that the
 * agent's key paths can be told as paths of the request body: "targets[T]"
 * for a target, "targets[T].luns[L]" for a LUN, "" for the whole
 * configuration. -ENOENT when the object is not in cfg.
 */
int rest_write_prefix(json_object *cfg, enum rest_op op, const char *iqn, uint32_t lun,
		      char *buf, size_t len);

/*
 * The same for the writes of sub-resources as well: an ACL (name the target,
 * sub the initiator: "targets[T].acls[A]"), a portal (name the node, num its
 * rel_port_id: "nodes[N].portals[P]"); other operations as rest_write_prefix
 * (num the LUN).
 */
int rest_write_prefix_sub(json_object *cfg, enum rest_op op, const char *name, const char *sub,
			  uint32_t num, char *buf, size_t len);

/*
 * A refusal of the agent (ApiReply.status and .error) as HTTP: -ENOLCK no
 * quorum and -EAGAIN (re-forming) 503 with Retry-After, -ESTALE 412,
 * -EINVAL (a validator) 422 with the key path as field (translated below
 * prefix, see rest_write_prefix), -ENOENT 404, -EHOSTDOWN/-EPERM/-EBUSY 409,
 * -ETIMEDOUT 504, everything else 500. Socket errors of the call itself
 * (-ECONNREFUSED, -ENOENT from connect, ...) are not refusals: see
 * rest_agent_unreachable.
 */
void rest_agent_refusal(int status, const char *error, const char *prefix, struct rest_err *e);
/*
 * A peer's status (the agent's ApiReply.status, isergwd's Reply.status) as
 * the negative errno it must be: -EPROTO for anything else (0, a positive
 * number, one past -4095, INT32_MIN), so that it can be negated and named.
 */
int rest_peer_errno(int32_t status);
void rest_agent_unreachable(int rc, const char *why, struct rest_err *e);

#endif
