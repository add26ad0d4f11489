#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# api.contract: isergw-api's answers checked against mgmt/openapi.json by
# third-party tools (docs/api.md, docs/testing.md).
#
#   api_contract.sh --isergwd PATH --isergwctl PATH --ha PATH --api PATH
#                   --openapi FILE --npm-dir DIR --prefix P --subnet S --scratch DIR
#
# 1. @redocly/cli and @stoplight/prism-cli (pinned versions) installed into
#    DIR with npm, once (skipped, exit 77, without npm or when the install
#    fails, e.g. offline, CI or not);
# 2. `redocly lint` (recommended rules) passes on the document;
# 3. the three-node bed with the example configuration, isergw-api in node 1
#    and `prism proxy --errors` in front of it (also in node 1): every request
#    below goes through Prism, which answers 500 with an sl-violations header
#    when a request or an answer does not match the document; each must come
#    back with the status expected and no violation: every GET resource,
#    creations (201), a PATCH (200), a DELETE (204), refusals that the
#    document allows as requests (404, 409, 412, 422 from the agent's
#    validator) and a 202 with its operation; ACLs, a target's CHAP and
#    mutual CHAP, discovery CHAP, node portals, port groups, sessions (a
#    libiscsi session through node 1, listed, shown and logged out);
#    at the end every path and method of the document must have been sent
#    at least once;
# 4. a mutated copy of the document (Node requires a member "foo") behind
#    a second Prism makes GET /nodes/n1 a violation: the check can fail.
# Exit 77 when not root, corosync or npm is missing, or the tools cannot be
# installed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

API=''
OPENAPI=''
NPM_DIR=''
ha_options 4,29 --api API --openapi OPENAPI --npm-dir NPM_DIR -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --api "$API" isergw-api
[ -f "$OPENAPI" ] || bed_die "--openapi FILE required"
[ -n "$NPM_DIR" ] || bed_die "--npm-dir DIR required"
PRISM_VERSION=5.14.2
REDOCLY_VERSION=2.77.0

# npm is not one of deploy/install-deps.sh's packages (Debian's is too old for
# these tools): without it, or offline, the test is skipped, in CI too
skip() {
	bed_log "skipped: $*"
	exit 77
}

# 1. the tools
command -v npm >/dev/null || skip "npm not found"
mkdir -p "$NPM_DIR" || bed_die "cannot create $NPM_DIR"
NPM_DIR=$(cd "$NPM_DIR" && pwd)
PRISM=$NPM_DIR/node_modules/.bin/prism
REDOCLY=$NPM_DIR/node_modules/.bin/redocly
if [ ! -x "$PRISM" ] || [ ! -x "$REDOCLY" ]; then
	bed_log "installing @stoplight/prism-cli@$PRISM_VERSION and @redocly/cli@$REDOCLY_VERSION into $NPM_DIR"
	timeout 600 npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error \
		"@stoplight/prism-cli@$PRISM_VERSION" "@redocly/cli@$REDOCLY_VERSION" >&2 ||
		skip "npm install failed (offline?)"
fi

# 2. lint
ha_check "redocly lint passes on $OPENAPI" "$REDOCLY" lint --format stylish "$OPENAPI"

# 3. the bed, isergw-api and Prism in node 1
OUT=$SCRATCH/api
mkdir -p "$OUT"
T=iqn.2026-11.org.isergw:contract
rm -f "$OUT/tokens"
"$API" token add --token-file "$OUT/tokens" --name contract --role admin >"$OUT/admin.tok" ||
	bed_die "isergw-api token add failed"
AUTH="Authorization: Bearer $(cat "$OUT/admin.tok")"
ha_cluster_up || bed_die "the cluster did not come up"
_bed_spawn 1 api "$SCRATCH/n1/api.log" "$API" --listen 127.0.0.1:8080 --ha-socket /run/isergw/ha.sock \
	--isergwd-socket /run/isergw/isergwd.sock --change-wait-ms 5000 --token-file "$OUT/tokens" \
	--log-level info ||
	bed_die "isergw-api did not start"
bed_poll 20 "isergw-api answers" bed_exec 1 curl -sf -o /dev/null http://127.0.0.1:8080/healthz ||
	bed_die "isergw-api does not answer"
