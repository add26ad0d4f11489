#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# /metrics at scale: isergwd standalone with N LUNs (default 10,000) that all
# had I/O, and the size and render time of isergw-api's scrape. Not a ctest
# test: it measures, it asserts no time.
#
#   tests/bench/metrics_scale.sh [--build DIR] [--client PATH] [--luns N]
#                                [--device-groups K] [--renders R]
#                                [--base-build DIR] [--scratch DIR]
#
# --build DIR (default build/) holds bin/isergwd, bin/isergw-api, bin/isergwctl
# and tests/integration/ctl_client (--client overrides it). One target with N
# LUNs (0..N-1) on sparse files of 1 MiB, in K device groups (default 16;
# LUN l in dg(l mod K)), 2 reactors, portal tcp://127.0.0.180:13660. ctl_client
# --mode luns logs in once and sends every LUN a READ(10) (unit attentions
# cleared first). Then, for isergw-api with --metrics-cache-ms 0 (every scrape
# renders) on 127.0.0.180:13661, by default and with --per-lun-histograms:
#   first   the first scrape (its time, curl's time_total);
#   render  the median of R more scrapes (default 5);
#   bytes, samples (lines not starting with #), series of LUN latency;
# and with the default cache (--metrics-cache-ms 250): a scrape right after
# one, answered from the cache. Also the time of 'isergwctl counters --json'
# (GetCounters with every LUN's buckets, printed as JSON) as an upper bound of
# what isergwd spends answering.
# --base-build DIR: the same with that build's isergwd and isergw-api (e.g.
# the code before a change, built apart), by default only (an isergw-api
# without --per-lun-histograms is measured so only).
# Last lines: "metrics: BUILD MODE: first X s, render Y s, Z bytes, S samples".
# Logs under the scratch directory (default /tmp/isergw-bench-metrics).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/../integration/lib.sh"

BUILD=build
CLIENT=
LUNS=10000
DGS=16
RENDERS=5
BASE=
SCRATCH=/tmp/isergw-bench-metrics
ADDR=127.0.0.180
PORT=13660
HTTP_PORT=13661
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--client) CLIENT=$2; shift 2 ;;
	--luns) LUNS=$2; shift 2 ;;
	--device-groups) DGS=$2; shift 2 ;;
	--renders) RENDERS=$2; shift 2 ;;
	--base-build) BASE=$2; shift 2 ;;
	--scratch) SCRATCH=$2; shift 2 ;;
	-h | --help) awk 'NR > 2 { if (!/^#/) exit; print }' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[[ $LUNS =~ ^[0-9]+$ && $LUNS -ge 1 && $LUNS -le 16384 ]] || die "--luns wants 1..16384"
[[ $DGS =~ ^[0-9]+$ && $DGS -ge 1 && $DGS -le 255 ]] || die "--device-groups wants 1..255"
[[ $RENDERS =~ ^[0-9]+$ && $RENDERS -ge 1 ]] || die "--renders wants a number >= 1"
CLIENT=${CLIENT:-$BUILD/tests/integration/ctl_client}
for b in "$BUILD/bin/isergwd" "$BUILD/bin/isergw-api" "$BUILD/bin/isergwctl" "$CLIENT" \
	${BASE:+"$BASE/bin/isergwd" "$BASE/bin/isergw-api"}; do
	[ -x "$b" ] || die "no $b"
done
for t in curl python3; do
	command -v "$t" >/dev/null || die "$t not found (deploy/install-deps.sh)"
done
# isergwd holds a file descriptor per LUN: as many as allowed, at least LUNs + 1024
nofile=$((LUNS * 2 + 4096))
hard=$(ulimit -Hn)
[ "$hard" != unlimited ] && [ "$hard" -lt "$nofile" ] && nofile=$hard
if [ "$nofile" -lt $((LUNS + 1024)) ] || ! ulimit -n "$nofile"; then
	die "cannot raise the open files limit to $((LUNS + 1024)) (hard limit $hard)"
fi
mkdir -p "$SCRATCH/luns" || die "cannot create $SCRATCH"
SCRATCH=$(cd "$SCRATCH" && pwd)
IQN=iqn.2026-11.org.isergw:metrics-scale
CFG=$SCRATCH/isergwd.json
SOCK=$SCRATCH/state/ctl.sock

python3 - "$CFG" "$SCRATCH" "$ADDR" "$PORT" "$IQN" "$LUNS" "$DGS" <<'PY' || die "cannot write $CFG"
import json, sys
cfg, scratch, addr, port, iqn, luns, dgs = sys.argv[1:]
luns, dgs = int(luns), int(dgs)
doc = {
    "reactors": 2,
    "log_level": "notice",
    "state_dir": scratch + "/state",
    "ctl_socket": scratch + "/state/ctl.sock",
    "portals": [{"url": "tcp://%s:%s" % (addr, port), "rel_port_id": 1, "tpg_id": 1}],
    "device_groups": [{"name": "dg%d" % i} for i in range(dgs)],
    "targets": [{"iqn": iqn, "luns": [
        {"lun": l, "path": "%s/luns/lun%05d.img" % (scratch, l), "size": "1M",
         "device_group": "dg%d" % (l % dgs)} for l in range(luns)]}],
}
with open(cfg, "w") as f:
    json.dump(doc, f)
PY

RESULTS=()

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# scrape OUT: curl's time_total and bytes
scrape() {
	curl -sS -o "$1" -w '%{time_total} %{size_download}\n' --max-time 60 \
		"http://$ADDR:$HTTP_PORT/metrics"
}

