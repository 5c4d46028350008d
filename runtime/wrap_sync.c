/* SPDX-License-Identifier: MIT */
/*
 * rwlocks, condition variables, barriers, joins and semaphores.
 *
 * Each call that can finish without waiting is tried first with its
 * non-blocking sibling (trylock, tryjoin, trywait); only when the try says
 * "would wait" does the thread turn BLOCKED around the real call.
 * Condition waits and barrier waits have no such sibling: a condvar wait
 * always waits, and a barrier's last arrival is BLOCKED for the instant it
 * takes to wake the others.
 */
#include <limits.h>
#include <linux/futex.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "shim.h"
#include "counter_clock.h"
#include "sync_track.h"

/*
 * Read locks.  glibc's rwlock keeps its state in the public __readers
 * field: the reader count from bit 3 up, and in bits 0-2 the write phase,
 * a writer holding the lock and readers waiting.  With bits 0-2 clear (a
 * read phase, no writer anywhere) both rdlock and tryrdlock just add one
 * reader; the shim does that CAS itself, when a start-up check found the
 * field behaving so (glibc's own rdlock and unlock move it 0 -> 8 -> 0).
 * Every other state goes to tryrdlock, then to a BLOCKED rdlock.
 */
#define RWLOCK_STATE_BITS 7u
#define RWLOCK_WRITE_PHASE 1u
#define RWLOCK_WRITE_LOCKED 2u
#define RWLOCK_ONE_READER 8u
#define RWLOCK_READER_OVERFLOW (1u << 31)

/* The shim's half of the rwlock gate (region.h's struct tdstat_sync):
 * 1 when the layout check passed.  The inline paths require the whole
 * gate to be 1, so a controller's tracking half sends them to the
 * tracked paths. */
#define rwlock_layout_known (TDSHIM_SYNC.gate_rwlock.half.shim)
static bool tries_unseen; /* see tdshim_sync_pass_through */

static bool rwlock_inline(void)
{
	return CMM_LOAD_SHARED(TDSHIM_SYNC.gate_rwlock.word) == 1;
}

void tdshim_probe_rwlock_layout(void)
{
	pthread_rwlock_t probe = PTHREAD_RWLOCK_INITIALIZER;
	bool ok = probe.__data.__readers == 0;

	ok = ok && tdshim_real_pthread_rwlock_rdlock &&
	     tdshim_real_pthread_rwlock_rdlock(&probe) == 0 &&
	     probe.__data.__readers == RWLOCK_ONE_READER;
	ok = ok && pthread_rwlock_unlock(&probe) == 0 && probe.__data.__readers == 0;
	/* The write try and release below follow glibc's: a write try of an
	 * idle lock enters a write phase, and the release leaves it there. */
	ok = ok && tdshim_real_pthread_rwlock_trywrlock && tdshim_real_pthread_rwlock_unlock &&
	     tdshim_real_pthread_rwlock_trywrlock(&probe) == 0 &&
	     probe.__data.__readers == (RWLOCK_WRITE_PHASE | RWLOCK_WRITE_LOCKED) &&
	     probe.__data.__writers_futex == 1 && probe.__data.__wrphase_futex == 1 &&
	     probe.__data.__cur_writer == tdshim_lock_tid();
	ok = ok && tdshim_real_pthread_rwlock_unlock(&probe) == 0 && probe.__data.__readers == RWLOCK_WRITE_PHASE &&
	     probe.__data.__writers_futex == 0 && probe.__data.__cur_writer == 0;
	/* A race detector takes the stack slot for an rwlock until told. */
	pthread_rwlock_destroy(&probe);
	rwlock_layout_known = ok;
}

/*
 * The wait paths' own tries: glibc's (or the next interposer's) try
 * calls, never the exported ones below, which count the program's tries
 * while tracking is on.  Before init the real function is resolved first
 * (out of line: the common path is a load and an indirect jump).
 */
__attribute__((noinline)) static int try_read_lock_at_init(pthread_rwlock_t *lock)
{
	tdshim_ensure_init();
	return tdshim_real_pthread_rwlock_tryrdlock ? tdshim_real_pthread_rwlock_tryrdlock(lock) : EBUSY;
}

__attribute__((noinline)) static int try_write_lock_at_init(pthread_rwlock_t *lock)
{
	tdshim_ensure_init();
	return tdshim_real_pthread_rwlock_trywrlock ? tdshim_real_pthread_rwlock_trywrlock(lock) : EBUSY;
}

static inline int try_read_lock(pthread_rwlock_t *lock)
{
	int (*real)(pthread_rwlock_t *) = tdshim_real_pthread_rwlock_tryrdlock;

	return caa_likely(real != NULL) ? real(lock) : try_read_lock_at_init(lock);
}

static inline int try_write_lock(pthread_rwlock_t *lock)
{
	int (*real)(pthread_rwlock_t *) = tdshim_real_pthread_rwlock_trywrlock;

	return caa_likely(real != NULL) ? real(lock) : try_write_lock_at_init(lock);
}

static bool add_reader_if_idle(pthread_rwlock_t *lock)
{
	unsigned int seen = CMM_LOAD_SHARED(lock->__data.__readers);

	if ((seen & RWLOCK_STATE_BITS) != 0 || seen + RWLOCK_ONE_READER >= RWLOCK_READER_OVERFLOW)
		return false;
	return uatomic_cmpxchg(&lock->__data.__readers, seen, seen + RWLOCK_ONE_READER) == seen;
}

static inline __attribute__((always_inline)) int rdlock_wait(pthread_rwlock_t *lock, const void *site)
{
	int error = try_read_lock(lock);

	if (error != EBUSY)
		return error;
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_rdlock);
	TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(pthread_rwlock_rdlock), lock, site);
	return tdshim_real_pthread_rwlock_rdlock(lock);
}

/* A read lock tracked: counted by atomic adds (readers run together). */
__attribute__((noinline, cold)) static int rdlock_tracked(pthread_rwlock_t *lock, const void *site)
{
	struct tdstat_sync_entry *entry = tdshim_sync_entry(lock, TDSTAT_SYNC_RWLOCK);
	uint64_t start;
	int error;

	if (CMM_LOAD_SHARED(rwlock_layout_known) == 1 && add_reader_if_idle(lock)) {
		tdshim_sync_add(entry, TDSHIM_SYNC_rw_rdlock, 1);
		return 0;
	}
	error = try_read_lock(lock);
	if (error != EBUSY) {
		if (error == 0)
			tdshim_sync_add(entry, TDSHIM_SYNC_rw_rdlock, 1);
		return error;
	}
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_rdlock);
	start = entry ? tdshim_now_ns() : 0;
	{
		TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(pthread_rwlock_rdlock), lock, site);
		error = tdshim_real_pthread_rwlock_rdlock(lock);
	}
	if (error == 0 && entry) {
		tdshim_sync_add(entry, TDSHIM_SYNC_rw_rdlock, 1);
		tdshim_sync_add(entry, TDSHIM_SYNC_rw_rdlock_sleep, 1);
		tdshim_sync_add(entry, TDSHIM_SYNC_rw_rdlock_sleep_time, tdshim_now_ns() - start + 1);
	}
	return error;
}

__attribute__((noinline)) static int rdlock_slow(pthread_rwlock_t *lock, const void *site)
{
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_rwlock))
		return rdlock_tracked(lock, site);
	return rdlock_wait(lock, site);
}

TDSHIM_FAST_PATH TDSHIM_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *lock)
{
	if (caa_likely(rwlock_inline()) && caa_likely(add_reader_if_idle(lock)))
		return 0;
	return rdlock_slow(lock, TDSHIM_CALL_SITE());
}

__attribute__((noinline)) static int wrlock_wait(pthread_rwlock_t *lock, const void *site)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_wrlock);
	TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(pthread_rwlock_wrlock), lock, site);
	return tdshim_real_pthread_rwlock_wrlock(lock);
}

/* A write lock tracked: its holder alone writes the counts. */
__attribute__((noinline, cold)) static int wrlock_tracked(pthread_rwlock_t *lock, const void *site)
{
	struct tdstat_sync_entry *entry = tdshim_sync_entry(lock, TDSTAT_SYNC_RWLOCK);
	int error = try_write_lock(lock);
	uint64_t slept = 0;

	if (error == EBUSY) {
		uint64_t start = entry ? tdshim_now_ns() : 0;

		error = wrlock_wait(lock, site);
		if (entry)
			slept = tdshim_now_ns() - start + 1;
	}
	if (error == 0)
		tdshim_sync_locked(entry, TDSHIM_SYNC_rw_wrlock, slept);
	return error;
}

TDSHIM_FAST_PATH TDSHIM_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *lock)
{
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_rwlock))
		return wrlock_tracked(lock, TDSHIM_CALL_SITE());
	int error = try_write_lock(lock);

	if (caa_likely(error != EBUSY))
		return error;
	return wrlock_wait(lock, TDSHIM_CALL_SITE());
}

