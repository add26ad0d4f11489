#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ha.bed: proves the HA test bed (tests/ha/bed.sh) before the HA tests use it.
#
#   bed_smoke.sh --isergwd PATH --isergwctl PATH [--probe PATH] [--ha PATH]
#                --prefix P --subnet S --scratch DIR [--backend tgt|isergw]
#
# 1. three nodes up, corosync quorate with 3 members on every node;
# 2. the backend target reachable (iscsi-inq) from every node and the host;
# 3. isergwd on every node answering `isergwctl status`; with --probe, each
#    node given a gateway configuration (LUN 0 forwarded to the backend,
#    LUNs 1 and 2 on files in the shared directory) and cluster_probe from
#    the host through each node: its own relative port and group, 3 groups;
# 4. node 3 partitioned (ring packets dropped): nodes 1 and 2 quorate with 2
#    members, node 3 inquorate alone, and still reachable from the host on
#    the storage network; healed: 3 members everywhere;
# 5. node 1 frozen (SIGSTOP, every process): 2 and 3 quorate with 2
#    members; thawed: 3 members;
# 6. node 2 killed (SIGKILL, every process): 1 and 3 quorate with 2 members;
#    restarted: 3 members, its isergwd answering again;
# 7. isergwd stops with status 0 everywhere, the bed comes down and leaves
#    no namespace, mount or process behind.
# Prints each membership change's measured time. Exit 77 when not root or
# corosync is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

BACKEND=tgt
ha_options 3,26 --backend BACKEND -- "$@"

times=()
measured() { times+=("$1: $BED_ELAPSED s"); }

bed_up || bed_die "the bed did not come up"
NODES=(1 2 3)

# 1. corosync
bed_mark "corosync started on 3 nodes"
for k in "${NODES[@]}"; do
	bed_start_corosync "$k" || bed_die "corosync did not start on node $k"
done
bed_wait_quorum 3 "${NODES[@]}" || bed_die "no quorum of 3"
measured "3 nodes started -> quorate 3/3"
totem=$(bed_totem 1) && totem="token ${totem% *} ms, consensus ${totem#* } ms"

# 2. the backend, from every node and the host
bed_backend_start "$BACKEND" || bed_die "the backend did not start"
URL=$(bed_backend_url)
for k in "${NODES[@]}"; do
	ha_check "iscsi-inq $URL from node $k" bed_exec "$k" iscsi-inq "$URL" >/dev/null
done
ha_check "iscsi-inq $URL from the host" bed_host iscsi-inq "$URL" >/dev/null

# 3. isergwd on every node
for k in "${NODES[@]}"; do
	bed_start_isergwd "$k" || bed_die "isergwd did not start on node $k"
	ha_check "isergwctl status on node $k" bed_isergwctl "$k" status >/dev/null
done

# gateway_config K FILE: what a node's agent would push, without the agent:
# the three LUNs, every node's port in the port map
gateway_config() {
	local k=$1 j groups=""
	for j in "${NODES[@]}"; do
		groups+="${groups:+, }{ \"tpg_id\": $j, \"rel_port_ids\": [ $j ] }"
	done
	cat >"$2" <<-EOF
	{
	  "log_level": "info",
	  "portals": [ { "url": "tcp://$(bed_portal "$k")", "rel_port_id": $k, "tpg_id": $k } ],
	  "port_groups": [ $groups ],
	  "device_groups": [ { "name": "dg1", "owner_tpg_id": 1 }, { "name": "dg2", "owner_tpg_id": 2 },
	                     { "name": "dg3", "owner_tpg_id": 3 } ],
	  "targets": [ { "iqn": "$BED_HA_IQN", "luns": [
	    { "lun": 0, "path": "$URL", "device_group": "dg1" },
	    { "lun": 1, "path": "$BED_SHARED/lun1.img", "size": "64M", "device_group": "dg2" },
	    { "lun": 2, "path": "$BED_SHARED/lun2.img", "size": "64M", "device_group": "dg3" } ] } ]
	}
	EOF
}

