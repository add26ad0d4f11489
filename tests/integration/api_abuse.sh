#!/usr/bin/env bash
# shellcheck disable=SC2015 # ok() never fails: A && ok || bad is an if-else
# SPDX-License-Identifier: Apache-2.0
#
# isergw-api under abuse (docs/api.md, Limits and Errors), standalone beside
# a real isergwd, clients bound to 127.0.0.131-134 (api_abuse.py):
#   1. 128 connections that send part of a request and half-close: the
#      server closes every one (it sees the end), and a probe meanwhile is
#      answered within 1 s (a functional bound; its latency is printed);
#   2. a client's keep-alive connection with a token, then 127 connections
#      holding part of a request (4 addresses, the default limits: the table
#      is full): a probe is answered within 1 s, idle connections making
#      room, those without a token first (the client's connection, idle
#      longest, still answers);
#   3. 16 requests being answered (a second isergw-api, --max-connections 16,
#      whose HA agent accepts and never answers): a probe is answered on a
#      place kept for the probes; another request there gets 503;
#   4. 10,000 connections opened and dropped (nothing, part of a request, a
#      reset) from 8 threads: a probe answered within 1 s afterwards; the
#      log names at most 20 of them every 10 s and counts the others, and
#      so for libmicrohttpd's own line on each one closed half-way;
#   5. a FIFO as --token-file: the start refused at once (exit 78, err line);
#      replaced by a FIFO and SIGHUP: err line, the old tokens kept, SIGTERM
#      still stops it (exit 0);
#   6. a TLS key of mode 0644: the start refused (exit 78, its reason);
#   7. two Authorization headers: 400;
#   8. a LUN number of 2^64 (and 2^63): 422, field lun, the number as sent;
#      every 422 carries field (not an object, an unknown field, a wrong
#      type, isergwd's validator);
#   9. bytes that are not UTF-8 in a path (/api/v1/targets/%ff%fe, /x%ff%fe)
#      and in headers (If-Match, Content-Length): every problem document is
#      valid UTF-8 JSON;
#  10. isergw_start_time_seconds the same in two scrapes; SIGTERM: exit 0.
#
#   api_abuse.sh --api PATH --daemon PATH [--scratch DIR] [--addr A]
#                [--port P] [--only N,N...]
#   P: isergwd's portal, P+1..P+3 HTTP; --only: those steps alone
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"
# shellcheck source=tests/integration/api_lib.sh
. "$here/api_lib.sh"

