#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tdstat in a debugger and after death, one scenario per run (docs/DESIGN.md,
"Core files and gdb").

    debugger_test.py SCENARIO --tdstat T --shim S --parked P --script G

Scenarios (CTest label `debugger`):
  gcore         `tdstat core` and gdb's `info thread-stats` on a gcore of the
                parked program: 5 threads, idle in cond, mutex, join, sleep;
                -t and -w name each thread's wait (object and caller) from
                the files the core names;
                a core reads the same twice (its window ends at the dump, not
                at the reader's clock); gdb's own thread list still works
  kernel-core   the same on the kernel's core of the program killed by
                SIGABRT (core_pattern set to a file for the run, restored
                after; skipped when it cannot be set), with the CPU time
  attached      gdb -p PID on the live program gives the same, and -t -w
                name every wait through gdb
  started       gdb starts the program itself, stops at parked_ready()
  control       `tdstat enable|reset|disable` in gdb change what `tdstat PID`
                reports
  hostile       truncated and corrupted cores: one error line, exit 1, never
                a crash or a hang
  crafted       cores of the parked program (with the shim) whose notes,
                headers or region lie in ways the checks of `hostile` pass:
                each gives one error line and exit 1, never a wrong figure
                printed as measured, a crash or a hang

Every gdb and tdstat run has a timeout; every program started is killed.
"""
import argparse
import csv
import glob
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77
TIMEOUT = 60
KINDS = {"cond": 0.5, "mutex": 0.5, "join": 0.5, "sleep": 0.5}


class Failure(Exception):
    pass


def check(condition, message, output=""):
    if not condition:
        raise Failure(message + ("\n--- output ---\n" + output if output else ""))


def clean_environment():
    env = dict(os.environ)
    # No network lookups for build IDs, in gdb or in libdwfl.
    env.pop("DEBUGINFOD_URLS", None)
    env.pop("LD_PRELOAD", None)
    return env


def run(argv, **kwargs):
    # A damaged core may name its program in any bytes: never fail decoding.
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                          timeout=TIMEOUT + 10, env=clean_environment(), **kwargs)


class Parked:
    """The parked program, preloaded, started and killed by us."""

    def __init__(self, args, enable=True, arguments=(), core_limit=False):
        env = clean_environment()
        env["LD_PRELOAD"] = args.shim
        if enable:
            env["TDSTAT_ENABLE"] = "1"

        def limits():
            if core_limit:
                resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

        self.process = subprocess.Popen([args.parked, *arguments], stdout=subprocess.PIPE, env=env,
                                        preexec_fn=limits)
        ready, _, _ = select.select([self.process.stdout], [], [], TIMEOUT)
        line = self.process.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            self.kill()
            raise Failure("the parked program did not get ready: %r" % line)
        self.pid = self.process.pid

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=TIMEOUT)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


def gdb(args, target_args, commands):
    argv = ["timeout", str(TIMEOUT), "gdb", "-nx", "-batch", "-ex", "set debuginfod enabled off",
            "-ex", "source " + args.script]
    for command in commands:
        argv += ["-ex", command]
    result = run(argv + target_args)
    check(result.returncode != 124, "gdb timed out", result.stdout)
    return result.stdout


def gdb_stats(output):
    """threads and idle-by-kind averages from `info thread-stats`."""
    match = re.search(r"^process \d+ \(.*\): (\d+) threads, window ([0-9.]+) s", output, re.M)
    check(match is not None, "no process line from info thread-stats", output)
    kinds_line = re.search(r"^  idle by kind: (.*)$", output, re.M)
    check(kinds_line is not None, "no idle-by-kind line", output)
    words = kinds_line.group(1).split()
    kinds = {words[i]: float(words[i + 1]) for i in range(0, len(words) - 1, 2)}
    return int(match.group(1)), kinds


def check_gdb_waits(output):
    """info thread-stats -t -w names each parked thread's wait through gdb."""
    for wait in ("cond never in wait_cond", "mutex lock in wait_mutex", "sleep - in sleep_long", "in join_sleeper"):
        check(re.search(r"^ +\d+ +blocked .*" + re.escape(wait), output, re.M) is not None,
              "info thread-stats -t: a thread waiting in %s" % wait, output)
    check(re.search(r"^  mutex +lock +wait_mutex +1$", output, re.M) is not None,
          "info thread-stats -w: one thread waiting on lock", output)


def check_parked(threads, kinds, output, scale=1.0):
    """scale < 1 where the window also holds a slow start under gdb."""
    check(threads == 5, "expected the parked program's 5 threads, got %d" % threads, output)
    for kind, least in KINDS.items():
        least *= scale
        check(kinds.get(kind, 0.0) >= least, "expected %s >= %.2f, got %s" % (kind, least, kinds), output)
    check(sum(kinds.values()) <= 5.01, "more idle threads than threads: %s" % kinds, output)


def tdstat_core(args, core, *options):
    result = run(["timeout", str(TIMEOUT), args.tdstat, "core", *options, core, args.parked])
    check(result.returncode != 124, "tdstat core timed out", result.stdout)
    return result


def check_core(args, core, kernel):
    text = tdstat_core(args, core)
    check(text.returncode == 0, "tdstat core failed", text.stdout)
    check("5 threads in the core" in text.stdout, "tdstat core does not count 5 threads", text.stdout)
    if kernel:
        check("dumped on signal 6" in text.stdout, "the kernel core's signal is not SIGABRT", text.stdout)
        check(re.search(r"^CPU time [0-9.]+ s \(the core's NT_PRSTATUS notes\)", text.stdout, re.M),
              "a kernel core has its CPU time", text.stdout)
    else:
        check("CPU time not in the core" in text.stdout, "gcore writes no CPU time: say so", text.stdout)
    first = tdstat_core(args, core, "--json")
    second = tdstat_core(args, core, "--json")
    check(first.returncode == 0, "tdstat core --json failed", first.stdout)
    record = json.loads(first.stdout)
    check(record["nthreads"] == 5, "JSON nthreads", first.stdout)
    check_parked(record["nthreads"], {k: v for k, v in record["idle_by"].items() if v >= 0.005}, first.stdout)
    # -t and -w: who waits on what, named from the files the core names.
    rows = tdstat_core(args, core, "-t", "-w", "--json")
    check(rows.returncode == 0, "tdstat core -t -w failed", rows.stdout)
    lines = [json.loads(line) for line in rows.stdout.splitlines()]
    threads = [line for line in lines if "tid" in line]
    check(len(threads) == 5, "tdstat core -t: five thread rows", rows.stdout)
    waits = {(line.get("wait"), line.get("object"), line.get("site")) for line in threads}
    expected = [("cond", "never", "wait_cond"), ("mutex", "lock", "wait_mutex"), ("sleep", "-", "sleep_long")]
    # main naps between gcore's stops; in the kernel's core it is in abort().
    if not kernel:
        expected.append(("sleep", "-", "main"))
    for wait in expected:
        check(wait in waits, "tdstat core -t: a thread waiting in %s on %s in %s" % wait, rows.stdout)
    check(any(w[0] == "join" and w[2] == "join_sleeper" for w in waits), "tdstat core -t: the joiner", rows.stdout)
    objects = {(line["kind"], line.get("object"), line.get("site")) for line in lines
               if "kind" in line and not line.get("ended")}
    for wait in [("cond", "never", "wait_cond"), ("mutex", "lock", "wait_mutex")]:
        check(wait in objects, "tdstat core -w: %s on %s from %s" % wait, rows.stdout)
    table = tdstat_core(args, core, "--format", "csv")
    rows = list(csv.DictReader(table.stdout.splitlines()))
    check(table.returncode == 0 and len(rows) == 1 and rows[0]["nthreads"] == "5" and
          float(rows[0]["idle_cond"]) >= 0.5, "tdstat core --format csv: one row of the 5 threads", table.stdout)
    # The window of a core ends at the dump: reading it again later
    # gives the same figures (a live clock would stretch the window).
    time.sleep(0.2)
    check(first.stdout == second.stdout, "two readings of one core differ", first.stdout + second.stdout)

    output = gdb(args, [args.parked, core], ["info thread-stats -t -w", "info threads", "tdstat reset"])
    threads, kinds = gdb_stats(output)
    check_parked(threads, kinds, output)
    check_gdb_waits(output)
    check("at the dump" in output, "gdb on a core: the window ends at the dump", output)
    check("a core cannot be changed" in output, "gdb on a core: reset is refused", output)
    # gdb's own libthread_db still names the threads after ours ran.
    check(len(re.findall(r"^[* ] +\d+ +Thread 0x[0-9a-f]+ \(LWP \d+\)", output, re.M)) == 5,
          "gdb's thread list (its libthread_db) was disturbed", output)
    return record


def scenario_gcore(args, work):
    with Parked(args) as parked:
        prefix = os.path.join(work, "core")
        result = run(["timeout", str(TIMEOUT), "gcore", "-o", prefix, str(parked.pid)])
        check(result.returncode == 0, "gcore failed", result.stdout)
    check_core(args, "%s.%d" % (prefix, parked.pid), kernel=False)


def scenario_kernel_core(args, work):
    pattern_file = "/proc/sys/kernel/core_pattern"
    try:
        with open(pattern_file) as f:
            saved = f.read()
        with open(pattern_file, "w") as f:
            f.write(os.path.join(work, "kcore.%p"))
    except OSError as error:
        print("skipped: cannot set %s (%s): kernel cores need root" % (pattern_file, error))
        return SKIP
    try:
        parked = Parked(args, arguments=["abort"], core_limit=True)
        status = parked.process.wait(timeout=TIMEOUT)
    finally:
        with open(pattern_file, "w") as f:
            f.write(saved)
    check(status == -signal.SIGABRT, "the program did not die of SIGABRT: %s" % status)
    cores = glob.glob(os.path.join(work, "kcore.*"))
    check(len(cores) == 1, "no kernel core written: %s" % cores)
    check_core(args, cores[0], kernel=True)
    return 0


def scenario_attached(args, work):
    with Parked(args) as parked:
        output = gdb(args, ["-p", str(parked.pid)], ["info thread-stats -t -w", "info threads"])
        threads, kinds = gdb_stats(output)
        check_parked(threads, kinds, output)
        check_gdb_waits(output)
        check("live process" in output, "attached: a live process", output)
        check(len(re.findall(r"Thread 0x[0-9a-f]+ \(LWP \d+\)", output)) >= 5,
              "gdb's thread list (its libthread_db) was disturbed", output)
        check(parked.process.poll() is None, "the program did not survive gdb's detach")


def scenario_started(args, work):
    output = gdb(args, [args.parked], [
        "info thread-stats",
        "set startup-with-shell off",
        "set environment LD_PRELOAD " + args.shim,
        "set environment TDSTAT_ENABLE 1",
        "starti", "info thread-stats",
        "break parked_ready", "continue", "info thread-stats", "kill"])
    check("tdstat: no process" in output, "no inferior yet: say so", output)
    # At the first instruction the dynamic linker has not loaded the shim.
    check("has not loaded libtdshim.so" in output, "before the shim is loaded: say so", output)
    threads, kinds = gdb_stats(output)
    # The window began at exec: it holds the start under gdb (slow on a
    # loaded machine) before the threads parked.
    check_parked(threads, kinds, output, scale=0.1)


def tdstat_json(args, pid):
    result = run(["timeout", str(TIMEOUT), args.tdstat, "-c", "1", "--json", str(pid)])
    return result.returncode, result.stdout


def scenario_control(args, work):
    with Parked(args, enable=False) as parked:
        status, output = tdstat_json(args, parked.pid)
        check(status == 1 and "gathering is off" in output, "gathering starts off", output)

        output = gdb(args, ["-p", str(parked.pid)], ["tdstat enable"])
        check("enable done" in output, "tdstat enable in gdb", output)
        time.sleep(2)
        status, output = tdstat_json(args, parked.pid)
        check(status == 0, "tdstat after gdb's enable", output)
        before = json.loads(output)
        check(before["nthreads"] == 5 and before["idle_by"]["cond"] > 0, "figures after enable", output)

        output = gdb(args, ["-p", str(parked.pid)], ["tdstat reset"])
        check("reset done" in output, "tdstat reset in gdb", output)
        status, output = tdstat_json(args, parked.pid)
        check(status == 0, "tdstat after gdb's reset", output)
        after = json.loads(output)
        # Without the reset this window would have grown past `before`'s.
        check(after["window_s"] < before["window_s"],
              "reset did not start a new window: %.3f s then %.3f s" % (before["window_s"], after["window_s"]))

        output = gdb(args, ["-p", str(parked.pid)], ["tdstat disable"])
        check("disable done" in output, "tdstat disable in gdb", output)
        status, output = tdstat_json(args, parked.pid)
        check(status == 1 and "gathering is off" in output, "gathering off after gdb's disable", output)


# Hostile cores -----------------------------------------------------------

def load_segments(data):
    """(offset, vaddr, filesz) of the PT_LOADs, and the PT_NOTE spans."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, notes = [], []
    for i in range(phnum):
        entry = phoff + i * phentsize
        p_type, _, offset, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, entry)
        if p_type == 1:
            loads.append((offset, vaddr, filesz))
        elif p_type == 4:
            notes.append((offset, filesz, entry))
    return phoff, phentsize, phnum, loads, notes


def mutants(data, seed):
    """Named variants of a small core: truncations, bad headers, bad
    notes, bad segments, and seeded byte flips in the headers and notes."""
    phoff, phentsize, phnum, loads, notes = load_segments(data)
    note_start, note_size, note_entry = notes[0]
    out = {}
    for name, size in [("empty", 0), ("short-ident", 10), ("ehdr-only", 64),
                       ("half-phdrs", phoff + phnum * phentsize // 2),
                       ("phdrs-only", phoff + phnum * phentsize),
                       ("notes-begun", note_start + 20), ("half-notes", note_start + note_size // 2),
                       ("notes-only", note_start + note_size), ("half-file", len(data) // 2)]:
        out["truncated-" + name] = data[:size]

    def patched(offset, fmt, value):
        copy = bytearray(data)
        struct.pack_into(fmt, copy, offset, value)
        return bytes(copy)
    out["type-exec"] = patched(0x10, "<H", 2)
    out["machine-i386"] = patched(0x12, "<H", 3)
    out["class-32"] = patched(4, "<B", 1)
    out["phnum-huge"] = patched(0x38, "<H", 0xffff)
    out["phoff-past-end"] = patched(0x20, "<Q", len(data) + 4096)
    out["phoff-overflow"] = patched(0x20, "<Q", 0xfffffffffffffff0)
    out["phentsize-odd"] = patched(0x36, "<H", 7)
    out["note-namesz-huge"] = patched(note_start, "<I", 0xffffffff)
    out["note-descsz-huge"] = patched(note_start + 4, "<I", 0xfffffff0)
    out["note-descsz-small"] = patched(note_start + 4, "<I", 8)
    out["note-offset-past-end"] = patched(note_entry + 8, "<Q", len(data) * 2)
    out["note-size-huge"] = patched(note_entry + 32, "<Q", 1 << 40)
    for index in range(min(phnum, 6)):
        entry = phoff + index * phentsize
        out["phdr%d-filesz-huge" % index] = patched(entry + 32, "<Q", 1 << 44)
        out["phdr%d-vaddr-wraps" % index] = patched(entry + 16, "<Q", 0xfffffffffffff000)
        out["phdr%d-offset-huge" % index] = patched(entry + 8, "<Q", 1 << 50)
    rng = random.Random(seed)
    hot = note_start + note_size
    for n in range(60):
        copy = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            position = rng.randrange(hot)
            copy[position] = rng.randrange(256)
        out["flipped-%02d" % n] = bytes(copy)
    return out


def check_hostile(args, path, name):
    result = tdstat_core(args, path)
    lines = [l for l in result.stdout.splitlines() if l]
    check(result.returncode in (0, 1), "%s: exit %d (a crash?)" % (name, result.returncode), result.stdout)
    if result.returncode == 1:
        check(len(lines) == 1 and lines[0].startswith("tdstat: "), "%s: not one error line" % name, result.stdout)
    return result


def scenario_hostile(args, work):
    # A small core to mutate: a program without the shim (sleep).
    sleeper = subprocess.Popen(["sleep", "600"], env=clean_environment())
    try:
        prefix = os.path.join(work, "small")
        result = run(["timeout", str(TIMEOUT), "gcore", "-o", prefix, str(sleeper.pid)])
        check(result.returncode == 0, "gcore of sleep failed", result.stdout)
    finally:
        sleeper.kill()
        sleeper.wait()
    with open("%s.%d" % (prefix, sleeper.pid), "rb") as f:
        small = f.read()
    errors = 0
    for name, data in sorted(mutants(small, seed=13).items()):
        path = os.path.join(work, "mutant")
        with open(path, "wb") as f:
            f.write(data)
        errors += check_hostile(args, path, name).returncode == 1
    check(errors > 20, "damaged cores should be refused: only %d errors" % errors)
    for name, text in [("truncated-empty", "not an ELF core file"), ("type-exec", "not an ELF core file"),
                       ("machine-i386", "another machine")]:
        with open(os.path.join(work, "mutant"), "wb") as f:
            f.write(mutants(small, 13)[name])
        result = check_hostile(args, os.path.join(work, "mutant"), name)
        check(text in result.stdout, "%s: expected '%s'" % (name, text), result.stdout)
    result = check_hostile(args, os.path.join(work, "no-such-core"), "missing")
    check("cannot open" in result.stdout, "a missing core file", result.stdout)

    # A core of the parked program whose statistics region was left out
    # (as /proc/PID/coredump_filter can): libc_db's reads fail, and the
    # command says the memory is not in the core.  Then the same core cut
    # in half: gcore writes its notes last, so it has no thread left.
    with Parked(args) as parked:
        prefix = os.path.join(work, "parked")
        result = run(["timeout", str(TIMEOUT), "gcore", "-o", prefix, str(parked.pid)])
        check(result.returncode == 0, "gcore failed", result.stdout)
    core = "%s.%d" % (prefix, parked.pid)
    output = gdb(args, [args.parked, core],
                 ["python print('region=%d' % int(gdb.parse_and_eval(\"(unsigned long)&'tdstat_region'\")))"])
    region = int(re.search(r"region=(\d+)", output).group(1))
    with open(core, "r+b") as f:
        head = f.read(1 << 20)
        phoff, phentsize, phnum, _, _ = load_segments(head)
        entries = []
        for i in range(phnum):
            entry = phoff + i * phentsize
            p_type, _, _, vaddr, _, filesz, memsz, _ = struct.unpack_from("<IIQQQQQQ", head, entry)
            if p_type == 1 and vaddr <= region < vaddr + memsz:
                entries.append(entry)
        check(len(entries) == 1, "the region is not in one PT_LOAD of the core")
        f.seek(entries[0] + 32)
        f.write(struct.pack("<Q", 0))
    result = check_hostile(args, core, "region-left-out")
    check(result.returncode == 1 and "not in the core" in result.stdout,
          "a core without the region's memory", result.stdout)
    os.truncate(core, os.path.getsize(core) // 2)
    result = check_hostile(args, core, "gcore-cut-in-half")
    check(result.returncode == 1 and "truncated or damaged" in result.stdout,
          "a gcore cut in half", result.stdout)


def core_notes(data):
    """(offset of the descriptor, its size, type, name) of every note."""
    _, _, _, _, spans = load_segments(data)
    out = []
    for start, size, _ in spans:
        at = start
        while at + 12 <= start + size:
            namesz, descsz, kind = struct.unpack_from("<III", data, at)
            name = data[at + 12:at + 12 + namesz]
            desc = at + 12 + ((namesz + 3) & ~3)
            out.append((desc, descsz, kind, name))
            at = desc + ((descsz + 3) & ~3)
    return out


NT_PRSTATUS, NT_AUXV, NT_FILE, AT_PAGESZ = 1, 6, 0x46494C45, 6
PRSTATUS_PPID, PRSTATUS_UTIME = 36, 48  # x86-64 and aarch64 prstatus_t


def crafted_cpu(data, seconds, microseconds):
    """Every NT_PRSTATUS made a kernel's (parent, group, session set)
    with this user time."""
    copy = bytearray(data)
    for desc, _, kind, name in core_notes(data):
        if kind == NT_PRSTATUS and name == b"CORE\0":
            struct.pack_into("<iii", copy, desc + PRSTATUS_PPID, 1, 1, 1)
            struct.pack_into("<qq", copy, desc + PRSTATUS_UTIME, seconds, microseconds)
    return bytes(copy)


def crafted_loads(data, count, elf_every=0):
    """The core with count more PT_LOADs of one page each, at addresses
    nothing else uses, in a program header table moved to the end; every
    elf_every-th of them holds the program's ELF header (the core's first
    PT_LOAD: libdwfl reports a module there), the others a page of zeros."""
    phoff, phentsize, phnum, loads, _ = load_segments(data)
    header = min(loads, key=lambda load: load[1])[0]
    check(data[header:header + 4] == b"\x7fELF", "the core's first segment is no ELF header")
    zeros = len(data)
    copy = bytearray(data) + bytes(4096)
    table = bytearray(data[phoff:phoff + phnum * phentsize])
    for i in range(count):
        offset = header if elf_every and i % elf_every == 0 else zeros
        table += struct.pack("<IIQQQQQQ", 1, 4, offset, 0x100000000000 + i * 0x2000, 0, 4096, 4096, 1)
    total = phnum + count
    struct.pack_into("<Q", copy, 0x20, len(copy))
    if total >= 0xffff:
        # Extended numbering: the count in section 0's sh_info.
        shoff, = struct.unpack_from("<Q", data, 0x28)
        check(shoff != 0, "the gcore has no section header for extended numbering")
        struct.pack_into("<H", copy, 0x38, 0xffff)
        struct.pack_into("<I", copy, shoff + 44, total)
    else:
        struct.pack_into("<H", copy, 0x38, total)
    return bytes(copy + table)


REGION_MAGIC = struct.pack("<Q", 0x0152746174736474)  # include/tdstat/region.h
REGION_SIZE, REGION_RECORDS_OFFSET, REGION_WINDOW_START = 16, 24, 192  # struct tdstat_region_header
RECORD_PENDING = 8                                     # struct tdstat_record


def region_at(data):
    """The file offsets of the statistics region (found by its magic,
    64-byte aligned) and of the end of the segment that holds it."""
    _, _, _, loads, _ = load_segments(data)
    for offset, vaddr, filesz in loads:
        at = data.find(REGION_MAGIC, offset, offset + filesz)
        while at >= 0 and (vaddr + at - offset) % 64 != 0:
            at = data.find(REGION_MAGIC, at + 1, offset + filesz)
        if at >= 0:
            return at, offset + filesz
    raise Failure("no statistics region in the core")


def crafted_region_stamp(data, stamp):
    """The core with the first record's pending stamp set to
    stamp(window start)."""
    at, end = region_at(data)
    records, = struct.unpack_from("<I", data, at + REGION_RECORDS_OFFSET)
    start, = struct.unpack_from("<Q", data, at + REGION_WINDOW_START)
    check(at + records + RECORD_PENDING + 8 <= end, "the first record is not in the header's segment")
    copy = bytearray(data)
    struct.pack_into("<Q", copy, at + records + RECORD_PENDING, stamp(start))
    return bytes(copy)


def crafted_file_notes(data, copies):
    """The core with copies more PT_NOTEs, each the same NT_FILE of 1 MB
    (names of files that do not exist), after the core's own."""
    count = 25000
    desc = struct.pack("<QQ", count, 4096)
    desc += b"".join(struct.pack("<QQQ", 0x300000000000 + i * 4096, 0x300000000000 + (i + 1) * 4096, 0)
                     for i in range(count))
    desc += b"".join(b"/nonexistent/f%05d\0" % i for i in range(count))
    desc += bytes(-len(desc) % 4)
    note = struct.pack("<III", 5, len(desc), NT_FILE) + b"CORE\0\0\0\0" + desc
    phoff, phentsize, phnum, _, _ = load_segments(data)
    copy = bytearray(data)
    note_at = len(copy)
    copy += note
    table = data[phoff:phoff + phnum * phentsize] + struct.pack("<IIQQQQQQ", 4, 0, note_at, 0, 0, len(note), 0, 4) * copies
    struct.pack_into("<Q", copy, 0x20, len(copy))
    struct.pack_into("<H", copy, 0x38, phnum + copies)
    return bytes(copy + table)


