#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The host's view of an HA cluster (runs in the guest: tests/vm/run-vm.sh;
# ctest vm.ha-multipath).
#
#   run-vm.sh tests/vm/guest-ha-multipath.sh --isergwd PATH --isergwctl PATH
#             --ha PATH --stall-probe PATH [--kills 3] [--drains 3]
#
# Three gateway nodes as in the HA bed (tests/ha/bed.sh with BED_STOR=rxe):
# each with real corosync (knet, token 3000 ms here, its ring in the node's own
# network namespace), isergw-ha and isergwd, the example cluster
# configuration (dgK preferring nK with immediate failback; LUN 0 in dg1,
# LUNs 1 and 2 in dg2 and dg3, on files all nodes share) with every node's
# portal on iser:// over its own Soft-RoCE device. The Linux host is the
# guest itself: open-iscsi over iSER (ib_iser) logged in to all three
# portals, with the node settings of docs/hosts.md's open-iscsi table, its
# scsi_dh_alua options and dm-multipath with its multipath.conf (all read
# from that file, so the test follows the documentation).
#
# While fio writes and verifies (crc32c) LUN 0's map without pause and
# stall_probe reads 4 KiB from it every 10 ms:
#   --kills N times: the owner of dg1 dies (SIGKILL to every process of the
#     node); the survivors make another node the owner; the node is powered
#     up again, syncs, and takes dg1 back (failback immediate);
#   --drains N times: the owner of dg1 is drained (dg1 moves away, a planned
#     move), then undrained (dg1 moves back);
#   once: the owner of dg1 is cut off from the ring (every corosync packet
#     dropped); it steps down, the others take dg1 over; then healed, and dg1
#     comes back.
# Before each event every path of the map is active again. For each event the
# longest gap between two completed probe reads around it is printed (the
# host's I/O stall), with the time until the cluster reported the new owner.
#
# Fails on: a fio error or verify failure, a probe read error (an I/O error
# the host's file system would have seen), a cluster or host state that does
# not come within the bed's limit (60 s), a daemon that died, anything left
# behind. The stalls are printed and compared with the goals (unplanned
# 3 s, planned 0.5 s) in the summary, never asserted.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$here/guest-lib.sh"
# shellcheck source=tests/ha/bed.sh
. "$src/tests/ha/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$src/tests/ha/ha_lib.sh"

KILLS=3
DRAINS=3
PROBE=
export BED_STOR=rxe
BED_STOR=rxe
# Timings for an emulated machine (TCG runs the guest many times slower than
# the host): with corosync's token at 1000 ms and the agents' lease at
# 1500 ms (the defaults of docs/ha.md) corosync reported itself unscheduled
# for over a second, memberships flapped, and heartbeats arrived after the
# lease they renewed had run out. Corosync's own default token (3000 ms) and
# a 4000 ms lease hold here (VM_TOKEN_MS and VM_LEASE_MS change them); the
# namespace bed (tests/ha) measures the 1000 ms timings.
BED_TOKEN=${VM_TOKEN_MS:-3000}
LEASE_MS=${VM_LEASE_MS:-4000}
# every poll runs isergwctl and jq: in an emulated CPU, not too often
BED_POLL_S=0.5
SCRATCH=/tmp/ha
ha_options 3,39 --stall-probe PROBE --kills KILLS --drains DRAINS -- \
	--prefix vh --subnet 30 --scratch "$SCRATCH" "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --stall-probe "$PROBE" stall_probe
