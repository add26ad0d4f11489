#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Failover times of isergw-ha on the HA bed (tests/ha/bed.sh), side by side
# with pacemaker moving an IP address on the same namespaces and corosync.
# Not a ctest test: it measures, it asserts no time. Root only.
#
#   tests/bench/failover.sh [--build DIR] [--kills N] [--drains N]
#                           [--pcmk-kills N] [--groups G --luns L]
#                           [--big-kills N] [--prefix P] [--subnet S]
#                           [--scratch DIR]
#
# --build DIR (default build/) holds bin/isergwd, bin/isergwctl,
# bin/isergw-ha and ha_io (bin/ or tests/ha/). Three nodes, corosync token
# 1000 ms, the example cluster configuration; samplers read every node's
# REPORT TARGET PORT GROUPS every 100 ms (tests/ha/watch.sh).
#   unplanned  N times (default 5), in turn on nodes 1, 2, 3: the owner of
#              dgK dies (packets dropped, SIGKILL to all its processes);
#              the time from the kill to every survivor's RTPG showing
#              another group Active/Optimized for dgK. Then it restarts and
#              takes dgK back.
#              Also the gateway-side part of each (from the logs, ms):
#              the leader's decision (isergw-ha's "placement on generation
#              N sent", info) to the last survivor's isergwd applying the
#              ALUA epoch N+1 ("ALUA epoch N+1 map", notice), and the
#              backend fencing inside it ("backend fencing ... in N ms").
#              (An agent that does not log its decision: from the first
#              survivor's delivery of the placement, "generation N+1:
#              placement from node", a few ms later.)
#   planned    N times (default 5): `isergwctl cluster drain nK`, the time
#              from the command to every node's RTPG showing another group
#              Active/Optimized for dgK; `cluster undrain nK`, the time to
#              group K again. Both count as planned moves.
#   big        with --groups G (4..256) --luns L (G..4096): the cluster
#              configuration replaced by one of G device groups dg1..dgG
#              (dgJ prefers node (J-1)%3+1) and L LUNs, LUN 0 the backend's
#              as before (in dg1), LUN I>0 a sparse 1 MiB file of the
#              shared directory in dg(I%G+1); then N unplanned rounds
#              (--big-kills, default 3) as above. RTPG is sampled for 16 of
#              the killed node's groups, spread over them (ha_io samples at
#              most 16 LUNs; isergwd sets a map's device groups at once, so
#              the others change with them): the time is to the last of the
#              16 on every survivor. The gateway-side part as above covers
#              every group (one map).
#   pacemaker  isergw-ha and isergwd stopped; pacemakerd started in every
#              node's namespaces on the same corosync (stonith-enabled=false,
#              resource-stickiness 100), an ocf:heartbeat:IPaddr2 address
#              10.S.2.50/24 on the storage network; N times (default 3) the
#              node holding it dies as above: the time until another node
#              has the address (polled every 50 ms). The node is powered up
#              again and rejoins before the next round.
# Prints every time, then as its last lines:
#   failover: unplanned median X s max Y s; planned median Z s; pacemaker IP move W s
#   failover: gateway-side (decision -> ALUA applied) 3 groups median A ms max B ms[; G groups
#             / L LUNs: unplanned median X s max Y s, gateway-side median A ms max B ms]
# (W: the median of the pacemaker rounds.) Logs under the scratch directory
# (default /tmp/isergw-bench-failover).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/../ha/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/../ha/ha_lib.sh"
# shellcheck source=tests/ha/watch.sh
. "$here/../ha/watch.sh"

BUILD=build
KILLS=5
DRAINS=5
PCMK_KILLS=3
GROUPS_BIG=0
LUNS_BIG=0
BIG_KILLS=3
BED_PREFIX=hb2
BED_SUBNET=21
SCRATCH=/tmp/isergw-bench-failover
bed_parse_args "$@"
set -- "${BED_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--kills) KILLS=$2; shift 2 ;;
	--drains) DRAINS=$2; shift 2 ;;
	--pcmk-kills) PCMK_KILLS=$2; shift 2 ;;
	--groups) GROUPS_BIG=$2; shift 2 ;;
	--luns) LUNS_BIG=$2; shift 2 ;;
	--big-kills) BIG_KILLS=$2; shift 2 ;;
	-h | --help) awk 'NR > 2 { if (!/^#/) exit; print }' "$0"; exit 0 ;;
	*) bed_die "unknown option $1" ;;
	esac
