/* SPDX-License-Identifier: MIT */
/*
 * Mutex locks.
 *
 * The default mutex (PTHREAD_MUTEX_NORMAL/TIMED_NP, private, no elision:
 * __kind == 0) is acquired here, with the protocol glibc's own fast path
 * and its __lll_lock_wait use on the public struct __pthread_mutex_s
 * fields: __lock is 0 (free), 1 (taken) or 2 (taken, maybe waiters);
 * the owner records its tid in __owner and bumps __nusers.  So the mutex
 * is left exactly as glibc's pthread_mutex_lock leaves it, glibc's
 * pthread_mutex_unlock and the condvar calls work on it unchanged, and we
 * know precisely when the thread goes to sleep: BLOCKED covers the futex
 * wait only.  The uncontended path touches nothing but the mutex.
 *
 * Every other type (recursive, error-checking, adaptive, robust, PI, PP,
 * process-shared, elided) is tried with pthread_mutex_trylock first and
 * handed to glibc only when the try says it would wait; so is the default
 * mutex when glibc elides locks or another interposer must see them.
 */
#include <linux/futex.h>
#include <sys/syscall.h>

#include "shim.h"
#include "sync_track.h"

static inline void record_ownership(pthread_mutex_t *mutex)
{
	mutex->__data.__owner = tdshim_lock_tid();
	++mutex->__data.__nusers;
}

__attribute__((noinline)) static int lock_default_contended(pthread_mutex_t *mutex, const void *site)
{
	int *word = &mutex->__data.__lock;

	tdshim_ensure_init();
	/* 2 marks the lock contended, so the unlocker will wake someone.  A
	 * word already at 2 has waiters: queue behind them without another
	 * exchange on the contended line (as glibc does). */
	if (CMM_LOAD_SHARED(*word) == 2 || uatomic_xchg(word, 2) != 0) {
		/* One scope per sleep: a waiter woken only to find the lock
		 * taken again runs (RUNNABLE) between two sleeps. */
		do {
			/* Woken by a FUTEX_WAKE, the sleep claims the unlock's
			 * entry of the ring, or takes the slot's stamp when the
			 * unlock wrote that (wake_default_waiter): the later
			 * of the two. */
			TDSHIM_WAIT_SCOPE_FULL(TDSHIM_KIND(pthread_mutex_lock), mutex, mutex, site);
			long result = tdshim_futex(word, FUTEX_WAIT_PRIVATE, 2, NULL);
			tdshim_scope_.claims_stamp = result == 0;
			tdshim_scope_.never_slept = result == -EAGAIN;
		} while (uatomic_xchg(word, 2) != 0);
	}
	record_ownership(mutex);
	return 0;
}

/* tdshim_inline_mutex_kind (shim.h): PTHREAD_MUTEX_TIMED_NP (0, the
 * region's initial value), unless init found that glibc or someone else
 * must see every lock (then TDSHIM_MUTEX_KIND_NEVER_INLINE).  The inline
 * paths compare the whole gate: one load and one compare, with tracking
 * off exactly as without it; a controller's tracking half makes no mutex
 * match, and every lock and unlock comes to the tracked paths below. */

/* glibc's elision flag in __kind (PTHREAD_MUTEX_ELISION_NP) */
#define KIND_ELISION 256

/*
 * Lock elision (GLIBC_TUNABLES=glibc.elision.enable=1 on a CPU with RTM):
 * glibc makes a default mutex elided at its first lock or trylock, by
 * setting the elision flag in __kind, and an elided mutex's unlock leaves
 * __nusers alone.  A lock taken inline counts __nusers; glibc's unlock of
 * the mutex, now elided (a condvar wait relocks it through glibc), would
 * never uncount it, and pthread_mutex_destroy would fail with EBUSY.  So
 * when glibc elides, default mutexes go through trylock and glibc's lock
 * like the other kinds.  A probe shows what glibc does, whatever set the
 * tunable; called once, at init.
 */
void tdshim_probe_mutex_elision(void)
{
	pthread_mutex_t probe = PTHREAD_MUTEX_INITIALIZER;
	bool elided;

	if (!tdshim_real_pthread_mutex_unlock || !tdshim_real_pthread_mutex_trylock ||
	    tdshim_real_pthread_mutex_trylock(&probe) != 0)
		return;
	elided = (CMM_LOAD_SHARED(probe.__data.__kind) & KIND_ELISION) != 0;
	/* glibc's unlock: the shim's would release the probe inline. */
	tdshim_real_pthread_mutex_unlock(&probe);
	pthread_mutex_destroy(&probe);
	if (elided)
		tdshim_inline_mutex_kind = TDSHIM_MUTEX_KIND_NEVER_INLINE;
}

