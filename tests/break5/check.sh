#!/bin/sh
# SPDX-License-Identifier: MIT
# check.sh MODE LOW HIGH_S [ARG...]: runs `break5_target MODE ARG...`
# under `tdstat run --json` and compares the shim's runnable time (runnable
# x window) with the kernel's figure for all the target's threads (CPU +
# run-queue wait, schedstat, which the target prints): it fails when the
# shim's figure is below LOW x the kernel's or above the kernel's plus
# HIGH_S seconds.  TDSTAT and TARGET come from the environment (CTest).
# These tests failed on the code they were written against (the break5
# review's findings); one that still fails (a documented limitation) has
# TDSTAT_BREAK5_GATED=1 and runs only with TDSTAT_BREAK5=1 (77: skipped).
mode=$1 low=$2 high=$3
shift 3
if [ "${TDSTAT_BREAK5_GATED:-0}" = 1 ] && [ "${TDSTAT_BREAK5:-0}" != 1 ]; then
	echo "skipped: a break5 finding (fails now); run with TDSTAT_BREAK5=1"
	exit 77
fi
json=$(mktemp /tmp/break5.XXXXXX) || exit 1
out=$(mktemp /tmp/break5.XXXXXX) || exit 1
trap 'rm -f "$json" "$out"' EXIT
# One try; a figure outside the bounds is measured again, twice at most
# (a loaded machine moves one run; the defects moved every run).
try() {
"$TDSTAT" run --json -o "$json" -- "$TARGET" "$mode" "$@" >"$out"
status=$?
cat "$out"
if [ "$status" = 77 ]; then
	echo "skipped: the target needs SCHED_FIFO (root) and 2 CPUs, or seccomp"
	return 77
fi
if [ "$status" != 0 ]; then
	echo "FAIL: tdstat run exited $status"
	return 1
fi
echo "tdstat run --json: $(cat "$json")"
awk -v low="$low" -v high="$high" '
	FNR == NR {
		for (i = 1; i < NF; i++) {
			if ($i == "cpu") cpu = $(i + 1)
			if ($i == "wait") wait = $(i + 1)
		}
		next
	}
	{
		if (match($0, /"runnable":[0-9.]+/)) runnable = substr($0, RSTART + 11, RLENGTH - 11)
		if (match($0, /"window_s":[0-9.]+/)) window = substr($0, RSTART + 11, RLENGTH - 11)
	}
	END {
		kernel = cpu + wait
		shim = runnable * window
		printf "shim runnable %.4f s, kernel CPU %.4f s + run-queue %.4f s = %.4f s, ratio %.3f\n",
		       shim, cpu, wait, kernel, (kernel > 0 ? shim / kernel : 0)
		if (kernel <= 0) { print "FAIL: no kernel figures"; exit 1 }
		if (shim < low * kernel) { printf "FAIL: below %.2f x the kernel\n", low; exit 1 }
		if (shim > kernel + high) { printf "FAIL: more than the kernel + %.2f s\n", high; exit 1 }
		print "ok"
	}' "$out" "$json"
}

for attempt in 1 2 3; do
	try "$@"
	status=$?
	[ "$status" = 1 ] && [ "$attempt" -lt 3 ] && { echo "measuring again"; continue; }
	exit "$status"
done
