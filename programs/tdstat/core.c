/* SPDX-License-Identifier: MIT */
/*
 * tdstat core: the statistics a process had when it was dumped, read
 * through libc_db from a core file with libtdstat_core as the
 * proc_service provider (docs/DESIGN.md, "Core files and gdb").
 *
 * The window ends at the dump.  A core holds no clock reading, so the
 * agent ends it at the latest moment the records prove (ps_image.h):
 * the last state change, wake-up or pending stamp any thread made.  The
 * CPU time is the one the kernel wrote into the core's NT_PRSTATUS
 * notes; gcore writes none, and then the running figure is unknown.
 * -t and -w: the threads' rows and the objects waited on, from the same
 * walk, named from the symbol tables of the files the core names; a core
 * holds no thread names and no descriptor table.
 *
 * libtdstat_core is linked before libtdstat_ps: its ps_* routines serve
 * its handles and pass every other to the live provider (ps_core.h).
 */
#include "format.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <tdstat/ps_core.h>

static void explain_open(enum tdcore_status status, const char *path, int error)
{
	char line[512];

	tdstat_error("%s", tdcore_explain(status, path, error, line, sizeof(line)));
}

static void explain_agent(td_err_e err, struct ps_prochandle *core, const struct tdcore_process *process,
			  const char *path)
{
	enum tdcore_status status = tdcore_last_status(core);

	switch (err) {
	case TD_NOLIBTHREAD:
		/* The core maps the shim, but its symbol was not found. */
		if (status == TDCORE_FILES_MISSING || status == TDCORE_DAMAGED) {
			explain_open(status, path, 0);
			return;
		}
		tdstat_error("process %d (%s) in %s had not loaded libtdshim.so, so it kept no statistics: "
			     "start it with `tdstat run -- CMD` or LD_PRELOAD=libtdshim.so before it hangs or dies",
			     (int)process->pid, process->command, path);
		return;
	case TD_VERSION:
		tdstat_error("process %d in %s ran a libtdshim.so of another ABI version, or one that had not "
			     "finished starting: use the tdstat installed with that shim",
			     (int)process->pid, path);
		return;
	case TD_MALLOC:
		tdstat_error("out of memory reading %s", path);
		return;
	case TD_DBERR:
		if (status != TDCORE_OK) {
			explain_open(status, path, 0);
			return;
		}
		tdstat_error("the statistics region in %s is damaged (a stray write in the program, most likely): "
			     "its figures cannot be read from this core; find the stray write (valgrind, "
			     "-fsanitize=address) and dump the process again", path);
		return;
	default:
		tdstat_error("libc_db failed on %s (td_err_e %d)", path, (int)err);
		return;
	}
}

/* Whether path starts with an ELF header (an unreadable file counts as
 * one: tdcore_open's own error then says why). */
static bool is_elf(const char *path)
{
	unsigned char magic[SELFMAG];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t got;

	if (fd < 0)
		return true;
	got = read(fd, magic, sizeof(magic));
	close(fd);
	return got != (ssize_t)sizeof(magic) ? got < 0 : memcmp(magic, ELFMAG, SELFMAG) == 0;
}

static void interrupt_open(int signal)
{
	(void)signal;
}

/*
 * While the core is read, and never while anything is printed: libdwfl
 * open()s, blocking, each name the dynamic linker's list holds, read
 * from the core's memory, where a damaged or crafted core may hold any
 * path.  A FIFO there (or a device that waits) would keep tdstat core
 * waiting forever; libtdstat_core checks only NT_FILE's names before
 * libdwfl opens them.  A timer every second interrupts such an open
 * (EINTR, no SA_RESTART): libdwfl takes that file as missing and goes
 * on.  Nothing else the reading does can block (its preads retry on
 * EINTR); output is not interrupted, as a write to a full pipe would be.
 */
static void blocking_opens_interrupted(bool on)
{
	struct sigaction action = { .sa_handler = on ? interrupt_open : SIG_DFL };
	struct itimerval timer = { .it_value.tv_sec = on, .it_interval.tv_sec = on };

	/* Armed after the handler, disarmed before it goes: a SIGALRM
	 * never meets the default action, which ends the process. */
	sigemptyset(&action.sa_mask);
	if (on)
		sigaction(SIGALRM, &action, NULL);
	setitimer(ITIMER_REAL, &timer, NULL);
	if (!on)
		sigaction(SIGALRM, &action, NULL);
}

/* What tdstat_sync_print's failure is explained with (-s). */
struct sync_context {
	struct ps_prochandle *core;
	const struct tdcore_process *process;
	const char *path;
};

/* A core cannot have tracking turned on after the fact, and libc_db's
 * failures on it are the core's (its memory, its files), as for the
 * process line: never a bare td_err_e. */
