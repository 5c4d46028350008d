/* SPDX-License-Identifier: MIT */
/*
 * `tdstat run`: the statistics of a known workload to its very end, as
 * JSON and as text, and the command's exit status passed through.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/capability.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "command.h"

static const char *const json_keys[] = {
	"pid", "nthreads", "r_concurrency",
	"nrunnable_num", "nrunnable_den", "a_concurrency_num", "a_concurrency_den",
	"nlwps_num", "nlwps_den", "nidle_num", "nidle_den",
	"runnable", "running", "lwps", "idle", "window_s",
};

struct run_result {
	double value[sizeof(json_keys) / sizeof(json_keys[0])];
};

static double field(const struct run_result *result, const char *key)
{
	for (size_t i = 0; i < sizeof(json_keys) / sizeof(json_keys[0]); i++)
		if (!strcmp(json_keys[i], key))
			return result->value[i];
	cr_assert_fail("no key %s", key);
	return NAN;
}

static char *read_file(const char *path)
{
	FILE *file = fopen(path, "r");
	char *text = calloc(1, 65536);

	cr_assert_not_null(file, "%s was not written", path);
	fread(text, 1, 65535, file);
	fclose(file);
	return text;
}

/* Checks every key and the invariants of docs/CONTRACT.md §2 on one JSON line. */
static void parse_json_line(const char *line, struct run_result *result)
{
	for (size_t i = 0; i < sizeof(json_keys) / sizeof(json_keys[0]); i++)
		cr_assert(json_number(line, json_keys[i], &result->value[i]),
			  "key %s missing in: %s", json_keys[i], line);
	cr_assert_eq(line[0], '{');
	cr_assert(field(result, "nlwps_den") > 0);
	cr_assert_eq(field(result, "nlwps_den"), field(result, "nrunnable_den"));
	cr_assert_eq(field(result, "nlwps_den"), field(result, "a_concurrency_den"));
	cr_assert_eq(field(result, "nlwps_den"), field(result, "nidle_den"));
	cr_assert_eq(field(result, "nidle_num"),
		     field(result, "nlwps_num") - field(result, "nrunnable_num"));
	cr_assert_leq(field(result, "a_concurrency_num"), field(result, "nrunnable_num"));
	cr_assert_leq(field(result, "nrunnable_num"), field(result, "nlwps_num"));
	cr_assert_leq(fabs(field(result, "runnable") -
			   field(result, "nrunnable_num") / field(result, "nrunnable_den")), 0.01);
	cr_assert_leq(fabs(field(result, "lwps") -
			   field(result, "nlwps_num") / field(result, "nlwps_den")), 0.01);
}

/* tdstat run --json -o FILE -- COMMAND...: its one JSON line, checked. */
static void run_json(const char *const command[], struct run_result *result)
{
	char path[] = "/tmp/tdstat-run-XXXXXX";
	const char *args[32] = { "run", "--json", "-o", path, "--" };
	size_t n = 5;
	int fd = mkstemp(path);
	char *output, *json;

	cr_assert_geq(fd, 0);
	close(fd);
	for (size_t i = 0; command[i] && n < 31; i++)
		args[n++] = command[i];
	args[n] = NULL;
	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 0, "output: %s", output);
	json = read_file(path);
	unlink(path);
	cr_assert_eq(count_lines(json), 1, "one JSON line expected: %s", json);
	parse_json_line(json, result);
	free(json);
	free(output);
}

/* tdstat run --json -o FILE -- workload KIND THREADS MS */
static void run_workload(const char *kind, const char *threads, const char *ms,
			 struct run_result *result)
{
	const char *const command[] = { workload_path(), kind, threads, ms, NULL };

	run_json(command, result);
}

Test(run, json_of_sleeping_threads)
{
	struct run_result result;

	run_workload("sleepers", "4", "500", &result);
	cr_assert_gt(field(&result, "pid"), 0);
	/* Read at the exit stop: the sleepers are joined, main is alone. */
	cr_assert_eq(field(&result, "nthreads"), 1);
	cr_assert_eq(field(&result, "r_concurrency"), 0);
	cr_assert_geq(field(&result, "window_s"), 0.45);
	cr_assert_gt(field(&result, "lwps"), 3.0, "5 threads for most of the run");
	cr_assert_leq(field(&result, "lwps"), 5.0 + 1e-3);
	cr_assert_lt(field(&result, "runnable"), 1.0, "everyone sleeps or joins");
	cr_assert_gt(field(&result, "idle"), 2.5);
	cr_assert_leq(field(&result, "running"), field(&result, "runnable") + 1e-6);
}

