#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Persistent reservations from a real host through an HA cluster (runs in the
# guest: tests/vm/run-vm.sh; ctest vm.ha-persist).
#
#   run-vm.sh tests/vm/guest-ha-persist.sh --isergwd PATH --isergwctl PATH
#             --ha PATH
#
# The three-node HA bed of vm.ha-multipath (tests/ha/bed.sh with
# BED_STOR=rxe, the example cluster configuration, LUN 0 in dg1 on a file,
# the LU state carried by the agents: lu_state "cluster", the default). The
# guest's kernel initiator logs in over iSER to the three portals with the
# ALUA handler's options of docs/hosts.md, without dm-multipath: sg_persist,
# sg_raw and sg_turs go to the /dev/sdX of LUN 0 of one session each, so
# every command takes a known path (P1, P2, P3: through node 1, 2, 3).
#
#  1. REGISTER a key through every path (0xa1, 0xb2, 0xc3); RESERVE Write
#     Exclusive (type 1) through P1; READ KEYS, READ RESERVATION and READ FULL
#     STATUS give the same answer through the three nodes; a WRITE(10)
#     through P2 and P3 gets RESERVATION CONFLICT, through P1 it is GOOD,
#     a READ through P2 is GOOD.
#  2. Node 1 (the holder's path) killed: the same answers through nodes 2
#     and 3; PREEMPT through P2 (0xb2 takes 0xa1's registration and the
#     reservation); node 1 powered up again: P1's nexus reports REGISTRATIONS
#     PREEMPTED (2A/05), a write through P1 conflicts, through P2 is GOOD.
#  3. What a Windows failover cluster runs, through P1 and P2 (both nodes
#     up): CLEAR; REGISTER 0x1001 (P1) and 0x1002 (P2); RESERVE Write
#     Exclusive - Registrants Only (type 5) through P1; PREEMPT through P2
#     (P1 gets 2A/05); RELEASE through P2; REGISTER AND IGNORE EXISTING KEY
#     with key 0 through P2: no key left. Each step checked through both.
#  4. APTPL: REGISTER with APTPL through P1 and P2, RESERVE through P1; every
#     node's isergw-ha and isergwd stopped (exit 0) and started again: the
#     registrations, the reservation and PTPL_A are there through P1 and P2.
#
# Each check prints "check: ... ok" or "FAILED: ..."; the run ends with a
# summary and fails on any failed check. VP_LU_STATE=local (run-vm.sh -e)
# renders lu_state "local" for every node (each node its own reservations):
# the way to see this test fail.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$here/guest-lib.sh"
# shellcheck source=tests/ha/bed.sh
. "$src/tests/ha/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$src/tests/ha/ha_lib.sh"

export BED_STOR=rxe
BED_STOR=rxe
# the timings of vm.ha-multipath (see there): corosync's default token and a
# 4000 ms lease hold under TCG
BED_TOKEN=${VM_TOKEN_MS:-3000}
LEASE_MS=${VM_LEASE_MS:-4000}
BED_POLL_S=0.5
SCRATCH=/tmp/ha
if [ "${VP_LU_STATE:-cluster}" != cluster ]; then
	BED_GATEWAY_EXTRA=", \"lu_state\": \"$VP_LU_STATE\""
fi
ha_options 3,38 -- --prefix vp --subnet 30 --scratch "$SCRATCH" "$@"
ha_need --ha "$BED_HA" isergw-ha
for t in sg_persist sg_raw sg_turs; do
	command -v "$t" >/dev/null || bed_die "$t not found (sg3-utils)"
done


PROBE=/bin/true # guest-ha-host.sh wants one; no stall probe here
# shellcheck source=tests/vm/guest-ha-host.sh
. "$here/guest-ha-host.sh"
trap host_finish EXIT

PASSED=0
FAILED=0
FAILS=()
check() {
	local what=$1
	shift
	if "$@"; then
		PASSED=$((PASSED + 1))
		echo "check: $what: ok"
	else
		FAILED=$((FAILED + 1))
		FAILS+=("$what")
		echo "FAILED: $what"
		fail=1
	fi
}

declare -A DEV_OF=()
dev() { echo "/dev/${DEV_OF[$1]}"; }

