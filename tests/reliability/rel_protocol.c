/* SPDX-License-Identifier: MIT */
/*
 * rel_protocol: regressions for the record protocol between the shim and
 * the agent (docs/CONTRACT.md §4: "Readable whatever the writer does", "Monotonic").
 * Black box: each mode starts rel_protocol_target with the shim preloaded
 * in its environment only, and reads it through libc_db and libtdstat_ps.
 *
 *   torn-jump        siglongjmp out of a wrapper in the middle of a record
 *                    write: snapshots must keep succeeding
 *   torn-cancel      asynchronous cancellation in the middle of one
 *   stopped-writer   the target stopped (SIGSTOP) in the middle of one:
 *                    every snapshot taken while it is stopped succeeds
 *   monotonic        back-to-back snapshots: no integral ever goes down
 *   jump-recovery-deeper, jump-recovery-level
 *                    after siglongjmp out of pause(), later waits (from a
 *                    deeper frame; from main's frame) count as usual
 *
 * Exit status 0 when every check held, 1 otherwise.  CI=true selects the
 * short versions.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rel_series.h"
#include "rel_support.h"
#include "tdtest.h"

#ifndef REL_PROTOCOL_TARGET_PATH
#error "REL_PROTOCOL_TARGET_PATH must name rel_protocol_target"
#endif

#define LINE_TIMEOUT_MS 60000

struct target {
	struct tdtest_child child;
	struct rel_agent agent;
};

/* Starts rel_protocol_target MODE ARGUMENT, gathering on from its start,
 * and opens an agent on it once it said "ready". */
