#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ha.restart: an agent or an isergwd killed and started again changes
# nothing in the cluster.
#
#   restart.sh --isergwd PATH --isergwctl PATH --ha PATH --probe PATH
#              --prefix P --subnet S --scratch DIR
#
# 1. Three nodes (corosync, isergwd --managed, isergw-ha --lease-ms 5000),
#    the example cluster configuration applied through node 1; every node synced with
#    dg1=n1, dg2=n2, dg3=n3. Each node's generation, digest and ALUA map
#    (`isergwctl cluster status --json`) and node 1's isergwd epochs
#    (`isergwctl status`) are recorded.
# 2. Under I/O through node 1 to LUN 0 (dg1, Active/Optimized there):
#    iscsi-perf reading, and a loop of READ CAPACITY(16) (one session each)
#    whose completions are timed; node 1's lease polled every 100 ms. Node
#    1's agent is killed (SIGKILL) and started again at once; once it is
#    synced, a few more seconds of I/O. Then: no command failed (iscsi-perf
#    and the loop), the lease was valid at every poll, every node's
#    generation, digest and map are the recorded ones, node 1's isergwd has
#    the same epochs and logged no new epoch, ALUA map, state change, lease
#    expiry or renewal after a gap since the kill. The longest gap between
#    two completed commands of the loop is printed, not asserted. The lease
#    is 5 s instead of the default 1.5 s because starting a process takes
#    seconds on a loaded test machine: what is checked is that an agent
#    restarted within its lease changes nothing (the time it took is
#    printed).
# 3. Node 2's isergwd killed (SIGKILL) and started again: the agent pushes
#    the configuration, the map and the lease again. The time from its start
#    until REPORT TARGET PORT GROUPS through node 2 shows its group
#    Active/Non-optimized for LUN 0 (dg1) and Active/Optimized for LUN 1
#    (dg2) is printed (the recorded state is taken again first); then its
#    isergwd's configuration epoch is the
#    cluster's generation, and every node's generation, digest and map are
#    still the recorded ones.
# Exit 0 only if every check holds; 77 when not root or corosync is missing.

# shellcheck disable=SC2317 # the conditions are called through bed_poll
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"

bed_parse_args "$@"
set -- "${BED_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) sed -n '3,37p' "$0"; exit 0 ;;
	*) bed_die "unknown option $1" ;;
	esac
done
bed_init
[[ -n $BED_HA && -x $BED_HA ]] || bed_die "--ha PATH (isergw-ha) required"
[[ -n $BED_PROBE && -x $BED_PROBE ]] || bed_die "--probe PATH (cluster_probe) required"

NODES=(1 2 3)
INITIATOR=iqn.2026-11.org.isergw:host
OWNERS='{"dg1": "n1", "dg2": "n2", "dg3": "n3"}'
LEASE_MS=5000
fail=0
results=()
notes=()

check() { # check WHAT CMD...: runs CMD, counts a failure
	local what=$1
	shift
	if ! "$@"; then
		bed_log "FAILED: $what"
		fail=1
		return 1
	fi
}

verdict() { # verdict OK NAME
	if [ "$1" -eq 1 ]; then results+=("PASS $2"); else results+=("FAIL $2"); fail=1; fi
	echo "${results[-1]}"
}

# ---------------------------------------------------------------- cluster state

status_json() { bed_cli "$1" --timeout 10 cluster status --json; }
gw_status() { bed_isergwctl "$1" --timeout 5 --json status; }

# snapshot K: generation, digest and ALUA map of node K, one line
snapshot() {
	status_json "$1" | jq -c '[.generation, .digest, [.device_groups[] |
		[.name, .owner, [.states[] | .node + "=" + .state + (if .pref then "*" else "" end)]]]]'
}

# epochs K: node K's isergwd's epochs, "epoch config_epoch alua_epoch"
epochs() { gw_status "$1" | jq -r '"\(.epoch) \(.config_epoch) \(.alua_epoch)"'; }

synced_as() {
	status_json "$1" | jq -e --argjson own "$2" '.phase == "synced" and .quorate and
		.isergwd_epoch == .generation and .lease_remaining_ms > 0 and
		([.device_groups[] | {(.name): .owner}] | add) == $own' >/dev/null
}

all_synced_as() {
	local own=$1 k
	shift
	for k in "$@"; do synced_as "$k" "$own" || return 1; done
}

same_generation() {
	local k g first=
	for k in "$@"; do
		g=$(status_json "$k" | jq -c '[.generation, .digest]') || return 1
		[ -z "$first" ] && first=$g
		[ "$g" = "$first" ] || return 1
	done
}

