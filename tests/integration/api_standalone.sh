#!/usr/bin/env bash
# shellcheck disable=SC2015 # pass() never fails: A && pass || bad is an if-else
# SPDX-License-Identifier: Apache-2.0
#
# isergw-api standalone (--config FILE, no HA agent; docs/api.md, Standalone)
# against isergwd run from FILE:
#
#   1. GET targets and LUNs from the file; the cluster's resources are 404;
#   2. an ACL with CHAP, mutual CHAP on the target, discovery CHAP, each a
#      201/200 whose answer holds no secret; the file holds them (mode kept,
#      no temporary file left), isergwd runs them: a libiscsi login with the
#      ACL's CHAP and mutual CHAP passes, a wrong secret fails, discovery
#      needs its CHAP;
#   3. ETag and If-Match (412 on a stale tag; a file edited by hand changes
#      the tag), unknown fields and isergwd's validator 422 naming the field,
#      nothing written;
#   4. a LUN grown by PATCH with a session open (grow_probe): the file
#      extended, the session kept, 6/2A/09 on its next command; a smaller size
#      422;
#   5. sessions: listed, one shown, DELETE drops it (204), then 404; a
#      second isergw-api on the same file, ten ACLs POSTed at once through
#      both: all 201, all ten in the file;
#   6. deletes (ACL, discovery CHAP) 204; SIGTERM: both exit 0.
#   7. a LUN whose file does not exist: 201, its GET shows status failed
#      with the reason, the LUN 0 beside it online; isergwd logs the failure
#      once although two more writes reload its configuration; DELETE 204.
#
#   api_standalone.sh --api PATH --probe PATH [--daemon PATH] [--scratch DIR]
#                     [--addr A] [--port P] [--http-port H] [--http-port2 H2]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

ADDR=127.0.0.123
PORT=13550
HTTP_PORT=13551
HTTP_PORT2=13552
API=''
PROBE=''
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--port) PORT=$2; shift 2 ;;
	--http-port) HTTP_PORT=$2; shift 2 ;;
	--http-port2) HTTP_PORT2=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--api) API=$2; shift 2 ;;
	--probe) PROBE=$2; shift 2 ;;
	-h|--help) sed -n '4,26p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
only_isergw "isergw-api standalone"
[ -x "$API" ] || die "--api PATH (isergw-api) required"
[ -x "$PROBE" ] || die "--probe PATH (grow_probe) required"
for t in iscsi-inq iscsi-ls curl jq; do
	command -v "$t" >/dev/null || { log "SKIP: $t not found"; exit 77; }
done

