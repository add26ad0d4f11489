#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# isergw-api against a real isergwd (a 64 MiB LUN on a file):
#   - --help names every option, bad options exit 78 (EX_CONFIG);
#   - /healthz 200, /readyz 200 naming isergwd's pid;
#   - /metrics passes `promtool check metrics` (not one line of output), and
#     exactly the READ(10)s and WRITE(10)s a libiscsi client sent move the
#     LUN's and the target port's command and byte samples and the port's
#     and the device group's latency counts; no LUN histogram by default;
#     a session held open (reading all along) shows in isergw_sessions and
#     isergw_connections, and that scrape too is clean for promtool; an
#     unknown --device-group is left out;
#     isergw_api_requests_total counts the requests this script made;
#   - HEAD /metrics 200 without a body; 401 (no --token-file: a path no route
#     serves needs a token none has) and 405 (with Allow) as RFC 9457
#     problem documents; a garbage request line 400, headers of 100 KiB 431,
#     each with a log line; the API keeps answering;
#   - isergwd frozen (SIGSTOP): /readyz 503 "no answer within the timeout",
#     isergw_up 0, /healthz 200; running again (SIGCONT): /readyz 200;
#   - isergw-api restarted with --per-lun-histograms: the LUN's latency
#     histogram, 24 cumulative buckets, its counts those of its device group,
#     clean for promtool;
#   - isergwd stopped: /readyz 503 (problem document), /metrics isergw_up 0
#     and still clean for promtool;
#   - SIGTERM: isergw-api exits 0 (in the ASan tree: no sanitizer report).
#
#   api_metrics.sh --api PATH --client PATH [--daemon PATH] [--scratch DIR]
#                  [--addr A] [--port P] [--http-port H]
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
ADDR=127.0.0.120
PORT=13520
HTTP_PORT=13521
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--api) API=$2; shift 2 ;;
	--client) CLIENT=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--http-port) HTTP_PORT=$2; shift 2 ;;
	-h|--help) sed -n '3,20p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ -x "${API:-/nonexistent}" ] || die "--api PATH (isergw-api) is required"
[ -x "${CLIENT:-/nonexistent}" ] || die "--client PATH (ctl_client) is required"
only_isergw "isergw-api"
need_tool curl curl
need_tool jq jq
need_tool promtool prometheus
# ASan tree: a libiscsi leak in the client when its connection is dropped
export LSAN_OPTIONS="suppressions=$here/ctl-lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

IQN=iqn.2026-11.org.isergw:api
URL=iscsi://$ADDR:$PORT/$IQN/0
L='target="'$IQN'",lun="0"'
P='rel_port_id="1",tpg_id="1"'
G='device_group="default"'
rm -f "$SCRATCH"/*.img "$SCRATCH"/*.txt "$SCRATCH"/*.out "$SCRATCH"/*.hdr

FAILS=0
PASSES=0
ok() { PASSES=$((PASSES + 1)); log "PASS $*"; }
bad() { FAILS=$((FAILS + 1)); log "FAIL $*"; }
# expect DESC ACTUAL WANTED
expect() { if [ "$2" = "$3" ]; then ok "$1 ($2)"; else bad "$1: got '$2', want '$3'"; fi; }

scrape() { # scrape FILE: GET /metrics, 200, then promtool
	local code
	code=$(http GET /metrics "$1")
	expect "GET /metrics" "$code" 200
	grep -qi '^content-type: text/plain; version=0.0.4' "$1.hdr" ||
		bad "GET /metrics: content type $(grep -i '^content-type' "$1.hdr")"
	if promtool_clean "$1"; then ok "promtool check metrics on ${1##*/}"; else bad "promtool on $1"; fi
}

# ---- the command line
if "$API" --help >"$SCRATCH/help.out" 2>&1; then ok "--help exits 0"; else bad "--help exit status"; fi
for o in --listen --isergwd-socket --isergwd-timeout-ms --device-group --threads --max-connections \
	--idle-timeout --log-level --nice --metrics-cache-ms --per-lun-histograms --help --version; do
	grep -q -- "$o" "$SCRATCH/help.out" || bad "--help does not describe $o"
