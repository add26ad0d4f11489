#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# iSER against iSCSI/TCP for tgt, LIO (the kernel's target, isert) and isergwd,
# in one boot of the VM test bed (tests/vm/run-vm.sh: TCG, Soft-RoCE). Not a
# ctest test: numbers, no assertions.
#
#   tests/bench/iser_vm.sh [--daemon PATH/isergwd] [--baseline PATH/isergwd]
#                          [--seconds N] [--size SIZE] [--only tgt,lio,isergw]
#                          [--mtu BYTES] [--work DIR]
#
# Each target serves the same random-filled file (guest tmpfs, default 256M)
# on 10.0.2.15:3260 over TCP and iSER at once, and is measured in turn:
#   rand4k  4 KiB random read, QD32: iscsi-perf -r -b 8 -m 32 (libiscsi,
#           iscsi:// or iser://)
#   seq1m   1 MiB sequential read, QD8: the kernel initiator (ib_iser or
#           iscsi_tcp) + fio --rw=read --bs=1M --iodepth=8 --direct=1
#           (libiscsi's iSER initiator aborts with -b 2048)
# and prints a table with the iSER/TCP ratio per target and isergwd's ratio to
# tgt and LIO per transport, and the CPU time each I/O cost: the whole guest's
# (initiator, Soft-RoCE and target together; /proc/stat) and the target
# process's own (tgtd, isergwd with its threads; LIO runs in kernel threads
# and workqueues that cannot be told apart, so none is given for it), and for
# the 4 KiB runs the initiator's (iscsi-perf, user + system time): with one
# vCPU's worth of it, the initiator is what limits the rate. A target that cannot run is skipped with a
# message: LIO without its modules, isergwd without --daemon or while its iSER
# transport is not available (then only its TCP numbers are taken).
# Before the targets, the bed's own ceiling: perftest's ib_write_bw (one RC
# QP, RDMA Writes between two processes on rxe0, as a target's Data-In moves)
# with 4 KiB and 1 MiB messages (skipped without perftest installed): no
# target moves data over iSER faster than rxe does with nothing else running.
# (Debian 12's rxe runs all of one QP's work on the CPU that posted it.)
# --baseline measures a second isergwd build (another commit) the same way in
# the same boot, as "base", and prints isergw/base: before and after a change.
# --mtu sets eth0's MTU in the guest first (rxe derives its RoCE path MTU from
# it: 1500 gives 1024-byte RDMA packets, 4200 or more gives 4096, as RoCE
# fabrics run with jumbo frames); the default leaves 1500.
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
MTU=
while [ $# -gt 0 ]; do
	case "$1" in
	--daemon) DAEMON=$(realpath -e "$2") || exit 2; shift 2 ;;
	--baseline) BASELINE=$(realpath -e "$2") || exit 2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--work) WORK=$2; shift 2 ;;
	--mtu) MTU=$2; shift 2 ;;
	--guest) GUEST=1; shift ;;
	-h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2' "$0"; exit 0 ;;
	*) echo "iser_vm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ "$SECS" =~ ^[0-9]+$ ]] || { echo "iser_vm.sh: bad --seconds" >&2; exit 2; }
[[ -z "$MTU" || "$MTU" =~ ^[0-9]+$ ]] || { echo "iser_vm.sh: bad --mtu" >&2; exit 2; }

if [ "$GUEST" -eq 0 ]; then
	# Host: boot the VM and run this script inside it.
	n=$(tr ',' '\n' <<<"$ONLY" | grep -c .)
	[ -z "$BASELINE" ] || n=$((n + 1))
	timeout=$((240 + n * 2 * (2 * SECS + 90)))
	args=(--name bench-iser-vm --timeout "$timeout")
	[ -n "$WORK" ] && args+=(--work "$WORK")
	exec "$here/../vm/run-vm.sh" "${args[@]}" "$here/iser_vm.sh" --guest \
		--seconds "$SECS" --size "$SIZE" --only "$ONLY" ${DAEMON:+--daemon "$DAEMON"} \
		${BASELINE:+--baseline "$BASELINE"} ${MTU:+--mtu "$MTU"}
fi

# Guest from here on.
# shellcheck source=tests/vm/guest-lib.sh
. "$here/../vm/guest-lib.sh"

IQN=iqn.2026-11.org.isergw:bench
DISK=/tmp/bench.img
PORT=3260
declare -A RES NOTE CPU CEIL INIT

if [ -n "$MTU" ]; then
	ip link set dev eth0 mtu "$MTU" || vm_die "cannot set eth0's MTU to $MTU"
	sleep 1
