#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2016 # checks called through ha_check and bed_poll; awk programs
# SPDX-License-Identifier: Apache-2.0
#
# ha.pr-fault: a node dies (kill -9 of every process) while PERSISTENT
# RESERVE OUT commands through it and through the others are in flight.
#
#   pr_fault.sh --isergwd PATH --isergwctl PATH --ha PATH --prf PATH
#               --prefix P --subnet S --scratch DIR [--seconds N]
#               [--lu-state local]
#
# 1. three nodes, the example configuration (LUN 1 on a file), the LU state
#    carried by the agents (no shared_state_dir);
# 2. pr_fault --run: two sessions through each node (own initiator names),
#    each sending REGISTER AND IGNORE EXISTING KEY with a new key as soon as
#    the last one is answered; 2 s in, node 1 is killed; the others go on
#    until N s (default 8);
# 3. once nodes 2 and 3 are synchronised again: pr_fault --check through
#    both: the same PRgeneration and keys through each, and every session's
#    registered key is the one its last GOOD command set, or one of those
#    sent after it that never got GOOD (in flight at the kill, NOT READY
#    during the membership change);
# 4. at least one command was in flight through node 1 when it died, and
#    commands through nodes 2 and 3 kept ending GOOD.
# --lu-state local renders every node's LU state as its own (the state
# before the cluster carried it): the check must then fail (the nodes
# disagree), which shows the test catches it.
# Exit 77 when not root or corosync is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

PRF=
SECONDS_RUN=8
LU_STATE=
ha_options 4,28 --prf PRF --seconds SECONDS_RUN --lu-state LU_STATE -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --prf "$PRF" pr_fault
command -v jq >/dev/null || bed_die "jq is required"
ha_lu_state "$LU_STATE"
fail=0

ha_cluster_up || bed_die "the cluster did not come up"
survivors_synced() { ha_synced 2 && ha_synced 3; }

RUN=$SCRATCH/pr-fault-run.txt
OUT=$SCRATCH/pr-fault-client.log
bed_host "$PRF" --run "$SECONDS_RUN" --per-url 2 --out "$RUN" \
	"$(ha_lun_url 1)" "$(ha_lun_url 2)" "$(ha_lun_url 3)" >"$OUT" 2>&1 &
client=$!
bed_poll 60 "every session registered" grep -q "sessions registered" "$OUT" ||
	{ cat "$OUT" >&2; bed_die "the client did not start"; }
sleep 2
bed_mark "node 1 killed"
bed_log "kill -9 of node 1 with PERSISTENT RESERVE OUT in flight"
bed_kill_node 1
wait "$client"
rc=$?
cat "$OUT" >&2
ha_check "the client ran to the end" [ "$rc" -eq 0 ]
ha_check "nodes 2 and 3 synchronised again" \
	bed_poll 60 "nodes 2 and 3 synced" survivors_synced
sed 's/^/  /' "$RUN" >&2
chk=$(bed_host "$PRF" --check "$RUN" "$(ha_lun_url 2)" "$(ha_lun_url 3)" 2>&1)
echo "$chk"
ha_check "the same registrations through nodes 2 and 3, every GOOD in force" \
	grep -q "^pr-fault check: .* same through 2 nodes" <<<"$chk"
ha_check "a command was in flight through node 1 when it died" \
	awk '$4 == 0 && $10 != "-" { n++ } END { exit n ? 0 : 1 }' "$RUN"
for u in 1 2; do
	ha_check "commands through node $((u + 1)) ended GOOD" \
		awk -v u="$u" '$4 == u && $6 > 1 { n++ } END { exit n ? 0 : 1 }' "$RUN"
done
ha_check_daemons 2 3
grep -h "not applied\|out of order\|refused" "$SCRATCH"/n[23]/ha.log | head -n 5 >&2

if [ "$fail" -ne 0 ]; then
	bed_log "ha.pr-fault: FAILED"
	exit 1
fi
bed_log "ha.pr-fault: after node 1's death every node holds the same registrations, every GOOD in force"
exit 0
