#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The ALUA lease, SetAluaMap, the TPGT of each relative port and --managed,
# end to end: isergwd from a configuration file with alua_lease true, two
# portals (ADDR: relative port 1, group 1; ADDR2: port 2, group 2), LUN 0 in
# device group dg1 (owned by group 1, the other group Standby), LUN 1 in the
# default device group; isergwctl drives the control socket, libiscsi
# clients (ctl_client, cluster_probe) look at what a host sees.
#   - before any lease: REPORT TARGET PORT GROUPS reports every group
#     Unavailable and a READ gets NOT READY 04/0C; INQUIRY still answers;
#   - lease renew: the configured states (group 1 Active/Optimized + PREF,
#     group 2 Standby), READ GOOD through ADDR, 04/0B through ADDR2;
#   - the target port names differ (IQN,t,0x0001 / IQN,t,0x0002), as do the
#     TPGTs of SendTargets; MULTIP is set;
#   - a short lease runs out: Transitioning, READ 04/0A, the warn line;
#     then a smaller alua_lease_unavailable_ms applied: stepped down,
#     Unavailable, 04/0C, the warn line; a renewal: the states again and
#     the notice "renewed after N ms without one";
#   - RenewLease in the past or more than 60 s ahead refused;
#   - SetAluaMap: two device groups under one epoch, the same again a
#     no-op, other states under that epoch refused (SetAluaStates too: one
#     kind of epoch), an unknown device group refused with nothing changed;
#     with a transition only the groups that change are Transitioning;
#   - StepDown: Unavailable at once, the reason in the log;
#   - alua_lease false (ApplyConfig): the lease requests are refused
#     (EOPNOTSUPP), the states apply as they are;
#   - isergwd --managed: no portal, no target, no lease; ApplyConfig with a
#     document without alua_lease serves the LUN, Unavailable until a lease,
#     the external ALUA policy; a document with alua_lease false and
#     alua_policy local keeps both (and moves LUN 0 to dg1: its states are
#     dg1's); --managed with --config refused.
# Every wait is a poll for a condition, never a sleep of a given length.
#
#   lease.sh --ctl PATH --client PATH --probe PATH [--daemon PATH]
#            [--scratch DIR] [--addr A] [--addr2 B] [--port P]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

CTL=
CLIENT=
PROBE=
ADDR=127.0.0.110
ADDR2=127.0.0.111
PORT=13410
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--ctl) CTL=$2; shift 2 ;;
	--client) CLIENT=$2; shift 2 ;;
	--probe) PROBE=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--addr2) ADDR2=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	-h|--help) sed -n '3,36p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ -x "${CTL:-/nonexistent}" ] || die "--ctl PATH (isergwctl) is required"
[ -x "${CLIENT:-/nonexistent}" ] || die "--client PATH (ctl_client) is required"
[ -x "${PROBE:-/nonexistent}" ] || die "--probe PATH (cluster_probe) is required"
command -v jq >/dev/null || die "jq not found (apt-get install jq)"
command -v iscsi-ls >/dev/null || die "iscsi-ls not found (apt-get install libiscsi-bin)"
only_isergw "the ALUA lease"
export LSAN_OPTIONS="suppressions=$here/ctl-lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

