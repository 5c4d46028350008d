/* SPDX-License-Identifier: MIT */
/*
 * From a snapshot to the numbers of SPEC §2: the 64-bit integrals and the
 * integer fractions of td_ta_stats_t.
 */
#include <limits.h>
#include <string.h>
#include <time.h>

#include <tdstat/fraction.h>

#include "thread_db_private.h"

td_err_e tddb_target_cpu_ns(const struct td_thragent *agent, uint64_t *cpu_ns)
{
	pid_t pid = ps_getpid(agent->ph);
	struct timespec cpu;

	if (pid <= 0)
		return TD_DBERR;
	/* Not tdstat_clock_ns: a process CPU clock may read 0 ns. */
	if (clock_gettime(tdstat_process_cpu_clock(pid), &cpu) != 0)
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
	uint64_t cpu_end, cpu = 0;
	td_err_e err;

	err = tddb_snapshot(agent, kinds, &snapshot);
	if (err != TD_OK)
		return err;
	if (snapshot.enabled) {
		err = tddb_target_cpu_ns(agent, &cpu_end);
		if (err != TD_OK)
			return err;
	} else {
		cpu_end = snapshot.control.cpu_end_ns;
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
	/* The anchor is in the region since ABI 2.1; in 2.0 its word is
	 * reserved, whatever it holds: absent (0). */
	if (agent->geometry.abi_minor >= 1 && snapshot.control.realtime_offset_ns != 0)
		stats->window_start_realtime_ns = snapshot.window_start_ns +
						  (uint64_t)snapshot.control.realtime_offset_ns;
	if (snapshot.detail) {
		stats->kinds = TDSTAT_WAIT_KIND_COUNT;
		memcpy(stats->idle_by_kind_ns, snapshot.idle_by_kind_ns, sizeof(stats->idle_by_kind_ns));
	}
	return TD_OK;
}

/* SPEC §2's rule, shared with the command (include/tdstat/fraction.h). */
void tddb_stats_fractions(const td_ta_stats_ns_t *stats, td_ta_stats_t *fractions)
{
	struct tdstat_fractions rule;

	tdstat_fractions_of(stats->window_ns, stats->lwps_ns, stats->runnable_ns, stats->running_ns, &rule);
	fractions->nthreads = stats->nthreads;
	fractions->r_concurrency = stats->r_concurrency;
	fractions->nlwps_num = rule.lwps_num;
	fractions->nrunnable_num = rule.runnable_num;
	fractions->a_concurrency_num = rule.running_num;
	fractions->nidle_num = rule.idle_num;
	fractions->nlwps_den = rule.den;
	fractions->nrunnable_den = rule.den;
	fractions->a_concurrency_den = rule.den;
	fractions->nidle_den = rule.den;
}
