/* SPDX-License-Identifier: MIT */
/*
 * One reading of a live target: the tracked threads one by one
 * (td_ta_thr_stats_iter) and the process's figures from the same walk,
 * then the kernel's per-thread figures, taken right after.  Every line of
 * live mode is the difference of two readings; the threads give -t and -w
 * their rows, and every line its `untracked` figure.
 */
#include "tdstat.h"

#include <stdlib.h>
#include <string.h>

static int by_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

struct growing {
	struct tdstat_reading *reading;
	size_t capacity;
	bool failed;
};

static int keep_thread(const td_thr_stats_ns_t *thread, void *data)
{
	struct growing *growing = data;
	struct tdstat_reading *reading = growing->reading;

	if (reading->count == growing->capacity) {
		size_t grown = growing->capacity ? 2 * growing->capacity : 64;
		void *more = realloc(reading->threads, grown * sizeof(*reading->threads));

		if (!more) {
			growing->failed = true;
			return 1;
		}
		reading->threads = more;
		growing->capacity = grown;
	}
	/* A library newer than this command fills more: keep what we know;
	 * an older one less: the rest is absent (0). */
	if (thread->size >= sizeof(*thread)) {
		reading->threads[reading->count] = *thread;
	} else {
		memset(&reading->threads[reading->count], 0, sizeof(reading->threads[0]));
		memcpy(&reading->threads[reading->count], thread, thread->size);
	}
	reading->count++;
	return 0;
}

/* The threads the last reading found: room for as many at once, rather
 * than growing to them at every reading. */
static size_t threads_last;

td_err_e tdstat_reading_threads(const td_thragent_t *agent, struct tdstat_reading *reading)
{
	struct growing growing = { .reading = reading };
	td_err_e err;

	memset(reading, 0, sizeof(*reading));
	if (threads_last) {
		reading->threads = malloc(threads_last * sizeof(*reading->threads));
		growing.capacity = reading->threads ? threads_last : 0;
	}
	reading->stats.size = sizeof(reading->stats);
	err = td_ta_thr_stats_iter(agent, keep_thread, &growing, &reading->stats);
	if (err == TD_OK && growing.failed)
		err = TD_MALLOC;
	if (err == TD_OK)
		threads_last = reading->count;
	if (err != TD_OK)
		tdstat_reading_free(reading);
	return err;
}

/*
 * The threads whose kernel figures cannot have moved since `base` (the
 * last reading with them) was taken: blocked, by the shim's record, in
 * the same wait (same record owner, same moment the wait began) at both
 * readings, a wait begun at least TDSTAT_COMMIT_LAG_NS before the kernel's
 * figures of `base` were read (its way into the sleep, the CPU it used
 * after being marked BLOCKED, was over by then).  Such a thread has not
 * run, nor waited for a CPU, in between: its schedstat is not read again
 * (at 100 lines a second on a thousand sleeping threads, reading them
 * all was most of a line's cost).  What this misses, until the thread's
 * next change of state: CPU a signal handler or a spurious wake-up
 * inside the wait used, and the run-queue wait of a thread woken but not
 * yet run.  Returns the tids, sorted; NULL when there are none.
 */
static pid_t *asleep_since(const struct tdstat_reading *base, const struct tdstat_reading *now, size_t *count)
{
	pid_t *tids;
	size_t before = 0, found = 0;

	*count = 0;
	if (!base || !base->kernel_valid || !now->count || !base->count)
		return NULL;
	tids = malloc(now->count * sizeof(*tids));
	if (!tids)
		return NULL;
	for (size_t i = 0; i < now->count; i++) {
		const td_thr_stats_ns_t *thread = &now->threads[i], *then;

		while (before < base->count && base->threads[before].record < thread->record)
			before++;
		if (before == base->count)
			break;
		then = &base->threads[before];
		if (then->record != thread->record || thread->state != TDSTAT_STATE_BLOCKED ||
		    then->state != TDSTAT_STATE_BLOCKED || then->generation != thread->generation ||
		    then->tid != thread->tid || thread->tid <= 0 || then->since_ns != thread->since_ns ||
		    thread->since_ns > base->kernel.taken_ns ||
		    base->kernel.taken_ns - thread->since_ns < TDSTAT_COMMIT_LAG_NS)
			continue;
		tids[found++] = thread->tid;
	}
	for (size_t i = 1; i < found; i++)
		if (tids[i] < tids[i - 1]) {
			qsort(tids, found, sizeof(*tids), by_tid);
			break;
		}
	*count = found;
	return tids;
}

td_err_e tdstat_reading_take(const struct tdstat_target *target, struct tdstat_reading *reading, bool kernel,
			     const struct tdstat_reading *kernel_base)
{
	td_err_e err = tdstat_reading_threads(target->agent, reading);

	if (err == TD_OK && kernel) {
		size_t asleep_count;
		pid_t *asleep = asleep_since(kernel_base, reading, &asleep_count);

		reading->kernel_valid = tdstat_kernel_sample(target->pid, &reading->kernel,
							     kernel_base && kernel_base->kernel_valid ? &kernel_base->kernel
												      : NULL,
							     asleep, asleep_count);
		free(asleep);
	}
	return err;
}

void tdstat_reading_free(struct tdstat_reading *reading)
{
	free(reading->threads);
	reading->threads = NULL;
	reading->count = 0;
	tdstat_kernel_sample_free(&reading->kernel);
	reading->kernel_valid = false;
}

/* Threads come in record order: a binary search finds a record. */
const td_thr_stats_ns_t *tdstat_reading_record(const struct tdstat_reading *reading, uint32_t record)
{
	size_t low = 0, high = reading ? reading->count : 0;

	while (low < high) {
		size_t middle = low + (high - low) / 2;

		if (reading->threads[middle].record == record)
			return &reading->threads[middle];
		if (reading->threads[middle].record < record)
			low = middle + 1;
		else
			high = middle;
	}
	return NULL;
}

uint64_t tdstat_reading_end_ns(const struct tdstat_reading *reading)
{
	return reading->stats.window_start_ns + reading->stats.window_ns;
}
