#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# api.metrics: a real Prometheus server scrapes the isergw-api of all three
# nodes of the HA bed (docs/metrics.md).
#
#   api_metrics.sh --isergwd PATH --isergwctl PATH --ha PATH --api PATH
#                  --prefix P --subnet S --scratch DIR
#
# 1. three nodes with the example configuration; isergw-api in every node on
#    its storage address (10.S.2.K:8080), reporting device groups dg1-dg3,
#    scrapes allowed to a read-only token;
# 2. Prometheus in the host namespace, with that token (credentials_file),
#    scraping the three every second and loading deploy/prometheus's rules;
# 3. iscsi-perf reads LUN 0 through node 1 for 15 s; a scrape of node 1
#    taken during the I/O passes `promtool check metrics`;
# 4. PromQL over Prometheus's HTTP API: up = 1 for the three targets, a
#    non-zero read rate, a p99 read latency from the device group histogram (a number of
#    seconds between 0 and 10), isergw_cluster_quorate = 1 on every node,
#    group 1 Active/Optimized for dg1 on every node;
# 5. n1 drained: every node's isergw_alua_state shows another group
#    Active/Optimized for dg1 and group 1 not, and the planned moves counted;
#    undrained;
# 6. every rule of the group healthy; Prometheus and the APIs stop with 0.
# Exit 77 when not root, or without corosync, prometheus or promtool (unless
# CI=true, where their absence fails).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

API=
ha_options 4,27 --api API -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --api "$API" isergw-api
for t in curl jq iscsi-perf prometheus promtool; do
	if ! command -v "$t" >/dev/null; then
		[ "${CI:-}" = true ] && bed_die "$t not found (deploy/install-deps.sh)"
		bed_log "$t not found: skipped"
		exit 77
	fi
done
DEPLOY=$(cd "$here/../../deploy/prometheus" && pwd)
OUT=$SCRATCH/metrics
rm -rf "$OUT"
mkdir -p "$OUT"
PORT=8080
PROM_PORT=9090

ha_cluster_up || bed_die "the cluster did not come up"

# 1. isergw-api in every node, a read-only token for Prometheus
"$API" token add --token-file "$OUT/tokens" --name prometheus --role read-only >"$OUT/prom.tok" ||
	bed_die "isergw-api token add failed"
chmod 600 "$OUT/prom.tok"
for k in 1 2 3; do
	_bed_spawn "$k" api "$SCRATCH/n$k/api.log" "$API" --listen "$(bed_stor_addr "$k"):$PORT" \
		--ha-socket /run/isergw/ha.sock --isergwd-socket /run/isergw/isergwd.sock \
		--token-file "$OUT/tokens" --device-group dg1 --device-group dg2 --device-group dg3 ||
		bed_die "isergw-api did not start on node $k"
	bed_poll 20 "isergw-api on node $k answers" bed_host curl -sf -o /dev/null \
		"http://$(bed_stor_addr "$k"):$PORT/healthz" || bed_die "isergw-api on node $k does not answer"
done

# 2. Prometheus in the host namespace
cat >"$OUT/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $DEPLOY/isergw-alerts.yml
scrape_configs:
  - job_name: isergw
    scrape_timeout: 1s
    authorization:
      credentials_file: $OUT/prom.tok
    static_configs:
      - targets: ['$(bed_stor_addr 1):$PORT', '$(bed_stor_addr 2):$PORT', '$(bed_stor_addr 3):$PORT']
EOF
ha_check "promtool check config" promtool check config "$OUT/prometheus.yml" >/dev/null
PROM=http://$BED_HOST_ADDR:$PROM_PORT
# (ip netns exec, not the bed_host function: the pid must be prometheus's own)
ip netns exec "${BED_PREFIX}host" prometheus --config.file="$OUT/prometheus.yml" --storage.tsdb.path="$OUT/prom-data" \
	--web.listen-address="$BED_HOST_ADDR:$PROM_PORT" --log.level=warn >"$OUT/prometheus.log" 2>&1 &
PROM_PID=$!
prom_ready() { [ "$(bed_host curl -s -o /dev/null -w '%{http_code}' "$PROM/-/ready")" = 200 ]; }
bed_poll 60 "prometheus ready" prom_ready || { tail -n 20 "$OUT/prometheus.log" >&2; bed_die "no prometheus"; }

# query PROMQL: the first result's value ("" when none)
query() {
	bed_host curl -s --max-time 10 -G "$PROM/api/v1/query" --data-urlencode "query=$1" >"$OUT/q.json" ||
		return 1
	jq -r 'if .status == "success" and (.data.result | length) > 0 then .data.result[0].value[1] else "" end' \
		"$OUT/q.json"
}
is() { [ "$(query "$1")" = "$2" ]; }
# positive PROMQL: its value is a number above 0 (and below $2 when given)
positive() { query "$1" >/dev/null && awk -v v="$(query "$1")" -v max="${2:-}" \
	'BEGIN { exit !(v != "" && v != "NaN" && v + 0 > 0 && (max == "" || v + 0 < max + 0)) }'; }

