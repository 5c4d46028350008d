/* SPDX-License-Identifier: MIT */
/*
 * Signal handlers as a program sees them (test_misc.c runs this bare and
 * under the shim and expects the same lines): what sigaction, signal,
 * bsd_signal, ssignal, sysv_signal, __sysv_signal and sigset return and
 * read back, which handler runs with which arguments, SA_RESETHAND,
 * siginterrupt, system()'s save and restore, a fork child, refused calls,
 * and handlers that interrupt waits: returning (EINTR or restarted),
 * waiting themselves, jumping out, ending the thread.
 * usage: rt_handlers [seccomp-mask|seccomp-vfork|seccomp-refuse|fifo|stale-scope|
 *                     resumed-elsewhere|clone-vm|clone-vm-sandboxed|injected-call|
 *                     switch-back|two-green|relock|relock-short|seccomp-gettid|
 *                     seccomp-getrusage];
 * rt_handlers_own_mask
 * (built with RT_OWN_SIGMASK: its own pthread_sigmask, sigprocmask and
 * sigemptyset, counted)
 * The modes, each in a process of its own (a seccomp filter stays): a
 * filter that kills on rt_sigprocmask, then handlers installed; a vfork
 * child that installs a handler under a filter; two SCHED_FIFO threads
 * on one CPU changing actions (root only, else "fifo=skipped").
 * helper-68's breaks of 90753b7 are the extra scenarios here.
 */
#define _GNU_SOURCE
/* sigset() and siginterrupt(), deprecated, are what is tested. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* One structure as both actions is what is tested too. */
#pragma GCC diagnostic ignored "-Wrestrict"
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "fixture.h"

__sighandler_t bsd_signal(int, __sighandler_t);
__sighandler_t sysv_signal(int, __sighandler_t);
__sighandler_t __sysv_signal(int, __sighandler_t);

static volatile sig_atomic_t last_signal, calls, info_value, info_code, nested_depth, nested_max;

static void one(int signal_number)
{
	last_signal = signal_number;
	calls++;
}

static void two(int signal_number)
{
	last_signal = -signal_number;
	calls++;
}

static void with_info(int signal_number, siginfo_t *info, void *context)
{
	(void)context;
	last_signal = signal_number;
	info_value = info->si_value.sival_int;
	info_code = info->si_code;
	calls++;
}

static void reentrant(int signal_number)
{
	nested_depth++;
	if (nested_depth > nested_max)
		nested_max = nested_depth;
	if (nested_depth < 3)
		raise(signal_number);
	nested_depth--;
}

/* A handler's name, as the program knows its functions. */
static const char *name_of(void (*handler)(int))
{
	if (handler == SIG_DFL)
		return "SIG_DFL";
	if (handler == SIG_IGN)
		return "SIG_IGN";
	if (handler == SIG_ERR)
		return "SIG_ERR";
	if (handler == SIG_HOLD)
		return "SIG_HOLD";
	if (handler == one)
		return "one";
	if (handler == two)
		return "two";
	if (handler == (void (*)(int))(void (*)(void))with_info)
		return "with_info";
	if (handler == reentrant)
		return "reentrant";
	return "other";
}

static void show_action(const char *key, int signal_number)
{
	struct sigaction now;

	if (sigaction(signal_number, NULL, &now) != 0) {
		printf("%s=error %d\n", key, errno);
		return;
	}
	printf("%s=%s flags %#x usr2 %d term %d\n", key, name_of(now.sa_handler), (unsigned)now.sa_flags,
	       sigismember(&now.sa_mask, SIGUSR2), sigismember(&now.sa_mask, SIGTERM));
}

static void readback(void)
{
	struct sigaction action = { .sa_handler = one, .sa_flags = SA_RESTART }, old;

	sigemptyset(&action.sa_mask);
	sigaddset(&action.sa_mask, SIGUSR2);
	printf("install_one=%d\n", sigaction(SIGUSR1, &action, &old));
	printf("old_before_one=%s\n", name_of(old.sa_handler));
	show_action("after_one", SIGUSR1);
	raise(SIGUSR1);
	printf("one_ran=%d signal %d\n", (int)calls, (int)last_signal);

	action.sa_handler = two;
	action.sa_flags = SA_NODEFER;
	sigaddset(&action.sa_mask, SIGTERM);
	printf("install_two=%d\n", sigaction(SIGUSR1, &action, &old));
	printf("old_before_two=%s flags %#x\n", name_of(old.sa_handler), (unsigned)old.sa_flags);
	raise(SIGUSR1);
	printf("two_ran=%d signal %d\n", (int)calls, (int)last_signal);

	/* One structure as both the new and the old action. */
	action.sa_handler = one;
	action.sa_flags = 0;
	struct sigaction *both = &action;
	printf("install_aliased=%d\n", sigaction(SIGUSR1, both, both));
	printf("aliased_old=%s\n", name_of(action.sa_handler));
	show_action("after_aliased", SIGUSR1);
	printf("query_only=%d\n", sigaction(SIGUSR1, NULL, NULL));

	struct sigaction info_action = { .sa_sigaction = with_info, .sa_flags = SA_SIGINFO };
	sigemptyset(&info_action.sa_mask);
	printf("install_info=%d\n", sigaction(SIGUSR2, &info_action, NULL));
	show_action("after_info", SIGUSR2);
	union sigval value = { .sival_int = 4242 };
	sigqueue(getpid(), SIGUSR2, value);
	printf("info_ran=signal %d value %d code_is_queue %d\n", (int)last_signal, (int)info_value,
	       info_code == SI_QUEUE);

	struct sigaction ignore = { .sa_handler = SIG_IGN };
	printf("install_ignore=%d\n", sigaction(SIGUSR2, &ignore, &old));
	printf("old_before_ignore=%s flags_siginfo %d\n", name_of(old.sa_handler), !!(old.sa_flags & SA_SIGINFO));
	show_action("after_ignore", SIGUSR2);
}

static void one_shot_and_nesting(void)
{
	struct sigaction action = { .sa_handler = one, .sa_flags = SA_RESETHAND };

	sigemptyset(&action.sa_mask);
	sigaction(SIGHUP, &action, NULL);
	show_action("resethand_before", SIGHUP);
	calls = 0;
	raise(SIGHUP);
	printf("resethand_ran=%d\n", (int)calls);
	show_action("resethand_after", SIGHUP);

	action.sa_handler = reentrant;
	action.sa_flags = SA_NODEFER;
	sigaction(SIGWINCH, &action, NULL);
	raise(SIGWINCH);
	printf("nodefer_depth=%d\n", (int)nested_max);
}

