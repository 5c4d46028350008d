#!/bin/sh
# SPDX-License-Identifier: MIT
# callgrind_inline.sh VALGRIND SHIM RACE_FREE
#
# TDSTAT_VALGRIND_INLINE=1 keeps the shim's inline paths on under a
# valgrind tool that follows no locks, so that callgrind counts the path
# that runs natively (bench/README.md).  Counted inside race_free's
# `work` only (its mutex, rwlock and semaphore loop): deterministic,
# start-up left out.  Measured: 243,053 instructions without the switch
# (the pass-through path), 94,653 with it, 122,464 bare.  Fails if the
# switch is ignored (the counts are then equal) or turns the inline
# paths off.
set -eu
valgrind=$1 shim=$2 program=$3

count() {
	env LD_PRELOAD="$shim" TDSTAT_ENABLE=1 "$@" "$valgrind" --tool=callgrind --toggle-collect=work \
		--callgrind-out-file=/dev/null "$program" 2>&1 >/dev/null |
		sed -n 's/.*Collected : \([0-9][0-9]*\).*/\1/p'
}

through=$(count TDSTAT_VALGRIND_INLINE=0)
inline=$(count TDSTAT_VALGRIND_INLINE=1)
echo "inside work: ${through} instructions pass-through, ${inline} inline"
if [ -z "$through" ] || [ -z "$inline" ]; then
	echo "callgrind gave no count" >&2
	exit 1
fi
# The inline paths take under half the pass-through path's instructions.
if [ $((inline * 2)) -ge "$through" ]; then
	echo "TDSTAT_VALGRIND_INLINE=1 did not keep the inline paths on" >&2
	exit 1
fi
