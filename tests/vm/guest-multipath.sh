#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Two gateway nodes, one LUN, the Linux host on dm-multipath with ALUA (runs
# in the guest: tests/vm/run-vm.sh; ctest vm.multipath-alua).
#
#   run-vm.sh tests/vm/guest-multipath.sh --daemon PATH/isergwd
#             --ctl PATH/isergwctl [--flips N] [--size 256M]
#
# Two isergwd processes ("nodes"), each in its own mount namespace with its
# own /run, serve the same backing file over iSER, each on its own address
# and its own Soft-RoCE device (rxe on one end of a veth pair; see below why
# the nodes share the network namespace). Node 1 is target port group 1
# (relative port 1), node 2 group 2 (relative port 2); both describe the
# cluster's two groups, share the LU's reservation state, and start with
# group 1 Active/Optimized and group 2 Active/Non-optimized. The ALUA policy
# is external, as in a cluster (this script plays the HA agent): the SET
# TARGET PORT GROUPS that Linux's alua handler sends when it activates a
# Standby/Unavailable/non-optimized path is refused (NOT READY 04/0A, no
# subscriber) instead of a node changing its own group behind the cluster's
# back.
#
# The host (open-iscsi over iSER, ib_iser) logs in to both; multipathd with
# prio alua and group_by_prio must show one active path group (node 1) and
# one enabled (node 2). Then, while fio writes and verifies (crc32c) through
# /dev/mapper/WWID without pause, ownership is flipped through the control
# protocol (isergwctl on each node's control socket) several times, each
# flip passing through Transitioning, and once to Unavailable. After each
# flip the per-port counters must show reads and writes arriving at the new
# Active/Optimized node and stopping at the old one; the time from the
# control request to the first command on the new path is printed.
# fio must report 0 errors and 0 verify failures; both nodes must stop with
# exit status 0 on SIGTERM.
#
# Why one network namespace: Debian 12's kernel (6.1) creates rdma_rxe's
# RoCEv2 UDP socket (port 4791) in the initial network namespace only, so an
# rxe device on a veth end inside another namespace never receives anything
# (rping into such a namespace times out). The nodes are still separate
# processes with separate addresses, RDMA devices, control sockets and /run.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$here/guest-lib.sh"

DAEMON=
CTL=
FLIPS=4
SIZE=256M
while [ $# -gt 0 ]; do
	case "$1" in
	--daemon) DAEMON=$2; shift 2 ;;
	--ctl) CTL=$2; shift 2 ;;
	--flips) FLIPS=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	-h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2' "$0"; exit 0 ;;
	*) vm_die "unknown option $1" ;;
	esac
done
[ -x "$DAEMON" ] || vm_die "--daemon PATH (the isergwd binary) is required"
[ -x "$CTL" ] || vm_die "--ctl PATH (the isergwctl binary) is required"

IQN=iqn.2026-11.org.isergw:vm-mp
WORK=/tmp/mp
DISK=$WORK/lun.img
NODES=(1 2)
addr_of() { echo "10.10.$1.2"; }
# the node's /run is $WORK/nN/run (bind-mounted in its mount namespace)
sock_of() { echo "$WORK/n$1/run/isergw/isergwd.sock"; }
declare -A NODE_PID

#
# Set-up
#

net_setup() {
	local n
	for n in "${NODES[@]}"; do
		ip link add "hv$n" type veth peer name "gv$n" || return 1
	done
	# let udev finish with the new devices before anything takes their MACs
	udevadm settle --timeout=30
	for n in "${NODES[@]}"; do
		ip addr add "10.10.$n.1/24" dev "hv$n" && ip link set "hv$n" up &&
			ip addr add "$(addr_of "$n")/24" dev "gv$n" && ip link set "gv$n" up &&
			rdma link add "rxh$n" type rxe netdev "hv$n" &&
			rdma link add "rxg$n" type rxe netdev "gv$n" || return 1
	done
	vm_log "veth pairs and rxe devices: $(rdma link show | awk '{ printf "%s ", $2 }')"
}

# node_config N: the node's configuration file.
node_config() {
	local n=$1
	cat <<EOF
{
  "state_dir": "$WORK/n$n/state",
  "alua_policy": "external",
  "shared_state_dir": "$WORK/shared",
  "log_level": "info",
  "portals": [ { "url": "iser://$(addr_of "$n"):3260", "rel_port_id": $n, "tpg_id": $n } ],
  "port_groups": [ { "tpg_id": 1, "rel_port_ids": [ 1 ] }, { "tpg_id": 2, "rel_port_ids": [ 2 ] } ],
  "device_groups": [ { "name": "dg0", "owner_tpg_id": 1 } ],
  "targets": [ { "iqn": "$IQN", "luns": [ { "lun": 0, "path": "$DISK", "device_group": "dg0" } ] } ]
}
EOF
}