IQN=iqn.2026-11.org.isergw:lease
INIT=iqn.2026-11.org.isergw:lease-host
RUN=$SCRATCH/run
SOCK=$RUN/ctl.sock
CFG=$SCRATCH/lease.json
rm -rf "$RUN" "$SCRATCH"/*.img "$SCRATCH"/*.out "$SCRATCH"/doc-*.json "$SCRATCH"/state-m
mkdir -p "$SCRATCH/state"

# doc NAME LEASE(true|false) UNAVAILABLE_MS: the configuration document.
doc() {
	cat >"$SCRATCH/doc-$1.json" <<JSON
{
  "log_level": "info",
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SOCK",
  "alua_lease": $2,
  "alua_lease_unavailable_ms": $3,
  "portals": [ { "url": "tcp://$ADDR:$PORT", "rel_port_id": 1, "tpg_id": 1 },
               { "url": "tcp://$ADDR2:$PORT", "rel_port_id": 2, "tpg_id": 2 } ],
  "device_groups": [ { "name": "dg1", "owner_tpg_id": 1, "non_owner_state": "standby" } ],
  "targets": [ { "iqn": "$IQN", "luns": [
      { "lun": 0, "path": "$SCRATCH/l0.img", "size": "32M", "device_group": "dg1" },
      { "lun": 1, "path": "$SCRATCH/l1.img", "size": "16M" } ] } ]
}
JSON
	echo "$SCRATCH/doc-$1.json"
}

fail=0
pass() { log "PASS $*"; }
bad() { log "FAIL $*"; fail=1; }
ctl() { "$CTL" -s "$SOCK" "$@"; }
# run_ctl EXPECTED-RC ARGS...: isergwctl's stdout+stderr in $OUT, true on the expected status
run_ctl() {
	local want=$1 rc
	shift
	OUT=$(ctl "$@" 2>&1)
	rc=$?
	[ "$rc" -eq "$want" ] || { log "isergwctl $* exited $rc (want $want): $OUT"; return 1; }
	return 0
}
# host ADDR LUN: ctl_client --mode alua (RTPG states, then one READ); output in $HOST
host() {
	HOST=$("$CLIENT" --url "iscsi://$1:$PORT/$IQN/$2" --initiator "$INIT" --mode alua 2>&1)
}
# host_is ADDR LUN "tpg 1 state S1" "tpg 2 state S2" "read: ...": one look, true when all match
host_is() {
	host "$1" "$2"
	grep -qx "alua: $3" <<<"$HOST" && grep -qx "alua: $4" <<<"$HOST" && grep -qx "$5" <<<"$HOST"
}
# until_host ADDR LUN S1 S2 READ: poll (30 s at most) until the host sees that
until_host() {
	for _ in $(seq 300); do
		host_is "$@" && return 0
		sleep 0.1
	done
	log "through $1 LUN $2: $(paste -sd'|' <<<"$HOST")"
	return 1
}
lease_state() { ctl --json lease | jq -r .state; }

cp "$(doc start true 600000)" "$CFG"
config_start lease "$CFG" "$ADDR:$PORT" "$ADDR2:$PORT" || die "isergwd did not start"
dlog=$T_LOG
pid=$T_PID
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done

NR_TR="read: CHECK CONDITION 2/04/0a"
NR_SB="read: CHECK CONDITION 2/04/0b"
NR_UN="read: CHECK CONDITION 2/04/0c"

# ---- no lease yet
if [ "$(lease_state)" = none ] && [ "$(ctl --json status | jq -r .lease_state)" = none ] &&
	grep -q "ALUA lease enforced" "$dlog"; then
	pass "started without a lease (lease none, status agrees, logged)"
else
	bad "lease at start: $(ctl --json lease 2>&1)"
fi
if host_is "$ADDR" 0 "tpg 1 state 3" "tpg 2 state 3" "$NR_UN" &&
	host_is "$ADDR2" 1 "tpg 1 state 3" "tpg 2 state 3" "$NR_UN"; then
	pass "no lease: RTPG reports every group Unavailable, READ NOT READY 04/0C (both LUNs, both ports)"
else
	bad "no lease: $(paste -sd'|' <<<"$HOST")"
fi
if "$PROBE" --initiator "$INIT" "iscsi://$ADDR:$PORT/$IQN/0" >"$SCRATCH/probe1.out" 2>&1 &&
	grep -qx "group 1 state 3 pref 0 ports 1" "$SCRATCH/probe1.out"; then
	pass "no lease: INQUIRY and VPD pages still answer, group 1 Unavailable without PREF"
else
	bad "probe without a lease: $(paste -sd'|' "$SCRATCH/probe1.out")"
fi
show=$(ctl --json alua show --dg dg1)
if [ "$(jq -r .lease_state <<<"$show")" = none ] &&
	[ "$(jq -r '.groups[] | select(.tpg_id==1) | .state' <<<"$show")" = ao ]; then
	pass "alua show: the configured states underneath, lease_state none"
else
	bad "alua show without a lease: $show"
fi

# ---- a lease: the configured states
if run_ctl 0 lease renew --ms 60000 && [ "$(lease_state)" = valid ] &&
	host_is "$ADDR" 0 "tpg 1 state 0" "tpg 2 state 2" "read: GOOD" &&
	host_is "$ADDR2" 0 "tpg 1 state 0" "tpg 2 state 2" "$NR_SB"; then
	pass "lease granted: group 1 Active/Optimized, group 2 Standby; READ GOOD via $ADDR, 04/0B via $ADDR2"
else
	bad "lease granted: $OUT $(paste -sd'|' <<<"$HOST")"
fi
wait_log "$dlog" "ALUA lease granted after [0-9]+ ms without one" 10 ||
	bad "no 'ALUA lease granted after N ms without one' line"
rem=$(ctl --json status | jq .lease_remaining_ms)
[ "$rem" -gt 0 ] && [ "$rem" -le 60000 ] && pass "status: lease_remaining_ms $rem" ||
	bad "status lease_remaining_ms '$rem'"

# ---- the target ports: one TPGT and one name each, MULTIP
"$PROBE" --initiator "$INIT" "iscsi://$ADDR:$PORT/$IQN/0" >"$SCRATCH/probe1.out" 2>&1
"$PROBE" --initiator "$INIT" "iscsi://$ADDR2:$PORT/$IQN/0" >"$SCRATCH/probe2.out" 2>&1
if grep -qx "port_name $IQN,t,0x0001" "$SCRATCH/probe1.out" &&
	grep -qx "port_name $IQN,t,0x0002" "$SCRATCH/probe2.out" &&
	grep -qx "rel_port 2" "$SCRATCH/probe2.out" && grep -qx "multip 1" "$SCRATCH/probe1.out" &&
	grep -qx "group 1 state 0 pref 1 ports 1" "$SCRATCH/probe2.out"; then
	pass "VPD 83h: target port names $IQN,t,0x0001 and ,t,0x0002; MULTIP 1"
else
	bad "target ports: [$(paste -sd'|' "$SCRATCH/probe1.out")] [$(paste -sd'|' "$SCRATCH/probe2.out")]"
fi
disc=$(timeout --kill-after=5 20 iscsi-ls -i "$INIT" "iscsi://$ADDR:$PORT" </dev/null 2>&1 |
	sed -n 's/^Target:[^ ]* Portal:\([^ ]*\).*/\1/p' | sort | paste -sd' ')
