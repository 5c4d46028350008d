/* SPDX-License-Identifier: MIT */
/*
 * break13_unwinder_fixture: a program linked with libunwind.so.8 (the
 * nongnu libunwind, which exports the _Unwind_* functions too), run with
 * the shim preloaded.  Threads are cancelled (deferred) in
 * pthread_cond_wait and in sem_wait, and joined; then no record but the
 * main thread's may be live, and the semaphore may have no waiter.
 *
 * glibc's cancellation unwinds with the libgcc_s it loaded itself, but
 * the shim's frames look their context up through the global scope,
 * where the program's libunwind.so.8 comes before the shim's libgcc_s:
 * personality.c's _Unwind_GetIPInfo, and inside libgcc_s the personality
 * routine's own _Unwind_GetLanguageSpecificData and the rest (called
 * through its PLT), are libunwind's, reading libgcc's context as their
 * own.  No cleanup of the shim's runs: the cancelled waiter stayed
 * BLOCKED in its record for good, and the semaphore kept a waiter, until
 * both moved to cleanup buffers of glibc's first kind, which glibc's
 * unwinding runs in its stop function.  Exits 1 when either is back.
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static sem_t semaphore;
static volatile pid_t waiter;

static void unlock(void *mutex)
{
	pthread_mutex_unlock(mutex);
}

static void *waits_on_cond(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&lock);
	pthread_cleanup_push(unlock, &lock);
	waiter = fx_gettid();
	for (;;)
		pthread_cond_wait(&cond, &lock);
	pthread_cleanup_pop(1);
	return NULL;
}

static void *waits_on_sem(void *unused)
{
	(void)unused;
	waiter = fx_gettid();
	for (;;)
		sem_wait(&semaphore);
	return NULL;
}

int main(void)
{
	void *(*bodies[])(void *) = { waits_on_cond, waits_on_sem };
	int base = fx_live_records(), failed = 0;
	uint64_t word;

	sem_init(&semaphore, 0, 0);
	for (int i = 0; i < 2; i++) {
		pthread_t thread;
		void *result;

		waiter = 0;
		pthread_create(&thread, NULL, bodies[i], NULL);
		while (!waiter)
			sched_yield();
		if (!fx_wait_state(waiter, TDSTAT_STATE_BLOCKED))
			fx_die("thread %d never BLOCKED", i);
		pthread_cancel(thread);
		pthread_join(thread, &result);
		if (result != PTHREAD_CANCELED)
			fx_die("thread %d not cancelled", i);
		if (!fx_wait_live(base)) {
			printf("%s: record still live after the join\n", i ? "sem_wait" : "pthread_cond_wait");
			failed = 1;
			base = fx_live_records();
		}
	}
	memcpy(&word, &semaphore, sizeof(word));
	if (word >> 32) {
		printf("sem_wait: %llu waiters left\n", (unsigned long long)(word >> 32));
		failed = 1;
	}
	printf("%s\n", failed ? "FAIL" : "ok");
	return failed;
}
