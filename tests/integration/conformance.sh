#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# libiscsi's conformance suite (iscsi-test-cu, all families, destructive
# tests allowed) against one target reached through two portals of the same
# target (127.0.0.1:PORT and 127.0.0.2:PORT), which enables the MultipathIO
# suite, with two initiator names for the reservation tests.
#
#   conformance.sh [--target-kind isergw|tgt] [--daemon PATH] [--scratch DIR]
#                  [--port P] [--size SIZE] [--tests FAMILY[.SUITE[.TEST]]]
#                  [--allow-fail N]
#
# Prints "conformance: total N, passed P (real passes R), failed F, skipped S"
# and the failing tests; exits 1 if more than --allow-fail tests fail (0 by
# default), if the daemon crashed, or if it does not exit 0 on SIGTERM.
# The full log is SCRATCH/iscsi-test-cu.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"

PORT=3301
SIZE=256M
TESTS=ALL
ALLOW_FAIL=0
SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--port) PORT=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--tests) TESTS=$2; shift 2 ;;
	--allow-fail) ALLOW_FAIL=$2; shift 2 ;;
	-h|--help) sed -n '3,18p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
command -v iscsi-test-cu >/dev/null || die "iscsi-test-cu not found (apt-get install libiscsi-bin)"

IQN=iqn.2026-11.org.isergw:conformance
INIT1=iqn.2026-11.org.isergw:init1
INIT2=iqn.2026-11.org.isergw:init2
DISK=$SCRATCH/conformance.img
TLOG=$SCRATCH/iscsi-test-cu.log
rm -f "$DISK" "$TLOG"

target_start conformance "$IQN" "$DISK" "$SIZE" "$PORT" 127.0.0.1 127.0.0.2 ||
	die "target did not start"
pid=$T_PID
dlog=$T_LOG
lun=$T_LUN

url1=iscsi://127.0.0.1:$PORT/$IQN/$lun
url2=iscsi://127.0.0.2:$PORT/$IQN/$lun
log "iscsi-test-cu --dataloss -i $INIT1 -I $INIT2 -t $TESTS $url1 $url2"
start=$SECONDS
timeout --kill-after=10 "$SUITE_TIMEOUT" \
	iscsi-test-cu --dataloss -i "$INIT1" -I "$INIT2" -t "$TESTS" "$url1" "$url2" \
	</dev/null >"$TLOG" 2>&1 &
suite=$!
# Watchdog: libiscsi's suite spins forever reconnecting when the target goes
# away, so stop it as soon as the daemon is gone.
fail=0
while kill -0 "$suite" 2>/dev/null; do
	if ! target_alive "$pid"; then
		log "the target (pid $pid) died during the suite: stopping iscsi-test-cu"
		kill "$suite" 2>/dev/null
		fail=1
		break
	fi
	sleep 1
done
wait "$suite"
suite_rc=$?
elapsed=$((SECONDS - start))

if [ "$suite_rc" -eq 124 ] || [ "$suite_rc" -eq 137 ]; then
	log "iscsi-test-cu timed out after ${SUITE_TIMEOUT}s"
	fail=1
fi

# CUnit's summary:  "               tests    230    230    200     30      0"
#                    Type   Total    Ran Passed Failed Inactive
read -r total _ran passed failed _ < <(awk '$1 == "tests" && NF >= 6 { print $2, $3, $4, $5, $6 }' "$TLOG" | tail -n 1)
if [ -z "${total:-}" ]; then
	log "no CUnit Run Summary in $TLOG (suite exit status $suite_rc); last lines:"
	tail -n 20 "$TLOG" >&2
	total=0 passed=0 failed=0
	fail=1
fi
# Per test: CUnit verbose mode prints "Suite: S", "  Test: T ..." and ends
# each test with "passed" or "FAILED" (possibly after the test's own
# messages). A "[FAILED]" message alone is not a failure (teardown noise). A
# skipped test prints "[SKIPPED]" and counts as passed in CUnit's summary.
awk '/^Suite: /{ suite = $2 }
     /^  Test: /{ t = $0; sub(/^  Test: /, "", t); sub(/ \.\.\..*/, "", t); n++; cur = suite "." t }
     /\[SKIPPED\]/{ if (n && !(n in sk)) { sk[n] = 1; print "SKIPPED " cur } }
     /(^|\.\.\.)FAILED[ \t]*$/{ print "FAILED " cur }' "$TLOG" >"$SCRATCH/results.txt"
skipped=$(grep -c '^SKIPPED ' "$SCRATCH/results.txt")
real=$((passed - skipped))
[ "$real" -ge 0 ] || real=0
printf 'conformance: total %s, passed %s (real passes %s), failed %s, skipped %s, %s s (%s)\n' \
	"$total" "$passed" "$real" "$failed" "$skipped" "$elapsed" "$TARGET_KIND"
if [ "${failed:-0}" -gt 0 ] || grep -q '^FAILED ' "$SCRATCH/results.txt"; then
	echo "failing tests:"
	sed -n 's/^FAILED /  /p' "$SCRATCH/results.txt"
fi
if [ "${failed:-0}" -gt "$ALLOW_FAIL" ]; then
	fail=1
fi

if ! target_alive "$pid"; then
	wait "$pid" 2>/dev/null
	log "the target (pid $pid) died during the suite (status $?); see $dlog"
	sanitizer_report "$dlog" >&2
	tail -n 30 "$dlog" >&2
	fail=1
	_lib_forget "$pid"
elif ! target_stop "$pid" "$dlog"; then
	fail=1
fi
log "full suite log: $TLOG, target log: $dlog"
exit "$fail"
