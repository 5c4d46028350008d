/* SPDX-License-Identifier: MIT */
/*
 * Sleeps always wait, except for a zero duration, which makes no
 * transition.
 */
#include "shim.h"

static bool is_zero(const struct timespec *duration)
{
	return duration && duration->tv_sec == 0 && duration->tv_nsec == 0;
}

TDSHIM_EXPORT unsigned int sleep(unsigned int seconds)
{
	tdshim_ensure_init();
	if (caa_unlikely(!tdshim_real_sleep))
		return seconds;
	if (seconds == 0)
		return tdshim_real_sleep(seconds);
	struct timespec duration = { .tv_sec = seconds };
	TDSHIM_WAIT_SCOPE_LABEL(TDSTAT_WAIT_SLEEP, 0, TDSHIM_CALL_SITE());
	tdshim_scope_.deadline_ns = tdshim_deadline_after(&duration);
	return tdshim_real_sleep(seconds);
}

TDSHIM_EXPORT int usleep(useconds_t microseconds)
{
	TDSHIM_REQUIRE_LIBC(usleep);
	if (microseconds == 0)
		return tdshim_real_usleep(microseconds);
	struct timespec duration = { .tv_sec = microseconds / 1000000, .tv_nsec = (long)(microseconds % 1000000) * 1000 };
	TDSHIM_WAIT_SCOPE_LABEL(TDSTAT_WAIT_SLEEP, 0, TDSHIM_CALL_SITE());
	tdshim_scope_.deadline_ns = tdshim_deadline_after(&duration);
	return tdshim_real_usleep(microseconds);
}

TDSHIM_EXPORT int nanosleep(const struct timespec *duration, struct timespec *remaining)
{
	TDSHIM_REQUIRE_LIBC(nanosleep);
	if (is_zero(duration))
		return tdshim_real_nanosleep(duration, remaining);
	TDSHIM_WAIT_SCOPE_LABEL(TDSTAT_WAIT_SLEEP, 0, TDSHIM_CALL_SITE());
	tdshim_scope_.deadline_ns = tdshim_deadline_after(duration);
	return tdshim_real_nanosleep(duration, remaining);
}

TDSHIM_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *request,
				  struct timespec *remaining)
{
	TDSHIM_REQUIRE_PTHREAD(clock_nanosleep);
	if (!(flags & TIMER_ABSTIME) && is_zero(request))
		return tdshim_real_clock_nanosleep(clock, flags, request, remaining);
	TDSHIM_WAIT_SCOPE_LABEL(TDSTAT_WAIT_SLEEP, 0, TDSHIM_CALL_SITE());
	/* Only the clocks that tick with time have a deadline here. */
	if (clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME)
		tdshim_scope_.deadline_ns = (flags & TIMER_ABSTIME) ? tdshim_deadline_at(clock, request)
								    : tdshim_deadline_after(request);
	return tdshim_real_clock_nanosleep(clock, flags, request, remaining);
}
