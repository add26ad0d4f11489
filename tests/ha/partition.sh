#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ha.partition: one node cut off from the other two, a change made without
# it, then the heal.
#
#   partition.sh --isergwd PATH --isergwctl PATH --ha PATH --probe PATH
#                --io PATH --prefix P --subnet S --scratch DIR
#
# Three nodes with corosync, isergwd and isergw-ha, the example cluster
# configuration (dgK preferring nK, failback immediate). Samplers read every
# node's REPORT TARGET PORT GROUPS of LUNs 0-2 every 100 ms for the whole
# run, three ha_io clients write and verify LUNs 0-2 through all three nodes
# (the one of LUN 2 starting on node 3), and every node's agent is asked
# for its generation every 0.5 s.
#
# 1. Node 3's ring network drops every packet (the host still reaches it on
#    the storage network). Node 3 must stop serving: its own group turns
#    Transitioning or Unavailable for every LUN (measured), then Unavailable
#    (measured); a WRITE through it fails NOT READY, 04/0A (asymmetric
#    access state transition) or 04/0C (target port in unavailable state).
#    Nodes 1 and 2 take dg3 over (measured: their RTPG shows another group
#    Active/Optimized for LUN 2).
# 2. In the majority, `cluster config apply` adds LUN 3 (a shared file, dg2):
#    nodes 1 and 2 take the new generation; node 3 does not, nor makes one of
#    its own (it has no quorum); LUN 3 answers through node 1.
# 3. The heal: three members; node 3 takes the majority's generation, serves
#    again, gets dg3 back (failback immediate) and shows LUN 3.
#
# Fails on: a client's lost or corrupted block, two serving nodes reporting
# two groups Active/Optimized for one device group (tests/ha/watch.sh), a
# WRITE through the cut-off node that does not fail as above, a generation
# that goes backwards on any node, a state that does not come within
# BED_WAIT_LIMIT (60 s), a daemon that died. Prints the measured times;
# never asserts one.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"
# shellcheck source=tests/ha/watch.sh
. "$here/watch.sh"

ha_options 3,34 --io WATCH_IO -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --io "$WATCH_IO" ha_io
ha_need --probe "$BED_PROBE" cluster_probe

report=()
measured() { report+=("$1: $2 s"); }

# gen_monitor: every node's generation every 0.5 s, into gen-nK.log (this
# run's only: a run before in the same scratch directory left its own)
gen_monitor() {
	local k g
	for k in 1 2 3; do : >"$SCRATCH/gen-n$k.log"; done
	while :; do
		for k in 1 2 3; do
			g=$(ha_gen "$k") && echo "$(bed_now_us) $g" >>"$SCRATCH/gen-n$k.log"
		done
		sleep 0.5
	done
}

# gen_monotonic: no node's generation ever went down
# shellcheck disable=SC2317 # called through check
gen_monotonic() {
	local k rc=0
	for k in 1 2 3; do
		if ! awk -v k="$k" '$2 < prev { printf "node %s: generation %s after %s (at %s)\n", k, $2, prev, $1; bad = 1 }
			{ prev = $2 } END { exit bad }' "$SCRATCH/gen-n$k.log" >&2; then
			rc=1
		fi
	done
	return "$rc"
}

# write_fails_not_ready K LUN: one WRITE through node K fails NOT READY
# with 04/0A or 04/0C (an LBA outside the clients' regions); prints the sense
write_fails_not_ready() {
	local out
	out=$(bed_host "$WATCH_IO" --write-once 131071 --initiator iqn.2026-11.org.isergw:write-once \
		"$(watch_url "$1" "$2")")
	echo "${out#write }"
	case "$out" in
	"write sense 2/04/0a" | "write sense 2/04/0c") return 0 ;;
	*) bed_log "WRITE through node $1, LUN $2: $out"; return 1 ;;
	esac
}

# lun_visible K LUN: cluster_probe through node K reads LUN's groups
# shellcheck disable=SC2317 # called through bed_poll
lun_visible() { bed_probe "$1" "$2" 2>/dev/null | grep -q '^group '; }

watch_cluster_up || bed_die "the cluster did not come up"
totem=$(bed_totem 1) || totem="? ?"
token=${totem% *}
bed_log "corosync token $token ms, consensus ${totem#* } ms"

io_start lun0 0 1 2 3
io_start lun1 1 2 3 1
io_start lun2 2 3 1 2
gen_monitor &
genpid=$!
sleep 2
for lun in 0 1 2; do
	watch_wait "$(bed_now_us)" "node $((lun + 1)) Active/Optimized for LUN $lun everywhere" "$lun" ao \
		"$((lun + 1))" 1 2 3 >/dev/null || bed_die "the cluster is not whole before the partition"
done
gen0=$(ha_gen 1) || bed_die "no generation from node 1"

# 1. node 3 cut off
t0=$(bed_now_us)
bed_partition 3 ring || bed_die "cannot partition node 3"
stepdown=0
for lun in 0 1 2; do
	ha_check "node 3 stops serving LUN $lun" watch_wait "$t0" "node 3 partitioned -> its group Transitioning or Unavailable for LUN $lun" \
		"$lun" own 15,3 3 || continue
	[ "${WATCH_SECS/./}" -gt "${stepdown/./}" ] && stepdown=$WATCH_SECS
