#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# CPU per served command: tgtd and isergwd (one reactor), each under
# callgrind, serving the same file over iSCSI/TCP to the same client, which
# sends 4 KiB READ(10)s one at a time (QD1, sequential LBAs). Not a ctest
# test: numbers, no assertions.
#
#   tests/bench/served_cpu.sh --daemon PATH/isergwd [--base-daemon PATH]
#        [--reads N] [--warmup N] [--client PATH] [--addr A] [--port P]
#        [--scratch DIR]
#
# Each target serves SCRATCH/served-256m.img (made once from /dev/urandom,
# default SCRATCH /var/tmp/isergw-bench) on A:P, A:P+1, A:P+2 (default
# 127.0.0.201:14101; tgtd's disk is LUN 1, isergwd's LUN 0). The client
# (ctl_client --mode count, default next to the daemon's build) logs in,
# sends --warmup reads (default 500) and logs out; the profile is dumped
# (which zeroes it); a session with no read is counted (login, TEST UNIT
# READY, logout) and dumped; then a session with --reads reads (default
# 20000) is dumped. Instructions per command = (third - second) / N: the
# daemon's start-up, login and logout are not in it. Every thread of the
# daemon is counted. --base-daemon adds a second isergwd (e.g. the build of
# an earlier commit) to the same run. The last line:
#   served-cpu: tgtd X instr/cmd, isergwd Y instr/cmd, ratio R
# (with --base-daemon, a line for the base comes before it).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/../integration/lib.sh"

