#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Forwarding cost: iscsi-perf directly against a tgtd backend and through
# isergwd forwarding to the same tgtd (iscsi:// backstore), in one run. Not a
# ctest test: numbers, no assertions.
#
#   tests/bench/forward_vs_direct.sh --daemon PATH/isergwd [--base-daemon PATH]
#        [--scratch DIR] [--seconds N] [--rounds N] [--reactors N] [--sessions N]
#        [--callgrind-seconds N] [--latency-seconds N] [--latency-client PATH]
#        [--addr A] [--port P]
#
# tgtd on 127.0.0.230:13570 (LUN 1, a 1 GiB random-filled file cached in
# SCRATCH, default /var/tmp/isergw-bench), isergwd on 127.0.0.230:13571
# (--addr, --port: the backend's port; the gateway's is the next one).
# --base-daemon: a second isergwd (another build, e.g. the code before a
# change) forwarding the same LUN on the port after that, measured beside
# the first in every step ("base" below).
#   rand4k  4 KiB random read, QD32     iscsi-perf -r -b 8 -m 32
#   seq1m   1 MiB sequential read, QD8  iscsi-perf -b 2048 -m 8
# Each round runs both tests directly and through the gateway(s), one after
# the other (the machine is shared: load changes within seconds); prints IOPS
# and MB/s and the gateway/direct ratio per round, then the median ratio of
# each test over --rounds (default 3). Then, unless --latency-seconds 0, the
# latency of 4 KiB random reads at QD1 (qd1_latency, built beside
# forward_fault: --latency-client) directly and through the gateway(s) in
# turn, N (default 5) one-second slices each: the medians of their p50 and
# p99, and what forwarding adds. Then, unless --callgrind-seconds 0, CPU
# per I/O (perf stat has no hardware counters here): instructions per command
# of tgtd under callgrind serving rand4k directly, and of each isergwd under
# callgrind forwarding rand4k (tgtd normal), each total divided by the
# commands completed, and their ratio.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/../integration/lib.sh"

SECS=15
ROUNDS=3
REACTORS=
SESSIONS=1
CG_SECS=10
LAT_SECS=5
LAT_CLIENT=
BASE=
ADDR=127.0.0.230
BPORT=13570
GPORT=13571
SCRATCH=${SCRATCH:-/var/tmp/isergw-bench}
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in -h | --help) ;; -*) [ $# -ge 2 ] || die "$1 wants a value" ;; esac
	case "$1" in
	--seconds) SECS=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--reactors) REACTORS=$2; shift 2 ;;
	--sessions) SESSIONS=$2; shift 2 ;;
	--callgrind-seconds) CG_SECS=$2; shift 2 ;;
	--latency-seconds) LAT_SECS=$2; shift 2 ;;
	--latency-client) LAT_CLIENT=$2; shift 2 ;;
	--base-daemon) BASE=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--port) BPORT=$2; GPORT=$(($2 + 1)); shift 2 ;;
	-h|--help) awk 'NR > 2 { if (!/^#/) exit; print }' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
set -- --seconds "$SECS" --rounds "$ROUNDS" --port "$BPORT" --sessions "$SESSIONS" --callgrind-seconds "$CG_SECS" --latency-seconds "$LAT_SECS" --reactors "${REACTORS:-1}"
while [ $# -gt 0 ]; do
	case "$2" in '' | *[!0-9]*) die "$1 wants a number, not '$2'" ;; esac
	shift 2
done
command -v iscsi-perf >/dev/null || die "iscsi-perf not found (apt-get install libiscsi-bin)"
command -v tgtd >/dev/null || die "tgtd not found (apt-get install tgt)"

BIQN=iqn.2026-11.org.isergw:bench-backend
GIQN=iqn.2026-11.org.isergw:bench-fwd
DISK=$SCRATCH/bench-1g.img
if [ ! -f "$DISK" ] || [ "$(stat -c %s "$DISK")" -ne $((1 << 30)) ]; then
	log "creating $DISK (1 GiB from /dev/urandom)"
	head -c 1G /dev/urandom >"$DISK.tmp" && mv "$DISK.tmp" "$DISK" || die "cannot create $DISK"