Test(run, json_of_spinning_threads)
{
	struct run_result result;

	run_workload("spinners", "2", "500", &result);
	cr_assert_gt(field(&result, "runnable"), 1.5, "two spinners runnable");
	cr_assert_gt(field(&result, "running"), 0.0, "they used CPU");
	cr_assert_leq(field(&result, "running"), field(&result, "runnable") + 1e-6);
	cr_assert_leq(field(&result, "runnable"), field(&result, "lwps") + 1e-6);
}

Test(run, text_summary_on_stderr)
{
	const char *const args[] = { "run", "--", workload_path(), "sleepers", "1", "10", NULL };
	char *output;

	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 0);
	cr_assert_not_null(strstr(output, "Thread statistics"), "output: %s", output);
	cr_assert_not_null(strstr(output, "nrunnable"), "output: %s", output);
	free(output);
	/* Nothing of it on stdout. */
	cr_assert_eq(exit_code(run_tdstat(args, &output)), 0);
	cr_assert_null(strstr(output, "Thread statistics"), "stdout: %s", output);
	free(output);
}

Test(run, passes_exit_status_through)
{
	const char *const args[] = { "run", "--", "sh", "-c", "exit 7", NULL };
	char *output;

	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 7, "output: %s", output);
	free(output);
}

Test(run, passes_signal_as_128_plus_n)
{
	const char *const args[] = { "run", "--", "sh", "-c", "kill -TERM $$", NULL };
	char *output;

	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 128 + 15, "output: %s", output);
	cr_assert_not_null(strstr(output, "Thread statistics"),
			   "statistics even after a signal: %s", output);
	free(output);
}

Test(run, command_not_found_is_127)
{
	const char *const args[] = { "run", "--", "/nonexistent/command", NULL };
	char *output;

	cr_assert_eq(exit_code(run_tdstat_merged(args, &output)), 127, "output: %s", output);
	cr_assert_eq(count_lines(output), 1, "one line: %s", output);
	free(output);
}

/* main() calls pthread_exit at once; two threads sleep 500 ms on.  The
 * run ends with the last thread, not with main: the statistics cover the
 * 500 ms, with the two sleepers in them. */
Test(run, main_calling_pthread_exit_is_not_the_end)
{
	struct run_result result;

	run_workload("main-exits", "2", "500", &result);
	cr_assert_geq(field(&result, "window_s"), 0.45, "the whole run: %.6f s",
		      field(&result, "window_s"));
	cr_assert_gt(field(&result, "lwps"), 1.5, "two sleepers for most of the run");
	cr_assert_lt(field(&result, "runnable"), 1.0, "they sleep");
}

/* A second thread execs `workload sleepers 3 500`: the statistics are the
 * new image's, to its end, not the old image's at the exec. */
Test(run, exec_from_a_thread_reports_the_new_image)
{
	const char *const command[] = { workload_path(), "exec-thread",
					workload_path(), "sleepers", "3", "500", NULL };
	struct run_result result;

	run_json(command, &result);
	cr_assert_geq(field(&result, "window_s"), 0.45, "the new image's run: %.6f s",
		      field(&result, "window_s"));
	cr_assert_gt(field(&result, "lwps"), 2.5, "main and 3 sleepers for most of it");
	cr_assert_eq(field(&result, "nthreads"), 1, "main alone at the end");
}

/* LD_PRELOAD already names a copy of the shim (another file): the command
 * keeps it and adds none, and gathering is on. */
Test(run, keeps_the_users_copy_of_the_shim)
{
	char directory[] = "/tmp/tdstat-shim-XXXXXX", copy[256], command[1024], *output;
	double window;

	cr_assert_not_null(mkdtemp(directory));
	snprintf(copy, sizeof(copy), "%s/libtdshim.so.1", directory);
	snprintf(command, sizeof(command), "cp '%s' '%s'", tdtest_shim_path(), copy);
	cr_assert_eq(system(command), 0, "%s", command);
	/* tdstat runs with it too: the shim stays off in it (no TDSTAT_ENABLE). */
	snprintf(command, sizeof(command), "LD_PRELOAD='%s' exec \"$0\" \"$@\" 2>&1", copy);
	const char *const argv[] = { "sh", "-c", command, tdstat_path(), "run", "--json", "--",
				     workload_path(), "shim-copies", NULL };
	cr_assert_eq(exit_code(tdtest_run(argv, NULL, &output, &(size_t){ 0 }, COMMAND_TIMEOUT_MS)), 0,
		     "%s", output);
	unlink(copy);
	rmdir(directory);
	cr_assert_not_null(strstr(output, "shim copies 1\n"), "one copy of the shim: %s", output);
	cr_assert(json_number(output, "window_s", &window), "gathering on: %s", output);
	free(output);
}

