#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# CRC32C digests over a real exchange, then hostile and malformed input
# (tests/integration/badinput.c) against the target, in three target
# set-ups: plain (no auth, also the digest cases), CHAP, and an initiator
# ACL. After each, the target must still be alive and (isergwd) exit 0 on
# SIGTERM.
#
#   badinput.sh --client PATH [--target-kind isergw|tgt] [--daemon PATH]
#               [--scratch DIR] [--port P] [--addr A] [--cases LIST]
#               [--stall-limit SECONDS]
#
# Ports P, P+1, P+2 on ADDR. The stalled-login case waits for the target's
# login timeout (isergwd is started with --login-timeout 3) up to
# --stall-limit (30 s).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"

CLIENT=
PORT=3321
ADDR=127.0.0.4
CASES=
STALL=30
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--client) CLIENT=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--cases) CASES=$2; shift 2 ;;
	--stall-limit) STALL=$2; shift 2 ;;
	-h|--help) sed -n '3,14p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ -x "${CLIENT:-/nonexistent}" ] || die "--client PATH (the badinput program) is required"

IQN=iqn.2026-11.org.isergw:badinput
INIT=iqn.2026-11.org.isergw:badinput
ALLOWED=iqn.2026-11.org.isergw:allowed
CHAP_USER=gwuser
CHAP_SECRET=secret-of-16-chars
fail=0

# run_setup NAME PORT CASES [-- ISERGWD-ARGS...]
run_setup() {
	local name=$1 port=$2 cases=$3
	shift 3
	[ "${1:-}" = -- ] && shift
	local extra=("$@") cargs=()
	rm -f "$SCRATCH/$name.img"
	target_start "$name" "$IQN" "$SCRATCH/$name.img" 64M "$port" "$ADDR" -- "${extra[@]}" ||
		{ log "FAIL $name: target did not start"; fail=1; return; }
	local pid=$T_PID dlog=$T_LOG
	[ -n "$cases" ] && cargs+=(--cases "$cases")
	[ "$name" = chap ] && cargs+=(--chap-user "$CHAP_USER" --chap-secret "$CHAP_SECRET")
	[ "$name" = acl ] && cargs+=(--acl-allowed "$ALLOWED")
	log "== $name: badinput ${cargs[*]}"
	if ! timeout --kill-after=5 600 "$CLIENT" --addr "$ADDR" --port "$port" --target "$IQN" \
		--lun "$(target_lun)" --initiator "$INIT" --stall-limit "$STALL" "${cargs[@]}" </dev/null; then
		fail=1
	fi
	if ! target_alive "$pid"; then
		wait "$pid" 2>/dev/null
		log "FAIL $name: the target died (status $?); see $dlog"
		tail -n 30 "$dlog" >&2
		_lib_forget "$pid"
		fail=1
	elif ! target_stop "$pid" "$dlog"; then
		log "FAIL $name: unclean stop"
		fail=1
	fi
}

if [ -n "$CASES" ]; then
	plain=$CASES
else
	plain=$("$CLIENT" --list | awk 'NF == 1' | paste -sd,)
fi
# a short login timeout so the stalled login is closed quickly
run_setup plain "$PORT" "$plain" -- --login-timeout 3
if [ -z "$CASES" ] || [[ ",$CASES," == *,chap-wrong-secret,* ]]; then
	TGT_CHAP_USER=$CHAP_USER TGT_CHAP_SECRET=$CHAP_SECRET \
		run_setup chap "$((PORT + 1))" chap-wrong-secret,final-login -- \
		--chap-user "$CHAP_USER" --chap-secret "$CHAP_SECRET"
fi
if [ -z "$CASES" ] || [[ ",$CASES," == *,acl-forbidden,* ]]; then
	# the final login of the ACL set-up must use the allowed name
	TGT_ACL=$ALLOWED INIT=$ALLOWED run_setup acl "$((PORT + 2))" acl-forbidden,final-login -- --acl "$ALLOWED"
fi
if [ "$fail" -ne 0 ]; then
	log "FAILED (logs in $SCRATCH)"
	exit 1
fi
log "all badinput cases passed"
