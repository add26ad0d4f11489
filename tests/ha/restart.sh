#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ha.restart: an agent or an isergwd killed and started again changes
# nothing in the cluster.
#
#   restart.sh --isergwd PATH --isergwctl PATH --ha PATH --probe PATH
#              --prefix P --subnet S --scratch DIR
#              [--lease-ms MS] [--agent-kills N] [--io PATH]
#
# --lease-ms: the agents' lease (default 5000, see 2.); --agent-kills: how
# many times node 1's agent is killed and started again in 2. (default 1);
# --io: ha_io (tests/ha/ha_io.c), the client of one session in 2.
#
# 1. Three nodes (corosync, isergwd --managed, isergw-ha --lease-ms 5000),
#    the example cluster configuration applied through node 1; every node synced with
#    dg1=n1, dg2=n2, dg3=n3. Each node's generation, digest and ALUA map
#    (`isergwctl cluster status --json`) and node 1's isergwd epochs
#    (`isergwctl status`) are recorded.
# 2. Under I/O through node 1 to LUN 0 (dg1, Active/Optimized there):
#    iscsi-perf reading, a loop of READ CAPACITY(16) (one session each)
#    whose completions are timed, and (--io) ha_io writing and verifying
#    through one session that stays logged in, the host's view: the
#    longest time between two of its completed commands is the I/O pause
#    the restart caused, printed, not asserted; node 1's lease polled every
#    100 ms. Node
#    1's agent is killed (SIGKILL) and started again at once; once it is
#    synced (and, from its log, when it ran, synchronised and renewed
#    isergwd's lease, counted from the kill), a few more seconds of I/O
#    (--agent-kills N: N times). Then: no command failed (iscsi-perf
#    and the loop), the lease was valid at every poll, every node's
#    generation, digest and map are the recorded ones, node 1's isergwd has
#    the same epochs and logged no new epoch, ALUA map, state change, lease
#    expiry or renewal after a gap since the kill; ha_io found every block
#    it wrote. The longest gap between two completed commands of the loop is
#    printed, not asserted. The lease
#    is 5 s instead of the default 1.5 s because starting a process takes
#    seconds on a loaded test machine (docs/ha.md, "Timings": from the kill
#    to the renewal 1.0 s on a quiet machine, up to 3.9 s at a load of 8 on
#    two cores): what is checked is that an agent restarted within its
#    lease changes nothing (the time it took is printed).
# 3. Node 2's isergwd killed (SIGKILL) and started again: the agent pushes
#    the configuration, the map and the lease again. The time from its start
#    until REPORT TARGET PORT GROUPS through node 2 shows its group
#    Active/Non-optimized for LUN 0 (dg1) and Active/Optimized for LUN 1
#    (dg2), polled every 0.1 s from its start, is printed (the recorded
#    state is taken again first), and from its log where that time went
#    (its control socket up, the agent connected, configuration, ALUA map,
#    lease: serving again); then its isergwd's configuration epoch is the
#    cluster's generation, and every node's generation, digest and map are
#    still the recorded ones.
# 4. Node 3's agent and corosync stopped, then the agent started first and
#    corosync after it (as `corosync -f & isergw-ha &` may race): the agent
#    waits for corosync (logged once, at warn), is still running, and once
#    corosync is up it joins with no restart; every node synced again.
# Exit 0 only if every check holds; 77 when not root or corosync is missing.

# shellcheck disable=SC2317 # the conditions are called through bed_poll
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"
# shellcheck source=tests/ha/watch.sh
. "$here/watch.sh"

LEASE_MS=5000
AGENT_KILLS=1
ha_options 3,52 --lease-ms LEASE_MS --agent-kills AGENT_KILLS --io WATCH_IO -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --probe "$BED_PROBE" cluster_probe

NODES=(1 2 3)
INITIATOR=iqn.2026-11.org.isergw:host
notes=()

# ---------------------------------------------------------------- cluster state

# epochs K: node K's isergwd's epochs, "epoch config_epoch alua_epoch"
epochs() { ha_gw_status "$1" | jq -r '"\(.epoch) \(.config_epoch) \(.alua_epoch)"'; }

