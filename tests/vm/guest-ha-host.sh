# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# The Linux host of the VM's HA tests (guest-ha-multipath.sh,
# guest-rolling-upgrade.sh): open-iscsi, the ALUA handler and dm-multipath
# set as docs/hosts.md says (read from that file, so the tests follow the
# documentation), logged in over iSER to every node of the HA bed
# (tests/ha/bed.sh with BED_STOR=rxe); fio writing and verifying LUN 0's map
# without pause and stall_probe reading it every 10 ms; dg1's owner as the
# nodes report it. Source after guest-lib.sh, bed.sh and ha_lib.sh, with
# SCRATCH and PROBE (the stall_probe binary) set.
#
#   host_up LEASE-MS      multipathd, the cluster (ha_cluster_up), a login to
#                         every node's portal, LUN 0's map (MAP, DEV_OF), the
#                         host on node 1's path; dies on failure. Sets totem.
#   host_io_start         the probe and the fio loop; sets baseline (the
#                         longest gap before any event).
#   host_io_stop          stops both; ha_check that fio and the probe saw no
#                         error; sets done_line (the probe's summary).
#   host_down             every node alive, multipathd stopped, logouts, the
#                         cluster down (ha_check each).
#   ready K               settled with dg1 on node K, the host on K's path.
#   wait_owner WHAT WANT K...   polls until dg1's owner is WANT on every K.
#   record KIND WHAT T0 SECS    the event's longest stall into EVENTS.
#   owner_node K, others_of K, now_s, probe_stall T0 T1, mp_groups.
#   host_finish           the EXIT trap: the logs (every node's corosync,
#                         isergwd and agent logs, the probe's, dmesg, and
#                         the files named in HOST_LOGS) into VM_OUT, the map
#                         told to stop queueing, the host's sessions, then
#                         the bed down.

PROBE_LOG=$SCRATCH/stall-probe.log
HOST_LOGS=()   # more files for host_finish to keep

# bed_init's trap takes the bed down; the host's sessions and multipathd go
# first, the logs are kept
host_finish() {
	local k f
	for ((k = 1; k <= BED_NODES; k++)); do
		for f in corosync.log isergwd.log ha.log; do
			[ -f "$SCRATCH/n$k/$f" ] && cp "$SCRATCH/n$k/$f" "$VM_OUT/n$k-$f"
		done
	done
	[ -f "$PROBE_LOG" ] && cp "$PROBE_LOG" "$VM_OUT/stall-probe.log"
	for f in "${HOST_LOGS[@]}"; do
		[ -f "$f" ] && cp "$f" "$VM_OUT/"
	done
	dmesg >"$VM_OUT/dmesg.partial" 2>&1
	# stop queueing I/O (no_path_retry) so that nothing waits on dead paths
	[ -n "$MAP" ] && dmsetup message "$MAP" 0 fail_if_no_path >/dev/null 2>&1
	vm_cleanup 2>/dev/null
	bed_down
}

# ---------------------------------------------------------------- the host

# hosts_iscsi: the open-iscsi node settings of docs/hosts.md's table (rows
# whose value is a number), NAME=VALUE each
hosts_iscsi() {
	# shellcheck disable=SC2154 # src is the sourcing script's
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


# ---------------------------------------------------------------- setup

host_up() {
	local lease=$1 mpconf kv k
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
	ha_cluster_up --lease-ms "$lease" || bed_die "the cluster did not come up"
	totem=$(bed_totem 1) || totem="? ?"
	vm_log "cluster up: corosync token ${totem% *} ms, consensus ${totem#* } ms"

	for k in "${HA_NODES[@]}"; do
		vm_iscsi_login "$BED_HA_IQN" "$(bed_portal "$k")" iser 0 || bed_die "login to node $k"
		[ "$(vm_iscsi_driver_of "$VM_SESSION")" = iscsi_iser ] ||
			bed_die "node $k: not logged in over iSER"
		DEV_OF[$k]=${VM_DEV#/dev/}
	done
	bed_poll "$BED_WAIT_LIMIT" "LUN 0's multipath map" _find_map || bed_die "no multipath map for LUN 0"
	ready 1 || bed_die "the host does not use node 1's path for LUN 0"
	multipath -ll "$MAP" >&2
	vm_log "map $MAP (LUN 0): $(mp_groups)"
}

host_io_start() {
	: >"$PROBE_LOG"
	probe_t0=$(now_s)
	"$PROBE" --interval-ms 10 --threshold-ms 50 "/dev/mapper/$MAP" >>"$PROBE_LOG" 2>&1 &
	probe_pid=$!
	fio_loop &
	fio_pid=$!
	sleep 3
	bed_poll 30 "the stall probe reading" _probe_tick_after 0 || bed_die "the stall probe reads nothing"
	# shellcheck disable=SC2034 # baseline is the sourcing script's
	baseline=$(probe_stall "$probe_t0" "$(now_s)")
}

host_io_stop() {
	local probe_rc
	touch "$FIO_STOP"
	ha_check "fio: 0 errors, 0 verify failures" wait "$fio_pid"
	kill -TERM "$probe_pid"
	wait "$probe_pid"
	probe_rc=$?
	done_line=$(grep '^done ' "$PROBE_LOG" | tail -n 1)
	ha_check "stall probe: no read failed ($done_line)" [ "$probe_rc" -eq 0 ]
}

host_down() {
	local k
	for k in "${HA_NODES[@]}"; do
		ha_check "node $k's isergwd and agent alive at the end" \
			eval "bed_alive $k isergwd && bed_alive $k ha"
	done
	vm_multipath_stop
	for k in "${HA_NODES[@]}"; do
		ha_check "logout from node $k" vm_iscsi_logout "$BED_HA_IQN" "$(bed_portal "$k")"
	done
	ha_cluster_down --all
}
