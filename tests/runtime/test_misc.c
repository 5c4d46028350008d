/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* SCHED_BATCH */
#endif
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rt_test.h"
#include "tdtest.h"

Test(concurrency, set_and_get_through_region)
{
	const char *args[] = { "concurrency", NULL };
	struct rt_output out = rt_run("rt_misc", args, NULL);

	rt_expect_int(&out, "initial_get", 0);
	rt_expect_int(&out, "initial_region", 0);
	rt_expect_int(&out, "set4", 0);
	rt_expect_int(&out, "after_set_get", 4);
	rt_expect_int(&out, "after_set_region", 4);
	rt_expect_string(&out, "set_negative", "EINVAL");
	rt_expect_int(&out, "after_negative_get", 4);
	rt_expect_int(&out, "after_controller_get", 7);
	rt_expect_int(&out, "set0", 0);
	rt_expect_int(&out, "after_set0_get", 0);
	rt_expect_int(&out, "after_set0_region", 0);
	rt_free(&out);
}

static void expect_signal_post(const char *scenario)
{
	const char *args[] = { scenario, NULL };
	struct rt_output out = rt_run("rt_misc", args, NULL);

	rt_expect_string(&out, "observed", "BLOCKED");
	rt_expect_int(&out, "wait_result", 0);
	rt_expect_int(&out, "handled", 1);
	rt_expect_string(&out, "state_after", "RUNNABLE");
	rt_expect_int(&out, "settled", 1);
	rt_expect_int(&out, "sem_value", 0);
	rt_free(&out);
}

Test(signal, handler_posts_while_sem_wait_waits) { expect_signal_post("signal_post"); }
Test(signal, handler_waits_itself_inside_sem_wait) { expect_signal_post("signal_nested"); }

/* The shim's own futex calls (the semaphore's sleep and wake, the
 * contended mutex) leave the program's errno alone. */
Test(errno, kept_by_sleeping_waits_that_succeed)
{
	const char *args[] = { "errno_kept", NULL };
	struct rt_output out = rt_run("rt_misc", args, NULL);

	rt_expect_int(&out, "interrupted_locks_kept", 10);
	rt_expect_int(&out, "rounds", 20000);
	rt_expect_int(&out, "errno_changed", 0);
	rt_free(&out);
}

Test(overflow, more_threads_than_capacity)
{
	const char *args[] = { "40", NULL };
	const char *env[] = { "TDSTAT_MAX_THREADS=16", NULL };
	struct rt_output out = rt_run("rt_overflow", args, env);

	rt_expect_int(&out, "created", 40);
	rt_expect_int(&out, "checksum_ok", 1);
	rt_expect_int(&out, "start.capacity", 16);
	rt_expect_int(&out, "start.live", 1);
	rt_expect_int(&out, "start.overflow_live", 0);
	/* 41 threads alive: 16 in records, 25 counted as overflow */
	rt_expect_int(&out, "alive.live", 16);
	rt_expect_int(&out, "alive.overflow_live", 25);
	rt_expect_int(&out, "alive.overflow_total", 25);
	cr_expect_leq(rt_int(&out, "alive.high_water"), 16, "records past capacity were used");
	rt_expect_int(&out, "joined.live", 1);
	rt_expect_int(&out, "joined.overflow_live", 0);
	rt_expect_int(&out, "joined.overflow_total", 25);
	rt_free(&out);
}

Test(overflow, capacity_is_full_size_by_default)
{
	const char *args[] = { "4", NULL };
	struct rt_output out = rt_run("rt_overflow", args, NULL);

	rt_expect_int(&out, "start.capacity", 32768);
	rt_expect_int(&out, "alive.live", 5);
	rt_expect_int(&out, "alive.overflow_live", 0);
	rt_expect_int(&out, "checksum_ok", 1);
	rt_free(&out);
}

Test(mutex, default_mutex_counts_right_under_contention)
{
	const char *args[] = { "mutex_counter", NULL };
	struct rt_output out = rt_run("rt_misc", args, NULL);

	rt_expect_int(&out, "counter_ok", 1);
	rt_expect_int(&out, "token_passes_ok", 1);
	rt_expect_int(&out, "mutex_free", 1);
	rt_expect_int(&out, "live_end", 1);
	rt_free(&out);
}

