#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# THE test command of isergw (CI runs exactly this, through .ci/run).
#
#   tests/run-all.sh [-L LABEL-REGEX]... [-j N] [--no-asan] [--no-tsan] [--tsan]
#                    [--no-build]
#
# Builds the trees from the source tree this script lives in and runs ctest
# in each:
#   build/       gcc, RelWithDebInfo, -Werror          every test (all labels)
#   build-asan/  clang, ASan + UBSan and the libFuzzer targets
#                (-DISERGW_FUZZ=ON), -Werror            labels unit, integration, fuzz
#   build-tsan/  gcc, ThreadSanitizer (-DISERGW_SANITIZE=thread), -Werror
#                                                       labels unit, integration
#                                                       but the libiscsi conformance
#                                                       suites (--tsan: all of them,
#                                                       and api, the HA bed's)
# (slow labels such as VM or HA suites run in the normal tree only).
# As root, build-asan and then build-tsan run beside build's tests (one test
# at a time, in a network namespace of its own, so that the trees' tests,
# which use the same loopback addresses, ports, netns names and tgtd control
# sockets, never meet); otherwise after them. --tsan runs the TSan tree's api
# label too (the HA bed's isergw-api tests, in the host's namespaces), after
# the rest. The trees go under $ISERGW_BUILD_ROOT when set (default: the
# source tree). -L is passed to ctest in every tree (the sanitizer trees still
# keep to their labels). Prints the time per label, each tree's 8 slowest
# tests and one summary line per tree, and exits non-zero if anything failed
# to configure, build or pass.
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
root=${ISERGW_BUILD_ROOT:-$src}
jobs=$(nproc 2>/dev/null || echo 2)
labels=()
asan=1
tsan=1
tsan_api=0
tsan_all=0
build=1
while [ $# -gt 0 ]; do
	case "$1" in
	-L) [ $# -ge 2 ] || { echo "run-all.sh: -L needs a label" >&2; exit 2; }
	    labels+=(-L "$2"); shift 2 ;;
	-L*) labels+=(-L "${1#-L}"); shift ;;
	-j) jobs=$2; shift 2 ;;
	-j*) jobs=${1#-j}; shift ;;
	--no-asan) asan=0; shift ;;
	--no-tsan) tsan=0; shift ;;
	--tsan) tsan=1; tsan_api=1; tsan_all=1; shift ;;
	--no-build) build=0; shift ;;
	-h|--help) sed -n '4,29p' "$0"; exit 0 ;;
	*) echo "run-all.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done

# Sanitizer reports must fail the test that triggered them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:second_deadlock_stack=1${ISERGW_TSAN_SUPP:+:suppressions=$ISERGW_TSAN_SUPP}}

out=$root/.run-all.$$
rm -rf "$out"
mkdir -p "$out"
trap 'rm -rf "$out"' EXIT
t_start=$SECONDS

# say TREE LINE: one summary line of a tree (kept in a file: a tree may run
# in the background)
say() { echo "$1: $2" >>"$out/summary"; }

# build_tree DIR DESCRIPTION "CMAKE-ARGS" [ENV...]: configure and build
build_tree() {
	local name=$1 dir=$root/$1 desc=$2 cmargs=$3
	shift 3
	echo "=== $name ($desc): building ==="
	[ "$build" -eq 1 ] || return 0
	# shellcheck disable=SC2086 # cmargs is a list of -D options
	if ! env "$@" cmake -S "$src" -B "$dir" $cmargs; then
		say "$name" "FAILED to configure"
		return 1
	fi
	if ! cmake --build "$dir" -j "$jobs"; then
		say "$name" "FAILED to build"
		return 1
	fi
}