[[ $KILLS =~ ^[0-9]+$ && $DRAINS =~ ^[0-9]+$ ]] || bed_die "--kills and --drains want numbers"
# bed_init's trap takes the bed down; the host's sessions and multipathd go
# first, the logs are kept
finish() {
	collect_logs
	# stop queueing I/O (no_path_retry) so that nothing waits on dead paths
	[ -n "$MAP" ] && dmsetup message "$MAP" 0 fail_if_no_path >/dev/null 2>&1
	vm_cleanup 2>/dev/null
	bed_down
}
collect_logs() {
	local k f
	for ((k = 1; k <= BED_NODES; k++)); do
		for f in corosync.log isergwd.log ha.log; do
			[ -f "$SCRATCH/n$k/$f" ] && cp "$SCRATCH/n$k/$f" "$VM_OUT/n$k-$f"
		done
	done
	[ -f "$PROBE_LOG" ] && cp "$PROBE_LOG" "$VM_OUT/stall-probe.log"
	dmesg >"$VM_OUT/dmesg.partial" 2>&1
	true
}
trap finish EXIT

PROBE_LOG=$SCRATCH/stall-probe.log

# ---------------------------------------------------------------- the host

# hosts_iscsi: the open-iscsi node settings of docs/hosts.md's table (rows
# whose value is a number), NAME=VALUE each
hosts_iscsi() {
	sed -n 's/^| `\(node\.[^`]*\)` | `\([0-9][0-9]*\)` |.*/\1=\2/p' "$src/docs/hosts.md"
}
# hosts_alua_opts: docs/hosts.md's scsi_dh_alua options, NAME=VALUE each
hosts_alua_opts() {
	sed -n 's/^options scsi_dh_alua //p' "$src/docs/hosts.md" | tr ' ' '\n' | grep '='
}
# hosts_multipath: docs/hosts.md's multipath.conf (the first code block after
# its dm-multipath heading)
hosts_multipath() {
	awk '/^## dm-multipath/ { s = 1 } s && /^```/ { if (b) exit; b = 1; next } b' "$src/docs/hosts.md"
}

MAP=
declare -A DEV_OF=() # node -> sdX of LUN 0

# _find_map: the map holding node 1's LUN 0 path
_find_map() {
	local m
	for m in $(multipathd show maps raw format "%n" 2>/dev/null); do
		if multipath -ll "$m" 2>/dev/null | grep -q " ${DEV_OF[1]} "; then
			MAP=$m
			[ -b "/dev/mapper/$MAP" ]
			return
		fi
	done
	return 1
}

# mp_groups: "PRIO:STATUS:DEV,DEV ..." per path group, best first
mp_groups() {
	multipath -ll "$MAP" 2>/dev/null | awk '
		/prio=/ { if (g != "") printf "%s ", g
			  match($0, /prio=[0-9]+/); p = substr($0, RSTART + 5, RLENGTH - 5)
			  match($0, /status=[a-z]+/); s = substr($0, RSTART + 7, RLENGTH - 7)
			  g = p ":" s ":"; n = 0; next }
		g != "" && match($0, /sd[a-z]+/) { g = g (n++ ? "," : "") substr($0, RSTART, RLENGTH) }
		END { if (g != "") print g }'
}

# _mp_serving K: node K's path alone in the active path group, every path of
# the map "active ready" (the host uses the owner and could fail over)
_mp_serving() {
	local k=$1 out
	out=$(multipath -ll "$MAP" 2>/dev/null) || return 1
	[ "$(grep -c ' active ready ' <<<"$out")" -eq "$BED_NODES" ] || return 1
	awk -v dev="${DEV_OF[$k]}" '
		/status=active/ { act = 1; next }
		/status=/ { act = 0 }
		act && match($0, /sd[a-z]+/) { n++; if (substr($0, RSTART, RLENGTH) != dev) other = 1 }
		END { exit !(n == 1 && !other) }' <<<"$out"
}

# ---------------------------------------------------------------- I/O

FIO_STOP=$SCRATCH/fio.stop
fio_loop() {
	local i=0
	while [ ! -e "$FIO_STOP" ]; do
		i=$((i + 1))
		# rate-limited: continuous verified I/O, not a load that starves
		# the emulated CPUs (corosync, the agents) of time
		vm_fio "ha-$i" "/dev/mapper/$MAP" --rw=randwrite --bs=4k --size=16M --iodepth=4 \
			--rate_iops=100 --verify=crc32c --do_verify=1 --verify_fatal=1 \
			--randseed="$i" || return 1
	done
	vm_log "fio: $i rounds of write + verify, all clean"
}

