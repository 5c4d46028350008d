#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The budgets of `tdstat serve` (issue 12), measured against one build tree:

    bench/serve_bench.py --build-dir DIR [--targets 100] [--threads 100]
                         [--clients 4] [--rate 1000] [--seconds 10]
                         [--only scrape,load,slowdown] [--markdown FILE]

1. scrape: TARGETS processes of THREADS threads each (fleet_target, all
   on a condvar but main in poll: a hundred spinners would leave a
   2-CPU machine no time to scrape them), preloaded and gathering; the time of
   GET /metrics, the first and the following ones (median, 95th
   percentile, max), and the server's CPU time per scrape. Goal: <= 50 ms.
2. load: one target of THREADS threads; CLIENTS processes, each with its
   own keep-alive connection, ask for /metrics at RATE in all for SECONDS;
   requests that failed or got another status than 200 (goal: none), the
   rate achieved, latencies.
3. slowdown: the work rate of that target's spinner while it is scraped
   at RATE, against the same target left alone (alternating, 3 rounds
   each, medians).

Needs the build tree's tdstat, libtdshim.so and tests/fleet/fleet_target
(a build with tests, the default). Prints one table; --markdown also
writes it (bench/RESULTS.md's "## Fleet" section takes it)."""

import argparse
import http.client
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import time

GOAL_SCRAPE_MS = 50.0


def log(message):
    print("[serve-bench] %s" % message, file=sys.stderr, flush=True)


class Build:
    def __init__(self, directory):
        self.tdstat = os.path.join(directory, "programs", "tdstat", "tdstat")
        self.shim = os.path.join(directory, "runtime", "libtdshim.so")
        self.target = os.path.join(directory, "tests", "fleet", "fleet_target")
        for path in (self.tdstat, self.shim, self.target):
            if not os.path.exists(path):
                sys.exit("serve_bench: %s is missing: build %s with its tests" % (path, directory))


class Target:
    def __init__(self, build, threads, spinners=1):
        env = dict(os.environ, LD_PRELOAD=build.shim, TDSTAT_ENABLE="1")
        self.process = subprocess.Popen([build.target, str(spinners), str(threads - 1 - spinners)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        if not self.process.stdout.readline().startswith("ready"):
            raise RuntimeError("fleet_target did not start")
        self.started = time.monotonic()

    def stop(self):
        """The spinner's work per second of its life and per second of
        the process's CPU time (which leaves out the CPU that others,
        the server and its clients included, took from it)."""
        cpu = cpu_seconds(self.process.pid)
        elapsed = time.monotonic() - self.started
        self.process.stdin.close()
        output = self.process.stdout.read()
        self.process.wait()
        spins = int(output.split()[-1]) if "spins" in output else 0
        return spins / elapsed, spins / cpu if cpu else 0.0


def cpu_seconds(pid):
    """User and system CPU time of a process, all its threads."""
    with open("/proc/%d/stat" % pid) as source:
        fields = source.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    def __init__(self, build):
        self.process = subprocess.Popen([build.tdstat, "serve", "--listen", "127.0.0.1:0"],
                                        stderr=subprocess.PIPE, text=True)
        line = self.process.stderr.readline()
        self.host, port = line.split("http://")[1].split("/")[0].rsplit(":", 1)
        self.port = int(port)

    def stop(self):
        self.process.terminate()
        return self.process.wait()


def scrape(connection):
    """(seconds, status, bytes) of one GET /metrics on a kept connection."""
    start = time.perf_counter()
    connection.request("GET", "/metrics", headers={"Accept": "application/openmetrics-text"})
    response = connection.getresponse()
    body = response.read()
    return time.perf_counter() - start, response.status, len(body)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def bench_scrape(build, targets, threads, rounds=60):
    log("scrape: starting %d targets of %d threads" % (targets, threads))
    started = [Target(build, threads, spinners=0) for _ in range(targets)]
    server = Server(build)
    try:
        connection = http.client.HTTPConnection(server.host, server.port, timeout=60)
        first, status, size = scrape(connection)
        times = []
        cpu_before = cpu_seconds(server.process.pid)
        for _ in range(rounds):
            seconds, status, size = scrape(connection)
            if status != 200:
                raise RuntimeError("scrape answered %d" % status)
            times.append(seconds)
            time.sleep(0.05)
        # The server's CPU per scrape (its surveys, one a second, included).
        cpu_per_scrape = (cpu_seconds(server.process.pid) - cpu_before) / rounds
        connection.request("GET", "/metrics")
        body = connection.getresponse().read().decode()
        processes = sum(1 for line in body.splitlines() if line.startswith("tdstat_threads{"))
        connection.close()
    finally:
        server.stop()
        for target in started:
            target.stop()
    return {"first_ms": first * 1e3, "median_ms": statistics.median(times) * 1e3,
            "p95_ms": percentile(times, 0.95) * 1e3, "max_ms": max(times) * 1e3,
            "processes": processes, "bytes": size, "rounds": rounds, "cpu_ms": cpu_per_scrape * 1e3}


def client(host, port, rate, seconds, results):
    """One client: requests paced at `rate` per second for `seconds`."""
    connection = http.client.HTTPConnection(host, port, timeout=10)
    latencies, errors, start = [], 0, time.monotonic()
    next_at, sent = start, 0
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            break
        if now < next_at:
            time.sleep(next_at - now)
        next_at += 1.0 / rate
        sent += 1
        try:
            elapsed, status, _ = scrape(connection)
            latencies.append(elapsed)
            if status != 200:
                errors += 1
        except (OSError, http.client.HTTPException):
            errors += 1
            connection.close()
            connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.close()
    results.put((sent, errors, latencies, time.monotonic() - start))


def load(server, clients, rate, seconds):
    results = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=client, args=(server.host, server.port, rate / clients,
                                                            seconds, results))
               for _ in range(clients)]
    for worker in workers:
        worker.start()
    collected = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    sent = sum(c[0] for c in collected)
    errors = sum(c[1] for c in collected)
    latencies = [latency for c in collected for latency in c[2]]
    elapsed = max(c[3] for c in collected)
    return {"sent": sent, "errors": errors, "rate": len(latencies) / elapsed,
            "median_ms": statistics.median(latencies) * 1e3,
            "p99_ms": percentile(latencies, 0.99) * 1e3, "max_ms": max(latencies) * 1e3}


def bench_load(build, threads, clients, rate, seconds):
    log("load: %d clients, %d scrapes/s in all, %d s, one target of %d threads"
        % (clients, rate, seconds, threads))
    target = Target(build, threads)
    server = Server(build)
    try:
        figures = load(server, clients, rate, seconds)
    finally:
        server.stop()
        target.stop()
    return figures


def bench_slowdown(build, threads, clients, rate, seconds, rounds=3):
    """The spinner's work rate, scraped and not, alternating."""
    log("slowdown: %d rounds of %d s, scraped at %d/s and left alone" % (rounds, seconds, rate))
    alone, scraped = [], []
    for _ in range(rounds):
        target = Target(build, threads)
        time.sleep(seconds)
        alone.append(target.stop())
        target = Target(build, threads)
        server = Server(build)
        load(server, clients, rate, seconds)
        server.stop()
        scraped.append(target.stop())
    def slower(index):
        before = statistics.median(a[index] for a in alone)
        after = statistics.median(s[index] for s in scraped)
        return before, after, 1 - after / before

    return {"wall": slower(0), "cpu": slower(1)}


def table(scrape_figures, load_figures, slowdown, arguments):
    rows = ["| serve | measure | figure | goal | met |", "| --- | --- | --- | --- | --- |"]
    if scrape_figures:
        rows += scrape_rows(scrape_figures, arguments)
    if load_figures:
        rows += load_rows(load_figures, arguments)
    if slowdown:
        rows += slowdown_rows(slowdown, arguments)
    with open("/proc/loadavg") as source:
        load_average = source.read().split()[0]
    header = ("serve_bench on %s, %d CPUs, load average %s at the end, %s"
              % (platform.node(), os.cpu_count(), load_average, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    return header, rows


def scrape_rows(scrape_figures, arguments):
    return [
        "| scrape | GET /metrics, %d processes x %d threads (%d in the answer, %d KiB), the first (serve found and attached them as it started) | %.1f ms | | |"
        % (arguments.targets, arguments.threads, scrape_figures["processes"],
           scrape_figures["bytes"] // 1024, scrape_figures["first_ms"]),
        "| scrape | the same, next %d scrapes: median / p95 / max | %.1f / %.1f / %.1f ms | <= %.0f ms | %s |"
        % (scrape_figures["rounds"], scrape_figures["median_ms"], scrape_figures["p95_ms"],
           scrape_figures["max_ms"], GOAL_SCRAPE_MS,
           "yes" if scrape_figures["p95_ms"] <= GOAL_SCRAPE_MS else "**NO**"),
        "| scrape | the server's CPU time per scrape (user + system, its once-a-second survey included) | %.1f ms | | |"
        % scrape_figures["cpu_ms"],
    ]


def load_rows(load_figures, arguments):
    return [
        "| load | %d clients, %d scrapes/s asked for %d s, one %d-thread target: answered / failed | %.0f/s / %d of %d | %d/s, 0 failed | %s |"
        % (arguments.clients, arguments.rate, arguments.seconds, arguments.threads, load_figures["rate"],
           load_figures["errors"], load_figures["sent"], arguments.rate,
           "yes" if load_figures["errors"] == 0 and load_figures["rate"] >= 0.95 * arguments.rate else "**NO**"),
        "| load | latency under that load: median / p99 / max | %.2f / %.2f / %.1f ms | | |"
        % (load_figures["median_ms"], load_figures["p99_ms"], load_figures["max_ms"]),
    ]


def slowdown_rows(slowdown, arguments):
    return [
        "| slowdown | the target's spinner scraped at %d/s vs left alone (medians of 3): work per second of its CPU time | %.0f vs %.0f rounds/s: %.1f%% slower | <= 1%% | %s |"
        % (arguments.rate, slowdown["cpu"][1], slowdown["cpu"][0], slowdown["cpu"][2] * 100,
           "yes" if slowdown["cpu"][2] <= 0.01 else "**NO**"),
        "| slowdown | the same, work per second of wall time (on %d CPUs the server and its clients take CPU from it) | %.0f vs %.0f rounds/s: %.1f%% slower | | |"
        % (os.cpu_count(), slowdown["wall"][1], slowdown["wall"][0], slowdown["wall"][2] * 100),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--threads", type=int, default=100)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--only", default="scrape,load,slowdown")
    parser.add_argument("--markdown")
    arguments = parser.parse_args()
    build = Build(arguments.build_dir)
    sections = arguments.only.split(",")
    scrape_figures = load_figures = slowdown = None
    if "scrape" in sections:
        scrape_figures = bench_scrape(build, arguments.targets, arguments.threads)
    if "load" in sections:
        load_figures = bench_load(build, arguments.threads, arguments.clients, arguments.rate,
                                  arguments.seconds)
    if "slowdown" in sections:
        slowdown = bench_slowdown(build, arguments.threads, arguments.clients, arguments.rate,
                                  arguments.seconds)
    header, rows = table(scrape_figures, load_figures, slowdown, arguments)
    print(header)
    print("\n".join(rows))
    if arguments.markdown:
        with open(arguments.markdown, "w") as out:
            out.write("%s\n\n%s\n" % (header, "\n".join(rows)))


if __name__ == "__main__":
    main()
