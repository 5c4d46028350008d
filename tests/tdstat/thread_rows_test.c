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

/*
 * Text rows of -t are copied from the last line when everything they
 * print is as it was (format_text.c, struct row_key), and written in
 * runs: a line whose rows changed must print the new text, every row
 * in its place.  Each line of one output that keeps its rows is
 * compared with the same rows printed by a fresh output, which keeps
 * nothing.
 */
static struct tdstat_thread_row text_row(pid_t tid, const char *name, double idle, int kind)
{
	struct tdstat_thread_row row = {
		.pid = 1, .tid = tid, .name = name, .tracked = true, .shim_known = true,
		.state = TDSTAT_STATE_BLOCKED, .wait_kind = kind, .object = 0x1000, .site = 0x2000,
		.object_name = "obj", .site_name = "worker", .names_generation = 1,
		.runnable = 1 - idle, .idle = idle, .has_kinds = true, .untracked = -1,
		.window_s = 0.01, .kernel_window_s = 0.01,
	};

	row.idle_by[kind] = idle;
	return row;
}

/* The rows' table of one line (from its header on: the line above it
 * prints the clock). */
static char *text_table(struct tdstat_output *output, FILE *out, char **text, size_t *size,
			const struct tdstat_thread_row *rows, size_t count)
{
	struct tdstat_interval line = { .pid = 1, .nthreads = (int)count, .untracked = -1, .window_s = 0.01 };
	size_t from = *size;

	tdstat_output_begin(output);
	tdstat_output_process(output, &line);
	for (size_t i = 0; i < count; i++)
		tdstat_output_thread(output, &rows[i]);
	tdstat_output_end(output);
	fflush(out);

	char *table = strstr(*text + from, "     TID NAME");

	cr_assert_not_null(table, "%s", *text + from);
	return strdup(table);
}

static struct tdstat_output text_output(FILE *out)
{
	struct tdstat_output output;

	tdstat_output_init(&output, tdstat_format_find("text"), out, TDSTAT_OUTPUT_LIVE);
	output.threads = true;
	tdstat_output_start(&output);
	return output;
}

Test(thread_rows, text_rows_kept_from_the_last_line_are_never_stale)
{
	enum { LINES = 5, THREADS = 4 };
	struct tdstat_thread_row lines[LINES][THREADS];
	size_t counts[LINES];
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	cr_assert_not_null(out);
	/* 1: four threads; 2: the same (every row kept) */
	lines[0][0] = text_row(101, "sleeper", 1.0, TDSTAT_WAIT_COND);
	lines[0][1] = text_row(102, "worker", 0.25, TDSTAT_WAIT_MUTEX);
	lines[0][2] = text_row(103, "waiter", 1.0, TDSTAT_WAIT_COND);
	lines[0][3] = text_row(104, "io", 0.5, TDSTAT_WAIT_IO);
	counts[0] = counts[1] = THREADS;
	memcpy(lines[1], lines[0], sizeof(lines[0]));
	/* 3: each thread changes one thing; the last one is gone */
	memcpy(lines[2], lines[1], sizeof(lines[1]));
	lines[2][0].idle = lines[2][0].idle_by[TDSTAT_WAIT_COND] = 0.5;      /* its figures */
	lines[2][0].idle_by[TDSTAT_WAIT_SLEEP] = 0.25;                    /* and kinds */
	lines[2][1].name = "renamed";                                     /* its name */
	lines[2][2].wait_kind = TDSTAT_WAIT_MUTEX;                        /* what it waits in now */
	counts[2] = THREADS - 1;
	/* 4: a share that moves by a hundredth, the kernel's shares known,
	 * the object renamed, the thread back */
	memcpy(lines[3], lines[2], sizeof(lines[2]));
	lines[3][0].idle = 0.51;
	lines[3][1].has_kernel = true;
	lines[3][1].cpu = 0.75;
	lines[3][2].object_name = "other";
	lines[3][3] = lines[0][3];
	counts[3] = THREADS;
	/* 5: the kinds' order turns, the CPU share alone moves, the caller
	 * is renamed, an untracked share appears */
	memcpy(lines[4], lines[3], sizeof(lines[3]));
	lines[4][0].idle_by[TDSTAT_WAIT_COND] = 0.2;
	lines[4][0].idle_by[TDSTAT_WAIT_SLEEP] = 0.31;
	lines[4][1].cpu = 0.8;
	lines[4][2].site_name = "";
	lines[4][3].untracked = 0.1;
	counts[4] = THREADS;

	struct tdstat_output kept = text_output(out);

	for (int l = 0; l < LINES; l++) {
		char *fresh_text = NULL;
		size_t fresh_size = 0;
		FILE *fresh_out = open_memstream(&fresh_text, &fresh_size);

		cr_assert_not_null(fresh_out);
		struct tdstat_output fresh = text_output(fresh_out);
		char *expected = text_table(&fresh, fresh_out, &fresh_text, &fresh_size, lines[l], counts[l]);
		char *got = text_table(&kept, out, &text, &size, lines[l], counts[l]);

		cr_expect_str_eq(got, expected, "line %d", l + 1);
		tdstat_output_close(&fresh);
		fclose(fresh_out);
		free(fresh_text);
		free(expected);
		free(got);
	}
	tdstat_output_close(&kept);
	fclose(out);
	free(text);
}
