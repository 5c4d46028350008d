/* SPDX-License-Identifier: MIT */
/*
 * Signal handlers: sigaction(), and signal(), sysv_signal() and sigset(),
 * which glibc implements with its own internal sigaction.  No transition
 * of their own.  Interposed so that a handler that runs while its thread
 * waits counts as running, as the kernel counts it: the wait's scope
 * would otherwise keep the thread BLOCKED through the handler (helper-64:
 * a thread whose handler spun inside its waits read 0.16-0.30 of its
 * kernel figures).
 *
 * The kernel gets the shim's trampoline in place of the program's
 * function, with the program's flags, mask and everything else as given;
 * the function goes into a table by signal, which the trampoline calls
 * with the kernel's three arguments (on x86-64 the kernel passes the
 * siginfo and the context in registers also without SA_SIGINFO, and a
 * handler of one argument ignores the others).  What the program reads
 * back (sigaction's old action, signal()'s and sigset()'s result) is its
 * own function again.  SIG_DFL and SIG_IGN go to the kernel as they are.
 *
 * signal(), sysv_signal() and sigset() run for real (their flags and
 * siginterrupt()'s set are libc's own), then the handler they installed
 * is replaced by the trampoline the same way: a signal that arrives
 * between the two runs the program's function directly, counted in the
 * wait as before.  siginterrupt(), and glibc's own save-and-restore of an
 * action (system(), posix_spawn), read the kernel's action and write it
 * back: the trampoline stays, and so does the table.
 *
 * Changes of one process's actions go one at a time (a lock, taken with
 * every signal blocked on the taking thread, so that no handler of its
 * own waits for it): the table and the kernel change together, and an
 * old action read back matches the table.  The table is written before
 * the kernel gets the trampoline, so a signal never finds an empty
 * entry.  A vfork child (its parent's memory, its own actions) installs
 * the program's function as it is and leaves the table alone.
 *
 * Not seen: a handler installed by a raw rt_sigaction system call, or
 * before the shim started (a constructor that ran before the shim's).
 * Those run as they did, counted in the wait they interrupt.
 */
#include <string.h>
#include <linux/futex.h>
#include <ucontext.h>

#include "shim.h"

/*
 * Two trampolines, each with a table of the program's functions by
 * signal.  An installation writes the function into the table of the
 * trampoline the kernel does not have for that signal (the kernel's
 * action, read first, says which one it has), then gives the kernel that
 * trampoline: a signal delivered under the old action still runs the old
 * function, with the old action's mask and flags, and an action read
 * back names its own function.  An entry is written again only by the
 * installation after next.  A vfork child (its parent's memory, its own
 * actions) writes the entry its own actions do not use, which its
 * parent's do not either, unless another thread of the parent changed the
 * same signal's action since the vfork.
 */
static void trampoline_0(int signal_number, siginfo_t *info, void *context);
static void trampoline_1(int signal_number, siginfo_t *info, void *context);
typedef void (*tdshim_action_fn)(int, siginfo_t *, void *);
static const tdshim_action_fn trampolines[2] = { trampoline_0, trampoline_1 };
static void *program_handlers[2][_NSIG];

/* siginterrupt()'s signals, which signal() installs without SA_RESTART
 * (glibc's own set, kept the same way). */
static uint64_t interrupting[(_NSIG + 63) / 64];

/*
 * Changes of the process's actions go one at a time: a lock (a futex
 * word: a waiter sleeps, so a real-time thread never spins on a holder
 * it preempted), taken with every signal blocked on the taking thread
 * (not in a seccomp sandbox: the mask is a system call) and its
 * cancellation deferred (an asynchronous one cannot be blocked).  Nothing
 * inside may fault: the program's structures are read before and written
 * after.  A handler of the holder that changes an action itself (in a
 * sandbox) goes on without the lock.
 */
static int actions_lock; /* 0 free, 1 held, 2 held with a waiter */
static __thread bool holding_actions TDSHIM_TLS;

struct hold {
	sigset_t mask;
	int cancel_type;
	bool nested, masked, cancel_changed;
};

