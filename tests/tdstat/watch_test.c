/* SPDX-License-Identifier: MIT */
/*
 * Live mode and the control subcommands, against running targets.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"

static void pid_text(const struct tdtest_child *child, char *text, size_t size)
{
	snprintf(text, size, "%d", (int)child->pid);
}

Test(watch, json_lines_of_a_live_target)
{
	struct tdtest_child target;
	char pid[16], *output, *line, *next;
	double value;
	int lines = 0;

	cr_assert_eq(start_target(&target, true, true), 0);
	pid_text(&target, pid, sizeof(pid));
	const char *const args[] = { "-c", "3", "-i", "0.1", "--json", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat(args, &output)), 0);
	for (line = output; line && *line; line = next, lines++) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		cr_assert(json_number(line, "pid", &value) && value == target.pid, "%s", line);
		cr_assert(json_number(line, "nthreads", &value) && value == 1, "%s", line);
		cr_assert(json_number(line, "window_s", &value), "%s", line);
		if (lines == 0)
			continue; /* the window so far: the target just started */
		cr_assert(value > 0.05 && value < 10.0, "an interval: %s", line);
		/* The main thread waits in read(): an idle LWP. */
		cr_assert(json_number(line, "idle", &value) && value > 0.5, "%s", line);
	}
	cr_assert_eq(lines, 3, "output: %s", output);
	free(output);
	stop_target(&target);
}

Test(watch, text_rows_under_a_header)
{
	struct tdtest_child target;
	char pid[16], *output;

	cr_assert_eq(start_target(&target, true, true), 0);
	pid_text(&target, pid, sizeof(pid));
	const char *const args[] = { "-i", "0.1", "-c", "2", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat(args, &output)), 0);
	stop_target(&target);
	cr_assert_eq(count_lines(output), 3, "output: %s", output);
	cr_assert_not_null(strstr(output, "NTHREADS"), "output: %s", output);
	cr_assert_not_null(strstr(output, "RUNNABLE"), "output: %s", output);
	cr_assert_not_null(strstr(output, pid), "output: %s", output);
	free(output);
}

/* The phases example: spin, then lock, then idle.  Interval rows must see
 * the spin phase (2 runnable threads) and later the idle one (none). */
Test(watch, interval_rows_show_a_phase_change)
{
	const char *const argv[] = { phases_path(), "1.0", "2", NULL };
	const char *const env[] = { "TDSTAT_ENABLE=1", NULL };
	struct tdtest_spawn_options options = { .preload = tdtest_shim_path(), .env = env };
	struct tdtest_child phases;
	char line[256], pid[16], *output, *row, *next;
	double runnable, busiest = 0.0;
	bool idle_after_busy = false;
	int target_pid;

	cr_assert_eq(tdtest_spawn(&phases, argv, &options), 0);
	cr_assert_gt(tdtest_read_line(&phases, line, sizeof(line), COMMAND_TIMEOUT_MS), 0);
	cr_assert_eq(sscanf(line, "phases: pid %d", &target_pid), 1, "%s", line);
	snprintf(pid, sizeof(pid), "%d", target_pid);
	/* 13 lines: the first (since the target's start) comes at once,
	 * 12 rows of 0.2 s follow and end before the 3 s of phases, at
	 * least 0.4 s into the idle one.  With 12 lines a first reading 17 ms
	 * after the start left the last row in the lock phase's end. */
	const char *const args[] = { "-i", "0.2", "-c", "13", "--json", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat(args, &output)), 0);
	cr_assert_eq(exit_code(tdtest_wait(&phases, COMMAND_TIMEOUT_MS)), 0);
	for (row = output; row && *row; row = next) {
		next = strchr(row, '\n');
		if (next)
			*next++ = '\0';
		cr_assert(json_number(row, "runnable", &runnable), "%s", row);
		if (runnable > busiest)
			busiest = runnable;
		if (busiest >= 1.5 && runnable <= 0.5)
			idle_after_busy = true;
	}
	cr_assert_geq(busiest, 1.5, "no spin phase seen: %s", output);
	cr_assert(idle_after_busy, "no idle phase after it: %s", output);
	free(output);
}

/*
 * Every thread of the crowd sleeps, so over any interval LWPs is exactly
 * the number of threads.  A snapshot counts each thread up to its clock
 * before the reads (2,000 records take a while), its window ends at the
 * clock after them: an interval that divided by the windows' growth
 * showed more LWPs than threads whenever one snapshot's reads took
 * longer than the next one's (10,426 of 10,001 at 10,000 threads with
 * -i 0.1).  Short intervals, many lines: the reads' durations vary.
 */
Test(watch, lwps_never_exceed_threads_over_short_intervals, .timeout = 120)
{
	struct tdtest_child target;
	char pid[16], *output, *line, *next;
	double lwps, nthreads, window, worst = 0;
	int lines = 0;

	cr_assert_eq(start_target_mode(&target, "crowd", true, true), 0);
	pid_text(&target, pid, sizeof(pid));
	const char *const args[] = { "-c", "80", "-i", "0.01", "--json", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat(args, &output)), 0);
	stop_target(&target);
	for (line = output; line && *line; line = next, lines++) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		cr_assert(json_number(line, "nthreads", &nthreads) && nthreads == 2001, "%s", line);
		cr_assert(json_number(line, "lwps", &lwps), "%s", line);
		cr_assert(json_number(line, "window_s", &window) && window > 0, "%s", line);
		/* Exact but for the rounding of counted_ns (a mean over the
		 * threads, within 1 ns at each end: 2 ns a thread over the
		 * line's span) and the JSON's six decimals. */
		double excess = lwps - nthreads - 2e-9 * nthreads / window - 1e-6;
		if (excess > worst)
			worst = excess;
	}
	cr_assert_eq(lines, 80, "output: %s", output);
	cr_assert_leq(worst, 0, "LWPs exceeded the threads by %.6f more than the rounding allows", worst);
	free(output);
}

