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
#  - the .changes in build/debs/ lists only files that are there, with their
#    checksums (the debug packages are moved to build/debs/dbgsym/);
#  - systemd-analyze verify on the units, installed (dpkg -i) in the cached
#    clean Debian 12 root (tests/deploy/mkroot.sh): no message about them
#    (messages about units of the machine it runs on are shown, not judged);
#  - the README's standalone install (`apt install ./build/debs/...`),
#    simulated by apt in that root: the packages named, and no cluster stack
#    (corosync, pacemaker, crmsh, fence-agents, resource agents).
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

say ".changes: every file it lists is in $DEBS, with its checksum"
changes=$(ls "$DEBS"/*.changes)
listed=$(awk '/^Checksums-Sha256:/ { f = 1; next } /^[^ ]/ { f = 0 } f { print $1 "  " $3 }' "$changes")
[ -n "$listed" ] || fail "$changes lists no file"
(cd "$DEBS" && sha256sum -c --quiet) <<<"$listed" || fail "$changes lists files that are not in $DEBS"
say "  $(wc -l <<<"$listed") files: $(awk '{ printf "%s ", $2 }' <<<"$listed")"

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
# (a machine name of its own: nothing another container left under
# /run/systemd/nspawn/propagate/ under the root's name is shared)
out=$("${NSPAWN[@]}" --pipe --private-network -D "$root" --machine="deploy-packages-$$" \
	--bind-ro="$DEBS":/debs --bind-ro="$x/corosync.service":/etc/systemd/system/corosync.service \
	sh -c 'dpkg -i --force-depends /debs/isergw_*.deb /debs/isergw-cli_*.deb >/dev/null 2>&1
	       ln -s /bin/true /bin/kill 2>/dev/null   # procps, a dependency not installed here
	       SYSTEMD_COLORS=0 systemd-analyze verify --man=no /lib/systemd/system/isergw*.service 2>&1
	       echo "verify-status=$?"' 2>&1)
echo "$out" | sed 's/^/    /'
# verify loads the whole machine's units too: what nspawn leaves under /run
# (/run/systemd/nspawn/propagate on a host where containers ran) or the
# root's own units may get a message. Ours are the units verified, what
# they name, and the files they use.
mine='isergwd\.service|isergw-ha\.service|isergw-api\.service|/etc/default/isergw|/usr/sbin/isergw'
ours=$(grep -v '^verify-status=' <<<"$out" | grep -E "$mine" || true)
others=$(grep -v '^verify-status=' <<<"$out" | grep -vE "$mine" || true)
[ -z "$others" ] || say "  (not about the packages' units, not judged: $(wc -l <<<"$others") line(s))"
[ -z "$ours" ] || fail "systemd-analyze verify printed messages about the units"
# a failure that printed nothing of ours (it prints the reason) still counts
grep -qx 'verify-status=0' <<<"$out" || [ -n "$others" ] || fail "systemd-analyze verify failed"
say "  no message about isergwd.service, isergw-ha.service, isergw-api.service"

say "the README's standalone install (apt, simulated in the clean root)"
readme=$(sed -n 's|^ *apt install \(\./build/debs/[^#]*\)#.*|\1|p' "$SRC/README.md" | head -n 1)
[ -n "$readme" ] || fail "no 'apt install ./build/debs/...' command in README.md"
say "  README.md: apt install $readme"
args=$(sed 's|\./build/debs/|/debs/|g' <<<"$readme")
sim=$("${NSPAWN[@]}" --pipe --private-network -D "$root" --machine="deploy-packages-$$" \
	--bind-ro="$DEBS":/debs \
	sh -c "apt-get install -s -q $args" 2>&1) || { echo "$sim"; fail "apt cannot install $readme"; }
inst=$(sed -n 's/^Inst \([^ ]*\) .*/\1/p' <<<"$sim" | sort)
say "  $(wc -l <<<"$inst") packages: $(tr '\n' ' ' <<<"$inst")"
for p in isergw isergw-cli; do
	grep -qx "$p" <<<"$inst" || fail "the standalone install does not install $p"
done
cluster=$(grep -xE 'corosync|pacemaker|pacemaker-cli-utils|crmsh|fence-agents|resource-agents|isergw-resource-agents' <<<"$inst" || true)
[ -z "$cluster" ] || fail "the standalone install pulls in a cluster: $(tr '\n' ' ' <<<"$cluster")"
say "  no corosync, pacemaker, crmsh, fence-agents or resource agents"
say "PASS: deploy.packages in $((SECONDS - T0)) s"
