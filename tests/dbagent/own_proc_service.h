/* SPDX-License-Identifier: MIT */
/*
 * A debugger's own proc_service routines, the way gdb supplies them:
 * built on the system <proc_service.h> only.  Its symbol lookup ignores
 * the object name and reads each mapped file's .dynsym from disk, a
 * different path from libtdstat_ps's; memory goes through
 * process_vm_readv/writev.  `fail_reads` makes every read fail (libc_db
 * must then say TD_DBERR).  `after_read`, when set, runs after every read
 * that succeeded, which `reads` counts: a test's controller landing
 * between two of libc_db's reads.  A program linking this exports its
 * symbols (ENABLE_EXPORTS) so libc_db binds to them, and never links
 * libtdstat_ps.
 */
#ifndef TDSTAT_TESTS_OWN_PROC_SERVICE_H
#define TDSTAT_TESTS_OWN_PROC_SERVICE_H

#include <proc_service.h>
#include <stdbool.h>
#include <sys/types.h>

struct ps_prochandle {
	pid_t pid;
	bool fail_reads;
	int lookups;
	unsigned long reads;
	void (*after_read)(struct ps_prochandle *ph);
};

#endif /* TDSTAT_TESTS_OWN_PROC_SERVICE_H */
