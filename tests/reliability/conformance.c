/* SPDX-License-Identifier: MIT */
/*
 * conformance: return values and errno of the interposed calls in the
 * states POSIX (and glibc's documentation) single out: EBUSY, ETIMEDOUT,
 * EINVAL, EDEADLK, EPERM, EAGAIN, EOWNERDEAD, ENOTRECOVERABLE, ECHILD,
 * EBADF, ENOTSOCK..., for every mutex kind, rwlocks, condvars, barriers,
 * joins, semaphores, sleeps, poll/select/epoll, signal waits, wait*,
 * accept and recv.  One line per check: "name: result [expected X]", with
 * "MISMATCH" when the C library itself disagrees with the expectation.
 * rel_compare runs it bare and under the shim: every line must be the
 * same.  (rel_waits covers cancellation and EINTR.)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int checks, mismatches;

/* An fd number nothing here opens (main() closes it to be sure). */
#define CLOSED_FD 987

static const char *name_of(int error)
{
	const char *name = error ? strerrorname_np(error) : "0";

	return name ? name : "?";
}

/* A pthread-style result (the error number, 0 for success). */
static void expect_error(const char *name, int got, int expected)
{
	checks++;
	if (got != expected)
		mismatches++;
	printf("%s: %s [expected %s]%s\n", name, name_of(got), name_of(expected), got == expected ? "" : " MISMATCH");
}

/* A libc-style result: -1 and errno, or a value. */
static void expect_errno(const char *name, long got, int error, long expected, int expected_error)
{
	bool same = got == expected && (got != -1 || error == expected_error);

	checks++;
	if (!same)
		mismatches++;
	if (got == -1)
		printf("%s: -1 %s", name, name_of(error));
	else
		printf("%s: %ld", name, got);
	if (expected == -1)
		printf(" [expected -1 %s]", name_of(expected_error));
	else
		printf(" [expected %ld]", expected);
	printf("%s\n", same ? "" : " MISMATCH");
}
#define EXPECT_ERRNO(name, call, expected, expected_error)  \
	do {                                                \
		long r_;                                    \
		errno = 0;                                  \
		r_ = (call);                                \
		expect_errno(name, r_, errno, expected, expected_error); \
	} while (0)

static void note(const char *name, const char *fmt, long value)
{
	checks++;
	printf("%s: ", name);
	printf(fmt, value);
	printf("\n");
}

static struct timespec from_now(clockid_t clock, long ms)
{
	struct timespec t;

	clock_gettime(clock, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	} else if (t.tv_nsec < 0) {
		t.tv_sec--;
		t.tv_nsec += 1000000000L;
	}
	return t;
}

/* volatile: the compiler must not see (and warn about) what is meant */
static struct pollfd *volatile null_fds;
static volatile int minus_one = -1;
static const struct timespec bad_nsec = { 0, 1000000000L };
static const struct timespec negative_nsec = { 0, -1 };

/* ---- running something in another thread ---- */

typedef int (*thread_call)(void *);
struct other {
	thread_call call;
	void *argument;
	int result;
};
static void *other_main(void *argument)
{
	struct other *o = argument;

	o->result = o->call(o->argument);
	return NULL;
}
static int in_other_thread(thread_call call, void *argument)
{
	struct other o = { call, argument, -1 };
	pthread_t t;

	pthread_create(&t, NULL, other_main, &o);
	pthread_join(t, NULL);
	return o.result;
}
static int lock_it(void *m) { return pthread_mutex_lock(m); }
static int lock_and_die(void *m) { pthread_mutex_lock(m); return 0; }
static int unlock_it(void *m) { return pthread_mutex_unlock(m); }
static int trylock_it(void *m) { return pthread_mutex_trylock(m); }
static int past_timedlock(void *m)
{
	struct timespec t = from_now(CLOCK_REALTIME, -1000);

	return pthread_mutex_timedlock(m, &t);
}
static int bad_timedlock(void *m) { return pthread_mutex_timedlock(m, &bad_nsec); }
static int rdlock_it(void *l) { return pthread_rwlock_tryrdlock(l); }
static int wrlock_try(void *l) { return pthread_rwlock_trywrlock(l); }

/* ---- mutexes ---- */

static void mutex_of_kind(pthread_mutex_t *m, int kind, int protocol, int robust)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, kind);
	pthread_mutexattr_setprotocol(&attr, protocol);
	pthread_mutexattr_setrobust(&attr, robust);
	pthread_mutex_init(m, &attr);
	pthread_mutexattr_destroy(&attr);
}

static void mutex_checks(const char *label, int kind, int protocol)
{
	pthread_mutex_t m;
	char name[128];
	struct timespec past = from_now(CLOCK_REALTIME, -1000);
	struct timespec past_mono = from_now(CLOCK_MONOTONIC, -1000);

#define N(what) (snprintf(name, sizeof(name), "mutex %s %s", label, what), name)
	mutex_of_kind(&m, kind, protocol, PTHREAD_MUTEX_STALLED);
	expect_error(N("lock free"), pthread_mutex_lock(&m), 0);
	expect_error(N("trylock held by self"), pthread_mutex_trylock(&m),
		     kind == PTHREAD_MUTEX_RECURSIVE ? 0 : EBUSY);
	if (kind == PTHREAD_MUTEX_RECURSIVE)
		pthread_mutex_unlock(&m);
	if (kind == PTHREAD_MUTEX_ERRORCHECK || kind == PTHREAD_MUTEX_RECURSIVE) {
		expect_error(N("relock by self"), pthread_mutex_lock(&m), kind == PTHREAD_MUTEX_RECURSIVE ? 0 : EDEADLK);
		expect_error(N("timedlock by self, past"), pthread_mutex_timedlock(&m, &past),
			     kind == PTHREAD_MUTEX_RECURSIVE ? 0 : EDEADLK);
		if (kind == PTHREAD_MUTEX_RECURSIVE) {
			pthread_mutex_unlock(&m);
			pthread_mutex_unlock(&m);
		}
	}
	expect_error(N("trylock held by another"), in_other_thread(trylock_it, &m), EBUSY);
	expect_error(N("timedlock held by another, past"), in_other_thread(past_timedlock, &m), ETIMEDOUT);
	expect_error(N("timedlock held by another, tv_nsec 1e9"), in_other_thread(bad_timedlock, &m), EINVAL);
	if (kind == PTHREAD_MUTEX_ERRORCHECK || protocol == PTHREAD_PRIO_INHERIT)
		expect_error(N("unlock by a non-owner"), in_other_thread(unlock_it, &m), EPERM);
	expect_error(N("unlock"), pthread_mutex_unlock(&m), 0);
	if (kind == PTHREAD_MUTEX_ERRORCHECK || kind == PTHREAD_MUTEX_RECURSIVE)
		expect_error(N("unlock unlocked"), pthread_mutex_unlock(&m), EPERM);
	expect_error(N("trylock free"), pthread_mutex_trylock(&m), 0);
	expect_error(N("unlock after trylock"), pthread_mutex_unlock(&m), 0);
	expect_error(N("timedlock free, past"), pthread_mutex_timedlock(&m, &past), 0);
	pthread_mutex_unlock(&m);
	/* POSIX: the time need not be checked when the lock is free */
	expect_error(N("timedlock free, tv_nsec 1e9"), pthread_mutex_timedlock(&m, &bad_nsec), 0);
	pthread_mutex_unlock(&m);
	expect_error(N("timedlock free, tv_nsec -1"), pthread_mutex_timedlock(&m, &negative_nsec), 0);
	pthread_mutex_unlock(&m);
	expect_error(N("clocklock free, CLOCK_MONOTONIC past"), pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &past_mono), 0);
	pthread_mutex_unlock(&m);
	expect_error(N("clocklock free, CLOCK_PROCESS_CPUTIME_ID"),
		     pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &past_mono), EINVAL);
	pthread_mutex_unlock(&m);
	expect_error(N("clocklock free, clock 12345"), pthread_mutex_clocklock(&m, (clockid_t)12345, &past_mono), EINVAL);
	pthread_mutex_unlock(&m);
	in_other_thread(lock_it, &m); /* the other thread ends holding it: owner dead, not robust */
	expect_error(N("clocklock held, CLOCK_MONOTONIC past"), pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &past_mono),
		     ETIMEDOUT);
	expect_error(N("clocklock held, clock 12345"), pthread_mutex_clocklock(&m, (clockid_t)12345, &past_mono), EINVAL);
	expect_error(N("clocklock held, CLOCK_REALTIME tv_nsec -1"),
		     pthread_mutex_clocklock(&m, CLOCK_REALTIME, &negative_nsec), EINVAL);
