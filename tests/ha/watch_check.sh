#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ha.watch-check: the double Active/Optimized check of tests/ha/watch.sh on
# sample files written here, so that a bed run's verdict can be trusted both
# ways: each case is a few answers of the samplers, and the check must pass
# or fail as the case says. Needs neither root nor the bed.
#
#   watch_check.sh [--scratch DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"
# shellcheck source=tests/ha/watch.sh
. "$here/watch.sh"

SCRATCH=${TMPDIR:-/tmp}/watch-check.$$
[ "${1:-}" = --scratch ] && [ -n "${2:-}" ] && SCRATCH=$2
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1
fails=0

# expect NAME pass|fail: the check over $SCRATCH/NAME-*.log
expect() {
	local name=$1 want=$2 got
	if watch_check_double_ao "$SCRATCH/$name"-*.log 2>"$SCRATCH/$name.out"; then got=pass; else got=fail; fi
	if [ "$got" = "$want" ]; then
		echo "ha.watch-check: $name: $got, as it should"
	else
		echo "ha.watch-check: $name: $got, should $want:"
		sed 's/^/  /' "$SCRATCH/$name.out"
		fails=$((fails + 1))
	fi
}

# samples NAME NODE: the lines on stdin (LABEL SEND_US RECV_US LUN ok
# OWN_TPG TPG=STATE[p]...) become node NODE's sample file of case NAME
samples() { cat >"$SCRATCH/$1-n$2.log"; }

# A correct failback seen through a slow answer (what a CI run once reported
# as a double): node 1 comes back Unavailable; its first answer with a lease
# is sent at 355 ms and received at 451 ms. Node 2 still says "mine" at
# 357 ms and hands over before node 1's answer was computed.
samples slow-handover 1 <<'EOF'
n1 254000 254300 0 ok 1 1=3 2=3 3=3
n1 354994 450978 0 ok 1 1=0p 2=1 3=1
n1 459050 461630 0 ok 1 1=0p 2=1 3=1
n1 559050 559630 0 ok 1 1=0p 2=1 3=1
EOF
samples slow-handover 2 <<'EOF'
n2 257195 257487 0 ok 2 1=3 2=0p 3=1
n2 357195 357487 0 ok 2 1=3 2=0p 3=1
n2 457195 457487 0 ok 2 1=0p 2=1 3=1
n2 557195 557487 0 ok 2 1=0p 2=1 3=1
EOF
samples slow-handover 3 <<'EOF'
n3 260000 260300 0 ok 3 1=3 2=0p 3=1
n3 460000 460300 0 ok 3 1=0p 2=1 3=1
EOF
expect slow-handover pass

# Two owners for 200 ms: node 1 keeps group 1 while node 2 took group 2.
samples two-owners 1 <<'EOF'
n1 100000 100400 0 ok 1 1=0p 2=1 3=1
n1 200000 200400 0 ok 1 1=0p 2=1 3=1
n1 300000 300400 0 ok 1 1=0p 2=1 3=1
n1 400000 400400 0 ok 1 1=1 2=0p 3=1
EOF
samples two-owners 2 <<'EOF'
n2 120000 120300 0 ok 2 1=1p 2=0 3=1
n2 220000 220300 0 ok 2 1=1p 2=0 3=1
n2 320000 320300 0 ok 2 1=1 2=0p 3=1
EOF
expect two-owners fail

# The same answers, but node 2's own group is Unavailable in them: it does
# not serve, so what it says is no second owner.
cp "$SCRATCH/two-owners-n1.log" "$SCRATCH/not-serving-n1.log"
samples not-serving 2 <<'EOF'
n2 120000 120300 0 ok 2 1=1p 2=0 3=1
n2 220000 220300 0 ok 2 1=1p 2=3 3=1
n2 320000 320300 0 ok 2 1=1 2=0p 3=1
EOF
sed -i '1s/ 2=0 / 2=3 /' "$SCRATCH/not-serving-n2.log"
expect not-serving pass

# One answer naming two groups Active/Optimized.
samples one-answer 1 <<'EOF'
n1 100000 100400 2 ok 1 1=0 2=0p 3=1
EOF
expect one-answer fail

# Another LUN's owner is no conflict: node 2 owns LUN 1 while node 1 owns LUN 0.
samples other-lun 1 <<'EOF'
n1 100000 100400 0 ok 1 1=0p 2=1 3=1
n1 200000 200400 0 ok 1 1=0p 2=1 3=1
EOF
samples other-lun 2 <<'EOF'
n2 150000 150300 1 ok 2 1=1 2=0p 3=1
EOF
expect other-lun pass

echo "ha.watch-check: $fails case(s) wrong"
[ "$fails" -eq 0 ] || { echo "ha.watch-check: files kept in $SCRATCH"; exit 1; }
rm -rf "$SCRATCH"
