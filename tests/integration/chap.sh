#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# CHAP with a real initiator (libiscsi's iscsi-inq and iscsi-ls), isergwd run
# from a configuration file with three targets and discovery CHAP:
#   C1  one-way CHAP            (chap)
#   C2  mutual CHAP             (chap + mutual_chap, the secret the client expects)
#   C3  mutual CHAP             (mutual_chap secret the client does NOT expect)
# Checks: C1 logs in with the right secret and not with a wrong one or none;
# C2 logs in with mutual CHAP; the initiator refuses C3 (the target proves
# the wrong secret) and a wrong target user name; mutual CHAP asked of C1
# (no mutual_chap) fails; discovery needs the discovery_chap credentials.
# Mutual CHAP uses libiscsi 1.19's URL arguments target_user/target_password.
#
#   chap.sh [--daemon PATH] [--scratch DIR] [--addr A] [--port P]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
# shellcheck source=tests/integration/config_lib.sh
. "$here/config_lib.sh"

ADDR=127.0.0.44
PORT=13344
lib_parse_common "$@"
set -- "${LIB_ARGS[@]}"
while [ $# -gt 0 ]; do
	case "$1" in
	--port) PORT=$2; shift 2 ;;
	--addr) ADDR=$2; shift 2 ;;
	-h|--help) sed -n '3,17p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
only_isergw "the CHAP configuration file (discovery_chap, mutual_chap)"
for t in iscsi-ls iscsi-inq; do
	command -v "$t" >/dev/null || die "$t not found (apt-get install libiscsi-bin)"
done

PFX=iqn.2026-11.org.isergw
C1=$PFX:chap-oneway
C2=$PFX:chap-mutual
C3=$PFX:chap-mutual-other
INIT=$PFX:chap
P=$ADDR:$PORT
USER=init-user
S1=init-secret-0001
S2=init-secret-0002
S3=init-secret-0003
TUSER=tgt-user
TSECRET=tgt-secret-0002        # what the client expects from the target
TSECRET_OTHER=tgt-secret-9999  # what C3 answers with
DUSER=disc-user
DSECRET=disc-secret-0001
CFG=$SCRATCH/chap.json
rm -f "$SCRATCH"/*.img
mkdir -p "$SCRATCH/state"
lun() { printf '"luns": [ { "path": "%s/%s.img", "size": "16M" } ]' "$SCRATCH" "$1"; }
cat >"$CFG" <<JSON
{
  "log_level": "info",
  "state_dir": "$SCRATCH/state",
  "ctl_socket": "$SCRATCH/state/ctl.sock",
  "discovery_chap": { "user": "$DUSER", "secret": "$DSECRET" },
  "portals": [ { "url": "tcp://$P" } ],
  "targets": [
    { "iqn": "$C1", "chap": { "user": "$USER", "secret": "$S1" }, $(lun c1) },
    { "iqn": "$C2", "chap": { "user": "$USER", "secret": "$S2" },
      "mutual_chap": { "user": "$TUSER", "secret": "$TSECRET" }, $(lun c2) },
    { "iqn": "$C3", "chap": { "user": "$USER", "secret": "$S3" },
      "mutual_chap": { "user": "$TUSER", "secret": "$TSECRET_OTHER" }, $(lun c3) }
  ]
}
JSON

fail=0
pass() { log "PASS $*"; }
bad() { log "FAIL $*"; fail=1; }
n=0
# inq WANT(ok|fail) WHAT URL-CREDENTIALS IQN [URL-ARGUMENTS]: iscsi-inq with
# its own initiator name (so its log lines can be found).
inq() {
	local want=$1 what=$2 cred=$3 iqn=$4 uargs=${5:-} out rc
	n=$((n + 1))
	LAST_INIT=$INIT-$n
	out=$(timeout --kill-after=5 20 iscsi-inq -i "$LAST_INIT" "iscsi://$cred$P/$iqn/0$uargs" </dev/null 2>&1)
	rc=$?
	if { [ "$want" = ok ] && [ "$rc" -eq 0 ]; } || { [ "$want" = fail ] && [ "$rc" -ne 0 ] && [ "$rc" -lt 124 ]; }; then
		pass "$what ($LAST_INIT: status $rc)"
	else
		bad "$what: iscsi-inq status $rc, expected $want: $(echo "$out" | tail -n 2 | paste -sd' ')"
	fi
}
# ls WANT-TARGETS WHAT URL-CREDENTIALS: the targets iscsi-ls lists ("" = none).
ls_targets() {
	local want=$1 what=$2 cred=$3 got
	got=$(timeout --kill-after=5 20 iscsi-ls -i "$INIT-ls" "iscsi://$cred$P" </dev/null 2>&1 |
		sed -n 's/^Target:\([^ ]*\) .*/\1/p' | sort -u | paste -sd' ')
	if [ "$got" = "$want" ]; then pass "$what: '$got'"
	else bad "$what: iscsi-ls lists '$got', expected '$want'"; fi
}
# log_has ERE WHAT / log_lacks ERE WHAT
log_has() { if wait_log "$dlog" "$1" 5; then pass "$2"; else bad "$2 (no log line matching '$1')"; fi; }
log_lacks() { if [ "$(count_log "$dlog" "$1")" -eq 0 ]; then pass "$2"; else bad "$2 (log: $(grep -E -m1 -- "$1" "$dlog"))"; fi; }

