/* SPDX-License-Identifier: MIT */
/*
 * A series of snapshots taken one after another by one reader, checked as
 * docs/CONTRACT.md §4 promises ("Readable whatever the writer does", "Monotonic"):
 *
 * - errors: a failed snapshot opens an error episode, the next success
 *   closes it.  An episode is transient when the very next snapshot
 *   succeeded or a success came within REL_SERIES_TRANSIENT_NS of its
 *   first failure; otherwise it is lasting (a reader blinded).
 * - decreases: between consecutive successful snapshots of the same window
 *   (equal window_start_ns), none of lwps_ns, runnable_ns, idle_ns,
 *   window_ns, cpu_ns, running_ns may go down.
 * - invariants: rel_check_integrals(), and lwps_ns <= window_ns times the
 *   most threads the target ever has alive, when that is known.
 *
 * One series belongs to one reader thread; the counts are plain fields.
 * The first few problems of each kind are printed on stderr, prefixed with
 * the series' name.
 */
#ifndef TDSTAT_TESTS_REL_SERIES_H
#define TDSTAT_TESTS_REL_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <thread_db.h>
#include <tdstat/thread_db_stats.h>

#define REL_SERIES_TRANSIENT_NS (100 * 1000 * 1000ull)

struct rel_series {
	const char *name;
	uint64_t max_threads;       /* 0: unknown, no bound on lwps_ns */

	long snapshots;             /* attempts */
	long failed;                /* attempts that returned an error */
	long transient;             /* error episodes that were transient */
	long lasting;               /* error episodes that were not */
	td_err_e first_error;       /* TD_OK until the first failure */
	long pairs;                 /* consecutive successes of one window */
	long decreases;             /* pairs where some integral went down */
	const char *largest_field;  /* the field of the largest decrease */
	uint64_t largest_decrease;  /* ns */
	long broken;                /* snapshots that broke an invariant */

	/* internal */
	bool have_previous;
	td_ta_stats_ns_t previous;
	bool in_episode;
	long episode_failures;
	uint64_t episode_start_ns;
};

void rel_series_init(struct rel_series *series, const char *name, uint64_t max_threads);

/* Takes one snapshot with td_ta_get_stats_ns and adds it to the series.
 * Returns its result; *out (may be NULL) receives it on success. */
td_err_e rel_series_take(struct rel_series *series, const td_thragent_t *ta, td_ta_stats_ns_t *out);

/* Closes an open error episode at the end of the series. */
void rel_series_finish(struct rel_series *series);

/* Adds b's counts into a (the name and bound of a stay). */
void rel_series_merge(struct rel_series *a, const struct rel_series *b);

/* One line (no newline) with the counts: errors, episodes, decreases. */
const char *rel_series_summary(const struct rel_series *series, char *buffer, size_t size);

#endif /* TDSTAT_TESTS_REL_SERIES_H */
