/* SPDX-License-Identifier: MIT */
/*
 * Live mode: `tdstat [-i SECS] [-c COUNT] [-t] [-w] [--format F] PID`.
 *
 * The first line covers the window so far; each later line the last
 * interval only, the difference of two snapshots of the same window.  A
 * reset or re-enable in between starts a new window: that line then covers
 * the new window so far.  Nothing here writes to the target.
 */
#include "format.h"
#include "plot.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tdstat/clock.h>
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

/* The state letter in the stat file open at fd ("pid (comm) S ..."), 0
 * when it cannot be read. */
static char stat_state(int fd)
{
	char text[512];
	ssize_t length = pread(fd, text, sizeof(text) - 1, 0);
	const char *close_paren;

	if (length <= 0)
		return 0;
	text[length] = '\0';
	close_paren = strrchr(text, ')');
	return close_paren && close_paren[1] == ' ' ? close_paren[2] : 0;
}

/* Stopped by a signal (SIGSTOP, ^Z) or by a debugger.  Reading it is
 * fine: nothing here stops or resumes it.  The leader's stat file stays
 * open (a line read it twice, by name, through tdps_process_state: a
 * tenth of a line's cost at 100 lines a second); while the leader lives
 * its state is the process's, else tdps_process_state finds a thread
 * that does. */
static bool target_stopped(pid_t pid)
{
	static int fd = -1;
	static pid_t fd_pid;
	char state = 0;

	if (fd >= 0 && fd_pid != pid) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		fd_pid = pid;
	}
	if (fd >= 0)
		state = stat_state(fd);
	if (state == 0 || state == 'Z' || state == 'X' || state == 'x')
		state = tdps_process_state(pid);
	return state == 'T' || state == 't';
}

/* --plot: every line printed is drawn too, under the name the process
 * had at its latest line (it may have exited by the end). */
static struct tdstat_plot *plot;
static char plot_comm[TDSTAT_COMM_SIZE];

/* The kernel's figures are read when due (tdstat.h,
 * TDSTAT_KERNEL_COST_FACTOR): the last reading that had them is the
 * previous one, or when that had none, the one kept here (handed over,
 * not copied, by the tick after it); and what its line showed, for the
 * lines in between. */
static struct tdstat_reading kernel_base;
static struct tdstat_kernel_carry kernel_carry;

static const struct tdstat_reading *kernel_base_of(const struct tdstat_reading *previous)
{
	if (previous && previous->kernel_valid)
		return previous;
	return kernel_base.kernel_valid ? &kernel_base : NULL;
}

static bool kernel_due(const struct tdstat_watch_options *options, const struct tdstat_reading *previous)
{
	const struct tdstat_reading *base = kernel_base_of(previous);
	struct timespec now;

	if (!base || options->interval_s >= TDSTAT_KERNEL_EVERY_LINE_S)
		return true;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* Half an interval early rather than one late. */
	return (double)((uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec - base->kernel.taken_ns) +
		       options->interval_s / 2 * 1e9 >=
	       (double)base->kernel.cost_ns * TDSTAT_KERNEL_COST_FACTOR;
}

/* The process's name, read again once a second as its threads' are
 * (TDSTAT_COMM_REREAD_NS), and at the first line of a window (after an
 * exec, say): an open, a read and a close per line were a tenth of a
 * line's cost at 100 lines a second. */
static void process_comm(pid_t pid, bool fresh, char comm[TDSTAT_COMM_SIZE])
{
	static char kept[TDSTAT_COMM_SIZE];
	static pid_t kept_pid;
	static uint64_t read_ns;
	uint64_t now = tdstat_monotonic_ns();

	if (fresh || kept_pid != pid || now - read_ns >= TDSTAT_COMM_REREAD_NS) {
		tdstat_kernel_comm(pid, kept);
		kept_pid = pid;
		read_ns = now;
	}
	memcpy(comm, kept, TDSTAT_COMM_SIZE);
}

/* A line over [from, to] of one window (from NULL: the window so far),
 * then the rows of -t and -w under it, as one moment of the output. */
static void print_line(const struct tdstat_watch_options *options, struct tdstat_output *output,
		       const struct tdstat_target *target, struct tdstat_symbolizer *symbolizer,
		       const struct tdstat_reading *from, const struct tdstat_reading *to)
{
	struct tdstat_waitfor graph = { 0 };
	bool have_graph = false;
	struct tdstat_interval interval;
	struct tdstat_thread_row *threads;
	struct tdstat_object_row *objects = NULL;
	struct tdstat_kernel_line kernel;
	size_t thread_count = tdstat_thread_rows_carried(options->pid, from, kernel_base_of(from), to, &kernel_carry, &threads,
							 &kernel);
	size_t object_count = 0;

	tdstat_interval_compute(&interval, options->pid, from ? &from->stats : NULL, &to->stats);
	process_comm(options->pid, from == NULL, interval.comm);
	interval.stopped = target_stopped(options->pid) ? TDSTAT_STOPPED : TDSTAT_RUNNING;
	/* Known over an interval between two readings (the kernel keeps no
	 * figure since the window's start); a stopped process is asleep for
	 * the kernel without any wait of its own. */
	if (interval.stopped == TDSTAT_RUNNING)
		interval.untracked = kernel.untracked;
	/* The machine's, whatever the target does. */
	interval.steal = kernel.steal;
	interval.steal_resolution = kernel.steal_resolution;
	if (options->threads)
		tdstat_thread_rows_name(symbolizer, threads, thread_count);
	if (options->objects) {
		td_err_e err;

		object_count = tdstat_object_rows(options->pid, symbolizer, from, to, &objects);
		/* The wait-for graph now, after the interval's rows. */
		err = tdstat_waitfor_read(target->agent, options->pid, options->pid, symbolizer, &graph);
		have_graph = err == TD_OK;
		if (!have_graph && !tdstat_target_vanished(target, err))
			tdstat_error("process %d: the owners and waiters could not be read (td_err_e %d)",
				     (int)options->pid, (int)err);
	}
	tdstat_output_begin(output);
	tdstat_output_process(output, &interval);
	for (size_t i = 0; options->threads && i < thread_count; i++)
		tdstat_output_thread(output, &threads[i]);
	for (size_t i = 0; i < object_count; i++)
		tdstat_output_object(output, &objects[i]);
	if (have_graph)
		tdstat_output_waitfor(output, &graph);
	tdstat_output_end(output);
	tdstat_waitfor_free(&graph);
	if (plot) {
		tdstat_plot_add(plot, &interval);
		if (interval.comm[0])
			memcpy(plot_comm, interval.comm, sizeof(plot_comm));
	}
	if (!tdstat_kernel_carry_take(&kernel_carry, threads))
		free(threads);
	free(objects);
}

/* One tick after the first line.  Returns -1 to stop with *status set. */
static int watch_tick(const struct tdstat_watch_options *options, struct tdstat_output *output,
		      const struct tdstat_target *target, struct tdstat_symbolizer *symbolizer,
		      struct tdstat_reading *previous, int *status)
{
	struct tdstat_reading current;
	td_err_e err = tdstat_reading_take(target, &current, kernel_due(options, previous),
					  kernel_base_of(previous));

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
		print_line(options, output, target, symbolizer, previous, &current);
	} else {
		/* A new window: a reset, gathering turned on again, or an
		 * exec (a fresh region, maybe another program). */
		tdstat_symbolizer_renew(symbolizer);
		tdstat_thread_names_forget();
		print_line(options, output, target, symbolizer, NULL, &current);
	}
	/* The last reading with the kernel's figures, kept while the
	 * following ones have none. */
	if (previous->kernel_valid && !current.kernel_valid) {
		tdstat_reading_free(&kernel_base);
		kernel_base = *previous;
	} else {
		tdstat_reading_free(previous);
	}
	*previous = current;
	return 0;
}

