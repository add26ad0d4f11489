#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ha.failover: node death under I/O.
#
#   failover.sh --isergwd PATH --isergwctl PATH --ha PATH --io PATH
#               --prefix P --subnet S --scratch DIR [--kills N]
#
# Three nodes with corosync, isergwd and isergw-ha, the example cluster
# configuration (dgK preferring nK, failback immediate; LUN 0 forwarded to
# the tgt backend in dg1, LUNs 1 and 2 on shared files in dg2 and dg3).
# Samplers read every node's REPORT TARGET PORT GROUPS of LUNs 0-2 every
# 100 ms for the whole run; three ha_io clients write and verify LUNs 0, 1
# and 2 through all three nodes (each starting on its LUN's owner).
#
# N times (default 6), in turn on nodes 1, 2, 3, ...: node K, owner of dgK,
# dies: every packet on its two networks dropped, then SIGKILL to all its
# processes. Measured: the time from the kill to every survivor's RTPG of
# dgK's LUN showing another group Active/Optimized. Then the node is powered
# up again (corosync, isergwd, isergw-ha) and must sync (the survivors'
# generation, quorate) and take dgK back (failback immediate): every node's
# RTPG shows group K Active/Optimized for dgK, and node K reports itself
# Active/Non-optimized for the other groups.
#
# Fails on: a client's lost or corrupted block or a command no path could
# complete (ha_io's final check), two serving nodes reporting two groups
# Active/Optimized for one device group (tests/ha/watch.sh), a state that
# does not come within BED_WAIT_LIMIT (60 s), a daemon that died. Prints
# every measured time, their median and max. Never asserts a time.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"
# shellcheck source=tests/ha/watch.sh
. "$here/watch.sh"

KILLS=6
ha_options 3,29 --io WATCH_IO --kills KILLS -- "$@"
[[ $KILLS =~ ^[1-9][0-9]*$ ]] || bed_die "--kills wants a positive number"
ha_need --ha "$BED_HA" isergw-ha
ha_need --io "$WATCH_IO" ha_io

watch_cluster_up || bed_die "the cluster did not come up"
totem=$(bed_totem 1) || totem="? ?"
bed_log "corosync token ${totem% *} ms, consensus ${totem#* } ms"

# each client starts on its LUN's owner and fails over to the others
io_start lun0 0 1 2 3
io_start lun1 1 2 3 1
io_start lun2 2 3 1 2
sleep 2

times=()
back=()
for ((i = 1; i <= KILLS; i++)); do
	k=$(((i - 1) % 3 + 1))
	lun=$((k - 1))
	others=()
	for j in 1 2 3; do [ "$j" -ne "$k" ] && others+=("$j"); done

	# the cluster is whole: every node serves, dgK on node K
	since=$(bed_now_us)
	watch_wait "$since" "kill $i: every node serves LUN $lun" "$lun" serving x 1 2 3 >/dev/null ||
		{ fail=1; break; }
	watch_wait "$since" "kill $i: group $k Active/Optimized for LUN $lun everywhere" "$lun" ao "$k" 1 2 3 \
		>/dev/null || { fail=1; break; }

	t0=$(bed_now_us)
	bed_mark "node $k killed"
	if ! bed_partition "$k" ring 2>/dev/null || ! bed_partition "$k" stor 2>/dev/null; then
		bed_die "cannot drop node $k's packets"
	fi
	bed_kill_node "$k" || bed_die "cannot kill node $k"
	if ! watch_wait "$t0" "kill $i: node $k killed -> another group Active/Optimized for LUN $lun on every survivor" \
		"$lun" ao_not "$k" "${others[@]}"; then
		fail=1
		break
	fi
	times+=("$WATCH_SECS")
	for j in "${others[@]}"; do
		ha_check "node $j's isergwd and agent alive after node $k's death" \
			eval "bed_alive $j isergwd && bed_alive $j ha"
	done

	# power up again: sync, then failback
	bed_heal "$k" ring >/dev/null 2>&1
	bed_heal "$k" stor >/dev/null 2>&1
	t1=$(bed_now_us)
	bed_restart_node "$k" || bed_die "node $k did not restart"
	ha_check "kill $i: 3 members after node $k's restart" bed_wait_quorum 3 1 2 3 || break
	ha_check "kill $i: node $k's agent synchronised" bed_poll "$BED_WAIT_LIMIT" "node $k synced" ha_synced "$k" ||
		break
	if ! watch_wait "$t1" "kill $i: node $k restarted -> group $k Active/Optimized for LUN $lun everywhere" \
		"$lun" ao "$k" 1 2 3; then
		fail=1
		break
	fi
	back+=("$WATCH_SECS")
	for j in 0 1 2; do
		[ "$j" -eq "$lun" ] && continue
		ha_check "kill $i: node $k Active/Non-optimized for LUN $j" \
			watch_wait "$t1" "kill $i: node $k Active/Non-optimized for LUN $j" "$j" own 1 "$k" >/dev/null
	done
	g=$(ha_gen "$k")
	for j in "${others[@]}"; do
		ha_check "kill $i: node $k at node $j's generation ($g)" bed_poll "$BED_WAIT_LIMIT" \
			"node $j at generation $g" eval "[ \"\$(ha_gen $j)\" = $g ]"
	done
done

sleep 2
watch_finish lun0 lun1 lun2

echo "ha.failover: corosync token ${totem% *} ms, consensus ${totem#* } ms"
for ((i = 0; i < ${#times[@]}; i++)); do
	echo "ha.failover: kill $((i + 1)) (node $((i % 3 + 1))): new owner on every survivor after ${times[$i]} s;" \
		"owner again after its restart: ${back[$i]:--} s"
done
echo "ha.failover: node death -> new owner everywhere: $(watch_stats "${times[@]}") over ${#times[@]} kills"
echo "ha.failover: restart -> failback everywhere: $(watch_stats "${back[@]}")"
for n in lun0 lun1 lun2; do
	echo "ha.failover: client $n: $(grep '^ha_io: writes' "$SCRATCH/io-$n.log" || echo 'no summary')"
done
[ "${#times[@]}" -eq "$KILLS" ] || fail=1
[ "$fail" -eq 0 ] && echo "ha.failover: OK" || echo "ha.failover: FAILED (logs under $SCRATCH)"
exit "$fail"
