/* SPDX-License-Identifier: MIT */
/*
 * libc's syscall(): futex waits through it are waits of kind futex.  That
 * is how C++20's std::atomic::wait, counting_semaphore, latch and barrier
 * (libstdc++'s __platform_wait, compiled into the program) and Rust's std
 * Mutex, Condvar, RwLock, park, channels and scoped joins wait.  Futex
 * wakes stamp the word (runtime/wake.c) so their waiters count as
 * runnable from the wake-up.  SYS_exit ends the thread's tracking;
 * SYS_seccomp, and SYS_prctl with PR_SET_SECCOMP, mark the process
 * sandboxed (shim.h, tdshim_sandboxed) and go on unchanged; a
 * PR_SET_TIMERSLACK through SYS_prctl, and SYS_sched_setscheduler and
 * SYS_sched_setattr, change the slack its timers get (thread.c), noted
 * once they succeed.
 *
 * Every other call goes on to libc's syscall() as it came (a tail jump
 * with the caller's registers and stack): its result, its errno, and the
 * system call made from libc's text.
 */
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "shim.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif

static bool is_futex_wait(int command)
{
	switch (command) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
	case FUTEX_WAIT_REQUEUE_PI:
		return true;
	default:
		return false;
	}
}

/* The words whose waiters a futex operation wakes: none, the first, or
 * (FUTEX_WAKE_OP) both. */
static int futex_woken_words(int command)
{
	switch (command) {
	/* Not the requeues: their result counts waiters moved to another
	 * word too, which that word's wake wakes later. */
	case FUTEX_WAKE:
	case FUTEX_WAKE_BITSET:
	case FUTEX_UNLOCK_PI:
		return 1;
	case FUTEX_WAKE_OP:
		return 2;
	default:
		return 0;
	}
}

__attribute__((noinline)) static long futex_wait_call(long a1, long a2, long a3, long a4, long a5, long a6,
						      const void *site)
{
	int command = (int)a2 & FUTEX_CMD_MASK;
	const struct timespec *timeout = (const struct timespec *)a4;

	bool plain = command == FUTEX_WAIT || command == FUTEX_WAIT_BITSET;
	/* A requeue-PI waiter is woken on the PI futex (a5).  A plain wait
	 * claims a wake-one's entry of the word's ring, or takes the slot's
	 * stamp of a wake of several: the later (stamp_futex_wake). */
	TDSHIM_WAIT_SCOPE_FULL(TDSHIM_KIND(syscall), a1,
			       command == FUTEX_WAIT_REQUEUE_PI ? (const void *)a5 : plain ? (const void *)a1 : NULL,
			       site);
	long result = tdshim_real_syscall(SYS_futex, a1, a2, a3, a4, a5, a6);
	int error = result == -1 ? *tdshim_errno() : 0;

	/* Only a sleep a wake ended claims: one cut short by a signal or a
	 * timeout would take another waiter's entry. */
	tdshim_scope_.claims_stamp = plain && result == 0;

	/* The word had changed already: the call never slept, its time was
	 * on a CPU (docs/CONTRACT.md §2: a call that does not wait is no wait). */
	tdshim_scope_.never_slept = error == EAGAIN;
	/* The timeout, read only once the kernel read it (it expired): an
	 * unreadable one gets the kernel's EFAULT, never a fault here.
	 * FUTEX_WAIT's is relative; the others' absolute (FUTEX_LOCK_PI's
	 * on CLOCK_REALTIME). */
	if (error == ETIMEDOUT && timeout) {
		tdshim_scope_.timed_out = true;
		if (command == FUTEX_WAIT)
			tdshim_scope_.timeout_ns = tdshim_timespec_ns(timeout);
		else if (command != FUTEX_LOCK_PI2)
			tdshim_scope_.deadline_ns = tdshim_deadline_at(
				((int)a2 & FUTEX_CLOCK_REALTIME) || command == FUTEX_LOCK_PI ? CLOCK_REALTIME
											     : CLOCK_MONOTONIC,
				timeout);
	}
	/* The real call's errno, whatever the work above did to it. */
	if (error)
		*tdshim_errno() = error;
	return result;
}

