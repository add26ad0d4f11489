#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2016 # checks called through ha_check and bed_poll; jq's \$variables
# SPDX-License-Identifier: Apache-2.0
#
# api.cli: isergwctl's REST commands (docs/rest-cli.md) against isergw-api
# on the three-node HA bed: what they do and their exit statuses.
#
#   api_cli.sh --isergwd PATH --isergwctl PATH --ha PATH --api PATH
#              --prefix P --subnet S --scratch DIR
#
# 1. three nodes with corosync, isergwd and isergw-ha, the example cluster
#    configuration; isergw-api in node 1 and node 2 (node 2's waits 1.5 s
#    for every live member before it answers 202);
# 2. api status: a table and --json (quorate, three members); every list
#    command's --json parses with jq;
# 3. target create (ETag printed), list, show; lun create (its file made
#    first), list, show; lun set KEY=VALUE (a string, null, a number) seen
#    by lun show --json through node 2;
# 4. exit 1 with the server's reason: an unknown target (404, its detail),
#    a value isergwd's validator refuses (422, the field), a LUN number
#    taken (409), a stale --if-match (412, nothing changed); the current
#    --if-match: 0;
# 5. node drain / undrain (node show --json), device-group move (the owner
#    seen through node 2);
# 6. config export > file, config import file --if-match: 0 and the
#    generation unchanged; import with a stale --if-match: 1;
# 6b. target set (mutual CHAP), acl create --from-json / list / show / set /
#    delete, discovery-chap set / show / delete, portal create / list / show
#    / set / delete on n3, port-group list, session list, lun set size (grown;
#    smaller: exit 1, 422); no secret in any output;
# 7. lun delete, target delete; target show then exits 1;
# 8. tokens (isergw-api --token-file with an admin and a read-only token,
#    docs/api.md "Security"; every command above used the admin one): the
#    read-only token reads (0) and writes exit 4 (403, the reason); no token
#    and a wrong one exit 4 (401); $ISERGW_TOKEN_FILE is read; a token file
#    of mode 644 and a missing named file exit 4 before any request; a token
#    to plain http off the loopback warns; no token appears in any output;
# 8b. cluster tokens (docs/api.md, "Cluster tokens"): isergw-api also in
#    node 3, without a token file; `isergwctl cluster token add` on node 1
#    prints a token (stdout only) that every node's API then takes (200; the
#    time from the answer to each node taking it printed, within 10 s), a
#    read-only one (a write: 403); `token list` on node 3 names it, without
#    a hash; revoked through node 2 it gets 401 on every node (time
#    printed); a bad name or role is refused (exit 1/2); a standalone
#    isergw-api (--config) in node 3 keeps its token file: a cluster token
#    gets 401 there, the file's token 200;
# 9. node 3's isergwd frozen: a write through node 2 is accepted (202,
#    the operation printed, exit 0); with --wait and --timeout 3: exit 6;
#    with --wait while the isergwd is let go after 2 s: exit 0, done;
# 10. node 2's isergw-api frozen: --timeout 2 exits 3 (no answer in time);
#    node 1's stopped: exit 3 (cannot connect); usage errors exit 2;
# 11. a canned HTTP server (python3) answers 401, 403, 503 with
#    Retry-After, 504 and a garbled 200: exits 4, 4, 5 (retry after shown),
#    3, 3; behind a certificate of a private CA (openssl): exit 3 without
#    --cacert, 0 with it, 3 with another CA, 0 with --insecure and a warning;
#    isergw-api itself with --tls-cert and that certificate: 3 without
#    --cacert, 0 with it;
# 12. nodes 3 and 2 killed: a write through node 1 without quorum exits 5,
#    "retry after" shown.
# Exit 77 when not root or corosync is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

API=
ha_options 4,47 --api API -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --api "$API" isergw-api
for t in curl jq python3; do
	command -v "$t" >/dev/null || bed_die "$t not found (deploy/install-deps.sh)"
done

T=iqn.2026-11.org.isergw:cli
OUT=$SCRATCH/cli
mkdir -p "$OUT" && : >"$OUT/all"
# the environment must not choose for the test
unset ISERGW_API ISERGW_TOKEN_FILE

