#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# isergwd against tgt over iSCSI/TCP on loopback, same file, same clients
# (libiscsi's iscsi-perf, and seq_read). Not a ctest test: numbers, no assertions.
#
#   tests/bench/tcp_vs_tgt.sh --daemon PATH/isergwd [--scratch DIR]
#                             [--seconds N] [--reactors N] [--only tgt|isergw]
#                             [--base-daemon PATH] [--rounds N] [--addr A] [--port P]
#                             [--seq-client PATH]
#
# One 1 GiB random-filled file (cached in SCRATCH, default /var/tmp/isergw-bench),
# served by tgtd on 127.0.0.1:3261 (LUN 1) and isergwd on 127.0.0.1:3262
# (LUN 0) (--addr, --port: tgtd's port; isergwd's is the next one, the
# --base-daemon's the one after, iperf3's the one after that). Each target
# is warmed with a short sequential read, then measured in turn:
#   rand4k  4 KiB random read, QD32     iscsi-perf -r -b 8 -m 32
#   seq1m   1 MiB sequential read, QD8  iscsi-perf -b 2048 -m 8
#   seqbuf  the same reads by seq_read (tests/bench/seq_read.c, built beside
#           isergwd as tests/integration/seq_read; --seq-client PATH), which
#           receives each command's data straight into a buffer of its own
# Prints IOPS and MiB/s per target and the isergwd/tgt ratio; then raw
# loopback TCP for the same seconds (iperf3 -l 1M, one stream, on the same
# address, once a round right after the targets' reads) and the 1 MiB reads
# of each target, by both clients, against its median.
# --base-daemon: another isergwd binary (the code before a change), up
# together with isergwd, each test run on one right after the other, with
# the isergwd/base ratios; --rounds N (default 1) repeats that N times, the
# order turned each round, and takes each one's median (the lower of
# the middle two for an even N).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/../integration/lib.sh"

SECS=20
ROUNDS=1
ONLY=
REACTORS=
BASE=
ADDR=127.0.0.1
PORT=3261
SEQ_CLIENT=
SCRATCH=${SCRATCH:-/var/tmp/isergw-bench}
lib_parse_common --target-kind tgt "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in -h | --help) ;; -*) [ $# -ge 2 ] || die "$1 wants a value" ;; esac
	case "$1" in
	--seconds) SECS=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--reactors) REACTORS=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--base-daemon) BASE=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--seq-client) SEQ_CLIENT=$2; shift 2 ;;
	-h|--help) awk 'NR > 2 { if (!/^#/) exit; print }' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
set -- --seconds "$SECS" --rounds "$ROUNDS" --port "$PORT" --reactors "${REACTORS:-1}"
while [ $# -gt 0 ]; do
	case "$2" in '' | *[!0-9]*) die "$1 wants a number, not '$2'" ;; esac
	shift 2
done
command -v iscsi-perf >/dev/null || die "iscsi-perf not found (apt-get install libiscsi-bin)"
if [ "$ONLY" != tgt ]; then
	[ -x "${ISERGWD:-/nonexistent}" ] || die "--daemon PATH (the isergwd binary) is required"
fi
[ -z "$BASE" ] || [ -x "$BASE" ] || die "--base-daemon $BASE is not an executable"
case "$ONLY" in '' | tgt | isergw) ;; *) die "--only wants tgt or isergw, not '$ONLY'" ;; esac
if [ -n "$SEQ_CLIENT" ]; then
	[ -x "$SEQ_CLIENT" ] || die "--seq-client $SEQ_CLIENT is not an executable"
elif [ -n "${ISERGWD:-}" ]; then
	SEQ_CLIENT=$(cd "$(dirname "$ISERGWD")/.." 2>/dev/null && pwd)/tests/integration/seq_read
fi
if [ ! -x "${SEQ_CLIENT:-/nonexistent}" ]; then
	log "no seqbuf figures: seq_read not built (target seq_read; --seq-client PATH)"
	SEQ_CLIENT=
fi

