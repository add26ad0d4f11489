#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# deploy.ocf: every OCF resource agent under deploy/ocf/ passes ocf-tester
# (meta-data against the DTD, validate-all, idempotent start and stop, monitor
# 7 when stopped and 0 when started) and its meta-data validates against
# ra-api-1.dtd with xmllint; then ocf:isergw:gateway's exit codes one by one
# and the node attribute it sets from the HA agent's state, with a stand-in
# isergwctl (printing the agent's JSON status) and attrd_updater (recording
# what it is asked) on PATH.
#
#   ocf.sh --isergwctl PATH --scratch DIR
# Exit 77 without ocf-tester (resource-agents) or xmllint (libxml2-utils).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CTL=
SCRATCH=/tmp/isergw-deploy-ocf
while [ $# -gt 0 ]; do
	case "$1" in
	--isergwctl) CTL=$2; shift 2 ;;
	--scratch) SCRATCH=$2; shift 2 ;;
	*) echo "ocf.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
log() { printf 'ocf: %s\n' "$*" >&2; }
for t in ocf-tester xmllint; do
	command -v "$t" >/dev/null || { log "$t not found (resource-agents, libxml2-utils)"; exit 77; }
done
DTD=/usr/share/resource-agents/ra-api-1.dtd
[ -f "$DTD" ] || { log "no $DTD (resource-agents)"; exit 77; }
if [ -z "$CTL" ] || [ ! -x "$CTL" ]; then log "--isergwctl PATH required"; exit 2; fi
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH/bin" "$SCRATCH/rsctmp"
export HA_RSCTMP=$SCRATCH/rsctmp OCF_ROOT=/usr/lib/ocf
fail=0
check() { # check WHAT EXPECTED-RC CMD...
	local what=$1 want=$2 rc
	shift 2
	"$@" >"$SCRATCH/out" 2>&1
	rc=$?
	if [ "$rc" -eq "$want" ]; then
		log "ok: $what (exit $rc)"
	else
		log "FAIL: $what: exit $rc, expected $want"; sed 's/^/    /' "$SCRATCH/out" >&2
		fail=1
	fi
}

NS=do-ocf
if [ "$(id -u)" -ne 0 ] || ! command -v iptables >/dev/null; then
	log "needs root (a network namespace for portblock) and iptables"; exit 77
fi
ip netns del "$NS" 2>/dev/null
ip netns add "$NS" || { log "cannot create network namespace $NS"; exit 1; }
trap 'ip netns del "$NS" 2>/dev/null' EXIT

# ---------------------------------------------------------------- every agent
agents=("$root"/deploy/ocf/*)
[ -e "${agents[0]}" ] || { log "FAIL: no agent under deploy/ocf"; exit 1; }
for a in "${agents[@]}"; do
	name=${a##*/}
	"$a" meta-data >"$SCRATCH/$name.xml" 2>/dev/null
	check "$name: meta-data valid against ra-api-1.dtd" 0 xmllint --noout --dtdvalid "$DTD" "$SCRATCH/$name.xml"
	# the tester really starts and stops: gateway with the real isergwctl and an agent
	# socket nobody answers; portblock in a network namespace of its own
	case "$name" in
	gateway) tester=(ocf-tester -n "test-$name" -o isergwctl="$CTL" -o ha_socket="$SCRATCH/none.sock") ;;
	portblock) tester=(ip netns exec "$NS" ocf-tester -n "test-$name" -o ip=10.35.9.50 -o "portno=3260,3261") ;;
	*) tester=(ocf-tester -n "test-$name") ;;
	esac
	if "${tester[@]}" "$a" >"$SCRATCH/ocf-tester-$name.log" 2>&1 &&
	   grep -q "passed all tests" "$SCRATCH/ocf-tester-$name.log"; then
		log "ok: $name: ocf-tester passed all tests"
	else
		log "FAIL: $name: ocf-tester"; sed 's/^/    /' "$SCRATCH/ocf-tester-$name.log" >&2
		fail=1
	fi
