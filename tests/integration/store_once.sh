#!/usr/bin/env bash
# shellcheck disable=SC2015 # pass() never fails: A && pass || bad is an if-else
# SPDX-License-Identifier: Apache-2.0
#
# A backing store belongs to one LUN (docs/configuration.md, "One store, one
# LUN"): isergwd refuses a second LUN on a store, naming both LUNs, however
# the store is spelled or reached.
#
#   1. at start (--config), each refused with exit status 1 and the reason
#      once: one file by two spellings (DIR/../DIR/x.img, //DIR//x.img), by
#      a relative and an absolute path, by a hard link, by a symlink; one
#      block device by two paths (a loop device and a symlink to it; skipped
#      with a message where losetup cannot make one); one backend LUN of tgt
#      by two spellings of its URL (host case, port, credentials, LUN 01)
#      and by two portals of tgt (two addresses: told apart only by the
#      backend's VPD page 0x83 designator, when isergwd opens the LUNs);
#   2. a running isergwd: a SIGHUP reload adding a hard link is refused,
#      the configuration kept (LUN 0 still served); isergwctl apply with a
#      symlink exits 1 naming both LUNs; an apply whose new LUN reaches the
#      backend LUN by its second portal leaves that LUN out (err log line,
#      once), the other LUNs served, one of a second tgtd among them (its
#      LU has the same locally assigned NAA, target id 1 and LUN 1, under
#      another target name: another store); a store moved in one apply from
#      a LUN of one target to a new target listed before it is opened there;
#   3. isergw-api standalone (--config): POST of a LUN on a hard link of
#      LUN 0 is 422, field "path", the detail naming both LUNs; the file is
#      unchanged.
#
#   store_once.sh --daemon PATH --ctl PATH --api PATH [--scratch DIR]
#                 [--addr A] [--port P]
# Addresses ADDR..ADDR+3 (127.0.0.150-153), ports PORT..PORT+3 (13630-13633):
# isergwd ADDR:PORT, tgtd ADDR+1:PORT+1 and ADDR+2:PORT+1, isergw-api
# ADDR:PORT+2, the second tgtd ADDR+3:PORT+3.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

ADDR=127.0.0.150
PORT=13630
CTL=''
API=''
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--ctl) CTL=$2; shift 2 ;;
	--api) API=$2; shift 2 ;;
	-h|--help) sed -n '4,30p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
only_isergw "one store per LUN"
[ -x "$CTL" ] || die "--ctl PATH (isergwctl) required"
for t in iscsi-ls tgtd tgtadm curl jq; do
	command -v "$t" >/dev/null || { log "SKIP: $t not found"; exit 77; }
done

