# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# What the HA tests share on top of tests/ha/bed.sh (source that first, then
# this; tests/ha/watch.sh, when used, after both): option parsing, the check
# counter, a three-node cluster brought up with the example configuration,
# and what `isergwctl cluster status --json` says about it.
#
# Globals: fail (0; ha_check and ha_verdict set it to 1), results (the
# verdicts so far), HA_OWNERS (the example configuration's owners as a jq
# object: {"dg1": "n1", "dg2": "n2", "dg3": "n3"}), HA_NODES (1..BED_NODES),
# HA_CONFIG ($SCRATCH/cluster.json, written by ha_cluster_start), HA_T_APPLY
# (bed_now_us when ha_cluster_start applied it), HA_BASE (K -> snapshot, filled
# by ha_record).
#
# Functions (K: node number; OWNERS: a jq object of device group -> node):
#
#   ha_options LINES [--OPT VAR]... -- ARGS...
#                             bed_parse_args ARGS; each --OPT VALUE left over
#                             sets VAR, -h/--help prints lines LINES (sed
#                             range, e.g. 3,37) of the script and exits 0,
#                             anything else dies; then bed_init.
#   ha_need OPT PATH WHAT     dies ("OPT PATH (WHAT) required") unless PATH
#                             is an executable.
#   ha_check WHAT CMD...      runs CMD; if it fails, logs "FAILED: WHAT",
#                             sets fail=1 and returns 1.
#   ha_verdict OK NAME        appends "PASS NAME" (OK = 1) or "FAIL NAME"
#                             (else, and fail=1) to results, prints it.
#   ha_lu_state MODE          lu_state MODE (local, cluster; empty: the
#                             default) in the gateway section of the
#                             configuration ha_cluster_start writes.
#   ha_lun_url K              iscsi:// URL of LUN 1 of the HA target through
#                             node K's portal.
#   ha_check_daemons K...     ha_check that node K's agent and isergwd run.
#   ha_cluster_start [AGENT-ARGS...]
#                             bed_up; corosync on every node, quorate with
#                             all; the tgt backend; isergwd and isergw-ha
#                             (with AGENT-ARGS, e.g. --lease-ms 5000) on
#                             every node; the example configuration written
#                             to HA_CONFIG and applied through node 1
#                             (retried until accepted). Returns 1, saying
#                             why, on failure.
#   ha_cluster_up [AGENT-ARGS...]
#                             ha_cluster_start, then waits until every node
#                             is settled --serving with HA_OWNERS.
#                             (BED_STOR=rxe: no backend, LUN 0 on a file.)
#   ha_stop_daemons           stops every node's isergw-ha and isergwd
#                             (ha_check: each must exit 0).
#   ha_cluster_down [--all]   ha_stop_daemons; with --all, then the backend
#                             and every node's corosync (ha_check each);
#                             bed_down; ha_check that nothing is left behind.
#   ha_status K               node K's `cluster status --json`.
#   ha_gw_status K            node K's isergwd's `status --json`.
#   ha_gen K                  node K's agent's generation (0 if none).
#   ha_gen_digest K           its generation and digest, "G DIGEST".
#   ha_owner K DG             the owner of DG as node K's agent reports it.
#   ha_snapshot K             generation, digest and ALUA map (owners,
#                             every node's state, "*" when preferred) of
#                             node K, one line.
#   ha_synced [--serving] [--min-gen N] K [OWNERS]
#                             node K's agent is synced and quorate; with
#                             OWNERS, its owners are those; --serving: its
#                             isergwd holds the agent's generation and a
#                             lease; --min-gen: the generation is >= N.
#   ha_all_synced [OPTS] OWNERS K...   ha_synced OPTS K OWNERS on every K.
#   ha_same_generation K...   every K at one generation and digest.
#   ha_settled [OPTS] OWNERS K...      ha_all_synced and ha_same_generation.
#   ha_wait_settled WHAT [OPTS] OWNERS K...
#                             polls ha_settled (BED_WAIT_LIMIT); on timeout
#                             logs each node (ha_show_nodes) and returns 1.
#   ha_show_nodes K...        logs each node's phase, quorum, generation,
#                             isergwd's epoch and owners.
#   ha_record K...            HA_BASE[K] = ha_snapshot K, printed as
#                             "node K: SNAPSHOT"; 1 if a node did not answer.
#   ha_unchanged K...         every node's snapshot is HA_BASE's (logs the
#                             ones that are not).

