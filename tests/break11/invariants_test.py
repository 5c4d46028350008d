#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tdstat -t -w against a churning target with odd thread names
(workload.c churn): every share of a -t row lies in [0, 1] (tdstat(1):
"Shares are averages over the line's interval, from 0 to 1"), a row's
idle_by adds up to its idle, the object rows of a kind add up to the
line's idle_by, untracked >= 0, and csv and OpenMetrics stay well formed.
Environment: TDSTAT, TDSHIM, WORKLOAD."""

import collections
import csv
import io
import json
import os
import resource
import subprocess
import time
import unittest

from prometheus_client.openmetrics.parser import text_string_to_metric_families

TDSTAT = os.environ["TDSTAT"]
# Six decimals per printed value.
ROUNDING = 1e-6


class Churn:
    def __enter__(self):
        env = dict(os.environ, LD_PRELOAD=os.environ["TDSHIM"], TDSTAT_ENABLE="1")
        self.process = subprocess.Popen([os.environ["WORKLOAD"], "churn"], env=env, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout.readline().split()[0] == "ready"
        time.sleep(0.2)
        self.pid = str(self.process.pid)
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()
        self.process.stdout.close()


def tdstat(target, fmt, count=40):
    return subprocess.run([TDSTAT, "-t", "-w", "-i", "0.02", "-c", str(count), "--format", fmt, target.pid],
                          check=True, capture_output=True, timeout=120).stdout.decode("utf-8")


class Invariants(unittest.TestCase):
    def test_thread_shares_within_unit(self):
        with Churn() as target:
            records = [json.loads(line) for line in tdstat(target, "json").splitlines()]
        lines = 0
        for record in records:
            if "tid" not in record:
                continue
            lines += 1
            for key in ("runnable", "idle", "cpu", "run_queue", "untracked"):
                if key in record:
                    self.assertGreaterEqual(record[key], 0, record)
                    self.assertLessEqual(record[key], 1, (key, record))
            if "idle" in record:
                self.assertLessEqual(record["runnable"] + record["idle"], 1 + 2 * ROUNDING, record)
                self.assertAlmostEqual(sum(record["idle_by"].values()), record["idle"], delta=12 * ROUNDING)
            if "cpu" in record:
                self.assertLessEqual(record["cpu"] + record["run_queue"], 1 + 2 * ROUNDING, record)
        self.assertGreater(lines, 40)

    def test_process_and_objects_add_up(self):
        with Churn() as target:
            records = [json.loads(line) for line in tdstat(target, "json").splitlines()]
        line, objects = None, collections.defaultdict(list)

        def check():
            if line is None:
                return
            for kind, values in objects.items():
                self.assertAlmostEqual(sum(values), line["idle_by"][kind], delta=(len(values) + 1) * ROUNDING)
        for record in records:
            # thread rows, and the wait-for graph's objects and deadlocks
            if "tid" in record or "sync" in record or "deadlocks" in record:
                continue
            if "kind" in record:
                self.assertGreaterEqual(record["waiting"], 0, record)
                objects[record["kind"]].append(record["waiting"])
                continue
            check()
            line, objects = record, collections.defaultdict(list)
            self.assertAlmostEqual(sum(line["idle_by"].values()), line["idle"], delta=12 * ROUNDING)
            self.assertGreaterEqual(line.get("untracked", 0), 0)
        check()

    def test_csv_and_openmetrics_well_formed(self):
        with Churn() as target:
            rows = list(csv.reader(io.StringIO(tdstat(target, "csv", 10), newline="")))
            text = tdstat(target, "openmetrics", 10)
        self.assertEqual({len(row) for row in rows}, {len(rows[0])})
        self.assertEqual(rows[0][0], "record")
        expositions = [e for e in text.split("# EOF\n") if e.strip()]
        self.assertEqual(len(expositions), 10)
        for exposition in expositions:
            families = list(text_string_to_metric_families(exposition + "# EOF\n"))
            self.assertTrue(families)

    def test_descriptor_limit(self):
        """More threads than tdstat may open files: the kernel's figures, names and symbols stay."""
        env = dict(os.environ, LD_PRELOAD=os.environ["TDSHIM"], TDSTAT_ENABLE="1")
        target = subprocess.Popen([os.environ["WORKLOAD"], "many", "300"], env=env, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(target.stdout.readline().split()[0], "ready")
            time.sleep(0.3)
            out = subprocess.run([TDSTAT, "-t", "-i", "0.3", "-c", "3", "--format", "json", str(target.pid)],
                                 check=True, capture_output=True, timeout=60, text=True,
                                 preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))).stdout
        finally:
            target.kill()
            target.wait()
            target.stdout.close()
        moments = []
        for record in map(json.loads, out.splitlines()):
            if "tid" in record:
                moments[-1][1].append(record)
            else:
                moments.append((record, []))
        self.assertEqual(len(moments), 3)
        # From the second line on, the interval since the line before.
        for line, threads in moments[1:]:
            self.assertIn("untracked", line)
            self.assertEqual(len(threads), 301)
        for row in moments[1][1] + moments[2][1]:
            self.assertIn("cpu", row, row)
            self.assertEqual(row["name"], "break11_workloa", row)
            self.assertIn(row["site"], ("main", "sleeper"), row)


if __name__ == "__main__":
    unittest.main()