/*
 * pthread_rwlock_tryrdlock and pthread_rwlock_trywrlock.  A read lock in
 * a read phase with nobody waiting is added here, as rdlock adds it (the
 * same CAS glibc's tryrdlock makes in that state), behind the rwlock
 * gate; every other state goes to glibc's tryrdlock.  A write try of an
 * idle lock takes it here, and one that one load shows busy fails here
 * (see pthread_rwlock_trywrlock); every other state goes to glibc's
 * trywrlock.
 *
 * Tracked: the read tries by atomic adds (readers run together), a write
 * try that takes the lock by its holder's plain store, a failed one by an
 * atomic add.  region.h: the stored try counts are the tries that
 * succeeded.
 */
__attribute__((noinline)) static int tryrdlock_tracked(pthread_rwlock_t *lock)
{
	struct tdstat_sync_entry *entry = tdshim_sync_entry(lock, TDSTAT_SYNC_RWLOCK);
	int error = 0;

	if (CMM_LOAD_SHARED(rwlock_layout_known) != 1 || !add_reader_if_idle(lock))
		error = try_read_lock(lock);
	tdshim_sync_add(entry, error == 0 ? TDSHIM_SYNC_rw_rdlock_try : TDSHIM_SYNC_rw_rdlock_try_fail, 1);
	return error;
}

__attribute__((noinline)) static int tryrdlock_slow(pthread_rwlock_t *lock)
{
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_rwlock))
		return tryrdlock_tracked(lock);
	return try_read_lock(lock);
}

TDSHIM_FAST_PATH TDSHIM_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *lock)
{
	if (caa_likely(rwlock_inline()) && caa_likely(add_reader_if_idle(lock)))
		return 0;
	return tryrdlock_slow(lock);
}

__attribute__((noinline)) static int trywrlock_tracked(pthread_rwlock_t *lock)
{
	struct tdstat_sync_entry *entry = tdshim_sync_entry(lock, TDSTAT_SYNC_RWLOCK);
	int error = try_write_lock(lock);

	if (error == 0)
		tdshim_sync_locked(entry, TDSHIM_SYNC_rw_wrlock_try, 0);
	else
		tdshim_sync_add(entry, TDSHIM_SYNC_rw_wrlock_try_fail, 1);
	return error;
}

__attribute__((noinline)) static int trywrlock_slow(pthread_rwlock_t *lock)
{
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_rwlock))
		return trywrlock_tracked(lock);
	return try_write_lock(lock);
}

/* Behind the rwlock gate, glibc's own answers where one load decides:
 * an idle lock (no reader, no writer, nobody waiting; in a read or a
 * write phase) is taken with glibc's CAS and stores (the writer's tid
 * where glibc's unlock and EDEADLK checks look for it); a write-locked
 * one, or one with readers in a read phase, is EBUSY whatever the
 * lock's preference.  Anything else, a lost CAS included, is glibc's. */
TDSHIM_FAST_PATH TDSHIM_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *lock)
{
	if (caa_likely(rwlock_inline())) {
		unsigned int seen = CMM_LOAD_SHARED(lock->__data.__readers);

		if (caa_likely((seen & ~RWLOCK_WRITE_PHASE) == 0)) {
			if (caa_likely(uatomic_cmpxchg(&lock->__data.__readers, seen,
						       RWLOCK_WRITE_PHASE | RWLOCK_WRITE_LOCKED) == seen)) {
				CMM_STORE_SHARED(lock->__data.__writers_futex, 1);
				if (!(seen & RWLOCK_WRITE_PHASE))
					CMM_STORE_SHARED(lock->__data.__wrphase_futex, 1);
				CMM_STORE_SHARED(lock->__data.__cur_writer, tdshim_lock_tid());
				return 0;
			}
		} else if (caa_likely((seen & RWLOCK_WRITE_LOCKED) | ((seen >= RWLOCK_ONE_READER) & ~seen & RWLOCK_WRITE_PHASE))) {
			/* (without a branch: write-locked, or readers in a read phase) */
			return EBUSY;
		}
	}
	return trywrlock_slow(lock);
}

static inline __attribute__((always_inline)) int pthread_rwlock_timedrdlock_untracked(pthread_rwlock_t *lock, const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_timedrdlock);
	if (!tdshim_rwlock_abstime_valid(CLOCK_REALTIME, abstime))
		return tdshim_real_pthread_rwlock_timedrdlock(lock, abstime);
	int error = try_read_lock(lock);
	if (error != EBUSY)
		return error;
	TDSHIM_WAIT_SCOPE(TDSHIM_KIND(pthread_rwlock_timedrdlock), lock);
	return tdshim_real_pthread_rwlock_timedrdlock(lock, abstime);
}

static inline __attribute__((always_inline)) int pthread_rwlock_timedwrlock_untracked(pthread_rwlock_t *lock, const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_timedwrlock);
	if (!tdshim_rwlock_abstime_valid(CLOCK_REALTIME, abstime))
		return tdshim_real_pthread_rwlock_timedwrlock(lock, abstime);
	int error = try_write_lock(lock);
	if (error != EBUSY)
		return error;
	TDSHIM_WAIT_SCOPE(TDSHIM_KIND(pthread_rwlock_timedwrlock), lock);
	return tdshim_real_pthread_rwlock_timedwrlock(lock, abstime);
}

static inline __attribute__((always_inline)) int pthread_rwlock_clockrdlock_untracked(pthread_rwlock_t *lock,
											clockid_t clock,
											const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_clockrdlock);
	if (!tdshim_rwlock_abstime_valid(clock, abstime))
		return tdshim_real_pthread_rwlock_clockrdlock(lock, clock, abstime);
	int error = try_read_lock(lock);
	if (error != EBUSY)
		return error;
	TDSHIM_WAIT_SCOPE(TDSHIM_KIND(pthread_rwlock_clockrdlock), lock);
	return tdshim_real_pthread_rwlock_clockrdlock(lock, clock, abstime);
}

static inline __attribute__((always_inline)) int pthread_rwlock_clockwrlock_untracked(pthread_rwlock_t *lock,
											clockid_t clock,
											const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_clockwrlock);
	if (!tdshim_rwlock_abstime_valid(clock, abstime))
		return tdshim_real_pthread_rwlock_clockwrlock(lock, clock, abstime);
	int error = try_write_lock(lock);
	if (error != EBUSY)
		return error;
	TDSHIM_WAIT_SCOPE(TDSHIM_KIND(pthread_rwlock_clockwrlock), lock);
	return tdshim_real_pthread_rwlock_clockwrlock(lock, clock, abstime);
}

/*
 * Timed and clock read and write locks, tracked: counted when taken; the
 * whole call's time counts as a sleep when it took longer than a try
 * (TDSTAT_STALL_NS): the lock was contended.
 */
static uint64_t timed_sleep_ns(uint64_t start)
{
	uint64_t took = tdshim_now_ns() - start;

	return took > TDSTAT_STALL_NS ? took : 0;
}

__attribute__((noinline, cold)) static int timed_rdlock_counted(struct tdstat_sync_entry *entry, uint64_t start,
								int error)
{
	if (entry && error == 0) {
		uint64_t slept = timed_sleep_ns(start);

		tdshim_sync_add(entry, TDSHIM_SYNC_rw_rdlock, 1);
		if (slept) {
			tdshim_sync_add(entry, TDSHIM_SYNC_rw_rdlock_sleep, 1);
			tdshim_sync_add(entry, TDSHIM_SYNC_rw_rdlock_sleep_time, slept);
		}
	}
	return error;
}

__attribute__((noinline, cold)) static int timed_wrlock_counted(struct tdstat_sync_entry *entry, uint64_t start,
								int error)
{
	if (entry && error == 0)
		tdshim_sync_locked(entry, TDSHIM_SYNC_rw_wrlock, timed_sleep_ns(start));
	return error;
}

static uint64_t tracked_start(const struct tdstat_sync_entry *entry)
{
	return entry ? tdshim_now_ns() : 0;
}

TDSHIM_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *lock, const struct timespec *abstime)
{
	if (caa_likely(!tdshim_sync_gated(&TDSHIM_SYNC.gate_rwlock)))
		return pthread_rwlock_timedrdlock_untracked(lock, abstime);
	struct tdstat_sync_entry *entry = tdshim_sync_entry(lock, TDSTAT_SYNC_RWLOCK);
	uint64_t start = tracked_start(entry);
	return timed_rdlock_counted(entry, start, pthread_rwlock_timedrdlock_untracked(lock, abstime));
}

TDSHIM_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *lock, const struct timespec *abstime)
{
	if (caa_likely(!tdshim_sync_gated(&TDSHIM_SYNC.gate_rwlock)))
		return pthread_rwlock_timedwrlock_untracked(lock, abstime);
	struct tdstat_sync_entry *entry = tdshim_sync_entry(lock, TDSTAT_SYNC_RWLOCK);
	uint64_t start = tracked_start(entry);
	return timed_wrlock_counted(entry, start, pthread_rwlock_timedwrlock_untracked(lock, abstime));
}

