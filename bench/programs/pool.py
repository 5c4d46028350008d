# SPDX-License-Identifier: MIT
# A Python thread pool fed short tasks (hashing releases the GIL), used by
# bench/real_programs.py.
import hashlib
import sys
from concurrent.futures import ThreadPoolExecutor

tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
block = b"x" * 65536


def task(i):
    return hashlib.sha256(block + i.to_bytes(4, "little")).digest()[0]


with ThreadPoolExecutor(max_workers=4) as pool:
    print(sum(pool.map(task, range(tasks), chunksize=4)))
