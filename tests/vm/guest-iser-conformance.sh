#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# libiscsi's conformance suite over iSER against isergwd, compared test by test
# with the same suite over TCP against the same daemon and LUN, and checked
# against tgt's iSER target where they differ (runs in the guest:
# tests/vm/run-vm.sh; ctest vm.isergw-iser-conformance).
#
#   run-vm.sh tests/vm/guest-iser-conformance.sh --daemon PATH/isergwd
#             [--tests REGEX] [--tgt-all] [--tcp-all] [--tcp-per-test] [--iser-per-test]
#             [--test-timeout S]
#             [--size 256M]
#
# Over iser://10.0.2.15/IQN/0 one iscsi-test-cu --dataloss process runs the
# tests of a suite that are not on the initiator-side list below (-t takes a
# comma-separated list); every test that does not PASS or SKIP there, every
# test the process did not reach (libiscsi 1.19's fragile iSER initiator
# crashed or hung) and every test on that list runs again in a process of its
# own, and that result counts (--iser-per-test: one process per test for every
# test, as before: about 3x slower under TCG). The tests that do not pass (or
# skip) over iSER then run over iscsi://10.0.2.15:3261/IQN/0 (isergwd serves
# the LUN on both portals), one process per suite, and the suite's log gives
# each test's result (--tcp-all: every test over TCP too, for the record; the
# host's integration.conformance runs the whole suite over TCP anyway;
# --tcp-per-test: one process per test; a TCP suite run that does not reach
# its summary is run again test by test). Each test is PASS, SKIP ([SKIPPED]),
# FAIL (the test failed), CRASH (the initiator died: no CUnit summary) or
# HANG (killed after --test-timeout seconds without output).
#
# A test that passes (or skips) over TCP but not over iSER runs once more over
# iSER (libiscsi's iSER initiator fails now and then on its own on a loaded
# machine; both results are printed); if it fails again it fails this script,
# unless it is on the list of initiator-side defects below AND, in the same
# run, the same test does not pass against tgt 1.0.85's iSER target either
# (the reference: one tgtd on port 3260 once isergwd has stopped, LUN 1).
# isergwd dying, or not stopping with exit status 0 on SIGTERM, fails too.
# --tgt-all runs every test against tgt as well (for the record; slow).
# Ends with the totals per transport and
# "iser-conformance: N regressions, M initiator-side (verified against tgt)".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/guest-lib.sh
. "$here/guest-lib.sh"

DAEMON=
TESTS=
TGT_ALL=0
TCP_ALL=0
TCP_PER_TEST=0
ISER_PER_TEST=0
TEST_TIMEOUT=120
SIZE=256M
while [ $# -gt 0 ]; do
	case "$1" in
	--daemon) DAEMON=$2; shift 2 ;;
	--tests) TESTS=$2; shift 2 ;;
	--tgt-all) TGT_ALL=1; shift ;;
	--tcp-all) TCP_ALL=1; shift ;;
	--tcp-per-test) TCP_PER_TEST=1; shift ;;
	--iser-per-test) ISER_PER_TEST=1; shift ;;
	--test-timeout) TEST_TIMEOUT=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	-h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2' "$0"; exit 0 ;;
	*) vm_die "unknown option $1" ;;
	esac
done
[ -x "$DAEMON" ] || vm_die "--daemon PATH (the isergwd binary) is required"

