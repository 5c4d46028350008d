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
  not-elf-executable  EXECUTABLE is a text file or empty: said so, not
                   passed over in silence
  fifo-nt-file     a file the core's NT_FILE note names (the program) was
                   replaced by a FIFO since the dump: no hang, an error
  fifo-nt-file-align8  the same, with the core's NT_FILE moved into a new
                   first PT_NOTE of 8-byte alignment, laid out so that a
                   4-byte reading of it parses too (and finds nothing):
                   libdwfl reads the first PT_NOTE by its alignment
  fifo-link-map    the name of libc in the dynamic linker's list, in the
                   core's memory (where a damaged core may hold any path),
                   made to name a FIFO: libdwfl open()s those names
                   blocking, and NT_FILE's check does not see them
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
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77
TIMEOUT = 20


class Failure(Exception):
    pass


def tdstat_core(args, *paths, cwd=None):
    try:
        result = subprocess.run([args.tdstat, "core", *paths], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                timeout=TIMEOUT, text=True, cwd=cwd)
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


def scenario_not_elf_executable(args, work):
    _, core = sleeper_core(work)
    for name, content in [("text", b"#!/bin/sh\necho not a program\n"), ("empty", b"")]:
        path = os.path.join(work, name)
        with open(path, "wb") as f:
            f.write(content)
        result = tdstat_core(args, core, path)
        one_error(result, "not-elf-executable " + name)
        if "not an ELF file" not in result.stdout:
            raise Failure("not-elf-executable: %s should be called no ELF file:\n%s" % (name, result.stdout))


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


NT_FILE = 0x46494C45


def notes_of(data):
    """(header offset, descriptor offset, size, type) of the notes of
    every PT_NOTE, read 4-byte aligned (as gcore writes them)."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    out = []
    for i in range(phnum):
        p_type, _, offset, _, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
        at = offset
        while p_type == 4 and at + 12 <= offset + filesz:
            namesz, descsz, kind = struct.unpack_from("<III", data, at)
            desc = at + 12 + ((namesz + 3) & ~3)
            out.append((at, desc, descsz, kind))
            at = desc + ((descsz + 3) & ~3)
    return out


def nt_file_first_align8(data):
    """The core with its NT_FILE in a new first PT_NOTE (p_align 8) and
    the old one renamed.  In the 8-byte layout the descriptor starts at
    24; read 4-byte aligned it starts at 20, where its count is then the
    padding and half the true count (too many: no names read), and the
    zeros after it parse as empty notes either way."""
    copy = bytearray(data)
    found = [n for n in notes_of(data) if n[3] == NT_FILE]
    if not found:
        raise Failure("the gcore has no NT_FILE note")
    header, desc_at, size, _ = found[0]
    struct.pack_into("<I", copy, header + 8, 0x454C4946)  # no longer NT_FILE
    desc = data[desc_at:desc_at + size] + bytes(8)
    desc += bytes((4 - len(desc) % 8) % 8)  # size = 4 mod 8, ending in zeros
    note = struct.pack("<III", 5, len(desc), NT_FILE) + b"CORE\0" + bytes(7) + desc + bytes(4) + bytes(16)
    copy += bytes(-len(copy) % 8)
    note_at = len(copy)
    copy += note
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    table = struct.pack("<IIQQQQQQ", 4, 0, note_at, 0, 0, len(note), 0, 8) + data[phoff:phoff + phnum * phentsize]
    struct.pack_into("<Q", copy, 0x20, len(copy))
    struct.pack_into("<H", copy, 0x38, phnum + 1)
    return bytes(copy + table)


def scenario_fifo_nt_file_align8(args, work):
    program, core = sleeper_core(work)
    with open(core, "rb") as f:
        data = f.read()
    crafted = os.path.join(work, "crafted")
    with open(crafted, "wb") as f:
        f.write(nt_file_first_align8(data))
    os.unlink(program)
    os.mkfifo(program)
    one_error(tdstat_core(args, crafted), "fifo-nt-file-align8")


def nt_file_names(data):
    header, desc, size, _ = [n for n in notes_of(data) if n[3] == NT_FILE][0]
    count, = struct.unpack_from("<Q", data, desc)
    names = data[desc + 16 + 24 * count:desc + size].split(b"\0")
    return [name for name in names[:count] if name]


def scenario_fifo_link_map(args, work):
    _, core = sleeper_core(work)
    with open(core, "rb") as f:
        data = bytearray(f.read())
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    libc = [name for name in nt_file_names(data) if b"libc.so" in name]
    if not libc:
        raise Failure("fifo-link-map: the core maps no libc")
    # The dynamic linker's name for it may differ from NT_FILE's (a
    # symbolic link in the path): any absolute path to the same file name.
    tail = b"/" + os.path.basename(bytes(libc[0])) + b"\0"
    replaced = 0
    for i in range(phnum):
        p_type, _, offset, _, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
        at = data.find(tail, offset, offset + filesz) if p_type == 1 else -1
        while at >= 0:
            start = data.rfind(b"\0", offset, at) + 1
            if start > offset and data[start:start + 1] == b"/" and at + len(tail) - start >= 7:
                # Relative to tdstat's directory: shorter than any libc path.
                data[start:start + 7] = b"./fifo\0"
                replaced += 1
            at = data.find(tail, at + 1, offset + filesz)
    if replaced == 0:
        raise Failure("fifo-link-map: libc's name is not in the core's memory")
    crafted = os.path.join(work, "crafted")
    with open(crafted, "wb") as f:
        f.write(data)
    os.mkfifo(os.path.join(work, "fifo"))
    one_error(tdstat_core(args, crafted, cwd=work), "fifo-link-map")


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
    "not-elf-executable": scenario_not_elf_executable,
    "fifo-executable": scenario_fifo_executable,
    "fifo-nt-file": scenario_fifo_nt_file,
    "fifo-nt-file-align8": scenario_fifo_nt_file_align8,
    "fifo-link-map": scenario_fifo_link_map,
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
