/* SPDX-License-Identifier: MIT */
/*
 * In-situ cycle counts of the shim's blocking-path sections, for the
 * bench only (libtdshim_profiled.so, built with TDSTAT_BUILD_BENCH; the
 * library programs load has none of it: the macros below are empty).
 *
 * Why: on a virtual machine without a performance monitoring unit, the
 * shim's cost on a blocking path shows only as a ratio of wall times that
 * moves by 2-3% from run to run, so a change worth 0.5% takes hundreds of
 * alternating runs to see.  A section's time stamp counter cycles, read
 * where the section runs (its caches as cold as a context switch left
 * them), show it at once.  Each section is timed whole, the sections
 * nested in it included with their own measurement (one empty pair costs
 * `empty` cycles, printed beside them).
 */
#ifndef TDSHIM_PROFILE_H
#define TDSHIM_PROFILE_H

#include <stdint.h>

enum tdshim_profile_section {
	TDSHIM_PROFILE_WAIT_BEGIN, /* tdshim_wait_begin: into BLOCKED */
	TDSHIM_PROFILE_WAIT_END,   /* tdshim_wait_abandon: back to RUNNABLE */
	TDSHIM_PROFILE_CHANGE,     /* tdshim_record_change, in both */
	TDSHIM_PROFILE_ANNOUNCE,   /* its announcement (step 1 of the latch) */
	TDSHIM_PROFILE_STAMP,      /* a waker's stamp */
	TDSHIM_PROFILE_WOKEN,      /* a woken waiter's look-up of its stamp */
	TDSHIM_PROFILE_EMPTY,      /* an empty pair: the measurement's own cost */
	TDSHIM_PROFILE_SECTIONS
};

#if defined(TDSHIM_PROFILE) && defined(__x86_64__)
struct tdshim_profile_slot {
	uint64_t cycles, calls;
};
extern struct tdshim_profile_slot tdshim_profile[TDSHIM_PROFILE_SECTIONS];

static inline uint64_t tdshim_profile_counter(void)
{
	uint32_t low, high;

	__asm__ __volatile__("rdtsc" : "=a"(low), "=d"(high));
	return (uint64_t)high << 32 | low;
}

#define TDSHIM_PROFILE_START(name) uint64_t tdshim_profile_##name = tdshim_profile_counter()
#define TDSHIM_PROFILE_END(name, section)                                                                 \
	do {                                                                                              \
		uint64_t tdshim_profile_spent_ = tdshim_profile_counter() - tdshim_profile_##name;       \
		__atomic_fetch_add(&tdshim_profile[section].cycles, tdshim_profile_spent_, __ATOMIC_RELAXED); \
		__atomic_fetch_add(&tdshim_profile[section].calls, 1, __ATOMIC_RELAXED);                  \
	} while (0)
#else
#define TDSHIM_PROFILE_START(name) do { } while (0)
#define TDSHIM_PROFILE_END(name, section) do { } while (0)
#endif

#endif