static int watch_target(const struct tdstat_watch_options *options, struct tdstat_output *output,
			const struct tdstat_target *target, struct tdstat_symbolizer *symbolizer)
{
	struct tdstat_reading previous;
	struct timespec deadline;
	td_err_e err;
	int status = TDSTAT_EXIT_OK;

	err = tdstat_reading_take(target, &previous, true, NULL);
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
	tdstat_output_start(output);
	print_line(options, output, target, symbolizer, NULL, &previous);
	for (long tick = 1; options->count == 0 || tick < options->count; tick++) {
		add_seconds(&deadline, options->interval_s);
		if (!sleep_until(&deadline))
			break;
		if (watch_tick(options, output, target, symbolizer, &previous, &status) < 0)
			break;
	}
	tdstat_reading_free(&previous);
	tdstat_reading_free(&kernel_base);
	tdstat_kernel_carry_free(&kernel_carry);
	tdstat_thread_names_forget();
	return status;
}

int tdstat_watch(const struct tdstat_watch_options *options)
{
	struct tdstat_symbolizer *symbolizer = NULL;
	struct tdstat_target target;
	struct tdstat_output output;
	char title[128];
	int status;

	catch_interrupts();
	/* Each moment of the output is flushed whole (tdstat_output_end):
	 * line buffering would cost a write per row, a thousand a line
	 * with -t on a thousand threads; a buffer of 1 MiB writes a line of
	 * up to about 8,000 rows in one write (its pages cost nothing until
	 * a line fills them). */
	static char stdout_buffer[1 << 20]; /* glibc sizes a buffer of its own by st_blksize */

	setvbuf(stdout, stdout_buffer, _IOFBF, sizeof(stdout_buffer));
	/* Each line allocates arrays of a row or a record per thread (200
	 * KB at a thousand threads) and frees them: past glibc's default
	 * thresholds each came from a fresh mmap, or from heap pages given
	 * back and faulted in again, a tenth of a line's cost at 100 lines a
	 * second.  Kept instead. */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	if (options->plot_path && !(plot = tdstat_plot_new(options->plot_path))) {
		tdstat_error("out of memory");
		return TDSTAT_EXIT_FAILURE;
	}
	if (tdstat_target_open(&target, options->pid) < 0) {
		tdstat_plot_free(plot);
		return TDSTAT_EXIT_FAILURE;
	}
	/* Names for -t and -w; without them, addresses. */
	if (options->threads || options->objects)
		symbolizer = tdstat_symbolizer_open(options->pid);
	tdstat_output_init(&output, options->format, stdout, TDSTAT_OUTPUT_LIVE);
	output.threads = options->threads;
	output.objects = options->objects;
	status = watch_target(options, &output, &target, symbolizer);
	tdstat_output_close(&output);
	tdstat_symbolizer_close(symbolizer);
	tdstat_target_close(&target);
	if (plot && tdstat_plot_samples(plot) > 0) {
		snprintf(title, sizeof(title), "%s (pid %d)", plot_comm[0] ? plot_comm : "process",
			 (int)options->pid);
		if (tdstat_plot_write(plot, title) < 0 && status == TDSTAT_EXIT_OK)
			status = TDSTAT_EXIT_FAILURE;
	}
	tdstat_plot_free(plot);
	plot = NULL;
	if (status == TDSTAT_EXIT_OK && output.failed) {
		tdstat_error("out of memory while writing the statistics");
		status = TDSTAT_EXIT_FAILURE;
	}
	return status;
}