# pr K ARGS...: sg_persist through path K, retried while the answer is NOT
# READY (a barrier, an ALUA transition: sg3_utils status 2) or a unit
# attention (6; the reservation UAs are read on purpose with ua_of, never
# here); the output on stdout, the status returned
pr() {
	local k=$1 i rc out
	shift
	for ((i = 0; i < 60; i++)); do
		out=$(timeout 30 sg_persist -n "$@" "$(dev "$k")" 2>&1)
		rc=$?
		case "$rc" in
		2 | 6) sleep 0.5 ;;
		*) break ;;
		esac
	done
	printf '%s\n' "$out"
	echo "sg_persist $* via P$k: status $rc" >>"$VM_OUT/sg.log"
	printf '%s\n' "$out" >>"$VM_OUT/sg.log"
	return "$rc"
}
pr_ok() { pr "$@" >/dev/null; }

# same_on WHAT-ARG K...: READ (-k, -r, -s) gives one answer through every K;
# prints it
_SAME=
same_on() {
	local opt=$1 k first= out rc=0
	shift
	for k in "$@"; do
		out=$(pr "$k" --in "$opt") || { echo "  P$k: sg_persist --in $opt failed: $out" >&2; rc=1; continue; }
		if [ -z "$first" ]; then
			first=$out
			_SAME=$out
		elif [ "$out" != "$first" ]; then
			echo "  P$k's answer to $opt differs:" >&2
			diff <(printf '%s\n' "$first") <(printf '%s\n' "$out") | sed 's/^/    /' >&2
			rc=1
		fi
	done
	return "$rc"
}

# keys_are K WANT...: READ KEYS through K lists exactly WANT (in any order)
keys_are() {
	local k=$1 out got want
	shift
	out=$(pr "$k" --in --read-keys) || return 1
	got=$(grep -oE '0x[0-9a-f]+' <<<"$(sed -n '/registered reservation key/,$p' <<<"$out" | tail -n +2)" | sort | tr '\n' ' ')
	want=
	[ $# -eq 0 ] || want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	[ "$got" = "$want" ] && return 0
	echo "  P$k: keys '$got', expected '$want'" >&2
	return 1
}

# resv_is K KEY TYPE-TEXT: READ RESERVATION through K shows KEY holding
# TYPE-TEXT ("none": no reservation)
resv_is() {
	local k=$1 key=$2 type=${3:-} out
	out=$(pr "$k" --in --read-reservation) || return 1
	if [ "$key" = none ]; then
		grep -q 'there is NO reservation' <<<"$out" && return 0
	else
		grep -q "Key=$key\$" <<<"$out" && grep -qi "type: $type" <<<"$out" && return 0
	fi
	echo "  P$k: reservation: $(tr '\n' ' ' <<<"$out"), expected $key $type" >&2
	return 1
}

BLK=$SCRATCH/block
# write_is K WANT: WRITE(10) of one block (LBA 16) through K: WANT "good" or
# "conflict"
write_is() {
	local k=$1 want=$2 out rc i
	for ((i = 0; i < 60; i++)); do
		out=$(timeout 30 sg_raw -s 512 -i "$BLK" "$(dev "$k")" 2a 00 00 00 00 10 00 00 01 00 2>&1)
		rc=$?
		grep -qiE 'Not Ready|Unit Attention' <<<"$out" || break
		sleep 0.5
	done
	echo "WRITE(10) via P$k: status $rc: $(tr '\n' ' ' <<<"$out")" >>"$VM_OUT/sg.log"
	case "$want" in
	good) [ "$rc" -eq 0 ] && grep -q 'SCSI Status: Good' <<<"$out" && return 0 ;;
	conflict) grep -qi 'SCSI Status: Reservation Conflict' <<<"$out" && return 0 ;;
	esac
	echo "  P$k: WRITE(10): status $rc, $(grep -i 'status' <<<"$out" | tr '\n' ' '), expected $want" >&2
	return 1
}

read_good() {
	local out
	out=$(timeout 30 sg_raw -r 512 "$(dev "$1")" 28 00 00 00 00 10 00 00 01 00 2>&1)
	grep -q 'SCSI Status: Good' <<<"$out" && return 0
	echo "  P$1: READ(10): $(grep -i status <<<"$out")" >&2
	return 1
}

