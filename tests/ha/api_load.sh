#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# api.load: isergw-api under load beside host I/O on the same node (docs/api.md).
#
#   api_load.sh --isergwd PATH --isergwctl PATH --ha PATH --api PATH
#               --prefix P --subnet S --scratch DIR [--seconds N]
#
# 1. three nodes with the example configuration; isergw-api in node 1 on its
#    storage address, a read-only token, --max-connections-per-ip 128 (wrk
#    opens all its connections from one address);
# 2. iscsi-perf alone: 4 KiB random reads, QD 16, through node 1 for N/2 s
#    (N default 30);
# 3. wrk, 64 connections, 2 threads, for N s, on GET /api/v1/cluster,
#    /api/v1/targets, /api/v1/device-groups, /api/v1/nodes and /metrics in
#    turn (a Lua script), with the same iscsi-perf run beside it; wrk runs
#    at nice 19, standing in for clients on other machines (in production
#    no API client shares the gateway's CPUs), and isergw-api as in
#    production at its default --nice 10 under SCHED_BATCH (docs/api.md,
#    Under load); nothing else is pinned or reprioritised;
# 3b. iscsi-perf alone again for N/2 s: "alone" is the mean of the runs
#    before and after (the machine's own drift falls out of the ratio);
# 4. fails on any wrk error (a socket error, a timeout or an answer that is
#    not 2xx) or an iscsi-perf run that did not end well; prints wrk's
#    requests per second and p99, and iscsi-perf's IOPS with and without the
#    API's load and their ratio (the goal, at most 5 % lost, is printed, never
#    asserted: this machine is shared).
# API_LOAD_API_ARGS in the environment: more isergw-api options (to compare
# settings, e.g. "--max-request-rate 500"; word-split).
# Exit 77 when not root, or without corosync, wrk or iscsi-perf (unless
# CI=true).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

API=
SECONDS_RUN=30
ha_options 4,24 --api API --seconds SECONDS_RUN -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --api "$API" isergw-api
if ! [[ $SECONDS_RUN =~ ^[0-9]+$ ]] || [ "$SECONDS_RUN" -lt 5 ]; then
	bed_die "--seconds wants a number >= 5"
fi
for t in curl jq iscsi-perf wrk; do
	if ! command -v "$t" >/dev/null; then
		[ "${CI:-}" = true ] && bed_die "$t not found (deploy/install-deps.sh)"
		bed_log "$t not found: skipped"
		exit 77
	fi
done
OUT=$SCRATCH/load
rm -rf "$OUT"
mkdir -p "$OUT"
PORT=8080

ha_cluster_up || bed_die "the cluster did not come up"

# 1. isergw-api in node 1
"$API" token add --token-file "$OUT/tokens" --name load --role read-only >"$OUT/ro.tok" ||
	bed_die "isergw-api token add failed"
URL=http://$(bed_stor_addr 1):$PORT
_bed_spawn 1 api "$SCRATCH/n1/api.log" "$API" --listen "$(bed_stor_addr 1):$PORT" \
	--ha-socket /run/isergw/ha.sock --isergwd-socket /run/isergw/isergwd.sock \
	--token-file "$OUT/tokens" --max-connections-per-ip 128 --max-connections 256 \
	${API_LOAD_API_ARGS:-} ||
	bed_die "isergw-api did not start on node 1"
bed_poll 20 "isergw-api on node 1 answers" bed_host curl -sf -o /dev/null "$URL/healthz" ||
	bed_die "isergw-api on node 1 does not answer"

# perf FILE S: iscsi-perf through node 1 for S s; its average IOPS on stdout
LUN0="iscsi://$(bed_portal 1)/$BED_HA_IQN/0"
perf() {
	ip netns exec "${BED_PREFIX}host" iscsi-perf -t "$2" -m 16 -b 8 -r "$LUN0" >"$1" 2>&1 ||
		{ bed_log "iscsi-perf failed: $(tr '\r' '\n' <"$1" | tail -n 2)"; return 1; }
	tr '\r' '\n' <"$1" | sed -n 's/.*iops average \([0-9]*\).*/\1/p' | tail -n 1
}
HALF=$(((SECONDS_RUN + 1) / 2))

# 2. alone, before
alone1=$(perf "$OUT/perf-alone-1.log" "$HALF") || fail=1
bed_log "iscsi-perf alone (before): ${alone1:-?} IOPS"

# 3. beside wrk
TOKEN=$(cat "$OUT/ro.tok")
cat >"$OUT/paths.lua" <<EOF
local paths = { "/api/v1/cluster", "/api/v1/targets", "/api/v1/device-groups", "/api/v1/nodes", "/metrics" }
local i = 0
request = function()
	i = i + 1
	return wrk.format("GET", paths[(i % #paths) + 1], { ["Authorization"] = "Bearer $TOKEN" })
end
local bad = 0
response = function(status, headers, body)
	if status ~= 200 then bad = bad + 1 end
end
done = function(summary, latency, requests)
	io.write(string.format("wrk-summary requests %d non200 %d p99_ms %.3f connect %d read %d write %d timeout %d status %d\n",
		summary.requests, bad, latency:percentile(99) / 1000.0, summary.errors.connect,
		summary.errors.read, summary.errors.write, summary.errors.timeout, summary.errors.status))
end
EOF
ip netns exec "${BED_PREFIX}host" nice -n 19 wrk -t 2 -c 64 -d "${SECONDS_RUN}s" --timeout 10s --latency \
	-s "$OUT/paths.lua" "$URL" >"$OUT/wrk.log" 2>&1 &
WRK_PID=$!
with=$(perf "$OUT/perf-with.log" "$SECONDS_RUN") || fail=1
wait "$WRK_PID"
ha_check "wrk ran" [ $? -eq 0 ]
# 3b. alone, after
alone2=$(perf "$OUT/perf-alone-2.log" "$HALF") || fail=1
bed_log "iscsi-perf alone (after): ${alone2:-?} IOPS; beside wrk: ${with:-?} IOPS"
alone=$(awk -v a="${alone1:-0}" -v b="${alone2:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%d", (a + b) / 2 }')
sum=$(grep '^wrk-summary' "$OUT/wrk.log")
bed_log "$sum"
grep -E 'Requests/sec|99%' "$OUT/wrk.log" | sed 's/^/    wrk: /' >&2
# shellcheck disable=SC2086 # word splitting of the summary's fields
set -- $sum
ha_check "wrk: requests answered" [ "${3:-0}" -gt 0 ]
ha_check "wrk: every answer 200" [ "${5:-1}" = 0 ]
ha_check "wrk: no socket error or timeout" [ "${9:-1} ${11:-1} ${13:-1} ${15:-1} ${17:-1}" = "0 0 0 0 0" ]
ratio=$(awk -v a="${alone:-0}" -v w="${with:-0}" 'BEGIN { if (a > 0) printf "%.3f", w / a; else print "?" }')
bed_log "api.load: wrk 64 connections ${SECONDS_RUN} s: $(awk '/Requests\/sec/ { print $2 }' "$OUT/wrk.log") requests/s," \
	"p99 ${7:-?} ms, 0 errors; iscsi-perf with/without the API's load: ${with:-?}/${alone:-?} IOPS = $ratio" \
	"(goal: at least 0.95; not asserted)"
ha_check "isergw-api on node 1 stops with status 0" _bed_stop 1 api
ha_stop_daemons

if [ "$fail" -ne 0 ]; then
	bed_log "api.load: FAILED"
	exit 1
fi
exit 0
