#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Owners, waiters and deadlocks in `tdstat -w` (docs/CONTRACT.md §9), live
and from a gcore, in every format, read back with real parsers.

The target is sync_target.c: taker-a holds lock_alpha and waits for
lock_beta, taker-b the reverse (a deadlock); tab-writer write-locked
table_lock, tab-reader and tab-writer2 wait for it; slot-1 and slot-2
wait on the semaphore free_slots.  With "free" the takers do not
deadlock: no deadlock may be named then.

Scenarios (one CTest test each):
  live      text, json, csv and openmetrics of a live target: the cycle
            named with both threads by tid and name, both objects by
            name; the rwlock's writer and waiters; the semaphore's
            waiters and no owner
  free      the same program without the deadlock: no deadlock line,
            JSON "deadlocks" empty, OpenMetrics tdstat_deadlocks 0
  gcore     `tdstat core -w` on a gcore of the deadlocked target: the
            same cycle by tids (a core keeps no thread names), and JSON;
            then gdb's `info thread-stats -w` on that core
  gdb       gdb attached to the live target (gdb -p): `info thread-stats
            -w` names the cycle with gdb's thread names
Exit 77 (skip) for gcore and gdb when gdb is not installed."""

import argparse
import csv
import io
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
TIMEOUT = 60


class Failure(Exception):
    pass


def check(condition, message, output=""):
    if not condition:
        raise Failure(message + ("\n--- output ---\n" + output if output else ""))


def clean_environment():
    env = dict(os.environ)
    env.pop("DEBUGINFOD_URLS", None)
    env.pop("LD_PRELOAD", None)
    return env


class Target:
    """sync_target, preloaded, until every thread is parked."""

    def __init__(self, args, *arguments):
        env = clean_environment()
        env["LD_PRELOAD"] = args.shim
        env["TDSTAT_ENABLE"] = "1"
        self.process = subprocess.Popen([args.target, *arguments], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env)
        self.pid = self.process.pid
        self.tids = {}
        while True:
            ready, _, _ = select.select([self.process.stdout], [], [], TIMEOUT)
            line = self.process.stdout.readline() if ready else ""
            if line.startswith("thread "):
                _, name, tid = line.split()
                self.tids[name] = int(tid)
                continue
            if line.strip() != "ready":
                self.kill()
                raise Failure("sync_target did not get ready: %r" % line)
            break

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=TIMEOUT)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


def run(argv):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                            timeout=TIMEOUT + 10, env=clean_environment())
    return result


def tdstat(args, *argv):
    result = run([args.tdstat, *argv])
    check(result.returncode == 0, "tdstat %s failed" % " ".join(argv), result.stdout)
    return result.stdout


def expected_deadlock(tids, named=True):
    a, b = tids["taker-a"], tids["taker-b"]

    def who(tid, name):
        return "%d (%s)" % (tid, name) if named else "%d" % tid

    first, second = (("taker-a", a, "lock_beta"), ("taker-b", b, "lock_alpha"))
    if b < a:
        first, second = second, first
    return ("deadlock: thread %s waits for mutex %s held by thread %s, which waits for mutex %s held by thread %s" %
            (who(first[1], first[0]), first[2], who(second[1], second[0]), second[2], who(first[1], first[0])))


def sync_rows(text):
    """The wait-for rows of a text block: {object: (type, state, owner, waiters)}."""
    rows = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("SYNC "):
            for row in lines[i + 1:]:
                match = re.match(r"^(mutex|rwlock|cond|sem)\s+(\S+)\s+(free|locked|write-locked|readers \d+|count \d+|-)"
                                 r"\s+(-|\d+(?: \([^)]*\))?)\s+(.*)$", row)
                if not match:
                    break
                rows[match.group(2)] = match.groups()
    return rows


def check_text(text, target, deadlocked, named=True):
    tids = target.tids

    def who(name):
        return "%d (%s)" % (tids[name], name) if named else "%d" % tids[name]

    rows = sync_rows(text)
    check("table_lock" in rows and "free_slots" in rows, "the rwlock and the semaphore are listed", text)
    kind, _, state, owner, waiters = rows["table_lock"]
    check((kind, state, owner) == ("rwlock", "write-locked", who("tab-writer")),
          "table_lock: write-locked, held by tab-writer", text)
    check(sorted(waiters.split(", ")) == sorted([who("tab-reader"), who("tab-writer2")]),
          "table_lock's waiters: tab-reader and tab-writer2", text)
    kind, _, state, owner, waiters = rows["free_slots"]
    check((kind, state, owner) == ("sem", "count 0", "-"), "free_slots: a semaphore at 0, no owner", text)
    check(sorted(waiters.split(", ")) == sorted([who("slot-1"), who("slot-2")]),
          "free_slots' waiters: slot-1 and slot-2", text)
    deadlocks = [line for line in text.splitlines() if line.startswith("deadlock:")]
    if not deadlocked:
        check(deadlocks == [], "no deadlock without one", text)
        check("lock_beta" not in rows or rows["lock_beta"][4] == "", "nobody waits for lock_beta", text)
        return
    check(deadlocks == [expected_deadlock(tids, named)], "one deadlock line naming the cycle", text)
    check(rows["lock_alpha"][1:] == ("mutex", "lock_alpha", "locked", who("taker-a"), who("taker-b"))[1:],
          "lock_alpha: held by taker-a, taker-b waits", text)
    check(rows["lock_beta"][1:] == ("mutex", "lock_beta", "locked", who("taker-b"), who("taker-a"))[1:],
          "lock_beta: held by taker-b, taker-a waits", text)


def check_json(text, target, deadlocked, named=True):
    lines = [json.loads(line) for line in text.splitlines()]
    graphs = [line["deadlocks"] for line in lines if "deadlocks" in line]
    check(len(graphs) == 1, "one deadlocks object per moment", text)
    syncs = {line["object"]: line for line in lines if "sync" in line}
    table = syncs.get("table_lock")
    check(table is not None and table["sync"] == "rwlock" and table["write_locked"] and
          table["owner"]["tid"] == target.tids["tab-writer"], "JSON: table_lock's writer", text)
    slots = syncs.get("free_slots")
    check(slots is not None and slots["owner"] is None and slots["count"] == 0 and
          sorted(w["tid"] for w in slots["waiters"]) == sorted([target.tids["slot-1"], target.tids["slot-2"]]),
          "JSON: free_slots' waiters, no owner", text)
    if not deadlocked:
        check(graphs[0] == [], "JSON: no deadlocks", text)
        return
    check(len(graphs[0]) == 1, "JSON: one cycle", text)
    cycle = graphs[0][0]
    steps = {step["tid"]: step for step in cycle}
    a, b = target.tids["taker-a"], target.tids["taker-b"]
    check(sorted(steps) == sorted([a, b]), "JSON: the cycle's threads are the takers", text)
    check(steps[a]["waits_for"]["object"] == "lock_beta" and steps[b]["waits_for"]["object"] == "lock_alpha",
          "JSON: each taker waits for the other's lock", text)
    if named:
        check(steps[a]["name"] == "taker-a" and steps[b]["name"] == "taker-b", "JSON: thread names", text)
    check(syncs["lock_alpha"]["owner"]["tid"] == a and syncs["lock_alpha"]["deadlocked"], "JSON: lock_alpha", text)


def check_csv(text, target, deadlocked):
    rows = list(csv.DictReader(io.StringIO(text)))
    widths = {len(row) for row in csv.reader(io.StringIO(text))}
    check(len(widths) == 1, "CSV: every row has the heading's columns (with -t, -w and the graph)", text)
    syncs = {row["object"]: row for row in rows if row["record"] == "sync"}
    deadlocks = [row for row in rows if row["record"] == "deadlock"]
    check(syncs["table_lock"]["owner_tid"] == str(target.tids["tab-writer"]), "CSV: table_lock's writer", text)
    check(syncs["free_slots"]["owner_tid"] == "" and syncs["free_slots"]["waiting"] == "2",
          "CSV: free_slots, two waiters, no owner", text)
    if deadlocked:
        check(len(deadlocks) == 1 and deadlocks[0]["deadlock"] == expected_deadlock(target.tids)[len("deadlock: "):],
              "CSV: one deadlock record with the cycle", text)
    else:
        check(deadlocks == [], "CSV: no deadlock record", text)


def check_openmetrics(text, target, deadlocked):
    try:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    except ImportError:
        text_string_to_metric_families = None
    if text_string_to_metric_families:
        families = {family.name: family for family in text_string_to_metric_families(text)}
        count = [s.value for s in families["tdstat_deadlocks"].samples]
        waiters = {s.labels["object"]: s for s in families["tdstat_sync_waiters"].samples}
    else:
        count = [float(m) for m in re.findall(r"^tdstat_deadlocks\{[^}]*\} (\S+)$", text, re.M)]
        waiters = {}
    check(count == [1.0 if deadlocked else 0.0], "OpenMetrics: tdstat_deadlocks", text)
    if waiters:
        check(waiters["table_lock"].value == 2 and
              waiters["table_lock"].labels["owner_tid"] == str(target.tids["tab-writer"]),
              "OpenMetrics: table_lock's waiters and writer", text)


def scenario_live(args, deadlocked=True):
    with Target(args, *([] if deadlocked else ["free"])) as target:
        pid = str(target.pid)
        check_text(tdstat(args, "-w", "-c", "1", pid), target, deadlocked)
        check_json(tdstat(args, "-w", "-c", "1", "--format", "json", pid), target, deadlocked)
        check_csv(tdstat(args, "-t", "-w", "-c", "1", "--format", "csv", pid), target, deadlocked)
        check_openmetrics(tdstat(args, "-w", "-c", "1", "--format", "openmetrics", pid), target, deadlocked)


def scenario_free(args):
    scenario_live(args, deadlocked=False)


def scenario_gcore(args):
    if shutil.which("gcore") is None:
        print("skipped: gcore (gdb) is needed (scripts/install-deps.sh installs it)")
        return SKIP
    work = tempfile.mkdtemp(prefix="tdstat-sync-")
    try:
        with Target(args) as target:
            prefix = os.path.join(work, "core")
            result = run(["timeout", str(TIMEOUT), "gcore", "-o", prefix, str(target.pid)])
            check(result.returncode == 0, "gcore failed", result.stdout)
        core = "%s.%d" % (prefix, target.pid)
        # The target is gone: everything comes from the core.
        check_text(tdstat(args, "core", "-w", core, args.target), target, True, named=False)
        check_json(tdstat(args, "core", "-w", "--format", "json", core, args.target), target, True, named=False)
        text = gdb(args, [args.target, core])
        deadlocks = [line for line in text.splitlines() if line.startswith("deadlock:")]
        check(deadlocks in ([expected_deadlock(target.tids)], [expected_deadlock(target.tids, named=False)]),
              "gdb on the core: one deadlock line naming the cycle", text)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def gdb(args, target_args):
    argv = ["timeout", str(TIMEOUT), "gdb", "-nx", "-batch", "-ex", "set debuginfod enabled off",
            "-ex", "source " + args.script, "-ex", "info thread-stats -w", *target_args]
    result = run(argv)
    check(result.returncode != 124, "gdb timed out", result.stdout)
    return result.stdout


def scenario_gdb(args):
    if shutil.which("gdb") is None:
        print("skipped: gdb is needed (scripts/install-deps.sh installs it)")
        return SKIP
    with Target(args) as target:
        text = gdb(args, ["-p", str(target.pid)])
    deadlocks = [line for line in text.splitlines() if line.startswith("deadlock:")]
    check(deadlocks == [expected_deadlock(target.tids)], "gdb: one deadlock line naming the cycle", text)
    rows = {line.split()[1]: line for line in text.splitlines() if re.match(r"^  (mutex|rwlock|sem|cond) ", line)}
    check("table_lock" in rows and "write-locked" in rows["table_lock"] and
          "%d (tab-writer)" % target.tids["tab-writer"] in rows["table_lock"], "gdb: table_lock's writer", text)
    check("free_slots" in rows and "count 0" in rows["free_slots"], "gdb: free_slots", text)
    return 0


def scenario_cxx(args):
    """A C++ program (std::mutex members of two global accounts, locked in
    opposite orders by std::thread workers): the cycle named by the
    accounts, the callers demangled as gdb and perf show them."""
    env = clean_environment()
    env["LD_PRELOAD"] = args.shim
    env["TDSTAT_ENABLE"] = "1"
    process = subprocess.Popen([args.target], env=env)
    try:
        text = ""
        for _ in range(20):
            text = tdstat(args, "-w", "-c", "1", str(process.pid))
            if "deadlock:" in text:
                break
        # Then a line whose window holds the waits (the first may be 10 ms
        # long, with no idle time yet to name).
        time.sleep(0.5)
        text = tdstat(args, "-w", "-c", "1", str(process.pid))
        print(text)
        check("deadlock: " in text, "no deadlock line", text)
        line = [l for l in text.splitlines() if l.startswith("deadlock:")][0]
        check("mutex checking" in line and "mutex savings" in line,
              "the cycle does not name both accounts' mutexes", line)
        check("transfer(Account&, Account&, long)" in text, "the caller is not demangled", text)
        check("std::thread::join()" in text, "the joiner's caller is not demangled", text)
        check("_Z" not in text, "a mangled name is left", text)
    finally:
        process.kill()
        process.wait(timeout=TIMEOUT)


def scenario_signals(args):
    """Tracked tries on two mutexes while a signal handler makes tracked
    tries on a semaphore without pause (signal_lookups.c): every count
    exact.  The lookup cache written in two stores charged A's and B's
    failed tries to C (off by 7-37 in 3,000,000 rounds)."""
    env = clean_environment()
    env["LD_PRELOAD"] = args.shim
    env["TDSTAT_SYNC_TRACKING"] = "1"
    process = subprocess.Popen([args.target, "1000000"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        ready, _, _ = select.select([process.stdout], [], [], TIMEOUT * 3)
        line = process.stdout.readline() if ready else ""
        check(line.startswith("expected "), "signal_lookups did not finish: %r" % line)
        a_try, a_fail, b_try, b_fail, c_try = map(int, line.split()[1:])
        check(c_try > 1000, "too few handlers ran to test anything (%d)" % c_try)
        rows = {}
        for row in tdstat(args, "-s", "--format", "json", str(process.pid)).splitlines():
            if row.startswith("{") and '"object"' in row:
                data = json.loads(row)
                rows[data["object"]] = data
        print(line.strip(), {k: {f: v for f, v in r.items() if "try" in f} for k, r in rows.items()})
        for name, want in (("lookup_a", (a_try, a_fail)), ("lookup_b", (b_try, b_fail))):
            check(name in rows, "no row for %s" % name, str(rows))
            got = (rows[name]["mutex_try"], rows[name]["mutex_try_fail"])
            check(got == want, "%s: tries and failures %s, expected %s" % (name, got, want))
        check("lookup_c" in rows, "no row for lookup_c", str(rows))
        got = (rows["lookup_c"]["sema_trywait"], rows["lookup_c"]["sema_trywait_fail"])
        check(got == (c_try, c_try), "lookup_c: tries and failures %s, expected %s" % (got, (c_try, c_try)))
    finally:
        process.kill()
        process.wait(timeout=TIMEOUT)


SCENARIOS = {"live": scenario_live, "free": scenario_free, "gcore": scenario_gcore, "gdb": scenario_gdb,
             "cxx": scenario_cxx, "signals": scenario_signals}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    for option in ("tdstat", "shim", "target", "script"):
        parser.add_argument("--" + option, required=True)
    args = parser.parse_args()
    try:
        status = SCENARIOS[args.scenario](args) or 0
    except Failure as failure:
        print("FAIL %s: %s" % (args.scenario, failure))
        return 1
    if status == 0:
        print("ok %s" % args.scenario)
    return status


if __name__ == "__main__":
    sys.exit(main())
