/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration's field tables (docs/configuration.md): one table per
 * JSON object (the top level, portals, targets, LUNs, ACLs, CHAP, port and
 * device groups), each key with its kind, its range and how it is stored,
 * and the parsers of the keys no kind describes.
 */
#include "config/config.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "config/names.h"
#include "config_priv.h"

static int parse_log_level(struct gw_vctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;
	enum gw_log_level lvl;
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return gw_verr(c, "expected a string, got %s", cfg_jtype(v));
	s = json_object_get_string(v);
	if (gw_log_parse_level(s, &lvl) || cfg_str_copy(cfg->log_level, sizeof(cfg->log_level), s))
		return gw_verr(c, "\"%s\" is not one of err, warn, notice, info, debug", s);
	return 0;
}

static const char *const fencing_words[] = { "reservation", "none", NULL };
static const char *const non_owner_words[] = { "active/non-optimized", "standby", "unavailable",
					       NULL };

/* A string that is one of words: *idx is its index. */
static int parse_word(struct gw_vctx *c, struct json_object *v, const char *const *words,
		      unsigned int *idx)
{
	char list[128] = "";
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return gw_verr(c, "expected a string, got %s", cfg_jtype(v));
	s = json_object_get_string(v);
	for (*idx = 0; words[*idx]; (*idx)++)
		if (strcmp(s, words[*idx]) == 0)
			return 0;
	for (const char *const *w = words; *w; w++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
			 w == words ? "" : ", ", *w);
	return gw_verr(c, "\"%s\" is not one of %s", s, list);
}

/* A string that is one of two words: *out is false for `no`, true for `yes`. */
static int parse_two_words(struct gw_vctx *c, struct json_object *v, const char *no,
			   const char *yes, bool *out)
{
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return gw_verr(c, "expected a string, got %s", cfg_jtype(v));
	s = json_object_get_string(v);
	if (strcmp(s, no) == 0)
		*out = false;
	else if (strcmp(s, yes) == 0)
		*out = true;
	else
		return gw_verr(c, "\"%s\" is not one of %s, %s", s, no, yes);
	return 0;
}

static int parse_alua_policy(struct gw_vctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;

	return parse_two_words(c, v, "local", "external", &cfg->alua_policy_external);
}

static int parse_lu_state(struct gw_vctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;

	return parse_two_words(c, v, "local", "cluster", &cfg->lu_state_cluster);
}

uint64_t gw_backend_pr_key(uint16_t tpg_id)
{
	return GW_PR_KEY_BASE | tpg_id;
}