# ua_has K TEXT: TEST UNIT READY through K, repeated until GOOD, reported a
# unit attention matching TEXT (sg3_utils' wording, e.g. "Registrations
# preempted"); the kernel's ALUA handler takes 2A/06 itself
ua_has() {
	local k=$1 text=$2 i out rc seen=
	for ((i = 0; i < 40; i++)); do
		out=$(timeout 30 sg_turs -v "$(dev "$k")" 2>&1)
		rc=$?
		echo "TUR via P$k: status $rc: $(tr '\n' ' ' <<<"$out")" >>"$VM_OUT/sg.log"
		seen+=$out$'\n'
		[ "$rc" -eq 0 ] && break
		sleep 0.3
	done
	grep -qi "$text" <<<"$seen" && return 0
	echo "  P$k: no '$text' unit attention; TUR said: $(grep -iE 'attention|sense|status' <<<"$seen" | sort -u | tr '\n' ' ')" >&2
	return 1
}

# _logged_in K: path K's session is LOGGED_IN and its disk answers a TUR
_logged_in() {
	local s
	for s in /sys/class/iscsi_session/session*; do
		[ "$(readlink -e "$s/device/target"*/*/block/"${DEV_OF[$1]}" 2>/dev/null)" ] || continue
		[ "$(cat "$s/state")" = LOGGED_IN ] || return 1
		return 0
	done
	return 1
}

wait_paths() {
	local k
	for k in "$@"; do
		bed_poll 120 "path P$k logged in again" _logged_in "$k" || return 1
	done
}

# ---------------------------------------------------------------- set-up

mkdir -p "$SCRATCH"
head -c 512 /dev/urandom >"$BLK"
# Not docs/hosts.md's multipath settings (NOP-Out 1 s / 2 s, replacement
# 2 s): they are for moving I/O to another path quickly, and here no path is
# ever given up; in a slow emulated guest a 2 s NOP timeout broke sessions
# in the middle of a LUN scan. Tolerant ones instead: a dead node's session
# just waits for the node to come back.
VM_ISCSI_SETTINGS=(node.session.timeo.replacement_timeout=120
	'node.conn[0].timeo.noop_out_interval=5' 'node.conn[0].timeo.noop_out_timeout=30')
for kv in $(hosts_alua_opts); do
	echo "${kv#*=}" >"/sys/module/scsi_dh_alua/parameters/${kv%%=*}" || bed_die "scsi_dh_alua ${kv%%=*}"
