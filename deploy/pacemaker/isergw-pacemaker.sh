#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# isergw-pacemaker.sh: the pacemaker configuration of an isergw cluster, as
# crm (crmsh) commands. Run it once, on any one node, after corosync,
# pacemaker, isergwd and isergw-ha run on every node (docs/pacemaker.md):
#
#   isergw-pacemaker.sh --floating 10.0.2.50/24@eth1 [--floating ...] \
#       --fence-ipmi gw1,10.9.0.1,admin,/etc/isergw/ipmi-gw1.pw \
#       --fence-ipmi gw2,... --fence-ipmi gw3,...
#
# What it configures:
#   - fencing on (stonith-enabled=true), no-quorum-policy=stop,
#     resource-stickiness 100 (a floating address stays where it is);
#   - one fence_ipmilan device per node (--fence-ipmi NODE,IPMI_ADDR,USER,
#     PASSWORD_FILE; lanplus; the password read from the file, never on a
#     command line), each kept off the node it fences;
#   - ocf:isergw:gateway as a clone: on every node it sets the transient
#     attribute isergw-ready to 1 while the node's isergw-ha is synchronised
#     in a quorate partition and drives its isergwd;
#   - per floating address (--floating ADDR/PREFIX@NIC): a group of
#     ocf:isergw:portblock (block) -> IPaddr2 -> ocf:isergw:portblock
#     (unblock; Debian 12's ocf:heartbeat:portblock never unblocks with its
#     iptables, deploy/ocf/portblock says why) on the portal ports
#     (--ports, default 3260), placed only where isergw-ready is 1: while the
#     address comes up its ports drop packets (hosts retry) instead of
#     answering resets, then isergwd (which listens as soon as the address
#     exists) serves it. The pair brackets the address on one rule: the
#     block inserts it, the unblock removes it (and puts it back when the
#     group stops, before the address goes). Only the unblock is monitored
#     (the rule must stay away); the block has nothing left to watch;
#   - the alert agent that tells isergw-ha when a node was fenced
#     (--alert PATH, default /usr/lib/isergw/isergw-fence-alert; --no-alert).
# Each floating address must also be a floating portal of the cluster
# configuration (docs/ha-config.md, floating_portals), with the same port.
#
# Options:
#   --print           print the crm configuration instead of loading it
#   --crm PATH        crmsh's crm (default: crm)
#   --isergwctl PATH  passed to ocf:isergw:gateway (default: isergwctl on PATH)
#   --ports LIST      portal ports to block/unblock, comma-separated (3260)
#   --fence-test FILE (TEST BED ONLY) one stonith:fence_isergw_test device
#                     for all nodes instead of IPMI; never on real machines
# Exit: 0 loaded (or printed), 1 crm refused it, 2 bad usage.
set -eu

usage() { sed -n '3,40p' "$0"; }
die() { echo "isergw-pacemaker.sh: $*" >&2; exit 2; }

print=0 crm=crm ctl='' ports=3260 alert=/usr/lib/isergw/isergw-fence-alert fence_test=''
floating='' ipmi=''
while [ $# -gt 0 ]; do
	case "$1" in
	--floating) [ $# -ge 2 ] || die "$1 wants ADDR/PREFIX@NIC"; floating="$floating $2"; shift 2 ;;
	--fence-ipmi) [ $# -ge 2 ] || die "$1 wants NODE,ADDR,USER,PASSWORD_FILE"; ipmi="$ipmi $2"; shift 2 ;;
	--fence-test) [ $# -ge 2 ] || die "$1 wants a nodes file"; fence_test=$2; shift 2 ;;
	--ports) [ $# -ge 2 ] || die "$1 wants a list"; ports=$2; shift 2 ;;
	--isergwctl) [ $# -ge 2 ] || die "$1 wants a path"; ctl=$2; shift 2 ;;
	--crm) [ $# -ge 2 ] || die "$1 wants a path"; crm=$2; shift 2 ;;
	--alert) [ $# -ge 2 ] || die "$1 wants a path"; alert=$2; shift 2 ;;
	--no-alert) alert=; shift ;;
	--print) print=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown option $1 (--help)" ;;
	esac
