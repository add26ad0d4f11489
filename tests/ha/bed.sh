# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# The HA test bed: a small rack on one machine, in network namespaces.
# Source it from a test script (it sets no shell options; the tests use
# `set -uo pipefail`). Needs root, corosync, nftables, iproute2, util-linux.
#
#   ${P}n1..${P}nN  gateway nodes (N = BED_NODES, default 3). Each has two
#                   interfaces, "ring" 10.S.1.K/24 (corosync) and "stor"
#                   10.S.2.K/24 (iSCSI), and its own mount and UTS namespace
#                   (hostname nK) held by an anchor process, in which /run,
#                   /dev/shm, /etc/corosync and /var/lib/corosync are the
#                   node's own directories. corosync, isergwd, isergw-ha and
#                   every tool that talks to them run inside (bed_exec).
#   ${P}be          the backend iSCSI target, 10.S.2.100 (tgtd or isergwd)
#   ${P}host        the test clients (libiscsi tools, cluster_probe), 10.S.2.200
#   ${P}hub         two bridges, "ring" and "stor": the two switches
#
# BED_STOR=rxe (for the Soft-RoCE VM, tests/vm): the storage network is not
# the "stor" bridge but one veth pair per node in the initial network
# namespace, ${P}hK (10.S.(100+K).1, the host's end) and ${P}gK
# (10.S.(100+K).2, the node's portal), each end with its own rxe device
# (${P}rhK, ${P}rgK): Debian 12's kernel opens rdma_rxe's UDP socket in the
# initial namespace only, so RDMA cannot reach a node's own namespace. There
# each node's isergwd runs in the node's mount and UTS namespaces but the
# initial network namespace (corosync and isergw-ha stay in the node's, where
# the ring is); the anchor holds only the mount and UTS namespaces, and "every
# process of node K" is every process in its mount namespace or its network
# namespace. No backend, no host namespace links (the host is the initial
# namespace); bed_partition K stor is refused.
#
# Per node K, under $SCRATCH/nK/: etc/corosync.conf, corosync-lib/ (bound
# over /var/lib/corosync), run/ (over /run: sockets under run/isergw/, also
# reachable from outside the node), shm/ (over /dev/shm), state/ (isergwd's
# and isergw-ha's --state-dir), pids/, and the logs corosync.log (corosync's
# own log file), corosync.out (its stdout/stderr), isergwd.log, ha.log.
# Each (re)start of a daemon appends a "=== bed: ..." line to its log.
# $SCRATCH/be/: the backend's file, logs and run/; $SCRATCH/shared/: the
# directory every node and the backend see, for LUN files.
#
# Functions (K: node number; every function returns non-zero on failure and
# says why on stderr; the wait functions poll, never sleep a fixed time):
#
#   bed_parse_args ARGS...    --isergwd --isergwctl --ha --probe PATH,
#                             --prefix P, --subnet S, --scratch DIR; the rest
#                             is left in BED_ARGS. Then call bed_init.
#   bed_init                  checks the set-up (exit 77 when not root or no
#                             corosync), names and addresses; installs the
#                             EXIT/INT/TERM traps that run bed_down (with
#                             BED_KEEP=1 the bed stays up for a look by hand:
#                             bed_manual.sh ... down removes it); at exit a
#                             ThreadSanitizer report in a file of SCRATCH
#                             fails the test (tests/common/tsan_scan.sh).
#   bed_up                    tears down leftovers of an earlier run with the
#                             same prefix, builds the networks, the backend
#                             and host namespaces and every node's anchor,
#                             directories and corosync.conf; starts nothing.
#   bed_down                  kills every process of the bed (SIGKILL, by
#                             network namespace), deletes the namespaces.
#                             Idempotent; the trap calls it.
#   bed_check_clean           after bed_down: no namespace, mount or process
#                             of this bed is left (prints what is).
#   bed_exec K CMD...         runs CMD in node K (its net, mount, UTS ns).
#   bed_host CMD...           runs CMD in the host namespace.
#   bed_backend_exec CMD...   runs CMD in the backend's namespaces.
#   bed_ns K | bed_ring_addr K | bed_stor_addr K | bed_portal K
#                             the namespace name / 10.S.1.K / 10.S.2.K /
#                             10.S.2.K:3260
#   bed_corosync_conf K       (re)writes node K's corosync.conf from
#                             BED_CLUSTER_NAME (isergw-test), BED_TOKEN (1000),
#                             BED_TOKEN_COEFFICIENT (0, as docs/ha.md asks,
#                             so the token in force is BED_TOKEN; empty: the
#                             corosync default 650, i.e. 1650 ms with 3 nodes),
#                             BED_TWO_NODE (0), BED_NODES (3) (bed_up calls it
#                             for every node).
#   bed_totem K               prints "token consensus" in force on node K (ms).
#   bed_start_corosync K      starts corosync -f in node K (pid file
#                             nK/pids/corosync).
#   bed_stop_corosync K       SIGTERM, waits for the exit.
#   bed_quorum K              prints "quorate members" as node K's corosync
#                             reports them ("Yes 3", "No 1"); fails when it
#                             cannot be asked.
#   bed_wait_quorum M K...    waits until each node K is quorate with M
#                             members.
#   bed_wait_inquorate M K... waits until each node K is inquorate and sees M
#                             members.
#   bed_start_isergwd K [ARGS...]
#                             isergwd --managed --ctl-socket
#                             /run/isergw/isergwd.sock --state-dir
#                             $SCRATCH/nK/state --log-level info ARGS, waits
#                             until `isergwctl status` answers. Without
#                             --managed in the binary: a bootstrap config
#                             (a portal on 10.S.2.K:3260, an empty target).
#   bed_stop_isergwd K        SIGTERM; fails unless it exits 0.
#   bed_isergwctl K ARGS...   isergwctl -s /run/isergw/isergwd.sock ARGS in K.
#   bed_cli K ARGS...         isergwctl ARGS in K, its default sockets (the
#                             node's own /run/isergw/...).
#   bed_start_ha K [--no-wait] [ARGS...]
#                             isergw-ha --state-dir $SCRATCH/nK/state --socket
#                             /run/isergw/ha.sock --isergwd-socket
#                             /run/isergw/isergwd.sock --log-level info ARGS,
#                             waits until ha.sock exists (--no-wait: not; an
#                             agent started before corosync listens once
#                             corosync answers).
#   bed_stop_ha K             SIGTERM; fails unless it exits 0.
#   bed_pid K NAME            the pid of corosync|isergwd|ha|anchor on node K.
#   bed_alive K NAME          that process runs.
#   bed_kill K NAME           SIGKILL to one daemon (corosync|isergwd|ha) of K.
#   bed_kill_node K           SIGKILL to every process of node K (power loss),
#                             then waits until its kernel holds no socket
#                             that may still send (a dead machine is silent;
#                             with its links cut: about 1 s).
#   bed_restart_node K        power-cycles node K: SIGKILL to whatever is left,
#                             fresh /run and /dev/shm, corosync, then the
#                             daemons it was running (started and not
#                             stopped), with the same arguments.
#   bed_freeze K / bed_thaw K SIGSTOP / SIGCONT to every process of node K.
#   bed_partition K [ring|stor]   drops every packet on that interface of
#                             node K, both directions (nft; default ring).
#   bed_heal K [ring|stor]    removes that drop.
#   bed_cut K J / bed_uncut K J   drops / lets through ring packets between
#                             nodes K and J only (on node K, both directions).
#   bed_backend_start [tgt|isergw]  the backend target
#                             iqn.2026-11.org.isergw:backend at 10.S.2.100:3260
#                             with a 256 MiB file as LUN 1 (ACL all); isergw:
#                             a second isergwd serving the same file as LUN 1.
#   bed_backend_stop          stops it (tgtd: SIGKILL, isergwd: SIGTERM).
#   bed_backend_url           iscsi://10.S.2.100:3260/iqn...:backend/1
#   bed_cluster_config FILE   writes the example cluster configuration for
#                             isergw-ha (format: docs/ha-config.md);
#                             BED_GATEWAY_EXTRA (e.g. ', "lu_state": "local"')
#                             is added to its gateway section.
#   bed_probe K LUN [PROBE-ARGS...]  cluster_probe in the host namespace
#                             through node K's portal, target BED_HA_IQN.
#   bed_logfile K NAME        path of node K's log: corosync (corosync's own
#                             log file), corosync.out, isergwd, ha; K=be: tgtd,
#                             isergwd.
#   bed_log_lines K NAME      its current length in lines (a position).
#   bed_wait_log K NAME ERE [AFTER-LINE [LIMIT]]  waits for a line matching
#                             ERE after line AFTER-LINE, prints it.
#   bed_mark [WHAT]           remembers "now" as the event the next wait
#                             measures from (the failure functions call it).
#   bed_poll LIMIT WHAT CMD...    runs CMD every BED_POLL_S (0.2) s until it succeeds
#                             (0) or LIMIT seconds pass (1).
#   bed_log MSG / bed_die MSG
#
# Measurements: every bed_wait_* prints "bed: WHAT after EVENT: N.NNN s" and
# leaves the seconds in BED_ELAPSED.