static bool is_default_mutex(const pthread_mutex_t *mutex)
{
	return CMM_LOAD_SHARED(mutex->__data.__kind) == CMM_LOAD_SHARED(TDSHIM_SYNC.gate_mutex.word);
}

/* The inline kind, whatever the tracking half says (tracked paths): the
 * shim's half as the whole gate holds it (NEVER_INLINE reads 65535, a
 * kind no mutex has, not -1, the kind of a destroyed mutex). */
static bool is_inline_kind(const pthread_mutex_t *mutex)
{
	return CMM_LOAD_SHARED(mutex->__data.__kind) == (int)(uint16_t)CMM_LOAD_SHARED(tdshim_inline_mutex_kind);
}

/* glibc's mark of a robust mutex whose owner died without making it
 * consistent (PTHREAD_MUTEX_NOTRECOVERABLE in its sources). */
#define OWNER_NOT_RECOVERABLE 0x7ffffffe

/*
 * Calls that fail at once, which go straight to glibc with no try and no
 * transition: an error-checking mutex its caller already holds (EDEADLK),
 * and a robust mutex that is not recoverable (ENOTRECOVERABLE).  The
 * latter must not be tried: glibc 2.36's trylock answers ENOTRECOVERABLE
 * but leaves the lock word taken, so every later call would see EBUSY.
 */
/* glibc's robust bit in __kind (PTHREAD_MUTEX_ROBUST_NORMAL_NP) */
#define KIND_ROBUST 16

/* __owner is read only for the kinds where it can tell: another thread's
 * lock writes it, a race to a race detector watching the program. */
static bool fails_without_waiting(const pthread_mutex_t *mutex)
{
	int kind = CMM_LOAD_SHARED(mutex->__data.__kind);
	int type = kind & 3;

	if (!(kind & KIND_ROBUST) && type != PTHREAD_MUTEX_ERRORCHECK_NP)
		return false;
	int owner = CMM_LOAD_SHARED(mutex->__data.__owner);
	return owner == OWNER_NOT_RECOVERABLE ||
	       (type == PTHREAD_MUTEX_ERRORCHECK_NP && owner == tdshim_lock_tid());
}

/* The lock paths' own try of a mutex that is not taken inline: glibc's
 * (or the next interposer's), never the exported pthread_mutex_trylock,
 * which counts the program's tries.  The lock paths have ensured init. */
static inline int try_through_glibc(pthread_mutex_t *mutex)
{
	return caa_likely(tdshim_real_pthread_mutex_trylock != NULL) ? tdshim_real_pthread_mutex_trylock(mutex)
								       : EBUSY;
}

/* *slept_ns: how long the lock waited, when it did (tracking only). */
static inline __attribute__((always_inline)) int lock_other_type_timed(pthread_mutex_t *mutex, const void *site,
									uint64_t *slept_ns)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_mutex_lock);
	if (fails_without_waiting(mutex))
		return tdshim_real_pthread_mutex_lock(mutex);
	int error = try_through_glibc(mutex);
	if (error != EBUSY)
		return error;
	uint64_t start = slept_ns ? tdshim_now_ns() : 0;
	{
		TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(pthread_mutex_lock), mutex, site);
		error = tdshim_real_pthread_mutex_lock(mutex);
	}
	if (slept_ns)
		*slept_ns = tdshim_now_ns() - start + 1;
	return error;
}

/* A lock the caller now holds (robust: EOWNERDEAD too) is counted. */
static bool lock_taken(int error)
{
	return error == 0 || error == EOWNERDEAD;
}

/* Tracking (runtime/sync_track.h): the same paths as untracked, timed. */
__attribute__((noinline)) static int lock_tracked(pthread_mutex_t *mutex, const void *site)
{
	struct tdstat_sync_entry *entry = tdshim_sync_entry(mutex, TDSTAT_SYNC_MUTEX);
	uint64_t slept = 0;
	int error = 0;

	if (is_inline_kind(mutex)) {
		if (uatomic_cmpxchg(&mutex->__data.__lock, 0, 1) == 0) {
			record_ownership(mutex);
		} else {
			uint64_t start = entry ? tdshim_now_ns() : 0;

			lock_default_contended(mutex, site);
			if (entry)
				slept = tdshim_now_ns() - start + 1;
		}
	} else {
		error = lock_other_type_timed(mutex, site, entry ? &slept : NULL);
	}
	if (lock_taken(error))
		tdshim_sync_locked(entry, TDSHIM_SYNC_mutex_lock, slept);
	return error;
}

