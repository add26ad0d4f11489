#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# One host that opens connections and never logs in. isergwd runs with a
# descriptor limit of 256 (ulimit -n) and the default max_logins_per_address
# (64); a client bound to 127.0.0.181 opens 300 connections to its portal and
# sends nothing. Of them 64 must stay open (logging in, until
# login_timeout_s) and the other 236 be closed at once; meanwhile another
# host (iscsi-ls from 127.0.0.1) must log in as if nothing happened. Before
# the limit every descriptor went to the first host and the other waited in
# the backlog for the login timeout (15 s). The refusals are logged at warn,
# at most 10 lines every 10 s, and counted (isergwctl status, the counter
# behind isergw_connections_refused_total); the daemon never runs out of
# descriptors. Once
# the client lets go, its address may open 64 again (the count went back),
# and SIGTERM stops the daemon with exit 0.
#
#   login_limit.sh --ctl PATH [--daemon PATH] [--scratch DIR] [--addr A] [--port P]
#                  [--src S]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"

ADDR=127.0.0.178
PORT=13696
SRC=127.0.0.181
CTL=
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--src) SRC=$2; shift 2 ;;
	--ctl) CTL=$2; shift 2 ;;
	-h|--help) sed -n '4,19p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ "$TARGET_KIND" = isergw ] || { log "isergwd only: skipped for $TARGET_KIND"; exit 77; }
[ -x "$ISERGWD" ] || die "--daemon PATH (isergwd) required"
[ -x "$CTL" ] || die "--ctl PATH (isergwctl) required"
command -v iscsi-ls >/dev/null || die "iscsi-ls (libiscsi-bin) is needed"
[ -n "$SCRATCH" ] || die "--scratch DIR required"
mkdir -p "$SCRATCH/state"
rm -f "$SCRATCH"/*.log "$SCRATCH"/*.img "$SCRATCH"/round*
port_open "$ADDR" "$PORT" && die "$ADDR:$PORT is already in use"
CFG=$SCRATCH/isergwd.json
cat >"$CFG" <<JSON
{
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "reactors": 2,
  "portals": [ { "url": "tcp://$ADDR:$PORT" } ],
  "targets": [ { "iqn": "iqn.2026-11.org.isergw:loginlimit",
                 "luns": [ { "lun": 0, "path": "$SCRATCH/l0.img", "size": "1M" } ] } ]
}
JSON
chmod 600 "$CFG"
T_LOG=$SCRATCH/isergwd.log
(ulimit -n 256 && exec "$ISERGWD" --config "$CFG") >"$T_LOG" 2>&1 &
T_PID=$!
_LIB_DAEMONS+=("$T_PID isergw")
wait_port "$T_PID" "$ADDR" "$PORT" || { tail -n 20 "$T_LOG" >&2; die "isergwd did not start"; }
fail=0
ok() { log "ok: $*"; }
bad() { log "FAILED: $*"; fail=1; }

# hold ROUND N: N connections from $SRC, sending nothing; after 1.5 s writes
# "OPEN CLOSED" to $SCRATCH/ROUND, then holds the open ones until
# $SCRATCH/ROUND.done exists (at most 12 s: within login_timeout_s)
hold() {
	rm -f "$SCRATCH/$1" "$SCRATCH/$1.done"
	python3 - "$ADDR" "$PORT" "$SRC" "$2" "$SCRATCH/$1" <<'PY' &
import os, select, socket, sys, time
addr, port, src, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
held = []
for _ in range(n):
    s = socket.socket()
    s.bind((src, 0))
    s.settimeout(5)
    s.connect((addr, port))
    held.append(s)
time.sleep(1.5)
closed = 0
for s in held:
    r, _, _ = select.select([s], [], [], 0)
    if r:
        try:
            gone = s.recv(1) == b""
        except OSError:
            gone = True
        closed += gone
tmp = out + ".tmp"
with open(tmp, "w") as f:
    f.write("%d %d\n" % (n - closed, closed))
os.rename(tmp, out)
end = time.time() + 12
while time.time() < end and not os.path.exists(out + ".done"):
    time.sleep(0.1)
for s in held:
    s.close()
PY
	HOLD=$!
	for _ in $(seq 150); do [ -e "$SCRATCH/$1" ] && break; sleep 0.1; done
}

# held ROUND OPEN CLOSED WHAT: the round's connections held and closed were these
held() {
	local open closed
	read -r open closed <"$SCRATCH/$1" 2>/dev/null || { open=?; closed=?; }
	if [ "$open" = "$2" ] && [ "$closed" = "$3" ]; then
		ok "$4: $open held, $closed closed at once"
	else
		bad "$4: $open held, $closed closed (want $2 and $3)"
	fi
}

hold round1 300
held round1 64 236 "300 connections from $SRC that never log in"
if timeout 10 iscsi-ls "iscsi://$ADDR:$PORT" 2>"$SCRATCH/ls.err" | grep -q 'iqn.2026-11.org.isergw:loginlimit'
then
	ok "another host logs in meanwhile (iscsi-ls)"
else
	bad "another host cannot log in while $SRC holds its connections: $(tail -n 1 "$SCRATCH/ls.err")"
fi
touch "$SCRATCH/round1.done"
wait "$HOLD" || bad "the client failed"
kill -0 "$T_PID" 2>/dev/null || bad "isergwd died"
n=$(grep -c "warn   conn: $SRC:[0-9]*: connection refused: 64 connections from this address are logging in already (max_logins_per_address 64)" "$T_LOG")
if [ "$n" -ge 1 ] && [ "$n" -le 10 ]; then
	ok "$n warn lines for 236 refusals ($(grep -m1 'connection refused' "$T_LOG" | cut -c26-))"
else
	bad "$n warn lines about refused connections (want 1 to 10)"
fi
if grep -q 'Too many open files' "$T_LOG"; then bad "isergwd ran out of descriptors"; else
	ok "isergwd never ran out of descriptors"; fi
# refused counts what was closed at once
refused() {
	"$CTL" --socket "$SCRATCH/state/ctl.sock" status --json 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin).get("connections_refused", 0))'
}
n=$(refused)
[ "$n" = 236 ] && ok "isergwctl status: connections_refused $n" ||
	bad "isergwctl status: connections_refused '$n' (want 236)"
if "$CTL" --socket "$SCRATCH/state/ctl.sock" status | grep -q '^connections  0 (236 refused'; then
	ok "the status table: $("$CTL" --socket "$SCRATCH/state/ctl.sock" status | grep '^connections')"
else
	bad "the status table: $("$CTL" --socket "$SCRATCH/state/ctl.sock" status | grep '^connections')"
fi
# the count went back to 0 when they closed: 64 again, the 65th refused
for _ in $(seq 50); do
	[ "$(ss -Htn state established "( sport = :$PORT )" | wc -l)" -eq 0 ] && break
	sleep 0.1
done
hold round2 65
held round2 64 1 "after they closed, 65 more from $SRC"
touch "$SCRATCH/round2.done"
wait "$HOLD" || bad "the client failed"
n=$(refused)
[ "$n" = 237 ] && ok "connections_refused $n after the 65th" ||
	bad "connections_refused '$n' after the 65th (want 237)"
target_stop "$T_PID" "$T_LOG" || bad "isergwd did not stop cleanly on SIGTERM"
if sanitizer_report "$T_LOG"; then bad "a sanitizer report in $T_LOG"; fi
[ "$fail" = 0 ] || { log "FAILED (log in $T_LOG)"; exit 1; }
log PASS
