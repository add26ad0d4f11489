#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Two isergwd "gateway nodes" serving the same backing files as one SCSI
# target with two target ports (SPC-4 multi-port logical units): node 1 on
# ADDR1:PORT (relative target port 1, target port group 1), node 2 on
# ADDR2:PORT (port 2, group 2), the same target IQN and LUN files, and a
# shared_state_dir, so reservations, resets and their unit attentions are
# the LU's, whichever node a command arrives at.
#
#   cluster.sh --daemon PATH --probe PATH [--scratch DIR] [--addr1 A] [--addr2 A] [--addr3 A]
#              [--port P] [--tests FAMILY[.SUITE[.TEST]]] [--allow-fail N]
#
# 1. cluster_probe through each node, for LUN 0 (device group dg1, owned by
#    group 1) and LUN 1 (dg2, owned by group 2): VPD 80h and the NAA of VPD
#    83h identical on both nodes, relative port and group of VPD 83h those of
#    the node, the target port name with the node's TPGT (its relative port
#    id: IQN,t,0x0001 and IQN,t,0x0002), MULTIP set in the standard INQUIRY,
#    and REPORT TARGET PORT GROUPS listing both groups with the owner
#    Active/Optimized (PREF) and the other Active/Non-optimized.
# 2. iscsi-test-cu --dataloss -i INIT1 -I INIT2 -t TESTS URL1 URL2 (LUN 0
#    through node 1 and node 2): prints
#    "cluster-conformance: total N, passed P (real passes R), failed F, skipped S".
# 3. node 2 is killed (SIGKILL) and started again: it must find node 1 alive
#    (no power on of the LUs) and answer the probe as before.
# 4. SIGHUP reloads: node 1 gets a second portal ADDR3:PORT (relative port 3,
#    group 1) and both nodes' port_groups list it: REPORT TARGET PORT GROUPS
#    through either node shows group 1 with ports 1,3; then it is removed
#    again: port 3 must be gone from both answers.
# Exits 1 on any failure beyond --allow-fail (0), a probe mismatch, a crash,
# or a node not exiting 0 on SIGTERM (sanitizer reports included).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

ADDR1=127.0.0.70
ADDR2=127.0.0.71
ADDR3=127.0.0.72
PORT=13470
TESTS=ALL
ALLOW_FAIL=0
PROBE=
SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--addr1) ADDR1=$2; shift 2 ;;
	--addr2) ADDR2=$2; shift 2 ;;
	--addr3) ADDR3=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--tests) TESTS=$2; shift 2 ;;
	--allow-fail) ALLOW_FAIL=$2; shift 2 ;;
	--probe) PROBE=$2; shift 2 ;;
	-h|--help) sed -n '3,31p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
only_isergw "the cluster test (two isergwd sharing LU state)"
command -v iscsi-test-cu >/dev/null || die "iscsi-test-cu not found (apt-get install libiscsi-bin)"
[ -x "$PROBE" ] || die "--probe PATH (the cluster_probe client) is required"

IQN=iqn.2026-11.org.isergw:cluster
INIT1=iqn.2026-11.org.isergw:init1
INIT2=iqn.2026-11.org.isergw:init2
TLOG=$SCRATCH/iscsi-test-cu.log
SHARED=$SCRATCH/shared
rm -rf "$SHARED" "$SCRATCH"/node1 "$SCRATCH"/node2 "$TLOG"
mkdir -p "$SCRATCH"/node1 "$SCRATCH"/node2
for f in lun0.img lun1.img; do
	rm -f "$SCRATCH/$f"
	truncate -s 256M "$SCRATCH/$f" || die "cannot create $SCRATCH/$f"
done

# write_config N ADDR REL TPG [EXTRA-PORTAL-JSON GROUP1-PORTS]
write_config() {
	local extra=${5:-} g1=${6:-1}
	cat >"$SCRATCH/node$1.json" <<-EOF
	{
	  "log_level": "${ISERGW_LOG_LEVEL:-info}",
	  "state_dir": "$SCRATCH/node$1",
	  "ctl_socket": "$SCRATCH/node$1/ctl.sock",
	  "shared_state_dir": "$SHARED",
	  "portals": [ { "url": "tcp://$2:$PORT", "rel_port_id": $3, "tpg_id": $4 }$extra ],
	  "port_groups": [ { "tpg_id": 1, "rel_port_ids": [ $g1 ] },
	                   { "tpg_id": 2, "rel_port_ids": [ 2 ] } ],
	  "device_groups": [ { "name": "dg1", "owner_tpg_id": 1 },
	                     { "name": "dg2", "owner_tpg_id": 2 } ],
	  "targets": [ { "iqn": "$IQN", "luns": [
	    { "lun": 0, "path": "$SCRATCH/lun0.img", "device_group": "dg1" },
	    { "lun": 1, "path": "$SCRATCH/lun1.img", "device_group": "dg2" } ] } ]
	}
	EOF
}
write_config 1 "$ADDR1" 1 1
write_config 2 "$ADDR2" 2 2

config_start node1 "$SCRATCH/node1.json" "$ADDR1:$PORT" || die "node 1 did not start"
pid1=$T_PID log1=$T_LOG
config_start node2 "$SCRATCH/node2.json" "$ADDR2:$PORT" || die "node 2 did not start"
pid2=$T_PID log2=$T_LOG

fail=0