TDSHIM_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *lock, clockid_t clock,
					     const struct timespec *abstime)
{
	if (caa_likely(!tdshim_sync_gated(&TDSHIM_SYNC.gate_rwlock)))
		return pthread_rwlock_clockrdlock_untracked(lock, clock, abstime);
	struct tdstat_sync_entry *entry = tdshim_sync_entry(lock, TDSTAT_SYNC_RWLOCK);
	uint64_t start = tracked_start(entry);
	return timed_rdlock_counted(entry, start, pthread_rwlock_clockrdlock_untracked(lock, clock, abstime));
}

TDSHIM_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *lock, clockid_t clock,
					     const struct timespec *abstime)
{
	if (caa_likely(!tdshim_sync_gated(&TDSHIM_SYNC.gate_rwlock)))
		return pthread_rwlock_clockwrlock_untracked(lock, clock, abstime);
	struct tdstat_sync_entry *entry = tdshim_sync_entry(lock, TDSTAT_SYNC_RWLOCK);
	uint64_t start = tracked_start(entry);
	return timed_wrlock_counted(entry, start, pthread_rwlock_clockwrlock_untracked(lock, clock, abstime));
}

/*
 * A condvar waiter is woken by a signal or broadcast (stamped on the
 * condvar).  It may then sleep again on the mutex inside the call; the
 * mutex's stamps are not taken for its wake-up all the same: they come
 * from every unlock that wakes someone, most of them (in a pool of
 * workers sharing one mutex) other threads' wake-ups, which would date
 * this one too late.  The time asleep on the mutex after a signal counts
 * as runnable; in the common "signal, then unlock" it is the rest of the
 * signaller's critical section.  Measured both ways (tests/accuracy, C
 * pool of four workers fed by broadcasts, load 5 on 2 CPUs): 0.97-1.01
 * of the kernel this way, 0.70-0.77 taking the newer of the two stamps.
 * At loads of 20 and more this way reads up to 1.3x: workers then sleep
 * on the mutex a millisecond each behind the others' critical sections.
 *
 * Before it sleeps, glibc's condvar wait releases the mutex itself (a
 * futex wake when the mutex has waiters): that time on a CPU counts as
 * blocked.  Measuring it with the thread's CPU clock (two system calls,
 * 0.5 us each here) cost a pinned condvar ping-pong 1.39x.  The time
 * queued behind the waiter that wake let in is another matter: it can
 * be the whole wait, and a wait that never slept is told apart
 * (cond_switches_before, below).
 */
/* The clock of pthread_cond_timedwait's deadline: the condvar's own
 * (pthread_condattr_setclock), which glibc keeps in bit 1 of __wrefs. */
#define COND_CLOCK_MONOTONIC_BIT 2u

static clockid_t cond_clock(const pthread_cond_t *cond)
{
	return (CMM_LOAD_SHARED(cond->__data.__wrefs) & COND_CLOCK_MONOTONIC_BIT) ? CLOCK_MONOTONIC
										   : CLOCK_REALTIME;
}

static bool mutex_has_waiters(const pthread_mutex_t *mutex)
{
	return CMM_LOAD_SHARED(mutex->__data.__lock) == 2;
}

/* glibc's release of the mutex, inside the call, wakes a waiter now:
 * stamp it for that waiter, as an unlock would.  True when it does. */
static bool stamp_mutex_waiter(pthread_mutex_t *mutex)
{
	if (!mutex_has_waiters(mutex))
		return false;
	tdshim_wake_stamp_if_gathering(mutex);
	return true;
}

/*
 * A condvar wait whose release of the mutex wakes a waiter: the woken
 * thread often takes this thread's CPU at once (the kernel preempts the
 * waker on its way out of the futex wake), and this thread waits for the
 * CPU inside the call, then finds its signal already sent and returns
 * without ever sleeping.  Without a look at that, the whole time queued
 * counted as blocked: a pool's feeder, preempted so after every
 * broadcast by the workers it woke, read 0.04 runnable against the
 * kernel's 0.27 (tests/accuracy, C pool: 0.87-0.89 of the kernel).
 *
 * The thread's count of voluntary context switches (getrusage,
 * RUSAGE_THREAD: 0.33 us here, one system call each side) tells: the
 * same after the call, the thread never slept in it, and all of the call
 * was on a CPU or waiting for one.  Taken only for these waits (a wait
 * that releases an uncontended mutex cannot be preempted by the wake it
 * does not make), and only while gathering; not in a seccomp sandbox
 * (tdshim_sandboxed: a filter may kill on a call the program never
 * makes), and through libc's syscall(), not a getrusage() the program
 * may define itself.  A refusal (an error) turns it off for good.
 */
static int switches_unreadable;

static bool voluntary_switches(long *count)
{
	struct rusage usage;
	int saved = errno;

	if (CMM_LOAD_SHARED(switches_unreadable) || tdshim_in_sandbox() || !tdshim_real_syscall)
		return false;
	if (tdshim_real_syscall(SYS_getrusage, RUSAGE_THREAD, (long)&usage) != 0) {
		CMM_STORE_SHARED(switches_unreadable, 1);
		errno = saved;
		return false;
	}
	errno = saved;
	*count = usage.ru_nvcsw;
	return true;
}

/* At most one look per this much of a thread's time: 0.66 us of system
 * calls in every 200 us at most, 0.3%, where a pinned condvar ping-pong
 * (each wait's release wakes the peer, 8 us a round) paid 1.15x looking
 * at every wait.  A wait's queued time that matters is long: waits that
 * follow each other closer than this lose at most that much each. */
#define SWITCHES_LOOK_SPACING_NS UINT64_C(200000)

/* Before the wait's scope: whether to look, and the count then. */
static inline bool cond_switches_before(bool wakes_waiter, long *count)
{
	if (caa_likely(!wakes_waiter) || !tdshim_gathering())
		return false;
	struct tdshim_thread *self = &tdshim_self;
	uint64_t now = tdshim_stamp_ns();

	if (now - self->switches_looked_ns < SWITCHES_LOOK_SPACING_NS)
		return false;
	self->switches_looked_ns = now;
	return voluntary_switches(count);
}

/* After the real call, inside the scope: a wait that never slept.  The
 * sleeps the call made (-1: not looked at). */
static inline long cond_switches_after(struct tdshim_wait_scope *scope, bool looked, long before)
{
	long after;

	if (caa_likely(!looked) || !voluntary_switches(&after))
		return -1;
	if (after == before)
		scope->never_slept = true;
	return after - before;
}

/*
 * A timed wait that timed out takes its mutex back, and sleeps for it
 * when another thread holds it: a wake of the mutex after the timer then
 * ended the wait (thread.c, wait_woken; helper-73: a waiter whose mutex
 * was held 9 ms past its timeout read 0.89 runnable, asleep).  Taken when
 * the call slept twice (the condvar's sleep and the mutex's), where its
 * count of voluntary switches was read (a wait whose release of the mutex
 * wakes a waiter, above), and otherwise only for a return more than
 * TDSHIM_RELOCK_SLEEP_NS after the timer: a return late for want of a CPU
 * took other threads' wakes of the mutex for its own (helper-74; helper-75,
 * a SCHED_IDLE waiter behind another program's spinner: 0.23-0.28 of the
 * kernel, left).  Reading the count for every timed wait (42c2558) was
 * worse three ways (helper-76): a getrusage the program never makes
 * killed a program under a seccomp filter the shim had not seen; a wait
 * not read for the rate limit counted from its timer through a 9 ms sleep
 * on its mutex (34-78x the kernel); and a signal inside the wait made the
 * second switch, so other threads' hand-offs were taken (0.05-0.08).
 */
static inline void cond_timed_out(struct tdshim_wait_scope *scope, pthread_mutex_t *mutex, clockid_t clock,
				  const struct timespec *abstime, long sleeps)
{
	scope->deadline_ns = tdshim_deadline_at(clock, abstime);
	scope->timed_out = true;
	if (sleeps >= 2 || sleeps < 0)
		scope->wake_keys[1] = mutex;
	scope->relock_if_late = sleeps < 0;
}

/*
 * Tracking of a condvar wait (a blocking path: the gate is a load, the
 * clock two reads around a sleep).  The wait releases the mutex: a
 * sampled hold of it ends here, while the caller still holds it.
 */
struct cond_tracking {
	struct tdstat_sync_entry *entry;
	uint64_t start;
};

__attribute__((noinline, cold)) static void cond_wait_tracked_begins(struct cond_tracking *tracking,
								     pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	tracking->entry = tdshim_sync_entry(cond, TDSTAT_SYNC_COND);
	if (!tracking->entry)
		return;
	if (CMM_LOAD_SHARED(mutex->__data.__owner) == tdshim_lock_tid())
		tdshim_sync_released(tdshim_sync_entry(mutex, TDSTAT_SYNC_MUTEX));
	tracking->start = tdshim_now_ns();
}

/* The gate inline, the tracking out of line. */
static inline void cond_wait_begins(struct cond_tracking *tracking, pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	tracking->entry = NULL;
	if (caa_unlikely(tdshim_sync_gated(&TDSHIM_SYNC.gate_mutex)))
		cond_wait_tracked_begins(tracking, cond, mutex);
}