done
for n in "$KILLS" "$DRAINS" "$PCMK_KILLS" "$GROUPS_BIG" "$LUNS_BIG" "$BIG_KILLS"; do
	[[ $n =~ ^[0-9]+$ ]] || bed_die "--kills, --drains, --pcmk-kills, --groups, --luns, --big-kills want a number"
done
if [ "$GROUPS_BIG" -ne 0 ] || [ "$LUNS_BIG" -ne 0 ]; then
	if [ "$GROUPS_BIG" -lt 4 ] || [ "$GROUPS_BIG" -gt 256 ]; then bed_die "--groups wants 4..256"; fi
	if [ "$LUNS_BIG" -lt "$GROUPS_BIG" ] || [ "$LUNS_BIG" -gt 4096 ]; then
		bed_die "--luns wants one LUN per group at least, 4096 at most"
	fi
fi
BED_ISERGWD=$BUILD/bin/isergwd
BED_ISERGWCTL=$BUILD/bin/isergwctl
BED_HA=$BUILD/bin/isergw-ha
for WATCH_IO in "$BUILD/bin/ha_io" "$BUILD/tests/ha/ha_io"; do
	[ -x "$WATCH_IO" ] && break
done
[ -x "$BED_HA" ] || bed_die "no $BED_HA (build with corosync's development packages)"
[ -x "$WATCH_IO" ] || bed_die "no ha_io under $BUILD (bin/ or tests/ha/)"
BED_ISERGWD=$(realpath "$BED_ISERGWD") BED_ISERGWCTL=$(realpath "$BED_ISERGWCTL")
BED_HA=$(realpath "$BED_HA") WATCH_IO=$(realpath "$WATCH_IO")
bed_init
for t in pacemakerd crm_mon cibadmin crm_attribute; do
	command -v "$t" >/dev/null || bed_die "$t not found (pacemaker, pacemaker-cli-utils)"
done
[ -e /usr/lib/ocf/resource.d/heartbeat/IPaddr2 ] || bed_die "no ocf:heartbeat:IPaddr2 (resource-agents)"
id hacluster >/dev/null 2>&1 || bed_die "no user hacluster (pacemaker)"

others_of() { local j; for j in 1 2 3; do [ "$j" -ne "$1" ] && echo "$j"; done; }

watch_cluster_up || bed_die "the cluster did not come up"
totem=$(bed_totem 1) || totem="? ?"

# log_ms LINE: the epoch milliseconds of a daemon's log line (its ISO time stamp)
log_ms() { date -u -d "${1%%Z *}Z" +%s%3N; }

