/* SPDX-License-Identifier: MIT */
/*
 * A program that lets only libc make system calls (syscall user dispatch,
 * PR_SET_SYSCALL_USER_DISPATCH, with libc's executable text as the
 * allowed region) while two threads hand a pair of semaphores back and
 * forth (sem_wait sleeps, sem_post wakes) and fight over a default mutex
 * (a contended lock sleeps, its unlock wakes) and an rwlock (the
 * release wakes).  Bare, every futex call
 * those make is libc's, so nothing is trapped.  A shim whose own futex
 * calls are a syscall instruction in libtdshim.so's text gets SIGSYS for
 * them: the handler here makes the call through libc's syscall() (so the
 * program still works) and counts it.  Prints whether any futex call was
 * trapped; transparency_test.py compares it bare and under the shim.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "libc_text.h"

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_OFF 0
#define PR_SYS_DISPATCH_ON 1
#define SYSCALL_DISPATCH_FILTER_ALLOW 0
#define SYSCALL_DISPATCH_FILTER_BLOCK 1
#endif

#define ROUNDS 2000

static volatile char selector = SYSCALL_DISPATCH_FILTER_ALLOW;
static volatile int futex_traps, other_traps;
static uintptr_t libc_start, libc_end;
static sem_t ping, pong;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static volatile long shared_counter;

/* The trapped call, made from libc's text instead (allowed). */
static void on_sigsys(int signal, siginfo_t *info, void *context)
{
	ucontext_t *uc = context;
	greg_t *regs = uc->uc_mcontext.gregs;
	int saved_errno = errno;

	(void)signal;
	if (info->si_syscall == SYS_futex)
		__atomic_add_fetch(&futex_traps, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&other_traps, 1, __ATOMIC_RELAXED);
	long result = syscall(info->si_syscall, regs[REG_RDI], regs[REG_RSI], regs[REG_RDX], regs[REG_R10],
			      regs[REG_R8], regs[REG_R9]);
	regs[REG_RAX] = result == -1 ? -errno : result;
	errno = saved_errno;
}

/* Syscall user dispatch is a thread's own: each thread turns it on. */
static int dispatch_on(void)
{
	return prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, libc_start, libc_end - libc_start, &selector);
}

static void contend(void)
{
	for (int i = 0; i < 50; i++) {
		pthread_mutex_lock(&mutex);
		for (volatile int spin = 0; spin < 2000; spin++)
			shared_counter++;
		pthread_mutex_unlock(&mutex);
	}
	for (int i = 0; i < 50; i++) {
		if (i & 1)
			pthread_rwlock_rdlock(&rwlock);
		else
			pthread_rwlock_wrlock(&rwlock);
		for (volatile int spin = 0; spin < 2000; spin++)
			shared_counter++;
		pthread_rwlock_unlock(&rwlock);
	}
}

static void *partner(void *unused)
{
	(void)unused;
	if (dispatch_on() != 0)
		return (void *)1;
	for (int i = 0; i < ROUNDS; i++) {
		sem_wait(&ping);
		sem_post(&pong);
		if (i % 100 == 0)
			contend();
	}
	return NULL;
}

int main(void)
{
	struct sigaction action = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
	pthread_t thread;
	void *status = NULL;

	struct libc_text text = libc_text_find();
	libc_start = text.start;
	libc_end = text.end;
	if (!libc_start || sigaction(SIGSYS, &action, NULL) != 0)
		return 2;
	if (dispatch_on() != 0) {
		printf("unsupported\n");
		return 0;
	}
	prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0);
	sem_init(&ping, 0, 0);
	sem_init(&pong, 0, 0);
	if (pthread_create(&thread, NULL, partner, NULL) != 0)
		return 2;
	if (dispatch_on() != 0)
		return 2;
	selector = SYSCALL_DISPATCH_FILTER_BLOCK;
	for (int i = 0; i < ROUNDS; i++) {
		sem_post(&ping);
		sem_wait(&pong);
		if (i % 100 == 0)
			contend();
	}
	selector = SYSCALL_DISPATCH_FILTER_ALLOW;
	pthread_join(thread, &status);
	printf("rounds done, partner %s, futex calls %s\n", status ? "failed" : "ok",
	       futex_traps ? "trapped" : "not trapped");
	return 0;
}
