#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# deploy.floating-portal: a host without multipath writes and verifies through
# a floating portal address that pacemaker moves when the node holding it dies.
#
#   floating_portal.sh --isergwd PATH --isergwctl PATH --ha PATH --io PATH
#                      --prefix P --subnet S --scratch DIR
#
# 1. the HA bed (tests/ha/bed.sh): three nodes with corosync, isergwd and
#    isergw-ha; the example cluster configuration plus a floating portal
#    tcp://10.S.2.50:3260 (rel_port_id 10, its own target port group 10): on
#    every node's isergwd it waits for its address;
# 2. pacemaker in every node's namespaces, on the same corosync, configured by
#    the shipped script deploy/pacemaker/isergw-pacemaker.sh (crmsh): fencing
#    on, with the TEST-ONLY fence agent tests/deploy/fence_isergw_test (it
#    kills the namespace's processes) instead of fence_ipmilan;
#    ocf:isergw:gateway cloned; portblock + IPaddr2 + portblock for the
#    address, only where isergw-ready is 1. The agent and the fence agent
#    are overlaid on /usr/lib/ocf/resource.d and /usr/sbin inside each node's
#    mount namespace (nothing is installed on the machine);
# 3. the address comes up on a node H, whose isergwd listens on it at once;
#    ha_io (tests/ha/ha_io.c) in the host namespace writes and verifies
#    LUN 1 through the floating address only (one path: no multipath);
# 4. node H is killed (every process; its packets dropped). Pacemaker fences
#    it (the test fence agent, seen in the fencer's history), moves the
#    address to a survivor, whose isergwd serves it; ha_io reconnects and
#    goes on: at the end 0 errors and 0 mismatches. Printed side by side:
#    the kill to the first completed I/O through the new node, the kill to
#    the address on it, and the kill to the ALUA failover of H's device
#    group (another owner on every survivor, the path multipath hosts take).
# Exit 77 when not root or corosync, pacemaker, crmsh or iptables is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/ha/bed.sh
. "$root/tests/ha/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$root/tests/ha/ha_lib.sh"

WATCH_IO=
ha_options 4,35 --io WATCH_IO -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --io "$WATCH_IO" ha_io
for t in pacemakerd crm_mon crm stonith_admin iptables jq; do
	command -v "$t" >/dev/null || { bed_log "$t not found (pacemaker, crmsh, iptables, jq)"; exit 77; }
done
for a in IPaddr2 portblock; do
	[ -e "/usr/lib/ocf/resource.d/heartbeat/$a" ] || { bed_log "no ocf:heartbeat:$a (resource-agents)"; exit 77; }
done
id hacluster >/dev/null 2>&1 || { bed_log "no user hacluster (pacemaker)"; exit 77; }

VIP=$BED_NET.2.50
FP_REL=10
FP_TPG=10
LUN=1
fail=0
results=()
NODES_FILE=$SCRATCH/fence-nodes
OVL=$SCRATCH/overlay

others_of() { local j; for j in 1 2 3; do [ "$j" -ne "$1" ] && echo "$j"; done; }

# ---------------------------------------------------------------- pacemaker
# pcmk_start K: pacemakerd in node K's namespaces (as tests/bench/failover.sh),
# with our OCF agent and the test fence agent overlaid where pacemaker looks
pcmk_start() {
	local k=$1 d
	d=$SCRATCH/n$k/pacemaker
	mkdir -p "$d"/lib/{cib,pengine,blackbox,cores} || return 1
	touch "$d/pacemaker.log"
	chown -R hacluster:haclient "$d" || return 1
	chmod 1777 "$SCRATCH/n$k/shm" || return 1
	# shellcheck disable=SC2016 # expanded by the node's shell
	bed_exec "$k" sh -c 'mount --bind "$1" /var/lib/pacemaker &&
		mkdir -p /run/crm /run/pacemaker /run/resource-agents &&
		chown hacluster:haclient /run/crm /run/pacemaker &&
		{ mountpoint -q /usr/lib/ocf/resource.d || mount -t overlay overlay \
			-o lowerdir="$2/ocf":/usr/lib/ocf/resource.d /usr/lib/ocf/resource.d; } &&
		{ mountpoint -q /usr/sbin || mount -t overlay overlay -o lowerdir="$2/sbin":/usr/sbin /usr/sbin; }' \
		_ "$d/lib" "$OVL" || return 1
	bed_exec "$k" env PCMK_logfile="$d/pacemaker.log" PCMK_node_name="n$k" pacemakerd -f \
		</dev/null >>"$d/pacemakerd.out" 2>&1 &
}

pcmk_online() { # pcmk_online K N: node K's crm_mon shows N nodes online and a DC
	local out
	out=$(bed_exec "$1" timeout 10 crm_mon -1 2>/dev/null) || return 1
	grep -q 'Current DC: n' <<<"$out" && grep -Eq "Online: \[ (n[0-9] ){$2}\]" <<<"$out"
}

