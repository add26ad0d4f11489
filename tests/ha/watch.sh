# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# What the HA failure tests watch, on top of tests/ha/bed.sh and
# tests/ha/ha_lib.sh (source those first): the ALUA states every node
# reports, sampled every 100 ms, and the clients that write and verify
# through the nodes. Both are ha_io (tests/ha/ha_io.c) in the host
# namespace.
#
#   WATCH_IO=PATH                 the ha_io binary (set before the calls)
#   watch_url K LUN               iscsi://10.S.2.K:3260/BED_HA_IQN/LUN
#   watch_start [LUNS]            one sampler per node (REPORT TARGET PORT
#                                 GROUPS of LUNS, default 0,1,2, every 100 ms)
#                                 into $SCRATCH/sample-nK.log
#   watch_stop                    stops the samplers
#   watch_first SINCE_US K LUN MODE ARG
#                                 the T_RECV of node K's first sample sent at
#                                 or after SINCE_US that matches: MODE "ao"
#                                 (group ARG Active/Optimized), "ao_not" (a
#                                 group other than ARG Active/Optimized),
#                                 "own" (the node's own group in a state of
#                                 the comma list ARG), "serving" (its own
#                                 group neither Unavailable, Offline nor
#                                 Transitioning); fails when there is none
#   watch_wait SINCE_US WHAT LUN MODE ARG K...
#                                 polls (BED_WAIT_LIMIT) until every node K
#                                 has such a sample; prints "bed: WHAT after
#                                 EVENT: N.NNN s" counted from SINCE_US to
#                                 the last of them, leaves it in WATCH_SECS
#   watch_check_double_ao [FILE...]
#                                 the whole run's samples (or FILEs): fails,
#                                 printing them, if two nodes that serve
#                                 reported two different groups
#                                 Active/Optimized for one device group at
#                                 the same time (below)
#   io_start NAME LUN K...        ha_io writing LUN through nodes K... (in
#                                 that order), log $SCRATCH/io-NAME.log
#   io_stop NAME...               SIGTERM, waits for the final check; fails
#                                 unless ha_io exited 0; prints its summary
#   watch_finish NAME...          the end of a run, each an ha_check: io_stop
#                                 NAME..., watch_stop, watch_check_double_ao,
#                                 every node's isergwd and agent alive
#
# "At the same time": a sample is an answer that node A computed at some
# instant between its send and its receive, not known when. When two
# consecutive samples of A both say group X is Active/Optimized (and A
# serves), A is taken to have said so from the first one's receive to the
# second one's send: the only stretch both answers certainly bracket. A
# sample of another serving node B that says group Y != X is
# Active/Optimized for the same LUN, sent and received within that stretch,
# is a double Active/Optimized: both states held at one instant, whatever
# the instants the answers were computed at. A single answer naming two
# groups Active/Optimized is one too. (Taking the stretch wider, from the
# first send to the second receive, reports a correct handover as a double
# when an answer is slow: the old owner answers "mine" at 357 ms while the
# new owner's answer, sent at 355 ms, was computed at 450 ms.)
# watch_check_double_ao FILE... checks those sample files instead.

WATCH_IO=${WATCH_IO:-}
WATCH_SECS=
declare -A _WATCH_SAMPLERS=()
declare -A _WATCH_IO=()

watch_url() { echo "iscsi://$(bed_portal "$1")/$BED_HA_IQN/$2"; }

watch_start() {
	local luns=${1:-0,1,2} k
	[ -x "$WATCH_IO" ] || { bed_log "no ha_io binary (--io PATH)"; return 1; }
	for ((k = 1; k <= BED_NODES; k++)); do
		# this run's samples only (a run before in this scratch directory left its own)
		: >"$SCRATCH/sample-n$k.log"
		ip netns exec "${BED_PREFIX}host" "$WATCH_IO" --sample-ms 100 --luns "$luns" \
			--initiator "iqn.2026-11.org.isergw:sampler-n$k" --label "n$k" \
			"$(watch_url "$k" 0)" >>"$SCRATCH/sample-n$k.log" 2>>"$SCRATCH/sample-n$k.err" &
		_WATCH_SAMPLERS[$k]=$!
	done
}