#undef N
}

static void robust_checks(const char *label, int protocol)
{
	pthread_mutex_t m;
	char name[128];
	struct timespec future = from_now(CLOCK_REALTIME, 60000);
	struct timespec soon = from_now(CLOCK_REALTIME, 200);

#define N(what) (snprintf(name, sizeof(name), "robust mutex %s %s", label, what), name)
	mutex_of_kind(&m, PTHREAD_MUTEX_NORMAL, protocol, PTHREAD_MUTEX_ROBUST);
	in_other_thread(lock_and_die, &m);
	expect_error(N("lock, owner died"), pthread_mutex_lock(&m), EOWNERDEAD);
	expect_error(N("consistent"), pthread_mutex_consistent(&m), 0);
	expect_error(N("unlock"), pthread_mutex_unlock(&m), 0);
	expect_error(N("lock after recovery"), pthread_mutex_lock(&m), 0);
	pthread_mutex_unlock(&m);

	in_other_thread(lock_and_die, &m);
	expect_error(N("timedlock, owner died"), pthread_mutex_timedlock(&m, &future), EOWNERDEAD);
	expect_error(N("unlock without consistent"), pthread_mutex_unlock(&m), 0);
	expect_error(N("lock, not recoverable"), pthread_mutex_lock(&m), ENOTRECOVERABLE);
	expect_error(N("trylock, not recoverable"), pthread_mutex_trylock(&m), ENOTRECOVERABLE);
	/* glibc 2.36's trylock leaves a not-recoverable robust mutex's lock
	 * word taken, so this may wait: give it little time. */
	expect_error(N("timedlock, not recoverable"), pthread_mutex_timedlock(&m, &soon), ENOTRECOVERABLE);

	mutex_of_kind(&m, PTHREAD_MUTEX_ERRORCHECK, protocol, PTHREAD_MUTEX_ROBUST);
	in_other_thread(lock_and_die, &m);
	expect_error(N("trylock, owner died"), pthread_mutex_trylock(&m), EOWNERDEAD);
	pthread_mutex_consistent(&m);
	expect_error(N("relock by self after recovery"), pthread_mutex_lock(&m), EDEADLK);
	pthread_mutex_unlock(&m);
#undef N
}

/*
 * A default mutex locked, handed through a condvar wait, unlocked and
 * destroyed.  With lock elision on (GLIBC_TUNABLES=glibc.elision.enable=1
 * on a CPU with RTM) glibc turns it into an elided mutex at its first
 * lock, which leaves __nusers alone: a lock taken behind glibc's back
 * would leave a user counted and destroy would say EBUSY.  The kind and
 * the user count after the lock show whose lock it was.
 */
static void default_mutex_checks(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec past = from_now(CLOCK_REALTIME, -1000);

	expect_error("default mutex: lock", pthread_mutex_lock(&m), 0);
	note("default mutex: glibc elides it (elision flag in __kind)", "%ld", (m.__data.__kind & 256) != 0);
	note("default mutex: __nusers after lock", "%ld", m.__data.__nusers);
	expect_error("default mutex: cond timedwait past", pthread_cond_timedwait(&c, &m, &past), ETIMEDOUT);
	expect_error("default mutex: unlock", pthread_mutex_unlock(&m), 0);
	note("default mutex: __nusers after unlock", "%ld", m.__data.__nusers);
	expect_error("default mutex: destroy", pthread_mutex_destroy(&m), 0);
	pthread_cond_destroy(&c);
}

/* ---- rwlocks ---- */

static void rwlock_checks(const char *label, int kind)
{
	pthread_rwlockattr_t attr;
	pthread_rwlock_t l;
	char name[128];
	struct timespec past = from_now(CLOCK_REALTIME, -1000);
	struct timespec past_mono = from_now(CLOCK_MONOTONIC, -1000);

#define N(what) (snprintf(name, sizeof(name), "rwlock %s %s", label, what), name)
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, kind);
	pthread_rwlock_init(&l, &attr);
	expect_error(N("rdlock"), pthread_rwlock_rdlock(&l), 0);
	expect_error(N("rdlock again"), pthread_rwlock_rdlock(&l), 0);
	expect_error(N("trywrlock while read-held"), in_other_thread(wrlock_try, &l), EBUSY);
	expect_error(N("wrlock while read-held by self"), pthread_rwlock_timedwrlock(&l, &past), ETIMEDOUT);
	expect_error(N("timedwrlock tv_nsec 1e9, read-held"), pthread_rwlock_timedwrlock(&l, &bad_nsec), EINVAL);
	expect_error(N("clockwrlock clock 12345, read-held"), pthread_rwlock_clockwrlock(&l, 12345, &past_mono), EINVAL);
	expect_error(N("clockwrlock CLOCK_MONOTONIC past, read-held"),
		     pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &past_mono), ETIMEDOUT);
	pthread_rwlock_unlock(&l);
	pthread_rwlock_unlock(&l);
	expect_error(N("wrlock"), pthread_rwlock_wrlock(&l), 0);
	expect_error(N("wrlock again by self"), pthread_rwlock_wrlock(&l), EDEADLK);
	expect_error(N("rdlock by the writer"), pthread_rwlock_rdlock(&l), EDEADLK);
	expect_error(N("timedrdlock by the writer, past"), pthread_rwlock_timedrdlock(&l, &past), EDEADLK);
	expect_error(N("tryrdlock while write-held"), in_other_thread(rdlock_it, &l), EBUSY);
	expect_error(N("timedrdlock tv_nsec -1, write-held"), pthread_rwlock_timedrdlock(&l, &negative_nsec), EINVAL);
	expect_error(N("clockrdlock CLOCK_PROCESS_CPUTIME_ID, write-held"),
		     pthread_rwlock_clockrdlock(&l, CLOCK_PROCESS_CPUTIME_ID, &past_mono), EINVAL);
	expect_error(N("unlock"), pthread_rwlock_unlock(&l), 0);
	expect_error(N("timedrdlock free, tv_nsec 1e9"), pthread_rwlock_timedrdlock(&l, &bad_nsec), EINVAL);
	expect_error(N("timedwrlock free, past"), pthread_rwlock_timedwrlock(&l, &past), 0);
	pthread_rwlock_unlock(&l);
	expect_error(N("clockrdlock free, clock 12345"), pthread_rwlock_clockrdlock(&l, 12345, &past_mono), EINVAL);
	/* The tries, interposed since issue 14: free, held by self, held by
	 * another, each answered as glibc answers. */
	expect_error(N("tryrdlock free"), pthread_rwlock_tryrdlock(&l), 0);
	expect_error(N("tryrdlock again"), pthread_rwlock_tryrdlock(&l), 0);
	expect_error(N("trywrlock while read-held by self"), pthread_rwlock_trywrlock(&l), EBUSY);
	expect_error(N("tryrdlock while read-held by self, another thread"), in_other_thread(rdlock_it, &l), 0);
	pthread_rwlock_unlock(&l);
	pthread_rwlock_unlock(&l);
	pthread_rwlock_unlock(&l);
	expect_error(N("trywrlock free"), pthread_rwlock_trywrlock(&l), 0);
	expect_error(N("trywrlock by the writer"), pthread_rwlock_trywrlock(&l), EBUSY);
	expect_error(N("tryrdlock by the writer"), pthread_rwlock_tryrdlock(&l), EBUSY);
	expect_error(N("unlock after trywrlock"), pthread_rwlock_unlock(&l), 0);
	expect_error(N("trywrlock free again"), pthread_rwlock_trywrlock(&l), 0);
	expect_error(N("unlock after trywrlock again"), pthread_rwlock_unlock(&l), 0);
	pthread_rwlock_destroy(&l);
	pthread_rwlockattr_destroy(&attr);