static void cond_wait_ends(const struct cond_tracking *tracking, bool timed, int error)
{
	struct tdstat_sync_entry *entry = tracking->entry;

	if (!entry)
		return;
	tdshim_sync_add(entry, timed ? TDSHIM_SYNC_cond_timedwait : TDSHIM_SYNC_cond_wait, 1);
	tdshim_sync_add(entry, timed ? TDSHIM_SYNC_cond_timedwait_sleep_time : TDSHIM_SYNC_cond_wait_sleep_time,
			tdshim_now_ns() - tracking->start);
	if (timed && error == ETIMEDOUT)
		tdshim_sync_add(entry, TDSHIM_SYNC_cond_timedwait_timeout, 1);
}

static inline __attribute__((always_inline)) int cond_wait_from(pthread_cond_t *cond, pthread_mutex_t *mutex,
								 const void *site)
{
	struct cond_tracking tracking;

	TDSHIM_REQUIRE_PTHREAD(pthread_cond_wait);
	cond_wait_begins(&tracking, cond, mutex);
	long switches = 0;
	bool look = cond_switches_before(stamp_mutex_waiter(mutex), &switches);
	int error;
	{
		TDSHIM_UNCLAIMED_WAIT(mutex);
		TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(pthread_cond_wait), cond, site);
		error = tdshim_real_pthread_cond_wait(cond, mutex);
		cond_switches_after(&tdshim_scope_, look, switches);
	}
	cond_wait_ends(&tracking, false, error);
	return error;
}

TDSHIM_BLOCKING_PATH TDSHIM_EXPORT int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	return cond_wait_from(cond, mutex, TDSHIM_CALL_SITE());
}

static inline __attribute__((always_inline)) int cond_timedwait_from(pthread_cond_t *cond, pthread_mutex_t *mutex,
								      const struct timespec *abstime,
								      const void *site)
{
	struct cond_tracking tracking;

	TDSHIM_REQUIRE_PTHREAD(pthread_cond_timedwait);
	cond_wait_begins(&tracking, cond, mutex);
	long switches = 0;
	bool look = cond_switches_before(stamp_mutex_waiter(mutex), &switches);
	int error;
	{
		TDSHIM_UNCLAIMED_WAIT(mutex);
		TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(pthread_cond_timedwait), cond, site);
		error = tdshim_real_pthread_cond_timedwait(cond, mutex, abstime);
		long sleeps = cond_switches_after(&tdshim_scope_, look, switches);

		if (error == ETIMEDOUT)
			cond_timed_out(&tdshim_scope_, mutex, cond_clock(cond), abstime, sleeps);
	}
	cond_wait_ends(&tracking, true, error);
	return error;
}

TDSHIM_EXPORT int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
					 const struct timespec *abstime)
{
	return cond_timedwait_from(cond, mutex, abstime, TDSHIM_CALL_SITE());
}

TDSHIM_EXPORT int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
					 clockid_t clock, const struct timespec *abstime)
{
	struct cond_tracking tracking;

	TDSHIM_REQUIRE_PTHREAD(pthread_cond_clockwait);
	cond_wait_begins(&tracking, cond, mutex);
	long switches = 0;
	bool look = cond_switches_before(stamp_mutex_waiter(mutex), &switches);
	int error;
	{
		TDSHIM_UNCLAIMED_WAIT(mutex);
		TDSHIM_WAIT_SCOPE(TDSHIM_KIND(pthread_cond_clockwait), cond);
		error = tdshim_real_pthread_cond_clockwait(cond, mutex, clock, abstime);
		long sleeps = cond_switches_after(&tdshim_scope_, look, switches);

		if (error == ETIMEDOUT)
			cond_timed_out(&tdshim_scope_, mutex, clock, abstime, sleeps);
	}
	cond_wait_ends(&tracking, true, error);
	return error;
}

/* glibc's condvar counts its waiters in __wrefs (from bit 3 up) and
 * returns at once when there are none; so do the stamps, which are
 * written just before the wake (here and in every waker: runtime/wake.c
 * says why). */
static bool cond_has_waiters(const pthread_cond_t *cond)
{
	return CMM_LOAD_SHARED(cond->__data.__wrefs) >> 3;
}

TDSHIM_BLOCKING_PATH TDSHIM_EXPORT int pthread_cond_signal(pthread_cond_t *cond)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_cond_signal);
	if (cond_has_waiters(cond))
		tdshim_wake_stamp_if_gathering(cond);
	int error = tdshim_real_pthread_cond_signal(cond);
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_mutex))
		tdshim_sync_add(tdshim_sync_entry(cond, TDSTAT_SYNC_COND), TDSHIM_SYNC_cond_signal, 1);
	return error;
}

TDSHIM_EXPORT int pthread_cond_broadcast(pthread_cond_t *cond)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_cond_broadcast);
	if (cond_has_waiters(cond))
		tdshim_wake_stamp_if_gathering(cond);
	int error = tdshim_real_pthread_cond_broadcast(cond);
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_mutex))
		tdshim_sync_add(tdshim_sync_entry(cond, TDSTAT_SYNC_COND), TDSHIM_SYNC_cond_broadcast, 1);
	return error;
}

/* C11's condition variables are glibc's (runtime/wrap_mutex.c says why
 * they are interposed). */
TDSHIM_EXPORT int cnd_wait(cnd_t *cond, mtx_t *mutex)
{
	return tdshim_thrd_result(cond_wait_from((pthread_cond_t *)cond, (pthread_mutex_t *)mutex, TDSHIM_CALL_SITE()));
}

TDSHIM_EXPORT int cnd_timedwait(cnd_t *__restrict cond, mtx_t *__restrict mutex,
				const struct timespec *__restrict time_point)
{
	return tdshim_thrd_result(
		cond_timedwait_from((pthread_cond_t *)cond, (pthread_mutex_t *)mutex, time_point, TDSHIM_CALL_SITE()));
}

TDSHIM_EXPORT int cnd_signal(cnd_t *cond)
{
	return tdshim_thrd_result(pthread_cond_signal((pthread_cond_t *)cond));
}

TDSHIM_EXPORT int cnd_broadcast(cnd_t *cond)
{
	return tdshim_thrd_result(pthread_cond_broadcast((pthread_cond_t *)cond));
}

/* Every arrival stamps the barrier just before its call: the last one's
 * stamp, just before it wakes the others, is the newest their waits see
 * (one after the call was late when a woken waiter preempted it: it then
 * landed in that waiter's next wait). */
TDSHIM_EXPORT int pthread_barrier_wait(pthread_barrier_t *barrier)
{
	int result;

	TDSHIM_REQUIRE_PTHREAD(pthread_barrier_wait);
	tdshim_wake_stamp_if_gathering(barrier);
	{
		TDSHIM_WAIT_SCOPE(TDSHIM_KIND(pthread_barrier_wait), barrier);
		result = tdshim_real_pthread_barrier_wait(barrier);
	}
	return result;
}

/* Whether it will wait is unknown: BLOCKED for the whole call. */
static int join_passed_through(pthread_t thread, void **result, const void *site)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_join);
	TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(pthread_join), thread, site);
	return tdshim_real_pthread_join(thread, result);
}

static inline __attribute__((always_inline)) int join_from(pthread_t thread, void **result, const void *site)
{
	if (caa_unlikely(CMM_LOAD_SHARED(tries_unseen)))
		return join_passed_through(thread, result, site);
	int error = pthread_tryjoin_np(thread, result);

	if (error != EBUSY)
		return error;
	TDSHIM_REQUIRE_PTHREAD(pthread_join);
	TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(pthread_join), thread, site);
	return tdshim_real_pthread_join(thread, result);
}

TDSHIM_EXPORT int pthread_join(pthread_t thread, void **result)
{
	return join_from(thread, result, TDSHIM_CALL_SITE());
}

/* C11's join is glibc's pthread join, called inside libc (runtime/
 * wrap_mutex.c: the C11 calls); its int result is the start routine's
 * return value cut to an int, written whatever the join's outcome, as
 * glibc's (which writes an uninitialized value on failure; 0 here). */
TDSHIM_EXPORT int thrd_join(thrd_t thread, int *result)
{
	void *value = NULL;
	int error = join_from((pthread_t)thread, &value, TDSHIM_CALL_SITE());

	if (result)
		*result = (int)(uintptr_t)value;
	return tdshim_thrd_result(error);
}

TDSHIM_EXPORT int pthread_timedjoin_np(pthread_t thread, void **result, const struct timespec *abstime)
{
	int error = pthread_tryjoin_np(thread, result);

	if (error != EBUSY)
		return error;
	TDSHIM_REQUIRE_PTHREAD(pthread_timedjoin_np);
	TDSHIM_WAIT_SCOPE(TDSHIM_KIND(pthread_timedjoin_np), thread);
	return tdshim_real_pthread_timedjoin_np(thread, result, abstime);
}