done
T0=$SECONDS
ha_cluster_up --lease-ms "$LEASE_MS" || bed_die "the cluster did not come up"
for k in "${HA_NODES[@]}"; do
	vm_iscsi_login "$BED_HA_IQN" "$(bed_portal "$k")" iser 0 || bed_die "login to node $k"
	[ "$(vm_iscsi_driver_of "$VM_SESSION")" = iscsi_iser ] || bed_die "node $k: not over iSER"
	DEV_OF[$k]=${VM_DEV#/dev/}
done
vm_log "LUN 0: P1 $(dev 1), P2 $(dev 2), P3 $(dev 3); lu_state ${VP_LU_STATE:-cluster}"
for k in 1 2 3; do ua_has "$k" . >/dev/null 2>&1; done # the power-on UAs, if any

# ---------------------------------------------------------------- 1. reserve

echo "== 1. register on every path, Write Exclusive through node 1"
check "no registration at the start (P1)" keys_are 1
check "REGISTER 0xa1 through P1" pr_ok 1 --out --register --param-sark=0xa1
check "REGISTER 0xb2 through P2" pr_ok 2 --out --register --param-sark=0xb2
check "REGISTER 0xc3 through P3" pr_ok 3 --out --register --param-sark=0xc3
check "RESERVE Write Exclusive (type 1) with 0xa1 through P1" \
	pr_ok 1 --out --reserve --param-rk=0xa1 --prout-type=1
check "READ KEYS: 0xa1 0xb2 0xc3 through P2" keys_are 2 0xa1 0xb2 0xc3
check "READ KEYS identical through nodes 1, 2, 3" same_on --read-keys 1 2 3
check "READ RESERVATION identical through nodes 1, 2, 3" same_on --read-reservation 1 2 3
RESV_BEFORE=$_SAME
check "READ FULL STATUS identical through nodes 1, 2, 3" same_on --read-full-status 1 2 3
FULL_BEFORE=$_SAME
printf '%s\n' "$FULL_BEFORE" | sed 's/^/    /'
check "READ RESERVATION: 0xa1 holds Write Exclusive (through P3)" resv_is 3 0xa1 'Write Exclusive$'
check "WRITE(10) through P2 (registered, not the holder): RESERVATION CONFLICT" write_is 2 conflict
check "WRITE(10) through P3: RESERVATION CONFLICT" write_is 3 conflict
check "WRITE(10) through P1 (the holder): GOOD" write_is 1 good
check "READ(10) through P2: GOOD (Write Exclusive lets others read)" read_good 2

# ---------------------------------------------------------------- 2. node 1 dies

echo "== 2. node 1 killed: the reservation stays; PREEMPT through node 2"
check "node 1 killed" bed_kill_node 1
check "dg1 off node 1 on nodes 2 and 3" eval 'wait_owner "dg1 off node 1" "!1" 2 3 >/dev/null'
check "READ RESERVATION through nodes 2, 3 as before the death" \
	eval 'same_on --read-reservation 2 3 && [ "$_SAME" = "$RESV_BEFORE" ]'
check "READ FULL STATUS through nodes 2, 3 as before the death" \
	eval 'same_on --read-full-status 2 3 && [ "$_SAME" = "$FULL_BEFORE" ]'
check "WRITE(10) through P2 still conflicts" write_is 2 conflict
check "PREEMPT 0xa1 with 0xb2 (Write Exclusive) through P2" \
	pr_ok 2 --out --preempt --param-rk=0xb2 --param-sark=0xa1 --prout-type=1
check "READ KEYS: 0xb2 0xc3 through P2" keys_are 2 0xb2 0xc3
check "READ KEYS identical through nodes 2, 3" same_on --read-keys 2 3
check "READ RESERVATION: 0xb2 holds Write Exclusive (through P3)" resv_is 3 0xb2 'Write Exclusive$'
check "WRITE(10) through P2 (now the holder): GOOD" write_is 2 good
check "WRITE(10) through P3: RESERVATION CONFLICT" write_is 3 conflict
check "node 1 powered up again" bed_restart_node 1
check "node 1 back in the ring" eval 'bed_wait_quorum 3 "${HA_NODES[@]}" >/dev/null'
check "dg1 back on node 1 everywhere" eval 'wait_owner "dg1 back on node 1" 1 1 2 3 >/dev/null'
check "every node settled and serving" ha_wait_settled "settled" --serving "$HA_OWNERS" 1 2 3
check "P1's session logged in again" wait_paths 1
check "P1's nexus (preempted): unit attention REGISTRATIONS PREEMPTED (2A/05)" \
	ua_has 1 'Registrations preempted'
check "READ KEYS identical through nodes 1, 2, 3 after node 1's return" same_on --read-keys 1 2 3
check "READ FULL STATUS identical through nodes 1, 2, 3" same_on --read-full-status 1 2 3
check "READ RESERVATION: 0xb2 holds it through P1" resv_is 1 0xb2 'Write Exclusive$'
check "WRITE(10) through P1 (unregistered now): RESERVATION CONFLICT" write_is 1 conflict

# ---------------------------------------------------------------- 3. Windows

echo "== 3. a Windows failover cluster's sequence through nodes 1 and 2 (WE-RO)"
check "CLEAR with 0xb2 through P2" pr_ok 2 --out --clear --param-rk=0xb2
check "no key left (P1)" keys_are 1
check "no key left (P2)" keys_are 2
check "P3's nexus (registration cleared): RESERVATIONS PREEMPTED (2A/03)" \
	ua_has 3 'Reservations preempted'
check "REGISTER 0x1001 through P1" pr_ok 1 --out --register --param-sark=0x1001
check "REGISTER 0x1002 through P2" pr_ok 2 --out --register --param-sark=0x1002
check "READ KEYS: 0x1001 0x1002 through P1" keys_are 1 0x1001 0x1002
check "READ KEYS identical through nodes 1, 2" same_on --read-keys 1 2
check "RESERVE WE-RO (type 5) with 0x1001 through P1" \
	pr_ok 1 --out --reserve --param-rk=0x1001 --prout-type=5
check "READ RESERVATION: 0x1001 WE-RO through P2" resv_is 2 0x1001 'Write Exclusive, registrants only'
check "READ RESERVATION identical through nodes 1, 2" same_on --read-reservation 1 2
check "WRITE(10) through P2 (a registrant, WE-RO): GOOD" write_is 2 good
check "PREEMPT 0x1001 with 0x1002 (WE-RO) through P2" \
	pr_ok 2 --out --preempt --param-rk=0x1002 --param-sark=0x1001 --prout-type=5
check "P1's nexus (preempted, node 1 up): REGISTRATIONS PREEMPTED (2A/05)" \
	ua_has 1 'Registrations preempted'
check "READ KEYS: 0x1002 through P1" keys_are 1 0x1002
check "READ RESERVATION: 0x1002 WE-RO through P1" resv_is 1 0x1002 'Write Exclusive, registrants only'
check "READ FULL STATUS identical through nodes 1, 2" same_on --read-full-status 1 2
check "WRITE(10) through P1 (no longer registered): RESERVATION CONFLICT" write_is 1 conflict
check "RELEASE with 0x1002 through P2" pr_ok 2 --out --release --param-rk=0x1002 --prout-type=5
check "no reservation through P1" resv_is 1 none
check "no reservation through P2" resv_is 2 none
check "REGISTER AND IGNORE EXISTING KEY with key 0 through P2" \
	pr_ok 2 --out --register-ignore --param-sark=0
check "no key left through P1" keys_are 1
check "no key left through P2" keys_are 2
check "WRITE(10) through P1: GOOD (nothing reserved)" write_is 1 good

# ---------------------------------------------------------------- 4. APTPL

echo "== 4. APTPL across a restart of every node's isergw-ha and isergwd"
check "REGISTER 0xa7 with APTPL through P1" pr_ok 1 --out --register --param-sark=0xa7 --param-aptpl
check "REGISTER 0xb7 with APTPL through P2" pr_ok 2 --out --register --param-sark=0xb7 --param-aptpl
check "RESERVE Write Exclusive with 0xa7 through P1" pr_ok 1 --out --reserve --param-rk=0xa7 --prout-type=1
check "READ FULL STATUS identical through nodes 1, 2" same_on --read-full-status 1 2
APTPL_BEFORE=$_SAME
for k in "${HA_NODES[@]}"; do
	check "node $k: isergw-ha stops with status 0" bed_stop_ha "$k"
	check "node $k: isergwd stops with status 0" bed_stop_isergwd "$k"
done
for k in "${HA_NODES[@]}"; do
	check "node $k: isergwd started again" bed_start_isergwd "$k"
	check "node $k: isergw-ha started again" bed_start_ha "$k" --lease-ms "$LEASE_MS"
done
check "every node settled and serving after the restart" \
	ha_wait_settled "settled after the restart" --serving "$HA_OWNERS" 1 2 3
check "P1's and P2's sessions logged in again" wait_paths 1 2
check "READ KEYS after the restart: 0xa7 0xb7 through P1" keys_are 1 0xa7 0xb7
check "READ KEYS identical through nodes 1, 2" same_on --read-keys 1 2
check "READ RESERVATION: 0xa7 holds Write Exclusive through P2" resv_is 2 0xa7 'Write Exclusive$'
check "READ FULL STATUS through nodes 1, 2 as before the restart" \
	eval 'same_on --read-full-status 1 2 && [ "$_SAME" = "$APTPL_BEFORE" ]'
check "REPORT CAPABILITIES through P2: PTPL_A set" \
	eval 'pr 2 --in --report-capabilities | grep -q "Persist Through Power Loss Active(PTPL_A): 1"'
check "WRITE(10) through P2: RESERVATION CONFLICT" write_is 2 conflict
check "CLEAR with 0xa7 through P1" pr_ok 1 --out --clear --param-rk=0xa7

# ---------------------------------------------------------------- the end

for k in "${HA_NODES[@]}"; do
	check "logout from node $k" vm_iscsi_logout "$BED_HA_IQN" "$(bed_portal "$k")"
done
ha_cluster_down --all
echo "vm.ha-persist: lu_state ${VP_LU_STATE:-cluster}; $PASSED checks passed, $FAILED failed, $((SECONDS - T0)) s"
for f in "${FAILS[@]}"; do echo "vm.ha-persist: FAILED: $f"; done
[ "$fail" -eq 0 ] && echo "vm.ha-persist: OK" || echo "vm.ha-persist: FAILED (logs in $VM_OUT)"
exit "$fail"
