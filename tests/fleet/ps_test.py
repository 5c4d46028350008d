#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`tdstat ps`: which processes it lists (shim loaded, gathering on or
off) and which it leaves out (no shim; not ours to read; gone while
listed), and what it says of each, in every format."""

import csv
import io
import json
import os
import shutil
import subprocess
import threading
import unittest

from prometheus_client.openmetrics.parser import text_string_to_metric_families

import fleet


def ps_json(*args):
    result = fleet.tdstat("ps", "--format", "json", *args)
    return {line["pid"]: line for line in map(json.loads, result.stdout.splitlines())}


class Listing(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.on = fleet.Target(spinners=1, sleepers=3, name="fleet-on")
        cls.off = fleet.Target(sleepers=2, name="fleet-off", enable=False)
        cls.bare = fleet.Target(sleepers=2, name="fleet-bare", preload=False)

    @classmethod
    def tearDownClass(cls):
        for target in (cls.on, cls.off, cls.bare):
            target.close()

    def test_json_lists_shim_processes_only(self):
        listed = ps_json()
        self.assertIn(self.on.pid, listed)
        self.assertIn(self.off.pid, listed)
        self.assertNotIn(self.bare.pid, listed, "no shim: not listed")
        self.assertNotIn(os.getpid(), listed)

    def test_json_of_a_gathering_process(self):
        line = ps_json()[self.on.pid]
        self.assertEqual(line["comm"], "fleet-on")
        self.assertIs(line["enabled"], True)
        self.assertEqual(line["nthreads"], self.on.threads)
        # Over ps's own short interval: what it does now.
        self.assertAlmostEqual(line["runnable"], 1.0, delta=0.2)
        self.assertAlmostEqual(line["idle"], 4.0, delta=0.4)
        self.assertAlmostEqual(line["idle_by"]["cond"], 3.0, delta=0.3)
        self.assertLess(line["window_s"], 5.0, "an interval, not the window so far")

    def test_json_of_a_process_not_gathering(self):
        line = ps_json()[self.off.pid]
        self.assertEqual(line["comm"], "fleet-off")
        self.assertIs(line["enabled"], False)
        self.assertEqual(line["nthreads"], self.off.threads)
        self.assertNotIn("runnable", line, "no averages while gathering is off")

    def test_text(self):
        rows = fleet.tdstat("ps").stdout.splitlines()
        self.assertTrue(rows[0].split()[:4] == ["PID", "COMMAND", "GATHERING", "NTHREADS"], rows[0])
        by_pid = {int(row.split()[0]): row.split() for row in rows[1:]}
        self.assertEqual(by_pid[self.on.pid][1:4], ["fleet-on", "on", str(self.on.threads)])
        self.assertEqual(by_pid[self.off.pid][1:5], ["fleet-off", "off", str(self.off.threads), "-"])
        self.assertNotIn(self.bare.pid, by_pid)

    def test_csv(self):
        text = fleet.tdstat("ps", "--format", "csv").stdout
        rows = {int(r["pid"]): r for r in csv.DictReader(io.StringIO(text, newline=""))}
        self.assertEqual(rows[self.on.pid]["comm"], "fleet-on")
        self.assertEqual(rows[self.on.pid]["enabled"], "true")
        self.assertEqual(rows[self.off.pid]["enabled"], "false")
        self.assertEqual(rows[self.off.pid]["runnable"], "")

    def test_openmetrics(self):
        text = fleet.tdstat("ps", "--format", "openmetrics").stdout
        families = {f.name: f for f in text_string_to_metric_families(text)}
        threads = {s.labels["pid"]: s.value for s in families["tdstat_threads"].samples}
        self.assertEqual(threads[str(self.on.pid)], self.on.threads)
        gathering = {s.labels["pid"]: s.value for s in families["tdstat_gathering"].samples}
        self.assertEqual(gathering[str(self.off.pid)], 0)
        self.assertEqual(gathering[str(self.on.pid)], 1)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("setpriv"), "needs root and setpriv")
    def test_processes_of_others_are_left_out_quietly(self):
        result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                 fleet.TDSTAT, "ps", "--format", "json"],
                                capture_output=True, text=True, timeout=fleet.TIMEOUT_S)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        pids = [json.loads(line)["pid"] for line in result.stdout.splitlines()]
        self.assertNotIn(self.on.pid, pids, "root's process listed for nobody")


class Churn(unittest.TestCase):
    def test_processes_that_vanish_while_listed_are_skipped_quietly(self):
        """Short-lived shim processes start and end while ps lists them:
        every ps succeeds, says nothing on stderr, and lists only
        processes that were there."""
        stop = threading.Event()

        def churn():
            while not stop.is_set():
                subprocess.run([fleet.FLEET_TARGET, "-t", "20", "0", "2"],
                               env=fleet.shim_environment(), stdout=subprocess.DEVNULL)

        workers = [threading.Thread(target=churn) for _ in range(3)]
        for worker in workers:
            worker.start()
        try:
            for _ in range(15):
                result = fleet.tdstat("ps", "-i", "0.01", "--format", "json", check=False)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stderr, "")
                for line in result.stdout.splitlines():
                    json.loads(line)
        finally:
            stop.set()
            for worker in workers:
                worker.join()

    def test_usage_errors(self):
        self.assertEqual(fleet.tdstat("ps", "42", check=False).returncode, 2)
        self.assertEqual(fleet.tdstat("ps", "--format", "yaml", check=False).returncode, 2)
        self.assertEqual(fleet.tdstat("ps", "-i", "0", check=False).returncode, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
