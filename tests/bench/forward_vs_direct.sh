#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Forwarding cost: iscsi-perf directly against a tgtd backend and through
# isergwd forwarding to the same tgtd (iscsi:// backstore), in one run. Not a
# ctest test: numbers, no assertions.
#
#   tests/bench/forward_vs_direct.sh --daemon PATH/isergwd [--scratch DIR]
#        [--seconds N] [--rounds N] [--reactors N] [--sessions N]
#        [--callgrind-seconds N] [--addr A] [--port P]
#
# tgtd on 127.0.0.70:13470 (LUN 1, a 1 GiB random-filled file cached in
# SCRATCH, default /var/tmp/isergw-bench), isergwd on 127.0.0.70:13471
# (--addr, --port: the backend's port; the gateway's is the next one).
#   rand4k  4 KiB random read, QD32     iscsi-perf -r -b 8 -m 32
#   seq1m   1 MiB sequential read, QD8  iscsi-perf -b 2048 -m 8
# Each round runs both tests directly and through the gateway, one after the
# other (the machine is shared: load changes within seconds); prints IOPS and
# MB/s of both and the gateway/direct ratio per round, then the median ratio
# of each test over --rounds (default 3). Then, unless
# --callgrind-seconds 0, CPU per I/O (perf stat has no hardware counters
# here): instructions per command of tgtd under callgrind serving rand4k
# directly, and of isergwd under callgrind forwarding rand4k (tgtd normal),
# each total divided by the commands completed, and their ratio.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/../integration/lib.sh"

SECS=15
ROUNDS=3
REACTORS=
SESSIONS=1
CG_SECS=10
ADDR=127.0.0.70
BPORT=13470
GPORT=13471
SCRATCH=${SCRATCH:-/var/tmp/isergw-bench}
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) SECS=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--reactors) REACTORS=$2; shift 2 ;;
	--sessions) SESSIONS=$2; shift 2 ;;
	--callgrind-seconds) CG_SECS=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--port) BPORT=$2; GPORT=$(($2 + 1)); shift 2 ;;
	-h|--help) sed -n '3,21p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
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
GURL=iscsi://$ADDR:$GPORT/$GIQN/0

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

G_PID=
gateway_start() {
	local cfg=$SCRATCH/fwd-gw.json extra=""
	[ -n "$REACTORS" ] && extra="\"reactors\": $REACTORS,"
	mkdir -p "$SCRATCH/fwd-state"
	cat >"$cfg" <<JSON
{ $extra "log_level": "notice", "state_dir": "$SCRATCH/fwd-state",
  "ctl_socket": "$SCRATCH/fwd-state/ctl.sock",
  "portals": [ { "url": "tcp://$ADDR:$GPORT" } ],
  "targets": [ { "iqn": "$GIQN", "luns": [ { "path": "$DURL", "backend_sessions": $SESSIONS } ] } ] }
JSON
	: >"$SCRATCH/fwd-gw.log"
	"$@" "$ISERGWD" --config "$cfg" >>"$SCRATCH/fwd-gw.log" 2>&1 &
	G_PID=$!
	_LIB_DAEMONS+=("$G_PID isergw")
	wait_port "$G_PID" "$ADDR" "$GPORT" 120 || die "isergwd did not start"
}

[ -x "${ISERGWD:-/nonexistent}" ] || die "--daemon PATH (the isergwd binary) is required"
backend_start
gateway_start
SECS_W=3 perf warm "$DURL" 3 -b 2048 -m 8 >/dev/null
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "n/a") }'; }
declare -A ARGS=([rand4k]="-r -b 8 -m 32" [seq1m]="-b 2048 -m 8")
declare -A RATIOS
printf '%-6s %-8s %14s %14s %8s\n' round test "direct (tgt)" "via isergwd" ratio
for ((round = 1; round <= ROUNDS; round++)); do
	for t in rand4k seq1m; do
		# shellcheck disable=SC2086
		read -r di dm <<<"$(perf "direct-$t" "$DURL" "$SECS" ${ARGS[$t]})"
		# shellcheck disable=SC2086
		read -r fi fm <<<"$(perf "fwd-$t" "$GURL" "$SECS" ${ARGS[$t]})"
		r=$(ratio "$fi" "$di")
		RATIOS[$t]="${RATIOS[$t]:-} $r"
		printf '%-6s %-8s %7s IOPS %4s MB/s %7s IOPS %4s MB/s  %s\n' "$round" "$t" "$di" "$dm" \
			"$fi" "$fm" "$r"
	done
done
for t in rand4k seq1m; do
	# shellcheck disable=SC2086
	printf 'median %-8s ratio %s over %d rounds (%s )\n' "$t" "$(median ${RATIOS[$t]})" "$ROUNDS" "${RATIOS[$t]}"
done
target_stop "$G_PID" "$SCRATCH/fwd-gw.log" >/dev/null

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
	rm -f "$SCRATCH"/cg-tgtd.out* "$SCRATCH"/cg-isergwd.out*
	backend_stop
	backend_start valgrind --tool=callgrind --callgrind-out-file="$SCRATCH/cg-tgtd.out"
	read -r tiops _ <<<"$(perf cg-direct "$DURL" "$CG_SECS" -r -b 8 -m 32)"
	callgrind_control -d "$B_PID" >/dev/null 2>&1
	sleep 2
	backend_stop
	sleep 1
	tir=$(ir_of "$SCRATCH/cg-tgtd.out")
	tcmds=$((tiops * CG_SECS))
	backend_start
	gateway_start valgrind --tool=callgrind --callgrind-out-file="$SCRATCH/cg-isergwd.out"
	perf cg-fwd "$GURL" "$CG_SECS" -r -b 8 -m 32 >/dev/null
	target_stop "$G_PID" "$SCRATCH/fwd-gw.log" >/dev/null
	gcmds=$(sed -n 's/.*closing: \([0-9]*\) backend commands.*/\1/p' "$SCRATCH/fwd-gw.log" | tail -n 1)
	gir=$(ir_of "$SCRATCH/cg-isergwd.out")
	tpc=$(awk -v a="${tir:-0}" -v b="$tcmds" 'BEGIN { if (b > 0) printf "%d", a / b; else print 0 }')
	gpc=$(awk -v a="${gir:-0}" -v b="${gcmds:-0}" 'BEGIN { if (b > 0) printf "%d", a / b; else print 0 }')
	printf 'callgrind rand4k: tgtd %s instructions/command (%s commands), isergwd forwarding %s instructions/command (%s commands), ratio %s (whole process, start-up included)\n' \
		"$tpc" "$tcmds" "$gpc" "${gcmds:-0}" "$(ratio "$gpc" "$tpc")"
fi
backend_stop
