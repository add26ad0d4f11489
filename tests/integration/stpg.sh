#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# SET TARGET PORT GROUPS when the ALUA policy is someone else's: two isergwd
# nodes (node 1 on ADDR1:PORT, relative port 1, group 1; node 2 on
# ADDR2:PORT, port 2, group 2; one target, LUN 0 in device group dg1 owned
# by group 1) configured with alua_policy "external", and isergwctl watch on
# their control sockets as the policy owner. Every STPG goes through node 2
# (cluster_probe, libiscsi) and asks group 2 Active/Optimized:
#   1. nobody subscribed: CHECK CONDITION NOT READY 04h/0Ah at once;
#   2. a subscriber that never answers (watch --json): it receives the
#      AluaChangeRequest (request id, device group, groups, initiator port,
#      relative port and group), the command ends NOT READY 04h/0Ah after
#      alua_request_timeout_ms;
#   3. a subscriber that refuses (watch --refuse): HARDWARE ERROR 67h/0Ah and
#      the states unchanged;
#   4. the command aborted while held (ABORT TASK), and its connection
#      killed while held: released (the daemon logs it; ASan tree: no leak
#      or use-after-free, clean exit);
#   5. watch --apply on both nodes: GOOD, REPORT TARGET PORT GROUPS through
#      node 2 shows group 2 Active/Optimized (status "altered by STPG" is
#      not checked here); node 1 was not asked and did not change by itself;
#   6. both nodes reloaded (SIGHUP) without alua_policy: the local default
#      applies an STPG on the node that receives it, no subscriber involved;
#   7. node 2 external again (timeout 300 ms) with a subscriber that stops
#      reading (SIGSTOP): 6 x 120 STPGs at once, all NOT READY; the socket
#      buffer and then the subscriber's queue fill, events are dropped (warn
#      line; the requests nobody took end at once), the control socket still
#      answers status; once the subscriber reads again (SIGCONT) and has
#      its backlog, the next event reports every request nobody took.
# Both nodes must exit 0 on SIGTERM (sanitizer reports included).
#
#   stpg.sh --daemon PATH --ctl PATH --probe PATH [--scratch DIR]
#           [--addr1 A] [--addr2 A] [--port P]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

ADDR1=127.0.0.100
ADDR2=127.0.0.101
PORT=13500
CTL=
PROBE=
TIMEOUT_MS=3000
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--addr1) ADDR1=$2; shift 2 ;;
	--addr2) ADDR2=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--ctl) CTL=$2; shift 2 ;;
	--probe) PROBE=$2; shift 2 ;;
	-h|--help) sed -n '3,29p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
only_isergw "explicit ALUA through the control socket"
[ -x "${CTL:-/nonexistent}" ] || die "--ctl PATH (isergwctl) is required"
[ -x "${PROBE:-/nonexistent}" ] || die "--probe PATH (the cluster_probe client) is required"
command -v jq >/dev/null || die "jq not found (apt-get install jq)"

