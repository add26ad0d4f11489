#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# ha.stpg: SET TARGET PORT GROUPS from a host through a node that does not
# own the device group moves the group cluster-wide (docs/ha.md).
#
#   stpg.sh --isergwd PATH --isergwctl PATH --ha PATH --probe PATH
#           --prefix P --subnet S --scratch DIR
#
# 1. three nodes with corosync, isergwd and isergw-ha; the example cluster
#    configuration (dg1 owned by n1, LUN 0 in dg1);
# 2. through node 3, SET TARGET PORT GROUPS asks node 2's group (tpg 2)
#    Active/Optimized for LUN 0: the command ends GOOD, every agent reports
#    n2 as dg1's owner, and REPORT TARGET PORT GROUPS through every node shows
#    group 2 Active/Optimized with PREF and group 1 Active/Non-optimized;
#    dg2 and dg3 did not move; every node's isergwd took the move's
#    generations as ALUA maps alone (docs/ha.md, "Pushing to isergwd"): it
#    holds the newest as its configuration and ALUA epoch, and applied no
#    configuration since the STPG;
# 3. node 3 drained: SET TARGET PORT GROUPS through node 1 asking node 3's
#    group is refused (CHECK CONDITION, HARDWARE ERROR, 67h/0Ah SET TARGET
#    PORT GROUPS COMMAND FAILED) and nothing moves;
# 4. every agent and isergwd still runs, and stops cleanly (status 0).
# Exit 77 when not root or corosync is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

ha_options 4,22 -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --probe "$BED_PROBE" cluster_probe
command -v jq >/dev/null || bed_die "jq is required"

# owners_are DG NODE: every node's agent says NODE owns DG
owners_are() {
	local k
	for k in 1 2 3; do
		[ "$(ha_owner "$k" "$1")" = "$2" ] || return 1
	done
}
not_owner() { # not_owner DG NODE: every agent reports an owner of DG that is not NODE
	local k o
	for k in 1 2 3; do
		o=$(ha_owner "$k" "$1")
		[ -n "$o" ] && [ "$o" != "$2" ] || return 1
	done
}
# applied_max K: the newest configuration epoch node K's isergwd applied (0: none)
applied_max() {
	grep -o 'applying the configuration of epoch [0-9]*' "$SCRATCH/n$1/isergwd.log" |
		awk '{ print $NF } END { print 0 }' | sort -n | tail -n 1
}
# held_after K GEN: node K's isergwd holds its agent's generation, newer than
# GEN, as its configuration and ALUA epoch
held_after() {
	local s g
	g=$(ha_gen "$1") && [ "$g" -gt "$2" ] || return 1
	s=$(bed_isergwctl "$1" status --json 2>/dev/null) || return 1
	[ "$(jq -r .config_epoch <<<"$s")" = "$g" ] && [ "$(jq -r .alua_epoch <<<"$s")" = "$g" ]
}
ha_cluster_up || bed_die "the cluster did not come up"
bed_poll 60 "RTPG through node 3: group 1 AO" ha_rtpg_shows 3 0 "group 1 state 0 pref 1" ||
	bed_die "node 3 never served LUN 0"

# 2. a host asks node 2's group through node 3
before=$(ha_gen 1)
bed_mark "SET TARGET PORT GROUPS 2=AO through node 3"
out=$(bed_probe 3 0 --stpg 2=0 --no-probe 2>&1)
bed_log "through node 3: $out"
ha_check "STPG through node 3 ends GOOD" grep -qx "stpg good" <<<"$out"
ha_check "dg1 moved to n2 on every agent" bed_poll 30 "dg1 owned by n2" owners_are dg1 n2
for k in 1 2 3; do
	ha_check "RTPG through node $k: group 2 AO with PREF, group 1 ANO" \
		bed_poll 30 "RTPG through node $k" ha_rtpg_shows "$k" 0 "group 1 state 1 pref 0" \
		"group 2 state 0 pref 1" "group 3 state 1 pref 0"
done
ha_check "dg2 stayed with n2" owners_are dg2 n2
ha_check "dg3 stayed with n3" owners_are dg3 n3
bed_log "the move: generations $before -> $(ha_gen 1)"
for k in 1 2 3; do
	ha_check "node $k's isergwd holds the move's generation (configuration and ALUA epoch)" \
		bed_poll 30 "node $k's isergwd past $before" held_after "$k" "$before"
	ha_check "node $k's isergwd applied no configuration for the move" \
		[ "$(applied_max "$k")" -le "$before" ]
done

# 3. a drained node's group is refused
ha_check "drain n3" bed_cli 1 cluster drain n3 >/dev/null
ha_check "dg3 moved off n3 everywhere" bed_poll 30 "dg3 off n3" not_owner dg3 n3
dg3=$(ha_owner 1 dg3)
# (the drain reran the placement: failback immediate may have brought dg1 back to n1)
dg1=$(ha_owner 1 dg1)
gen=$(ha_gen 1)
out=$(bed_probe 1 0 --stpg 3=0 --no-probe 2>&1)
bed_log "through node 1, asking the drained node's group: $out"
ha_check "STPG naming a drained node's group is refused (HARDWARE ERROR 67h/0Ah)" \
	grep -qi "stpg status 0x02 sense 4/67/0a" <<<"$out"
ha_check "dg1 did not move" owners_are dg1 "$dg1"
ha_check "no new generation" [ "$(ha_gen 1)" = "$gen" ]
ha_check "dg3 did not move" owners_are dg3 "$dg3"

# 4. everything still runs
for k in 1 2 3; do
	ha_check "node $k's agent runs" bed_alive "$k" ha
	ha_check "node $k's isergwd runs" bed_alive "$k" isergwd
done
grep -h "SET TARGET PORT GROUPS" "$SCRATCH"/n*/ha.log | head -n 4 >&2
# a clean stop (exit 0; with sanitizers, no leak report) of every agent and isergwd
ha_stop_daemons

if [ "$fail" -ne 0 ]; then
	bed_log "ha.stpg: FAILED"
	exit 1
fi
bed_log "ha.stpg: a host's SET TARGET PORT GROUPS moved dg1 cluster-wide; a drained node's group refused"
exit 0
