#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`tdstat serve`: /metrics in OpenMetrics or the Prometheus text format
by Accept (each read back with prometheus_client's parser for it), the
index page, errors, clients that misbehave, and a clean exit on SIGINT
and SIGTERM.

    serve_test.py           the quick tests (unit)
    serve_test.py --slow    also the idle-connection timeout (fleet)"""

import http.client
import signal
import socket
import sys
import time
import unittest
import urllib.error
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_prometheus_text

import fleet

SLOW = "--slow" in sys.argv
if SLOW:
    sys.argv.remove("--slow")

OPENMETRICS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                      "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


class Server:
    """tdstat serve on a free loopback port, until closed."""

    def __init__(self):
        self.process = fleet.subprocess.Popen(
            [fleet.TDSTAT, "serve", "--listen", "127.0.0.1:0"],
            stdout=fleet.subprocess.PIPE, stderr=fleet.subprocess.PIPE, text=True)
        line = self.process.stderr.readline()
        if "serving http://" not in line:
            self.process.kill()
            raise RuntimeError("tdstat serve did not start: %r" % line)
        self.address = line.split("http://")[1].split("/")[0]
        self.host, self.port = self.address.rsplit(":", 1)
        self.port = int(self.port)

    def get(self, path, accept=None, method="GET"):
        request = urllib.request.Request("http://%s%s" % (self.address, path), method=method)
        if accept:
            request.add_header("Accept", accept)
        try:
            with urllib.request.urlopen(request, timeout=fleet.TIMEOUT_S) as response:
                return response.status, response.headers, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read().decode()

    def stop(self, signo=signal.SIGTERM):
        self.process.send_signal(signo)
        return self.process.wait(timeout=fleet.TIMEOUT_S)

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
        self.process.stderr.close()


def samples(families, name, pid):
    return [s for f in families if f.name == name for s in f.samples
            if s.labels.get("pid") == str(pid)]


class Serve(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.target = fleet.Target(spinners=1, sleepers=3, name="serve-me")
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        cls.target.close()

    def test_openmetrics_when_accepted(self):
        status, headers, body = self.server.get("/metrics", OPENMETRICS_ACCEPT)
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0"))
        self.assertTrue(body.endswith("# EOF\n"))
        families = list(parse_openmetrics(body))
        threads = samples(families, "tdstat_threads", self.target.pid)
        self.assertEqual([s.value for s in threads], [self.target.threads])
        self.assertEqual(threads[0].labels["comm"], "serve-me")
        kinds = {s.labels["kind"] for s in samples(families, "tdstat_idle_seconds", self.target.pid)}
        self.assertIn("cond", kinds)

    def test_prometheus_text_otherwise(self):
        for accept in (None, "text/plain", "*/*", "application/openmetrics-textual"):
            status, headers, body = self.server.get("/metrics", accept)
            self.assertEqual(status, 200, accept)
            self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"), accept)
            self.assertNotIn("# EOF", body)
            self.assertNotIn("_created", body)
            families = list(parse_prometheus_text(body))
            threads = samples(families, "tdstat_threads", self.target.pid)
            self.assertEqual([s.value for s in threads], [self.target.threads])
            runnable = samples(families, "tdstat_runnable_seconds", self.target.pid)
            self.assertEqual([s.name for s in runnable], ["tdstat_runnable_seconds_total"])

    def test_counters_grow_between_scrapes(self):
        def runnable():
            body = self.server.get("/metrics", OPENMETRICS_ACCEPT)[2]
            found = samples(parse_openmetrics(body), "tdstat_runnable_seconds", self.target.pid)
            return [s.value for s in found if s.name.endswith("_total")][0]

        first = runnable()
        time.sleep(0.3)
        self.assertGreater(runnable(), first, "a spinner's runnable counter grows")

    def test_index_page_links_metrics(self):
        status, headers, body = self.server.get("/")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/html"))
        self.assertIn('href="/metrics"', body)

    def test_errors(self):
        self.assertEqual(self.server.get("/nothing")[0], 404)
        self.assertEqual(self.server.get("/metrics", method="POST")[0], 405)
        status, headers, body = self.server.get("/metrics", method="HEAD")
        self.assertEqual((status, body), (200, ""))

    def test_slow_clients_do_not_hold_the_server(self):
        """Clients that send half a request and stop, up to the connection
        limit per address and beyond: a scrape from elsewhere is answered,
        and so is one from here once they are gone."""
        stuck = []
        try:
            for _ in range(40):
                connection = socket.create_connection((self.server.host, self.server.port), timeout=5)
                stuck.append(connection)
                try:
                    connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                except OSError:
                    pass  # past the limit per address: closed at once, as it should be
            # From another loopback address: another client.
            scraper = http.client.HTTPConnection(self.server.host, self.server.port,
                                                 timeout=fleet.TIMEOUT_S,
                                                 source_address=("127.0.0.2", 0))
            try:
                scraper.request("GET", "/metrics")
                response = scraper.getresponse()
                self.assertEqual(response.status, 200)
                self.assertIn("tdstat_threads", response.read().decode())
            except OSError as error:
                self.fail("scrape refused while slow clients wait: %s" % error)
            finally:
                scraper.close()
        finally:
            for connection in stuck:
                connection.close()
        def answered():
            try:
                return self.server.get("/metrics")[0] == 200
            except (OSError, http.client.HTTPException):
                return False  # the closed ones may not have been noticed yet

        self.assertTrue(fleet.wait_until(answered, 30), "scrapes from here answered again")

    @unittest.skipUnless(SLOW, "the idle timeout takes 10 s: label fleet")
    def test_idle_connection_is_closed(self):
        connection = socket.create_connection((self.server.host, self.server.port))
        connection.settimeout(60)
        connection.sendall(b"GET /metrics HTTP/1.1\r\n")
        self.assertEqual(connection.recv(1), b"", "the server closes an idle connection")
        connection.close()


class Stop(unittest.TestCase):
    def test_sigint_and_sigterm_end_it_cleanly(self):
        for signo in (signal.SIGINT, signal.SIGTERM):
            server = Server()
            try:
                self.assertEqual(server.get("/metrics")[0], 200)
                self.assertEqual(server.stop(signo), 0, signo)
                self.assertEqual(server.process.stderr.read(), "", "nothing said on the way out")
            finally:
                server.close()

    def test_bad_listen_addresses(self):
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        try:
            for listen, words in (("nonsense", "ADDR:PORT"),
                                  ("127.0.0.1:%d" % taken.getsockname()[1], "in use"),
                                  ("256.1.1.1:80", "cannot listen")):
                result = fleet.tdstat("serve", "--listen", listen, check=False)
                self.assertEqual(result.returncode, 1, listen)
                self.assertIn(words, result.stderr, listen)
        finally:
            taken.close()
        self.assertEqual(fleet.tdstat("serve", "extra", check=False).returncode, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
