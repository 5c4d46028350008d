/* SPDX-License-Identifier: MIT */
/*
 * -w's rows from hand-made walks (programs/tdstat/objects.c): a record
 * that td_ta_thr_stats_iter hands out without a breakdown (`kinds` 0:
 * time in a newer shim's wait kind, READER.md "Minors") at one reading
 * has no growth by kind over the interval.  Taken against zeros, the
 * other reading's whole breakdown became one interval's waiting.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "tdstat.h"

#define SECOND UINT64_C(1000000000)

/* reading.c's, which brings the rest of tdstat with it. */
const td_thr_stats_ns_t *tdstat_reading_record(const struct tdstat_reading *reading, uint32_t record)
{
	for (size_t i = 0; reading && i < reading->count; i++)
		if (reading->threads[i].record == record)
			return &reading->threads[i];
	return NULL;
}

uint64_t tdstat_reading_end_ns(const struct tdstat_reading *reading)
{
	return reading->stats.window_start_ns + reading->stats.window_ns;
}

bool tdstat_symbolize_caller(struct tdstat_symbolizer *symbolizer, uint64_t return_address, char *name, size_t size,
			     uint64_t *function)
{
	(void)symbolizer, (void)return_address, (void)name, (void)size, (void)function;
	return false;
}

bool tdstat_symbolize_object(struct tdstat_symbolizer *symbolizer, uint64_t address, char *name, size_t size)
{
	(void)symbolizer, (void)address, (void)name, (void)size;
	return false;
}

void tdstat_printable(char *text)
{
	(void)text;
}

static td_thr_stats_ns_t record(uint64_t idle, bool kinds)
{
	td_thr_stats_ns_t t = {
		.size = sizeof(t),
		.state = TDSTAT_STATE_RUNNABLE,
		.tid = 101,
		.kind = TDSTAT_WAIT_KIND_COUNT,
		.generation = 1,
		.lwps_ns = idle,
		.idle_ns = idle,
		.kinds = kinds ? TDSTAT_WAIT_KIND_COUNT : 0,
	};

	if (kinds)
		t.idle_by_kind_ns[TDSTAT_WAIT_MUTEX] = idle;
	return t;
}

static struct tdstat_reading reading(uint64_t window_ns, td_thr_stats_ns_t *thread)
{
	struct tdstat_reading r = { .count = 1, .threads = thread };

	r.stats.size = sizeof(r.stats);
	r.stats.window_start_ns = SECOND;
	r.stats.window_ns = r.stats.counted_ns = window_ns;
	return r;
}

static void one_thread_within_interval(bool kinds_before, bool kinds_now)
{
	td_thr_stats_ns_t first = record(SECOND, kinds_before), second = record(2 * SECOND, kinds_now);
	struct tdstat_reading from = reading(SECOND, &first), to = reading(2 * SECOND, &second);
	struct tdstat_object_row *rows;
	size_t count = tdstat_object_rows(1, NULL, &from, &to, &rows);
	uint64_t idle = 0;

	for (size_t i = 0; i < count; i++)
		idle += rows[i].idle_ns;
	/* One thread, one second between the readings. */
	cr_expect_leq(idle, SECOND, "kinds %d then %d: %zu rows of %llu ns", kinds_before, kinds_now, count,
		      (unsigned long long)idle);
	free(rows);
}

Test(object_rows, no_breakdown_at_the_first_reading_grows_nothing)
{
	one_thread_within_interval(false, true);
}

Test(object_rows, breakdown_at_both_readings_is_the_growth)
{
	one_thread_within_interval(true, true);
}
