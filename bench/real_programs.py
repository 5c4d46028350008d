# SPDX-License-Identifier: MIT
"""Real programs, bare and under the shim: wall time, alternating runs.

A section of bench/bench.py (the budget: wall time <= 1.02x bare, medians
of 7 alternating runs); also runs alone:
    python3 bench/real_programs.py --build-dir build-bench [--runs 7]
Each program is one whose threads wait the ways the shim interposes:
xz -T2 and sort --parallel=2 (pthread condvars and joins), a Python
thread pool (the GIL's condvar and the pool's locks and queue), a Rust
program using std::sync (futex waits through libc's syscall()).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def make_inputs(tmp):
    data = os.path.join(tmp, "data.txt")
    with open(data, "w") as out:
        # 3 million short lines, text that compresses like logs do.
        for i in range(3_000_000):
            out.write(f"{(i * 2654435761) % 1000003:07d} line {i % 977} of the input\n")
    rust = None
    if shutil.which("rustc"):
        rust = os.path.join(tmp, "rust_sync")
        subprocess.run(["rustc", "-O", "-o", rust, os.path.join(HERE, "programs", "rust_sync.rs")],
                       check=True, capture_output=True)
    return data, rust


def programs(data, rust):
    found = []
    if shutil.which("xz"):
        found.append(("xz -T2", ["xz", "-T2", "-3", "-c", data]))
    found.append(("sort --parallel=2", ["sort", "--parallel=2", "-S", "64M", data]))
    found.append(("Python thread pool", [sys.executable, os.path.join(HERE, "programs", "pool.py"), "3000"]))
    if rust:
        found.append(("Rust std::sync", [rust, "3000"]))
    return found


def wall_time(command, env):
    start = time.monotonic()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.monotonic() - start


def environment(shim):
    env = dict(os.environ)
    for key in ("LD_PRELOAD", "TDSTAT_ENABLE", "TDSTAT_TRACK_READS"):
        env.pop(key, None)
    if shim:
        env["LD_PRELOAD"] = shim
        env["TDSTAT_ENABLE"] = "1"
    return env


def measure(shim, runs, report):
    """report(name, bare_median, tdstat_median, ratio) per program."""
    with tempfile.TemporaryDirectory() as tmp:
        data, rust = make_inputs(tmp)
        bare_env, shim_env = environment(None), environment(shim)
        for name, command in programs(data, rust):
            wall_time(command, bare_env)  # warm the page cache
            bare, tdstat, ratios = [], [], []
            for _ in range(runs):
                b = wall_time(command, bare_env)
                t = wall_time(command, shim_env)
                bare.append(b)
                tdstat.append(t)
                ratios.append(t / b)
            report(name, statistics.median(bare), statistics.median(tdstat), statistics.median(ratios))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build-bench")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    shim = os.path.join(os.path.abspath(args.build_dir), "runtime", "libtdshim.so")
    print("| program | bare | tdstat | ratio (median of per-round) | goal |")
    print("| --- | --- | --- | --- | --- |")
    measure(shim, args.runs, lambda name, b, t, r: print(
        f"| {name} | {b:.3f} s | {t:.3f} s | {r:.3f}x | <= 1.02x {'yes' if r <= 1.02 else '**NO**'} |",
        flush=True))


if __name__ == "__main__":
    main()