done
"$API" --no-such-option >/dev/null 2>&1
expect "an unknown option" "$?" 78
"$API" --listen 127.0.0.1 >/dev/null 2>&1
expect "--listen without a port" "$?" 78
"$API" --listen "$ADDR:$HTTP_PORT" --isergwd-timeout-ms 20 >/dev/null 2>&1
expect "--isergwd-timeout-ms out of range" "$?" 78

target_start isergwd "$IQN" "$SCRATCH/lun.img" 64M "$PORT" "$ADDR" || die "isergwd did not start"
GW_PID=$T_PID
GW_LOG=$T_LOG
SOCK=$SCRATCH/state/ctl.sock
# a device group isergwd does not know is left out of the scrape, not an error
api_start api "$ADDR:$HTTP_PORT" "$SOCK" --device-group nosuch --metrics-cache-ms 0 || die "isergw-api did not start"

# ---- probes
expect "GET /healthz" "$(http GET /healthz "$SCRATCH/h.out")" 200
expect "/healthz body" "$(jq -r .status "$SCRATCH/h.out")" alive
expect "GET /readyz" "$(http GET /readyz "$SCRATCH/r.out")" 200
expect "/readyz names isergwd's pid" "$(jq -r .isergwd_pid "$SCRATCH/r.out")" "$GW_PID"

# ---- counters move by exactly the commands a client sent
scrape "$SCRATCH/m0.txt"
expect "isergw_up" "$(metric "$SCRATCH/m0.txt" isergw_up)" 1
expect "isergw_targets" "$(metric "$SCRATCH/m0.txt" isergw_targets)" 1
expect "isergw_build_info" "$(grep -c '^isergw_build_info{version="[0-9.]*"} 1$' "$SCRATCH/m0.txt")" 1
val() { local v; v=$(metric "$1" "$2"); echo "${v:-0}"; }
r0=$(val "$SCRATCH/m0.txt" "isergw_lun_commands_total{$L,op=\"read\"}")
w0=$(val "$SCRATCH/m0.txt" "isergw_lun_commands_total{$L,op=\"write\"}")
rb0=$(val "$SCRATCH/m0.txt" "isergw_lun_read_bytes_total{$L}")
wb0=$(val "$SCRATCH/m0.txt" "isergw_lun_written_bytes_total{$L}")
pr0=$(val "$SCRATCH/m0.txt" "isergw_port_commands_total{$P,op=\"read\"}")
pl0=$(val "$SCRATCH/m0.txt" "isergw_port_latency_seconds_count{$P,op=\"write\"}")
gl0=$(val "$SCRATCH/m0.txt" "isergw_device_group_latency_seconds_count{$G,op=\"write\"}")
READS=37
WRITES=23
"$CLIENT" --url "$URL" --initiator iqn.2026-11.org.isergw:api-count --mode count \
	--reads $READS --writes $WRITES >"$SCRATCH/count.out" 2>&1 || bad "ctl_client count: $(cat "$SCRATCH/count.out")"
scrape "$SCRATCH/m1.txt"
d() { echo $(($(val "$SCRATCH/m1.txt" "$1") - $2)); }
expect "LUN reads moved by the READs sent" "$(d "isergw_lun_commands_total{$L,op=\"read\"}" "$r0")" $READS
expect "LUN writes moved by the WRITEs sent" "$(d "isergw_lun_commands_total{$L,op=\"write\"}" "$w0")" $WRITES
expect "LUN read bytes" "$(d "isergw_lun_read_bytes_total{$L}" "$rb0")" $((READS * 4096))
expect "LUN written bytes" "$(d "isergw_lun_written_bytes_total{$L}" "$wb0")" $((WRITES * 4096))
expect "port 1 reads" "$(d "isergw_port_commands_total{$P,op=\"read\"}" "$pr0")" $READS
expect "port write latency count" "$(d "isergw_port_latency_seconds_count{$P,op=\"write\"}" "$pl0")" $WRITES
expect "device group write latency count" \
	"$(d "isergw_device_group_latency_seconds_count{$G,op=\"write\"}" "$gl0")" $WRITES