[ "$disc" = "$ADDR:$PORT,1 $ADDR2:$PORT,2" ] && pass "SendTargets: $disc" ||
	bad "SendTargets: '$disc'"

# ---- renewals refused
now=$(ctl --json lease renew --ms 1000 | jq .expires_mono_ms)
now=$((now - 1000))
run_ctl 1 lease renew --at 1 && grep -q "not in the future" <<<"$OUT" &&
	pass "a lease ending in the past refused: ${OUT#isergwctl: }" || bad "past lease: $OUT"
run_ctl 1 lease renew --at $((now + 120000)) && grep -q "at most 60000" <<<"$OUT" &&
	pass "a lease 120 s ahead refused: ${OUT#isergwctl: }" || bad "far lease: $OUT"
run_ctl 2 lease renew --ms 60001 && pass "lease renew --ms 60001: usage error" || bad "--ms 60001: $OUT"

# ---- the lease runs out (the 1 s one above): Transitioning
if until_host "$ADDR" 0 "tpg 1 state 15" "tpg 2 state 15" "$NR_TR"; then
	pass "the lease ran out: every group Transitioning, READ 04/0A"
else
	bad "no Transitioning after the lease ran out"
fi
wait_log "$dlog" "warn +ctl: ALUA lease expired: every target port group Transitioning" 30 &&
	[ "$(lease_state)" = expired ] && pass "lease expired (warn line, lease state expired)" ||
	bad "no expiry warn line, or lease state $(lease_state)"
# a smaller alua_lease_unavailable_ms: stepped down
if run_ctl 0 apply --epoch 1 "$(doc short true 300)" &&
	until_host "$ADDR" 1 "tpg 1 state 3" "tpg 2 state 3" "$NR_UN"; then
	pass "alua_lease_unavailable_ms 300 applied: stepped down, every group Unavailable, READ 04/0C"
else
	bad "not stepped down: $OUT"
fi
wait_log "$dlog" "warn +ctl: ALUA lease expired [0-9]+ ms ago and was not renewed: stepped down" 30 &&
	[ "$(lease_state)" = stepped-down ] && pass "stepped down (warn line, lease state stepped-down)" ||
	bad "no stepped-down warn line, or lease state $(lease_state)"
if run_ctl 0 lease renew --ms 60000 && host_is "$ADDR" 0 "tpg 1 state 0" "tpg 2 state 2" "read: GOOD" &&
	wait_log "$dlog" "ALUA lease renewed after [0-9]+ ms without one" 10; then
	pass "renewed: the configured states again (notice 'renewed after N ms without one')"
else
	bad "renewal after the step down: $OUT $(paste -sd'|' <<<"$HOST")"
fi

# ---- SetAluaMap
if run_ctl 0 --json alua map --epoch 2 --dg dg1 1=standby 2=ao,pref --dg default 1=ano 2=ao &&
	[ "$(jq -c '[.epoch, [.device_groups[].device_group]]' <<<"$OUT")" = '[2,["default","dg1"]]' ] &&
	host_is "$ADDR" 0 "tpg 1 state 2" "tpg 2 state 0" "$NR_SB" &&
	host_is "$ADDR" 1 "tpg 1 state 1" "tpg 2 state 0" "read: GOOD"; then
	pass "alua map epoch 2: dg1 1=standby 2=ao, default 1=ano 2=ao, both at once"