READS=20000
WARMUP=500
ADDR=127.0.0.201
PORT=14101
BASE=
CLIENT=
SCRATCH=${SCRATCH:-/var/tmp/isergw-bench}
lib_parse_common "$@"
# the options (each with a value) and the variable each sets
declare -A OPTS=([--reads]=READS [--warmup]=WARMUP [--base-daemon]=BASE [--client]=CLIENT
	[--addr]=ADDR [--port]=PORT)
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	if [ "$1" = -h ] || [ "$1" = --help ]; then
		awk 'NR > 2 { if (!/^#/) exit; print }' "$0"
		exit 0
	fi
	{ [ -n "${OPTS[$1]:-}" ] && [ $# -ge 2 ]; } || die "unknown option $1, or no value"
	printf -v "${OPTS[$1]}" '%s' "$2"
	shift 2
done
if ! command -v valgrind >/dev/null || ! command -v callgrind_control >/dev/null; then
	die "valgrind not found (apt-get install valgrind)"
fi
command -v tgtd >/dev/null || die "tgtd not found (apt-get install tgt)"
[ -z "$BASE" ] || [ -x "$BASE" ] || die "--base-daemon $BASE is not executable"
[ -n "$CLIENT" ] || CLIENT=$(dirname "$ISERGWD")/../tests/integration/ctl_client
[ -x "$CLIENT" ] || die "client $CLIENT not found (build the ctl_client target, or --client PATH)"
if [ "$READS" -lt 1 ] || [ $(((READS > WARMUP ? READS : WARMUP) * 4096)) -gt $((256 << 20)) ]; then
	die "--reads and --warmup: 1 to 65536 4 KiB blocks of the 256 MiB disk"
fi

IQN=iqn.2026-11.org.isergw:served-cpu
DISK=$SCRATCH/served-256m.img
if [ ! -f "$DISK" ] || [ "$(stat -c %s "$DISK")" -ne $((256 << 20)) ]; then
	log "creating $DISK (256 MiB from /dev/urandom)"
	head -c 256M /dev/urandom >"$DISK.tmp" && mv "$DISK.tmp" "$DISK" || die "cannot create $DISK"
fi

# client LUN READS: one session of READS sequential 4 KiB reads.
client() {
	timeout --kill-after=5 600 "$CLIENT" --url "iscsi://$ADDR:$CUR_PORT/$IQN/$1" \
		--initiator iqn.2026-11.org.isergw:served-cpu-client --mode count --reads "$2" \
		</dev/null >>"$SCRATCH/served-client.log" 2>&1 || die "client failed, see $SCRATCH/served-client.log"
}

# dump PID FILE N: the profile's Nth dump (counters zeroed after it); prints its total.
# A second first: the daemon finishes closing the client's session.
dump() {
	local i
	sleep 1
	callgrind_control -d "$1" >/dev/null 2>&1
	for ((i = 0; i < 600; i++)); do
		[ -s "$2.$3" ] && grep -q '^totals:' "$2.$3" && break
		sleep 0.1
	done
	sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$2.$3" | head -n 1
}

# measure NAME LUN: the daemon just started (D_PID, profile D_OUT); instructions per read in PER_CMD.
measure() {
	local name=$1 lun=$2 idle total
	client "$lun" "$WARMUP"
	dump "$D_PID" "$D_OUT" 1 >/dev/null
	client "$lun" 0
	idle=$(dump "$D_PID" "$D_OUT" 2)
	client "$lun" "$READS"
	total=$(dump "$D_PID" "$D_OUT" 3)
	[ -n "$idle" ] && [ -n "$total" ] || die "$name: no callgrind dump in $D_OUT.*"
	log "$name: session without reads $idle instructions, with $READS reads $total"
	PER_CMD=$(awk -v a="$total" -v b="$idle" -v n="$READS" 'BEGIN { printf "%d", (a - b) / n }')
}

# tgtd on CUR_PORT under callgrind, the disk as LUN 1.
TGT_LOG=$SCRATCH/served-tgtd.log
tadm() { tgtadm -C "$CUR_PORT" --lld iscsi "$@" >>"$TGT_LOG" 2>&1 || die "tgtadm $* failed"; }
tgt_run() {
	D_OUT=$SCRATCH/cg-served-tgtd.out
	rm -f "$D_OUT"*
	: >"$TGT_LOG"
	valgrind --tool=callgrind --callgrind-out-file="$D_OUT" tgtd -f -C "$CUR_PORT" \
		--iscsi "portal=$ADDR:$CUR_PORT" >>"$TGT_LOG" 2>&1 &
	D_PID=$!
	_LIB_DAEMONS+=("$D_PID tgt")
	wait_port "$D_PID" "$ADDR" "$CUR_PORT" 120 || die "tgtd did not start, see $TGT_LOG"
	tadm --mode target --op new --tid 1 -T "$IQN"
	tadm --mode logicalunit --op new --tid 1 --lun 1 -b "$DISK"
	tadm --mode target --op bind --tid 1 -I ALL
	measure tgtd 1
	target_kill9 "$D_PID"
}

# isergw_run NAME BINARY: isergwd on CUR_PORT under callgrind, one reactor, the disk as LUN 0.
isergw_run() {
	local name=$1 bin=$2 log=$SCRATCH/served-$1.log sd=$SCRATCH/served-$1-state
	D_OUT=$SCRATCH/cg-served-$name.out
	rm -f "$D_OUT"*
	: >"$log"
	mkdir -p "$sd"
	valgrind --tool=callgrind --callgrind-out-file="$D_OUT" "$bin" --portal "tcp://$ADDR:$CUR_PORT" --target "$IQN" --lun "$DISK" --reactors 1 \
		--state-dir "$sd" --ctl-socket "$sd/ctl.sock" --log-level notice >>"$log" 2>&1 &
	D_PID=$!
	_LIB_DAEMONS+=("$D_PID isergw")
	wait_port "$D_PID" "$ADDR" "$CUR_PORT" 120 || die "$name did not start, see $log"
	measure "$name" 0
	target_stop "$D_PID" "$log" >/dev/null || log "$name did not stop cleanly, see $log"
}

for p in "$PORT" $((PORT + 1)) $((PORT + 2)); do
	! port_open "$ADDR" "$p" || die "$ADDR:$p is already in use (--addr, --port choose others)"
done
: >"$SCRATCH/served-client.log"
CUR_PORT=$PORT
tgt_run
tpc=$PER_CMD
if [ -n "$BASE" ]; then
	CUR_PORT=$((PORT + 1))
	isergw_run isergwd-base "$BASE"
	bpc=$PER_CMD
fi
CUR_PORT=$((PORT + 2))
isergw_run isergwd "$ISERGWD"
gpc=$PER_CMD
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
[ -z "$BASE" ] ||
	printf 'served-cpu base: tgtd %s instr/cmd, isergwd-base %s instr/cmd, ratio %s (%s)\n' \
		"$tpc" "$bpc" "$(ratio "$bpc" "$tpc")" "$BASE"
printf 'served-cpu: tgtd %s instr/cmd, isergwd %s instr/cmd, ratio %s\n' "$tpc" "$gpc" "$(ratio "$gpc" "$tpc")"
