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
# a watchdog stops the suite as soon as the daemon is gone
fail=0
tcu_run "$TLOG" "$SUITE_TIMEOUT" "$pid" --dataloss -i "$INIT1" -I "$INIT2" -t "$TESTS" \
	"$url1" "$url2" || fail=1
tcu_report conformance "$TLOG" "$SCRATCH/results.txt" "$ALLOW_FAIL" "$TARGET_KIND" || fail=1

target_finish "the target" "$pid" "$dlog" || fail=1
log "full suite log: $TLOG, target log: $dlog"
exit "$fail"
