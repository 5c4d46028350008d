/* SPDX-License-Identifier: MIT */
/*
 * Each interposed call changes the caller's record only when it waits:
 * nowait (it can finish at once) -> seq unchanged, still RUNNABLE;
 * wait -> BLOCKED while it waits (seen from another thread), RUNNABLE
 * after, and the call's own result intact.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "rt_test.h"

/* read and readv are interposed only on request (bench cost, see
 * runtime/wrap_read.c); the tests of them ask for it. */
static const char *const track_reads[] = { "TDSTAT_TRACK_READS=1", NULL };

static const char *const *environment_for(const char *call)
{
	return strncmp(call, "read", 4) && strncmp(call, "recv", 4) ? NULL : track_reads;
}

static void expect_no_write(const char *call)
{
	const char *args[] = { "nowait", call, NULL };
	struct rt_output out = rt_run("rt_calls", args, environment_for(call));
	unsigned long long before = rt_u64(&out, "before_seq"), after = rt_u64(&out, "after_seq");

	rt_expect_string(&out, "result", "ok");
	rt_expect_string(&out, "before_state", "RUNNABLE");
	rt_expect_string(&out, "after_state", "RUNNABLE");
	cr_expect_eq(rt_u64(&out, "before_settled"), 1, "%s: a change of the record is under way outside a write", call);
	cr_expect_eq(after, before, "%s finished without waiting but wrote its record: seq %llu -> %llu",
		     call, before, after);
	rt_free(&out);
}

static void expect_blocked_then_runnable(const char *call)
{
	const char *args[] = { "wait", call, NULL };
	struct rt_output out = rt_run("rt_calls", args, environment_for(call));
	unsigned long long before = rt_u64(&out, "before_seq"), after = rt_u64(&out, "after_seq");

	rt_expect_string(&out, "observed", "BLOCKED");
	rt_expect_string(&out, "result", "ok");
	rt_expect_string(&out, "before_state", "RUNNABLE");
	rt_expect_string(&out, "after_state", "RUNNABLE");
	cr_expect_eq(rt_u64(&out, "after_settled"), 1, "%s: a change of the record is under way outside a write",
		     call);
	/* region.h's latch: one seq step per published change. */
	cr_expect_geq(after, before + 2, "%s waited: expected two changes at least, seq %llu -> %llu",
		      call, before, after);
	rt_free(&out);
}

/* Without the request a pipe read is no transition, even when it waits. */
Test(nowait, read_untracked_by_default)
{
	const char *args[] = { "nowait", "read", NULL };
	struct rt_output out = rt_run("rt_calls", args, NULL);

	rt_expect_string(&out, "result", "ok");
	cr_expect_eq(rt_u64(&out, "after_seq"), rt_u64(&out, "before_seq"));
	rt_free(&out);
}

#define NOWAIT(call) \
	Test(nowait, call) { expect_no_write(#call); }
#define WAIT(call) \
	Test(wait, call) { expect_blocked_then_runnable(#call); }
#define BOTH(call) NOWAIT(call) WAIT(call)

BOTH(mutex_lock)
BOTH(mutex_timedlock)
BOTH(mutex_clocklock)
BOTH(mutex_recursive)
BOTH(mutex_errorcheck)
BOTH(rwlock_rdlock)
BOTH(rwlock_wrlock)
BOTH(rwlock_timedrdlock)
BOTH(rwlock_timedwrlock)
BOTH(rwlock_clockrdlock)
BOTH(rwlock_clockwrlock)
WAIT(cond_wait)
WAIT(cond_timedwait)
WAIT(cond_clockwait)
WAIT(barrier_wait)
BOTH(sem_wait)
BOTH(sem_timedwait)
BOTH(sem_clockwait)
BOTH(join)
BOTH(timedjoin)
BOTH(clockjoin)
BOTH(poll)
BOTH(ppoll)
BOTH(select)
BOTH(pselect)
BOTH(epoll_wait)
BOTH(epoll_pwait)
BOTH(read)
BOTH(readv)
NOWAIT(read_file)
BOTH(recv)
BOTH(recvfrom)
BOTH(recvmsg)
BOTH(accept)
BOTH(accept4)
BOTH(waitpid)
BOTH(wait)
BOTH(waitid)
BOTH(sigwait)
BOTH(sigwaitinfo)
BOTH(sigtimedwait)
WAIT(sigsuspend)
WAIT(pause)
WAIT(sleep)
WAIT(usleep)
WAIT(nanosleep)
WAIT(clock_nanosleep)
