/* SPDX-License-Identifier: MIT */
/*
 * The body of rt_lifecycle_module's exit_no_unwind thread, compiled
 * without unwind tables (tests/runtime/CMakeLists.txt): the unwinding of
 * its pthread_exit stops here, short of the shim's trampoline, and the
 * thread's tracking ends in glibc's longjmp to start_thread
 * (runtime/thread.c: thread_entry's cleanup buffer), which must take no
 * loader lock.
 */
#define _GNU_SOURCE
#include <pthread.h>

void *lifecycle_module_exits_without_unwind_tables(void *arg);

void *lifecycle_module_exits_without_unwind_tables(void *arg)
{
	(void)arg;
	pthread_exit((void *)43);
}