Test(lifecycle, thread_not_seen_created_is_adopted_when_it_waits)
{
	const char *args[] = { "adopt", NULL };
	struct rt_output out = rt_run("rt_misc", args, NULL);

	rt_expect_int(&out, "live_before_waiting", 1);
	rt_expect_string(&out, "observed", "BLOCKED");
	rt_expect_int(&out, "live_while_waiting", 2);
	rt_expect_int(&out, "result", 5);
	rt_expect_int(&out, "record_gone", 1);
	rt_expect_int(&out, "live_end", 1);
	rt_free(&out);
}

/* glibc's thrd_create calls its own pthread_create: such a thread was
 * adopted at its first wait, and its adoption took the loader's lock. */
Test(lifecycle, c11_thread_tracked_from_creation)
{
	const char *args[] = { "c11", NULL };
	struct rt_output out = rt_run("rt_misc", args, NULL);

	rt_expect_int(&out, "live_before_waiting", 2);
	rt_expect_int(&out, "result", -7);
	rt_expect_int(&out, "record_gone", 1);
	rt_expect_int(&out, "live_end", 1);
	rt_free(&out);
}

/* A sandbox that forbids getpid: the shim's exit hook, registered at each
 * thread's first thread_local destructor, asked for it once per thread
 * (the process was killed at the first one). */
Test(lifecycle, thread_local_destructors_make_no_getpid)
{
	const char *args[] = { "no_getpid", NULL };
	struct rt_output out = rt_run("rt_misc", args, NULL);

	rt_expect_int(&out, "destructors_ran", 4);
	rt_free(&out);
}

/* A sandbox that kills on getrusage, process_vm_readv and the thread CPU
 * clock, which the program never calls: with gathering on, a condvar
 * wait whose release of the mutex wakes a sleeper made the shim call
 * getrusage (it looks at the thread's voluntary switches), a timed
 * wait's timeout is read with process_vm_readv, and the wait after a
 * timer's wake-up measured its CPU with the thread CPU clock (helper-62).
 * None once a filter is in, however it came: prctl, syscall(SYS_prctl),
 * syscall(SYS_seccomp), or inherited across an exec. */