static int control(const char *action, const char *pid)
{
	const char *const args[] = { action, pid, NULL };
	char *output;
	int code = exit_code(run_tdstat_merged(args, &output));

	cr_assert_eq(code, 0, "tdstat %s %s: %s", action, pid, output);
	cr_assert_eq(output[0], '\0', "silent on success: %s", output);
	free(output);
	return code;
}

static double window_of(const char *pid)
{
	const char *const args[] = { "-c", "1", "--json", pid, NULL };
	char *output;
	double window;

	cr_assert_eq(exit_code(run_tdstat(args, &output)), 0, "%s", output);
	cr_assert(json_number(output, "window_s", &window), "%s", output);
	free(output);
	return window;
}

static void expect_gathering_off(const char *pid)
{
	const char *const args[] = { "-c", "1", pid, NULL };
	char *output;

	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 1, "%s", output);
	cr_assert_not_null(strstr(output, "gathering is off"), "%s", output);
	cr_assert_not_null(strstr(output, "tdstat enable"), "%s", output);
	cr_assert_eq(count_lines(output), 1, "one line: %s", output);
	free(output);
}

Test(control, enable_disable_reset)
{
	struct tdtest_child target;
	char pid[16];
	double before;

	cr_assert_eq(start_target(&target, true, false), 0);
	pid_text(&target, pid, sizeof(pid));
	expect_gathering_off(pid);
	control("enable", pid);
	usleep(300000);
	before = window_of(pid);
	cr_assert_geq(before, 0.25);
	control("reset", pid);
	cr_assert_lt(window_of(pid), before, "reset starts a new window");
	control("disable", pid);
	expect_gathering_off(pid);
	stop_target(&target);
}

/* The first line of /proc/PID/stat's state, waited for until it is (or
 * is not) `stopped`: kill() returns before the stop lands. */
static void wait_stopped(pid_t pid, bool stopped)
{
	for (int i = 0; i < 1000; i++) {
		char path[64], buffer[512], *close_paren;
		FILE *stat;
		size_t length;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		stat = fopen(path, "r");
		cr_assert_not_null(stat);
		length = fread(buffer, 1, sizeof(buffer) - 1, stat);
		fclose(stat);
		buffer[length] = '\0';
		close_paren = strrchr(buffer, ')');
		cr_assert_not_null(close_paren);
		if ((close_paren[2] == 'T') == stopped)
			return;
		tdtest_sleep_ms(10);
	}
	cr_assert_fail("process %d never became %s", (int)pid, stopped ? "stopped" : "running");
}

/* A target stopped with SIGSTOP (idle in poll, so no record is being
 * written): tdstat reads it, and every row says it is stopped. */
Test(watch, stopped_target_is_read_and_marked)
{
	struct tdtest_child target;
	char pid[16], *output, *row, *next;
	int rows = 0;

	cr_assert_eq(start_target(&target, true, true), 0);
	pid_text(&target, pid, sizeof(pid));
	cr_assert_eq(kill(target.pid, SIGSTOP), 0);
	wait_stopped(target.pid, true);
	const char *const text[] = { "-c", "2", "-i", "0.1", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat_merged(text, &output)), 0, "%s", output);
	for (row = output; row && *row; row = next) {
		next = strchr(row, '\n');
		if (next)
			*next++ = '\0';
		if (strstr(row, "NTHREADS"))
			continue;
		rows++;
		cr_assert(strlen(row) > 8 && !strcmp(row + strlen(row) - 7, "stopped"),
			  "row not marked stopped: %s", row);
	}
	cr_assert_eq(rows, 2);
	free(output);
	const char *const json[] = { "-c", "1", "--json", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat(json, &output)), 0, "%s", output);
	cr_assert_not_null(strstr(output, "\"stopped\":true"), "%s", output);
	free(output);
	cr_assert_eq(kill(target.pid, SIGCONT), 0);
	wait_stopped(target.pid, false);
	cr_assert_eq(exit_code(run_tdstat(json, &output)), 0, "%s", output);
	cr_assert_not_null(strstr(output, "\"stopped\":false"), "%s", output);
	free(output);
	stop_target(&target);
}

/* main() called pthread_exit: its leader is a zombie, but the process
 * runs on in its other thread, so it is there to watch and to reset. */
Test(watch, process_whose_main_thread_exited)
{
	struct tdtest_child target;
	char pid[16], *output;
	double nthreads;

	cr_assert_eq(start_target_mode(&target, "main-exits-stdin", true, true), 0);
	pid_text(&target, pid, sizeof(pid));
	const char *const args[] = { "-c", "2", "-i", "0.1", "--json", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 0, "%s", output);
	cr_assert_eq(count_lines(output), 2, "%s", output);
	cr_assert(json_number(output, "nthreads", &nthreads) && nthreads == 1, "%s", output);
	free(output);
	control("reset", pid);
	control("disable", pid);
	stop_target(&target);
}
