#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real Prometheus scrapes `tdstat serve` every second; its HTTP API
must give back the shape of a workload the test knows.

    prometheus_test.py         short (unit): a steady fleet_target
                               (1 spinner, 3 sleepers on a condvar, main
                               in poll): tdstat_threads and rate() of the
                               runnable, idle and lwps counters
    prometheus_test.py --long  (fleet) also the phases example: rate()
                               over the steady part of its spin and idle
                               phases

Prometheus runs from Debian's package (scripts/install-deps.sh) on a
loopback port with a temporary storage directory; the test is skipped,
saying so, where it is not installed."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import fleet
from grafana_test import load as load_dashboard, panel_expressions
from serve_test import Server

LONG = "--long" in sys.argv
if LONG:
    sys.argv.remove("--long")

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
TOLERANCE = 0.10


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Prometheus:
    """prometheus scraping `target` every second, until closed."""

    def __init__(self, target):
        self.directory = tempfile.mkdtemp(prefix="tdstat-prometheus-")
        config = os.path.join(self.directory, "prometheus.yml")
        with open(config, "w") as out:
            out.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                      "scrape_configs:\n  - job_name: tdstat\n    static_configs:\n"
                      "      - targets: ['%s']\n" % target)
        self.address = "127.0.0.1:%d" % free_port()
        self.log = open(os.path.join(self.directory, "log"), "w")
        self.process = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(self.directory, "data"),
             "--web.listen-address=" + self.address, "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        # Ready, then scraping: its target discovery takes a few seconds.
        if not (fleet.wait_until(self.ready, 120, 0.2) and
                fleet.wait_until(lambda: self.query("up == 1"), 120, 0.2)):
            self.close()
            raise RuntimeError("prometheus did not start scraping")

    def ready(self):
        try:
            with urllib.request.urlopen("http://%s/-/ready" % self.address, timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    def query(self, expression, at=None):
        """The values of an instant vector, as floats."""
        parameters = {"query": expression}
        if at is not None:
            parameters["time"] = "%.3f" % at
        url = "http://%s/api/v1/query?%s" % (self.address, urllib.parse.urlencode(parameters))
        with urllib.request.urlopen(url, timeout=30) as response:
            answer = json.load(response)
        if answer["status"] != "success":
            raise AssertionError("query %s: %s" % (expression, answer))
        return [float(result["value"][1]) for result in answer["data"]["result"]]

    def close(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@unittest.skipUnless(os.access(PROMETHEUS, os.X_OK), "prometheus is not installed "
                     "(scripts/install-deps.sh installs it)")
class RealPrometheus(unittest.TestCase):
    def assert_near(self, value, expected, what):
        """Within TOLERANCE of expected (absolute TOLERANCE near 0)."""
        self.assertLessEqual(abs(value - expected), TOLERANCE * max(expected, 1.0),
                             "%s: %.3f, expected %.3f" % (what, value, expected))

    def one(self, prometheus, expression, at=None):
        values = prometheus.query(expression, at)
        self.assertEqual(len(values), 1, "%s -> %s" % (expression, values))
        return values[0]

    def shares(self, prometheus, pid, threads, window, at=None):
        """rate() of each counter over `window`, as threads: the runnable
        and idle counters relative to the lwps counter, times the thread
        count.  Prometheus dates a sample at the start of its scrape, the
        server takes the snapshot a moment later (longer on a loaded
        machine), and rate() divides by the dates: the ratio of two
        counters of one snapshot is free of that jitter, their rates are
        not."""
        def rate(metric, labels=""):
            return self.one(prometheus, 'sum(rate(%s{pid="%d"%s}[%s]))' % (metric, pid, labels, window), at)

        lwps = rate("tdstat_lwps_seconds_total")
        return {
            "lwps": lwps,
            "runnable": rate("tdstat_runnable_seconds_total") / lwps * threads,
            "running": rate("tdstat_running_seconds_total") / lwps * threads,
            "idle": rate("tdstat_idle_seconds_total") / lwps * threads,
            "cond": rate("tdstat_idle_seconds_total", ',kind="cond"') / lwps * threads,
        }

    def test_steady_shape(self):
        with fleet.Target(spinners=1, sleepers=3, name="prom-steady") as target:
            server = Server()
            prometheus = Prometheus(server.address)
            try:
                selector = '{pid="%d"}' % target.pid
                # Enough scrapes for a 10 s rate() window.
                fleet.wait_until(lambda: prometheus.query(
                    "count_over_time(tdstat_threads%s[12s]) >= 11" % selector), 120, 0.5)
                self.assertEqual(self.one(prometheus, "tdstat_threads" + selector), target.threads)
                self.assertEqual(self.one(prometheus, "tdstat_gathering" + selector), 1)
                shares = self.shares(prometheus, target.pid, target.threads, "10s")
                self.assert_near(shares["runnable"], target.spinners, "runnable")
                self.assert_near(shares["idle"], target.sleepers + 1, "idle")
                self.assert_near(shares["cond"], target.sleepers, "idle in cond")
                # Each snapshot has running = min(CPU, runnable); their
                # rates come from two snapshots each, so running's growth
                # may exceed runnable's by what the CPU clock was short of
                # runnable at the first one (a preempted spinner, or the
                # reader's 1 ms margin): 0.0002 of a thread was seen.
                self.assertLessEqual(shares["running"], shares["runnable"] + 0.005)
                # The lwps counter itself grows by the thread count a second.
                self.assert_near(shares["lwps"], target.threads, "lwps")
                # Every query of the Grafana dashboard gives this process data.
                for expression in panel_expressions(load_dashboard()):
                    concrete = (expression.replace("$__rate_interval", "10s")
                                .replace("$instance", ".*").replace("$pid", str(target.pid)))
                    self.assertTrue(prometheus.query(concrete), "no data for the dashboard's " + concrete)
            finally:
                prometheus.close()
                server.close()

    @unittest.skipUnless(LONG, "the phases run takes 30 s: label fleet")
    def test_phases(self):
        """phases 6 s/phase, 2 threads: spin (2 runnable), lock, idle
        (none runnable, 2 in cond, main in join)."""
        server = Server()
        prometheus = Prometheus(server.address)
        phase_s, threads = 6.0, 2
        try:
            process = subprocess.Popen([fleet.PHASES, str(phase_s), str(threads)],
                                       env=fleet.shim_environment(), stdout=subprocess.PIPE,
                                       text=True)
            started = time.time()
            output, _ = process.communicate(timeout=120)
            self.assertEqual(process.returncode, 0, output)
            time.sleep(3)  # the last phase's scrapes
            selector = '{pid="%d"}' % process.pid

            def shares_in(phase):
                # The steady part: from 1.5 s into the phase to 0.5 s before its end.
                at = started + phase * phase_s + phase_s - 0.5
                return self.shares(prometheus, process.pid, threads + 1, "4s", at)

            spin, lock, idle = shares_in(0), shares_in(1), shares_in(2)
            self.assert_near(spin["runnable"], threads, "spin: runnable")
            self.assert_near(spin["idle"], 1.0, "spin: idle (main in join)")
            self.assert_near(idle["runnable"], 0.0, "idle: runnable")
            self.assert_near(idle["cond"], threads, "idle: cond")
            self.assert_near(idle["idle"], threads + 1, "idle: idle")
            self.assertLess(lock["runnable"], spin["runnable"] + TOLERANCE, "lock: no more runnable than spin")
            middle = started + 1 * phase_s + phase_s / 2
            self.assertEqual(self.one(prometheus, "tdstat_threads" + selector, middle), threads + 1)
        finally:
            prometheus.close()
            server.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
