#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Configuration reload on SIGHUP, with libiscsi clients (iscsi-perf,
# iscsi-ls, iscsi-inq) running across it.
#
#   1. one portal P1, target A with LUN 0. While iscsi-perf keeps a session
#      to A busy for 8 s, the file gains a second portal P2, target B (LUNs
#      0 and 1) and LUN 1 of A; SIGHUP. Then discovery on P1 and on P2 lists
#      A and B (P1 with TPGT 1, P2 with TPGT 2: by default a portal's TPGT is
#      its relative port id), both LUNs of B and LUN 1 of A answer INQUIRY, and the busy
#      client finished without error, logged in once and was never dropped.
#   2. sessions to B (through P1), to A through P2 and to A LUN 1 through P1
#      are busy; B and P2 are removed, SIGHUP: the first two are dropped
#      ("its portal or target was removed"), the third is not; P2 no longer
#      accepts connections, discovery no longer lists B, A still works.
#   3. a file that is not JSON, then one with an invalid value: SIGHUP leaves
#      the running configuration in place, with an "err" log line.
#   4. SIGTERM: exit 0.
#
#   reload.sh [--daemon PATH] [--scratch DIR] [--addr A1] [--addr2 A2] [--port P]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

ADDR1=127.0.0.42
ADDR2=127.0.0.43
PORT=13342
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--port) PORT=$2; shift 2 ;;
	--addr) ADDR1=$2; shift 2 ;;
	--addr2) ADDR2=$2; shift 2 ;;
	-h|--help) sed -n '3,21p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
only_isergw "SIGHUP configuration reload"
for t in iscsi-perf iscsi-ls iscsi-inq; do
	command -v "$t" >/dev/null || die "$t not found (apt-get install libiscsi-bin)"
done

