#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# isergwd's command line: --help (exit 0, every option mentioned), an unknown
# option (exit 78, EX_CONFIG, with a message), bad configuration files (exit
# 78, the message names the offending key path), --check-config on a good one. isergwd only: with
# --target-kind tgt this test has nothing to check and passes.
#
#   cli.sh --daemon PATH [--scratch DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/lib.sh"
lib_parse_common "$@"
[ ${#LIB_ARGS[@]} -eq 0 ] || die "unknown option ${LIB_ARGS[0]}"
if [ "$TARGET_KIND" != isergw ]; then
	log "nothing to check for --target-kind $TARGET_KIND"
	exit 0
fi

fail=0
pass() { printf 'PASS %s\n' "$*"; }
flunk() { printf 'FAIL %s\n' "$*"; fail=1; }

# run_daemon OUTFILE ARGS...: isergwd with a time limit; prints its status.
run_daemon() {
	local out=$1
	shift
	timeout --kill-after=5 20 "$ISERGWD" "$@" </dev/null >"$out" 2>&1
	echo $?
}

# --help
rc=$(run_daemon "$SCRATCH/help.out" --help)
if [ "$rc" -eq 0 ]; then pass "--help exits 0"; else flunk "--help exits $rc (expected 0)"; fi
missing=()
for opt in --portal --target --lun --size --block-size --chap-user --chap-secret --mutual-user \
	--mutual-secret --acl --config --reactors --log-level --state-dir --ctl-socket \
	--login-timeout --check-config --help --version; do
	grep -q -- "$opt" "$SCRATCH/help.out" || missing+=("$opt")
done
if [ ${#missing[@]} -eq 0 ]; then pass "--help mentions every option"
else flunk "--help does not mention: ${missing[*]}"; fi

# unknown option
rc=$(run_daemon "$SCRATCH/unknown.out" --no-such-option)
if [ "$rc" -eq 78 ] && grep -q -- --no-such-option "$SCRATCH/unknown.out"; then
	pass "unknown option exits 78: $(head -n 1 "$SCRATCH/unknown.out")"
else
	flunk "unknown option: exit $rc (expected 78) with message '$(head -n 1 "$SCRATCH/unknown.out")'"
fi

# bad configuration files: each must fail and name its key path (or line/column)
# bad_config NAME EXPECTED-PATH JSON
bad_config() {
	local name=$1 want=$2 json=$3 f=$SCRATCH/$1.json
	printf '%s\n' "$json" >"$f"
	local rc
	rc=$(run_daemon "$SCRATCH/$name.out" --config "$f" --state-dir "$SCRATCH/state" \
		--ctl-socket "$SCRATCH/ctl.sock")
	if [ "$rc" -ne 78 ]; then
		flunk "config $name: exit status $rc (expected 78, EX_CONFIG)"
	elif grep -qF -- "$want" "$SCRATCH/$name.out"; then
		pass "config $name: exit $rc, message names $want"
	else
		flunk "config $name: exit $rc, message does not name '$want': $(head -n 3 "$SCRATCH/$name.out")"
	fi
}
iqn=iqn.2026-11.org.isergw:cli
img=$SCRATCH/cli.img
bad_config lun-no-path "targets[0].luns[0].path" \
	"{\"portals\":[{\"url\":\"tcp://127.0.0.6:3331\"}],\"targets\":[{\"iqn\":\"$iqn\",\"luns\":[{\"lun\":0}]}]}"
bad_config bad-portal "portals[0].url" \
	"{\"portals\":[{\"url\":\"udp://nowhere\"}],\"targets\":[{\"iqn\":\"$iqn\",\"luns\":[{\"lun\":0,\"path\":\"$img\",\"size\":\"16M\"}]}]}"
bad_config wrong-type "targets[0].queue_depth" \
	"{\"portals\":[{\"url\":\"tcp://127.0.0.6:3331\"}],\"targets\":[{\"iqn\":\"$iqn\",\"queue_depth\":\"deep\",\"luns\":[{\"lun\":0,\"path\":\"$img\",\"size\":\"16M\"}]}]}"
bad_config not-json "column" '{"portals": [ {"url": '

# a good configuration passes --check-config
good=$SCRATCH/good.json
printf '{"portals":[{"url":"tcp://127.0.0.6:3331"}],"targets":[{"iqn":"%s","luns":[{"lun":0,"path":"%s","size":"16M"}]}]}\n' \
	"$iqn" "$img" >"$good"
rc=$(run_daemon "$SCRATCH/good.out" --config "$good" --check-config --state-dir "$SCRATCH/state" \
	--ctl-socket "$SCRATCH/ctl.sock")
if [ "$rc" -eq 0 ]; then pass "a valid configuration passes --check-config"
else flunk "a valid configuration fails --check-config (exit $rc): $(head -n 3 "$SCRATCH/good.out")"; fi

# --config together with quick-serve options is refused
rc=$(run_daemon "$SCRATCH/mixed.out" --config "$good" --lun "$img")
if [ "$rc" -eq 78 ]; then pass "--config with --lun refused (exit $rc)"
else flunk "--config with --lun: exit $rc (expected 78)"; fi
# a file that is not there
rc=$(run_daemon "$SCRATCH/missing.out" --config "$SCRATCH/no-such.json")
if [ "$rc" -eq 78 ] && grep -qF "$SCRATCH/no-such.json" "$SCRATCH/missing.out"; then
	pass "a missing configuration file: exit 78, named"
else flunk "a missing configuration file: exit $rc (expected 78): $(head -n 2 "$SCRATCH/missing.out")"; fi

if [ "$fail" -ne 0 ]; then
	log "FAILED (outputs in $SCRATCH)"
	exit 1
fi
log "all cli checks passed"
