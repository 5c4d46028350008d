/* SPDX-License-Identifier: MIT */
/*
 * From a snapshot to the numbers of docs/CONTRACT.md §2: the 64-bit integrals and the
 * integer fractions of td_ta_stats_t.
 */
#include <limits.h>
#include <string.h>
#include <time.h>

#include "thread_db_private.h"

td_err_e tddb_target_cpu_ns(const struct td_thragent *agent, uint64_t *cpu_ns)
{
	pid_t pid = ps_getpid(agent->ph);
	struct timespec cpu;

	if (pid <= 0)
		return TD_DBERR;
	/* The kernel's process CPU clock id of `pid` (CPUCLOCK_SCHED, process
	 * scope), as glibc's clock_getcpuclockid computes it; calling that
	 * would add a clock_getres syscall to every snapshot only to check
	 * what clock_gettime checks anyway. */
	clockid_t clock = (clockid_t)((~(unsigned int)pid << 3) | 2u);
	if (clock_gettime(clock, &cpu) != 0)
		return TD_DBERR;
	*cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	return TD_OK;
}

static int32_t saturate_int(uint64_t value)
{
	return value > INT32_MAX ? INT32_MAX : (int32_t)value;
}

td_err_e tddb_stats_ns(const struct td_thragent *agent, bool kinds, td_ta_stats_ns_t *stats)
{
	struct tddb_snapshot snapshot;
	td_err_e err;

	err = tddb_snapshot(agent, kinds, &snapshot);
	if (err != TD_OK)
		return err;
	return tddb_stats_from_snapshot(agent, &snapshot, stats);
}

td_err_e tddb_stats_from_snapshot(const struct td_thragent *agent, const struct tddb_snapshot *snapshot_in,
				  td_ta_stats_ns_t *stats)
{
	const struct tddb_snapshot snapshot = *snapshot_in;
	struct tddb_image image;
	uint64_t cpu_end, cpu = 0;
	td_err_e err;

	tddb_image_query(agent, &image);
	if (!snapshot.enabled) {
		cpu_end = snapshot.control.cpu_end_ns;
	} else if (image.frozen) {
		/* A core: its own notes, if it has them (ps_image.h). */
		cpu_end = image.cpu_known ? image.cpu_ns : 0;
	} else {
		err = tddb_target_cpu_ns(agent, &cpu_end);
		if (err != TD_OK)
			return err;
	}
	if (cpu_end > snapshot.control.cpu_start_ns)
		cpu = cpu_end - snapshot.control.cpu_start_ns;

	memset(stats, 0, sizeof(*stats));
	stats->size = sizeof(*stats);
	stats->enabled = snapshot.enabled;
	stats->nthreads = saturate_int((uint64_t)snapshot.live + snapshot.overflow_live);
	stats->r_concurrency = snapshot.control.r_concurrency;
	stats->overflow_threads = snapshot.overflow_live;
	stats->abi_minor = agent->geometry.abi_minor;
	stats->window_start_ns = snapshot.window_start_ns;
	stats->window_ns = snapshot.window_ns;
	stats->lwps_ns = snapshot.tracked_ns;
	stats->runnable_ns = snapshot.runnable_ns;
	stats->idle_ns = snapshot.tracked_ns - snapshot.runnable_ns;
	stats->cpu_ns = cpu;
	stats->running_ns = tddb_min_u64(cpu, snapshot.runnable_ns);
	stats->snapshot_ns = snapshot.now_ns;
	if (snapshot.detail) {
		stats->kinds = TDSTAT_WAIT_KIND_COUNT;
		memcpy(stats->idle_by_kind_ns, snapshot.idle_by_kind_ns, sizeof(stats->idle_by_kind_ns));
	}
	return TD_OK;
}

static uint64_t fraction_numerator(uint64_t integral, uint64_t denominator, uint64_t window)
{
	return tddb_saturate_u64((unsigned __int128)integral * denominator / window);
}

/*
 * docs/CONTRACT.md §2: one denominator D = max(1, |W| in µs), halved while any
 * numerator (or D itself, an int too) would exceed INT_MAX; each numerator
 * is floor(integral * D / |W|), except nidle = nlwps - nrunnable.  Since
 * running <= runnable <= tracked, the numerators keep that order.
 */
void tddb_stats_fractions(const td_ta_stats_ns_t *stats, td_ta_stats_t *fractions)
{
	uint64_t window = stats->window_ns;
	uint64_t denominator = tddb_max_u64(1, window / 1000);
	uint64_t lwps = 0, runnable = 0, running = 0;

	fractions->nthreads = stats->nthreads;
	fractions->r_concurrency = stats->r_concurrency;
	if (window == 0) {
		denominator = 1;
	} else {
		for (;;) {
			lwps = fraction_numerator(stats->lwps_ns, denominator, window);
			runnable = fraction_numerator(stats->runnable_ns, denominator, window);
			running = fraction_numerator(stats->running_ns, denominator, window);
			if ((lwps <= INT_MAX && denominator <= INT_MAX) || denominator == 1)
				break;
			denominator /= 2;
		}
	}
	/* Reached only with D = 1 and more than INT_MAX average threads,
	 * which no region can describe honestly: clamp, keeping the order. */
	lwps = tddb_min_u64(lwps, INT_MAX);
	runnable = tddb_min_u64(runnable, lwps);
	running = tddb_min_u64(running, runnable);

	fractions->nlwps_num = (int)lwps;
	fractions->nrunnable_num = (int)runnable;
	fractions->a_concurrency_num = (int)running;
	fractions->nidle_num = (int)(lwps - runnable);
	fractions->nlwps_den = (int)denominator;
	fractions->nrunnable_den = (int)denominator;
	fractions->a_concurrency_den = (int)denominator;
	fractions->nidle_den = (int)denominator;
}
