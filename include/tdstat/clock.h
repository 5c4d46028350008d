/* SPDX-License-Identifier: MIT */
/*
 * The clocks, read one way everywhere: the shim (runtime/), the agent
 * (libc_db), the command and the tests include this header rather than
 * keep copies.  Inline, so it adds no symbol to any library's ABI, and
 * async-signal-safe (clock_gettime is), so the shim may use it anywhere.
 *
 * Time in tdstat is CLOCK_MONOTONIC nanoseconds (region.h says why); CPU
 * clocks are nanoseconds of CPU time; the wall clock enters only through
 * the region's anchor, an offset from the one to the other.
 */
#ifndef TDSTAT_CLOCK_H
#define TDSTAT_CLOCK_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* `clock` in nanoseconds; 0 if the kernel refuses it (a CPU clock of a
 * process that is gone, say). */
static inline uint64_t tdstat_clock_ns(clockid_t clock)
{
	struct timespec now;

	if (clock_gettime(clock, &now) != 0)
		return 0;
	return (uint64_t)now.tv_sec * UINT64_C(1000000000) + (uint64_t)now.tv_nsec;
}

static inline uint64_t tdstat_monotonic_ns(void)
{
	return tdstat_clock_ns(CLOCK_MONOTONIC);
}

/*
 * The kernel's CPU clock of the whole process `pid` (CPUCLOCK_SCHED,
 * process scope: the run time of all its threads, live and exited), as
 * glibc's clock_getcpuclockid computes it; calling that would add a
 * clock_getres system call to every read only to check what
 * clock_gettime checks anyway.  The kernel sums every thread's run time
 * to answer it: its cost grows with the thread count (docs/READER.md).
 */
static inline clockid_t tdstat_process_cpu_clock(pid_t pid)
{
	return (clockid_t)((~(unsigned int)pid << 3) | 2u);
}

/*
 * The wall-clock anchor: CLOCK_REALTIME - CLOCK_MONOTONIC now, the two
 * read together (the monotonic clock on both sides of the wall clock, the
 * middle taken), so the wall-clock time of a monotonic stamp t is
 * t + offset as long as nobody steps the wall clock.  *monotonic gets the
 * monotonic reading the offset goes with.  0 if a clock fails (no
 * machine's wall clock reads the monotonic clock's value exactly).
 */
static inline int64_t tdstat_realtime_offset_ns(uint64_t *monotonic)
{
	uint64_t before = tdstat_monotonic_ns();
	uint64_t wall = tdstat_clock_ns(CLOCK_REALTIME);
	uint64_t after = tdstat_monotonic_ns();
	uint64_t middle = before + (after - before) / 2;

	*monotonic = middle;
	if (!before || !wall || !after)
		return 0;
	return (int64_t)(wall - middle);
}

#endif /* TDSTAT_CLOCK_H */