def crafted_extra_note(data, note):
    """The core with one more PT_NOTE, after its own, holding note."""
    phoff, phentsize, phnum, _, _ = load_segments(data)
    copy = bytearray(data)
    note_at = len(copy)
    copy += note
    table = data[phoff:phoff + phnum * phentsize] + struct.pack("<IIQQQQQQ", 4, 0, note_at, 0, 0, len(note), 0, 4)
    struct.pack_into("<Q", copy, 0x20, len(copy))
    struct.pack_into("<H", copy, 0x38, phnum + 1)
    return bytes(copy + table)


def check_crafted(args, work, name, data, expected, seconds=TIMEOUT):
    path = os.path.join(work, "crafted")
    with open(path, "wb") as f:
        f.write(data)
    start = time.monotonic()
    result = check_hostile(args, path, name)
    took = time.monotonic() - start
    check(result.returncode == 1 and expected in result.stdout,
          "%s: expected exit 1 and '%s'" % (name, expected), result.stdout)
    check(took < seconds, "%s: refused after %.1f s, not at once" % (name, took), result.stdout)


def scenario_crafted(args, work):
    with Parked(args) as parked:
        prefix = os.path.join(work, "parked")
        result = run(["timeout", str(TIMEOUT), "gcore", "-o", prefix, str(parked.pid)])
        check(result.returncode == 0, "gcore failed", result.stdout)
    core = "%s.%d" % (prefix, parked.pid)
    with open(core, "rb") as f:
        data = f.read()
    os.unlink(core)
    # A CPU time past 64-bit nanoseconds (no kernel writes one) wrapped
    # to a small figure printed as measured, and a microsecond field out
    # of range was read as no time at all.
    sane = crafted_cpu(data, 2, 500000)
    path = os.path.join(work, "crafted")
    with open(path, "wb") as f:
        f.write(sane)
    result = tdstat_core(args, path)
    check(result.returncode == 0 and "CPU time 2.500 s" in result.stdout,
          "a kernel-like note's CPU time is read", result.stdout)
    for name, seconds, microseconds in [("cpu-wraps", 1 << 62, 0), ("cpu-usec-out-of-range", 1, 1000000),
                                        ("cpu-negative", -1, 0)]:
        check_crafted(args, work, name, crafted_cpu(data, seconds, microseconds), "truncated or damaged")
    # libdwfl's time is quadratic in the segments and in the modules
    # found in them: 2^20 segments kept tdstat core busy for many
    # minutes.  Past the bounds the core is refused before libdwfl sees it.
    many = crafted_loads(data, 300000)
    check_crafted(args, work, "segments-300000", many, "holds more than tdstat reads", seconds=10)
    check_crafted(args, work, "elf-headers-5000", crafted_loads(data, 5000, elf_every=1),
                  "holds more than tdstat reads", seconds=10)
    # One stamp of the region made huge by a stray write: the window of a
    # core ends at its latest stamp, so it ran to 255 years and printed
    # every average as near nothing (exit 0).  The records may not end
    # after the core file was written.
    for name, stamp in [("pending-huge", lambda start: 0x7000000000000000),
                        ("pending-3h-late", lambda start: start + 3 * 3600 * 10**9)]:
        check_crafted(args, work, name, crafted_region_stamp(data, stamp), "statistics region")
    # A region whose header lies (region_size below the header's own):
    # the error names the likely cause and what to do.
    copy = bytearray(data)
    struct.pack_into("<Q", copy, region_at(data)[0] + REGION_SIZE, 64)
    check_crafted(args, work, "region-size-64", bytes(copy), "find the stray write")
    # One word of NT_AUXV (the page size) made all ones: libdwfl then
    # finds no module, and the shim's symbol is not found.  The core's
    # NT_FILE names the shim: "the process had not loaded libtdshim.so"
    # (and "start it with tdstat run") was false; the core is damaged.
    copy = bytearray(data)
    auxv = [(desc, size) for desc, size, kind, name in core_notes(data) if kind == NT_AUXV and name == b"CORE\0"]
    check(len(auxv) == 1, "the gcore has no NT_AUXV")
    for at in range(auxv[0][0], auxv[0][0] + auxv[0][1], 16):
        if struct.unpack_from("<Q", copy, at)[0] == AT_PAGESZ:
            struct.pack_into("<Q", copy, at + 8, (1 << 64) - 1)
    check_crafted(args, work, "auxv-pagesz-ones", bytes(copy), "truncated or damaged")
    # A thread's NT_PRSTATUS repeated (in a PT_NOTE after the core's
    # own): "6 threads in the core" of five, printed as read.
    prstatus = [(desc, size) for desc, size, kind, name in core_notes(data)
                if kind == NT_PRSTATUS and name == b"CORE\0"][0]
    note = data[prstatus[0] - 20:prstatus[0] + prstatus[1]]
    check_crafted(args, work, "prstatus-twice", crafted_extra_note(data, note), "truncated or damaged")
    # libdwfl reads NT_FILE in the first PT_NOTE only; its names were
    # checked (a stat() each) in every PT_NOTE: 900 more PT_NOTEs all
    # naming one NT_FILE of 1 MB took 20 s (the notes stay under 1 GiB).
    with open(path, "wb") as f:
        f.write(crafted_file_notes(data, 900))
    start = time.monotonic()
    result = tdstat_core(args, path)
    took = time.monotonic() - start
    check(result.returncode == 0 and took < 10, "900 PT_NOTEs naming one big NT_FILE: %.1f s" % took, result.stdout)
    # -s on a core: tracking cannot be turned on in a core, and a region
    # partly left out of it is the core's failure, said as for the
    # process line (not "td_err_e 15", not "tdstat sync enable PID").
    with open(path, "wb") as f:
        f.write(data)
    result = tdstat_core(args, path, "-s")
    check(result.returncode == 1 and "at the dump" in result.stdout and "TDSTAT_SYNC_TRACKING=1" in result.stdout,
          "-s on a core without tracking", result.stdout)
    at, _ = region_at(data)
    phoff, phentsize, phnum, _, _ = load_segments(data)
    copy = bytearray(data)
    for i in range(phnum):
        entry = phoff + i * phentsize
        p_type, _, offset, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, entry)
        if p_type == 1 and offset <= at < offset + filesz:
            struct.pack_into("<Q", copy, entry + 32, at - offset + 4096)  # the header, not the records
    with open(path, "wb") as f:
        f.write(copy)
    result = tdstat_core(args, path, "-s")
    check(result.returncode == 1 and "not in the core" in result.stdout,
          "-s on a core without the region's records", result.stdout)
    # Below them, a core with many segments is still read.
    with open(path, "wb") as f:
        f.write(crafted_loads(data, 20000, elf_every=10))
    result = tdstat_core(args, path)
    check(result.returncode == 0 and "5 threads in the core" in result.stdout,
          "a core with 20000 more segments, 2000 of them ELF headers, is read", result.stdout)


SCENARIOS = {
    "gcore": scenario_gcore,
    "kernel-core": scenario_kernel_core,
    "attached": scenario_attached,
    "started": scenario_started,
    "control": scenario_control,
    "hostile": scenario_hostile,
    "crafted": scenario_crafted,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    for option in ("tdstat", "shim", "parked", "script"):
        parser.add_argument("--" + option, required=True)
    args = parser.parse_args()
    if shutil.which("gdb") is None or shutil.which("gcore") is None:
        print("skipped: gdb and gcore are needed (scripts/install-deps.sh installs them)")
        return SKIP
    work = tempfile.mkdtemp(prefix="tdstat-debugger-")
    try:
        status = SCENARIOS[args.scenario](args, work) or 0
    except Failure as failure:
        print("FAIL %s: %s" % (args.scenario, failure))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if status == 0:
        print("ok %s" % args.scenario)
    return status


if __name__ == "__main__":
    sys.exit(main())