# probe_tick_after T: the probe reported a completed read after time T
# (seconds since the epoch)
_probe_tick_after() {
	awk -v t="$1" '$1 == "tick" && $2 > t { f = 1 } END { exit !f }' "$PROBE_LOG"
}

# probe_stall T0 T1: the longest gap between completed reads that overlaps
# [T0, T1] (seconds), after waiting until the probe has read past T1
probe_stall() {
	bed_poll "$BED_WAIT_LIMIT" "the stall probe reading again" _probe_tick_after "$2" ||
		{ echo "?"; return 1; }
	awk -v a="$1" -v b="$2" 'BEGIN { m = 0 }
		$1 == "stall" && $3 >= a && $2 <= b && $4 > m { m = $4 }
		END { printf "%.3f\n", m }' "$PROBE_LOG"
}

now_s() { echo "$EPOCHREALTIME"; }

# ---------------------------------------------------------------- events

EVENTS=()    # "KIND|WHAT|cluster seconds|stall seconds"
owner_node() { local o; o=$(ha_owner "$1" dg1) && echo "${o#n}"; }

# _owner_everywhere WANT K...: every node K reports dg1's owner as nWANT
# (WANT "!J": any node but J)
_owner_everywhere() {
	local want=$1 k o
	shift
	for k in "$@"; do
		o=$(owner_node "$k") || return 1
		if [ "${want#!}" != "$want" ]; then
			[[ -n $o && $o != "${want#!}" ]] || return 1
		else
			[ "$o" = "$want" ] || return 1
		fi
	done
}

# ready K: the cluster whole and settled with dg1 on node K, the host using
# node K's path with every path active
ready() {
	local k=$1 j
	if ! ha_wait_settled "every node synced, dg1 on n$k" --serving \
		"$(jq -c --arg o "n$k" '.dg1 = $o' <<<"$HA_OWNERS")" "${HA_NODES[@]}"; then
		for j in "${HA_NODES[@]}"; do
			bed_log "node $j: $(ha_status "$j" | jq -c '{phase, quorate, generation,
				isergwd_epoch, lease_remaining_ms}' 2>&1)"
		done
		return 1
	fi
	if ! bed_poll "$BED_WAIT_LIMIT" "the host on node $k's path, every path active" _mp_serving "$k"; then
		multipath -ll "$MAP" >&2
		return 1
	fi
}

# record KIND WHAT T0 CLUSTER_SECS: the event's stall, into EVENTS
record() {
	local kind=$1 what=$2 t0=$3 cl=$4 st
	st=$(probe_stall "$t0" "$(now_s)")
	EVENTS+=("$kind|$what|$cl|$st")
	vm_log "$what: owner seen by the test after $cl s (polling); longest host I/O stall $st s"
}

# wait_owner WHAT WANT K...: polls until dg1's owner is WANT on every node K;
# prints the seconds since the last bed_mark
wait_owner() {
	local what=$1
	shift
	bed_poll "$BED_WAIT_LIMIT" "$what" _owner_everywhere "$@" || return 1
	bed_secs_since "$BED_T0"
}

others_of() {
	local j
	for j in "${HA_NODES[@]}"; do [ "$j" -ne "$1" ] && echo "$j"; done
}

