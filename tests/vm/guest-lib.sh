# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Helpers for scripts that run inside the VM test bed (tests/vm/run-vm.sh):
# targets (isergwd, tgtd, LIO), the kernel initiator over iSER or TCP,
# udev + multipathd, fio, libiscsi's tools. Source it; it does not change
# shell options. Daemons started here and sessions logged in here are
# stopped/logged out by the exit trap it sets (vm_cleanup).
#
# Logs go to $VM_OUT (the run directory the host sees: build/tests/vm/runs/NAME).
# Conventions as in tests/integration/lib.sh: functions return 0 or non-zero
# and print why on stderr; vm_die exits.

VM_ADDR=${VM_ADDR:-10.0.2.15}
VM_OUT=${VM_OUT:-/tmp}
VM_INITIATOR=${VM_INITIATOR:-iqn.2026-11.org.isergw:vm-kernel}
VM_LIBISCSI_INITIATOR=${VM_LIBISCSI_INITIATOR:-iqn.2026-11.org.isergw:vm-libiscsi}
VM_LIBISCSI_INITIATOR2=${VM_LIBISCSI_INITIATOR2:-iqn.2026-11.org.isergw:vm-libiscsi2}
VM_READY_TIMEOUT=${VM_READY_TIMEOUT:-60}

# "pid kind" of every daemon started here, for the trap.
_VM_DAEMONS=()
VM_ISCSID_PID=
VM_UDEVD_STARTED=0
VM_MULTIPATHD_PID=

vm_log() { printf '%s [%6.1f]: %s\n' "${0##*/}" "$(vm_now)" "$*" >&2; }
vm_die() { vm_log "error: $*"; exit 1; }
# Seconds since the guest booted (float).
vm_now() { cut -d' ' -f1 /proc/uptime; }
# vm_since T0: seconds since T0 (from vm_now), one decimal.
vm_since() { awk -v a="$1" '{ printf "%.1f", $1 - a }' /proc/uptime; }