__attribute__((noinline)) static int lock_other_type(pthread_mutex_t *mutex, const void *site)
{
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_mutex))
		return lock_tracked(mutex, site);
	return lock_other_type_timed(mutex, site, NULL);
}

/* The fast path: a CAS and two stores, no call.  Always inlined into the
 * exported lock calls, where TDSHIM_CALL_SITE() is their caller (GCC's
 * __builtin_return_address in an inlined function gives the enclosing
 * function's): read in the slow branches only, not before the CAS, which
 * the compiler would not move a load across. */
static inline __attribute__((always_inline)) int mutex_lock_inlined(pthread_mutex_t *mutex)
{
	if (caa_unlikely(!is_default_mutex(mutex)))
		return lock_other_type(mutex, TDSHIM_CALL_SITE());
	if (caa_unlikely(uatomic_cmpxchg(&mutex->__data.__lock, 0, 1) != 0))
		return lock_default_contended(mutex, TDSHIM_CALL_SITE());
	record_ownership(mutex);
	return 0;
}

TDSHIM_FAST_PATH TDSHIM_EXPORT int pthread_mutex_lock(pthread_mutex_t *mutex)
{
	return mutex_lock_inlined(mutex);
}

static int timedlock(pthread_mutex_t *mutex, const struct timespec *abstime, const void *site)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_mutex_timedlock);
	if (fails_without_waiting(mutex))
		return tdshim_real_pthread_mutex_timedlock(mutex, abstime);
	int error = try_through_glibc(mutex);
	if (error != EBUSY)
		return error;
	TDSHIM_UNCLAIMED_WAIT(mutex);
	TDSHIM_WAIT_SCOPE_AT(TDSHIM_KIND(pthread_mutex_timedlock), mutex, site);
	return tdshim_real_pthread_mutex_timedlock(mutex, abstime);
}

static int clocklock(pthread_mutex_t *mutex, clockid_t clock, const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_mutex_clocklock);
	if (!tdshim_clock_supported(clock) || fails_without_waiting(mutex))
		return tdshim_real_pthread_mutex_clocklock(mutex, clock, abstime);
	int error = try_through_glibc(mutex);
	if (error != EBUSY)
		return error;
	TDSHIM_UNCLAIMED_WAIT(mutex);
	TDSHIM_WAIT_SCOPE(TDSHIM_KIND(pthread_mutex_clocklock), mutex);
	return tdshim_real_pthread_mutex_clocklock(mutex, clock, abstime);
}

/* Timed locks: counted when taken; the time of the whole call counts as
 * sleep when it took longer than a try (a contended lock). */
static int timed_lock_counted(struct tdstat_sync_entry *entry, uint64_t start, int error)
{
	if (entry && lock_taken(error)) {
		uint64_t took = tdshim_now_ns() - start;

		tdshim_sync_locked(entry, TDSHIM_SYNC_mutex_lock, took > TDSTAT_STALL_NS ? took : 0);
	}
	return error;
}

static int mutex_timedlock_from(pthread_mutex_t *mutex, const struct timespec *abstime, const void *site)
{
	if (caa_likely(!tdshim_sync_gated(&TDSHIM_SYNC.gate_mutex)))
		return timedlock(mutex, abstime, site);
	struct tdstat_sync_entry *entry = tdshim_sync_entry(mutex, TDSTAT_SYNC_MUTEX);
	uint64_t start = entry ? tdshim_now_ns() : 0;
	return timed_lock_counted(entry, start, timedlock(mutex, abstime, site));
}

TDSHIM_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *mutex, const struct timespec *abstime)
{
	return mutex_timedlock_from(mutex, abstime, TDSHIM_CALL_SITE());
}

TDSHIM_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *mutex, clockid_t clock,
					  const struct timespec *abstime)
{
	if (caa_likely(!tdshim_sync_gated(&TDSHIM_SYNC.gate_mutex)))
		return clocklock(mutex, clock, abstime);
	struct tdstat_sync_entry *entry = tdshim_sync_entry(mutex, TDSTAT_SYNC_MUTEX);
	uint64_t start = entry ? tdshim_now_ns() : 0;
	return timed_lock_counted(entry, start, clocklock(mutex, clock, abstime));
}