# shellcheck disable=SC2034 # fail, results and HA_T_APPLY are the test's
fail=0
results=()
HA_OWNERS='{"dg1": "n1", "dg2": "n2", "dg3": "n3"}'
HA_NODES=()
HA_CONFIG=
HA_T_APPLY=
declare -gA HA_BASE=()

# ---------------------------------------------------------------- the script

ha_options() {
	local lines=$1 a
	local -A var=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		var[$1]=$2
		shift 2
	done
	shift
	bed_parse_args "$@"
	set -- "${BED_ARGS[@]}"
	while [ $# -gt 0 ]; do
		a=$1
		if [ -n "${var[$a]:-}" ]; then
			[ $# -ge 2 ] || bed_die "$a wants a value"
			printf -v "${var[$a]}" '%s' "$2"
			shift 2
			continue
		fi
		case "$a" in
		-h | --help) sed -n "${lines}p" "$0"; exit 0 ;;
		*) bed_die "unknown option $a" ;;
		esac
	done
	bed_init
}

ha_need() { [[ -n $2 && -x $2 ]] || bed_die "$1 PATH ($3) required"; }

ha_check() {
	local what=$1
	shift
	if ! "$@"; then
		bed_log "FAILED: $what"
		fail=1
		return 1
	fi
}

ha_verdict() {
	if [ "$1" -eq 1 ]; then
		results+=("PASS $2")
	else
		results+=("FAIL $2")
		fail=1
	fi
	echo "${results[-1]}"
}

ha_lu_state() { [ -z "$1" ] || BED_GATEWAY_EXTRA=", \"lu_state\": \"$1\""; }

ha_lun_url() { echo "iscsi://$(bed_portal "$1")/$BED_HA_IQN/1"; }

ha_check_daemons() {
	local k
	for k in "$@"; do
		ha_check "node $k's agent runs" bed_alive "$k" ha
		ha_check "node $k's isergwd runs" bed_alive "$k" isergwd
	done
}

# ---------------------------------------------------------------- the cluster

# shellcheck disable=SC2120 # AGENT-ARGS are optional
ha_cluster_start() {
	local k
	mapfile -t HA_NODES < <(seq 1 "$BED_NODES")
	bed_up || { bed_log "the bed did not come up"; return 1; }
	for k in "${HA_NODES[@]}"; do
		bed_start_corosync "$k" || { bed_log "corosync did not start on node $k"; return 1; }
	done
	bed_wait_quorum "$BED_NODES" "${HA_NODES[@]}" || { bed_log "no quorum of $BED_NODES"; return 1; }
	if [ "$BED_STOR" != rxe ]; then # BED_STOR=rxe has no backend
		bed_backend_start tgt || { bed_log "the backend did not start"; return 1; }
	fi
	for k in "${HA_NODES[@]}"; do
		bed_start_isergwd "$k" || { bed_log "isergwd did not start on node $k"; return 1; }
		bed_start_ha "$k" "$@" || { bed_log "isergw-ha did not start on node $k"; return 1; }
	done
	HA_CONFIG=$SCRATCH/cluster.json
	bed_cluster_config "$HA_CONFIG" || { bed_log "no cluster configuration"; return 1; }
	HA_T_APPLY=$(bed_now_us)
	bed_mark "configuration applied"
	bed_poll "$BED_WAIT_LIMIT" "the configuration applied on node 1" \
		bed_cli 1 cluster config apply "$HA_CONFIG" || return 1
}

# shellcheck disable=SC2120 # AGENT-ARGS are optional
ha_cluster_up() {
	ha_cluster_start "$@" || return 1
	ha_wait_settled "every node synced with dg1=n1 dg2=n2 dg3=n3" --serving "$HA_OWNERS" "${HA_NODES[@]}" ||
		{ bed_log "the cluster did not settle"; return 1; }
}

ha_stop_daemons() {
	local k
	for ((k = 1; k <= BED_NODES; k++)); do
		ha_check "isergw-ha on node $k stops with status 0" bed_stop_ha "$k"
		ha_check "isergwd on node $k stops with status 0" bed_stop_isergwd "$k"
	done
}

# shellcheck disable=SC2120 # --all is optional
ha_cluster_down() {
	local k
	ha_stop_daemons
	if [ "${1:-}" = --all ]; then
		[ "$BED_STOR" = rxe ] || ha_check "backend stops" bed_backend_stop
		for ((k = 1; k <= BED_NODES; k++)); do
			ha_check "corosync on node $k stops" bed_stop_corosync "$k"
		done
	fi
	bed_down
	ha_check "nothing left behind" bed_check_clean
}

