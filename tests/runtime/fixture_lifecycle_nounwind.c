/* SPDX-License-Identifier: MIT */
/*
 * Thread bodies of rt_lifecycle compiled without unwind tables
 * (tests/runtime/CMakeLists.txt): a cancellation or pthread_exit that
 * unwinds from here stops at these frames, and glibc ends the thread with
 * a longjmp to start_thread, past the shim's trampoline.  Its tracking
 * must end anyway (runtime/thread.c: thread_entry's cleanup buffer).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <threads.h>

#include "fixture_lifecycle.h"

void *lifecycle_exits_without_unwind_tables(void *arg)
{
	(void)arg;
	sem_wait(&start_gate);
	publish_self();
	sem_wait(&hold_gate);
	pthread_exit((void *)43);
}

/* C11's thrd_exit in a thread pthread_create started: glibc's goes to its
 * pthread_exit directly, never through the shim's pthread_exit. */
void *lifecycle_thrd_exits_without_unwind_tables(void *arg)
{
	(void)arg;
	sem_wait(&start_gate);
	publish_self();
	sem_wait(&hold_gate);
	thrd_exit(43);
}

/* A deferred cancellation, in a thread started before the program's
 * first cancellation request. */
void *lifecycle_cancel_without_unwind_tables(void *arg)
{
	(void)arg;
	sem_wait(&start_gate);
	publish_self();
	for (;;)
		sem_wait(&hold_gate);
	return NULL;
}

void *lifecycle_async_cancel_without_unwind_tables(void *arg)
{
	(void)arg;
	sem_wait(&start_gate);
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	publish_self();
	for (;;)
		sem_wait(&hold_gate);
	return NULL;
}

/* pthread_exit at once, from a frame without unwind tables. */
void lifecycle_exit_now_without_unwind_tables(void)
{
	pthread_exit((void *)45);
}
