#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tdstat -s and tdstat sync enable|disable against sync_workload
(docs/CONTRACT.md §9): exact counts per object, in every format; tracking
off by default, switched from outside; counts that never decrease and
stay exact while readers and controllers act under load.
Environment: TDSTAT, TDSHIM, SYNC_WORKLOAD."""

import csv
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

try:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
except ImportError:  # the other formats are still checked
    text_string_to_metric_families = None

TDSTAT = os.environ["TDSTAT"]
N = 20000


class Target:
    def __init__(self, tracking):
        self.tracking = tracking

    def __enter__(self):
        env = dict(os.environ, LD_PRELOAD=os.environ["TDSHIM"])
        env.pop("TDSTAT_SYNC_TRACKING", None)
        if self.tracking:
            env["TDSTAT_SYNC_TRACKING"] = "1"
        self.process = subprocess.Popen([os.environ["SYNC_WORKLOAD"]], env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout.readline().strip() == "ready"
        self.pid = str(self.process.pid)
        return self

    def ask(self, command):
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()


def tdstat(*arguments, check=True):
    return subprocess.run([TDSTAT, *arguments], check=check, capture_output=True, text=True, timeout=60)


def json_lines(target):
    return [json.loads(line) for line in tdstat("-s", "--format", "json", target.pid).stdout.splitlines()]


def objects(target):
    """{object name: row} from tdstat -s --format json (the object lines)."""
    return {row["object"]: row for row in json_lines(target) if "object" in row}


def scrape():
    """One GET /metrics of `tdstat serve`, parsed: {family name: family}."""
    server = subprocess.Popen([TDSTAT, "serve", "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    try:
        url = server.stderr.readline().split("serving ", 1)[1].strip()
        request = urllib.request.Request(url, headers={"Accept": "application/openmetrics-text"})
        exposition = urllib.request.urlopen(request, timeout=30).read().decode()
    finally:
        server.terminate()
        server.wait()
        server.stderr.close()
    return {f.name: f for f in text_string_to_metric_families(exposition)}


class SyncStatistics(unittest.TestCase):
    def check_round(self, rows, rounds):
        mutex = rows["counted_lock"]
        self.assertEqual(mutex["type"], "mutex")
        self.assertEqual(mutex["mutex_lock"], 2 * N * rounds)
        self.assertLessEqual(mutex["mutex_sleep"], mutex["mutex_lock"])
        rwlock = rows["table_lock"]
        self.assertEqual((rwlock["type"], rwlock["rw_rdlock"], rwlock["rw_wrlock"]), ("rwlock", 4 * rounds, 3 * rounds))
        sema = rows["slots"]
        self.assertEqual((sema["type"], sema["sema_wait"], sema["sema_post"]), ("sem", 6 * rounds, 6 * rounds))
        self.assertEqual((sema["sema_max_count"], sema["sema_min_count"]), (2, 1))  # its value is 1 between rounds
        cond = rows["ready_cond"]
        self.assertEqual((cond["type"], cond["cond_signal"], cond["cond_broadcast"]), ("cond", 4 * rounds, rounds))
        self.assertEqual((cond["cond_wait"], cond["cond_timedwait"], cond["cond_timedwait_timeout"]),
                         (0, rounds, rounds))

    def test_exact_counts_in_every_format(self):
        with Target(tracking=True) as target:
            self.assertEqual(target.ask("round %d" % N), "done")
            self.check_round(objects(target), 1)
            text = tdstat("-s", target.pid).stdout
            line = next(l for l in text.splitlines() if l.startswith("counted_lock "))
            self.assertIn(" mutex_lock=%d " % (2 * N), line + " ")
            table = list(csv.DictReader(io.StringIO(tdstat("-s", "--format", "csv", target.pid).stdout, newline="")))
            row = next(r for r in table if r["object"] == "counted_lock")
            self.assertEqual((row["type"], row["mutex_lock"], row["sema_wait"]), ("mutex", str(2 * N), ""))
            self.assertTrue(all(None not in r for r in table), "a row longer than the heading")
            if text_string_to_metric_families:
                exposition = tdstat("-s", "--format", "openmetrics", target.pid).stdout
                families = {f.name: f for f in text_string_to_metric_families(exposition)}
                samples = [s for s in families["tdstat_sync_mutex_lock"].samples
                           if s.labels["object"] == "counted_lock"]
                self.assertEqual([s.value for s in samples], [2 * N])

    def test_tries_counted(self):
        """N tries of each kind, M of them failing (held by another thread,
        or an empty semaphore): exactly N and M, through td_sync_get_stats
        (tdstat -s, JSON and text); a shim that does not interpose the
        tries shows 0, one that counts its own lock paths' tries more."""
        tries, fails = 3000, 700
        with Target(tracking=True) as target:
            self.assertEqual(target.ask("round %d" % 10), "done")  # the lock paths' own tries: not counted
            self.assertEqual(target.ask("tries %d %d" % (tries, fails)), "tried")
            rows = objects(target)
            mutex, rwlock, sema = rows["try_lock"], rows["try_table"], rows["try_slots"]
            self.assertEqual((mutex["mutex_try"], mutex["mutex_try_fail"], mutex["mutex_lock"]), (tries, fails, 1))
            self.assertEqual((rwlock["rw_rdlock_try"], rwlock["rw_rdlock_try_fail"]), (tries, fails))
            self.assertEqual((rwlock["rw_wrlock_try"], rwlock["rw_wrlock_try_fail"]), (tries, fails))
            self.assertEqual((rwlock["rw_rdlock"], rwlock["rw_wrlock"]), (0, 1))  # the holder's
            self.assertEqual((sema["sema_trywait"], sema["sema_trywait_fail"], sema["sema_post"], sema["sema_wait"]),
                             (tries, fails, tries - fails, 0))
            self.assertEqual((sema["sema_min_count"], sema["sema_max_count"]), (0, 1))
            for name in ("counted_lock", "table_lock", "slots"):
                row = rows[name]
                counts = [row[k] for k in row if k.endswith(("_try", "_trywait"))]
                self.assertTrue(counts and not any(counts), name)
            text = tdstat("-s", target.pid).stdout
            line = next(l for l in text.splitlines() if l.startswith("try_lock "))
            self.assertIn(" mutex_try=%d mutex_try_fail=%d" % (tries, fails), line)

    def test_tries_not_counted_while_off(self):
        with Target(tracking=False) as target:
            self.assertEqual(target.ask("tries 100 30"), "tried")
            tdstat("sync", "enable", target.pid)
            self.assertEqual(target.ask("tries 50 20"), "tried")
            mutex = objects(target)["try_lock"]
            self.assertEqual((mutex["mutex_try"], mutex["mutex_try_fail"]), (50, 20))

    def test_table_overflow(self):
        """More mutexes than the table holds, each locked and unlocked once
        by one thread: the objects past the table are not tracked, and
        td_ta_sync_table's overflow counts each once (the unlock does not
        look it up again), exactly, in every format and in serve; a table
        that was not full reports none."""
        many = 6000
        with Target(tracking=True) as target:
            table = json_lines(target)[-1]["sync_table"]
            self.assertEqual((table["capacity"], table["overflow"], table["tracking"]), (4096, 0, True))
            self.assertNotIn("overflow:", tdstat("-s", target.pid).stdout)
            answer = target.ask("fill %d" % many).split()
            self.assertEqual(answer[0], "filled")
            start, size = int(answer[1], 16), int(answer[2])
            lines = json_lines(target)
            table = lines[-1]["sync_table"]
            rows = [row for row in lines if "object" in row]
            filled = [row for row in rows if start <= int(row["address"], 16) < start + size]
            self.assertTrue(all(row["mutex_lock"] == 1 for row in filled))
            untracked = many - len(filled)
            self.assertGreater(untracked, many - 4096 - 1)
            self.assertEqual(table["used"], len(rows))
            self.assertGreater(table["used"], 4000)  # 16 probes leave few entries unclaimed
            self.assertLessEqual(table["used"], table["capacity"])
            self.assertEqual(table["overflow"], untracked)
            overflow = table["overflow"]
            text = tdstat("-s", target.pid).stdout.splitlines()
            self.assertEqual([l for l in text if l.startswith("overflow:")],
                             ["overflow: %d lookups found no room in the table (4096 entries, %d used): those "
                              "objects are not tracked (a thread counts each once, again when it comes back to one "
                              "after another); entries are never freed: start the program again and turn tracking "
                              "on (tdstat sync enable PID) only for the part to study" % (overflow, table["used"])])
            table_rows = [r for r in csv.DictReader(io.StringIO(tdstat("-s", "--format", "csv", target.pid).stdout,
                                                                newline="")) if r["type"] == "table"]
            self.assertEqual([(r["capacity"], r["used"], r["overflow"]) for r in table_rows],
                             [("4096", str(table["used"]), str(overflow))])
            if text_string_to_metric_families:
                exposition = tdstat("-s", "--format", "openmetrics", target.pid).stdout
                families = {f.name: f for f in text_string_to_metric_families(exposition)}
                self.assertEqual([s.value for s in families["tdstat_sync_table_overflow"].samples], [overflow])
                self.assertEqual([s.value for s in families["tdstat_sync_table_used"].samples], [table["used"]])
                self.assertEqual([s.value for s in families["tdstat_sync_table_capacity"].samples], [4096])
                served = scrape()
                samples = [s for s in served["tdstat_sync_table_overflow"].samples if s.labels["pid"] == target.pid]
                self.assertEqual([s.value for s in samples], [overflow])

    def test_heaviest_first(self):
        with Target(tracking=True) as target:
            self.assertEqual(target.ask("round %d" % N), "done")
            rows = [json.loads(line) for line in tdstat("-s", "--json", target.pid).stdout.splitlines()]
            self.assertEqual(list(rows[-1]), ["pid", "sync_table"])  # the table's line comes last
            sleeps = [row["sleep_ns"] for row in rows[:-1]]
            self.assertEqual(sleeps, sorted(sleeps, reverse=True))

    def test_off_by_default_and_switched_from_outside(self):
        with Target(tracking=False) as target:
            self.assertEqual(target.ask("round %d" % N), "done")
            off = tdstat("-s", target.pid, check=False)
            self.assertEqual(off.returncode, 1)
            self.assertIn("tracking is off", off.stderr)
            tdstat("sync", "enable", target.pid)
            self.assertEqual(target.ask("round %d" % N), "done")
            self.check_round(objects(target), 1)  # only the round made while on
            tdstat("sync", "disable", target.pid)
            self.assertEqual(target.ask("round %d" % N), "done")
            tdstat("sync", "enable", target.pid)
            self.check_round(objects(target), 1)  # the round made while off is not counted
            self.assertEqual(target.ask("round %d" % N), "done")
            self.check_round(objects(target), 2)

    def test_under_load_never_decreasing_and_exact(self):
        """Tracking on for the whole run, readers and controllers (enables,
        which start new epochs) acting while two threads hammer the lock:
        every reading at least the one before, the last exactly the locks made."""
        with Target(tracking=True) as target:
            self.assertEqual(target.ask("load"), "loading")
            last = 0
            for i in range(30):
                count = objects(target)["counted_lock"]["mutex_lock"]
                self.assertGreaterEqual(count, last)
                last = count
                if i % 3 == 0:
                    tdstat("sync", "enable", target.pid)
            answer = target.ask("stop").split()
            self.assertEqual(answer[0], "stopped")
            self.assertGreater(int(answer[1]), last)
            rows = objects(target)
            self.assertEqual(rows["counted_lock"]["mutex_lock"], int(answer[1]))
            # Two threads posting and taking one semaphore, counted exactly.
            sema = rows["load_slots"]
            self.assertEqual((sema["sema_post"], sema["sema_wait"]), (int(answer[1]), int(answer[1])))

    def test_toggled_under_load(self):
        """Tracking switched off and on under load: no reading ever goes
        down, no count exceeds the locks made, and nothing is counted while off."""
        with Target(tracking=False) as target:
            tdstat("sync", "enable", target.pid)
            self.assertEqual(target.ask("load"), "loading")
            last = 0
            last_sema = (0, 0)
            for i in range(10):
                tdstat("sync", "disable", target.pid)
                tdstat("sync", "enable", target.pid)
                rows = objects(target)
                count = rows["counted_lock"]["mutex_lock"]
                self.assertGreaterEqual(count, last)
                last = count
                sema = (rows["load_slots"]["sema_post"], rows["load_slots"]["sema_wait"])
                self.assertTrue(sema[0] >= last_sema[0] and sema[1] >= last_sema[1], (sema, last_sema))
                last_sema = sema
            tdstat("sync", "disable", target.pid)
            time.sleep(0.3)  # the loaders go on, uncounted
            made = int(target.ask("stop").split()[1])
            tdstat("sync", "enable", target.pid)
            rows = objects(target)
            counted = rows["counted_lock"]["mutex_lock"]
            self.assertGreaterEqual(counted, last)
            self.assertLess(counted, made)
            for field in ("sema_post", "sema_wait"):
                self.assertLess(rows["load_slots"][field], made, field)

    @unittest.skipUnless(shutil.which("gcore"), "gcore (gdb) is not installed")
    def test_core(self):
        """tdstat core -s: the same exact counts from a gcore core."""
        with Target(tracking=True) as target, tempfile.TemporaryDirectory() as directory:
            self.assertEqual(target.ask("round %d" % N), "done")
            prefix = os.path.join(directory, "core")
            subprocess.run(["gcore", "-o", prefix, target.pid], check=True, capture_output=True, timeout=120)
            core = "%s.%s" % (prefix, target.pid)
            rows = [json.loads(line) for line in tdstat("core", "-s", "--json", core).stdout.splitlines()]
            self.check_round({row["object"]: row for row in rows if "object" in row}, 1)
            self.assertEqual(rows[-1]["sync_table"]["overflow"], 0)

    @unittest.skipUnless(text_string_to_metric_families, "python3-prometheus-client is not installed")
    def test_serve(self):
        """tdstat serve: the tdstat_sync_* families of a process with tracking on, exact."""
        with Target(tracking=True) as target:
            self.assertEqual(target.ask("round %d" % N), "done")
            families = scrape()
            tables = [s for s in families["tdstat_sync_table_overflow"].samples if s.labels["pid"] == target.pid]
            self.assertEqual([s.value for s in tables], [0])
            mine = [s for s in families["tdstat_sync_mutex_lock"].samples if s.labels["pid"] == target.pid]
            self.assertEqual({s.labels["object"]: s.value for s in mine}, {"counted_lock": 2 * N, "ready_lock": 1})
            waits = [s for s in families["tdstat_sync_sema_wait"].samples if s.labels["pid"] == target.pid]
            self.assertEqual([s.value for s in waits], [6])

    def test_usage(self):
        self.assertEqual(tdstat("sync", "on", "1", check=False).returncode, 2)
        self.assertEqual(tdstat("-s", "-t", "1", check=False).returncode, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
