/* SPDX-License-Identifier: MIT */
/*
 * Every error: one line on stderr naming the cause and the fix, exit 1;
 * bad usage exits 2.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command.h"

/* Runs tdstat args, expects `code` and one line containing each needle. */
static void expect_error(const char *const args[], int code, const char *const needles[])
{
	char *output;

	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), code, "output: %s", output);
	cr_assert_eq(count_lines(output), 1, "one line: %s", output);
	cr_assert_eq(strncmp(output, "tdstat: ", 8), 0, "%s", output);
	for (size_t i = 0; needles && needles[i]; i++)
		cr_assert_not_null(strstr(output, needles[i]), "'%s' not in: %s", needles[i], output);
	free(output);
}

/* A PID that existed a moment ago. */
static pid_t vanished_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

Test(errors, no_such_process)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", (int)vanished_pid());
	const char *const args[] = { pid, NULL };
	const char *const needles[] = { "no such process", pid, NULL };
	expect_error(args, 1, needles);
	const char *const enable[] = { "enable", pid, NULL };
	expect_error(enable, 1, needles);
}

Test(errors, target_without_the_shim)
{
	struct tdtest_child target;
	char pid[16];

	cr_assert_eq(start_target(&target, false, false), 0);
	snprintf(pid, sizeof(pid), "%d", (int)target.pid);
	const char *const args[] = { "-c", "1", pid, NULL };
	const char *const needles[] = { "libtdshim.so", "tdstat run -- CMD", "LD_PRELOAD=", NULL };
	expect_error(args, 1, needles);
	stop_target(&target);
}

Test(errors, permission_denied_for_another_user)
{
	struct tdtest_child target;
	char pid[16], *output;
	int status;

	cr_assert_eq(start_target(&target, true, true), 0);
	snprintf(pid, sizeof(pid), "%d", (int)target.pid);
	const char *const args[] = { "-c", "1", pid, NULL };
	status = run_tdstat_as_nobody(args, &output);
	stop_target(&target);
	if (status == -2)
		cr_skip_test("needs root and setpriv to run tdstat as nobody");
	if (exit_code(status) == 126 || exit_code(status) == 127 || !output ||
	    strncmp(output, "tdstat: ", 8) != 0)
		cr_skip_test("nobody cannot run the built tdstat here: %s", output ? output : "");
	cr_assert_eq(exit_code(status), 1, "output: %s", output);
	cr_assert_eq(count_lines(output), 1, "one line: %s", output);
	cr_assert_not_null(strstr(output, "permission denied"), "%s", output);
	cr_assert_not_null(strstr(output, "ptrace"), "says why: %s", output);
	free(output);
}

Test(errors, command_without_the_shim_file)
{
	const char *const args[] = { "run", "--", "true", NULL };
	const char *const needles[] = { "TDSTAT_SHIM", NULL };
	char *output;
	int status;

	setenv("TDSTAT_SHIM", "/nonexistent/libtdshim.so", 1);
	status = run_tdstat_merged(args, &output);
	unsetenv("TDSTAT_SHIM");
	cr_assert_eq(exit_code(status), 1, "%s", output);
	cr_assert_not_null(strstr(output, needles[0]), "%s", output);
	free(output);
}

/* A thread's ID given as the PID: the line names the process to use. */
Test(errors, thread_id_names_its_process)
{
	struct tdtest_child target;
	char pid[16], tid[300] = "", path[64];
	struct dirent *entry;
	DIR *tasks;

	cr_assert_eq(start_target_mode(&target, "main-exits-stdin", true, true), 0);
	snprintf(pid, sizeof(pid), "%d", (int)target.pid);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)target.pid);
	tasks = opendir(path);
	cr_assert_not_null(tasks);
	while ((entry = readdir(tasks)) != NULL)
		if (entry->d_name[0] != '.' && strcmp(entry->d_name, pid) != 0)
			snprintf(tid, sizeof(tid), "%s", entry->d_name);
	closedir(tasks);
	cr_assert_neq(tid[0], '\0', "the target has a second thread");
	const char *const args[] = { "-c", "1", tid, NULL };
	const char *const needles[] = { tid, "is a thread of process", pid, NULL };
	expect_error(args, 1, needles);
	const char *const reset[] = { "reset", tid, NULL };
	expect_error(reset, 1, needles);
	stop_target(&target);
}

