/* SPDX-License-Identifier: MIT */
/*
 * The reader side of the benchmarks: libc_db over libtdstat_ps, as tdstat
 * uses them.
 *
 *   agentbench cost SHIM WORKLOAD THREADS CALLS [MODE]
 *       starts `WORKLOAD MODE THREADS` (MODE condvar by default: every
 *       thread asleep; queue: one of them always running, so the process
 *       CPU clock must be read each time) with SHIM preloaded and
 *       TDSTAT_ENABLE=1, waits until every thread runs, then times CALLS
 *       td_ta_get_stats calls (in batches of 10).  Prints
 *       "cost THREADS NTHREADS MEDIAN MEAN CLOCK CPU": the median (over
 *       the batches) and mean us per call, the median us the kernel takes
 *       to read the target's process CPU clock (which a call needs unless
 *       the region proves nothing ran since its last reading), and the
 *       median CPU us per call (this thread's CPU clock: unlike the
 *       others, hardly changed by other load on the machine).
 *   agentbench sample SHIM WORKLOAD THREADS HZ SECONDS [MODE]
 *       starts the workload as `cost` does, then takes td_ta_get_stats_ns
 *       snapshots with the kinds (what `tdstat` takes for each line) HZ
 *       times a second for SECONDS.  Prints "sample THREADS HZ US
 *       SHARE": the reader's median CPU us per snapshot, and the CPU
 *       all of them used over the run as a share of one CPU.
 *   agentbench walk SHIM WORKLOAD THREADS HZ SECONDS [MODE]
 *       as `sample`, with td_ta_thr_stats_iter walks instead (every line
 *       of tdstat takes one: the process figures and every thread, each
 *       thread's figures copied out as tdstat keeps them).  Prints "walk
 *       THREADS HZ US SHARE".
 *   agentbench iter SHIM WORKLOAD THREADS CALLS
 *       the same target; times CALLS td_ta_thr_stats_iter walks (a
 *       callback that adds up each thread) and as many td_ta_get_stats_ns
 *       with the kinds.  Prints "iter THREADS HANDED MEDIAN PER_THREAD
 *       STATS_NS": the median us per walk, that over the threads handed
 *       out, and the median us of one td_ta_get_stats_ns.
 *   agentbench print HZ BYTES SECONDS
 *       the floor of any sampler that prints: wakes HZ times a second on
 *       the same absolute deadlines as tdstat (clock_nanosleep) and writes
 *       BYTES of text lines to stdout in one write, for SECONDS, reading
 *       nothing.  What a sampler's target loses to it is what printing
 *       that much at that rate costs, whoever prints it.
 *   agentbench armed RUNS COMMAND [ARGS...]
 *       what an armed timer on a process's CPU clock costs that process
 *       (docs/READER.md "The process CPU clock"): runs COMMAND 2 * RUNS
 *       times, alternately bare and with a timer of this process armed
 *       on the child's process CPU clock (created between fork and exec,
 *       expiring never, as libc_db arms it), and prints "armed RUNS
 *       BARE_MS ARMED_MS SLOWDOWN_PERCENT min BARE_MS ARMED_MS": the
 *       median wall times, and the least.
 *   agentbench compare PID SECONDS
 *       two snapshots of PID, SECONDS apart, each taken beside the
 *       kernel's own figures; prints the averages over that window:
 *       "compare tdstat RUNNABLE RUNNING LWPS IDLE kernel RUNNABLE RUNNING
 *       LWPS IDLE window SECONDS".  The kernel's runnable is the sum over
 *       /proc/PID/task/{*}/schedstat of on-CPU plus run-queue time, its
 *       running the process CPU clock, its lwps the number of tasks.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thread_db.h>
#include <tdstat/clock.h>
#include <tdstat/ps_live.h>
#include <tdstat/thread_db_stats.h>

extern char **environ;

static uint64_t monotonic_ns(void)
{
	return tdstat_monotonic_ns();
}

static void sleep_s(double seconds)
{
	struct timespec left = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };

	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
}

__attribute__((noreturn)) static void die(const char *what, int code)
{
	fprintf(stderr, "agentbench: %s (%d)\n", what, code);
	exit(1);
}

struct target {
	struct ps_prochandle *process;
	td_thragent_t *agent;
};

static void target_open(struct target *target, pid_t pid)
{
	enum tdps_status status;
	td_err_e err;

	if ((err = td_init()) != TD_OK)
		die("td_init", err);
	if ((status = tdps_open(pid, &target->process)) != TDPS_OK)
		die("tdps_open", status);
	if ((err = td_ta_new(target->process, &target->agent)) != TD_OK)
		die("td_ta_new", err);
}

static void target_close(struct target *target)
{
	td_ta_delete(target->agent);
	tdps_close(target->process);
}

/* Starts the workload with the shim preloaded; returns once it printed
 * "ready". */
