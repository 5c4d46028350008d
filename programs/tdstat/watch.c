/* SPDX-License-Identifier: MIT */
/*
 * Live mode: `tdstat [-i SECS] [-c COUNT] [-t] [-w] [--json] PID`.
 *
 * The first line covers the window so far; each later line the last
 * interval only, the difference of two snapshots of the same window.  A
 * reset or re-enable in between starts a new window: that line then covers
 * the new window so far.  Nothing here writes to the target.
 */
#include "tdstat.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tdstat/ps_live.h>

static volatile sig_atomic_t interrupted;

static void on_interrupt(int signo)
{
	(void)signo;
	interrupted = 1;
}

/* No SA_RESTART: the signal must cut the sleep short. */
static void catch_interrupts(void)
{
	struct sigaction action;

	memset(&action, 0, sizeof(action));
	action.sa_handler = on_interrupt;
	sigemptyset(&action.sa_mask);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
	sigaction(SIGHUP, &action, NULL);
}

static void add_seconds(struct timespec *deadline, double seconds)
{
	long long nanoseconds = (long long)(seconds * 1e9);

	deadline->tv_sec += nanoseconds / 1000000000;
	deadline->tv_nsec += nanoseconds % 1000000000;
	if (deadline->tv_nsec >= 1000000000) {
		deadline->tv_sec++;
		deadline->tv_nsec -= 1000000000;
	}
}

/* Returns false when interrupted. */
static bool sleep_until(const struct timespec *deadline)
{
	while (!interrupted) {
		int err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL);

		if (err == 0)
			return !interrupted;
		if (err != EINTR)
			return false;
	}
	return false;
}

static void say_gathering_off(pid_t pid)
{
	tdstat_error("gathering is off in process %d: turn it on with "
		     "`tdstat enable %d` (or start the program with "
		     "`tdstat run -- CMD`, or with TDSTAT_ENABLE=1 in its "
		     "environment)", (int)pid, (int)pid);
}

/* Stopped by a signal (SIGSTOP, ^Z) or by a debugger.  Reading it is
 * fine: nothing here stops or resumes it. */
static bool target_stopped(pid_t pid)
{
	char state = tdps_process_state(pid);

	return state == 'T' || state == 't';
}

/* The threads of -t, under the process line. */
static void print_threads(const struct tdstat_watch_options *options, struct tdstat_symbolizer *symbolizer,
			  const struct tdstat_thread_row *rows, size_t count)
{
	if (options->format == TDSTAT_FORMAT_TEXT)
		tdstat_report_thread_header(stdout);
	for (size_t i = 0; i < count; i++) {
		if (options->format == TDSTAT_FORMAT_JSON)
			tdstat_report_thread_json(stdout, symbolizer, options->pid, &rows[i]);
		else
			tdstat_report_thread_row(stdout, symbolizer, options->pid, &rows[i]);
	}
}

/* The objects of -w, under the process line (and the threads). */
static void print_objects(const struct tdstat_watch_options *options, struct tdstat_symbolizer *symbolizer,
			  const struct tdstat_reading *from, const struct tdstat_reading *to, double window_s)
{
	struct tdstat_object_row *rows;
	size_t count = tdstat_object_rows(symbolizer, from, to, &rows);

	if (options->format == TDSTAT_FORMAT_TEXT)
		tdstat_report_object_header(stdout);
	for (size_t i = 0; i < count; i++) {
		if (options->format == TDSTAT_FORMAT_JSON)
			tdstat_report_object_json(stdout, symbolizer, options->pid, &rows[i], window_s);
		else
			tdstat_report_object_row(stdout, symbolizer, options->pid, &rows[i]);
	}
	free(rows);
}

