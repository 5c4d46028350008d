/* SPDX-License-Identifier: MIT */
/*
 * Known workloads for the tdstat tests.
 *
 *   workload stdin            print "ready PID", then wait (poll, read)
 *                             until stdin closes: a target that lives as long
 *                             as the test wants
 *   workload sleepers N MS    N threads sleep MS milliseconds; main joins
 *   workload spinners N MS    N threads compute MS milliseconds; main joins
 */
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

static long duration_ms;

static double elapsed_ms(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) * 1e3 +
	       (double)(now.tv_nsec - start->tv_nsec) / 1e6;
}

static void *sleeper(void *argument)
{
	struct timespec pause = {
		.tv_sec = duration_ms / 1000,
		.tv_nsec = (duration_ms % 1000) * 1000000,
	};

	nanosleep(&pause, NULL);
	return argument;
}

static void *spinner(void *argument)
{
	volatile unsigned long long value = 1;
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (elapsed_ms(&start) < (double)duration_ms)
		for (int i = 0; i < 1000; i++)
			value = value * 6364136223846793005ULL + 1;
	return argument;
}

static int run_threads(void *(*body)(void *), int count)
{
	pthread_t threads[MAX_THREADS];

	for (int i = 0; i < count; i++)
		if (pthread_create(&threads[i], NULL, body, NULL) != 0)
			return 1;
	for (int i = 0; i < count; i++)
		pthread_join(threads[i], NULL);
	return 0;
}

static int wait_for_stdin(void)
{
	char buffer[64];

	struct pollfd input = { .fd = STDIN_FILENO, .events = POLLIN };

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	/* poll() waits in an interposed call whatever stdin is. */
	while (poll(&input, 1, -1) >= 0 && read(STDIN_FILENO, buffer, sizeof(buffer)) > 0)
		;
	return 0;
}

int main(int argc, char **argv)
{
	int count;

	if (argc == 2 && !strcmp(argv[1], "stdin"))
		return wait_for_stdin();
	if (argc != 4)
		goto usage;
	count = atoi(argv[2]);
	duration_ms = atol(argv[3]);
	if (count < 1 || count > MAX_THREADS || duration_ms < 0)
		goto usage;
	if (!strcmp(argv[1], "sleepers"))
		return run_threads(sleeper, count);
	if (!strcmp(argv[1], "spinners"))
		return run_threads(spinner, count);
usage:
	fprintf(stderr, "usage: workload stdin | sleepers N MS | spinners N MS\n");
	return 2;
}
