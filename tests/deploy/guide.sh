#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# docs/deploy.md followed word for word (ctest deploy.guide). Root only.
#
#   tests/deploy/guide.sh --debs DIR --io PATH [--scratch DIR] [--prefix P]
#                         [--guide FILE] [--keep] [--tgt-port N]
#                         [--soak SECONDS] [--hold STATE]
#   tests/deploy/guide.sh --attach STATE --io PATH --soak SECONDS
#   tests/deploy/guide.sh --down STATE
#
# --debs holds the packages (deploy/build-debs.sh: build/debs), --io the HA
# tests' client (ha_io); --guide another copy of docs/deploy.md (to show the
# test failing on a wrong guide). Three gateway nodes gw1..gw3, each a
# Debian 12 container booted with systemd as PID 1 (systemd-nspawn) on the
# clean root of tests/deploy/mkroot.sh, each in a network namespace of its own
# with the guide's interfaces (mgmt, link0, link1, storA, storB, backend) and
# addresses, joined by bridges in a switch namespace; a backend iSCSI array
# (tgt, 10.30.0.200) and a host (10.20.0.50, 10.21.0.50, 192.0.2.50) in
# namespaces of their own.
#
# The guide's blocks (marked "<!-- guide: ID node=N -->" in docs/deploy.md)
# run in the containers in the guide's order, on the nodes they name:
#   install           once, into the image the three containers share (the
#                     same packages on every node); apt fetches the
#                     dependencies from the Debian mirror
#   corosync-conf, corosync-key, corosync-start, gateway-start, cluster-config,
#   api-token, pacemaker-start, pacemaker-config, provision, provision-check
# What a rack does by other means the test does itself, and says so: it copies
# /etc/corosync/authkey from gw1 to the others (the guide's scp), and the
# fencing of pacemaker-config uses the test's fence device instead of IPMI
# (TEST_FENCE below: the only change to a block, printed).
#
# Checked at the end: the cluster quorate and every node synced with its
# preferred groups; the API answering with the token on every node's
# management address; pacemaker running the floating portal; the host, with
# the ACL's initiator name and CHAP, writes and verifies LUN 0 through every
# node's portal and through the floating portal (ha_io: 0 mismatches).
# Fails on any block that fails (its output is printed) or any check.
#
# The soak (--soak SECONDS; ctest deploy.soak, tests/bench/pacemaker_soak.sh):
# the guide's cluster left alone once every pacemaker resource has started,
# the host's session doing I/O through the floating portal for SECONDS; then
# every fail-count (crm_mon -1 -f) must be 0, no resource started again in
# that time, the session never lost (one login), no command failed or sent
# again and every block verified. It prints those figures.
#
# Sharing one cluster between two ctest tests: --hold STATE leaves the
# cluster up after a run that passed (its processes and mounts described in
# STATE, a shell file); --attach STATE runs only the soak on it and leaves it
# up; --down STATE takes it down (the journals saved, as at the end of a
# run). --tgt-port is the backend tgtd's control port (default 36; another
# for a second run at the same time, with another --prefix and --scratch).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)

# shellcheck source=tests/deploy/lib.sh
. "$here/lib.sh"    # need_root, need_tools, skip (77 unless CI must not), DEBS
IO=
SCRATCH=/tmp/isergw-deploy-guide
P=dg
KEEP=0
GUIDE=$src/docs/deploy.md
MODE=run
STATE=
SOAK=0
TGT_PORT=36
while [ $# -gt 0 ]; do
	case "$1" in
	--soak) SOAK=$2; shift 2 ;;
	--hold) MODE=hold STATE=$2; shift 2 ;;
	--attach) MODE=attach STATE=$2; shift 2 ;;
	--down) MODE=down STATE=$2; shift 2 ;;
	--tgt-port) TGT_PORT=$2; shift 2 ;;
	--debs) DEBS=$2; shift 2 ;;
	--io) IO=$2; shift 2 ;;
	--scratch) SCRATCH=$2; shift 2 ;;
	--prefix) P=$2; shift 2 ;;
	--guide) GUIDE=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	-h | --help) sed -n '3,53p' "$0"; exit 0 ;;
	*) echo "guide.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

