/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What isergwctl's main (isergwctl.c) shares with its command groups kept in
 * files of their own: the exit codes, each group's entry point, the pure
 * half of the REST commands, the one client of the two unix sockets
 * (isergwctl_client.c), protobuf messages by their descriptors
 * (isergwctl_pb.c) and the helpers every group uses (isergwctl_util.c).
 * What only the control socket's commands share is in isergwctl_ctl.h.
 */
#ifndef ISERGW_ISERGWCTL_H
#define ISERGW_ISERGWCTL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* isergwctl's exit status */
#define ISERGWCTL_EXIT_OK      0
#define ISERGWCTL_EXIT_REFUSED 1   /* refused by the daemon or the agent, the reason printed */
#define ISERGWCTL_EXIT_USAGE   2
#define ISERGWCTL_EXIT_CONNECT 3   /* cannot connect, no answer in time, or a garbled answer */
/* the REST commands (isergwctl_rest.c) also: */
#define ISERGWCTL_EXIT_AUTH        4   /* not authorized: 401, 403, an unusable token file */
#define ISERGWCTL_EXIT_UNAVAILABLE 5   /* 503: the cluster cannot take it now (Retry-After shown) */
#define ISERGWCTL_EXIT_PENDING     6   /* 202 and not done when --wait ran out */

#define ISERGWCTL_HA_SOCKET "/run/isergw/ha.sock"   /* the HA agent's local API */

/*
 * isergwctl cluster ...: the HA agent's local API (docs/cluster-cli.md).
 * argv[0] is "cluster"; json: --json was given before the command;
 * timeout_ms: how long to wait for an answer (<= 0: 30 s), plus --wait-ms
 * for a change. Returns the exit status (ISERGWCTL_EXIT_*).
 */
int isergwctl_cluster(int argc, char **argv, bool json, int timeout_ms);

/* ------------------------------------------------------------ isergwctl_rest.c */

#define ISERGWCTL_API_DEFAULT   "http://127.0.0.1:8080"
#define ISERGWCTL_TOKEN_DEFAULT "/etc/isergw/api-token"

/* The options given before the command (isergwctl.c's main). */
struct isergwctl_rest_opts {
	const char *api;          /* --api URL; NULL: $ISERGW_API, then ISERGWCTL_API_DEFAULT */
	const char *token_file;   /* --token-file; NULL: $ISERGW_TOKEN_FILE, then the default */
	const char *cacert;       /* --cacert FILE; NULL: the system's CAs */
	bool insecure;            /* --insecure: no certificate check (a warning each time) */
	bool json;
	int timeout_ms;           /* the whole command; <= 0: 30 s */
};

/*
 * isergwctl target | lun | node | device-group | config | api ...: the REST
 * resources of isergw-api (docs/rest-cli.md). argv[0] is the noun. Returns
 * the exit status (ISERGWCTL_EXIT_*).
 */
int isergwctl_rest(int argc, char **argv, const struct isergwctl_rest_opts *o);

/* Whether word is one of the REST commands' nouns. */
bool isergwctl_rest_noun(const char *word);

/* The REST commands' --help. */
void isergwctl_rest_usage(FILE *f);

/* The pure half, for the unit test. How an answer is shown: */
enum isergwctl_view {
	ISERGWCTL_VIEW_CHANGE,      /* a write: a line with the ETag (--json: the answer) */
	ISERGWCTL_VIEW_TARGETS,
	ISERGWCTL_VIEW_TARGET,
	ISERGWCTL_VIEW_LUNS,
	ISERGWCTL_VIEW_LUN,
	ISERGWCTL_VIEW_NODES,
	ISERGWCTL_VIEW_NODE,
	ISERGWCTL_VIEW_DGS,
	ISERGWCTL_VIEW_DG,
	ISERGWCTL_VIEW_CONFIG,      /* always JSON */
	ISERGWCTL_VIEW_CLUSTER,
	ISERGWCTL_VIEW_ACLS,
	ISERGWCTL_VIEW_PORTALS,
	ISERGWCTL_VIEW_PORT_GROUPS,
	ISERGWCTL_VIEW_SESSIONS,
	ISERGWCTL_VIEW_SESSION,
	ISERGWCTL_VIEW_OBJECT,      /* KEY VALUE lines */
};

/* A command's own options, as parsed (operands are argv strings). */
struct isergwctl_rest_args {
	const char *alias, *from_json, *path, *size, *device_group, *grace;
	bool lun, rel, force;
	uint32_t lun_n, rel_n;
};

/* One command as an HTTP request. */
struct isergwctl_rest_req {
	const char *method;             /* "GET", "POST", "PUT", "PATCH", "DELETE" */
	char path[1024];                /* "/api/v1/targets/iqn...", segments percent-encoded */
	struct json_object *body;       /* NULL: none; owned */
	char if_match[128];             /* "" none */
	bool wait, json, help;
	enum isergwctl_view view;
	char what[300];                 /* "target IQN", "LUN 3 of IQN": for the messages */
};