IQN=iqn.2026-11.org.isergw:bench
DISK=$SCRATCH/bench-1g.img
if [ ! -f "$DISK" ] || [ "$(stat -c %s "$DISK")" -ne $((1 << 30)) ]; then
	log "creating $DISK (1 GiB from /dev/urandom)"
	if ! head -c 1G /dev/urandom >"$DISK.tmp" || ! mv "$DISK.tmp" "$DISK"; then
		die "cannot create $DISK"
	fi
fi

# perf NAME URL ARGS...: runs iscsi-perf, prints "IOPS MBPS" (0 0 on failure).
perf() {
	local name=$1 url=$2
	shift 2
	local out=$SCRATCH/perf-$name.txt
	timeout --kill-after=5 $((SECS + 30)) iscsi-perf -i "iqn.2026-11.org.isergw:bench-client" \
		-t "$SECS" "$@" "$url" </dev/null >"$out" 2>&1
	# the progress lines end in \r; the final one is "iops average N (M MB/s)"
	local res
	res=$(tr '\r' '\n' <"$out" | sed -n 's/^iops average \([0-9]*\) (\([0-9]*\) MB\/s).*/\1 \2/p' | tail -n 1)
	if [ -z "$res" ]; then
		log "iscsi-perf $name produced no result; see $out"
		echo "0 0"
	else
		echo "$res"
	fi
}

# seqbuf NAME URL: seq_read's 1 MiB reads QD8, prints "IOPS MBPS" (0 0 on failure)
seqbuf() {
	local name=$1 url=$2 out=$SCRATCH/perf-$1.txt res
	timeout --kill-after=5 $((SECS + 30)) "$SEQ_CLIENT" --seconds "$SECS" --size 1048576 \
		--depth 8 --initiator "iqn.2026-11.org.isergw:bench-client" "$url" </dev/null >"$out" 2>&1
	# seq_read commands N bytes B seconds S MiB/s M cpu_ms_per_GiB C
	res=$(awk '$1 == "seq_read" && $7 > 0 { printf "%d %d\n", $3 / $7, $9 }' "$out")
	if [ -z "$res" ]; then
		log "seq_read $name produced no result; see $out"
		echo "0 0"
	else
		echo "$res"
	fi
}

declare -A R RS UP_PID UP_LOG UP_URL
# target_up NAME KIND PORT [ISERGWD-ARGS...]: starts and warms a target; NAME keys the results
target_up() {
	local name=$1 kind=$2 port=$3
	shift 3
	TARGET_KIND=$kind
	local extra=("$@")
	[ "$kind" = isergw ] && [ -n "$REACTORS" ] && extra+=(--reactors "$REACTORS")
	ISERGW_LOG_LEVEL=${ISERGW_LOG_LEVEL:-notice} target_start "bench-$name" "$IQN" "$DISK" 1G "$port" "$ADDR" \
		-- "${extra[@]}" || die "$name did not start"
	UP_PID[$name]=$T_PID
	UP_LOG[$name]=$T_LOG
	UP_URL[$name]=iscsi://$ADDR:$port/$IQN/$T_LUN
	log "$name: warming (sequential read)"
	SECS=3 perf "$name-warm" "${UP_URL[$name]}" -b 2048 -m 8 >/dev/null
}

# measure NAME TEST: rand4k or seq1m against a target that is up; each
# round's "IOPS MBPS" is appended to RS[NAME.TEST], R[NAME.TEST] is their median
measure() {
	local name=$1 test=$2 res
	case $test in
	rand4k)
		log "$name: 4 KiB random read QD32, ${SECS} s"
		res=$(perf "$name-rand4k" "${UP_URL[$name]}" -r -b 8 -m 32) ;;
	seq1m)
		log "$name: 1 MiB sequential read QD8, ${SECS} s"
		res=$(perf "$name-seq1m" "${UP_URL[$name]}" -b 2048 -m 8) ;;
	seqbuf)
		[ -n "$SEQ_CLIENT" ] || return 0
		log "$name: 1 MiB sequential read QD8 by seq_read, ${SECS} s"
		res=$(seqbuf "$name-seqbuf" "${UP_URL[$name]}") ;;
	esac
	RS[$name.$test]+="$res"$'\n'
	R[$name.$test]=$(printf '%s' "${RS[$name.$test]}" | sort -n | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }')
}

