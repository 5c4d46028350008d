/* SPDX-License-Identifier: MIT */
#include "live_target.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define READY_TIMEOUT_MS 20000



bool live_start(struct live_target *target, const char *mode, int threads, long param,
		const struct live_options *options)
{
	char threads_text[16], param_text[32], max_threads[64], line[128];
	const char *argv[] = { WORKLOAD_PATH, mode, threads_text, param_text, NULL };
	const char *env[5] = { NULL };
	struct tdtest_spawn_options spawn = { .pipe_stdin = true, .env = env };
	int n = 0;

	snprintf(threads_text, sizeof(threads_text), "%d", threads);
	snprintf(param_text, sizeof(param_text), "%ld", param);
	spawn.preload = tdtest_shim_path();
	if (options && options->preload)
		spawn.preload = options->preload[0] ? options->preload : NULL;
#ifdef __SANITIZE_ADDRESS__
	/* The preloaded shim comes before the sanitizer runtime the
	 * (instrumented) workload links. */
	env[n++] = "ASAN_OPTIONS=verify_asan_link_order=0";
#endif
	if (!options || options->enable)
		env[n++] = "TDSTAT_ENABLE=1";
	if (options && options->max_threads) {
		snprintf(max_threads, sizeof(max_threads), "TDSTAT_MAX_THREADS=%s", options->max_threads);
		env[n++] = max_threads;
	}
	if (tdtest_spawn(&target->child, argv, &spawn) != 0) {
		perror("tdtest_spawn");
		return false;
	}
	target->pid = target->child.pid;
	if (tdtest_read_line(&target->child, line, sizeof(line), READY_TIMEOUT_MS) < 0 || strcmp(line, "ready") != 0) {
		fprintf(stderr, "workload %s %d: no ready line\n", mode, threads);
		live_stop(target);
		return false;
	}
	return true;
}

bool live_command(struct live_target *target, const char *command, char *reply, size_t size)
{
	size_t length = strlen(command);

	if (write(target->child.stdin_fd, command, length) != (ssize_t)length || write(target->child.stdin_fd, "\n", 1) != 1)
		return false;
	return tdtest_read_line(&target->child, reply, size, READY_TIMEOUT_MS) >= 0;
}

int live_stop(struct live_target *target)
{
	return tdtest_wait(&target->child, 10000);
}

uint64_t kernel_runnable_ns(pid_t pid)
{
	char path[64];
	struct dirent *entry;
	uint64_t total = 0;
	DIR *tasks;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	tasks = opendir(path);
	if (!tasks)
		return 0;
	while ((entry = readdir(tasks))) {
		unsigned long long on_cpu = 0, waiting = 0;
		char file[320];
		FILE *schedstat;

		if (entry->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "/proc/%d/task/%s/schedstat", (int)pid, entry->d_name);
		schedstat = fopen(file, "r");
		if (!schedstat)
			continue;
		if (fscanf(schedstat, "%llu %llu", &on_cpu, &waiting) == 2)
			total += on_cpu + waiting;
		fclose(schedstat);
	}
	closedir(tasks);
	return total;
}

uint64_t kernel_cpu_ns(pid_t pid)
{
	struct timespec cpu;
	clockid_t clock;

	if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &cpu) != 0)
		return 0;
	return (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
}

int kernel_task_count(pid_t pid)
{
	char path[64];
	struct dirent *entry;
	int count = 0;
	DIR *tasks;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	tasks = opendir(path);
	if (!tasks)
		return -1;
	while ((entry = readdir(tasks)))
		if (entry->d_name[0] != '.')
			count++;
	closedir(tasks);
	return count;
}
