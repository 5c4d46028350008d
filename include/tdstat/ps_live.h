/* SPDX-License-Identifier: MIT */
/*
 * libtdstat_ps: a proc_service provider for live processes.
 *
 * It defines the ps_* routines that <proc_service.h> declares, for a
 * process named by its PID, so that a program (tdstat, the tests) can use
 * libc_db without being a debugger.  It never stops the target: reads and
 * writes go through process_vm_readv/writev, with /proc/PID/mem as the
 * fallback; symbols are looked up in the target's memory (the dynamic
 * symbol tables of its loaded objects), so a shim loaded through a symlink,
 * or whose file was since replaced or deleted, is still found.
 *
 * Handles are independent; one handle may be used from several threads.
 */
#ifndef TDSTAT_PS_LIVE_H
#define TDSTAT_PS_LIVE_H

#include <stddef.h>
#include <sys/types.h>
#include <proc_service.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tdps_status {
	TDPS_OK = 0,
	TDPS_NO_PROCESS,   /* no such process (or it exited) */
	TDPS_PERMISSION,   /* ptrace access mode check refused us */
	TDPS_NOT_DYNAMIC,  /* the target has no dynamic symbol tables to search */
	TDPS_NO_MEMORY,
	TDPS_IO,           /* any other failure reading the target */
	/* Since 1.1 (TDSTAT_PS_1.1): */
	TDPS_NOT_A_PROCESS, /* the PID is a thread of another process */
	TDPS_KERNEL_THREAD, /* the PID is a kernel thread: no program, no memory */
	TDPS_LOOKUP_LIMIT,  /* ps_pglobal_lookup gave up: too many objects, or
			       symbol tables too large, to search in bounded
			       time (PS_ERR) */
};

/* Opens a handle on live process `pid`.  On failure returns the status and
 * leaves *out NULL. */
enum tdps_status tdps_open(pid_t pid, struct ps_prochandle **out);
void tdps_close(struct ps_prochandle *ph);

/* Status of the last failed ps_* call on this handle (TDPS_OK if none):
 * tells a caller that got TD_DBERR from libc_db what happened. */
enum tdps_status tdps_last_status(const struct ps_prochandle *ph);

/* What the kernel says of process `pid` now: the state letter of
 * /proc/PID/stat ('R', 'S', 'T' stopped, 't' stopped by a tracer, ...) of
 * its leader, or of another live thread when the leader has exited (main
 * called pthread_exit); 'Z' when no thread lives; 0 when there is no such
 * process.  Since 1.1. */
char tdps_process_state(pid_t pid);

/* Writes one line (no newline) naming the cause and the fix for `status`
 * on process `pid` into buf; returns buf. */
const char *tdps_explain(enum tdps_status status, pid_t pid, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TDSTAT_PS_LIVE_H */
