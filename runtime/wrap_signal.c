/* SPDX-License-Identifier: MIT */
/*
 * Signal waits.  sigwait, sigwaitinfo and sigtimedwait first take a signal
 * that is already pending (sigtimedwait with a zero timeout); sigsuspend
 * and pause wait by definition.
 */
#include "shim.h"

static const struct timespec zero_timeout;

/* 1: a signal was pending and is in *signal_number / *info; 0: none, the
 * caller waits; -1: the set itself is bad, the real call reports it. */
static int take_pending(const sigset_t *set, siginfo_t *info, int *signal_number)
{
	TDSHIM_SAVE_ERRNO();
	int taken = sigtimedwait(set, info, &zero_timeout);

	if (taken >= 0) {
		if (signal_number)
			*signal_number = taken;
		return 1;
	}
	bool would_wait = errno == EAGAIN;
	TDSHIM_RESTORE_ERRNO();
	return would_wait ? 0 : -1;
}

TDSHIM_EXPORT int sigwait(const sigset_t *set, int *signal_number)
{
	TDSHIM_REQUIRE_PTHREAD(sigwait);
	switch (take_pending(set, NULL, signal_number)) {
	case 1:
		return 0;
	case -1:
		return tdshim_real_sigwait(set, signal_number);
	}
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(sigwait), 0, TDSHIM_CALL_SITE());
	return tdshim_real_sigwait(set, signal_number);
}

TDSHIM_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	int signal_number;

	TDSHIM_REQUIRE_LIBC(sigwaitinfo);
	switch (take_pending(set, info, &signal_number)) {
	case 1:
		return signal_number;
	case -1:
		return tdshim_real_sigwaitinfo(set, info);
	}
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(sigwaitinfo), 0, TDSHIM_CALL_SITE());
	return tdshim_real_sigwaitinfo(set, info);
}

TDSHIM_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
	int signal_number;

	struct timespec copy;

	TDSHIM_REQUIRE_LIBC(sigtimedwait);
	/* The kernel reads the timeout: so does this, an unreadable one gets
	 * its EFAULT. */
	if (timeout && !tdshim_copy_timespec(timeout, &copy))
		return tdshim_real_sigtimedwait(set, info, timeout);
	if (timeout && (!tdshim_timeout_valid(&copy) || (copy.tv_sec == 0 && copy.tv_nsec == 0)))
		return tdshim_real_sigtimedwait(set, info, timeout);
	switch (take_pending(set, info, &signal_number)) {
	case 1:
		return signal_number;
	case -1:
		return tdshim_real_sigtimedwait(set, info, timeout);
	}
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(sigtimedwait), 0, TDSHIM_CALL_SITE());
	return tdshim_real_sigtimedwait(set, info, timeout);
}

TDSHIM_EXPORT int sigsuspend(const sigset_t *mask)
{
	TDSHIM_REQUIRE_LIBC(sigsuspend);
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(sigsuspend), 0, TDSHIM_CALL_SITE());
	return tdshim_real_sigsuspend(mask);
}

TDSHIM_EXPORT int pause(void)
{
	TDSHIM_REQUIRE_LIBC(pause);
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(pause), 0, TDSHIM_CALL_SITE());
	return tdshim_real_pause();
}