/* A line over [from, to] of one window (from NULL: the window so far). */
static void print_line(const struct tdstat_watch_options *options, struct tdstat_symbolizer *symbolizer,
		       const struct tdstat_reading *from, const struct tdstat_reading *to)
{
	bool tables = options->threads || options->objects;
	struct tdstat_interval interval;
	struct tdstat_thread_row *rows;
	size_t count = tdstat_thread_rows(options->pid, from, to, &rows);

	tdstat_interval_compute(&interval, options->pid, from ? &from->stats : NULL, &to->stats);
	interval.stopped = target_stopped(options->pid) ? TDSTAT_STOPPED : TDSTAT_RUNNING;
	/* Known over an interval between two readings (the kernel keeps no
	 * figure since the window's start); a stopped process is asleep for
	 * the kernel without any wait of its own. */
	if (interval.stopped == TDSTAT_RUNNING)
		interval.untracked = tdstat_untracked(rows, count);
	/* With tables under it, every block gets its own header. */
	if (tables && options->format == TDSTAT_FORMAT_TEXT)
		tdstat_report_header(stdout);
	if (options->format == TDSTAT_FORMAT_JSON)
		tdstat_report_json(stdout, &interval);
	else
		tdstat_report_row(stdout, &interval);
	if (options->threads)
		print_threads(options, symbolizer, rows, count);
	free(rows);
	if (options->objects)
		print_objects(options, symbolizer, from, to, interval.window_s);
	if (tables && options->format == TDSTAT_FORMAT_TEXT)
		fputc('\n', stdout);
	fflush(stdout);
}

/* One tick after the first line.  Returns -1 to stop with *status set. */
static int watch_tick(const struct tdstat_watch_options *options, const struct tdstat_target *target,
		      struct tdstat_symbolizer *symbolizer, struct tdstat_reading *previous, int *status)
{
	struct tdstat_reading current;
	td_err_e err = tdstat_reading_take(target, &current);

	if (err != TD_OK) {
		if (tdstat_target_vanished(target, err)) {
			tdstat_error("process %d has exited", (int)options->pid);
			*status = TDSTAT_EXIT_OK;
		} else {
			tdstat_target_explain(target, err);
			*status = TDSTAT_EXIT_FAILURE;
		}
		return -1;
	}
	if (!current.stats.enabled) {
		if (previous->stats.enabled)
			say_gathering_off(options->pid);
	} else if (previous->stats.enabled && tdstat_same_window(&previous->stats, &current.stats)) {
		print_line(options, symbolizer, previous, &current);
	} else {
		print_line(options, symbolizer, NULL, &current);
	}
	tdstat_reading_free(previous);
	*previous = current;
	return 0;
}

static int watch_target(const struct tdstat_watch_options *options, const struct tdstat_target *target,
			struct tdstat_symbolizer *symbolizer)
{
	struct tdstat_reading previous;
	struct timespec deadline;
	td_err_e err;
	int status = TDSTAT_EXIT_OK;

	err = tdstat_reading_take(target, &previous);
	if (err != TD_OK) {
		tdstat_target_explain(target, err);
		return TDSTAT_EXIT_FAILURE;
	}
	if (!previous.stats.enabled) {
		say_gathering_off(options->pid);
		tdstat_reading_free(&previous);
		return TDSTAT_EXIT_FAILURE;
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	if (options->format == TDSTAT_FORMAT_TEXT && !options->threads && !options->objects)
		tdstat_report_header(stdout);
	print_line(options, symbolizer, NULL, &previous);
	for (long tick = 1; options->count == 0 || tick < options->count; tick++) {
		add_seconds(&deadline, options->interval_s);
		if (!sleep_until(&deadline))
			break;
		if (watch_tick(options, target, symbolizer, &previous, &status) < 0)
			break;
	}
	tdstat_reading_free(&previous);
	return status;
}

int tdstat_watch(const struct tdstat_watch_options *options)
{
	struct tdstat_symbolizer *symbolizer = NULL;
	struct tdstat_target target;
	int status;

	catch_interrupts();
	if (tdstat_target_open(&target, options->pid) < 0)
		return TDSTAT_EXIT_FAILURE;
	/* Names for -t and -w; without them, addresses. */
	if (options->threads || options->objects)
		symbolizer = tdstat_symbolizer_open(options->pid);
	status = watch_target(options, &target, symbolizer);
	tdstat_symbolizer_close(symbolizer);
	tdstat_target_close(&target);
	return status;
}