static void hold_actions(struct hold *hold)
{
	sigset_t all;

	hold->nested = holding_actions;
	if (hold->nested)
		return;
	TDSHIM_SAVE_ERRNO();
	sigfillset(&all);
	hold->masked = !tdshim_in_sandbox() && pthread_sigmask(SIG_SETMASK, &all, &hold->mask) == 0;
	/* Deferred, not disabled: glibc's cancellation handler acts on an
	 * asynchronous cancel whatever the state (cancel_async, helper-68). */
	hold->cancel_changed = tdshim_real_pthread_setcanceltype &&
			       tdshim_real_pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &hold->cancel_type) == 0;
	holding_actions = true;
	if (uatomic_cmpxchg(&actions_lock, 0, 1) != 0)
		while (uatomic_xchg(&actions_lock, 2) != 0)
			tdshim_futex(&actions_lock, FUTEX_WAIT_PRIVATE, 2, NULL);
	TDSHIM_RESTORE_ERRNO();
}

static void release_actions(const struct hold *hold)
{
	if (hold->nested)
		return;
	TDSHIM_SAVE_ERRNO();
	if (uatomic_xchg(&actions_lock, 0) == 2)
		tdshim_futex(&actions_lock, FUTEX_WAKE_PRIVATE, 1, NULL);
	holding_actions = false;
	if (hold->masked)
		pthread_sigmask(SIG_SETMASK, &hold->mask, NULL);
	if (hold->cancel_changed)
		tdshim_real_pthread_setcanceltype(hold->cancel_type, NULL);
	TDSHIM_RESTORE_ERRNO();
}

void tdshim_handlers_after_fork(void)
{
	CMM_STORE_SHARED(actions_lock, 0);
}

/* Signals a program may give a handler: not SIGKILL or SIGSTOP, not the
 * two glibc keeps for itself (its sigaction refuses them). */
static bool wrappable(int signal_number)
{
	return signal_number > 0 && signal_number < _NSIG && signal_number != SIGKILL && signal_number != SIGSTOP &&
	       !(signal_number >= 32 && signal_number < SIGRTMIN);
}

/* Which trampoline a handler is, or -1. */
static int slot_of(void (*handler)(int))
{
	uintptr_t value = (uintptr_t)handler;

	return value == (uintptr_t)trampoline_0 ? 0 : value == (uintptr_t)trampoline_1 ? 1 : -1;
}

/* A function of the program's (not SIG_DFL, SIG_IGN, SIG_ERR, SIG_HOLD
 * or another small number the kernel would take as an address, nor a
 * trampoline, which a raw system call could have read). */
static bool is_function(void (*handler)(int))
{
	return (uintptr_t)handler >= 4096 && handler != SIG_ERR && slot_of(handler) < 0;
}

/* The program's view of a handler the kernel has for `signal_number`. */
static void (*as_program_sees(void (*kernel)(int), int signal_number))(int)
{
	int slot = slot_of(kernel);

	return slot < 0 ? kernel : (void (*)(int))CMM_LOAD_SHARED(program_handlers[slot][signal_number]);
}

static int change_action(int (*real)(int, const struct sigaction *, struct sigaction *), int signal_number,
			 const struct sigaction *action, struct sigaction *old)
{
	struct sigaction copy, kernel_old;
	struct hold hold;

	/* An unreadable action: the real call meets it (glibc reads it in
	 * user space, as it writes the old one). */
	if (tdshim_standing_down || !wrappable(signal_number) || (action && !tdshim_copy_in(action, &copy, sizeof(copy)))) {
		int result = real(signal_number, action, old);

		if (result == 0 && old)
			old->sa_handler = as_program_sees(old->sa_handler, signal_number);
		return result;
	}
	hold_actions(&hold);
	if (action && is_function(copy.sa_handler)) {
		struct sigaction current;
		int next = 0;

		TDSHIM_SAVE_ERRNO();
		if (real(signal_number, NULL, &current) == 0 && slot_of(current.sa_handler) == 0)
			next = 1;
		TDSHIM_RESTORE_ERRNO();
		CMM_STORE_SHARED(program_handlers[next][signal_number], (void *)copy.sa_handler);
		copy.sa_sigaction = trampolines[next];
	}
	int result = real(signal_number, action ? &copy : NULL, &kernel_old);
	int failure = errno;
	void (*old_handler)(int) = result == 0 ? as_program_sees(kernel_old.sa_handler, signal_number) : NULL;

	release_actions(&hold);
	if (result == 0 && old) {
		*old = kernel_old;
		old->sa_handler = old_handler;
	}
	errno = failure;
	return result;
}

