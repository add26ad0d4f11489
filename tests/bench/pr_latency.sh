#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The cost of the LU state carried by the cluster, on the HA bed
# (tests/ha/bed.sh): PERSISTENT RESERVE OUT latency across the three nodes,
# and 4 KiB random read IOPS of an LU with registrations versus without.
# Not a ctest test: it measures, it asserts no time. Root only.
#
#   tests/bench/pr_latency.sh [--build DIR] [--count N] [--seconds S]
#                             [--prefix P] [--subnet S] [--scratch DIR]
#
# --build DIR (default build/) holds bin/isergwd, bin/isergwctl,
# bin/isergw-ha and bin/pr_fault. Three nodes, corosync token 1000 ms, the
# example cluster configuration, LUN 1 (a file).
#   without  iscsi-perf -r -b 8 -m 32 for S s (default 10) through node 1
#            on LUN 1, no registration;
#   pr-out   N (default 600) REGISTER AND IGNORE EXISTING KEY, one at a
#            time, through nodes 1, 2, 3 in turn (one session each): each
#            completes only once every node applied it; median and p99;
#   with     the same iscsi-perf, the three registrations in place.
# Last line:
#   pr-out: median X ms p99 Y ms; 4k read IOPS with/without registrations: R
# Logs under the scratch directory (default /tmp/isergw-bench-pr-latency).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/../ha/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/../ha/ha_lib.sh"

BUILD=build
COUNT=600
SECS=10
BED_PREFIX=bp
BED_SUBNET=29
SCRATCH=/tmp/isergw-bench-pr-latency
bed_parse_args "$@"
set -- "${BED_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--count) COUNT=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	-h | --help) awk 'NR > 2 { if (!/^#/) exit; print }' "$0"; exit 0 ;;
	*) bed_die "unknown option $1" ;;
	esac
done
[[ $COUNT =~ ^[0-9]+$ && $COUNT -ge 10 ]] || bed_die "--count wants a number >= 10"
[[ $SECS =~ ^[0-9]+$ && $SECS -ge 2 ]] || bed_die "--seconds wants a number >= 2"
BED_ISERGWD=$(realpath "$BUILD/bin/isergwd") BED_ISERGWCTL=$(realpath "$BUILD/bin/isergwctl")
BED_HA=$(realpath "$BUILD/bin/isergw-ha")
PRF=$(realpath "$BUILD/bin/pr_fault")
for b in "$BED_ISERGWD" "$BED_ISERGWCTL" "$BED_HA" "$PRF"; do
	[ -x "$b" ] || bed_die "no $b"
done
for t in jq iscsi-perf; do
	command -v "$t" >/dev/null || bed_die "$t not found (deploy/install-deps.sh)"
done
bed_init
OUT=$SCRATCH/results
ha_cluster_up >/dev/null || bed_die "the cluster did not come up"
mkdir -p "$OUT"
url() { echo "iscsi://$(bed_portal "$1")/$BED_HA_IQN/1"; }

perf() { # perf LOG: 4 KiB random read QD32 through node 1, prints the IOPS
	bed_host iscsi-perf -t "$SECS" -m 32 -b 8 -r "$(url 1)" >"$1" 2>&1 || return 1
	tr '\r' '\n' <"$1" | sed -n 's/.*iops average \([0-9]*\).*/\1/p' | tail -n 1
}

without=$(perf "$OUT/perf-without.log")
bed_log "4 KiB random read QD32 without registrations: ${without:-?} IOPS"
lat=$(bed_host "$PRF" --latency "$COUNT" "$(url 1)" "$(url 2)" "$(url 3)" 2>"$OUT/latency.err")
bed_log "PERSISTENT RESERVE OUT through nodes 1, 2, 3 in turn: $lat"
median=$(awk '{ print $3 }' <<<"$lat")
p99=$(awk '{ print $5 }' <<<"$lat")
with=$(perf "$OUT/perf-with.log")
bed_log "4 KiB random read QD32 with 3 registrations: ${with:-?} IOPS"
ratio=$(awk -v w="${with:-0}" -v o="${without:-0}" 'BEGIN { if (o > 0) printf "%.2f", w / o; else print "?" }')
ha_stop_daemons >/dev/null 2>&1
echo "pr-out: median ${median:-?} ms p99 ${p99:-?} ms; 4k read IOPS with/without registrations: $ratio"
