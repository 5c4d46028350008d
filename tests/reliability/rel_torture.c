/* SPDX-License-Identifier: MIT */
/*
 * rel_torture: the torture test of the record protocol, in the spirit of
 * liburcu's rcutorture.  It starts rel_torture_target (writers in every
 * kind of wait, interrupted by siglongjmp and asynchronous cancellation)
 * with the shim preloaded in its environment only, stops and continues it
 * at random, and meanwhile two reader threads, each with its own agent
 * (libc_db over libtdstat_ps), take snapshots back to back and check every
 * one (rel_series.h):
 *
 * - never an error that lasts: a failed snapshot is allowed only when the
 *   next one succeeds, or one within 100 ms does;
 * - never a decrease of an integral between a reader's consecutive
 *   snapshots of one window;
 * - the invariants always: running <= runnable <= lwps, idle = lwps -
 *   runnable, lwps <= window x (most threads alive), 0 <= nthreads <= that
 *   most; and the td_ta_get_stats fractions' own.
 *
 * Then it quiets the target and checks that its statistics go on: nthreads
 * is back to main + writers and the tracked-thread average over a second
 * matches it.
 *
 * Duration: TDSTAT_TORTURE_SECONDS, else 20 s with CI=true, 60 s otherwise.
 * Prints one summary line; exit status 0 when every check held.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rel_series.h"
#include "rel_support.h"
#include "tdtest.h"

#ifndef REL_TORTURE_TARGET_PATH
#error "REL_TORTURE_TARGET_PATH must name rel_torture_target"
#endif

#define WRITERS "6"
#define FODDER "3"
#define READERS 2
#define LINE_TIMEOUT_MS 60000

/* The least the chaos must have done for the run to count as torture. */
#define SIGNALS_MIN 100
#define CANCELS_MIN 50
#define STOPS_MIN 10

struct reader {
	pthread_t thread;
	pid_t pid;
	uint64_t max_threads;
	atomic_int *stop;
	struct rel_series series;
	long fraction_checks, fraction_broken;
	bool opened;
	char name[32];
};

/* td_ta_get_stats is checked every this many snapshots: its fractions come
 * from the same integrals. */
#define FRACTIONS_EVERY 16

static void *reader_main(void *argument)
{
	struct reader *reader = argument;
	struct rel_agent agent;

	if (rel_agent_open(&agent, reader->pid, 10000) != TD_OK)
		return NULL;
	reader->opened = true;
	while (!atomic_load(reader->stop)) {
		td_ta_stats_t stats;
		const char *why;

		rel_series_take(&reader->series, agent.ta, NULL);
		if (reader->series.snapshots % FRACTIONS_EVERY || td_ta_get_stats(agent.ta, &stats) != TD_OK)
			continue;
		reader->fraction_checks++;
		if ((why = rel_check_fractions(&stats)) != NULL && reader->fraction_broken++ < 5)
			fprintf(stderr, "%s: td_ta_get_stats: %s\n", reader->name, why);
	}
	rel_series_finish(&reader->series);
	rel_agent_close(&agent);
	return NULL;
}

/* Waits for the target to stop.  When it ended instead, says how: a
 * target that died under the chaos is the finding, not the stop. */
static bool wait_stopped(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, WUNTRACED) < 0)
		if (errno != EINTR) {
			rel_fail("torture: waitpid on the target: %s", strerror(errno));
			return false;
		}
	if (WIFSTOPPED(status))
		return true;
	if (WIFSIGNALED(status))
		rel_fail("torture: the target was killed by signal %d (%s)%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
	else if (WIFEXITED(status))
		rel_fail("torture: the target exited with status %d", WEXITSTATUS(status));
	return false;
}

/* Stops and continues the target at random until `end`.  Returns the
 * number of stops, -1 if the target could not be stopped. */
static long stop_and_continue(pid_t pid, uint64_t end)
{
	unsigned int seed = 1978;
	long stops = 0;

	while (tdtest_monotonic_ns() < end) {
		usleep(2000 + rand_r(&seed) % 30000);
		if (kill(pid, SIGSTOP) != 0) {
			rel_fail("torture: the target could not be stopped (%s)", strerror(errno));
			return -1;
		}
		if (!wait_stopped(pid))
			return -1;
		stops++;
		usleep(200 + rand_r(&seed) % 10000);
		if (kill(pid, SIGCONT) != 0) {
			rel_fail("torture: the target could not be continued (%s)", strerror(errno));
			return -1;
		}
	}
	return stops;
}

