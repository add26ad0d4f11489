#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ha.config: configuration changes through `isergwctl cluster config apply`
# with a node down, without quorum, and refused by isergwd's validator.
#
#   config.sh --isergwd PATH --isergwctl PATH --ha PATH --probe PATH
#             --prefix P --subnet S --scratch DIR
#
# 1. Three nodes (corosync, isergwd --managed, isergw-ha), the example
#    cluster configuration applied through node 1; every node synced with
#    dg1=n1, dg2=n2, dg3=n3.
# 2. Node 3 killed (every process). Through node 1: a configuration adding
#    LUN 3 (a new 64 MiB file in the shared directory, dg1) succeeds,
#    "applied by n1 n2"; then one without LUN 2 succeeds. G is the cluster's
#    generation then. Nodes 1 and 2 list LUNs 0 1 3 (REPORT LUNS).
# 3. Node 3 restarted while a sampler looks at it every 100 ms: REPORT
#    TARGET PORT GROUPS of LUN 0 through node 3 (cluster_probe), then
#    isergwd's status (config epoch, lease) and GetAluaStates of dg1 in node
#    3. No sample may show node 3's port group other than Unavailable while
#    its isergwd's configuration is older than G, nor a valid lease with a
#    configuration older than G. Once node 3 is synced again: its isergwd
#    holds the cluster's generation, it lists LUNs 0 1 3, LUN 3 answers
#    through it (cluster_probe) and LUN 2 does not.
# 4. Node 1 partitioned alone (ring): a configuration adding LUN 4 applied
#    through node 1 is refused (exit 1, the reason names the quorum).
#    Healed: one generation and digest everywhere (node 1's is the
#    majority's), no LUN 4 in any node's configuration nor through any node.
# 5. Through node 1: a configuration with a LUN of block_size 1000, one
#    with an unknown key in a LUN, one whose LUN 1 names LUN 0's store by
#    another spelling (user%secret@ and LUN 01 for a backend LUN), are
#    refused (exit 1) with the key path (targets[0].luns[1].block_size,
#    targets[0].luns[1].bogus_key, targets[0].luns[1].path, the last naming
#    both LUNs); every node keeps its generation and digest, no agent logs a
#    new generation.
# Prints what it measured (how long node 3 took to serve again, how many
# samples in each state). Exit 0 only if every check holds; 77 when not root
# or corosync is missing.

# shellcheck disable=SC2317 # the conditions are called through bed_poll
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

ha_options 3,38 -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --probe "$BED_PROBE" cluster_probe

NODES=(1 2 3)
INITIATOR=iqn.2026-11.org.isergw:host
notes=()

# ---------------------------------------------------------------- cluster state

# luns_via K: the LUNs node K reports (REPORT LUNS from the host), "0 1 3"
luns_via() {
	bed_host timeout 20 iscsi-ls -i "$INITIATOR" -s "iscsi://$(bed_portal "$1")" |
		sed -n 's/^Lun:\([0-9]*\).*/\1/p' | sort -n | paste -sd' '
}

luns_are() { # luns_are K "0 1 3"
	local got
	got=$(luns_via "$1")
	[ "$got" = "$2" ] && return 0
	bed_log "node $1 reports LUNs '$got', expected '$2'"
	return 1
}

# config_luns K: the LUNs of node K's cluster configuration
config_luns() {
	bed_cli "$1" --timeout 10 cluster config get | jq -r '[.targets[0].luns[].lun] | sort | map(tostring) | join(" ")'
}

# ---------------------------------------------------------------- 1. the bed

ha_cluster_up || bed_die "the cluster did not come up"
echo "1. three nodes at generation $(ha_gen_digest 1)"

# ---------------------------------------------------------------- 2. node 3 down

