#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# shellcheck disable=SC2016 # jq's $variables
# SPDX-License-Identifier: Apache-2.0
#
# api.provision: the REST resources of isergw-api (docs/api.md) on the
# three-node HA bed, with curl only.
#
#   api_provision.sh --isergwd PATH --isergwctl PATH --ha PATH --api PATH
#                    --prefix P --subnet S --scratch DIR
#
# 1. three nodes with corosync, isergwd and isergw-ha, the example cluster
#    configuration; isergw-api in node 1 and node 2 on their own sockets;
# 2. GET /api/v1/cluster on both: quorate, three members, the agent's
#    generation, an ETag of it; /api/v1/openapi.json is OpenAPI 3.1;
# 3. through node 1: POST a target (201, Location, ETag; its CHAP secret
#    never shown), POST two LUNs on files in the shared directory (201,
#    Location .../luns/N); GET through node 2 shows them; a libiscsi client
#    in the host namespace reads the LUNs' capacity through node 1 and
#    node 2;
# 4. PATCH of a LUN with a stale If-Match: 412, nothing changed; with the
#    current ETag: 200, and INQUIRY through node 2 shows the new product;
# 4b. an ACL for the host with its own CHAP (201, no secret shown), mutual
#    CHAP on the target (PATCH), discovery CHAP (PUT): through each of the
#    three nodes the host logs in with the ACL's CHAP and mutual CHAP, not
#    with the target's CHAP any more, refuses a target proving a wrong
#    secret, and discovers the target with the discovery CHAP; then all
#    three removed again (204, PATCH null, 204); LUN 0 grown to 48 MiB by a
#    PATCH (hosts read the new capacity through nodes 1 and 2), a smaller
#    size 422 naming size;
# 5. refusals: an unknown field (422 naming it, nested too), broken JSON
#    (400), a wrong type (422), a value isergwd's validator refuses (422
#    naming the field of the body), a LUN on another LUN's file by another
#    spelling (422 naming path, the detail both LUNs), a body above 1 MiB
#    (413, chunked too), no token (401), a read-only token on a write (403),
#    a path that is not a resource (404), a method a path does not take
#    (405, Allow);
# 5b. a LUN on a hard link of LUN 0's file, which only the file system
#    tells: every node's isergwd leaves it out, naming both LUNs at err
#    once; deleted again;
# 5c. a target name, an ACL initiator and an alias that are not UTF-8: 422
#    naming the field, GET /targets and /config still valid UTF-8 JSON; the
#    same name through isergwctl cluster config apply refused in the same
#    words (one validator, util/names.c);
# 6. PATCH /api/v1/nodes/n3 {"drained": true}: GET /api/v1/nodes through
#    node 2 shows n3 drained, dg3 moved off it; undrained again; PATCH of a
#    device group's owner moves it;
# 6b. a target named in UTF-8 beyond ASCII (201) and a LUN in it (201, not
#    the 504 of a change the agents dropped), then deleted;
# 6c. n2 and n3 drained: draining n1 too is refused 409 naming dg1, dg2 and
#    dg3 (through isergwctl cluster drain as well), nothing changed; with
#    ?force=true it is done (200) and no group has an owner; all undrained,
#    each group back on its preferred owner;
# 7. GET /api/v1/config and PUT of it with its ETag as If-Match: accepted,
#    nothing changed, the CHAP secret still in the stored document;
# 8. DELETE of the LUNs and the target (204), then 404 and the LUN gone for
#    the host;
# 9. node 3's isergwd frozen (SIGSTOP): a write through node 2 (whose
#    isergw-api waits 1.5 s) is answered 202 with Location
#    /api/v1/operations/gN, pending on n3 only; the target is there; the
#    operation is done once the isergwd runs again;
# 10. four LUNs POSTed at once through node 1 without If-Match: all
#    201, all four there with distinct numbers (a write whose generation was
#    overtaken is made again on the new one);
# 11. node 3 killed: a write through node 2 still succeeds (201); node 2
#    killed too: node 1 without quorum answers a write 503 with Retry-After
#    and the generation does not move;
# 12. isergw-api stops with status 0 on SIGTERM.
# Exit 77 when not root or corosync is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

API=
ha_options 4,46 --api API -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --api "$API" isergw-api
for t in curl jq python3 iscsi-inq iscsi-readcapacity16; do
	command -v "$t" >/dev/null || bed_die "$t not found (deploy/install-deps.sh)"
done

T=iqn.2026-11.org.isergw:api
V1=/api/v1
OUT=$SCRATCH/api
mkdir -p "$OUT"

# an admin token for every request (docs/api.md, Security)
TOKENS=$OUT/tokens
rm -f "$TOKENS"
"$API" token add --token-file "$TOKENS" --name provision --role admin >"$OUT/admin.tok" ||
	bed_die "isergw-api token add failed"
AUTH="Authorization: Bearer $(cat "$OUT/admin.tok")"

