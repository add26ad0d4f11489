#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shellcheck disable=SC2015 # pass() and log never fail: A && pass || bad is an if-else
#
# A change that adds LUNs on a backend that does not answer must not cost
# the node its ALUA lease. isergwd runs from a configuration with
# alua_lease true; a loop renews a 3 s lease every 200 ms as isergw-ha
# does; the "backend" accepts TCP connections and never answers (a target
# host that hangs). Opening such a LUN waits up to 5 s for the login, on the
# control thread, where the renewals are answered.
#   1. a reload (isergwctl reload) adds LUNs 1 and 2 on it: it is answered,
#      the lease never runs out (no "ALUA lease expired" line), each LUN
#      opens NOT READY with a notice that it was not waited for;
#   2. the same for a ChangeLun (the HA agent's way to add one LUN) adding
#      LUN 3, after an ApplyConfig of the file's configuration;
#   3. the background discovery tells each of the three once at err when its
#      first try fails, and the lease is still valid;
#   4. SIGTERM: exit 0 (the discovery threads stop), no sanitizer report.
# Without the bound on the opens, the reload alone holds the control thread
# for 10 s and the 3 s lease runs out. Every wait is a poll for a condition.
#
#   reload_lease.sh --ctl PATH [--daemon PATH] [--scratch DIR] [--addr A]
#                   [--port P] [--backend-port B]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

CTL=
ADDR=127.0.0.183
PORT=13702
BPORT=13703
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--ctl) CTL=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--backend-port) BPORT=$2; shift 2 ;;
	-h|--help) sed -n '5,23p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ -x "${CTL:-/nonexistent}" ] || die "--ctl PATH (isergwctl) is required"
command -v jq >/dev/null || die "jq not found (apt-get install jq)"
command -v python3 >/dev/null || die "python3 not found"
only_isergw "the ALUA lease"
# libiscsi 1.19 leaks its connect state when a context is destroyed during a
# login (this backend never answers: SIGTERM finds the discovery threads in
# one); forward.sh's suppression, which needs full unwinding through libiscsi
export ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$here/forward-lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