TDSHIM_EXPORT int pthread_clockjoin_np(pthread_t thread, void **result, clockid_t clock,
				       const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_clockjoin_np);
	if (!tdshim_clock_supported(clock))
		return tdshim_real_pthread_clockjoin_np(thread, result, clock, abstime);
	int error = pthread_tryjoin_np(thread, result);
	if (error != EBUSY)
		return error;
	TDSHIM_WAIT_SCOPE(TDSHIM_KIND(pthread_clockjoin_np), thread);
	return tdshim_real_pthread_clockjoin_np(thread, result, clock, abstime);
}

/*
 * Semaphores.  glibc's sem_t (since 2.21, on 64-bit targets) is a 64-bit
 * word holding the value in its low 32 bits and the waiter count in its
 * high 32 bits.  That layout is not in a public header, so the shim checks
 * it at start-up against sem_init, sem_trywait, sem_post and sem_getvalue,
 * and takes a positive count itself only when the check passed; otherwise
 * it tries with sem_trywait (correct, a few instructions slower).
 */
struct glibc_semaphore {
	uint64_t data;
	int private_futex;
	int pad;
};

/* The shim's half of sem_post's gate: 1 when the layout check passed;
 * sem_post's inline path needs the whole gate at 1 (no tracking). */
#define semaphore_layout_known (TDSHIM_SYNC.gate_sem_post.half.shim)
/* tdshim_sem_wait_inline (shim.h), sem_wait's gate's shim half: layout
 * known and no cancellation ever requested: sem_wait's whole fast path
 * hangs on one load of the gate. */

static uint32_t semaphore_value(const sem_t *semaphore)
{
	return (uint32_t)CMM_LOAD_SHARED(((const struct glibc_semaphore *)semaphore)->data);
}

/* glibc keeps the futex flag its wake and wait use beside the word: 0
 * for a process-private semaphore, FUTEX_PRIVATE_FLAG for a shared one
 * (the flag is XORed into the operation).  The shim's own sleep
 * (semaphore_wait_sleeping) uses the same flag, so it checks both. */
#define SEMAPHORE_FUTEX_PRIVATE 0
#define SEMAPHORE_FUTEX_SHARED FUTEX_PRIVATE_FLAG

static bool probe_semaphore_futex_flags(void)
{
	sem_t probe;
	bool ok;

	if (sem_init(&probe, 0, 0) != 0)
		return false;
	ok = ((struct glibc_semaphore *)&probe)->private_futex == SEMAPHORE_FUTEX_PRIVATE;
	sem_destroy(&probe);
	if (!ok || sem_init(&probe, 1, 0) != 0)
		return false;
	ok = ((struct glibc_semaphore *)&probe)->private_futex == SEMAPHORE_FUTEX_SHARED;
	sem_destroy(&probe);
	return ok;
}

void tdshim_probe_semaphore_layout(void)
{
	sem_t probe;
	int value = -1;
	bool ok;

	if (sizeof(void *) != 8 || sizeof(sem_t) < sizeof(struct glibc_semaphore))
		return;
	if (sem_init(&probe, 0, 3) != 0)
		return;
	ok = semaphore_value(&probe) == 3 && (CMM_LOAD_SHARED(((struct glibc_semaphore *)&probe)->data) >> 32) == 0;
	ok = ok && tdshim_real_sem_trywait && tdshim_real_sem_trywait(&probe) == 0 && semaphore_value(&probe) == 2;
	ok = ok && sem_post(&probe) == 0 && sem_post(&probe) == 0 && semaphore_value(&probe) == 4;
	ok = ok && sem_getvalue(&probe, &value) == 0 && value == 4;
	sem_destroy(&probe);
	ok = ok && probe_semaphore_futex_flags();
	semaphore_layout_known = ok;
	tdshim_sem_wait_inline = ok && !CMM_LOAD_SHARED(tdshim_cancel_requested);
}

/* With another interposer present (runtime/region.c) no lock is taken
 * inline; under valgrind the calls whose try helgrind does not see (it
 * intercepts sem_wait and pthread_join, not sem_trywait and
 * pthread_tryjoin_np; the sanitizers intercept both) run for real. */
void tdshim_sync_pass_through(bool helgrind_may_watch)
{
	rwlock_layout_known = false;
	semaphore_layout_known = false;
	tries_unseen = helgrind_may_watch;
	tdshim_sem_wait_inline = 0;
}

/* The same decrement as glibc's own fast path: one CAS while the value
 * is positive. */
static bool take_if_positive(sem_t *semaphore)
{
	uint64_t *data = &((struct glibc_semaphore *)semaphore)->data;
	uint64_t seen = uatomic_read(data);

	while ((uint32_t)seen != 0) {
		uint64_t before = uatomic_cmpxchg(data, seen, seen - 1);
		if (before == seen)
			return true;
		seen = before;
	}
	return false;
}

/* The inline take, reporting the value it left. */
static inline bool take_if_positive_leaving(sem_t *semaphore, uint64_t *left)
{
	uint64_t *data = &((struct glibc_semaphore *)semaphore)->data;
	uint64_t seen = uatomic_read(data);

	while ((uint32_t)seen != 0) {
		uint64_t before = uatomic_cmpxchg(data, seen, seen - 1);
		if (before == seen) {
			*left = (uint32_t)(seen - 1);
			return true;
		}
		seen = before;
	}
	return false;
}

/* The wait paths' try of a semaphore whose layout is not known. */
static int try_take(sem_t *semaphore)
{
	tdshim_ensure_init();
	if (caa_unlikely(!tdshim_real_sem_trywait)) {
		*tdshim_errno() = EAGAIN;
		return -1;
	}
	return tdshim_real_sem_trywait(semaphore);
}

/* sem_wait and sem_timedwait are cancellation points that act on a
 * pending cancellation even when the count is positive (sem_clockwait, in
 * glibc, does not); neither sem_trywait nor the inline take is one, so the
 * test comes first where the real call would make it.  sem_trywait reports
 * "would wait" through errno, which must not leak into a wait that then
 * succeeds. */
static bool sem_would_wait(sem_t *semaphore, int *result, bool cancellation_point)
{
	if (cancellation_point)
		tdshim_testcancel();
	if (caa_likely(CMM_LOAD_SHARED(semaphore_layout_known))) {
		*result = 0;
		return !take_if_positive(semaphore);
	}

	TDSHIM_SAVE_ERRNO();
	*result = try_take(semaphore);
	if (*result == 0 || errno != EAGAIN)
		return false;
	TDSHIM_RESTORE_ERRNO();
	return true;
}

/*
 * The sleeping half of sem_wait, sem_timedwait and sem_clockwait, done
 * here on glibc's own word and with glibc's own protocol
 * (__new_sem_wait_slow64): register as a waiter in the high half, sleep
 * on the low half while it is 0, take a unit and unregister in one CAS.
 * sem_post (glibc's or the shim's) sees the same word either way.  Done
 * here rather than in glibc because only here is it known whether the
 * thread slept: a waiter preempted before its futex call, or whose value
 * changed before the kernel queued it, gets EAGAIN and never slept, and
 * the kernel counted that time as running or runnable, not sleeping.
 * Each futex call is one wait scope, so BLOCKED covers the sleeps only,
 * and a waiter woken only to lose the unit to another thread runs
 * between two of them.
 *
 * The futex call is a cancellation point, as glibc's: asynchronous
 * cancellation is on around it (a pending cancel acts as the type
 * changes, as in glibc), and a cancel unwinds through the two cleanups,
 * which end the scope and unregister the waiter (glibc's
 * __sem_wait_cleanup).
 */
#define SEMAPHORE_WAITER (UINT64_C(1) << 32)

/* The waiter's registration, undone by whatever unwinding ends its wait
 * (a cancellation, a signal handler's pthread_exit): `registered` points
 * at the word while, and only while, the waiter is surely registered. */
static void semaphore_unregister(void *registered)
{
	uint64_t *word = *(uint64_t *volatile *)registered;

	if (word)
		uatomic_add(word, -SEMAPHORE_WAITER);
}


/*
 * The futex call with asynchronous cancellation on around it, in a frame
 * of its own that has no cleanup, as glibc keeps its window to the
 * system call: a cancel landing at any instruction here unwinds by the
 * call frame information into semaphore_sleep at its call, where the
 * stack is what the cleanups expect.  Inlined, the window took in the
 * caller's own instructions (the stack adjusted for the pushed seventh
 * argument), and a cancel there entered the cleanups with the stack
 * pointer off: SIGSEGV (tests/break6).  0 or the error (errno untouched).
 */
__attribute__((noinline, noclone)) TDSHIM_BLOCKING_PATH static int
semaphore_futex_wait_cancelable(uint64_t *word, int operation, const struct timespec *abstime)
{
	int type = PTHREAD_CANCEL_DEFERRED, error = 0;
	/* libc's own, not the shim's wrapper (runtime/thread.c), which
	 * would take this for the program's asynchronous cancellation. */
	int (*setcanceltype)(int, int *) = tdshim_real_pthread_setcanceltype;

	if (setcanceltype)
		setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &type);
	long result = tdshim_futex6(word, operation, 0, abstime, 0, FUTEX_BITSET_MATCH_ANY);
	if (setcanceltype)
		setcanceltype(type, NULL);
	if (result < 0)
		error = (int)-result;
	return error;
}