#undef N
}

/*
 * The lock words themselves after the write tries and releases the shim
 * makes inline (glibc's protocol on __readers, the two futex words and
 * __cur_writer): the same line bare and preloaded, or the shim left the
 * lock in a state glibc would not have; and a write release that must
 * hand over to a reader or a writer asleep on the lock wakes it.
 */
#define CMM_LOAD(x) (*(volatile __typeof__(x) *)&(x))
static void rwlock_state(const char *label, const char *what, pthread_rwlock_t *l)
{
	int writer = CMM_LOAD(l->__data.__cur_writer);

	printf("rwlock %s %s: readers %#x writers %u wrphase_futex %#x writers_futex %#x cur_writer %s\n", label, what,
	       CMM_LOAD(l->__data.__readers), CMM_LOAD(l->__data.__writers), CMM_LOAD(l->__data.__wrphase_futex),
	       CMM_LOAD(l->__data.__writers_futex), writer == 0 ? "0" : writer == gettid() ? "self" : "other");
}

static void *read_then_release(void *l)
{
	intptr_t error = pthread_rwlock_rdlock(l);

	if (error == 0)
		error = pthread_rwlock_unlock(l);
	return (void *)error;
}

static void *write_then_release(void *l)
{
	intptr_t error = pthread_rwlock_wrlock(l);

	if (error == 0)
		error = pthread_rwlock_unlock(l);
	return (void *)error;
}

/* Until `word` has `bits` (the other thread is about to sleep), then a
 * little longer (it sleeps); at most 10 s. */
static void until_bits(unsigned int *word, unsigned int bits)
{
	for (int i = 0; i < 10000 && (CMM_LOAD(*word) & bits) != bits; i++)
		usleep(1000);
	usleep(20000);
}

#define N2(what) (snprintf(name, sizeof(name), "rwlock %s %s", label, what), name)
static void rwlock_write_states(const char *label, int kind)
{
	pthread_rwlockattr_t attr;
	pthread_rwlock_t l;
	pthread_t t;
	void *result;
	char name[128];

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, kind);
	pthread_rwlock_init(&l, &attr);
	expect_error(N2("trywrlock idle"), pthread_rwlock_trywrlock(&l), 0);
	rwlock_state(label, "write-held from a read phase", &l);
	expect_error(N2("unlock"), pthread_rwlock_unlock(&l), 0);
	rwlock_state(label, "released", &l);
	expect_error(N2("trywrlock in a write phase"), pthread_rwlock_trywrlock(&l), 0);
	rwlock_state(label, "write-held from a write phase", &l);
	expect_error(N2("unlock again"), pthread_rwlock_unlock(&l), 0);
	expect_error(N2("rdlock"), pthread_rwlock_rdlock(&l), 0);
	rwlock_state(label, "read-held", &l);
	expect_error(N2("trywrlock read-held"), pthread_rwlock_trywrlock(&l), EBUSY);
	expect_error(N2("read unlock"), pthread_rwlock_unlock(&l), 0);
	rwlock_state(label, "read-released", &l);

	/* A reader asleep behind the writer: the release hands it the lock. */
	expect_error(N2("trywrlock, a reader coming"), pthread_rwlock_trywrlock(&l), 0);
	pthread_create(&t, NULL, read_then_release, &l);
	until_bits(&l.__data.__wrphase_futex, 0x80000000u);
	expect_error(N2("unlock with a reader asleep"), pthread_rwlock_unlock(&l), 0);
	pthread_join(t, &result);
	expect_error(N2("the reader's rdlock and unlock"), (int)(intptr_t)result, 0);
	rwlock_state(label, "after the reader", &l);

	/* A writer asleep behind the writer: the release wakes it. */
	expect_error(N2("trywrlock, a writer coming"), pthread_rwlock_trywrlock(&l), 0);
	pthread_create(&t, NULL, write_then_release, &l);
	until_bits(&l.__data.__writers_futex, 2u);
	expect_error(N2("unlock with a writer asleep"), pthread_rwlock_unlock(&l), 0);
	pthread_join(t, &result);
	expect_error(N2("the writer's wrlock and unlock"), (int)(intptr_t)result, 0);
	rwlock_state(label, "after the writer", &l);
	pthread_rwlock_destroy(&l);
	pthread_rwlockattr_destroy(&attr);
}

/* ---- condvars ---- */

struct cond_pair {
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	int waiting, go;
};
static int cond_waiter(void *argument)
{
	struct cond_pair *p = argument;
	int r = 0;

	pthread_mutex_lock(&p->mutex);
	p->waiting++;
	while (!p->go && r == 0)
		r = pthread_cond_wait(&p->cond, &p->mutex);
	pthread_mutex_unlock(&p->mutex);
	return r;
}
static void *cond_waiter_thread(void *argument)
{
	return (void *)(long)cond_waiter(argument);
}