target_down() {
	local name=$1
	target_alive "${UP_PID[$name]}" || log "warning: $name died during the run; see ${UP_LOG[$name]}"
	target_stop "${UP_PID[$name]}" "${UP_LOG[$name]}" || log "warning: $name did not stop cleanly"
}

# iperf3_run: raw loopback TCP, one stream of 1 MiB writes for SECS; prints MiB/s (0: none)
iperf3_run() {
	local port=$((PORT + 3)) out=$SCRATCH/iperf3.json spid mibs
	iperf3 -s -B "$ADDR" -p "$port" >"$SCRATCH/iperf3-server.log" 2>&1 &
	spid=$!
	# not wait_port: a probe connection would be taken for a test
	for _ in $(seq 50); do
		grep -q 'Server listening' "$SCRATCH/iperf3-server.log" && break
		sleep 0.1
	done
	timeout --kill-after=5 $((SECS + 30)) iperf3 -c "$ADDR" -p "$port" -l 1M -P 1 -t "$SECS" -J \
		</dev/null >"$out" 2>&1
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	# bytes the receiver got over its own seconds, as MiB/s
	mibs=$(jq -r '.end.sum_received | (.bytes / .seconds / 1048576 | floor)' "$out" 2>/dev/null)
	if [ -z "$mibs" ] || [ "$mibs" = null ]; then
		log "iperf3 produced no result; see $out"
		echo 0
	else
		echo "$mibs"
	fi
}

# measure_iperf3: one iperf3 run appended to RS[iperf3]; IPERF is their median
measure_iperf3() {
	log "iperf3: one stream of 1 MiB writes on $ADDR, ${SECS} s"
	RS[iperf3]+="$(iperf3_run)"$'\n'
	IPERF=$(printf '%s' "${RS[iperf3]}" | sort -n | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }')
}

IPERF=
HAVE_IPERF=1
if ! command -v iperf3 >/dev/null || ! command -v jq >/dev/null; then
	log "iperf3 or jq not found: no raw TCP figure (apt-get install iperf3 jq)"
	HAVE_IPERF=
fi
if [ "$ONLY" != isergw ]; then
	target_up tgt tgt "$PORT"
	measure tgt rand4k
	measure tgt seq1m
	measure tgt seqbuf
	target_down tgt
fi
if [ "$ONLY" != tgt ]; then
	# isergwd and the base daemon up together, each test run on one right
	# after the other: the machine's load changes within seconds
	names=(isergw)
	target_up isergw isergw $((PORT + 1))
	if [ -n "$BASE" ]; then
		NEW=$ISERGWD ISERGWD=$BASE
		mkdir -p "$SCRATCH/state-base"
		target_up base isergw $((PORT + 2)) --state-dir "$SCRATCH/state-base" \
			--ctl-socket "$SCRATCH/state-base/ctl.sock"
		ISERGWD=$NEW
		names+=(base)
	fi
	# --rounds: the order turns every round (the one measured second had
	# the edge in single runs)
	for ((round = 1; round <= ROUNDS; round++)); do
		order=("${names[@]}")
		((round % 2)) || mapfile -t order < <(printf '%s\n' "${names[@]}" | tac)
		for t in rand4k seq1m seqbuf; do
			for n in "${order[@]}"; do measure "$n" "$t"; done
		done
		[ -z "$HAVE_IPERF" ] || measure_iperf3
	done