/* After the chaos: the writers and main alone, their statistics going on. */
static void check_goes_on(pid_t pid, int want_threads, int max_threads)
{
	struct rel_series series;
	struct rel_agent agent;
	td_ta_stats_ns_t a = { 0 }, b;
	bool have_a = false, have_b;
	double lwps;

	rel_series_init(&series, "torture after the chaos", (uint64_t)max_threads);
	if (rel_agent_open(&agent, pid, 10000) != TD_OK) {
		rel_fail("torture: no agent on the target after the chaos");
		return;
	}
	/* nthreads first: the last fodder thread ends a little after its join. */
	for (int i = 0; i < 200; i++) {
		have_a = rel_series_take(&series, agent.ta, &a) == TD_OK;
		if (have_a && a.nthreads == want_threads)
			break;
		tdtest_sleep_ms(10);
	}
	tdtest_sleep_ms(1000);
	have_b = rel_series_take(&series, agent.ta, &b) == TD_OK;
	rel_series_finish(&series);
	if (!have_a || !have_b) {
		rel_fail("torture: after the chaos, %ld of %ld snapshots failed (%s): the statistics did not go on",
			 series.failed, series.snapshots, rel_td_name(series.first_error));
	} else if (b.window_start_ns != a.window_start_ns || b.counted_ns <= a.counted_ns) {
		rel_fail("torture: after the chaos, the window did not grow");
	} else {
		/* Over counted_ns: the span the threads were counted up to
		 * (thread_db_stats.h), not window_ns. */
		lwps = (double)(b.lwps_ns - a.lwps_ns) / (double)(b.counted_ns - a.counted_ns);
		if (b.nthreads != want_threads || lwps < want_threads - 0.25 || lwps > want_threads + 0.25)
			rel_fail("torture: after the chaos, nthreads %d and %.3f threads tracked on average over "
				 "%.2f s, want %d",
				 b.nthreads, lwps, (double)(b.counted_ns - a.counted_ns) / 1e9, want_threads);
		else
			printf("torture: after the chaos: nthreads %d, %.3f threads tracked on average over %.2f s\n",
			       b.nthreads, lwps, (double)(b.counted_ns - a.counted_ns) / 1e9);
	}
	if (series.decreases || series.broken)
		rel_fail("torture: after the chaos, %ld decreases and %ld broken invariants", series.decreases,
			 series.broken);
	rel_agent_close(&agent);
}

static void on_alarm(int number)
{
	static const char message[] = "rel_torture: still running after the watchdog's limit: a hang\n";

	(void)number;
	if (write(2, message, sizeof(message) - 1) < 0)
		_exit(4);
	_exit(4);
}