/*
 * pthread_mutex_trylock.  The default mutex is tried here as glibc's
 * trylock tries it (lll_trylock: one CAS of the word from 0 to 1, then
 * the owner and one user more; EBUSY when the CAS fails), behind the same
 * gate as the lock: with tracking off, one load and one compare, and no
 * call into glibc at all.  Every other type, and every mutex while glibc
 * elides or another interposer must see the calls, goes to glibc's
 * trylock unchanged (recursive counts, error checks, robust EOWNERDEAD
 * and ENOTRECOVERABLE, PI and PP are glibc's to answer).
 *
 * Tracked (docs/CONTRACT.md §9): a try that takes the mutex is counted by
 * its new holder with a plain store, like a lock, and may start a sampled
 * hold; a try that fails is counted by an atomic add (the holder writes
 * the other counts meanwhile).  region.h: the stored mutex_try is the
 * tries that succeeded.
 */
static inline int try_untracked(pthread_mutex_t *mutex)
{
	if (is_inline_kind(mutex)) {
		if (uatomic_cmpxchg(&mutex->__data.__lock, 0, 1) != 0)
			return EBUSY;
		record_ownership(mutex);
		return 0;
	}
	TDSHIM_REQUIRE_PTHREAD(pthread_mutex_trylock);
	return tdshim_real_pthread_mutex_trylock(mutex);
}

__attribute__((noinline)) static int trylock_tracked(pthread_mutex_t *mutex)
{
	struct tdstat_sync_entry *entry = tdshim_sync_entry(mutex, TDSTAT_SYNC_MUTEX);
	int error = try_untracked(mutex);

	if (lock_taken(error))
		tdshim_sync_locked(entry, TDSHIM_SYNC_mutex_try, 0);
	else
		tdshim_sync_add(entry, TDSHIM_SYNC_mutex_try_fail, 1);
	return error;
}

__attribute__((noinline)) static int trylock_other_type(pthread_mutex_t *mutex)
{
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_mutex))
		return trylock_tracked(mutex);
	TDSHIM_REQUIRE_PTHREAD(pthread_mutex_trylock);
	return tdshim_real_pthread_mutex_trylock(mutex);
}

TDSHIM_FAST_PATH TDSHIM_EXPORT int pthread_mutex_trylock(pthread_mutex_t *mutex)
{
	if (caa_unlikely(!is_default_mutex(mutex)))
		return trylock_other_type(mutex);
	if (caa_unlikely(uatomic_cmpxchg(&mutex->__data.__lock, 0, 1) != 0))
		return EBUSY;
	record_ownership(mutex);
	return 0;
}

/*
 * Unlock.  The default mutex is released here with glibc's own protocol
 * (the owner field cleared, one user less, the word exchanged to 0 and a
 * waiter woken if it was 2), so its waiters learn the moment of the
 * wake-up from the stamp written just before the wake.  Every other type
 * is stamped when its word says someone may wait (2 for the normal
 * kinds, FUTEX_WAITERS for robust and PI mutexes), then goes to glibc.
 * The uncontended path reads no clock.
 */
/*
 * The wake of one waiter is stamped as a semaphore post's is
 * (runtime/wake.c: a ring of stamps, each claimed by one waiter), and
 * withdrawn when the wake found nobody asleep.  With one slot, a waiter
 * woken into a full run queue found there the stamps of the unlocks made
 * while it waited for a CPU (each wakes the next waiter: the word stays 2
 * while anyone may sleep) and counted its run-queue wait as blocked:
 * tests/accuracy's contention, four threads on two CPUs, read 0.86-0.92
 * of the kernel's runnable where a system call takes a microsecond.
 * While a wait that claims nothing may sleep on the word (a timed lock,
 * a condvar's relock: tdshim_wake_all_claim), the slot, as before.
 */
__attribute__((noinline)) static void wake_default_waiter(pthread_mutex_t *mutex)
{
	struct tdshim_stamp kept = { 0 };

	if (tdshim_gathering()) {
		if (tdshim_wake_all_claim(mutex))
			tdshim_wake_stamp_one_keep(mutex, &kept);
		else
			tdshim_wake_stamp_keep(mutex, &kept);
	}
	if (tdshim_futex(&mutex->__data.__lock, FUTEX_WAKE_PRIVATE, 1, NULL) <= 0)
		tdshim_wake_withdraw(&kept);
}