else
	bad "alua map epoch 2: $OUT $(paste -sd'|' <<<"$HOST")"
fi
run_ctl 0 alua map --epoch 2 --dg default 2=ao 1=ano --dg dg1 2=ao,pref 1=standby &&
	pass "the same map again under epoch 2, in another order: no-op" || bad "same map: $OUT"
run_ctl 1 alua map --epoch 2 --dg dg1 1=ao && grep -q "already used for different ALUA states" <<<"$OUT" &&
	pass "another map under epoch 2 refused" || bad "other map, same epoch: $OUT"
run_ctl 1 alua set --epoch 2 --dg dg1 1=ao && grep -q "already used" <<<"$OUT" &&
	pass "SetAluaStates under the map's epoch refused (one kind of epoch)" || bad "set under the map epoch: $OUT"
run_ctl 1 alua map --epoch 3 --dg dg1 1=ao,pref 2=standby --dg nosuch 1=ao &&
	grep -q "device group 'nosuch' does not exist" <<<"$OUT" &&
	[ "$(ctl --json alua show --dg dg1 | jq -c '[.epoch, (.groups[] | select(.tpg_id==1) | .state)]')" = '[2,"standby"]' ] &&
	pass "an unknown device group refused, nothing of the map applied" ||
	bad "unknown device group in a map: $OUT"
run_ctl 1 alua map --epoch 1 --dg dg1 1=ao && grep -q "older than the current epoch 2" <<<"$OUT" &&
	pass "a stale map refused" || bad "stale map: $OUT"
# with a transition: the groups that change go through Transitioning, the others not
ctl alua map --epoch 3 --transition-ms 3000 --dg dg1 1=ao,pref 2=standby --dg default 1=ano 2=ao \
	>"$SCRATCH/map-transition.out" 2>&1 &
mappid=$!
show=
for _ in $(seq 300); do
	show=$(ctl --json alua show --dg dg1)
	[ "$(jq .epoch <<<"$show")" = 3 ] && break
	sleep 0.01
done
if [ "$(jq .transition_pending <<<"$show")" = true ]; then
	def=$(ctl --json alua show)
	if [ "$(jq -r '[.groups[].state] | join(",")' <<<"$show")" = transitioning,transitioning ] &&
		[ "$(jq -r '[.groups[].state] | join(",")' <<<"$def")" = ano,ao ]; then
		pass "map transition: dg1's changing groups Transitioning, the default group's unchanged ones not"
	else
		bad "map transition: dg1 $show default $def"
	fi
else
	log "note: the transition ended before 'alua show' answered (slow machine): not observed"
fi
wait "$mappid"
rc=$?
if [ "$rc" = 0 ] && grep -q "^ALUA epoch 3, 2 device group" "$SCRATCH/map-transition.out" &&
	host_is "$ADDR2" 0 "tpg 1 state 0" "tpg 2 state 2" "$NR_SB"; then
	pass "alua map answered after the transition: dg1 1=ao 2=standby"
else
	bad "alua map with a transition (rc $rc): $(cat "$SCRATCH/map-transition.out")"
fi

# ---- step down
if run_ctl 0 lease stepdown --reason "quorum lost in the test" && grep -q "stepped-down" <<<"$OUT" &&
	host_is "$ADDR" 0 "tpg 1 state 3" "tpg 2 state 3" "$NR_UN" &&
	grep -Eq "warn +ctl: .*step down \(quorum lost in the test\): ALUA lease dropped" "$dlog" &&
	[ "$(ctl --json status | jq -r .lease_state)" = stepped-down ]; then
	pass "step down: Unavailable at once, the reason logged"
else
	bad "step down: $OUT $(paste -sd'|' <<<"$HOST")"
fi

# ---- no lease enforced
if run_ctl 0 apply --epoch 4 "$(doc off false 2000)" &&
	host_is "$ADDR" 0 "tpg 1 state 0" "tpg 2 state 2" "read: GOOD" &&
	run_ctl 1 lease && grep -q "does not enforce an ALUA lease" <<<"$OUT" &&
	run_ctl 1 lease renew --ms 5000 && grep -q "Operation not supported" <<<"$OUT" &&
	run_ctl 1 lease stepdown && [ "$(ctl --json status | jq -r .lease_state)" = off ]; then
	pass "alua_lease false: the states as they are, the lease requests refused (EOPNOTSUPP)"
