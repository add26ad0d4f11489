#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# isergwd's iSER transport on the VM test bed (runs in the guest:
# tests/vm/run-vm.sh; ctest vm.isergw-iser).
#
#   run-vm.sh tests/vm/guest-isergw-iser.sh --daemon PATH/isergwd
#             [--target-kind isergw|tgt] [--size 256M] [--skip PHASES]
#
# Phases (--skip takes a comma list of their names; libiscsi's conformance
# suite over iSER is tests/vm/guest-iser-conformance.sh):
#   kernel       the kernel initiator (ib_iser): fio write+verify (crc32c),
#                4 KiB random and 1 MiB sequential, direct I/O; mkfs.ext4, a
#                file tree copied in, fsck -f; logout, login: the files are
#                still there and fsck is still clean
#   cross        the same LUN on tcp:// and iser:// at once (one daemon, two
#                portals): written through one and verified through the
#                other, both ways
#   remove       (isergwd only) the RDMA device under a loaded iSER session
#                is deleted (rdma link delete rxe0): the deletion completes
#                (isergwd releases everything it holds on the device), the
#                daemon lives, a TCP session writing and verifying meanwhile
#                sees no error; rxe0 added again: the portal listens again
#                by itself, a new iSER login writes and verifies. A second
#                rxe device (on a veth) stays meanwhile: librdmacm keeps its
#                own context on the last device open (docs/iser.md)
# The target must not fail a test, crash, or (isergwd) stop other than with
# exit status 0 on SIGTERM. Ends with "isergw-iser: N passed, M failed".
# --target-kind tgt runs the same against tgt (two targets on one file for
# "cross", since a tgt target has one transport) to check this script.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$here/guest-lib.sh"

KIND=${ISERGW_TARGET_KIND:-isergw}
DAEMON=
SIZE=256M
SKIP=,
while [ $# -gt 0 ]; do
	case "$1" in
	--target-kind) KIND=$2; shift 2 ;;
	--daemon) DAEMON=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--skip) SKIP=,$2,; shift 2 ;;
	-h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2' "$0"; exit 0 ;;
	*) vm_die "unknown option $1" ;;
	esac
done
case "$KIND" in
isergw) [ -x "$DAEMON" ] || vm_die "--daemon PATH (the isergwd binary) is required" ;;
tgt) ;;
*) vm_die "unknown --target-kind $KIND" ;;
esac

IQN=iqn.2026-11.org.isergw:vm-iser
IQN_TCP=$IQN # tgt: a second target, see start_target
DISK=/tmp/isergw-iser.img
PORT=3260
# TCP portal of the "cross" phase: another port for isergwd, since open-iscsi
# keys its node records by target and portal (one transport per record)
PORT_TCP=3261
LUN=0
[ "$KIND" = tgt ] && LUN=1 && IQN_TCP=$IQN-tcp && PORT_TCP=$PORT

results=()
failed=0
record() { # record NAME RC T0
	local verdict=ok
	[ "$2" -eq 0 ] || { verdict=FAILED; failed=$((failed + 1)); }
	results+=("$(printf '%-40s %-7s %7s s' "$1" "$verdict" "$(vm_since "$3")")")
}
# step NAME CMD...
step() {
	local name=$1 t0 rc
	shift
	t0=$(vm_now)
	vm_log "--- $name"
	"$@"
	rc=$?
	record "$name" "$rc" "$t0"
	return "$rc"
}
skipped() { [[ "$SKIP" == *",$1,"* ]]; }

TPID=
# start_target PORTAL-SCHEMES...: iser and/or tcp ($VM_ADDR:$PORT, TCP on $PORT_TCP).
start_target() {
	local s portals=()
	[ -e "$DISK" ] || vm_mkfile "$DISK" "$SIZE" || return 1
	if [ "$KIND" = isergw ]; then
		for s in "$@"; do
			case "$s" in
			tcp) portals+=("tcp://$VM_ADDR:$PORT_TCP") ;;
			*) portals+=("$s://$VM_ADDR:$PORT") ;;
			esac
		done
		vm_isergwd_start "$DAEMON" "$IQN" "$DISK" "$SIZE" "${portals[@]}" || return 1
		TPID=$VM_ISERGWD_PID
	else
		vm_tgtd_start 7 --iscsi "portal=$VM_ADDR:$PORT" || return 1
		TPID=$VM_TGTD_PID
		for s in "$@"; do
			case "$s" in
			iser) vm_tgt_target iser 1 "$IQN" "$DISK" || return 1 ;;
			tcp) vm_tgt_target iscsi 2 "$IQN_TCP" "$DISK" || return 1 ;;
			esac
		done
	fi
}
target_alive() { kill -0 "$TPID" 2>/dev/null; }
stop_target() {
	if [ "$KIND" = isergw ]; then
		vm_isergwd_stop "$TPID"
	else
		vm_tgtd_stop "$TPID"
	fi
}

