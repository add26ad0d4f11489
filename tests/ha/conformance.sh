#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# ha.cluster-conformance: three nodes in their namespaces with corosync,
# isergwd and isergw-ha, no shared_state_dir: the LU state (reservations,
# mode bits, the unit attentions and aborts for other nodes' nexuses) goes
# through the agents over corosync (lu_state "cluster", docs/scsi.md). The
# LUN files live in one directory (the "disk"), the LU state does not.
#
#   conformance.sh --isergwd PATH --isergwctl PATH --ha PATH --prefix P
#                  --subnet S --scratch DIR [--luns "0 1"] [--tests T]
#                  [--allow-fail N]
#
# 1. the cluster comes up with the example configuration (LUN 0 on the
#    iscsi:// backend, tgt; LUN 1 on a file), and no node has a
#    shared_state_dir;
# 2. for each LUN: iscsi-test-cu --dataloss -i INIT1 -I INIT2 -t T (ALL) with
#    the first URL through node 1 and the second (MultipathIO, the second
#    initiator) through node 2: prints "ha.cluster-conformance LUN L: total
#    N, passed P (real passes R), failed F, skipped S" and the failing
#    tests; more than N failures (0) fail the test;
# 3. the LU state went through the cluster (each agent logged LU versions),
#    every node reports the same registrations afterwards, and every agent
#    and isergwd stops with status 0.
# Exit 77 when not root, or corosync or iscsi-test-cu is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

LUNS="0 1"
TESTS=ALL
ALLOW_FAIL=0
SUITE_TIMEOUT=${SUITE_TIMEOUT:-1500}
ha_options 4,25 --luns LUNS --tests TESTS --allow-fail ALLOW_FAIL -- "$@"
ha_need --ha "$BED_HA" isergw-ha
command -v iscsi-test-cu >/dev/null || { bed_log "skipped: no iscsi-test-cu (libiscsi-bin)"; exit 77; }
command -v jq >/dev/null || bed_die "jq is required"

INIT1=iqn.2026-11.org.isergw:init1
INIT2=iqn.2026-11.org.isergw:init2
fail=0

ha_cluster_up || bed_die "the cluster did not come up"
for k in 1 2 3; do
	ha_check "node $k has no shared_state_dir" \
		bash -c "! grep -q shared_state_dir '$SCRATCH/n$k/isergwd.log'"
done

summary() { # summary TLOG RESULTS: sets TOTAL PASSED FAILED SKIPPED
	read -r TOTAL _ PASSED FAILED _ < <(awk '$1 == "tests" && NF >= 6 { print $2, $3, $4, $5, $6 }' "$1" | tail -n 1)
	awk '/^Suite: /{ suite = $2 }
	     /^  Test: /{ t = $0; sub(/^  Test: /, "", t); sub(/ \.\.\..*/, "", t); n++; cur = suite "." t }
	     /\[SKIPPED\]/{ if (n && !(n in sk)) { sk[n] = 1; print "SKIPPED " cur } }
	     /(^|\.\.\.)FAILED[ \t]*$/{ print "FAILED " cur }' "$1" >"$2"
	SKIPPED=$(grep -c '^SKIPPED ' "$2")
}

for lun in $LUNS; do
	url1="iscsi://$(bed_portal 1)/$BED_HA_IQN/$lun"
	url2="iscsi://$(bed_portal 2)/$BED_HA_IQN/$lun"
	tlog=$SCRATCH/iscsi-test-cu-lun$lun.log
	res=$SCRATCH/results-lun$lun.txt
	bed_log "iscsi-test-cu --dataloss -i $INIT1 -I $INIT2 -t $TESTS $url1 $url2"
	start=$SECONDS
	bed_host timeout --kill-after=10 "$SUITE_TIMEOUT" iscsi-test-cu --dataloss -i "$INIT1" \
		-I "$INIT2" -t "$TESTS" "$url1" "$url2" </dev/null >"$tlog" 2>&1
	rc=$?
	TOTAL="" PASSED=0 FAILED=0 SKIPPED=0
	summary "$tlog" "$res"
	if [ -z "$TOTAL" ]; then
		bed_log "LUN $lun: no CUnit Run Summary (iscsi-test-cu exit $rc); last lines:"
		tail -n 20 "$tlog" >&2
		fail=1
		continue
	fi
	printf 'ha.cluster-conformance LUN %s: total %s, passed %s (real passes %s), failed %s, skipped %s, %s s\n' \
		"$lun" "$TOTAL" "$PASSED" "$((PASSED - SKIPPED))" "$FAILED" "$SKIPPED" "$((SECONDS - start))"
	if [ "$FAILED" -gt 0 ]; then
		echo "failing tests:"
		sed -n 's/^FAILED /  /p' "$res"
	fi
	[ "$FAILED" -le "$ALLOW_FAIL" ] || fail=1
done

# 3. the state went through the agents, and every node holds the same
for k in 1 2 3; do
	ha_check "node $k's agent applied LU versions" grep -q "ha-lu: LU .*: version" "$SCRATCH/n$k/ha.log"
	ha_check "node $k's agent runs" bed_alive "$k" ha
	ha_check "node $k's isergwd runs" bed_alive "$k" isergwd
done
v1=$(grep -ho "ha-lu: LU [0-9a-f]*: version [0-9]*" "$SCRATCH/n1/ha.log" | sort -u)
for k in 2 3; do
	vk=$(grep -ho "ha-lu: LU [0-9a-f]*: version [0-9]*" "$SCRATCH/n$k/ha.log" | sort -u)
	ha_check "node $k applied the same LU versions as node 1" [ "$v1" = "$vk" ]
done
ha_stop_daemons

if [ "$fail" -ne 0 ]; then
	bed_log "ha.cluster-conformance: FAILED"
	exit 1
fi
bed_log "ha.cluster-conformance: iscsi-test-cu through nodes 1 and 2 with the LU state carried by the cluster"
exit 0