# prism_start NAME PORT DOC
prism_start() {
	_bed_spawn 1 "$1" "$SCRATCH/n1/$1.log" "$PRISM" proxy --errors -h 127.0.0.1 -p "$2" "$3" \
		http://127.0.0.1:8080/api/v1 || return 1
	bed_poll 60 "$1 listening" bed_exec 1 curl -s -o /dev/null -H "$AUTH" http://127.0.0.1:"$2"/cluster
}
prism_start prism 8090 "$OPENAPI" || bed_die "prism did not start"

# via CODE METHOD PATH [BODY] [CURL-ARGS...]: through Prism; the status must
# be CODE and there must be no violation
via() {
	local want=$1 m=$2 p=$3 data=${4:-} got viol
	shift 3
	[ $# -gt 0 ] && shift
	local args=(-s -X "$m" -o "$OUT/body" -D "$OUT/headers" -w '%{http_code}' -H "${VIA_AUTH-$AUTH}")
	[ -n "$data" ] && args+=(-H 'Content-Type: application/json' --data-binary "$data")
	got=$(bed_exec 1 curl "${args[@]}" "$@" "http://127.0.0.1:${PORT:-8090}$p")
	viol=$(grep -i '^sl-violations:' "$OUT/headers" | tr -d '\r')
	echo "$m ${p%%\?*}" >>"$OUT/exercised"
	if [ "$got" != "$want" ] || [ -n "$viol" ]; then
		bed_log "FAILED: $m $p: $got (want $want) ${viol:-} $(head -c 300 "$OUT/body")"
		fail=1
		return 1
	fi
	bed_log "ok: $m $p $got"
}
hdr() { grep -i "^$1:" "$OUT/headers" | head -n 1 | cut -d' ' -f2- | tr -d '\r'; }

truncate -s 8M "$BED_SHARED/k0.img" || bed_die "cannot make a LUN file"
: >"$OUT/exercised"
via 200 GET /openapi.json
via 200 GET /cluster
via 200 GET /nodes
via 200 GET /nodes/n2
via 200 GET /device-groups
via 200 GET /device-groups/dg1
via 200 GET /targets
via 200 GET "/targets/$BED_HA_IQN"
via 200 GET "/targets/$BED_HA_IQN/luns"
via 200 GET "/targets/$BED_HA_IQN/luns/1"
via 200 GET /config
via 201 POST /targets "{\"iqn\": \"$T\", \"chap\": {\"user\": \"k\", \"secret\": \"contract-secret\"}}"
via 201 POST "/targets/$T/luns" "{\"path\": \"$BED_SHARED/k0.img\", \"size\": \"8M\", \"device_group\": \"dg1\"}"
via 200 PATCH "/targets/$T/luns/0" '{"product": "contract", "write_cache": null}'
via 200 GET /config
cp "$OUT/body" "$OUT/config.json"
via 200 PUT /config "@$OUT/config.json" -H "If-Match: $(hdr ETag)"
via 200 PATCH /nodes/n3 '{"drained": true}'
via 200 PATCH /nodes/n3 '{"drained": false}'
via 200 GET /operations/g1
# refusals the document allows as requests
VIA_AUTH='X-No-Token: 1' via 401 GET /cluster
via 404 GET /targets/iqn.2026-11.org.isergw:none
via 404 GET /operations/g999999
via 409 POST /targets "{\"iqn\": \"$T\"}"
via 412 DELETE "/targets/$T" '' -H 'If-Match: "g1"'
via 422 POST "/targets/$T/luns" "{\"path\": \"$BED_SHARED/k1.img\", \"size\": \"4M\", \"device_group\": \"nope\"}"
via 422 PATCH /device-groups/dg1 '{"owner": "n9"}'
# a 202 and its operation: node 3's isergwd frozen
kill -STOP "$(bed_pid 3 isergwd)" || bed_die "cannot freeze node 3's isergwd"
via 202 POST /targets '{"iqn": "iqn.2026-11.org.isergw:contract2"}'
op=$(hdr Location)
kill -CONT "$(bed_pid 3 isergwd)"
via 200 GET "${op#/api/v1}"
# ACLs, CHAP, discovery CHAP
H=iqn.2026-11.org.isergw:contract-host
via 200 PATCH "/targets/$T" '{"alias": "contract", "mutual_chap": {"user": "kt", "secret": "contract-mutual-1"}}'
via 201 POST "/targets/$T/acls" "{\"initiator\": \"$H\", \"chap\": {\"user\": \"kh\", \"secret\": \"contract-host-1\"}}"
via 200 GET "/targets/$T/acls"
via 200 GET "/targets/$T/acls/$H"
via 200 PATCH "/targets/$T/acls/$H" '{"chap": {"secret": "contract-host-2"}}'
via 409 POST "/targets/$T/acls" "{\"initiator\": \"$H\"}"
via 404 GET "/targets/$T/acls/iqn.2026-11.org.isergw:none"
via 204 DELETE "/targets/$T/acls/$H"
via 200 PUT /discovery-chap '{"user": "kd", "secret": "contract-disc-1"}'
via 200 GET /discovery-chap
via 204 DELETE /discovery-chap
# portals and port groups: a second portal on node 3 (another port of its address)
n3addr=$(bed_portal 3)
n3addr=${n3addr%:*}
via 200 GET /nodes/n3/portals
via 201 POST /nodes/n3/portals "{\"url\": \"tcp://$n3addr:3261\"}"
rel=$(jq -r .rel_port_id "$OUT/body")
via 200 GET "/nodes/n3/portals/$rel"
via 200 PATCH "/nodes/n3/portals/$rel" "{\"url\": \"tcp://$n3addr:3262\"}"
via 200 GET /port-groups
via 409 POST /nodes/n3/portals "{\"url\": \"tcp://$n3addr:3263\", \"rel_port_id\": 1}"
via 204 DELETE "/nodes/n3/portals/$rel"
# sessions: a libiscsi session through node 1 (isergw-api's own node)
via 200 GET /sessions
bed_host timeout 60 iscsi-perf -t 30 "iscsi://$(bed_portal 1)/$BED_HA_IQN/1" >"$OUT/perf.out" 2>&1 &
hold=$!
# sessions_up: isergw-api on node 1 lists a normal session
sessions_up() {
	bed_exec 1 curl -s -H "$AUTH" http://127.0.0.1:8080/api/v1/sessions |
		jq -e '[.items[] | select(.type == "normal")] | length > 0' >/dev/null
}
bed_poll 20 "a session on node 1" sessions_up || bed_log "no session on node 1: $(cat "$OUT/perf.out")"
via 200 GET /sessions
tsih=$(jq -r '[.items[] | select(.type == "normal")][0].tsih' "$OUT/body")
via 200 GET "/sessions/$tsih"
via 204 DELETE "/sessions/$tsih"
via 404 GET /sessions/65535
via 404 DELETE "/sessions/65535?grace_s=5"
kill "$hold" 2>/dev/null
wait "$hold" 2>/dev/null
via 204 DELETE "/targets/$T/luns/0"
via 204 DELETE "/targets/$T"

# every path and method of the document was sent
missing=0
while read -r m tpl; do
	re="^$m $(printf '%s' "$tpl" | sed -e 's/[.]/\\./g' -e 's/{[^}]*}/[^\/]+/g')\$"
	if ! grep -Eq "$re" "$OUT/exercised"; then
		bed_log "FAILED: $m $tpl is in the document but was never sent"
		missing=1
	fi
done < <(jq -r '.paths | to_entries[] | .key as $p | .value | keys[] |
	select(. == "get" or . == "post" or . == "put" or . == "patch" or . == "delete") |
	"\(ascii_upcase) \($p)"' "$OPENAPI")
if [ "$missing" -ne 0 ]; then
	fail=1
else
	bed_log "ok: every path and method of the document was exercised"
fi

# 4. the check can fail
jq '.components.schemas.Node.required += ["foo"]' "$OPENAPI" >"$OUT/mutated.json"
prism_start prism2 8091 "$OUT/mutated.json" || bed_die "the second prism did not start"
code=$(bed_exec 1 curl -s -o /dev/null -D "$OUT/headers" -w '%{http_code}' -H "$AUTH" http://127.0.0.1:8091/nodes/n1)
ha_check "a document requiring a member isergw-api does not send: Prism reports it ($code)" \
	grep -qi '^sl-violations:.*required property' "$OUT/headers"

ha_check "isergw-api on node 1 stops with status 0" _bed_stop 1 api
_bed_stop 1 prism >/dev/null 2>&1
_bed_stop 1 prism2 >/dev/null 2>&1
if [ "$fail" -ne 0 ]; then
	bed_log "api.contract: FAILED"
	exit 1
fi
bed_log "api.contract: the document lints clean and every answer matched it"
exit 0
