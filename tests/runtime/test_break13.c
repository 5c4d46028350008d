/* SPDX-License-Identifier: MIT */
/*
 * Forced unwindings that start in the shim's own instructions
 * (fixture_break13.c): the thread's tracking ends all the same.
 */
#include <criterion/criterion.h>

#include "rt_test.h"

/* A pthread_exit from a signal handler at each instruction of the
 * trampoline between the start routine's return and the end of tracking:
 * no landing pad covers them, and the unwinding passed the trampoline's
 * frame without its cleanup; the thread's record stayed live for good. */
Test(break13, pthread_exit_in_trampoline_after_return_ends_tracking)
{
	const char *args[] = { "exit_after_return", NULL };
	struct rt_output out = rt_run("rt_break13", args, NULL);

	if (rt_int(&out, "tried") < 0) {
		rt_free(&out);
		cr_skip_test("single-stepping by the trap flag is x86-64's");
	}
	/* The window is a handful of instructions; none tried would prove
	 * nothing. */
	cr_expect_geq(rt_int(&out, "tried"), 3, "only %lld instructions tried", rt_int(&out, "tried"));
	rt_expect_int(&out, "leaked", 0);
	rt_expect_int(&out, "first_leak_offset", -1);
	rt_free(&out);
}

/* A pthread_exit from a signal handler that interrupted one of the
 * shim's restartable sequences: the kernel delivers the signal at the
 * sequence's abort handler, whose unwind information must carry the
 * unwinding on to the program's frames, whose cleanups run. */
Test(break13, pthread_exit_at_rseq_abort_runs_program_cleanups)
{
	const char *args[] = { "exit_in_wait", NULL };
	/* Gathering on: the waits announce their record changes. */
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct rt_output out = rt_run("rt_break13", args, env);
	long long tried = rt_int(&out, "tried");

	if (tried < 0) {
		rt_free(&out);
		cr_skip_test("single-stepping by the trap flag is x86-64's");
	}
	if (tried == 0) {
		rt_free(&out);
		cr_skip_test("no restartable sequence here (no rseq registration, or no invariant counter)");
	}
	rt_expect_int(&out, "skipped", 0);
	rt_expect_int(&out, "first_skip_offset", -1);
	rt_free(&out);
}
