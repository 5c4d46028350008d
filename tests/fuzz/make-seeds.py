#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz_agent: the region of a real shim (read
# from a live rel_target through /proc/PID/mem), each with a few scripts,
# plus edge cases.  Run once by hand; the seeds are kept in git.
#   make-seeds.py BUILD_DIR OUT_DIR [sync|marks]
# With `sync`, only the seeds of the synchronization-object calls: the
# whole region (16 records and their details) of tests/sync's
# sync_target, parked in its deadlock, with WILD_READS so the objects its
# records name read hostile bytes.
import os, struct, subprocess, sys, time

build, out = sys.argv[1], sys.argv[2]


def script(lookup, flags, fail_after, ops):
    ops = list(ops)[:12]
    return bytes([lookup, flags, fail_after, len(ops)] + ops + [0] * (12 - len(ops)))


def shim_region_offset(shim):
    for line in subprocess.run(["nm", "-D", shim], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if parts[-1] == "tdstat_region":
            return int(parts[0], 16)


# With `marks` (BUILD_DIR unused), the seeds of a region of ABI 2.3: the
# sync-deadlock seed's region (16 records) with the change marks appended
# (one block of 256 words in tdstat_change_slot's order, each twice its
# record's seq, some odd: a change under way), so that the fuzzer starts
# from regions whose marks the agent reads and keeps between calls.
if len(sys.argv) > 3 and sys.argv[3] == "marks":
    with open(os.path.join(out, "sync-deadlock"), "rb") as f:
        base_region = bytearray(f.read()[16:])
    records_offset, record_size = struct.unpack_from("<II", base_region, 24)
    capacity = struct.unpack_from("<I", base_region, 32)[0]

    def change_slot(i):
        return (i & ~255) | (i & 15) << 4 | (i >> 4 & 15)

    def marked(odd):
        region = bytearray(base_region)
        struct.pack_into("<H", region, 10, 3)                      # abi_minor
        struct.pack_into("<I", region, 128, len(region))           # changes_offset
        marks = [0] * 256
        for i in range(capacity):
            seq = struct.unpack_from("<I", region, records_offset + i * record_size)[0]
            marks[change_slot(i)] = 2 * seq + (1 if i in odd else 0)
        region += struct.pack("<256I", *marks)
        struct.pack_into("<Q", region, 16, len(region))            # region_size
        return bytes(region)

    seeds = {
        "marks-all-calls": script(0, 0, 0, [0, 1, 2, 3, 0, 1, 5, 0, 4, 1, 6, 0]) + marked({3}),
        "marks-thread-iteration": script(0, 0, 0, [0x87, 0x87, 0, 0x87, 1, 0x87]) + marked({0, 5}),
        "marks-odd-seq": script(0, 16, 0, [0, 0x87, 1, 0x87, 0, 0]) + marked(()),
        # the target changes between calls (op 7): marks and records alike
        "marks-mutating": script(0, 0, 0, [1, 0x87, 7, 1, 0x87, 15, 1, 0x87, 23, 1, 0x87, 0]) + marked({3}),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds" % len(seeds))
    sys.exit(0)

if len(sys.argv) > 3 and sys.argv[3] == "sync":
    shim = os.path.join(build, "runtime/libtdshim.so")
    target = os.path.join(build, "tests/sync/tdstat_sync_target")
    env = dict(os.environ, LD_PRELOAD=shim, TDSTAT_ENABLE="1", TDSTAT_MAX_THREADS="16")
    child = subprocess.Popen([target], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    while child.stdout.readline().strip() != b"ready":
        pass
    with open("/proc/%d/maps" % child.pid) as maps:
        base = next(int(l.split("-")[0], 16) for l in maps if "libtdshim" in l and l.split()[2] == "00000000")
    # The region compacted to 16 records and their details, right after
    # the header (the offsets and sizes in the header say so).
    start = base + shim_region_offset(shim)
    with open("/proc/%d/mem" % child.pid, "rb") as mem:
        mem.seek(start)
        header = bytearray(mem.read(4096))
        records_offset, record_size = struct.unpack_from("<II", header, 24)
        details_offset, detail_size = struct.unpack_from("<II", header, 40)
        mem.seek(start + records_offset)
        records = mem.read(16 * record_size)
        mem.seek(start + details_offset)
        details = mem.read(16 * detail_size)
    header = header[:records_offset]
    struct.pack_into("<I", header, 32, 16)                                 # record_capacity
    struct.pack_into("<I", header, 40, records_offset + 16 * record_size)  # details_offset
    struct.pack_into("<Q", header, 16, records_offset + 16 * (record_size + detail_size))  # region_size
    region = bytes(header) + records + details
    child.kill()
    child.wait()
    os.makedirs(out, exist_ok=True)
    seeds = {
        "sync-deadlock": script(0, 0, 0, [0x47, 0x4f, 0x57]) + region,
        "sync-wild-objects": script(0, 32, 0, [0x47, 0x5f, 0x47]) + region,
        "sync-failing-reads": script(0, 8 | 32, 40, [0x47, 0x47]) + region,
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds" % len(seeds))
    sys.exit(0)

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
