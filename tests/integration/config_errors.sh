#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Configuration errors, as systemd sees them (docs/packaging.md, "Exit status
# and restarts"). Each daemon runs with its stderr as if it were the journal
# ($JOURNAL_STREAM names the file's device and inode), so every line carries
# its syslog priority ("<3>" for err) as journald would store it.
#
#   1. isergwd: a broken file, a missing file, an unknown option, a FIFO
#      where the file should be (refused at once, not waited on), a file
#      where its state directory should be, a LUN file
#      that is not there, a portal whose port another program holds: exit 78 (EX_CONFIG, the units'
#      RestartPreventExitStatus=), the error once at err ("address in use",
#      never "waiting for its address").
#   2. the unit's ExecReload= command line, taken from deploy/systemd/
#      isergwd.service (isergwd's path mapped to the build): with a good file
#      it exits 0; with a broken file (or a FIFO) it fails, the daemon goes on serving the
#      configuration it had and logs the error once at err; a reload adding a
#      portal whose port is in use is applied with that portal waiting, logged
#      at err, "degraded" in sd_notify's STATUS= (a NOTIFY_SOCKET of the
#      test's) and in `isergwctl status`; once the port is free it listens.
#   3. isergw-ha: an unknown option, a broken --config file, a FIFO as it:
#      exit 78, one err.
#   4. isergw-api: an unknown option, a token file others can read, a missing
#      TLS key file: exit 78, one err line.
#   5. every program (isergwd, isergw-ha, isergw-api, isergwctl) answers
#      --version (exit 0, its name and version) and --help (exit 0, usage).
#
#   config_errors.sh --daemon PATH --ctl PATH --units DIR [--ha PATH] [--api PATH]
#                    [--scratch DIR] [--addr A] [--addr2 A2] [--port P]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

ADDR=127.0.0.160
ADDR2=127.0.0.161
PORT=13640
CTL='' UNITS='' HA='' API=''
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--ctl) CTL=$2; shift 2 ;;
	--units) UNITS=$2; shift 2 ;;
	--ha) HA=$2; shift 2 ;;
	--api) API=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--addr2) ADDR2=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	-h|--help) sed -n '3,28p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
only_isergw "configuration errors of isergwd"
[ -x "$CTL" ] || die "--ctl PATH (isergwctl) is required"
[ -f "$UNITS/isergwd.service" ] || die "--units DIR (deploy/systemd) is required"
command -v python3 >/dev/null || die "python3 not found"
PORT2=$((PORT + 1))

fails=0
ok() { printf 'ok   %s\n' "$*"; }
bad() { printf 'FAIL %s\n' "$*"; fails=$((fails + 1)); }

HOLDER_PID=
NOTIFY_PID=
stop_helpers() {
	[ -n "$HOLDER_PID" ] && { kill "$HOLDER_PID"; wait "$HOLDER_PID"; } 2>/dev/null
	[ -n "$NOTIFY_PID" ] && { kill "$NOTIFY_PID"; wait "$NOTIFY_PID"; } 2>/dev/null
	HOLDER_PID='' NOTIFY_PID=''
}
trap 'stop_helpers; lib_cleanup 2>/dev/null' EXIT

# hold_port ADDR PORT: another program listens there until release_port.
hold_port() {
	rm -f "$SCRATCH/holder.ready"
	python3 - "$1" "$2" "$SCRATCH/holder.ready" <<'EOF' &
import signal, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(4)
open(sys.argv[3], "w").close()
signal.pause()
EOF
	HOLDER_PID=$!
	for _ in $(seq 100); do [ -e "$SCRATCH/holder.ready" ] && return 0; sleep 0.1; done
	die "could not hold $1:$2"
}
release_port() { { kill "$HOLDER_PID"; wait "$HOLDER_PID"; } 2>/dev/null; HOLDER_PID=''; }