# gw_side T0_US K: the gateway-side part of the failover of node K killed at
# T0_US, from the survivors' logs: the leader's decision (the first placement
# sent after T0_US that moves device groups) to the last survivor's isergwd
# applying the ALUA epoch it made. Sets GW_MS (empty when not found) and
# GW_FENCE (the survivors' fencing times, ms), logs it.
gw_side() {
	local t0=$(($1 / 1000)) k=$2 j line t gen dec='' last=0 f
	GW_MS='' GW_FENCE=''
	for j in $(others_of "$k"); do
		while read -r line; do
			t=$(log_ms "$line")
			[ "$t" -ge "$t0" ] || continue
			[[ $line =~ placement\ on\ generation\ ([0-9]+)\ sent:\ ([0-9]+)\ device ]] || continue
			[ "${BASH_REMATCH[2]}" -gt 0 ] || continue
			if [ -z "$dec" ] || [ "$t" -lt "$dec" ]; then dec=$t gen=$((BASH_REMATCH[1] + 1)); fi
			break
		done < <(grep 'placement on generation' "$(bed_logfile "$j" ha)")
	done
	if [ -z "$dec" ]; then
		# an agent that does not log its decision: from the placement's delivery
		for j in $(others_of "$k"); do
			while read -r line; do
				t=$(log_ms "$line")
				[ "$t" -ge "$t0" ] || continue
				[[ $line =~ generation\ ([0-9]+):\ placement\ from ]] || continue
				if [ -z "$dec" ] || [ "$t" -lt "$dec" ]; then dec=$t gen=${BASH_REMATCH[1]}; fi
				break
			done < <(grep -E 'generation [0-9]+: placement from' "$(bed_logfile "$j" ha)")
		done
		[ -n "$dec" ] && bed_log "gateway side: (no decision logged: counted from its delivery)"
	fi
	[ -n "$dec" ] || { bed_log "gateway side: no placement decision found after the kill"; return 1; }
	for j in $(others_of "$k"); do
		line=$(grep -m1 "ALUA epoch $gen map" "$(bed_logfile "$j" isergwd)") || {
			bed_log "gateway side: node $j's isergwd did not apply epoch $gen"
			return 1
		}
		t=$(log_ms "$line")
		[ "$t" -gt "$last" ] && last=$t
		f=$(awk -v t0="$(date -u -d @"$((dec / 1000))" +%Y-%m-%dT%H:%M:%S)" \
			'$1 >= t0 && /backend fencing of/ { for (i = 1; i <= NF; i++) if ($i == "ms") print $(i - 1) }' \
			"$(bed_logfile "$j" isergwd)" | tail -n 1)
		GW_FENCE+="${GW_FENCE:+,}${f:--}"
	done
	GW_MS=$((last - dec))
	bed_log "gateway side: decision (generation $((gen - 1)) + 1) -> ALUA epoch $gen applied on every survivor: $GW_MS ms (fencing ${GW_FENCE} ms)"
}
gwside=()

# ---------------------------------------------------------------- unplanned
unplanned=()
for ((i = 1; i <= KILLS; i++)); do
	k=$(((i - 1) % 3 + 1)) lun=$((k - 1))
	mapfile -t others < <(others_of "$k")
	watch_wait "$(bed_now_us)" "dg$k on node $k everywhere" "$lun" ao "$k" 1 2 3 2>/dev/null ||
		bed_die "the cluster is not whole before kill $i"
	t0=$(bed_now_us)
	if ! bed_partition "$k" ring 2>/dev/null || ! bed_partition "$k" stor 2>/dev/null; then
		bed_die "cannot drop node $k's packets"
	fi
	bed_kill_node "$k" 2>/dev/null || bed_die "cannot kill node $k"
	watch_wait "$t0" "unplanned $i: node $k killed -> new owner of dg$k on every survivor" "$lun" \
		ao_not "$k" "${others[@]}" || bed_die "no new owner after kill $i"
	unplanned+=("$WATCH_SECS")
	gw_side "$t0" "$k" && gwside+=("$GW_MS")
	bed_heal "$k" ring 2>/dev/null
	bed_heal "$k" stor 2>/dev/null
	bed_restart_node "$k" || bed_die "node $k did not restart"
	t1=$(bed_now_us)
	watch_wait "$t1" "node $k back, dg$k on it everywhere" "$lun" ao "$k" 1 2 3 2>/dev/null ||
		bed_die "no failback after kill $i"
done

# ---------------------------------------------------------------- planned
planned=()
for ((i = 1; i <= DRAINS; i++)); do
	k=$(((i - 1) % 3 + 1)) lun=$((k - 1))
	watch_wait "$(bed_now_us)" "dg$k on node $k everywhere" "$lun" ao "$k" 1 2 3 2>/dev/null ||
		bed_die "the cluster is not whole before drain $i"
	t0=$(bed_now_us)
	bed_cli 1 cluster drain "n$k" >/dev/null || bed_die "drain n$k refused"
	watch_wait "$t0" "planned $i: drain n$k -> new owner of dg$k on every node" "$lun" ao_not "$k" 1 2 3 ||
		bed_die "no new owner after drain $i"
	planned+=("$WATCH_SECS")
	t0=$(bed_now_us)
	bed_cli 1 cluster undrain "n$k" >/dev/null || bed_die "undrain n$k refused"
	watch_wait "$t0" "planned $i: undrain n$k -> dg$k back on node $k on every node" "$lun" ao "$k" 1 2 3 ||
		bed_die "dg$k not back after undrain $i"
	planned+=("$WATCH_SECS")
