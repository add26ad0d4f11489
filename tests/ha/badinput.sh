#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ha.badinput: bad input to the HA agents changes nothing, and the cluster
# keeps serving.
#
#   badinput.sh --isergwd PATH --isergwctl PATH --ha PATH --badmsg PATH
#               [--probe PATH] --prefix P --subnet S --scratch DIR
#
# 1. Three nodes (corosync, isergwd --managed, isergw-ha), the example
#    cluster configuration applied through node 1; every node synced at
#    generation >= 2 with dg1=n1, dg2=n2, dg3=n3. Each node's generation,
#    digest and ALUA map (`isergwctl cluster status --json`) are recorded.
#    From then on a client in the host namespace reads LUN 1's capacity
#    through node 2 every half second (READ CAPACITY(16): refused by
#    isergwd unless its port group serves, i.e. holds a valid lease).
# 2. Group messages: ha_badmsg joins the CPG group "isergw-ha" as a second
#    process of node 2 (every agent logs "two agents of node 2"), waits for
#    the barrier its join starts, multicasts one bad message and leaves:
#    empty, random bytes, a truncated Heartbeat, protocol version 99, another
#    cluster's name, a Change whose origin is another node, Syncs with
#    members out of order, with a 7-byte digest and with a parked unit
#    attention for relative port 0, a State of a generation
#    nobody announced, messages of 1 MiB + 1 byte and 16 MiB; LU state
#    messages (protocol 3) from version 99, in a protocol 2 message, for an
#    LU nobody knows and out of order, claiming another origin, and an LBA
#    lock in a protocol 2 message; API token changes (protocol 4) with a hash
#    that is none and in a protocol 3 message.
# 3. Local API of node 1: a 2 MiB frame header, a frame cut short, bytes
#    that are no ApiRequest (the connection stays usable), an empty request,
#    a client that hangs up before its reply, ApplyClusterConfig with broken
#    JSON, an unknown key and a LUN block_size 1000, a Move to and a Drain
#    of an unknown node.
#    After each case of 2 and 3: every daemon runs, every node is synced with
#    the generation, digest and ALUA map recorded in 1, the agents' logs
#    (every node's for 2, node 1's for 3) hold the case's warning, and a read
#    through node 2 succeeds. No read may fail during 2 and 3.
# 4. Node 3 with another cluster name: its agent and corosync stopped (nodes
#    1 and 2 take dg3 over, n3 Unavailable), corosync.conf rewritten with
#    cluster_name "other", both started again. Whether corosync lets it into
#    the ring is printed; either way nodes 1 and 2 must stay quorate, synced
#    and serving with the map they had without node 3, node 3 must not
#    serve, and a log says why. Then node 3 gets the right name back and
#    must rejoin and sync (dg3 back on n3). Reads may fail while the ring
#    changes (counted, printed), but must succeed again after each step.
# 5. Every agent and isergwd stops with status 0, the bed comes down and
#    leaves nothing behind.
# Exit 0 only if every case holds; 77 when not root or corosync is missing.

# shellcheck disable=SC2317 # the conditions are called through bed_poll
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

BADMSG=
ha_options 3,43 --badmsg BADMSG -- "$@"
ha_need --badmsg "$BADMSG" ha_badmsg
ha_need --ha "$BED_HA" isergw-ha

NODES=(1 2 3)
INITIATOR=iqn.2026-11.org.isergw:host
POS=()

# ---------------------------------------------------------------- cluster state

# map K: the ALUA map alone (owners and states)
alua_map() { ha_snapshot "$1" | jq -c '.[2]'; }

# all_synced K...: every node K synced and quorate, generation >= 2, with
# the example configuration's owners
all_synced() { ha_all_synced --min-gen 2 "$HA_OWNERS" "$@"; }

daemons_alive() {
	local k d rc=0
	for k in "$@"; do
		for d in corosync isergwd ha; do
			bed_alive "$k" "$d" || { bed_log "node $k: $d is not running"; rc=1; }
		done
	done
	return "$rc"
}

# ---------------------------------------------------------------- the reader

READER_LOG=
READER_PID=

reader_loop() {
	local url out parent=$1
	url="iscsi://$(bed_portal 2)/$BED_HA_IQN/1"
	while kill -0 "$parent" 2>/dev/null && [ ! -e "$SCRATCH/reader.stop" ]; do
		if out=$(bed_host timeout 20 iscsi-readcapacity16 -i "$INITIATOR" "$url" 2>&1); then
			echo "$(date '+%T.%N') ok"
		else
			echo "$(date '+%T.%N') FAIL $(tr '\n' ' ' <<<"$out")"
		fi
		sleep 0.5
	done
}