watch_stop() {
	local k
	for k in "${!_WATCH_SAMPLERS[@]}"; do
		kill -TERM "${_WATCH_SAMPLERS[$k]}" 2>/dev/null
		wait "${_WATCH_SAMPLERS[$k]}" 2>/dev/null
		unset "_WATCH_SAMPLERS[$k]"
	done
}

# _watch_awk_match: the awk function match_(mode, arg) over a sample line
# shellcheck disable=SC2016 # awk code
_WATCH_AWK_LIB='
function state_of(tpg,   i, s) {
	for (i = 7; i <= NF; i++) {
		s = $i
		sub(/p$/, "", s)
		if (split(s, kv, "=") == 2 && kv[1] == tpg) return kv[2]
	}
	return -1
}
function ao_list(   i, s, out) {
	out = ""
	for (i = 7; i <= NF; i++) {
		s = $i
		sub(/p$/, "", s)
		if (split(s, kv, "=") == 2 && kv[2] == 0) out = out (out == "" ? "" : ",") kv[1]
	}
	return out
}
function serving(   st) {
	if ($5 != "ok") return 0
	st = state_of($6)
	return st == 0 || st == 1 || st == 2
}
function match_(mode, arg,   a, i, n, l, st) {
	if ($5 != "ok") return 0
	if (mode == "ao") return state_of(arg) == 0
	if (mode == "ao_not") {
		n = split(ao_list(), l, ",")
		for (i = 1; i <= n; i++) if (l[i] != arg) return 1
		return 0
	}
	if (mode == "own") {
		st = state_of($6)
		n = split(arg, a, ",")
		for (i = 1; i <= n; i++) if (a[i] == st) return 1
		return 0
	}
	if (mode == "serving") return serving()
	return 0
}'

watch_first() {
	local since=$1 k=$2 lun=$3 mode=$4 arg=$5 f=$SCRATCH/sample-n$2.log
	[ -f "$f" ] || return 1
	awk -v since="$since" -v lun="$lun" -v mode="$mode" -v arg="$arg" "$_WATCH_AWK_LIB"'
		$2 >= since && $4 == lun && match_(mode, arg) { print $3; found = 1; exit }
		END { exit !found }' "$f"
}

_watch_all() {
	local since=$1 lun=$2 mode=$3 arg=$4 k
	shift 4
	for k in "$@"; do watch_first "$since" "$k" "$lun" "$mode" "$arg" >/dev/null || return 1; done
}

watch_wait() {
	local since=$1 what=$2 lun=$3 mode=$4 arg=$5 k t last=0 d
	shift 5
	if ! bed_poll "$BED_WAIT_LIMIT" "$what" _watch_all "$since" "$lun" "$mode" "$arg" "$@"; then
		for k in "$@"; do
			bed_log "node $k's last sample of LUN $lun: $(grep -E "^n$k [0-9]+ [0-9]+ $lun " \
				"$SCRATCH/sample-n$k.log" | tail -n 1)"
		done
		return 1
	fi
	for k in "$@"; do
		t=$(watch_first "$since" "$k" "$lun" "$mode" "$arg")
		[ "$t" -gt "$last" ] && last=$t
	done
	d=$((last - since))
	WATCH_SECS=$(printf '%d.%03d' $((d / 1000000)) $((d % 1000000 / 1000)))
	bed_log "$what: $WATCH_SECS s"
}

