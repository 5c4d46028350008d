#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the benchmarks in their own tree and runs them all; prints one
# table (bench/README.md explains it).
#   ./bench/run-all.sh                              the full run (~8 min)
#   ./bench/run-all.sh --smoke                      a seconds-long version
#   ./bench/run-all.sh --markdown bench/RESULTS.md  also write the results file
# Other options go to bench/bench.py (--runs N, --only SECTIONS,
# --wait-for-quiet SECONDS); TDSTAT_BENCH_BUILD_DIR names the tree
# (default build-bench).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --bench
# LTTng-UST's pthread wrapper is one of the alternatives compared; the
# run goes on without it.
if ! dpkg-query -W -f='${Status}' liblttng-ust1 2>/dev/null | grep -q "install ok installed"; then
	sudo=; [[ $(id -u) -eq 0 ]] || sudo=sudo
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
		liblttng-ust1 >/dev/null || echo "run-all: liblttng-ust1 not installed: LTTng rows skipped" >&2
fi

build=${TDSTAT_BENCH_BUILD_DIR:-build-bench}
cmake -S . -B "$build" -DTDSTAT_BUILD_BENCH=ON -DTDSTAT_BUILD_TESTS=OFF \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
exec python3 bench/bench.py --build-dir "$build" --command "./bench/run-all.sh $*" "$@"