expect "device group write latency +Inf bucket = count" \
	"$(val "$SCRATCH/m1.txt" "isergw_device_group_latency_seconds_bucket{$G,op=\"write\",le=\"+Inf\"}")" \
	"$(val "$SCRATCH/m1.txt" "isergw_device_group_latency_seconds_count{$G,op=\"write\"}")"
# the buckets are cumulative: never decreasing with le
if awk -v p="isergw_device_group_latency_seconds_bucket{$G,op=\"read\"," 'index($1, p) == 1 {
	if (n++ && $2 < last) bad = 1; last = $2 } END { exit bad || n != 24 }' "$SCRATCH/m1.txt"; then
	ok "device group read latency: 24 cumulative buckets"
else
	bad "device group read latency buckets not 24 or not cumulative"
fi
expect "no LUN latency histogram by default" "$(grep -c '^isergw_lun_latency_seconds' "$SCRATCH/m1.txt")" 0
expect "no errors on the LUN" "$(val "$SCRATCH/m1.txt" "isergw_lun_errors_total{$L,status=\"check_condition\"}")" 0
expect "an unknown --device-group left out" "$(grep -c 'device_group="nosuch"' "$SCRATCH/m1.txt")" 0
expect "ALUA state of the default group" \
	"$(val "$SCRATCH/m1.txt" 'isergw_alua_state{device_group="default",tpg_id="1",state="active_optimized"}')" 1

# ---- a session held open: the session and connection gauges
"$CLIENT" --url "$URL" --initiator iqn.2026-11.org.isergw:api-hold --mode hold >"$SCRATCH/hold.out" 2>&1 &
HOLD_PID=$!
_LIB_DAEMONS+=("$HOLD_PID client")
sessions=
for _ in $(seq 1 300); do    # until the login shows (at most 30 s)
	http GET /metrics "$SCRATCH/m2.txt" >/dev/null
	sessions=$(metric "$SCRATCH/m2.txt" 'isergw_sessions{transport="tcp",type="normal"}')
	[ "$sessions" = 1 ] && break
	kill -0 "$HOLD_PID" 2>/dev/null || break
	sleep 0.1
done
expect "isergw_sessions tcp normal with a client logged in" "$sessions" 1
# a scrape taken during I/O (the client reads a block every 20 ms)
if promtool_clean "$SCRATCH/m2.txt"; then ok "promtool check metrics during I/O"; else bad "promtool on m2.txt"; fi
expect "isergw_connections tcp" "$(metric "$SCRATCH/m2.txt" 'isergw_connections{transport="tcp"}')" 1
expect "isergw_connections_refused_total (none refused)" \
	"$(metric "$SCRATCH/m2.txt" 'isergw_connections_refused_total')" 0
expect "isergw_sessions iser" "$(metric "$SCRATCH/m2.txt" 'isergw_sessions{transport="iser",type="normal"}')" 0
kill -TERM "$HOLD_PID"
wait "$HOLD_PID"
rc=$?
expect "hold client ended cleanly" "$rc" 0
[ "$rc" -eq 0 ] || sed 's/^/hold client: /' "$SCRATCH/hold.out" >&2
_lib_forget "$HOLD_PID"

# ---- HTTP: HEAD, 404, 405, malformed requests
code=$(curl -sS -I -o "$SCRATCH/head.out" -w '%{http_code} %{size_download}' --max-time 10 "$API_URL/metrics")
expect "HEAD /metrics: 200, no body" "$code" "200 0"
# no --token-file: every path but the probes and /metrics needs a token none has
# (the 404 of a path no route serves is checked with a token in api_security.sh)
expect "GET /nope" "$(http GET /nope "$SCRATCH/nf.out")" 401
if grep -qi '^content-type: application/problem+json' "$SCRATCH/nf.out.hdr"; then ok "401 is application/problem+json"; else bad "401 content type: $(grep -i '^content-type' "$SCRATCH/nf.out.hdr")"; fi
expect "401 problem" "$(jq -c '[.type, .title, .status]' "$SCRATCH/nf.out")" '["about:blank","Unauthorized",401]'
expect "401 detail" "$(jq -r .detail "$SCRATCH/nf.out")" "no tokens are configured (isergw-api --token-file): /nope cannot be reached"
expect "POST /metrics" "$(http POST /metrics "$SCRATCH/na.out" --data x=1)" 405
expect "405 Allow" "$(tr -d '\r' <"$SCRATCH/na.out.hdr" | awk -F': ' 'tolower($1) == "allow" { print $2 }')" "GET, HEAD"
expect "405 problem" "$(jq -c '[.title, .status]' "$SCRATCH/na.out")" '["Method Not Allowed",405]'
expect "DELETE /healthz" "$(http DELETE /healthz "$SCRATCH/na2.out")" 405

