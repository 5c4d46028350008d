/* SPDX-License-Identifier: MIT */
/*
 * `tdstat run`: the statistics of a known workload to its very end, as
 * JSON and as text, and the command's exit status passed through.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"

static const char *const json_keys[] = {
	"pid", "nthreads", "r_concurrency",
	"nrunnable_num", "nrunnable_den", "a_concurrency_num", "a_concurrency_den",
	"nlwps_num", "nlwps_den", "nidle_num", "nidle_den",
	"runnable", "running", "lwps", "idle", "window_s",
};

struct run_result {
	double value[sizeof(json_keys) / sizeof(json_keys[0])];
};

static double field(const struct run_result *result, const char *key)
{
	for (size_t i = 0; i < sizeof(json_keys) / sizeof(json_keys[0]); i++)
		if (!strcmp(json_keys[i], key))
			return result->value[i];
	cr_assert_fail("no key %s", key);
	return NAN;
}

static char *read_file(const char *path)
{
	FILE *file = fopen(path, "r");
	char *text = calloc(1, 65536);

	cr_assert_not_null(file, "%s was not written", path);
	fread(text, 1, 65535, file);
	fclose(file);
	return text;
}

/* Checks every key and the invariants of SPEC §2 on one JSON line. */
static void parse_json_line(const char *line, struct run_result *result)
{
	for (size_t i = 0; i < sizeof(json_keys) / sizeof(json_keys[0]); i++)
		cr_assert(json_number(line, json_keys[i], &result->value[i]),
			  "key %s missing in: %s", json_keys[i], line);
	cr_assert_eq(line[0], '{');
	cr_assert(field(result, "nlwps_den") > 0);
	cr_assert_eq(field(result, "nlwps_den"), field(result, "nrunnable_den"));
	cr_assert_eq(field(result, "nlwps_den"), field(result, "a_concurrency_den"));
	cr_assert_eq(field(result, "nlwps_den"), field(result, "nidle_den"));
	cr_assert_eq(field(result, "nidle_num"),
		     field(result, "nlwps_num") - field(result, "nrunnable_num"));
	cr_assert_leq(field(result, "a_concurrency_num"), field(result, "nrunnable_num"));
	cr_assert_leq(field(result, "nrunnable_num"), field(result, "nlwps_num"));
	cr_assert_leq(fabs(field(result, "runnable") -
			   field(result, "nrunnable_num") / field(result, "nrunnable_den")), 0.01);
	cr_assert_leq(fabs(field(result, "lwps") -
			   field(result, "nlwps_num") / field(result, "nlwps_den")), 0.01);
}

/* tdstat run --json -o FILE -- workload KIND THREADS MS */
static void run_workload(const char *kind, const char *threads, const char *ms,
			 struct run_result *result)
{
	char path[] = "/tmp/tdstat-run-XXXXXX";
	int fd = mkstemp(path);
	char *output, *json;

	cr_assert_geq(fd, 0);
	close(fd);
	const char *const args[] = { "run", "--json", "-o", path, "--",
				     workload_path(), kind, threads, ms, NULL };
	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 0, "output: %s", output);
	json = read_file(path);
	unlink(path);
	cr_assert_eq(count_lines(json), 1, "one JSON line expected: %s", json);
	parse_json_line(json, result);
	free(json);
	free(output);
}

Test(run, json_of_sleeping_threads)
{
	struct run_result result;

	run_workload("sleepers", "4", "500", &result);
	cr_assert_gt(field(&result, "pid"), 0);
	/* Read at the exit stop: the sleepers are joined, main is alone. */
	cr_assert_eq(field(&result, "nthreads"), 1);
	cr_assert_eq(field(&result, "r_concurrency"), 0);
	cr_assert_geq(field(&result, "window_s"), 0.45);
	cr_assert_gt(field(&result, "lwps"), 3.0, "5 threads for most of the run");
	cr_assert_leq(field(&result, "lwps"), 5.0 + 1e-3);
	cr_assert_lt(field(&result, "runnable"), 1.0, "everyone sleeps or joins");
	cr_assert_gt(field(&result, "idle"), 2.5);
	cr_assert_leq(field(&result, "running"), field(&result, "runnable") + 1e-6);
}

Test(run, json_of_spinning_threads)
{
	struct run_result result;

	run_workload("spinners", "2", "500", &result);
	cr_assert_gt(field(&result, "runnable"), 1.5, "two spinners runnable");
	cr_assert_gt(field(&result, "running"), 0.0, "they used CPU");
	cr_assert_leq(field(&result, "running"), field(&result, "runnable") + 1e-6);
	cr_assert_leq(field(&result, "runnable"), field(&result, "lwps") + 1e-6);
}

Test(run, text_summary_on_stderr)
{
	const char *const args[] = { "run", "--", workload_path(), "sleepers", "1", "10", NULL };
	char *output;

	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 0);
	cr_assert_not_null(strstr(output, "Thread statistics"), "output: %s", output);
	cr_assert_not_null(strstr(output, "nrunnable"), "output: %s", output);
	free(output);
	/* Nothing of it on stdout. */
	cr_assert_eq(exit_code(run_tdstat(args, &output)), 0);
	cr_assert_null(strstr(output, "Thread statistics"), "stdout: %s", output);
	free(output);
}

Test(run, passes_exit_status_through)
{
	const char *const args[] = { "run", "--", "sh", "-c", "exit 7", NULL };
	char *output;

	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 7, "output: %s", output);
	free(output);
}

Test(run, passes_signal_as_128_plus_n)
{
	const char *const args[] = { "run", "--", "sh", "-c", "kill -TERM $$", NULL };
	char *output;

	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 128 + 15, "output: %s", output);
	cr_assert_not_null(strstr(output, "Thread statistics"),
			   "statistics even after a signal: %s", output);
	free(output);
}

Test(run, command_not_found_is_127)
{
	const char *const args[] = { "run", "--", "/nonexistent/command", NULL };
	char *output;

	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 127, "output: %s", output);
	cr_assert_eq(count_lines(output), 1, "one line: %s", output);
	free(output);
}
