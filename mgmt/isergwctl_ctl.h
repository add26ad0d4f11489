/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of isergwctl's control socket commands share
 * (isergwctl_ctl.c: options, talking, views, status .. logout;
 * isergwctl_alua.c: alua, lease, watch) and the entry points main calls.
 */
#ifndef ISERGW_ISERGWCTL_CTL_H
#define ISERGW_ISERGWCTL_CTL_H

#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl_wire.h"
#include "isergwctl.h"

/* The options before the command and the connection to isergwd. */
struct isergwctl_ctx {
	struct isergwctl_peer peer;     /* path: -s/--socket */
	bool json;
	int timeout_ms;
};

/* A reply to show, and what of it the command was asked to show (NULL: all). */
struct isergwctl_shown {
	const CtlReply *rep;
	const void *sel;
};

/* How a command shows its reply: one JSON document (--json) or a table. */
struct isergwctl_ctl_view {
	Isergw__Ctl__Reply__PayloadCase payload;    /* the reply's payload; NOT_SET: any */
	const char *what;       /* a reply without it: "unexpected answer to WHAT" (NULL: silent) */
	bool list;              /* the JSON document is an array, not an object */
	void (*json)(json_object *doc, const struct isergwctl_shown *sh);       /* fills the document */
	void (*table)(const struct isergwctl_shown *sh);
};

static inline void jset_u64(json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static inline void jset_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

/* --epoch N of apply and alua set: 0, or the usage error's exit code. */
int isergwctl_parse_epoch(const char *s, uint64_t *epoch);
/*
 * A command's options one at a time, as getopt_long returns them (set
 * optind = 1 before the first); --json, which every command takes, is
 * handled here.
 */
int isergwctl_next_opt(struct isergwctl_ctx *x, int argc, char **argv, const struct option *opts);
/* After a command's options: 0, or the usage error's exit code for a stray argument. */
int isergwctl_no_more_args(const char *cmd, int argc, char **argv);
/* A command whose only option is --json: 0, or the usage error's exit code. */
int isergwctl_json_only_args(struct isergwctl_ctx *x, const char *cmd, int argc, char **argv);

/*
 * Send req on x's connection (opened by the first request) and read the
 * reply, of any status: 0 with *out, or ISERGWCTL_EXIT_* with the reason
 * printed. Waits --timeout plus extra_ms.
 */
int isergwctl_call_any(struct isergwctl_ctx *x, const CtlRequest *req, CtlReply **out, int extra_ms);
/* Send req; the reply must carry the payload of v; 0 with *out or ISERGWCTL_EXIT_*. */
int isergwctl_call_view(struct isergwctl_ctx *x, const CtlRequest *req,
			const struct isergwctl_ctl_view *v, CtlReply **out, int extra_ms);
/* Print the reply as v says (--json or the table) and free it; 0. */
int isergwctl_show(struct isergwctl_ctx *x, CtlReply *rep, const struct isergwctl_ctl_view *v,
		   const void *sel);
/* Send req and show its reply: 0 or ISERGWCTL_EXIT_*. */
int isergwctl_run(struct isergwctl_ctx *x, const CtlRequest *req, const struct isergwctl_ctl_view *v,
		  const void *sel, int extra_ms);
/* The groups of an ALUA message as a JSON array: tpg_id, state (and pref). */
json_object *isergwctl_alua_groups_json(Isergw__Ctl__AluaGroupState *const *groups, size_t n,
					bool with_pref);
/*
 * The operation op, a message without fields: sent as isergwctl_call_view
 * does; or sent and shown as isergwctl_run does.
 */
int isergwctl_call_plain(struct isergwctl_ctx *x, Isergw__Ctl__Request__OpCase op,
			 const struct isergwctl_ctl_view *v, CtlReply **out);
int isergwctl_run_plain(struct isergwctl_ctx *x, Isergw__Ctl__Request__OpCase op,
			const struct isergwctl_ctl_view *v);
/* GetStatus: 0 with the reply, or ISERGWCTL_EXIT_*. */
int isergwctl_get_status(struct isergwctl_ctx *x, CtlReply **rep);

/* The commands (argv[0] the command word): the exit status. */
/* status, reload, sessions: the commands that send an operation without fields. */
int isergwctl_cmd_plain(struct isergwctl_ctx *x, int argc, char **argv);
int isergwctl_cmd_apply(struct isergwctl_ctx *x, int argc, char **argv);
int isergwctl_cmd_counters(struct isergwctl_ctx *x, int argc, char **argv);
int isergwctl_cmd_logout(struct isergwctl_ctx *x, int argc, char **argv);
int isergwctl_cmd_alua_show(struct isergwctl_ctx *x, int argc, char **argv);
int isergwctl_cmd_alua_set(struct isergwctl_ctx *x, int argc, char **argv);
int isergwctl_cmd_alua_map(struct isergwctl_ctx *x, int argc, char **argv);
int isergwctl_cmd_lease(struct isergwctl_ctx *x, int argc, char **argv);
int isergwctl_cmd_watch(struct isergwctl_ctx *x, int argc, char **argv);

#endif