# api_start K [ARGS...]: isergw-api in node K on 127.0.0.1:8080 of the node
api_start() {
	local k=$1 dir
	shift
	dir=$SCRATCH/n$k
	_bed_spawn "$k" api "$dir/api.log" "$API" --listen 127.0.0.1:8080 \
		--ha-socket /run/isergw/ha.sock --isergwd-socket /run/isergw/isergwd.sock \
		--token-file "$TOKENS" --log-level info "$@" || return 1
	bed_poll 20 "isergw-api on node $k answers" bed_exec "$k" curl -sf -o /dev/null \
		http://127.0.0.1:8080/healthz
}

# req K METHOD PATH [BODY|@FILE] [CURL-ARGS...]: the status code; the body in
# $OUT/body, the headers in $OUT/headers
req() {
	local k=$1 m=$2 p=$3 data=${4:-}
	shift 3
	[ $# -gt 0 ] && shift
	local args=(-s -X "$m" -o "$OUT/body" -D "$OUT/headers" -w '%{http_code}' -H "$AUTH")
	[ -n "$data" ] && args+=(-H 'Content-Type: application/json' --data-binary "$data")
	bed_exec "$k" curl "${args[@]}" "$@" "http://127.0.0.1:8080$p"
}
hdr() { grep -i "^$1:" "$OUT/headers" | head -n 1 | cut -d' ' -f2- | tr -d '\r'; }
body() { jq -r "$1" "$OUT/body"; }
# expect WHAT CODE K METHOD PATH [BODY] [CURL-ARGS...]
expect() {
	local what=$1 want=$2 got
	shift 2
	got=$(req "$@")
	if [ "$got" != "$want" ]; then
		bed_log "FAILED: $what: $2 $3 answered $got, not $want: $(head -c 400 "$OUT/body")"
		fail=1
		return 1
	fi
	bed_log "ok: $what ($got)"
}
field_is() { [ "$(body .field)" = "$1" ] || { bed_log "field is '$(body .field)', not '$1': $(cat "$OUT/body")"; return 1; }; }
is_problem() { [[ $(hdr Content-Type) == application/problem+json* ]] && [ "$(body .status)" = "$1" ]; }
# the target asks CHAP of initiators (step 3): the host logs in with it
CHAP_URL=apiuser%api-secret-123@
capacity() { # capacity K LUN: the LUN's size in bytes through node K, as the host reads it
	bed_host iscsi-readcapacity16 -s -i iqn.2026-11.org.isergw:host \
		"iscsi://$CHAP_URL$(bed_portal "$1")/$T/$2" 2>"$OUT/capacity.err" | tr -d ' \n'
}
capacity_is() {
	local got
	got=$(capacity "$1" "$2")
	[ "$got" = "$3" ] && return 0
	echo "node $1 LUN $2: '$got' $(tr '\n' ' ' <"$OUT/capacity.err")" >"$OUT/capacity.last"
	return 1
}
product_is() {
	bed_host iscsi-inq -i iqn.2026-11.org.isergw:host "iscsi://$CHAP_URL$(bed_portal "$1")/$T/$2" 2>&1 |
		grep -q "^Product:$3"
}

# 1.
ha_cluster_up || bed_die "the cluster did not come up"
api_start 1 || bed_die "isergw-api did not start on node 1"
# node 2's waits 1.5 s for every live member before it answers 202 (step 9)
api_start 2 --change-wait-ms 1500 || bed_die "isergw-api did not start on node 2"

# 2. the cluster
gen=$(ha_gen 1)
for k in 1 2; do
	expect "GET cluster through node $k" 200 "$k" GET "$V1/cluster" &&
		ha_check "node $k: quorate, 3 members, generation $gen, ETag" \
			jq -e --argjson g "$gen" '.quorate and (.members | length) == 3 and .generation == $g
				and ([.members[] | select(.synced)] | length) == 3' "$OUT/body" >/dev/null &&
		ha_check "node $k: ETag \"g$gen\"" [ "$(hdr ETag)" = "\"g$gen\"" ]
done
head_ok() { # HEAD: the GET's status and ETag, no body
	[ "$(bed_exec 1 curl -sI -H "$AUTH" -o /dev/null -D "$OUT/headers" -w '%{http_code} %{size_download}' \
		"http://127.0.0.1:8080$V1/cluster")" = "200 0" ] && [ -n "$(hdr ETag)" ]
}
ha_check "HEAD /api/v1/cluster: 200 with an ETag and no body" head_ok
expect "GET openapi.json" 200 1 GET "$V1/openapi.json" &&
	ha_check "the OpenAPI document is 3.1 and names /targets" \
		jq -e '(.openapi | startswith("3.1")) and .paths["/targets"] != null' "$OUT/body" >/dev/null

# 3. a target and two LUNs through node 1, on files of the shared directory
# that do not exist yet: every node's isergwd creates the file at once, and
# each must serve the LUN (the file backend makes a file whole under a
# temporary name and links it in; with O_CREAT on the name one node could
# see it at 0 bytes and leave the LUN out)
bed_mark "target created"
expect "POST target" 201 1 POST "$V1/targets" \
	"{\"iqn\": \"$T\", \"chap\": {\"user\": \"apiuser\", \"secret\": \"api-secret-123\"}}"
ha_check "Location of the target" [ "$(hdr Location)" = "$V1/targets/$T" ]
ha_check "an ETag on 201" grep -q '^"g[0-9]*"$' <<<"$(hdr ETag)"
ha_check "the CHAP secret is not returned" jq -e '.chap.user == "apiuser" and (.chap | has("secret") | not)' \
	"$OUT/body" >/dev/null
expect "POST LUN (number chosen)" 201 1 POST "$V1/targets/$T/luns" \
	"{\"path\": \"$BED_SHARED/api0.img\", \"size\": \"32M\", \"device_group\": \"dg1\"}"
ha_check "Location of LUN 0" [ "$(hdr Location)" = "$V1/targets/$T/luns/0" ]
expect "POST LUN 5" 201 1 POST "$V1/targets/$T/luns" \
	"{\"lun\": 5, \"path\": \"$BED_SHARED/api5.img\", \"size\": \"16M\", \"device_group\": \"dg2\"}"
ha_check "Location of LUN 5" [ "$(hdr Location)" = "$V1/targets/$T/luns/5" ]
expect "GET target through node 2" 200 2 GET "$V1/targets/$T" &&
	ha_check "node 2 shows LUNs 0 and 5, no secret" jq -e '[.luns[].lun] == [0, 5] and
		(.chap | has("secret") | not)' "$OUT/body" >/dev/null
expect "GET LUNs through node 2" 200 2 GET "$V1/targets/$T/luns" &&
	ha_check "the LUN list" jq -e '[.items[].lun] == [0, 5]' "$OUT/body" >/dev/null
expect "GET targets through node 1" 200 1 GET "$V1/targets" &&
	ha_check "two targets" jq -e --arg t "$T" '[.items[].iqn] | index($t) != null and length == 2' \
		"$OUT/body" >/dev/null
for k in 1 2; do
	ha_check "the host reads LUN 0's capacity through node $k (32 MiB)" \
		bed_poll 20 "LUN 0 through node $k" capacity_is "$k" 0 33554432
	ha_check "the host reads LUN 5's capacity through node $k (16 MiB)" \
		bed_poll 20 "LUN 5 through node $k" capacity_is "$k" 5 16777216 ||
		bed_log "last answer: $(cat "$OUT/capacity.last")"
done

# 4. If-Match
expect "GET LUN 0" 200 1 GET "$V1/targets/$T/luns/0"
etag=$(hdr ETag)
stale="\"g$(( ${etag//[^0-9]/} - 1 ))\""
expect "PATCH with a stale If-Match" 412 2 PATCH "$V1/targets/$T/luns/0" '{"product": "stale disk"}' \
	-H "If-Match: $stale"
ha_check "412 is a problem document" is_problem 412
ha_check "the stale PATCH changed nothing" [ "$(ha_gen 1)" = "${etag//[^0-9]/}" ]
expect "PATCH with the current If-Match" 200 2 PATCH "$V1/targets/$T/luns/0" '{"product": "api disk"}' \
	-H "If-Match: $etag"
ha_check "the answer is the patched LUN" jq -e '.product == "api disk" and .lun == 0' "$OUT/body" >/dev/null
ha_check "a new ETag" [ "$(hdr ETag)" != "$etag" ]
ha_check "INQUIRY through node 2 shows the new product" \
	bed_poll 20 "product through node 2" product_is 2 0 "api disk"

[ "${API_DEBUG_STOP:-}" = 4 ] && { bed_log "stopping after step 4 (API_DEBUG_STOP)"; exit 1; }
# 4b. ACLs with CHAP and mutual CHAP, discovery CHAP; a LUN grown
HOSTI=iqn.2026-11.org.isergw:host
HOST_CHAP=hostuser%host-secret-1234@
MUT="?target_user=apitarget&target_password=api-target-secret-1"
expect "POST an ACL with CHAP" 201 1 POST "$V1/targets/$T/acls" \
	"{\"initiator\": \"$HOSTI\", \"chap\": {\"user\": \"hostuser\", \"secret\": \"host-secret-1234\"}}"
ha_check "Location of the ACL" [ "$(hdr Location)" = "$V1/targets/$T/acls/$HOSTI" ]
ha_check "the ACL's secret is not returned" jq -e '.chap.user == "hostuser" and (.chap | has("secret") | not)' \
	"$OUT/body" >/dev/null
expect "PATCH the target: mutual CHAP" 200 2 PATCH "$V1/targets/$T" \
	'{"mutual_chap": {"user": "apitarget", "secret": "api-target-secret-1"}}'
ha_check "the mutual CHAP secret is not returned" jq -e '.mutual_chap.user == "apitarget" and
	(.mutual_chap | has("secret") | not) and (.chap | has("secret") | not)' "$OUT/body" >/dev/null
expect "PUT discovery CHAP" 200 2 PUT "$V1/discovery-chap" '{"user": "apidisc", "secret": "api-disc-secret-1"}'
ha_check "discovery CHAP answers its user only" jq -e '. == {"user": "apidisc"}' "$OUT/body" >/dev/null
expect "GET the ACLs through node 1" 200 1 GET "$V1/targets/$T/acls" &&
	ha_check "one ACL, no secret" jq -e --arg h "$HOSTI" '.items == [{"initiator": $h, "chap": {"user": "hostuser"}}]' \
		"$OUT/body" >/dev/null
login_ok() { # login_ok K CREDENTIALS [URL-ARGUMENTS]: INQUIRY of LUN 0 through node K as the host
	bed_host timeout 20 iscsi-inq -i "$HOSTI" "iscsi://$2$(bed_portal "$1")/$T/0${3:-}" >/dev/null 2>&1
}
login_fails() { ! login_ok "$@"; }
discovers() { # discovers K: SendTargets through node K with the discovery CHAP lists $T
	bed_host timeout 20 iscsi-ls -i "$HOSTI" "iscsi://apidisc%api-disc-secret-1@$(bed_portal "$1")" 2>/dev/null |
		grep -q "^Target:$T "
}
for k in 1 2 3; do
	ha_check "node $k: the host logs in with the ACL's CHAP and mutual CHAP" \
		bed_poll 20 "CHAP and mutual CHAP through node $k" login_ok "$k" "$HOST_CHAP" "$MUT"
	ha_check "node $k: the target's own CHAP no longer admits the host" login_fails "$k" "$CHAP_URL"
	ha_check "node $k: a target proving another secret is refused" login_fails "$k" "$HOST_CHAP" \
		"?target_user=apitarget&target_password=wrong-secret-123"
	ha_check "node $k: discovery with the discovery CHAP lists the target" discovers "$k"
done
expect "PATCH the ACL: a new secret" 200 1 PATCH "$V1/targets/$T/acls/$HOSTI" '{"chap": {"secret": "host-secret-5678"}}'
ha_check "node 3: the new ACL secret logs in" bed_poll 20 "the new secret through node 3" login_ok 3 \
	"hostuser%host-secret-5678@" "$MUT"
expect "DELETE the ACL" 204 1 DELETE "$V1/targets/$T/acls/$HOSTI"
expect "PATCH the target: mutual CHAP removed" 200 1 PATCH "$V1/targets/$T" '{"mutual_chap": null}'
expect "DELETE discovery CHAP" 204 2 DELETE "$V1/discovery-chap"
ha_check "node 2: the target's CHAP admits the host again" bed_poll 20 "target CHAP through node 2" login_ok 2 "$CHAP_URL"
expect "PATCH LUN 0 smaller" 422 1 PATCH "$V1/targets/$T/luns/0" '{"size": "16M"}' &&
	ha_check "422 names size" field_is size
expect "PATCH LUN 0 grown to 48M" 200 2 PATCH "$V1/targets/$T/luns/0" '{"size": "48M"}'
for k in 1 2; do
	ha_check "the host reads LUN 0 grown to 48 MiB through node $k" \
		bed_poll 20 "LUN 0 grown through node $k" capacity_is "$k" 0 50331648
done

# 5. refusals
g0=$(ha_gen 1)
expect "unknown field" 422 1 POST "$V1/targets/$T/luns" "{\"path\": \"$BED_SHARED/x.img\", \"colour\": \"red\"}" &&
	ha_check "422 names the unknown field" field_is colour
expect "unknown nested field" 422 1 POST "$V1/targets" \
	'{"iqn": "iqn.2026-11.org.isergw:x", "luns": [{"path": "/tmp/x", "size_mb": 4}]}' &&
	ha_check "422 names luns[0].size_mb" field_is "luns[0].size_mb"
expect "broken JSON" 400 1 POST "$V1/targets" '{"iqn": "iqn.2026-11.org.isergw:x",' &&
	ha_check "400 is a problem document" is_problem 400
expect "wrong type" 422 1 PATCH "$V1/nodes/n3" '{"drained": "yes"}' && ha_check "422 names drained" field_is drained
expect "isergwd's validator refuses block_size 1000" 422 2 POST "$V1/targets/$T/luns" \
	"{\"path\": \"$BED_SHARED/bad.img\", \"size\": \"4M\", \"block_size\": 1000, \"device_group\": \"dg1\"}" &&
	ha_check "422 names block_size (the agent's key path, as a field of the body)" field_is block_size
expect "a device group that does not exist" 422 2 POST "$V1/targets/$T/luns" \
	"{\"path\": \"$BED_SHARED/bad.img\", \"size\": \"4M\", \"device_group\": \"nope\"}" &&
	ha_check "422 names device_group" field_is device_group
expect "a LUN on LUN 0's file by another spelling" 422 2 POST "$V1/targets/$T/luns" \
	"{\"lun\": 7, \"path\": \"/$BED_SHARED/./api0.img\", \"device_group\": \"dg1\"}" &&
	ha_check "422 names path" field_is path &&
	ha_check "the detail names LUN 7 and LUN 0 (one store)" \
		grep -qF "LUN 7 of $T and LUN 0 of $T name one backing store ($BED_SHARED/api0.img)" \
		<<<"$(body .detail)"
head -c $((1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' >"$OUT/big.json"
expect "a body above 1 MiB" 413 1 PUT "$V1/config" "@$OUT/big.json"
code=$(req 1 PUT "$V1/config" "@$OUT/big.json" -H 'Transfer-Encoding: chunked')
ha_check "a chunked body above 1 MiB: 413 once it ends (got $code)" [ "$code" = 413 ]
ha_check "isergw-api still answers after it" bed_exec 1 curl -sf -o /dev/null http://127.0.0.1:8080/healthz
"$API" token add --token-file "$TOKENS" --name reader --role read-only >"$OUT/reader.tok" ||
	bed_die "isergw-api token add failed"
for k in 1 2; do kill -HUP "$(bed_pid "$k" api)"; done
reader_reads() {
	[ "$(bed_exec 1 curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$OUT/reader.tok")" \
		"http://127.0.0.1:8080$V1/cluster")" = 200 ]
}
ha_check "a read-only token reads, once SIGHUP re-read the token file" \
	bed_poll 10 "the read-only token known" reader_reads
code=$(bed_exec 1 curl -s -o "$OUT/body" -w '%{http_code}' "http://127.0.0.1:8080$V1/cluster")
ha_check "no token: 401 (got $code)" [ "$code" = 401 ]
code=$(bed_exec 1 curl -s -o "$OUT/body" -w '%{http_code}' -X DELETE \
	-H "Authorization: Bearer $(cat "$OUT/reader.tok")" "http://127.0.0.1:8080$V1/targets/$T")
ha_check "a read-only token on DELETE: 403 (got $code), the target still there" [ "$code" = 403 ]
expect "the target is still there" 200 2 GET "$V1/targets/$T"
expect "no such resource" 404 1 GET "$V1/nothing"
expect "no such target" 404 1 GET "$V1/targets/iqn.2026-11.org.isergw:none"
expect "a method the path does not take" 405 1 DELETE "$V1/cluster" &&
	ha_check "405 has Allow" [ "$(hdr Allow)" = "GET, HEAD" ]
# names: one validator (config/names.c) for isergw-api, the agents and isergwd;
# a body that is not UTF-8 is refused naming the field, and renders stay JSON
utf8_json() { # strict UTF-8 JSON (python3 decodes, no replacement characters)
	python3 -c 'import json, sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))' "$1"
}
printf '{"iqn":"iqn.2026-11.org.x:\xff\xfe"}' >"$OUT/bad-utf8.json"
expect "a target name that is not UTF-8" 422 1 POST "$V1/targets" "@$OUT/bad-utf8.json" &&
	ha_check "422 names iqn" field_is iqn &&
	ha_check "the 422 says why: $(body .detail)" [ "$(body .detail)" = "iqn: not valid UTF-8 (byte 18)" ]
bad_detail=$(body .detail)
printf '{"initiator":"iqn.2026-11.org.x:h\xfe"}' >"$OUT/bad-utf8.json"
expect "an ACL initiator that is not UTF-8" 422 2 POST "$V1/targets/$T/acls" "@$OUT/bad-utf8.json" &&
	ha_check "422 names initiator" field_is initiator
printf '{"alias":"db\xed\xa0\x80"}' >"$OUT/bad-utf8.json"
expect "an alias that is not UTF-8 (a surrogate)" 422 1 PATCH "$V1/targets/$T" "@$OUT/bad-utf8.json" &&
	ha_check "422 names alias" field_is alias
for p in targets config; do
	expect "GET /$p after them" 200 2 GET "$V1/$p" &&
		ha_check "GET /$p is valid UTF-8 JSON" utf8_json "$OUT/body"
done
# the same name through isergwctl cluster config apply: the agent's words
if ! bed_cli 1 cluster config get >"$OUT/cfg.json"; then
	ha_check "isergwctl cluster config get" false
elif ! jq '.targets += [{"iqn": "BADNAME"}]' "$OUT/cfg.json" |
	sed 's/"BADNAME"/"iqn.2026-11.org.x:\xff\xfe"/' >"$OUT/bad-cfg.json"; then
	ha_check "the configuration read is JSON" false
elif bed_cli 1 cluster config apply "$OUT/bad-cfg.json" >"$OUT/apply.out" 2>&1; then
	ha_check "isergwctl cluster config apply refuses the name" false
else
	ha_check "isergwctl cluster config apply: '$(tail -n 1 "$OUT/apply.out")' has the API's words" \
		grep -qF "].iqn: ${bad_detail#iqn: }" "$OUT/apply.out"
fi
ha_check "no refusal changed the cluster" [ "$(ha_gen 1)" = "$g0" ]
expect "GET LUNs after the refusals" 200 2 GET "$V1/targets/$T/luns" &&
	ha_check "still LUNs 0 and 5" jq -e '[.items[].lun] == [0, 5]' "$OUT/body" >/dev/null

# 5b. a LUN on a hard link of LUN 0's file: only the file system tells, which the agent does
# not ask (a hung mount must not stall it); every node's isergwd leaves it out, at err
ln -f "$BED_SHARED/api0.img" "$BED_SHARED/api0-link.img" || bed_die "ln"
code=$(req 1 POST "$V1/targets/$T/luns" \
	"{\"lun\": 8, \"path\": \"$BED_SHARED/api0-link.img\", \"device_group\": \"dg1\"}")
echo "  POST of LUN 8 on a hard link of LUN 0's file: $code $(head -c 300 "$OUT/body")"
left_out() {
	grep -qE " err +gateway: target $T LUN 8: not served: LUN 8 of $T and LUN 0 of $T name one backing store \(one file: " \
		"$(bed_logfile "$1" isergwd)"
}
for k in 1 2 3; do
	ha_check "node $k's isergwd leaves LUN 8 out, at err, naming LUNs 8 and 0" \
		bed_poll 20 "node $k left LUN 8 out" left_out "$k"
done
[ "$code" = 201 ] && expect "DELETE LUN 8" 204 1 DELETE "$V1/targets/$T/luns/8"
rm -f "$BED_SHARED/api0-link.img"
for k in 1 2 3; do
	n=$(grep -E " err +gateway: target $T LUN 8[: ]" "$(bed_logfile "$k" isergwd)" | grep -c 'one backing store')
	ha_check "node $k's isergwd said it at err once (got $n)" [ "$n" = 1 ]
done

# 6. drain, undrain, move
n3_drained() { req 2 GET "$V1/nodes" >/dev/null && jq -e '.items[] | select(.name == "n3") | .drained' "$OUT/body" >/dev/null; }
n3_undrained() { req 2 GET "$V1/nodes/n3" >/dev/null && jq -e '.drained == false' "$OUT/body" >/dev/null; }
dg_owner_is() { req "$1" GET "$V1/device-groups/$2" >/dev/null && [ "$(body .owner)" = "$3" ]; }
dg_owner_not() { req "$1" GET "$V1/device-groups/$2" >/dev/null && o=$(body .owner) && [ -n "$o" ] && [ "$o" != "$3" ]; }
expect "drain n3" 200 1 PATCH "$V1/nodes/n3" '{"drained": true}' &&
	ha_check "the answer shows n3 drained" jq -e '.name == "n3" and .drained' "$OUT/body" >/dev/null
ha_check "GET /nodes through node 2 shows n3 drained" n3_drained
ha_check "dg3 moved off n3" bed_poll 30 "dg3 off n3" dg_owner_not 2 dg3 n3
expect "GET device groups" 200 2 GET "$V1/device-groups" &&
	ha_check "three device groups with their states per node" \
		jq -e '(.items | length) == 3 and all(.items[]; (.states | length) == 3)' "$OUT/body" >/dev/null
expect "undrain n3" 200 2 PATCH "$V1/nodes/n3" '{"drained": false}'
ha_check "n3 undrained" bed_poll 10 "n3 undrained" n3_undrained
ha_check "dg3 back on n3 (failback immediate)" bed_poll 30 "dg3 on n3" dg_owner_is 1 dg3 n3
expect "move dg2 to n1" 200 1 PATCH "$V1/device-groups/dg2" '{"owner": "n1"}'
ha_check "dg2 owned by n1, seen through node 2" bed_poll 30 "dg2 on n1" dg_owner_is 2 dg2 n1
expect "move to a node that does not exist" 422 1 PATCH "$V1/device-groups/dg2" '{"owner": "n9"}' &&
	ha_check "422 names owner" field_is owner
expect "drain a node that does not exist" 404 1 PATCH "$V1/nodes/n9" '{"drained": true}'

# the cluster in node 1's metrics: quorate, three members, the agent's
# generation, the drain's, undrain's and move's planned moves counted (no
# failover); promtool's check of the whole scrape
metric() { awk -v m="$1" '$1 == m { print $2 }' "$OUT/body"; }
expect "GET /metrics" 200 1 GET /metrics &&
	{
		gen=$(ha_gen 1)
		bed_log "node 1's cluster metrics: $(grep '^isergw_cluster_' "$OUT/body" | paste -sd' ')"
		ha_check "isergw_cluster_up 1, quorate 1, 3 members" \
			[ "$(metric isergw_cluster_up) $(metric isergw_cluster_quorate) $(metric isergw_cluster_members)" = "1 1 3" ]
		ha_check "isergw_cluster_generation is the agent's ($gen)" [ "$(metric isergw_cluster_generation)" = "$gen" ]
		ha_check "planned moves counted (drain, undrain, move: at least 3), no failover" \
			[ "$(metric isergw_cluster_planned_moves_total)" -ge 3 ] && [ "$(metric isergw_cluster_failovers_total)" = 0 ]
		if command -v promtool >/dev/null; then
			ha_check "promtool check metrics" promtool check metrics <"$OUT/body"
		fi
	}

# 6b. a name valid but beyond ASCII: the target, then a LUN in it (the
# agents once dropped that LUN change: 504 after 5 s)
O=iqn.2026-11.org.isergw:disk-$'\xc3\xa9'
printf '{"iqn":"%s","alias":"Datenbank \xc3\xa4\xc3\xb6\xc3\xbc"}' "$O" >"$OUT/odd.json"
expect "a target named in UTF-8 beyond ASCII" 201 1 POST "$V1/targets" "@$OUT/odd.json"
expect "a LUN in it" 201 2 POST "$V1/targets/iqn.2026-11.org.isergw:disk-%C3%A9/luns" \
	"{\"path\": \"$BED_SHARED/odd.img\", \"size\": \"4M\", \"device_group\": \"dg1\"}"
expect "GET it through node 2" 200 2 GET "$V1/targets/iqn.2026-11.org.isergw:disk-%C3%A9" &&
	ha_check "its name, alias and LUN, valid UTF-8 JSON" jq -e --arg o "$O" '.iqn == $o and
		.alias == "Datenbank äöü" and [.luns[].lun] == [0]' "$OUT/body" >/dev/null &&
	ha_check "valid UTF-8" utf8_json "$OUT/body"
expect "DELETE its LUN" 204 1 DELETE "$V1/targets/iqn.2026-11.org.isergw:disk-%C3%A9/luns/0"
expect "DELETE it" 204 1 DELETE "$V1/targets/iqn.2026-11.org.isergw:disk-%C3%A9"

# 6c. the last node that could own device groups: its drain refused (409)
# naming them, unless forced; through isergwctl too
expect "drain n2" 200 1 PATCH "$V1/nodes/n2" '{"drained": true}'
expect "drain n3" 200 1 PATCH "$V1/nodes/n3" '{"drained": true}'
g1=$(ha_gen 1)
expect "drain n1, the last serving node" 409 2 PATCH "$V1/nodes/n1" '{"drained": true}' &&
	ha_check "409 names the groups: $(body .detail)" \
		grep -q "would leave device groups dg1, dg2, dg3 without an owner" "$OUT/body"
if bed_cli 2 cluster drain n1 >"$OUT/drain.out" 2>&1; then
	ha_check "isergwctl cluster drain n1 (the last) is refused" false
else
	ha_check "isergwctl cluster drain n1 is refused naming the groups" \
		grep -q "would leave device groups dg1, dg2, dg3 without an owner" "$OUT/drain.out"
fi
ha_check "the refused drains changed nothing" [ "$(ha_gen 1)" = "$g1" ]
expect "a force that is not a boolean" 422 1 PATCH "$V1/nodes/n1?force=yes" '{"drained": true}' &&
	ha_check "422 names force" field_is force
expect "drain n1 by force" 200 1 PATCH "$V1/nodes/n1?force=true" '{"drained": true}' &&
	ha_check "the answer shows n1 drained" jq -e '.name == "n1" and .drained' "$OUT/body" >/dev/null
no_owner() { req 2 GET "$V1/device-groups" >/dev/null && jq -e 'all(.items[]; .owner == "")' "$OUT/body" >/dev/null; }
ha_check "no device group has an owner" no_owner
for n in n1 n2 n3; do expect "undrain $n" 200 2 PATCH "$V1/nodes/$n" '{"drained": false}'; done
for k in 1 2 3; do
	ha_check "dg$k back on n$k" bed_poll 30 "dg$k on n$k" dg_owner_is 1 "dg$k" "n$k"
done

# 7. export and import
expect "export the configuration" 200 2 GET "$V1/config"
etag=$(hdr ETag)
cp "$OUT/body" "$OUT/export.json"
ha_check "the export holds no secret" jq -e '[.. | objects | select(has("secret"))] | length == 0' \
	"$OUT/export.json" >/dev/null
expect "import it again with its ETag" 200 1 PUT "$V1/config" "@$OUT/export.json" -H "If-Match: $etag"
ha_check "the import changed nothing (same ETag)" [ "$(hdr ETag)" = "$etag" ]
ha_check "the CHAP secret is still in every node's document" \
	grep -q api-secret-123 "$SCRATCH"/n1/state/cluster.json "$SCRATCH"/n3/state/cluster.json
expect "import with a stale ETag" 412 1 PUT "$V1/config" "@$OUT/export.json" -H 'If-Match: "g1"'

# 8. delete
expect "DELETE LUN 5" 204 2 DELETE "$V1/targets/$T/luns/5"
expect "LUN 5 is gone" 404 1 GET "$V1/targets/$T/luns/5"
expect "DELETE LUN 0" 204 1 DELETE "$V1/targets/$T/luns/0"
expect "DELETE the target" 204 1 DELETE "$V1/targets/$T"
expect "the target is gone" 404 2 GET "$V1/targets/$T"
ha_check "the host no longer finds LUN 0 through node 1" \
	bed_poll 20 "LUN 0 gone" bash -c "! capacity_is 1 0 33554432"

# 9. a change a live member does not apply in time: 202 and an operation
S=iqn.2026-11.org.isergw:slow
kill -STOP "$(bed_pid 3 isergwd)" || bed_die "cannot freeze node 3's isergwd"
expect "a write node 3 cannot apply (its isergwd frozen)" 202 2 POST "$V1/targets" "{\"iqn\": \"$S\"}"
op=$(hdr Location)
ha_check "202 names the operation" grep -q "^$V1/operations/g[0-9]*$" <<<"$op"
ha_check "the operation waits for n3 only" jq -e '.done == false and .pending == ["n3"] and
	(.applied | sort) == ["n1", "n2"]' "$OUT/body" >/dev/null
expect "GET the operation through node 1" 200 1 GET "$op" &&
	ha_check "not done while n3's isergwd is frozen" jq -e '.done == false' "$OUT/body" >/dev/null
expect "the target is there already" 200 1 GET "$V1/targets/$S"
kill -CONT "$(bed_pid 3 isergwd)"
op_done() { req 1 GET "$op" >/dev/null && jq -e '.done and .pending == []' "$OUT/body" >/dev/null; }
ha_check "the operation is done once n3's isergwd runs again" bed_poll 30 "operation done" op_done

# 10. concurrent writers without If-Match: none loses the other's LUN
# one curl, four transfers started together (-Z --parallel-immediate), to
# node 1; each its own LUN without a number
cargs=()
for i in 1 2 3 4; do
	[ "$i" -gt 1 ] && cargs+=(--next)
	cargs+=(-s -o /dev/null -w '%{http_code}\n' -X POST -H "$AUTH" -H 'Content-Type: application/json'
		--data-binary "{\"path\": \"$BED_SHARED/c$i.img\", \"size\": \"4M\", \"device_group\": \"dg1\"}"
		"http://127.0.0.1:8080$V1/targets/$S/luns")
done
codes=$(bed_exec 1 curl -Z --parallel-immediate --parallel-max 4 "${cargs[@]}" | sort | uniq -c | tr -s ' ')
ha_check "four concurrent writes: all 201 (got:$codes)" [ "$codes" = " 4 201" ]
expect "GET the LUNs written at once" 200 2 GET "$V1/targets/$S/luns" &&
	ha_check "four LUNs, four paths, numbers 0..3" jq -e '([.items[].lun] | sort) == [0, 1, 2, 3] and
		([.items[].path] | unique | length) == 4' "$OUT/body" >/dev/null
bed_log "writes made again after a concurrent change: $(grep -c 'moved on meanwhile' "$SCRATCH/n1/api.log")"

# 11. a node down, then no quorum
bed_kill_node 3 || bed_die "node 3 could not be killed"
# while the survivors re-form the agent refuses changes (503, Retry-After):
# a client tries again, as it is told; nothing was made meanwhile
degraded_write() {
	local code
	code=$(req 2 POST "$V1/targets" '{"iqn": "iqn.2026-11.org.isergw:degraded"}')
	[ "$code" = 201 ] && return 0
	if [ "$code" != 503 ] || [ -z "$(hdr Retry-After)" ]; then
		bed_log "a write with node 3 down: $code $(cat "$OUT/body")"
	fi
	return 1
}
ha_check "a write with node 3 down succeeds (201) once the survivors re-formed" \
	bed_poll 30 "a write with node 3 down" degraded_write
bed_kill_node 2 || bed_die "node 2 could not be killed"
bed_wait_inquorate 1 1 || bed_die "node 1 never lost quorum"
inq() { req 1 GET "$V1/cluster" >/dev/null && jq -e '.quorate == false' "$OUT/body" >/dev/null; }
ha_check "node 1's API reports no quorum" bed_poll 20 "node 1's agent inquorate" inq
g1=$(ha_gen 1)
expect "a write without quorum" 503 1 POST "$V1/targets" '{"iqn": "iqn.2026-11.org.isergw:lost"}' &&
	ha_check "503 has Retry-After" [ -n "$(hdr Retry-After)" ]
ha_check "without quorum nothing changed" [ "$(ha_gen 1)" = "$g1" ]
expect "reads still answer without quorum" 200 1 GET "$V1/targets" &&
	ha_check "the degraded write is there, the refused one is not" \
		jq -e '[.items[].iqn] | index("iqn.2026-11.org.isergw:degraded") != null and
			index("iqn.2026-11.org.isergw:lost") == null' "$OUT/body" >/dev/null

# 12.
ha_check "isergw-api on node 1 stops with status 0" _bed_stop 1 api
grep -h ' v1: \| http: ' "$SCRATCH"/n1/api.log | tail -n 5 >&2

if [ "$fail" -ne 0 ]; then
	bed_log "api.provision: FAILED"
	exit 1
fi
bed_log "api.provision: targets and LUNs made, read, changed and deleted through isergw-api on two nodes"
exit 0
