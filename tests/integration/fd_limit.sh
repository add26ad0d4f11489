#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# isergwd out of file descriptors. It runs with a limit of 64 (ulimit -n);
# a client opens 100 connections to its portal and holds them 3 s, so that
# accept() fails with EMFILE while the rest wait in the backlog. The daemon
# must not spin on its listening socket (it used to call accept() again at
# once, for ever, writing a warn line each time: a million lines in 3 s): the
# log says so once, at warn, with what to do; the same for its control socket,
# where an isergwctl status sent meanwhile waits and is answered once the
# client lets go. Then the backlog empties (a notice says after how long), a
# new initiator logs in (iscsi-ls), and SIGTERM stops it with exit 0.
#
#   fd_limit.sh --ctl PATH [--daemon PATH] [--scratch DIR] [--addr A] [--port P]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"

ADDR=127.0.0.176
PORT=13694
CTL=
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--ctl) CTL=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	-h|--help) sed -n '4,15p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ "$TARGET_KIND" = isergw ] || { log "isergwd only: skipped for $TARGET_KIND"; exit 77; }
[ -x "$ISERGWD" ] || die "--daemon PATH (isergwd) required"
[ -x "$CTL" ] || die "--ctl PATH (isergwctl) required"
command -v iscsi-ls >/dev/null || die "iscsi-ls (libiscsi-bin) is needed"
[ -n "$SCRATCH" ] || die "--scratch DIR required"
mkdir -p "$SCRATCH/state"
rm -f "$SCRATCH"/*.log "$SCRATCH"/*.img
port_open "$ADDR" "$PORT" && die "$ADDR:$PORT is already in use"
CFG=$SCRATCH/isergwd.json
cat >"$CFG" <<JSON
{
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "reactors": 2,
  "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "iqn.2026-11.org.isergw:fdlimit",
                 "luns": [ { "lun": 0, "path": "$SCRATCH/l0.img", "size": "1M" } ] } ]
}
JSON
chmod 600 "$CFG"
T_LOG=$SCRATCH/isergwd.log
(ulimit -n 64 && exec "$ISERGWD" --config "$CFG") >"$T_LOG" 2>&1 &
T_PID=$!
_LIB_DAEMONS+=("$T_PID isergw")
wait_port "$T_PID" "$ADDR" "$PORT" || { tail -n 20 "$T_LOG" >&2; die "isergwd did not start"; }
fail=0
ok() { log "ok: $*"; }
bad() { log "FAILED: $*"; fail=1; }

rm -f "$SCRATCH/held"
python3 - "$ADDR" "$PORT" "$SCRATCH/held" <<'PY' &
import socket, sys, time
held = []
for _ in range(100):
    held.append(socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5))
open(sys.argv[3], "w").close()
time.sleep(3)
for s in held:
    s.close()
PY
client=$!
for _ in $(seq 100); do [ -e "$SCRATCH/held" ] && break; sleep 0.1; done
[ -e "$SCRATCH/held" ] || bad "the client could not open its connections"
# the control socket is out of descriptors too: its client waits, then is answered
timeout 30 "$CTL" --socket "$SCRATCH/state/ctl.sock" status >"$SCRATCH/status.out" 2>&1 &
status=$!
wait "$client" || bad "the client failed"
kill -0 "$T_PID" 2>/dev/null || bad "isergwd died"
if wait "$status"; then
	ok "isergwctl status, sent while out of descriptors, is answered once they are free"
else
	bad "isergwctl status sent while out of descriptors: $(tail -n 1 "$SCRATCH/status.out")"
fi
n=$(grep -c 'accept on .*ctl.sock: Too many open files' "$T_LOG")
if [ "$n" -le 1 ] && grep -q "notice reactor: accept on .*ctl.sock: the backlog is empty again" "$T_LOG"
then
	ok "the control socket: $n warning, then $(grep -m1 -o 'the backlog is empty again.*' "$T_LOG")"
else
	bad "the control socket: $n warnings about accept, $(grep -c 'ctl.sock: the backlog' "$T_LOG") lines saying it is over"
fi
n=$(grep -c 'accept on tcp://.*Too many open files' "$T_LOG")
if grep -q "warn   reactor: accept on tcp://$ADDR:$PORT: Too many open files: new connections wait" "$T_LOG" &&
	[ "$n" -le 2 ]; then
	ok "out of descriptors: $n lines about the portal's accept ($(grep -m1 'Too many open files' "$T_LOG" | cut -c26-))"
else
	bad "out of descriptors: $n lines about accept (want the warning once), $(wc -l <"$T_LOG") lines in all"
fi
empty="notice reactor: accept on tcp://$ADDR:$PORT: the backlog is empty again after"
for _ in $(seq 50); do grep -q "$empty" "$T_LOG" && break; sleep 0.1; done
grep -q "$empty" "$T_LOG" && ok "$(grep -m1 "$empty" "$T_LOG" | cut -c26-)" ||
	bad "no line says the backlog is empty again"
if timeout 20 iscsi-ls "iscsi://$ADDR:$PORT" 2>&1 | grep -q 'iqn.2026-11.org.isergw:fdlimit'; then
	ok "a new initiator is served afterwards"
else
	bad "iscsi-ls fails afterwards"
fi
if timeout 20 "$CTL" --socket "$SCRATCH/state/ctl.sock" status >/dev/null 2>&1; then
	ok "the control socket answers afterwards"
else
	bad "isergwctl status fails afterwards"
fi
target_stop "$T_PID" "$T_LOG" || bad "isergwd did not stop cleanly on SIGTERM"
if sanitizer_report "$T_LOG"; then bad "a sanitizer report in $T_LOG"; fi
[ "$fail" = 0 ] || { log "FAILED (log in $T_LOG)"; exit 1; }
log PASS