/*
 * argv (argv[0] the noun) into *r: 0, or -errno with err set (a usage
 * error; *r holds no body then). --from-json and 'config import' files are
 * read here. isergwctl_rest_req_free() drops the body.
 */
int isergwctl_rest_parse(int argc, char **argv, struct isergwctl_rest_req *r, char *err, size_t errlen);
void isergwctl_rest_req_free(struct isergwctl_rest_req *r);

/*
 * KEY=VALUE into the merge patch object: VALUE null, true, false, a JSON
 * number, object, array or "string" as that JSON value, anything else as
 * text. 0, or -EINVAL (no '=', an empty or odd key, a key twice) with err set.
 */
int isergwctl_merge_patch_add(struct json_object *patch, const char *kv, char *err, size_t errlen);

/*
 * The line for a refused request: "STATUS TITLE: DETAIL (field: F)
 * (retry after N s)" from its problem document (body may be anything).
 * malloc'd; NULL without memory.
 */
char *isergwctl_problem_message(long status, const char *body, size_t len, const char *retry_after);

/*
 * Whether a token sent to url stays private: https://, or http:// to the
 * loopback (127.0.0.1, localhost, [::1]). isergwctl warns otherwise.
 */
bool isergwctl_url_private(const char *url);

/* An HTTP status as isergwctl's exit status. */
int isergwctl_rest_exit(long status);

/* doc shown as view on f: 0, -EBADMSG when doc does not fit the view, -ENOMEM. */
int isergwctl_rest_render(FILE *f, enum isergwctl_view view, struct json_object *doc);

/*
 * One JSON value filling s[0..len) exactly, s[len] being '\0' (which ends a
 * number at the end): json-c in strict mode (no single quotes, no NaN, no
 * leading zeros, no trailing commas). NULL when it is not that.
 */
struct json_object *isergwctl_json_parse_strict(const char *s, size_t len);

/* Member key of o if it has that type, else NULL (isergwctl_rest_render.c). */
struct json_object *isergwctl_json_member(struct json_object *o, const char *key, json_type type);

/* ------------------------------------------------------------ isergwctl_client.c */

struct ProtobufCMessage;
struct ctl_frame_rx;

/* Where a call failed (the caller words it). */
enum isergwctl_step {
	ISERGWCTL_STEP_PACK,        /* the request cannot be framed: -EMSGSIZE, -ENOMEM */
	ISERGWCTL_STEP_PATH,        /* the socket path is too long: -ENAMETOOLONG */
	ISERGWCTL_STEP_SOCKET,      /* socket(), or making it non-blocking */
	ISERGWCTL_STEP_CONNECT,
	ISERGWCTL_STEP_SEND,        /* -ETIMEDOUT: the peer does not read */
	ISERGWCTL_STEP_RECV,        /* ctl_frame_rx_read's errors, -ETIMEDOUT; rx: how far it got */
};

/* One of the daemons isergwctl talks to over a unix socket. */
struct isergwctl_peer {
	const char *path;
	int fd;                     /* -1: connect at the next call; kept open for the next one */
	uint32_t reply_max;         /* the largest reply frame accepted */
	enum isergwctl_step step;   /* where the last call failed */
};

/*
 * Send req to the peer (connecting first when p->fd is -1) and read one
 * reply frame into rx, all within timeout_ms. 0 with the frame in rx, or a
 * negative errno with p->step saying where (the connection is closed then).
 * rx is initialised here; the caller resets it (ctl_frame_rx_reset) either
 * way. Nothing is printed.
 */
int isergwctl_call(struct isergwctl_peer *p, const struct ProtobufCMessage *req, int timeout_ms,
		   struct ctl_frame_rx *rx);
void isergwctl_peer_close(struct isergwctl_peer *p);

/* ------------------------------------------------------------ isergwctl_pb.c */

/* A field of a message to show in JSON; a list of them ends with a NULL name. */
struct isergwctl_jfield {
	const char *name;                       /* the field's name in the .proto */
	const char *key;                        /* its JSON key; NULL: the name */
	const struct isergwctl_jfield *fields;  /* a message field: the fields of it; NULL: all */
};

/*
 * m's fields as members of o. fields NULL: every field under its name (a
 * oneof: the one set; an absent message: null), messages within with all
 * of theirs. Else the fields listed, in that order (an absent message left
 * out).
 */
void isergwctl_pb_json_add(struct json_object *o, const struct ProtobufCMessage *m,
			   const struct isergwctl_jfield *fields);
/* The same as a new object. */
struct json_object *isergwctl_pb_json(const struct ProtobufCMessage *m,
				      const struct isergwctl_jfield *fields);

struct ProtobufCMessageDescriptor;
struct ProtobufCFieldDescriptor;

/* A message of type d with every field at its default: malloc'd (free() it), NULL without memory. */
struct ProtobufCMessage *isergwctl_pb_new(const struct ProtobufCMessageDescriptor *d);

/*
 * Field f of m set: a string or a message to p (not copied: it must outlive
 * m's use), a bool or a uint32 to n; a field of a oneof becomes the one set.
 * 0, or -EINVAL when m or f is NULL, f repeated or of another type.
 */
