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
#include <inttypes.h>
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

/*
 * The same, over many lines made at random from the last one (a few
 * figures, kinds, names or waits changed, threads come and go, a tid
 * twice, rows out of order, -w's rows after them), against rows printed
 * here with printf and a selection over every kind: each row whole, the
 * kinds heaviest first and the first kind on a tie, every row under its
 * header and before the object rows.  The shares are ones printf and
 * format_text.c round alike (no hundredths tie).
 */
static const double random_shares[] = { 0, 0, 0, 0.004, 0.007, 0.25, 0.25, 0.3, 0.5, 0.5, 0.75, 1.0, 0.333 };
static const char *const random_names[] = { "sleeper", "worker", "worker-2", "io", "" };

static unsigned long long random_state;

static unsigned random_below(unsigned n)
{
	random_state = random_state * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((random_state >> 33) % n);
}

static double random_share(void)
{
	return random_shares[random_below(sizeof(random_shares) / sizeof(random_shares[0]))];
}

static struct tdstat_thread_row random_row(void)
{
	struct tdstat_thread_row row = {
		.pid = 1, .tid = (pid_t)(100 + random_below(20)), .tracked = random_below(6) != 0,
		.shim_known = random_below(6) != 0, .state = TDSTAT_STATE_BLOCKED,
		.object = random_below(3), .site = 0x2000 + random_below(2), .names_generation = 1,
		.runnable = random_share(), .idle = random_share(), .has_kinds = random_below(5) != 0,
		.has_kernel = random_below(2), .cpu = random_share(), .run_queue = random_share(),
		.untracked = random_below(2) ? -1 : random_share(), .window_s = 0.01,
		.kernel_window_s = random_below(5) ? 0.01 : 0.5,
	};

	row.name = random_names[random_below(5)];
	row.wait_kind = row.tracked ? (int)random_below(TDSTAT_WAIT_KIND_COUNT + 1) - 1 : -1;
	row.object_name = random_names[random_below(5)];
	row.site_name = random_names[random_below(5)];
	for (int k = 0; k < TDSTAT_WAIT_KIND_COUNT; k++)
		row.idle_by[k] = random_below(3) ? 0 : random_share();
	return row;
}

static void random_change(struct tdstat_thread_row *row)
{
	switch (random_below(7)) {
	case 0: row->idle_by[random_below(TDSTAT_WAIT_KIND_COUNT)] = random_share(); break;
	case 1: row->idle = random_share(); break;
	case 2: row->has_kernel = true, row->cpu = random_share(); break;
	case 3: row->name = random_names[random_below(5)]; break;
	case 4: row->wait_kind = (int)random_below(TDSTAT_WAIT_KIND_COUNT) - 1; break;
	case 5: row->object_name = random_names[random_below(5)]; break;
	default: row->site_name = random_names[random_below(5)]; break;
	}
}

static void printf_share(char *text, size_t size, bool known, double share)
{
	if (known)
		snprintf(text, size, "%.2f", share);
	else
		snprintf(text, size, "-");
}

/* A row of -t as tdstat(1) describes it, with printf. */
static void printf_row(char *text, size_t size, const struct tdstat_thread_row *row)
{
	bool own = row->tracked && row->shim_known, shown[TDSTAT_WAIT_KIND_COUNT] = { false };
	char runnable[32], cpu[32], run_queue[32], idle[32], untracked[32], kinds[512] = "", wait[512];
	size_t used = 0;

	printf_share(runnable, sizeof(runnable), own, row->runnable);
	printf_share(cpu, sizeof(cpu), row->has_kernel, row->cpu);
	printf_share(run_queue, sizeof(run_queue), row->has_kernel, row->run_queue);
	printf_share(idle, sizeof(idle), own, row->idle);
	printf_share(untracked, sizeof(untracked), row->untracked >= 0, row->untracked);
	for (;;) {
		int heaviest = -1;

		for (int k = 0; own && row->has_kinds && k < TDSTAT_WAIT_KIND_COUNT; k++)
			if (!shown[k] && row->idle_by[k] >= 0.005 && (heaviest < 0 || row->idle_by[k] > row->idle_by[heaviest]))
				heaviest = k;
		if (heaviest < 0)
			break;
		shown[heaviest] = true;
		used += (size_t)snprintf(kinds + used, sizeof(kinds) - used, "%s%s %.2f", used ? " " : "",
					 td_wait_kind_name((unsigned)heaviest), row->idle_by[heaviest]);
	}
	if (!used)
		snprintf(kinds, sizeof(kinds), "-");
	if (!row->tracked)
		snprintf(wait, sizeof(wait), "(no record: not tracked)");
	else if (row->wait_kind < 0)
		snprintf(wait, sizeof(wait), "-");
	else if (row->site_name[0])
		snprintf(wait, sizeof(wait), "%s %s in %s", td_wait_kind_name((unsigned)row->wait_kind),
			 row->object_name, row->site_name);
	else
		snprintf(wait, sizeof(wait), "%s %s at 0x%" PRIx64, td_wait_kind_name((unsigned)row->wait_kind),
			 row->object_name, row->site);
	snprintf(text, size, "%8d %-16s %8s %6s %6s %6s %9s  %-30s %s\n", (int)row->tid, row->name, runnable, cpu,
		 run_queue, idle, untracked, kinds, wait);
}