static void the_signal_calls(void)
{
	printf("signal_first=%s\n", name_of(signal(SIGALRM, one)));
	show_action("after_signal", SIGALRM);
	printf("signal_second=%s\n", name_of(signal(SIGALRM, two)));
	calls = 0;
	raise(SIGALRM);
	printf("signal_ran=%d signal %d\n", (int)calls, (int)last_signal);
	printf("bsd_signal=%s\n", name_of(bsd_signal(SIGALRM, one)));
	printf("ssignal=%s\n", name_of(ssignal(SIGALRM, two)));
	printf("sysv_signal=%s\n", name_of(sysv_signal(SIGALRM, one)));
	show_action("after_sysv_signal", SIGALRM);
	raise(SIGALRM);
	show_action("after_sysv_delivery", SIGALRM);
	printf("__sysv_signal=%s\n", name_of(__sysv_signal(SIGALRM, two)));
	printf("signal_dfl=%s\n", name_of(signal(SIGALRM, SIG_DFL)));
	printf("signal_back=%s\n", name_of(signal(SIGALRM, one)));

	printf("sigset_first=%s\n", name_of(sigset(SIGPIPE, one)));
	printf("sigset_hold=%s\n", name_of(sigset(SIGPIPE, SIG_HOLD)));
	show_action("after_hold", SIGPIPE);
	printf("sigset_again=%s\n", name_of(sigset(SIGPIPE, two)));
	calls = 0;
	raise(SIGPIPE);
	printf("sigset_ran=%d signal %d\n", (int)calls, (int)last_signal);

	printf("siginterrupt=%d\n", siginterrupt(SIGALRM, 1));
	show_action("after_siginterrupt", SIGALRM);
	printf("signal_after_siginterrupt=%s\n", name_of(signal(SIGALRM, two)));
	show_action("after_signal_interrupting", SIGALRM);
}

/* What a refused call returns, and errno (a bad pointer crashes inside
 * glibc bare: it copies the action in user space, so none here). */
static void show_refused(const char *key, int result)
{
	printf("%s=%d errno %d\n", key, result, errno);
}

static void show_refused_handler(const char *key, __sighandler_t result)
{
	printf("%s=%s errno %d\n", key, name_of(result), errno);
}

static void refused(void)
{
	struct sigaction action = { .sa_handler = one };

	errno = 0;
	show_refused("sigaction_kill", sigaction(SIGKILL, &action, NULL));
	errno = 0;
	show_refused("sigaction_zero", sigaction(0, &action, NULL));
	errno = 0;
	show_refused("sigaction_65", sigaction(65, &action, NULL));
	errno = 0;
	show_refused("sigaction_32", sigaction(32, &action, NULL));
	errno = 0;
	show_refused_handler("signal_stop", signal(SIGSTOP, one));
	errno = 0;
	show_refused_handler("signal_err", signal(SIGUSR1, SIG_ERR));
	show_action("after_refused", SIGUSR1);
}

static void saved_and_restored(void)
{
	signal(SIGQUIT, two);
	printf("system=%d\n", system("exit 3") >> 8);
	show_action("after_system", SIGQUIT);
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		calls = 0;
		raise(SIGQUIT);
		printf("child_ran=%d signal %d\n", (int)calls, (int)last_signal);
		show_action("child_action", SIGQUIT);
		printf("child_signal=%s\n", name_of(signal(SIGQUIT, one)));
		fflush(stdout);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	show_action("parent_after_child", SIGQUIT);
}

/* ---- handlers inside waits ---- */
static sem_t semaphore;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t condition = PTHREAD_COND_INITIALIZER;
static volatile int ready, done;
static sigjmp_buf jump_back;
static volatile sig_atomic_t handled;

static void counting(int signal_number)
{
	(void)signal_number;
	handled++;
}

static void sleeping(int signal_number)
{
	struct timespec pause_time = { 0, 2000000 };

	(void)signal_number;
	nanosleep(&pause_time, NULL);
	handled++;
}

static void jumping(int signal_number)
{
	(void)signal_number;
	siglongjmp(jump_back, 7);
}

static void exiting(int signal_number)
{
	(void)signal_number;
	pthread_exit((void *)(long)99);
}

static void wait_ready(void)
{
	struct timespec tick = { 0, 1000000 };

	while (!__atomic_load_n(&ready, __ATOMIC_SEQ_CST))
		nanosleep(&tick, NULL);
	/* Well inside the wait. */
	tick.tv_nsec = 20000000;
	nanosleep(&tick, NULL);
}

static void *sem_waiter(void *argument)
{
	(void)argument;
	__atomic_store_n(&ready, 1, __ATOMIC_SEQ_CST);
	int result = sem_wait(&semaphore);
	int failure = errno;
	int again = sem_wait(&semaphore);
	printf("sem_wait=%d errno %d then %d handled %d\n", result, failure, again, (int)handled);
	return NULL;
}

static void *cond_waiter(void *argument)
{
	(void)argument;
	pthread_mutex_lock(&mutex);
	__atomic_store_n(&ready, 1, __ATOMIC_SEQ_CST);
	while (!done)
		pthread_cond_wait(&condition, &mutex);
	pthread_mutex_unlock(&mutex);
	printf("cond_wait_done handled %d\n", (int)handled);
	return NULL;
}

static void *jump_waiter(void *argument)
{
	(void)argument;
	int landed = sigsetjmp(jump_back, 1);
	if (landed == 0) {
		__atomic_store_n(&ready, 1, __ATOMIC_SEQ_CST);
		sem_wait(&semaphore);
		printf("jump_waiter=not jumped\n");
		return NULL;
	}
	printf("jump_waiter=landed %d\n", landed);
	return NULL;
}

static void *exit_waiter(void *argument)
{
	(void)argument;
	__atomic_store_n(&ready, 1, __ATOMIC_SEQ_CST);
	sem_wait(&semaphore);
	return (void *)(long)1;
}

static void run_waiter(const char *name, void *(*body)(void *), void (*handler)(int), int flags, void (*after)(void))
{
	struct sigaction action = { .sa_handler = handler, .sa_flags = flags };
	pthread_t thread;
	void *result = NULL;

	sigemptyset(&action.sa_mask);
	sigaction(SIGUSR1, &action, NULL);
	ready = 0;
	done = 0;
	handled = 0;
	sem_init(&semaphore, 0, 0);
	pthread_create(&thread, NULL, body, NULL);
	wait_ready();
	pthread_kill(thread, SIGUSR1);
	wait_ready();
	if (after)
		after();
	pthread_join(thread, &result);
	printf("%s_joined=%ld\n", name, (long)result);
	sem_destroy(&semaphore);
}

/* Two: the first wait may have been restarted rather than cut short. */
static void post(void)
{
	sem_post(&semaphore);
	sem_post(&semaphore);
}

static void signal_condition(void)
{
	pthread_mutex_lock(&mutex);
	done = 1;
	pthread_cond_signal(&condition);
	pthread_mutex_unlock(&mutex);
}

static void handlers_in_waits(void)
{
	run_waiter("sem_eintr", sem_waiter, counting, 0, post);
	run_waiter("sem_restart", sem_waiter, sleeping, SA_RESTART, post);
	run_waiter("cond", cond_waiter, sleeping, SA_RESTART, signal_condition);
	run_waiter("jump", jump_waiter, jumping, 0, NULL);
	run_waiter("exit", exit_waiter, exiting, 0, NULL);
	/* The nanosleep a handler interrupts: EINTR and what was left. */
	struct sigaction action = { .sa_handler = counting };
	sigemptyset(&action.sa_mask);
	sigaction(SIGALRM, &action, NULL);
	struct itimerspec in = { .it_value = { 0, 20000000 } };
	timer_t timer;
	struct sigevent event = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	timer_create(CLOCK_MONOTONIC, &event, &timer);
	timer_settime(timer, 0, &in, NULL);
	struct timespec long_sleep = { 5, 0 }, left = { 0, 0 };
	int slept = nanosleep(&long_sleep, &left);
	int failure = errno;
	printf("nanosleep=%d errno %d left_over_4s %d handled %d\n", slept, failure, left.tv_sec >= 4, (int)handled);
	timer_delete(timer);
}


