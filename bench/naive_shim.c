/* SPDX-License-Identifier: MIT */
/*
 * libnaiveshim.so: a deliberately naive "Solaris-style" statistics shim,
 * built only to be measured against libtdshim.so.
 *
 * One global set of counters for the whole process.  Every wrapped call,
 * whether it would wait or not, reads the clock and updates the shared
 * integrals with atomic read-modify-writes before and after the real call:
 * the design that per-thread, single-writer records avoid.  Its figures
 * are roughly right (the integral updates race with each other), which is
 * beside the point: what it costs is what bench/bench.py measures.
 *
 * NAIVE_SHIM_REPORT=1 prints its averages on stderr at exit.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NAIVE_EXPORT __attribute__((visibility("default")))

static struct {
	_Atomic uint64_t start_ns;
	_Atomic uint64_t last_change_ns;
	_Atomic uint64_t runnable_integral_ns;
	_Atomic uint64_t lwps_integral_ns;
	_Atomic int64_t runnable;
	_Atomic int64_t lwps;
	_Atomic uint64_t calls;
} counters;

static int (*real_mutex_lock)(pthread_mutex_t *);
static int (*real_rwlock_rdlock)(pthread_rwlock_t *);
static int (*real_rwlock_wrlock)(pthread_rwlock_t *);
static int (*real_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_sem_wait)(sem_t *);
static int (*real_join)(pthread_t, void **);
static int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static ssize_t (*real_read)(int, void *, size_t);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Closes the interval since the last change, for everyone, then applies
 * this thread's change.  Every thread of the process writes these lines. */
static void account(int64_t runnable_delta, int64_t lwps_delta)
{
	uint64_t now = now_ns();
	uint64_t then = atomic_exchange(&counters.last_change_ns, now);
	uint64_t span = now > then ? now - then : 0;

	atomic_fetch_add(&counters.runnable_integral_ns, span * (uint64_t)atomic_load(&counters.runnable));
	atomic_fetch_add(&counters.lwps_integral_ns, span * (uint64_t)atomic_load(&counters.lwps));
	atomic_fetch_add(&counters.runnable, runnable_delta);
	atomic_fetch_add(&counters.lwps, lwps_delta);
	atomic_fetch_add(&counters.calls, 1);
}

static void resolve(void)
{
	real_mutex_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
	real_rwlock_rdlock = dlsym(RTLD_NEXT, "pthread_rwlock_rdlock");
	real_rwlock_wrlock = dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");
	real_cond_wait = dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.3.2");
	real_sem_wait = dlsym(RTLD_NEXT, "sem_wait");
	real_join = dlsym(RTLD_NEXT, "pthread_join");
	real_create = dlsym(RTLD_NEXT, "pthread_create");
	real_read = dlsym(RTLD_NEXT, "read");
}

static void report(void)
{
	account(0, 0);
	double window = (double)(now_ns() - atomic_load(&counters.start_ns));

	fprintf(stderr, "naive_shim: runnable %.2f lwps %.2f calls %llu\n",
		atomic_load(&counters.runnable_integral_ns) / window,
		atomic_load(&counters.lwps_integral_ns) / window,
		(unsigned long long)atomic_load(&counters.calls));
}

__attribute__((constructor)) static void naive_start(void)
{
	const char *text = getenv("NAIVE_SHIM_REPORT");

	resolve();
	atomic_store(&counters.start_ns, now_ns());
	atomic_store(&counters.last_change_ns, now_ns());
	atomic_store(&counters.runnable, 1);
	atomic_store(&counters.lwps, 1);
	if (text && strcmp(text, "1") == 0)
		atexit(report);
}

#define NAIVE_WAIT(call)              \
	do {                          \
		account(-1, 0);       \
		int result_ = (call); \
		account(1, 0);        \
		return result_;       \
	} while (0)

NAIVE_EXPORT int pthread_mutex_lock(pthread_mutex_t *mutex)
{
	NAIVE_WAIT(real_mutex_lock(mutex));
}

NAIVE_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *lock)
{
	NAIVE_WAIT(real_rwlock_rdlock(lock));
}

NAIVE_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *lock)
{
	NAIVE_WAIT(real_rwlock_wrlock(lock));
}

NAIVE_EXPORT int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	NAIVE_WAIT(real_cond_wait(cond, mutex));
}

NAIVE_EXPORT int sem_wait(sem_t *semaphore)
{
	NAIVE_WAIT(real_sem_wait(semaphore));
}

NAIVE_EXPORT int pthread_join(pthread_t thread, void **result)
{
	NAIVE_WAIT(real_join(thread, result));
}

NAIVE_EXPORT ssize_t read(int fd, void *buffer, size_t size)
{
	account(-1, 0);
	ssize_t got = real_read(fd, buffer, size);
	account(1, 0);
	return got;
}

struct start {
	void *(*routine)(void *);
	void *arg;
};

static void *trampoline(void *arg)
{
	struct start start = *(struct start *)arg;

	free(arg);
	account(0, 0);
	void *result = start.routine(start.arg);
	account(-1, -1);
	return result;
}

NAIVE_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
				void *(*routine)(void *), void *arg)
{
	struct start *start = malloc(sizeof(*start));

	if (!start)
		return real_create(thread, attr, routine, arg);
	start->routine = routine;
	start->arg = arg;
	account(1, 1);
	int error = real_create(thread, attr, trampoline, start);
	if (error) {
		account(-1, -1);
		free(start);
	}
	return error;
}
