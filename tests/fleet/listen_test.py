#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tdstat serve --listen with a port outside 0..65535 is refused, not
bound modulo 65536 (99999 used to serve on 34463, a port nobody asked for)."""
import os
import subprocess
import sys

TDSTAT = os.environ["TDSTAT"]

def main():
    for port in ("99999", "65536", "-1"):
        child = subprocess.Popen([TDSTAT, "serve", "--listen", "127.0.0.1:" + port],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = child.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            child.terminate()
            out, err = child.communicate()
            print(f"port {port}: tdstat serve kept running instead of refusing it: {err.strip()}")
            return 1
        if child.returncode == 0 or "serving" in err:
            print(f"port {port}: accepted (exit {child.returncode}): {err.strip()}")
            return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