ADD3=$SCRATCH/add-lun3.json
DEL2=$SCRATCH/del-lun2.json
jq --arg p "$BED_SHARED/lun3.img" \
	'.targets[0].luns += [{"lun": 3, "path": $p, "size": "64M", "device_group": "dg1"}]' \
	"$HA_CONFIG" >"$ADD3" || bed_die "jq"
jq 'del(.targets[0].luns[] | select(.lun == 2))' "$ADD3" >"$DEL2" || bed_die "jq"

ok=1
ha_check "kill node 3" bed_kill_node 3 || ok=0
ha_check "nodes 1 2 quorate with 2" bed_wait_quorum 2 1 2 || ok=0
# dg3 goes to a survivor; wait until both agree on it
owners12=
survivor_owned() {
	owners12=$(ha_status 1 | jq -c '[.device_groups[] | {(.name): .owner}] | add') &&
		jq -e '.dg3 == "n1" or .dg3 == "n2"' <<<"$owners12" >/dev/null &&
		ha_settled --serving "$owners12" 1 2
}
ha_check "dg3 taken over by node 1 or 2" bed_poll "$BED_WAIT_LIMIT" "dg3 on a survivor" survivor_owned ||
	{ ha_show_nodes 1 2; ok=0; }
bed_log "without node 3: $owners12"
for f in "$ADD3" "$DEL2"; do
	out=$(bed_cli 1 --timeout 60 cluster config apply "$f" 2>&1)
	rc=$?
	echo "  apply $(basename "$f") through node 1 (exit $rc): $(paste -sd'|' <<<"$out")"
	if [ "$rc" -ne 0 ] || ! grep -Eq '^generation [0-9]+ applied by n1 n2$' <<<"$out"; then
		bed_log "FAILED: $(basename "$f"): expected exit 0 and 'applied by n1 n2'"
		ok=0
	fi
done
G=$(ha_gen_digest 1) && G=${G%% *}
ha_check "one generation on nodes 1 2" bed_poll "$BED_WAIT_LIMIT" "nodes 1 2 at one generation" ha_same_generation 1 2 || ok=0
for k in 1 2; do
	ha_check "node $k lists LUNs 0 1 3" bed_poll 30 "LUNs 0 1 3 through node $k" luns_are "$k" "0 1 3" ||
		{ luns_are "$k" "0 1 3"; ok=0; }
done
[ -e "$BED_SHARED/lun3.img" ] || { bed_log "FAILED: $BED_SHARED/lun3.img was not created"; ok=0; }
ha_verdict "$ok" "LUN 3 added and LUN 2 removed with node 3 down (generation $G)"

# ---------------------------------------------------------------- 3. node 3 returns

SAMPLES=$SCRATCH/node3-samples.txt
# sample_loop: one line every 100 ms (or as fast as the machine allows):
#   T(s) RTPG-STATE-OF-TPG-3 CONFIG-EPOCH LEASE-STATE DG1-ALUA-EPOCH DG1-TPG3-STATE
# RTPG first, isergwd's status after it: the epoch can only have grown in
# between, so a sample that shows node 3 serving with an old epoch is real.
# No jq here (a fork less per field on a busy machine).
sample_loop() {
	local t0 next now s ce ls ae as out re_ce='"config_epoch": *([0-9]+)'
	local re_ls='"lease_state": *"([a-z-]+)"' re_ae='"epoch": *([0-9]+)'
	local re_as='"tpg_id": *3, *"state": *"([a-z/-]+)"'
	t0=$(bed_now_us)
	next=$t0
	while [ ! -e "$SCRATCH/sampler.stop" ]; do
		s=noanswer ce=- ls=- ae=- as=-
		if out=$(bed_probe 3 0 2>/dev/null); then
			s=none
			[[ $out =~ group\ 3\ state\ ([0-9]+) ]] && s=${BASH_REMATCH[1]}
		fi
		if out=$(ha_gw_status 3 2>/dev/null | tr -d '\n'); then
			[[ $out =~ $re_ce ]] && ce=${BASH_REMATCH[1]}
			[[ $out =~ $re_ls ]] && ls=${BASH_REMATCH[1]}
		fi
		if out=$(bed_isergwctl 3 --timeout 5 --json alua show --dg dg1 2>/dev/null | tr -d '\n '); then
			[[ $out =~ $re_ae ]] && ae=${BASH_REMATCH[1]}
			[[ $out =~ $re_as ]] && as=${BASH_REMATCH[1]}
		fi
		echo "$(bed_secs_since "$t0") $s $ce $ls $ae $as"
		next=$((next + 100000))
		now=$(bed_now_us)
		if [ "$next" -gt "$now" ]; then
			sleep "$(printf '0.%06d' $((next - now)))"
		else
			next=$now
		fi
	done
}

