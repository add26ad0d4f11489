#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# deploy.packages: build the Debian packages from the tree
# (deploy/build-debs.sh: dpkg-buildpackage -us -uc -b into build/debs/), then
#  - lintian on all of them: no error and no warning (overrides, if any, in
#    debian/*.lintian-overrides with their reasons);
#  - hardening-check on every program: PIE, stack protector, fortify, RELRO,
#    bindnow (not CET: bookworm's start-up objects have none, so no program
#    there has it; stack clash protection is built in but hardening-check
#    cannot tell it from a program without large stack frames);
#  - systemd-analyze verify on the units, installed (dpkg -i) in the cached
#    clean Debian 12 root (tests/deploy/mkroot.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need_root
need_tools dpkg-buildpackage dh lintian hardening-check help2man debootstrap systemd-nspawn
log=$SRC/build/debs-logs
mkdir -p "$log"

say "building the packages (deploy/build-debs.sh --lintian)"
if ! DEB_BUILD_OPTIONS="nocheck parallel=2" "$SRC/deploy/build-debs.sh" --lintian \
	>"$log/build.log" 2>&1; then
	tail -40 "$log/build.log"
	fail "the build or lintian failed (whole log: $log/build.log)"
fi
sed -n "/^[EWIPXO]: /p" "$log/build.log" >"$log/lintian.txt"
say "built in $((SECONDS - T0)) s: $(cd "$DEBS" && echo ./*.deb)"
say "lintian: $(grep -c '^[EW]: ' "$log/lintian.txt" || true) errors/warnings," \
    "$(grep -c '^I: ' "$log/lintian.txt" || true) info tags"
sed 's/^/    /' "$log/lintian.txt"

say "hardening-check"
x=$(mktemp -d)
trap 'rm -rf "$x"' EXIT
for deb in "$DEBS"/*.deb; do
	dpkg-deb -x "$deb" "$x/root"
done
n=0
for prog in "$x"/root/usr/sbin/*; do
	if ! hardening-check --quiet --nocfprotection "$prog"; then
		hardening-check "$prog" || true
		fail "$(basename "$prog") is not fully hardened"
	fi
	n=$((n + 1))
done
[ $n -ge 4 ] || fail "only $n programs in the packages"
say "  $n programs: PIE, stack protector, fortify, RELRO, bindnow"

say "systemd-analyze verify (units installed in a clean Debian 12 root)"
root=$("$SRC/tests/deploy/mkroot.sh")
# corosync.service, which isergw-ha.service requires, is a stand-in here
# (one unit file): the packages are installed without their dependencies;
# deploy.install verifies the units again with the real corosync installed.
cat >"$x/corosync.service" <<'EOT'
[Unit]
Description=stand-in for corosync (deploy.packages)
[Service]
ExecStart=/bin/true
EOT
out=$("${NSPAWN[@]}" --pipe --private-network -D "$root" --bind-ro="$DEBS":/debs \
	--bind-ro="$x/corosync.service":/etc/systemd/system/corosync.service \
	sh -c 'dpkg -i --force-depends /debs/isergw_*.deb /debs/isergw-cli_*.deb >/dev/null 2>&1
	       ln -s /bin/true /bin/kill 2>/dev/null   # procps, a dependency not installed here
	       SYSTEMD_COLORS=0 systemd-analyze verify --man=no /lib/systemd/system/isergw*.service 2>&1
	       echo "verify-status=$?"' 2>&1)
echo "$out" | sed 's/^/    /'
grep -qx 'verify-status=0' <<<"$out" || fail "systemd-analyze verify failed"
[ "$(grep -vc '^verify-status=' <<<"$out")" -eq 0 ] || fail "systemd-analyze verify printed messages"
say "PASS: deploy.packages in $((SECONDS - T0)) s"
