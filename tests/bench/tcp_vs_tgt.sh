#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# isergwd against tgt over iSCSI/TCP on loopback, same file, same client
# (libiscsi's iscsi-perf). Not a ctest test: numbers, no assertions.
#
#   tests/bench/tcp_vs_tgt.sh --daemon PATH/isergwd [--scratch DIR]
#                             [--seconds N] [--reactors N] [--only tgt|isergw]
#
# One 1 GiB random-filled file (cached in SCRATCH, default /var/tmp/isergw-bench),
# served by tgtd on 127.0.0.1:3261 (LUN 1) and isergwd on 127.0.0.1:3262
# (LUN 0). Each target is warmed with a short sequential read, then measured
# in turn:
#   rand4k  4 KiB random read, QD32     iscsi-perf -r -b 8 -m 32
#   seq1m   1 MiB sequential read, QD8  iscsi-perf -b 2048 -m 8
# Prints IOPS and MiB/s per target and the isergwd/tgt ratio.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/../integration/lib.sh"

SECS=20
ONLY=
REACTORS=
SCRATCH=${SCRATCH:-/var/tmp/isergw-bench}
lib_parse_common --target-kind tgt "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) SECS=$2; shift 2 ;;
	--reactors) REACTORS=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	-h|--help) sed -n '3,17p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
command -v iscsi-perf >/dev/null || die "iscsi-perf not found (apt-get install libiscsi-bin)"
if [ "$ONLY" != tgt ]; then
	[ -x "${ISERGWD:-/nonexistent}" ] || die "--daemon PATH (the isergwd binary) is required"
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

declare -A R
run_target() {
	local kind=$1 port=$2 url
	TARGET_KIND=$kind
	local extra=()
	[ "$kind" = isergw ] && [ -n "$REACTORS" ] && extra=(--reactors "$REACTORS")
	ISERGW_LOG_LEVEL=${ISERGW_LOG_LEVEL:-notice} target_start "bench-$kind" "$IQN" "$DISK" 1G "$port" 127.0.0.1 \
		-- "${extra[@]}" || die "$kind did not start"
	local pid=$T_PID
	url=iscsi://127.0.0.1:$port/$IQN/$T_LUN
	log "$kind: warming (sequential read)"
	SECS=3 perf "$kind-warm" "$url" -b 2048 -m 8 >/dev/null
	log "$kind: 4 KiB random read QD32, ${SECS} s"
	R[$kind.rand4k]=$(perf "$kind-rand4k" "$url" -r -b 8 -m 32)
	log "$kind: 1 MiB sequential read QD8, ${SECS} s"
	R[$kind.seq1m]=$(perf "$kind-seq1m" "$url" -b 2048 -m 8)
	target_alive "$pid" || log "warning: $kind died during the run; see $T_LOG"
	target_stop "$pid" "$T_LOG" || log "warning: $kind did not stop cleanly"
}

[ "$ONLY" = isergw ] || run_target tgt 3261
[ "$ONLY" = tgt ] || run_target isergw 3262

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a > 0) printf "%.2fx", a / b; else print "-" }'; }
# iscsi-perf's "MB/s" is MiB/s (IOPS x transfer size / 2^20).
printf '\n%-36s %10s %10s %7s\n' "test (${SECS} s each)" tgt isergwd ratio
row() { printf '%-36s %10s %10s %7s  %s\n' "$1" "$2" "$3" "$(ratio "$3" "$2")" "${4:-}"; }
read -r ti tm <<<"${R[tgt.rand4k]:-0 0}"
read -r gi gm <<<"${R[isergw.rand4k]:-0 0}"
row "4 KiB random read QD32, IOPS" "$ti" "$gi" "(goal >= 1.5x)"
row "4 KiB random read QD32, MiB/s" "$tm" "$gm"
read -r ti tm <<<"${R[tgt.seq1m]:-0 0}"
read -r gi gm <<<"${R[isergw.seq1m]:-0 0}"
row "1 MiB sequential read QD8, IOPS" "$ti" "$gi"
row "1 MiB sequential read QD8, MiB/s" "$tm" "$gm" "(goal >= 1.3x)"
