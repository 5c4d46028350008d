/* SPDX-License-Identifier: MIT */
#include "command.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if !defined(TDSTAT_PATH) || !defined(WORKLOAD_PATH) || !defined(PHASES_PATH) || !defined(SLOW_START_PATH)
#error "TDSTAT_PATH, WORKLOAD_PATH, PHASES_PATH and SLOW_START_PATH must name the built programs"
#endif

#define MAX_ARGS 32

/* sh runs tdstat with its stderr joined to stdout, the pipe tdtest reads. */
static const char merge_script[] = "exec \"$0\" \"$@\" 2>&1";

const char *tdstat_path(void)
{
	return TDSTAT_PATH;
}

const char *workload_path(void)
{
	return WORKLOAD_PATH;
}

const char *phases_path(void)
{
	return PHASES_PATH;
}

const char *slow_start_path(void)
{
	return SLOW_START_PATH;
}

/* argv = prefix..., tdstat, args...; returns the wait status. */
static int run_with_prefix(const char *const prefix[], const char *const args[], char **output)
{
	const char *argv[MAX_ARGS];
	size_t n = 0, length;

	for (size_t i = 0; prefix[i] && n < MAX_ARGS - 2; i++)
		argv[n++] = prefix[i];
	argv[n++] = tdstat_path();
	for (size_t i = 0; args[i] && n < MAX_ARGS - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	*output = NULL;
	return tdtest_run(argv, NULL, output, &length, COMMAND_TIMEOUT_MS);
}

int run_tdstat_merged(const char *const args[], char **output)
{
	const char *const prefix[] = { "sh", "-c", merge_script, NULL };

	return run_with_prefix(prefix, args, output);
}

int run_tdstat(const char *const args[], char **output)
{
	const char *const prefix[] = { NULL };

	return run_with_prefix(prefix, args, output);
}

int run_tdstat_as_nobody(const char *const args[], char **output)
{
	const char *const prefix[] = {
		"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"sh", "-c", merge_script, NULL,
	};

	*output = NULL;
	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0)
		return -2;
	return run_with_prefix(prefix, args, output);
}

int start_target(struct tdtest_child *child, bool preload, bool enable)
{
	return start_target_mode(child, "stdin", preload, enable);
}

int start_target_mode(struct tdtest_child *child, const char *mode, bool preload, bool enable)
{
	const char *const argv[] = { workload_path(), mode, NULL };
	const char *const env[] = { enable ? "TDSTAT_ENABLE=1" : "TDSTAT_ENABLE=0", NULL };
	struct tdtest_spawn_options options = {
		.preload = preload ? tdtest_shim_path() : NULL,
		.env = env,
		.pipe_stdin = true,
	};
	char line[128];

	if (tdtest_spawn(child, argv, &options) < 0)
		return -1;
	if (tdtest_read_line(child, line, sizeof(line), COMMAND_TIMEOUT_MS) < 0 ||
	    strncmp(line, "ready ", 6) != 0) {
		tdtest_wait(child, 1);
		return -1;
	}
	return 0;
}

void stop_target(struct tdtest_child *child)
{
	tdtest_wait(child, COMMAND_TIMEOUT_MS);
}

bool json_number(const char *line, const char *key, double *value)
{
	char pattern[64];
	const char *found;
	char *end;

	snprintf(pattern, sizeof(pattern), "\"%s\":", key);
	found = strstr(line, pattern);
	if (!found)
		return false;
	*value = strtod(found + strlen(pattern), &end);
	return end != found + strlen(pattern);
}

size_t count_lines(const char *text)
{
	size_t lines = 0;

	for (const char *c = text; c && *c; c++)
		if (*c == '\n' || c[1] == '\0')
			lines++;
	return lines;
}

int exit_code(int status)
{
	if (status < 0)
		return -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
