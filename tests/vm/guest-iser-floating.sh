#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# iser:// portals that wait for their address or their RDMA device (runs in
# the guest: tests/vm/run-vm.sh; ctest vm.iser-floating).
#
#   run-vm.sh tests/vm/guest-iser-floating.sh --daemon PATH/isergwd --ctl PATH/isergwctl
#
# 1. isergwd starts with iser://10.0.2.50:3260 (the address is not on eth0
#    yet; rxe0 is) and iser://10.0.9.1:3262 (the address is on a veth that
#    has no RDMA device): it starts (before, the second made the start fail:
#    "cannot assign requested address"), both portals "waiting";
# 2. 10.0.2.50 added to eth0: the first listens (rtnetlink: well within 2 s),
#    libiscsi's iSER initiator (iscsi-inq) answers through it;
# 3. Soft-RoCE added on the veth (rdma link add): the second listens within
#    the 2 s backoff, iscsi-inq over iSER answers;
# 4. 10.0.2.50 removed: the first waits again and no longer answers; added
#    again: it listens and answers;
# 5. SIGTERM: exit 0.
# Ends with "iser-floating: N passed, M failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$here/guest-lib.sh"

DAEMON='' CTL=''
while [ $# -gt 0 ]; do
	case "$1" in
	--daemon) DAEMON=$2; shift 2 ;;
	--ctl) CTL=$2; shift 2 ;;
	*) vm_die "unknown option $1" ;;
	esac
done
[ -x "$DAEMON" ] || vm_die "--daemon PATH required"
[ -x "$CTL" ] || vm_die "--ctl PATH required"

IQN=iqn.2026-11.org.isergw:vm-floating
FP=10.0.2.50
DEV_ADDR=10.0.9.1
U1=iser://$FP:3260
U2=iser://$DEV_ADDR:3262
passed=0 failed=0
ok() { vm_log "PASS: $*"; passed=$((passed + 1)); }
bad() { vm_log "FAIL: $*"; failed=$((failed + 1)); }
state() { "$CTL" -s /tmp/isergw-state/ctl.sock --json status 2>/dev/null |
	jq -r --arg u "$1" '.portal_states[] | select(.url == $u) | .state'; }
is_state() { [ "$(state "$1")" = "$2" ]; }
inq() { vm_iscsi_inq "$1/$IQN/0" >/dev/null 2>&1; }

ip link add fl0 type veth peer name fl1 || vm_die "veth"
ip link set fl0 up
ip link set fl1 up
ip addr add "$DEV_ADDR/24" dev fl0 || vm_die "address on fl0"

vm_mkfile /tmp/floating.img 64M
# the waiting portals go as extra arguments: vm_isergwd_start waits for the first one only
vm_isergwd_start "$DAEMON" "$IQN" /tmp/floating.img 64M "tcp://$VM_ADDR:3261" -- \
	--portal "$U1" --portal "$U2" || vm_die "isergwd did not start"
if is_state "$U1" waiting && is_state "$U2" waiting; then
	ok "start: both iser:// portals waiting ($("$CTL" -s /tmp/isergw-state/ctl.sock status | grep '^portal' | tr '\n' ';'))"
else
	bad "start: portal states $(state "$U1") / $(state "$U2")"
fi

t0=$(vm_now)
ip addr add "$FP/24" dev eth0
if vm_wait_for 10 is_state "$U1" listening; then
	ok "$FP added: $U1 listening after $(vm_since "$t0") s"
else
	bad "$FP added: $U1 not listening"
fi
if vm_wait_for 30 inq "$U1"; then ok "iscsi-inq over iSER through $FP"; else bad "iscsi-inq through $U1"; fi

t0=$(vm_now)
rdma link add rxe9 type rxe netdev fl0 || bad "rdma link add rxe9"
if vm_wait_for 10 is_state "$U2" listening; then
	ok "RDMA device on fl0: $U2 listening after $(vm_since "$t0") s"
else
	bad "RDMA device on fl0: $U2 not listening"
fi
if vm_wait_for 30 inq "$U2"; then ok "iscsi-inq over iSER through $DEV_ADDR"; else bad "iscsi-inq through $U2"; fi

ip addr del "$FP/24" dev eth0
if vm_wait_for 10 is_state "$U1" waiting; then ok "$FP removed: $U1 waiting"; else bad "$FP removed: $U1 still $(state "$U1")"; fi
if inq "$U1"; then bad "served through $FP after its removal"; else ok "nothing served through $FP after its removal"; fi
ip addr add "$FP/24" dev eth0
if vm_wait_for 10 is_state "$U1" listening && vm_wait_for 30 inq "$U1"; then
	ok "$FP added again: serving"
else
	bad "$FP added again: not serving"
fi

if vm_isergwd_stop "$VM_ISERGWD_PID"; then ok "isergwd exits 0 on SIGTERM"; else bad "isergwd stop"; fi
rdma link delete rxe9 2>/dev/null
vm_log "iser-floating: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
