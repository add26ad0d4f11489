#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# deploy.packages-next: a second build of the Debian packages from the same
# tree, as the version in debian/changelog + "+next1", into OUT (default
# build/debs-next): what vm.rolling-upgrade upgrades deploy.packages' build to.
#
#   tests/deploy/packages_next.sh [OUT]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_root
need_tools dpkg-buildpackage dh dpkg-parsechangelog
out=${1:-$SRC/build/debs-next}
v=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version)
mkdir -p "$out"
say "building the packages as $v+next1 into $out"
if ! DEB_BUILD_OPTIONS="nocheck parallel=2" "$SRC/deploy/build-debs.sh" --version "$v+next1" \
	--out "$out" >"$out.log" 2>&1; then
	tail -40 "$out.log"
	fail "the build failed (whole log: $out.log)"
fi
say "built in $((SECONDS - T0)) s: $(cd "$out" && echo ./*.deb)"
