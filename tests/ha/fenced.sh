#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# ha.fenced: a node the fencer confirmed fenced gives up its device groups at
# once, not when its lease runs out (docs/ha.md, "Fencing").
#
#   fenced.sh --isergwd PATH --isergwctl PATH --ha PATH
#             --prefix P --subnet S --scratch DIR
#
# 1. three nodes with corosync, isergwd and isergw-ha --lease-ms 30000 (a
#    lease far longer than anything below, so that only the fence can move a
#    dead node's groups in this test); the example configuration;
# 2. `isergwctl cluster fenced` of a live node (n2: its agent is in the
#    group) and of an unknown one is refused (exit 1, the reason); nothing
#    changes;
# 3. node 3, dg3's owner, is killed (every process; its packets dropped):
#    once corosync has formed the new ring, dg3 is still n3's on both
#    survivors (its 30 s lease holds it);
# 4. pacemaker's alert agent (deploy/pacemaker/isergw-fence-alert) run in
#    node 2 for a failed fence of n3 and for an unfencing: it does nothing;
#    for a successful one: it calls `isergwctl cluster fenced n3`, and dg3
#    moves to node 1 or 2 on both survivors, and REPORT TARGET PORT GROUPS through node 1
#    shows group 3 Unavailable; printed: the time from the fence to the move;
# 5. node 3 powered up again: it syncs, and a fence of it is refused again.
# Exit 77 when not root or corosync is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

ha_options 4,25 -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --probe "$BED_PROBE" cluster_probe
command -v jq >/dev/null || bed_die "jq is required"

LEASE_MS=30000
ALERT=$(cd "$here/../.." && pwd)/deploy/pacemaker/isergw-fence-alert

# moved_off DG NODE K...: every node K's agent names an owner of DG that is not NODE
moved_off() {
	local dg=$1 node=$2 k o
	shift 2
	for k in "$@"; do
		o=$(ha_owner "$k" "$dg")
		[ -n "$o" ] && [ "$o" != "$node" ] || return 1
	done
}
# owned_by DG NODE K...: every node K's agent names NODE the owner of DG
owned_by() {
	local dg=$1 node=$2 k
	shift 2
	for k in "$@"; do
		[ "$(ha_owner "$k" "$dg")" = "$node" ] || return 1
	done
}
# refused K NODE TEXT: `cluster fenced NODE` through node K exits 1 saying TEXT
refused() {
	local out rc
	out=$(bed_cli "$1" cluster fenced "$2" 2>&1)
	rc=$?
	bed_log "fenced $2 through node $1: exit $rc: $out"
	[ "$rc" -eq 1 ] && grep -q "$3" <<<"$out"
}

ha_cluster_up --lease-ms "$LEASE_MS" || bed_die "the cluster did not come up"

# 2. refusals
gen=$(ha_gen 1)
ha_check "a fence of n2 (its agent in the group) is refused" refused 1 n2 "in the group"
ha_check "a fence of an unknown node is refused" refused 1 n9 "not a node"
ha_check "no new generation" [ "$(ha_gen 1)" = "$gen" ]
ha_check "dg2 still n2's" owned_by dg2 n2 1 2 3

# 3. node 3 dies; its lease holds dg3
bed_partition 3 ring
bed_partition 3 stor
bed_kill_node 3
t_kill=$BED_T0
bed_wait_quorum 2 1 2 || bed_die "nodes 1 and 2 did not form a ring of two"
ring_s=$(bed_secs_since "$t_kill")
ha_check "the survivors synchronised" bed_poll 30 "nodes 1 and 2 synced" ha_all_synced '' 1 2
ha_check "dg3 is still n3's on both survivors (its lease of $LEASE_MS ms holds it)" \
	owned_by dg3 n3 1 2

# 4. the fencer's word, through pacemaker's alert agent as pacemaker runs it
# (as root here: no sudo)
alert() { # alert K NODE TASK RC: the alert agent in node K for a fencing alert
	bed_exec "$1" env CRM_alert_kind=fencing CRM_alert_node="$2" CRM_alert_task="$3" \
		CRM_alert_rc="$4" CRM_alert_desc="Operation $3 of $2 by test: rc $4" \
		CRM_alert_isergwctl="$BED_ISERGWCTL" "$ALERT" 2>&1
}
out=$(alert 2 n3 reboot 1)
rc=$?
bed_log "alert for a failed fence of n3: exit $rc: $out"
ha_check "a failed fence: the alert agent does nothing" [ "$rc" -eq 0 ] && [ -z "$out" ]
out=$(alert 2 n3 on 0)
ha_check "an unfencing: the alert agent does nothing" [ -z "$out" ]
ha_check "no agent was told" eval "! grep -q 'node n3 fenced' $SCRATCH/n[12]/ha.log"
ha_check "dg3 is still n3's" owned_by dg3 n3 1 2
bed_mark "n3 fenced"
t_fence=$BED_T0
out=$(alert 2 n3 reboot 0)
rc=$?
bed_log "alert for the fence of n3 through node 2: exit $rc: $out"
ha_check "the fence of n3 is announced" [ "$rc" -eq 0 ]
ha_check "dg3 moved off n3 on both survivors" bed_poll 20 "dg3 off n3" moved_off dg3 n3 1 2
move_s=$(bed_secs_since "$t_fence")
ha_check "RTPG through node 1: group 3 Unavailable" \
	bed_poll 20 "RTPG through node 1" ha_rtpg_shows 1 2 "group 3 state 3"
ha_check "the agents logged the fence" grep -q "node 'n3' was fenced" "$SCRATCH/n1/ha.log"
bed_log "corosync's new ring $ring_s s after the kill; dg3 moved $move_s s after the fence" \
	"($(bed_secs_since "$t_kill") s after the kill; the lease alone: $((LEASE_MS / 1000)) s)"

# 5. node 3 back
bed_heal 3 ring
bed_heal 3 stor
ha_check "node 3 powered up" bed_restart_node 3
ha_check "node 3 synchronised" bed_poll 60 "all synced" ha_all_synced '' 1 2 3
ha_check "a fence of n3 is refused again" refused 1 n3 "in the group"

for k in 1 2 3; do
	ha_check "node $k's agent runs" bed_alive "$k" ha
done
ha_stop_daemons

if [ "$fail" -ne 0 ]; then
	bed_log "ha.fenced: FAILED"
	exit 1
fi
bed_log "ha.fenced: a fenced node's device groups moved $move_s s after the fence, not after its lease"
exit 0
