#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# ha.failback: what a host sees when an owner comes back after it was fenced
# at the backend (docs/ha.md, "Failback").
#
#   failback.sh --isergwd PATH --isergwctl PATH --ha PATH --io PATH
#               --prefix P --subnet S --scratch DIR
#
# Three nodes, the example configuration (dg1 prefers n1, failback
# immediate; LUN 0 in dg1 forwarded to the tgt backend, so the gateways
# fence one another there). One ha_io client with --follow-ao writes and
# verifies LUN 0 through the three nodes the way dm-multipath with the ALUA
# handler does: always down the path whose own group says Active/Optimized.
# Node 1, dg1's owner, is taken away in four ways, one after the other:
#   heal      its ring partitioned, then healed
#   agent     its isergw-ha killed, then started again
#   corosync  its corosync killed, then started again
#   freeze    every process of it SIGSTOPped, then SIGCONTed
# each time long enough for the others to take dg1 over (and fence n1's
# reservation key at the backend: its lease is certainly over by then), and
# back. From the moment it comes back until group 1 is Active/Optimized for
# LUN 0 on every node and the client has written through it for a while
# (the watched stretch), every write must succeed: NOT READY 04/0A (ALUA
# transitioning, which hosts retry) and unit attentions are the only answers
# allowed besides GOOD. Fails on a failed write or a NOT READY other than
# transitioning in a watched stretch, a lost or corrupted block, a double
# Active/Optimized (tests/ha/watch.sh), a state that does not come within
# BED_WAIT_LIMIT, a daemon that died. Prints the counts of each return.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"
# shellcheck source=tests/ha/watch.sh
. "$here/watch.sh"

ha_options 4,29 --io WATCH_IO -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --io "$WATCH_IO" ha_io

IO_LOG=$SCRATCH/io-failback.log

# owned_elsewhere: nodes 2 and 3 name an owner of dg1 that is not n1
owned_elsewhere() {
	local k o
	for k in 2 3; do
		o=$(ha_owner "$k" dg1)
		[ -n "$o" ] && [ "$o" != n1 ] || return 1
	done
}

# away KIND / back KIND: node 1 taken away, brought back
away() {
	case $1 in
	heal) bed_partition 1 ring ;;
	agent) bed_kill 1 ha ;;
	corosync) bed_kill 1 corosync ;;
	freeze) bed_freeze 1 ;;
	esac
}
back() {
	case $1 in
	heal) bed_heal 1 ring ;;
	agent) bed_start_ha 1 ;;
	corosync) bed_start_corosync 1 ;;
	freeze) bed_thaw 1 ;;
	esac
}

watch_cluster_up || bed_die "the cluster did not come up"
ip netns exec "${BED_PREFIX}host" "$WATCH_IO" --follow-ao 100 --seed 2000 --region-mib 16 \
	--timeout-s 3 --pause-ms 2 --initiator "iqn.2026-11.org.isergw:io-failback" \
	"$(watch_url 1 0)" "$(watch_url 2 0)" "$(watch_url 3 0)" >"$IO_LOG" 2>&1 &
io_pid=$!
sleep 2

secs=()
per_kind=()
seen=0
for kind in heal agent corosync freeze; do
	since=$(bed_now_us)
	watch_wait "$since" "$kind: group 1 Active/Optimized for LUN 0 everywhere" 0 ao 1 1 2 3 \
		>/dev/null || { fail=1; break; }
	bed_mark "node 1 away ($kind)"
	ha_check "$kind: node 1 taken away" away "$kind" || break
	ha_check "$kind: dg1 moved off n1 on nodes 2 and 3" \
		bed_poll "$BED_WAIT_LIMIT" "dg1 off n1" owned_elsewhere || break
	t_back=$(bed_now_us)
	bed_mark "node 1 back ($kind)"
	kill -USR1 "$io_pid"
	ha_check "$kind: node 1 brought back" back "$kind" || break
	if ! watch_wait "$t_back" "$kind: node 1 back -> group 1 Active/Optimized for LUN 0 everywhere" \
		0 ao 1 1 2 3; then
		fail=1
		break
	fi
	secs+=("$kind $WATCH_SECS")
	ha_check "$kind: every node synced at one generation" \
		bed_poll "$BED_WAIT_LIMIT" "all synced" ha_settled '' 1 2 3
	# the host writes through node 1 for a while before the stretch ends
	sleep 3
	kill -USR2 "$io_pid"
	n=$(grep -c 'failed (watched)' "$IO_LOG")
	per_kind+=("$kind $((n - seen))")
	seen=$n
	ha_check "$kind: node 1's daemons alive" eval "bed_alive 1 isergwd && bed_alive 1 ha"
done

kill -TERM "$io_pid"
wait "$io_pid"
st=$?
ha_check "the client's final verification (exit $st)" [ "$st" -eq 0 ]
watch_stop
ha_check "no double Active/Optimized" watch_check_double_ao
grep '^ha_io: ' "$IO_LOG" | grep -v ' stall of ' >&2
grep 'failed (watched)' "$IO_LOG" | head -n 20 >&2
watched=$(grep '^ha_io: watched:' "$IO_LOG")
[[ $watched =~ failed\ writes\ ([0-9]+),\ not\ ready\ other\ than\ transitioning\ ([0-9]+) ]] ||
	bed_die "no summary from the client"
failed=${BASH_REMATCH[1]} notready=${BASH_REMATCH[2]}
ha_check "no failed write while node 1 came back ($failed)" [ "$failed" -eq 0 ]
ha_check "no NOT READY other than transitioning while node 1 came back ($notready)" \
	[ "$notready" -eq 0 ]
per_path=$(grep '^ha_io: writes per path:' "$IO_LOG")
ha_check "the client wrote through node 1 ($per_path)" \
	[ "$(awk '{ print $5 }' <<<"$per_path")" -gt 0 ]
ha_stop_daemons

for i in "${!secs[@]}"; do
	s=${secs[$i]} k=${per_kind[$i]:-"? ?"}
	echo "ha.failback: ${s% *}: node 1 back -> group 1 Active/Optimized everywhere after ${s#* } s;" \
		"failed commands while it came back: ${k#* }"
done
echo "ha.failback: $watched"
[ "${#secs[@]}" -eq 4 ] || fail=1
[ "$fail" -eq 0 ] && echo "ha.failback: OK" || echo "ha.failback: FAILED (logs under $SCRATCH)"
exit "$fail"