# Tests that libiscsi 1.19's own iSER initiator cannot run, whatever the
# target (docs/testing.md, "libiscsi 1.19's iSER initiator"): accepted only
# when they do not pass against tgt's iSER target in the same run either.
# Why, from libiscsi 1.19's lib/iser.c and its sync event loop:
KNOWN_INITIATOR=(
	# the iSER path sizes a READ's data by the expected transfer length and
	# ignores the residual (datain.size is EDTL); EDTL unlike the CDB's
	# length overruns its buffers; a READ with EDTL 0 is refused locally
	Inquiry.AllocLength Inquiry.BlockLimits ModeSense6.Residuals
	iSCSIResiduals.Read10Invalid iSCSIResiduals.Read10Residuals
	iSCSIResiduals.Read12Residuals iSCSIResiduals.Read16Residuals
	iSCSIResiduals.Write10Residuals iSCSIResiduals.Write12Residuals
	iSCSIResiduals.Write16Residuals iSCSIResiduals.WriteVerify10Residuals
	iSCSIResiduals.WriteVerify12Residuals iSCSIResiduals.WriteVerify16Residuals
	# passes, then the initiator aborts on a corrupted heap when freeing
	# ("free(): invalid next size")
	GetLBAStatus.BeyondEol
	# transfers of 512 KiB and more: "Libiscsi-iSER supports messages
	# smaller than 512k", after which the context is unusable
	ExtendedCopy.Simple WriteSame16.Unmap
	# the synchronous loop calls iscsi_service(ctx, 0) after each 1 s poll
	# timeout and the iSER transport fails it ("revents is not POLLIN"): a
	# test that waits for an unanswered command cannot
	iSCSIcmdsn.iSCSICmdSnTooHigh iSCSIcmdsn.iSCSICmdSnTooLow
	# a test of the transport: over iSER the data moves by RDMA, and the
	# initiator's Data-Out PDUs carry none, so a wrong DataSN cannot fail
	# the command the way the test expects
	iSCSIdatasn.iSCSIDataSnInvalid
	# the test's own event loop (async API) or a second context that logs
	# out, resets or reconnects: the initiator segfaults
	Read10.Async Write10.Async iSCSITMF.AbortTaskSimpleAsync
	iSCSITMF.LUNResetSimpleAsync Reserve6.Logout Reserve6.ITNexusLoss
	Reserve6.TargetColdReset Reserve6.TargetWarmReset Reserve6.LUNReset
)

IQN=iqn.2026-11.org.isergw:vm-iser-conf
DISK=/tmp/iser-conf.img
PORT=3260
PORT_TCP=3261
DIR=$VM_OUT/conformance
mkdir -p "$DIR/iser" "$DIR/iser-retry" "$DIR/tcp" "$DIR/tgt"

TPID=
target_alive() { kill -0 "$TPID" 2>/dev/null; }

# run_one KIND URL TEST: prints PASS, SKIP, FAIL, CRASH or HANG (or DIED when
# the target went away); the log is $DIR/KIND/TEST.log.
# run_cu LOG SECONDS URL SPEC: iscsi-test-cu -t SPEC on URL into LOG, killed
# at once should the target die; returns its exit status.
# run_cu LOG IDLE-S URL SPEC: one iscsi-test-cu process; killed (status 124)
# when its log has not grown for IDLE-S seconds (a hung test), or when the
# target died
run_cu() {
	local logf=$1 secs=$2 url=$3 spec=$4 cu size=-1 now last rc
	iscsi-test-cu --dataloss \
		-i "$VM_LIBISCSI_INITIATOR" -I "$VM_LIBISCSI_INITIATOR2" -t "$spec" "$url" \
		</dev/null >"$logf" 2>&1 &
	cu=$!
	last=$SECONDS
	while kill -0 "$cu" 2>/dev/null; do
		target_alive || { kill -KILL "$cu" 2>/dev/null; break; }
		now=$(stat -c %s "$logf" 2>/dev/null || echo 0)
		if [ "$now" != "$size" ]; then
			size=$now last=$SECONDS
		elif [ $((SECONDS - last)) -ge "$secs" ]; then
			kill -TERM "$cu" 2>/dev/null
			sleep 2
			kill -KILL "$cu" 2>/dev/null
			wait "$cu" 2>/dev/null
			return 124
		fi
		sleep 0.2
	done
	wait "$cu" 2>/dev/null
	rc=$?
	return "$rc"
}

run_one() {
	local url=$2 test=$3 logf=$DIR/$1/$3.log rc t f
	run_cu "$logf" "$TEST_TIMEOUT" "$url" "ALL.$test"
	rc=$?
	echo "exit status $rc" >>"$logf"
	target_alive || { echo DIED; return; }
	read -r t f < <(awk '$1 == "tests" && NF >= 6 { print $3, $5 }' "$logf" | tail -n 1)
	if [ -z "${t:-}" ]; then
		case "$rc" in
		124|137) echo HANG ;;
		*) echo CRASH ;;
		esac
	elif [ "$f" -gt 0 ]; then
		echo FAIL
	elif grep -q '\[SKIPPED\]' "$logf"; then
		echo SKIP
	else
		echo PASS
	fi
}
ok() { [ "$1" = PASS ] || [ "$1" = SKIP ]; }