# probe_node K: every LUN through node K from the host
# shellcheck disable=SC2317 # called through ha_check
probe_node() {
	local k=$1 lun out rc=0
	for lun in 0 1 2; do
		out=$SCRATCH/probe-n$k-$lun.txt
		if ! bed_probe "$k" "$lun" >"$out" 2>&1; then
			bed_log "cluster_probe through node $k, LUN $lun: $(paste -sd'|' "$out")"
			rc=1
			continue
		fi
		if ! grep -qx "rel_port $k" "$out" || ! grep -qx "tpg $k" "$out" ||
			[ "$(grep -c '^group ' "$out")" -ne 3 ]; then
			bed_log "node $k, LUN $lun: expected rel_port $k, tpg $k and 3 groups: $(paste -sd'|' "$out")"
			rc=1
		fi
	done
	return "$rc"
}

if [ -n "$BED_PROBE" ]; then
	for k in "${NODES[@]}"; do
		gateway_config "$k" "$SCRATCH/gateway-n$k.json"
		ha_check "isergwctl apply on node $k" \
			bed_isergwctl "$k" apply --epoch 1 "$SCRATCH/gateway-n$k.json" >/dev/null
	done
	for k in "${NODES[@]}"; do
		ha_check "probe through node $k" probe_node "$k"
	done
	[ "$fail" -eq 0 ] && bed_log "the host reaches LUNs 0-2 through every node (LUN 0 forwarded to the backend)"
else
	bed_log "no --probe: the host's view through the nodes is not checked"
fi
ha_check "the example cluster configuration" bed_cluster_config "$SCRATCH/cluster.json"

# 4. partition node 3 on the ring network, then heal
ha_check "partition node 3" bed_partition 3 || bed_die "cannot partition"
ha_check "nodes 1 2 quorate with 2" bed_wait_quorum 2 1 2 && measured "node 3 partitioned -> 1,2 quorate 2/3"
ha_check "node 3 inquorate alone" bed_wait_inquorate 1 3 && measured "node 3 partitioned -> 3 inquorate alone"
if [ -n "$BED_PROBE" ]; then
	ha_check "the host still reaches node 3 (storage network)" probe_node 3
fi
ha_check "heal node 3" bed_heal 3
ha_check "3 members after the heal" bed_wait_quorum 3 "${NODES[@]}" && measured "node 3 healed -> quorate 3/3"

# 5. node 1 hangs (SIGSTOP) and comes back
ha_check "freeze node 1" bed_freeze 1
ha_check "nodes 2 3 quorate with 2" bed_wait_quorum 2 2 3 && measured "node 1 frozen -> 2,3 quorate 2/3"
ha_check "thaw node 1" bed_thaw 1
ha_check "3 members after the thaw" bed_wait_quorum 3 "${NODES[@]}" && measured "node 1 thawed -> quorate 3/3"

# 6. node 2 loses power and comes back
ha_check "kill node 2" bed_kill_node 2
ha_check "nodes 1 3 quorate with 2" bed_wait_quorum 2 1 3 && measured "node 2 killed -> 1,3 quorate 2/3"
bed_alive 2 isergwd && { bed_log "FAILED: isergwd of node 2 survived kill_node"; fail=1; }
from=$(bed_log_lines 2 isergwd)
ha_check "restart node 2" bed_restart_node 2
ha_check "3 members after the restart" bed_wait_quorum 3 "${NODES[@]}" && measured "node 2 restarted -> quorate 3/3"
ha_check "isergwd of node 2 answers after the restart" bed_isergwctl 2 status >/dev/null
ha_check "isergwd of node 2 logs its new start" bed_wait_log 2 isergwd 'starting' "$from" >/dev/null

# 7. clean stop and teardown
for k in "${NODES[@]}"; do
	ha_check "isergwd on node $k stops with status 0" bed_stop_isergwd "$k"
done
ha_check "backend stops" bed_backend_stop
for k in "${NODES[@]}"; do
	ha_check "corosync on node $k stops" bed_stop_corosync "$k"
done
bed_down
ha_check "nothing left behind" bed_check_clean

echo "ha.bed: measured membership changes (token $BED_TOKEN ms configured; in force: $totem):"
printf '  %s\n' "${times[@]}"
[ "$fail" -eq 0 ] && echo "ha.bed: OK" || echo "ha.bed: FAILED (logs under $SCRATCH)"
exit "$fail"
