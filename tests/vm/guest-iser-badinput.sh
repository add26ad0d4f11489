#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Malformed and hostile iSER input against isergwd (runs in the guest:
# tests/vm/run-vm.sh; ctest vm.iser-badinput).
#
#   run-vm.sh tests/vm/guest-iser-badinput.sh --client PATH/iser_badinput
#             --daemon PATH/isergwd [--target-kind isergw|tgt] [--cases LIST]
#             [--daemon-arg ARG]... [--client-arg ARG]...
#
# isergwd serves a 64 MiB file on iser://10.0.2.15:3260; iser_badinput (its
# own librdmacm/libibverbs initiator) runs every case (see its --list): bad
# iSER headers, missing/zero/stale/too small STags, data segments longer
# than the Send, MaxOutstandingUnexpectedPDUs exceeded, initiators vanishing
# with commands in flight; a witness session stays up throughout. Then
# isergwd must stop with exit status 0 on SIGTERM, and its log must hold the
# WARN line each refused case stands for (bad iSER header, STag, remote
# access error, MaxOutstandingUnexpectedPDUs, data bytes).
#
# --target-kind tgt runs the client against tgt's iSER target instead (LUN 1;
# a comparison, expected to fail cases: tgt does not check what we require).
# Ends with "iser-badinput: N passed, M failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$here/guest-lib.sh"

KIND=${ISERGW_TARGET_KIND:-isergw}
DAEMON=
CLIENT=
CASES=
DARGS=()
CARGS=()
while [ $# -gt 0 ]; do
	case "$1" in
	--target-kind) KIND=$2; shift 2 ;;
	--daemon) DAEMON=$2; shift 2 ;;
	--client) CLIENT=$2; shift 2 ;;
	--cases) CASES=$2; shift 2 ;;
	--daemon-arg) DARGS+=("$2"); shift 2 ;;
	--client-arg) CARGS+=("$2"); shift 2 ;;
	-h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2' "$0"; exit 0 ;;
	*) vm_die "unknown option $1" ;;
	esac
done
[ -x "$CLIENT" ] || vm_die "--client PATH (the iser_badinput binary) is required"
case "$KIND" in
isergw) [ -x "$DAEMON" ] || vm_die "--daemon PATH (the isergwd binary) is required" ;;
tgt) ;;
*) vm_die "unknown --target-kind $KIND" ;;
esac

IQN=iqn.2026-11.org.isergw:vm-iser-badinput
INITIATOR=iqn.2026-11.org.isergw:iser-badinput
DISK=/tmp/iser-badinput.img
SIZE=64M
PORT=3260
LUN=0
[ "$KIND" = tgt ] && LUN=1

results=()
failed=0
record() { # record NAME RC T0
	local verdict=ok
	[ "$2" -eq 0 ] || { verdict=FAILED; failed=$((failed + 1)); }
	results+=("$(printf '%-44s %-7s %7s s' "$1" "$verdict" "$(vm_since "$3")")")
}

t_all=$(vm_now)
vm_mkfile "$DISK" "$SIZE" || vm_die "cannot create $DISK"
t0=$(vm_now)
if [ "$KIND" = isergw ]; then
	ISERGW_LOG_LEVEL=${ISERGW_LOG_LEVEL:-info} \
		vm_isergwd_start "$DAEMON" "$IQN" "$DISK" "$SIZE" "iser://$VM_ADDR:$PORT" \
		-- "${DARGS[@]}"
	rc=$?
	TPID=${VM_ISERGWD_PID:-}
else
	vm_tgtd_start 7 --iscsi "portal=$VM_ADDR:3261" && vm_tgt_target iser 1 "$IQN" "$DISK" "$INITIATOR"
	rc=$?
	TPID=${VM_TGTD_PID:-}
fi
record "target up ($KIND)" "$rc" "$t0"
[ "$rc" -eq 0 ] || vm_die "the target did not start"

t0=$(vm_now)
args=(--addr "$VM_ADDR" --port "$PORT" --target "$IQN" --lun "$LUN" --initiator "$INITIATOR")
[ -z "$CASES" ] || args+=(--cases "$CASES")
args+=("${CARGS[@]}")
vm_log "running $CLIENT ${args[*]}"
timeout --kill-after=10 600 "$CLIENT" "${args[@]}" | tee "$VM_OUT/iser_badinput.txt"
rc=${PIPESTATUS[0]}
record "iser_badinput (exit $rc)" "$rc" "$t0"

t0=$(vm_now)
kill -0 "$TPID" 2>/dev/null
record "target alive after the client" $? "$t0"

# lines the daemon must have logged for the refused cases (a case left out
# with --cases does not need its line)
want() { # want CASE... -- REGEX
	local need=0
	while [ "$1" != -- ]; do
		if [ -z "$CASES" ] || [[ ",$CASES," == *",$1,"* ]]; then need=1; fi
		shift
	done
	shift
	[ "$need" -eq 1 ] || return 0
	t0=$(vm_now)
	grep -qE "$1" "$VM_ISERGWD_LOG"
	local rc=$?
	[ "$rc" -eq 0 ] || vm_log "not in $VM_ISERGWD_LOG: $1"
	record "log: $1" "$rc" "$t0"
}
if [ "$KIND" = isergw ]; then
	want hdr-reserved-flags hdr-reserved-bytes -- 'dropping connection: bad iSER header: reserved bits'
	want hdr-unknown-opcode -- 'dropping connection: bad iSER header: unknown iSER opcode'
	want hdr-hello -- 'dropping connection: bad iSER header: iSER Hello'
	want hdr-short-send -- 'dropping connection: bad iSER header: Send shorter'
	want read-zero-stag -- 'dropping connection: bad iSER header: STag marked valid but zero'
	want read-no-stag -- 'dropping connection: READ data without a read STag'
	want write-no-stag -- 'dropping connection: WRITE needs data but the iSER header has no write STag'
	want write-short-stag -- 'dropping connection: RDMA Read completed with remote access error'
	want read-stale-stag -- 'dropping connection: RDMA Write completed with remote access error'
	want mou-exceeded -- 'more than MaxOutstandingUnexpectedPDUs=4'
	want ffp-dsl-overclaim -- 'SCSI Command claims 8192 data bytes but the Send carried'
	want login-dsl-overclaim login-dsl-huge -- 'Login Request claims [0-9]+ data bytes but the Send carried'
	t0=$(vm_now)
	vm_isergwd_stop "$TPID"
	record "isergwd stops with exit 0 on SIGTERM" $? "$t0"
	vm_log "WARN/ERR lines of isergwd:"
	grep -E 'Z (warn|err) ' "$VM_ISERGWD_LOG" | tail -n 60 >&2
else
	vm_tgtd_stop "$TPID"
fi

echo "iser-badinput ($KIND) results:"
printf '  %s\n' "${results[@]}"
echo "iser-badinput: $((${#results[@]} - failed)) passed, $failed failed ($(vm_since "$t_all") s in the guest)"
[ "$failed" -eq 0 ]