config_start chap "$CFG" "$P" || die "isergwd did not start"
pid=$T_PID
dlog=$T_LOG

# ---- one-way CHAP
inq ok "one-way CHAP, right secret" "$USER%$S1@" "$C1"
inq fail "one-way CHAP, wrong secret" "$USER%$S1-wrong@" "$C1"
log_has "login of $LAST_INIT failed \(status 02/01\)" "the daemon refused $LAST_INIT with 02/01"
inq fail "no credentials on a CHAP target" "" "$C1"
log_has "login of $LAST_INIT failed \(status 02/01\)" "the daemon refused $LAST_INIT with 02/01"
inq fail "one-way CHAP, wrong user" "other-user%$S1@" "$C1"

# ---- mutual CHAP
MUT="?target_user=$TUSER&target_password=$TSECRET"
inq ok "mutual CHAP, both secrets right" "$USER%$S2@" "$C2" "$MUT"
inq fail "mutual CHAP, the target proves another secret: the initiator refuses" "$USER%$S3@" "$C3" "$MUT"
# the target accepted the initiator: the refusal was the initiator's
log_lacks "login of $LAST_INIT failed" "the target had accepted $LAST_INIT (refusal by the initiator)"
inq ok "the same target without mutual CHAP logs in (the secret above was right)" "$USER%$S3@" "$C3"
inq fail "mutual CHAP, the initiator expects another target user name" "$USER%$S2@" "$C2" \
	"?target_user=someone-else&target_password=$TSECRET"
inq fail "mutual CHAP asked of a target without mutual_chap" "$USER%$S1@" "$C1" "$MUT"
log_has "login of $LAST_INIT failed \(status 02/01\)" "the daemon refused $LAST_INIT with 02/01"

# ---- discovery CHAP
ls_targets "$(printf '%s\n' "$C1" "$C2" "$C3" | sort | paste -sd' ')" "discovery with the discovery_chap credentials" "$DUSER%$DSECRET@"
ls_targets "" "discovery without credentials" ""
log_has "login of $INIT-ls failed \(status 02/01\)" "the daemon refused the discovery login with 02/01"
ls_targets "" "discovery with a wrong discovery secret" "$DUSER%$DSECRET-wrong@"
ls_targets "" "discovery with a target's credentials" "$USER%$S1@"

if ! target_alive "$pid"; then
	wait "$pid" 2>/dev/null
	bad "the daemon died (status $?); see $dlog"
	_lib_forget "$pid"
elif target_stop "$pid" "$dlog"; then
	pass "SIGTERM: exit 0"
else
	bad "unclean stop (SIGTERM must exit 0); see $dlog"
fi
if [ "$fail" -ne 0 ]; then
	log "FAILED (logs in $SCRATCH)"
	exit 1
fi
log "all CHAP checks passed"