# node_start N: isergwd in a mount namespace of its own (a private /run).
node_start() {
	local n=$1 dir=$WORK/n$1 logf=$VM_OUT/node$1.log
	mkdir -p "$dir/state" "$dir/run" "$WORK/shared"
	node_config "$n" >"$dir/config.json"
	# the control socket lives in the node's own /run
	sed -i "s|\"log_level\"|\"ctl_socket\": \"/run/isergw/isergwd.sock\", \"log_level\"|" \
		"$dir/config.json"
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare -m bash -c 'mount --bind "$1" /run && exec "$2" -c "$3"' _ \
		"$dir/run" "$DAEMON" "$dir/config.json" >>"$logf" 2>&1 &
	NODE_PID[$n]=$!
	_vm_track "${NODE_PID[$n]}" isergw
	if ! _vm_wait_portal "${NODE_PID[$n]}" "iser://$(addr_of "$n"):3260" "$logf" ||
		! vm_wait_for 20 test -S "$(sock_of "$n")"; then
		vm_log "node $n did not come up; last lines of $logf:"
		tail -n 15 "$logf" >&2
		return 1
	fi
	vm_log "node $n: isergwd pid ${NODE_PID[$n]} on iser://$(addr_of "$n"):3260"
}

node_stop() {
	VM_ISERGWD_LOG=$VM_OUT/node$1.log vm_isergwd_stop "${NODE_PID[$1]}"
}

ctl() { # ctl N ARGS...
	local n=$1
	shift
	"$CTL" --socket "$(sock_of "$n")" "$@"
}

# port_io N: bytes the node's target port has read and written for commands
# that completed GOOD (refused commands count nothing).
port_io() {
	ctl "$1" --json counters --ports |
		python3 -c 'import json,sys
d = json.load(sys.stdin)
print(sum(p["stats"]["bytes_read"] + p["stats"]["bytes_written"] for p in d["ports"]))'
}

#
# multipath
#

MP_CONF='defaults {
	find_multipaths no
	user_friendly_names no
	polling_interval 1
	max_polling_interval 2
}
devices {
	device {
		vendor "ISERGW"
		product ".*"
		path_grouping_policy group_by_prio
		prio alua
		hardware_handler "1 alua"
		path_checker tur
		failback immediate
		no_path_retry 30
	}
}'

MAP=
mp_find_map() {
	MAP=$(multipathd show maps raw format "%n" 2>/dev/null | head -n 1)
	[ -n "$MAP" ] && [ -b "/dev/mapper/$MAP" ]
}

# mp_active_dev: the block device (sdX) of the path group multipath uses.
mp_active_dev() {
	multipath -ll "$MAP" 2>/dev/null | awk '
		/status=active/ { act = 1; next }
		/status=/ { act = 0 }
		act && match($0, /sd[a-z]+/) { print substr($0, RSTART, RLENGTH); exit }'
}

# mp_groups: "PRIO:STATUS:DEV ..." per path group, e.g. "50:active:sda 10:enabled:sdb".
mp_groups() {
	multipath -ll "$MAP" 2>/dev/null | awk '
		/prio=/ { match($0, /prio=[0-9]+/); p = substr($0, RSTART + 5, RLENGTH - 5)
			  match($0, /status=[a-z]+/); s = substr($0, RSTART + 7, RLENGTH - 7); next }
		p != "" && match($0, /sd[a-z]+/) { printf "%s:%s:%s ", p, s, substr($0, RSTART, RLENGTH); p = "" }'
}

# ---------------------------------------------------------------------------

declare -A DEV_OF # node -> sdX
failed=0
fail() { vm_log "FAILED: $*"; failed=$((failed + 1)); }

