#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# ha.zombie-fence: fencing at the backend (docs/ha.md, "Fencing at the
# backend"). A node that only looked dead must not write stale data after the
# others moved on.
#
#   zombie_fence.sh --isergwd PATH --isergwctl PATH --ha PATH --zio PATH
#                   --prefix P --subnet S --scratch DIR [--mib N] [--only MODE]
#
# Twice, on a fresh bed each time: with the cluster's default
# (gateway.backend_fencing "reservation") and with "none" (the control run):
# 1. three nodes, the example configuration: LUN 0 is the tgt backend's LUN
#    (iscsi://), in dg1, owned by n1. The host writes the first N MiB (16)
#    with tag 0x0a through node 1 and reads them back on a second connection
#    (so both reactors of node 1's isergwd have a backend session: with
#    fencing, registered).
# 2. tgtd is stopped (SIGSTOP); the host writes the same blocks with tag 0x0d
#    (the data that will be stale) through node 1, 32 commands of 512 KiB at
#    once (zombie_io --hold): node 1's isergwd takes all the data and holds it
#    for the backend, which does not answer.
# 3. every process of node 1 is stopped (SIGSTOP); tgtd continues.
# 4. the survivors take dg1 over once node 1's lease is over; the host
#    rewrites the blocks with tag 0x0e through the new owner (every command
#    GOOD). With fencing, each survivor's isergwd took that generation as
#    its ALUA map with node 1's key to fence: it fenced, then set the states,
#    and applied no configuration meanwhile (docs/ha.md, "Pushing to
#    isergwd").
# 5. node 1 continues (SIGCONT) and gets 8 s to send what it held.
# 6. the blocks are read straight from the backend: with fencing every block
#    holds 0x0e, and node 1's isergwd logged the backend's RESERVATION
#    CONFLICT; without it some blocks hold 0x0d (else the scenario makes no
#    zombie writes and proves nothing: the test fails).
# 7. (with fencing) node 1 rejoins and dg1 fails back to it: it registered
#    its key again, and two connections writing tag 0x0f through it (both
#    reactors of its isergwd) meet no RESERVATION CONFLICT; the backend holds
#    0x0f everywhere.
# 8. (with fencing) node 3's agent restarts: its isergwd, which took the
#    generations since the failover as ALUA maps with the keys to fence,
#    finds the whole configuration of the current one already applied (the
#    document it kept is the rendered one: nothing refused, nothing reloaded).
# Printed: blocks checked and stale blocks found in each run.
# Exit 77 when not root or corosync is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

ZIO=
MIB=16
ONLY=
ha_options 4,35 --zio ZIO --mib MIB --only ONLY -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --zio "$ZIO" zombie_io
command -v jq >/dev/null || bed_die "jq is required"

# the example configuration with gateway.backend_fencing set to ZF_FENCING
ZF_FENCING=reservation
eval "$(declare -f bed_cluster_config | sed '1s/^bed_cluster_config/_zf_example_config/')"
bed_cluster_config() {
	_zf_example_config "$1" || return 1
	jq --arg f "$ZF_FENCING" '.gateway.backend_fencing = $f' "$1" >"$1.tmp" && mv "$1.tmp" "$1"
}

gw_url() { echo "iscsi://$(bed_portal "$1")/$BED_HA_IQN/0"; }

moved_off() { # moved_off DG NODE K...: every node K's agent names an owner of DG that is not NODE
	local dg=$1 node=$2 k o
	shift 2
	for k in "$@"; do
		o=$(ha_owner "$k" "$dg")
		[ -n "$o" ] && [ "$o" != "$node" ] || return 1
	done
}

# fenced_by_map K LINE: node K's isergwd, after line LINE of its log, fenced
# and then took a generation as its ALUA map alone (no reload), with no
# configuration applied before
fenced_by_map() {
	local seq
	seq=$(tail -n +"$(($2 + 1))" "$(bed_logfile "$1" isergwd)" |
		grep -oE 'backend fencing of|applying the configuration of epoch|\(no reload\)' | tr '\n' '|')
	[[ $seq =~ ^(\(no\ reload\)\|)*backend\ fencing\ of\|\(no\ reload\)\| ]]
}

declare -A STALE=() CHECKED=() CONFLICT=() MAPPED=()
REJOINED=0

