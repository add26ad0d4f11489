#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A real Prometheus server scrapes isergw-api, which reads a real isergwd:
#   - deploy/prometheus: `promtool check config` on the example configuration,
#     `promtool check rules` and `promtool test rules` on the alerting rules;
#   - a libiscsi client sends a known number of READ(10)s; Prometheus (its
#     own configuration and storage in the scratch directory, on loopback,
#     scraping every second, loading deploy/prometheus/isergw-alerts.yml)
#     is asked over its HTTP API: up of the job is 1, isergw_up is 1, the
#     LUN's read counter equals the one in a scrape of our own (and at least
#     what the client sent), a p99 read latency comes out of the histogram,
#     the rule group is loaded with every rule healthy, and no rule is
#     pending or firing on this healthy node;
#   - everything stops cleanly (isergw-api and isergwd exit 0).
#
#   api_prometheus.sh --api PATH --client PATH [--daemon PATH] [--scratch DIR]
#                     [--addr A] [--port P] [--http-port H] [--prom-port Q]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"
# shellcheck source=tests/integration/api_lib.sh
. "$here/api_lib.sh"

API=
CLIENT=
ADDR=127.0.0.121
PORT=13530
HTTP_PORT=13531
PROM_PORT=13532
DEPLOY=$(cd "$here/../../deploy/prometheus" && pwd)
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--api) API=$2; shift 2 ;;
	--client) CLIENT=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--http-port) HTTP_PORT=$2; shift 2 ;;
	--prom-port) PROM_PORT=$2; shift 2 ;;
	-h|--help) sed -n '3,17p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ -x "${API:-/nonexistent}" ] || die "--api PATH (isergw-api) is required"
[ -x "${CLIENT:-/nonexistent}" ] || die "--client PATH (ctl_client) is required"
only_isergw "isergw-api"
need_tool curl curl
need_tool jq jq
need_tool promtool prometheus
need_tool prometheus prometheus
export LSAN_OPTIONS="suppressions=$here/ctl-lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