static void cond_checks(void)
{
	struct cond_pair p = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
	pthread_condattr_t attr;
	pthread_cond_t monotonic;
	pthread_mutex_t errorcheck;
	struct timespec past = from_now(CLOCK_REALTIME, -1000);
	struct timespec past_mono = from_now(CLOCK_MONOTONIC, -1000);
	struct timespec soon = from_now(CLOCK_REALTIME, 20);
	pthread_t waiters[4];
	long sum = 0;

	pthread_mutex_lock(&p.mutex);
	expect_error("cond timedwait past", pthread_cond_timedwait(&p.cond, &p.mutex, &past), ETIMEDOUT);
	expect_error("cond mutex held after timeout (trylock from another thread)", in_other_thread(trylock_it, &p.mutex), EBUSY);
	expect_error("cond timedwait 20 ms", pthread_cond_timedwait(&p.cond, &p.mutex, &soon), ETIMEDOUT);
	expect_error("cond timedwait tv_nsec 1e9", pthread_cond_timedwait(&p.cond, &p.mutex, &bad_nsec), EINVAL);
	expect_error("cond timedwait tv_nsec -1", pthread_cond_timedwait(&p.cond, &p.mutex, &negative_nsec), EINVAL);
	expect_error("cond clockwait CLOCK_MONOTONIC past", pthread_cond_clockwait(&p.cond, &p.mutex, CLOCK_MONOTONIC, &past_mono),
		     ETIMEDOUT);
	expect_error("cond clockwait clock 12345", pthread_cond_clockwait(&p.cond, &p.mutex, 12345, &past_mono), EINVAL);
	expect_error("cond clockwait CLOCK_PROCESS_CPUTIME_ID",
		     pthread_cond_clockwait(&p.cond, &p.mutex, CLOCK_PROCESS_CPUTIME_ID, &past_mono), EINVAL);
	pthread_mutex_unlock(&p.mutex);

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&monotonic, &attr);
	pthread_mutex_lock(&p.mutex);
	expect_error("cond (CLOCK_MONOTONIC) timedwait past", pthread_cond_timedwait(&monotonic, &p.mutex, &past_mono),
		     ETIMEDOUT);
	pthread_mutex_unlock(&p.mutex);

	mutex_of_kind(&errorcheck, PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED);
	expect_error("cond timedwait, errorcheck mutex not held", pthread_cond_timedwait(&p.cond, &errorcheck, &past),
		     EPERM);

	for (int i = 0; i < 4; i++)
		pthread_create(&waiters[i], NULL, cond_waiter_thread, &p);
	for (;;) {
		int waiting;

		pthread_mutex_lock(&p.mutex);
		waiting = p.waiting;
		pthread_mutex_unlock(&p.mutex);
		if (waiting == 4)
			break;
		usleep(1000);
	}
	pthread_mutex_lock(&p.mutex);
	p.go = 1;
	expect_error("cond broadcast", pthread_cond_broadcast(&p.cond), 0);
	pthread_mutex_unlock(&p.mutex);
	for (int i = 0; i < 4; i++) {
		void *value;

		pthread_join(waiters[i], &value);
		sum += (long)value;
	}
	note("cond broadcast: waiters' results summed", "%ld", sum);
}

/* ---- barriers ---- */

static pthread_barrier_t barrier;
static void *barrier_thread(void *argument)
{
	long serial = 0;

	for (int round = 0; round < 5; round++) {
		int r = pthread_barrier_wait(&barrier);

		if (r == PTHREAD_BARRIER_SERIAL_THREAD)
			serial++;
		else if (r != 0)
			return (void *)-1000L;
	}
	return (void *)serial;
}

static void barrier_checks(void)
{
	pthread_barrier_t b;
	pthread_t threads[4];
	long serial = 0;

	expect_error("barrier init count 0", pthread_barrier_init(&b, NULL, 0), EINVAL);
	pthread_barrier_init(&b, NULL, 1);
	expect_error("barrier of 1: wait returns serial", pthread_barrier_wait(&b) == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : 1, 0);
	pthread_barrier_destroy(&b);
	pthread_barrier_init(&barrier, NULL, 4);
	for (int i = 0; i < 4; i++)
		pthread_create(&threads[i], NULL, barrier_thread, NULL);
	for (int i = 0; i < 4; i++) {
		void *value;

		pthread_join(threads[i], &value);
		serial += (long)value;
	}
	note("barrier of 4, 5 rounds: serial-thread returns", "%ld", serial);
	pthread_barrier_destroy(&barrier);
}

/* ---- joins ---- */

static int pipe_for_join[2];
static void *quick(void *argument) { return argument; }
static void *exits(void *argument) { pthread_exit((void *)(long)argument + 1); }
static void *waits_on_pipe(void *argument)
{
	char byte;

	if (read(pipe_for_join[0], &byte, 1) != 1)
		return NULL;
	return argument;
}
static void *cancelled(void *argument)
{
	for (;;)
		pause();
	return argument;
}

static void join_checks(void)
{
	struct timespec past = from_now(CLOCK_REALTIME, -1000);
	struct timespec past_mono = from_now(CLOCK_MONOTONIC, -1000);
	pthread_attr_t detached;
	pthread_t t;
	void *value = NULL;

	expect_error("join self", pthread_join(pthread_self(), &value), EDEADLK);
	pthread_create(&t, NULL, quick, (void *)42);
	expect_error("join", pthread_join(t, &value), 0);
	note("join value", "%ld", (long)value);
	pthread_create(&t, NULL, exits, (void *)42);
	pthread_join(t, &value);
	note("join value of pthread_exit", "%ld", (long)value);
	pthread_create(&t, NULL, cancelled, NULL);
	pthread_cancel(t);
	pthread_join(t, &value);
	note("join of a cancelled thread gives PTHREAD_CANCELED", "%ld", value == PTHREAD_CANCELED);

	if (pipe(pipe_for_join))
		abort();
	pthread_create(&t, NULL, waits_on_pipe, (void *)7);
	expect_error("tryjoin running", pthread_tryjoin_np(t, &value), EBUSY);
	expect_error("timedjoin running, past", pthread_timedjoin_np(t, &value, &past), ETIMEDOUT);
	/* Not asked: glibc 2.36's timedjoin of a running thread with tv_nsec
	 * out of range spins until the thread ends (the futex's EINVAL is
	 * retried). */
	expect_error("clockjoin running, clock 12345", pthread_clockjoin_np(t, &value, 12345, &past_mono), EINVAL);
	expect_error("clockjoin running, CLOCK_MONOTONIC past", pthread_clockjoin_np(t, &value, CLOCK_MONOTONIC, &past_mono),
		     ETIMEDOUT);
	if (write(pipe_for_join[1], "x", 1) != 1)
		abort();
	expect_error("timedjoin, ends in time", pthread_timedjoin_np(t, &value, &(struct timespec){ past.tv_sec + 120, 0 }), 0);
	note("timedjoin value", "%ld", (long)value);

	pthread_attr_init(&detached);
	pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
	pthread_create(&t, &detached, waits_on_pipe, NULL);
	expect_error("join detached", pthread_join(t, &value), EINVAL);
	expect_error("tryjoin detached", pthread_tryjoin_np(t, &value), EINVAL);
	if (write(pipe_for_join[1], "x", 1) != 1)
		abort();
	pthread_attr_destroy(&detached);

	pthread_create(&t, NULL, quick, (void *)5);
	usleep(20000);
	expect_error("timedjoin finished, tv_nsec 1e9", pthread_timedjoin_np(t, &value, &bad_nsec), 0);
}

/* ---- semaphores ---- */

