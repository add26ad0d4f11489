#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the VM test bed's initramfs: busybox-static, tests/vm/guest-init.sh
# as /init, and the kernel modules needed before the host's filesystem is
# mounted (virtio_pci, 9pnet_virtio, 9p, overlay and their dependencies, in
# the order `modprobe -S KVER --show-depends` gives). Every other module is
# loaded later in the guest by the host's own modprobe from /lib/modules over
# the 9p share (tests/vm/guest-stage2.sh).
#
#   mkinitramfs.sh --out FILE [--kver VERSION]
#
# Rebuilt only when an input changed (kernel version, the module files,
# busybox, guest-init.sh, this script): FILE.inputs keeps their digest.
# Prints the kernel image path (/boot/vmlinuz-VERSION) on stdout.
# VERSION defaults to the newest /boot/vmlinuz-* that has /lib/modules/VERSION
# (Debian's linux-image-amd64). Exits 77 when the kernel or busybox-static is
# missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

BOOT_MODULES="virtio_pci 9pnet_virtio 9p overlay"

out=
kver=${ISERGW_VM_KVER:-}
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--kver) kver=$2; shift 2 ;;
	-h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2' "$0"; exit 0 ;;
	*) echo "mkinitramfs.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] || { echo "mkinitramfs.sh: --out FILE is required" >&2; exit 2; }

missing() { echo "mkinitramfs.sh: $*" >&2; exit 77; }

if [ -z "$kver" ]; then
	for k in $(find /boot -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' 2>/dev/null | sed 's/^vmlinuz-//' | sort -V -r); do
		if [ -d "/lib/modules/$k/kernel" ]; then
			kver=$k
			break
		fi
	done
	[ -n "$kver" ] || missing "no /boot/vmlinuz-* with its /lib/modules (apt-get install linux-image-amd64)"
fi
kernel=/boot/vmlinuz-$kver
[ -r "$kernel" ] || missing "$kernel not readable (apt-get install linux-image-amd64)"
[ -d "/lib/modules/$kver" ] || missing "/lib/modules/$kver missing (apt-get install linux-image-amd64)"
busybox=/bin/busybox
if [ ! -x "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
	missing "$busybox is missing or not static (apt-get install busybox-static)"
fi
command -v modprobe >/dev/null || missing "modprobe not found (apt-get install kmod)"

# The module files, dependencies first, each once.
mods=()
for m in $BOOT_MODULES; do
	while read -r cmd path _; do
		[ "$cmd" = insmod ] || continue
		case " ${mods[*]-} " in *" $path "*) ;; *) mods+=("$path") ;; esac
	done < <(modprobe -S "$kver" --show-depends "$m")
done
[ ${#mods[@]} -gt 0 ] || missing "modprobe -S $kver --show-depends found no modules"

digest=$( {
	echo "$kver"
	sha256sum "$kernel" "$busybox" "$here/guest-init.sh" "$0" "${mods[@]}"
} | sha256sum | cut -d' ' -f1)
if [ -f "$out" ] && [ "$(cat "$out.inputs" 2>/dev/null)" = "$digest" ]; then
	echo "$kernel"
	exit 0
fi

mkdir -p "$(dirname "$out")"
stage=$(mktemp -d "$out.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/modules" "$stage/proc" "$stage/sys" "$stage/dev"
cp "$busybox" "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"
install -m 0755 "$here/guest-init.sh" "$stage/init"
: >"$stage/modules/order"
for path in "${mods[@]}"; do
	name=$(basename "$path")
	case "$name" in
	*.ko.xz) xz -dc "$path" >"$stage/modules/${name%.xz}"; name=${name%.xz} ;;
	*.ko.zst) zstd -qdc "$path" >"$stage/modules/${name%.zst}"; name=${name%.zst} ;;
	*.ko.gz) gzip -dc "$path" >"$stage/modules/${name%.gz}"; name=${name%.gz} ;;
	*) cp "$path" "$stage/modules/$name" ;;
	esac
	echo "$name" >>"$stage/modules/order"
done
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | "$busybox" cpio -o -H newc 2>/dev/null) |
	gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
echo "$digest" >"$out.inputs"
echo "mkinitramfs.sh: built $out for $kver (${#mods[@]} modules)" >&2
echo "$kernel"