# raw_request BYTES: the status line isergw-api answers a raw request with
raw_request() {
	python3 - "$ADDR" "$HTTP_PORT" "$1" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.sendall(sys.argv[3].encode().decode('unicode_escape').encode('latin-1'))
data = b''
try:
    while b'\r\n' not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except OSError:
    pass
print(data.split(b'\r\n')[0].decode('latin-1'))
PY
}
need_tool python3 python3
expect "garbage request line" "$(raw_request 'GARBAGE GARBAGE\r\n\r\n')" "HTTP/1.1 400 Bad Request"
expect "binary request line" "$(raw_request '\x01\x02\x03 / HTTP/1.1\r\nHost: x\r\n\r\n')" "HTTP/1.1 400 Bad Request"
big=$(head -c 100000 /dev/zero | tr '\0' a)
expect "headers of 100 KiB" "$(http GET /healthz "$SCRATCH/big.out" -H "X-Big: $big")" 431
if grep -q 'warn   http: refused a request: HTTP 400' "$API_LOG"; then ok "log line for the 400"; else bad "no log line for the 400"; fi
if grep -q 'warn   http: refused a request: HTTP 431' "$API_LOG"; then ok "log line for the 431"; else bad "no log line for the 431"; fi
if grep -q 'warn   http: refused a request from 127.0.0.1:[0-9]*: its method is not an HTTP token' "$API_LOG"; then ok "log line for the binary method"; else bad "no log line for the binary method"; fi
if grep -q 'notice http: connection from 127.0.0.1:[0-9]* closed without a request' "$API_LOG"; then ok "log line naming the peer"; else bad "no log line naming the peer of a refused request"; fi
expect "still serving after bad input" "$(http GET /healthz "$SCRATCH/h2.out")" 200

# ---- the API's own counters: what this script asked so far
scrape "$SCRATCH/m3.txt"
expect "requests counted: /healthz 200" "$(metric "$SCRATCH/m3.txt" 'isergw_api_requests_total{route="/healthz",code="200"}')" 2
expect "requests counted: /readyz 200" "$(metric "$SCRATCH/m3.txt" 'isergw_api_requests_total{route="/readyz",code="200"}')" 1
expect "requests counted: other 401" "$(metric "$SCRATCH/m3.txt" 'isergw_api_requests_total{route="other",code="401"}')" 1
expect "requests counted: /metrics 405" "$(metric "$SCRATCH/m3.txt" 'isergw_api_requests_total{route="/metrics",code="405"}')" 1
expect "requests counted: other 400 (binary method)" "$(metric "$SCRATCH/m3.txt" 'isergw_api_requests_total{route="other",code="400"}')" 1
expect "requests counted: /healthz 405" "$(metric "$SCRATCH/m3.txt" 'isergw_api_requests_total{route="/healthz",code="405"}')" 1
expect "duration count = requests of /readyz" \
	"$(metric "$SCRATCH/m3.txt" 'isergw_api_request_duration_seconds_count{route="/readyz"}')" 1

# ---- isergwd hangs (SIGSTOP): answers within the deadline, /healthz unaffected
kill -STOP "$GW_PID"
expect "GET /readyz with isergwd stopped by SIGSTOP" "$(http GET /readyz "$SCRATCH/rhang.out")" 503
if jq -r .detail "$SCRATCH/rhang.out" | grep -q 'no answer within the timeout'; then
	ok "503 detail: no answer within the timeout"