done
watch_stop
watch_check_double_ao || bed_log "(a double Active/Optimized was seen: see above)"

# ---------------------------------------------------------------- big
# big_config FILE: the example cluster configuration with GROUPS_BIG device
# groups and LUNS_BIG LUNs (LUN 0 the backend's, the others sparse files)
big_config() {
	local file=$1 i
	for ((i = 1; i < LUNS_BIG; i++)); do truncate -s 1M "$BED_SHARED/b$i.img" || return 1; done
	jq --argjson g "$GROUPS_BIG" --argjson l "$LUNS_BIG" --arg dir "$BED_SHARED" '
		.device_groups = [range(1; $g + 1) | { name: "dg\(.)",
			preferred_owner: "n\((. - 1) % 3 + 1)", failback: "immediate" }]
		| .targets[0].luns = [.targets[0].luns[0]] + [range(1; $l) | { lun: ., path: "\($dir)/b\(.).img",
			device_group: "dg\(. % $g + 1)" }]' "$HA_CONFIG" >"$file"
}

# big_luns K: the LUNs sampled for node K's groups: 16 of them, spread
big_luns() {
	local k=$1 n i g out=
	n=$(((GROUPS_BIG - k) / 3 + 1))
	for ((i = 0; i < 16 && i < n; i++)); do
		g=$((k + 3 * (n > 16 ? i * (n - 1) / 15 : i)))
		out+="${out:+,}$((g - 1))"
	done
	echo "$out"
}

