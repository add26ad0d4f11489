# SPDX-License-Identifier: Apache-2.0
# Shared by tests/deploy/*.sh (sourced).
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEBS=$SRC/build/debs
CACHE=${ISERGW_TEST_CACHE:-/var/cache/isergw-test}
T0=$SECONDS

say() { printf '[%4ds] %s\n' $((SECONDS - T0)) "$*"; }
fail() { say "FAIL: $*"; exit 1; }
# Exit 77 (skipped) when something this machine lacks is missing, unless the
# run must not skip (CI).
skip() {
	if [ "${CI:-}" = true ] || [ "${ISERGW_DEPLOY_REQUIRE:-0}" = 1 ]; then
		fail "$* (required: CI=true or ISERGW_DEPLOY_REQUIRE=1)"
	fi
	say "SKIP: $*"
	exit 77
}
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }
need_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || skip "$t missing (deploy/install-deps.sh)"
	done
}
# systemd-nspawn on a machine whose PID 1 is not systemd: no registration
# with machined and no scope unit (both need the host's systemd), an
# overlay on tmpfs over the cached root so that it stays clean.
NSPAWN=(systemd-nspawn --quiet --register=no --keep-unit --volatile=overlay)