done

# ---------------------------------------------------------------- ocf:isergw:gateway
GW=$root/deploy/ocf/gateway
# stand-ins: isergwctl prints $SCRATCH/status.json (or fails without it),
# attrd_updater appends its arguments to $SCRATCH/attrd.log
cat >"$SCRATCH/bin/isergwctl" <<EOF
#!/bin/sh
[ -f "$SCRATCH/status.json" ] || { echo "cannot connect to /run/isergw/ha.sock" >&2; exit 3; }
cat "$SCRATCH/status.json"
EOF
cat >"$SCRATCH/bin/attrd_updater" <<EOF
#!/bin/sh
echo "\$*" >>"$SCRATCH/attrd.log"
EOF
chmod +x "$SCRATCH/bin/isergwctl" "$SCRATCH/bin/attrd_updater"
export PATH=$SCRATCH/bin:$PATH
export OCF_RESOURCE_INSTANCE=isergw-gw:0
unset OCF_RESKEY_isergwctl OCF_RESKEY_attribute OCF_RESKEY_timeout OCF_RESKEY_require_lease

check "validate-all with isergwctl on PATH" 0 "$GW" validate-all
check "validate-all: isergwctl missing -> OCF_ERR_INSTALLED" 5 env OCF_RESKEY_isergwctl=/nonexistent/isergwctl "$GW" validate-all
check "validate-all: bad attribute name -> OCF_ERR_CONFIGURED" 6 env OCF_RESKEY_attribute='a b' "$GW" validate-all
check "validate-all: bad timeout -> OCF_ERR_CONFIGURED" 6 env OCF_RESKEY_timeout=0 "$GW" validate-all
check "validate-all: bad require_lease -> OCF_ERR_CONFIGURED" 6 env OCF_RESKEY_require_lease=maybe "$GW" validate-all
check "start when misconfigured -> OCF_ERR_CONFIGURED" 6 env OCF_RESKEY_timeout=x "$GW" start
check "probe when isergwctl is missing -> OCF_NOT_RUNNING" 7 env OCF_RESKEY_isergwctl=/nonexistent/isergwctl OCF_RESKEY_CRM_meta_interval=0 "$GW" monitor
check "an unknown action -> OCF_ERR_UNIMPLEMENTED" 3 "$GW" frobnicate
check "monitor before start -> OCF_NOT_RUNNING" 7 "$GW" monitor
check "stop when stopped" 0 "$GW" stop

status() { # status QUORATE PHASE CONNECTED LEASE_MS
	printf '{\n  "cluster_name": "c",\n  "quorate": %s,\n  "phase": "%s",\n  "isergwd_connected": %s,\n  "lease_remaining_ms": %s,\n  "generation": 4\n}\n' \
		"$1" "$2" "$3" "$4" >"$SCRATCH/status.json"
}
last_attr() { tail -n 1 "$SCRATCH/attrd.log" 2>/dev/null; }
expect_attr() { # expect_attr WHAT ARGS
	if [ "$(last_attr)" = "$2" ]; then
		log "ok: $1: attrd_updater $2"
	else
		log "FAIL: $1: attrd_updater '$(last_attr)', expected '$2'"; fail=1
	fi
}
rm -f "$SCRATCH/attrd.log"
status true synced true 1200
check "start" 0 "$GW" start
expect_attr "synced, quorate, leased" "-n isergw-ready -U 1"
check "start again (idempotent)" 0 "$GW" start
check "monitor when started" 0 "$GW" monitor
status false inquorate true 0
check "monitor, quorum lost" 0 "$GW" monitor
expect_attr "inquorate" "-n isergw-ready -U 0"
status true syncing true 1200
check "monitor, syncing" 0 "$GW" monitor
expect_attr "not synced" "-n isergw-ready -U 0"
status true synced false 0
check "monitor, isergwd not connected" 0 "$GW" monitor
expect_attr "isergwd not connected" "-n isergw-ready -U 0"
status true synced true 0
check "monitor, no lease, require_lease=true" 0 env OCF_RESKEY_require_lease=true "$GW" monitor
expect_attr "no lease" "-n isergw-ready -U 0"
check "monitor, no lease (not required by default)" 0 "$GW" monitor
expect_attr "lease not required" "-n isergw-ready -U 1"
status true synced true 1200
check "monitor, leased, require_lease=true" 0 env OCF_RESKEY_require_lease=true "$GW" monitor
expect_attr "leased" "-n isergw-ready -U 1"
rm -f "$SCRATCH/status.json"
check "monitor, the HA agent not answering" 0 "$GW" monitor
expect_attr "agent down" "-n isergw-ready -U 0"
status true synced true 900
check "monitor, another attribute name" 0 env OCF_RESKEY_attribute=gw-ok "$GW" monitor
expect_attr "attribute parameter" "-n gw-ok -U 1"
check "stop" 0 "$GW" stop
expect_attr "stop removes the attribute" "-n isergw-ready -D"
check "stop again (idempotent)" 0 "$GW" stop
check "monitor after stop -> OCF_NOT_RUNNING" 7 "$GW" monitor