/* ---- helper-68's breaks ---- */
static sigjmp_buf fault_back;

static void fault_handler(int signal_number)
{
	(void)signal_number;
	siglongjmp(fault_back, 1);
}

/* An old action that cannot be written: glibc faults writing it, and a
 * SIGSEGV handler that jumps out recovers (the shim blocked SIGSEGV
 * there and the process died). */
static void unwritable_old(void)
{
	struct sigaction recover = { .sa_handler = fault_handler }, action = { .sa_handler = one };
	void *read_only = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	sigemptyset(&recover.sa_mask);
	sigaction(SIGSEGV, &recover, NULL);
	sigemptyset(&action.sa_mask);
	if (sigsetjmp(fault_back, 1) == 0)
		printf("unwritable_old=returned %d\n", sigaction(SIGUSR1, &action, (struct sigaction *)read_only));
	else
		printf("unwritable_old=faulted\n");
	show_action("after_unwritable_old", SIGUSR1);
	signal(SIGSEGV, SIG_DFL);
	munmap(read_only, 4096);
}

/* A handler of a few bytes on the smallest alternate stack, run inside a
 * nanosleep: the shim's lift overflowed it into the program's data. */
static volatile sig_atomic_t small_ran;

static void small_handler(int signal_number)
{
	(void)signal_number;
	small_ran = 1;
}

static void smallest_alternate_stack(void)
{
	size_t size = (size_t)sysconf(_SC_MINSIGSTKSZ), page = 4096;
	unsigned char *memory = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack_t alternate = { .ss_sp = memory + page, .ss_size = size }, none = { .ss_flags = SS_DISABLE };
	struct sigaction action = { .sa_handler = small_handler, .sa_flags = SA_ONSTACK };
	struct sigevent event = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	struct itimerspec in = { .it_value = { 0, 20000000 } };
	struct timespec pause_time = { 0, 100000000 };
	timer_t timer;
	int overwritten = 0;

	memset(memory, 0xAA, page);
	sigaltstack(&alternate, NULL);
	sigemptyset(&action.sa_mask);
	sigaction(SIGALRM, &action, NULL);
	timer_create(CLOCK_MONOTONIC, &event, &timer);
	timer_settime(timer, 0, &in, NULL);
	nanosleep(&pause_time, NULL);
	timer_delete(timer);
	sigaltstack(&none, NULL);
	for (size_t i = 0; i < page; i++)
		overwritten += memory[i] != 0xAA;
	printf("smallest_alternate_stack=ran %d overwritten %d\n", (int)small_ran, overwritten);
	munmap(memory, 3 * page);
}

/*
 * A wait the shim never saw end (mode stale-scope, shim only: it reads the
 * record): a handler on an alternate stack too small to lift the thread
 * (wrap_handler.c: room_to_lift) leaves sem_wait by setcontext, which is
 * not interposed.  The record stays BLOCKED in the semaphore and the
 * scope's frame is gone; the program writes over it.  A later handler
 * lifts the thread and puts back the wait the record published, not
 * what the dead frame holds now (b3c4e60: it put back the frame's kind).
 */
static ucontext_t stale_back;
static volatile sig_atomic_t stale_left;

static void leave_by_setcontext(int signal_number)
{
	(void)signal_number;
	stale_left = 1;
	setcontext(&stale_back);
}

static __attribute__((noinline)) void wait_deeper(void)
{
	sem_wait(&semaphore);
}

static __attribute__((noinline)) void scribble(void)
{
	volatile unsigned char junk[65536];

	memset((void *)junk, 0xA5, sizeof(junk));
}

static void *stale_waiter(void *argument)
{
	size_t size = (size_t)sysconf(_SC_MINSIGSTKSZ);
	void *memory = mmap(NULL, 2 * 4096 + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack_t alternate = { .ss_sp = (char *)memory + 4096, .ss_size = size };

	(void)argument;
	sigaltstack(&alternate, NULL);
	getcontext(&stale_back);
	if (!stale_left) {
		__atomic_store_n(&ready, 1, __ATOMIC_SEQ_CST);
		wait_deeper();
		printf("stale_waiter=not left\n");
		return NULL;
	}
	scribble();
	struct fx_record record = fx_record_of(fx_gettid());
	printf("stale_before=%s %s\n", fx_state_name(record.state), fx_kind_name(record.kind));
	__atomic_store_n(&done, 1, __ATOMIC_SEQ_CST);
	while (!handled)
		;
	record = fx_record_of(fx_gettid());
	printf("stale_after=%s %s\n", fx_state_name(record.state), fx_kind_name(record.kind));
	return NULL;
}

static int stale_scope(void)
{
	struct sigaction leave = { .sa_handler = leave_by_setcontext, .sa_flags = SA_ONSTACK },
			 count = { .sa_handler = counting };
	pthread_t thread;

	sigemptyset(&leave.sa_mask);
	sigemptyset(&count.sa_mask);
	sigaction(SIGUSR1, &leave, NULL);
	sigaction(SIGUSR2, &count, NULL);
	sem_init(&semaphore, 0, 0);
	pthread_create(&thread, NULL, stale_waiter, NULL);
	wait_ready();
	pthread_kill(thread, SIGUSR1);
	while (!__atomic_load_n(&done, __ATOMIC_SEQ_CST))
		sched_yield();
	pthread_kill(thread, SIGUSR2);
	pthread_join(thread, NULL);
	return 0;
}

/* Two threads swapping one signal's handler, through signal() and
 * sigaction(): each handler installed comes back once as an old one. */
#define SWAPS 20000
static void swap_a(int signal_number)
{
	(void)signal_number;
}

static void swap_b(int signal_number)
{
	(void)signal_number;
}

static void swap_c(int signal_number)
{
	(void)signal_number;
}

static void swap_d(int signal_number)
{
	(void)signal_number;
}

static void (*const swapped[4])(int) = { swap_a, swap_b, swap_c, swap_d };
static long swap_returned[5];
static pthread_barrier_t swap_start;

static void count_returned(void (*handler)(int))
{
	int at = 4;

	for (int i = 0; i < 4; i++)
		if (handler == swapped[i])
			at = i;
	__atomic_add_fetch(&swap_returned[at], 1, __ATOMIC_SEQ_CST);
}

static void *swap_by_signal(void *argument)
{
	(void)argument;
	pthread_barrier_wait(&swap_start);
	for (int i = 0; i < SWAPS; i++)
		count_returned(signal(SIGUSR2, swapped[i & 1]));
	return NULL;
}

static void *swap_by_sigaction(void *argument)
{
	(void)argument;
	pthread_barrier_wait(&swap_start);
	for (int i = 0; i < SWAPS; i++) {
		struct sigaction action = { .sa_handler = swapped[2 + (i & 1)] }, old;

		sigemptyset(&action.sa_mask);
		sigaction(SIGUSR2, &action, &old);
		count_returned(old.sa_handler);
	}
	return NULL;
}

static void concurrent_swaps(void)
{
	pthread_t first, second;
	struct sigaction last;

	signal(SIGUSR2, SIG_DFL);
	pthread_barrier_init(&swap_start, NULL, 2);
	pthread_create(&first, NULL, swap_by_signal, NULL);
	pthread_create(&second, NULL, swap_by_sigaction, NULL);
	pthread_join(first, NULL);
	pthread_join(second, NULL);
	sigaction(SIGUSR2, NULL, &last);
	count_returned(last.sa_handler);
	bool balanced = swap_returned[4] == 1;
	for (int i = 0; i < 4; i++)
		balanced = balanced && swap_returned[i] == SWAPS / 2;
	printf("concurrent_swaps=%s\n", balanced ? "balanced" : "unbalanced");
	signal(SIGUSR2, SIG_DFL);
}

/* One thread swaps an action between two masks while another takes a
 * storm of the signal: a handler never runs under the other's mask. */
static volatile long under_other_mask;
static volatile int storm_stop;

static void masked_a(int signal_number)
{
	(void)signal_number;
}

static void masked_b(int signal_number)
{
	sigset_t now;

	(void)signal_number;
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	if (sigismember(&now, SIGTERM))
		under_other_mask++;
}

static void *swap_masks(void *argument)
{
	struct sigaction a = { .sa_handler = masked_a }, b = { .sa_handler = masked_b };
	sigset_t all;

	(void)argument;
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, SIGTERM);
	sigemptyset(&b.sa_mask);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!storm_stop) {
		sigaction(SIGUSR2, &a, NULL);
		sigaction(SIGUSR2, &b, NULL);
	}
	return NULL;
}