# node3_serves: node 3 synced at the cluster's generation, dg3 back on it,
# LUN 0 through it Active/Non-optimized
node3_serves() {
	ha_settled --serving "$HA_OWNERS" 1 2 3 &&
		bed_probe 3 0 2>/dev/null | grep -qx 'group 3 state 1 pref 0 ports 3'
}

ok=1
rm -f "$SCRATCH/sampler.stop"
sample_loop >"$SAMPLES" 2>"$SCRATCH/sampler.err" &
SAMPLER=$!
ha_check "restart node 3" bed_restart_node 3 || ok=0
T_RESTART=$BED_T0
if ha_check "node 3 serves again, synced at the cluster's generation" \
	bed_poll "$BED_WAIT_LIMIT" "node 3 serving again" node3_serves; then
	serve_s=$(bed_secs_since "$T_RESTART")
	notes+=("node 3 restarted -> synced and LUN 0 Active/Non-optimized through it: $serve_s s")
else
	ha_show_nodes 1 2 3
	ok=0
fi
# a few more samples of the settled state
samples_at_least() { [ "$(wc -l <"$SAMPLES")" -ge "$1" ]; }
bed_poll 10 "5 more samples of node 3" samples_at_least $(($(wc -l <"$SAMPLES") + 5))
touch "$SCRATCH/sampler.stop"
wait "$SAMPLER"