settled() {
	local own=$1
	shift
	all_synced_as "$own" "$@" && same_generation "$@"
}

show_nodes() {
	local k
	for k in "$@"; do
		bed_log "node $k: $(status_json "$k" | jq -c '[.phase, .quorate, .generation, .isergwd_epoch,
			[.device_groups[] | .name + "=" + .owner]]' 2>&1)"
	done
}

declare -A BASE=()

# unchanged K...: each node's snapshot is the one recorded in BASE
unchanged() {
	local k now rc=0
	for k in "$@"; do
		now=$(snapshot "$k") || { bed_log "node $k: no status"; rc=1; continue; }
		if [ "$now" != "${BASE[$k]}" ]; then
			bed_log "node $k changed: was ${BASE[$k]}"
			bed_log "node $k changed: now $now"
			rc=1
		fi
	done
	return "$rc"
}

# ---------------------------------------------------------------- I/O and lease

LUN0_N1="iscsi://$(bed_portal 1)/$BED_HA_IQN/0"
STOP=$SCRATCH/io.stop
LOOP_LOG=$SCRATCH/readcap.log
LEASE_LOG=$SCRATCH/lease-n1.log
PERF_LOG=$SCRATCH/perf.log

# readcap_loop: READ CAPACITY(16) through node 1, back to back; one line per
# command: "END-US ok|FAIL DURATION-US [output]"
readcap_loop() {
	local t0 t1 out
	while [ ! -e "$STOP" ]; do
		t0=$(bed_now_us)
		if out=$(bed_host timeout 20 iscsi-readcapacity16 -i "$INITIATOR" "$LUN0_N1" 2>&1); then
			t1=$(bed_now_us)
			echo "$t1 ok $((t1 - t0))"
		else
			t1=$(bed_now_us)
			echo "$t1 FAIL $((t1 - t0)) $(tr '\n' ' ' <<<"$out")"
		fi
	done
}

# lease_loop: node 1's lease every 100 ms: "US STATE REMAINING-MS"
lease_loop() {
	local out st rem re_st='"state": *"([a-z-]+)"' re_rem='"remaining_ms": *([0-9]+)'
	while [ ! -e "$STOP" ]; do
		st=noanswer rem=-
		if out=$(bed_isergwctl 1 --timeout 5 --json lease 2>/dev/null | tr -d '\n'); then
			[[ $out =~ $re_st ]] && st=${BASH_REMATCH[1]}
			[[ $out =~ $re_rem ]] && rem=${BASH_REMATCH[1]}
		fi
		echo "$(bed_now_us) $st $rem"
		sleep 0.1
	done
}

PIDS=()
PERF_PID=
io_start() {
	rm -f "$STOP"
	: >"$LOOP_LOG"
	: >"$LEASE_LOG"
	readcap_loop >>"$LOOP_LOG" 2>&1 &
	PIDS+=($!)
	lease_loop >>"$LEASE_LOG" 2>&1 &
	PIDS+=($!)
	# not through bed_host (a function: $! would be a subshell's pid): ip
	# netns exec execs iscsi-perf, so $! is its pid
	ip netns exec "${BED_PREFIX}host" iscsi-perf -i "$INITIATOR" -m 2 -t 3600 "$LUN0_N1" >"$PERF_LOG" 2>&1 &
	PERF_PID=$!
}