IQN=iqn.2026-11.org.isergw:reload-lease
SOCK=$SCRATCH/run/ctl.sock
CFG=$SCRATCH/reload-lease.json
BACKEND=iscsi://$ADDR:$BPORT/iqn.2026-11.org.isergw:silent
rm -rf "$SCRATCH/run" "$SCRATCH/state" "$SCRATCH"/*.img "$SCRATCH"/*.json
mkdir -p "$SCRATCH/state" "$SCRATCH/run"
fail=0
pass() { log "PASS $*"; }
bad() { log "FAIL $*"; fail=1; }
ctl() { "$CTL" -s "$SOCK" "$@"; }

# config LUNS-JSON: the configuration file, with these LUNs after LUN 0
config() {
	cat >"$CFG" <<JSON
{
  "log_level": "info",
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SOCK",
  "alua_lease": true,
  "portals": [ { "url": "tcp://$ADDR:$PORT", "rel_port_id": 1, "tpg_id": 1 } ],
  "targets": [ { "iqn": "$IQN", "luns": [
      { "lun": 0, "path": "$SCRATCH/l0.img", "size": "16M" }$1 ] } ]
}
JSON
	chmod 600 "$CFG"
}

# the backend that never answers: accepts, reads, holds every connection
python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(64)
held = []
while True:
    c, _ = s.accept()
    held.append(c)
' "$ADDR" "$BPORT" &
SILENT_PID=$!
RENEW_PID=''
trap '[ -n "$RENEW_PID" ] && kill "$RENEW_PID" 2>/dev/null; kill "$SILENT_PID" 2>/dev/null; lib_cleanup 2>/dev/null' EXIT
wait_port "$SILENT_PID" "$ADDR" "$BPORT" || die "the silent backend did not start"

config ""
config_start reload-lease "$CFG" "$ADDR:$PORT" || die "isergwd did not start"
dlog=$T_LOG
# renewals as the agent makes them: a lease of 3 s, every 200 ms
while :; do ctl --timeout 20 lease renew --ms 3000 >/dev/null 2>&1; sleep 0.2; done &
RENEW_PID=$!
lease_valid() { [ "$(ctl --json status | jq -r .lease_state)" = valid ]; }
deadline=$((SECONDS + 20))
until lease_valid; do
	[ "$SECONDS" -lt "$deadline" ] || die "no valid lease after 20 s"
	sleep 0.1
done
pass "the lease is valid"

# 1. a reload adds two LUNs on the silent backend
config ", { \"lun\": 1, \"path\": \"$BACKEND/0\" }, { \"lun\": 2, \"path\": \"$BACKEND/1\" }"
t0=$SECONDS
if OUT=$(ctl reload 2>&1); then
	pass "the reload answered after $((SECONDS - t0)) s"
else
	bad "isergwctl reload: $OUT"
fi
if wait_log "$dlog" "$BACKEND/0: no answer within the [0-9]+ ms this change could wait" 10 &&
	wait_log "$dlog" "$BACKEND/1: no answer within the [0-9]+ ms this change could wait" 10; then
	pass "LUNs 1 and 2 NOT READY, each with a notice"
else
	bad "no notice for LUN 1 or 2: $(grep -c "$BACKEND" "$dlog") lines name the backend"
fi

# 2. ChangeLun (after an ApplyConfig of the same document), as the HA agent adds a LUN
python3 - "$SOCK" "$CFG" "$IQN" "$BACKEND/2" >"$SCRATCH/changelun.out" 2>&1 <<'PY'
import json, socket, sys

sock, cfg, iqn, url = sys.argv[1:]


def varint(v):
    out = bytearray()
    while True:
        c, v = v & 0x7F, v >> 7
        out.append(c | (0x80 if v else 0))
        if not v:
            return bytes(out)


def ld(num, b):
    return varint(num << 3 | 2) + varint(len(b)) + b


def call(op, body):
    req = ld(op, body)
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(sock)
    s.sendall(len(req).to_bytes(4, "big") + req)
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:4], "big"):
        b = s.recv(65536)
        if not b:
            sys.exit("the connection closed")
        buf += b
    rep = buf[4:4 + int.from_bytes(buf[:4], "big")]
    # Reply.status: field 1, a zigzag varint; absent when 0
    if rep[:1] == b"\x08":
        z, i, s_ = 0, 1, 0
        while True:
            z |= (rep[i] & 0x7F) << s_
            s_ += 7
            i += 1
            if not rep[i - 1] & 0x80:
                break
        st = (z >> 1) ^ -(z & 1)
        if st:
            sys.exit("status %d: %r" % (st, rep))


with open(cfg, "rb") as f:
    doc = f.read()
call(2, varint(1 << 3) + varint(100) + ld(2, doc))                      # ApplyConfig epoch 100
lun = json.dumps({"lun": 3, "path": url}).encode()
call(14, varint(1 << 3) + varint(101) + ld(2, iqn.encode()) + varint(3 << 3) + varint(3) +
     ld(4, lun))                                                         # ChangeLun epoch 101
print("ChangeLun answered")
PY
if grep -q "ChangeLun answered" "$SCRATCH/changelun.out" &&
	wait_log "$dlog" "$BACKEND/2: no answer within the [0-9]+ ms this change could wait" 10; then
	pass "ChangeLun answered, LUN 3 NOT READY with a notice"
else
	bad "ChangeLun: $(cat "$SCRATCH/changelun.out")"
fi

# 3. each LUN's first failed discovery at err, once; the lease never ran out
for n in 0 1 2; do
	if wait_log "$dlog" "$BACKEND/$n: backend not usable: " 30; then
		pass "$BACKEND/$n: the background discovery's first failure at err"
	else
		bad "$BACKEND/$n: no err line from the background discovery"
	fi
done
errs=$(grep -cE '^[^ ]+ err ' "$dlog")
[ "$errs" = 3 ] && pass "3 err lines in all" || bad "$errs err lines: $(grep -E '^[^ ]+ err ' "$dlog")"
if grep -q "ALUA lease expired" "$dlog"; then
	bad "the lease ran out: $(grep -m1 'ALUA lease expired' "$dlog")"
else
	pass "the lease never ran out"
fi
lease_valid && pass "the lease is valid" || bad "the lease is $(ctl --json status | jq -r .lease_state)"
if [ "$(ctl --json status | jq '.luns_online')" = 1 ]; then
	pass "one LUN online (LUN 0), the three on the silent backend not"
else
	bad "status: $(ctl --json status | jq -c '{luns_online, lun_faults_total}')"
fi

# 4.
kill "$RENEW_PID" 2>/dev/null
wait "$RENEW_PID" 2>/dev/null
RENEW_PID=''
if target_stop "$T_PID" "$dlog"; then pass "SIGTERM: exit 0"; else bad "isergwd did not stop cleanly"; fi
if sanitizer_report "$dlog"; then bad "a sanitizer report in $dlog"; fi
[ "$fail" = 0 ] && log PASS || log "FAILED (log $dlog)"
exit "$fail"
