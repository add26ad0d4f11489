#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# vm.rolling-upgrade (host side): the two package builds, then the VM.
#
#   tests/vm/rolling-upgrade.sh --from DIR --work DIR --timeout S
#                               --stall-probe PATH
#
# --from holds the packages deploy.packages built (build/debs, this test's
# fixture); a second build of the same tree as version FROM+next1 goes to
# WORK/debs-next (deploy/build-debs.sh --version --out; about 20 s on an idle
# machine); then tests/vm/guest-rolling-upgrade.sh runs in the VM
# (run-vm.sh) and upgrades the three nodes from the one to the other.
# Exit: the VM's (77 when the packages or the VM cannot be had here).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
FROM='' WORK='' TIMEOUT=1800 PROBE=''
while [ $# -gt 0 ]; do
	case "$1" in
	--from) FROM=$2; shift 2 ;;
	--work) WORK=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--stall-probe) PROBE=$2; shift 2 ;;
	-h | --help) sed -n '3,14p' "$0"; exit 0 ;;
	*) echo "rolling-upgrade.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
say() { printf 'rolling-upgrade: %s\n' "$*" >&2; }
[[ -n $WORK && -n $PROBE ]] || { say "--work and --stall-probe required"; exit 2; }
if ! ls "$FROM"/isergw_*.deb >/dev/null 2>&1; then
	if [ "${CI:-}" = true ] || [ "${ISERGW_VM_REQUIRE:-0}" = 1 ]; then
		say "error: no packages in $FROM (deploy.packages makes them)"
		exit 1
	fi
	say "skipped: no packages in $FROM (deploy.packages makes them)"
	exit 77
fi
v=$(dpkg-deb -f "$(ls "$FROM"/isergw_*.deb | head -n 1)" Version)
next=$WORK/debs-next
say "building the packages again as $v+next1 into $next"
if ! DEB_BUILD_OPTIONS="nocheck parallel=2" "$src/deploy/build-debs.sh" --version "$v+next1" \
	--out "$next" >"$WORK/debs-next.log" 2>&1; then
	tail -n 30 "$WORK/debs-next.log" >&2
	say "error: the second build failed (log: $WORK/debs-next.log)"
	exit 1
fi
from=$WORK/debs-from
rm -rf "$from" && mkdir -p "$from" && cp "$FROM"/*.deb "$from"/ || exit 1
exec bash "$here/run-vm.sh" --work "$WORK" --name rolling-upgrade --timeout "$TIMEOUT" \
	--mem 4096 "$here/guest-rolling-upgrade.sh" --from "$from" --to "$next" \
	--stall-probe "$PROBE"
