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
/* The thread started before the program's first pthread_cancel: it ended
 * only with the process before the trampoline kept a cleanup buffer. */
Test(lifecycle, cancel_without_unwind_tables) { expect_tracked_until_end("cancel_no_unwind"); }

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

/* A thread that a library's constructor starts and joins: dlopen holds
 * the loader's lock meanwhile, which glibc's __cxa_thread_atexit_impl
 * takes.  A thread that ended its tracking in a thread_local destructor
 * of the shim's registered it there, waited for the lock, and the program
 * hung. */
static void expect_constructor_joins(const char *how)
{
	struct rt_output out = run(how);

	rt_expect_int(&out, "module_joined", 1);
	rt_expect_int(&out, "live_after", 0);
	rt_free(&out);
}

/* The shim registered its exit hook at every pthread_exit. */
Test(lifecycle, pthread_exit_in_thread_joined_by_constructor) { expect_constructor_joins("exit_in_constructor"); }
/* Asynchronous cancellation turned on, and a pthread_exit from frames
 * without unwind tables, register the exit hook. */
Test(lifecycle, async_cancel_type_in_thread_joined_by_constructor)
{
	expect_constructor_joins("async_in_constructor");
}
Test(lifecycle, pthread_exit_without_unwind_tables_in_thread_joined_by_constructor)
{
	expect_constructor_joins("exit_no_unwind_in_constructor");
}
/* After the program's first pthread_cancel every new thread registers the
 * exit hook as it starts. */
Test(lifecycle, return_in_thread_joined_by_constructor_after_cancel)
{
	expect_constructor_joins("return_in_constructor_after_cancel");
}
Test(lifecycle, async_cancel_type_in_thread_joined_by_constructor_after_cancel)
{
	expect_constructor_joins("async_in_constructor_after_cancel");
}
Test(lifecycle, pthread_exit_in_thread_joined_by_constructor_after_cancel)
{
	expect_constructor_joins("exit_in_constructor_after_cancel");
}
/* A C11 thread, which glibc's thrd_create started past the shim's
 * pthread_create: adopted at its first wait, it registered the exit hook
 * there. */
Test(lifecycle, waiting_c11_thread_joined_by_constructor) { expect_constructor_joins("c11_in_constructor"); }

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

/* A signal handler's pthread_exit at the thread's very start, before the
 * trampoline took the record its creator claimed: the record stayed
 * RUNNABLE for good (live_after was the number of such threads). */
Test(lifecycle, pthread_exit_in_handler_before_start)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* The sanitizer's pthread_create, after the shim's, starts the
	 * thread in its own routine: glibc's descriptor names that, not
	 * thread_entry, and the launch cannot be found there. */
	cr_skip_test("a sanitizer's pthread_create starts the thread in its own routine");
#endif
	struct rt_output out = run("exit_in_handler_at_start");

	rt_expect_int(&out, "all_joined", 1);
	rt_expect_int(&out, "exited_before_start", 1);
	rt_expect_int(&out, "live_after", 0);
	rt_free(&out);
}

/* glibc's siglongjmp from an alternate signal stack inside the thread's
 * own stack emptied the thread's list of cleanup buffers, thread_entry's
 * too; a pthread_exit whose unwinding then stopped short of the
 * trampoline left the record live (live_after was 1). */
Test(lifecycle, pthread_exit_without_unwind_tables_after_altstack_jump)
{
	struct rt_output out = run("exit_no_unwind_after_altstack_jump");

	rt_expect_int(&out, "joined", 1);
	rt_expect_int(&out, "live_after", 0);
	rt_free(&out);
}
