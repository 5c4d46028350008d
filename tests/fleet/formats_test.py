#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""--format text|json|csv|openmetrics (and --json) in live mode and in
`run`, each output read back with a real parser: json, csv (RFC 4180),
prometheus_client's OpenMetrics parser.  The target has a known shape
(fleet_target: 1 spinner, 3 sleepers on a condvar, main in poll), so the
figures are checked, not only the syntax."""

import csv
import io
import json
import tempfile
import unittest

from prometheus_client.openmetrics.parser import text_string_to_metric_families

import fleet

KINDS = ["mutex", "rwlock", "cond", "sem", "barrier", "join", "futex", "sleep", "io",
         "child", "signal"]
COUNTS = ["nthreads", "r_concurrency"]
FRACTIONS = ["nrunnable_num", "nrunnable_den", "a_concurrency_num", "a_concurrency_den",
             "nlwps_num", "nlwps_den", "nidle_num", "nidle_den"]
AVERAGES = ["runnable", "running", "lwps", "idle", "window_s"]
CSV_COLUMNS = (["pid"] + COUNTS + FRACTIONS + AVERAGES + ["stopped"]
               + ["idle_" + k for k in KINDS] + ["untracked"])
FAMILIES = {  # name: (type, unit)
    "tdstat_threads": ("gauge", ""),
    "tdstat_r_concurrency": ("gauge", ""),
    "tdstat_gathering": ("gauge", ""),
    "tdstat_lwps_seconds": ("counter", "seconds"),
    "tdstat_runnable_seconds": ("counter", "seconds"),
    "tdstat_running_seconds": ("counter", "seconds"),
    "tdstat_idle_seconds": ("counter", "seconds"),
    "tdstat_cpu_seconds": ("counter", "seconds"),
}
# A name with every character a label value, a JSON string or a CSV field
# must escape, and a byte that is not UTF-8 (comm holds any bytes).
ODD_NAME = b'a"b\\c,d\xffe'
ODD_NAME_SHOWN = 'a"b\\c,d?e'


def live(target, fmt, count=3, interval="0.3"):
    return fleet.tdstat("-i", interval, "-c", count, "--format", fmt, target.pid).stdout


def run_to_file(fmt, *command):
    with tempfile.NamedTemporaryFile("r", suffix=".out", newline="") as out:
        fleet.tdstat("run", "--format", fmt, "-o", out.name, "--", *command)
        return out.read()


def parse_openmetrics(text):
    """{family name: family} of one exposition, parsed strictly."""
    return {f.name: f for f in text_string_to_metric_families(text)}


def check_shape(test, target, runnable, idle, idle_by, tolerance=0.15):
    """The known shape of a fleet_target, on its averages."""
    test.assertAlmostEqual(runnable, target.spinners, delta=tolerance * max(1, target.spinners))
    test.assertAlmostEqual(idle, target.sleepers + 1, delta=tolerance * (target.sleepers + 1))
    test.assertAlmostEqual(idle_by["cond"], target.sleepers, delta=tolerance * target.sleepers)
    test.assertAlmostEqual(idle_by["io"], 1.0, delta=tolerance)
    test.assertAlmostEqual(sum(idle_by.values()), idle, delta=1e-3)


class Formats(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.target = fleet.Target(spinners=1, sleepers=3, name=ODD_NAME)

    @classmethod
    def tearDownClass(cls):
        cls.target.close()

    def test_text_rows_under_one_header(self):
        lines = live(self.target, "text").splitlines()
        self.assertEqual(len(lines), 4, lines)
        self.assertTrue(lines[0].startswith("TIME") and "IDLE BY KIND" in lines[0])
        for row in lines[1:]:
            fields = row.split()
            self.assertEqual(int(fields[1]), self.target.pid)
            self.assertEqual(int(fields[2]), self.target.threads)
            self.assertIn("cond", row)

    def test_json_lines(self):
        lines = live(self.target, "json").splitlines()
        self.assertEqual(len(lines), 3)
        for number, text in enumerate(lines):
            line = json.loads(text)
            for key in ["pid"] + COUNTS + FRACTIONS + AVERAGES + ["idle_by"]:
                self.assertIn(key, line)
            self.assertEqual(line["pid"], self.target.pid)
            self.assertEqual(line["nthreads"], self.target.threads)
            self.assertEqual(sorted(line["idle_by"]), sorted(KINDS))
            # The first line covers the window so far, the target's start
            # included: the shape holds on the intervals after it.
            if number:
                check_shape(self, self.target, line["runnable"], line["idle"], line["idle_by"])
        self.assertIn("untracked", json.loads(lines[-1]))

    def test_json_alias_is_the_json_format(self):
        alias = fleet.tdstat("-c", "1", "--json", self.target.pid).stdout
        named = fleet.tdstat("-c", "1", "--format=json", self.target.pid).stdout
        self.assertEqual(sorted(json.loads(alias)), sorted(json.loads(named)))

    def test_csv_rows(self):
        text = live(self.target, "csv")
        self.assertTrue(text.endswith("\r\n"), "RFC 4180 line ends")
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        self.assertEqual(len(rows), 3)
        self.assertEqual(list(rows[0].keys()), CSV_COLUMNS)
        for number, row in enumerate(rows):
            self.assertEqual(int(row["pid"]), self.target.pid)
            self.assertEqual(int(row["nthreads"]), self.target.threads)
            self.assertEqual(int(row["nidle_num"]), int(row["nlwps_num"]) - int(row["nrunnable_num"]))
            self.assertIn(row["stopped"], ("true", "false"))
            idle_by = {k: float(row["idle_" + k]) for k in KINDS}
            if number:
                check_shape(self, self.target, float(row["runnable"]), float(row["idle"]), idle_by)
        self.assertEqual(rows[0]["untracked"], "", "not known on the first row")
        float(rows[-1]["untracked"])

    def test_openmetrics_expositions(self):
        blocks = fleet.expositions(live(self.target, "openmetrics", interval="0.5"))
        self.assertEqual(len(blocks), 3)
        parsed = [parse_openmetrics(block) for block in blocks]
        for families in parsed:
            self.assertEqual(sorted(families), sorted(FAMILIES))
            for name, (kind, unit) in FAMILIES.items():
                self.assertEqual(families[name].type, kind, name)
                self.assertEqual(families[name].unit, unit, name)
                self.assertTrue(families[name].documentation, name)
                for sample in families[name].samples:
                    self.assertEqual(sample.labels["pid"], str(self.target.pid))
                    self.assertEqual(sample.labels["comm"], ODD_NAME_SHOWN)
            threads = families["tdstat_threads"].samples
            self.assertEqual([s.value for s in threads], [self.target.threads])
            kinds = {s.labels["kind"] for s in families["tdstat_idle_seconds"].samples}
            self.assertEqual(kinds, set(KINDS))
        # Counters: only grow, the same _created; their growth over the
        # interval is the workload's shape.
        first, last = parsed[0], parsed[-1]

        def totals(families, name):
            return {tuple(sorted(s.labels.items())): s.value
                    for s in families[name].samples if s.name.endswith("_total")}

        def created(families, name):
            return {s.value for s in families[name].samples if s.name.endswith("_created")}

        growth = {}
        for name, (kind, _) in FAMILIES.items():
            if kind != "counter":
                continue
            before, after = totals(first, name), totals(last, name)
            self.assertEqual(before.keys(), after.keys())
            for labels in before:
                self.assertGreaterEqual(after[labels], before[labels], (name, labels))
            self.assertEqual(len(created(first, name)), 1)
            self.assertEqual(created(first, name), created(last, name))
            growth[name] = {dict(k).get("kind", ""): after[k] - before[k] for k in before}
        seconds = growth["tdstat_lwps_seconds"][""] / self.target.threads
        self.assertGreater(seconds, 0.5)
        idle_by = {k: v / seconds for k, v in growth["tdstat_idle_seconds"].items()}
        check_shape(self, self.target, growth["tdstat_runnable_seconds"][""] / seconds,
                         sum(idle_by.values()), idle_by)

    def test_unknown_format_is_a_usage_error(self):
        result = fleet.tdstat("--format", "xml", self.target.pid, check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn("text|json|csv|openmetrics", result.stderr)
        self.assertEqual(result.stdout, "")


class RunFormats(unittest.TestCase):
    """`tdstat run`: the whole run in each format (3 sleepers, 0.3 s)."""

    def run_target(self, fmt):
        return run_to_file(fmt, fleet.FLEET_TARGET, "-t", "300", "0", "3")

    def test_json(self):
        line = json.loads(self.run_target("json"))
        self.assertEqual(line["nthreads"], 1, "read at the exit stop: main alone")
        self.assertGreater(line["idle_by"]["cond"], 1.0)

    def test_csv(self):
        rows = list(csv.DictReader(io.StringIO(self.run_target("csv"), newline="")))
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["stopped"], "")
        self.assertGreater(float(rows[0]["idle_cond"]), 1.0)

    def test_openmetrics(self):
        blocks = fleet.expositions(self.run_target("openmetrics"))
        self.assertEqual(len(blocks), 1)
        families = parse_openmetrics(blocks[0])
        self.assertEqual([s.value for s in families["tdstat_threads"].samples], [1])
        self.assertEqual(families["tdstat_threads"].samples[0].labels["comm"], "fleet_target")
        cond = [s.value for s in families["tdstat_idle_seconds"].samples
                if s.labels.get("kind") == "cond" and s.name.endswith("_total")]
        self.assertGreater(cond[0], 0.3, "3 threads in cond for 0.3 s")

    def test_text_summary(self):
        text = self.run_target("text")
        self.assertIn("Thread statistics of '%s'" % fleet.FLEET_TARGET, text)
        self.assertIn("idle in cond", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
