/* SPDX-License-Identifier: MIT */
/*
 * The debugger tests' target: five threads parked in known kinds.
 *   one waits on a condition variable that is never signalled   (cond)
 *   one waits for a mutex that main holds                       (mutex)
 *   one sleeps for an hour                                      (sleep)
 *   one joins the sleeper                                       (join)
 *   main holds the mutex and naps 20 ms at a time               (sleep)
 * Main's naps keep stamping the records, so a core taken at any moment
 * proves a recent "now" (tdstat(1), core).  It prints "ready" once every
 * thread has parked and calls parked_ready(), where a debugger that
 * started it can stop; with the argument "abort" it then calls abort().
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_t sleeper;

static void *wait_cond(void *unused)
{
	pthread_mutex_lock(&cond_lock);
	for (;;)
		pthread_cond_wait(&never, &cond_lock);
	return NULL;
}

static void *wait_mutex(void *unused)
{
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void *sleep_long(void *unused)
{
	for (;;)
		sleep(3600);
	return NULL;
}

static void *join_sleeper(void *unused)
{
	pthread_join(sleeper, NULL);
	return NULL;
}

/* A place for gdb's breakpoint: every thread is parked. */
__attribute__((noinline)) void parked_ready(void);
__attribute__((noinline)) void parked_ready(void)
{
	__asm__ volatile("" ::: "memory");
}

static void nap(long ms)
{
	struct timespec time = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&time, NULL);
}

int main(int argc, char **argv)
{
	pthread_t thread;
	bool do_abort = argc > 1 && strcmp(argv[1], "abort") == 0;

	pthread_mutex_lock(&lock);
	if (pthread_create(&thread, NULL, wait_cond, NULL) != 0 ||
	    pthread_create(&thread, NULL, wait_mutex, NULL) != 0 ||
	    pthread_create(&sleeper, NULL, sleep_long, NULL) != 0 ||
	    pthread_create(&thread, NULL, join_sleeper, NULL) != 0) {
		perror("pthread_create");
		return 1;
	}
	/* Long enough for every thread to reach its wait. */
	nap(300);
	printf("ready\n");
	fflush(stdout);
	parked_ready();
	for (int naps = 0;; naps++) {
		nap(20);
		if (do_abort && naps == 25)
			abort();
	}
}
