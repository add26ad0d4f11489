#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A rolling upgrade under host I/O (runs in the guest: tests/vm/run-vm.sh;
# ctest vm.rolling-upgrade).
#
#   run-vm.sh tests/vm/guest-rolling-upgrade.sh --from DIR --to DIR
#             --stall-probe PATH
#
# --from and --to hold two builds of the Debian packages (deploy/build-debs.sh)
# with different versions. The guest installs the --from build (dpkg -i: the
# guest's root is an overlay of the host's, so nothing reaches the host), then
# runs the HA bed of guest-ha-multipath.sh from the installed binaries
# (/usr/sbin/isergwd, /usr/sbin/isergw-ha, /usr/sbin/isergwctl): three nodes
# with corosync, the kernel iSER initiator logged in to all three through
# dm-multipath, fio writing and verifying LUN 0's map and stall_probe reading
# it every 10 ms. Then, node by node, as docs/deploy.md's rolling upgrade
# says: drain (its device groups move away), stop isergw-ha and isergwd,
# install the --to build, start them again, wait until the node is
# synchronised and serving, undrain (its groups come back), wait until the
# host uses its path again.
#
# The nodes share the guest's root, so the --to packages are installed once,
# at the first node's turn (dpkg -i over the installed --from build, the
# maintainer scripts included); a node runs the new build from its restart on
# (checked: its isergwd runs the installed file, the others still the
# replaced one), so the cluster runs with both builds side by side until the
# last node is done.
#
# Fails on: a fio error or verify failure, a probe read error, a daemon that
# does not stop cleanly (status 0) or does not come back, a node that does not
# run the new build after its restart, a cluster or host state that does not
# come within the bed's limit, anything left behind. Each node's drain,
# restart and undrain are printed with the host's longest I/O stall.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$here/guest-lib.sh"
# shellcheck source=tests/ha/bed.sh
. "$src/tests/ha/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$src/tests/ha/ha_lib.sh"

FROM=
TO=
PROBE=
export BED_STOR=rxe
BED_STOR=rxe
# the emulated machine's timings (guest-ha-multipath.sh says why)
BED_TOKEN=${VM_TOKEN_MS:-3000}
LEASE_MS=${VM_LEASE_MS:-4000}
BED_POLL_S=0.5
SCRATCH=/tmp/ha
# the binaries come from the packages, not from a build tree
BED_ISERGWD=/usr/sbin/isergwd
BED_HA=/usr/sbin/isergw-ha
BED_ISERGWCTL=/usr/sbin/isergwctl

# ---------------------------------------------------------------- packages

# debs DIR: the packages the gateway node needs, from a build's directory
debs() {
	local d
	for d in "$1"/isergw_*.deb "$1"/isergw-cli_*.deb; do
		[ -f "$d" ] || { bed_log "no $d"; return 1; }
		echo "$d"
	done
}
# version DIR: the version of the build's isergw package
version() { dpkg-deb -f "$(debs "$1" | head -n 1)" Version; }

# pkg_install DIR: dpkg -i the build (no daemon is started: the guest runs no
# systemd, so the maintainer scripts leave the services alone)
pkg_install() {
	local pkgs t0
	mapfile -t pkgs < <(debs "$1") || return 1
	mkdir -p "$SCRATCH"
	t0=$(vm_now)
	# --force-unsafe-io: no fsync of each unpacked file; the guest's root is
	# an overlay on a tmpfs that goes with the VM, and the syncs are what made
	# the upgrade take minutes under TCG beside the bed's I/O
	if ! dpkg --force-unsafe-io -i "${pkgs[@]}" >>"$SCRATCH/dpkg.log" 2>&1; then
		tail -n 20 "$SCRATCH/dpkg.log" >&2
		return 1
	fi
	vm_log "installed $(dpkg-query -W -f '${Package} ${Version}, ' isergw isergw-cli)" \
		"in $(vm_since "$t0") s"
}
# man-db's trigger re-indexes the manual pages of the whole (9p) root after each
# dpkg -i: minutes under TCG with the bed's I/O running, and nothing this test
# looks at (the guest's root is an overlay over a tmpfs: the host keeps its file)
rm -f /var/lib/man-db/auto-update

# runs_installed K: node K's isergwd and agent run the files installed now
# (a process started before dpkg replaced its binary runs a deleted file)
runs_installed() {
	local k=$1 s pid exe
	for s in isergwd ha; do
		pid=$(bed_pid "$k" "$s") || return 1
		exe=$(readlink "/proc/$pid/exe") || return 1
		[[ $exe != *"(deleted)" ]] || return 1
	done
}

