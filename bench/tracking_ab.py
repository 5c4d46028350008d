#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Per-object tracking's cost on one microbench row, by hand:
    tracking_ab.py BUILD_DIR NAME ITERATIONS RUNS [CPU]
runs bench/microbench NAME bare, under the shim with tracking off, and
with TDSTAT_SYNC_TRACKING=1, alternating, RUNS rounds, each under
`chrt -f 1` pinned to CPU (default 1); prints the medians and the medians
of the per-round ratios to bare.  bench.py's section 1 measures the same
rows in the full run."""
import os, subprocess, sys, statistics
b, name, iters, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]); cpu = sys.argv[5] if len(sys.argv)>5 else "1"
def run(v):
    env=dict(os.environ); [env.pop(k,None) for k in ("LD_PRELOAD","TDSTAT_SYNC_TRACKING")]
    if v!="bare": env["LD_PRELOAD"]=b+"/runtime/libtdshim.so"; env["TDSTAT_ENABLE"]="1"
    if v=="on": env["TDSTAT_SYNC_TRACKING"]="1"
    cmd=["chrt","-f","1","taskset","-c",cpu,b+"/bench/microbench",name,iters]
    out=subprocess.run(cmd,env=env,capture_output=True,text=True,check=True).stdout
    return float(out.split()[1])
r={"bare":[],"off":[],"on":[]}
for _ in range(runs):
    for v in r: r[v].append(run(v))
m={v:statistics.median(x) for v,x in r.items()}
ro=statistics.median([a/c for a,c in zip(r["off"],r["bare"])]); rn=statistics.median([a/c for a,c in zip(r["on"],r["bare"])])
print(f"{name}: bare {m['bare']:.2f} ns  off {m['off']:.2f} ({ro:.3f}x)  on {m['on']:.2f} ({rn:.3f}x)  runs {runs}")