/* One sleep while the value is 0: 0 (woken, or spuriously), EAGAIN (the
 * value was no longer 0: never slept), or the error that ends the wait. */
static int semaphore_sleep(struct glibc_semaphore *semaphore, clockid_t clock, const struct timespec *abstime,
			   uint32_t kind, const void *site)
{
	int operation = (FUTEX_WAIT_BITSET | (clock == CLOCK_REALTIME ? FUTEX_CLOCK_REALTIME : 0) |
			 FUTEX_PRIVATE_FLAG) ^ semaphore->private_futex;
	int error;

	/* The kernel refuses a negative time glibc counts as past. */
	if (abstime && abstime->tv_sec < 0)
		return ETIMEDOUT;
	TDSHIM_WAIT_SCOPE_AT(kind, semaphore, site);
	error = semaphore_futex_wait_cancelable(&semaphore->data, operation, abstime);
	/* Only a sleep a FUTEX_WAKE ended claims a post's stamp: one cut
	 * short by a signal or a cancel would take another waiter's. */
	tdshim_scope_.claims_stamp = error == 0;
	tdshim_scope_.never_slept = error == EAGAIN;
	if (error == ETIMEDOUT) {
		tdshim_scope_.deadline_ns = tdshim_deadline_at(clock, abstime);
		tdshim_scope_.timed_out = true;
	}
	return error;
}

/*
 * The registration is undone at an unwinding by a cleanup buffer of
 * glibc's first kind (as thread_entry's, runtime/thread.c), not by a
 * cleanup attribute: glibc's unwinding runs such a buffer in its stop
 * function as it leaves this frame, whatever the frames' personality
 * routines do.  A program that links another unwinder (the nongnu
 * libunwind, which exports _Unwind_* too) has the shim's personality
 * routine read libgcc's context with that unwinder's functions: no
 * cleanup of the shim's ran, and a cancelled waiter stayed registered for
 * good, every later post a system call
 * (regression.shim.break13_foreign_unwinder).  `registered` is set only
 * once the add is done and cleared before the add or the take that ends
 * the registration: an unwinding in between leaves a waiter registered
 * (a post's extra wake-up), never takes one away that is not there.
 */
TDSHIM_BLOCKING_PATH static int semaphore_wait_sleeping(sem_t *sem, clockid_t clock, const struct timespec *abstime,
							uint32_t kind, const void *site)
{
	struct glibc_semaphore *semaphore = (struct glibc_semaphore *)sem;
	uint64_t *volatile registered = NULL;
	struct _pthread_cleanup_buffer unwinding;
	int error = 0;

	_pthread_cleanup_push(&unwinding, semaphore_unregister, (void *)&registered);
	uint64_t seen = uatomic_add_return(&semaphore->data, SEMAPHORE_WAITER);

	registered = &semaphore->data;
	for (;;) {
		if ((uint32_t)seen == 0) {
			error = semaphore_sleep(semaphore, clock, abstime, kind, site);
			if (error == ETIMEDOUT || error == EINTR || error == EOVERFLOW)
				break;
			seen = uatomic_read(&semaphore->data);
			continue;
		}
		registered = NULL;
		uint64_t before = uatomic_cmpxchg(&semaphore->data, seen, seen - 1 - SEMAPHORE_WAITER);
		if (before == seen) {
			error = 0; /* a sleep's EAGAIN or wake-up is not the result */
			break;
		}
		registered = &semaphore->data;
		seen = before;
	}
	if (registered) {
		registered = NULL;
		uatomic_add(&semaphore->data, -SEMAPHORE_WAITER);
	}
	_pthread_cleanup_pop(&unwinding, 0);
	if (error) {
		*tdshim_errno() = error;
		return -1;
	}
	return 0;
}

/* The shim sleeps and wakes itself when the layout and glibc's futex
 * flags passed the probe, the system call is at hand and the semaphore's
 * flag is one of the two glibc writes; otherwise glibc's call (a wait:
 * the whole of it one scope).  A NULL abstime: sem_wait. */
static inline __attribute__((always_inline)) bool semaphore_protocol_known(const sem_t *semaphore)
{
	int flag = ((const struct glibc_semaphore *)semaphore)->private_futex;

	return CMM_LOAD_SHARED(semaphore_layout_known) && tdshim_real_syscall &&
	       (flag == SEMAPHORE_FUTEX_PRIVATE || flag == SEMAPHORE_FUTEX_SHARED);
}

static inline __attribute__((always_inline)) int sem_wait_passed_through(sem_t *semaphore, const void *site)
{
	int value = 0;

	TDSHIM_REQUIRE_LIBC(sem_wait);
	if (sem_getvalue(semaphore, &value) == 0 && value > 0)
		return tdshim_real_sem_wait(semaphore);
	TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(sem_wait), semaphore, site);
	return tdshim_real_sem_wait(semaphore);
}

/* The value left after a take or a post, for sema_min_count and
 * sema_max_count (the layout known; else sem_getvalue's answer). */
static uint64_t semaphore_value_now(sem_t *semaphore)
{
	int value = 0;

	if (CMM_LOAD_SHARED(semaphore_layout_known) == 1)
		return semaphore_value(semaphore);
	TDSHIM_SAVE_ERRNO();
	if (sem_getvalue(semaphore, &value) != 0 || value < 0)
		value = 0;
	TDSHIM_RESTORE_ERRNO();
	return (uint64_t)value;
}

static void sem_taken(struct tdstat_sync_entry *entry, sem_t *semaphore, uint64_t slept_ns)
{
	if (!entry)
		return;
	tdshim_sync_add(entry, TDSHIM_SYNC_sema_wait, 1);
	if (slept_ns) {
		tdshim_sync_add(entry, TDSHIM_SYNC_sema_wait_sleep, 1);
		tdshim_sync_add(entry, TDSHIM_SYNC_sema_wait_sleep_time, slept_ns);
	}
	tdshim_sync_raise(entry, TDSHIM_SYNC_sema_min_count, ~semaphore_value_now(semaphore));
}

static int sem_wait_untracked(sem_t *semaphore, const void *site);
static int sem_wait_inline_untracked(sem_t *semaphore, const void *site);

/* sem_wait tracked: the untracked path, timed and counted. */
__attribute__((noinline, cold)) static int sem_wait_tracked(sem_t *semaphore, const void *site)
{
	struct tdstat_sync_entry *entry = tdshim_sync_entry(semaphore, TDSTAT_SYNC_SEMA);
	int result;

	if (!entry)
		return sem_wait_untracked(semaphore, site);
	if (caa_unlikely(CMM_LOAD_SHARED(tries_unseen))) {
		uint64_t start = tdshim_now_ns();
		result = sem_wait_passed_through(semaphore, site);
		if (result == 0)
			sem_taken(entry, semaphore, tdshim_now_ns() - start + 1);
		return result;
	}
	if (!sem_would_wait(semaphore, &result, true)) {
		if (result == 0)
			sem_taken(entry, semaphore, 0);
		return result;
	}
	TDSHIM_REQUIRE_LIBC(sem_wait);
	uint64_t start = tdshim_now_ns();
	if (semaphore_protocol_known(semaphore)) {
		result = semaphore_wait_sleeping(semaphore, CLOCK_REALTIME, NULL, TDSHIM_KIND(sem_wait), site);
	} else {
		TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(sem_wait), semaphore, site);
		result = tdshim_real_sem_wait(semaphore);
	}
	if (result == 0)
		sem_taken(entry, semaphore, tdshim_now_ns() - start + 1);
	return result;
}

/*
 * Tracked, a take that finds the value positive (the fast path's case,
 * counted) stays in this frame: the entry from the thread's last one, the
 * take, one atomic add and a compare of the low-water mark with the value
 * the take left.  Anything else is sem_wait_tracked's.
 */
__attribute__((noinline)) TDSHIM_BLOCKING_PATH static int sem_wait_slow(sem_t *semaphore, const void *site)
{
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_sem_wait)) {
		struct tdstat_sync_entry *entry;
		uint64_t left;

		if (caa_likely(CMM_LOAD_SHARED(tdshim_sem_wait_inline) == 1) &&
		    caa_likely((entry = tdshim_sync_entry(semaphore, TDSTAT_SYNC_SEMA)) != NULL) &&
		    caa_likely(take_if_positive_leaving(semaphore, &left))) {
			uatomic_add(&entry->count[TDSHIM_SYNC_sema_wait], 1);
			tdshim_sync_raise_inline(entry, TDSHIM_SYNC_sema_min_count, ~left);
			return 0;
		}
		return sem_wait_tracked(semaphore, site);
	}
	return sem_wait_inline_untracked(semaphore, site);
}

static int sem_wait_untracked(sem_t *semaphore, const void *site)
{
	return sem_wait_inline_untracked(semaphore, site);
}