static pid_t start_workload(const char *shim, const char *workload, const char *mode,
			    const char *threads)
{
	char *argv[] = { (char *)workload, (char *)mode, (char *)threads, NULL };
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attributes;
	struct sched_param normal = { .sched_priority = 0 };
	char preload[4096], line[64];
	size_t count = 0;
	int fds[2];
	pid_t pid;
	FILE *from_child;

	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", shim);
	while (environ[count])
		count++;
	char **env = calloc(count + 3, sizeof(*env));
	size_t n = 0;
	for (size_t i = 0; i < count; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "TDSTAT_ENABLE=", 14))
			env[n++] = environ[i];
	env[n++] = preload;
	env[n++] = "TDSTAT_ENABLE=1";
	env[n] = NULL;

	if (pipe(fds) != 0)
		die("pipe", errno);
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&actions, fds[0]);
	/* The reader may run under chrt (bench.py does, so that other load
	 * on the machine does not stretch its figures): the target runs at
	 * the normal policy whatever the reader's. */
	posix_spawnattr_init(&attributes);
	posix_spawnattr_setschedpolicy(&attributes, SCHED_OTHER);
	posix_spawnattr_setschedparam(&attributes, &normal);
	posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSCHEDULER);
	int error = posix_spawn(&pid, workload, &actions, &attributes, argv, env);
	if (error)
		die("posix_spawn", error);
	posix_spawnattr_destroy(&attributes);
	posix_spawn_file_actions_destroy(&actions);
	free(env);
	close(fds[1]);
	from_child = fdopen(fds[0], "r");
	if (!from_child || !fgets(line, sizeof(line), from_child) || strcmp(line, "ready\n") != 0)
		die("workload did not start", 0);
	fclose(from_child);
	return pid;
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The part of a snapshot the kernel spends reading the target's process
 * CPU clock (it sums every thread's run time): median of 100 reads. */
static double process_clock_us(pid_t pid)
{
	double spent[100];
	struct timespec ts;
	clockid_t clock;

	if (clock_getcpuclockid(pid, &clock) != 0)
		die("clock_getcpuclockid", errno);
	for (int i = 0; i < 100; i++) {
		uint64_t start = monotonic_ns();
		clock_gettime(clock, &ts);
		spent[i] = (monotonic_ns() - start) / 1e3;
	}
	qsort(spent, 100, sizeof(spent[0]), compare_doubles);
	return spent[50];
}

static int run_cost(const char *shim, const char *workload, const char *threads, long calls, const char *mode)
{
	enum { BATCH = 10 };
	long batches = calls / BATCH > 0 ? calls / BATCH : 1;
	double *per_call = calloc(batches, sizeof(*per_call));
	double *cpu_per_call = calloc(batches, sizeof(*cpu_per_call));
	struct target target;
	td_ta_stats_t stats;
	pid_t pid = start_workload(shim, workload, mode, threads);
	uint64_t total = 0;
	td_err_e err;

	target_open(&target, pid);
	for (int i = 0; i < 20; i++)
		if ((err = td_ta_get_stats(target.agent, &stats)) != TD_OK)
			die("td_ta_get_stats", err);
	for (long b = 0; b < batches; b++) {
		uint64_t start = monotonic_ns(), cpu_start = tdstat_clock_ns(CLOCK_THREAD_CPUTIME_ID);
		for (int i = 0; i < BATCH; i++)
			if ((err = td_ta_get_stats(target.agent, &stats)) != TD_OK)
				die("td_ta_get_stats", err);
		uint64_t spent = monotonic_ns() - start;
		total += spent;
		per_call[b] = spent / 1e3 / BATCH;
		cpu_per_call[b] = (tdstat_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start) / 1e3 / BATCH;
	}
	qsort(per_call, batches, sizeof(*per_call), compare_doubles);
	qsort(cpu_per_call, batches, sizeof(*cpu_per_call), compare_doubles);
	printf("cost %s %d %.3f %.3f %.3f %.3f\n", threads, stats.nthreads, per_call[batches / 2],
	       total / 1e3 / (batches * BATCH), process_clock_us(pid), cpu_per_call[batches / 2]);
	target_close(&target);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	free(per_call);
	free(cpu_per_call);
	return 0;
}

/* A walk's threads, kept as tdstat keeps them (a copy of each). */
struct kept_walk {
	td_thr_stats_ns_t *threads;
	size_t count, capacity;
};

static int keep_walked(const td_thr_stats_ns_t *thread, void *data)
{
	struct kept_walk *kept = data;

	if (kept->count == kept->capacity) {
		kept->capacity = kept->capacity ? 2 * kept->capacity : 1024;
		kept->threads = realloc(kept->threads, kept->capacity * sizeof(*kept->threads));
		if (!kept->threads)
			die("realloc", 0);
	}
	kept->threads[kept->count++] = *thread;
	return 0;
}

/* One snapshot of `sample` (the process figures with the kinds) or of
 * `walk` (the threads too). */
static td_err_e one_snapshot(const struct target *target, bool walk, struct kept_walk *kept)
{
	td_ta_stats_ns_t stats = { .size = sizeof(stats) };

	if (!walk)
		return td_ta_get_stats_ns(target->agent, &stats);
	kept->count = 0;
	return td_ta_thr_stats_iter(target->agent, keep_walked, kept, &stats);
}

static int run_sample(const char *shim, const char *workload, const char *threads, double hz, double seconds,
		      const char *mode, bool walk)
{
	struct kept_walk kept = { 0 };
	long count = (long)(hz * seconds), taken = 0;
	double *per_snapshot = calloc(count > 0 ? count : 1, sizeof(*per_snapshot));
	pid_t pid = start_workload(shim, workload, mode, threads);
	uint64_t period = (uint64_t)(1e9 / hz), next, begin, cpu_begin;
	struct target target;
	td_err_e err;

	target_open(&target, pid);
	begin = next = monotonic_ns();
	cpu_begin = tdstat_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (; taken < count; taken++) {
		uint64_t cpu = tdstat_clock_ns(CLOCK_THREAD_CPUTIME_ID);

		if ((err = one_snapshot(&target, walk, &kept)) != TD_OK)
			die(walk ? "td_ta_thr_stats_iter" : "td_ta_get_stats_ns", err);
		per_snapshot[taken] = (tdstat_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu) / 1e3;
		next += period;
		uint64_t now = monotonic_ns();
		if (next > now)
			sleep_s((next - now) / 1e9);
	}
	double share = (tdstat_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_begin) / (double)(monotonic_ns() - begin);
	qsort(per_snapshot, taken, sizeof(*per_snapshot), compare_doubles);
	printf("%s %s %.0f %.3f %.5f\n", walk ? "walk" : "sample", threads, hz, taken ? per_snapshot[taken / 2] : 0.0,
	       share);
	free(kept.threads);
	target_close(&target);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	free(per_snapshot);
	return 0;
}

static int add_thread(const td_thr_stats_ns_t *thread, void *data)
{
	uint64_t *sums = data;

	sums[0]++;
	sums[1] += thread->runnable_ns;
	return 0;
}

/* Median us of CALLS calls of `one` (in batches of 10). */
static double median_us(const struct target *target, long calls, td_err_e (*one)(const struct target *, uint64_t *),
			uint64_t *handed)
{
	enum { BATCH = 10 };
	long batches = calls / BATCH > 0 ? calls / BATCH : 1;
	double *per_call = calloc(batches, sizeof(*per_call)), median;
	td_err_e err;

	for (long b = 0; b < batches; b++) {
		uint64_t start = monotonic_ns();
		for (int i = 0; i < BATCH; i++)
			if ((err = one(target, handed)) != TD_OK)
				die("agent call", err);
		per_call[b] = (monotonic_ns() - start) / 1e3 / BATCH;
	}
	qsort(per_call, batches, sizeof(*per_call), compare_doubles);
	median = per_call[batches / 2];
	free(per_call);
	return median;
}

static td_err_e one_walk(const struct target *target, uint64_t *handed)
{
	uint64_t sums[2] = { 0, 0 };
	td_ta_stats_ns_t stats = { .size = sizeof(stats) };
	td_err_e err = td_ta_thr_stats_iter(target->agent, add_thread, sums, &stats);

	*handed = sums[0];
	return err;
}

static td_err_e one_stats_ns(const struct target *target, uint64_t *unused)
{
	td_ta_stats_ns_t stats = { .size = sizeof(stats) };

	(void)unused;
	return td_ta_get_stats_ns(target->agent, &stats);
}

static int run_iter(const char *shim, const char *workload, const char *threads, long calls)
{
	struct target target;
	pid_t pid = start_workload(shim, workload, "condvar", threads);
	uint64_t handed = 0;

	target_open(&target, pid);
	median_us(&target, 20, one_walk, &handed);
	double walk = median_us(&target, calls, one_walk, &handed);
	double stats_ns = median_us(&target, calls, one_stats_ns, NULL);
	printf("iter %s %" PRIu64 " %.3f %.4f %.3f\n", threads, handed, walk, handed ? walk / handed : 0.0, stats_ns);
	target_close(&target);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 0;
}

struct kernel_view {
	uint64_t at_ns;
	uint64_t runnable_ns; /* on CPU + waiting for a CPU, all tasks */
	uint64_t cpu_ns;      /* process CPU clock */
	long tasks;
};

static void kernel_read(pid_t pid, struct kernel_view *view)
{
	char path[64];
	struct dirent *entry;
	clockid_t clock;
	struct timespec ts;
	DIR *dir;

	memset(view, 0, sizeof(*view));
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		die("opendir /proc/PID/task", errno);
	while ((entry = readdir(dir))) {
		char file[sizeof(path) + sizeof(entry->d_name) + 16];
		unsigned long long on_cpu, waiting;
		FILE *stat;

		if (entry->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s/schedstat", path, entry->d_name);
		if (!(stat = fopen(file, "r")))
			continue;
		if (fscanf(stat, "%llu %llu", &on_cpu, &waiting) == 2) {
			view->runnable_ns += on_cpu + waiting;
			view->tasks++;
		}
		fclose(stat);
	}
	closedir(dir);
	if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &ts) != 0)
		die("process CPU clock", errno);
	view->cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	view->at_ns = monotonic_ns();
}

