#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The inputs of fuzz_pdu, fuzz_login, fuzz_rest or fuzz_ctl from outside:
#   pdu, login  a real isergwd (best the sanitizer build's, two reactors, the TCP
#               datamover, files as LUNs) takes every input over real sockets
#               (live_pdu.py, live_login.py) and after each must answer a new login;
#   rest        a real isergw-api, standalone on that isergwd's configuration
#               file, takes them as HTTP requests (live_rest.py) and after each
#               must still answer and take the first configuration again;
#   ctl         a fresh isergwd for each input takes its records on the control
#               socket (live_ctl.py), must answer GetStatus after it and exit 0
#               on SIGTERM.
# At the end no sanitizer report and no err line in a daemon's log (but those
# the kind's inputs ask for, counted), every line of it one of its own (nothing
# a peer sent starts one), and each daemon stopped cleanly on SIGTERM (exit 0).
#
#   tests/fuzz/live.sh --daemon PATH [--kind pdu|login|rest|ctl] [--api PATH]
#                      [--scratch DIR] [--addr A] [--port P] [--http-port H]
#                      [--seconds N] [--limit N] [CORPUS...]
#
# --kind: whose inputs (default pdu); the configuration is the in-process
# target's (tests/common/fake_gw.c; fuzz_login.c's first one; for rest,
# fake_api.c's document as a standalone isergwd has it; for ctl, fuzz_ctl.c's
# two). --api: isergw-api (rest). As root, rest and ctl run the daemons as
# nobody when nobody can run them (a grown corpus may name any file as a LUN,
# and isergwd creates a LUN's file when it has a size); rest's absolute LUN
# paths ("path": "/...) are moved under SCRATCH/root/, ctl's seeds' names by
# bytes of the same length (below). ctl listens on 127.0.7.5:3969 and
# [::1]:3971 whatever --port says.
# CORPUS: directories or files of its inputs (default: the committed seeds
# tests/fuzz/corpus/fuzz_KIND, and the regression inputs tests/fuzz/regress/fuzz_KIND).
# The corpus a campaign grew is DIR/fuzz-work/fuzz_KIND/corpus of its build tree.
# Prints the replay's summary, then "PASS" or "FAILED"; exit 0 or 1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/../integration/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/../integration/config_lib.sh"

ADDR=127.0.0.175
PORT=13690
HTTP_PORT=13691
API=''
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
	--http-port) HTTP_PORT=$2; shift 2 ;;
	--api) API=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--limit) LIMIT=$2; shift 2 ;;
	--kind) KIND=$2; shift 2 ;;
	-h|--help) sed -n '4,34p' "$0"; exit 0 ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) corpora+=("$1"); shift ;;
	esac