static void *take_storm(void *argument)
{
	(void)argument;
	while (!storm_stop)
		;
	return NULL;
}

static void masks_follow_handlers(void)
{
	pthread_t swapper, receiver;
	sigset_t all, saved;
	struct sigaction first = { .sa_handler = masked_a };

	/* A handler before the first signal (the default action ends the
	 * process). */
	sigemptyset(&first.sa_mask);
	sigaction(SIGUSR2, &first, NULL);
	pthread_create(&receiver, NULL, take_storm, NULL);
	pthread_create(&swapper, NULL, swap_masks, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	for (long i = 0; i < 100000; i++)
		pthread_kill(receiver, SIGUSR2);
	storm_stop = 1;
	pthread_join(swapper, NULL);
	pthread_join(receiver, NULL);
	signal(SIGUSR2, SIG_IGN);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	signal(SIGUSR2, SIG_DFL);
	printf("under_other_mask=%ld\n", under_other_mask);
}

/* A thread in asynchronous cancellation inside sigaction, cancelled:
 * the next sigaction of another thread still returns. */
static void *install_forever(void *argument)
{
	struct sigaction action = { .sa_handler = one };

	(void)argument;
	sigemptyset(&action.sa_mask);
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	for (;;)
		sigaction(SIGUSR1, &action, NULL);
	return NULL;
}

static void cancelled_inside(void)
{
	struct sigaction action = { .sa_handler = two };

	sigemptyset(&action.sa_mask);
	for (int i = 0; i < 40; i++) {
		pthread_t thread;

		pthread_create(&thread, NULL, install_forever, NULL);
		usleep(200);
		pthread_cancel(thread);
		pthread_join(thread, NULL);
		sigaction(SIGUSR2, &action, NULL);
	}
	printf("cancelled_inside=ok\n");
	signal(SIGUSR2, SIG_DFL);
}

static int install_filter(bool kill_sigprocmask)
{
	struct sock_filter allow_all[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_filter no_mask[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_sigprocmask, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = kill_sigprocmask ? (struct sock_fprog){ 4, no_mask } : (struct sock_fprog){ 1, allow_all };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
		printf("filter=refused %d\n", errno);
		return 1;
	}
	return 0;
}

/* A filter that kills on rt_sigprocmask: handlers still go in. */
static int seccomp_mask(void)
{
	struct sigaction action = { .sa_handler = one };

	if (install_filter(true))
		return 0;
	sigemptyset(&action.sa_mask);
	printf("sigaction=%d\n", sigaction(SIGUSR1, &action, NULL));
	printf("signal=%s\n", name_of(signal(SIGUSR2, two)));
	kill(getpid(), SIGUSR1);
	kill(getpid(), SIGUSR2);
	printf("ran=%d signal %d\n", (int)calls, (int)last_signal);
	return 0;
}

/* A filter that refuses every new action (EPERM): seventeen refused
 * installations leave the first handler in place (helper-70: the turn
 * came round to its entry and wrote the refused function there). */
static int seccomp_refuse(void)
{
	struct sigaction first = { .sa_handler = one }, refused = { .sa_handler = two };
	int refusals = 0;

	sigemptyset(&first.sa_mask);
	sigemptyset(&refused.sa_mask);
	sigaction(SIGUSR1, &first, NULL);
	struct sock_filter no_new_action[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_sigaction, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { sizeof(no_new_action) / sizeof(no_new_action[0]), no_new_action };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
		printf("filter=refused %d\n", errno);
		return 0;
	}
	for (int i = 0; i < 17; i++)
		refusals += sigaction(SIGUSR1, &refused, NULL) != 0 && errno == EPERM;
	last_signal = 0;
	raise(SIGUSR1);
	printf("refusals=%d\n", refusals);
	printf("after_refusals=ran %d\n", (int)last_signal);
	show_action("action_after_refusals", SIGUSR1);
	return 0;
}

/* Under a filter (no vfork check by system call), a vfork child's handler
 * is its own: its parent's stays. */
static int seccomp_vfork(void)
{
	struct sigaction parents = { .sa_handler = one };

	if (install_filter(false))
		return 0;
	sigemptyset(&parents.sa_mask);
	sigaction(SIGUSR1, &parents, NULL);
	pid_t child = vfork();
	if (child == 0) {
		struct sigaction childs = { .sa_handler = two };

		sigemptyset(&childs.sa_mask);
		sigaction(SIGUSR1, &childs, NULL);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	raise(SIGUSR1);
	printf("parent_ran=signal %d\n", (int)last_signal);
	show_action("parent_action", SIGUSR1);
	return 0;
}

/* Two SCHED_FIFO threads on one CPU changing actions: the higher one
 * spun for good on the lock the lower one held. */
static volatile int fifo_stop;

static bool fifo_on_cpu_0(int priority)
{
	cpu_set_t cpus;
	struct sched_param parameter = { .sched_priority = priority };

	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameter) == 0;
}

static void *fifo_low(void *argument)
{
	struct sigaction action = { .sa_handler = one };

	(void)argument;
	sigemptyset(&action.sa_mask);
	fifo_on_cpu_0(1);
	while (!fifo_stop)
		sigaction(SIGUSR1, &action, NULL);
	return NULL;
}

static int fifo(void)
{
	struct sigaction action = { .sa_handler = two };
	struct timespec tick = { 0, 100000 };
	pthread_t low;

	if (!fifo_on_cpu_0(2)) {
		printf("fifo=skipped\n");
		return 0;
	}
	pthread_create(&low, NULL, fifo_low, NULL);
	sigemptyset(&action.sa_mask);
	for (int i = 0; i < 1000; i++) {
		nanosleep(&tick, NULL);
		sigaction(SIGUSR2, &action, NULL);
	}
	fifo_stop = 1;
	pthread_join(low, NULL);
	printf("fifo=done\n");
	return 0;
}

/* ---- helper-69's breaks of 600f954 ---- */
/* A vfork child that installs twice (through SIG_DFL, or two
 * functions): its parent's handler is still its own. */
static void vfork_child_installs(bool through_default)
{
	signal(SIGUSR1, one);
	pid_t child = vfork();
	if (child == 0) {
		/* Seventeen: the shim's turn of sixteen entries came round to
		 * its parent's (helper-70). */
		signal(SIGUSR1, through_default ? SIG_DFL : two);
		for (int i = 0; i < 17; i++)
			signal(SIGUSR1, two);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	last_signal = 0;
	raise(SIGUSR1);
	printf("vfork_child_installs_%s=parent ran %d, reads %s\n", through_default ? "default" : "twice",
	       (int)last_signal, name_of(signal(SIGUSR1, SIG_DFL)));
}

/* system() saves SIGINT's action and puts it back; meanwhile a handler
 * (the command signals this process) installs another for SIGINT. */
static void install_two_for_sigint(int signal_number)
{
	(void)signal_number;
	signal(SIGINT, two);
}

static void system_restores(void)
{
	signal(SIGINT, one);
	signal(SIGUSR1, install_two_for_sigint);
	printf("system_restores_status=%d\n", system("kill -USR1 $PPID; sleep 0.1") >> 8);
	last_signal = 0;
	raise(SIGINT);
	printf("system_restores=ran %d, reads %s\n", (int)last_signal, name_of(signal(SIGINT, SIG_DFL)));
	signal(SIGUSR1, SIG_DFL);
}

/* ---- helper-71's breaks of b3c4e60 ---- */

/* Who called the handler: the kernel's return path in libc, as without
 * the shim (the trampoline's frame was the caller). */
static volatile sig_atomic_t caller_known;
static char caller_file[64];

static void where_from(int signal_number)
{
	Dl_info info;

	(void)signal_number;
	if (dladdr(__builtin_return_address(0), &info) && info.dli_fname) {
		const char *base = strrchr(info.dli_fname, '/');

		snprintf(caller_file, sizeof(caller_file), "%s", base ? base + 1 : info.dli_fname);
		caller_known = 1;
	}
}

static void handler_caller(void)
{
	struct sigaction action = { .sa_handler = where_from };

	sigemptyset(&action.sa_mask);
	sigaction(SIGUSR2, &action, NULL);
	raise(SIGUSR2);
	printf("handler_caller=%s\n", caller_known ? caller_file : "?");
	signal(SIGUSR2, SIG_DFL);
}

/* How much of an alternate stack the handler has: the largest array
 * (in steps of 16 bytes) a handler on a stack with a guard page below it
 * uses and survives, each size tried in a child of its own.  The same
 * bare and under the shim (helper-71: 128 bytes fewer, the trampoline's
 * frames). */
static size_t room_size;
static volatile sig_atomic_t room_ran;

static void room_handler(int signal_number)
{
	volatile char used[room_size];

	used[0] = (char)signal_number;
	used[room_size - 1] = (char)signal_number;
	room_ran = used[0] == (char)signal_number;
}

static bool survives(size_t stack_size, size_t size)
{
	pid_t child = fork();
	int status = 0;

	if (child == 0) {
		size_t page = 4096, span = (stack_size + page - 1) / page * page;
		char *memory = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct rlimit no_core = { 0, 0 };
		struct sigaction action = { .sa_handler = room_handler, .sa_flags = SA_ONSTACK };

		setrlimit(RLIMIT_CORE, &no_core);
		mprotect(memory, page, PROT_NONE);
		stack_t alternate = { .ss_sp = memory + page, .ss_size = stack_size };
		sigaltstack(&alternate, NULL);
		sigemptyset(&action.sa_mask);
		sigaction(SIGUSR2, &action, NULL);
		room_size = size;
		raise(SIGUSR2);
		_exit(room_ran ? 0 : 1);
	}
	return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void alternate_stack_room(void)
{
	size_t stack_size = (size_t)sysconf(_SC_MINSIGSTKSZ) + 2048, fits = 16, overflows = stack_size;

	if (!survives(stack_size, fits)) {
		printf("alternate_stack_room=none\n");
		return;
	}
	while (overflows - fits > 16) {
		size_t middle = (fits + overflows) / 2 / 16 * 16;

		if (survives(stack_size, middle))
			fits = middle;
		else
			overflows = middle;
	}
	printf("alternate_stack_room=%zu of %zu\n", fits, stack_size);
}

#if defined(__x86_64__)
/*
 * A handler that abandons a wait by changing where the thread resumes
 * (mode resumed-elsewhere, shim only): its context's instruction and
 * stack moved to a function on a stack of its own.  The thread then runs,
 * and its next wait is one of its own (b3c4e60's shim put the semaphore
 * wait back: BLOCKED through the work after, and the nanosleep counted as
 * the semaphore's).
 */
static char elsewhere_stack[65536] __attribute__((aligned(16)));
static volatile int elsewhere_step;

static __attribute__((noreturn, used)) void resumed_here(void)
{
	struct timespec pause_time = { 0, 300000000 };

	__atomic_store_n(&elsewhere_step, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&elsewhere_step, __ATOMIC_SEQ_CST) == 1)
		;
	nanosleep(&pause_time, NULL);
	__atomic_store_n(&elsewhere_step, 3, __ATOMIC_SEQ_CST);
	/* Running until main ends the process (no wait: it would be one). */
	for (;;)
		__atomic_load_n(&elsewhere_step, __ATOMIC_SEQ_CST);
}

static void move_away(int signal_number, siginfo_t *info, void *context)
{
	ucontext_t *interrupted = context;

	(void)signal_number;
	(void)info;
	interrupted->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)resumed_here;
	/* As after a call: the return address's slot below a 16-byte boundary. */
	interrupted->uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)(elsewhere_stack + sizeof(elsewhere_stack) - 8);
}

static void *wait_to_be_moved(void *argument)
{
	(void)argument;
	sem_wait(&semaphore);
	printf("resumed=in the wait\n");
	return NULL;
}

static int resumed_elsewhere(void)
{
	struct sigaction action = { .sa_sigaction = move_away, .sa_flags = SA_SIGINFO };
	pthread_t thread;
	pid_t tid;

	sigemptyset(&action.sa_mask);
	sigaction(SIGUSR1, &action, NULL);
	sem_init(&semaphore, 0, 0);
	pthread_create(&thread, NULL, wait_to_be_moved, NULL);
	for (tid = 0; tid <= 0;) {
		for (int i = 0; i < fx_live_records() + 1 && tid <= 0; i++) {
			struct fx_record record = fx_read_record((uint32_t)i);

			if (record.state == TDSTAT_STATE_BLOCKED && record.kind == TDSTAT_WAIT_SEM)
				tid = record.tid;
		}
		sched_yield();
	}
	pthread_kill(thread, SIGUSR1);
	while (__atomic_load_n(&elsewhere_step, __ATOMIC_SEQ_CST) != 1)
		sched_yield();
	struct fx_record record = fx_record_of(tid);
	printf("moved_running=%s\n", fx_state_name(record.state));
	__atomic_store_n(&elsewhere_step, 2, __ATOMIC_SEQ_CST);
	fx_wait_state(tid, TDSTAT_STATE_BLOCKED);
	record = fx_record_of(tid);
	printf("moved_then_waits=%s %s\n", fx_state_name(record.state), fx_kind_name(record.kind));
	while (__atomic_load_n(&elsewhere_step, __ATOMIC_SEQ_CST) != 3)
		sched_yield();
	fx_wait_state(tid, TDSTAT_STATE_RUNNABLE);
	record = fx_record_of(tid);
	printf("moved_after_wait=%s\n", fx_state_name(record.state));
	fflush(stdout);
	_exit(0);
}

/*
 * A task clone(CLONE_VM) made without a TLS of its own, running on its
 * parent's, takes a signal while its parent waits (mode clone-vm, shim
 * only): its handler may not lift the parent, which sleeps on (helper-71:
 * the parent read RUNNABLE asleep, then BLOCKED through seconds of work).
 */
static volatile int clone_go, clone_in_handler, clone_release;
static pthread_mutex_t clone_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t clone_condition = PTHREAD_COND_INITIALIZER;
static pid_t clone_parent;

static void clone_handler(int signal_number)
{
	(void)signal_number;
	__atomic_store_n(&clone_in_handler, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&clone_release, __ATOMIC_SEQ_CST))
		;
}

