#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# SAM-5 task attributes and zero-length Data-Out over raw TCP
# (tests/integration/badinput.c, the attr-* and dataout-zero-* cases):
# ORDERED, SIMPLE, HEAD OF QUEUE and ACA commands several at a time in one
# TCP write, with held tasks aborted by TMFs or left by a Logout or a
# dropped connection; a WRITE whose Data-Out (solicited or unsolicited)
# carries no data before the block. isergwd runs one reactor, so every
# new login lands on the reactor those tasks were held on: a spinning or
# stuck reactor fails the next case (each PDU is awaited 5 s at most) and
# SIGTERM must still stop the daemon (target_stop: exit 0 within 30 s, no
# sanitizer report: the ASan tree runs this too).
#
#   taskattr.sh --client PATH --daemon PATH [--scratch DIR] [--addr A] [--port P]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"

CLIENT=
ADDR=127.0.0.140
PORT=13620
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--client) CLIENT=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	-h|--help) sed -n '3,15p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ -x "${CLIENT:-/nonexistent}" ] || die "--client PATH (the badinput program) is required"
[ "$TARGET_KIND" = isergw ] || { log "isergwd only (--reactors 1)"; exit 77; }

IQN=iqn.2026-11.org.isergw:taskattr
CASES=attr-ordered,attr-mix,attr-abort,attr-reset,attr-logout,attr-drop,bidi-out-of-order
CASES=$CASES,dataout-zero-solicited,dataout-zero-unsolicited,dataout-zero-final
CASES=$CASES,dataout-zero-unsol-final,final-login
fail=0

rm -f "$SCRATCH/taskattr.img"
target_start taskattr "$IQN" "$SCRATCH/taskattr.img" 64M "$PORT" "$ADDR" -- --reactors 1 ||
	die "target did not start"
pid=$T_PID dlog=$T_LOG
log "badinput --cases $CASES"
if ! timeout --kill-after=5 300 "$CLIENT" --addr "$ADDR" --port "$PORT" --target "$IQN" \
	--lun "$(target_lun)" --cases "$CASES" </dev/null; then
	fail=1
fi
if ! target_finish isergwd "$pid" "$dlog"; then
	log "FAIL: isergwd did not stop cleanly on SIGTERM"
	fail=1
fi
if [ "$fail" -ne 0 ]; then
	log "FAILED (logs in $SCRATCH)"
	exit 1
fi
log "task attributes and zero-length Data-Out: all cases passed"
