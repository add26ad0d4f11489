#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Stage 2 of the VM test bed, run by the initramfs's /init in a chroot into
# the overlay of the host's filesystem (the host's own bash, kmod, iproute2,
# rdma-core ...). Not run by hand: run-vm.sh writes OUT/job.sh, which calls
#
#   guest-stage2.sh OUT SCRIPT [ARGS...]
#
# Mounts tmpfs on /run and /dev/shm, devpts and configfs, loads the
# modules, brings up lo and eth0 (10.0.2.15/24) and Soft-RoCE (rxe0 on eth0),
# then runs `bash SCRIPT ARGS` in /tmp with stdout in OUT/stdout and stderr in
# OUT/stderr, and writes its exit status to OUT/status. A set-up failure is
# written to OUT/setup-error instead (and no OUT/status). Also leaves
# OUT/times (boot_s: guest uptime when SCRIPT started, then script_s) and
# OUT/dmesg.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LC_ALL=C TERM=dumb

OUT=$1
shift
export VM_OUT=$OUT ISERGW_VM=1
export VM_ADDR=10.0.2.15

# Modules every test gets (from the host's /lib/modules through the 9p share,
# by the host's own modprobe). LIO's (target_core_*, iscsi_target_mod,
# ib_isert) are loaded on demand by vm_lio_* in guest-lib.sh.
MODULES="virtio_net veth rdma_rxe ib_uverbs rdma_ucm ib_iser iscsi_tcp sd_mod
	dm_multipath dm_round_robin dm_service_time scsi_dh_alua configfs"

msg() { echo "vm-stage2: $*"; }
setup_fail() {
	msg "FATAL: $*"
	echo "$*" >"$OUT/setup-error"
	dmesg >"$OUT/dmesg" 2>&1
	exit 1
}

boot_s=$(cut -d' ' -f1 /proc/uptime)

# /tmp stays in the overlay: the host's /tmp (a CI clone may live there) is
# visible, and what the guest writes there goes to the tmpfs upper layer.
chmod 1777 /tmp 2>/dev/null
mount -t tmpfs -o mode=0755 tmpfs /run || setup_fail "cannot mount /run"
mkdir -p /run/lock /dev/shm /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm || setup_fail "cannot mount /dev/shm"
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts 2>/dev/null
ln -sf /proc/self/fd /dev/fd 2>/dev/null
ln -sf /proc/self/fd/0 /dev/stdin 2>/dev/null
ln -sf /proc/self/fd/1 /dev/stdout 2>/dev/null
ln -sf /proc/self/fd/2 /dev/stderr 2>/dev/null

t_mod=$(cut -d' ' -f1 /proc/uptime)
# shellcheck disable=SC2086 # a list
modprobe -a $MODULES || setup_fail "modprobe -a $MODULES failed (kernel $(uname -r))"
msg "modules loaded in $(awk -v b="$t_mod" '{ printf "%.1f", $1 - b }' /proc/uptime) s"
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config ||
	setup_fail "cannot mount configfs"
ulimit -l unlimited || setup_fail "ulimit -l unlimited failed"
hostname isergw-vm

ip link set lo up || setup_fail "lo does not come up"
ip link set eth0 up || setup_fail "no eth0 (virtio_net)"
ip addr add "$VM_ADDR/24" dev eth0 || setup_fail "cannot set $VM_ADDR on eth0"
rdma link add rxe0 type rxe netdev eth0 || setup_fail "rdma link add rxe0 failed"

script=$1
shift
[ -r "$script" ] || setup_fail "guest script $script not readable in the guest"
msg "set up in $(awk -v b="$boot_s" '{ printf "%.1f", $1 - b }' /proc/uptime) s" \
	"(kernel up at ${boot_s} s); running $script $*"

cd /tmp || setup_fail "no /tmp"
t0=$(cut -d' ' -f1 /proc/uptime)
echo "boot_s=$t0" >"$OUT/times"
bash "$script" "$@" </dev/null >"$OUT/stdout" 2>"$OUT/stderr"
rc=$?
t1=$(cut -d' ' -f1 /proc/uptime)
echo "script_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >>"$OUT/times"
dmesg >"$OUT/dmesg" 2>&1
echo "$rc" >"$OUT/status.tmp" && mv "$OUT/status.tmp" "$OUT/status"
msg "script exited with status $rc"
sync
exit 0
