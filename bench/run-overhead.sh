#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shim overhead, side by side: each micro-benchmark runs bare and
# preloaded, alternating (A B A B ...), pinned to one CPU, RUNS times;
# prints the medians and their ratio.
#   bench/run-overhead.sh [BUILD_DIR] [RUNS] [NAME...]
set -euo pipefail
build=${1:-build}
runs=${2:-7}
shift 2 2>/dev/null || shift $#
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(mutex rwlock sem handoff condvar sempingpong create)
bench=$build/bench/microbench
shim=$(realpath "$build/runtime/libtdshim.so")
cpu=${TDSTAT_BENCH_CPU:-0}

median() { sort -g | awk '{v[NR]=$1} END{ if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2 }'; }

printf '%-12s %12s %12s %8s\n' benchmark "bare ns/op" "shim ns/op" ratio
for name in "${names[@]}"; do
	bare=() shimmed=()
	for ((i = 0; i < runs; i++)); do
		bare+=("$(taskset -c "$cpu" "$bench" "$name" | awk '{print $2}')")
		shimmed+=("$(LD_PRELOAD=$shim taskset -c "$cpu" "$bench" "$name" | awk '{print $2}')")
	done
	b=$(printf '%s\n' "${bare[@]}" | median)
	s=$(printf '%s\n' "${shimmed[@]}" | median)
	printf '%-12s %12.2f %12.2f %8.3f\n' "$name" "$b" "$s" "$(echo "$s / $b" | bc -l)"
done
