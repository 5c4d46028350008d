#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""regression.shim.async_unwind: a forced unwinding from any instruction of
the shim's wrappers ends the thread cleanly.

    async_unwind_test.py --shim S --target T [--gdb gdb] [--readelf readelf] [--nm nm]

Asynchronous cancellation, or a pthread_exit from a signal handler, unwinds
from whatever instruction the thread was at, and runs the cleanups of the
wrappers it passes (a wait scope ends there).  The unwinder gives a
cleanup the stack pointer of that instruction; where a wrapper moved its
stack pointer between calls (the push of a seventh argument), the cleanup
ran 8 bytes off, and the first aligned SSE store below it faulted: the
target of reliability.torture died of a general protection fault in CI.

The test finds every function of the shim that has cleanups (an LSDA in its
FDE: readelf), puts a breakpoint on each of its instructions, and runs
async_unwind_target under gdb with the shim preloaded in the target's
environment only.  Each time a thread stops at one of them, the breakpoint
goes and the thread gets SIGUSR2, whose handler calls pthread_exit: the
thread must end and be joined, the process must never fault.  The run ends
when 20 threads in a row went through every call untouched (every
breakpoint they can reach is spent).

Fails on: a fault or any other stop than the breakpoints; the target not
ending with "done N" and status 0; fewer than 100 instructions tried, or
none in the syscall() futex path (futex_wait_call) or a sleep wrapper (the
test would prove nothing).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

GDB_SCRIPT = r'''
import gdb, json, sys

config = json.load(open(CONFIG))
progress = open(PROGRESS, "w")
tried = {}
main_thread_hits = 0
untouched_in_a_row = 0
last_stop = None
exit_code = None
failure = None

def on_stop(event):
    global last_stop
    last_stop = event

def on_exit(event):
    global exit_code
    exit_code = event.exit_code if hasattr(event, "exit_code") else -1

gdb.events.stop.connect(on_stop)
gdb.events.exited.connect(on_exit)
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set breakpoint pending on")
gdb.execute("set breakpoint always-inserted on")
gdb.execute("set environment LD_PRELOAD=" + config["shim"])
gdb.execute("set environment TDSTAT_ENABLE=1")
gdb.execute("handle SIGUSR2 nostop noprint pass")
gdb.execute("file " + config["target"])
gdb.execute("break main")
gdb.execute("run", to_string=True)
base = int(gdb.parse_and_eval("(unsigned long)&tdstat_region")) - config["region_offset"]
arch = gdb.selected_frame().architecture()
by_address = {}
for name, start, end in config["ranges"]:
    for insn in arch.disassemble(base + start, base + end - 1):
        by_address[insn["addr"]] = name
breakpoints = {}
for address in by_address:
    breakpoints[address] = gdb.Breakpoint("*0x%x" % address, internal=True)
gdb.Breakpoint("fodder_done", internal=True)
gdb.execute("delete 1")
done_pc = int(gdb.parse_and_eval("(unsigned long)&fodder_done"))
last_tried = "none"

# Each stop decides how the target goes on: SIGUSR2 for a thread stopped
# at an instruction not tried yet, else on as it was.
command = "continue"
while True:
    last_stop = None
    try:
        gdb.execute(command, to_string=True)
    except gdb.error as e:
        if exit_code is None:
            failure = "gdb: %s" % e
        break
    if exit_code is not None or last_stop is None:
        break
    command = "continue"
    if isinstance(last_stop, gdb.SignalEvent):
        frame = gdb.selected_frame()
        failure = "the target got %s in %s (%d instructions tried; the last: %s)" % (
            last_stop.stop_signal, frame.name() or hex(frame.pc()), len(tried), last_tried)
        print(gdb.execute("bt 12", to_string=True))
        break
    pc = gdb.selected_frame().pc()
    if pc >= done_pc and pc < done_pc + 16:
        untouched_in_a_row += 1
        if untouched_in_a_row >= 20:
            gdb.execute("set var finished = 1")
        continue
    bp = breakpoints.pop(pc, None)
    if bp is None:
        continue
    bp.delete()
    if gdb.selected_thread().num == 1:
        main_thread_hits += 1
        continue
    untouched_in_a_row = 0
    last_tried = "%s (0x%x)" % (by_address[pc], pc - base)
    tried[pc - base] = by_address[pc]
    progress.write(last_tried + "\n")
    progress.flush()
    command = "signal SIGUSR2"

functions = sorted(set(tried.values()))
json.dump({"tried": len(tried), "functions": functions, "main_thread_hits": main_thread_hits,
           "exit_code": exit_code, "failure": failure}, open(RESULT, "w"))
if exit_code is None:
    gdb.execute("kill")
'''