# shellcheck source=tests/common/tsan_scan.sh
. "$(dirname "${BASH_SOURCE[0]}")/../common/tsan_scan.sh"

BED_NODES=${BED_NODES:-3}
BED_TOKEN=${BED_TOKEN:-1000}
BED_TOKEN_COEFFICIENT=${BED_TOKEN_COEFFICIENT-0}
BED_CLUSTER_NAME=${BED_CLUSTER_NAME:-isergw-test}
BED_TWO_NODE=${BED_TWO_NODE:-0}
BED_STOR=${BED_STOR:-ns}
BED_POLL_S=${BED_POLL_S:-0.2}
BED_WAIT_LIMIT=${BED_WAIT_LIMIT:-60}
BED_HA_IQN=iqn.2026-11.org.isergw:ha
BED_BACKEND_IQN=iqn.2026-11.org.isergw:backend
BED_PORT=3260
BED_ISERGWD=${BED_ISERGWD:-}
BED_ISERGWCTL=${BED_ISERGWCTL:-}
BED_HA=${BED_HA:-}
BED_PROBE=${BED_PROBE:-}
BED_PREFIX=${BED_PREFIX:-}
BED_SUBNET=${BED_SUBNET:-}
SCRATCH=${SCRATCH:-}
BED_ARGS=()
BED_ELAPSED=
BED_T0=
BED_EVENT=
BED_NS_INODES=()
_BED_LEFT=

bed_log() { printf 'bed: %s\n' "$*" >&2; }
bed_die() { bed_log "error: $*"; exit 1; }

bed_parse_args() {
	BED_ARGS=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--isergwd) BED_ISERGWD=$2; shift 2 ;;
		--isergwctl) BED_ISERGWCTL=$2; shift 2 ;;
		--ha) BED_HA=$2; shift 2 ;;
		--probe) BED_PROBE=$2; shift 2 ;;
		--prefix) BED_PREFIX=$2; shift 2 ;;
		--subnet) BED_SUBNET=$2; shift 2 ;;
		--scratch) SCRATCH=$2; shift 2 ;;
		*) BED_ARGS+=("$1"); shift ;;
		esac
	done
}

# Microseconds since the epoch, and seconds since a microsecond stamp.
bed_now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
bed_secs_since() {
	local d=$(($(bed_now_us) - $1))
	printf '%d.%03d' $((d / 1000000)) $((d % 1000000 / 1000))
}

bed_mark() { BED_T0=$(bed_now_us); BED_EVENT=${1:-mark}; }

bed_init() {
	if [ "$(id -u)" -ne 0 ]; then
		bed_log "skipped: the HA bed needs root (network namespaces)"
		exit 77
	fi
	if ! command -v corosync >/dev/null || ! command -v corosync-quorumtool >/dev/null; then
		bed_log "skipped: corosync not installed (deploy/install-deps.sh)"
		exit 77
	fi
	local t
	for t in ip nft nsenter unshare tgtd tgtadm iscsi-inq jq; do
		command -v "$t" >/dev/null || bed_die "$t not found (deploy/install-deps.sh)"
	done
	[[ $BED_PREFIX =~ ^[a-z][a-z0-9]{0,7}$ ]] ||
		bed_die "--prefix wants 1-8 lower-case letters and digits, starting with a letter (got '$BED_PREFIX')"
	[[ $BED_SUBNET =~ ^[0-9]+$ && $BED_SUBNET -ge 1 && $BED_SUBNET -le 254 ]] ||
		bed_die "--subnet wants 1..254 (got '$BED_SUBNET')"
	[[ $BED_NODES =~ ^[1-9]$ ]] || bed_die "BED_NODES wants 1..9"
	case "$BED_STOR" in
	ns) ;;
	rxe) command -v rdma >/dev/null || bed_die "rdma (iproute2) not found" ;;
	*) bed_die "BED_STOR wants ns or rxe (got '$BED_STOR')" ;;
	esac
	if [ "${BED_NO_BINARIES:-0}" != 1 ]; then
		[[ -n $BED_ISERGWD && -x $BED_ISERGWD ]] || bed_die "--isergwd PATH required"
		[[ -n $BED_ISERGWCTL && -x $BED_ISERGWCTL ]] || bed_die "--isergwctl PATH required"
	fi
	[ -n "$SCRATCH" ] || bed_die "--scratch DIR required"
	mkdir -p "$SCRATCH" || bed_die "cannot create $SCRATCH"
	SCRATCH=$(cd "$SCRATCH" && pwd)
	BED_NET=10.$BED_SUBNET
	BED_BACKEND_ADDR=$BED_NET.2.100
	BED_HOST_ADDR=$BED_NET.2.200
	BED_SHARED=$SCRATCH/shared
	tsan_scan_start "$SCRATCH"
	# only this shell's exit takes the bed down, not a subshell's (lib.sh)
	_BED_SHELL=$BASHPID
	if [ "${BED_KEEP:-0}" = 1 ]; then
		trap '_bed_keep_note' EXIT
	else
		trap '_bed_exit' EXIT
	fi
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# The exit trap: the bed down, then a ThreadSanitizer report in any log of
# this run (every daemon of every node, the clients) fails the test.
_bed_exit() {
	[ "$BASHPID" = "$_BED_SHELL" ] || return 0
	bed_down
	tsan_scan "$SCRATCH" || exit 1
}