TDSHIM_EXPORT int sigaction(int signal_number, const struct sigaction *action, struct sigaction *old)
{
	TDSHIM_REQUIRE_LIBC(sigaction);
	return change_action(tdshim_real_sigaction, signal_number, action, old);
}

int __sigaction(int signal_number, const struct sigaction *action, struct sigaction *old);
TDSHIM_EXPORT int __sigaction(int signal_number, const struct sigaction *action, struct sigaction *old)
{
	TDSHIM_REQUIRE_LIBC(__sigaction);
	return change_action(tdshim_real___sigaction, signal_number, action, old);
}

/*
 * signal(), sysv_signal() and sigset() with glibc's semantics, through
 * the sigaction above (glibc's go through its internal one, which would
 * give the kernel the program's function).  signal() (BSD): the signal
 * blocked in its handler, SA_RESTART unless siginterrupt() said
 * otherwise; sysv_signal(): reset on delivery, not blocked, not
 * restarted; sigset(): SIG_HOLD blocks the signal, anything else
 * unblocks it, SIG_HOLD returned when it was blocked.
 */
static bool bad_signal_call(int signal_number, __sighandler_t handler)
{
	if (handler != SIG_ERR && signal_number >= 1 && signal_number < _NSIG)
		return false;
	errno = EINVAL;
	return true;
}