# an admin token for every command, a read-only one for step 8 (docs/api.md,
# Security); isergwctl wants its token files readable by their owner only
TOKENS=$OUT/tokens
rm -f "$TOKENS"
(
	umask 077
	"$API" token add --token-file "$TOKENS" --name cli --role admin >"$OUT/admin.tok" &&
		"$API" token add --token-file "$TOKENS" --name cli-reader --role read-only >"$OUT/reader.tok"
) || bed_die "isergw-api token add failed"
# ctl passes these before the command's own arguments (a later --token-file wins)
CTL_AUTH=(--token-file "$OUT/admin.tok")

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

# ctl K ARGS...: isergwctl ARGS in node K against its isergw-api; stdout in
# $OUT/out, stderr in $OUT/err, the exit status in $rc (and returned)
rc=0
ctl() {
	local k=$1
	shift
	bed_exec "$k" "$BED_ISERGWCTL" --api http://127.0.0.1:8080 "${CTL_AUTH[@]}" "$@" >"$OUT/out" 2>"$OUT/err"
	rc=$?
	cat "$OUT/out" "$OUT/err" >>"$OUT/all"
	return $rc
}
# expect WHAT EXIT K ARGS...: ctl K ARGS must exit EXIT
expect() {
	local what=$1 want=$2
	shift 2
	ctl "$@"
	if [ "$rc" != "$want" ]; then
		bed_log "FAILED: $what: isergwctl ${*:2} exited $rc, not $want: $(head -c 400 "$OUT/err") $(head -c 400 "$OUT/out")"
		fail=1
		return 1
	fi
	bed_log "ok: $what (exit $rc)"
}
out_has() { grep -q -- "$1" "$OUT/out" || { bed_log "stdout lacks '$1': $(head -c 600 "$OUT/out")"; return 1; }; }
err_has() { grep -q -- "$1" "$OUT/err" || { bed_log "stderr lacks '$1': $(head -c 600 "$OUT/err")"; return 1; }; }
json_is() { jq -e "$1" "$OUT/out" >/dev/null || { bed_log "jq '$1' false on: $(head -c 600 "$OUT/out")"; return 1; }; }
gen_of() { bed_exec "$1" "$BED_ISERGWCTL" --api http://127.0.0.1:8080 "${CTL_AUTH[@]}" --json api status | jq -e .generation; }

# 1.
ha_cluster_up || bed_die "the cluster did not come up"
api_start 1 || bed_die "isergw-api did not start on node 1"
api_start 2 --change-wait-ms 1500 || bed_die "isergw-api did not start on node 2"

# 2. reads, tables and --json
expect "api status" 0 1 api status &&
	ha_check "the table shows quorate and the members" bash -c \
		"grep -q '^quorate  *yes' '$OUT/out' && grep -q '^NODE  *ID' '$OUT/out' && grep -q '^n3 ' '$OUT/out'"
expect "api status --json" 0 2 --json api status &&
	ha_check "--json: quorate, three members" json_is '.quorate and (.members | length) == 3'
expect "node list --json (after the noun)" 0 1 node list --json &&
	ha_check "three nodes" json_is '[.items[].name] == ["n1", "n2", "n3"]'
expect "device-group list --json" 0 1 --json device-group list &&
	ha_check "three device groups" json_is '(.items | length) == 3'
expect "node list" 0 1 node list && ha_check "a row per node" bash -c "[ \$(grep -c '^n[123] ' '$OUT/out') = 3 ]"
expect "device-group list" 0 2 device-group list &&
	ha_check "a column per node" grep -q '^DEVICE GROUP  *OWNER  *PREFERRED  *FAILBACK  *n1  *n2  *n3' "$OUT/out"

# 3. a target and a LUN
{ truncate -s 32M "$BED_SHARED/cli0.img" && truncate -s 4M "$BED_SHARED/cli1.img"; } ||
	bed_die "cannot make the LUN files in $BED_SHARED"
expect "target create" 0 1 target create "$T" --alias cli-target &&
	ha_check "the line says created, where, and the ETag" out_has "target $T created at /api/v1/targets/$T, ETag \"g[0-9]*\""
expect "target list" 0 2 target list && ha_check "the target in the table" bash -c \
	"grep -q '^$T  *cli-target  *0 ' '$OUT/out'"
expect "target list --json" 0 2 --json target list &&
	ha_check "--json parses, the target is there" json_is "[.items[].iqn] | index(\"$T\") != null"
expect "target show" 0 1 target show "$T" && ha_check "its alias" grep -q '^alias  *cli-target' "$OUT/out"
expect "lun create" 0 1 lun create "$T" --path "$BED_SHARED/cli0.img" --size 32M --device-group dg1 &&
	ha_check "a LUN created at .../luns/0" out_has "^a LUN of $T created at /api/v1/targets/$T/luns/0, ETag"
expect "lun create --lun 5 --json" 0 1 --json lun create "$T" --lun 5 --path "$BED_SHARED/cli1.img" --size 4194304 \
	--device-group dg2 && ha_check "--json: the LUN as created" json_is '.lun == 5 and .size == 4194304'
expect "lun list" 0 2 lun list "$T" && ha_check "LUNs 0 and 5 in the table" bash -c \
	"grep -q '^0  *32M  *dg1 ' '$OUT/out' && grep -q '^5  ' '$OUT/out'"
expect "lun set a string and null" 0 1 lun set "$T" 0 "product=cli disk" write_cache=null &&
	ha_check "lun set prints the ETag" out_has "LUN 0 of $T changed, ETag \"g[0-9]*\""
expect "lun set a number and a boolean" 0 1 lun set "$T" 0 max_transfer=262144 readonly=false
expect "lun show --json through node 2" 0 2 --json lun show "$T" 0 &&
	ha_check "the patch is there: a string, a number, a boolean" \
		json_is '.product == "cli disk" and .max_transfer == 262144 and .readonly == false'

# 4. refusals: exit 1 with the server's reason
changes_since() {
	sed -n 's/.*generation \([0-9]*\): \(.*\) from node [0-9]*$/\1 \2/p' "$(bed_logfile 1 ha)" |
		awk -v g="$1" '$1 > g && $2 != "placement"'
}
g0=$(gen_of 1)
expect "an unknown target" 1 1 target show iqn.2026-11.org.isergw:none &&
	ha_check "the server's detail on stderr" err_has "404 Not Found: no target iqn.2026-11.org.isergw:none"
printf '{"block_size": 1000}\n' >"$OUT/bad-lun.json"
expect "a block size isergwd refuses (--from-json)" 1 2 lun create "$T" --path "$BED_SHARED/bad.img" --size 4M \
	--device-group dg1 --from-json "$OUT/bad-lun.json" &&
	ha_check "422 names the field" err_has "422 .*(field: block_size)"
expect "a LUN number taken" 1 1 lun create "$T" --lun 0 --path "$BED_SHARED/cli1.img" &&
	ha_check "409 on stderr" err_has "^isergwctl: 409 "
# If-Match names a generation: wait for the leader's placements after the
# LUNs above (a generation each) to be over, so that the one named stays current
gen_steady() { local a; a=$(gen_of 1) && sleep 2 && [ "$(gen_of 1)" = "$a" ]; }
bed_poll 30 "the generation steady for 2 s" gen_steady
g=$(gen_of 1)
expect "a stale --if-match" 1 2 lun set "$T" 0 "product=stale" --if-match "\"g$((g - 1))\"" &&
	ha_check "412 and the reason" err_has "412 Precondition Failed: If-Match"
ha_check "the stale write changed nothing" [ -z "$(changes_since "$g")" ]
expect "the current --if-match" 0 2 lun set "$T" 0 "product=fresh" --if-match "\"g$g\"" &&
	ha_check "a new ETag" out_has "ETag \"g$((g + 1))\""
# The write went through node 2 and was answered once every live node had
# applied it. The leader may place device groups again at any time (a
# placement is a generation of its own), so the count is of the changes
# made since g0 that are not placements, as node 1's agent logged them:
# the one write, and nothing for the refusals.
g1=$(gen_of 1)
changes_since "$g0" >"$OUT/changes"
bed_log "generation before the refusals $g0, now $g1; changes since, not placements: $(paste -sd, "$OUT/changes")"
ha_check "no refusal moved the generation: one change since, the write" \
	[ "$(cat "$OUT/changes")" = "$((g + 1)) new configuration" ]

# 5. drain, undrain, move
dg_owner_is() { ctl "$1" --json device-group show "$2" && [ "$(jq -r .owner "$OUT/out")" = "$3" ]; }
n3_drained_is() { ctl 2 --json node show n3 && [ "$(jq -r .drained "$OUT/out")" = "$1" ]; }
expect "node drain n3" 0 1 node drain n3 && ha_check "the line says changed" out_has "node n3 changed"
ha_check "n3 drained, seen through node 2" n3_drained_is true
dg_owner_not() { ctl "$1" --json device-group show "$2" && o=$(jq -r .owner "$OUT/out") && [ -n "$o" ] && [ "$o" != "$3" ]; }
ha_check "dg3 moved off n3" bed_poll 30 "dg3 off n3" dg_owner_not 2 dg3 n3
expect "node undrain n3" 0 2 node undrain n3
ha_check "n3 undrained" bed_poll 10 "n3 undrained" n3_drained_is false
ha_check "dg3 back on n3" bed_poll 30 "dg3 on n3" dg_owner_is 1 dg3 n3
expect "device-group move dg2 n1" 0 1 device-group move dg2 n1 && ha_check "the line" out_has "^device-group dg2 changed, ETag"
ha_check "dg2 owned by n1, seen through node 2" bed_poll 30 "dg2 on n1" dg_owner_is 2 dg2 n1
expect "device-group show" 0 2 device-group show dg2 && ha_check "its owner line" grep -q '^owner  *n1' "$OUT/out"
expect "a move to a node that does not exist" 1 1 device-group move dg2 n9 && ha_check "field owner" err_has "(field: owner)"

# 6. export and import
g=$(gen_of 1)
expect "config export" 0 2 config export && cp "$OUT/out" "$OUT/export.json"
ha_check "the export is the configuration (JSON with the target)" \
	jq -e --arg t "$T" '[.targets[].iqn] | index($t) != null' "$OUT/export.json" >/dev/null
expect "config import with --if-match" 0 1 config import "$OUT/export.json" --if-match "\"g$g\"" &&
	ha_check "imported, the generation unchanged" out_has "imported, ETag \"g$g\""
expect "config import from stdin with a stale --if-match" 1 1 config import - --if-match '"g1"' <"$OUT/export.json" &&
	ha_check "412" err_has "412 "

# 6b. ACLs, CHAP, portals, port groups, sessions
H=iqn.2026-11.org.isergw:cli-host
printf '{"chap": {"user": "clihost", "secret": "cli-host-secret-1"}}\n' >"$OUT/acl.json"
printf '{"user": "clidisc", "secret": "cli-disc-secret-1"}\n' >"$OUT/dchap.json"
expect "target set chap and mutual_chap" 0 1 target set "$T" \
	'chap={"user":"cli","secret":"cli-target-secret-1"}' 'mutual_chap={"user":"clit","secret":"cli-mutual-secret-1"}' &&
	ha_check "the line says changed" out_has "target $T changed"
expect "acl create --from-json" 0 1 acl create "$T" "$H" --from-json "$OUT/acl.json" &&
	ha_check "the line gives the Location" out_has "at /api/v1/targets/$T/acls/$H"
expect "acl list" 0 2 acl list "$T" && ha_check "the ACL and its CHAP user" grep -q "^$H  *clihost" "$OUT/out"
expect "acl show --json" 0 2 --json acl show "$T" "$H" && ha_check "no secret" json_is '.chap == {"user": "clihost"}'
expect "acl set chap=null" 0 1 acl set "$T" "$H" chap=null
expect "acl list after chap=null" 0 1 acl list "$T" && ha_check "the target's CHAP" out_has "(the target's)"
expect "acl delete" 0 1 acl delete "$T" "$H"
expect "acl list empty" 0 1 acl list "$T" && ha_check "no ACLs" out_has "no ACLs"
expect "discovery-chap set" 0 1 discovery-chap set "$OUT/dchap.json"
expect "discovery-chap show" 0 2 discovery-chap show && ha_check "its user" grep -q '^user  *clidisc' "$OUT/out"
expect "discovery-chap delete" 0 1 discovery-chap delete
n3a=$(bed_portal 3)
expect "portal create" 0 1 portal create n3 "tcp://${n3a%:*}:3261" --rel-port-id 9 &&
	ha_check "the line gives the Location" out_has "at /api/v1/nodes/n3/portals/9"
expect "portal list" 0 2 portal list n3 && ha_check "portal 9 in the table" grep -q "^9  *tcp://${n3a%:*}:3261" "$OUT/out"
expect "portal set" 0 1 portal set n3 9 "url=tcp://${n3a%:*}:3262"
expect "portal show --json" 0 2 --json portal show n3 9 && ha_check "the new url" json_is ".url == \"tcp://${n3a%:*}:3262\""
expect "port-group list" 0 1 port-group list && ha_check "n3's group has ports 3 and 9" grep -q "^3  *n3  *\[3,9\]" "$OUT/out"
expect "portal delete" 0 1 portal delete n3 9
expect "portal show of a deleted portal" 1 1 portal show n3 9
expect "session list" 0 1 session list
expect "session list --json" 0 1 --json session list && ha_check "items" json_is '.items | type == "array"'
expect "session logout of none" 1 1 session logout 65535 && ha_check "404" err_has "404 "
expect "lun set size grown" 0 1 lun set "$T" 0 size=48M
expect "lun set size smaller" 1 1 lun set "$T" 0 size=16M && ha_check "422 size" err_has "size"
ha_check "no secret in any output" bash -c "! grep -q 'cli-host-secret-1\|cli-disc-secret-1\|cli-mutual-secret-1\|cli-target-secret-1' '$OUT/all'"

# 7. delete
expect "lun delete 5" 0 2 lun delete "$T" 5 && ha_check "the line says deleted" out_has "LUN 5 of $T deleted"
expect "lun delete 0" 0 1 lun delete "$T" 0
expect "target delete" 0 1 target delete "$T"
expect "the target is gone" 1 2 target show "$T"

# 8. tokens
expect "the read-only token reads" 0 1 --token-file "$OUT/reader.tok" target list
expect "the read-only token writes" 4 2 --token-file "$OUT/reader.tok" target create iqn.2026-11.org.isergw:cli-ro &&
	ha_check "403 and the reason" err_has "403 Forbidden: token cli-reader is read-only"
expect "nothing was made by it" 1 1 target show iqn.2026-11.org.isergw:cli-ro
CTL_AUTH=()
expect "no token (no file named, no /etc/isergw/api-token)" 4 1 target list && ha_check "401" err_has "^isergwctl: 401 "
ISERGW_TOKEN_FILE=$OUT/admin.tok expect "\$ISERGW_TOKEN_FILE" 0 1 target list --json
# the admin token with its last character changed
tok=$(head -n 1 "$OUT/admin.tok")
if [ "${tok: -1}" = A ]; then tok=${tok%?}B; else tok=${tok%?}A; fi
(umask 077 && printf '%s\n' "$tok" >"$OUT/wrong.tok")
unset tok
expect "a token that does not verify" 4 1 --token-file "$OUT/wrong.tok" target list &&
	ha_check "401, not valid" err_has "401 .*not valid"
expect "a token to a non-loopback http:// URL (nothing listens there)" 3 1 --token-file "$OUT/admin.tok" \
	--api "http://$(bed_ring_addr 1):8080" api status && ha_check "a warning" err_has "the token goes in clear text"
cp "$OUT/reader.tok" "$OUT/open.tok" && chmod 644 "$OUT/open.tok"
expect "a token file others can read" 4 1 --token-file "$OUT/open.tok" target list &&
	ha_check "the reason names the mode" err_has "open to group or others (mode 0644)"
ISERGW_TOKEN_FILE=$OUT/open.tok expect "\$ISERGW_TOKEN_FILE of mode 644" 4 1 target list
expect "a token file named that is missing" 4 1 --token-file "$OUT/nothing" target list
CTL_AUTH=(--token-file "$OUT/admin.tok")
ha_check "no token appears in any output" bash -c \
	"! grep -qFf <(head -n 1 -q '$OUT/admin.tok' '$OUT/reader.tok' '$OUT/wrong.tok') '$OUT/all'"

# 8b. cluster tokens: made on node 1, taken by every node's isergw-api
# node 3's has no token file: the cluster's tokens only
_bed_spawn 3 api "$SCRATCH/n3/api.log" "$API" --listen 127.0.0.1:8080 \
	--ha-socket /run/isergw/ha.sock --isergwd-socket /run/isergw/isergwd.sock --log-level info
bed_poll 20 "isergw-api on node 3 answers" bed_exec 3 curl -sf -o /dev/null http://127.0.0.1:8080/healthz ||
	bed_die "isergw-api did not start on node 3 without a token file"
# code_of K TOKENFILE [METHOD [PORT [PATH]]]: the HTTP status of /api/v1/cluster
# (or PATH) through node K's API
code_of() {
	bed_exec "$1" curl -s -o /dev/null -w '%{http_code}' -X "${3:-GET}" \
		-H "Authorization: Bearer $(head -n 1 "$2")" "http://127.0.0.1:${4:-8080}${5:-/api/v1/cluster}"
}
code_is() { [ "$(code_of "${@:2}")" = "$1" ]; }
now_ms() { date +%s%3N; }
# until_all WANT TOKENFILE T0 WHAT: every node's API answers WANT (10 s at most);
# each node's time from T0 printed
until_all() {
	local want=$1 tf=$2 t0=$3 what=$4 k left=" 1 2 3 " got deadline=$(($(now_ms) + 10000))
	while [ -n "${left// /}" ]; do
		for k in $left; do
			got=$(code_of "$k" "$tf")
			if [ "$got" = "$want" ]; then
				bed_log "measured: $what on node $k after $(($(now_ms) - t0)) ms"
				left=${left/ $k / }
			fi
		done
		if [ "$(now_ms)" -gt "$deadline" ]; then
			bed_log "FAILED: $what: nodes$left do not answer $want within 10 s (last: $got)"
			return 1
		fi
		sleep 0.02
	done
}
ha_check "node 3 without a token file refuses node 1's file token" code_is 401 3 "$OUT/admin.tok"
(umask 077 && bed_exec 1 "$BED_ISERGWCTL" cluster token add prom --role read-only >"$OUT/prom.tok" 2>"$OUT/err")
rc=$?
t0=$(now_ms)
if [ "$rc" = 0 ] && grep -q '^isergw_prom_' "$OUT/prom.tok" && [ "$(wc -l <"$OUT/prom.tok")" = 1 ]; then
	bed_log "ok: cluster token add: one token on stdout; $(head -c 300 "$OUT/err")"
else
	bed_log "FAILED: cluster token add exited $rc: $(head -c 300 "$OUT/err")"
	fail=1
fi
ha_check "the token made on node 1 works on every node" until_all 200 "$OUT/prom.tok" "$t0" "token prom taken"
ha_check "the read-only cluster token writing: 403" code_is 403 3 "$OUT/prom.tok" POST
bed_exec 3 "$BED_ISERGWCTL" --json cluster token list >"$OUT/out" 2>"$OUT/err"
ha_check "token list on node 3 names it, read-only, no hash" bash -c \
	"jq -e '[.tokens[] | select(.name == \"prom\" and .role == \"read-only\" and .created > 0)] | length == 1' '$OUT/out' >/dev/null && ! grep -q sha256 '$OUT/out'"
# cl_refused EXIT WORD ARGS...: isergwctl cluster ARGS in node 3 exits EXIT, WORD on stderr
cl_refused() {
	local want=$1 word=$2
	shift 2
	bed_exec 3 "$BED_ISERGWCTL" cluster "$@" >"$OUT/out" 2>"$OUT/err"
	rc=$?
	if [ "$rc" != "$want" ] || ! grep -qi -- "$word" "$OUT/err"; then
		bed_log "exit $rc: $(head -c 300 "$OUT/err")"
		return 1
	fi
}
ha_check "a second token prom: refused (exit 1)" cl_refused 1 exists token add prom --role admin
ha_check "a name with a slash: refused (exit 1)" cl_refused 1 name token add 'a/b' --role admin
ha_check "a bad role: usage error (exit 2)" cl_refused 2 role token add x --role root
bed_exec 2 "$BED_ISERGWCTL" cluster token revoke prom >"$OUT/out" 2>"$OUT/err"
rc=$?
t0=$(now_ms)
if [ "$rc" = 0 ]; then
	bed_log "ok: cluster token revoke on node 2: $(head -c 200 "$OUT/out")"
else
	bed_log "FAILED: cluster token revoke exited $rc: $(head -c 300 "$OUT/err")"
	fail=1
fi
ha_check "the token revoked on node 2 is refused on every node" until_all 401 "$OUT/prom.tok" "$t0" \
	"token prom refused"
# a standalone isergw-api (no agent) keeps its token file: the cluster's are not its
(umask 077 && bed_exec 1 "$BED_ISERGWCTL" cluster token add prom2 --role admin >"$OUT/prom2.tok" 2>"$OUT/err") ||
	{ bed_log "FAILED: cluster token add prom2: $(head -c 300 "$OUT/err")"; fail=1; }
echo '{}' >"$OUT/standalone.json"
_bed_spawn 3 apisa "$SCRATCH/n3/api-standalone.log" "$API" --listen 127.0.0.1:8081 \
	--config "$OUT/standalone.json" --isergwd-socket /run/isergw/isergwd.sock \
	--token-file "$TOKENS" --log-level info
bed_poll 20 "the standalone isergw-api answers" bed_exec 3 curl -sf -o /dev/null http://127.0.0.1:8081/healthz ||
	{ bed_log "FAILED: the standalone isergw-api did not start"; fail=1; }
ha_check "the cluster's token prom2 works on node 3's cluster API" bed_poll 10 "prom2 on node 3" \
	code_is 200 3 "$OUT/prom2.tok"
ha_check "standalone: a cluster token gets 401" code_is 401 3 "$OUT/prom2.tok" GET 8081 /metrics
ha_check "standalone: its file's token gets 200" code_is 200 3 "$OUT/admin.tok" GET 8081 /metrics
ha_check "the standalone isergw-api stops with status 0" _bed_stop 3 apisa
bed_exec 1 "$BED_ISERGWCTL" cluster token revoke prom2 >/dev/null 2>&1
cat "$OUT/prom.tok" "$OUT/prom2.tok" >>"$OUT/secrets"
ha_check "no cluster token in any isergwctl REST output" bash -c "! grep -qFf '$OUT/secrets' '$OUT/all'"

# 9. 202, --wait
S=iqn.2026-11.org.isergw:cli-slow
kill -STOP "$(bed_pid 3 isergwd)" || bed_die "cannot freeze node 3's isergwd"
expect "a write node 3 cannot apply" 0 2 target create "$S" &&
	ha_check "accepted, the operation and n3 pending" out_has "accepted, operation g[0-9]*: applied by .*; pending on n3"
expect "--wait that runs out" 6 2 --timeout 4 target create "$S-2" --wait &&
	ha_check "the operation and what is pending" err_has "not done when --wait ran out: pending on n3"
# thawed well after the 1.5 s wait made the write 202 (isergwctl's start and
# the POST take most of a second on a busy machine), well within --timeout
( sleep 4; kill -CONT "$(bed_pid 3 isergwd)" ) &
thaw=$!
expect "--wait while n3's isergwd is let go" 0 2 --timeout 30 target create "$S-3" --wait &&
	ha_check "done" out_has "operation g[0-9]* done: applied by"
wait "$thaw"
kill -CONT "$(bed_pid 3 isergwd)" 2>/dev/null

# 10. no answer, no server, usage
kill -STOP "$(bed_pid 2 api)" || bed_die "cannot freeze node 2's isergw-api"
expect "isergw-api does not answer within --timeout" 3 2 --timeout 2 api status &&
	ha_check "no answer in time" err_has "no answer in time"
kill -CONT "$(bed_pid 2 api)"
expect "node 2's isergw-api answers again" 0 2 api status
ha_check "isergw-api on node 1 stops with status 0" _bed_stop 1 api
expect "the API down" 3 1 api status && ha_check "cannot connect" err_has "Couldn't connect\|Failed to connect"
expect "an unknown verb" 2 1 target frob
expect "an option a command does not take" 2 1 target list --wait
expect "a REST option before a control-socket command" 2 1 --api http://x status

# 11. statuses isergw-api on this branch never sends, from a canned server
# (outside the bed: python3 on a free port of this machine's loopback)
cat >"$OUT/canned.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        last = self.path.split("/")[-1]
        code = int(last) if last.isdigit() else 200
        body = b'{"type":"about:blank","title":"T","status":%d,"detail":"canned %d"}' % (code, code)
        if last == "cluster":
            body = b"this is not JSON"
        self.send_response(code)
        self.send_header("Content-Type", "application/problem+json")
        if code == 503:
            self.send_header("Retry-After", "7")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
if len(sys.argv) > 3:  # CERT KEY: https
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(sys.argv[1], "w").write("%d\n" % s.server_address[1])
s.serve_forever()
EOF
rm -f "$OUT/canned.port"
python3 "$OUT/canned.py" "$OUT/canned.port" &
canned=$!
bed_poll 10 "the canned server" test -s "$OUT/canned.port"
CANNED=http://127.0.0.1:$(cat "$OUT/canned.port")
canned() { # canned WANT ARGS...: isergwctl against the canned server must exit WANT
	local want=$1
	shift
	"$BED_ISERGWCTL" --api "$CANNED" "$@" >"$OUT/out" 2>"$OUT/err"
	rc=$?
	cat "$OUT/out" "$OUT/err" >>"$OUT/all"
	[ "$rc" = "$want" ] || { bed_log "$*: exit $rc, not $want: $(cat "$OUT/err")"; return 1; }
}
ha_check "401: exit 4" canned 4 node show 401
ha_check "403: exit 4" canned 4 node show 403
ha_check "503: exit 5" canned 5 node show 503 && ha_check "the retry shown" err_has "canned 503 (retry after 7 s)"
ha_check "504: exit 3" canned 3 node show 504
ha_check "409: exit 1" canned 1 node show 409
ha_check "a garbled 200: exit 3" canned 3 api status && ha_check "said so" err_has "not a JSON object"
kill "$canned"
wait "$canned" 2>/dev/null

# TLS, from the canned server behind a certificate of a private CA (made
# here with openssl): refused without --cacert (exit 3, the TLS reason),
# accepted with it, and with --insecure only after a warning
if command -v openssl >/dev/null; then
	if ! {
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=api-cli-test-ca \
			-keyout "$OUT/ca.key" -out "$OUT/ca.pem" 2>/dev/null &&
			openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$OUT/srv.key" \
				-out "$OUT/srv.csr" 2>/dev/null &&
			printf 'subjectAltName=IP:127.0.0.1\n' >"$OUT/srv.ext" &&
			openssl x509 -req -in "$OUT/srv.csr" -CA "$OUT/ca.pem" -CAkey "$OUT/ca.key" \
				-CAcreateserial -days 2 -extfile "$OUT/srv.ext" -out "$OUT/srv.pem" 2>/dev/null
	}; then
		bed_die "openssl could not make the test certificates"
	fi
	rm -f "$OUT/canned-tls.port"
	python3 "$OUT/canned.py" "$OUT/canned-tls.port" "$OUT/srv.pem" "$OUT/srv.key" &
	canned=$!
	bed_poll 10 "the canned TLS server" test -s "$OUT/canned-tls.port"
	CANNED=https://127.0.0.1:$(cat "$OUT/canned-tls.port")
	ha_check "TLS verified by default: a private CA's certificate refused (exit 3)" canned 3 node show 200 &&
		ha_check "the TLS reason and the hint" err_has "TLS: .*(--cacert FILE for a private CA)"
	ha_check "--cacert: verified, exit 0" canned 0 --cacert "$OUT/ca.pem" node show 200 &&
		ha_check "no warning" bash -c "! grep -q warning '$OUT/err'"
	ha_check "--cacert with another CA: exit 3" canned 3 --cacert /etc/ssl/certs/ca-certificates.crt node show 200
	ha_check "--insecure: exit 0" canned 0 --insecure node show 200 &&
		ha_check "with a warning" err_has "warning: --insecure: the certificate of $CANNED is not verified"
	kill "$canned"
	wait "$canned" 2>/dev/null
	# and isergw-api itself serving TLS (--tls-cert) with that certificate, in node 1
	_bed_spawn 1 apitls "$SCRATCH/n1/apitls.log" "$API" --listen 127.0.0.1:8443 \
		--tls-cert "$OUT/srv.pem" --tls-key "$OUT/srv.key" --token-file "$TOKENS" \
		--ha-socket /run/isergw/ha.sock --isergwd-socket /run/isergw/isergwd.sock ||
		bed_die "isergw-api with TLS did not start"
	bed_poll 20 "isergw-api with TLS answers" bed_exec 1 curl -sf -o /dev/null --cacert "$OUT/ca.pem" \
		https://127.0.0.1:8443/healthz
	expect "isergw-api over TLS, no --cacert" 3 1 --api https://127.0.0.1:8443 target list &&
		ha_check "the TLS reason" err_has "TLS: "
	expect "isergw-api over TLS with --cacert" 0 1 --api https://127.0.0.1:8443 --cacert "$OUT/ca.pem" target list &&
		ha_check "no warning" bash -c "! grep -q warning '$OUT/err'"
	ha_check "isergw-api with TLS stops with status 0" _bed_stop 1 apitls
else
	bed_log "openssl not installed: the TLS checks are skipped"
fi

# 12. no quorum: exit 5 with the retry
api_start 1 || bed_die "isergw-api did not start again on node 1"
bed_kill_node 3 || bed_die "node 3 could not be killed"
bed_kill_node 2 || bed_die "node 2 could not be killed"
bed_wait_inquorate 1 1 || bed_die "node 1 never lost quorum"
inq() { ctl 1 --json api status && json_is '.quorate == false'; }
ha_check "node 1 reports no quorum" bed_poll 20 "node 1 inquorate" inq
expect "a write without quorum" 5 1 target create iqn.2026-11.org.isergw:cli-lost &&
	ha_check "503 and the retry" err_has "503 .*(retry after [0-9]* s)"

if [ "$fail" -ne 0 ]; then
	bed_log "api.cli: FAILED"
	exit 1
fi
bed_log "api.cli: isergwctl's REST commands and their exit statuses on the three-node bed"
exit 0