int main(void)
{
	const char *argv[] = { REL_TORTURE_TARGET_PATH, WRITERS, FODDER, NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct tdtest_spawn_options spawn = { .preload = tdtest_shim_path(), .env = env, .pipe_stdin = true };
	double seconds = rel_seconds("TDSTAT_TORTURE_SECONDS", 20, 60);
	struct reader readers[READERS] = { 0 };
	struct rel_series all;
	struct tdtest_child child;
	atomic_int stop = 0;
	long signals = -1, jumps = -1, cancels = -1, stops, fraction_checks = 0, fraction_broken = 0;
	int writers, fodder, max_threads, status;
	char line[256];

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm((unsigned)seconds + 300);

	if (tdtest_spawn(&child, argv, &spawn) != 0) {
		fprintf(stderr, "torture: cannot start rel_torture_target: %s\n", strerror(errno));
		return 1;
	}
	if (tdtest_read_line(&child, line, sizeof(line), LINE_TIMEOUT_MS) < 0 ||
	    sscanf(line, "ready %d %d %d", &writers, &fodder, &max_threads) != 3) {
		fprintf(stderr, "torture: no ready line from the target\n");
		tdtest_wait(&child, 1000);
		return 1;
	}

	for (int i = 0; i < READERS; i++) {
		struct reader *reader = &readers[i];

		snprintf(reader->name, sizeof(reader->name), "reader %d", i + 1);
		reader->pid = child.pid;
		reader->stop = &stop;
		rel_series_init(&reader->series, reader->name, (uint64_t)max_threads);
		if (pthread_create(&reader->thread, NULL, reader_main, reader) != 0) {
			fprintf(stderr, "torture: cannot start a reader\n");
			return 1;
		}
	}
	double steal_start = tdtest_steal_s();
	uint64_t chaos_start = tdtest_monotonic_ns();

	stops = stop_and_continue(child.pid, chaos_start + (uint64_t)(seconds * 1e9));
	/* The host's steal over the chaos, in CPUs: a virtual CPU taken
	 * between a writer's counter read and its store is the one delay the
	 * kernel cannot see (docs/READER.md), so a decrease says it. */
	double steal = (tdtest_steal_s() - steal_start) / ((double)(tdtest_monotonic_ns() - chaos_start) / 1e9);
	kill(child.pid, SIGCONT);
	if (write(child.stdin_fd, "quiet\n", 6) != 6 ||
	    tdtest_read_line(&child, line, sizeof(line), LINE_TIMEOUT_MS) < 0 ||
	    sscanf(line, "quiet signals %ld jumps %ld cancels %ld", &signals, &jumps, &cancels) != 3)
		rel_fail("torture: the target did not quiet down");
	atomic_store(&stop, 1);
	rel_series_init(&all, "torture", (uint64_t)max_threads);
	for (int i = 0; i < READERS; i++) {
		pthread_join(readers[i].thread, NULL);
		if (!readers[i].opened)
			rel_fail("torture: %s could not open an agent", readers[i].name);
		rel_series_merge(&all, &readers[i].series);
		fraction_checks += readers[i].fraction_checks;
		fraction_broken += readers[i].fraction_broken;
	}

	printf("torture: %.0f s, %s writers, %s fodder threads, up to %d threads: snapshots %ld (%s %ld, %s %ld), "
	       "signals %ld (jumps %ld), cancels %ld, stops %ld, errors %ld (transient episodes %ld, lasting %ld), "
	       "decreases %ld (largest: %s by %llu ns), broken invariants %ld, fraction checks %ld (broken %ld), "
	       "steal %.2f CPUs\n",
	       seconds, WRITERS, FODDER, max_threads, all.snapshots, readers[0].name, readers[0].series.snapshots,
	       readers[1].name, readers[1].series.snapshots, signals, jumps, cancels, stops, all.failed,
	       all.transient, all.lasting, all.decreases, all.largest_field ? all.largest_field : "none",
	       (unsigned long long)all.largest_decrease, all.broken, fraction_checks, fraction_broken, steal);

	if (all.lasting)
		rel_fail("torture: %ld lasting error episodes (%ld of %ld snapshots failed, first %s)", all.lasting,
			 all.failed, all.snapshots, rel_td_name(all.first_error));
	if (all.decreases)
		rel_fail("torture: %ld decreases between consecutive snapshots of one window; largest %s by %llu ns "
			 "(steal over the run %.2f CPUs)",
			 all.decreases, all.largest_field, (unsigned long long)all.largest_decrease, steal);
	if (all.broken || fraction_broken)
		rel_fail("torture: %ld snapshots and %ld fraction checks broke an invariant", all.broken,
			 fraction_broken);
	if (signals < SIGNALS_MIN || jumps < SIGNALS_MIN / 2 || cancels < CANCELS_MIN || stops < STOPS_MIN)
		rel_fail("torture: too little chaos to mean anything: %ld signals, %ld jumps, %ld cancels, %ld stops",
			 signals, jumps, cancels, stops);
	if (all.snapshots - all.failed < 100)
		rel_fail("torture: only %ld successful snapshots", all.snapshots - all.failed);

	check_goes_on(child.pid, 1 + writers, max_threads);

	if (write(child.stdin_fd, "exit\n", 5) != 5)
		rel_fail("torture: cannot tell the target to exit");
	status = tdtest_wait(&child, 60000);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rel_fail("torture: the target ended with status 0x%x", status);
	printf("torture: %d failures\n", rel_failures);
	return rel_failures ? 1 : 0;
}