A=iqn.2026-11.org.isergw:reload-a
B=iqn.2026-11.org.isergw:reload-b
INIT=iqn.2026-11.org.isergw:reload
P1=$ADDR1:$PORT
P2=$ADDR2:$PORT
CFG=$SCRATCH/reload.json
rm -f "$SCRATCH"/*.img
mkdir -p "$SCRATCH/state"

# Background clients, killed on exit (only these pids).
CLIENT_PIDS=()
kill_clients() {
	local p
	for p in "${CLIENT_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${CLIENT_PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	CLIENT_PIDS=()
}
trap 'kill_clients; lib_cleanup 2>/dev/null' EXIT

# write_config WITH_B(0|1) A_LUNS(1|2): rewritten atomically (rename).
write_config() {
	local with_b=$1 a_luns=$2 portals targets
	portals="{ \"url\": \"tcp://$P1\" }"
	[ "$with_b" = 1 ] && portals="$portals, { \"url\": \"tcp://$P2\" }"
	targets="{ \"iqn\": \"$A\", \"luns\": [ { \"lun\": 0, \"path\": \"$SCRATCH/a0.img\", \"size\": \"64M\" }"
	[ "$a_luns" = 2 ] && targets="$targets, { \"lun\": 1, \"path\": \"$SCRATCH/a1.img\", \"size\": \"32M\" }"
	targets="$targets ] }"
	if [ "$with_b" = 1 ]; then
		targets="$targets, { \"iqn\": \"$B\", \"luns\": [
		  { \"lun\": 0, \"path\": \"$SCRATCH/b0.img\", \"size\": \"32M\" },
		  { \"lun\": 1, \"path\": \"$SCRATCH/b1.img\", \"size\": \"32M\" } ] }"
	fi
	cat >"$CFG.tmp" <<JSON
{
  "log_level": "info",
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "portals": [ $portals ],
  "targets": [ $targets ]
}
JSON
	mv -f "$CFG.tmp" "$CFG"
}

fail=0
pass() { log "PASS $*"; }
bad() { log "FAIL $*"; fail=1; }

# hup EXPECTED-ERE: SIGHUP, then wait for one more log line matching ERE.
hup() {
	local before
	before=$(count_log "$dlog" "$1")
	kill -HUP "$pid"
	local deadline=$((SECONDS + 15))
	while [ "$SECONDS" -lt "$deadline" ]; do
		[ "$(count_log "$dlog" "$1")" -gt "$before" ] && return 0
		sleep 0.1
	done
	return 1
}

# discover ADDR:PORT: SendTargets there, one "IQN PORTAL,TPGT" line each.
discover() {
	timeout --kill-after=5 20 iscsi-ls -i "$INIT-ls" "iscsi://$1" </dev/null 2>&1 |
		sed -n 's/^Target:\([^ ]*\) Portal:\([^ ]*\).*/\1 \2/p'
}
# targets_on ADDR:PORT: the target names discovery lists there.
targets_on() { discover "$1" | cut -d' ' -f1 | sort -u | paste -sd' '; }
# expect_portals ADDR:PORT IQN "PORTAL,TPGT...": the addresses given for IQN.
expect_portals() {
	local got
	got=$(discover "$1" | awk -v t="$2" '$1 == t { print $2 }' | sort | paste -sd' ')
	if [ "$got" = "$3" ]; then pass "discovery on $1 gives $2 at: $got"
	else bad "discovery on $1 gives $2 at '$got', expected '$3'"; fi
}
expect_targets() { # expect_targets ADDR:PORT "IQN..." (sorted, space separated)
	local got
	got=$(targets_on "$1")
	if [ "$got" = "$2" ]; then pass "discovery on $1 lists: $got"
	else bad "discovery on $1 lists '$got', expected '$2'"; fi
}
inq() { # inq ADDR:PORT IQN LUN
	local out
	if out=$(timeout --kill-after=5 20 iscsi-inq -i "$INIT-inq" "iscsi://$1/$2/$3" </dev/null 2>&1); then
		pass "iscsi-inq $1 $2 LUN $3 answers"
	else
		bad "iscsi-inq $1 $2 LUN $3 failed: $(echo "$out" | tail -n 2 | paste -sd' ')"
	fi
}
# perf NAME SECONDS ADDR:PORT IQN LUN: iscsi-perf in the background, no
# reconnects (-x 0: a dropped session is an error, not silently repaired).
perf() {
	local name=$1 secs=$2
	timeout --kill-after=5 $((secs + 60)) iscsi-perf -i "$INIT-$name" -t "$secs" -b 8 -m 4 -x 0 \
		"iscsi://$3/$4/$5" </dev/null >"$SCRATCH/perf-$name.out" 2>&1 &
	PERF_PID=$!
	CLIENT_PIDS+=("$PERF_PID")
	if ! wait_log "$dlog" "normal session of $INIT-$name to $4 logged in" 15; then
		bad "iscsi-perf $name did not log in to $4 via $3"
		return 1
	fi
}
# perf_done NAME PID: the client ended with status 0 and printed no error.
perf_done() {
	local name=$1 p=$2 rc
	wait "$p"
	rc=$?
	if [ "$rc" -eq 0 ] && ! grep -Eiq 'error|fail' "$SCRATCH/perf-$name.out"; then
		pass "iscsi-perf $name finished without error"
	else
		bad "iscsi-perf $name: status $rc: $(tail -n 3 "$SCRATCH/perf-$name.out" | tr '\r' '\n' | tail -n 3 | paste -sd' ')"
	fi
}
# never_dropped NAME: one login, no "dropping connection" line for it.
never_dropped() {
	local n d
	n=$(count_log "$dlog" "normal session of $INIT-$1 to")
	d=$(count_log "$dlog" "\($INIT-$1\): dropping connection")
	if [ "$n" -eq 1 ] && [ "$d" -eq 0 ]; then pass "session $1 logged in once and was never dropped"
	else bad "session $1: $n login(s), $d drop(s) in the log"; fi
}

# ---- 1. add a portal, a target and a LUN under load
write_config 0 1
config_start reload "$CFG" "$P1" || die "isergwd did not start"
pid=$T_PID
dlog=$T_LOG
expect_targets "$P1" "$A"