int isergwctl_pb_set(struct ProtobufCMessage *m, const struct ProtobufCFieldDescriptor *f,
		     const void *p, uint32_t n);
/* The same for the field called name. */
int isergwctl_pb_set_name(struct ProtobufCMessage *m, const char *name, const void *p, uint32_t n);

/*
 * The message of operation op (the number of a oneof field of req, a
 * CtlRequest or an ApiRequest), its fields at their defaults, set as req's
 * operation: malloc'd (free() it after req is sent), or NULL with the
 * reason on stderr.
 */
struct ProtobufCMessage *isergwctl_pb_op_new(struct ProtobufCMessage *req, unsigned int op);
/* The message of req's operation op (req->op_case); NULL if none. */
struct ProtobufCMessage *isergwctl_pb_op(const struct ProtobufCMessage *req, unsigned int op);

/* ------------------------------------------------------------ isergwctl_util.c */

/*
 * A usage error on stderr: "isergwctl: [GROUP: ]MESSAGE" and the hint
 * "Try 'isergwctl [GROUP ]--help'." (group NULL: the main commands).
 * Returns ISERGWCTL_EXIT_USAGE.
 */
int isergwctl_usage_err(const char *group, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A decimal number: digits only (no sign, no blank), within 64 bits /
 * within 0..max. 0 with *out, or -EINVAL (*out untouched).
 */
int isergwctl_parse_u64(const char *s, uint64_t *out);
int isergwctl_parse_u32(const char *s, uint32_t max, uint32_t *out);

/* The --json entry every getopt_long table of isergwctl has ('j'), and the end of one. */
#define ISERGWCTL_OPT_JSON { "json", no_argument, NULL, 'j' }
#define ISERGWCTL_OPT_END  { NULL, 0, NULL, 0 }

struct option;

/*
 * A command line of operands and options in any order (the cluster and REST
 * commands): --json ('j') and --help ('h') among opts, and each option from
 * opts[first] on standing for a bit (1 << (its index - first)).
 */
struct isergwctl_args {
	const struct option *opts;
	size_t first;
	char **pos;                     /* the operands, in order: at most max */
	size_t npos, max;
	bool json, help;
	unsigned int given;             /* the bits of the options given */
	const char *extra;              /* ISERGWCTL_ARGS_FULL: the operand with no room */
	bool after_dashes;              /* ... and it came after "--" */
};

#define ISERGWCTL_ARGS_FULL (-2)

/*
 * The next option for the caller (getopt_long's answer: the option's val,
 * ':' its value missing, '?' not an option), after the operands, --json and
 * --help before it were taken here; -1 at the end (the operands after "--"
 * taken as well); ISERGWCTL_ARGS_FULL when an operand has no room. Set
 * optind = 0 before the first call.
 */
int isergwctl_args_next(struct isergwctl_args *a, int argc, char **argv);
/* What is wrong with the option just read when isergwctl_args_next said ':' or '?'. */
void isergwctl_args_bad_opt(int opt, char **argv, char *why, size_t len);
/* The name of the first option of opts[first..] whose bit is in given, not in allowed; or NULL. */
const char *isergwctl_opt_unwanted(const struct option *opts, size_t first, unsigned int given,
				   unsigned int allowed);

/* CLOCK_MONOTONIC in milliseconds (the clock isergwd's lease is on). */
int64_t isergwctl_now_ms(void);

/* o pretty-printed on stdout, one line after it; drops the reference to o. */
void isergwctl_print_json(struct json_object *o);

/* "isergwctl: refused: ERROR (strerror(-status))" on stderr. */
void isergwctl_print_refusal(int status, const char *error);

/* ------------------------------------------------------------ tables (isergwctl_util.c) */

/* Aligned columns for people: cells row by row, ncols a row. */
#define ISERGWCTL_TABLE_COLS_MAX 260u
struct isergwctl_table {
	size_t ncols, ncells, cap;
	char **cells;
	int width[ISERGWCTL_TABLE_COLS_MAX];
	bool failed;                    /* out of memory: nothing will be printed */
};

void isergwctl_table_init(struct isergwctl_table *t, size_t ncols);
void isergwctl_table_cell(struct isergwctl_table *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Print the table on f and free it: 0, or -ENOMEM (nothing printed). */
int isergwctl_table_print(struct isergwctl_table *t, FILE *f);
/* n header cells. */
void isergwctl_table_heads(struct isergwctl_table *t, const char *const *heads, size_t n);

/*
 * The device group tables (cluster status, device-group list): DEVICE
 * GROUP, OWNER, PREFERRED, FAILBACK, then a column per node with its ALUA
 * state there, abbreviated by isergwctl_state_abbrev() ("unavail",
 * "trans"; "?" for none) and '*' for PREF.
 */
#define ISERGWCTL_DG_COLS 4u
void isergwctl_dg_table_init(struct isergwctl_table *t, size_t nnodes);
const char *isergwctl_state_abbrev(const char *state);

#endif