fi
# --only tgt: iperf3 once, after tgt
[ -z "$HAVE_IPERF" ] || [ -n "${RS[iperf3]:-}" ] || measure_iperf3
if [ "$ONLY" != tgt ]; then
	for n in "${names[@]}"; do target_down "$n"; done
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a > 0) printf "%.2fx", a / b; else print "-" }'; }
# iscsi-perf's "MB/s" is MiB/s (IOPS x transfer size / 2^20).
printf '\n%-36s %10s %10s %7s\n' "test (${SECS} s each)" tgt isergwd ratio
row() { printf '%-36s %10s %10s %7s  %s\n' "$1" "$2" "$3" "$(ratio "$3" "$2")" "${4:-}"; }
# trow: a row of tgt against isergwd; with --only the other column is '-', no ratio or goal
trow() {
	local a=$2 b=$3
	[ "$ONLY" != isergw ] || a=-
	[ "$ONLY" != tgt ] || b=-
	if [ -n "$ONLY" ]; then printf '%-36s %10s %10s\n' "$1" "$a" "$b"; else row "$@"; fi
}
read -r ti tm <<<"${R[tgt.rand4k]:-0 0}"
read -r gi gm <<<"${R[isergw.rand4k]:-0 0}"
trow "4 KiB random read QD32, IOPS" "$ti" "$gi" "(goal >= 1.5x)"
trow "4 KiB random read QD32, MiB/s" "$tm" "$gm"
read -r ti tm <<<"${R[tgt.seq1m]:-0 0}"
read -r gi gm <<<"${R[isergw.seq1m]:-0 0}"
trow "1 MiB sequential read QD8, IOPS" "$ti" "$gi"
trow "1 MiB sequential read QD8, MiB/s" "$tm" "$gm" "(goal >= 1.3x)"
if [ -n "$SEQ_CLIENT" ]; then
	read -r ti tm <<<"${R[tgt.seqbuf]:-0 0}"
	read -r gi gm <<<"${R[isergw.seqbuf]:-0 0}"
	trow "1 MiB seq. read QD8 seq_read, MiB/s" "$tm" "$gm"
fi

# seq1m of each target against raw loopback TCP measured in the same run
if [ -z "$IPERF" ]; then
	echo "1 MiB sequential read against iperf3: skipped (iperf3 or jq not installed)"
else
	printf '\n%-36s %10s %10s\n' "seq1m against raw TCP (${SECS} s)" MiB/s "of iperf3"
	printf '%-36s %10s  %s\n' "iperf3 -l 1M, one stream" "$IPERF" \
		"(median of: $(printf '%s' "${RS[iperf3]}" | tr '\n' ' '))"
	for k in tgt base isergw; do
		case $k in tgt) n=tgt ;; base) n="isergwd (base)" ;; *) n=isergwd ;; esac
		for c in seq1m seqbuf; do
			[ -n "${R[$k.$c]:-}" ] || continue
			read -r gi gm <<<"${R[$k.$c]}"
			printf '%-36s %10s %10s  %s\n' "$n, $([ $c = seq1m ] && echo iscsi-perf || echo seq_read)" \
				"$gm" "$(ratio "$gm" "$IPERF")" "$([ "$k" = isergw ] && echo "(goal >= 0.90x)")"
		done
	done
fi
if [ -n "${R[base.seq1m]:-}" ]; then
	printf '\n%-36s %10s %10s %7s\n' "isergwd against base (${SECS} s)" base isergwd ratio
	read -r bi bm <<<"${R[base.rand4k]:-0 0}"
	read -r gi gm <<<"${R[isergw.rand4k]:-0 0}"
	row "4 KiB random read QD32, IOPS" "$bi" "$gi"
	read -r bi bm <<<"${R[base.seq1m]:-0 0}"
	read -r gi gm <<<"${R[isergw.seq1m]:-0 0}"
	row "1 MiB sequential read QD8, MiB/s" "$bm" "$gm"
	if [ -n "$SEQ_CLIENT" ]; then
		read -r bi bm <<<"${R[base.seqbuf]:-0 0}"
		read -r gi gm <<<"${R[isergw.seqbuf]:-0 0}"
		row "1 MiB seq. read QD8 seq_read, MiB/s" "$bm" "$gm"
	fi
fi