# (grep reads it all: with pipefail, grep -q quitting early would fail ip with SIGPIPE)
vip_on() { ip -n "$(bed_ns "$1")" -o addr show dev stor 2>/dev/null | grep " $VIP/" >/dev/null; }
vip_holder() {
	local k
	for k in 1 2 3; do vip_on "$k" && { echo "$k"; return 0; }; done
	return 1
}
# portal_state K: the floating portal as node K's isergwd reports it
portal_state() {
	bed_isergwctl "$1" --timeout 5 --json status 2>/dev/null |
		jq -r --arg u "tcp://$VIP:3260" '.portal_states[] | select(.url == $u) | .state'
}
portal_is() { [ "$(portal_state "$1")" = "$2" ]; }
ready_attr() { # ready_attr K: node K's isergw-ready attribute as node 1's pacemaker has it
	bed_exec 1 crm_attribute -l reboot -N "n$1" -n isergw-ready -G -q 2>/dev/null
}
all_ready() { local k; for k in 1 2 3; do [ "$(ready_attr "$k")" = 1 ] || return 1; done; }
vip_listening() { local h; h=$(vip_holder) && portal_is "$h" listening; }
fenced_in_history() { # fenced_in_history K NODE: node K's fencer reports NODE fenced
	bed_exec "$1" stonith_admin --history "n$2" 2>/dev/null | grep -Eq "(reboot|off) of n$2 .*successful|successful.*(reboot|off).*n$2"
}

# ---------------------------------------------------------------- the cluster
ha_cluster_start || bed_die "the HA bed did not come up"
ha_wait_settled "every node synced with dg1=n1 dg2=n2 dg3=n3" --serving "$HA_OWNERS" "${HA_NODES[@]}" ||
	bed_die "the cluster did not settle"
# the floating portal, added to the example configuration
jq --arg u "tcp://$VIP:3260" --argjson r "$FP_REL" --argjson t "$FP_TPG" \
	'.floating_portals = [ { url: $u, rel_port_id: $r, tpg_id: $t } ]' "$HA_CONFIG" >"$SCRATCH/cluster-fp.json" ||
	bed_die "jq failed"
bed_cli 1 cluster config apply "$SCRATCH/cluster-fp.json" >/dev/null || bed_die "the floating portal was refused"
for k in 1 2 3; do
	bed_poll 30 "node $k's isergwd has the floating portal, waiting" portal_is "$k" waiting ||
		{ bed_log "FAILED: node $k: floating portal not waiting"; fail=1; }
done

