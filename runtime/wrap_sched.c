/* SPDX-License-Identifier: MIT */
/*
 * sched_setscheduler() and pthread_setschedparam(): no transition.
 * Interposed to see a thread's scheduling policy change, which changes
 * the slack the kernel gives its timers (none in real time), by which the
 * shim dates their wakes (thread.c, "Scheduling policy").  Only a call
 * that succeeded is noted; what it returns, and errno, are the real
 * call's.  The same calls through syscall(), and sched_setattr through
 * it, are seen in runtime/wrap_futex.c; glibc 2.41's sched_setattr()
 * function, which makes its system call inside libc, is not.
 */
#include "shim.h"

TDSHIM_EXPORT int sched_setscheduler(pid_t pid, int policy, const struct sched_param *param)
{
	TDSHIM_REQUIRE_LIBC(sched_setscheduler);
	int result = tdshim_real_sched_setscheduler(pid, policy, param);

	if (result >= 0) {
		TDSHIM_SAVE_ERRNO();
		tdshim_sched_changed(pid, policy);
		TDSHIM_RESTORE_ERRNO();
	}
	return result;
}

TDSHIM_EXPORT int pthread_setschedparam(pthread_t thread, int policy, const struct sched_param *param)
{
	TDSHIM_REQUIRE_PTHREAD(pthread_setschedparam);
	int error = tdshim_real_pthread_setschedparam(thread, policy, param);

	if (error == 0) {
		TDSHIM_SAVE_ERRNO();
		tdshim_sched_thread_changed(thread, policy);
		TDSHIM_RESTORE_ERRNO();
	}
	return error;
}