log() { printf 'guide: %s\n' "$*" >&2; }
die() { log "error: $*"; bad=1; exit 1; }
need_root
case "$SOAK:$TGT_PORT" in *[!0-9:]* | :* | *:) die "--soak and --tgt-port take numbers" ;; esac
[[ $MODE == down || ( -n $IO && -x $IO ) ]] || die "--io PATH (ha_io) required"
[[ $MODE != attach || $SOAK -gt 0 ]] || die "--attach wants --soak SECONDS"
if [[ $MODE == run || $MODE == hold ]]; then
	need_tools systemd-nspawn debootstrap tgtd tgtadm ip nsenter jq
	ls "$DEBS"/isergw_*.deb >/dev/null 2>&1 || skip "no packages in $DEBS (deploy.packages makes them)"
fi
NODES=(1 2 3)
bad=0
ok=0

# ---------------------------------------------------------------- the guide

# block ID: the code block after "<!-- guide: ID ... -->"
block() {
	awk -v id="$1" '
		$0 ~ "^<!-- guide: " id " " { f = 1; next }
		f && /^```/ { if (b) exit; b = 1; next }
		b' "$GUIDE"
}
# block_node ID: the node= of the marker
block_node() { sed -n "s/^<!-- guide: $1 node=\\([a-z0-9]*\\) -->.*/\\1/p" "$GUIDE"; }

# The one change the test makes to a block: fencing through the test's
# fence device (a rack fences through the nodes' BMCs).
TEST_FENCE=(-E -e 's|--fence-ipmi gw1,[^ ]+|--fence-test /run/isergw-test-fence/nodes|'
	-e 's|--fence-ipmi gw[0-9],[^ ]+||')

# ---------------------------------------------------------------- network

# role interface address-prefix (node K: PREFIX.1K, as the guide's plan)
ROLES=(mgmt:192.0.2 link0:10.10.0 link1:10.11.0 storA:10.20.0 storB:10.21.0 backend:10.30.0)
SW=${P}sw
node_ns() { echo "${P}gw$1"; }
netns_up() {
	local k r role pre ns
	ip netns add "$SW" || return 1
	ip -n "$SW" link set lo up
	for r in "${ROLES[@]}"; do
		role=${r%%:*}
		ip -n "$SW" link add "br-$role" type bridge && ip -n "$SW" link set "br-$role" up || return 1
	done
	# node K, the host (50) and the array (200) on the bridges
	for k in "${NODES[@]}" host be; do
		if [ "$k" = host ]; then ns=${P}host; elif [ "$k" = be ]; then ns=${P}be; else ns=$(node_ns "$k"); fi
		ip netns add "$ns" || return 1
		ip -n "$ns" link set lo up
		for r in "${ROLES[@]}"; do
			role=${r%%:*} pre=${r#*:}
			case "$k:$role" in
			host:storA | host:storB | host:mgmt) addr=$pre.50 ;;
			be:backend) addr=$pre.200 ;;
			host:* | be:*) continue ;;
			*) addr=$pre.1$k ;;
			esac
			ip link add "$role" netns "$ns" type veth peer name "$k-$role" netns "$SW" || return 1
			ip -n "$SW" link set "$k-$role" master "br-$role" up || return 1
			ip -n "$ns" addr add "$addr/24" dev "$role" || return 1
			ip -n "$ns" link set "$role" up || return 1
		done
	done
}
netns_down() {
	local ns
	for ns in "$SW" "${P}host" "${P}be" $(for k in "${NODES[@]}"; do node_ns "$k"; done); do
		[ -e "/run/netns/$ns" ] || continue
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
}

# ---------------------------------------------------------------- containers

IMG=$SCRATCH/image
APT_CACHE=${ISERGW_TEST_CACHE:-/var/cache/isergw-test}/apt-archives
declare -A NODE_PID=() # K -> its systemd-nspawn process

# the image: the clean root with the guide's install block run in it
image_up() {
	local root
	root=$("$here/mkroot.sh") || return 1
	mkdir -p "$IMG/up" "$IMG/work" "$IMG/m" "$APT_CACHE/partial" || return 1
	mount -t overlay overlay -o "lowerdir=$root,upperdir=$IMG/up,workdir=$IMG/work" "$IMG/m" ||
		return 1
	cp "$DEBS"/*.deb "$IMG/m/root/" || return 1
	log "block install (once, into the image the nodes share):"
	block install | sed 's/^/    /' >&2
	# one run at a time in the apt cache
	exec 8>"$APT_CACHE.lock"
	flock 8
	if ! systemd-nspawn -q -D "$IMG/m" --register=no --keep-unit --chdir=/root \
		--bind="$APT_CACHE:/var/cache/apt/archives" \
		--setenv=DEBIAN_FRONTEND=noninteractive \
		/bin/bash -ec "apt-get update -q; $(block install)" >"$SCRATCH/install.log" 2>&1; then
		tail -n 30 "$SCRATCH/install.log" >&2
		umount "$IMG/m"
		return 1
	fi
	flock -u 8
	rm -f "$IMG/m/root/"*.deb
	# the test's fence device (fence_guide_test, under the name the set-up
	# script's --fence-test configures)
	install -m 0755 "$here/fence_guide_test" "$IMG/m/usr/sbin/fence_isergw_test" || return 1
	umount "$IMG/m"
	ROOT=$root
}

node_dir() { echo "$SCRATCH/gw$1"; }
# boot K: container gwK on the image, systemd as PID 1, in its namespace
boot() {
	local k=$1 d
	d=$(node_dir "$k")
	mkdir -p "$d/up" "$d/work" "$d/m" || return 1
	mount -t overlay overlay -o "lowerdir=$IMG/up:$ROOT,upperdir=$d/up,workdir=$d/work" "$d/m" ||
		return 1
	{
		echo "127.0.0.1 localhost"
		for j in "${NODES[@]}"; do echo "192.0.2.1$j gw$j"; done
	} >"$d/m/etc/hosts"
	systemd-nspawn -q -b -D "$d/m" -M "gw$k" --register=no --keep-unit \
		--network-namespace-path="/run/netns/$(node_ns "$k")" --capability=all \
		--bind="$SCRATCH/fence:/run/isergw-test-fence" \
		--console=pipe </dev/null >"$d/console.log" 2>&1 &
	NODE_PID[$k]=$!
}
leader() { pgrep -P "${NODE_PID[$1]}" | head -n 1; }
# on K CMD...: runs CMD in container gwK (as root, a login environment)
on() {
	local k=$1 pid
	shift
	pid=$(leader "$k") || return 1
	nsenter -t "$pid" -m -u -i -n -p -r -w -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root TERM=dumb LANG=C.UTF-8 /bin/bash -c 'cd /root && "$@"' bash "$@"
}
_booted() {
	local s
	s=$(on "$1" systemctl is-system-running 2>/dev/null)
	[[ $s == running || $s == degraded ]]
}
poll() {
	local secs=$1 what=$2 end
	shift 2
	end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$end" ] || { log "timed out ($secs s): $what"; return 1; }
		sleep 1
	done
}

# The test's fence device: pacemaker's agent in a container writes the node
# to fence into /run/isergw-test-fence (a directory of the test's); the test
# powers that container off (SIGKILL to its init: every process of it).
fence_watch() {
	local f k
	while sleep 0.2; do
		for f in "$SCRATCH"/fence/*.req; do
			[ -e "$f" ] || continue
			k=$(basename "$f" .req)
			k=${k#gw}
			log "fence device: powering gw$k off"
			[ -n "${NODE_PID[$k]:-}" ] && kill -9 "$(leader "$k")" 2>/dev/null
			mv "$f" "${f%.req}.done"
		done
	done
}

teardown() {
	local k d
	# ISERGW_GUIDE_HOLD=S keeps the nodes up S seconds before they go (to look
	# around with nsenter after a failure)
	[ -z "${ISERGW_GUIDE_HOLD:-}" ] || { log "holding ${ISERGW_GUIDE_HOLD} s"; sleep "$ISERGW_GUIDE_HOLD"; }
	for k in "${NODES[@]}"; do
		d=$(node_dir "$k")
		if [ -n "${NODE_PID[$k]:-}" ]; then
			on "$k" journalctl --no-pager -o short-precise >"$d/journal.log" 2>&1
			kill -9 "$(leader "$k")" 2>/dev/null
			kill "${NODE_PID[$k]}" 2>/dev/null
			wait "${NODE_PID[$k]}" 2>/dev/null
		fi
		mountpoint -q "$d/m" && umount -l "$d/m"
	done
	[ -n "${WATCH:-}" ] && kill "$WATCH" 2>/dev/null
	[ -n "${TGT:-}" ] && { kill -9 "$TGT"; wait "$TGT"; } 2>/dev/null
	mountpoint -q "$IMG/m" && umount -l "$IMG/m"
	netns_down
	[ ! -s "$SCRATCH/fence.log" ] || sed 's/^/    /' "$SCRATCH/fence.log" >&2
	[ "$KEEP" -eq 1 ] || [ "$bad" -ne 0 ] || rm -rf "$IMG" "$SCRATCH"/gw?/up "$SCRATCH"/gw?/work
}
# what --attach and --down need of a --hold run
STATE_VARS=(SCRATCH P IMG ROOT TGT WATCH NODE_PID TGT_PORT)
cleanup() {
	case "$MODE" in
	attach) return ;; # the cluster stays for --down
	hold)
		if [ "$bad" -eq 0 ] && [ "$ok" -eq 1 ]; then
			declare -p "${STATE_VARS[@]}" >"$STATE"
			log "the cluster stays up for --attach; --down $STATE takes it down"
			return
		fi ;;
	esac
	teardown
}
trap cleanup EXIT

# run_block ID [SED-ARGS...]: the guide's block on the node(s) it names
run_block() {
	local id=$1 where text k nodes
	shift
	text=$(block "$id")
	[ -n "$text" ] || { log "no block $id in $GUIDE"; return 1; }
	[ $# -eq 0 ] || text=$(sed "$@" <<<"$text")
	where=$(block_node "$id")
	case "$where" in
	all) nodes=("${NODES[@]}") ;;
	gw[0-9]) nodes=("${where#gw}") ;;
	*) log "block $id: node=$where?"; return 1 ;;
	esac
	log "block $id on ${where}:"
	sed 's/^/    /' <<<"$text" >&2
	for k in "${nodes[@]}"; do
		if ! on "$k" /bin/bash -ec "$text" >"$(node_dir "$k")/$id.out" 2>&1; then
			log "FAILED: block $id on gw$k:"
			sed 's/^/    | /' "$(node_dir "$k")/$id.out" >&2
			return 1
		fi
	done
}

check() {
	local what=$1
	shift
	if "$@"; then log "ok: $what"; else log "FAILED: $what"; bad=1; fi
}

# ---------------------------------------------------------------- the soak

FLOAT_URL=iscsi://host1%host1-secret-12@10.20.0.100:3260/iqn.2026-11.com.example:storage/0

# every resource of the configuration started (pacemaker's view on gw1)
_all_started() {
	local m
	m=$(on 1 crm_mon -1 -r 2>&1) || return 1
	grep -q 'isergw-fp1-unblock.*Started' <<<"$m" &&
		! grep -Eq 'Stopped|Starting|Stopping|FAILED|blocked|unmanaged|Pending' <<<"$m"
}
# the start operations pacemaker ran so far, on every node (controld's log)
resource_starts() {
	local k n=0 c
	for k in "${NODES[@]}"; do
		c=$(on "$k" journalctl -q -o cat -u pacemaker 2>/dev/null |
			grep -c 'Result of start operation for isergw-')
		n=$((n + ${c:-0}))
	done
	echo "$n"
}

# soak SECONDS: the cluster left alone, the host's session doing I/O through
# the floating portal; then the figures, and the verdict
soak() {
	local secs=$1 starts0 starts1 io_rc=0 sum writes retries logins mism fc failed
	log "soak: waiting for every pacemaker resource to be started"
	poll 180 "every resource started" _all_started || { bad=1; return; }
	on 1 crm_mon -1 -r | sed 's/^/    /' >&2
	starts0=$(resource_starts)
	log "soak: $secs s of I/O through the floating portal (one session), the cluster left alone"
	ip netns exec "${P}host" "$IO" --seconds "$secs" --region-mib 8 --limit-s 60 --pause-ms 20 \
		--initiator iqn.2026-11.com.example:host1 "$FLOAT_URL" >"$SCRATCH/soak-io.log" 2>&1 ||
		io_rc=$?
	starts1=$(resource_starts)
	on 1 crm_mon -1 -f >"$SCRATCH/soak-crm_mon.txt" 2>&1
	sed 's/^/    /' "$SCRATCH/soak-crm_mon.txt" >&2
	# "fail-count=N" of every resource that has one (crm_mon -f lists them)
	fc=$(grep -o 'fail-count=[^ ]*' "$SCRATCH/soak-crm_mon.txt" | sort | uniq -c |
		awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }')
	failed=$(grep -o 'fail-count=[^ ]*' "$SCRATCH/soak-crm_mon.txt" | grep -vcx 'fail-count=0')
	sum=$(grep '^ha_io: writes' "$SCRATCH/soak-io.log" || echo 'no summary')
	writes=$(sed -n 's/^ha_io: writes \([0-9]*\),.*/\1/p' <<<"$sum")
	retries=$(sed -n 's/.*, retries \([0-9]*\).*/\1/p' <<<"$sum")
	logins=$(sed -n 's/.*, logins \([0-9]*\).*/\1/p' <<<"$sum")
	mism=$(sed -n 's/.*, mismatches \([0-9]*\).*/\1/p' <<<"$sum")
	grep -v '^ha_io: writes' "$SCRATCH/soak-io.log" | tail -n 20 | sed 's/^/    | /' >&2
	echo "soak: $secs s after the last resource started"
	echo "soak: fail-counts: ${fc:-none}; resources with a failure: $failed"
	echo "soak: resource starts in the soak: $((starts1 - starts0)) (before it: $starts0)"
	echo "soak: host I/O: ${writes:-?} writes, each read back and verified; $sum"
	echo "soak: session drops: $(( ${logins:-0} > 0 ? ${logins:-0} - 1 : 0 )); I/O errors (commands failed or sent again): ${retries:-?}; exit $io_rc"
	check "soak: every fail-count 0" test "$failed" -eq 0
	check "soak: no resource started again" test "$((starts1 - starts0))" -eq 0
	check "soak: the host's session never dropped (one login)" test "${logins:-0}" -eq 1
	check "soak: no I/O error (no command failed or sent again)" test "${retries:-1}" -eq 0
	check "soak: every block verified" test "$io_rc" -eq 0 -a "${mism:-1}" -eq 0 -a "${writes:-0}" -gt 0
}

# ---------------------------------------------------------------- the run

case "$MODE" in
attach | down)
	if [ ! -r "$STATE" ]; then
		[ "$MODE" = down ] && exit 0 # nothing held
		skip "no cluster held ($STATE): the --hold run failed or did not run"
	fi
	# shellcheck source=/dev/null
	. "$STATE"
	if [ "$MODE" = down ]; then
		teardown
		rm -f "$STATE"
		exit 0
	fi
	t0=$SECONDS
	soak "$SOAK"
	echo "deploy.soak: $((SECONDS - t0)) s in all"
	[ "$bad" -eq 0 ] && echo "deploy.soak: OK" || echo "deploy.soak: FAILED (logs in $SCRATCH)"
	exit "$bad" ;;
esac

[ -f "$GUIDE" ] || die "no $GUIDE"
# a cluster an earlier --hold run left (its --down did not run): down first
if [ -n "$STATE" ] && [ -r "$STATE" ]; then
	log "taking down the cluster $STATE describes (left by an earlier run)"
	# shellcheck source=/dev/null
	(. "$STATE" && teardown)
	rm -f "$STATE"
fi
netns_down
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH/fence" || die "cannot create $SCRATCH"
printf 'gw%s\n' "${NODES[@]}" >"$SCRATCH/fence/nodes"
# nspawn keeps its propagation directories under /run/systemd/nspawn, which
# it wants on a tmpfs; on a machine not booted with systemd /run may not be
mkdir -p /run/systemd/nspawn
mountpoint -q /run/systemd/nspawn || mount -t tmpfs tmpfs /run/systemd/nspawn || die "tmpfs"

t0=$SECONDS
image_up || die "the image (the guide's install block) could not be made"
log "image ready in $((SECONDS - t0)) s"
netns_up || die "the network could not be made"

# the array: tgt on 10.30.0.200, one 256 MiB LUN
truncate -s 256M "$SCRATCH/array.img"
ip netns exec "${P}be" tgtd -f --iscsi portal=10.30.0.200:3260 --control-port "$TGT_PORT" \
	>"$SCRATCH/tgtd.log" 2>&1 &
TGT=$!
poll 20 "tgtd" ip netns exec "${P}be" tgtadm -C "$TGT_PORT" --mode sys --op show || die "tgtd"
ip netns exec "${P}be" tgtadm -C "$TGT_PORT" --lld iscsi --mode target --op new --tid 1 \
	-T iqn.2026-11.com.example:array &&
	ip netns exec "${P}be" tgtadm -C "$TGT_PORT" --lld iscsi --mode logicalunit --op new --tid 1 --lun 1 \
		-b "$SCRATCH/array.img" &&
	ip netns exec "${P}be" tgtadm -C "$TGT_PORT" --lld iscsi --mode target --op bind --tid 1 -I ALL ||
	die "the array's target"

for k in "${NODES[@]}"; do boot "$k" || die "gw$k did not boot"; done
# (after the boots: it powers off through NODE_PID; its output in a file,
# since with --hold it outlives this script: ctest waits for every holder of
# the test's output to close it)
fence_watch >>"$SCRATCH/fence.log" 2>&1 </dev/null &
WATCH=$!
for k in "${NODES[@]}"; do
	poll 120 "gw$k booted (systemd running)" _booted "$k" || die "gw$k did not boot"
done
log "three nodes booted in $((SECONDS - t0)) s"

ok=1
steps=(corosync-conf corosync-key authkey corosync-start quorum gateway-start cluster-config
	api-token pacemaker-start pacemaker-config provision provision-check)
for s in "${steps[@]}"; do
	case "$s" in
	authkey)
		log "(the test) copies /etc/corosync/authkey from gw1 to gw2 and gw3"
		for k in 2 3; do
			install -m 0400 "$(node_dir 1)/m/etc/corosync/authkey" \
				"$(node_dir "$k")/m/etc/corosync/authkey" || { ok=0; break; }
		done ;;
	quorum)
		poll 60 "corosync quorate with 3 votes on gw1" \
			on 1 sh -c 'corosync-quorumtool -s | grep -q "^Quorate: *Yes"' || ok=0 ;;
	pacemaker-config)
		log "(the test) fences through its own device: sed ${TEST_FENCE[*]}"
		run_block "$s" "${TEST_FENCE[@]}" || ok=0 ;;
	*) run_block "$s" || ok=0 ;;
	esac
	[ "$ok" -eq 1 ] || { bad=1; break; }
done

if [ "$ok" -eq 1 ]; then
	_synced() {
		local k st
		for k in "${NODES[@]}"; do
			st=$(on "$k" isergwctl cluster status --json) || return 1
			jq -e '.quorate and .phase == "synced" and .isergwd_epoch == .generation and
				([.device_groups[] | select(.name | IN("a", "b", "c")) | {(.name): .owner}] | add) ==
				{"a": "gw1", "b": "gw2", "c": "gw3"}' <<<"$st" >/dev/null || return 1
		done
	}
	check "every node synced and quorate, a/b/c on their preferred nodes" \
		poll 90 "every node synced" _synced
	for k in "${NODES[@]}"; do
		check "gw$k's API answers with the token on 192.0.2.1$k" \
			on "$k" isergwctl --api "http://192.0.2.1$k:8080" \
			--token-file /root/isergw-admin.token api status
	done
	_vip() { ip netns exec "${P}host" ping -c1 -W1 10.20.0.100 >/dev/null; }
	check "pacemaker placed the floating portal 10.20.0.100" poll 120 "the floating portal" _vip
	iqn=iqn.2026-11.com.example:storage
	urls=()
	for k in "${NODES[@]}"; do urls+=("iscsi://host1%host1-secret-12@10.20.0.1$k:3260/$iqn/0"); done
	for u in "${urls[@]}" "$FLOAT_URL"; do
		check "the host writes and verifies LUN 0 through ${u#*@}" \
			ip netns exec "${P}host" "$IO" --seconds 5 --region-mib 8 --limit-s 60 \
			--initiator iqn.2026-11.com.example:host1 "$u"
	done
fi

[ "$SOAK" -eq 0 ] || [ "$bad" -ne 0 ] || soak "$SOAK"

echo "deploy.guide: $((SECONDS - t0)) s in all"
[ "$bad" -eq 0 ] && echo "deploy.guide: OK" || echo "deploy.guide: FAILED (logs in $SCRATCH)"
exit "$bad"