reader_start() {
	READER_LOG=$SCRATCH/reader.log
	rm -f "$SCRATCH/reader.stop"
	: >"$READER_LOG"
	reader_loop "$$" >>"$READER_LOG" 2>&1 &
	READER_PID=$!
}

reader_stop() {
	[ -n "$READER_PID" ] || return 0
	touch "$SCRATCH/reader.stop"
	wait "$READER_PID" 2>/dev/null
	READER_PID=
}

reader_pos() { wc -l <"$READER_LOG"; }

# _reader_ok_after LINE: a successful read after line LINE of the log
_reader_ok_after() { tail -n +"$(($1 + 1))" "$READER_LOG" | grep -q ' ok$'; }

reader_ok_after() {
	bed_poll "$BED_WAIT_LIMIT" "a read of LUN 1 through node 2" _reader_ok_after "$1"
}

# reader_fails FROM [TO]: failed reads between two positions
reader_fails() {
	local to=${2:-$(reader_pos)}
	sed -n "$(($1 + 1)),${to}p" "$READER_LOG" | grep -c ' FAIL' || true
}

# ---------------------------------------------------------------- cases

# mark: remembers where every agent's log and the reader's log are now
mark() {
	local k
	for k in "${NODES[@]}"; do POS[k]=$(bed_log_lines "$k" ha); done
	RPOS=$(reader_pos)
}

# logged K WHAT ERE [LIMIT]: node K's agent logged a line matching ERE since
# mark (waits up to LIMIT seconds, default 30)
logged() {
	local k=$1 what=$2 ere=$3 limit=${4:-30} line
	if line=$(bed_wait_log "$k" ha "$ere" "${POS[k]}" "$limit" 2>/dev/null); then
		echo "    node $k: ${line:0:200}"
		return 0
	fi
	bed_log "node $k: no log line for $what (/$ere/ after line ${POS[k]} of $(bed_logfile "$k" ha))"
	return 1
}

# after_case NAME NODES-THAT-LOG ERE: the checks every case ends with
after_case() {
	local name=$1 lognodes=$2 ere=$3 k ok=1 limit=30
	# the nodes got the input at the same time: once one has waited in
	# vain, the others are only looked at
	for k in $lognodes; do logged "$k" "$name" "$ere" "$limit" || { ok=0; limit=1; }; done
	daemons_alive "${NODES[@]}" || ok=0
	if ! bed_poll "$BED_WAIT_LIMIT" "every node synced" all_synced "${NODES[@]}"; then
		for k in "${NODES[@]}"; do
			bed_log "node $k: $(ha_status "$k" | jq -c '[.phase, .quorate, .generation]')"
		done
		ok=0
	fi
	ha_unchanged "${NODES[@]}" || ok=0
	reader_ok_after "$RPOS" || ok=0
	ha_verdict "$ok" "$name"
}

# group_case NAME CASE ERE [ARGS...]: one bad message (ha_badmsg group CASE
# ARGS) from node 2's namespaces; every agent must log ERE
group_case() {
	local name=group/$1 c=$2 ere=$3 out rc k
	shift 3
	mark
	out=$(bed_exec 2 "$BADMSG" group "$c" "$@" 2>>"$SCRATCH/badmsg.err")
	rc=$?
	grep -E '^(ok|FAIL) ' <<<"$out" | sed 's/^/    /'
	if [ "$rc" -ne 0 ]; then
		bed_log "ha_badmsg group $c: exit status $rc"
		fail=1
	fi
	for k in "${NODES[@]}"; do
		logged "$k" "the second agent of node 2" 'two agents of node 2 in the group' >/dev/null ||
			fail=1
	done
	after_case "$name" "${NODES[*]}" "$ere"
	[ "$rc" -eq 0 ] || results[-1]="FAIL $name"
}

# api_case NAME CASE ERE [ARGS...]: one bad request (ha_badmsg api SOCKET CASE
# ARGS) on node 1's local API; node 1's agent must log ERE
api_case() {
	local name=api/$1 c=$2 ere=$3 out rc
	shift 3
	mark
	out=$(bed_exec 1 "$BADMSG" api /run/isergw/ha.sock "$c" "$@" 2>>"$SCRATCH/badmsg.err")
	rc=$?
	grep -E '^(ok|FAIL) ' <<<"$out" | sed 's/^/    /'
	if [ "$rc" -ne 0 ]; then
		bed_log "ha_badmsg api $c: exit status $rc"
		fail=1
	fi
	after_case "$name" 1 "$ere"
	[ "$rc" -eq 0 ] || results[-1]="FAIL $name"
}