# measure NAME BUILD-DIR [API ARGS...]: isergw-api started on isergwd's
# socket, its scrapes measured, stopped
measure() {
	local name=$1 dir=$2 first render bytes samples lunlat up cached t
	shift 2
	API_LOG=$SCRATCH/api-$name.log
	"$dir/bin/isergw-api" --listen "$ADDR:$HTTP_PORT" --isergwd-socket "$SOCK" \
		--isergwd-timeout-ms 10000 --metrics-cache-ms 0 "$@" >"$API_LOG" 2>&1 &
	API_PID=$!
	_LIB_DAEMONS+=("$API_PID isergw-api")
	wait_port "$API_PID" "$ADDR" "$HTTP_PORT" 10 || die "isergw-api did not start: $(tail -n 5 "$API_LOG")"
	read -r first bytes < <(scrape "$SCRATCH/m-$name.txt")
	for _ in $(seq 1 "$RENDERS"); do
		scrape "$SCRATCH/m-$name.txt" | cut -d' ' -f1
	done >"$SCRATCH/t-$name.txt"
	render=$(median <"$SCRATCH/t-$name.txt")
	samples=$(grep -vc '^#' "$SCRATCH/m-$name.txt")
	lunlat=$(grep -c '^isergw_lun_latency_seconds_count' "$SCRATCH/m-$name.txt")
	up=$(awk '$1 == "isergw_up" { print $2 }' "$SCRATCH/m-$name.txt")
	if command -v promtool >/dev/null; then
		if promtool check metrics <"$SCRATCH/m-$name.txt" >"$SCRATCH/promtool-$name.txt" 2>&1 &&
			[ ! -s "$SCRATCH/promtool-$name.txt" ]; then
			log "$name: promtool check metrics: clean"
		else
			log "$name: promtool check metrics: $(head -n 3 "$SCRATCH/promtool-$name.txt")"
		fi
	fi
	kill -TERM "$API_PID"
	wait "$API_PID"
	_lib_forget "$API_PID"
	# the default cache: the second of two scrapes in a row is the first's text
	"$dir/bin/isergw-api" --listen "$ADDR:$HTTP_PORT" --isergwd-socket "$SOCK" \
		--isergwd-timeout-ms 10000 "$@" >>"$API_LOG" 2>&1 &
	API_PID=$!
	_LIB_DAEMONS+=("$API_PID isergw-api")
	wait_port "$API_PID" "$ADDR" "$HTTP_PORT" 10 || die "isergw-api did not start"
	scrape "$SCRATCH/c-$name.txt" >/dev/null
	read -r cached t < <(scrape "$SCRATCH/c-$name.txt")
	kill -TERM "$API_PID"
	wait "$API_PID"
	_lib_forget "$API_PID"
	RESULTS+=("metrics: $name: first $first s, render $render s (median of $RENDERS), cached $cached s, $bytes bytes, $samples samples, $lunlat LUN latency series, isergw_up $up")
	log "${RESULTS[-1]}"
}

# run NAME BUILD-DIR OPT-IN: isergwd with the LUNs, I/O to each, the scrapes
run() {
	local name=$1 dir=$2 optin=$3 gw start
	rm -rf "$SCRATCH/state"
	mkdir -p "$SCRATCH/state"
	port_open "$ADDR" "$PORT" && die "$ADDR:$PORT is in use"
	log "$name: starting isergwd with $LUNS LUNs in $DGS device groups"
	start=$SECONDS
	"$dir/bin/isergwd" --config "$CFG" >"$SCRATCH/isergwd-$name.log" 2>&1 &
	gw=$!
	_LIB_DAEMONS+=("$gw isergw")
	wait_port "$gw" "$ADDR" "$PORT" 300 || die "isergwd did not start: $(tail -n 5 "$SCRATCH/isergwd-$name.log")"
	log "$name: isergwd serves after $((SECONDS - start)) s; a READ to each LUN"
	start=$SECONDS
	"$CLIENT" --url "iscsi://$ADDR:$PORT/$IQN/0" --initiator iqn.2026-11.org.isergw:metrics-scale \
		--mode luns --luns "$LUNS" >"$SCRATCH/client-$name.txt" 2>&1 ||
		die "ctl_client: $(tail -n 3 "$SCRATCH/client-$name.txt")"
	log "$name: $(cat "$SCRATCH/client-$name.txt") in $((SECONDS - start)) s"
	if [ "$dir" = "$BUILD" ]; then
		local ts te
		ts=$(date +%s.%N)
		"$dir/bin/isergwctl" --socket "$SOCK" counters --json >"$SCRATCH/counters.json" ||
			log "isergwctl counters failed"
		te=$(date +%s.%N)
		RESULTS+=("metrics: $name: isergwctl counters --json (every LUN's buckets): $(awk -v a="$ts" -v b="$te" 'BEGIN { printf "%.3f", b - a }') s, $(wc -c <"$SCRATCH/counters.json") bytes of JSON")
		log "${RESULTS[-1]}"
	fi
	measure "$name-default" "$dir"
	[ "$optin" = 1 ] && measure "$name-per-lun-histograms" "$dir" --per-lun-histograms
	target_stop "$gw" "$SCRATCH/isergwd-$name.log" || log "$name: isergwd did not stop cleanly"
}

run new "$BUILD" 1
if [ -n "$BASE" ]; then
	optin=0
	"$BASE/bin/isergw-api" --help 2>&1 | grep -q -- --per-lun-histograms && optin=1
	run base "$BASE" "$optin"
fi
printf '%s\n' "${RESULTS[@]}"