event_kill() {
	local i=$1 k t0 cl survivors
	k=$(owner_node 1) || return 1
	mapfile -t survivors < <(others_of "$k")
	t0=$(now_s)
	bed_kill_node "$k" || return 1
	cl=$(wait_owner "kill $i: dg1 off node $k on the survivors" "!$k" "${survivors[@]}") || return 1
	record unplanned "kill $i (node $k)" "$t0" "$cl"
	t0=$(now_s)
	bed_restart_node "$k" || return 1
	bed_wait_quorum 3 "${HA_NODES[@]}" >/dev/null || return 1
	cl=$(wait_owner "kill $i: node $k back, dg1 failed back" "$k" "${HA_NODES[@]}") || return 1
	ready "$k" || return 1
	record planned "kill $i: node $k back (failback)" "$t0" "$cl"
}

event_drain() {
	local i=$1 k t0 cl
	k=$(owner_node 1) || return 1
	t0=$(now_s)
	bed_mark "node $k drained"
	bed_cli 1 cluster drain "n$k" >/dev/null || { bed_log "drain n$k refused"; return 1; }
	cl=$(wait_owner "drain $i: dg1 off node $k" "!$k" "${HA_NODES[@]}") || return 1
	record planned "drain $i (node $k)" "$t0" "$cl"
	ready "$(owner_node 1)" || return 1
	t0=$(now_s)
	bed_mark "node $k undrained"
	bed_cli 1 cluster undrain "n$k" >/dev/null || { bed_log "undrain n$k refused"; return 1; }
	cl=$(wait_owner "undrain $i: dg1 back on node $k" "$k" "${HA_NODES[@]}") || return 1
	record planned "undrain $i (node $k)" "$t0" "$cl"
	ready "$k"
}

event_partition() {
	local k t0 cl survivors
	k=$(owner_node 1) || return 1
	mapfile -t survivors < <(others_of "$k")
	t0=$(now_s)
	bed_partition "$k" ring || return 1
	cl=$(wait_owner "partition: dg1 off node $k on the majority" "!$k" "${survivors[@]}") || return 1
	record unplanned "partition (node $k cut off)" "$t0" "$cl"
	t0=$(now_s)
	bed_heal "$k" ring || return 1
	bed_wait_quorum 3 "${HA_NODES[@]}" >/dev/null || return 1
	cl=$(wait_owner "heal: dg1 back on node $k" "$k" "${HA_NODES[@]}") || return 1
	ready "$k" || return 1
	record planned "heal (node $k back)" "$t0" "$cl"
}

# ---------------------------------------------------------------- the run

mkdir -p "$SCRATCH" || bed_die "cannot create $SCRATCH"
mapfile -t VM_ISCSI_SETTINGS < <(hosts_iscsi)
[ "${#VM_ISCSI_SETTINGS[@]}" -ge 3 ] || bed_die "no open-iscsi settings found in docs/hosts.md"
mpconf=$(hosts_multipath)
grep -q 'prio *alua' <<<"$mpconf" || bed_die "no multipath.conf found in docs/hosts.md"
vm_log "open-iscsi settings (docs/hosts.md): ${VM_ISCSI_SETTINGS[*]}"
# the ALUA handler's options, before any device attaches
for kv in $(hosts_alua_opts); do
	echo "${kv#*=}" >"/sys/module/scsi_dh_alua/parameters/${kv%%=*}" ||
		bed_die "cannot set scsi_dh_alua's ${kv%%=*}"
	vm_log "scsi_dh_alua: ${kv%%=*}=$(cat "/sys/module/scsi_dh_alua/parameters/${kv%%=*}")"
done

# udev first: it gives new veth devices new MAC addresses (see
# guest-multipath.sh), which must happen before rxe takes them
vm_multipath_start "$mpconf" || bed_die "multipathd"
ha_cluster_up --lease-ms "$LEASE_MS" || bed_die "the cluster did not come up"
totem=$(bed_totem 1) || totem="? ?"
vm_log "cluster up: corosync token ${totem% *} ms, consensus ${totem#* } ms"

