/* SPDX-License-Identifier: MIT */
/*
 * A library that rt_lifecycle exit_in_constructor loads with dlopen: its
 * constructor, which runs with the dynamic loader's lock held, starts a
 * thread that ends with pthread_exit and joins it (a library that warms a
 * pool or probes the machine at load time).  Bare glibc's pthread_exit
 * takes no loader lock once its unwinder is loaded; neither may the
 * shim's.
 */
#define _GNU_SOURCE
#include <pthread.h>

int lifecycle_module_joined;

static void *exits(void *arg)
{
	(void)arg;
	pthread_exit((void *)43);
}

__attribute__((constructor)) static void start_and_join(void)
{
	pthread_t thread;
	void *result = NULL;

	if (pthread_create(&thread, NULL, exits, NULL) != 0)
		return;
	lifecycle_module_joined = pthread_join(thread, &result) == 0 && result == (void *)43;
}
