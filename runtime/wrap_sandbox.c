/* SPDX-License-Identifier: MIT */
/*
 * prctl(): no transition.  Interposed to see a seccomp filter go in
 * (PR_SET_SECCOMP), after which the shim makes no system call of its own
 * that the filter may refuse by killing (shim.h, tdshim_sandboxed), and a
 * thread's new timer slack (PR_SET_TIMERSLACK), by which the shim dates
 * its timers' wakes (thread.c, timer_slack).  The arguments are read as
 * glibc's own prctl reads them: four more words, whatever the option.
 */
#include <stdarg.h>
#include <sys/prctl.h>

#include "shim.h"

TDSHIM_EXPORT int prctl(int option, ...)
{
	va_list arguments;
	unsigned long a2, a3, a4, a5;

	va_start(arguments, option);
	a2 = va_arg(arguments, unsigned long);
	a3 = va_arg(arguments, unsigned long);
	a4 = va_arg(arguments, unsigned long);
	a5 = va_arg(arguments, unsigned long);
	va_end(arguments);
	TDSHIM_REQUIRE_LIBC(prctl);
	if (option == PR_SET_SECCOMP)
		tdshim_note_sandbox();
	int result = tdshim_real_prctl(option, a2, a3, a4, a5);

	if (option == PR_SET_TIMERSLACK && result == 0)
		tdshim_timer_slack_changed(a2);
	return result;
}
