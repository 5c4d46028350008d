/* SPDX-License-Identifier: MIT */
/* One of two files with a static function of the same name (workload.c,
 * mode same-names): both wait on one condition variable. */
#include <pthread.h>

#include "same_name.h"

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&same_name_lock);
	for (;;)
		pthread_cond_wait(&same_name_cond, &same_name_lock);
	return NULL;
}

void start_waiter_a(pthread_t *thread)
{
	pthread_create(thread, NULL, waiter, NULL);
}