for k in "${HA_NODES[@]}"; do
	vm_iscsi_login "$BED_HA_IQN" "$(bed_portal "$k")" iser 0 || bed_die "login to node $k"
	[ "$(vm_iscsi_driver_of "$VM_SESSION")" = iscsi_iser ] || bed_die "node $k: not logged in over iSER"
	DEV_OF[$k]=${VM_DEV#/dev/}
done
bed_poll "$BED_WAIT_LIMIT" "LUN 0's multipath map" _find_map || bed_die "no multipath map for LUN 0"
ready 1 || bed_die "the host does not use node 1's path for LUN 0"
multipath -ll "$MAP" >&2
vm_log "map $MAP (LUN 0): $(mp_groups)"

: >"$PROBE_LOG"
probe_t0=$(now_s)
"$PROBE" --interval-ms 10 --threshold-ms 50 "/dev/mapper/$MAP" >>"$PROBE_LOG" 2>&1 &
probe_pid=$!
fio_loop &
fio_pid=$!
sleep 3
bed_poll 30 "the stall probe reading" _probe_tick_after 0 || bed_die "the stall probe reads nothing"
baseline=$(probe_stall "$probe_t0" "$(now_s)")

ok=1
for ((i = 1; i <= KILLS && ok; i++)); do
	event_kill "$i" || { bed_log "FAILED: kill $i"; ok=0; }
done
for ((i = 1; i <= DRAINS && ok; i++)); do
	event_drain "$i" || { bed_log "FAILED: drain $i"; ok=0; }
done
if [ "$ok" -eq 1 ]; then
	event_partition || { bed_log "FAILED: partition"; ok=0; }
fi
[ "$ok" -eq 1 ] || fail=1

touch "$FIO_STOP"
ha_check "fio: 0 errors, 0 verify failures" wait "$fio_pid"
kill -TERM "$probe_pid"
wait "$probe_pid"
probe_rc=$?
done_line=$(grep '^done ' "$PROBE_LOG" | tail -n 1)
ha_check "stall probe: no read failed ($done_line)" [ "$probe_rc" -eq 0 ]
for k in "${HA_NODES[@]}"; do
	ha_check "node $k's isergwd and agent alive at the end" eval "bed_alive $k isergwd && bed_alive $k ha"
done

vm_multipath_stop
for k in "${HA_NODES[@]}"; do
	ha_check "logout from node $k" vm_iscsi_logout "$BED_HA_IQN" "$(bed_portal "$k")"
done
ha_cluster_down --all

echo "vm.ha-multipath: corosync token ${totem% *} ms; probe: 4 KiB direct reads every 10 ms, $done_line"
echo "vm.ha-multipath: longest gap between reads in the 3 s before the first event: $baseline s (0: none over the probe's 50 ms threshold)"
echo "vm.ha-multipath: (the owner times are when the test's polling, slow in the VM, saw the change on every node; the cluster's own timings are measured by ha.failover on the host)"
umax=0 pmax=0 nu=0 np=0
for e in "${EVENTS[@]}"; do
	IFS='|' read -r kind what cl st <<<"$e"
	printf 'vm.ha-multipath: %-9s %-36s owner seen by the test after %7s s, host I/O stall %6s s\n' \
		"$kind" "$what" "$cl" "$st"
	if [ "$kind" = unplanned ]; then
		nu=$((nu + 1)); umax=$(awk -v a="$umax" -v b="$st" 'BEGIN { print (b > a ? b : a) }')
	else
		np=$((np + 1)); pmax=$(awk -v a="$pmax" -v b="$st" 'BEGIN { print (b > a ? b : a) }')
	fi
done
echo "vm.ha-multipath: longest stall: unplanned $umax s over $nu events (goal 3 s), planned $pmax s over $np events (goal 0.5 s)"
[ "${#EVENTS[@]}" -eq $((2 * KILLS + 2 * DRAINS + 2)) ] || fail=1
[ "$fail" -eq 0 ] && echo "vm.ha-multipath: OK" || echo "vm.ha-multipath: FAILED (logs in $VM_OUT)"
exit "$fail"
