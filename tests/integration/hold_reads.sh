#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# An initiator that sends READs and never reads its socket. One session sends
# 120 READ(16)s of 16 MiB each (a 2 GiB sparse LUN, queue depth 128) and stops
# reading. isergwd must not read them all into memory: a connection's task
# buffers hold at most 64 MiB (gateway/dm/tcp.c, TCP_BUF_LIMIT), the rest of
# the commands wait for buffers. Its resident memory may grow by at most
# 256 MiB (it grew by 1.9 GB before the limit); another initiator logs in and
# reads meanwhile (iscsi-inq, iscsi-readcapacity16); SIGTERM stops the daemon
# with exit 0 while the stuck session still holds its data.
#
#   hold_reads.sh [--daemon PATH] [--scratch DIR] [--addr A] [--port P]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

ADDR=127.0.0.177
PORT=13695
IQN=iqn.2026-11.org.isergw:hold
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	-h|--help) sed -n '4,14p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ "$TARGET_KIND" = isergw ] || { log "isergwd only: skipped for $TARGET_KIND"; exit 77; }
[ -x "$ISERGWD" ] || die "--daemon PATH (isergwd) required"
[ -n "$SCRATCH" ] || die "--scratch DIR required"
command -v iscsi-inq >/dev/null || die "iscsi-inq (libiscsi-bin) is needed"
mkdir -p "$SCRATCH/state"
rm -f "$SCRATCH"/*.img "$SCRATCH"/*.log "$SCRATCH/stuck.ready"
CFG=$SCRATCH/isergwd.json
cat >"$CFG" <<JSON
{
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "reactors": 2,
  "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "$IQN", "luns": [ { "lun": 0, "path": "$SCRATCH/big.img", "size": "2G" } ] } ]
}
JSON
chmod 600 "$CFG"
config_start hold "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
fail=0
ok() { log "ok: $*"; }
bad() { log "FAILED: $*"; fail=1; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$T_PID/status"; }
before=$(rss_kb)
# the stuck initiator: logs in, sends the READs, holds the socket without reading
FUZZDIR="$here/../fuzz" python3 - "$ADDR" "$PORT" "$IQN" "$SCRATCH/stuck.ready" <<'PY' &
import os, socket, struct, sys, time
sys.path.insert(0, os.environ["FUZZDIR"])
import live_pdu as lp
lp.TARGET = sys.argv[3]
c, why = lp.connect_login(sys.argv[1], int(sys.argv[2]), 0, 0, 1, 10)
if not c:
    sys.exit("login: " + why)
s = c.s
s.setblocking(True)
out = b""
for i in range(120):
    # READ(16) of 32768 blocks of 512 bytes (16 MiB), ExpCmdSN from 1
    cdb = struct.pack(">BBQIBB", 0x88, 0, (i * 32768) % (4 << 20), 32768, 0, 0)
    out += struct.pack(">BBHI8sIIII16s", 0x01, 0xC1, 0, 0, bytes(8), i + 1, 16 << 20, 1 + i, 0, cdb)
s.sendall(out)
open(sys.argv[4], "w").close()
time.sleep(600)
PY
STUCK=$!
_LIB_DAEMONS+=("$STUCK isergw")
for _ in $(seq 100); do [ -e "$SCRATCH/stuck.ready" ] && break; sleep 0.1; done
[ -e "$SCRATCH/stuck.ready" ] || bad "the stuck initiator did not send its READs"
# the daemon reads what it may (the limit) and stops there: wait until it settles
prev=0
for _ in $(seq 40); do
	sleep 0.5
	now=$(rss_kb)
	[ "$now" = "$prev" ] && break
	prev=$now
done
grown=$(( ($(rss_kb) - before) / 1024 ))
if [ "$grown" -le 256 ]; then
	ok "120 READs of 16 MiB never read: isergwd grew by $grown MiB"
else
	bad "120 READs of 16 MiB never read: isergwd grew by $grown MiB (at most 256)"
fi
if timeout 20 iscsi-inq "iscsi://$ADDR:$PORT/$IQN/0" >/dev/null 2>&1 &&
	timeout 20 iscsi-readcapacity16 "iscsi://$ADDR:$PORT/$IQN/0" >/dev/null 2>&1; then
	ok "another initiator is served meanwhile"
else
	bad "another initiator is not served"
fi
target_stop "$T_PID" "$T_LOG" || bad "isergwd did not stop cleanly on SIGTERM"
kill "$STUCK" 2>/dev/null
wait "$STUCK" 2>/dev/null
if sanitizer_report "$T_LOG"; then bad "a sanitizer report in $T_LOG"; fi
[ "$fail" = 0 ] || { log "FAILED (log in $T_LOG)"; exit 1; }
log PASS
