#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# integration.floating: a portal whose address is not on the node when isergwd
# starts (and an iser:// portal on the same address, which has no RDMA device
# here) does not stop the start; the portal shows "waiting"; the address added
# to a veth interface in a network namespace makes it listen at once (rtnetlink)
# and serve; the address removed stops it cleanly (its session dropped, status
# "waiting"); added again, it serves again. A reload adding a portal whose
# address is missing keeps it, waiting. Needs root (ip netns); prefix do-, 10.35.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$HERE/lib.sh"
lib_parse_common "$@"
set -- "${LIB_ARGS[@]+"${LIB_ARGS[@]}"}"
CTL=${ISERGWCTL:-$(dirname "$ISERGWD")/isergwctl}
while [ $# -gt 0 ]; do
	case "$1" in
	--ctl) CTL=$2; shift 2 ;;
	*) die "unknown option $1" ;;
	esac
done
[ "$TARGET_KIND" = isergw ] || { log "isergwd only"; exit 77; }
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
	log "needs root and ip netns"; exit 77
fi
command -v iscsi-inq >/dev/null || { log "needs iscsi-inq (libiscsi-bin)"; exit 77; }

NS=do-float
ADDR=10.35.0.100
ADDR2=10.35.0.101
IQN=iqn.2026-11.org.isergw:floating
URL="iscsi://$ADDR:3260/$IQN/0"
PID=
cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null || true
	tsan_scan "$SCRATCH" || exit 1
}
trap cleanup EXIT
ip netns del "$NS" 2>/dev/null || true
ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add do0 type veth peer name do1
ip -n "$NS" link set do0 up
ip -n "$NS" link set do1 up
nsx() { ip netns exec "$NS" "$@"; }
ctl() { nsx "$CTL" -s "$SCRATCH/ctl.sock" "$@"; }
portal_state() { # URL -> listening|waiting
	ctl --json status | python3 -c 'import json,sys
u=sys.argv[1]
for p in json.load(sys.stdin)["portal_states"]:
    if p["url"]==u: print(p["state"])' "$1"
}
sessions() { ctl --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["sessions"])'; }
# wait_for SECONDS CMD...: poll every 20 ms
wait_for() {
	local limit=$1; shift
	local end=$(($(date +%s%N) + limit * 1000000000))
	while [ "$(date +%s%N)" -lt "$end" ]; do
		"$@" && return 0
		sleep 0.02
	done
	return 1
}
is_state() { [ "$(portal_state "$1")" = "$2" ]; }
fail() { log "FAIL: $*"; tail -20 "$SCRATCH/isergwd.log" >&2; exit 1; }

rm -f "$SCRATCH"/*.sock "$SCRATCH/isergwd.log"
cat > "$SCRATCH/config.json" <<EOF
{ "state_dir": "$SCRATCH/state", "ctl_socket": "$SCRATCH/ctl.sock", "log_level": "info",
  "portals": [ { "url": "tcp://$ADDR:3260", "rel_port_id": 7, "tpg_id": 9 },
               { "url": "iser://$ADDR:3260", "rel_port_id": 8, "tpg_id": 9 },
               { "url": "tcp://127.0.0.1:3260", "rel_port_id": 1, "tpg_id": 1 } ],
  "targets": [ { "iqn": "$IQN", "luns": [ { "path": "$SCRATCH/lun0.img", "size": "64M" } ] } ] }
EOF
# ip netns exec execs the daemon: $! is isergwd itself
ip netns exec "$NS" "$ISERGWD" --config "$SCRATCH/config.json" > "$SCRATCH/isergwd.log" 2>&1 &
PID=$!
wait_for 10 test -S "$SCRATCH/ctl.sock" || fail "isergwd did not start (an address missing must not stop it)"
kill -0 "$PID" || fail "isergwd exited"
is_state "tcp://$ADDR:3260" waiting || fail "tcp portal not waiting before its address exists"
is_state "iser://$ADDR:3260" waiting || fail "iser portal not waiting (no RDMA device here)"
is_state "tcp://127.0.0.1:3260" listening || fail "loopback portal not listening"
nsx iscsi-inq "$URL" >/dev/null 2>&1 && fail "served before the address exists"
log "start: tcp and iser portals on $ADDR waiting, isergwd up"

t0=$(date +%s%N)
ip -n "$NS" addr add "$ADDR/24" dev do0
wait_for 3 is_state "tcp://$ADDR:3260" listening || fail "not listening 3 s after the address was added"
# from the address added to the daemon's own "listening" line (polling costs nothing then)
t1=$(date -d "$(grep -m1 "listening on tcp://$ADDR" "$SCRATCH/isergwd.log" | cut -d' ' -f1)" +%s%N)
ms=$(((t1 - t0) / 1000000))
log "address added: listening after $ms ms"
[ "$ms" -lt 1000 ] || fail "took $ms ms: the rtnetlink event should make it listen at once"
nsx iscsi-inq "$URL" >/dev/null || fail "iscsi-inq through $ADDR after the address was added"
# a session through it, then the address goes
ip netns exec "$NS" iscsi-perf -t 60 -b 8 -m 4 "$URL" > "$SCRATCH/perf.log" 2>&1 &
PERF=$!
wait_for 5 test "$(sessions)" -ge 1 || fail "no session through $ADDR"
ip -n "$NS" addr del "$ADDR/24" dev do0
wait_for 3 is_state "tcp://$ADDR:3260" waiting || fail "still listening after the address was removed"
wait_for 3 test "$(sessions)" -eq 0 || fail "the session through the removed address was not dropped"
grep -q "its address was removed" "$SCRATCH/isergwd.log" || fail "no log line for the removal"
kill -9 "$PERF" 2>/dev/null || true
wait "$PERF" 2>/dev/null || true
nsx iscsi-inq "$URL" >/dev/null 2>&1 && fail "served after the address was removed"
log "address removed: waiting, session dropped"

ip -n "$NS" addr add "$ADDR/24" dev do0
wait_for 3 is_state "tcp://$ADDR:3260" listening || fail "not listening again"
nsx iscsi-inq "$URL" >/dev/null || fail "iscsi-inq after the address came back"
log "address added again: serving"

# a reload adding a portal whose address is missing keeps it, waiting
sed "s|\"portals\": \\[|\"portals\": [ { \"url\": \"tcp://$ADDR2:3260\", \"rel_port_id\": 5, \"tpg_id\": 9 },|" \
	"$SCRATCH/config.json" > "$SCRATCH/config2.json"
cp "$SCRATCH/config2.json" "$SCRATCH/config.json"
kill -HUP "$PID"
wait_for 5 is_state "tcp://$ADDR2:3260" waiting || fail "reload: the new portal is not kept waiting"
ip -n "$NS" addr add "$ADDR2/24" dev do0
wait_for 3 is_state "tcp://$ADDR2:3260" listening || fail "reload: the new portal did not listen"
nsx iscsi-inq "iscsi://$ADDR2:3260/$IQN/0" >/dev/null || fail "iscsi-inq through the reloaded portal"
log "reload: new portal waited, then served"

kill -TERM "$PID"
wait "$PID" || fail "isergwd exited with $?"
PID=
if sanitizer_report "$SCRATCH/isergwd.log"; then fail "sanitizer report"; fi
log "PASS"
