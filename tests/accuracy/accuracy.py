#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Accuracy across runtimes: tdstat's runnable next to the kernel's.

    accuracy.py --manifest BUILD/tests/accuracy/manifest.json
                [--runtime c,cxx,rust,python,java] [--shape idle,...]
                [--interval SECONDS] [--warmup SECONDS]
                [--hide-syscall] [--expect-failure]

Runs each known-shape program (README.md in this folder) under the shim,
then, over one steady interval, compares

  tdstat   the `runnable` of `tdstat --json -i INTERVAL -c 2 PID`'s second
           line: the interval between two 64-bit snapshots;
  kernel   the sum over /proc/PID/task/*/schedstat of on-CPU plus
           run-queue time, grown over the same interval, divided by it.

The kernel is sampled when each tdstat line arrives, within a millisecond
or so of its snapshot, and every 0.1 s between (a thread that vanishes
counts up to its last sample, one that appears from zero); each figure is
divided by its own span.  A snapshot covers its window up to the commit
lag (TDSTAT_COMMIT_LAG_NS in include/tdstat/region.h, milliseconds) before
the moment it is taken, so the two spans are of the same length, shifted
by about that lag: this suite does not align them, it uses intervals of
at least 2 s on steady shapes, where such a shift leaves the average
unchanged.  Both spans are printed.

Checks: an idle shape has tdstat runnable <= 0.1 (and the kernel's
below 0.5: else the shape itself does not idle); a busy one
tdstat / kernel within 1 +- 0.10 (measured again once if outside, both
printed).  Prints one table; exits 0 when every check holds, 1 when one
fails, 77 (CTest's skip) when a runtime is not built here.  With
--expect-failure the status is inverted: 0 when every case fails (a
broken shim is caught), 1 when one passes.

Environment: TDSTAT_ACCURACY_SHIM names another shim to preload (say, an
older build's libtdshim.so); CI=true selects the short version (2 s
intervals, 0.5 s warm-up; otherwise 4 s and 1 s).
"""
import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time

SHAPES = ("idle", "contention", "pool", "pingpong", "oversubscribed", "eventloop")
RUNTIMES = ("c", "cxx", "rust", "python", "java")
IDLE_LIMIT = 0.10
IDLE_SHAPE_LIMIT = 0.5  # the kernel's runnable of a shape that idles
RATIO_TOLERANCE = 0.10
SAMPLE_EVERY_S = 0.1
SKIP = 77


def ci():
    return os.environ.get("CI", "") not in ("", "0", "false")


def default_interval():
    return 2.0 if ci() else 4.0


def default_warmup():
    return 0.5 if ci() else 1.0


def load_manifest(path):
    """CMake writes the manifest: the tdstat command, the shim, the
    library that hides syscall() from it, and per runtime either the
    command that runs its shapes or why there is none."""
    with open(path) as f:
        manifest = json.load(f)
    manifest["shim"] = os.environ.get("TDSTAT_ACCURACY_SHIM") or manifest["shim"]
    return manifest


def warmup_for(runtime, warmup):
    """Java's JIT compiles for a while after start: a second more."""
    return warmup + (1.0 if runtime == "java" else 0.0)


def oversubscribed_threads():
    return 2 * len(os.sched_getaffinity(0))


# -- the kernel's view ---------------------------------------------------------

def read_tasks(pid):
    """On-CPU + run-queue ns of every task of pid, by tid."""
    tasks = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return tasks
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                on_cpu, waiting = f.read().split()[:2]
        except (OSError, ValueError):
            continue  # the thread ended between listdir and open
        tasks[tid] = int(on_cpu) + int(waiting)
    return tasks


def read_steal():
    """The machine's steal time so far, in seconds (all CPUs): what the
    hypervisor ran of other guests while this machine's CPUs wanted to run.
    None where /proc/stat does not say (no 8th figure)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK") if fields[0] == "cpu" and len(fields) > 8 else None
    except (OSError, ValueError):
        return None


class KernelInterval:
    """Σ over tasks of schedstat growth between start() and stop(); a task
    seen only after start() grows from 0, one gone before stop() counts
    up to its last sample.  Also the machine's steal over the same span."""

    def __init__(self, pid):
        self.pid = pid

    def start(self):
        self.base = read_tasks(self.pid)
        self.last = dict(self.base)
        self.steal_base = read_steal()
        self.started = time.monotonic()

    def sample(self):
        self.last.update(read_tasks(self.pid))

    def stop(self):
        self.sample()
        self.span = time.monotonic() - self.started
        steal = read_steal()
        # Average CPUs stolen (None: unknown).
        self.steal = (steal - self.steal_base) / self.span if steal is not None and self.steal_base is not None else None
        grown = sum(value - self.base.get(tid, 0) for tid, value in self.last.items())
        return grown / 1e9 / self.span


# -- one measurement -----------------------------------------------------------

# Steal below this (average CPUs) leaves the kernel's figure whole.
STEAL_SIGNIFICANT = 0.02


class Result:
    def __init__(self, runtime, shape, tdstat, kernel, tdstat_span, kernel_span, steal=None):
        self.runtime, self.shape = runtime, shape
        self.tdstat, self.kernel = tdstat, kernel
        self.tdstat_span, self.kernel_span = tdstat_span, kernel_span
        self.steal = steal
        self.earlier = []  # figures of attempts measured again

    @property
    def stolen(self):
        return self.steal is not None and self.steal >= STEAL_SIGNIFICANT

    @property
    def ratio(self):
        return self.tdstat / self.kernel if self.kernel > 0 else float("inf")

    @property
    def check(self):
        if self.shape == "idle":
            return f"tdstat <= {IDLE_LIMIT:.2f}"
        return f"ratio 1 +- {RATIO_TOLERANCE:.2f}"

    @property
    def holds(self):
        """An idle shape that the kernel sees busy is a broken shape, not a
        passing one.  (A JVM's own threads, woken now and then, are runnable
        for a few hundredths: the kernel's limit is looser.)"""
        if self.shape == "idle":
            return self.tdstat <= IDLE_LIMIT and self.kernel < IDLE_SHAPE_LIMIT
        if abs(self.ratio - 1) <= RATIO_TOLERANCE:
            return True
        # A thread that runs on a CPU the hypervisor steals is runnable for
        # tdstat but neither on a CPU nor waiting for one in schedstat: up
        # to the steal, tdstat may read above the kernel (never below).
        return (self.stolen and self.tdstat >= (1 - RATIO_TOLERANCE) * self.kernel
                and self.tdstat <= (1 + RATIO_TOLERANCE) * (self.kernel + self.steal))


def child_environment(shim, preload_first):
    """The child's own environment: the shim preloaded, gathering on.  The
    runner's environment is never changed."""
    env = dict(os.environ)
    env.pop("TDSTAT_ENABLE", None)
    env["LD_PRELOAD"] = f"{preload_first}:{shim}" if preload_first else shim
    env["TDSTAT_ENABLE"] = "1"
    return env


def plain_environment():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def read_line(stream, deadline, on_wait=None):
    """The next line of a child's pipe; on_wait() runs every
    SAMPLE_EVERY_S while none has come.  None at end of output."""
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no line in time")
        readable, _, _ = select.select([stream], [], [], min(left, SAMPLE_EVERY_S))
        if not readable:
            if on_wait:
                on_wait()
            continue
        chunk = os.read(stream.fileno(), 1)
        if not chunk:
            return None
        line += chunk
    return line.decode()


def stop(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def measure(manifest, runtime, shape, interval, warmup, preload_first=None):
    command = manifest["runtimes"][runtime]["command"]
    program = subprocess.Popen(command + [shape, str(oversubscribed_threads())],
                               env=child_environment(manifest["shim"], preload_first),
                               stdout=subprocess.PIPE, start_new_session=True)
    try:
        if read_line(program.stdout, time.monotonic() + 60) != "ready\n":
            raise RuntimeError(f"{runtime} {shape}: the program did not start")
        time.sleep(warmup)
        kernel = KernelInterval(program.pid)
        watcher = subprocess.Popen([manifest["tdstat"], "--json", "-i", f"{interval:g}", "-c", "2",
                                    str(program.pid)], stdout=subprocess.PIPE,
                                   env=plain_environment())
        try:
            deadline = time.monotonic() + interval + 30
            first = read_line(watcher.stdout, deadline)
            kernel.start()
            second = read_line(watcher.stdout, deadline, on_wait=kernel.sample)
            kernel_runnable = kernel.stop()
        finally:
            watcher.wait()
        if not first or not second:
            raise RuntimeError(f"{runtime} {shape}: tdstat printed no interval "
                               f"(status {watcher.returncode})")
        line = json.loads(second)
        return Result(runtime, shape, line["runnable"], kernel_runnable, line["window_s"],
                      kernel.span, kernel.steal)
    finally:
        stop(program)


ATTEMPTS = 3

# CI (the short version) asserts what holds whatever the load: every idle
# shape (each runtime's waits are seen) and, through --expect-failure,
# that a shim blind to syscall() is caught.  The busy shapes' ratios are
# printed there and asserted by the long version: on a shared 2-CPU
# virtual machine they move by more than the tolerance with the load (a
# wake-up that waits longer than the commit lag for a CPU counts as
# blocked beyond it; a wake-up to an idle vCPU counts as runnable before
# the kernel counts it), so a CI that asserted them would fail on load,
# not on a defect (issue 9 says what remains).


def asserted(result):
    return result.shape == "idle" or not ci()


def measure_checked(manifest, runtime, shape, interval, warmup, preload_first=None, retry=True):
    """A busy shape outside the tolerance is measured again, up to
    ATTEMPTS times: a shared 2-CPU machine has the odd bad second (a
    wake-up that waits longer than the commit lag for a CPU counts as
    blocked beyond it).  Every figure is printed."""
    result = measure(manifest, runtime, shape, interval, warmup, preload_first)
    for _ in range(ATTEMPTS - 1):
        if not retry or result.holds or shape == "idle":
            break
        again = measure(manifest, runtime, shape, interval, warmup, preload_first)
        again.earlier = result.earlier + [result]
        result = again
    return result


# -- the table -----------------------------------------------------------------

def table(results, expect_failure=False):
    header = ("runtime", "shape", "tdstat", "kernel", "ratio", "steal", "check", "result", "spans s (tdstat/kernel)")
    rows = []
    for r in results:
        verdict = "ok" if r.holds else "FAIL"
        if expect_failure:
            verdict = "caught" if not r.holds else "MISSED"
        note = "".join(f"; earlier try {e.tdstat:.3f} / {e.kernel:.3f} = {e.ratio:.3f}"
                       + (f" (steal {e.steal:.2f})" if e.stolen else "") for e in r.earlier)
        if r.holds and r.stolen and abs(r.ratio - 1) > RATIO_TOLERANCE:
            note += f"; within the kernel + steal ({r.tdstat / (r.kernel + r.steal):.3f})"
        ratio = f"{r.ratio:.3f}" if r.kernel > 0 else "-"
        steal = f"{r.steal:.2f}" if r.steal is not None else "-"
        rows.append((r.runtime, r.shape, f"{r.tdstat:.3f}", f"{r.kernel:.3f}", ratio, steal,
                     r.check, verdict + note, f"{r.tdstat_span:.3f}/{r.kernel_span:.3f}"))
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    line = lambda row: "| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths)) + " |"
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] +
                     [line(row) for row in rows])


def split(value, allowed, what):
    names = [n for n in value.split(",") if n]
    for name in names:
        if name not in allowed:
            sys.exit(f"accuracy: unknown {what} {name!r} (one of {', '.join(allowed)})")
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--runtime", default=",".join(RUNTIMES))
    parser.add_argument("--shape", default=",".join(SHAPES))
    parser.add_argument("--interval", type=float, default=default_interval())
    parser.add_argument("--warmup", type=float, default=default_warmup())
    parser.add_argument("--hide-syscall", action="store_true",
                        help="preload the manifest's hide_syscall library ahead of the shim: "
                        "a shim that misses futex waits")
    parser.add_argument("--expect-failure", action="store_true",
                        help="pass only if every case fails its check")
    args = parser.parse_args()

    manifest = load_manifest(args.manifest)
    preload_first = manifest["hide_syscall"] if args.hide_syscall else None
    shapes = split(args.shape, SHAPES, "shape")
    runtimes = []
    for runtime in split(args.runtime, RUNTIMES, "runtime"):
        missing = manifest["runtimes"][runtime].get("missing")
        if missing:
            print(f"accuracy: {runtime} skipped: {missing}", flush=True)
        else:
            runtimes.append(runtime)
    if not runtimes:
        return SKIP

    print(f"accuracy: shim {manifest['shim']}"
          + (f" behind {preload_first}" if preload_first else "")
          + f"; {args.interval:g} s intervals after {args.warmup:g} s warm-up; "
          f"oversubscribed: {oversubscribed_threads()} threads; load average "
          f"{open('/proc/loadavg').read().split()[0]}", flush=True)
    results = []
    for runtime in runtimes:
        for shape in shapes:
            result = measure_checked(manifest, runtime, shape, args.interval,
                                     warmup_for(runtime, args.warmup),
                                     preload_first, retry=not args.expect_failure)
            print(f"accuracy: {runtime:6} {shape:14} tdstat {result.tdstat:.3f} "
                  f"kernel {result.kernel:.3f}", flush=True)
            results.append(result)
    print(table(results, args.expect_failure))
    failed = [r for r in results if not r.holds and asserted(r)]
    for r in results:
        if not r.holds and not asserted(r):
            print(f"accuracy: {r.runtime} {r.shape}: ratio {r.ratio:.3f} outside the tolerance: "
                  f"printed, asserted by the long version (not CI=true)", flush=True)
    if args.expect_failure:
        return 0 if len(failed) == len(results) else 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