else
	bad "alua_lease false: $OUT $(paste -sd'|' <<<"$HOST")"
fi

target_stop "$pid" "$dlog" && [ ! -e "$SOCK" ] && pass "SIGTERM: exit 0" || bad "SIGTERM"

# ---- --managed
MSOCK=$SCRATCH/state-m/ctl.sock
if "$ISERGWD" --managed --config "$CFG" >/dev/null 2>&1; then
	bad "--managed with --config accepted"
else
	[ $? = 78 ] && pass "--managed with --config refused (exit 78)" || bad "--managed --config: wrong exit status"
fi
"$ISERGWD" --help | grep -q -- "--managed" && pass "--help describes --managed" || bad "--help lacks --managed"
mlog=$SCRATCH/managed.log
: >"$mlog"
"$ISERGWD" --managed --ctl-socket "$MSOCK" --state-dir "$SCRATCH/state-m" --log-level info >>"$mlog" 2>&1 &
mpid=$!
_LIB_DAEMONS+=("$mpid isergw")
for _ in $(seq 300); do [ -S "$MSOCK" ] && break; sleep 0.1; done
st=$("$CTL" -s "$MSOCK" --json status)
if [ "$(jq -c '[.targets, .portals, .lease_state]' <<<"$st")" = '[0,0,"none"]' ] &&
	! port_open "$ADDR" "$PORT"; then
	pass "--managed: no target, no portal, no lease"
else
	bad "--managed at start: $st"
fi
# the agent's document: no alua_lease key, no state_dir, no ctl_socket (the command line's)
cat >"$SCRATCH/doc-managed.json" <<JSON
{ "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "$IQN", "luns": [ { "lun": 0, "path": "$SCRATCH/l0.img" } ] } ] }
JSON
SOCK=$MSOCK
if run_ctl 0 apply --epoch 7 "$SCRATCH/doc-managed.json" && wait_port "$mpid" "$ADDR" "$PORT" 10 &&
	host_is "$ADDR" 0 "tpg 1 state 3" "tpg 1 state 3" "$NR_UN" &&
	run_ctl 0 lease renew --ms 60000 && host_is "$ADDR" 0 "tpg 1 state 0" "tpg 1 state 0" "read: GOOD"; then
	pass "--managed: ApplyConfig serves the LUN, Unavailable until a lease, then Active/Optimized"
else
	bad "--managed apply: $OUT $(paste -sd'|' <<<"$HOST")"
fi
# policy_of: the ALUA policy a subscriber is told (the watcher stopped once it said it)
policy_of() {
	: >"$SCRATCH/watch.err"
	"$CTL" -s "$MSOCK" watch >/dev/null 2>"$SCRATCH/watch.err" &
	local wpid=$!
	for _ in $(seq 300); do grep -q "watching" "$SCRATCH/watch.err" && break; sleep 0.1; done
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	sed -n 's/.*(ALUA policy \([a-z]*\),.*/\1/p' "$SCRATCH/watch.err"
}
[ "$(policy_of)" = external ] && pass "--managed: ALUA policy external" ||
	bad "--managed policy: $(cat "$SCRATCH/watch.err")"
# a document saying otherwise keeps the lease and the external policy
sed 's/"alua_lease": false,/"alua_lease": false, "alua_policy": "local",/' \
	"$(doc managed-off false 2000)" >"$SCRATCH/doc-managed-local.json"
if run_ctl 0 apply --epoch 8 "$SCRATCH/doc-managed-local.json" &&
	[ "$(ctl --json status | jq -r .lease_state)" = valid ] && [ "$(policy_of)" = external ] &&
	host_is "$ADDR2" 0 "tpg 1 state 0" "tpg 2 state 2" "$NR_SB" &&
	run_ctl 0 lease stepdown && host_is "$ADDR2" 0 "tpg 1 state 3" "tpg 2 state 3" "$NR_UN"; then
	pass "--managed: a document with alua_lease false and alua_policy local keeps both (LUN 0 moved to dg1)"
else
	bad "--managed, alua_lease false in the document: $OUT [$(paste -sd'|' <<<"$HOST")] [$(cat "$SCRATCH/watch.err")] $(ctl --json status 2>&1)"
fi
target_stop "$mpid" "$mlog" && pass "--managed: SIGTERM, exit 0" || bad "--managed SIGTERM"

for f in "$dlog" "$mlog"; do
	if sanitizer_report "$f" >&2; then bad "sanitizer report in $f"; fi
done
[ $fail = 0 ] && log "all lease checks passed" || log "some checks FAILED (log: $dlog)"
exit $fail