static bool target_start(struct target *target, const char *mode, const char *argument)
{
	const char *argv[] = { REL_PROTOCOL_TARGET_PATH, mode, argument, NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct tdtest_spawn_options spawn = { .preload = tdtest_shim_path(), .env = env, .pipe_stdin = true };
	char ready[128];
	td_err_e err;

	if (tdtest_spawn(&target->child, argv, &spawn) != 0) {
		rel_fail("cannot start rel_protocol_target: %s", strerror(errno));
		return false;
	}
	if (tdtest_read_line(&target->child, ready, sizeof(ready), LINE_TIMEOUT_MS) < 0 || strncmp(ready, "ready", 5)) {
		rel_fail("rel_protocol_target %s: no ready line", mode);
		tdtest_wait(&target->child, 1000);
		return false;
	}
	err = rel_agent_open(&target->agent, target->child.pid, 10000);
	if (err != TD_OK) {
		rel_fail("rel_protocol_target %s: td_ta_new: %s", mode, rel_td_name(err));
		tdtest_wait(&target->child, 1000);
		return false;
	}
	return true;
}

static void target_end(struct target *target)
{
	int status;

	kill(target->child.pid, SIGCONT);
	if (write(target->child.stdin_fd, "exit\n", 5) != 5)
		rel_fail("cannot tell rel_protocol_target to exit");
	status = tdtest_wait(&target->child, 60000);
	rel_agent_close(&target->agent);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rel_fail("rel_protocol_target ended with status 0x%x", status);
}

/* Whether line starts with `prefix` followed by a number; *value gets it. */
static bool parse_count(const char *line, const char *prefix, long *value)
{
	size_t length = strlen(prefix);

	if (strncmp(line, prefix, length))
		return false;
	*value = atol(line + length);
	return true;
}

/*
 * Readability while the writers run: no lasting error episode.  A
 * transient one (the next snapshot, or one within 100 ms, succeeds) is
 * allowed and reported: a reader may give up on a record that a running
 * writer rewrites faster than it can copy it, and try again.
 */
static void check_readable(const char *test, const struct rel_series *series)
{
	if (series->lasting)
		rel_fail("%s: %ld lasting error episodes (%ld of %ld snapshots failed, first %s): a reader "
			 "blinded for good",
			 test, series->lasting, series->failed, series->snapshots, rel_td_name(series->first_error));
	if (series->broken)
		rel_fail("%s: %ld snapshots broke an invariant", test, series->broken);
}

/* What the target had done when snapshots first failed. */
struct failure_progress {
	long first_failure;     /* -1: none */
	long first_lasting;     /* -1: none */
	long run_start;         /* of the current run of failures */
	bool failing;
};

static void note_progress(struct failure_progress *at, const struct rel_series *series, long lasting_before,
			  td_err_e err, long progress)
{
	if (series->lasting > lasting_before && at->first_lasting < 0)
		at->first_lasting = at->run_start;
	if (err == TD_OK) {
		at->failing = false;
		return;
	}
	if (!at->failing)
		at->run_start = progress;
	at->failing = true;
	if (at->first_failure < 0)
		at->first_failure = progress;
}

/* Snapshots while the target works through its progress lines, until
 * `done_prefix` and half a second after it.  *progress: the last count
 * seen. */
static bool watch_progress(struct target *target, struct rel_series *series, const char *progress_prefix,
			   const char *done_prefix, long *progress, struct failure_progress *at, char *done_line,
			   size_t done_size)
{
	uint64_t deadline = tdtest_monotonic_ns() + 120 * 1000000000ull, done_at = 0;
	long lasting_before;

	*progress = 0;
	*at = (struct failure_progress){ .first_failure = -1, .first_lasting = -1 };
	for (;;) {
		uint64_t now = tdtest_monotonic_ns();
		char line[128];
		int got;

		while ((got = tdtest_read_line(&target->child, line, sizeof(line), 0)) >= 0) {
			if (parse_count(line, done_prefix, progress)) {
				done_at = now;
				snprintf(done_line, done_size, "%s", line);
			}
			else
				parse_count(line, progress_prefix, progress);
		}
		if (got == -1) {
			rel_fail("%s: the target ended early", series->name);
			return false;
		}
		lasting_before = series->lasting;
		note_progress(at, series, lasting_before, rel_series_take(series, target->agent.ta, NULL), *progress);
		if (done_at && now > done_at + 500 * 1000000ull)
			break;
		if (now > deadline) {
			rel_fail("%s: the target did not finish in 120 s (at %ld)", series->name, *progress);
			return false;
		}
		usleep(200);
	}
	lasting_before = series->lasting;
	rel_series_finish(series);
	note_progress(at, series, lasting_before, TD_OK, *progress);
	return true;
}

static void print_failure_progress(const struct failure_progress *at, const char *what, long step)
{
	if (at->first_failure >= 0)
		printf("; first failure after %ld-%ld %s", at->first_failure, at->first_failure + step, what);
	if (at->first_lasting >= 0)
		printf("; the first lasting one began after %ld-%ld %s", at->first_lasting, at->first_lasting + step,
		       what);
	printf("\n");
}

/* ---- defect 1: a record torn by siglongjmp ---- */

static void torn_jump(void)
{
	const char *signals = rel_ci() ? "2000" : "5000";
	struct rel_series series;
	struct target target;
	struct failure_progress at;
	char done[128];
	long sent;
	char summary[512];

	/* main, the signaller, and a spinner per 200 signals */
	rel_series_init(&series, "torn-jump", 2 + (uint64_t)(atol(signals) + 199) / 200);
	if (!target_start(&target, "jump-spin", signals))
		return;
	if (watch_progress(&target, &series, "signals ", "done signals ", &sent, &at, done, sizeof(done))) {
		check_readable("torn-jump", &series);
		printf("torn-jump: %ld signals siglongjmp'ed out of the shim's wrapper; %s", sent,
		       rel_series_summary(&series, summary, sizeof(summary)));
		print_failure_progress(&at, "signals", 50);
	}
	target_end(&target);
}

/* ---- defect 1: a record torn by asynchronous cancellation ---- */

/* Polls until nthreads == want. */
static bool nthreads_becomes(struct target *target, struct rel_series *series, int want, int *last)
{
	td_ta_stats_ns_t stats;

	*last = -1;
	for (int i = 0; i < 400; i++) {
		if (rel_series_take(series, target->agent.ta, &stats) == TD_OK && (*last = stats.nthreads) == want)
			return true;
		tdtest_sleep_ms(5);
	}
	return false;
}

static void torn_cancel(void)
{
	const char *threads = rel_ci() ? "1000" : "3000";
	struct rel_series series;
	struct target target;
	struct failure_progress at;
	char done[128] = "";
	long cancelled;
	char summary[512];
	int n;

	/* main, a victim, a parker per 100 victims */
	rel_series_init(&series, "torn-cancel", 2 + (uint64_t)atol(threads) / 100);
	if (!target_start(&target, "async-cancel", threads))
		return;
	if (watch_progress(&target, &series, "cancelled ", "done cancelled ", &cancelled, &at, done,
			   sizeof(done))) {
		char *parked_text = strstr(done, " parked ");
		int want = 1 + (parked_text ? atoi(parked_text + 8) : 0);

		if (!nthreads_becomes(&target, &series, want, &n))
			rel_fail("torn-cancel: nthreads %d after every victim was cancelled and joined, want %d "
				 "(main and the parked threads; -1: no snapshot succeeded)",
				 n, want);
		rel_series_finish(&series);
		check_readable("torn-cancel", &series);
		printf("torn-cancel: %ld threads cancelled asynchronously in short waits; %s; nthreads at the end %d "
		       "(want %d)",
		       cancelled, rel_series_summary(&series, summary, sizeof(summary)), n, want);
		print_failure_progress(&at, "threads", 10);
	}
	target_end(&target);
}

/* ---- defect 2: a writer stopped in the middle of a record write ---- */

static bool wait_stopped(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, WUNTRACED) < 0)
		if (errno != EINTR)
			return false;
	return WIFSTOPPED(status);
}

