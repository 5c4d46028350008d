#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""-t and -w in every format, read back with a real parser: csv (RFC 4180,
one heading, a `record` column), json, prometheus_client's OpenMetrics
parser.  The target is kinds_workload (two threads in pthread_cond_wait
on parked_condvar, one on parked_mutex, one sleeping, one in poll, main
in pthread_join), so the figures are checked, not only the syntax.
Environment: TDSTAT, TDSHIM, KINDS_WORKLOAD."""

import csv
import io
import json
import os
import subprocess
import time
import unittest

from prometheus_client.openmetrics.parser import text_string_to_metric_families

TDSTAT = os.environ["TDSTAT"]


class Target:
    def __enter__(self):
        env = dict(os.environ, LD_PRELOAD=os.environ["TDSHIM"], TDSTAT_ENABLE="1")
        self.process = subprocess.Popen([os.environ["KINDS_WORKLOAD"]], env=env, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        self.pid = str(self.process.pid)
        self.tasks = sorted(int(t) for t in os.listdir("/proc/%s/task" % self.pid))
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()


def tdstat(target, fmt, *options):
    return subprocess.run([TDSTAT, "-t", "-w", "-i", "0.5", "-c", "2", "--format", fmt, *options, target.pid],
                          check=True, capture_output=True, text=True, timeout=60).stdout


class TablesInFormats(unittest.TestCase):
    def check_threads(self, target, threads):
        """threads: {tid: (wait kind or None, runnable, untracked)} of the last interval."""
        self.assertEqual(sorted(threads), target.tasks)
        waits = sorted(w for w, _, _ in threads.values())
        self.assertEqual(waits, ["cond", "cond", "io", "join", "mutex", "sleep"])
        for wait, runnable, untracked in threads.values():
            self.assertLess(runnable, 0.05)
            self.assertLess(untracked, 0.05)

    def check_objects(self, objects):
        """objects: {object name: waiting} of the last interval."""
        self.assertAlmostEqual(objects["parked_condvar"], 2, delta=0.05)
        self.assertAlmostEqual(objects["parked_mutex"], 1, delta=0.05)

    def test_csv(self):
        with Target() as target:
            text = tdstat(target, "csv")
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        heading = text.split("\r\n", 1)[0].split(",")
        self.assertEqual(heading[0], "record")
        self.assertTrue(all(None not in row for row in rows), "a row longer than the heading")
        last = max(i for i, row in enumerate(rows) if row["record"] == "process")
        block = rows[last + 1:]
        self.assertEqual(rows[last]["pid"], target.pid)
        self.assertNotEqual(rows[last]["untracked"], "")
        threads = {int(r["tid"]): (r["wait"] or None, float(r["runnable"]), float(r["untracked"]))
                   for r in block if r["record"] == "thread"}
        self.check_threads(target, threads)
        objects = {r["object"]: float(r["waiting"]) for r in block if r["record"] == "object"}
        self.check_objects(objects)
        callers = {r["object"]: r["site"] for r in block if r["record"] == "object"}
        self.assertEqual(callers["parked_condvar"], "in_cond")

    def test_json(self):
        with Target() as target:
            lines = [json.loads(line) for line in tdstat(target, "json").splitlines()]
        last = max(i for i, line in enumerate(lines) if "nthreads" in line)
        block = lines[last + 1:]
        self.assertIn("untracked", lines[last])
        threads = {line["tid"]: (line.get("wait"), line["runnable"], line["untracked"])
                   for line in block if "tid" in line}
        self.check_threads(target, threads)
        self.check_objects({line["object"]: line["waiting"] for line in block if "waiting" in line
                            and not line.get("ended")})

    def test_names_follow_the_thread(self):
        """-t keeps a thread's names from line to line (threads.c): its
        name is read again once a second, its wait's object and caller
        once per wait.  A thread that renames itself and changes condvar
        every 0.4 s shows both names and both condvars over 3.5 s (names
        kept for good would show one of each)."""
        env = dict(os.environ, LD_PRELOAD=os.environ["TDSHIM"], TDSTAT_ENABLE="1")
        process = subprocess.Popen([os.environ["KINDS_WORKLOAD"], "moving"], env=env, stdout=subprocess.PIPE,
                                   text=True)
        try:
            self.assertEqual(process.stdout.readline().strip(), "ready")
            out = subprocess.run([TDSTAT, "-t", "-i", "0.1", "-c", "35", "--format", "json", str(process.pid)],
                                 check=True, capture_output=True, text=True, timeout=60).stdout
        finally:
            process.kill()
            process.wait()
        rows = [row for row in map(json.loads, out.splitlines()) if "tid" in row and row["tid"] != process.pid]
        self.assertGreater(len(rows), 30)
        self.assertEqual({row["name"] for row in rows}, {"phase-a", "phase-b"})
        objects = {row["object"] for row in rows if row.get("wait") == "cond"}
        self.assertEqual(objects, {"first_condvar", "second_condvar"})
        # Each wait is named as itself, whatever the line before showed.
        names_of = {}
        for row in rows:
            if row.get("wait") == "cond":
                names_of.setdefault(row["object_address"], set()).add(row["object"])
        self.assertEqual(sorted(len(names) for names in names_of.values()), [1, 1])

    def test_openmetrics(self):
        with Target() as target:
            text = tdstat(target, "openmetrics")
        exposition = text.split("# EOF\n")[1] + "# EOF\n"
        families = {f.name: f for f in text_string_to_metric_families(exposition)}
        threads = {}
        for sample in families["tdstat_thread_untracked"].samples:
            threads[int(sample.labels["tid"])] = sample.value
        self.assertEqual(sorted(threads), target.tasks)
        self.assertTrue(all(v < 0.05 for v in threads.values()))
        idle_cond = sum(s.value for s in families["tdstat_thread_idle"].samples if s.labels["kind"] == "cond")
        self.assertAlmostEqual(idle_cond, 2, delta=0.05)
        objects = {s.labels["object"]: s.value for s in families["tdstat_object_waiting"].samples}
        self.check_objects(objects)


if __name__ == "__main__":
    unittest.main()
