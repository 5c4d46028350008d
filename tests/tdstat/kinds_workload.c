/* SPDX-License-Identifier: MIT */
/*
 * Threads parked in known kinds of wait, for the idle-by-kind tests:
 *   kinds    two threads in pthread_cond_wait on `parked_condvar`, one
 *            blocked on `parked_mutex` (held by the sleeper), one in
 *            nanosleep holding it, one in poll on a pipe, main in
 *            pthread_join of the sleeper.  Prints "ready" and stays so
 *            until killed.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t parked_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t parked_condvar = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t condvar_mutex = PTHREAD_MUTEX_INITIALIZER;
static int never;
static int pipe_ends[2];

static void *in_cond(void *unused)
{
	pthread_mutex_lock(&condvar_mutex);
	while (!never)
		pthread_cond_wait(&parked_condvar, &condvar_mutex);
	pthread_mutex_unlock(&condvar_mutex);
	return unused;
}

static void *on_mutex(void *unused)
{
	pthread_mutex_lock(&parked_mutex);
	pthread_mutex_unlock(&parked_mutex);
	return unused;
}

static void *sleeper(void *unused)
{
	pthread_mutex_lock(&parked_mutex);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		sleep(1000);
	return unused;
}

static void *in_poll(void *unused)
{
	struct pollfd wait_for = { .fd = pipe_ends[0], .events = POLLIN };

	poll(&wait_for, 1, -1);
	return unused;
}

int main(void)
{
	pthread_t threads[5];

	if (pipe(pipe_ends) != 0)
		return 1;
	pthread_create(&threads[0], NULL, sleeper, NULL);
	/* The sleeper holds the mutex before anyone blocks on it. */
	while (pthread_mutex_trylock(&parked_mutex) == 0)
		pthread_mutex_unlock(&parked_mutex);
	pthread_create(&threads[1], NULL, in_cond, NULL);
	pthread_create(&threads[2], NULL, in_cond, NULL);
	pthread_create(&threads[3], NULL, on_mutex, NULL);
	pthread_create(&threads[4], NULL, in_poll, NULL);
	pthread_join(threads[0], NULL);
	return 0;
}