fi
DURL=iscsi://$ADDR:$BPORT/$BIQN/1
# the gateways: "new" (--daemon) on GPORT, "base" (--base-daemon) on the port after it
GWS=(new)
declare -A GW_BIN=([new]=$ISERGWD) GW_PORT=([new]=$GPORT) GW_URL G_PIDS
if [ -n "$BASE" ]; then
	[ -x "$BASE" ] || die "--base-daemon $BASE: not an executable"
	GWS+=(base)
	GW_BIN[base]=$BASE
	GW_PORT[base]=$((GPORT + 1))
fi
for g in "${GWS[@]}"; do GW_URL[$g]=iscsi://$ADDR:${GW_PORT[$g]}/$GIQN/0; done
if [ -n "$LAT_CLIENT" ]; then
	[ -x "$LAT_CLIENT" ] || die "--latency-client $LAT_CLIENT is not an executable"
else
	LAT_CLIENT=$(cd "$(dirname "${ISERGWD:-.}")/.." 2>/dev/null && pwd)/tests/integration/qd1_latency
fi
for p in "$BPORT" "${GW_PORT[@]}"; do
	! port_open "$ADDR" "$p" || die "$ADDR:$p is already in use (--addr, --port choose others)"
done

# perf NAME URL SECS ARGS...: prints "IOPS MBPS" (0 0 on failure).
perf() {
	local name=$1 url=$2 secs=$3
	shift 3
	local out=$SCRATCH/perf-$name.txt res
	timeout --kill-after=5 $((secs + 60)) iscsi-perf -i iqn.2026-11.org.isergw:bench-client \
		-t "$secs" "$@" "$url" </dev/null >"$out" 2>&1
	res=$(tr '\r' '\n' <"$out" | sed -n 's/^iops average \([0-9]*\) (\([0-9]*\) MB\/s).*/\1 \2/p' | tail -n 1)
	[ -n "$res" ] && echo "$res" || { log "iscsi-perf $name: no result, see $out"; echo "0 0"; }
}

# backend_start [WRAPPER...]: tgtd (optionally under a wrapper) with the disk as LUN 1.
B_PID=
backend_start() {
	local ta=(tgtadm -C "$BPORT" --lld iscsi)
	"$@" tgtd -f -C "$BPORT" --iscsi "portal=$ADDR:$BPORT" >>"$SCRATCH/fwd-tgtd.log" 2>&1 &
	B_PID=$!
	_LIB_DAEMONS+=("$B_PID tgt")
	wait_port "$B_PID" "$ADDR" "$BPORT" 120 || die "tgtd did not start"
	"${ta[@]}" --mode target --op new --tid 1 -T "$BIQN" &&
		"${ta[@]}" --mode logicalunit --op new --tid 1 --lun 1 -b "$DISK" &&
		"${ta[@]}" --mode target --op bind --tid 1 -I ALL || die "tgtadm failed"
}
backend_stop() { kill -TERM "$B_PID" 2>/dev/null; sleep 1; target_kill9 "$B_PID"; }

# gateway_start NAME [WRAPPER...]: isergwd NAME forwarding the LUN on its port.
gateway_start() {
	local g=$1 cfg=$SCRATCH/fwd-gw-$1.json extra="" st=$SCRATCH/fwd-state-$1
	shift
	[ -n "$REACTORS" ] && extra="\"reactors\": $REACTORS,"
	mkdir -p "$st"
	cat >"$cfg" <<JSON
{ $extra "log_level": "notice", "state_dir": "$st",
  "ctl_socket": "$st/ctl.sock",
  "portals": [ { "url": "tcp://$ADDR:${GW_PORT[$g]}" } ],
  "targets": [ { "iqn": "$GIQN", "luns": [ { "path": "$DURL", "backend_sessions": $SESSIONS } ] } ] }
JSON
	: >"$SCRATCH/fwd-gw-$g.log"
	"$@" "${GW_BIN[$g]}" --config "$cfg" >>"$SCRATCH/fwd-gw-$g.log" 2>&1 &
	G_PIDS[$g]=$!
	_LIB_DAEMONS+=("${G_PIDS[$g]} isergw")
	wait_port "${G_PIDS[$g]}" "$ADDR" "${GW_PORT[$g]}" 120 || die "isergwd $g did not start"
}
gateway_stop() { target_stop "${G_PIDS[$1]}" "$SCRATCH/fwd-gw-$1.log" >/dev/null; }

