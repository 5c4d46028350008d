/* SPDX-License-Identifier: MIT */
/* A library the truncate target (workload.c) loads from a copy it then
 * truncates: a thread waits on its static condvar from its function. */
#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lib_cond = PTHREAD_COND_INITIALIZER;

static void *lib_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lib_lock);
	for (;;)
		pthread_cond_wait(&lib_cond, &lib_lock);
	return NULL;
}

void break11_lib_start(void);

void break11_lib_start(void)
{
	pthread_t thread;

	pthread_create(&thread, NULL, lib_waiter, NULL);
}
