#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Run the libFuzzer targets of tests/fuzz.
#
#   tests/fuzz/run.sh [--build DIR] [--seconds N | --runs N] [--no-build] [--jobs N]
#                     [--quiet] [TARGET...]
#
#   --build DIR   the fuzz build tree (default: build-fuzz beside the sources, or
#                 $ISERGW_FUZZ_BUILD); configured with clang and -DISERGW_FUZZ=ON
#                 when it has no CMakeCache.txt yet, then the targets are built
#   --seconds N   fuzz each target for N seconds (default 30)
#   --runs N      or stop each target after N executions (a campaign: --runs 10000000)
#   --no-build    do not configure or build (ctest runs it so)
#   TARGET...     default: every tests/fuzz/fuzz_*.c
#
# For each target: the regression inputs (tests/fuzz/regress/TARGET/, each a crash
# once found and fixed) are replayed, then the target fuzzes from its seed corpus
# (tests/fuzz/corpus/TARGET/) and the corpus it grew before, kept in
# DIR/fuzz-work/TARGET/corpus. A crash, a leak, a timeout, an out-of-memory or a
# sanitizer report stops that target and counts as a crash; its input is left in
# DIR/fuzz-work/TARGET/ (crash-*, leak-*, timeout-*, oom-*) and its report printed.
# One line per target, then as the last line:
#   fuzz: T targets, E execs, C crashes
# Exit status 0 when C is 0, 1 otherwise, 2 for bad usage or a failed build.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
fz=$src/tests/fuzz
build=${ISERGW_FUZZ_BUILD:-$src/build-fuzz}
seconds=30
runs=
do_build=1
jobs=$(nproc 2>/dev/null || echo 2)
targets=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--seconds) seconds=$2; runs=; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--no-build) do_build=0; shift ;;
	--jobs) jobs=$2; shift 2 ;;
	-h|--help) sed -n '4,25p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) targets+=("$1"); shift ;;
	esac
done
case "$seconds" in ''|*[!0-9]*) echo "run.sh: --seconds wants a number" >&2; exit 2 ;; esac
case "$runs" in *[!0-9]*) echo "run.sh: --runs wants a number" >&2; exit 2 ;; esac
if [ ${#targets[@]} -eq 0 ]; then
	for f in "$fz"/fuzz_*.c; do
		[ -e "$f" ] || continue
		t=${f##*/}
		targets+=("${t%.c}")
	done
fi
for t in "${targets[@]}"; do
	if [ ! -f "$fz/$t.c" ]; then
		echo "run.sh: no target $t (no tests/fuzz/$t.c)" >&2
		exit 2
	fi
done

if [ "$do_build" -eq 1 ]; then
	if [ ! -f "$build/CMakeCache.txt" ]; then
		CC=${CC:-clang} cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
			-DISERGW_FUZZ=ON >"$build.cmake.log" 2>&1 || {
			cat "$build.cmake.log" >&2
			echo "run.sh: configuring $build failed" >&2
			exit 2
		}
	else
		# a target added since the tree was configured needs a new glob
		cmake "$build" >"$build.cmake.log" 2>&1 || { cat "$build.cmake.log" >&2; exit 2; }
	fi
	cmake --build "$build" -j "$jobs" --target "${targets[@]}" || {
		echo "run.sh: building the targets failed" >&2
		exit 2
	}
fi

# leaks are crashes; a sanitizer report aborts (libFuzzer then keeps the input)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

total_execs=0
total_crashes=0
for t in "${targets[@]}"; do
	bin=$build/tests/fuzz/$t
	work=$build/fuzz-work/$t
	mkdir -p "$work/corpus"
	if [ ! -x "$bin" ]; then
		echo "$t: not built ($bin)"
		total_crashes=$((total_crashes + 1))
		continue
	fi
	opts=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "-artifact_prefix=$work/")
	[ -f "$fz/dict/$t.dict" ] && opts+=("-dict=$fz/dict/$t.dict")
	if [ -f "$fz/$t.options" ]; then
		while read -r line; do
			case "$line" in ''|'#'*) continue ;; esac
			opts+=("$line")
		done <"$fz/$t.options"
	fi
	crashes=0 execs=0
	# 1. the regression inputs, each executed once
	regress=()
	if [ -d "$fz/regress/$t" ]; then
		for f in "$fz/regress/$t"/*; do
			[ -f "$f" ] && regress+=("$f")
		done
	fi
	if [ ${#regress[@]} -gt 0 ]; then
		if ! "$bin" "${opts[@]}" "${regress[@]}" >"$work/regress.log" 2>&1; then
			echo "$t: a regression input fails again:"
			grep -aE '^Running: |ERROR|SUMMARY' "$work/regress.log" | tail -n 5 | sed 's/^/  /'
			crashes=1
		fi
		execs=${#regress[@]}
	fi
	# 2. fuzzing from the grown corpus and the seeds
	seeds=()
	[ -d "$fz/corpus/$t" ] && seeds+=("$fz/corpus/$t")
	if [ -n "$runs" ]; then
		limit=("-runs=$runs")
	else
		limit=("-max_total_time=$seconds")
	fi
	"$bin" "${opts[@]}" "${limit[@]}" "$work/corpus" "${seeds[@]}" >"$work/fuzz.log" 2>&1
	rc=$?
	n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log" | tail -n 1)
	cov=$(grep -aoE 'cov: [0-9]+ ft: [0-9]+' "$work/fuzz.log" | tail -n 1)
	execs=$((execs + ${n:-0}))
	if [ "$rc" -ne 0 ]; then
		crashes=$((crashes + 1))
		art=$(grep -aoE "Test unit written to [^ ]+" "$work/fuzz.log" | tail -n 1)
		echo "$t: exit status $rc; ${art:-no input written}"
		grep -aE 'ERROR: |SUMMARY: |^    #[0-9] ' "$work/fuzz.log" | head -n 12 | sed 's/^/  /'
	fi
	echo "$t: ${n:-0} execs (${rate:-0}/s), ${cov:-cov: ?}, corpus $(find "$work/corpus" -type f | wc -l), ${#regress[@]} regression inputs, $crashes crashes"
	total_execs=$((total_execs + execs))
	total_crashes=$((total_crashes + crashes))
done
echo "fuzz: ${#targets[@]} targets, $total_execs execs, $total_crashes crashes"
[ "$total_crashes" -eq 0 ]
