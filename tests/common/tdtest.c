/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "tdtest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tdstat/clock.h>

#ifndef TDTEST_SHIM_PATH
#error "TDTEST_SHIM_PATH must name the built libtdshim.so"
#endif

extern char **environ;

const char *tdtest_shim_path(void)
{
	return TDTEST_SHIM_PATH;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining_ms(int64_t deadline)
{
	int64_t left = deadline - now_ms();

	return left > 0 ? (int)left : 0;
}

static size_t name_length(const char *entry)
{
	const char *equals = strchr(entry, '=');

	return equals ? (size_t)(equals - entry) : strlen(entry);
}

static bool overridden(const char *entry, const char *const *extra, size_t nextra)
{
	size_t length = name_length(entry);

	for (size_t i = 0; i < nextra; i++)
		if (name_length(extra[i]) == length && !strncmp(entry, extra[i], length))
			return true;
	return false;
}

/* The runner's environment with opts' entries replacing any of the same
 * name; the strings are borrowed, only the array is allocated. */
static char **child_environment(const struct tdtest_spawn_options *opts, char *preload_entry)
{
	const char *extra[256];
	size_t nextra = 0, ninherited = 0, n = 0;
	char **envp;

	if (opts && opts->preload)
		extra[nextra++] = preload_entry;
	for (size_t i = 0; opts && opts->env && opts->env[i]; i++) {
		if (nextra == sizeof(extra) / sizeof(extra[0]))
			return NULL;
		extra[nextra++] = opts->env[i];
	}
	while (environ[ninherited])
		ninherited++;
	envp = calloc(ninherited + nextra + 1, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < ninherited; i++)
		if (!overridden(environ[i], extra, nextra))
			envp[n++] = environ[i];
	for (size_t i = 0; i < nextra; i++)
		envp[n++] = (char *)extra[i];
	return envp;
}

int tdtest_spawn(struct tdtest_child *child, const char *const argv[],
		 const struct tdtest_spawn_options *opts)
{
	int out[2] = { -1, -1 }, in[2] = { -1, -1 };
	char preload_entry[4096];
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	char **envp;
	int error;

	memset(child, 0, sizeof(*child));
	child->pid = -1;
	child->stdout_fd = child->stdin_fd = -1;
	if (opts && opts->preload)
		snprintf(preload_entry, sizeof(preload_entry), "LD_PRELOAD=%s", opts->preload);
	envp = child_environment(opts, preload_entry);
	if (!envp) {
		errno = ENOMEM;
		return -1;
	}
	if (pipe2(out, O_CLOEXEC) || (opts && opts->pipe_stdin && pipe2(in, O_CLOEXEC))) {
		error = errno;
		goto fail;
	}
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
	if (in[0] >= 0)
		posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attr, 0);
	error = posix_spawnp(&child->pid, argv[0], &actions, &attr,
			     (char *const *)argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&actions);
	if (error)
		goto fail;
	free(envp);
	close(out[1]);
	child->stdout_fd = out[0];
	if (in[0] >= 0) {
		close(in[0]);
		child->stdin_fd = in[1];
	}
	return 0;
fail:
	free(envp);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (in[i] >= 0)
			close(in[i]);
	}
	child->pid = -1;
	errno = error;
	return -1;
}

/* Waits up to timeout_ms for stdout to be readable and reads once into the
 * buffer.  Returns bytes read, 0 at end of output, -1 on error, -2 on
 * timeout. */
static ssize_t fill(struct tdtest_child *child, int timeout_ms)
{
	struct pollfd pfd = { .fd = child->stdout_fd, .events = POLLIN };
	ssize_t got;
	int ready;

	if (child->buffered == sizeof(child->buffer))
		return -1;
	do
		ready = poll(&pfd, 1, timeout_ms);
	while (ready < 0 && errno == EINTR);
	if (ready < 0)
		return -1;
	if (ready == 0)
		return -2;
	do
		got = read(child->stdout_fd, child->buffer + child->buffered,
			   sizeof(child->buffer) - child->buffered);
	while (got < 0 && errno == EINTR);
	if (got > 0)
		child->buffered += (size_t)got;
	return got;
}

