#!/usr/bin/env bash
# shellcheck disable=SC2015 # pass() never fails: A && pass || bad is an if-else
# SPDX-License-Identifier: Apache-2.0
#
# A LUN grown online by a reload (docs/configuration.md, LUNs: size):
#
#   1. target G, LUN 0 on a 4 MiB file, LUN 1 on another; grow_probe logs
#      in to LUN 0 and reads its capacity (8192 blocks);
#   2. the file's size becomes 8M, SIGHUP: the file is extended to 8 MiB
#      (sparse), LUN 1 is not touched; on the same session (no reconnection)
#      the next command gets the unit attention CAPACITY DATA HAS CHANGED
#      (6/2A/09), READ CAPACITY(16) says 16384 blocks and the new last block
#      is written and read back;
#   3. a smaller size (2M), SIGHUP: nothing shrinks (the file stays 8 MiB,
#      iscsi-readcapacity16 still says 16384 blocks);
#   4. SIGTERM: exit 0.
#
#   grow.sh --probe PATH [--daemon PATH] [--scratch DIR] [--addr A] [--port P]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

ADDR=127.0.0.46
PORT=13346
PROBE=''
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--port) PORT=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--probe) PROBE=$2; shift 2 ;;
	-h|--help) sed -n '3,17p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
only_isergw "growing a LUN online"
[ -x "$PROBE" ] || die "--probe PATH (grow_probe) required"

G=iqn.2026-11.org.isergw:grow
CFG=$SCRATCH/grow.json
rm -f "$SCRATCH"/*.img
mkdir -p "$SCRATCH/state"
fail=0
pass() { log "ok: $*"; }
bad() { log "FAILED: $*"; fail=1; }

PROBE_PID=''
rm -f "$SCRATCH/go"
trap '[ -n "$PROBE_PID" ] && kill "$PROBE_PID" 2>/dev/null; lib_cleanup 2>/dev/null' EXIT

# write_config SIZE0: rewritten atomically (rename)
write_config() {
	cat >"$CFG.tmp" <<JSON
{
  "log_level": "info",
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "$G", "luns": [
    { "lun": 0, "path": "$SCRATCH/g0.img", "size": "$1" },
    { "lun": 1, "path": "$SCRATCH/g1.img", "size": "4M" } ] } ]
}
JSON
	mv "$CFG.tmp" "$CFG"
}

# hup ERE: SIGHUP and wait for a new log line matching ERE
hup() {
	local before
	before=$(count_log "$T_LOG" 'configuration reloaded')
	kill -HUP "$T_PID"
	local deadline=$((SECONDS + 10))
	while [ "$SECONDS" -lt "$deadline" ]; do
		[ "$(count_log "$T_LOG" 'configuration reloaded')" -gt "$before" ] && break
		sleep 0.1
	done
	[ "$(count_log "$T_LOG" 'configuration reloaded')" -gt "$before" ]
}

# ---- 1.
write_config 4M
config_start grow "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
mkfifo "$SCRATCH/go" || die "cannot make a fifo"
# emptied here, not by the redirection below: that runs in the background
# child, and the wait could first read the "ready" of an earlier run
: >"$SCRATCH/probe.out"
: >"$SCRATCH/probe.err"
# read-write: opening the fifo does not wait for a writer
"$PROBE" "iscsi://$ADDR:$PORT/$G/0" <>"$SCRATCH/go" >>"$SCRATCH/probe.out" 2>>"$SCRATCH/probe.err" &
PROBE_PID=$!
wait_log "$SCRATCH/probe.out" '^ready$' 20 || die "grow_probe did not log in: $(cat "$SCRATCH/probe.err")"
[ "$(head -n 1 "$SCRATCH/probe.out")" = "capacity 8192" ] && pass "LUN 0 starts at 8192 blocks" ||
	bad "grow_probe said '$(head -n 1 "$SCRATCH/probe.out")' (want 'capacity 8192')"
g1_before=$(stat -c %s "$SCRATCH/g1.img")

# ---- 2.
write_config 8M
hup || bad "no 'configuration reloaded' after SIGHUP"
grep -q "LUN 0 grown to 8388608 bytes" "$T_LOG" && pass "the reload grew LUN 0" ||
	bad "no 'LUN 0 grown' log line"
[ "$(stat -c %s "$SCRATCH/g0.img")" = 8388608 ] && pass "the file is 8 MiB" ||
	bad "the file is $(stat -c %s "$SCRATCH/g0.img") bytes"
[ "$(stat -c %s "$SCRATCH/g1.img")" = "$g1_before" ] || bad "LUN 1's file changed"
grep -q "LUN 1 grown" "$T_LOG" && bad "LUN 1 was grown"
echo go >"$SCRATCH/go"
wait "$PROBE_PID"
rc=$?
PROBE_PID=''
mapfile -t out < <(tail -n +3 "$SCRATCH/probe.out")
log "grow_probe: ${out[*]} (exit $rc)"
[ "$rc" = 0 ] || bad "grow_probe failed (exit $rc): $(cat "$SCRATCH/probe.err")"
[ "${out[0]:-}" = "ua 06/2a/09" ] && pass "the next command got CAPACITY DATA HAS CHANGED" ||
	bad "the next command got '${out[0]:-}' (want ua 06/2a/09)"
[ "${out[1]:-}" = "capacity 16384" ] && pass "READ CAPACITY says 16384 blocks" ||
	bad "READ CAPACITY: '${out[1]:-}'"
[ "${out[2]:-}" = "last block ok" ] && pass "the new last block is written and read" ||
	bad "the new last block: '${out[2]:-}'"
[ "${out[3]:-}" = "session kept" ] && pass "the session was not dropped" ||
	bad "the session: '${out[3]:-}'"
grep -q "dropped\|removed" "$T_LOG" && bad "the reload dropped or removed something: $(grep "dropped\|removed" "$T_LOG" | head -n 3)"

# ---- 3.
write_config 2M
hup || bad "no 'configuration reloaded' after the second SIGHUP"
[ "$(stat -c %s "$SCRATCH/g0.img")" = 8388608 ] && pass "a smaller size shrinks nothing" ||
	bad "the file is $(stat -c %s "$SCRATCH/g0.img") bytes after a smaller size"
if command -v iscsi-readcapacity16 >/dev/null; then
	cap=$(iscsi-readcapacity16 -s "iscsi://$ADDR:$PORT/$G/0" 2>&1)
	[ "$cap" = 8388608 ] && pass "READ CAPACITY still says 8 MiB" ||
		bad "READ CAPACITY after a smaller size: '$cap'"
fi

# ---- 4.
if target_finish isergwd "$T_PID" "$T_LOG"; then
	pass "SIGTERM: exit 0"
else
	bad "unclean stop; see $T_LOG"
fi
if [ "$fail" -ne 0 ]; then
	log "FAILED (logs in $SCRATCH)"
	exit 1
fi
log "all grow checks passed"