# test_tree DIR JOBS CTEST-ARGS...: ctest in the tree ($wrap before it), its
# output on stdout and in DIR/run-all-ctest.log
wrap=()
test_tree() {
	local name=$1 dir=$root/$1 j=$2 t0=$SECONDS log rc line failed
	shift 2
	log=$dir/run-all-ctest.log
	"${wrap[@]}" ctest --test-dir "$dir" --output-on-failure -j "$j" "$@" </dev/null 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
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
		"$log" | sort >>"$out/labels"
	# the slowest tests of the tree, for the summary (what to trim first)
	awk -v tree="$name" '
		/ Test +#[0-9]+: / {
			for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) { t = $(i + 1); break }
			for (i = NF; i > 0; i--) if ($i == "sec") { s = $(i - 1); break }
			printf "%8.0f s  %s: %s\n", s, tree, t
		}' "$log" | sort -rn | head -n 8 >>"$out/slowest"
	if [ "$rc" -ne 0 ]; then
		failed=$(grep -v '(Disabled)' "$log" | sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (.*/\1/p' | paste -sd' ')
		say "$name" "FAILED: $line${failed:+ [$failed]} ($((SECONDS - t0)) s of tests)"
		return 1
	fi
	say "$name" "OK: $line ($((SECONDS - t0)) s of tests)"
}

# The ASan tree: clang, for its libFuzzer targets (run.sh's build, the fuzz label)
ASAN_DESC="clang, ASan+UBSan, fuzz targets, -Werror"
ASAN_ARGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DISERGW_WERROR=ON -DISERGW_FUZZ=ON"
asan_tree() {
	build_tree build-asan "$ASAN_DESC" "$ASAN_ARGS" CC=clang || return 1
	echo "=== build-asan: testing ==="
	test_tree build-asan "$1" -L '^(unit|integration|fuzz)$' "${labels[@]}"
}
TSAN_DESC="gcc, TSan, -Werror"
TSAN_ARGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DISERGW_WERROR=ON -DISERGW_SANITIZE=thread"
# The libiscsi conformance suites run in the normal and ASan trees; under
# TSan they take a third of the tree's time and drive the same reactor paths
# as the other integration tests, so the default run leaves them out and
# --tsan runs them too.
tsan_skip=(-E '^integration\.(conformance|forward-conformance|forward-conformance-isergw|cluster-conformance)$')
# tsan_tree JOBS LABEL-REGEX [CTEST-ARGS...]
tsan_tree() {
	local j=$1 l=$2
	shift 2
	build_tree build-tsan "$TSAN_DESC" "$TSAN_ARGS" || return 1
	echo "=== build-tsan: testing ==="
	test_tree build-tsan "$j" -L "$l" "$@" "${labels[@]}"
}

# beside: root can give the sanitizer trees a network namespace (their own
# loopback) and a mount namespace (their own /run/netns for the tests that
# name netns, their own /run/tgtd for tgtd's control sockets)
beside=0
if { [ "$asan" -eq 1 ] || [ "$tsan" -eq 1 ]; } && [ "$(id -u)" -eq 0 ] &&
	command -v unshare >/dev/null && unshare --net --mount true 2>/dev/null; then
	beside=1
fi
sanitizer_trees() { # JOBS
	local rc=0
	if [ "$asan" -eq 1 ]; then asan_tree "$1" || rc=1; fi
	if [ "$tsan" -eq 1 ]; then tsan_tree "$1" '^(unit|integration)$' "${tsan_skip[@]}" || rc=1; fi
	return "$rc"
}

[ "$tsan_all" -eq 0 ] || tsan_skip=()
status=0
if build_tree build "gcc, RelWithDebInfo, -Werror" \
	"-DCMAKE_BUILD_TYPE=RelWithDebInfo -DISERGW_WERROR=ON -DISERGW_SANITIZE=OFF"; then
	bg=
	if [ "$beside" -eq 1 ]; then
		echo "=== sanitizer trees: building and testing beside build (log: $out/beside.log) ==="
		(
			wrap=(unshare --net --mount --propagation private bash -c
				'ip link set lo up && for d in /run/netns /run/tgtd; do
					mkdir -p $d && mount -t tmpfs tmpfs $d || exit 1; done && exec "$@"' _)
			sanitizer_trees 1
		) >"$out/beside.log" 2>&1 &
		bg=$!
	fi
	echo "=== build: testing ==="
	test_tree build "$jobs" "${labels[@]}" || status=1
	if [ -n "$bg" ]; then
		wait "$bg" || status=1
		echo "=== sanitizer trees (they ran beside build) ==="
		cat "$out/beside.log"
	fi
else
	status=1
fi
if [ "$beside" -eq 0 ]; then
	sanitizer_trees "$jobs" || status=1
fi
if [ "$tsan_api" -eq 1 ]; then
	echo "=== build-tsan: the api label (HA bed) ==="
	test_tree build-tsan "$jobs" -L '^api$' "${labels[@]}" || status=1
fi
# a tree that failed to configure or build said so; any FAILED line fails the run
grep -q FAILED "$out/summary" 2>/dev/null && status=1

echo
echo "=== time per label (sum of its tests' times) ==="
cat "$out/labels" 2>/dev/null
echo
echo "=== the slowest tests of each tree ==="
cat "$out/slowest" 2>/dev/null
echo
echo "=== summary ($((SECONDS - t_start)) s) ==="
sed 's/^/run-all: /' "$out/summary"
exit "$status"