# ---------------------------------------------------------------- cluster status

ha_status() { bed_cli "$1" --timeout 10 cluster status --json; }
ha_gw_status() { bed_isergwctl "$1" --timeout 5 --json status; }
ha_gen() { ha_status "$1" 2>/dev/null | jq -e '.generation // 0'; }
ha_gen_digest() { ha_status "$1" | jq -r '"\(.generation) \(.digest)"'; }

# ha_rtpg_shows K LUN LINE...: REPORT TARGET PORT GROUPS through node K
# (cluster_probe) shows every LINE at the start of one of its lines
ha_rtpg_shows() {
	local k=$1 lun=$2 out line
	shift 2
	out=$(bed_probe "$k" "$lun" 2>&1) || return 1
	for line in "$@"; do
		grep -q "^$line" <<<"$out" || return 1
	done
}

ha_owner() {
	ha_status "$1" 2>/dev/null | jq -r --arg dg "$2" '.device_groups[] | select(.name == $dg) | .owner'
}

ha_snapshot() {
	ha_status "$1" | jq -c '[.generation, .digest, [.device_groups[] |
		[.name, .owner, [.states[] | .node + "=" + .state + (if .pref then "*" else "" end)]]]]'
}

# _ha_sync_opts ARGS...: the leading ha_synced options of ARGS into _HA_OPTS
_ha_sync_opts() {
	_HA_OPTS=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--serving) _HA_OPTS+=("$1"); shift ;;
		--min-gen) _HA_OPTS+=("$1" "$2"); shift 2 ;;
		*) return 0 ;;
		esac
	done
}

ha_synced() {
	local cond='.phase == "synced" and .quorate'
	while [ $# -gt 0 ]; do
		case "$1" in
		--serving) cond+=' and .isergwd_epoch == .generation and .lease_remaining_ms > 0'; shift ;;
		--min-gen) cond+=" and .generation >= $2"; shift 2 ;;
		*) break ;;
		esac
	done
	# shellcheck disable=SC2016 # $own is jq's
	[ -n "${2:-}" ] && cond+=' and ([.device_groups[] | {(.name): .owner}] | add) == $own'
	ha_status "$1" 2>/dev/null | jq -e --argjson own "${2:-null}" "$cond" >/dev/null
}

ha_all_synced() {
	local own k opts
	_ha_sync_opts "$@"
	opts=("${_HA_OPTS[@]}")
	shift "${#opts[@]}"
	own=$1
	shift
	for k in "$@"; do ha_synced "${opts[@]}" "$k" "$own" || return 1; done
}

ha_same_generation() {
	local k g first=
	for k in "$@"; do
		g=$(ha_gen_digest "$k") || return 1
		[ -z "$first" ] && first=$g
		[ "$g" = "$first" ] || return 1
	done
}

ha_settled() {
	local opts
	_ha_sync_opts "$@"
	opts=("${_HA_OPTS[@]}")
	shift "${#opts[@]}"
	ha_all_synced "${opts[@]}" "$@" && ha_same_generation "${@:2}"
}

ha_wait_settled() {
	local what=$1 opts
	shift
	_ha_sync_opts "$@"
	opts=("${_HA_OPTS[@]}")
	if ! bed_poll "$BED_WAIT_LIMIT" "$what" ha_settled "$@"; then
		shift "$((${#opts[@]} + 1))"
		ha_show_nodes "$@"
		return 1
	fi
}

ha_show_nodes() {
	local k
	for k in "$@"; do
		bed_log "node $k: $(ha_status "$k" | jq -c '[.phase, .quorate, .generation, .isergwd_epoch,
			[.device_groups[] | .name + "=" + .owner]]' 2>&1)"
	done
}

ha_record() {
	local k rc=0
	for k in "$@"; do
		HA_BASE[$k]=$(ha_snapshot "$k") || rc=1
		echo "node $k: ${HA_BASE[$k]}"
	done
	return "$rc"
}

ha_unchanged() {
	local k now rc=0
	for k in "$@"; do
		now=$(ha_snapshot "$k") || { bed_log "node $k: no status"; rc=1; continue; }
		if [ "$now" != "${HA_BASE[$k]}" ]; then
			bed_log "node $k changed: was ${HA_BASE[$k]}"
			bed_log "node $k changed: now $now"
			rc=1
		fi
	done
	return "$rc"
}
