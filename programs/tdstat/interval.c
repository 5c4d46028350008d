/* SPDX-License-Identifier: MIT */
/*
 * Averages over an interval of one window, from two 64-bit snapshots.
 *
 * The integrals only grow within a window, so the difference of two
 * snapshots is the integral over the interval between them; watching
 * therefore never needs to reset the target.  The fractions follow the
 * rule of docs/CONTRACT.md §2 so that a row over the whole window equals what
 * td_ta_get_stats would report, and a_concurrency <= nrunnable <= nlwps
 * holds in every row.
 */
#include "tdstat.h"

#include <stddef.h>
#include <string.h>

#include <tdstat/fraction.h>

struct integrals {
	uint64_t window_ns;
	uint64_t lwps_ns;
	uint64_t runnable_ns;
	uint64_t running_ns;
};

static uint64_t minimum(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t growth(uint64_t from, uint64_t to)
{
	return to > from ? to - from : 0;
}

static void integrals_between(struct integrals *out, const td_ta_stats_ns_t *from,
			      const td_ta_stats_ns_t *to)
{
	static const td_ta_stats_ns_t window_start;
	uint64_t cpu_ns;

	/* Between two snapshots, the span the threads were counted over
	 * (thread_db_stats.h, counted_ns); over the window so far, the
	 * window, as td_ta_get_stats reports it. */
	if (from && tdstat_stats_counted(from) && tdstat_stats_counted(to))
		out->window_ns = growth(from->counted_ns, to->counted_ns);
	else
		out->window_ns = growth(from ? from->window_ns : 0, to->window_ns);
	if (!from)
		from = &window_start;
	out->lwps_ns = growth(from->lwps_ns, to->lwps_ns);
	out->runnable_ns = minimum(growth(from->runnable_ns, to->runnable_ns), out->lwps_ns);
	cpu_ns = growth(from->cpu_ns, to->cpu_ns);
	out->running_ns = minimum(cpu_ns, out->runnable_ns);
}

/* The rule of docs/CONTRACT.md §2, the agent's too (include/tdstat/fraction.h). */
static void fractions(struct tdstat_interval *out, const struct integrals *in)
{
	struct tdstat_fractions rule;

	tdstat_fractions_of(in->window_ns, in->lwps_ns, in->runnable_ns, in->running_ns, &rule);
	out->nlwps_num = rule.lwps_num;
	out->nrunnable_num = rule.runnable_num;
	out->a_concurrency_num = rule.running_num;
	out->nidle_num = rule.idle_num;
	out->nlwps_den = out->nrunnable_den = out->a_concurrency_den = out->nidle_den = rule.den;
}

static double average(uint64_t integral_ns, uint64_t window_ns)
{
	return window_ns ? (double)integral_ns / (double)window_ns : 0.0;
}

void tdstat_interval_compute(struct tdstat_interval *out, pid_t pid,
			     const td_ta_stats_ns_t *from, const td_ta_stats_ns_t *to)
{
	struct integrals in;

	memset(out, 0, sizeof(*out));
	integrals_between(&in, from, to);
	out->pid = pid;
	out->nthreads = to->nthreads;
	out->r_concurrency = to->r_concurrency;
	fractions(out, &in);
	out->lwps = average(in.lwps_ns, in.window_ns);
	out->runnable = average(in.runnable_ns, in.window_ns);
	out->running = average(in.running_ns, in.window_ns);
	out->idle = average(in.lwps_ns - in.runnable_ns, in.window_ns);
	out->window_s = (double)in.window_ns / 1e9;
	out->untracked = -1;
	out->steal = -1;
	out->totals = *to;
	/* By kind: the growth of each kind's integral, shared out so the
	 * kinds sum to idle exactly as the integrals do. */
	out->has_kinds = to->kinds >= TDSTAT_WAIT_KIND_COUNT && (!from || from->kinds >= TDSTAT_WAIT_KIND_COUNT);
	for (int k = 0; out->has_kinds && k < TDSTAT_WAIT_KIND_COUNT; k++)
		out->idle_by[k] = average(growth(from ? from->idle_by_kind_ns[k] : 0, to->idle_by_kind_ns[k]),
					  in.window_ns);
}

bool tdstat_stats_counted(const td_ta_stats_ns_t *stats)
{
	return stats->size >= offsetof(td_ta_stats_ns_t, counted_ns) + sizeof(stats->counted_ns);
}

/* The span of an interval between two snapshots of one window (from
 * NULL: the window so far), as every average of a line divides by it. */
uint64_t tdstat_interval_span_ns(const td_ta_stats_ns_t *from, const td_ta_stats_ns_t *to)
{
	struct integrals in;

	integrals_between(&in, from, to);
	return in.window_ns;
}

bool tdstat_same_window(const td_ta_stats_ns_t *a, const td_ta_stats_ns_t *b)
{
	return a->window_start_ns == b->window_start_ns && b->window_ns >= a->window_ns;
}