# ---------------------------------------------------------------- ocf:isergw:portblock
PB=$root/deploy/ocf/portblock
export OCF_RESOURCE_INSTANCE=fp-block OCF_RESKEY_ip=10.35.9.50 OCF_RESKEY_portno=3260
nsx() { ip netns exec "$NS" "$@"; }
blocked() { nsx iptables -C INPUT -p tcp -d 10.35.9.50 -m multiport --dports 3260 -j DROP 2>/dev/null; }
expect_blocked() { # expect_blocked WHAT yes|no
	local now=no
	blocked && now=yes
	if [ "$now" = "$2" ]; then log "ok: $1: blocked $now"; else log "FAIL: $1: blocked $now"; fail=1; fi
}
check "portblock: validate-all" 0 nsx "$PB" validate-all
check "portblock: bad action -> OCF_ERR_CONFIGURED" 6 env OCF_RESKEY_action=close "$PB" validate-all
check "portblock: bad ports -> OCF_ERR_CONFIGURED" 6 env OCF_RESKEY_portno=3260,,1 "$PB" validate-all
check "portblock: bad address -> OCF_ERR_CONFIGURED" 6 env OCF_RESKEY_ip=10.35.9 "$PB" validate-all
check "portblock: no iptables -> OCF_ERR_INSTALLED" 5 env OCF_RESKEY_iptables=/nonexistent "$PB" validate-all
check "portblock block: monitor before start" 7 nsx "$PB" monitor
check "portblock block: start" 0 nsx "$PB" start
expect_blocked "block started" yes
check "portblock block: start again" 0 nsx "$PB" start
check "portblock block: monitor" 0 nsx "$PB" monitor
# the unblock resource of the same address (the group's last member)
check "portblock unblock: start" 0 nsx env OCF_RESOURCE_INSTANCE=fp-unblock OCF_RESKEY_action=unblock "$PB" start
expect_blocked "unblock started" no
check "portblock unblock: monitor" 0 nsx env OCF_RESOURCE_INSTANCE=fp-unblock OCF_RESKEY_action=unblock "$PB" monitor
# the pair at work: the block resource stays active once its unblock removed
# the rule (a failure here makes pacemaker restart the group for ever)
check "portblock block: monitor while its unblock opened the ports" 0 nsx "$PB" monitor
# someone closing the open ports again is the unblock's failure
nsx iptables -I INPUT -p tcp -d 10.35.9.50 -m multiport --dports 3260 -j DROP
check "portblock unblock: monitor with the rule back -> OCF_ERR_GENERIC" 1 \
	nsx env OCF_RESOURCE_INSTANCE=fp-unblock OCF_RESKEY_action=unblock "$PB" monitor
