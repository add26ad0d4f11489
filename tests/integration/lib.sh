# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Helpers shared by the integration scripts and the bench: start and stop the
# target under test (isergwd or tgtd), wait for a portal, clean up on exit.
# Source it; it does not change shell options.
#
# The target under test is chosen by TARGET_KIND (isergw | tgt), set from the
# scripts' --target-kind option or the ISERGW_TARGET_KIND environment variable.
# tgt is the reference target the harnesses were proven against: its disk is
# LUN 1 (LUN 0 is its controller), ours is LUN 0.

TARGET_KIND=${ISERGW_TARGET_KIND:-isergw}
ISERGWD=${ISERGWD:-}
SCRATCH=${SCRATCH:-}
READY_TIMEOUT=${READY_TIMEOUT:-30}

# Every daemon started through this file, as "pid kind" lines, for the trap.
_LIB_DAEMONS=()
# The shell that sourced this file: only it cleans up. A subshell inherits
# _LIB_DAEMONS and, until bash resets its traps, the traps below too: one
# killed in its first moments (a watchdog "( sleep 10; kill ... ) &" that
# is no longer needed) would otherwise run "exit 143" and then lib_cleanup,
# and stop the daemons the script is still testing.
_LIB_SHELL=$BASHPID

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Standard options of every integration script; sets the globals above and
# leaves the remaining arguments in LIB_ARGS.
LIB_ARGS=()
lib_parse_common() {
	local a
	# --help: the caller prints its own, with nothing checked or created
	for a in "$@"; do
		case "$a" in -h | --help) LIB_ARGS+=(--help); return 0 ;; esac
	done
	while [ $# -gt 0 ]; do
		case "$1" in
		--target-kind) TARGET_KIND=$2; shift 2 ;;
		--target-kind=*) TARGET_KIND=${1#*=}; shift ;;
		--daemon) ISERGWD=$2; shift 2 ;;
		--daemon=*) ISERGWD=${1#*=}; shift ;;
		--scratch) SCRATCH=$2; shift 2 ;;
		--scratch=*) SCRATCH=${1#*=}; shift ;;
		*) LIB_ARGS+=("$1"); shift ;;
		esac
	done
	case "$TARGET_KIND" in
	isergw)
		[ -n "$ISERGWD" ] || die "--daemon PATH (the isergwd binary) is required for --target-kind isergw"
		[ -x "$ISERGWD" ] || die "isergwd binary not executable: $ISERGWD"
		;;
	tgt)
		if ! command -v tgtd >/dev/null || ! command -v tgtadm >/dev/null; then
			die "tgtd/tgtadm not found (apt-get install tgt)"
		fi
		;;
	*) die "unknown --target-kind '$TARGET_KIND' (isergw|tgt)" ;;
	esac
	if [ -z "$SCRATCH" ]; then
		SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/isergw-test.XXXXXX")
	fi
	mkdir -p "$SCRATCH" || die "cannot create scratch dir $SCRATCH"
	SCRATCH=$(cd "$SCRATCH" && pwd)
	tsan_scan_start "$SCRATCH"
}

# The LUN number of the disk on the target under test.
target_lun() { if [ "$TARGET_KIND" = tgt ]; then echo 1; else echo 0; fi; }

