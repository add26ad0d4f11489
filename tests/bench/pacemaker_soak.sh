#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The soak of deploy.soak, for longer: docs/deploy.md's cluster (three
# Debian 12 containers with corosync, isergw, pacemaker and the floating
# portal, as tests/deploy/guide.sh makes it from the packages in build/debs),
# left alone once every pacemaker resource has started, with the host's
# libiscsi session (ha_io) writing and verifying LUN 0 through the floating
# portal. Not a ctest test: it prints the figures. Root only.
#
#   tests/bench/pacemaker_soak.sh [--minutes N] [--build DIR] [--debs DIR]
#                                 [--scratch DIR] [--prefix P] [--tgt-port N]
#
# --minutes of I/O (default 30); --build DIR (default build/) holds
# bin/ha_io; --debs the packages (default build/debs, deploy.packages or
# deploy/build-debs.sh makes them). The cluster has its own network
# namespaces (prefix P, default "bs"), scratch directory (default
# /tmp/isergw-bench-soak) and backend tgtd control port (default 38), so it
# can run while deploy.guide and deploy.soak run.
#
# Prints (tests/deploy/guide.sh's soak):
#   soak: N s after the last resource started
#   soak: fail-counts: ...; resources with a failure: F
#   soak: resource starts in the soak: S (before it: B)
#   soak: host I/O: W writes, each read back and verified; ha_io: writes ...
#   soak: session drops: D; I/O errors (commands failed or sent again): E
# and exits 1 when one of F, S, D, E is not 0 or a block did not verify.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)

minutes=30 build=$src/build debs=$src/build/debs scratch=/tmp/isergw-bench-soak prefix=bs port=38
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes) minutes=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--debs) debs=$2; shift 2 ;;
	--scratch) scratch=$2; shift 2 ;;
	--prefix) prefix=$2; shift 2 ;;
	--tgt-port) port=$2; shift 2 ;;
	-h | --help) awk 'NR > 2 { if (!/^#/) exit; print }' "$0"; exit 0 ;;
	*) echo "pacemaker_soak.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
case "$minutes" in '' | *[!0-9]* | 0) echo "pacemaker_soak.sh: --minutes N (N >= 1)" >&2; exit 2 ;; esac
io=
for c in "$build/bin/ha_io" "$build/tests/ha/ha_io"; do
	[ -x "$c" ] && { io=$c; break; }
done
[ -n "$io" ] || { echo "pacemaker_soak.sh: no ha_io under $build (cmake --build $build --target ha_io)" >&2; exit 2; }

exec "$src/tests/deploy/guide.sh" --debs "$debs" --io "$io" --scratch "$scratch" \
	--prefix "$prefix" --tgt-port "$port" --soak $((minutes * 60))
