/* SPDX-License-Identifier: MIT */
/*
 * Waiting for children: a try with WNOHANG first; only "no child has
 * changed state yet" leads to a BLOCKED wait.
 */
#include <stdint.h>
#include <string.h>

#include "shim.h"

TDSHIM_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	TDSHIM_REQUIRE_LIBC(waitpid);
	if (options & WNOHANG)
		return tdshim_real_waitpid(pid, status, options);
	pid_t found = tdshim_real_waitpid(pid, status, options | WNOHANG);
	if (found != 0)
		return found;
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(waitpid), pid, TDSHIM_CALL_SITE());
	return tdshim_real_waitpid(pid, status, options);
}

TDSHIM_EXPORT pid_t wait(int *status)
{
	return waitpid(-1, status, 0);
}

TDSHIM_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *usage)
{
	TDSHIM_REQUIRE_LIBC(wait4);
	if (options & WNOHANG)
		return tdshim_real_wait4(pid, status, options, usage);
	pid_t found = tdshim_real_wait4(pid, status, options | WNOHANG, usage);
	if (found != 0)
		return found;
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(wait4), pid, TDSHIM_CALL_SITE());
	return tdshim_real_wait4(pid, status, options, usage);
}

TDSHIM_EXPORT pid_t wait3(int *status, int options, struct rusage *usage)
{
	return wait4(-1, status, options, usage);
}

/* waitid's label, in waitpid's terms (docs/CONTRACT.md §2: a pid as the
 * label of a child wait): the pid, 0 for the caller's group, -g for
 * group g, -1 for any child; a pidfd as INT64_MIN + fd (the command
 * names it so), never a number read as a pid. */
static int64_t waitid_label(idtype_t type, id_t id)
{
	switch ((int)type) {
	case P_PID:
		return (int64_t)id;
	case P_PGID:
		return -(int64_t)id;
	case 3: /* P_PIDFD */
		return INT64_MIN + (int64_t)id;
	default:
		return -1;
	}
}

/* waitid says "nothing yet" with si_pid == 0, so the try uses its own
 * siginfo and copies it out only when it found something. */
TDSHIM_EXPORT int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	siginfo_t found;

	TDSHIM_REQUIRE_LIBC(waitid);
	if (options & WNOHANG)
		return tdshim_real_waitid(type, id, info, options);
	memset(&found, 0, sizeof(found));
	if (tdshim_real_waitid(type, id, &found, options | WNOHANG) != 0)
		return -1;
	if (found.si_pid != 0) {
		if (info)
			*info = found;
		return 0;
	}
	TDSHIM_WAIT_SCOPE_LABEL(TDSHIM_KIND(waitid), waitid_label(type, id), TDSHIM_CALL_SITE());
	return tdshim_real_waitid(type, id, info, options);
}