static int clone_child(void *argument)
{
	(void)argument;
	while (!__atomic_load_n(&clone_go, __ATOMIC_SEQ_CST))
		;
	syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), SIGUSR1);
	return 0;
}

static void *clone_observer(void *argument)
{
	(void)argument;
	fx_wait_state(clone_parent, TDSTAT_STATE_BLOCKED);
	__atomic_store_n(&clone_go, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&clone_in_handler, __ATOMIC_SEQ_CST))
		sched_yield();
	struct fx_record record = fx_record_of(clone_parent);
	printf("parent_while_clone_handles=%s %s\n", fx_state_name(record.state), fx_kind_name(record.kind));
	__atomic_store_n(&clone_release, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&clone_lock);
	clone_go = 2;
	pthread_cond_signal(&clone_condition);
	pthread_mutex_unlock(&clone_lock);
	return NULL;
}

static int clone_vm(void)
{
	struct sigaction action = { .sa_handler = clone_handler };
	size_t stack_size = 256 * 1024;
	char *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t observer;
	int status = 0;

	sigemptyset(&action.sa_mask);
	sigaction(SIGUSR1, &action, NULL);
	clone_parent = fx_gettid();
	pid_t child = clone(clone_child, stack + stack_size, CLONE_VM | SIGCHLD, NULL);
	pthread_create(&observer, NULL, clone_observer, NULL);
	pthread_mutex_lock(&clone_lock);
	while (clone_go != 2)
		pthread_cond_wait(&clone_condition, &clone_lock);
	pthread_mutex_unlock(&clone_lock);
	pthread_join(observer, NULL);
	waitpid(child, &status, __WALL);
	struct fx_record record = fx_record_of(clone_parent);
	printf("parent_after=%s\n", fx_state_name(record.state));
	return 0;
}

