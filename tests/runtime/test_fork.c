/* SPDX-License-Identifier: MIT */
/*
 * fork: the child tracks only the forking thread (its own tid), the
 * region says it belongs to the child, and the window restarts at the
 * fork when gathering was on, or is empty when it was off.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rt_test.h"

/* from: main or thread (fork()), or _Fork or clone (from main, while
 * three other threads wait) */
static void expect_child(const char *gathering, const char *from)
{
	const char *args[] = { gathering, from, NULL };
	struct rt_output out = rt_run("rt_fork", args, NULL);
	bool on = gathering[1] == 'n';
	bool raw = !strcmp(from, "_Fork") || !strcmp(from, "clone");
	long long window, tracked, runnable;

	rt_expect_int(&out, "child.live", 1);
	rt_expect_int(&out, "child.own_record", 1);
	rt_expect_int(&out, "child.status_pid", 1);
	rt_expect_int(&out, "child.overflow_live", 0);
	rt_expect_int(&out, "child.enabled", on);
	rt_expect_int(&out, "child.impossible", 0);
	rt_expect_int(&out, "child.rwlock_retaken", 1);
	rt_expect_int(&out, "child.mutex_unlocked", 1);
	window = rt_int(&out, "child.window_ns");
	tracked = rt_int(&out, "child.tracked_ns");
	runnable = rt_int(&out, "child.runnable_ns");
	if (on) {
		rt_expect_int(&out, "child.window_after_fork", 1);
		cr_expect_gt(window, 0);
		cr_expect_gt(tracked, 0, "the forking thread is tracked in the child's window");
		cr_expect_leq(tracked, window,
			      "one thread in the child: tracked %lld > |W| %lld (the parent's threads counted?)",
			      tracked, window);
		cr_expect_leq(runnable, tracked);
	} else {
		rt_expect_int(&out, "child.window_empty", 1);
		cr_expect_eq(window, 0);
		cr_expect_eq(tracked, 0);
	}
	if (!raw) {
		rt_expect_int(&out, "child.live_with_thread", 2);
		rt_expect_int(&out, "child.live_end", 1);
	}
	/* the parent is untouched: main and the waiting threads */
	rt_expect_int(&out, "parent.live", raw ? 4 : 2);
	rt_expect_int(&out, "parent.status_pid", 1);
	rt_expect_int(&out, "parent.enabled", on);
	rt_free(&out);
}

Test(fork, gathering_on_from_main) { expect_child("on", "main"); }
Test(fork, gathering_off_from_main) { expect_child("off", "main"); }
Test(fork, gathering_on_from_thread) { expect_child("on", "thread"); }
Test(fork, gathering_off_from_thread) { expect_child("off", "thread"); }
/* No atfork handler runs: the shim finds out at the child's first call. */
Test(fork, _Fork_gathering_on) { expect_child("on", "_Fork"); }
Test(fork, _Fork_gathering_off) { expect_child("off", "_Fork"); }
Test(fork, raw_clone_gathering_on) { expect_child("on", "clone"); }
Test(fork, raw_clone_gathering_off) { expect_child("off", "clone"); }

/* A fork in the middle of the shim's start-up (fork_in_init_hook.c): the
 * child's main thread, ended by pthread_exit, loses its record, and the
 * header carries the child's pid.  The shim took its parent's pid for the
 * child's own and kept the record (session 16, helper-55); a fork after
 * the main thread's adoption left the child its parent's tid and record
 * (1.5% of CI runs of the first case, every run of the second: session
 * 21). */
static void expect_fork_in_start_up(const char *when)
{
	const char *env[] = { when, NULL };
	struct rt_output out = rt_run("rt_fork_in_init", NULL, env);

	if (rt_int(&out, "forked") != 1) {
		rt_free(&out);
		cr_skip_test("the fork did not land inside the shim's start-up");
	}
	rt_expect_int(&out, "main_record_freed", 1);
	rt_expect_int(&out, "header_pid_own", 1);
	rt_free(&out);
}

Test(fork, in_the_middle_of_start_up_main_thread_exit_frees_record)
{
	expect_fork_in_start_up("TDTEST_FORK_IN_INIT=1");
}

Test(fork, after_the_main_threads_adoption_in_start_up_main_thread_exit_frees_record)
{
	expect_fork_in_start_up("TDTEST_FORK_IN_INIT=2");
}

/* A fork from a signal handler inside a fork child's reset
 * (fixture_fork_in_reset.c): every grandchild ends with its own pid in
 * the header and one record, its own (14 of 100 wrong before: helper-62,
 * session 21). */
Test(fork, inside_a_childs_reset_the_grandchild_is_its_own_process)
{
	const char *args[] = { "60", NULL };
	struct rt_output out = rt_run("rt_fork_in_reset", args, NULL);

	if (rt_int(&out, "landed") == 0) {
		rt_free(&out);
		cr_skip_test("no fork landed inside a child's reset");
	}
	rt_expect_int(&out, "wrong", 0);
	rt_free(&out);
}

/* A fork or vfork while another thread runs the shim's lazy start-up
 * (lazy_fork_hook.c): a fork's child goes on with a region of its own,
 * started and gathering; a vfork's child waits, and its parent's region
 * stays the parent's.  The fork's child spun for ever (helper-62), the
 * child of a fork after the atfork registration kept a region that never
 * started, and the vfork's child took over its parent's start-up
 * (helper-63).  The timed forks land inside the start-up most runs: up
 * to eight tries. */
static void expect_lazy_fork(const char *mode)
{
	char wanted[64];
	const char *env[] = { wanted, "TDSTAT_ENABLE=1", NULL };

	snprintf(wanted, sizeof(wanted), "TDTEST_LAZY_FORK=%s", mode);
	for (int attempt = 0; attempt < 8; attempt++) {
		struct rt_output out = rt_run("rt_lazy_fork", NULL, env);

		if (rt_int(&out, "landed") == 1) {
			rt_expect_int(&out, "child", 0);
			rt_free(&out);
			return;
		}
		rt_free(&out);
	}
	cr_skip_test("the %s never landed inside the start-up", mode);
}

Test(fork, during_another_threads_lazy_start_up_the_child_goes_on)
{
	expect_lazy_fork("fork");
}

Test(fork, after_the_start_ups_atfork_registration_the_child_starts_its_region)
{
	expect_lazy_fork("atfork");
}

Test(fork, a_vfork_child_waits_for_its_parents_lazy_start_up)
{
	expect_lazy_fork("vfork");
}
