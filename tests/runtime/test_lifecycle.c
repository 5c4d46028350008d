/* SPDX-License-Identifier: MIT */
/*
 * A thread is tracked from pthread_create (the creator claims its record)
 * until it ends by any path; then its record is free again.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "rt_test.h"

static struct rt_output run(const char *how)
{
	const char *args[] = { how, NULL };

	return rt_run("rt_lifecycle", args, NULL);
}

static void expect_tracked_until_end(const char *how)
{
	struct rt_output out = run(how);

	rt_expect_int(&out, "live_after_create", 1);
	rt_expect_int(&out, "tid_recorded", 1);
	rt_expect_string(&out, "state_waiting", "BLOCKED");
	rt_expect_int(&out, "live_during", 1);
	rt_expect_int(&out, "joined", 1);
	rt_expect_int(&out, "live_after", 0);
	rt_expect_int(&out, "thread_record_gone", 1);
	if (!strcmp(how, "cancel_cond"))
		rt_expect_int(&out, "mutex_free", 1);
	if (!strcmp(how, "cancel_join")) {
		rt_expect_int(&out, "helper_joined", 1);
		rt_expect_int(&out, "live_final", 0);
	}
	rt_free(&out);
}

Test(lifecycle, main_thread_tracked_from_start)
{
	struct rt_output out = run("return");

	rt_expect_int(&out, "live_before", 1);
	rt_free(&out);
}

Test(lifecycle, end_by_return) { expect_tracked_until_end("return"); }
Test(lifecycle, end_by_pthread_exit) { expect_tracked_until_end("exit"); }
Test(lifecycle, end_by_pthread_exit_on_altstack) { expect_tracked_until_end("exit_altstack"); }
Test(lifecycle, cancelled_in_cond_wait) { expect_tracked_until_end("cancel_cond"); }
Test(lifecycle, cancelled_in_join) { expect_tracked_until_end("cancel_join"); }
Test(lifecycle, cancelled_in_sem_wait) { expect_tracked_until_end("cancel_sem"); }
Test(lifecycle, detached_end_by_return) { expect_tracked_until_end("detached"); }
/* glibc ends these with a longjmp past the shim's trampoline: the unwinding
 * stops at the thread's own frames, which have no unwind tables. */
Test(lifecycle, pthread_exit_without_unwind_tables) { expect_tracked_until_end("exit_no_unwind"); }
Test(lifecycle, thrd_exit_without_unwind_tables) { expect_tracked_until_end("thrd_exit_no_unwind"); }
Test(lifecycle, async_cancel_without_unwind_tables) { expect_tracked_until_end("cancel_async_no_unwind"); }

/* A thread_local destructor of the program's runs after the start routine
 * returned: the thread is still tracked there, its waits count. */
Test(lifecycle, tracked_in_own_thread_local_destructor)
{
	struct rt_output out = run("tls_dtor_waits");

	rt_expect_string(&out, "state_in_destructor", "BLOCKED");
	rt_expect_int(&out, "live_in_destructor", 1);
	rt_expect_int(&out, "joined", 1);
	rt_expect_int(&out, "live_after", 0);
	rt_free(&out);
}

Test(lifecycle, failed_create_leaves_no_record)
{
	struct rt_output out = run("create_failure");

	rt_expect_string(&out, "create_error", "failed");
	rt_expect_int(&out, "live_after", rt_int(&out, "live_before"));
	rt_expect_string(&out, "abandoned_state", "FREE");
	rt_expect_int(&out, "abandoned_counted", 1);
	rt_free(&out);
}

/* pthread_exit in a thread that a library's constructor starts and joins:
 * dlopen holds the loader's lock meanwhile, which glibc's
 * __cxa_thread_atexit_impl takes.  The shim registered its exit hook at
 * every pthread_exit and the program hung. */
Test(lifecycle, pthread_exit_in_thread_joined_by_constructor)
{
	struct rt_output out = run("exit_in_constructor");

	rt_expect_int(&out, "module_joined", 1);
	rt_expect_int(&out, "live_after", 0);
	rt_free(&out);
}

/* pthread_setcanceltype(ASYNCHRONOUS) in a signal handler that interrupted
 * malloc: the shim's registration (glibc's calloc) waited for the lock its
 * own thread held, and the program hung. */
Test(lifecycle, async_cancel_type_in_signal_handler)
{
	struct rt_output out = run("async_in_handler");

	rt_expect_int(&out, "all_joined", 1);
	rt_expect_int(&out, "live_after", 0);
	rt_free(&out);
}
