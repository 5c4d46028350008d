#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages tdstat needs to build and test, skipping
# those already present.  Idempotent; safe to run on every build.
#   scripts/install-deps.sh          build and test dependencies
#   scripts/install-deps.sh --bench  also what the benchmarks compare with
set -euo pipefail

packages=(gcc make cmake pkg-config liburcu-dev libcriterion-dev mandoc
          # tdstat -w and -t: the target's symbol tables (elfutils)
          libdw-dev
          # tests/tdstat tables_formats: the OpenMetrics parser
          python3-prometheus-client
          python3 perl xz-utils zstd coreutils procps
          # libtdstat_core maps core files with elfutils (libdw-dev above);
          # tests/debugger drives gdb and gcore (docs/DESIGN.md, "Core files and gdb")
          gdb
          # tests/reliability: real threaded programs, the fuzzer, helgrind
          pigz stress-ng sysbench tar findutils bash
          # tests/runtime break13_foreign_unwinder: a program linked with
          # the nongnu libunwind, cancelled in the shim's waits
          libunwind8
          clang libclang-rt-14-dev llvm valgrind
          # tests/accuracy: the same shapes in C++20, Rust and Java
          g++ rustc default-jdk-headless
          # tdstat serve (HTTP) and run --plot (PNG, SVG)
          libmicrohttpd-dev libcairo2-dev
          # tests/fleet: a real Prometheus and its client's parsers
          prometheus python3-prometheus-client)
if [[ "${1:-}" == "--bench" ]]; then
	packages+=(hyperfine linux-perf sysstat)
fi

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
	sudo=sudo
else
	sudo=
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
