/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What isergwctl's main (isergwctl.c) shares with its command groups kept in
 * files of their own: the exit codes and each group's entry point.
 */
#ifndef ISERGW_ISERGWCTL_H
#define ISERGW_ISERGWCTL_H

#include <stdbool.h>

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

#endif
