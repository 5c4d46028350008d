/* SPDX-License-Identifier: MIT */
/*
 * A library that rt_lifecycle's *_in_constructor cases load with dlopen:
 * its constructor, which runs with the dynamic loader's lock held, starts
 * a thread and joins it (a library that warms a pool or probes the
 * machine at load time).  The thread ends as LIFECYCLE_MODULE_THREAD
 * says: exit (pthread_exit, the default), return, async (turns
 * asynchronous cancellation on and off, then returns), exit_no_unwind
 * (pthread_exit from a frame without unwind tables).  Bare glibc takes no
 * loader lock on any of these paths once its unwinder is loaded; neither
 * may the shim.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int lifecycle_module_joined;

void *lifecycle_module_exits_without_unwind_tables(void *arg);

static void *exits(void *arg)
{
	(void)arg;
	pthread_exit((void *)43);
}

static void *returns(void *arg)
{
	(void)arg;
	return (void *)43;
}

static void *turns_async_on(void *arg)
{
	int type;

	(void)arg;
	if (pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &type) != 0)
		return NULL;
	pthread_setcanceltype(type, NULL);
	return (void *)43;
}

static void *(*thread_body(void))(void *)
{
	const char *how = getenv("LIFECYCLE_MODULE_THREAD");

	if (!how || !strcmp(how, "exit"))
		return exits;
	if (!strcmp(how, "return"))
		return returns;
	if (!strcmp(how, "async"))
		return turns_async_on;
	if (!strcmp(how, "exit_no_unwind"))
		return lifecycle_module_exits_without_unwind_tables;
	return NULL;
}

__attribute__((constructor)) static void start_and_join(void)
{
	void *(*body)(void *) = thread_body();
	pthread_t thread;
	void *result = NULL;

	if (!body || pthread_create(&thread, NULL, body, NULL) != 0)
		return;
	lifecycle_module_joined = pthread_join(thread, &result) == 0 && result == (void *)43;
}
