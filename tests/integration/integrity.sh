#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Data integrity across a target restart.
#
#   integrity.sh --client PATH [--target-kind isergw|tgt] [--daemon PATH]
#                [--scratch DIR] [--port P] [--addr A] [--mode restart|kill9]
#                [--region-mib N] [--seed N]
#
# restart: the client writes a seeded pattern (mixed sizes, some FUA), reads
#          it back and compares; the target is stopped with SIGTERM (it must
#          exit 0), started again on the same file, and the client verifies
#          the pattern again.
# kill9:   the client writes, then SYNCHRONIZE CACHE; once that returned GOOD
#          the target is killed with SIGKILL, restarted, and everything
#          written before the sync must read back intact.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"

CLIENT=
PORT=3311
ADDR=127.0.0.3
MODE=restart
REGION=64
SEED=
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-600}
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--client) CLIENT=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--mode) MODE=$2; shift 2 ;;
	--region-mib) REGION=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	-h|--help) sed -n '3,17p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ -x "${CLIENT:-/nonexistent}" ] || die "--client PATH (the integrity program) is required"
case "$MODE" in restart|kill9) ;; *) die "--mode restart|kill9" ;; esac
# A fresh seed per run unless given; printed so a failure can be replayed.
[ -n "$SEED" ] || SEED=$(( (RANDOM << 15 | RANDOM) + 1 ))

IQN=iqn.2026-11.org.isergw:integrity
DISK=$SCRATCH/integrity-$MODE.img
rm -f "$DISK"
SIZE=$((REGION * 2))M

client() {
	timeout --kill-after=10 "$CLIENT_TIMEOUT" "$CLIENT" --url "iscsi://$ADDR:$PORT/$IQN/$(target_lun)" \
		--seed "$SEED" --region-mib "$REGION" --offset-mib "$((REGION / 2))" "$@" </dev/null
}

log "mode $MODE, seed $SEED, region $REGION MiB, target $TARGET_KIND"
target_start "first" "$IQN" "$DISK" "$SIZE" "$PORT" "$ADDR" || die "target did not start"
pid=$T_PID
dlog=$T_LOG

if [ "$MODE" = restart ]; then
	client --mode write || die "write pass failed (seed $SEED)"
	target_alive "$pid" || die "target died during the write pass; see $dlog"
	log "stopping the target with SIGTERM"
	target_stop "$pid" "$dlog" || die "target did not stop cleanly"
else
	out=$(client --mode write --sync) || { printf '%s\n' "$out"; die "write+sync pass failed (seed $SEED)"; }
	printf '%s\n' "$out"
	grep -qx synced <<<"$out" || die "client did not report SYNCHRONIZE CACHE GOOD"
	target_alive "$pid" || die "target died during the write pass; see $dlog"
	log "SYNCHRONIZE CACHE returned GOOD: killing the target with SIGKILL"
	target_kill9 "$pid"
fi

target_start "second" "$IQN" "$DISK" "$SIZE" "$PORT" "$ADDR" || die "target did not restart on the same file"
pid=$T_PID
dlog=$T_LOG
client --mode verify || die "verify pass after $MODE failed (seed $SEED)"
target_alive "$pid" || die "target died during the verify pass; see $dlog"
target_stop "$pid" "$dlog" || die "target did not stop cleanly"
log "PASS ($MODE, seed $SEED)"