static void snapshot(const struct target *target, td_ta_stats_ns_t *stats)
{
	td_err_e err;

	memset(stats, 0, sizeof(*stats));
	stats->size = sizeof(*stats);
	if ((err = td_ta_get_stats_ns(target->agent, stats)) != TD_OK)
		die("td_ta_get_stats_ns", err);
	if (!stats->enabled)
		die("gathering is off in the target", 0);
}

static int run_compare(pid_t pid, double seconds)
{
	struct target target;
	td_ta_stats_ns_t a, b;
	struct kernel_view ka, kb;

	target_open(&target, pid);
	snapshot(&target, &a);
	kernel_read(pid, &ka);
	sleep_s(seconds);
	snapshot(&target, &b);
	kernel_read(pid, &kb);
	if (a.window_start_ns != b.window_start_ns || b.counted_ns <= a.counted_ns)
		die("the window was reset during the measurement", 0);

	/* Over counted_ns's growth, the divisor thread_db_stats.h gives. */
	double w = (double)(b.counted_ns - a.counted_ns);
	double kw = (double)(kb.at_ns - ka.at_ns);
	double runnable = (b.runnable_ns - a.runnable_ns) / w;
	double lwps = (b.lwps_ns - a.lwps_ns) / w;
	double k_runnable = (kb.runnable_ns - ka.runnable_ns) / kw;
	double k_lwps = (ka.tasks + kb.tasks) / 2.0;

	printf("compare tdstat %.3f %.3f %.3f %.3f kernel %.3f %.3f %.3f %.3f window %.3f\n",
	       runnable, (b.running_ns - a.running_ns) / w, lwps, lwps - runnable,
	       k_runnable, (kb.cpu_ns - ka.cpu_ns) / kw, k_lwps, k_lwps - k_runnable, w / 1e9);
	target_close(&target);
	return 0;
}

