/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergw-ha: what the agent's parts share. One thread, one reactor (the
 * data plane's common/reactor), nothing blocking in it; the fsyncs of
 * the cluster document happen on a saver thread of their own (store.c):
 *
 *   main.c     options, the agent's configuration, signals, start and stop
 *   cluster.c  corosync: CPG (group "isergw-ha", CPG_MODEL_V1 with the totem
 *              configuration callback), votequorum, cmap; the send queue that
 *              absorbs CPG flow control (CS_ERR_TRY_AGAIN queues, never drops)
 *   sm.c       the state machine (pure; sm.h)
 *   gwlink.c   the local isergwd's control socket: configuration, ALUA map,
 *              lease, the hosts' SET TARGET PORT GROUPS
 *   api.c      the local API (root-only unix socket) for isergwctl and isergw-api
 *   store.c    the saver thread: the cluster document made durable off the loop
 */
#ifndef ISERGW_HA_AGENT_H
#define ISERGW_HA_AGENT_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

#include "ctl_wire.h"
#include "sm.h"
#include "common/list.h"
#include "common/reactor.h"

#define HA_COMP "ha"
#define HA_GROUP_NAME "isergw-ha"
#define HA_SOCK_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path))

struct ha_opts {
	char state_dir[PATH_MAX];       /* default /var/lib/isergw */
	char socket[HA_SOCK_PATH_MAX];  /* the local API, default /run/isergw/ha.sock */
	char gw_socket[HA_SOCK_PATH_MAX]; /* isergwd's control socket */
	char log_level[16];
	uint32_t lease_ms;              /* default 1500 */
	uint32_t heartbeat_ms;          /* default 100 */
	uint32_t change_timeout_ms;     /* default 10000 */
	uint32_t transition_ms;         /* planned moves: isergwd's Transitioning, default 0 */
};

struct ha_cluster;
struct ha_gwlink;
struct ha_api;
struct ha_store;

struct ha_agent {
	struct ha_opts opts;
	struct reactor *r;
	struct ha_sm sm;
	bool sm_ready;
	struct ha_cluster *cl;
	struct ha_gwlink *gw;
	struct ha_api *api;
	struct ha_store *store;         /* the saver thread (store.h) */
	struct reactor_timer tick;
	uint32_t nodeid;
	char node_name[HA_NAME_MAX];
	char cluster_name[HA_NAME_MAX];
	/* what this agent adds to isergwd's configuration (doc.h) */
	struct ha_render_opts render;
	bool stopping;
	bool joined;                    /* this agent seen in the group: READY=1 sent */
};

/* cluster.c */
/*
 * Connect to corosync (cmap: our nodeid, name, cluster name, node names;
 * votequorum; CPG). While corosync is not running, tried again every second
 * until it is, or until a signal of stop (SIGHUP ignored) arrives: -EINTR.
 */
int ha_cluster_start(struct ha_agent *a, const sigset_t *stop, struct ha_cluster **out);
/* Join the group (after the state machine exists). */
int ha_cluster_join(struct ha_cluster *cl);
int ha_cluster_send(struct ha_cluster *cl, const HaMsg *m);
void ha_cluster_stop(struct ha_cluster *cl);

/* gwlink.c */
int ha_gwlink_start(struct ha_agent *a, struct ha_gwlink **out);
/* A new document: render and push it (coalesced). */
void ha_gwlink_doc(struct ha_gwlink *g, const struct ha_doc *d);
void ha_gwlink_lease(struct ha_gwlink *g, uint64_t expires_ms);
void ha_gwlink_step_down(struct ha_gwlink *g, const char *reason);
bool ha_gwlink_connected(const struct ha_gwlink *g);
/* Every tick: asks isergwd for its LUNs' states now and then (the data plane's health). */
void ha_gwlink_poll(struct ha_gwlink *g, uint64_t now);
uint64_t ha_gwlink_epoch(const struct ha_gwlink *g);
void ha_gwlink_stop(struct ha_gwlink *g);
/* The LU state (sm ops lu_apply / lu_done). */
void ha_gwlink_lu_apply(struct ha_gwlink *g, const uint8_t naa[16], uint64_t version,
			const uint8_t *state, size_t len, const uint8_t *events, size_t evlen,
			uint32_t origin, uint64_t proposal_id);
void ha_gwlink_lu_done(struct ha_gwlink *g, uint64_t proposal_id, int status, const char *why);
/* Hands the unit attentions parked for this node to isergwd, if it is there. */
void ha_gwlink_lu_handover(struct ha_gwlink *g);

/* lustore.c: the LU table on disk */
int ha_lu_save(const struct ha_sm *sm, const char *dir);
int ha_lu_load(struct ha_sm *sm, const char *dir);
/* ha_lu_load's work on the file's bytes (len of them; path names it in messages). */
int ha_lu_load_buf(struct ha_sm *sm, const char *path, const uint8_t *buf, size_t len);

/* api.c */
int ha_api_start(struct ha_agent *a, struct ha_api **out);
void ha_api_change_done(struct ha_api *api, uint64_t request_id, int status, const char *err,
			uint64_t gen);
void ha_api_applied(struct ha_api *api);
void ha_api_tick(struct ha_api *api, uint64_t now);
void ha_api_stop(struct ha_api *api);

#endif
