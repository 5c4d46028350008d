#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tdstat -w must name a wait's object truthfully (tdstat(1), Objects:
"for io, the file descriptor (the first one of a poll) and what it refers
to; for child, the process waited for") and give each row of a family its
own label set (OpenMetrics: a MetricFamily has at most one Metric per
LabelSet; a consumer keeps one and the object rows no longer add up to
the kind's idle figure).  Target: workload.c.
Environment: TDSTAT, TDSHIM, WORKLOAD."""

import collections
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

TDSTAT = os.environ["TDSTAT"]


class Target:
    def __init__(self, *args):
        self.args = args

    def __enter__(self):
        env = dict(os.environ, LD_PRELOAD=os.environ["TDSHIM"], TDSTAT_ENABLE="1")
        self.process = subprocess.Popen([os.environ["WORKLOAD"], *self.args], env=env, stdout=subprocess.PIPE,
                                        text=True)
        line = self.process.stdout.readline().split()
        assert line[0] == "ready", line
        self.value = int(line[1])
        time.sleep(0.3)
        self.pid = str(self.process.pid)
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()
        self.process.stdout.close()


def tdstat(target, fmt):
    return subprocess.run([TDSTAT, "-w", "-i", "0.3", "-c", "2", "--format", fmt, target.pid],
                          check=True, capture_output=True, text=True, timeout=60).stdout


def object_rows(text):
    return [r for r in map(json.loads, text.splitlines()) if "kind" in r and not r.get("ended")]


class NamesOfWaits(unittest.TestCase):
    def test_select_names_its_descriptor(self):
        """select(R+1, {R}): the row names descriptor R (the pipe), not R+1."""
        with tempfile.TemporaryDirectory() as directory:
            marker = os.path.join(directory, "break11-marker")
            with Target("select", marker) as target:
                rows = [r for r in object_rows(tdstat(target, "json")) if r["kind"] == "io"]
        self.assertTrue(rows)
        for row in rows:
            self.assertNotIn("break11-marker", row["object"], row)
            self.assertTrue(row["object"].startswith("fd %d " % target.value), row)

    def test_child_waits_named_by_idtype(self):
        """waitid(P_PGID, g) waits for group g's children, not for a process g."""
        with Target("children") as target:
            rows = [r for r in object_rows(tdstat(target, "json")) if r["kind"] == "child"]
        self.assertTrue(rows)
        for row in rows:
            self.assertNotEqual(row["object"], "pid %d" % target.value, row)

    def labels_unique(self, text, rows):
        expositions = [e for e in text.split("# EOF\n") if e.strip()]
        self.assertEqual(len(expositions), 2)
        for exposition in expositions:
            seen = collections.Counter(line.rsplit(" ", 1)[0] for line in exposition.splitlines()
                                       if line.startswith("tdstat_object_waiting{"))
            self.assertGreaterEqual(sum(seen.values()), rows, exposition)
            for labels, count in seen.items():
                self.assertEqual(count, 1, "label set repeated in one exposition: %s" % labels)

    def test_openmetrics_object_labels_unique(self):
        """Three waits for children from one function: three rows, three label sets."""
        with Target("children") as target:
            self.labels_unique(tdstat(target, "openmetrics"), 4)

    def test_openmetrics_same_named_functions(self):
        """Two static functions called waiter (two files) on one condvar: two rows, two label sets."""
        with Target("same-names") as target:
            self.labels_unique(tdstat(target, "openmetrics"), 3)

    def test_truncated_library(self):
        """A library file truncated while tdstat reads its symbols: no crash."""
        with tempfile.TemporaryDirectory() as directory:
            library = os.path.join(directory, "libbreak11_copy.so")
            shutil.copyfile(os.environ["LIBRARY"], library)
            env = dict(os.environ, LD_PRELOAD=os.environ["TDSHIM"], TDSTAT_ENABLE="1")
            target = subprocess.Popen([os.environ["WORKLOAD"], "truncate", library], env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                self.assertEqual(target.stdout.readline().split()[0], "ready")
                time.sleep(0.2)
                watcher = subprocess.Popen([TDSTAT, "-t", "-w", "-i", "0.1", "-c", "35", "--format", "json",
                                            str(target.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                time.sleep(0.5)
                target.stdin.write("go\n")
                target.stdin.flush()
                self.assertEqual(target.stdout.readline().strip(), "truncated")
                out, err = watcher.communicate(timeout=60)
                self.assertEqual(watcher.returncode, 0, err)
                self.assertEqual(len(out.splitlines()) > 35, True)
            finally:
                target.kill()
                target.wait()
                target.stdin.close()
                target.stdout.close()

    def test_names_after_exec(self):
        """A target that execs another program: its objects named from the new image, not the old one's."""
        env = dict(os.environ, LD_PRELOAD=os.environ["TDSHIM"], TDSTAT_ENABLE="1")
        # Address space randomization off (as gdb runs its inferiors): the
        # new image's objects lie where the old image's modules were.
        target = subprocess.Popen(["setarch", "x86_64", "-R", "/bin/sh", "-c", 'read line; exec "$0" same-names',
                                   os.environ["WORKLOAD"]], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        try:
            time.sleep(0.5)
            watcher = subprocess.Popen([TDSTAT, "-w", "-i", "0.2", "-c", "25", "--format", "json", str(target.pid)],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(0.6)
            target.stdin.write("go\n")
            target.stdin.flush()
            self.assertEqual(target.stdout.readline().split()[0], "ready")
            out, err = watcher.communicate(timeout=60)
        finally:
            target.kill()
            target.wait()
            target.stdin.close()
            target.stdout.close()
        rows = [r for r in object_rows(out) if r["kind"] == "cond"]
        self.assertTrue(rows, (out, err))
        for row in rows:
            self.assertEqual(row["object"], "same_name_cond", row)
            self.assertEqual(row["site"], "waiter", row)

    def test_names_in_mount_namespace(self):
        """A target whose files are not where tdstat's view puts them (a container): names from its own files."""
        if subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True).returncode:
            self.skipTest("no mount namespaces here (needs CAP_SYS_ADMIN)")
        with tempfile.TemporaryDirectory() as directory:
            real, shown = os.path.join(directory, "real"), os.path.join(directory, "prog")
            shutil.copyfile(os.environ["WORKLOAD"], real)
            os.chmod(real, 0o755)
            # In tdstat's view the path holds an empty file; in the
            # target's, the workload.
            open(shown, "w").close()
            env = dict(os.environ, LD_PRELOAD=os.environ["TDSHIM"], TDSTAT_ENABLE="1")
            target = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                                       'mount --bind "$0" "$1" && exec "$1" same-names', real, shown],
                                      env=env, stdout=subprocess.PIPE, text=True)
            try:
                self.assertEqual(target.stdout.readline().split()[0], "ready")
                time.sleep(0.3)
                watched = subprocess.run([TDSTAT, "-w", "-i", "0.3", "-c", "2", "--format", "json",
                                          str(target.pid)], check=True, capture_output=True, text=True, timeout=60)
                rows = [r for r in object_rows(watched.stdout) if r["kind"] == "cond"]
            finally:
                target.kill()
                target.wait()
                target.stdout.close()
        self.assertTrue(rows)
        for row in rows:
            self.assertEqual(row["object"], "same_name_cond", row)
            self.assertEqual(row["site"], "waiter", row)


if __name__ == "__main__":
    unittest.main()