fi
ROCE_MTU=$(ibv_devinfo -d rxe0 2>/dev/null | awk '/active_mtu/ { print $2; exit }')
vm_log "eth0 MTU $(cat /sys/class/net/eth0/mtu), rxe0 active_mtu ${ROCE_MTU:-unknown}"

# rdma_ceiling SIZE: ib_write_bw's "MiB/s Mpps" for SIZE-byte RDMA Writes
# on one QP over rxe0 (empty when it cannot run).
rdma_ceiling() {
	local size=$1 srv out secs=$((SECS < 10 ? 10 : SECS))
	command -v ib_write_bw >/dev/null || return 0
	# (its duration mode measures after a warm-up: shorter runs mislead)
	ib_write_bw -d rxe0 -R -F -s "$size" -D "$secs" >"$VM_OUT/ib_write_bw-$size-server.txt" 2>&1 &
	srv=$!
	sleep 2
	out=$VM_OUT/ib_write_bw-$size.txt
	timeout --kill-after=5 $((secs + 60)) ib_write_bw -d rxe0 -R -F -s "$size" -D "$secs" "$VM_ADDR" \
		>"$out" 2>&1 </dev/null
	wait "$srv"
	# "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]", MB = 2^20
	awk -v s="$size" '$1 == s && NF >= 5 { printf "%s %s\n", $4, $5; exit }' "$out"
}

if command -v ib_write_bw >/dev/null; then
	for sz in 4096 1048576; do
		vm_log "rxe ceiling: ib_write_bw, $sz-byte RDMA Writes, one QP"
		CEIL[$sz]=$(rdma_ceiling "$sz")
		[ -n "${CEIL[$sz]}" ] || vm_log "ib_write_bw gave no result; see $VM_OUT/ib_write_bw-$sz.txt"
	done
else
	vm_log "perftest's ib_write_bw is not installed: no rxe ceiling"
fi

vm_log "filling $DISK ($SIZE from /dev/urandom)"
head -c "$(vm_bytes "$SIZE")" /dev/urandom >"$DISK" || vm_die "cannot create $DISK"

# cpu_snap [PID]: "WALL_NS GUEST_BUSY_TICKS PID_USER_TICKS PID_SYS_TICKS"
# (PID's times summed over its threads; 0 without a PID).
cpu_snap() {
	local pid=${1:-} busy proc="0 0"
	busy=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8; exit }' /proc/stat)
	if [ -n "$pid" ] && [ -r "/proc/$pid/stat" ]; then
		proc=$(awk '{ sub(/^.*\) /, ""); print $12, $13 }' "/proc/$pid/stat")
	fi
	echo "$(date +%s%N) $busy $proc"
}

# cpu_per_io BEFORE AFTER RATE HAVE_PID: "GUEST_US TARGET_US USER_US SYS_US",
# CPU microseconds per I/O at RATE I/Os per second over the interval ("-"
# when unknown).
cpu_per_io() {
	awk -v b="$1" -v a="$2" -v r="$3" -v havepid="$4" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		split(b, x, " "); split(a, y, " ")
		secs = (y[1] - x[1]) / 1e9
		if (r !~ /^[0-9.]+$/ || r + 0 == 0 || secs <= 0) { print "- - - -"; exit }
		f = 1e6 / hz / (r * secs)
		if (havepid)
			printf "%.0f %.0f %.0f %.0f\n", (y[2] - x[2]) * f, (y[3] + y[4] - x[3] - x[4]) * f,
				(y[3] - x[3]) * f, (y[4] - x[4]) * f
		else
			printf "%.0f - - -\n", (y[2] - x[2]) * f
	}'
}