_bed_keep_note() {
	_bed_ns_exists "${BED_PREFIX}hub" || return 0
	bed_log "BED_KEEP=1: the bed stays up; tear it down with"
	bed_log "  $(dirname "${BASH_SOURCE[0]}")/bed_manual.sh --prefix $BED_PREFIX --subnet $BED_SUBNET --scratch $SCRATCH down"
}

bed_ns() { echo "${BED_PREFIX}n$1"; }
bed_ring_addr() { echo "$BED_NET.1.$1"; }
bed_stor_addr() {
	if [ "$BED_STOR" = rxe ]; then echo "$BED_NET.$((100 + $1)).2"; else echo "$BED_NET.2.$1"; fi
}
bed_portal() { echo "$(bed_stor_addr "$1"):$BED_PORT"; }
# the portal's scheme: iser over the rxe devices, tcp on the stor bridge
bed_scheme() { if [ "$BED_STOR" = rxe ]; then echo iser; else echo tcp; fi; }
bed_backend_url() { echo "iscsi://$BED_BACKEND_ADDR:$BED_PORT/$BED_BACKEND_IQN/1"; }
_bed_dir() { echo "$SCRATCH/n$1"; }

# Every namespace of this bed, hub last.
_bed_all_ns() {
	local k
	for ((k = 1; k <= BED_NODES; k++)); do bed_ns "$k"; done
	echo "${BED_PREFIX}be" "${BED_PREFIX}host" "${BED_PREFIX}hub"
}

_bed_ns_exists() { [ -e "/run/netns/$1" ]; }

bed_poll() {
	local limit=$1 what=$2
	shift 2
	local deadline=$((SECONDS + limit))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		if [ "$SECONDS" -ge "$deadline" ]; then
			bed_log "timeout after ${limit} s: $what"
			return 1
		fi
		sleep "$BED_POLL_S"
	done
}

# _bed_port_open NS ADDR PORT: something accepts TCP connections there
_bed_port_open() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	ip netns exec "$1" timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$2" "$3" 2>/dev/null
}

# ---------------------------------------------------------------- network

bed_up() {
	local k ns hub=${BED_PREFIX}hub
	for ns in $(_bed_all_ns); do
		if _bed_ns_exists "$ns"; then
			bed_log "namespaces of an earlier run with prefix $BED_PREFIX found: removing them"
			break
		fi
	done
	bed_down_quiet
	rm -rf "${SCRATCH:?}"/n[0-9] "$SCRATCH/be" "$BED_SHARED"
	mkdir -p "$BED_SHARED" "$SCRATCH/be/run" "$SCRATCH/be/shm" "$SCRATCH/be/pids"
	# this run's namespaces only: an earlier run's were checked when it went down,
	# and the kernel may have given their inode numbers to another bed since
	BED_NS_INODES=()
	for ns in $(_bed_all_ns); do
		ip netns add "$ns" || { bed_log "ip netns add $ns failed"; return 1; }
		ip -n "$ns" link set lo up || return 1
		BED_NS_INODES+=("$(stat -L -c %i "/run/netns/$ns")")
	done
	if ! ip -n "$hub" link add ring type bridge || ! ip -n "$hub" link set ring up ||
		! ip -n "$hub" link add stor type bridge || ! ip -n "$hub" link set stor up; then
		bed_log "cannot create the bridges in $hub"
		return 1
	fi
	for ((k = 1; k <= BED_NODES; k++)); do
		ns=$(bed_ns "$k")
		_bed_link "$ns" ring "r$k" "$(bed_ring_addr "$k")" || return 1
		# a killed node stands for a dead machine, whose kernel sends
		# nothing more: the sockets its processes left behind (a write to
		# the backend still unacknowledged, say) give up after one
		# retransmission instead of eight (_bed_wait_orphans)
		ip netns exec "$ns" sysctl -qw net.ipv4.tcp_orphan_retries=1 || return 1
		if [ "$BED_STOR" = rxe ]; then
			_bed_rxe_link "$k" || return 1
		else
			_bed_link "$ns" stor "s$k" "$(bed_stor_addr "$k")" || return 1
		fi
		mkdir -p "$(_bed_dir "$k")"/{etc,corosync-lib,run,shm,state,pids} || return 1
		bed_corosync_conf "$k" || return 1
		_bed_anchor "$k" || return 1
	done
	if [ "$BED_STOR" = rxe ]; then
		bed_log "up: $BED_NODES nodes, ring $BED_NET.1.0/24, storage over Soft-RoCE on $(bed_stor_addr 1)..., scratch $SCRATCH"
		return 0
	fi
	_bed_link "${BED_PREFIX}be" stor sbe "$BED_BACKEND_ADDR" || return 1
	_bed_link "${BED_PREFIX}host" stor shost "$BED_HOST_ADDR" || return 1
	_bed_anchor be || return 1
	bed_log "up: $BED_NODES nodes, ring $BED_NET.1.0/24, storage $BED_NET.2.0/24, scratch $SCRATCH"
}

# _bed_link NS IFNAME HUB-IFNAME ADDR: a veth from NS to the hub's bridge IFNAME
_bed_link() {
	local ns=$1 ifn=$2 hubif=$3 addr=$4 hub=${BED_PREFIX}hub
	if ! ip -n "$hub" link add "$hubif" type veth peer name "$ifn" netns "$ns" ||
		! ip -n "$hub" link set "$hubif" master "$ifn" ||
		! ip -n "$hub" link set "$hubif" up ||
		! ip -n "$ns" addr add "$addr/24" dev "$ifn" ||
		! ip -n "$ns" link set "$ifn" up; then
		bed_log "cannot link $ns:$ifn ($addr) to the $ifn bridge"
		return 1
	fi
}