/* PID 2 is kthreadd on Linux; a kernel thread runs no program. */
Test(errors, kernel_thread)
{
	char buffer[512] = "", *close_paren;
	unsigned long flags = 0;
	FILE *stat = fopen("/proc/2/stat", "r");

	if (stat) {
		buffer[fread(buffer, 1, sizeof(buffer) - 1, stat)] = '\0';
		fclose(stat);
	}
	close_paren = strrchr(buffer, ')');
	if (!close_paren || sscanf(close_paren + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) != 1 ||
	    !(flags & 0x00200000ul))
		cr_skip_test("PID 2 is no kernel thread here (a PID namespace?)");
	const char *const args[] = { "-c", "1", "2", NULL };
	const char *const needles[] = { "PID 2 is a kernel thread", "runs no program", NULL };
	expect_error(args, 1, needles);
}

/* The shim is loaded but its constructor has not run yet (a library's
 * constructor runs first, and waits): not "another ABI version". */
Test(errors, shim_not_started_yet)
{
	char lock[] = "/tmp/tdstat-lock-XXXXXX", variable[64], line[128], pid[16];
	const char *const argv[] = { slow_start_path(), NULL };
	const char *const env[] = { "TDSTAT_ENABLE=1", variable, NULL };
	struct tdtest_spawn_options options = { .preload = tdtest_shim_path(), .env = env };
	struct tdtest_child target;
	int fd = mkostemp(lock, O_CLOEXEC), target_pid;

	cr_assert_geq(fd, 0);
	cr_assert_eq(flock(fd, LOCK_EX), 0);
	snprintf(variable, sizeof(variable), "SLOW_INIT_LOCK=%s", lock);
	cr_assert_eq(tdtest_spawn(&target, argv, &options), 0);
	cr_assert_gt(tdtest_read_line(&target, line, sizeof(line), COMMAND_TIMEOUT_MS), 0);
	cr_assert_eq(sscanf(line, "constructing %d", &target_pid), 1, "%s", line);
	snprintf(pid, sizeof(pid), "%d", target_pid);
	const char *const args[] = { "-c", "1", pid, NULL };
	const char *const needles[] = { pid, "has not finished starting", "try again", NULL };
	expect_error(args, 1, needles);
	flock(fd, LOCK_UN);
	close(fd);
	unlink(lock);
	cr_assert_eq(exit_code(tdtest_wait(&target, COMMAND_TIMEOUT_MS)), 0);
}

Test(usage, bad_usage_exits_2)
{
	const char *const none[] = { NULL };
	const char *const not_a_pid[] = { "abc", NULL };
	const char *const zero_pid[] = { "0", NULL };
	const char *const bad_interval[] = { "-i", "x", "1", NULL };
	const char *const bad_count[] = { "-c", "0", "1", NULL };
	const char *const unknown[] = { "--bogus", "1", NULL };
	const char *const two_pids[] = { "1", "2", NULL };
	const char *const run_nothing[] = { "run", NULL };
	const char *const run_dashes[] = { "run", "--", NULL };
	const char *const enable_nothing[] = { "enable", NULL };
	const char *const reset_extra[] = { "reset", "1", "2", NULL };
	const char *const missing_argument[] = { "run", "-o", NULL };
	const char *const *const cases[] = {
		none, not_a_pid, zero_pid, bad_interval, bad_count, unknown, two_pids,
		run_nothing, run_dashes, enable_nothing, reset_extra, missing_argument,
	};
	const char *const needles[] = { "tdstat --help", NULL };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_error(cases[i], 2, needles);
}

Test(usage, help_and_version)
{
	const char *const help[] = { "--help", NULL };
	const char *const version[] = { "--version", NULL };
	char *output;

	cr_assert_eq(exit_code(run_tdstat(help, &output)), 0);
	cr_assert_not_null(strstr(output, "Usage: tdstat"), "%s", output);
	free(output);
	cr_assert_eq(exit_code(run_tdstat(version, &output)), 0);
	cr_assert_eq(strncmp(output, "tdstat ", 7), 0, "%s", output);
	free(output);
}
