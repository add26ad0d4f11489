#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The REST API at scale on the HA bed (tests/ha/bed.sh): LUNs created one
# POST at a time, the list of them, and the API under load beside host I/O.
# Not a ctest test: it measures, it asserts no time. Root only.
#
#   tests/bench/api_scale.sh [--build DIR] [--luns N] [--seconds S]
#                            [--prefix P] [--subnet S] [--scratch DIR]
#
# --build DIR (default build/) holds bin/isergwd, bin/isergwctl,
# bin/isergw-ha, bin/isergw-api. Three nodes, corosync token 1000 ms, the
# example cluster configuration; isergw-api in nodes 1 and 2.
#   create  N LUNs (default 4096) on files of the shared directory (created
#           sparse by isergwd, 1 MiB each), one POST /api/v1/targets/T/luns
#           at a time through node 1 (one HTTP connection kept alive, by
#           python3's http.client); a libiscsi session (iscsi-perf on the
#           example LUN 0 through node 2) reads for the whole time and must
#           not fail. Printed: the time for all N, and for each 10 % of them.
#   visible every node's agent holds the last generation; GET of the LUNs
#           through node 2 lists N.
#   list    GET /api/v1/targets/T/luns through node 1, 5 times: the median.
#   load    wrk -c 64 for S s (default 30) on GET endpoints of node 1, beside
#           iscsi-perf through node 1, and iscsi-perf alone for S/2 s before
#           and after (their mean: drift falls out): p99 and the ratio.
#           wrk runs at nice 19 (it stands in for clients on other machines),
#           isergw-api at its default --nice 10 under SCHED_BATCH.
# Last line:
#   api: N LUNs in X s; list Y ms; wrk p99 Z ms; iscsi-perf with/without API load: R
# Logs under the scratch directory (default /tmp/isergw-bench-api-scale).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/../ha/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/../ha/ha_lib.sh"

BUILD=build
LUNS=4096
SECS=30
BED_PREFIX=bs
BED_SUBNET=25
SCRATCH=/tmp/isergw-bench-api-scale
bed_parse_args "$@"
set -- "${BED_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--luns) LUNS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	-h | --help) awk 'NR > 2 { if (!/^#/) exit; print }' "$0"; exit 0 ;;
	*) bed_die "unknown option $1" ;;
	esac
done
[[ $LUNS =~ ^[0-9]+$ && $LUNS -ge 1 && $LUNS -le 16383 ]] || bed_die "--luns wants 1..16383"
[[ $SECS =~ ^[0-9]+$ && $SECS -ge 5 ]] || bed_die "--seconds wants a number >= 5"
BED_ISERGWD=$(realpath "$BUILD/bin/isergwd") BED_ISERGWCTL=$(realpath "$BUILD/bin/isergwctl")
BED_HA=$(realpath "$BUILD/bin/isergw-ha")
API=$(realpath "$BUILD/bin/isergw-api")
for b in "$BED_ISERGWD" "$BED_ISERGWCTL" "$BED_HA" "$API"; do
	[ -x "$b" ] || bed_die "no $b"
done
for t in curl jq python3 iscsi-perf wrk; do
	command -v "$t" >/dev/null || bed_die "$t not found (deploy/install-deps.sh)"
done
bed_init
OUT=$SCRATCH/bench
rm -rf "$OUT"
mkdir -p "$OUT"
PORT=8080
# every node's isergwd holds a file descriptor per LUN
ulimit -n $((LUNS * 2 + 4096)) || bed_die "cannot raise the open files limit to $((LUNS * 2 + 4096))"

ha_cluster_up || bed_die "the cluster did not come up"
"$API" token add --token-file "$OUT/tokens" --name bench --role admin >"$OUT/admin.tok" ||
	bed_die "isergw-api token add failed"
TOKEN=$(cat "$OUT/admin.tok")
for k in 1 2; do
	_bed_spawn "$k" api "$SCRATCH/n$k/api.log" "$API" --listen "$(bed_stor_addr "$k"):$PORT" \
		--ha-socket /run/isergw/ha.sock --isergwd-socket /run/isergw/isergwd.sock \
		--token-file "$OUT/tokens" --max-connections-per-ip 128 --max-connections 256 ||
		bed_die "isergw-api did not start on node $k"
	bed_poll 20 "isergw-api on node $k" bed_host curl -sf -o /dev/null \
		"http://$(bed_stor_addr "$k"):$PORT/healthz" || bed_die "isergw-api on node $k does not answer"
done
URL1=http://$(bed_stor_addr 1):$PORT
URL2=http://$(bed_stor_addr 2):$PORT
T=iqn.2026-11.org.isergw:scale
code=$(bed_host curl -s -o "$OUT/t.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
	-H 'Content-Type: application/json' --data "{\"iqn\": \"$T\"}" "$URL1/api/v1/targets")
[ "$code" = 201 ] || bed_die "POST target: $code $(cat "$OUT/t.json")"

# ---------------------------------------------------------------- create
ip netns exec "${BED_PREFIX}host" iscsi-perf -t 100000 -m 2 -b 8 \
	"iscsi://$(bed_portal 2)/$BED_HA_IQN/0" >"$OUT/session.log" 2>&1 &
