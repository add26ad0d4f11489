#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# iSER against iSCSI/TCP for tgt, LIO (the kernel's target, isert) and isergwd,
# in one boot of the VM test bed (tests/vm/run-vm.sh: TCG, Soft-RoCE). Not a
# ctest test: numbers, no assertions.
#
#   tests/bench/iser_vm.sh [--daemon PATH/isergwd] [--baseline PATH/isergwd]
#                          [--seconds N] [--size SIZE] [--only tgt,lio,isergw]
#                          [--work DIR]
#
# Each target serves the same random-filled file (guest tmpfs, default 256M)
# on 10.0.2.15:3260 over TCP and iSER at once, and is measured in turn:
#   rand4k  4 KiB random read, QD32: iscsi-perf -r -b 8 -m 32 (libiscsi,
#           iscsi:// or iser://)
#   seq1m   1 MiB sequential read, QD8: the kernel initiator (ib_iser or
#           iscsi_tcp) + fio --rw=read --bs=1M --iodepth=8 --direct=1
#           (libiscsi's iSER initiator aborts with -b 2048)
# and prints a table with the iSER/TCP ratio per target and isergwd's ratio to
# tgt and LIO per transport. A target that cannot run is skipped with a
# message: LIO without its modules, isergwd without --daemon or while its iSER
# transport is not available (then only its TCP numbers are taken).
# --baseline measures a second isergwd build (another commit) the same way in
# the same boot, as "base", and prints isergw/base: before and after a change.
# Everything is emulated: compare ratios from one run, not absolute numbers.
# Logs: build/tests/vm/runs/bench-iser-vm/ (or --work DIR/runs/...).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

SECS=15
SIZE=256M
ONLY=tgt,lio,isergw
DAEMON=
BASELINE=
WORK=
GUEST=0
while [ $# -gt 0 ]; do
	case "$1" in
	--daemon) DAEMON=$(realpath -e "$2") || exit 2; shift 2 ;;
	--baseline) BASELINE=$(realpath -e "$2") || exit 2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--work) WORK=$2; shift 2 ;;
	--guest) GUEST=1; shift ;;
	-h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2' "$0"; exit 0 ;;
	*) echo "iser_vm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ "$SECS" =~ ^[0-9]+$ ]] || { echo "iser_vm.sh: bad --seconds" >&2; exit 2; }

if [ "$GUEST" -eq 0 ]; then
	# Host: boot the VM and run this script inside it.
	n=$(tr ',' '\n' <<<"$ONLY" | grep -c .)
	[ -z "$BASELINE" ] || n=$((n + 1))
	timeout=$((240 + n * 2 * (2 * SECS + 90)))
	args=(--name bench-iser-vm --timeout "$timeout")
	[ -n "$WORK" ] && args+=(--work "$WORK")
	exec "$here/../vm/run-vm.sh" "${args[@]}" "$here/iser_vm.sh" --guest \
		--seconds "$SECS" --size "$SIZE" --only "$ONLY" ${DAEMON:+--daemon "$DAEMON"} \
		${BASELINE:+--baseline "$BASELINE"}
fi

# Guest from here on.
# shellcheck source=tests/vm/guest-lib.sh
. "$here/../vm/guest-lib.sh"

IQN=iqn.2026-11.org.isergw:bench
DISK=/tmp/bench.img
PORT=3260
declare -A RES NOTE

vm_log "filling $DISK ($SIZE from /dev/urandom)"
head -c "$(vm_bytes "$SIZE")" /dev/urandom >"$DISK" || vm_die "cannot create $DISK"

# measure KIND TRANSPORT IQN LUN: fills RES[KIND.TRANSPORT.rand4k|seq1m].
measure() {
	local key=$1.$2 tr=$2 iqn=$3 lun=$4 scheme=iscsi res
	[ "$tr" = iser ] && scheme=iser
	local url=$scheme://$VM_ADDR:$PORT/$iqn/$lun
	vm_log "$key: iscsi-perf 4 KiB random read QD32, $SECS s ($url)"
	vm_iscsi_perf "$key-warm" "$url" 3 -b 8 -m 32 >/dev/null
	res=$(vm_iscsi_perf "$key-rand4k" "$url" "$SECS" -r -b 8 -m 32)
	if [ -n "$res" ]; then
		RES[$key.rand4k]=${res%% *}
	else
		RES[$key.rand4k]=fail
		vm_log "$key: iscsi-perf gave no result; see $VM_OUT/perf-$key-rand4k.txt:"
		tail -n 5 "$VM_OUT/perf-$key-rand4k.txt" >&2
	fi
	vm_log "$key: kernel initiator + fio 1 MiB sequential read QD8, $SECS s"
	RES[$key.seq1m]=fail
	if vm_iscsi_login "$iqn" "$VM_ADDR:$PORT" "$tr" "$lun"; then
		if vm_fio "$key-seq1m" "$VM_DEV" --rw=read --bs=1M --iodepth=8 --runtime="$SECS" \
			--time_based --ramp_time=2; then
			RES[$key.seq1m]=$(awk -F';' 'NF > 50 && $1 == 3 { printf "%.1f", $7 / 1024 }' \
				"$VM_OUT/fio-$key-seq1m.txt")
		fi
		vm_iscsi_logout "$iqn" "$VM_ADDR:$PORT"
	fi
}