# _bed_rxe_link K: node K's storage veth pair in the initial namespace with
# an rxe device on each end (BED_STOR=rxe)
_bed_rxe_link() {
	local k=$1 h=${BED_PREFIX}h$1 g=${BED_PREFIX}g$1 a
	a=$(bed_stor_addr "$k")
	if ! ip link add "$h" type veth peer name "$g"; then
		bed_log "cannot create the veth pair $h/$g"
		return 1
	fi
	# udev's "add" handling gives veth devices new MAC addresses: let it
	# finish before rxe takes them (they make the RoCE GIDs)
	udevadm settle --timeout=30 2>/dev/null
	if ! ip addr add "${a%.2}.1/24" dev "$h" || ! ip link set "$h" up ||
		! ip addr add "$a/24" dev "$g" || ! ip link set "$g" up ||
		! rdma link add "${BED_PREFIX}rh$k" type rxe netdev "$h" ||
		! rdma link add "${BED_PREFIX}rg$k" type rxe netdev "$g"; then
		bed_log "cannot set up node $k's storage link $h/$g ($a) with its rxe devices"
		return 1
	fi
}

# _bed_rxe_down: removes the rxe devices and veth pairs of BED_STOR=rxe
_bed_rxe_down() {
	local k
	[ "$BED_STOR" = rxe ] || return 0
	for ((k = 1; k <= BED_NODES; k++)); do
		rdma link delete "${BED_PREFIX}rh$k" 2>/dev/null
		rdma link delete "${BED_PREFIX}rg$k" 2>/dev/null
		ip link del "${BED_PREFIX}h$k" 2>/dev/null
	done
	return 0
}

# _bed_anchor K|be: the process that holds node K's (or the backend's)
# mount and UTS namespaces; everything of the node enters them. /run and
# /dev/shm start empty, as after a boot.
_bed_anchor() {
	local k=$1 dir ns name mounts
	if [ "$k" = be ]; then
		dir=$SCRATCH/be ns=${BED_PREFIX}be name=be
		mounts="mount --bind $dir/run /run && mount --bind $dir/shm /dev/shm"
	else
		dir=$(_bed_dir "$k") ns=$(bed_ns "$k") name=n$k
		mounts="mount --bind $dir/etc /etc/corosync && mount --bind $dir/corosync-lib /var/lib/corosync &&
			mount --bind $dir/run /run && mount --bind $dir/shm /dev/shm"
	fi
	find "$dir/run" "$dir/shm" -mindepth 1 -delete 2>/dev/null
	mkdir -p "$dir/run/isergw" "$dir/run/corosync" "$dir/run/lock" && chmod 0700 "$dir/run/isergw" || return 1
	local enter=(ip netns exec "$ns")
	# BED_STOR=rxe: the anchor stays in the initial network namespace
	# (isergwd's), the node's own is entered by name (_bed_enter)
	[ "$BED_STOR" = rxe ] && enter=()
	# shellcheck disable=SC2016 # $0 is expanded by the inner shell
	"${enter[@]}" unshare -m -u --propagation private bash -c "
		set -e
		$mounts
		hostname $name
		exec -a \"\$0\" sleep infinity" "isergw-bed-anchor-$ns" </dev/null >/dev/null 2>"$dir/anchor.err" &
	echo $! >"$dir/pids/anchor"
	disown $! # killed with the node; its status means nothing
	# ready when the node's /run is mounted inside it
	if ! bed_poll 10 "anchor of $name" _bed_anchor_ready "$!" "$dir"; then
		cat "$dir/anchor.err" >&2
		return 1
	fi
	readlink "/proc/$(cat "$dir/pids/anchor")/ns/mnt" >"$dir/mntns"
}

_bed_anchor_ready() {
	_bed_running "$1" || return 1
	# the anchor's /run is the node's run/ when isergw/ is found there
	# with the same inode
	[ "$(stat -c %i "/proc/$1/root/run/isergw" 2>/dev/null)" = "$(stat -c %i "$2/run/isergw")" ] &&
		[[ $(readlink "/proc/$1/exe") == */sleep ]]
}

bed_pid() {
	local f
	if [ "$1" = be ]; then f=$SCRATCH/be/pids/$2; else f=$(_bed_dir "$1")/pids/$2; fi
	[ -s "$f" ] && cat "$f"
}

# _bed_running PID: the process exists and is not a zombie (a process
# started by another invocation of the bed is not our child: we cannot
# reap it)
_bed_running() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

bed_alive() {
	local pid
	pid=$(bed_pid "$1" "$2") && _bed_running "$pid"
}

# _bed_anchor_pid K|be: the anchor's pid, when it runs
_bed_anchor_pid() {
	local pid
	if ! pid=$(bed_pid "$1" anchor) || ! _bed_running "$pid"; then
		bed_log "node $1 is down (no anchor process)"
		return 125
	fi
	echo "$pid"
}

# _bed_nsenter K|be PID [NAME]: the nsenter options that enter node K (the
# anchor PID's namespaces); NAME isergwd under BED_STOR=rxe: not the node's
# network namespace
# (-r: the anchor's root, which is not the mount namespace's own where the
# bed runs chrooted, as in the VM)
_bed_nsenter() {
	if [ "$BED_STOR" != rxe ]; then
		echo "-t $2 -r -m -n -u"
	elif [ "${3:-}" = isergwd ]; then
		echo "-t $2 -r -m -u"
	else
		echo "-t $2 -r -m -u --net=/run/netns/$(bed_ns "$1")"
	fi
}

_bed_enter() {
	local pid
	pid=$(_bed_anchor_pid "$1") || return 125
	# shellcheck disable=SC2046 # options
	nsenter $(_bed_nsenter "$1" "$pid") -- "${@:2}"
}

# _bed_spawn K|be NAME LOG CMD...: starts CMD in the background in node K
# (nsenter execs it: the pid recorded as NAME is CMD's own), appending its
# stdout and stderr to LOG after a banner line
_bed_spawn() {
	local k=$1 name=$2 logf=$3 pid dir
	shift 3
	pid=$(_bed_anchor_pid "$k") || return 125
	if [ "$k" = be ]; then dir=$SCRATCH/be; else dir=$(_bed_dir "$k"); fi
	printf '=== bed: %s started %s ===\n' "$name" "$(date '+%F %T.%N')" >>"$logf"
	# shellcheck disable=SC2046 # options
	nsenter $(_bed_nsenter "$k" "$pid" "$name") -- "$@" </dev/null >>"$logf" 2>&1 &
	echo $! >"$dir/pids/$name"
}

bed_exec() { _bed_enter "$@"; }
bed_backend_exec() { _bed_enter be "$@"; }
bed_host() { ip netns exec "${BED_PREFIX}host" "$@"; }