perf busy-a 8 "$P1" "$A" 0
busy_a=$PERF_PID
sleep 1
target_alive "$busy_a" || bad "busy-a ended before the reload: it must run across it"
write_config 1 2
if hup 'configuration reloaded: 2 target\(s\), 2 portal\(s\)'; then pass "reload 1 applied"
else bad "reload 1 (add P2, B, A LUN 1) not applied"; fi
wait_port "$pid" "$ADDR2" "$PORT" 10 || bad "the new portal $P2 does not accept connections"
expect_targets "$P1" "$A $B"
expect_targets "$P2" "$A $B"
expect_portals "$P1" "$B" "$P1,1 $P2,2"
expect_portals "$P2" "$A" "$P1,1 $P2,2"
inq "$P2" "$B" 0
inq "$P2" "$B" 1
inq "$P1" "$B" 1
inq "$P1" "$A" 1
inq "$P2" "$A" 0
perf_done busy-a "$busy_a"
never_dropped busy-a

# ---- 2. remove B and P2 with sessions on them
perf busy-b 60 "$P1" "$B" 0
busy_b=$PERF_PID
perf busy-a2 60 "$P2" "$A" 0
busy_a2=$PERF_PID
perf busy-a1 8 "$P1" "$A" 1
busy_a1=$PERF_PID
sleep 1
for p in "$busy_b" "$busy_a2" "$busy_a1"; do
	target_alive "$p" || bad "an iscsi-perf client (pid $p) ended before the reload"
done
write_config 0 2
if hup 'configuration reloaded: 1 target\(s\), 1 portal\(s\)'; then pass "reload 2 applied"
else bad "reload 2 (remove B and P2) not applied"; fi
for s in busy-b busy-a2; do
	if wait_log "$dlog" "\($INIT-$s\): dropping connection: its portal or target was removed" 10; then
		pass "session $s dropped by the reload"
	else
		bad "session $s not dropped (no 'dropping connection: its portal or target was removed' line)"
	fi
done
for i in $(seq 50); do port_open "$ADDR2" "$PORT" || break; sleep 0.1; done
if port_open "$ADDR2" "$PORT"; then bad "$P2 still accepts connections after its removal"
else pass "$P2 no longer accepts connections"; fi
expect_targets "$P1" "$A"
expect_portals "$P1" "$A" "$P1,1"
inq "$P1" "$A" 0
inq "$P1" "$A" 1
perf_done busy-a1 "$busy_a1"
never_dropped busy-a1
# the dropped clients may retry or give up: they are stopped here either way
for p in "$busy_b" "$busy_a2"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done

# ---- 3. broken configurations are refused, the running one stays
printf '{ "portals": [ { "url": "tcp://%s" } ], "targets": [ broken\n' "$P1" >"$CFG"
if hup 'reload failed: configuration kept as it was'; then
	pass "a file that is not JSON is refused"
	grep -E ' err +[a-z]+: reload failed' "$dlog" >/dev/null || bad "the reload failure is not an err line"
	grep -F "$CFG" "$dlog" | grep -Eq 'line [0-9]+' || bad "no log line names $CFG and the line of the error"
else
	bad "no 'reload failed' log line after SIGHUP with a broken file"
fi
write_config 1 2
sed -i 's/"size": "32M" }, *$/"size": "32M", "block_size": 1000 },/' "$CFG"
grep -q '"block_size": 1000' "$CFG" || die "could not write the invalid configuration"
if hup 'reload failed: configuration kept as it was'; then
	pass "a file with block_size 1000 is refused"
	grep -q 'block_size' "$dlog" || bad "the log does not name block_size"
else
	bad "no 'reload failed' log line after SIGHUP with block_size 1000"
fi
if port_open "$ADDR2" "$PORT"; then bad "the refused configuration opened $P2"; fi
expect_targets "$P1" "$A"
inq "$P1" "$A" 0
inq "$P1" "$A" 1

# ---- 4. clean stop
if ! target_alive "$pid"; then
	wait "$pid" 2>/dev/null
	bad "the daemon died (status $?); see $dlog"
	_lib_forget "$pid"
elif target_stop "$pid" "$dlog"; then
	pass "SIGTERM: exit 0"
else
	bad "unclean stop (SIGTERM must exit 0); see $dlog"
fi
if [ "$fail" -ne 0 ]; then
	log "FAILED (logs in $SCRATCH)"
	exit 1
fi
log "all reload checks passed"
