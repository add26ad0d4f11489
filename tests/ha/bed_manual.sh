#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The HA bed by hand (tests/ha/bed.sh): bring one up and leave it running,
# look at it, tear it down.
#
#   bed_manual.sh [--build DIR] [--prefix P] [--subnet S] [--scratch DIR] COMMAND [ARGS...]
#
#   up [--ha] [--backend tgt|isergw] [--config]
#                   the networks, corosync quorate on every node, the backend,
#                   isergwd on every node; --ha: isergw-ha on every node too,
#                   --config: then `isergwctl cluster config apply` of the
#                   example cluster configuration (SCRATCH/cluster.json)
#                   through node 1. Stays up.
#   down            kills everything of the bed, deletes its namespaces
#   status          per node: quorum as corosync reports it, daemons running
#   exec K CMD...   CMD in node K (its network, mount and UTS namespaces)
#   host CMD...     CMD in the host namespace
#   partition K | heal K | kill-node K | restart-node K
#
# Defaults: --build build (the binaries: DIR/bin/isergwd, isergwctl,
# isergw-ha, DIR/tests/integration/cluster_probe), --prefix hm, --subnet 90,
# --scratch /tmp/isergw-bed-PREFIX. The same prefix, subnet and scratch
# directory must be given to every command for one bed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/ha/bed.sh
. "$here/bed.sh"

BUILD=$here/../../build
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--prefix | --subnet | --scratch | --isergwd | --isergwctl | --ha | --probe)
		args+=("$1" "$2"); shift 2 ;;
	-h | --help) sed -n '3,25p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { sed -n '3,25p' "$0"; exit 2; }
cmd=$1
shift
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || BUILD=
BED_ISERGWD=$BUILD/bin/isergwd BED_ISERGWCTL=$BUILD/bin/isergwctl
BED_HA=$BUILD/bin/isergw-ha BED_PROBE=$BUILD/tests/integration/cluster_probe
BED_PREFIX=hm BED_SUBNET=90
bed_parse_args "${args[@]}"
SCRATCH=${SCRATCH:-/tmp/isergw-bed-$BED_PREFIX}
[ "$cmd" = up ] || BED_NO_BINARIES=1
BED_KEEP=1
bed_init
trap - EXIT # the bed stays as this command leaves it

case "$cmd" in
up)
	ha=0 backend=tgt config=0
	while [ $# -gt 0 ]; do
		case "$1" in
		--ha) ha=1; shift ;;
		--backend) backend=$2; shift 2 ;;
		--config) config=1; shift ;;
		*) bed_die "up: unknown option $1" ;;
		esac
	done
	bed_up || bed_die "the bed did not come up"
	bed_mark "corosync started"
	for ((k = 1; k <= BED_NODES; k++)); do bed_start_corosync "$k" || bed_die "corosync on node $k"; done
	# shellcheck disable=SC2046 # the node numbers
	bed_wait_quorum "$BED_NODES" $(seq "$BED_NODES") || bed_die "no quorum"
	bed_backend_start "$backend" || bed_die "the backend did not start"
	for ((k = 1; k <= BED_NODES; k++)); do bed_start_isergwd "$k" || bed_die "isergwd on node $k"; done
	bed_cluster_config "$SCRATCH/cluster.json" || exit 1
	if [ "$ha" = 1 ]; then
		for ((k = 1; k <= BED_NODES; k++)); do bed_start_ha "$k" || bed_die "isergw-ha on node $k"; done
		if [ "$config" = 1 ]; then
			bed_cli 1 cluster config apply "$SCRATCH/cluster.json" || bed_die "cluster config apply"
		fi
	fi
	echo "up: prefix $BED_PREFIX, ring $BED_NET.1.0/24, storage $BED_NET.2.0/24, scratch $SCRATCH"
	echo "  $0 --prefix $BED_PREFIX --subnet $BED_SUBNET --scratch $SCRATCH status|exec K CMD|host CMD|down"
	echo "  by hand: nsenter -t \$(cat $SCRATCH/n1/pids/anchor) -m -n -u -- corosync-quorumtool -s"
	;;
down)
	bed_down || exit 1
	bed_check_clean
	;;
status)
	for ((k = 1; k <= BED_NODES; k++)); do
		line="n$k:"
		if ! bed_alive "$k" anchor; then
			echo "$line down"
			continue
		fi
		if q=$(bed_quorum "$k"); then
			line+=" quorate ${q% *}, members ${q#* }"
		else
			line+=" corosync not answering"
		fi
		for d in corosync isergwd ha; do
			bed_alive "$k" "$d" && line+=" $d:$(bed_pid "$k" "$d")"
		done
		echo "$line"
	done
	bed_alive be backend && echo "backend: $(cat "$SCRATCH/be/kind") $(bed_backend_url)"
	;;
exec) k=$1; shift; bed_exec "$k" "$@" ;;
host) bed_host "$@" ;;
partition) bed_partition "$@" ;;
heal) bed_heal "$@" ;;
kill-node) bed_kill_node "$1" ;;
restart-node) BED_NO_BINARIES=0; bed_restart_node "$1" ;;
*) bed_die "unknown command $cmd" ;;
esac