# _bed_ns_pids NS: the processes in network namespace NS; under
# BED_STOR=rxe, for a node's NS, also those in the node's mount namespace
_bed_ns_pids() {
	local ns=$1 k m
	ip netns pids "$ns" 2>/dev/null
	[ "$BED_STOR" = rxe ] || return 0
	case "$ns" in
	"${BED_PREFIX}n"[0-9]) k=${ns#"${BED_PREFIX}n"} ;;
	*) return 0 ;;
	esac
	m=$(cat "$(_bed_dir "$k")/mntns" 2>/dev/null) || return 0
	# one ls for every process (a readlink each costs seconds in the VM)
	# shellcheck disable=SC2012 # the link targets are what is read
	ls -l /proc/[0-9]*/ns/mnt 2>/dev/null |
		awk -v m="$m" '$NF == m { split($(NF - 2), f, "/"); print f[3] }'
}

# _bed_kill_ns NS: SIGKILL every process in the network namespace (see
# _bed_ns_pids), wait until none is left.
_bed_kill_ns() {
	local ns=$1 pids i
	_bed_ns_exists "$ns" || return 0
	for ((i = 0; i < 100; i++)); do
		pids=$(_bed_ns_pids "$ns")
		[ -z "$pids" ] && return 0
		# shellcheck disable=SC2086 # a list of pids
		kill -KILL $pids 2>/dev/null
		sleep 0.1
	done
	_BED_LEFT+="processes left in $ns: $(_bed_ns_pids "$ns" | tr '\n' ' ') "
	return 1
}

# _bed_kill_quiet DIR NS...: _bed_kill_ns each NS and reap the children whose
# pid files are in DIR, with bash's "Killed" reports of its jobs silenced (not
# news here)
_bed_kill_quiet() {
	local dir=$1 ns rc=0
	shift
	_BED_LEFT=
	{
		for ns in "$@"; do _bed_kill_ns "$ns" || rc=1; done
		_bed_reap "$dir"
	} 2>/dev/null
	[ -z "$_BED_LEFT" ] || bed_log "$_BED_LEFT"
	return "$rc"
}

