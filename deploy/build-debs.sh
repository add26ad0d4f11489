#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build the Debian packages (debian/, docs/packaging.md) from this tree and
# leave them in build/debs/:
#
#   deploy/build-debs.sh [--lintian] [--version VERSION] [--out DIR]
#
# The tree (tracked and untracked files, not build directories) is copied to
# build/debs-src/ and built there with `dpkg-buildpackage -us -uc -b`, so the
# source tree stays clean and nothing is written next to it. --lintian also
# makes the source package (build/debs/source/) and runs lintian on it and on
# the binary packages (errors and warnings fail). DEB_BUILD_OPTIONS passes
# through (e.g. nocheck, parallel=2; default parallel=2). --version builds
# the packages as VERSION (a changelog entry in the copy only), e.g. two
# builds to upgrade one to the other: --version 0.1.0+test2. --out DIR puts
# the packages in DIR instead of build/debs/ (and builds in DIR-src/), so that
# a second build does not replace the first.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
out=$src/build/debs
work=$src/build/debs-src
lintian=0
version=
while [ $# -gt 0 ]; do
	case "$1" in
	--lintian) lintian=1; shift ;;
	--version) [ $# -ge 2 ] || { echo "build-debs.sh: --version needs a value" >&2; exit 2; }
		   version=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || { echo "build-debs.sh: --out needs a directory" >&2; exit 2; }
	       mkdir -p "$2" && out=$(cd "$2" && pwd) && work=$out-src; shift 2 ;;
	-h|--help) sed -n '3,20p' "$0"; exit 0 ;;
	*) echo "build-debs.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=2}

for tool in dpkg-buildpackage dh; do
	if ! command -v $tool >/dev/null; then
		echo "build-debs.sh: $tool missing: run deploy/install-deps.sh" >&2
		exit 1
	fi
done

rm -rf "$work"
mkdir -p "$work/isergw" "$out"
cd "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf - | tar -xf - -C "$work/isergw"
else
	tar --exclude='./build' --exclude='./build-*' --exclude='./obj-*' -cf - . |
		tar -xf - -C "$work/isergw"
fi

if [ -n "$version" ]; then
	cl=$work/isergw/debian/changelog
	{
		printf 'isergw (%s) unstable; urgency=medium\n\n' "$version"
		printf '  * Built from the tree as %s (deploy/build-debs.sh --version).\n\n' "$version"
		printf ' -- %s  %s\n\n' "$(sed -n 's/^ -- \(.*>\)  .*/\1/p' "$cl" | head -1)" "$(date -R)"
		cat "$cl"
	} >"$cl.new"
	mv "$cl.new" "$cl"
fi
if [ $lintian -eq 1 ]; then
	# the source package too, for lintian's checks of debian/ (made before
	# the build, from the clean copy)
	(cd "$work" && dpkg-source -b isergw >/dev/null)
fi
cd "$work/isergw"
dpkg-buildpackage -us -uc -b
cd "$work"
if [ $lintian -eq 1 ]; then
	# every package of the build (the .changes lists them) and the source;
	# overrides would be in debian/*.lintian-overrides, each with its reason
	lintian --fail-on error,warning --info --display-info ./*.changes ./*.dsc
fi
rm -rf "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo "$out"/dbgsym "$out"/source
if [ $lintian -eq 1 ]; then
	mkdir -p "$out"/source
	mv ./*.dsc ./*.tar.* "$out"/source/
fi
# the debug symbols apart (dbgsym/), so that build/debs/ holds the packages an
# operator installs; the .changes left there lists what is there (the debug
# packages' lines go: Binary and the checksums), so that tools reading it
# (dcmd, dput, sha256sum -c) find every file it names
mkdir -p "$out"/dbgsym
mv ./*-dbgsym_*.deb "$out"/dbgsym/ 2>/dev/null || true
for c in ./*.changes; do
	awk '/^Binary:/ { l = $1; for (i = 2; i <= NF; i++) if ($i !~ /-dbgsym$/) l = l " " $i; print l; next }
	     /^ / && $NF ~ /-dbgsym_[^ ]*[.]deb$/ { next }
	     { print }' "$c" >"$c.new" && mv "$c.new" "$c"
done
mv ./*.deb ./*.changes ./*.buildinfo "$out"/
echo "build-debs.sh: packages in $out:"
ls -l "$out" "$out"/dbgsym