base=${ADDR%.*}
last=${ADDR##*.}
BADDR1=$base.$((last + 1))
BADDR2=$base.$((last + 2))
BADDR3=$base.$((last + 3))
BPORT=$((PORT + 1))
HTTP_PORT=$((PORT + 2))
BPORT3=$((PORT + 3))
T=iqn.2026-11.org.isergw:store-once
BIQN=iqn.2026-11.org.isergw:store-once-backend
S=$SCRATCH
fail=0
pass() { log "ok: $*"; }
bad() { log "FAILED: $*"; fail=1; }
LOOP=''
API_PID=''
trap '[ -n "$API_PID" ] && kill "$API_PID" 2>/dev/null; [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null; lib_cleanup 2>/dev/null' EXIT

rm -rf "$S"/d "$S"/*.img "$S"/*.json "$S"/*.log "$S"/state "$S"/link* "$S"/loopdev
mkdir -p "$S/d" "$S/state"
truncate -s 4M "$S/d/x.img" "$S/d/y.img" "$S/backend.img" "$S/backend3.img" || die "cannot create the images"
ln "$S/d/x.img" "$S/d/hard.img"
ln -s "$S/d/x.img" "$S/link.img"

# config LUNS-JSON [TOP-EXTRA]: isergwd's configuration, target T with LUNS
config() {
	cat <<JSON
{
  "log_level": "info",
  "state_dir": "$S/state",
  "ctl_socket": "$S/state/ctl.sock",
  "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "$T", "luns": [ $1 ] } ]
}
JSON
}
lun() { printf '{ "lun": %s, "path": "%s" }' "$1" "$2"; }

# refused NAME WANT LUNS-JSON [DIR]: isergwd --config (run in DIR) exits 78,
# its output naming both LUNs (WANT, an ERE) once.
refused() {
	local name=$1 want=$2 luns=$3 dir=${4:-$S} out rc n
	out=$S/$name.log
	config "$luns" >"$S/$name.json"
	(cd "$dir" && exec timeout --kill-after=5 15 "$ISERGWD" --config "$S/$name.json") >"$out" 2>&1
	rc=$?
	n=$(count_log "$out" "$want")
	if [ "$rc" = 78 ] && [ "$n" = 1 ]; then
		pass "$name: refused, exit 78: $(grep -E -m1 -- "$want" "$out")"
	else
		bad "$name: exit $rc, $n line(s) matching '$want'; $(tail -n 3 "$out")"
	fi
}
both() { printf 'LUN %s of %s and LUN %s of %s name one backing store' "$1" "$T" "$2" "$T"; }

# ---- 1. at start
refused dotdot "targets\[0\]\.luns\[1\]\.path: $(both 1 0) \($S/d/x\.img\): a store belongs to one LUN" \
	"$(lun 0 "$S/d/x.img"), $(lun 1 "$S/d/../d/x.img")"
refused slashes "targets\[0\]\.luns\[1\]\.path: $(both 3 0) \($S/d/x\.img\)" \
	"$(lun 0 "$S/d/x.img"), $(lun 3 "/$S//d/./x.img")"
refused relative "targets\[0\]\.luns\[1\]\.path: $(both 1 0) \(d/x\.img and $S/d/x\.img are one file, device [0-9]+:[0-9]+ inode [0-9]+\)" \
	"$(lun 0 d/x.img), $(lun 1 "$S/d/x.img")" "$S"
refused hardlink "targets\[0\]\.luns\[1\]\.path: $(both 1 0) \($S/d/x\.img and $S/d/hard\.img are one file" \
	"$(lun 0 "$S/d/x.img"), $(lun 1 "$S/d/hard.img")"
refused symlink "targets\[0\]\.luns\[2\]\.path: $(both 2 0) \($S/d/x\.img and $S/link\.img are one file" \
	"$(lun 0 "$S/d/x.img"), $(lun 1 "$S/d/y.img"), $(lun 2 "$S/link.img")"

truncate -s 4M "$S/loop.img"
if LOOP=$(losetup -f --show "$S/loop.img" 2>"$S/losetup.err") && [ -b "$LOOP" ]; then
	ln -s "$LOOP" "$S/loopdev"
	refused blockdev "$(both 1 0) \($LOOP and $S/loopdev are one block device, [0-9]+:[0-9]+\)" \
		"$(lun 0 "$LOOP"), $(lun 1 "$S/loopdev")"
	losetup -d "$LOOP"
	LOOP=''
else
	LOOP=''
	log "SKIP (this case only): no loop device here: $(cat "$S/losetup.err")"
fi

# the backend: tgtd with LUN 1 on two portals
tgtd -f -C "$BPORT" --iscsi "portal=$BADDR1:$BPORT" >"$S/tgtd.log" 2>&1 &
B_PID=$!
_LIB_DAEMONS+=("$B_PID tgt")
wait_port "$B_PID" "$BADDR1" "$BPORT" || die "tgtd did not start"
ta=(tgtadm -C "$BPORT" --lld iscsi)
"${ta[@]}" --mode target --op new --tid 1 -T "$BIQN" >>"$S/tgtd.log" 2>&1 &&
	"${ta[@]}" --mode logicalunit --op new --tid 1 --lun 1 -b "$S/backend.img" >>"$S/tgtd.log" 2>&1 &&
	"${ta[@]}" --mode target --op bind --tid 1 -I ALL >>"$S/tgtd.log" 2>&1 &&
	"${ta[@]}" --mode portal --op new --param "portal=$BADDR2:$BPORT" >>"$S/tgtd.log" 2>&1 ||
	die "tgtadm failed: $(tail -n 3 "$S/tgtd.log")"
wait_port "$B_PID" "$BADDR2" "$BPORT" || die "tgtd's second portal is not there"
# another tgtd, its LU with the same target id and LUN under another name
tgtd -f -C "$BPORT3" --iscsi "portal=$BADDR3:$BPORT3" >"$S/tgtd3.log" 2>&1 &
B3_PID=$!
_LIB_DAEMONS+=("$B3_PID tgt")
wait_port "$B3_PID" "$BADDR3" "$BPORT3" || die "the second tgtd did not start"
ta3=(tgtadm -C "$BPORT3" --lld iscsi)
"${ta3[@]}" --mode target --op new --tid 1 -T "$BIQN-3" >>"$S/tgtd3.log" 2>&1 &&
	"${ta3[@]}" --mode logicalunit --op new --tid 1 --lun 1 -b "$S/backend3.img" >>"$S/tgtd3.log" 2>&1 &&
	"${ta3[@]}" --mode target --op bind --tid 1 -I ALL >>"$S/tgtd3.log" 2>&1 ||
	die "tgtadm (second tgtd) failed: $(tail -n 3 "$S/tgtd3.log")"
URL3=iscsi://$BADDR3:$BPORT3/$BIQN-3/1
URL1=iscsi://$BADDR1:$BPORT/$BIQN/1
URL2=iscsi://$BADDR2:$BPORT/$BIQN/1
refused url-spelling "targets\[0\]\.luns\[1\]\.path: $(both 1 0) \(iscsi://$BADDR1:$BPORT/$BIQN/1\)" \
	"$(lun 0 "$URL1"), $(lun 1 "iscsi://user%secretsecret@$BADDR1:0$BPORT/${BIQN^^}/01")"
refused two-portals "target $T LUN 1: not served: $(both 1 0) \(one backend logical unit: VPD 0x83 designator type [0-9]+ [0-9a-f]+\)" \
	"$(lun 0 "$URL1"), $(lun 1 "$URL2")"

# ---- 2. a running isergwd
config "$(lun 0 "$S/d/x.img")" >"$S/run.json"
config_start run "$S/run.json" "$ADDR:$PORT" || die "isergwd did not start"
GPID=$T_PID
GLOG=$T_LOG
luns_served() {
	timeout --kill-after=5 20 iscsi-ls -s "iscsi://$ADDR:$PORT" </dev/null 2>/dev/null |
		grep -c 'Lun:'
}
[ "$(luns_served)" = 1 ] && pass "LUN 0 served" || bad "LUN 0 not served"

config "$(lun 0 "$S/d/x.img"), $(lun 1 "$S/d/hard.img")" >"$S/run.json"
kill -HUP "$GPID"
wait_log "$GLOG" 'reload failed: configuration kept' 20 &&
	pass "SIGHUP with a hard link: reload refused" || bad "SIGHUP with a hard link: no refusal"
[ "$(count_log "$GLOG" "$(both 1 0) \($S/d/x\.img and $S/d/hard\.img are one file")" = 1 ] &&
	pass "SIGHUP: the reason, once" || bad "SIGHUP: the reason is not in the log once"
[ "$(luns_served)" = 1 ] && pass "SIGHUP refused: LUN 0 still served" || bad "after the SIGHUP: not 1 LUN"

config "$(lun 0 "$S/d/x.img"), $(lun 4 "$S/link.img")" >"$S/apply.json"
epoch=$("$CTL" -s "$S/state/ctl.sock" --json status | jq -r '.epoch')
"$CTL" -s "$S/state/ctl.sock" apply --epoch $((epoch + 1)) "$S/apply.json" >"$S/apply.out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q "targets\[0\]\.luns\[1\]\.path: $(both 4 0) ($S/d/x.img and $S/link.img are one file" "$S/apply.out"; then
	pass "isergwctl apply with a symlink: exit $rc, $(tail -n 1 "$S/apply.out")"
else
	bad "isergwctl apply with a symlink: exit $rc, $(cat "$S/apply.out")"
fi

config "$(lun 0 "$S/d/x.img"), $(lun 1 "$URL1"), $(lun 2 "$URL2"), $(lun 3 "$S/d/y.img"), $(lun 5 "$URL3")" >"$S/apply.json"
epoch=$("$CTL" -s "$S/state/ctl.sock" --json status | jq -r '.epoch')
"$CTL" -s "$S/state/ctl.sock" apply --epoch $((epoch + 1)) "$S/apply.json" >"$S/apply.out" 2>&1 ||
	bad "isergwctl apply (backend LUN twice by two portals): $(cat "$S/apply.out")"
want="target $T LUN 2: not served: $(both 2 1) \(one backend logical unit: VPD 0x83 designator"
wait_log "$GLOG" "$want" 20 && [ "$(count_log "$GLOG" "$want")" = 1 ] &&
	pass "the backend LUN by its second portal: refused at open, logged once" ||
	bad "the backend LUN by its second portal: no refusal in the log"
grep -E "$want" "$GLOG" | grep -q ' err ' && pass "at err" || bad "not at err: $(grep -E "$want" "$GLOG")"
[ "$(luns_served)" = 4 ] && pass "LUNs 0, 1, 3 and 5 (the second tgtd) served, not 2" ||
	bad "not 4 LUNs served: $(luns_served)"

# a store moved from a LUN of T to a new target listed before T, in one apply: not refused
cat >"$S/move.json" <<JSON
{
  "log_level": "info",
  "state_dir": "$S/state",
  "ctl_socket": "$S/state/ctl.sock",
  "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "$T-2", "luns": [ $(lun 0 "$S/d/y.img") ] },
               { "iqn": "$T", "luns": [ $(lun 0 "$S/d/x.img") ] } ]
}
JSON
epoch=$("$CTL" -s "$S/state/ctl.sock" --json status | jq -r '.epoch')
"$CTL" -s "$S/state/ctl.sock" apply --epoch $((epoch + 1)) "$S/move.json" >"$S/apply.out" 2>&1 ||
	bad "isergwctl apply (a store moved to another target): $(cat "$S/apply.out")"
n2=$(timeout --kill-after=5 20 iscsi-ls -s "iscsi://$ADDR:$PORT" </dev/null 2>/dev/null | grep -c "$T-2")
[ "$n2" -ge 1 ] && ! grep -q "LUN 0 not opened" "$GLOG" &&
	pass "a store moved to a target listed first in one apply: opened there" ||
	bad "a store moved to another target: $(grep 'not opened' "$GLOG" | tail -n 1)"

# ---- 3. isergw-api standalone
if [ -x "$API" ]; then
	config "$(lun 0 "$S/d/x.img")" >"$S/api.json"
	chmod 600 "$S/api.json"
	epoch=$("$CTL" -s "$S/state/ctl.sock" --json status | jq -r '.epoch')
	"$CTL" -s "$S/state/ctl.sock" apply --epoch $((epoch + 1)) "$S/api.json" >/dev/null 2>&1 ||
		bad "isergwctl apply of the API's file"
	rm -f "$S/tokens"
	"$API" token add --token-file "$S/tokens" --name so --role admin >"$S/admin.tok" 2>/dev/null ||
		die "isergw-api token add failed"
	"$API" --listen "$ADDR:$HTTP_PORT" --isergwd-socket "$S/state/ctl.sock" --config "$S/api.json" \
		--token-file "$S/tokens" --log-level info >"$S/api.log" 2>&1 &
	API_PID=$!
	for _ in $(seq 50); do curl -sf -o /dev/null "http://$ADDR:$HTTP_PORT/healthz" && break; sleep 0.1; done
	before=$(md5sum <"$S/api.json")
	code=$(curl -s -o "$S/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$S/admin.tok")" \
		-H 'Content-Type: application/json' --data-binary "{\"lun\": 5, \"path\": \"$S/d/hard.img\"}" \
		"http://$ADDR:$HTTP_PORT/api/v1/targets/$T/luns")
	if [ "$code" = 422 ] && [ "$(jq -r .field "$S/body")" = path ] &&
	   jq -r .detail "$S/body" | grep -q "$(both 5 0) ($S/d/x.img and $S/d/hard.img are one file"; then
		pass "REST POST of a LUN on a hard link: 422, field path: $(jq -r .detail "$S/body")"
	else
		bad "REST POST of a LUN on a hard link: $code $(cat "$S/body")"
	fi
	[ "$(md5sum <"$S/api.json")" = "$before" ] && pass "the file is unchanged" || bad "the file changed"
	kill "$API_PID"
	wait "$API_PID" 2>/dev/null
	API_PID=''
else
	log "SKIP (REST part): no --api"
fi

target_finish isergwd "$GPID" "$GLOG" || fail=1
[ "$fail" = 0 ] && log "PASS" || log "FAIL"
exit "$fail"