Test(thread_rows, text_rows_over_random_lines_are_printf_s)
{
	enum { LINES = 3000, MOST = 12 };
	struct tdstat_thread_row rows[MOST + 1];
	size_t count = 0;
	char *text = NULL, expected[MOST * 1024 + 4096];
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	struct tdstat_object_row object = { .pid = 1, .kind = TDSTAT_WAIT_COND, .object = 1, .site = 0x40,
					    .waiting = 0.5, .object_name = "parked", .site_name = "in_cond" };

	cr_assert_not_null(out);
	random_state = 11;
	struct tdstat_output output = text_output(out);

	output.objects = true;
	for (int l = 0; l < LINES; l++) {
		struct tdstat_interval line = { .pid = 1, .untracked = -1, .window_s = 0.01 };
		size_t used = 0, objects = random_below(3);

		if (count && random_below(4)) {
			/* The last line's rows, mostly as they were. */
			for (unsigned c = random_below(3); c; c--)
				random_change(&rows[random_below((unsigned)count)]);
			if (random_below(5) == 0 && count > 1) {
				size_t gone = random_below((unsigned)count);

				memmove(&rows[gone], &rows[gone + 1], (count - gone - 1) * sizeof(*rows));
				count--;
			}
			if (random_below(5) == 0 && count < MOST)
				rows[count++] = random_row();
		} else {
			count = random_below(MOST + 1);
			for (size_t i = 0; i < count; i++)
				rows[i] = random_row();
		}
		/* Sorted by tid (tdstat_thread_rows), a tid maybe twice; now
		 * and then the first and last rows swapped. */
		for (size_t i = 1; i < count; i++)
			for (size_t j = i; j > 0 && rows[j - 1].tid > rows[j].tid; j--) {
				struct tdstat_thread_row swap = rows[j];

				rows[j] = rows[j - 1];
				rows[j - 1] = swap;
			}
		if (count > 1 && random_below(10) == 0) {
			struct tdstat_thread_row swap = rows[0];

			rows[0] = rows[count - 1];
			rows[count - 1] = swap;
		}

		line.nthreads = (int)count;
		tdstat_output_begin(&output);
		tdstat_output_process(&output, &line);
		for (size_t i = 0; i < count; i++)
			tdstat_output_thread(&output, &rows[i]);
		for (size_t i = 0; i < objects; i++)
			tdstat_output_object(&output, &object);
		tdstat_output_end(&output);
		fflush(out);

		/* From the line's own row on (its clock moves). */
		char *block = text + size;

		while (block > text && !(block[-1] == '\n' && strncmp(block, "TIME ", 5) == 0))
			block--;
		block = strchr(block, '\n') + 1;
		block = strchr(block, '\n') + 1;
		if (count && rows[0].has_kernel && rows[0].kernel_window_s > rows[0].window_s * 1.5)
			used += (size_t)snprintf(expected + used, sizeof(expected) - used,
						 "     TID NAME             RUNNABLE    CPU   RUNQ   IDLE UNTRACKED  IDLE BY KIND"
						 "                   WAITING NOW IN  (CPU RUNQ UNTRACKED: last %.2fs)\n",
						 rows[0].kernel_window_s);
		else if (count)
			used += (size_t)snprintf(expected + used, sizeof(expected) - used,
						 "     TID NAME             RUNNABLE    CPU   RUNQ   IDLE UNTRACKED  IDLE BY KIND"
						 "                   WAITING NOW IN\n");
		for (size_t i = 0; i < count; i++) {
			printf_row(expected + used, sizeof(expected) - used, &rows[i]);
			used += strlen(expected + used);
		}
		if (objects)
			used += (size_t)snprintf(expected + used, sizeof(expected) - used,
						 "KIND      WAITING  OBJECT                                   CALLER\n");
		for (size_t i = 0; i < objects; i++)
			used += (size_t)snprintf(expected + used, sizeof(expected) - used, "%-8s %8.2f  %-40s %s\n",
						 td_wait_kind_name(TDSTAT_WAIT_COND), 0.5, "parked", "in_cond");
		snprintf(expected + used, sizeof(expected) - used, "\n");
		cr_assert_str_eq(block, expected, "line %d:\n%s--- expected:\n%s", l + 1, block, expected);
	}
	tdstat_output_close(&output);
	fclose(out);
	free(text);
}