# _bed_reap DIR...: reap the children whose pid files are in DIR/pids
# (they are dead by now)
_bed_reap() {
	local d f pid
	for d in "$@"; do
		for f in "$d"/pids/*; do
			[ -s "$f" ] || continue
			pid=$(cat "$f")
			_bed_running "$pid" || { wait "$pid"; } 2>/dev/null
		done
	done
	true
}

bed_down_quiet() {
	local ns rc=0
	_BED_LEFT=
	{
		for ns in $(_bed_all_ns); do _bed_kill_ns "$ns" || rc=1; done
		_bed_reap "$SCRATCH"/n[0-9] "$SCRATCH/be"
	} 2>/dev/null
	[ -z "$_BED_LEFT" ] || bed_log "$_BED_LEFT"
	for ns in $(_bed_all_ns); do
		if _bed_ns_exists "$ns"; then
			ip netns del "$ns" || rc=1
		fi
	done
	_bed_rxe_down
	return "$rc"
}

bed_down() {
	[[ -n $BED_PREFIX && -n ${BED_NET:-} ]] || return 0
	local ns rc any=0
	for ns in $(_bed_all_ns); do _bed_ns_exists "$ns" && any=1; done
	[ "$any" -eq 1 ] || return 0
	bed_down_quiet
	rc=$?
	[ "$rc" -eq 0 ] && bed_log "down: every process of the bed killed, namespaces deleted"
	return "$rc"
}

# What bed_down must leave: no namespace of ours, no process in one of the
# namespaces this run created (by inode), no mount of ours in this mount
# namespace, no process naming our scratch directory or anchors.
bed_check_clean() {
	local ns ino p left=0 line others=()
	for ns in $(_bed_all_ns); do
		if _bed_ns_exists "$ns"; then bed_log "namespace $ns still exists"; left=1; fi
	done
	# our namespaces are deleted: an inode of ours that names a namespace in
	# /run/netns now is another bed's (ctest -j), which the kernel gave it again
	for ns in /run/netns/*; do
		[ -e "$ns" ] && others+=("$(stat -L -c %i "$ns" 2>/dev/null)")
	done
	for p in /proc/[0-9]*; do
		ino=$(stat -L -c %i "$p/ns/net" 2>/dev/null) || continue
		[[ " ${others[*]} " == *" $ino "* ]] && continue
		for ns in "${BED_NS_INODES[@]}"; do
			if [ "$ino" = "$ns" ]; then
				bed_log "process ${p#/proc/} still in one of the bed's namespaces: $(tr '\0' ' ' <"$p/cmdline")"
				left=1
			fi
		done
		line=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
		case "$line" in
		*"isergw-bed-anchor-$BED_PREFIX"* | *"$SCRATCH/"*)
			bed_log "process ${p#/proc/} left: $line"
			left=1
			;;
		esac
	done
	if [ "$BED_STOR" = rxe ] && ip -o link show | grep -E ": ${BED_PREFIX}[hg][0-9]+[@:]" >&2; then
		bed_log "storage links of the bed are left (above)"
		left=1
	fi
	if grep -E -e "$SCRATCH/|/run/netns/${BED_PREFIX}(n[0-9]|be|host|hub) " /proc/self/mountinfo >&2; then
		bed_log "mounts of the bed are left (above)"
		left=1
	fi
	return "$left"
}

# ---------------------------------------------------------------- corosync

bed_corosync_conf() {
	local k=$1 j dir
	dir=$(_bed_dir "$k")
	{
		echo "totem {"
		echo "	version: 2"
		echo "	cluster_name: $BED_CLUSTER_NAME"
		echo "	transport: knet"
		echo "	ip_version: ipv4"
		echo "	token: $BED_TOKEN"
		[ -z "$BED_TOKEN_COEFFICIENT" ] || echo "	token_coefficient: $BED_TOKEN_COEFFICIENT"
		echo "	crypto_cipher: none"
		echo "	crypto_hash: none"
		echo "}"
		echo "nodelist {"
		for ((j = 1; j <= BED_NODES; j++)); do
			echo "	node {"
			echo "		name: n$j"
			echo "		nodeid: $j"
			echo "		ring0_addr: $(bed_ring_addr "$j")"
			echo "	}"
		done
		echo "}"
		echo "quorum {"
		echo "	provider: corosync_votequorum"
		[ "$BED_TWO_NODE" = 1 ] && echo "	two_node: 1"
		echo "}"
		echo "logging {"
		echo "	to_logfile: yes"
		echo "	logfile: $dir/corosync.log"
		echo "	to_stderr: no"
		echo "	to_syslog: no"
		echo "	timestamp: on"
		echo "}"
	} >"$dir/etc/corosync.conf"
}

bed_start_corosync() {
	local k=$1 dir pid
	dir=$(_bed_dir "$k")
	if bed_alive "$k" corosync; then
		bed_log "corosync already runs on node $k"
		return 1
	fi
	_bed_spawn "$k" corosync "$dir/corosync.out" corosync -f || return 1
	_bed_service "$k" corosync add
	# up when its IPC answers
	if ! bed_poll 30 "corosync on node $k answering" bed_quorum "$k"; then
		tail -n 20 "$dir/corosync.out" "$dir/corosync.log" >&2
		return 1
	fi
}

# _bed_stop K NAME [LIMIT]: SIGTERM, wait; 0 when it exited 0
_bed_stop() {
	local k=$1 name=$2 limit=${3:-30} pid i rc
	pid=$(bed_pid "$k" "$name") || { bed_log "no $name on node $k"; return 1; }
	[ "$k" = be ] || _bed_service "$k" "$name" del
	if ! _bed_running "$pid"; then
		wait "$pid" 2>/dev/null
		bed_log "$name on node $k (pid $pid) had already exited (status $?)"
		return 1
	fi
	kill -TERM "$pid"
	for ((i = 0; i < limit * 10; i++)); do
		_bed_running "$pid" || break
		sleep 0.1
	done
	if _bed_running "$pid"; then
		bed_log "$name on node $k (pid $pid) still running ${limit} s after SIGTERM: killing it"
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		return 1
	fi
	wait "$pid" 2>/dev/null
	rc=$?
	if [ "$rc" -ne 0 ]; then
		bed_log "$name on node $k (pid $pid) exited with status $rc after SIGTERM"
		return 1
	fi
}

bed_stop_corosync() { bed_mark "corosync stopped on node $1"; _bed_stop "$1" corosync; }

bed_totem() {
	local t c
	t=$(bed_exec "$1" timeout 10 corosync-cmapctl -g runtime.config.totem.token) || return 1
	c=$(bed_exec "$1" timeout 10 corosync-cmapctl -g runtime.config.totem.consensus) || return 1
	echo "${t##* } ${c##* }"
}

bed_quorum() {
	local out q n
	# a frozen corosync would hold the tool for ever
	out=$(bed_exec "$1" timeout 10 corosync-quorumtool -s 2>/dev/null)
	q=$(awk -F': *' '$1 == "Quorate" { print $2 }' <<<"$out")
	n=$(awk -F': *' '$1 == "Nodes" { print $2 }' <<<"$out")
	[ -n "$q" ] && [ -n "$n" ] || return 1
	echo "$q $n"
}

# _bed_quorum_is WANT-QUORATE MEMBERS K...: asks the nodes at once (one
# corosync-quorumtool takes 0.1-0.4 s here)
_bed_quorum_is() {
	local want=$1 m=$2 k pids=()
	shift 2
	for k in "$@"; do
		bed_quorum "$k" >"$(_bed_dir "$k")/quorum" 2>/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
	for k in "$@"; do
		[ "$(cat "$(_bed_dir "$k")/quorum")" = "$want $m" ] || return 1
	done
}

_bed_wait_report() {
	local what=$1
	if [ -n "$BED_T0" ]; then
		BED_ELAPSED=$(bed_secs_since "$BED_T0")
		bed_log "$what after $BED_EVENT: $BED_ELAPSED s"
	fi
}

bed_wait_quorum() {
	local m=$1 k
	shift
	if ! bed_poll "$BED_WAIT_LIMIT" "node(s) $* quorate with $m member(s)" _bed_quorum_is Yes "$m" "$@"; then
		for k in "$@"; do bed_log "node $k: $(bed_quorum "$k" || echo 'no answer')"; done
		return 1
	fi
	_bed_wait_report "node(s) $* quorate with $m member(s)"
}

bed_wait_inquorate() {
	local m=$1 k
	shift
	if ! bed_poll "$BED_WAIT_LIMIT" "node(s) $* inquorate with $m member(s)" _bed_quorum_is No "$m" "$@"; then
		for k in "$@"; do bed_log "node $k: $(bed_quorum "$k" || echo 'no answer')"; done
		return 1
	fi
	_bed_wait_report "node(s) $* inquorate with $m member(s)"
}

# _bed_service K NAME add|del: what bed_restart_node starts again
_bed_service() {
	local f
	f=$(_bed_dir "$1")/services
	touch "$f"
	grep -vx -- "$2" "$f" >"$f.new"
	[ "$3" = add ] && echo "$2" >>"$f.new"
	mv "$f.new" "$f"
}

# ---------------------------------------------------------------- daemons

_bed_has_managed() { "$BED_ISERGWD" --help 2>&1 | grep -q -- '--managed'; }

bed_start_isergwd() {
	local k=$1 dir args
	shift
	dir=$(_bed_dir "$k")
	if bed_alive "$k" isergwd; then
		bed_log "isergwd already runs on node $k"
		return 1
	fi
	: >"$dir/isergwd.args"
	[ $# -eq 0 ] || printf '%s\n' "$@" >"$dir/isergwd.args"
	args=(--ctl-socket /run/isergw/isergwd.sock --state-dir "$dir/state" --log-level info)
	if _bed_has_managed; then
		args=(--managed "${args[@]}")
	else
		# isergwd without --managed: a minimal configuration (one portal,
		# one empty target) until ApplyConfig replaces it
		cat >"$dir/isergwd-bootstrap.json" <<-EOF
		{
		  "portals": [ { "url": "tcp://$(bed_portal "$k")", "rel_port_id": $k, "tpg_id": $k } ],
		  "targets": [ { "iqn": "iqn.2026-11.org.isergw:bed-n$k" } ]
		}
		EOF
		args=(--config "$dir/isergwd-bootstrap.json" "${args[@]}")
	fi
	_bed_spawn "$k" isergwd "$dir/isergwd.log" "$BED_ISERGWD" "${args[@]}" "$@" || return 1
	_bed_service "$k" isergwd add
	if ! bed_poll 30 "isergwd on node $k answering status" _bed_isergwd_ready "$k"; then
		tail -n 20 "$dir/isergwd.log" >&2
		return 1
	fi
}

_bed_isergwd_ready() { bed_alive "$1" isergwd && bed_isergwctl "$1" status; }

bed_isergwctl() {
	local k=$1
	shift
	bed_exec "$k" "$BED_ISERGWCTL" -s /run/isergw/isergwd.sock "$@"
}

bed_stop_isergwd() { _bed_stop "$1" isergwd; }

# isergwctl in node K with its default sockets (the node's own /run/isergw)
bed_cli() {
	local k=$1
	shift
	bed_exec "$k" "$BED_ISERGWCTL" "$@"
}

bed_start_ha() {
	local k=$1 dir wait=1
	shift
	if [ "${1:-}" = --no-wait ]; then
		wait=0
		shift
	fi
	dir=$(_bed_dir "$k")
	[[ -n $BED_HA && -x $BED_HA ]] || { bed_log "no isergw-ha binary (--ha PATH)"; return 1; }
	if bed_alive "$k" ha; then
		bed_log "isergw-ha already runs on node $k"
		return 1
	fi
	: >"$dir/ha.args"
	[ $# -eq 0 ] || printf '%s\n' "$@" >"$dir/ha.args"
	_bed_spawn "$k" ha "$dir/ha.log" "$BED_HA" --state-dir "$dir/state" --socket /run/isergw/ha.sock \
		--isergwd-socket /run/isergw/isergwd.sock --log-level info "$@" || return 1
	_bed_service "$k" ha add
	[ "$wait" = 1 ] || return 0
	if ! bed_poll 30 "isergw-ha on node $k listening" _bed_ha_ready "$k" "$dir"; then
		tail -n 20 "$dir/ha.log" >&2
		return 1
	fi
}

_bed_ha_ready() { bed_alive "$1" ha && [ -S "$2/run/isergw/ha.sock" ]; }

bed_stop_ha() { _bed_stop "$1" ha; }

# ---------------------------------------------------------------- failures

bed_kill_node() {
	local k=$1
	bed_mark "node $k killed"
	_bed_kill_quiet "$(_bed_dir "$k")" "$(bed_ns "$k")" || return 1
	bed_log "node $k killed (SIGKILL to every process)"
	_bed_wait_orphans "$k"
}

# _bed_orphans K: the TCP sockets of node K's network namespace that may
# still send (every state but TIME_WAIT 06, CLOSE 07 and LISTEN 0A), one
# line each; none: fails
_bed_orphans() {
	ip netns exec "$(bed_ns "$1")" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk '$1 ~ /^[0-9]+:$/ && $4 != "06" && $4 != "07" && $4 != "0A" { print; n++ } END { exit !n }'
}

# _bed_wait_orphans K: once node K's processes are dead, waits (up to 10 s)
# until its kernel holds no socket that may still send. A real machine that
# dies sends nothing after its death; here the kernel lives on, and a socket
# its killed isergwd left with an unacknowledged write to the backend would
# retransmit it once the node's links come back: a write the host was told
# had failed, landing after the survivors took over (a zombie write, which
# is the backend fencing's business for nodes that only look dead, not a
# dead node's). With the links cut (bed_partition) such a socket gives up
# after one retransmission (tcp_orphan_retries 1, set by bed_up): about a
# second.
_bed_wait_orphans() {
	local k=$1 t0
	_bed_orphans "$k" >/dev/null || return 0
	t0=$(bed_now_us)
	if ! BED_POLL_S=0.05 bed_poll 10 "node $k's kernel without live sockets" \
		eval "! _bed_orphans $k >/dev/null"; then
		bed_log "node $k: sockets still open 10 s after its death:"
		_bed_orphans "$k" >&2
		return 0
	fi
	bed_log "node $k: its last sockets gone $(( ($(bed_now_us) - t0) / 1000 )) ms after its death"
}

# bed_kill K NAME: SIGKILL to one daemon of node K (corosync, isergwd, ha);
# bed_restart_node starts it again, as the other daemons
bed_kill() {
	local k=$1 name=$2 pid
	pid=$(bed_pid "$k" "$name") || { bed_log "no $name on node $k"; return 1; }
	bed_mark "$name killed on node $k"
	{ kill -KILL "$pid" && wait "$pid"; } 2>/dev/null
	bed_log "$name on node $k (pid $pid) killed"
}

# bed_freeze K / bed_thaw K: SIGSTOP / SIGCONT every process of node K (a
# hung node: its sockets stay open, nothing answers)
bed_freeze() {
	local pids
	pids=$(_bed_ns_pids "$(bed_ns "$1")")
	# shellcheck disable=SC2086 # a list of pids
	[ -n "$pids" ] && kill -STOP $pids || return 1
	bed_mark "node $1 frozen"
	bed_log "node $1 frozen (SIGSTOP to every process)"
}

bed_thaw() {
	local pids
	pids=$(_bed_ns_pids "$(bed_ns "$1")")
	# shellcheck disable=SC2086 # a list of pids
	[ -n "$pids" ] && kill -CONT $pids || return 1
	bed_mark "node $1 thawed"
	bed_log "node $1 thawed"
}

bed_restart_node() {
	local k=$1 dir s a
	dir=$(_bed_dir "$k")
	local services=()
	mapfile -t services <"$dir/services"
	_bed_kill_quiet "$dir" "$(bed_ns "$k")" || return 1
	bed_mark "node $k restarted"
	_bed_anchor "$k" || return 1
	: >"$dir/services"
	bed_start_corosync "$k" || return 1
	for s in isergwd ha; do
		printf '%s\n' "${services[@]}" | grep -qx "$s" || continue
		a=()
		[ -s "$dir/$s.args" ] && mapfile -t a <"$dir/$s.args"
		"bed_start_$s" "$k" "${a[@]}" || return 1
	done
	bed_log "node $k restarted: $(paste -sd' ' "$dir/services")"
}

# _bed_nft K TABLE RULES: (re)loads table inet TABLE with an input and an
# output chain holding RULES-in / RULES-out
_bed_nft() {
	local k=$1 table=$2 rin=$3 rout=$4
	ip netns exec "$(bed_ns "$k")" nft -f - <<-EOF
	table inet $table
	delete table inet $table
	table inet $table {
		chain input { type filter hook input priority -10; policy accept; $rin; }
		chain output { type filter hook output priority -10; policy accept; $rout; }
	}
	EOF
}

_bed_nft_del() {
	ip netns exec "$(bed_ns "$1")" nft delete table inet "$2"
}

_bed_if() {
	if [ "${1:-ring}" = stor ] && [ "$BED_STOR" = rxe ]; then
		bed_log "BED_STOR=rxe: the storage links are in the initial namespace, not partitioned here"
		return 1
	fi
	case "${1:-ring}" in
	ring | stor) echo "${1:-ring}" ;;
	*) bed_log "network '$1': ring or stor"; return 1 ;;
	esac
}

bed_partition() {
	local k=$1 ifn
	ifn=$(_bed_if "${2:-ring}") || return 1
	_bed_nft "$k" "bed_part_$ifn" "iifname \"$ifn\" drop" "oifname \"$ifn\" drop" || return 1
	bed_mark "node $k partitioned ($ifn)"
	bed_log "node $k: every packet on $ifn dropped"
}

bed_heal() {
	local k=$1 ifn
	ifn=$(_bed_if "${2:-ring}") || return 1
	_bed_nft_del "$k" "bed_part_$ifn" || return 1
	bed_mark "node $k healed ($ifn)"
	bed_log "node $k: $ifn healed"
}

bed_cut() {
	local k=$1 j=$2 a
	a=$(bed_ring_addr "$j")
	_bed_nft "$k" "bed_cut_$j" "ip saddr $a drop" "ip daddr $a drop" || return 1
	bed_mark "ring cut between nodes $k and $j"
	bed_log "ring packets between nodes $k and $j dropped (on node $k)"
}

bed_uncut() {
	_bed_nft_del "$1" "bed_cut_$2" || return 1
	bed_mark "ring between nodes $1 and $2 restored"
	bed_log "ring between nodes $1 and $2 restored"
}

# ---------------------------------------------------------------- backend

bed_backend_start() {
	local kind=${1:-tgt} dir=$SCRATCH/be img
	img=$dir/backend.img
	[ -e "$img" ] || truncate -s 256M "$img" || return 1
	if [ "$kind" = tgt ]; then
		_bed_spawn be backend "$dir/tgtd.log" tgtd -f --iscsi "portal=$BED_BACKEND_ADDR:$BED_PORT" ||
			return 1
		echo tgt >"$dir/kind"
		bed_poll 30 "tgtd listening on $BED_BACKEND_ADDR" _bed_backend_listening || return 1
		local ta=(tgtadm --lld iscsi)
		if ! bed_backend_exec "${ta[@]}" --mode target --op new --tid 1 -T "$BED_BACKEND_IQN" ||
			! bed_backend_exec "${ta[@]}" --mode logicalunit --op new --tid 1 --lun 1 -b "$img" ||
			! bed_backend_exec "${ta[@]}" --mode target --op bind --tid 1 -I ALL; then
			bed_log "tgtadm failed (log $dir/tgtd.log)"
			return 1
		fi
	elif [ "$kind" = isergw ]; then
		mkdir -p "$dir/state"
		cat >"$dir/backend.json" <<-EOF
		{
		  "log_level": "info",
		  "state_dir": "$dir/state",
		  "ctl_socket": "/run/isergw/isergwd.sock",
		  "portals": [ { "url": "tcp://$BED_BACKEND_ADDR:$BED_PORT" } ],
		  "targets": [ { "iqn": "$BED_BACKEND_IQN", "luns": [ { "lun": 1, "path": "$img" } ] } ]
		}
		EOF
		_bed_spawn be backend "$dir/isergwd.log" "$BED_ISERGWD" --config "$dir/backend.json" || return 1
		echo isergw >"$dir/kind"
		bed_poll 30 "backend isergwd listening on $BED_BACKEND_ADDR" _bed_backend_listening || return 1
	else
		bed_log "backend kind '$kind': tgt or isergw"
		return 1
	fi
	bed_log "backend ($kind) up: $(bed_backend_url)"
}

_bed_backend_listening() {
	bed_alive be backend && _bed_port_open "${BED_PREFIX}host" "$BED_BACKEND_ADDR" "$BED_PORT"
}

bed_backend_stop() {
	local pid
	pid=$(bed_pid be backend) || return 1
	if [ "$(cat "$SCRATCH/be/kind")" = tgt ]; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 0
	fi
	_bed_stop be backend
}

# ---------------------------------------------------------------- logs

# bed_logfile K NAME: node K's log of corosync (its log file), corosync.out,
# isergwd or ha; K "be": the backend's (tgtd or isergwd)
bed_logfile() {
	local dir
	if [ "$1" = be ]; then dir=$SCRATCH/be; else dir=$(_bed_dir "$1"); fi
	case "$2" in
	corosync) echo "$dir/corosync.log" ;;
	corosync.out) echo "$dir/corosync.out" ;;
	isergwd) echo "$dir/isergwd.log" ;;
	ha) echo "$dir/ha.log" ;;
	tgtd) echo "$dir/tgtd.log" ;;
	*) bed_log "no log named '$2'"; return 1 ;;
	esac
}

# bed_log_lines K NAME: how many lines the log has now (a position for
# bed_wait_log)
bed_log_lines() {
	local f
	f=$(bed_logfile "$1" "$2") || return 1
	if [ -f "$f" ]; then wc -l <"$f"; else echo 0; fi
}

# bed_wait_log K NAME ERE [AFTER-LINE [LIMIT]]: waits until a line after line
# AFTER-LINE (default 0) of the log matches ERE; prints that line
bed_wait_log() {
	local k=$1 name=$2 ere=$3 after=${4:-0} limit=${5:-$BED_WAIT_LIMIT} f
	f=$(bed_logfile "$k" "$name") || return 1
	if ! bed_poll "$limit" "/$ere/ in $f" _bed_log_has "$f" "$after" "$ere"; then
		return 1
	fi
	_bed_log_has "$f" "$after" "$ere"
	_bed_wait_report "/$ere/ in node $k's $name log"
}

_bed_log_has() {
	[ -f "$1" ] && tail -n +"$(($2 + 1))" "$1" | grep -E -m1 -- "$3"
}

# ---------------------------------------------------------------- clients

bed_probe() {
	local k=$1 lun=$2
	shift 2
	[ -x "$BED_PROBE" ] || { bed_log "no cluster_probe (--probe PATH)"; return 1; }
	bed_host "$BED_PROBE" --initiator iqn.2026-11.org.isergw:host "$@" \
		"iscsi://$(bed_portal "$k")/$BED_HA_IQN/$lun"
}

# ---------------------------------------------------------------- cluster configuration

bed_cluster_config() {
	local file=$1 k nodes="" dgs="" lun0 lun0_size=""
	# LUN 0 is forwarded to the backend; BED_STOR=rxe has none: a file
	lun0=$(bed_backend_url)
	[ "$BED_STOR" = rxe ] && lun0=$BED_SHARED/lun0.img lun0_size=', "size": "64M"'

	for ((k = 1; k <= BED_NODES; k++)); do
		nodes+="${nodes:+,
    }{ \"name\": \"n$k\", \"tpg_id\": $k,
      \"portals\": [ { \"url\": \"$(bed_scheme)://$(bed_portal "$k")\", \"rel_port_id\": $k } ] }"
	done
	for k in 1 2 3; do
		dgs+="${dgs:+,
    }{ \"name\": \"dg$k\", \"preferred_owner\": \"n$((k <= BED_NODES ? k : 1))\", \"failback\": \"immediate\" }"
	done
	cat >"$file" <<-EOF
	{
	  "nodes": [
	    $nodes
	  ],
	  "device_groups": [
	    $dgs
	  ],
	  "targets": [
	    { "iqn": "$BED_HA_IQN",
	      "luns": [
	        { "lun": 0, "path": "$lun0"$lun0_size, "device_group": "dg1" },
	        { "lun": 1, "path": "$BED_SHARED/lun1.img", "size": "64M", "device_group": "dg2" },
	        { "lun": 2, "path": "$BED_SHARED/lun2.img", "size": "64M", "device_group": "dg3" }
	      ] }
	  ],
	  "gateway": { "log_level": "info"${BED_GATEWAY_EXTRA:-} }
	}
	EOF
	jq -e . "$file" >/dev/null || { bed_log "bed_cluster_config: $file is not valid JSON"; return 1; }
}