# probe NODE ADDR LUN: the probe's output in $SCRATCH/probe-NODE-LUN.txt
probe() {
	local out=$SCRATCH/probe-$1-$3.txt
	if ! "$PROBE" --initiator "iqn.2026-11.org.isergw:probe" "iscsi://$2:$PORT/$IQN/$3" >"$out" 2>"$out.err"; then
		log "cluster_probe through node $1, LUN $3 failed: $(cat "$out.err")"
		fail=1
		return 1
	fi
}

# expect FILE LINE: FILE must hold LINE exactly
expect() {
	if ! grep -qxF -- "$2" "$1"; then
		log "$(basename "$1"): expected \"$2\"; got: $(paste -sd'|' "$1")"
		fail=1
	fi
}

# check_probes [GROUP1-PORTS]: both LUNs through both nodes
check_probes() {
	local lun node owner other g1=${1:-1} ports
	for lun in 0 1; do
		probe 1 "$ADDR1" "$lun" || continue
		probe 2 "$ADDR2" "$lun" || continue
		local p1=$SCRATCH/probe-1-$lun.txt p2=$SCRATCH/probe-2-$lun.txt
		# the same LU through both ports
		if [ "$(grep -E '^(serial|naa) ' "$p1")" != "$(grep -E '^(serial|naa) ' "$p2")" ] ||
			[ "$(grep -cE '^(serial|naa) ' "$p1")" -ne 2 ]; then
			log "LUN $lun: serial/NAA differ between the nodes or are missing:"
			paste "$p1" "$p2" >&2
			fail=1
		fi
		expect "$p1" "rel_port 1"
		expect "$p1" "tpg 1"
		expect "$p2" "rel_port 2"
		expect "$p2" "tpg 2"
		# two target ports: two names (the TPGT follows the relative port), MULTIP set
		expect "$p1" "port_name $IQN,t,0x0001"
		expect "$p2" "port_name $IQN,t,0x0002"
		expect "$p1" "multip 1"
		expect "$p2" "multip 1"
		# dg1 (LUN 0) is owned by group 1, dg2 (LUN 1) by group 2
		if [ "$lun" -eq 0 ]; then owner=1 other=2; else owner=2 other=1; fi
		for node in 1 2; do
			local p=$SCRATCH/probe-$node-$lun.txt
			ports=$owner; [ "$owner" -eq 1 ] && ports=$g1
			expect "$p" "group $owner state 0 pref 1 ports $ports"
			ports=$other; [ "$other" -eq 1 ] && ports=$g1
			expect "$p" "group $other state 1 pref 0 ports $ports"
			if [ "$(grep -c '^group ' "$p")" -ne 2 ]; then
				log "$(basename "$p"): expected exactly two target port groups"
				fail=1
			fi
		done
	done
}

check_probes
[ "$fail" -eq 0 ] && log "probes: identity and ALUA groups as configured through both nodes"

url1=iscsi://$ADDR1:$PORT/$IQN/0
url2=iscsi://$ADDR2:$PORT/$IQN/0
tcu_run "$TLOG" "$SUITE_TIMEOUT" "$pid1 $pid2" --dataloss -i "$INIT1" -I "$INIT2" -t "$TESTS" \
	"$url1" "$url2" || fail=1
tcu_report cluster-conformance "$TLOG" "$SCRATCH/results.txt" "$ALLOW_FAIL" || fail=1

# node 2 crashes and comes back while node 1 runs: not a power on
if target_alive "$pid2"; then
	target_kill9 "$pid2"
	config_start node2-restart "$SCRATCH/node2.json" "$ADDR2:$PORT" || die "node 2 did not restart"
	pid2=$T_PID log2=$T_LOG
	if grep -q 'power on' "$log2"; then
		log "node 2 restarted while node 1 ran, yet powered the LUs on: see $log2"
		fail=1
	fi
	check_probes
fi

# hup PID LOG ERE: SIGHUP, then wait for one more line of LOG matching ERE
hup() {
	local before deadline=$((SECONDS + 15))
	before=$(count_log "$2" "$3")
	kill -HUP "$1"
	while [ "$SECONDS" -lt "$deadline" ]; do
		[ "$(count_log "$2" "$3")" -gt "$before" ] && return 0
		sleep 0.1
	done
	log "no \"$3\" in $2 after SIGHUP"
	fail=1
	return 1
}

# a portal (relative port 3, group 1) added to node 1, then removed
if target_alive "$pid1" && target_alive "$pid2"; then
	port3=", { \"url\": \"tcp://$ADDR3:$PORT\", \"rel_port_id\": 3, \"tpg_id\": 1 }"
	write_config 1 "$ADDR1" 1 1 "$port3" "1, 3"
	write_config 2 "$ADDR2" 2 2 "" "1, 3"
	hup "$pid1" "$log1" 'configuration reloaded: 1 target\(s\), 2 portal\(s\)' &&
		hup "$pid2" "$log2" 'configuration reloaded: 1 target\(s\), 1 portal\(s\)' &&
		check_probes "1,3"
	write_config 1 "$ADDR1" 1 1
	write_config 2 "$ADDR2" 2 2
	hup "$pid1" "$log1" 'configuration reloaded: 1 target\(s\), 1 portal\(s\)' &&
		hup "$pid2" "$log2" 'configuration reloaded: 1 target\(s\), 1 portal\(s\)' &&
		check_probes
	[ "$fail" -eq 0 ] && log "reloads: port 3 listed while configured, forgotten once removed"
fi

target_finish "node 1" "$pid1" "$log1" || fail=1
target_finish "node 2" "$pid2" "$log2" || fail=1
log "suite log: $TLOG, node logs: $log1 $log2"
exit "$fail"
