#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# VM test bed smoke test (runs in the guest: tests/vm/run-vm.sh), against tgt's
# iSER target, the reference: proves Soft-RoCE, libiscsi's iSER initiator and
# the kernel's (ib_iser) work on this machine before our own iSER datamover is
# judged on the same bed.
#
#   run-vm.sh tests/vm/guest-tgt-iser-smoke.sh [--size 256M] [--fio-size 32M]
#
# tgtd serves a 256 MiB file (guest tmpfs) as LUN 1 of an iSER target; then
#   1. iscsi-inq iser://10.0.2.15/IQN/1     (libiscsi over iSER)
#   2. the kernel initiator logs in over iSER (the session must be iscsi_iser)
#   3. fio: 4 KiB random write + read verify (crc32c), direct I/O, 32 MiB
#   4. logout
# Passes only if all of it worked. Prints the time of each step.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$here/guest-lib.sh"

SIZE=256M
FIO_SIZE=32M
while [ $# -gt 0 ]; do
	case "$1" in
	--size) SIZE=$2; shift 2 ;;
	--fio-size) FIO_SIZE=$2; shift 2 ;;
	*) vm_die "unknown option $1" ;;
	esac
done

IQN=iqn.2026-11.org.isergw:vm-tgt-smoke
DISK=/tmp/tgt-smoke.img
results=()
failed=0
# step NAME CMD...: runs CMD, records "NAME ok|FAILED (T s)".
step() {
	local name=$1 t0 rc
	shift
	t0=$(vm_now)
	vm_log "--- $name"
	"$@"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		results+=("$(printf '%-28s ok      %6s s' "$name" "$(vm_since "$t0")")")
	else
		results+=("$(printf '%-28s FAILED  %6s s' "$name" "$(vm_since "$t0")")")
		failed=$((failed + 1))
	fi
	return "$rc"
}

start_target() {
	vm_mkfile "$DISK" "$SIZE" || return 1
	vm_tgtd_start 7 || return 1
	vm_tgt_target iser 1 "$IQN" "$DISK" || return 1
}

inq() {
	local out
	out=$(vm_iscsi_inq "iser://$VM_ADDR/$IQN/1" 2>&1)
	local rc=$?
	printf '%s\n' "$out" | sed 's/^/  iscsi-inq: /' >&2
	[ "$rc" -eq 0 ] || { vm_log "iscsi-inq exited $rc"; return 1; }
	grep -qi 'Peripheral Device Type' <<<"$out" || { vm_log "no INQUIRY data"; return 1; }
}

login() {
	vm_iscsi_login "$IQN" "$VM_ADDR:3260" iser || return 1
	local drv
	drv=$(vm_iscsi_driver_of "$VM_SESSION")
	[ "$drv" = iscsi_iser ] || { vm_log "session $VM_SESSION runs on '$drv', not iscsi_iser"; return 1; }
	vm_log "session $VM_SESSION on $drv, disk $VM_DEV ($(blockdev --getsize64 "$VM_DEV") bytes)"
}

t_all=$(vm_now)
ibv_devices >&2
if step "tgtd iSER target" start_target; then
	step "iscsi-inq iser://" inq
	if step "kernel iSER login" login; then
		step "fio 4k randwrite+verify" vm_fio_verify smoke-4k "$VM_DEV" randwrite 4k "$FIO_SIZE" 16
		step "kernel logout" vm_iscsi_logout "$IQN" "$VM_ADDR:3260"
	fi
fi
vm_tgtd_stop "$VM_TGTD_PID"

echo "tgt-iser-smoke results:"
printf '  %s\n' "${results[@]}"
total=${#results[@]}
echo "tgt-iser-smoke: $((total - failed)) passed, $failed failed ($(vm_since "$t_all") s in the guest)"
[ "$failed" -eq 0 ] && [ "$total" -eq 5 ]