/* The same under a seccomp filter the shim knows of (installed through
 * libc's prctl): no system call tells the child apart there either
 * (helper-73: gettid was skipped in a sandbox, and the parent lifted). */
static int clone_vm_sandboxed(void)
{
	if (install_filter(false))
		return 0;
	return clone_vm();
}

/*
 * A call injected in front of the interrupted point (mode injected-call,
 * shim only), as Go's asynchronous preemption does: the handler pushes
 * the interrupted instruction as the return address of a function of its
 * own, which works and returns into the sem_wait's futex call (restarted:
 * SA_RESTART).  The thread is back in its wait after it (helper-73:
 * 28561a3's shim read it RUNNABLE for the 5.5 s it slept on).
 */
static volatile int injected_done;

void injected_work(void) __attribute__((visibility("hidden"), used));
void injected_work(void)
{
	uint64_t start = __builtin_ia32_rdtsc();

	while (__builtin_ia32_rdtsc() - start < 20000000u)
		;
	injected_done = 1;
}

/* Every register as it was: the futex call it returns into restarts. */
__asm__(".text\n"
	".type injected_stub, @function\n"
	"injected_stub:\n"
	"	pushfq\n"
	"	push %rax\n	push %rcx\n	push %rdx\n	push %rsi\n	push %rdi\n"
	"	push %r8\n	push %r9\n	push %r10\n	push %r11\n	push %rbx\n"
	"	mov %rsp, %rbx\n"
	"	and $-16, %rsp\n"
	"	call injected_work\n"
	"	mov %rbx, %rsp\n"
	"	pop %rbx\n	pop %r11\n	pop %r10\n	pop %r9\n	pop %r8\n"
	"	pop %rdi\n	pop %rsi\n	pop %rdx\n	pop %rcx\n	pop %rax\n"
	"	popfq\n"
	"	ret\n"
	".size injected_stub, .-injected_stub\n");
void injected_stub(void);

static void inject(int signal_number, siginfo_t *info, void *context)
{
	ucontext_t *interrupted = context;
	greg_t sp = interrupted->uc_mcontext.gregs[REG_RSP] - 8;

	(void)signal_number;
	(void)info;
	*(greg_t *)sp = interrupted->uc_mcontext.gregs[REG_RIP];
	interrupted->uc_mcontext.gregs[REG_RSP] = sp;
	interrupted->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)injected_stub;
}

static pid_t waiter_tid;

static void *sem_waiter_once(void *argument)
{
	(void)argument;
	__atomic_store_n(&waiter_tid, fx_gettid(), __ATOMIC_SEQ_CST);
	int result = sem_wait(&semaphore);
	printf("waiter_returned=%d\n", result);
	return NULL;
}

static pid_t start_sem_waiter(pthread_t *thread)
{
	pid_t tid;

	sem_init(&semaphore, 0, 0);
	pthread_create(thread, NULL, sem_waiter_once, NULL);
	while (!(tid = __atomic_load_n(&waiter_tid, __ATOMIC_SEQ_CST)))
		sched_yield();
	fx_wait_state(tid, TDSTAT_STATE_BLOCKED);
	return tid;
}

static void settle(void)
{
	struct timespec moment = { 0, 30000000 };

	nanosleep(&moment, NULL);
}

static int injected_call(void)
{
	struct sigaction action = { .sa_sigaction = inject, .sa_flags = SA_SIGINFO | SA_RESTART };
	pthread_t thread;

	sigemptyset(&action.sa_mask);
	sigaction(SIGUSR1, &action, NULL);
	pid_t tid = start_sem_waiter(&thread);

	pthread_kill(thread, SIGUSR1);
	while (!injected_done)
		sched_yield();
	settle();
	struct fx_record record = fx_record_of(tid);
	printf("after_injected_call=%s %s\n", fx_state_name(record.state), fx_kind_name(record.kind));
	sem_post(&semaphore);
	pthread_join(thread, NULL);
	return 0;
}

