#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# fuzz_pdu's or fuzz_login's inputs from outside: a real isergwd (best the
# sanitizer build's, two reactors, the TCP datamover, files as LUNs) takes every
# input of the corpora given over real sockets (live_pdu.py, live_login.py), and
# after each one must still answer a new login. At the end it must stop cleanly
# on SIGTERM (exit 0) with no sanitizer report and no err line in its log, and
# every line of that log one of its own (nothing an initiator sent starts one).
#
#   tests/fuzz/live.sh --daemon PATH [--kind pdu|login] [--scratch DIR] [--addr A]
#                      [--port P] [--seconds N] [--limit N] [CORPUS...]
#
# --kind: whose inputs (default pdu); the target's configuration is that of the
# in-process target (tests/common/fake_gw.c; fuzz_login.c's first one).
# CORPUS: directories or files of its inputs (default: the committed seeds
# tests/fuzz/corpus/fuzz_KIND, and the regression inputs tests/fuzz/regress/fuzz_KIND).
# The corpus a campaign grew is DIR/fuzz-work/fuzz_KIND/corpus of its build tree.
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
KIND=pdu
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
corpora=()
while [ $# -gt 0 ]; do
	case "$1" in
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--limit) LIMIT=$2; shift 2 ;;
	--kind) KIND=$2; shift 2 ;;
	-h|--help) sed -n '4,19p' "$0"; exit 0 ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) corpora+=("$1"); shift ;;
	esac
done
[ -x "$ISERGWD" ] || die "--daemon PATH (isergwd) required"
case "$KIND" in pdu|login) ;; *) die "--kind pdu or login" ;; esac
[ -n "$SCRATCH" ] || SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/isergw-live.XXXXXX")
case "$SECS$LIMIT" in *[!0-9.]*) die "--seconds and --limit want numbers" ;; esac
command -v python3 >/dev/null || die "python3 is needed"
if [ ${#corpora[@]} -eq 0 ]; then
	corpora=("$here/corpus/fuzz_$KIND")
	[ -d "$here/regress/fuzz_$KIND" ] && corpora+=("$here/regress/fuzz_$KIND")
fi
for c in "${corpora[@]}"; do [ -e "$c" ] || die "no corpus $c"; done
mkdir -p "$SCRATCH"
rm -f "$SCRATCH"/lun*.img "$SCRATCH"/isergwd.log
CFG=$SCRATCH/isergwd.json
if [ "$KIND" = pdu ]; then
	# the in-process target's gateway (tests/common/fake_gw.c), on files
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
else
	# fuzz_login.c's first configuration, with one TCP portal and a LUN each
	cat >"$CFG" <<JSON
{
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "nop_interval_s": 0,
  "reactors": 2,
  "portals": [ { "url": "tcp://$ADDR:$PORT", "tpgt": 7, "rel_port_id": 1 } ],
  "targets": [
    { "iqn": "iqn.2026-01.org.isergw:chap", "alias": "chap disk",
      "chap": { "user": "iuser", "secret": "initiator-secret" },
      "mutual_chap": { "user": "tuser", "secret": "target-secret-2" },
      "luns": [ { "lun": 0, "path": "$SCRATCH/lun0.img", "size": "64K" } ] },
    { "iqn": "iqn.2026-01.org.isergw:open", "initial_r2t": true,
      "immediate_data": false, "max_recv_dsl": 8192, "max_burst": 65536,
      "first_burst": 65536, "max_outstanding_r2t": 4,
      "luns": [ { "lun": 0, "path": "$SCRATCH/lun1.img", "size": "64K" } ] },
    { "iqn": "iqn.2026-01.org.isergw:acl",
      "acls": [ { "initiator": "iqn.1994-05.com.redhat:client2",
                  "chap": { "user": "acluser", "secret": "acl-secret-1234" } },
                { "initiator": "iqn.1994-05.com.redhat:client1" } ],
      "luns": [ { "lun": 0, "path": "$SCRATCH/lun2.img", "size": "64K" } ] } ]
}
JSON
fi
chmod 600 "$CFG"
mkdir -p "$SCRATCH/state"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
config_start isergwd "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
fail=0
python3 "$here/live_$KIND.py" --addr "$ADDR" --port "$PORT" --pid "$T_PID" --seconds "$SECS" \
	--limit "$LIMIT" "${corpora[@]}" || fail=1
if ! target_stop "$T_PID" "$T_LOG"; then
	log "FAILED: isergwd did not stop cleanly on SIGTERM"
	fail=1
fi
if sanitizer_report "$T_LOG"; then
	log "FAILED: a sanitizer report in $T_LOG"
	fail=1
fi
# every line one of the log's own: what an initiator sent never starts a line
stray=$(grep -cavE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z (err|warn|notice|info|debug) +[a-z0-9-]+: ' "$T_LOG")
if [ "$stray" -gt 0 ]; then
	log "FAILED: $stray lines of $T_LOG are not log lines of their own (a peer's newline?):"
	grep -navE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z (err|warn|notice|info|debug) +[a-z0-9-]+: ' "$T_LOG" | head -n 3 >&2
	fail=1
fi
errs=$(grep -cE '^[^ ]+ err ' "$T_LOG")
if [ "$errs" -gt 0 ]; then
	log "FAILED: $errs err lines in $T_LOG:"
	grep -m5 -E '^[^ ]+ err ' "$T_LOG" >&2
	fail=1
fi
log "isergwd's log: $(wc -l <"$T_LOG") lines, by level: $(awk '{print $2}' "$T_LOG" | sort | uniq -c | tr -s ' \n' ' ')"
[ "$fail" = 0 ] && log PASS || log "FAILED (log in $T_LOG)"
exit "$fail"
