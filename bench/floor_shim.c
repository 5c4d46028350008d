/* SPDX-License-Identifier: MIT */
/*
 * libfloorshim.so: the least a shim can do on the ping-pongs' blocking
 * paths for what docs/CONTRACT.md §2 asks of a sleep, built only to be
 * measured beside libtdshim.so (bench/bench.py, section 1).
 *
 * A waiter that sleeps (sem_wait whose try fails, every
 * pthread_cond_wait) makes one change of its own record into BLOCKED on
 * the way in and one back at its return, dated by the time stamp
 * counter; a waker that has someone to wake (sem_post on a semaphore
 * with waiters, pthread_cond_signal/broadcast on a condvar with waiters)
 * stamps the object's slot first, and the waiter's change back dates its
 * wake-up from that stamp.  That is all: no region another process can
 * read or find, no announcement that makes a reading safe against a
 * stopped writer, no kinds, objects or call sites, no claim of one
 * stamp among several waiters, no correction for a wake from another
 * CPU, no sleep other than these four calls.  Each of those is part of
 * what libtdshim.so does on the same path, so what this one costs is a
 * floor under it on this machine: the part of a ping-pong's ratio that
 * no implementation of the contract avoids (a record change and a stamp
 * on a path that a context switch has just made cold).
 *
 * FLOOR_SHIM_REPORT=1 prints, at exit, how many sleeps it counted and
 * how many found their stamp, so a run can be checked to have taken the
 * paths it claims to measure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

#define FLOOR_EXPORT __attribute__((visibility("default")))

enum { RUNNABLE = 1, BLOCKED = 2 };

/* One thread's record, as the shim's: written by its thread only, a
 * sequence count odd while a change is under way. */
struct record {
	uint32_t seq, state;
	uint64_t since, runnable, idle;
} __attribute__((aligned(64)));

static __thread struct record self;

#define SLOTS 4096u
static uint64_t slots[SLOTS] __attribute__((aligned(64)));

static unsigned long sleeps, stamped;

static int (*real_sem_wait)(sem_t *);
static int (*real_sem_trywait)(sem_t *);
static int (*real_sem_post)(sem_t *);
static int (*real_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_cond_signal)(pthread_cond_t *);
static int (*real_cond_broadcast)(pthread_cond_t *);

static void report(void)
{
	fprintf(stderr, "floor shim: %lu sleeps, %lu dated by a stamp\n", sleeps, stamped);
}

__attribute__((constructor)) static void floor_init(void)
{
	real_sem_wait = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_wait");
	real_sem_trywait = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_trywait");
	real_sem_post = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_post");
	real_cond_wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))dlvsym(RTLD_NEXT, "pthread_cond_wait",
									      "GLIBC_2.3.2");
	real_cond_signal = (int (*)(pthread_cond_t *))dlvsym(RTLD_NEXT, "pthread_cond_signal", "GLIBC_2.3.2");
	real_cond_broadcast = (int (*)(pthread_cond_t *))dlvsym(RTLD_NEXT, "pthread_cond_broadcast", "GLIBC_2.3.2");
	if (!real_sem_wait || !real_sem_trywait || !real_sem_post || !real_cond_wait || !real_cond_signal ||
	    !real_cond_broadcast) {
		fprintf(stderr, "floor shim: %s\n", dlerror());
		abort();
	}
	if (getenv("FLOOR_SHIM_REPORT"))
		atexit(report);
}

static uint64_t *slot_of(const void *object)
{
	uint64_t x = (uint64_t)(uintptr_t)object;

	x ^= x >> 29;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	return &slots[(x >> 32) % SLOTS];
}

static void stamp(const void *object)
{
	__atomic_store_n(slot_of(object), __rdtsc(), __ATOMIC_RELAXED);
}

/* The change into BLOCKED; its moment. */
static uint64_t into_blocked(void)
{
	uint64_t now = __rdtsc();

	__atomic_store_n(&self.seq, self.seq + 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_RELEASE);
	if (self.since && now > self.since)
		self.runnable += now - self.since;
	self.since = now;
	self.state = BLOCKED;
	__atomic_signal_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&self.seq, self.seq + 1, __ATOMIC_RELAXED);
	return now;
}

/* The change back, dated by the object's stamp when it falls inside the
 * sleep (else by the return). */
static void woken(const void *object, uint64_t began)
{
	uint64_t now = __rdtsc(), at = __atomic_load_n(slot_of(object), __ATOMIC_RELAXED);

	sleeps++;
	if (at > began && at <= now)
		stamped++;
	else
		at = now;
	__atomic_store_n(&self.seq, self.seq + 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_RELEASE);
	self.idle += at - began;
	self.since = at;
	self.state = RUNNABLE;
	__atomic_signal_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&self.seq, self.seq + 1, __ATOMIC_RELAXED);
}

FLOOR_EXPORT int sem_wait(sem_t *sem)
{
	if (real_sem_trywait(sem) == 0)
		return 0;
	uint64_t began = into_blocked();
	int result = real_sem_wait(sem);

	woken(sem, began);
	return result;
}

/* glibc's semaphore (x86-64): the value in the low half of its first
 * word, the waiters in the high half. */
FLOOR_EXPORT int sem_post(sem_t *sem)
{
	if (__atomic_load_n((uint64_t *)(void *)sem, __ATOMIC_RELAXED) >> 32)
		stamp(sem);
	return real_sem_post(sem);
}

FLOOR_EXPORT int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	uint64_t began = into_blocked();
	int result = real_cond_wait(cond, mutex);

	woken(cond, began);
	return result;
}

/* glibc's condvar: __wrefs counts waiters from bit 3 up. */
static void stamp_if_waiters(pthread_cond_t *cond)
{
	if (__atomic_load_n(&cond->__data.__wrefs, __ATOMIC_RELAXED) >> 3)
		stamp(cond);
}

FLOOR_EXPORT int pthread_cond_signal(pthread_cond_t *cond)
{
	stamp_if_waiters(cond);
	return real_cond_signal(cond);
}

FLOOR_EXPORT int pthread_cond_broadcast(pthread_cond_t *cond)
{
	stamp_if_waiters(cond);
	return real_cond_broadcast(cond);
}
