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
 * The kernel gets one of the shim's trampolines in place of the
 * program's function, with the program's flags, mask and everything else
 * as given; the function goes into that trampoline's table, which it
 * calls with the kernel's three arguments (on x86-64 the kernel passes
 * the siginfo and the context in registers also without SA_SIGINFO, and a
 * handler of one argument ignores the others).  What the program reads
 * back (sigaction's old action, signal()'s and sigset()'s result) is its
 * own function again.  SIG_DFL and SIG_IGN go to the kernel as they are.
 *
 * signal(), sysv_signal() and sigset() are glibc's semantics written
 * again through the sigaction here (glibc's go through its internal one);
 * siginterrupt() is interposed to keep its set for signal().  glibc's
 * own save-and-restore of an action (system(), siginterrupt()) reads the
 * kernel's action and writes it back: the trampoline stays, and so does
 * its table's entry.  Nothing here calls a function the program may
 * define itself (sigemptyset, sigprocmask, ...: helper-69's program had
 * its own pthread_sigmask, which called sigaction).
 *
 * Not seen: a handler installed by a raw rt_sigaction system call, or
 * before the shim started (a constructor that ran before the shim's).
 * Those run as they did, counted in the wait they interrupt; so does an
 * action a raw system call copied from one signal to another (its
 * trampoline has no entry for that signal: the signal is dropped, and
 * reads back as SIG_DFL).
 */
#include <string.h>
#include <ucontext.h>

#include "shim.h"

/*
 * Sixteen trampolines, each with a table of the program's functions by
 * signal.  Each installation of a signal's handler takes the next
 * trampoline of that signal in turn (an atomic count per signal), passing
 * over those whose installation is still under way, writes its table,
 * then gives the kernel that trampoline: a signal delivered under an
 * earlier action runs that action's function (with that action's mask and
 * flags), and an action read back (sigaction's old action, or what
 * glibc's system() saved and puts back) names its own function, until
 * fifteen later installations of the same signal have come round to its
 * entry again.  No lock: two installations at once take different
 * entries, and the kernel's action is whichever came last, as without the
 * shim.  The entry of the kernel's current action is never taken (LIVE,
 * below).  A vfork child (its parent's memory, its own actions) installs
 * the program's function as it is.  An entry whose installation never
 * ended (a thread killed inside it, or a handler that jumped out of it in
 * a seccomp sandbox, where signals are not blocked for the change) stays
 * taken: with all sixteen taken, a handler goes to the kernel as it is,
 * unwrapped (counted in the wait it interrupts, as before the shim
 * wrapped any).
 * What is left: a signal delivered under an action whose entry fifteen
 * later installations of that signal wrote over before its trampoline
 * read it (a thread preempted right at its handler's start while another
 * changes the action in a loop).
 *
 * helper-68 and helper-69 broke two earlier forms: one table looked up
 * when the handler ran (a new function ran under the old action's mask);
 * two tables chosen by the kernel's current action and a lock around each
 * change (SIG_DFL in between, as SA_RESETHAND and system() leave, sent
 * two installations to one entry; a vfork child's second installation
 * wrote its parent's; the lock, held across a system call, hung a program
 * whose handler jumped out of it under a seccomp filter, or whose vfork
 * child was killed inside it).
 */
#define TRAMPOLINES 16u
typedef void (*tdshim_action_fn)(int, siginfo_t *, void *);
static void *program_handlers[TRAMPOLINES][_NSIG];
static unsigned int installations[_NSIG];
/*
 * Entries in use, by signal, a byte a trampoline: LIVE while it is the
 * kernel's action as far as the shim knows (set when its installation
 * lands, cleared when a later one of the shim's replaces it, or replaces
 * SIG_DFL or SIG_IGN: a delivery under SA_RESETHAND put that there),
 * INSTALLING while an installation that took it is under way, plus the
 * readers of an old action (an installation's or a query's read-back).
 * The turn passes over an entry in use: one that took its entry, or read
 * the kernel's action, then waited for a CPU while fifteen others went
 * round would find that entry written over (helper-69's concurrent
 * signal() and sigaction()), and so would the kernel's own action after
 * sixteen refused installations (helper-70).
 */
#define ENTRY_LIVE UINT64_C(0x80)
#define ENTRY_INSTALLING UINT64_C(0x40)
#define ENTRY_READERS UINT64_C(0x3f)
static uint64_t entries_in_use[_NSIG][TRAMPOLINES / 8];

/* One CAS on the byte of `slot`: `change` returns the new byte, or -1
 * to give up. */
static bool change_entry(int signal_number, unsigned int slot, int (*change)(uint64_t held))
{
	uint64_t *word = &entries_in_use[signal_number][slot / 8];
	unsigned int shift = 8 * (slot % 8);
	uint64_t now = CMM_LOAD_SHARED(*word);

	for (;;) {
		int next = change((now >> shift) & 0xff);

		if (next < 0)
			return false;
		uint64_t wanted = (now & ~(UINT64_C(0xff) << shift)) | ((uint64_t)next << shift);
		uint64_t seen = uatomic_cmpxchg(word, now, wanted);

		if (seen == now)
			return true;
		now = seen;
	}
}

static int take_to_install(uint64_t held)
{
	return held ? -1 : (int)ENTRY_INSTALLING;
}

static int take_to_read(uint64_t held)
{
	return (held & ENTRY_READERS) == ENTRY_READERS ? -1 : (int)(held + 1);
}

static int drop_reader(uint64_t held)
{
	return held & ENTRY_READERS ? (int)(held - 1) : -1;
}

static int installed(uint64_t held)
{
	return (int)((held & ~ENTRY_INSTALLING) | ENTRY_LIVE);
}

static int refused(uint64_t held)
{
	return (int)(held & ~ENTRY_INSTALLING);
}

static int replaced(uint64_t held)
{
	return held & ENTRY_LIVE ? (int)(held & ~ENTRY_LIVE) : -1;
}

/* The kernel's action before an installation of the shim's was not one
 * of its trampolines (SIG_DFL after SA_RESETHAND's delivery, SIG_IGN,
 * a function): no entry but `kept` (the new one) is the kernel's. */
static void none_live_but(int signal_number, int kept)
{
	for (unsigned int slot = 0; slot < TRAMPOLINES; slot++)
		if ((int)slot != kept)
			change_entry(signal_number, slot, replaced);
}

/*
 * No signal handler of this thread may run while it holds an entry (a
 * jump out of the handler left the entry taken for good: helper-70's
 * SIGALRM handler that jumped out of a signal() loop took all sixteen in
 * 32-77 jumps): every signal is blocked for the change, through libc's
 * syscall() (not a pthread_sigmask the program may define), except in a
 * seccomp sandbox, where it is a system call a filter may kill on.
 */
struct hold {
	uint64_t mask;
	bool masked;
};

static void hold_signals(struct hold *hold)
{
	uint64_t all = ~UINT64_C(0);

	hold->masked = false;
	if (tdshim_in_sandbox() || !tdshim_real_syscall)
		return;
	TDSHIM_SAVE_ERRNO();
	hold->masked = tdshim_real_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&hold->mask,
					   (long)sizeof(all)) == 0;
	TDSHIM_RESTORE_ERRNO();
}

static void release_signals(const struct hold *hold)
{
	if (!hold->masked)
		return;
	TDSHIM_SAVE_ERRNO();
	tdshim_real_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&hold->mask, 0L, (long)sizeof(hold->mask));
	TDSHIM_RESTORE_ERRNO();
}

static const tdshim_action_fn trampolines[TRAMPOLINES];

/* siginterrupt()'s signals, which signal() installs without SA_RESTART
 * (glibc's own set, kept the same way). */
static uint64_t interrupting[(_NSIG + 63) / 64];

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
	for (unsigned int slot = 0; slot < TRAMPOLINES; slot++)
		if ((uintptr_t)handler == (uintptr_t)trampolines[slot])
			return (int)slot;
	return -1;
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

	/* An unreadable action: the real call meets it (glibc reads it in
	 * user space, as it writes the old one). */
	if (tdshim_standing_down || !wrappable(signal_number) || (action && !tdshim_copy_in(action, &copy, sizeof(copy)))) {
		int result = real(signal_number, action, old);

		if (result == 0 && old)
			old->sa_handler = as_program_sees(old->sa_handler, signal_number);
		return result;
	}
	int taken = -1, reading = -1;
	struct hold hold;
	/* A vfork child (its parent's memory, its own actions) installs the
	 * program's function as it is: sixteen of its installations took
	 * the entry of its parent's action (helper-70).  Under a filter no
	 * system call tells it apart. */
	bool own_actions = action && tdshim_caller_owns_tls();
	bool wrap = own_actions && is_function(copy.sa_handler);

	hold_signals(&hold);
	/* The entry of the kernel's action now, which the old action read
	 * back names (unless another installation lands in between). */
	if (old && action) {
		struct sigaction current;

		TDSHIM_SAVE_ERRNO();
		if (real(signal_number, NULL, &current) == 0) {
			int slot = slot_of(current.sa_handler);

			if (slot >= 0 && change_entry(signal_number, (unsigned int)slot, take_to_read))
				reading = slot;
		}
		TDSHIM_RESTORE_ERRNO();
	}
	if (wrap) {
		for (unsigned int tries = 0; tries < 2 * TRAMPOLINES && taken < 0; tries++) {
			unsigned int slot = (uatomic_add_return(&installations[signal_number], 1) - 1) % TRAMPOLINES;

			if (change_entry(signal_number, slot, take_to_install)) {
				taken = (int)slot;
				CMM_STORE_SHARED(program_handlers[slot][signal_number], (void *)copy.sa_handler);
				copy.sa_sigaction = trampolines[slot];
			}
		}
	}
	/* The old action is asked for always (which entry the installation
	 * replaced) and written after (the program's structure, which may be
	 * the new action's too, or unwritable: the fault is then at this
	 * store, as it is at glibc's). */
	int result = real(signal_number, action ? &copy : NULL, &kernel_old);
	int failure = errno;
	int old_slot = result == 0 ? slot_of(kernel_old.sa_handler) : -1;

	if (result == 0 && old) {
		/* A query: its entry held while it is read. */
		if (!action && old_slot >= 0 && change_entry(signal_number, (unsigned int)old_slot, take_to_read))
			reading = old_slot;
		kernel_old.sa_handler = as_program_sees(kernel_old.sa_handler, signal_number);
	}
	if (reading >= 0)
		change_entry(signal_number, (unsigned int)reading, drop_reader);
	if (taken >= 0)
		change_entry(signal_number, (unsigned int)taken, result == 0 ? installed : refused);
	/* What the installation replaced is the kernel's no more, in this
	 * process (not in a vfork child's: its actions are its own). */
	if (result == 0 && own_actions) {
		if (old_slot >= 0 && old_slot != taken)
			change_entry(signal_number, (unsigned int)old_slot, replaced);
		else if (old_slot < 0)
			none_live_but(signal_number, taken);
	}
	release_signals(&hold);
	if (result == 0 && old)
		*old = kernel_old;
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

/* sigset_t by hand: the program may define sigemptyset and the like
 * itself, and the shim must not call them (helper-69). */
static void mask_only(sigset_t *mask, int signal_number)
{
	memset(mask, 0, sizeof(*mask));
	if (signal_number > 0)
		mask->__val[(unsigned int)(signal_number - 1) / (8 * sizeof(mask->__val[0]))] |=
			1UL << ((unsigned int)(signal_number - 1) % (8 * sizeof(mask->__val[0])));
}

static __sighandler_t bsd_handler(int signal_number, __sighandler_t handler)
{
	sigset_t mask;

	tdshim_ensure_init();
	if (bad_signal_call(signal_number, handler))
		return SIG_ERR;
	mask_only(&mask, signal_number);
	return install(signal_number, handler, &mask, is_interrupting(signal_number) ? 0 : SA_RESTART);
}

static __sighandler_t sysv_handler(int signal_number, __sighandler_t handler)
{
	sigset_t mask;

	tdshim_ensure_init();
	if (bad_signal_call(signal_number, handler))
		return SIG_ERR;
	mask_only(&mask, 0);
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

/* The calling thread's signal mask changed by `how` with `signal_number`
 * alone (the kernel's call through libc's syscall(), as glibc's
 * sigprocmask makes it; not a sigprocmask the program may define):
 * whether the signal was blocked before, or -1. */
static int change_own_mask(int how, int signal_number)
{
	uint64_t set = UINT64_C(1) << (signal_number - 1), before = 0;

	if (!tdshim_real_syscall) {
		errno = ENOSYS;
		return -1;
	}
	if (tdshim_real_syscall(SYS_rt_sigprocmask, how, (long)&set, (long)&before, (long)sizeof(set)) != 0)
		return -1;
	return (int)((before >> (signal_number - 1)) & 1);
}

TDSHIM_EXPORT __sighandler_t sigset(int signal_number, __sighandler_t disposition)
{
	tdshim_ensure_init();
	/* glibc's sigaddset's refusals: out of range, or glibc's own. */
	if (signal_number < 1 || signal_number >= _NSIG || (signal_number >= 32 && signal_number < SIGRTMIN)) {
		errno = EINVAL;
		return SIG_ERR;
	}
	if (disposition == SIG_HOLD) {
		struct sigaction old;
		int blocked = change_own_mask(SIG_BLOCK, signal_number);

		if (blocked < 0)
			return SIG_ERR;
		if (blocked)
			return SIG_HOLD;
		if (!tdshim_real_sigaction || change_action(tdshim_real_sigaction, signal_number, NULL, &old) < 0)
			return SIG_ERR;
		return old.sa_handler;
	}
	sigset_t empty;

	mask_only(&empty, 0);
	__sighandler_t old_handler = install(signal_number, disposition, &empty, 0);
	if (old_handler == SIG_ERR)
		return SIG_ERR;
	int blocked = change_own_mask(SIG_UNBLOCK, signal_number);
	if (blocked < 0)
		return SIG_ERR;
	return blocked ? SIG_HOLD : old_handler;
}

/* glibc's own, which reads the kernel's action and writes it back with
 * SA_RESTART changed (the trampoline stays); and the signal noted for
 * signal() above. */
TDSHIM_EXPORT int siginterrupt(int signal_number, int interrupt)
{
	TDSHIM_REQUIRE_LIBC(siginterrupt);
	int result = tdshim_real_siginterrupt(signal_number, interrupt);

	if (result == 0 && signal_number > 0 && signal_number < _NSIG) {
		unsigned int bit = (unsigned int)signal_number;

		if (interrupt)
			uatomic_or(&interrupting[bit / 64], UINT64_C(1) << (bit % 64));
		else
			uatomic_and(&interrupting[bit / 64], ~(UINT64_C(1) << (bit % 64)));
	}
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

/* Where the interrupted code resumes: its instruction and its stack,
 * from the context the kernel passed (0 where this does not know the
 * architecture's, which reads as never moved). */
static void resume_point(const void *context, uintptr_t *pc, uintptr_t *sp)
{
	const ucontext_t *interrupted = context;

#if defined(__x86_64__)
	*pc = (uintptr_t)interrupted->uc_mcontext.gregs[REG_RIP];
	*sp = (uintptr_t)interrupted->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	*pc = (uintptr_t)interrupted->uc_mcontext.pc;
	*sp = (uintptr_t)interrupted->uc_mcontext.sp;
#else
	(void)interrupted;
	*pc = *sp = 0;
#endif
}

/*
 * Whether the interrupted code runs inside the thread's own wait: its
 * stack pointer just below the wait's scope (the wrapper's frame, the C
 * library's beneath it), on the same stack.  A task that clone(CLONE_VM)
 * made without a TLS of its own sees its parent's wait in that TLS, but
 * runs on a stack of its own (helper-71's lifted its parent, which read
 * RUNNABLE asleep and then BLOCKED through seconds of work); so does a
 * thread whose wait a jump the shim did not see left (its scope is a dead
 * frame above it).  No system call (helper-73: a gettid here was a
 * program's own, or killed by its seccomp filter).
 */
#define WAIT_FRAMES_MAX (64u * 1024u)

static bool interrupted_in_wait(const void *context)
{
	uintptr_t pc, sp, scope = (uintptr_t)CMM_LOAD_SHARED(tdshim_self.outer_scope);

	resume_point(context, &pc, &sp);
	if (!sp)
		return scope != 0;
	return scope && sp < scope && scope - sp < WAIT_FRAMES_MAX;
}

/*
 * A handler that moved its thread's context (pc, sp) to (pc_after,
 * sp_after) called a function that returns to where the thread was, as
 * Go's asynchronous preemption does: the interrupted point pushed as the
 * return address just below the stack pointer.  The wait goes on after
 * it (helper-73's handler ran 0.5 s so and went back into its futex).
 */
static bool injected_call(uintptr_t pc, uintptr_t sp, uintptr_t sp_after)
{
#if defined(__x86_64__)
	uintptr_t returns_to = 0;

	return sp_after < sp && sp - sp_after <= 256 &&
	       tdshim_copy_in((const void *)sp_after, &returns_to, sizeof(returns_to)) && returns_to == pc;
#else
	(void)pc;
	(void)sp;
	(void)sp_after;
	return false;
#endif
}

/*
 * The program's function with the thread lifted out of the wait the
 * signal interrupted (thread.c) while it runs.  errno is the handler's
 * business; the shim's own steps leave it as it was.  Its frame is the
 * one whose cleanup runs on the way out (a return, or an unwinding
 * through it).  A handler that changed where the interrupted code
 * resumes (its context's instruction or stack) moved the thread out of
 * the wait: the thread stays lifted, running, with no wait in progress
 * (helper-71: it read BLOCKED in the semaphore it had left, through
 * seconds of work and later waits), and the wait is kept (parked) with
 * the point it was left at, which a later handler that moves the thread
 * back there resumes (a user-level scheduler switching its threads by
 * signals; helper-73).  A call injected in front of the interrupted
 * point is not a move: the wait resumes when it returns.
 */
static __attribute__((noinline)) void run_lifted(tdshim_action_fn handler, int signal_number, siginfo_t *info,
						 void *context)
{
	struct tdshim_lift lift __attribute__((cleanup(tdshim_handler_leave))) = { 0 };
	uintptr_t pc, sp, pc_after, sp_after;

	TDSHIM_SAVE_ERRNO();
	tdshim_handler_enter(&lift);
	TDSHIM_RESTORE_ERRNO();
	resume_point(context, &pc, &sp);
	if (caa_likely(handler != NULL))
		handler(signal_number, info, context);
	resume_point(context, &pc_after, &sp_after);
	lift.returned = true;
	if (caa_likely(pc_after == pc && sp_after == sp) || injected_call(pc, sp, sp_after))
		return;
	lift.resumed_elsewhere = true;
	/* (The shim's own steps leave errno as the handler left it.) */
	int handlers_errno = *tdshim_errno();

	/* Back to the parked wait: that one resumes, and this one is
	 * parked in its place (two contexts of a user-level scheduler that
	 * both wait; helper-74: the one left was dropped, and its sleep read
	 * RUNNABLE half the time).  One parked wait a thread. */
	if (tdshim_self.parked.pc && tdshim_self.parked.pc == pc_after && tdshim_self.parked.sp == sp_after)
		tdshim_handler_unpark();
	tdshim_handler_park(&lift, pc, sp);
	*tdshim_errno() = handlers_errno;
}

/* A handler outside a wait while one is parked: moved back to the point
 * the parked wait was left at, the thread is in that wait again. */
static __attribute__((noinline)) void run_watching_parked(tdshim_action_fn handler, int signal_number,
							  siginfo_t *info, void *context)
{
	uintptr_t pc, sp;

	if (caa_likely(handler != NULL))
		handler(signal_number, info, context);
	resume_point(context, &pc, &sp);
	if (tdshim_self.parked.pc == pc && tdshim_self.parked.sp == sp) {
		TDSHIM_SAVE_ERRNO();
		tdshim_handler_unpark();
		TDSHIM_RESTORE_ERRNO();
	}
}

/*
 * What the kernel runs.  Outside a wait (nearly every signal) the
 * trampoline's last act is the program's function, a tail call: the
 * handler starts with the stack and the return address the kernel gave,
 * as without the shim (helper-71: 128 bytes of a trampoline's frames
 * overflowed an alternate stack the bare program's handler fitted on,
 * and the handler's caller, __builtin_return_address or a backtrace's
 * frame, was the shim).  Inside a wait that the interrupted code is in,
 * with room for it, the handler runs lifted, one frame deeper; with a
 * wait parked, and room, it runs watched, one frame deeper too: a
 * handler that fills its alternate stack to its last 64 bytes overflows
 * it there (helper-74, a wait parked for good: a handler moved its
 * thread out of it and none moved it back; DESIGN.md).
 */
#define TDSHIM_TRAMPOLINE(slot)                                                                     \
	static void trampoline_##slot(int signal_number, siginfo_t *info, void *context)               \
	{                                                                                           \
		tdshim_action_fn handler =                                                          \
			(tdshim_action_fn)CMM_LOAD_SHARED(program_handlers[slot][signal_number]);   \
                                                                                                    \
		if (caa_unlikely(tdshim_self.wait_depth != 0) && room_to_lift(context) &&           \
		    interrupted_in_wait(context)) {                                                 \
			run_lifted(handler, signal_number, info, context);                          \
			return;                                                                     \
		}                                                                                   \
		if (caa_unlikely(tdshim_self.parked.pc != 0) && room_to_lift(context)) {            \
			run_watching_parked(handler, signal_number, info, context);                 \
			return;                                                                     \
		}                                                                                   \
		if (caa_likely(handler != NULL))                                                    \
			handler(signal_number, info, context);                                      \
	}
TDSHIM_TRAMPOLINE(0)
TDSHIM_TRAMPOLINE(1)
TDSHIM_TRAMPOLINE(2)
TDSHIM_TRAMPOLINE(3)
TDSHIM_TRAMPOLINE(4)
TDSHIM_TRAMPOLINE(5)
TDSHIM_TRAMPOLINE(6)
TDSHIM_TRAMPOLINE(7)
TDSHIM_TRAMPOLINE(8)
TDSHIM_TRAMPOLINE(9)
TDSHIM_TRAMPOLINE(10)
TDSHIM_TRAMPOLINE(11)
TDSHIM_TRAMPOLINE(12)
TDSHIM_TRAMPOLINE(13)
TDSHIM_TRAMPOLINE(14)
TDSHIM_TRAMPOLINE(15)

static const tdshim_action_fn trampolines[TRAMPOLINES] = {
	trampoline_0,  trampoline_1,  trampoline_2,  trampoline_3,  trampoline_4,  trampoline_5,
	trampoline_6,  trampoline_7,  trampoline_8,  trampoline_9,  trampoline_10, trampoline_11,
	trampoline_12, trampoline_13, trampoline_14, trampoline_15,
};
