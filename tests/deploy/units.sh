#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The shipped systemd units (deploy/systemd/*.service, what the isergw
# package installs) against what docs/packaging.md promises about restarts
# and reloads; no root, no container, a second or so:
#   - every unit restarts on failure but not on exit status 78 (EX_CONFIG,
#     the daemons' "configuration refused"): RestartPreventExitStatus= lists
#     78 in its [Service] section;
#   - a unit with ExecReload= waits for the reload's result (no bare
#     `kill -HUP $MAINPID`, which exits 0 whatever the daemon makes of it);
#   - with systemd-analyze, `systemd-analyze verify` finds nothing in the
#     units themselves (lines about the host's own leftovers, such as
#     /run/systemd/nspawn/propagate, or about binaries not installed here are
#     not the units' fault and are left out).
#
#   units.sh [DIR]      (default: deploy/systemd of this tree)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-$here/../../deploy/systemd}
fails=0
ok() { printf 'ok   %s\n' "$*"; }
bad() { printf 'FAIL %s\n' "$*"; fails=$((fails + 1)); }

# service_key FILE KEY: the values of KEY= in FILE's [Service] section, one a line
service_key() {
	awk -v k="$2" '
		/^\[/ { sec = $0; next }
		sec == "[Service]" && index($0, k "=") == 1 { print substr($0, length(k) + 2) }
	' "$1"
}

units=("$DIR"/*.service)
[ -e "${units[0]}" ] || { echo "no units in $DIR" >&2; exit 1; }
for u in "${units[@]}"; do
	name=${u##*/}
	if ! service_key "$u" Restart | grep -qx 'on-failure'; then
		bad "$name: Restart= is not on-failure"
	fi
	if service_key "$u" RestartPreventExitStatus | tr ' ' '\n' | grep -qx 78; then
		ok "$name: RestartPreventExitStatus= has 78"
	else
		bad "$name: no RestartPreventExitStatus=78 in [Service] (a configuration error would restart for ever)"
	fi
done
reload=$(service_key "$DIR/isergwd.service" ExecReload)
if [ -z "$reload" ]; then
	bad "isergwd.service: no ExecReload="
elif printf '%s\n' "$reload" | grep -Eq '(^|/)kill '; then
	bad "isergwd.service: ExecReload=$reload does not wait for the reload's result"
else
	ok "isergwd.service: ExecReload=$reload"
fi

if command -v systemd-analyze >/dev/null; then
	out=$(systemd-analyze verify --man=no "${units[@]}" 2>&1 |
		grep -v -e '/run/systemd/nspawn/propagate' -e 'is not executable' \
			-e 'Command .* is not executable' -e 'No such file or directory' \
			-e 'corosync.service' -e 'pacemaker.service' -e 'network-online.target')
	if [ -z "$out" ]; then ok "systemd-analyze verify: nothing to say about the units"
	else bad "systemd-analyze verify: $out"; fi
fi

if [ "$fails" -ne 0 ]; then
	echo "units.sh: $fails check(s) failed" >&2
	exit 1
fi
echo "units.sh: all checks passed"
