/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What isergwctl's main (isergwctl.c) shares with its command groups kept in
 * files of their own: the exit codes, each group's entry point and the
 * helpers every group uses (isergwctl_util.c).
 */
#ifndef ISERGW_ISERGWCTL_H
#define ISERGW_ISERGWCTL_H

#include <stdbool.h>
#include <stdint.h>

struct json_object;

/* isergwctl's exit status */
#define ISERGWCTL_EXIT_OK      0
#define ISERGWCTL_EXIT_REFUSED 1   /* refused by the daemon or the agent, the reason printed */
#define ISERGWCTL_EXIT_USAGE   2
#define ISERGWCTL_EXIT_CONNECT 3   /* cannot connect, no answer in time, or a garbled answer */

#define ISERGWCTL_HA_SOCKET "/run/isergw/ha.sock"   /* the HA agent's local API */

/*
 * isergwctl cluster ...: the HA agent's local API (docs/cluster-cli.md).
 * argv[0] is "cluster"; json: --json was given before the command;
 * timeout_ms: how long to wait for an answer (<= 0: 30 s), plus --wait-ms
 * for a change. Returns the exit status (ISERGWCTL_EXIT_*).
 */
int isergwctl_cluster(int argc, char **argv, bool json, int timeout_ms);

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

/* CLOCK_MONOTONIC in milliseconds (the clock isergwd's lease is on). */
int64_t isergwctl_now_ms(void);

/* o pretty-printed on stdout, one line after it; drops the reference to o. */
void isergwctl_print_json(struct json_object *o);

/* "isergwctl: refused: ERROR (strerror(-status))" on stderr. */
void isergwctl_print_refusal(int status, const char *error);

#endif