static void sem_checks(void)
{
	struct timespec past = from_now(CLOCK_REALTIME, -1000);
	struct timespec past_mono = from_now(CLOCK_MONOTONIC, -1000);
	sem_t s;
	int value = -1;

	sem_init(&s, 0, 0);
	EXPECT_ERRNO("sem trywait 0", sem_trywait(&s), -1, EAGAIN);
	EXPECT_ERRNO("sem timedwait 0, past", sem_timedwait(&s, &past), -1, ETIMEDOUT);
	EXPECT_ERRNO("sem timedwait 0, tv_nsec 1e9", sem_timedwait(&s, &bad_nsec), -1, EINVAL);
	EXPECT_ERRNO("sem clockwait 0, clock 12345", sem_clockwait(&s, 12345, &past_mono), -1, EINVAL);
	EXPECT_ERRNO("sem clockwait 0, CLOCK_MONOTONIC past", sem_clockwait(&s, CLOCK_MONOTONIC, &past_mono), -1, ETIMEDOUT);
	sem_post(&s);
	sem_post(&s);
	EXPECT_ERRNO("sem trywait 2", sem_trywait(&s), 0, 0);
	sem_post(&s);
	EXPECT_ERRNO("sem wait 2", sem_wait(&s), 0, 0);
	EXPECT_ERRNO("sem timedwait 1, tv_nsec 1e9", sem_timedwait(&s, &bad_nsec), -1, EINVAL);
	EXPECT_ERRNO("sem timedwait 1, past", sem_timedwait(&s, &past), 0, 0);
	sem_post(&s);
	EXPECT_ERRNO("sem clockwait 1, clock 12345", sem_clockwait(&s, 12345, &past_mono), -1, EINVAL);
	EXPECT_ERRNO("sem clockwait 1, CLOCK_MONOTONIC past", sem_clockwait(&s, CLOCK_MONOTONIC, &past_mono), 0, 0);
	sem_getvalue(&s, &value);
	note("sem value after", "%ld", value);
	sem_destroy(&s);
	sem_init(&s, 0, SEM_VALUE_MAX);
	EXPECT_ERRNO("sem post at SEM_VALUE_MAX", sem_post(&s), -1, EOVERFLOW);
	EXPECT_ERRNO("sem wait at SEM_VALUE_MAX", sem_wait(&s), 0, 0);
	sem_destroy(&s);
}

/* ---- sleeps ---- */

static void sleep_checks(void)
{
	struct timespec left = { 99, 99 };
	struct timespec zero = { 0, 0 }, tiny = { 0, 1000 };
	struct timespec past_mono = from_now(CLOCK_MONOTONIC, -1000);

	EXPECT_ERRNO("sleep 0", sleep(0), 0, 0);
	EXPECT_ERRNO("usleep 0", usleep(0), 0, 0);
	EXPECT_ERRNO("usleep 1000", usleep(1000), 0, 0);
	EXPECT_ERRNO("nanosleep 0", nanosleep(&zero, &left), 0, 0);
	EXPECT_ERRNO("nanosleep 1 us", nanosleep(&tiny, NULL), 0, 0);
	EXPECT_ERRNO("nanosleep tv_nsec 1e9", nanosleep(&bad_nsec, &left), -1, EINVAL);
	EXPECT_ERRNO("nanosleep tv_nsec -1", nanosleep(&negative_nsec, &left), -1, EINVAL);
	EXPECT_ERRNO("nanosleep tv_sec -1", nanosleep(&(struct timespec){ -1, 0 }, &left), -1, EINVAL);
	expect_error("clock_nanosleep 0", clock_nanosleep(CLOCK_MONOTONIC, 0, &zero, NULL), 0);
	expect_error("clock_nanosleep absolute past", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past_mono, NULL), 0);
	expect_error("clock_nanosleep CLOCK_REALTIME 1 us", clock_nanosleep(CLOCK_REALTIME, 0, &tiny, NULL), 0);
	expect_error("clock_nanosleep clock 12345", clock_nanosleep(12345, 0, &tiny, NULL), EINVAL);
	expect_error("clock_nanosleep CLOCK_THREAD_CPUTIME_ID", clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &tiny, NULL),
		     EINVAL);
	expect_error("clock_nanosleep tv_nsec 1e9", clock_nanosleep(CLOCK_MONOTONIC, 0, &bad_nsec, NULL), EINVAL);
	expect_error("clock_nanosleep bad flags", clock_nanosleep(CLOCK_MONOTONIC, 0x100, &zero, NULL), 0);
}

/* ---- poll, select, epoll ---- */

/* low_us < *tv < high_us */
static long timeval_between(const struct timeval *tv, long low_us, long high_us)
{
	long us = tv->tv_sec * 1000000L + tv->tv_usec;

	return us > low_us && us < high_us;
}

