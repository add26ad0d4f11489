#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The control socket, end to end: isergwd runs from a configuration file
# with its control socket in the scratch directory; isergwctl and two
# clients of ours drive it.
#   - the socket is 0600 in a 0700 directory; status answers;
#   - apply: a newer epoch adds a LUN and a portal (iscsi-inq sees the LUN),
#     the same epoch with the same document is a no-op, with another
#     document refused, an older epoch refused, an invalid document refused
#     with the parser's reason;
#   - alua set with a transition: while the request is still running, the
#     group shows Transitioning; afterwards REPORT TARGET PORT GROUPS (libiscsi)
#     reports Standby and a READ through that port gets NOT READY 04/0B,
#     while the other port serves it; stale and conflicting epochs refused;
#   - sessions lists a running libiscsi session by its initiator name;
#   - counters of the LUN, of the target port and of the default device group
#     (counters --device-groups) rise by exactly the READs
#     and WRITEs a client sent;
#   - bad input on the raw socket (ctl_badinput: truncated, oversized,
#     garbage, unknown operation, bad enum, stalled clients; a non-root uid
#     via setpriv) is refused with a reason while a data-path client keeps
#     working;
#   - logout (asked, with a grace time) and logout --now end the session;
#   - a LUN removed; a client killed during its transition; SIGTERM with a transition
#     pending: exit 0 and the socket file is gone.
#
#   ctl.sh --ctl PATH --client PATH --badclient PATH [--daemon PATH]
#          [--scratch DIR] [--addr A] [--addr2 B] [--port P]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

CTL=
CLIENT=
BADCLIENT=
ADDR=127.0.0.80
ADDR2=127.0.0.81
PORT=13480
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--ctl) CTL=$2; shift 2 ;;
	--client) CLIENT=$2; shift 2 ;;
	--badclient) BADCLIENT=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--addr2) ADDR2=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	-h|--help) sed -n '3,28p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ -x "${CTL:-/nonexistent}" ] || die "--ctl PATH (isergwctl) is required"
[ -x "${CLIENT:-/nonexistent}" ] || die "--client PATH (ctl_client) is required"
[ -x "${BADCLIENT:-/nonexistent}" ] || die "--badclient PATH (ctl_badinput) is required"
command -v jq >/dev/null || die "jq not found (apt-get install jq)"
command -v iscsi-inq >/dev/null || die "iscsi-inq not found (apt-get install libiscsi-bin)"
only_isergw "the control socket"
# ASan tree: a libiscsi leak in the client when its connection is dropped
export LSAN_OPTIONS="suppressions=$here/ctl-lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

