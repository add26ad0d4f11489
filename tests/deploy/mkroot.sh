#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A clean Debian 12 root with systemd for tests/deploy/install.sh, made once
# by debootstrap and reused (it is never changed afterwards: the test boots it
# with a throw-away overlay on top).
#
#   tests/deploy/mkroot.sh [CACHE_DIR]    prints the root's path
#
# CACHE_DIR defaults to $ISERGW_TEST_CACHE or /var/cache/isergw-test. The root
# is remade when the list below changes (its hash names the directory).
set -euo pipefail

cache=${1:-${ISERGW_TEST_CACHE:-/var/cache/isergw-test}}
mirror=${ISERGW_TEST_MIRROR:-http://deb.debian.org/debian}
security=${ISERGW_TEST_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# minbase + what booting with systemd as PID 1 needs (systemd-sysv: /sbin/init;
# dbus: systemctl's and logind's bus), and the iSCSI client the test runs
# inside (libiscsi-bin); nothing of isergw's own dependencies: apt must pull them
include=systemd,systemd-sysv,dbus,libiscsi-bin
key=$(printf '%s\n' bookworm "$mirror" "$security" "$include" v1 | sha256sum | cut -c1-12)
root=$cache/bookworm-$key

if [ -e "$root/.complete" ]; then
	echo "$root"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ -e "$root/.complete" ]; then
	echo "$root"
	exit 0
fi
rm -rf "$root.tmp"
echo "mkroot: debootstrap bookworm into $root (once; cached)" >&2
debootstrap --variant=minbase --include="$include" bookworm "$root.tmp" "$mirror" >&2
cat >"$root.tmp/etc/apt/sources.list" <<EOT
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOT
# the same updates as the build machine: packages built there may need them
chroot "$root.tmp" apt-get update -q >&2
chroot "$root.tmp" env DEBIAN_FRONTEND=noninteractive apt-get -y -q upgrade >&2
chroot "$root.tmp" apt-get clean
echo isergw-test >"$root.tmp/etc/hostname"
# no login prompt on the container's console; nothing here needs one
chroot "$root.tmp" systemctl mask console-getty.service getty@.service >/dev/null 2>&1 || true
touch "$root.tmp/.complete"
mv "$root.tmp" "$root"
echo "$root"