static void explain_sync(td_err_e err, const void *context)
{
	const struct sync_context *sync = context;

	if (err == TD_NOCAPAB)
		tdstat_error("%s: per-object tracking was off in process %d at the dump (or its shim had none), so the "
			     "core holds no objects' statistics; start the program with TDSTAT_SYNC_TRACKING=1, or "
			     "turn it on with `tdstat sync enable PID` while it runs",
			     sync->path, (int)sync->process->pid);
	else
		explain_agent(err, sync->core, sync->process, sync->path);
}

/*
 * Slack for the check below: the anchor is the wall clock at the
 * window's start, so a clock set back since then puts the records'
 * end after the dump by as much.
 */
#define CLOCK_SET_BACK_NS (3600 * UINT64_C(1000000000))

/*
 * Whether the records end after the core file was written, by more
 * than the slack: the window of a core ends at its latest stamp
 * (ps_image.h), so one stamp a stray write made huge stretches the
 * window to years and every average to nothing, printed as measured.
 * A live reader's clock bounds the stamps; a core's bound is its file's
 * time (a copy's is later still).  *after_s: by how much.
 */
static bool records_end_after_dump(const char *core_path, const td_ta_stats_ns_t *stats, double *after_s)
{
	uint64_t end, written;
	struct stat info;

	/* No anchor (ABI 2.0, or none written): nothing to compare with. */
	if (stats->window_start_realtime_ns == 0 || stats->snapshot_ns < stats->window_start_ns ||
	    stat(core_path, &info) != 0 || info.st_mtim.tv_sec < 0)
		return false;
	written = (uint64_t)info.st_mtim.tv_sec * 1000000000u + (uint64_t)info.st_mtim.tv_nsec;
	if (__builtin_add_overflow(stats->window_start_realtime_ns, stats->snapshot_ns - stats->window_start_ns, &end)) {
		*after_s = INFINITY;
		return true;
	}
	if (end <= written || end - written <= CLOCK_SET_BACK_NS)
		return false;
	*after_s = (double)(end - written) / 1e9;
	return true;
}

/* Text only: what the core is, before the usual header and row (the
 * other formats are read by programs, which expect their lines alone). */
static void describe(const struct tdstat_core_options *options, const struct tdcore_process *process,
		     const td_ta_stats_ns_t *stats, const struct tdstat_interval *interval)
{
	printf("core %s: process %d (%s), %zu threads in the core", options->core_path, (int)process->pid,
	       process->command, process->threads);
	if (process->signal > 0)
		printf(", dumped on signal %d (%s)", process->signal, strsignal(process->signal));
	printf("\n");
	if (process->cpu_known)
		printf("CPU time %.3f s (the core's NT_PRSTATUS notes)\n", process->cpu_ns / 1e9);
	else
		printf("CPU time not in the core (gcore writes none): RUNNING shows 0, not measured\n");
	if (!stats->enabled)
		printf("gathering was off at the dump: the window ends when it was turned off\n");
	printf("window: %.3f s, ending at the last moment the records prove\n", interval->window_s);
}

/* Rows of -t and -w from one reading of the core (its window so far).
 * They are computed for pid 0, which names no /proc entry: what the
 * command would look up there (thread names, descriptors) belongs to
 * whatever process has the core's PID now, not to the core. */
static void print(const struct tdstat_core_options *options, const td_thragent_t *agent,
		  const struct tdcore_process *process, const struct tdstat_reading *reading,
		  const struct tdstat_interval *interval)
{
	struct tdstat_waitfor graph = { 0 };
	bool have_graph = false;
	struct tdstat_symbolizer *symbolizer = NULL;
	struct tdstat_thread_row *threads = NULL;
	struct tdstat_object_row *objects = NULL;
	size_t thread_count = 0, object_count = 0;
	struct tdstat_output output;

	if (options->threads || options->objects)
		symbolizer = tdstat_symbolizer_open_core(options->core_path, options->executable_path);
	if (options->threads) {
		thread_count = tdstat_thread_rows(0, NULL, reading, &threads);
		tdstat_thread_rows_name(symbolizer, threads, thread_count);
		for (size_t i = 0; i < thread_count; i++)
			threads[i].pid = process->pid;
	}
	td_err_e err = TD_OK;

	if (options->objects) {
		object_count = tdstat_object_rows(0, symbolizer, NULL, reading, &objects);
		for (size_t i = 0; i < object_count; i++)
			objects[i].pid = process->pid;
		/* Owners and waiters at the dump (no thread names: /proc of
		 * the core's PID is another process now, if any). */
		err = tdstat_waitfor_read(agent, process->pid, 0, symbolizer, &graph);
		have_graph = err == TD_OK;
	}
	blocking_opens_interrupted(false);
	if (!have_graph && options->objects)
		tdstat_error("%s: the owners and waiters could not be read (td_err_e %d)", options->core_path, (int)err);
	tdstat_output_init(&output, options->format, stdout, TDSTAT_OUTPUT_LIVE);
	output.threads = options->threads;
	output.objects = options->objects;
	if (output.format == &tdstat_format_text_row)
		describe(options, process, &reading->stats, interval);
	tdstat_output_start(&output);
	tdstat_output_begin(&output);
	tdstat_output_process(&output, interval);
	for (size_t i = 0; i < thread_count; i++)
		tdstat_output_thread(&output, &threads[i]);
	for (size_t i = 0; i < object_count; i++)
		tdstat_output_object(&output, &objects[i]);
	if (have_graph)
		tdstat_output_waitfor(&output, &graph);
	tdstat_output_end(&output);
	tdstat_waitfor_free(&graph);
	tdstat_output_close(&output);
	free(threads);
	free(objects);
	tdstat_thread_names_forget();
	tdstat_symbolizer_close(symbolizer);
}

