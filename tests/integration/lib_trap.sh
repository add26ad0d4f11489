#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# lib.sh's exit trap stops the daemons of the script that sourced it, and only
# that script's own exit does: a subshell killed in its first moments (the
# watchdog "( sleep 10; kill -KILL PID ) &" a script kills once it is no longer
# needed) inherits the traps until bash resets them, and used to run lib_cleanup
# and stop every daemon still under test (api.abuse lost its isergw-api so,
# now and then, under load).
#
#   lib_trap.sh [--scratch DIR] [--rounds N]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SCRATCH=${TMPDIR:-/tmp}/isergw-lib-trap.$$
ROUNDS=100
while [ $# -gt 0 ]; do
	case "$1" in
	--scratch) SCRATCH=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	-h|--help) sed -n '4,11p' "$0"; exit 0 ;;
	*) echo "lib_trap.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$SCRATCH"
# the script under test: a tracked daemon (sleep), then watchdogs killed at once
cat >"$SCRATCH/inner.sh" <<INNER
. "$here/lib.sh"
SCRATCH="$SCRATCH"
sleep 1000 &
V=\$!
_LIB_DAEMONS+=("\$V isergw")
echo "\$V" >"$SCRATCH/victim.pid"
for i in \$(seq $ROUNDS); do
	# the watchdog's own work is harmless here: a TERM that reaches it while
	# it still has the inherited trap waits (bash) until sleep ends, and then
	# it would do that work; only the exit trap's cleanup is under test
	( sleep 2; true ) >/dev/null 2>&1 &
	k=\$!
	kill "\$k" 2>/dev/null
	wait "\$k" 2>/dev/null
	if ! kill -0 "\$V" 2>/dev/null; then
		echo "the daemon was stopped when watchdog \$i was killed"
		exit 1
	fi
done
echo "the daemon outlived $ROUNDS watchdogs killed at once"
INNER
rm -f "$SCRATCH/victim.pid"
out=$(bash "$SCRATCH/inner.sh" 2>&1)
rc=$?
echo "lib_trap.sh: $out"
v=$(cat "$SCRATCH/victim.pid" 2>/dev/null)
fail=0
[ "$rc" = 0 ] || fail=1
# and the script's own exit still stops it
if [ -n "$v" ] && kill -0 "$v" 2>/dev/null; then
	echo "lib_trap.sh: FAILED: the daemon (pid $v) still runs after the script exited"
	kill -KILL "$v" 2>/dev/null
	fail=1
else
	echo "lib_trap.sh: the script's exit stopped its daemon"
fi
rm -rf "$SCRATCH"
[ "$fail" = 0 ] && echo "lib_trap.sh: PASS" || echo "lib_trap.sh: FAILED"
exit "$fail"