def function_ranges(shim, readelf, nm):
    """(name, start, end) of every function with an LSDA, none of the .cold
    parts (they are the cleanups themselves)."""
    frames = subprocess.run([readelf, "--debug-dump=frames", shim], capture_output=True, text=True,
                            check=True).stdout
    ranges = []
    fde = None
    for line in frames.splitlines():
        m = re.search(r"FDE cie=\w+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", line)
        if m:
            fde = (int(m.group(1), 16), int(m.group(2), 16))
            continue
        if fde and "Augmentation data:" in line:
            data = line.split(":", 1)[1].split()
            if data and any(byte != "00" for byte in data):
                ranges.append(fde)
            fde = None
        elif line.strip() == "":
            fde = None
    symbols = []
    region = None
    for line in subprocess.run([nm, "--defined-only", shim], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        address, kind, name = int(parts[0], 16), parts[1], parts[2]
        if name == "tdstat_region":
            region = address
        if kind in "tT":
            symbols.append((address, name))
    symbols.sort()
    named = []
    for start, end in ranges:
        name = None
        for address, symbol in symbols:
            if address <= start:
                name = symbol
            else:
                break
        if name and not name.endswith(".cold"):
            named.append((name, start, end))
    return named, region


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shim", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--gdb", default="gdb")
    parser.add_argument("--readelf", default="readelf")
    parser.add_argument("--nm", default="nm")
    args = parser.parse_args()
    if not shutil.which(args.gdb):
        print("async_unwind: no gdb here: skipped")
        return SKIP
    ranges, region = function_ranges(args.shim, args.readelf, args.nm)
    if region is None or not ranges:
        print("async_unwind: FAIL: no tdstat_region or no function with cleanups in %s" % args.shim)
        return 1
    with tempfile.TemporaryDirectory() as work:
        config = os.path.join(work, "config.json")
        result = os.path.join(work, "result.json")
        progress = os.path.join(work, "progress")
        script = os.path.join(work, "drive.py")
        with open(config, "w") as f:
            json.dump({"shim": os.path.abspath(args.shim), "target": os.path.abspath(args.target),
                       "region_offset": region, "ranges": ranges}, f)
        with open(script, "w") as f:
            f.write("CONFIG = %r\nRESULT = %r\nPROGRESS = %r\n" % (config, result, progress) + GDB_SCRIPT)
        try:
            run = subprocess.run([args.gdb, "-q", "-nx", "-batch", "-x", script], capture_output=True,
                                 text=True, timeout=300)
        except subprocess.TimeoutExpired:
            with open(progress) as f:
                tried = f.read().split("\n")
            print("async_unwind: FAIL: no end within 300 s: a hang after a forced unwinding from %s "
                  "(%d instructions tried)" % (tried[-2] if len(tried) > 1 else "none", len(tried) - 1))
            return 1
        output = run.stdout + run.stderr
        if not os.path.exists(result):
            print("async_unwind: FAIL: gdb ended without a result\n" + output[-4000:])
            return 1
        with open(result) as f:
            outcome = json.load(f)
    failures = []
    if outcome["failure"]:
        failures.append(outcome["failure"])
    if outcome["exit_code"] != 0:
        failures.append("the target ended with %s, want status 0" % outcome["exit_code"])
    elif not re.search(r"^done \d+", output, re.M):
        failures.append("the target did not print its done line")
    if outcome["tried"] < 100:
        failures.append("only %d instructions tried" % outcome["tried"])
    for needed in ("futex_wait_call",):
        if needed not in outcome["functions"]:
            failures.append("no instruction of %s tried" % needed)
    print("async_unwind: a forced unwinding from %d instructions of %d functions with cleanups "
          "(%d functions have them): %s" % (outcome["tried"], len(outcome["functions"]), len(ranges),
                                            ", ".join(outcome["functions"])))
    for failure in failures:
        print("async_unwind: FAIL: " + failure)
    if failures:
        print(output[-6000:])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