# io_stop: stops the loops; iscsi-perf ends on SIGINT ("finished.", status 0)
io_stop() {
	local rc=0
	touch "$STOP"
	[ ${#PIDS[@]} -eq 0 ] || wait "${PIDS[@]}"
	PIDS=()
	if [ -n "$PERF_PID" ]; then
		kill -INT "$PERF_PID" 2>/dev/null
		wait "$PERF_PID"
		rc=$?
		PERF_PID=
	fi
	return "$rc"
}

loop_oks() { grep -c ' ok ' "$LOOP_LOG"; }
loop_at_least() { [ "$(loop_oks)" -ge "$1" ]; }

# ---------------------------------------------------------------- 1. the bed

bed_up || bed_die "the bed did not come up"
for k in "${NODES[@]}"; do
	bed_start_corosync "$k" || bed_die "corosync did not start on node $k"
done
bed_wait_quorum 3 "${NODES[@]}" || bed_die "no quorum of 3"
bed_backend_start tgt || bed_die "the backend did not start"
for k in "${NODES[@]}"; do
	bed_start_isergwd "$k" || bed_die "isergwd did not start on node $k"
	bed_start_ha "$k" --lease-ms "$LEASE_MS" || bed_die "isergw-ha did not start on node $k"
done
CONFIG=$SCRATCH/cluster.json
bed_cluster_config "$CONFIG" || bed_die "no cluster configuration"
bed_cli 1 cluster config apply "$CONFIG" || bed_die "the cluster configuration was not applied"
if ! bed_poll "$BED_WAIT_LIMIT" "every node synced with dg1=n1 dg2=n2 dg3=n3" settled "$OWNERS" "${NODES[@]}"; then
	show_nodes "${NODES[@]}"
	bed_die "the cluster did not settle"
fi
for k in "${NODES[@]}"; do
	BASE[$k]=$(snapshot "$k") || bed_die "no status from node $k"
	echo "node $k: ${BASE[$k]}"
done
GEN=$(status_json 1 | jq -r .generation)
EPOCHS1=$(epochs 1) || bed_die "no status from node 1's isergwd"
echo "node 1's isergwd: epoch, configuration epoch, ALUA epoch: $EPOCHS1"

# ---------------------------------------------------------------- 2. the agent of node 1

ok=1
io_start
check "I/O through node 1 before the kill" bed_poll "$BED_WAIT_LIMIT" "5 reads through node 1" loop_at_least 5 ||
	bed_die "LUN 0 cannot be read through node 1: $(tail -n 3 "$LOOP_LOG")"
bed_poll 10 "2 more reads" loop_at_least $(($(loop_oks) + 2))
ISERGWD_POS=$(bed_log_lines 1 isergwd)
HA_POS=$(bed_log_lines 1 ha)
check "kill node 1's agent" bed_kill 1 ha || ok=0
T_KILL=$BED_T0
check "start node 1's agent again" bed_start_ha 1 --lease-ms "$LEASE_MS" || ok=0
restart_s=$(bed_secs_since "$T_KILL")
if check "node 1's agent synced again" \
	bed_poll "$BED_WAIT_LIMIT" "node 1's agent synced" synced_as 1 "$OWNERS"; then
	notes+=("agent of node 1: killed -> started again $restart_s s -> synced $(bed_secs_since "$T_KILL") s")
else
	show_nodes 1
	ok=0
fi
bed_wait_log 1 ha 'synchronised: generation' "$HA_POS" 10 >/dev/null
# a few more seconds of I/O after it
n=$(loop_oks)
bed_poll 60 "10 more reads" loop_at_least $((n + 10))
T_END=$(bed_now_us)
io_stop
perf_rc=$?

fails=$(grep -c ' FAIL ' "$LOOP_LOG")
total=$(wc -l <"$LOOP_LOG")
if [ "$fails" -ne 0 ]; then
	bed_log "FAILED: $fails of $total READ CAPACITY(16) through node 1 failed:"
	grep ' FAIL ' "$LOOP_LOG" | head -n 5 >&2
	ok=0
fi
if [ "$perf_rc" -ne 0 ] || tr '\r' '\n' <"$PERF_LOG" | grep -Eqi 'fail|error'; then
	bed_log "FAILED: iscsi-perf through node 1 (status $perf_rc): $(tr '\r' '\n' <"$PERF_LOG" | grep -Ei 'fail|error' | head -n 3)"
	ok=0
fi
perf_avg=$(tr '\r' '\n' <"$PERF_LOG" | grep -o 'iops average [0-9]*' | tail -n 1)
# the longest gap between two completed commands, from the one before the
# kill to the end
gap=$(awk -v k="$T_KILL" -v e="$T_END" '$2 == "ok" {
		if (prev && $1 >= k && prev <= e && $1 - prev > max) { max = $1 - prev; at = prev }
		prev = $1 }
	END { printf "%d.%03d s (READ CAPACITY(16) of %d.%03d s after the kill)", max / 1000000,
		max % 1000000 / 1000, (at + max - k) / 1000000, (at + max - k) % 1000000 / 1000 }' "$LOOP_LOG")
longest=$(awk '$2 == "ok" && $3 > m { m = $3 } END { printf "%d.%03d s", m / 1000000, m % 1000000 / 1000 }' "$LOOP_LOG")
notes+=("I/O through node 1 while its agent restarted: longest gap between completed commands $gap; longest command (login, READ CAPACITY(16), logout) $longest; $total commands, $fails failed; iscsi-perf ${perf_avg:-?} (status $perf_rc)")

bad_lease=$(awk '$2 != "valid"' "$LEASE_LOG")
min_lease=$(awk '$2 == "valid" && ($3 < m || m == "") { m = $3 } END { print m }' "$LEASE_LOG")
notes+=("node 1's lease polled $(wc -l <"$LEASE_LOG") times: least remaining $min_lease ms")
if [ -n "$bad_lease" ]; then
	bed_log "FAILED: node 1's lease was not valid at $(wc -l <<<"$bad_lease") poll(s): $(head -n 3 <<<"$bad_lease" | paste -sd'|')"
	ok=0
fi
check "every node synced" bed_poll "$BED_WAIT_LIMIT" "every node synced" settled "$OWNERS" "${NODES[@]}" || ok=0
check "nothing changed in the cluster" unchanged "${NODES[@]}" || ok=0
now=$(epochs 1)
[ "$now" = "$EPOCHS1" ] || { bed_log "FAILED: node 1's isergwd epochs were $EPOCHS1, now $now"; ok=0; }
ere='ALUA epoch|applying the configuration|lease expired|stepped down|renewed after|granted after|-> |step down'
if lines=$(tail -n +"$((ISERGWD_POS + 1))" "$(bed_logfile 1 isergwd)" | grep -E -- "$ere"); then
	bed_log "FAILED: node 1's isergwd logged after the kill:"
	printf '    %s\n' "$lines" >&2
	ok=0
fi
verdict "$ok" "agent of node 1 killed under I/O: no I/O failed, lease valid throughout, nothing changed"

# ---------------------------------------------------------------- 3. isergwd of node 2

# n2_serves: through node 2, tpg 2 Active/Non-optimized for LUN 0 (dg1) and
# Active/Optimized for LUN 1 (dg2)
n2_serves() {
	bed_probe 2 0 2>/dev/null | grep -qx 'group 2 state 1 pref 0 ports 2' &&
		bed_probe 2 1 2>/dev/null | grep -qx 'group 2 state 0 pref 1 ports 2'
}
n2_serves_fast() { # every 0.1 s, at most LIMIT s
	local deadline=$((SECONDS + $1))
	while [ "$SECONDS" -lt "$deadline" ]; do
		n2_serves && return 0
		sleep 0.1
	done
	return 1
}

ok=1
for k in "${NODES[@]}"; do BASE[$k]=$(snapshot "$k"); done
GEN=$(status_json 1 | jq -r .generation)
check "kill node 2's isergwd" bed_kill 2 isergwd || ok=0
HA2_POS=$(bed_log_lines 2 ha)
T_START=$(bed_now_us)
check "start node 2's isergwd again" bed_start_isergwd 2 || ok=0
answered=$(bed_secs_since "$T_START")
if check "node 2 serves again" n2_serves_fast "$BED_WAIT_LIMIT"; then
	notes+=("isergwd of node 2 killed and started again: answering its control socket after $answered s, ANO for dg1 and AO for dg2 through it $(bed_secs_since "$T_START") s after its start")
else
	for l in 0 1; do bed_log "LUN $l through node 2: $(bed_probe 2 "$l" 2>&1 | paste -sd'|')"; done
	ok=0
fi
check "every node synced" bed_poll "$BED_WAIT_LIMIT" "every node synced" settled "$OWNERS" "${NODES[@]}" || ok=0
ce=$(gw_status 2 | jq -r .config_epoch)
if [ "$ce" != "$GEN" ]; then
	bed_log "FAILED: node 2's isergwd holds epoch $ce, the cluster generation is $GEN"
	ok=0
fi
check "nothing changed in the cluster" unchanged "${NODES[@]}" || ok=0
if line=$(tail -n +"$((HA2_POS + 1))" "$(bed_logfile 2 ha)" | grep -E -m1 'generation [0-9]+: '); then
	bed_log "FAILED: node 2's agent made a generation: $line"
	ok=0
fi
verdict "$ok" "isergwd of node 2 killed: pushed again, same generation (epoch $ce)"

# ---------------------------------------------------------------- the end

for k in "${NODES[@]}"; do
	check "isergw-ha on node $k stops with status 0" bed_stop_ha "$k"
	check "isergwd on node $k stops with status 0" bed_stop_isergwd "$k"
done
bed_down
check "nothing left behind" bed_check_clean

echo "ha.restart: measured:"
printf '  %s\n' "${notes[@]}"
echo "ha.restart: results:"
printf '  %s\n' "${results[@]}"
[ "$fail" -eq 0 ] && echo "ha.restart: OK" || echo "ha.restart: FAILED (logs under $SCRATCH)"
exit "$fail"
