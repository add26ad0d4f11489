#!/usr/bin/env bash
# shellcheck disable=SC2015 # pass() never fails: A && pass || bad is an if-else
# SPDX-License-Identifier: Apache-2.0
#
# api.body-utf8: request bodies that are not valid UTF-8 (or hold NUL or
# control characters where a name is wanted), sent to a standalone isergw-api
# (--config FILE, docs/api.md, Standalone) in front of isergwd:
#
#   1. every one is answered 422 with the field that holds it (a target's
#      iqn and alias, an ACL's initiator, a LUN's path, a nested key of PUT
#      /config, a member name), the configuration file is not touched, and
#      GET /targets and GET /config stay valid JSON (decoded as strict UTF-8);
#   2. names that are odd but valid (UTF-8 beyond ASCII) are taken: a target,
#      its alias and a LUN in it (201), and rendered as valid JSON;
#   3. isergwd --check-config refuses a file with the same bad names in the
#      same words as the REST answer (after the key path).
#
#   api_body_utf8.sh --api PATH [--daemon PATH] [--scratch DIR] [--addr A]
#                    [--port P] [--http-port H]
# Exit 77 (skipped) without curl, jq or python3.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

ADDR=127.0.0.170
PORT=13650
HTTP_PORT=13651
API=''
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--port) PORT=$2; shift 2 ;;
	--http-port) HTTP_PORT=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--api) API=$2; shift 2 ;;
	-h|--help) sed -n '4,20p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
only_isergw "api.body-utf8"
[ -x "$API" ] || die "--api PATH (isergw-api) required"
for t in curl jq python3; do
	command -v "$t" >/dev/null || { log "SKIP: $t not found"; exit 77; }
done