mkdir -p "$WORK" && vm_mkfile "$DISK" "$SIZE" || vm_die "cannot create $DISK"
# udev first: its "add" processing gives veth devices new MAC addresses
# (MACAddressPolicy), which changes the RoCE GIDs under live RDMA connections
vm_multipath_start "$MP_CONF" || vm_die "multipathd"
net_setup || vm_die "network set-up failed"
for n in "${NODES[@]}"; do node_start "$n" || vm_die "node $n"; done
for n in "${NODES[@]}"; do
	vm_iscsi_login "$IQN" "$(addr_of "$n"):3260" iser || vm_die "login to node $n"
	[ "$(vm_iscsi_driver_of "$VM_SESSION")" = iscsi_iser ] || vm_die "node $n: not logged in over iSER"
	DEV_OF[$n]=${VM_DEV#/dev/}
done
vm_wait_for 60 mp_find_map || vm_die "no multipath map appeared"
# both paths grouped by priority: node 1 active (AO, prio 50, or 130 with
# the owner's PREF bit), node 2 enabled (ANO, prio 10)
mp_initial() { [[ "$(mp_groups)" =~ ^[0-9]+:active:${DEV_OF[1]}\ 10:enabled:${DEV_OF[2]}\ $ ]]; }
want="AO:active:${DEV_OF[1]} ANO:enabled:${DEV_OF[2]}"
if ! vm_wait_for 30 mp_initial; then
	multipath -ll "$MAP" >&2
	vm_die "path groups are '$(mp_groups)', expected '$want'"
fi
multipath -ll "$MAP" >&2
vm_log "map $MAP: $(mp_groups)"

# fio writes and verifies without pause while ownership moves.
FIO_STOP=$WORK/fio.stop
fio_loop() {
	local i=0
	while [ ! -e "$FIO_STOP" ]; do
		i=$((i + 1))
		vm_fio "mp-$i" "/dev/mapper/$MAP" --rw=randwrite --bs=4k --size=32M --iodepth=16 \
			--verify=crc32c --do_verify=1 --verify_fatal=1 --randseed="$i" || return 1
	done
	vm_log "fio: $i rounds of write + verify, all clean"
}
fio_loop &
fio_pid=$!

# flip OWNER TRANSITION_MS [OLD_STATE]: make OWNER's group Active/Optimized
# and the other group OLD_STATE (default ano) on both nodes, then wait until
# the new path serves I/O and the old one has stopped.
flip() {
	local owner=$1 tms=$2 old_state=${3:-ano} other n t0 before settle d0 d1 spec
	other=$((3 - owner))
	spec="$owner=ao $other=$old_state"
	before=$(port_io "$owner")
	t0=$(vm_now)
	for n in "${NODES[@]}"; do
		# shellcheck disable=SC2086 # two words
		ctl "$n" alua set --dg dg0 --transition-ms "$tms" $spec >/dev/null ||
			{ fail "node $n refused 'alua set $spec'"; return 1; }
	done
	if ! vm_wait_for 60 _moved "$owner" "$before"; then
		fail "no I/O reached node $owner within 60 s of 'alua set $spec'"
		return 1
	fi
	settle=$(vm_since "$t0")
	# until multipathd has re-read both priorities the two paths may share
	# one group (both still allowed I/O); then the new path is alone in the
	# active group and the old one must be idle
	if ! vm_wait_for 60 _alone "${DEV_OF[$owner]}"; then
		fail "node $owner's path not alone in the active path group 60 s after the flip: $(mp_groups)"
		return 1
	fi
	alone=$(vm_since "$t0")
	sleep 1
	d0=$(port_io "$other")
	sleep 2
	d1=$(port_io "$other")
	vm_log "flip to node $owner ($spec, transition $tms ms): first I/O on the new path after ${settle} s, the new path alone in the active group after ${alone} s; old path moved $((d1 - d0)) bytes in the 2 s after; $(mp_groups)"
	SWITCH_TIMES+=("$spec: first I/O on the new path ${settle} s, old path out of the active group ${alone} s")
	[ "$((d1 - d0))" -eq 0 ] || fail "node $other still serves I/O after the flip"
}
_moved() { [ "$(port_io "$1")" -gt "$2" ]; }
# _alone DEV: DEV is the only usable path of the active path group (a path
# that failed, e.g. an Unavailable one, may stay listed there until
# multipathd regroups)
_alone() {
	multipath -ll "$MAP" 2>/dev/null | awk -v dev="$1" '
		/status=active/ { act = 1; next }
		/status=/ { act = 0 }
		act && / active ready / && match($0, /sd[a-z]+/) {
			n++; if (substr($0, RSTART, RLENGTH) != dev) other = 1 }
		END { exit !(n == 1 && !other) }'
}

SWITCH_TIMES=()
sleep 3 # fio under way
owner=1
for ((i = 1; i <= FLIPS; i++)); do
	owner=$((3 - owner))
	flip "$owner" 500
	sleep 3
done
# once to Unavailable: the old owner's group refuses I/O (04/0C)
owner=$((3 - owner))
flip "$owner" 0 unavailable
sleep 3
owner=$((3 - owner))
flip "$owner" 500

touch "$FIO_STOP"
if ! wait "$fio_pid"; then
	fail "fio reported errors or verify failures"
fi
multipath -ll "$MAP" >&2

vm_log "switch times (control request -> first I/O on the new path):"
for t in "${SWITCH_TIMES[@]}"; do vm_log "  $t"; done

vm_multipath_stop
for n in "${NODES[@]}"; do vm_iscsi_logout "$IQN" "$(addr_of "$n"):3260" || fail "logout from node $n"; done
for n in "${NODES[@]}"; do node_stop "$n" || fail "node $n did not stop cleanly"; done
if [ "$failed" -ne 0 ]; then
	vm_log "multipath-alua: $failed failure(s)"
	exit 1
fi
vm_log "multipath-alua: passed"