# vm_wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds.
vm_wait_for() {
	local limit=$1 deadline
	shift
	deadline=$((SECONDS + limit))
	while ! "$@" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

_vm_track() { _VM_DAEMONS+=("$1 $2"); }
_vm_forget() {
	local e keep=()
	for e in "${_VM_DAEMONS[@]}"; do
		[ "${e%% *}" = "$1" ] || keep+=("$e")
	done
	_VM_DAEMONS=("${keep[@]}")
}

# vm_port_open ADDR PORT: something accepts TCP connections there.
vm_port_open() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# vm_bytes SIZE: 256M / 1G / 4096 in bytes.
vm_bytes() { numfmt --from=iec "$1"; }

# vm_mkfile FILE SIZE: a sparse backing file (in the guest's tmpfs by default).
vm_mkfile() { rm -f "$1" && truncate -s "$2" "$1"; }

#
# isergwd
#

# vm_isergwd_start DAEMON IQN FILE SIZE PORTAL... [-- EXTRA-ARGS...]
# PORTAL is tcp://ADDR:PORT or iser://ADDR:PORT. Waits until every portal is
# up: TCP ones accept connections, iSER ones appear in the log as
# "listening on iser://ADDR:PORT" (the datamover's line, like the TCP one).
# Sets VM_ISERGWD_PID and VM_ISERGWD_LOG ($VM_OUT/isergwd.log, appended to).
vm_isergwd_start() {
	local daemon=$1 iqn=$2 file=$3 size=$4
	shift 4
	local portals=() extra=() args=() p
	while [ $# -gt 0 ]; do
		if [ "$1" = -- ]; then shift; extra=("$@"); break; fi
		portals+=("$1"); shift
	done
	[ -x "$daemon" ] || { vm_log "isergwd binary not executable in the guest: $daemon"; return 1; }
	VM_ISERGWD_LOG=$VM_OUT/isergwd.log
	mkdir -p /tmp/isergw-state
	for p in "${portals[@]}"; do args+=(--portal "$p"); done
	args+=(--target "$iqn" --lun "$file" --size "$size" --state-dir /tmp/isergw-state
		--ctl-socket /tmp/isergw-state/ctl.sock --log-level "${ISERGW_LOG_LEVEL:-info}")
	args+=("${extra[@]}")
	vm_log "starting isergwd ${args[*]}"
	echo "=== $(vm_now) isergwd ${args[*]}" >>"$VM_ISERGWD_LOG"
	"$daemon" "${args[@]}" >>"$VM_ISERGWD_LOG" 2>&1 &
	VM_ISERGWD_PID=$!
	_vm_track "$VM_ISERGWD_PID" isergw
	for p in "${portals[@]}"; do
		if ! _vm_wait_portal "$VM_ISERGWD_PID" "$p" "$VM_ISERGWD_LOG"; then
			vm_log "isergwd: portal $p not up; last lines of $VM_ISERGWD_LOG:"
			tail -n 15 "$VM_ISERGWD_LOG" >&2
			return 1
		fi
		vm_log "isergwd (pid $VM_ISERGWD_PID) listening on $p"
	done
}

_vm_wait_portal() {
	local pid=$1 url=$2 logf=$3 deadline
	local hp=${url#*://}
	deadline=$((SECONDS + VM_READY_TIMEOUT))
	while [ "$SECONDS" -lt "$deadline" ]; do
		kill -0 "$pid" 2>/dev/null || { vm_log "isergwd (pid $pid) exited"; return 1; }
		case "$url" in
		tcp://*) vm_port_open "${hp%:*}" "${hp##*:}" && return 0 ;;
		iser://*) grep -qF "listening on $url" "$logf" && return 0 ;;
		*) vm_log "unknown portal scheme: $url"; return 1 ;;
		esac
		sleep 0.2
	done
	vm_log "timeout: $url not up after ${VM_READY_TIMEOUT}s"
	return 1
}

# vm_isergwd_stop [PID]: SIGTERM; it must exit 0 within 30 s with no
# sanitizer report in its log.
vm_isergwd_stop() {
	local pid=${1:-$VM_ISERGWD_PID} rc i
	_vm_forget "$pid"
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid" 2>/dev/null
		vm_log "isergwd (pid $pid) had already exited (status $?)"
		return 1
	fi
	kill -TERM "$pid"
	for ((i = 0; i < 300; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		vm_log "isergwd (pid $pid) still running 30 s after SIGTERM: killing it"
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		return 1
	fi
	wait "$pid"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		vm_log "isergwd (pid $pid) exited with status $rc after SIGTERM (expected 0)"
		return 1
	fi
	if grep -E -m5 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$VM_ISERGWD_LOG" >&2; then
		vm_log "sanitizer report in $VM_ISERGWD_LOG"
		return 1
	fi
	return 0
}

#
# tgtd (tgt 1.0.85: its iSER driver listens on port 3260 of every address,
# its iSCSI/TCP one on --iscsi portal=..., default 0.0.0.0:3260)
#

# vm_tgtd_start CONTROL-PORT [TGTD-ARGS...]: sets VM_TGTD_PID, VM_TGTD_CPORT.
vm_tgtd_start() {
	VM_TGTD_CPORT=$1
	shift
	local logf=$VM_OUT/tgtd-$VM_TGTD_CPORT.log
	vm_log "starting tgtd -f -C $VM_TGTD_CPORT $*"
	tgtd -f -C "$VM_TGTD_CPORT" "$@" >>"$logf" 2>&1 &
	VM_TGTD_PID=$!
	_vm_track "$VM_TGTD_PID" tgt
	if ! vm_wait_for "$VM_READY_TIMEOUT" _vm_tgtd_ready "$VM_TGTD_PID" "$VM_TGTD_CPORT"; then
		vm_log "tgtd did not come up; last lines of $logf:"
		tail -n 15 "$logf" >&2
		return 1
	fi
}
_vm_tgtd_ready() {
	kill -0 "$1" || return 1
	tgtadm -C "$2" --lld iscsi --mode target --op show >/dev/null
}

# vm_tgt_target LLD TID IQN FILE [INITIATOR-NAME...]: a target on the tgtd
# started last, LLD iser or iscsi, its disk FILE as LUN 1 (LUN 0 is tgt's
# controller). tgt 1.0.85's iSER driver refuses logins ("Target not found")
# unless BOTH an address ACL and an initiator-name ACL match: -I ALL plus every
# INITIATOR-NAME (default: the kernel's and libiscsi's names used here).
vm_tgt_target() {
	local lld=$1 tid=$2 iqn=$3 file=$4
	shift 4
	local names=("$@") n
	[ ${#names[@]} -gt 0 ] || names=("$VM_INITIATOR" "$VM_LIBISCSI_INITIATOR" "$VM_LIBISCSI_INITIATOR2")
	local ta=(tgtadm -C "$VM_TGTD_CPORT" --lld "$lld")
	if ! "${ta[@]}" --mode target --op new --tid "$tid" -T "$iqn" ||
		! "${ta[@]}" --mode logicalunit --op new --tid "$tid" --lun 1 -b "$file" ||
		! "${ta[@]}" --mode target --op bind --tid "$tid" -I ALL; then
		vm_log "tgtadm ($lld) could not set up target $tid $iqn on $file"
		return 1
	fi
	for n in "${names[@]}"; do
		"${ta[@]}" --mode target --op bind --tid "$tid" --initiator-name "$n" ||
			{ vm_log "tgtadm: cannot bind initiator name $n"; return 1; }
	done
	vm_log "tgt target $tid ($lld) $iqn serving $file as LUN 1"
}

# vm_tgtd_stop [PID]: SIGKILL (tgtd does not stop reliably on SIGTERM).
vm_tgtd_stop() {
	local pid=${1:-$VM_TGTD_PID}
	_vm_forget "$pid"
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

#
# LIO, the in-kernel target, through configfs (a comparison: isert is the
# kernel's iSER target). One target at a time here.
#

VM_LIO_IQN=
VM_LIO_BS=
# vm_lio_start IQN FILE ADDR PORT: FILE as LUN 0 (fileio backstore), a
# network portal on ADDR:PORT with iSER enabled next to TCP, demo mode (any
# initiator, no CHAP). Fails when the modules or configfs are not there.
vm_lio_start() {
	local iqn=$1 file=$2 addr=$3 port=$4
	local cfs=/sys/kernel/config/target size
	modprobe -a target_core_mod target_core_file iscsi_target_mod ib_isert ||
		{ vm_log "LIO modules not loadable"; return 1; }
	[ -d "$cfs" ] || mkdir "$cfs" 2>/dev/null || { vm_log "no $cfs (configfs)"; return 1; }
	size=$(stat -c %s "$file") || return 1
	VM_LIO_BS=$cfs/core/fileio_0/vmdisk
	VM_LIO_IQN=$iqn
	local tpg=$cfs/iscsi/$iqn/tpgt_1
	{
		mkdir -p "$VM_LIO_BS" &&
			echo "fd_dev_name=$file,fd_dev_size=$size" >"$VM_LIO_BS/control" &&
			echo 1 >"$VM_LIO_BS/enable" &&
			mkdir -p "$tpg/lun/lun_0" &&
			ln -s "$VM_LIO_BS" "$tpg/lun/lun_0/vmdisk" &&
			mkdir "$tpg/np/$addr:$port" &&
			echo 1 >"$tpg/np/$addr:$port/iser" &&
			echo 0 >"$tpg/attrib/authentication" &&
			echo 1 >"$tpg/attrib/generate_node_acls" &&
			echo 1 >"$tpg/attrib/cache_dynamic_acls" &&
			echo 0 >"$tpg/attrib/demo_mode_write_protect" &&
			echo 1 >"$tpg/enable"
	} 2>&1 | sed 's/^/  lio: /' >&2
	if [ "${PIPESTATUS[0]}" -ne 0 ] || [ "$(cat "$tpg/enable" 2>/dev/null)" != 1 ]; then
		vm_log "LIO set-up failed"
		vm_lio_stop
		return 1
	fi
	vm_log "LIO target $iqn serving $file as LUN 0 on $addr:$port (TCP and iSER)"
}

vm_lio_stop() {
	[ -n "$VM_LIO_IQN" ] || return 0
	local cfs=/sys/kernel/config/target
	local t=$cfs/iscsi/$VM_LIO_IQN tpg np
	tpg=$t/tpgt_1
	[ -d "$tpg" ] && echo 0 >"$tpg/enable" 2>/dev/null
	rm -f "$tpg"/lun/lun_0/vmdisk 2>/dev/null
	rmdir "$tpg"/lun/lun_0 2>/dev/null
	for np in "$tpg"/np/*; do
		[ -d "$np" ] || continue
		echo 0 >"$np/iser" 2>/dev/null
		rmdir "$np" 2>/dev/null
	done
	rmdir "$tpg" "$t" 2>/dev/null
	rmdir "$VM_LIO_BS" 2>/dev/null
	VM_LIO_IQN=
}

#
# Kernel initiator (open-iscsi + ib_iser / iscsi_tcp)
#

# vm_iscsid_start: iscsid in the foreground (in the background of this
# shell), with InitiatorName $VM_INITIATOR. Idempotent.
vm_iscsid_start() {
	[ -n "$VM_ISCSID_PID" ] && kill -0 "$VM_ISCSID_PID" 2>/dev/null && return 0
	mkdir -p /etc/iscsi /var/lib/iscsi /run/lock/iscsi
	echo "InitiatorName=$VM_INITIATOR" >/etc/iscsi/initiatorname.iscsi
	iscsid -f >>"$VM_OUT/iscsid.log" 2>&1 &
	VM_ISCSID_PID=$!
	_vm_track "$VM_ISCSID_PID" iscsid
	# iscsiadm -m session exits 21 (no sessions) once iscsid answers
	if ! vm_wait_for 30 _vm_iscsid_ready; then
		vm_log "iscsid does not answer; see $VM_OUT/iscsid.log"
		return 1
	fi
}
_vm_iscsid_ready() {
	local rc
	iscsiadm -m session >/dev/null 2>&1
	rc=$?
	[ "$rc" -eq 0 ] || [ "$rc" -eq 21 ]
}

# The node record settings vm_iscsi_login applies, NAME=VALUE each.
VM_ISCSI_SETTINGS=(node.session.timeo.replacement_timeout=20)

# vm_iscsi_login IQN ADDR[:PORT] [iser|tcp] [LUN]: logs in (default iSER)
# and waits for the disk's block device; sets VM_DEV (/dev/sdX) and
# VM_SESSION (the sysfs session name). LUN: the SCSI LUN whose disk to take
# (default: the first that has a block device).
vm_iscsi_login() {
	local iqn=$1 portal=$2 transport=${3:-iser} lun=${4:-}
	case "$portal" in *:*) ;; *) portal=$portal:3260 ;; esac
	vm_iscsid_start || return 1
	local t0
	t0=$(vm_now)
	local kv ok=1
	iscsiadm -m node -o new -T "$iqn" -p "$portal" >/dev/null &&
		iscsiadm -m node -T "$iqn" -p "$portal" -o update -n iface.transport_name -v "$transport" || ok=0
	for kv in "${VM_ISCSI_SETTINGS[@]}"; do
		[ "$ok" -eq 1 ] || break
		iscsiadm -m node -T "$iqn" -p "$portal" -o update -n "${kv%%=*}" -v "${kv#*=}" || ok=0
	done
	if [ "$ok" -ne 1 ]; then
		vm_log "iscsiadm: cannot create node $iqn $portal ($transport)"
		return 1
	fi
	if ! iscsiadm -m node -T "$iqn" -p "$portal" --login >&2; then
		vm_log "login to $iqn at $portal over $transport FAILED"
		return 1
	fi
	VM_DEV=
	if ! vm_wait_for 60 _vm_find_disk "$iqn" "${portal%:*}" "${portal##*:}" "$lun"; then
		vm_log "logged in to $iqn at $portal but no block device appeared"
		return 1
	fi
	vm_wait_for 10 test -b "$VM_DEV" || { vm_log "$VM_DEV is not a block device"; return 1; }
	vm_log "logged in to $iqn at $portal over $transport ($VM_SESSION): $VM_DEV, $(vm_since "$t0") s"
}
_vm_find_disk() {
	local iqn=$1 addr=$2 port=$3 lun=$4 s c b hctl
	for s in /sys/class/iscsi_session/session*; do
		[ "$(cat "$s/targetname")" = "$iqn" ] || continue
		c=$(echo "$s"/device/connection*/iscsi_connection/connection*)
		[ "$(cat "$c/persistent_address" 2>/dev/null)" = "$addr" ] || continue
		[ "$(cat "$c/persistent_port" 2>/dev/null)" = "$port" ] || continue
		for b in "$s"/device/target*/*/block/*; do
			[ -e "$b" ] || continue
			hctl=$(basename "$(dirname "$(dirname "$b")")")
			if [ -n "$lun" ] && [ "${hctl##*:}" != "$lun" ]; then continue; fi
			VM_DEV=/dev/$(basename "$b")
			VM_SESSION=$(basename "$s")
			return 0
		done
	done
	return 1
}

# vm_iscsi_driver_of SESSION: the SCSI host driver of a session, iscsi_iser
# or iscsi_tcp (to check a login really went over iSER).
vm_iscsi_driver_of() {
	local h
	h=$(basename "$(dirname "$(readlink -f "/sys/class/iscsi_session/$1/device")")")
	cat "/sys/class/scsi_host/$h/proc_name"
}

# vm_iscsi_logout IQN ADDR[:PORT]: log out and delete the node record.
vm_iscsi_logout() {
	local iqn=$1 portal=$2
	case "$portal" in *:*) ;; *) portal=$portal:3260 ;; esac
	iscsiadm -m node -T "$iqn" -p "$portal" --logout >&2 || {
		vm_log "logout from $iqn at $portal FAILED"
		return 1
	}
	iscsiadm -m node -T "$iqn" -p "$portal" -o delete >/dev/null 2>&1
	vm_log "logged out of $iqn at $portal"
}

#
# udev + dm-multipath (multipath-tools ignores paths unless udev runs)
#

VM_MULTIPATH_CONF='defaults {
	find_multipaths no
	user_friendly_names no
	path_grouping_policy group_by_prio
	prio alua
	hardware_handler "1 alua"
	path_checker tur
	failback immediate
	no_path_retry 12
}'

# vm_multipath_start [CONFIG-TEXT]: systemd-udevd, udevadm trigger, multipathd.
vm_multipath_start() {
	printf '%s\n' "${1:-$VM_MULTIPATH_CONF}" >/etc/multipath.conf
	if [ "$VM_UDEVD_STARTED" -eq 0 ]; then
		/lib/systemd/systemd-udevd --daemon >>"$VM_OUT/udevd.log" 2>&1 ||
			{ vm_log "systemd-udevd did not start"; return 1; }
		VM_UDEVD_STARTED=1
		udevadm trigger --action=add >/dev/null 2>&1
		udevadm settle --timeout=60
	fi
	multipathd -d -s >>"$VM_OUT/multipathd.log" 2>&1 &
	VM_MULTIPATHD_PID=$!
	_vm_track "$VM_MULTIPATHD_PID" multipathd
	vm_wait_for 30 multipathd show status >/dev/null ||
		{ vm_log "multipathd does not answer; see $VM_OUT/multipathd.log"; return 1; }
	vm_log "udevd and multipathd running"
}

vm_multipath_stop() {
	[ -n "$VM_MULTIPATHD_PID" ] || return 0
	multipath -F >/dev/null 2>&1
	kill -TERM "$VM_MULTIPATHD_PID" 2>/dev/null
	vm_wait_for 10 _vm_dead "$VM_MULTIPATHD_PID"
	_vm_forget "$VM_MULTIPATHD_PID"
	VM_MULTIPATHD_PID=
}
_vm_dead() { ! kill -0 "$1"; }

#
# fio
#

# vm_fio NAME DEV [FIO-ARGS...]: direct I/O with libaio on DEV; output in
# $VM_OUT/fio-NAME.txt. Prints "fio NAME: read X MiB/s Y IOPS, write ..."
# and fails on any fio error (verify errors included).
vm_fio() {
	local name=$1 dev=$2
	shift 2
	local outf=$VM_OUT/fio-$name.txt rc
	fio --name="$name" --filename="$dev" --direct=1 --ioengine=libaio \
		--output-format=normal,terse --terse-version=3 --output="$outf" "$@" </dev/null
	rc=$?
	# terse v3: 3 jobname, 5 error, 7/8 read KiB/s and IOPS, 48/49 write
	awk -F';' -v n="$name" -v rc="$rc" 'NF > 50 && $1 == 3 {
		printf "fio %s: read %.1f MiB/s %d IOPS, write %.1f MiB/s %d IOPS, error %s, exit %s\n",
			n, $7 / 1024, $8, $48 / 1024, $49, $5, rc }' "$outf" >&2
	if [ "$rc" -ne 0 ] || grep -qE 'verify: bad|err= *[1-9]|fio: (pid=|io_u error)' "$outf"; then
		vm_log "fio $name FAILED (exit $rc); see $outf:"
		grep -E 'verify|err=|error' "$outf" | head -n 10 >&2
		return 1
	fi
	return 0
}

# vm_fio_verify NAME DEV RW BS SIZE [IODEPTH]: write SIZE bytes (RW: randwrite
# or write) and read it back with --verify=crc32c; fails on the first bad block.
vm_fio_verify() {
	vm_fio "$1" "$2" --rw="$3" --bs="$4" --size="$5" --iodepth="${6:-16}" \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_dump=1
}

#
# libiscsi's initiator (userspace; iser:// uses libibverbs/librdmacm)
#

# vm_iscsi_inq URL: iscsi-inq as $VM_LIBISCSI_INITIATOR.
vm_iscsi_inq() {
	timeout --kill-after=5 60 iscsi-inq -i "$VM_LIBISCSI_INITIATOR" "$1" </dev/null
}

# vm_iscsi_perf NAME URL SECONDS ARGS...: runs iscsi-perf, prints "IOPS MBPS"
# (empty on failure); raw output in $VM_OUT/perf-NAME.txt.
vm_iscsi_perf() {
	local name=$1 url=$2 secs=$3
	shift 3
	local outf=$VM_OUT/perf-$name.txt
	timeout --kill-after=5 $((secs + 60)) iscsi-perf -i "$VM_LIBISCSI_INITIATOR" -t "$secs" "$@" "$url" \
		</dev/null >"$outf" 2>&1
	tr '\r' '\n' <"$outf" | sed -n 's/^iops average \([0-9]*\) (\([0-9]*\) MB\/s).*/\1 \2/p' | tail -n 1
}

#
# Clean-up
#

# vm_cleanup: log out every session, stop multipathd and every daemon started
# here (isergwd with SIGTERM, the others with SIGKILL), tear down LIO.
vm_cleanup() {
	local e pid
	# only the script's own exit, not a subshell's (tests/integration/lib.sh)
	[ "$BASHPID" = "$_VM_SHELL" ] || return 0
	if [ -n "$VM_ISCSID_PID" ] && kill -0 "$VM_ISCSID_PID" 2>/dev/null; then
		iscsiadm -m node --logoutall=all >/dev/null 2>&1
	fi
	vm_multipath_stop
	vm_lio_stop
	for e in "${_VM_DAEMONS[@]}"; do
		pid=${e%% *}
		kill -0 "$pid" 2>/dev/null || continue
		case "${e#* }" in
		isergw) kill -TERM "$pid" ;;
		*) kill -KILL "$pid" ;;
		esac
	done
	for e in "${_VM_DAEMONS[@]}"; do
		pid=${e%% *}
		vm_wait_for 10 _vm_dead "$pid"
		{ kill -KILL "$pid"; wait "$pid"; } 2>/dev/null
	done
	_VM_DAEMONS=()
	VM_ISCSID_PID=
}
_VM_SHELL=$BASHPID
trap 'vm_cleanup 2>/dev/null' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
