/* SPDX-License-Identifier: MIT */
/*
 * -t's rows from hand-made walks (programs/tdstat/threads.c), printed
 * in every format: a record that td_ta_thr_stats_iter hands out without
 * a breakdown (`kinds` 0: time in a newer shim's wait kind, READER.md
 * "Minors") has idle time that no kind of ours names.  Its row must not
 * print a breakdown (all zeros, or an interval's growth against a
 * reading that had one), which would not add up to its idle share.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "tdstat.h"

#define SECOND UINT64_C(1000000000)

/* What threads.c and the formats call that these rows never reach (no
 * names, no sync rows): the rest of tdstat stays out of this test. */
bool tdstat_kernel_thread_comm_read(pid_t pid, pid_t tid, char comm[TDSTAT_COMM_SIZE])
{
	(void)pid, (void)tid, (void)comm;
	return false;
}
void tdstat_printable(char *text)
{
	(void)text;
}
void tdstat_object_name(struct tdstat_symbolizer *symbolizer, pid_t pid, int kind, uint64_t object, char *name,
			size_t size)
{
	(void)symbolizer, (void)pid, (void)kind, (void)object;
	snprintf(name, size, "-");
}
bool tdstat_symbolize_caller(struct tdstat_symbolizer *symbolizer, uint64_t return_address, char *name, size_t size,
			     uint64_t *function)
{
	(void)symbolizer, (void)return_address, (void)name, (void)size, (void)function;
	return false;
}
const char *tdstat_sync_type_name(uint32_t type)
{
	(void)type;
	return "-";
}
void tdstat_thread_text(char *text, size_t size, pid_t tid, const char *name)
{
	snprintf(text, size, "%d (%s)", (int)tid, name);
}
void tdstat_deadlock_text(const struct tdstat_deadlock *cycle, char *text, size_t size)
{
	(void)cycle;
	snprintf(text, size, "-");
}

static td_thr_stats_ns_t record(uint32_t index, pid_t tid, uint64_t idle, bool kinds, int kind_of_idle)
{
	td_thr_stats_ns_t t = {
		.size = sizeof(t),
		.state = TDSTAT_STATE_BLOCKED,
		.tid = tid,
		.kind = TDSTAT_WAIT_KIND_COUNT, /* a newer shim's kind */
		.record = index,
		.generation = 1,
		.lwps_ns = idle,
		.idle_ns = idle,
		.kinds = kinds ? TDSTAT_WAIT_KIND_COUNT : 0,
	};

	if (kinds)
		t.idle_by_kind_ns[kind_of_idle] = idle;
	return t;
}

static struct tdstat_reading reading(uint64_t window_ns, td_thr_stats_ns_t *threads, size_t count)
{
	struct tdstat_reading r = { .count = count, .threads = threads };

	r.stats.size = sizeof(r.stats);
	r.stats.window_start_ns = SECOND;
	r.stats.window_ns = r.stats.counted_ns = window_ns;
	return r;
}

/* The JSON rows: wherever idle_by is printed, it adds up to idle. */
static void json_rows_add_up(const struct tdstat_thread_row *rows, size_t count, size_t *with_idle_by)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	struct tdstat_output output;

	cr_assert_not_null(out);
	tdstat_output_init(&output, tdstat_format_find("json"), out, TDSTAT_OUTPUT_LIVE);
	for (size_t i = 0; i < count; i++)
		tdstat_output_thread(&output, &rows[i]);
	fclose(out);

	*with_idle_by = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *idle = strstr(line, "\"idle\":"), *by = strstr(line, "\"idle_by\":{");
		double sum = 0;

		if (!by)
			continue;
		cr_assert_not_null(idle, "%s", line);
		++*with_idle_by;
		for (char *p = by + strlen("\"idle_by\":{"); *p && *p != '}';) {
			char *colon = strchr(p, ':');

			cr_assert_not_null(colon, "%s", line);
			sum += strtod(colon + 1, &p);
			if (*p == ',')
				p++;
		}
		cr_expect(fabs(sum - strtod(idle + strlen("\"idle\":"), NULL)) < 1e-5,
			  "idle_by sums to %f, not idle: %s", sum, line);
	}
	free(text);
}

Test(thread_rows, no_breakdown_prints_none_single_reading)
{
	td_thr_stats_ns_t threads[] = { record(0, 101, SECOND, true, TDSTAT_WAIT_MUTEX),
					record(1, 102, SECOND, false, 0) };
	struct tdstat_reading to = reading(SECOND, threads, 2);
	struct tdstat_thread_row *rows;
	size_t count = tdstat_thread_rows(1, NULL, &to, &rows), printed;

	cr_assert_eq(count, 2);
	json_rows_add_up(rows, count, &printed);
	cr_expect_eq(printed, 1, "the thread with a breakdown keeps it");
	free(rows);
}

/* An interval whose earlier reading had a breakdown and the later none
 * (the thread entered a newer kind meanwhile), and the other way round:
 * the growth by kind is not the thread's. */
Test(thread_rows, no_breakdown_at_either_reading_prints_none)
{
	td_thr_stats_ns_t first[] = { record(0, 101, SECOND, true, TDSTAT_WAIT_MUTEX),
				      record(1, 102, SECOND, true, TDSTAT_WAIT_MUTEX),
				      record(2, 103, SECOND, false, 0) };
	td_thr_stats_ns_t second[] = { record(0, 101, 2 * SECOND, true, TDSTAT_WAIT_MUTEX),
				       record(1, 102, 2 * SECOND, false, 0),
				       record(2, 103, 2 * SECOND, true, TDSTAT_WAIT_MUTEX) };
	struct tdstat_reading from = reading(SECOND, first, 3), to = reading(2 * SECOND, second, 3);
	struct tdstat_thread_row *rows;
	size_t count = tdstat_thread_rows(1, &from, &to, &rows), printed;

	cr_assert_eq(count, 3);
	json_rows_add_up(rows, count, &printed);
	cr_expect_eq(printed, 1, "only the thread with a breakdown at both readings has one");
	free(rows);
}