# ---------------------------------------------------------------- 1. the bed

ha_cluster_up || bed_die "the cluster did not come up"
ha_record "${NODES[@]}" || bed_die "no status from every node"
reader_start
bed_poll "$BED_WAIT_LIMIT" "a first read of LUN 1 through node 2" _reader_ok_after 0 ||
	bed_die "LUN 1 cannot be read through node 2: $(tail -n 3 "$READER_LOG")"
START=$(reader_pos)

# ---------------------------------------------------------------- 2. group messages

echo "group messages, from a second process of node 2:"
G='group message from node 2 ignored'
group_case empty empty "$G: protocol version 0 "
group_case random random "$G: 200 bytes that do not decode as a GroupMsg"
group_case truncated-heartbeat truncated "$G: [0-9]+ bytes that do not decode as a GroupMsg"
group_case version-99 future "$G: protocol version 99 "
group_case other-cluster foreign "$G: it is of cluster '$BED_CLUSTER_NAME-other'"
group_case wrong-origin origin 'change from node 2 claims origin [0-9]+: ignored'
group_case sync-not-ascending sync-order "$G: sync\.members: not ascending"
group_case sync-digest-7 sync-digest "$G: sync\.digest: 7 bytes"
group_case sync-parked-port-0 sync-parked "$G: sync\.lu_parked\[0\]: malformed"
# no wording is fixed for this one yet: any warning naming the State
group_case state-unknown-generation state-gen 'ignored.*[Ss]tate|[Ss]tate.*ignored'
group_case fenced-alive-node fenced "node 2 says node 'n3' was fenced: ignored, its agent is in the group"
group_case fenced-in-protocol-1 fenced-v1 "$G: fenced: in a protocol 1 message"
group_case lun-garbled lun-garbled 'change [0-9]+ of node [0-9]+ refused: lun: line 1 column'
group_case lun-in-protocol-2 lun-v2 "$G: change\.lun: in a protocol 2 message"
# isergw-api's tokens (protocol 4): a hash that is none, a token in a protocol 3 message
group_case token-garbled token-garbled "$G: change\.token: token badmsg: hash: not sha256:SALT:HASH"
group_case token-in-protocol-3 token-v3 "$G: change\.token: in a protocol 3 message"
# the LU state (protocol 3): from a future version, in a version without it, for an
# LU nobody knows and out of order (base version 7), claiming another origin
group_case lu-state-version-99 lu-future "$G: protocol version 99 "
group_case lu-state-in-protocol-2 lu-v2 "$G: lu_propose: in a protocol 2 message"
group_case lu-state-unknown-out-of-order lu-unknown \
	"LU 6099+: proposal 1 of node 2 is out of order \(base version 7, this node holds 0: an LU it does not know\): refused"
group_case lu-state-wrong-origin lu-origin "LU 6099+: proposal from node 2 claims origin [0-9]+: refused"
group_case lu-lock-in-protocol-2 lu-lock-v2 "$G: lu_lock: in a protocol 2 message"
group_case '1MiB+1' oversized "$G: 1048577 bytes \(at most 1048576\)" --size 1048577
group_case 16MiB oversized "$G: 16777216 bytes \(at most 1048576\)" --size 16777216

# ---------------------------------------------------------------- 3. the local API

echo "local API of node 1:"
jq '. + {"bogus_key": 1}' "$HA_CONFIG" >"$SCRATCH/unknown-key.json"
jq '.targets[0].luns[1].block_size = 1000' "$HA_CONFIG" >"$SCRATCH/block-size.json"
head -c 100 "$HA_CONFIG" >"$SCRATCH/broken.json"
R='api client pid [0-9]+ uid 0: refused'
api_case frame-2MiB oversized-frame "$R: frame of 2097152 bytes exceeds the maximum of 1048576 bytes"
api_case frame-truncated truncated-frame 'api client pid [0-9]+ uid 0: truncated frame: the connection ended inside it'
api_case not-a-request garbage "$R: malformed request: [0-9]+ bytes that do not decode as an ApiRequest"
api_case empty-request empty "$R: no operation in the request"
api_case hangup-before-reply hangup 'api client pid [0-9]+ uid 0: the reply could not be sent'
api_case config-broken-json config "$R: config: line [0-9]+" "$SCRATCH/broken.json" 'config: line'
api_case config-unknown-key config "$R: bogus_key: unknown key" "$SCRATCH/unknown-key.json" bogus_key
api_case config-block-size-1000 config "$R: .*targets\[0\]\.luns\[1\]\.block_size: 1000" \
	"$SCRATCH/block-size.json" 'targets[0].luns[1].block_size'