SESSION=$!
cat >"$OUT/create.py" <<'EOF'
import http.client, json, sys, time
host, port, token, target, n, shared = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
c = http.client.HTTPConnection(host, port, timeout=60)
hdr = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
t0 = time.monotonic()
step = max(1, n // 10)
for i in range(n):
    body = json.dumps({"lun": i, "path": "%s/scale-%05d.img" % (shared, i), "size": "1M", "device_group": "dg%d" % (i % 3 + 1)})
    c.request("POST", "/api/v1/targets/%s/luns" % target, body, hdr)
    r = c.getresponse()
    data = r.read()
    if r.status not in (201, 202):
        print("POST LUN %d: %d %s" % (i, r.status, data[:300].decode(errors="replace")), flush=True)
        sys.exit(1)
    if (i + 1) % step == 0:
        print("created %d in %.3f s" % (i + 1, time.monotonic() - t0), flush=True)
print("total %.3f" % (time.monotonic() - t0), flush=True)
EOF
bed_log "creating $LUNS LUNs through node 1, one POST at a time"
ip netns exec "${BED_PREFIX}host" python3 "$OUT/create.py" "$(bed_stor_addr 1)" "$PORT" "$TOKEN" "$T" \
	"$LUNS" "$BED_SHARED" | tee "$OUT/create.log" | sed 's/^/    /' >&2
create_s=$(sed -n 's/^total //p' "$OUT/create.log")
[ -n "$create_s" ] || bed_die "the LUNs were not all created (see $OUT/create.log)"
if kill -0 "$SESSION" 2>/dev/null; then
	bed_log "the host session read on through the whole creation"
else
	bed_log "the host session ended during the creation: $(tr '\r' '\n' <"$OUT/session.log" | tail -n 2)"
fi
kill "$SESSION" 2>/dev/null
wait "$SESSION" 2>/dev/null

# ---------------------------------------------------------------- visible
gen=$(ha_gen 1)
all_hold() { local k; for k in 1 2 3; do [ "$(ha_gen "$k")" = "$gen" ] || return 1; done; }
bed_poll 120 "every node at generation $gen" all_hold || bed_log "not every node holds generation $gen"
n2=$(bed_host curl -s -H "Authorization: Bearer $TOKEN" "$URL2/api/v1/targets/$T/luns" | jq '.items | length')
bed_log "through node 2: $n2 LUNs listed"

# ---------------------------------------------------------------- list
lists=()
for _ in 1 2 3 4 5; do
	lists+=("$(bed_host curl -s -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $TOKEN" \
		"$URL1/api/v1/targets/$T/luns")")
done
list_ms=$(printf '%s\n' "${lists[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] * 1000 }')
bed_log "list of $LUNS LUNs: ${lists[*]} s (median $list_ms ms)"

# ---------------------------------------------------------------- load
LUN0="iscsi://$(bed_portal 1)/$BED_HA_IQN/0"
perf() { # perf FILE SECONDS
	ip netns exec "${BED_PREFIX}host" iscsi-perf -t "$2" -m 16 -b 8 -r "$LUN0" >"$1" 2>&1 || return 1
	tr '\r' '\n' <"$1" | sed -n 's/.*iops average \([0-9]*\).*/\1/p' | tail -n 1
}
HALF=$(((SECS + 1) / 2))
alone1=$(perf "$OUT/perf-alone-1.log" "$HALF")
cat >"$OUT/paths.lua" <<EOF
local paths = { "/api/v1/cluster", "/api/v1/targets", "/api/v1/device-groups", "/metrics" }
local i = 0
request = function()
	i = i + 1
	return wrk.format("GET", paths[(i % #paths) + 1], { ["Authorization"] = "Bearer $TOKEN" })
end
EOF
ip netns exec "${BED_PREFIX}host" nice -n 19 wrk -t 2 -c 64 -d "${SECS}s" --timeout 10s --latency \
	-s "$OUT/paths.lua" "$URL1" >"$OUT/wrk.log" 2>&1 &
WRK=$!
with=$(perf "$OUT/perf-with.log" "$SECS")
wait "$WRK"
alone2=$(perf "$OUT/perf-alone-2.log" "$HALF")
alone=$(awk -v a="${alone1:-0}" -v b="${alone2:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%d", (a + b) / 2 }')
p99=$(awk '$1 == "99%" { v = $2; if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } print v }' "$OUT/wrk.log")
grep -E 'Requests/sec|Non-2xx|Socket errors' "$OUT/wrk.log" | sed 's/^/    wrk: /' >&2
ratio=$(awk -v a="${alone:-0}" -v w="${with:-0}" 'BEGIN { if (a > 0) printf "%.3f", w / a; else print "?" }')
bed_log "iscsi-perf: alone ${alone1:-?} IOPS before and ${alone2:-?} after (mean ${alone:-?}), beside wrk ${with:-?} IOPS"
ha_stop_daemons >/dev/null 2>&1
echo "api: $LUNS LUNs in ${create_s} s; list ${list_ms} ms; wrk p99 ${p99:-?} ms; iscsi-perf with/without API load: $ratio"
