# SPDX-License-Identifier: MIT
"""Helpers of the fleet tests: the built programs (paths from the
environment CTest gives), targets of known shape started under the shim
(LD_PRELOAD in the target's own environment only), tdstat runs."""

import os
import subprocess
import time

TDSTAT = os.environ["TDSTAT"]
TDSHIM = os.environ["TDSHIM"]
FLEET_TARGET = os.environ["FLEET_TARGET"]
PHASES = os.environ.get("PHASES", "")

# Every command a test runs is bounded: a hung tdstat fails the test.
TIMEOUT_S = 60


def shim_environment(enable=True):
    env = dict(os.environ)
    env["LD_PRELOAD"] = TDSHIM
    if enable:
        env["TDSTAT_ENABLE"] = "1"
    else:
        env.pop("TDSTAT_ENABLE", None)
    return env


class Target:
    """fleet_target SPINNERS SLEEPERS under the shim, until the context
    ends (its stdin closes).  threads: how many it runs."""

    def __init__(self, spinners=0, sleepers=2, name=None, preload=True, enable=True):
        args = [FLEET_TARGET]
        if name is not None:
            args += [b"-n", name if isinstance(name, bytes) else name.encode()]
        args += [str(spinners), str(sleepers)]
        env = shim_environment(enable) if preload else dict(os.environ)
        if not preload:
            env.pop("LD_PRELOAD", None)
        self.threads = 1 + spinners + sleepers
        self.spinners = spinners
        self.sleepers = sleepers
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env=env)
        line = self.process.stdout.readline().decode()
        if not line.startswith("ready"):
            self.close()
            raise RuntimeError("fleet_target did not start: %r" % line)
        self.pid = self.process.pid

    def close(self):
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (subprocess.TimeoutExpired, BrokenPipeError):
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def tdstat(*args, check=True):
    """Runs tdstat; returns the CompletedProcess, its output as text with
    the line ends kept as written."""
    result = subprocess.run([TDSTAT] + [str(a) for a in args], capture_output=True,
                            timeout=TIMEOUT_S)
    result.stdout = result.stdout.decode(errors="replace")
    result.stderr = result.stderr.decode(errors="replace")
    if check and result.returncode != 0:
        raise AssertionError("tdstat %s: exit %d\n%s%s" % (
            " ".join(map(str, args)), result.returncode, result.stdout, result.stderr))
    return result


def expositions(text):
    """The OpenMetrics expositions in text, each with its '# EOF'."""
    parts = text.split("# EOF\n")
    if parts[-1] != "":
        raise AssertionError("output does not end with '# EOF': %r" % parts[-1][-200:])
    return [part + "# EOF\n" for part in parts[:-1]]


def wait_until(predicate, timeout_s=TIMEOUT_S, step_s=0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step_s)
    return predicate()