/* Moves the first `taken` buffered bytes out, the next `dropped` away. */
static void consume(struct tdtest_child *child, char *line, size_t size,
		    size_t taken, size_t dropped)
{
	size_t copied = taken < size - 1 ? taken : size - 1;

	memcpy(line, child->buffer, copied);
	line[copied] = '\0';
	child->buffered -= taken + dropped;
	memmove(child->buffer, child->buffer + taken + dropped, child->buffered);
}

int tdtest_read_line(struct tdtest_child *child, char *line, size_t size, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	for (;;) {
		char *newline = memchr(child->buffer, '\n', child->buffered);
		ssize_t got;

		if (newline) {
			size_t length = (size_t)(newline - child->buffer);

			consume(child, line, size, length, 1);
			return (int)(length < size - 1 ? length : size - 1);
		}
		got = fill(child, remaining_ms(deadline));
		if (got == -2)
			return -2;
		if (got <= 0) {
			/* end of output (or an overlong line): hand out what is left */
			size_t length = child->buffered;

			if (length == 0)
				return -1;
			consume(child, line, size, length, 0);
			return (int)(length < size - 1 ? length : size - 1);
		}
	}
}

char *tdtest_read_all(struct tdtest_child *child, size_t *length, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	size_t used = 0, capacity = 65536;
	char *text = malloc(capacity);

	if (!text)
		return NULL;
	memcpy(text, child->buffer, child->buffered);
	used = child->buffered;
	child->buffered = 0;
	for (;;) {
		struct pollfd pfd = { .fd = child->stdout_fd, .events = POLLIN };
		ssize_t got;
		int ready;

		if (capacity - used < 65536) {
			char *grown = realloc(text, capacity * 2);

			if (!grown)
				goto fail;
			text = grown;
			capacity *= 2;
		}
		ready = poll(&pfd, 1, remaining_ms(deadline));
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready <= 0)
			goto fail;
		got = read(child->stdout_fd, text + used, capacity - used - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			goto fail;
		if (got == 0)
			break;
		used += (size_t)got;
	}
	text[used] = '\0';
	*length = used;
	return text;
fail:
	free(text);
	return NULL;
}

int tdtest_wait(struct tdtest_child *child, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	int status = -1;

	if (child->pid <= 0)
		return -1;
	if (child->stdin_fd >= 0) {
		close(child->stdin_fd);
		child->stdin_fd = -1;
	}
	for (;;) {
		pid_t done = waitpid(child->pid, &status, WNOHANG);

		if (done == child->pid)
			break;
		if (done < 0 && errno != EINTR) {
			status = -1;
			break;
		}
		if (now_ms() >= deadline) {
			fprintf(stderr, "tdtest: pid %d still running after %d ms: killed\n",
				(int)child->pid, timeout_ms);
			kill(-child->pid, SIGKILL);
			waitpid(child->pid, NULL, 0);
			status = -1;
			break;
		}
		usleep(5000);
	}
	if (child->stdout_fd >= 0) {
		close(child->stdout_fd);
		child->stdout_fd = -1;
	}
	child->pid = -1;
	return status;
}

int tdtest_run(const char *const argv[], const struct tdtest_spawn_options *opts,
	       char **output, size_t *length, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	struct tdtest_child child;

	*output = NULL;
	*length = 0;
	if (tdtest_spawn(&child, argv, opts))
		return -1;
	*output = tdtest_read_all(&child, length, timeout_ms);
	if (!*output) {
		tdtest_wait(&child, 0);
		return -1;
	}
	return tdtest_wait(&child, remaining_ms(deadline));
}

/* include/tdstat/clock.h's, as everywhere. */
uint64_t tdtest_monotonic_ns(void)
{
	return tdstat_monotonic_ns();
}

double tdtest_steal_s(void)
{
	unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
	FILE *f = fopen("/proc/stat", "r");
	int fields = 0;

	if (f) {
		fields = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait,
				&irq, &softirq, &steal);
		fclose(f);
	}
	long ticks = sysconf(_SC_CLK_TCK);
	return fields == 8 && ticks > 0 ? (double)steal / (double)ticks : -1;
}

void tdtest_sleep_ms(long ms)
{
	struct timespec pause = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&pause, &pause) != 0)
		;
}