run_tgt() {
	vm_tgtd_start 7 --iscsi "portal=$VM_ADDR:$PORT" || return 1
	vm_tgt_target iser 1 "$IQN-iser" "$DISK" && vm_tgt_target iscsi 2 "$IQN-tcp" "$DISK" &&
		measure tgt iser "$IQN-iser" 1 && measure tgt tcp "$IQN-tcp" 1
	vm_tgtd_stop "$VM_TGTD_PID"
}

run_lio() {
	if ! vm_lio_start "$IQN" "$DISK" "$VM_ADDR" "$PORT"; then
		NOTE[lio]="skipped: LIO could not be configured (modules target_core_mod, iscsi_target_mod, ib_isert)"
		return 1
	fi
	measure lio iser "$IQN" 0
	measure lio tcp "$IQN" 0
	vm_lio_stop
}

# run_isergw [KIND DAEMON]: isergw (--daemon) or base (--baseline)
run_isergw() {
	local kind=${1:-isergw} daemon=${2:-$DAEMON}
	if [ -z "$daemon" ]; then
		NOTE[$kind]="skipped: no --daemon PATH/isergwd"
		return 1
	fi
	local size
	size=$(stat -c %s "$DISK")
	if vm_isergwd_start "$daemon" "$IQN" "$DISK" "$size" "iser://$VM_ADDR:$PORT" "tcp://$VM_ADDR:$PORT" \
		-- --log-level notice; then
		measure "$kind" iser "$IQN" 0
	else
		vm_isergwd_stop "$VM_ISERGWD_PID" 2>/dev/null
		if grep -q 'transport not available' "$VM_ISERGWD_LOG"; then
			NOTE[$kind]="iSER skipped: isergwd says its iSER transport is not available in this build"
		else
			NOTE[$kind]="iSER skipped: isergwd did not start with an iser:// portal (see $VM_ISERGWD_LOG)"
		fi
		vm_log "${NOTE[$kind]}; measuring TCP only"
		vm_isergwd_start "$daemon" "$IQN" "$DISK" "$size" "tcp://$VM_ADDR:$PORT" -- --log-level notice ||
			return 1
	fi
	measure "$kind" tcp "$IQN" 0
	vm_isergwd_stop "$VM_ISERGWD_PID"
}

kinds=()
IFS=, read -r -a kinds <<<"$ONLY"
[ -z "$BASELINE" ] || kinds+=(base)
for k in "${kinds[@]}"; do
	case "$k" in
	tgt) vm_log "=== tgt"; run_tgt ;;
	lio) vm_log "=== lio"; run_lio ;;
	isergw) vm_log "=== isergw"; run_isergw ;;
	base) vm_log "=== base ($BASELINE)"; run_isergw base "$BASELINE" ;;
	*) vm_die "unknown target kind $k (tgt, lio, isergw)" ;;
	esac
done

# ratio A B: A/B with two decimals, "-" when either is not a number.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}
v() { echo "${RES[$1]:--}"; }

echo
echo "iSER vs TCP in the VM (TCG, Soft-RoCE; ${SECS} s per run, $SIZE file; absolute numbers mean little)"
printf '%-8s %-5s %16s %16s\n' target trans "4k rand IOPS" "1M seq MiB/s"
for k in "${kinds[@]}"; do
	for tr in iser tcp; do
		printf '%-8s %-5s %16s %16s\n' "$k" "$tr" "$(v "$k.$tr.rand4k")" "$(v "$k.$tr.seq1m")"
	done
done
echo
echo "ratios:"
for k in "${kinds[@]}"; do
	printf '  %-6s iSER/TCP:          4k %6s   1M %6s\n' "$k" \
		"$(ratio "$(v "$k.iser.rand4k")" "$(v "$k.tcp.rand4k")")" \
		"$(ratio "$(v "$k.iser.seq1m")" "$(v "$k.tcp.seq1m")")"
done
others=(tgt lio)
[ -z "$BASELINE" ] || others+=(base)
for other in "${others[@]}"; do
	for tr in iser tcp; do
		printf '  isergw/%-4s %-5s        4k %6s   1M %6s\n' "$other" "$tr" \
			"$(ratio "$(v "isergw.$tr.rand4k")" "$(v "$other.$tr.rand4k")")" \
			"$(ratio "$(v "isergw.$tr.seq1m")" "$(v "$other.$tr.seq1m")")"
	done
done
for k in "${kinds[@]}"; do
	[ -z "${NOTE[$k]:-}" ] || echo "note: $k: ${NOTE[$k]}"
done
echo "raw output: $VM_OUT/perf-*.txt, $VM_OUT/fio-*.txt"
exit 0
