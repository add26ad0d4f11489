#!/usr/bin/env bash
# shellcheck disable=SC2317 # the checks are called through ha_check and bed_poll
# SPDX-License-Identifier: Apache-2.0
#
# ha.caw-atomic: COMPARE AND WRITE through two nodes is atomic across them.
#
#   caw_atomic.sh --isergwd PATH --isergwctl PATH --ha PATH --caw PATH
#                 --prefix P --subnet S --scratch DIR [--good N]
#                 [--lu-state local]
#
# 1. three nodes, the example configuration (LUN 1 on a file: COMPARE AND
#    WRITE emulated by isergwd, read-compare-write), the LU state and the
#    cluster-wide LBA locks carried by the agents;
# 2. block 0 of LUN 1 zeroed; two clients, one through node 1 and one
#    through node 2, each increment its counter until N COMPARE AND WRITEs
#    (default 5000) ended GOOD (read, CAW v -> v + 1, a MISCOMPARE reads
#    again);
# 3. the counter read through both nodes equals the number of GOOD COMPARE
#    AND WRITEs (2 N): no lost update.
# --lu-state local (no cluster-wide lock, each node's gate only) must lose
# updates: it shows the test catches them.
# Exit 77 when not root or corosync is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/ha_lib.sh
. "$here/ha_lib.sh"

CAW=
GOOD=5000
LU_STATE=
ha_options 4,22 --caw CAW --good GOOD --lu-state LU_STATE -- "$@"
ha_need --ha "$BED_HA" isergw-ha
ha_need --caw "$CAW" caw_inc
command -v jq >/dev/null || bed_die "jq is required"
ha_lu_state "$LU_STATE"
fail=0

ha_cluster_up || bed_die "the cluster did not come up"

ha_check "block 0 zeroed" bed_host "$CAW" --zero "$(ha_lun_url 1)" >/dev/null
start=$SECONDS
bed_host "$CAW" --good "$GOOD" --initiator iqn.2026-11.org.isergw:caw-a "$(ha_lun_url 1)" \
	>"$SCRATCH/caw-1.log" 2>&1 &
c1=$!
bed_host "$CAW" --good "$GOOD" --initiator iqn.2026-11.org.isergw:caw-b "$(ha_lun_url 2)" \
	>"$SCRATCH/caw-2.log" 2>&1 &
c2=$!
wait "$c1"
r1=$?
wait "$c2"
r2=$?
cat "$SCRATCH/caw-1.log" "$SCRATCH/caw-2.log" >&2
ha_check "the client through node 1 ran to the end" [ "$r1" -eq 0 ]
ha_check "the client through node 2 ran to the end" [ "$r2" -eq 0 ]
g1=$(awk '/^caw: good/ { print $3 }' "$SCRATCH/caw-1.log")
g2=$(awk '/^caw: good/ { print $3 }' "$SCRATCH/caw-2.log")
m1=$(awk '/^caw: good/ { print $5 }' "$SCRATCH/caw-1.log")
m2=$(awk '/^caw: good/ { print $5 }' "$SCRATCH/caw-2.log")
total=$((${g1:-0} + ${g2:-0}))
for k in 1 2; do
	v=$(bed_host "$CAW" --read "$(ha_lun_url "$k")" | awk '/^value/ { print $2 }')
	echo "caw-atomic: through node $k the counter is ${v:-?}; GOOD COMPARE AND WRITEs $total" \
		"(miscompares $((${m1:-0} + ${m2:-0})), $((SECONDS - start)) s)"
	ha_check "through node $k: the counter equals the GOOD COMPARE AND WRITEs" \
		[ "${v:-x}" = "$total" ]
done
ha_check "at least 10000 COMPARE AND WRITEs ended GOOD" [ "$total" -ge 10000 ]
ha_check_daemons 1 2 3
ha_stop_daemons

if [ "$fail" -ne 0 ]; then
	bed_log "ha.caw-atomic: FAILED"
	exit 1
fi
bed_log "ha.caw-atomic: $total COMPARE AND WRITEs through two nodes, no lost update"
exit 0