int tdstat_core(const struct tdstat_core_options *options)
{
	struct ps_prochandle *core = NULL;
	struct tdcore_process process;
	struct tdstat_interval interval;
	struct tdstat_reading reading;
	td_thragent_t *agent = NULL;
	enum tdcore_status status;
	td_err_e err;
	int result = TDSTAT_EXIT_FAILURE;

	/* A directory, a device or a FIFO: tdcore_open refuses it with
	 * EINVAL, whose text ("Invalid argument") names no cause. */
	if (options->core_path) {
		struct stat info;

		if (stat(options->core_path, &info) == 0 && !S_ISREG(info.st_mode)) {
			tdstat_error("%s is %s, not a core file; give a core dump (from the kernel or gdb's gcore)",
				     options->core_path, S_ISDIR(info.st_mode) ? "a directory" :
				     S_ISFIFO(info.st_mode) ? "a FIFO" : "a device or a socket");
			return TDSTAT_EXIT_FAILURE;
		}
	}
	/* Said here, naming the file: tdcore_open refuses it too, but its
	 * explanation names the core. */
	if (options->executable_path) {
		struct stat info;

		if (stat(options->executable_path, &info) != 0) {
			tdstat_error("%s: cannot open: %s; give the program the core was dumped from as EXECUTABLE",
				     options->executable_path, strerror(errno));
			return TDSTAT_EXIT_FAILURE;
		}
		if (!S_ISREG(info.st_mode)) {
			tdstat_error("%s is not a regular file; give the program the core was dumped from as EXECUTABLE",
				     options->executable_path);
			return TDSTAT_EXIT_FAILURE;
		}
		/* libdwfl passes over a file that is no ELF image without a
		 * word: the command line was mistyped, say so. */
		if (!is_elf(options->executable_path)) {
			tdstat_error("%s is not an ELF file; give the program the core was dumped from as EXECUTABLE, "
				     "or none (the core names it)", options->executable_path);
			return TDSTAT_EXIT_FAILURE;
		}
	}
	blocking_opens_interrupted(true);
	status = tdcore_open(options->core_path, options->executable_path, &core);
	if (status != TDCORE_OK) {
		int error = errno;

		blocking_opens_interrupted(false);
		explain_open(status, options->core_path, error);
		return TDSTAT_EXIT_FAILURE;
	}
	tdcore_process(core, &process);
	err = td_init();
	if (err == TD_OK)
		err = td_ta_new(core, &agent);
	if (err == TD_OK && options->sync) {
		struct tdstat_symbolizer *symbolizer =
			tdstat_symbolizer_open_core(options->core_path, options->executable_path);

		blocking_opens_interrupted(false);
		struct sync_context context = { .core = core, .process = &process, .path = options->core_path };

		result = tdstat_sync_print(agent, process.pid, symbolizer, options->format, explain_sync, &context);
		tdstat_symbolizer_close(symbolizer);
		td_ta_delete(agent);
		tdcore_close(core);
		return result;
	}
	/* The process line and the threads from one walk. */
	if (err == TD_OK)
		err = tdstat_reading_threads(agent, &reading);
	double after_s;
	bool ends_after = err == TD_OK && records_end_after_dump(options->core_path, &reading.stats, &after_s);

	/* print() disarms it once the rows are read. */
	if (err != TD_OK || ends_after)
		blocking_opens_interrupted(false);
	if (err != TD_OK) {
		explain_agent(err, core, &process, options->core_path);
	} else if (ends_after) {
		tdstat_error("the statistics region in %s is damaged: its records end %.0f s after the core file was "
			     "written (a stray write in the program, or the wall clock set back since the window began), "
			     "so its figures would be wrong; dump the process again", options->core_path, after_s);
		tdstat_reading_free(&reading);
	} else {
		tdstat_interval_compute(&interval, process.pid, NULL, &reading.stats);
		/* NT_PRPSINFO's name, printable ASCII already (ps_core.h). */
		snprintf(interval.comm, sizeof(interval.comm), "%s", process.command);
		print(options, agent, &process, &reading, &interval);
		tdstat_reading_free(&reading);
		result = TDSTAT_EXIT_OK;
	}
	if (agent)
		td_ta_delete(agent);
	tdcore_close(core);
	return result;
}