watch_check_double_ao() {
	local out=$SCRATCH/double-ao.txt files=("$@")
	[ ${#files[@]} -gt 0 ] || files=("$SCRATCH"/sample-n*.log)
	# every sample in the order of its receive time: when A's second sample
	# comes, every sample of B received before A's second send is known
	cat "${files[@]}" 2>/dev/null | sort -n -k3,3 | awk -v RING=400 "$_WATCH_AWK_LIB"'
		function report(what) {
			bad++
			if (bad <= 20) print what
		}
		{
			node = $1; lun = $4; key = node SUBSEP lun
			ao = serving() ? ao_list() : ""
			if (index(ao, ",")) report("one answer, two groups Active/Optimized: " $0)
			n = ++cnt[key]
			i = n % RING
			snd[key, i] = $2; rcv[key, i] = $3; aos[key, i] = ao; line[key, i] = $0
			if (!(lun in nodes_of)) nodes_of[lun] = ""
			if (index(" " nodes_of[lun] " ", " " node " ") == 0) nodes_of[lun] = nodes_of[lun] " " node
			p = (n - 1) % RING
			# this sample closes the stretch [previous receive, this send] of this node
			if (n == 1 || ao == "" || aos[key, p] != ao)
				next
			from = rcv[key, p]; to = $2
			split(nodes_of[lun], others, " ")
			for (o in others) {
				other = others[o]
				if (other == node) continue
				okey = other SUBSEP lun
				m = cnt[okey]
				# newest first: received in order, so done at the first one before the stretch
				for (j = m; j >= 1 && j > m - RING; j--) {
					jj = j % RING
					if (rcv[okey, jj] < from)
						break
					if (aos[okey, jj] != "" && aos[okey, jj] != ao &&
					    snd[okey, jj] >= from && rcv[okey, jj] <= to)
						report("double Active/Optimized, LUN " lun ": " line[key, p] " / " $0 " against " line[okey, jj])
				}
			}
		}
		END {
			printf "samples %d, double Active/Optimized %d\n", NR, bad
			exit bad > 0
		}' >"$out"
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		bed_log "two nodes reported different groups Active/Optimized for one device group:"
		sed 's/^/  /' "$out" >&2
		return 1
	fi
	bed_log "double Active/Optimized check: $(tail -n 1 "$out")"
}

io_start() {
	local name=$1 lun=$2 k urls=()
	shift 2
	[ -x "$WATCH_IO" ] || { bed_log "no ha_io binary (--io PATH)"; return 1; }
	for k in "$@"; do urls+=("$(watch_url "$k" "$lun")"); done
	ip netns exec "${BED_PREFIX}host" "$WATCH_IO" --seed "$((lun + 1000))" --region-mib 16 \
		--timeout-s 3 --pause-ms "${IO_PAUSE_MS:-2}" --initiator "iqn.2026-11.org.isergw:io-$name" \
		"${urls[@]}" >"$SCRATCH/io-$name.log" 2>&1 &
	_WATCH_IO[$name]=$!
}

io_stop() {
	local name rc=0 st
	for name in "$@"; do
		kill -TERM "${_WATCH_IO[$name]}" 2>/dev/null
	done
	for name in "$@"; do
		wait "${_WATCH_IO[$name]}"
		st=$?
		unset "_WATCH_IO[$name]"
		bed_log "client $name: $(grep '^ha_io: writes' "$SCRATCH/io-$name.log" || echo 'no summary')"
		if [ "$st" -ne 0 ]; then
			bed_log "client $name exited with status $st:"
			grep -v ' stall of ' "$SCRATCH/io-$name.log" | tail -n 20 >&2
			rc=1
		fi
	done
	return "$rc"
}

watch_finish() {
	local k
	ha_check "the clients' final verification" io_stop "$@"
	watch_stop
	ha_check "no double Active/Optimized" watch_check_double_ao
	for ((k = 1; k <= BED_NODES; k++)); do
		ha_check "node $k's daemons alive at the end" eval "bed_alive $k isergwd && bed_alive $k ha"
	done
}

# ---------------------------------------------------------------- the cluster

# watch_cluster_up: ha_cluster_start (tests/ha/ha_lib.sh: the example
# configuration applied, dgK owned by nK), the samplers started; waits until
# every node reports those owners (group K Active/Optimized for LUN K-1).
watch_cluster_up() {
	local lun
	ha_cluster_start || return 1
	watch_start 0,1,2 || return 1
	for lun in 0 1 2; do
		watch_wait "$HA_T_APPLY" "LUN $lun (dg$((lun + 1))) Active/Optimized on group $((lun + 1)) everywhere" \
			"$lun" ao "$((lun + 1))" 1 2 3 || return 1
	done
}

# watch_stats VALUES...: "median M s, max X s" (seconds with 3 decimals)
watch_stats() {
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "median - s, max - s"; exit }
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "median %.3f s, max %.3f s\n", m, v[NR] }'
}
