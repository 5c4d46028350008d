/* SPDX-License-Identifier: MIT */
#include "rel_series.h"

#include <stdio.h>
#include <string.h>

#include "rel_support.h"

/* Problems of each kind printed per series; the counts go on. */
#define PRINTED_MAX 5

void rel_series_init(struct rel_series *series, const char *name, uint64_t max_threads)
{
	memset(series, 0, sizeof(*series));
	series->name = name;
	series->max_threads = max_threads;
	series->first_error = TD_OK;
}

static void episode_close(struct rel_series *series, uint64_t now)
{
	bool transient = series->episode_failures == 1 || now - series->episode_start_ns <= REL_SERIES_TRANSIENT_NS;

	if (transient) {
		series->transient++;
	} else {
		if (series->lasting < PRINTED_MAX)
			fprintf(stderr, "%s: %ld snapshots in a row failed over %.3f s\n", series->name,
				series->episode_failures, (double)(now - series->episode_start_ns) / 1e9);
		series->lasting++;
	}
	series->in_episode = false;
}

static void add_error(struct rel_series *series, td_err_e err, uint64_t now)
{
	if (series->failed == 0) {
		series->first_error = err;
		fprintf(stderr, "%s: snapshot %ld failed: %s\n", series->name, series->snapshots, rel_td_name(err));
	}
	series->failed++;
	if (!series->in_episode) {
		series->in_episode = true;
		series->episode_failures = 0;
		series->episode_start_ns = now;
	}
	series->episode_failures++;
}

struct field {
	const char *name;
	size_t offset;
};

static const struct field monotonic_fields[] = {
	{ "lwps_ns", offsetof(td_ta_stats_ns_t, lwps_ns) },
	{ "runnable_ns", offsetof(td_ta_stats_ns_t, runnable_ns) },
	{ "idle_ns", offsetof(td_ta_stats_ns_t, idle_ns) },
	{ "window_ns", offsetof(td_ta_stats_ns_t, window_ns) },
	{ "cpu_ns", offsetof(td_ta_stats_ns_t, cpu_ns) },
	{ "running_ns", offsetof(td_ta_stats_ns_t, running_ns) },
};

static uint64_t field_value(const td_ta_stats_ns_t *stats, const struct field *field)
{
	uint64_t value;

	memcpy(&value, (const unsigned char *)stats + field->offset, sizeof(value));
	return value;
}

static void check_decreases(struct rel_series *series, const td_ta_stats_ns_t *previous,
			    const td_ta_stats_ns_t *now)
{
	bool decreased = false;

	series->pairs++;
	for (size_t i = 0; i < sizeof(monotonic_fields) / sizeof(monotonic_fields[0]); i++) {
		uint64_t before = field_value(previous, &monotonic_fields[i]);
		uint64_t after = field_value(now, &monotonic_fields[i]);

		if (after >= before)
			continue;
		if (series->decreases < PRINTED_MAX)
			fprintf(stderr, "%s: %s went down by %llu ns (%llu -> %llu) between snapshots %ld and %ld\n",
				series->name, monotonic_fields[i].name, (unsigned long long)(before - after),
				(unsigned long long)before, (unsigned long long)after, series->snapshots - 1,
				series->snapshots);
		if (before - after > series->largest_decrease) {
			series->largest_decrease = before - after;
			series->largest_field = monotonic_fields[i].name;
		}
		decreased = true;
	}
	if (decreased)
		series->decreases++;
}

static void check_invariants(struct rel_series *series, const td_ta_stats_ns_t *stats)
{
	const char *why = rel_check_integrals(stats);
	char bound[160];

	if (!why && series->max_threads &&
	    (unsigned __int128)stats->lwps_ns > (unsigned __int128)stats->window_ns * series->max_threads) {
		snprintf(bound, sizeof(bound), "lwps %llu > window %llu x %llu threads at most",
			 (unsigned long long)stats->lwps_ns, (unsigned long long)stats->window_ns,
			 (unsigned long long)series->max_threads);
		why = bound;
	}
	if (!why && series->max_threads && (uint64_t)stats->nthreads > series->max_threads) {
		snprintf(bound, sizeof(bound), "nthreads %d > %llu threads at most", stats->nthreads,
			 (unsigned long long)series->max_threads);
		why = bound;
	}
	if (!why)
		return;
	if (series->broken < PRINTED_MAX)
		fprintf(stderr, "%s: snapshot %ld: %s\n", series->name, series->snapshots, why);
	series->broken++;
}

td_err_e rel_series_take(struct rel_series *series, const td_thragent_t *ta, td_ta_stats_ns_t *out)
{
	td_ta_stats_ns_t stats = { .size = sizeof(stats) };
	td_err_e err = td_ta_get_stats_ns(ta, &stats);
	uint64_t now = tdtest_monotonic_ns();

	series->snapshots++;
	if (err != TD_OK) {
		add_error(series, err, now);
		return err;
	}
	if (series->in_episode)
		episode_close(series, now);
	check_invariants(series, &stats);
	if (series->have_previous && series->previous.window_start_ns == stats.window_start_ns)
		check_decreases(series, &series->previous, &stats);
	series->previous = stats;
	series->have_previous = true;
	if (out)
		*out = stats;
	return TD_OK;
}

void rel_series_finish(struct rel_series *series)
{
	if (series->in_episode)
		episode_close(series, tdtest_monotonic_ns());
}

void rel_series_merge(struct rel_series *a, const struct rel_series *b)
{
	a->snapshots += b->snapshots;
	a->failed += b->failed;
	a->transient += b->transient;
	a->lasting += b->lasting;
	if (a->first_error == TD_OK)
		a->first_error = b->first_error;
	a->pairs += b->pairs;
	a->decreases += b->decreases;
	if (b->largest_decrease > a->largest_decrease) {
		a->largest_decrease = b->largest_decrease;
		a->largest_field = b->largest_field;
	}
	a->broken += b->broken;
}

const char *rel_series_summary(const struct rel_series *s, char *buffer, size_t size)
{
	snprintf(buffer, size,
		 "%ld snapshots, %ld failed (%s; %ld transient episodes, %ld lasting), "
		 "%ld decreases in %ld pairs of one window (largest: %s by %llu ns), %ld broke an invariant",
		 s->snapshots, s->failed, s->failed ? rel_td_name(s->first_error) : "none", s->transient, s->lasting,
		 s->decreases, s->pairs, s->largest_field ? s->largest_field : "none",
		 (unsigned long long)s->largest_decrease, s->broken);
	return buffer;
}