API=
ADDR=127.0.0.130
PORT=13600
FROM=127.0.0.131,127.0.0.132,127.0.0.133,127.0.0.134
ONLY=''
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--api) API=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	-h|--help) sed -n '4,34p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
only_isergw "isergw-api abuse"
[ -x "$API" ] || die "--api PATH (isergw-api) required"
need_tool curl curl
need_tool python3 python3
need_tool jq jq
need_tool openssl openssl
CLIENT=(python3 "$here/api_abuse.py" --from "$FROM")
HTTP=$ADDR:$((PORT + 1))        # the standalone isergw-api
BUSY=$ADDR:$((PORT + 2))        # the one whose agent never answers
ONCE=$ADDR:$((PORT + 3))        # starts that must be refused
T=iqn.2026-11.org.isergw:abuse
U=http://$HTTP/api/v1
CFG=$SCRATCH/isergwd.json
fail=0
ok() { log "ok: $*"; }
bad() { log "FAILED: $*"; fail=1; }
step() { [ -z "$ONLY" ] || [[ ,$ONLY, == *",$1,"* ]]; }
AGENT_PID=''
trap '[ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null; lib_cleanup 2>/dev/null' EXIT
rm -rf "$SCRATCH/state" "$SCRATCH"/*.img "$SCRATCH"/*.out "$SCRATCH"/*tokens "$SCRATCH"/*.sock
mkdir -p "$SCRATCH/state"

cat >"$CFG" <<JSON
{
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "$T", "luns": [ { "lun": 0, "path": "$SCRATCH/l0.img", "size": "1M" } ] } ]
}
JSON
chmod 600 "$CFG"
config_start abuse "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
"$API" token add --token-file "$SCRATCH/tokens" --name abuse --role admin >"$SCRATCH/admin.tok" \
	2>/dev/null || die "isergw-api token add failed"
TOKEN=$(cat "$SCRATCH/admin.tok")
AUTH="Authorization: Bearer $TOKEN"
api_start api "$HTTP" "$SCRATCH/state/ctl.sock" --config "$CFG" --token-file "$SCRATCH/tokens" \
	--metrics-cache-ms 0 --log-level notice || die "isergw-api did not start"
MAIN_PID=$API_PID
MAIN_LOG=$API_LOG

# ---- 1. half-closed partial requests
step_1() {
	if "${CLIENT[@]}" --server "$HTTP" halfclose 128; then ok "half-closed connections"
	else bad "half-closed connections"; fi
}

# ---- 2. the table full of idle partial requests
step_2() {
	if "${CLIENT[@]}" --server "$HTTP" --token "$TOKEN" held 128; then ok "a full table of idle connections"
	else bad "a full table of idle connections"; fi
}

# ---- 3. every connection busy answering: the probes' places
step_3() {
	# an HA agent that takes every call and answers none
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(256)
held = []
while True:
    held.append(s.accept()[0])
' "$SCRATCH/silent-agent.sock" &
	AGENT_PID=$!
	for _ in $(seq 50); do [ -S "$SCRATCH/silent-agent.sock" ] && break; sleep 0.1; done
	api_start busy "$BUSY" "$SCRATCH/state/ctl.sock" --ha-socket "$SCRATCH/silent-agent.sock" \
		--ha-timeout-ms 60000 --token-file "$SCRATCH/tokens" --max-connections 16 \
		--max-request-rate 0 --log-level notice || die "the second isergw-api did not start"
	if "${CLIENT[@]}" --server "$BUSY" --token "$TOKEN" busy 16 /api/v1/cluster; then
		ok "the probes' places"
	else
		bad "the probes' places"
	fi
	api_stop || bad "the second isergw-api: SIGTERM with 16 requests at the agent"
	kill "$AGENT_PID" 2>/dev/null
	AGENT_PID=''
	API_PID=$MAIN_PID
	API_LOG=$MAIN_LOG
}

# ---- 4. 10,000 connections opened and dropped
step_4() {
	local lines
	if "${CLIENT[@]}" --server "$HTTP" flood 10000; then ok "10,000 dropped connections"
	else bad "10,000 dropped connections"; fi
	# not one line each: 20 every 10 s, then a line counting the others, written
	# when the window ends even if no connection comes after the flood (12 s)
	for _ in $(seq 120); do
		grep -q "more connections closed without a request" "$MAIN_LOG" && break
		sleep 0.1
	done
	lines=$(grep -c "closed without a request that could be answered (" "$MAIN_LOG")
	if [ "$lines" -lt 1000 ] && grep -q "more connections closed without a request" "$MAIN_LOG"
	then ok "the dropped connections logged in $lines lines, the rest counted"
	else bad "the dropped connections: $lines lines of their own, $(grep -c "more connections closed" "$MAIN_LOG") counting"; fi
	# libmicrohttpd's line on each connection closed half-way: as limited
	for _ in $(seq 30); do
		grep -q "more lines about single connections" "$MAIN_LOG" && break
		sleep 0.1
	done
	lines=$(grep -cE "http: (Connection was closed by remote side|Connection socket is closed|Socket has been disconnected)" "$MAIN_LOG")
	if [ "$lines" -lt 1000 ] && grep -q "more lines about single connections" "$MAIN_LOG"; then
		ok "libmicrohttpd's lines on them: $lines, then $(grep -m1 -o "[0-9]* more lines about single connections" "$MAIN_LOG")"
	else
		bad "libmicrohttpd's lines on the dropped connections: $lines written, $(grep -c "more lines about single" "$MAIN_LOG") counting"
	fi
}

# ---- 5. a FIFO as the token file
step_5() {
	mkfifo "$SCRATCH/fifo.tokens"
	timeout 10 "$API" --listen "$ONCE" --isergwd-socket "$SCRATCH/state/ctl.sock" \
		--token-file "$SCRATCH/fifo.tokens" >"$SCRATCH/fifo.out" 2>&1
	rc=$?
	if [ "$rc" = 78 ] && grep -q "err .*fifo.tokens: a FIFO, not a regular file" "$SCRATCH/fifo.out"; then
		ok "a FIFO token file refused at start (exit 78)"
	else
		bad "a FIFO token file at start: exit $rc (124: hung), $(tail -n 2 "$SCRATCH/fifo.out")"
	fi
	cp "$SCRATCH/tokens" "$SCRATCH/hup.tokens"
	api_start hup "$ONCE" "$SCRATCH/state/ctl.sock" --token-file "$SCRATCH/hup.tokens" ||
		die "isergw-api (SIGHUP) did not start"
	rm -f "$SCRATCH/hup.tokens"
	mkfifo "$SCRATCH/hup.tokens"
	kill -HUP "$API_PID"
	for _ in $(seq 50); do grep -q "hup.tokens: a FIFO" "$API_LOG" && break; sleep 0.1; done
	if grep -q "err .*hup.tokens: a FIFO, not a regular file (the tokens read before stay in use)" \
		"$API_LOG"; then ok "a FIFO token file refused on SIGHUP"
	else bad "a FIFO token file on SIGHUP: $(tail -n 2 "$API_LOG")"; fi
	c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H "$AUTH" "http://$ONCE/api/v1/nope")
	[ "$c" = 404 ] && ok "the tokens read before stay in use" || bad "after SIGHUP: $c (want 404)"
	_lib_forget "$API_PID"
	kill -TERM "$API_PID"
	for _ in $(seq 100); do kill -0 "$API_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$API_PID" 2>/dev/null
	wait "$API_PID"
	rc=$?
	[ "$rc" = 0 ] && ok "SIGTERM after that SIGHUP: exit 0" ||
		bad "SIGTERM after that SIGHUP: exit $rc (137: it had to be killed)"
	API_PID=$MAIN_PID
	API_LOG=$MAIN_LOG
}

# ---- 6. a TLS key others can read
step_6() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-keyout "$SCRATCH/api.key" -out "$SCRATCH/api.pem" -subj /CN=abuse 2>/dev/null ||
		die "openssl req failed"
	chmod 644 "$SCRATCH/api.key"
	timeout 10 "$API" --listen "$ONCE" --isergwd-socket "$SCRATCH/state/ctl.sock" \
		--tls-cert "$SCRATCH/api.pem" --tls-key "$SCRATCH/api.key" >"$SCRATCH/key.out" 2>&1
	rc=$?
	if [ "$rc" = 78 ] && grep -q "err .*api.key: mode 0644 lets others read or write it" "$SCRATCH/key.out"
	then ok "a TLS key of mode 0644 refused (exit 78)"
	else bad "a TLS key of mode 0644: exit $rc (124: it served), $(tail -n 2 "$SCRATCH/key.out")"; fi
}

# ---- 7. two Authorization headers
step_7() {
	c=$(curl -s -o "$SCRATCH/two.out" -w '%{http_code}' --max-time 5 -H "$AUTH" \
		-H "Authorization: Bearer isergw_x_y" "$U/targets")
	[ "$c" = 400 ] && ok "two Authorization headers: 400" ||
		bad "two Authorization headers: $c $(head -c 200 "$SCRATCH/two.out")"
}

# ---- 8. numbers past 64 bits, and every 422 with a field
step_8() {
	# post BODY: the status, the answer in $SCRATCH/post.out
	post() {
		curl -s -o "$SCRATCH/post.out" -w '%{http_code}' --max-time 10 -X POST -H "$AUTH" \
			-H 'Content-Type: application/json' --data-binary "$1" "$U/targets/$T/luns"
	}
	c=$(post '{"lun": 18446744073709551616, "path": "/nonexistent/x.img", "size": "1M"}')
	d=$(jq -r .detail "$SCRATCH/post.out" 2>/dev/null)
	f=$(jq -r '.field // "(none)"' "$SCRATCH/post.out" 2>/dev/null)
	if [ "$c" = 422 ] && [ "$f" = lun ] && [[ $d == *"18446744073709551615 or more"* ]]; then
		ok "LUN 2^64: 422 $d"
	else
		bad "LUN 2^64: $c field $f: $d"
	fi
	c=$(post '{"lun": 9223372036854775808, "path": "/nonexistent/x.img", "size": "1M"}')
	d=$(jq -r .detail "$SCRATCH/post.out" 2>/dev/null)
	[ "$c" = 422 ] && [[ $d == "lun: 9223372036854775808 is out of range"* ]] &&
		ok "LUN 2^63: 422 $d" || bad "LUN 2^63: $c $d"
	for body in '[1]' '"x"' '{"lun": 1, "colour": "red"}' '{"lun": "1", "path": "/x"}' \
		"{\"lun\": 1, \"path\": \"$SCRATCH/l1.img\", \"size\": \"1M\", \"block_size\": 1000}"; do
		c=$(post "$body")
		if [ "$c" = 422 ] && jq -e 'has("field")' "$SCRATCH/post.out" >/dev/null 2>&1; then
			ok "422 with field '$(jq -r .field "$SCRATCH/post.out")': $body"
		else
			bad "$body: $c without a field: $(head -c 300 "$SCRATCH/post.out")"
		fi
	done
}

# ---- 9. bytes that are not UTF-8 in paths and headers
step_9() {
	# utf8_json FILE WHAT: FILE is a problem document in valid UTF-8 JSON
	utf8_json() {
		if python3 -c '
import json, sys
doc = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", errors="strict"))
assert doc["status"] >= 400 and isinstance(doc["detail"], str), doc
print(doc["status"], doc["detail"])
' "$1" >"$1.check" 2>&1; then
			ok "$2: $(cat "$1.check")"
		else
			bad "$2: not valid UTF-8 JSON: $(tail -n 1 "$1.check"), $(head -c 200 "$1" | od -c | head -n 3)"
		fi
	}
	curl -s -o "$SCRATCH/p1.out" --max-time 5 -H "$AUTH" "$U/targets/%ff%fe"
	utf8_json "$SCRATCH/p1.out" "GET /api/v1/targets/%ff%fe"
	curl -s -o "$SCRATCH/p2.out" --max-time 5 -H "$AUTH" "http://$HTTP/x%ff%fe%c3"
	utf8_json "$SCRATCH/p2.out" "GET /x%ff%fe%c3"
	curl -s -o "$SCRATCH/p3.out" --max-time 5 -X PATCH -H "$AUTH" -H $'If-Match: "g1\xff\xfe"' \
		-H 'Content-Type: application/json' --data-binary '{"alias": "a"}' "$U/targets/$T"
	utf8_json "$SCRATCH/p3.out" "If-Match with bytes that are not UTF-8"
	curl -s -o "$SCRATCH/p4.out" --max-time 5 -X DELETE -H "$AUTH" -H $'If-Match: \xc0\xaf\xed\xa0\x80' \
		"$U/targets/$T/luns/0"
	utf8_json "$SCRATCH/p4.out" "If-Match with an overlong '/' and a surrogate"
}

# ---- 10. the start time, twice
step_10() {
	curl -s --max-time 5 -H "$AUTH" -o "$SCRATCH/m1.out" "http://$HTTP/metrics"
	sleep 0.05
	curl -s --max-time 5 -H "$AUTH" -o "$SCRATCH/m2.out" "http://$HTTP/metrics"
	s1=$(metric "$SCRATCH/m1.out" isergw_start_time_seconds)
	s2=$(metric "$SCRATCH/m2.out" isergw_start_time_seconds)
	[ -n "$s1" ] && [ "$s1" = "$s2" ] && ok "isergw_start_time_seconds $s1 in both scrapes" ||
		bad "isergw_start_time_seconds: '$s1' then '$s2'"
}

for n in 1 2 3 4 5 6 7 8 9 10; do
	if step "$n"; then "step_$n"; fi
done

api_stop || bad "isergw-api: SIGTERM"
if ! step 2; then
	:
elif grep -q "connection limits reached" "$MAIN_LOG"; then
	ok "log: $(grep -m1 "connection limits reached" "$MAIN_LOG" | cut -c1-200)"
else
	bad "no line says the connection limits were reached"
fi
[ "$fail" = 0 ] || { log "FAILED (logs in $SCRATCH)"; exit 1; }
log "PASS"
