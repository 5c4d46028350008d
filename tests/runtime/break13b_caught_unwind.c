/* SPDX-License-Identifier: MIT */
/*
 * break13b_caught_unwind: an unwinding that passes one of the shim's
 * interrupted frames but ends below the semaphore wait the thread notes
 * must leave that wait's registration alone.
 *
 * A thread sleeps in sem_wait(A): the outermost wait, its registration
 * noted in tdshim_self.semaphore_waiting.  A signal (SIGUSR1, SA_RESTART)
 * runs a handler that calls sem_timedwait(B) with a past deadline over and
 * over, each call in a "try", with the trap flag set: the n-th call's
 * n-th instruction unwinds from its SIGTRAP up to the handler, where the
 * unwinding stops (a C++ throw from a signal handler caught in the
 * handler; here _Unwind_ForcedUnwind whose stop function jumps back into
 * the handler, which C can write).  The handler then returns, and the
 * futex sleep of sem_wait(A) restarts: the thread sleeps on A again, a
 * waiter of it.
 *
 * When the unwinding starts on an instruction of the shim's inside the
 * handler's wait, personality.c calls tdshim_semaphore_forget_above with
 * that frame's stack pointer, and the registration noted (A's, far above:
 * the outer wait's) is taken back though the unwinding never reaches its
 * frame.  A's waiter count drops to 0 while the thread sleeps on A: a
 * sem_post(A) makes no futex wake (a lost wakeup, the thread hangs), and
 * when the thread wakes anyway its take unregisters a second time: the
 * high half of A's word wraps to 0xffffffff.  With bare glibc the outer
 * wait keeps its registration throughout.
 *
 * Not only a wait: any frame of the shim's with a cleanup (nanosleep's)
 * in the handler does it.  x86-64 (the trap flag).
 *
 * Exits 0 when A kept its waiter and the post woke the thread, 1 when
 * not (what went wrong on stdout).  Run with the shim preloaded and
 * TDSTAT_ENABLE=1; passes without the shim too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#define TRAP_FLAG 0x100
/* The first instructions of each sem_timedwait (the shim's whole path is
 * thousands, and the scan is quadratic): the wrapper's frame, which has
 * a cleanup, comes within a few. */
#define STEPS_MAX 400

static sem_t semaphore_a, semaphore_b;
static pthread_t waiter;
static volatile sig_atomic_t handler_done, waiter_done;
static volatile long steps, unwind_at, unwound;
static volatile unsigned int first_loss_at;
static sigjmp_buf catch_point;
static uintptr_t catch_frame;
static struct _Unwind_Exception exception;

static unsigned int waiters_of(sem_t *semaphore)
{
	return (unsigned int)(__atomic_load_n((uint64_t *)semaphore, __ATOMIC_SEQ_CST) >> 32);
}

static uint64_t word_of(sem_t *semaphore)
{
	return __atomic_load_n((uint64_t *)semaphore, __ATOMIC_SEQ_CST);
}

/* The "catch": the first frame above the handler's locals. */
static _Unwind_Reason_Code stop_in_handler(int version, _Unwind_Action actions, _Unwind_Exception_Class class,
					   struct _Unwind_Exception *object, struct _Unwind_Context *context,
					   void *argument)
{
	(void)version;
	(void)class;
	(void)object;
	(void)argument;
	if ((actions & _UA_END_OF_STACK) || _Unwind_GetCFA(context) > catch_frame) {
		unwound++;
		siglongjmp(catch_point, 1);
	}
	return _URC_NO_REASON;
}

/* One step; the chosen one unwinds (the kernel cleared the flag for the
 * handler, and the jump back does not restore it). */
static void on_trap(int number)
{
	(void)number;
	if (++steps != unwind_at)
		return;
	memset(&exception, 0, sizeof exception);
	exception.exception_class = 0x6272656b31336200ull; /* "brek13b" */
	_Unwind_ForcedUnwind(&exception, stop_in_handler, NULL);
	abort(); /* the stop function always jumps */
}

