#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# ha.dataplane: the data plane's health decides who owns a device group
# (docs/ha.md, "Data plane health"), and a LUN that serves no I/O is
# reported per node and logged once (docs/api.md, LUNs).
#
#   dataplane.sh --isergwd PATH --isergwctl PATH --ha PATH --probe PATH --api PATH
#                --prefix P --subnet S --scratch DIR
#
# 1. three nodes with the example configuration, every device group's
#    non-owners Standby (so a dead owner leaves the hosts no path that
#    serves), LUN 0 (dg1, the iscsi:// backend) held 2 s at most for an
#    unreachable backend; isergw-api in node 2;
# 2. a LUN whose file does not exist is POSTed through the REST API: 201,
#    then its GET shows status failed on every node, with the reason;
# 3. isergwd on node 1 (dg1's owner) is killed and kept down: dg1 is served
#    (Active/Optimized in REPORT TARGET PORT GROUPS through node 2) by
#    another node; `cluster status` (table and --json), the REST node and the
#    metric show n1's data plane failed; printed: the time from the kill;
#    isergwd started again: dg1 back on n1 (failback immediate), printed;
# 4. node 1 cut from the backend (nft drop in its namespace) while a host
#    reads LUN 0 through it: dg1 moves to another node, LUN 0's GET shows n1
#    offline; printed: the time from the cut; the cut healed: dg1 back on n1;
# 5. the missing LUN's error was logged once by each isergwd process,
#    although every move above reloaded its configuration.
# The bound on each time is generous (grace + 10 s): the times are printed,
# not asserted tightly. Exit 77 when not root or corosync is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

API=
ha_options 4,28 --api API -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --probe "$BED_PROBE" cluster_probe
ha_need --api "$API" isergw-api
for t in curl jq iscsi-perf; do
	command -v "$t" >/dev/null || bed_die "$t not found (deploy/install-deps.sh)"
done

BED_POLL_S=0.1
GRACE_S=1.5                     # dataplane_grace_ms unset: the agents' lease (1500 ms)
BOUND_S=12                      # grace + 10 s, rounded up
V1=/api/v1
LUN0="$BED_HA_IQN/luns/0"
OUT=$SCRATCH/dataplane
rm -rf "$OUT"
mkdir -p "$OUT"

# the example configuration, every non-owner Standby, LUN 0 quick to give up
eval "$(declare -f bed_cluster_config | sed '1s/^bed_cluster_config/_hd_example_config/')"
bed_cluster_config() {
	_hd_example_config "$1" || return 1
	jq '.device_groups[] += {"non_owner_state": "standby"} |
	    .targets[0].luns[0] += {"backend_hold_s": 2, "backend_timeout_s": 1}' "$1" >"$1.new" &&
		mv "$1.new" "$1"
}

ha_cluster_up || bed_die "the cluster did not come up"

TOKENS=$OUT/tokens
"$API" token add --token-file "$TOKENS" --name dataplane --role admin >"$OUT/admin.tok" ||
	bed_die "isergw-api token add failed"
AUTH="Authorization: Bearer $(cat "$OUT/admin.tok")"
_bed_spawn 2 api "$SCRATCH/n2/api.log" "$API" --listen 127.0.0.1:8080 \
	--ha-socket /run/isergw/ha.sock --isergwd-socket /run/isergw/isergwd.sock \
	--token-file "$TOKENS" || bed_die "isergw-api did not start on node 2"
bed_poll 20 "isergw-api on node 2 answers" bed_exec 2 curl -sf -o /dev/null \
	http://127.0.0.1:8080/healthz || bed_die "isergw-api on node 2 does not answer"