IQN=iqn.2026-11.org.isergw:prom
PROM=http://$ADDR:$PROM_PORT
rm -rf "$SCRATCH"/*.img "$SCRATCH"/*.txt "$SCRATCH"/*.out "$SCRATCH"/*.json "$SCRATCH/prom-data"

FAILS=0
PASSES=0
ok() { PASSES=$((PASSES + 1)); log "PASS $*"; }
bad() { FAILS=$((FAILS + 1)); log "FAIL $*"; }
expect() { if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1: got '$2', want '$3'"; fi; }

# ---- the deployment files
if out=$(promtool check config "$DEPLOY/prometheus.yml" 2>&1); then
	ok "promtool check config deploy/prometheus/prometheus.yml"
else
	bad "promtool check config: $out"
fi
# the rules in the file, counted apart from promtool
NRULES=$(grep -c '^ *- alert: ' "$DEPLOY/isergw-alerts.yml")
if out=$(promtool check rules "$DEPLOY/isergw-alerts.yml" 2>&1) && grep -q "SUCCESS: $NRULES rules found" <<<"$out"; then
	ok "promtool check rules: $NRULES rules"
else
	bad "promtool check rules: $out"
fi
if out=$(cd "$DEPLOY" && promtool test rules isergw-alerts.test.yml 2>&1); then
	ok "promtool test rules"
else
	bad "promtool test rules: $out"
fi

# ---- isergwd, isergw-api, some reads
target_start isergwd "$IQN" "$SCRATCH/lun.img" 64M "$PORT" "$ADDR" || die "isergwd did not start"
GW_PID=$T_PID
GW_LOG=$T_LOG
api_start api "$ADDR:$HTTP_PORT" "$SCRATCH/state/ctl.sock" || die "isergw-api did not start"
READS=50
"$CLIENT" --url "iscsi://$ADDR:$PORT/$IQN/0" --initiator iqn.2026-11.org.isergw:prom-count \
	--mode count --reads $READS --writes 0 >"$SCRATCH/count.out" 2>&1 ||
	bad "ctl_client count: $(cat "$SCRATCH/count.out")"
http GET /metrics "$SCRATCH/m.txt" >/dev/null
READ_NOW=$(metric "$SCRATCH/m.txt" "isergw_lun_commands_total{target=\"$IQN\",lun=\"0\",op=\"read\"}")
if [ -n "$READ_NOW" ] && [ "$READ_NOW" -ge "$READS" ]; then ok "our scrape: $READ_NOW reads"; else bad "our scrape: reads '$READ_NOW', want at least $READS"; fi

# ---- Prometheus, scraping every second
cat >"$SCRATCH/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $DEPLOY/isergw-alerts.yml
scrape_configs:
  - job_name: isergw
    scrape_timeout: 1s
    static_configs:
      - targets: ['$ADDR:$HTTP_PORT']
EOF
port_open "$ADDR" "$PROM_PORT" && die "$ADDR:$PROM_PORT is already in use"
log "starting prometheus on $ADDR:$PROM_PORT"
prometheus --config.file="$SCRATCH/prometheus.yml" --storage.tsdb.path="$SCRATCH/prom-data" \
	--web.listen-address="$ADDR:$PROM_PORT" --log.level=warn >"$SCRATCH/prometheus.log" 2>&1 &
PROM_PID=$!
_LIB_DAEMONS+=("$PROM_PID prometheus")
ready=
for _ in $(seq 1 600); do    # until it is ready (at most 60 s)
	kill -0 "$PROM_PID" 2>/dev/null || break
	if [ "$(curl -s -o /dev/null -w '%{http_code}' "$PROM/-/ready")" = 200 ]; then ready=1; break; fi
	sleep 0.1
done
[ -n "$ready" ] || { tail -n 20 "$SCRATCH/prometheus.log" >&2; die "prometheus did not become ready"; }
ok "prometheus ready"

# query PROMQL: the value of the first result ("" when there is none)
query() {
	curl -s --max-time 10 -G "$PROM/api/v1/query" --data-urlencode "query=$1" >"$SCRATCH/q.json" || return
	jq -r 'if .status == "success" and (.data.result | length) > 0 then .data.result[0].value[1] else "" end' \
		"$SCRATCH/q.json"
}
# until QUERY WANT: poll (at most 60 s) until the query answers WANT
until_value() {
	local v=
	for _ in $(seq 1 300); do
		v=$(query "$1")
		[ "$v" = "$2" ] && break
		sleep 0.2
	done
	expect "PromQL $1" "$v" "$2"
}
until_value 'up{job="isergw"}' 1
until_value 'isergw_up{job="isergw"}' 1
until_value "isergw_lun_commands_total{job=\"isergw\",target=\"$IQN\",lun=\"0\",op=\"read\"}" "$READ_NOW"
p99=$(query "histogram_quantile(0.99, sum by (le) (isergw_device_group_latency_seconds_bucket{device_group=\"default\",op=\"read\"}))")
if awk -v v="$p99" 'BEGIN { exit !(v + 0 > 0 && v + 0 < 10) }' && [ "$p99" != NaN ]; then
	ok "p99 read latency from the histogram: $p99 s"
else
	bad "p99 read latency: '$p99'"
fi
expect "PromQL isergw_build_info" "$(query 'count(isergw_build_info{job="isergw"})')" 1
# the alerting rules are loaded and evaluate without error
curl -s --max-time 10 "$PROM/api/v1/rules" >"$SCRATCH/rules.json"
expect "rule group isergw loaded" \
	"$(jq -r '[.data.groups[] | select(.name == "isergw") | .rules | length] | add' "$SCRATCH/rules.json")" "$NRULES"
health=
for _ in $(seq 1 100); do    # every rule evaluated at least once (1 s interval)
	curl -s --max-time 10 "$PROM/api/v1/rules" >"$SCRATCH/rules.json"
	health=$(jq -r '[.data.groups[].rules[] | .health] | unique | join(",")' "$SCRATCH/rules.json")
	[ "$health" = ok ] && break
	sleep 0.2
done
expect "every rule healthy" "$health" ok
expect "no alert pending or firing on a healthy node" "$(jq -r '[.data.groups[].rules[] | select(.state != "inactive")] | length' "$SCRATCH/rules.json")" 0

# ---- stop
kill -TERM "$PROM_PID"
wait "$PROM_PID"
expect "prometheus stopped" "$?" 0
_lib_forget "$PROM_PID"
if api_stop; then ok "isergw-api: SIGTERM, exit 0"; else bad "isergw-api stop"; fi
if target_stop "$GW_PID" "$GW_LOG"; then ok "isergwd stopped with status 0"; else bad "isergwd stop"; fi

echo "api-prometheus: $PASSES passed, $FAILS failed"
[ "$FAILS" -eq 0 ]