# the agents pacemaker must find in the nodes' mount namespaces
mkdir -p "$OVL/ocf/isergw" "$OVL/sbin"
cp "$root"/deploy/ocf/* "$OVL/ocf/isergw/"
cp "$here/fence_isergw_test" "$OVL/sbin/fence_isergw_test"
chmod 755 "$OVL"/ocf/isergw/* "$OVL/sbin/fence_isergw_test"
: >"$NODES_FILE"
for k in 1 2 3; do
	a=$(bed_pid "$k" anchor) || bed_die "no anchor for node $k"
	echo "n$k $(stat -L -c %i "/proc/$a/ns/net") $(stat -L -c %i "/proc/$a/ns/mnt")" >>"$NODES_FILE"
done

for k in 1 2 3; do pcmk_start "$k" || bed_die "pacemaker did not start on node $k"; done
bed_poll 120 "pacemaker: 3 nodes online" pcmk_online 1 3 || bed_die "pacemaker did not come up"
# the shipped script, as an operator runs it (crmsh), with the test fence agent
if ! bed_exec 1 sh "$root/deploy/pacemaker/isergw-pacemaker.sh" --floating "$VIP/24@stor" \
	--fence-test "$NODES_FILE" --isergwctl "$BED_ISERGWCTL" \
	--alert "$root/deploy/pacemaker/isergw-fence-alert" >"$SCRATCH/crm.out" 2>&1; then
	cat "$SCRATCH/crm.out" >&2
	bed_die "isergw-pacemaker.sh failed"
fi
bed_poll 60 "isergw-ready=1 on every node" all_ready ||
	{ bed_log "FAILED: isergw-ready not 1 everywhere"; fail=1; }
bed_poll 60 "the address $VIP on a node" vip_holder || bed_die "pacemaker did not start the address"
H=$(vip_holder) || bed_die "the address $VIP left its node again"
bed_poll 10 "node $H's isergwd listening on $VIP" portal_is "$H" listening ||
	bed_die "node $H holds $VIP but its isergwd does not listen on it"
for k in $(others_of "$H"); do
	portal_is "$k" waiting || { bed_log "FAILED: node $k listens on $VIP without holding it"; fail=1; }
done
bed_log "the address is on node $H, which serves it; the others wait for it"

# ---------------------------------------------------------------- the client
URL="iscsi://$VIP:3260/$BED_HA_IQN/$LUN"
ip netns exec "${BED_PREFIX}host" "$WATCH_IO" --seed 4242 --region-mib 16 --timeout-s 3 --pause-ms 2 \
	--initiator iqn.2026-11.org.isergw:floating-host "$URL" >"$SCRATCH/io.log" 2>&1 &
IO=$!
sleep 4
kill -0 "$IO" 2>/dev/null || { cat "$SCRATCH/io.log" >&2; bed_die "ha_io exited early"; }
[ -z "${DF_PAUSE:-}" ] || { bed_log "paused (DF_PAUSE): $DF_PAUSE"; sleep "$DF_PAUSE"; }

# ---------------------------------------------------------------- the kill
mapfile -t others < <(others_of "$H")
dg_h=dg$H
t0=$(bed_now_us)
if ! bed_partition "$H" ring || ! bed_partition "$H" stor; then bed_die "cannot drop node $H's packets"; fi
bed_kill_node "$H" || bed_die "cannot kill node $H"
t_vip="" t_alua=""
while [ -z "$t_vip" ] || [ -z "$t_alua" ]; do
	if [ -z "$t_vip" ]; then
		for j in "${others[@]}"; do vip_on "$j" && { t_vip=$(bed_secs_since "$t0"); NEW=$j; }; done
	fi
	if [ -z "$t_alua" ]; then
		o1=$(ha_owner "${others[0]}" "$dg_h" 2>/dev/null) o2=$(ha_owner "${others[1]}" "$dg_h" 2>/dev/null)
		if [ -n "$o1" ] && [ "$o1" != "n$H" ] && [ "$o1" = "$o2" ]; then t_alua=$(bed_secs_since "$t0"); fi
	fi
	if [ $(($(bed_now_us) - t0)) -gt 120000000 ]; then bed_die "no failover within 120 s"; fi
	sleep 0.05
done
bed_log "node $H killed: $VIP on node $NEW after $t_vip s; $dg_h owned by another node on every survivor after $t_alua s"
bed_poll 10 "node $NEW's isergwd listening on $VIP" portal_is "$NEW" listening ||
	{ bed_log "FAILED: node $NEW holds $VIP but does not listen on it"; fail=1; }
if bed_poll 30 "the fencer's history shows n$H fenced" fenced_in_history "$NEW" "$H"; then
	results+=("PASS pacemaker fenced n$H (test fence agent)")
else
	results+=("FAIL pacemaker did not fence n$H")
	fail=1
fi
# the first I/O completed after the kill: ha_io's "stall ... ended" line
first_io() {
	awk -v t0="$t0" '/stall of .* ended/ { split($2, a, "."); us = a[1] * 1000000 + a[2];
		if (us > t0) { printf "%.3f\n", (us - t0) / 1e6; exit 0 } } END { }' "$SCRATCH/io.log" | grep .
}
bed_poll 60 "the first I/O through node $NEW after the kill" first_io >/dev/null ||
	{ bed_log "FAILED: no I/O completed through $VIP after the kill"; fail=1; }
t_io=$(first_io)
sleep 5

# ---------------------------------------------------------------- verdict
# ha_io verifies the whole region at SIGTERM (through the floating address): bounded
kill -TERM "$IO" 2>/dev/null
for ((i = 0; i < 600; i++)); do kill -0 "$IO" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$IO" 2>/dev/null; then
	bed_log "FAILED: ha_io did not finish its verification within 60 s"
	kill -9 "$IO" 2>/dev/null
fi
wait "$IO"
io_rc=$?
summary=$(grep '^ha_io: writes' "$SCRATCH/io.log")
bed_log "$summary"
if [ "$io_rc" -eq 0 ] && grep -q 'mismatches 0,' <<<"$summary"; then
	results+=("PASS the client went on through $VIP: 0 errors, 0 verify failures ($summary)")
else
	results+=("FAIL the client (exit $io_rc): $summary")
	grep -v '^ha_io: writes' "$SCRATCH/io.log" | tail -20 >&2
	fail=1
fi
# the survivors' daemons stop cleanly (a sanitizer report or a crash makes the status non-zero)
for k in "${others[@]}"; do
	if bed_stop_ha "$k" && bed_stop_isergwd "$k"; then
		results+=("PASS node $k: isergw-ha and isergwd stop with status 0")
	else
		results+=("FAIL node $k: a daemon did not stop cleanly")
		fail=1
	fi
done
[ "$fail" -eq 0 ] || results+=("FAIL see the lines above")
printf '%s\n' "${results[@]}"
echo "floating portal failover: node death -> first completed I/O through node $NEW ${t_io:-none} s" \
	"(address moved ${t_vip} s); ALUA path failover (another owner of $dg_h on every survivor) ${t_alua} s"
exit "$fail"