done
[ -n "$floating" ] || die "no --floating address"
[ -n "$ipmi" ] || [ -n "$fence_test" ] || die "no fencing: --fence-ipmi for every node (pacemaker must be able to fence)"
case "$ports" in '' | *[!0-9,]*) die "--ports '$ports': port numbers separated by commas" ;; esac

conf() {
	echo "property stonith-enabled=true no-quorum-policy=stop"
	echo "rsc_defaults resource-stickiness=100"
	if [ -n "$fence_test" ]; then
		echo "# TEST BED ONLY: kills a network-namespace node's processes"
		echo "primitive isergw-fence-test stonith:fence_isergw_test params nodes_file=\"$fence_test\" \\"
		echo "    pcmk_host_check=dynamic-list op monitor interval=60s"
	fi
	for spec in $ipmi; do
		# NODE,ADDR,USER,PASSWORD_FILE
		old_ifs=$IFS
		IFS=,
		# shellcheck disable=SC2086 # split on commas
		set -- $spec
		IFS=$old_ifs
		[ $# -eq 4 ] || die "--fence-ipmi '$spec': NODE,IPMI_ADDR,USER,PASSWORD_FILE"
		echo "primitive isergw-fence-$1 stonith:fence_ipmilan params ip=$2 username=$3 \\"
		echo "    password_script=\"cat $4\" lanplus=1 pcmk_host_list=$1 op monitor interval=60s"
		echo "location isergw-fence-$1-elsewhere isergw-fence-$1 -inf: $1"
	done
	params=
	[ -z "$ctl" ] || params=" params isergwctl=\"$ctl\""
	echo "primitive isergw-gw ocf:isergw:gateway$params \\"
	echo "    op monitor interval=2s timeout=20s"
	echo "clone isergw-gw-clone isergw-gw meta interleave=true"
	i=0
	for spec in $floating; do
		i=$((i + 1))
		addr=${spec%%/*} rest=${spec#*/}
		prefix=${rest%%@*} nic=${rest#*@}
		case "$spec" in */*@*) ;; *) die "--floating '$spec': ADDR/PREFIX@NIC" ;; esac
		if [ -z "$addr" ] || [ -z "$prefix" ] || [ -z "$nic" ]; then die "--floating '$spec': ADDR/PREFIX@NIC"; fi
		fp=isergw-fp$i
		# the block resource has no recurring monitor: once the group's
		# unblock removed its rule there is nothing left for it to watch
		echo "primitive $fp-block ocf:isergw:portblock params ip=$addr portno=$ports protocol=tcp action=block"
		echo "primitive $fp-ip ocf:heartbeat:IPaddr2 params ip=$addr cidr_netmask=$prefix nic=$nic \\"
		echo "    op monitor interval=5s timeout=20s"
		echo "primitive $fp-unblock ocf:isergw:portblock params ip=$addr portno=$ports protocol=tcp action=unblock \\"
		echo "    op monitor interval=10s timeout=20s"
		echo "group $fp $fp-block $fp-ip $fp-unblock"
		echo "location $fp-where-serving $fp rule -inf: not_defined isergw-ready or isergw-ready ne 1"
		echo "colocation $fp-with-gateway inf: $fp isergw-gw-clone"
	done
	[ -z "$alert" ] || echo "alert isergw-fence \"$alert\""
}

if [ "$print" -eq 1 ]; then
	conf
	exit 0
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
conf >"$tmp"
if ! "$crm" configure load update "$tmp"; then
	echo "isergw-pacemaker.sh: crm refused the configuration (above); it was:" >&2
	cat "$tmp" >&2
	exit 1
fi