# a sample is bad when node 3's port group is not Unavailable (RTPG state 3)
# while its isergwd's configuration is older than G, or its lease is valid
# with a configuration older than G
bad=$(awk -v g="$G" '
	function old(e) { return e == "-" || e + 0 < g }
	($2 ~ /^[0-9]+$/ && $2 != 3 && old($3)) || ($4 == "valid" && old($3)) ||
	($6 != "-" && $6 != "unavailable" && $4 == "valid" && old($5)) { print }' "$SAMPLES")
if [ -n "$bad" ]; then
	bed_log "FAILED: node 3 served with a configuration older than generation $G:"
	printf '    %s\n' "$bad" >&2
	ok=0
fi
nsamples=$(wc -l <"$SAMPLES")
summary=$(awk '{ c[$2]++ } END { for (s in c) printf "%s%s=%d", (n++ ? " " : ""), s, c[s] }' "$SAMPLES")
first_serving=$(awk '$2 ~ /^[0-9]+$/ && $2 != 3 { print; exit }' "$SAMPLES")
notes+=("node 3 sampled $nsamples times (RTPG state of tpg 3 through node 3: $summary; 3 = Unavailable)")
notes+=("first sample with node 3 serving (t state epoch lease alua-epoch dg1-state): ${first_serving:-none}")
if [ "$nsamples" -lt 10 ]; then
	bed_log "FAILED: only $nsamples samples of node 3 (sampler errors: $(tail -n 3 "$SCRATCH/sampler.err"))"
	ok=0
fi
if [ -z "$first_serving" ]; then
	bed_log "FAILED: no sample saw node 3 serving"
	ok=0
fi
gen3=$(ha_gw_status 3 | jq -r .config_epoch)
gen1=$(ha_gen_digest 1) && gen1=${gen1%% *}
if [ "$gen3" != "$gen1" ]; then
	bed_log "FAILED: node 3's isergwd holds epoch $gen3, the cluster generation $gen1"
	ok=0
fi
ha_check "node 3 lists LUNs 0 1 3" luns_are 3 "0 1 3" || ok=0
if out=$(bed_probe 3 3 2>&1); then
	echo "  LUN 3 through node 3: $(grep -E '^(rel_port|tpg|group 1) ' <<<"$out" | paste -sd'|')"
else
	bed_log "FAILED: LUN 3 through node 3: $(paste -sd'|' <<<"$out")"
	ok=0
fi
if out=$(bed_probe 3 2 2>&1); then
	bed_log "FAILED: LUN 2 still answers through node 3: $(paste -sd'|' <<<"$out")"
	ok=0
fi
ha_verdict "$ok" "node 3 back: Unavailable until it held generation >= $G, then LUN 3 and no LUN 2"

# ---------------------------------------------------------------- 4. no quorum

ADD4=$SCRATCH/add-lun4.json
jq --arg p "$BED_SHARED/lun4.img" \
	'.targets[0].luns += [{"lun": 4, "path": $p, "size": "64M", "device_group": "dg2"}]' \
	"$DEL2" >"$ADD4" || bed_die "jq"
ok=1
before=$(ha_gen_digest 1)
ha_check "partition node 1" bed_partition 1 || ok=0
ha_check "node 1 inquorate alone" bed_wait_inquorate 1 1 || ok=0
ha_check "nodes 2 3 quorate with 2" bed_wait_quorum 2 2 3 || ok=0
out=$(bed_cli 1 --timeout 60 cluster config apply "$ADD4" 2>&1)
rc=$?
echo "  apply add-lun4.json through node 1 alone (exit $rc): $(paste -sd'|' <<<"$out")"
if [ "$rc" -ne 1 ] || ! grep -qi 'quorum' <<<"$out"; then
	bed_log "FAILED: expected exit 1 and a reason naming the quorum"
	ok=0
fi
alone=$(ha_gen_digest 1)
if [ "$alone" != "$before" ]; then
	bed_log "FAILED: node 1 alone moved from generation $before to $alone"
	ok=0
fi
# the majority takes dg1 over meanwhile: wait for that before the heal
majority_took_dg1() {
	ha_status 2 | jq -e '.phase == "synced" and .quorate and
		([.device_groups[] | select(.name == "dg1") | .owner][0] | . == "n2" or . == "n3")' >/dev/null
}
ha_check "the majority takes dg1 over" bed_poll "$BED_WAIT_LIMIT" "dg1 on node 2 or 3" majority_took_dg1 || ok=0
majority=$(ha_gen_digest 2)
ha_check "heal node 1" bed_heal 1 || ok=0
ha_check "3 members after the heal" bed_wait_quorum 3 "${NODES[@]}" || ok=0
ha_check "every node synced after the heal" \
	ha_wait_settled "every node synced with dg1=n1 dg2=n2 dg3=n3" --serving "$HA_OWNERS" "${NODES[@]}" || ok=0
after=$(ha_gen_digest 1)
notes+=("no quorum: node 1 alone at ${alone%% *}, the majority at ${majority%% *} before the heal, everyone at ${after%% *} after it")
if [ "${after%% *}" -lt "${majority%% *}" ]; then
	bed_log "FAILED: after the heal node 1 is at ${after%% *}, below the majority's ${majority%% *}"
	ok=0
fi
for k in "${NODES[@]}"; do
	l=$(config_luns "$k")
	[ "$l" = "0 1 3" ] || { bed_log "FAILED: node $k's cluster configuration has LUNs '$l'"; ok=0; }
	ha_check "node $k lists LUNs 0 1 3" luns_are "$k" "0 1 3" || ok=0
done
[ -e "$BED_SHARED/lun4.img" ] && notes+=("note: $BED_SHARED/lun4.img exists although the change was refused")
ha_verdict "$ok" "refused without quorum, nothing of it anywhere after the heal"

# ---------------------------------------------------------------- 5. the validator

BS=$SCRATCH/block-size.json
UK=$SCRATCH/unknown-key.json
ST=$SCRATCH/store-twice.json
jq '.targets[0].luns[1].block_size = 1000' "$DEL2" >"$BS" || bed_die "jq"
jq '.targets[0].luns[1].bogus_key = 1' "$DEL2" >"$UK" || bed_die "jq"
# LUN 1 on LUN 0's store by another spelling: "//DIR/./FILE", or for a backend LUN
# "iscsi://user%secret@HOST:PORT/IQN/0N"
jq '.targets[0].luns[0].path as $p | .targets[0].luns[1].path =
	(if ($p | startswith("iscsi://"))
	 then ($p | sub("^iscsi://"; "iscsi://user%secretsecret@") | sub("/(?<n>[0-9]+)$"; "/0\(.n)"))
	 else ("/" + ($p | sub("/(?<f>[^/]*)$"; "/./\(.f)"))) end)' "$DEL2" >"$ST" || bed_die "jq"
ST_WHY="LUN $(jq -r '.targets[0].luns[1].lun' "$ST") of $(jq -r '.targets[0].iqn' "$ST") and LUN 0 of $(jq -r '.targets[0].iqn' "$ST") name one backing store ($(jq -r '.targets[0].luns[0].path' "$ST"))"
ok=1
declare -A GEN=() HAPOS=()
for k in "${NODES[@]}"; do
	GEN[$k]=$(ha_gen_digest "$k")
	HAPOS[$k]=$(bed_log_lines "$k" ha)
done
for c in "$BS:targets[0].luns[1].block_size" "$UK:targets[0].luns[1].bogus_key" \
	 "$ST:targets[0].luns[1].path"; do
	f=${c%%:*} path=${c#*:}
	out=$(bed_cli 1 --timeout 60 cluster config apply "$f" 2>&1)
	rc=$?
	echo "  apply $(basename "$f") through node 1 (exit $rc): $(paste -sd'|' <<<"$out")"
	if [ "$rc" -ne 1 ] || ! grep -qF "$path" <<<"$out"; then
		bed_log "FAILED: expected exit 1 and the key path $path"
		ok=0
	fi
	if [ "$f" = "$ST" ] && ! grep -qF "$ST_WHY" <<<"$out"; then
		bed_log "FAILED: the reason does not name both LUNs: $ST_WHY"
		ok=0
	fi
done
ha_check "every node synced" ha_wait_settled "every node synced" --serving "$HA_OWNERS" "${NODES[@]}" || ok=0
for k in "${NODES[@]}"; do
	now=$(ha_gen_digest "$k")
	if [ "$now" != "${GEN[$k]}" ]; then
		bed_log "FAILED: node $k moved from ${GEN[$k]} to $now"
		ok=0
	fi
	if line=$(tail -n +"$((HAPOS[$k] + 1))" "$(bed_logfile "$k" ha)" | grep -E -m1 'generation [0-9]+: '); then
		bed_log "FAILED: node $k's agent made a generation: $line"
		ok=0
	fi
	l=$(config_luns "$k")
	[ "$l" = "0 1 3" ] || { bed_log "FAILED: node $k's cluster configuration has LUNs '$l'"; ok=0; }
done
ha_verdict "$ok" "refused by the validator with the key path, nothing applied anywhere"

# ---------------------------------------------------------------- the end

ha_cluster_down

echo "ha.config: measured:"
printf '  %s\n' "${notes[@]}"
echo "ha.config: results:"
printf '  %s\n' "${results[@]}"
[ "$fail" -eq 0 ] && echo "ha.config: OK" || echo "ha.config: FAILED (logs under $SCRATCH)"
exit "$fail"
