#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Programs whose behaviour must not change under LD_PRELOAD of the shim
(docs/CONTRACT.md §2, Transparency): same output bare and preloaded.
argv[1]: the program; environment: TDSHIM."""

import os
import subprocess
import sys


def run(program, preload):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = os.environ["TDSHIM"]
    result = subprocess.run([program], env=env, capture_output=True, text=True, timeout=60)
    return result.returncode, result.stdout


bare, shimmed = run(sys.argv[1], False), run(sys.argv[1], True)
print("bare:", bare, "\nunder the shim:", shimmed)
sys.exit(0 if bare == shimmed else 1)
