#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds tests/fuzz with clang and runs the libc_db fuzzer for a bounded
# time over the seed corpus; fails on any crash, hang, leak or oversized
# allocation.  Then replays the corpus through the coverage build.
#   run-fuzz.sh SOURCE_DIR BUILD_DIR
# TDSTAT_FUZZ_SECONDS overrides the time (60 with CI=true, else 300).
# Exit 77 (CTest: skipped) when clang or libFuzzer is missing.
set -euo pipefail
source_dir=$1
build_dir=$2
seconds=${TDSTAT_FUZZ_SECONDS:-}
if [[ -z "$seconds" ]]; then
	if [[ -n "${CI:-}" && "${CI:-}" != false && "${CI:-}" != 0 ]]; then seconds=60; else seconds=300; fi
fi

if ! command -v clang >/dev/null; then
	echo "fuzz: clang not found: skipped (scripts/install-deps.sh installs it)"
	exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > "$probe/p.c"
if ! clang -fsanitize=fuzzer,address "$probe/p.c" -o "$probe/p" 2>/dev/null; then
	echo "fuzz: clang has no libFuzzer (libclang-rt-*-dev): skipped"
	exit 77
fi

cmake -S "$source_dir/tests/fuzz" -B "$build_dir" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build_dir" -j"$(nproc)" >/dev/null
mkdir -p "$build_dir/corpus" "$build_dir/artifacts"
cp -n "$source_dir"/tests/fuzz/corpus/* "$build_dir/corpus/" 2>/dev/null || true

echo "fuzz: running fuzz_agent for $seconds s"
status=0
"$build_dir/fuzz_agent" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=256 \
	-print_final_stats=1 -detect_leaks=1 -artifact_prefix="$build_dir/artifacts/" \
	"$build_dir/corpus" 2>"$build_dir/fuzz.log" || status=$?
grep -E '^(stat::|#[0-9]+ +DONE|INFO: (Loaded|seed))' "$build_dir/fuzz.log" || true
if [[ $status -ne 0 ]]; then
	echo "fuzz: FAILED (status $status); the log's end and the artifacts:"
	tail -40 "$build_dir/fuzz.log"
	ls -l "$build_dir/artifacts"
	exit 1
fi

# Coverage of libc_db reached by the corpus (best effort).
profdata=$(command -v llvm-profdata || command -v llvm-profdata-14 || true)
cov=$(command -v llvm-cov || command -v llvm-cov-14 || true)
if [[ -n "$profdata" && -n "$cov" ]]; then
	rm -f "$build_dir"/cov-*.profraw
	LLVM_PROFILE_FILE="$build_dir/cov-%p.profraw" "$build_dir/fuzz_agent_cov" -runs=0 "$build_dir/corpus" \
		>/dev/null 2>&1 || true
	"$profdata" merge -sparse "$build_dir"/cov-*.profraw -o "$build_dir/cov.profdata"
	echo "fuzz: coverage of dbagent/libc_db by the corpus ($(ls "$build_dir/corpus" | wc -l) inputs):"
	"$cov" report "$build_dir/fuzz_agent_cov" -instr-profile="$build_dir/cov.profdata" \
		"$source_dir/dbagent/libc_db" | tail -n 20
fi
echo "fuzz: passed"
