/* SPDX-License-Identifier: MIT */
/*
 * A library that rt_lifecycle's *_in_constructor cases load with dlopen:
 * its constructor, which runs with the dynamic loader's lock held, starts
 * a thread and joins it (a library that warms a pool or probes the
 * machine at load time).  The thread ends as LIFECYCLE_MODULE_THREAD
 * says: exit (pthread_exit, the default), return, async (turns
 * asynchronous cancellation on and off, then returns), exit_no_unwind
 * (pthread_exit from a frame without unwind tables), c11 (a C11 thread,
 * thrd_create and thrd_join, that waits, then returns).  Bare glibc takes no
 * loader lock on any of these paths once its unwinder is loaded; neither
 * may the shim.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <unistd.h>

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

static int waits_c11(void *arg)
{
	(void)arg;
	usleep(1000);
	return 43;
}

static int start_and_join_c11(void)
{
	thrd_t thread;
	int result = 0;

	return thrd_create(&thread, waits_c11, NULL) == thrd_success && thrd_join(thread, &result) == thrd_success &&
	       result == 43;
}

__attribute__((constructor)) static void start_and_join(void)
{
	const char *how = getenv("LIFECYCLE_MODULE_THREAD");
	void *(*body)(void *) = thread_body();
	pthread_t thread;
	void *result = NULL;

	if (how && !strcmp(how, "c11")) {
		lifecycle_module_joined = start_and_join_c11();
		return;
	}
	if (!body || pthread_create(&thread, NULL, body, NULL) != 0)
		return;
	lifecycle_module_joined = pthread_join(thread, &result) == 0 && result == (void *)43;
}