# measure KIND TRANSPORT IQN LUN [PID]: fills RES[KIND.TRANSPORT.rand4k|seq1m]
# and CPU[...] ("GUEST_US TARGET_US USER_US SYS_US" per I/O), INIT[...rand4k]
# (iscsi-perf's CPU per I/O); PID is the target process.
measure() {
	local key=$1.$2 tr=$2 iqn=$3 lun=$4 pid=${5:-} scheme=iscsi res c0 c1 snap
	[ "$tr" = iser ] && scheme=iser
	local url=$scheme://$VM_ADDR:$PORT/$iqn/$lun
	vm_log "$key: iscsi-perf 4 KiB random read QD32, $SECS s ($url)"
	vm_iscsi_perf "$key-warm" "$url" 3 -b 8 -m 32 >/dev/null
	c0=$(cpu_snap "$pid")
	# bash's time: iscsi-perf's own user + system time (through timeout)
	res=$( { TIMEFORMAT='%R %U %S'; time vm_iscsi_perf "$key-rand4k" "$url" "$SECS" \
		-r -b 8 -m 32 2>/dev/null; } 2>"$VM_OUT/time-$key-rand4k.txt")
	c1=$(cpu_snap "$pid")
	if [ -n "$res" ]; then
		RES[$key.rand4k]=${res%% *}
		CPU[$key.rand4k]=$(cpu_per_io "$c0" "$c1" "${res%% *}" "${pid:+1}")
		INIT[$key.rand4k]=$(awk -v r="${res%% *}" 'NF == 3 && $1 > 0 {
			printf "%.0f", ($2 + $3) * 1e6 / (r * $1) }' "$VM_OUT/time-$key-rand4k.txt")
	else
		RES[$key.rand4k]=fail
		vm_log "$key: iscsi-perf gave no result; see $VM_OUT/perf-$key-rand4k.txt:"
		tail -n 5 "$VM_OUT/perf-$key-rand4k.txt" >&2
	fi
	vm_log "$key: kernel initiator + fio 1 MiB sequential read QD8, $SECS s"
	RES[$key.seq1m]=fail
	if vm_iscsi_login "$iqn" "$VM_ADDR:$PORT" "$tr" "$lun"; then
		# the CPU interval leaves out fio's start and 2 s ramp
		(sleep 3; cpu_snap "$pid" >"$VM_OUT/cpu-$key-seq1m.0") &
		snap=$!
		if vm_fio "$key-seq1m" "$VM_DEV" --rw=read --bs=1M --iodepth=8 --runtime="$SECS" \
			--time_based --ramp_time=2; then
			c1=$(cpu_snap "$pid")
			wait "$snap"
			RES[$key.seq1m]=$(awk -F';' 'NF > 50 && $1 == 3 { printf "%.1f", $7 / 1024 }' \
				"$VM_OUT/fio-$key-seq1m.txt")
			CPU[$key.seq1m]=$(cpu_per_io "$(cat "$VM_OUT/cpu-$key-seq1m.0")" "$c1" \
				"${RES[$key.seq1m]}" "${pid:+1}")
		fi
		wait "$snap"
		vm_iscsi_logout "$iqn" "$VM_ADDR:$PORT"
	fi
}

run_tgt() {
	vm_tgtd_start 7 --iscsi "portal=$VM_ADDR:$PORT" || return 1
	vm_tgt_target iser 1 "$IQN-iser" "$DISK" && vm_tgt_target iscsi 2 "$IQN-tcp" "$DISK" &&
		measure tgt iser "$IQN-iser" 1 "$VM_TGTD_PID" && measure tgt tcp "$IQN-tcp" 1 "$VM_TGTD_PID"
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
		measure "$kind" iser "$IQN" 0 "$VM_ISERGWD_PID"
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
	measure "$kind" tcp "$IQN" 0 "$VM_ISERGWD_PID"
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
echo "eth0 MTU $(cat /sys/class/net/eth0/mtu), RoCE path MTU ${ROCE_MTU:-unknown}"
printf '%-8s %-5s %16s %16s\n' target trans "4k rand IOPS" "1M seq MiB/s"
for k in "${kinds[@]}"; do
	for tr in iser tcp; do
		printf '%-8s %-5s %16s %16s\n' "$k" "$tr" "$(v "$k.$tr.rand4k")" "$(v "$k.$tr.seq1m")"
	done
done
if [ -n "${CEIL[4096]:-}${CEIL[1048576]:-}" ]; then
	c4=${CEIL[4096]:-- -} c1=${CEIL[1048576]:-- -}
	printf '%-8s %-5s %16s %16s\n' "rxe raw" write \
		"$(awk -v m="${c4#* }" 'BEGIN { if (m ~ /^[0-9.]+$/) printf "%.0f", m * 1e6; else print "-" }')" \
		"${c1% *}"
	echo "(rxe raw: ib_write_bw, RDMA Writes alone on one QP, 4 KiB messages/s and 1 MiB MiB/s)"
fi
echo
echo "CPU microseconds per I/O: whole guest / target process (its user + system time);"
echo "the 4 KiB initiator's (iscsi-perf: user + system) in the middle column"
printf '%-8s %-5s %26s %6s %26s\n' target trans "4k rand" "init" "1M seq"
cpu() {
	local g t u s
	read -r g t u s <<<"${CPU[$1]:-- - - -}"
	if [ "$t" = - ]; then echo "$g / -"; else echo "$g / $t ($u + $s)"; fi
}
for k in "${kinds[@]}"; do
	for tr in iser tcp; do
		printf '%-8s %-5s %26s %6s %26s\n' "$k" "$tr" "$(cpu "$k.$tr.rand4k")" \
			"${INIT[$k.$tr.rand4k]:--}" "$(cpu "$k.$tr.seq1m")"
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