static inline __attribute__((always_inline)) int sem_wait_inline_untracked(sem_t *semaphore, const void *site)
{
	int result;

	if (caa_unlikely(CMM_LOAD_SHARED(tries_unseen)))
		return sem_wait_passed_through(semaphore, site);
	if (!sem_would_wait(semaphore, &result, true))
		return result;
	TDSHIM_REQUIRE_LIBC(sem_wait);
	if (semaphore_protocol_known(semaphore))
		return semaphore_wait_sleeping(semaphore, CLOCK_REALTIME, NULL, TDSHIM_KIND(sem_wait), site);
	TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(sem_wait), semaphore, site);
	return tdshim_real_sem_wait(semaphore);
}

/* Fast path: one flag and one CAS. */
TDSHIM_FAST_PATH TDSHIM_EXPORT int sem_wait(sem_t *semaphore)
{
	if (caa_likely(CMM_LOAD_SHARED(TDSHIM_SYNC.gate_sem_wait.word) == 1) && caa_likely(take_if_positive(semaphore)))
		return 0;
	return sem_wait_slow(semaphore, TDSHIM_CALL_SITE());
}

static inline __attribute__((always_inline)) int sem_timedwait_untracked(sem_t *semaphore,
									 const struct timespec *abstime)
{
	int result;

	TDSHIM_REQUIRE_LIBC(sem_timedwait);
	if (!tdshim_abstime_valid(CLOCK_REALTIME, abstime))
		return tdshim_real_sem_timedwait(semaphore, abstime);
	if (!sem_would_wait(semaphore, &result, true))
		return result;
	if (semaphore_protocol_known(semaphore))
		return semaphore_wait_sleeping(semaphore, CLOCK_REALTIME, abstime, TDSHIM_KIND(sem_timedwait),
					       TDSHIM_CALL_SITE());
	TDSHIM_WAIT_SCOPE(TDSHIM_KIND(sem_timedwait), semaphore);
	result = tdshim_real_sem_timedwait(semaphore, abstime);
	if (result != 0 && *tdshim_errno() == ETIMEDOUT) {
		tdshim_scope_.deadline_ns = tdshim_deadline_at(CLOCK_REALTIME, abstime);
		tdshim_scope_.timed_out = true;
	}
	return result;
}

static inline __attribute__((always_inline)) int sem_clockwait_untracked(sem_t *semaphore, clockid_t clock,
									 const struct timespec *abstime)
{
	int result;

	TDSHIM_REQUIRE_LIBC(sem_clockwait);
	if (!tdshim_abstime_valid(clock, abstime))
		return tdshim_real_sem_clockwait(semaphore, clock, abstime);
	if (!sem_would_wait(semaphore, &result, false))
		return result;
	if (semaphore_protocol_known(semaphore))
		return semaphore_wait_sleeping(semaphore, clock, abstime, TDSHIM_KIND(sem_clockwait),
					       TDSHIM_CALL_SITE());
	TDSHIM_WAIT_SCOPE(TDSHIM_KIND(sem_clockwait), semaphore);
	result = tdshim_real_sem_clockwait(semaphore, clock, abstime);
	if (result != 0 && *tdshim_errno() == ETIMEDOUT) {
		tdshim_scope_.deadline_ns = tdshim_deadline_at(clock, abstime);
		tdshim_scope_.timed_out = true;
	}
	return result;
}

/* Timed waits tracked: as sem_wait's, the whole call's time a sleep when
 * it took longer than a try. */
__attribute__((noinline, cold)) static int timed_sem_counted(struct tdstat_sync_entry *entry, sem_t *semaphore,
							     uint64_t start, int result)
{
	if (entry && result == 0)
		sem_taken(entry, semaphore, timed_sleep_ns(start));
	return result;
}

TDSHIM_EXPORT int sem_timedwait(sem_t *semaphore, const struct timespec *abstime)
{
	if (caa_likely(!tdshim_sync_gated(&TDSHIM_SYNC.gate_sem_wait)))
		return sem_timedwait_untracked(semaphore, abstime);
	struct tdstat_sync_entry *entry = tdshim_sync_entry(semaphore, TDSTAT_SYNC_SEMA);
	uint64_t start = tracked_start(entry);
	return timed_sem_counted(entry, semaphore, start, sem_timedwait_untracked(semaphore, abstime));
}

TDSHIM_EXPORT int sem_clockwait(sem_t *semaphore, clockid_t clock, const struct timespec *abstime)
{
	if (caa_likely(!tdshim_sync_gated(&TDSHIM_SYNC.gate_sem_wait)))
		return sem_clockwait_untracked(semaphore, clock, abstime);
	struct tdstat_sync_entry *entry = tdshim_sync_entry(semaphore, TDSTAT_SYNC_SEMA);
	uint64_t start = tracked_start(entry);
	return timed_sem_counted(entry, semaphore, start, sem_clockwait_untracked(semaphore, clock, abstime));
}

/*
 * sem_trywait: while the layout is known and tracking is off (sem_post's
 * gate at 1), the same take as sem_wait's inline path: one CAS while the
 * value is positive, else EAGAIN, as glibc's trywait (which gives up
 * after one lost CAS; this one retries while the value stays positive).
 * Not a cancellation point.  Otherwise glibc's.
 *
 * Tracked: a take by an atomic add and the low-water mark, a failure by
 * an atomic add.  region.h: the stored sema_trywait is the tries that
 * succeeded.
 */
static inline __attribute__((always_inline)) int trywait_untracked(sem_t *semaphore)
{
	if (CMM_LOAD_SHARED(semaphore_layout_known) == 1) {
		if (take_if_positive(semaphore))
			return 0;
		*tdshim_errno() = EAGAIN;
		return -1;
	}
	return try_take(semaphore);
}

__attribute__((noinline)) static int trywait_tracked(sem_t *semaphore)
{
	struct tdstat_sync_entry *entry = tdshim_sync_entry(semaphore, TDSTAT_SYNC_SEMA);
	uint64_t left;
	int result;

	if (!entry)
		return trywait_untracked(semaphore);
	if (caa_likely(CMM_LOAD_SHARED(semaphore_layout_known) == 1) && take_if_positive_leaving(semaphore, &left)) {
		uatomic_add(&entry->count[TDSHIM_SYNC_sema_trywait], 1);
		tdshim_sync_raise_inline(entry, TDSHIM_SYNC_sema_min_count, ~left);
		return 0;
	}
	result = trywait_untracked(semaphore);
	if (result == 0) {
		tdshim_sync_add(entry, TDSHIM_SYNC_sema_trywait, 1);
		tdshim_sync_raise(entry, TDSHIM_SYNC_sema_min_count, ~semaphore_value_now(semaphore));
	} else if (*tdshim_errno() == EAGAIN) {
		tdshim_sync_add(entry, TDSHIM_SYNC_sema_trywait_fail, 1);
	}
	return result;
}

__attribute__((noinline)) static int trywait_slow(sem_t *semaphore)
{
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_sem_post))
		return trywait_tracked(semaphore);
	return trywait_untracked(semaphore);
}

/* Fast path: the gate, then glibc's own straight line (one CAS while
 * the value is positive); anything else, a lost CAS included, out of line. */
TDSHIM_FAST_PATH TDSHIM_EXPORT int sem_trywait(sem_t *semaphore)
{
	if (caa_likely(CMM_LOAD_SHARED(TDSHIM_SYNC.gate_sem_post.word) == 1)) {
		uint64_t *data = &((struct glibc_semaphore *)semaphore)->data;
		uint64_t seen = uatomic_read(data);

		if (caa_likely((uint32_t)seen != 0) && caa_likely(uatomic_cmpxchg(data, seen, seen - 1) == seen))
			return 0;
	}
	return trywait_slow(semaphore);
}

/*
 * sem_post: the same increment as glibc's while nobody waits (one CAS,
 * no clock); with waiters (the high half of the word) the semaphore is
 * stamped and glibc posts and wakes.
 */
#define SEMAPHORE_VALUE_MAX 0x7fffffffu

/*
 * A post with waiters registered, as glibc's (one CAS on the value, then
 * FUTEX_WAKE of one), stamped just before the wake, and the stamp
 * withdrawn when the wake found nobody asleep.  That is common: a waiter
 * woken by the last post stays registered until it runs, and in a
 * contended lock the waker takes and posts again meanwhile, often more
 * than once; each such stamp overwrote the one that had woken the
 * waiter, which then counted as asleep up to the last (Python's lock
 * contention: a third of the sleeps ended 20 us to 300 us late).
 */
static int semaphore_post_waking(sem_t *sem)
{
	struct glibc_semaphore *semaphore = (struct glibc_semaphore *)sem;
	uint64_t seen = uatomic_read(&semaphore->data);

	for (;;) {
		if ((uint32_t)seen == SEMAPHORE_VALUE_MAX) {
			*tdshim_errno() = EOVERFLOW;
			return -1;
		}
		uint64_t before = uatomic_cmpxchg(&semaphore->data, seen, seen + 1);
		if (before == seen)
			break;
		seen = before;
	}
	if ((seen >> 32) == 0)
		return 0;
	struct tdshim_stamp kept = { 0 };
	if (tdshim_gathering())
		tdshim_wake_stamp_one_keep(semaphore, &kept);
	int operation = (FUTEX_WAKE | FUTEX_PRIVATE_FLAG) ^ semaphore->private_futex;
	if (tdshim_futex((int *)&semaphore->data, operation, 1, NULL) <= 0)
		tdshim_wake_withdraw(&kept);
	return 0;
}

