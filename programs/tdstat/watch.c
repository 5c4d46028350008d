/* SPDX-License-Identifier: MIT */
/*
 * Live mode: `tdstat [-i SECS] [-c COUNT] [--format F] PID`.
 *
 * The first line covers the window so far; each later line the last
 * interval only, the difference of two snapshots of the same window.  A
 * reset or re-enable in between starts a new window: that line then covers
 * the new window so far.  Nothing here writes to the target.
 */
#include "format.h"

#include <errno.h>
#include <signal.h>
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

/* The kernel's figures at the previous line, for `untracked`. */
static struct tdstat_kernel_sample kernel_previous;
static bool kernel_previous_valid;

static void print_line(const struct tdstat_watch_options *options, struct tdstat_output *output,
		       const td_ta_stats_ns_t *from, const td_ta_stats_ns_t *to)
{
	struct tdstat_interval interval;
	struct tdstat_kernel_sample kernel;
	bool kernel_valid = tdstat_kernel_sample(options->pid, &kernel);

	tdstat_interval_compute(&interval, options->pid, from, to);
	tdstat_kernel_comm(options->pid, interval.comm);
	interval.stopped = target_stopped(options->pid) ? TDSTAT_STOPPED : TDSTAT_RUNNING;
	/* Known over an interval between two lines (the kernel keeps no
	 * figure since the window's start); a stopped process is asleep for
	 * the kernel without any wait of its own. */
	if (from && kernel_valid && kernel_previous_valid && interval.stopped == TDSTAT_RUNNING) {
		double kernel_runnable = tdstat_kernel_runnable(&kernel_previous, &kernel);
		interval.untracked = interval.runnable > kernel_runnable ? interval.runnable - kernel_runnable : 0;
	}
	tdstat_kernel_sample_free(&kernel_previous);
	kernel_previous = kernel;
	kernel_previous_valid = kernel_valid;
	tdstat_output_begin(output);
	tdstat_output_process(output, &interval);
	tdstat_output_end(output);
}

/* One tick after the first line.  Returns -1 to stop with *status set. */
static int watch_tick(const struct tdstat_watch_options *options,
		      struct tdstat_output *output, const struct tdstat_target *target,
		      td_ta_stats_ns_t *previous, int *status)
{
	td_ta_stats_ns_t current;
	td_err_e err = tdstat_target_snapshot(target, &current);

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
	if (!current.enabled) {
		if (previous->enabled)
			say_gathering_off(options->pid);
	} else if (previous->enabled && tdstat_same_window(previous, &current)) {
		print_line(options, output, previous, &current);
	} else {
		print_line(options, output, NULL, &current);
	}
	*previous = current;
	return 0;
}

static int watch_target(const struct tdstat_watch_options *options,
			struct tdstat_output *output, const struct tdstat_target *target)
{
	td_ta_stats_ns_t previous;
	struct timespec deadline;
	td_err_e err;
	int status = TDSTAT_EXIT_OK;

	err = tdstat_target_snapshot(target, &previous);
	if (err != TD_OK) {
		tdstat_target_explain(target, err);
		return TDSTAT_EXIT_FAILURE;
	}
	if (!previous.enabled) {
		say_gathering_off(options->pid);
		return TDSTAT_EXIT_FAILURE;
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	tdstat_output_start(output);
	print_line(options, output, NULL, &previous);
	for (long tick = 1; options->count == 0 || tick < options->count; tick++) {
		add_seconds(&deadline, options->interval_s);
		if (!sleep_until(&deadline))
			break;
		if (watch_tick(options, output, target, &previous, &status) < 0)
			break;
	}
	return status;
}

int tdstat_watch(const struct tdstat_watch_options *options)
{
	struct tdstat_target target;
	struct tdstat_output output;
	int status;

	catch_interrupts();
	if (tdstat_target_open(&target, options->pid) < 0)
		return TDSTAT_EXIT_FAILURE;
	tdstat_output_init(&output, options->format, stdout, TDSTAT_OUTPUT_LIVE);
	status = watch_target(options, &output, &target);
	tdstat_output_close(&output);
	tdstat_target_close(&target);
	if (status == TDSTAT_EXIT_OK && output.failed) {
		tdstat_error("out of memory while writing the statistics");
		status = TDSTAT_EXIT_FAILURE;
	}
	return status;
}
