/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "ps_live_private.h"

static void explain_thread(pid_t pid, char *buf, size_t len)
{
	pid_t process = tdps_process_of(pid);

	if (process > 0 && process != pid)
		snprintf(buf, len, "PID %d is a thread of process %d: use %d", (int)pid, (int)process,
			 (int)process);
	else
		snprintf(buf, len, "PID %d is a thread, not a process: use its process's PID (Tgid in /proc/%d/status)",
			 (int)pid, (int)pid);
}

/* One line each: what happened, then what to do about it. */
TDPS_EXPORT const char *tdps_explain(enum tdps_status status, pid_t pid, char *buf, size_t len)
{
	int p = (int)pid;

	if (!buf || len == 0)
		return buf;
	switch (status) {
	case TDPS_OK:
		snprintf(buf, len, "process %d: no error", p);
		break;
	case TDPS_NO_PROCESS:
		snprintf(buf, len, "process %d: no such process (it does not exist or has exited); check the PID", p);
		break;
	case TDPS_PERMISSION:
		snprintf(buf, len,
			 "process %d: permission denied by the ptrace access rules: run as the same user as the target, "
			 "which must not be setuid or otherwise non-dumpable (and a descendant if "
			 "kernel.yama.ptrace_scope is 1), or as root / with CAP_SYS_PTRACE",
			 p);
		break;
	case TDPS_NOT_DYNAMIC:
		snprintf(buf, len,
			 "process %d is not dynamically linked: the shim cannot be preloaded into static programs; "
			 "link the program dynamically and start it with LD_PRELOAD=libtdshim.so (or tdstat run)",
			 p);
		break;
	case TDPS_NO_MEMORY:
		snprintf(buf, len, "process %d: out of memory in the controlling process; free memory and retry", p);
		break;
	case TDPS_NOT_A_PROCESS:
		explain_thread(pid, buf, len);
		break;
	case TDPS_KERNEL_THREAD:
		snprintf(buf, len, "PID %d is a kernel thread: it runs no program, so it has no statistics; give the PID of a program", p);
		break;
	case TDPS_LOOKUP_LIMIT:
		snprintf(buf, len,
			 "process %d: the symbol lookup gave up: the process maps more objects, or objects with larger "
			 "symbol tables (a crafted or damaged ELF file), than can be searched in %u objects, %u reads "
			 "and %u s; see what it maps in /proc/%d/maps",
			 p, TDPS_LOOKUP_OBJECTS_MAX, TDPS_LOOKUP_READS_MAX, TDPS_LOOKUP_SECONDS, p);
		break;
	case TDPS_IO:
	default:
		snprintf(buf, len,
			 "process %d: its memory could not be read or written (it may be exiting or unmapping it); retry",
			 p);
		break;
	}
	return buf;
}
