/* SPDX-License-Identifier: MIT */
/*
 * Idle time by kind of wait (docs/CONTRACT.md §2, §6): threads parked in known kinds
 * give idle_by exactly so, in JSON and in text; waits the shim cannot
 * see (OpenMP's inline futex) show as `untracked`, not as work.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"

/* The target of the running test, killed however the test ends (a failed
 * assertion ends it early), so no target outlives it. */
static pid_t running_target = -1;

static void kill_target(void)
{
	if (running_target > 0) {
		kill(running_target, SIGKILL);
		waitpid(running_target, NULL, 0);
	}
	running_target = -1;
}

TestSuite(kinds, .fini = kill_target);

static char *second_line(char *output)
{
	char *line = strchr(output, '\n');

	cr_assert_not_null(line, "output: %s", output);
	line++;
	cr_assert(*line, "output: %s", output);
	return line;
}

static void start(struct tdtest_child *child, const char *path, const char *const *env)
{
	const char *const argv[] = { path, "30", NULL };
	struct tdtest_spawn_options options = { .preload = tdtest_shim_path(), .env = env };
	char line[64];

	cr_assert_eq(tdtest_spawn(child, argv, &options), 0);
	running_target = child->pid;
	cr_assert_geq(tdtest_read_line(child, line, sizeof(line), COMMAND_TIMEOUT_MS), 0);
	cr_assert_str_eq(line, "ready");
}

static void expect_kind(const char *line, const char *kind, double expected)
{
	double value = -1;

	cr_assert(json_number(line, kind, &value), "no %s in %s", kind, line);
	cr_assert(value > expected - 0.05 && value < expected + 0.05, "%s: %.3f, expected %.2f +- 0.05: %s", kind,
		  value, expected, line);
}

Test(kinds, parked_threads_idle_by_kind)
{
	static const char *const env[] = { "TDSTAT_ENABLE=1", NULL };
	struct tdtest_child target;
	char pid[16], *output, *line;
	double value, sum = 0;

	start(&target, KINDS_WORKLOAD_PATH, env);
	snprintf(pid, sizeof(pid), "%d", (int)target.pid);
	tdtest_sleep_ms(200);
	const char *const args[] = { "--json", "-i", "0.5", "-c", "2", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat(args, &output)), 0);
	line = second_line(output);
	expect_kind(line, "cond", 2);
	expect_kind(line, "mutex", 1);
	expect_kind(line, "sleep", 1);
	expect_kind(line, "io", 1);
	expect_kind(line, "join", 1);
	cr_assert(json_number(line, "runnable", &value) && value < 0.05, "%s", line);
	/* The kinds share out idle exactly. */
	static const char *const kinds[] = { "mutex", "rwlock", "cond", "sem", "barrier", "join",
					     "futex", "sleep", "io", "child", "signal" };
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		cr_assert(json_number(line, kinds[k], &value), "no %s in %s", kinds[k], line);
		sum += value;
	}
	cr_assert(json_number(line, "idle", &value) && value > sum - 1e-4 && value < sum + 1e-4,
		  "idle %.6f, kinds %.6f: %s", value, sum, line);
	cr_assert(json_number(line, "untracked", &value) && value < 0.1, "%s", line);
	free(output);

	/* The text row names the kinds, heaviest first. */
	const char *const text_args[] = { "-i", "0.3", "-c", "2", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat(text_args, &output)), 0);
	cr_assert_not_null(strstr(output, "IDLE BY KIND"), "%s", output);
	cr_assert_not_null(strstr(output, "cond 2.0"), "%s", output);
	free(output);
	kill(target.pid, SIGKILL);
	tdtest_wait(&target, COMMAND_TIMEOUT_MS);
}

#ifdef UNTRACKED_WORKLOAD_PATH
Test(kinds, openmp_barrier_waits_are_untracked_not_work)
{
	static const char *const env[] = { "TDSTAT_ENABLE=1", "OMP_WAIT_POLICY=passive", NULL };
	struct tdtest_child target;
	char pid[16], *output, *line;
	double value;

	start(&target, UNTRACKED_WORKLOAD_PATH, env);
	snprintf(pid, sizeof(pid), "%d", (int)target.pid);
	tdtest_sleep_ms(200);
	const char *const args[] = { "--json", "-i", "0.5", "-c", "2", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat(args, &output)), 0);
	line = second_line(output);
	/* Two threads asleep in libgomp's barrier: runnable for the shim,
	 * asleep for the kernel. */
	cr_assert(json_number(line, "untracked", &value) && value > 1.7 && value < 2.1, "%s", line);
	free(output);
	const char *const text_args[] = { "-i", "0.3", "-c", "2", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat(text_args, &output)), 0);
	cr_assert_not_null(strstr(output, "untracked 2.0"), "%s", output);
	free(output);
	kill(target.pid, SIGKILL);
	tdtest_wait(&target, COMMAND_TIMEOUT_MS);
}
#endif

/* Two copies of the shim preloaded, in either order: the second stands
 * down and points at the first's region, and tdstat reads that one,
 * whichever copy its symbol lookup finds (issue 10, item 8). */
static void read_two_copies(bool copy_first)
{
	static const char *const env[] = { "TDSTAT_ENABLE=1", NULL };
	char directory[] = "/tmp/tdstat-copies-XXXXXX", copy[256], preload[4096], command[4400];
	struct tdtest_child target;
	char pid[16], *output;
	double value;

	cr_assert_not_null(mkdtemp(directory));
	snprintf(copy, sizeof(copy), "%s/libtdshim.so", directory);
	snprintf(command, sizeof(command), "cp '%s' '%s'", tdtest_shim_path(), copy);
	cr_assert_eq(system(command), 0);
	snprintf(preload, sizeof(preload), "%s:%s", copy_first ? copy : tdtest_shim_path(),
		 copy_first ? tdtest_shim_path() : copy);
	const char *const argv[] = { KINDS_WORKLOAD_PATH, NULL };
	struct tdtest_spawn_options options = { .preload = preload, .env = env };
	char line[64];

	cr_assert_eq(tdtest_spawn(&target, argv, &options), 0);
	running_target = target.pid;
	cr_assert_geq(tdtest_read_line(&target, line, sizeof(line), COMMAND_TIMEOUT_MS), 0);
	snprintf(pid, sizeof(pid), "%d", (int)target.pid);
	tdtest_sleep_ms(200);
	const char *const args[] = { "--json", "-c", "1", pid, NULL };
	cr_assert_eq(exit_code(run_tdstat(args, &output)), 0, "%s", output);
	cr_assert(json_number(output, "nthreads", &value) && value == 6, "%s", output);
	free(output);
	kill(target.pid, SIGKILL);
	tdtest_wait(&target, COMMAND_TIMEOUT_MS);
	unlink(copy);
	rmdir(directory);
}

Test(kinds, two_copies_of_the_shim_read_once) { read_two_copies(false); }
Test(kinds, two_copies_of_the_shim_read_once_either_order) { read_two_copies(true); }