/* A setuid program: tdstat run refuses it in one line, and runs nothing
 * (under ptrace it would lose its privilege).  Run as nobody, so the
 * setuid-root copy would change the credentials. */
Test(run, refuses_a_setuid_command)
{
	char directory[] = "/tmp/tdstat-setuid-XXXXXX", copy[256], command[1024], *output;
	int status;

	cr_assert_not_null(mkdtemp(directory));
	snprintf(copy, sizeof(copy), "%s/workload", directory);
	snprintf(command, sizeof(command), "cp '%s' '%s' && chmod 4755 '%s' && chmod 755 '%s'",
		 workload_path(), copy, copy, directory);
	cr_assert_eq(system(command), 0, "%s", command);
	const char *const by_path[] = { "run", "--", copy, "shim-copies", NULL };
	status = run_tdstat_as_nobody(by_path, &output);
	if (status == -2 || getuid() != 0) {
		unlink(copy);
		rmdir(directory);
		cr_skip_test("needs root and setpriv to run tdstat as nobody");
	}
	cr_assert_eq(exit_code(status), 1, "output: %s", output);
	cr_assert_eq(count_lines(output), 1, "one line: %s", output);
	cr_assert_not_null(strstr(output, "setuid"), "names the cause: %s", output);
	cr_assert_not_null(strstr(output, "without tdstat"), "names the fix: %s", output);
	cr_assert_null(strstr(output, "shim copies"), "nothing ran: %s", output);
	free(output);
	/* Found through PATH, as execvp finds it. */
	snprintf(command, sizeof(command), "PATH='%s' exec \"$0\" \"$@\"", directory);
	const char *const as_nobody[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
					  "sh", "-c", "exec \"$0\" \"$@\" 2>&1", "/bin/sh", "-c", command,
					  tdstat_path(), "run", "--", "workload", "shim-copies", NULL };
	status = tdtest_run(as_nobody, NULL, &output, &(size_t){ 0 }, COMMAND_TIMEOUT_MS);
	unlink(copy);
	rmdir(directory);
	cr_assert_eq(exit_code(status), 1, "output: %s", output);
	cr_assert_not_null(strstr(output, "setuid"), "names the cause: %s", output);
	free(output);
}

/* The same for setgid and for file capabilities (security.capability). */
Test(run, refuses_setgid_and_capability_commands)
{
	char directory[] = "/tmp/tdstat-setgid-XXXXXX", copy[256], command[1024], *output;
	struct vfs_cap_data capabilities = {
		.magic_etc = VFS_CAP_REVISION_2,
		.data = { { .permitted = 1u << CAP_NET_RAW } },
	};
	const char *const kinds[] = { "setgid", "file capabilities" };

	if (getuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0)
		cr_skip_test("needs root and setpriv to run tdstat as nobody");
	cr_assert_not_null(mkdtemp(directory));
	snprintf(copy, sizeof(copy), "%s/workload", directory);
	for (size_t i = 0; i < 2; i++) {
		snprintf(command, sizeof(command), "cp '%s' '%s' && chmod %s '%s' && chmod 755 '%s'",
			 workload_path(), copy, i == 0 ? "2755" : "755", copy, directory);
		cr_assert_eq(system(command), 0, "%s", command);
		if (i == 1 && setxattr(copy, "security.capability", &capabilities,
				       XATTR_CAPS_SZ_2, 0) != 0) {
			unlink(copy);
			rmdir(directory);
			cr_skip_test("cannot set file capabilities in /tmp: %s", strerror(errno));
		}
		const char *const args[] = { "run", "--", copy, "shim-copies", NULL };
		int status = run_tdstat_as_nobody(args, &output);

		unlink(copy);
		cr_assert_eq(exit_code(status), 1, "output: %s", output);
		cr_assert_eq(count_lines(output), 1, "one line: %s", output);
		cr_assert_not_null(strstr(output, kinds[i]), "names the cause: %s", output);
		cr_assert_null(strstr(output, "shim copies"), "nothing ran: %s", output);
		free(output);
	}
	rmdir(directory);
}