# api METHOD PATH [BODY]: node 2's isergw-api; the code, the body in $OUT/body
api() {
	local args=(-s -X "$1" -o "$OUT/body" -w '%{http_code}' -H "$AUTH")
	[ -n "${3:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	bed_exec 2 curl "${args[@]}" "http://127.0.0.1:8080$2"
}
# lun_state LUN NODE: NODE's state of LUN as the LUN's GET shows it
lun_state() {
	[ "$(api GET "$V1/targets/$BED_HA_IQN/luns/$1")" = 200 ] &&
		jq -r --arg n "$2" '.status.nodes[] | select(.node == $n) | .state' "$OUT/body"
}
lun_is() { [ "$(lun_state "$1" "$2")" = "$3" ]; }
# owned_by DG NODE K...: every node K's agent names NODE the owner of DG
owned_by() {
	local dg=$1 node=$2 k
	shift 2
	for k in "$@"; do
		[ "$(ha_owner "$k" "$dg")" = "$node" ] || return 1
	done
}
# served_off_n1: nodes 2 and 3 name one owner of dg1 that is not n1, and
# REPORT TARGET PORT GROUPS through node 2 shows that node's group
# Active/Optimized for LUN 0 (dg1)
served_off_n1() {
	local o
	o=$(ha_owner 2 dg1)
	[ "$o" = n2 ] || [ "$o" = n3 ] || return 1
	[ "$(ha_owner 3 dg1)" = "$o" ] || return 1
	ha_rtpg_shows 2 0 "group ${o#n} state 0"
}
served_by_n1() { owned_by dg1 n1 1 2 3 && ha_rtpg_shows 2 0 "group 1 state 0"; }
dataplane_of() { ha_status "$1" | jq -r --arg n "$2" '.members[] | select(.name == $n) | .dataplane'; }
errs_about_missing() { grep -c ' err .*missing\.img' "$(bed_logfile "$1" isergwd)"; }

# 2. a LUN whose file does not exist: accepted, reported failed on every node
code=$(api POST "$V1/targets/$BED_HA_IQN/luns" \
	"{\"lun\": 3, \"path\": \"$BED_SHARED/missing.img\", \"device_group\": \"dg3\"}")
ha_check "POST of a LUN whose file is missing: 201 (got $code)" [ "$code" = 201 ]
for n in n1 n2 n3; do
	ha_check "LUN 3 failed on $n" bed_poll 20 "LUN 3 failed on $n" lun_is 3 "$n" failed
done
cp "$OUT/body" "$OUT/lun3.json"
bed_log "LUN 3: $(jq -c .status "$OUT/lun3.json")"
ha_check "LUN 3: status failed, Ready False, the reason" jq -e '.status.state == "failed" and
	.status.conditions[0].type == "Ready" and .status.conditions[0].status == "False" and
	([.status.nodes[].reason | test("No such file")] | all)' "$OUT/lun3.json" >/dev/null
api GET "$V1/targets/$LUN0" >/dev/null
ha_check "LUN 0 online on every node" jq -e '.status.state == "online"' "$OUT/body" >/dev/null
ha_check "dg3 stays with n3 (its LUN fails everywhere)" owned_by dg3 n3 1 2 3
ha_check "isergwctl status --json on node 2: LUN 3 not served" eval \
	'ha_gw_status 2 | jq -e ".lun_faults_total == 1 and .lun_faults[0].lun == 3 and .luns_online == 3" >/dev/null'
ha_check "isergwctl status on node 2: LUN 3 failed, with the reason" eval \
	'bed_isergwctl 2 status | grep -q "^lun .*LUN 3  failed: .*missing.img"'

# 3. isergwd on node 1, dg1's owner, killed and kept down
bed_kill 1 isergwd
t_kill=$BED_T0
ha_check "dg1 served by another node" bed_poll "$BOUND_S" "dg1 served off n1" served_off_n1
dead_s=$(bed_secs_since "$t_kill")
ha_check "n1's data plane failed (node 2's cluster status --json)" \
	[ "$(dataplane_of 2 n1)" = failed ]
bed_cli 2 cluster status >"$OUT/status.txt" 2>&1
ha_check "cluster status: n1 failed in the table" grep -Eq '^n1 .* failed' "$OUT/status.txt"
ha_check "REST node n1: dataplane failed" \
	eval '[ "$(api GET "$V1/nodes/n1")" = 200 ] && jq -e ".dataplane.state == \"failed\"" "$OUT/body" >/dev/null'
ha_check "metric: n1's data plane failed" \
	eval 'api GET /metrics >/dev/null && grep -q "^isergw_cluster_node_dataplane_state{node=\"n1\",state=\"failed\"} 1" "$OUT/body"'
ha_check "dg2 stays" owned_by dg2 n2 2 3
ha_check "dg3 stays" owned_by dg3 n3 2 3
bed_start_isergwd 1 || bed_die "isergwd did not start again on node 1"
bed_mark "isergwd started again on node 1"
t_back=$BED_T0
ha_check "dg1 back on n1" bed_poll "$BOUND_S" "dg1 back on n1" served_by_n1
back_s=$(bed_secs_since "$t_back")
ha_check "n1's data plane healthy" [ "$(dataplane_of 2 n1)" = healthy ]

# 4. node 1 cut from the backend while a host reads LUN 0 through it
bed_host iscsi-perf -n -m 4 -b 8 -i iqn.2026-11.org.isergw:hd-host \
	"iscsi://$(bed_portal 1)/$BED_HA_IQN/0" >"$OUT/perf.log" 2>&1 &
perf=$!
sleep 1
_bed_nft 1 hd_backend "ip saddr $BED_BACKEND_ADDR drop" "ip daddr $BED_BACKEND_ADDR drop" ||
	bed_die "cannot cut node 1 from the backend"
bed_mark "node 1 cut from the backend"
t_cut=$BED_T0
ha_check "dg1 served by another node" bed_poll "$((BOUND_S + 5))" "dg1 served off n1" served_off_n1
cut_s=$(bed_secs_since "$t_cut")
kill "$perf" 2>/dev/null
wait "$perf" 2>/dev/null
ha_check "LUN 0 offline on n1, online elsewhere" eval 'lun_is 0 n1 offline && lun_is 0 n2 online'
bed_log "LUN 0: $(jq -c .status "$OUT/body")"
ha_check "n1 reports dg1 failed" \
	eval 'ha_status 2 | jq -e ".members[] | select(.name == \"n1\") | .failed_groups == [\"dg1\",\"dg3\"] or .failed_groups == [\"dg3\",\"dg1\"]" >/dev/null'
_bed_nft_del 1 hd_backend || bed_die "cannot heal node 1's cut"
bed_mark "node 1's backend cut healed"
t_heal=$BED_T0
ha_check "dg1 back on n1" bed_poll "$((BOUND_S + 5))" "dg1 back on n1" served_by_n1
heal_s=$(bed_secs_since "$t_heal")

# 5. the missing LUN logged once per isergwd process, however many reloads
for k in 2 3; do
	n=$(errs_about_missing "$k")
	ha_check "node $k's isergwd logged the missing LUN once (got $n)" [ "$n" -eq 1 ]
done
n=$(errs_about_missing 1)
ha_check "node 1's isergwd (two processes) logged it twice (got $n)" [ "$n" -eq 2 ]
reloads=$(grep -c 'configuration reloaded' "$(bed_logfile 2 isergwd)")
bed_log "node 2's isergwd reloaded its configuration $reloads times"

ha_check "isergw-api on node 2 stops with status 0" _bed_stop 2 api
ha_stop_daemons
bed_log "isergwd dead on the owner: dg1 served elsewhere $dead_s s after the kill, back" \
	"$back_s s after the restart; backend cut from the owner: dg1 served elsewhere $cut_s s" \
	"after the cut, back $heal_s s after the heal (grace $GRACE_S s)"
if [ "$fail" -ne 0 ]; then
	bed_log "ha.dataplane: FAILED"
	exit 1
fi
bed_log "ha.dataplane: passed"
exit 0