# big_wait T0 WHAT MODE K NODES...: watch_wait for every sampled LUN of node
# K's groups; WATCH_SECS the last of them
big_wait() {
	local t0=$1 what=$2 mode=$3 k=$4 lun max=0 ms
	shift 4
	IFS=, read -ra _luns <<<"$(big_luns "$k")"
	for lun in "${_luns[@]}"; do
		watch_wait "$t0" "$what (LUN $lun)" "$lun" "$mode" "$k" "$@" 2>/dev/null || return 1
		ms=$((10#${WATCH_SECS/./}))
		[ "$ms" -gt "$max" ] && max=$ms
	done
	WATCH_SECS=$(printf '%d.%03d' $((max / 1000)) $((max % 1000)))
	bed_log "$what, all ${#_luns[@]} sampled groups: $WATCH_SECS s"
}

big=() bigside=()
if [ "$GROUPS_BIG" -gt 0 ]; then
	big_config "$SCRATCH/cluster-big.json" || bed_die "no configuration of $GROUPS_BIG groups"
	big_owners=$(jq -c '[.device_groups[] | {(.name): .preferred_owner}] | add' "$SCRATCH/cluster-big.json")
	t0=$(bed_now_us)
	bed_poll "$BED_WAIT_LIMIT" "$GROUPS_BIG groups, $LUNS_BIG LUNs applied" \
		bed_cli 1 --timeout 60 cluster config apply "$SCRATCH/cluster-big.json" >/dev/null ||
		bed_die "the configuration of $GROUPS_BIG groups was refused"
	BED_WAIT_LIMIT=300 ha_wait_settled "$GROUPS_BIG groups, $LUNS_BIG LUNs served" --serving "$big_owners" 1 2 3 ||
		bed_die "the cluster did not settle with $GROUPS_BIG groups"
	bed_log "$GROUPS_BIG groups, $LUNS_BIG LUNs: settled $(bed_secs_since "$t0") s after the apply"
	for ((i = 1; i <= BIG_KILLS; i++)); do
		k=$(((i - 1) % 3 + 1))
		mapfile -t others < <(others_of "$k")
		watch_start "$(big_luns "$k")" || bed_die "no samplers"
		big_wait "$(bed_now_us)" "big: node $k's groups on it everywhere" ao "$k" 1 2 3 ||
			bed_die "the cluster is not whole before big kill $i"
		t0=$(bed_now_us)
		if ! bed_partition "$k" ring 2>/dev/null || ! bed_partition "$k" stor 2>/dev/null; then
			bed_die "cannot drop node $k's packets"
		fi
		bed_kill_node "$k" 2>/dev/null || bed_die "cannot kill node $k"
		big_wait "$t0" "big unplanned $i: node $k killed -> new owners on every survivor" ao_not "$k" \
			"${others[@]}" || bed_die "no new owners after big kill $i"
		big+=("$WATCH_SECS")
		gw_side "$t0" "$k" && bigside+=("$GW_MS")
		bed_heal "$k" ring 2>/dev/null
		bed_heal "$k" stor 2>/dev/null
		bed_restart_node "$k" || bed_die "node $k did not restart"
		big_wait "$(bed_now_us)" "big: node $k back, its groups on it everywhere" ao "$k" 1 2 3 ||
			bed_die "no failback after big kill $i"
		watch_stop
		watch_check_double_ao || bed_log "(a double Active/Optimized was seen: see above)"
	done
fi

# ---------------------------------------------------------------- pacemaker
VIP=$BED_NET.2.50
for k in 1 2 3; do
	bed_stop_ha "$k" || bed_log "isergw-ha on node $k did not stop cleanly"
	bed_stop_isergwd "$k" || bed_log "isergwd on node $k did not stop cleanly"
done

# pcmk_start K: pacemakerd in node K's namespaces, its own /var/lib/pacemaker
pcmk_start() {
	local k=$1 d
	d=$SCRATCH/n$k/pacemaker
	mkdir -p "$d"/lib/{cib,pengine,blackbox,cores} || return 1
	touch "$d/pacemaker.log"
	chown -R hacluster:haclient "$d" || return 1
	# libqb's IPC rings: /dev/shm must be writable by hacluster, as a real one is
	chmod 1777 "$SCRATCH/n$k/shm" || return 1
	# shellcheck disable=SC2016 # expanded by the node's shell
	bed_exec "$k" sh -c 'mount --bind "$1" /var/lib/pacemaker &&
		mkdir -p /run/crm /run/pacemaker && chown hacluster:haclient /run/crm /run/pacemaker' \
		_ "$d/lib" || return 1
	bed_exec "$k" env PCMK_logfile="$d/pacemaker.log" PCMK_node_name="n$k" pacemakerd -f \
		</dev/null >>"$d/pacemakerd.out" 2>&1 &
}

pcmk_online() { # pcmk_online K N: node K's crm_mon shows N nodes online and a DC
	local out
	out=$(bed_exec "$1" timeout 10 crm_mon -1 2>/dev/null) || return 1
	grep -q 'Current DC: n' <<<"$out" && grep -Eq "Online: \[ (n[0-9] ){$2}\]" <<<"$out"
}

vip_on() { # vip_on K: node K has the address
	ip -n "$(bed_ns "$1")" -o addr show dev stor 2>/dev/null | grep -q " $VIP/"
}

vip_holder() {
	local k
	for k in 1 2 3; do vip_on "$k" && { echo "$k"; return 0; }; done
	return 1
}

for k in 1 2 3; do pcmk_start "$k" || bed_die "pacemaker did not start on node $k"; done
bed_poll 120 "pacemaker: 3 nodes online" pcmk_online 1 3 || bed_die "pacemaker did not come up"
bed_exec 1 crm_attribute -t crm_config -n stonith-enabled -v false || bed_die "crm_attribute failed"
bed_exec 1 crm_attribute -t rsc_defaults -n resource-stickiness -v 100 || bed_die "crm_attribute failed"
bed_exec 1 cibadmin -C -o resources -X "<primitive id=\"vip\" class=\"ocf\" provider=\"heartbeat\" type=\"IPaddr2\">
  <instance_attributes id=\"vip-ia\">
    <nvpair id=\"vip-ip\" name=\"ip\" value=\"$VIP\"/>
    <nvpair id=\"vip-mask\" name=\"cidr_netmask\" value=\"24\"/>
    <nvpair id=\"vip-nic\" name=\"nic\" value=\"stor\"/>
  </instance_attributes>
  <operations><op id=\"vip-mon\" name=\"monitor\" interval=\"10s\"/></operations>
</primitive>" || bed_die "cibadmin failed"
bed_poll 60 "the address $VIP on a node" vip_holder || bed_die "pacemaker did not start the address"

pcmk=()
for ((i = 1; i <= PCMK_KILLS; i++)); do
	h=$(vip_holder) || bed_die "nobody holds $VIP before pacemaker round $i"
	mapfile -t others < <(others_of "$h")
	t0=$(bed_now_us)
	if ! bed_partition "$h" ring 2>/dev/null || ! bed_partition "$h" stor 2>/dev/null; then
		bed_die "cannot drop node $h's packets"
	fi
	bed_kill_node "$h" 2>/dev/null || bed_die "cannot kill node $h"
	moved=
	while [ -z "$moved" ]; do
		for j in "${others[@]}"; do vip_on "$j" && moved=$j; done
		[ -n "$moved" ] && break
		if [ $(($(bed_now_us) - t0)) -gt 120000000 ]; then bed_die "the address did not move in 120 s"; fi
		sleep 0.05
	done
	s=$(bed_secs_since "$t0")
	bed_log "pacemaker $i: node $h killed -> $VIP on node $moved after $s s"
	pcmk+=("$s")
	# a power cycle: the address goes with it
	ip -n "$(bed_ns "$h")" addr del "$VIP/24" dev stor 2>/dev/null
	bed_heal "$h" ring 2>/dev/null
	bed_heal "$h" stor 2>/dev/null
	bed_restart_node "$h" || bed_die "node $h did not restart"
	pcmk_start "$h" || bed_die "pacemaker did not restart on node $h"
	bed_poll 120 "pacemaker: 3 nodes online again" pcmk_online "$h" 3 || bed_die "node $h did not rejoin"
done

# ---------------------------------------------------------------- summary
echo "failover bench: corosync token ${totem% *} ms, consensus ${totem#* } ms; samples every 100 ms"
echo "failover bench: unplanned (node death -> new owner on every survivor): ${unplanned[*]} s"
echo "failover bench: planned (drain / undrain -> new owner on every node): ${planned[*]} s"
echo "failover bench: pacemaker IPaddr2 (node death -> address on a survivor): ${pcmk[*]} s"
med() { watch_stats "$@" | awk '{ print $2 }'; }
mx() { watch_stats "$@" | awk '{ print $5 }'; }
echo "failover: unplanned median $(med "${unplanned[@]}") s max $(mx "${unplanned[@]}") s; planned median $(med "${planned[@]}") s; pacemaker IP move $(med "${pcmk[@]}") s"
msmed() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit }
	print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
msmax() { printf '%s\n' "$@" | sort -n | tail -n 1; }
line="failover: gateway-side (decision -> ALUA applied) 3 groups median $(msmed "${gwside[@]}") ms max $(msmax "${gwside[@]}") ms"
if [ "$GROUPS_BIG" -gt 0 ]; then
	echo "failover bench: $GROUPS_BIG groups / $LUNS_BIG LUNs unplanned: ${big[*]} s; gateway-side ${bigside[*]} ms"
	line+="; $GROUPS_BIG groups / $LUNS_BIG LUNs: unplanned median $(med "${big[@]}") s max $(mx "${big[@]}") s, gateway-side median $(msmed "${bigside[@]}") ms max $(msmax "${bigside[@]}") ms"
fi
echo "failover bench: 3 groups gateway-side: ${gwside[*]} ms"
echo "$line"
