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
#include "shim.h"

TDSHIM_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *lock)
{
	int error = pthread_rwlock_tryrdlock(lock);

	if (error != EBUSY)
		return error;
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_rdlock);
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_rwlock_rdlock(lock);
}

TDSHIM_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *lock)
{
	int error = pthread_rwlock_trywrlock(lock);

	if (error != EBUSY)
		return error;
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_wrlock);
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_rwlock_wrlock(lock);
}

TDSHIM_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *lock, const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_timedrdlock);
	if (!tdshim_abstime_valid(CLOCK_REALTIME, abstime))
		return tdshim_real_pthread_rwlock_timedrdlock(lock, abstime);
	int error = pthread_rwlock_tryrdlock(lock);
	if (error != EBUSY)
		return error;
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_rwlock_timedrdlock(lock, abstime);
}

TDSHIM_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *lock, const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_timedwrlock);
	if (!tdshim_abstime_valid(CLOCK_REALTIME, abstime))
		return tdshim_real_pthread_rwlock_timedwrlock(lock, abstime);
	int error = pthread_rwlock_trywrlock(lock);
	if (error != EBUSY)
		return error;
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_rwlock_timedwrlock(lock, abstime);
}

TDSHIM_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *lock, clockid_t clock,
					     const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_clockrdlock);
	if (!tdshim_abstime_valid(clock, abstime))
		return tdshim_real_pthread_rwlock_clockrdlock(lock, clock, abstime);
	int error = pthread_rwlock_tryrdlock(lock);
	if (error != EBUSY)
		return error;
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_rwlock_clockrdlock(lock, clock, abstime);
}

TDSHIM_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *lock, clockid_t clock,
					     const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_rwlock_clockwrlock);
	if (!tdshim_abstime_valid(clock, abstime))
		return tdshim_real_pthread_rwlock_clockwrlock(lock, clock, abstime);
	int error = pthread_rwlock_trywrlock(lock);
	if (error != EBUSY)
		return error;
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_rwlock_clockwrlock(lock, clock, abstime);
}

TDSHIM_EXPORT int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_cond_wait);
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_cond_wait(cond, mutex);
}

TDSHIM_EXPORT int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
					 const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_cond_timedwait);
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_cond_timedwait(cond, mutex, abstime);
}

TDSHIM_EXPORT int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
					 clockid_t clock, const struct timespec *abstime)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_cond_clockwait);
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_cond_clockwait(cond, mutex, clock, abstime);
}

TDSHIM_EXPORT int pthread_barrier_wait(pthread_barrier_t *barrier)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_barrier_wait);
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_barrier_wait(barrier);
}

TDSHIM_EXPORT int pthread_join(pthread_t thread, void **result)
{
	int error = pthread_tryjoin_np(thread, result);

	if (error != EBUSY)
		return error;
	TDSHIM_REQUIRE_PTHREAD(pthread_join);
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_join(thread, result);
}

TDSHIM_EXPORT int pthread_timedjoin_np(pthread_t thread, void **result, const struct timespec *abstime)
{
	int error = pthread_tryjoin_np(thread, result);

	if (error != EBUSY)
		return error;
	TDSHIM_REQUIRE_PTHREAD(pthread_timedjoin_np);
	TDSHIM_WAIT_SCOPE();
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
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_pthread_clockjoin_np(thread, result, clock, abstime);
}

/* sem_trywait reports "would wait" through errno, which must not leak into
 * a wait that then succeeds.  The sem_*wait calls are cancellation points
 * that act on a pending cancellation even when the count is positive;
 * sem_trywait is not one, so the test comes first. */
static bool sem_would_wait(sem_t *semaphore, int *result)
{
	TDSHIM_SAVE_ERRNO();

	pthread_testcancel();
	*result = sem_trywait(semaphore);
	if (*result == 0 || errno != EAGAIN)
		return false;
	TDSHIM_RESTORE_ERRNO();
	return true;
}

TDSHIM_EXPORT int sem_wait(sem_t *semaphore)
{
	int result;

	if (!sem_would_wait(semaphore, &result))
		return result;
	TDSHIM_REQUIRE_LIBC(sem_wait);
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_sem_wait(semaphore);
}

TDSHIM_EXPORT int sem_timedwait(sem_t *semaphore, const struct timespec *abstime)
{
	int result;

	TDSHIM_REQUIRE_LIBC(sem_timedwait);
	if (!tdshim_abstime_valid(CLOCK_REALTIME, abstime))
		return tdshim_real_sem_timedwait(semaphore, abstime);
	if (!sem_would_wait(semaphore, &result))
		return result;
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_sem_timedwait(semaphore, abstime);
}

TDSHIM_EXPORT int sem_clockwait(sem_t *semaphore, clockid_t clock, const struct timespec *abstime)
{
	int result;

	TDSHIM_REQUIRE_LIBC(sem_clockwait);
	if (!tdshim_abstime_valid(clock, abstime))
		return tdshim_real_sem_clockwait(semaphore, clock, abstime);
	if (!sem_would_wait(semaphore, &result))
		return result;
	TDSHIM_WAIT_SCOPE();
	return tdshim_real_sem_clockwait(semaphore, clock, abstime);
}
