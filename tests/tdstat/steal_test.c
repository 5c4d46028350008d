/* SPDX-License-Identifier: MIT */
/*
 * The hypervisor's steal beside `untracked` (tdstat(1)): on a virtual
 * machine a running thread's stolen time is missing from its schedstat,
 * which the shim counts runnable, so it shows as untracked.  Here, with
 * no target: the first line of /proc/stat parsed (kernel.c), the steal
 * of a line's kernel interval (threads.c), and the process line's hint
 * and JSON key (format_text.c, format_json.c) from synthetic figures.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "tdstat.h"

#define SECOND UINT64_C(1000000000)

/* --- /proc/stat's first line --- */

#define UNTOUCHED UINT64_C(0xdeadbeef)

/* --- a thread's schedstat (kernel.c; the CPU and run-queue columns of -t) --- */

Test(schedstat_parse, three_values)
{
	uint64_t on_cpu = UNTOUCHED, run_queue = UNTOUCHED;

	cr_assert(tdstat_schedstat_parse("1234567 890 12\n", &on_cpu, &run_queue));
	cr_expect_eq(on_cpu, UINT64_C(1234567));
	cr_expect_eq(run_queue, UINT64_C(890));
	cr_assert(tdstat_schedstat_parse("18446744073709551615 0 1\n", &on_cpu, &run_queue));
	cr_expect_eq(on_cpu, UINT64_MAX);
	cr_expect_eq(run_queue, 0);
}

Test(schedstat_parse, not_a_schedstat_leaves_the_figures)
{
	static const char *const bad[] = { "", "\n", "12\n", "12", "-1 2 3\n", "1x 2 3\n", "1 2x 3\n",
					   "18446744073709551616 1 1\n", "a b c\n" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t on_cpu = UNTOUCHED, run_queue = UNTOUCHED;

		cr_expect_not(tdstat_schedstat_parse(bad[i], &on_cpu, &run_queue), "\"%s\" parsed", bad[i]);
		cr_expect_eq(on_cpu, UNTOUCHED, "\"%s\" wrote the CPU time", bad[i]);
		cr_expect_eq(run_queue, UNTOUCHED, "\"%s\" wrote the run-queue time", bad[i]);
	}
}

Test(steal_parse, linux_2_6_33_and_later)
{
	uint64_t steal = UNTOUCHED;

	cr_assert(tdstat_steal_parse("cpu  4705 356 584 3699 23 23 0 1234 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n", &steal));
	cr_expect_eq(steal, 1234);
}

Test(steal_parse, exactly_eight_values_and_large)
{
	uint64_t steal = UNTOUCHED;

	/* 2.6.11 to 2.6.23: steal is the last value. */
	cr_assert(tdstat_steal_parse("cpu  1 2 3 4 5 6 7 18446744073709551615\ncpu0 1 2 3 4 5 6 7 8\n", &steal));
	cr_expect_eq(steal, UINT64_MAX);
	steal = UNTOUCHED;
	cr_assert(tdstat_steal_parse("cpu 1 2 3 4 5 6 7 99", &steal));
	cr_expect_eq(steal, 99);
}

/* Kernels before 2.6.11 print no steal: unknown, not 0, and not a value
 * of the next line. */
Test(steal_parse, fewer_values_is_unknown)
{
	uint64_t steal = UNTOUCHED;

	cr_expect_not(tdstat_steal_parse("cpu  4705 356 584 3699 23 23 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n", &steal));
	cr_expect_not(tdstat_steal_parse("cpu  4705 356 584 3699\ncpu0 1 2 3 4\n", &steal));
	cr_expect_not(tdstat_steal_parse("cpu  4705 356 584 3699 23 23 0 ", &steal));
	cr_expect_eq(steal, UNTOUCHED);
}

Test(steal_parse, not_a_cpu_line)
{
	uint64_t steal = UNTOUCHED;

	cr_expect_not(tdstat_steal_parse("", &steal));
	cr_expect_not(tdstat_steal_parse("cpu0 1 2 3 4 5 6 7 8 9 10\n", &steal));
	cr_expect_not(tdstat_steal_parse("cpu  1 2 3 4 5 6 7 x8\n", &steal));
	/* Past 64 bits: not a count to subtract. */
	cr_expect_not(tdstat_steal_parse("cpu  1 2 3 4 5 6 7 184467440737095516150\n", &steal));
	cr_expect_eq(steal, UNTOUCHED);
}

/* --- a line's steal, over the kernel's interval --- */

static struct tdstat_reading reading(uint64_t at_ns, bool steal_known, uint64_t steal_ticks)
{
	static struct tdstat_kernel_thread none;
	struct tdstat_reading r = { .kernel_valid = true };

