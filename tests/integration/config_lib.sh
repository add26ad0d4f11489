# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Helpers for the integration scripts that run isergwd from a JSON
# configuration file (--config) rather than the quick-serve options of
# lib.sh's target_start. Source lib.sh first.

# only_isergw WHAT: these scripts test isergwd's configuration file, which
# tgt has no equivalent of; exit 77 (ctest SKIP_RETURN_CODE) under tgt.
only_isergw() {
	if [ "$TARGET_KIND" != isergw ]; then
		log "SKIP: $1 is specific to isergwd (--target-kind $TARGET_KIND)"
		exit 77
	fi
}

# config_start NAME CONFIG ADDR:PORT...: start isergwd --config CONFIG, its
# output in $SCRATCH/NAME.log, and wait until every ADDR:PORT accepts
# connections. Sets T_PID and T_LOG; the daemon is stopped by lib.sh's trap.
# CONFIG_RUN_AS: words put before the command (setpriv ... --), if any.
CONFIG_RUN_AS=()
config_start() {
	local name=$1 config=$2 ap
	shift 2
	T_LOG=$SCRATCH/$name.log
	: >"$T_LOG"
	for ap in "$@"; do
		if port_open "${ap%:*}" "${ap##*:}"; then
			die "$ap is already in use: another target is running there"
		fi
	done
	log "starting isergwd --config $config"
	"${CONFIG_RUN_AS[@]}" "$ISERGWD" --config "$config" >>"$T_LOG" 2>&1 &
	T_PID=$!
	_LIB_DAEMONS+=("$T_PID isergw")
	for ap in "$@"; do
		wait_port "$T_PID" "${ap%:*}" "${ap##*:}" || { tail -n 20 "$T_LOG" >&2; return 1; }
	done
	log "isergwd up (pid $T_PID) on $*, log $T_LOG"
}

# wait_log FILE ERE SECONDS: poll until a line of FILE matches ERE.
wait_log() {
	local file=$1 re=$2 limit=$3
	local deadline=$((SECONDS + limit))
	while [ "$SECONDS" -lt "$deadline" ]; do
		grep -Eq -- "$re" "$file" 2>/dev/null && return 0
		sleep 0.1
	done
	grep -Eq -- "$re" "$file" 2>/dev/null
}

# count_log FILE ERE: how many lines of FILE match ERE.
count_log() {
	local n
	n=$(grep -Ec -- "$2" "$1" 2>/dev/null) || true
	echo "${n:-0}"
}