__attribute__((noinline)) TDSHIM_BLOCKING_PATH static int sem_post_slow(sem_t *semaphore, bool waiters)
{
	if (semaphore_protocol_known(semaphore))
		return semaphore_post_waking(semaphore);
	TDSHIM_REQUIRE_LIBC(sem_post);
	struct tdshim_stamp kept = { 0 };
	if (waiters && tdshim_gathering())
		tdshim_wake_stamp_keep(semaphore, &kept);
	int result = tdshim_real_sem_post(semaphore);
	if (result != 0) {
		TDSHIM_SAVE_ERRNO();
		tdshim_wake_withdraw(&kept);
		TDSHIM_RESTORE_ERRNO();
	}
	return result;
}

/* sem_post tracked: the untracked path, counted; an inline post knows
 * the value it made. */
__attribute__((noinline)) static int sem_post_tracked(sem_t *semaphore)
{
	struct tdstat_sync_entry *entry = tdshim_sync_entry(semaphore, TDSTAT_SYNC_SEMA);
	uint64_t *data = &((struct glibc_semaphore *)semaphore)->data;
	bool waiters = true;
	uint64_t made = 0;
	int result = 0;

	if (caa_likely(CMM_LOAD_SHARED(semaphore_layout_known) == 1)) {
		uint64_t seen = uatomic_read(data);

		while ((seen >> 32) == 0 && (uint32_t)seen < SEMAPHORE_VALUE_MAX) {
			uint64_t before = uatomic_cmpxchg(data, seen, seen + 1);
			if (before == seen) {
				made = (uint32_t)seen + 1;
				break;
			}
			seen = before;
		}
		waiters = (seen >> 32) != 0;
	}
	if (made == 0) {
		result = sem_post_slow(semaphore, waiters);
		if (result == 0 && entry)
			made = semaphore_value_now(semaphore);
	}
	if (result == 0 && entry) {
		uatomic_add(&entry->count[TDSHIM_SYNC_sema_post], 1);
		tdshim_sync_raise_inline(entry, TDSHIM_SYNC_sema_max_count, made);
	}
	return result;
}

TDSHIM_FAST_PATH TDSHIM_EXPORT int sem_post(sem_t *semaphore)
{
	if (caa_likely(CMM_LOAD_SHARED(TDSHIM_SYNC.gate_sem_post.word) == 1)) {
		uint64_t *data = &((struct glibc_semaphore *)semaphore)->data;
		uint64_t seen = uatomic_read(data);

		/* One compare of the whole word: no waiter (high half 0) and
		 * room for one more (low half). */
		while (caa_likely(seen < SEMAPHORE_VALUE_MAX)) {
			uint64_t before = uatomic_cmpxchg(data, seen, seen + 1);
			if (caa_likely(before == seen))
				return 0;
			seen = before;
		}
		return sem_post_slow(semaphore, (seen >> 32) != 0);
	}
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_sem_post))
		return sem_post_tracked(semaphore);
	return sem_post_slow(semaphore, true);
}

/*
 * rwlock unlock.  A read lock in a read phase with nobody waiting
 * (__readers' low three bits clear, no writer) is released here with the
 * same decrement glibc makes, and so is a write lock of a reader-
 * preferring lock (below); everything else goes to glibc, after a
 * stamp when the state shows waiters: readers waiting (__readers'
 * RWAITING bit), or a sleeper on either futex (RWLOCK_FUTEX_USED).
 * A write phase alone wakes nobody: a stamp on every write
 * unlock cost the write try+unlock pair half its time.
 */
#define RWLOCK_WAITERS_MASK 4u
/* glibc's PTHREAD_RWLOCK_FUTEX_USED: a sleeper on __wrphase_futex or
 * __writers_futex set it before it sleeps. */
#define RWLOCK_FUTEX_USED 2u

__attribute__((noinline)) static int rwlock_unlock_slow(pthread_rwlock_t *lock)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_unlock);
	bool waiters = (CMM_LOAD_SHARED(lock->__data.__readers) & RWLOCK_WAITERS_MASK) ||
		       (CMM_LOAD_SHARED(lock->__data.__writers_futex) & RWLOCK_FUTEX_USED) ||
		       (CMM_LOAD_SHARED(lock->__data.__wrphase_futex) & RWLOCK_FUTEX_USED);
	if (waiters)
		tdshim_wake_stamp_if_gathering(lock);
	return tdshim_real_pthread_rwlock_unlock(lock);
}

/* A read lock's release, inline, when the state allows it. */
static bool release_reader_inline(pthread_rwlock_t *lock)
{
	unsigned int seen = CMM_LOAD_SHARED(lock->__data.__readers);

	return (seen & RWLOCK_STATE_BITS) == 0 && seen >= RWLOCK_ONE_READER &&
	       uatomic_cmpxchg(&lock->__data.__readers, seen, seen - RWLOCK_ONE_READER) == seen;
}

/* Tracked: a write lock's holder ends its hold before the release. */
__attribute__((noinline, cold)) static int rwlock_unlock_tracked(pthread_rwlock_t *lock)
{
	int writer = CMM_LOAD_SHARED(lock->__data.__cur_writer);

	if (writer != 0 && writer == tdshim_lock_tid())
		tdshim_sync_released(tdshim_sync_entry(lock, TDSTAT_SYNC_RWLOCK));
	if (CMM_LOAD_SHARED(rwlock_layout_known) == 1 && writer == 0 && release_reader_inline(lock))
		return 0;
	return rwlock_unlock_slow(lock);
}

/*
 * A write lock's release, as glibc's (__pthread_rwlock_wrunlock) for a
 * lock that prefers readers (the default; a writer-preferring lock may
 * hand over to a waiting writer: glibc's): the writer's tid cleared,
 * writers' waiting turned off, the lock left in a write phase, or handed
 * to the readers that arrived meanwhile.  Only a release that wakes
 * someone (a futex word's waiting flag) stamps the lock and makes the
 * system call, as glibc would.
 */

__attribute__((noinline)) static void rwlock_write_release_wake(pthread_rwlock_t *lock, bool readers,
								 bool writer)
{
	int private = CMM_LOAD_SHARED(lock->__data.__shared) != 0 ? 0 : FUTEX_PRIVATE_FLAG;

	tdshim_wake_stamp_if_gathering(lock);
	if (readers)
		tdshim_futex((int *)&lock->__data.__wrphase_futex, FUTEX_WAKE | private, INT_MAX, NULL);
	if (writer)
		tdshim_futex((int *)&lock->__data.__writers_futex, FUTEX_WAKE | private, 1, NULL);
}

static inline int rwlock_write_release(pthread_rwlock_t *lock)
{
	CMM_STORE_SHARED(lock->__data.__cur_writer, 0);
	bool wake_writer = (uatomic_xchg(&lock->__data.__writers_futex, 0) & RWLOCK_FUTEX_USED) != 0;
	unsigned int seen = CMM_LOAD_SHARED(lock->__data.__readers);

	for (;;) {
		unsigned int next = (seen ^ RWLOCK_WRITE_LOCKED) ^ (seen >= RWLOCK_ONE_READER ? RWLOCK_WRITE_PHASE : 0);
		unsigned int before = uatomic_cmpxchg(&lock->__data.__readers, seen, next);

		if (caa_likely(before == seen))
			break;
		seen = before;
	}
	bool wake_readers = seen >= RWLOCK_ONE_READER &&
			    (uatomic_xchg(&lock->__data.__wrphase_futex, 0) & RWLOCK_FUTEX_USED) != 0;
	if (caa_unlikely(wake_readers || wake_writer))
		rwlock_write_release_wake(lock, wake_readers, wake_writer);
	return 0;
}

TDSHIM_FAST_PATH TDSHIM_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *lock)
{
	if (caa_likely(rwlock_inline())) {
		int writer = CMM_LOAD_SHARED(lock->__data.__cur_writer);

		if (writer == 0) {
			unsigned int seen = CMM_LOAD_SHARED(lock->__data.__readers);

			if ((seen & RWLOCK_STATE_BITS) == 0 && seen >= RWLOCK_ONE_READER &&
			    uatomic_cmpxchg(&lock->__data.__readers, seen, seen - RWLOCK_ONE_READER) == seen)
				return 0;
		} else if (writer == CMM_LOAD_SHARED(tdshim_self.lock_tid) && /* 0 until known: glibc's */
			   CMM_LOAD_SHARED(lock->__data.__flags) == PTHREAD_RWLOCK_PREFER_READER_NP) {
			return rwlock_write_release(lock);
		}
	}
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_rwlock))
		return rwlock_unlock_tracked(lock);
	return rwlock_unlock_slow(lock);
}