[ -x "${ISERGWD:-/nonexistent}" ] || die "--daemon PATH (the isergwd binary) is required"
backend_start
for g in "${GWS[@]}"; do gateway_start "$g"; done
SECS_W=3 perf warm "$DURL" 3 -b 2048 -m 8 >/dev/null
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "n/a") }'; }
declare -A ARGS=([rand4k]="-r -b 8 -m 32" [seq1m]="-b 2048 -m 8")
declare -A RATIOS=([rand4k-new]="" [seq1m-new]="" [rand4k-base]="" [seq1m-base]="")
printf '%-6s %-8s %-6s %14s %14s %8s\n' round test via "direct (tgt)" "via isergwd" ratio
for ((round = 1; round <= ROUNDS; round++)); do
	for t in rand4k seq1m; do
		# shellcheck disable=SC2086
		read -r di dm <<<"$(perf "direct-$t" "$DURL" "$SECS" ${ARGS[$t]})"
		# the gateways in turn, the other order every other round
		order=("${GWS[@]}")
		((round % 2)) || mapfile -t order < <(printf '%s\n' "${GWS[@]}" | tac)
		for g in "${order[@]}"; do
			# shellcheck disable=SC2086
			read -r fwi fwm <<<"$(perf "fwd-$g-$t" "${GW_URL[$g]}" "$SECS" ${ARGS[$t]})"
			r=$(ratio "$fwi" "$di")
			RATIOS[$t-$g]="${RATIOS[$t-$g]} $r"
			printf '%-6s %-8s %-6s %7s IOPS %4s MB/s %7s IOPS %4s MB/s  %s\n' "$round" "$t" \
				"$g" "$di" "$dm" "$fwi" "$fwm" "$r"
		done
	done
done
for t in rand4k seq1m; do
	for g in "${GWS[@]}"; do
		# shellcheck disable=SC2086
		[ "$ROUNDS" -gt 0 ] && printf 'median %-8s %-4s ratio %s over %d rounds (%s )\n' "$t" "$g" \
			"$(median ${RATIOS[$t-$g]})" "$ROUNDS" "${RATIOS[$t-$g]}"
	done
done

# QD1: the latency forwarding adds, from the same run: one-second slices,
# direct and through each gateway in turn, LAT_SECS times; the median of the
# slices' p50 and p99 (a burst of load spoils one slice, not the figure)
if [ "$LAT_SECS" -gt 0 ] && [ -x "$LAT_CLIENT" ]; then
	# qd1 NAME URL: prints "P50 P99" of one second in microseconds (nothing on failure)
	qd1() {
		local out=$SCRATCH/qd1-$1.txt
		timeout --kill-after=5 60 "$LAT_CLIENT" --seconds 1 "$2" </dev/null >"$out" 2>&1
		sed -n 's/^qd1 commands [0-9]* p50 \([0-9]*\) p99 \([0-9]*\) avg [0-9]*$/\1 \2/p' "$out"
	}
	declare -A P50=([direct]="") P99=([direct]="")
	for ((i = 0; i < LAT_SECS; i++)); do
		for n in direct "${GWS[@]}"; do
			url=$DURL
			[ "$n" = direct ] || url=${GW_URL[$n]}
			read -r a b <<<"$(qd1 "$n" "$url")"
			[ -n "$a" ] || { log "qd1_latency $n: no result, see $SCRATCH/qd1-$n.txt"; continue; }
			P50[$n]="${P50[$n]:-} $a"
			P99[$n]="${P99[$n]:-} $b"
		done
	done
	# shellcheck disable=SC2086
	d50=$(median ${P50[direct]}) d99=$(median ${P99[direct]})
	printf 'qd1 4k random read (median of %d 1 s slices): direct (tgt) p50 %s us p99 %s us\n' \
		"$LAT_SECS" "$d50" "$d99"
	for g in "${GWS[@]}"; do
		# shellcheck disable=SC2086
		f50=$(median ${P50[$g]:-}) f99=$(median ${P99[$g]:-})
		printf 'qd1 4k random read: via isergwd %-4s p50 %s us p99 %s us; added p50 %s us p99 %s us\n' \
			"$g" "$f50" "$f99" "$(awk -v a="$f50" -v b="$d50" 'BEGIN { print a - b }')" \
			"$(awk -v a="$f99" -v b="$d99" 'BEGIN { print a - b }')"
	done