done
measured "node 3 partitioned -> serves nothing (own group Transitioning/Unavailable, every LUN; token + 1 s = $(((token + 1000) / 1000)).$(((token + 1000) % 1000 / 100)) s)" "$stepdown"
sense_early=$(write_fails_not_ready 3 2) || { fail=1; bed_log "FAILED: WRITE through node 3 after its step-down"; }
unavail=0
for lun in 0 1 2; do
	ha_check "node 3 Unavailable for LUN $lun" watch_wait "$t0" "node 3 partitioned -> its group Unavailable for LUN $lun" \
		"$lun" own 3 3 || continue
	[ "${WATCH_SECS/./}" -gt "${unavail/./}" ] && unavail=$WATCH_SECS
done
measured "node 3 partitioned -> own group Unavailable (every LUN)" "$unavail"
sense_late=
for lun in 0 1 2; do
	s=$(write_fails_not_ready 3 "$lun") || { fail=1; bed_log "FAILED: WRITE through node 3, LUN $lun"; }
	sense_late+="${sense_late:+, }LUN $lun: $s"
done
if ha_check "nodes 1 and 2 take dg3 over" watch_wait "$t0" "node 3 partitioned -> another group Active/Optimized for LUN 2 on nodes 1 and 2" \
	2 ao_not 3 1 2; then
	measured "node 3 partitioned -> dg3 Active/Optimized elsewhere on nodes 1 and 2" "$WATCH_SECS"
fi
ha_check "nodes 1 and 2 quorate with 2" bed_wait_quorum 2 1 2 &&
	measured "node 3 partitioned -> nodes 1 and 2 quorate (corosync-quorumtool)" "$BED_ELAPSED"
ha_check "node 3 inquorate alone" bed_wait_inquorate 1 3
for lun in 0 1; do
	ha_check "LUN $lun still Active/Optimized on group $((lun + 1)) on nodes 1 and 2" \
		watch_wait "$t0" "LUN $lun on group $((lun + 1))" "$lun" ao "$((lun + 1))" 1 2 >/dev/null
done

# 2. a change in the majority: LUN 3
jq '.targets[0].luns += [{ "lun": 3, "path": "'"$BED_SHARED"'/lun3.img", "size": "64M", "device_group": "dg2" }]' \
	"$SCRATCH/cluster.json" >"$SCRATCH/cluster-lun3.json" || bed_die "jq failed"
ha_check "config apply (LUN 3) in the majority" bed_poll "$BED_WAIT_LIMIT" "config apply on node 1" \
	bed_cli 1 cluster config apply "$SCRATCH/cluster-lun3.json"
gen1=$(ha_gen 1)
gen3=$(ha_gen 3)
bed_log "generations: before the partition $gen0, majority now $gen1, node 3 $gen3"
ha_check "the majority's generation moved on" test "$gen1" -gt "$gen0"
ha_check "node 2 at the majority's generation" bed_poll "$BED_WAIT_LIMIT" "node 2 at generation $gen1" \
	eval "[ \"\$(ha_gen 2)\" = $gen1 ]"
ha_check "node 3 did not take the majority's change" test "$gen3" -lt "$gen1"
# without quorum an agent changes nothing (docs/ha.md): its generation stays
ha_check "node 3 made no generation of its own while cut off ($gen3, was $gen0)" test "$gen3" = "$gen0"
ha_check "LUN 3 through node 1" bed_poll "$BED_WAIT_LIMIT" "LUN 3 through node 1" lun_visible 1 3

# 3. heal
t1=$(bed_now_us)
bed_heal 3 || bed_die "cannot heal node 3"
ha_check "3 members after the heal" bed_wait_quorum 3 1 2 3 &&
	measured "healed -> quorate with 3 members (corosync-quorumtool)" "$BED_ELAPSED"
ha_check "node 3 synchronised" bed_poll "$BED_WAIT_LIMIT" "node 3 synced" ha_synced 3
g=$(ha_gen 1)
ha_check "node 3 takes the majority's generation" bed_poll "$BED_WAIT_LIMIT" "node 3 at generation $g" \
	eval "[ \"\$(ha_gen 3)\" = \"\$(ha_gen 1)\" ]"
if ha_check "node 3 serves again" watch_wait "$t1" "healed -> node 3 serves LUN 2 again" 2 serving x 3; then
	measured "healed -> node 3 serves again" "$WATCH_SECS"
fi
if ha_check "dg3 back on node 3" watch_wait "$t1" "healed -> group 3 Active/Optimized for LUN 2 everywhere" 2 ao 3 1 2 3; then
	measured "healed -> dg3 back on node 3 everywhere" "$WATCH_SECS"
fi
ha_check "LUN 3 through node 3" bed_poll "$BED_WAIT_LIMIT" "LUN 3 through node 3" lun_visible 3 3
sleep 2

kill "$genpid" 2>/dev/null
wait "$genpid" 2>/dev/null
ha_check "no generation went backwards" gen_monotonic
watch_finish lun0 lun1 lun2

echo "ha.partition: corosync token $token ms, consensus ${totem#* } ms"
printf 'ha.partition: %s\n' "${report[@]}"
echo "ha.partition: WRITE through node 3 after its step-down: ${sense_early:--}; once Unavailable: ${sense_late:--}"
echo "ha.partition: generations: $gen0 before, $gen1 in the majority after the change, node 3 at $gen3 until the heal, then $(ha_gen 3)"
for n in lun0 lun1 lun2; do
	echo "ha.partition: client $n: $(grep '^ha_io: writes' "$SCRATCH/io-$n.log" || echo 'no summary')"
done
[ "$fail" -eq 0 ] && echo "ha.partition: OK" || echo "ha.partition: FAILED (logs under $SCRATCH)"
exit "$fail"