static void poll_checks(void)
{
	int ready[2], empty[2], closed, stale;
	struct pollfd p[3];
	struct timespec zero = { 0, 0 };
	struct timeval tv;
	struct rlimit limit;
	fd_set set;
	struct epoll_event events[4];
	int epoll, r;

	if (pipe(ready) || pipe(empty))
		abort();
	if (write(ready[1], "x", 1) != 1)
		abort();
	closed = CLOSED_FD;

	p[0] = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	p[1] = (struct pollfd){ .fd = empty[0], .events = POLLIN };
	p[2] = (struct pollfd){ .fd = closed, .events = POLLIN };
	EXPECT_ERRNO("poll ready+empty+closed, timeout 0", poll(p, 3, 0), 2, 0);
	note("poll revents", "%ld", p[0].revents * 10000L + p[1].revents * 100L + p[2].revents);
	EXPECT_ERRNO("poll empty, timeout 0", poll(&p[1], 1, 0), 0, 0);
	EXPECT_ERRNO("poll empty, timeout 10 ms", poll(&p[1], 1, 10), 0, 0);
	EXPECT_ERRNO("poll no fds, timeout 5 ms", poll(NULL, 0, 5), 0, 0);
	EXPECT_ERRNO("poll ready, timeout -1", poll(p, 1, -1), 1, 0);
	getrlimit(RLIMIT_NOFILE, &limit);
	EXPECT_ERRNO("poll nfds > RLIMIT_NOFILE", poll(p, (nfds_t)limit.rlim_cur + 1, 0), -1, EINVAL);
	EXPECT_ERRNO("poll fds NULL", poll(null_fds, 1, 0), -1, EFAULT);
	EXPECT_ERRNO("ppoll empty, zero timeout", ppoll(&p[1], 1, &zero, NULL), 0, 0);
	EXPECT_ERRNO("ppoll ready, NULL timeout", ppoll(p, 1, NULL, NULL), 1, 0);
	EXPECT_ERRNO("ppoll tv_nsec 1e9", ppoll(&p[1], 1, &bad_nsec, NULL), -1, EINVAL);
	EXPECT_ERRNO("ppoll tv_sec -1", ppoll(&p[1], 1, &(struct timespec){ -1, 0 }, NULL), -1, EINVAL);

	FD_ZERO(&set);
	FD_SET(ready[0], &set);
	FD_SET(empty[0], &set);
	tv = (struct timeval){ 0, 0 };
	EXPECT_ERRNO("select ready+empty, zero timeout", select(empty[0] + 1, &set, NULL, NULL, &tv), 1, 0);
	note("select left the ready fd set", "%ld", FD_ISSET(ready[0], &set) && !FD_ISSET(empty[0], &set));
	FD_ZERO(&set);
	FD_SET(empty[0], &set);
	tv = (struct timeval){ 0, 10000 };
	EXPECT_ERRNO("select empty, 10 ms", select(empty[0] + 1, &set, NULL, NULL, &tv), 0, 0);
	note("select timeout left", "%ld", tv.tv_sec * 1000000L + tv.tv_usec);
	note("select cleared the set", "%ld", !FD_ISSET(empty[0], &set));
	/* Linux writes the time left back, also when the call returns at once
	 * or fails: a little under the 5 s given (the exact value varies). */
	FD_ZERO(&set);
	FD_SET(ready[0], &set);
	tv = (struct timeval){ 5, 0 };
	EXPECT_ERRNO("select ready, 5 s", select(ready[0] + 1, &set, NULL, NULL, &tv), 1, 0);
	note("select ready at once: 4.9 s < time left < 5 s", "%ld", timeval_between(&tv, 4900000, 5000000));
	/* a closed fd below the fd table's size (select ignores those above) */
	stale = dup(ready[0]);
	close(stale);
	FD_ZERO(&set);
	FD_SET(stale, &set);
	tv = (struct timeval){ 5, 0 };
	EXPECT_ERRNO("select closed fd, 5 s", select(stale + 1, &set, NULL, NULL, &tv), -1, EBADF);
	note("select closed fd: 4.9 s < time left < 5 s", "%ld", timeval_between(&tv, 4900000, 5000000));
	FD_ZERO(&set);
	FD_SET(closed, &set);
	tv = (struct timeval){ 0, 0 };
	EXPECT_ERRNO("select closed fd", select(closed + 1, &set, NULL, NULL, &tv), -1, EBADF);
	EXPECT_ERRNO("select nfds -1", select(-1, NULL, NULL, NULL, &tv), -1, EINVAL);
	tv = (struct timeval){ 0, -1 };
	EXPECT_ERRNO("select tv_usec -1", select(0, NULL, NULL, NULL, &tv), -1, EINVAL);
	tv = (struct timeval){ -1, 0 };
	EXPECT_ERRNO("select tv_sec -1", select(0, NULL, NULL, NULL, &tv), -1, EINVAL);
	tv = (struct timeval){ 0, 1000 };
	EXPECT_ERRNO("select nothing, 1 ms", select(0, NULL, NULL, NULL, &tv), 0, 0);
	EXPECT_ERRNO("pselect nothing, zero", pselect(0, NULL, NULL, NULL, &zero, NULL), 0, 0);
	EXPECT_ERRNO("pselect tv_nsec 1e9", pselect(0, NULL, NULL, NULL, &bad_nsec, NULL), -1, EINVAL);

	epoll = epoll_create1(EPOLL_CLOEXEC);
	EXPECT_ERRNO("epoll_wait empty set, timeout 0", epoll_wait(epoll, events, 4, 0), 0, 0);
	EXPECT_ERRNO("epoll_wait empty set, 5 ms", epoll_wait(epoll, events, 4, 5), 0, 0);
	epoll_ctl(epoll, EPOLL_CTL_ADD, empty[0], &(struct epoll_event){ .events = EPOLLIN, .data.u32 = 2 });
	EXPECT_ERRNO("epoll_wait not ready, timeout 0", epoll_wait(epoll, events, 4, 0), 0, 0);
	epoll_ctl(epoll, EPOLL_CTL_ADD, ready[0], &(struct epoll_event){ .events = EPOLLIN, .data.u32 = 1 });
	r = epoll_wait(epoll, events, 4, -1);
	expect_errno("epoll_wait ready, timeout -1", r, errno, 1, 0);
	note("epoll_wait event data", "%ld", r == 1 ? (long)events[0].data.u32 : -1L);
	EXPECT_ERRNO("epoll_wait maxevents 0", epoll_wait(epoll, events, 0, 0), -1, EINVAL);
	EXPECT_ERRNO("epoll_wait bad epfd", epoll_wait(closed, events, 4, 0), -1, EBADF);
	EXPECT_ERRNO("epoll_wait not an epoll fd", epoll_wait(ready[0], events, 4, 0), -1, EINVAL);
	EXPECT_ERRNO("epoll_pwait ready", epoll_pwait(epoll, events, 4, 0, NULL), 1, 0);
	EXPECT_ERRNO("epoll_pwait2 ready, zero", epoll_pwait2(epoll, events, 4, &zero, NULL), 1, 0);
	EXPECT_ERRNO("epoll_pwait2 tv_nsec 1e9", epoll_pwait2(epoll, events, 4, &bad_nsec, NULL), -1, EINVAL);
	EXPECT_ERRNO("epoll_pwait2 maxevents 0", epoll_pwait2(epoll, events, 0, &zero, NULL), -1, EINVAL);
	close(epoll);
	close(ready[0]);
	close(ready[1]);
	close(empty[0]);
	close(empty[1]);
}

/* ---- signal waits ---- */

static volatile sig_atomic_t handled;
static void on_usr1(int number) { handled = number; }

static void signal_checks(void)
{
	sigset_t usr1, old, none;
	struct timespec zero = { 0, 0 }, small = { 0, 2000000 };
	siginfo_t info;
	int number = 0;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigemptyset(&none);
	signal(SIGUSR1, on_usr1);
	pthread_sigmask(SIG_BLOCK, &usr1, &old);
	EXPECT_ERRNO("sigtimedwait nothing pending, zero", sigtimedwait(&usr1, &info, &zero), -1, EAGAIN);
	EXPECT_ERRNO("sigtimedwait nothing pending, 2 ms", sigtimedwait(&usr1, &info, &small), -1, EAGAIN);
	EXPECT_ERRNO("sigtimedwait tv_nsec 1e9", sigtimedwait(&usr1, &info, &bad_nsec), -1, EINVAL);
	raise(SIGUSR1);
	EXPECT_ERRNO("sigtimedwait pending", sigtimedwait(&usr1, &info, &zero), SIGUSR1, 0);
	note("sigtimedwait si_code is SI_TKILL", "%ld", info.si_code == SI_TKILL);
	raise(SIGUSR1);
	expect_error("sigwait pending", sigwait(&usr1, &number), 0);
	note("sigwait signal", "%ld", number);
	raise(SIGUSR1);
	EXPECT_ERRNO("sigwaitinfo pending", sigwaitinfo(&usr1, &info), SIGUSR1, 0);
	raise(SIGUSR1);
	handled = 0;
	EXPECT_ERRNO("sigsuspend, pending unblocked by the mask", sigsuspend(&none), -1, EINTR);
	note("sigsuspend ran the handler", "%ld", handled);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	signal(SIGUSR1, SIG_DFL);
}

/* ---- wait* ---- */