elif [ "$LAT_SECS" -gt 0 ]; then
	log "no QD1 latency: $LAT_CLIENT not built (target qd1_latency; --latency-client PATH)"
fi
for g in "${GWS[@]}"; do gateway_stop "$g"; done

if [ "$CG_SECS" -gt 0 ] && command -v valgrind >/dev/null; then
	# instructions per command: total Ir of the daemon / commands completed
	# (tgtd does not exit on SIGTERM: its profile is dumped with callgrind_control first)
	ir_of() {
		local f sum=0 v
		for f in "$1"*; do
			v=$(callgrind_annotate "$f" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
			sum=$((sum + ${v:-0}))
		done
		echo "$sum"
	}
	rm -f "$SCRATCH"/cg-tgtd.out* "$SCRATCH"/cg-isergwd*.out*
	backend_stop
	backend_start valgrind --tool=callgrind --callgrind-out-file="$SCRATCH/cg-tgtd.out"
	read -r tiops _ <<<"$(perf cg-direct "$DURL" "$CG_SECS" -r -b 8 -m 32)"
	callgrind_control -d "$B_PID" >/dev/null 2>&1
	sleep 2
	backend_stop
	sleep 1
	tir=$(ir_of "$SCRATCH/cg-tgtd.out")
	tcmds=$((tiops * CG_SECS))
	tpc=$(awk -v a="${tir:-0}" -v b="$tcmds" 'BEGIN { if (b > 0) printf "%d", a / b; else print 0 }')
	backend_start
	for g in "${GWS[@]}"; do
		# profile: cg-isergwd.out for --daemon, cg-isergwd-base.out for --base-daemon
		out=$SCRATCH/cg-isergwd.out
		[ "$g" = new ] || out=$SCRATCH/cg-isergwd-$g.out
		gateway_start "$g" valgrind --tool=callgrind --callgrind-out-file="$out"
		perf "cg-fwd-$g" "${GW_URL[$g]}" "$CG_SECS" -r -b 8 -m 32 >/dev/null
		gateway_stop "$g"
		gcmds=$(sed -n 's/.*closing: \([0-9]*\) backend commands.*/\1/p' "$SCRATCH/fwd-gw-$g.log" | tail -n 1)
		gir=$(ir_of "$out")
		gpc=$(awk -v a="${gir:-0}" -v b="${gcmds:-0}" 'BEGIN { if (b > 0) printf "%d", a / b; else print 0 }')
		if [ "$g" = new ]; then
			printf 'callgrind rand4k: tgtd %s instructions/command (%s commands), isergwd forwarding %s instructions/command (%s commands), ratio %s (whole process, start-up included)\n' \
				"$tpc" "$tcmds" "$gpc" "${gcmds:-0}" "$(ratio "$gpc" "$tpc")"
		else
			printf 'callgrind rand4k: base isergwd (%s) forwarding %s instructions/command (%s commands), ratio %s to tgtd\n' \
				"$BASE" "$gpc" "${gcmds:-0}" "$(ratio "$gpc" "$tpc")"
		fi
	done
fi
backend_stop