done
[ -x "$ISERGWD" ] || die "--daemon PATH (isergwd) required"
case "$KIND" in pdu|login|ctl) ;; rest) [ -x "$API" ] || die "--kind rest needs --api PATH (isergw-api)" ;;
*) die "--kind pdu, login, rest or ctl" ;; esac
[ -n "$SCRATCH" ] || SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/isergw-live.XXXXXX")
case "$SECS$LIMIT" in *[!0-9.]*) die "--seconds and --limit want numbers" ;; esac
command -v python3 >/dev/null || die "python3 is needed"
if [ ${#corpora[@]} -eq 0 ]; then
	corpora=("$here/corpus/fuzz_$KIND")
	[ -d "$here/regress/fuzz_$KIND" ] && corpora+=("$here/regress/fuzz_$KIND")
fi
for c in "${corpora[@]}"; do [ -e "$c" ] || die "no corpus $c"; done
mkdir -p "$SCRATCH"
rm -rf "$SCRATCH"/lun*.img "$SCRATCH"/isergwd.log "$SCRATCH"/api.log "${SCRATCH:?}"/state "${SCRATCH:?}"/root
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
elif [ "$KIND" = rest ]; then
	# fake_api.c's document (FZ_CFG) as one standalone node has it: no nodes or
	# device groups, the LUN on a file of the scratch directory, no backend
	cat >"$CFG" <<JSON
{
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "nop_interval_s": 0,
  "reactors": 2,
  "portals": [ { "url": "tcp://$ADDR:$PORT", "rel_port_id": 1 } ],
  "discovery_chap": { "user": "disc", "secret": "discsecret12" },
  "targets": [
    { "iqn": "iqn.2026-11.org.isergw:t1", "alias": "one",
      "chap": { "user": "u1", "secret": "secret123456" },
      "acls": [ { "initiator": "iqn.1994-05.com.redhat:h1",
                  "chap": { "user": "h1", "secret": "hostsecret12" } } ],
      "luns": [ { "lun": 0, "path": "$SCRATCH/lun0.img", "size": "1M" } ] },
    { "iqn": "iqn.2026-11.org.isergw:t2",
      "luns": [ { "path": "$SCRATCH/lun1.img", "size": "1M" } ] } ]
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
# run_as_nobody BINARY...: as root, run the daemons as nobody when nobody can
# (a grown corpus may name any file as a LUN, and a LUN with a size is created)
run_as=()
run_as_nobody() {
	local as b
	[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 || return 0
	as=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups --)
	for b in "$@"; do
		if ! "${as[@]}" test -x "$b"; then
			log "notice: nobody cannot run $b from here: the daemons run as root"
			return 0
		fi
	done
	chown -R nobody "$SCRATCH" || return 0
	run_as=("${as[@]}")
	log "the daemons run as nobody"
}
if [ "$KIND" = ctl ]; then
	# fuzz_ctl.c's two configurations: base_json[0], base_json[1] (a managed
	# node before its agent's first call). The inputs hold protobuf frames, so
	# what they name is moved by bytes of the same length: the LUN directory
	# to one under /tmp, the portals to 127.0.7.5:3969 and [::1]:3971, the
	# backend to 127.0.7.9, where nothing answers. The configuration is the
	# in-process one so moved: an ApplyConfig of a seed changes what it changes there.
	LUNDIR=$(mktemp -d /tmp/isgwXXXXXX) || die "mktemp"
	trap 'rm -rf "$LUNDIR"; lib_cleanup 2>/dev/null' EXIT
	cat >"$CFG" <<JSON
{
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "reactors": 2,
  "portals": [
    { "url": "tcp://127.0.7.5:3969", "rel_port_id": 1, "tpg_id": 1 },
    { "url": "tcp://[::1]:3971", "rel_port_id": 2, "tpg_id": 2 } ],
  "port_groups": [ { "tpg_id": 1, "rel_port_ids": [ 1 ] },
                   { "tpg_id": 2, "rel_port_ids": [ 2 ] },
                   { "tpg_id": 3, "rel_port_ids": [ 3, 4 ] } ],
  "device_groups": [ { "name": "dg1", "owner_tpg_id": 1 },
                     { "name": "dg2", "owner_tpg_id": 3, "non_owner_state": "standby" } ],
  "targets": [
    { "iqn": "iqn.2026-11.org.isergw:t0", "luns": [
      { "lun": 0, "path": "$LUNDIR/a.img", "size": "1M", "naa": "6001405aabbccddeeff0011223344556" },
      { "lun": 1, "path": "$LUNDIR/b.img", "size": "1M", "device_group": "dg1" } ] },
    { "iqn": "iqn.2026-11.org.isergw:t1", "luns": [
      { "lun": 0, "path": "$LUNDIR/c.img", "size": "1M", "block_size": 4096,
        "device_group": "dg2" } ] } ]
}
JSON
	cat >"$SCRATCH/managed.json" <<JSON
{
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "reactors": 1, "alua_lease": true, "alua_policy": "external", "lu_state": "cluster"
}
JSON
	chmod 600 "$CFG" "$SCRATCH/managed.json"
	run_as_nobody "$ISERGWD"
	[ ${#run_as[@]} -gt 0 ] && chown nobody "$LUNDIR"
	T_LOG=$SCRATCH/isergwd.log
	: >"$T_LOG"
	fail=0
	# the inputs' backends refuse, do not resolve or do not answer: libiscsi 1.19
	# leaks its connect state then (tests/integration/forward.sh)
	export ASAN_OPTIONS="fast_unwind_on_malloc=0:$ASAN_OPTIONS"
	export LSAN_OPTIONS="suppressions=$here/../integration/forward-lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
	python3 "$here/live_ctl.py" --daemon "$ISERGWD" --config "$CFG" --managed-config "$SCRATCH/managed.json" \
		--socket "$SCRATCH/state/ctl.sock" --log "$T_LOG" --run-as "${run_as[*]}" \
		--rewrite "/var/lib/isergw/=$LUNDIR/" --rewrite "127.0.0.1:3260=127.0.7.5:3969" --rewrite "[::1]:3261=[::1]:3971" \
		--rewrite "192.0.2.9=127.0.7.9" \
		--seconds "$SECS" --limit "$LIMIT" "${corpora[@]}" || fail=1
fi
if [ "$KIND" = rest ]; then
	mkdir -p "$SCRATCH/root/var/lib/isergw" "$SCRATCH/root/dev"
	truncate -s 1M "$SCRATCH/lun0.img" "$SCRATCH/lun1.img"
	cp "$CFG" "$SCRATCH/first.json"
	# fake_api.c's tokens: the inputs' Authorization headers verify
	cat >"$SCRATCH/tokens" <<'TOKENS'
admin admin sha256:a0a1a2a3a4a5a6a7a8a9aaabacadaeaf:4353e662d8b7b4127e2231bb7dc448dc35cc5a893631bdd01574e802d768244a
viewer read-only sha256:a0a1a2a3a4a5a6a7a8a9aaabacadaeaf:6c5f937341ae436e3725774d82c049f1ad53613b96d99d45aaf2498d30d67f4d
TOKENS
	chmod 600 "$SCRATCH/tokens"
	run_as_nobody "$ISERGWD" "$API"
	CONFIG_RUN_AS=("${run_as[@]}")
fi
API_PID=''
API_LOG=$SCRATCH/api.log
if [ "$KIND" != ctl ]; then
	config_start isergwd "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
	fail=0
fi
if [ "$KIND" = ctl ]; then
	:
elif [ "$KIND" = rest ]; then
	port_open "$ADDR" "$HTTP_PORT" && die "$ADDR:$HTTP_PORT is already in use"
	"${run_as[@]}" "$API" --listen "$ADDR:$HTTP_PORT" --isergwd-socket "$SCRATCH/state/ctl.sock" \
		--config "$CFG" --token-file "$SCRATCH/tokens" --log-level info >"$API_LOG" 2>&1 &
	API_PID=$!
	_LIB_DAEMONS+=("$API_PID isergw")
	wait_port "$API_PID" "$ADDR" "$HTTP_PORT" || die "isergw-api did not start: $(tail -n 5 "$API_LOG")"
	python3 "$here/live_rest.py" --addr "$ADDR" --port "$HTTP_PORT" --pid "$T_PID" --pid "$API_PID" \
		--token "isergw_admin_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8" --config "$SCRATCH/first.json" \
		--rewrite "\"path\": \"/=\"path\": \"$SCRATCH/root/" --rewrite "\"path\":\"/=\"path\":\"$SCRATCH/root/" \
		--seconds "$SECS" --limit "$LIMIT" "${corpora[@]}" || fail=1
	if ! target_stop "$API_PID" "$API_LOG"; then
		log "FAILED: isergw-api did not stop cleanly on SIGTERM"
		fail=1
	fi
else
	python3 "$here/live_$KIND.py" --addr "$ADDR" --port "$PORT" --pid "$T_PID" --seconds "$SECS" \
		--limit "$LIMIT" "${corpora[@]}" || fail=1
fi
if [ "$KIND" != ctl ] && ! target_stop "$T_PID" "$T_LOG"; then
	log "FAILED: isergwd did not stop cleanly on SIGTERM"
	fail=1
fi
# check_log NAME FILE [ERE]: no sanitizer report, no err line (but those
# matching ERE, counted), every line one of the daemon's own (what a peer
# sent never starts a line)
LSAN_STATS='^(Suppressions used:|  count +bytes template|-{40,}| +[0-9]+ +[0-9]+ iscsi_full_connect_async|)$'
check_log() {
	local name=$1 f=$2 known=${3:-} stray errs n
	if sanitizer_report "$f"; then
		log "FAILED: a sanitizer report in $f"
		fail=1
	fi
	# LeakSanitizer's count of suppressed leaks (a table) is no line of the daemon's
	stray=$(grep -avE "$LSAN_STATS" "$f" |
		grep -cavE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z (err|warn|notice|info|debug) +[a-z0-9-]+: ')
	if [ "$stray" -gt 0 ]; then
		log "FAILED: $stray lines of $f are not log lines of their own (a peer's newline?):"
		grep -avE "$LSAN_STATS" "$f" |
			grep -navE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z (err|warn|notice|info|debug) +[a-z0-9-]+: ' |
			head -n 3 >&2
		fail=1
	fi
	if [ -n "$known" ]; then
		n=$(grep -E '^[^ ]+ err ' "$f" | grep -cE -- "$known")
		log "$name: $n err lines for what the inputs asked ($known)"
	fi
	errs=$(grep -E '^[^ ]+ err ' "$f" | grep -cvE -- "${known:-^\$}")
	if [ "$errs" -gt 0 ]; then
		log "FAILED: $errs err lines in $f:"
		grep -E '^[^ ]+ err ' "$f" | grep -m5 -vE -- "${known:-^\$}" >&2
		fail=1
	fi
	log "$name's log: $(wc -l <"$f") lines, by level: $(awk '{print $2}' "$f" | sort | uniq -c | tr -s ' \n' ' ')"
}
if [ "$KIND" = rest ]; then
	# a configuration an input wrote may name a LUN that cannot be opened: an
	# admin's error, told as one (gateway/core/runtime.c)
	check_log isergwd "$T_LOG" ' LUN [0-9]+: not served: '
elif [ "$KIND" = ctl ]; then
	# the same, the backends and portals an input's configuration names (the
	# seeds' backend, which nothing serves; addresses or URLs that are wrong)
	check_log isergwd "$T_LOG" ' LUN [0-9]+: not served: | bdev-iscsi: | portal: portal .*: cannot resolve address: | reload: portal .* could not be opened'
else
	check_log isergwd "$T_LOG"
fi
[ -n "$API_PID" ] && check_log isergw-api "$API_LOG"
if [ "$fail" = 0 ]; then log PASS; else log "FAILED (logs in $SCRATCH)"; fi
exit "$fail"
