#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# deploy.install: the packages of build/debs/ (deploy.packages builds them)
# installed as an operator does, in a clean Debian 12 root booted with
# systemd as PID 1 (systemd-nspawn, its own network namespace, a throw-away
# overlay over the root cached by tests/deploy/mkroot.sh). What runs inside
# is tests/deploy/inside.sh.
#
# The booted container has no network: the packages' dependencies are
# downloaded first (apt-get install --download-only, container not booted,
# host network) into an apt cache kept with the root, so that the `apt
# install` of the README's standalone packages (isergw, isergw-cli) and
# corosync inside resolves and installs them as on a real machine.
#
#   ISERGW_TEST_BREAK=early-ready  run with isergwd.service as Type=simple
#                                  (ready before serving): the test must fail
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_root
need_tools debootstrap systemd-nspawn nsenter
ls "$DEBS"/isergw_*.deb >/dev/null 2>&1 || fail "no packages in $DEBS (run deploy.packages)"
# mkroot.sh's messages (the first time: debootstrap) go to our stderr
root=$("$SRC/tests/deploy/mkroot.sh")
apt_state=$CACHE/apt-$(basename "$root")
mkdir -p "$apt_state/archives/partial" "$apt_state/lists/partial"
if [ ! -e "$apt_state/lists/.copied" ]; then
	cp -a "$root/var/lib/apt/lists/." "$apt_state/lists/"
	touch "$apt_state/lists/.copied"
fi
APT_BINDS=(--bind="$apt_state/archives":/var/cache/apt/archives
	   --bind="$apt_state/lists":/var/lib/apt/lists)
# what inside.sh installs: the standalone packages (README.md) and corosync
# for isergw-ha
PKGS="./isergw_*.deb ./isergw-cli_*.deb corosync"

work=$(mktemp -d)
nspawn_pid=
cleanup() {
	if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
		kill -KILL "$nspawn_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

say "downloading the dependencies (apt-get install --download-only)"
download() {
	"${NSPAWN[@]}" --pipe -D "$root" "${APT_BINDS[@]}" --bind-ro="$DEBS":/debs \
		sh -c "cd /debs && apt-get install -q -y --download-only $PKGS" \
		>"$work/download.log" 2>&1
}
# one run at a time in the shared apt cache
exec 8>"$apt_state/.lock"
flock 8
if ! download; then
	# lists older than the mirror: refresh them once
	"${NSPAWN[@]}" --pipe -D "$root" "${APT_BINDS[@]}" apt-get update -q >"$work/update.log" 2>&1 ||
		{ cat "$work/update.log"; fail "apt-get update failed"; }
	download || { cat "$work/download.log"; fail "cannot download the dependencies"; }
fi
say "  $(ls "$apt_state"/archives/*.deb 2>/dev/null | wc -l) packages in the apt cache"
# the booted container gets this run's own copy (hard links where possible),
# so that runs side by side do not share apt's locks
for d in archives lists; do
	cp -al "$apt_state/$d" "$work/$d" 2>/dev/null || { rm -rf "$work/$d"; cp -a "$apt_state/$d" "$work/$d"; }
done
flock -u 8
APT_BINDS=(--bind="$work/archives":/var/cache/apt/archives --bind="$work/lists":/var/lib/apt/lists)

say "booting the root with systemd (systemd-nspawn -b, private network)"
mkdir -p "$work/out"
"${NSPAWN[@]}" -b --private-network -D "$root" "${APT_BINDS[@]}" \
	--bind-ro="$DEBS":/debs --bind-ro="$SRC/tests/deploy/inside.sh":/test/inside.sh \
	>"$work/console.log" 2>&1 &
nspawn_pid=$!
leader=
for _ in $(seq 1 300); do
	leader=$(pgrep -P "$nspawn_pid" -x systemd || true)
	[ -n "$leader" ] && break
	kill -0 "$nspawn_pid" 2>/dev/null || { cat "$work/console.log"; fail "nspawn exited"; }
	sleep 0.1
done
[ -n "$leader" ] || fail "no systemd in the container"
# systemctl answers once PID 1's private socket exists; then wait for the boot
state=
for _ in $(seq 1 600); do
	state=$(timeout 120 nsenter -t "$leader" -a systemctl is-system-running --wait 2>/dev/null ||
		true)
	case "$state" in
	""|offline|unknown) sleep 0.1 ;;
	*) break ;;
	esac
done
say "  booted: $state"
case "$state" in
running|degraded) ;;
*) cat "$work/console.log"; fail "the container did not boot ($state)" ;;
esac

rc=0
nsenter -t "$leader" -a env ISERGW_TEST_BREAK="${ISERGW_TEST_BREAK:-}" T0=$((T0 - SECONDS)) \
	bash /test/inside.sh || rc=$?

say "powering the container off"
kill -TERM "$nspawn_pid"
for _ in $(seq 1 300); do
	kill -0 "$nspawn_pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$nspawn_pid" 2>/dev/null; then
	say "  the container did not power off in 30 s: killed"
	kill -KILL "$nspawn_pid"
fi
wait "$nspawn_pid" 2>/dev/null || true
nspawn_pid=
[ $rc -eq 0 ] || fail "inside the container (exit $rc)"
say "PASS: deploy.install in $((SECONDS - T0)) s"
