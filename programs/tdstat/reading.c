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

td_err_e tdstat_reading_take(const struct tdstat_target *target, struct tdstat_reading *reading, bool kernel)
{
	td_err_e err = tdstat_reading_threads(target->agent, reading);

	if (err == TD_OK && kernel)
		reading->kernel_valid = tdstat_kernel_sample(target->pid, &reading->kernel);
	return err;
}

bool tdstat_reading_copy(struct tdstat_reading *copy, const struct tdstat_reading *reading)
{
	*copy = *reading;
	copy->threads = NULL;
	copy->kernel.threads = NULL;
	if (reading->count) {
		copy->threads = malloc(reading->count * sizeof(*copy->threads));
		if (!copy->threads)
			goto fail;
		memcpy(copy->threads, reading->threads, reading->count * sizeof(*copy->threads));
	}
	if (reading->kernel.count) {
		copy->kernel.threads = malloc(reading->kernel.count * sizeof(*copy->kernel.threads));
		if (!copy->kernel.threads)
			goto fail;
		memcpy(copy->kernel.threads, reading->kernel.threads, reading->kernel.count * sizeof(*copy->kernel.threads));
	}
	return true;
fail:
	free(copy->threads);
	memset(copy, 0, sizeof(*copy));
	return false;
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
