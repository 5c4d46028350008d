#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz_agent: the region of a real shim (read
# from a live rel_target through /proc/PID/mem), each with a few scripts,
# plus edge cases.  Run once by hand; the seeds are kept in git.
#   make-seeds.py BUILD_DIR OUT_DIR
import os, struct, subprocess, sys, time

build, out = sys.argv[1], sys.argv[2]
shim = os.path.join(build, "runtime/libtdshim.so")
target = os.path.join(build, "tests/reliability/rel_target")
offset = None
for line in subprocess.run(["nm", "-D", shim], capture_output=True, text=True).stdout.splitlines():
    parts = line.split()
    if parts[-1] == "tdstat_region":
        offset = int(parts[0], 16)
env = dict(os.environ, LD_PRELOAD=shim, TDSTAT_ENABLE="1", REL_EARLY="0")
child = subprocess.Popen([target, "churn", "6"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
child.stdout.readline()
time.sleep(0.2)
base = None
with open("/proc/%d/maps" % child.pid) as maps:
    for line in maps:
        if "libtdshim" in line and line.split()[2] == "00000000":
            base = int(line.split("-")[0], 16)
            break
with open("/proc/%d/mem" % child.pid, "rb") as mem:
    mem.seek(base + offset)
    region = mem.read(256 + 64 * 16)
child.stdin.write(b"exit\n"); child.stdin.flush(); child.wait()

def script(lookup, flags, fail_after, ops):
    ops = list(ops)[:12]
    return bytes([lookup, flags, fail_after, len(ops)] + ops + [0] * (12 - len(ops)))

os.makedirs(out, exist_ok=True)
seeds = {
    "live-all-calls": script(0, 0, 0, [0, 1, 2, 3, 0, 1, 5, 0, 4, 1, 6, 0]) + region,
    "live-read-only": script(0, 0, 0, [0, 1, 2]) + region,
    "live-failing-writes": script(0, 1, 0, [3, 4, 5, 6, 0]) + region,
    "live-failing-reads": script(0, 8, 5, [0, 1, 2, 3]) + region,
    "live-odd-seq": script(0, 16, 0, [0, 1]) + region,
    "live-bad-pid": script(0, 4, 0, [1, 3, 4]) + region,
    "live-mutating": script(0, 0, 0, [7, 0, 15, 1, 23, 2, 31, 0]) + region,
    "live-thread-iteration": script(0, 0, 0, [0x87, 0x8f, 7, 0x87, 5, 0x87]) + region,
    "header-only": script(0, 2, 0, [0, 1, 2]) + region[:256],
    "nosym": script(1, 0, 0, []) + region[:256],
    "lookup-error": script(2, 0, 0, []) + region[:256],
    "null-address": script(3, 0, 0, []) + region[:256],
    "short": script(0, 0, 0, [0]) + region[:40],
}
# a region claiming the largest capacity with high_water past it
big = bytearray(region)
struct.pack_into("<I", big, 32, 1 << 22)         # record_capacity
struct.pack_into("<Q", big, 16, 256 + (1 << 22) * 64)  # region_size
struct.pack_into("<I", big, 192, 0xffffffff)     # status.high_water
seeds["huge-capacity"] = script(0, 2, 0, [0, 1, 2]) + bytes(big)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print("wrote %d seeds" % len(seeds))