int gw_parse_pr_key(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t n;

	if (!s || (strncmp(s, "0x", 2) != 0 && strncmp(s, "0X", 2) != 0))
		return -EINVAL;
	s += 2;
	n = strlen(s);
	if (n == 0 || n > 16 || !cfg_all_hex(s, n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		v = v << 4 | (uint64_t)cfg_hex_val(s[i]);
	if (v == 0)
		return -EINVAL;
	*out = v;
	return 0;
}

static bool fence_listed(const struct gw_config *c, uint64_t key)
{
	if (!c || !c->backend_fencing || !c->backend_pr_key)
		return false;
	for (size_t i = 0; i < c->nbackend_pr_fence; i++)
		if (c->backend_pr_fence[i] == key)
			return true;
	return false;
}

size_t gw_config_fence_new(const struct gw_config *old, const struct gw_config *ncfg,
			   uint64_t *out)
{
	size_t n = 0;

	if (!ncfg || !ncfg->backend_fencing || !ncfg->backend_pr_key)
		return 0;
	for (size_t i = 0; i < ncfg->nbackend_pr_fence && i < GW_PR_FENCE_MAX; i++)
		if (!fence_listed(old, ncfg->backend_pr_fence[i]))
			out[n++] = ncfg->backend_pr_fence[i];
	return n;
}

static int parse_backend_fencing(struct gw_vctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;
	unsigned int i;
	int rc = parse_word(c, v, fencing_words, &i);

	if (!rc)
		cfg->backend_fencing = i == 0;
	return rc;
}

static int pr_key_of(struct gw_vctx *c, struct json_object *v, uint64_t *out)
{
	if (!json_object_is_type(v, json_type_string))
		return gw_verr(c, "expected a string, got %s", cfg_jtype(v));
	if (gw_parse_pr_key(json_object_get_string(v), out))
		return gw_verr(c, "\"%s\" is not a reservation key (0x and 1..16 hex digits, not zero)",
			   json_object_get_string(v));
	return 0;
}

static int parse_backend_pr_key(struct gw_vctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;

	return pr_key_of(c, v, &cfg->backend_pr_key);
}

/* "backend_pr_fence": ["0x...", ...] */
static int parse_backend_pr_fence(struct gw_vctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;
	size_t len;

	if (!json_object_is_type(v, json_type_array))
		return gw_verr(c, "expected an array, got %s", cfg_jtype(v));
	len = json_object_array_length(v);
	if (len > GW_PR_FENCE_MAX)
		return gw_verr(c, "%zu keys (at most %u)", len, GW_PR_FENCE_MAX);
	for (size_t i = 0; i < len; i++) {
		size_t old = gw_vpath_index(c, i);
		int rc = pr_key_of(c, json_object_array_get_idx(v, i), &cfg->backend_pr_fence[i]);

		if (rc)
			return rc;
		gw_vpath_pop(c, old);
	}
	cfg->nbackend_pr_fence = len;
	return 0;
}

static int parse_portal_url(struct gw_vctx *c, struct json_object *v, void *base)
{
	struct gw_portal_cfg *p = base, parsed;
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return gw_verr(c, "expected a string, got %s", cfg_jtype(v));
	s = json_object_get_string(v);
	if (gw_portal_parse(s, &parsed))
		return gw_verr(c, "\"%s\" is not a portal (tcp://ADDR[:PORT] or iser://ADDR[:PORT])", s);
	p->transport = parsed.transport;
	memcpy(p->addr, parsed.addr, sizeof(p->addr));
	p->port = parsed.port;
	return 0;
}

/* "6..." 32 hex digits (NAA IEEE Registered Extended), optional "naa." prefix. */
static int parse_naa_string(const char *s, uint8_t naa[16])
{
	if (strncasecmp(s, "naa.", 4) == 0)
		s += 4;
	if (strlen(s) != 32 || !cfg_all_hex(s, 32) || s[0] != '6')
		return -EINVAL;
	for (size_t i = 0; i < 16; i++)
		naa[i] = (uint8_t)(cfg_hex_val(s[2 * i]) << 4 | cfg_hex_val(s[2 * i + 1]));
	return 0;
}

static int parse_lun_naa(struct gw_vctx *c, struct json_object *v, void *base)
{
	struct gw_lun_cfg *l = base;

	if (!json_object_is_type(v, json_type_string))
		return gw_verr(c, "expected a string, got %s", cfg_jtype(v));
	if (parse_naa_string(json_object_get_string(v), l->naa))
		return gw_verr(c, "\"%s\" is not an NAA type 6 designator (32 hex digits starting with 6)",
			   json_object_get_string(v));
	l->naa_set = true;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* the tables                                                               */

static const struct gw_field chap_fields[] = {
	F_STR(struct gw_chap_cfg, user, 0, false, "the CHAP name"),
	F_STR(struct gw_chap_cfg, secret, 0, false, "the CHAP secret (12..16 bytes wanted)"),
};
const struct gw_ftable gw_schema_chap = TABLE(chap_fields);

static const struct gw_field portal_fields[] = {
	F_FN("url", parse_portal_url, true, GW_FT_STRING,
	     "tcp://ADDR[:PORT], iser://ADDR[:PORT] or ADDR[:PORT]"),
	F_UINT(struct gw_portal_cfg, tpgt, 1, 65535, "the target portal group tag"),
	F_UINT(struct gw_portal_cfg, rel_port_id, 1, 65535, "the relative target port id"),
	F_UINT(struct gw_portal_cfg, tpg_id, 1, 65535, "the ALUA target port group"),
};
const struct gw_ftable gw_schema_portal = TABLE(portal_fields);

static const struct gw_field lun_fields[] = {
	F_UINT(struct gw_lun_cfg, lun, 0, CFG_LUN_MAX - 1, "the LUN number, unique in the target"),
	F_NAME(struct gw_lun_cfg, path, 1, true, GW_NAME_PATH,
	       "a file, a block device or iscsi://[user%secret@]HOST[:PORT]/IQN/LUN"),
	F_SIZE(struct gw_lun_cfg, size, "bytes (K, M, G, T suffixes); 0: the file must exist"),
	F_UINT(struct gw_lun_cfg, block_size, 0, UINT32_MAX, "512 or 4096"),
	F_STR(struct gw_lun_cfg, serial, 1, false, "the unit serial number, printable ASCII"),
	F_FN("naa", parse_lun_naa, false, GW_FT_STRING, "the NAA type 6 designator, 32 hex digits"),
	F_BOOL(struct gw_lun_cfg, readonly, "refuse writes"),
	F_BOOL(struct gw_lun_cfg, write_cache, "report a volatile write cache"),
	F_BOOL(struct gw_lun_cfg, thin, "advertise thin provisioning and UNMAP"),
	F_STR(struct gw_lun_cfg, vendor, 1, false, "the INQUIRY vendor, printable ASCII"),
	F_STR(struct gw_lun_cfg, product, 1, false, "the INQUIRY product, printable ASCII"),
	F_SIZE(struct gw_lun_cfg, max_transfer, "the longest READ or WRITE, bytes; 0: none"),
	F_UINT(struct gw_lun_cfg, backend_sessions, 1, 64, "iscsi:// LUNs: sessions to the backend"),
	F_UINT(struct gw_lun_cfg, backend_hold_s, 1, 3600,
	       "iscsi:// LUNs: how long commands wait for an unreachable backend"),
	F_UINT(struct gw_lun_cfg, backend_timeout_s, 1, 3600,
	       "iscsi:// LUNs: how long one backend command may take"),
	F_SIZE(struct gw_lun_cfg, backend_read_chunk,
	       "iscsi:// LUNs: longer READs go as pieces of this size; 0: never"),
	F_NAME(struct gw_lun_cfg, backend_initiator, 1, false, GW_NAME_ISCSI,
	       "iscsi:// LUNs: our initiator name towards the backend"),
	F_STR(struct gw_lun_cfg, device_group, 1, false, "the ALUA device group of the LUN"),
};
const struct gw_ftable gw_schema_lun = TABLE(lun_fields);

static const struct gw_field acl_fields[] = {
	F_NAME(struct gw_acl_cfg, initiator, 1, true, GW_NAME_ISCSI, "the initiator's name"),
	F_OBJ(struct gw_acl_cfg, chap, gw_schema_chap, "the CHAP this initiator must pass"),
};
const struct gw_ftable gw_schema_acl = TABLE(acl_fields);

void cfg_lun_init(void *el, size_t idx)
{
	gw_lun_defaults(el);
	((struct gw_lun_cfg *)el)->lun = (uint32_t)idx; /* overwritten by "lun" */
}

static void acl_init(void *el, size_t idx)
{
	memset(el, 0, sizeof(struct gw_acl_cfg));
}

static const struct gw_field target_fields[] = {
	F_NAME(struct gw_target_cfg, iqn, 1, true, GW_NAME_ISCSI, "the target's name"),
	F_NAME(struct gw_target_cfg, alias, 0, false, GW_NAME_ALIAS, "the TargetAlias"),
	F_OBJ(struct gw_target_cfg, chap, gw_schema_chap, "the CHAP initiators must pass"),
	F_OBJ(struct gw_target_cfg, mutual_chap, gw_schema_chap, "the CHAP the target answers"),
	F_ARRAY(struct gw_target_cfg, acls, nacls, acl_init, gw_schema_acl,
		"the initiators let in; none: all"),
	F_UINT(struct gw_target_cfg, max_recv_dsl, 0, UINT32_MAX,
	       "MaxRecvDataSegmentLength, 512..16777215"),
	F_UINT(struct gw_target_cfg, max_burst, CFG_DSL_MIN, CFG_DSL_MAX, "MaxBurstLength"),
	F_UINT(struct gw_target_cfg, first_burst, CFG_DSL_MIN, CFG_DSL_MAX, "FirstBurstLength"),
	F_UINT(struct gw_target_cfg, max_outstanding_r2t, 1, 65535, "MaxOutstandingR2T"),
	F_BOOL(struct gw_target_cfg, initial_r2t, "InitialR2T"),
	F_BOOL(struct gw_target_cfg, immediate_data, "ImmediateData"),
	F_UINT(struct gw_target_cfg, queue_depth, 1, CFG_QDEPTH_MAX, "commands per session"),
	F_ARRAY(struct gw_target_cfg, luns, nluns, cfg_lun_init, gw_schema_lun, "the target's LUNs"),
};
const struct gw_ftable gw_schema_target = TABLE(target_fields);

static void portal_init(void *el, size_t idx)
{
	gw_portal_defaults(el);
	((struct gw_portal_cfg *)el)->rel_port_id = (uint16_t)(idx + 1);
}

static void target_init(void *el, size_t idx)
{
	gw_target_defaults(el);
}

/* "rel_port_ids": [1, 2, ...] */
static int parse_rel_port_ids(struct gw_vctx *c, struct json_object *v, void *base)
{
	struct gw_port_group_cfg *g = base;
	size_t len;

	if (!json_object_is_type(v, json_type_array))
		return gw_verr(c, "expected an array, got %s", cfg_jtype(v));
	len = json_object_array_length(v);
	if (len == 0 || len > GW_PG_PORTS_MAX)
		return gw_verr(c, "%zu ports (1..%u)", len, GW_PG_PORTS_MAX);
	for (size_t i = 0; i < len; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		int64_t x;

		if (!json_object_is_type(e, json_type_int))
			return gw_verr(c, "[%zu]: expected an integer, got %s", i, cfg_jtype(e));
		x = json_object_get_int64(e);
		if (x < 1 || x > 65535)
			return gw_verr(c, "[%zu]: %lld out of range (1..65535)", i, (long long)x);
		g->rel_port_ids[i] = (uint16_t)x;
	}
	g->nrel_port_ids = len;
	return 0;
}

static const struct gw_field port_group_fields[] = {
	F_UINT(struct gw_port_group_cfg, tpg_id, 1, 65535, "the target port group id"),
	{ F_FN_("rel_port_ids", parse_rel_port_ids, true, GW_FT_ARRAY,
		"its relative ports, 1..64 of them"),
	  .elem = GW_FT_INTEGER, .min = 1, .max = 65535 },
};
const struct gw_ftable gw_schema_port_group = TABLE(port_group_fields);

static int parse_non_owner_state(struct gw_vctx *c, struct json_object *v, void *base)
{
	struct gw_device_group_cfg *d = base;
	unsigned int i;
	int rc = parse_word(c, v, non_owner_words, &i);

	if (!rc)
		d->non_owner_state = (uint8_t)(i + 1);  /* 1 active/non-optimized .. 3 unavailable */
	return rc;
}


static const struct gw_field device_group_fields[] = {
	F_STR(struct gw_device_group_cfg, name, 1, true, "the device group's name"),
	F_UINT(struct gw_device_group_cfg, owner_tpg_id, 0, 65535,
	       "the target port group owning its LUNs; 0: none"),
	{ F_FN_("non_owner_state", parse_non_owner_state, false, GW_FT_STRING,
		"the state of the groups that do not own it"), .words = non_owner_words },
};
const struct gw_ftable gw_schema_device_group = TABLE(device_group_fields);

static void port_group_init(void *el, size_t idx)
{
	(void)idx;
	memset(el, 0, sizeof(struct gw_port_group_cfg));
}

static void device_group_init(void *el, size_t idx)
{
	(void)idx;
	memset(el, 0, sizeof(struct gw_device_group_cfg));
	((struct gw_device_group_cfg *)el)->non_owner_state = 1;
}

static const char *const log_words[] = { "err", "warn", "notice", "info", "debug", NULL };
static const char *const alua_policy_words[] = { "local", "external", NULL };
/* in the words of the cluster document's check, which defaults to cluster */
static const char *const lu_state_words[] = { "cluster", "local", NULL };

/* .cluster: the cluster document's "gateway" object may set it for every node (docs/ha-config.md) */
static const struct gw_field config_fields[] = {
	{ F_UINT_(struct gw_config, reactors, 0, CFG_REACTORS_MAX, "reactor threads; 0: one per CPU"),
	  .cluster = true },
	{ F_FN_("log_level", parse_log_level, false, GW_FT_STRING, "what is logged"),
	  .words = log_words, .cluster = true },
	F_STR(struct gw_config, state_dir, 1, false, "persistent state (reservations)"),
	F_STR(struct gw_config, ctl_socket, 1, false, "the control socket"),
	F_STR(struct gw_config, shared_state_dir, 0, false,
	      "the LU state shared by the nodes of one host; empty: standalone"),
	{ F_ARRAY_(struct gw_config, port_groups, nport_groups, port_group_init, gw_schema_port_group,
		   "ALUA target port groups"), .max_items = 64, .many = "target port groups" },
	{ F_ARRAY_(struct gw_config, device_groups, ndevice_groups, device_group_init,
		   gw_schema_device_group, "ALUA device groups"), .max_items = 256,
	  .many = "device groups" },
	{ F_FN_("alua_policy", parse_alua_policy, false, GW_FT_STRING,
		"who applies SET TARGET PORT GROUPS"), .words = alua_policy_words },
	{ F_FN_("lu_state", parse_lu_state, false, GW_FT_STRING, "where the LU state lives"),
	  .words = lu_state_words, .cluster = true },
	{ F_UINT_(struct gw_config, alua_request_timeout_ms, 100, 600000,
		 "how long SET TARGET PORT GROUPS waits for the policy owner"), .cluster = true },
	F_BOOL(struct gw_config, alua_lease, "serve ALUA-governed I/O only under the agent's lease"),
	{ F_UINT_(struct gw_config, alua_lease_unavailable_ms, 0, 600000,
		 "Transitioning this long after the lease ran out"), .cluster = true },
	{ F_FN_("backend_fencing", parse_backend_fencing, false, GW_FT_STRING,
		"iscsi:// backends: fence with persistent reservations or not"),
	  .words = fencing_words, .cluster = true },
	F_FN("backend_pr_key", parse_backend_pr_key, false, GW_FT_STRING,
	     "this node's reservation key, 0x and 1..16 hex digits"),
	{ F_FN_("backend_pr_fence", parse_backend_pr_fence, false, GW_FT_ARRAY,
		"the reservation keys of the nodes to fence"), .elem = GW_FT_STRING },
	{ F_UINT_(struct gw_config, nop_interval_s, 0, CFG_TIMEOUT_MAX,
		 "a NOP-In to a connection idle this long; 0: never"), .cluster = true },
	{ F_UINT_(struct gw_config, nop_timeout_s, 1, CFG_TIMEOUT_MAX,
		 "drop a connection not answering a NOP-In this long"), .cluster = true },
	{ F_UINT_(struct gw_config, login_timeout_s, 1, CFG_TIMEOUT_MAX,
		 "a login must complete within this time"), .cluster = true },
	{ F_UINT_(struct gw_config, max_logins_per_address, 1, 65535,
		 "connections from one address (IPv6: a /64) logging in at once"), .cluster = true },
	{ F_BOOL_(struct gw_config, tcp_splice,
		  "TCP: large READs' data spliced from the page cache, not copied"), .cluster = true },
	F_OBJ(struct gw_config, discovery_chap, gw_schema_chap, "the CHAP discovery sessions pass"),
	{ F_ARRAY_(struct gw_config, portals, nportals, portal_init, gw_schema_portal,
		   "where isergwd listens"), .max_items = 65535, .many = "portals" },
	F_ARRAY(struct gw_config, targets, ntargets, target_init, gw_schema_target,
		"the iSCSI targets"),
};
const struct gw_ftable gw_schema_config = TABLE(config_fields);

_Static_assert(sizeof(config_fields) / sizeof(config_fields[0]) <= FIELDS_MAX, "seen[] too small");
_Static_assert(sizeof(target_fields) / sizeof(target_fields[0]) <= FIELDS_MAX, "seen[] too small");
_Static_assert(sizeof(lun_fields) / sizeof(lun_fields[0]) <= FIELDS_MAX, "seen[] too small");

/* ------------------------------------------------------------------------ */
/* the cluster document's own objects (docs/ha-config.md)                   */

static const struct gw_field node_portal_fields[] = {
	{ .key = "url", .type = GW_FT_STRING, .required = true, .kind = GW_FK_NONE,
	  .doc = "tcp://ADDR[:PORT], iser://ADDR[:PORT] or ADDR[:PORT]" },
	{ .key = "rel_port_id", .type = GW_FT_INTEGER, .min = 1, .max = 65535, .kind = GW_FK_NONE,
	  .doc = "unique in the cluster; its TPGT too" },
};
const struct gw_ftable gw_schema_node_portal = TABLE(node_portal_fields);

static const struct gw_field node_fields[] = {
	{ .key = "name", .type = GW_FT_STRING, .required = true, .min = 1, .kind = GW_FK_NONE,
	  .doc = "the node's name: A-Z a-z 0-9 . _ -, its corosync name" },
	{ .key = "tpg_id", .type = GW_FT_INTEGER, .required = true, .min = 1, .max = 65535,
	  .kind = GW_FK_NONE, .doc = "the node's target port group, unique in the cluster" },
	{ .key = "portals", .type = GW_FT_ARRAY, .sub = &gw_schema_node_portal, .kind = GW_FK_NONE,
	  .doc = "where the node's isergwd listens" },
};
const struct gw_ftable gw_schema_node = TABLE(node_fields);

static const struct gw_field floating_portal_fields[] = {
	{ .key = "url", .type = GW_FT_STRING, .required = true, .kind = GW_FK_NONE,
	  .doc = "tcp://ADDR[:PORT] or iser://ADDR[:PORT], an address that moves between nodes" },
	{ .key = "rel_port_id", .type = GW_FT_INTEGER, .required = true, .min = 1, .max = 65535,
	  .kind = GW_FK_NONE, .doc = "unique in the cluster; its TPGT too" },
	{ .key = "tpg_id", .type = GW_FT_INTEGER, .required = true, .min = 1, .max = 65535,
	  .kind = GW_FK_NONE, .doc = "its target port group, no node's" },
};
const struct gw_ftable gw_schema_floating_portal = TABLE(floating_portal_fields);

static const char *const failback_words[] = { "immediate", "manual", NULL };

static const struct gw_field cluster_dg_fields[] = {
	{ .key = "name", .type = GW_FT_STRING, .required = true, .min = 1, .kind = GW_FK_NONE,
	  .doc = "the device group's name, printable ASCII" },
	{ .key = "preferred_owner", .type = GW_FT_STRING, .kind = GW_FK_NONE,
	  .doc = "the node that owns it when it is up" },
	{ .key = "failback", .type = GW_FT_STRING, .words = failback_words, .kind = GW_FK_NONE,
	  .doc = "back to the preferred owner when it returns, or by hand" },
	{ .key = "non_owner_state", .type = GW_FT_STRING, .words = non_owner_words,
	  .kind = GW_FK_NONE, .doc = "the state of the nodes that do not own it" },
};
const struct gw_ftable gw_schema_cluster_dg = TABLE(cluster_dg_fields);

static const struct gw_field cluster_fields[] = {
	{ .key = "nodes", .type = GW_FT_ARRAY, .sub = &gw_schema_node, .kind = GW_FK_NONE,
	  .doc = "the cluster's nodes, 1..32" },
	{ .key = "device_groups", .type = GW_FT_ARRAY, .sub = &gw_schema_cluster_dg,
	  .kind = GW_FK_NONE, .doc = "the groups of LUNs that fail over together" },
	{ .key = "targets", .type = GW_FT_ARRAY, .sub = &gw_schema_target, .kind = GW_FK_NONE,
	  .doc = "the iSCSI targets, served by every node" },
	{ .key = "discovery_chap", .type = GW_FT_OBJECT, .sub = &gw_schema_chap, .kind = GW_FK_NONE,
	  .doc = "the CHAP discovery sessions pass" },
	{ .key = "gateway", .type = GW_FT_OBJECT, .kind = GW_FK_NONE,
	  .doc = "isergwd's keys for every node: gw_schema_config's fields marked cluster" },
	{ .key = "floating_portals", .type = GW_FT_ARRAY, .sub = &gw_schema_floating_portal,
	  .kind = GW_FK_NONE, .doc = "addresses pacemaker moves between the nodes, 0..16" },
	{ .key = "dataplane_grace_ms", .type = GW_FT_INTEGER, .min = 200, .max = 600000,
	  .kind = GW_FK_NONE, .doc = "how long a node's isergwd may not serve before it gives up" },
};
const struct gw_ftable gw_schema_cluster = TABLE(cluster_fields);

const struct gw_field *gw_field_find(const struct gw_ftable *t, const char *key, size_t len)
{
	for (size_t i = 0; i < t->n; i++)
		if (strlen(t->f[i].key) == len && memcmp(t->f[i].key, key, len) == 0)
			return &t->f[i];
	return NULL;
}