# rejoin LOG: node 1 back in the cluster owns dg1 again; two connections (both
# reactors of its isergwd) write tag 0x0f through it, every command GOOD, no
# RESERVATION CONFLICT in LOG meanwhile, and the backend holds 0x0f
rejoin() {
	local log=$1 line out i
	ha_wait_settled "node 1 back, dg1 failed back to it" --serving "$HA_OWNERS" 1 2 3 || return 1
	line=$(wc -l <"$log")
	for i in 1 2; do
		out=$(bed_host "$ZIO" --write 0x0f --mib "$MIB" --timeout-s 60 "$(gw_url 1)") || {
			bed_log "writing through node 1 after it rejoined: $out"
			return 1
		}
		bed_log "tag 0x0f through node 1 after it rejoined ($i): $out"
	done
	out=$(bed_host "$ZIO" --check 0x0f --mib "$MIB" --initiator iqn.2026-11.org.isergw:zombie-check \
		"$(bed_backend_url)")
	bed_log "read from the backend: $out"
	grep -q "registered reservation key .* again" "$log" || { bed_log "node 1 did not register again"; return 1; }
	if tail -n +"$((line + 1))" "$log" | grep -q "RESERVATION CONFLICT"; then
		bed_log "node 1 met a RESERVATION CONFLICT after it rejoined"
		return 1
	fi
	[[ $out =~ tag\ 0x0f\ in\ ([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -eq $((MIB * 2048)) ] || return 1
	REJOINED=1
}

# same_after_restart: step 8
same_after_restart() {
	local log line out
	log=$(bed_logfile 3 isergwd)
	line=$(bed_log_lines 3 isergwd)
	bed_stop_ha 3 && bed_start_ha 3 || return 1
	bed_poll 30 "node 3's agent back, its isergwd current" ha_synced --serving 3 || return 1
	out=$(tail -n +"$((line + 1))" "$log" | grep -E 'configuration of epoch|applying the configuration')
	bed_log "node 3's isergwd after its agent restarted: ${out:-nothing}"
	grep -q 'configuration of epoch [0-9]* already applied' <<<"$out" &&
		! grep -qE 'applying the configuration|already applied with a different' <<<"$out" &&
		SAME=1
}

SAME=0
# scenario MODE: one run; STALE[MODE], CHECKED[MODE], CONFLICT[MODE] (1: node 1 logged it)
scenario() {
	local mode=$1 be pid hold_pid out owner k line0 log
	ZF_FENCING=$mode
	bed_log "=== run with gateway.backend_fencing \"$mode\""
	ha_cluster_up || { bed_log "the cluster did not come up"; return 1; }
	be=$(bed_backend_url)
	pid=$(bed_pid be backend) || return 1

	# 1. the first data, through node 1
	out=$(bed_host "$ZIO" --write 0x0a --mib "$MIB" "$(gw_url 1)") || {
		bed_log "the first write through node 1 failed: $out"
		return 1
	}
	bed_log "tag 0x0a through node 1: $out"
	# a second connection (the next reactor of node 1's isergwd) reads it
	# back, so that every reactor has a backend session (registered, with
	# fencing) before the backend stops
	out=$(bed_host "$ZIO" --check 0x0a --mib "$MIB" "$(gw_url 1)") || {
		bed_log "reading through node 1: $out"
		return 1
	}
	bed_log "through node 1: $out"
	log=$(bed_logfile 1 isergwd)
	line0=$(bed_log_lines 1 isergwd)

	# 2. the backend stops; the stale data goes into node 1 and stays there
	kill -STOP "$pid" || return 1
	bed_mark "tgtd stopped"
	rm -f "$SCRATCH/hold.out"
	bed_host "$ZIO" --write 0x0d --hold --mib "$MIB" --timeout-s 120 "$(gw_url 1)" \
		>"$SCRATCH/hold.out" 2>&1 &
	hold_pid=$!
	if ! bed_poll 20 "node 1 took the 0x0d writes" grep -q "all sent" "$SCRATCH/hold.out"; then
		kill -CONT "$pid"
		kill -KILL "$hold_pid"
		bed_log "the held writes did not leave the host: $(cat "$SCRATCH/hold.out")"
		return 1
	fi
	bed_log "held: $(cat "$SCRATCH/hold.out")"
	sleep 1

	# 3. node 1 freezes with them; the backend comes back
	local l2 l3
	l2=$(bed_log_lines 2 isergwd) l3=$(bed_log_lines 3 isergwd)
	bed_freeze 1 || return 1
	kill -KILL "$hold_pid"
	wait "$hold_pid" 2>/dev/null
	kill -CONT "$pid" || return 1

	# 4. failover, and the same blocks rewritten through the new owner
	if ! bed_poll 30 "dg1 moved off n1" moved_off dg1 n1 2 3; then
		bed_thaw 1
		return 1
	fi
	owner=$(ha_owner 2 dg1)
	k=${owner#n}
	bed_log "dg1 now $owner's, $(bed_secs_since "$BED_T0") s after tgtd stopped"
	MAPPED[$mode]=0
	bed_poll 10 "node 2 fenced, then took the map alone" fenced_by_map 2 "$l2" &&
		bed_poll 10 "node 3 fenced, then took the map alone" fenced_by_map 3 "$l3" && MAPPED[$mode]=1
	out=$(bed_host "$ZIO" --write 0x0e --mib "$MIB" --timeout-s 60 "$(gw_url "$k")") || {
		bed_log "the rewrite through node $k failed: $out"
		bed_thaw 1
		return 1
	}
	bed_log "tag 0x0e through node $k: $out"

	# 5. node 1 wakes up with the old writes
	bed_thaw 1 || return 1
	sleep 8

	# 6. what the backend holds
	out=$(bed_host "$ZIO" --check 0x0e --stale 0x0d --mib "$MIB" --initiator \
		iqn.2026-11.org.isergw:zombie-check "$be")
	bed_log "read from the backend: $out"
	[[ $out =~ checked\ ([0-9]+)\ blocks.*stale\ ([0-9]+),\ other\ ([0-9]+) ]] || return 1
	CHECKED[$mode]=${BASH_REMATCH[1]}
	STALE[$mode]=${BASH_REMATCH[2]}
	[ "${BASH_REMATCH[3]}" -eq 0 ] || bed_log "${BASH_REMATCH[3]} blocks hold neither tag"
	# the thawed node meets the conflict on its own time: with fencing, wait
	# for its line (10 s at most); without, one look after the same 10 s
	CONFLICT[$mode]=0
	for _ in $(seq 100); do
		if tail -n +"$((line0 + 1))" "$log" | grep -q "RESERVATION CONFLICT"; then
			CONFLICT[$mode]=1
			break
		fi
		sleep 0.1
	done
	tail -n +"$((line0 + 1))" "$log" | grep -E "bdev-iscsi|fenc" | head -20 >&2
	if [ "$mode" = reservation ]; then
		# 7. node 1 rejoins (dg1 fails back to it) and registers again:
		# writes through it, on both reactors, meet no conflict
		rejoin "$log" || bed_log "node 1 did not come back as it should (checked below)"
		# 8. a survivor's agent restarts: the document its isergwd kept is the rendered one
		same_after_restart || bed_log "node 3's isergwd did not hold the configuration (checked below)"
	fi
	cp "$log" "$SCRATCH/isergwd-n1-$mode.log"
	grep -hE "preempt|fencing|reservation key" "$SCRATCH"/n[23]/isergwd.log | head -10 >&2
	ha_cluster_down --all
}

if [ -z "$ONLY" ] || [ "$ONLY" = reservation ]; then
	if scenario reservation; then
		ha_check "with fencing: no stale block (${STALE[reservation]} of ${CHECKED[reservation]})" \
			[ "${STALE[reservation]}" -eq 0 ]
		ha_check "with fencing: node 1's isergwd logged the backend's RESERVATION CONFLICT" \
			[ "${CONFLICT[reservation]}" -eq 1 ]
		ha_check "with fencing: node 1 rejoined, registered again and writes through it land" \
			[ "$REJOINED" -eq 1 ]
		ha_check "with fencing: the survivors fenced node 1, then took the failover as the ALUA map alone" \
			[ "${MAPPED[reservation]}" -eq 1 ]
		ha_check "with fencing: a survivor's agent restarted finds its isergwd's configuration current" \
			[ "$SAME" -eq 1 ]
	else
		ha_check "the run with fencing completed" false
		bed_down
	fi
fi
if [ -z "$ONLY" ] || [ "$ONLY" = none ]; then
	if scenario none; then
		ha_check "without fencing: stale blocks found (the scenario makes zombie writes)" \
			[ "${STALE[none]}" -gt 0 ]
		ha_check "without fencing: no RESERVATION CONFLICT" [ "${CONFLICT[none]}" -eq 0 ]
	else
		ha_check "the run without fencing completed" false
		bed_down
	fi
fi

bed_log "ha.zombie-fence: blocks checked ${CHECKED[reservation]:--} / ${CHECKED[none]:--};" \
	"stale with fencing ${STALE[reservation]:--}, without ${STALE[none]:--}"
if [ "$fail" -ne 0 ]; then
	bed_log "ha.zombie-fence: FAILED"
	exit 1
fi
bed_log "ha.zombie-fence: passed"
exit 0
