/* SPDX-License-Identifier: MIT */
/*
 * A target of known shape for the fleet tests and the serve benchmark:
 *
 *   fleet_target [-n NAME] [-t MS] SPINNERS SLEEPERS
 *
 * SPINNERS threads compute (runnable), SLEEPERS threads wait on one
 * condition variable (idle, kind cond), main waits in poll on stdin
 * (idle, kind io): 1 + SPINNERS + SLEEPERS threads, runnable = SPINNERS,
 * idle = SLEEPERS + 1.  -n renames the process (prctl PR_SET_NAME), any
 * bytes, to test how outputs carry odd names.  Prints "ready" once every
 * thread is started, and runs until stdin closes, or for MS milliseconds
 * with -t (main then sleeps: idle, kind sleep).
 */
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wakeup = PTHREAD_COND_INITIALIZER;
static volatile bool over;

static void *spin(void *unused)
{
	unsigned long long seed = 1;

	while (!over)
		for (int i = 0; i < 100000; i++)
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return seed == 42 ? unused : NULL;
}

static void *sleep_on_condvar(void *unused)
{
	pthread_mutex_lock(&lock);
	while (!over)
		pthread_cond_wait(&wakeup, &lock);
	pthread_mutex_unlock(&lock);
	return unused;
}

static void wait_for_stdin_to_close(void)
{
	struct pollfd input = { .fd = 0, .events = POLLIN };
	char buffer[256];

	for (;;) {
		if (poll(&input, 1, -1) < 0)
			continue;
		if (read(0, buffer, sizeof(buffer)) <= 0)
			return;
	}
}

int main(int argc, char **argv)
{
	int first = 1, spinners, sleepers, count = 0;
	long duration_ms = -1;
	pthread_t *threads;

	for (; first + 1 < argc && argv[first][0] == '-'; first += 2) {
		if (!strcmp(argv[first], "-n"))
			prctl(PR_SET_NAME, argv[first + 1], 0, 0, 0);
		else if (!strcmp(argv[first], "-t"))
			duration_ms = atol(argv[first + 1]);
		else
			break;
	}
	if (argc - first != 2) {
		fprintf(stderr, "usage: fleet_target [-n NAME] [-t MS] SPINNERS SLEEPERS\n");
		return 2;
	}
	spinners = atoi(argv[first]);
	sleepers = atoi(argv[first + 1]);
	threads = calloc((size_t)(spinners + sleepers) + 1, sizeof(*threads));
	if (!threads)
		return 1;
	for (int i = 0; i < spinners; i++)
		if (pthread_create(&threads[count], NULL, spin, NULL) == 0)
			count++;
	for (int i = 0; i < sleepers; i++)
		if (pthread_create(&threads[count], NULL, sleep_on_condvar, NULL) == 0)
			count++;
	if (count != spinners + sleepers)
		return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (duration_ms >= 0)
		nanosleep(&(struct timespec){ .tv_sec = duration_ms / 1000,
					      .tv_nsec = duration_ms % 1000 * 1000000 }, NULL);
	else
		wait_for_stdin_to_close();
	pthread_mutex_lock(&lock);
	over = true;
	pthread_cond_broadcast(&wakeup);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < count; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	return 0;
}