#
# kernel initiator over iSER
#
login_iser() {
	vm_iscsi_login "$IQN" "$VM_ADDR:$PORT" iser "$LUN" || return 1
	local drv
	drv=$(vm_iscsi_driver_of "$VM_SESSION")
	[ "$drv" = iscsi_iser ] || { vm_log "session $VM_SESSION runs on '$drv', not iscsi_iser"; return 1; }
}
logout_iser() { vm_iscsi_logout "$IQN" "$VM_ADDR:$PORT"; }

MNT=/tmp/isergw-mnt
TREE=/tmp/isergw-tree
make_tree() {
	rm -rf "$TREE" && mkdir -p "$TREE" || return 1
	head -c 24M /dev/urandom >"$TREE/random-24m.bin" || return 1
	cp -a /usr/share/doc/bash /usr/share/doc/fio /usr/include/linux "$TREE/" 2>/dev/null
	(cd "$TREE" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >/tmp/isergw-tree.sha256
	vm_log "file tree: $(wc -l </tmp/isergw-tree.sha256) files, $(du -sh "$TREE" | cut -f1)"
}
fs_fill() {
	modprobe ext4 || return 1
	mkfs.ext4 -q -F "$VM_DEV" || return 1
	mkdir -p "$MNT" && mount -t ext4 "$VM_DEV" "$MNT" || return 1
	if ! cp -a "$TREE/." "$MNT/" || ! sync; then
		umount "$MNT"
		return 1
	fi
	umount "$MNT" || return 1
	fsck.ext4 -f -n "$VM_DEV" >&2
}
fs_prepare() { make_tree && fs_fill; }
fs_check() {
	fsck.ext4 -f -n "$VM_DEV" >&2 || return 1
	mount -t ext4 -o ro "$VM_DEV" "$MNT" || return 1
	(cd "$MNT" && sha256sum --quiet -c /tmp/isergw-tree.sha256) >&2
	local rc=$?
	umount "$MNT"
	return "$rc"
}

#
# the same LUN over TCP and iSER at once
#
cross() {
	local dev_iser dev_tcp drv args
	vm_iscsi_login "$IQN" "$VM_ADDR:$PORT" iser "$LUN" || return 1
	dev_iser=$VM_DEV
	drv=$(vm_iscsi_driver_of "$VM_SESSION")
	[ "$drv" = iscsi_iser ] || { vm_log "iSER session runs on '$drv'"; return 1; }
	vm_iscsi_login "$IQN_TCP" "$VM_ADDR:$PORT_TCP" tcp "$LUN" || return 1
	dev_tcp=$VM_DEV
	drv=$(vm_iscsi_driver_of "$VM_SESSION")
	[ "$drv" = iscsi_tcp ] || { vm_log "TCP session runs on '$drv'"; return 1; }
	vm_log "iSER: $dev_iser, TCP: $dev_tcp (same LUN)"
	# write with one, verify_only the same job (same seed, offsets) with the other
	args=(--rw=randwrite --bs=16k --size=32M --iodepth=16 --verify=crc32c --randseed=4242)
	vm_fio cross-w-iser "$dev_iser" "${args[@]}" --offset=0 --do_verify=0 &&
		vm_fio cross-r-tcp "$dev_tcp" "${args[@]}" --offset=0 --verify_only=1 &&
		vm_fio cross-w-tcp "$dev_tcp" "${args[@]}" --offset=64M --do_verify=0 &&
		vm_fio cross-r-iser "$dev_iser" "${args[@]}" --offset=64M --verify_only=1 || return 1
	# 1 MiB reads over TCP: READs of 64 KiB and more take Data-In spliced from the
	# page cache (tcp_splice, isergwd's default), here to the kernel's iscsi_tcp
	args=(--rw=write --bs=1M --size=32M --iodepth=4 --verify=crc32c --randseed=4343)
	vm_fio cross-w1m-iser "$dev_iser" "${args[@]}" --offset=128M --do_verify=0 &&
		vm_fio cross-r1m-tcp "$dev_tcp" "${args[@]}" --offset=128M --verify_only=1 || return 1
	vm_iscsi_logout "$IQN_TCP" "$VM_ADDR:$PORT_TCP" && vm_iscsi_logout "$IQN" "$VM_ADDR:$PORT"
}

#
# the RDMA device removed under a session, and added again
#
RMV_PID=
remove_setup() {
	# a second RDMA device, so that rxe0 is not the last (see the header)
	ip link add isergw-va type veth peer name isergw-vb &&
		ip link set isergw-va up && ip link set isergw-vb up &&
		rdma link add rxr1 type rxe netdev isergw-va || return 1
	vm_log "devices: $(rdma link show | awk '{ printf "%s ", $2 }')"
	vm_iscsi_login "$IQN" "$VM_ADDR:$PORT" iser "$LUN" || return 1
	RMV_ISER=$VM_DEV
	vm_iscsi_login "$IQN_TCP" "$VM_ADDR:$PORT_TCP" tcp "$LUN" || return 1
	RMV_TCP=$VM_DEV
	# load on the iSER path (it fails when the device goes: not checked),
	# away from the first 48 MiB that the TCP session verifies
	fio --name=rmv-load --filename="$RMV_ISER" --direct=1 --ioengine=libaio --rw=randrw \
		--bs=64k --iodepth=16 --offset=128M --size=64M --time_based --runtime=120 \
		>"$VM_OUT/fio-rmv-load.txt" 2>&1 </dev/null &
	RMV_PID=$!
	sleep 3
}
remove_device() {
	local t0 rc
	# the TCP session writes and verifies meanwhile
	vm_fio_verify rmv-tcp "$RMV_TCP" randwrite 16k 48M 16 &
	local vpid=$!
	sleep 1
	t0=$(vm_now)
	timeout --kill-after=5 60 rdma link delete rxe0
	rc=$?
	vm_log "rdma link delete rxe0: status $rc after $(vm_since "$t0") s"
	wait "$vpid" || { vm_log "the TCP session saw errors while rxe0 went away"; rc=1; }
	target_alive || { vm_log "isergwd died"; return 1; }
	grep -q 'RDMA device rxe0 removed' "$VM_ISERGWD_LOG" &&
		grep -q 'device rxe0: all resources released' "$VM_ISERGWD_LOG" ||
		{ vm_log "isergwd did not log the removal and the release"; rc=1; }
	return "$rc"
}
readd_device() {
	local n
	kill "$RMV_PID" 2>/dev/null
	wait "$RMV_PID" 2>/dev/null
	vm_iscsi_logout "$IQN" "$VM_ADDR:$PORT" || iscsiadm -m node -T "$IQN" -p "$VM_ADDR:$PORT" -o delete
	vm_iscsi_logout "$IQN_TCP" "$VM_ADDR:$PORT_TCP" || return 1
	n=$(grep -c "listening on iser://$VM_ADDR:$PORT" "$VM_ISERGWD_LOG")
	rdma link add rxe0 type rxe netdev eth0 || return 1
	vm_wait_for 30 _relistened "$n" || { vm_log "the iSER portal did not listen again"; return 1; }
	login_iser && vm_fio_verify rmv-again "$VM_DEV" randwrite 4k 16M 16 && logout_iser
}
_relistened() { [ "$(grep -c "listening on iser://$VM_ADDR:$PORT" "$VM_ISERGWD_LOG")" -gt "$1" ]; }
remove_cleanup() {
	rdma link delete rxr1 2>/dev/null
	ip link del isergw-va 2>/dev/null
	rdma link show | grep -q 'rxe0' || rdma link add rxe0 type rxe netdev eth0
	return 0
}

t_all=$(vm_now)
vm_log "target kind $KIND${DAEMON:+ ($DAEMON)}, disk $SIZE on guest tmpfs"

if step "target up (iser)" start_target iser; then
	if ! skipped kernel && target_alive; then
		if step "kernel iSER login" login_iser; then
			step "fio 4k randwrite+verify" vm_fio_verify k-rand4k "$VM_DEV" randwrite 4k 32M 32
			step "fio 1M seq write+verify" vm_fio_verify k-seq1m "$VM_DEV" write 1M 128M 8
			step "mkfs.ext4, copy tree, fsck" fs_prepare
			step "logout" logout_iser
			if step "login again" login_iser; then
				step "files intact, fsck clean" fs_check
				step "logout again" logout_iser
			fi
		fi
	fi
	if target_alive; then
		step "target clean stop" stop_target
	else
		record "target alive at the end" 1 "$(vm_now)"
	fi
fi
if ! skipped cross; then
	if step "target up (iser + tcp)" start_target iser tcp; then
		step "tcp <-> iser on one LUN" cross
		step "target clean stop (2)" stop_target
	fi
fi

if ! skipped remove && [ "$KIND" = isergw ]; then
	if step "target up (iser + tcp) (3)" start_target iser tcp; then
		if step "second rxe device, sessions, load" remove_setup; then
			step "rxe0 deleted under load" remove_device &&
				step "rxe0 back: listens, login, verify" readd_device
		fi
		if target_alive; then
			step "target clean stop (3)" stop_target
		else
			record "target alive after the removal" 1 "$(vm_now)"
		fi
	fi
	remove_cleanup
fi

echo "isergw-iser ($KIND) results:"
printf '  %s\n' "${results[@]}"
echo "isergw-iser: $((${#results[@]} - failed)) passed, $failed failed ($(vm_since "$t_all") s in the guest)"
[ "$failed" -eq 0 ]
