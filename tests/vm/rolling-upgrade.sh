#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# vm.rolling-upgrade (host side): the two package builds into the VM.
#
#   tests/vm/rolling-upgrade.sh --from DIR --to DIR --work DIR --timeout S
#                               --stall-probe PATH
#
# --from holds the packages deploy.packages built (build/debs), --to those
# deploy.packages-next made (the same packages repacked as version
# FROM+next1): the test's two fixtures. tests/vm/guest-rolling-upgrade.sh
# runs in the VM (run-vm.sh) and upgrades the three nodes from the one to the
# other. Exit: the VM's (77 when the packages or the VM cannot be had here).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
FROM='' TO='' WORK='' TIMEOUT=1800 PROBE=''
while [ $# -gt 0 ]; do
	case "$1" in
	--from) FROM=$2; shift 2 ;;
	--to) TO=$2; shift 2 ;;
	--work) WORK=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--stall-probe) PROBE=$2; shift 2 ;;
	-h | --help) sed -n '3,12p' "$0"; exit 0 ;;
	*) echo "rolling-upgrade.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
say() { printf 'rolling-upgrade: %s\n' "$*" >&2; }
[[ -n $WORK && -n $PROBE ]] || { say "--work and --stall-probe required"; exit 2; }
# the guest runs in /tmp: absolute paths only
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd) && PROBE=$(realpath "$PROBE") || exit 2
for d in "$FROM" "$TO"; do
	ls "$d"/isergw_*.deb >/dev/null 2>&1 && continue
	if [ "${CI:-}" = true ] || [ "${ISERGW_VM_REQUIRE:-0}" = 1 ]; then
		say "error: no packages in '$d' (deploy.packages and deploy.packages-next make them)"
		exit 1
	fi
	say "skipped: no packages in '$d' (deploy.packages and deploy.packages-next make them)"
	exit 77
done
# copies: the fixtures may be made again while the VM reads them
from=$WORK/debs-from to=$WORK/debs-to
rm -rf "$from" "$to" && mkdir -p "$from" "$to" && cp "$FROM"/*.deb "$from"/ &&
	cp "$TO"/*.deb "$to"/ || exit 1
exec bash "$here/run-vm.sh" --work "$WORK" --name rolling-upgrade --timeout "$TIMEOUT" \
	--mem 4096 "$here/guest-rolling-upgrade.sh" --from "$from" --to "$to" \
	--stall-probe "$PROBE"