IQN=iqn.2026-11.org.isergw:stpg
SHARED=$SCRATCH/shared
rm -rf "$SHARED" "$SCRATCH"/node1 "$SCRATCH"/node2 "$SCRATCH"/*.out "$SCRATCH"/*.err
mkdir -p "$SCRATCH"/node1 "$SCRATCH"/node2
rm -f "$SCRATCH/lun0.img"
truncate -s 64M "$SCRATCH/lun0.img" || die "cannot create $SCRATCH/lun0.img"

# write_config N ADDR POLICY-JSON
write_config() {
	cat >"$SCRATCH/node$1.json" <<-EOF
	{
	  "log_level": "${ISERGW_LOG_LEVEL:-info}",
	  "state_dir": "$SCRATCH/node$1",
	  "ctl_socket": "$SCRATCH/node$1/ctl.sock",
	  "shared_state_dir": "$SHARED",
	  $3
	  "portals": [ { "url": "tcp://$2:$PORT", "rel_port_id": $1, "tpg_id": $1 } ],
	  "port_groups": [ { "tpg_id": 1, "rel_port_ids": [ 1 ] },
	                   { "tpg_id": 2, "rel_port_ids": [ 2 ] } ],
	  "device_groups": [ { "name": "dg1", "owner_tpg_id": 1 } ],
	  "targets": [ { "iqn": "$IQN", "luns": [
	    { "lun": 0, "path": "$SCRATCH/lun0.img", "device_group": "dg1" } ] } ]
	}
	EOF
}
EXTERNAL="\"alua_policy\": \"external\", \"alua_request_timeout_ms\": $TIMEOUT_MS,"
write_config 1 "$ADDR1" "$EXTERNAL"
write_config 2 "$ADDR2" "$EXTERNAL"
SOCK1=$SCRATCH/node1/ctl.sock
SOCK2=$SCRATCH/node2/ctl.sock

config_start node1 "$SCRATCH/node1.json" "$ADDR1:$PORT" || die "node 1 did not start"
# shellcheck disable=SC2034 # read as ${!pid} below
pid1=$T_PID log1=$T_LOG
config_start node2 "$SCRATCH/node2.json" "$ADDR2:$PORT" || die "node 2 did not start"
# shellcheck disable=SC2034 # read as ${!pid} below
pid2=$T_PID log2=$T_LOG

fail=0
WATCHERS=()
stop_watchers() {
	local w
	for w in "${WATCHERS[@]}"; do
		kill "$w" 2>/dev/null
		wait "$w" 2>/dev/null
	done
	WATCHERS=()
}
trap 'stop_watchers; lib_cleanup 2>/dev/null' EXIT

# start_watcher NAME SOCKET ARGS...: isergwctl watch in the background, subscribed
# when this returns; output in $SCRATCH/NAME.out, messages in NAME.err
start_watcher() {
	local name=$1 sock=$2
	shift 2
	# emptied first: the background job's own redirection runs later, and the
	# wait must not find an earlier run's line
	: >"$SCRATCH/$name.out"
	: >"$SCRATCH/$name.err"
	"$CTL" -s "$sock" --json watch "$@" >>"$SCRATCH/$name.out" 2>>"$SCRATCH/$name.err" &
	WATCHERS+=($!)
	if ! wait_log "$SCRATCH/$name.err" '^isergwctl: watching ' 30; then
		log "watcher $name did not subscribe: $(cat "$SCRATCH/$name.err")"
		fail=1
		return 1
	fi
}

# stpg NAME ARGS...: cluster_probe through node 2 (STPG group 2 to
# Active/Optimized, then RTPG unless --no-probe); output in $SCRATCH/NAME.out
stpg() {
	local name=$1
	shift
	if ! "$PROBE" --initiator "iqn.2026-11.org.isergw:stpg-host" --stpg 2=0 "$@" \
		"iscsi://$ADDR2:$PORT/$IQN/0" >"$SCRATCH/$name.out" 2>"$SCRATCH/$name.err"; then
		log "cluster_probe ($name) failed: $(cat "$SCRATCH/$name.err")"
		fail=1
		return 1
	fi
}

# rtpg NAME NODE ADDR: REPORT TARGET PORT GROUPS through that node
rtpg() {
	if ! "$PROBE" --initiator "iqn.2026-11.org.isergw:stpg-probe" "iscsi://$3:$PORT/$IQN/0" \
		>"$SCRATCH/$1.out" 2>"$SCRATCH/$1.err"; then
		log "cluster_probe through node $2 failed: $(cat "$SCRATCH/$1.err")"
		fail=1
	fi
}

# wait_lines FILE N: poll (30 s at most) until FILE has N lines or more
wait_lines() {
	local deadline=$((SECONDS + 30))
	while [ "$SECONDS" -lt "$deadline" ]; do
		[ "$(wc -l <"$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	[ "$(wc -l <"$1")" -ge "$2" ]
}

# wait_event FILE [JQ-ARGS...] FILTER: poll (30 s at most) until FILTER
# selects an event of FILE (one JSON object a line)
wait_event() {
	local file=$1 deadline=$((SECONDS + 30))
	shift
	while [ "$SECONDS" -lt "$deadline" ]; do
		jq -e "$@" "$file" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	jq -e "$@" "$file" >/dev/null 2>&1
}

# expect FILE LINE: FILE must hold LINE exactly
expect() {
	if ! grep -qxF -- "$2" "$1"; then
		log "$(basename "$1"): expected \"$2\"; got: $(paste -sd'|' "$1")"
		fail=1
	fi
}

NOT_READY="stpg status 0x02 sense 2/04/0a"
REFUSED="stpg status 0x02 sense 4/67/0a"

# 1. nobody listens
stpg none --no-probe && expect "$SCRATCH/none.out" "$NOT_READY"
[ "$fail" -eq 0 ] && log "1. no subscriber: NOT READY, asymmetric access state transition"

# 2. a subscriber that never answers
if start_watcher silent "$SOCK2"; then
	stpg silent-stpg --no-probe && expect "$SCRATCH/silent-stpg.out" "$NOT_READY"
	# the command ends by its timer, not by the event: wait for the event too
	wait_lines "$SCRATCH/silent.out" 1
	stop_watchers
	n=$(wc -l <"$SCRATCH/silent.out")
	if [ "$n" -ne 1 ]; then
		log "the silent watcher saw $n events, expected 1: $(cat "$SCRATCH/silent.out")"
		fail=1
	elif ! jq -e --arg to "$TIMEOUT_MS" '
		.event == "alua_change_request" and .request_id >= 1 and .seq >= 1 and
		.device_group == "dg1" and .groups == [ { "tpg_id": 2, "state": "ao" } ] and
		(.initiator_port | startswith("iqn.2026-11.org.isergw:stpg-host,i,0x")) and
		.rel_port_id == 2 and .tpg_id == 2 and .lun == 0 and .dropped == 0 and
		.timeout_ms == ($to | tonumber)' "$SCRATCH/silent.out" >/dev/null; then
		log "unexpected event: $(cat "$SCRATCH/silent.out")"
		fail=1
	fi
	if ! grep -q 'no answer from the ALUA policy owner in time' "$log2"; then
		log "node 2 did not log the timeout"
		fail=1
	fi
fi
[ "$fail" -eq 0 ] && log "2. silent subscriber: the event as asked, NOT READY after $TIMEOUT_MS ms"

# 3. a subscriber that refuses
if start_watcher refuse "$SOCK2" --refuse="not while the peer is degraded"; then
	stpg refuse-stpg && expect "$SCRATCH/refuse-stpg.out" "$REFUSED"
	expect "$SCRATCH/refuse-stpg.out" "group 1 state 0 pref 1 ports 1"
	expect "$SCRATCH/refuse-stpg.out" "group 2 state 1 pref 0 ports 2"
	stop_watchers
	# logged once the answer has gone to the command: maybe after the probe ends
	wait_log "$log2" 'not while the peer is degraded' 30 ||
		{ log "node 2 did not log the refusal's reason"; fail=1; }
fi
[ "$fail" -eq 0 ] && log "3. refusing subscriber: HARDWARE ERROR, SET TARGET PORT GROUPS COMMAND FAILED"

# 4. held, then aborted; held, then the connection killed
if start_watcher hold "$SOCK2"; then
	stpg abort --no-probe --abort-after-ms 300 &&
		expect "$SCRATCH/abort.out" "stpg aborted, task management response 0"
	wait_log "$log2" 'SET TARGET PORT GROUPS request [0-9]+ .*: aborted' 30 ||
		{ log "node 2 did not release the aborted STPG"; fail=1; }
	before=$(count_log "$log2" 'SET TARGET PORT GROUPS request [0-9]+ .*: aborted$')
	"$PROBE" --initiator "iqn.2026-11.org.isergw:stpg-host" --stpg 2=0 --no-probe \
		"iscsi://$ADDR2:$PORT/$IQN/0" >"$SCRATCH/killed.out" 2>"$SCRATCH/killed.err" &
	victim=$!
	# held once the watcher has its event (the second one)
	wait_lines "$SCRATCH/hold.out" 2 ||
		{ log "the watcher saw no event for the STPG to kill: $(cat "$SCRATCH/hold.out")"; fail=1; }
	kill -KILL "$victim" 2>/dev/null
	wait "$victim" 2>/dev/null
	for _ in $(seq 300); do
		[ "$(count_log "$log2" 'SET TARGET PORT GROUPS request [0-9]+ .*: aborted$')" -gt "$before" ] && break
		sleep 0.1
	done
	if [ "$(count_log "$log2" 'SET TARGET PORT GROUPS request [0-9]+ .*: aborted$')" -le "$before" ]; then
		log "node 2 did not release the STPG of a killed connection"
		fail=1
	fi
	stop_watchers
fi
[ "$fail" -eq 0 ] && log "4. aborted and connection gone while held: released"

# 5. the stand-in policy owner on both nodes
if start_watcher apply1 "$SOCK1" --apply && start_watcher apply2 "$SOCK2" --apply; then
	stpg apply && expect "$SCRATCH/apply.out" "stpg good"
	expect "$SCRATCH/apply.out" "group 1 state 0 pref 1 ports 1"
	expect "$SCRATCH/apply.out" "group 2 state 0 pref 0 ports 2"
	# the states set complete the STPG before the watcher has read the daemon's
	# answer and said so: wait for its line
	wait_log "$SCRATCH/apply2.err" 'applied as epoch' 30 ||
		{ log "watcher 2: $(cat "$SCRATCH/apply2.err")"; fail=1; }
	# the event went to node 2's subscriber only, and node 1 did not change by itself
	stop_watchers
	[ "$(wc -l <"$SCRATCH/apply2.out")" -eq 1 ] || { log "node 2's watcher: $(cat "$SCRATCH/apply2.out")"; fail=1; }
	[ -s "$SCRATCH/apply1.out" ] && { log "node 1's watcher saw: $(cat "$SCRATCH/apply1.out")"; fail=1; }
	rtpg rtpg1 1 "$ADDR1"
	expect "$SCRATCH/rtpg1.out" "group 2 state 1 pref 0 ports 2"
	"$CTL" -s "$SOCK2" --json alua show --dg dg1 >"$SCRATCH/show2.out" 2>&1
	jq -e '.groups[] | select(.tpg_id == 2) | .state == "ao"' "$SCRATCH/show2.out" >/dev/null ||
		{ log "alua show on node 2: $(cat "$SCRATCH/show2.out")"; fail=1; }
fi
[ "$fail" -eq 0 ] && log "5. watch --apply: GOOD, group 2 Active/Optimized through node 2; node 1 untouched"

# reload N: SIGHUP to node N, back once it logged the reload (30 s at most)
reload() {
	local pid=pid$1 logf=log$1 before deadline=$((SECONDS + 30))
	before=$(count_log "${!logf}" 'configuration reloaded')
	kill -HUP "${!pid}"
	while [ "$SECONDS" -lt "$deadline" ]; do
		[ "$(count_log "${!logf}" 'configuration reloaded')" -gt "$before" ] && return 0
		sleep 0.1
	done
	[ "$(count_log "${!logf}" 'configuration reloaded')" -gt "$before" ] && return 0
	log "node $1 did not reload"
	fail=1
	return 1
}

# 6. the local default, after a reload
write_config 1 "$ADDR1" ""
write_config 2 "$ADDR2" ""
reload 1
reload 2
"$PROBE" --initiator "iqn.2026-11.org.isergw:stpg-host" --stpg 2=2 \
	"iscsi://$ADDR2:$PORT/$IQN/0" >"$SCRATCH/local.out" 2>"$SCRATCH/local.err" ||
	{ log "cluster_probe (local) failed: $(cat "$SCRATCH/local.err")"; fail=1; }
expect "$SCRATCH/local.out" "stpg good"
expect "$SCRATCH/local.out" "group 2 state 2 pref 0 ports 2"
[ "$fail" -eq 0 ] && log "6. local policy (default): applied by the node that received it"

# 7. a subscriber that stops reading
write_config 2 "$ADDR2" "\"alua_policy\": \"external\", \"alua_request_timeout_ms\": 300,"
# group 2 back to Active/Non-optimized (phase 6 left it Standby: no I/O there)
untaken0=$(count_log "$log2" 'no subscriber took it')
if reload 2 && "$CTL" -s "$SOCK2" alua set --dg dg1 2=ano >"$SCRATCH/ano.out" 2>&1 &&
	start_watcher stuck "$SOCK2"; then
	stuck=${WATCHERS[-1]}
	kill -STOP "$stuck"
	for round in 1 2 3 4 5 6; do
		"$PROBE" --initiator "iqn.2026-11.org.isergw:stpg-host" --stpg 2=0 --stpg-repeat 120 \
			--no-probe "iscsi://$ADDR2:$PORT/$IQN/0" >"$SCRATCH/burst$round.out" 2>&1 ||
			{ log "burst $round: $(cat "$SCRATCH/burst$round.out")"; fail=1; }
		expect "$SCRATCH/burst$round.out" "stpg x 120: good 0, not-ready 120, refused 0, other 0"
	done
	"$CTL" -s "$SOCK2" --timeout 10 status >"$SCRATCH/status-stuck.out" 2>&1 ||
		{ log "status while a subscriber is stuck: $(cat "$SCRATCH/status-stuck.out")"; fail=1; }
	grep -q 'events not yet read: dropping event' "$log2" ||
		{ log "node 2 logged no dropped events"; fail=1; }
	[ "$(count_log "$log2" 'no subscriber took it')" -gt "$untaken0" ] ||
		{ log "no request ended for want of a subscriber"; fail=1; }
	kill -CONT "$stuck"
	# Node 2 queued every event before the first one it dropped, and nothing
	# since (the watcher read nothing). Once the watcher has printed that
	# last one, node 2 has nothing queued for it and the next event must go
	# through, reporting the drops; an STPG sent before may still find the
	# queue full and be dropped too.
	first=$(sed -nE 's/.*events not yet read: dropping event ([0-9]+) .*/\1/p' "$log2" | head -n 1)
	# shellcheck disable=SC2016 # $s is jq's
	if [ -n "$first" ] && ! wait_event "$SCRATCH/stuck.out" \
		--argjson s "$((first - 1))" 'select(.seq == $s)'; then
		log "the watcher did not catch up: event $((first - 1)) (the last queued) never came;" \
			"last: $(tail -n 1 "$SCRATCH/stuck.out")"
		fail=1
	fi
	stpg after-stuck --no-probe && expect "$SCRATCH/after-stuck.out" "$NOT_READY"
	wait_event "$SCRATCH/stuck.out" 'select(.dropped > 0)' ||
		{ log "no event reported the dropped ones: $(tail -n 2 "$SCRATCH/stuck.out")"; fail=1; }
	# every event dropped was a request nobody took (one subscriber), and the
	# event after the drops counted them all: the one of after-stuck included
	untaken=$(($(count_log "$log2" 'no subscriber took it') - untaken0))
	dropped=$(jq -s 'map(.dropped) | add' "$SCRATCH/stuck.out")
	if [ "$dropped" != "$untaken" ]; then
		log "the events report $dropped dropped; node 2 ended $untaken requests nobody took"
		fail=1
	fi
	wait_log "$log2" 'events flow again after [0-9]+ dropped' 30 ||
		{ log "node 2 did not log the end of the drops"; fail=1; }
	log "7. stuck subscriber: $(wc -l <"$SCRATCH/stuck.out") events delivered," \
		"$(jq -s 'map(.dropped) | add' "$SCRATCH/stuck.out") dropped, the daemon unaffected"
	stop_watchers
fi

target_finish "node 1" "$pid1" "$log1" || fail=1
target_finish "node 2" "$pid2" "$log2" || fail=1
log "node logs: $log1 $log2"
exit "$fail"