IQN=iqn.2026-11.org.isergw:ctl
HOLD=iqn.2026-11.org.isergw:ctl-hold
COUNT=iqn.2026-11.org.isergw:ctl-count
RUN=$SCRATCH/run                # created by the daemon
SOCK=$RUN/ctl.sock
CFG=$SCRATCH/ctl.json
rm -rf "$RUN" "$SCRATCH"/*.img "$SCRATCH"/*.out "$SCRATCH"/doc-*.json
mkdir -p "$SCRATCH/state"

# doc NAME WITH_SECOND(0|1) [BLOCK_SIZE]: a configuration document; the
# second form adds LUN 1 and a portal on ADDR2 in target port group 2.
doc() {
	local name=$1 second=$2 bs=${3:-512} portals luns
	portals="{ \"url\": \"tcp://$ADDR:$PORT\", \"tpg_id\": 1 }"
	luns="{ \"lun\": 0, \"path\": \"$SCRATCH/l0.img\", \"size\": \"64M\", \"block_size\": $bs }"
	if [ "$second" = 1 ]; then
		portals="$portals, { \"url\": \"tcp://$ADDR2:$PORT\", \"tpg_id\": 2 }"
		luns="$luns, { \"lun\": 1, \"path\": \"$SCRATCH/l1.img\", \"size\": \"32M\" }"
	fi
	cat >"$SCRATCH/doc-$name.json" <<JSON
{
  "log_level": "info",
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SOCK",
  "portals": [ $portals ],
  "targets": [ { "iqn": "$IQN", "luns": [ $luns ] } ]
}
JSON
	echo "$SCRATCH/doc-$name.json"
}

fail=0
pass() { log "PASS $*"; }
bad() { log "FAIL $*"; fail=1; }
ctl() { "$CTL" -s "$SOCK" "$@"; }
# run_ctl EXPECTED-RC ARGS...: isergwctl's stdout+stderr in $OUT, true on the expected status
run_ctl() {
	local want=$1 rc
	shift
	OUT=$(ctl "$@" 2>&1)
	rc=$?
	[ "$rc" -eq "$want" ] || { log "isergwctl $* exited $rc (want $want): $OUT"; return 1; }
	return 0
}
# counter JQ-PATH: one number from 'counters --json' (ports or luns)
counters_json() { ctl --json counters "$@"; }

cp "$(doc start 0)" "$CFG"
config_start ctl "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
dlog=$T_LOG
pid=$T_PID
URL1=iscsi://$ADDR:$PORT/$IQN
URL2=iscsi://$ADDR2:$PORT/$IQN

# ---- the socket and status
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
if [ "$(stat -c %a "$SOCK")" = 600 ] && [ "$(stat -c %a "$RUN")" = 700 ]; then
	pass "socket 0600 in a 0700 directory"
else
	bad "socket mode $(stat -c %a "$SOCK" 2>&1), directory $(stat -c %a "$RUN" 2>&1)"
fi
if run_ctl 0 status && grep -q "pid *$pid\$" <<<"$OUT" && grep -q "^epoch *0 " <<<"$OUT"; then
	pass "status: pid $pid, epoch 0"
else
	bad "status: $OUT"
fi
[ "$(ctl --json status | jq .targets)" = 1 ] && pass "status --json" || bad "status --json"

# ---- apply
if iscsi-inq "$URL1/1" >/dev/null 2>&1; then bad "LUN 1 exists before apply"; fi
D5=$(doc five 1)
if run_ctl 0 apply --epoch 5 "$D5" && grep -q applied <<<"$OUT" &&
	iscsi-inq "$URL1/1" >/dev/null 2>&1 && iscsi-inq "$URL2/0" >/dev/null 2>&1; then
	pass "apply epoch 5: LUN 1 and portal $ADDR2 added (iscsi-inq)"
else
	bad "apply epoch 5: $OUT"
fi
if run_ctl 0 apply --epoch 5 "$D5" && grep -q "already applied" <<<"$OUT" &&
	[ "$(count_log "$dlog" 'reload: target .* LUN 1 .* added')" = 1 ]; then
	pass "apply epoch 5 again, same document: no-op"
else
	bad "apply epoch 5 again: $OUT"
fi
D5b=$(doc five-other 0)
if run_ctl 1 apply --epoch 5 "$D5b" && grep -q "already applied with a different" <<<"$OUT"; then
	pass "apply epoch 5 with another document refused: ${OUT#isergwctl: }"
else
	bad "apply epoch 5, other document: $OUT"
fi
if run_ctl 1 apply --epoch 4 "$D5" && grep -q "older than the current epoch 5" <<<"$OUT"; then
	pass "apply epoch 4 refused: ${OUT#isergwctl: }"
else
	bad "apply epoch 4: $OUT"
fi
if run_ctl 1 apply --epoch 6 "$(doc invalid 1 1000)" && grep -q "block_size" <<<"$OUT" &&
	[ "$(ctl --json status | jq .epoch)" = 5 ]; then
	pass "invalid document refused with the parser's reason: ${OUT#isergwctl: }"
else
	bad "invalid document: $OUT"
fi

# ---- ALUA with a transition
ctl alua set --epoch 6 --transition-ms 3000 1=ao,pref 2=standby >"$SCRATCH/alua-set.out" 2>&1 &
setpid=$!
# once the daemon accepted epoch 6, group 2 is Transitioning while the
# transition is pending and Standby after it, never anything else
show=
for _ in $(seq 300); do
	show=$(ctl --json alua show)
	[ "$(jq .epoch <<<"$show")" = 6 ] && break
	sleep 0.01
done
st=$(jq -r '.groups[] | select(.tpg_id==2) | .state' <<<"$show")
if [ "$(jq .transition_pending <<<"$show")" = true ]; then
	[ "$st" = transitioning ] && pass "during the transition group 2 is transitioning" ||
		bad "during the transition: $show"
else
	[ "$st" = standby ] || bad "after the transition: $show"
	log "note: the transition ended before 'alua show' answered (slow machine): not observed"
fi
wait "$setpid"
rc=$?
if [ "$rc" = 0 ] && grep -Eq '^2 +standby' "$SCRATCH/alua-set.out" &&
	grep -Eq '^1 +ao +yes' "$SCRATCH/alua-set.out"; then
	pass "alua set answered after the transition: 1 ao (pref), 2 standby"
else
	bad "alua set (rc $rc): $(cat "$SCRATCH/alua-set.out")"
fi
a2=$("$CLIENT" --url "$URL2/0" --initiator "$COUNT" --mode alua 2>&1)
a1=$("$CLIENT" --url "$URL1/0" --initiator "$COUNT" --mode alua 2>&1)
if grep -q "tpg 2 state 2" <<<"$a2" && grep -q "read: CHECK CONDITION 2/04/0b" <<<"$a2" &&
	grep -q "read: GOOD" <<<"$a1"; then
	pass "libiscsi: RTPG reports group 2 Standby, READ via $ADDR2 NOT READY 04/0B, via $ADDR GOOD"
else
	bad "libiscsi ALUA check: [$a2] [$a1]"
fi
run_ctl 1 alua set --epoch 5 1=ao && grep -q "older than the current epoch 6" <<<"$OUT" &&
	pass "alua set with a stale epoch refused" || bad "stale alua set: $OUT"
run_ctl 0 alua set --epoch 6 --transition-ms 3000 2=standby 1=ao,pref &&
	pass "alua set, same epoch and states: no-op" || bad "same alua set: $OUT"
run_ctl 1 alua set --epoch 6 1=ao 2=ao && grep -q "already used" <<<"$OUT" &&
	pass "alua set, same epoch, other states refused" || bad "conflicting alua set: $OUT"
run_ctl 1 alua set --dg nosuch 1=ao && grep -q "does not exist" <<<"$OUT" &&
	pass "unknown device group refused" || bad "device group: $OUT"
run_ctl 2 alua set 1=bogus && pass "bad state: usage error" || bad "bad state: $OUT"
run_ctl 0 alua set 1=ao 2=ao && [ "$(ctl --json status | jq .epoch)" = 7 ] &&
	pass "alua set without --epoch uses epoch + 1" || bad "alua set without --epoch: $OUT"

# a client killed while its transition runs: the daemon finishes the transition alone
timeout -s KILL 1 "$CTL" -s "$SOCK" alua set --transition-ms 2500 1=ao 2=ao >/dev/null 2>&1
for _ in $(seq 300); do
	[ "$(ctl --json alua show | jq .transition_pending)" = false ] && break
	sleep 0.1
done
show=$(ctl --json alua show)
if [ "$(jq .transition_pending <<<"$show")" = false ] &&
	[ "$(jq -r '[.groups[].state] | unique | join(",")' <<<"$show")" = ao ] && target_alive "$pid"; then
	pass "a client gone during its transition: the transition ended, all groups ao (epoch $(jq .epoch <<<"$show"))"
else
	bad "client gone during a transition: $show"
fi

# ---- sessions: a running libiscsi session
"$CLIENT" --url "$URL1/0" --initiator "$HOLD" --mode hold >"$SCRATCH/hold.out" 2>&1 &
holdpid=$!
for _ in $(seq 300); do grep -q "logged in" "$SCRATCH/hold.out" && break; sleep 0.1; done
sess=$(ctl --json sessions)
tsih=$(jq -r ".[] | select(.initiator==\"$HOLD\") | .tsih" <<<"$sess")
if [ -n "$tsih" ] && [ "$(jq -r ".[] | select(.tsih==$tsih) | .target" <<<"$sess")" = "$IQN" ] &&
	[ "$(jq -r ".[] | select(.tsih==$tsih) | .connections[0].state" <<<"$sess")" = full-feature ] &&
	run_ctl 0 sessions && grep -q "$HOLD" <<<"$OUT"; then
	pass "sessions lists $HOLD (TSIH $tsih)"
else
	bad "sessions: $sess"
fi

# ---- counters: exact deltas on LUN 1 and target port 2
lun_before=$(counters_json --lun "$IQN/1" | jq -c '.luns[0].stats // {}')
port_before=$(counters_json --ports | jq -c '.ports[] | select(.rel_port_id==2) | .stats')
dg_sel='.device_groups[] | select(.device_group=="default") | .stats'
dg_before=$(counters_json --device-groups | jq -c "$dg_sel")
"$CLIENT" --url "$URL2/1" --initiator "$COUNT" --mode count --reads 37 --writes 11 ||
	bad "count client failed"
lun_after=$(counters_json --lun "$IQN/1" | jq -c '.luns[0].stats')
port_after=$(counters_json --ports | jq -c '.ports[] | select(.rel_port_id==2) | .stats')
dg_after=$(counters_json --device-groups | jq -c "$dg_sel")
delta() { echo $(( $(jq ".$1 // 0" <<<"$3") - $(jq ".$1 // 0" <<<"$2") )); }
ok=1
for what in lun port; do
	b=${what}_before a=${what}_after
	r=$(delta cmds_read "${!b}" "${!a}") w=$(delta cmds_write "${!b}" "${!a}")
	br=$(delta bytes_read "${!b}" "${!a}") bw=$(delta bytes_written "${!b}" "${!a}")
	hist=$(( $(jq '[.lat_read_us_log2[]] | add' <<<"${!a}") - $(jq '[(.lat_read_us_log2 // [])[]] | add // 0' <<<"${!b}") ))
	if [ "$r" = 37 ] && [ "$w" = 11 ] && [ "$br" = $((37 * 4096)) ] && [ "$bw" = $((11 * 4096)) ] &&
		[ "$hist" = 37 ]; then
		log "  $what: +$r reads, +$w writes, +$br/+$bw bytes, +$hist read latency samples"
	else
		log "  $what: reads +$r writes +$w bytes +$br/+$bw latency samples +$hist (want 37/11)"
		ok=0
	fi
done
# the default device group: the session held open above reads too, nobody else writes
r=$(delta cmds_read "$dg_before" "$dg_after") w=$(delta cmds_write "$dg_before" "$dg_after")
bw=$(delta bytes_written "$dg_before" "$dg_after")
hist=$(( $(jq '[.lat_write_us_log2[]] | add' <<<"$dg_after") - $(jq '[(.lat_write_us_log2 // [])[]] | add // 0' <<<"$dg_before") ))
if [ "$r" -ge 37 ] && [ "$w" = 11 ] && [ "$bw" = $((11 * 4096)) ] && [ "$hist" = 11 ]; then
	log "  device group default: +$r reads, +$w writes, +$bw bytes written, +$hist write latency samples"
else
	log "  device group default: reads +$r writes +$w bytes written +$bw write latency samples +$hist (want >= 37/11)"
	ok=0
fi
[ $ok = 1 ] && pass "counters of LUN 1, port 2 and the default device group rose by exactly 37 READs and 11 WRITEs" ||
	bad "counters"
run_ctl 0 counters && grep -q "$IQN/1" <<<"$OUT" && run_ctl 0 counters --ports &&
	pass "counters tables" || bad "counters tables: $OUT"

# ---- bad input while the data path works
if "$BADCLIENT" --socket "$SOCK" >"$SCRATCH/badinput.out" 2>&1; then
	pass "raw-socket bad input refused with reasons ($(grep -c ^PASS "$SCRATCH/badinput.out") cases)"
else
	bad "raw-socket bad input: $(grep FAIL "$SCRATCH/badinput.out")"
fi
sed 's/^/    /' "$SCRATCH/badinput.out" >&2
for re in 'truncated frame' 'exceeds the maximum' 'malformed request' 'unknown operation' \
	'is not a valid AluaState'; do
	[ "$(count_log "$dlog" "ctl.*$re")" -ge 1 ] || bad "no daemon log line for '$re'"
done
if command -v setpriv >/dev/null; then
	if setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" -s "$SOCK" status >/dev/null 2>&1; then
		bad "uid 65534 used the socket in its 0700 directory"
	else
		[ $? = 3 ] && pass "uid 65534 cannot reach the socket (isergwctl exit 3)" ||
			bad "uid 65534: wrong exit status"
	fi
	# open the file modes so that only the daemon's credential check stands in the way
	chmod 0755 "$SCRATCH" "$RUN" && chmod 0666 "$SOCK"
	if setpriv --reuid=65534 --regid=65534 --clear-groups "$BADCLIENT" --socket "$SOCK" \
		--case nonroot >"$SCRATCH/nonroot.out" 2>&1 &&
		[ "$(count_log "$dlog" 'permission denied: uid 65534')" -ge 1 ]; then
		pass "uid 65534 refused by the peer credential check: $(cat "$SCRATCH/nonroot.out")"
	else
		bad "uid 65534: $(cat "$SCRATCH/nonroot.out")"
	fi
	chmod 0700 "$RUN" && chmod 0600 "$SOCK"
else
	log "note: setpriv not found, the non-root client is not tested"
fi
if kill -0 "$holdpid" 2>/dev/null && ! grep -q "connection lost" "$SCRATCH/hold.out"; then
	pass "the data-path client kept working through the bad input"
else
	bad "data-path client: $(cat "$SCRATCH/hold.out")"
fi

# ---- forced logout: asked, with a grace time
if run_ctl 0 logout --initiator "$HOLD" --grace 2 && grep -q "1 session" <<<"$OUT"; then
	for _ in $(seq 300); do kill -0 "$holdpid" 2>/dev/null || break; sleep 0.1; done
	if ! kill -0 "$holdpid" 2>/dev/null &&
		[ -z "$(ctl --json sessions | jq -r ".[] | select(.initiator==\"$HOLD\") | .tsih")" ]; then
		pass "logout --grace 2: the session ended ($(grep -Eo 'logging out|did not log out within 2 s' "$dlog" | tail -n1))"
	else
		bad "logout --grace: session still there"
	fi
else
	bad "logout --initiator: $OUT"
fi
wait "$holdpid" 2>/dev/null

# ---- logout --now
"$CLIENT" --url "$URL1/0" --initiator "$HOLD" --mode hold >"$SCRATCH/hold2.out" 2>&1 &
holdpid=$!
for _ in $(seq 300); do grep -q "logged in" "$SCRATCH/hold2.out" && break; sleep 0.1; done
tsih=$(ctl --json sessions | jq -r ".[] | select(.initiator==\"$HOLD\") | .tsih")
if [ -n "$tsih" ] && run_ctl 0 logout --tsih "$tsih" --now; then
	wait "$holdpid"
	rc=$?
	if [ "$rc" = 3 ] && grep -q "connection lost" "$SCRATCH/hold2.out" &&
		[ "$(count_log "$dlog" 'logout forced by the control socket')" -ge 1 ]; then
		pass "logout --tsih $tsih --now: the client saw its connection dropped"
	else
		bad "logout --now: client rc $rc: $(cat "$SCRATCH/hold2.out")"
	fi
else
	bad "logout --now (tsih '$tsih'): $OUT"
	kill "$holdpid" 2>/dev/null
	wait "$holdpid" 2>/dev/null
fi
run_ctl 1 logout --tsih 65000 && grep -q "no session with TSIH 65000" <<<"$OUT" &&
	pass "logout of an unknown TSIH refused" || bad "logout unknown: $OUT"

# ---- a LUN (and a portal) removed by a configuration: after LUN 1 served I/O above,
# its LU and backstore are retired and freed at exit, the LU first (a use after
# free there once; the ASan tree checks the exit below)
e=$(ctl --json status | jq .epoch)
if run_ctl 0 apply --epoch $((e + 1)) "$(doc removed 0)" && ! iscsi-inq "$URL1/1" >/dev/null 2>&1 &&
	iscsi-inq "$URL1/0" >/dev/null 2>&1; then
	pass "apply epoch $((e + 1)) removes LUN 1 and the second portal"
else
	bad "removing LUN 1: $OUT"
fi

# ---- cannot connect
"$CTL" -s "$SCRATCH/nonexistent.sock" status >/dev/null 2>&1
[ $? = 3 ] && pass "no daemon: exit 3" || bad "no daemon: wrong exit status"

# ---- SIGTERM, with a transition of a minute still pending
ctl alua set --transition-ms 60000 1=standby >"$SCRATCH/pending.out" 2>&1 &
pendpid=$!
for _ in $(seq 300); do
	[ "$(ctl --json alua show | jq .transition_pending)" = true ] && break
	sleep 0.1
done
if target_stop "$pid" "$dlog" && [ ! -e "$SOCK" ]; then
	wait "$pendpid"
	rc=$?
	[ "$rc" = 3 ] || bad "the client of the pending transition exited $rc: $(cat "$SCRATCH/pending.out")"
	pass "SIGTERM during a transition: exit 0, socket removed, the waiting client told (exit $rc)"
else
	bad "SIGTERM: socket $(ls -l "$SOCK" 2>&1)"
fi
if sanitizer_report "$dlog" >&2; then bad "sanitizer report in $dlog"; fi

[ $fail = 0 ] && log "all control socket checks passed" || log "some checks FAILED (log: $dlog)"
exit $fail