# as_journal OUT CMD...: CMD with its stderr in OUT as the journal's stream;
# prints the exit status.
as_journal() {
	local out=$1 st
	shift
	: >"$out"
	st=$(stat -c '%d:%i' "$out")
	JOURNAL_STREAM=$st timeout --kill-after=5 20 "$@" </dev/null 2>>"$out" >/dev/null
	echo $?
}

# refused WHAT OUT RC ERE: exit 78, exactly one err line, and it matches ERE.
refused() {
	local what=$1 out=$2 rc=$3 re=$4 n
	n=$(count_log "$out" '^<3>')
	if [ "$rc" -ne 78 ]; then
		bad "$what: exit $rc (expected 78): $(head -n 3 "$out")"
	elif [ "$n" -ne 1 ]; then
		bad "$what: $n err lines (expected 1): $(grep '^<3>' "$out" | head -n 3)"
	elif ! grep '^<3>' "$out" | grep -Eq -- "$re"; then
		bad "$what: the err line does not say '$re': $(grep '^<3>' "$out")"
	else
		ok "$what: exit 78, once at err: $(grep '^<3>' "$out" | cut -c1-150)"
	fi
}

IQN=iqn.2026-11.org.isergw:config-errors
CFG=$SCRATCH/isergwd.json
SOCK=$SCRATCH/ctl.sock
mkdir -p "$SCRATCH/state"
rm -f "$SCRATCH"/*.img
# write_config PORTAL-URL...
write_config() {
	local portals='' u
	for u in "$@"; do portals="$portals${portals:+, }{ \"url\": \"$u\" }"; done
	cat >"$CFG.tmp" <<EOF
{ "portals": [ $portals ], "ctl_socket": "$SOCK", "state_dir": "$SCRATCH/state",
  "targets": [ { "iqn": "$IQN",
    "luns": [ { "lun": 0, "path": "$SCRATCH/lun0.img", "size": "16M" } ] } ] }
EOF
	mv "$CFG.tmp" "$CFG"
}

# ---- 1. isergwd refuses to start
printf '{ "portals": [ broken\n' >"$SCRATCH/broken.json"
rc=$(as_journal "$SCRATCH/broken.out" "$ISERGWD" --config "$SCRATCH/broken.json")
refused "isergwd, a file that is not JSON" "$SCRATCH/broken.out" "$rc" "broken.json: line 1"
rc=$(as_journal "$SCRATCH/missing.out" "$ISERGWD" --config "$SCRATCH/no-such.json")
refused "isergwd, a missing file" "$SCRATCH/missing.out" "$rc" "no-such.json"
rc=$(as_journal "$SCRATCH/opt.out" "$ISERGWD" --no-such-option)
refused "isergwd, an unknown option" "$SCRATCH/opt.out" "$rc" "--no-such-option"
# a FIFO where the file should be: refused at once (open() used to wait for a writer)
rm -f "$SCRATCH/fifo.json" && mkfifo "$SCRATCH/fifo.json"
rc=$(as_journal "$SCRATCH/fifo.out" "$ISERGWD" --config "$SCRATCH/fifo.json")
refused "isergwd, a FIFO as its file" "$SCRATCH/fifo.out" "$rc" "fifo.json: a FIFO, not a regular file"

write_config "tcp://$ADDR:$PORT"
# a file where the state directory should be: one err line, not one per LUN
: >"$SCRATCH/state-file"
sed 's|"state_dir": "[^"]*"|"state_dir": "'"$SCRATCH"'/state-file"|' "$CFG" >"$SCRATCH/statefile.json"
rc=$(as_journal "$SCRATCH/statefile.out" "$ISERGWD" --config "$SCRATCH/statefile.json")
refused "isergwd, a file as its state_dir" "$SCRATCH/statefile.out" "$rc" \
	"state directory .*state-file: Not a directory"
sed 's|"path": "[^"]*", "size": "16M"|"path": "'"$SCRATCH"'/no-such-dir/lun.img"|' "$CFG" >"$SCRATCH/nolun.json"
rc=$(as_journal "$SCRATCH/nolun.out" "$ISERGWD" --config "$SCRATCH/nolun.json")
refused "isergwd, a LUN file that is not there (no size to create it)" "$SCRATCH/nolun.out" "$rc" \
	"no-such-dir/lun.img"
hold_port "$ADDR" "$PORT"
rc=$(as_journal "$SCRATCH/inuse.out" "$ISERGWD" --config "$CFG")
refused "isergwd, its portal's port held by another program" "$SCRATCH/inuse.out" "$rc" \
	"$ADDR:$PORT.*address in use"
if grep -q "waiting for its address" "$SCRATCH/inuse.out"; then
	bad "a port in use is logged as an address that has not arrived"
fi
release_port

# ---- 2. the unit's ExecReload=
line=$(grep -E '^ExecReload=' "$UNITS/isergwd.service")
[ "$(printf '%s\n' "$line" | wc -l)" = 1 ] || die "isergwd.service: not one ExecReload= line"
log "the unit's $line"

# NOTIFY_SOCKET of our own: every sd_notify message of the daemon in notify.log
rm -f "$SCRATCH/notify.sock" "$SCRATCH/notify.log"
python3 - "$SCRATCH/notify.sock" "$SCRATCH/notify.log" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    while True:
        f.write(s.recv(4096).decode(errors="replace").replace("\n", " ") + "\n")
EOF
NOTIFY_PID=$!
for _ in $(seq 100); do [ -S "$SCRATCH/notify.sock" ] && break; sleep 0.1; done
[ -S "$SCRATCH/notify.sock" ] || die "no notify socket"

write_config "tcp://$ADDR:$PORT"
DLOG=$SCRATCH/isergwd.log
: >"$DLOG"
# shellcheck disable=SC2094 # stat names the file that stderr appends to
JOURNAL_STREAM=$(stat -c '%d:%i' "$DLOG") NOTIFY_SOCKET=$SCRATCH/notify.sock \
	"$ISERGWD" --config "$CFG" 2>>"$DLOG" >/dev/null &
pid=$!
_LIB_DAEMONS+=("$pid isergw")
wait_port "$pid" "$ADDR" "$PORT" || die "isergwd did not start: $(tail -n 5 "$DLOG")"

# exec_reload: the unit's command line as systemd runs it ($ISERGWD_ARGS as
# the unit's default sets it, --config=FILE; $MAINPID the daemon's pid), its
# stderr in reload.out as the journal's stream (the unit's journal holds the
# daemon's lines and these); the exit status
exec_reload() {
	local cmd=${line#ExecReload=} ISERGWD_ARGS="--config=$CFG" argv
	cmd=${cmd//\$\{ISERGWD_ARGS\}/$ISERGWD_ARGS}
	cmd=${cmd//\$ISERGWD_ARGS/$ISERGWD_ARGS}
	cmd=${cmd//\$MAINPID/$pid}
	read -ra argv <<<"$cmd"
	[ "${argv[0]}" = /usr/sbin/isergwd ] && argv[0]=$ISERGWD
	: >"$SCRATCH/reload.out"
	# shellcheck disable=SC2094 # stat names the file that the output appends to
	JOURNAL_STREAM=$(stat -c '%d:%i' "$SCRATCH/reload.out") \
		timeout 60 "${argv[@]}" >>"$SCRATCH/reload.out" 2>&1
}
# errs: err lines of the unit so far (the daemon's and its reloads')
errs() { echo $(( $(count_log "$DLOG" '^<3>') + $(count_log "$SCRATCH/reloads.out" '^<3>') )); }
keep_reload_out() { cat "$SCRATCH/reload.out" >>"$SCRATCH/reloads.out"; }
: >"$SCRATCH/reloads.out"

if exec_reload; then ok "ExecReload with a good file: exit 0"
else bad "ExecReload with a good file failed: $(cat "$SCRATCH/reload.out")"; fi
keep_reload_out

# refused_reload WHAT ERE: the reload fails, its error once at err matching ERE
refused_reload() {
	local what=$1 re=$2 before n
	before=$(errs)
	if exec_reload; then
		bad "ExecReload with $what exits 0 ($(cat "$SCRATCH/reload.out"))"
	else
		ok "ExecReload with $what fails"
	fi
	keep_reload_out
	sleep 0.2
	n=$(( $(errs) - before ))
	if [ "$n" -eq 1 ] && cat "$DLOG" "$SCRATCH/reloads.out" | grep '^<3>' | grep -Eq -- "$re"; then
		ok "$what: once at err: $(cat "$DLOG" "$SCRATCH/reloads.out" | grep '^<3>' | grep -E -- "$re" | tail -n 1 | cut -c1-150)"
	else
		bad "$what: $n new err lines: $(cat "$DLOG" "$SCRATCH/reloads.out" | grep '^<3>' | tail -n 3)"
	fi
}
printf '{ "portals": [ { "url": "tcp://%s:%s" } ], "targets": [ broken\n' "$ADDR2" "$PORT2" >"$CFG"
refused_reload "a file that is not JSON" "isergwd.json: line 1"
write_config "tcp://$ADDR:$PORT" "tcp://$ADDR2:$PORT2"
sed -i 's/"size": "16M"/"size": "16M", "block_size": 1000/' "$CFG"
refused_reload "an invalid block_size" "block_size"
rm -f "$CFG" && mkfifo "$CFG"
refused_reload "a FIFO as its file" "isergwd.json: a FIFO, not a regular file"
rm -f "$CFG"
write_config "tcp://$ADDR:$PORT" "tcp://$ADDR2:$PORT2"
sed -i 's/"size": "16M"/"size": "16M", "block_size": 1000/' "$CFG"
if target_alive "$pid" && port_open "$ADDR" "$PORT" && ! port_open "$ADDR2" "$PORT2"; then
	ok "isergwd serves the configuration it had"
else
	bad "isergwd after the refused reload: not serving as before"
fi

# a reload that adds a portal whose port another program holds: applied,
# the portal waits, degraded
hold_port "$ADDR2" "$PORT2"
before=$(errs)
write_config "tcp://$ADDR:$PORT" "tcp://$ADDR2:$PORT2"
if exec_reload; then ok "ExecReload adding a portal whose port is in use: applied (exit 0)"
else bad "ExecReload adding a portal whose port is in use: $(cat "$SCRATCH/reload.out")"; fi
keep_reload_out
sleep 0.2
n=$(( $(errs) - before ))
if [ "$n" -eq 1 ] && grep '^<3>' "$DLOG" | tail -n 1 | grep -q "$ADDR2:$PORT2.*address in use"; then
	ok "the port in use: once at err, 'address in use'"
else
	bad "the port in use: $n new err lines: $(grep '^<3>' "$DLOG" | tail -n 3)"
fi
if grep -q "STATUS=.*degraded.*address in use" "$SCRATCH/notify.log"; then
	ok "sd_notify STATUS: $(grep -o 'STATUS=.*degraded.*' "$SCRATCH/notify.log" | tail -n 1)"
else
	bad "no degraded STATUS= (notify: $(tail -n 3 "$SCRATCH/notify.log"))"
fi
"$CTL" -s "$SOCK" status >"$SCRATCH/status.out" 2>&1
if grep -E "tcp://$ADDR2:$PORT2 .*waiting.*Address already in use" "$SCRATCH/status.out" >/dev/null; then
	ok "isergwctl status: $(grep "$ADDR2:$PORT2" "$SCRATCH/status.out")"
else
	bad "isergwctl status does not show the portal waiting on its port: $(cat "$SCRATCH/status.out")"
fi
release_port
if wait_port "$pid" "$ADDR2" "$PORT2" 10; then ok "the port freed: the portal listens"
else bad "the port freed: the portal does not listen"; fi
target_stop "$pid" "$DLOG" || bad "isergwd did not stop cleanly"
stop_helpers

# ---- 3. isergw-ha
if [ -n "$HA" ]; then
	rc=$(as_journal "$SCRATCH/ha-opt.out" "$HA" --no-such-option)
	refused "isergw-ha, an unknown option" "$SCRATCH/ha-opt.out" "$rc" "--no-such-option"
	printf '[ 1, 2 ]\n' >"$SCRATCH/ha.json"
	rc=$(as_journal "$SCRATCH/ha-cfg.out" "$HA" --config "$SCRATCH/ha.json" \
		--state-dir "$SCRATCH/ha-state")
	refused "isergw-ha, a --config that is no object" "$SCRATCH/ha-cfg.out" "$rc" "ha.json"
	printf '{ "lease_ms": 10 }\n' >"$SCRATCH/ha.json"
	rc=$(as_journal "$SCRATCH/ha-val.out" "$HA" --config "$SCRATCH/ha.json" \
		--state-dir "$SCRATCH/ha-state")
	refused "isergw-ha, a value out of range in --config" "$SCRATCH/ha-val.out" "$rc" "lease-ms"
	rm -f "$SCRATCH/ha-fifo.json" && mkfifo "$SCRATCH/ha-fifo.json"
	rc=$(as_journal "$SCRATCH/ha-fifo.out" "$HA" --config "$SCRATCH/ha-fifo.json" \
		--state-dir "$SCRATCH/ha-state")
	refused "isergw-ha, a FIFO as its --config" "$SCRATCH/ha-fifo.out" "$rc" \
		"ha-fifo.json: a FIFO, not a regular file"
fi

# ---- 4. isergw-api
if [ -n "$API" ]; then
	rc=$(as_journal "$SCRATCH/api-opt.out" "$API" --no-such-option)
	refused "isergw-api, an unknown option" "$SCRATCH/api-opt.out" "$rc" "--no-such-option"
	printf '# nobody\n' >"$SCRATCH/tokens" && chmod 644 "$SCRATCH/tokens"
	rc=$(as_journal "$SCRATCH/api-tok.out" "$API" --listen "$ADDR:$PORT" \
		--token-file "$SCRATCH/tokens")
	refused "isergw-api, a token file others can read" "$SCRATCH/api-tok.out" "$rc" "tokens"
	printf 'x\n' >"$SCRATCH/cert.pem"
	rc=$(as_journal "$SCRATCH/api-tls.out" "$API" --listen "$ADDR:$PORT" \
		--tls-cert "$SCRATCH/cert.pem" --tls-key "$SCRATCH/no-such.key")
	refused "isergw-api, a TLS key file that is not there" "$SCRATCH/api-tls.out" "$rc" \
		"no-such.key"
fi

# ---- 5. --version and --help everywhere
for prog in "$ISERGWD" "$HA" "$API" "$CTL"; do
	[ -n "$prog" ] || continue
	name=${prog##*/}
	if out=$("$prog" --version 2>&1) && grep -Eq "^$name [0-9]+\.[0-9]+" <<<"$out"; then
		ok "$name --version: $out"
	else
		bad "$name --version: exit $?, '$out'"
	fi
	if "$prog" --help >"$SCRATCH/help.out" 2>&1 && grep -qi 'usage' "$SCRATCH/help.out"; then
		ok "$name --help"
	else
		bad "$name --help: $(head -n 2 "$SCRATCH/help.out")"
	fi
done

if [ "$fails" -ne 0 ]; then
	log "$fails check(s) failed (logs in $SCRATCH)"
	exit 1
fi
log "all checks passed"
