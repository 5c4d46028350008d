/* SPDX-License-Identifier: MIT */
/*
 * Sleeps always wait, except for a zero duration, which makes no
 * transition.
 */
#include "shim.h"


TDSHIM_EXPORT unsigned int sleep(unsigned int seconds)
{
	tdshim_ensure_init();
	if (caa_unlikely(!tdshim_real_sleep))
		return seconds;
	if (seconds == 0)
		return tdshim_real_sleep(seconds);
	struct timespec duration = { .tv_sec = seconds };
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(sleep), 0, TDSHIM_CALL_SITE());
	tdshim_scope_.deadline_ns = tdshim_deadline_after(&duration);
	return tdshim_real_sleep(seconds);
}

TDSHIM_EXPORT int usleep(useconds_t microseconds)
{
	TDSHIM_REQUIRE_LIBC(usleep);
	if (microseconds == 0)
		return tdshim_real_usleep(microseconds);
	struct timespec duration = { .tv_sec = microseconds / 1000000, .tv_nsec = (long)(microseconds % 1000000) * 1000 };
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(usleep), 0, TDSHIM_CALL_SITE());
	tdshim_scope_.deadline_ns = tdshim_deadline_after(&duration);
	return tdshim_real_usleep(microseconds);
}

/*
 * The duration is read only after the call read it (it ran its course):
 * an unreadable one gets the kernel's EFAULT, as without the shim, never
 * a fault here.  (So a zero duration makes a transition of no length.)
 */
TDSHIM_EXPORT int nanosleep(const struct timespec *duration, struct timespec *remaining)
{
	TDSHIM_REQUIRE_LIBC(nanosleep);
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(nanosleep), 0, TDSHIM_CALL_SITE());
	int result = tdshim_real_nanosleep(duration, remaining);
	if (result == 0)
		tdshim_scope_.timeout_ns = tdshim_timespec_ns(duration);
	return result;
}

static inline __attribute__((always_inline)) int clock_nanosleep_from(clockid_t clock, int flags,
								       const struct timespec *request,
								       struct timespec *remaining, const void *site)
{
	TDSHIM_REQUIRE_PTHREAD(clock_nanosleep);
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(clock_nanosleep), 0, site);
	int error = tdshim_real_clock_nanosleep(clock, flags, request, remaining);
	/* Only the clocks that tick with time have a deadline, read once
	 * the call has read it (as nanosleep). */
	if (error == 0 && (clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME)) {
		if (flags & TIMER_ABSTIME)
			tdshim_scope_.deadline_ns = tdshim_deadline_at(clock, request);
		else
			tdshim_scope_.timeout_ns = tdshim_timespec_ns(request);
	}
	return error;
}

TDSHIM_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *request,
				  struct timespec *remaining)
{
	return clock_nanosleep_from(clock, flags, request, remaining, TDSHIM_CALL_SITE());
}

/* C11's sleep: glibc's calls its clock_nanosleep inside libc, unseen
 * (runtime/wrap_mutex.c: the C11 calls); CLOCK_REALTIME, relative, and
 * C11's results: 0, -1 when a signal cut it short, -2 on an error. */
TDSHIM_EXPORT int thrd_sleep(const struct timespec *time_point, struct timespec *remaining)
{
	int error = clock_nanosleep_from(CLOCK_REALTIME, 0, time_point, remaining, TDSHIM_CALL_SITE());

	return error == 0 ? 0 : error == EINTR ? -1 : -2;
}
