/* SPDX-License-Identifier: MIT */
/*
 * The cost of one td_ta_get_stats (and td_ta_get_nthreads) on targets with
 * 1, 100 and 1,000 threads, through libtdstat_ps.  Prints figures, asserts
 * nothing about time: `ctest -L bench`, or run it by hand.
 */
#include <stdio.h>
#include <stdlib.h>

#include <tdstat/ps_live.h>
#include <tdstat/thread_db_stats.h>

#include "live_target.h"

#define CALLS 300

static int compare(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int measure(int threads, const char *mode)
{
	static uint64_t costs[CALLS];
	struct live_target target;
	struct ps_prochandle *ph;
	td_thragent_t *ta;
	td_ta_stats_t stats;
	uint64_t total = 0;
	int n;

	/* The main thread is one of the `threads`. */
	if (!live_start(&target, mode, threads - 1, 1, NULL))
		return 1;
	if (tdps_open(target.pid, &ph) != TDPS_OK || td_ta_new(ph, &ta) != TD_OK) {
		live_stop(&target);
		return 1;
	}
	for (int i = 0; i < CALLS; i++) {
		uint64_t start = tdtest_monotonic_ns();

		if (td_ta_get_stats(ta, &stats) != TD_OK) {
			fprintf(stderr, "stats_cost: td_ta_get_stats failed\n");
			return 1;
		}
		costs[i] = tdtest_monotonic_ns() - start;
		total += costs[i];
	}
	qsort(costs, CALLS, sizeof(costs[0]), compare);
	td_ta_get_nthreads(ta, &n);
	printf("td_ta_get_stats, %4d threads (%s, nthreads %d): median %7.1f us, p90 %7.1f us, mean %7.1f us\n", threads,
	       mode, n, costs[CALLS / 2] / 1e3, costs[CALLS * 9 / 10] / 1e3, (double)total / CALLS / 1e3);
	td_ta_delete(ta);
	tdps_close(ph);
	return live_stop(&target) == 0 ? 0 : 1;
}

int main(void)
{
	int failed = 0;

	failed |= measure(1, "condvar");
	failed |= measure(100, "condvar");
	failed |= measure(1000, "condvar");
	/* Threads that change state all the time: the reader retries. */
	failed |= measure(100, "sleep");
	return failed;
}