static void wait_checks(void)
{
	int status = -1, fds[2];
	siginfo_t info;
	pid_t child;

	EXPECT_ERRNO("waitpid -1 WNOHANG, no child", waitpid(-1, &status, WNOHANG), -1, ECHILD);
	EXPECT_ERRNO("waitpid -1, no child", waitpid(-1, &status, 0), -1, ECHILD);
	EXPECT_ERRNO("wait, no child", wait(&status), -1, ECHILD);
	EXPECT_ERRNO("wait3 WNOHANG, no child", wait3(&status, WNOHANG, NULL), -1, ECHILD);
	EXPECT_ERRNO("wait4 -1, no child", wait4(-1, &status, 0, NULL), -1, ECHILD);
	EXPECT_ERRNO("waitid P_ALL WNOHANG, no child", waitid(P_ALL, 0, &info, WEXITED | WNOHANG), -1, ECHILD);
	EXPECT_ERRNO("waitid no WEXITED/WSTOPPED/WCONTINUED", waitid(P_ALL, 0, &info, WNOHANG), -1, EINVAL);
	EXPECT_ERRNO("waitid bad idtype", waitid((idtype_t)99, 0, &info, WEXITED), -1, EINVAL);
	EXPECT_ERRNO("waitpid bad options", waitpid(-1, &status, 0x40000000), -1, EINVAL);

	if (pipe(fds))
		abort();
	child = fork();
	if (child == 0) {
		char byte;

		close(fds[1]);
		if (read(fds[0], &byte, 1) < 0)
			_exit(1);
		_exit(5);
	}
	close(fds[0]);
	EXPECT_ERRNO("waitpid WNOHANG, child running", waitpid(child, &status, WNOHANG), 0, 0);
	memset(&info, 0, sizeof(info));
	EXPECT_ERRNO("waitid WNOHANG, child running", waitid(P_PID, (id_t)child, &info, WEXITED | WNOHANG), 0, 0);
	note("waitid WNOHANG left si_pid 0", "%ld", info.si_pid);
	EXPECT_ERRNO("wait4 WNOHANG, child running", wait4(child, &status, WNOHANG, NULL), 0, 0);
	close(fds[1]);
	memset(&info, 0, sizeof(info));
	EXPECT_ERRNO("waitid WNOWAIT, child exits", waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT), 0, 0);
	note("waitid si_status", "%ld", info.si_status);
	EXPECT_ERRNO("waitpid, child exited", waitpid(child, &status, 0) == child, 1, 0);
	note("waitpid status", "%ld", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	EXPECT_ERRNO("waitpid again", waitpid(child, &status, 0), -1, ECHILD);

	child = fork();
	if (child == 0)
		_exit(9);
	status = -1;
	EXPECT_ERRNO("wait3, one child", wait3(&status, 0, NULL) == child, 1, 0);
	note("wait3 status", "%ld", WEXITSTATUS(status));
	child = fork();
	if (child == 0)
		_exit(11);
	EXPECT_ERRNO("wait, one child", wait(&status) == child, 1, 0);
	note("wait status", "%ld", WEXITSTATUS(status));
}

/* ---- sockets and reads ---- */

static void socket_checks(void)
{
	struct sockaddr_un address = { .sun_family = AF_UNIX };
	int listener, client, accepted, pair[2], fds[2], closed;
	char buffer[16];
	struct iovec v = { buffer, sizeof(buffer) };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };

	snprintf(address.sun_path + 1, sizeof(address.sun_path) - 1, "conformance.%d", (int)getpid());
	listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	bind(listener, (struct sockaddr *)&address, sizeof(address));
	EXPECT_ERRNO("accept, not listening", accept(listener, NULL, NULL), -1, EINVAL);
	listen(listener, 4);
	EXPECT_ERRNO("accept nonblocking, none pending", accept(listener, NULL, NULL), -1, EAGAIN);
	EXPECT_ERRNO("accept4 nonblocking, none pending", accept4(listener, NULL, NULL, SOCK_CLOEXEC), -1, EAGAIN);
	EXPECT_ERRNO("accept4 bad flags", accept4(listener, NULL, NULL, 0x1234), -1, EINVAL);
	EXPECT_ERRNO("accept on a pipe", accept(0 > 1 ? 0 : (pipe(fds), fds[0]), NULL, NULL), -1, ENOTSOCK);
	closed = CLOSED_FD;
	EXPECT_ERRNO("accept bad fd", accept(closed, NULL, NULL), -1, EBADF);
	client = socket(AF_UNIX, SOCK_STREAM, 0);
	connect(client, (struct sockaddr *)&address, sizeof(address));
	accepted = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	note("accept4, one pending", "%ld", accepted >= 0);
	note("accept4 gave FD_CLOEXEC", "%ld", accepted >= 0 && (fcntl(accepted, F_GETFD) & FD_CLOEXEC) != 0);
	close(accepted);
	close(client);
	close(listener);

	socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
	EXPECT_ERRNO("recv MSG_DONTWAIT, empty", recv(pair[0], buffer, sizeof(buffer), MSG_DONTWAIT), -1, EAGAIN);
	EXPECT_ERRNO("recvfrom MSG_DONTWAIT, empty", recvfrom(pair[0], buffer, sizeof(buffer), MSG_DONTWAIT, NULL, NULL),
		     -1, EAGAIN);
	EXPECT_ERRNO("recvmsg MSG_DONTWAIT, empty", recvmsg(pair[0], &m, MSG_DONTWAIT), -1, EAGAIN);
	if (write(pair[1], "hello", 5) != 5)
		abort();
	EXPECT_ERRNO("recv MSG_PEEK", recv(pair[0], buffer, 3, MSG_PEEK), 3, 0);
	EXPECT_ERRNO("recv MSG_PEEK again", recv(pair[0], buffer, sizeof(buffer), MSG_PEEK), 5, 0);
	EXPECT_ERRNO("recv MSG_WAITALL, all there", recv(pair[0], buffer, 5, MSG_WAITALL), 5, 0);
	note("recv data", "%ld", !memcmp(buffer, "hello", 5));
	if (write(pair[1], "ab", 2) != 2)
		abort();
	EXPECT_ERRNO("recv MSG_WAITALL|MSG_DONTWAIT, partial", recv(pair[0], buffer, 8, MSG_WAITALL | MSG_DONTWAIT), 2, 0);
	EXPECT_ERRNO("recv on a pipe", recv(fds[0], buffer, 1, MSG_DONTWAIT), -1, ENOTSOCK);
	EXPECT_ERRNO("recv bad fd", recv(closed, buffer, 1, 0), -1, EBADF);
	shutdown(pair[1], SHUT_WR);
	EXPECT_ERRNO("recv after the peer's shutdown", recv(pair[0], buffer, sizeof(buffer), 0), 0, 0);
	EXPECT_ERRNO("recvmsg after the peer's shutdown", recvmsg(pair[0], &m, 0), 0, 0);
	close(pair[0]);
	close(pair[1]);

	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	EXPECT_ERRNO("read nonblocking pipe, empty", read(fds[0], buffer, sizeof(buffer)), -1, EAGAIN);
	EXPECT_ERRNO("readv nonblocking pipe, empty", readv(fds[0], &v, 1), -1, EAGAIN);
	if (write(fds[1], "xyz", 3) != 3)
		abort();
	EXPECT_ERRNO("read pipe with data", read(fds[0], buffer, 2), 2, 0);
	EXPECT_ERRNO("readv pipe with data", readv(fds[0], &v, 1), 1, 0);
	close(fds[1]);
	EXPECT_ERRNO("read pipe, writer gone", read(fds[0], buffer, sizeof(buffer)), 0, 0);
	EXPECT_ERRNO("read bad fd", read(closed, buffer, 1), -1, EBADF);
	EXPECT_ERRNO("read 0 bytes", read(fds[0], buffer, 0), 0, 0);
	EXPECT_ERRNO("readv iovcnt -1", readv(fds[0], &v, minus_one), -1, EINVAL);
	close(fds[0]);
}

/* ---- reads on small stacks (TDSTAT_TRACK_READS=1 runs these tracked) ---- */

struct short_reads {
	ssize_t read_result, readv_result;
	int same_data;
};
static char short_file_path[] = "/tmp/conformance-short-XXXXXX";
static const char short_file_data[] = "a short regular file: reads of it end before the buffer does";

/* A short read of a regular file: the shim's try gets part of it from the
 * page cache and must finish it without a big buffer of its own. */