# port_open ADDR PORT: true when something accepts TCP connections there.
port_open() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# wait_port PID ADDR PORT [SECONDS]: poll until the portal accepts, the
# daemon dies (fail) or the time runs out (fail).
wait_port() {
	local pid=$1 addr=$2 port=$3 limit=${4:-$READY_TIMEOUT}
	local deadline=$((SECONDS + limit))
	while [ "$SECONDS" -lt "$deadline" ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			log "daemon (pid $pid) exited before $addr:$port accepted connections"
			return 1
		fi
		if port_open "$addr" "$port"; then
			return 0
		fi
		sleep 0.1
	done
	log "timeout: $addr:$port not accepting after ${limit}s"
	return 1
}

# Sanitizer reports in a daemon log (the ASan and TSan trees).
SANITIZER_RE='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: (Address|Undefined|Leak)|WARNING: ThreadSanitizer|SUMMARY: ThreadSanitizer'
sanitizer_report() {
	[ -f "$1" ] && grep -E -m5 "$SANITIZER_RE" "$1"
}

# shellcheck source=tests/common/tsan_scan.sh
. "$(dirname "${BASH_SOURCE[0]}")/../common/tsan_scan.sh"
# the exit trap's scan reports on the script's own stderr (the trap has none)
exec {_LIB_STDERR}>&2

# target_start NAME IQN FILE SIZE PORT ADDR... [-- EXTRA-ISERGWD-ARGS...]
# Starts the target under test serving FILE (created sparse with SIZE when
# missing; SIZE like 256M) as its disk on every ADDR:PORT. Sets, per NAME:
# the globals T_PID, T_LOG and T_LUN of the target just started.
# Extra args go to isergwd only (tgt mode ignores them, callers check kind).
target_start() {
	local name=$1 iqn=$2 file=$3 size=$4 port=$5
	shift 5
	local addrs=() extra=()
	while [ $# -gt 0 ]; do
		if [ "$1" = -- ]; then shift; extra=("$@"); break; fi
		addrs+=("$1"); shift
	done
	[ ${#addrs[@]} -gt 0 ] || addrs=(127.0.0.1)
	T_LOG=$SCRATCH/$name.log
	: >"$T_LOG"
	# shellcheck disable=SC2034 # used by the scripts that source this file
	T_LUN=$(target_lun)
	local a
	for a in "${addrs[@]}"; do
		if port_open "$a" "$port"; then
			die "$a:$port is already in use: another target is running there"
		fi
	done
	if [ ! -e "$file" ]; then
		truncate -s "$size" "$file" || die "cannot create $file"
	fi
	if [ "$TARGET_KIND" = isergw ]; then
		# one state dir per script: a restarted daemon finds what the
		# previous one left (durable state, a stale control socket)
		local args=() sd=$SCRATCH/state
		mkdir -p "$sd"
		for a in "${addrs[@]}"; do args+=(--portal "tcp://$a:$port"); done
		args+=(--target "$iqn" --lun "$file" --size "$size" --state-dir "$sd"
			--ctl-socket "$sd/ctl.sock" --log-level "${ISERGW_LOG_LEVEL:-info}")
		args+=("${extra[@]}")
		log "starting isergwd ${args[*]}"
		"$ISERGWD" "${args[@]}" >>"$T_LOG" 2>&1 &
		T_PID=$!
		_LIB_DAEMONS+=("$T_PID isergw")
	else
		# One tgtd per test; the control port keeps instances apart.
		local cport=$port
		log "starting tgtd on ${addrs[*]} port $port (control port $cport)"
		tgtd -f -C "$cport" --iscsi "portal=${addrs[0]}:$port" >>"$T_LOG" 2>&1 &
		T_PID=$!
		_LIB_DAEMONS+=("$T_PID tgt")
		wait_port "$T_PID" "${addrs[0]}" "$port" || { tail -n 20 "$T_LOG" >&2; return 1; }
		local ta=(tgtadm -C "$cport" --lld iscsi)
		for a in "${addrs[@]:1}"; do
			"${ta[@]}" --mode portal --op new --param "portal=$a:$port" >>"$T_LOG" 2>&1 ||
				die "tgtadm: cannot add portal $a:$port"
		done
		if ! "${ta[@]}" --mode target --op new --tid 1 -T "$iqn" >>"$T_LOG" 2>&1 ||
			! "${ta[@]}" --mode logicalunit --op new --tid 1 --lun 1 -b "$file" >>"$T_LOG" 2>&1 ||
			! "${ta[@]}" --mode target --op bind --tid 1 -I ALL >>"$T_LOG" 2>&1; then
			die "tgtadm failed, see $T_LOG"
		fi
		if [ -n "${TGT_ACL:-}" ]; then
			"${ta[@]}" --mode target --op unbind --tid 1 -I ALL >>"$T_LOG" 2>&1
			"${ta[@]}" --mode target --op bind --tid 1 --initiator-name "$TGT_ACL" >>"$T_LOG" 2>&1 ||
				die "tgtadm: cannot bind ACL $TGT_ACL"
		fi
		if [ -n "${TGT_CHAP_USER:-}" ]; then
			if ! "${ta[@]}" --mode account --op new --user "$TGT_CHAP_USER" \
				--password "$TGT_CHAP_SECRET" >>"$T_LOG" 2>&1 ||
				! "${ta[@]}" --mode account --op bind --tid 1 --user "$TGT_CHAP_USER" >>"$T_LOG" 2>&1; then
				die "tgtadm: cannot set CHAP account"
			fi
		fi
	fi
	for a in "${addrs[@]}"; do
		wait_port "$T_PID" "$a" "$port" || { tail -n 20 "$T_LOG" >&2; return 1; }
	done
	log "$TARGET_KIND target up (pid $T_PID) on ${addrs[*]}:$port, log $T_LOG"
}

# target_alive PID: the daemon has not exited.
target_alive() { kill -0 "$1" 2>/dev/null; }

# target_stop PID LOG: isergwd gets SIGTERM and must exit 0 within 30 s with
# no sanitizer report; tgtd is SIGKILLed (it ignores SIGTERM at times).
# Returns 0 on a clean stop.
target_stop() {
	local pid=$1 logf=${2:-}
	local kind rc=0 i
	kind=$(_lib_kind_of "$pid")
	_lib_forget "$pid"
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid" 2>/dev/null
		rc=$?
		log "daemon pid $pid had already exited (status $rc)"
		return 1
	fi
	if [ "$kind" = tgt ]; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 0
	fi
	kill -TERM "$pid"
	for ((i = 0; i < 300; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "isergwd (pid $pid) still running 30 s after SIGTERM: killing it"
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 1
	fi
	wait "$pid"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		log "isergwd (pid $pid) exited with status $rc after SIGTERM (expected 0)"
		[ -n "$logf" ] && tail -n 30 "$logf" >&2
		return 1
	fi
	if [ -n "$logf" ] && sanitizer_report "$logf" >&2; then
		log "sanitizer report in $logf"
		return 1
	fi
	return 0
}

# target_finish NAME PID LOG: at the end of a test, a daemon that died is
# reported (its exit status, a sanitizer report, the end of its log), one
# that runs is stopped (target_stop). Returns 0 when it ran and stopped cleanly.
target_finish() {
	local name=$1 pid=$2 logf=$3
	if ! target_alive "$pid"; then
		wait "$pid" 2>/dev/null
		log "$name (pid $pid) died (status $?); see $logf"
		sanitizer_report "$logf" >&2
		tail -n 30 "$logf" >&2
		_lib_forget "$pid"
		return 1
	fi
	target_stop "$pid" "$logf"
}

# target_kill9 PID: crash the daemon (no clean shutdown).
target_kill9() {
	_lib_forget "$1"
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

_lib_kind_of() {
	local e
	for e in "${_LIB_DAEMONS[@]}"; do
		[ "${e%% *}" = "$1" ] && { echo "${e#* }"; return; }
	done
	echo "$TARGET_KIND"
}
_lib_forget() {
	local e keep=()
	for e in "${_LIB_DAEMONS[@]}"; do
		[ "${e%% *}" = "$1" ] || keep+=("$e")
	done
	_LIB_DAEMONS=("${keep[@]}")
}

# Exit trap: kill whatever is still running (only the daemons we started).
lib_cleanup() {
	local e pid
	[ "$BASHPID" = "$_LIB_SHELL" ] || return 0
	for e in "${_LIB_DAEMONS[@]}"; do
		pid=${e%% *}
		if kill -0 "$pid" 2>/dev/null; then
			if [ "${e#* }" = tgt ]; then kill -KILL "$pid"; else kill -TERM "$pid"; fi
		fi
	done
	for e in "${_LIB_DAEMONS[@]}"; do
		pid=${e%% *}
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		{ kill -KILL "$pid"; wait "$pid"; } 2>/dev/null
	done
	_LIB_DAEMONS=()
	tsan_scan "$SCRATCH" 2>&"$_LIB_STDERR" || exit 1
}
trap "lib_cleanup 2>/dev/null" EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# tcu_summary TLOG RESULTS: reads an iscsi-test-cu verbose log; writes one
# "FAILED Suite.Test" / "SKIPPED Suite.Test" line per test to RESULTS and
# sets TCU_TOTAL, TCU_PASSED, TCU_FAILED, TCU_SKIPPED and TCU_REAL (passed
# minus skipped; CUnit counts a skipped test as passed). TCU_TOTAL is empty
# when the log has no CUnit run summary.
tcu_summary() {
	local tlog=$1 results=$2
	# CUnit's summary:  "               tests    230    230    200     30      0"
	#                    Type   Total    Ran Passed Failed Inactive
	TCU_TOTAL= TCU_PASSED=0 TCU_FAILED=0
	read -r TCU_TOTAL _ TCU_PASSED TCU_FAILED _ < <(awk '$1 == "tests" && NF >= 6 { print $2, $3, $4, $5, $6 }' "$tlog" | tail -n 1)
	# "Suite: S", "  Test: T ..." then "passed" or "FAILED"; a "[FAILED]"
	# message alone is not a failure; a skipped test prints "[SKIPPED]".
	awk '/^Suite: /{ suite = $2 }
	     /^  Test: /{ t = $0; sub(/^  Test: /, "", t); sub(/ \.\.\..*/, "", t); n++; cur = suite "." t }
	     /\[SKIPPED\]/{ if (n && !(n in sk)) { sk[n] = 1; print "SKIPPED " cur } }
	     /(^|\.\.\.)FAILED[ \t]*$/{ print "FAILED " cur }' "$tlog" >"$results"
	TCU_SKIPPED=$(grep -c '^SKIPPED ' "$results")
	TCU_REAL=$((${TCU_PASSED:-0} - TCU_SKIPPED))
	[ "$TCU_REAL" -ge 0 ] || TCU_REAL=0
}

# tcu_run TLOG TIMEOUT "PID..." ARG...: iscsi-test-cu ARG..., its output in
# TLOG, stopped after TIMEOUT s and at once when one of the daemons PID...
# is gone (libiscsi's suite spins reconnecting when its target goes away).
# Sets TCU_RC (the suite's exit status) and TCU_ELAPSED (s); returns 1 when a
# daemon died or the time ran out.
tcu_run() {
	local tlog=$1 tmo=$2 pids=$3 suite p rc=0 start=$SECONDS
	shift 3
	log "iscsi-test-cu $*"
	timeout --kill-after=10 "$tmo" iscsi-test-cu "$@" </dev/null >"$tlog" 2>&1 &
	suite=$!
	while [ "$rc" -eq 0 ] && kill -0 "$suite" 2>/dev/null; do
		for p in $pids; do
			if ! target_alive "$p"; then
				log "the target (pid $p) died during the suite: stopping iscsi-test-cu"
				kill "$suite" 2>/dev/null
				rc=1
				break
			fi
		done
		[ "$rc" -eq 0 ] && sleep 1
	done
	wait "$suite"
	TCU_RC=$?
	TCU_ELAPSED=$((SECONDS - start))
	if [ "$TCU_RC" -eq 124 ] || [ "$TCU_RC" -eq 137 ]; then
		log "iscsi-test-cu timed out after ${tmo}s"
		rc=1
	fi
	return "$rc"
}

# tcu_report NAME TLOG RESULTS ALLOW_FAIL [NOTE]: tcu_summary of the suite
# tcu_run ran, printed as "NAME: total N, passed P (real passes R), failed F,
# skipped S, T s[ (NOTE)]" with the failing tests under it. Returns 1 when the
# log has no summary or more than ALLOW_FAIL tests failed.
tcu_report() {
	local name=$1 tlog=$2 results=$3 allow=$4 note=${5:-} rc=0
	tcu_summary "$tlog" "$results"
	if [ -z "$TCU_TOTAL" ]; then
		log "no CUnit Run Summary in $tlog (suite exit status $TCU_RC); last lines:"
		tail -n 20 "$tlog" >&2
		TCU_TOTAL=0 TCU_PASSED=0 TCU_FAILED=0
		rc=1
	fi
	printf '%s: total %s, passed %s (real passes %s), failed %s, skipped %s, %s s%s\n' \
		"$name" "$TCU_TOTAL" "$TCU_PASSED" "$TCU_REAL" "$TCU_FAILED" "$TCU_SKIPPED" \
		"$TCU_ELAPSED" "${note:+ ($note)}"
	if [ "${TCU_FAILED:-0}" -gt 0 ] || grep -q '^FAILED ' "$results"; then
		echo "failing tests:"
		sed -n 's/^FAILED /  /p' "$results"
	fi
	[ "${TCU_FAILED:-0}" -le "$allow" ] || rc=1
	return "$rc"
}