static void stopped_writer(void)
{
	int cycles = rel_ci() ? 1500 : 5000;
	struct rel_series series;
	struct target target;
	unsigned int seed = 2026;
	long failed_stops = 0;
	char summary[512];
	int stops = 0;

	rel_series_init(&series, "stopped-writer", 9);
	if (!target_start(&target, "short-waits", "8"))
		return;
	for (; stops < cycles; stops++) {
		long failed_before = series.failed;

		usleep(200 + rand_r(&seed) % 5000);
		if (kill(target.child.pid, SIGSTOP) != 0 || !wait_stopped(target.child.pid)) {
			rel_fail("stopped-writer: the target did not stop (%s)", strerror(errno));
			break;
		}
		/* Nothing in the target moves now: every record is as it will
		 * stay until SIGCONT, some of them in the middle of a write. */
		for (int i = 0; i < 3; i++)
			rel_series_take(&series, target.agent.ta, NULL);
		if (series.failed != failed_before)
			failed_stops++;
		kill(target.child.pid, SIGCONT);
	}
	rel_series_finish(&series);
	if (series.failed)
		rel_fail("stopped-writer: %ld of %ld snapshots taken while the target was stopped failed (%s), "
			 "in %ld of %d stops",
			 series.failed, series.snapshots, rel_td_name(series.first_error), failed_stops, stops);
	if (series.broken)
		rel_fail("stopped-writer: %ld snapshots broke an invariant", series.broken);
	printf("stopped-writer: %d stops of 8 threads in short waits, 3 snapshots in each; %s; %ld stops with a "
	       "failure\n",
	       stops, rel_series_summary(&series, summary, sizeof(summary)), failed_stops);
	target_end(&target);
}

/* ---- defect 3: integrals that go down ---- */

static void monotonic(void)
{
	double seconds = rel_seconds("TDSTAT_MONOTONIC_SECONDS", 5, 10);
	struct rel_series series;
	struct target target;
	char summary[512];
	uint64_t end;

	rel_series_init(&series, "monotonic", 5);
	if (!target_start(&target, "short-waits", "4"))
		return;
	end = tdtest_monotonic_ns() + (uint64_t)(seconds * 1e9);
	while (tdtest_monotonic_ns() < end)
		rel_series_take(&series, target.agent.ta, NULL);
	rel_series_finish(&series);
	if (series.decreases)
		rel_fail("monotonic: %ld of %ld consecutive snapshot pairs of one window went down; largest "
			 "decrease %s by %llu ns",
			 series.decreases, series.pairs, series.largest_field,
			 (unsigned long long)series.largest_decrease);
	if (series.pairs < 100)
		rel_fail("monotonic: only %ld snapshot pairs in %.0f s", series.pairs, seconds);
	check_readable("monotonic", &series);
	printf("monotonic: %.0f s of back-to-back snapshots of 4 threads in short waits; %s\n", seconds,
	       rel_series_summary(&series, summary, sizeof(summary)));
	target_end(&target);
}

/* ---- defect 4: waits after a siglongjmp out of one ---- */

#define MEASURE_DELAY_MS 250
#define MEASURE_MS 3000
#define ALTERNATION_MS 4000

