/* SPDX-License-Identifier: MIT */
/*
 * The integral -> fraction rule of docs/CONTRACT.md §2, in one place: libc_db's
 * td_ta_get_stats (over the whole window) and the command's rows (over an
 * interval between two snapshots) both use it, so a row over the whole
 * window equals what td_ta_get_stats reports.  Inline, so it adds no
 * symbol to libc_db's ABI.
 *
 * Given a window of |W| ns and three integrals over it (thread-ns of
 * tracked, RUNNABLE and running threads), each average is a fraction
 * num / D with one denominator D = max(1, |W| in µs), halved while D or
 * any numerator would exceed INT_MAX; num(x) = floor(x * D / |W|) in
 * 128-bit arithmetic; nidle = nlwps - nrunnable.  An empty window gives
 * every numerator 0 over 1.  The order running <= runnable <= lwps is
 * kept whatever the caller passes (clamped), so it holds in every result.
 */
#ifndef TDSTAT_FRACTION_H
#define TDSTAT_FRACTION_H

#include <limits.h>
#include <stdint.h>

struct tdstat_fractions {
	int lwps_num;
	int runnable_num;
	int running_num;  /* td_ta_stats_t's a_concurrency */
	int idle_num;     /* lwps_num - runnable_num */
	int den;          /* every numerator's denominator */
};

static inline uint64_t tdstat_fraction_numerator(uint64_t integral_ns, uint64_t den, uint64_t window_ns)
{
	unsigned __int128 value = (unsigned __int128)integral_ns * den / window_ns;

	return value > UINT64_MAX ? UINT64_MAX : (uint64_t)value;
}

static inline void tdstat_fractions_of(uint64_t window_ns, uint64_t lwps_ns, uint64_t runnable_ns,
				       uint64_t running_ns, struct tdstat_fractions *out)
{
	uint64_t den = window_ns / 1000 ? window_ns / 1000 : 1;
	uint64_t lwps = 0, runnable = 0, running = 0;

	runnable_ns = runnable_ns < lwps_ns ? runnable_ns : lwps_ns;
	running_ns = running_ns < runnable_ns ? running_ns : runnable_ns;
	if (window_ns == 0) {
		den = 1;
	} else {
		for (;;) {
			lwps = tdstat_fraction_numerator(lwps_ns, den, window_ns);
			runnable = tdstat_fraction_numerator(runnable_ns, den, window_ns);
			running = tdstat_fraction_numerator(running_ns, den, window_ns);
			if ((lwps <= INT_MAX && den <= INT_MAX) || den == 1)
				break;
			den /= 2;
		}
	}
	/* Reached only with D = 1 and more than INT_MAX average threads,
	 * which no region describes honestly: clamp, keeping the order. */
	lwps = lwps < INT_MAX ? lwps : INT_MAX;
	runnable = runnable < lwps ? runnable : lwps;
	running = running < runnable ? running : runnable;
	out->lwps_num = (int)lwps;
	out->runnable_num = (int)runnable;
	out->running_num = (int)running;
	out->idle_num = (int)(lwps - runnable);
	out->den = (int)den;
}

#endif /* TDSTAT_FRACTION_H */