api_case move-to-unknown-node move "$R: no node 'n9' in the cluster configuration" dg1 n9 "'n9'"
api_case lun-garbled lun "$R: lun: line 1 column" "$BED_HA_IQN" '{"path": "/tmp/x.img", "size" 1M' 'lun: line 1'
api_case lun-block-size-1000 lun "$R: targets\[0\]\.luns\[[0-9]+\]\.block_size: 1000" "$BED_HA_IQN" \
	'{"path": "/tmp/x.img", "block_size": 1000, "device_group": "dg1"}' 'block_size: 1000'
api_case drain-unknown-node drain "$R: no node 'n9' in the cluster configuration" n9 "'n9'"

n=$(reader_fails "$START")
total=$(($(reader_pos) - START))
echo "reads of LUN 1 through node 2 during the group and API cases: $total, failed: $n"
if [ "$n" -ne 0 ]; then
	sed -n "$((START + 1)),\$p" "$READER_LOG" | grep ' FAIL' | head -n 5 >&2
	results+=("FAIL reads during the group and API cases ($n of $total failed)")
	fail=1
fi

# ---------------------------------------------------------------- 4. another cluster name

echo "node 3 with another cluster name:"
OTHER=other
# _without_n3 K: node K synced and quorate, n3 Unavailable everywhere, dg1 and
# dg2 where they were, dg3 on n1 or n2
_without_n3() {
	ha_status "$1" | jq -e '.phase == "synced" and .quorate and
		([.device_groups[].states[] | select(.node == "n3") | .state] | all(. == "unavailable")) and
		([.device_groups[] | {(.name): .owner}] | add) as $o |
		$o.dg1 == "n1" and $o.dg2 == "n2" and ($o.dg3 == "n1" or $o.dg3 == "n2")' >/dev/null
}
without_n3() { _without_n3 1 && _without_n3 2 && ha_same_generation 1 2; }

# serving K: node K holds a lease from its agent (its isergwd serves)
serving() { ha_status "$1" | jq -e '.lease_remaining_ms > 0' >/dev/null; }

# stable_without_n3: nodes 1 and 2 synced with the map they had without node
# 3 (same generation and digest), serving; node 3 serving nothing
stable_without_n3() {
	local k
	for k in 1 2; do
		[ "$(ha_snapshot "$k")" = "${LEFT[$k]}" ] || return 1
		ha_status "$k" | jq -e '.phase == "synced" and .quorate' >/dev/null || return 1
		serving "$k" || return 1
	done
	! serving 3
}

# in_ring_of_3: nodes 1 and 2 see 3 members
in_ring_of_3() { [ "$(bed_quorum 1)" = "Yes 3" ] && [ "$(bed_quorum 2)" = "Yes 3" ]; }

# ignored_since LINE N: node 1's agent ignored N messages of node 3 after LINE
declare -A LEFT=()
ok=1
p4=$(reader_pos)
ha_check "node 3's agent stops" bed_stop_ha 3 || ok=0
ha_check "node 3's corosync stops" bed_stop_corosync 3 || ok=0
ha_check "nodes 1 2 quorate with 2" bed_wait_quorum 2 1 2 || ok=0
if bed_poll "$BED_WAIT_LIMIT" "nodes 1 2 synced without node 3" without_n3; then
	for k in 1 2; do
		LEFT[$k]=$(ha_snapshot "$k")
		echo "    node $k without node 3: ${LEFT[$k]}"
	done
else
	bed_log "nodes 1 2 without node 3: $(ha_status 1 | jq -c '[.phase, .generation]') $(alua_map 1)"
	ok=0
fi
BED_CLUSTER_NAME=$OTHER bed_corosync_conf 3
grep -q "cluster_name: $OTHER\$" "$SCRATCH/n3/etc/corosync.conf" ||
	{ bed_log "node 3's corosync.conf does not name cluster $OTHER"; ok=0; }
mark
cpos=()
for k in "${NODES[@]}"; do cpos[k]=$(bed_log_lines "$k" corosync); done
ha_check "corosync (cluster_name $OTHER) starts on node 3" bed_start_corosync 3 || ok=0
if bed_poll 30 "node 3 in the ring of nodes 1 and 2" in_ring_of_3; then
	joined=1
	echo "    corosync let node 3 (cluster_name $OTHER) into the ring: 3 members on every node"
