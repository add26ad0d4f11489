#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Line and branch coverage of each fuzz target's corpus over the files it is
# there to exercise (llvm-cov), for the campaign table of docs/testing.md.
#
#   tests/fuzz/coverage.sh [--build DIR] [--corpus-from FUZZ-BUILD] [--no-build] [TARGET...]
#
#   --build DIR        the coverage tree (default: build-fuzz-cov beside the
#                      sources): clang, -DISERGW_FUZZ=ON plus
#                      -fprofile-instr-generate -fcoverage-mapping
#   --corpus-from DIR  the fuzz tree whose grown corpora to replay
#                      (DIR/fuzz-work/TARGET/corpus; default: build-fuzz)
#   TARGET...          default: every tests/fuzz/fuzz_*.c
#
# Each target replays its seeds, its regression inputs and the grown corpus
# once (-runs=0); the files measured are those its "// COVERS:" line names
# (paths from the source root). Prints one table row per target:
#   | target | inputs | files | lines covered | branches covered |
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
fz=$src/tests/fuzz
build=$src/build-fuzz-cov
corpus_from=$src/build-fuzz
do_build=1
targets=()
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--corpus-from) corpus_from=$2; shift 2 ;;
	--no-build) do_build=0; shift ;;
	-h|--help) sed -n '4,19p' "$0"; exit 0 ;;
	-*) echo "coverage.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) targets+=("$1"); shift ;;
	esac
done
if [ ${#targets[@]} -eq 0 ]; then
	for f in "$fz"/fuzz_*.c; do
		t=${f##*/}
		targets+=("${t%.c}")
	done
fi
for tool in llvm-profdata llvm-cov; do
	command -v "$tool" >/dev/null || { echo "coverage.sh: $tool not found (Debian: llvm)" >&2; exit 2; }
done

if [ "$do_build" -eq 1 ]; then
	if [ ! -f "$build/CMakeCache.txt" ]; then
		CC=${CC:-clang} cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
			-DISERGW_FUZZ=ON -DCMAKE_C_FLAGS="-fprofile-instr-generate -fcoverage-mapping" \
			-DCMAKE_EXE_LINKER_FLAGS="-fprofile-instr-generate" >"$build.cmake.log" 2>&1 || {
			cat "$build.cmake.log" >&2
			exit 2
		}
	else
		# a target added since the tree was configured needs a new glob
		cmake "$build" >"$build.cmake.log" 2>&1 || { cat "$build.cmake.log" >&2; exit 2; }
	fi
	cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$build.build.log" 2>&1 || {
		tail -n 30 "$build.build.log" >&2
		exit 2
	}
fi

export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
echo "| target | inputs | files | lines covered | branches covered |"
echo "|---|---:|---|---:|---:|"
for t in "${targets[@]}"; do
	bin=$build/tests/fuzz/$t
	out=$build/fuzz-cov/$t
	rm -rf "$out"
	mkdir -p "$out/inputs"
	covers=$(sed -n 's|^// COVERS:[[:space:]]*||p' "$fz/$t.c" | head -n 1)
	# every input once: the seeds, the regression inputs, the grown corpus
	for d in "$fz/corpus/$t" "$fz/regress/$t" "$corpus_from/fuzz-work/$t/corpus"; do
		[ -d "$d" ] && find "$d" -maxdepth 1 -type f -exec cp -t "$out/inputs" {} + 2>/dev/null
	done
	n=$(find "$out/inputs" -type f | wc -l)
	LLVM_PROFILE_FILE="$out/%p.profraw" "$bin" -runs=0 -timeout=30 "$out/inputs" \
		>"$out/replay.log" 2>&1
	llvm-profdata merge -sparse "$out"/*.profraw -o "$out/$t.profdata" 2>>"$out/replay.log" || {
		echo "| $t | $n | ${covers:-?} | no profile | |"
		continue
	}
	# a row: file regions missed cover functions missed executed lines missed cover
	# branches missed cover; the files are matched by their ends (a ccache base_dir
	# makes the recorded paths relative)
	read -r lines lmiss branches bmiss < <(llvm-cov report "$bin" -instr-profile="$out/$t.profdata" \
		2>/dev/null | awk -v want="$covers" '
		BEGIN { n = split(want, w, " ") }
		NF >= 13 && $1 != "TOTAL" {
			for (i = 1; i <= n; i++) {
				f = w[i]
				if ($1 == f || substr($1, length($1) - length(f)) == "/" f) {
					l += $8; lm += $9; b += $11; bm += $12
				}
			}
		}
		END { print l + 0, lm + 0, b + 0, bm + 0 }')
	lpct=$(awk -v a="${lines:-0}" -v m="${lmiss:-0}" 'BEGIN { printf "%.1f", a ? 100 * (a - m) / a : 0 }')
	bpct=$(awk -v a="${branches:-0}" -v m="${bmiss:-0}" 'BEGIN { printf "%.1f", a ? 100 * (a - m) / a : 0 }')
	echo "| \`$t\` | $n | ${covers:-(all)} | $lpct% ($((lines - lmiss))/$lines) | $bpct% ($((branches - bmiss))/$branches) |"
done