	r.stats.size = sizeof(r.stats);
	r.stats.enabled = 1;
	r.stats.window_start_ns = SECOND;
	r.stats.window_ns = r.stats.counted_ns = at_ns;
	r.kernel.taken_ns = at_ns;
	r.kernel.steal_known = steal_known;
	r.kernel.steal_ticks = steal_ticks;
	/* A sample of a process whose threads the shim does not track. */
	none.tid = 100;
	r.kernel.count = 1;
	r.kernel.threads = &none;
	return r;
}

static struct tdstat_kernel_line line_between(const struct tdstat_reading *from, const struct tdstat_reading *to)
{
	struct tdstat_kernel_carry carry = { 0 };
	struct tdstat_thread_row *rows;
	struct tdstat_kernel_line line;

	tdstat_thread_rows_carried(1, from, NULL, to, &carry, &rows, &line);
	free(rows);
	free(carry.rows);
	return line;
}

Test(steal_interval, cpus_over_the_kernel_interval)
{
	long hz = sysconf(_SC_CLK_TCK);
	struct tdstat_reading from = reading(SECOND, true, 1000), to = reading(3 * SECOND, true, 1000 + (uint64_t)hz);
	struct tdstat_kernel_line line = line_between(&from, &to);

	/* A second of CPU stolen over two. */
	cr_expect(fabs(line.steal - 0.5) < 1e-9, "steal %f", line.steal);
	cr_expect(fabs(line.steal_resolution - 0.5 / (double)hz) < 1e-9, "resolution %f", line.steal_resolution);
}

Test(steal_interval, unknown_at_either_end_is_unknown)
{
	struct tdstat_reading from = reading(SECOND, false, 0), to = reading(3 * SECOND, true, 500);

	cr_expect_lt(line_between(&from, &to).steal, 0);
	from = reading(SECOND, true, 500);
	to = reading(3 * SECOND, false, 0);
	cr_expect_lt(line_between(&from, &to).steal, 0);
	/* The first line: no interval. */
	cr_expect_lt(line_between(NULL, &to).steal, 0);
}

/* /proc/stat is read at most once a second: two samples within that
 * second carry the same reading, and the line between them takes the
 * steal between that reading and the one before it. */
Test(steal_interval, within_one_reading_the_second_before_it)
{
	long hz = sysconf(_SC_CLK_TCK);
	struct tdstat_reading from = reading(3 * SECOND, true, 1000), to = reading(3 * SECOND + SECOND / 100, true, 1000);

	from.kernel.steal_taken_ns = to.kernel.steal_taken_ns = 3 * SECOND;
	to.kernel.steal_before_known = true;
	to.kernel.steal_before_ticks = 1000 - (uint64_t)hz / 4;
	to.kernel.steal_before_taken_ns = 2 * SECOND;

	struct tdstat_kernel_line line = line_between(&from, &to);

	/* A quarter of a second stolen over the second before. */
	cr_expect(fabs(line.steal - 0.25) < 1e-9, "steal %f", line.steal);
	cr_expect(fabs(line.steal_resolution - 1 / (double)hz) < 1e-9, "resolution %f", line.steal_resolution);
	/* No reading before: unknown, not 0. */
	to.kernel.steal_before_known = false;
	cr_expect_lt(line_between(&from, &to).steal, 0);
}

/* The command's own kernel samples of this very process, back to back:
 * the second does not read /proc/stat again (20-27 us cold on a small
 * VM, as much as the rest of a plain line's kernel reading). */
Test(steal_interval, proc_stat_read_at_most_once_a_second)
{
	struct tdstat_kernel_sample first = { 0 }, second = { 0 };

	cr_assert(tdstat_kernel_sample(getpid(), &first, NULL, NULL, 0));
	cr_assert(tdstat_kernel_sample(getpid(), &second, &first, NULL, 0));
	if (!first.steal_known) {
		tdstat_kernel_sample_free(&first);
		tdstat_kernel_sample_free(&second);
		cr_skip_test("/proc/stat gives no steal here");
	}
	cr_expect(second.steal_known);
	cr_expect_eq(second.steal_taken_ns, first.steal_taken_ns);
	cr_expect_eq(second.steal_ticks, first.steal_ticks);
	tdstat_kernel_sample_free(&first);
	tdstat_kernel_sample_free(&second);
}

/* Lines of -i 1 come a second apart give or take the wakeup's jitter
 * (absolute deadlines, watch.c): a sample a few microseconds short of a
 * second after the last reading must still read again.  Carrying the
 * reading there skipped every other line's read: one line got the
 * steal of the second wholly before it, the next one that of two
 * seconds (strace of tdstat -i 1 -c 12: 8 reads in 12 lines). */