/* futex_waitv waits in progress: their words are not read here (the
 * kernel reads them), so while any is, a wake of one stamps the slot, as
 * a wake of several: a waitv waiter claims no entry, and one it left
 * would be taken by a plain waiter of the same word as its own (a plain
 * waiter and a waitv one woken in turn read 0.51-0.57 runnable against
 * the kernel's 0.01; helper-60). */
static unsigned int waitv_waits;

/* (A cleanup: the count goes down however the wait ends, a thread
 * cancelled in it included.) */
static void waitv_wait_end(const unsigned int **waits)
{
	uatomic_dec((unsigned int *)*waits);
}

__attribute__((noinline)) static long futex_waitv_call(long a1, long a2, long a3, long a4, long a5, long a6,
						       const void *site)
{
	uatomic_inc(&waitv_waits);
	const unsigned int *counted __attribute__((cleanup(waitv_wait_end))) = &waitv_waits;

	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(syscall), a1, site);
	return tdshim_real_syscall(SYS_futex_waitv, a1, a2, a3, a4, a5, a6);
}

/* Before a wake, kept so that a wake that woke nobody (or failed) can
 * withdraw it: a wait already in progress that the kernel ends otherwise
 * (a signal, another process) would take it.  A clock read does not touch
 * errno. */
static void stamp_futex_wake(long a1, long a2, long a3, long a5, struct tdshim_stamp kept[2])
{
	int command = (int)a2 & FUTEX_CMD_MASK, words = futex_woken_words(command);

	if (words == 0 || !tdshim_gathering())
		return;
	/* A wake of one waiter (a Rust or C++ lock's release, a notify_one)
	 * takes an entry of the word's claim ring, which that waiter claims
	 * (futex_wait_call): with one slot, each waiter woken into a full run
	 * queue found there the stamps of the wakes made while it waited for
	 * a CPU, and counted that wait blocked (a Rust Mutex queue read
	 * 0.91-0.95 of the kernel).  A copy goes to the slot, for a waiter
	 * whose entry other wakes of its ring wrote over (24 words of one
	 * ring woken in bursts read 0.56-0.58 of the kernel without it;
	 * helper-60).  While a futex_waitv is in progress, the slot alone.  A
	 * waiter that sleeps on the word other than through syscall() (an
	 * inline system call) claims nothing: a later waiter may take its
	 * entry (runtime/wake.c; the default mutex counts such waits, which a
	 * futex word's cannot). */
	if ((command == FUTEX_WAKE || command == FUTEX_WAKE_BITSET) && (int)a3 == 1 &&
	    CMM_LOAD_SHARED(waitv_waits) == 0)
		tdshim_wake_stamp_one_and_slot_keep((const void *)a1, &kept[0]);
	else
		tdshim_wake_stamp_keep((const void *)a1, &kept[0]);
	if (words == 2)
		tdshim_wake_stamp_keep((const void *)a5, &kept[1]);
}

/* struct sched_attr's first fields (linux/sched/types.h): the policy,
 * which the call leaves alone with SCHED_FLAG_KEEP_POLICY or
 * SCHED_FLAG_KEEP_PARAMS (helper-66: the latter's returned 0, the
 * policy unchanged). */
struct sched_attr_head {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
};
#define TDSHIM_SCHED_FLAG_RESET_ON_FORK 0x01
#define TDSHIM_SCHED_FLAG_KEEP_POLICY 0x08
#define TDSHIM_SCHED_FLAG_KEEP_PARAMS 0x10

