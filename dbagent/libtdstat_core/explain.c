/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "core_private.h"

/* One line each: what happened, then what to do about it. */
TDCORE_EXPORT const char *tdcore_explain(enum tdcore_status status, const char *core_path, int error, char *buf,
					 size_t len)
{
	const char *path = core_path ? core_path : "(none)";

	if (!buf || len == 0)
		return buf;
	switch (status) {
	case TDCORE_OK:
		snprintf(buf, len, "%s: no error", path);
		break;
	case TDCORE_CANNOT_OPEN:
		snprintf(buf, len, "%s: cannot open: %s; check the path and its permissions", path, strerror(error));
		break;
	case TDCORE_NOT_A_CORE:
		snprintf(buf, len, "%s is not an ELF core file; give a core dump (from the kernel or gdb's gcore)",
			 path);
		break;
	case TDCORE_FOREIGN:
		snprintf(buf, len, "%s is a core of another machine or word size; read it on a machine like the one that dumped it",
			 path);
		break;
	case TDCORE_DAMAGED:
		snprintf(buf, len,
			 "%s is truncated or damaged (its headers or notes lie outside the file or hold impossible values, "
			 "or it has no thread); "
			 "take the dump again, with enough disk space (and ulimit -c unlimited for kernel cores)",
			 path);
		break;
	case TDCORE_NO_MEMORY:
		snprintf(buf, len, "%s: out of memory in the reading process; free memory and retry", path);
		break;
	case TDCORE_NOT_IN_CORE:
		snprintf(buf, len,
			 "%s: memory the statistics live in is not in the core (truncated, or left out by "
			 "/proc/PID/coredump_filter) nor in the files it names; dump it again with anonymous memory included",
			 path);
		break;
	case TDCORE_READ_ONLY:
		snprintf(buf, len, "%s: a core cannot be changed: enable, disable and reset need the live process", path);
		break;
	case TDCORE_FILES_MISSING:
		snprintf(buf, len,
			 "%s: some files the core names (the program, its libraries, the shim) are not on this machine "
			 "or have changed since the dump; give the program as EXECUTABLE and read the core where it was dumped",
			 path);
		break;
	case TDCORE_LOOKUP_LIMIT:
	default:
		snprintf(buf, len,
			 "%s holds more than tdstat reads: more than %u segments, %u objects or %u symbols (a crafted "
			 "or damaged core, or a process with that many mappings); read it in gdb (info thread-stats)",
			 path, TDCORE_SEGMENTS_MAX, TDCORE_MODULES_MAX, TDCORE_SYMBOLS_MAX);
		break;
	}
	return buf;
}