Test(steal_interval, a_line_of_one_second_reads_again)
{
	struct tdstat_kernel_sample first = { 0 }, second = { 0 };
	struct timespec pause = { .tv_nsec = 950000000 };

	cr_assert(tdstat_kernel_sample(getpid(), &first, NULL, NULL, 0));
	while (nanosleep(&pause, &pause) < 0)
		;
	cr_assert(tdstat_kernel_sample(getpid(), &second, &first, NULL, 0));
	if (!first.steal_known) {
		tdstat_kernel_sample_free(&first);
		tdstat_kernel_sample_free(&second);
		cr_skip_test("/proc/stat gives no steal here");
	}
	cr_expect(second.steal_known);
	cr_expect_gt(second.steal_taken_ns, first.steal_taken_ns, "the reading of a second before carried");
	cr_expect_eq(second.steal_before_taken_ns, first.steal_taken_ns);
	tdstat_kernel_sample_free(&first);
	tdstat_kernel_sample_free(&second);
}

/* --- the process line --- */

static struct tdstat_interval line_of(double untracked, double steal, double steal_resolution)
{
	struct tdstat_interval line;

	memset(&line, 0, sizeof(line));
	line.pid = 42;
	line.nthreads = 2;
	line.window_s = 1;
	line.stopped = TDSTAT_RUNNING;
	line.untracked = untracked;
	line.steal = steal;
	line.steal_resolution = steal_resolution;
	return line;
}

/* The line as `format` prints it in live mode; malloc'd. */
static char *printed(const char *format, const struct tdstat_interval *line)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	struct tdstat_output output;

	cr_assert_not_null(out);
	tdstat_output_init(&output, tdstat_format_find(format), out, TDSTAT_OUTPUT_LIVE);
	tdstat_output_begin(&output);
	tdstat_output_process(&output, line);
	tdstat_output_end(&output);
	tdstat_output_close(&output);
	fclose(out);
	return text;
}

#define ESCAPED_WAITS "  untracked 0.35 (asleep in waits the shim cannot see: an inline syscall, a read; tdstat(1))\n"

Test(steal_hint, significant_steal_is_named)
{
	struct tdstat_interval line = line_of(0.35, 0.48, 0.01);
	char *text = printed("text", &line);

	cr_expect(strstr(text, "  untracked 0.35 (the hypervisor took 0.48 CPUs from this machine (steal): the kernel "
			       "does not count a running thread's stolen time, tdstat does; tdstat(1))\n"),
		  "%s", text);
	cr_expect_null(strstr(text, "asleep in waits"), "%s", text);
	free(text);
}

Test(steal_hint, no_steal_keeps_the_escaped_waits)
{
	struct tdstat_interval lines[] = {
		line_of(0.35, 0, 0.01),     /* none */
		line_of(0.35, -1, 0),       /* unknown */
		line_of(0.35, 0.02, 0.01),  /* a tick or two of rounding */
		line_of(0.35, 0.10, 0.10),  /* one tick over 0.1 s */
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char *text = printed("text", &lines[i]);

		cr_expect(strstr(text, ESCAPED_WAITS), "steal %.2f: %s", lines[i].steal, text);
		free(text);
	}
}

/* Steal hides at most a thread per CPU stolen: beside a larger
 * untracked figure it is only part of it. */
Test(steal_hint, small_steal_beside_much_untracked_is_a_part)
{
	struct tdstat_interval line = line_of(0.90, 0.05, 0.01);
	char *text = printed("text", &line);

	cr_expect(strstr(text, "  untracked 0.90 (asleep in waits the shim cannot see: an inline syscall, a read; "
			       "up to 0.05 of it the hypervisor's steal; tdstat(1))\n"),
		  "%s", text);
	free(text);
}

Test(steal_hint, nothing_below_the_untracked_threshold)
{
	struct tdstat_interval line = line_of(0.01, 0.48, 0.01);
	char *text = printed("text", &line);

	cr_expect_null(strstr(text, "untracked"), "%s", text);
	cr_expect_null(strstr(text, "steal"), "%s", text);
	free(text);
}

Test(steal_json, key_only_when_known)
{
	struct tdstat_interval line = line_of(0.35, 0.48, 0.01);
	char *text = printed("json", &line);

	cr_expect(strstr(text, ",\"steal\":0.480000"), "%s", text);
	free(text);
	line = line_of(0.35, 0, 0.01);
	text = printed("json", &line);
	cr_expect(strstr(text, ",\"steal\":0.000000"), "%s", text);
	free(text);
	line = line_of(0.35, -1, 0);
	text = printed("json", &line);
	cr_expect_null(strstr(text, "steal"), "%s", text);
	free(text);
}

/* run, ps and serve compute lines without the kernel's figures: no key. */
Test(steal_json, not_known_by_default)
{
	td_ta_stats_ns_t to = { .size = sizeof(to), .enabled = 1, .window_ns = SECOND, .counted_ns = SECOND };
	struct tdstat_interval line;
	char *text;

	tdstat_interval_compute(&line, 42, NULL, &to);
	text = printed("json", &line);
	cr_expect_null(strstr(text, "steal"), "%s", text);
	free(text);
}