/* One run of argv: its wall time in ms, with a never-expiring timer on
 * its process CPU clock when `armed` (the kernel then keeps the
 * process's running total, and every thread of it adds to it). */
static double armed_run(char **argv, bool armed)
{
	int go[2];
	pid_t pid;
	char byte = 0;

	if (pipe(go) != 0)
		die("pipe", errno);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &byte, 1) != 1)
			_exit(127);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, STDOUT_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(go[0]);
	timer_t timer;
	if (armed) {
		struct sigevent event = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGURG };
		struct itimerspec never = { .it_value = { .tv_sec = (time_t)1 << 40 } };

		if (timer_create(tdstat_process_cpu_clock(pid), &event, &timer) != 0)
			die("timer_create", errno);
		if (timer_settime(timer, TIMER_ABSTIME, &never, NULL) != 0)
			die("timer_settime", errno);
	}
	uint64_t start = monotonic_ns();
	if (write(go[1], &byte, 1) != 1)
		die("write", errno);
	close(go[1]);
	int status;
	waitpid(pid, &status, 0);
	double ms = (monotonic_ns() - start) / 1e6;
	if (armed)
		timer_delete(timer);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("the command failed", status);
	return ms;
}

static int run_armed(long runs, char **argv)
{
	double *bare = calloc(runs, sizeof(*bare)), *armed = calloc(runs, sizeof(*armed));

	for (long i = 0; i < runs; i++) {
		/* Alternate which goes first, so a drift of the machine's load
		 * falls on both alike. */
		if (i % 2) {
			armed[i] = armed_run(argv, true);
			bare[i] = armed_run(argv, false);
		} else {
			bare[i] = armed_run(argv, false);
			armed[i] = armed_run(argv, true);
		}
	}
	qsort(bare, runs, sizeof(*bare), compare_doubles);
	qsort(armed, runs, sizeof(*armed), compare_doubles);
	printf("armed %ld %.3f %.3f %.2f min %.3f %.3f\n", runs, bare[runs / 2], armed[runs / 2],
	       100 * (armed[runs / 2] / bare[runs / 2] - 1), bare[0], armed[0]);
	free(bare);
	free(armed);
	return 0;
}

