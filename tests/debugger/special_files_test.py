#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`tdstat core` given special files, one scenario per run:

    special_files_test.py SCENARIO --tdstat T

Scenarios (CTest label `debugger`):
  fifo-core        COREFILE is a FIFO: one error line and exit 1, not an
                   open() that waits for a writer forever
  not-a-file-core  COREFILE is a directory, a device or a FIFO: the one
                   error line says which (not "Invalid argument")
  fifo-executable  EXECUTABLE is a FIFO beside a good core: no hang
  fifo-nt-file     a file the core's NT_FILE note names (the program) was
                   replaced by a FIFO since the dump: no hang, an error
  gdb-wrong-program  gdb given another program than the one a preloaded
                   core was dumped from (gdb /bin/true CORE): gdb then
                   knows none of the core's libraries, and info
                   thread-stats must not claim the process never loaded
                   the shim (it did: the core maps it)

A hang is a failure: every run has a timeout.  The cores are gcores of a
copy of sleep(1), a few MB.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
TIMEOUT = 20


class Failure(Exception):
    pass


def tdstat_core(args, *paths):
    try:
        result = subprocess.run([args.tdstat, "core", *paths], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                timeout=TIMEOUT, text=True)
    except subprocess.TimeoutExpired:
        raise Failure("tdstat core %s hung (no answer in %d s)" % (" ".join(paths), TIMEOUT))
    return result


def one_error(result, name):
    lines = [l for l in result.stdout.splitlines() if l]
    if result.returncode != 1 or len(lines) != 1 or not lines[0].startswith("tdstat: "):
        raise Failure("%s: expected one error line and exit 1, got exit %d:\n%s"
                      % (name, result.returncode, result.stdout))


def sleeper_core(work, env=None):
    """A copy of sleep run from work, and a gcore of it."""
    program = os.path.join(work, "sleeper")
    shutil.copy(shutil.which("sleep"), program)
    process = subprocess.Popen([program, "600"], env=env)
    try:
        time.sleep(0.2)
        prefix = os.path.join(work, "core")
        result = subprocess.run(["timeout", "60", "gcore", "-o", prefix, str(process.pid)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode != 0:
            raise Failure("gcore failed:\n" + result.stdout)
    finally:
        process.kill()
        process.wait()
    return program, "%s.%d" % (prefix, process.pid)


def scenario_fifo_core(args, work):
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    one_error(tdstat_core(args, fifo), "fifo-core")


def scenario_not_a_file_core(args, work):
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    for path, what in [(work, "a directory"), (os.devnull, "a device"), (fifo, "a FIFO")]:
        result = tdstat_core(args, path)
        one_error(result, "not-a-file-core " + path)
        if "is %s" % what not in result.stdout or "core dump" not in result.stdout:
            raise Failure("not-a-file-core: %s should be called %s, with the fix:\n%s" % (path, what, result.stdout))


def scenario_fifo_executable(args, work):
    _, core = sleeper_core(work)
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    result = tdstat_core(args, core, fifo)
    # sleep has no shim: an error either way, but an answer.
    one_error(result, "fifo-executable")


def scenario_fifo_nt_file(args, work):
    program, core = sleeper_core(work)
    os.unlink(program)
    os.mkfifo(program)
    one_error(tdstat_core(args, core), "fifo-nt-file")


def scenario_gdb_wrong_program(args, work):
    if not args.shim or not args.script or shutil.which("gdb") is None:
        return
    env = dict(os.environ)
    env["LD_PRELOAD"] = args.shim
    env["TDSTAT_ENABLE"] = "1"
    _, core = sleeper_core(work, env)
    try:
        result = subprocess.run(["gdb", "-nx", "-batch", "-ex", "source " + args.script,
                                 "-ex", "info thread-stats", shutil.which("true"), core],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                timeout=60, text=True)
    except subprocess.TimeoutExpired:
        raise Failure("gdb hung")
    if "has not loaded" in result.stdout:
        raise Failure("gdb-wrong-program: claims the preloaded process never loaded the shim:\n" + result.stdout)


SCENARIOS = {
    "gdb-wrong-program": scenario_gdb_wrong_program,
    "fifo-core": scenario_fifo_core,
    "not-a-file-core": scenario_not_a_file_core,
    "fifo-executable": scenario_fifo_executable,
    "fifo-nt-file": scenario_fifo_nt_file,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--tdstat", required=True)
    parser.add_argument("--shim")
    parser.add_argument("--script")
    args = parser.parse_args()
    if shutil.which("gcore") is None or shutil.which("sleep") is None:
        print("skipped: gcore is needed (scripts/install-deps.sh installs gdb)")
        return SKIP
    work = tempfile.mkdtemp(prefix="tdstat-special-")
    try:
        SCENARIOS[args.scenario](args, work)
    except Failure as failure:
        print("FAIL %s: %s" % (args.scenario, failure))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok %s" % args.scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main())
