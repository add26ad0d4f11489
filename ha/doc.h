/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster document (docs/ha-config.md): the cluster configuration and the
 * runtime map (device group owners, drained nodes) with a generation number,
 * identical on every node, kept as canonical JSON text (keys sorted
 * recursively, no whitespace) whose SHA-256 is the document's digest.
 *
 * Documents are immutable once built: every change makes a new document of
 * the next generation (ha_doc_with_*), the old one stays valid until freed.
 * They share nothing, so different threads may hold different documents.
 *
 * Errors are 0 or a negative errno; validation errors are -EINVAL with one
 * line in err naming the key path ("nodes[1].portals[0].rel_port_id: 1
 * already used by nodes[0].portals[0]"). Texts larger than HA_DOC_MAX are
 * refused with -EMSGSIZE.
 */
#ifndef ISERGW_HA_DOC_H
#define ISERGW_HA_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_NAME_MAX 64                 /* node and device group names, with the NUL */
#define HA_DP_GRACE_MIN_MS 200u        /* "dataplane_grace_ms" */
#define HA_DP_GRACE_MAX_MS 600000u
#define HA_DIGEST_LEN 32
#define HA_DOC_MAX (1u << 20)          /* a document or configuration text, bytes */
#define HA_NODES_MAX 32
#define HA_PORTALS_MAX 16              /* per node */
#define HA_FLOATING_MAX 16             /* floating portals of the cluster */
#define HA_DGS_MAX 256
#define HA_DOC_FILE "cluster.json"     /* ha_doc_save/ha_doc_load, in their directory */
#define HA_JOURNAL_FILE "cluster.journal" /* LUN changes after cluster.json, one a line */

/*
 * ha_doc_render_node() puts "alua_lease": true into isergwd's configuration
 * (docs/control.md: the node serves only while the agent renews its lease),
 * which also lets a node without portals or a cluster without targets render.
 */
#ifndef HA_RENDER_LEASE
#define HA_RENDER_LEASE 1
#endif

struct ha_portal {
	char url[128];                  /* as isergwd's portals[].url */
	uint16_t rel_port_id;           /* unique in the cluster; also the rendered tpgt */
};

struct ha_node {
	char name[HA_NAME_MAX];         /* the corosync node name */
	uint16_t tpg_id;                /* the node's target port group, unique */
	struct ha_portal *portals;
	size_t nportals;
};

/*
 * A floating portal: an address pacemaker moves between the nodes (hosts
 * without multipath, discovery). Every node's isergwd gets it, listens while
 * the address is on that node and waits for it otherwise; it keeps its
 * relative port id and its own target port group wherever it is served.
 */
struct ha_floating {
	char url[128];
	uint16_t rel_port_id;           /* unique in the cluster, with the nodes' portals */
	uint16_t tpg_id;                /* its target port group: no node's tpg_id */
};

enum ha_failback {
	HA_FAILBACK_IMMEDIATE = 0,
	HA_FAILBACK_MANUAL,
};

struct ha_dg {
	char name[HA_NAME_MAX];
	int preferred;                  /* node index or -1 */
	enum ha_failback failback;
	uint8_t non_owner_state;        /* SPC-4 code 1, 2 or 3 */
};

struct ha_doc {                         /* immutable once built; free with ha_doc_free */
	uint64_t generation;
	struct ha_node *nodes;          /* in config order */
	size_t nnodes;
	struct ha_dg *dgs;              /* in config order */
	size_t ndgs;
	struct ha_floating *floating;   /* in config order */
	size_t nfloating;
	int *owner;                     /* per dg: node index or -1 */
	bool *drained;                  /* per node */
	bool *live;                     /* per node: serving (synchronised in the quorate ring) */
	int *moving_from;               /* per dg: the previous owner of a planned move, or -1 */
	uint32_t dataplane_grace_ms;    /* "dataplane_grace_ms" (0: absent, each agent's lease) */
	char *text;                     /* canonical text of the whole document */
	size_t text_len;
	uint8_t digest[HA_DIGEST_LEN];  /* SHA-256 of text */
	/* private: canonical texts of the parts that rendering needs */
	char *config_text;              /* the configuration ("{}" in the empty document) */
	char *gateway_members;          /* members of "gateway", without the braces ("" none) */
	char *targets_text;             /* the "targets" array ("[]" when absent) */
	char *chap_text;                /* the "discovery_chap" object (NULL when absent) */
	/*
	 * isergw-api's tokens (doc_tokens.c), no part of the configuration:
	 * the canonical "api_tokens" object, NULL when there is none.
	 */
	char *tokens_text;
	/*
	 * Set when the document was made from generation - 1 by one LUN
	 * change (ha_doc_with_lun): what isergwd needs to take it without
	 * the whole configuration (ChangeLun of the control protocol).
	 */
	char *delta_target;             /* the target's IQN (NULL: no such delta) */
	uint32_t delta_lun;
	char *delta_lun_json;           /* the LUN's canonical text; NULL: removed */
	/*
	 * Set when the document was made from generation - 1 by a change of
	 * the runtime alone that renders every node's isergwd configuration
	 * the same but for the device groups' owners (owner_tpg_id): owners,
	 * moves in progress, drained nodes, and the live set when it is the
	 * same or no fencing key is rendered. isergwd takes such a generation
	 * from its ALUA map alone (ha_doc_push_kind).
	 */
	bool delta_placement;
	/*
	 * With delta_placement, the nodes (bit k: node k) whose liveness that
	 * change turned, when fencing keys are rendered: every other node's
	 * rendering differs also in backend_pr_fence (ha_doc_fence_keys), which
	 * its ALUA map carries (HA_PUSH_PLACEMENT_FENCE); theirs gains or
	 * loses the node's own key, which only the whole configuration gives.
	 */
	uint32_t delta_live;
	struct ha_lun_idx *lun_idx;     /* private (doc_lun.c): for the next LUN added */
};

/*
 * The empty document of generation 0 (no nodes, nothing): its configuration
 * is "{}", the only configuration without nodes a document accepts.
 */
int ha_doc_empty(struct ha_doc **out);
/*
 * Parse a stored/transmitted document text: validates everything (the
 * configuration as ha_config_check, the runtime against it; key paths start
 * with "config." and "runtime."), recomputes text and digest. A text that was
 * not canonical gets the canonical text (and its digest).
 */
int ha_doc_parse(const char *text, struct ha_doc **out, char *err, size_t errlen);
/* Check a cluster configuration (JSON text) fully, including isergwd's validator for every node. */
int ha_config_check(const char *config_json, char *err, size_t errlen);
/*
 * New documents derived from d, generation d->generation + 1 (d unchanged).
 * with_config: owners of device groups that no longer exist are dropped,
 * owners naming nodes that no longer exist become none, drained nodes that no
 * longer exist are dropped (all matched by name). with_owners: owner[] holds
 * d->ndgs entries (node index or -1; -EINVAL otherwise). with_drain: node is
 * an index of d (-EINVAL otherwise); a new generation even when the node's
 * state does not change.
 */
int ha_doc_with_config(const struct ha_doc *d, const char *config_json, struct ha_doc **out,
		       char *err, size_t errlen);
int ha_doc_with_owners(const struct ha_doc *d, const int *owner /* per dg */, struct ha_doc **out);
int ha_doc_with_drain(const struct ha_doc *d, int node, bool drained, struct ha_doc **out);
/*
 * The leader's runtime map as a whole: owners and moves in progress (per dg,
 * node index or -1) and the live set (per node).
 */
int ha_doc_with_runtime(const struct ha_doc *d, const int *owner, const int *moving_from,
			const bool *live, struct ha_doc **out);
/*
 * d with LUN lun of target iqn added (lun_json: a JSON object without "lun"
 * or with "lun" = lun) or removed (lun_json NULL or ""), generation + 1,
 * without going through the whole configuration: the target's "luns" in the
 * canonical text gets the LUN's canonical text appended (or loses it), and
 * the new document records the change (delta_*). The LUN is checked as in a
 * whole configuration: a device group of the cluster, isergwd's validator
 * (messages "targets[T].luns[L].KEY: why"). -ENOENT: no such target (or LUN
 * to remove); -EEXIST: the number is in use; -EINVAL; -EMSGSIZE: the
 * document would be larger than HA_DOC_MAX; -EOPNOTSUPP: a LUN of the target
 * has no "lun" (numbered by its place: the caller sends the whole
 * configuration).
 */
int ha_doc_with_lun(const struct ha_doc *d, const char *iqn, uint32_t lun, const char *lun_json,
		    struct ha_doc **out, char *err, size_t errlen);
/*
 * The checks of ha_doc_with_lun alone, without making the document: 0 and,
 * for an add, the LUN's canonical text in *canon (malloc'd, "lun" = lun).
 */
int ha_doc_lun_check(const struct ha_doc *d, const char *iqn, uint32_t lun, const char *lun_json,
		     char **canon, char *err, size_t errlen);
/* The lowest LUN number not used in target iqn: 0, or -ENOENT / -ENOSPC with err. */
int ha_doc_lun_free(const struct ha_doc *d, const char *iqn, uint32_t *lun, char *err,
		    size_t errlen);
/*
 * Whether config_json is d's configuration (the same canonical text): 1 yes,
 * 0 no, a negative errno when it is not JSON (-EINVAL, reason in err) or too
 * large (-EMSGSIZE). Not validated: a change to the same configuration
 * changes nothing.
 */
int ha_doc_config_equal(const struct ha_doc *d, const char *config_json, char *err, size_t errlen);
int ha_doc_find_node(const struct ha_doc *d, const char *name);   /* index or -1 */
int ha_doc_find_dg(const struct ha_doc *d, const char *name);     /* index or -1 */
/*
 * The JSON text of the configuration alone / of the runtime alone (malloc'd,
 * canonical; NULL when out of memory). The runtime lists the owned device
 * groups only: {"drained":["n2"],"owners":{"dg1":"n1"}}.
 */
char *ha_doc_config_json(const struct ha_doc *d);
char *ha_doc_runtime_json(const struct ha_doc *d);
/*
 * Node n's isergwd configuration (malloc'd JSON): the gateway keys,
 * alua_policy "external", alua_lease true, n's portals (tpgt = rel_port_id,
 * tpg_id = n's), the port group of every node with portals, the device groups
 * with owner_tpg_id = the owner's tpg_id (0 when none, or when the owner has
 * no portals: isergwd knows no such group), the targets verbatim and
 * discovery_chap. NULL with the reason in err on a bad node index or no memory.
 */
char *ha_doc_render_node(const struct ha_doc *d, int node, char *err, size_t errlen);
/*
 * The same with what the agent of node adds for itself: lease_unavailable_ms
 * > 0 becomes "alua_lease_unavailable_ms" unless the cluster's gateway
 * section sets that key itself (the agent's default is derived from
 * corosync's timings, docs/ha.md).
 */
struct ha_render_opts {
	uint32_t lease_unavailable_ms;
};
char *ha_doc_render_node_opts(const struct ha_doc *d, int node, const struct ha_render_opts *o,
			      char *err, size_t errlen);
/*
 * How node's isergwd, holding generation held (the configuration and the
 * ALUA map of it; 0: nothing known), takes d (docs/ha.md, "Pushing to
 * isergwd"): the whole configuration then the ALUA map (HA_PUSH_CONFIG),
 * the one LUN d changes (HA_PUSH_LUN: d->delta_target), or the ALUA map
 * alone when d changes only where device groups are served (HA_PUSH_PLACEMENT:
 * d->delta_placement), with node's fencing keys when the live set changed
 * too (HA_PUSH_PLACEMENT_FENCE: ha_doc_fence_keys; an isergwd that cannot
 * fence on a map needs HA_PUSH_CONFIG then). Anything but d->generation ==
 * held + 1, or node's own liveness changed, is HA_PUSH_CONFIG.
 */
enum ha_push {
	HA_PUSH_CONFIG = 0,
	HA_PUSH_LUN,
	HA_PUSH_PLACEMENT,
	HA_PUSH_PLACEMENT_FENCE,
};
enum ha_push ha_doc_push_kind(const struct ha_doc *d, int node, uint64_t held);
/*
 * The backend reservation keys node k's rendering lists to fence
 * (backend_pr_fence: the nodes not live) into out (room for HA_NODES_MAX);
 * how many. 0 when fencing is off or k is not live (it lists none).
 */
size_t ha_doc_fence_keys(const struct ha_doc *d, size_t k, uint64_t *out);
/*
 * The target port group isergwd knows as device group g's owner (the
 * rendered owner_tpg_id): the owner's tpg_id, 0 when there is none or it has
 * no portals.
 */
unsigned int ha_doc_owner_tpg(const struct ha_doc *d, size_t g);
/* false when the cluster's gateway section sets "backend_fencing": "none". */
bool ha_doc_backend_fencing(const struct ha_doc *d);
void ha_doc_free(struct ha_doc *d);
/*
 * The distinct target port groups of the floating portals, in config order
 * (at most HA_FLOATING_MAX): every node reports them Active/Optimized, since
 * whichever node holds a floating address serves every LUN itself.
 */
size_t ha_doc_floating_tpgs(const struct ha_doc *d, uint16_t out[HA_FLOATING_MAX]);
/*
 * Durable storage: DIR/cluster.json (mode 0600: it holds CHAP secrets)
 * written to DIR/cluster.json.tmp, fsync, rename, fsync(DIR).
 */
int ha_doc_save(const struct ha_doc *d, const char *dir);
/* The same for a document's text (a copy of d->text: the saver thread, store.c). */
int ha_doc_save_text(const char *text, size_t len, const char *dir);
/*
 * The journal: the LUN changes made after the document in HA_DOC_FILE, one
 * line each, so that a generation made by one LUN change is made durable by
 * appending a short line (and an fdatasync) instead of writing the whole
 * document. ha_doc_journal_line: d's line (malloc'd, with its newline), NULL
 * when d was not made by a LUN change (or no memory):
 *   {"generation":G,"lun":{...the LUN...} or null (removed),"number":N,"target":"IQN"}
 * ha_doc_journal_append: the lines appended to DIR/HA_JOURNAL_FILE, then
 * fdatasync (and an fsync of DIR when the file is new). ha_doc_save_text
 * removes the journal once the whole document is in place (its lines are
 * then older than the document). ha_doc_load replays the journal's lines
 * that follow the stored generation one by one (ha_doc_with_lun); it stops
 * at the first line that does not (a torn last line after a crash: never
 * answered Applied), logging why.
 */
char *ha_doc_journal_line(const struct ha_doc *d);
int ha_doc_journal_append(const char *lines, size_t len, const char *dir);
/*
 * -ENOENT when there is none; a corrupt file (not a valid document, larger
 * than HA_DOC_MAX, a NUL byte): -EBADMSG with the reason (the caller logs and
 * starts empty); other I/O errors as -errno with the reason.
 */
int ha_doc_load(const char *dir, struct ha_doc **out, char *err, size_t errlen);
/*
 * isergw-api's tokens in the document (docs/api.md, Cluster tokens): the
 * key "api_tokens", {"NAME":{"created":SECONDS,"hash":"sha256:SALT:HASH",
 * "role":"admin"|"read-only"}}, absent when there is none. Only salted
 * hashes, never a secret. No part of the configuration: a new configuration
 * keeps them.
 */
#define HA_TOKENS_MAX 256u
struct ha_token {
	char name[65];
	char role[16];
	char hash[112];
	uint64_t created;
};
/*
 * A token as a peer or a client gives it: name as a token file's, role
 * "admin" or "read-only", hash "sha256:SALTHEX:HASHHEX". 0 or -EINVAL with
 * the reason in err.
 */
int ha_token_check(const char *name, const char *role, const char *hash, char *err,
		   size_t errlen);
/*
 * d with token name added (role set: -EEXIST when the name is taken,
 * -ENOSPC past HA_TOKENS_MAX) or revoked (role NULL or "": -ENOENT when
 * there is none), generation + 1; -EINVAL as ha_token_check.
 */
int ha_doc_with_token(const struct ha_doc *d, const char *name, const char *role,
		      const char *hash, uint64_t created, struct ha_doc **out, char *err,
		      size_t errlen);
/* d's tokens, by name (*out malloc'd, NULL when none): 0 or -ENOMEM. */
int ha_doc_tokens(const struct ha_doc *d, struct ha_token **out, size_t *n);
/* Whether d has a token named name. */
bool ha_doc_has_token(const struct ha_doc *d, const char *name);

/* Hex of the digest, 65 bytes with the NUL. */
void ha_digest_hex(const uint8_t *digest, char out[2 * HA_DIGEST_LEN + 1]);

/* "immediate", "manual"; "active/non-optimized", "standby", "unavailable" (NULL: other codes). */
const char *ha_failback_name(enum ha_failback f);
const char *ha_non_owner_state_name(uint8_t state);

#endif
