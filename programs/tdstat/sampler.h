/* SPDX-License-Identifier: MIT */
/*
 * The sampler of `tdstat run --plot` (sampler.c): a thread that reads a
 * process every interval and adds each interval to a plot.
 */
#ifndef TDSTAT_SAMPLER_H
#define TDSTAT_SAMPLER_H

#include "tdstat.h"

struct tdstat_plot;
struct tdstat_sampler;

/* NULL when the thread cannot start. */
struct tdstat_sampler *tdstat_sampler_start(pid_t pid, double interval_s, struct tdstat_plot *plot);
/* Stops and frees it; `last`, when given, is the final snapshot (the
 * run to its end), added as the last interval. */
void tdstat_sampler_stop(struct tdstat_sampler *sampler, const td_ta_stats_ns_t *last);

#endif /* TDSTAT_SAMPLER_H */
