#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# NOP-In pings and dead initiators. isergwd runs from a configuration file
# with nop_interval_s 1 and nop_timeout_s 3; the raw client (badinput.c)
#   nop-answered: answers every NOP-In (ITT 0xffffffff, a TTT) with a
#                 NOP-Out echoing the TTT for 6 s: the connection stays up
#                 and a TEST UNIT READY works at the end;
#   nop-silent:   never answers: at least one NOP-In arrives, and the target
#                 closes the connection within --nop-limit (15 s) of the login.
# The daemon log must name the silent initiator and the reason, and must not
# drop the answering one for a missed ping.
#
#   nop.sh --client PATH [--daemon PATH] [--scratch DIR] [--addr A] [--port P]
#          [--nop-limit SECONDS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

CLIENT=
ADDR=127.0.0.41
PORT=13341
NOP_LIMIT=15
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--client) CLIENT=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--nop-limit) NOP_LIMIT=$2; shift 2 ;;
	-h|--help) sed -n '3,16p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ -x "${CLIENT:-/nonexistent}" ] || die "--client PATH (the badinput program) is required"
only_isergw "the nop_interval_s/nop_timeout_s configuration"

IQN=iqn.2026-11.org.isergw:nop
ANSWERING=iqn.2026-11.org.isergw:nop-answering
SILENT=iqn.2026-11.org.isergw:nop-silent
CFG=$SCRATCH/nop.json
rm -f "$SCRATCH/nop.img"
mkdir -p "$SCRATCH/state"
cat >"$CFG" <<JSON
{
  "log_level": "info",
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "nop_interval_s": 1,
  "nop_timeout_s": 3,
  "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "$IQN", "luns": [ { "path": "$SCRATCH/nop.img", "size": "64M" } ] } ]
}
JSON

fail=0
check() { # check DESCRIPTION COMMAND...: run a check, log PASS/FAIL
	local what=$1
	shift
	if "$@"; then
		log "PASS $what"
	else
		log "FAIL $what"
		fail=1
	fi
}

config_start nop "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
pid=$T_PID
dlog=$T_LOG

client() { # client INITIATOR CASE
	timeout --kill-after=5 120 "$CLIENT" --addr "$ADDR" --port "$PORT" --target "$IQN" \
		--lun 0 --initiator "$1" --nop-limit "$NOP_LIMIT" --cases "$2" </dev/null
}
check "nop-answered (client)" client "$ANSWERING" nop-answered
check "nop-silent (client)" client "$SILENT" nop-silent

# the log names the initiator and the reason:
#   PEER (INITIATOR): dropping connection: no answer to NOP-In for 3 s
check "the daemon log names $SILENT and the missed NOP-In" \
	wait_log "$dlog" "\($SILENT\): dropping connection: no answer to NOP-In" 5
check "no missed-NOP-In drop of $ANSWERING" \
	test "$(count_log "$dlog" "\($ANSWERING\): dropping connection: no answer to NOP-In")" -eq 0

if ! target_alive "$pid"; then
	wait "$pid" 2>/dev/null
	log "FAIL the daemon died (status $?); see $dlog"
	_lib_forget "$pid"
	fail=1
elif ! target_stop "$pid" "$dlog"; then
	log "FAIL unclean stop (SIGTERM must exit 0); see $dlog"
	fail=1
fi
if [ "$fail" -ne 0 ]; then
	grep -E 'dropping connection|NOP' "$dlog" >&2
	log "FAILED (logs in $SCRATCH)"
	exit 1
fi
log "all NOP checks passed"