nsx iptables -D INPUT -p tcp -d 10.35.9.50 -m multiport --dports 3260 -j DROP
check "portblock unblock: stop" 0 nsx env OCF_RESOURCE_INSTANCE=fp-unblock OCF_RESKEY_action=unblock "$PB" stop
expect_blocked "unblock stopped" yes
check "portblock unblock: monitor after stop" 7 nsx env OCF_RESOURCE_INSTANCE=fp-unblock OCF_RESKEY_action=unblock "$PB" monitor
check "portblock block: stop" 0 nsx "$PB" stop
expect_blocked "block stopped" no
check "portblock block: stop again" 0 nsx "$PB" stop
check "portblock block: monitor after stop" 7 nsx "$PB" monitor

# ---------------------------------------------------------------- the shipped crm script
PCS=$root/deploy/pacemaker/isergw-pacemaker.sh
check "isergw-pacemaker.sh without fencing -> usage error" 2 sh "$PCS" --print --floating 10.0.2.50/24@eth1
check "isergw-pacemaker.sh with a bad --floating -> usage error" 2 sh "$PCS" --print --floating 10.0.2.50 \
	--fence-ipmi gw1,10.9.0.1,admin,/etc/isergw/ipmi-gw1.pw
check "isergw-pacemaker.sh with a bad --fence-ipmi -> usage error" 2 sh "$PCS" --print --floating 10.0.2.50/24@eth1 \
	--fence-ipmi gw1,10.9.0.1
sh "$PCS" --print --floating 10.0.2.50/24@eth1 --floating 10.0.3.50/24@eth2 --ports 3260,3261 \
	--fence-ipmi gw1,10.9.0.1,admin,/etc/isergw/ipmi-gw1.pw --fence-ipmi gw2,10.9.0.2,admin,/etc/isergw/ipmi-gw2.pw \
	>"$SCRATCH/crm.txt" 2>&1
for want in 'property stonith-enabled=true no-quorum-policy=stop' \
	'primitive isergw-fence-gw1 stonith:fence_ipmilan params ip=10.9.0.1 username=admin' \
	'password_script="cat /etc/isergw/ipmi-gw1.pw" lanplus=1 pcmk_host_list=gw1' \
	'location isergw-fence-gw2-elsewhere isergw-fence-gw2 -inf: gw2' \
	'clone isergw-gw-clone isergw-gw meta interleave=true' \
	'primitive isergw-fp2-block ocf:isergw:portblock params ip=10.0.3.50 portno=3260,3261 protocol=tcp action=block' \
	'primitive isergw-fp2-ip ocf:heartbeat:IPaddr2 params ip=10.0.3.50 cidr_netmask=24 nic=eth2' \
	'primitive isergw-fp2-unblock ocf:isergw:portblock params ip=10.0.3.50 portno=3260,3261 protocol=tcp action=unblock' \
	'group isergw-fp1 isergw-fp1-block isergw-fp1-ip isergw-fp1-unblock' \
	'location isergw-fp1-where-serving isergw-fp1 rule -inf: not_defined isergw-ready or isergw-ready ne 1' \
	'alert isergw-fence "/usr/lib/isergw/isergw-fence-alert"'; do
	if grep -qF -- "$want" "$SCRATCH/crm.txt"; then
		log "ok: crm script prints: $want"
	else
		log "FAIL: crm script does not print: $want"; fail=1
	fi
done
# the block has no recurring monitor (nothing to watch once unblocked)
if grep -A1 'action=block' "$SCRATCH/crm.txt" | grep -q 'op monitor'; then
	log "FAIL: crm script monitors a portblock block resource"; fail=1
else
	log "ok: crm script monitors the unblock resources only"
fi
if grep -q fence_isergw_test "$SCRATCH/crm.txt"; then log "FAIL: the test fence agent in a production configuration"; fail=1; fi

if [ "$fail" -ne 0 ]; then
	log "FAIL"
	exit 1
fi
log "PASS"