static void jump_recovery(const char *variant)
{
	char name[64], line[128];
	struct rel_series series;
	struct target target;
	td_ta_stats_ns_t a, b;
	uint64_t begin;
	double runnable, lwps, seconds;

	snprintf(name, sizeof(name), "jump-recovery-%s", variant);
	rel_series_init(&series, name, 1);
	if (!target_start(&target, "jump-recovery", variant))
		return;
	if (tdtest_read_line(&target.child, line, sizeof(line), LINE_TIMEOUT_MS) < 0 || strcmp(line, "begin")) {
		rel_fail("%s: no begin line", name);
		target_end(&target);
		return;
	}
	begin = tdtest_monotonic_ns();
	/* Three whole periods of 0.5 s on a CPU and 0.5 s in usleep: the
	 * thread is RUNNABLE half of that span whatever its phase. */
	tdtest_sleep_ms(MEASURE_DELAY_MS);
	if (rel_series_take(&series, target.agent.ta, &a) != TD_OK) {
		rel_fail("%s: first snapshot failed", name);
		target_end(&target);
		return;
	}
	tdtest_sleep_ms(MEASURE_MS);
	if (rel_series_take(&series, target.agent.ta, &b) != TD_OK) {
		rel_fail("%s: second snapshot failed", name);
		target_end(&target);
		return;
	}
	if (tdtest_monotonic_ns() - begin > (uint64_t)ALTERNATION_MS * 1000000u)
		rel_fail("%s: the measurement overran the target's alternation (a very slow machine)", name);
	if (b.window_start_ns != a.window_start_ns || b.counted_ns <= a.counted_ns || b.lwps_ns < a.lwps_ns ||
	    b.runnable_ns < a.runnable_ns) {
		rel_fail("%s: snapshots not of one growing window", name);
		target_end(&target);
		return;
	}
	/* The divisor thread_db_stats.h gives: counted_ns's growth. */
	seconds = (double)(b.counted_ns - a.counted_ns) / 1e9;
	lwps = (double)(b.lwps_ns - a.lwps_ns) / (double)(b.counted_ns - a.counted_ns);
	runnable = b.lwps_ns > a.lwps_ns ? (double)(b.runnable_ns - a.runnable_ns) / (double)(b.lwps_ns - a.lwps_ns)
					 : 0;
	if (runnable < 0.35 || runnable > 0.65)
		rel_fail("%s: over %.2f s the thread was RUNNABLE %.4f of its time, want 0.50 +- 0.15 (the wait "
			 "after siglongjmp is not counted)",
			 name, seconds, runnable);
	if (lwps < 0.9 || lwps > 1.1 || b.nthreads != 1)
		rel_fail("%s: %.3f threads tracked on average, nthreads %d; want 1", name, lwps, b.nthreads);
	printf("%s: siglongjmp out of pause(), then 0.5 s spinning / 0.5 s waiting: over %.2f s the thread was "
	       "RUNNABLE %.4f of its time (want 0.50 +- 0.15), tracked %.3f threads\n",
	       name, seconds, runnable, lwps);
	target_end(&target);
}

static void jump_recovery_deeper(void)
{
	jump_recovery("deeper");
}

static void jump_recovery_level(void)
{
	jump_recovery("level");
}

static void on_alarm(int number)
{
	static const char message[] = "rel_protocol: still running after the watchdog's limit: a hang\n";

	(void)number;
	if (write(2, message, sizeof(message) - 1) < 0)
		_exit(4);
	_exit(4);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(void);
	} modes[] = {
		{ "torn-jump", torn_jump },
		{ "torn-cancel", torn_cancel },
		{ "stopped-writer", stopped_writer },
		{ "monotonic", monotonic },
		{ "jump-recovery-deeper", jump_recovery_deeper },
		{ "jump-recovery-level", jump_recovery_level },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	for (size_t i = 0; argc == 2 && i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(argv[1], modes[i].name))
			continue;
		alarm((unsigned)rel_seconds("TDSTAT_MONOTONIC_SECONDS", 5, 10) + 240);
		modes[i].run();
		printf("%s: %d failures\n", argv[1], rel_failures);
		return rel_failures ? 1 : 0;
	}
	fprintf(stderr, "usage: rel_protocol torn-jump|torn-cancel|stopped-writer|monotonic|"
			"jump-recovery-deeper|jump-recovery-level\n");
	return 2;
}
