#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Install every Debian 12 package that building isergw and running its tests
# needs. Idempotent, non-interactive; run as root (or with sudo).
#
#   deploy/install-deps.sh [--no-update]
set -euo pipefail

PACKAGES=(
	# build
	build-essential cmake pkg-config clang libclang-rt-14-dev
	# the fuzz targets' coverage (tests/fuzz/coverage.sh: llvm-cov, llvm-profdata)
	llvm
	liburing-dev libjson-c-dev libisal-dev libssl-dev
	libprotobuf-c-dev protobuf-c-compiler libibverbs-dev librdmacm-dev
	# sd_notify for the systemd units (Type=notify)
	libsystemd-dev
	# Debian packages (deploy/build-debs.sh) and their tests (tests/deploy): lintian,
	# hardening-check (devscripts), a clean Debian 12 root (debootstrap) booted with
	# systemd-nspawn (systemd-container)
	debhelper devscripts lintian help2man debootstrap systemd-container
	# tests: unit (cmocka), integration (libiscsi client + tools, tgt reference target)
	libcmocka-dev libiscsi-dev libiscsi-bin tgt jq
	# RDMA tests in a qemu VM with Soft-RoCE (tests/vm): the host's userspace runs in
	# the guest; ibverbs-providers holds librxe (only recommended by libibverbs1)
	qemu-system-x86 linux-image-amd64 busybox-static kmod udev ibverbs-providers
	ibverbs-utils open-iscsi multipath-tools fio e2fsprogs util-linux
	# HA: corosync (CPG, votequorum, cmap) for isergw-ha; the test bed (tests/ha) runs real
	# corosync and pacemaker in network namespaces and drops packets with nftables
	corosync libcpg-dev libvotequorum-dev libquorum-dev libcmap-dev libcorosync-common-dev
	pacemaker pacemaker-cli-utils resource-agents nftables
	# pacemaker side of the floating portals (tests/deploy): ocf-tester's meta-data check
	# (xmllint), portblock (iptables), the shipped crm script (crmsh)
	libxml2-utils iptables crmsh
	# isergw-api: HTTP server (libmicrohttpd); its tests use curl, python3 (raw requests),
	# promtool and a real Prometheus server (both in Debian's prometheus package)
	libmicrohttpd-dev curl python3 prometheus wrk
	# isergwctl's REST commands (target, lun, node, ...) talk to isergw-api with libcurl
	libcurl4-openssl-dev
	# debugging and measuring (perftest: the RDMA ceiling in tests/bench/iser_vm.sh)
	valgrind linux-perf procps iproute2 perftest
)

update=1
case "${1:-}" in
--no-update) update=0 ;;
"") ;;
-h|--help) sed -n '3,8p' "$0"; exit 0 ;;
*) echo "install-deps.sh: unknown option $1" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		exec sudo -E bash "$0" "$@"
	fi
	echo "install-deps.sh: must run as root" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null; then
	echo "install-deps.sh: needs apt-get (Debian 12)" >&2
	exit 1
fi

# tgt_port_note: a tgt service running holds port 3260, isergwd's default portal, so
# `./build/bin/isergwd` would not start; say so and how to free it.
tgt_port_note() {
	if command -v systemctl >/dev/null && systemctl is-active --quiet tgt 2>/dev/null; then
		echo "install-deps.sh: note: the tgt service is running and holds port 3260," \
			"isergwd's default portal: stop it (systemctl disable --now tgt) or give" \
			"isergwd another --portal; the tests start their own tgtd and do not need it"
	fi
}

export DEBIAN_FRONTEND=noninteractive
# Already installed? Then nothing to do (no network needed).
missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps.sh: all ${#PACKAGES[@]} packages already installed"
	tgt_port_note
	exit 0
fi
echo "install-deps.sh: installing ${missing[*]}"
if [ "$update" -eq 1 ]; then
	apt-get update -q
fi
apt-get install -y -q --no-install-recommends "${missing[@]}"
# Packages that enable and start a service of their own: tgt (listening on port 3260,
# isergwd's default portal), prometheus (on *:9090), corosync and pacemaker (a cluster
# of one). The tests start their own instances of each, and a build machine is not a
# cluster node, so a service installed just now is stopped and disabled; one that was
# installed before is the admin's (for tgt, only a note).
# svc_off SERVICE CHECK ACTION: when `systemctl CHECK SERVICE` holds, `systemctl ACTION SERVICE`
svc_off() {
	systemctl "$2" --quiet "$1" 2>/dev/null || return 0
	if ! systemctl "$3" "$1" >/dev/null 2>&1; then
		echo "install-deps.sh: could not $3 the $1 service just installed" >&2
		return 0
	fi
	case $3 in
	stop) echo "install-deps.sh: stopped the $1 service just installed (the tests run their own)" ;;
	disable) echo "install-deps.sh: disabled the $1 service (systemctl enable --now $1 brings it back)" ;;
	esac
}
if command -v systemctl >/dev/null; then
	for svc in tgt prometheus corosync pacemaker; do
		[[ " ${missing[*]} " == *" $svc "* ]] || continue
		svc_off "$svc" is-active stop
		svc_off "$svc" is-enabled disable
	done
fi
tgt_port_note
echo "install-deps.sh: done"