static void read_short_file(struct short_reads *out)
{
	static char buffer[512], first[8], second[200];
	struct iovec parts[2] = { { first, sizeof(first) }, { second, sizeof(second) } };
	int fd = open(short_file_path, O_RDONLY);

	out->read_result = read(fd, buffer, sizeof(buffer));
	lseek(fd, 0, SEEK_SET);
	out->readv_result = readv(fd, parts, 2);
	close(fd);
	out->same_data = !memcmp(buffer, short_file_data, sizeof(short_file_data) - 1) &&
			 !memcmp(first, short_file_data, sizeof(first)) &&
			 !memcmp(second, short_file_data + sizeof(first), sizeof(short_file_data) - 1 - sizeof(first));
}

static void *small_stack_reader(void *argument)
{
	read_short_file(argument);
	return NULL;
}

static struct short_reads on_signal_stack;
static void read_in_handler(int number)
{
	(void)number;
	read_short_file(&on_signal_stack);
}

static void print_short_reads(const char *where, const struct short_reads *reads)
{
	char name[128];

	snprintf(name, sizeof(name), "read short file, %s", where);
	expect_errno(name, reads->read_result, 0, sizeof(short_file_data) - 1, 0);
	snprintf(name, sizeof(name), "readv short file, %s", where);
	expect_errno(name, reads->readv_result, 0, sizeof(short_file_data) - 1, 0);
	snprintf(name, sizeof(name), "short file data, %s", where);
	note(name, "%ld", reads->same_data);
}

static void small_stack_checks(void)
{
	struct short_reads on_thread = { 0 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t stack_size = (SIGSTKSZ + page - 1) / page * page;
	struct sigaction action = { .sa_handler = read_in_handler, .sa_flags = SA_ONSTACK };
	pthread_attr_t attr;
	pthread_t thread;
	stack_t alternate, previous;
	char *mapping;
	int fd = mkstemp(short_file_path);

	if (fd < 0 || write(fd, short_file_data, sizeof(short_file_data) - 1) != (ssize_t)sizeof(short_file_data) - 1)
		abort();
	close(fd);

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
	pthread_create(&thread, &attr, small_stack_reader, &on_thread);
	pthread_join(thread, NULL);
	pthread_attr_destroy(&attr);
	print_short_reads("PTHREAD_STACK_MIN thread", &on_thread);

	/* SIGSTKSZ bytes above a guard page: an overflow faults at once */
	mapping = mmap(NULL, page + stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mapping == MAP_FAILED || mprotect(mapping, page, PROT_NONE))
		abort();
	alternate = (stack_t){ .ss_sp = mapping + page, .ss_size = stack_size };
	sigaltstack(&alternate, &previous);
	sigemptyset(&action.sa_mask);
	sigaction(SIGUSR2, &action, NULL);
	raise(SIGUSR2);
	signal(SIGUSR2, SIG_DFL);
	sigaltstack(&previous, NULL);
	munmap(mapping, page + stack_size);
	print_short_reads("SIGSTKSZ signal stack", &on_signal_stack);
	unlink(short_file_path);
}

/* ---- thread keys: the program may have all PTHREAD_KEYS_MAX ---- */

static void key_checks(void)
{
	static pthread_key_t keys[PTHREAD_KEYS_MAX + 1];
	int created = 0, error = 0;

	while (created < PTHREAD_KEYS_MAX + 1 && (error = pthread_key_create(&keys[created], NULL)) == 0)
		created++;
	note("pthread_key_create: keys created before it failed", "%ld", created);
	expect_error("pthread_key_create past the last key", error, EAGAIN);
	while (created > 0)
		pthread_key_delete(keys[--created]);
}

/* ---- syscall(): every number but the futex ones passes straight
 * through: all six arguments, the result, errno only on failure ---- */

static void syscall_checks(void)
{
	char path[] = "/tmp/tdstat-conformance-XXXXXX";
	int fd = mkstemp(path);
	static const char text[] = "0123456789abcdefghij";
	long page = sysconf(_SC_PAGESIZE);

	if (fd < 0) {
		perror("mkstemp");
		exit(2);
	}
	unlink(path);
	/* The text at the start of the second page: only an offset
	 * forwarded as the sixth argument finds it. */
	if (ftruncate(fd, 2 * page) != 0 || pwrite(fd, text, sizeof(text), page) != (ssize_t)sizeof(text)) {
		perror("conformance file");
		exit(2);
	}
	EXPECT_ERRNO("syscall getpid", syscall(SYS_getpid) == getpid(), 1, 0);
	errno = 1234;
	long pid = syscall(SYS_getpid);
	note("syscall getpid leaves errno alone", "%ld", errno == 1234 && pid == getpid());
	EXPECT_ERRNO("syscall read closed fd", syscall(SYS_read, CLOSED_FD, path, 1), -1, EBADF);
	EXPECT_ERRNO("syscall unknown number", syscall(100000), -1, ENOSYS);
	char *mapped = (char *)syscall(SYS_mmap, NULL, (size_t)page, PROT_READ, MAP_PRIVATE, fd, (off_t)page);
	note("syscall mmap: six arguments (the offset's page read back)", "%ld",
	     mapped != MAP_FAILED && memcmp(mapped, text, sizeof(text)) == 0);
	if (mapped != MAP_FAILED)
		munmap(mapped, (size_t)page);
	char buffer[8] = { 0 };
	EXPECT_ERRNO("syscall pread64: four arguments", syscall(SYS_pread64, fd, buffer, 5, page + 10), 5, 0);
	note("syscall pread64 read", "%ld", memcmp(buffer, "abcde", 5) == 0);
	close(fd);
}

/* ---- concurrency level ---- */

static void concurrency_checks(void)
{
	expect_error("pthread_getconcurrency at start", pthread_getconcurrency(), 0);
	expect_error("pthread_setconcurrency 4", pthread_setconcurrency(4), 0);
	note("pthread_getconcurrency after 4", "%ld", pthread_getconcurrency());
	expect_error("pthread_setconcurrency -1", pthread_setconcurrency(-1), EINVAL);
	note("pthread_getconcurrency after -1", "%ld", pthread_getconcurrency());
	expect_error("pthread_setconcurrency 0", pthread_setconcurrency(0), 0);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	close(CLOSED_FD);
	mutex_checks("normal", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE);
	mutex_checks("errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_NONE);
	mutex_checks("recursive", PTHREAD_MUTEX_RECURSIVE, PTHREAD_PRIO_NONE);
	mutex_checks("adaptive", PTHREAD_MUTEX_ADAPTIVE_NP, PTHREAD_PRIO_NONE);
	mutex_checks("pi-normal", PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_INHERIT);
	mutex_checks("pi-errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_INHERIT);
	mutex_checks("pi-recursive", PTHREAD_MUTEX_RECURSIVE, PTHREAD_PRIO_INHERIT);
	default_mutex_checks();
	robust_checks("plain", PTHREAD_PRIO_NONE);
	robust_checks("pi", PTHREAD_PRIO_INHERIT);
	rwlock_checks("prefer-reader", PTHREAD_RWLOCK_PREFER_READER_NP);
	rwlock_checks("prefer-writer", PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	rwlock_write_states("prefer-reader", PTHREAD_RWLOCK_PREFER_READER_NP);
	rwlock_write_states("prefer-writer", PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	cond_checks();
	barrier_checks();
	join_checks();
	sem_checks();
	sleep_checks();
	poll_checks();
	signal_checks();
	wait_checks();
	socket_checks();
	small_stack_checks();
	key_checks();
	concurrency_checks();
	syscall_checks();
	printf("summary: %d checks, %d differ from the expectation\n", checks, mismatches);
	return 0;
}