# the --from build is installed before anything else: the bed wants the
# binaries it runs to exist when it starts
for ((i = 1; i < $#; i++)); do
	j=$((i + 1))
	[ "${!i}" = --from ] && FROM=${!j}
done
[[ -n $FROM && -d $FROM ]] || bed_die "--from DIR (the packages to start from) required"
pkg_install "$FROM" || bed_die "the --from packages did not install"
for b in "$BED_ISERGWD" "$BED_HA" "$BED_ISERGWCTL"; do
	[ -x "$b" ] || bed_die "the packages installed no $b"
done
ha_options 3,33 --from FROM --to TO --stall-probe PROBE -- \
	--prefix vu --subnet 30 --scratch "$SCRATCH" --isergwd "$BED_ISERGWD" \
	--isergwctl "$BED_ISERGWCTL" --ha "$BED_HA" "$@"
ha_need --stall-probe "$PROBE" stall_probe
[[ -d $TO ]] || bed_die "--to DIR (the packages to upgrade to) required"

# shellcheck source=tests/vm/guest-ha-host.sh
. "$here/guest-ha-host.sh"
HOST_LOGS=("$SCRATCH/dpkg.log")
trap host_finish EXIT

# ---------------------------------------------------------------- events

# _group_off K J...: every node J reports dgK's owner, and it is not node K
_group_off() {
	local k=$1 j o
	shift
	for j in "$@"; do
		o=$(ha_owner "$j" "dg$k") || return 1
		[[ -n $o && $o != "n$k" ]] || return 1
	done
}

# upgrade K: drain, stop, install (node 1's turn only), start, undrain; node
# K's own group (dgK, which prefers it) moves away and comes back
upgrade() {
	local k=$1 t0 cl j
	t0=$(now_s)
	bed_mark "node $k drained"
	bed_cli 1 cluster drain "n$k" >/dev/null || { bed_log "drain n$k refused"; return 1; }
	bed_poll "$BED_WAIT_LIMIT" "dg$k off node $k" _group_off "$k" "${HA_NODES[@]}" || return 1
	cl=$(bed_secs_since "$BED_T0")
	# the host on dg1's owner's path (not ready(): dgK is off its preferred node now)
	j=$(owner_node 1) || return 1
	bed_poll "$BED_WAIT_LIMIT" "the host on node $j's path, every path active" _mp_serving "$j" ||
		{ multipath -ll "$MAP" >&2; return 1; }
	record planned "drain node $k (dg$k moves away)" "$t0" "$cl"

	t0=$(now_s)
	bed_mark "node $k restarted"
	ha_check "isergw-ha on node $k stops with status 0" bed_stop_ha "$k" || return 1
	ha_check "isergwd on node $k stops with status 0" bed_stop_isergwd "$k" || return 1
	if [ "$k" = 1 ]; then
		pkg_install "$TO" || { bed_log "the --to packages did not install"; return 1; }
	fi
	bed_start_isergwd "$k" || return 1
	bed_start_ha "$k" --lease-ms "$LEASE_MS" || return 1
	ha_check "node $k runs the new build" runs_installed "$k" || return 1
	for j in "${HA_NODES[@]}"; do
		[ "$j" -gt "$k" ] || continue
		ha_check "node $j still runs the old build beside it" eval "! runs_installed $j"
	done
	bed_poll "$BED_WAIT_LIMIT" "node $k synced and serving" ha_synced --serving "$k" ||
		return 1
	cl=$(bed_secs_since "$BED_T0")
	record planned "node $k stopped, upgraded, started" "$t0" "$cl"

	t0=$(now_s)
	bed_mark "node $k undrained"
	bed_cli 1 cluster undrain "n$k" >/dev/null || { bed_log "undrain n$k refused"; return 1; }
	ha_wait_settled "node $k undrained, every group home" --serving "$HA_OWNERS" \
		"${HA_NODES[@]}" || return 1
	cl=$(bed_secs_since "$BED_T0")
	ready 1 || return 1
	record planned "undrain node $k (dg$k comes back)" "$t0" "$cl"
}

# ---------------------------------------------------------------- the run

v_from=$(version "$FROM") || bed_die "no packages in $FROM"
v_to=$(version "$TO") || bed_die "no packages in $TO"
[ "$v_from" != "$v_to" ] || bed_die "--from and --to are the same version ($v_from)"

host_up "$LEASE_MS"
host_io_start

ok=1
for k in "${HA_NODES[@]}"; do
	upgrade "$k" || { bed_log "FAILED: upgrade of node $k"; ok=0; break; }
done
[ "$ok" -eq 1 ] || fail=1
v_now=$(dpkg-query -W -f '${Version}' isergw 2>/dev/null)
ha_check "isergw $v_to installed at the end (is $v_now)" [ "$v_now" = "$v_to" ]

host_io_stop
host_down

echo "vm.rolling-upgrade: $v_from -> $v_to, node by node; probe: 4 KiB direct reads every 10 ms, $done_line"
smax=0
for e in "${EVENTS[@]}"; do
	IFS='|' read -r kind what cl st <<<"$e"
	printf 'vm.rolling-upgrade: %-40s after %7s s, host I/O stall %6s s\n' "$what" "$cl" "$st"
	smax=$(awk -v a="$smax" -v b="$st" 'BEGIN { print (b > a ? b : a) }')
done
echo "vm.rolling-upgrade: longest host I/O stall $smax s (goal for planned moves: 0.5 s)"
[ "${#EVENTS[@]}" -eq $((3 * BED_NODES)) ] || fail=1
[ "$fail" -eq 0 ] && echo "vm.rolling-upgrade: OK" || echo "vm.rolling-upgrade: FAILED (logs in $VM_OUT)"
exit "$fail"