static inline __attribute__((always_inline)) int unlock_through_glibc(pthread_mutex_t *mutex)
{
	unsigned int word = (unsigned int)CMM_LOAD_SHARED(mutex->__data.__lock);

	TDSHIM_REQUIRE_PTHREAD(pthread_mutex_unlock);
	/* Before the call, withdrawn after an error (not the owner): that
	 * woke nobody, and a waiter the kernel wakes later (its owner died)
	 * would take it. */
	struct tdshim_stamp kept = { 0 };
	if ((word == 2 || (word & FUTEX_WAITERS)) && tdshim_gathering())
		tdshim_wake_stamp_keep(mutex, &kept);
	int error = tdshim_real_pthread_mutex_unlock(mutex);
	if (error)
		tdshim_wake_withdraw(&kept);
	return error;
}

static void unlock_inline(pthread_mutex_t *mutex)
{
	mutex->__data.__owner = 0;
	--mutex->__data.__nusers;
	if (caa_unlikely(uatomic_xchg(&mutex->__data.__lock, 0) > 1))
		wake_default_waiter(mutex);
}

/* The hold ends before the release, while the caller is still the only
 * writer of the entry's hold fields. */
__attribute__((noinline)) static int unlock_tracked(pthread_mutex_t *mutex)
{
	/* Only a holder's unlock ends a hold: an error-checking mutex's
	 * unlock by another thread fails and counts nothing. */
	int owner = CMM_LOAD_SHARED(mutex->__data.__owner);

	if (owner == tdshim_lock_tid())
		tdshim_sync_released(tdshim_sync_entry(mutex, TDSTAT_SYNC_MUTEX));
	if (is_inline_kind(mutex)) {
		unlock_inline(mutex);
		return 0;
	}
	return unlock_through_glibc(mutex);
}

__attribute__((noinline)) static int unlock_other_type(pthread_mutex_t *mutex)
{
	if (tdshim_sync_gated(&TDSHIM_SYNC.gate_mutex))
		return unlock_tracked(mutex);
	return unlock_through_glibc(mutex);
}

TDSHIM_FAST_PATH TDSHIM_EXPORT int pthread_mutex_unlock(pthread_mutex_t *mutex)
{
	if (caa_unlikely(!is_default_mutex(mutex)))
		return unlock_other_type(mutex);
	mutex->__data.__owner = 0;
	--mutex->__data.__nusers;
	if (caa_unlikely(uatomic_xchg(&mutex->__data.__lock, 0) > 1))
		wake_default_waiter(mutex);
	return 0;
}

/*
 * C11's mutexes are glibc's pthread mutexes (an mtx_t holds a
 * pthread_mutex_t, initialized with the default type for mtx_plain and
 * mtx_timed), and glibc's mtx_* call its own pthread_mutex_* inside
 * libc, past the interposition: their waits went unseen, and a C11
 * locker asleep on a mutex's word claimed none of its unlocks' stamps.
 * The same paths as the pthread calls, the results mapped as glibc's
 * thrd_err_map() does.
 */
int tdshim_thrd_result(int error)
{
	switch (error) {
	case 0:
		return thrd_success;
	case ENOMEM:
		return thrd_nomem;
	case ETIMEDOUT:
		return thrd_timedout;
	case EBUSY:
		return thrd_busy;
	default:
		return thrd_error;
	}
}

TDSHIM_EXPORT int mtx_lock(mtx_t *mutex)
{
	return tdshim_thrd_result(mutex_lock_inlined((pthread_mutex_t *)mutex));
}

TDSHIM_EXPORT int mtx_timedlock(mtx_t *__restrict mutex, const struct timespec *__restrict time_point)
{
	return tdshim_thrd_result(mutex_timedlock_from((pthread_mutex_t *)mutex, time_point, TDSHIM_CALL_SITE()));
}

TDSHIM_EXPORT int mtx_trylock(mtx_t *mutex)
{
	return tdshim_thrd_result(pthread_mutex_trylock((pthread_mutex_t *)mutex));
}

TDSHIM_EXPORT int mtx_unlock(mtx_t *mutex)
{
	return tdshim_thrd_result(pthread_mutex_unlock((pthread_mutex_t *)mutex));
}