T=iqn.2026-11.org.isergw:standalone
HOST=iqn.2026-11.org.isergw:standalone-host
CFG=$SCRATCH/isergwd.json
U=http://$ADDR:$HTTP_PORT/api/v1
rm -rf "$SCRATCH"/*.img "$SCRATCH/state" "$SCRATCH/go"
mkdir -p "$SCRATCH/state"
fail=0
pass() { log "ok: $*"; }
bad() { log "FAILED: $*"; fail=1; }
API_PID=''
API2_PID=''
PROBE_PID=''
trap 'for p in "$PROBE_PID" "$API_PID" "$API2_PID"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done; lib_cleanup 2>/dev/null' EXIT

cat >"$CFG" <<JSON
{
  "log_level": "info",
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "$T", "luns": [ { "lun": 0, "path": "$SCRATCH/s0.img", "size": "4M" } ] } ]
}
JSON
chmod 600 "$CFG"
config_start standalone "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
rm -f "$SCRATCH/tokens"
"$API" token add --token-file "$SCRATCH/tokens" --name sa --role admin >"$SCRATCH/admin.tok" 2>/dev/null ||
	die "isergw-api token add failed"
AUTH="Authorization: Bearer $(cat "$SCRATCH/admin.tok")"
"$API" --listen "$ADDR:$HTTP_PORT" --isergwd-socket "$SCRATCH/state/ctl.sock" --config "$CFG" \
	--isergwd-timeout-ms 5000 \
	--token-file "$SCRATCH/tokens" --log-level info >"$SCRATCH/api.log" 2>&1 &
API_PID=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://$ADDR:$HTTP_PORT/healthz" && break; sleep 0.1; done

# req CODE METHOD PATH [BODY] [CURL-ARGS...]: the status must be CODE; the body in $SCRATCH/body
req() {
	local want=$1 m=$2 p=$3 data=${4:-} got
	shift 3
	[ $# -gt 0 ] && shift
	local args=(-s -X "$m" -o "$SCRATCH/body" -D "$SCRATCH/headers" -w '%{http_code}' -H "$AUTH")
	[ -n "$data" ] && args+=(-H 'Content-Type: application/json' --data-binary "$data")
	got=$(curl "${args[@]}" "$@" "$U$p")
	if [ "$got" != "$want" ]; then
		bad "$m $p: $got (want $want) $(head -c 300 "$SCRATCH/body")"
		return 1
	fi
	pass "$m $p $got"
}
hdr() { grep -i "^$1:" "$SCRATCH/headers" | head -n 1 | cut -d' ' -f2- | tr -d '\r'; }
field() { jq -r '.field // ""' "$SCRATCH/body"; }
no_secret() { if grep -q 'secret' "$SCRATCH/body"; then bad "$1: the answer shows a secret"; fi; }

# ---- 1.
req 200 GET /targets
[ "$(jq -r '.items[0].iqn' "$SCRATCH/body")" = "$T" ] || bad "the targets are not the file's"
req 200 GET "/targets/$T/luns/0"
req 404 GET /cluster
req 404 GET /nodes/x/portals

# ---- 2.
S_HOST=standalone-host-secret
S_TGT=standalone-target-secret
S_DISC=standalone-discovery-secret
req 201 POST "/targets/$T/acls" "{\"initiator\": \"$HOST\", \"chap\": {\"user\": \"host\", \"secret\": \"$S_HOST\"}}"
[ "$(hdr Location)" = "/api/v1/targets/$T/acls/$HOST" ] || bad "Location: $(hdr Location)"
no_secret "POST acls"
req 200 PATCH "/targets/$T" "{\"chap\": {\"user\": \"any\", \"secret\": \"standalone-any-secret\"}, \"mutual_chap\": {\"user\": \"tgt\", \"secret\": \"$S_TGT\"}, \"alias\": \"sa\"}"
no_secret "PATCH target"
req 200 PUT /discovery-chap "{\"user\": \"disc\", \"secret\": \"$S_DISC\"}"
[ "$(jq -c . "$SCRATCH/body")" = '{"user":"disc"}' ] || bad "PUT discovery-chap: $(cat "$SCRATCH/body")"
req 200 GET "/targets/$T/acls"
no_secret "GET acls"
grep -q "$S_HOST" "$CFG" && grep -q "$S_TGT" "$CFG" && grep -q "$S_DISC" "$CFG" &&
	pass "the file holds the secrets" || bad "the file lacks a secret"
[ "$(stat -c %a "$CFG")" = 600 ] && pass "the file stays 0600" || bad "the file is $(stat -c %a "$CFG")"
ls "$SCRATCH"/isergwd.json.tmp* >/dev/null 2>&1 && bad "a temporary file was left"
inq() {
	local want=$1 what=$2 url=$3 rc
	timeout --kill-after=5 20 iscsi-inq -i "$HOST" "$url" </dev/null >"$SCRATCH/inq.out" 2>&1
	rc=$?
	if { [ "$want" = ok ] && [ "$rc" -eq 0 ]; } || { [ "$want" = fail ] && [ "$rc" -ne 0 ] && [ "$rc" -lt 124 ]; }; then
		pass "$what (status $rc)"
	else
		bad "$what: iscsi-inq status $rc, expected $want: $(tail -n 2 "$SCRATCH/inq.out" | paste -sd' ')"
	fi
}
MUT="?target_user=tgt&target_password=$S_TGT"
inq ok "login with the ACL's CHAP and mutual CHAP" "iscsi://host%$S_HOST@$ADDR:$PORT/$T/0$MUT"
inq fail "login with a wrong CHAP secret" "iscsi://host%wrong-secret-123@$ADDR:$PORT/$T/0$MUT"
inq fail "login expecting another target secret" "iscsi://host%$S_HOST@$ADDR:$PORT/$T/0?target_user=tgt&target_password=other-secret-12"
got=$(timeout 20 iscsi-ls -i "$HOST" "iscsi://disc%$S_DISC@$ADDR:$PORT" </dev/null 2>&1 | sed -n 's/^Target:\([^ ]*\) .*/\1/p' | sort -u)
[ "$got" = "$T" ] && pass "discovery with its CHAP lists $T" || bad "discovery with its CHAP: '$got'"
got=$(timeout 20 iscsi-ls -i "$HOST" "iscsi://$ADDR:$PORT" </dev/null 2>&1 | sed -n 's/^Target:\([^ ]*\) .*/\1/p')
[ -z "$got" ] && pass "discovery without CHAP lists nothing" || bad "discovery without CHAP: '$got'"