# log_at FILE AFTER-LINE T0-US ERE: seconds from T0 to the first line after
# AFTER-LINE of FILE (a daemon's log, ISO timestamps) matching ERE; "?" if none
log_at() {
	local line us
	line=$(awk -v n="$2" -v re="$4" 'NR > n && $0 ~ re { print; exit }' "$1")
	[ -n "$line" ] || { echo '?'; return; }
	us=$(date -d "${line%% *}" +%s%6N 2>/dev/null) || { echo '?'; return; }
	us=$((us - $3))
	if [ "$us" -lt 0 ]; then echo "-0.$(printf '%03d' $((-us / 1000)))"; return; fi
	printf '%d.%03d' $((us / 1000000)) $((us % 1000000 / 1000))
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
load_start() {
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
	# one session through node 1 only (tests/ha/watch.sh): writes 2 ms apart, verified at the end
	[ -z "$WATCH_IO" ] || io_start session 0 1
}

# load_stop: stops the loops; iscsi-perf ends on SIGINT ("finished.", status 0)
load_stop() {
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
	if [ -n "$WATCH_IO" ]; then
		io_stop session || rc=1
	fi
	return "$rc"
}

loop_oks() { grep -c ' ok ' "$LOOP_LOG"; }
loop_at_least() { [ "$(loop_oks)" -ge "$1" ]; }

# ---------------------------------------------------------------- 1. the bed

ha_cluster_up --lease-ms "$LEASE_MS" || bed_die "the cluster did not come up"
ha_record "${NODES[@]}" || bed_die "no status from every node"
GEN=$(ha_status 1 | jq -r .generation)
EPOCHS1=$(epochs 1) || bed_die "no status from node 1's isergwd"
echo "node 1's isergwd: epoch, configuration epoch, ALUA epoch: $EPOCHS1"

# ---------------------------------------------------------------- 2. the agent of node 1

ok=1
load_start
ha_check "I/O through node 1 before the kill" bed_poll "$BED_WAIT_LIMIT" "5 reads through node 1" loop_at_least 5 ||
	bed_die "LUN 0 cannot be read through node 1: $(tail -n 3 "$LOOP_LOG")"
bed_poll 10 "2 more reads" loop_at_least $(($(loop_oks) + 2))
ISERGWD_POS=$(bed_log_lines 1 isergwd)
T_KILL1=
for ((round = 1; round <= AGENT_KILLS; round++)); do
	HA_POS=$(bed_log_lines 1 ha)
	ha_check "kill node 1's agent" bed_kill 1 ha || ok=0
	T_KILL=$BED_T0
	T_KILL1=${T_KILL1:-$T_KILL}
	ha_check "start node 1's agent again" bed_start_ha 1 --lease-ms "$LEASE_MS" || ok=0
	restart_s=$(bed_secs_since "$T_KILL")
	if ha_check "node 1's agent synced again" \
		bed_poll "$BED_WAIT_LIMIT" "node 1's agent synced" ha_synced --serving 1 "$HA_OWNERS"; then
		synced_s=$(bed_secs_since "$T_KILL")
	else
		ha_show_nodes 1
		ok=0
	fi
	bed_wait_log 1 ha 'synchronised: generation' "$HA_POS" 10 >/dev/null
	bed_wait_log 1 ha 'lease renewed, the first time' "$HA_POS" 10 >/dev/null
	# from its log: when it started, synchronised and renewed isergwd's lease
	f=$(bed_logfile 1 ha)
	notes+=("agent of node 1 (kill $round of $AGENT_KILLS, lease $LEASE_MS ms): killed -> started again $restart_s s -> synced ${synced_s:-?} s; from its log, after the kill: running $(log_at "$f" "$HA_POS" "$T_KILL" 'starting [(]protocol') s, synchronised $(log_at "$f" "$HA_POS" "$T_KILL" 'synchronised: generation') s, isergwd's lease renewed $(log_at "$f" "$HA_POS" "$T_KILL" 'lease renewed, the first time') s")
	[ "$round" -eq "$AGENT_KILLS" ] || bed_poll 60 "3 more reads" loop_at_least $(($(loop_oks) + 3))
done
T_KILL=$T_KILL1
# a few more seconds of I/O after it
n=$(loop_oks)
bed_poll 60 "10 more reads" loop_at_least $((n + 10))
T_END=$(bed_now_us)
load_stop
perf_rc=$?

fails=$(grep -c ' FAIL ' "$LOOP_LOG")
total=$(wc -l <"$LOOP_LOG")
if [ "$fails" -ne 0 ]; then
	bed_log "FAILED: $fails of $total READ CAPACITY(16) through node 1 failed:"
	grep ' FAIL ' "$LOOP_LOG" | head -n 5 >&2
	ok=0
fi
if [ "$perf_rc" -ne 0 ] || tr '\r' '\n' <"$PERF_LOG" | grep -Eqi 'fail|error'; then
	bed_log "FAILED: iscsi-perf or ha_io through node 1 (status $perf_rc): $(tr '\r' '\n' <"$PERF_LOG" | grep -Ei 'fail|error' | head -n 3)"
	ok=0
fi
if [ -n "$WATCH_IO" ]; then
	summary=$(grep '^ha_io: writes' "$SCRATCH/io-session.log") || summary="no summary"
	stall=$(sed -n 's/.*longest stall \([0-9.]*\) s.*/\1/p' <<<"$summary")
	notes+=("I/O pause seen by a host through node 1 while its agent restarted (one session, writes 2 ms apart, ha_io): longest ${stall:-?} s; $summary")
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
ha_check "every node synced" bed_poll "$BED_WAIT_LIMIT" "every node synced" ha_settled --serving "$HA_OWNERS" "${NODES[@]}" || ok=0
ha_check "nothing changed in the cluster" ha_unchanged "${NODES[@]}" || ok=0
now=$(epochs 1)
[ "$now" = "$EPOCHS1" ] || { bed_log "FAILED: node 1's isergwd epochs were $EPOCHS1, now $now"; ok=0; }
ere='ALUA epoch|applying the configuration|lease expired|stepped down|renewed after|granted after|-> |step down'
if lines=$(tail -n +"$((ISERGWD_POS + 1))" "$(bed_logfile 1 isergwd)" | grep -E -- "$ere"); then
	bed_log "FAILED: node 1's isergwd logged after the kill:"
	printf '    %s\n' "$lines" >&2
	ok=0
fi
ha_verdict "$ok" "agent of node 1 killed under I/O: no I/O failed, lease valid throughout, nothing changed"

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
ha_record "${NODES[@]}" >/dev/null
GEN=$(ha_status 1 | jq -r .generation)
ha_check "kill node 2's isergwd" bed_kill 2 isergwd || ok=0
HA2_POS=$(bed_log_lines 2 ha)
GW2_POS=$(bed_log_lines 2 isergwd)
SERVES_AT=$SCRATCH/n2-serves.at
rm -f "$SERVES_AT"
T_START=$(bed_now_us)
# RTPG through node 2 polled from now on, beside bed_start_isergwd's own
# wait for the control socket (which would delay the first probe)
{ n2_serves_fast "$BED_WAIT_LIMIT" && bed_now_us >"$SERVES_AT"; } &
serves_pid=$!
ha_check "start node 2's isergwd again" bed_start_isergwd 2 || ok=0
answered=$(bed_secs_since "$T_START")
wait "$serves_pid"
if ha_check "node 2 serves again" test -s "$SERVES_AT"; then
	us=$(($(cat "$SERVES_AT") - T_START))
	notes+=("isergwd of node 2 killed and started again: answering its control socket after $answered s, ANO for dg1 and AO for dg2 through it $(printf '%d.%03d' $((us / 1000000)) $((us % 1000000 / 1000))) s after its start")
	f=$(bed_logfile 2 isergwd)
	notes+=("  from its log, after its start: first line $(log_at "$f" "$GW2_POS" "$T_START" ' main: ') s, control socket $(log_at "$f" "$GW2_POS" "$T_START" 'ctl: control socket /') s, agent connected $(log_at "$f" "$GW2_POS" "$T_START" 'subscribed to events') s, configuration $(log_at "$f" "$GW2_POS" "$T_START" 'configuration reloaded') s, ALUA map $(log_at "$f" "$GW2_POS" "$T_START" 'ALUA epoch [0-9]+ map') s, lease (serving again) $(log_at "$f" "$GW2_POS" "$T_START" 'ALUA lease granted') s")
else
	for l in 0 1; do bed_log "LUN $l through node 2: $(bed_probe 2 "$l" 2>&1 | paste -sd'|')"; done
	ok=0
fi
ha_check "every node synced" bed_poll "$BED_WAIT_LIMIT" "every node synced" ha_settled --serving "$HA_OWNERS" "${NODES[@]}" || ok=0
ce=$(ha_gw_status 2 | jq -r .config_epoch)
if [ "$ce" != "$GEN" ]; then
	bed_log "FAILED: node 2's isergwd holds epoch $ce, the cluster generation is $GEN"
	ok=0
fi
ha_check "nothing changed in the cluster" ha_unchanged "${NODES[@]}" || ok=0
if line=$(tail -n +"$((HA2_POS + 1))" "$(bed_logfile 2 ha)" | grep -E -m1 'generation [0-9]+: '); then
	bed_log "FAILED: node 2's agent made a generation: $line"
	ok=0
fi
ha_verdict "$ok" "isergwd of node 2 killed: pushed again, same generation (epoch $ce)"

# ---------------------------------------------------------------- 4. the agent before corosync

ok=1
ha_check "stop node 3's agent" bed_stop_ha 3 || ok=0
ha_check "stop node 3's corosync" bed_stop_corosync 3 || ok=0
HA3_POS=$(bed_log_lines 3 ha)
ha_check "start node 3's agent before its corosync" bed_start_ha 3 --no-wait --lease-ms "$LEASE_MS" || ok=0
HA3_PID=$(bed_pid 3 ha)
# n3_waits: its log says it waits for corosync
n3_waits() { tail -n +"$((HA3_POS + 1))" "$(bed_logfile 3 ha)" | grep -q 'corosync is not running (yet)'; }
if ha_check "node 3's agent waits for corosync" bed_poll 30 "node 3's agent waiting for corosync" n3_waits; then
	ha_check "node 3's agent still runs without corosync" bed_alive 3 ha || ok=0
else
	tail -n 5 "$(bed_logfile 3 ha)" >&2
	ok=0
fi
ha_check "start node 3's corosync" bed_start_corosync 3 || ok=0
ha_check "every node synced" bed_poll "$BED_WAIT_LIMIT" "every node synced" ha_settled --serving "$HA_OWNERS" "${NODES[@]}" || ok=0
if [ "$(bed_pid 3 ha 2>/dev/null)" != "$HA3_PID" ]; then
	bed_log "FAILED: node 3's agent is not the one started before corosync (pid $HA3_PID)"
	ok=0
fi
n=$(tail -n +"$((HA3_POS + 1))" "$(bed_logfile 3 ha)" | grep -c 'corosync is not running (yet)')
if [ "$n" != 1 ]; then
	bed_log "FAILED: node 3's agent logged the absence of corosync $n times (expected once)"
	ok=0
fi
if line=$(tail -n +"$((HA3_POS + 1))" "$(bed_logfile 3 ha)" | grep -m1 'corosync answered after'); then
	notes+=("node 3's agent started before corosync: ${line#* * }")
fi
ha_verdict "$ok" "node 3's agent started before corosync waits for it and joins"

# ---------------------------------------------------------------- the end

ha_cluster_down

echo "ha.restart: measured:"
printf '  %s\n' "${notes[@]}"
echo "ha.restart: results:"
printf '  %s\n' "${results[@]}"
[ "$fail" -eq 0 ] && echo "ha.restart: OK" || echo "ha.restart: FAILED (logs under $SCRATCH)"
exit "$fail"