T=iqn.2026-11.org.isergw:utf8
CFG=$SCRATCH/isergwd.json
U=http://$ADDR:$HTTP_PORT/api/v1
rm -rf "$SCRATCH"/*.img "$SCRATCH/state"
mkdir -p "$SCRATCH/state"
fail=0
pass() { log "ok: $*"; }
bad() { log "FAILED: $*"; fail=1; }
API_PID=''
trap '[ -n "$API_PID" ] && kill "$API_PID" 2>/dev/null; lib_cleanup 2>/dev/null' EXIT

cat >"$CFG" <<JSON
{
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "$T", "luns": [ { "lun": 0, "path": "$SCRATCH/u0.img", "size": "4M" } ] } ]
}
JSON
chmod 600 "$CFG"
config_start utf8 "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
rm -f "$SCRATCH/tokens"
"$API" token add --token-file "$SCRATCH/tokens" --name utf8 --role admin >"$SCRATCH/admin.tok" 2>/dev/null ||
	die "isergw-api token add failed"
AUTH="Authorization: Bearer $(cat "$SCRATCH/admin.tok")"
"$API" --listen "$ADDR:$HTTP_PORT" --isergwd-socket "$SCRATCH/state/ctl.sock" --config "$CFG" \
	--isergwd-timeout-ms 5000 \
	--token-file "$SCRATCH/tokens" --log-level info >"$SCRATCH/api.log" 2>&1 &
API_PID=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://$ADDR:$HTTP_PORT/healthz" && break; sleep 0.1; done

# send METHOD PATH: the body from $SCRATCH/req (bytes as printf made them);
# the status on stdout, the answer in $SCRATCH/body
send() {
	curl -s -X "$1" -o "$SCRATCH/body" -w '%{http_code}' -H "$AUTH" \
		-H 'Content-Type: application/json' --data-binary "@$SCRATCH/req" "$U$2"
}
# keep FILE: the answer kept, to be checked as strict UTF-8 JSON at the end
# (one python3 for all: it starts slowly on a loaded machine)
nkept=0
keep() { nkept=$((nkept + 1)); cp "$1" "$SCRATCH/answers/$nkept.json"; }
rm -rf "$SCRATCH/answers"
mkdir -p "$SCRATCH/answers"
# refused WHAT METHOD PATH FIELD WORDS BODY-PRINTF-FORMAT: 422, the field and
# the words in the detail
refused() {
	local what=$1 m=$2 p=$3 want_field=$4 words=$5 code got field detail
	# shellcheck disable=SC2059 # the format carries the bytes
	printf "$6" >"$SCRATCH/req"
	code=$(send "$m" "$p")
	keep "$SCRATCH/body"
	if [ "$code" != 422 ]; then
		bad "$what: $m $p answered $code, not 422: $(head -c 300 "$SCRATCH/body")"
		return 1
	fi
	got=$(jq -r '"\(.field // "")\t\(.detail)"' "$SCRATCH/body") || { bad "$what: the 422 is not JSON"; return 1; }
	field=${got%%$'\t'*}
	detail=${got#*$'\t'}
	[ "$field" = "$want_field" ] || { bad "$what: field '$field', not '$want_field'"; return 1; }
	[[ $detail == *"$words"* ]] || { bad "$what: detail '$detail' lacks '$words'"; return 1; }
	pass "$what: 422 naming ${want_field:-no field} ($detail)"
}

cp "$CFG" "$SCRATCH/before.json"
# ---- 1. refused
refused "iqn with 0xff 0xfe" POST /targets iqn "iqn: not valid UTF-8 (byte 18)" \
	'{"iqn":"iqn.2026-11.org.x:\xff\xfe"}'
refused "iqn with an overlong '/'" POST /targets iqn "not valid UTF-8 (byte 18)" \
	'{"iqn":"iqn.2026-11.org.x:\xc0\xaf"}'
refused "iqn with a surrogate (CESU-8)" POST /targets iqn "not valid UTF-8 (byte 18)" \
	'{"iqn":"iqn.2026-11.org.x:\xed\xa0\x80"}'
refused "iqn above U+10FFFF" POST /targets iqn "not valid UTF-8 (byte 18)" \
	'{"iqn":"iqn.2026-11.org.x:\xf4\x90\x80\x80"}'
refused "iqn with a truncated sequence" POST /targets iqn "not valid UTF-8 (byte 19)" \
	'{"iqn":"iqn.2026-11.org.x:a\xc3"}'
refused "iqn with a NUL (\\u0000)" POST /targets iqn "iqn: contains a NUL character" \
	'{"iqn":"iqn.2026-11.org.x:a\\u0000b"}'
refused "iqn with a lone surrogate escape" POST /targets iqn "iqn: " \
	'{"iqn":"iqn.2026-11.org.x:a\\ud800"}'
refused "iqn with a no-break space" POST /targets iqn "U+00A0 is not allowed in an iSCSI name" \
	'{"iqn":"iqn.2026-11.org.x:a\xc2\xa0b"}'
refused "alias not UTF-8" POST /targets alias "alias: not valid UTF-8 (byte 2)" \
	'{"iqn":"iqn.2026-11.org.x:b","alias":"db\xff"}'
refused "alias with a control character" POST /targets alias "control character U+0001" \
	'{"iqn":"iqn.2026-11.org.x:b","alias":"db\\u0001"}'
refused "ACL initiator not UTF-8" POST "/targets/$T/acls" initiator "initiator: not valid UTF-8" \
	'{"initiator":"iqn.2026-11.org.x:h\xfe"}'
refused "nested ACL initiator" POST /targets "acls[0].initiator" "acls[0].initiator: not valid UTF-8" \
	'{"iqn":"iqn.2026-11.org.x:c","acls":[{"initiator":"iqn.2026-11.org.x:\xfe"}]}'
refused "target PATCH alias" PATCH "/targets/$T" alias "alias: not valid UTF-8" \
	'{"alias":"\xe2\x82"}'
refused "LUN path not UTF-8" POST "/targets/$T/luns" path "path: not valid UTF-8" \
	"{\"path\":\"$SCRATCH/\xff.img\",\"size\":\"4M\"}"
refused "a CHAP user not UTF-8" POST "/targets/$T/acls" "chap.user" "chap.user: not valid UTF-8" \
	'{"initiator":"iqn.2026-11.org.x:h","chap":{"user":"\xff","secret":"0123456789abcdef"}}'
refused "a member name not UTF-8 (no field: the body itself)" POST /targets "" "not valid UTF-8 (byte 0) in a member name" \
	'{"iqn":"iqn.2026-11.org.x:d","\xff":1}'
# the file's configuration with one LUN serial not UTF-8 (the bytes made by refused's printf)
put=$(printf '{"state_dir":"%s/state","ctl_socket":"%s/state/ctl.sock","portals":[{"url":"tcp://%s:%s"}],"targets":[{"iqn":"%s","luns":[{"lun":0,"path":"%s/u0.img","size":"4M","serial":"s\\xfe"}]}]}' \
	"$SCRATCH" "$SCRATCH" "$ADDR" "$PORT" "$T" "$SCRATCH")
refused "PUT /config, a nested string" PUT /config "targets[0].luns[0].serial" \
	"targets[0].luns[0].serial: not valid UTF-8 (byte 1)" "$put"
cmp -s "$CFG" "$SCRATCH/before.json" && pass "the configuration file was not touched" ||
	bad "a refused request changed the configuration file"
for p in /targets /config "/targets/$T"; do
	code=$(curl -s -o "$SCRATCH/body" -w '%{http_code}' -H "$AUTH" "$U$p")
	keep "$SCRATCH/body"
	[ "$code" = 200 ] && pass "GET $p: 200" || bad "GET $p: $code"
done

# ---- 2. odd but valid
printf '{"iqn":"iqn.2026-11.org.x:disk-\xc3\xa9t\xc3\xa9","alias":"Datenbank \xc3\xa4\xc3\xb6\xc3\xbc"}' >"$SCRATCH/req"
code=$(send POST /targets)
[ "$code" = 201 ] && pass "a target named in UTF-8 beyond ASCII: 201" || bad "odd target: $code $(cat "$SCRATCH/body")"
printf '{"path":"%s/\xc3\xa9.img","size":"4M"}' "$SCRATCH" >"$SCRATCH/req"
code=$(send POST "/targets/iqn.2026-11.org.x:disk-%C3%A9t%C3%A9/luns")
[ "$code" = 201 ] && pass "a LUN in it: 201" || bad "LUN in the odd target: $code $(cat "$SCRATCH/body")"
code=$(curl -s -o "$SCRATCH/body" -w '%{http_code}' -H "$AUTH" "$U/targets")
keep "$SCRATCH/body"
if [ "$code" = 200 ] &&
	jq -e 'any(.items[]; .iqn == "iqn.2026-11.org.x:disk-été" and .alias == "Datenbank äöü")' "$SCRATCH/body" >/dev/null; then
	pass "GET /targets shows it"
else
	bad "GET /targets after the odd target: $code $(head -c 300 "$SCRATCH/body")"
fi

# ---- 3. the file: the same words from isergwd's parser
check_file() { # check_file WHAT KEY-PATH REST-DETAIL FORMAT
	local out
	# shellcheck disable=SC2059
	printf "$4" >"$SCRATCH/bad.json"
	if out=$("$ISERGWD" --config "$SCRATCH/bad.json" --check-config 2>&1); then
		bad "$1: isergwd --check-config took it"
		return
	fi
	grep -qF -- "$2: ${3#*: }" <<<"$out" && pass "$1: isergwd says '$2: ${3#*: }'" ||
		bad "$1: isergwd said '$out', not '$2: ${3#*: }'"
}
HEAD='{"portals":[{"url":"tcp://127.0.0.1:3260"}],"targets":[{'
printf '{"iqn":"iqn.2026-11.org.x:\xff\xfe"}' >"$SCRATCH/req"
send POST /targets >/dev/null
check_file "iqn not UTF-8" "targets[0].iqn" "$(jq -r .detail "$SCRATCH/body")" \
	"$HEAD\"iqn\":\"iqn.2026-11.org.x:\xff\xfe\"}]}"
printf '{"iqn":"iqn.2026-11.org.x:a\xc2\xa0b"}' >"$SCRATCH/req"
send POST /targets >/dev/null
check_file "iqn with U+00A0" "targets[0].iqn" "$(jq -r .detail "$SCRATCH/body")" \
	"$HEAD\"iqn\":\"iqn.2026-11.org.x:a\xc2\xa0b\"}]}"
printf '{"iqn":"%s","alias":"db\\u0001"}' "$T" >"$SCRATCH/req"
send POST /targets >/dev/null
check_file "alias with a control character" "targets[0].alias" "$(jq -r .detail "$SCRATCH/body")" \
	"$HEAD\"iqn\":\"$T\",\"alias\":\"db\\\\u0001\"}]}"

# every answer kept (the refusals, the reads): strict UTF-8 JSON
if python3 - "$SCRATCH"/answers/*.json <<'PY'
import json, sys
bad = 0
for f in sys.argv[1:]:
    try:
        json.loads(open(f, "rb").read().decode("utf-8"))
    except ValueError as e:
        print(f"{f}: {e}", file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
then
	pass "all $nkept answers are valid UTF-8 JSON"
else
	bad "an answer is not valid UTF-8 JSON"
fi

api_rc=0
kill -TERM "$API_PID" && wait "$API_PID" || api_rc=$?
API_PID=''
[ "$api_rc" = 0 ] && pass "isergw-api exits 0 on SIGTERM" || bad "isergw-api exited $api_rc"
if sanitizer_report "$SCRATCH/api.log" >&2; then
	bad "a sanitizer report in $SCRATCH/api.log"
fi
[ "$fail" = 0 ] || { log "api.body-utf8: FAILED"; exit 1; }
log "api.body-utf8: every body that is not UTF-8 refused with its field; odd valid names taken"
exit 0