static void on_usr1(int number)
{
	struct timespec past = {1, 0};
	volatile char here;

	(void)number;
	catch_frame = (uintptr_t)&here;
	for (volatile long at = 1; at < STEPS_MAX; at++) {
		steps = 0;
		unwind_at = at;
		if (sigsetjmp(catch_point, 1) == 0) {
			__asm__ __volatile__("pushfq\n\torq %0, (%%rsp)\n\tpopfq" : : "i"(TRAP_FLAG) : "memory", "cc");
			sem_timedwait(&semaphore_b, &past);
			__asm__ __volatile__("pushfq\n\tandq %0, (%%rsp)\n\tpopfq" : : "i"(~TRAP_FLAG) : "memory", "cc");
			break; /* returned before the chosen step: all done */
		}
		if (waiters_of(&semaphore_a) != 1) {
			first_loss_at = (unsigned int)at;
			break; /* found: the rest is the waiter's */
		}
	}
	handler_done = 1;
}

static void *waits_on_a(void *unused)
{
	(void)unused;
	/* SA_RESTART: the handler's return resumes the sleep; an EINTR
	 * would start a new wait, with a new registration. */
	while (sem_wait(&semaphore_a) != 0)
		printf("sem_wait(A): %s, again\n", strerror(errno));
	waiter_done = 1;
	return NULL;
}

static void sleep_ms(int ms)
{
	struct timespec span = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&span, NULL);
}

int main(void)
{
	struct sigaction action;

	setvbuf(stdout, NULL, _IONBF, 0);
	memset(&action, 0, sizeof action);
	action.sa_handler = on_usr1;
	action.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &action, NULL);
	/* The unwinding never returns from the handler: SIGTRAP must not
	 * stay blocked. */
	action.sa_handler = on_trap;
	action.sa_flags = SA_NODEFER;
	sigaction(SIGTRAP, &action, NULL);
	sem_init(&semaphore_a, 0, 0);
	sem_init(&semaphore_b, 0, 0);
	/* Warm: the first call's lazy binding is not stepped. */
	struct timespec past = {1, 0};
	sem_timedwait(&semaphore_b, &past);

	pthread_create(&waiter, NULL, waits_on_a, NULL);
	while (waiters_of(&semaphore_a) != 1)
		sleep_ms(1);
	sleep_ms(50);
	pthread_kill(waiter, SIGUSR1);
	while (!handler_done)
		sleep_ms(1);
	sleep_ms(50);
	unsigned int left = waiters_of(&semaphore_a);
	printf("%ld unwindings stopped in the handler; A lost its waiter first at step %u (0: never); "
	       "A's waiters with the thread back asleep: %u (1 expected)\n",
	       unwound, first_loss_at, left);

	sem_post(&semaphore_a);
	for (int i = 0; i < 200 && !waiter_done; i++)
		sleep_ms(10);
	if (!waiter_done) {
		printf("lost wakeup: sem_post(A) woke nobody in 2 s (A's word %#llx)\n",
		       (unsigned long long)word_of(&semaphore_a));
		/* A signal restarts the futex wait, which finds the unit. */
		pthread_kill(waiter, SIGUSR1);
		for (int i = 0; i < 500 && !waiter_done; i++)
			sleep_ms(10);
		printf("after a signal: %s, A's word %#llx (waiters in the high half)\n",
		       waiter_done ? "woken" : "still asleep", (unsigned long long)word_of(&semaphore_a));
		_exit(1);
	}
	pthread_join(waiter, NULL);
	if (left != 1 || waiters_of(&semaphore_a) != 0) {
		printf("A's word at the end %#llx (0 waiters expected)\n", (unsigned long long)word_of(&semaphore_a));
		return 1;
	}
	printf("ok\n");
	return 0;
}