# ---- 3.
req 200 GET /config
etag=$(hdr ETag)
no_secret "GET config"
before=$(md5sum <"$CFG")
req 412 PATCH "/targets/$T" '{"alias": "x"}' -H 'If-Match: "g1"'
req 422 PATCH "/targets/$T" '{"colour": "red"}'
[ "$(field)" = colour ] || bad "unknown field: field '$(field)'"
req 422 PATCH "/targets/$T/luns/0" '{"block_size": 1000}'
[ "$(field)" = block_size ] || bad "isergwd's validator: field '$(field)'"
req 422 POST "/targets/$T/acls" '{"initiator": "Not An IQN"}'
[ "$(md5sum <"$CFG")" = "$before" ] && pass "refused writes left the file alone" || bad "a refused write changed the file"
req 200 PATCH "/targets/$T" '{"alias": "sa2"}' -H "If-Match: $etag"
etag=$(hdr ETag)
req 200 GET /config
[ "$(hdr ETag)" = "$etag" ] && pass "the ETag of a write is the file's" || bad "ETag $(hdr ETag) after a write answered $etag"
sed -i 's/"sa2"/"sa3"/' "$CFG"
req 412 PATCH "/targets/$T" '{"alias": "sa4"}' -H "If-Match: $etag"

# ---- 4.
rm -f "$SCRATCH/go"
mkfifo "$SCRATCH/go"
# emptied here, not by a redirection of the background job (which runs later):
# the wait below must not find the "ready" of an earlier probe
: >"$SCRATCH/probe.out"
: >"$SCRATCH/probe.err"
"$PROBE" "iscsi://host%$S_HOST@$ADDR:$PORT/$T/0" "$HOST" <>"$SCRATCH/go" >>"$SCRATCH/probe.out" 2>>"$SCRATCH/probe.err" &
PROBE_PID=$!
wait_log "$SCRATCH/probe.out" '^ready$' 20 || bad "grow_probe did not log in: $(cat "$SCRATCH/probe.err")"
req 422 PATCH "/targets/$T/luns/0" '{"size": "2M"}'
[ "$(field)" = size ] || bad "shrink: field '$(field)'"
req 200 GET /sessions
[ "$(jq '.items | length' "$SCRATCH/body")" = 1 ] && pass "one session listed" || bad "sessions: $(cat "$SCRATCH/body")"
tsih=$(jq -r '.items[0].tsih' "$SCRATCH/body")
req 200 GET "/sessions/$tsih"
[ "$(jq -r .initiator "$SCRATCH/body")" = "$HOST" ] || bad "session $tsih: $(cat "$SCRATCH/body")"
req 200 PATCH "/targets/$T/luns/0" '{"size": "8M"}'
[ "$(stat -c %s "$SCRATCH/s0.img")" = 8388608 ] && pass "the file grew to 8 MiB" || bad "the LUN's file is $(stat -c %s "$SCRATCH/s0.img") bytes"
echo go >"$SCRATCH/go"
wait "$PROBE_PID"
rc=$?
PROBE_PID=''
mapfile -t out < <(tail -n +3 "$SCRATCH/probe.out")
log "grow_probe: ${out[*]} (exit $rc)"
[ "$rc" = 0 ] && [ "${out[0]:-}" = "ua 06/2a/09" ] && [ "${out[1]:-}" = "capacity 16384" ] &&
	[ "${out[3]:-}" = "session kept" ] && pass "the host got 6/2A/09 and 16384 blocks on its session" ||
	bad "grow_probe: ${out[*]} (exit $rc) $(cat "$SCRATCH/probe.err")"

# ---- 5.
# emptied here, not by a redirection of the background job (which runs later):
# the wait below must not find the "ready" of an earlier probe
: >"$SCRATCH/probe.out"
: >"$SCRATCH/probe.err"
"$PROBE" "iscsi://host%$S_HOST@$ADDR:$PORT/$T/0" "$HOST" <>"$SCRATCH/go" >>"$SCRATCH/probe.out" 2>>"$SCRATCH/probe.err" &
PROBE_PID=$!
wait_log "$SCRATCH/probe.out" '^ready$' 20 || bad "grow_probe did not log in again"
req 200 GET /sessions
tsih=$(jq -r '.items[0].tsih' "$SCRATCH/body")
req 422 DELETE "/sessions/$tsih?grace_s=x"
req 204 DELETE "/sessions/$tsih"
for _ in $(seq 30); do
	req 200 GET /sessions >/dev/null
	[ "$(jq '.items | length' "$SCRATCH/body")" = 0 ] && break
	sleep 0.1