static void sched_call_succeeded(long number, long a1, long a2)
{
	if (number == SYS_sched_setscheduler) {
		tdshim_sched_changed((pid_t)a1, (int)a2);
		return;
	}
	/* Read through the kernel: a seccomp filter may have answered 0 for
	 * a call the kernel never made, with a pointer that is not one
	 * (helper-66: a plain load died with SIGSEGV).  Not in a sandbox
	 * (shim.h), where the change is not followed. */
	struct sched_attr_head attr;
	struct iovec local = { &attr, sizeof(attr) }, remote = { (void *)a2, sizeof(attr) };
	if (!a2 || tdshim_in_sandbox() ||
	    process_vm_readv(tdshim_cached_tid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof(attr) ||
	    (attr.sched_flags & (TDSHIM_SCHED_FLAG_KEEP_POLICY | TDSHIM_SCHED_FLAG_KEEP_PARAMS)))
		return;
	int policy = (int)attr.sched_policy;
	if (attr.sched_flags & TDSHIM_SCHED_FLAG_RESET_ON_FORK)
		policy |= SCHED_RESET_ON_FORK;
	tdshim_sched_changed((pid_t)a1, policy);
}

__attribute__((noinline)) static long tracked_syscall(long number, long a1, long a2, long a3, long a4, long a5,
						      long a6, const void *site)
{
	tdshim_ensure_init();
	/* A thread ending through the system call itself runs no destructor:
	 * its tracking ends here. */
	if (number == SYS_exit) {
		tdshim_thread_end();
		return tdshim_real_syscall(number, a1, a2, a3, a4, a5, a6);
	}
	if (number == SYS_futex_waitv)
		return futex_waitv_call(a1, a2, a3, a4, a5, a6, site);
	/* A filter on its way in (libseccomp's way, or prctl's through
	 * syscall()): see tdshim_sandboxed. */
	if (number == SYS_seccomp || number == SYS_prctl) {
		if (number == SYS_seccomp || a1 == PR_SET_SECCOMP)
			tdshim_note_sandbox();
		long result = tdshim_real_syscall(number, a1, a2, a3, a4, a5, a6);

		if (number == SYS_prctl && a1 == PR_SET_TIMERSLACK && result == 0)
			tdshim_timer_slack_changed((unsigned long)a2);
		return result;
	}
	/* A change of scheduling policy: see tdshim_sched_changed. */
	if (number == SYS_sched_setscheduler || number == SYS_sched_setattr) {
		long result = tdshim_real_syscall(number, a1, a2, a3, a4, a5, a6);

		if (result == 0) {
			TDSHIM_SAVE_ERRNO();
			sched_call_succeeded(number, a1, a2);
			TDSHIM_RESTORE_ERRNO();
		}
		return result;
	}
	if (is_futex_wait((int)a2 & FUTEX_CMD_MASK))
		return futex_wait_call(a1, a2, a3, a4, a5, a6, site);
	struct tdshim_stamp kept[2] = { { 0 }, { 0 } };
	stamp_futex_wake(a1, a2, a3, a5, kept);
	long result = tdshim_real_syscall(SYS_futex, a1, a2, a3, a4, a5, a6);
	if (result <= 0) {
		tdshim_wake_withdraw(&kept[0]);
		tdshim_wake_withdraw(&kept[1]);
	}
	return result;
}

/*
 * Every other call goes to libc's syscall() with the registers and stack
 * as the caller left them: a tail jump, no second variadic decoding, and
 * the system call instruction stays libc's.  A program that lets only
 * libc's text make system calls (syscall user dispatch, a seccomp filter
 * on the instruction pointer) sees no difference; a syscall instruction
 * of the shim's own would be outside that text (SIGSYS).
 */
static long passed_through(long number, long a1, long a2, long a3, long a4, long a5, long a6)
{
	tdshim_ensure_init();
	return tdshim_real_syscall(number, a1, a2, a3, a4, a5, a6);
}

/* The tracked numbers' entry from syscall() below: on x86-64 a variadic
 * call passes its integer arguments where a call of seven longs does
 * (the seventh on the stack, read as va_arg would read it), so no
 * register save area is spilled and decoded per futex call. */
long tdshim_syscall_tracked(long number, long a1, long a2, long a3, long a4, long a5, long a6);
__attribute__((used)) long tdshim_syscall_tracked(long number, long a1, long a2, long a3, long a4, long a5, long a6)
{
	return tracked_syscall(number, a1, a2, a3, a4, a5, a6, TDSHIM_CALL_SITE());
}

/* The C entry: the tracked numbers (where syscall() below is not used),
 * and any call made before the real syscall() is known. */
long tdshim_syscall_entry(long number, ...);
__attribute__((used)) long tdshim_syscall_entry(long number, ...)
{
	va_list arguments;
	long a1, a2, a3, a4, a5, a6;

	va_start(arguments, number);
	a1 = va_arg(arguments, long);
	a2 = va_arg(arguments, long);
	a3 = va_arg(arguments, long);
	a4 = va_arg(arguments, long);
	a5 = va_arg(arguments, long);
	a6 = va_arg(arguments, long);
	va_end(arguments);

	if (caa_unlikely(number == SYS_futex || number == SYS_futex_waitv || number == SYS_exit || number == SYS_seccomp ||
			 number == SYS_prctl || number == SYS_sched_setscheduler || number == SYS_sched_setattr))
		return tracked_syscall(number, a1, a2, a3, a4, a5, a6, TDSHIM_CALL_SITE());
	return passed_through(number, a1, a2, a3, a4, a5, a6);
}

#if defined(__x86_64__)
#define TDSHIM_STRING_(x) #x
#define TDSHIM_STRING(x) TDSHIM_STRING_(x)
_Static_assert(SYS_futex > SYS_exit && SYS_futex_waitv > SYS_exit && SYS_seccomp > SYS_exit && SYS_prctl > SYS_exit &&
		       SYS_sched_setscheduler > SYS_exit && SYS_sched_setattr > SYS_exit,
	       "syscall()'s first compare: SYS_exit is the lowest number watched");

/* syscall(): the number is in %rdi; the tracked ones go to the tracked
 * entry, every other call while tdshim_real_syscall is unset to the C
 * entry (same registers, same stack, so the same arguments and return
 * address). */
__asm__(".text\n"
	".globl syscall\n"
	".type syscall, @function\n"
	".p2align 4\n"
	"syscall:\n"
	".cfi_startproc\n"
	"\tendbr64\n"
	/* Below the lowest watched number (SYS_exit, 60): most calls,
	 * read, write, getpid among them, go on at once. */
	"\tcmpq $" TDSHIM_STRING(SYS_exit) ", %rdi\n"
	"\tjb 3f\n"
	"\tcmpq $" TDSHIM_STRING(SYS_futex) ", %rdi\n"
	"\tje 2f\n"
	"\tcmpq $" TDSHIM_STRING(SYS_futex_waitv) ", %rdi\n"
	"\tje 2f\n"
	"\tcmpq $" TDSHIM_STRING(SYS_exit) ", %rdi\n"
	"\tje 2f\n"
	"\tcmpq $" TDSHIM_STRING(SYS_seccomp) ", %rdi\n"
	"\tje 2f\n"
	"\tcmpq $" TDSHIM_STRING(SYS_prctl) ", %rdi\n"
	"\tje 2f\n"
	"\tcmpq $" TDSHIM_STRING(SYS_sched_setscheduler) ", %rdi\n"
	"\tje 2f\n"
	"\tcmpq $" TDSHIM_STRING(SYS_sched_setattr) ", %rdi\n"
	"\tje 2f\n"
	"3:\tmovq tdshim_real_syscall(%rip), %rax\n"
	"\ttestq %rax, %rax\n"
	"\tjz 1f\n"
	"\tjmp *%rax\n"
	"1:\tjmp tdshim_syscall_entry\n"
	"2:\tjmp tdshim_syscall_tracked\n"
	".cfi_endproc\n"
	".size syscall, .-syscall\n");
#else
TDSHIM_EXPORT long syscall(long number, ...) __attribute__((alias("tdshim_syscall_entry")));
#endif
