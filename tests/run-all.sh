#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# THE test command of isergw (CI runs exactly this, through .ci/run).
#
#   tests/run-all.sh [-L LABEL-REGEX]... [-j N] [--no-asan] [--no-build]
#
# Builds two trees from the source tree this script lives in and runs ctest
# in both:
#   build/       RelWithDebInfo, -Werror          every test (all labels)
#   build-asan/  ASan + UBSan (-DISERGW_SANITIZE=ON), -Werror
#                                                 labels unit and integration
# (slow labels such as VM or HA suites run in the normal tree only).
# The trees go under $ISERGW_BUILD_ROOT when set (default: the source tree).
# -L is passed to ctest in both trees (the ASan tree still keeps to unit and
# integration). Prints one summary line per tree and exits non-zero if
# anything failed to configure, build or pass.
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
root=${ISERGW_BUILD_ROOT:-$src}
jobs=$(nproc 2>/dev/null || echo 2)
labels=()
asan=1
build=1
while [ $# -gt 0 ]; do
	case "$1" in
	-L) [ $# -ge 2 ] || { echo "run-all.sh: -L needs a label" >&2; exit 2; }
	    labels+=(-L "$2"); shift 2 ;;
	-L*) labels+=(-L "${1#-L}"); shift ;;
	-j) jobs=$2; shift 2 ;;
	-j*) jobs=${1#-j}; shift ;;
	--no-asan) asan=0; shift ;;
	--no-build) build=0; shift ;;
	-h|--help) sed -n '4,18p' "$0"; exit 0 ;;
	*) echo "run-all.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done

# Sanitizer reports must fail the test that triggered them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

summary=()
status=0
t_start=$SECONDS

# run_tree DIR DESCRIPTION "CMAKE-ARGS" CTEST-ARGS...
run_tree() {
	local name=$1 dir=$root/$1 desc=$2 cmargs=$3
	shift 3
	local t0=$SECONDS log
	echo "=== $name ($desc) ==="
	if [ "$build" -eq 1 ]; then
		# shellcheck disable=SC2086 # cmargs is a list of -D options
		if ! cmake -S "$src" -B "$dir" $cmargs; then
			summary+=("$name: FAILED to configure")
			status=1
			return
		fi
		if ! cmake --build "$dir" -j "$jobs"; then
			summary+=("$name: FAILED to build")
			status=1
			return
		fi
	fi
	log=$dir/run-all-ctest.log
	ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" </dev/null 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	local line
	line=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1)
	[ -n "$line" ] || line=$(grep -E 'No tests were found' "$log" | tail -n 1)
	[ -n "$line" ] || line="ctest exit status $rc"
	# time per label (the test name's prefix: unit., integration., ha., ...),
	# summed over its tests (with -j they overlap, so the sums exceed the wall time)
	awk -v tree="$name" '
		/ Test +#[0-9]+: / {
			for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) { t = $(i + 1); break }
			for (i = NF; i > 0; i--) if ($i == "sec") { s = $(i - 1); break }
			split(t, p, "."); n[p[1]]++; sum[p[1]] += s
		}
		END { for (l in sum) printf "run-all: %s: label %-12s %3d tests %7.0f s\n", tree, l, n[l], sum[l] }' \
		"$log" | sort >>"$root/.run-all-labels.$$"
	if [ "$rc" -ne 0 ]; then
		status=1
		local failed
		failed=$(grep -v '(Disabled)' "$log" | sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (.*/\1/p' | paste -sd' ')
		summary+=("$name: FAILED: $line${failed:+ [$failed]} ($((SECONDS - t0)) s)")
	else
		summary+=("$name: OK: $line ($((SECONDS - t0)) s)")
	fi
}

run_tree build "RelWithDebInfo, -Werror" \
	"-DCMAKE_BUILD_TYPE=RelWithDebInfo -DISERGW_WERROR=ON -DISERGW_SANITIZE=OFF" "${labels[@]}"
if [ "$asan" -eq 1 ]; then
	run_tree build-asan "ASan+UBSan, -Werror" \
		"-DCMAKE_BUILD_TYPE=RelWithDebInfo -DISERGW_WERROR=ON -DISERGW_SANITIZE=ON" \
		-L '^(unit|integration)$' "${labels[@]}"
fi

echo
echo "=== time per label (sum of its tests' times) ==="
cat "$root/.run-all-labels.$$" 2>/dev/null
rm -f "$root/.run-all-labels.$$"
echo
echo "=== summary ($((SECONDS - t_start)) s) ==="
for s in "${summary[@]}"; do
	echo "run-all: $s"
done
exit "$status"