static int run_print(double hz, long bytes, double seconds)
{
	char *text = malloc(bytes > 0 ? (size_t)bytes : 1);
	struct timespec next;
	long lines = (long)(hz * seconds);

	if (!text || hz <= 0 || bytes < 0)
		return 2;
	/* Rows of 100 bytes, as a table's are about. */
	memset(text, 'x', (size_t)bytes);
	for (long i = 99; i < bytes; i += 100)
		text[i] = '\n';
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long line = 0; line < lines; line++) {
		long ns = next.tv_nsec + (long)(1e9 / hz);

		next.tv_sec += ns / 1000000000;
		next.tv_nsec = ns % 1000000000;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		for (long done = 0; done < bytes;) {
			ssize_t n = write(1, text + done, (size_t)(bytes - done));

			if (n <= 0) {
				free(text);
				return 1;
			}
			done += n;
		}
	}
	free(text);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "print") == 0)
		return run_print(atof(argv[2]), atol(argv[3]), atof(argv[4]));
	if (argc >= 4 && strcmp(argv[1], "armed") == 0)
		return run_armed(atol(argv[2]) > 0 ? atol(argv[2]) : 1, argv + 3);
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "cost") == 0)
		return run_cost(argv[2], argv[3], argv[4], atol(argv[5]), argc == 7 ? argv[6] : "condvar");
	if ((argc == 7 || argc == 8) && (strcmp(argv[1], "sample") == 0 || strcmp(argv[1], "walk") == 0))
		return run_sample(argv[2], argv[3], argv[4], atof(argv[5]), atof(argv[6]),
				  argc == 8 ? argv[7] : "condvar", strcmp(argv[1], "walk") == 0);
	if (argc == 6 && strcmp(argv[1], "iter") == 0)
		return run_iter(argv[2], argv[3], argv[4], atol(argv[5]));
	if (argc == 4 && strcmp(argv[1], "compare") == 0)
		return run_compare((pid_t)atol(argv[2]), atof(argv[3]));
	fprintf(stderr, "usage: agentbench cost SHIM WORKLOAD THREADS CALLS [MODE]\n"
			"       agentbench sample SHIM WORKLOAD THREADS HZ SECONDS [MODE]\n"
			"       agentbench walk SHIM WORKLOAD THREADS HZ SECONDS [MODE]\n"
			"       agentbench iter SHIM WORKLOAD THREADS CALLS\n"
			"       agentbench compare PID SECONDS\n"
			"       agentbench print HZ BYTES SECONDS\n"
			"       agentbench armed RUNS COMMAND [ARGS...]\n");
	return 2;
}