/*
 * A user-level scheduler switching by signals (mode switch-back, shim
 * only): one handler moves the thread out of sem_wait onto a function of
 * its own stack, a later one puts its registers back, into the futex call
 * (restarted).  Running between the two, BLOCKED in the semaphore after
 * (helper-73: 28561a3's shim read it RUNNABLE asleep for 5 s).
 */
static gregset_t switched_out;
static char green_stack[65536] __attribute__((aligned(16)));
static volatile int green_running, green_leave;

static __attribute__((noreturn, used)) void green(void)
{
	green_running = 1;
	while (!green_leave)
		;
	syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), SIGUSR2);
	for (;;)
		;
}

static void switch_out(int signal_number, siginfo_t *info, void *context)
{
	ucontext_t *interrupted = context;

	(void)signal_number;
	(void)info;
	memcpy(switched_out, interrupted->uc_mcontext.gregs, sizeof(switched_out));
	interrupted->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)green;
	interrupted->uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)(green_stack + sizeof(green_stack) - 8);
}

static void switch_back(int signal_number, siginfo_t *info, void *context)
{
	ucontext_t *interrupted = context;

	(void)signal_number;
	(void)info;
	memcpy(interrupted->uc_mcontext.gregs, switched_out, sizeof(switched_out));
}

static int switch_back_mode(void)
{
	struct sigaction out = { .sa_sigaction = switch_out, .sa_flags = SA_SIGINFO | SA_RESTART },
			 back = { .sa_sigaction = switch_back, .sa_flags = SA_SIGINFO };
	pthread_t thread;

	sigemptyset(&out.sa_mask);
	sigemptyset(&back.sa_mask);
	sigaction(SIGUSR1, &out, NULL);
	sigaction(SIGUSR2, &back, NULL);
	pid_t tid = start_sem_waiter(&thread);

	pthread_kill(thread, SIGUSR1);
	while (!green_running)
		sched_yield();
	settle();
	struct fx_record record = fx_record_of(tid);
	printf("switched_out=%s\n", fx_state_name(record.state));
	green_leave = 1;
	fx_wait_state(tid, TDSTAT_STATE_BLOCKED);
	settle();
	record = fx_record_of(tid);
	printf("switched_back=%s %s\n", fx_state_name(record.state), fx_kind_name(record.kind));
	sem_post(&semaphore);
	pthread_join(thread, NULL);
	return 0;
}

/*
 * Two contexts of a user-level scheduler that both wait, swapped by a
 * signal (mode two-green, shim only): the thread's own sem_wait and a
 * function on a stack of its own that waits on another semaphore.  The
 * thread is asleep throughout, in one or the other (helper-74: the wait
 * left at a swap back was dropped, and the next swap read RUNNABLE).
 */
static gregset_t contexts[2];
static int context_now;
static volatile int second_started;
static sem_t second_semaphore;

static __attribute__((noreturn, used)) void second_context(void)
{
	second_started = 1;
	for (;;)
		sem_wait(&second_semaphore);
}

static void swap_contexts(int signal_number, siginfo_t *info, void *context)
{
	ucontext_t *interrupted = context;

	(void)signal_number;
	(void)info;
	memcpy(contexts[context_now], interrupted->uc_mcontext.gregs, sizeof(contexts[0]));
	context_now ^= 1;
	if (!second_started) {
		interrupted->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)second_context;
		interrupted->uc_mcontext.gregs[REG_RSP] =
			(greg_t)(uintptr_t)(green_stack + sizeof(green_stack) - 8);
		return;
	}
	memcpy(interrupted->uc_mcontext.gregs, contexts[context_now], sizeof(contexts[0]));
}

static int two_green(void)
{
	struct sigaction swap = { .sa_sigaction = swap_contexts, .sa_flags = SA_SIGINFO | SA_RESTART };
	pthread_t thread;
	const char *states[4];

	sigemptyset(&swap.sa_mask);
	sigaction(SIGUSR1, &swap, NULL);
	sem_init(&second_semaphore, 0, 0);
	pid_t tid = start_sem_waiter(&thread);

	for (int i = 0; i < 4; i++) {
		pthread_kill(thread, SIGUSR1);
		settle();
		states[i] = fx_state_name(fx_record_of(tid).state);
	}
	printf("two_green=%s %s %s %s\n", states[0], states[1], states[2], states[3]);
	fflush(stdout);
	_exit(0);
}

/*
 * A timed condvar wait that times out while another thread holds the
 * mutex (mode relock, shim only): the call sleeps on to take the mutex
 * back, and that sleep is the wait's too (helper-73: counted RUNNABLE
 * from the timer on, 0.89 of a thread the kernel saw asleep).
 */
static volatile int relock_stop;
static pthread_mutex_t relock_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t relock_condition = PTHREAD_COND_INITIALIZER;
/* The timeout: 1 ms; 100 us in mode relock-short (helper-76: 42c2558
 * counted the sleeps of a wait only once per 200 us of the thread's time,
 * and one not counted read RUNNABLE from its timer through the 9 ms
 * relock, 34-78x the kernel). */
static long relock_timeout_ns = 1000000;

static void *relock_waiter(void *argument)
{
	(void)argument;
	while (!relock_stop) {
		struct timespec deadline;

		pthread_mutex_lock(&relock_mutex);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_nsec += relock_timeout_ns;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&relock_condition, &relock_mutex, &deadline);
		pthread_mutex_unlock(&relock_mutex);
	}
	return NULL;
}

static void *relock_holder(void *argument)
{
	struct timespec hold = { 0, 9000000 }, rest = { 0, 300000 };

	(void)argument;
	while (!relock_stop) {
		nanosleep(&rest, NULL);
		pthread_mutex_lock(&relock_mutex);
		nanosleep(&hold, NULL);
		pthread_mutex_unlock(&relock_mutex);
	}
	return NULL;
}

static int relock(void)
{
	pthread_t waiter, holder;
	struct timespec warm = { 0, 100000000 }, measured = { 0, 500000000 };

	pthread_create(&waiter, NULL, relock_waiter, NULL);
	pthread_create(&holder, NULL, relock_holder, NULL);
	nanosleep(&warm, NULL);
	fx_enable();
	fx_reset();
	nanosleep(&measured, NULL);
	struct fx_snapshot snapshot = fx_snapshot();
	relock_stop = 1;
	pthread_join(waiter, NULL);
	pthread_join(holder, NULL);
	double runnable = snapshot.window_ns ? (double)snapshot.runnable_ns / (double)snapshot.window_ns : -1;
	/* The kernel: 0.01-0.03 (the holder's and the waiter's CPU). */
	printf("relock_asleep=%s\n", runnable >= 0 && runnable < 0.3 ? "yes" : "no");
	fprintf(stderr, "relock: runnable %.3f\n", runnable);
	return 0;
}

