#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# /init of the VM test bed's initramfs (busybox sh, stage 1; see the VM
# section of docs/testing.md). Loads the modules needed to reach the host's filesystem,
# mounts it (9p, read-only) under an overlay with a tmpfs upper layer, mounts
# the writable results share at the host path given on the kernel command
# line (isergw.out=DIR), and becomes DIR/job.sh in a chroot into the overlay
# (job.sh powers the VM off; if it exits instead, the kernel panics and qemu,
# started with -no-reboot, exits too).
# Its messages ("vm-init: ...") go to the console, the host's console log.

/bin/busybox --install -s /bin
export PATH=/bin

msg() { echo "vm-init: $*"; }
halt_now() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 10
	exit 1 # the kernel panics, and with panic=-1 and -no-reboot qemu exits
}
fail() {
	msg "FATAL: $*"
	halt_now
}

mkdir -p /proc /sys /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
# The initramfs has no /dev/console node of its own: take the console from
# devtmpfs now; the descriptors stay valid after /dev moves into the overlay.
exec </dev/console >/dev/console 2>&1

while read -r mod; do
	[ -n "$mod" ] || continue
	insmod "/modules/$mod" || fail "insmod $mod failed"
done </modules/order

out=
read -r cmdline </proc/cmdline
for arg in $cmdline; do
	case "$arg" in
	isergw.out=*) out=${arg#isergw.out=} ;;
	esac
done
[ -n "$out" ] || fail "no isergw.out= on the kernel command line"

mkdir -p /lower /up /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,ro,cache=loose hostroot /lower ||
	fail "cannot mount the host's root (9p tag hostroot)"
mount -t tmpfs -o mode=0755 tmpfs /up || fail "cannot mount tmpfs"
mkdir -p /up/upper /up/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/up/upper,workdir=/up/work /newroot ||
	fail "cannot mount the overlay"
mkdir -p "/newroot$out"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vmout "/newroot$out" ||
	fail "cannot mount the results share (9p tag vmout) on $out"
[ -f "/newroot$out/job.sh" ] || fail "$out/job.sh is missing"

for d in proc sys dev; do
	mount --move "/$d" "/newroot/$d" || fail "cannot move /$d into the overlay"
done

msg "chroot, running $out/job.sh"
# pid 1 itself changes root (exec): kernel threads share its root, so the
# kernel's module requests then run the host's modprobe in the overlay.
# job.sh powers the VM off when done.
exec chroot /newroot /bin/bash "$out/job.sh"
