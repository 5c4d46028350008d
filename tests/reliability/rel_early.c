/* SPDX-License-Identifier: MIT */
/*
 * A library rel_target links: its constructor runs before the preloaded
 * shim's (the loader initialises a program's dependencies first) and
 * starts threads that wait until rel_early_release().
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define EARLY_THREADS 3

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released_cond = PTHREAD_COND_INITIALIZER;
static int released;
static pthread_t threads[EARLY_THREADS];
static int started;

static void *early_main(void *argument)
{
	pthread_mutex_lock(&lock);
	while (!released)
		pthread_cond_wait(&released_cond, &lock);
	pthread_mutex_unlock(&lock);
	return argument;
}

/* Only when asked (REL_EARLY=1): rel_target's other modes count threads. */
__attribute__((constructor)) static void early_start(void)
{
	const char *wanted = getenv("REL_EARLY");

	if (!wanted || strcmp(wanted, "1") != 0)
		return;
	started = 1;
	for (int i = 0; i < EARLY_THREADS; i++)
		pthread_create(&threads[i], NULL, early_main, NULL);
}

int rel_early_threads(void);
int rel_early_threads(void)
{
	return started ? EARLY_THREADS : 0;
}

void rel_early_release(void);
void rel_early_release(void)
{
	pthread_mutex_lock(&lock);
	released = 1;
	pthread_cond_broadcast(&released_cond);
	pthread_mutex_unlock(&lock);
	for (int i = 0; started && i < EARLY_THREADS; i++)
		pthread_join(threads[i], NULL);
}