else
	joined=0
	echo "    corosync kept node 3 (cluster_name $OTHER) out of the ring: $(bed_quorum 1) on node 1," \
		"$(bed_quorum 3) on node 3"
	for k in "${NODES[@]}"; do
		tail -n +"$((cpos[k] + 1))" "$(bed_logfile "$k" corosync)" | grep -iE 'cluster|name|reject|mismatch' |
			head -n 3 | sed "s/^/    node $k corosync: /"
	done
fi
ha_check "isergw-ha starts on node 3" bed_start_ha 3 || ok=0
logged 3 "node 3's cluster name" "connected to corosync: node 3 \(n3\) of cluster '$OTHER'" || ok=0
if [ "$joined" -eq 1 ]; then
	# the agents log why they ignore each other
	for k in 1 2; do
		logged "$k" "node 3's messages" "group message from node 3 ignored: it is of cluster '$OTHER'" ||
			ok=0
		logged "$k" "node 3 left out" "the agent of node 3 is of cluster '$OTHER': left out of the group" ||
			ok=0
	done
	logged 3 "the others' messages" "ignored: it is of cluster '$BED_CLUSTER_NAME', this node is of '$OTHER'" ||
		ok=0
fi
# nodes 1 and 2 serve on, unchanged, while node 3 is in the group: checked
# once they are settled, and again a few seconds later, node 3's agent
# multicasting heartbeats meanwhile (ignored, logged at debug level after the
# first)
if [ -n "${LEFT[1]:-}" ] && bed_poll "$BED_WAIT_LIMIT" "nodes 1 2 serving as before, node 3 not" stable_without_n3; then
	rp=$(reader_pos)
	[ "$joined" -eq 0 ] || sleep 3
	ha_check "nodes 1 2 still serving as before, node 3 not" stable_without_n3 || ok=0
	reader_ok_after "$rp" || ok=0
else
	for k in "${NODES[@]}"; do
		bed_log "node $k: $(ha_status "$k" | jq -c '{phase, quorate, generation, lease_remaining_ms}') $(alua_map "$k")"
	done
	bed_log "reads through node 2 since node 3 came back: $(tail -n 2 "$READER_LOG" | tr '\n' ' ')"
	ok=0
fi
ha_verdict "$ok" cluster-name/other

# node 3 gets its name back: it rejoins, syncs, and dg3 fails back to it
ok=1
ha_check "node 3's agent stops" bed_stop_ha 3 || ok=0
ha_check "node 3's corosync stops" bed_stop_corosync 3 || ok=0
bed_corosync_conf 3
ha_check "corosync starts on node 3" bed_start_corosync 3 || ok=0
ha_check "3 members again" bed_wait_quorum 3 "${NODES[@]}" || ok=0
ha_check "isergw-ha starts on node 3" bed_start_ha 3 || ok=0
rp=$(reader_pos)
if bed_poll "$BED_WAIT_LIMIT" "every node synced, dg3 back on n3" all_synced "${NODES[@]}" &&
	bed_poll "$BED_WAIT_LIMIT" "one generation everywhere" ha_same_generation "${NODES[@]}"; then
	for k in "${NODES[@]}"; do
		m=$(alua_map "$k")
		if [ "$m" != "$(jq -c '.[2]' <<<"${HA_BASE[$k]}")" ]; then
			bed_log "node $k: ALUA map $m, was $(jq -c '.[2]' <<<"${HA_BASE[$k]}") before"
			ok=0
		fi
	done
	echo "    node 3 back: $(ha_snapshot 3)"
else
	ok=0
fi
daemons_alive "${NODES[@]}" || ok=0
reader_ok_after "$rp" || ok=0
ha_verdict "$ok" cluster-name/restored
n=$(reader_fails "$p4")
echo "reads of LUN 1 through node 2 while node 3 changed: $(($(reader_pos) - p4)), failed: $n" \
	"(the ring changed: its leases may lapse for a moment)"
[ "$n" -eq 0 ] || sed -n "$((p4 + 1)),\$p" "$READER_LOG" | grep ' FAIL' | cut -c1-160 | head -n 3

# ---------------------------------------------------------------- 5. stop, tear down

reader_stop
ha_cluster_down --all

echo "ha.badinput:"
printf '  %s\n' "${results[@]}"
[ "$fail" -eq 0 ] && echo "ha.badinput: OK" || echo "ha.badinput: FAILED (logs under $SCRATCH)"
exit "$fail"
