#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs every tdstat benchmark against one build tree and prints one table.

    bench/bench.py --build-dir DIR [--runs N] [--smoke] [--markdown FILE]
                   [--only SECTION,...] [--wait-for-quiet SECONDS]

Every figure is measured side by side in this run: the variants of a
comparison alternate (A B A B ...) and the table shows medians of --runs
runs (default 13, at least 5); ratios are medians of the per-round ratios.  bench/run-all.sh builds the tree first;
bench/README.md explains each row.
"""
import argparse
import datetime
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# tests/accuracy's harness measures the shapes in every runtime; imported
# without leaving bytecode in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "accuracy"))
import accuracy  # noqa: E402

SECTIONS = ("overhead", "instructions", "cycles", "scaling", "reader", "accuracy", "programs", "alternatives")
LTTNG_WRAPPER = "liblttng-ust-pthread-wrapper.so.1"


def log(message):
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def median(values):
    return statistics.median(values)


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


class Medians(dict):
    """Each variant's median, and ratios between variants: the median of
    the per-round ratios, each of two runs made one right after the other,
    which cancels the drift of a shared machine's load better than a
    ratio of medians."""

    def __init__(self, results):
        super().__init__((v, median(r)) for v, r in results.items())
        self.results = results

    def ratio(self, variant, base):
        return median(b / a for a, b in zip(self.results[base], self.results[variant]))


class Bench:
    def __init__(self, args):
        self.args = args
        build = os.path.abspath(args.build_dir)
        self.accuracy_manifest = os.path.join(build, "tests", "accuracy", "manifest.json")
        self.microbench = os.path.join(build, "bench", "microbench")
        self.workload = os.path.join(build, "bench", "bench-workload")
        self.agentbench = os.path.join(build, "bench", "agentbench")
        self.shim = os.path.join(build, "runtime", "libtdshim.so")
        self.naive = os.path.join(build, "bench", "libnaiveshim.so")
        # x86-64 only (bench/CMakeLists.txt): its rows are left out elsewhere.
        self.floor = os.path.join(build, "bench", "libfloorshim.so")
        self.tdstat = os.path.join(build, "programs", "tdstat", "tdstat")
        for path in (self.microbench, self.workload, self.agentbench, self.shim,
                     self.naive, self.tdstat):
            if not os.path.exists(path):
                sys.exit(f"bench: {path} is missing: build with -DTDSTAT_BUILD_BENCH=ON "
                         "(bench/run-all.sh does)")
        self.lttng = self.find_library(LTTNG_WRAPPER)
        self.perf = shutil.which("perf")
        self.pidstat = shutil.which("pidstat")
        self.valgrind = shutil.which("valgrind")
        self.runs = 1 if args.smoke else max(5, args.runs)
        self.scale = 0.02 if args.smoke else 1.0
        self.rows = []
        self.notes = []

    @staticmethod
    def find_library(name):
        out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
        return name if name in out else None

    # -- variants: the environment a program runs in -------------------------

    def variant_env(self, variant, extra=None):
        env = dict(os.environ)
        for key in ("LD_PRELOAD", "TDSTAT_ENABLE", "TDSTAT_TRACK_READS", "TDSTAT_SYNC_TRACKING"):
            env.pop(key, None)
        if variant.startswith("tdstat"):
            env["LD_PRELOAD"] = self.shim
            env["TDSTAT_ENABLE"] = "1"
            if variant == "tdstat+reads":
                env["TDSTAT_TRACK_READS"] = "1"
            if variant == "tdstat+sync":
                env["TDSTAT_SYNC_TRACKING"] = "1"
        elif variant == "naive":
            env["LD_PRELOAD"] = self.naive
        elif variant == "floor":
            env["LD_PRELOAD"] = self.floor
        elif variant == "lttng":
            env["LD_PRELOAD"] = self.lttng
        env.update(extra or {})
        return env

    def variants(self, *names):
        return [v for v in names if (v != "lttng" or self.lttng) and (v != "floor" or os.path.exists(self.floor))]

    def iterations(self, count):
        return max(1, int(count * self.scale))

    def run_microbench(self, variant, name, iterations, cpus=None, threads=None, prefix=()):
        cmd = list(prefix)
        if cpus:
            cmd += ["taskset", "-c", cpus]
        cmd += [self.microbench, name, str(iterations)]
        if threads:
            cmd.append(str(threads))
        out = subprocess.run(cmd, env=self.variant_env(variant), capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise RuntimeError(f"no result from {cmd}: {out!r}")

    def alternate(self, variants, measure):
        """A B C A B C ...: each round runs every variant once."""
        results = {v: [] for v in variants}
        for _ in range(self.runs):
            for v in variants:
                results[v].append(measure(v))
        return Medians(results)

    def row(self, area, what, reference, measured, figure, goal="", holds=""):
        self.rows.append((area, what, reference, measured, figure, goal, holds))
        log(f"{area} | {what} | {reference} | {measured} | {figure} | {goal} | {holds}")

    @staticmethod
    def verdict(ok):
        return "yes" if ok else "**NO**"

    # -- 1. shim overhead ----------------------------------------------------

    OVERHEAD = (
        # name, label, iterations, cpus, budget
        ("mutex", "uncontended mutex lock+unlock", 10_000_000, "0", 1.00),
        ("rwlock", "rwlock rdlock+unlock, uncontended", 10_000_000, "0", 1.00),
        ("sem", "sem_post+sem_wait without waiting", 10_000_000, "0", 1.00),
        ("trylock", "uncontended mutex trylock+unlock", 10_000_000, "0", 1.00),
        ("tryrdlock", "rwlock tryrdlock+unlock, uncontended", 10_000_000, "0", 1.00),
        ("trywrlock", "rwlock trywrlock+unlock, uncontended", 10_000_000, "0", 1.00),
        ("trywrbusy", "rwlock trywrlock on a read-held lock (fails: no unlock)", 10_000_000, "0", 1.00),
        ("trywait", "sem_post+sem_trywait without waiting", 10_000_000, "0", 1.00),
        ("overflowed", "mutex lock+unlock of an object past a full tracking table", 5_000_000, "0", 1.00),
        ("syscall", "syscall(SYS_getpid) through libc's syscall()", 5_000_000, "0", 1.02),
        ("handoff", "contended mutex hand-off, 2 threads, one per CPU", 1_000_000, "0,1", 1.05),
        ("condvar", "condvar ping-pong, both on CPU 0", 100_000, "0", 1.05),
        ("sempingpong", "semaphore ping-pong, both on CPU 0", 100_000, "0", 1.05),
        ("create", "pthread_create+join", 10_000, "0", 1.05),
        ("pipe", "pipe write+read of 1 byte", 500_000, "0", 1.05),
    )

    # The ping-pongs beside the least a shim can do on their blocking paths
    # (bench/floor_shim.c): how much of their ratio any implementation of
    # docs/CONTRACT.md §2 pays here, and how much is libtdshim.so's own.
    FLOOR_SHIM = ("condvar", "sempingpong")

    # Per-object tracking on (TDSTAT_SYNC_TRACKING=1, docs/CONTRACT.md §9):
    # the uncontended pairs against bare, the blocking paths against the
    # shim with tracking off.
    SYNC_TRACKING_BUDGETS = {"mutex": ("bare", 2.00), "rwlock": ("bare", 2.00), "sem": ("bare", 2.00),
                             "trylock": ("bare", 2.00), "tryrdlock": ("bare", 2.00),
                             "trywrlock": ("bare", 2.00), "trywait": ("bare", 2.00),
                             "overflowed": ("bare", 2.00),
                             "condvar": ("tdstat", 1.10), "sempingpong": ("tdstat", 1.10)}

    def section_overhead(self):
        log("1. shim overhead, preloaded vs bare (ns/op)")
        self.overhead = {}
        for name, label, iterations, cpus, budget in self.OVERHEAD:
            names = ["bare", "tdstat"]
            if name == "pipe":
                names.append("tdstat+reads")
            if name in self.SYNC_TRACKING_BUDGETS:
                names.append("tdstat+sync")
            if name in self.FLOOR_SHIM:
                names.append("floor")
            names += ["naive", "lttng"]
            medians = self.alternate(self.variants(*names), lambda v: self.run_microbench(
                v, name, self.iterations(iterations), cpus))
            self.overhead[name] = medians
            bare = medians["bare"]
            ratio = medians.ratio("tdstat", "bare")
            what = label + (" (reads not tracked: default)" if name == "pipe" else "")
            self.row("1 overhead", what, f"bare {bare:.1f} ns", f"tdstat {medians['tdstat']:.1f} ns",
                     f"{ratio:.3f}x", f"<= {budget:.2f}x", self.verdict(ratio <= budget))
            if name in self.SYNC_TRACKING_BUDGETS:
                base, sync_budget = self.SYNC_TRACKING_BUDGETS[name]
                ratio = medians.ratio("tdstat+sync", base)
                self.row("1 overhead", label + ", per-object tracking on", f"{base} {medians[base]:.1f} ns",
                         f"tracking {medians['tdstat+sync']:.1f} ns", f"{ratio:.3f}x",
                         f"<= {sync_budget:.2f}x", self.verdict(ratio <= sync_budget))
            if name in self.FLOOR_SHIM and "floor" in medians.results:
                floor = medians.ratio("floor", "bare")
                self.row("1 overhead", label + ", under the floor shim (bench/floor_shim.c: a record change "
                         "into BLOCKED and back per sleep, the waker's stamp; nothing else)",
                         f"bare {bare:.1f} ns", f"floor {medians['floor']:.1f} ns",
                         f"{floor:.3f}x; libtdshim.so over it {medians.ratio('tdstat', 'floor'):.3f}x", "-", "-")
            if name == "syscall":
                self.syscall_in_process(iterations, cpus, budget)
            if name == "pipe":
                ratio = medians.ratio("tdstat+reads", "bare")
                self.row("1 overhead", label + ", TDSTAT_TRACK_READS=1", f"bare {bare:.1f} ns",
                         f"tdstat {medians['tdstat+reads']:.1f} ns", f"{ratio:.3f}x",
                         f"<= {budget:.2f}x", self.verdict(ratio <= budget))

    def syscall_in_process(self, iterations, cpus, budget):
        """The syscall() wrapper's own cost, inside one process
        (microbench syscallpair): getpid through syscall() against libc's
        syscall() called directly, in alternating blocks.  Between two
        processes a 2% difference is within what any preload moves (the
        naive shim and LTTng's wrapper, which do not wrap syscall(), read
        as much); inside one, only the wrapper differs.  The bare run is
        the control: both paths are libc's there."""
        pairs = {v: [] for v in ("bare", "tdstat")}

        def run(variant):
            cmd = ["taskset", "-c", cpus, self.microbench, "syscallpair", str(self.iterations(iterations))]
            out = subprocess.run(cmd, env=self.variant_env(variant), capture_output=True, text=True,
                                 check=True).stdout.split()
            interposed, direct = float(out[1]), float(out[2])
            pairs[variant].append((interposed, direct))
            return interposed / direct

        medians = self.alternate(["bare", "tdstat"], run)
        control, ratio = medians["bare"], medians["tdstat"]
        direct = median(d for _, d in pairs["tdstat"])
        interposed = median(i for i, _ in pairs["tdstat"])
        self.row("1 overhead", "syscall(SYS_getpid): through the shim's syscall() vs libc's syscall() called "
                 "directly, in one process (alternating blocks)", f"libc direct {direct:.1f} ns",
                 f"through the wrapper {interposed:.1f} ns",
                 f"{ratio:.3f}x (without the shim, the same two paths: {control:.3f}x)",
                 f"<= {budget:.2f}x", self.verdict(ratio <= budget))

    # -- 1b. instruction counts ----------------------------------------------

    INSTRUCTIONS = (
        ("mutex", "mutex lock+unlock", 100_000, {}),
        ("rwlock", "rwlock rdlock+unlock", 100_000, {}),
        ("sem", "sem_post+sem_wait", 100_000, {}),
        ("pipe", "pipe write+read", 20_000, {}),
        ("pipe", "pipe write+read, TDSTAT_TRACK_READS=1", 20_000, {"TDSTAT_TRACK_READS": "1"}),
        ("create", "pthread_create+join", 2_000, {}),
    )

    def callgrind_count(self, variant, name, iterations, extra):
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               self.microbench, name, str(iterations)]
        err = subprocess.run(cmd, env=self.variant_env(variant, extra), capture_output=True,
                             text=True, check=True).stderr
        match = re.search(r"Collected : (\d+)", err)
        if not match:
            raise RuntimeError(f"callgrind gave no count: {err[-500:]}")
        return int(match.group(1))

    def section_instructions(self):
        if not self.valgrind:
            self.notes.append("valgrind is not installed: no instruction counts.")
            return
        log("1b. instructions per call (callgrind, difference of two iteration counts)")
        for name, label, iterations, extra in self.INSTRUCTIONS[:2] if self.args.smoke else self.INSTRUCTIONS:
            n1 = max(100, iterations // (10 if self.args.smoke else 1))
            n2 = 2 * n1
            per_call = {}
            for v in ("bare", "tdstat", "naive"):
                # Under valgrind the shim turns its inline paths off
                # (helgrind and drd must see every lock) unless told that
                # the tool follows none: callgrind does not.
                env = {**extra, "TDSTAT_VALGRIND_INLINE": "1"} if v == "tdstat" else extra
                c1 = self.callgrind_count(v, name, n1, env)
                c2 = self.callgrind_count(v, name, n2, env)
                per_call[v] = (c2 - c1) / (n2 - n1)
            self.row("1 instructions", label + " (instructions/op)", f"bare {per_call['bare']:.1f}",
                     f"tdstat {per_call['tdstat']:.1f}",
                     f"{per_call['tdstat'] - per_call['bare']:+.1f} instr"
                     f" (naive {per_call['naive'] - per_call['bare']:+.1f})")

    # -- 1c. where the cycles go, in situ ---------------------------------------

    CYCLES = (
        # microbench, label, iterations
        ("condvar", "condvar ping-pong, both on CPU 0", 50_000),
        ("sempingpong", "semaphore ping-pong, both on CPU 0", 100_000),
    )

    def profiled_run(self, name, iterations):
        """One run of `name` under libtdshim_profiled.so: {section: (calls,
        mean cycles)} and the counter's rate (runtime/profile.h)."""
        with tempfile.NamedTemporaryFile(prefix="tdstat-profile-", mode="r") as out:
            env = self.variant_env("tdstat", {"LD_PRELOAD": self.profiled, "TDSHIM_PROFILE_OUT": out.name})
            subprocess.run(["taskset", "-c", "0", self.microbench, name, str(iterations)], env=env,
                           capture_output=True, text=True, check=True)
            sections, mhz = {}, 0.0
            for line in out.read().splitlines():
                fields = line.split()
                if fields[0] == "counter_mhz":
                    mhz = float(fields[1])
                elif len(fields) == 3:
                    sections[fields[0]] = (int(fields[1]), float(fields[2]))
        return sections, mhz

    def section_cycles(self):
        """The shim's own time stamp counter cycles on the blocking paths of
        the ping-pongs, read where each section runs (runtime/profile.h):
        what the wall-time ratios of section 1 are made of, without the
        run-to-run noise that hides a 0.5% change in them."""
        self.profiled = os.path.join(os.path.dirname(self.shim), "libtdshim_profiled.so")
        if not os.path.exists(self.profiled):
            self.notes.append("libtdshim_profiled.so is missing: no in-situ cycle counts.")
            return
        log("1c. the shim's own cycles a round trip, in situ (libtdshim_profiled.so)")
        for name, label, iterations in self.CYCLES:
            runs = [self.profiled_run(name, self.iterations(iterations)) for _ in range(1 if self.args.smoke else 5)]
            mhz = median(r[1] for r in runs) or 1.0

            def mean(section):
                return median(r[0].get(section, (0, 0.0))[1] for r in runs)

            def per_trip(section):
                return median(r[0].get(section, (0, 0.0))[0] for r in runs) / self.iterations(iterations)

            waits, stamps = per_trip("wait_begin"), per_trip("stamp")
            total = waits * (mean("wait_begin") + mean("wait_end")) + stamps * mean("stamp")
            self.row("1 cycles", f"{label}: the shim's blocking-path sections a round trip",
                     f"counter {mhz:.0f} MHz",
                     f"{total:.0f} cycles = {total / mhz * 1000:.0f} ns",
                     f"{waits:.2f} waits x (into BLOCKED {mean('wait_begin'):.0f} + back {mean('wait_end'):.0f}), "
                     f"{stamps:.2f} wake stamps x {mean('stamp'):.0f}; a record change {mean('change'):.0f} "
                     f"(its announcement {mean('announce'):.0f}), a woken look-up {mean('woken'):.0f}; "
                     f"a measurement {mean('empty'):.0f} cycles, counted in every section that holds another")

    # -- 2. scaling ------------------------------------------------------------

    SCALING_THREADS = (1, 2, 4, 8, 16, 64)
    SCALING_ITERATIONS = 1_000_000

    def section_scaling(self):
        log("2. scaling: the same lock-heavy work over 1..64 threads (process CPU ns/op)")
        self.scaling = {}
        for threads in self.SCALING_THREADS:
            self.scaling[threads] = self.alternate(
                self.variants("bare", "tdstat", "naive", "lttng"),
                lambda v: self.run_microbench(v, "scale", self.iterations(self.SCALING_ITERATIONS),
                                              threads=threads))
        # "Must not grow": every ratio within a noise band of 0.05 above the
        # one-thread ratio (or above 1.0 when the shim is the faster one).
        first = self.scaling[1].ratio("tdstat", "bare")
        ceiling = max(first, 1.0) + 0.05
        for threads, medians in self.scaling.items():
            ratio = medians.ratio("tdstat", "bare")
            ok = ratio <= 1.05 if threads == 1 else ratio <= ceiling
            goal = "<= 1.05x" if threads == 1 else f"<= {ceiling:.3f}x (1-thread ratio, floor 1, + 0.05)"
            self.row("2 scaling", f"lock-heavy work (mutex, rwlock, semaphore), {threads} thread{'s' if threads > 1 else ''}",
                     f"bare {medians['bare']:.1f} ns", f"tdstat {medians['tdstat']:.1f} ns",
                     f"{ratio:.3f}x", goal, self.verdict(ok))

    # -- 3. reader --------------------------------------------------------------

    READER_THREADS = (1, 100, 1000, 10000)
    # The budget of issue 11: 20 us plus 0.03 us per thread.
    READER_FIXED_US = 20
    READER_PER_THREAD_US = 0.03

    def reader_prefix(self):
        """`chrt -f 1` for the reader's own measurements when this user may
        (agentbench starts its target at the normal policy): the reader's
        figures are then its own, not the rest of a shared machine's."""
        if not hasattr(self, "_reader_prefix"):
            chrt = shutil.which("chrt")
            ok = chrt and subprocess.run([chrt, "-f", "1", "true"], capture_output=True).returncode == 0
            self._reader_prefix = [chrt, "-f", "1"] if ok else []
            if not ok:
                self.notes.append("the reader rows ran without chrt -f 1 (not permitted): other load "
                                  "on the machine is in their figures")
        return self._reader_prefix

    def section_reader(self):
        log("3. reader: cost of one td_ta_get_stats")
        # condvar: every thread asleep (the process CPU clock is read once,
        # then the region proves nothing ran); queue: one thread always
        # runs, so every call reads the kernel's process CPU clock too.
        for mode in ("condvar", "queue"):
            for threads in self.READER_THREADS:
                if self.args.smoke and threads > 1000:
                    continue
                if mode == "queue" and threads < 1000:
                    continue
                calls = 200 if self.args.smoke else (2000 if threads >= 10000 else 5000)
                out = subprocess.run([*self.reader_prefix(), self.agentbench, "cost", self.shim, self.workload, str(threads),
                                      str(calls), mode], capture_output=True, text=True, check=True).stdout
                _, _, nthreads, med, mean, clock, cpu = out.split()
                goal = self.READER_FIXED_US + self.READER_PER_THREAD_US * threads
                shape = "sleeping" if mode == "condvar" else "queued, one running"
                self.row("3 reader", f"td_ta_get_stats, target with {threads} {shape} threads "
                         f"(nthreads {nthreads})", f"goal {goal:.0f} us", f"{float(med):.1f} us",
                         f"{float(med) / goal:.2f} of goal; CPU {float(cpu):.1f} us; "
                         f"kernel process CPU clock {float(clock):.1f} us",
                         f"<= {goal:.0f} us", self.verdict(float(med) <= goal))
        # What `tdstat -t` at 100 Hz costs in snapshots alone (the 64-bit
        # call with the kinds, as the command takes them) on 1,000 threads:
        # the reader's CPU as a share of one CPU (issue 11: the target
        # slowed <= 1%; on a full machine that share is what it loses).
        for mode in ("condvar", "queue"):
            seconds = 1 if self.args.smoke else 10
            out = subprocess.run([*self.reader_prefix(), self.agentbench, "sample", self.shim, self.workload, "1000", "100",
                                  str(seconds), mode], capture_output=True, text=True, check=True).stdout
            _, _, _, us, share = out.split()
            shape = "sleeping" if mode == "condvar" else "queued, one running"
            self.row("3 reader", f"td_ta_get_stats_ns with kinds at 100 Hz, 1000 {shape} threads",
                     "one CPU", f"{float(us):.1f} us a snapshot", f"{100 * float(share):.2f}% of one CPU",
                     "<= 1%", self.verdict(float(share) <= 0.01))
        # The same at 100 Hz with the thread iteration, which every line
        # of tdstat takes (the process figures and every thread, copied
        # out): the agent's part of the `3 sampler` -t row.
        seconds = 1 if self.args.smoke else 10
        out = subprocess.run([*self.reader_prefix(), self.agentbench, "walk", self.shim, self.workload, "1000", "100",
                              str(seconds), "condvar"], capture_output=True, text=True, check=True).stdout
        _, _, _, us, share = out.split()
        self.row("3 reader", "td_ta_thr_stats_iter at 100 Hz, 1000 sleeping threads (each thread copied out)",
                 "one CPU", f"{float(us):.1f} us a walk", f"{100 * float(share):.2f}% of one CPU", "-", "-")
        self.section_iteration()
        self.section_sampler()

    def section_iteration(self):
        log("3. reader: td_ta_thr_stats_iter, per thread handed out")
        for threads in self.READER_THREADS[1:]:
            if self.args.smoke and threads > 1000:
                continue
            calls = 100 if self.args.smoke else 1000
            out = subprocess.run([*self.reader_prefix(), self.agentbench, "iter", self.shim, self.workload, str(threads),
                                  str(calls)], capture_output=True, text=True, check=True).stdout
            _, _, handed, walk, per_thread, stats_ns = out.split()
            # Per thread as the get_stats budget counts it (a fixed part
            # plus so much a thread): the walk's fixed part is the
            # process's snapshot, one td_ta_get_stats_ns with the kinds,
            # measured beside it; what is left is the threads'.
            marginal = max(float(walk) - float(stats_ns), 0.0) / max(int(handed), 1)
            self.row("3 reader", f"td_ta_thr_stats_iter with the process figures, {threads} sleeping threads "
                     f"({handed} handed out)", "goal 0.1 us/thread", f"{marginal:.3f} us/thread",
                     f"walk {float(walk):.1f} us = td_ta_get_stats_ns with kinds {float(stats_ns):.1f} us "
                     f"+ {marginal:.3f} us a thread; the walk over the threads it hands out, fixed part "
                     f"included: {float(per_thread):.3f} us/thread",
                     "<= 0.1 us/thread", self.verdict(marginal <= 0.1))

    @staticmethod
    def process_cpu_s(pid):
        """User + system CPU seconds of a running process, from /proc."""
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    @staticmethod
    def printed_lines(path):
        """Process lines in tdstat's text output so far (they start with
        the time, HH:MM:SS; -t's rows and headers do not)."""
        with open(path, "rb") as f:
            return sum(1 for line in f if line[:1].isdigit() and line[2:3] == b":")

    SAMPLER_WARM_S = 1.0

    def run_work(self, mode, sampled, seconds, threads, options=(), command=None, sink="file"):
        """One run of `bench-workload MODE THREADS`: its work/s over
        `seconds`, measured (SIGUSR1, bench/workload.c) once a sampler
        started with it has warmed up (its first lines and names are not
        the steady state).  With `sampled`, tdstat -i 0.01 OPTIONS (or
        `command`, which never ends by itself) writes to a file, and the
        lines it printed in those seconds, their bytes and the CPU it used
        are kept (self.sampler).  With sink "null" the output goes to
        /dev/null: what tdstat itself costs, without a file system's
        (lines and bytes are then not counted: 0)."""
        env = self.variant_env("tdstat")
        work = subprocess.Popen([self.workload, mode, str(threads), str(seconds + self.SAMPLER_WARM_S)],
                                env=env, stdout=subprocess.PIPE, text=True)
        assert work.stdout.readline().strip() == "ready"
        sampler = out = None
        if sampled:
            out = tempfile.NamedTemporaryFile(prefix="tdstat-bench-", delete=False) if sink == "file" else None
            argv = command or [self.tdstat, "-i", "0.01", *options, str(work.pid)]
            sampler = subprocess.Popen(argv, stdout=out or subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(self.SAMPLER_WARM_S)
        work.send_signal(signal.SIGUSR1)
        if sampler:
            cpu, lines, began = self.process_cpu_s(sampler.pid), self.printed_lines(out.name) if out else 0, \
                time.monotonic()
            size = os.path.getsize(out.name) if out else 0
            # Ends just before the target's own end, which ends tdstat.
            time.sleep(max(0.1, seconds - 0.1))
            cpu = self.process_cpu_s(sampler.pid) - cpu
            lines = self.printed_lines(out.name) - lines if out else 0
            size = os.path.getsize(out.name) - size if out else 0
            span = time.monotonic() - began
            self.sampler.append((lines / span, cpu / span, cpu / max(lines, 1), size / max(lines, 1)))
            if command:
                sampler.kill()
        rate = float(work.stdout.read().split()[1])
        work.wait()
        if sampler:
            if sampler.poll() is None:
                sampler.send_signal(signal.SIGINT)
            sampler.wait()
            if out:
                out.close()
                os.unlink(out.name)
        return rate

    def sampler_row(self, mode, threads, shape, options):
        seconds = 0.5 if self.args.smoke else 3.0
        self.sampler = []
        command = "tdstat " + " ".join((*options, "-i", "0.01", "PID"))
        log(f"3b. target slowdown while `{command}` samples it ({threads} threads, {shape})")
        medians = self.alternate(["without", "with"],
                                 lambda v: self.run_work(mode, v == "with", seconds, threads, options))
        slowdown = 1 - medians.ratio("with", "without")
        lines_s = median(r[0] for r in self.sampler)
        share = median(r[1] for r in self.sampler)
        per_line = median(r[2] for r in self.sampler)
        line_bytes = median(r[3] for r in self.sampler)
        self.row("3 sampler", f"{threads} threads ({shape}), {seconds:g} s: work/s while `{command}` "
                 "samples it at 100 Hz (output to a file)",
                 f"unsampled {medians['without']:.0f}/s", f"sampled {medians['with']:.0f}/s",
                 f"{100 * slowdown:.2f}% slower; tdstat printed {lines_s:.0f} lines/s of {line_bytes / 1e3:.1f} KB, "
                 f"used {100 * share:.2f}% of one CPU, {1e3 * per_line:.3f} ms a line",
                 "<= 1%", self.verdict(slowdown <= 0.01))
        return line_bytes

    def floor_row(self, mode, threads, shape, line_bytes, sink="file"):
        """What printing alone costs the same target: a program that wakes
        at 100 Hz on tdstat's deadlines and writes as many bytes a line as
        tdstat -t just did, reading nothing (agentbench print).  Not a
        budget: the part of the row above that no reader can avoid.  With
        sink "null" the same bytes go to /dev/null: what is left of the
        floor without a file system (the wake-ups and the writes' calls),
        so that the two floor rows split it."""
        seconds = 0.5 if self.args.smoke else 3.0
        self.sampler = []
        command = [self.agentbench, "print", "100", str(int(line_bytes)), str(seconds + 2 * self.SAMPLER_WARM_S)]
        where = "to a file" if sink == "file" else "to /dev/null"
        log(f"3c. target slowdown while a program only prints {line_bytes / 1e3:.1f} KB at 100 Hz {where}")
        medians = self.alternate(["without", "with"],
                                 lambda v: self.run_work(mode, v == "with", seconds, threads, command=command,
                                                         sink=sink))
        slowdown = 1 - medians.ratio("with", "without")
        share = median(r[1] for r in self.sampler)
        what = ("(the floor of the row above)" if sink == "file"
                else "to /dev/null (the floor above without the file)")
        self.row("3 sampler", f"{threads} threads ({shape}), {seconds:g} s: work/s while a program that reads "
                 f"nothing only writes {line_bytes / 1e3:.1f} KB at 100 Hz {what}",
                 f"unsampled {medians['without']:.0f}/s", f"printed {medians['with']:.0f}/s",
                 f"{100 * slowdown:.2f}% slower; it used {100 * share:.2f}% of one CPU, "
                 f"{1e3 * share / 100:.3f} ms a line", "-", "-")

    def section_sampler(self):
        # Two CPU-bound threads on 2 CPUs: every CPU cycle tdstat takes
        # is one the target does not get.
        cpus = os.cpu_count() or 2
        self.sampler_row("work", cpus, "CPU-bound", ())
        # Issue 11's budget: -t (a row per thread, the kernel's schedstat
        # of each) at 100 Hz on a 1,000-thread target.  A thousand
        # CPU-bound threads would starve tdstat of the CPU (it then
        # samples far below 100 Hz and looks cheap): the `server` shape
        # keeps the CPUs busy with one thread each and parks the rest in
        # pthread_cond_wait, and the row says how many lines tdstat made.
        shape = f"{cpus} CPU-bound, the rest in pthread_cond_wait"
        threads = 100 if self.args.smoke else 1000
        line_bytes = self.sampler_row("server", threads, shape, ("-t",))
        self.floor_row("server", threads, shape, line_bytes)
        self.floor_row("server", threads, shape, line_bytes, sink="null")
        self.null_row("server", threads, shape, ("-t",))

    def null_row(self, mode, threads, shape, options):
        """The -t row's sampler with its output to /dev/null: tdstat's own
        reading and formatting, without the file's writing (the floor
        row's part).  Not a budget: the split of the row above."""
        seconds = 0.5 if self.args.smoke else 3.0
        self.sampler = []
        command = "tdstat " + " ".join((*options, "-i", "0.01", "PID"))
        log(f"3d. target slowdown while `{command} > /dev/null` samples it ({threads} threads, {shape})")
        medians = self.alternate(["without", "with"],
                                 lambda v: self.run_work(mode, v == "with", seconds, threads, options, sink="null"))
        slowdown = 1 - medians.ratio("with", "without")
        share = median(r[1] for r in self.sampler)
        self.row("3 sampler", f"{threads} threads ({shape}), {seconds:g} s: work/s while `{command} > /dev/null` "
                 "samples it at 100 Hz (tdstat's own part of the -t row)",
                 f"unsampled {medians['without']:.0f}/s", f"sampled {medians['with']:.0f}/s",
                 f"{100 * slowdown:.2f}% slower; tdstat used {100 * share:.2f}% of one CPU, "
                 f"{1e3 * share / 100:.3f} ms a line at 100 lines/s", "-", "-")

    # -- 4. accuracy --------------------------------------------------------------

    ACCURACY = (
        ("spin", 1, "1 thread spinning"),
        ("spin", 4, "4 threads spinning (2 CPUs)"),
        ("duty", 2, "2 threads, spin 2 ms / sleep 2 ms"),
        ("queue", 4, "4 threads queuing on one mutex (hold 200 us)"),
        ("sleep", 4, "4 threads in nanosleep"),
        ("condvar", 4, "4 threads in pthread_cond_wait"),
    )

    def start_workload(self, mode, threads, variant="tdstat"):
        proc = subprocess.Popen([self.workload, mode, str(threads)], env=self.variant_env(variant),
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.1 if self.args.smoke else 0.3)
        return proc

    @staticmethod
    def stop(proc):
        proc.kill()
        proc.wait()

    def compare(self, pid, seconds):
        out = subprocess.run([self.agentbench, "compare", str(pid), str(seconds)],
                             capture_output=True, text=True, check=True).stdout.split()
        return [float(x) for x in out[2:6]], [float(x) for x in out[7:11]]

    def section_accuracy(self):
        seconds = 0.3 if self.args.smoke else 2.0
        log("4. accuracy: tdstat next to the kernel over the same window")
        for mode, threads, label in self.ACCURACY:
            proc = self.start_workload(mode, threads)
            try:
                ours, kernel = self.compare(proc.pid, seconds)
            finally:
                self.stop(proc)
            fmt = lambda v: " / ".join(f"{x:.2f}" for x in v)
            worst = max(abs(a - b) for a, b in zip(ours, kernel))
            self.row("4 accuracy", f"{label}: runnable / running / lwps / idle",
                     f"kernel {fmt(kernel)}", f"tdstat {fmt(ours)}", f"max diff {worst:.2f}",
                     "<= 0.10", self.verdict(worst <= 0.10))
        self.accuracy_runtimes()

    def accuracy_runtimes(self):
        """tests/accuracy's shapes in C, C++20, Rust, Python and Java: tdstat's
        runnable over one interval next to the kernel's schedstat figure
        (tests/accuracy/README.md)."""
        if not os.path.exists(self.accuracy_manifest):
            self.notes.append(f"{self.accuracy_manifest} is missing: no accuracy rows per runtime.")
            return
        manifest = accuracy.load_manifest(self.accuracy_manifest)
        interval, warmup = (0.5, 0.2) if self.args.smoke else (2.0, 0.5)
        log("4b. accuracy across runtimes: tdstat next to the kernel, same interval")
        for runtime in ("c",) if self.args.smoke else accuracy.RUNTIMES:
            missing = manifest["runtimes"][runtime].get("missing")
            if missing:
                self.notes.append(f"accuracy: {runtime} not measured: {missing}.")
                continue
            for shape in accuracy.SHAPES:
                r = accuracy.measure(manifest, runtime, shape, interval,
                                     accuracy.warmup_for(runtime, warmup))
                ratio = f"ratio {r.ratio:.3f}" if r.kernel > 0 else "ratio -"
                if r.steal is not None:
                    ratio += f"; steal {r.steal:.2f} CPUs"
                    if r.stolen and r.kernel > 0:
                        ratio += f" (tdstat / (kernel + steal) {r.tdstat / (r.kernel + r.steal):.3f})"
                self.row("4 accuracy", f"{runtime} {shape}: runnable",
                         f"kernel {r.kernel:.3f}", f"tdstat {r.tdstat:.3f}", ratio, r.check,
                         self.verdict(r.holds))

    # -- 5. alternatives -----------------------------------------------------------

    def section_programs(self):
        """Real programs, bare and preloaded: wall time (bench/real_programs.py)."""
        import real_programs
        log("5. real programs, wall time, alternating runs")
        real_programs.measure(self.shim, 1 if self.args.smoke else max(7, self.runs),
                              lambda r: self.row(
                                  "5 programs", r.name, f"bare {r.bare:.3f} s", f"tdstat {r.tdstat:.3f} s",
                                  r.figure(), f"<= {real_programs.BUDGET:.2f}x", r.verdict()),
                              smoke=self.args.smoke)

    def section_alternatives(self):
        self.alternatives_measure()
        self.alternatives_slowdown()
        self.alternatives_naive()

    def alternatives_measure(self):
        """Every tool on one known-shape workload, over the same window."""
        seconds = 1 if self.args.smoke else 3
        log("5a. what each tool reports on `queue 4` over the same window")
        proc = self.start_workload("queue", 4)
        tools = {}
        tmp = tempfile.mkdtemp(prefix="tdstat-bench-")
        try:
            if self.perf:
                tools["perf stat"] = subprocess.Popen(
                    [self.perf, "stat", "-x,", "-e", "task-clock", "-p", str(proc.pid), "--",
                     "sleep", str(seconds)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                    text=True)
                tools["perf sched"] = subprocess.Popen(
                    [self.perf, "sched", "record", "-o", f"{tmp}/sched.data", "-p", str(proc.pid),
                     "--", "sleep", str(seconds)], stderr=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, text=True)
            if self.pidstat:
                tools["pidstat"] = subprocess.Popen(
                    [self.pidstat, "-t", "-p", str(proc.pid), str(seconds), "1"],
                    stdout=subprocess.PIPE, text=True, env=dict(os.environ, LC_ALL="C"))
            ours, kernel = self.compare(proc.pid, seconds)
            outputs = {name: tool.communicate() for name, tool in tools.items()}
            fmt = lambda r, run: f"runnable {r} / running {run}"
            k = fmt(f"{kernel[0]:.2f}", f"{kernel[1]:.2f}")
            self.row("5 alternatives", "queue 4 (runnable ~1, idle ~3 expected): tdstat",
                     f"kernel {k}", fmt(f"{ours[0]:.2f}", f"{ours[1]:.2f}") +
                     f", idle {ours[3]:.2f}", "live, from another process; no privilege beyond ptrace access")
            if "perf stat" in outputs:
                self.report_perf_stat(outputs["perf stat"][1], seconds, k)
            if "perf sched" in outputs:
                self.report_perf_sched(outputs["perf sched"][1], f"{tmp}/sched.data", seconds, k)
            if "pidstat" in outputs:
                self.report_pidstat(outputs["pidstat"][0], k)
        finally:
            self.stop(proc)
            shutil.rmtree(tmp, ignore_errors=True)
        self.row("5 alternatives", "queue 4: LTTng-UST pthread wrapper", f"kernel {k}",
                 "no figure" if self.lttng else "not installed",
                 "records mutex lock/unlock events only into a tracing session; without "
                 "lttng-sessiond it runs and records nothing; averages need offline analysis")

    def report_perf_stat(self, err, seconds, k):
        match = re.search(r"^([\d.]+),msec,task-clock", err, re.M)
        if not match:
            self.row("5 alternatives", "queue 4: perf stat -e task-clock", f"kernel {k}",
                     "failed", err.strip().splitlines()[-1] if err.strip() else "no output")
            return
        cpus = float(match.group(1)) / 1000 / seconds
        self.row("5 alternatives", "queue 4: perf stat -e task-clock", f"kernel {k}",
                 f"running {cpus:.2f} (CPUs utilized)",
                 "running only: cannot tell runnable from idle, needs perf_event access")

    def report_perf_sched(self, err, path, seconds, k):
        if not os.path.exists(path):
            self.row("5 alternatives", "queue 4: perf sched record + latency", f"kernel {k}",
                     "cannot record here", (err.strip().splitlines() or ["?"])[-1])
            return
        size = os.path.getsize(path)
        out = subprocess.run([self.perf, "sched", "latency", "-i", path], capture_output=True,
                             text=True).stdout
        runtime = delay = 0.0
        for line in out.splitlines():
            m = re.match(r"\s*bench-workload:\S*\s*\|\s*([\d.]+) ms\s*\|\s*(\d+)\s*\|\s*avg:\s*([\d.]+) ms",
                         line)
            if m:
                runtime += float(m.group(1))
                delay += int(m.group(2)) * float(m.group(3))
        self.row("5 alternatives", "queue 4: perf sched record -p + perf sched latency",
                 f"kernel {k}", f"runnable {(runtime + delay) / 1000 / seconds:.2f} / running "
                 f"{runtime / 1000 / seconds:.2f} (derived)",
                 f"{size / seconds / 1024:.0f} KiB/s of trace; figures only after the run; "
                 "needs perf_event/tracepoint access")

    def report_pidstat(self, out, k):
        cpu = wait = 0.0
        columns = []
        for line in out.splitlines():
            fields = line.split()
            if "%wait" in fields and not columns:
                columns = fields
            elif columns and line.startswith("Average:") and "|__" in line:
                # "Average:" stands where the header has its time stamp.
                wait += float(fields[columns.index("%wait")])
                cpu += float(fields[columns.index("%CPU")])
        self.row("5 alternatives", "queue 4: pidstat -t (1 sample over the window)", f"kernel {k}",
                 f"runnable {(cpu + wait) / 100:.2f} / running {cpu / 100:.2f} (sum of %CPU, %wait)",
                 "per-thread kernel view sampled from /proc; cannot see why a thread waits")

    TOOL_WORKLOADS = (
        # microbench name, iterations, threads, cpus, label
        ("scale", SCALING_ITERATIONS, 4, None, "lock-heavy work, 4 threads (no waits)"),
        ("sempingpong", 100_000, None, "0", "semaphore ping-pong on CPU 0 (2 context switches per op)"),
    )

    def run_tool(self, tool, workload, tmp):
        """One workload under one tool; its ns/op."""
        name, iterations, threads, cpus, _ = workload
        if tool == "perf stat":
            prefix = [self.perf, "stat", "-e", "task-clock", "-o", os.devnull, "--"]
        elif tool == "perf sched record":
            prefix = [self.perf, "sched", "record", "-q", "-o", f"{tmp}/sched.data", "--"]
        elif tool == "pidstat -t":
            prefix = [self.pidstat, "-t", "-e"]
        else:
            prefix = []
        variant = {"tdstat": "tdstat", "naive": "naive", "lttng": "lttng"}.get(tool, "bare")
        value = self.run_microbench(variant, name, self.iterations(iterations), cpus=cpus,
                                    threads=threads, prefix=prefix)
        if tool == "perf sched record":
            self.sched_bytes.append(os.path.getsize(f"{tmp}/sched.data"))
        return value

    def alternatives_slowdown(self):
        tools = ["bare", "tdstat"]
        if self.perf:
            tools += ["perf stat", "perf sched record"]
        if self.pidstat:
            tools.append("pidstat -t")
        tools += self.variants("lttng", "naive")
        what = {
            "tdstat": "tdstat shim preloaded, gathering on",
            "perf stat": "perf stat -e task-clock -- CMD",
            "perf sched record": "perf sched record -- CMD (system-wide, as perf sched does)",
            "pidstat -t": "pidstat -t -e CMD (samples /proc once a second)",
            "lttng": "LD_PRELOAD liblttng-ust-pthread-wrapper, no session daemon",
            "naive": "naive Solaris-style shim (global atomic counters, clock read per call)",
        }
        for workload in self.TOOL_WORKLOADS:
            log(f"5b. slowdown of {workload[4]} under each tool")
            self.sched_bytes = []
            tmp = tempfile.mkdtemp(prefix="tdstat-bench-")
            try:
                medians = self.alternate(tools, lambda t: self.run_tool(t, workload, tmp))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            bare = medians["bare"]
            for tool in tools[1:]:
                note = ""
                if tool == "perf sched record" and self.sched_bytes:
                    note = f"; wrote {median(self.sched_bytes) / 1024:.0f} KiB per run (whole machine)"
                self.row("5 alternatives", f"{workload[4]} under {what[tool]}",
                         f"bare {bare:.1f} ns", f"{medians[tool]:.1f} ns",
                         f"{medians.ratio(tool, 'bare'):.3f}x{note}")

    def alternatives_naive(self):
        """Naive shim and LTTng wrapper on the same microbenchmarks and scaling runs."""
        for variant, label in (("naive", "naive shim"), ("lttng", "LTTng-UST wrapper")):
            if getattr(self, "overhead", None):
                for name, bench_label, *_ in self.OVERHEAD:
                    m = self.overhead[name]
                    if variant not in m:
                        continue
                    self.row("5 alternatives", f"{label}: {bench_label}", f"bare {m['bare']:.1f} ns",
                             f"{m[variant]:.1f} ns", f"{m.ratio(variant, 'bare'):.3f}x"
                             f" (tdstat {m.ratio('tdstat', 'bare'):.3f}x)")
            if getattr(self, "scaling", None):
                ratios = [f"{t}: {m.ratio(variant, 'bare'):.2f}x" for t, m in self.scaling.items()
                          if variant in m]
                if ratios:
                    ours = [f"{t}: {m.ratio('tdstat', 'bare'):.2f}x" for t, m in self.scaling.items()]
                    self.row("5 alternatives", f"{label}: lock-heavy work by thread count",
                             "tdstat " + ", ".join(ours), ", ".join(ratios), "ratio vs bare")

    # -- output ----------------------------------------------------------------------

    def table(self):
        header = ("area", "measurement", "reference", "measured", "figure", "goal", "holds")
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for row in self.rows:
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |")
        return "\n".join(lines)


def machine_description():
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    glibc = platform.libc_ver()[1]
    return (f"{model}, {os.cpu_count()} CPUs, Linux {platform.release()}, glibc {glibc}, "
            f"{subprocess.run(['cc', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}")


def wait_for_quiet(limit):
    deadline = time.time() + limit
    while load_average() > 1.2 and time.time() < deadline:
        log(f"load average {load_average():.2f} > 1.2: waiting for a quieter machine")
        time.sleep(30)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--build-dir", default="build-bench")
    parser.add_argument("--runs", type=int, default=13, help="runs per variant (>= 5)")
    parser.add_argument("--smoke", action="store_true", help="seconds-long version of everything")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help="comma-separated sections: " + ", ".join(SECTIONS))
    parser.add_argument("--markdown", help="also write the results, with machine and date, here")
    parser.add_argument("--command", default="bench/bench.py", help="command shown in --markdown")
    parser.add_argument("--wait-for-quiet", type=float, default=0, metavar="SECONDS",
                        help="first wait up to SECONDS for a 1-minute load average below 1.2")
    args = parser.parse_args()

    bench = Bench(args)
    if args.wait_for_quiet > 0:
        wait_for_quiet(args.wait_for_quiet)
    started = datetime.datetime.now().astimezone()
    load_before = open("/proc/loadavg").read().split()[:3]
    t0 = time.time()
    for section in args.only.split(","):
        if section not in SECTIONS:
            sys.exit(f"bench: unknown section {section}")
        getattr(bench, "section_" + section)()
    load_after = open("/proc/loadavg").read().split()[:3]
    elapsed = time.time() - t0

    table = bench.table()
    print(table)
    summary = (f"Machine: {machine_description()}\n"
               f"Date: {started:%Y-%m-%d %H:%M %Z}; {elapsed / 60:.1f} min; "
               f"{bench.runs} alternating runs per variant, medians; ratios are medians of "
               f"per-round ratios\n"
               f"Load average (1, 5, 15 min): {' '.join(load_before)} before, "
               f"{' '.join(load_after)} after")
    print("\n" + summary)
    for note in bench.notes:
        print("Note: " + note)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("<!-- SPDX-License-Identifier: MIT -->\n# Benchmark results\n\n")
            f.write(f"Command: `{args.command}`\n\n")
            f.write(summary.replace("\n", "  \n") + "\n\n")
            f.write("What each row measures, and how to read it: [README.md](README.md).\n\n")
            f.write(table + "\n")
            for note in bench.notes:
                f.write(f"\nNote: {note}\n")
    # A benchmark reports; a goal it misses is in the table, not the status.
    return 0


if __name__ == "__main__":
    sys.exit(main())