else
	bad "503 detail: $(jq -r .detail "$SCRATCH/rhang.out")"
fi
http GET /metrics "$SCRATCH/mhang.txt" >/dev/null
expect "isergw_up while isergwd hangs" "$(metric "$SCRATCH/mhang.txt" isergw_up)" 0
expect "GET /healthz while isergwd hangs" "$(http GET /healthz "$SCRATCH/hhang.out")" 200
kill -CONT "$GW_PID"
expect "GET /readyz once isergwd runs again" "$(http GET /readyz "$SCRATCH/rback.out")" 200

# ---- --per-lun-histograms: the LUN's latency histogram too
if api_stop; then ok "isergw-api: SIGTERM, exit 0"; else bad "isergw-api stop"; fi
api_start api-lun "$ADDR:$HTTP_PORT" "$SOCK" --metrics-cache-ms 0 --per-lun-histograms ||
	die "isergw-api --per-lun-histograms did not start"
scrape "$SCRATCH/m5.txt"
for op in read write; do
	# the only LUN: its histogram is the device group's
	expect "LUN $op latency count = the device group's" \
		"$(val "$SCRATCH/m5.txt" "isergw_lun_latency_seconds_count{$L,op=\"$op\"}")" \
		"$(val "$SCRATCH/m5.txt" "isergw_device_group_latency_seconds_count{$G,op=\"$op\"}")"
	expect "LUN $op latency +Inf bucket = count" \
		"$(val "$SCRATCH/m5.txt" "isergw_lun_latency_seconds_bucket{$L,op=\"$op\",le=\"+Inf\"}")" \
		"$(val "$SCRATCH/m5.txt" "isergw_lun_latency_seconds_count{$L,op=\"$op\"}")"
done
if awk -v p="isergw_lun_latency_seconds_bucket{$L,op=\"read\"," 'index($1, p) == 1 {
	if (n++ && $2 < last) bad = 1; last = $2 } END { exit bad || n != 24 }' "$SCRATCH/m5.txt"; then
	ok "LUN read latency: 24 cumulative buckets"
else
	bad "LUN read latency buckets not 24 or not cumulative"
fi
expect "one LUN histogram family" "$(grep -c '^# TYPE isergw_lun_latency_seconds histogram$' "$SCRATCH/m5.txt")" 1
expect "the device group histogram still there" \
	"$(grep -c "^isergw_device_group_latency_seconds_count{$G,op=" "$SCRATCH/m5.txt")" 2

# ---- isergwd stops: not ready, isergw_up 0
if target_stop "$GW_PID" "$GW_LOG"; then ok "isergwd stopped with status 0"; else bad "isergwd stop"; fi
expect "GET /readyz without isergwd" "$(http GET /readyz "$SCRATCH/r503.out")" 503
if grep -qi '^content-type: application/problem+json' "$SCRATCH/r503.out.hdr"; then ok "503 is application/problem+json"; else bad "503 content type"; fi
expect "503 problem" "$(jq -c '[.title, .status]' "$SCRATCH/r503.out")" '["Service Unavailable",503]'
if jq -r .detail "$SCRATCH/r503.out" | grep -q "$SOCK"; then ok "503 detail names the socket"; else bad "503 detail: $(jq -r .detail "$SCRATCH/r503.out")"; fi
scrape "$SCRATCH/m4.txt"
expect "isergw_up without isergwd" "$(metric "$SCRATCH/m4.txt" isergw_up)" 0
expect "no LUN samples without isergwd" "$(grep -c '^isergw_lun_' "$SCRATCH/m4.txt")" 0
expect "GET /healthz without isergwd" "$(http GET /healthz "$SCRATCH/h3.out")" 200

# ---- SIGTERM
if api_stop; then ok "isergw-api: SIGTERM, exit 0"; else bad "isergw-api stop"; fi
if grep -q 'notice main: stopped' "$API_LOG"; then ok "isergw-api logged its stop"; else bad "no stop line"; fi

echo "api-metrics: $PASSES passed, $FAILS failed"
[ "$FAILS" -eq 0 ]