static __sighandler_t install(int signal_number, __sighandler_t handler, const sigset_t *mask, int flags)
{
	struct sigaction action = { .sa_handler = handler, .sa_flags = flags }, old;

	action.sa_mask = *mask;
	if (!tdshim_real_sigaction) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	if (change_action(tdshim_real_sigaction, signal_number, &action, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

static bool is_interrupting(int signal_number)
{
	unsigned int bit = (unsigned int)signal_number;

	return (CMM_LOAD_SHARED(interrupting[bit / 64]) >> (bit % 64)) & 1;
}

static __sighandler_t bsd_handler(int signal_number, __sighandler_t handler)
{
	sigset_t mask;

	tdshim_ensure_init();
	if (bad_signal_call(signal_number, handler))
		return SIG_ERR;
	sigemptyset(&mask);
	sigaddset(&mask, signal_number);
	return install(signal_number, handler, &mask, is_interrupting(signal_number) ? 0 : SA_RESTART);
}

static __sighandler_t sysv_handler(int signal_number, __sighandler_t handler)
{
	sigset_t mask;

	tdshim_ensure_init();
	if (bad_signal_call(signal_number, handler))
		return SIG_ERR;
	sigemptyset(&mask);
	return install(signal_number, handler, &mask, SA_RESETHAND | SA_NODEFER | SA_INTERRUPT);
}

TDSHIM_EXPORT __sighandler_t signal(int signal_number, __sighandler_t handler)
{
	return bsd_handler(signal_number, handler);
}

__sighandler_t bsd_signal(int signal_number, __sighandler_t handler);
TDSHIM_EXPORT __sighandler_t bsd_signal(int signal_number, __sighandler_t handler)
{
	return bsd_handler(signal_number, handler);
}

TDSHIM_EXPORT __sighandler_t ssignal(int signal_number, __sighandler_t handler)
{
	return bsd_handler(signal_number, handler);
}

TDSHIM_EXPORT __sighandler_t sysv_signal(int signal_number, __sighandler_t handler)
{
	return sysv_handler(signal_number, handler);
}

__sighandler_t __sysv_signal(int signal_number, __sighandler_t handler);
TDSHIM_EXPORT __sighandler_t __sysv_signal(int signal_number, __sighandler_t handler)
{
	return sysv_handler(signal_number, handler);
}

TDSHIM_EXPORT __sighandler_t sigset(int signal_number, __sighandler_t disposition)
{
	sigset_t set, old_set, empty;

	tdshim_ensure_init();
	sigemptyset(&set);
	if (sigaddset(&set, signal_number) < 0)
		return SIG_ERR;
	if (disposition == SIG_HOLD) {
		struct sigaction old;

		if (sigprocmask(SIG_BLOCK, &set, &old_set) < 0)
			return SIG_ERR;
		if (sigismember(&old_set, signal_number))
			return SIG_HOLD;
		if (sigaction(signal_number, NULL, &old) < 0)
			return SIG_ERR;
		return old.sa_handler;
	}
	sigemptyset(&empty);
	__sighandler_t old_handler = install(signal_number, disposition, &empty, 0);
	if (old_handler == SIG_ERR)
		return SIG_ERR;
	if (sigprocmask(SIG_UNBLOCK, &set, &old_set) < 0)
		return SIG_ERR;
	return sigismember(&old_set, signal_number) ? SIG_HOLD : old_handler;
}

/* glibc's own, which reads the kernel's action and writes it back with
 * SA_RESTART changed (the trampoline stays), under the lock; and the
 * signal noted for signal() above. */
TDSHIM_EXPORT int siginterrupt(int signal_number, int interrupt)
{
	struct hold hold;

	TDSHIM_REQUIRE_LIBC(siginterrupt);
	hold_actions(&hold);
	int result = tdshim_real_siginterrupt(signal_number, interrupt);
	int failure = errno;

	if (result == 0 && signal_number > 0 && signal_number < _NSIG) {
		unsigned int bit = (unsigned int)signal_number;

		if (interrupt)
			uatomic_or(&interrupting[bit / 64], UINT64_C(1) << (bit % 64));
		else
			uatomic_and(&interrupting[bit / 64], ~(UINT64_C(1) << (bit % 64)));
	}
	release_actions(&hold);
	errno = failure;
	return result;
}

/*
 * The room the thread is lifted out of its wait with, on an alternate
 * signal stack: the lift's record changes run on it before and after the
 * program's handler (about 550 bytes deeper than the trampoline, which
 * the handler's own frames may not reach: a handler of a few bytes on a
 * stack of sysconf(_SC_MINSIGSTKSZ) overflowed it; helper-68).  With
 * less left, the handler runs as it did before the lift, counted in the
 * wait.
 */
#define LIFT_STACK_ROOM 4096u

static bool room_to_lift(const void *context)
{
	const ucontext_t *interrupted = context;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0), base = (uintptr_t)interrupted->uc_stack.ss_sp;

	if (interrupted->uc_stack.ss_flags & SS_DISABLE)
		return true;
	if (here < base || here - base >= interrupted->uc_stack.ss_size)
		return true;
	return here - base >= LIFT_STACK_ROOM;
}

/* What the kernel runs: the program's function of that trampoline, with
 * the thread lifted out of the wait the signal interrupted (thread.c)
 * while it runs.  errno is the handler's business; the shim's own steps
 * leave it as it was.  Not inlined into the two: its frame is the one
 * whose cleanup runs on the way out. */
static __attribute__((noinline)) void run_handler(int slot, int signal_number, siginfo_t *info, void *context)
{
	tdshim_action_fn handler = (tdshim_action_fn)CMM_LOAD_SHARED(program_handlers[slot][signal_number]);
	struct tdshim_lift lift __attribute__((cleanup(tdshim_handler_leave))) = { 0 };

	if (caa_unlikely(tdshim_self.wait_depth != 0) && room_to_lift(context)) {
		TDSHIM_SAVE_ERRNO();
		tdshim_handler_enter(&lift);
		TDSHIM_RESTORE_ERRNO();
	}
	if (caa_likely(handler != NULL))
		handler(signal_number, info, context);
	lift.returned = true;
}

static void trampoline_0(int signal_number, siginfo_t *info, void *context)
{
	run_handler(0, signal_number, info, context);
}

static void trampoline_1(int signal_number, siginfo_t *info, void *context)
{
	run_handler(1, signal_number, info, context);
}
