# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# ThreadSanitizer reports (the TSan tree, -DISERGW_SANITIZE=thread), for
# the test scripts' exit traps (tests/integration/lib.sh, tests/ha/bed.sh).
# A race report need not stop the process that found it, nor change what a
# client sees: whatever a script checks, a report that a process it started
# wrote into a file of its scratch directory during the run (a daemon's log,
# a client's output) fails the script. (ASan and UBSan reports abort the
# process: its exit status already fails the test.)
#
#   tsan_scan_start DIR    marks the start of the run (DIR/.tsan-scan-start)
#   tsan_scan DIR          prints the reports in DIR's files written since
#                          the mark (on stderr); 1 if there is one

tsan_scan_start() { : >"$1/.tsan-scan-start"; }

tsan_scan() {
	local dir=$1 f found=0
	[ -n "$dir" ] && [ -f "$dir/.tsan-scan-start" ] || return 0
	while IFS= read -r -d '' f; do
		if grep -I -q 'WARNING: ThreadSanitizer' "$f" 2>/dev/null; then
			printf '%s: ThreadSanitizer report in %s:\n' "${0##*/}" "$f" >&2
			grep -m5 -E 'WARNING: ThreadSanitizer|SUMMARY: ThreadSanitizer' "$f" >&2
			found=1
		fi
	done < <(find "$dir" -type f -newer "$dir/.tsan-scan-start" -size -64M -print0 2>/dev/null)
	return "$found"
}