done
[ "$(jq '.items | length' "$SCRATCH/body")" = 0 ] && pass "the session is gone" || bad "sessions after DELETE: $(cat "$SCRATCH/body")"
req 404 DELETE "/sessions/$tsih"
echo go >"$SCRATCH/go"
if wait "$PROBE_PID"; then bad "the dropped host's commands succeeded"; else pass "the host saw its session dropped"; fi
PROBE_PID=''

# ---- 5b. two isergw-api on the same file, ten ACLs POSTed at once through both: none lost
"$API" --listen "$ADDR:$HTTP_PORT2" --isergwd-socket "$SCRATCH/state/ctl.sock" --config "$CFG" \
	--isergwd-timeout-ms 5000 \
	--token-file "$SCRATCH/tokens" >"$SCRATCH/api2.log" 2>&1 &
API2_PID=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://$ADDR:$HTTP_PORT2/healthz" && break; sleep 0.1; done
posts=()
for i in 0 1 2 3 4 5 6 7 8 9; do
	port=$HTTP_PORT
	[ $((i % 2)) = 1 ] && port=$HTTP_PORT2
	curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "$AUTH" -H 'Content-Type: application/json' \
		--data-binary "{\"initiator\": \"$HOST-$i\"}" "http://$ADDR:$port/api/v1/targets/$T/acls" \
		>"$SCRATCH/post.$i" &
	posts+=($!)
done
wait "${posts[@]}"
codes=$(cat "$SCRATCH"/post.* | sort | uniq -c | tr -s ' ' | paste -sd,)
[ "$codes" = " 10 201" ] && pass "ten concurrent POSTs through two processes: all 201" ||
	bad "ten concurrent POSTs: $codes"
n=$(jq '[.targets[0].acls[]? | select(.initiator | startswith("'"$HOST"'-"))] | length' "$CFG")
[ "$n" = 10 ] && pass "the file holds all ten ACLs" || bad "the file holds $n of the ten ACLs"
kill -TERM "$API2_PID"
wait "$API2_PID" || bad "the second isergw-api did not exit 0"
API2_PID=''
for i in 0 1 2 3 4 5 6 7 8 9; do req 204 DELETE "/targets/$T/acls/$HOST-$i" >/dev/null; done

# ---- 7. a LUN that cannot be opened: reported, logged once
req 201 POST "/targets/$T/luns" "{\"lun\": 7, \"path\": \"$SCRATCH/missing.img\"}"
req 200 GET "/targets/$T/luns/7"
jq -e '.status.state == "failed" and .status.conditions[0].status == "False" and
	(.status.nodes[0].reason | test("missing.img: cannot open.*No such file"))' "$SCRATCH/body" \
	>/dev/null && pass "LUN 7: status failed, with the reason" ||
	bad "LUN 7's status: $(jq -c .status "$SCRATCH/body")"
req 200 GET "/targets/$T/luns/0"
jq -e '.status.state == "online"' "$SCRATCH/body" >/dev/null && pass "LUN 0: status online" ||
	bad "LUN 0's status: $(jq -c .status "$SCRATCH/body")"
req 200 PATCH "/targets/$T" '{"alias": "reload one"}' >/dev/null
req 200 PATCH "/targets/$T" '{"alias": "reload two"}' >/dev/null
n=$(grep -c ' err .*missing\.img' "$T_LOG")
[ "$n" -eq 1 ] && pass "the missing file logged once across three reloads" ||
	bad "the missing file logged $n times at err"
req 204 DELETE "/targets/$T/luns/7"

# ---- 6.
req 204 DELETE "/targets/$T/acls/$HOST"
req 204 DELETE /discovery-chap
req 404 DELETE /discovery-chap
grep -q "$S_HOST\|$S_DISC" "$CFG" && bad "the file still holds a deleted secret"
grep -q "$S_HOST\|$S_TGT\|$S_DISC" "$SCRATCH/api.log" "$T_LOG" && bad "a secret is in a log"
kill -TERM "$API_PID"
wait "$API_PID" && pass "isergw-api: SIGTERM, exit 0" || bad "isergw-api did not exit 0"
API_PID=''
sanitizer_report "$SCRATCH/api.log" >&2 && bad "a sanitizer report in isergw-api's log"
target_finish isergwd "$T_PID" "$T_LOG" && pass "isergwd: SIGTERM, exit 0" || bad "isergwd stop"
if [ "$fail" -ne 0 ]; then
	log "FAILED (logs in $SCRATCH)"
	exit 1
fi
log "all standalone checks passed"
