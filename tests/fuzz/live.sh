#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# fuzz_pdu's inputs from outside: a real isergwd (best the sanitizer build's,
# two reactors, the TCP datamover, files as LUNs) takes every input of the
# corpora given over real sockets (live_pdu.py), and after each one must still
# answer a new login. At the end it must stop cleanly on SIGTERM (exit 0) with
# no sanitizer report and no err line in its log.
#
#   tests/fuzz/live.sh --daemon PATH [--scratch DIR] [--addr A] [--port P]
#                      [--seconds N] [--limit N] [CORPUS...]
#
# CORPUS: directories or files of fuzz_pdu inputs (default: the committed seeds
# tests/fuzz/corpus/fuzz_pdu, and the regression inputs tests/fuzz/regress/fuzz_pdu).
# The corpus a campaign grew is DIR/fuzz-work/fuzz_pdu/corpus of its build tree.
# Prints live_pdu.py's summary, then "PASS" or "FAILED"; exit 0 or 1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/../integration/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/../integration/config_lib.sh"

ADDR=127.0.0.175
PORT=13690
SECS=0
LIMIT=0
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
corpora=()
while [ $# -gt 0 ]; do
	case "$1" in
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--limit) LIMIT=$2; shift 2 ;;
	-h|--help) sed -n '4,16p' "$0"; exit 0 ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) corpora+=("$1"); shift ;;
	esac
done
[ -x "$ISERGWD" ] || die "--daemon PATH (isergwd) required"
[ -n "$SCRATCH" ] || SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/isergw-live.XXXXXX")
case "$SECS$LIMIT" in *[!0-9.]*) die "--seconds and --limit want numbers" ;; esac
command -v python3 >/dev/null || die "python3 is needed"
if [ ${#corpora[@]} -eq 0 ]; then
	corpora=("$here/corpus/fuzz_pdu")
	[ -d "$here/regress/fuzz_pdu" ] && corpora+=("$here/regress/fuzz_pdu")
fi
for c in "${corpora[@]}"; do [ -e "$c" ] || die "no corpus $c"; done
mkdir -p "$SCRATCH"
rm -f "$SCRATCH"/lun*.img "$SCRATCH"/isergwd.log
# the in-process target's gateway (tests/common/fake_gw.c), on files
CFG=$SCRATCH/isergwd.json
cat >"$CFG" <<JSON
{
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "nop_interval_s": 0,
  "reactors": 2,
  "portals": [ { "url": "tcp://$ADDR:$PORT", "rel_port_id": 1 } ],
  "targets": [ { "iqn": "iqn.2026-11.org.isergw:fuzz", "luns": [
    { "lun": 0, "path": "$SCRATCH/lun0.img", "size": "128K" },
    { "lun": 1, "path": "$SCRATCH/lun1.img", "size": "256K", "block_size": 4096,
      "write_cache": false, "max_transfer": "64K" } ] } ]
}
JSON
chmod 600 "$CFG"
mkdir -p "$SCRATCH/state"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
config_start isergwd "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
fail=0
python3 "$here/live_pdu.py" --addr "$ADDR" --port "$PORT" --pid "$T_PID" --seconds "$SECS" \
	--limit "$LIMIT" "${corpora[@]}" || fail=1
if ! target_stop "$T_PID" "$T_LOG"; then
	log "FAILED: isergwd did not stop cleanly on SIGTERM"
	fail=1
fi
if sanitizer_report "$T_LOG"; then
	log "FAILED: a sanitizer report in $T_LOG"
	fail=1
fi
errs=$(grep -c ' err ' "$T_LOG")
if [ "$errs" -gt 0 ]; then
	log "FAILED: $errs err lines in $T_LOG:"
	grep -m5 ' err ' "$T_LOG" >&2
	fail=1
fi
log "isergwd's log: $(wc -l <"$T_LOG") lines, by level: $(awk '{print $2}' "$T_LOG" | sort | uniq -c | tr -s ' \n' ' ')"
[ "$fail" = 0 ] && log PASS || log "FAILED (log in $T_LOG)"
exit "$fail"