/* A seccomp filter that kills on getrusage, installed by system calls of
 * the program's own that the shim does not see (mode seccomp-getrusage),
 * then timed condvar waits that time out, nobody waiting for the mutex
 * (helper-76: 42c2558 counted every timed wait's sleeps with getrusage,
 * and the program died of SIGSYS). */
static pthread_mutex_t filtered_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t filtered_condition = PTHREAD_COND_INITIALIZER;

static long raw_syscall3(long number, long a, long b, long c);

static int seccomp_getrusage(void)
{
	struct sock_filter no_getrusage[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrusage, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { 4, no_getrusage };
	int timed_out = 0;

	if (raw_syscall3(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0) != 0 ||
	    raw_syscall3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&program) != 0) {
		printf("filter=refused\n");
		return 0;
	}
	for (int i = 0; i < 50; i++) {
		struct timespec deadline;

		pthread_mutex_lock(&filtered_mutex);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_nsec += 300000;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		timed_out += pthread_cond_timedwait(&filtered_condition, &filtered_mutex, &deadline) == ETIMEDOUT;
		pthread_mutex_unlock(&filtered_mutex);
	}
	printf("timed_out_under_filter=%d\n", timed_out);
	return 0;
}

/* A seccomp filter that kills on gettid, installed by system calls of the
 * program's own that the shim does not see (mode seccomp-gettid): a
 * handler inside a wait still runs (helper-73: the lift's gettid killed
 * the program). */
/* (The fourth and fifth arguments 0: prctl checks them.) */
static long raw_syscall3(long number, long a, long b, long c)
{
	long result;
	register long fourth __asm__("r10") = 0;
	register long fifth __asm__("r8") = 0;

	__asm__ volatile("syscall"
			 : "=a"(result)
			 : "a"(number), "D"(a), "S"(b), "d"(c), "r"(fourth), "r"(fifth)
			 : "rcx", "r11", "memory");
	return result;
}

static int seccomp_gettid(void)
{
	struct sock_filter no_gettid[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_gettid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = { 4, no_gettid };
	struct sigaction action = { .sa_handler = counting };
	struct itimerspec in = { .it_value = { 0, 20000000 } };
	struct sigevent event = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	struct timespec long_sleep = { 0, 200000000 };
	timer_t timer;

	sigemptyset(&action.sa_mask);
	sigaction(SIGALRM, &action, NULL);
	timer_create(CLOCK_MONOTONIC, &event, &timer);
	if (raw_syscall3(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0) != 0 ||
	    raw_syscall3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&program) != 0) {
		printf("filter=refused\n");
		return 0;
	}
	timer_settime(timer, 0, &in, NULL);
	nanosleep(&long_sleep, NULL);
	printf("handled_under_filter=%d\n", (int)handled);
	return 0;
}
#endif

#ifdef RT_OWN_SIGMASK
/* This program's own signal-mask functions (a wrapper that logs, a
 * runtime that tracks masks): glibc's sigaction, signal and sigset never
 * call them, nor may the shim (helper-69: its pthread_sigmask called
 * sigaction, and the shim's call of it recursed). */
static int own_mask_calls;

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	struct sigaction current;

	own_mask_calls++;
	sigaction(SIGCHLD, NULL, &current);
	return syscall(SYS_rt_sigprocmask, how, set, old, 8) < 0 ? errno : 0;
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	own_mask_calls++;
	return (int)syscall(SYS_rt_sigprocmask, how, set, old, 8);
}

int sigemptyset(sigset_t *set)
{
	own_mask_calls++;
	memset(set, 0, sizeof(*set));
	return 0;
}

/* And its own gettid(), as code written before glibc 2.30 has, taking a
 * lock (helper-73: the shim's start hung in it, and its handlers called
 * it inside waits). */
static int own_gettid_calls;
static pthread_mutex_t own_gettid_lock = PTHREAD_MUTEX_INITIALIZER;

pid_t gettid(void)
{
	pthread_mutex_lock(&own_gettid_lock);
	own_gettid_calls++;
	pthread_mutex_unlock(&own_gettid_lock);
	return (pid_t)syscall(SYS_gettid);
}

static int own_mask(void)
{
	struct sigaction action;

	memset(&action, 0, sizeof(action));
	action.sa_handler = counting;
	sigaction(SIGALRM, &action, NULL);
	/* A handler inside a wait: the shim's lift. */
	struct itimerspec in = { .it_value = { 0, 20000000 } };
	struct sigevent event = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	struct timespec long_sleep = { 0, 200000000 };
	timer_t timer;

	timer_create(CLOCK_MONOTONIC, &event, &timer);
	timer_settime(timer, 0, &in, NULL);
	nanosleep(&long_sleep, NULL);
	timer_delete(timer);
	printf("own_gettid_calls=%d handled %d\n", own_gettid_calls, (int)handled);
	memset(&action, 0, sizeof(action));
	action.sa_handler = one;
	sigaction(SIGUSR1, &action, NULL);
	signal(SIGUSR2, two);
	sysv_signal(SIGHUP, one);
	sigset(SIGWINCH, two);
	sigset(SIGWINCH, SIG_HOLD);
	siginterrupt(SIGUSR2, 1);
	printf("own_mask_calls=%d\n", own_mask_calls);
	return 0;
}
#endif

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "seccomp-mask"))
		return seccomp_mask();
	if (argc > 1 && !strcmp(argv[1], "seccomp-vfork"))
		return seccomp_vfork();
	if (argc > 1 && !strcmp(argv[1], "fifo"))
		return fifo();
	if (argc > 1 && !strcmp(argv[1], "seccomp-refuse"))
		return seccomp_refuse();
	if (argc > 1 && !strcmp(argv[1], "stale-scope"))
		return stale_scope();
#if defined(__x86_64__)
	if (argc > 1 && !strcmp(argv[1], "resumed-elsewhere"))
		return resumed_elsewhere();
	if (argc > 1 && !strcmp(argv[1], "clone-vm"))
		return clone_vm();
	if (argc > 1 && !strcmp(argv[1], "clone-vm-sandboxed"))
		return clone_vm_sandboxed();
	if (argc > 1 && !strcmp(argv[1], "injected-call"))
		return injected_call();
	if (argc > 1 && !strcmp(argv[1], "switch-back"))
		return switch_back_mode();
	if (argc > 1 && !strcmp(argv[1], "two-green"))
		return two_green();
	if (argc > 1 && !strcmp(argv[1], "relock"))
		return relock();
	if (argc > 1 && !strcmp(argv[1], "relock-short")) {
		relock_timeout_ns = 100000;
		return relock();
	}
	if (argc > 1 && !strcmp(argv[1], "seccomp-getrusage"))
		return seccomp_getrusage();
	if (argc > 1 && !strcmp(argv[1], "seccomp-gettid"))
		return seccomp_gettid();
#endif
#ifdef RT_OWN_SIGMASK
	return own_mask();
#endif
	readback();
	one_shot_and_nesting();
	the_signal_calls();
	refused();
	saved_and_restored();
	handlers_in_waits();
	unwritable_old();
	smallest_alternate_stack();
	concurrent_swaps();
	masks_follow_handlers();
	cancelled_inside();
	vfork_child_installs(true);
	vfork_child_installs(false);
	system_restores();
	handler_caller();
	alternate_stack_room();
	return 0;
}
