#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Data-In from a pipe (dm/tcp.c): its edge cases against the LUN's file.
#
#   datain_pipe.sh --client PATH [--daemon PATH] [--scratch DIR]
#                  [--addr A] [--port P] [--cases a,b,...]
#
# isergwd with one reactor (both sessions of the slow-reader case on it) and
# tcp_splice on (the default) on a 16 MiB random-filled file; the client (datain_pipe.c) reads with digests
# off, header digests only, and both; with a slow reader; with connections
# closed mid-transfer; and with the file cut below the LUN's size, comparing
# every byte with the file. The daemon must then stop cleanly (no sanitizer
# report).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"

declare -A opt=([client]="" [addr]=127.0.0.203 [port]=14321 [cases]="")
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
for ((; $# > 0; )); do
	case "$1" in -h | --help) sed -n '3,14p' "$0"; exit 0 ;; esac
	k=${1#--}
	if [ -z "${opt[$k]+set}" ] || [ $# -lt 2 ]; then die "unknown option $1"; fi
	opt[$k]=$2
	shift 2
done
[ -x "${opt[client]:-/nonexistent}" ] || die "--client PATH (the datain_pipe program) is required"
if [ "$TARGET_KIND" != isergw ]; then
	log "isergwd only: the pipe is its TCP datamover's"
	exit 77
fi

IQN=iqn.2026-11.org.isergw:datain-pipe
DISK=$SCRATCH/datain-pipe.img
head -c 16M /dev/urandom >"$DISK" || die "cannot create $DISK"
target_start datain-pipe "$IQN" "$DISK" 16M "${opt[port]}" "${opt[addr]}" \
	-- --reactors 1 || die "isergwd did not start"
pid=$T_PID
args=(--addr "${opt[addr]}" --port "${opt[port]}" --target "$IQN" --file "$DISK")
[ -z "${opt[cases]}" ] || args+=(--cases "${opt[cases]}")
timeout --kill-after=5 120 "${opt[client]}" "${args[@]}" </dev/null
rc=$?
target_alive "$pid" || { log "isergwd died; see $T_LOG"; rc=1; }
target_stop "$pid" "$T_LOG" || rc=1
exit "$rc"