# run_suite URL SUITE: one iscsi-test-cu process for the suite (over TCP);
# prints "TEST RESULT" per test from its log ($DIR/tcp/SUITE.suite.log), or
# nothing when the run did not reach its summary (or DIED).
run_suite() { # run_suite URL SUITE [KIND [SPEC]]
	local url=$1 suite=$2 kind=${3:-tcp} spec=${4:-ALL.$2}
	local logf=$DIR/$kind/$suite.suite.log
	run_cu "$logf" "$TEST_TIMEOUT" "$url" "$spec"
	target_alive || { echo DIED; return; }
	# over TCP a suite run that did not reach its summary is run again test
	# by test; over iSER each test CUnit saw pass counts (a batch of several
	# specs ends without its summary: the initiator dies at its cleanup),
	# and the last one, not followed by another, runs again alone
	[ "$kind" = iser ] || grep -qE '^ +tests +[0-9]+' "$logf" || return 0
	# "  Test: NAME ..." opens a test; its output runs to the next one and
	# holds CUnit's verdict, "passed" or "FAILED" (after any messages)
	awk 'function flush() { if (t != "") print t, (f ? "FAIL" : (k ? "SKIP" : (p ? "PASS" : "CRASH"))) }
		/^  Test: / { flush(); t = $2; f = k = p = 0 }
		/^Run Summary/ { flush(); t = "" }
		t != "" && /(^|[^[])FAILED/ { f = 1 }   # not "[FAILED] ...": a logged message
		t != "" && /\[SKIPPED\]/ { k = 1 }
		t != "" && /passed/ { p = 1 }' "$logf"
}

declare -A R_ISER R_TCP R_TGT
declare -A COUNT
count() { COUNT[$1.$2]=$(( ${COUNT[$1.$2]:-0} + 1 )); }

tests=$(iscsi-test-cu --list | awk -F. 'NF == 3 && $1 == "ALL" { print $2 "." $3 }')
[ -z "$TESTS" ] || tests=$(grep -E "$TESTS" <<<"$tests")
ntests=$(wc -w <<<"$tests")
[ "$ntests" -gt 0 ] || vm_die "no test matches '$TESTS'"
t_all=$(vm_now)

vm_mkfile "$DISK" "$SIZE" || vm_die "cannot create $DISK"
vm_isergwd_start "$DAEMON" "$IQN" "$DISK" "$SIZE" "iser://$VM_ADDR:$PORT" "tcp://$VM_ADDR:$PORT_TCP" ||
	vm_die "isergwd did not start"
TPID=$VM_ISERGWD_PID
died=
ISER_URL=iser://$VM_ADDR/$IQN/0
known() {
	local e
	for e in "${KNOWN_INITIATOR[@]}"; do [ "$e" = "$1" ] && return 0; done
	return 1
}
# the suite batches: every test of a suite but those on the initiator-side
# list in one process; what it did not pass runs alone below
declare -A BATCH
batches=0 batch_redo=0
if [ "$ISER_PER_TEST" -eq 0 ]; then
	for suite in $(cut -d. -f1 <<<"$tests" | uniq); do
		spec= all=1
		for test in $(grep "^$suite\." <<<"$tests"); do
			if known "$test"; then all=0; else spec+=${spec:+,}ALL.$test; fi
		done
		[ -n "$spec" ] || continue
		[ "$all" -eq 0 ] || [ -n "$TESTS" ] || spec=ALL.$suite
		t0=$(vm_now)
		out=$(run_suite "$ISER_URL" "$suite" iser "$spec")
		[ "$out" = DIED ] && { died="isergwd died during suite $suite over iSER"; break; }
		batches=$((batches + 1))
		n=0
		while read -r name res; do
			[ -n "$name" ] && grep -qxF "$suite.$name" <<<"$tests" || continue
			BATCH[$suite.$name]=$res
			ok "$res" && n=$((n + 1))
		done <<<"$out"
		printf '%-28s iser batch: %3d passed or skipped %5s s\n' "$suite" "$n" "$(vm_since "$t0")"
	done
fi
i=0
for test in $tests; do
	[ -z "$died" ] || break
	i=$((i + 1))
	if [ -n "${BATCH[$test]:-}" ] && ok "${BATCH[$test]}"; then
		R_ISER[$test]=${BATCH[$test]}
		count iser "${R_ISER[$test]}"
		continue
	fi
	[ "$ISER_PER_TEST" -eq 1 ] || known "$test" || batch_redo=$((batch_redo + 1))
	t0=$(vm_now)
	a=$(run_one iser "$ISER_URL" "$test")
	[ "$a" = DIED ] && { died="isergwd died during $test over iSER"; break; }
	R_ISER[$test]=$a
	count iser "$a"
	printf '%3d/%d %-45s iser %-5s %5s s%s\n' "$i" "$ntests" "$test" "$a" "$(vm_since "$t0")" \
		"${BATCH[$test]:+ (in the suite run: ${BATCH[$test]})}"
done
vm_log "iSER runs done ($(vm_since "$t_all") s; $batches suite processes," \
	"$batch_redo of their tests run again alone)"
# TCP: per suite (or per test), the tests that did not pass over iSER (all
# of them with --tcp-all)
TCP_URL=iscsi://$VM_ADDR:$PORT_TCP/$IQN/0
suites=$(cut -d. -f1 <<<"$tests" | uniq)
tcp_tests=0
for suite in $suites; do
	[ -z "$died" ] || break
	todo=()
	for test in $(grep "^$suite\." <<<"$tests"); do
		[ "$TCP_ALL" -eq 1 ] || ! ok "${R_ISER[$test]:-}" && todo+=("$test")
	done
	[ ${#todo[@]} -gt 0 ] || continue
	tcp_tests=$((tcp_tests + ${#todo[@]}))
	if [ "$TCP_PER_TEST" -eq 0 ]; then
		spec=ALL.$suite
		if [ "$TCP_ALL" -eq 0 ]; then
			spec=$(printf 'ALL.%s,' "${todo[@]}")
			spec=${spec%,}
		fi
		out=$(run_suite "$TCP_URL" "$suite" tcp "$spec")
		[ "$out" = DIED ] && { died="isergwd died during suite $suite over TCP"; break; }
		while read -r name res; do
			if [ -z "$name" ] || ! grep -qxF "$suite.$name" <<<"$tests"; then
				continue
			fi
			R_TCP[$suite.$name]=$res
		done <<<"$out"
	fi
	for test in "${todo[@]}"; do
		if [ -z "${R_TCP[$test]:-}" ] || [ "${R_TCP[$test]}" = CRASH ]; then
			b=$(run_one tcp "$TCP_URL" "$test")
			[ "$b" = DIED ] && { died="isergwd died during $test over TCP"; break 2; }
			R_TCP[$test]=$b
		fi
		count tcp "${R_TCP[$test]}"
	done
done
vm_log "TCP runs done ($(vm_since "$t_all") s; $tcp_tests tests)"
# libiscsi 1.19's iSER initiator is fragile (docs/testing.md): on a loaded
# machine it fails a command now and then on its own transport ("iscsi_service
# failed"). A test that passes over TCP but not over iSER therefore runs once
# more over iSER before it counts (unless it is on the initiator-side list,
# which is checked against tgt below); both results are printed, and a second
# failure counts as before (a target bug fails both times).
retried=()
for test in $tests; do
	[ -z "$died" ] || break
	[ -n "${R_ISER[$test]:-}" ] && [ -n "${R_TCP[$test]:-}" ] || continue
	ok "${R_TCP[$test]}" && ! ok "${R_ISER[$test]}" || continue
	# (the initiator-side list is checked against tgt below instead)
	[[ " ${KNOWN_INITIATOR[*]} " != *" $test "* ]] || continue
	a=$(run_one iser-retry "$ISER_URL" "$test")
	[ "$a" = DIED ] && { died="isergwd died during $test over iSER (run again)"; break; }
	printf 'again %-45s iser %-5s then %s\n' "$test" "${R_ISER[$test]}" "$a"
	retried+=("$test: ${R_ISER[$test]}, then $a")
	R_ISER[$test]=$a
done
stopped=0
if [ -z "$died" ]; then
	vm_isergwd_stop "$TPID" && stopped=1
fi
vm_log "isergwd phase done ($(vm_since "$t_all") s)"

# Tests to check against tgt: those that pass over TCP but not over iSER.
regress=()
for test in $tests; do
	[ -n "${R_ISER[$test]:-}" ] || continue
	ok "${R_TCP[$test]:-}" && ! ok "${R_ISER[$test]}" && regress+=("$test")
done
tgt_tests=("${regress[@]}")
[ "$TGT_ALL" -eq 1 ] && mapfile -t tgt_tests <<<"$tests"
if [ ${#tgt_tests[@]} -gt 0 ] && [ -z "$died" ]; then
	vm_mkfile "$DISK" "$SIZE"
	# thin provisioning, as isergwd's LUN, so that the unmap tests run there too
	if vm_tgtd_start 7 && vm_tgt_target iser 1 "$IQN" "$DISK" &&
		tgtadm -C 7 --lld iser --mode logicalunit --op update --tid 1 --lun 1 \
			--params thin_provisioning=1; then
		TPID=$VM_TGTD_PID
		for test in "${tgt_tests[@]}"; do
			c=$(run_one tgt "iser://$VM_ADDR/$IQN/1" "$test")
			[ "$c" = DIED ] && { vm_log "tgtd died during $test"; break; }
			R_TGT[$test]=$c
			count tgt "$c"
			printf 'tgt %-45s %s\n' "$test" "$c"
		done
		vm_tgtd_stop "$TPID"
	else
		vm_log "tgtd could not be set up: the initiator-side list cannot be verified"
	fi
fi

bad=() accepted=()
for test in "${regress[@]}"; do
	what="$test: iser ${R_ISER[$test]}, tcp ${R_TCP[$test]}, tgt iser ${R_TGT[$test]:-not run}"
	if known "$test" && [ -n "${R_TGT[$test]:-}" ] && ! ok "${R_TGT[$test]}"; then
		accepted+=("$what")
	elif known "$test"; then
		bad+=("$what (on the initiator-side list, but tgt passes it: a target bug)")
	else
		bad+=("$what")
	fi
done
unused=()
for e in "${KNOWN_INITIATOR[@]}"; do
	[ -z "$TESTS" ] || grep -qxF "$e" <<<"$tests" || continue
	[[ " ${regress[*]} " == *" $e "* ]] || unused+=("$e")
done

summary() { # summary KIND
	printf '%-5s PASS %3d  SKIP %3d  FAIL %3d  CRASH %3d  HANG %3d\n' "$1" \
		"${COUNT[$1.PASS]:-0}" "${COUNT[$1.SKIP]:-0}" "${COUNT[$1.FAIL]:-0}" \
		"${COUNT[$1.CRASH]:-0}" "${COUNT[$1.HANG]:-0}"
}
echo
echo "conformance ($ntests tests; logs: $DIR/{iser,tcp,tgt}/):"
summary iser
summary tcp
[ "$TCP_ALL" -eq 1 ] || echo "  (over TCP only the $tcp_tests tests that did not pass over iSER)"
[ ${#tgt_tests[@]} -eq 0 ] || summary tgt
for test in $tests; do
	[ -n "${R_ISER[$test]:-}" ] || continue
	[ -n "${R_TCP[$test]:-}" ] || continue
	if [ "${R_ISER[$test]}" != "${R_TCP[$test]}" ] || ! ok "${R_ISER[$test]}"; then
		printf '  %-45s iser %-5s tcp %-5s tgt-iser %s\n' "$test" "${R_ISER[$test]}" \
			"${R_TCP[$test]}" "${R_TGT[$test]:--}"
	fi
done
[ ${#retried[@]} -eq 0 ] || printf '  run again over iSER: %s\n' "${retried[@]}"
[ ${#accepted[@]} -eq 0 ] || printf '  initiator-side (verified against tgt): %s\n' "${accepted[@]}"
[ ${#unused[@]} -eq 0 ] || printf '  note: on the initiator-side list but passing over iSER now: %s\n' "${unused[@]}"
[ ${#bad[@]} -eq 0 ] || printf '  REGRESSION: %s\n' "${bad[@]}"
[ -z "$died" ] || echo "  TARGET DIED: $died"
[ -n "$died" ] || [ "$stopped" -eq 1 ] || echo "  isergwd did not stop cleanly on SIGTERM"
echo "iser-conformance: ${#bad[@]} regressions, ${#accepted[@]} initiator-side (verified against tgt)" \
	"($(vm_since "$t_all") s in the guest)"
[ ${#bad[@]} -eq 0 ] && [ -z "$died" ] && [ "$stopped" -eq 1 ]
