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

#include "shim.h"

/* The program's function of each signal whose kernel action is the
 * trampoline (read by the trampoline, written under the lock). */
static void *program_handlers[_NSIG];
/* The tid of the thread changing an action, 0 when none. */
static pid_t changing;

static void trampoline(int signal_number, siginfo_t *info, void *context);

/* Signals a program may give a handler: not SIGKILL or SIGSTOP, not the
 * ones glibc keeps for itself (its sigaction refuses them). */
static bool wrappable(int signal_number)
{
	return signal_number > 0 && signal_number < _NSIG && signal_number != SIGKILL && signal_number != SIGSTOP &&
	       !(signal_number >= 32 && signal_number < SIGRTMIN);
}

/* A function of the program's (not SIG_DFL, SIG_IGN, SIG_ERR, SIG_HOLD
 * or another small number the kernel would take as an address, nor the
 * trampoline, which a raw system call could have read). */
static bool is_function(void (*handler)(int))
{
	uintptr_t value = (uintptr_t)handler;

	return value >= 4096 && handler != SIG_ERR && value != (uintptr_t)trampoline;
}

static void *handler_of(int signal_number)
{
	return CMM_LOAD_SHARED(program_handlers[signal_number]);
}

/* The program's view of a handler the kernel returned. */
static void (*as_program_sees(void (*kernel)(int), void *program))(int)
{
	return (uintptr_t)kernel == (uintptr_t)trampoline ? (void (*)(int))program : kernel;
}

struct hold {
	sigset_t mask;
	bool masked, locked;
};

static void hold_actions(struct hold *hold)
{
	sigset_t all;
	pid_t tid = tdshim_cached_tid();

	sigfillset(&all);
	hold->masked = pthread_sigmask(SIG_SETMASK, &all, &hold->mask) == 0;
	hold->locked = false;
	/* The owner again: only if blocking failed and a handler of this
	 * thread came in between; it goes on without the lock. */
	while (!hold->locked && CMM_LOAD_SHARED(changing) != tid) {
		hold->locked = uatomic_cmpxchg(&changing, 0, tid) == 0;
		if (!hold->locked)
			caa_cpu_relax();
	}
}

static void release_actions(const struct hold *hold)
{
	if (hold->locked) {
		cmm_smp_mb();
		CMM_STORE_SHARED(changing, 0);
	}
	if (hold->masked)
		pthread_sigmask(SIG_SETMASK, &hold->mask, NULL);
}

void tdshim_handlers_after_fork(void)
{
	CMM_STORE_SHARED(changing, 0);
}

/* The kernel's action of `signal_number` now: a function of the
 * program's becomes the trampoline's (signal(), sysv_signal(), sigset()
 * just installed it). */
static void adopt(int signal_number)
{
	struct sigaction now;

	if (tdshim_real_sigaction(signal_number, NULL, &now) != 0 || !is_function(now.sa_handler))
		return;
	CMM_STORE_SHARED(program_handlers[signal_number], (void *)now.sa_handler);
	now.sa_sigaction = trampoline;
	tdshim_real_sigaction(signal_number, &now, NULL);
}

static int change_action(int (*real)(int, const struct sigaction *, struct sigaction *), int signal_number,
			 const struct sigaction *action, struct sigaction *old)
{
	struct sigaction copy;
	struct hold hold;

	/* An unreadable action: the real call answers EFAULT. */
	if (tdshim_standing_down || !wrappable(signal_number) || (action && !tdshim_copy_in(action, &copy, sizeof(copy))) ||
	    !tdshim_caller_owns_tls()) {
		int result = real(signal_number, action, old);

		if (result == 0 && old)
			old->sa_handler = as_program_sees(old->sa_handler, handler_of(signal_number));
		return result;
	}
	bool wrap = action && is_function(copy.sa_handler);

	TDSHIM_SAVE_ERRNO();
	hold_actions(&hold);
	TDSHIM_RESTORE_ERRNO();
	void *previous = handler_of(signal_number);
	if (wrap) {
		CMM_STORE_SHARED(program_handlers[signal_number], (void *)copy.sa_handler);
		copy.sa_sigaction = trampoline;
	}
	int result = real(signal_number, wrap ? &copy : action, old);
	int failure = errno;

	if (wrap && result != 0)
		CMM_STORE_SHARED(program_handlers[signal_number], previous);
	release_actions(&hold);
	errno = failure;
	if (result == 0 && old)
		old->sa_handler = as_program_sees(old->sa_handler, previous);
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

/* signal() and the like: the real call, then its handler adopted.  Not
 * inside the hold: sigset() reads and changes the thread's signal mask
 * (SIG_HOLD), which the hold blocks whole.  Whatever another thread
 * changed meanwhile, adopt() leaves the table as the kernel's action. */
static __sighandler_t set_handler(__sighandler_t (*real)(int, __sighandler_t), int signal_number,
				  __sighandler_t handler)
{
	struct hold hold;
	void *previous = handler_of(signal_number);
	__sighandler_t old = real(signal_number, handler);

	if (old == SIG_ERR || tdshim_standing_down || !wrappable(signal_number) || !tdshim_caller_owns_tls())
		return as_program_sees(old, previous);
	TDSHIM_SAVE_ERRNO();
	hold_actions(&hold);
	adopt(signal_number);
	release_actions(&hold);
	TDSHIM_RESTORE_ERRNO();
	return as_program_sees(old, previous);
}

#define TDSHIM_SET_HANDLER(name)                                                           \
	__sighandler_t name(int signal_number, __sighandler_t handler);                      \
	TDSHIM_EXPORT __sighandler_t name(int signal_number, __sighandler_t handler)         \
	{                                                                                    \
		tdshim_ensure_init();                                                        \
		if (caa_unlikely(!tdshim_real_##name)) {                                     \
			errno = ENOSYS;                                                      \
			return SIG_ERR;                                                      \
		}                                                                            \
		return set_handler(tdshim_real_##name, signal_number, handler);              \
	}

TDSHIM_SET_HANDLER(signal)
TDSHIM_SET_HANDLER(bsd_signal)
TDSHIM_SET_HANDLER(ssignal)
TDSHIM_SET_HANDLER(sysv_signal)
TDSHIM_SET_HANDLER(__sysv_signal)
TDSHIM_SET_HANDLER(sigset)

/* What the kernel runs: the program's function, with the thread lifted
 * out of the wait the signal interrupted (thread.c) while it runs.  errno
 * is the handler's business; the shim's own steps leave it as it was. */
static void trampoline(int signal_number, siginfo_t *info, void *context)
{
	void (*handler)(int, siginfo_t *, void *) = (void (*)(int, siginfo_t *, void *))handler_of(signal_number);
	struct tdshim_lift lift __attribute__((cleanup(tdshim_handler_leave))) = { 0 };

	if (caa_unlikely(tdshim_self.wait_depth != 0)) {
		TDSHIM_SAVE_ERRNO();
		tdshim_handler_enter(&lift);
		TDSHIM_RESTORE_ERRNO();
	}
	if (caa_likely(handler != NULL))
		handler(signal_number, info, context);
	lift.returned = true;
}