static void sandboxed_waits(const char *mode)
{
	const char *args[] = { mode, NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct rt_output out = rt_run("rt_misc", args, env);

	rt_expect_int(&out, "sandbox_waits", 20);
	rt_free(&out);
}

Test(lifecycle, a_filter_put_in_by_prctl_meets_no_call_of_the_shim)
{
	sandboxed_waits("sandbox_prctl");
}

Test(lifecycle, a_filter_put_in_by_syscall_prctl_meets_no_call_of_the_shim)
{
	sandboxed_waits("sandbox_syscall_prctl");
}

Test(lifecycle, a_filter_put_in_by_syscall_meets_no_call_of_the_shim)
{
	sandboxed_waits("sandbox_syscall");
}

/* A timer slack set back to the default (0) is the thread's creator's,
 * not read back from the kernel: a filter the shim cannot see (put in by
 * an inline system call) that kills on PR_GET_TIMERSLACK, a call the
 * program never makes, killed the program under 7f91602 (helper-65). */
Test(lifecycle, a_timer_slack_reset_makes_no_call_an_unseen_filter_forbids)
{
	const char *args[] = { "slack_reset_unseen", NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct rt_output out = rt_run("rt_misc", args, env);

	rt_expect_int(&out, "slack_resets", 2);
	rt_free(&out);
}

/* The scheduling calls the shim watches return what they return without
 * it, errno too, and the change is made (the policy the kernel reports
 * after). */
/* EINVAL: <errno.h>'s errno macro would rename the suite `errno`. */
#define LINUX_EINVAL 22

Test(lifecycle, the_scheduling_calls_return_what_libc_returns)
{
	const char *args[] = { "sched_calls", NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct rt_output out = rt_run("rt_misc", args, env);

	rt_expect_int(&out, "bad_policy", -1);
	rt_expect_int(&out, "bad_policy_errno", LINUX_EINVAL);
	rt_expect_int(&out, "bad_pid", -1);
	rt_expect_int(&out, "bad_pid_errno", LINUX_EINVAL);
	rt_expect_int(&out, "batch", 0);
	rt_expect_int(&out, "batch_errno", 0);
	rt_expect_int(&out, "batch_policy", SCHED_BATCH);
	rt_expect_int(&out, "thread_bad", LINUX_EINVAL);
	rt_expect_int(&out, "thread_other", 0);
	rt_expect_int(&out, "thread_other_policy", SCHED_OTHER);
	rt_expect_int(&out, "setattr_null", -1);
	rt_expect_int(&out, "setattr_null_errno", LINUX_EINVAL);
	rt_expect_int(&out, "raw_batch", 0);
	rt_expect_int(&out, "raw_batch_errno", 0);
	rt_expect_int(&out, "raw_batch_policy", SCHED_BATCH);
	rt_free(&out);
}

/* A fork child's threads start the record generations again: a word a
 * parent's thread got from another (SCHED_FIFO) must not pass to the
 * child's thread in the same slot.  With ab81ca4's shim it did: that
 * thread took itself for real time, ignored its own 2 ms timer slack and
 * read 164 ms runnable against the kernel's 5-6 ms. */
Test(lifecycle, a_fork_child_takes_no_scheduling_change_of_the_parents_threads)
{
	const char *args[] = { "sched_after_fork", NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct rt_output out = rt_run("rt_misc", args, env);

	if (rt_int(&out, "skipped") == 1) {
		rt_free(&out);
		cr_skip_test("SCHED_FIFO is not allowed here (not root)");
	}
	rt_expect_int(&out, "same_slot", 1);
	long long runnable = rt_int(&out, "runnable_us"), kernel = rt_int(&out, "kernel_us");
	cr_expect_leq(runnable, 2 * kernel + 5000, "runnable %lld us against the kernel's %lld us", runnable, kernel);
	rt_free(&out);
}

/* A fork child's default slack is the slack its parent had at the fork:
 * after a round trip through real time the kernel gives it back 2 ms,
 * which the shim took for the parent's default, 50 us (helper-66): 20x. */
Test(lifecycle, a_fork_child_back_from_real_time_has_its_parents_slack)
{
	const char *args[] = { "sched_fork_round_trip", NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct rt_output out = rt_run("rt_misc", args, env);

	if (rt_int(&out, "skipped") == 1) {
		rt_free(&out);
		cr_skip_test("SCHED_FIFO is not allowed here (not root)");
	}
	rt_expect_int(&out, "slack", 2000000);
	long long runnable = rt_int(&out, "runnable_us"), kernel = rt_int(&out, "kernel_us");
	cr_expect_leq(runnable, 2 * kernel + 5000, "runnable %lld us against the kernel's %lld us", runnable, kernel);
	rt_free(&out);
}

/* A sched_setattr a seccomp filter answered with 0 was never made: its
 * attr need not be memory.  The shim read it with a plain load and the
 * program died with SIGSEGV (helper-66). */
static void setattr_faked(const char *mode)
{
	const char *args[] = { mode, NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct rt_output out = rt_run("rt_misc", args, env);

	rt_expect_int(&out, "setattr", 0);
	rt_free(&out);
}

Test(lifecycle, a_faked_sched_setattr_is_not_read_under_a_seen_filter)
{
	setattr_faked("setattr_faked_seen");
}

Test(lifecycle, a_faked_sched_setattr_is_read_safely_under_an_unseen_filter)
{
	setattr_faked("setattr_faked_unseen");
}

Test(lifecycle, an_inherited_filter_meets_no_call_of_the_shim)
{
	sandboxed_waits("sandbox_inherited");
}

/* The program's own getrusage (it overrides libc's): the shim's look at
 * its switches is libc's system call, never a call of the program's. */
Test(lifecycle, the_shim_never_calls_a_getrusage_of_the_program)
{
	const char *args[] = { "own_getrusage", NULL };
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	struct rt_output out = rt_run("rt_misc_own_getrusage", args, env);

	rt_expect_int(&out, "sandbox_waits", 20);
	rt_expect_int(&out, "own_getrusage_calls", 0);
	rt_free(&out);
}

Test(lifecycle, main_thread_pthread_exit_ends_its_tracking)
{
	const char *args[] = { "main_exit", NULL };
	struct rt_output out = rt_run("rt_misc", args, NULL);

	rt_expect_int(&out, "live_before", 1);
	rt_expect_int(&out, "main_record_freed", 1);
	rt_expect_int(&out, "own_record", 1);
	rt_free(&out);
}

/* A program's own pthread_self, exported, returns no glibc descriptor:
 * the shim, which reads the tid from glibc's descriptor, must not take
 * the program's for one (it read the tid at "thread number 1" + 720 and
 * crashed at start). */
/* A sanitizer's runtime calls pthread_self itself (for each new thread's
 * stack): a program's own crashes it before the shim is involved. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SKIP_UNDER_SANITIZER() cr_skip_test("a sanitizer's runtime calls the program's pthread_self itself")
#else
#define SKIP_UNDER_SANITIZER() (void)0
#endif

Test(lifecycle, program_with_its_own_pthread_self)
{
	SKIP_UNDER_SANITIZER();
	struct rt_output out = rt_run("rt_self", NULL, NULL);

	rt_expect_int(&out, "main.own_record", 1);
	rt_expect_int(&out, "thread.own_record", 1);
	rt_expect_int(&out, "self_is_ours", 1);
	rt_free(&out);
}

/* The same, the pthread_self from a library preloaded after the shim
 * (dlsym(RTLD_NEXT) from the shim finds it before glibc's). */
Test(lifecycle, library_with_its_own_pthread_self)
{
	char preload[4096];
	struct rt_output out;

	SKIP_UNDER_SANITIZER();
	snprintf(preload, sizeof(preload), "%s:%s", tdtest_shim_path(), SELF_MODULE);
	out = rt_run_preloaded("rt_self_plain", NULL, NULL, preload);
	rt_expect_int(&out, "main.own_record", 1);
	rt_expect_int(&out, "thread.own_record", 1);
	rt_expect_int(&out, "self_is_ours", 1);
	rt_free(&out);
}

Test(overflow, ended_threads_give_their_records_back)
{
	/* 400 threads, at most 9 at once, in 16 records: none may overflow */
	const char *args[] = { "400", NULL };
	const char *env[] = { "TDSTAT_MAX_THREADS=16", NULL };
	struct rt_output out = rt_run("rt_churn", args, env);

	rt_expect_int(&out, "overflow_total", 0);
	rt_expect_int(&out, "impossible", 0);
	rt_expect_int(&out, "live_end", 1);
	cr_expect_leq(rt_int(&out, "high_water"), 16);
	rt_free(&out);
}

/* A second copy of the shim (another file) preloaded after the first
 * stands down: every thread is counted once, in the first copy's region. */
Test(interposers, second_copy_of_the_shim_stands_down)
{
	char directory[] = "/tmp/tdstat-copy-XXXXXX", copy[256], preload[4096], command[4400];
	const char *args[] = { "threads", NULL };
	struct rt_output out;

	cr_assert_not_null(mkdtemp(directory));
	snprintf(copy, sizeof(copy), "%s/libtdshim.so", directory);
	snprintf(command, sizeof(command), "cp '%s' '%s'", tdtest_shim_path(), copy);
	cr_assert_eq(system(command), 0);
	snprintf(preload, sizeof(preload), "%s:%s", tdtest_shim_path(), copy);
	out = rt_run_preloaded("rt_misc", args, NULL, preload);
	rt_expect_int(&out, "magic_ok", 1);
	rt_expect_int(&out, "blocked", 3);
	rt_expect_int(&out, "live", 4);
	rt_expect_int(&out, "high_water", 4);
	rt_expect_int(&out, "impossible", 0);
	rt_expect_int(&out, "live_end", 1);
	rt_free(&out);
	unlink(copy);
	rmdir(directory);
}

/* ABI 2.3: every record's change mark is twice its seq once its writer
 * rests (region.h), with threads asleep and after they ended; a shim
 * that forgot a mark anywhere (a change, an identity change) leaves one
 * behind its seq. */
Test(marks, follow_every_record_at_rest)
{
	const char *args[] = { "threads", NULL };
	struct rt_output out = rt_run("rt_misc", args, NULL);

	rt_expect_int(&out, "blocked", 3);
	rt_expect_int(&out, "marks_blocked", 1);
	rt_expect_int(&out, "live_end", 1);
	rt_expect_int(&out, "marks_end", 1);
	rt_free(&out);
}

/* Signal handlers as the program sees them, bare and under the shim: the
 * shim puts trampolines of its own in the kernel's actions
 * (runtime/wrap_handler.c), and nothing of them may show, in what the
 * calls return and read back or in how the handlers run, in and out of
 * waits (fixture_handlers.c, with helper-68's breaks of 90753b7: a
 * recovered fault in sigaction's old action, the smallest alternate
 * stack, concurrent swaps, masks that follow their handlers, an
 * asynchronous cancel inside sigaction; each failed on that shim). */
static void expect_program_as_bare(const char *program, const char *mode, struct rt_output *bare_out)
{
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	const char *args[] = { mode, NULL };
	struct rt_output bare = rt_run_preloaded(program, mode ? args : NULL, env, NULL);
	struct rt_output shim = rt_run(program, mode ? args : NULL, env);

	cr_expect_str_eq(shim.text, bare.text, "%s: under the shim:\n%s\nbare:\n%s", mode ? mode : "(default)",
			 shim.text, bare.text);
	rt_free(&shim);
	*bare_out = bare;
}

static void expect_as_bare(const char *mode, struct rt_output *bare_out)
{
	expect_program_as_bare("rt_handlers", mode, bare_out);
}

Test(lifecycle, signal_handlers_look_and_run_as_without_the_shim)
{
	struct rt_output bare;

	expect_as_bare(NULL, &bare);
	/* And the bare run did what the fixture means (a fixture that broke
	 * both ways would compare equal). */
	rt_expect_string(&bare, "old_before_two", "one flags 0x14000000");
	rt_expect_string(&bare, "info_ran", "signal 12 value 4242 code_is_queue 1");
	rt_expect_string(&bare, "resethand_after", "SIG_DFL flags 0x84000000 usr2 0 term 0");
	rt_expect_string(&bare, "jump_waiter", "landed 7");
	rt_expect_string(&bare, "exit_joined", "99");
	rt_expect_string(&bare, "unwritable_old", "faulted");
	rt_expect_string(&bare, "smallest_alternate_stack", "ran 1 overwritten 0");
	rt_expect_string(&bare, "concurrent_swaps", "balanced");
	rt_expect_string(&bare, "under_other_mask", "0");
	/* helper-69's breaks of 600f954: a vfork child's second handler
	 * replaced its parent's, system() put a later handler back; and
	 * helper-70's of 7d7ab83: the same child's seventeenth did. */
	rt_expect_string(&bare, "vfork_child_installs_default", "parent ran 10, reads one");
	rt_expect_string(&bare, "vfork_child_installs_twice", "parent ran 10, reads one");
	rt_expect_string(&bare, "system_restores", "ran 2, reads one");
	/* helper-71's of b3c4e60: the handler's caller was the trampoline,
	 * and it had 96 bytes less of an alternate stack (compared above). */
	rt_expect_string(&bare, "handler_caller", "libc.so.6");
	rt_free(&bare);
}

/* A handler that left a wait by setcontext (not interposed) from an
 * alternate stack too small to lift the thread: the record still says
 * BLOCKED in the semaphore, the scope's frame is gone and written over.
 * A later handler's lift puts back the semaphore wait the record
 * published (28b5baf's shim put back what the dead frame held:
 * "BLOCKED mutex" here). */
Test(lifecycle, a_lift_after_a_jump_the_shim_did_not_see_puts_back_the_published_wait)
{
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	const char *args[] = { "stale-scope", NULL };
	struct rt_output out = rt_run("rt_handlers", args, env);

	rt_expect_string(&out, "stale_before", "BLOCKED sem");
	rt_expect_string(&out, "stale_after", "BLOCKED sem");
	rt_free(&out);
}

#if defined(__x86_64__)
/* helper-71's breaks of b3c4e60, shim only (they read the records): a
 * handler that moves its thread out of a sem_wait by changing its
 * context leaves it running, and its next wait is its own; a clone(CLONE_VM)
 * child on its parent's TLS takes a signal while the parent waits, and
 * the parent stays asleep in its condvar. */
Test(lifecycle, a_handler_that_resumes_elsewhere_leaves_the_wait)
{
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	const char *args[] = { "resumed-elsewhere", NULL };
	struct rt_output out = rt_run("rt_handlers", args, env);

	rt_expect_string(&out, "moved_running", "RUNNABLE");
	rt_expect_string(&out, "moved_then_waits", "BLOCKED sleep");
	rt_expect_string(&out, "moved_after_wait", "RUNNABLE");
	rt_free(&out);
}

static void expect_parent_not_lifted(const char *mode)
{
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	const char *args[] = { mode, NULL };
	struct rt_output out = rt_run("rt_handlers", args, env);

	rt_expect_string(&out, "parent_while_clone_handles", "BLOCKED cond");
	rt_expect_string(&out, "parent_after", "RUNNABLE");
	rt_free(&out);
}

/* (and under a filter the shim knows of: helper-73) */
Test(lifecycle, a_clone_on_its_parents_tls_does_not_lift_the_parent)
{
	expect_parent_not_lifted("clone-vm");
	expect_parent_not_lifted("clone-vm-sandboxed");
}

/* helper-73's breaks of 28561a3, shim only: a call injected in front of
 * the interrupted point returns into the wait, which goes on; a handler
 * that switches the thread out of its wait and a later one that switches
 * it back; and a timed-out condvar wait asleep on its mutex after the
 * timer (b302ae5 counted it RUNNABLE from the timer on: 0.895). */
Test(lifecycle, a_wait_resumes_after_an_injected_call_or_a_switch_back)
{
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	const char *injected[] = { "injected-call", NULL }, *switched[] = { "switch-back", NULL };
	struct rt_output out = rt_run("rt_handlers", injected, env);

	rt_expect_string(&out, "after_injected_call", "BLOCKED sem");
	rt_expect_string(&out, "waiter_returned", "0");
	rt_free(&out);
	out = rt_run("rt_handlers", switched, env);
	rt_expect_string(&out, "switched_out", "RUNNABLE");
	rt_expect_string(&out, "switched_back", "BLOCKED sem");
	rt_expect_string(&out, "waiter_returned", "0");
	rt_free(&out);
	/* Two contexts that both wait, swapped four times (helper-74). */
	const char *two[] = { "two-green", NULL };
	out = rt_run("rt_handlers", two, env);
	rt_expect_string(&out, "two_green", "BLOCKED BLOCKED BLOCKED BLOCKED");
	rt_free(&out);
}

Test(lifecycle, a_timed_out_condvar_wait_asleep_on_its_mutex_is_blocked)
{
	const char *env[] = { "TDSTAT_ENABLE=1", NULL };
	const char *args[] = { "relock", NULL };
	struct rt_output out = rt_run("rt_handlers", args, env);

	rt_expect_string(&out, "relock_asleep", "yes");
	rt_free(&out);
	/* Timeouts of 100 us: each wait starts within 200 us of the last
	 * (helper-76). */
	const char *short_timeouts[] = { "relock-short", NULL };
	out = rt_run("rt_handlers", short_timeouts, env);
	rt_expect_string(&out, "relock_asleep", "yes");
	rt_free(&out);
}

/* A filter the shim does not see kills on getrusage: timed condvar waits
 * that time out run as bare (helper-76: 42c2558's shim died of SIGSYS). */
Test(lifecycle, timed_condvar_waits_make_no_system_call_under_an_unseen_filter)
{
	struct rt_output bare;

	expect_as_bare("seccomp-getrusage", &bare);
	rt_expect_string(&bare, "timed_out_under_filter", "50");
	rt_free(&bare);
}

/* A filter the shim does not see kills on gettid: a handler inside a
 * wait runs as bare (28561a3's lift asked gettid: SIGSYS). */
Test(lifecycle, signal_handlers_inside_waits_make_no_system_call_under_an_unseen_filter)
{
	struct rt_output bare;

	expect_as_bare("seccomp-gettid", &bare);
	rt_expect_string(&bare, "handled_under_filter", "1");
	rt_free(&bare);
}
#endif

/* A program with its own pthread_sigmask (which calls sigaction),
 * sigprocmask, sigemptyset and gettid: the shim calls none of them
 * (600f954's recursed until the stack ran out). */
Test(lifecycle, signal_handlers_call_no_mask_function_of_the_program)
{
	struct rt_output bare;

	expect_program_as_bare("rt_handlers_own_mask", NULL, &bare);
	rt_expect_string(&bare, "own_mask_calls", "0");
	/* Nor its gettid, which takes a lock (helper-73: the shim's start
	 * hung in it; the lift called it). */
	rt_expect_string(&bare, "own_gettid_calls", "0 handled 1");
	rt_free(&bare);
}

/* 90753b7's shim: killed by a filter that forbids rt_sigprocmask (its
 * lock blocked every signal); a vfork child's handler replaced its
 * parent's under a filter; two SCHED_FIFO threads on one CPU spun for
 * good on its lock. */
Test(lifecycle, signal_handlers_under_a_filter_and_in_real_time_as_without_the_shim)
{
	struct rt_output bare;

	expect_as_bare("seccomp-mask", &bare);
	rt_expect_string(&bare, "ran", "2 signal -12");
	rt_free(&bare);
	expect_as_bare("seccomp-vfork", &bare);
	rt_expect_string(&bare, "parent_ran", "signal 10");
	rt_free(&bare);
	expect_as_bare("fifo", &bare);
	rt_free(&bare);
	/* 7d7ab83's shim: the seventeenth refused installation wrote over the
	 * entry of the action in place (helper-70). */
	expect_as_bare("seccomp-refuse", &bare);
	rt_expect_string(&bare, "refusals", "17");
	rt_expect_string(&bare, "after_refusals", "ran 10");
	rt_free(&bare);
}