# 3. I/O through node 1, a scrape taken during it
LUN0="iscsi://$(bed_portal 1)/$BED_HA_IQN/0"
ip netns exec "${BED_PREFIX}host" iscsi-perf -t 15 -m 4 -b 8 "$LUN0" >"$OUT/perf.log" 2>&1 &
PERF_PID=$!
reads_seen() {
	bed_host curl -s -H "Authorization: Bearer $(cat "$OUT/prom.tok")" \
		"http://$(bed_stor_addr 1):$PORT/metrics" >"$OUT/scrape.txt" &&
		awk '$1 ~ /^isergw_lun_commands_total\{.*op="read"/ && $2 > 100 { f = 1 } END { exit !f }' \
			"$OUT/scrape.txt"
}
ha_check "node 1's scrape counts the reads" bed_poll 30 "reads in node 1's scrape" reads_seen
ha_check "promtool check metrics on node 1's scrape during I/O" promtool check metrics <"$OUT/scrape.txt"

# 4. PromQL
ha_check "up = 1 for the three targets" bed_poll 30 "3 targets up" is 'count(up{job="isergw"} == 1)' 3
ha_check "a read rate above 0" bed_poll 30 "read rate" \
	positive 'sum(rate(isergw_lun_commands_total{job="isergw",op="read"}[5s]))'
ha_check "a p99 read latency from the histogram (0..10 s)" bed_poll 30 "p99" positive \
	'histogram_quantile(0.99, sum by (le) (rate(isergw_device_group_latency_seconds_bucket{job="isergw",op="read"}[10s])))' 10
bed_log "PromQL: read rate $(query 'sum(rate(isergw_lun_commands_total{job="isergw",op="read"}[5s]))')/s," \
	"p99 $(query 'histogram_quantile(0.99, sum by (le) (rate(isergw_device_group_latency_seconds_bucket{job="isergw",op="read"}[10s])))') s"
ha_check "isergw_cluster_quorate = 1 on the three nodes" bed_poll 30 "quorate everywhere" \
	is 'count(isergw_cluster_quorate{job="isergw"} == 1)' 3
AO='isergw_alua_state{job="isergw",device_group="dg1",state="active_optimized"'
ha_check "group 1 Active/Optimized for dg1 on the three nodes" bed_poll 30 "dg1 on group 1" \
	is "count($AO,tpg_id=\"1\"} == 1)" 3

# the I/O ends before the drain (iscsi-perf stops at the first command that
# does not end GOOD: the drain's Transitioning and unit attentions would be
# retried by a host, not by it)
wait "$PERF_PID"
ha_check "iscsi-perf ran without error" [ $? -eq 0 ]
ha_check "iscsi-perf reported its rate" grep -q "iops average" "$OUT/perf.log"

# 5. drain n1: the ALUA state change in Prometheus
planned0=$(query 'sum(isergw_cluster_planned_moves_total{job="isergw"})')
ha_check "drain n1" bed_cli 1 cluster drain n1 >/dev/null
ha_check "dg1's group 1 not Active/Optimized on any node" bed_poll 30 "group 1 off" \
	is "count($AO,tpg_id=\"1\"} == 1) or vector(0)" 0
ha_check "another group Active/Optimized for dg1 on the three nodes" bed_poll 30 "dg1 elsewhere" \
	is "count($AO,tpg_id!=\"1\"} == 1)" 3
ha_check "the planned moves counted" bed_poll 30 "planned moves" \
	positive "sum(isergw_cluster_planned_moves_total{job=\"isergw\"}) - ${planned0:-0}"
ha_check "undrain n1" bed_cli 1 cluster undrain n1 >/dev/null
ha_check "group 1 Active/Optimized for dg1 again" bed_poll 30 "dg1 back" \
	is "count($AO,tpg_id=\"1\"} == 1)" 3

# 6. the rules, the end
rules_ok() {
	bed_host curl -s --max-time 10 "$PROM/api/v1/rules" >"$OUT/rules.json" &&
		[ "$(jq -r '[.data.groups[].rules[] | .health] | unique | join(",")' "$OUT/rules.json")" = ok ]
}
ha_check "every alerting rule healthy" bed_poll 30 "rules evaluated" rules_ok
kill -TERM "$PROM_PID"
wait "$PROM_PID"
ha_check "prometheus stopped with status 0" [ $? -eq 0 ]
for k in 1 2 3; do
	ha_check "isergw-api on node $k stops with status 0" _bed_stop "$k" api
done
ha_stop_daemons

if [ "$fail" -ne 0 ]; then
	bed_log "api.metrics: FAILED"
	exit 1
fi
bed_log "api.metrics: Prometheus scraped three nodes: reads, p99, quorum and a drain's ALUA change"
exit 0
