#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# deploy.packages-next: the packages of deploy.packages (build/debs) as the
# next version, the version + "+next1", into OUT (default build/debs-next):
# what vm.rolling-upgrade upgrades deploy.packages' build to.
#
#   tests/deploy/packages_next.sh [--rebuild] [OUT]
#
# By default each .deb is repacked (dpkg-deb -R, the Version field changed,
# dpkg-deb -b): the same files as a new version, which is what a rolling
# upgrade exercises (dpkg replacing every file under running daemons, the
# maintainer scripts, the units restarted node by node), in seconds instead of
# a second build of the whole tree. --rebuild builds the tree again as that
# version (deploy/build-debs.sh --version), for an upgrade between two builds.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

rebuild=0
if [ "${1:-}" = --rebuild ]; then rebuild=1; shift; fi
need_root
need_tools dpkg-deb dpkg-parsechangelog
out=${1:-$SRC/build/debs-next}
from=$SRC/build/debs
v=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version)
next=$v+next1
rm -rf "$out"
mkdir -p "$out"
if [ "$rebuild" -eq 1 ]; then
	need_tools dpkg-buildpackage dh
	say "building the packages as $next into $out"
	if ! DEB_BUILD_OPTIONS="nocheck parallel=2" "$SRC/deploy/build-debs.sh" --version "$next" \
		--out "$out" >"$out.log" 2>&1; then
		tail -40 "$out.log"
		fail "the build failed (whole log: $out.log)"
	fi
	say "built in $((SECONDS - T0)) s: $(cd "$out" && echo ./*.deb)"
	exit 0
fi
debs=("$from"/*_"$v"_*.deb)
[ -e "${debs[0]}" ] || fail "no packages of version $v in $from (deploy.packages builds them)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for deb in "${debs[@]}"; do
	pkg=$(dpkg-deb -f "$deb" Package)
	arch=$(dpkg-deb -f "$deb" Architecture)
	rm -rf "$work/root"
	dpkg-deb -R "$deb" "$work/root"
	sed -i "s/^Version: .*/Version: $next/" "$work/root/DEBIAN/control"
	dpkg-deb --build "$work/root" "$out/${pkg}_${next}_$arch.deb" >/dev/null ||
		fail "dpkg-deb --build $pkg failed"
	[ "$(dpkg-deb -f "$out/${pkg}_${next}_$arch.deb" Version)" = "$next" ] ||
		fail "$pkg: the repacked package is not version $next"
done
say "repacked ${#debs[@]} packages as $next in $((SECONDS - T0)) s: $(cd "$out" && echo ./*.deb)"
